/* Export blocks live in the store until the peer claims them: an engine
 * restarted on the same store resumes them with their session numbers, and
 * never reuses a session number. */
#include <stdio.h>
#include <stdlib.h>

#include "ltp.h"
#include "sdr.h"
#include "tern/clock.h"
#include "tern_test.h"

struct world {
    tern_loop *loop;
    tern_clock *clk;
    ltp_engine *a, *b;
    int pass; /* 0: the link eats everything */
    int done, delivered;
    uint64_t delivered_len;
};

struct hctx {
    struct world *w;
    int to_b;
};

struct pkt {
    tern_timer t;
    ltp_engine *to;
    size_t len;
    uint8_t data[];
};

static void deliver(tern_timer *t, void *arg)
{
    struct pkt *p = arg;
    ltp_engine_receive(p->to, p->data, p->len);
    free(p);
}

/* A lossless link with 1 ms delay (or a dead one). Delivery goes through the
 * loop, as a real link service's would. */
static int w_send(void *ctx, uint64_t peer, const uint8_t *seg, size_t len)
{
    struct hctx *h = ctx;
    if (!h->w->pass)
        return 0;
    struct pkt *p = malloc(sizeof *p + len);
    CHECK(p);
    p->to = h->to_b ? h->w->b : h->w->a;
    p->len = len;
    memcpy(p->data, seg, len);
    tern_timer_init(h->w->loop, &p->t);
    tern_timer_start(&p->t, deliver, p, 1000000, 0);
    return 0;
}

static int w_notice(void *ctx, const ltp_notice *n)
{
    struct hctx *h = ctx;
    if (n->kind == LTP_EXPORT_DONE)
        h->w->done++;
    if (n->kind == LTP_RED_PART) {
        h->w->delivered++;
        h->w->delivered_len += n->len;
    }
    return 0;
}

static sdr *open_store(void)
{
    sdr_profile p;
    memset(&p, 0, sizeof p);
    p.name = "node";
    p.dir = tt_tmpdir();
    p.heap_size = 4 << 20;
    p.mode = SDR_DURABLE;
    p.commit = SDR_COMMIT_SYNC;
    sdr *s;
    char why[256];
    int rc = sdr_open(&p, &s, why, sizeof why);
    CHECK_MSG(rc == 0, "%s", why);
    return s;
}

static ltp_engine *engine(struct world *w, uint64_t id, uint64_t peer, sdr *store,
                          struct hctx *h)
{
    ltp_engine_cfg ec = {.engine_id = id, .store = store};
    ltp_host host = {.ctx = h, .send = w_send, .notice = w_notice};
    ltp_engine *e;
    CHECK_OK(ltp_engine_new(w->loop, &ec, &host, NULL, &e));
    ltp_span_cfg sc = {.peer = peer,
                       .max_export = 2,
                       .max_import = 16,
                       .max_seg = 1400,
                       .agg_size = 65536,
                       .agg_ms = 10,
                       .owlt_ms = 10,
                       .qtime_ms = 1};
    CHECK_OK(ltp_span_add(e, &sc));
    return e;
}

TEST(ltp_store_resumes_exports_after_restart)
{
    struct world w;
    memset(&w, 0, sizeof w);
    CHECK_OK(tern_clock_virtual_new(UINT64_C(849312000000), &w.clk));
    CHECK_OK(tern_loop_new(w.clk, &w.loop));
    struct hctx ha = {&w, 1}, hb = {&w, 0};
    sdr *st = open_store();
    w.a = engine(&w, 1, 2, st, &ha);
    uint64_t sess[5];
    static uint8_t data[5][20000];
    for (int i = 0; i < 5; i++) {
        memset(data[i], 'a' + i, sizeof data[i]);
        CHECK_OK(ltp_block_send(w.a, 2, 1, data[i], sizeof data[i], 0, NULL, &sess[i]));
        CHECK(i == 0 || sess[i] == sess[i - 1] + 1);
    }
    /* Nothing gets through; stop before the sender gives up, then "restart". */
    CHECK_OK(tern_loop_run_until(w.loop, tern_loop_now(w.loop) + 30 * 1000000ull));
    ltp_stats s1;
    ltp_engine_stats(w.a, &s1);
    CHECK_EQ_U64(s1.exports_done, 0);
    CHECK_EQ_U64(s1.export_sessions, 2);
    CHECK_EQ_U64(s1.queued_blocks, 3);
    ltp_engine_free(w.a);
    CHECK_OK(sdr_close(st));

    st = open_store();
    w.a = engine(&w, 1, 2, st, &ha);
    w.b = engine(&w, 2, 1, NULL, &hb);
    w.pass = 1;
    CHECK_EQ_INT(ltp_engine_resume(w.a), 5);
    CHECK_EQ_INT(ltp_engine_resume(w.a), 0); /* already running */
    CHECK_OK(tern_loop_run(w.loop, TERN_RUN_DEFAULT));
    CHECK_EQ_INT(w.done, 5);
    CHECK_EQ_INT(w.delivered, 5);
    CHECK_EQ_U64(w.delivered_len, 5 * sizeof data[0]);
    /* A new block gets a number the peer has never seen. */
    uint64_t next;
    CHECK_OK(ltp_block_send(w.a, 2, 1, data[0], 100, 0, NULL, &next));
    CHECK(next > sess[4]);
    CHECK_OK(tern_loop_run(w.loop, TERN_RUN_DEFAULT));
    CHECK_EQ_INT(w.done, 6);
    sdr_usage u;
    CHECK_OK(sdr_get_usage(st, &u));
    CHECK_EQ_U64(u.blob_bytes, 0); /* every claimed block left the store */
    ltp_engine_free(w.a);
    ltp_engine_free(w.b);
    CHECK_OK(sdr_close(st));
    CHECK_OK(tern_loop_close(w.loop));
    tern_clock_free(w.clk);
}
