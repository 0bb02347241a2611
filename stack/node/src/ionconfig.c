/* ION's ionconfig: "<name> <value>" lines, '#' comments. What Tern maps:
 * heapWords (x 8 bytes: the heap), configFlags (SDR_IN_FILE 2: durable;
 * SDR_BOUNDS_CHECKED 8). pathName is noted (the store always lives in the
 * node directory); ION's other parameters are accepted with a warning. A
 * name that is none of these but a typo away from heapWords or configFlags
 * is refused: the setting meant would be lost without a word. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "node_int.h"
#include "tern/log.h"
#include "tern/suggest.h"

TERN_API int node__note(node_notes *w, int level, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    node_note *v = realloc(w->v, (w->n + 1) * sizeof *v);
    if (!v)
        return -ENOMEM;
    w->v = v;
    if (!(v[w->n].text = strdup(buf)))
        return -ENOMEM;
    v[w->n++].level = level;
    return 0;
}

TERN_API void node__notes_free(node_notes *w)
{
    for (size_t i = 0; i < w->n; i++)
        free(w->v[i].text);
    free(w->v);
    w->v = NULL;
    w->n = 0;
}

/* The parameters Tern acts on, then ION's others (ionconfig(5)). */
static const char *const used[] = {"heapWords", "configFlags", "pathName", NULL};
static const char *const ion_others[] = {"wmKey",   "wmSize",    "wmAddress",
                                         "sdrName", "sdrWmSize", "heapKey",
                                         "logSize", "logKey",    NULL};

static int is_in(const char *key, const char *const *set)
{
    for (; *set; set++)
        if (strcmp(key, *set) == 0)
            return 1;
    return 0;
}

TERN_API int node__ionconfig_parse(const char *path, const char *text, size_t len,
                                   const char *node_dir, sdr_profile *p,
                                   node_notes *notes, char *err, size_t errlen)
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
                if (bytes < NODE_MIN_HEAP) {
                    node__note(notes, TERN_LOG_WARN,
                               "%s:%u: heapWords %llu (%llu bytes) is below Tern's "
                               "smallest heap: the heap is %llu MiB (heapWords %llu)",
                               path, line, v, (unsigned long long)bytes,
                               (unsigned long long)(NODE_MIN_HEAP >> 20),
                               (unsigned long long)(NODE_MIN_HEAP / 8));
                    bytes = NODE_MIN_HEAP;
                }
                if (v > NODE_MAX_HEAP / 8)
                    node__note(notes, TERN_LOG_WARN,
                               "%s:%u: heapWords %llu is more than %llu GiB; Tern caps "
                               "the heap at that",
                               path, line, v, (unsigned long long)(NODE_MAX_HEAP >> 30));
                p->heap_size = bytes;
            } else {
                p->mode = (v & 2) ? SDR_DURABLE : SDR_MEMORY;
                p->flags = (v & 8) ? SDR_BOUNDS_CHECK : 0;
            }
        } else if (strcmp(key, "pathName") == 0) {
            node__note(notes, TERN_LOG_INFO,
                       "%s:%u: pathName %s: Tern keeps the store in the node directory "
                       "(%s/store), so nodes never share files",
                       path, line, val, node_dir);
        } else if (is_in(key, ion_others)) {
            node__note(notes, TERN_LOG_WARN,
                       "%s:%u: ionconfig '%s' accepted but not used by Tern", path, line,
                       key);
        } else {
            char dym[200];
            const char *near = tern_suggest(key, used);
            if (near && strcmp(near, "pathName") != 0) {
                snprintf(err, errlen,
                         "%s:%u: unknown ionconfig parameter '%s'%s: its setting would "
                         "be lost; expected heapWords, configFlags, pathName or one of "
                         "ION's others (wmKey, wmSize, sdrName, ...)",
                         path, line, key, tern_did_you_mean(near, dym, sizeof dym));
                return TERN_ESYNTAX;
            }
            if (!near)
                near = tern_suggest(key, ion_others);
            node__note(notes, TERN_LOG_WARN,
                       "%s:%u: unknown ionconfig parameter '%s'%s: ignored", path, line,
                       key, tern_did_you_mean(near, dym, sizeof dym));
        }
    }
    return 0;
}
