/* The RAMS gateway machine (ams_rams.h) in a virtual network of gateways in
 * one process: each continuum has its own MIB and machine, the send
 * callback queues PDUs by continuum and a pump hands them to the
 * destination's machine with the sender's gateway EID. Fake local modules
 * record what each gateway subscribes to and what it delivers. Covers
 * declarations (either order, one lost), publications over one hop and
 * through a relay of a tree, private messages and invitations, restart from
 * the petition state or log, malformed PDUs, playback syntax and the batch
 * order. */
#include <stdlib.h>
#include <string.h>

#include "ams_mams.h"
#include "ams_rams.h"
#include "tern_test.h"

#define VENTURE 9
#define GW_UNIT 0
#define GW_MOD  1
#define MAXGW   4

/* ------------------------------------------------------------ the world */

struct sub_rec {
    int add, role, cont, unit, subject;
};

struct dlv_rec {
    int unit, module;
    size_t len;
    uint8_t enc[256];
};

struct pdu {
    int from, to; /* continua */
    unsigned flow;
    size_t len;
    uint8_t *buf;
};

struct world;

struct gw {
    struct world *w;
    int cont, tree;
    ams_mib *mib;
    const ams_mib_venture *v;
    ams_rams *r;
    struct sub_rec subs[64];
    int nsubs;
    struct dlv_rec dlv[32];
    int ndlv;
    int roles[4][16]; /* role of local module (unit, module); 0: none */
    char log[8192];
    size_t loglen;
    int last_rc; /* ams_rams_input's last answer */
    int in;      /* PDUs pumped into it */
};

struct world {
    struct gw g[MAXGW];
    int n;
    struct pdu *q;
    size_t nq, capq;
    int drop_all;   /* the pump loses everything */
    int drop_to;    /* the pump loses what goes to this continuum (0: none) */
    uint64_t moved; /* PDUs delivered by the pump */
};

static int io_send(void *ctx, int cont, const char *eid, unsigned flow, const uint8_t *b,
                   size_t len)
{
    struct gw *g = ctx;
    struct world *w = g->w;
    char want[64];
    snprintf(want, sizeof want, "ipn:%d.%d", cont, VENTURE);
    CHECK_EQ_STR(eid, want);
    if (w->nq == w->capq) {
        w->capq = w->capq ? 2 * w->capq : 64;
        w->q = realloc(w->q, w->capq * sizeof *w->q);
        CHECK(w->q != NULL);
    }
    struct pdu *p = &w->q[w->nq++];
    p->from = g->cont;
    p->to = cont;
    p->flow = flow;
    p->len = len;
    p->buf = malloc(len ? len : 1);
    CHECK(p->buf != NULL);
    memcpy(p->buf, b, len);
    return 0;
}

static int io_subscribe(void *ctx, int add, int role, int cont, int unit, int subject)
{
    struct gw *g = ctx;
    CHECK(g->nsubs < 64);
    g->subs[g->nsubs++] = (struct sub_rec){add, role, cont, unit, subject};
    return 0;
}

static int io_deliver(void *ctx, int unit, int module, const uint8_t *enc, size_t len)
{
    struct gw *g = ctx;
    CHECK(g->ndlv < 32);
    struct dlv_rec *d = &g->dlv[g->ndlv++];
    d->unit = unit;
    d->module = module;
    d->len = len;
    memcpy(d->enc, enc, len < sizeof d->enc ? len : sizeof d->enc);
    return 0;
}

static int io_role_of(void *ctx, int unit, int module)
{
    struct gw *g = ctx;
    if (unit < 0 || unit >= 4 || module < 0 || module >= 16 || !g->roles[unit][module])
        return -1;
    return g->roles[unit][module];
}

static void io_log(void *ctx, const char *line)
{
    struct gw *g = ctx;
    size_t n = strlen(line);
    CHECK(g->loglen + n < sizeof g->log);
    memcpy(g->log + g->loglen, line, n + 1);
    g->loglen += n;
}

/* The MIB of continuum self's gateway: the other continua of others[] (n of
 * them), each a neighbour or not (nb[]). */
static ams_mib *make_mib(int self, int tree, const int *others, const int *nb, int n)
{
    char text[4096];
    size_t k = 0;
#define PUT(...) (k += (size_t)snprintf(text + k, sizeof text - k, __VA_ARGS__))
    PUT("+ams_mib_load\n*ams_mib_init continuum_nbr=%d ptsname=dgr\n+ams_mib_add\n",
        self);
    for (int i = 0; i < n; i++)
        PUT("*continuum nbr=%d name=ion%d desc='ION node %d'\n", others[i], others[i],
            others[i]);
    PUT("*csendpoint epspec=127.0.0.1:2502\n*application name='amsdemo'\n"
        "+venture nbr=%d appname=amsdemo authname=test net_config=%s\n",
        VENTURE, tree ? "tree" : "mesh");
    PUT("*role nbr=2 name=shell\n*role nbr=3 name=log\n*role nbr=4 name=pitch\n"
        "*role nbr=5 name=catch\n");
    PUT("*subject nbr=1 name=text desc='ASCII text'\n*subject nbr=2 name=noise\n"
        "*subject nbr=3 name=bench\n");
    PUT("*unit nbr=1 name=orbiters\n");
    for (int i = 0; i < n; i++)
        PUT("*msgspace nbr=%d neighbor=%d\n", others[i], nb[i]);
    PUT("-venture\n-ams_mib_add\n-ams_mib_load\n");
#undef PUT
    CHECK(k < sizeof text);
    ams_mib *m = NULL;
    char err[512];
    int rc = ams_mib_load_text(text, k, "t.amsrc", &m, err, sizeof err);
    CHECK_MSG(rc == 0, "mib of %d: %s", self, err);
    return m;
}

static const ams_rams_io IO = {.send = io_send,
                               .subscribe = io_subscribe,
                               .deliver = io_deliver,
                               .role_of = io_role_of,
                               .log = io_log};

/* A fresh machine for gateway g (its MIB kept). */
static void gw_machine(struct gw *g)
{
    ams_rams_io io = IO;
    io.ctx = g;
    CHECK_OK(ams_rams_new(g->mib, g->v, GW_UNIT, GW_MOD, &io, &g->r));
}

static struct gw *add_gw(struct world *w, int cont, int tree, const int *others,
                         const int *nb, int n)
{
    CHECK(w->n < MAXGW);
    struct gw *g = &w->g[w->n++];
    g->w = w;
    g->cont = cont;
    g->tree = tree;
    g->mib = make_mib(cont, tree, others, nb, n);
    g->v = ams_mib_venture_find(g->mib, "amsdemo", "test");
    CHECK(g->v != NULL);
    gw_machine(g);
    return g;
}

static struct gw *gw_of(struct world *w, int cont)
{
    for (int i = 0; i < w->n; i++)
        if (w->g[i].cont == cont)
            return &w->g[i];
    return NULL;
}

static void clear_queue(struct world *w)
{
    for (size_t i = 0; i < w->nq; i++)
        free(w->q[i].buf);
    w->nq = 0;
}

/* Delivers queued PDUs (and what they cause) until the network is quiet. */
static void pump(struct world *w)
{
    for (int rounds = 0; rounds < 64 && w->nq; rounds++) {
        struct pdu *q = w->q;
        size_t n = w->nq;
        w->q = NULL;
        w->nq = w->capq = 0;
        for (size_t i = 0; i < n; i++) {
            struct pdu *p = &q[i];
            struct gw *g = gw_of(w, p->to);
            if (g && g->r && !w->drop_all && w->drop_to != p->to) {
                char from[64];
                snprintf(from, sizeof from, "ipn:%d.%d", p->from, VENTURE);
                const char *why = NULL;
                g->last_rc = ams_rams_input(g->r, from, p->buf, p->len, &why);
                g->in++;
                w->moved++;
            }
            free(p->buf);
        }
        free(q);
    }
    CHECK_MSG(w->nq == 0, "the network never went quiet");
}

static void world_free(struct world *w)
{
    clear_queue(w);
    free(w->q);
    for (int i = 0; i < w->n; i++) {
        ams_rams_free(w->g[i].r);
        ams_mib_free(w->g[i].mib);
    }
}

static int declared_to(const struct gw *g, int cont)
{
    int n = 0, c, d, t;
    const char *eid;
    for (int i = 0; ams_rams_neighbor(g->r, i, &c, &eid, &d, &t, &n) == 0; i++)
        if (c == cont)
            return d;
    return -1;
}

/* How many times g subscribed (add 1) or unsubscribed (add 0) to subject. */
static int subs_on(const struct gw *g, int add, int subject)
{
    int n = 0;
    for (int i = 0; i < g->nsubs; i++)
        n += g->subs[i].add == add && g->subs[i].subject == subject;
    return n;
}

static ams_rams_stats stats(const struct gw *g)
{
    ams_rams_stats st;
    ams_rams_get_stats(g->r, &st);
    return st;
}

/* Two continua, 2 and 3, neighbours; both started and declared. */
static void two(struct world *w, struct gw **a, struct gw **b, int tree)
{
    memset(w, 0, sizeof *w);
    int oa = 3, ob = 2, one = 1;
    *a = add_gw(w, 2, tree, &oa, &one, 1);
    *b = add_gw(w, 3, tree, &ob, &one, 1);
}

static void start_both(struct world *w, struct gw *a, struct gw *b)
{
    CHECK_OK(ams_rams_start(a->r));
    pump(w);
    CHECK_OK(ams_rams_start(b->r));
    pump(w);
    CHECK_EQ_INT(declared_to(a, b->cont), 1);
    CHECK_EQ_INT(declared_to(b, a->cont), 1);
}

/* An AAMS header + content, as a module of continuum cont sends it. */
static size_t enclosure(uint8_t *out, int cont, int unit, int module, int subject,
                        const char *content)
{
    size_t len = strlen(content);
    aams_msg a = {.type = 0,
                  .priority = 8,
                  .flow = 1,
                  .continuum = cont,
                  .unit = unit,
                  .module = module,
                  .context = 0x01020304,
                  .subject = subject,
                  .len = len};
    CHECK_OK(aams_header_encode(&a, out));
    memcpy(out + AAMS_HDR_LEN, content, len);
    return AAMS_HDR_LEN + len;
}

/* A whole RAMS PDU: envelope (enc_len from n) + enclosure. */
static size_t pdu(uint8_t *out, int cc, int flags, int cont, int unit, int src, int dst,
                  int subject, const uint8_t *enc, size_t n)
{
    ams_rams_env e = {.cc = cc,
                      .flags = flags,
                      .continuum = cont,
                      .unit = unit,
                      .src = src,
                      .dst = dst,
                      .subject = subject,
                      .enc_len = n};
    ams_rams_env_encode(&e, out);
    if (n)
        memcpy(out + AMS_RAMS_ENV_LEN, enc, n);
    return AMS_RAMS_ENV_LEN + n;
}

static void check_aams(const struct dlv_rec *d, int cont, int unit, int module,
                       int subject, const char *content)
{
    size_t n = strlen(content);
    CHECK_EQ_INT(d->len, AAMS_HDR_LEN + n);
    CHECK_EQ_INT((d->enc[2] & 0x7f) << 8 | d->enc[3], cont);
    CHECK_EQ_INT(d->enc[4] << 8 | d->enc[5], unit);
    CHECK_EQ_INT(d->enc[6], module);
    CHECK_EQ_INT((int16_t)(d->enc[12] << 8 | d->enc[13]), subject);
    CHECK_EQ_INT(d->enc[14] << 8 | d->enc[15], n);
    CHECK_EQ_MEM(d->enc + AAMS_HDR_LEN, content, n);
}

/* ------------------------------------------------------------ envelopes */

TEST(rams_env_roundtrip)
{
    uint8_t b[AMS_RAMS_ENV_LEN + 3] = {0};
    ams_rams_env e = {.cc = AMS_RAMS_SEND,
                      .flags = AMS_RAMS_F_TERN,
                      .continuum = 32767,
                      .unit = 513,
                      .src = 4,
                      .dst = 200,
                      .subject = -32768,
                      .enc_len = 3};
    ams_rams_env_encode(&e, b);
    memcpy(b + AMS_RAMS_ENV_LEN, "abc", 3);
    ams_rams_env d;
    size_t used = 0;
    const char *why = NULL;
    CHECK_OK(ams_rams_env_decode(b, sizeof b, &d, &used, &why));
    CHECK_EQ_INT(used, sizeof b);
    CHECK_EQ_INT(d.cc, AMS_RAMS_SEND);
    CHECK_EQ_INT(d.flags, AMS_RAMS_F_TERN);
    CHECK_EQ_INT(d.continuum, 32767);
    CHECK_EQ_INT(d.unit, 513);
    CHECK_EQ_INT(d.src, 4);
    CHECK_EQ_INT(d.dst, 200);
    CHECK_EQ_INT(d.subject, -32768);
    CHECK_EQ_INT(d.enc_len, 3);
    CHECK_EQ_MEM(d.enc, "abc", 3);
    CHECK_RC(ams_rams_env_decode(b, sizeof b - 1, &d, &used, &why), TERN_EMALFORMED);
    CHECK(why != NULL);
    CHECK_RC(ams_rams_env_decode(b, 11, &d, &used, &why), TERN_EMALFORMED);

    uint8_t h[AMS_RAMS_BATCH_HDR];
    ams_rams_batch_header(0xdeadbeef, 0x0102030405060708ull, h);
    uint32_t inc;
    uint64_t seq;
    CHECK_EQ_INT(ams_rams_batch_parse(h, sizeof h, &inc, &seq), 1);
    CHECK_EQ_U64(inc, 0xdeadbeef);
    CHECK_EQ_U64(seq, 0x0102030405060708ull);
    CHECK_EQ_INT(ams_rams_batch_parse(h, sizeof h - 1, &inc, &seq), 0);
    CHECK_EQ_INT(ams_rams_batch_parse(b, sizeof b, &inc, &seq), 0);
}

/* ------------------------------------------------------------ declarations */

TEST(rams_declare_either_order)
{
    for (int order = 0; order < 2; order++) {
        struct world w;
        struct gw *a, *b;
        two(&w, &a, &b, 1);
        struct gw *first = order ? b : a, *second = order ? a : b;
        CHECK_EQ_INT(declared_to(a, 3), 0);
        /* the second gateway is not up yet: what goes to it is lost */
        CHECK_OK(ams_rams_start(first->r));
        w.drop_to = second->cont;
        pump(&w);
        w.drop_to = 0;
        CHECK_EQ_INT(declared_to(second, first->cont), 0);
        CHECK_EQ_INT(declared_to(first, second->cont), 0);
        CHECK_OK(ams_rams_start(second->r));
        pump(&w);
        CHECK_EQ_INT(declared_to(a, 3), 1);
        CHECK_EQ_INT(declared_to(b, 2), 1);
        int n, c, d, t;
        const char *eid;
        CHECK_OK(ams_rams_neighbor(a->r, 0, &c, &eid, &d, &t, &n));
        CHECK_EQ_INT(n, 1);
        CHECK_EQ_INT(c, 3);
        CHECK_EQ_STR(eid, "ipn:3.9");
        CHECK_EQ_INT(t, 1); /* a Tern gateway says so */
        CHECK_RC(ams_rams_neighbor(a->r, 1, &c, &eid, &d, &t, &n), TERN_ENOTFOUND);
        world_free(&w);
    }
}

/* The first gateway's declaration is lost (the second was not up): the
 * second's, when it starts, is answered (AMS_RAMS_F_REPLY) and the answer is
 * not answered again. */
TEST(rams_declare_first_lost)
{
    struct world w;
    struct gw *a, *b;
    two(&w, &a, &b, 1);
    CHECK_OK(ams_rams_start(a->r));
    w.drop_all = 1;
    pump(&w);
    w.drop_all = 0;
    CHECK_EQ_INT(declared_to(b, 2), 0);
    CHECK_OK(ams_rams_start(b->r));
    pump(&w);
    CHECK_EQ_INT(declared_to(a, 3), 1);
    CHECK_EQ_INT(declared_to(b, 2), 1);
    /* b's declaration and a's answer: two PDUs, no ping-pong */
    CHECK_EQ_U64(w.moved, 2);
    CHECK_EQ_INT(a->last_rc, 0);
    CHECK_EQ_INT(b->last_rc, 0);
    /* each gateway subscribed to the other's pseudo-subject */
    CHECK_EQ_INT(subs_on(a, 1, -3), 1);
    CHECK_EQ_INT(subs_on(b, 1, -2), 1);
    world_free(&w);
}

/* ------------------------------------------------------------ publications */

TEST(rams_subscribe_publish_two)
{
    struct world w;
    struct gw *a, *b;
    two(&w, &a, &b, 1);
    start_both(&w, a, b);
    a->roles[1][5] = 2;
    b->roles[0][7] = 4;
    /* module (1, 5) at continuum 2 subscribes to subject 1 from anywhere */
    CHECK_OK(ams_rams_notice(a->r, 1, 1, 1, 5, 0, 0, 0, 1));
    pump(&w);
    CHECK_EQ_INT(subs_on(b, 1, 1), 1);
    const struct sub_rec *s = &b->subs[b->nsubs - 1];
    CHECK_EQ_INT(s->subject, 1);
    CHECK_EQ_INT(s->cont, 0);
    CHECK_EQ_INT(s->unit, 0);
    CHECK_EQ_INT(s->role, 0);
    CHECK_EQ_U64(stats(b).petitions, 3); /* its own, 2's declaration, subject 1 */

    /* module (0, 7) at continuum 3 publishes on subject 1 */
    const char *msg = "hello from 3";
    CHECK_OK(ams_rams_message(b->r, 3, 0, 7, 1, 0, 8, 1, 0, (const uint8_t *)msg,
                              strlen(msg)));
    CHECK_EQ_U64(stats(b).forwarded, 1);
    pump(&w);
    CHECK_EQ_INT(a->last_rc, 0);
    CHECK_EQ_INT(a->ndlv, 1);
    CHECK_EQ_INT(a->dlv[0].unit, 1);
    CHECK_EQ_INT(a->dlv[0].module, 5);
    check_aams(&a->dlv[0], 3, 0, 7, 1, msg);
    CHECK_EQ_U64(stats(a).delivered, 1);

    /* a publication on another subject goes nowhere */
    uint64_t out = stats(b).pdus_out;
    CHECK_OK(ams_rams_message(b->r, 3, 0, 7, 2, 0, 8, 1, 0, (const uint8_t *)"x", 1));
    CHECK_EQ_U64(stats(b).pdus_out, out);

    /* the subscription ends: 3's gateway unsubscribes, nothing more is sent */
    CHECK_OK(ams_rams_notice(a->r, 1, 0, 1, 5, 0, 0, 0, 1));
    pump(&w);
    CHECK_EQ_INT(subs_on(b, 0, 1), 1);
    CHECK_EQ_U64(stats(b).petitions, 2);
    out = stats(b).pdus_out;
    CHECK_OK(ams_rams_message(b->r, 3, 0, 7, 1, 0, 8, 1, 0, (const uint8_t *)msg,
                              strlen(msg)));
    CHECK_EQ_U64(stats(b).pdus_out, out);
    pump(&w);
    CHECK_EQ_INT(a->ndlv, 1);
    world_free(&w);
}

/* A subscription made before the other gateway is up reaches it when it
 * declares itself; a module that leaves takes its subscription with it. */
TEST(rams_subscribe_before_peer_and_module_left)
{
    struct world w;
    struct gw *a, *b;
    two(&w, &a, &b, 0); /* mesh */
    CHECK_OK(ams_rams_start(a->r));
    CHECK_OK(ams_rams_notice(a->r, 1, 1, 1, 5, 0, 0, 0, 2));
    w.drop_all = 1;
    pump(&w);
    w.drop_all = 0;
    CHECK_OK(ams_rams_start(b->r));
    pump(&w);
    CHECK_EQ_INT(subs_on(b, 1, 2), 1);
    CHECK_OK(ams_rams_message(b->r, 3, 1, 3, 2, 0, 8, 1, 0, (const uint8_t *)"m", 1));
    pump(&w);
    CHECK_EQ_INT(a->ndlv, 1);
    check_aams(&a->dlv[0], 3, 1, 3, 2, "m");
    CHECK_OK(ams_rams_module_left(a->r, 1, 5));
    pump(&w);
    CHECK_EQ_INT(subs_on(b, 0, 2), 1);
    world_free(&w);
}

/* Tree A(2) - R(3) - B(4): A and B know each other only through R. */
static void tree3(struct world *w, struct gw **a, struct gw **r, struct gw **b, int tree)
{
    memset(w, 0, sizeof *w);
    int oa[2] = {3, 4}, na[2] = {1, 0};
    int orr[2] = {2, 4}, nr[2] = {1, 1};
    int ob[2] = {3, 2}, nbb[2] = {1, 0};
    *a = add_gw(w, 2, tree, oa, na, 2);
    *r = add_gw(w, 3, tree, orr, nr, 2);
    *b = add_gw(w, 4, tree, ob, nbb, 2);
    CHECK_OK(ams_rams_start((*a)->r));
    pump(w);
    CHECK_OK(ams_rams_start((*r)->r));
    pump(w);
    CHECK_OK(ams_rams_start((*b)->r));
    pump(w);
    CHECK_EQ_INT(declared_to(*a, 3), 1);
    CHECK_EQ_INT(declared_to(*r, 2), 1);
    CHECK_EQ_INT(declared_to(*r, 4), 1);
    CHECK_EQ_INT(declared_to(*b, 3), 1);
    /* B is no neighbour of A's (and vice versa) */
    int n = 0;
    ams_rams_neighbor((*a)->r, 0, NULL, NULL, NULL, NULL, &n);
    CHECK_EQ_INT(n, 1);
    /* each end gateway heard of the other's continuum through R */
    CHECK_EQ_INT(subs_on(*a, 1, -4), 1);
    CHECK_EQ_INT(subs_on(*b, 1, -2), 1);
}

TEST(rams_tree_relay)
{
    struct world w;
    struct gw *a, *r, *b;
    tree3(&w, &a, &r, &b, 1);
    CHECK_OK(ams_rams_notice(a->r, 1, 1, 1, 5, 0, 0, 0, 1));
    pump(&w);
    CHECK_EQ_INT(subs_on(r, 1, 1), 1); /* R's own modules' publications too */
    CHECK_EQ_INT(subs_on(b, 1, 1), 1);

    const char *msg = "from four";
    uint64_t r_pub = stats(r).by_cc_out[AMS_RAMS_PUBLISH];
    CHECK_OK(ams_rams_message(b->r, 4, 1, 9, 1, 0, 8, 1, 0, (const uint8_t *)msg,
                              strlen(msg)));
    pump(&w);
    CHECK_EQ_INT(r->ndlv, 0);
    CHECK_EQ_U64(stats(r).by_cc_out[AMS_RAMS_PUBLISH], r_pub + 1);
    CHECK_EQ_INT(a->ndlv, 1);
    CHECK_EQ_INT(a->dlv[0].module, 5);
    check_aams(&a->dlv[0], 4, 1, 9, 1, msg);

    /* a private message from B to A goes through R too */
    a->roles[1][5] = 2;
    CHECK_OK(ams_rams_notice(a->r, 0, 1, 1, 5, 0, 0, 0, 3));
    uint8_t enc[64], env[128];
    size_t en = enclosure(enc, 4, 1, 9, 3, "psst");
    size_t n = pdu(env, AMS_RAMS_SEND, 0, 2, 1, 4, 5, 3, enc, en);
    CHECK_OK(ams_rams_message(b->r, 4, 1, 9, -2, 0, 8, 1, 0, env, n));
    pump(&w);
    CHECK_EQ_INT(a->ndlv, 2);
    check_aams(&a->dlv[1], 4, 1, 9, 3, "psst");

    /* the subscription ends: R, then B unsubscribe; nothing more flows */
    CHECK_OK(ams_rams_notice(a->r, 1, 0, 1, 5, 0, 0, 0, 1));
    pump(&w);
    CHECK_EQ_INT(subs_on(r, 0, 1), 1);
    CHECK_EQ_INT(subs_on(b, 0, 1), 1);
    uint64_t out = stats(b).pdus_out;
    CHECK_OK(ams_rams_message(b->r, 4, 1, 9, 1, 0, 8, 1, 0, (const uint8_t *)msg,
                              strlen(msg)));
    CHECK_EQ_U64(stats(b).pdus_out, out);
    pump(&w);
    CHECK_EQ_INT(a->ndlv, 2);
    world_free(&w);
}

/* A subscription to one continuum's publications only (domain continuum 4)
 * crosses R to 4 and nowhere else. */
TEST(rams_tree_continuum_domain)
{
    struct world w;
    struct gw *a, *r, *b;
    tree3(&w, &a, &r, &b, 1);
    CHECK_OK(ams_rams_notice(a->r, 1, 1, 1, 5, 0, 4, 0, 2));
    pump(&w);
    CHECK_EQ_INT(subs_on(r, 1, 2), 0); /* not R's continuum */
    CHECK_EQ_INT(subs_on(b, 1, 2), 1);
    CHECK_EQ_INT(b->subs[b->nsubs - 1].cont, 4);
    CHECK_OK(ams_rams_message(b->r, 4, 0, 2, 2, 0, 8, 1, 0, (const uint8_t *)"d", 1));
    pump(&w);
    CHECK_EQ_INT(a->ndlv, 1);
    world_free(&w);
}

/* ------------------------------------------------------------ private */

TEST(rams_private_and_invitation)
{
    struct world w;
    struct gw *a, *b;
    two(&w, &a, &b, 1);
    start_both(&w, a, b);
    a->roles[1][5] = 2;
    b->roles[0][7] = 4;
    uint8_t enc[64], env[128];
    size_t en = enclosure(enc, 3, 0, 7, 2, "for five");
    size_t n = pdu(env, AMS_RAMS_SEND, 0, 2, 1, 4, 5, 2, enc, en);

    /* not invited: dropped at 2, counted */
    CHECK_OK(ams_rams_message(b->r, 3, 0, 7, -2, 0, 8, 1, 0, env, n));
    CHECK_EQ_U64(stats(b).forwarded, 1);
    pump(&w);
    CHECK_EQ_INT(a->last_rc, AMS_RAMS_DROP_NOT_INVITED + 1);
    CHECK_EQ_U64(stats(a).dropped[AMS_RAMS_DROP_NOT_INVITED], 1);
    CHECK_EQ_INT(a->ndlv, 0);

    /* another module's invitation does not let it in either */
    CHECK_OK(ams_rams_notice(a->r, 0, 1, 1, 6, 0, 0, 0, 2));
    CHECK_OK(ams_rams_message(b->r, 3, 0, 7, -2, 0, 8, 1, 0, env, n));
    pump(&w);
    CHECK_EQ_INT(a->last_rc, AMS_RAMS_DROP_NOT_INVITED + 1);
    CHECK_EQ_INT(a->ndlv, 0);

    /* (1, 5) invites subject 2: delivered, the enclosure as it was sent */
    CHECK_OK(ams_rams_notice(a->r, 0, 1, 1, 5, 0, 0, 0, 2));
    CHECK_EQ_U64(stats(a).invitations, 1); /* one domain, two modules */
    CHECK_OK(ams_rams_message(b->r, 3, 0, 7, -2, 0, 8, 1, 0, env, n));
    pump(&w);
    CHECK_EQ_INT(a->last_rc, 0);
    CHECK_EQ_INT(a->ndlv, 1);
    CHECK_EQ_INT(a->dlv[0].unit, 1);
    CHECK_EQ_INT(a->dlv[0].module, 5);
    CHECK_EQ_INT(a->dlv[0].len, en);
    CHECK_EQ_MEM(a->dlv[0].enc, enc, en);
    check_aams(&a->dlv[0], 3, 0, 7, 2, "for five");

    /* an announcement to role 2 at continuum 2 reaches the invited module */
    size_t an = pdu(env, AMS_RAMS_ANNOUNCE, 0, 2, 0, 4, 2, 2, enc, en);
    CHECK_OK(ams_rams_message(b->r, 3, 0, 7, -2, 0, 8, 1, 0, env, an));
    pump(&w);
    CHECK_EQ_INT(a->last_rc, 0);
    CHECK_EQ_INT(a->ndlv, 2); /* (1, 6) has no role 2 */
    CHECK_EQ_INT(a->dlv[1].module, 5);

    /* the invitation ends: dropped again */
    CHECK_OK(ams_rams_notice(a->r, 0, 0, 1, 5, 0, 0, 0, 2));
    n = pdu(env, AMS_RAMS_SEND, 0, 2, 1, 4, 5, 2, enc, en);
    CHECK_OK(ams_rams_message(b->r, 3, 0, 7, -2, 0, 8, 1, 0, env, n));
    pump(&w);
    CHECK_EQ_INT(a->last_rc, AMS_RAMS_DROP_NOT_INVITED + 1);
    CHECK_EQ_INT(a->ndlv, 2);
    CHECK_EQ_U64(stats(a).dropped[AMS_RAMS_DROP_NOT_INVITED], 3);

    /* a local envelope for a continuum no neighbour leads to */
    n = pdu(env, AMS_RAMS_SEND, 0, 4, 1, 4, 5, 2, enc, en);
    CHECK_EQ_INT(ams_rams_message(b->r, 3, 0, 7, -4, 0, 8, 1, 0, env, n),
                 AMS_RAMS_DROP_NO_CONDUIT + 1);
    CHECK_EQ_U64(stats(b).dropped[AMS_RAMS_DROP_NO_CONDUIT], 1);
    /* a local envelope that is not one */
    CHECK_EQ_INT(ams_rams_message(b->r, 3, 0, 7, -2, 0, 8, 1, 0, env, 5),
                 AMS_RAMS_DROP_MALFORMED + 1);
    CHECK_EQ_INT(ams_rams_message(b->r, 3, 0, 7, -2, 0, 8, 1, 0, env, n + 1),
                 AMS_RAMS_DROP_MALFORMED + 1);
    n = pdu(env, AMS_RAMS_PUBLISH, 0, 2, 1, 4, 5, 2, enc, en);
    CHECK_EQ_INT(ams_rams_message(b->r, 3, 0, 7, -2, 0, 8, 1, 0, env, n),
                 AMS_RAMS_DROP_MALFORMED + 1);
    CHECK_EQ_U64(stats(b).dropped[AMS_RAMS_DROP_MALFORMED], 3);
    world_free(&w);
}

/* ------------------------------------------------------------ restart */

static void play_text(struct gw *g, const char *text)
{
    char buf[8192];
    snprintf(buf, sizeof buf, "%s", text);
    char *save = NULL;
    for (char *line = strtok_r(buf, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        char err[256] = "";
        int rc = ams_rams_playback(g->r, line, err, sizeof err);
        CHECK_MSG(rc == 0, "playback '%s': %d %s", line, rc, err);
    }
}

TEST(rams_restart_playback)
{
    struct world w;
    struct gw *a, *b;
    two(&w, &a, &b, 1);
    start_both(&w, a, b);
    CHECK_OK(ams_rams_notice(a->r, 1, 1, 1, 5, 0, 0, 0, 1));
    pump(&w);
    CHECK_EQ_INT(subs_on(b, 1, 1), 1);

    char state[4096];
    size_t need = ams_rams_state(b->r, NULL, 0);
    CHECK(need > 0 && need < sizeof state);
    CHECK_EQ_INT(ams_rams_state(b->r, state, sizeof state), need);
    CHECK_EQ_STR(state, "1 ipn:2.9 2 -2 0 0 0\n1 ipn:2.9 2 1 0 0 0\n");
    char small[8];
    CHECK_EQ_INT(ams_rams_state(b->r, small, sizeof small), need);
    CHECK_EQ_INT(strlen(small), 7);
    char log[8192];
    snprintf(log, sizeof log, "%s", b->log);
    CHECK(strstr(log, "1 ipn:2.9 2 -2 0 0 0\n") != NULL);
    CHECK(strstr(log, "1 ipn:2.9 2 1 0 0 0\n") != NULL);

    /* 3's gateway restarts from its compacted state */
    for (int from_log = 0; from_log < 2; from_log++) {
        ams_rams_free(b->r);
        b->r = NULL;
        b->nsubs = 0;
        b->loglen = 0;
        b->log[0] = 0;
        gw_machine(b);
        play_text(b, from_log ? log : state);
        CHECK_EQ_INT(w.nq, 0); /* playback sends nothing */
        CHECK_EQ_INT(subs_on(b, 1, 1), 1);
        CHECK_EQ_INT(subs_on(b, 1, -2), 1);
        CHECK_EQ_INT(declared_to(b, 2), 1);
        int a_in = a->in, b_in = b->in;
        /* no PDU from 2 since: the publication still goes there */
        CHECK_OK(
            ams_rams_message(b->r, 3, 0, 7, 1, 0, 8, 1, 0, (const uint8_t *)"again", 5));
        pump(&w);
        CHECK_EQ_INT(b->in, b_in);
        CHECK_EQ_INT(a->in, a_in + 1);
        CHECK_EQ_INT(a->ndlv, from_log + 1);
        check_aams(&a->dlv[from_log], 3, 0, 7, 1, "again");
    }

    /* and it rejoins: 2 is told again, nothing is lost, no loop */
    CHECK_OK(ams_rams_start(b->r));
    pump(&w);
    CHECK_EQ_INT(declared_to(a, 3), 1);
    CHECK_EQ_INT(declared_to(b, 2), 1);
    CHECK_OK(ams_rams_message(b->r, 3, 0, 7, 1, 0, 8, 1, 0, (const uint8_t *)"x", 1));
    pump(&w);
    CHECK_EQ_INT(a->ndlv, 3);

    /* 2's gateway restarts with nothing: its new declaration makes 3 tell it
     * again what it asserts, and its module subscribes again */
    ams_rams_free(a->r);
    a->r = NULL;
    gw_machine(a);
    CHECK_OK(ams_rams_start(a->r));
    CHECK_OK(ams_rams_notice(a->r, 1, 1, 1, 5, 0, 0, 0, 1));
    pump(&w);
    CHECK_OK(ams_rams_message(b->r, 3, 0, 7, 1, 0, 8, 1, 0, (const uint8_t *)"y", 1));
    pump(&w);
    CHECK_EQ_INT(a->ndlv, 4);
    world_free(&w);
}

TEST(rams_stop_cancels_declaration)
{
    struct world w;
    struct gw *a, *b;
    two(&w, &a, &b, 1);
    start_both(&w, a, b);
    CHECK_OK(ams_rams_notice(a->r, 1, 1, 1, 5, 0, 0, 0, 1));
    pump(&w);
    CHECK_EQ_INT(subs_on(b, 1, 1), 1);
    CHECK_OK(ams_rams_stop(a->r));
    pump(&w);
    CHECK_EQ_INT(declared_to(b, 2), 0);
    /* 3 forgot everything 2 asked of it */
    CHECK_EQ_INT(subs_on(b, 0, 1), 1);
    CHECK_EQ_INT(subs_on(b, 0, -2), 1);
    CHECK_EQ_U64(stats(b).petitions, 1);
    /* a petition from 2 now is refused */
    uint8_t p[AMS_RAMS_ENV_LEN];
    size_t n = pdu(p, AMS_RAMS_ASSERT, 0, 0, 0, 0, 0, 1, NULL, 0);
    CHECK_EQ_INT(ams_rams_input(b->r, "ipn:2.9", p, n, NULL),
                 AMS_RAMS_DROP_UNDECLARED + 1);
    world_free(&w);
}

/* A gateway that answers a neighbour declaring itself again after it left
 * notes that it is now declared there: its own stop cancels it there. */
TEST(rams_stop_after_peer_rejoined)
{
    struct world w;
    struct gw *a, *b;
    two(&w, &a, &b, 1);
    start_both(&w, a, b);
    CHECK_OK(ams_rams_stop(a->r));
    pump(&w);
    CHECK_EQ_INT(declared_to(b, 2), 0);
    CHECK_OK(ams_rams_start(a->r));
    pump(&w);
    CHECK_EQ_INT(declared_to(b, 2), 1);
    CHECK_EQ_INT(declared_to(a, 3), 1);
    uint64_t out = stats(b).pdus_out;
    CHECK_OK(ams_rams_stop(b->r));
    CHECK_EQ_U64(stats(b).pdus_out, out + 1); /* its cancellation */
    pump(&w);
    CHECK_EQ_INT(declared_to(a, 3), 0);
    world_free(&w);
}

/* ------------------------------------------------------------ malformed */

struct mcase {
    const char *name;
    size_t len;
    int want;
    const char *from;
};

TEST(rams_malformed_input)
{
    struct world w;
    struct gw *a, *b;
    two(&w, &a, &b, 1);
    uint8_t p[512], enc[64];
    size_t en = enclosure(enc, 3, 0, 7, 1, "c");
    const char *why;
    size_t n;

    /* before 3 declared itself: its petitions and messages are refused */
    CHECK_OK(ams_rams_start(a->r));
    clear_queue(&w);
    n = pdu(p, AMS_RAMS_ASSERT, 0, 0, 0, 0, 0, 1, NULL, 0);
    why = NULL;
    CHECK_EQ_INT(ams_rams_input(a->r, "ipn:3.9", p, n, &why),
                 AMS_RAMS_DROP_UNDECLARED + 1);
    CHECK(why != NULL);
    n = pdu(p, AMS_RAMS_PUBLISH, 0, 0, 0, 4, 0, 1, enc, en);
    CHECK_EQ_INT(ams_rams_input(a->r, "ipn:3.9", p, n, &why),
                 AMS_RAMS_DROP_UNDECLARED + 1);
    CHECK_EQ_U64(stats(a).dropped[AMS_RAMS_DROP_UNDECLARED], 2);
    CHECK_EQ_U64(stats(a).petitions, 1);
    CHECK_OK(ams_rams_start(b->r));
    pump(&w);
    CHECK_EQ_INT(declared_to(a, 3), 1);

    struct mcase cases[32];
    uint8_t bufs[32][256];
    int nc = 0;
#define CASE(nm, l, wnt) (cases[nc] = (struct mcase){nm, (l), (wnt), "ipn:3.9"}, nc++)
    /* truncated envelope */
    n = pdu(bufs[nc], AMS_RAMS_ASSERT, 0, 0, 0, 0, 0, 1, NULL, 0);
    CASE("truncated envelope", 7, AMS_RAMS_DROP_MALFORMED + 1);
    /* enclosure length past the end */
    n = pdu(bufs[nc], AMS_RAMS_PUBLISH, 0, 0, 0, 4, 0, 1, enc, en);
    bufs[nc][11] = (uint8_t)(en + 5);
    CASE("enclosure past the end", n, AMS_RAMS_DROP_MALFORMED + 1);
    /* bytes after the enclosure */
    n = pdu(bufs[nc], AMS_RAMS_PUBLISH, 0, 0, 0, 4, 0, 1, enc, en);
    CASE("trailing byte", n + 1, AMS_RAMS_DROP_MALFORMED + 1);
    /* high bits in the control code byte */
    n = pdu(bufs[nc], AMS_RAMS_ASSERT, 0, 0, 0, 0, 0, 1, NULL, 0);
    bufs[nc][0] |= 0x80;
    CASE("control byte high bits", n, AMS_RAMS_DROP_MALFORMED + 1);
    /* unknown control codes */
    n = pdu(bufs[nc], 7, 0, 0, 0, 0, 0, 1, NULL, 0);
    CASE("control code 7", n, AMS_RAMS_DROP_BAD_CODE + 1);
    n = pdu(bufs[nc], 0, 0, 0, 0, 0, 0, 1, NULL, 0);
    CASE("control code 0", n, AMS_RAMS_DROP_BAD_CODE + 1);
    n = pdu(bufs[nc], AMS_RAMS_DECLARATION, 0, 0, 0, 0, 0, -3, NULL, 0);
    CASE("control code 1", n, AMS_RAMS_DROP_BAD_CODE + 1);
    /* petitions outside the MIB */
    n = pdu(bufs[nc], AMS_RAMS_ASSERT, 0, 0, 0, 0, 0, 99, NULL, 0);
    CASE("unknown subject", n, AMS_RAMS_DROP_BAD_DOMAIN + 1);
    n = pdu(bufs[nc], AMS_RAMS_ASSERT, 0, 0, 0, 0, 0, 0, NULL, 0);
    CASE("subject 0", n, AMS_RAMS_DROP_BAD_DOMAIN + 1);
    n = pdu(bufs[nc], AMS_RAMS_ASSERT, 0, 0, 0, 0, 0, -77, NULL, 0);
    CASE("unknown message space", n, AMS_RAMS_DROP_BAD_DOMAIN + 1);
    n = pdu(bufs[nc], AMS_RAMS_ASSERT, 0, 55, 0, 0, 0, 1, NULL, 0);
    CASE("unknown continuum", n, AMS_RAMS_DROP_BAD_DOMAIN + 1);
    n = pdu(bufs[nc], AMS_RAMS_ASSERT, 0, 0, 7, 0, 0, 1, NULL, 0);
    CASE("unknown unit", n, AMS_RAMS_DROP_BAD_DOMAIN + 1);
    n = pdu(bufs[nc], AMS_RAMS_CANCEL, 0, 0, 0, 77, 0, 1, NULL, 0);
    CASE("unknown role", n, AMS_RAMS_DROP_BAD_DOMAIN + 1);
    n = pdu(bufs[nc], AMS_RAMS_ASSERT, 0, 0, 0, 0, 0, 1, enc, en);
    CASE("petition with an enclosure", n, AMS_RAMS_DROP_MALFORMED + 1);
    /* enclosures that are no AAMS message of the venture */
    n = pdu(bufs[nc], AMS_RAMS_PUBLISH, 0, 0, 0, 4, 0, 1, enc, 10);
    CASE("enclosure shorter than AAMS", n, AMS_RAMS_DROP_MALFORMED + 1);
    n = pdu(bufs[nc], AMS_RAMS_PUBLISH, 0, 0, 0, 4, 0, 2, enc, en);
    CASE("publish subject mismatch", n, AMS_RAMS_DROP_MALFORMED + 1);
    n = pdu(bufs[nc], AMS_RAMS_PUBLISH, 0, 0, 0, 4, 0, 1, enc, en);
    bufs[nc][AMS_RAMS_ENV_LEN + 15] = 9; /* AAMS content length */
    CASE("AAMS length disagrees", n, AMS_RAMS_DROP_MALFORMED + 1);
    n = pdu(bufs[nc], AMS_RAMS_PUBLISH, 0, 0, 0, 4, 0, 1, enc, en);
    bufs[nc][AMS_RAMS_ENV_LEN + 3] = 55; /* AAMS continuum */
    CASE("AAMS continuum unknown", n, AMS_RAMS_DROP_MALFORMED + 1);
    n = pdu(bufs[nc], AMS_RAMS_PUBLISH, 0, 0, 0, 4, 0, 1, enc, en);
    bufs[nc][AMS_RAMS_ENV_LEN] = 0x38; /* AAMS type 3 */
    CASE("AAMS type 3", n, AMS_RAMS_DROP_MALFORMED + 1);
    n = pdu(bufs[nc], AMS_RAMS_SEND, 0, 55, 1, 4, 5, 1, enc, en);
    CASE("private for unknown continuum", n, AMS_RAMS_DROP_BAD_DOMAIN + 1);
    /* from a stranger */
    n = pdu(bufs[nc], AMS_RAMS_ASSERT, 0, 0, 0, 0, 0, -77, NULL, 0);
    CASE("stranger", n, AMS_RAMS_DROP_STRANGER + 1);
    cases[nc - 1].from = "ipn:77.9";
    n = pdu(bufs[nc], AMS_RAMS_ASSERT, 0, 0, 0, 0, 0, -3, NULL, 0);
    CASE("stranger's declaration", n, AMS_RAMS_DROP_STRANGER + 1);
    cases[nc - 1].from = "ipn:3.1";
#undef CASE
    uint64_t want[AMS_RAMS_DROP_N];
    ams_rams_stats st0 = stats(a);
    memcpy(want, st0.dropped, sizeof want);
    for (int i = 0; i < nc; i++) {
        why = NULL;
        int rc = ams_rams_input(a->r, cases[i].from, bufs[i], cases[i].len, &why);
        CHECK_MSG(rc == cases[i].want, "%s: rc %d, want %d (%s)", cases[i].name, rc,
                  cases[i].want, why ? why : "");
        CHECK_MSG(why != NULL, "%s: no reason", cases[i].name);
        want[cases[i].want - 1]++;
        ams_rams_stats st = stats(a);
        for (int d = 0; d < AMS_RAMS_DROP_N; d++)
            CHECK_MSG(st.dropped[d] == want[d], "%s: dropped[%d] %llu, want %llu",
                      cases[i].name, d, (unsigned long long)st.dropped[d],
                      (unsigned long long)want[d]);
    }
    CHECK_EQ_INT(w.nq, 0);     /* none of them made it send anything */
    CHECK_EQ_INT(a->nsubs, 1); /* nor subscribe (3's pseudo-subject) */
    CHECK_EQ_U64(stats(a).petitions, 2);

    /* it still works both ways */
    CHECK_OK(ams_rams_notice(a->r, 1, 1, 1, 5, 0, 0, 0, 1));
    CHECK_OK(ams_rams_notice(b->r, 1, 1, 0, 7, 0, 0, 0, 3));
    pump(&w);
    CHECK_EQ_INT(subs_on(a, 1, 3), 1);
    CHECK_EQ_INT(subs_on(b, 1, 1), 1);
    CHECK_OK(ams_rams_message(b->r, 3, 0, 7, 1, 0, 8, 1, 0, (const uint8_t *)"ok", 2));
    CHECK_OK(ams_rams_message(a->r, 2, 1, 5, 3, 0, 8, 1, 0, (const uint8_t *)"ko", 2));
    pump(&w);
    CHECK_EQ_INT(a->ndlv, 1);
    CHECK_EQ_INT(b->ndlv, 1);
    check_aams(&a->dlv[0], 3, 0, 7, 1, "ok");
    check_aams(&b->dlv[0], 2, 1, 5, 3, "ko");
    world_free(&w);
}

/* ------------------------------------------------------------ playback */

TEST(rams_playback_syntax)
{
    struct world w;
    struct gw *a, *b;
    two(&w, &a, &b, 1);
    char err[256];
    static const char *bad[] = {
        "1 ipn:3.9 2",                /* too few fields */
        "1 ipn:3.9 2 -3 0 0 0 extra", /* too many */
        "x ipn:3.9 2 -3 0 0 0",       /* not a number */
        "2 ipn:3.9 2 -3 0 0 0",       /* RAMS over UDP */
        "1 ipn:99.9 2 -3 0 0 0",      /* no neighbour's EID */
        "1 ipn:3.9 4 -3 0 0 0",       /* not a petition */
        "1 ipn:3.9 2 99 0 0 0",       /* no such subject */
        "1 ipn:3.9 2 1 55 0 0",       /* no such continuum */
        "1 ipn:3.9 2 1 0 9 0",        /* no such unit */
        "1 ipn:3.9 2 1 0 0 99",       /* no such role */
        "1 ipn:3.9 2 1 0 0 0",        /* before 3 declared itself */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        int rc = ams_rams_playback(a->r, bad[i], err, sizeof err);
        CHECK_MSG(rc == TERN_ESYNTAX, "'%s': rc %d", bad[i], rc);
        CHECK_MSG(err[0] != 0, "'%s': no message", bad[i]);
    }
    CHECK_EQ_INT(declared_to(a, 3), 0);
    CHECK_EQ_U64(stats(a).petitions, 1);
    CHECK_OK(ams_rams_playback(a->r, "", err, sizeof err));
    CHECK_OK(ams_rams_playback(a->r, "\n", err, sizeof err));
    CHECK_OK(ams_rams_playback(a->r, "   # a comment", err, sizeof err));
    CHECK_OK(ams_rams_playback(a->r, "1 ipn:3.9 2 -3 0 0 0\n", err, sizeof err));
    CHECK_EQ_INT(declared_to(a, 3), 1);
    CHECK_OK(ams_rams_playback(a->r, "\t1 ipn:3.9 2 1 0 1 4", err, sizeof err));
    CHECK_EQ_INT(subs_on(a, 1, 1), 1);
    CHECK_EQ_INT(a->subs[a->nsubs - 1].unit, 1);
    CHECK_EQ_INT(a->subs[a->nsubs - 1].role, 4);
    CHECK_OK(ams_rams_playback(a->r, "1 ipn:3.9 3 1 0 1 4", err, sizeof err));
    CHECK_EQ_INT(subs_on(a, 0, 1), 1);
    CHECK_EQ_U64(stats(a).petitions, 2);
    /* a cancelled declaration: 3 is no longer declared */
    CHECK_OK(ams_rams_playback(a->r, "1 ipn:3.9 3 -3 0 0 0", err, sizeof err));
    CHECK_EQ_INT(declared_to(a, 3), 0);
    CHECK_EQ_U64(stats(a).petitions, 1);
    CHECK_EQ_INT(w.nq, 0);
    world_free(&w);
}

/* ------------------------------------------------------------ order */

static void offer(ams_rams_order *o, uint32_t inc, uint64_t seq, uint64_t now, int want)
{
    uint8_t b[8];
    memset(b, (int)seq, sizeof b);
    int rc = ams_rams_order_offer(o, inc, seq, b, sizeof b, now);
    CHECK_MSG(rc == want, "offer %u/%llu: %d, want %d", inc, (unsigned long long)seq, rc,
              want);
}

static int next(ams_rams_order *o, uint64_t now, uint64_t hold, int *seq)
{
    uint8_t *b = NULL;
    size_t len = 0;
    int rc = ams_rams_order_next(o, now, hold, &b, &len);
    if (rc == 1) {
        CHECK_EQ_INT(len, 8);
        *seq = b[0];
        free(b);
    }
    return rc;
}

TEST(rams_order)
{
    ams_rams_order *o;
    CHECK_OK(ams_rams_order_new(1000, &o));
    uint64_t kept, skipped, dups;
    int s = -1;
    /* in order */
    offer(o, 7, 10, 0, 1);
    offer(o, 7, 11, 0, 1);
    CHECK_EQ_INT(next(o, 0, 100, &s), 0);
    /* out of order: kept, then released in order */
    offer(o, 7, 14, 1, 0);
    offer(o, 7, 13, 1, 0);
    offer(o, 7, 12, 1, 1);
    CHECK_EQ_INT(next(o, 1, 100, &s), 1);
    CHECK_EQ_INT(s, 13);
    CHECK_EQ_INT(next(o, 1, 100, &s), 1);
    CHECK_EQ_INT(s, 14);
    CHECK_EQ_INT(next(o, 1, 100, &s), 0);
    /* duplicates: taken before, or kept now */
    offer(o, 7, 11, 2, -1);
    offer(o, 7, 14, 2, -1);
    offer(o, 7, 16, 2, 0);
    offer(o, 7, 16, 2, -1);
    ams_rams_order_counts(o, &kept, &skipped, &dups);
    CHECK_EQ_U64(kept, 3);
    CHECK_EQ_U64(skipped, 0);
    CHECK_EQ_U64(dups, 3);
    /* the gap (15) is skipped once held longer than hold_ms */
    CHECK_EQ_INT(next(o, 50, 100, &s), 0);
    CHECK_EQ_INT(next(o, 102, 100, &s), 1);
    CHECK_EQ_INT(s, 16);
    ams_rams_order_counts(o, &kept, &skipped, &dups);
    CHECK_EQ_U64(skipped, 1);
    offer(o, 7, 15, 103, -1); /* too late now */
    offer(o, 7, 17, 103, 1);
    /* a new incarnation starts a new sequence where it starts */
    offer(o, 8, 3, 104, 1);
    offer(o, 8, 4, 104, 1);
    offer(o, 8, 4, 104, -1);
    /* one numbered below its first was sent before: taken, out of order */
    offer(o, 8, 2, 104, 1);
    ams_rams_order_free(o);

    /* the byte bound: past it, the gap is given up at once */
    CHECK_OK(ams_rams_order_new(20, &o));
    offer(o, 1, 0, 0, 1);
    offer(o, 1, 2, 0, 0); /* 8 bytes held */
    offer(o, 1, 4, 0, 0); /* 16 */
    CHECK_EQ_INT(next(o, 0, 1000, &s), 0);
    offer(o, 1, 5, 0, 0); /* 24 > 20 */
    CHECK_EQ_INT(next(o, 0, 1000, &s), 1);
    CHECK_EQ_INT(s, 2);
    /* 16 held again, within the bound: 3 is waited for */
    CHECK_EQ_INT(next(o, 0, 1000, &s), 0);
    offer(o, 1, 3, 0, 1);
    CHECK_EQ_INT(next(o, 0, 1000, &s), 1);
    CHECK_EQ_INT(s, 4);
    CHECK_EQ_INT(next(o, 0, 1000, &s), 1);
    CHECK_EQ_INT(s, 5);
    CHECK_EQ_INT(next(o, 0, 1000, &s), 0);
    ams_rams_order_counts(o, &kept, &skipped, &dups);
    CHECK_EQ_U64(kept, 3);
    CHECK_EQ_U64(skipped, 1);
    CHECK_EQ_U64(dups, 0);
    /* kept batches are freed with the machine */
    offer(o, 1, 9, 0, 0);
    ams_rams_order_free(o);
}

/* ------------------------------------------------------------ found by review (each
 * failed on the first rams.c) */

/* Mesh of three continua, each a neighbour of the other two: modules at 2
 * and 3 subscribe to subject 1; 4 publishes once. Each module should get it
 * once; a mesh gateway must not relay a publication it received from
 * another gateway (that gateway sent it to every petitioner itself). */
TEST(rams_mesh_no_duplicates)
{
    struct world w;
    memset(&w, 0, sizeof w);
    int o2[2] = {3, 4}, o3[2] = {2, 4}, o4[2] = {2, 3}, nb[2] = {1, 1};
    struct gw *a = add_gw(&w, 2, 0, o2, nb, 2);
    struct gw *r = add_gw(&w, 3, 0, o3, nb, 2);
    struct gw *b = add_gw(&w, 4, 0, o4, nb, 2);
    CHECK_OK(ams_rams_start(a->r));
    CHECK_OK(ams_rams_start(r->r));
    CHECK_OK(ams_rams_start(b->r));
    pump(&w);
    CHECK_OK(ams_rams_notice(a->r, 1, 1, 1, 5, 0, 0, 0, 1));
    CHECK_OK(ams_rams_notice(r->r, 1, 1, 1, 6, 0, 0, 0, 1));
    pump(&w);
    CHECK_OK(ams_rams_message(b->r, 4, 0, 7, 1, 0, 8, 1, 0, (const uint8_t *)"m", 1));
    pump(&w);
    CHECK_MSG(a->ndlv == 1 && r->ndlv == 1,
              "deliveries at 2: %d, at 3: %d (want 1 and 1); 2 and 3 sent %llu and "
              "%llu publications",
              a->ndlv, r->ndlv, (unsigned long long)stats(a).by_cc_out[AMS_RAMS_PUBLISH],
              (unsigned long long)stats(r).by_cc_out[AMS_RAMS_PUBLISH]);
    world_free(&w);
}

/* Tree: modules at 2 and at 4 subscribe to subject 1, then 2's module
 * unsubscribes. 2's gateway is left holding the petition only because R
 * asked for 2's publications (for 4): it should cancel its own assertion
 * to R (cancel_pet's "one neighbour still wants them and is itself a
 * source" case), so 4's publications stop crossing to 2 for nobody. */
TEST(rams_tree_unsubscribe_one_of_two)
{
    struct world w;
    struct gw *a, *r, *b;
    tree3(&w, &a, &r, &b, 1);
    CHECK_OK(ams_rams_notice(a->r, 1, 1, 1, 5, 0, 0, 0, 1));
    pump(&w);
    CHECK_OK(ams_rams_notice(b->r, 1, 1, 1, 5, 0, 0, 0, 1));
    pump(&w);
    CHECK_OK(ams_rams_message(b->r, 4, 0, 7, 1, 0, 8, 1, 0, (const uint8_t *)"1", 1));
    pump(&w);
    CHECK_EQ_INT(a->ndlv, 1);
    CHECK_OK(ams_rams_notice(a->r, 1, 0, 1, 5, 0, 0, 0, 1));
    pump(&w);
    int a_in = a->in;
    CHECK_OK(ams_rams_message(b->r, 4, 0, 7, 1, 0, 8, 1, 0, (const uint8_t *)"2", 1));
    pump(&w);
    CHECK_EQ_INT(a->ndlv, 1);
    CHECK_EQ_INT(a->in, a_in); /* nothing crossed to 2 */
    /* while 2's own publications still reach 4 */
    CHECK_OK(ams_rams_message(a->r, 2, 0, 7, 1, 0, 8, 1, 0, (const uint8_t *)"3", 1));
    pump(&w);
    CHECK_EQ_INT(b->ndlv, 1); /* "1" and "2" were 4's own */
    world_free(&w);
}

/* An invitation on subject 0 ("everything") lets any private message to
 * that module in (once, notices on subject 0 were all dropped). */
TEST(rams_invitation_on_everything)
{
    struct world w;
    struct gw *a, *b;
    two(&w, &a, &b, 1);
    start_both(&w, a, b);
    CHECK_OK(ams_rams_notice(a->r, 0, 1, 1, 5, 0, 0, 0, 0));
    CHECK_EQ_U64(stats(a).invitations, 1);
    uint8_t enc[64], env[128];
    size_t en = enclosure(enc, 3, 0, 7, 2, "any");
    size_t n = pdu(env, AMS_RAMS_SEND, 0, 2, 1, 4, 5, 2, enc, en);
    CHECK_OK(ams_rams_message(b->r, 3, 0, 7, -2, 0, 8, 1, 0, env, n));
    pump(&w);
    CHECK_EQ_INT(a->last_rc, 0);
    CHECK_EQ_INT(a->ndlv, 1);
    world_free(&w);
}

/* A local publication whose AAMS fields cannot be encoded (priority 16,
 * type 3) is refused (a negative return) and nothing is sent (once, it went
 * out with the previous message's header). */
TEST(rams_message_bad_fields)
{
    struct world w;
    struct gw *a, *b;
    two(&w, &a, &b, 1);
    start_both(&w, a, b);
    CHECK_OK(ams_rams_notice(a->r, 1, 1, 1, 5, 0, 0, 0, 1));
    pump(&w);
    CHECK_OK(ams_rams_message(b->r, 3, 0, 7, 1, 0, 8, 1, 0, (const uint8_t *)"a", 1));
    pump(&w);
    CHECK_EQ_INT(a->ndlv, 1);
    uint64_t out = stats(b).pdus_out;
    int rc1 = ams_rams_message(b->r, 3, 0, 9, 1, 3, 8, 1, 0, (const uint8_t *)"b", 1);
    int rc2 = ams_rams_message(b->r, 3, 0, 9, 1, 0, 16, 1, 0, (const uint8_t *)"c", 1);
    uint64_t sent = stats(b).pdus_out - out;
    pump(&w);
    CHECK_MSG(rc1 < 0 && rc2 < 0 && sent == 0 && a->ndlv == 1,
              "type 3: rc %d, priority 16: rc %d; %llu PDUs sent; %d delivered at 2, "
              "the last with module %d, content '%c' in its header",
              rc1, rc2, (unsigned long long)sent, a->ndlv - 1, a->dlv[a->ndlv - 1].enc[6],
              a->dlv[a->ndlv - 1].enc[16]);
    world_free(&w);
}

/* A gateway with no petition state (nothing declared to it yet): its state
 * is the empty string, terminated (once, out was left unterminated). */
TEST(rams_state_empty_terminated)
{
    struct world w;
    struct gw *a, *b;
    two(&w, &a, &b, 1);
    char s[32];
    memset(s, 'x', sizeof s);
    CHECK_EQ_INT(ams_rams_state(a->r, s, sizeof s), 0);
    CHECK_MSG(s[0] == 0, "out[0] is '%c', not the empty string", s[0]);
    world_free(&w);
}

/* The same mesh with a subscriber at every continuum: no publication goes
 * round the triangle (once, it did for ever: 2 -> 3 -> 4 -> 2 ...). */
TEST(rams_mesh_publication_storm)
{
    struct world w;
    memset(&w, 0, sizeof w);
    int o2[2] = {3, 4}, o3[2] = {2, 4}, o4[2] = {2, 3}, nb[2] = {1, 1};
    struct gw *g[3] = {add_gw(&w, 2, 0, o2, nb, 2), add_gw(&w, 3, 0, o3, nb, 2),
                       add_gw(&w, 4, 0, o4, nb, 2)};
    for (int k = 0; k < 3; k++)
        CHECK_OK(ams_rams_start(g[k]->r));
    pump(&w);
    for (int k = 0; k < 3; k++)
        CHECK_OK(ams_rams_notice(g[k]->r, 1, 1, 1, 5, 0, 0, 0, 1));
    pump(&w);
    CHECK_OK(ams_rams_message(g[2]->r, 4, 0, 7, 1, 0, 8, 1, 0, (const uint8_t *)"m", 1));
    /* 64 rounds of the pump, then "the network never went quiet" */
    pump(&w);
    CHECK_EQ_INT(g[0]->ndlv, 1);
    CHECK_EQ_INT(g[1]->ndlv, 1);
    world_free(&w);
}
