/* Test helpers for the CFDP entity: two or three entities in the simulator
 * (cfdp_sim.h) with memfs filestores, and a manual "wire" that captures
 * PDUs so a test can deliver them in any order. */
#ifndef CFDP_ENTITY_HARNESS_H
#define CFDP_ENTITY_HARNESS_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cfdp.h"
#include "cfdp_fs.h"
#include "cfdp_sim.h"
#include "tern_test.h"

#define MAXN 3

/* What a test remembers of an indication. */
typedef struct rec {
    uint8_t type, role, condition, delivery, file_status;
    cfdp_txn_id txn;
    uint64_t file_size, progress, offset, length;
    size_t noptions, nresponses;
} rec;

typedef struct net {
    cfdp_sim *s;
    cfdp_memfs *m[MAXN];
    cfdp_fs fs[MAXN];
    cfdp_entity *e[MAXN];
    cfdp_entity_cfg cfg[MAXN];
    rec *r[MAXN];
    size_t nr[MAXN], cr[MAXN];
} net;

/* Entities 1..n (index 0..n-1), every peer configured as pc, every link lk. */
static inline void net_init(net *n, int count, const cfdp_peer_cfg *pc,
                            const cfdp_link_cfg *lk, uint64_t seed)
{
    memset(n, 0, sizeof *n);
    CHECK_OK(cfdp_sim_new(seed, &n->s));
    for (int i = 0; i < count; i++) {
        CHECK_OK(cfdp_memfs_new(&n->m[i], &n->fs[i]));
        cfdp_entity_cfg *c = &n->cfg[i];
        memset(c, 0, sizeof *c);
        c->id = (uint64_t)i + 1;
        c->fs = n->fs[i];
        c->defaults = *pc;
        CHECK_OK(cfdp_sim_add_entity(n->s, c, &n->e[i]));
    }
    for (int i = 0; i < count; i++)
        for (int j = 0; j < count; j++)
            if (i != j)
                CHECK_OK(cfdp_sim_link(n->s, (uint64_t)i + 1, (uint64_t)j + 1, lk));
}

static inline void net_free(net *n)
{
    cfdp_sim_free(n->s);
    for (int i = 0; i < MAXN; i++) {
        cfdp_memfs_free(n->m[i]);
        free(n->r[i]);
    }
}

/* Moves entity i's queued indications into n->r[i]. */
static inline void net_drain(net *n, int i)
{
    cfdp_ind ind;
    while (cfdp_entity_next_indication(n->e[i], &ind) == 0) {
        if (n->nr[i] == n->cr[i]) {
            n->cr[i] = n->cr[i] ? n->cr[i] * 2 : 64;
            n->r[i] = realloc(n->r[i], n->cr[i] * sizeof *n->r[i]);
            CHECK(n->r[i]);
        }
        rec *r = &n->r[i][n->nr[i]++];
        r->type = ind.type;
        r->role = ind.role;
        r->condition = ind.condition;
        r->delivery = ind.delivery;
        r->file_status = ind.file_status;
        r->txn = ind.txn;
        r->file_size = ind.file_size;
        r->progress = ind.progress;
        r->offset = ind.offset;
        r->length = ind.length;
        r->noptions = ind.options.count;
        r->nresponses = ind.responses.count;
    }
}

static inline size_t count_type(net *n, int i, unsigned type)
{
    net_drain(n, i);
    size_t c = 0;
    for (size_t k = 0; k < n->nr[i]; k++)
        c += n->r[i][k].type == type;
    return c;
}

/* The last indication of type at entity i, or NULL. */
static inline const rec *last_of(net *n, int i, unsigned type)
{
    net_drain(n, i);
    for (size_t k = n->nr[i]; k-- > 0;)
        if (n->r[i][k].type == type)
            return &n->r[i][k];
    return NULL;
}

/* Either end indication (FINISHED / ABANDONED) of entity i. */
static inline const rec *end_of(net *n, int i)
{
    const rec *f = last_of(n, i, CFDP_IND_FINISHED);
    return f ? f : last_of(n, i, CFDP_IND_ABANDONED);
}

static inline void fill(uint8_t *b, size_t len, uint64_t seed)
{
    uint64_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < len; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        b[i] = (uint8_t)(x >> 56);
    }
}

/* 1 if file a at entity i equals file b at entity j (SHA-256). */
static inline int same_file(net *n, int i, const char *a, int j, const char *b)
{
    uint8_t ha[32], hb[32];
    if (cfdp_memfs_sha256(n->m[i], a, ha) || cfdp_memfs_sha256(n->m[j], b, hb))
        return 0;
    return memcmp(ha, hb, 32) == 0;
}

static inline cfdp_put_req put_req(uint64_t dst, const char *src, const char *dstn,
                                   unsigned cls)
{
    cfdp_put_req q;
    memset(&q, 0, sizeof q);
    q.dst = dst;
    q.src_name = src;
    q.dst_name = dstn;
    q.cls = (uint8_t)cls;
    q.closure = -1;
    q.checksum_type = -1;
    q.nak_mode = -1;
    return q;
}

/* --------------------------------------------------- the manual wire */

typedef struct cap {
    uint64_t dst;
    size_t len;
    uint8_t b[CFDP_PDU_MAX];
} cap;

typedef struct wire {
    cap *p;
    size_t n, c;
    int busy; /* 1: send says -EAGAIN */
} wire;

static inline int wire_send(void *ctx, uint64_t dst, const uint8_t *b, size_t len)
{
    wire *w = ctx;
    if (w->busy)
        return -EAGAIN;
    if (w->n == w->c) {
        w->c = w->c ? w->c * 2 : 16;
        w->p = realloc(w->p, w->c * sizeof *w->p);
    }
    w->p[w->n].dst = dst;
    w->p[w->n].len = len;
    memcpy(w->p[w->n].b, b, len);
    w->n++;
    return 0;
}

static inline int pdu_kind(const cap *c)
{
    cfdp_pdu p;
    if (cfdp_pdu_decode(c->b, c->len, 0, &p, NULL))
        return -1;
    return p.kind;
}

/* Counts captured PDUs of kind. */
static inline size_t wire_count(const wire *w, int kind)
{
    size_t k = 0;
    for (size_t i = 0; i < w->n; i++)
        k += pdu_kind(&w->p[i]) == kind;
    return k;
}

static inline void wire_free(wire *w)
{
    free(w->p);
    memset(w, 0, sizeof *w);
}

/* An entity on a wire (queued indications). */
static inline cfdp_entity *wired(uint64_t id, cfdp_fs fs, const cfdp_peer_cfg *pc,
                                 wire *w)
{
    cfdp_entity_cfg c;
    memset(&c, 0, sizeof c);
    c.id = id;
    c.fs = fs;
    c.defaults = *pc;
    cfdp_host h = {.ctx = w, .send = wire_send, .queue_indications = 1};
    cfdp_entity *e = NULL;
    CHECK_OK(cfdp_entity_new(&c, &h, &e));
    return e;
}

/* Feeds every captured PDU of w from index from on to e; returns the count. */
static inline size_t wire_deliver(wire *w, size_t from, cfdp_entity *e, uint64_t now)
{
    size_t n = w->n;
    for (size_t i = from; i < n; i++)
        cfdp_entity_pdu_in(e, now, w->p[i].b, w->p[i].len);
    return n - from;
}

/* The next indication of type from e (skipping others), or 0. */
static inline int ind_wait(cfdp_entity *e, unsigned type, cfdp_ind *out)
{
    while (cfdp_entity_next_indication(e, out) == 0)
        if (out->type == type)
            return 1;
    return 0;
}

#endif
