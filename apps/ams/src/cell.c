/* The configuration server and the registrar (ams_cell.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ams_cell.h"

TERN_API void ams_timing_defaults(ams_timing *t)
{
    if (!t->heartbeat_ms)
        t->heartbeat_ms = 1000;
    if (!t->dead_ms)
        t->dead_ms = 4 * t->heartbeat_ms;
    if (!t->census_ms)
        t->census_ms = t->dead_ms;
}

/* Builds a PDU around a body written at buf + MAMS_HDR_LEN and sends it. */
static void send_pdu(ams_send_fn send, void *ctx, const mams_ep *to, mams_pdu *p,
                     uint8_t *buf, size_t cap)
{
    size_t n;
    p->body = buf + MAMS_HDR_LEN;
    if (mams_encode(p, buf, cap, &n) == 0)
        send(ctx, to, buf, n);
}

static int ep_eq(const mams_ep *a, const mams_ep *b)
{
    return a->addr == b->addr && a->port == b->port;
}

/* ---------------------------------------------------- configuration server */

struct csreg {
    uint16_t venture, unit;
    mams_ep ep;
    uint32_t incarnation;
    uint32_t heartbeat_ms;
    uint64_t heard_ms;
};

struct ams_cs {
    ams_send_fn send;
    void *ctx;
    struct csreg *regs;
    size_t n, cap;
    uint64_t next_ms;
    ams_cs_stats st;
    uint8_t buf[MAMS_MAX_PDU];
};

TERN_API int ams_cs_new(ams_send_fn send, void *ctx, uint64_t now_ms, ams_cs **out)
{
    ams_cs *cs = calloc(1, sizeof *cs);
    if (!cs)
        return -ENOMEM;
    cs->send = send;
    cs->ctx = ctx;
    cs->next_ms = now_ms + 1000;
    *out = cs;
    return 0;
}

TERN_API void ams_cs_free(ams_cs *cs)
{
    if (!cs)
        return;
    free(cs->regs);
    free(cs);
}

static struct csreg *cs_find(ams_cs *cs, uint16_t venture, uint16_t unit)
{
    for (size_t i = 0; i < cs->n; i++)
        if (cs->regs[i].venture == venture && cs->regs[i].unit == unit)
            return &cs->regs[i];
    return NULL;
}

/* A cell spec of the venture's registrars (one unit's if only), to to. */
static void cs_spec(ams_cs *cs, const mams_ep *to, uint16_t venture,
                    const struct csreg *only, uint32_t memo)
{
    mams_cur c;
    mams_cur_writer(&c, cs->buf + MAMS_HDR_LEN,
                    sizeof cs->buf - MAMS_HDR_LEN - MAMS_CRC_LEN);
    size_t n = 0;
    for (size_t i = 0; i < cs->n; i++)
        n += cs->regs[i].venture == venture && (!only || only == &cs->regs[i]);
    mams_put16(&c, (uint16_t)n);
    for (size_t i = 0; i < cs->n; i++) {
        const struct csreg *g = &cs->regs[i];
        if (g->venture != venture || (only && only != g))
            continue;
        mams_put16(&c, g->unit);
        mams_put_ep(&c, &g->ep);
        mams_put32(&c, g->incarnation);
    }
    if (c.err)
        return;
    mams_pdu p = {.type = MAMS_CELL_SPEC,
                  .venture = venture,
                  .memo = memo,
                  .body_len = (size_t)(c.w - (cs->buf + MAMS_HDR_LEN))};
    send_pdu(cs->send, cs->ctx, to, &p, cs->buf, sizeof cs->buf);
}

TERN_API void ams_cs_input(ams_cs *cs, uint64_t now_ms, const mams_ep *from,
                           const uint8_t *buf, size_t len)
{
    mams_pdu p;
    if (mams_decode(buf, len, &p, NULL)) {
        cs->st.malformed++;
        return;
    }
    mams_cur c;
    mams_cur_reader(&c, p.body, p.body_len);
    switch (p.type) {
    case MAMS_ANNOUNCE_REGISTRAR: {
        uint32_t hb = mams_get32(&c);
        mams_ep ep;
        mams_get_ep(&c, &ep);
        if (c.err || c.left || hb == 0 || hb > 3600000 || ep.port == 0) {
            cs->st.malformed++;
            return;
        }
        struct csreg *g = cs_find(cs, p.venture, p.unit);
        if (!g) {
            if (cs->n == cs->cap) {
                size_t cap = cs->cap ? 2 * cs->cap : 8;
                if (cap > 65536)
                    return; /* more cells than any venture has: ignore */
                struct csreg *r = realloc(cs->regs, cap * sizeof *r);
                if (!r)
                    return;
                cs->regs = r;
                cs->cap = cap;
            }
            g = &cs->regs[cs->n++];
            g->venture = p.venture;
            g->unit = p.unit;
        }
        g->ep = ep;
        g->incarnation = p.incarnation;
        g->heartbeat_ms = hb;
        g->heard_ms = now_ms;
        cs->st.registrars = cs->n;
        cs_spec(cs, from, p.venture, NULL, p.memo);
        return;
    }
    case MAMS_REGISTRAR_QUERY: {
        uint16_t unit = mams_get16(&c);
        if (c.err || c.left) {
            cs->st.malformed++;
            return;
        }
        (void)unit;
        cs->st.queries++;
        struct csreg *g = cs_find(cs, p.venture, unit);
        if (g) {
            cs_spec(cs, from, p.venture, g, p.memo);
            return;
        }
        mams_pdu q = {
            .type = MAMS_REGISTRAR_UNKNOWN, .venture = p.venture, .memo = p.memo};
        send_pdu(cs->send, cs->ctx, from, &q, cs->buf, sizeof cs->buf);
        return;
    }
    default:
        cs->st.malformed++; /* nothing else is for a configuration server */
        return;
    }
}

TERN_API void ams_cs_tick(ams_cs *cs, uint64_t now_ms)
{
    if (now_ms < cs->next_ms)
        return;
    for (size_t i = 0; i < cs->n;) {
        struct csreg *g = &cs->regs[i];
        if (now_ms - g->heard_ms > 3 * (uint64_t)g->heartbeat_ms)
            cs->regs[i] = cs->regs[--cs->n];
        else
            i++;
    }
    cs->st.registrars = cs->n;
    cs->next_ms = now_ms + 500;
}

TERN_API uint64_t ams_cs_deadline(const ams_cs *cs)
{
    return cs->next_ms;
}

TERN_API void ams_cs_stats_get(const ams_cs *cs, ams_cs_stats *st)
{
    *st = cs->st;
}

/* -------------------------------------------------------------- registrar */

/* A module as a registrar keeps it: of its own cell, or of a peer's. */
struct rmod {
    mams_module m;  /* m.rules points at rules */
    uint8_t *rules; /* owned copy */
    uint64_t heard_ms;
};

struct peer {
    uint16_t unit;
    mams_ep ep;
    uint32_t incarnation;
    uint64_t heard_ms;
    int census;
    struct rmod *mods[256];
};

struct ams_reg {
    ams_reg_cfg cfg;
    mams_ep cs[8];
    size_t n_cs;
    uint8_t roles[256];
    ams_send_fn send;
    void *ctx;
    uint64_t start_ms, next_hb_ms;
    int census;
    struct rmod *mods[256]; /* own cell by module number */
    struct peer **peers;
    size_t n_peers;
    ams_reg_stats st;
    int stopped; /* told to stop (MAMS_STOP) */
    uint8_t buf[MAMS_MAX_PDU];
};

static void rmod_free(struct rmod *m)
{
    if (m) {
        free(m->rules);
        free(m);
    }
}

/* A copy of a decoded record. */
static struct rmod *rmod_copy(const mams_module *src, uint64_t now_ms)
{
    struct rmod *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    size_t n = ((size_t)src->n_subs + src->n_invs) * MAMS_RULE_LEN;
    if (n && !(m->rules = malloc(n))) {
        free(m);
        return NULL;
    }
    if (n)
        memcpy(m->rules, src->rules, n);
    m->m = *src;
    m->m.rules = m->rules;
    m->heard_ms = now_ms;
    return m;
}

TERN_API int ams_reg_new(const ams_reg_cfg *cfg, ams_send_fn send, void *ctx,
                         uint64_t now_ms, ams_reg **out)
{
    if (!cfg || !send || cfg->n_cs > 8 || cfg->self.port == 0)
        return -EINVAL;
    ams_reg *r = calloc(1, sizeof *r);
    if (!r)
        return -ENOMEM;
    r->cfg = *cfg;
    ams_timing_defaults(&r->cfg.timing);
    memcpy(r->cs, cfg->cs, cfg->n_cs * sizeof *cfg->cs);
    r->n_cs = cfg->n_cs;
    r->cfg.cs = r->cs;
    if (cfg->roles)
        memcpy(r->roles, cfg->roles, sizeof r->roles);
    else
        memset(r->roles, 1, sizeof r->roles);
    r->roles[0] = 0;
    r->cfg.roles = r->roles;
    r->send = send;
    r->ctx = ctx;
    r->start_ms = now_ms;
    r->census = r->cfg.timing.census_ms > 0;
    r->next_hb_ms = now_ms; /* announce at once */
    *out = r;
    return 0;
}

TERN_API void ams_reg_free(ams_reg *r)
{
    if (!r)
        return;
    for (int i = 0; i < 256; i++)
        rmod_free(r->mods[i]);
    for (size_t i = 0; i < r->n_peers; i++) {
        for (int j = 0; j < 256; j++)
            rmod_free(r->peers[i]->mods[j]);
        free(r->peers[i]);
    }
    free(r->peers);
    free(r);
}

static mams_pdu reg_pdu(const ams_reg *r, int type, uint32_t memo)
{
    return (mams_pdu){.type = type,
                      .flags = r->census ? MAMS_F_CENSUS : 0,
                      .venture = r->cfg.venture,
                      .unit = r->cfg.unit,
                      .incarnation = r->cfg.incarnation,
                      .memo = memo};
}

static void reg_send(ams_reg *r, const mams_ep *to, mams_pdu *p, mams_cur *c)
{
    if (c) {
        if (c->err)
            return;
        p->body_len = (size_t)(c->w - (r->buf + MAMS_HDR_LEN));
    }
    send_pdu(r->send, r->ctx, to, p, r->buf, sizeof r->buf);
}

static void body_writer(ams_reg *r, mams_cur *c)
{
    mams_cur_writer(c, r->buf + MAMS_HDR_LEN,
                    sizeof r->buf - MAMS_HDR_LEN - MAMS_CRC_LEN);
}

static void put_record(mams_cur *c, const struct rmod *m)
{
    mams_put_module(c, &m->m, NULL, NULL);
}

/* Sends one record (gone: a tombstone) to every module of the cell and,
 * if it is of this cell, to every peer registrar. */
static void push_record(ams_reg *r, const struct rmod *m, int own)
{
    for (int i = 1; i < 256; i++) {
        const struct rmod *d = r->mods[i];
        if (!d || (own && d == m))
            continue;
        mams_cur c;
        body_writer(r, &c);
        mams_put16(&c, 1);
        put_record(&c, m);
        mams_pdu p = reg_pdu(r, MAMS_MODULE_STATUS, 0);
        reg_send(r, &d->m.mams, &p, &c);
    }
    if (!own)
        return;
    for (size_t i = 0; i < r->n_peers; i++) {
        mams_cur c;
        body_writer(r, &c);
        mams_put16(&c, 1);
        put_record(&c, m);
        mams_pdu p = reg_pdu(r, MAMS_MODULE_STATUS, 0);
        reg_send(r, &r->peers[i]->ep, &p, &c);
    }
}

/* A record of this cell leaves: everyone hears it is gone. */
static void drop_own(ams_reg *r, int nbr)
{
    struct rmod *m = r->mods[nbr];
    if (!m)
        return;
    r->mods[nbr] = NULL;
    m->m.gone = 1;
    m->m.n_subs = m->m.n_invs = 0;
    push_record(r, m, 1);
    rmod_free(m);
}

static void reject(ams_reg *r, const mams_ep *to, uint32_t memo, int reason)
{
    mams_cur c;
    body_writer(r, &c);
    mams_put8(&c, (uint8_t)reason);
    mams_pdu p = reg_pdu(r, MAMS_REJECTION, memo);
    reg_send(r, to, &p, &c);
    r->st.rejected++;
}

static void you_are_in(ams_reg *r, const struct rmod *m, uint32_t memo)
{
    mams_cur c;
    body_writer(r, &c);
    mams_put8(&c, m->m.module);
    mams_put32(&c, r->cfg.timing.heartbeat_ms);
    mams_put32(&c, r->cfg.timing.dead_ms);
    mams_pdu p = reg_pdu(r, MAMS_YOU_ARE_IN, memo);
    reg_send(r, &m->m.mams, &p, &c);
}

/* Everything this registrar knows, one record per PDU, to a new module. */
static void send_all_to(ams_reg *r, const mams_ep *to, const struct rmod *skip)
{
    mams_cur c;
    body_writer(r, &c);
    size_t n = 0;
    uint8_t *count = c.w;
    mams_put16(&c, 0);
#define FLUSH_IF_FULL(need)                                                              \
    do {                                                                                 \
        if (c.left < (need) && n) {                                                      \
            count[0] = (uint8_t)(n >> 8);                                                \
            count[1] = (uint8_t)n;                                                       \
            mams_pdu p = reg_pdu(r, MAMS_MODULE_STATUS, 0);                              \
            reg_send(r, to, &p, &c);                                                     \
            body_writer(r, &c);                                                          \
            count = c.w;                                                                 \
            mams_put16(&c, 0);                                                           \
            n = 0;                                                                       \
        }                                                                                \
    } while (0)
    for (int i = 1; i < 256; i++) {
        const struct rmod *m = r->mods[i];
        if (!m || m == skip)
            continue;
        size_t need =
            MAMS_MODULE_LEN + ((size_t)m->m.n_subs + m->m.n_invs) * MAMS_RULE_LEN;
        FLUSH_IF_FULL(need);
        put_record(&c, m);
        n++;
    }
    for (size_t k = 0; k < r->n_peers; k++)
        for (int i = 1; i < 256; i++) {
            const struct rmod *m = r->peers[k]->mods[i];
            if (!m)
                continue;
            size_t need =
                MAMS_MODULE_LEN + ((size_t)m->m.n_subs + m->m.n_invs) * MAMS_RULE_LEN;
            FLUSH_IF_FULL(need);
            put_record(&c, m);
            n++;
        }
#undef FLUSH_IF_FULL
    if (n) {
        count[0] = (uint8_t)(n >> 8);
        count[1] = (uint8_t)n;
        mams_pdu p = reg_pdu(r, MAMS_MODULE_STATUS, 0);
        reg_send(r, to, &p, &c);
    }
}

static struct rmod *own_by_ep(ams_reg *r, const mams_ep *ep, uint32_t incarnation)
{
    for (int i = 1; i < 256; i++)
        if (r->mods[i] && ep_eq(&r->mods[i]->m.mams, ep) &&
            r->mods[i]->m.incarnation == incarnation)
            return r->mods[i];
    return NULL;
}

/* Checks a record's rules: counts bounded (by the decoder), each rule sane. */
static int rules_ok(const mams_module *m)
{
    for (size_t i = 0; i < (size_t)m->n_subs + m->n_invs; i++) {
        mams_rule ru;
        mams_module_rule(m, i, &ru);
        if (ru.priority > 15 || ru.continuum > 32767 || (ru.flags & ~3))
            return 0;
    }
    return 1;
}

static void on_registration(ams_reg *r, uint64_t now, const mams_pdu *p, mams_cur *c)
{
    mams_module m;
    memset(&m, 0, sizeof m);
    mams_get_ep(c, &m.mams);
    mams_get_ep(c, &m.udp);
    mams_get_ep(c, &m.tcp);
    if (c->err || c->left || m.mams.port == 0) {
        r->st.malformed++;
        return;
    }
    if (p->unit != r->cfg.unit) {
        reject(r, &m.mams, p->memo, MAMS_REJ_NO_SUCH_UNIT);
        return;
    }
    if (!r->roles[p->role]) {
        reject(r, &m.mams, p->memo, MAMS_REJ_NO_SUCH_ROLE);
        return;
    }
    struct rmod *old = own_by_ep(r, &m.mams, p->incarnation);
    if (old) { /* a registration sent again: the same answer */
        you_are_in(r, old, p->memo);
        return;
    }
    if (r->census) {
        reject(r, &m.mams, p->memo, MAMS_REJ_CENSUS);
        return;
    }
    int nbr = 0;
    for (int i = 1; i < 256 && !nbr; i++)
        if (!r->mods[i])
            nbr = i;
    if (!nbr) {
        reject(r, &m.mams, p->memo, MAMS_REJ_CELL_FULL);
        return;
    }
    m.unit = r->cfg.unit;
    m.module = (uint8_t)nbr;
    m.role = p->role;
    m.incarnation = p->incarnation;
    struct rmod *n = rmod_copy(&m, now);
    if (!n)
        return; /* the module asks again */
    r->mods[nbr] = n;
    r->st.registered++;
    you_are_in(r, n, p->memo);
    send_all_to(r, &n->m.mams, n);
    push_record(r, n, 1);
}

static void on_reconnect(ams_reg *r, uint64_t now, const mams_pdu *p, mams_cur *c)
{
    mams_module m;
    mams_get_module(c, &m);
    if (c->err || c->left || m.mams.port == 0 || m.module == 0 || !rules_ok(&m)) {
        r->st.malformed++;
        return;
    }
    if (m.unit != r->cfg.unit || p->unit != r->cfg.unit) {
        reject(r, &m.mams, p->memo, MAMS_REJ_NO_SUCH_UNIT);
        return;
    }
    if (!r->roles[m.role]) {
        reject(r, &m.mams, p->memo, MAMS_REJ_NO_SUCH_ROLE);
        return;
    }
    struct rmod *cur = r->mods[m.module];
    if (cur && !(ep_eq(&cur->m.mams, &m.mams) && cur->m.incarnation == m.incarnation)) {
        reject(r, &m.mams, p->memo, MAMS_REJ_NBR_TAKEN);
        return;
    }
    m.gone = 0;
    struct rmod *n = rmod_copy(&m, now);
    if (!n)
        return;
    rmod_free(cur);
    r->mods[m.module] = n;
    r->st.reconnected++;
    you_are_in(r, n, p->memo);
    send_all_to(r, &n->m.mams, n);
    push_record(r, n, 1);
}

static void on_declaration(ams_reg *r, uint64_t now, const mams_pdu *p, mams_cur *c)
{
    struct rmod *cur = p->unit == r->cfg.unit ? r->mods[p->module] : NULL;
    if (!cur || cur->m.incarnation != p->incarnation)
        return; /* not (or no longer) of this cell: its heartbeat will sort it out */
    mams_module m = cur->m;
    m.version = mams_get32(c);
    m.n_subs = mams_get16(c);
    m.n_invs = mams_get16(c);
    mams_get_bytes(c, &m.rules, ((size_t)m.n_subs + m.n_invs) * MAMS_RULE_LEN);
    if (c->err || c->left || !rules_ok(&m)) {
        r->st.malformed++;
        return;
    }
    cur->heard_ms = now;
    if ((int32_t)(m.version - cur->m.version) <= 0)
        return; /* old or the same */
    struct rmod *n = rmod_copy(&m, now);
    if (!n)
        return;
    r->mods[p->module] = n;
    rmod_free(cur);
    push_record(r, n, 1);
}

static struct peer *peer_get(ams_reg *r, uint16_t unit, int create)
{
    for (size_t i = 0; i < r->n_peers; i++)
        if (r->peers[i]->unit == unit)
            return r->peers[i];
    if (!create || r->n_peers >= 4096)
        return NULL;
    struct peer **a = realloc(r->peers, (r->n_peers + 1) * sizeof *a);
    if (!a)
        return NULL;
    r->peers = a;
    struct peer *pe = calloc(1, sizeof *pe);
    if (!pe)
        return NULL;
    pe->unit = unit;
    pe->census = 1;
    r->peers[r->n_peers++] = pe;
    return pe;
}

/* A record from a peer registrar: kept and relayed to the cell. */
static void take_remote(ams_reg *r, uint64_t now, struct peer *pe, const mams_module *m)
{
    if (m->unit != pe->unit || m->module == 0)
        return;
    struct rmod *cur = pe->mods[m->module];
    if (m->gone) {
        if (!cur || cur->m.incarnation != m->incarnation)
            return;
        pe->mods[m->module] = NULL;
        cur->m.gone = 1; /* relayed to the cell as a tombstone */
        cur->m.n_subs = cur->m.n_invs = 0;
        push_record(r, cur, 0);
        rmod_free(cur);
        return;
    }
    if (cur && cur->m.incarnation == m->incarnation && cur->m.version == m->version) {
        cur->heard_ms = now;
        return;
    }
    struct rmod *n = rmod_copy(m, now);
    if (!n)
        return;
    rmod_free(cur);
    pe->mods[m->module] = n;
    push_record(r, n, 0);
}

static void on_status(ams_reg *r, uint64_t now, const mams_pdu *p, mams_cur *c)
{
    struct peer *pe = peer_get(r, p->unit, 0);
    if (!pe || p->module != 0 || p->unit == r->cfg.unit)
        return; /* only registrars of other cells send records to a registrar */
    unsigned n = mams_get16(c);
    for (unsigned i = 0; i < n && !c->err; i++) {
        mams_module m;
        mams_get_module(c, &m);
        if (c->err || !rules_ok(&m)) {
            r->st.malformed++;
            return;
        }
        take_remote(r, now, pe, &m);
    }
    if (c->err || c->left)
        r->st.malformed++;
}

/* "Send me these records" (from a module of the cell or a peer). */
static void on_status_query(ams_reg *r, const mams_ep *from, mams_cur *c)
{
    unsigned n = mams_get16(c);
    if (c->err || c->left != (size_t)n * 3) {
        r->st.malformed++;
        return;
    }
    mams_cur o;
    body_writer(r, &o);
    uint8_t *count = o.w;
    mams_put16(&o, 0);
    unsigned k = 0;
    for (unsigned i = 0; i < n; i++) {
        uint16_t unit = mams_get16(c);
        uint8_t nbr = mams_get8(c);
        const struct rmod *m = NULL;
        if (unit == r->cfg.unit)
            m = r->mods[nbr];
        else {
            struct peer *pe = peer_get(r, unit, 0);
            m = pe ? pe->mods[nbr] : NULL;
        }
        if (!m)
            continue;
        size_t need =
            MAMS_MODULE_LEN + ((size_t)m->m.n_subs + m->m.n_invs) * MAMS_RULE_LEN;
        if (o.left < need) {
            if (k) {
                count[0] = (uint8_t)(k >> 8);
                count[1] = (uint8_t)k;
                mams_pdu p = reg_pdu(r, MAMS_MODULE_STATUS, 0);
                reg_send(r, from, &p, &o);
            }
            body_writer(r, &o);
            count = o.w;
            mams_put16(&o, 0);
            k = 0;
        }
        put_record(&o, m);
        k++;
    }
    if (k) {
        count[0] = (uint8_t)(k >> 8);
        count[1] = (uint8_t)k;
        mams_pdu p = reg_pdu(r, MAMS_MODULE_STATUS, 0);
        reg_send(r, from, &p, &o);
    }
}

/* A peer registrar's heartbeat: its cell's digest. */
static void on_peer_heartbeat(ams_reg *r, uint64_t now, const mams_ep *from,
                              const mams_pdu *p, mams_cur *c)
{
    mams_ep ep;
    mams_get_ep(c, &ep);
    unsigned n = mams_get16(c);
    if (c->err || c->left != (size_t)n * MAMS_DIGEST_LEN || ep.port == 0) {
        r->st.malformed++;
        return;
    }
    (void)from;
    struct peer *pe = peer_get(r, p->unit, 1);
    if (!pe)
        return;
    if (pe->incarnation != p->incarnation)
        pe->incarnation = p->incarnation;
    pe->ep = ep;
    pe->heard_ms = now;
    pe->census = (p->flags & MAMS_F_CENSUS) != 0;
    uint8_t listed[256] = {0};
    uint8_t want[256 * 3];
    unsigned nw = 0;
    for (unsigned i = 0; i < n; i++) {
        uint16_t unit = mams_get16(c);
        uint8_t nbr = mams_get8(c);
        uint32_t ver = mams_get32(c), inc = mams_get32(c);
        if (unit != pe->unit || nbr == 0)
            continue;
        listed[nbr] = 1;
        const struct rmod *m = pe->mods[nbr];
        if (!m || m->m.version != ver || m->m.incarnation != inc) {
            want[nw * 3] = (uint8_t)(unit >> 8);
            want[nw * 3 + 1] = (uint8_t)unit;
            want[nw * 3 + 2] = nbr;
            nw++;
        }
    }
    if (!pe->census) /* its digest is the whole cell: the rest are gone */
        for (int i = 1; i < 256; i++)
            if (pe->mods[i] && !listed[i]) {
                struct rmod *m = pe->mods[i];
                pe->mods[i] = NULL;
                m->m.gone = 1;
                m->m.n_subs = m->m.n_invs = 0;
                push_record(r, m, 0);
                rmod_free(m);
            }
    if (nw) {
        mams_cur o;
        body_writer(r, &o);
        mams_put16(&o, (uint16_t)nw);
        mams_put_bytes(&o, want, (size_t)nw * 3);
        mams_pdu q = reg_pdu(r, MAMS_STATUS_QUERY, 0);
        reg_send(r, &pe->ep, &q, &o);
    }
}

static void on_module_heartbeat(ams_reg *r, uint64_t now, const mams_ep *from,
                                const mams_pdu *p, mams_cur *c)
{
    uint32_t version = mams_get32(c);
    if (c->err || c->left) {
        r->st.malformed++;
        return;
    }
    (void)version;
    struct rmod *m = p->unit == r->cfg.unit ? r->mods[p->module] : NULL;
    if (m && m->m.incarnation == p->incarnation) {
        m->heard_ms = now;
        if (!ep_eq(&m->m.mams, from))
            m->m.mams = *from; /* it moved (a new address on the same host) */
        return;
    }
    if (r->census) {
        /* a module of an earlier run: our heartbeat tells it to reconnect */
        mams_cur o;
        body_writer(r, &o);
        mams_put32(&o, r->cfg.timing.heartbeat_ms);
        mams_put32(&o, r->cfg.timing.dead_ms);
        mams_put32(&o, 0);
        mams_put16(&o, 0);
        mams_put16(&o, 0);
        mams_pdu q = reg_pdu(r, MAMS_HEARTBEAT, 0);
        reg_send(r, from, &q, &o);
        return;
    }
    mams_pdu q = reg_pdu(r, MAMS_YOU_ARE_DEAD, 0);
    reg_send(r, from, &q, NULL);
}

static void on_cell_spec(ams_reg *r, uint64_t now, mams_cur *c)
{
    unsigned n = mams_get16(c);
    if (c->err || c->left != (size_t)n * MAMS_REGISTRAR_LEN) {
        r->st.malformed++;
        return;
    }
    for (unsigned i = 0; i < n; i++) {
        uint16_t unit = mams_get16(c);
        mams_ep ep;
        mams_get_ep(c, &ep);
        uint32_t inc = mams_get32(c);
        if (unit == r->cfg.unit || ep.port == 0)
            continue;
        struct peer *pe = peer_get(r, unit, 1);
        if (!pe)
            return;
        if (!pe->heard_ms) {
            pe->ep = ep;
            pe->incarnation = inc;
            pe->heard_ms = now;
        }
    }
}

TERN_API void ams_reg_input(ams_reg *r, uint64_t now_ms, const mams_ep *from,
                            const uint8_t *buf, size_t len)
{
    mams_pdu p;
    if (mams_decode(buf, len, &p, NULL)) {
        r->st.malformed++;
        return;
    }
    if (p.venture != r->cfg.venture) {
        r->st.malformed++;
        return;
    }
    mams_cur c;
    mams_cur_reader(&c, p.body, p.body_len);
    switch (p.type) {
    case MAMS_MODULE_REGISTRATION:
        on_registration(r, now_ms, &p, &c);
        break;
    case MAMS_RECONNECT:
        on_reconnect(r, now_ms, &p, &c);
        break;
    case MAMS_DECLARATION:
        on_declaration(r, now_ms, &p, &c);
        break;
    case MAMS_I_AM_STOPPING:
        if (p.unit == r->cfg.unit && r->mods[p.module] &&
            r->mods[p.module]->m.incarnation == p.incarnation) {
            r->st.stopped++;
            drop_own(r, p.module);
        }
        break;
    case MAMS_HEARTBEAT:
        if (p.module)
            on_module_heartbeat(r, now_ms, from, &p, &c);
        else if (p.unit != r->cfg.unit)
            on_peer_heartbeat(r, now_ms, from, &p, &c);
        break;
    case MAMS_MODULE_STATUS:
        on_status(r, now_ms, &p, &c);
        break;
    case MAMS_STATUS_QUERY:
        on_status_query(r, from, &c);
        break;
    case MAMS_CELL_SPEC:
        on_cell_spec(r, now_ms, &c);
        break;
    case MAMS_STOP:
        /* amsstop's order: every registrar of the venture stops; the first
         * to hear it tells the others it knows (each once) */
        if (!r->stopped) {
            r->stopped = 1;
            for (size_t i = 0; i < r->n_peers; i++) {
                mams_pdu q = reg_pdu(r, MAMS_STOP, 0);
                reg_send(r, &r->peers[i]->ep, &q, NULL);
            }
        }
        break;
    default:
        r->st.malformed++;
        break;
    }
}

TERN_API int ams_reg_stopped(const ams_reg *r)
{
    return r->stopped;
}

/* The digest of the cell's own modules (for peers) or of all it knows (for
 * its modules). */
static void put_digest(ams_reg *r, mams_cur *c, int all)
{
    uint8_t *count = c->w;
    mams_put16(c, 0);
    unsigned n = 0;
    for (int i = 1; i < 256; i++)
        if (r->mods[i]) {
            mams_put16(c, r->cfg.unit);
            mams_put8(c, (uint8_t)i);
            mams_put32(c, r->mods[i]->m.version);
            mams_put32(c, r->mods[i]->m.incarnation);
            n++;
        }
    if (all)
        for (size_t k = 0; k < r->n_peers; k++)
            for (int i = 1; i < 256; i++) {
                const struct rmod *m = r->peers[k]->mods[i];
                if (!m)
                    continue;
                mams_put16(c, m->m.unit);
                mams_put8(c, (uint8_t)i);
                mams_put32(c, m->m.version);
                mams_put32(c, m->m.incarnation);
                n++;
            }
    if (!c->err) {
        count[0] = (uint8_t)(n >> 8);
        count[1] = (uint8_t)n;
    }
}

static void heartbeats(ams_reg *r, uint64_t now)
{
    /* to the configuration servers */
    for (size_t i = 0; i < r->n_cs; i++) {
        mams_cur c;
        body_writer(r, &c);
        mams_put32(&c, r->cfg.timing.heartbeat_ms);
        mams_put_ep(&c, &r->cfg.self);
        mams_pdu p = reg_pdu(r, MAMS_ANNOUNCE_REGISTRAR, 0);
        reg_send(r, &r->cs[i], &p, &c);
    }
    /* to the peers: this cell's digest */
    for (size_t i = 0; i < r->n_peers; i++) {
        struct peer *pe = r->peers[i];
        mams_cur c;
        body_writer(r, &c);
        mams_put_ep(&c, &r->cfg.self);
        put_digest(r, &c, 0);
        mams_pdu p = reg_pdu(r, MAMS_HEARTBEAT, 0);
        reg_send(r, &pe->ep, &p, &c);
    }
    /* to the modules: timing, their own declaration's version here, the
     * digest of everything, and which units it covers whole */
    for (int i = 1; i < 256; i++) {
        struct rmod *m = r->mods[i];
        if (!m)
            continue;
        mams_cur c;
        body_writer(r, &c);
        mams_put32(&c, r->cfg.timing.heartbeat_ms);
        mams_put32(&c, r->cfg.timing.dead_ms);
        mams_put32(&c, m->m.version);
        put_digest(r, &c, 1);
        uint8_t *count = c.w;
        mams_put16(&c, 0);
        unsigned n = 0;
        if (!r->census) {
            mams_put16(&c, r->cfg.unit);
            n++;
        }
        for (size_t k = 0; k < r->n_peers; k++) {
            const struct peer *pe = r->peers[k];
            if (!pe->census && now - pe->heard_ms <= r->cfg.timing.dead_ms) {
                mams_put16(&c, pe->unit);
                n++;
            }
        }
        if (!c.err) {
            count[0] = (uint8_t)(n >> 8);
            count[1] = (uint8_t)n;
        }
        mams_pdu p = reg_pdu(r, MAMS_HEARTBEAT, 0);
        reg_send(r, &m->m.mams, &p, &c);
    }
}

TERN_API void ams_reg_tick(ams_reg *r, uint64_t now_ms)
{
    if (r->census && now_ms - r->start_ms >= r->cfg.timing.census_ms)
        r->census = 0;
    for (int i = 1; i < 256; i++)
        if (r->mods[i] && now_ms - r->mods[i]->heard_ms > r->cfg.timing.dead_ms) {
            r->st.died++;
            drop_own(r, i);
        }
    if (now_ms >= r->next_hb_ms) {
        heartbeats(r, now_ms);
        r->next_hb_ms = now_ms + r->cfg.timing.heartbeat_ms;
    }
}

TERN_API uint64_t ams_reg_deadline(const ams_reg *r)
{
    uint64_t d = r->next_hb_ms;
    if (r->census && r->start_ms + r->cfg.timing.census_ms < d)
        d = r->start_ms + r->cfg.timing.census_ms;
    for (int i = 1; i < 256; i++)
        if (r->mods[i] && r->mods[i]->heard_ms + r->cfg.timing.dead_ms + 1 < d)
            d = r->mods[i]->heard_ms + r->cfg.timing.dead_ms + 1;
    return d;
}

TERN_API void ams_reg_stats_get(const ams_reg *r, ams_reg_stats *st)
{
    *st = r->st;
    st->modules = st->remote_modules = 0;
    for (int i = 1; i < 256; i++)
        st->modules += r->mods[i] != NULL;
    for (size_t k = 0; k < r->n_peers; k++)
        for (int i = 1; i < 256; i++)
            st->remote_modules += r->peers[k]->mods[i] != NULL;
    st->peers = r->n_peers;
    st->census = r->census;
}
