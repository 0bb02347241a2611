#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tern/loop.h"
#include "tern_test.h"

#define MS  TERN_NS_PER_MS
#define SEC TERN_NS_PER_S

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * SEC + (uint64_t)ts.tv_nsec;
}

static uint64_t cpu_ns(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * SEC +
           ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000;
}

/* A virtual loop at DTN 0. */
static tern_loop *vloop(tern_clock **clk)
{
    tern_loop *loop;
    CHECK_OK(tern_clock_virtual_new(0, clk));
    CHECK_OK(tern_loop_new(*clk, &loop));
    return loop;
}

static void vloop_close(tern_loop *loop, tern_clock *clk)
{
    CHECK_OK(tern_loop_close(loop));
    tern_clock_free(clk);
}

/* Records which timers fired, in order, and when. */
struct trace {
    tern_loop *loop;
    int ids[64];
    uint64_t at[64];
    int n;
};

struct ttimer {
    tern_timer t;
    struct trace *tr;
    int id;
};

static void trace_cb(tern_timer *t, void *arg)
{
    struct ttimer *tt = arg;
    CHECK(&tt->t == t);
    CHECK(tt->tr->n < 64);
    tt->tr->at[tt->tr->n] = tern_loop_now(tt->tr->loop);
    tt->tr->ids[tt->tr->n++] = tt->id;
}

TEST(loop_new_and_close)
{
    tern_loop *loop;
    uint64_t d;

    CHECK_OK(tern_loop_new(NULL, &loop));
    CHECK(tern_loop_clock(loop) == tern_clock_real());
    CHECK_EQ_INT(tern_loop_alive(loop), 0);
    CHECK_RC(tern_loop_next_deadline(loop, &d), TERN_ENOTFOUND);
    /* Nothing to do: every mode returns at once. */
    CHECK_OK(tern_loop_run(loop, TERN_RUN_DEFAULT));
    CHECK_OK(tern_loop_run(loop, TERN_RUN_ONCE));
    CHECK_OK(tern_loop_run(loop, TERN_RUN_NOWAIT));
    CHECK_RC(tern_loop_run(loop, 7), -EINVAL);
    CHECK_OK(tern_loop_close(loop));
    CHECK_OK(tern_loop_close(NULL));
    CHECK_RC(tern_loop_new(NULL, NULL), -EINVAL);
}

static void nop_timer(tern_timer *t, void *arg)
{
}

static void nop_io(tern_io *w, int fd, unsigned events, void *arg)
{
}

static void nop_async(tern_async *a, void *arg)
{
}

static void nop_defer(tern_loop *loop, void *arg)
{
}

TEST(close_with_active_handles_is_estate)
{
    tern_loop *loop;
    tern_timer t;
    tern_io w;
    tern_async a;
    int p[2];

    CHECK_OK(pipe(p));
    CHECK_OK(tern_loop_new(NULL, &loop));

    CHECK_OK(tern_timer_init(loop, &t));
    CHECK_OK(tern_timer_start(&t, nop_timer, NULL, 3600 * SEC, 0));
    CHECK_EQ_INT(tern_loop_alive(loop), 1);
    CHECK_RC(tern_loop_close(loop), TERN_ESTATE);
    CHECK_OK(tern_timer_stop(&t));
    CHECK_OK(tern_timer_stop(&t));

    CHECK_OK(tern_io_init(loop, &w, p[0], nop_io, NULL));
    CHECK_EQ_INT(tern_loop_alive(loop), 0); /* initialised is not active */
    CHECK_OK(tern_io_start(&w, TERN_IO_READ));
    CHECK_RC(tern_loop_close(loop), TERN_ESTATE);
    CHECK_OK(tern_io_stop(&w));

    CHECK_OK(tern_async_start(loop, &a, nop_async, NULL));
    CHECK_RC(tern_loop_close(loop), TERN_ESTATE);
    CHECK_OK(tern_async_stop(&a));

    CHECK_OK(tern_loop_defer(loop, nop_defer, NULL));
    CHECK_RC(tern_loop_close(loop), TERN_ESTATE);
    CHECK_OK(tern_loop_run(loop, TERN_RUN_NOWAIT));

    CHECK_EQ_INT(tern_loop_alive(loop), 0);
    CHECK_OK(tern_loop_close(loop));
    close(p[0]);
    close(p[1]);
}

TEST(timers_fire_in_deadline_order_ties_fifo)
{
    tern_clock *clk;
    tern_loop *loop = vloop(&clk);
    struct trace tr = {.loop = loop};
    /* deadlines in ms, in start order; ties must keep start order */
    static const int due[] = {30, 10, 20, 10, 0, 30, 10, 20, 0};
    static const int want[] = {4, 8, 1, 3, 6, 2, 7, 0, 5};
    struct ttimer tt[9];

    for (int i = 0; i < 9; i++) {
        tt[i].tr = &tr;
        tt[i].id = i;
        CHECK_OK(tern_timer_init(loop, &tt[i].t));
        CHECK_OK(tern_timer_start(&tt[i].t, trace_cb, &tt[i], (uint64_t)due[i] * MS, 0));
    }
    uint64_t d;
    CHECK_OK(tern_loop_next_deadline(loop, &d));
    CHECK_EQ_U64(d, 0);
    CHECK_EQ_INT(tern_loop_alive(loop), 9);
    CHECK_OK(tern_loop_run(loop, TERN_RUN_DEFAULT));
    CHECK_EQ_INT(tr.n, 9);
    for (int i = 0; i < 9; i++) {
        CHECK_EQ_INT(tr.ids[i], want[i]);
        CHECK_EQ_U64(tr.at[i], (uint64_t)due[want[i]] * MS);
        CHECK_EQ_INT(tern_timer_is_active(&tt[i].t), 0);
    }
    CHECK_EQ_U64(tern_loop_now(loop), 30 * MS);
    vloop_close(loop, clk);
}

TEST(restart_moves_timer_behind_equal_deadlines)
{
    tern_clock *clk;
    tern_loop *loop = vloop(&clk);
    struct trace tr = {.loop = loop};
    struct ttimer tt[3];

    for (int i = 0; i < 3; i++) {
        tt[i].tr = &tr;
        tt[i].id = i;
        CHECK_OK(tern_timer_init(loop, &tt[i].t));
        CHECK_OK(tern_timer_start(&tt[i].t, trace_cb, &tt[i], 5 * SEC, 0));
    }
    /* Restart 0 at the same deadline: it now queues after 1 and 2. */
    CHECK_OK(tern_timer_start(&tt[0].t, trace_cb, &tt[0], 5 * SEC, 0));
    /* Move 2 earlier, then 1 later: O(log n) in place, both directions. */
    CHECK_OK(tern_timer_start_at(&tt[2].t, trace_cb, &tt[2], 1 * SEC, 0));
    CHECK_OK(tern_timer_start(&tt[1].t, trace_cb, &tt[1], 9 * SEC, 0));
    CHECK_EQ_U64(tern_timer_deadline(&tt[1].t), 9 * SEC);
    CHECK_EQ_INT(tern_loop_alive(loop), 3);
    CHECK_OK(tern_loop_run(loop, TERN_RUN_DEFAULT));
    CHECK_EQ_INT(tr.n, 3);
    CHECK_EQ_INT(tr.ids[0], 2);
    CHECK_EQ_INT(tr.ids[1], 0);
    CHECK_EQ_INT(tr.ids[2], 1);
    CHECK_EQ_U64(tr.at[0], 1 * SEC);
    CHECK_EQ_U64(tr.at[1], 5 * SEC);
    CHECK_EQ_U64(tr.at[2], 9 * SEC);
    vloop_close(loop, clk);
}

struct rep {
    tern_loop *loop;
    uint64_t at[16];
    int n, stop_after;
};

static void rep_cb(tern_timer *t, void *arg)
{
    struct rep *r = arg;
    /* Re-armed before the callback runs, so it is active here. */
    CHECK_EQ_INT(tern_timer_is_active(t), 1);
    r->at[r->n++] = tern_loop_now(r->loop);
    if (r->n == r->stop_after)
        CHECK_OK(tern_timer_stop(t));
}

TEST(repeat_timer_keeps_phase_and_stops_from_callback)
{
    tern_clock *clk;
    tern_loop *loop = vloop(&clk);
    struct rep r = {.loop = loop, .stop_after = 4};
    tern_timer t;

    CHECK_OK(tern_timer_init(loop, &t));
    CHECK_OK(tern_timer_start(&t, rep_cb, &r, 2 * SEC, 5 * SEC));
    CHECK_OK(tern_loop_run(loop, TERN_RUN_DEFAULT));
    CHECK_EQ_INT(r.n, 4);
    for (int i = 0; i < 4; i++)
        CHECK_EQ_U64(r.at[i], 2 * SEC + (uint64_t)i * 5 * SEC);
    CHECK_EQ_INT(tern_timer_is_active(&t), 0);
    CHECK_EQ_U64(tern_loop_now(loop), 17 * SEC);
    vloop_close(loop, clk);
}

TEST(repeat_timer_skips_ticks_missed_in_a_stall)
{
    tern_clock *clk;
    tern_loop *loop = vloop(&clk);
    struct rep r = {.loop = loop, .stop_after = 2};
    tern_timer t;

    CHECK_OK(tern_timer_init(loop, &t));
    CHECK_OK(tern_timer_start(&t, rep_cb, &r, 1 * SEC, 1 * SEC));
    /* Someone else moves the clock 10.5 s: one late firing, not ten. */
    CHECK_OK(tern_clock_advance(clk, 10500 * MS));
    CHECK_OK(tern_loop_run(loop, TERN_RUN_DEFAULT));
    CHECK_EQ_INT(r.n, 2);
    CHECK_EQ_U64(r.at[0], 10500 * MS);
    CHECK_EQ_U64(r.at[1], 11500 * MS);
    vloop_close(loop, clk);
}

/* Callbacks that rearrange other timers mid-pass. */
struct juggle {
    tern_loop *loop;
    tern_timer a, b, c, self_free_owner;
    tern_timer *heap_timer;
    int fired_a, fired_b, fired_c, fired_heap, zero_restarts;
    uint64_t c_at;
};

static void juggle_b(tern_timer *t, void *arg)
{
    struct juggle *j = arg;
    j->fired_b++;
}

static void juggle_c(tern_timer *t, void *arg)
{
    struct juggle *j = arg;
    j->fired_c++;
    j->c_at = tern_loop_now(j->loop);
}

static void juggle_a(tern_timer *t, void *arg)
{
    struct juggle *j = arg;
    j->fired_a++;
    /* b is due at this very moment, behind a: stopping it must stick. */
    CHECK_EQ_INT(tern_timer_is_active(&j->b), 1);
    CHECK_OK(tern_timer_stop(&j->b));
    /* Push c (also due now) 3 s into the future. */
    CHECK_OK(tern_timer_start(&j->c, juggle_c, j, 3 * SEC, 0));
}

static void heap_timer_cb(tern_timer *t, void *arg)
{
    struct juggle *j = arg;
    j->fired_heap++;
    free(t); /* frees its own handle; ASan would catch a later touch */
}

static void zero_restart_cb(tern_timer *t, void *arg)
{
    struct juggle *j = arg;
    /* Restarting itself with timeout 0 must wait for the next pass. */
    if (++j->zero_restarts < 5)
        CHECK_OK(tern_timer_start(t, zero_restart_cb, j, 0, 0));
}

TEST(callbacks_stop_restart_and_free_timers)
{
    tern_clock *clk;
    tern_loop *loop = vloop(&clk);
    struct juggle j = {.loop = loop};

    CHECK_OK(tern_timer_init(loop, &j.a));
    CHECK_OK(tern_timer_init(loop, &j.b));
    CHECK_OK(tern_timer_init(loop, &j.c));
    CHECK_OK(tern_timer_start(&j.a, juggle_a, &j, 1 * SEC, 0));
    CHECK_OK(tern_timer_start(&j.b, juggle_b, &j, 1 * SEC, 0));
    CHECK_OK(tern_timer_start(&j.c, juggle_c, &j, 1 * SEC, 0));
    j.heap_timer = malloc(sizeof *j.heap_timer);
    CHECK(j.heap_timer);
    CHECK_OK(tern_timer_init(loop, j.heap_timer));
    CHECK_OK(tern_timer_start(j.heap_timer, heap_timer_cb, &j, 1 * SEC, 0));
    CHECK_OK(tern_timer_init(loop, &j.self_free_owner));
    CHECK_OK(tern_timer_start(&j.self_free_owner, zero_restart_cb, &j, 2 * SEC, 0));

    /* One ONCE iteration jumps to 1 s and fires only what was due then. */
    CHECK_OK(tern_loop_run(loop, TERN_RUN_ONCE));
    CHECK_EQ_U64(tern_loop_now(loop), 1 * SEC);
    CHECK_EQ_INT(j.fired_a, 1);
    CHECK_EQ_INT(j.fired_b, 0);
    CHECK_EQ_INT(j.fired_c, 0);
    CHECK_EQ_INT(j.fired_heap, 1);

    /* A timeout-0 restart waits for the next timer pass: one firing per pass. */
    CHECK_OK(tern_loop_run(loop, TERN_RUN_ONCE));
    CHECK_EQ_U64(tern_loop_now(loop), 2 * SEC);
    CHECK_EQ_INT(j.zero_restarts, 1);
    CHECK_OK(tern_loop_run(loop, TERN_RUN_NOWAIT));
    CHECK_EQ_INT(j.zero_restarts, 2);

    CHECK_OK(tern_loop_run(loop, TERN_RUN_DEFAULT));
    CHECK_EQ_INT(j.zero_restarts, 5);
    CHECK_EQ_INT(j.fired_b, 0);
    CHECK_EQ_INT(j.fired_c, 1);
    CHECK_EQ_U64(j.c_at, 4 * SEC);
    CHECK_EQ_U64(tern_loop_now(loop), 4 * SEC);
    vloop_close(loop, clk);
}

/* 100,000 timers: 50,000 stopped, the rest must fire in (deadline, start) order. */
struct big {
    tern_timer t;
    uint32_t id;
    uint32_t due_ms;
};

struct big_ctx {
    tern_loop *loop;
    uint32_t *order;
    size_t n;
};

static void big_cb(tern_timer *t, void *arg)
{
    struct big_ctx *c = arg;
    struct big *b = (struct big *)t;
    CHECK_EQ_U64(tern_loop_now(c->loop), (uint64_t)b->due_ms * MS);
    c->order[c->n++] = b->id;
}

TEST(hundred_thousand_timers)
{
    enum { N = 100000 };
    tern_clock *clk;
    tern_loop *loop = vloop(&clk);
    struct big *b = calloc(N, sizeof *b);
    struct big_ctx c = {.loop = loop, .order = calloc(N, sizeof(uint32_t))};
    uint64_t x = tt_seed() | 1;

    CHECK(b && c.order);
    uint64_t t0 = mono_ns();
    for (uint32_t i = 0; i < N; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        b[i].id = i;
        b[i].due_ms = (uint32_t)(x % 5000); /* ~20 timers per deadline: many ties */
        CHECK_OK(tern_timer_init(loop, &b[i].t));
        CHECK_OK(tern_timer_start(&b[i].t, big_cb, &c, (uint64_t)b[i].due_ms * MS, 0));
    }
    for (uint32_t i = 0; i < N; i += 2)
        CHECK_OK(tern_timer_stop(&b[i].t));
    CHECK_EQ_INT(tern_loop_alive(loop), N / 2);
    CHECK_OK(tern_loop_run(loop, TERN_RUN_DEFAULT));
    uint64_t wall = mono_ns() - t0;

    CHECK_EQ_INT(c.n, N / 2);
    for (size_t k = 0; k < c.n; k++) {
        struct big *cur = &b[c.order[k]];
        CHECK_MSG(cur->id % 2 == 1, "stopped timer %u fired", cur->id);
        if (k > 0) {
            struct big *prev = &b[c.order[k - 1]];
            CHECK_MSG(prev->due_ms < cur->due_ms ||
                          (prev->due_ms == cur->due_ms && prev->id < cur->id),
                      "timer %u (%u ms) fired after %u (%u ms)", cur->id, cur->due_ms,
                      prev->id, prev->due_ms);
        }
    }
    CHECK_MSG(wall < 2 * SEC, "100k timers took %" PRIu64 " ms", wall / MS);
    fprintf(stderr, "# 100k timers: %" PRIu64 " ms wall, %" PRIu64 " loop iterations\n",
            wall / MS, tern_loop_iterations(loop));
    free(c.order);
    free(b);
    vloop_close(loop, clk);
}

/* Deferred calls log their id; one may queue another. */
struct drec {
    int log[2048];
    int n;
};

struct ditem {
    struct drec *rec;
    int id;
    struct ditem *requeue;
};

static void ditem_cb(tern_loop *loop, void *arg)
{
    struct ditem *it = arg;
    CHECK(it->rec->n < 2048);
    it->rec->log[it->rec->n++] = it->id;
    if (it->requeue)
        CHECK_OK(tern_loop_defer(loop, ditem_cb, it->requeue));
}

TEST(deferred_work_fifo_next_iteration_and_cancel)
{
    tern_loop *loop;
    struct drec rec = {.n = 0};
    struct ditem it[6];

    for (int i = 0; i < 6; i++)
        it[i] = (struct ditem){.rec = &rec, .id = i};
    it[1].requeue = &it[5];
    CHECK_OK(tern_loop_new(NULL, &loop));
    for (int i = 0; i < 5; i++)
        CHECK_OK(tern_loop_defer(loop, ditem_cb, &it[i]));
    CHECK_OK(tern_loop_defer(loop, ditem_cb, &it[3])); /* a duplicate */
    CHECK_EQ_INT(tern_loop_alive(loop), 6);
    CHECK_OK(tern_loop_defer_cancel(loop, ditem_cb, &it[3])); /* both copies */
    CHECK_RC(tern_loop_defer_cancel(loop, ditem_cb, &it[3]), TERN_ENOTFOUND);
    CHECK_RC(tern_loop_defer_cancel(loop, nop_defer, &it[0]), TERN_ENOTFOUND);
    CHECK_EQ_INT(tern_loop_alive(loop), 4);
    CHECK_RC(tern_loop_defer(loop, NULL, NULL), -EINVAL);

    CHECK_OK(tern_loop_run(loop, TERN_RUN_NOWAIT));
    CHECK_EQ_INT(rec.n, 4);
    CHECK_EQ_INT(rec.log[0], 0);
    CHECK_EQ_INT(rec.log[1], 1);
    CHECK_EQ_INT(rec.log[2], 2);
    CHECK_EQ_INT(rec.log[3], 4);
    /* id 5, queued by id 1 during the pass, waits for the next iteration. */
    CHECK_EQ_INT(tern_loop_alive(loop), 1);
    CHECK_OK(tern_loop_run(loop, TERN_RUN_DEFAULT));
    CHECK_EQ_INT(rec.n, 5);
    CHECK_EQ_INT(rec.log[4], 5);
    CHECK_OK(tern_loop_close(loop));
}

TEST(deferred_ring_wraps_and_grows_in_order)
{
    enum { N = 1500 };
    tern_loop *loop;
    static struct drec rec;
    static struct ditem it[N];

    rec.n = 0;
    for (int i = 0; i < N; i++)
        it[i] = (struct ditem){.rec = &rec, .id = i};
    CHECK_OK(tern_loop_new(NULL, &loop));
    /* Leave the ring's head mid-array so the next growth must unwrap it. */
    for (int i = 0; i < 10; i++)
        CHECK_OK(tern_loop_defer(loop, ditem_cb, &it[i]));
    CHECK_OK(tern_loop_run(loop, TERN_RUN_NOWAIT));
    for (int i = 10; i < N; i++)
        CHECK_OK(tern_loop_defer(loop, ditem_cb, &it[i]));
    CHECK_OK(tern_loop_defer_cancel(loop, ditem_cb, &it[700]));
    CHECK_EQ_INT(tern_loop_alive(loop), N - 11);
    CHECK_OK(tern_loop_run(loop, TERN_RUN_NOWAIT));
    CHECK_EQ_INT(rec.n, N - 1);
    for (int i = 0, k = 0; i < N; i++) {
        if (i == 700)
            continue;
        CHECK_EQ_INT(rec.log[k], i);
        k++;
    }
    CHECK_OK(tern_loop_close(loop));
}

/* fd watchers */
struct iolog {
    int calls;
    unsigned last;
    int last_fd;
    char buf[16];
    int stop_in_cb;
};

static void io_cb(tern_io *w, int fd, unsigned events, void *arg)
{
    struct iolog *l = arg;
    l->calls++;
    l->last = events;
    l->last_fd = fd;
    if (l->stop_in_cb)
        CHECK_OK(tern_io_stop(w));
}

TEST(io_pipe_read_readiness_and_removal)
{
    tern_loop *loop;
    tern_io w;
    struct iolog l = {0};
    int p[2];

    CHECK_OK(pipe(p));
    CHECK_OK(tern_loop_new(NULL, &loop));
    CHECK_RC(tern_io_init(loop, &w, -1, io_cb, &l), -EINVAL);
    CHECK_OK(tern_io_init(loop, &w, p[0], io_cb, &l));
    CHECK_OK(tern_io_start(&w, TERN_IO_READ));
    CHECK_EQ_INT(tern_io_is_active(&w), 1);
    CHECK_RC(tern_io_start(&w, 0x80), -EINVAL);

    CHECK_OK(tern_loop_run(loop, TERN_RUN_NOWAIT));
    CHECK_EQ_INT(l.calls, 0);
    CHECK_EQ_INT(write(p[1], "x", 1), 1);
    CHECK_OK(tern_loop_run(loop, TERN_RUN_ONCE));
    CHECK_EQ_INT(l.calls, 1);
    CHECK_EQ_INT(l.last, TERN_IO_READ);
    CHECK_EQ_INT(l.last_fd, p[0]);
    /* Level-triggered: still readable, reported again. */
    CHECK_OK(tern_loop_run(loop, TERN_RUN_NOWAIT));
    CHECK_EQ_INT(l.calls, 2);
    CHECK_EQ_INT(read(p[0], l.buf, sizeof l.buf), 1);
    CHECK_OK(tern_loop_run(loop, TERN_RUN_NOWAIT));
    CHECK_EQ_INT(l.calls, 2);

    /* Removed: new data goes unseen. */
    CHECK_OK(tern_io_stop(&w));
    CHECK_OK(tern_io_stop(&w));
    CHECK_EQ_INT(tern_io_is_active(&w), 0);
    CHECK_EQ_INT(write(p[1], "y", 1), 1);
    CHECK_OK(tern_loop_run(loop, TERN_RUN_NOWAIT));
    CHECK_EQ_INT(l.calls, 2);

    /* Writer closes: the read end reports HUP (with the unread byte). */
    CHECK_OK(tern_io_start(&w, TERN_IO_READ));
    close(p[1]);
    l.stop_in_cb = 1;
    CHECK_OK(tern_loop_run(loop, TERN_RUN_DEFAULT)); /* ends: the cb stopped w */
    CHECK_EQ_INT(l.calls, 3);
    CHECK_EQ_INT(l.last, TERN_IO_READ | TERN_IO_HUP);
    CHECK_EQ_INT(tern_loop_alive(loop), 0);
    CHECK_OK(tern_loop_close(loop));
    close(p[0]);
}

TEST(io_socketpair_write_then_read)
{
    tern_loop *loop;
    tern_io w, dup;
    struct iolog l = {0};
    int sv[2];

    CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv));
    CHECK_OK(tern_loop_new(NULL, &loop));
    CHECK_OK(tern_io_init(loop, &w, sv[0], io_cb, &l));
    CHECK_OK(tern_io_start(&w, TERN_IO_READ | TERN_IO_WRITE));
    CHECK_OK(tern_loop_run(loop, TERN_RUN_ONCE));
    CHECK_EQ_INT(l.calls, 1);
    CHECK_EQ_INT(l.last, TERN_IO_WRITE);

    /* One watcher per fd. */
    CHECK_OK(tern_io_init(loop, &dup, sv[0], io_cb, &l));
    CHECK_RC(tern_io_start(&dup, TERN_IO_READ), -EEXIST);
    CHECK_EQ_INT(tern_io_is_active(&dup), 0);

    /* Modify interest to read only: idle until the peer writes. */
    CHECK_OK(tern_io_start(&w, TERN_IO_READ));
    CHECK_EQ_INT(tern_loop_alive(loop), 1);
    CHECK_OK(tern_loop_run(loop, TERN_RUN_NOWAIT));
    CHECK_EQ_INT(l.calls, 1);
    CHECK_EQ_INT(write(sv[1], "hello", 5), 5);
    CHECK_OK(tern_loop_run(loop, TERN_RUN_ONCE));
    CHECK_EQ_INT(l.calls, 2);
    CHECK_EQ_INT(l.last, TERN_IO_READ);
    CHECK_EQ_INT(read(sv[0], l.buf, sizeof l.buf), 5);
    CHECK_EQ_MEM(l.buf, "hello", 5);

    /* Write interest back on: writable again. */
    CHECK_OK(tern_io_start(&w, TERN_IO_WRITE));
    CHECK_OK(tern_loop_run(loop, TERN_RUN_ONCE));
    CHECK_EQ_INT(l.calls, 3);
    CHECK_EQ_INT(l.last, TERN_IO_WRITE);
    CHECK_OK(tern_io_stop(&w));
    CHECK_OK(tern_loop_close(loop));
    close(sv[0]);
    close(sv[1]);
}

TEST(io_hup_interest_hears_peer_close_without_reading)
{
    /* A socket not read (TERN_IO_HUP only) learns that its peer closed its
     * side, data unread or not; without the interest it hears nothing. */
    tern_loop *loop;
    tern_io w;
    struct iolog l = {0};
    int sv[2];
    CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv));
    CHECK_OK(tern_loop_new(NULL, &loop));
    CHECK_OK(tern_io_init(loop, &w, sv[0], io_cb, &l));
    CHECK_OK(tern_io_start(&w, 0));
    CHECK_EQ_INT(write(sv[1], "data", 4), 4);
    CHECK_OK(shutdown(sv[1], SHUT_WR));
    CHECK_OK(tern_loop_run(loop, TERN_RUN_NOWAIT));
    CHECK_EQ_INT(l.calls, 0);
    CHECK_OK(tern_io_start(&w, TERN_IO_HUP));
    CHECK_OK(tern_loop_run(loop, TERN_RUN_NOWAIT));
    CHECK_EQ_INT(l.calls, 1);
    CHECK_EQ_INT(l.last, TERN_IO_HUP);
    CHECK_OK(tern_io_stop(&w));
    CHECK_OK(tern_loop_close(loop));
    close(sv[0]);
    close(sv[1]);
}

/* Two ready watchers in one batch; whichever runs first stops and frees the other. */
struct pair_w {
    tern_io io;
    struct pair_w **other;
    int *fired;
};

static void pair_cb(tern_io *w, int fd, unsigned events, void *arg)
{
    struct pair_w *me = arg;
    (*me->fired)++;
    if (*me->other) {
        CHECK_OK(tern_io_stop(&(*me->other)->io));
        free(*me->other);
        *me->other = NULL;
    }
}

TEST(io_callback_stops_and_frees_another_ready_watcher)
{
    tern_loop *loop;
    int p1[2], p2[2], fired = 0;
    struct pair_w *a = malloc(sizeof *a), *b = malloc(sizeof *b);

    CHECK(a && b);
    CHECK_OK(pipe(p1));
    CHECK_OK(pipe(p2));
    CHECK_OK(tern_loop_new(NULL, &loop));
    a->other = &b;
    a->fired = &fired;
    b->other = &a;
    b->fired = &fired;
    CHECK_OK(tern_io_init(loop, &a->io, p1[0], pair_cb, a));
    CHECK_OK(tern_io_init(loop, &b->io, p2[0], pair_cb, b));
    CHECK_OK(tern_io_start(&a->io, TERN_IO_READ));
    CHECK_OK(tern_io_start(&b->io, TERN_IO_READ));
    CHECK_EQ_INT(write(p1[1], "x", 1), 1);
    CHECK_EQ_INT(write(p2[1], "x", 1), 1);
    CHECK_OK(tern_loop_run(loop, TERN_RUN_NOWAIT));
    /* The freed watcher's event, fetched in the same batch, was dropped. */
    CHECK_EQ_INT(fired, 1);
    CHECK((a == NULL) != (b == NULL));
    struct pair_w *left = a ? a : b;
    CHECK_OK(tern_io_stop(&left->io));
    free(left);
    CHECK_OK(tern_loop_close(loop));
    close(p1[0]);
    close(p1[1]);
    close(p2[0]);
    close(p2[1]);
}

/* Cross-thread wakeups */
struct athread {
    tern_async a;
    tern_loop *loop;
    int calls;
    int want;
    int sent;
    uint64_t sent_at;
};

static void *sender(void *arg)
{
    struct athread *s = arg;
    struct timespec nap = {0, 30 * 1000000};
    for (int i = 0; i < s->want; i++) {
        nanosleep(&nap, NULL);
        __atomic_store_n(&s->sent, i + 1, __ATOMIC_SEQ_CST);
        if (tern_async_send(&s->a) != 0)
            abort();
    }
    return NULL;
}

static void async_cb(tern_async *a, void *arg)
{
    struct athread *s = arg;
    CHECK(a == &s->a);
    s->calls++;
    if (__atomic_load_n(&s->sent, __ATOMIC_SEQ_CST) == s->want)
        CHECK_OK(tern_async_stop(a));
}

TEST(async_wakeup_from_another_thread)
{
    struct athread s = {.want = 3};
    pthread_t th;

    CHECK_OK(tern_loop_new(NULL, &s.loop));
    CHECK_OK(tern_async_start(s.loop, &s.a, async_cb, &s));
    CHECK_RC(tern_async_start(s.loop, &s.a, NULL, &s), -EINVAL);
    CHECK_OK(pthread_create(&th, NULL, sender, &s));
    /* Only the async handle keeps the loop alive; it blocks, then wakes. */
    uint64_t cpu0 = cpu_ns();
    CHECK_OK(tern_loop_run(s.loop, TERN_RUN_DEFAULT));
    uint64_t cpu = cpu_ns() - cpu0;
    CHECK_OK(pthread_join(th, NULL));
    CHECK_EQ_INT(__atomic_load_n(&s.sent, __ATOMIC_SEQ_CST), 3);
    CHECK_MSG(s.calls >= 1 && s.calls <= 3, "calls %d", s.calls);
    CHECK_MSG(cpu < 30 * MS, "loop burned %" PRIu64 " ms CPU waiting", cpu / MS);
    CHECK_EQ_INT(tern_loop_alive(s.loop), 0);
    CHECK_OK(tern_loop_close(s.loop));
}

static void *waker(void *arg)
{
    struct timespec nap = {0, 50 * 1000000};
    nanosleep(&nap, NULL);
    if (tern_loop_wake(arg) != 0)
        abort();
    return NULL;
}

TEST(loop_wake_unblocks_once)
{
    tern_loop *loop;
    tern_io w;
    struct iolog l = {0};
    int p[2];
    pthread_t th;

    CHECK_OK(pipe(p));
    CHECK_OK(tern_loop_new(NULL, &loop));
    CHECK_OK(tern_io_init(loop, &w, p[0], io_cb, &l));
    CHECK_OK(tern_io_start(&w, TERN_IO_READ)); /* never ready: ONCE would block forever */
    CHECK_OK(pthread_create(&th, NULL, waker, loop));
    uint64_t t0 = mono_ns();
    CHECK_OK(tern_loop_run(loop, TERN_RUN_ONCE));
    uint64_t dt = mono_ns() - t0;
    CHECK_OK(pthread_join(th, NULL));
    CHECK_MSG(dt >= 40 * MS && dt < 5 * SEC, "ONCE returned after %" PRIu64 " ms",
              dt / MS);
    CHECK_EQ_INT(l.calls, 0);
    CHECK_OK(tern_io_stop(&w));
    CHECK_OK(tern_loop_close(loop));
    close(p[0]);
    close(p[1]);
}

/* Real clock */
struct early {
    uint64_t started, fired;
};

static void early_cb(tern_timer *t, void *arg)
{
    ((struct early *)arg)->fired = mono_ns();
}

TEST(real_timer_never_fires_early)
{
    static const uint64_t timeouts[] = {0,      1,       250000, 999999,
                                        1 * MS, 1500000, 7 * MS, 20 * MS};
    tern_loop *loop;

    CHECK_OK(tern_loop_new(NULL, &loop));
    for (size_t i = 0; i < sizeof timeouts / sizeof timeouts[0]; i++) {
        struct early e = {0};
        tern_timer t;
        CHECK_OK(tern_timer_init(loop, &t));
        e.started = mono_ns();
        CHECK_OK(tern_timer_start(&t, early_cb, &e, timeouts[i], 0));
        CHECK_OK(tern_loop_run(loop, TERN_RUN_DEFAULT));
        CHECK(e.fired != 0);
        CHECK_MSG(e.fired - e.started >= timeouts[i],
                  "timeout %" PRIu64 " ns fired after %" PRIu64, timeouts[i],
                  e.fired - e.started);
        CHECK_MSG(e.fired - e.started < timeouts[i] + 500 * MS,
                  "timer %" PRIu64 " ns very late", timeouts[i]);
    }
    CHECK_OK(tern_loop_close(loop));
}

TEST(real_wait_does_not_spin)
{
    tern_loop *loop;
    tern_timer t;
    struct early e = {0};

    CHECK_OK(tern_loop_new(NULL, &loop));
    CHECK_OK(tern_timer_init(loop, &t));
    uint64_t it0 = tern_loop_iterations(loop), cpu0 = cpu_ns();
    e.started = mono_ns();
    CHECK_OK(tern_timer_start(&t, early_cb, &e, 200 * MS, 0));
    CHECK_OK(tern_loop_run(loop, TERN_RUN_DEFAULT));
    uint64_t cpu = cpu_ns() - cpu0, iters = tern_loop_iterations(loop) - it0;
    CHECK(e.fired - e.started >= 200 * MS);
    /* One sleep, maybe one more if the kernel woke us a hair early. */
    CHECK_MSG(iters <= 3, "%" PRIu64 " iterations for one 200 ms wait", iters);
    CHECK_MSG(cpu < 20 * MS, "%" PRIu64 " us CPU for a 200 ms wait", cpu / 1000);
    CHECK_OK(tern_loop_close(loop));
}

/* Virtual clock */
TEST(virtual_ten_hours_pass_instantly)
{
    const uint64_t start = UINT64_C(762525296789); /* 2024-02-29T12:34:56.789Z */
    const uint64_t ten_h = UINT64_C(10) * 3600 * SEC;
    tern_clock *clk;
    tern_loop *loop;
    struct trace tr;
    struct ttimer tt = {.tr = &tr, .id = 1};
    char buf[TERN_DTN_ISO_BUFSZ];

    CHECK_OK(tern_clock_virtual_new(start, &clk));
    CHECK_OK(tern_loop_new(clk, &loop));
    tr = (struct trace){.loop = loop};
    CHECK_OK(tern_timer_init(loop, &tt.t));
    CHECK_OK(tern_timer_start(&tt.t, trace_cb, &tt, ten_h, 0));
    uint64_t w0 = mono_ns();
    CHECK_OK(tern_loop_run(loop, TERN_RUN_DEFAULT));
    uint64_t wall = mono_ns() - w0;
    CHECK_EQ_INT(tr.n, 1);
    CHECK_EQ_U64(tr.at[0], ten_h);
    CHECK_EQ_U64(tern_clock_now_ns(clk), ten_h);
    CHECK_EQ_U64(tern_clock_dtn_ms(clk), start + 36000000);
    CHECK_OK(tern_dtn_format_iso(tern_clock_dtn_ms(clk), buf, sizeof buf));
    CHECK_EQ_STR(buf, "2024-02-29T22:34:56.789Z");
    CHECK_MSG(wall < 100 * MS, "10 virtual hours took %" PRIu64 " us of wall time",
              wall / 1000);
    vloop_close(loop, clk);
}

TEST(virtual_nowait_never_moves_time_once_jumps)
{
    tern_clock *clk;
    tern_loop *loop = vloop(&clk);
    struct trace tr = {.loop = loop};
    struct ttimer a = {.tr = &tr, .id = 1}, b = {.tr = &tr, .id = 2};

    CHECK_OK(tern_timer_init(loop, &a.t));
    CHECK_OK(tern_timer_init(loop, &b.t));
    CHECK_OK(tern_timer_start(&a.t, trace_cb, &a, 60 * SEC, 0));
    CHECK_OK(tern_timer_start(&b.t, trace_cb, &b, 90 * SEC, 0));
    CHECK_OK(tern_loop_run(loop, TERN_RUN_NOWAIT));
    CHECK_EQ_U64(tern_loop_now(loop), 0);
    CHECK_EQ_INT(tr.n, 0);
    CHECK_OK(tern_loop_run(loop, TERN_RUN_ONCE));
    CHECK_EQ_U64(tern_loop_now(loop), 60 * SEC);
    CHECK_EQ_INT(tr.n, 1);
    CHECK_OK(tern_loop_run(loop, TERN_RUN_ONCE));
    CHECK_EQ_U64(tern_loop_now(loop), 90 * SEC);
    CHECK_EQ_INT(tr.n, 2);
    CHECK_EQ_INT(tr.ids[1], 2);
    vloop_close(loop, clk);
}

TEST(once_runs_ready_work_without_waiting)
{
    tern_clock *clk;
    tern_loop *vl = vloop(&clk), *rl;
    struct trace tr = {.loop = vl};
    struct ttimer a = {.tr = &tr, .id = 1}, b = {.tr = &tr, .id = 2};

    /* Virtual: a due timer is the step; the clock does not jump past it too. */
    CHECK_OK(tern_timer_init(vl, &a.t));
    CHECK_OK(tern_timer_init(vl, &b.t));
    CHECK_OK(tern_timer_start(&a.t, trace_cb, &a, 0, 0));
    CHECK_OK(tern_timer_start(&b.t, trace_cb, &b, 60 * SEC, 0));
    CHECK_OK(tern_loop_run(vl, TERN_RUN_ONCE));
    CHECK_EQ_INT(tr.n, 1);
    CHECK_EQ_U64(tern_loop_now(vl), 0);
    CHECK_OK(tern_loop_run(vl, TERN_RUN_ONCE));
    CHECK_EQ_INT(tr.n, 2);
    CHECK_EQ_U64(tern_loop_now(vl), 60 * SEC);
    vloop_close(vl, clk);

    /* Real: ONCE with a due timer returns at once, not at the next deadline. */
    CHECK_OK(tern_loop_new(NULL, &rl));
    tr = (struct trace){.loop = rl};
    CHECK_OK(tern_timer_init(rl, &a.t));
    CHECK_OK(tern_timer_init(rl, &b.t));
    CHECK_OK(tern_timer_start(&a.t, trace_cb, &a, 0, 0));
    CHECK_OK(tern_timer_start(&b.t, trace_cb, &b, 10 * SEC, 0));
    uint64_t t0 = mono_ns();
    CHECK_OK(tern_loop_run(rl, TERN_RUN_ONCE));
    CHECK_EQ_INT(tr.n, 1);
    CHECK_MSG(mono_ns() - t0 < 2 * SEC, "ONCE waited for the next timer");
    CHECK_OK(tern_timer_stop(&b.t));
    CHECK_OK(tern_loop_close(rl));
}

TEST(run_until_forever_without_handles_returns)
{
    tern_clock *clk;
    tern_loop *vl = vloop(&clk), *rl;

    CHECK_OK(tern_loop_run_until(vl, UINT64_MAX));
    CHECK_EQ_U64(tern_loop_now(vl), 0);
    vloop_close(vl, clk);
    CHECK_OK(tern_loop_new(NULL, &rl));
    CHECK_OK(tern_loop_run_until(rl, UINT64_MAX));
    CHECK_OK(tern_loop_close(rl));
}

TEST(virtual_run_until)
{
    tern_clock *clk;
    tern_loop *loop = vloop(&clk);
    struct trace tr = {.loop = loop};
    struct ttimer tt[3];

    for (int i = 0; i < 3; i++) {
        tt[i] = (struct ttimer){.tr = &tr, .id = i};
        CHECK_OK(tern_timer_init(loop, &tt[i].t));
        CHECK_OK(
            tern_timer_start(&tt[i].t, trace_cb, &tt[i], (uint64_t)(i + 1) * SEC, 0));
    }
    /* Inclusive: the timer due exactly at the limit fires. */
    CHECK_OK(tern_loop_run_until(loop, 2 * SEC));
    CHECK_EQ_INT(tr.n, 2);
    CHECK_EQ_U64(tern_loop_now(loop), 2 * SEC);
    CHECK_OK(tern_loop_run_until(loop, 2500 * MS));
    CHECK_EQ_INT(tr.n, 2);
    CHECK_EQ_U64(tern_loop_now(loop), 2500 * MS);
    /* A limit in the past changes nothing. */
    CHECK_OK(tern_loop_run_until(loop, 1 * SEC));
    CHECK_EQ_U64(tern_loop_now(loop), 2500 * MS);
    CHECK_OK(tern_loop_run(loop, TERN_RUN_DEFAULT));
    CHECK_EQ_INT(tr.n, 3);
    CHECK_EQ_U64(tern_loop_now(loop), 3 * SEC);
    /* With nothing scheduled the clock still goes exactly to the limit. */
    CHECK_OK(tern_loop_run_until(loop, 3600 * SEC));
    CHECK_EQ_U64(tern_loop_now(loop), 3600 * SEC);
    vloop_close(loop, clk);
}

struct stamp {
    tern_loop *loop;
    uint64_t at;
};

static void defer_then_stamp(tern_loop *loop, void *arg)
{
    ((struct stamp *)arg)->at = tern_loop_now(loop);
}

static void timer_defers(tern_timer *t, void *arg)
{
    CHECK_OK(tern_loop_defer(((struct stamp *)arg)->loop, defer_then_stamp, arg));
}

TEST(virtual_run_until_drains_work_due_at_limit)
{
    tern_clock *clk;
    tern_loop *loop = vloop(&clk);
    tern_timer t;
    struct stamp st = {.loop = loop};

    CHECK_OK(tern_timer_init(loop, &t));
    CHECK_OK(tern_timer_start(&t, timer_defers, &st, 5 * SEC, 0));
    CHECK_OK(tern_loop_run_until(loop, 5 * SEC));
    CHECK_EQ_U64(st.at, 5 * SEC);
    CHECK_EQ_INT(tern_loop_alive(loop), 0);
    vloop_close(loop, clk);
}

/* A ready fd is served before virtual time jumps. */
struct fd_vs_timer {
    tern_loop *loop;
    uint64_t io_at, timer_at;
    int order, io_seen, timer_seen;
};

static void fvt_io(tern_io *w, int fd, unsigned events, void *arg)
{
    struct fd_vs_timer *f = arg;
    char c;
    CHECK_EQ_INT(read(fd, &c, 1), 1);
    f->io_at = tern_loop_now(f->loop);
    f->io_seen = ++f->order;
    CHECK_OK(tern_io_stop(w));
}

static void fvt_timer(tern_timer *t, void *arg)
{
    struct fd_vs_timer *f = arg;
    f->timer_at = tern_loop_now(f->loop);
    f->timer_seen = ++f->order;
}

TEST(virtual_loop_polls_fds_before_jumping)
{
    tern_clock *clk;
    tern_loop *loop = vloop(&clk);
    struct fd_vs_timer f = {.loop = loop};
    tern_io w;
    tern_timer t;
    int p[2];

    CHECK_OK(pipe(p));
    CHECK_OK(tern_io_init(loop, &w, p[0], fvt_io, &f));
    CHECK_OK(tern_io_start(&w, TERN_IO_READ));
    CHECK_OK(tern_timer_init(loop, &t));
    CHECK_OK(tern_timer_start(&t, fvt_timer, &f, 3600 * SEC, 0));
    CHECK_EQ_INT(write(p[1], "z", 1), 1);
    CHECK_OK(tern_loop_run(loop, TERN_RUN_ONCE));
    CHECK_EQ_INT(f.io_seen, 1);
    CHECK_EQ_INT(f.timer_seen, 0);
    CHECK_EQ_U64(f.io_at, 0);
    CHECK_EQ_U64(tern_loop_now(loop), 0);
    CHECK_OK(tern_loop_run(loop, TERN_RUN_DEFAULT));
    CHECK_EQ_INT(f.timer_seen, 2);
    CHECK_EQ_U64(f.timer_at, 3600 * SEC);
    vloop_close(loop, clk);
    close(p[0]);
    close(p[1]);
}

/* stop, nesting and close from callbacks */
struct stopper {
    tern_loop *loop;
    int fired;
};

static void stop_cb(tern_timer *t, void *arg)
{
    struct stopper *s = arg;
    s->fired++;
    CHECK_RC(tern_loop_run(s->loop, TERN_RUN_NOWAIT), TERN_ESTATE);
    CHECK_RC(tern_loop_run_until(s->loop, 0), TERN_ESTATE);
    CHECK_RC(tern_loop_close(s->loop), TERN_ESTATE);
    tern_loop_stop(s->loop);
}

TEST(stop_nested_run_and_close_from_callback)
{
    tern_clock *clk;
    tern_loop *loop = vloop(&clk);
    struct stopper s = {.loop = loop};
    tern_timer t;

    CHECK_OK(tern_timer_init(loop, &t));
    CHECK_OK(tern_timer_start(&t, stop_cb, &s, 1 * SEC, 1 * SEC));
    CHECK_OK(tern_loop_run(loop, TERN_RUN_DEFAULT));
    CHECK_EQ_INT(s.fired, 1);
    CHECK_EQ_INT(tern_timer_is_active(&t), 1); /* the repeat is still armed */
    CHECK_OK(tern_loop_run_until(loop, 10 * SEC));
    CHECK_EQ_INT(s.fired, 2); /* stopped again, at 2 s */
    CHECK_EQ_U64(tern_loop_now(loop), 2 * SEC);
    CHECK_OK(tern_timer_stop(&t));
    vloop_close(loop, clk);
}

TEST(two_virtual_loops_are_independent)
{
    tern_clock *c1, *c2;
    tern_loop *l1 = vloop(&c1), *l2 = vloop(&c2);
    tern_timer t1, t2;

    CHECK_OK(tern_timer_init(l1, &t1));
    CHECK_OK(tern_timer_init(l2, &t2));
    CHECK_OK(tern_timer_start(&t1, nop_timer, NULL, 5 * SEC, 0));
    CHECK_OK(tern_timer_start(&t2, nop_timer, NULL, 7 * SEC, 0));
    CHECK_OK(tern_loop_run(l1, TERN_RUN_DEFAULT));
    CHECK_EQ_U64(tern_loop_now(l1), 5 * SEC);
    CHECK_EQ_U64(tern_loop_now(l2), 0);
    CHECK_EQ_INT(tern_timer_is_active(&t2), 1);
    CHECK_OK(tern_loop_run(l2, TERN_RUN_DEFAULT));
    CHECK_EQ_U64(tern_loop_now(l2), 7 * SEC);
    vloop_close(l1, c1);
    vloop_close(l2, c2);
}

TEST(timer_deadline_saturates)
{
    tern_clock *clk;
    tern_loop *loop = vloop(&clk);
    tern_timer t;
    uint64_t d;

    CHECK_OK(tern_clock_advance(clk, 5));
    CHECK_OK(tern_timer_init(loop, &t));
    CHECK_RC(tern_timer_start(&t, NULL, NULL, 1, 0), -EINVAL);
    CHECK_EQ_INT(tern_timer_is_active(&t), 0);
    CHECK_OK(tern_timer_start(&t, nop_timer, NULL, UINT64_MAX, 0));
    CHECK_OK(tern_loop_next_deadline(loop, &d));
    CHECK_EQ_U64(d, UINT64_MAX);
    CHECK_OK(tern_loop_run(loop, TERN_RUN_NOWAIT));
    CHECK_EQ_INT(tern_timer_is_active(&t), 1);
    CHECK_OK(tern_timer_stop(&t));
    vloop_close(loop, clk);
}
