/* Shared by the file commands (cfdpput, cfdpstatus, ...): connecting to the
 * node's cfdpd with a clear error, clocks, condition texts (inline here);
 * staging files, the put options and the filestore responses' report
 * (cfdptool.c, compiled into each command). */
#ifndef CFDPTOOL_H
#define CFDPTOOL_H

#include <errno.h>
#include <limits.h>
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

/* A local file as cfdpd reads it: its name in the filestore (rel), and,
 * when it lay outside, the staged link or copy (staged, "" if none). */
struct ct_staged {
    char rel[PATH_MAX];
    char staged[PATH_MAX];
    long long size;
};

/* Gives local file its name in cfdpd's filestore root (a real path):
 * relative if it lies inside, else linked (or copied) to
 * <root>/.outbox/<pid>-<tag><name>. 0; -EISDIR if not a regular file;
 * -errno. */
int ct_stage(const char *root, const char *local, const char *tag, struct ct_staged *s);

/* Removes the staged copy, if any. */
void ct_unstage(struct ct_staged *s);

/* Moves from to to (copies across file systems). */
int ct_move_file(const char *from, const char *to);

/* The filestore requests of a put (--fs), in order. */
struct ct_fs {
    size_t n;
    cfdp_ctl_fsreq req[CFDP_CTL_FS_MAX];
};

/* --class ARG (1 or 2) into *cls, or says why not on stderr (-EINVAL). */
int ct_opt_class(const char *prog, const char *arg, int *cls);

/* --priority ARG into *prio, or says why not on stderr (-EINVAL). */
int ct_opt_priority(const char *prog, const char *arg, int *prio);

/* --fs ARG appended to fs, or says why not on stderr. */
int ct_opt_fs(const char *prog, const char *arg, struct ct_fs *fs);

/* How many of fs's requests did not succeed by the Finished ev (one with
 * no response counts). */
size_t ct_fs_failed(const struct ct_fs *fs, const cfdp_ctl_event *ev);

/* One line per request and its status in words: successes on out,
 * failures on stderr after prog's name. */
void ct_fs_report(const char *prog, const struct ct_fs *fs, const cfdp_ctl_event *ev,
                  FILE *out);

/* The responses as a JSON array on stdout: action, first, second,
 * status_code (null: no response), status, ok. */
void ct_fs_json(const struct ct_fs *fs, const cfdp_ctl_event *ev);

/* s as a JSON string. */
void ct_json_str(FILE *f, const char *s);

#endif
