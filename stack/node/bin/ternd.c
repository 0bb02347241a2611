/* ternd: serves one node directory (see docs/node.md).
 *
 *   ternd [--log-level L] [--stderr] [--ready-fd N] <host.rc | node dir>
 *
 * With a file (a host.rc, or one of ION's admin files such as node.ionrc)
 * the node directory is the file's directory; a directory without a host.rc
 * is read from its node.ionrc, node.ltprc, node.bprc, ... (docs/node.md).
 * SIGTERM and SIGINT stop the node cleanly (the store is made durable, the lock
 * released). --ready-fd: a pipe from 'tern start', which gets "ok" or
 * "error: <why>" once the node is running or has failed to start.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bp_agent.h"
#include "tern/loop.h"
#include "tern_node.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: ternd [--log-level error|warn|info|debug|trace] [--stderr] "
               "[--ready-fd N] <host.rc | node.ionrc | node directory>\n"
               "Runs a Tern node: the directory holds host.rc (or ION's admin files "
               "node.ionrc,\nnode.ltprc, node.bprc, node.ipnrc, ...), the store, the log "
               "(ternd.log) and the lock;\nwith a file its directory is the node "
               "directory.\nNormally started by 'tern start'.\n");
}

static void on_signal(tern_io *w, int fd, unsigned events, void *arg)
{
    (void)w;
    (void)events;
    struct signalfd_siginfo si;
    while (read(fd, &si, sizeof si) == (ssize_t)sizeof si) {
        tern_node *n = arg;
        TERN_INFO(tern_node_log(n), "node", "signal %u: stopping", si.ssi_signo);
        tern_node_stop(n);
    }
}

/* Memory freed after a burst (one huge bundle, a backlog drained) goes back
 * to the system within a few seconds: the thresholds below keep freed memory
 * for reuse while the node is busy, but glibc returns nothing that lies
 * below a live block, and up to 256 MiB even at the top. More than
 * TRIM_FREE free in the heap is handed back once the node has been quiet
 * (no bundle made, taken, sent or delivered) for a whole TRIM_PERIOD:
 * trimming a busy node only makes the pages fault in again (the multicast
 * benchmark spent ~8 % of its CPU in madvise and those faults). */
#define TRIM_PERIOD_NS (2 * 1000000000ull)
#define TRIM_FREE      (16u << 20)

struct trim {
    tern_node *node;
    uint64_t last; /* bundle activity at the previous tick */
};

static uint64_t activity(tern_node *n)
{
    bp_agent *a = tern_node_agent(n);
    if (!a)
        return 0;
    bp_agent_stats st;
    bp_agent_stats_get(a, &st);
    return st.created + st.received + st.forwarded + st.delivered;
}

static void trim_tick(tern_timer *t, void *arg)
{
    (void)t;
    struct trim *tr = arg;
    uint64_t now = activity(tr->node);
    int quiet = now == tr->last;
    tr->last = now;
    if (!quiet)
        return;
    struct mallinfo2 mi = mallinfo2();
    if (mi.fordblks > TRIM_FREE)
        malloc_trim(TRIM_FREE / 2);
}

static void ready(int fd, const char *msg)
{
    if (fd < 0)
        return;
    ssize_t w = write(fd, msg, strlen(msg));
    (void)w;
    close(fd);
}

int main(int argc, char **argv)
{
    /* A node moves megabyte buffers all day (LTP blocks, bundles, deliveries):
     * glibc would hand each to mmap and give it back at free, and every page
     * of the next one would fault in again. Keep freed memory for reuse. */
    mallopt(M_MMAP_THRESHOLD, 64 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
    const char *target = NULL;
    int level = TERN_LOG_INFO, ready_fd = -1;
    unsigned flags = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--log-level") && i + 1 < argc) {
            level = tern_log_level_parse(argv[++i]);
            if (level < 0) {
                fprintf(stderr, "ternd: unknown log level '%s'\n", argv[i]);
                return 2;
            }
        } else if (!strcmp(argv[i], "--stderr")) {
            flags |= TERN_LOG_TO_STDERR;
        } else if (!strcmp(argv[i], "--ready-fd") && i + 1 < argc) {
            ready_fd = atoi(argv[++i]);
        } else if (argv[i][0] == '-' || target) {
            usage(stderr);
            return 2;
        } else {
            target = argv[i];
        }
    }
    if (!target) {
        usage(stderr);
        return 2;
    }
    char dir[PATH_MAX], rcpath[PATH_MAX];
    struct stat st;
    const char *rc = NULL;
    if (stat(target, &st) == 0 && S_ISREG(st.st_mode)) {
        snprintf(rcpath, sizeof rcpath, "%s", target);
        snprintf(dir, sizeof dir, "%s", target);
        char *slash = strrchr(dir, '/');
        if (slash)
            *slash = '\0';
        else
            snprintf(dir, sizeof dir, ".");
        rc = rcpath;
    } else {
        snprintf(dir, sizeof dir, "%s", target);
    }

    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGHUP);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    signal(SIGPIPE, SIG_IGN);

    tern_node_cfg cfg = {.dir = dir, .rc = rc, .log_level = level, .log_flags = flags};
    tern_node *n;
    char err[1024] = "";
    int r = tern_node_open(&cfg, &n, err, sizeof err);
    if (r) {
        fprintf(stderr, "ternd: %s\n", err[0] ? err : tern_strerror(r));
        char msg[1100];
        snprintf(msg, sizeof msg, "error: %s\n", err[0] ? err : tern_strerror(r));
        ready(ready_fd, msg);
        return 1;
    }
    int sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    tern_io sio;
    if (sfd < 0 || tern_io_init(tern_node_loop(n), &sio, sfd, on_signal, n) ||
        tern_io_start(&sio, TERN_IO_READ)) {
        fprintf(stderr, "ternd: signalfd: %s\n", strerror(errno));
        ready(ready_fd, "error: cannot watch signals\n");
        tern_node_close(n);
        return 1;
    }
    tern_timer trim;
    struct trim tr = {.node = n, .last = activity(n)};
    int trimming =
        tern_timer_init(tern_node_loop(n), &trim) == 0 &&
        tern_timer_start(&trim, trim_tick, &tr, TRIM_PERIOD_NS, TRIM_PERIOD_NS) == 0;
    /* "ok", then the configuration's warnings for 'tern start' to show, in
     * one write (a pipe takes up to PIPE_BUF bytes whole). */
    char rmsg[PIPE_BUF];
    const char *warn[16];
    size_t nw = tern_node_warnings(n, warn, 16), shown = 0;
    size_t len = (size_t)snprintf(rmsg, sizeof rmsg, "ok\n");
    const char *cfdp = tern_node_cfdp_rc(n); /* 'tern start' starts cfdpd on it */
    if (cfdp && strlen(cfdp) < sizeof rmsg / 2)
        len += (size_t)snprintf(rmsg + len, sizeof rmsg - len, "cfdp: %s\n", cfdp);
    for (int i = 0; tern_node_amsd(n, i); i++) /* and an amsd on each of these */
        len += (size_t)snprintf(rmsg + len, sizeof rmsg - len, "amsd: %s\n",
                                tern_node_amsd(n, i));
    for (int i = 0; tern_node_ramsgate(n, i); i++) /* and the RAMS gateways */
        len += (size_t)snprintf(rmsg + len, sizeof rmsg - len, "ramsgate: %s\n",
                                tern_node_ramsgate(n, i));
    for (; shown < nw && shown < 16; shown++) {
        size_t room = sizeof rmsg - len - 40; /* kept for the "more" line */
        int k = snprintf(rmsg + len, room, "warning: %s\n", warn[shown]);
        if (k < 0 || (size_t)k >= room) {
            rmsg[len] = '\0';
            break;
        }
        len += (size_t)k;
    }
    if (shown < nw)
        snprintf(rmsg + len, sizeof rmsg - len, "more: %zu\n", nw - shown);
    ready(ready_fd, rmsg);
    r = tern_node_run(n);
    if (trimming)
        tern_timer_stop(&trim);
    tern_io_stop(&sio);
    close(sfd);
    tern_node_close(n);
    return r < 0 ? 1 : 0;
}
