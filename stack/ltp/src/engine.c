/* The LTP engine: export (sender) and import (receiver) sessions.
 *
 * Export: a block is cut into data segments no larger than the span's
 * maximum; the last red one is a checkpoint. Each report received is
 * acknowledged, its claims added to what the peer holds, and the red bytes
 * it scopes but does not claim are sent again, ending in a new checkpoint
 * that refers to the report. A checkpoint unanswered after the
 * retransmission timeout is sent again, up to max_retries times; a session
 * needing more than max_rounds reports is cancelled.
 *
 * Import: red bytes are gathered into a buffer; each checkpoint is answered
 * by a report claiming what has arrived (split across several report
 * segments when the claims do not fit in one). Once the whole red part is
 * there it is handed to the client, and only then reported as claimed in
 * full. Green segments are handed up as they come.
 *
 * Timers run on the loop's clock and are suspended while a span's link is
 * down, so an outage never uses up retransmissions.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ltp_int.h"
#include "tern/ckd.h"
#include "tern/clock.h"
#include "tern/crc.h"
#include "tern/sdnv.h"

#define NS_PER_MS     1000000ull
#define MAX_CLAIMS_IN 8192
#define RECENT_RPTS   8
/* An import keeps at most this many separate runs of received bytes: each
 * new run costs a move of the ones above it, so a peer that sends bytes
 * scattered backwards would otherwise buy quadratic work. Segments that
 * would open more are not kept (the sender sends them again). */
#define MAX_RUNS 16384
/* The union of a peer's claims about one export, likewise. */
#define MAX_ACKED (2 * MAX_RUNS)
/* Reports an import keeps: the acknowledged ones beyond this are forgotten
 * (oldest first); more unacknowledged ones than this cancel the session. */
#define MAX_RPTS 4096
/* Closed sessions remembered per span: the oldest go first beyond this. */
#define CLOSED_PER_SPAN 65536
/* What an import session costs besides its buffers (bookkeeping, map). */
#define IMPORT_OVERHEAD 512
/* Red bytes are kept at an offset up to twice what has arrived plus this
 * (or 64 segments, if more): enough for any reordering a link does, while
 * a peer scattering a few bytes over a wide extent buys no memory. */
#define KEEP_SLACK (UINT64_C(1) << 20)

struct span;
struct ltp_engine;

/* A timer that can be suspended while its span's link is down. */
struct xtimer {
    tern_timer t;
    uint64_t remaining;
    uint64_t tx_ns; /* waiting for the segment to leave: then run this long */
    uint8_t armed, suspended, wait_tx;
    tern_timer_cb cb;
    void *arg;
};

struct cp {
    struct cp *next;
    struct export *x;
    uint64_t serial, rpt_serial, off, len;
    uint8_t type;
    unsigned tries;
    struct xtimer tm;
};

struct export
{
    struct export *prev, *next; /* span's sessions */
    struct export *qnext;       /* span's queue of blocks waiting for the window */
    struct span *sp;
    uint64_t session, client;
    uint8_t *data;
    uint64_t red, green;
    void *user;
    struct ltp_ivset acked;
    struct cp *cps;
    unsigned rounds;
    uint64_t next_cp;
    uint64_t recent_rpt[RECENT_RPTS];
    unsigned n_recent;
    int cancelling;
    uint8_t reason;
    unsigned cancel_tries;
    struct xtimer cancel_tm;
    struct xtimer idle_tm; /* armed while no checkpoint is outstanding */
    sdr_off rec;           /* list element in the store, or 0 */
    int started;           /* 0 while waiting in the span's queue */
    int borrowed;          /* data is the caller's (ltp_block_send_ref) */
    /* The peer has all but the end of the red part and no room to take it
     * (its report said so): the idle timer probes instead of cancelling. */
    int waiting;
    uint64_t wait_rpt; /* serial of the report that said so */
};

struct rpt {
    struct rpt *next;
    struct import *im;
    uint64_t serial, lower, upper;
    uint8_t *bytes; /* the encoded report, resent as it is */
    size_t len;
    unsigned tries;
    int acked;
    struct xtimer tm;
};

struct import {
    struct import *prev, *next;
    struct span *sp;
    uint64_t engine, session, client;
    uint8_t *buf;
    uint64_t cap;
    uint64_t extent;  /* end of the highest red byte kept in buf */
    uint64_t arrived; /* distinct red bytes kept */
    uint64_t bytes;   /* what this session holds, as counted in its span */
    unsigned n_rpts, n_unacked;
    uint64_t rpt_bytes; /* what its kept reports take */
    int waiting;        /* counted in the span's imports_waiting */
    struct ltp_ivset got;
    /* Every byte a report of this session has claimed (a claim cannot be
     * taken back: a receiver without room must leave out one never
     * claimed); claimed_lost if it grew too scattered to keep. */
    struct ltp_ivset claimed;
    int claimed_lost;
    uint64_t red_len; /* UINT64_MAX until the end of the red part is seen */
    uint32_t crc;     /* CRC-32C of red bytes [0, crc_upto), taken on arrival */
    uint64_t crc_upto;
    uint64_t green_min; /* lowest green offset seen, UINT64_MAX if none */
    int red_delivered, green_eob;
    /* The client took the red part but it is not durable yet: no report
     * claims it until ltp_import_release(); the last checkpoint seen waits. */
    int held, held_cp;
    int later; /* the client has no room for the red part (LTP_LATER) */
    uint64_t held_serial, held_lower, held_upper;
    struct rpt *rpts;
    uint64_t next_rpt;
    int cancelling;
    uint8_t reason;
    unsigned cancel_tries;
    struct xtimer cancel_tm; /* also the idle timer of green-only imports */
};

/* A closed session, remembered for a while to answer stragglers. */
struct closed {
    struct closed *qnext;
    uint64_t engine, session, peer;
    uint64_t red_len;
    uint64_t expires;
    uint8_t kind; /* 'i' completed import, 'c' cancelled import, 'x' export,
                     'r' import refused for the span's import cap */
};

/* The once-per-cause messages about what a peer sent that the engine will
 * not hold. */
enum refusal {
    RF_BEYOND_BLOCK,
    RF_OVER_SHARE,
    RF_BAD_REPORT,
    RF_NOT_KEPT,
    RF_BAD_END,
    RF_TOO_MANY_RPTS,
};

struct span {
    struct ltp_engine *e;
    ltp_span_cfg cfg;
    int up;
    unsigned n_export, n_import;
    struct export *exports; /* active export sessions */
    struct import *imports;
    struct export *qhead, *qtail;
    uint64_t queued;
    uint64_t import_hint; /* red length of the last block imported here */
    uint8_t *agg;
    size_t agg_len, agg_cap;
    uint64_t agg_client;
    tern_timer agg_timer;
    uint64_t import_held; /* bytes its import sessions hold */
    int owlt_from_range;  /* light time set by ltp_span_set_owlt */
    unsigned imports_waiting, exports_waiting;
    int client_full; /* an episode of "no room at the client" is going on */
    int peer_full;   /* an episode of "the peer has no room" is going on */
    uint64_t client_full_logged, peer_full_logged; /* when each was last said */
    int client_full_said, peer_full_said;          /* ... and whether in this episode */
    struct closed *chead, *ctail;                  /* closed sessions, oldest first */
    size_t n_closed;
};

struct ltp_engine {
    tern_loop *loop;
    ltp_engine_cfg cfg;
    ltp_host host;
    tern_log *lg;
    struct span **spans;
    size_t nspans;
    struct ltp_map exports; /* (0, session) */
    struct ltp_map imports; /* (engine, session) */
    struct ltp_map closed;  /* (engine, session) */
    uint64_t next_session;
    uint8_t *scratch;
    size_t scratch_cap;
    ltp_claim *claims;
    ltp_stats st;
    unsigned logged_causes;   /* bit per decode error already logged */
    unsigned logged_refusals; /* bit per enum refusal already logged */
    uint64_t rng;             /* serial numbers start at random points */
    sdr *store;
    sdr_off root;   /* struct xroot in the store */
    uint64_t lease; /* session numbers below this are reserved in the store */
};

/* In the store: the engine's root and one record per unfinished export. */
#define XROOT_MAGIC UINT64_C(0x4c5450524f4f5431) /* "LTPROOT1" */
#define XREC_MAGIC  UINT64_C(0x4c54505845585031) /* "LTPXEXP1" */
#define LEASE       1024
struct xroot {
    uint64_t magic;
    uint64_t lease;
    sdr_off exports; /* list of struct xrec */
};
struct xrec {
    uint64_t magic, session, peer, client, red, green;
    sdr_off blob;
};

TERN_API int ltp_abi_version(void)
{
    return LTP_ABI_VERSION;
}

/* ------------------------------------------------------------- helpers */

static uint64_t rng_next(struct ltp_engine *e)
{
    e->rng ^= e->rng << 13;
    e->rng ^= e->rng >> 7;
    e->rng ^= e->rng << 17;
    return e->rng;
}

static uint64_t now_ns(const struct ltp_engine *e)
{
    return tern_loop_now(e->loop);
}

static unsigned span_retries(const struct span *sp)
{
    return sp->cfg.max_retries ? sp->cfg.max_retries : sp->e->cfg.max_retries;
}

static unsigned span_rounds(const struct span *sp)
{
    return sp->cfg.max_rounds ? sp->cfg.max_rounds : sp->e->cfg.max_rounds;
}

/* Sums and products of settings saturate: a light time of hours times
 * many retries must not wrap into a short timer. */
static uint64_t sat_add(uint64_t a, uint64_t b)
{
    uint64_t r;
    return tern_ckd_add(&r, a, b) ? UINT64_MAX : r;
}

static uint64_t sat_mul(uint64_t a, uint64_t b)
{
    uint64_t r;
    return tern_ckd_mul(&r, a, b) ? UINT64_MAX : r;
}

/* Retransmission timeout: a round trip plus both ends' queuing. */
static uint64_t span_rto_ns(const struct span *sp)
{
    uint64_t ms = 2ull * sp->cfg.owlt_ms + sp->e->cfg.own_qtime_ms + sp->cfg.qtime_ms;
    return (ms ? ms : 1) * NS_PER_MS; /* < 2^34 ms: fits in ns */
}

/* The whole repair budget: a session silent for this long (link-up time
 * only) has been given up by its peer. */
static uint64_t span_budget_ns(const struct span *sp)
{
    return sat_mul(sat_mul(span_rounds(sp), (uint64_t)span_retries(sp) + 1),
                   span_rto_ns(sp));
}

/* The largest block the span takes from its peer. */
static uint64_t span_max_block(const struct span *sp)
{
    uint64_t m = sp->cfg.max_block ? sp->cfg.max_block : sp->e->cfg.max_block;
    return m ? m : LTP_DEFAULT_MAX_BLOCK;
}

/* What one import session may hold: its block, a quarter more for the
 * bookkeeping of a block that arrived in pieces, and the session itself. */
static uint64_t block_share(const struct span *sp)
{
    uint64_t mb = span_max_block(sp);
    return sat_add(sat_add(mb, mb / 4), IMPORT_OVERHEAD);
}

/* What the span's import sessions may hold together (default: two blocks
 * of the largest size, as BP keeps two blocks of any size in flight). */
static uint64_t span_import_cap(const struct span *sp)
{
    uint64_t v =
        sp->cfg.max_import_bytes ? sp->cfg.max_import_bytes : sp->e->cfg.max_import_bytes;
    return v ? v : sat_mul(2, block_share(sp));
}

static uint64_t session_share(const struct span *sp)
{
    uint64_t a = block_share(sp), b = span_import_cap(sp);
    return a < b ? a : b;
}

/* Says once per kind what a peer sent that the engine does not hold. */
__attribute__((format(printf, 3, 4))) static void
refusal(struct ltp_engine *e, enum refusal why, const char *fmt, ...)
{
    if (e->logged_refusals & (1u << why))
        return;
    e->logged_refusals |= 1u << why;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    TERN_WARN(e->lg, "ltp", "%s (further ones of this kind are only counted)", msg);
}

static struct span *span_find(const struct ltp_engine *e, uint64_t peer)
{
    for (size_t i = 0; i < e->nspans; i++)
        if (e->spans[i]->cfg.peer == peer)
            return e->spans[i];
    return NULL;
}

static void xt_init(struct ltp_engine *e, struct xtimer *x, tern_timer_cb cb, void *arg)
{
    memset(x, 0, sizeof *x);
    tern_timer_init(e->loop, &x->t);
    x->cb = cb;
    x->arg = arg;
}

static void xt_start(struct span *sp, struct xtimer *x, uint64_t ns)
{
    x->armed = 1;
    if (!sp->up) {
        tern_timer_stop(&x->t);
        x->suspended = 1;
        x->remaining = ns;
        return;
    }
    x->suspended = 0;
    tern_timer_start(&x->t, x->cb, x->arg, ns, 0);
}

static void xt_stop(struct xtimer *x)
{
    x->armed = x->suspended = x->wait_tx = 0;
    tern_timer_stop(&x->t);
}

/* Arms a retransmission timer for a segment about to be handed to the link
 * service. If the link service tells when segments actually leave
 * (host.tx_notify), the timeout runs from then, as in ION, so segments
 * queued behind a rate limit do not time out before they are sent; a long
 * fallback covers a segment the link service drops. */
static void xt_start_tx(struct span *sp, struct xtimer *x, uint64_t ns)
{
    /* With the link down, emit() drops the segment: no transmission will be
     * reported, so the plain timeout applies (suspended until the link comes
     * up), not the long fallback. */
    if (!sp->e->host.tx_notify || !sp->up) {
        xt_start(sp, x, ns);
        return;
    }
    /* Queued segments may wait long behind a slow link: the fallback only
     * guards against a segment the link service never sends. */
    xt_start(sp, x,
             sat_add(sat_add(ns, sat_mul(4, span_budget_ns(sp))), 60000 * NS_PER_MS));
    x->wait_tx = 1;
    x->tx_ns = ns;
}

static void xt_sent(struct span *sp, struct xtimer *x)
{
    if (!x->armed || !x->wait_tx)
        return;
    x->wait_tx = 0;
    xt_start(sp, x, x->tx_ns);
}

static void xt_suspend(struct ltp_engine *e, struct xtimer *x)
{
    if (!x->armed || x->suspended)
        return;
    uint64_t dl = tern_timer_deadline(&x->t), now = now_ns(e);
    x->remaining = dl > now ? dl - now : 0;
    tern_timer_stop(&x->t);
    x->suspended = 1;
}

static void xt_resume(struct xtimer *x)
{
    if (!x->armed || !x->suspended)
        return;
    x->suspended = 0;
    tern_timer_start(&x->t, x->cb, x->arg, x->remaining, 0);
}

static int emit(struct span *sp, const uint8_t *seg, size_t len)
{
    struct ltp_engine *e = sp->e;
    if (!sp->up)
        return 0; /* nothing leaves while the link is down; timers wait too */
    e->st.seg_out++;
    e->st.bytes_out += len;
    return e->host.send(e->host.ctx, sp->cfg.peer, seg, len);
}

static int emit_seg(struct span *sp, const ltp_seg *s)
{
    struct ltp_engine *e = sp->e;
    /* A data segment is encoded where the link service will send it from
     * (its queue), when it offers that: one copy of the block's bytes
     * instead of two. */
    if (e->host.send_buf && sp->up && ltp_seg_is_data(s->type) && !s->n_text) {
        size_t len = ltp_seg_data_hdr_len(s) + (size_t)s->length;
        uint8_t *at = e->host.send_buf(e->host.ctx, sp->cfg.peer, len);
        if (at) {
            int n = ltp_seg_encode(s, at, len);
            if (n < 0) {
                TERN_ERROR(e->lg, "ltp", "cannot encode %s segment: %s",
                           ltp_seg_type_name(s->type), tern_strerror(n));
                return n;
            }
            e->st.seg_out++;
            e->st.bytes_out += (uint64_t)n;
            return e->host.send_commit(e->host.ctx, sp->cfg.peer, at, (size_t)n);
        }
    }
    int n = ltp_seg_encode(s, e->scratch, e->scratch_cap);
    if (n < 0) {
        TERN_ERROR(e->lg, "ltp", "cannot encode %s segment: %s",
                   ltp_seg_type_name(s->type), tern_strerror(n));
        return n;
    }
    return emit(sp, e->scratch, (size_t)n);
}

static int notify(struct ltp_engine *e, const ltp_notice *n)
{
    return e->host.notice ? e->host.notice(e->host.ctx, n) : 0;
}

/* ------------------------------------------------------- closed sessions */

/* Forgets the span's closed sessions that expired, and the oldest beyond
 * what one span may keep: a peer that opens and closes sessions fast holds
 * no more than CLOSED_PER_SPAN entries (forgetting early only costs a
 * straggler its answer). */
static void closed_expire(struct span *sp, size_t keep)
{
    struct ltp_engine *e = sp->e;
    uint64_t now = now_ns(e);
    while (sp->chead && (sp->chead->expires <= now || sp->n_closed > keep)) {
        struct closed *c = sp->chead;
        sp->chead = c->qnext;
        if (!sp->chead)
            sp->ctail = NULL;
        if (ltp__map_get(&e->closed, c->engine, c->session) == c)
            ltp__map_del(&e->closed, c->engine, c->session);
        sp->n_closed--;
        e->st.closed_remembered--;
        free(c);
    }
}

static void closed_add(struct ltp_engine *e, uint64_t engine, uint64_t session,
                       uint64_t peer, uint64_t red_len, uint8_t kind)
{
    struct span *sp = span_find(e, peer);
    if (!sp)
        return;
    closed_expire(sp, CLOSED_PER_SPAN - 1);
    struct closed *c = calloc(1, sizeof *c);
    if (!c)
        return; /* forgetting early only costs a straggler an answer */
    c->engine = engine;
    c->session = session;
    c->peer = peer;
    c->red_len = red_len;
    c->kind = kind;
    /* Remember at least as long as the peer may still be repairing. */
    uint64_t ttl = (uint64_t)e->cfg.closed_ttl_ms * NS_PER_MS;
    uint64_t twice = sat_mul(2, span_budget_ns(sp));
    if (twice > ttl)
        ttl = twice;
    c->expires = sat_add(now_ns(e), ttl);
    if (ltp__map_put(&e->closed, engine, session, c)) {
        free(c);
        return;
    }
    if (sp->ctail)
        sp->ctail->qnext = c;
    else
        sp->chead = c;
    sp->ctail = c;
    sp->n_closed++;
    e->st.closed_remembered++;
}

/* --------------------------------------------------------------- store */

static void store_fail(struct ltp_engine *e, const char *what, int rc)
{
    e->st.store_errors++;
    TERN_ERROR(e->lg, "ltp", "store: %s: %s", what, tern_strerror(rc));
}

/* Session numbers are leased from the store in steps, so a restarted engine
 * never reuses one its peers may still remember. The counter is 64 bits; a
 * span to a peer that keeps session numbers in 32 bits (ION 4.1.3 does, and
 * answers with the number modulo 2^32) sends its low 32 bits, which stay
 * unique among the sessions alive at once. */
static int session_next(struct ltp_engine *e, const struct span *sp, uint64_t *out)
{
    for (;;) {
        if (e->store && e->next_session >= e->lease) {
            uint64_t lease = e->next_session + LEASE;
            int rc = sdr_txn_begin(e->store);
            if (!rc)
                rc = sdr_write(e->store, e->root + offsetof(struct xroot, lease), &lease,
                               8);
            rc = rc ? (sdr_in_txn(e->store) ? sdr_txn_cancel(e->store), rc : rc)
                    : sdr_txn_end(e->store);
            if (rc) {
                store_fail(e, "leasing session numbers", rc);
                return rc;
            }
            e->lease = lease;
        }
        uint64_t s = e->next_session++;
        if (sp->cfg.session_bits != 64)
            s &= UINT32_MAX;
        /* 0 is no session; a wrapped number may still be alive (2^32 later) */
        if (s && !ltp__map_get(&e->exports, 0, s)) {
            *out = s;
            return 0;
        }
    }
}

/* Keeps a block in the store until its peer claims it. */
static int persist(struct ltp_engine *e, struct export *x, uint64_t peer)
{
    if (!e->store)
        return 0;
    struct xroot root;
    struct xrec r = {XREC_MAGIC, x->session, peer, x->client, x->red, x->green, 0};
    sdr_off rec, elt;
    sdr *s = e->store;
    int rc = sdr_txn_begin(s);
    if (rc)
        goto fail;
    if ((rc = sdr_read(s, e->root, &root, sizeof root)) ||
        (rc = sdr_blob_put(s, x->data, x->red + x->green, &r.blob)) ||
        (rc = sdr_alloc(s, sizeof r, SDR_OPS, &rec)) ||
        (rc = sdr_write(s, rec, &r, sizeof r)) ||
        (rc = sdr_list_insert_last(s, root.exports, rec, &elt))) {
        sdr_txn_cancel(s);
        goto fail;
    }
    if ((rc = sdr_txn_end(s)))
        goto fail;
    x->rec = elt;
    return 0;
fail:
    store_fail(e, "keeping an export block", rc);
    return rc;
}

static void unpersist(struct ltp_engine *e, struct export *x)
{
    if (!e->store || !x->rec)
        return;
    sdr *s = e->store;
    struct xrec r;
    sdr_off rec;
    int rc = sdr_txn_begin(s);
    if (rc)
        goto fail;
    if ((rc = sdr_list_delete(s, x->rec, &rec)) ||
        (rc = sdr_read(s, rec, &r, sizeof r)) || (rc = sdr_blob_free(s, r.blob)) ||
        (rc = sdr_free(s, rec))) {
        sdr_txn_cancel(s);
        goto fail;
    }
    if ((rc = sdr_txn_end(s)))
        goto fail;
    x->rec = 0;
    return;
fail:
    store_fail(e, "dropping a finished export block", rc);
}

static int store_open(struct ltp_engine *e)
{
    char name[40];
    sdr *s = e->store;
    struct xroot root;
    snprintf(name, sizeof name, "ltp.%" PRIu64, e->cfg.engine_id);
    int rc = sdr_catalog_get(s, name, &e->root);
    if (rc == 0) {
        if ((rc = sdr_read(s, e->root, &root, sizeof root)))
            return rc;
        if (root.magic != XROOT_MAGIC)
            return TERN_ECORRUPT;
        if (root.lease > e->next_session)
            e->next_session = root.lease;
        e->lease = e->next_session; /* the first session leases a new step */
        return 0;
    }
    if (rc != TERN_ENOTFOUND)
        return rc;
    if ((rc = sdr_txn_begin(s)))
        return rc;
    root.magic = XROOT_MAGIC;
    root.lease = 0;
    if ((rc = sdr_list_create(s, 0, &root.exports)) ||
        (rc = sdr_alloc(s, sizeof root, SDR_OPS, &e->root)) ||
        (rc = sdr_write(s, e->root, &root, sizeof root)) ||
        (rc = sdr_catalog_put(s, name, e->root))) {
        sdr_txn_cancel(s);
        return rc;
    }
    e->lease = e->next_session;
    return sdr_txn_end(s);
}

/* ------------------------------------------------------------- exports */

static void export_start(struct span *sp, struct export *x);

static void unpersist(struct ltp_engine *e, struct export *x);

static void export_waiting(struct export *x, int waiting);

static void export_free(struct export *x)
{
    struct span *sp = x->sp;
    struct ltp_engine *e = sp->e;
    while (x->cps) {
        struct cp *c = x->cps;
        x->cps = c->next;
        xt_stop(&c->tm);
        free(c);
    }
    xt_stop(&x->cancel_tm);
    xt_stop(&x->idle_tm);
    export_waiting(x, 0);
    if (x->started) {
        if (x->prev)
            x->prev->next = x->next;
        else
            sp->exports = x->next;
        if (x->next)
            x->next->prev = x->prev;
        sp->n_export--;
        e->st.export_sessions--;
    } else {
        struct export **q = &sp->qhead, *last = NULL;
        while (*q && *q != x) {
            last = *q;
            q = &(*q)->qnext;
        }
        if (*q) {
            *q = x->qnext;
            if (sp->qtail == x)
                sp->qtail = last;
            sp->queued--;
            e->st.queued_blocks--;
        }
    }
    ltp__map_del(&e->exports, 0, x->session);
    ltp__iv_free(&x->acked);
    if (!x->borrowed)
        free(x->data);
    free(x);
}

/* Closes an export session and lets a waiting block take its place. */
/* Starts waiting blocks while the link is up and the window has room. */
static void span_start_queued(struct span *sp)
{
    while (sp->up && sp->qhead && sp->n_export < sp->cfg.max_export) {
        struct export *q = sp->qhead;
        sp->qhead = q->qnext;
        if (!sp->qhead)
            sp->qtail = NULL;
        sp->queued--;
        sp->e->st.queued_blocks--;
        export_start(sp, q);
    }
}

static void export_close(struct export *x)
{
    struct span *sp = x->sp;
    struct ltp_engine *e = sp->e;
    closed_add(e, e->cfg.engine_id, x->session, sp->cfg.peer, x->red, 'x');
    unpersist(e, x); /* done or given up: the block leaves the store */
    export_free(x);
    span_start_queued(sp);
}

static void x_cancel_fire(tern_timer *t, void *arg);
static void x_idle_fire(tern_timer *t, void *arg);

static void export_cancel(struct export *x, uint8_t reason)
{
    struct span *sp = x->sp;
    struct ltp_engine *e = sp->e;
    if (x->cancelling)
        return;
    x->cancelling = 1;
    x->reason = reason;
    xt_stop(&x->idle_tm);
    while (x->cps) {
        struct cp *c = x->cps;
        x->cps = c->next;
        xt_stop(&c->tm);
        free(c);
    }
    e->st.exports_cancelled++;
    TERN_INFO(e->lg, "ltp",
              "export session %" PRIu64 " to engine %" PRIu64 " cancelled: %s",
              x->session, sp->cfg.peer, ltp_reason_name(reason));
    ltp_notice n = {.kind = LTP_EXPORT_CANCELLED,
                    .peer = sp->cfg.peer,
                    .session = x->session,
                    .client = x->client,
                    .reason = reason,
                    .user = x->user};
    notify(e, &n);
    ltp_seg s = {.type = LTP_CS,
                 .engine = e->cfg.engine_id,
                 .session = x->session,
                 .reason = reason};
    xt_start_tx(sp, &x->cancel_tm, span_rto_ns(sp));
    x->cancel_tries = 0;
    emit_seg(sp, &s);
}

static void cp_fire(tern_timer *t, void *arg);

/* Sends red or green bytes [off, off+len) of the block; if cp_rpt is not
 * (uint64_t)-1, the last segment is a checkpoint answering that report. */
static int export_send_range(struct export *x, uint64_t off, uint64_t len, int red,
                             uint64_t cp_rpt)
{
    struct span *sp = x->sp;
    struct ltp_engine *e = sp->e;
    ltp_seg s;
    memset(&s, 0, sizeof s);
    s.engine = e->cfg.engine_id;
    s.session = x->session;
    s.client = x->client;
    /* Header room for the largest values this block can need. */
    size_t hdr = 3 + 10 * 7;
    size_t pay = sp->cfg.max_seg > hdr + 1 ? sp->cfg.max_seg - hdr : 1;
    uint64_t end = off + len;
    while (off < end) {
        uint64_t n = end - off < pay ? end - off : pay;
        int last = off + n == end;
        s.offset = off;
        s.length = n;
        s.data = x->data + off;
        if (red) {
            int is_cp = last && cp_rpt != (uint64_t)-1;
            if (!is_cp)
                s.type = LTP_RD;
            else if (off + n == x->red)
                s.type = x->green ? LTP_RD_CP_EORP : LTP_RD_CP_EOB;
            else
                s.type = LTP_RD_CP;
            if (is_cp) {
                struct cp *c = calloc(1, sizeof *c);
                if (!c)
                    return -ENOMEM;
                c->x = x;
                c->serial = x->next_cp++;
                c->rpt_serial = cp_rpt;
                c->off = off;
                c->len = n;
                c->type = s.type;
                xt_init(e, &c->tm, cp_fire, c);
                c->next = x->cps;
                x->cps = c;
                xt_stop(&x->idle_tm);
                s.cp_serial = c->serial;
                s.rpt_serial = cp_rpt;
                xt_start_tx(sp, &c->tm, span_rto_ns(sp));
            }
        } else {
            s.type = off + n == x->red + x->green ? LTP_GD_EOB : LTP_GD;
        }
        /* A segment the link service refused is a lost segment: repair
         * recovers it, so the rest of the block still goes. */
        if (emit_seg(sp, &s) < 0)
            e->st.send_errors++;
        off += n;
    }
    return 0;
}

static void export_start(struct span *sp, struct export *x)
{
    struct ltp_engine *e = sp->e;
    x->sp = sp;
    x->started = 1;
    x->next = sp->exports;
    if (x->next)
        x->next->prev = x;
    sp->exports = x;
    sp->n_export++;
    e->st.export_sessions++;
    e->st.exports_started++;
    if (x->red)
        export_send_range(x, 0, x->red, 1, 0);
    if (x->green)
        export_send_range(x, x->red, x->green, 0, 0);
    if (!x->red) {
        /* Green only: nothing will be acknowledged; done once sent. */
        e->st.exports_done++;
        ltp_notice n = {.kind = LTP_EXPORT_DONE,
                        .peer = sp->cfg.peer,
                        .session = x->session,
                        .client = x->client,
                        .user = x->user};
        notify(e, &n);
        export_close(x);
    }
}

static void cp_fire(tern_timer *t, void *arg)
{
    struct cp *c = arg;
    struct export *x = c->x;
    struct span *sp = x->sp;
    struct ltp_engine *e = sp->e;
    c->tm.armed = c->tm.wait_tx = 0;
    e->st.cp_timeouts++;
    if (++c->tries > span_retries(sp)) {
        export_cancel(x, LTP_RLEXC);
        return;
    }
    ltp_seg s;
    memset(&s, 0, sizeof s);
    s.type = c->type;
    s.engine = e->cfg.engine_id;
    s.session = x->session;
    s.client = x->client;
    s.offset = c->off;
    s.length = c->len;
    s.data = x->data + c->off;
    s.cp_serial = c->serial;
    s.rpt_serial = c->rpt_serial;
    e->st.data_retx++;
    xt_start_tx(sp, &c->tm, span_rto_ns(sp));
    emit_seg(sp, &s);
}

static struct export *export_new(struct span *sp, uint64_t client, const void *data,
                                 size_t red, size_t green, void *user, int borrow)
{
    struct export *x = calloc(1, sizeof *x);
    if (!x)
        return NULL;
    if (borrow) {
        /* Read only: segments are encoded from it, nothing writes to it. */
        x->data = (uint8_t *)(uintptr_t)data;
        x->borrowed = 1;
    } else {
        x->data = malloc(red + green ? red + green : 1);
        if (!x->data) {
            free(x);
            return NULL;
        }
        memcpy(x->data, data, red + green);
    }
    x->sp = sp;
    x->client = client;
    x->red = red;
    x->green = green;
    x->user = user;
    x->next_cp = 1 + (rng_next(sp->e) & 0xffff);
    xt_init(sp->e, &x->cancel_tm, x_cancel_fire, x);
    xt_init(sp->e, &x->idle_tm, x_idle_fire, x);
    return x;
}

/* Known by session number from now on (a queued block too, so that a
 * resume does not start it twice); started when the window allows. */
static void export_enqueue(struct span *sp, struct export *x, uint64_t *session)
{
    if (ltp__map_put(&sp->e->exports, 0, x->session, x)) {
        sp->e->st.store_errors++; /* out of memory: the block waits in the store */
        xt_stop(&x->cancel_tm);
        if (!x->borrowed)
            free(x->data);
        free(x);
        return;
    }
    if (sp->up && sp->n_export < sp->cfg.max_export) {
        export_start(sp, x);
        return;
    }
    x->qnext = NULL;
    if (sp->qtail)
        sp->qtail->qnext = x;
    else
        sp->qhead = x;
    sp->qtail = x;
    sp->queued++;
    sp->e->st.queued_blocks++;
    (void)session;
}

/* ------------------------------------------------------------- imports */

static void import_waiting(struct import *im, int waiting);

static void rpts_free(struct import *im)
{
    while (im->rpts) {
        struct rpt *r = im->rpts;
        im->rpts = r->next;
        xt_stop(&r->tm);
        free(r->bytes);
        free(r);
    }
    im->n_rpts = im->n_unacked = 0;
    im->rpt_bytes = 0;
}

/* Counts what the session holds now in its span's and the engine's totals. */
static void import_account(struct import *im)
{
    struct span *sp = im->sp;
    uint64_t h = IMPORT_OVERHEAD + im->extent +
                 (im->got.cap + im->claimed.cap) * sizeof(struct ltp_iv) + im->rpt_bytes;
    sp->import_held = sp->import_held - im->bytes + h;
    sp->e->st.import_bytes = sp->e->st.import_bytes - im->bytes + h;
    im->bytes = h;
}

static void import_free(struct import *im)
{
    struct span *sp = im->sp;
    struct ltp_engine *e = sp->e;
    rpts_free(im);
    import_waiting(im, 0);
    sp->import_held -= im->bytes;
    e->st.import_bytes -= im->bytes;
    xt_stop(&im->cancel_tm);
    if (im->prev)
        im->prev->next = im->next;
    else
        sp->imports = im->next;
    if (im->next)
        im->next->prev = im->prev;
    ltp__map_del(&e->imports, im->engine, im->session);
    sp->n_import--;
    e->st.import_sessions--;
    ltp__iv_free(&im->got);
    ltp__iv_free(&im->claimed);
    free(im->buf);
    free(im);
}

static void import_cancel(struct import *im, uint8_t reason)
{
    struct span *sp = im->sp;
    struct ltp_engine *e = sp->e;
    if (im->cancelling)
        return;
    im->cancelling = 1;
    im->reason = reason;
    rpts_free(im);
    import_waiting(im, 0);
    import_account(im);
    e->st.imports_cancelled++;
    TERN_INFO(e->lg, "ltp", "import session %" PRIu64 ":%" PRIu64 " cancelled: %s",
              im->engine, im->session, ltp_reason_name(reason));
    ltp_notice n = {.kind = LTP_IMPORT_CANCELLED,
                    .peer = im->engine,
                    .session = im->session,
                    .client = im->client,
                    .reason = reason};
    notify(e, &n);
    ltp_seg s = {
        .type = LTP_CR, .engine = im->engine, .session = im->session, .reason = reason};
    xt_start_tx(sp, &im->cancel_tm, span_rto_ns(sp));
    im->cancel_tries = 0;
    emit_seg(sp, &s);
}

static void x_cancel_fire(tern_timer *t, void *arg)
{
    struct export *x = arg;
    struct span *sp = x->sp;
    x->cancel_tm.armed = x->cancel_tm.wait_tx = 0;
    if (++x->cancel_tries > span_retries(sp)) {
        export_close(x);
        return;
    }
    ltp_seg s = {.type = LTP_CS,
                 .engine = sp->e->cfg.engine_id,
                 .session = x->session,
                 .reason = x->reason};
    xt_start_tx(sp, &x->cancel_tm, span_rto_ns(sp));
    emit_seg(sp, &s);
}

static void x_idle_fire(tern_timer *t, void *arg)
{
    struct export *x = arg;
    x->idle_tm.armed = x->idle_tm.wait_tx = 0;
    if (x->waiting && x->red) {
        /* The peer had no room: ask again with a checkpoint for the last
         * byte, answering its last report. Unanswered, it is retried and
         * then cancels as any checkpoint does: the peer has gone silent. */
        export_send_range(x, x->red - 1, 1, 1, x->wait_rpt);
        return;
    }
    export_cancel(x, LTP_RLEXC);
}

static void import_close(struct import *im, int completed)
{
    struct ltp_engine *e = im->sp->e;
    if (completed)
        e->st.imports_done++;
    if (completed && im->red_len != UINT64_MAX && im->red_len)
        im->sp->import_hint = im->red_len;
    closed_add(e, im->engine, im->session, im->sp->cfg.peer,
               im->red_len == UINT64_MAX ? 0 : im->red_len, completed ? 'i' : 'c');
    import_free(im);
}

static void i_timer_fire(tern_timer *t, void *arg)
{
    struct import *im = arg;
    struct span *sp = im->sp;
    im->cancel_tm.armed = im->cancel_tm.wait_tx = 0;
    if (!im->cancelling) {
        /* Idle for a whole repair budget: the sender has given up. A green
         * block has no one to tell; a red one is cancelled. */
        if (im->red_len == 0 || (im->red_len == UINT64_MAX && im->green_min == 0))
            import_close(im, 0);
        else
            import_cancel(im, LTP_RLEXC);
        return;
    }
    if (++im->cancel_tries > span_retries(sp)) {
        import_close(im, 0);
        return;
    }
    ltp_seg s = {.type = LTP_CR,
                 .engine = im->engine,
                 .session = im->session,
                 .reason = im->reason};
    xt_start_tx(sp, &im->cancel_tm, span_rto_ns(sp));
    emit_seg(sp, &s);
}

static void rpt_fire(tern_timer *t, void *arg);

/* The peer acknowledged report r (an RA, or a checkpoint answering it). */
static void rpt_acked(struct import *im, struct rpt *r)
{
    if (r->acked)
        return;
    r->acked = 1;
    im->n_unacked--;
    xt_stop(&r->tm);
}

/* Forgets acknowledged reports, oldest first, until at most keep remain
 * (they are kept only to know the scope of a checkpoint answering one). */
static void rpts_prune(struct import *im, unsigned keep)
{
    while (im->n_rpts > keep && im->n_unacked < im->n_rpts) {
        struct rpt **pr = &im->rpts, **oldest = NULL;
        for (; *pr; pr = &(*pr)->next)
            if ((*pr)->acked)
                oldest = pr; /* newest first: the last one seen is the oldest */
        struct rpt *r = *oldest;
        *oldest = r->next;
        im->n_rpts--;
        im->rpt_bytes -= sizeof *r + r->len;
        free(r->bytes);
        free(r);
    }
}

/* Sends the report(s) answering a checkpoint, for [lower, upper). */
static int import_report(struct import *im, uint64_t cp_serial, uint64_t lower,
                         uint64_t upper, int no_room)
{
    struct span *sp = im->sp;
    struct ltp_engine *e = sp->e;
    /* The claims within [lower, upper). */
    size_t nc = 0, cap = im->got.n + 1;
    ltp_claim *cl = malloc(cap * sizeof *cl);
    uint64_t *starts = malloc(cap * sizeof *starts);
    if (!cl || !starts) {
        free(cl);
        free(starts);
        return -ENOMEM;
    }
    for (size_t i = 0; i < im->got.n; i++) {
        uint64_t lo = im->got.v[i].lo, hi = im->got.v[i].hi;
        if (hi <= lower || lo >= upper)
            continue;
        if (lo < lower)
            lo = lower;
        if (hi > upper)
            hi = upper;
        starts[nc] = lo;
        cl[nc].offset = lo;
        cl[nc].length = hi - lo;
        nc++;
    }
    /* Claims that fit one segment: each takes at most 20 bytes. */
    size_t per = sp->cfg.max_seg > 100 ? (sp->cfg.max_seg - 60) / 20 : 1;
    /* A round may use a number of report segments sized for the expected
     * loss; claims beyond it are left out, so the sender resends those
     * bytes too. That costs bandwidth, never correctness. */
    if (sp->cfg.seg_loss_rate > 0) {
        double segs = (double)(upper - lower) / (double)sp->cfg.max_seg + 1;
        size_t max_rs = (size_t)(2.0 * sp->cfg.seg_loss_rate * segs / (double)per) + 1;
        if (nc > max_rs * per)
            nc = max_rs * per;
    }
    size_t i = 0;
    int rc = 0;
    do {
        size_t k = nc - i < per ? nc - i : per;
        uint64_t lo = i == 0 ? lower : starts[i];
        uint64_t hi = i + k >= nc ? upper : starts[i + k];
        ltp_seg s;
        memset(&s, 0, sizeof s);
        s.type = LTP_RS;
        s.engine = im->engine;
        s.session = im->session;
        s.rpt_serial = im->next_rpt++;
        s.cp_serial = cp_serial;
        if (no_room) {
            s.n_hext = 1;
            s.hext[0].tag = LTP_EXT_NO_ROOM;
        }
        s.lower = lo;
        s.upper = hi;
        for (size_t j = 0; j < k; j++)
            cl[i + j].offset -= lo;
        for (size_t j = 0; j < k && !im->claimed_lost; j++)
            if (ltp__iv_add(&im->claimed, cl[i + j].offset + lo,
                            cl[i + j].offset + lo + cl[i + j].length, MAX_ACKED, NULL))
                im->claimed_lost = 1;
        s.n_claims = k;
        s.claims = cl + i;
        int n = ltp_seg_encode(&s, e->scratch, e->scratch_cap);
        if (n < 0) {
            rc = n;
            break;
        }
        struct rpt *r = calloc(1, sizeof *r);
        uint8_t *b = r ? malloc((size_t)n) : NULL;
        if (!b) {
            free(r);
            rc = -ENOMEM;
            break;
        }
        memcpy(b, e->scratch, (size_t)n);
        r->im = im;
        r->serial = s.rpt_serial;
        r->lower = lo;
        r->upper = hi;
        r->bytes = b;
        r->len = (size_t)n;
        xt_init(e, &r->tm, rpt_fire, r);
        r->next = im->rpts;
        im->rpts = r;
        im->n_rpts++;
        im->n_unacked++;
        im->rpt_bytes += sizeof *r + (size_t)n;
        xt_start_tx(sp, &r->tm, span_rto_ns(sp));
        emit(sp, b, (size_t)n);
        i += k;
    } while (i < nc);
    free(cl);
    free(starts);
    rpts_prune(im, MAX_RPTS);
    import_account(im);
    return rc;
}

static void rpt_fire(tern_timer *t, void *arg)
{
    struct rpt *r = arg;
    struct import *im = r->im;
    struct span *sp = im->sp;
    r->tm.armed = r->tm.wait_tx = 0;
    sp->e->st.rs_timeouts++;
    if (++r->tries > span_retries(sp)) {
        import_cancel(im, LTP_RLEXC);
        return;
    }
    xt_start_tx(sp, &r->tm, span_rto_ns(sp));
    emit(sp, r->bytes, r->len);
}

static int red_complete(const struct import *im)
{
    return im->red_len != UINT64_MAX && ltp__iv_covers(&im->got, 0, im->red_len);
}

/* Done when the red part is delivered and every report about it has been
 * acknowledged, or (green only) when the end of block arrived. */
static void import_maybe_close(struct import *im)
{
    if (im->cancelling)
        return;
    if (im->red_len == 0 || (im->red_len == UINT64_MAX && im->green_min == 0)) {
        if (im->green_eob)
            import_close(im, 1);
        return;
    }
    if (!im->red_delivered || im->held)
        return;
    for (struct rpt *r = im->rpts; r; r = r->next)
        if (!r->acked)
            return;
    import_close(im, 1);
}

/* Keeps red bytes [off, off + len), which the caller checked lie within the
 * span's max block. The buffer is the block's, but it grows only with what
 * has arrived: bytes far beyond it (twice the bytes kept plus KEEP_SLACK)
 * are not kept, nor bytes that would open more than MAX_RUNS separate runs,
 * so memory follows what the peer sent, not the extent it scattered it
 * over. 0 kept (or had already), 1 not kept (the sender sends it again),
 * TERN_EFULL if keeping it passes the session's or the span's share,
 * -ENOMEM. */
static int import_store(struct import *im, uint64_t off, const uint8_t *data,
                        uint64_t len)
{
    struct span *sp = im->sp;
    uint64_t end = off + len; /* <= max block: no wrap */
    if (end > im->extent) {
        uint64_t slack =
            sp->cfg.max_seg * 64 > KEEP_SLACK ? sp->cfg.max_seg * 64 : KEEP_SLACK;
        if (end > sat_add(sat_mul(2, sat_add(im->arrived, len)), slack))
            return 1;
        uint64_t more = end - im->extent;
        if (sat_add(im->bytes, more) > session_share(sp) ||
            sat_add(sp->import_held, more) > span_import_cap(sp))
            return TERN_EFULL;
    }
    if (end > im->cap) {
        /* Blocks on a span tend to be alike: start at the last one's size,
         * so a block is usually received without growing its buffer (what
         * is allocated and not written costs no memory, and is not
         * counted). */
        uint64_t start = im->cap ? im->cap : 65536;
        if (!im->cap && sp->import_hint > start)
            start = sp->import_hint;
        uint64_t nc = tern_ckd_grow(start, end, span_max_block(sp));
        if (!nc || nc > SIZE_MAX)
            return TERN_EFULL;
        uint8_t *p = realloc(im->buf, (size_t)nc);
        if (!p)
            return -ENOMEM;
        im->buf = p;
        im->cap = nc;
    }
    /* Only the bytes not received yet are copied: a byte once kept (maybe
     * claimed already, and in the CRC) is never overwritten, whatever a
     * later overlapping segment says it is. */
    const struct ltp_ivset *g = &im->got;
    size_t k = 0, hi = g->n;
    while (k < hi) {
        size_t mid = (k + hi) / 2;
        if (g->v[mid].hi <= off)
            k = mid + 1;
        else
            hi = mid;
    }
    for (uint64_t pos = off; pos < end; k++) {
        uint64_t stop = k < g->n && g->v[k].lo < end ? g->v[k].lo : end;
        if (stop > pos)
            memcpy(im->buf + pos, data + (pos - off), (size_t)(stop - pos));
        if (stop == end)
            break;
        if (g->v[k].hi > pos)
            pos = g->v[k].hi;
    }
    uint64_t added;
    int rc = ltp__iv_add(&im->got, off, end, MAX_RUNS, &added);
    if (rc == TERN_EFULL)
        return 1;
    if (rc)
        return rc;
    if (off <= im->crc_upto && end > im->crc_upto) {
        /* In order: checksum while the bytes are still in cache. */
        im->crc = tern_crc32c(im->crc, im->buf + im->crc_upto, end - im->crc_upto);
        im->crc_upto = end;
    }
    im->arrived += added;
    if (end > im->extent)
        im->extent = end;
    import_account(im);
    return 0;
}

/* How often, at most, an episode of "no room" is said in the log: a store
 * that fills and drains over and over must not fill the log instead. */
#define ROOM_LOG_NS (60000 * NS_PER_MS)

/* Counts the session among those whose whole red part waits for room at
 * the client, or no longer; the first of an episode is said in the log. */
static void import_waiting(struct import *im, int waiting)
{
    struct span *sp = im->sp;
    struct ltp_engine *e = sp->e;
    if (!!waiting == im->waiting)
        return;
    im->waiting = !!waiting;
    if (!waiting) {
        sp->imports_waiting--;
        e->st.imports_waiting--;
        return;
    }
    sp->imports_waiting++;
    e->st.imports_waiting++;
    if (sp->client_full)
        return;
    sp->client_full = 1;
    sp->client_full_said = 0;
    uint64_t now = now_ns(e);
    if (sp->client_full_logged && now - sp->client_full_logged < ROOM_LOG_NS)
        return;
    sp->client_full_logged = now ? now : 1;
    sp->client_full_said = 1;
    TERN_INFO(e->lg, "ltp",
              "no room at client service %" PRIu64 ": blocks from engine %" PRIu64
              " wait, unclaimed (reports tell engine %" PRIu64
              " all but the end of each arrived, so it keeps them and waits; they are "
              "taken once there is room)",
              im->client, sp->cfg.peer, sp->cfg.peer);
}

/* Hands the complete red part to the client: 0 taken (held or not), 1 the
 * client has no room (LTP_LATER: no report claims it until it takes it),
 * -1 the session was cancelled. */
static int import_deliver(struct import *im)
{
    struct span *sp = im->sp;
    ltp_notice n = {.kind = LTP_RED_PART,
                    .peer = im->engine,
                    .session = im->session,
                    .client = im->client,
                    .data = im->buf,
                    .len = (size_t)im->red_len,
                    .red_crc32c = im->crc,
                    .red_crc_valid = im->crc_upto == im->red_len};
    int nrc = notify(sp->e, &n);
    if (nrc < 0) {
        import_cancel(im, LTP_SYS_CNCLD);
        return -1;
    }
    if (nrc == LTP_LATER) {
        im->held = im->later = 1;
        import_waiting(im, 1);
        return 1;
    }
    if (im->later) {
        im->later = 0;
        import_waiting(im, 0);
        if (!sp->imports_waiting && sp->client_full) {
            sp->client_full = 0;
            if (sp->client_full_said)
                TERN_INFO(sp->e->lg, "ltp",
                          "room again at client service %" PRIu64
                          ": blocks from engine %" PRIu64 " are taken",
                          im->client, sp->cfg.peer);
        }
    }
    im->red_delivered = 1;
    im->held = nrc == LTP_HOLD;
    if (!im->held && im->held_cp && !im->cancelling) {
        im->held_cp = 0; /* the checkpoint that came while it waited */
        import_report(im, im->held_serial, im->held_lower, im->held_upper, 0);
    }
    return 0;
}

/* Cancels, without keeping any state, a session the import cap has no room
 * for. RFC 5326 3.2.4 has no code for "too many sessions"; SYS_CNCLD (a
 * system error condition caused unexpected session termination) is the
 * closest: the receiving engine lacks a resource, and the block itself is
 * fine to send again. The refusal is remembered among the closed sessions
 * ('r'), so a checkpoint of the session is refused again (our cancel may
 * have been lost) and its other segments are only counted. */
static void refuse_import(struct span *sp, const ltp_seg *s)
{
    ltp_seg cr = {.type = LTP_CR,
                  .engine = s->engine,
                  .session = s->session,
                  .reason = LTP_SYS_CNCLD};
    emit_seg(sp, &cr);
}

/* A data segment reaching past the largest block the span takes (the
 * 29-byte datagram with offset 2^63 - 1 that once hung the engine): counted
 * as malformed, said once, and its session cancelled (or, if it has none,
 * refused with a cancel and forgotten) before any size is computed from
 * it. */
static int beyond_block(struct span *sp, const ltp_seg *s, struct import *im)
{
    struct ltp_engine *e = sp->e;
    e->st.malformed++;
    e->st.oversized++;
    refusal(e, RF_BEYOND_BLOCK,
            "engine %" PRIu64 " session %" PRIu64 ": %s segment at offset %" PRIu64
            ", %" PRIu64
            " bytes, reaches past the largest block this span takes (%" PRIu64
            " bytes; ltpadmin 'm maxblocksize'): session cancelled",
            s->engine, s->session, ltp_seg_type_name(s->type), s->offset, s->length,
            span_max_block(sp));
    if (im)
        import_cancel(im, LTP_SYS_CNCLD);
    else
        refuse_import(sp, s);
    return -EMSGSIZE;
}

/* The session holds more than its share: cancelled, counted, said once. */
static void over_share(struct import *im)
{
    struct span *sp = im->sp;
    struct ltp_engine *e = sp->e;
    e->st.imports_over_share++;
    refusal(e, RF_OVER_SHARE,
            "engine %" PRIu64 " session %" PRIu64 " cancelled: keeping its data would "
            "take more than a session's share (%" PRIu64 " bytes) or the span's (%" PRIu64
            " bytes, %" PRIu64 " held; ltpadmin 'm maximportbytes')",
            im->engine, im->session, session_share(sp), span_import_cap(sp),
            sp->import_held);
    import_cancel(im, LTP_SYS_CNCLD);
}

/* Answers checkpoint s of a session whose whole red part waits for the
 * client's room: 1 if it did, 0 if it cannot (the checkpoint then waits,
 * unanswered, as for a held block). The report's scope runs from 0 to the
 * first byte no report has claimed yet, and claims all of it: the sender's
 * checkpoint is answered (its retransmission timer stops, no retries are
 * used up), nothing in the scope is missing (nothing is sent again), and
 * the block is not claimed whole, so the sender keeps its copy. RFC 5326
 * lets a report's upper bound stop short of the red part: the rest is
 * simply not reported on yet. The report carries LTP_EXT_NO_ROOM, by
 * which Tern's sender knows to wait (another sender just waits for a
 * report). Reports already acknowledged are dropped first, so a long wait
 * keeps no more than one. */
static int report_waiting(struct import *im, const ltp_seg *s)
{
    if (im->claimed_lost)
        return 0;
    uint64_t b = 0; /* the first byte never claimed */
    if (im->claimed.n && im->claimed.v[0].lo == 0)
        b = im->claimed.v[0].hi;
    if (b >= im->red_len)
        return 0; /* cannot be: a whole red part is claimed only once taken */
    rpts_prune(im, 0);
    import_report(im, s->cp_serial, 0, b, 1);
    return 1;
}

static int on_data(struct ltp_engine *e, const ltp_seg *s)
{
    struct span *sp = span_find(e, s->engine);
    if (!sp) {
        e->st.unknown_span++;
        return TERN_ENOTFOUND;
    }
    struct import *im = ltp__map_get(&e->imports, s->engine, s->session);
    if (!im) {
        struct closed *c = ltp__map_get(&e->closed, s->engine, s->session);
        if (c) {
            e->st.stale++;
            if (c->kind == 'i' && ltp_seg_is_cp(s->type) && c->red_len) {
                /* The sender missed our last report: claim it all again. */
                ltp_claim all = {0, c->red_len};
                ltp_seg r;
                memset(&r, 0, sizeof r);
                r.type = LTP_RS;
                r.engine = s->engine;
                r.session = s->session;
                r.rpt_serial = 1;
                r.cp_serial = s->cp_serial;
                r.lower = 0;
                r.upper = c->red_len;
                r.n_claims = 1;
                r.claims = &all;
                emit_seg(sp, &r);
            } else if (c->kind == 'r' && ltp_seg_is_cp(s->type)) {
                /* Still asking: our refusal was lost, say it again. */
                refuse_import(sp, s);
            }
            return 0;
        }
        /* Bounded before anything is kept or computed from it. */
        if (!tern_ckd_extent_ok(s->offset, s->length, span_max_block(sp)))
            return beyond_block(sp, s, NULL);
        if (sp->n_import >= sp->cfg.max_import) {
            /* No room for another session: tell the sender at once, so it
             * can send the block again later, rather than let it find out
             * by exhausting its checkpoint retransmissions. */
            e->st.imports_refused++;
            closed_add(e, s->engine, s->session, sp->cfg.peer, 0, 'r');
            refuse_import(sp, s);
            return TERN_EFULL;
        }
        im = calloc(1, sizeof *im);
        if (!im)
            return -ENOMEM;
        im->sp = sp;
        im->engine = s->engine;
        im->session = s->session;
        im->client = s->client;
        im->red_len = UINT64_MAX;
        im->green_min = UINT64_MAX;
        im->next_rpt = 1 + (rng_next(e) & 0xffff);
        xt_init(e, &im->cancel_tm, i_timer_fire, im);
        if (ltp__map_put(&e->imports, s->engine, s->session, im)) {
            free(im);
            return -ENOMEM;
        }
        im->next = sp->imports;
        if (im->next)
            im->next->prev = im;
        sp->imports = im;
        sp->n_import++;
        e->st.import_sessions++;
        e->st.imports_started++;
        import_account(im);
        ltp_notice n = {.kind = LTP_SESSION_START,
                        .peer = s->engine,
                        .session = s->session,
                        .client = s->client};
        notify(e, &n);
    }
    if (im->cancelling)
        return 0;
    if (!tern_ckd_extent_ok(s->offset, s->length, span_max_block(sp)))
        return beyond_block(sp, s, im);
    /* A session silent for a whole repair budget was given up by its peer. */
    xt_start(sp, &im->cancel_tm, span_budget_ns(sp));
    if (s->length == 0)
        return 0;
    /* From here on offset + length cannot wrap: it is within the max block. */
    uint64_t end = s->offset + s->length;
    if (ltp_seg_is_red(s->type)) {
        int eor = s->type == LTP_RD_CP_EORP || s->type == LTP_RD_CP_EOB;
        if ((im->green_min != UINT64_MAX && end > im->green_min) ||
            (im->red_len != UINT64_MAX && end > im->red_len) ||
            (eor && im->red_len != UINT64_MAX && end != im->red_len) ||
            (eor && im->extent > end)) {
            /* red data past the end of the red part, or two different ends */
            import_cancel(im, LTP_MISCOLORED);
            return 0;
        }
        int rc = import_store(im, s->offset, s->data, s->length);
        if (rc == TERN_EFULL) {
            over_share(im);
            return rc;
        }
        if (rc < 0) {
            import_cancel(im, LTP_SYS_CNCLD);
            return rc;
        }
        if (rc == 1) {
            e->st.segs_not_kept++;
            refusal(e, RF_NOT_KEPT,
                    "engine %" PRIu64 " session %" PRIu64 ": red bytes at offset %" PRIu64
                    " not kept: far beyond the %" PRIu64
                    " bytes that have arrived, or in too many separate runs (the sender "
                    "sends them again)",
                    s->engine, s->session, s->offset, im->arrived);
        }
        if (eor)
            im->red_len = end;
        /* Hand the red part up before any report claims all of it. */
        if (red_complete(im) && !im->red_delivered && import_deliver(im) < 0)
            return 0;
        if (ltp_seg_is_cp(s->type)) {
            uint64_t lower = 0, upper = end;
            int known = 0;
            if (s->rpt_serial) {
                /* A checkpoint answering our report: report over its scope. */
                for (struct rpt *r = im->rpts; r; r = r->next)
                    if (r->serial == s->rpt_serial) {
                        lower = r->lower;
                        upper = r->upper > upper ? r->upper : upper;
                        rpt_acked(im, r); /* its checkpoint acknowledges it */
                        known = 1;
                    }
            }
            if (s->rpt_serial && !known && !red_complete(im)) {
                /* It answers a report this import never sent: one made
                 * before this engine restarted (imports live in memory) or
                 * before the session was forgotten. The sender adds claims
                 * up, so claiming only what arrived since would complete
                 * its set for bytes no one holds any more, and it would let
                 * the block go undelivered. Cancel: the sender sends the
                 * block again. */
                import_cancel(im, LTP_SYS_CNCLD);
                return 0;
            }
            if (im->held) {
                /* No room at the client: answered now, claiming all but
                 * the end; the whole block is claimed once it is taken. */
                if (im->later && report_waiting(im, s)) {
                    lower = 0;
                    upper = im->red_len;
                }
                if (!im->held_cp || lower < im->held_lower)
                    im->held_lower = lower;
                if (!im->held_cp || upper > im->held_upper)
                    im->held_upper = upper;
                im->held_serial = s->cp_serial;
                im->held_cp = 1;
            } else {
                import_report(im, s->cp_serial, lower, upper, 0);
            }
            if (im->n_unacked > MAX_RPTS) {
                refusal(e, RF_TOO_MANY_RPTS,
                        "engine %" PRIu64 " session %" PRIu64
                        " cancelled: more than %d of its reports unacknowledged",
                        im->engine, im->session, MAX_RPTS);
                import_cancel(im, LTP_SYS_CNCLD);
                return 0;
            }
            if (im->bytes > session_share(sp) || sp->import_held > span_import_cap(sp)) {
                over_share(im);
                return TERN_EFULL;
            }
        }
    } else {
        if (im->red_len != UINT64_MAX && s->offset < im->red_len) {
            import_cancel(im, LTP_MISCOLORED);
            return 0;
        }
        if (s->offset < im->green_min)
            im->green_min = s->offset;
        if (s->type == LTP_GD_EOB)
            im->green_eob = 1;
        ltp_notice n = {.kind = LTP_GREEN_SEG,
                        .peer = im->engine,
                        .session = im->session,
                        .client = im->client,
                        .data = s->data,
                        .len = (size_t)s->length,
                        .offset = s->offset,
                        .eob = s->type == LTP_GD_EOB};
        notify(e, &n);
    }
    import_maybe_close(im);
    return 0;
}

/* A report about bytes outside the block, or claims too scattered to keep:
 * counted as malformed, said once, dropped (not acknowledged either). */
static int bad_report(struct export *x, const ltp_seg *s, const char *why)
{
    struct ltp_engine *e = x->sp->e;
    e->st.malformed++;
    e->st.bad_reports++;
    refusal(e, RF_BAD_REPORT,
            "dropped a report from engine %" PRIu64 " for session %" PRIu64
            " (scope %" PRIu64 " to %" PRIu64 ", %" PRIu64 " claims): %s",
            x->sp->cfg.peer, x->session, s->lower, s->upper, (uint64_t)s->n_claims, why);
    return TERN_EMALFORMED;
}

/* How often a sender whose peer has no room asks again (a checkpoint for
 * the last byte): within half a repair budget, so the receiver's idle timer
 * never gives the session up, and at most once per checkpoint lifetime. */
static uint64_t probe_ns(const struct span *sp)
{
    uint64_t rto = span_rto_ns(sp);
    uint64_t life = sat_mul((uint64_t)span_retries(sp) + 1, rto);
    uint64_t half = span_budget_ns(sp) / 2;
    uint64_t v = life < half ? life : half;
    return v > rto ? v : rto;
}

/* Counts the export among those waiting for the peer's room, or no longer;
 * the first of an episode is said in the log. */
static void export_waiting(struct export *x, int waiting)
{
    struct span *sp = x->sp;
    struct ltp_engine *e = sp->e;
    if (!!waiting == x->waiting)
        return;
    x->waiting = !!waiting;
    if (!waiting) {
        sp->exports_waiting--;
        e->st.exports_waiting--;
        return;
    }
    sp->exports_waiting++;
    e->st.exports_waiting++;
    if (sp->peer_full)
        return;
    sp->peer_full = 1;
    sp->peer_full_said = 0;
    uint64_t now = now_ns(e);
    if (sp->peer_full_logged && now - sp->peer_full_logged < ROOM_LOG_NS)
        return;
    sp->peer_full_logged = now ? now : 1;
    sp->peer_full_said = 1;
    TERN_WARN(
        e->lg, "ltp",
        "engine %" PRIu64 " has no room: blocks wait (it reports all but the end of "
        "session %" PRIu64 " received and does not claim the rest yet; the sessions "
        "stay open, asked about every %" PRIu64 " ms, and no retransmissions are "
        "used up)",
        sp->cfg.peer, x->session, (uint64_t)(probe_ns(sp) / NS_PER_MS));
}

/* An export to the span's peer completed: if none waits any more, the
 * peer has room again. */
static void peer_room_again(struct span *sp)
{
    if (!sp->peer_full || sp->exports_waiting)
        return;
    sp->peer_full = 0;
    if (sp->peer_full_said)
        TERN_INFO(sp->e->lg, "ltp", "engine %" PRIu64 " has room again: blocks go on",
                  sp->cfg.peer);
}

static int on_report(struct ltp_engine *e, const ltp_seg *s)
{
    struct export *x =
        s->engine == e->cfg.engine_id ? ltp__map_get(&e->exports, 0, s->session) : NULL;
    struct span *sp = NULL;
    if (x && x->started && !x->cancelling && s->upper > x->red)
        return bad_report(x, s, "its scope ends past the red part");
    if (x) {
        sp = x->sp;
    } else {
        struct closed *c = ltp__map_get(&e->closed, s->engine, s->session);
        if (c)
            sp = span_find(e, c->peer);
        e->st.stale++;
    }
    if (sp) {
        ltp_seg ra = {.type = LTP_RA,
                      .engine = s->engine,
                      .session = s->session,
                      .rpt_serial = s->rpt_serial};
        emit_seg(sp, &ra);
    }
    if (!x || x->cancelling || !x->started)
        return 0;
    for (unsigned i = 0; i < x->n_recent && i < RECENT_RPTS; i++)
        if (x->recent_rpt[i] == s->rpt_serial)
            return 0; /* a duplicate: acknowledged again, nothing else */
    x->recent_rpt[x->n_recent++ % RECENT_RPTS] = s->rpt_serial;
    if (s->cp_serial)
        for (struct cp **pc = &x->cps; *pc; pc = &(*pc)->next)
            if ((*pc)->serial == s->cp_serial) {
                struct cp *c = *pc;
                *pc = c->next;
                xt_stop(&c->tm);
                free(c);
                break;
            }
    for (uint64_t i = 0; i < s->n_claims; i++) {
        /* The decoder keeps each claim within [0, upper - lower), and upper
         * is within the red part: no sum here can wrap. */
        uint64_t lo, hi;
        if (tern_ckd_add(&lo, s->lower, s->claims[i].offset) ||
            tern_ckd_add(&hi, lo, s->claims[i].length))
            return bad_report(x, s, "a claim's end does not fit 64 bits");
        int rc = ltp__iv_add(&x->acked, lo, hi, MAX_ACKED, NULL);
        if (rc == TERN_EFULL)
            return bad_report(x, s, "its claims leave the block in too many pieces");
        if (rc)
            return -ENOMEM;
    }
    if (!x->cps)
        xt_start(sp, &x->idle_tm, span_budget_ns(sp));
    if (ltp__iv_covers(&x->acked, 0, x->red)) {
        e->st.exports_done++;
        ltp_notice n = {.kind = LTP_EXPORT_DONE,
                        .peer = sp->cfg.peer,
                        .session = x->session,
                        .client = x->client,
                        .user = x->user};
        notify(e, &n);
        export_close(x);
        peer_room_again(sp);
        return 0;
    }
    /* The peer has the block but no room to take it (Tern's extension on
     * its report; the claims stop short of the end): wait, asking now and
     * then, instead of sending again or giving up after a repair budget. */
    int no_room = 0;
    for (unsigned i = 0; i < s->n_hext; i++)
        no_room |= s->hext[i].tag == LTP_EXT_NO_ROOM;
    if (no_room && ltp__iv_covers(&x->acked, 0, s->upper)) {
        e->st.peer_no_room++;
        x->wait_rpt = s->rpt_serial;
        export_waiting(x, 1);
        if (!x->cps)
            xt_start(sp, &x->idle_tm, probe_ns(sp));
        return 0;
    }
    export_waiting(x, 0);
    /* What the report scopes but does not claim goes again. */
    uint64_t upper = s->upper < x->red ? s->upper : x->red;
    struct ltp_iv gaps[64];
    size_t ng = 0;
    uint64_t pos = s->lower;
    for (size_t i = 0; i < x->acked.n && pos < upper; i++) {
        const struct ltp_iv *v = &x->acked.v[i];
        if (v->hi <= pos)
            continue;
        if (v->lo > pos) {
            uint64_t end = v->lo < upper ? v->lo : upper;
            if (ng < 64)
                gaps[ng++] = (struct ltp_iv){pos, end};
            else
                gaps[63].hi = end; /* merge the tail: resend a little more */
        }
        pos = v->hi;
    }
    if (pos < upper) {
        if (ng < 64)
            gaps[ng++] = (struct ltp_iv){pos, upper};
        else
            gaps[63].hi = upper;
    }
    if (!ng)
        return 0;
    if (++x->rounds > span_rounds(sp)) {
        export_cancel(x, LTP_RXMTCYCEXC);
        return 0;
    }
    for (size_t i = 0; i < ng; i++) {
        e->st.data_retx++;
        export_send_range(x, gaps[i].lo, gaps[i].hi - gaps[i].lo, 1,
                          i + 1 == ng ? s->rpt_serial : (uint64_t)-1);
    }
    return 0;
}

static int on_report_ack(struct ltp_engine *e, const ltp_seg *s)
{
    struct import *im = ltp__map_get(&e->imports, s->engine, s->session);
    if (!im) {
        e->st.stale++;
        return 0;
    }
    for (struct rpt *r = im->rpts; r; r = r->next)
        if (r->serial == s->rpt_serial)
            rpt_acked(im, r);
    import_maybe_close(im);
    return 0;
}

static int on_cancel(struct ltp_engine *e, const ltp_seg *s)
{
    if (s->type == LTP_CS) {
        /* From a sender about its block, which we import. */
        struct span *sp = span_find(e, s->engine);
        if (!sp) {
            e->st.unknown_span++;
            return TERN_ENOTFOUND;
        }
        ltp_seg ack = {.type = LTP_CAS, .engine = s->engine, .session = s->session};
        emit_seg(sp, &ack); /* also answers a link check for a session we never had */
        struct import *im = ltp__map_get(&e->imports, s->engine, s->session);
        if (!im) {
            e->st.stale++;
            return 0;
        }
        e->st.imports_cancelled++;
        ltp_notice n = {.kind = LTP_IMPORT_CANCELLED,
                        .peer = s->engine,
                        .session = s->session,
                        .client = im->client,
                        .reason = s->reason,
                        .by_peer = 1};
        if (!im->cancelling)
            notify(e, &n);
        import_close(im, 0);
        return 0;
    }
    /* LTP_CR: from a receiver about our block. */
    struct export *x =
        s->engine == e->cfg.engine_id ? ltp__map_get(&e->exports, 0, s->session) : NULL;
    struct span *sp = x ? x->sp : NULL;
    if (!x) {
        struct closed *c = ltp__map_get(&e->closed, s->engine, s->session);
        if (c)
            sp = span_find(e, c->peer);
        e->st.stale++;
    }
    if (sp) {
        ltp_seg ack = {.type = LTP_CAR, .engine = s->engine, .session = s->session};
        emit_seg(sp, &ack);
    }
    if (!x)
        return 0;
    if (!x->cancelling) {
        e->st.exports_cancelled++;
        ltp_notice n = {.kind = LTP_EXPORT_CANCELLED,
                        .peer = sp->cfg.peer,
                        .session = x->session,
                        .client = x->client,
                        .reason = s->reason,
                        .by_peer = 1,
                        .user = x->user};
        notify(e, &n);
    }
    export_close(x);
    return 0;
}

static int on_cancel_ack(struct ltp_engine *e, const ltp_seg *s)
{
    if (s->type == LTP_CAS) {
        struct export *x = s->engine == e->cfg.engine_id
                               ? ltp__map_get(&e->exports, 0, s->session)
                               : NULL;
        if (x && x->cancelling)
            export_close(x);
        else
            e->st.stale++;
        return 0;
    }
    struct import *im = ltp__map_get(&e->imports, s->engine, s->session);
    if (im && im->cancelling)
        import_close(im, 0);
    else
        e->st.stale++;
    return 0;
}

TERN_API void ltp_engine_sent(ltp_engine *e, const uint8_t *buf, size_t len)
{
    ltp_seg s;
    s.claims = e->claims;
    if (ltp_seg_decode(buf, len, &s, MAX_CLAIMS_IN) != 0)
        return;
    if (ltp_seg_is_cp(s.type) || s.type == LTP_CS) {
        struct export *x =
            s.engine == e->cfg.engine_id ? ltp__map_get(&e->exports, 0, s.session) : NULL;
        if (!x || !x->started)
            return;
        if (s.type == LTP_CS) {
            xt_sent(x->sp, &x->cancel_tm);
            return;
        }
        for (struct cp *c = x->cps; c; c = c->next)
            if (c->serial == s.cp_serial)
                xt_sent(x->sp, &c->tm);
    } else if (s.type == LTP_RS || s.type == LTP_CR) {
        struct import *im = ltp__map_get(&e->imports, s.engine, s.session);
        if (!im)
            return;
        if (s.type == LTP_CR) {
            xt_sent(im->sp, &im->cancel_tm);
            return;
        }
        for (struct rpt *r = im->rpts; r; r = r->next)
            if (r->serial == s.rpt_serial)
                xt_sent(im->sp, &r->tm);
    }
}

TERN_API int ltp_engine_receive(ltp_engine *e, const uint8_t *buf, size_t len)
{
    ltp_seg s;
    e->st.seg_in++;
    e->st.bytes_in += len;
    s.claims = e->claims;
    int rc = ltp_seg_decode(buf, len, &s, MAX_CLAIMS_IN);
    if (rc == 0 && s.type == LTP_RS && s.n_claims > MAX_CLAIMS_IN)
        rc = TERN_EFULL;
    if (rc < 0) {
        e->st.malformed++;
        unsigned bit = 1u << ((unsigned)(rc - TERN_E_FIRST) % 32);
        if (!(e->logged_causes & bit)) {
            e->logged_causes |= bit;
            TERN_WARN(
                e->lg, "ltp",
                "dropped a malformed segment of %zu bytes: %s (further ones with this "
                "cause are only counted)",
                len, tern_strerror(rc));
        }
        return rc;
    }
    switch (s.type) {
    case LTP_RS:
        return on_report(e, &s);
    case LTP_RA:
        return on_report_ack(e, &s);
    case LTP_CS:
    case LTP_CR:
        return on_cancel(e, &s);
    case LTP_CAS:
    case LTP_CAR:
        return on_cancel_ack(e, &s);
    default:
        return on_data(e, &s);
    }
}

/* ------------------------------------------------------------- the API */

TERN_API int ltp_engine_new(tern_loop *loop, const ltp_engine_cfg *cfg,
                            const ltp_host *host, tern_log *lg, ltp_engine **out)
{
    if (!loop || !cfg || !host || !host->send || !cfg->engine_id || cfg->max_rounds > 256)
        return -EINVAL;
    ltp_engine *e = calloc(1, sizeof *e);
    if (!e)
        return -ENOMEM;
    e->loop = loop;
    e->cfg = *cfg;
    e->host = *host;
    e->lg = lg;
    if (!e->cfg.max_retries)
        e->cfg.max_retries = 5;
    if (!e->cfg.max_rounds)
        e->cfg.max_rounds = 8;
    if (!e->cfg.own_qtime_ms)
        e->cfg.own_qtime_ms = 1;
    if (!e->cfg.closed_ttl_ms)
        e->cfg.closed_ttl_ms = 60000;
    e->rng =
        (cfg->engine_id * 0x9E3779B97F4A7C15ull) ^ tern_loop_now(loop) ^ 0x5DEECE66Dull;
    if (!e->rng)
        e->rng = 1;
    e->next_session = cfg->first_session;
    if (!e->next_session) {
        /* Counting up from the clock keeps a restarted engine clear of the
         * numbers it used before (a peer would take them for stragglers). */
        uint64_t ms = tern_clock_dtn_ms(tern_loop_clock(loop));
        e->next_session = (ms ? ms : 1) << 4;
    }
    e->store = cfg->store;
    if (e->store) {
        int rc = store_open(e);
        if (rc) {
            TERN_ERROR(lg, "ltp", "engine %" PRIu64 ": cannot use the store: %s",
                       cfg->engine_id, tern_strerror(rc));
            free(e);
            return rc;
        }
    }
    e->scratch_cap = 65536 + 256;
    e->scratch = malloc(e->scratch_cap);
    e->claims = malloc(MAX_CLAIMS_IN * sizeof *e->claims);
    if (!e->scratch || !e->claims) {
        free(e->scratch);
        free(e->claims);
        free(e);
        return -ENOMEM;
    }
    *out = e;
    return 0;
}

TERN_API void ltp_engine_free(ltp_engine *e)
{
    if (!e)
        return;
    for (size_t i = 0; i < e->nspans; i++) {
        struct span *sp = e->spans[i];
        while (sp->exports)
            export_free(sp->exports);
        while (sp->imports)
            import_free(sp->imports);
        while (sp->qhead)
            export_free(sp->qhead);
        tern_timer_stop(&sp->agg_timer);
        free(sp->agg);
        while (sp->chead) {
            struct closed *c = sp->chead;
            sp->chead = c->qnext;
            free(c);
        }
        free(sp);
    }
    ltp__map_free(&e->exports);
    ltp__map_free(&e->imports);
    ltp__map_free(&e->closed);
    free(e->spans);
    free(e->scratch);
    free(e->claims);
    free(e);
}

static void agg_fire(tern_timer *t, void *arg)
{
    struct span *sp = arg;
    ltp_span_flush(sp->e, sp->cfg.peer);
}

TERN_API int ltp_span_add(ltp_engine *e, const ltp_span_cfg *cfg)
{
    if (!cfg->peer || !cfg->max_export || !cfg->max_import || cfg->max_seg < 64 ||
        cfg->max_seg > 65536 || cfg->max_rounds > 256 ||
        (cfg->session_bits && cfg->session_bits != 32 && cfg->session_bits != 64))
        return -EINVAL;
    if (span_find(e, cfg->peer))
        return TERN_EEXIST;
    struct span *sp = calloc(1, sizeof *sp);
    struct span **p = realloc(e->spans, (e->nspans + 1) * sizeof *p);
    if (!sp || !p) {
        free(sp);
        if (p)
            e->spans = p;
        return -ENOMEM;
    }
    e->spans = p;
    sp->e = e;
    sp->cfg = *cfg;
    sp->up = 1;
    tern_timer_init(e->loop, &sp->agg_timer);
    e->spans[e->nspans++] = sp;
    return 0;
}

TERN_API int ltp_span_link(ltp_engine *e, uint64_t peer, int up)
{
    struct span *sp = span_find(e, peer);
    if (!sp)
        return TERN_ENOTFOUND;
    if (!!up == sp->up)
        return 0;
    sp->up = !!up;
    for (struct export *x = sp->exports; x; x = x->next) {
        for (struct cp *c = x->cps; c; c = c->next)
            up ? xt_resume(&c->tm) : xt_suspend(e, &c->tm);
        up ? xt_resume(&x->cancel_tm) : xt_suspend(e, &x->cancel_tm);
        /* the idle timer too: an outage is no sign the peer gave up */
        up ? xt_resume(&x->idle_tm) : xt_suspend(e, &x->idle_tm);
    }
    for (struct import *im = sp->imports; im; im = im->next) {
        for (struct rpt *r = im->rpts; r; r = r->next)
            up ? xt_resume(&r->tm) : xt_suspend(e, &r->tm);
        up ? xt_resume(&im->cancel_tm) : xt_suspend(e, &im->cancel_tm);
    }
    TERN_INFO(e->lg, "ltp", "span %" PRIu64 ": link %s", peer, up ? "up" : "down");
    span_start_queued(sp);
    return 0;
}

TERN_API int ltp_span_set_owlt(ltp_engine *e, uint64_t peer, unsigned owlt_ms)
{
    struct span *sp = span_find(e, peer);
    if (!sp)
        return TERN_ENOTFOUND;
    sp->cfg.owlt_ms = owlt_ms;
    sp->owlt_from_range = 1;
    return 0;
}

TERN_API int ltp_span_get(const ltp_engine *e, uint64_t peer, ltp_span_cfg *cfg)
{
    const struct span *sp = span_find(e, peer);
    if (!sp)
        return TERN_ENOTFOUND;
    *cfg = sp->cfg;
    return 0;
}

TERN_API int ltp_span_budget_ms(const ltp_engine *e, uint64_t peer, uint64_t *ms)
{
    const struct span *sp = span_find(e, peer);
    if (!sp)
        return TERN_ENOTFOUND;
    *ms = sat_mul(sat_mul(span_rounds(sp), (uint64_t)span_retries(sp) + 1),
                  span_rto_ns(sp) / NS_PER_MS);
    return 0;
}

TERN_API int ltp_span_info_get(const ltp_engine *e, uint64_t peer, ltp_span_info *out)
{
    const struct span *sp = span_find(e, peer);
    if (!sp)
        return TERN_ENOTFOUND;
    memset(out, 0, sizeof *out);
    out->cfg = sp->cfg;
    out->owlt_from_range = sp->owlt_from_range;
    out->up = sp->up;
    out->max_retries = span_retries(sp);
    out->max_rounds = span_rounds(sp);
    out->own_qtime_ms = e->cfg.own_qtime_ms;
    out->rto_ms = span_rto_ns(sp) / NS_PER_MS;
    ltp_span_budget_ms(e, peer, &out->budget_ms);
    out->max_block = span_max_block(sp);
    out->max_import_bytes = span_import_cap(sp);
    out->exports = sp->n_export;
    out->imports = sp->n_import;
    out->queued = sp->queued;
    out->import_bytes = sp->import_held;
    out->exports_waiting = sp->exports_waiting;
    out->imports_waiting = sp->imports_waiting;
    return 0;
}

/* Gives a new block its session number and, with a store, commits it there;
 * then queues it. On failure the block is dropped and the error returned. */
static int export_accept(ltp_engine *e, struct span *sp, struct export *x,
                         uint64_t *session)
{
    int rc = session_next(e, sp, &x->session);
    if (!rc)
        rc = persist(e, x, sp->cfg.peer);
    if (rc) {
        xt_stop(&x->cancel_tm);
        if (!x->borrowed)
            free(x->data);
        free(x);
        return rc;
    }
    if (session)
        *session = x->session;
    export_enqueue(sp, x, NULL);
    return 0;
}

static int block_send(ltp_engine *e, uint64_t peer, uint64_t client, const void *data,
                      size_t red_len, size_t green_len, void *user, uint64_t *session,
                      int borrow)
{
    struct span *sp = span_find(e, peer);
    if (!sp)
        return TERN_ENOTFOUND;
    size_t total;
    if ((!red_len && !green_len) || tern_ckd_add_size(&total, red_len, green_len))
        return -EINVAL;
    struct export *x = export_new(sp, client, data, red_len, green_len, user, borrow);
    if (!x)
        return -ENOMEM;
    return export_accept(e, sp, x, session);
}

TERN_API int ltp_block_send(ltp_engine *e, uint64_t peer, uint64_t client,
                            const void *data, size_t red_len, size_t green_len,
                            void *user, uint64_t *session)
{
    return block_send(e, peer, client, data, red_len, green_len, user, session, 0);
}

TERN_API int ltp_block_send_ref(ltp_engine *e, uint64_t peer, uint64_t client,
                                const void *data, size_t red_len, size_t green_len,
                                void *user, uint64_t *session)
{
    return block_send(e, peer, client, data, red_len, green_len, user, session, 1);
}

TERN_API int ltp_span_flush(ltp_engine *e, uint64_t peer)
{
    struct span *sp = span_find(e, peer);
    if (!sp)
        return TERN_ENOTFOUND;
    tern_timer_stop(&sp->agg_timer);
    if (!sp->agg_len)
        return 0;
    /* The aggregation buffer becomes the block: no copy, and it is ours. */
    struct export *x = export_new(sp, sp->agg_client, sp->agg, sp->agg_len, 0, NULL, 1);
    if (!x)
        return -ENOMEM;
    x->borrowed = 0;
    sp->agg = NULL;
    sp->agg_len = sp->agg_cap = 0;
    return export_accept(e, sp, x, NULL);
}

TERN_API int ltp_sdu_send(ltp_engine *e, uint64_t peer, uint64_t client, const void *data,
                          size_t len)
{
    struct span *sp = span_find(e, peer);
    int rc;
    if (!sp)
        return TERN_ENOTFOUND;
    if (sp->agg_len && sp->agg_client != client && (rc = ltp_span_flush(e, peer)))
        return rc;
    size_t need;
    if (tern_ckd_add_size(&need, sp->agg_len, len))
        return -EMSGSIZE;
    if (need > sp->agg_cap) {
        size_t start = sp->agg_cap ? sp->agg_cap
                                   : (sp->cfg.agg_size > 4096 ? sp->cfg.agg_size : 4096);
        uint64_t nc = tern_ckd_grow(start, need, SIZE_MAX);
        if (!nc)
            return -EMSGSIZE;
        uint8_t *p = realloc(sp->agg, (size_t)nc);
        if (!p)
            return -ENOMEM;
        sp->agg = p;
        sp->agg_cap = (size_t)nc;
    }
    memcpy(sp->agg + sp->agg_len, data, len);
    if (!sp->agg_len)
        tern_timer_start(&sp->agg_timer, agg_fire, sp,
                         (uint64_t)(sp->cfg.agg_ms ? sp->cfg.agg_ms : 1) * NS_PER_MS, 0);
    sp->agg_len += len;
    sp->agg_client = client;
    if (sp->agg_len >= sp->cfg.agg_size)
        return ltp_span_flush(e, peer);
    return 0;
}

TERN_API int ltp_engine_resume(ltp_engine *e)
{
    if (!e->store)
        return 0;
    sdr *s = e->store;
    struct xroot root;
    int rc = sdr_read(s, e->root, &root, sizeof root), n = 0;
    if (rc)
        return rc;
    for (sdr_off elt = sdr_list_first(s, root.exports); elt;
         elt = sdr_list_next(s, elt)) {
        struct xrec r;
        uint64_t len;
        if (sdr_read(s, sdr_list_data(s, elt), &r, sizeof r) || r.magic != XREC_MAGIC ||
            sdr_blob_len(s, r.blob, &len) || len != r.red + r.green) {
            store_fail(e, "reading a kept export block", TERN_ECORRUPT);
            continue;
        }
        if (ltp__map_get(&e->exports, 0, r.session))
            continue; /* already running */
        struct span *sp = span_find(e, r.peer);
        if (!sp) {
            TERN_WARN(e->lg, "ltp",
                      "kept export session %" PRIu64 " is for engine %" PRIu64
                      ", which has no span; it stays in the store",
                      r.session, r.peer);
            continue;
        }
        struct export *x = calloc(1, sizeof *x);
        uint8_t *data = malloc(len ? len : 1);
        if (!x || !data || sdr_blob_read(s, r.blob, 0, data, len)) {
            free(x);
            free(data);
            store_fail(e, "reading a kept export block", TERN_ECORRUPT);
            continue;
        }
        x->data = data;
        x->sp = sp;
        x->session = r.session;
        x->client = r.client;
        x->red = r.red;
        x->green = r.green;
        x->rec = elt;
        x->next_cp = 1 + (rng_next(e) & 0xffff);
        xt_init(e, &x->cancel_tm, x_cancel_fire, x);
        xt_init(e, &x->idle_tm, x_idle_fire, x);
        export_enqueue(sp, x, NULL);
        n++;
    }
    if (n)
        TERN_INFO(e->lg, "ltp", "resumed %d export session(s) from the store", n);
    return n;
}

TERN_API int ltp_import_retry(ltp_engine *e, uint64_t peer, uint64_t session)
{
    struct import *im = ltp__map_get(&e->imports, peer, session);
    if (!im)
        return TERN_ENOTFOUND;
    if (!im->later || im->cancelling || im->red_delivered)
        return 0;
    int rc = import_deliver(im);
    if (rc < 0)
        return TERN_ENOTFOUND;
    if (rc == 0)
        import_maybe_close(im);
    return rc;
}

TERN_API int ltp_import_release(ltp_engine *e, uint64_t peer, uint64_t session)
{
    struct import *im = ltp__map_get(&e->imports, peer, session);
    if (!im)
        return TERN_ENOTFOUND; /* cancelled meanwhile: the sender sends again */
    if (!im->held)
        return 0;
    im->held = 0;
    if (im->held_cp && !im->cancelling) {
        im->held_cp = 0;
        import_report(im, im->held_serial, im->held_lower, im->held_upper, 0);
    }
    import_maybe_close(im);
    return 0;
}

TERN_API int ltp_export_cancel(ltp_engine *e, uint64_t session)
{
    struct export *x = ltp__map_get(&e->exports, 0, session);
    if (!x)
        return TERN_ENOTFOUND;
    if (!x->started) {
        /* Never sent: no one to tell but the client. */
        e->st.exports_cancelled++;
        ltp_notice n = {.kind = LTP_EXPORT_CANCELLED,
                        .peer = x->sp->cfg.peer,
                        .session = x->session,
                        .client = x->client,
                        .reason = LTP_USR_CNCLD,
                        .user = x->user};
        notify(e, &n);
        export_close(x);
        return 0;
    }
    export_cancel(x, LTP_USR_CNCLD);
    return 0;
}

TERN_API void ltp_engine_stats(const ltp_engine *e, ltp_stats *st)
{
    *st = e->st;
}

TERN_API uint64_t ltp_engine_id(const ltp_engine *e)
{
    return e->cfg.engine_id;
}
