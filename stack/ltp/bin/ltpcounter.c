/* ltpcounter: receives LTP blocks over UDP as one engine, verifies and counts
 * them (see ltptool.h for the format ltpdriver writes), prints goodput.
 *
 *   ltpcounter --engine 2 --listen 127.0.0.1:0 --peer 1 [--dir D]
 *              [--blocks N | --units N] [--timeout S] [--json FILE]
 *
 * Exit status: 0 if everything expected arrived intact (and nothing bad
 * arrived), 1 otherwise, 2 for usage errors.
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
#include "tern/ports.h"

#define MAXPEERS 16

struct shifter {
    uint64_t len;
    uint32_t t[4][256];
};

struct counter {
    struct shifter sh[2]; /* zero-byte shift tables: unit headers, payloads */
    tern_loop *loop;
    tern_log *lg;
    ltp_udp *u;
    ltp_engine *e;
    uint64_t want_blocks, want_units;
    uint64_t blocks, units, bytes, bad, dups, cancelled, sessions;
    uint8_t *seen; /* bitmap of indexes */
    uint64_t seen_cap;
    double t_first, t_last;
    int finishing, quiet;
    const char *why; /* why it stopped */
    tern_timer timeout, linger, poll;
    uint64_t linger_ns;
    tern_io sig;
    int sigfd;
};

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: ltpcounter --engine N --listen HOST:PORT --peer P[:HOST:PORT] ...\n"
        "                  [--dir DIR] [--blocks N | --units N] [--timeout S]\n"
        "                  [--seg BYTES] [--json FILE] [--linger MS] [--quiet]\n"
        "  --engine N         this engine's number\n"
        "  --listen H:P       udplsi address (port 0: any; published in DIR/ports as "
        "'ltp udp')\n"
        "  --peer P[:H:P]     a sending engine; without an address, where its segments\n"
        "                     come from (repeatable)\n"
        "  --blocks N         stop once N blocks arrived (--units N: N units)\n"
        "  --timeout S        give up after S seconds (default 120)\n"
        "  --json FILE        also write the results as JSON\n");
}

/* Marks index seen; 1 if it was already. */
static int mark_seen(struct counter *c, uint64_t idx)
{
    if (idx >= (1ull << 34))
        return 0; /* not tracked */
    if (idx / 8 >= c->seen_cap) {
        uint64_t nc = c->seen_cap ? c->seen_cap : 4096;
        while (nc <= idx / 8)
            nc *= 2;
        uint8_t *p = realloc(c->seen, nc);
        if (!p)
            return 0;
        memset(p + c->seen_cap, 0, nc - c->seen_cap);
        c->seen = p;
        c->seen_cap = nc;
    }
    uint8_t bit = (uint8_t)(1u << (idx % 8));
    int was = !!(c->seen[idx / 8] & bit);
    c->seen[idx / 8] |= bit;
    return was;
}

static void finish(struct counter *c, const char *why);

static int reached(const struct counter *c)
{
    if (!c->want_blocks && !c->want_units)
        return 0;
    return (!c->want_blocks || c->blocks >= c->want_blocks) &&
           (!c->want_units || c->units >= c->want_units);
}

/* Appending len zero bytes to a CRC-32C is a linear map; for the two
 * lengths a run uses (unit headers and payloads) it is tabulated once, so a
 * block whose CRC the engine took on arrival is checked without reading its
 * payload again: the expected CRC of the whole block follows from each
 * header's bytes and the payload CRCs the headers carry. */
static uint32_t shift(struct shifter *sh, uint64_t len, uint32_t v)
{
    struct shifter *x = &sh[len == LT_HDR ? 0 : 1];
    if (x->len != len) {
        for (unsigned k = 0; k < 4; k++)
            for (unsigned b = 0; b < 256; b++)
                x->t[k][b] = tern_crc32c_combine((uint32_t)b << (8 * k), 0, len);
        x->len = len;
    }
    return x->t[0][v & 0xff] ^ x->t[1][(v >> 8) & 0xff] ^ x->t[2][(v >> 16) & 0xff] ^
           x->t[3][v >> 24];
}

static void verify(struct counter *c, const uint8_t *d, size_t len, int have_crc,
                   uint32_t crc)
{
    struct lt_hdr h;
    size_t off = 0;
    uint64_t units = 0;
    int bad = 0;
    uint32_t want = 0; /* CRC-32C of d[0, off) from the headers */
    while (off < len) {
        if (len - off < LT_HDR) {
            bad = 1;
            break;
        }
        lt_hdr_get(d + off, &h);
        if (h.magic != LT_MAGIC || (h.kind != LT_BLOCK && h.kind != LT_UNIT) ||
            h.length > len - off - LT_HDR ||
            (h.kind == LT_BLOCK && (off != 0 || h.length != len - LT_HDR))) {
            bad = 1;
            break;
        }
        if (have_crc) {
            want = shift(c->sh, LT_HDR, want) ^ tern_crc32c(0, d + off, LT_HDR);
            want = shift(c->sh, h.length, want) ^ h.crc;
        } else if (tern_crc32c(0, d + off + LT_HDR, h.length) != h.crc) {
            bad = 1;
            break;
        }
        if (h.kind == LT_UNIT) {
            units++;
            if (mark_seen(c, h.index))
                c->dups++;
        } else if (mark_seen(c, h.index)) {
            c->dups++;
        }
        off += LT_HDR + h.length;
    }
    if (!bad && have_crc && want != crc) {
        bad = 1;
        off = 0;
    }
    if (bad) {
        c->bad++;
        if (c->bad <= 5)
            fprintf(stderr,
                    "ltpcounter: block %" PRIu64 " of %zu bytes is corrupt at byte %zu\n",
                    c->blocks + c->bad, len, off);
        return;
    }
    c->blocks++;
    c->units += units;
    c->bytes += len;
}

static int on_notice(void *ctx, const ltp_notice *n)
{
    struct counter *c = ctx;
    switch (n->kind) {
    case LTP_SESSION_START:
        c->sessions++;
        if (c->t_first == 0)
            c->t_first = lt_now();
        break;
    case LTP_RED_PART:
        if (c->t_first == 0)
            c->t_first = lt_now();
        verify(c, n->data, n->len, n->red_crc_valid, n->red_crc32c);
        c->t_last = lt_now();
        if (reached(c) && !c->finishing)
            finish(c, "count reached");
        break;
    case LTP_IMPORT_CANCELLED:
        c->cancelled++;
        break;
    default:
        break;
    }
    return 0;
}

/* The host's send: the counter is the context, its link service sends. */
static int do_send(void *ctx, uint64_t peer, const uint8_t *seg, size_t len)
{
    struct counter *c = ctx;
    return ltp_udp_send(c->u, peer, seg, len);
}

/* After the count is reached: let the last reports be acknowledged. */
static void linger_fire(tern_timer *t, void *arg)
{
    struct counter *c = arg;
    tern_loop_stop(c->loop);
}

static void poll_fire(tern_timer *t, void *arg)
{
    struct counter *c = arg;
    ltp_stats st;
    ltp_engine_stats(c->e, &st);
    ltp_udp_stats us;
    ltp_udp_stats_get(c->u, &us);
    if (st.import_sessions == 0 && us.queued_now == 0)
        tern_loop_stop(c->loop);
}

static void finish(struct counter *c, const char *why)
{
    c->finishing = 1;
    c->why = why;
    tern_timer_stop(&c->timeout);
    tern_timer_start(&c->poll, poll_fire, c, 1000000, 5000000);
    tern_timer_start(&c->linger, linger_fire, c, c->linger_ns, 0);
}

static void timeout_fire(tern_timer *t, void *arg)
{
    struct counter *c = arg;
    c->why = "timeout";
    tern_loop_stop(c->loop);
}

static void on_signal(tern_io *w, int fd, unsigned ev, void *arg)
{
    struct counter *c = arg;
    struct signalfd_siginfo si;
    if (read(fd, &si, sizeof si) != (ssize_t)sizeof si)
        return;
    c->why = si.ssi_signo == SIGINT ? "SIGINT" : "SIGTERM";
    tern_loop_stop(c->loop);
}

int main(int argc, char **argv)
{
    lt_tune_malloc();
    struct counter c;
    memset(&c, 0, sizeof c);
    c.sigfd = -1;
    uint64_t engine = 0, seg = 65000, timeout_s = 120, linger_ms = 2000;
    const char *listen = NULL, *dir = NULL, *json = NULL;
    uint64_t peers[MAXPEERS];
    const char *paddr[MAXPEERS];
    int npeers = 0;
    static const struct option opts[] = {
        {"engine", required_argument, 0, 'e'}, {"listen", required_argument, 0, 'l'},
        {"peer", required_argument, 0, 'p'},   {"dir", required_argument, 0, 'd'},
        {"blocks", required_argument, 0, 'b'}, {"units", required_argument, 0, 'u'},
        {"count", required_argument, 0, 'b'},  {"timeout", required_argument, 0, 't'},
        {"json", required_argument, 0, 'j'},   {"seg", required_argument, 0, 's'},
        {"linger", required_argument, 0, 'L'}, {"quiet", no_argument, 0, 'q'},
        {"help", no_argument, 0, 'h'},         {0, 0, 0, 0}};
    int o, oi = 0;
    while ((o = getopt_long(argc, argv, "", opts, &oi)) != -1) {
        int bad = 0;
        switch (o) {
        case 'e':
            bad = lt_parse_size(optarg, &engine) || !engine;
            break;
        case 'l':
            listen = optarg;
            break;
        case 'p':
            if (npeers == MAXPEERS ||
                lt_parse_peer(optarg, &peers[npeers], &paddr[npeers])) {
                fprintf(stderr,
                        "ltpcounter: bad --peer '%s' (expected ENGINE or "
                        "ENGINE:HOST:PORT)\n",
                        optarg);
                return 2;
            }
            npeers++;
            break;
        case 'd':
            dir = optarg;
            break;
        case 'b':
            bad = lt_parse_size(optarg, &c.want_blocks);
            break;
        case 'u':
            bad = lt_parse_size(optarg, &c.want_units);
            break;
        case 't':
            bad = lt_parse_size(optarg, &timeout_s);
            break;
        case 'j':
            json = optarg;
            break;
        case 's':
            bad = lt_parse_size(optarg, &seg) || seg < 64 || seg > 65507;
            break;
        case 'L':
            bad = lt_parse_size(optarg, &linger_ms);
            break;
        case 'q':
            c.quiet = 1;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
        if (bad) {
            fprintf(stderr, "ltpcounter: bad value '%s' for --%s\n", optarg,
                    opts[oi].name);
            return 2;
        }
    }
    if (!engine || !listen || !npeers || optind != argc) {
        usage(stderr);
        return 2;
    }
    int rc = tern_log_open(&c.lg, "ltpcounter", NULL, TERN_LOG_WARN, TERN_LOG_TO_STDERR);
    if (rc == 0)
        rc = tern_loop_new(NULL, &c.loop);
    if (rc == 0)
        rc = ltp_udp_new(c.loop, listen, NULL, c.lg, &c.u);
    if (rc) {
        fprintf(stderr, "ltpcounter: cannot listen on %s: %s\n", listen,
                tern_strerror(rc));
        return 1;
    }
    ltp_udp_learn(c.u, 1);
    ltp_host host = {.ctx = &c, .send = do_send, .notice = on_notice, .tx_notify = 1};
    ltp_engine_cfg ec = {.engine_id = engine};
    rc = ltp_engine_new(c.loop, &ec, &host, c.lg, &c.e);
    if (rc) {
        fprintf(stderr, "ltpcounter: engine: %s\n", tern_strerror(rc));
        return 1;
    }
    for (int i = 0; i < npeers; i++) {
        if (paddr[i] && (rc = ltp_udp_add_peer(c.u, peers[i], paddr[i], 0))) {
            fprintf(stderr, "ltpcounter: --peer %" PRIu64 ":%s: %s\n", peers[i], paddr[i],
                    tern_strerror(rc));
            return 2;
        }
        ltp_span_cfg sc = {.peer = peers[i],
                           .max_export = 16,
                           .max_import = 4096,
                           .max_seg = seg,
                           .agg_size = 64000,
                           .agg_ms = 1000,
                           .owlt_ms = 0,
                           .qtime_ms = 200};
        if ((rc = ltp_span_add(c.e, &sc))) {
            fprintf(stderr, "ltpcounter: span %" PRIu64 ": %s\n", peers[i],
                    tern_strerror(rc));
            return 2;
        }
    }
    ltp_udp_attach(c.u, c.e);
    if (dir && (rc = tern_ports_publish(dir, "ltp", "udp", ltp_udp_port(c.u)))) {
        fprintf(stderr, "ltpcounter: cannot publish the port in %s: %s\n", dir,
                tern_strerror(rc));
        return 1;
    }
    if (!c.quiet)
        fprintf(stderr, "ltpcounter: engine %" PRIu64 " listening on UDP port %u\n",
                engine, ltp_udp_port(c.u));

    sigset_t ss;
    sigemptyset(&ss);
    sigaddset(&ss, SIGINT);
    sigaddset(&ss, SIGTERM);
    sigprocmask(SIG_BLOCK, &ss, NULL);
    c.sigfd = signalfd(-1, &ss, SFD_NONBLOCK | SFD_CLOEXEC);
    if (c.sigfd >= 0) {
        tern_io_init(c.loop, &c.sig, c.sigfd, on_signal, &c);
        tern_io_start(&c.sig, TERN_IO_READ);
    }
    tern_timer_init(c.loop, &c.timeout);
    tern_timer_init(c.loop, &c.linger);
    tern_timer_init(c.loop, &c.poll);
    tern_timer_start(&c.timeout, timeout_fire, &c, timeout_s * 1000000000ull, 0);

    /* Runs until a signal, the timeout, or the count is reached and the last
     * reports are acknowledged (or --linger ms passed). */
    c.linger_ns = linger_ms * 1000000ull;
    tern_loop_run(c.loop, TERN_RUN_DEFAULT);
    ltp_udp_flush(c.u);

    double secs = c.t_last > c.t_first ? c.t_last - c.t_first : 0;
    double gbps = secs > 0 ? (double)c.bytes * 8 / secs / 1e9 : 0;
    double ups = secs > 0 ? (double)c.units / secs : 0;
    int ok = c.bad == 0 && c.dups == 0 && (!c.want_blocks || c.blocks >= c.want_blocks) &&
             (!c.want_units || c.units >= c.want_units);
    ltp_stats st;
    ltp_engine_stats(c.e, &st);
    ltp_udp_stats us;
    ltp_udp_stats_get(c.u, &us);
    printf("blocks %" PRIu64 " units %" PRIu64 " bytes %" PRIu64
           " seconds %.3f goodput %.3f "
           "Gbit/s units/s %.0f bad %" PRIu64 " duplicates %" PRIu64 " (%s)\n",
           c.blocks, c.units, c.bytes, secs, gbps, ups, c.bad, c.dups,
           c.why ? c.why : "stopped");
    if (!c.quiet)
        fprintf(stderr,
                "ltpcounter: udp in %" PRIu64 " dgrams (%" PRIu64
                " recvmmsg), out %" PRIu64 ", rcvbuf %d; ltp malformed %" PRIu64
                " stale %" PRIu64 " imports cancelled %" PRIu64 "\n",
                us.dgrams_in, us.recv_calls, us.dgrams_out, us.rcvbuf, st.malformed,
                st.stale, st.imports_cancelled);
    fflush(stdout);
    if (json) {
        FILE *f = fopen(json, "w");
        if (!f) {
            fprintf(stderr, "ltpcounter: cannot write %s: %m\n", json);
            ok = 0;
        } else {
            fprintf(f,
                    "{\"ok\": %s, \"reason\": \"%s\", \"blocks\": %" PRIu64
                    ", \"units\": %" PRIu64 ", \"bytes\": %" PRIu64
                    ", \"seconds\": %.6f, \"goodput_gbps\": %.6f, \"units_per_s\": %.1f, "
                    "\"bad\": %" PRIu64 ", \"duplicates\": %" PRIu64
                    ", \"expected_blocks\": %" PRIu64 ", \"expected_units\": %" PRIu64
                    ", \"udp\": {\"dgrams_in\": %" PRIu64 ", \"bytes_in\": %" PRIu64
                    ", \"dgrams_out\": %" PRIu64 ", \"recv_calls\": %" PRIu64
                    ", \"rcvbuf\": %d}, \"ltp\": {\"malformed\": %" PRIu64
                    ", \"stale\": %" PRIu64 ", \"imports_done\": %" PRIu64
                    ", \"imports_cancelled\": %" PRIu64 "}}\n",
                    ok ? "true" : "false", c.why ? c.why : "stopped", c.blocks, c.units,
                    c.bytes, secs, gbps, ups, c.bad, c.dups, c.want_blocks, c.want_units,
                    us.dgrams_in, us.bytes_in, us.dgrams_out, us.recv_calls, us.rcvbuf,
                    st.malformed, st.stale, st.imports_done, st.imports_cancelled);
            fclose(f);
        }
    }
    tern_timer_stop(&c.timeout);
    tern_timer_stop(&c.linger);
    tern_timer_stop(&c.poll);
    if (c.sigfd >= 0) {
        tern_io_stop(&c.sig);
        close(c.sigfd);
    }
    ltp_engine_free(c.e);
    ltp_udp_free(c.u);
    tern_loop_close(c.loop);
    tern_log_close(c.lg);
    free(c.seen);
    return ok ? 0 : 1;
}
