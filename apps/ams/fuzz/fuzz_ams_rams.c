/* Stateful: three RAMS gateway machines (continua 2, 3 and 4, a tree
 * 2 - 3 - 4 or a full mesh, as the first byte says) in one process, driven
 * by a sequence of operations: PDUs from a neighbour or a stranger (raw or
 * built from small tables so they get past the decoder), the gateway
 * module's notices and messages, playback lines, a module leaving, stop,
 * start, a restart from the compacted state, the network delivering what
 * was sent, and the batch order. After each step the state and the
 * neighbours are walked. No crash, no leak; the watchdog catches a step
 * that loops or blows up. The pump is bounded (rounds and PDUs): a storm
 * of PDUs is cut, not a hang. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ams_mams.h"
#include "ams_rams.h"
#include "tern_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NG        3
#define MAX_Q     2048
#define MAX_ROUND 16

struct pdu {
    int from, to;
    size_t len;
    uint8_t *buf;
};

struct world;

struct gw {
    struct world *w;
    int cont;
    ams_mib *mib;
    const ams_mib_venture *v;
    ams_rams *r;
    size_t delivered, subs, logged;
};

struct world {
    struct gw g[NG];
    struct pdu *q;
    size_t nq, cap;
    int fail_send, fail_sub, fail_deliver;
};

static const int conts[NG] = {2, 3, 4};

static int io_send(void *ctx, int cont, const char *eid, unsigned flow, const uint8_t *b,
                   size_t len)
{
    struct gw *g = ctx;
    struct world *w = g->w;
    (void)eid;
    (void)flow;
    if (w->fail_send)
        return -1;
    if (w->nq >= MAX_Q)
        return 0; /* lost */
    if (w->nq == w->cap) {
        size_t nc = w->cap ? 2 * w->cap : 64;
        struct pdu *q = realloc(w->q, nc * sizeof *q);
        if (!q)
            return -1;
        w->q = q;
        w->cap = nc;
    }
    uint8_t *c = malloc(len ? len : 1);
    if (!c)
        return -1;
    memcpy(c, b, len);
    w->q[w->nq++] = (struct pdu){g->cont, cont, len, c};
    return 0;
}

static int io_subscribe(void *ctx, int add, int role, int cont, int unit, int subject)
{
    struct gw *g = ctx;
    g->subs += (size_t)(add + role + cont + unit + subject);
    return g->w->fail_sub ? -1 : 0;
}

static int io_deliver(void *ctx, int unit, int module, const uint8_t *enc, size_t len)
{
    struct gw *g = ctx;
    g->delivered += (size_t)(unit + module) + len + (len ? enc[len - 1] : 0);
    return g->w->fail_deliver ? -1 : 0;
}

static int io_role_of(void *ctx, int unit, int module)
{
    (void)ctx;
    return module % 5 == 0 ? -1 : (unit + module) % 5 + 1;
}

static void io_log(void *ctx, const char *line)
{
    struct gw *g = ctx;
    g->logged += strlen(line);
}

static ams_mib *make_mib(int self, int tree)
{
    char text[2048];
    size_t k = 0;
#define PUT(...) (k += (size_t)snprintf(text + k, sizeof text - k, __VA_ARGS__))
    PUT("+ams_mib_load\n*ams_mib_init continuum_nbr=%d ptsname=dgr\n+ams_mib_add\n",
        self);
    for (int i = 0; i < NG; i++)
        if (conts[i] != self)
            PUT("*continuum nbr=%d name=c%d\n", conts[i], conts[i]);
    PUT("*application name=app\n+venture nbr=9 appname=app authname=a net_config=%s\n",
        tree ? "tree" : "mesh");
    PUT("*role nbr=2 name=r2\n*role nbr=3 name=r3\n*role nbr=4 name=r4\n");
    PUT("*subject nbr=1 name=s1\n*subject nbr=2 name=s2\n*subject nbr=3 name=s3\n");
    PUT("*unit nbr=1 name=u1\n*unit nbr=2 name=u1x\n");
    for (int i = 0; i < NG; i++) {
        if (conts[i] == self)
            continue;
        /* the tree: 2 and 4 are neighbours of 3 only */
        int nb = !tree || self == 3 || conts[i] == 3;
        PUT("*msgspace nbr=%d neighbor=%d\n", conts[i], nb);
    }
    PUT("-venture\n-ams_mib_add\n-ams_mib_load\n");
#undef PUT
    ams_mib *m = NULL;
    if (ams_mib_load_text(text, k, "f.amsrc", &m, NULL, 0))
        return NULL;
    return m;
}

static int machine(struct gw *g)
{
    ams_rams_io io = {.ctx = g,
                      .send = io_send,
                      .subscribe = io_subscribe,
                      .deliver = io_deliver,
                      .role_of = io_role_of,
                      .log = io_log};
    return ams_rams_new(g->mib, g->v, 0, 1, &io, &g->r);
}

static void pump(struct world *w)
{
    size_t moved = 0;
    for (int round = 0; round < MAX_ROUND && w->nq && moved < MAX_Q; round++) {
        struct pdu *q = w->q;
        size_t n = w->nq;
        w->q = NULL;
        w->nq = w->cap = 0;
        for (size_t i = 0; i < n; i++) {
            for (int k = 0; k < NG && moved < MAX_Q; k++)
                if (conts[k] == q[i].to && w->g[k].r) {
                    char from[32];
                    snprintf(from, sizeof from, "ipn:%d.9", q[i].from);
                    const char *why;
                    (void)ams_rams_input(w->g[k].r, from, q[i].buf, q[i].len, &why);
                    moved++;
                }
            free(q[i].buf);
        }
        free(q);
    }
}

static void clear(struct world *w)
{
    for (size_t i = 0; i < w->nq; i++)
        free(w->q[i].buf);
    free(w->q);
    w->q = NULL;
    w->nq = w->cap = 0;
}

/* A restart: the state kept, a fresh machine, the state played back. */
static void restart(struct gw *g)
{
    size_t need = ams_rams_state(g->r, NULL, 0);
    char *s = malloc(need + 1);
    if (!s)
        return;
    s[0] = 0; /* an empty state writes nothing, not even its NUL (test_rams) */
    size_t got = ams_rams_state(g->r, s, need + 1);
    if (got != need || strlen(s) != need)
        __builtin_trap(); /* the state's length disagrees with itself */
    ams_rams_free(g->r);
    g->r = NULL;
    if (machine(g))
        __builtin_trap(); /* out of memory: nothing to go on with */
    {
        char *save = NULL, err[256];
        for (char *l = strtok_r(s, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
            if (ams_rams_playback(g->r, l, err, sizeof err) == TERN_ESYNTAX)
                __builtin_trap(); /* its own state does not play back */
    }
    free(s);
}

static const int t_cont[] = {0, 2, 3, 4, 55};
static const int t_unit[] = {0, 1, 2, 7};
static const int t_role[] = {0, 1, 2, 4, 77};
static const int t_subj[] = {1, 2, 3, 0, -2, -3, -4, 99};

#define PICK(t, b) (t[(b) % (sizeof t / sizeof t[0])])

/* Reads n bytes of d at *i (0 past the end). */
static uint8_t rd(const uint8_t *d, size_t n, size_t *i)
{
    return *i < n ? d[(*i)++] : 0;
}

/* Builds a PDU from the input: envelope fields from the tables, an
 * enclosure that is an AAMS message (or raw bytes). */
static size_t build(uint8_t *out, const uint8_t *d, size_t n, size_t *i)
{
    uint8_t f0 = rd(d, n, i), f1 = rd(d, n, i), f2 = rd(d, n, i), f3 = rd(d, n, i);
    ams_rams_env e = {.cc = 2 + f0 % 5,
                      .flags = (f0 >> 3) & 3,
                      .continuum = PICK(t_cont, f1),
                      .unit = PICK(t_unit, f1 >> 4),
                      .src = PICK(t_role, f2),
                      .dst = (f2 >> 4) & 7,
                      .subject = PICK(t_subj, f3)};
    if (f0 & 0x80) { /* a whole byte of control code */
        e.cc = f0 & 0x0f;
    }
    size_t clen = rd(d, n, i) % 32;
    if (e.cc >= AMS_RAMS_PUBLISH || (f3 & 0x80)) {
        uint8_t f4 = rd(d, n, i);
        aams_msg a = {.type = f4 % 3,
                      .priority = (f4 >> 2) & 15,
                      .continuum = PICK(t_cont, f4 >> 6) ? PICK(t_cont, f4 >> 6) : 2,
                      .unit = PICK(t_unit, f3 >> 3),
                      .module = (f2 >> 4) & 7,
                      .subject = (f3 & 0x40) ? PICK(t_subj, f4) : e.subject,
                      .len = clen};
        if (aams_header_encode(&a, out + AMS_RAMS_ENV_LEN))
            memset(out + AMS_RAMS_ENV_LEN, 0, AAMS_HDR_LEN);
        for (size_t k = 0; k < clen; k++)
            out[AMS_RAMS_ENV_LEN + AAMS_HDR_LEN + k] = rd(d, n, i);
        e.enc_len = AAMS_HDR_LEN + clen;
    }
    ams_rams_env_encode(&e, out);
    size_t len = AMS_RAMS_ENV_LEN + e.enc_len;
    if (f3 & 0x20) { /* cut short */
        size_t cut = 1 + (f1 & 7);
        len = len > cut ? len - cut : 0;
    }
    return len;
}

static int run(const uint8_t *d, size_t n, int lenient)
{
    tern_fuzz_watch w = {.lenient = lenient};
    if (n < 1)
        return 0;
    static struct world W;
    struct world *wd = &W;
    memset(wd, 0, sizeof *wd);
    int tree = d[0] & 1;
    size_t i = 1;
    for (int k = 0; k < NG; k++) {
        struct gw *g = &wd->g[k];
        g->w = wd;
        g->cont = conts[k];
        /* loaded once: the MIB loader is fuzz_ams_mib's */
        static ams_mib *mibs[2][NG];
        if (!mibs[tree][k])
            mibs[tree][k] = make_mib(conts[k], tree);
        g->mib = mibs[tree][k];
        g->v = g->mib ? ams_mib_venture_find(g->mib, "app", "a") : NULL;
        if (!g->v || machine(g))
            __builtin_trap(); /* the harness's own MIB must load */
    }
    ams_rams_order *ord = NULL;
    if (ams_rams_order_new(64 + (d[0] >> 1), &ord))
        goto out;
    uint64_t now = 0;
    uint32_t inc = 1;
    uint64_t seq = 0;
    static uint8_t buf[AMS_RAMS_ENV_LEN + AAMS_HDR_LEN + 512];
    int steps = 0;
    while (i < n && steps++ < 4096) {
        uint8_t op = d[i++];
        struct gw *g = &wd->g[(op >> 4) % NG];
        tern_fuzz_watch_start(&w);
        switch (op & 15) {
        case 0: { /* raw bytes from a neighbour, or from a stranger */
            uint8_t who = rd(d, n, &i);
            size_t len = rd(d, n, &i);
            if (len > n - i)
                len = n - i;
            char from[32];
            snprintf(from, sizeof from, "ipn:%d.%d", who & 0x80 ? 77 : conts[who % NG],
                     who & 0x40 ? 8 : 9);
            const char *why;
            uint32_t binc;
            uint64_t bseq;
            if (ams_rams_batch_parse(d + i, len, &binc, &bseq)) /* a batch: its PDU */
                (void)ams_rams_input(g->r, from, d + i + AMS_RAMS_BATCH_HDR,
                                     len - AMS_RAMS_BATCH_HDR, &why);
            else
                (void)ams_rams_input(g->r, from, d + i, len, &why);
            i += len;
            break;
        }
        case 1:
        case 2: { /* a built PDU from a neighbour */
            uint8_t who = rd(d, n, &i);
            size_t len = build(buf, d, n, &i);
            char from[32];
            snprintf(from, sizeof from, "ipn:%d.9", conts[who % NG]);
            const char *why;
            (void)ams_rams_input(g->r, from, buf, len, &why);
            break;
        }
        case 3: { /* a subscription or invitation notice */
            uint8_t a = rd(d, n, &i), b = rd(d, n, &i), c = rd(d, n, &i);
            (void)ams_rams_notice(g->r, a & 1, (a >> 1) & 1, PICK(t_unit, a >> 2), b & 7,
                                  PICK(t_role, b >> 3), PICK(t_cont, c),
                                  PICK(t_unit, c >> 3), PICK(t_subj, c >> 5));
            break;
        }
        case 4: { /* a local module publishes */
            uint8_t a = rd(d, n, &i), b = rd(d, n, &i);
            size_t len = rd(d, n, &i) % 64;
            if (len > n - i)
                len = n - i;
            (void)ams_rams_message(g->r, g->cont, PICK(t_unit, a), (a >> 2) & 7,
                                   PICK(t_subj, b), (b >> 3) % 3, (b >> 5) * 2,
                                   (a >> 5) & 3, 0, d + i, len);
            i += len;
            break;
        }
        case 5: { /* a local module's envelope for another continuum */
            uint8_t a = rd(d, n, &i);
            size_t len = build(buf, d, n, &i);
            (void)ams_rams_message(g->r, g->cont, 0, a & 7, -conts[a % NG], 0, 8, a >> 6,
                                   0, buf, len);
            break;
        }
        case 6: { /* a playback line: text, or fields from the tables */
            uint8_t a = rd(d, n, &i);
            char line[128], err[128];
            if (a & 1) {
                size_t len = (size_t)(a >> 1) % 64;
                if (len > n - i)
                    len = n - i;
                memcpy(line, d + i, len);
                line[len] = 0;
                i += len;
            } else {
                uint8_t b = rd(d, n, &i), c = rd(d, n, &i);
                snprintf(line, sizeof line, "1 ipn:%d.9 %d %d %d %d %d\n",
                         conts[(a >> 1) % NG], 2 + ((a >> 3) & 1), PICK(t_subj, b),
                         PICK(t_cont, c), PICK(t_unit, c >> 3), PICK(t_role, b >> 3));
            }
            (void)ams_rams_playback(g->r, line, err, sizeof err);
            break;
        }
        case 7: { /* a module leaves */
            uint8_t a = rd(d, n, &i);
            (void)ams_rams_module_left(g->r, PICK(t_unit, a), (a >> 2) & 7);
            break;
        }
        case 8:
            (void)ams_rams_start(g->r);
            break;
        case 9:
            (void)ams_rams_stop(g->r);
            break;
        case 10:
            restart(g);
            break;
        case 11: /* the network delivers */
            pump(wd);
            break;
        case 12: /* the network loses what is in flight */
            clear(wd);
            break;
        case 13: { /* callbacks fail, or work again */
            uint8_t a = rd(d, n, &i);
            wd->fail_send = a & 1;
            wd->fail_sub = (a >> 1) & 1;
            wd->fail_deliver = (a >> 2) & 1;
            break;
        }
        case 14: { /* a batch offered to the order, then what it releases */
            uint8_t a = rd(d, n, &i);
            if (a & 0x80)
                inc++;
            seq = (a & 0x40) ? seq + (a & 7) : seq - (a & 3);
            now += (a >> 3) & 7;
            uint8_t b[4] = {a, a, a, a};
            (void)ams_rams_order_offer(ord, inc, seq, b, (size_t)(a & 3), now);
            uint8_t *rel;
            size_t rlen;
            int k = 0;
            while (k++ < 1000 && ams_rams_order_next(ord, now, 5, &rel, &rlen) == 1)
                free(rel);
            break;
        }
        default: { /* walk what it shows */
            int nn = 0, c, dcl, t;
            const char *eid;
            for (int k = 0; ams_rams_neighbor(g->r, k, &c, &eid, &dcl, &t, &nn) == 0; k++)
                if (!eid || (dcl != 0 && dcl != 1))
                    __builtin_trap();
            ams_rams_stats st;
            ams_rams_get_stats(g->r, &st);
            uint64_t in = 0;
            for (int k = 0; k < 7; k++)
                in += st.by_cc_in[k];
            if (in > st.pdus_in)
                __builtin_trap(); /* more PDUs by code than PDUs */
            uint64_t kept, skipped, dups;
            ams_rams_order_counts(ord, &kept, &skipped, &dups);
            uint8_t h[AMS_RAMS_BATCH_HDR];
            ams_rams_batch_header(inc, seq, h);
            uint32_t hi;
            uint64_t hs;
            if (!ams_rams_batch_parse(h, sizeof h, &hi, &hs) || hi != inc || hs != seq)
                __builtin_trap(); /* a batch header does not read back */
            char s[64];
            (void)ams_rams_state(g->r, s, sizeof s);
            break;
        }
        }
        tern_fuzz_watch_check(&w, "step");
    }
    tern_fuzz_watch_start(&w);
    pump(wd);
    tern_fuzz_watch_check(&w, "last pump");
out:
    clear(wd);
    ams_rams_order_free(ord);
    for (int k = 0; k < NG; k++) {
        ams_rams_free(wd->g[k].r);
    }
    return w.slow;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return tern_fuzz_replay(run, data, size);
}
