/* Two LTP engines joined by a simulated link on the virtual clock: loss,
 * duplication, reordering, delays from milliseconds to 20 minutes, and
 * outages. Every block must be delivered intact or cancelled for a
 * retransmission limit, within the repair budget plus the time the link
 * was down, and no session may be left behind. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ltp.h"
#include "tern/clock.h"
#include "tern/crc.h"
#include "tern/log.h"
#include "tern/sdnv.h"
#include "tern_test.h"

#define MAXB 64

struct pkt {
    tern_timer t;
    struct net *net;
    int to, departed, lost;
    size_t len;
    uint8_t data[];
};

struct side {
    struct net *net;
    int idx;
};

struct block {
    size_t red, green;
    uint64_t sent_at, ended_at;
    int done, cancelled, delivered, green_segs;
    uint8_t reason;
    /* receiver holding the red part (LTP_HOLD) until released_at */
    tern_timer hold;
    struct net *net;
    uint64_t session, released_at;
    /* receiver without room for it (LTP_LATER) from later_since on; took it
     * at taken_at */
    uint64_t later_since, taken_at;
    int retry_init;
};

struct net {
    tern_loop *loop;
    tern_clock *clk;
    ltp_engine *eng[2];
    struct side side[2];
    uint64_t rng;
    double loss, dup, reorder;
    uint64_t delay_ns;
    int up;
    uint64_t down_since, downtime;
    uint64_t sent, dropped, inflight;
    struct block blocks[MAXB];
    int nblocks;
    tern_timer outage[16];
    uint64_t outage_at[16][2];
    int nout;
    int bad; /* a failure seen inside a callback */
    char why[256];
    uint64_t rate_bps;        /* serialization rate of the sender's link (0: none) */
    uint64_t next_free_ns[2]; /* when each side's transmitter is free again */
    int tx_notify;
    int crc_valid;     /* red parts whose arrival CRC was valid */
    uint64_t hold_ns;  /* receiver holds each red part this long (0: no hold) */
    uint64_t later_ns; /* receiver has no room for each red part this long */
    tern_timer late;   /* brings the receiver's link up (scenario.recv_late_ms) */
};

static uint64_t rnd(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static double frand(uint64_t *x)
{
    return (double)(rnd(x) >> 11) / 9007199254740992.0;
}

static void deliver(tern_timer *t, void *arg)
{
    struct pkt *p = arg;
    struct net *n = p->net;
    if (!p->departed) {
        /* Leaving the transmitter: tell the engine, then fly (or get lost
         * on the way, as on a real link). */
        p->departed = 1;
        if (n->tx_notify && ltp_seg_needs_tx_notice(p->data, p->len))
            ltp_engine_sent(n->eng[1 - p->to], p->data, p->len);
        if (p->lost) {
            n->inflight--;
            n->dropped++;
            free(p);
            return;
        }
        tern_timer_start(&p->t, deliver, p, n->delay_ns, 0);
        return;
    }
    n->inflight--;
    if (n->up)
        ltp_engine_receive(n->eng[p->to], p->data, p->len);
    else
        n->dropped++;
    free(p);
}

static int sim_send(void *ctx, uint64_t peer, const uint8_t *seg, size_t len)
{
    struct side *sd = ctx;
    struct net *n = sd->net;
    n->sent++;
    int lost = !n->up || frand(&n->rng) < n->loss;
    if (lost && !n->rate_bps) {
        n->dropped++;
        return 0;
    }
    int copies = !lost && frand(&n->rng) < n->dup ? 2 : 1;
    for (int c = 0; c < copies; c++) {
        struct pkt *p = malloc(sizeof *p + len);
        CHECK(p);
        p->net = n;
        p->to = 1 - sd->idx;
        p->len = len;
        p->lost = lost;
        memcpy(p->data, seg, len);
        uint64_t d = n->delay_ns;
        if (frand(&n->rng) < n->reorder)
            d += rnd(&n->rng) % (n->delay_ns / 2 + 2000000);
        tern_timer_init(n->loop, &p->t);
        p->departed = 1;
        if (n->rate_bps) {
            /* Each side has a serializing transmitter: its segments leave
             * one after another; losses happen on the way. */
            uint64_t now = tern_loop_now(n->loop);
            uint64_t *free_at = &n->next_free_ns[sd->idx];
            uint64_t start = *free_at > now ? *free_at : now;
            *free_at = start + (uint64_t)len * 8 * 1000000000ull / n->rate_bps;
            p->departed = 0;
            d = *free_at - now;
        }
        tern_timer_start(&p->t, deliver, p, d, 0);
        n->inflight++;
    }
    return 0;
}

/* Block payloads: [block index u32][red length u32][bytes from the index]. */
static void fill(uint8_t *b, size_t len, int idx)
{
    uint64_t x = (uint64_t)idx * 2654435761u + 12345;
    for (size_t i = 0; i < len; i++)
        b[i] = (uint8_t)(rnd(&x) >> 24);
    if (len >= 8) {
        uint32_t i32 = (uint32_t)idx, l32 = (uint32_t)len;
        memcpy(b, &i32, 4);
        memcpy(b + 4, &l32, 4);
    }
}

static void release_fire(tern_timer *t, void *arg)
{
    (void)t;
    struct block *b = arg;
    struct net *n = b->net;
    b->released_at = tern_loop_now(n->loop);
    int rc = ltp_import_release(n->eng[1], 1, b->session);
    if (rc && rc != TERN_ENOTFOUND) {
        n->bad = 1;
        snprintf(n->why, sizeof n->why, "ltp_import_release: %d", rc);
    }
}

/* The receiver tries again to take a red part it had no room for. */
static void retry_fire(tern_timer *t, void *arg)
{
    struct block *b = arg;
    struct net *n = b->net;
    int rc = ltp_import_retry(n->eng[1], 1, b->session);
    if (rc == 1)
        tern_timer_start(t, retry_fire, b, 5000000ull, 0);
    else if (rc && rc != TERN_ENOTFOUND) {
        n->bad = 1;
        snprintf(n->why, sizeof n->why, "ltp_import_retry: %d", rc);
    }
}

static int sim_notice(void *ctx, const ltp_notice *no)
{
    struct side *sd = ctx;
    struct net *n = sd->net;
    uint64_t now = tern_loop_now(n->loop);
    if (no->kind == LTP_EXPORT_DONE || no->kind == LTP_EXPORT_CANCELLED) {
        struct block *b = no->user;
        if (!b || b->done || b->cancelled) {
            n->bad = 1;
            snprintf(n->why, sizeof n->why, "export notice %d for a finished block",
                     no->kind);
            return 0;
        }
        b->ended_at = now;
        if (no->kind == LTP_EXPORT_DONE && n->later_ns && !b->taken_at) {
            n->bad = 1;
            snprintf(n->why, sizeof n->why,
                     "block %d acknowledged before the receiver took it",
                     (int)(b - n->blocks));
        }
        if (no->kind == LTP_EXPORT_DONE)
            b->done = 1;
        else {
            b->cancelled = 1;
            b->reason = no->reason;
        }
    } else if (no->kind == LTP_RED_PART) {
        uint32_t idx;
        if (no->len < 8) {
            n->bad = 1;
            snprintf(n->why, sizeof n->why, "red part of %zu bytes", no->len);
            return 0;
        }
        memcpy(&idx, no->data, 4);
        if (idx >= (uint32_t)n->nblocks || n->blocks[idx].red != no->len) {
            n->bad = 1;
            snprintf(n->why, sizeof n->why, "red part of %zu bytes for block %u", no->len,
                     idx);
            return 0;
        }
        if (n->later_ns) {
            struct block *b = &n->blocks[idx];
            if (!b->later_since)
                b->later_since = now + 1;
            if (now + 1 - b->later_since < n->later_ns) {
                b->net = n;
                b->session = no->session;
                if (!b->retry_init) {
                    tern_timer_init(n->loop, &b->hold);
                    b->retry_init = 1;
                }
                if (!tern_timer_is_active(&b->hold))
                    tern_timer_start(&b->hold, retry_fire, b, 5000000ull, 0);
                return LTP_LATER;
            }
            b->taken_at = now + 1;
        }
        /* checked when taken (a block refused for room comes again) */
        uint8_t *want = malloc(no->len);
        fill(want, no->len, (int)idx);
        if (memcmp(want, no->data, no->len) != 0) {
            n->bad = 1;
            snprintf(n->why, sizeof n->why, "block %u delivered corrupted", idx);
        }
        free(want);
        n->blocks[idx].delivered++;
        if (n->hold_ns) {
            struct block *b = &n->blocks[idx];
            b->net = n;
            b->session = no->session;
            tern_timer_init(n->loop, &b->hold);
            tern_timer_start(&b->hold, release_fire, b, n->hold_ns, 0);
            return LTP_HOLD;
        }
        if (no->red_crc_valid) {
            n->crc_valid++;
            if (no->red_crc32c != tern_crc32c(0, no->data, no->len)) {
                n->bad = 1;
                snprintf(n->why, sizeof n->why, "block %u: CRC taken on arrival is wrong",
                         idx);
            }
        }
    } else if (no->kind == LTP_GREEN_SEG) {
        /* Green data carries no index of its own; count it. */
    }
    return 0;
}

static void outage_fire(tern_timer *t, void *arg)
{
    struct net *n = arg;
    int down = n->up;
    uint64_t now = tern_loop_now(n->loop);
    n->up = !down;
    if (down)
        n->down_since = now;
    else
        n->downtime += now - n->down_since;
    ltp_span_link(n->eng[0], 2, n->up);
    ltp_span_link(n->eng[1], 1, n->up);
}

struct scenario {
    double loss, dup, reorder;
    uint64_t delay_ms;
    int nblocks;
    size_t max_block;
    int outages;
    size_t max_seg;
    double seg_loss_rate;
    uint64_t rate_bps;
    int tx_notify;
    uint64_t hold_ms;
    uint64_t recv_late_ms; /* the receiver's link comes up this late */
    uint64_t later_ms;     /* the receiver has no room for a red part this long */
    const char *log_path;  /* both engines log here (NULL: stderr) */
};

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

static void late_up(tern_timer *t, void *arg)
{
    (void)t;
    struct net *n = arg;
    ltp_span_link(n->eng[1], 1, 1);
}

static void run(uint64_t seed, const struct scenario *sc, int *n_done, int *n_cancel,
                ltp_stats *out)
{
    struct net *n = calloc(1, sizeof *n);
    CHECK(n);
    n->rng = seed * 0x9E3779B97F4A7C15ull | 1;
    n->loss = sc->loss;
    n->dup = sc->dup;
    n->reorder = sc->reorder;
    n->delay_ns = sc->delay_ms * 1000000ull;
    n->up = 1;
    n->rate_bps = sc->rate_bps;
    n->tx_notify = sc->tx_notify;
    n->hold_ns = sc->hold_ms * 1000000ull;
    n->later_ns = sc->later_ms * 1000000ull;
    CHECK_OK(tern_clock_virtual_new(UINT64_C(849312000000), &n->clk));
    CHECK_OK(tern_loop_new(n->clk, &n->loop));
    tern_log *lg = NULL;
    if (sc->log_path) {
        CHECK_OK(tern_log_open(&lg, "t", sc->log_path, TERN_LOG_INFO, 0));
        tern_log_set_clock(lg, n->clk);
    }
    for (int i = 0; i < 2; i++) {
        n->side[i].net = n;
        n->side[i].idx = i;
        ltp_engine_cfg ec = {
            .engine_id = (uint64_t)i + 1, .max_retries = 5, .max_rounds = 8};
        ltp_host h = {.ctx = &n->side[i],
                      .send = sim_send,
                      .notice = sim_notice,
                      .tx_notify = sc->tx_notify};
        CHECK_OK(ltp_engine_new(n->loop, &ec, &h, lg, &n->eng[i]));
        ltp_span_cfg sc2 = {.peer = 2 - (uint64_t)i,
                            .max_export = 8,
                            .max_import = 64,
                            .max_seg = sc->max_seg,
                            .agg_size = 65536,
                            .agg_ms = 10,
                            .owlt_ms = (unsigned)sc->delay_ms,
                            .qtime_ms = 1,
                            .seg_loss_rate = sc->seg_loss_rate};
        CHECK_OK(ltp_span_add(n->eng[i], &sc2));
    }
    uint64_t budget_ms;
    CHECK_OK(ltp_span_budget_ms(n->eng[0], 2, &budget_ms));
    if (sc->recv_late_ms) {
        /* the sender's side is up, the receiver's not yet: its answers to
         * what arrives meanwhile cannot leave */
        ltp_span_link(n->eng[1], 1, 0);
        tern_timer_init(n->loop, &n->late);
        tern_timer_start(&n->late, late_up, n, sc->recv_late_ms * 1000000ull, 0);
        n->downtime += sc->recv_late_ms * 1000000ull;
    }
    /* Outages: down intervals spread over the first few budgets. */
    uint64_t t0 = 0;
    n->nout = sc->outages * 2;
    for (int i = 0; i < n->nout; i++) {
        uint64_t step = (rnd(&n->rng) % (2 * sc->delay_ms + 200) + 1) * 1000000ull;
        t0 += step * (i % 2 ? 1 : 3);
        tern_timer_init(n->loop, &n->outage[i]);
        tern_timer_start(&n->outage[i], outage_fire, n, t0, 0);
    }
    n->nblocks = sc->nblocks;
    uint8_t *buf = malloc(sc->max_block + 8);
    CHECK(buf);
    for (int i = 0; i < n->nblocks; i++) {
        struct block *b = &n->blocks[i];
        size_t len = 8 + rnd(&n->rng) % sc->max_block;
        b->red = len;
        b->green = (rnd(&n->rng) % 4 == 0) ? rnd(&n->rng) % 3000 : 0;
        fill(buf, len, i);
        uint8_t *all = malloc(len + b->green + 1);
        CHECK(all);
        memcpy(all, buf, len);
        memset(all + len, 0x47, b->green);
        b->sent_at = tern_loop_now(n->loop);
        CHECK_OK(ltp_block_send(n->eng[0], 2, 1, all, b->red, b->green, b, NULL));
        free(all);
    }
    free(buf);
    CHECK_OK(tern_loop_run(n->loop, TERN_RUN_DEFAULT));
    CHECK_MSG(!n->bad, "seed %llu: %s", (unsigned long long)seed, n->why);
    CHECK_EQ_U64(n->inflight, 0);
    uint64_t rto_ms = 2 * sc->delay_ms + 1 + 1;
    /* On a rate-limited link, time on the transmitter adds to the budget:
     * every block's bytes, some of them more than once. */
    uint64_t tx_ns = 0;
    if (sc->rate_bps) {
        uint64_t total = 0;
        for (int i = 0; i < n->nblocks; i++)
            total += n->blocks[i].red + n->blocks[i].green;
        tx_ns = 3 * total * 8 * 1000000000ull / sc->rate_bps;
    }
    for (int i = 0; i < n->nblocks; i++) {
        struct block *b = &n->blocks[i];
        CHECK_MSG(b->done || b->cancelled,
                  "seed %llu: block %d neither delivered nor cancelled",
                  (unsigned long long)seed, i);
        if (b->done)
            CHECK_MSG(b->delivered == 1,
                      "seed %llu: block %d acknowledged, delivered %d times",
                      (unsigned long long)seed, i, b->delivered);
        else
            CHECK_MSG(b->reason == LTP_RLEXC || b->reason == LTP_RXMTCYCEXC,
                      "seed %llu: block %d cancelled for reason %u",
                      (unsigned long long)seed, i, b->reason);
        /* a held red part is claimed only once the client released it */
        if (b->done && sc->hold_ms)
            CHECK_MSG(b->released_at && b->ended_at >= b->released_at,
                      "seed %llu: block %d acknowledged before its release",
                      (unsigned long long)seed, i);
        CHECK_MSG(b->delivered <= 1, "seed %llu: block %d delivered %d times",
                  (unsigned long long)seed, i, b->delivered);
        /* Queued behind the window, a block may wait for earlier ones. */
        uint64_t limit = (uint64_t)(i / 8 + 1) *
                             (budget_ms + rto_ms + sc->hold_ms + sc->later_ms) *
                             1000000ull +
                         n->downtime + tx_ns;
        CHECK_MSG(b->ended_at - b->sent_at <= limit,
                  "seed %llu: block %d took %llu ms, budget %llu ms + %llu ms down + "
                  "%llu ms sending",
                  (unsigned long long)seed, i,
                  (unsigned long long)((b->ended_at - b->sent_at) / 1000000),
                  (unsigned long long)budget_ms,
                  (unsigned long long)(n->downtime / 1000000),
                  (unsigned long long)(tx_ns / 1000000));
        *n_done += b->done;
        *n_cancel += b->cancelled;
    }
    ltp_stats st[2];
    for (int i = 0; i < 2; i++) {
        ltp_engine_stats(n->eng[i], &st[i]);
        CHECK_MSG(st[i].export_sessions == 0 && st[i].import_sessions == 0 &&
                      st[i].queued_blocks == 0,
                  "seed %llu: engine %d left %llu exports, %llu imports, %llu queued",
                  (unsigned long long)seed, i + 1,
                  (unsigned long long)st[i].export_sessions,
                  (unsigned long long)st[i].import_sessions,
                  (unsigned long long)st[i].queued_blocks);
        CHECK_EQ_U64(st[i].malformed, 0);
    }
    CHECK_EQ_U64(st[0].exports_done + st[0].exports_cancelled, (uint64_t)n->nblocks);
    if (out)
        *out = st[0];
    if (!sc->loss && !sc->reorder && !sc->dup && !sc->outages)
        CHECK_EQ_INT(n->crc_valid, n->nblocks); /* in order: every one */
    for (int i = 0; i < 2; i++)
        ltp_engine_free(n->eng[i]);
    CHECK_OK(tern_loop_close(n->loop));
    tern_log_close(lg);
    tern_clock_free(n->clk);
    free(n);
}

TEST(ltp_sim_clean_link_delivers_everything)
{
    struct scenario sc = {0, 0, 0, 5, 20, 200000, 0, 1400, 0.01, 0, 0, 0, 0, 0, NULL};
    int done = 0, cancel = 0;
    run(1, &sc, &done, &cancel, NULL);
    CHECK_EQ_INT(done, 20);
    CHECK_EQ_INT(cancel, 0);
}

TEST(ltp_sim_many_seeds)
{
    int seeds = getenv("TT_LONG") ? 20000 : 1000;
    uint64_t base = tt_seed();
    int done = 0, cancel = 0;
    for (int i = 0; i < seeds; i++) {
        uint64_t seed = base + (uint64_t)i;
        uint64_t x = seed | 1;
        struct scenario sc = {0};
        rnd(&x);
        sc.loss = (double)(rnd(&x) % 31) / 100.0;
        sc.dup = (double)(rnd(&x) % 10) / 100.0;
        sc.reorder = (double)(rnd(&x) % 30) / 100.0;
        static const uint64_t delays[] = {1, 5, 50, 500, 2000, 60000, 1200000};
        sc.delay_ms = delays[rnd(&x) % 7];
        sc.nblocks = 1 + (int)(rnd(&x) % 12);
        sc.max_block = 1 + rnd(&x) % 60000;
        sc.outages = (int)(rnd(&x) % 4);
        static const size_t segs[] = {200, 1400, 1400, 9000};
        sc.max_seg = segs[rnd(&x) % 4];
        sc.seg_loss_rate = rnd(&x) % 2 ? 0.01 : 0;
        sc.rate_bps = rnd(&x) % 3 == 0 ? 10000000 : 0;
        sc.tx_notify = sc.rate_bps != 0;
        /* a quarter of the runs: the receiver holds red parts up to about a
         * round trip (a store's group commit), sometimes longer */
        sc.hold_ms = rnd(&x) % 4 == 0 ? rnd(&x) % (3 * sc.delay_ms + 20) : 0;
        run(seed, &sc, &done, &cancel, NULL);
    }
    fprintf(
        stderr,
        "# ltp simulation: %d seeds (loss 0-30%%, delay 1 ms-20 min, outages), %d blocks "
        "delivered, %d cancelled within budget\n",
        seeds, done, cancel);
}

/* The receiver holds every red part 25 ms (its store makes the data
 * durable): no block is acknowledged before its release, checkpoints the
 * sender repeats meanwhile are answered after it, and all arrive once. */
TEST(ltp_sim_held_red_parts_claimed_after_release)
{
    struct scenario sc = {0.05, 0, 0, 5, 20, 100000, 0, 1400, 0, 0, 0, 25, 0, 0, NULL};
    int done = 0, cancel = 0;
    ltp_stats st;
    run(11, &sc, &done, &cancel, &st);
    CHECK_EQ_INT(done, 20);
    CHECK_EQ_INT(cancel, 0);
    CHECK(st.cp_timeouts > 0); /* the sender did ask again while held */
}

/* A receiver whose store has no room for 40 ms (LTP_LATER) keeps each block
 * unclaimed meanwhile instead of cancelling it, then takes it: every block
 * arrives once, none is cancelled, none is acknowledged before it is taken,
 * and the sender heard that the receiver had no room. */
TEST(ltp_sim_receiver_without_room_takes_blocks_later)
{
    struct scenario sc = {0.02, 0, 0, 5, 12, 60000, 0, 1400, 0, 0, 0, 0, 0, 40, NULL};
    int done = 0, cancel = 0;
    ltp_stats st;
    run(13, &sc, &done, &cancel, &st);
    CHECK_MSG(done == 12, "%d done, %d cancelled", done, cancel);
    CHECK_EQ_INT(cancel, 0);
    CHECK(st.peer_no_room > 0);
}

/* Issue 18 item 9: a receiver without room for 10 s, twenty times the
 * sender's whole repair budget (576 ms here). The old sender ran out its
 * checkpoint retransmissions and cancelled every block (RLEXC, one log
 * line each) and sent it all again. Now the receiver answers each
 * checkpoint with a report that claims all but the end and says it has no
 * room; the sender waits, asking now and then: nothing is cancelled, every
 * block is delivered once when room comes back, and each side says what is
 * happening once, not once per block. */
TEST(ltp_sim_receiver_without_room_for_long_cancels_nothing)
{
    char log[512];
    snprintf(log, sizeof log, "%s/ltp.log", tt_tmpdir());
    for (int lossy = 0; lossy < 2; lossy++) {
        remove(log);
        struct scenario sc = {
            lossy ? 0.05 : 0, 0, 0, 5, 24, 60000, 0, 1400, 0, 0, 0, 0, 0, 10000, log};
        int done = 0, cancel = 0;
        ltp_stats st;
        run(17 + (uint64_t)lossy, &sc, &done, &cancel, &st);
        CHECK_MSG(done == 24 && cancel == 0, "loss %d: %d done, %d cancelled", lossy,
                  done, cancel);
        CHECK(st.peer_no_room > 0);
        CHECK_EQ_U64(st.exports_waiting, 0);
        CHECK_EQ_INT(log_count(log, "cancelled"), 0);
        CHECK_EQ_INT(log_count(log, "engine 2 has no room: blocks wait"), 1);
        CHECK_EQ_INT(
            log_count(log, "no room at client service 1: blocks from engine 1 wait"), 1);
        CHECK_EQ_INT(log_count(log, "engine 2 has room again"), 1);
        CHECK_EQ_INT(log_count(log, "room again at client service 1"), 1);
    }
}

/* The receiver's link comes up 500 ms after the sender's (contacts that
 * start a little apart): the reports it made meanwhile could not leave, and
 * with timers from transmission their retransmission must still start when
 * the link comes up, not after the long fallback for a segment the link
 * service lost. Every block within its budget (checked by run()). */
TEST(ltp_sim_receiver_link_up_late)
{
    for (int tx = 0; tx < 2; tx++) {
        struct scenario sc = {0, 0, 0, 50, 4, 20000, 0, 1400, 0, 0, tx, 0, 500, 0, NULL};
        int done = 0, cancel = 0;
        run(5, &sc, &done, &cancel, NULL);
        CHECK_MSG(done == 4, "tx_notify %d: %d done, %d cancelled", tx, done, cancel);
        CHECK_EQ_INT(cancel, 0);
    }
}

/* A slow link: 8 blocks of ~200 KB at 2 Mbit/s take seconds to leave, far
 * longer than the 30 ms retransmission timeout. With timers running from
 * transmission nothing times out on a clean link; with timers running from
 * hand-over, checkpoints time out while still queued. */
TEST(ltp_sim_timers_start_at_transmission)
{
    struct scenario sc = {0, 0, 0, 10, 8, 200000, 0, 1400, 0, 2000000, 1, 0, 0, 0, NULL};
    int done = 0, cancel = 0;
    ltp_stats st;
    run(7, &sc, &done, &cancel, &st);
    CHECK_EQ_INT(done, 8);
    CHECK_EQ_U64(st.cp_timeouts, 0);
    CHECK_EQ_U64(st.data_retx, 0);
    sc.tx_notify = 0;
    done = cancel = 0;
    run(7, &sc, &done, &cancel, &st);
    CHECK_MSG(st.cp_timeouts > 0, "timers from hand-over should have fired early");
}

/* ------------------------------------------------------------------------
 * Hand-driven link: every segment waits in a queue until the test delivers
 * or drops it, so a scenario can lose exactly the segment it is about. */

#define HQ 512

struct hseg {
    int from;
    size_t len;
    uint8_t *d;
};

struct hand;

struct hside {
    struct hand *h;
    int idx;
};

struct hand {
    tern_clock *clk;
    tern_loop *loop;
    tern_log *lg;                         /* both engines log here (may be NULL) */
    uint64_t max_block, max_import_bytes; /* span settings (0: defaults) */
    ltp_engine *eng[2];
    struct hside sd[2];
    struct hseg q[HQ];
    int nq;
    int done, cancelled, red_parts, import_cancels;
    uint8_t reason, import_reason;
    size_t red_len;
    uint8_t red[4096]; /* the last red part (its first 4096 bytes) */
    int red_crc_ok;    /* its arrival CRC was valid and right */
};

static int hand_send(void *ctx, uint64_t peer, const uint8_t *seg, size_t len)
{
    (void)peer;
    struct hside *s = ctx;
    struct hand *h = s->h;
    CHECK(h->nq < HQ);
    struct hseg *q = &h->q[h->nq++];
    q->from = s->idx;
    q->len = len;
    q->d = malloc(len);
    CHECK(q->d);
    memcpy(q->d, seg, len);
    return 0;
}

static int hand_notice(void *ctx, const ltp_notice *no)
{
    struct hside *s = ctx;
    struct hand *h = s->h;
    if (no->kind == LTP_EXPORT_DONE)
        h->done++;
    else if (no->kind == LTP_EXPORT_CANCELLED) {
        h->cancelled++;
        h->reason = no->reason;
    } else if (no->kind == LTP_RED_PART) {
        h->red_parts++;
        h->red_len = no->len;
        memcpy(h->red, no->data, no->len < sizeof h->red ? no->len : sizeof h->red);
        h->red_crc_ok =
            no->red_crc_valid && no->red_crc32c == tern_crc32c(0, no->data, no->len);
    } else if (no->kind == LTP_IMPORT_CANCELLED) {
        h->import_cancels++;
        h->import_reason = no->reason;
    }
    return 0;
}

/* Engine idx (0: id 1, 1: id 2), span to the other one. */
static void hand_engine(struct hand *h, int idx, unsigned max_import)
{
    ltp_engine_cfg ec = {
        .engine_id = (uint64_t)idx + 1, .max_retries = 3, .max_rounds = 4};
    ltp_host host = {.ctx = &h->sd[idx], .send = hand_send, .notice = hand_notice};
    h->sd[idx].h = h;
    h->sd[idx].idx = idx;
    CHECK_OK(ltp_engine_new(h->loop, &ec, &host, h->lg, &h->eng[idx]));
    ltp_span_cfg sc = {.peer = 2 - (uint64_t)idx,
                       .max_export = 8,
                       .max_import = max_import,
                       .max_seg = 1100 + 73,
                       .agg_size = 65536,
                       .agg_ms = 10,
                       .owlt_ms = 10,
                       .qtime_ms = 1,
                       .max_block = h->max_block,
                       .max_import_bytes = h->max_import_bytes};
    CHECK_OK(ltp_span_add(h->eng[idx], &sc));
}

/* Two engines; the spans take blocks up to max_block and hold up to
 * max_import_bytes of imports (0: defaults); they log to log_path if set. */
static struct hand *hand_new_opts(unsigned max_import, uint64_t max_block,
                                  uint64_t max_import_bytes, const char *log_path)
{
    struct hand *h = calloc(1, sizeof *h);
    CHECK(h);
    CHECK_OK(tern_clock_virtual_new(UINT64_C(849312000000), &h->clk));
    CHECK_OK(tern_loop_new(h->clk, &h->loop));
    if (log_path)
        CHECK_OK(tern_log_open(&h->lg, "t", log_path, TERN_LOG_INFO, 0));
    h->max_block = max_block;
    h->max_import_bytes = max_import_bytes;
    for (int i = 0; i < 2; i++)
        hand_engine(h, i, max_import);
    return h;
}

static struct hand *hand_new(unsigned max_import)
{
    return hand_new_opts(max_import, 0, 0, NULL);
}

static void hand_free(struct hand *h)
{
    for (int i = 0; i < h->nq; i++)
        free(h->q[i].d);
    for (int i = 0; i < 2; i++)
        ltp_engine_free(h->eng[i]);
    CHECK_OK(tern_loop_close(h->loop));
    tern_clock_free(h->clk);
    tern_log_close(h->lg);
    free(h);
}

/* Takes the oldest queued segment out (decoded into *s, claims in cl). */
static int hand_pop(struct hand *h, struct hseg *out, ltp_seg *s, ltp_claim *cl)
{
    if (!h->nq)
        return 0;
    *out = h->q[0];
    memmove(h->q, h->q + 1, (size_t)(h->nq - 1) * sizeof h->q[0]);
    h->nq--;
    s->claims = cl;
    CHECK_OK(ltp_seg_decode(out->d, out->len, s, 64));
    return 1;
}

/* Delivers every queued segment (and what they cause) to the other engine,
 * except those drop() refuses; returns how many were dropped. */
static int hand_pump(struct hand *h,
                     int (*drop)(const struct hseg *, const ltp_seg *, void *), void *arg)
{
    struct hseg q;
    ltp_seg s;
    ltp_claim cl[64];
    int dropped = 0;
    while (hand_pop(h, &q, &s, cl)) {
        if (drop && drop(&q, &s, arg))
            dropped++;
        else
            ltp_engine_receive(h->eng[1 - q.from], q.d, q.len);
        free(q.d);
    }
    return dropped;
}

static void hand_link(struct hand *h, int up)
{
    CHECK_OK(ltp_span_link(h->eng[0], 2, up));
    CHECK_OK(ltp_span_link(h->eng[1], 1, up));
}

static void hand_block(struct hand *h, uint8_t *blk, size_t len)
{
    for (size_t i = 0; i < len; i++)
        blk[i] = (uint8_t)(i * 7 + 3);
    CHECK_OK(ltp_block_send(h->eng[0], 2, 1, blk, len, 0, NULL, NULL));
}

/* Issue 17 item 6. The receiver's report comes in two segments and only the
 * first arrives: the sender has no checkpoint outstanding, only its idle
 * timer runs. The link then goes down for three repair budgets: the idle
 * timer must stand still like every other timer of the span, so when the
 * link is back the second report segment completes the block. */
TEST(ltp_export_idle_timer_waits_while_link_down)
{
    struct hand *h = hand_new(8);
    uint8_t blk[3000];
    hand_block(h, blk, sizeof blk);
    CHECK_EQ_INT(h->nq, 3);
    hand_pump(h, NULL, NULL); /* data to the receiver; its report back */
    CHECK_EQ_INT(h->red_parts, 1);
    CHECK_EQ_INT(h->done, 1); /* all went through: start again, splitting */

    /* Second block: hold the receiver's report and cut it in two. */
    hand_block(h, blk, sizeof blk);
    struct hseg q;
    ltp_seg s;
    ltp_claim cl[64];
    for (int i = 0; i < 3; i++) {
        CHECK(hand_pop(h, &q, &s, cl));
        ltp_engine_receive(h->eng[1], q.d, q.len);
        free(q.d);
    }
    CHECK_EQ_INT(h->red_parts, 2);
    CHECK(hand_pop(h, &q, &s, cl));
    CHECK_EQ_INT(s.type, LTP_RS);
    CHECK_EQ_U64(s.lower, 0);
    CHECK_EQ_U64(s.upper, 3000);
    ltp_seg first = s;
    ltp_claim c1 = {0, 1000};
    first.upper = 1000;
    first.rpt_serial = s.rpt_serial + 1000;
    first.n_claims = 1;
    first.claims = &c1;
    uint8_t buf[256];
    int n = ltp_seg_encode(&first, buf, sizeof buf);
    CHECK(n > 0);
    CHECK_OK(ltp_engine_receive(h->eng[0], buf, (size_t)n));
    /* only a report acknowledgment comes back: nothing to resend */
    CHECK_EQ_INT(h->nq, 1);
    free(h->q[0].d);
    h->nq = 0;

    uint64_t budget;
    CHECK_OK(ltp_span_budget_ms(h->eng[0], 2, &budget));
    hand_link(h, 0);
    CHECK_OK(
        tern_loop_run_until(h->loop, tern_loop_now(h->loop) + 3 * budget * 1000000ull));
    CHECK_MSG(h->cancelled == 0, "export cancelled during the outage, reason %u",
              h->reason);
    hand_link(h, 1);
    /* the second report segment, as the receiver's report timer resends it */
    ltp_engine_receive(h->eng[0], q.d, q.len);
    free(q.d);
    hand_pump(h, NULL, NULL);
    CHECK_EQ_INT(h->done, 2);
    CHECK_EQ_INT(h->cancelled, 0);
    CHECK_OK(
        tern_loop_run_until(h->loop, tern_loop_now(h->loop) + 3 * budget * 1000000ull));
    hand_pump(h, NULL, NULL);
    ltp_stats st;
    ltp_engine_stats(h->eng[0], &st);
    CHECK_EQ_U64(st.export_sessions, 0);
    ltp_engine_stats(h->eng[1], &st);
    CHECK_EQ_U64(st.import_sessions, 0);
    hand_free(h);
}

static int count_cr(const struct hseg *q, const ltp_seg *s, void *arg)
{
    (void)q;
    if (s->type == LTP_CR)
        ++*(int *)arg;
    return 0;
}

/* Issue 17 item 12: a receiver whose import cap is reached answers a new
 * session with a cancel (SYS_CNCLD) at once, and counts it, instead of
 * dropping its segments silently and leaving the sender to exhaust its
 * checkpoint retransmissions. The refused session keeps no import state. */
TEST(ltp_import_cap_refuses_new_session_with_cancel)
{
    struct hand *h = hand_new(1);
    uint8_t b1[3000], b2[3000];
    hand_block(h, b1, sizeof b1);
    hand_block(h, b2, sizeof b2);
    CHECK_EQ_INT(h->nq, 6);
    int crs = 0;
    /* the second block arrives while the first one's session is open */
    hand_pump(h, count_cr, &crs);
    CHECK_EQ_INT(h->red_parts, 1);
    CHECK_EQ_INT(h->done, 1);
    CHECK_MSG(h->cancelled == 1, "sender told of %d refusals", h->cancelled);
    CHECK_EQ_INT(h->reason, LTP_SYS_CNCLD);
    /* the first segment and the checkpoint each got one */
    CHECK_EQ_INT(crs, 2);
    ltp_stats st;
    ltp_engine_stats(h->eng[1], &st);
    CHECK_EQ_U64(st.imports_refused, 1);
    CHECK_EQ_U64(st.imports_started, 1);
    CHECK_EQ_U64(st.import_sessions, 0);
    CHECK_EQ_INT(h->import_cancels, 0); /* no client ever saw that session */
    ltp_engine_stats(h->eng[0], &st);
    CHECK_EQ_U64(st.export_sessions, 0);
    CHECK_EQ_U64(st.exports_cancelled, 1);
    /* with room again, the block sent anew goes through */
    hand_block(h, b2, sizeof b2);
    hand_pump(h, NULL, NULL);
    CHECK_EQ_INT(h->done, 2);
    CHECK_EQ_INT(h->red_parts, 2);
    hand_free(h);
}

/* Delivers the oldest queued segment, or drops it; returns its type. */
static int hand_step(struct hand *h, int deliver)
{
    struct hseg q;
    ltp_seg s;
    ltp_claim cl[64];
    CHECK(hand_pop(h, &q, &s, cl));
    if (deliver)
        ltp_engine_receive(h->eng[1 - q.from], q.d, q.len);
    free(q.d);
    return s.type;
}

/* Issue 17 item 1: partial claims and a receiver restart must not lose a
 * block. A 3,000-byte block goes in three 1,100-byte segments; the second
 * is lost, the receiver claims the other two, then restarts (same engine
 * ID, imports kept only in memory) before the retransmitted gap arrives
 * with its checkpoint. The new import has only the gap and never sent the
 * report the checkpoint answers: claiming the gap would complete the
 * sender's claimed set for a block no one delivered. It must cancel
 * instead, so the sender sends the block again. */
TEST(ltp_receiver_restart_never_completes_a_block_it_lost)
{
    struct hand *h = hand_new(8);
    uint8_t blk[3000];
    hand_block(h, blk, sizeof blk);
    CHECK_EQ_INT(h->nq, 3);
    CHECK_EQ_INT(hand_step(h, 1), LTP_RD);
    CHECK_EQ_INT(hand_step(h, 0), LTP_RD); /* lost */
    CHECK_EQ_INT(hand_step(h, 1), LTP_RD_CP_EOB);
    CHECK_EQ_INT(h->nq, 1);
    CHECK_EQ_INT(hand_step(h, 1), LTP_RS); /* claims [0,1100) and [2200,3000) */
    CHECK_EQ_INT(h->nq, 2);
    CHECK_EQ_INT(hand_step(h, 1), LTP_RA);
    CHECK_EQ_INT(h->red_parts, 0);
    CHECK_EQ_INT(h->done, 0);

    /* the receiver restarts (a few ms, within the retransmission timeout):
     * its import of the block is gone */
    ltp_engine_free(h->eng[1]);
    CHECK_OK(tern_loop_run_until(h->loop, tern_loop_now(h->loop) + 5000000ull));
    hand_engine(h, 1, 8);

    CHECK_EQ_INT(h->nq, 1); /* the gap [1100,2200), a checkpoint */
    hand_pump(h, NULL, NULL);
    CHECK_MSG(!(h->done && !h->red_parts),
              "the sender counts the block delivered, the receiver took nothing");
    CHECK_EQ_INT(h->done, 0);
    CHECK_EQ_INT(h->cancelled, 1);
    CHECK_EQ_INT(h->reason, LTP_SYS_CNCLD);
    CHECK_EQ_INT(h->red_parts, 0);
    ltp_stats st;
    ltp_engine_stats(h->eng[1], &st);
    CHECK_EQ_U64(st.import_sessions, 0);
    CHECK_EQ_U64(st.imports_cancelled, 1);
    ltp_engine_stats(h->eng[0], &st);
    CHECK_EQ_U64(st.export_sessions, 0);

    /* sent again (as BP forwards a cancelled block's bundles anew) */
    hand_block(h, blk, sizeof blk);
    hand_pump(h, NULL, NULL);
    CHECK_EQ_INT(h->done, 1);
    CHECK_EQ_INT(h->red_parts, 1);
    CHECK_EQ_U64(h->red_len, sizeof blk);
    hand_free(h);
}

/* ------------------------------------------------------------------------
 * Issue 18: hostile segments. Each is refused (counted, said once) and the
 * engine goes on serving the next block. */

static size_t unhex(const char *h, uint8_t *out)
{
    size_t n = 0;
    for (; h[0] && h[1]; h += 2) {
        unsigned v;
        CHECK(sscanf(h, "%2x", &v) == 1);
        out[n++] = (uint8_t)v;
    }
    return n;
}

/* A data segment with any offset and length, even ones the encoder refuses
 * (their sum past 2^64): the fields as SDNVs, then len bytes of 'x' (at
 * most 64). */
static size_t raw_data(uint8_t *b, uint8_t type, uint64_t engine, uint64_t session,
                       uint64_t offset, uint64_t length, size_t len)
{
    size_t n = 0;
    b[n++] = type;
    n += (size_t)tern_sdnv_encode(engine, b + n, 10);
    n += (size_t)tern_sdnv_encode(session, b + n, 10);
    b[n++] = 0;
    n += (size_t)tern_sdnv_encode(1, b + n, 10); /* client */
    n += (size_t)tern_sdnv_encode(offset, b + n, 10);
    n += (size_t)tern_sdnv_encode(length, b + n, 10);
    if (ltp_seg_is_cp(type)) {
        n += (size_t)tern_sdnv_encode(1, b + n, 10);
        n += (size_t)tern_sdnv_encode(0, b + n, 10);
    }
    memset(b + n, 'x', len);
    return n + len;
}

/* A normal 3,000-byte block still goes from engine 1 to engine 2. */
static void still_serves(struct hand *h)
{
    int done = h->done, red = h->red_parts;
    uint8_t blk[3000];
    hand_block(h, blk, sizeof blk);
    hand_pump(h, NULL, NULL);
    CHECK_EQ_INT(h->done, done + 1);
    CHECK_EQ_INT(h->red_parts, red + 1);
    CHECK_EQ_U64(h->red_len, sizeof blk);
}

/* The pending segment from engine 2 is a receiver's cancel, SYS_CNCLD. */
static void expect_cr(struct hand *h)
{
    struct hseg q;
    ltp_seg s;
    ltp_claim cl[64];
    CHECK(hand_pop(h, &q, &s, cl));
    CHECK_EQ_INT(q.from, 1);
    CHECK_EQ_INT(s.type, LTP_CR);
    CHECK_EQ_INT(s.reason, LTP_SYS_CNCLD);
    ltp_engine_receive(h->eng[0], q.d, q.len);
    free(q.d);
    hand_pump(h, NULL, NULL);
}

/* Issue 18 item 1: one 29-byte red checkpoint/end-of-block segment from a
 * configured peer with offset 2^63 - 1 and length 10 made the old engine's
 * buffer growth (nc *= 2) wrap to 0 and loop for ever. It must be refused
 * before any size is computed from it, and the engine must go on. */
TEST(ltp_item1_datagram_refused_engine_serves_on)
{
    alarm(20); /* the old engine never returns from it */
    char log[512];
    snprintf(log, sizeof log, "%s/ltp.log", tt_tmpdir());
    struct hand *h = hand_new_opts(8, 0, 0, log);
    uint8_t d[128];
    size_t n = unhex("0301b893420001ffffffffffffffff7f0a010078787878787878787878", d);
    CHECK_EQ_U64(n, 29);
    CHECK(ltp_engine_receive(h->eng[1], d, n) < 0);
    ltp_stats st;
    ltp_engine_stats(h->eng[1], &st);
    CHECK_EQ_U64(st.malformed, 1);
    CHECK_EQ_U64(st.oversized, 1);
    CHECK_EQ_U64(st.import_sessions, 0);
    CHECK_EQ_U64(st.import_bytes, 0);
    expect_cr(h); /* the sender, if any, hears at once */
    /* again: counted, not said again */
    CHECK(ltp_engine_receive(h->eng[1], d, n) < 0);
    expect_cr(h);
    ltp_engine_stats(h->eng[1], &st);
    CHECK_EQ_U64(st.oversized, 2);
    tern_log_close(h->lg);
    h->lg = NULL;
    CHECK_EQ_INT(log_count(log, "reaches past the largest block"), 1);
    still_serves(h);
    hand_free(h);
}

/* Variants: offset + length past 2^64 (a decoding error), one byte past
 * the configured max block, a segment of an open session past it (that
 * session is cancelled), and one exactly at the end of the largest block
 * (it opens a session but the buffer does not grow to reach it). */
TEST(ltp_segments_past_max_block_refused)
{
    alarm(20);
    struct hand *h = hand_new_opts(8, 4 << 20, 0, NULL);
    uint8_t d[128];
    ltp_stats st;
    size_t n = raw_data(d, LTP_RD_CP_EOB, 1, 77, UINT64_MAX - 4, 10, 10);
    CHECK_RC(ltp_engine_receive(h->eng[1], d, n), TERN_EOVERFLOW);
    n = raw_data(d, LTP_RD_CP_EOB, 1, 78, (4 << 20) - 9, 10, 10);
    CHECK(ltp_engine_receive(h->eng[1], d, n) < 0);
    expect_cr(h);
    n = raw_data(d, LTP_GD_EOB, 1, 79, UINT64_C(1) << 40, 10, 10);
    CHECK(ltp_engine_receive(h->eng[1], d, n) < 0);
    expect_cr(h);
    ltp_engine_stats(h->eng[1], &st);
    CHECK_EQ_U64(st.malformed, 3);
    CHECK_EQ_U64(st.oversized, 2);
    CHECK_EQ_U64(st.import_sessions, 0);

    /* an open session, then a segment of it past the block */
    n = raw_data(d, LTP_RD, 1, 80, 0, 40, 40);
    CHECK_OK(ltp_engine_receive(h->eng[1], d, n));
    ltp_engine_stats(h->eng[1], &st);
    CHECK_EQ_U64(st.import_sessions, 1);
    n = raw_data(d, LTP_RD_CP_EOB, 1, 80, UINT64_C(1) << 62, 10, 10);
    CHECK(ltp_engine_receive(h->eng[1], d, n) < 0);
    ltp_engine_stats(h->eng[1], &st);
    CHECK_EQ_U64(st.imports_cancelled, 1);
    CHECK_EQ_U64(st.oversized, 3);
    expect_cr(h);
    /* engine 1 never had that session: the cancel is not acknowledged, and
     * is given up after its retries */
    CHECK_OK(tern_loop_run_until(h->loop, tern_loop_now(h->loop) + 10000000000ull));
    hand_pump(h, NULL, NULL);
    ltp_engine_stats(h->eng[1], &st);
    CHECK_EQ_U64(st.import_sessions, 0);

    /* the last 10 bytes of the largest block: allowed, nothing kept */
    n = raw_data(d, LTP_RD, 1, 81, (4 << 20) - 10, 10, 10);
    CHECK_OK(ltp_engine_receive(h->eng[1], d, n));
    ltp_engine_stats(h->eng[1], &st);
    CHECK_EQ_U64(st.import_sessions, 1);
    CHECK_EQ_U64(st.segs_not_kept, 1);
    CHECK_MSG(st.import_bytes < 4096, "%llu bytes held for 10 received",
              (unsigned long long)st.import_bytes);
    still_serves(h);
    hand_free(h);
}

/* A report about bytes outside the block (its upper bound past the red
 * part, near 2^64) is dropped, counted as malformed, not acknowledged, and
 * the export completes when the real report comes. */
TEST(ltp_report_claims_outside_block_refused)
{
    alarm(20);
    struct hand *h = hand_new(8);
    uint8_t blk[3000];
    hand_block(h, blk, sizeof blk);
    /* the session number, from the first data segment */
    CHECK(h->nq == 3);
    ltp_seg s;
    ltp_claim cl[64];
    s.claims = cl;
    CHECK_OK(ltp_seg_decode(h->q[0].d, h->q[0].len, &s, 64));
    uint64_t session = s.session;
    static const uint64_t bounds[][3] = {
        {UINT64_MAX - 20, UINT64_MAX, 19}, /* near 2^64 */
        {0, 5000, 5000},                   /* past the 3,000 red bytes */
    };
    for (int i = 0; i < 2; i++) {
        ltp_claim c = {bounds[i][2] == 5000 ? 0 : 1, bounds[i][2] == 5000 ? 5000 : 19};
        ltp_seg r;
        memset(&r, 0, sizeof r);
        r.type = LTP_RS;
        r.engine = 1;
        r.session = session;
        r.rpt_serial = 900 + (uint64_t)i;
        r.lower = bounds[i][0];
        r.upper = bounds[i][1];
        r.n_claims = 1;
        r.claims = &c;
        if (i == 0)
            c.offset = 0;
        uint8_t b[256];
        int n = ltp_seg_encode(&r, b, sizeof b);
        CHECK(n > 0);
        CHECK_RC(ltp_engine_receive(h->eng[0], b, (size_t)n), TERN_EMALFORMED);
    }
    ltp_stats st;
    ltp_engine_stats(h->eng[0], &st);
    CHECK_EQ_U64(st.malformed, 2);
    CHECK_EQ_U64(st.bad_reports, 2);
    CHECK_EQ_INT(h->nq, 3); /* no acknowledgment went out, nothing was resent */
    CHECK_EQ_INT(h->done, 0);
    hand_pump(h, NULL, NULL);
    CHECK_EQ_INT(h->done, 1);
    CHECK_EQ_INT(h->red_parts, 1);
    still_serves(h);
    hand_free(h);
}

/* Bytes malloc has handed out now (heap and mmapped chunks). */
static size_t malloc_bytes(void)
{
    struct mallinfo2 m = mallinfo2();
    return m.uordblks + m.hblkhd;
}

/* Issue 18 item 4: 20,000 eleven-byte red segments at 4 KiB strides in one
 * session grew the old receiver by 113 MB, 500 times what was sent: its
 * buffer spanned the extent the bytes were scattered over. Now what one
 * session holds follows what arrived (bytes far beyond it are not kept;
 * the sender sends them again), and the engine's count of it is honest. */
TEST(ltp_strided_segments_cost_what_arrived)
{
    alarm(60);
    struct hand *h = hand_new(8);
    size_t before = malloc_bytes();
    uint8_t d[128];
    uint64_t sent = 0;
    for (int i = 0; i < 20000; i++) {
        size_t n = raw_data(d, LTP_RD, 1, 500, (uint64_t)i * 4096, 11, 11);
        ltp_engine_receive(h->eng[1], d, n);
        sent += n;
    }
    size_t grew = malloc_bytes() - before;
    ltp_stats st;
    ltp_engine_stats(h->eng[1], &st);
    fprintf(stderr,
            "# 20,000 x 11 B at 4 KiB strides (%llu bytes sent): memory grew %zu bytes, "
            "the engine counts %llu held, %llu segments not kept\n",
            (unsigned long long)sent, grew, (unsigned long long)st.import_bytes,
            (unsigned long long)st.segs_not_kept);
    CHECK_MSG(grew < (4u << 20), "memory grew by %zu bytes for %llu sent", grew,
              (unsigned long long)sent);
    CHECK_EQ_U64(st.import_sessions, 1);
    /* what it counts is what it holds, and that is about what arrived */
    CHECK(st.import_bytes <= 2 * sent + (1u << 20) + 65536);
    CHECK(grew <= 2 * st.import_bytes + 65536);
    CHECK(st.segs_not_kept > 19000);
    still_serves(h);
    hand_free(h);
}

/* A span whose imports may hold 256 KiB together: a session that would
 * hold more is cancelled (SYS_CNCLD), counted, said once; its memory is
 * freed, and the next block goes through. */
TEST(ltp_import_share_exceeded_cancels_session)
{
    alarm(20);
    char log[512];
    snprintf(log, sizeof log, "%s/ltp.log", tt_tmpdir());
    struct hand *h = hand_new_opts(8, 1 << 20, 256 << 10, log);
    uint8_t *blk = malloc(400000);
    CHECK(blk);
    CHECK_OK(ltp_block_send(h->eng[0], 2, 1, blk, 400000, 0, NULL, NULL));
    int crs = 0;
    hand_pump(h, count_cr, &crs);
    ltp_stats st;
    ltp_engine_stats(h->eng[1], &st);
    CHECK_EQ_U64(st.imports_over_share, 1);
    CHECK_EQ_U64(st.imports_cancelled, 1);
    CHECK(crs >= 1);
    CHECK_EQ_INT(h->cancelled, 1);
    CHECK_EQ_INT(h->reason, LTP_SYS_CNCLD);
    CHECK_EQ_INT(h->red_parts, 0);
    CHECK_OK(tern_loop_run_until(h->loop, tern_loop_now(h->loop) + 10000000000ull));
    hand_pump(h, NULL, NULL);
    ltp_engine_stats(h->eng[1], &st);
    CHECK_EQ_U64(st.import_sessions, 0);
    CHECK_EQ_U64(st.import_bytes, 0);
    /* a second one: counted, not said again */
    CHECK_OK(ltp_block_send(h->eng[0], 2, 1, blk, 400000, 0, NULL, NULL));
    hand_pump(h, NULL, NULL);
    ltp_engine_stats(h->eng[1], &st);
    CHECK_EQ_U64(st.imports_over_share, 2);
    CHECK_EQ_INT(log_count(log, "more than a session's share"), 1);
    CHECK_OK(tern_loop_run_until(h->loop, tern_loop_now(h->loop) + 10000000000ull));
    hand_pump(h, NULL, NULL);
    still_serves(h);
    free(blk);
    hand_free(h);
}

/* One byte in every two of a 64 KiB block: the bookkeeping of the gaps
 * counts as held too, and passes a session's share (a block and a
 * quarter) long before the block's extent is reached: cancelled. */
TEST(ltp_scattered_bytes_pass_session_share)
{
    alarm(20);
    struct hand *h = hand_new_opts(8, 64 << 10, 0, NULL);
    uint8_t d[128];
    ltp_stats st;
    for (uint64_t off = 0; off < (64 << 10); off += 2) {
        size_t n = raw_data(d, LTP_RD, 1, 700, off, 1, 1);
        ltp_engine_receive(h->eng[1], d, n);
        ltp_engine_stats(h->eng[1], &st);
        CHECK(st.import_bytes <= (80 << 10) + 512 + (128 << 10));
        if (st.imports_over_share)
            break;
    }
    CHECK_EQ_U64(st.imports_over_share, 1);
    CHECK_EQ_U64(st.imports_cancelled, 1);
    hand_pump(h, NULL, NULL);
    still_serves(h);
    hand_free(h);
}

/* Found by fuzz_ltp_engine: a segment overlapping bytes already received,
 * with other bytes in the overlap, overwrote them: the red part then
 * differed from what its arrival CRC (and maybe a report's claims) had
 * covered. The bytes received first stay; only new ones are kept. */
TEST(ltp_overlapping_segment_never_overwrites_received_bytes)
{
    struct hand *h = hand_new(8);
    uint8_t a[100], b[100], buf[256];
    memset(a, 'a', sizeof a);
    memset(b, 'b', sizeof b);
    ltp_seg s;
    memset(&s, 0, sizeof s);
    s.type = LTP_RD;
    s.engine = 1;
    s.session = 900;
    s.client = 1;
    s.offset = 0;
    s.length = 100;
    s.data = a;
    int n = ltp_seg_encode(&s, buf, sizeof buf);
    CHECK(n > 0);
    CHECK_OK(ltp_engine_receive(h->eng[1], buf, (size_t)n));
    s.type = LTP_RD_CP_EOB;
    s.offset = 50;
    s.data = b;
    s.cp_serial = 1;
    n = ltp_seg_encode(&s, buf, sizeof buf);
    CHECK(n > 0);
    CHECK_OK(ltp_engine_receive(h->eng[1], buf, (size_t)n));
    CHECK_EQ_INT(h->red_parts, 1);
    CHECK_EQ_U64(h->red_len, 150);
    CHECK_EQ_MEM(h->red, a, 100);
    CHECK_EQ_MEM(h->red + 100, b, 50);
    CHECK(h->red_crc_ok);
    hand_free(h);
}
