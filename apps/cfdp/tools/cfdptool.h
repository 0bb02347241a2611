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

/* Waits up to timeout_s (0: for ever) for the answer to request id, which
 * the caller watches: 0 and *ev, or -ETIMEDOUT / -ECONNRESET. */
static inline int ct_wait_answer(cfdp_ctl *c, double timeout_s, cfdp_ctl_event *ev)
{
    double t0 = ct_now();
    for (;;) {
        int left = -1;
        if (timeout_s > 0) {
            double l = timeout_s - (ct_now() - t0);
            if (l <= 0)
                return -ETIMEDOUT;
            left = (int)(l * 1000) + 1;
        }
        int rc = cfdp_ctl_next_event(c, ev, left);
        if (rc)
            return rc;
        if (ev->type == CFDP_CTL_EV_ANSWER)
            return 0;
    }
}

/* Splits "<entity>:<path>": 0, or -EINVAL. */
static inline int ct_split(const char *arg, uint64_t *entity, const char **path)
{
    const char *colon = strchr(arg, ':');
    char *end;
    if (!colon)
        return -EINVAL;
    *entity = strtoull(arg, &end, 10);
    if (end != colon || !*entity || !colon[1])
        return -EINVAL;
    *path = colon + 1;
    return 0;
}

#endif
