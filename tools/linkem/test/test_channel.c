/* linkem's impairment channel on the virtual clock (timing is exact there),
 * its option parsing, and the udp and tcp relays over real sockets. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "linkem.h"
#include "tern/clock.h"
#include "tern/loop.h"
#include "tern_test.h"

#define MS  TERN_NS_PER_MS
#define SEC TERN_NS_PER_S

/* ------------------------------------------------------------ harness */

struct rec {
    uint64_t t;
    uint32_t id;
    uint32_t len;
    uint32_t flips; /* bits set in the payload (payloads are sent as zeros) */
};

struct sink {
    tern_loop *loop;
    struct rec *r;
    size_t n, cap;
};

static int sink_cb(void *arg, void *tag, uint8_t *data, size_t len, unsigned pflags)
{
    struct sink *s = arg;
    (void)tag;
    (void)pflags;
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 1024;
        s->r = realloc(s->r, s->cap * sizeof *s->r);
        CHECK(s->r);
    }
    struct rec *r = &s->r[s->n++];
    r->t = tern_loop_now(s->loop);
    r->len = (uint32_t)len;
    r->id = 0;
    r->flips = 0;
    if (len >= 4)
        memcpy(&r->id, data, 4);
    for (size_t i = 4; i < len; i++)
        r->flips += (uint32_t)__builtin_popcount(data[i]);
    return 0;
}

struct vt {
    tern_clock *clk;
    tern_loop *loop;
    struct sink sink;
    lk_channel *ch;
    lk_impair imp;
};

static void vt_init(struct vt *v)
{
    memset(v, 0, sizeof *v);
    CHECK_OK(tern_clock_virtual_new(0, &v->clk));
    CHECK_OK(tern_loop_new(v->clk, &v->loop));
    v->sink.loop = v->loop;
    v->imp.queue_bytes = LK_QUEUE_DEFAULT;
    v->imp.reorder_gap_ms = -1;
}

static void vt_open(struct vt *v, uint64_t seed, int dir, unsigned flags)
{
    CHECK_OK(
        lk_channel_new(v->loop, &v->imp, seed, dir, flags, sink_cb, &v->sink, &v->ch));
}

static void vt_close(struct vt *v)
{
    lk_channel_free(v->ch);
    CHECK_OK(tern_loop_close(v->loop));
    tern_clock_free(v->clk);
    free(v->sink.r);
    free(v->imp.outage.down);
}

static void run_to(struct vt *v, uint64_t t)
{
    CHECK_OK(tern_loop_run_until(v->loop, t));
    CHECK_EQ_U64(tern_loop_now(v->loop), t);
}

/* Sends packet id of len bytes (id in the first 4, zeros after). */
static int send_id(struct vt *v, uint32_t id, size_t len)
{
    uint8_t buf[65536];
    CHECK(len >= 4 && len <= sizeof buf);
    memset(buf, 0, len);
    memcpy(buf, &id, 4);
    int f = lk_channel_send(v->ch, buf, len, NULL, 0);
    CHECK(f >= 0);
    return f;
}

static void within_sigma(const char *what, double got, double n, double p, double k)
{
    double mean = n * p, sd = sqrt(n * p * (1 - p));
    fprintf(stderr, "# %s: %.0f, expected %.1f +- %.1f (%.2f sigma)\n", what, got, mean,
            sd, (got - mean) / sd);
    CHECK_MSG(fabs(got - mean) <= k * sd, "%s: %.0f is more than %.1f sigma from %.1f",
              what, got, k, mean);
}

/* ------------------------------------------------------------ delay, rate */

TEST(delay_exact_and_fifo)
{
    struct vt v;
    vt_init(&v);
    v.imp.delay_ms = 1250.5;
    vt_open(&v, 1, LK_A2B, 0);
    for (uint32_t i = 0; i < 100; i++) {
        run_to(&v, (uint64_t)i * 7 * MS + 3);
        CHECK_EQ_INT(send_id(&v, i, 100), 0);
    }
    run_to(&v, 10 * SEC);
    CHECK_EQ_U64(v.sink.n, 100);
    for (uint32_t i = 0; i < 100; i++) {
        CHECK_EQ_U64(v.sink.r[i].id, i);
        CHECK_EQ_U64(v.sink.r[i].t, (uint64_t)i * 7 * MS + 3 + 1250500000u);
    }
    lk_counters *c = lk_channel_counters(v.ch);
    CHECK_EQ_U64(c->packets_in, 100);
    CHECK_EQ_U64(c->packets_out, 100);
    CHECK_EQ_U64(c->bytes_out, 10000);
    vt_close(&v);
}

TEST(jitter_keeps_order)
{
    struct vt v;
    vt_init(&v);
    v.imp.delay_ms = 50;
    v.imp.jitter_ms = 20;
    vt_open(&v, 7, LK_A2B, 0);
    uint64_t sent[2000];
    for (uint32_t i = 0; i < 2000; i++) {
        sent[i] = (uint64_t)i * MS;
        run_to(&v, sent[i]);
        send_id(&v, i, 64);
    }
    run_to(&v, 10 * SEC);
    CHECK_EQ_U64(v.sink.n, 2000);
    double sum = 0;
    int late = 0;
    for (uint32_t i = 0; i < 2000; i++) {
        CHECK_EQ_U64(v.sink.r[i].id, i); /* FIFO */
        uint64_t d = v.sink.r[i].t - sent[i];
        CHECK(d >= 50 * MS);
        /* FIFO may hold a packet behind a later-jittered one, never past
         * the previous packet's time. */
        if (d > 70 * MS)
            late++;
        if (i)
            CHECK(v.sink.r[i].t >= v.sink.r[i - 1].t);
        sum += (double)d;
    }
    CHECK_EQ_INT(late, 0);
    double mean_ms = sum / 2000 / 1e6;
    fprintf(stderr, "# jitter: mean delay %.2f ms (50 + uniform 0..20, FIFO)\n", mean_ms);
    CHECK(mean_ms > 58 && mean_ms < 68);
    vt_close(&v);
}

TEST(rate_serializes)
{
    struct vt v;
    vt_init(&v);
    v.imp.rate_bps = 1000000; /* 1250-byte packets take 10 ms */
    v.imp.delay_ms = 100;
    vt_open(&v, 1, LK_A2B, 0);
    run_to(&v, SEC);
    for (uint32_t i = 0; i < 50; i++)
        CHECK_EQ_INT(send_id(&v, i, 1250), 0);
    run_to(&v, 10 * SEC);
    CHECK_EQ_U64(v.sink.n, 50);
    for (uint32_t i = 0; i < 50; i++)
        CHECK_EQ_U64(v.sink.r[i].t, SEC + (uint64_t)(i + 1) * 10 * MS + 100 * MS);
    /* Spaced beyond the rate, packets see only their own serialization. */
    for (uint32_t i = 0; i < 10; i++) {
        run_to(&v, 20 * SEC + (uint64_t)i * 50 * MS);
        send_id(&v, 100 + i, 125); /* 1 ms */
    }
    run_to(&v, 30 * SEC);
    for (uint32_t i = 0; i < 10; i++)
        CHECK_EQ_U64(v.sink.r[50 + i].t, 20 * SEC + (uint64_t)i * 50 * MS + 101 * MS);
    vt_close(&v);
}

TEST(rate_throughput_odd_sizes)
{
    struct vt v;
    vt_init(&v);
    v.imp.rate_bps = 2345678;
    v.imp.queue_bytes = 100000000;
    vt_open(&v, 1, LK_A2B, 0);
    uint64_t bytes = 0;
    for (uint32_t i = 0; i < 5000; i++) {
        size_t len = 40 + (i * 7919) % 1460;
        bytes += len;
        send_id(&v, i, len);
    }
    run_to(&v, 3600 * SEC);
    CHECK_EQ_U64(v.sink.n, 5000);
    double secs = (double)v.sink.r[4999].t / 1e9, want = (double)bytes * 8 / 2345678;
    fprintf(stderr, "# rate: %llu bytes in %.6f s, ideal %.6f s\n",
            (unsigned long long)bytes, secs, want);
    CHECK(secs >= want && secs < want + 5000e-9); /* at most 1 ns rounding per packet */
    vt_close(&v);
}

TEST(queue_tail_drop)
{
    struct vt v;
    vt_init(&v);
    v.imp.rate_bps = 1000000;
    v.imp.queue_bytes = 5000;
    vt_open(&v, 1, LK_A2B, 0);
    int accepted = 0, dropped = 0;
    /* One transmits at once, four (5000 bytes) wait, the rest are dropped. */
    for (uint32_t i = 0; i < 100; i++) {
        int f = send_id(&v, i, 1250);
        if (f & LK_FATE_QUEUE)
            dropped++;
        else
            accepted++;
    }
    CHECK_EQ_INT(accepted, 5);
    CHECK_EQ_INT(dropped, 95);
    CHECK_EQ_U64(lk_channel_waiting_bytes(v.ch), 5000);
    lk_counters *c = lk_channel_counters(v.ch);
    CHECK_EQ_U64(c->dropped_queue, 95);
    /* 10 ms later one has left the queue for the transmitter: room for one. */
    run_to(&v, 10 * MS);
    CHECK_EQ_U64(lk_channel_waiting_bytes(v.ch), 3750);
    CHECK_EQ_INT(send_id(&v, 1000, 1250), 0);
    CHECK(send_id(&v, 1001, 1250) & LK_FATE_QUEUE);
    /* An idle link takes a packet bigger than the queue. */
    run_to(&v, SEC);
    CHECK_EQ_INT(send_id(&v, 2000, 9000), 0);
    run_to(&v, 2 * SEC);
    CHECK_EQ_U64(c->packets_out, 7);
    CHECK_EQ_U64(c->dropped_queue, 96);
    vt_close(&v);
}

/* ------------------------------------------------------------ statistics */

TEST(loss_statistics)
{
    struct vt v;
    vt_init(&v);
    v.imp.loss = 0.1;
    vt_open(&v, tt_seed(), LK_A2B, 0);
    const int n = 200000;
    int lost = 0;
    for (int i = 0; i < n; i++) {
        if (send_id(&v, (uint32_t)i, 20) & LK_FATE_LOSS)
            lost++;
        if (i % 1000 == 999)
            run_to(&v, (uint64_t)(i + 1) * MS);
    }
    run_to(&v, 1000 * SEC);
    lk_counters *c = lk_channel_counters(v.ch);
    CHECK_EQ_U64(c->dropped_loss, (uint64_t)lost);
    CHECK_EQ_U64(c->packets_out, (uint64_t)(n - lost));
    within_sigma("loss 0.1 over 200000", lost, n, 0.1, 5);
    vt_close(&v);
}

/* Drop mode (udp): P(corrupt) = 1 - (1 - ber)^bits, as the issue says: at
 * 1e-5 on 1,400-byte segments, about one in nine. */
TEST(ber_drop_statistics)
{
    struct vt v;
    vt_init(&v);
    v.imp.ber = 1e-5;
    vt_open(&v, tt_seed(), LK_A2B, 0);
    const int n = 200000;
    for (int i = 0; i < n; i++) {
        send_id(&v, (uint32_t)i, 1400);
        if (i % 1000 == 999)
            run_to(&v, (uint64_t)(i + 1) * MS);
    }
    run_to(&v, 1000 * SEC);
    lk_counters *c = lk_channel_counters(v.ch);
    double p = 1 - pow(1 - 1e-5, 1400 * 8);
    CHECK_EQ_U64(c->corrupted, c->dropped_ber);
    CHECK_EQ_U64(c->packets_out + c->dropped_ber, (uint64_t)n);
    for (size_t i = 0; i < v.sink.n; i++)
        CHECK_EQ_U64(v.sink.r[i].flips, 0); /* what passes is intact */
    fprintf(stderr, "# ber 1e-5 on 1400 B: 1 in %.2f corrupted (expected 1 in %.2f)\n",
            (double)n / (double)c->corrupted, 1 / p);
    within_sigma("ber 1e-5 drops over 200000 x 1400 B", (double)c->dropped_ber, n, p, 5);
    vt_close(&v);
}

/* Deliver mode (packet): each bit flips independently, so the flips per
 * packet are binomial: check their total, the corrupted count, and the
 * spread (variance) of flips per packet at a high rate. */
TEST(ber_flip_statistics)
{
    struct vt v;
    vt_init(&v);
    v.imp.ber = 1e-4;
    vt_open(&v, tt_seed(), LK_A2B, LK_CH_BER_DELIVER);
    const int n = 200000;
    const size_t len = 504; /* 500 payload bytes after the id = 4000 bits */
    for (int i = 0; i < n; i++) {
        send_id(&v, (uint32_t)i, len);
        if (i % 1000 == 999)
            run_to(&v, (uint64_t)(i + 1) * MS);
    }
    run_to(&v, 1000 * SEC);
    lk_counters *c = lk_channel_counters(v.ch);
    CHECK_EQ_U64(c->packets_out, (uint64_t)n);
    CHECK_EQ_U64(c->dropped_ber, 0);
    /* Flips in the 4-byte id are not visible in the payload: count only the
     * 4000 payload bits, which are zeros on the way in. */
    double flips = 0, corrupt_payload = 0;
    for (size_t i = 0; i < v.sink.n; i++) {
        flips += v.sink.r[i].flips;
        corrupt_payload += v.sink.r[i].flips > 0;
    }
    double bits = 4000.0 * n;
    within_sigma("bits flipped at 1e-4", flips, bits, 1e-4, 5);
    within_sigma("payloads with a flip", corrupt_payload, n, 1 - pow(1 - 1e-4, 4000), 5);
    double pall = 1 - pow(1 - 1e-4, (double)len * 8);
    within_sigma("packets corrupted", (double)c->corrupted, n, pall, 5);
    vt_close(&v);

    /* A high rate: mean and variance of flips per packet are binomial's. */
    vt_init(&v);
    v.imp.ber = 0.01;
    vt_open(&v, tt_seed() + 1, LK_A2B, LK_CH_BER_DELIVER);
    const int m = 20000;
    for (int i = 0; i < m; i++) {
        send_id(&v, (uint32_t)i, 104); /* 800 payload bits */
        if (i % 1000 == 999)
            run_to(&v, (uint64_t)(i + 1) * MS);
    }
    run_to(&v, 1000 * SEC);
    double s = 0, s2 = 0;
    for (size_t i = 0; i < v.sink.n; i++) {
        s += v.sink.r[i].flips;
        s2 += (double)v.sink.r[i].flips * v.sink.r[i].flips;
    }
    double mean = s / m, var = s2 / m - mean * mean;
    fprintf(stderr, "# ber 0.01 on 800 bits: mean %.3f (8), variance %.3f (7.92)\n", mean,
            var);
    CHECK(fabs(mean - 8) < 5 * sqrt(7.92 / m));
    CHECK(fabs(var - 7.92) < 0.5);
    vt_close(&v);
}

TEST(dup_and_reorder)
{
    struct vt v;
    vt_init(&v);
    v.imp.delay_ms = 10;
    v.imp.dup = 0.05;
    v.imp.reorder = 0.02;
    vt_open(&v, tt_seed(), LK_A2B, 0);
    const int n = 100000;
    int dups = 0, reo = 0;
    for (int i = 0; i < n; i++) {
        run_to(&v, (uint64_t)i * MS);
        int f = send_id(&v, (uint32_t)i, 50);
        dups += (f & LK_FATE_DUP) != 0;
        reo += (f & LK_FATE_REORDER) != 0;
    }
    run_to(&v, (uint64_t)n * MS + SEC);
    lk_counters *c = lk_channel_counters(v.ch);
    CHECK_EQ_U64(c->duplicated, (uint64_t)dups);
    CHECK_EQ_U64(c->reordered, (uint64_t)reo);
    CHECK_EQ_U64(c->packets_out, (uint64_t)(n + dups));
    within_sigma("dup 0.05", dups, n, 0.05, 5);
    within_sigma("reorder 0.02", reo, n, 0.02, 5);
    /* A reordered packet arrives gap (2 x 10 + 1 ms) late, behind later ones. */
    int out_of_order = 0;
    for (size_t i = 1; i < v.sink.n; i++)
        if (v.sink.r[i].id < v.sink.r[i - 1].id)
            out_of_order++;
    CHECK(out_of_order >= reo * 9 / 10);
    for (size_t i = 0; i < v.sink.n; i++) {
        uint64_t d = v.sink.r[i].t - (uint64_t)v.sink.r[i].id * MS;
        CHECK_MSG(d == 10 * MS || d == 31 * MS, "packet %u delayed %llu ns",
                  v.sink.r[i].id, (unsigned long long)d);
    }
    vt_close(&v);
}

/* ------------------------------------------------------------ outages */

static void add_outage(lk_impair *imp, double a, double b)
{
    imp->outage.down =
        realloc(imp->outage.down, (imp->outage.n_down + 1) * sizeof *imp->outage.down);
    CHECK(imp->outage.down);
    imp->outage.down[imp->outage.n_down++] =
        (lk_interval){(uint64_t)llround(a * 1e9), (uint64_t)llround(b * 1e9)};
}

TEST(outage_window_exact)
{
    struct vt v;
    vt_init(&v);
    v.imp.delay_ms = 100;
    add_outage(&v.imp, 1.0, 2.0);
    vt_open(&v, 1, LK_A2B, 0);
    run_to(&v, 5 * SEC);
    lk_channel_set_epoch(v.ch, 5 * SEC); /* schedules count from the epoch */
    /* One packet each ms for 3 s, ids = ms since the epoch. */
    for (uint32_t i = 0; i < 3000; i++) {
        run_to(&v, 5 * SEC + (uint64_t)i * MS);
        CHECK_EQ_INT(lk_channel_is_down(v.ch), i >= 1000 && i < 2000);
        int f = send_id(&v, i, 30);
        CHECK_EQ_INT((f & LK_FATE_OUTAGE) != 0, i >= 1000 && i < 2000);
    }
    run_to(&v, 10 * SEC);
    /* Sent in [0.9, 1.0) s: they would arrive in the outage and are dropped
     * then; sent in [1.0, 2.0): dropped on arrival; all others pass. */
    CHECK_EQ_U64(v.sink.n, 3000 - 1100);
    size_t k = 0;
    for (uint32_t i = 0; i < 3000; i++) {
        if (i >= 900 && i < 2000)
            continue;
        CHECK_EQ_U64(v.sink.r[k].id, i);
        CHECK_EQ_U64(v.sink.r[k].t, 5 * SEC + (uint64_t)i * MS + 100 * MS);
        k++;
    }
    lk_counters *c = lk_channel_counters(v.ch);
    CHECK_EQ_U64(c->dropped_outage, 1100);
    vt_close(&v);
}

TEST(periodic_schedule)
{
    lk_schedule s = {0};
    s.up_ns = 1 * SEC;
    s.down_ns = SEC / 2;
    s.offset_ns = SEC / 4; /* down in [1.25, 1.75), [2.75, 3.25), ... */
    for (uint64_t t = 0; t < 10 * SEC; t += MS) {
        int want = t >= 1250 * MS && ((t - 1250 * MS) % (1500 * MS)) < 500 * MS;
        CHECK_MSG(lk_schedule_is_down(&s, t) == want, "t %llu ms",
                  (unsigned long long)(t / MS));
    }
    CHECK_EQ_U64(lk_schedule_next_change(&s, 0), 1250 * MS);
    CHECK_EQ_U64(lk_schedule_next_change(&s, 1250 * MS), 1750 * MS);
    CHECK_EQ_U64(lk_schedule_next_change(&s, 1750 * MS), 2750 * MS);
    CHECK_EQ_U64(lk_schedule_next_up(&s, 1300 * MS), 1750 * MS);
    CHECK_EQ_U64(lk_schedule_next_up(&s, 1000 * MS), 1000 * MS);

    /* Overlapping intervals and the periodic part chain into one stretch. */
    lk_interval iv[2] = {{1700 * MS, 2000 * MS}, {1900 * MS, 2800 * MS}};
    s.down = iv;
    s.n_down = 2;
    CHECK_EQ_U64(lk_schedule_next_up(&s, 1300 * MS), 3250 * MS);
    CHECK_EQ_U64(lk_schedule_next_change(&s, 1300 * MS), 3250 * MS);
    CHECK_EQ_U64(lk_schedule_next_change(&s, 3250 * MS), 4250 * MS);

    lk_schedule none = {0};
    CHECK_EQ_U64(lk_schedule_next_change(&none, 5), UINT64_MAX);
    CHECK_EQ_INT(lk_schedule_is_down(&none, 5), 0);
}

TEST(stream_holds_through_outage)
{
    struct vt v;
    vt_init(&v);
    v.imp.delay_ms = 100;
    add_outage(&v.imp, 1.0, 3.0);
    vt_open(&v, 1, LK_A2B, LK_CH_STREAM);
    for (uint32_t i = 0; i < 20; i++) {
        run_to(&v, 850 * MS + (uint64_t)i * 10 * MS);
        CHECK_EQ_INT(send_id(&v, i, 1000), 0);
    }
    CHECK_EQ_INT(lk_channel_send(v.ch, NULL, 0, NULL, LK_PKT_MARKER), 0);
    CHECK_EQ_U64(lk_channel_next_change(v.ch), 3 * SEC); /* sent into the outage */
    run_to(&v, 10 * SEC);
    CHECK_EQ_U64(v.sink.n, 21);
    /* Due before 1.0 s: on time; due in the outage: all at 3.0 s, in order. */
    for (uint32_t i = 0; i < 20; i++) {
        uint64_t due = 950 * MS + (uint64_t)i * 10 * MS;
        CHECK_EQ_U64(v.sink.r[i].id, i);
        CHECK_EQ_U64(v.sink.r[i].t, due < SEC ? due : 3 * SEC);
    }
    CHECK_EQ_U64(v.sink.r[20].len, 0); /* the marker, last */
    lk_counters *c = lk_channel_counters(v.ch);
    CHECK_EQ_U64(c->packets_in, 20);
    CHECK_EQ_U64(c->packets_out, 20);
    CHECK_EQ_U64(c->dropped_outage, 0);
    vt_close(&v);
}

/* ------------------------------------------------------------ determinism */

struct fates {
    int f[5000];
    uint32_t ids[10000];
    uint32_t flips[10000];
    size_t n;
};

static void run_fates(uint64_t seed, int dir, uint64_t spacing_ns, struct fates *out)
{
    struct vt v;
    vt_init(&v);
    v.imp.loss = 0.1;
    v.imp.ber = 2e-5;
    v.imp.dup = 0.05;
    v.imp.reorder = 0.05;
    v.imp.jitter_ms = 3;
    v.imp.delay_ms = 5;
    vt_open(&v, seed, dir, LK_CH_BER_DELIVER);
    for (uint32_t i = 0; i < 5000; i++) {
        run_to(&v, (uint64_t)i * spacing_ns);
        out->f[i] = send_id(&v, i, 200 + (i * 37) % 1300);
    }
    run_to(&v, 5000 * spacing_ns + SEC);
    CHECK(v.sink.n <= 10000);
    out->n = v.sink.n;
    for (size_t i = 0; i < v.sink.n; i++) {
        out->ids[i] = v.sink.r[i].id;
        out->flips[i] = v.sink.r[i].flips;
    }
    vt_close(&v);
}

TEST(replay_by_seed)
{
    static struct fates a, b, c, d, e;
    run_fates(42, LK_A2B, MS, &a);
    run_fates(42, LK_A2B, MS, &b);
    CHECK_EQ_MEM(a.f, b.f, sizeof a.f);
    CHECK_EQ_U64(a.n, b.n);
    CHECK_EQ_MEM(a.ids, b.ids, a.n * sizeof a.ids[0]);
    CHECK_EQ_MEM(a.flips, b.flips, a.n * sizeof a.flips[0]);
    /* Another seed, or the other direction, gives other fates. */
    run_fates(43, LK_A2B, MS, &c);
    CHECK(memcmp(a.f, c.f, sizeof a.f) != 0);
    run_fates(42, LK_B2A, MS, &d);
    CHECK(memcmp(a.f, d.f, sizeof a.f) != 0);
    /* Timing does not change the random fates (loss, corruption, dup and
     * reorder of each packet); only the order of arrival may differ. */
    run_fates(42, LK_A2B, 3 * MS + 17, &e);
    CHECK_EQ_MEM(a.f, e.f, sizeof a.f);
    int lost = 0, corrupt = 0;
    for (int i = 0; i < 5000; i++) {
        lost += (a.f[i] & LK_FATE_LOSS) != 0;
        corrupt += (a.f[i] & LK_FATE_CORRUPT) != 0;
    }
    fprintf(stderr, "# seed 42: %d lost, %d corrupted of 5000\n", lost, corrupt);
    CHECK(lost > 400 && lost < 600);
    CHECK(corrupt > 50);
}

TEST(cancel_by_tag)
{
    struct vt v;
    vt_init(&v);
    v.imp.delay_ms = 10;
    vt_open(&v, 1, LK_A2B, LK_CH_STREAM);
    int t1, t2;
    uint8_t b[10] = {0};
    for (int i = 0; i < 10; i++) {
        CHECK_EQ_INT(lk_channel_send(v.ch, b, 10, &t1, 0), 0);
        CHECK_EQ_INT(lk_channel_send(v.ch, b, 10, &t2, 0), 0);
    }
    CHECK_EQ_U64(lk_channel_held_packets(v.ch), 20);
    CHECK_EQ_U64(lk_channel_cancel(v.ch, &t1), 10);
    CHECK_EQ_U64(lk_channel_held_bytes(v.ch), 100);
    run_to(&v, SEC);
    CHECK_EQ_U64(v.sink.n, 10);
    vt_close(&v);
}

/* ------------------------------------------------------------ options */

TEST(options_command_line)
{
    lk_config cfg;
    char err[LK_ERR_MAX];
    lk_config_init(&cfg, LK_MODE_UDP);
    char *argv[] = {"--a2b",
                    "127.0.0.1:0=127.0.0.1:1113",
                    "--delay",
                    "5",
                    "--a2b-delay=1250",
                    "--ber",
                    "1e-5",
                    "--b2a-loss",
                    "0.25",
                    "--outage",
                    "10-30,40.5-41",
                    "--b2a-outage",
                    "50-60",
                    "--periodic",
                    "50/10@5",
                    "--rate",
                    "2M",
                    "--seed",
                    "99",
                    "--jitter",
                    "1.5"};
    CHECK_OK(lk_config_parse_args(&cfg, (int)(sizeof argv / sizeof argv[0]), argv, err,
                                  sizeof err));
    CHECK_OK(lk_config_check(&cfg, err, sizeof err));
    CHECK_EQ_STR(cfg.udp_listen[0], "127.0.0.1:0");
    CHECK_EQ_STR(cfg.udp_target[0], "127.0.0.1:1113");
    CHECK(cfg.udp_listen[1] == NULL);
    CHECK(cfg.dir[0].delay_ms == 1250 && cfg.dir[1].delay_ms == 5);
    CHECK(cfg.dir[0].ber == 1e-5 && cfg.dir[1].ber == 1e-5);
    CHECK(cfg.dir[0].loss == 0 && cfg.dir[1].loss == 0.25);
    CHECK_EQ_U64(cfg.dir[0].outage.n_down, 2);
    CHECK_EQ_U64(cfg.dir[1].outage.n_down, 3);
    CHECK_EQ_U64(cfg.dir[0].outage.down[1].start_ns, 40500 * MS);
    CHECK_EQ_U64(cfg.dir[0].outage.down[1].end_ns, 41 * SEC);
    CHECK_EQ_U64(cfg.dir[1].outage.down[2].start_ns, 50 * SEC);
    CHECK_EQ_U64(cfg.dir[0].outage.up_ns, 50 * SEC);
    CHECK_EQ_U64(cfg.dir[0].outage.down_ns, 10 * SEC);
    CHECK_EQ_U64(cfg.dir[0].outage.offset_ns, 5 * SEC);
    CHECK_EQ_U64(cfg.dir[1].rate_bps, 2000000);
    CHECK_EQ_U64(cfg.seed, 99);
    CHECK(cfg.dir[1].jitter_ms == 1.5);
    CHECK_EQ_U64(cfg.dir[0].queue_bytes, LK_QUEUE_DEFAULT);
    lk_config_free(&cfg);
}

static void expect_arg_error(int mode, const char *a1, const char *a2, const char *want)
{
    lk_config cfg;
    char err[LK_ERR_MAX] = "";
    lk_config_init(&cfg, mode);
    char *argv[2] = {(char *)a1, (char *)a2};
    int rc = lk_config_parse_args(&cfg, a2 ? 2 : 1, argv, err, sizeof err);
    if (rc == 0)
        rc = lk_config_check(&cfg, err, sizeof err);
    CHECK_RC(rc, TERN_ESYNTAX);
    CHECK_MSG(strstr(err, want) != NULL, "error '%s' does not contain '%s'", err, want);
    lk_config_free(&cfg);
}

TEST(options_errors_name_the_option)
{
    expect_arg_error(LK_MODE_UDP, "--delay", "abc", "--delay: 'abc'");
    expect_arg_error(LK_MODE_UDP, "--a2b-loss", "1.5", "--a2b-loss: '1.5'");
    expect_arg_error(LK_MODE_UDP, "--ber", NULL, "--ber needs a value");
    expect_arg_error(LK_MODE_UDP, "--bogus", "1", "unknown option --bogus");
    expect_arg_error(LK_MODE_UDP, "--a2b-seed", "1", "unknown option --a2b-seed");
    expect_arg_error(LK_MODE_UDP, "--outage", "30-10", "--outage: '30-10'");
    expect_arg_error(LK_MODE_UDP, "--outage", "x-10", "--outage: 'x-10'");
    expect_arg_error(LK_MODE_UDP, "--periodic", "5", "--periodic: '5'");
    expect_arg_error(LK_MODE_UDP, "--a2b", "127.0.0.1:5", "--a2b: '127.0.0.1:5'");
    expect_arg_error(LK_MODE_UDP, "--listen", "127.0.0.1:5",
                     "--listen is an option of tcp");
    expect_arg_error(LK_MODE_UDP, "--rate", "-5", "--rate: '-5'");
    expect_arg_error(LK_MODE_UDP, "stray", NULL, "unexpected argument 'stray'");
    expect_arg_error(LK_MODE_UDP, "--delay", "5", "udp mode needs --a2b");
    expect_arg_error(
        LK_MODE_TCP, "--loss", "0.1",
        "--loss: tcp mode carries a byte stream: use packet mode for loss and bit "
        "errors");
    expect_arg_error(LK_MODE_PACKET, "--netns-a", "a/b", "--netns-a: 'a/b'");
    expect_arg_error(LK_MODE_PACKET, "--addr-a", "10.1.2.300/24", "--addr-a");
    expect_arg_error(LK_MODE_PACKET, "--netns-a", "x", "packet mode needs --netns-a");
    expect_arg_error(LK_MODE_UDP, "--ber-drop", NULL,
                     "--ber-drop is an option of packet mode");
}

/* --ber-drop (packet mode): bit errors drop the packet, as a link CRC would;
 * off by default (flip and deliver). Also as a config-file flag. */
TEST(options_ber_drop)
{
    lk_config cfg;
    char err[LK_ERR_MAX];
    lk_config_init(&cfg, LK_MODE_PACKET);
    CHECK_EQ_INT(cfg.ber_drop, 0);
    char *argv[] = {"--netns-a", "x", "--netns-b", "y", "--ber", "1e-5", "--ber-drop"};
    CHECK_OK(lk_config_parse_args(&cfg, (int)(sizeof argv / sizeof argv[0]), argv, err,
                                  sizeof err));
    CHECK_OK(lk_config_check(&cfg, err, sizeof err));
    CHECK_EQ_INT(cfg.ber_drop, 1);
    lk_config_free(&cfg);
    lk_config_init(&cfg, LK_MODE_PACKET);
    const char *text = "ber-drop yes\n";
    CHECK_OK(lk_config_parse_text(&cfg, "l.conf", text, strlen(text), err, sizeof err));
    CHECK_EQ_INT(cfg.ber_drop, 1);
    text = "ber-drop no\n";
    CHECK_OK(lk_config_parse_text(&cfg, "l.conf", text, strlen(text), err, sizeof err));
    CHECK_EQ_INT(cfg.ber_drop, 0);
    lk_config_free(&cfg);
}

static char *write_file(const char *name, const char *text)
{
    static char path[4096];
    snprintf(path, sizeof path, "%s/%s", tt_tmpdir(), name);
    FILE *f = fopen(path, "w");
    CHECK(f);
    fputs(text, f);
    fclose(f);
    return path;
}

TEST(config_file_and_override)
{
    const char *path = write_file("link.conf", "# the Mars link\n"
                                               "\n"
                                               "delay 1250   # one way\n"
                                               "a2b-ber 1e-5\r\n"
                                               "  outage 10-30\n"
                                               "rate = 1000000\n"
                                               "b2a 127.0.0.1:0=127.0.0.1:7\n"
                                               "seed 5\n");
    lk_config cfg;
    char err[LK_ERR_MAX];
    lk_config_init(&cfg, LK_MODE_UDP);
    char *argv[] = {"--delay", "9", "--config", (char *)path, "--b2a-delay", "3"};
    CHECK_OK(lk_config_parse_args(&cfg, 6, argv, err, sizeof err));
    CHECK_OK(lk_config_check(&cfg, err, sizeof err));
    CHECK(cfg.dir[0].delay_ms == 1250); /* the file overrides what came before */
    CHECK(cfg.dir[1].delay_ms == 3);    /* and what comes after overrides it */
    CHECK(cfg.dir[0].ber == 1e-5 && cfg.dir[1].ber == 0);
    CHECK_EQ_U64(cfg.dir[1].outage.n_down, 1);
    CHECK_EQ_U64(cfg.dir[1].outage.down[0].end_ns, 30 * SEC);
    CHECK_EQ_U64(cfg.dir[0].rate_bps, 1000000);
    CHECK_EQ_STR(cfg.udp_target[1], "127.0.0.1:7");
    CHECK_EQ_U64(cfg.seed, 5);
    lk_config_free(&cfg);
}

static void expect_file_error(const char *text, const char *want)
{
    const char *path = write_file("bad.conf", text);
    char where[4200];
    snprintf(where, sizeof where, "%s:%s", path, want);
    lk_config cfg;
    char err[LK_ERR_MAX] = "";
    lk_config_init(&cfg, LK_MODE_UDP);
    char *argv[] = {"--config", (char *)path};
    CHECK_RC(lk_config_parse_args(&cfg, 2, argv, err, sizeof err), TERN_ESYNTAX);
    CHECK_MSG(strncmp(err, where, strlen(where)) == 0,
              "error '%s' does not start with '%s'", err, where);
    lk_config_free(&cfg);
}

TEST(config_file_errors_name_file_line)
{
    expect_file_error("delay 5\n\n# x\nloss 2\n", "4: loss: '2' is not a probability");
    expect_file_error("delay 5\nfrobnicate 1\n", "2: unknown option frobnicate");
    expect_file_error("ber\n", "1: ber needs a value");
    expect_file_error("delay 5\nconfig other.conf\n", "2: config:");
    expect_file_error("\n\n\nlisten 127.0.0.1:5\n", "4: listen is an option of tcp");
    expect_file_error("outage 10-30\noutage 5\n", "2: outage: '5'");

    lk_config cfg;
    char err[LK_ERR_MAX];
    lk_config_init(&cfg, LK_MODE_UDP);
    CHECK_RC(lk_config_parse_text(&cfg, "x.conf", "delay 1\0x\n", 10, err, sizeof err),
             TERN_ESYNTAX);
    CHECK_EQ_STR(err, "x.conf:1: NUL byte in the line (not a text file?)");
    char *argv[] = {"--config", "/nonexistent/linkem.conf"};
    CHECK(lk_config_parse_args(&cfg, 2, argv, err, sizeof err) != 0);
    CHECK(strstr(err, "/nonexistent/linkem.conf") != NULL);
    lk_config_free(&cfg);
}

TEST(stats_json_format)
{
    lk_counters c[2];
    memset(c, 0, sizeof c);
    c[0].packets_in = 10;
    c[0].dropped_ber = 3;
    c[1].bytes_out = 12345678901ull;
    c[1].connections = 2;
    char buf[4096];
    int n = lk_stats_json(LK_MODE_UDP, 7, 1.5, c, buf, sizeof buf);
    CHECK(n > 0);
    CHECK(strstr(buf, "{\"mode\": \"udp\", \"seed\": 7, \"uptime_s\": 1.500000, \"a2b\": "
                      "{\"packets_in\": 10, \"bytes_in\": 0,") == buf);
    CHECK(strstr(buf, "\"dropped_ber\": 3"));
    CHECK(strstr(buf, "\"b2a\": {\"packets_in\": 0"));
    CHECK(strstr(buf, "\"bytes_out\": 12345678901"));
    CHECK(strstr(buf, "\"reordered\": 0}}\n"));
    n = lk_stats_json(LK_MODE_TCP, 7, 1.5, c, buf, sizeof buf);
    CHECK(n > 0);
    CHECK(strstr(buf, "\"a2b\": {\"bytes_in\": 0, \"bytes_out\": 0, \"chunks_in\": 10, "
                      "\"chunks_out\": 0, \"connections\": 0, \"resets\": 0}"));
    CHECK(strstr(buf, "\"connections\": 2"));
    CHECK_RC(lk_stats_json(LK_MODE_TCP, 7, 1.5, c, buf, 20), TERN_ENOSPACE);

    char path[4096];
    snprintf(path, sizeof path, "%s/stats.json", tt_tmpdir());
    CHECK_OK(lk_write_atomic(path, "abc", 3));
    CHECK_OK(lk_write_atomic(path, "hello", 5));
    FILE *f = fopen(path, "r");
    CHECK(f);
    char got[16] = "";
    CHECK(fgets(got, sizeof got, f) != NULL);
    fclose(f);
    CHECK_EQ_STR(got, "hello");
}

/* ------------------------------------------------------------ relays (real sockets) */

static int udp_socket(int *port)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    CHECK(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001)};
    CHECK(bind(fd, (struct sockaddr *)&a, sizeof a) == 0);
    socklen_t l = sizeof a;
    CHECK(getsockname(fd, (struct sockaddr *)&a, &l) == 0);
    *port = ntohs(a.sin_port);
    struct timeval tv = {0, 1000}; /* recv polls */
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
}

static void send_to(int fd, int port, const void *p, size_t n)
{
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(0x7f000001)};
    CHECK(sendto(fd, p, n, 0, (struct sockaddr *)&a, sizeof a) == (ssize_t)n);
}

static int port_of(const char *ports, const char *key)
{
    const char *p = strstr(ports, key);
    CHECK(p);
    return atoi(p + strlen(key) + 1);
}

TEST(udp_relay_both_directions)
{
    int pa, pb;
    int a = udp_socket(&pa), b = udp_socket(&pb);
    char a2b[64], b2a[64], err[LK_ERR_MAX];
    snprintf(a2b, sizeof a2b, "127.0.0.1:0=127.0.0.1:%d", pb);
    snprintf(b2a, sizeof b2a, "127.0.0.1:0=127.0.0.1:%d", pa);
    lk_config cfg;
    lk_config_init(&cfg, LK_MODE_UDP);
    char *argv[] = {"--a2b", a2b, "--b2a", b2a, "--delay", "30", "--b2a-loss", "1"};
    CHECK_OK(lk_config_parse_args(&cfg, 8, argv, err, sizeof err));
    tern_loop *loop;
    lk_relay *r;
    CHECK_OK(tern_loop_new(NULL, &loop));
    CHECK_OK(lk_relay_new(loop, &cfg, NULL, err, sizeof err, &r));
    CHECK_OK(lk_relay_start(r, tern_loop_now(loop)));
    char ports[128];
    CHECK_OK(lk_relay_ports(r, ports, sizeof ports));
    int la = port_of(ports, "a2b"), lb = port_of(ports, "b2a");
    CHECK(la > 0 && lb > 0 && la != lb);

    uint64_t t0 = tern_loop_now(loop);
    send_to(a, la, "hello", 5);
    char buf[64];
    struct sockaddr_in src;
    socklen_t sl = sizeof src;
    ssize_t n = -1;
    while (n < 0 && tern_loop_now(loop) - t0 < 5 * SEC) {
        tern_loop_run_until(loop, tern_loop_now(loop) + MS);
        n = recvfrom(b, buf, sizeof buf, 0, (struct sockaddr *)&src, &sl);
    }
    uint64_t dt = tern_loop_now(loop) - t0;
    CHECK_EQ_INT(n, 5);
    CHECK_EQ_MEM(buf, "hello", 5);
    CHECK_MSG(dt >= 30 * MS && dt < 200 * MS, "one-way %llu ns", (unsigned long long)dt);
    /* It came from b2a's listening socket. */
    CHECK_EQ_INT(ntohs(src.sin_port), lb);
    /* b2a loses everything: the answer is counted, dropped. */
    send_to(b, ntohs(src.sin_port), "back", 4);
    uint64_t t1 = tern_loop_now(loop);
    lk_counters c[2];
    do {
        tern_loop_run_until(loop, tern_loop_now(loop) + MS);
        lk_relay_counters(r, LK_B2A, &c[1]);
    } while (c[1].packets_in == 0 && tern_loop_now(loop) - t1 < 5 * SEC);
    lk_relay_counters(r, LK_A2B, &c[0]);
    CHECK_EQ_U64(c[0].packets_in, 1);
    CHECK_EQ_U64(c[0].packets_out, 1);
    CHECK_EQ_U64(c[0].bytes_out, 5);
    CHECK_EQ_U64(c[1].packets_in, 1);
    CHECK_EQ_U64(c[1].dropped_loss, 1);
    lk_relay_free(r);
    CHECK_OK(tern_loop_close(loop));
    lk_config_free(&cfg);
    close(a);
    close(b);
}

TEST(udp_relay_bad_target_is_a_syntax_error)
{
    lk_config cfg;
    char err[LK_ERR_MAX];
    lk_config_init(&cfg, LK_MODE_UDP);
    char *argv[] = {"--a2b", "127.0.0.1:0=no-such-host.invalid:5"};
    CHECK_OK(lk_config_parse_args(&cfg, 2, argv, err, sizeof err));
    tern_loop *loop;
    lk_relay *r = NULL;
    CHECK_OK(tern_loop_new(NULL, &loop));
    CHECK_RC(lk_relay_new(loop, &cfg, NULL, err, sizeof err, &r), TERN_ESYNTAX);
    CHECK(strstr(err, "no-such-host.invalid") != NULL);
    CHECK_OK(tern_loop_close(loop));
    lk_config_free(&cfg);
}

static void pump(tern_loop *loop)
{
    CHECK_OK(tern_loop_run_until(loop, tern_loop_now(loop) + MS / 2));
}

TEST(tcp_relay_stream_delay_and_reset)
{
    int srv = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001)};
    socklen_t al = sizeof a;
    CHECK(bind(srv, (struct sockaddr *)&a, sizeof a) == 0 && listen(srv, 4) == 0);
    CHECK(getsockname(srv, (struct sockaddr *)&a, &al) == 0);
    char target[64], err[LK_ERR_MAX];
    snprintf(target, sizeof target, "127.0.0.1:%d", ntohs(a.sin_port));
    lk_config cfg;
    lk_config_init(&cfg, LK_MODE_TCP);
    char *argv[] = {"--listen", "127.0.0.1:0", "--target",         target,
                    "--delay",  "40",          "--outage",         "1.5-3",
                    "--rate",   "8M",          "--reset-on-outage"};
    CHECK_OK(lk_config_parse_args(&cfg, 11, argv, err, sizeof err));
    CHECK_OK(lk_config_check(&cfg, err, sizeof err));
    tern_loop *loop;
    lk_relay *r;
    CHECK_OK(tern_loop_new(NULL, &loop));
    CHECK_OK(lk_relay_new(loop, &cfg, NULL, err, sizeof err, &r));
    uint64_t epoch = tern_loop_now(loop);
    CHECK_OK(lk_relay_start(r, epoch));
    char ports[64];
    CHECK_OK(lk_relay_ports(r, ports, sizeof ports));
    int lport = port_of(ports, "listen");

    int cli = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    struct sockaddr_in la = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)lport),
                             .sin_addr.s_addr = htonl(0x7f000001)};
    CHECK(connect(cli, (struct sockaddr *)&la, sizeof la) == 0 || errno == EINPROGRESS);
    int conn = -1;
    while (conn < 0 && tern_loop_now(loop) - epoch < 5 * SEC) {
        pump(loop);
        conn = accept4(srv, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    }
    CHECK(conn >= 0);

    /* 500 kB at 8 Mbit/s: 0.5 s of serialization, plus 40 ms. */
    enum { N = 500000 };
    static uint8_t out[N], in[N];
    for (size_t i = 0; i < N; i++)
        out[i] = (uint8_t)(i * 131 + 7);
    size_t sent = 0, got = 0;
    uint64_t t0 = tern_loop_now(loop), t_first = 0;
    while (got < N && tern_loop_now(loop) - t0 < 10 * SEC) {
        if (sent < N) {
            ssize_t n = send(cli, out + sent, N - sent, MSG_NOSIGNAL);
            if (n > 0)
                sent += (size_t)n;
        }
        pump(loop);
        ssize_t n = recv(conn, in + got, N - got, 0);
        if (n > 0) {
            if (!got)
                t_first = tern_loop_now(loop);
            got += (size_t)n;
        }
    }
    uint64_t t_done = tern_loop_now(loop);
    CHECK_EQ_U64(got, N);
    CHECK_EQ_MEM(in, out, N);
    fprintf(stderr, "# tcp: first bytes after %.1f ms, 500 kB after %.1f ms\n",
            (double)(t_first - t0) / 1e6, (double)(t_done - t0) / 1e6);
    CHECK(t_first - t0 >= 40 * MS);
    CHECK(t_done - t0 >= 500 * MS && t_done - t0 < 1400 * MS);

    /* The outage at 1.5 s resets both ends. */
    int reset = 0;
    while (!reset && tern_loop_now(loop) - epoch < 5 * SEC) {
        pump(loop);
        char b;
        ssize_t n = recv(cli, &b, 1, 0);
        if (n < 0 && errno == ECONNRESET)
            reset = 1;
        CHECK(n != 0);
    }
    CHECK(reset);
    CHECK(tern_loop_now(loop) - epoch >= 1500 * MS);
    lk_counters c;
    lk_relay_counters(r, LK_A2B, &c);
    CHECK_EQ_U64(c.connections, 1);
    CHECK_EQ_U64(c.resets, 1);
    CHECK_EQ_U64(c.bytes_in, N);
    CHECK_EQ_U64(c.bytes_out, N);
    lk_relay_free(r);
    CHECK_OK(tern_loop_close(loop));
    lk_config_free(&cfg);
    close(cli);
    close(conn);
    close(srv);
}

/* A UDP socket opened inside the namespace at path, bound to addr:port. */
static int socket_in_ns(const char *path, const char *addr, int port)
{
    int self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    int ns = open(path, O_RDONLY | O_CLOEXEC);
    CHECK(self >= 0 && ns >= 0);
    CHECK(setns(ns, CLONE_NEWNET) == 0);
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    CHECK(setns(self, CLONE_NEWNET) == 0);
    close(ns);
    close(self);
    CHECK(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, addr, &a.sin_addr);
    CHECK_MSG(bind(fd, (struct sockaddr *)&a, sizeof a) == 0, "bind %s: %s", addr,
              strerror(errno));
    return fd;
}

TEST(packet_relay_namespaces)
{
    if (geteuid() != 0 || access("/dev/net/tun", R_OK | W_OK) != 0) {
        fprintf(stderr, "# packet mode: skipped (needs root and /dev/net/tun)\n");
        return;
    }
    char na[64], nb[64], pa[128], pb[128], err[LK_ERR_MAX];
    snprintf(na, sizeof na, "lkt-%d-a", (int)getpid());
    snprintf(nb, sizeof nb, "lkt-%d-b", (int)getpid());
    snprintf(pa, sizeof pa, "/run/netns/%s", na);
    snprintf(pb, sizeof pb, "/run/netns/%s", nb);
    lk_config cfg;
    lk_config_init(&cfg, LK_MODE_PACKET);
    char *argv[] = {"--netns-a", na, "--netns-b", nb, "--delay", "20", "--b2a-loss", "1"};
    CHECK_OK(lk_config_parse_args(&cfg, 8, argv, err, sizeof err));
    CHECK_OK(lk_config_check(&cfg, err, sizeof err));
    tern_loop *loop;
    lk_relay *r;
    CHECK_OK(tern_loop_new(NULL, &loop));
    CHECK_OK(lk_relay_new(loop, &cfg, NULL, err, sizeof err, &r));
    CHECK_OK(lk_relay_start(r, tern_loop_now(loop)));
    CHECK(access(pa, F_OK) == 0 && access(pb, F_OK) == 0);
    /* A second one with the same names is refused. */
    lk_relay *r2 = NULL;
    CHECK_RC(lk_relay_new(loop, &cfg, NULL, err, sizeof err, &r2), TERN_EEXIST);
    CHECK(strstr(err, na) != NULL && strstr(err, "--replace") != NULL);

    int sa = socket_in_ns(pa, "10.200.0.1", 0), sb = socket_in_ns(pb, "10.200.0.2", 5555);
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(5555)};
    inet_pton(AF_INET, "10.200.0.2", &to.sin_addr);
    uint64_t t0 = tern_loop_now(loop);
    CHECK(sendto(sa, "ping", 4, 0, (struct sockaddr *)&to, sizeof to) == 4);
    char buf[16];
    ssize_t n = -1;
    while (n < 0 && tern_loop_now(loop) - t0 < 5 * SEC) {
        pump(loop);
        n = recv(sb, buf, sizeof buf, 0);
    }
    uint64_t dt = tern_loop_now(loop) - t0;
    CHECK_EQ_INT(n, 4);
    CHECK_EQ_MEM(buf, "ping", 4);
    fprintf(stderr, "# packet mode: a2b datagram after %.2f ms (delay 20)\n",
            (double)dt / 1e6);
    CHECK(dt >= 20 * MS && dt < 500 * MS);
    lk_counters c;
    lk_relay_counters(r, LK_A2B, &c);
    CHECK(c.packets_in >= 1 && c.packets_out >= 1);
    close(sa);
    close(sb);
    lk_relay_free(r);
    CHECK(access(pa, F_OK) != 0 && access(pb, F_OK) != 0);
    CHECK_OK(tern_loop_close(loop));
    lk_config_free(&cfg);
}
