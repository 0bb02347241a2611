/* linkem: the link emulator program. It parses the options, builds the relay
 * of the mode on a real-clock loop, publishes its ports and counters, and on
 * SIGTERM or SIGINT prints the final counters and exits 0. Exit 2: bad
 * arguments (or packet mode without root, or with a namespace that exists);
 * 1: anything else that stops it from starting. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "linkem.h"

struct app {
    lk_config cfg;
    tern_loop *loop;
    tern_log *lg;
    lk_relay *relay;
    uint64_t epoch;
    tern_timer stats_timer;
    tern_io sig_io;
    int sfd;
    int signo; /* the signal that ended the run */
};

static double uptime_s(const struct app *a)
{
    return (double)(tern_loop_now(a->loop) - a->epoch) / 1e9;
}

static void counters(const struct app *a, lk_counters c[2])
{
    for (int d = 0; d < 2; d++)
        lk_relay_counters(a->relay, d, &c[d]);
}

static void write_stats(struct app *a)
{
    if (!a->cfg.stats_file)
        return;
    lk_counters c[2];
    char buf[4096];
    counters(a, c);
    int n = lk_stats_json(a->cfg.mode, a->cfg.seed, uptime_s(a), c, buf, sizeof buf);
    if (n < 0)
        return;
    int rc = lk_write_atomic(a->cfg.stats_file, buf, (size_t)n);
    if (rc)
        TERN_WARN(a->lg, "linkem", "cannot write %s: %s", a->cfg.stats_file,
                  tern_strerror(rc));
}

static void on_stats_timer(tern_timer *t, void *arg)
{
    (void)t;
    write_stats(arg);
}

static void on_signal(tern_io *w, int fd, unsigned events, void *arg)
{
    struct app *a = arg;
    struct signalfd_siginfo si;
    (void)w;
    (void)events;
    for (;;) {
        ssize_t n = read(fd, &si, sizeof si);
        if (n < 0 && errno == EINTR)
            continue;
        if (n != (ssize_t)sizeof si)
            return;
        if (si.ssi_signo == SIGUSR1) {
            write_stats(a);
            continue;
        }
        a->signo = (int)si.ssi_signo;
        TERN_INFO(a->lg, "linkem", "signal %d: stopping", a->signo);
        tern_loop_stop(a->loop);
    }
}

static int usage_error(const char *msg)
{
    fprintf(stderr, "linkem: %s\n", msg);
    return 2;
}

int main(int argc, char **argv)
{
    struct app a;
    char err[LK_ERR_MAX];
    memset(&a, 0, sizeof a);
    a.sfd = -1;

    if (argc < 2) {
        lk_usage(stderr, -1);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
        !strcmp(argv[1], "help")) {
        lk_usage(stdout, -1);
        return 0;
    }
    int mode = lk_mode_parse(argv[1]);
    if (mode < 0) {
        snprintf(err, sizeof err, "unknown mode '%s': expected udp, tcp or packet",
                 argv[1]);
        return usage_error(err);
    }
    lk_config_init(&a.cfg, mode);
    int ex = 1;
    if (lk_config_parse_args(&a.cfg, argc - 2, argv + 2, err, sizeof err) != 0) {
        ex = usage_error(err);
        goto out;
    }
    if (a.cfg.help) {
        lk_usage(stdout, mode);
        ex = 0;
        goto out;
    }
    if (lk_config_check(&a.cfg, err, sizeof err) != 0) {
        ex = usage_error(err);
        goto out;
    }
    if (tern_log_open(&a.lg, "linkem", NULL, a.cfg.log_level, TERN_LOG_TO_STDERR) != 0) {
        fprintf(stderr, "linkem: cannot open the log\n");
        goto out;
    }

    /* Signals arrive through the loop; SIGPIPE is never wanted (sends use
     * MSG_NOSIGNAL, but a TUN or a stats file on a pipe must not kill us). */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGUSR1);
    sigprocmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    a.sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (a.sfd < 0) {
        fprintf(stderr, "linkem: signalfd: %s\n", strerror(errno));
        goto out;
    }
    int rc = tern_loop_new(NULL, &a.loop);
    if (rc) {
        fprintf(stderr, "linkem: event loop: %s\n", tern_strerror(rc));
        goto out;
    }
    tern_timer_init(a.loop, &a.stats_timer);
    tern_io_init(a.loop, &a.sig_io, a.sfd, on_signal, &a);
    tern_io_start(&a.sig_io, TERN_IO_READ);

    rc = lk_relay_new(a.loop, &a.cfg, a.lg, err, sizeof err, &a.relay);
    if (rc) {
        fprintf(stderr, "linkem %s: %s\n", lk_mode_name(mode), err);
        ex = rc == -EPERM || rc == TERN_EEXIST || rc == TERN_ESYNTAX ? 2 : 1;
        goto out;
    }
    /* Time 0 of the outage schedules: the moment the relay is ready, just
     * before the ports file says so. */
    a.epoch = tern_loop_now(a.loop);
    rc = lk_relay_start(a.relay, a.epoch);
    if (rc) {
        fprintf(stderr, "linkem: start: %s\n", tern_strerror(rc));
        goto out;
    }
    write_stats(&a);
    if (a.cfg.ports_file) {
        char ports[256];
        lk_relay_ports(a.relay, ports, sizeof ports);
        rc = lk_write_atomic(a.cfg.ports_file, ports, strlen(ports));
        if (rc) {
            fprintf(stderr, "linkem: cannot write --ports-file %s: %s\n",
                    a.cfg.ports_file, tern_strerror(rc));
            goto out;
        }
    }
    if (a.cfg.stats_file)
        tern_timer_start(&a.stats_timer, on_stats_timer, &a,
                         (uint64_t)a.cfg.stats_interval_ms * TERN_NS_PER_MS,
                         (uint64_t)a.cfg.stats_interval_ms * TERN_NS_PER_MS);
    TERN_INFO(a.lg, "linkem", "%s mode running (seed %llu)", lk_mode_name(mode),
              (unsigned long long)a.cfg.seed);

    rc = tern_loop_run(a.loop, TERN_RUN_DEFAULT);
    if (rc)
        fprintf(stderr, "linkem: event loop: %s\n", tern_strerror(rc));

    lk_counters c[2];
    counters(&a, c);
    double up = uptime_s(&a);
    write_stats(&a);
    lk_stats_summary(stdout, mode, a.cfg.seed, up, c);
    ex = rc ? 1 : 0;
out:
    if (a.loop) {
        tern_timer_stop(&a.stats_timer);
        tern_io_stop(&a.sig_io);
    }
    lk_relay_free(a.relay); /* packet mode: the namespaces go here */
    if (a.loop) {
        rc = tern_loop_close(a.loop);
        if (rc)
            TERN_WARN(a.lg, "linkem", "event loop left with handles: %s",
                      tern_strerror(rc));
    }
    if (a.sfd >= 0)
        close(a.sfd);
    tern_log_close(a.lg);
    lk_config_free(&a.cfg);
    return ex;
}
