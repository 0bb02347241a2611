/* libFuzzer target: a whole pair of LTP engines on a virtual clock, joined
 * by a fake link the input drives. The decoder fuzzer (fuzz_ltp_seg) cannot
 * find what lives in the engine: the 29-byte checkpoint with offset 2^63 - 1
 * whose import buffer doubled for ever (issue 18 item 1) decodes fine.
 *
 * The input is a small program, one operation after another (the first byte
 * picks the spans' settings):
 *   deliver N segments queued on the link (either way), drop one, duplicate
 *   or corrupt one; inject raw segment bytes from the input into either
 *   engine (as if from the peer); advance the clock by N ms or N s; start
 *   a block (red and green lengths from the input) or an aggregated unit;
 *   take a link down or up; have the receiving client take red parts, hold
 *   them (LTP_HOLD, released later) or have no room (LTP_LATER, retried);
 *   cancel an export; build a data segment or a report from 64-bit fields;
 *   give the spans a new one-way light time (as a contact plan's range does).
 * Every step runs under the tern_fuzz.h watchdog (a step that takes more than
 * a few ms of CPU is a bug; an input with a slow step is run again, and a
 * step slow again aborts, so a busy machine's noise is not reported) and a
 * CPU-time alarm (a step that never returns, as the item 1 hang did, aborts
 * after one second instead of waiting for libFuzzer's -timeout). Checked after each step:
 * what a span's imports hold stays within its cap; and, as long as the input injected or
 * corrupted no segment (the fuzzer could forge a real session's bytes), every red part
 * handed to a client is one of the blocks sent, intact, at most once, and no
 * block is acknowledged before its receiver took it. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "ltp.h"
#include "tern/clock.h"
#include "tern/crc.h"
#include "tern/log.h"
#include "tern_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define QMAX      2048      /* segments the link holds each way */
#define QBYTES    (8 << 20) /* ... and bytes */
#define MAXBLK    64        /* blocks one input may send */
#define BLOCK_MAX (128 << 10)
/* What one input may hand the engines in blocks: a step that sends many
 * megabytes is slow for its bytes, not for a bug the watchdog should see. */
#define BYTES_MAX  (1 << 20)
#define MAX_BLOCK  (256 << 10) /* the spans' limits: small, so they are reached */
#define IMPORT_CAP (384 << 10)

/* The link keeps a segment at most this long (virtual time): a network
 * does not hold a datagram for minutes, and LTP cannot tell a segment of a
 * session it has forgotten (closed_ttl, 60 s) from a new one. */
#define SEG_LIFETIME_NS (10 * 1000000000ull)

struct seg {
    size_t len;
    uint8_t *d;
    uint64_t at; /* when it was sent */
};

struct q {
    struct seg s[QMAX];
    size_t head, n, bytes;
};

struct blk {
    size_t red, green;
    int delivered, done, cancelled, taken;
};

struct world;

/* A red part held (LTP_HOLD, to release) or refused (LTP_LATER, to retry). */
struct pend {
    int side;
    uint64_t peer, session;
    int later;
    int idx; /* the harness block, or -1 */
};

struct side {
    struct world *w;
    int idx;      /* 0: engine 1, 1: engine 2 */
    uint8_t *buf; /* what w_send_buf gave (variant bit 0x80), until its commit */
    size_t buf_len;
};

struct world {
    tern_clock *clk;
    tern_loop *loop;
    ltp_engine *e[2];
    struct side sd[2];
    struct q q[2]; /* q[i]: segments engine i sent, for the other one */
    int mode[2];   /* client answer to red parts: 0 take, 1 hold, 2 no room */
    int tainted;   /* raw or corrupted segments went in: no content checks */
    struct blk b[MAXBLK];
    int nb;
    size_t sent; /* bytes of blocks handed to the engines */
    struct pend pend[256];
    int npend;
    uint8_t *scratch;
    int tx_notify; /* the link tells the engines when segments leave */
    int strict;    /* a slow step aborts (the replay); else it is only noted */
    int slow;
};

/* TERN_FUZZ_TRACE=1: each operation, segment and notice on stderr (to read
 * what a crashing input does). */
static int trace;

static void fail(const char *what)
{
    fprintf(stderr, "fuzz_ltp_engine: %s\n", what);
    abort();
}

static int w_send(void *ctx, uint64_t peer, const uint8_t *seg, size_t len)
{
    (void)peer;
    struct side *sd = ctx;
    struct q *q = &sd->w->q[sd->idx];
    if (q->n == QMAX || q->bytes + len > QBYTES)
        return 0; /* the link drops it */
    uint8_t *d = malloc(len ? len : 1);
    if (!d)
        return -1;
    memcpy(d, seg, len);
    q->s[(q->head + q->n) % QMAX] = (struct seg){len, d, tern_loop_now(sd->w->loop)};
    q->n++;
    q->bytes += len;
    return 0;
}

/* The in-place path (ltp_host.send_buf/send_commit): the engine must write
 * exactly the room it asked for at most, and commit before asking again. */
static uint8_t *w_send_buf(void *ctx, uint64_t peer, size_t len)
{
    (void)peer;
    struct side *sd = ctx;
    if (sd->buf)
        fail("send_buf again before the last one was committed");
    sd->buf = malloc(len ? len : 1);
    sd->buf_len = len;
    return sd->buf;
}

static int w_send_commit(void *ctx, uint64_t peer, uint8_t *seg, size_t len)
{
    struct side *sd = ctx;
    if (seg != sd->buf || len > sd->buf_len)
        fail("send_commit of a segment not where send_buf said, or longer");
    int rc = w_send(ctx, peer, seg, len);
    free(sd->buf);
    sd->buf = NULL;
    return rc;
}

static int q_pop1(struct q *q, struct seg *out)
{
    if (!q->n)
        return 0;
    *out = q->s[q->head];
    q->head = (q->head + 1) % QMAX;
    q->n--;
    q->bytes -= out->len;
    return 1;
}

/* The next segment the link still holds (older ones are lost). A segment
 * taken off the queue has left: its sender hears so if it asked to. */
static int q_pop(struct world *w, int d, struct seg *out)
{
    uint64_t now = tern_loop_now(w->loop);
    while (q_pop1(&w->q[d], out)) {
        if (w->tx_notify && ltp_seg_needs_tx_notice(out->d, out->len))
            ltp_engine_sent(w->e[d], out->d, out->len);
        if (now - out->at <= SEG_LIFETIME_NS)
            return 1;
        free(out->d);
    }
    return 0;
}

/* Harness blocks: [index u32][red length u32][bytes from the index]. */
static void fill(uint8_t *b, size_t len, uint32_t idx)
{
    uint64_t x = idx * 0x9E3779B97F4A7C15ull + 7;
    for (size_t i = 0; i < len; i += 8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        memcpy(b + i, &x, len - i < 8 ? len - i : 8);
    }
    if (len >= 8) {
        uint32_t l = (uint32_t)len;
        memcpy(b, &idx, 4);
        memcpy(b + 4, &l, 4);
    }
}

static void remember(struct world *w, int side, const ltp_notice *n, int later, int idx)
{
    for (int i = 0; i < w->npend; i++)
        if (w->pend[i].side == side && w->pend[i].peer == n->peer &&
            w->pend[i].session == n->session) {
            w->pend[i].later = later;
            w->pend[i].idx = idx;
            return;
        }
    if (w->npend < 256)
        w->pend[w->npend++] = (struct pend){side, n->peer, n->session, later, idx};
}

static int w_notice(void *ctx, const ltp_notice *n)
{
    struct side *sd = ctx;
    struct world *w = sd->w;
    if (trace)
        fprintf(stderr, "  engine %d notice %d peer %llu session %llu len %zu\n",
                sd->idx + 1, n->kind, (unsigned long long)n->peer,
                (unsigned long long)n->session, n->len);
    if (n->kind == LTP_RED_PART) {
        if (n->red_crc_valid && n->red_crc32c != tern_crc32c(0, n->data, n->len))
            fail("the CRC taken on arrival is wrong");
        int mode = w->mode[sd->idx], idx = -1;
        if (mode == 2) {
            remember(w, sd->idx, n, 1, -1);
            return LTP_LATER;
        }
        if (!w->tainted) {
            uint32_t l;
            if (n->len < 8)
                fail("a red part no block sent");
            uint32_t u;
            memcpy(&u, n->data, 4);
            memcpy(&l, n->data + 4, 4);
            if (u >= (uint32_t)w->nb)
                fail("a red part no block sent");
            idx = (int)u;
            if (w->b[idx].red != n->len || l != n->len)
                fail("a red part no block sent");
            fill(w->scratch, n->len, (uint32_t)idx);
            if (memcmp(w->scratch, n->data, n->len) != 0)
                fail("a red part delivered corrupted");
            if (w->b[idx].delivered++)
                fail("a red part delivered twice");
            /* held: taken only once released (no claim before that) */
            w->b[idx].taken = mode != 1;
        }
        if (mode == 1) {
            remember(w, sd->idx, n, 0, idx);
            return LTP_HOLD;
        }
        return 0;
    }
    if (n->kind == LTP_EXPORT_DONE || n->kind == LTP_EXPORT_CANCELLED) {
        struct blk *b = n->user;
        if (!b)
            return 0; /* an aggregated block */
        if (b->done || b->cancelled)
            fail("a second fate for one block");
        if (n->kind == LTP_EXPORT_DONE) {
            b->done = 1;
            if (!w->tainted && b->red && !b->taken)
                fail("a block acknowledged before its receiver took it");
        } else {
            b->cancelled = 1;
        }
    }
    return 0;
}

/* A step that never returns aborts (with the input) after 1 s of CPU. */
static void hang(int sig)
{
    (void)sig;
    static const char msg[] = "fuzz_ltp_engine: a step used 1 s of CPU: it hangs\n";
    ssize_t r = write(2, msg, sizeof msg - 1);
    (void)r;
    abort();
}

static void arm(int on)
{
    struct itimerval it = {{0, 0}, {on ? 1 : 0, 0}};
    setitimer(ITIMER_VIRTUAL, &it, NULL);
}

typedef struct rd {
    const uint8_t *p;
    size_t n;
} rd;

static unsigned get8(rd *r)
{
    if (!r->n)
        return 0;
    r->n--;
    return *r->p++;
}

static unsigned get16(rd *r)
{
    unsigned hi = get8(r);
    return hi << 8 | get8(r);
}

static uint64_t get64(rd *r)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | get8(r);
    return v;
}

static size_t put_sdnv(uint8_t *b, uint64_t v)
{
    uint8_t t[10];
    size_t n = 0;
    do {
        t[n++] = (uint8_t)(v & 0x7f);
        v >>= 7;
    } while (v);
    for (size_t i = 0; i < n; i++)
        b[i] = (uint8_t)(t[n - 1 - i] | (i + 1 < n ? 0x80 : 0));
    return n;
}

/* A segment built from fields in the input, with any 64-bit values (the
 * encoder refuses some of them; the wire does not): a data segment (type
 * 0-7) or a report with up to 4 claims. The session is a real one of the
 * receiving engine's peer when the input says so. */
static size_t field_segment(struct world *w, rd *r, int to, uint8_t *b)
{
    unsigned type = get8(r) & 0x0f;
    uint64_t session = get64(r);
    if (session < 16 && w->nb)
        session = UINT64_C(4010442752) + session; /* near the harness's own */
    size_t n = 0;
    b[n++] = (uint8_t)(type < 8 ? type : LTP_RS);
    n += put_sdnv(b + n, type < 8 ? (uint64_t)(2 - to) : (uint64_t)(to + 1));
    n += put_sdnv(b + n, session);
    b[n++] = 0;
    if (type < 8) {
        uint64_t off = get64(r), len = get64(r);
        size_t have = get16(r) % 2048;
        n += put_sdnv(b + n, 1);
        n += put_sdnv(b + n, off);
        n += put_sdnv(b + n, len);
        if (type >= 1 && type <= 3) {
            n += put_sdnv(b + n, 1 + get8(r));
            n += put_sdnv(b + n, get8(r));
        }
        memset(b + n, 'f', have);
        return n + have;
    }
    uint64_t upper = get64(r), lower = get64(r);
    unsigned nc = get8(r) % 5;
    n += put_sdnv(b + n, get16(r));
    n += put_sdnv(b + n, get8(r));
    n += put_sdnv(b + n, upper);
    n += put_sdnv(b + n, lower);
    n += put_sdnv(b + n, nc);
    for (unsigned i = 0; i < nc; i++) {
        n += put_sdnv(b + n, get64(r));
        n += put_sdnv(b + n, get64(r));
    }
    return n;
}

static void check_caps(struct world *w)
{
    for (int i = 0; i < 2; i++) {
        ltp_span_info in;
        if (ltp_span_info_get(w->e[i], (uint64_t)(2 - i), &in))
            fail("span lost");
        /* a session is refused before it grows past the cap; what one
         * checkpoint's reports add may pass it by a little, until the next */
        if (in.import_bytes > in.max_import_bytes + (1 << 20))
            fail("a span's imports hold more than their cap");
    }
}

/* The watchdog's verdict on a step. A machine shared with other work now and
 * then bills a step more CPU than it used, so a slow step only marks the
 * input; the input is then run again (everything is deterministic on the
 * virtual clock), and a step slow again aborts. */
static void step_done(struct world *w, tern_fuzz_watch *wd, const char *what)
{
    if (w->strict) {
        tern_fuzz_watch_check(wd, what);
        return;
    }
    uint64_t now = tern_fuzz__cpu_ns();
    if (now - wd->t0 > wd->limit_ns)
        w->slow = 1;
    wd->t0 = now;
}

/* Runs the clock ns on, one timer instant at a time: each instant (all the
 * timers due then) is a step for the watchdog. */
static void advance(struct world *w, tern_fuzz_watch *wd, uint64_t ns)
{
    uint64_t end = tern_loop_now(w->loop) + ns, next;
    while (tern_loop_next_deadline(w->loop, &next) == 0 && next < end) {
        tern_loop_run_until(w->loop, next);
        step_done(w, wd, "the timers of one instant");
        arm(1);
    }
    tern_loop_run_until(w->loop, end);
}

/* Runs one input; 1 if a step was slow (never, when strict: it aborts). */
static int run(const uint8_t *data, size_t size, int strict)
{
    static int init;
    static tern_log *lg; /* formats every message, writes none */
    if (!init) {
        init = 1;
        signal(SIGVTALRM, hang);
        trace = getenv("TERN_FUZZ_TRACE") != NULL;
        if (tern_log_open(&lg, "fuzz", NULL, TERN_LOG_TRACE,
                          trace ? TERN_LOG_TO_STDERR : 0))
            abort();
    }
    if (size < 1)
        return 0;
    rd r = {data, size};
    unsigned variant = get8(&r);
    struct world *w = calloc(1, sizeof *w);
    if (!w)
        return 0;
    w->strict = strict;
    w->tx_notify = !!(variant & 0x40);
    w->scratch = malloc(BLOCK_MAX);
    if (!w->scratch || tern_clock_virtual_new(UINT64_C(849312000000), &w->clk) ||
        tern_loop_new(w->clk, &w->loop))
        abort();
    static const size_t segs[] = {200, 1400, 9000, 64000};
    for (int i = 0; i < 2; i++) {
        w->sd[i] = (struct side){w, i, NULL, 0};
        ltp_engine_cfg ec = {.engine_id = (uint64_t)i + 1,
                             .max_retries = 1 + (variant >> 2 & 3),
                             .max_rounds = 1 + (variant >> 4 & 7),
                             .max_block = MAX_BLOCK,
                             .max_import_bytes = IMPORT_CAP};
        ltp_host h = {.ctx = &w->sd[i],
                      .send = w_send,
                      .notice = w_notice,
                      .tx_notify = w->tx_notify};
        if (variant & 0x80) {
            h.send_buf = w_send_buf;
            h.send_commit = w_send_commit;
        }
        if (ltp_engine_new(w->loop, &ec, &h, lg, &w->e[i]))
            abort();
        ltp_span_cfg sc = {.peer = 2 - (uint64_t)i,
                           .max_export = 4,
                           .max_import = 8,
                           .max_seg = segs[variant & 3],
                           .agg_size = 4000,
                           .agg_ms = 10,
                           .owlt_ms = 5,
                           .qtime_ms = 1,
                           .seg_loss_rate = variant & 0x80 ? 0.01 : 0};
        if (ltp_span_add(w->e[i], &sc))
            abort();
    }
    tern_fuzz_watch wd = {0};
    int up = 1;
    uint8_t buf[65536 + 64];
    while (r.n) {
        unsigned op = get8(&r) % 16;
        if (trace)
            fprintf(stderr, "op %u (%zu bytes left)\n", op, r.n);
        tern_fuzz_watch_start(&wd);
        arm(1);
        switch (op) {
        case 0:   /* deliver up to N segments each way, in turn */
        case 1: { /* the same, one way only */
            unsigned n = 1 + get8(&r) % 16;
            int way = (int)(get8(&r) & 1);
            for (unsigned k = 0; k < n; k++)
                for (int d = 0; d < 2; d++) {
                    if (op == 1 && d != way)
                        continue;
                    struct seg s;
                    if (q_pop(w, d, &s)) {
                        if (trace) {
                            ltp_seg t;
                            ltp_claim cl[8192];
                            t.claims = cl;
                            if (ltp_seg_decode(s.d, s.len, &t, 8192) == 0)
                                fprintf(
                                    stderr,
                                    "  %d->%d %s session %llu off %llu len %llu cp %llu "
                                    "rpt %llu [%llu,%llu) claims %llu\n",
                                    d + 1, 2 - d, ltp_seg_type_name(t.type),
                                    (unsigned long long)t.session,
                                    (unsigned long long)t.offset,
                                    (unsigned long long)t.length,
                                    (unsigned long long)t.cp_serial,
                                    (unsigned long long)t.rpt_serial,
                                    (unsigned long long)t.lower,
                                    (unsigned long long)t.upper,
                                    (unsigned long long)t.n_claims);
                        }
                        ltp_engine_receive(w->e[1 - d], s.d, s.len);
                        free(s.d);
                    }
                }
            break;
        }
        case 2: { /* drop the next one */
            struct seg s;
            if (q_pop(w, (int)(get8(&r) & 1), &s))
                free(s.d);
            break;
        }
        case 3: { /* duplicate the next one (delivered twice) */
            int d = (int)(get8(&r) & 1);
            struct seg s;
            if (q_pop(w, d, &s)) {
                ltp_engine_receive(w->e[1 - d], s.d, s.len);
                ltp_engine_receive(w->e[1 - d], s.d, s.len);
                free(s.d);
            }
            break;
        }
        case 4: { /* corrupt the next one: xor a byte, or cut it short */
            int d = (int)(get8(&r) & 1);
            unsigned at = get16(&r), x = get8(&r);
            struct seg s;
            if (q_pop(w, d, &s)) {
                if (s.len) {
                    if (x == 0)
                        s.len = at % s.len;
                    else
                        s.d[at % s.len] ^= (uint8_t)x;
                }
                w->tainted = 1;
                ltp_engine_receive(w->e[1 - d], s.d, s.len);
                free(s.d);
            }
            break;
        }
        case 5: { /* raw bytes from the input into an engine */
            int to = (int)(get8(&r) & 1);
            size_t len = get16(&r) % 2048;
            if (len > r.n)
                len = r.n;
            memcpy(buf, r.p, len);
            r.p += len;
            r.n -= len;
            w->tainted = 1;
            ltp_engine_receive(w->e[to], buf, len);
            break;
        }
        case 6: /* advance the clock by N ms */
            advance(w, &wd, (uint64_t)get16(&r) * 1000000ull);
            break;
        case 7: /* ... by N s */
            advance(w, &wd, (uint64_t)get8(&r) * 1000000000ull);
            break;
        case 8: { /* a block from engine 1 (or 2) */
            int from = (int)(get8(&r) & 1);
            size_t red = (size_t)get16(&r) << (get8(&r) % 3), green = get8(&r) * 37u;
            if (red > BLOCK_MAX)
                red = BLOCK_MAX;
            if (red && red < 8)
                red = 8;
            if (w->nb == MAXBLK || (!red && !green) || w->sent + red + green > BYTES_MAX)
                break;
            w->sent += red + green;
            struct blk *b = &w->b[w->nb];
            b->red = red;
            b->green = green;
            uint8_t *blk = malloc(red + green + 1);
            if (!blk)
                abort();
            fill(blk, red, (uint32_t)w->nb);
            memset(blk + red, 0x47, green);
            if (ltp_block_send(w->e[from], (uint64_t)(2 - from), 1, blk, red, green, b,
                               NULL) == 0)
                w->nb++;
            free(blk);
            break;
        }
        case 9: { /* a unit to aggregate (the block carries no index: taint) */
            size_t len = 1 + get16(&r) % 3000;
            memset(buf, 0x55, len);
            w->tainted = 1;
            ltp_sdu_send(w->e[0], 2, 1, buf, len);
            break;
        }
        case 10: /* the link down or up (both ends, as a contact plan does) */
            up = !up;
            ltp_span_link(w->e[0], 2, up);
            ltp_span_link(w->e[1], 1, up);
            break;
        case 11: { /* how a client answers red parts from now on */
            int side = (int)(get8(&r) & 1);
            w->mode[side] = (int)(get8(&r) % 3);
            break;
        }
        case 12: { /* release held parts and retry refused ones */
            /* the notices these cause may remember parts again: go over a copy */
            struct pend *old = malloc(sizeof w->pend);
            int n = w->npend;
            if (!old)
                abort();
            memcpy(old, w->pend, sizeof w->pend);
            w->npend = 0;
            for (int i = 0; i < n; i++) {
                struct pend p = old[i];
                if (p.later && w->mode[p.side] == 2) {
                    if (w->npend < 256)
                        w->pend[w->npend++] = p; /* still no room */
                } else if (p.later) {
                    ltp_import_retry(w->e[p.side], p.peer, p.session);
                } else {
                    if (p.idx >= 0)
                        w->b[p.idx].taken = 1;
                    ltp_import_release(w->e[p.side], p.peer, p.session);
                }
            }
            free(old);
            break;
        }
        case 13: { /* cancel an export by a session number from the input */
            uint64_t s = 0;
            for (int i = 0; i < 4; i++)
                s = s << 8 | get8(&r);
            ltp_export_cancel(w->e[get8(&r) & 1], s);
            break;
        }
        case 15: /* a contact plan's range: a new one-way light time */
            ltp_span_set_owlt(w->e[get8(&r) & 1], 0, 0); /* no such span */
            ltp_span_set_owlt(w->e[0], 2, get16(&r) % 5000);
            ltp_span_set_owlt(w->e[1], 1, get16(&r) % 5000);
            break;
        case 14: { /* a segment from fields, into either engine */
            int to = (int)(get8(&r) & 1);
            size_t n = field_segment(w, &r, to, buf);
            w->tainted = 1;
            ltp_engine_receive(w->e[to], buf, n);
            break;
        }
        }
        arm(0);
        if (trace)
            fprintf(stderr, "op %u took %.2f ms of CPU\n", op,
                    (double)(tern_fuzz__cpu_ns() - wd.t0) / 1e6);
        step_done(w, &wd, "an LTP engine step");
        check_caps(w);
    }
    for (int i = 0; i < 2; i++) {
        ltp_engine_free(w->e[i]);
        struct seg s;
        while (q_pop1(&w->q[i], &s))
            free(s.d);
    }
    tern_loop_close(w->loop);
    tern_clock_free(w->clk);
    free(w->scratch);
    int slow = w->slow;
    free(w);
    return slow;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (run(data, size, 0))
        run(data, size, 1); /* slow again: the watchdog aborts */
    return 0;
}
