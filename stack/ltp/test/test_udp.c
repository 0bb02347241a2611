/* The UDP link service: two engines in one process, each with its own
 * ltp_udp on 127.0.0.1 (port 0), one loop on the real clock. Blocks from
 * 1 kB to 5 MB, 1,400 and 64,000-byte segments, must arrive intact; the ION
 * command parsers must say what they expected; a rate limit must slow a
 * transfer down (loose bounds only: the machine is shared). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ltp.h"
#include "ltp_udp.h"
#include "tern/clock.h"
#include "tern/crc.h"
#include "tern/pace.h"
#include "tern_test.h"

#define MAXB 16

struct pair;

struct node {
    struct pair *pr;
    ltp_udp *u;
    ltp_engine *e;
};

struct pair {
    tern_loop *loop;
    struct node n[2];
    uint32_t crc[MAXB];
    size_t len[MAXB];
    int nblocks, done, cancelled, delivered, bad;
    tern_timer deadline;
    int timed_out;
    int in_place;        /* hosts use send_buf/send_commit */
    uint64_t bufs_given; /* send_buf calls */
};

static uint64_t rnd(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static void check_finished(struct pair *pr)
{
    if (pr->done + pr->cancelled == pr->nblocks &&
        pr->delivered + pr->cancelled >= pr->nblocks)
        tern_loop_stop(pr->loop);
}

static int notice_cb(void *ctx, const ltp_notice *n)
{
    struct node *nd = ctx;
    struct pair *pr = nd->pr;
    switch (n->kind) {
    case LTP_EXPORT_DONE:
        pr->done++;
        check_finished(pr);
        break;
    case LTP_EXPORT_CANCELLED:
        pr->cancelled++;
        check_finished(pr);
        break;
    case LTP_RED_PART: {
        uint32_t idx;
        if (n->len < 4) {
            pr->bad++;
            break;
        }
        memcpy(&idx, n->data, 4);
        if (idx >= (uint32_t)pr->nblocks || n->len != pr->len[idx] ||
            tern_crc32c(0, n->data, n->len) != pr->crc[idx])
            pr->bad++;
        else
            pr->delivered++;
        check_finished(pr);
        break;
    }
    default:
        break;
    }
    return 0;
}

/* The host's send: the ltp_udp of this node. */
static int send_cb(void *ctx, uint64_t peer, const uint8_t *seg, size_t len)
{
    struct node *nd = ctx;
    return ltp_udp_send(nd->u, peer, seg, len);
}

/* send_buf/send_commit: segments encoded in the link service's queue */
static uint8_t *send_buf_cb(void *ctx, uint64_t peer, size_t len)
{
    struct node *nd = ctx;
    nd->pr->bufs_given += 1;
    return ltp_udp_send_buf(nd->u, peer, len);
}

static int send_commit_cb(void *ctx, uint64_t peer, uint8_t *seg, size_t len)
{
    struct node *nd = ctx;
    return ltp_udp_send_commit(nd->u, peer, seg, len);
}

static void on_deadline(tern_timer *t, void *arg)
{
    struct pair *pr = arg;
    pr->timed_out = 1;
    tern_loop_stop(pr->loop);
}

static void pair_open(struct pair *pr, const char *addr, size_t max_seg, uint64_t rate,
                      unsigned qtime_ms)
{
    int in_place = pr->in_place;
    memset(pr, 0, sizeof *pr);
    pr->in_place = in_place;
    CHECK_OK(tern_loop_new(NULL, &pr->loop));
    tern_timer_init(pr->loop, &pr->deadline);
    for (int i = 0; i < 2; i++) {
        struct node *nd = &pr->n[i];
        nd->pr = pr;
        CHECK_OK(ltp_udp_new(pr->loop, addr, NULL, NULL, &nd->u));
        CHECK(ltp_udp_port(nd->u) != 0);
    }
    for (int i = 0; i < 2; i++) {
        struct node *nd = &pr->n[i];
        char spec[64];
        int v6 = addr[0] == '[';
        snprintf(spec, sizeof spec, "%s:%u", v6 ? "[::1]" : "127.0.0.1",
                 ltp_udp_port(pr->n[1 - i].u));
        CHECK_OK(ltp_udp_add_peer(nd->u, (uint64_t)(2 - i), spec, i == 0 ? rate : 0));
        ltp_host h = {.ctx = nd, .send = send_cb, .notice = notice_cb, .tx_notify = 1};
        if (pr->in_place) {
            h.send_buf = send_buf_cb;
            h.send_commit = send_commit_cb;
        }
        ltp_engine_cfg ec = {.engine_id = (uint64_t)(i + 1)};
        CHECK_OK(ltp_engine_new(pr->loop, &ec, &h, NULL, &nd->e));
        ltp_span_cfg sc = {.peer = (uint64_t)(2 - i),
                           .max_export = 8,
                           .max_import = 64,
                           .max_seg = max_seg,
                           .agg_size = 64000,
                           .agg_ms = 1,
                           .owlt_ms = 0,
                           .qtime_ms = qtime_ms};
        CHECK_OK(ltp_span_add(nd->e, &sc));
        CHECK_OK(ltp_udp_attach(nd->u, nd->e));
    }
}

static void pair_close(struct pair *pr)
{
    tern_timer_stop(&pr->deadline);
    for (int i = 0; i < 2; i++) {
        ltp_engine_free(pr->n[i].e);
        ltp_udp_free(pr->n[i].u);
    }
    /* Deferred flushes were cancelled by ltp_udp_free. */
    CHECK_OK(tern_loop_close(pr->loop));
}

/* Sends blocks of the given sizes from node 0 to node 1 and runs the loop. */
static double pair_run(struct pair *pr, const size_t *sizes, int n, unsigned timeout_s)
{
    uint64_t seed = 0x1234567ull;
    pr->nblocks = n;
    for (int i = 0; i < n; i++) {
        uint8_t *b = malloc(sizes[i]);
        CHECK(b);
        for (size_t k = 0; k < sizes[i]; k += 8) {
            uint64_t r = rnd(&seed);
            memcpy(b + k, &r, sizes[i] - k < 8 ? sizes[i] - k : 8);
        }
        uint32_t idx = (uint32_t)i;
        memcpy(b, &idx, 4);
        pr->len[i] = sizes[i];
        pr->crc[i] = tern_crc32c(0, b, sizes[i]);
        CHECK_OK(ltp_block_send(pr->n[0].e, 2, 1, b, sizes[i], 0, NULL, NULL));
        free(b);
    }
    uint64_t t0 = tern_loop_now(pr->loop);
    tern_timer_start(&pr->deadline, on_deadline, pr, (uint64_t)timeout_s * 1000000000ull,
                     0);
    CHECK_OK(tern_loop_run(pr->loop, TERN_RUN_DEFAULT));
    double secs = (double)(tern_loop_now(pr->loop) - t0) / 1e9;
    CHECK_MSG(!pr->timed_out, "timed out after %u s: %d done, %d delivered, %d cancelled",
              timeout_s, pr->done, pr->delivered, pr->cancelled);
    CHECK_EQ_INT(pr->bad, 0);
    CHECK_EQ_INT(pr->cancelled, 0);
    CHECK_EQ_INT(pr->done, n);
    CHECK_EQ_INT(pr->delivered, n);
    ltp_udp_stats st;
    ltp_udp_stats_get(pr->n[0].u, &st);
    CHECK(st.dgrams_out > 0);
    CHECK_EQ_U64(st.drop_no_peer + st.drop_too_big + st.drop_queue_full, 0);
    ltp_udp_stats_get(pr->n[1].u, &st);
    CHECK(st.dgrams_in > 0);
    return secs;
}

static void blocks_with_seg(size_t seg)
{
    static const size_t sizes[] = {1000, 1024, 65536, 100000, 1u << 20, 5u << 20};
    struct pair pr;
    pair_open(&pr, "127.0.0.1:0", seg, 0, 100);
    pair_run(&pr, sizes, (int)(sizeof sizes / sizeof sizes[0]), 60);
    pair_close(&pr);
}

TEST(udp_blocks_seg1400)
{
    blocks_with_seg(1400);
}

TEST(udp_blocks_seg64000)
{
    blocks_with_seg(64000);
}

/* The same blocks with the data segments encoded in the link service's
 * queue (ltp_udp_send_buf/commit): sent directly or queued, every block
 * arrives intact (CRC-32C per block). */
TEST(udp_blocks_encoded_in_place)
{
    static const size_t sizes[] = {1000, 65536, 1u << 20, 5u << 20};
    for (int k = 0; k < 2; k++) {
        struct pair pr = {.in_place = 1};
        pair_open(&pr, "127.0.0.1:0", k ? 1400 : 64000, 0, 100);
        pair_run(&pr, sizes, (int)(sizeof sizes / sizeof sizes[0]), 60);
        CHECK(pr.bufs_given > 0);
        pair_close(&pr);
    }
}

/* Paced: every data segment waits in the queue, encoded where it waits. */
TEST(udp_rate_limit_encoded_in_place)
{
    static const size_t sizes[] = {300000};
    struct pair pr = {.in_place = 1};
    pair_open(&pr, "127.0.0.1:0", 1400, 20000000, 3000);
    pair_run(&pr, sizes, 1, 60);
    ltp_udp_stats st;
    ltp_udp_stats_get(pr.n[0].u, &st);
    CHECK(st.rate_waits > 0);
    CHECK(pr.bufs_given > 200);
    pair_close(&pr);
}

TEST(udp_many_small_blocks)
{
    size_t sizes[MAXB];
    for (int i = 0; i < MAXB; i++)
        sizes[i] = 1024 + (size_t)i * 977;
    struct pair pr;
    pair_open(&pr, "127.0.0.1:0", 1400, 0, 100);
    pair_run(&pr, sizes, MAXB, 60);
    pair_close(&pr);
}

TEST(udp_ipv6_loopback)
{
    int fd = socket(AF_INET6, SOCK_DGRAM, 0);
    if (fd < 0) {
        printf("# skipped: no IPv6 sockets\n");
        return;
    }
    close(fd);
    ltp_udp *u;
    tern_loop *loop;
    CHECK_OK(tern_loop_new(NULL, &loop));
    int rc = ltp_udp_new(loop, "udplsi [::1]:0", NULL, NULL, &u);
    CHECK_OK(tern_loop_close(loop));
    if (rc) {
        printf("# skipped: cannot bind [::1]: %s\n", tern_strerror(rc));
        return;
    }
    ltp_udp_free(u);
    static const size_t sizes[] = {3000, 200000};
    struct pair pr;
    pair_open(&pr, "[::1]:0", 1400, 0, 100);
    pair_run(&pr, sizes, 2, 60);
    pair_close(&pr);
}

TEST(udp_rate_limit)
{
    static const size_t sizes[] = {1u << 20};
    struct pair pr;
    /* qtime covers the time the block waits in the bucket. */
    pair_open(&pr, "127.0.0.1:0", 1400, 20000000, 3000);
    double secs = pair_run(&pr, sizes, 1, 60);
    ltp_udp_stats st;
    ltp_udp_stats_get(pr.n[0].u, &st);
    printf("# 1 MiB at 20 Mbit/s took %.3f s (%llu bucket waits)\n", secs,
           (unsigned long long)st.rate_waits);
    CHECK_MSG(secs >= 0.30, "1 MiB at 20 Mbit/s took only %.3f s", secs);
    CHECK_MSG(secs < 20, "1 MiB at 20 Mbit/s took %.3f s", secs);
    CHECK(st.rate_waits > 0);
    pair_close(&pr);
}

TEST(udp_unknown_peer_and_too_big)
{
    tern_loop *loop;
    ltp_udp *u;
    CHECK_OK(tern_loop_new(NULL, &loop));
    CHECK_OK(ltp_udp_new(loop, "127.0.0.1:0", NULL, NULL, &u));
    uint8_t seg[16] = {0};
    CHECK_RC(ltp_udp_send(u, 9, seg, sizeof seg), TERN_ENOTFOUND);
    CHECK_OK(ltp_udp_add_peer(u, 9, "127.0.0.1:9", 0));
    static uint8_t big[70000];
    CHECK_RC(ltp_udp_send(u, 9, big, sizeof big), -EMSGSIZE);
    CHECK_OK(ltp_udp_send(u, 9, seg, sizeof seg));
    CHECK_EQ_U64(ltp_udp_flush(u), 0);
    ltp_udp_stats st;
    ltp_udp_stats_get(u, &st);
    CHECK_EQ_U64(st.drop_no_peer, 1);
    CHECK_EQ_U64(st.drop_too_big, 1);
    CHECK_EQ_U64(st.dgrams_out, 1);
    CHECK(st.rcvbuf > 0 && st.sndbuf > 0);
    /* An IPv6 peer for an IPv4 socket, a malformed address. */
    CHECK(ltp_udp_add_peer(u, 10, "[::1]:1113", 0) != 0);
    CHECK_RC(ltp_udp_add_peer(u, 10, "127.0.0.1:x", 0), TERN_ESYNTAX);
    CHECK_RC(ltp_udp_add_peer(u, 10, "udplso 127.0.0.1:1113 fast", 0), TERN_ESYNTAX);
    CHECK_OK(ltp_udp_add_peer(u, 10, "udplso 127.0.0.1:1113 1000000", 0));
    ltp_udp_free(u);
    CHECK_OK(tern_loop_close(loop));
}

/* ------------------------------------------------------------ parsing */

static void lso_ok(const char *cmd, const char *host, unsigned port, uint64_t rate)
{
    char h[64], err[256] = "";
    unsigned p = 0;
    uint64_t r = 99;
    int rc = ltp_udp_parse_lso(cmd, h, sizeof h, &p, &r, err, sizeof err);
    CHECK_MSG(rc == 0, "%s: %s", cmd, err);
    CHECK_EQ_STR(h, host);
    CHECK_EQ_INT(p, port);
    CHECK_EQ_U64(r, rate);
}

static void lso_bad(const char *cmd, const char *msg)
{
    char h[64], err[256] = "";
    unsigned p;
    uint64_t r;
    CHECK_RC(ltp_udp_parse_lso(cmd, h, sizeof h, &p, &r, err, sizeof err), TERN_ESYNTAX);
    CHECK_EQ_STR(err, msg);
}

static void lsi_ok(const char *cmd, const char *host, unsigned port)
{
    char h[64], err[256] = "";
    unsigned p = 99;
    int rc = ltp_udp_parse_lsi(cmd, h, sizeof h, &p, err, sizeof err);
    CHECK_MSG(rc == 0, "%s: %s", cmd, err);
    CHECK_EQ_STR(h, host);
    CHECK_EQ_INT(p, port);
}

static void lsi_bad(const char *cmd, const char *msg)
{
    char h[64], err[256] = "";
    unsigned p;
    CHECK_RC(ltp_udp_parse_lsi(cmd, h, sizeof h, &p, err, sizeof err), TERN_ESYNTAX);
    CHECK_EQ_STR(err, msg);
}

#define LSO_USAGE "'udplso {<host>|@}[:<port>] [<rate bits/s>] [<engine>]'"
#define LSI_USAGE "'udplsi {<host>|@}[:<port>]'"

TEST(udp_parse_lso)
{
    lso_ok("udplso 127.0.0.1:1113 1000000000", "127.0.0.1", 1113, 1000000000);
    lso_ok("udplso 127.0.0.1", "127.0.0.1", 1113, 0);
    lso_ok("  udplso\tnode2.example:4556   1000 ", "node2.example", 4556, 1000);
    lso_ok("udplso [::1]:1114 5", "::1", 1114, 5);
    lso_ok("udplso [fe80::1]", "fe80::1", 1113, 0);
    lso_ok("udplso @:2000 10 7", "127.0.0.1", 2000, 10);
    lso_ok("udplso 10.0.0.1:65535 0", "10.0.0.1", 65535, 0);

    lso_bad("udplsi 127.0.0.1:1113",
            "expected " LSO_USAGE ", got 'udplsi 127.0.0.1:1113'");
    lso_bad("", "expected " LSO_USAGE ", got ''");
    lso_bad("udplso", "udplso: missing address (expected " LSO_USAGE ")");
    lso_bad("udplso 127.0.0.1:99999 10",
            "udplso: bad port '99999' in '127.0.0.1:99999' (expected 1-65535)");
    lso_bad("udplso 127.0.0.1:0",
            "udplso: bad port '0' in '127.0.0.1:0' (expected 1-65535)");
    lso_bad("udplso 127.0.0.1: 10",
            "udplso: bad port '' in '127.0.0.1:' (expected 1-65535)");
    lso_bad("udplso 127.0.0.1:1113 fast",
            "udplso: bad rate 'fast' (expected bits per second, a whole number)");
    lso_bad("udplso 127.0.0.1:1113 -5",
            "udplso: bad rate '-5' (expected bits per second, a whole number)");
    lso_bad("udplso 127.0.0.1:1113 99999999999999999999",
            "udplso: bad rate '99999999999999999999' (expected bits per second, a whole "
            "number)");
    lso_bad("udplso 127.0.0.1:1113 10 two",
            "udplso: bad engine number 'two' (expected a whole number)");
    lso_bad("udplso 127.0.0.1:1113 10 2 extra",
            "udplso: unexpected 'extra' after the engine number (expected " LSO_USAGE
            ")");
    lso_bad("udplso ::1:1113 10",
            "udplso: IPv6 address in '::1:1113' must be in brackets, as in [::1]:1113");
    lso_bad(
        "udplso [::1:1113 10",
        "udplso: unterminated IPv6 literal in '[::1:1113' (expected [<address>]:<port>)");
    lso_bad("udplso [::1]1113", "udplso: expected ':<port>' after ']' in '[::1]1113'");
    lso_bad("udplso :1113 10",
            "udplso: missing host in ':1113' (expected <host>[:<port>])");
    lso_bad("udplso []:1113",
            "udplso: missing host in '[]:1113' (expected <host>[:<port>])");
}

TEST(udp_parse_lsi)
{
    lsi_ok("udplsi 127.0.0.1:1113", "127.0.0.1", 1113);
    lsi_ok("udplsi 127.0.0.1:0", "127.0.0.1", 0);
    lsi_ok("udplsi 127.0.0.1", "127.0.0.1", 1113);
    lsi_ok("udplsi @", "0.0.0.0", 1113);
    lsi_ok("udplsi [::]:1200", "::", 1200);

    lsi_bad("udplso 127.0.0.1:1113",
            "expected " LSI_USAGE ", got 'udplso 127.0.0.1:1113'");
    lsi_bad("udplsi", "udplsi: missing address (expected " LSI_USAGE ")");
    lsi_bad("udplsi 127.0.0.1:1113 1000",
            "udplsi: unexpected '1000' after the address (expected " LSI_USAGE ")");
    lsi_bad("udplsi 127.0.0.1:65536",
            "udplsi: bad port '65536' in '127.0.0.1:65536' (expected 0-65535)");
    lsi_bad("udplsi 127.0.0.1:x1",
            "udplsi: bad port 'x1' in '127.0.0.1:x1' (expected 0-65535)");
}

TEST(udp_new_bad_spec)
{
    tern_loop *loop;
    ltp_udp *u = NULL;
    CHECK_OK(tern_loop_new(NULL, &loop));
    CHECK_RC(ltp_udp_new(loop, "127.0.0.1:70000", NULL, NULL, &u), TERN_ESYNTAX);
    CHECK_RC(ltp_udp_new(loop, "udplsi", NULL, NULL, &u), TERN_ESYNTAX);
    CHECK(u == NULL);
    /* A port in use. */
    ltp_udp *a;
    CHECK_OK(ltp_udp_new(loop, "udplsi 127.0.0.1:0", NULL, NULL, &a));
    char spec[64];
    snprintf(spec, sizeof spec, "127.0.0.1:%u", ltp_udp_port(a));
    CHECK_RC(ltp_udp_new(loop, spec, NULL, NULL, &u), -EADDRINUSE);
    ltp_udp_free(a);
    CHECK_OK(tern_loop_close(loop));
}

/* Behind a slow rate, a report overtakes queued data: repair must not wait
 * for a whole window of data to drain. */
TEST(udp_control_segments_go_first)
{
    tern_loop *loop;
    ltp_udp *u;
    CHECK_OK(tern_loop_new(NULL, &loop));
    CHECK_OK(ltp_udp_new(loop, "127.0.0.1:0", NULL, NULL, &u));
    int rx = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    CHECK(rx >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    CHECK(bind(rx, (struct sockaddr *)&a, sizeof a) == 0);
    CHECK(getsockname(rx, (struct sockaddr *)&a, &al) == 0);
    char to[64];
    snprintf(to, sizeof to, "127.0.0.1:%u", ntohs(a.sin_port));
    CHECK_OK(ltp_udp_add_peer(u, 9, to, 8000000)); /* 8 Mbit/s: 1 ms per KB */
    uint8_t data[1000], rs[20];
    memset(data, 0, sizeof data); /* type 0: red data */
    memset(rs, 0, sizeof rs);
    rs[0] = LTP_RS;
    for (int i = 0; i < 30; i++) {
        data[1] = (uint8_t)i;
        CHECK_OK(ltp_udp_send(u, 9, data, sizeof data));
    }
    CHECK_OK(ltp_udp_send(u, 9, rs, sizeof rs));
    /* Run until everything left (about 31 ms at this rate). */
    for (int k = 0; k < 400; k++) {
        ltp_udp_stats st;
        ltp_udp_stats_get(u, &st);
        if (st.dgrams_out == 31)
            break;
        tern_loop_run(loop, TERN_RUN_ONCE);
    }
    int pos = -1, n = 0;
    uint8_t buf[2048];
    for (;;) {
        ssize_t r = recv(rx, buf, sizeof buf, 0);
        if (r < 0)
            break;
        if (buf[0] == LTP_RS)
            pos = n;
        n++;
    }
    CHECK_EQ_INT(n, 31);
    /* Only what had already left (the bucket's first burst) may precede it. */
    CHECK_MSG(pos >= 0 && pos < 15, "the report left as datagram %d of 31", pos);
    close(rx);
    ltp_udp_free(u);
    CHECK_OK(tern_loop_close(loop));
}

/* A slow rate holds from the first datagram on: the bucket does not start
 * with a burst as large as the largest datagram (64 KB: 4.5 s at
 * 115 kbit/s), only about one datagram. */
TEST(udp_rate_no_initial_burst)
{
    tern_loop *loop;
    ltp_udp *u;
    CHECK_OK(tern_loop_new(NULL, &loop));
    CHECK_OK(ltp_udp_new(loop, "127.0.0.1:0", NULL, NULL, &u));
    int rx = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    CHECK(rx >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    CHECK(bind(rx, (struct sockaddr *)&a, sizeof a) == 0);
    CHECK(getsockname(rx, (struct sockaddr *)&a, &al) == 0);
    char to[64];
    snprintf(to, sizeof to, "127.0.0.1:%u", ntohs(a.sin_port));
    CHECK_OK(ltp_udp_add_peer(u, 9, to, 112000)); /* 14 KB/s: 100 ms per 1,400 B */
    uint8_t data[1400];
    memset(data, 0, sizeof data); /* type 0: red data */
    for (int i = 0; i < 20; i++) {
        data[1] = (uint8_t)i;
        CHECK_OK(ltp_udp_send(u, 9, data, sizeof data));
    }
    /* Run the loop for 250 ms: at the rate 3 or 4 datagrams may leave (the
     * first at once, then one every 100 ms), not 20. */
    uint64_t t0 = tern_loop_now(loop);
    while (tern_loop_now(loop) - t0 < 250000000ull)
        tern_loop_run(loop, TERN_RUN_ONCE);
    ltp_udp_stats st;
    ltp_udp_stats_get(u, &st);
    CHECK_MSG(st.dgrams_out >= 2 && st.dgrams_out <= 5,
              "%llu of 20 datagrams left in 250 ms at 112 kbit/s",
              (unsigned long long)st.dgrams_out);
    int n = 0;
    uint8_t buf[2048];
    while (recv(rx, buf, sizeof buf, 0) > 0)
        n++;
    CHECK(n <= 5);
    close(rx);
    ltp_udp_free(u);
    CHECK_OK(tern_loop_close(loop));
}

/* Paced to a link (contact) rate of 100 Mbit/s with no udplso rate: every
 * datagram arrives, and no 1 ms window holds more than one burst (TERN_PACE_BURST_MAX), a
 * millisecond at the rate and one datagram: what a peer with Linux's default 212,992-byte
 * receive buffer (ION's udplsi) takes without loss. 10 ms at the rate would be 125 KB at
 * once. The loop runs on a virtual clock and the receiver is drained after every step
 * (loopback delivers within the send call), so each datagram is stamped with the time the
 * pacing saw: no scheduling noise. */
TEST(udp_link_rate_paced_in_small_bursts)
{
    tern_loop *loop;
    tern_clock *clk;
    ltp_udp *u;
    CHECK_OK(tern_clock_virtual_new(UINT64_C(849312000000), &clk));
    CHECK_OK(tern_loop_new(clk, &loop));
    CHECK_OK(ltp_udp_new(loop, "127.0.0.1:0", NULL, NULL, &u));
    int rx = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    CHECK(rx >= 0);
    int big = 8 << 20;
    setsockopt(rx, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof big);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    CHECK(bind(rx, (struct sockaddr *)&a, sizeof a) == 0);
    CHECK(getsockname(rx, (struct sockaddr *)&a, &al) == 0);
    char to[64];
    snprintf(to, sizeof to, "127.0.0.1:%u", ntohs(a.sin_port));
    CHECK_OK(ltp_udp_add_peer(u, 9, to, 0));
    CHECK_RC(ltp_udp_set_link_rate(u, 10, 100000000), TERN_ENOTFOUND);
    CHECK_OK(ltp_udp_set_link_rate(u, 9, 100000000));
    enum { N = 400, LEN = 1400 };
    static uint8_t data[LEN];
    for (int i = 0; i < N; i++) {
        data[1] = (uint8_t)i;
        CHECK_OK(ltp_udp_send(u, 9, data, sizeof data));
    }
    static uint64_t at[N];
    int n = 0;
    uint64_t t0 = tern_loop_now(loop);
    while (n < N && tern_loop_now(loop) - t0 < 5000000000ull) {
        tern_loop_run(loop, TERN_RUN_ONCE);
        uint8_t buf[2048];
        while (recv(rx, buf, sizeof buf, 0) > 0) {
            CHECK(n < N);
            at[n++] = tern_loop_now(loop);
        }
    }
    CHECK_EQ_INT(n, N);
    /* the most bytes that arrived within any 1 ms */
    size_t most = 0;
    for (int i = 0, j = 0; i < N; i++) {
        while (at[i] - at[j] >= 1000000ull)
            j++;
        size_t b = (size_t)(i - j + 1) * LEN;
        if (b > most)
            most = b;
    }
    size_t bound = TERN_PACE_BURST_MAX + 12500 + LEN;
    CHECK_MSG(most <= bound, "%zu bytes arrived within 1 ms (bound %zu)", most, bound);
    /* 560 KB at 12.5 MB/s, less one burst: at least 39 ms */
    uint64_t span = at[N - 1] - at[0];
    CHECK_MSG(span >= 39000000ull, "%d datagrams took only %llu us", N,
              (unsigned long long)(span / 1000));
    close(rx);
    ltp_udp_free(u);
    CHECK_OK(tern_loop_close(loop));
    tern_clock_free(clk);
}
