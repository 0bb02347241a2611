/* ltpdriver: sends N test blocks (or N service data units aggregated into
 * blocks) to an LTP engine over UDP, waits until every block is
 * acknowledged, prints goodput. The data format is in ltptool.h.
 *
 *   ltpdriver --engine 1 --peer 2 --to 127.0.0.1:1113 --blocks 100 --size 1M
 *             [--seg 64000] [--sdu 1024 [--units N]] [--window W] [--rate BPS]
 *             [--listen HOST:PORT] [--qtime MS] [--timeout S] [--json FILE]
 *
 * Exit status: 0 if every block was acknowledged, 1 if any was cancelled or
 * the timeout passed, 2 for usage errors.
 */
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "ltp.h"
#include "ltp_udp.h"
#include "ltptool.h"
#include "tern/crc.h"
#include "tern/log.h"
#include "tern/loop.h"

#define VARIANTS 16

struct driver {
    tern_loop *loop;
    tern_log *lg;
    ltp_udp *u;
    ltp_engine *e;
    uint64_t peer, client;
    uint64_t nblocks, size, sdu, nunits, window;
    uint64_t sent, units_sent, done, cancelled, done_bytes;
    int flushed, pump_pending, progress, failed;
    uint8_t *var[VARIANTS]; /* prebuilt blocks or units; only the index changes */
    unsigned nvar;
    /* Blocks go to the engine by reference (no copy), so each one in flight
     * needs a buffer of its own until its export ends. */
    uint8_t **pool;
    unsigned npool, nfree;
    double t0, t_end;
    const char *why;
    tern_timer timeout, tick, check;
    tern_io sig;
    int sigfd;
};

static void usage(FILE *f)
{
    fprintf(
        f, "usage: ltpdriver --engine N --peer P --to HOST:PORT --blocks N --size BYTES\n"
           "                 [--seg BYTES] [--sdu BYTES [--units N]] [--window W]\n"
           "                 [--rate BITS/S] [--listen HOST:PORT] [--qtime MS]\n"
           "                 [--timeout S] [--json FILE] [--quiet]\n"
           "  sizes take k, M, G (1000s) or Ki, Mi, Gi (1024s)\n"
           "  --seg BYTES     largest segment (default 64000)\n"
           "  --sdu BYTES     send units of BYTES aggregated into blocks of --size\n"
           "                  (--units N of them; default: --blocks worth)\n"
           "  --window W      export sessions at once (default: 16 MB worth, 2..64)\n"
           "  --rate BITS/S   token-bucket rate to the peer (default: unlimited)\n"
           "  --qtime MS      the peer's queuing latency for timers (default: 200)\n");
}

static void pump(struct driver *d);

static void pump_cb(tern_loop *loop, void *arg)
{
    struct driver *d = arg;
    d->pump_pending = 0;
    pump(d);
}

static void schedule_pump(struct driver *d)
{
    if (!d->pump_pending && tern_loop_defer(d->loop, pump_cb, d) == 0)
        d->pump_pending = 1;
}

static int all_sent(const struct driver *d)
{
    return d->sdu ? d->units_sent >= d->nunits && d->flushed : d->sent >= d->nblocks;
}

/* Done when everything is sent and every block has been acknowledged or
 * cancelled (cancelled sessions may still be closing: no need to wait). */
static void check_done(struct driver *d)
{
    if (!all_sent(d) || d->why)
        return;
    ltp_stats st;
    ltp_engine_stats(d->e, &st);
    if (st.queued_blocks == 0 &&
        st.exports_done + st.exports_cancelled >= st.exports_started) {
        d->t_end = lt_now();
        d->why = st.exports_cancelled ? "finished, some cancelled" : "done";
        tern_loop_stop(d->loop);
    }
}

static void check_fire(tern_timer *t, void *arg)
{
    check_done(arg);
}

static int on_notice(void *ctx, const ltp_notice *n)
{
    struct driver *d = ctx;
    if (n->kind == LTP_EXPORT_DONE || n->kind == LTP_EXPORT_CANCELLED) {
        if (n->user && d->nfree < d->npool)
            d->pool[d->nfree++] = n->user;
        if (n->kind == LTP_EXPORT_DONE) {
            d->done++;
        } else {
            d->cancelled++;
            if (d->cancelled <= 5)
                fprintf(stderr,
                        "ltpdriver: session %" PRIu64 " cancelled (reason %u%s)\n",
                        n->session, n->reason, n->by_peer ? ", by the peer" : "");
        }
        schedule_pump(d);
    }
    return 0;
}

static int do_send(void *ctx, uint64_t peer, const uint8_t *seg, size_t len)
{
    struct driver *d = ctx;
    return ltp_udp_send(d->u, peer, seg, len);
}

static uint8_t *do_send_buf(void *ctx, uint64_t peer, size_t len)
{
    struct driver *d = ctx;
    return ltp_udp_send_buf(d->u, peer, len);
}

static int do_send_commit(void *ctx, uint64_t peer, uint8_t *seg, size_t len)
{
    struct driver *d = ctx;
    return ltp_udp_send_commit(d->u, peer, seg, len);
}

static void pump(struct driver *d)
{
    ltp_stats st;
    ltp_engine_stats(d->e, &st);
    uint64_t outstanding = st.export_sessions + st.queued_blocks;
    if (!d->sdu) {
        while (d->sent < d->nblocks && outstanding < d->window + 2 && d->nfree) {
            uint8_t *b = d->pool[--d->nfree];
            lt_put64(b + 8, d->sent);
            int rc = ltp_block_send_ref(d->e, d->peer, d->client, b, d->size, 0, b, NULL);
            if (rc) {
                fprintf(stderr, "ltpdriver: ltp_block_send: %s\n", tern_strerror(rc));
                d->failed = 1;
                d->why = "send error";
                tern_loop_stop(d->loop);
                return;
            }
            d->sent++;
            outstanding++;
        }
    } else {
        uint64_t per = (d->size + d->sdu - 1) / d->sdu;
        while (d->units_sent < d->nunits && outstanding < d->window + 2) {
            for (uint64_t k = 0; k < per && d->units_sent < d->nunits; k++) {
                uint8_t *b = d->var[d->units_sent % d->nvar];
                lt_put64(b + 8, d->units_sent);
                int rc = ltp_sdu_send(d->e, d->peer, d->client, b, d->sdu);
                if (rc) {
                    fprintf(stderr, "ltpdriver: ltp_sdu_send: %s\n", tern_strerror(rc));
                    d->failed = 1;
                    d->why = "send error";
                    tern_loop_stop(d->loop);
                    return;
                }
                d->units_sent++;
            }
            outstanding++;
        }
        if (d->units_sent >= d->nunits && !d->flushed) {
            ltp_span_flush(d->e, d->peer);
            d->flushed = 1;
        }
    }
    check_done(d);
}

static void timeout_fire(tern_timer *t, void *arg)
{
    struct driver *d = arg;
    d->why = "timeout";
    tern_loop_stop(d->loop);
}

static void tick_fire(tern_timer *t, void *arg)
{
    struct driver *d = arg;
    double el = lt_now() - d->t0;
    ltp_stats st;
    ltp_engine_stats(d->e, &st);
    double bytes = (double)st.exports_done * (double)d->size;
    fprintf(stderr,
            "\rltpdriver: %" PRIu64 " blocks done, %" PRIu64 " cancelled, %.2f Gbit/s  ",
            st.exports_done, st.exports_cancelled, el > 0 ? bytes * 8 / el / 1e9 : 0.0);
}

static void on_signal(tern_io *w, int fd, unsigned ev, void *arg)
{
    struct driver *d = arg;
    struct signalfd_siginfo si;
    if (read(fd, &si, sizeof si) != (ssize_t)sizeof si)
        return;
    d->why = si.ssi_signo == SIGINT ? "SIGINT" : "SIGTERM";
    tern_loop_stop(d->loop);
}

int main(int argc, char **argv)
{
    lt_tune_malloc();
    struct driver d;
    memset(&d, 0, sizeof d);
    d.sigfd = -1;
    d.client = 1;
    d.window = 0;
    d.size = 0;
    uint64_t engine = 0, seg = 64000, rate = 0, qtime = 0, timeout_s = 300, qtime_set = 0;
    const char *to = NULL, *listen = "127.0.0.1:0", *json = NULL;
    int quiet = 0;
    static const struct option opts[] = {
        {"engine", required_argument, 0, 'e'},  {"peer", required_argument, 0, 'p'},
        {"to", required_argument, 0, 'T'},      {"blocks", required_argument, 0, 'b'},
        {"size", required_argument, 0, 'S'},    {"seg", required_argument, 0, 's'},
        {"sdu", required_argument, 0, 'U'},     {"units", required_argument, 0, 'u'},
        {"window", required_argument, 0, 'w'},  {"rate", required_argument, 0, 'r'},
        {"listen", required_argument, 0, 'l'},  {"qtime", required_argument, 0, 'q'},
        {"timeout", required_argument, 0, 't'}, {"json", required_argument, 0, 'j'},
        {"client", required_argument, 0, 'c'},  {"quiet", no_argument, 0, 'Q'},
        {"help", no_argument, 0, 'h'},          {0, 0, 0, 0}};
    int o, oi = 0;
    while ((o = getopt_long(argc, argv, "", opts, &oi)) != -1) {
        int bad = 0;
        switch (o) {
        case 'e':
            bad = lt_parse_size(optarg, &engine) || !engine;
            break;
        case 'p':
            bad = lt_parse_size(optarg, &d.peer) || !d.peer;
            break;
        case 'T':
            to = optarg;
            break;
        case 'b':
            bad = lt_parse_size(optarg, &d.nblocks);
            break;
        case 'S':
            bad = lt_parse_size(optarg, &d.size) || d.size < LT_HDR + 1;
            break;
        case 's':
            bad = lt_parse_size(optarg, &seg) || seg < 64 || seg > 65507;
            break;
        case 'U':
            bad = lt_parse_size(optarg, &d.sdu) || d.sdu < LT_HDR + 1;
            break;
        case 'u':
            bad = lt_parse_size(optarg, &d.nunits);
            break;
        case 'w':
            bad = lt_parse_size(optarg, &d.window) || !d.window;
            break;
        case 'r':
            bad = lt_parse_size(optarg, &rate);
            break;
        case 'l':
            listen = optarg;
            break;
        case 'q':
            bad = lt_parse_size(optarg, &qtime);
            qtime_set = 1;
            break;
        case 't':
            bad = lt_parse_size(optarg, &timeout_s);
            break;
        case 'j':
            json = optarg;
            break;
        case 'c':
            bad = lt_parse_size(optarg, &d.client) || !d.client;
            break;
        case 'Q':
            quiet = 1;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
        if (bad) {
            fprintf(stderr, "ltpdriver: bad value '%s' for --%s\n", optarg,
                    opts[oi].name);
            return 2;
        }
    }
    if (!engine || !d.peer || !to || !d.size || (!d.nblocks && !d.nunits) ||
        optind != argc) {
        usage(stderr);
        return 2;
    }
    if (d.sdu && !d.nunits)
        d.nunits = d.nblocks * ((d.size + d.sdu - 1) / d.sdu);
    if (!d.window) {
        /* 16 MB in flight: more only queues in the receiver's socket
         * buffer, and a checkpoint waiting there longer than the timeout
         * is sent again (measured: window 16 beat 64 for 1 MB blocks). */
        d.window = (16ull << 20) / d.size;
        if (d.window > 64)
            d.window = 64;
        if (d.window < 2)
            d.window = 2;
    }
    if (!qtime_set)
        qtime = 200; /* timers start as segments leave, so a rate needs no extra */

    /* Prebuilt blocks (or units) with random payloads. */
    size_t unit = d.sdu ? d.sdu : d.size;
    d.nvar = unit <= (4u << 20) ? VARIANTS : 2;
    uint64_t seed = 0x9E3779B97F4A7C15ull ^ engine;
    for (unsigned v = 0; v < d.nvar; v++) {
        uint8_t *b = malloc(unit);
        if (!b) {
            fprintf(stderr, "ltpdriver: out of memory\n");
            return 1;
        }
        for (size_t k = LT_HDR; k < unit; k += 8) {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            memcpy(b + k, &seed, unit - k < 8 ? unit - k : 8);
        }
        struct lt_hdr h = {.magic = LT_MAGIC,
                           .kind = d.sdu ? LT_UNIT : LT_BLOCK,
                           .index = 0,
                           .length = unit - LT_HDR,
                           .crc = tern_crc32c(0, b + LT_HDR, unit - LT_HDR)};
        lt_hdr_put(b, &h);
        d.var[v] = b;
    }
    if (!d.sdu) {
        d.npool = d.window + 3;
        d.pool = calloc(d.npool, sizeof *d.pool);
        for (unsigned i = 0; d.pool && i < d.npool; i++) {
            if (!(d.pool[i] = malloc(unit))) {
                fprintf(stderr, "ltpdriver: out of memory\n");
                return 1;
            }
            memcpy(d.pool[i], d.var[i % d.nvar], unit);
            d.nfree++;
        }
        if (!d.pool) {
            fprintf(stderr, "ltpdriver: out of memory\n");
            return 1;
        }
    }

    int rc = tern_log_open(&d.lg, "ltpdriver", NULL, TERN_LOG_WARN, TERN_LOG_TO_STDERR);
    if (rc == 0)
        rc = tern_loop_new(NULL, &d.loop);
    if (rc == 0)
        rc = ltp_udp_new(d.loop, listen, NULL, d.lg, &d.u);
    if (rc) {
        fprintf(stderr, "ltpdriver: cannot bind %s: %s\n", listen, tern_strerror(rc));
        return 1;
    }
    if ((rc = ltp_udp_add_peer(d.u, d.peer, to, rate))) {
        fprintf(stderr, "ltpdriver: --to %s: %s\n", to, tern_strerror(rc));
        return 2;
    }
    ltp_host host = {.ctx = &d,
                     .send = do_send,
                     .send_buf = do_send_buf,
                     .send_commit = do_send_commit,
                     .notice = on_notice,
                     .tx_notify = 1};
    ltp_engine_cfg ec = {.engine_id = engine};
    if ((rc = ltp_engine_new(d.loop, &ec, &host, d.lg, &d.e))) {
        fprintf(stderr, "ltpdriver: engine: %s\n", tern_strerror(rc));
        return 1;
    }
    ltp_span_cfg sc = {.peer = d.peer,
                       .max_export = (unsigned)d.window,
                       .max_import = 64,
                       .max_seg = seg,
                       .agg_size = d.size,
                       .agg_ms = d.sdu ? 1 : 1000,
                       .owlt_ms = 0,
                       .qtime_ms = (unsigned)qtime};
    if ((rc = ltp_span_add(d.e, &sc))) {
        fprintf(stderr, "ltpdriver: span: %s\n", tern_strerror(rc));
        return 2;
    }
    ltp_udp_attach(d.u, d.e);

    sigset_t ss;
    sigemptyset(&ss);
    sigaddset(&ss, SIGINT);
    sigaddset(&ss, SIGTERM);
    sigprocmask(SIG_BLOCK, &ss, NULL);
    d.sigfd = signalfd(-1, &ss, SFD_NONBLOCK | SFD_CLOEXEC);
    if (d.sigfd >= 0) {
        tern_io_init(d.loop, &d.sig, d.sigfd, on_signal, &d);
        tern_io_start(&d.sig, TERN_IO_READ);
    }
    tern_timer_init(d.loop, &d.timeout);
    tern_timer_init(d.loop, &d.tick);
    tern_timer_init(d.loop, &d.check);
    tern_timer_start(&d.check, check_fire, &d, 50000000ull, 50000000ull);
    tern_timer_start(&d.timeout, timeout_fire, &d, timeout_s * 1000000000ull, 0);
    if (!quiet && isatty(2))
        tern_timer_start(&d.tick, tick_fire, &d, 500000000ull, 500000000ull);

    d.t0 = lt_now();
    pump(&d);
    if (!d.why)
        tern_loop_run(d.loop, TERN_RUN_DEFAULT);
    if (!d.t_end)
        d.t_end = lt_now();
    /* The last report acknowledgements. */
    for (int i = 0; i < 100 && ltp_udp_flush(d.u); i++)
        usleep(1000);
    if (tern_timer_is_active(&d.tick))
        fprintf(stderr, "\n");

    ltp_stats st;
    ltp_engine_stats(d.e, &st);
    ltp_udp_stats us;
    ltp_udp_stats_get(d.u, &us);
    double secs = d.t_end - d.t0;
    uint64_t bytes = d.sdu ? d.units_sent * d.sdu : d.done * d.size;
    if (d.sdu && d.cancelled)
        bytes = 0; /* which units were lost is the counter's business */
    double gbps = secs > 0 ? (double)bytes * 8 / secs / 1e9 : 0;
    double ups = secs > 0 && d.sdu ? (double)d.units_sent / secs : 0;
    int ok = !d.failed && d.cancelled == 0 && st.exports_cancelled == 0 && d.why &&
             strcmp(d.why, "done") == 0;
    printf("blocks %" PRIu64 " cancelled %" PRIu64 " units %" PRIu64 " bytes %" PRIu64
           " seconds %.3f goodput %.3f Gbit/s units/s %.0f (%s)\n",
           d.done, d.cancelled, d.sdu ? d.units_sent : 0, bytes, secs, gbps, ups,
           d.why ? d.why : "stopped");
    if (!quiet)
        fprintf(stderr,
                "ltpdriver: window %" PRIu64 ", seg %" PRIu64 ", udp out %" PRIu64
                " dgrams (%" PRIu64 " calls), would-block %" PRIu64
                ", rate waits %" PRIu64 ", queue max %" PRIu64 " B, drops %" PRIu64
                "; ltp retx %" PRIu64 ", cp timeouts %" PRIu64 "\n",
                d.window, seg, us.dgrams_out, us.send_calls, us.would_block,
                us.rate_waits, us.queued_bytes_max, us.drop_queue_full + us.send_errors,
                st.data_retx, st.cp_timeouts);
    fflush(stdout);
    if (json) {
        FILE *f = fopen(json, "w");
        if (!f) {
            fprintf(stderr, "ltpdriver: cannot write %s: %m\n", json);
            ok = 0;
        } else {
            fprintf(f,
                    "{\"ok\": %s, \"reason\": \"%s\", \"blocks\": %" PRIu64
                    ", \"cancelled\": %" PRIu64 ", \"units\": %" PRIu64
                    ", \"bytes\": %" PRIu64
                    ", \"seconds\": %.6f, \"goodput_gbps\": %.6f, \"units_per_s\": %.1f, "
                    "\"window\": %" PRIu64 ", \"seg\": %" PRIu64
                    ", \"udp\": {\"dgrams_out\": %" PRIu64 ", \"send_calls\": %" PRIu64
                    ", \"would_block\": %" PRIu64 ", \"drops\": %" PRIu64
                    "}, \"ltp\": {\"data_retx\": %" PRIu64 ", \"cp_timeouts\": %" PRIu64
                    "}}\n",
                    ok ? "true" : "false", d.why ? d.why : "stopped", d.done, d.cancelled,
                    d.sdu ? d.units_sent : 0, bytes, secs, gbps, ups, d.window, seg,
                    us.dgrams_out, us.send_calls, us.would_block,
                    us.drop_queue_full + us.send_errors, st.data_retx, st.cp_timeouts);
            fclose(f);
        }
    }
    tern_timer_stop(&d.timeout);
    tern_timer_stop(&d.tick);
    tern_timer_stop(&d.check);
    if (d.pump_pending)
        tern_loop_defer_cancel(d.loop, pump_cb, &d);
    if (d.sigfd >= 0) {
        tern_io_stop(&d.sig);
        close(d.sigfd);
    }
    ltp_engine_free(d.e);
    ltp_udp_free(d.u);
    tern_loop_close(d.loop);
    tern_log_close(d.lg);
    for (unsigned v = 0; v < d.nvar; v++)
        free(d.var[v]);
    for (unsigned i = 0; i < d.npool; i++)
        free(d.pool[i]);
    free(d.pool);
    return ok ? 0 : 1;
}
