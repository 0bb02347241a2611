/* The UDP convergence layer over real sockets on 127.0.0.1: two agents
 * (nodes 1 and 2, in-memory stores) on one loop with the real clock, node 1's
 * udp outduct aimed at node 2's induct, which binds port 0 and publishes the
 * port it got. The wire check records what node 1 sent through a transparent
 * tap socket and has tshark dissect it. */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bp_udp.h"
#include "tern/cbor.h"
#include "tern/clock.h"
#include "tern/pace.h"
#include "tern/ports.h"
#include "tern_test.h"

/* ---- two nodes on one loop ---------------------------------------------- */

typedef struct node {
    sdr *store;
    bp_agent *a;
    bp_udp_cla *u;
    int deliverable;
} node;

typedef struct net {
    tern_loop *loop;
    node n[3]; /* n[1], n[2] */
    uint16_t port2;
    char duct[64];
} net;

static void on_deliverable(void *ctx, const bp_eid *ep)
{
    (void)ep;
    ((node *)ctx)->deliverable++;
}

static bp_eid eid(const char *text)
{
    bp_eid e;
    CHECK_OK(bp_eid_parse(text, &e, NULL));
    return e;
}

static void node_open(net *w, uint64_t nbr, int crc)
{
    node *n = &w->n[nbr];
    char name[16];
    snprintf(name, sizeof name, "n%" PRIu64, nbr);
    sdr_profile p = {.name = name, .heap_size = 256u << 20, .mode = SDR_MEMORY};
    char why[256] = "";
    int rc = sdr_open(&p, &n->store, why, sizeof why);
    CHECK_MSG(rc == 0, "sdr_open: %s", why);
    bp_agent_cfg cfg = {.node = nbr, .store = n->store, .crc_type = crc};
    bp_agent_host host = {.ctx = n, .deliverable = on_deliverable};
    CHECK_OK(bp_agent_new(w->loop, &cfg, &host, NULL, &n->a));
    CHECK_OK(bp_udp_cla_new(n->a, w->loop, NULL, &n->u));
    char text[32];
    snprintf(text, sizeof text, "ipn:%" PRIu64 ".1", nbr);
    bp_eid ep = eid(text);
    CHECK_OK(bp_endpoint_add(n->a, &ep, BP_RECV_QUEUE));
}

/* Node 2 listens on a port of its choosing, published as a node would; node
 * 1 routes node 2's bundles to it (to_port: somewhere else, e.g. a tap). */
static void net_open_clock(net *w, int crc, uint16_t to_port, tern_clock *clk)
{
    memset(w, 0, sizeof *w);
    CHECK_OK(tern_loop_new(clk, &w->loop));
    node_open(w, 1, crc);
    node_open(w, 2, crc);
    CHECK_OK(bp_udp_cla_induct(w->n[2].u, "127.0.0.1:0", &w->port2));
    CHECK(w->port2 != 0);
    CHECK_OK(tern_ports_publish(tt_tmpdir(), "udpcl", "udp", w->port2));
    unsigned port;
    CHECK_OK(tern_ports_lookup(tt_tmpdir(), "udpcl", "udp", &port));
    CHECK_EQ_U64(port, w->port2);
    snprintf(w->duct, sizeof w->duct, "127.0.0.1:%u", to_port ? to_port : port);
    CHECK_OK(bp_outduct_add(w->n[1].a, "udp", w->duct, "udpclo", 0));
    CHECK_OK(bp_egress_plan_add(w->n[1].a, 2, "udp", w->duct));
}

static void net_open(net *w, int crc, uint16_t to_port)
{
    net_open_clock(w, crc, to_port, NULL);
}

static void net_close(net *w)
{
    for (int i = 1; i <= 2; i++) {
        bp_agent_free(w->n[i].a);
        bp_udp_cla_free(w->n[i].u);
        CHECK_OK(sdr_close(w->n[i].store));
    }
    CHECK_OK(tern_loop_close(w->loop));
}

static void run_ms(net *w, uint64_t ms)
{
    tern_loop_run_until(w->loop, tern_loop_now(w->loop) + ms * 1000000ull);
}

static bp_agent_stats astats(const node *n)
{
    bp_agent_stats st;
    bp_agent_stats_get(n->a, &st);
    return st;
}

static bp_udp_stats ustats(const node *n)
{
    bp_udp_stats st;
    bp_udp_cla_stats(n->u, &st);
    return st;
}

static void fill(uint8_t *p, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        p[i] = (uint8_t)(seed >> 56);
    }
}

static void send12(net *w, const void *p, size_t len, uint64_t flags)
{
    bp_eid s = eid("ipn:1.1"), d = eid("ipn:2.1");
    bp_send_opts o;
    bp_send_opts_init(&o);
    o.flags = flags;
    CHECK_OK(bp_agent_send(w->n[1].a, &s, &d, &o, p, len, NULL));
}

/* Runs the loop until node 2 has queued want bundles (or timeout_ms). */
static void wait_queued(net *w, size_t want, unsigned timeout_ms)
{
    bp_eid ep = eid("ipn:2.1");
    for (unsigned t = 0; t < timeout_ms; t += 5) {
        if (bp_endpoint_queued(w->n[2].a, &ep) >= want)
            return;
        run_ms(w, 5);
    }
}

/* 32-bit FNV-1a, carried in the test's own bookkeeping. */
static uint32_t sum32(const uint8_t *p, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 16777619u;
    return h;
}

/* ---- delivery ----------------------------------------------------------- */

TEST(udp_bundles_1B_to_60kB_arrive_intact)
{
    static const size_t sizes[] = {1,     2,     100,   1000,  1400, 8192,
                                   30000, 60000, 61440, 63976, 63977};
    enum { N = sizeof sizes / sizeof sizes[0] };
    net w;
    net_open(&w, 0, 0);
    uint8_t *buf = malloc(64000);
    uint32_t want[N];
    for (size_t i = 0; i < N; i++) {
        fill(buf, sizes[i], 1000 + i);
        want[i] = sum32(buf, sizes[i]);
        send12(&w, buf, sizes[i], 0);
    }
    wait_queued(&w, N, 5000);
    bool seen[N] = {false};
    bp_eid ep = eid("ipn:2.1");
    bp_delivery d;
    size_t got = 0;
    while (bp_agent_recv(w.n[2].a, &ep, &d) == 0) {
        size_t k = N;
        for (size_t i = 0; i < N; i++)
            if (sizes[i] == d.len)
                k = i;
        CHECK_MSG(k < N, "a bundle of %zu bytes that was not sent", d.len);
        CHECK_MSG(!seen[k], "the %zu-byte bundle arrived twice", d.len);
        CHECK_MSG(sum32(d.payload, d.len) == want[k], "the %zu-byte bundle is damaged",
                  d.len);
        bp_eid src = eid("ipn:1.1");
        CHECK(bp_eid_equal(&d.src, &src));
        seen[k] = true;
        got++;
        bp_delivery_release(&d);
    }
    CHECK_EQ_U64(got, N);
    /* 63,976 bytes is the default maximum payload: one more makes two
     * fragments, so the last bundle took two datagrams. */
    bp_agent_stats a1 = astats(&w.n[1]), a2 = astats(&w.n[2]);
    CHECK_EQ_U64(a1.fragmented, 1);
    CHECK_EQ_U64(a1.fragments_made, 2);
    CHECK_EQ_U64(a1.forwarded, N + 1);
    CHECK_EQ_U64(a2.reassembled, 1);
    CHECK_EQ_U64(a2.malformed, 0);
    bp_udp_stats u1 = ustats(&w.n[1]), u2 = ustats(&w.n[2]);
    CHECK_EQ_U64(u1.dgrams_out, N + 1);
    CHECK_EQ_U64(u2.dgrams_in, N + 1);
    CHECK_EQ_U64(u2.bundles_in, N + 1);
    CHECK_EQ_U64(u1.bytes_out, u2.bytes_in);
    CHECK_EQ_U64(u2.truncated + u2.refused_in + u2.kernel_drops, 0);
    /* Eleven bundles given in one go left in one sendmmsg. */
    CHECK_MSG(u1.send_calls <= 2, "%" PRIu64 " sendmmsg calls for one burst",
              u1.send_calls);
    free(buf);
    net_close(&w);
}

TEST(udp_200kB_bundle_is_fragmented_and_reassembled)
{
    net w;
    net_open(&w, 0, 0);
    size_t len = 200000;
    uint8_t *buf = malloc(len);
    fill(buf, len, 42);
    send12(&w, buf, len, 0);
    wait_queued(&w, 1, 5000);
    bp_eid ep = eid("ipn:2.1");
    bp_delivery d;
    CHECK_OK(bp_agent_recv(w.n[2].a, &ep, &d));
    CHECK_EQ_U64(d.len, len);
    CHECK_EQ_MEM(d.payload, buf, len);
    CHECK_MSG(!(d.flags & BP_FLAG_FRAGMENT), "delivered as a fragment");
    bp_delivery_release(&d);
    bp_agent_stats a1 = astats(&w.n[1]), a2 = astats(&w.n[2]);
    size_t frags = (len + BP_UDP_MAX_PAYLOAD - 1) / BP_UDP_MAX_PAYLOAD;
    CHECK_EQ_U64(a1.fragmented, 1);
    CHECK_EQ_U64(a1.fragments_made, frags);
    CHECK_EQ_U64(a2.received, frags);
    CHECK_EQ_U64(a2.reassembled, 1);
    bp_udp_stats u1 = ustats(&w.n[1]);
    CHECK_EQ_U64(u1.dgrams_out, frags);
    /* Every datagram within IPv4's limit. */
    CHECK_MSG(u1.bytes_out <= frags * (uint64_t)BP_UDP_MAX_DGRAM4, "datagrams too big");
    free(buf);
    net_close(&w);
}

TEST(udp_refuses_an_unfragmentable_bundle_that_cannot_fit)
{
    net w;
    net_open(&w, 0, 0);
    uint8_t *buf = malloc(100000);
    fill(buf, 100000, 7);
    /* Refused where the application hears it: bp_agent_send says so (before,
     * it returned 0 and the CLA deleted the bundle later). */
    bp_eid s = eid("ipn:1.1"), dst = eid("ipn:2.1");
    bp_send_opts o;
    bp_send_opts_init(&o);
    o.flags = BP_FLAG_NO_FRAGMENT;
    CHECK_RC(bp_agent_send(w.n[1].a, &s, &dst, &o, buf, 100000, NULL), TERN_ETOOBIG);
    /* Over the default maximum payload but within a datagram: it may not be
     * fragmented, and need not be. */
    send12(&w, buf, 64500, BP_FLAG_NO_FRAGMENT);
    wait_queued(&w, 1, 3000);
    run_ms(&w, 50);
    bp_agent_stats a1 = astats(&w.n[1]);
    bp_udp_stats u1 = ustats(&w.n[1]), u2 = ustats(&w.n[2]);
    CHECK_EQ_U64(u1.too_big, 0); /* never handed to the CLA */
    CHECK_EQ_U64(a1.deleted, 1);
    CHECK_EQ_U64(a1.fragmented, 0);
    CHECK_EQ_U64(a1.forwarded, 1);
    CHECK_EQ_U64(a1.stored, 0);
    CHECK_EQ_U64(a1.queued + a1.in_flight + a1.limbo, 0);
    CHECK_EQ_U64(u1.dgrams_out, 1);
    CHECK_EQ_U64(u2.dgrams_in, 1);
    bp_eid ep = eid("ipn:2.1");
    bp_delivery d;
    CHECK_OK(bp_agent_recv(w.n[2].a, &ep, &d));
    CHECK_EQ_U64(d.len, 64500);
    CHECK_EQ_MEM(d.payload, buf, 64500);
    bp_delivery_release(&d);
    CHECK_RC(bp_agent_recv(w.n[2].a, &ep, &d), -EAGAIN);
    free(buf);
    net_close(&w);
}

/* ---- bad input at the induct -------------------------------------------- */

static size_t encode_one(uint8_t *out, size_t cap, uint64_t seq, const char *text)
{
    bp_bundle b;
    memset(&b, 0, sizeof b);
    b.pri.version = 7;
    b.pri.crc_type = BP_CRC_32C;
    bp_eid_ipn(&b.pri.dest, 2, 1);
    bp_eid_ipn(&b.pri.src, 9, 1);
    bp_eid_ipn(&b.pri.report_to, 9, 0);
    b.pri.ctime_ms = 849320526384ULL + seq;
    b.pri.seq = seq;
    b.pri.lifetime_ms = 86400000ull * 365 * 100;
    b.blocks[0] = (bp_block){.type = BP_BLOCK_PAYLOAD,
                             .number = 1,
                             .crc_type = BP_CRC_32C,
                             .data = (const uint8_t *)text,
                             .data_len = strlen(text)};
    b.n_blocks = 1;
    size_t len;
    CHECK_OK(bp_bundle_encode(&b, out, cap, &len, NULL));
    return len;
}

static void raw_send(int fd, uint16_t port, const void *p, size_t len)
{
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(port)};
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ssize_t n = sendto(fd, p, len, 0, (struct sockaddr *)&to, sizeof to);
    CHECK_MSG(n == (ssize_t)len, "sendto: %s", strerror(errno));
}

TEST(udp_induct_counts_garbage_and_keeps_delivering)
{
    net w;
    net_open(&w, 0, 0);
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    CHECK(fd >= 0);
    uint8_t good[512], bad[512], noise[1500];
    size_t gl = encode_one(good, sizeof good, 1, "a good bundle before the garbage");
    /* 1: random bytes; 2: a bundle cut short; 3: a bundle with a broken CRC;
     * 4: one byte; 5: an empty datagram (not a bundle at all: ignored) */
    fill(noise, sizeof noise, tt_seed());
    noise[0] = 0x9f; /* looks like a bundle's indefinite array */
    raw_send(fd, w.port2, good, gl);
    raw_send(fd, w.port2, noise, sizeof noise);
    raw_send(fd, w.port2, good, gl / 2);
    memcpy(bad, good, gl);
    bad[gl - 3] ^= 0x10;
    raw_send(fd, w.port2, bad, gl);
    raw_send(fd, w.port2, "\x9f", 1);
    raw_send(fd, w.port2, "", 0);
    size_t gl2 = encode_one(good, sizeof good, 2, "a good bundle after the garbage");
    raw_send(fd, w.port2, good, gl2);
    /* and node 1 still gets through */
    send12(&w, "from node 1", 11, 0);
    wait_queued(&w, 3, 3000);
    bp_eid ep = eid("ipn:2.1");
    CHECK_EQ_U64(bp_endpoint_queued(w.n[2].a, &ep), 3);
    bp_agent_stats a2 = astats(&w.n[2]);
    bp_udp_stats u2 = ustats(&w.n[2]);
    CHECK_EQ_U64(a2.malformed, 4);
    CHECK_EQ_U64(u2.refused_in, 4);
    CHECK_EQ_U64(u2.empty_in, 1);
    CHECK_EQ_U64(u2.dgrams_in, 8);
    CHECK_EQ_U64(u2.bundles_in, 3);
    CHECK_EQ_U64(a2.delivered, 3);
    close(fd);
    net_close(&w);
}

/* ---- volume ------------------------------------------------------------- */

/* Node 1 sends N small bundles as fast as the agent makes them, a few
 * hundred per loop iteration, as a busy node would. On loopback a datagram
 * is lost only when the receiver's socket buffer is full, and the kernel
 * counts every such drop (SO_MEMINFO): so the test demands exact accounting
 * (delivered + dropped by the kernel == sent, no duplicates) and says how
 * many were lost, instead of demanding zero loss, which depends on the
 * buffer the host grants and on scheduling. */
TEST(udp_10000_small_bundles_are_all_accounted_for)
{
    enum { N = 10000, BURST = 250 };
    net w;
    net_open(&w, 0, 0);
    uint8_t *seen = calloc(N, 1);
    bp_eid ep = eid("ipn:2.1");
    size_t got = 0, dup = 0, bad = 0;
    uint64_t t0 = tern_loop_now(w.loop);
    int sent = 0;
    for (unsigned idle = 0; idle < 400;) {
        for (int k = 0; k < BURST && sent < N; k++, sent++) {
            char msg[64];
            int n = snprintf(msg, sizeof msg, "bundle %06d of %d", sent, N);
            send12(&w, msg, (size_t)n, 0);
        }
        size_t before = got;
        run_ms(&w, 1);
        bp_delivery d;
        while (bp_agent_recv(w.n[2].a, &ep, &d) == 0) {
            int i = -1;
            if (sscanf((const char *)d.payload, "bundle %d", &i) != 1 || i < 0 || i >= N)
                bad++;
            else if (seen[i]++)
                dup++;
            got++;
            bp_delivery_release(&d);
        }
        if (sent < N)
            continue;
        bp_udp_stats u2 = ustats(&w.n[2]);
        if (got + u2.kernel_drops >= N)
            break;
        idle = got == before ? idle + 1 : 0;
    }
    double secs = (double)(tern_loop_now(w.loop) - t0) / 1e9;
    bp_udp_stats u1 = ustats(&w.n[1]), u2 = ustats(&w.n[2]);
    bp_agent_stats a1 = astats(&w.n[1]);
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(dup, 0);
    CHECK_EQ_U64(a1.forwarded, N);
    CHECK_EQ_U64(u1.dgrams_out, N);
    CHECK_EQ_U64(u2.dgrams_in, got);
    CHECK_MSG(got + u2.kernel_drops == N,
              "%zu delivered + %" PRIu64 " dropped by the kernel != %d sent", got,
              u2.kernel_drops, N);
    fprintf(stderr,
            "# udp: %zu of %d small bundles delivered in %.2f s (%.0f/s, sendmmsg calls "
            "%" PRIu64 ", recvmmsg calls %" PRIu64 "); kernel dropped %" PRIu64 "%s\n",
            got, N, secs, (double)got / secs, u1.send_calls, u2.recv_calls,
            u2.kernel_drops,
            u2.kernel_drops ? " (receive buffer full: raise net.core.rmem_max)" : "");
    free(seen);
    net_close(&w);
}

/* ---- pacing ------------------------------------------------------------- */

/* An outduct whose contact (gate) runs at 12.5 MB/s, idle for 200 ms, then
 * given 1,000 1 kB bundles: they leave at the contact's rate, never more
 * than one burst (TERN_PACE_BURST_MAX) plus a millisecond at the rate in any
 * millisecond, which a receiver with Linux's default socket buffer holds
 * (ION's udpcli; the gate alone let 100 ms of the contact go at once). On the
 * virtual clock, with the receiving socket drained after every step. */
static void paced_run(const char *cmd, uint64_t gate_rate, uint64_t rate_Bps)
{
    enum { N = 1000, LEN = 1000 };
    tern_clock *clk;
    CHECK_OK(tern_clock_virtual_new(UINT64_C(849312000000), &clk));
    int rx = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    CHECK(rx >= 0);
    int big = 8 << 20;
    setsockopt(rx, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof big);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    CHECK(bind(rx, (struct sockaddr *)&a, sizeof a) == 0);
    CHECK(getsockname(rx, (struct sockaddr *)&a, &al) == 0);
    net w;
    net_open_clock(&w, 0, ntohs(a.sin_port), clk);
    bp_outduct *od = bp_outduct_find(w.n[1].a, "udp", w.duct);
    CHECK(od != NULL);
    if (cmd) { /* the same duct with a udpclo rate */
        CHECK_OK(bp_egress_plan_del(w.n[1].a, 2));
        CHECK_OK(bp_outduct_del(w.n[1].a, "udp", w.duct));
        CHECK_OK(bp_outduct_add(w.n[1].a, "udp", w.duct, cmd, 0));
        CHECK_OK(bp_egress_plan_add(w.n[1].a, 2, "udp", w.duct));
        od = bp_outduct_find(w.n[1].a, "udp", w.duct);
    }
    if (gate_rate)
        bp_outduct_set_gate(od, BP_GATE_OPEN, gate_rate, 0);
    run_ms(&w, 200);
    static uint8_t p[LEN];
    for (int i = 0; i < N; i++)
        send12(&w, p, sizeof p, 0);
    static uint64_t at[N];
    static size_t len[N];
    int n = 0;
    uint64_t t0 = tern_loop_now(w.loop);
    while (n < N && tern_loop_now(w.loop) - t0 < 10000000000ull) {
        tern_loop_run(w.loop, TERN_RUN_ONCE);
        uint8_t buf[4096];
        ssize_t k;
        while ((k = recv(rx, buf, sizeof buf, 0)) > 0) {
            CHECK(n < N);
            len[n] = (size_t)k;
            at[n++] = tern_loop_now(w.loop);
        }
    }
    CHECK_EQ_INT(n, N);
    size_t most = 0, sum = 0;
    for (int i = 0, j = 0; i < N; i++) {
        sum += len[i];
        while (at[i] - at[j] >= 1000000ull)
            sum -= len[j++];
        if (sum > most)
            most = sum;
    }
    size_t bound = TERN_PACE_BURST_MAX + rate_Bps / 1000 + 2 * len[0];
    CHECK_MSG(most <= bound, "%zu bytes left within 1 ms (bound %zu)", most, bound);
    uint64_t span = at[N - 1] - at[0],
             want = (uint64_t)(N * len[0] - bound) * 1000000000ull / rate_Bps;
    CHECK_MSG(span >= want,
              "%d bundles took %" PRIu64 " us, at the rate at least %" PRIu64, N,
              span / 1000, want / 1000);
    CHECK(ustats(&w.n[1]).rate_waits > 0);
    net_close(&w);
    tern_clock_free(clk);
    close(rx);
}

TEST(udp_outduct_paced_at_the_contact_rate_in_small_bursts)
{
    paced_run(NULL, 12500000, 12500000);
}

TEST(udp_outduct_paced_at_the_udpclo_rate)
{
    paced_run("udpclo 100000000", 0, 12500000);
}

/* ---- configuration ------------------------------------------------------ */

TEST(udp_duct_names_and_commands_are_checked)
{
    net w;
    net_open(&w, 0, 0);
    bp_agent *a = w.n[1].a;
    static const char *const bad_names[] = {
        "127.0.0.1:0", "127.0.0.1:65536", "127.0.0.1:", "::1:4556",
        "[::1",        "[::1]x",          ":4556",      "127.0.0.1:45x6"};
    for (size_t i = 0; i < sizeof bad_names / sizeof *bad_names; i++)
        CHECK_MSG(bp_outduct_add(a, "udp", bad_names[i], "udpclo", 0) == TERN_ESYNTAX,
                  "outduct name '%s' accepted", bad_names[i]);
    CHECK_RC(bp_outduct_add(a, "udp", "127.0.0.1:5000", "udpcli", 0), TERN_ESYNTAX);
    CHECK_RC(bp_outduct_add(a, "udp", "127.0.0.1:5000", "udpclo fast", 0), TERN_ESYNTAX);
    CHECK_RC(bp_outduct_add(a, "udp", "no-such-host.invalid:5000", "udpclo", 0),
             TERN_ENOTFOUND);
    /* ION's forms: a port, the default port, a rate (bits/s) */
    CHECK_OK(bp_outduct_add(a, "udp", "127.0.0.1:5001", "udpclo 1000000", 0));
    CHECK_OK(bp_outduct_add(a, "udp", "localhost", "", 0));
    CHECK_OK(bp_outduct_add(a, "udp", "[::1]:5002", "udpclo", 0));
    CHECK_OK(bp_outduct_del(a, "udp", "[::1]:5002"));
    uint16_t p;
    CHECK_RC(bp_udp_cla_induct(w.n[2].u, "0.0.0.0:99999", &p), TERN_ESYNTAX);
    CHECK_RC(bp_udp_cla_induct(w.n[2].u, "0.0.0.0:1 2", &p), TERN_ESYNTAX);
    CHECK_RC(bp_udp_cla_induct(w.n[2].u, "", &p), TERN_ESYNTAX);
    /* the port node 2 holds already */
    char taken[64];
    snprintf(taken, sizeof taken, "127.0.0.1:%u", w.port2);
    CHECK_RC(bp_udp_cla_induct(w.n[2].u, taken, &p), -EADDRINUSE);
    CHECK_OK(bp_udp_cla_induct(w.n[2].u, "udpcli 127.0.0.1:0", &p));
    CHECK(p != 0 && p != w.port2);
    net_close(&w);
}

TEST(udp_over_ipv6_loopback)
{
    int probe = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in6 lo6 = {.sin6_family = AF_INET6,
                               .sin6_addr = IN6ADDR_LOOPBACK_INIT};
    bool ok = probe >= 0 && bind(probe, (struct sockaddr *)&lo6, sizeof lo6) == 0;
    if (probe >= 0)
        close(probe);
    if (!ok) {
        fprintf(stderr, "# no IPv6 loopback here: IPv6 test skipped\n");
        return;
    }
    net w;
    net_open(&w, 0, 0);
    uint16_t p6;
    CHECK_OK(bp_udp_cla_induct(w.n[2].u, "[::1]:0", &p6));
    char duct[64];
    snprintf(duct, sizeof duct, "[::1]:%u", p6);
    CHECK_OK(bp_outduct_add(w.n[1].a, "udp", duct, "udpclo", 0));
    CHECK_OK(bp_egress_plan_add(w.n[1].a, 2, "udp", duct));
    uint8_t buf[65000];
    fill(buf, sizeof buf, 5);
    send12(&w, buf, 60000, 0);
    send12(&w, buf, sizeof buf, BP_FLAG_NO_FRAGMENT); /* fits IPv6's 65,527 only */
    wait_queued(&w, 2, 3000);
    bp_eid ep = eid("ipn:2.1");
    bp_delivery d;
    CHECK_OK(bp_agent_recv(w.n[2].a, &ep, &d));
    size_t first = d.len;
    CHECK_EQ_MEM(d.payload, buf, d.len);
    bp_delivery_release(&d);
    CHECK_OK(bp_agent_recv(w.n[2].a, &ep, &d));
    CHECK_EQ_MEM(d.payload, buf, d.len);
    CHECK_EQ_U64(first + d.len, 60000 + sizeof buf);
    bp_delivery_release(&d);
    net_close(&w);
}

/* ---- the wire, judged by tshark ----------------------------------------- */

typedef struct tap {
    int fd;
    uint16_t port, to;
    tern_io io;
    size_t n;
    uint8_t *dg[64];
    size_t len[64];
} tap;

/* Records each datagram and passes it on to node 2. */
static void tap_io(tern_io *io, int fd, unsigned events, void *arg)
{
    (void)io;
    (void)events;
    tap *t = arg;
    uint8_t buf[65536];
    ssize_t n;
    while ((n = recv(fd, buf, sizeof buf, MSG_DONTWAIT)) >= 0) {
        CHECK(t->n < 64);
        t->dg[t->n] = malloc((size_t)n + 1);
        memcpy(t->dg[t->n], buf, (size_t)n);
        t->len[t->n++] = (size_t)n;
        struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(t->to)};
        to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        CHECK(sendto(fd, buf, (size_t)n, 0, (struct sockaddr *)&to, sizeof to) == n);
    }
}

static void put32(FILE *f, uint32_t v)
{
    fwrite(&v, 4, 1, f);
}

/* One IPv4/UDP packet to port 4556 (LINKTYPE_RAW), UDP checksum 0 (none). */
static void write_packet(FILE *f, const uint8_t *payload, size_t len, uint32_t sec)
{
    uint8_t ip[28] = {0x45};
    size_t total = sizeof ip + len;
    CHECK(total <= 65535);
    ip[2] = (uint8_t)(total >> 8);
    ip[3] = (uint8_t)total;
    ip[8] = 64;
    ip[9] = 17;
    ip[12] = 127, ip[15] = 1;
    ip[16] = 127, ip[19] = 1;
    uint32_t sum = 0;
    for (int i = 0; i < 20; i += 2)
        sum += (uint32_t)(ip[i] << 8 | ip[i + 1]);
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    ip[10] = (uint8_t)(~sum >> 8);
    ip[11] = (uint8_t)~sum;
    uint16_t sport = htons(40000), dport = htons(BP_UDP_DEFAULT_PORT),
             ulen = htons((uint16_t)(8 + len));
    memcpy(ip + 20, &sport, 2);
    memcpy(ip + 22, &dport, 2);
    memcpy(ip + 24, &ulen, 2);
    put32(f, sec);
    put32(f, 0);
    put32(f, (uint32_t)total);
    put32(f, (uint32_t)total);
    fwrite(ip, sizeof ip, 1, f);
    fwrite(payload, len, 1, f);
}

/* Where to break a bundle: the last byte of its primary block, inside that
 * block's CRC (the agent puts a CRC on the primary block only). */
static size_t crc_byte(const uint8_t *dg, size_t len)
{
    tern_cbor_dec d;
    tern_cbor_dec_init(&d, dg + 1, len - 1); /* after the bundle's 0x9f */
    CHECK_OK(tern_cbor_skip(&d));
    return d.pos; /* 1 + d.pos is the first byte after the primary block */
}

static void write_pcap(const char *path, const tap *t, int corrupt)
{
    FILE *f = fopen(path, "wb");
    CHECK(f);
    put32(f, 0xa1b2c3d4);
    put32(f, 0x00040002);
    put32(f, 0);
    put32(f, 0);
    put32(f, 65535);
    put32(f, 101);
    for (size_t i = 0; i < t->n; i++) {
        size_t at = crc_byte(t->dg[i], t->len[i]);
        if (corrupt)
            t->dg[i][at] ^= 0x40;
        write_packet(f, t->dg[i], t->len[i], (uint32_t)i);
        if (corrupt)
            t->dg[i][at] ^= 0x40;
    }
    CHECK(fclose(f) == 0);
}

static int count_lines(const char *cmd)
{
    FILE *p = popen(cmd, "r");
    CHECK(p);
    char line[8192];
    int n = 0;
    while (fgets(line, sizeof line, p))
        n++;
    pclose(p);
    return n;
}

/* tshark is an outside tool: it runs without the sanitizer runtime that a
 * sanitizer build may preload for Tern's own programs. */
#define TSHARK "env -u LD_PRELOAD -u ASAN_OPTIONS -u UBSAN_OPTIONS tshark"

TEST(udp_capture_passes_tshark)
{
    if (system("command -v tshark >/dev/null 2>&1") != 0) {
        fprintf(stderr, "# tshark not installed: UDP wire check skipped\n");
        return;
    }
    tap t;
    memset(&t, 0, sizeof t);
    t.fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    CHECK(t.fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    CHECK(bind(t.fd, (struct sockaddr *)&a, sizeof a) == 0);
    CHECK(getsockname(t.fd, (struct sockaddr *)&a, &al) == 0);
    int big = 8 << 20;
    setsockopt(t.fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    t.port = ntohs(a.sin_port);

    net w;
    net_open(&w, 0, t.port);
    t.to = w.port2;
    CHECK_OK(tern_io_init(w.loop, &t.io, t.fd, tap_io, &t));
    CHECK_OK(tern_io_start(&t.io, TERN_IO_READ));
    /* Small and large bundles, and a 150 kB one that goes as fragments. */
    static const size_t sizes[] = {1, 200, 1400, 20000, 60000, 150000};
    enum { N = sizeof sizes / sizeof sizes[0] };
    uint8_t *buf = malloc(150000);
    for (size_t i = 0; i < N; i++) {
        fill(buf, sizes[i], i);
        send12(&w, buf, sizes[i], 0);
    }
    wait_queued(&w, N, 5000);
    bp_eid ep = eid("ipn:2.1");
    CHECK_EQ_U64(bp_endpoint_queued(w.n[2].a, &ep), N);
    size_t frags = (150000 + BP_UDP_MAX_PAYLOAD - 1) / BP_UDP_MAX_PAYLOAD;
    CHECK_EQ_U64(t.n, N - 1 + frags);
    tern_io_stop(&t.io);

    char good[512], bad[512], cmd[2048];
    snprintf(good, sizeof good, "%s/udp.pcap", tt_tmpdir());
    snprintf(bad, sizeof bad, "%s/udp-bad.pcap", tt_tmpdir());
    write_pcap(good, &t, 0);
    write_pcap(bad, &t, 1);
    /* Malformed frames, errors and checksum problems, as in test_wire.c. */
    static const char filter[] = "_ws.malformed || _ws.expert.severity >= 0x00800000 || "
                                 "_ws.expert.group == 0x01000000 || bpv7.crc_status == 0";
    snprintf(cmd, sizeof cmd,
             TSHARK " -r %s -Y 'udp.dstport == 4556 && bpv7' 2>/dev/null", good);
    int found = count_lines(cmd);
    snprintf(cmd, sizeof cmd, TSHARK " -r %s -Y 'bpv7.primary.frag_offset' 2>/dev/null",
             good);
    int fragments = count_lines(cmd);
    snprintf(cmd, sizeof cmd, TSHARK " -r %s -Y '%s' 2>/dev/null", good, filter);
    int problems = count_lines(cmd);
    snprintf(cmd, sizeof cmd, TSHARK " -r %s -Y '%s' 2>/dev/null", bad, filter);
    int caught = count_lines(cmd);
    CHECK_MSG(found == (int)t.n, "tshark found a bundle in %d of %zu datagrams", found,
              t.n);
    CHECK_MSG(fragments == (int)frags, "tshark saw %d fragments, want %zu", fragments,
              frags);
    CHECK_MSG(problems == 0, "tshark flagged %d of Tern's datagrams", problems);
    CHECK_MSG(caught == (int)t.n, "tshark flagged %d of the %zu corrupted datagrams",
              caught, t.n);
    fprintf(stderr,
            "# tshark: %zu UDP datagrams (%d bundles, %zu of them fragments of one) "
            "dissected as BPv7 with no malformed frame or bad CRC; all %zu corrupted "
            "copies flagged\n",
            t.n, N, frags, t.n);
    for (size_t i = 0; i < t.n; i++)
        free(t.dg[i]);
    free(buf);
    net_close(&w);
    close(t.fd);
}
