/* tern_sim: the link model (delay, rate, loss, outages), determinism,
 * configuration errors, and bundles over LTP between simulated nodes. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tern_sim.h"
#include "tern/crc.h"
#include "tern_test.h"

#define MS TERN_NS_PER_MS

/* An LTP-only node (no bpadmin): spans to each peer, segments of seg bytes. */
static void ltp_rc(char *out, size_t cap, uint64_t node, const uint64_t *peers, int np,
                   unsigned seg)
{
    int k = snprintf(out, cap,
                     "## begin ionadmin\n1 %" PRIu64 "\n## end ionadmin\n"
                     "## begin ltpadmin\n1 64\n",
                     node);
    for (int i = 0; i < np; i++)
        k += snprintf(out + k, cap - (size_t)k,
                      "a span %" PRIu64 " 64 64 %u 1 0 'udplso 127.0.0.1:%u'\n", peers[i],
                      seg, 1113 + (unsigned)i);
    snprintf(out + k, cap - (size_t)k, "## end ltpadmin\n");
}

static tern_sim *two_ltp_nodes(uint64_t seed, unsigned seg)
{
    tern_sim *s;
    tern_sim_cfg cfg = {.seed = seed, .heap_bytes = 1 << 20};
    CHECK_OK(tern_sim_new(&cfg, &s));
    char rc[1024], err[512];
    uint64_t p2 = 2, p1 = 1, num;
    ltp_rc(rc, sizeof rc, 1, &p2, 1, seg);
    CHECK_OK(tern_sim_node_add(s, NULL, rc, err, sizeof err, &num));
    CHECK_EQ_U64(num, 1);
    ltp_rc(rc, sizeof rc, 2, &p1, 1, seg);
    CHECK_OK(tern_sim_node_add(s, NULL, rc, err, sizeof err, &num));
    CHECK_EQ_U64(num, 2);
    return s;
}

/* Records when red parts arrive and checks their bytes. */
struct rx {
    tern_sim *s;
    int n, done, cancelled, bad;
    uint64_t first_ns, last_ns, done_ns;
    uint64_t bytes;
};

static void fill(uint8_t *b, size_t len, uint32_t idx)
{
    uint64_t x = idx * UINT64_C(0x9E3779B97F4A7C15) + 1;
    for (size_t i = 0; i < len; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        b[i] = (uint8_t)x;
    }
    if (len >= 4)
        memcpy(b, &idx, 4);
}

static int rx_hook(void *ctx, uint64_t node, const ltp_notice *no)
{
    struct rx *r = ctx;
    uint64_t now = tern_loop_now(tern_sim_loop(r->s));
    if (no->kind == LTP_RED_PART) {
        uint32_t idx = 0;
        if (no->len >= 4)
            memcpy(&idx, no->data, 4);
        uint8_t *want = malloc(no->len);
        fill(want, no->len, idx);
        if (memcmp(want, no->data, no->len) != 0)
            r->bad++;
        free(want);
        if (!r->n++)
            r->first_ns = now;
        r->last_ns = now;
        r->bytes += no->len;
    } else if (no->kind == LTP_EXPORT_DONE) {
        r->done++;
        r->done_ns = now;
    } else if (no->kind == LTP_EXPORT_CANCELLED) {
        r->cancelled++;
    }
    return 0;
}

static void send_block(tern_sim *s, uint64_t from, uint64_t to, size_t len, uint32_t idx)
{
    uint8_t *b = malloc(len);
    CHECK(b);
    fill(b, len, idx);
    CHECK_OK(ltp_block_send(tern_sim_node_engine(s, from), to, 1, b, len, 0, NULL, NULL));
    free(b);
}

TEST(sim_link_delay)
{
    tern_sim *s = two_ltp_nodes(1, 1400);
    struct rx r = {.s = s};
    CHECK_OK(tern_sim_node_ltp_hook(s, 1, rx_hook, &r));
    CHECK_OK(tern_sim_node_ltp_hook(s, 2, rx_hook, &r));
    CHECK_OK(tern_sim_link_add(s, 1, 2, 1500, 0, 0.0, 0));
    send_block(s, 1, 2, 1000, 0);
    CHECK_EQ_INT(tern_sim_run(s, 60000, 0), TERN_SIM_STOP_TIME);
    CHECK_EQ_INT(r.n, 1);
    CHECK_EQ_INT(r.bad, 0);
    CHECK_EQ_U64(r.first_ns, 1500 * MS); /* one way */
    CHECK_EQ_U64(r.done_ns, 3000 * MS);  /* the report comes back */
    CHECK_EQ_U64(tern_sim_now_ms(s), 60000);
    CHECK_EQ_U64(tern_sim_dtn_ms(s), TERN_SIM_DEFAULT_START_MS + 60000);
    tern_sim_link_stats ls;
    CHECK_OK(tern_sim_link_stats_get(s, 1, 2, &ls));
    CHECK_EQ_U64(ls.lost, 0);
    CHECK_EQ_U64(ls.queued, 0);
    CHECK_EQ_U64(ls.delivered, ls.sent);
    tern_sim_free(s);
}

TEST(sim_link_rate_serializes)
{
    /* 1 MB at 1 MB/s: the last segment leaves after about a second, and a
     * segment's bytes count their headers too. */
    tern_sim *s = two_ltp_nodes(1, 1400);
    struct rx r = {.s = s};
    CHECK_OK(tern_sim_node_ltp_hook(s, 1, rx_hook, &r));
    CHECK_OK(tern_sim_node_ltp_hook(s, 2, rx_hook, &r));
    CHECK_OK(tern_sim_link_add(s, 1, 2, 10, 1000000, 0.0, 0));
    send_block(s, 1, 2, 1000000, 3);
    CHECK_EQ_INT(tern_sim_run(s, 60000, 1), TERN_SIM_STOP_DELIVERIES);
    CHECK_EQ_INT(r.bad, 0);
    tern_sim_link_stats ls;
    CHECK_OK(tern_sim_link_stats_get(s, 1, 2, &ls));
    uint64_t want = ls.bytes_sent * 1000000000ull / 1000000 + 10 * MS;
    CHECK_MSG(r.first_ns >= want - MS && r.first_ns <= want + MS,
              "arrived at %" PRIu64 " ns, expected %" PRIu64, r.first_ns, want);
    CHECK(r.first_ns > 1000 * MS && r.first_ns < 1100 * MS);
    CHECK(ls.max_queued > 600); /* the transmitter queue held most of the block */
    tern_sim_free(s);
}

TEST(sim_link_loss_rate_and_recovery)
{
    tern_sim *s = two_ltp_nodes(tt_seed(), 1000);
    struct rx r = {.s = s};
    CHECK_OK(tern_sim_node_ltp_hook(s, 1, rx_hook, &r));
    CHECK_OK(tern_sim_node_ltp_hook(s, 2, rx_hook, &r));
    CHECK_OK(tern_sim_link_add(s, 1, 2, 20, 0, 0.2, 0));
    for (uint32_t i = 0; i < 40; i++)
        send_block(s, 1, 2, 20000 + i * 100, i);
    tern_sim_run(s, 3600 * 1000, 40);
    CHECK_EQ_INT(r.n, 40);
    CHECK_EQ_INT(r.bad, 0);
    tern_sim_link_stats a, b;
    CHECK_OK(tern_sim_link_stats_get(s, 1, 2, &a));
    CHECK_OK(tern_sim_link_stats_get(s, 2, 1, &b));
    uint64_t sent = a.sent + b.sent, lost = a.lost + b.lost;
    double frac = (double)lost / (double)sent;
    fprintf(stderr, "# loss 0.2: %" PRIu64 " of %" PRIu64 " segments lost (%.3f)\n", lost,
            sent, frac);
    CHECK(sent > 900);
    CHECK_MSG(frac > 0.16 && frac < 0.24, "lost fraction %.3f", frac);
    CHECK_EQ_U64(a.delivered + a.lost, a.sent);
    tern_sim_free(s);
}

TEST(sim_outage_holds_and_drops)
{
    tern_sim *s = two_ltp_nodes(5, 1400);
    struct rx r = {.s = s};
    CHECK_OK(tern_sim_node_ltp_hook(s, 1, rx_hook, &r));
    CHECK_OK(tern_sim_node_ltp_hook(s, 2, rx_hook, &r));
    CHECK_OK(tern_sim_link_add(s, 1, 2, 100, 0, 0.0, 0));
    CHECK_OK(tern_sim_outage_add(s, 1, 2, 1000, 600000, 0));
    CHECK_RC(tern_sim_outage_add(s, 1, 2, 5, 5, 0), -EINVAL);
    CHECK_EQ_INT(tern_sim_run(s, 2000, 0), TERN_SIM_STOP_TIME);
    tern_sim_link_stats ls;
    CHECK_OK(tern_sim_link_stats_get(s, 1, 2, &ls));
    CHECK_EQ_U64(ls.down, 1);
    send_block(s, 1, 2, 50000, 9);
    /* The engine holds the block while the span is down. */
    CHECK_EQ_INT(tern_sim_run(s, 599000, 0), TERN_SIM_STOP_TIME);
    CHECK_EQ_INT(r.n, 0);
    CHECK_OK(tern_sim_link_stats_get(s, 1, 2, &ls));
    CHECK_EQ_U64(ls.sent, 0);
    CHECK_EQ_INT(tern_sim_run(s, 700000, 1), TERN_SIM_STOP_DELIVERIES);
    CHECK_EQ_INT(r.n, 1);
    CHECK(r.first_ns >= 600100 * MS && r.first_ns < 601000 * MS);
    CHECK_OK(tern_sim_link_stats_get(s, 1, 2, &ls));
    CHECK_EQ_U64(ls.down, 0);
    CHECK_EQ_U64(ls.dropped, 0);
    tern_sim_free(s);
}

TEST(sim_silent_outage_drops_and_ltp_recovers)
{
    tern_sim *s = two_ltp_nodes(5, 1400);
    struct rx r = {.s = s};
    CHECK_OK(tern_sim_node_ltp_hook(s, 1, rx_hook, &r));
    CHECK_OK(tern_sim_node_ltp_hook(s, 2, rx_hook, &r));
    CHECK_OK(tern_sim_link_add(s, 1, 2, 100, 1000000, 0.0, 0));
    CHECK_OK(tern_sim_outage_add(s, 2, 1, 300, 4000, TERN_SIM_SILENT));
    send_block(s, 1, 2, 500000, 4);
    CHECK_EQ_INT(tern_sim_run(s, 3600000, 1), TERN_SIM_STOP_DELIVERIES);
    CHECK_EQ_INT(r.bad, 0);
    CHECK_MSG(r.first_ns > 4000 * MS, "delivered at %" PRIu64 " ms", r.first_ns / MS);
    tern_sim_link_stats ls;
    CHECK_OK(tern_sim_link_stats_get(s, 1, 2, &ls));
    CHECK(ls.dropped > 0);
    CHECK_EQ_U64(ls.lost, 0);
    ltp_stats st;
    ltp_engine_stats(tern_sim_node_engine(s, 1), &st);
    CHECK(st.cp_timeouts > 0); /* the sender was not told: its timers ran out */
    tern_sim_run(s, 3700000, 0);
    CHECK_EQ_INT(r.done, 1);
    tern_sim_free(s);
}

/* A lossy, delayed, interrupted run; returns a digest of every counter. */
static uint64_t lossy_run(uint64_t seed, tern_sim_node_stats *st1, uint64_t *cancelled)
{
    tern_sim *s = two_ltp_nodes(seed, 1400);
    CHECK_OK(tern_sim_link_add(s, 1, 2, 250, 2000000, 0.15, 0));
    CHECK_OK(tern_sim_outage_add(s, 1, 2, 2000, 9000, 0));
    CHECK_OK(tern_sim_outage_add(s, 1, 2, 12000, 15000, TERN_SIM_SILENT));
    for (uint32_t i = 0; i < 30; i++)
        send_block(s, 1, 2, 1000 + i * 3000, i);
    tern_sim_run(s, 3600 * 1000, 0);
    uint64_t v[128], h = 0;
    for (uint64_t node = 1; node <= 2; node++) {
        int k = tern_sim_node_counters(s, node, v, 128);
        CHECK(k > 40 && k <= 128);
        h = tern_crc32c((uint32_t)h, v, (size_t)k * 8) + (h << 32);
        k = tern_sim_link_counters(s, node, 3 - node, v, 128);
        CHECK_EQ_INT(k, 9);
        h = tern_crc32c((uint32_t)h, v, (size_t)k * 8) + (h << 32);
    }
    CHECK_OK(tern_sim_node_stats_get(s, 2, st1));
    tern_sim_node_stats snd;
    CHECK_OK(tern_sim_node_stats_get(s, 1, &snd));
    *cancelled = snd.ltp.exports_cancelled;
    tern_sim_free(s);
    return h;
}

TEST(sim_same_seed_same_run)
{
    tern_sim_node_stats a, b, c;
    uint64_t seed = tt_seed();
    uint64_t ca, cb, cc;
    uint64_t h1 = lossy_run(seed, &a, &ca), h2 = lossy_run(seed, &b, &cb),
             h3 = lossy_run(seed + 1, &c, &cc);
    CHECK_EQ_U64(h1, h2);
    CHECK_EQ_MEM(&a, &b, sizeof a);
    /* LTP alone gives up on a block after its retries (no BP to send it
     * again): each of the 30 is delivered or its export was cancelled (or
     * both: the receiver had it, and the claims were lost). */
    CHECK(a.red_parts <= 30 && a.red_parts + ca >= 30);
    CHECK(c.red_parts <= 30 && c.red_parts + cc >= 30);
    CHECK(a.red_parts >= 25 && c.red_parts >= 25);
    CHECK_MSG(h1 != h3, "seeds %" PRIu64 " and %" PRIu64 " gave identical runs", seed,
              seed + 1);
}

TEST(sim_two_sims_do_not_interfere)
{
    tern_sim *s1 = two_ltp_nodes(3, 1400), *s2 = two_ltp_nodes(3, 1400);
    CHECK_OK(tern_sim_link_add(s1, 1, 2, 1000, 0, 0.0, 0));
    CHECK_OK(tern_sim_link_add(s2, 1, 2, 10, 0, 0.0, 0));
    send_block(s1, 1, 2, 5000, 1);
    send_block(s2, 1, 2, 5000, 1);
    CHECK_EQ_INT(tern_sim_run(s2, 100000, 1), TERN_SIM_STOP_DELIVERIES);
    CHECK_EQ_U64(tern_sim_now_ms(s2), 10);
    CHECK_EQ_U64(tern_sim_now_ms(s1), 0);
    CHECK_EQ_U64(tern_sim_deliveries(s1), 0);
    CHECK_EQ_INT(tern_sim_run(s1, 100000, 1), TERN_SIM_STOP_DELIVERIES);
    CHECK_EQ_U64(tern_sim_now_ms(s1), 1000);
    tern_sim_free(s1);
    tern_sim_free(s2);
}

TEST(sim_config_errors_name_the_line)
{
    tern_sim *s;
    CHECK_OK(tern_sim_new(NULL, &s));
    char err[512];
    uint64_t num;
    CHECK_RC(tern_sim_node_add(s, "a.rc",
                               "## begin ionadmin\n1 7\n## end ionadmin\n"
                               "## begin ltpadmin\n1 10\na span 8 x 1 1400 1 0 'udplso "
                               "h:1'\n## end ltpadmin\n",
                               err, sizeof err, &num),
             TERN_ESYNTAX);
    CHECK_MSG(strstr(err, "a.rc:6:") != NULL, "err: %s", err);
    CHECK_RC(tern_sim_node_add(s, NULL, "1 7\n", err, sizeof err, &num), TERN_ESYNTAX);
    CHECK_MSG(strstr(err, "node1.rc:1:") && strstr(err, "section"), "err: %s", err);
    CHECK_RC(tern_sim_node_add(s, "b.rc", "## begin ltpadmin\n1 10\n## end ltpadmin\n",
                               err, sizeof err, &num),
             TERN_ESYNTAX);
    CHECK_MSG(strstr(err, "b.rc") && strstr(err, "node number"), "err: %s", err);
    CHECK_RC(tern_sim_node_add(s, "c.rc", "## begin frobadmin\nx\n## end frobadmin\n",
                               err, sizeof err, &num),
             TERN_ESYNTAX);
    CHECK_MSG(strstr(err, "c.rc:2:") && strstr(err, "frobadmin"), "err: %s", err);
    CHECK_OK(tern_sim_node_add(s, NULL, "## begin ionadmin\n1 7\n## end ionadmin\n", err,
                               sizeof err, &num));
    CHECK_RC(tern_sim_node_add(s, NULL, "## begin ionadmin\n1 7\n## end ionadmin\n", err,
                               sizeof err, &num),
             TERN_EEXIST);
    CHECK_MSG(strstr(err, "node 7 exists"), "err: %s", err);
    CHECK_EQ_INT(tern_sim_node_count(s), 1);
    CHECK_EQ_U64(tern_sim_node_at(s, 0), 7);
    CHECK(tern_sim_node_engine(s, 7) == NULL);
    CHECK_RC(tern_sim_link_add(s, 7, 8, 1, 0, 0, 0), TERN_ENOTFOUND);
    tern_sim_free(s);
}

TEST(sim_range_sets_light_time)
{
    /* Five minutes of light time from the contact plan's range. */
    tern_sim *s;
    tern_sim_cfg cfg = {.seed = 1, .heap_bytes = 1 << 20};
    CHECK_OK(tern_sim_new(&cfg, &s));
    char rc[2048], err[512];
    for (uint64_t node = 1; node <= 2; node++) {
        uint64_t peer = 3 - node;
        ltp_rc(rc, sizeof rc, node, &peer, 1, 1400);
        char full[2400];
        snprintf(full, sizeof full,
                 "%s## begin ionadmin\na range +0 +86400 1 2 300\n## end ionadmin\n", rc);
        CHECK_OK(tern_sim_node_add(s, NULL, full, err, sizeof err, NULL));
    }
    struct rx r = {.s = s};
    CHECK_OK(tern_sim_node_ltp_hook(s, 1, rx_hook, &r));
    CHECK_OK(tern_sim_node_ltp_hook(s, 2, rx_hook, &r));
    CHECK_OK(tern_sim_link_add(s, 1, 2, 300000, 0, 0.1, 0));
    for (uint32_t i = 0; i < 5; i++)
        send_block(s, 1, 2, 30000, i);
    CHECK_EQ_INT(tern_sim_run(s, 24 * 3600 * 1000, 5), TERN_SIM_STOP_DELIVERIES);
    CHECK(r.first_ns >= 300000 * MS);
    tern_sim_run(s, 24 * 3600 * 1000, 0);
    CHECK_EQ_INT(r.done, 5);
    ltp_stats st;
    ltp_engine_stats(tern_sim_node_engine(s, 1), &st);
    fprintf(stderr,
            "# 5 min light time, 10%% loss: 5 blocks in %" PRIu64 " s virtual, %" PRIu64
            " checkpoint timeouts\n",
            (uint64_t)(r.last_ns / TERN_NS_PER_S), st.cp_timeouts);
    tern_sim_free(s);
}

/* ------------------------------------------------------------ bundles over LTP */

static void bp_rc(char *out, size_t cap, uint64_t node, const uint64_t *peers, int np,
                  unsigned seg)
{
    int k = snprintf(out, cap,
                     "## begin ionadmin\n1 %" PRIu64 "\n## end ionadmin\n"
                     "## begin ltpadmin\n1 64\n",
                     node);
    for (int i = 0; i < np; i++)
        k += snprintf(out + k, cap - (size_t)k,
                      "a span %" PRIu64 " 64 64 %u 1 0 'udplso 127.0.0.1:%u'\n", peers[i],
                      seg, 1113 + (unsigned)i);
    k += snprintf(out + k, cap - (size_t)k,
                  "## end ltpadmin\n## begin bpadmin\n1\n"
                  "a scheme ipn 'ipnfw' 'ipnadminep'\n"
                  "a endpoint ipn:%" PRIu64 ".1 q\n"
                  "a protocol ltp 1400 100\n"
                  "a induct ltp %" PRIu64 " ltpcli\n",
                  node, node);
    for (int i = 0; i < np; i++)
        k += snprintf(out + k, cap - (size_t)k, "a outduct ltp %" PRIu64 " ltpclo\n",
                      peers[i]);
    k += snprintf(out + k, cap - (size_t)k, "s\n## end bpadmin\n## begin ipnadmin\n");
    for (int i = 0; i < np; i++)
        k += snprintf(out + k, cap - (size_t)k, "a plan %" PRIu64 " ltp/%" PRIu64 "\n",
                      peers[i], peers[i]);
    snprintf(out + k, cap - (size_t)k, "## end ipnadmin\n");
}

TEST(sim_bundles_over_ltp_two_nodes)
{
    tern_sim *s;
    tern_sim_cfg cfg = {.seed = tt_seed(), .heap_bytes = 16 << 20};
    CHECK_OK(tern_sim_new(&cfg, &s));
    char rc[4096], err[512];
    uint64_t p2 = 2, p1 = 1;
    bp_rc(rc, sizeof rc, 1, &p2, 1, 1400);
    CHECK_MSG(tern_sim_node_add(s, NULL, rc, err, sizeof err, NULL) == 0, "%s", err);
    bp_rc(rc, sizeof rc, 2, &p1, 1, 1400);
    CHECK_MSG(tern_sim_node_add(s, NULL, rc, err, sizeof err, NULL) == 0, "%s", err);
    CHECK(tern_sim_node_agent(s, 1) && tern_sim_node_agent(s, 2));
    CHECK_OK(tern_sim_link_add(s, 1, 2, 50, 0, 0.1, 0));
    enum { N = 20 };
    uint8_t *buf = malloc(200000);
    CHECK(buf);
    for (uint32_t i = 0; i < N; i++) {
        size_t len = 1 + i * 7919;
        fill(buf, len, i);
        CHECK_OK(tern_sim_send(s, 1, "ipn:1.1", "ipn:2.1", buf, len, 0, BP_PRIO_STANDARD,
                               0, 0, 0, NULL, NULL, NULL));
    }
    CHECK_EQ_INT(tern_sim_run(s, 3600 * 1000, N), TERN_SIM_STOP_DELIVERIES);
    int seen[N] = {0};
    for (int i = 0; i < N; i++) {
        char src[64];
        size_t len;
        uint64_t ct, seq, fl;
        CHECK_RC(
            tern_sim_recv(s, 2, "ipn:2.1", src, sizeof src, &ct, &seq, &fl, buf, 4, &len),
            len > 4 ? TERN_ENOSPACE : 0);
        if (len > 4)
            CHECK_OK(tern_sim_recv(s, 2, "ipn:2.1", src, sizeof src, &ct, &seq, &fl, buf,
                                   200000, &len));
        CHECK_EQ_STR(src, "ipn:1.1");
        uint32_t idx = 0;
        memcpy(&idx, buf, len < 4 ? len : 4);
        if (len < 4)
            idx = 0;
        CHECK(idx < N && len == 1 + idx * 7919);
        uint8_t *want = malloc(len);
        fill(want, len, idx);
        CHECK_EQ_MEM(buf, want, len);
        free(want);
        seen[idx]++;
    }
    for (int i = 0; i < N; i++)
        CHECK_EQ_INT(seen[i], 1);
    size_t len;
    CHECK_RC(tern_sim_recv(s, 2, "ipn:2.1", NULL, 0, NULL, NULL, NULL, buf, 200000, &len),
             -EAGAIN);
    tern_sim_node_stats st;
    CHECK_OK(tern_sim_node_stats_get(s, 2, &st));
    CHECK_EQ_U64(st.bp.received, N);
    CHECK_EQ_U64(st.deliveries, N);
    CHECK_OK(tern_sim_node_stats_get(s, 1, &st));
    CHECK_EQ_U64(st.bp.created, N);
    tern_sim_run(s, 7200 * 1000, 0);
    CHECK_OK(tern_sim_node_stats_get(s, 1, &st));
    CHECK_EQ_U64(st.bp.forwarded, N);
    CHECK_EQ_U64(st.bp.stored, 0);
    free(buf);
    tern_sim_free(s);
}

/* A link that follows the contact plan: node 1's plan has contacts 1->2 and
 * 2->1 from 10 s to 20 s, range 3 s. A block sent at 0 waits (LTP is told
 * the link is down) and goes when the contact begins: it arrives at 13 s
 * (the range's light time, not the link's 1 ms). Nothing is handed to the
 * link outside the contact, until the test hands it a segment itself at
 * 25 s: counted outside and dropped. A contact added at run time opens the
 * link at once. */
TEST(sim_link_follows_contacts)
{
    tern_sim *s;
    tern_sim_cfg cfg = {.seed = 5, .heap_bytes = 1 << 20};
    CHECK_OK(tern_sim_new(&cfg, &s));
    char rc[1024], err[512];
    for (uint64_t n = 1; n <= 2; n++) {
        snprintf(rc, sizeof rc,
                 "## begin ionadmin\n1 %" PRIu64 "\n"
                 "a contact +10 +20 1 2 100000\na contact +10 +20 2 1 100000\n"
                 "a range +0 +1000 1 2 3\n## end ionadmin\n"
                 "## begin ltpadmin\n1 64\n"
                 "a span %" PRIu64 " 64 64 1400 1 0 'udplso 127.0.0.1:1113'\n"
                 "## end ltpadmin\n",
                 n, 3 - n);
        CHECK_MSG(tern_sim_node_add(s, NULL, rc, err, sizeof err, NULL) == 0, "%s", err);
    }
    struct rx r = {.s = s};
    CHECK_OK(tern_sim_node_ltp_hook(s, 1, rx_hook, &r));
    CHECK_OK(tern_sim_node_ltp_hook(s, 2, rx_hook, &r));
    CHECK_OK(tern_sim_link_add(s, 1, 2, 1, 0, 0.0, TERN_SIM_CONTACTS));
    tern_sim_contact_stats cs;
    CHECK_OK(tern_sim_link_contact_stats(s, 1, 2, &cs));
    CHECK_EQ_U64(cs.follows, 1);
    CHECK_EQ_U64(cs.open, 0);
    send_block(s, 1, 2, 3000, 9);
    CHECK_EQ_INT(tern_sim_run(s, 9999, 0), TERN_SIM_STOP_TIME);
    CHECK_EQ_INT(r.n, 0);
    CHECK_EQ_INT(tern_sim_run(s, 30000, 0), TERN_SIM_STOP_TIME);
    CHECK_EQ_INT(r.n, 1);
    CHECK_EQ_INT(r.bad, 0);
    CHECK_EQ_U64(r.first_ns, 13000 * MS);
    CHECK_EQ_INT(r.done, 1); /* the report came back inside 2->1's contact */
    for (int d = 0; d < 2; d++) {
        CHECK_OK(tern_sim_link_contact_stats(s, d ? 2 : 1, d ? 1 : 2, &cs));
        CHECK_EQ_U64(cs.outside, 0);
        CHECK_EQ_U64(cs.windows, 1);
        CHECK_EQ_U64(cs.open, 0);
        CHECK(cs.bytes_in_contact > 0);
    }
    /* an engine that sends although told the link is down: its segments are
     * counted outside the contact and dropped */
    CHECK_EQ_INT(tern_sim_run(s, 25000, 0), TERN_SIM_STOP_TIME);
    CHECK_OK(ltp_span_link(tern_sim_node_engine(s, 1), 2, 1));
    send_block(s, 1, 2, 3000, 10);
    CHECK_EQ_INT(tern_sim_run(s, 26000, 0), TERN_SIM_STOP_TIME);
    CHECK_OK(tern_sim_link_contact_stats(s, 1, 2, &cs));
    CHECK(cs.outside >= 3);
    CHECK_EQ_INT(r.n, 1);
    /* a contact from now on, added at run time */
    char out[256];
    CHECK_OK(tern_sim_node_ionadmin(s, 1, "a contact +0 +100 1 2 1000", out, sizeof out));
    CHECK_OK(tern_sim_link_contact_stats(s, 1, 2, &cs));
    CHECK_EQ_U64(cs.open, 1);
    CHECK_EQ_U64(cs.windows, 2);
    CHECK_RC(tern_sim_node_ionadmin(s, 1, "1 7", out, sizeof out), -ENOTSUP);
    CHECK_MSG(strstr(out, "not taken at run time") != NULL, "%s", out);
    CHECK_RC(tern_sim_node_ionadmin(s, 1, "a contact +0 1 2", out, sizeof out),
             TERN_ESYNTAX);
    tern_sim_free(s);
}

/* Lines of the file at path that contain needle. */
static int log_count(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char line[2048];
    int n = 0;
    while (fgets(line, sizeof line, f))
        n += strstr(line, needle) != NULL;
    fclose(f);
    return n;
}

/* Issue 18 item 9: node 2's store fills (no one reads ipn:2.1) while node 1
 * sends 60 bundles of 40 kB; for ten minutes, seven times node 1's whole
 * repair budget, node 2 has no room. The old sender ran out its checkpoint
 * retransmissions on every block (one "cancelled: RLEXC" line each) and
 * sent everything again. Now node 2 leaves the blocks unclaimed and says
 * so, node 1 waits without cancelling a thing and says so, once each; when
 * an application reads node 2's bundles, the rest arrive, each once. */
TEST(sim_full_store_blocks_wait_unclaimed)
{
    tern_sim *s;
    const char *dir = tt_tmpdir();
    tern_sim_cfg cfg = {
        .seed = 3, .heap_bytes = 2 << 20, .log_dir = dir, .log_level = TERN_LOG_INFO};
    CHECK_OK(tern_sim_new(&cfg, &s));
    char rc[4096], err[512];
    uint64_t p2 = 2, p1 = 1;
    bp_rc(rc, sizeof rc, 1, &p2, 1, 1400);
    CHECK_MSG(tern_sim_node_add(s, NULL, rc, err, sizeof err, NULL) == 0, "%s", err);
    bp_rc(rc, sizeof rc, 2, &p1, 1, 1400);
    CHECK_MSG(tern_sim_node_add(s, NULL, rc, err, sizeof err, NULL) == 0, "%s", err);
    CHECK_OK(tern_sim_link_add(s, 1, 2, 5, 0, 0, 0));
    enum { N = 60, SIZE = 40000 };
    static uint8_t buf[SIZE];
    for (uint32_t i = 0; i < N;) {
        fill(buf, SIZE, i);
        int r = tern_sim_send(s, 1, "ipn:1.1", "ipn:2.1", buf, SIZE, 0, BP_PRIO_STANDARD,
                              0, 0, 0, NULL, NULL, NULL);
        if (r == 0) {
            i++;
            continue;
        }
        CHECK_MSG(r == TERN_EFULL && tern_sim_now_ms(s) < 600000, "send %u: %s", i,
                  tern_strerror(r));
        tern_sim_run(s, tern_sim_now_ms(s) + 100, 0);
    }
    tern_sim_run(s, tern_sim_now_ms(s) + 600000, 0);
    tern_sim_node_stats st1, st2;
    CHECK_OK(tern_sim_node_stats_get(s, 1, &st1));
    CHECK_OK(tern_sim_node_stats_get(s, 2, &st2));
    fprintf(stderr,
            "# full store: node 2 took %" PRIu64 " of %d bundles; node 1 has %" PRIu64
            " exports waiting, %" PRIu64 " cancelled\n",
            st2.bp.received, N, st1.ltp.exports_waiting, st1.ltp.exports_cancelled);
    CHECK(st2.bp.received < N);
    CHECK(st1.ltp.exports_waiting > 0);
    CHECK_EQ_U64(st1.ltp.exports_cancelled, 0);
    /* an application reads: room comes back */
    int seen[N] = {0}, got = 0;
    uint64_t until = tern_sim_now_ms(s) + 600000;
    while (got < N && tern_sim_now_ms(s) < until) {
        size_t len;
        int r =
            tern_sim_recv(s, 2, "ipn:2.1", NULL, 0, NULL, NULL, NULL, buf, SIZE, &len);
        if (r == -EAGAIN) {
            tern_sim_run(s, tern_sim_now_ms(s) + 100, 0);
            continue;
        }
        CHECK_OK(r);
        uint32_t idx;
        memcpy(&idx, buf, 4);
        CHECK(idx < N && len == SIZE);
        seen[idx]++;
        got++;
    }
    CHECK_EQ_INT(got, N);
    for (int i = 0; i < N; i++)
        CHECK_EQ_INT(seen[i], 1);
    tern_sim_run(s, tern_sim_now_ms(s) + 60000, 0);
    CHECK_OK(tern_sim_node_stats_get(s, 1, &st1));
    CHECK_EQ_U64(st1.ltp.exports_cancelled, 0);
    CHECK_EQ_U64(st1.ltp.exports_waiting, 0);
    CHECK_EQ_U64(st1.ltp.export_sessions, 0);
    char p[600];
    snprintf(p, sizeof p, "%s/node1.log", dir);
    CHECK_EQ_INT(log_count(p, "cancelled"), 0);
    CHECK_EQ_INT(log_count(p, "engine 2 has no room: blocks wait"), 1);
    CHECK_EQ_INT(log_count(p, "engine 2 has room again"), 1);
    snprintf(p, sizeof p, "%s/node2.log", dir);
    CHECK_EQ_INT(log_count(p, "no room in the store: blocks from engine 1 wait"), 1);
    CHECK_EQ_INT(log_count(p, "room in the store again"), 1);
    tern_sim_free(s);
}
