/* ION's ionconfig: "<name> <value>" lines, '#' comments. What Tern maps:
 * heapWords (x 8 bytes: the heap), configFlags (SDR_IN_FILE 2: durable;
 * SDR_BOUNDS_CHECKED 8). pathName is noted (the store always lives in the
 * node directory); the rest is accepted with a warning. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "node_int.h"

TERN_API int node__ionconfig_parse(const char *path, const char *text, size_t len,
                                   const char *node_dir, sdr_profile *p, tern_log *lg,
                                   char *err, size_t errlen)
{
    unsigned line = 0;
    size_t pos = 0;
    while (pos < len) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - text) : len;
        char l[512];
        size_t n = end - pos < sizeof l - 1 ? end - pos : sizeof l - 1;
        memcpy(l, text + pos, n);
        l[n] = '\0';
        pos = end + 1;
        line++;
        if (strlen(l) != n) {
            snprintf(err, errlen, "%s:%u: a NUL byte in the line", path, line);
            return TERN_ESYNTAX;
        }
        char *s = l;
        while (*s == ' ' || *s == '\t')
            s++;
        if (*s == '#' || *s == '\0' || *s == '\r')
            continue;
        char key[64], val[256];
        if (sscanf(s, "%63s %255s", key, val) != 2) {
            snprintf(err, errlen, "%s:%u: expected '<parameter> <value>', got '%.200s'",
                     path, line, s);
            return TERN_ESYNTAX;
        }
        char *e;
        errno = 0;
        unsigned long long v = strtoull(val, &e, 0);
        int num_ok = !errno && *e == '\0' && val[0] != '-';
        if (strcmp(key, "heapWords") == 0 || strcmp(key, "configFlags") == 0) {
            if (!num_ok) {
                snprintf(err, errlen, "%s:%u: %s '%s' is not a whole number", path, line,
                         key, val);
                return TERN_ESYNTAX;
            }
            if (key[0] == 'h') {
                uint64_t bytes = v > NODE_MAX_HEAP / 8 ? NODE_MAX_HEAP : v * 8;
                if (bytes < (1u << 20))
                    bytes = 1u << 20;
                if (v > NODE_MAX_HEAP / 8)
                    TERN_WARN(
                        lg, "node",
                        "%s:%u: heapWords %llu is more than %llu GiB; Tern caps the "
                        "heap at that",
                        path, line, v, (unsigned long long)(NODE_MAX_HEAP >> 30));
                p->heap_size = bytes;
            } else {
                p->mode = (v & 2) ? SDR_DURABLE : SDR_MEMORY;
                p->flags = (v & 8) ? SDR_BOUNDS_CHECK : 0;
            }
        } else if (strcmp(key, "pathName") == 0) {
            TERN_INFO(lg, "node",
                      "%s:%u: pathName %s: Tern keeps the store in the node directory "
                      "(%s/store), so nodes never share files",
                      path, line, val, node_dir);
        } else {
            TERN_WARN(lg, "node", "%s:%u: ionconfig '%s' accepted but not used by Tern",
                      path, line, key);
        }
    }
    return 0;
}
