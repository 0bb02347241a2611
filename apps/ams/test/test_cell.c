/* The configuration server and registrar machines (ams_cell.h) on a virtual
 * clock: registration, census, heartbeats and death, declarations relayed,
 * a restarted registrar rebuilt from reconnects, two cells joined through
 * the configuration server, hostile PDUs counted. */
#include <stdlib.h>
#include <string.h>

#include "ams_cell.h"
#include "tern_test.h"

/* Every PDU sent, with where it went. */
struct sent {
    mams_ep to;
    uint8_t buf[MAMS_MAX_PDU];
    size_t len;
};

struct net {
    struct sent *q;
    size_t n, cap;
};

static void net_send(void *ctx, const mams_ep *to, const uint8_t *pdu, size_t len)
{
    struct net *nt = ctx;
    if (nt->n == nt->cap) {
        nt->cap = nt->cap ? 2 * nt->cap : 64;
        nt->q = realloc(nt->q, nt->cap * sizeof *nt->q);
    }
    struct sent *s = &nt->q[nt->n++];
    s->to = *to;
    memcpy(s->buf, pdu, len);
    s->len = len;
}

static void net_clear(struct net *nt)
{
    nt->n = 0;
}

static mams_ep ep(uint16_t port)
{
    return (mams_ep){0x7f000001, port};
}

/* The last PDU of type sent to port (decoded into p), or NULL. */
static const struct sent *find(struct net *nt, uint16_t port, int type, mams_pdu *p)
{
    for (size_t i = nt->n; i-- > 0;) {
        mams_pdu d;
        if (nt->q[i].to.port != port || mams_decode(nt->q[i].buf, nt->q[i].len, &d, NULL))
            continue;
        if (d.type == type) {
            if (p)
                *p = d;
            return &nt->q[i];
        }
    }
    return NULL;
}

/* Records of module nbr of unit sent to port in MODULE_STATUS PDUs: how many,
 * and the last one. */
static int records_for(struct net *nt, uint16_t port, uint16_t unit, uint8_t nbr,
                       mams_module *last)
{
    int k = 0;
    for (size_t i = 0; i < nt->n; i++) {
        mams_pdu d;
        if (nt->q[i].to.port != port ||
            mams_decode(nt->q[i].buf, nt->q[i].len, &d, NULL) ||
            d.type != MAMS_MODULE_STATUS)
            continue;
        mams_cur c;
        mams_cur_reader(&c, d.body, d.body_len);
        unsigned n = mams_get16(&c);
        for (unsigned j = 0; j < n; j++) {
            mams_module m;
            mams_get_module(&c, &m);
            if (!c.err && m.unit == unit && m.module == nbr) {
                k++;
                if (last)
                    *last = m;
            }
        }
    }
    return k;
}

#define VENTURE 19
static const ams_timing TIMING = {.heartbeat_ms = 100, .dead_ms = 400, .census_ms = 300};

/* A module's PDU to a registrar. */
static size_t module_pdu(uint8_t *out, int type, uint16_t unit, uint8_t role, uint8_t nbr,
                         uint32_t inc, const uint8_t *body, size_t blen)
{
    mams_pdu p = {.type = type,
                  .venture = VENTURE,
                  .unit = unit,
                  .role = role,
                  .module = nbr,
                  .incarnation = inc,
                  .memo = 77,
                  .body = body,
                  .body_len = blen};
    size_t n = 0;
    CHECK_OK(mams_encode(&p, out, MAMS_MAX_PDU, &n));
    return n;
}

static void do_register(ams_reg *r, uint64_t now, uint16_t unit, uint8_t role,
                        uint16_t port, uint32_t inc)
{
    uint8_t body[18], pdu[128];
    mams_cur c;
    mams_cur_writer(&c, body, sizeof body);
    mams_ep e = ep(port), u = ep((uint16_t)(port + 1)), t = ep((uint16_t)(port + 2));
    mams_put_ep(&c, &e);
    mams_put_ep(&c, &u);
    mams_put_ep(&c, &t);
    size_t n =
        module_pdu(pdu, MAMS_MODULE_REGISTRATION, unit, role, 0, inc, body, sizeof body);
    ams_reg_input(r, now, &e, pdu, n);
}

/* The module number a YOU_ARE_IN to port gave, or -1 (a rejection: -reason - 100). */
static int admitted(struct net *nt, uint16_t port)
{
    mams_pdu p;
    if (find(nt, port, MAMS_YOU_ARE_IN, &p))
        return p.body[0];
    if (find(nt, port, MAMS_REJECTION, &p))
        return -100 - p.body[0];
    return -1;
}

static void heartbeat(ams_reg *r, uint64_t now, uint16_t unit, uint8_t nbr, uint16_t port,
                      uint32_t inc, uint32_t version)
{
    uint8_t body[4] = {(uint8_t)(version >> 24), (uint8_t)(version >> 16),
                       (uint8_t)(version >> 8), (uint8_t)version};
    uint8_t pdu[64];
    size_t n = module_pdu(pdu, MAMS_HEARTBEAT, unit, 2, nbr, inc, body, sizeof body);
    mams_ep e = ep(port);
    ams_reg_input(r, now, &e, pdu, n);
}

/* A declaration of one subscription to subject. */
static void declare(ams_reg *r, uint64_t now, uint16_t unit, uint8_t nbr, uint16_t port,
                    uint32_t inc, uint32_t version, int16_t subject)
{
    uint8_t body[8 + MAMS_RULE_LEN], pdu[128];
    mams_cur c;
    mams_cur_writer(&c, body, sizeof body);
    mams_put32(&c, version);
    mams_put16(&c, 1);
    mams_put16(&c, 0);
    mams_rule ru = {.subject = subject, .priority = 8};
    mams_put_rule(&c, &ru);
    size_t n = module_pdu(pdu, MAMS_DECLARATION, unit, 2, nbr, inc, body, sizeof body);
    mams_ep e = ep(port);
    ams_reg_input(r, now, &e, pdu, n);
}

static ams_reg *new_reg(struct net *nt, uint16_t unit, uint16_t port, uint32_t inc,
                        uint64_t now)
{
    static mams_ep cs;
    cs = ep(2357);
    ams_reg_cfg cfg = {.venture = VENTURE,
                       .unit = unit,
                       .self = ep(port),
                       .cs = &cs,
                       .n_cs = 1,
                       .timing = TIMING,
                       .incarnation = inc};
    ams_reg *r = NULL;
    CHECK_OK(ams_reg_new(&cfg, net_send, nt, now, &r));
    return r;
}

TEST(registrar_admits_after_its_census_and_relays_records)
{
    struct net nt = {0};
    ams_reg *r = new_reg(&nt, 0, 5000, 1, 0);
    ams_reg_tick(r, 0);
    CHECK(find(&nt, 2357, MAMS_ANNOUNCE_REGISTRAR, NULL));
    /* during the census a new module must wait */
    do_register(r, 10, 0, 2, 6000, 11);
    CHECK_EQ_INT(admitted(&nt, 6000), -100 - MAMS_REJ_CENSUS);
    net_clear(&nt);
    ams_reg_tick(r, 300);
    do_register(r, 310, 0, 2, 6000, 11);
    CHECK_EQ_INT(admitted(&nt, 6000), 1);
    /* sent again (the answer was lost): the same number */
    net_clear(&nt);
    do_register(r, 320, 0, 2, 6000, 11);
    CHECK_EQ_INT(admitted(&nt, 6000), 1);
    do_register(r, 330, 0, 3, 6100, 12);
    CHECK_EQ_INT(admitted(&nt, 6100), 2);
    /* each hears of the other */
    CHECK_EQ_INT(records_for(&nt, 6100, 0, 1, NULL), 1);
    CHECK(records_for(&nt, 6000, 0, 2, NULL) >= 1);
    /* a declaration reaches the other module */
    net_clear(&nt);
    declare(r, 340, 0, 1, 6000, 11, 1, 3);
    mams_module m;
    CHECK_EQ_INT(records_for(&nt, 6100, 0, 1, &m), 1);
    CHECK_EQ_U64(m.version, 1);
    CHECK_EQ_U64(m.n_subs, 1);
    mams_rule ru;
    mams_module_rule(&m, 0, &ru);
    CHECK_EQ_INT(ru.subject, 3);
    /* an old declaration changes nothing */
    net_clear(&nt);
    declare(r, 345, 0, 1, 6000, 11, 1, 4);
    CHECK_EQ_INT(records_for(&nt, 6100, 0, 1, NULL), 0);
    ams_reg_stats st;
    ams_reg_stats_get(r, &st);
    CHECK_EQ_U64(st.modules, 2);
    CHECK_EQ_U64(st.registered, 2);
    ams_reg_free(r);
    free(nt.q);
}

TEST(registrar_declares_a_silent_module_dead_within_the_bound)
{
    struct net nt = {0};
    ams_reg *r = new_reg(&nt, 0, 5000, 1, 0);
    ams_reg_tick(r, 300);
    do_register(r, 300, 0, 2, 6000, 11);
    do_register(r, 300, 0, 2, 6100, 12);
    CHECK_EQ_INT(admitted(&nt, 6100), 2);
    /* module 2 keeps beating, module 1 falls silent */
    uint64_t t = 300, dead_at = 0;
    for (; t <= 1000 && !dead_at; t += 50) {
        heartbeat(r, t, 0, 2, 6100, 12, 0);
        net_clear(&nt);
        ams_reg_tick(r, t);
        mams_module m;
        if (records_for(&nt, 6100, 0, 1, &m) && m.gone)
            dead_at = t;
    }
    CHECK_MSG(dead_at, "module 1 never declared dead");
    CHECK_MSG(dead_at - 300 <= TIMING.dead_ms + TIMING.heartbeat_ms,
              "declared dead after %llu ms", (unsigned long long)(dead_at - 300));
    CHECK_MSG(dead_at - 300 > TIMING.dead_ms, "declared dead too early");
    /* its heartbeat now gets "you are dead" */
    net_clear(&nt);
    heartbeat(r, t, 0, 1, 6000, 11, 0);
    CHECK(find(&nt, 6000, MAMS_YOU_ARE_DEAD, NULL));
    ams_reg_stats st;
    ams_reg_stats_get(r, &st);
    CHECK_EQ_U64(st.died, 1);
    CHECK_EQ_U64(st.modules, 1);
    ams_reg_free(r);
    free(nt.q);
}

/* A module record of (unit, nbr) with one subscription, as a reconnect. */
static void reconnect(ams_reg *r, uint64_t now, uint16_t unit, uint8_t nbr, uint16_t port,
                      uint32_t inc, uint32_t version, int16_t subject)
{
    uint8_t body[256], pdu[512];
    mams_cur c;
    mams_cur_writer(&c, body, sizeof body);
    mams_rule ru = {.subject = subject, .priority = 8};
    mams_module m = {.unit = unit,
                     .module = nbr,
                     .role = 2,
                     .incarnation = inc,
                     .version = version,
                     .mams = ep(port),
                     .udp = ep((uint16_t)(port + 1)),
                     .tcp = ep((uint16_t)(port + 2)),
                     .n_subs = 1};
    mams_put_module(&c, &m, &ru, NULL);
    CHECK_OK(c.err);
    size_t n =
        module_pdu(pdu, MAMS_RECONNECT, unit, 2, nbr, inc, body, (size_t)(c.w - body));
    mams_ep e = ep(port);
    ams_reg_input(r, now, &e, pdu, n);
}

TEST(restarted_registrar_rebuilds_its_cell_from_reconnects)
{
    struct net nt = {0};
    /* the second run of a registrar: it knows nothing */
    ams_reg *r = new_reg(&nt, 0, 5000, 2, 1000);
    /* module 4 of the first run beats: told to reconnect (a heartbeat with
     * the new incarnation, in census) */
    heartbeat(r, 1010, 0, 4, 6000, 11, 3);
    mams_pdu p;
    CHECK(find(&nt, 6000, MAMS_HEARTBEAT, &p));
    CHECK_EQ_U64(p.incarnation, 2);
    CHECK(p.flags & MAMS_F_CENSUS);
    reconnect(r, 1020, 0, 4, 6000, 11, 3, 7);
    CHECK_EQ_INT(admitted(&nt, 6000), 4);
    /* a module never seen registers during the census: refused, and after it
     * gets a number the reconnected one does not have */
    net_clear(&nt);
    do_register(r, 1100, 0, 2, 6100, 12);
    CHECK_EQ_INT(admitted(&nt, 6100), -100 - MAMS_REJ_CENSUS);
    ams_reg_tick(r, 1300);
    net_clear(&nt);
    do_register(r, 1310, 0, 2, 6100, 12);
    int nbr = admitted(&nt, 6100);
    CHECK(nbr > 0 && nbr != 4);
    /* the newcomer learns the reconnected module's subscription */
    mams_module m;
    CHECK_EQ_INT(records_for(&nt, 6100, 0, 4, &m), 1);
    CHECK_EQ_U64(m.n_subs, 1);
    mams_rule ru;
    mams_module_rule(&m, 0, &ru);
    CHECK_EQ_INT(ru.subject, 7);
    /* a reconnect claiming a number held by another module is refused */
    net_clear(&nt);
    reconnect(r, 1320, 0, 4, 6200, 13, 1, 1);
    CHECK_EQ_INT(admitted(&nt, 6200), -100 - MAMS_REJ_NBR_TAKEN);
    ams_reg_free(r);
    free(nt.q);
}

TEST(two_cells_learn_each_other_through_the_configuration_server)
{
    struct net nt = {0}, cn = {0};
    ams_cs *cs;
    CHECK_OK(ams_cs_new(net_send, &cn, 0, &cs));
    ams_reg *a = new_reg(&nt, 1, 5001, 1, 0), *b = new_reg(&nt, 2, 5002, 1, 0);
    for (uint64_t t = 0; t <= 400; t += 100) {
        ams_reg_tick(a, t);
        ams_reg_tick(b, t);
        /* the registrars' announcements to the CS, its answers back */
        for (size_t i = 0; i < nt.n; i++)
            if (nt.q[i].to.port == 2357) {
                mams_pdu p;
                CHECK_OK(mams_decode(nt.q[i].buf, nt.q[i].len, &p, NULL));
                mams_ep from = ep(p.unit == 1 ? 5001 : 5002);
                ams_cs_input(cs, t, &from, nt.q[i].buf, nt.q[i].len);
            }
        for (size_t i = 0; i < cn.n; i++)
            ams_reg_input(cn.q[i].to.port == 5001 ? a : b, t, &cn.q[i].to, cn.q[i].buf,
                          cn.q[i].len);
        net_clear(&cn);
        net_clear(&nt);
    }
    ams_cs_stats cst;
    ams_cs_stats_get(cs, &cst);
    CHECK_EQ_U64(cst.registrars, 2);
    /* a module joins cell 1 and subscribes */
    do_register(a, 410, 1, 2, 6000, 11);
    CHECK_EQ_INT(admitted(&nt, 6000), 1);
    declare(a, 420, 1, 1, 6000, 11, 1, 5);
    /* a module of cell 2 */
    do_register(b, 430, 2, 3, 7000, 21);
    CHECK_EQ_INT(admitted(&nt, 7000), 1);
    /* let the registrars exchange heartbeats, queries and records */
    for (uint64_t t = 500; t <= 1000; t += 100) {
        heartbeat(a, t, 1, 1, 6000, 11, 1);
        heartbeat(b, t, 2, 1, 7000, 21, 0);
        ams_reg_tick(a, t);
        ams_reg_tick(b, t);
        for (int round = 0; round < 4; round++) {
            struct net cur = nt;
            nt.q = NULL;
            nt.n = nt.cap = 0;
            for (size_t i = 0; i < cur.n; i++) {
                uint16_t port = cur.q[i].to.port;
                mams_ep from = ep(port == 5001 ? 5002 : 5001);
                if (port == 5001)
                    ams_reg_input(a, t, &from, cur.q[i].buf, cur.q[i].len);
                else if (port == 5002)
                    ams_reg_input(b, t, &from, cur.q[i].buf, cur.q[i].len);
                else
                    net_send(&nt, &cur.q[i].to, cur.q[i].buf, cur.q[i].len); /* keep */
            }
            free(cur.q);
        }
    }
    /* the cell-2 module heard of the cell-1 module's subscription */
    mams_module m;
    CHECK_MSG(records_for(&nt, 7000, 1, 1, &m) >= 1,
              "no record of unit 1 module 1 at 7000");
    CHECK_EQ_U64(m.n_subs, 1);
    ams_reg_stats st;
    ams_reg_stats_get(b, &st);
    CHECK_EQ_U64(st.remote_modules, 1);
    CHECK_EQ_U64(st.peers, 1);
    /* the cell-1 module stops: cell 2 hears it is gone */
    net_clear(&nt);
    uint8_t pdu[64];
    size_t n = module_pdu(pdu, MAMS_I_AM_STOPPING, 1, 2, 1, 11, NULL, 0);
    mams_ep e = ep(6000);
    ams_reg_input(a, 1100, &e, pdu, n);
    mams_ep fa = ep(5001);
    for (size_t i = 0, k = nt.n; i < k; i++)
        if (nt.q[i].to.port == 5002)
            ams_reg_input(b, 1100, &fa, nt.q[i].buf, nt.q[i].len);
    CHECK(records_for(&nt, 7000, 1, 1, &m) >= 1);
    CHECK_EQ_INT(m.gone, 1);
    ams_reg_stats_get(b, &st);
    CHECK_EQ_U64(st.remote_modules, 0);
    ams_reg_free(a);
    ams_reg_free(b);
    ams_cs_free(cs);
    free(nt.q);
    free(cn.q);
}

TEST(configuration_server_answers_queries_and_forgets_the_silent)
{
    struct net cn = {0};
    ams_cs *cs;
    CHECK_OK(ams_cs_new(net_send, &cn, 0, &cs));
    uint8_t pdu[128], body[16];
    mams_cur c;
    mams_cur_writer(&c, body, sizeof body);
    mams_put32(&c, 100);
    mams_ep self = ep(5000);
    mams_put_ep(&c, &self);
    mams_pdu p = {.type = MAMS_ANNOUNCE_REGISTRAR,
                  .venture = VENTURE,
                  .unit = 3,
                  .incarnation = 9,
                  .body = body,
                  .body_len = 10};
    size_t n;
    CHECK_OK(mams_encode(&p, pdu, sizeof pdu, &n));
    ams_cs_input(cs, 0, &self, pdu, n);
    /* a module asks for unit 3's registrar */
    uint8_t q[2] = {0, 3}, qp[64];
    mams_pdu qq = {.type = MAMS_REGISTRAR_QUERY,
                   .venture = VENTURE,
                   .memo = 5,
                   .body = q,
                   .body_len = 2};
    CHECK_OK(mams_encode(&qq, qp, sizeof qp, &n));
    mams_ep m = ep(6000);
    net_clear(&cn);
    ams_cs_input(cs, 10, &m, qp, n);
    mams_pdu a;
    CHECK(find(&cn, 6000, MAMS_CELL_SPEC, &a));
    CHECK_EQ_U64(a.memo, 5);
    mams_cur r;
    mams_cur_reader(&r, a.body, a.body_len);
    CHECK_EQ_U64(mams_get16(&r), 1);
    CHECK_EQ_U64(mams_get16(&r), 3);
    mams_ep got;
    mams_get_ep(&r, &got);
    CHECK_EQ_U64(got.port, 5000);
    /* silent for 3 heartbeats: forgotten, and the query says unknown */
    ams_cs_tick(cs, 1000);
    net_clear(&cn);
    ams_cs_input(cs, 1000, &m, qp, n);
    CHECK(find(&cn, 6000, MAMS_REGISTRAR_UNKNOWN, NULL));
    ams_cs_free(cs);
    free(cn.q);
}

TEST(hostile_pdus_are_counted_and_change_nothing)
{
    struct net nt = {0};
    ams_reg *r = new_reg(&nt, 0, 5000, 1, 0);
    ams_reg_tick(r, 300);
    do_register(r, 300, 0, 2, 6000, 11);
    CHECK_EQ_INT(admitted(&nt, 6000), 1);
    mams_ep e = ep(6000);
    uint8_t junk[64] = {MAMS_MAGIC, MAMS_VERSION, MAMS_DECLARATION};
    ams_reg_input(r, 310, &e, junk, sizeof junk); /* bad CRC */
    ams_reg_input(r, 310, &e, junk, 3);           /* short */
    /* a declaration whose rule count runs past its body */
    uint8_t body[8] = {0, 0, 0, 9, 0xff, 0xff, 0, 0}, pdu[64];
    size_t n = module_pdu(pdu, MAMS_DECLARATION, 0, 2, 1, 11, body, sizeof body);
    ams_reg_input(r, 310, &e, pdu, n);
    /* a reconnect with a priority of 200 */
    uint8_t big[256], bp[512];
    mams_cur c;
    mams_cur_writer(&c, big, sizeof big);
    mams_rule bad = {.subject = 1, .priority = 200};
    mams_module m = {.unit = 0,
                     .module = 9,
                     .role = 2,
                     .incarnation = 3,
                     .mams = ep(6500),
                     .n_subs = 1};
    mams_put_module(&c, &m, &bad, NULL);
    n = module_pdu(bp, MAMS_RECONNECT, 0, 2, 9, 3, big, (size_t)(c.w - big));
    mams_ep e2 = ep(6500);
    ams_reg_input(r, 310, &e2, bp, n);
    ams_reg_stats st;
    ams_reg_stats_get(r, &st);
    CHECK_EQ_U64(st.malformed, 4);
    CHECK_EQ_U64(st.modules, 1);
    ams_reg_free(r);
    free(nt.q);
}

TEST(aams_header_is_ions_layout)
{
    /* ION's header: version/type/priority, flow, checksum flag + continuum,
     * unit, module, reserved, context, subject, length; then the 16-bit sum */
    static const uint8_t content[] = "Hello";
    aams_msg m = {.type = 1,
                  .priority = 8,
                  .flow = 3,
                  .has_cksum = 1,
                  .continuum = 9999,
                  .unit = 1,
                  .module = 4,
                  .context = -2,
                  .subject = 3,
                  .content = content,
                  .len = 5};
    uint8_t d[32];
    CHECK_OK(aams_header_encode(&m, d));
    static const uint8_t want[16] = {0x18, 3,    0x80 | 0x27, 0x0f, 0, 1, 4, 0,
                                     0xff, 0xff, 0xff,        0xfe, 0, 3, 0, 5};
    CHECK(memcmp(d, want, 16) == 0);
    memcpy(d + 16, content, 5);
    uint16_t s = aams_checksum(d, 21);
    d[21] = (uint8_t)(s >> 8);
    d[22] = (uint8_t)s;
    aams_msg g;
    const char *why = NULL;
    CHECK_OK(aams_decode(d, 23, &g, &why));
    CHECK_EQ_INT(g.continuum, 9999);
    CHECK_EQ_INT(g.context, -2);
    CHECK_EQ_U64(g.len, 5);
    CHECK(memcmp(g.content, "Hello", 5) == 0);
    d[17] ^= 1;
    CHECK_RC(aams_decode(d, 23, &g, &why), TERN_EMALFORMED);
    CHECK(strstr(why, "checksum"));
    CHECK_RC(aams_decode(d, 10, &g, &why), TERN_ETRUNCATED);
}
