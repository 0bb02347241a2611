/* Shared by the file commands (cfdpput, cfdpstatus, ...): connecting to the
 * node's cfdpd with a clear error, clocks, condition texts. */
#ifndef CFDPTOOL_H
#define CFDPTOOL_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cfdp_ctl.h"

static inline double ct_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Connects to the cfdpd of dir (NULL: $TERN_NODE_DIR, else "."), or says
 * why not on stderr. */
static inline cfdp_ctl *ct_connect(const char *prog, const char *dir)
{
    cfdp_ctl *c;
    int rc = cfdp_ctl_open(dir, &c);
    if (rc) {
        const char *d = dir ? dir : getenv("TERN_NODE_DIR");
        if (!d || !*d)
            d = ".";
        if (rc == -ECONNREFUSED)
            fprintf(stderr, "%s: no cfdpd serves %s: start it with 'cfdpd %s'\n", prog, d,
                    d);
        else
            fprintf(stderr, "%s: node directory %s: %s\n", prog, d, tern_strerror(rc));
        return NULL;
    }
    return c;
}

static inline const char *ct_role(unsigned role)
{
    return role ? "receiver" : "sender";
}

/* Bytes as "12.3 MB" into b. */
static inline const char *ct_bytes(char *b, size_t cap, double v)
{
    static const char *const u[] = {"B", "kB", "MB", "GB", "TB"};
    int i = 0;
    while (v >= 1000 && i < 4) {
        v /= 1000;
        i++;
    }
    snprintf(b, cap, i ? "%.1f %s" : "%.0f %s", v, u[i]);
    return b;
}

#endif
