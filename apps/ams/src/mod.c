/* A module's side of MAMS (ams_mod.h): find the registrar, register, beat,
 * declare, keep the view, reconnect.
 *
 * The view holds one record per module of the venture (its own included
 * once registered), copied out of the PDUs that brought it. Registrars
 * relay records; their heartbeats carry digests that say which records a
 * module should hold, so one lost on the way is asked for again and one the
 * module holds that its registrar no longer lists is dropped (for the units
 * whose digests the registrar says are whole). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ams_mod.h"

#define GONE_KEPT 64

struct vmod {
    mams_module m;  /* m.rules points at rules */
    uint8_t *rules; /* owned */
};

struct vunit {
    uint16_t unit;
    struct vmod *mods[256];
};

struct ams_mod {
    ams_mod_cfg cfg;
    mams_ep cs[8];
    ams_send_fn send;
    ams_note_fn note;
    void *ctx;
    int state;
    int nbr;                  /* 0 until registered */
    mams_ep reg;              /* the registrar */
    uint32_t reg_incarnation; /* of the registrar we registered with */
    int have_reg;
    uint32_t hb_ms, dead_ms;
    uint64_t next_send_ms; /* next query, registration or heartbeat */
    uint64_t reg_heard_ms;
    uint32_t version; /* of the declaration */
    uint8_t *rules;   /* the declaration, on-wire form */
    uint16_t n_subs, n_invs;
    uint32_t memo;
    struct vunit **units;
    size_t n_units;
    struct vmod
        *gone[GONE_KEPT]; /* the latest to leave, for their messages still on the way */
    unsigned gone_at;
    uint64_t view_version;
    ams_mod_stats st;
    uint8_t buf[MAMS_MAX_PDU];
};

/* ------------------------------------------------------------ the view */

static struct vunit *vunit_get(ams_mod *m, uint16_t unit, int create)
{
    for (size_t i = 0; i < m->n_units; i++)
        if (m->units[i]->unit == unit)
            return m->units[i];
    if (!create || m->n_units >= 65536)
        return NULL;
    struct vunit **a = realloc(m->units, (m->n_units + 1) * sizeof *a);
    if (!a)
        return NULL;
    m->units = a;
    struct vunit *u = calloc(1, sizeof *u);
    if (!u)
        return NULL;
    u->unit = unit;
    m->units[m->n_units++] = u;
    return u;
}

static void vmod_free(struct vmod *v)
{
    if (v) {
        free(v->rules);
        free(v);
    }
}

static struct vmod *vmod_copy(const mams_module *src)
{
    struct vmod *v = calloc(1, sizeof *v);
    if (!v)
        return NULL;
    v->m = *src;
    size_t n = ((size_t)src->n_subs + src->n_invs) * MAMS_RULE_LEN;
    if (n) {
        if (!(v->rules = malloc(n))) {
            free(v);
            return NULL;
        }
        memcpy(v->rules, src->rules, n);
    }
    v->m.rules = v->rules;
    v->m.gone = 0;
    return v;
}

static int rule_eq(const mams_rule *a, const mams_rule *b)
{
    return a->subject == b->subject && a->continuum == b->continuum &&
           a->unit == b->unit && a->role == b->role && a->priority == b->priority &&
           a->flow == b->flow && a->flags == b->flags;
}

/* Is rule r (a subscription if sub) among m's? */
static int has_rule(const mams_module *m, int sub, const mams_rule *r)
{
    size_t lo = sub ? 0 : m->n_subs, hi = sub ? m->n_subs : (size_t)m->n_subs + m->n_invs;
    for (size_t i = lo; i < hi; i++) {
        mams_rule x;
        mams_module_rule(m, i, &x);
        if (rule_eq(&x, r))
            return 1;
    }
    return 0;
}

/* Tells the rules of a that b lacks (as removed or, swapped, added). */
static void diff_rules(ams_mod *m, const mams_module *a, const mams_module *b, int added,
                       const mams_module *who)
{
    for (size_t i = 0; i < (size_t)a->n_subs + a->n_invs; i++) {
        int sub = i < a->n_subs;
        mams_rule r;
        mams_module_rule(a, i, &r);
        if (b && has_rule(b, sub, &r))
            continue;
        int note = sub ? (added ? AMS_NOTE_SUB_ADDED : AMS_NOTE_SUB_REMOVED)
                       : (added ? AMS_NOTE_INV_ADDED : AMS_NOTE_INV_REMOVED);
        m->note(m->ctx, note, who, &r, 0);
    }
}

/* Puts a record into the view (replacing what was there), telling what
 * changed. Returns 0, or -ENOMEM (the view is as before). */
static int view_put(ams_mod *m, const mams_module *rec)
{
    struct vunit *u = vunit_get(m, rec->unit, 1);
    if (!u)
        return -ENOMEM;
    struct vmod *old = u->mods[rec->module];
    if (old && old->m.incarnation == rec->incarnation && old->m.version == rec->version &&
        old->m.role == rec->role)
        return 0;
    struct vmod *n = vmod_copy(rec);
    if (!n)
        return -ENOMEM;
    u->mods[rec->module] = n;
    m->view_version++;
    if (rec->unit == m->cfg.unit && rec->module == m->nbr) {
        vmod_free(old); /* its own record: it knows what it declared */
        return 0;
    }
    if (old && old->m.incarnation != rec->incarnation) {
        /* another module under the same number: the old one left */
        diff_rules(m, &old->m, NULL, 0, &old->m);
        m->note(m->ctx, AMS_NOTE_LEFT, &old->m, NULL, 0);
        vmod_free(old);
        old = NULL;
    }
    if (!old)
        m->note(m->ctx, AMS_NOTE_JOINED, &n->m, NULL, 0);
    diff_rules(m, &n->m, old ? &old->m : NULL, 1, &n->m);
    if (old)
        diff_rules(m, &old->m, &n->m, 0, &n->m);
    vmod_free(old);
    return 0;
}

static void view_drop(ams_mod *m, struct vunit *u, int nbr)
{
    struct vmod *v = u->mods[nbr];
    if (!v)
        return;
    u->mods[nbr] = NULL;
    m->view_version++;
    diff_rules(m, &v->m, NULL, 0, &v->m);
    m->note(m->ctx, AMS_NOTE_LEFT, &v->m, NULL, 0);
    unsigned k = m->gone_at++ % GONE_KEPT;
    vmod_free(m->gone[k]);
    m->gone[k] = v;
}

/* This module's own record, as the others get it. */
static mams_module self_record(const ams_mod *m)
{
    return (mams_module){.unit = m->cfg.unit,
                         .module = (uint8_t)m->nbr,
                         .role = m->cfg.role,
                         .incarnation = m->cfg.incarnation,
                         .version = m->version,
                         .mams = m->cfg.mams,
                         .udp = m->cfg.udp,
                         .tcp = m->cfg.tcp,
                         .n_subs = m->n_subs,
                         .n_invs = m->n_invs,
                         .rules = m->rules};
}

/* ------------------------------------------------------------ sending */

static mams_pdu mod_pdu(const ams_mod *m, int type, uint32_t memo)
{
    return (mams_pdu){.type = type,
                      .venture = m->cfg.venture,
                      .unit = m->cfg.unit,
                      .role = m->cfg.role,
                      .module = (uint8_t)m->nbr,
                      .incarnation = m->cfg.incarnation,
                      .memo = memo};
}

static void body_writer(ams_mod *m, mams_cur *c)
{
    mams_cur_writer(c, m->buf + MAMS_HDR_LEN,
                    sizeof m->buf - MAMS_HDR_LEN - MAMS_CRC_LEN);
}

static void mod_send(ams_mod *m, const mams_ep *to, mams_pdu *p, const mams_cur *c)
{
    if (c) {
        if (c->err)
            return;
        p->body_len = (size_t)(c->w - (m->buf + MAMS_HDR_LEN));
    }
    p->body = m->buf + MAMS_HDR_LEN;
    size_t n;
    if (mams_encode(p, m->buf, sizeof m->buf, &n) == 0)
        m->send(m->ctx, to, m->buf, n);
}

static void send_query(ams_mod *m)
{
    for (size_t i = 0; i < m->cfg.n_cs; i++) {
        mams_cur c;
        body_writer(m, &c);
        mams_put16(&c, m->cfg.unit);
        mams_pdu p = mod_pdu(m, MAMS_REGISTRAR_QUERY, ++m->memo);
        mod_send(m, &m->cs[i], &p, &c);
    }
    m->st.queries++;
}

/* A registration, or with a number already, a reconnect with the record. */
static void send_registration(ams_mod *m)
{
    mams_cur c;
    body_writer(m, &c);
    if (m->nbr) {
        mams_module me = self_record(m);
        mams_put_module(&c, &me, NULL, NULL);
        mams_pdu p = mod_pdu(m, MAMS_RECONNECT, ++m->memo);
        mod_send(m, &m->reg, &p, &c);
        return;
    }
    mams_put_ep(&c, &m->cfg.mams);
    mams_put_ep(&c, &m->cfg.udp);
    mams_put_ep(&c, &m->cfg.tcp);
    mams_pdu p = mod_pdu(m, MAMS_MODULE_REGISTRATION, ++m->memo);
    mod_send(m, &m->reg, &p, &c);
}

static void send_declaration(ams_mod *m)
{
    mams_cur c;
    body_writer(m, &c);
    mams_put32(&c, m->version);
    mams_put16(&c, m->n_subs);
    mams_put16(&c, m->n_invs);
    size_t n = ((size_t)m->n_subs + m->n_invs) * MAMS_RULE_LEN;
    if (n)
        mams_put_bytes(&c, m->rules, n);
    mams_pdu p = mod_pdu(m, MAMS_DECLARATION, 0);
    mod_send(m, &m->reg, &p, &c);
    m->st.declarations++;
}

static void send_heartbeat(ams_mod *m)
{
    mams_cur c;
    body_writer(m, &c);
    mams_put32(&c, m->version);
    mams_pdu p = mod_pdu(m, MAMS_HEARTBEAT, 0);
    mod_send(m, &m->reg, &p, &c);
}

/* Back to the configuration server: the registrar is gone or unknown. With
 * a number the module reconnects once it finds the registrar again. */
static void lost(ams_mod *m, uint64_t now)
{
    m->state = AMS_MOD_QUERYING;
    m->have_reg = 0;
    m->next_send_ms = now;
}

/* Registers anew: the registrar does not know this module (it declared it
 * dead, or refused its number). */
static void start_over(ams_mod *m, uint64_t now)
{
    struct vunit *u = vunit_get(m, m->cfg.unit, 0);
    if (u && m->nbr) { /* its own record goes quietly */
        vmod_free(u->mods[m->nbr]);
        u->mods[m->nbr] = NULL;
        m->view_version++;
    }
    m->nbr = 0;
    m->cfg.incarnation++;
    m->state = AMS_MOD_REGISTERING;
    m->next_send_ms = now;
}

/* ------------------------------------------------------------ input */

static void on_cell_spec(ams_mod *m, uint64_t now, mams_cur *c)
{
    if (m->state != AMS_MOD_QUERYING)
        return;
    unsigned n = mams_get16(c);
    if (c->err || c->left != (size_t)n * MAMS_REGISTRAR_LEN) {
        m->st.malformed++;
        return;
    }
    for (unsigned i = 0; i < n; i++) {
        uint16_t unit = mams_get16(c);
        mams_ep ep;
        mams_get_ep(c, &ep);
        uint32_t inc = mams_get32(c);
        if (unit != m->cfg.unit || ep.port == 0)
            continue;
        m->reg = ep;
        m->reg_incarnation = inc;
        m->have_reg = 1;
        m->reg_heard_ms = now;
        m->state = AMS_MOD_REGISTERING;
        send_registration(m);
        m->next_send_ms = now + m->cfg.retry_ms;
        return;
    }
}

static void on_you_are_in(ams_mod *m, uint64_t now, const mams_pdu *p, mams_cur *c)
{
    uint8_t nbr = mams_get8(c);
    uint32_t hb = mams_get32(c), dead = mams_get32(c);
    if (c->err || c->left || nbr == 0 || hb == 0 || hb > 3600000 || dead < hb ||
        dead > 4 * 3600000u) {
        m->st.malformed++;
        return;
    }
    if (m->state != AMS_MOD_REGISTERING || (m->nbr && m->nbr != nbr))
        return;
    if (m->nbr)
        m->st.reconnects++;
    else
        m->st.registrations++;
    m->nbr = nbr;
    m->hb_ms = hb;
    m->dead_ms = dead;
    m->reg_incarnation = p->incarnation;
    m->reg_heard_ms = now;
    m->state = AMS_MOD_IN;
    m->next_send_ms = now + hb;
    mams_module me = self_record(m);
    if (view_put(m, &me) == 0) {
        struct vunit *u = vunit_get(m, m->cfg.unit, 0);
        m->note(m->ctx, AMS_NOTE_SELF_IN, &u->mods[nbr]->m, NULL, 0);
    }
    if (m->version)
        send_declaration(m);
}

static void on_rejection(ams_mod *m, uint64_t now, mams_cur *c)
{
    uint8_t why = mams_get8(c);
    if (c->err || c->left) {
        m->st.malformed++;
        return;
    }
    if (m->state != AMS_MOD_REGISTERING)
        return;
    m->reg_heard_ms = now;
    switch (why) {
    case MAMS_REJ_CENSUS: /* a restarted registrar: ask again after the retry */
        m->next_send_ms = now + m->cfg.retry_ms;
        return;
    case MAMS_REJ_NBR_TAKEN:
        start_over(m, now);
        return;
    default:
        m->state = AMS_MOD_REFUSED;
        m->note(m->ctx, AMS_NOTE_REFUSED, NULL, NULL, why);
        return;
    }
}

static void on_status(ams_mod *m, mams_cur *c)
{
    unsigned n = mams_get16(c);
    for (unsigned i = 0; i < n && !c->err; i++) {
        mams_module r;
        mams_get_module(c, &r);
        if (c->err || r.module == 0 || r.mams.port == 0) {
            m->st.malformed++;
            return;
        }
        if (r.unit == m->cfg.unit && r.module == m->nbr)
            continue; /* its own record is its own */
        if (r.gone) {
            struct vunit *u = vunit_get(m, r.unit, 0);
            if (u && u->mods[r.module] &&
                u->mods[r.module]->m.incarnation == r.incarnation)
                view_drop(m, u, r.module);
            continue;
        }
        (void)view_put(m, &r); /* no memory: the next digest asks again */
    }
    if (c->err || c->left)
        m->st.malformed++;
}

static void on_heartbeat(ams_mod *m, uint64_t now, const mams_pdu *p, mams_cur *c)
{
    uint32_t hb = mams_get32(c), dead = mams_get32(c), mine = mams_get32(c);
    unsigned n = mams_get16(c);
    const uint8_t *dig = NULL;
    mams_get_bytes(c, &dig, (size_t)n * MAMS_DIGEST_LEN);
    unsigned nu = mams_get16(c);
    const uint8_t *units = NULL;
    mams_get_bytes(c, &units, (size_t)nu * 2);
    if (c->err || c->left || hb == 0 || hb > 3600000 || dead < hb ||
        dead > 4 * 3600000u) {
        m->st.malformed++;
        return;
    }
    if (!m->have_reg || p->unit != m->cfg.unit)
        return;
    m->reg_heard_ms = now;
    if (m->state != AMS_MOD_IN || p->incarnation != m->reg_incarnation) {
        /* the registrar restarted (it takes its census): reconnect */
        if (m->nbr && m->state != AMS_MOD_REGISTERING) {
            m->state = AMS_MOD_REGISTERING;
            send_registration(m);
            m->next_send_ms = now + m->cfg.retry_ms;
        }
        return;
    }
    m->hb_ms = hb;
    m->dead_ms = dead;
    if (mine != m->version)
        send_declaration(m);
    /* records the digest lists that the view lacks or holds older */
    uint8_t want[MAMS_MAX_PDU / 2];
    size_t nw = 0;
    mams_cur d;
    mams_cur_reader(&d, dig, (size_t)n * MAMS_DIGEST_LEN);
    for (unsigned i = 0; i < n; i++) {
        uint16_t unit = mams_get16(&d);
        uint8_t nbr = mams_get8(&d);
        uint32_t ver = mams_get32(&d), inc = mams_get32(&d);
        if (nbr == 0 || (unit == m->cfg.unit && nbr == m->nbr))
            continue;
        struct vunit *u = vunit_get(m, unit, 0);
        const struct vmod *v = u ? u->mods[nbr] : NULL;
        if ((!v || v->m.version != ver || v->m.incarnation != inc) &&
            nw + 3 <= sizeof want) {
            want[nw++] = (uint8_t)(unit >> 8);
            want[nw++] = (uint8_t)unit;
            want[nw++] = nbr;
        }
    }
    if (nw) {
        mams_cur o;
        body_writer(m, &o);
        mams_put16(&o, (uint16_t)(nw / 3));
        mams_put_bytes(&o, want, nw);
        mams_pdu q = mod_pdu(m, MAMS_STATUS_QUERY, 0);
        mod_send(m, &m->reg, &q, &o);
    }
    /* for the units the registrar knows whole: what it does not list is gone */
    for (unsigned k = 0; k < nu; k++) {
        uint16_t unit = (uint16_t)(units[2 * k] << 8 | units[2 * k + 1]);
        struct vunit *u = vunit_get(m, unit, 0);
        if (!u)
            continue;
        uint8_t listed[256] = {0};
        mams_cur_reader(&d, dig, (size_t)n * MAMS_DIGEST_LEN);
        for (unsigned i = 0; i < n; i++) {
            uint16_t un = mams_get16(&d);
            uint8_t nbr = mams_get8(&d);
            uint32_t ver = mams_get32(&d), inc = mams_get32(&d);
            (void)ver;
            if (un == unit && u->mods[nbr] && u->mods[nbr]->m.incarnation == inc)
                listed[nbr] = 1;
        }
        for (int i = 1; i < 256; i++)
            if (u->mods[i] && !listed[i] && !(unit == m->cfg.unit && i == m->nbr))
                view_drop(m, u, i);
    }
}

TERN_API void ams_mod_input(ams_mod *m, uint64_t now_ms, const mams_ep *from,
                            const uint8_t *buf, size_t len)
{
    mams_pdu p;
    if (mams_decode(buf, len, &p, NULL) || p.venture != m->cfg.venture) {
        m->st.malformed++;
        return;
    }
    (void)from;
    mams_cur c;
    mams_cur_reader(&c, p.body, p.body_len);
    switch (p.type) {
    case MAMS_CELL_SPEC:
        on_cell_spec(m, now_ms, &c);
        break;
    case MAMS_REGISTRAR_UNKNOWN:
        break; /* the registrar is not up yet: the next query asks again */
    case MAMS_YOU_ARE_IN:
        on_you_are_in(m, now_ms, &p, &c);
        break;
    case MAMS_REJECTION:
        on_rejection(m, now_ms, &c);
        break;
    case MAMS_YOU_ARE_DEAD:
        if (m->state == AMS_MOD_IN && p.unit == m->cfg.unit && m->have_reg &&
            p.incarnation == m->reg_incarnation)
            start_over(m, now_ms);
        break;
    case MAMS_MODULE_STATUS:
        if (m->have_reg && p.unit == m->cfg.unit)
            on_status(m, &c);
        break;
    case MAMS_HEARTBEAT:
        on_heartbeat(m, now_ms, &p, &c);
        break;
    default:
        m->st.malformed++;
        break;
    }
}

/* ------------------------------------------------------------ time */

TERN_API void ams_mod_tick(ams_mod *m, uint64_t now)
{
    if (m->state == AMS_MOD_IN && now - m->reg_heard_ms > m->dead_ms) {
        m->st.registrar_lost++;
        lost(m, now);
    }
    if (m->state == AMS_MOD_REGISTERING && m->have_reg &&
        now - m->reg_heard_ms > (m->dead_ms ? m->dead_ms : 8u * m->cfg.retry_ms))
        lost(m, now); /* the registrar found is silent too */
    if (now < m->next_send_ms)
        return;
    switch (m->state) {
    case AMS_MOD_QUERYING:
        send_query(m);
        m->next_send_ms = now + m->cfg.retry_ms;
        break;
    case AMS_MOD_REGISTERING:
        send_registration(m);
        m->next_send_ms = now + m->cfg.retry_ms;
        break;
    case AMS_MOD_IN:
        send_heartbeat(m);
        m->next_send_ms = now + m->hb_ms;
        break;
    default:
        m->next_send_ms = UINT64_MAX;
        break;
    }
}

TERN_API uint64_t ams_mod_deadline(const ams_mod *m)
{
    uint64_t d = m->next_send_ms;
    if (m->state == AMS_MOD_IN && m->reg_heard_ms + m->dead_ms + 1 < d)
        d = m->reg_heard_ms + m->dead_ms + 1;
    return d; /* a silent registrar while registering is checked at each resend */
}

/* ------------------------------------------------------------ life */

TERN_API int ams_mod_new(const ams_mod_cfg *cfg, ams_send_fn send, ams_note_fn note,
                         void *ctx, uint64_t now_ms, ams_mod **out)
{
    *out = NULL;
    if (!cfg->n_cs || cfg->n_cs > 8 || cfg->role == 0 || !send || !note)
        return -EINVAL;
    ams_mod *m = calloc(1, sizeof *m);
    if (!m)
        return -ENOMEM;
    m->cfg = *cfg;
    memcpy(m->cs, cfg->cs, cfg->n_cs * sizeof *m->cs);
    m->cfg.cs = m->cs;
    if (!m->cfg.retry_ms)
        m->cfg.retry_ms = 500;
    m->send = send;
    m->note = note;
    m->ctx = ctx;
    m->state = AMS_MOD_QUERYING;
    m->next_send_ms = now_ms;
    *out = m;
    return 0;
}

TERN_API void ams_mod_free(ams_mod *m, uint64_t now_ms)
{
    if (!m)
        return;
    (void)now_ms;
    if (m->state == AMS_MOD_IN) {
        mams_pdu p = mod_pdu(m, MAMS_I_AM_STOPPING, 0);
        mod_send(m, &m->reg, &p, NULL);
    }
    for (size_t i = 0; i < m->n_units; i++) {
        for (int j = 0; j < 256; j++)
            vmod_free(m->units[i]->mods[j]);
        free(m->units[i]);
    }
    free(m->units);
    for (int i = 0; i < GONE_KEPT; i++)
        vmod_free(m->gone[i]);
    free(m->rules);
    free(m);
}

TERN_API int ams_mod_declare(ams_mod *m, uint64_t now_ms, const mams_rule *subs,
                             size_t n_subs, const mams_rule *invs, size_t n_invs)
{
    (void)now_ms;
    size_t n = n_subs + n_invs;
    if (n_subs > 65535 || n_invs > 65535 ||
        MAMS_MODULE_LEN + n * MAMS_RULE_LEN >
            MAMS_MAX_PDU - MAMS_HDR_LEN - MAMS_CRC_LEN - 2)
        return -E2BIG;
    uint8_t *w = NULL;
    if (n) {
        if (!(w = malloc(n * MAMS_RULE_LEN)))
            return -ENOMEM;
        mams_cur c;
        mams_cur_writer(&c, w, n * MAMS_RULE_LEN);
        for (size_t i = 0; i < n_subs; i++)
            mams_put_rule(&c, &subs[i]);
        for (size_t i = 0; i < n_invs; i++)
            mams_put_rule(&c, &invs[i]);
    }
    free(m->rules);
    m->rules = w;
    m->n_subs = (uint16_t)n_subs;
    m->n_invs = (uint16_t)n_invs;
    m->version++;
    if (m->state == AMS_MOD_IN) {
        mams_module me = self_record(m);
        if (view_put(m, &me))
            return -ENOMEM;
        send_declaration(m);
    }
    return 0;
}

TERN_API int ams_mod_state(const ams_mod *m)
{
    return m->state;
}

TERN_API int ams_mod_nbr(const ams_mod *m)
{
    return m->nbr;
}

TERN_API const mams_module *ams_mod_find(const ams_mod *m, uint16_t unit, uint8_t nbr)
{
    for (size_t i = 0; i < m->n_units; i++)
        if (m->units[i]->unit == unit)
            return m->units[i]->mods[nbr] ? &m->units[i]->mods[nbr]->m : NULL;
    return NULL;
}

TERN_API const mams_module *ams_mod_find_gone(const ams_mod *m, uint16_t unit,
                                              uint8_t nbr)
{
    for (unsigned i = 1; i <= GONE_KEPT; i++) {
        const struct vmod *v = m->gone[(m->gone_at - i) % GONE_KEPT];
        if (v && v->m.unit == unit && v->m.module == nbr)
            return &v->m;
    }
    return NULL;
}

TERN_API const mams_module *ams_mod_next(const ams_mod *m, size_t *cursor)
{
    for (size_t k = *cursor; k < m->n_units * 256; k++) {
        const struct vmod *v = m->units[k / 256]->mods[k % 256];
        if (v) {
            *cursor = k + 1;
            return &v->m;
        }
    }
    *cursor = m->n_units * 256;
    return NULL;
}

TERN_API uint64_t ams_mod_view_version(const ams_mod *m)
{
    return m->view_version;
}

TERN_API void ams_mod_stats_get(const ams_mod *m, ams_mod_stats *st)
{
    *st = m->st;
    st->known = 0;
    for (size_t i = 0; i < m->n_units; i++)
        for (int j = 0; j < 256; j++)
            st->known += m->units[i]->mods[j] != NULL;
}
