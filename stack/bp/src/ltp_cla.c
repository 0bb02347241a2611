/* The LTP convergence layer (see bp_ltp.h).
 *
 * Bundles go as all-red blocks. Small bundles are aggregated as ION does:
 * they collect in the duct's block until it reaches the span's aggregation
 * size threshold or has waited its aggregation time limit; a block holds
 * them back to back and its fate (claimed or cancelled) is each one's. The
 * aggregated block is copied into the engine (ltp_block_send), so an outduct
 * can close while LTP still works on its sessions: their tickets are then
 * orphaned and the sessions cancelled. A bundle that goes alone is lent to
 * the engine instead (ltp_block_send_ref): the agent keeps its bytes until
 * the block's fate is reported, and a cancelled session reads no more data.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "bp_ltp.h"
#include "tern/ckd.h"

typedef struct lduct lduct;

/* One block in flight and the transmissions it carries. */
typedef struct ticket {
    struct ticket *next, *prev;
    lduct *d; /* NULL once orphaned */
    uint64_t session;
    size_t n, bytes;
    uint64_t xmit[]; /* n transmission ids */
} ticket;

struct lduct {
    bp_ltp_cla *c;
    bp_outduct *od;
    uint64_t peer;
    unsigned inflight;     /* blocks */
    size_t inflight_bytes; /* their bytes */
    bool blocked;
    /* the block being aggregated */
    uint8_t *agg;
    size_t agg_len, agg_cap;
    uint64_t *agg_xmit;
    size_t agg_n, agg_xcap;
    tern_timer agg_timer;
};

struct bp_ltp_cla {
    bp_agent *a;
    ltp_engine *e;
    unsigned max_blocks;
    ticket *tickets;        /* every ticket, orphans included */
    uint64_t green_ignored; /* green segments dropped: BP sends only red */
    bool green_logged;
    /* received blocks the store had no room for (LTP_LATER), tried again
     * after later_ns: LATER_NS at first, doubling up to LATER_MAX_NS while
     * none is taken (each try parses the blocks again; the sender waits
     * unclaimed meanwhile, so a slower try costs no retransmission) */
    struct later {
        uint64_t peer, session;
    } * later;
    size_t nlater, caplater;
    tern_timer later_tm;
    bool later_tm_init;
    uint64_t later_ns;
    /* an episode of "no room in the store" is said once (at most every
     * ROOM_LOG_NS), and its end only if its start was */
    uint64_t full_logged_at;
    bool full_said;
};

#define ROOM_LOG_NS (60000 * 1000000ull)

#define LATER_NS     (2 * 1000000ull)
#define LATER_MAX_NS (256 * 1000000ull)

static void ticket_unlink(bp_ltp_cla *c, ticket *t)
{
    if (t->prev)
        t->prev->next = t->next;
    else
        c->tickets = t->next;
    if (t->next)
        t->next->prev = t->prev;
}

static int parse_engine(const char *s, uint64_t *v)
{
    if (!*s || strlen(s) > 20)
        return -EINVAL;
    uint64_t x = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9' || x > (UINT64_MAX - 9) / 10)
            return -EINVAL;
        x = x * 10 + (uint64_t)(*p - '0');
    }
    if (x == 0)
        return -EINVAL;
    *v = x;
    return 0;
}

/* Hands LTP one block: data[0..len) carrying the n transmissions xmit; lent
 * (not copied) if lend is set. */
static int send_block(lduct *d, const uint8_t *data, size_t len, const uint64_t *xmit,
                      size_t n, bool lend)
{
    bp_ltp_cla *c = d->c;
    ticket *t = calloc(1, sizeof *t + n * sizeof *xmit);
    if (!t)
        return -ENOMEM;
    t->d = d;
    t->n = n;
    t->bytes = len;
    memcpy(t->xmit, xmit, n * sizeof *xmit);
    int rc =
        lend ? ltp_block_send_ref(c->e, d->peer, BP_LTP_CLIENT, data, len, 0, t,
                                  &t->session)
             : ltp_block_send(c->e, d->peer, BP_LTP_CLIENT, data, len, 0, t, &t->session);
    if (rc) {
        free(t);
        return rc;
    }
    t->next = c->tickets;
    if (c->tickets)
        c->tickets->prev = t;
    c->tickets = t;
    d->inflight++;
    d->inflight_bytes += len;
    return 0;
}

/* Sends the aggregated block if there is one and the window allows. A
 * failure reports its bundles failed (the agent forwards them again). */
static bool window_full(const lduct *d, size_t next_len);

static void agg_flush(lduct *d)
{
    if (!d->agg_n || window_full(d, d->agg_len))
        return;
    tern_timer_stop(&d->agg_timer);
    size_t n = d->agg_n;
    d->agg_n = 0;
    size_t len = d->agg_len;
    d->agg_len = 0;
    if (send_block(d, d->agg, len, d->agg_xmit, n, false) != 0)
        for (size_t i = 0; i < n; i++)
            bp_outduct_result(d->od, d->agg_xmit[i], BP_XMIT_FAILED);
}

static void agg_timeout(tern_timer *tm, void *arg)
{
    (void)tm;
    agg_flush(arg);
}

static int open_duct(void *cla, bp_outduct *od, const char *name, const char *cmd,
                     void **duct)
{
    (void)cmd; /* ltpclo takes no arguments */
    bp_ltp_cla *c = cla;
    uint64_t peer;
    if (parse_engine(name, &peer))
        return -EINVAL;
    lduct *d = calloc(1, sizeof *d);
    if (!d)
        return -ENOMEM;
    int rc = tern_timer_init(bp_agent_loop(c->a), &d->agg_timer);
    if (rc) {
        free(d);
        return rc;
    }
    d->c = c;
    d->od = od;
    d->peer = peer;
    *duct = d;
    return 0;
}

/* Blocks a duct keeps in flight: the span's export window (LTP queues the
 * rest itself), at least the adapter's own limit. */
static unsigned duct_window(const lduct *d)
{
    ltp_span_cfg sc;
    if (ltp_span_get(d->c->e, d->peer, &sc) == 0 && sc.max_export > d->c->max_blocks)
        return sc.max_export;
    return d->c->max_blocks;
}

/* Whether a block of next_len bytes must wait. Sessions alone do not bound
 * the bytes in flight: 32 sessions of 5 MB blocks would be 160 MB in the
 * peer's receive buffer at once, more than a kernel keeps, and every
 * datagram it drops costs a retransmission round. So at most
 * BP_LTP_WINDOW_BYTES are in flight, however many sessions the span allows
 * (two blocks always may, so big blocks still overlap). */
static bool window_full(const lduct *d, size_t next_len)
{
    if (d->inflight >= duct_window(d))
        return true;
    return d->inflight >= 2 && d->inflight_bytes + next_len > BP_LTP_WINDOW_BYTES;
}

static void close_duct(void *cla, void *duct)
{
    bp_ltp_cla *c = cla;
    lduct *d = duct;
    tern_timer_stop(&d->agg_timer);
    /* Orphan first, cancel after: a cancel may report (and free the ticket)
     * from inside ltp_export_cancel. Bundles still being aggregated were
     * never handed to LTP: the agent takes them back itself. */
    size_t n = 0;
    for (ticket *t = c->tickets; t; t = t->next)
        if (t->d == d) {
            t->d = NULL;
            n++;
        }
    uint64_t *sessions = n ? malloc(n * sizeof *sessions) : NULL;
    size_t k = 0;
    for (ticket *t = c->tickets; t && sessions; t = t->next)
        if (!t->d && k < n)
            sessions[k++] = t->session;
    for (size_t i = 0; i < k; i++)
        ltp_export_cancel(c->e, sessions[i]);
    free(sessions);
    free(d->agg);
    free(d->agg_xmit);
    free(d);
}

static int send_bundle(void *cla, void *duct, const uint8_t *bundle, size_t len,
                       uint64_t xmit)
{
    bp_ltp_cla *c = cla;
    lduct *d = duct;
    ltp_span_cfg sc;
    if (ltp_span_get(c->e, d->peer, &sc))
        return TERN_ENOTFOUND; /* no span (yet): tried again later */
    /* Bundles at least as big as the threshold go alone, after the block
     * being aggregated (order is kept). */
    if (len >= sc.agg_size || sc.agg_size <= 1) {
        agg_flush(d);
        if (d->agg_n || window_full(d, len)) {
            d->blocked = true;
            return -EAGAIN;
        }
        return send_block(d, bundle, len, &xmit, 1, true);
    }
    if (d->agg_len + len > sc.agg_size && d->agg_n) {
        agg_flush(d);
        if (d->agg_n) { /* the window is full: the agent keeps the bundle */
            d->blocked = true;
            return -EAGAIN;
        }
    }
    size_t need;
    if (tern_ckd_add_size(&need, d->agg_len, len))
        return -EMSGSIZE;
    if (need > d->agg_cap) {
        uint64_t cap = tern_ckd_grow(d->agg_cap ? d->agg_cap : 4096, need, SIZE_MAX);
        uint8_t *p = cap ? realloc(d->agg, (size_t)cap) : NULL;
        if (!p)
            return -ENOMEM;
        d->agg = p;
        d->agg_cap = (size_t)cap;
    }
    if (d->agg_n == d->agg_xcap) {
        size_t cap = d->agg_xcap ? d->agg_xcap * 2 : 64, bytes;
        if (tern_ckd_mul_size(&bytes, cap, sizeof(uint64_t)))
            return -ENOMEM;
        uint64_t *p = realloc(d->agg_xmit, bytes);
        if (!p)
            return -ENOMEM;
        d->agg_xmit = p;
        d->agg_xcap = cap;
    }
    memcpy(d->agg + d->agg_len, bundle, len);
    d->agg_len += len;
    d->agg_xmit[d->agg_n++] = xmit;
    if (d->agg_len >= sc.agg_size)
        agg_flush(d);
    else if (d->agg_n == 1)
        tern_timer_start(&d->agg_timer, agg_timeout, d, (uint64_t)sc.agg_ms * 1000000ull,
                         0);
    return 0;
}

static const bp_cla_ops ltp_ops = {
    .protocol = "ltp",
    .outduct_open = open_duct,
    .outduct_close = close_duct,
    .send = send_bundle,
};

TERN_API int bp_ltp_cla_new(bp_agent *a, ltp_engine *e, unsigned max_blocks,
                            bp_ltp_cla **out)
{
    if (!a || !e)
        return -EINVAL;
    bp_ltp_cla *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    c->a = a;
    c->e = e;
    c->max_blocks = max_blocks ? max_blocks : 64;
    int rc = bp_cla_register(a, &ltp_ops, c);
    if (rc) {
        free(c);
        return rc;
    }
    *out = c;
    return 0;
}

TERN_API void bp_ltp_cla_free(bp_ltp_cla *c)
{
    if (!c)
        return;
    if (c->later_tm_init)
        tern_timer_stop(&c->later_tm);
    free(c->later);
    while (c->tickets) {
        ticket *t = c->tickets;
        ticket_unlink(c, t);
        free(t);
    }
    free(c);
}

static void later_run(tern_timer *t, void *arg)
{
    (void)t;
    bp_ltp_cla *c = arg;
    /* The retries may add to the list (a block the store still cannot
     * take is kept): go over a copy of its length. */
    size_t n = c->nlater, keep = 0;
    for (size_t i = 0; i < n; i++) {
        struct later l = c->later[i];
        if (ltp_import_retry(c->e, l.peer, l.session) == 1)
            c->later[keep++] = l;
    }
    /* entries added during the retries (the same sessions again) are
     * already kept above */
    c->nlater = keep;
    if (keep == n && c->later_ns < LATER_MAX_NS)
        c->later_ns *= 2; /* still no room */
    else if (keep < n)
        c->later_ns = LATER_NS; /* room is coming back: try often */
    if (c->nlater) {
        tern_timer_start(&c->later_tm, later_run, c, c->later_ns, 0);
    } else if (c->full_said) {
        c->full_said = false;
        TERN_INFO(bp_agent_log(c->a), "ltp",
                  "room in the store again: the blocks that waited are taken");
    }
}

/* Remembers a block to hand to the agent again once it has room. */
static int later_add(bp_ltp_cla *c, uint64_t peer, uint64_t session)
{
    for (size_t i = 0; i < c->nlater; i++)
        if (c->later[i].peer == peer && c->later[i].session == session)
            return 0;
    if (c->nlater == c->caplater) {
        size_t cap = c->caplater ? 2 * c->caplater : 16;
        struct later *v = realloc(c->later, cap * sizeof *v);
        if (!v)
            return -ENOMEM;
        c->later = v;
        c->caplater = cap;
    }
    if (!c->later_tm_init) {
        int rc = tern_timer_init(bp_agent_loop(c->a), &c->later_tm);
        if (rc)
            return rc;
        c->later_tm_init = true;
    }
    if (!c->nlater) {
        /* The sender keeps its copy (LTP leaves the block unclaimed and
         * tells it so): nothing is lost, and the log says why it waits. */
        uint64_t now = tern_loop_now(bp_agent_loop(c->a));
        c->full_said = false;
        if (!c->full_logged_at || now - c->full_logged_at >= ROOM_LOG_NS) {
            c->full_logged_at = now ? now : 1;
            c->full_said = true;
            TERN_WARN(bp_agent_log(c->a), "ltp",
                      "no room in the store: blocks from engine %" PRIu64
                      " wait (unclaimed, the sender keeps them; taken as soon as "
                      "bundles leave the store)",
                      peer);
        }
    }
    c->later[c->nlater++] = (struct later){peer, session};
    if (!tern_timer_is_active(&c->later_tm)) {
        c->later_ns = LATER_NS;
        tern_timer_start(&c->later_tm, later_run, c, LATER_NS, 0);
    }
    return 0;
}

/* A held block is durable: LTP may claim it now. */
static void release(void *ctx, uint64_t peer, uint64_t session)
{
    bp_ltp_cla *c = ctx;
    ltp_import_release(c->e, peer, session);
}

/* A block's fate is known. */
static void finish(bp_ltp_cla *c, ticket *t, int result)
{
    if (!t)
        return; /* a block LTP resumed from its store after a restart: its
                   bundles are the agent's again (resumed and forwarded anew) */
    lduct *d = t->d;
    ticket_unlink(c, t);
    if (d) {
        d->inflight--;
        d->inflight_bytes -= t->bytes;
        for (size_t i = 0; i < t->n; i++)
            bp_outduct_result(d->od, t->xmit[i], result);
    }
    free(t);
    if (!d)
        return;   /* orphaned: the agent has already taken the bundles back */
    agg_flush(d); /* a block that waited for the window */
    if (d->blocked && !window_full(d, 0)) {
        d->blocked = false;
        bp_outduct_ready(d->od);
    }
}

TERN_API int bp_ltp_cla_notice(bp_ltp_cla *c, const ltp_notice *n)
{
    switch (n->kind) {
    case LTP_RED_PART: {
        /* The report claiming the block waits until its bundles are
         * durable, or have all left this node (delivered, forwarded). A
         * full store makes the peer keep its copy: LTP keeps the block
         * unclaimed (the sender's session stays open, so it slows down) and
         * it is handed over again once there is room; bundles of it already
         * taken are then known duplicates. A store I/O error (-ENOSPC from
         * a blob write, -EIO) is not claimed either: a durable store stays
         * failed after one, so instead of retrying the session is cancelled
         * and the sender keeps its copy, to send it again here or elsewhere.
         * A malformed block would be malformed again, so it is claimed and
         * dropped (counted). */
        int rc = bp_agent_receive_claim(c->a, n->data, n->len, release, c, n->peer,
                                        n->session);
        if (rc == TERN_EFULL || rc == -ENOMEM)
            return later_add(c, n->peer, n->session) ? rc : LTP_LATER;
        return rc == 1 ? LTP_HOLD : rc;
    }
    case LTP_GREEN_SEG:
        /* This adapter sends bundles all red and does not reassemble
         * bundles from green segments: green data is dropped, counted, and
         * said once, naming the peer, so a deployment whose peer sends
         * bundles green finds out why they never arrive. */
        c->green_ignored++;
        if (!c->green_logged) {
            c->green_logged = true;
            TERN_WARN(bp_agent_log(c->a), "ltp",
                      "engine %" PRIu64 " sends green data (session %" PRIu64
                      "): BP takes only red blocks, so green segments are dropped "
                      "(counted as green ignored in tern status; logged once)",
                      n->peer, n->session);
        }
        return 0;
    case LTP_EXPORT_DONE:
        finish(c, n->user, BP_XMIT_OK);
        return 0;
    case LTP_EXPORT_CANCELLED:
        finish(c, n->user, BP_XMIT_CANCELLED);
        return 0;
    default:
        return 0;
    }
}

TERN_API uint64_t bp_ltp_cla_green_ignored(const bp_ltp_cla *c)
{
    return c->green_ignored;
}
