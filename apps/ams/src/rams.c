/* RAMS: the envelope codec and the gateway machine (ams_rams.h).
 *
 * Sets of neighbours are bit masks (at most 64 neighbouring continua per
 * gateway, checked at ams_rams_new); module sets are small arrays. The
 * procedures are ION's (librams), with three changes a user of ION would
 * want: a declaration is answered once (AMS_RAMS_F_REPLY), so two gateways
 * that start in either order both learn of each other; a neighbour that
 * declares itself again (it restarted) is told every petition again; and a
 * petition nobody holds any longer is forgotten rather than kept. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ams_mams.h"
#include "ams_rams.h"

#define MAX_NB 64

/* ------------------------------------------------------------ envelopes */

TERN_API void ams_rams_env_encode(const ams_rams_env *e, uint8_t o[AMS_RAMS_ENV_LEN])
{
    o[0] = (uint8_t)(e->cc & 0x0f);
    o[1] = (uint8_t)e->flags;
    o[2] = (uint8_t)((e->continuum >> 8) & 0x7f);
    o[3] = (uint8_t)e->continuum;
    o[4] = (uint8_t)(e->unit >> 8);
    o[5] = (uint8_t)e->unit;
    o[6] = (uint8_t)e->src;
    o[7] = (uint8_t)e->dst;
    uint16_t s = (uint16_t)(int16_t)e->subject;
    o[8] = (uint8_t)(s >> 8);
    o[9] = (uint8_t)s;
    o[10] = (uint8_t)(e->enc_len >> 8);
    o[11] = (uint8_t)e->enc_len;
}

TERN_API int ams_rams_env_decode(const uint8_t *b, size_t len, ams_rams_env *e,
                                 size_t *used, const char **why)
{
    const char *w = NULL;
    if (len < AMS_RAMS_ENV_LEN) {
        w = "shorter than a RAMS envelope (12 bytes)";
        goto bad;
    }
    if (b[0] & 0xf0) {
        w = "control code byte has high bits set";
        goto bad;
    }
    e->cc = b[0];
    e->flags = b[1];
    e->continuum = (b[2] & 0x7f) << 8 | b[3];
    e->unit = b[4] << 8 | b[5];
    e->src = b[6];
    e->dst = b[7];
    e->subject = (int16_t)(uint16_t)(b[8] << 8 | b[9]);
    e->enc_len = (size_t)(b[10] << 8 | b[11]);
    if (e->enc_len > len - AMS_RAMS_ENV_LEN) {
        w = "enclosure longer than the bytes after the envelope";
        goto bad;
    }
    e->enc = e->enc_len ? b + AMS_RAMS_ENV_LEN : NULL;
    if (used)
        *used = AMS_RAMS_ENV_LEN + e->enc_len;
    return 0;
bad:
    if (why)
        *why = w;
    return TERN_EMALFORMED;
}

TERN_API void ams_rams_batch_header(uint32_t inc, uint64_t seq,
                                    uint8_t o[AMS_RAMS_BATCH_HDR])
{
    o[0] = AMS_RAMS_BATCH_MAGIC;
    for (int i = 0; i < 4; i++)
        o[1 + i] = (uint8_t)(inc >> (24 - 8 * i));
    for (int i = 0; i < 8; i++)
        o[5 + i] = (uint8_t)(seq >> (56 - 8 * i));
}

TERN_API int ams_rams_batch_parse(const uint8_t *b, size_t len, uint32_t *inc,
                                  uint64_t *seq)
{
    if (len < AMS_RAMS_BATCH_HDR || b[0] != AMS_RAMS_BATCH_MAGIC)
        return 0;
    uint32_t i = 0;
    uint64_t s = 0;
    for (int k = 0; k < 4; k++)
        i = i << 8 | b[1 + k];
    for (int k = 0; k < 8; k++)
        s = s << 8 | b[5 + k];
    *inc = i;
    *seq = s;
    return 1;
}

/* ------------------------------------------------------------ the machine */

struct nb {
    int cont;
    char eid[AMS_MIB_MAX_TEXT + 1];
    int declared, tern, playback;
};

struct modref {
    int unit, module;
};

struct mset {
    struct modref *m;
    size_t n, cap;
};

struct pet {
    int cont, unit, role, subject;
    uint64_t dgs, sgs;
    struct mset dms;
    int playback, subscribed;
};

struct inv {
    int cont, unit, role, subject;
    struct mset mods;
};

struct ams_rams {
    const ams_mib *mib;
    const ams_mib_venture *v;
    int cnbr, unit, module, tree;
    ams_rams_io io;
    struct nb nb[MAX_NB];
    int nnb;
    struct pet *pets;
    size_t npets, cappets;
    struct inv *invs;
    size_t ninvs, capinvs;
    ams_rams_stats st;
    uint8_t buf[AMS_RAMS_ENV_LEN + 65536];
};

/* Room for n + 1 elements of size elem in the array *pp of *cap. */
static int grow(void *pp, size_t *cap, size_t n, size_t elem, size_t first)
{
    void **p = pp;
    if (n < *cap)
        return 0;
    size_t nc = *cap ? 2 * *cap : first;
    void *g = realloc(*p, nc * elem);
    if (!g)
        return -ENOMEM;
    *p = g;
    *cap = nc;
    return 0;
}

static int bitcount(uint64_t x)
{
    return __builtin_popcountll(x);
}

static int mset_has(const struct mset *s, int unit, int module)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->m[i].unit == unit && s->m[i].module == module)
            return 1;
    return 0;
}

static int mset_add(struct mset *s, int unit, int module)
{
    if (mset_has(s, unit, module))
        return 0;
    if (grow(&s->m, &s->cap, s->n, sizeof *s->m, 4))
        return -ENOMEM;
    s->m[s->n++] = (struct modref){unit, module};
    return 0;
}

static int mset_del(struct mset *s, int unit, int module)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->m[i].unit == unit && s->m[i].module == module) {
            s->m[i] = s->m[--s->n];
            return 1;
        }
    return 0;
}

static int nb_by_eid(const ams_rams *r, const char *eid)
{
    for (int i = 0; i < r->nnb; i++)
        if (!strcmp(r->nb[i].eid, eid))
            return i;
    return -1;
}

static struct pet *pet_find(ams_rams *r, int cont, int unit, int role, int subject)
{
    for (size_t i = 0; i < r->npets; i++) {
        struct pet *p = &r->pets[i];
        if (p->cont == cont && p->unit == unit && p->role == role &&
            p->subject == subject)
            return p;
    }
    return NULL;
}

static struct pet *pet_new(ams_rams *r, int cont, int unit, int role, int subject)
{
    if (grow(&r->pets, &r->cappets, r->npets, sizeof *r->pets, 16))
        return NULL;
    struct pet *p = &r->pets[r->npets++];
    *p = (struct pet){.cont = cont, .unit = unit, .role = role, .subject = subject};
    r->st.petitions = r->npets;
    return p;
}

/* Forgets p once nobody holds it (p is invalid afterwards). */
static void pet_gc(ams_rams *r, struct pet *p)
{
    if (p->dgs || p->sgs || p->dms.n || p->subscribed)
        return;
    free(p->dms.m);
    *p = r->pets[--r->npets];
    r->st.petitions = r->npets;
}

/* Sends a PDU to neighbour i: the envelope e and its enclosure. */
static int tx(ams_rams *r, int i, unsigned flow, const ams_rams_env *e,
              const uint8_t *enc)
{
    size_t n = AMS_RAMS_ENV_LEN + e->enc_len;
    ams_rams_env_encode(e, r->buf);
    if (e->enc_len && enc)
        memcpy(r->buf + AMS_RAMS_ENV_LEN, enc, e->enc_len);
    int rc = r->io.send(r->io.ctx, r->nb[i].cont, r->nb[i].eid, flow, r->buf, n);
    if (rc) {
        r->st.send_errors++;
        return rc;
    }
    r->st.pdus_out++;
    r->st.by_cc_out[e->cc % 7]++;
    return 0;
}

/* Sends pdu (a whole PDU, as received) to neighbour i. */
static int tx_raw(ams_rams *r, int i, unsigned flow, const uint8_t *pdu, size_t len)
{
    int rc = r->io.send(r->io.ctx, r->nb[i].cont, r->nb[i].eid, flow, pdu, len);
    if (rc) {
        r->st.send_errors++;
        return rc;
    }
    r->st.pdus_out++;
    r->st.by_cc_out[pdu[0] % 7]++;
    return 0;
}

static int tx_petition(ams_rams *r, int i, int cc, const struct pet *p, int flags)
{
    ams_rams_env e = {.cc = cc,
                      .flags = flags,
                      .continuum = p->cont,
                      .unit = p->unit,
                      .src = p->role,
                      .subject = p->subject};
    return tx(r, i, 1, &e, NULL);
}

/* The neighbour that leads to continuum cont (its declaration came from
 * there), or -1. */
static int conduit(const ams_rams *r, int cont)
{
    for (size_t k = 0; k < r->npets; k++) {
        const struct pet *p = &r->pets[k];
        if (p->subject == -cont && p->dgs)
            return __builtin_ctzll(p->dgs);
    }
    return -1;
}

static uint64_t declared_mask(const ams_rams *r)
{
    uint64_t m = 0;
    for (int i = 0; i < r->nnb; i++)
        if (r->nb[i].declared)
            m |= 1ull << i;
    return m;
}

static int assertable(const ams_rams *r, const struct pet *p)
{
    return p->dms.n > 0 || (r->tree && p->dgs);
}

static uint64_t assertion_set(const ams_rams *r, const struct pet *p)
{
    uint64_t set;
    if (p->cont == 0) {
        set = declared_mask(r);
    } else {
        int c = conduit(r, p->cont);
        set = c >= 0 ? 1ull << c : 0;
    }
    set &= ~p->sgs;
    if (!p->dms.n && bitcount(p->dgs) == 1)
        set &= ~p->dgs;
    return set;
}

static int assert_pet(ams_rams *r, struct pet *p)
{
    if (!assertable(r, p))
        return 0;
    uint64_t set = assertion_set(r, p);
    for (int i = 0; i < r->nnb; i++)
        if (set >> i & 1)
            tx_petition(r, i, AMS_RAMS_ASSERT, p, 0);
    p->sgs |= set;
    return 0;
}

static int cancel_pet(ams_rams *r, struct pet *p)
{
    if (!p->dgs) { /* nobody wants these messages any more */
        for (int i = 0; i < r->nnb; i++)
            if (p->sgs >> i & 1)
                tx_petition(r, i, AMS_RAMS_CANCEL, p, 0);
        p->sgs = 0;
        return 0;
    }
    /* one neighbour still wants them and is itself a source: stop it
     * sending what would only go back to it */
    if (bitcount(p->dgs) == 1 && (p->dgs & p->sgs)) {
        int i = __builtin_ctzll(p->dgs);
        tx_petition(r, i, AMS_RAMS_CANCEL, p, 0);
        p->sgs &= ~p->dgs;
    }
    return 0;
}

/* A local subscriber left a petition that one neighbour still holds, and
 * this gateway asserted it to that same neighbour: in a tree it stays
 * assertable, but what that neighbour sends for it would only go back to
 * it, so the assertion is cancelled there. */
static void retract_echo(ams_rams *r, struct pet *p)
{
    if (p->dms.n || bitcount(p->dgs) != 1 || !(p->dgs & p->sgs))
        return;
    tx_petition(r, __builtin_ctzll(p->dgs), AMS_RAMS_CANCEL, p, 0);
    p->sgs &= ~p->dgs;
}

static int local_domain(const ams_rams *r, int cont)
{
    return cont == 0 || cont == r->cnbr;
}

static void subscribe(ams_rams *r, struct pet *p, int add)
{
    if (!local_domain(r, p->cont) || p->subscribed == add)
        return;
    if (r->io.subscribe(r->io.ctx, add, p->role, p->cont, p->unit, p->subject) == 0)
        p->subscribed = add;
    else if (!add)
        p->subscribed = 0; /* the module forgot it anyway */
}

static void log_line(ams_rams *r, int i, int cc, int subject, int cont, int unit,
                     int role)
{
    if (!r->io.log)
        return;
    char line[AMS_MIB_MAX_TEXT + 64];
    snprintf(line, sizeof line, "1 %s %d %d %d %d %d\n", r->nb[i].eid, cc, subject, cont,
             unit, role);
    r->io.log(r->io.ctx, line);
}

static int handle_assert(ams_rams *r, int i, int subject, int cont, int unit, int role,
                         int playback)
{
    uint64_t bit = 1ull << i;
    struct pet *p = pet_find(r, cont, unit, role, subject);
    if (p && (p->dgs & bit) && p->playback) {
        p->playback = playback; /* the state played back is confirmed */
        return 0;
    }
    if (!p && !(p = pet_new(r, cont, unit, role, subject)))
        return -ENOMEM;
    int first = !p->dgs;
    p->dgs |= bit;
    if (first)
        subscribe(r, p, 1);
    p->playback = playback;
    if (playback)
        return 0;
    if (subject < 0) {
        /* a continuum's declaration: what this gateway asserts and i should
         * hear goes to i now */
        for (size_t k = 0; k < r->npets; k++) {
            struct pet *q = &r->pets[k];
            if (q == p || q->subject == -r->cnbr || !assertable(r, q))
                continue;
            if (assertion_set(r, q) & bit) {
                tx_petition(r, i, AMS_RAMS_ASSERT, q, 0);
                q->sgs |= bit;
            }
        }
    }
    return assert_pet(r, p);
}

static int handle_cancel(ams_rams *r, int i, int subject, int cont, int unit, int role,
                         int playback)
{
    uint64_t bit = 1ull << i;
    struct pet *p = pet_find(r, cont, unit, role, subject);
    if (!p || !(p->dgs & bit))
        return 0;
    p->dgs &= ~bit;
    if (!p->dgs)
        subscribe(r, p, 0);
    p->playback = playback;
    if (subject != -r->nb[i].cont) {
        if (!playback && !assertable(r, p))
            cancel_pet(r, p);
        pet_gc(r, p);
        return 0;
    }
    /* the neighbour leaves the RAMS network: it is in no set any more */
    r->nb[i].declared = 0;
    r->nb[i].tern = 0;
    for (size_t k = 0; k < r->npets;) {
        struct pet *q = &r->pets[k];
        q->sgs &= ~bit;
        if (q->dgs & bit) {
            q->dgs &= ~bit;
            if (!q->dgs)
                subscribe(r, q, 0);
        }
        if (!playback && !assertable(r, q))
            cancel_pet(r, q);
        size_t before = r->npets;
        pet_gc(r, q);
        if (r->npets == before)
            k++;
    }
    return 0;
}

/* Does an enclosure (AAMS message a, from a source of role src) satisfy
 * petition p? */
static int enc_satisfies(const ams_rams *r, const aams_msg *a, int src,
                         const struct pet *p)
{
    return a->subject == p->subject && (p->cont == 0 || p->cont == a->continuum) &&
           (p->unit == 0 || ams_mib_unit_within(r->v, a->unit, p->unit)) &&
           (p->role == 0 || p->role == src);
}

static int enc_invited(const ams_rams *r, const aams_msg *a, int src, const struct inv *v)
{
    return (v->subject == 0 || v->subject == a->subject) &&
           (v->cont == 0 || v->cont == a->continuum) &&
           (v->unit == 0 || ams_mib_unit_within(r->v, a->unit, v->unit)) &&
           (v->role == 0 || v->role == src);
}

/* An enclosure that decodes as an AAMS message on a subject of the venture
 * from another continuum. ION's libams sets the checksum flag on what it
 * encloses without adding a checksum: taken as it is. */
static int enc_decode(const ams_rams *r, const ams_rams_env *e, aams_msg *a,
                      const char **why)
{
    if (e->enc_len < AAMS_HDR_LEN) {
        *why = "enclosure shorter than an AAMS header";
        return -1;
    }
    const uint8_t *b = e->enc;
    size_t clen = (size_t)(b[14] << 8 | b[15]);
    if (clen + AAMS_HDR_LEN != e->enc_len &&
        clen + AAMS_HDR_LEN + AAMS_CKSUM_LEN != e->enc_len) {
        *why = "enclosure's content length disagrees with the envelope's";
        return -1;
    }
    memset(a, 0, sizeof *a);
    a->type = (b[0] >> 4) & 3;
    a->priority = b[0] & 15;
    a->flow = b[1];
    a->continuum = (b[2] & 0x7f) << 8 | b[3];
    a->unit = b[4] << 8 | b[5];
    a->module = b[6];
    a->subject = (int16_t)(uint16_t)(b[12] << 8 | b[13]);
    a->len = clen;
    a->content = clen ? b + AAMS_HDR_LEN : NULL;
    if (b[0] >> 6 || a->type > 2) {
        *why = "enclosure's AAMS version or type is not one there is";
        return -1;
    }
    if (a->subject <= 0 || !ams_mib_subject_get(r->v, a->subject)) {
        *why = "enclosure's subject is not one of the venture's";
        return -1;
    }
    if (a->continuum == 0 || !ams_mib_continuum_get(r->mib, a->continuum)) {
        *why = "enclosure's continuum is not in the MIB";
        return -1;
    }
    return 0;
}

static int deliver(ams_rams *r, int unit, int module, const ams_rams_env *e)
{
    if (r->io.deliver(r->io.ctx, unit, module, e->enc, e->enc_len)) {
        r->st.send_errors++;
        return -1;
    }
    r->st.delivered++;
    return 0;
}

static int handle_publish(ams_rams *r, int i, const ams_rams_env *e, const aams_msg *a,
                          const uint8_t *pdu, size_t len)
{
    uint64_t nodes = 0;
    struct mset mods = {0};
    for (size_t k = 0; k < r->npets; k++) {
        const struct pet *p = &r->pets[k];
        if (!enc_satisfies(r, a, e->src, p))
            continue;
        nodes |= p->dgs;
        for (size_t j = 0; j < p->dms.n; j++)
            mset_add(&mods, p->dms.m[j].unit, p->dms.m[j].module);
    }
    /* a relay passes it on in a tree only: in a mesh every gateway asked
     * every other one itself, and passing it on would duplicate it */
    nodes = r->tree ? nodes & ~(1ull << i) : 0;
    for (int k = 0; k < r->nnb; k++)
        if (nodes >> k & 1)
            tx_raw(r, k, 1, pdu, len);
    for (size_t j = 0; j < mods.n; j++)
        if (!(mods.m[j].unit == r->unit && mods.m[j].module == r->module))
            deliver(r, mods.m[j].unit, mods.m[j].module, e);
    free(mods.m);
    return 0;
}

static int handle_private(ams_rams *r, const ams_rams_env *e, const aams_msg *a,
                          const uint8_t *pdu, size_t len, const char **why)
{
    if (e->continuum != r->cnbr) {
        int c = conduit(r, e->continuum);
        if (c < 0) {
            *why = "private message for a continuum no neighbour leads to";
            return AMS_RAMS_DROP_NO_CONDUIT + 1;
        }
        tx_raw(r, c, 1, pdu, len);
        return 0;
    }
    for (size_t k = 0; k < r->ninvs; k++) {
        const struct inv *v = &r->invs[k];
        if (enc_invited(r, a, e->src, v) && mset_has(&v->mods, e->unit, e->dst)) {
            deliver(r, e->unit, e->dst, e);
            return 0;
        }
    }
    *why = "private message that its destination module has not invited";
    return AMS_RAMS_DROP_NOT_INVITED + 1;
}

static int in_announce_domain(ams_rams *r, const struct modref *m, int dunit, int drole)
{
    if (dunit != 0 && !ams_mib_unit_within(r->v, m->unit, dunit))
        return 0;
    return drole == 0 || r->io.role_of(r->io.ctx, m->unit, m->module) == drole;
}

static int handle_announce(ams_rams *r, int i, const ams_rams_env *e, const aams_msg *a,
                           const uint8_t *pdu, size_t len, const char **why)
{
    if (e->continuum == 0) {
        if (r->tree)
            for (int k = 0; k < r->nnb; k++)
                if (k != i && r->nb[k].declared)
                    tx_raw(r, k, 1, pdu, len);
    } else if (e->continuum != r->cnbr) {
        int c = conduit(r, e->continuum);
        if (c < 0) {
            *why = "announcement for a continuum no neighbour leads to";
            return AMS_RAMS_DROP_NO_CONDUIT + 1;
        }
        tx_raw(r, c, 1, pdu, len);
        return 0;
    }
    struct mset mods = {0};
    for (size_t k = 0; k < r->ninvs; k++) {
        const struct inv *v = &r->invs[k];
        if (!enc_invited(r, a, e->src, v))
            continue;
        for (size_t j = 0; j < v->mods.n; j++)
            if (in_announce_domain(r, &v->mods.m[j], e->unit, e->dst))
                mset_add(&mods, v->mods.m[j].unit, v->mods.m[j].module);
    }
    for (size_t j = 0; j < mods.n; j++)
        deliver(r, mods.m[j].unit, mods.m[j].module, e);
    free(mods.m);
    return 0;
}

/* A petition's domain: a continuum of the MIB (or 0), a unit of the
 * venture, a role (or 0), a subject or a message space's pseudo-subject. */
static int domain_ok(const ams_rams *r, int subject, int cont, int unit, int role)
{
    if (cont && !ams_mib_continuum_get(r->mib, cont))
        return 0;
    if (!ams_mib_unit_get(r->v, unit))
        return 0;
    if (role && !ams_mib_role_get(r->v, role))
        return 0;
    if (subject > 0)
        return ams_mib_subject_get(r->v, subject) != NULL;
    return subject < 0 && ams_mib_msgspace_get(r->v, -subject) != NULL;
}

static void send_declaration(ams_rams *r, int i, int flags)
{
    ams_rams_env e = {
        .cc = AMS_RAMS_ASSERT, .flags = flags | AMS_RAMS_F_TERN, .subject = -r->cnbr};
    tx(r, i, 1, &e, NULL);
    struct pet *own = pet_find(r, 0, 0, 0, -r->cnbr);
    if (own) /* told: its stop cancels it there */
        own->sgs |= 1ull << i;
}

TERN_API int ams_rams_input(ams_rams *r, const char *from, const uint8_t *pdu, size_t len,
                            const char **why)
{
    const char *w = NULL;
    int rc = 0;
    ams_rams_env e;
    size_t used;
    aams_msg a;
    r->st.pdus_in++;
    int i = nb_by_eid(r, from);
    if (i < 0) {
        w = "from a gateway EID that is no neighbour's in the MIB";
        rc = AMS_RAMS_DROP_STRANGER + 1;
        goto out;
    }
    if (ams_rams_env_decode(pdu, len, &e, &used, &w)) {
        rc = AMS_RAMS_DROP_MALFORMED + 1;
        goto out;
    }
    if (used != len) {
        w = "bytes after the RAMS PDU's enclosure";
        rc = AMS_RAMS_DROP_MALFORMED + 1;
        goto out;
    }
    if (e.cc < AMS_RAMS_ASSERT || e.cc > AMS_RAMS_ANNOUNCE) {
        w = "control code is not 2 to 6";
        rc = AMS_RAMS_DROP_BAD_CODE + 1;
        goto out;
    }
    r->st.by_cc_in[e.cc]++;
    switch (e.cc) {
    case AMS_RAMS_ASSERT:
    case AMS_RAMS_CANCEL:
        if (e.enc_len) {
            w = "petition with an enclosure";
            rc = AMS_RAMS_DROP_MALFORMED + 1;
            goto out;
        }
        if (!domain_ok(r, e.subject, e.continuum, e.unit, e.src)) {
            w = "petition for a continuum, unit, role or subject not in the MIB";
            rc = AMS_RAMS_DROP_BAD_DOMAIN + 1;
            goto out;
        }
        if (e.cc == AMS_RAMS_ASSERT && e.subject == -r->nb[i].cont) {
            /* declared before, and not in answer to this gateway's own
             * declaration: it restarted */
            int again =
                r->nb[i].declared && !r->nb[i].playback && !(e.flags & AMS_RAMS_F_REPLY);
            r->nb[i].declared = 1;
            r->nb[i].playback = 0;
            r->nb[i].tern = (e.flags & AMS_RAMS_F_TERN) != 0;
            if (again) /* it restarted: what it was told may be lost */
                for (size_t k = 0; k < r->npets; k++)
                    if (r->pets[k].subject != -r->cnbr)
                        r->pets[k].sgs &= ~(1ull << i);
            if (!(e.flags & AMS_RAMS_F_REPLY))
                send_declaration(r, i, AMS_RAMS_F_REPLY);
        } else if (e.cc == AMS_RAMS_ASSERT && !r->nb[i].declared) {
            w = "petition from a gateway that has not declared itself";
            rc = AMS_RAMS_DROP_UNDECLARED + 1;
            goto out;
        }
        rc = e.cc == AMS_RAMS_ASSERT
                 ? handle_assert(r, i, e.subject, e.continuum, e.unit, e.src, 0)
                 : handle_cancel(r, i, e.subject, e.continuum, e.unit, e.src, 0);
        if (rc < 0) {
            w = "out of memory";
            rc = AMS_RAMS_DROP_MALFORMED + 1;
            goto out;
        }
        log_line(r, i, e.cc, e.subject, e.continuum, e.unit, e.src);
        break;
    case AMS_RAMS_PUBLISH:
    case AMS_RAMS_SEND:
    case AMS_RAMS_ANNOUNCE:
        if (!r->nb[i].declared) {
            w = "message from a gateway that has not declared itself";
            rc = AMS_RAMS_DROP_UNDECLARED + 1;
            goto out;
        }
        if (enc_decode(r, &e, &a, &w)) {
            rc = AMS_RAMS_DROP_MALFORMED + 1;
            goto out;
        }
        if (e.cc == AMS_RAMS_PUBLISH) {
            if (a.subject != e.subject) {
                w = "publication whose envelope and enclosure name different subjects";
                rc = AMS_RAMS_DROP_MALFORMED + 1;
                goto out;
            }
            rc = handle_publish(r, i, &e, &a, pdu, len);
        } else if (e.continuum && !ams_mib_continuum_get(r->mib, e.continuum)) {
            w = "message for a continuum not in the MIB";
            rc = AMS_RAMS_DROP_BAD_DOMAIN + 1;
        } else if (e.cc == AMS_RAMS_SEND) {
            rc = handle_private(r, &e, &a, pdu, len, &w);
        } else {
            rc = handle_announce(r, i, &e, &a, pdu, len, &w);
        }
        break;
    }
out:
    if (rc > 0)
        r->st.dropped[rc - 1]++;
    if (why)
        *why = w;
    return rc;
}

/* ------------------------------------------------------------ local side */

TERN_API int ams_rams_notice(ams_rams *r, int sub, int add, int unit, int module,
                             int role, int cont, int dunit, int subject)
{
    if ((unit == r->unit && module == r->module) || subject < 0)
        return 0; /* its own, or the pseudo-subjects' */
    if (sub) {
        if (cont == r->cnbr || subject == 0)
            return 0; /* local (all subjects is local only): nothing for RAMS */
        struct pet *p = pet_find(r, cont, dunit, role, subject);
        if (add) {
            if (!p && !(p = pet_new(r, cont, dunit, role, subject)))
                return -ENOMEM;
            if (mset_add(&p->dms, unit, module))
                return -ENOMEM;
            p->playback = 0;
            return assert_pet(r, p);
        }
        if (!p || !mset_del(&p->dms, unit, module))
            return 0;
        if (!assertable(r, p))
            cancel_pet(r, p);
        else
            retract_echo(r, p);
        pet_gc(r, p);
        return 0;
    }
    struct inv *v = NULL;
    for (size_t k = 0; k < r->ninvs && !v; k++)
        if (r->invs[k].cont == cont && r->invs[k].unit == dunit &&
            r->invs[k].role == role && r->invs[k].subject == subject)
            v = &r->invs[k];
    if (add) {
        if (!v) {
            if (grow(&r->invs, &r->capinvs, r->ninvs, sizeof *r->invs, 16))
                return -ENOMEM;
            v = &r->invs[r->ninvs++];
            *v = (struct inv){
                .cont = cont, .unit = dunit, .role = role, .subject = subject};
        }
        int rc = mset_add(&v->mods, unit, module);
        r->st.invitations = r->ninvs;
        return rc;
    }
    if (v && mset_del(&v->mods, unit, module) && !v->mods.n) {
        free(v->mods.m);
        *v = r->invs[--r->ninvs];
    }
    r->st.invitations = r->ninvs;
    return 0;
}

TERN_API int ams_rams_module_left(ams_rams *r, int unit, int module)
{
    if (unit == r->unit && module == r->module)
        return 0; /* not its own declaration */
    for (size_t k = 0; k < r->npets;) {
        struct pet *p = &r->pets[k];
        size_t before = r->npets;
        if (mset_del(&p->dms, unit, module)) {
            if (!assertable(r, p))
                cancel_pet(r, p);
            else
                retract_echo(r, p);
            pet_gc(r, p);
        }
        if (r->npets == before)
            k++;
    }
    for (size_t k = 0; k < r->ninvs;) {
        struct inv *v = &r->invs[k];
        if (mset_del(&v->mods, unit, module) && !v->mods.n) {
            free(v->mods.m);
            *v = r->invs[--r->ninvs];
            continue;
        }
        k++;
    }
    r->st.invitations = r->ninvs;
    return 0;
}

TERN_API int ams_rams_message(ams_rams *r, int cont, int unit, int module, int subject,
                              int type, int priority, unsigned flow, int context,
                              const uint8_t *content, size_t len)
{
    if (subject < 0) { /* an envelope a local module made for another continuum */
        ams_rams_env e;
        size_t used;
        const char *w;
        if (ams_rams_env_decode(content, len, &e, &used, &w) || used != len ||
            (e.cc != AMS_RAMS_SEND && e.cc != AMS_RAMS_ANNOUNCE)) {
            r->st.dropped[AMS_RAMS_DROP_MALFORMED]++;
            return AMS_RAMS_DROP_MALFORMED + 1;
        }
        if (e.continuum == 0) {
            if (e.cc != AMS_RAMS_ANNOUNCE) {
                r->st.dropped[AMS_RAMS_DROP_MALFORMED]++;
                return AMS_RAMS_DROP_MALFORMED + 1;
            }
            for (int i = 0; i < r->nnb; i++)
                if (r->nb[i].declared)
                    tx_raw(r, i, flow, content, len);
            r->st.forwarded++;
            return 0;
        }
        int c = conduit(r, e.continuum);
        if (c < 0) {
            r->st.dropped[AMS_RAMS_DROP_NO_CONDUIT]++;
            return AMS_RAMS_DROP_NO_CONDUIT + 1;
        }
        tx_raw(r, c, flow, content, len);
        r->st.forwarded++;
        return 0;
    }
    if (len > 65535 - AAMS_HDR_LEN)
        return -EMSGSIZE;
    if (type < 0 || type > 2 || priority < 0 || priority > 15 || cont < 1 ||
        cont > AMS_MIB_MAX_CONTINUUM || unit < 0 || unit > 65535 || module < 0 ||
        module > 255)
        return -EINVAL;
    if ((flow & 3) == 3) /* ION: class of service from the AMS priority */
        flow = (unsigned)(15 - priority) / 5;
    int role = r->io.role_of(r->io.ctx, unit, module);
    uint64_t nodes = 0;
    for (size_t k = 0; k < r->npets; k++) {
        const struct pet *p = &r->pets[k];
        if (p->dgs && p->subject == subject && (p->cont == 0 || p->cont == cont) &&
            (p->unit == 0 || ams_mib_unit_within(r->v, unit, p->unit)) &&
            (p->role == 0 || p->role == role))
            nodes |= p->dgs;
    }
    if (!nodes)
        return 0;
    aams_msg a = {.type = type,
                  .priority = priority,
                  .flow = (int)flow,
                  .continuum = cont,
                  .unit = unit,
                  .module = module,
                  .context = context,
                  .subject = subject,
                  .len = len};
    /* built once in place: envelope, AAMS header, content */
    if (aams_header_encode(&a, r->buf + AMS_RAMS_ENV_LEN))
        return -EINVAL;
    if (len)
        memcpy(r->buf + AMS_RAMS_ENV_LEN + AAMS_HDR_LEN, content, len);
    ams_rams_env e = {.cc = AMS_RAMS_PUBLISH,
                      .src = role > 0 ? role : 0,
                      .subject = subject,
                      .enc_len = AAMS_HDR_LEN + len};
    ams_rams_env_encode(&e, r->buf);
    for (int i = 0; i < r->nnb; i++)
        if (nodes >> i & 1)
            tx_raw(r, i, flow, r->buf, AMS_RAMS_ENV_LEN + e.enc_len);
    r->st.forwarded++;
    return 0;
}

/* ------------------------------------------------------------ life */

TERN_API int ams_rams_new(const ams_mib *mib, const ams_mib_venture *v, int unit,
                          int module, const ams_rams_io *io, ams_rams **out)
{
    *out = NULL;
    if (!mib || !v || !io || !io->send || !io->subscribe || !io->deliver || !io->role_of)
        return -EINVAL;
    ams_rams *r = calloc(1, sizeof *r);
    if (!r)
        return -ENOMEM;
    r->mib = mib;
    r->v = v;
    r->cnbr = ams_mib_continuum_nbr(mib);
    r->unit = unit;
    r->module = module;
    r->tree = v->net_is_tree;
    r->io = *io;
    for (int k = 0; k < v->n_msgspaces; k++) {
        const ams_mib_msgspace *s = &v->msgspaces[k];
        if (s->continuum == r->cnbr || !s->neighbor)
            continue;
        if (r->nnb == MAX_NB) {
            free(r);
            return TERN_EFULL;
        }
        struct nb *n = &r->nb[r->nnb++];
        n->cont = s->continuum;
        snprintf(n->eid, sizeof n->eid, "%s", s->gweid ? s->gweid : "");
    }
    /* its own declaration: held by itself, so always assertable */
    struct pet *p = pet_new(r, 0, 0, 0, -r->cnbr);
    if (!p || mset_add(&p->dms, unit, module)) {
        ams_rams_free(r);
        return -ENOMEM;
    }
    *out = r;
    return 0;
}

TERN_API void ams_rams_free(ams_rams *r)
{
    if (!r)
        return;
    for (size_t k = 0; k < r->npets; k++)
        free(r->pets[k].dms.m);
    for (size_t k = 0; k < r->ninvs; k++)
        free(r->invs[k].mods.m);
    free(r->pets);
    free(r->invs);
    free(r);
}

TERN_API int ams_rams_start(ams_rams *r)
{
    struct pet *p = pet_find(r, 0, 0, 0, -r->cnbr);
    for (int i = 0; i < r->nnb; i++) {
        send_declaration(r, i, 0);
        if (p)
            p->sgs |= 1ull << i;
    }
    /* what the played-back state asks of neighbours it knows declared */
    for (size_t k = 0; k < r->npets; k++)
        if (&r->pets[k] != p)
            assert_pet(r, &r->pets[k]);
    return 0;
}

TERN_API int ams_rams_stop(ams_rams *r)
{
    struct pet *p = pet_find(r, 0, 0, 0, -r->cnbr);
    if (!p)
        return 0;
    for (int i = 0; i < r->nnb; i++)
        if (r->nb[i].declared && (p->sgs >> i & 1))
            tx_petition(r, i, AMS_RAMS_CANCEL, p, 0);
    p->sgs = 0;
    return 0;
}

TERN_API int ams_rams_playback(ams_rams *r, const char *line, char *err, size_t cap)
{
    while (*line == ' ' || *line == '\t')
        line++;
    if (!*line || *line == '\n' || *line == '#')
        return 0;
    unsigned proto, cc;
    int sub, cont, unit, role;
    char eid[AMS_MIB_MAX_TEXT + 1];
    char extra[2];
    if (sscanf(line, "%u %255s %u %d %d %d %d %1s", &proto, eid, &cc, &sub, &cont, &unit,
               &role, extra) != 7) {
        snprintf(err, cap,
                 "expected 'protocol gateway-EID control-code subject continuum unit "
                 "role' (seven fields)");
        return TERN_ESYNTAX;
    }
    if (proto != 1) {
        snprintf(err, cap, "protocol %u: Tern's gateway speaks RAMS over BP (1) only",
                 proto);
        return TERN_ESYNTAX;
    }
    int i = nb_by_eid(r, eid);
    if (i < 0) {
        snprintf(err, cap,
                 "%s is the gateway EID of no neighbouring continuum in the MIB", eid);
        return TERN_ESYNTAX;
    }
    if ((cc != AMS_RAMS_ASSERT && cc != AMS_RAMS_CANCEL) ||
        !domain_ok(r, sub, cont, unit, role)) {
        snprintf(err, cap,
                 "control code %u or domain (subject %d, continuum %d, unit %d, role %d) "
                 "not one the MIB allows",
                 cc, sub, cont, unit, role);
        return TERN_ESYNTAX;
    }
    if (cc == AMS_RAMS_ASSERT) {
        if (sub == -r->nb[i].cont) {
            r->nb[i].declared = 1;
            r->nb[i].playback = 1;
        } else if (!r->nb[i].declared) {
            snprintf(err, cap, "%s has not declared itself before this petition", eid);
            return TERN_ESYNTAX;
        }
        return handle_assert(r, i, sub, cont, unit, role, 1);
    }
    return handle_cancel(r, i, sub, cont, unit, role, 1);
}

TERN_API size_t ams_rams_state(const ams_rams *r, char *out, size_t cap)
{
    size_t n = 0;
    if (out && cap)
        out[0] = '\0';
    for (int pass = 0; pass < 2; pass++)
        for (size_t k = 0; k < r->npets; k++) {
            const struct pet *p = &r->pets[k];
            for (int i = 0; i < r->nnb; i++) {
                if (!(p->dgs >> i & 1))
                    continue;
                int decl = p->subject == -r->nb[i].cont;
                if (decl != (pass == 0))
                    continue;
                int w = snprintf(out ? out + n : NULL, n < cap ? cap - n : 0,
                                 "1 %s 2 %d %d %d %d\n", r->nb[i].eid, p->subject,
                                 p->cont, p->unit, p->role);
                if (w > 0)
                    n += (size_t)w;
            }
        }
    return n;
}

TERN_API void ams_rams_get_stats(const ams_rams *r, ams_rams_stats *st)
{
    *st = r->st;
}

TERN_API int ams_rams_neighbor(const ams_rams *r, int i, int *continuum, const char **eid,
                               int *declared, int *tern, int *n)
{
    if (n)
        *n = r->nnb;
    if (i < 0 || i >= r->nnb)
        return TERN_ENOTFOUND;
    if (continuum)
        *continuum = r->nb[i].cont;
    if (eid)
        *eid = r->nb[i].eid;
    if (declared)
        *declared = r->nb[i].declared;
    if (tern)
        *tern = r->nb[i].tern;
    return 0;
}

/* ------------------------------------------------------------ ordering */

struct held {
    uint64_t seq, at_ms;
    uint8_t *buf;
    size_t len;
};

struct ams_rams_order {
    int started;
    uint32_t inc;
    uint64_t next; /* the sequence number taken next */
    uint64_t base; /* the first taken in this sequence */
    struct held *h;
    size_t n, cap, bytes, max_bytes;
    uint64_t kept, skipped, dups, late;
};

TERN_API int ams_rams_order_new(size_t max_bytes, ams_rams_order **out)
{
    *out = calloc(1, sizeof **out);
    if (!*out)
        return -ENOMEM;
    (*out)->max_bytes = max_bytes;
    return 0;
}

static void order_clear(ams_rams_order *o)
{
    for (size_t i = 0; i < o->n; i++)
        free(o->h[i].buf);
    o->n = 0;
    o->bytes = 0;
}

TERN_API void ams_rams_order_free(ams_rams_order *o)
{
    if (!o)
        return;
    order_clear(o);
    free(o->h);
    free(o);
}

TERN_API int ams_rams_order_offer(ams_rams_order *o, uint32_t inc, uint64_t seq,
                                  const uint8_t *buf, size_t len, uint64_t now_ms)
{
    if (!o->started || inc != o->inc) {
        /* a new sender incarnation: its sequence starts where it starts;
         * what was held of the old one is given up (counted) */
        o->skipped += o->n;
        order_clear(o);
        o->started = 1;
        o->inc = inc;
        o->next = o->base = seq;
    }
    if (seq < o->base) {
        /* sent before the first this receiver took (it started since):
         * taken out of order rather than lost */
        o->late++;
        return 1;
    }
    if (seq < o->next)
        goto dup;
    if (seq == o->next) {
        o->next++;
        return 1;
    }
    for (size_t i = 0; i < o->n; i++)
        if (o->h[i].seq == seq)
            goto dup;
    if (grow(&o->h, &o->cap, o->n, sizeof *o->h, 16))
        return -ENOMEM;
    uint8_t *copy = malloc(len ? len : 1);
    if (!copy)
        return -ENOMEM;
    memcpy(copy, buf, len);
    o->h[o->n++] = (struct held){seq, now_ms, copy, len};
    o->bytes += len;
    o->kept++;
    return 0;
dup:
    o->dups++;
    return -1;
}

TERN_API int ams_rams_order_next(ams_rams_order *o, uint64_t now_ms, uint64_t hold_ms,
                                 uint8_t **buf, size_t *len)
{
    if (!o->n)
        return 0;
    size_t lo = 0;
    for (size_t i = 1; i < o->n; i++)
        if (o->h[i].seq < o->h[lo].seq)
            lo = i;
    if (o->h[lo].seq != o->next) {
        /* a gap: waited for long enough, or holding too much? */
        uint64_t oldest = o->h[lo].at_ms;
        for (size_t i = 0; i < o->n; i++)
            if (o->h[i].at_ms < oldest)
                oldest = o->h[i].at_ms;
        if (now_ms - oldest < hold_ms && o->bytes <= o->max_bytes)
            return 0;
        o->skipped += o->h[lo].seq - o->next;
        o->next = o->h[lo].seq;
    }
    *buf = o->h[lo].buf;
    *len = o->h[lo].len;
    o->bytes -= o->h[lo].len;
    o->h[lo] = o->h[--o->n];
    o->next++;
    return 1;
}

TERN_API void ams_rams_order_counts(const ams_rams_order *o, uint64_t *kept,
                                    uint64_t *skipped, uint64_t *dups)
{
    *kept = o->kept;
    *skipped = o->skipped;
    *dups = o->dups;
}
