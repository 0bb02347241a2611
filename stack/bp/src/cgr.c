/* Contact Graph Routing and contact-driven transmission (see bp_cgr.h).
 *
 * The graph: routable contacts sorted by (from node, start, to node), so a
 * node's outgoing contacts are one run of the array; nodes are numbered
 * densely in node-number order. Searches are Dijkstra over nodes by earliest
 * arrival: forwarding over a contact is FIFO (a later arrival at its from
 * node never arrives earlier at its to node, and never fits where an earlier
 * one did not), so the earliest arrival at each node is all a search needs
 * to keep, and the contact it came over gives the route back. Each node's
 * working state carries the search's epoch, so nothing is cleared between
 * searches.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_int.h"
#include "bp_cgr.h"
#include "bp_imc.h"
#include "tern/clock.h"

#define NONE      UINT32_MAX
#define NPRIO     3
#define MAX_LISTS 64

typedef struct ct {
    uint64_t from_ms, until_ms, rate, cap;
    uint32_t frm, to; /* node indexes */
    uint32_t owlt_ms;
    uint32_t pidx;          /* index in the plan's contacts */
    uint32_t supp;          /* == c->supp_epoch: suppressed while building a list */
    uint64_t booked[NPRIO]; /* bytes booked per class */
    uint64_t sent_base;     /* the duct's bytes_out when this contact began */
    bool based;
} ct;

typedef struct nwork {
    uint64_t arr;
    uint32_t hops, pred, epoch;
    bool done;
} nwork;

typedef struct rt {
    uint64_t arr, to_ms;
    uint32_t nhops;
    uint32_t hop[BP_CGR_MAX_HOPS];
} rt;

typedef struct dlist {
    bool valid;
    uint64_t valid_until;
    uint32_t n;
    rt *r;
} dlist;

typedef struct hent {
    uint64_t arr;
    uint32_t hops, node;
} hent;

/* What a bundle routed by the attached engine booked, so routing it again
 * first gives the volume back. */
typedef struct booking {
    uint64_t size;
    uint64_t first_until; /* forgotten once its first contact is over */
    uint32_t nhops;
    uint8_t prio;
    uint32_t hop[BP_CGR_MAX_HOPS];
} booking;

struct bp_cgr {
    const bp_plan *plan;
    uint64_t self;
    unsigned max_routes;
    tern_log *lg;

    uint64_t *nodes; /* sorted node numbers */
    uint32_t nnodes, self_idx;
    ct *cts;
    uint32_t ncts;
    uint32_t *adj; /* nnodes + 1: node v's contacts are cts[adj[v] .. adj[v+1]) */
    uint32_t *p2c; /* plan contact index -> graph contact or NONE */
    size_t np2c;

    nwork *w;
    uint32_t epoch, supp_epoch;
    hent *heap;
    size_t nheap, capheap;
    dlist *lists; /* per node index */

    bp__map bookings; /* bundle key -> booking */

    bp_agent *a;
    tern_timer tm;
    bool tm_init;
    bp_cgr_stats st;
};

/* ------------------------------------------------------------ arithmetic */

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* Milliseconds to send n bytes at rate bytes/s, rounded up. */
static uint64_t xmit_ms(uint64_t n, uint64_t rate)
{
    unsigned __int128 v = ((unsigned __int128)n * 1000u + rate - 1) / rate;
    return v > UINT64_MAX ? UINT64_MAX : (uint64_t)v;
}

static uint64_t max64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

static uint32_t node_idx(const bp_cgr *c, uint64_t node)
{
    uint32_t lo = 0, hi = c->nnodes;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (c->nodes[mid] < node)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < c->nnodes && c->nodes[lo] == node ? lo : NONE;
}

static uint64_t booked_ge(const ct *x, int p)
{
    uint64_t s = 0;
    for (int q = p; q < NPRIO; q++)
        s = sat_add(s, x->booked[q]);
    return s;
}

/* ----------------------------------------------------------------- graph */

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_range(const void *a, const void *b)
{
    const bp_range *x = a, *y = b;
    if (x->from_node != y->from_node)
        return x->from_node < y->from_node ? -1 : 1;
    if (x->to_node != y->to_node)
        return x->to_node < y->to_node ? -1 : 1;
    return x->from_ms < y->from_ms ? -1 : x->from_ms > y->from_ms;
}

static int cmp_ct(const void *a, const void *b)
{
    const ct *x = a, *y = b;
    if (x->frm != y->frm)
        return x->frm < y->frm ? -1 : 1;
    if (x->from_ms != y->from_ms)
        return x->from_ms < y->from_ms ? -1 : 1;
    if (x->to != y->to)
        return x->to < y->to ? -1 : 1;
    return x->pidx < y->pidx ? -1 : x->pidx > y->pidx;
}

/* Light time (ms) of a contact from a to b starting at t, from ranges sorted
 * by cmp_range: a range a -> b covering t, else one b -> a. */
static int range_owlt(const bp_range *r, size_t n, uint64_t a, uint64_t b, uint64_t t,
                      uint32_t *owlt_ms)
{
    for (int pass = 0; pass < 2; pass++) {
        uint64_t f = pass ? b : a, to = pass ? a : b;
        size_t lo = 0, hi = n;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (r[mid].from_node < f || (r[mid].from_node == f && r[mid].to_node < to))
                lo = mid + 1;
            else
                hi = mid;
        }
        for (size_t i = lo; i < n && r[i].from_node == f && r[i].to_node == to; i++) {
            if (r[i].from_ms > t)
                break;
            if (t < r[i].until_ms) {
                uint64_t ms = (uint64_t)r[i].owlt_s * 1000u;
                *owlt_ms = ms > UINT32_MAX ? UINT32_MAX : (uint32_t)ms;
                return 0;
            }
        }
    }
    return TERN_ENOTFOUND;
}

static void lists_free(bp_cgr *c)
{
    if (c->lists)
        for (uint32_t i = 0; i < c->nnodes; i++)
            free(c->lists[i].r);
    free(c->lists);
    c->lists = NULL;
}

/* The old graph's contact matching (from, to, start) in the new numbering of
 * nodes, or NONE. Old contacts are sorted by (from, start, to). */
static uint32_t old_match(const ct *old, uint32_t nold, const uint64_t *onodes,
                          uint64_t frm, uint64_t to, uint64_t from_ms)
{
    uint32_t lo = 0, hi = nold;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        uint64_t f = onodes[old[mid].frm];
        if (f < frm || (f == frm && old[mid].from_ms < from_ms))
            lo = mid + 1;
        else
            hi = mid;
    }
    for (uint32_t i = lo;
         i < nold && onodes[old[i].frm] == frm && old[i].from_ms == from_ms; i++)
        if (onodes[old[i].to] == to)
            return i;
    return NONE;
}

/* Builds the graph from the plan; bookings of contacts that stay are kept. */
static int build(bp_cgr *c)
{
    const bp_contact *pc;
    const bp_range *pr;
    size_t npc = bp_plan_contacts(c->plan, &pc), npr = bp_plan_ranges(c->plan, &pr);
    if (npc >= NONE)
        return TERN_EOVERFLOW;
    int rc = -ENOMEM;
    bp_range *rs = npr ? malloc(npr * sizeof *rs) : NULL;
    uint64_t *nodes = malloc((2 * npc + 1) * sizeof *nodes);
    ct *cts = npc ? malloc(npc * sizeof *cts) : NULL;
    uint32_t *p2c = malloc((npc + 1) * sizeof *p2c);
    if ((npr && !rs) || !nodes || (npc && !cts) || !p2c)
        goto fail;
    if (npr) {
        memcpy(rs, pr, npr * sizeof *rs);
        qsort(rs, npr, sizeof *rs, cmp_range);
    }
    /* node numbers: both ends of every contact that can be a hop, and self */
    size_t nn = 0;
    nodes[nn++] = c->self;
    for (size_t i = 0; i < npc; i++)
        if (pc[i].from_node != pc[i].to_node && pc[i].rate) {
            nodes[nn++] = pc[i].from_node;
            nodes[nn++] = pc[i].to_node;
        }
    qsort(nodes, nn, sizeof *nodes, cmp_u64);
    size_t u = 0;
    for (size_t i = 0; i < nn; i++)
        if (!u || nodes[u - 1] != nodes[i])
            nodes[u++] = nodes[i];
    nn = u;

    bp_cgr tmp = {.nodes = nodes, .nnodes = (uint32_t)nn};
    uint32_t n = 0;
    uint64_t no_range = 0;
    for (size_t i = 0; i < npc; i++) {
        const bp_contact *x = &pc[i];
        if (x->from_node == x->to_node || !x->rate)
            continue; /* loopback, or carries nothing */
        uint32_t owlt;
        if (range_owlt(rs, npr, x->from_node, x->to_node, x->from_ms, &owlt)) {
            no_range++;
            continue;
        }
        ct *y = &cts[n++];
        memset(y, 0, sizeof *y);
        y->from_ms = x->from_ms;
        y->until_ms = x->until_ms;
        y->rate = x->rate;
        unsigned __int128 cap =
            (unsigned __int128)x->rate * (x->until_ms - x->from_ms) / 1000u;
        y->cap = cap > UINT64_MAX ? UINT64_MAX : (uint64_t)cap;
        y->frm = node_idx(&tmp, x->from_node);
        y->to = node_idx(&tmp, x->to_node);
        y->owlt_ms = owlt;
        y->pidx = (uint32_t)i;
    }
    if (n)
        qsort(cts, n, sizeof *cts, cmp_ct);

    uint32_t *adj = calloc(nn + 1, sizeof *adj);
    nwork *w = calloc(nn, sizeof *w);
    dlist *lists = calloc(nn, sizeof *lists);
    if (!adj || !w || !lists) {
        free(adj);
        free(w);
        free(lists);
        goto fail;
    }
    for (uint32_t i = 0; i < n; i++)
        adj[cts[i].frm + 1]++;
    for (size_t v = 0; v < nn; v++)
        adj[v + 1] += adj[v];
    for (size_t i = 0; i <= npc; i++)
        p2c[i] = NONE;
    for (uint32_t i = 0; i < n; i++)
        p2c[cts[i].pidx] = i;

    /* carry bookings over; remember how old contacts map for the bookings map */
    uint32_t *o2n = c->ncts ? malloc(c->ncts * sizeof *o2n) : NULL;
    if (c->ncts && !o2n) {
        free(adj);
        free(w);
        free(lists);
        goto fail;
    }
    for (uint32_t i = 0; i < c->ncts; i++)
        o2n[i] = NONE;
    for (uint32_t i = 0; i < n && c->ncts; i++) {
        uint32_t k = old_match(c->cts, c->ncts, c->nodes, nodes[cts[i].frm],
                               nodes[cts[i].to], cts[i].from_ms);
        if (k == NONE)
            continue;
        memcpy(cts[i].booked, c->cts[k].booked, sizeof cts[i].booked);
        cts[i].sent_base = c->cts[k].sent_base;
        cts[i].based = c->cts[k].based;
        o2n[k] = i;
    }
    for (size_t s = 0; s < c->bookings.cap; s++) {
        booking *bk = c->bookings.keys[s] ? c->bookings.vals[s] : NULL;
        if (!bk)
            continue;
        for (uint32_t h = 0; h < bk->nhops; h++)
            bk->hop[h] = bk->hop[h] == NONE ? NONE : o2n[bk->hop[h]];
    }
    free(o2n);

    lists_free(c);
    free(c->nodes);
    free(c->cts);
    free(c->adj);
    free(c->p2c);
    free(c->w);
    c->nodes = nodes;
    c->nnodes = (uint32_t)nn;
    c->self_idx = node_idx(c, c->self);
    c->cts = cts;
    c->ncts = n;
    c->adj = adj;
    c->p2c = p2c;
    c->np2c = npc;
    c->w = w;
    c->epoch = 0;
    c->lists = lists;
    c->st.contacts = n;
    c->st.no_range = no_range;
    c->st.nodes = nn;
    free(rs);
    if (no_range)
        TERN_WARN(c->lg, "cgr",
                  "%" PRIu64
                  " contact(s) have no range covering their start: their light "
                  "time is unknown, they are not used for routing",
                  no_range);
    return 0;
fail:
    free(rs);
    free(nodes);
    free(cts);
    free(p2c);
    return rc;
}

/* ---------------------------------------------------------------- search */

static bool hent_less(const hent *x, const hent *y)
{
    return x->arr < y->arr || (x->arr == y->arr && x->hops < y->hops);
}

static int heap_push(bp_cgr *c, hent e)
{
    if (c->nheap == c->capheap) {
        size_t nc = c->capheap ? 2 * c->capheap : 256;
        hent *h = realloc(c->heap, nc * sizeof *h);
        if (!h)
            return -ENOMEM;
        c->heap = h;
        c->capheap = nc;
    }
    size_t i = c->nheap++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!hent_less(&e, &c->heap[p]))
            break;
        c->heap[i] = c->heap[p];
        i = p;
    }
    c->heap[i] = e;
    return 0;
}

static hent heap_pop(bp_cgr *c)
{
    hent top = c->heap[0], e = c->heap[--c->nheap];
    size_t i = 0;
    for (;;) {
        size_t k = 2 * i + 1;
        if (k >= c->nheap)
            break;
        if (k + 1 < c->nheap && hent_less(&c->heap[k + 1], &c->heap[k]))
            k++;
        if (!hent_less(&c->heap[k], &e))
            break;
        c->heap[i] = c->heap[k];
        i = k;
    }
    if (c->nheap)
        c->heap[i] = e;
    return top;
}

static uint64_t dtn_now(const bp_cgr *c)
{
    return tern_clock_dtn_ms(tern_loop_clock(bp_agent_loop(c->a)));
}

/* Bytes this node's contact x has handed to its convergence layer so far. */
static uint64_t local_sent(const bp_cgr *c, const ct *x, uint64_t now)
{
    if (!c->a || !x->based || now < x->from_ms || now >= x->until_ms)
        return 0;
    bp_outduct *od = bp_egress_plan_duct(c->a, c->nodes[x->to]);
    uint64_t out = od ? bp_outduct_bytes_out(od) : 0;
    return out > x->sent_base ? out - x->sent_base : 0;
}

/* When a bundle that is at x's from node at t is all at x's to node, or
 * false if x cannot carry it. b NULL: the best case (no size, nothing booked
 * ahead), as route lists are computed; unbooked: b's size, but nothing
 * booked ahead. */
static bool hop_time(const bp_cgr *c, const ct *x, uint64_t t, uint64_t now,
                     const bp_cgr_bundle *b, bool unbooked, uint64_t *arr)
{
    if (x->until_ms <= t)
        return false;
    uint64_t last;
    if (!b) {
        last = max64(t, x->from_ms);
    } else if (unbooked) {
        /* as if nothing were booked or sent: only the bundle's own size */
        if (x->cap < b->size)
            return false;
        last = sat_add(max64(t, x->from_ms), xmit_ms(b->size, x->rate));
        if (last > x->until_ms)
            return false;
    } else {
        uint64_t ahead = booked_ge(x, b->priority);
        if (ahead >= x->cap || x->cap - ahead < b->size)
            return false; /* its residual volume for this class cannot hold it */
        uint64_t first;
        if (x->frm == c->self_idx) {
            /* This node's own contact: its transmitter is busy with what the
             * duct has sent so far, then with what is booked ahead and not
             * yet sent. Which classes went is not known: assume lower ones
             * first (the pessimistic guess; exact with one class). */
            uint64_t sent = local_sent(c, x, now), lower = 0;
            for (int q = 0; q < b->priority; q++)
                lower = sat_add(lower, x->booked[q]);
            uint64_t sent_ge = sent > lower ? sent - lower : 0;
            uint64_t pending = ahead > sent_ge ? ahead - sent_ge : 0;
            uint64_t busy = max64(now, sat_add(x->from_ms, xmit_ms(sent, x->rate)));
            first = max64(sat_add(busy, xmit_ms(pending, x->rate)), t);
        } else {
            first = max64(t, sat_add(x->from_ms, xmit_ms(ahead, x->rate)));
        }
        last = sat_add(first, xmit_ms(b->size, x->rate));
        if (last > x->until_ms)
            return false;
    }
    *arr = sat_add(last, x->owlt_ms);
    return true;
}

/* Whether a contact to node index v may be a route's first hop. */
static bool first_hop_ok(const bp_cgr *c, uint32_t v, const bp_cgr_bundle *b)
{
    if (b && b->exclude && c->nodes[v] == b->exclude)
        return false;
    return !c->a || bp_egress_plan_duct(c->a, c->nodes[v]) != NULL;
}

/* The best route to node dst at now (see hop_time for b); with suppress,
 * contacts marked for this list are skipped. 0, or TERN_ENOTFOUND. */
static int search_mode(bp_cgr *c, uint64_t now, uint32_t dst, const bp_cgr_bundle *b,
                       bool suppress, bool unbooked, rt *out)
{
    c->st.searches++;
    uint32_t ep = ++c->epoch;
    if (ep == 0) { /* wrapped: old stamps could look current */
        for (uint32_t i = 0; i < c->nnodes; i++)
            c->w[i].epoch = 0;
        ep = c->epoch = 1;
    }
    nwork *w = c->w;
    uint32_t s = c->self_idx;
    w[s] = (nwork){.arr = now, .hops = 0, .pred = NONE, .epoch = ep};
    c->nheap = 0;
    if (heap_push(c, (hent){now, 0, s}))
        return -ENOMEM;
    uint64_t deadline = b ? b->expire_ms : UINT64_MAX;
    while (c->nheap) {
        hent e = heap_pop(c);
        nwork *v = &w[e.node];
        if (v->done || e.arr != v->arr || e.hops != v->hops)
            continue; /* superseded */
        v->done = true;
        if (e.node == dst)
            break;
        if (v->hops >= BP_CGR_MAX_HOPS)
            continue;
        for (uint32_t k = c->adj[e.node]; k < c->adj[e.node + 1]; k++) {
            const ct *x = &c->cts[k];
            if (x->from_ms > deadline)
                break; /* sorted by start: later ones cannot arrive in time */
            if (x->to == s || (suppress && x->supp == c->supp_epoch))
                continue;
            if (e.node == s && !first_hop_ok(c, x->to, b))
                continue;
            uint64_t arr;
            if (!hop_time(c, x, e.arr, now, b, unbooked, &arr) || arr > deadline)
                continue;
            nwork *u = &w[x->to];
            if (u->epoch != ep)
                *u = (nwork){.arr = UINT64_MAX, .pred = NONE, .epoch = ep};
            if (u->done)
                continue;
            if (arr < u->arr || (arr == u->arr && e.hops + 1 < u->hops)) {
                u->arr = arr;
                u->hops = e.hops + 1;
                u->pred = k;
                if (heap_push(c, (hent){arr, u->hops, x->to}))
                    return -ENOMEM;
            }
        }
    }
    if (w[dst].epoch != ep || !w[dst].done || dst == s)
        return TERN_ENOTFOUND;
    uint32_t n = w[dst].hops;
    out->nhops = n;
    out->arr = w[dst].arr;
    out->to_ms = UINT64_MAX;
    for (uint32_t v = dst, i = n; i-- > 0;) {
        uint32_t k = w[v].pred;
        out->hop[i] = k;
        if (c->cts[k].until_ms < out->to_ms)
            out->to_ms = c->cts[k].until_ms;
        v = c->cts[k].frm;
    }
    return 0;
}

static int search(bp_cgr *c, uint64_t now, uint32_t dst, const bp_cgr_bundle *b,
                  bool suppress, rt *out)
{
    return search_mode(c, now, dst, b, suppress, false, out);
}

/* The best route for b at now as if no contact had anything booked. */
static int search_unbooked(bp_cgr *c, uint64_t now, uint32_t dst, const bp_cgr_bundle *b,
                           rt *out)
{
    return search_mode(c, now, dst, b, false, true, out);
}

/* ------------------------------------------------------------ route lists */

static dlist *list_get(bp_cgr *c, uint64_t now, uint32_t dst, int *err)
{
    dlist *l = &c->lists[dst];
    *err = 0;
    if (l->valid && now < l->valid_until)
        return l;
    if (!l->r && !(l->r = malloc(c->max_routes * sizeof *l->r))) {
        *err = -ENOMEM;
        return NULL;
    }
    c->st.lists++;
    l->n = 0;
    l->valid_until = UINT64_MAX;
    if (++c->supp_epoch == 0) {
        for (uint32_t i = 0; i < c->ncts; i++)
            c->cts[i].supp = 0;
        c->supp_epoch = 1;
    }
    while (l->n < c->max_routes) {
        rt *r = &l->r[l->n];
        int rc = search(c, now, dst, NULL, true, r);
        if (rc == TERN_ENOTFOUND)
            break;
        if (rc) {
            *err = rc;
            return NULL;
        }
        l->n++;
        if (r->to_ms < l->valid_until)
            l->valid_until = r->to_ms;
        /* the next route may not use this one's limiting contact */
        uint32_t lim = r->hop[0];
        for (uint32_t h = 1; h < r->nhops; h++)
            if (c->cts[r->hop[h]].until_ms < c->cts[lim].until_ms)
                lim = r->hop[h];
        c->cts[lim].supp = c->supp_epoch;
    }
    l->valid = true;
    return l;
}

/* The projected arrival of bundle b over route r, or false if it cannot go. */
static bool project(const bp_cgr *c, uint64_t now, const rt *r, const bp_cgr_bundle *b,
                    uint64_t *pbat)
{
    uint64_t t = now;
    for (uint32_t h = 0; h < r->nhops; h++)
        if (!hop_time(c, &c->cts[r->hop[h]], t, now, b, false, &t))
            return false;
    if (t > b->expire_ms)
        return false;
    *pbat = t;
    return true;
}

/* ION's order: earlier arrival, fewer hops, later closing, smaller neighbour. */
static bool better(const bp_cgr *c, const rt *x, uint64_t px, const rt *y, uint64_t py)
{
    if (px != py)
        return px < py;
    if (x->nhops != y->nhops)
        return x->nhops < y->nhops;
    if (x->to_ms != y->to_ms)
        return x->to_ms > y->to_ms;
    return c->nodes[c->cts[x->hop[0]].to] < c->nodes[c->cts[y->hop[0]].to];
}

/* Chooses b's route (see bp_cgr_find). *off says it came from the per-bundle
 * search. */
static int choose(bp_cgr *c, uint64_t now, const bp_cgr_bundle *b, rt *out, bool *off)
{
    *off = false;
    if (b->priority < BP_PRIO_BULK || b->priority > BP_PRIO_EXPEDITED || !b->dest)
        return -EINVAL;
    uint32_t dst = node_idx(c, b->dest);
    if (dst == NONE || c->self_idx == NONE || dst == c->self_idx)
        return TERN_ENOTFOUND;
    int err;
    dlist *l = list_get(c, now, dst, &err);
    if (!l)
        return err;
    if (!l->n)
        return TERN_ENOTFOUND;
    const rt *best = NULL;
    uint64_t bp = 0;
    for (uint32_t i = 0; i < l->n; i++) {
        const rt *r = &l->r[i];
        uint64_t p;
        if (r->to_ms <= now || r->arr > b->expire_ms)
            continue;
        if (!first_hop_ok(c, c->cts[r->hop[0]].to, b) || !project(c, now, r, b, &p))
            continue;
        if (!best || better(c, r, p, best, bp)) {
            best = r;
            bp = p;
        }
    }
    if (best) {
        *out = *best;
        out->arr = bp;
        return 0;
    }
    /* Nothing on the list will do: a search counting this bundle's size and
     * the booked volume everywhere may find a route the list lacks. */
    int rc = search(c, now, dst, b, false, out);
    if (rc != TERN_ENOTFOUND) {
        *off = rc == 0;
        return rc;
    }
    if (l->r[0].arr > b->expire_ms)
        return -ETIME; /* even an empty network would deliver it too late */
    /* Whether contacts would bring it in time if nothing were booked on
     * them: then it waits for volume to free up (limbo), even when a route
     * that arrives too late still has room; else no route ever could. */
    rt r;
    rc = search_unbooked(c, now, dst, b, &r);
    if (rc == 0)
        return TERN_EFULL;
    return rc == TERN_ENOTFOUND ? -ETIME : rc;
}

static void book(bp_cgr *c, const uint32_t *hop, uint32_t n, uint64_t size, int prio,
                 bool give_back)
{
    for (uint32_t h = 0; h < n; h++) {
        if (hop[h] == NONE)
            continue;
        uint64_t *v = &c->cts[hop[h]].booked[prio];
        if (give_back)
            *v = *v > size ? *v - size : 0;
        else
            *v = sat_add(*v, size);
    }
}

static void to_public(const bp_cgr *c, const rt *r, bp_cgr_route *out)
{
    memset(out, 0, sizeof *out);
    out->arrival_ms = r->arr;
    out->to_ms = r->to_ms;
    out->nhops = r->nhops;
    for (uint32_t h = 0; h < r->nhops; h++) {
        const ct *x = &c->cts[r->hop[h]];
        out->hops[h] = (bp_cgr_hop){.from_node = c->nodes[x->frm],
                                    .to_node = c->nodes[x->to],
                                    .from_ms = x->from_ms,
                                    .until_ms = x->until_ms,
                                    .rate = x->rate,
                                    .owlt_ms = x->owlt_ms,
                                    .contact = x->pidx};
    }
    out->next_hop = r->nhops ? out->hops[0].to_node : 0;
}

/* ------------------------------------------------------------ public API */

TERN_API int bp_cgr_new(const bp_plan *plan, uint64_t self, const bp_cgr_cfg *cfg,
                        tern_log *lg, bp_cgr **out)
{
    if (!plan || !self || !out || (cfg && cfg->max_routes > MAX_LISTS))
        return -EINVAL;
    bp_cgr *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    c->plan = plan;
    c->self = self;
    c->lg = lg;
    c->max_routes = cfg && cfg->max_routes ? cfg->max_routes : 8;
    int rc = bp__map_init(&c->bookings, 64);
    if (!rc)
        rc = build(c);
    if (rc) {
        bp_cgr_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

static void bookings_clear(bp_cgr *c)
{
    for (size_t s = 0; s < c->bookings.cap; s++)
        if (c->bookings.keys[s])
            free(c->bookings.vals[s]);
    bp__map_free(&c->bookings);
}

TERN_API void bp_cgr_free(bp_cgr *c)
{
    if (!c)
        return;
    bp_cgr_detach(c);
    bookings_clear(c);
    lists_free(c);
    free(c->nodes);
    free(c->cts);
    free(c->adj);
    free(c->p2c);
    free(c->w);
    free(c->heap);
    free(c);
}

TERN_API void bp_cgr_forget_routes(bp_cgr *c)
{
    for (uint32_t i = 0; i < c->nnodes; i++)
        c->lists[i].valid = false;
}

TERN_API int bp_cgr_find(bp_cgr *c, uint64_t now_ms, const bp_cgr_bundle *b,
                         bp_cgr_route *out)
{
    if (!c || !b || !out)
        return -EINVAL;
    rt r;
    bool off;
    int rc = choose(c, now_ms, b, &r, &off);
    if (rc)
        return rc;
    to_public(c, &r, out);
    return 0;
}

TERN_API int bp_cgr_book(bp_cgr *c, const bp_cgr_route *r, uint64_t size, int priority)
{
    if (!c || !r || priority < 0 || priority >= NPRIO || r->nhops > BP_CGR_MAX_HOPS)
        return -EINVAL;
    uint32_t hop[BP_CGR_MAX_HOPS];
    for (unsigned h = 0; h < r->nhops; h++) {
        uint32_t p = r->hops[h].contact;
        if (p >= c->np2c || c->p2c[p] == NONE)
            return TERN_ENOTFOUND;
        hop[h] = c->p2c[p];
    }
    book(c, hop, r->nhops, size, priority, false);
    return 0;
}

TERN_API size_t bp_cgr_routes(bp_cgr *c, uint64_t now_ms, uint64_t dest,
                              bp_cgr_route *out, size_t cap)
{
    uint32_t dst = c ? node_idx(c, dest) : NONE;
    if (dst == NONE || c->self_idx == NONE || dst == c->self_idx)
        return 0;
    int err;
    dlist *l = list_get(c, now_ms, dst, &err);
    if (!l)
        return 0;
    for (uint32_t i = 0; i < l->n && i < cap; i++)
        to_public(c, &l->r[i], &out[i]);
    return l->n;
}

TERN_API void bp_cgr_stats_get(const bp_cgr *c, bp_cgr_stats *st)
{
    *st = c->st;
    st->bookings_live = c->bookings.n;
}

/* ----------------------------------------------------- attached: routing */

static uint64_t eid_key(uint64_t h, const bp_eid *e)
{
    h = bp__mix(h, e->scheme);
    if (e->scheme == BP_SCHEME_IPN)
        return bp__mix(bp__mix(h, e->node), e->service);
    for (size_t i = 0; i < e->ssp_len; i++)
        h = bp__mix(h, (uint8_t)e->ssp[i]);
    return h;
}

static uint64_t bundle_key(const bp_primary *p)
{
    uint64_t h = eid_key(0x6367720aULL, &p->src);
    h = bp__mix(bp__mix(h, p->ctime_ms), p->seq);
    if (p->flags & BP_FLAG_FRAGMENT)
        h = bp__mix(h, p->frag_offset + 1);
    return h ? h : 1;
}

static void forget_booking(bp_cgr *c, uint64_t key)
{
    booking *bk = bp__map_del(&c->bookings, key);
    if (!bk)
        return;
    book(c, bk->hop, bk->nhops, bk->size, bk->prio, true);
    free(bk);
}

static int router(void *ctx, bp_agent *a, const bp_route_req *q, bp_outduct **od)
{
    bp_cgr *c = ctx;
    (void)a;
    if (q->pri->dest.scheme != BP_SCHEME_IPN)
        return TERN_ENOTFOUND;
    /* the agent's name for the stored bundle: the release hook gets it too */
    uint64_t now = dtn_now(c), key = q->ref ? q->ref : bundle_key(q->pri);
    if (!q->probe)
        forget_booking(c, key); /* routed again: what it booked is free */
    bp_cgr_bundle b = {.dest = q->pri->dest.node,
                       .size = q->len,
                       .expire_ms = q->expire_ms,
                       .priority = q->priority,
                       .exclude = q->prev_node == c->self ? 0 : q->prev_node};
    rt r;
    bool off;
    int rc = choose(c, now, &b, &r, &off);
    if (rc == TERN_ENOTFOUND) {
        c->st.unknown++;
        return rc;
    }
    if (rc == -ETIME) {
        c->st.too_late++;
        TERN_INFO(c->lg, "cgr",
                  "bundle for node %" PRIu64 " deleted: no route brings it before it "
                  "expires",
                  b.dest);
        return BP_ROUTE_DELETE;
    }
    if (rc == TERN_EFULL) {
        c->st.no_capacity++;
        return rc;
    }
    if (rc)
        return rc;
    bp_outduct *d = bp_egress_plan_duct(c->a, c->nodes[c->cts[r.hop[0]].to]);
    if (!d)
        return TERN_ENOTFOUND; /* cannot happen: first hops need a duct */
    if (q->probe) {
        *od = d;
        return 0;
    }
    booking *bk = malloc(sizeof *bk);
    if (bk) {
        bk->size = b.size;
        bk->prio = (uint8_t)b.priority;
        bk->nhops = r.nhops;
        bk->first_until = c->cts[r.hop[0]].until_ms;
        memcpy(bk->hop, r.hop, r.nhops * sizeof *r.hop);
        if (bp__map_put(&c->bookings, key, bk)) {
            free(bk);
            bk = NULL;
        }
    }
    book(c, r.hop, r.nhops, b.size, b.priority, false);
    c->st.routed++;
    if (off)
        c->st.off_list++;
    *od = d;
    return 0;
}

/* A bundle deleted while queued: its volume is free for the next ones now,
 * not only once its first contact is over. */
static void release(void *ctx, bp_agent *a, uint64_t ref)
{
    (void)a;
    forget_booking(ctx, ref);
}

/* Forgets bookings whose first contact is over: the bundle left, or it was
 * routed again, or it is gone. */
static void bookings_prune(bp_cgr *c, uint64_t now)
{
    size_t n = 0, cap = c->bookings.n;
    uint64_t *dead = cap ? malloc(cap * sizeof *dead) : NULL;
    if (!dead)
        return;
    for (size_t s = 0; s < c->bookings.cap; s++) {
        booking *bk = c->bookings.keys[s] ? c->bookings.vals[s] : NULL;
        if (bk && bk->first_until <= now && n < cap)
            dead[n++] = c->bookings.keys[s];
    }
    for (size_t i = 0; i < n; i++)
        free(bp__map_del(&c->bookings, dead[i]));
    free(dead);
}

/* -------------------------------------------- attached: contact-driven */

struct gate_want {
    bp_outduct *od;
    bool open;
    uint64_t rate, until;
};

static void arm(bp_cgr *c, uint64_t now);

/* Sets every outduct's gate from the contacts of this node in effect now;
 * bundles queued on a duct whose contact ended are routed again. */
static void gates_apply(bp_cgr *c, uint64_t now)
{
    bp_agent *a = c->a;
    const bp_contact *pc;
    size_t npc = bp_plan_contacts(c->plan, &pc);
    size_t nd = bp_agent_outduct_count(a);
    struct gate_want *want = nd ? calloc(nd, sizeof *want) : NULL;
    bp_outduct **closing = nd ? calloc(nd, sizeof *closing) : NULL;
    size_t nw = 0, nclosing = 0;
    if (nd && (!want || !closing)) {
        free(want);
        free(closing);
        return;
    }
    for (size_t i = 0; i < npc; i++) {
        const bp_contact *x = &pc[i];
        if (x->from_node != c->self || x->to_node == c->self)
            continue;
        bp_outduct *od = bp_egress_plan_duct(a, x->to_node);
        if (!od)
            continue;
        size_t k = 0;
        while (k < nw && want[k].od != od)
            k++;
        if (k == nw) {
            if (nw == nd)
                continue;
            want[nw++] = (struct gate_want){od, false, 0, 0};
        }
        if (x->from_ms <= now && now < x->until_ms && x->rate) {
            want[k].open = true;
            if (x->rate > want[k].rate)
                want[k].rate = x->rate;
            if (x->until_ms > want[k].until)
                want[k].until = x->until_ms;
        }
    }
    for (size_t i = 0; i < nd; i++) {
        bp_outduct *od = bp_agent_outduct_at(a, i);
        size_t k = 0;
        while (k < nw && want[k].od != od)
            k++;
        int was = bp_outduct_gate(od, NULL);
        int now_gate = k == nw        ? BP_GATE_NONE
                       : want[k].open ? BP_GATE_OPEN
                                      : BP_GATE_CLOSED;
        if (now_gate == BP_GATE_OPEN && was != BP_GATE_OPEN) {
            c->st.gate_opened++;
            const char *name;
            bp_outduct_info(od, NULL, &name, NULL, NULL);
            TERN_INFO(c->lg, "cgr", "outduct %s open: a contact began (%" PRIu64 " B/s)",
                      name, want[k].rate);
        }
        if (was == BP_GATE_OPEN && now_gate == BP_GATE_CLOSED) {
            c->st.gate_closed++;
            closing[nclosing++] = od;
            const char *name;
            bp_outduct_info(od, NULL, &name, NULL, NULL);
            TERN_INFO(c->lg, "cgr", "outduct %s closed: no contact now", name);
        }
        bp_outduct_set_gate(od, now_gate, k == nw ? 0 : want[k].rate,
                            k == nw ? 0 : want[k].until);
    }
    /* this node's contacts in effect count what their duct sends from now */
    if (c->self_idx != NONE)
        for (uint32_t k = c->adj[c->self_idx]; k < c->adj[c->self_idx + 1]; k++) {
            ct *x = &c->cts[k];
            if (x->based || now < x->from_ms || now >= x->until_ms)
                continue;
            bp_outduct *od = bp_egress_plan_duct(a, c->nodes[x->to]);
            x->based = true;
            x->sent_base = od ? bp_outduct_bytes_out(od) : 0;
        }
    for (size_t i = 0; i < nclosing; i++)
        c->st.reforwarded += bp_outduct_reforward(closing[i]);
    free(want);
    free(closing);
}

static void boundary(tern_timer *t, void *arg)
{
    (void)t;
    bp_cgr *c = arg;
    uint64_t now = dtn_now(c);
    gates_apply(c, now);
    bookings_prune(c, now);
    bp_agent_stats st;
    bp_agent_stats_get(c->a, &st);
    if (st.limbo)
        bp_agent_reroute(c->a);
    arm(c, now);
}

/* The timer for the next start or end of a contact of this node. */
static void arm(bp_cgr *c, uint64_t now)
{
    const bp_contact *pc;
    size_t npc = bp_plan_contacts(c->plan, &pc);
    uint64_t next = UINT64_MAX;
    for (size_t i = 0; i < npc; i++) {
        if (pc[i].from_node != c->self || pc[i].to_node == c->self)
            continue;
        if (pc[i].from_ms > now && pc[i].from_ms < next)
            next = pc[i].from_ms;
        if (pc[i].until_ms > now && pc[i].until_ms < next)
            next = pc[i].until_ms;
    }
    tern_timer_stop(&c->tm);
    if (next == UINT64_MAX)
        return;
    uint64_t delta = next - now;
    if (delta > UINT64_MAX / TERN_NS_PER_MS / 2)
        return; /* centuries away */
    tern_timer_start(&c->tm, boundary, c, delta * TERN_NS_PER_MS, 0);
}

/* The contact plan's nodes are the multicast region too: petitions reach
 * them (bp_imc.h). */
static void region_tell(bp_cgr *c)
{
    for (uint32_t i = 0; c->a && i < c->nnodes; i++)
        bp_agent_imc_node_add(c->a, c->nodes[i]);
}

TERN_API int bp_cgr_attach(bp_cgr *c, bp_agent *a)
{
    if (!c || !a)
        return -EINVAL;
    if (c->a)
        return -EBUSY;
    if (!c->tm_init) {
        int rc = tern_timer_init(bp_agent_loop(a), &c->tm);
        if (rc)
            return rc;
        c->tm_init = true;
    }
    c->a = a;
    region_tell(c);
    bp_cgr_forget_routes(c); /* first hops now need an outduct */
    bp_agent_set_router(a, router, c);
    bp_agent_set_router_release(a, release, c);
    uint64_t now = dtn_now(c);
    gates_apply(c, now);
    arm(c, now);
    bp_agent_reroute(a);
    return 0;
}

TERN_API void bp_cgr_detach(bp_cgr *c)
{
    if (!c || !c->a)
        return;
    bp_agent *a = c->a;
    tern_timer_stop(&c->tm);
    bp_agent_set_router(a, NULL, NULL);
    bp_agent_set_router_release(a, NULL, NULL);
    c->a = NULL;
    for (size_t i = 0; i < bp_agent_outduct_count(a); i++)
        bp_outduct_set_gate(bp_agent_outduct_at(a, i), BP_GATE_NONE, 0, 0);
    bp_cgr_forget_routes(c);
}

TERN_API int bp_cgr_plan_changed(bp_cgr *c)
{
    if (!c)
        return -EINVAL;
    c->st.plan_changes++;
    int rc = build(c);
    if (rc)
        return rc;
    if (c->a) {
        region_tell(c);
        uint64_t now = dtn_now(c);
        gates_apply(c, now);
        arm(c, now);
        bp_agent_reroute(c->a);
    }
    return 0;
}

/* --------------------------------------------------------------- listings */

TERN_API size_t bp_cgr_local_contacts(bp_cgr *c, uint64_t now_ms,
                                      bp_cgr_contact_info *out, size_t cap)
{
    const bp_contact *pc;
    size_t npc = bp_plan_contacts(c->plan, &pc), n = 0;
    for (size_t i = 0; i < npc; i++)
        if (pc[i].from_node == c->self && pc[i].until_ms > now_ms)
            n++;
    if (!cap || !out)
        return n;
    /* the current ones (started: smaller start) come first anyway when sorted
     * by start, then index */
    uint32_t *idx = malloc((n ? n : 1) * sizeof *idx);
    if (!idx)
        return 0;
    size_t k = 0;
    for (size_t i = 0; i < npc; i++)
        if (pc[i].from_node == c->self && pc[i].until_ms > now_ms)
            idx[k++] = (uint32_t)i;
    for (size_t i = 1; i < k; i++) { /* insertion sort: a node has few contacts */
        uint32_t v = idx[i];
        size_t j = i;
        while (j > 0 && pc[idx[j - 1]].from_ms > pc[v].from_ms) {
            idx[j] = idx[j - 1];
            j--;
        }
        idx[j] = v;
    }
    for (size_t i = 0; i < k && i < cap; i++) {
        uint32_t pick = idx[i];
        bp_cgr_contact_info *o = &out[i];
        memset(o, 0, sizeof *o);
        o->contact = pc[pick];
        o->contact_idx = pick;
        o->in_effect = pc[pick].from_ms <= now_ms;
        unsigned __int128 capb = (unsigned __int128)pc[pick].rate *
                                 (pc[pick].until_ms - pc[pick].from_ms) / 1000u;
        o->capacity = capb > UINT64_MAX ? UINT64_MAX : (uint64_t)capb;
        uint32_t g = pick < c->np2c ? c->p2c[pick] : NONE;
        if (g != NONE) {
            o->routable = true;
            o->owlt_ms = c->cts[g].owlt_ms;
            memcpy(o->booked, c->cts[g].booked, sizeof o->booked);
        }
    }
    free(idx);
    return n;
}

#define PUT(...)                                                                         \
    do {                                                                                 \
        int k_ = snprintf(buf + (len < cap ? len : cap), len < cap ? cap - len : 0,      \
                          __VA_ARGS__);                                                  \
        if (k_ > 0)                                                                      \
            len += (size_t)k_;                                                           \
    } while (0)

TERN_API int bp_cgr_status(bp_cgr *c, uint64_t now_ms, char *buf, size_t cap)
{
    size_t len = 0;
    if (cap)
        buf[0] = '\0';
    const bp_cgr_stats *s = &c->st;
    PUT("cgr: %" PRIu64 " contacts in the graph (%" PRIu64 " without a range), %" PRIu64
        " nodes; bundles routed %" PRIu64 " (%" PRIu64
        " off the route lists), too late %" PRIu64 ", no capacity %" PRIu64
        ", unknown destination %" PRIu64 ", re-forwarded at a contact's end %" PRIu64
        "\n",
        s->contacts, s->no_range, s->nodes, s->routed, s->off_list, s->too_late,
        s->no_capacity, s->unknown, s->reforwarded);
    bp_cgr_contact_info ci[8];
    size_t n = bp_cgr_local_contacts(c, now_ms, ci, 8);
    PUT("contacts of this node, current then next (%zu):", n);
    for (size_t i = 0; i < n && i < 8; i++) {
        char f[32], u[32];
        bp_plan_format_time(ci[i].contact.from_ms, f, sizeof f);
        bp_plan_format_time(ci[i].contact.until_ms, u, sizeof u);
        uint64_t booked = ci[i].booked[0] + ci[i].booked[1] + ci[i].booked[2];
        /* why a contact is not in the graph: the reader wants the one reason */
        uint32_t owlt;
        const char *why = "";
        if (ci[i].routable)
            why = "";
        else if (ci[i].contact.to_node == c->self)
            why = " (this node: delivered here, not a hop)";
        else if (!ci[i].contact.rate)
            why = " (rate 0)";
        else if (bp_plan_owlt(c->plan, c->self, ci[i].contact.to_node,
                              ci[i].contact.from_ms, &owlt) != 0)
            why = " (no range)";
        else
            why = " (not in the contact graph)";
        PUT(" %s->%" PRIu64 " %s..%s %" PRIu64 " B/s booked %" PRIu64 "/%" PRIu64 " B%s;",
            ci[i].in_effect ? "[now] " : "", ci[i].contact.to_node, f, u,
            ci[i].contact.rate, booked, ci[i].capacity, why);
    }
    PUT("\n");
    size_t shown = 0;
    for (uint32_t d = 0; d < c->nnodes && shown < 16; d++) {
        const dlist *l = &c->lists[d];
        if (!l->valid || !l->n || now_ms >= l->valid_until)
            continue;
        shown++;
        PUT("routes to %" PRIu64 ":", c->nodes[d]);
        for (uint32_t i = 0; i < l->n && i < 4; i++) {
            char t[32];
            bp_plan_format_time(l->r[i].arr, t, sizeof t);
            PUT(" via %" PRIu64 " (%u hops, arrives %s)",
                c->nodes[c->cts[l->r[i].hop[0]].to], l->r[i].nhops, t);
        }
        PUT("\n");
    }
    return len > INT32_MAX ? INT32_MAX : (int)len;
}
