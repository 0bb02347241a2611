/* The simulated network of CFDP entities (cfdp_sim.h). PDUs in flight sit
 * in a heap ordered by arrival time (then by send order, so equal delays
 * keep FIFO order); each step delivers the earliest PDU or runs the
 * earliest entity timer, whichever is first. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cfdp_sim.h"

typedef struct pkt {
    uint64_t at, seq, from, to;
    size_t len;
    uint8_t b[];
} pkt;

typedef struct node {
    struct cfdp_sim *sim;
    uint64_t id;
    cfdp_entity_cfg cfg;
    cfdp_peer_cfg *peers;
    cfdp_entity *e;
    int blocked; /* send returned -EAGAIN: owed a transport_ready */
} node;

typedef struct link {
    uint64_t from, to;
    cfdp_link_cfg cfg;
    cfdp_outage *out;
    uint32_t inflight;
} link;

struct cfdp_sim {
    uint64_t now, rng, seq;
    node **nodes;
    size_t nn;
    link *links;
    size_t nl;
    pkt **heap;
    size_t hn, hcap;
    cfdp_sim_filter filter;
    void *fctx;
    cfdp_sim_stats st;
};

TERN_API uint64_t cfdp_sim_rand(cfdp_sim *s)
{
    /* splitmix64 */
    uint64_t z = (s->rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double unit(cfdp_sim *s)
{
    return (double)(cfdp_sim_rand(s) >> 11) * (1.0 / 9007199254740992.0);
}

static int before(const pkt *a, const pkt *b)
{
    return a->at < b->at || (a->at == b->at && a->seq < b->seq);
}

static int heap_push(cfdp_sim *s, pkt *p)
{
    if (s->hn == s->hcap) {
        size_t c = s->hcap ? s->hcap * 2 : 256;
        pkt **h = realloc(s->heap, c * sizeof *h);
        if (!h)
            return -ENOMEM;
        s->heap = h;
        s->hcap = c;
    }
    size_t i = s->hn++;
    s->heap[i] = p;
    while (i && before(s->heap[i], s->heap[(i - 1) / 2])) {
        pkt *x = s->heap[i];
        s->heap[i] = s->heap[(i - 1) / 2];
        s->heap[(i - 1) / 2] = x;
        i = (i - 1) / 2;
    }
    return 0;
}

static pkt *heap_pop(cfdp_sim *s)
{
    pkt *top = s->heap[0];
    s->heap[0] = s->heap[--s->hn];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < s->hn && before(s->heap[l], s->heap[m]))
            m = l;
        if (r < s->hn && before(s->heap[r], s->heap[m]))
            m = r;
        if (m == i)
            break;
        pkt *x = s->heap[i];
        s->heap[i] = s->heap[m];
        s->heap[m] = x;
        i = m;
    }
    return top;
}

static link *find_link(cfdp_sim *s, uint64_t from, uint64_t to)
{
    for (size_t i = 0; i < s->nl; i++)
        if (s->links[i].from == from && s->links[i].to == to)
            return &s->links[i];
    return NULL;
}

static node *find_node(const cfdp_sim *s, uint64_t id)
{
    for (size_t i = 0; i < s->nn; i++)
        if (s->nodes[i]->id == id)
            return s->nodes[i];
    return NULL;
}

static int in_outage(const link *l, uint64_t t)
{
    for (size_t i = 0; i < l->cfg.noutages; i++)
        if (t >= l->out[i].start_ms && t < l->out[i].end_ms)
            return 1;
    return 0;
}

static int enqueue(cfdp_sim *s, link *l, const uint8_t *b, size_t len)
{
    pkt *p = malloc(sizeof *p + len);
    if (!p)
        return -ENOMEM;
    uint64_t j = l->cfg.jitter_ms ? cfdp_sim_rand(s) % l->cfg.jitter_ms : 0;
    p->at = s->now + l->cfg.delay_ms + j;
    p->seq = s->seq++;
    p->from = l->from;
    p->to = l->to;
    p->len = len;
    memcpy(p->b, b, len);
    if (heap_push(s, p)) {
        free(p);
        return -ENOMEM;
    }
    l->inflight++;
    return 0;
}

static int sim_send(void *ctx, uint64_t dst, const uint8_t *b, size_t len)
{
    node *n = ctx;
    cfdp_sim *s = n->sim;
    link *l = find_link(s, n->id, dst);
    if (!l) {
        s->st.unroutable++;
        return -EHOSTUNREACH;
    }
    if (l->cfg.max_inflight && l->inflight >= l->cfg.max_inflight) {
        s->st.busy++;
        n->blocked = 1;
        return -EAGAIN;
    }
    s->st.sent++;
    if (s->filter && s->filter(s->fctx, n->id, dst, b, len)) {
        s->st.filtered++;
        return 0;
    }
    if (in_outage(l, s->now)) {
        s->st.outage_lost++;
        return 0;
    }
    if (l->cfg.loss > 0 && unit(s) < l->cfg.loss) {
        s->st.lost++;
        return 0;
    }
    int rc = enqueue(s, l, b, len);
    if (rc == 0 && l->cfg.dup > 0 && unit(s) < l->cfg.dup) {
        s->st.duplicated++;
        enqueue(s, l, b, len);
    }
    return rc;
}

TERN_API int cfdp_sim_new(uint64_t seed, cfdp_sim **out)
{
    cfdp_sim *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    s->rng = seed;
    *out = s;
    return 0;
}

TERN_API void cfdp_sim_free(cfdp_sim *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nn; i++) {
        cfdp_entity_free(s->nodes[i]->e);
        free(s->nodes[i]->peers);
        free(s->nodes[i]);
    }
    for (size_t i = 0; i < s->nl; i++)
        free(s->links[i].out);
    for (size_t i = 0; i < s->hn; i++)
        free(s->heap[i]);
    free(s->nodes);
    free(s->links);
    free(s->heap);
    free(s);
}

static int make_entity(node *n)
{
    cfdp_host h = {.ctx = n, .send = sim_send, .queue_indications = 1};
    n->cfg.peers = n->peers;
    return cfdp_entity_new(&n->cfg, &h, &n->e);
}

TERN_API int cfdp_sim_add_entity(cfdp_sim *s, const cfdp_entity_cfg *cfg, cfdp_entity **e)
{
    if (!s || !cfg || find_node(s, cfg->id))
        return -EINVAL;
    node *n = calloc(1, sizeof *n);
    node **nv = realloc(s->nodes, (s->nn + 1) * sizeof *nv);
    if (!n || !nv) {
        free(n);
        if (nv)
            s->nodes = nv;
        return -ENOMEM;
    }
    s->nodes = nv;
    n->sim = s;
    n->id = cfg->id;
    n->cfg = *cfg;
    if (cfg->npeers) {
        n->peers = malloc(cfg->npeers * sizeof *n->peers);
        if (!n->peers) {
            free(n);
            return -ENOMEM;
        }
        memcpy(n->peers, cfg->peers, cfg->npeers * sizeof *n->peers);
    }
    int rc = make_entity(n);
    if (rc) {
        free(n->peers);
        free(n);
        return rc;
    }
    s->nodes[s->nn++] = n;
    if (e)
        *e = n->e;
    return 0;
}

TERN_API cfdp_entity *cfdp_sim_entity(const cfdp_sim *s, uint64_t id)
{
    node *n = find_node(s, id);
    return n ? n->e : NULL;
}

TERN_API int cfdp_sim_restart(cfdp_sim *s, uint64_t id, cfdp_entity **e)
{
    node *n = find_node(s, id);
    if (!n)
        return TERN_ENOTFOUND;
    cfdp_entity_free(n->e);
    n->e = NULL;
    n->blocked = 0;
    int rc = make_entity(n);
    if (rc == 0 && e)
        *e = n->e;
    return rc;
}

TERN_API int cfdp_sim_link(cfdp_sim *s, uint64_t from, uint64_t to,
                           const cfdp_link_cfg *cfg)
{
    if (!s || !cfg)
        return -EINVAL;
    link *l = find_link(s, from, to);
    if (!l) {
        link *lv = realloc(s->links, (s->nl + 1) * sizeof *lv);
        if (!lv)
            return -ENOMEM;
        s->links = lv;
        l = &s->links[s->nl++];
        memset(l, 0, sizeof *l);
        l->from = from;
        l->to = to;
    }
    free(l->out);
    l->out = NULL;
    l->cfg = *cfg;
    if (cfg->noutages) {
        l->out = malloc(cfg->noutages * sizeof *l->out);
        if (!l->out) {
            l->cfg.noutages = 0;
            return -ENOMEM;
        }
        memcpy(l->out, cfg->outages, cfg->noutages * sizeof *l->out);
    }
    l->cfg.outages = l->out;
    return 0;
}

TERN_API int cfdp_sim_link2(cfdp_sim *s, uint64_t a, uint64_t b, const cfdp_link_cfg *cfg)
{
    int rc = cfdp_sim_link(s, a, b, cfg);
    return rc ? rc : cfdp_sim_link(s, b, a, cfg);
}

TERN_API void cfdp_sim_set_filter(cfdp_sim *s, cfdp_sim_filter f, void *ctx)
{
    s->filter = f;
    s->fctx = ctx;
}

TERN_API uint64_t cfdp_sim_now(const cfdp_sim *s)
{
    return s->now;
}

/* The earliest thing to do: 1 and *at set, or 0 if nothing is scheduled. */
static int next_event(const cfdp_sim *s, uint64_t *at)
{
    uint64_t t = UINT64_MAX;
    if (s->hn)
        t = s->heap[0]->at;
    for (size_t i = 0; i < s->nn; i++) {
        uint64_t d = cfdp_entity_next_deadline(s->nodes[i]->e);
        if (d < t)
            t = d;
    }
    *at = t < s->now ? s->now : t;
    return t != UINT64_MAX;
}

static void step(cfdp_sim *s)
{
    s->st.events++;
    if (s->hn && s->heap[0]->at <= s->now) {
        pkt *p = heap_pop(s);
        link *l = find_link(s, p->from, p->to);
        if (l && l->inflight)
            l->inflight--;
        node *dst = find_node(s, p->to);
        if (dst) {
            s->st.delivered++;
            cfdp_entity_pdu_in(dst->e, s->now, p->b, p->len);
        }
        node *src = find_node(s, p->from);
        if (src && src->blocked) {
            src->blocked = 0;
            cfdp_entity_transport_ready(src->e, s->now);
        }
        free(p);
        return;
    }
    for (size_t i = 0; i < s->nn; i++)
        if (cfdp_entity_next_deadline(s->nodes[i]->e) <= s->now)
            cfdp_entity_advance(s->nodes[i]->e, s->now);
}

TERN_API int cfdp_sim_run_until(cfdp_sim *s, uint64_t limit_ms, int (*stop)(void *arg),
                                void *arg)
{
    for (;;) {
        if (stop && stop(arg))
            return 0;
        uint64_t at;
        if (!next_event(s, &at))
            return stop ? -EAGAIN : 0;
        if (at > limit_ms) {
            s->now = limit_ms;
            return -ETIMEDOUT;
        }
        s->now = at;
        step(s);
    }
}

TERN_API int cfdp_sim_run(cfdp_sim *s, uint64_t until_ms)
{
    int rc = cfdp_sim_run_until(s, until_ms, NULL, NULL);
    if (s->now < until_ms)
        s->now = until_ms;
    return rc == -ETIMEDOUT ? 0 : rc;
}

TERN_API int cfdp_sim_run_idle(cfdp_sim *s, uint64_t limit_ms)
{
    return cfdp_sim_run_until(s, limit_ms, NULL, NULL);
}

TERN_API void cfdp_sim_stats_get(const cfdp_sim *s, cfdp_sim_stats *out)
{
    *out = s->st;
}
