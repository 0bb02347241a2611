/* The CFDP entity: class 1 and class 2 sender and receiver machines
 * (cfdp.h). Pull model: a transaction with something to send sits on the
 * ready list, and the pump asks it for one PDU at a time, so a busy
 * transport (-EAGAIN) costs one kept PDU and nothing is queued per PDU.
 * Timers are absolute deadlines per transaction, the earliest of each
 * transaction in a binary heap; transactions are hashed by (source,
 * sequence number, role). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "entity.h"
#include "tern/ckd.h"

#define BURST   16
#define SEG_MAX 65536 /* largest file data per PDU (a data field holds 65535) */

/* ------------------------------------------------------------- defaults */

TERN_API void cfdp_peer_cfg_defaults(cfdp_peer_cfg *c)
{
    memset(c, 0, sizeof *c);
    c->max_pdu = 1024;
    c->default_class = 2;
    c->checksum_type = CFDP_CKSUM_MODULAR;
    c->nak_mode = CFDP_NAK_IMMEDIATE;
    c->ack_timer_ms = 10000;
    c->ack_limit = 4;
    c->nak_timer_ms = 10000;
    c->nak_limit = 4;
    c->nak_delay_ms = 50;
    c->inactivity_ms = 60000;
    c->check_timer_ms = 10000;
    c->check_limit = 2;
}

/* 0 in a timer or limit means the default. */
static void fill_defaults(cfdp_peer_cfg *c)
{
    cfdp_peer_cfg d;
    cfdp_peer_cfg_defaults(&d);
#define DEF(f)                                                                           \
    if (!c->f)                                                                           \
    c->f = d.f
    DEF(max_pdu);
    DEF(default_class);
    DEF(ack_timer_ms);
    DEF(ack_limit);
    DEF(nak_timer_ms);
    DEF(nak_limit);
    DEF(nak_delay_ms);
    DEF(inactivity_ms);
    DEF(check_timer_ms);
    DEF(check_limit);
#undef DEF
    if (!c->prompt_ms)
        c->prompt_ms = c->nak_timer_ms;
    if (c->max_pdu > CFDP_PDU_MAX)
        c->max_pdu = CFDP_PDU_MAX;
}

const cfdp_peer_cfg *cfdp__peer(const cfdp_entity *e, uint64_t id)
{
    for (size_t i = 0; i < e->npeers; i++)
        if (e->peers[i].id == id)
            return &e->peers[i];
    return &e->cfg.defaults;
}

TERN_API int cfdp_entity_set_peer(cfdp_entity *e, const cfdp_peer_cfg *cfg)
{
    if (!e || !cfg)
        return -EINVAL;
    for (size_t i = 0; i < e->npeers; i++)
        if (e->peers[i].id == cfg->id) {
            e->peers[i] = *cfg;
            fill_defaults(&e->peers[i]);
            return 0;
        }
    if (e->npeers == e->peers_cap) {
        size_t c = e->peers_cap ? e->peers_cap * 2 : 4;
        cfdp_peer_cfg *p = realloc(e->peers, c * sizeof *p);
        if (!p)
            return -ENOMEM;
        e->peers = p;
        e->peers_cap = c;
    }
    e->peers[e->npeers] = *cfg;
    fill_defaults(&e->peers[e->npeers++]);
    return 0;
}

/* ---------------------------------------------------------- hash, heap */

static size_t hkey(uint64_t src, uint64_t seq, int role, size_t nb)
{
    uint64_t h =
        src * 0x9E3779B97F4A7C15ull ^ (seq + (uint64_t)role) * 0xC2B2AE3D27D4EB4Full;
    h ^= h >> 29;
    return (size_t)h & (nb - 1);
}

txn *cfdp__txn_find(const cfdp_entity *e, uint64_t src, uint64_t seq, int role)
{
    for (txn *t = e->buckets[hkey(src, seq, role, e->nbuckets)]; t; t = t->hnext)
        if (t->id.src == src && t->id.seq == seq && t->role == role)
            return t;
    return NULL;
}

int cfdp__txn_insert(cfdp_entity *e, txn *t)
{
    if (e->ntxn >= e->nbuckets) {
        size_t nb = e->nbuckets * 2;
        txn **b = calloc(nb, sizeof *b);
        if (!b)
            return -ENOMEM;
        for (size_t i = 0; i < e->nbuckets; i++)
            for (txn *x = e->buckets[i], *nx; x; x = nx) {
                nx = x->hnext;
                size_t k = hkey(x->id.src, x->id.seq, x->role, nb);
                x->hnext = b[k];
                b[k] = x;
            }
        free(e->buckets);
        e->buckets = b;
        e->nbuckets = nb;
    }
    size_t k = hkey(t->id.src, t->id.seq, t->role, e->nbuckets);
    t->hnext = e->buckets[k];
    e->buckets[k] = t;
    e->ntxn++;
    return 0;
}

static void hash_remove(cfdp_entity *e, txn *t)
{
    txn **pp = &e->buckets[hkey(t->id.src, t->id.seq, t->role, e->nbuckets)];
    while (*pp && *pp != t)
        pp = &(*pp)->hnext;
    if (*pp) {
        *pp = t->hnext;
        e->ntxn--;
    }
}

static void heap_swap(cfdp_entity *e, size_t a, size_t b)
{
    txn *x = e->heap[a];
    e->heap[a] = e->heap[b];
    e->heap[b] = x;
    e->heap[a]->hidx = a;
    e->heap[b]->hidx = b;
}

static void heap_up(cfdp_entity *e, size_t i)
{
    while (i && e->heap[(i - 1) / 2]->wake > e->heap[i]->wake) {
        heap_swap(e, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static void heap_down(cfdp_entity *e, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < e->hn && e->heap[l]->wake < e->heap[m]->wake)
            m = l;
        if (r < e->hn && e->heap[r]->wake < e->heap[m]->wake)
            m = r;
        if (m == i)
            return;
        heap_swap(e, i, m);
        i = m;
    }
}

static void heap_remove(cfdp_entity *e, txn *t)
{
    size_t i = t->hidx;
    if (i == SIZE_MAX)
        return;
    t->hidx = SIZE_MAX;
    e->hn--;
    if (i == e->hn)
        return;
    e->heap[i] = e->heap[e->hn];
    e->heap[i]->hidx = i;
    heap_down(e, i);
    heap_up(e, i);
}

void cfdp__txn_timers_changed(cfdp_entity *e, txn *t)
{
    uint64_t w = OFF;
    for (int k = 0; k < NT; k++)
        if (t->t[k] < w)
            w = t->t[k];
    t->wake = w;
    if (w == OFF) {
        heap_remove(e, t);
        return;
    }
    if (t->hidx == SIZE_MAX) {
        if (e->hn == e->hcap) {
            size_t c = e->hcap ? e->hcap * 2 : 64;
            txn **h = realloc(e->heap, c * sizeof *h);
            if (!h)
                return; /* the timers stay unseen until the next change */
            e->heap = h;
            e->hcap = c;
        }
        t->hidx = e->hn;
        e->heap[e->hn++] = t;
        heap_up(e, t->hidx);
    } else {
        heap_down(e, t->hidx);
        heap_up(e, t->hidx);
    }
}

static void arm(cfdp_entity *e, txn *t, int k, uint64_t ms)
{
    uint64_t d;
    if (t->suspended && k != T_LINGER) {
        t->frozen[k] = ms;
        return;
    }
    t->t[k] = tern_ckd_add(&d, e->now, ms) ? OFF - 1 : d;
    cfdp__txn_timers_changed(e, t);
}

static void disarm(cfdp_entity *e, txn *t, int k)
{
    t->frozen[k] = OFF;
    if (t->t[k] != OFF) {
        t->t[k] = OFF;
        cfdp__txn_timers_changed(e, t);
    }
}

/* ------------------------------------------------------------- ready list */

void cfdp__ready(cfdp_entity *e, txn *t)
{
    if (t->in_ready)
        return;
    t->in_ready = 1;
    t->rnext = NULL;
    if (e->rtail)
        e->rtail->rnext = t;
    else
        e->rhead = t;
    e->rtail = t;
}

static void ready_pop(cfdp_entity *e)
{
    txn *t = e->rhead;
    e->rhead = t->rnext;
    if (!e->rhead)
        e->rtail = NULL;
    t->in_ready = 0;
    t->rnext = NULL;
}

static void ready_remove(cfdp_entity *e, txn *t)
{
    if (!t->in_ready)
        return;
    txn **pp = &e->rhead, *prev = NULL;
    while (*pp && *pp != t) {
        prev = *pp;
        pp = &(*pp)->rnext;
    }
    if (*pp) {
        *pp = t->rnext;
        if (e->rtail == t)
            e->rtail = prev;
    }
    t->in_ready = 0;
}

/* ------------------------------------------------------------ logging */

static void logf_(cfdp_entity *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void logf_(cfdp_entity *e, const char *fmt, ...)
{
    if (!e->host.log)
        return;
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    e->host.log(e->host.ctx, line);
}

static void count_drop(cfdp_entity *e, const char *why)
{
    e->st.drop_malformed++;
    if (!why)
        why = "unknown";
    for (size_t i = 0; i < e->ndrops; i++)
        if (e->drops[i].why == why || strcmp(e->drops[i].why, why) == 0) {
            e->drops[i].n++;
            return;
        }
    if (e->ndrops < sizeof e->drops / sizeof e->drops[0]) {
        e->drops[e->ndrops].why = why;
        e->drops[e->ndrops++].n = 1;
    }
}

/* --------------------------------------------------------- indications */

static cfdp_txn_info info_of(const txn *t);

static void emit(cfdp_entity *e, txn *t, unsigned type)
{
    cfdp_ind ind;
    memset(&ind, 0, sizeof ind);
    ind.type = (uint8_t)type;
    ind.role = t->role;
    ind.txn = t->id;
    ind.peer = t->peer;
    ind.cls = t->cls;
    ind.condition = t->condition;
    ind.delivery = t->delivery;
    ind.file_status = t->file_status;
    ind.fault_entity = t->fault_entity;
    ind.file_size = t->size;
    ind.progress = t->role == CFDP_ROLE_SENDER ? t->next_off : t->got.total;
    ind.src_name = t->src;
    ind.dst_name = t->dst;
    if (type == CFDP_IND_METADATA)
        ind.options = (cfdp_tlvs){NULL, t->opts_count, t->opts, t->opts_len};
    if (type == CFDP_IND_FINISHED)
        ind.responses = (cfdp_tlvs){NULL, t->resp_count, t->resp, t->resp_len};
    if (type == CFDP_IND_EOF_RECEIVED)
        ind.condition = t->eof_cond;
    if (type == CFDP_IND_REPORT)
        ind.info = info_of(t);
    if (type == CFDP_IND_FILE_SEGMENT) {
        ind.offset = e->seg_off;
        ind.length = e->seg_len;
    }
    if (e->host.indication)
        e->host.indication(e->host.ctx, &ind);
    if (!e->host.queue_indications)
        return;
    if (e->qn == e->qcap) {
        size_t c = e->qcap ? e->qcap * 2 : 64;
        qent *q = malloc(c * sizeof *q);
        if (!q) {
            logf_(e, "indication queue: out of memory");
            return;
        }
        for (size_t i = 0; i < e->qn; i++)
            q[i] = e->q[(e->qhead + i) % e->qcap];
        free(e->q);
        e->q = q;
        e->qcap = c;
        e->qhead = 0;
    }
    qent *qe = &e->q[(e->qhead + e->qn) % e->qcap];
    qe->ind = ind;
    qe->blob = NULL;
    if (type == CFDP_IND_METADATA || type == CFDP_IND_FINISHED) {
        size_t ls = strlen(t->src) + 1, ld = strlen(t->dst) + 1;
        size_t lo = type == CFDP_IND_METADATA ? t->opts_len : t->resp_len;
        uint8_t *b = malloc(ls + ld + lo + 1);
        if (!b) {
            logf_(e, "indication queue: out of memory");
            return;
        }
        memcpy(b, t->src, ls);
        memcpy(b + ls, t->dst, ld);
        if (lo)
            memcpy(b + ls + ld, type == CFDP_IND_METADATA ? t->opts : t->resp, lo);
        qe->ind.src_name = (char *)b;
        qe->ind.dst_name = (char *)b + ls;
        if (type == CFDP_IND_METADATA)
            qe->ind.options.raw = b + ls + ld;
        else
            qe->ind.responses.raw = b + ls + ld;
        qe->blob = b;
    } else {
        qe->ind.src_name = qe->ind.dst_name = "";
    }
    e->qn++;
}

TERN_API int cfdp_entity_next_indication(cfdp_entity *e, cfdp_ind *out)
{
    free(e->last_blob);
    e->last_blob = NULL;
    if (!e->qn)
        return TERN_EEND;
    qent *qe = &e->q[e->qhead];
    *out = qe->ind;
    e->last_blob = qe->blob;
    e->qhead = (e->qhead + 1) % e->qcap;
    e->qn--;
    return 0;
}

/* ------------------------------------------------------------ helpers */

static void hdr_init(const cfdp_entity *e, const txn *t, int dir, cfdp_header *h)
{
    memset(h, 0, sizeof *h);
    h->direction = (uint8_t)dir;
    h->mode = t->cls == 2 ? CFDP_ACKNOWLEDGED : CFDP_UNACKNOWLEDGED;
    h->crc = t->crc;
    h->large_file = t->large;
    h->eid_len = e->cfg.eid_len;
    h->tsn_len = e->cfg.tsn_len;
    h->src = t->id.src;
    h->tsn = t->id.seq;
    h->dst = t->role == CFDP_ROLE_SENDER ? t->peer : e->cfg.id;
}

static int encode(cfdp_entity *e, const cfdp_pdu *p)
{
    int rc = cfdp_pdu_encode(p, e->out, CFDP_PDU_MAX, &e->out_len);
    if (rc) {
        const char *why = NULL;
        cfdp_pdu_check(p, &why);
        logf_(e, "cannot encode %s: %s", cfdp_kind_name(p->kind), why ? why : "?");
    }
    return rc;
}

static cfdp_eid eid_of(uint64_t id)
{
    return (cfdp_eid){id, cfdp_id_len(id)};
}

static unsigned handler_for(const txn *t, unsigned cond)
{
    unsigned h = t->handlers[cond & 15];
    if (!h)
        h = t->pc.handlers[cond & 15];
    return h ? h : CFDP_HANDLER_CANCEL;
}

static cfdp_txn_info info_of(const txn *t)
{
    cfdp_txn_info i;
    memset(&i, 0, sizeof i);
    i.id = t->id;
    i.peer = t->peer;
    i.role = t->role;
    i.state =
        t->suspended && t->state < CFDP_STATE_FINISHED ? CFDP_STATE_SUSPENDED : t->state;
    i.cls = t->cls;
    i.condition = t->condition;
    i.file_size = t->size;
    if (t->role == CFDP_ROLE_SENDER) {
        i.progress = t->next_off;
        i.bytes_resent = t->resent;
    } else {
        i.progress = t->got.total;
        uint64_t lim = t->eof_got ? t->eof_size : cfdp__rset_max(&t->got);
        i.gaps = cfdp__rset_gap_count(&t->got, lim);
    }
    return i;
}

static void close_file(cfdp_entity *e, txn *t)
{
    if (!t->file)
        return;
    if (t->role == CFDP_ROLE_RECEIVER && e->cfg.fs.ops->sync)
        e->cfg.fs.ops->sync(e->cfg.fs.ctx, t->file);
    e->cfg.fs.ops->close(e->cfg.fs.ctx, t->file);
    t->file = NULL;
}

static void early_free(txn *t)
{
    while (t->early) {
        early *x = t->early;
        t->early = x->next;
        free(x);
    }
    t->early_bytes = 0;
    cfdp__rset_free(&t->early_set);
}

void cfdp__txn_free(txn *t)
{
    if (!t)
        return;
    early_free(t);
    cfdp__rset_free(&t->resend);
    cfdp__rset_free(&t->got);
    free(t->opts);
    free(t->resp);
    free(t);
}

static txn *txn_new(cfdp_entity *e, uint64_t src, uint64_t seq, int role, uint64_t peer)
{
    txn *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->id = (cfdp_txn_id){src, seq};
    t->role = (uint8_t)role;
    t->peer = peer;
    t->pc = *cfdp__peer(e, peer);
    t->crc = t->pc.crc_required;
    t->hidx = SIZE_MAX;
    for (int k = 0; k < NT; k++)
        t->t[k] = t->frozen[k] = OFF;
    t->wake = OFF;
    t->file_status = CFDP_FILE_UNREPORTED;
    t->delivery = CFDP_DATA_INCOMPLETE;
    if (cfdp__txn_insert(e, t)) {
        free(t);
        return NULL;
    }
    e->st.txns_started++;
    e->st.txns_active++;
    return t;
}

static void txn_destroy(cfdp_entity *e, txn *t)
{
    heap_remove(e, t);
    ready_remove(e, t);
    hash_remove(e, t);
    close_file(e, t);
    if (t->state != CFDP_STATE_FINISHED && e->st.txns_active)
        e->st.txns_active--;
    cfdp__txn_free(t);
}

/* The transaction ends: one FINISHED (or ABANDONED) indication, ever. It
 * lingers to answer a duplicate EOF or Finished. */
static void terminate(cfdp_entity *e, txn *t, unsigned ind)
{
    if (t->state == CFDP_STATE_FINISHED)
        return;
    close_file(e, t);
    if (t->role == CFDP_ROLE_RECEIVER && t->file_status == CFDP_FILE_DISCARDED &&
        t->dst[0])
        e->cfg.fs.ops->remove(e->cfg.fs.ctx, t->dst);
    t->state = CFDP_STATE_FINISHED;
    t->suspended = 0;
    for (int k = 0; k < NT; k++)
        t->t[k] = t->frozen[k] = OFF;
    t->need_md = t->need_eof = t->need_nak = t->need_fin = t->need_ka = t->need_prompt =
        0;
    cfdp__rset_clear(&t->resend);
    uint64_t linger =
        e->cfg.linger_ms ? e->cfg.linger_ms
                         : (uint64_t)t->pc.ack_timer_ms * ((uint64_t)t->pc.ack_limit + 1);
    arm(e, t, T_LINGER, linger);
    e->st.txns_finished++;
    if (e->st.txns_active)
        e->st.txns_active--;
    if (!t->ended) {
        t->ended = 1;
        emit(e, t, ind);
    }
}

static void suspend_txn(cfdp_entity *e, txn *t, unsigned cond)
{
    if (t->suspended || t->state == CFDP_STATE_FINISHED)
        return;
    t->suspended = 1;
    for (int k = 0; k < NT; k++) {
        if (k == T_LINGER)
            continue;
        t->frozen[k] = t->t[k] == OFF ? OFF : t->t[k] > e->now ? t->t[k] - e->now : 0;
        t->t[k] = OFF;
    }
    cfdp__txn_timers_changed(e, t);
    uint8_t c = t->condition;
    t->condition = (uint8_t)cond;
    emit(e, t, CFDP_IND_SUSPENDED);
    t->condition = c;
}

static int check_complete(cfdp_entity *e, txn *t);

/* Notice of Cancellation with condition cond (a fault, a user request, the
 * peer's cancel). */
static void cancel_txn(cfdp_entity *e, txn *t, unsigned cond, uint64_t where)
{
    if (t->state == CFDP_STATE_FINISHED)
        return;
    t->condition = (uint8_t)cond;
    t->fault_entity = where;
    t->suspended = 0;
    for (int k = 0; k < NT; k++)
        if (k != T_LINGER)
            t->t[k] = t->frozen[k] = OFF;
    cfdp__txn_timers_changed(e, t);
    t->ack_count = 0;
    if (t->role == CFDP_ROLE_SENDER) {
        cfdp__rset_clear(&t->resend);
        t->need_md = 0;
        t->need_prompt = 0;
        t->state = CFDP_STATE_CANCELLING;
        t->delivery = CFDP_DATA_INCOMPLETE;
        t->need_eof = 1;
        t->eof_acked = 0;
        cfdp__ready(e, t);
        return;
    }
    t->need_nak = t->need_ka = 0;
    /* complete means every byte of the size a no-error EOF gave (a
     * cancelling EOF gives only the progress; Metadata's size alone is a
     * claim nothing has confirmed) */
    t->delivery = t->md_got && t->eof_got && t->eof_cond == CFDP_COND_NO_ERROR &&
                          cfdp__rset_covers(&t->got, 0, t->eof_size)
                      ? CFDP_DATA_COMPLETE
                      : CFDP_DATA_INCOMPLETE;
    t->file_status = !t->dst[0]                          ? CFDP_FILE_UNREPORTED
                     : t->pc.keep_incomplete || !t->file ? CFDP_FILE_RETAINED
                                                         : CFDP_FILE_DISCARDED;
    if (!t->dst[0] || !t->md_got)
        t->file_status = CFDP_FILE_UNREPORTED;
    if (t->cls == 2 || t->closure) {
        t->state = CFDP_STATE_CANCELLING;
        t->need_fin = 1;
        cfdp__ready(e, t);
    } else {
        terminate(e, t, CFDP_IND_FINISHED);
    }
}

/* A fault: the handler decides. Returns 1 if the transaction stopped
 * (cancelled, suspended, abandoned), 0 if the fault is ignored. */
static int fault(cfdp_entity *e, txn *t, unsigned cond)
{
    logf_(e, "transaction %llu.%llu: fault: %s", (unsigned long long)t->id.src,
          (unsigned long long)t->id.seq, cfdp_condition_name(cond));
    unsigned h = handler_for(t, cond);
    /* a fault while cancelling (or closing a cancel) abandons */
    if (t->state == CFDP_STATE_CANCELLING)
        h = CFDP_HANDLER_ABANDON;
    switch (h) {
    case CFDP_HANDLER_IGNORE: {
        uint8_t c = t->condition;
        t->condition = (uint8_t)cond;
        emit(e, t, CFDP_IND_FAULT);
        t->condition = c;
        return 0;
    }
    case CFDP_HANDLER_SUSPEND:
        suspend_txn(e, t, cond);
        return 1;
    case CFDP_HANDLER_ABANDON:
        t->condition = (uint8_t)cond;
        t->fault_entity = e->cfg.id;
        if (t->role == CFDP_ROLE_RECEIVER && t->file && !t->pc.keep_incomplete)
            t->file_status = CFDP_FILE_DISCARDED;
        t->need_ack_eof = t->need_ack_fin = 0;
        terminate(e, t, CFDP_IND_ABANDONED);
        return 1;
    default:
        cancel_txn(e, t, cond, e->cfg.id);
        return 1;
    }
}

/* ------------------------------------------------------------- sender */

/* One option as it goes on the wire: filestore requests to a peer marked
 * ion_filestore get ION's empty second name (cfdp_pdu.h). */
static cfdp_tlv wire_option(const txn *t, const cfdp_tlv *in)
{
    cfdp_tlv o = *in;
    if (o.type == CFDP_TLV_FS_REQUEST && t->pc.ion_filestore)
        o.empty_second = 1;
    return o;
}

static int copy_options(txn *t, const cfdp_tlvs *o)
{
    size_t len = 0, pos = 0, n = 0;
    cfdp_tlv tlv;
    if (!o || !o->count)
        return 0;
    if (o->items) {
        for (size_t i = 0; i < o->count; i++) {
            size_t l;
            uint8_t b[600];
            cfdp_tlv w = wire_option(t, &o->items[i]);
            int rc = cfdp_tlv_encode(&w, b, sizeof b, &l);
            if (rc)
                return rc;
            len += l;
        }
    } else {
        len = o->raw_len;
    }
    t->opts = malloc(len ? len : 1);
    if (!t->opts)
        return -ENOMEM;
    if (o->items) {
        size_t at = 0;
        for (size_t i = 0; i < o->count; i++) {
            size_t l;
            cfdp_tlv w = wire_option(t, &o->items[i]);
            cfdp_tlv_encode(&w, t->opts + at, len - at, &l);
            at += l;
        }
    } else {
        memcpy(t->opts, o->raw, len);
    }
    t->opts_len = len;
    t->opts_count = o->count;
    cfdp_tlvs raw = {NULL, t->opts_count, t->opts, t->opts_len};
    while (n < t->opts_count) {
        int rc = cfdp_tlvs_next(&raw, &pos, &tlv);
        if (rc)
            return rc == TERN_EEND ? -EINVAL : rc;
        if (tlv.type == CFDP_TLV_FAULT_HANDLER && tlv.condition < 16)
            t->handlers[tlv.condition] = tlv.handler;
        n++;
    }
    return 0;
}

static int name_ok(const char *s)
{
    return !s || strlen(s) <= CFDP_FS_PATH_MAX;
}

TERN_API int cfdp_put(cfdp_entity *e, uint64_t now_ms, const cfdp_put_req *req,
                      cfdp_txn_id *id)
{
    if (!e || !req || !name_ok(req->src_name) || !name_ok(req->dst_name))
        return -EINVAL;
    e->now = now_ms;
    const cfdp_peer_cfg *pc = cfdp__peer(e, req->dst);
    int has_src = req->src_name && req->src_name[0];
    int has_dst = req->dst_name && req->dst_name[0];
    if (has_src != has_dst)
        return -EINVAL;
    unsigned cls = req->cls ? req->cls : pc->default_class;
    if (cls != 1 && cls != 2)
        return -EINVAL;
    unsigned ck =
        req->checksum_type >= 0 ? (unsigned)req->checksum_type : pc->checksum_type;
    if (!cfdp_cksum_supported(ck))
        return -ENOTSUP;
    cfdp_fs_stat st = {0};
    void *file = NULL;
    if (has_src) {
        int rc = e->cfg.fs.ops->stat(e->cfg.fs.ctx, req->src_name, &st);
        if (rc)
            return rc;
        if (st.is_dir)
            return -EISDIR;
        rc = e->cfg.fs.ops->open(e->cfg.fs.ctx, req->src_name, CFDP_FS_RD, &file);
        if (rc)
            return rc;
    }
    txn *t = txn_new(e, e->cfg.id, e->next_seq, CFDP_ROLE_SENDER, req->dst);
    if (!t) {
        if (file)
            e->cfg.fs.ops->close(e->cfg.fs.ctx, file);
        return -ENOMEM;
    }
    t->file = file;
    t->cls = (uint8_t)cls;
    t->closure = cls == 2            ? 1
                 : req->closure >= 0 ? (uint8_t) !!req->closure
                                     : pc->closure;
    t->ck_type = (uint8_t)ck;
    t->ck_ok = 1;
    cfdp_cksum_init(&t->ck, ck);
    t->size = st.size;
    t->large = st.size > UINT32_MAX;
    if (has_src) {
        snprintf(t->src, sizeof t->src, "%s", req->src_name);
        snprintf(t->dst, sizeof t->dst, "%s", req->dst_name);
    }
    int rc = copy_options(t, &req->options);
    if (rc == 0) {
        /* the Metadata and a file data PDU must fit the peer's PDU size, or
         * the transaction could never send them */
        cfdp_pdu p;
        memset(&p, 0, sizeof p);
        hdr_init(e, t, CFDP_TOWARD_RECEIVER, &p.hdr);
        p.kind = CFDP_METADATA;
        p.u.md.file_size = t->size;
        p.u.md.src_name = (cfdp_lv){(const uint8_t *)t->src, (uint8_t)strlen(t->src)};
        p.u.md.dst_name = (cfdp_lv){(const uint8_t *)t->dst, (uint8_t)strlen(t->dst)};
        p.u.md.options = (cfdp_tlvs){NULL, t->opts_count, t->opts, t->opts_len};
        size_t mlen = 0;
        rc = cfdp_pdu_size(&p, &mlen);
        if (rc == 0 && (mlen > t->pc.max_pdu ||
                        (t->size && !cfdp_file_data_room(&p.hdr, 0, t->pc.max_pdu))))
            rc = -EMSGSIZE;
    }
    if (rc) {
        txn_destroy(e, t);
        return rc;
    }
    e->next_seq++;
    unsigned mode = req->nak_mode >= 0 ? (unsigned)req->nak_mode : pc->nak_mode;
    t->state = CFDP_STATE_ACTIVE;
    t->need_md = 1;
    if (t->size == 0)
        t->need_eof = 1;
    if (cls == 2 && mode == CFDP_NAK_PROMPTED)
        arm(e, t, T_PROMPT, t->pc.prompt_ms);
    if (id)
        *id = t->id;
    emit(e, t, CFDP_IND_TRANSACTION);
    cfdp__ready(e, t);
    cfdp__pump(e);
    return 0;
}

static void eof_done_first_pass(txn *t)
{
    uint32_t v = 0;
    cfdp_cksum_final(&t->ck, t->size, &v);
    t->cksum_val = v;
    t->need_eof = 1;
}

/* Builds the sender's next PDU into e->out: 1 built, 0 nothing to send. */
static int sender_next(cfdp_entity *e, txn *t)
{
    cfdp_pdu p;
    memset(&p, 0, sizeof p);
    if (t->need_ack_fin) {
        t->need_ack_fin = 0;
        hdr_init(e, t, CFDP_TOWARD_RECEIVER, &p.hdr);
        p.kind = CFDP_ACK;
        p.u.ack.directive = CFDP_FINISHED;
        p.u.ack.subtype = CFDP_ACK_SUBTYPE_FINISHED;
        p.u.ack.condition = t->ack_fin_cond;
        p.u.ack.txn_status =
            t->state == CFDP_STATE_FINISHED ? CFDP_TXN_TERMINATED : CFDP_TXN_ACTIVE;
        return encode(e, &p) == 0;
    }
    /* a finished transaction sends only what a restore found untaken */
    if ((t->state == CFDP_STATE_FINISHED && !t->need_eof) || t->suspended)
        return 0;
    hdr_init(e, t, CFDP_TOWARD_RECEIVER, &p.hdr);
    if (t->need_md && t->state != CFDP_STATE_CANCELLING &&
        t->state != CFDP_STATE_FINISHED) {
        t->need_md = 0;
        p.kind = CFDP_METADATA;
        p.u.md.closure = t->closure;
        p.u.md.checksum_type = t->ck_type;
        p.u.md.file_size = t->size;
        p.u.md.src_name = (cfdp_lv){(const uint8_t *)t->src, (uint8_t)strlen(t->src)};
        p.u.md.dst_name = (cfdp_lv){(const uint8_t *)t->dst, (uint8_t)strlen(t->dst)};
        p.u.md.options = (cfdp_tlvs){NULL, t->opts_count, t->opts, t->opts_len};
        return encode(e, &p) == 0;
    }
    /* data still to send again goes before the EOF (a restored first pass) */
    if (t->need_eof && (t->resend.n == 0 || t->state == CFDP_STATE_CANCELLING ||
                        t->state == CFDP_STATE_FINISHED)) {
        t->need_eof = 0;
        p.kind = CFDP_EOF;
        p.u.eof.condition = t->condition;
        p.u.eof.checksum = t->condition ? 0 : t->cksum_val;
        p.u.eof.file_size = t->condition ? t->next_off : t->size;
        if (t->condition)
            p.u.eof.fault = eid_of(t->fault_entity);
        if (encode(e, &p))
            return 0;
        if (t->state == CFDP_STATE_FINISHED)
            return 1;
        int first = !t->eof_sent;
        t->eof_sent = 1;
        if (first)
            emit(e, t, CFDP_IND_EOF_SENT);
        if (t->cls == 2) {
            arm(e, t, T_ACK, t->pc.ack_timer_ms);
            if (t->state == CFDP_STATE_ACTIVE)
                t->state = CFDP_STATE_CLOSING;
            arm(e, t, T_INACT, t->pc.inactivity_ms);
        } else if (t->state == CFDP_STATE_CANCELLING) {
            terminate(e, t, CFDP_IND_FINISHED);
        } else if (t->closure) {
            t->state = CFDP_STATE_CLOSING;
            arm(e, t, T_INACT, t->pc.inactivity_ms);
        } else {
            /* class 1 without closure: all sent, nothing will be reported */
            t->delivery = CFDP_DATA_COMPLETE;
            t->file_status = CFDP_FILE_UNREPORTED;
            terminate(e, t, CFDP_IND_FINISHED);
        }
        return 1;
    }
    if (t->state == CFDP_STATE_CANCELLING)
        return 0;
    size_t room = cfdp_file_data_room(&p.hdr, 0, t->pc.max_pdu);
    if (t->pc.max_segment && t->pc.max_segment < room)
        room = t->pc.max_segment;
    if (room > SEG_MAX)
        room = SEG_MAX;
    if (!room)
        return 0;
    uint64_t off;
    size_t n;
    int resend = t->resend.n > 0;
    if (resend) {
        off = t->resend.r[0].start;
        uint64_t l = t->resend.r[0].end - off;
        n = l < room ? (size_t)l : room;
    } else if (t->next_off < t->size) {
        off = t->next_off;
        uint64_t l = t->size - off;
        n = l < room ? (size_t)l : room;
    } else {
        if (t->need_prompt) {
            p.kind = CFDP_PROMPT;
            p.u.prompt.response = (uint8_t)(t->need_prompt - 1);
            t->need_prompt = 0;
            return encode(e, &p) == 0;
        }
        return 0;
    }
    size_t got = 0;
    /* read straight into the PDU, where the encoder will find it in place */
    uint8_t *at = e->out + cfdp_header_len(&p.hdr) + (p.hdr.large_file ? 8 : 4);
    int rc = e->cfg.fs.ops->read(e->cfg.fs.ctx, t->file, off, at, n, &got);
    if (rc || got != n) {
        logf_(e, "transaction %llu: read at %llu failed (%d)",
              (unsigned long long)t->id.seq, (unsigned long long)off, rc);
        fault(e, t, CFDP_COND_FILESTORE_REJECTION);
        return 0;
    }
    p.kind = CFDP_FILE_DATA;
    p.u.fd.offset = off;
    p.u.fd.data = at;
    p.u.fd.len = n;
    if (encode(e, &p))
        return 0;
    /* the data are the PDU's last bytes unless a CRC follows them: then the
     * host may pass the file's descriptor instead of the bytes */
    e->out_fd = -1;
    if (e->host.send_file && e->cfg.fs.ops->fd && !p.hdr.crc && e->out_len >= n) {
        e->out_fd = e->cfg.fs.ops->fd(e->cfg.fs.ctx, t->file);
        e->out_fd_off = off;
        e->out_fd_len = n;
    }
    e->st.file_bytes_out += n;
    if (resend) {
        cfdp__rset_remove(&t->resend, off, off + n);
        e->st.file_bytes_resent += n;
        t->resent += n;
    } else {
        cfdp_cksum_update(&t->ck, off, at, n);
        t->next_off += n;
        if (t->next_off == t->size)
            eof_done_first_pass(t);
    }
    return 1;
}

static void sender_pdu(cfdp_entity *e, txn *t, const cfdp_pdu *p)
{
    if (!t) {
        if (p->kind == CFDP_FINISHED && p->hdr.mode == CFDP_ACKNOWLEDGED) {
            /* a Finished for a transaction long gone: acknowledge it anyway,
             * or its sender retries up to its limit */
            cfdp_pdu a;
            memset(&a, 0, sizeof a);
            a.hdr = p->hdr;
            a.hdr.direction = CFDP_TOWARD_RECEIVER;
            a.hdr.crc = cfdp__peer(e, p->hdr.dst)->crc_required;
            a.kind = CFDP_ACK;
            a.u.ack.directive = CFDP_FINISHED;
            a.u.ack.subtype = CFDP_ACK_SUBTYPE_FINISHED;
            a.u.ack.condition = p->u.fin.condition;
            a.u.ack.txn_status = CFDP_TXN_UNRECOGNIZED;
            size_t len;
            uint8_t buf[64];
            if (cfdp_pdu_encode(&a, buf, sizeof buf, &len) == 0) {
                loose *l = malloc(sizeof *l + len);
                if (l) {
                    l->next = NULL;
                    l->dst = p->hdr.dst;
                    l->len = len;
                    memcpy(l->b, buf, len);
                    if (e->ltail)
                        e->ltail->next = l;
                    else
                        e->lhead = l;
                    e->ltail = l;
                }
            }
            return;
        }
        e->st.drop_unknown_txn++;
        return;
    }
    if (t->state != CFDP_STATE_FINISHED &&
        (t->cls == 2 || t->state == CFDP_STATE_CLOSING))
        arm(e, t, T_INACT, t->pc.inactivity_ms);
    switch (p->kind) {
    case CFDP_ACK:
        if (p->u.ack.directive != CFDP_EOF || !t->eof_sent || t->eof_acked ||
            t->state == CFDP_STATE_FINISHED) {
            e->st.drop_unexpected++;
            return;
        }
        t->eof_acked = 1;
        disarm(e, t, T_ACK);
        t->ack_count = 0;
        if (t->state == CFDP_STATE_CANCELLING)
            terminate(e, t, CFDP_IND_FINISHED);
        return;
    case CFDP_FINISHED: {
        const cfdp_finished *f = &p->u.fin;
        if (t->cls == 2) {
            t->need_ack_fin = 1;
            t->ack_fin_cond = f->condition;
            cfdp__ready(e, t);
        }
        if (t->state == CFDP_STATE_FINISHED)
            return; /* a duplicate: acknowledged again, reported once */
        if (f->responses.raw_len) {
            free(t->resp);
            t->resp = malloc(f->responses.raw_len);
            if (t->resp) {
                memcpy(t->resp, f->responses.raw, f->responses.raw_len);
                t->resp_len = f->responses.raw_len;
                t->resp_count = f->responses.count;
            }
        }
        t->delivery = f->delivery;
        t->file_status = f->file_status;
        if (t->state != CFDP_STATE_CANCELLING || f->condition) {
            t->condition = f->condition;
            if (f->condition)
                t->fault_entity = f->fault.len ? f->fault.id : t->peer;
        }
        terminate(e, t, CFDP_IND_FINISHED);
        return;
    }
    case CFDP_NAK: {
        if (t->state == CFDP_STATE_FINISHED || t->state == CFDP_STATE_CANCELLING)
            return;
        e->st.naks_in++;
        const cfdp_nak *k = &p->u.nak;
        for (size_t i = 0; i < k->segments.count; i++) {
            cfdp_range r = cfdp_nak_segment(&k->segments, i);
            if (r.start == 0 && r.end == 0) {
                t->need_md = 1;
                continue;
            }
            /* only what was sent can be missing; the rest is refused quietly */
            uint64_t lim = t->next_off;
            if (r.start >= lim)
                continue;
            if (r.end > lim)
                r.end = lim;
            cfdp__rset_add(&t->resend, r.start, r.end, NULL, NULL);
        }
        cfdp__ready(e, t);
        return;
    }
    case CFDP_KEEP_ALIVE:
        if (t->pc.keep_alive_limit && t->next_off > p->u.ka.progress &&
            t->next_off - p->u.ka.progress > t->pc.keep_alive_limit)
            fault(e, t, CFDP_COND_KEEP_ALIVE_LIMIT);
        return;
    default:
        e->st.drop_unexpected++;
        return;
    }
}

/* ----------------------------------------------------------- receiver */

static int receiver_next(cfdp_entity *e, txn *t)
{
    cfdp_pdu p;
    memset(&p, 0, sizeof p);
    hdr_init(e, t, CFDP_TOWARD_SENDER, &p.hdr);
    if (t->need_ack_eof) {
        t->need_ack_eof = 0;
        p.kind = CFDP_ACK;
        p.u.ack.directive = CFDP_EOF;
        p.u.ack.subtype = CFDP_ACK_SUBTYPE_EOF;
        p.u.ack.condition = t->eof_cond;
        p.u.ack.txn_status =
            t->state == CFDP_STATE_FINISHED ? CFDP_TXN_TERMINATED : CFDP_TXN_ACTIVE;
        return encode(e, &p) == 0;
    }
    if ((t->state == CFDP_STATE_FINISHED && !t->need_fin) || t->suspended)
        return 0;
    if (t->need_fin) {
        t->need_fin = 0;
        p.kind = CFDP_FINISHED;
        p.u.fin.condition = t->condition;
        p.u.fin.delivery = t->delivery;
        p.u.fin.file_status = t->file_status;
        p.u.fin.responses = (cfdp_tlvs){NULL, t->resp_count, t->resp, t->resp_len};
        if (t->condition)
            p.u.fin.fault = eid_of(t->fault_entity);
        if (encode(e, &p))
            return 0;
        if (t->state == CFDP_STATE_FINISHED)
            return 1;
        t->fin_sent = 1;
        if (t->cls == 2) {
            arm(e, t, T_ACK, t->pc.ack_timer_ms);
            if (t->state == CFDP_STATE_ACTIVE)
                t->state = CFDP_STATE_CLOSING;
        } else {
            terminate(e, t, CFDP_IND_FINISHED);
        }
        return 1;
    }
    if (t->state == CFDP_STATE_FINISHED)
        return 0;
    while (t->need_nak) {
        size_t room = cfdp_nak_room(&p.hdr, t->pc.max_pdu);
        if (t->pc.max_nak_segments && t->pc.max_nak_segments < room)
            room = t->pc.max_nak_segments;
        if (room > e->nakcap)
            room = e->nakcap;
        if (!room) {
            t->need_nak = 0;
            break;
        }
        size_t k = 0;
        uint64_t pos = t->nak_cursor, gs, ge;
        if (t->nak_md) {
            e->nakbuf[k++] = (cfdp_range){0, 0};
            t->nak_md = 0;
        }
        /* before Metadata the data kept for it counts as held */
        const cfdp__rset *have = t->md_got ? &t->got : &t->early_set;
        while (k < room && cfdp__rset_next_gap(have, pos, t->nak_scope_end, &gs, &ge)) {
            e->nakbuf[k++] = (cfdp_range){gs, ge};
            pos = ge;
        }
        int more = cfdp__rset_next_gap(have, pos, t->nak_scope_end, &gs, &ge);
        p.kind = CFDP_NAK;
        p.u.nak.scope_start = t->nak_cursor;
        p.u.nak.scope_end = more ? pos : t->nak_scope_end;
        p.u.nak.segments = (cfdp_ranges){e->nakbuf, k, NULL, 0};
        if (more) {
            t->nak_cursor = pos;
        } else {
            t->need_nak = 0;
            t->got_at_nak = t->got.total;
            arm(e, t, T_NAK, t->pc.nak_timer_ms);
        }
        if (!k)
            continue;
        if (encode(e, &p))
            return 0;
        e->st.naks_sent++;
        e->st.nak_segments_sent += k;
        return 1;
    }
    if (t->need_ka) {
        t->need_ka = 0;
        p.kind = CFDP_KEEP_ALIVE;
        p.u.ka.progress = cfdp__rset_max(&t->got);
        return encode(e, &p) == 0;
    }
    return 0;
}

/* Starts a NAK round over [from, to) (Metadata too if it is missing). */
static void start_nak(cfdp_entity *e, txn *t, uint64_t from, uint64_t to)
{
    if (t->cls != 2 || t->state != CFDP_STATE_ACTIVE)
        return;
    if (t->need_nak) {
        if (from < t->nak_cursor)
            t->nak_cursor = from;
        if (to > t->nak_scope_end)
            t->nak_scope_end = to;
    } else {
        t->nak_cursor = from;
        t->nak_scope_end = to;
    }
    if (!t->md_got)
        t->nak_md = 1;
    t->need_nak = 1;
    cfdp__ready(e, t);
}

static int run_fs_requests(cfdp_entity *e, txn *t)
{
    if (!e->cfg.fs_requests || !t->opts_count)
        return 0;
    cfdp_tlvs all = {NULL, t->opts_count, t->opts, t->opts_len};
    uint8_t *reqs = malloc(t->opts_len ? t->opts_len : 1);
    if (!reqs)
        return -ENOMEM;
    size_t pos = 0, prev = 0, rl = 0, rn = 0;
    cfdp_tlv tlv;
    while (cfdp_tlvs_next(&all, &pos, &tlv) == 0) {
        if (tlv.type == CFDP_TLV_FS_REQUEST) {
            memcpy(reqs + rl, t->opts + prev, pos - prev);
            rl += pos - prev;
            rn++;
        }
        prev = pos;
    }
    int rc = 0;
    if (rn) {
        size_t cap = 65536, ol = 0, oc = 0;
        uint8_t *out = malloc(cap);
        cfdp_tlvs rq = {NULL, rn, reqs, rl};
        rc = out ? e->cfg.fs_requests(e->cfg.fs_requests_ctx, &e->cfg.fs, &rq, out, cap,
                                      &ol, &oc)
                 : -ENOMEM;
        if (rc == 0) {
            free(t->resp);
            t->resp = out;
            t->resp_len = ol;
            t->resp_count = oc;
            out = NULL;
        }
        free(out);
    }
    free(reqs);
    return rc;
}

/* Everything is here (Metadata, EOF, every byte): verify and close. Returns
 * 1 if the transaction moved on. */
static int check_complete(cfdp_entity *e, txn *t)
{
    if (t->state != CFDP_STATE_ACTIVE || t->suspended || !t->md_got || !t->eof_got ||
        !cfdp__rset_covers(&t->got, 0, t->eof_size))
        return 0;
    if (t->ck_ok) {
        uint32_t v = 0;
        int rc = cfdp_cksum_final(&t->ck, t->eof_size, &v);
        if ((rc || v != t->eof_cksum) && fault(e, t, CFDP_COND_CHECKSUM_FAILURE))
            return 1;
    }
    close_file(e, t);
    run_fs_requests(e, t);
    disarm(e, t, T_NAK);
    disarm(e, t, T_CHECK);
    disarm(e, t, T_NAKDELAY);
    disarm(e, t, T_KA);
    t->need_nak = 0;
    t->condition = CFDP_COND_NO_ERROR;
    t->delivery = CFDP_DATA_COMPLETE;
    t->file_status = t->dst[0] ? CFDP_FILE_RETAINED : CFDP_FILE_UNREPORTED;
    if (t->cls == 2 || t->closure) {
        t->need_fin = 1;
        t->state = CFDP_STATE_CLOSING;
        cfdp__ready(e, t);
    } else {
        terminate(e, t, CFDP_IND_FINISHED);
    }
    return 1;
}

typedef struct piece_ctx {
    cfdp_entity *e;
    txn *t;
    const cfdp_file_data *fd;
} piece_ctx;

static int write_piece(void *arg, uint64_t s, uint64_t en)
{
    piece_ctx *c = arg;
    const uint8_t *d = c->fd->data + (s - c->fd->offset);
    size_t n = (size_t)(en - s);
    if (c->t->file) {
        int rc = c->e->cfg.fs.ops->write(c->e->cfg.fs.ctx, c->t->file, s, d, n);
        if (rc)
            return rc;
    }
    cfdp_cksum_update(&c->t->ck, s, d, n);
    return 0;
}

static void rx_file_data(cfdp_entity *e, txn *t, const cfdp_file_data *fd);

static void rx_metadata(cfdp_entity *e, txn *t, const cfdp_metadata *md)
{
    if (t->md_got)
        return; /* a copy (e.g. resent on a NAK): never resets the receiver */
    t->md_got = 1;
    t->closure = md->closure;
    t->ck_type = md->checksum_type;
    t->md_size = md->file_size;
    memcpy(t->src, md->src_name.ptr ? (const char *)md->src_name.ptr : "",
           md->src_name.len);
    t->src[md->src_name.len] = 0;
    memcpy(t->dst, md->dst_name.ptr ? (const char *)md->dst_name.ptr : "",
           md->dst_name.len);
    t->dst[md->dst_name.len] = 0;
    if (!t->eof_got)
        t->size = md->file_size;
    if (md->options.raw_len) {
        cfdp_tlvs o = md->options;
        if (copy_options(t, &o))
            logf_(e, "metadata options: cannot keep them");
    }
    t->ck_ok = cfdp_cksum_init(&t->ck, t->ck_type) == 0;
    emit(e, t, CFDP_IND_METADATA);
    if (!t->ck_ok && fault(e, t, CFDP_COND_UNSUPPORTED_CHECKSUM))
        return;
    if (t->dst[0]) {
        int rc = e->cfg.fs.ops->open(
            e->cfg.fs.ctx, t->dst, CFDP_FS_WR | CFDP_FS_CREAT | CFDP_FS_TRUNC, &t->file);
        if (rc) {
            t->file = NULL;
            logf_(e, "cannot open %s: %d", t->dst, rc);
            if (fault(e, t, CFDP_COND_FILESTORE_REJECTION))
                return;
        }
    }
    for (early *x = t->early; x && t->state == CFDP_STATE_ACTIVE; x = x->next) {
        cfdp_file_data fd = {.offset = x->offset, .data = x->b, .len = x->len};
        e->st.file_bytes_in -= x->len; /* counted when it came */
        rx_file_data(e, t, &fd);
    }
    early_free(t);
    if (t->eof_got && t->state == CFDP_STATE_ACTIVE && !t->suspended) {
        if (!check_complete(e, t) && t->cls == 2 && t->t[T_NAKDELAY] == OFF)
            arm(e, t, T_NAKDELAY, t->pc.nak_delay_ms);
    }
}

static void rx_file_data(cfdp_entity *e, txn *t, const cfdp_file_data *fd)
{
    e->st.file_bytes_in += fd->len;
    if (t->state == CFDP_STATE_ACTIVE && !t->md_got && fd->len &&
        t->early_bytes + fd->len <= EARLY_MAX) {
        /* Metadata may only be late (reordered): keep the data for it */
        early *x = malloc(sizeof *x + fd->len);
        if (x) {
            x->offset = fd->offset;
            x->len = fd->len;
            memcpy(x->b, fd->data, fd->len);
            x->next = t->early; /* any order will do: the range set sorts it out */
            t->early = x;
            t->early_bytes += fd->len;
            cfdp__rset_add(&t->early_set, fd->offset, fd->offset + fd->len, NULL, NULL);
            return;
        }
    }
    if (t->state != CFDP_STATE_ACTIVE || !t->md_got) {
        /* no file to write to yet: dropped, asked for again by the NAKs */
        e->st.drop_unexpected++;
        if (!t->md_got && t->cls == 2 && t->pc.nak_mode == CFDP_NAK_IMMEDIATE &&
            t->t[T_NAKDELAY] == OFF && !t->suspended) {
            t->nak_arm_hwm = 0;
            arm(e, t, T_NAKDELAY, t->pc.nak_delay_ms);
        }
        return;
    }
    uint64_t end = fd->offset + fd->len; /* the decoder checked it does not wrap */
    uint64_t bound = t->eof_got ? t->eof_size : t->md_size ? t->md_size : UINT64_MAX;
    if (end > bound) {
        /* past the declared size: never written, never a grown file */
        e->st.drop_unexpected++;
        fault(e, t, CFDP_COND_FILE_SIZE_ERROR);
        return;
    }
    uint64_t hwm = cfdp__rset_max(&t->got), before = t->got.total;
    piece_ctx c = {e, t, fd};
    int rc = cfdp__rset_add(&t->got, fd->offset, end, write_piece, &c);
    if (rc) {
        logf_(e, "write at %llu failed (%d)", (unsigned long long)fd->offset, rc);
        fault(e, t, CFDP_COND_FILESTORE_REJECTION);
        return;
    }
    e->st.file_bytes_dup += fd->len - (t->got.total - before);
    if (e->cfg.segment_indications && t->got.total > before) {
        e->seg_off = fd->offset;
        e->seg_len = fd->len;
        emit(e, t, CFDP_IND_FILE_SEGMENT);
    }
    if (t->cls == 2 && t->pc.nak_mode == CFDP_NAK_IMMEDIATE && !t->eof_got &&
        fd->offset > hwm && t->t[T_NAKDELAY] == OFF && !t->suspended) {
        t->nak_arm_hwm = fd->offset;
        arm(e, t, T_NAKDELAY, t->pc.nak_delay_ms);
    }
    if (t->eof_got)
        check_complete(e, t);
}

static void rx_eof(cfdp_entity *e, txn *t, const cfdp_eof *eof)
{
    if (t->cls == 2) {
        /* every EOF is acknowledged, whatever the state, or the sender runs
         * into its ACK limit on a transfer that worked */
        t->need_ack_eof = 1;
        cfdp__ready(e, t);
    }
    if (t->eof_got || t->state == CFDP_STATE_FINISHED)
        return;
    t->eof_got = 1;
    t->eof_cond = eof->condition;
    t->eof_cksum = eof->checksum;
    if (eof->condition != CFDP_COND_NO_ERROR) {
        t->eof_size = eof->file_size;
        t->size = eof->file_size;
        emit(e, t, CFDP_IND_EOF_RECEIVED);
        cancel_txn(e, t, eof->condition, eof->fault.len ? eof->fault.id : t->peer);
        return;
    }
    t->eof_size = eof->file_size;
    t->size = eof->file_size;
    emit(e, t, CFDP_IND_EOF_RECEIVED);
    if (cfdp__rset_max(&t->got) > eof->file_size ||
        (t->md_got && t->md_size && t->md_size != eof->file_size)) {
        if (fault(e, t, CFDP_COND_FILE_SIZE_ERROR))
            return;
    }
    if (t->large == 0 && eof->file_size > UINT32_MAX)
        t->large = 1;
    disarm(e, t, T_NAKDELAY);
    if (t->suspended)
        return; /* resume runs the NAK procedure */
    if (check_complete(e, t))
        return;
    if (t->cls == 2)
        arm(e, t, T_NAKDELAY, t->pc.nak_delay_ms); /* the EOF may have overtaken data */
    else
        arm(e, t, T_CHECK, t->pc.check_timer_ms);
}

static void receiver_pdu(cfdp_entity *e, txn *t, const cfdp_pdu *p)
{
    if (!t) {
        if (p->kind != CFDP_METADATA && p->kind != CFDP_FILE_DATA &&
            p->kind != CFDP_EOF) {
            e->st.drop_unknown_txn++;
            return;
        }
        t = txn_new(e, p->hdr.src, p->hdr.tsn, CFDP_ROLE_RECEIVER, p->hdr.src);
        if (!t) {
            logf_(e, "out of memory for a new transaction");
            return;
        }
        t->cls = p->hdr.mode == CFDP_ACKNOWLEDGED ? 2 : 1;
        t->large = p->hdr.large_file;
        t->crc = p->hdr.crc || t->pc.crc_required;
        t->state = CFDP_STATE_ACTIVE;
        t->ck_ok = 1;
        t->ck_type = CFDP_CKSUM_NULL; /* until Metadata names one */
        cfdp_cksum_init(&t->ck, CFDP_CKSUM_NULL);
        if (t->pc.keep_alive_ms && t->cls == 2)
            arm(e, t, T_KA, t->pc.keep_alive_ms);
        if (t->pc.nak_mode == CFDP_NAK_IMMEDIATE && t->cls == 2)
            t->naked_upto = 0;
    }
    if (t->state != CFDP_STATE_FINISHED)
        arm(e, t, T_INACT, t->pc.inactivity_ms);
    switch (p->kind) {
    case CFDP_METADATA:
        if (t->state == CFDP_STATE_ACTIVE)
            rx_metadata(e, t, &p->u.md);
        return;
    case CFDP_FILE_DATA:
        rx_file_data(e, t, &p->u.fd);
        return;
    case CFDP_EOF:
        rx_eof(e, t, &p->u.eof);
        return;
    case CFDP_ACK:
        if (p->u.ack.directive != CFDP_FINISHED || !t->fin_sent ||
            t->state == CFDP_STATE_FINISHED) {
            e->st.drop_unexpected++;
            return;
        }
        disarm(e, t, T_ACK);
        terminate(e, t, CFDP_IND_FINISHED);
        return;
    case CFDP_PROMPT:
        if (t->state != CFDP_STATE_ACTIVE)
            return;
        if (p->u.prompt.response == CFDP_PROMPT_NAK)
            start_nak(e, t, 0, t->eof_got ? t->eof_size : cfdp__rset_max(&t->got));
        else {
            t->need_ka = 1;
            cfdp__ready(e, t);
        }
        return;
    default:
        e->st.drop_unexpected++;
        return;
    }
}

/* ------------------------------------------------------------- timers */

static void on_timer(cfdp_entity *e, txn *t, int k)
{
    switch (k) {
    case T_ACK:
        if (++t->ack_count > t->pc.ack_limit) {
            if (fault(e, t, CFDP_COND_ACK_LIMIT))
                return;
            t->ack_count = 0;
        }
        if (t->role == CFDP_ROLE_SENDER) {
            t->need_eof = 1;
            e->st.eofs_resent++;
        } else {
            t->need_fin = 1;
            e->st.finished_resent++;
        }
        cfdp__ready(e, t);
        return;
    case T_NAK:
        if (t->state != CFDP_STATE_ACTIVE)
            return;
        if (t->got.total > t->got_at_nak)
            t->nak_count = 0; /* the last round brought data: not stuck */
        else if (++t->nak_count > t->pc.nak_limit) {
            if (fault(e, t, CFDP_COND_NAK_LIMIT))
                return;
            t->nak_count = 0;
        }
        start_nak(e, t, 0, t->eof_got ? t->eof_size : cfdp__rset_max(&t->got));
        return;
    case T_NAKDELAY: {
        if (t->state != CFDP_STATE_ACTIVE)
            return;
        if (t->eof_got) {
            if (!check_complete(e, t))
                start_nak(e, t, 0, t->eof_size);
            return;
        }
        uint64_t to = t->nak_arm_hwm;
        if (to > t->naked_upto || !t->md_got) {
            start_nak(e, t, t->naked_upto, to);
            t->naked_upto = to;
        }
        return;
    }
    case T_INACT:
        if (fault(e, t, CFDP_COND_INACTIVITY))
            return;
        arm(e, t, T_INACT, t->pc.inactivity_ms);
        return;
    case T_KA:
        if (t->state == CFDP_STATE_ACTIVE) {
            t->need_ka = 1;
            cfdp__ready(e, t);
            arm(e, t, T_KA, t->pc.keep_alive_ms);
        }
        return;
    case T_CHECK:
        if (t->state != CFDP_STATE_ACTIVE)
            return;
        if (++t->check_count > t->pc.check_limit) {
            if (fault(e, t, CFDP_COND_CHECK_LIMIT))
                return;
            t->check_count = 0;
        }
        arm(e, t, T_CHECK, t->pc.check_timer_ms);
        return;
    case T_PROMPT:
        if (t->state == CFDP_STATE_ACTIVE && t->next_off < t->size) {
            t->need_prompt = CFDP_PROMPT_NAK + 1;
            cfdp__ready(e, t);
            arm(e, t, T_PROMPT, t->pc.prompt_ms);
        }
        return;
    default:
        return;
    }
}

TERN_API int cfdp_entity_advance(cfdp_entity *e, uint64_t now_ms)
{
    if (!e)
        return -EINVAL;
    if (now_ms > e->now)
        e->now = now_ms;
    while (e->hn && e->heap[0]->wake <= e->now) {
        txn *t = e->heap[0];
        int k;
        for (k = 0; k < NT; k++)
            if (t->t[k] <= e->now)
                break;
        if (k == NT) { /* stale key */
            cfdp__txn_timers_changed(e, t);
            continue;
        }
        t->t[k] = OFF;
        cfdp__txn_timers_changed(e, t);
        if (k == T_LINGER) {
            if (t->in_ready && (t->need_ack_eof || t->need_ack_fin)) {
                arm(e, t, T_LINGER, 1000); /* answer what is still owed first */
                continue;
            }
            txn_destroy(e, t);
            continue;
        }
        on_timer(e, t, k);
    }
    return cfdp__pump(e);
}

TERN_API uint64_t cfdp_entity_next_deadline(const cfdp_entity *e)
{
    return e && e->hn ? e->heap[0]->wake : UINT64_MAX;
}

/* --------------------------------------------------------------- pump */

static int xmit(cfdp_entity *e, uint64_t dst, const uint8_t *b, size_t len)
{
    int rc = e->host.send(e->host.ctx, dst, b, len);
    if (rc == -EAGAIN) {
        e->st.send_busy++;
        e->busy = 1;
        return 1;
    }
    if (rc < 0)
        e->st.send_failed++;
    e->st.pdus_out++;
    e->st.bytes_out += len;
    return 0;
}

/* e->out just built: by descriptor if sender_next said it may go so (the
 * descriptor is the transaction's open file, valid now, not after a busy
 * transport: a PDU kept for later goes as bytes), else as bytes. */
static int xmit_out(cfdp_entity *e, uint64_t dst)
{
    int fd = e->out_fd;
    e->out_fd = -1;
    if (fd < 0)
        return xmit(e, dst, e->out, e->out_len);
    size_t hlen = e->out_len - e->out_fd_len;
    int rc = e->host.send_file(e->host.ctx, dst, e->out, hlen, fd, e->out_fd_off,
                               e->out_fd_len);
    if (rc == -ENOTSUP)
        return xmit(e, dst, e->out, e->out_len);
    if (rc == 0)
        e->st.file_data_by_fd++;
    if (rc == -EAGAIN) {
        e->st.send_busy++;
        e->busy = 1;
        return 1;
    }
    if (rc < 0)
        e->st.send_failed++;
    e->st.pdus_out++;
    e->st.bytes_out += e->out_len;
    return 0;
}

int cfdp__pump(cfdp_entity *e)
{
    if (e->busy || e->pumping)
        return 0;
    e->pumping = 1;
    if (e->out_pending) {
        if (xmit(e, e->out_dst, e->out, e->out_len))
            goto out;
        e->out_pending = 0;
    }
    while (e->lhead) {
        loose *l = e->lhead;
        if (xmit(e, l->dst, l->b, l->len))
            goto out;
        e->lhead = l->next;
        if (!e->lhead)
            e->ltail = NULL;
        free(l);
    }
    while (e->rhead) {
        txn *t = e->rhead;
        int n = 0;
        for (; n < BURST; n++) {
            int built =
                t->role == CFDP_ROLE_SENDER ? sender_next(e, t) : receiver_next(e, t);
            if (!built)
                break;
            if (xmit_out(e, t->peer)) {
                e->out_pending = 1;
                e->out_dst = t->peer;
                goto out;
            }
        }
        if (!t->in_ready || e->rhead != t)
            continue; /* the transaction left the list while sending */
        ready_pop(e);
        if (n == BURST)
            cfdp__ready(e, t); /* more to send: to the back, for fairness */
    }
out:
    e->pumping = 0;
    return 0;
}

TERN_API int cfdp_entity_transport_ready(cfdp_entity *e, uint64_t now_ms)
{
    if (!e)
        return -EINVAL;
    if (now_ms > e->now)
        e->now = now_ms;
    e->busy = 0;
    return cfdp__pump(e);
}

TERN_API int cfdp_entity_wants_send(const cfdp_entity *e)
{
    return e && (e->out_pending || e->lhead || e->rhead);
}

/* ---------------------------------------------------------------- input */

TERN_API int cfdp_entity_pdu_in(cfdp_entity *e, uint64_t now_ms, const void *buf,
                                size_t len)
{
    if (!e || (!buf && len))
        return -EINVAL;
    if (now_ms > e->now)
        e->now = now_ms;
    e->st.pdus_in++;
    e->st.bytes_in += len;
    cfdp_header h;
    size_t hl;
    const char *why = NULL;
    int rc = cfdp_header_decode(buf, len, &h, &hl, &why);
    if (rc) {
        count_drop(e, why);
        logf_(e, "PDU dropped: %s", why ? why : "?");
        return rc;
    }
    int to_rx = h.direction == CFDP_TOWARD_RECEIVER;
    if ((to_rx ? h.dst : h.src) != e->cfg.id) {
        e->st.drop_not_for_us++;
        return 0;
    }
    const cfdp_peer_cfg *pc = cfdp__peer(e, to_rx ? h.src : h.dst);
    cfdp_pdu p;
    rc = cfdp_pdu_decode(buf, len, pc->crc_required ? CFDP_DECODE_CRC_REQUIRED : 0, &p,
                         &why);
    if (rc) {
        count_drop(e, why);
        logf_(e, "PDU dropped: %s", why ? why : "?");
        return rc;
    }
    int role = to_rx ? CFDP_ROLE_RECEIVER : CFDP_ROLE_SENDER;
    txn *t = cfdp__txn_find(e, h.src, h.tsn, role);
    if (to_rx)
        receiver_pdu(e, t, &p);
    else
        sender_pdu(e, t, &p);
    return cfdp__pump(e);
}

/* ------------------------------------------------------- user requests */

static txn *user_txn(cfdp_entity *e, cfdp_txn_id id)
{
    txn *t = cfdp__txn_find(e, id.src, id.seq,
                            id.src == e->cfg.id ? CFDP_ROLE_SENDER : CFDP_ROLE_RECEIVER);
    if (!t && id.src == e->cfg.id)
        t = cfdp__txn_find(e, id.src, id.seq, CFDP_ROLE_RECEIVER);
    return t;
}

TERN_API int cfdp_cancel(cfdp_entity *e, uint64_t now_ms, cfdp_txn_id id)
{
    if (!e)
        return -EINVAL;
    if (now_ms > e->now)
        e->now = now_ms;
    txn *t = user_txn(e, id);
    if (!t)
        return TERN_ENOTFOUND;
    if (t->state == CFDP_STATE_FINISHED || t->state == CFDP_STATE_CANCELLING)
        return TERN_ESTATE;
    cancel_txn(e, t, CFDP_COND_CANCEL, e->cfg.id);
    return cfdp__pump(e);
}

TERN_API int cfdp_suspend(cfdp_entity *e, uint64_t now_ms, cfdp_txn_id id)
{
    if (!e)
        return -EINVAL;
    if (now_ms > e->now)
        e->now = now_ms;
    txn *t = user_txn(e, id);
    if (!t)
        return TERN_ENOTFOUND;
    if (t->state == CFDP_STATE_FINISHED || t->suspended)
        return TERN_ESTATE;
    suspend_txn(e, t, CFDP_COND_SUSPEND);
    return 0;
}

TERN_API int cfdp_resume(cfdp_entity *e, uint64_t now_ms, cfdp_txn_id id)
{
    if (!e)
        return -EINVAL;
    if (now_ms > e->now)
        e->now = now_ms;
    txn *t = user_txn(e, id);
    if (!t)
        return TERN_ENOTFOUND;
    if (!t->suspended)
        return TERN_ESTATE;
    t->suspended = 0;
    for (int k = 0; k < NT; k++) {
        if (k == T_LINGER || t->frozen[k] == OFF)
            continue;
        uint64_t d;
        t->t[k] = tern_ckd_add(&d, e->now, t->frozen[k]) ? OFF - 1 : d;
        t->frozen[k] = OFF;
    }
    cfdp__txn_timers_changed(e, t);
    emit(e, t, CFDP_IND_RESUMED);
    if (t->role == CFDP_ROLE_RECEIVER && t->eof_got && t->state == CFDP_STATE_ACTIVE) {
        /* an EOF that came while suspended: its NAKs now, or the end */
        if (!check_complete(e, t)) {
            if (t->cls == 2)
                start_nak(e, t, 0, t->eof_size);
            else if (t->t[T_CHECK] == OFF)
                arm(e, t, T_CHECK, t->pc.check_timer_ms);
        }
    }
    cfdp__ready(e, t);
    return cfdp__pump(e);
}

TERN_API int cfdp_report(cfdp_entity *e, cfdp_txn_id id, cfdp_txn_info *info)
{
    if (!e)
        return -EINVAL;
    txn *t = user_txn(e, id);
    if (!t)
        return TERN_ENOTFOUND;
    if (info)
        *info = info_of(t);
    emit(e, t, CFDP_IND_REPORT);
    return 0;
}

TERN_API int cfdp_nak_now(cfdp_entity *e, uint64_t now_ms, cfdp_txn_id id)
{
    if (!e)
        return -EINVAL;
    if (now_ms > e->now)
        e->now = now_ms;
    txn *t = cfdp__txn_find(e, id.src, id.seq, CFDP_ROLE_RECEIVER);
    if (!t)
        return TERN_ENOTFOUND;
    if (t->cls != 2 || t->state != CFDP_STATE_ACTIVE || t->suspended)
        return TERN_ESTATE;
    start_nak(e, t, 0, t->eof_got ? t->eof_size : cfdp__rset_max(&t->got));
    return cfdp__pump(e);
}

TERN_API int cfdp_send_prompt(cfdp_entity *e, uint64_t now_ms, cfdp_txn_id id,
                              unsigned response)
{
    if (!e || response > CFDP_PROMPT_KEEP_ALIVE)
        return -EINVAL;
    if (now_ms > e->now)
        e->now = now_ms;
    txn *t = cfdp__txn_find(e, id.src, id.seq, CFDP_ROLE_SENDER);
    if (!t)
        return TERN_ENOTFOUND;
    if (t->cls != 2 || t->state == CFDP_STATE_FINISHED || t->suspended)
        return TERN_ESTATE;
    t->need_prompt = (uint8_t)(response + 1);
    cfdp__ready(e, t);
    return cfdp__pump(e);
}

/* ------------------------------------------------------- entity object */

TERN_API int cfdp_entity_new(const cfdp_entity_cfg *cfg, const cfdp_host *host,
                             cfdp_entity **out)
{
    if (!cfg || !host || !host->send || !out || !cfg->fs.ops)
        return -EINVAL;
    cfdp_entity *e = calloc(1, sizeof *e);
    if (!e)
        return -ENOMEM;
    e->cfg = *cfg;
    e->cfg.peers = NULL;
    e->cfg.npeers = 0;
    e->host = *host;
    fill_defaults(&e->cfg.defaults);
    e->next_seq = cfg->first_seq ? cfg->first_seq : 1;
    e->nbuckets = 64;
    e->buckets = calloc(e->nbuckets, sizeof *e->buckets);
    e->out = malloc(CFDP_PDU_MAX);
    e->out_fd = -1;
    e->nakcap = CFDP_PDU_MAX / 8;
    e->nakbuf = malloc(e->nakcap * sizeof *e->nakbuf);
    if (!e->buckets || !e->out || !e->nakbuf)
        goto fail;
    for (size_t i = 0; i < cfg->npeers; i++)
        if (cfdp_entity_set_peer(e, &cfg->peers[i]))
            goto fail;
    *out = e;
    return 0;
fail:
    cfdp_entity_free(e);
    return -ENOMEM;
}

TERN_API void cfdp_entity_free(cfdp_entity *e)
{
    if (!e)
        return;
    if (e->buckets)
        for (size_t i = 0; i < e->nbuckets; i++)
            for (txn *t = e->buckets[i], *n; t; t = n) {
                n = t->hnext;
                close_file(e, t);
                cfdp__txn_free(t);
            }
    while (e->lhead) {
        loose *l = e->lhead;
        e->lhead = l->next;
        free(l);
    }
    for (size_t i = 0; i < e->qn; i++)
        free(e->q[(e->qhead + i) % e->qcap].blob);
    free(e->q);
    free(e->last_blob);
    free(e->buckets);
    free(e->heap);
    free(e->out);
    free(e->nakbuf);
    free(e->peers);
    free(e);
}

TERN_API void cfdp_entity_stats_get(const cfdp_entity *e, cfdp_entity_stats *out)
{
    *out = e->st;
    out->indications_queued = e->qn;
}

TERN_API int cfdp_entity_drops(const cfdp_entity *e, size_t i, const char **why,
                               uint64_t *count)
{
    if (i >= e->ndrops)
        return TERN_EEND;
    if (why)
        *why = e->drops[i].why;
    if (count)
        *count = e->drops[i].n;
    return 0;
}

TERN_API uint64_t cfdp_entity_next_seq(const cfdp_entity *e)
{
    return e->next_seq;
}

TERN_API int cfdp_entity_each_txn(cfdp_entity *e,
                                  int (*each)(void *arg, const cfdp_txn_info *info),
                                  void *arg)
{
    for (size_t i = 0; i < e->nbuckets; i++)
        for (txn *t = e->buckets[i]; t; t = t->hnext) {
            cfdp_txn_info in = info_of(t);
            int rc = each(arg, &in);
            if (rc)
                return rc;
        }
    return 0;
}

TERN_API const char *cfdp_ind_name(unsigned type)
{
    static const char *const n[] = {
        NULL,
        "transaction",
        "metadata received",
        "file segment received",
        "EOF sent",
        "EOF received",
        "transaction finished",
        "fault",
        "suspended",
        "resumed",
        "abandoned",
        "report",
    };
    return type < sizeof n / sizeof n[0] && n[type] ? n[type] : "unknown";
}
