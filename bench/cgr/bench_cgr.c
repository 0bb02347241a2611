/* bench_cgr: Contact Graph Routing route computation time.
 *
 *   bench_cgr --contacts C --nodes N [--queries Q] [--seed S]
 *
 * Builds a random contact plan of C contacts among N nodes over one day
 * (each contact between two random nodes, starting at a random time,
 * 5 to 60 minutes long, 10 kB/s to 1 MB/s; a range per pair of nodes, 1 s
 * to 10 min; node 1 — the one routing — gets C/N of the contacts as its
 * own), then for Q random destinations among those node 1 can reach
 * measures:
 *   fresh:    bp_cgr_find with the route lists forgotten first (the list of
 *             up to 8 routes is computed, then the bundle's route chosen);
 *   fresh1:   the same with lists of one route (one Dijkstra search);
 *   cached:   bp_cgr_find with the list already there;
 *   baseline: a plain Dijkstra over the static node graph (an edge per pair
 *             of nodes with a contact, the range's light time as its weight),
 *             the same binary heap, same destinations.
 * Also the time to build the graph from the plan. Prints one JSON object
 * with medians, 90th percentiles and the share of destinations reached.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bp_cgr.h"
#include "bp_plan.h"
#include "tern/rc.h"

#define T0 849320526000ULL

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void die(const char *what, int rc)
{
    fprintf(stderr, "bench_cgr: %s: %s\n", what, tern_strerror(rc));
    exit(1);
}

static uint64_t rng_state;

static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void stats(double *v, size_t n, double *med, double *p90)
{
    qsort(v, n, sizeof *v, cmp_double);
    *med = n ? (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2) : 0;
    *p90 = n ? v[(n * 9) / 10 < n ? (n * 9) / 10 : n - 1] : 0;
}

/* ------------------------------------------- the baseline: static Dijkstra */

typedef struct edge {
    uint32_t to;
    uint32_t w;
} edge;

typedef struct sgraph {
    uint32_t n;
    uint32_t *start; /* n + 1 */
    edge *e;
    uint64_t *dist;
    uint32_t *heap_node;
    uint64_t *heap_key;
} sgraph;

static uint64_t static_dijkstra(sgraph *g, uint32_t src, uint32_t dst)
{
    for (uint32_t i = 0; i < g->n; i++)
        g->dist[i] = UINT64_MAX;
    size_t nh = 0;
    g->dist[src] = 0;
    g->heap_node[nh] = src;
    g->heap_key[nh++] = 0;
    while (nh) {
        uint32_t v = g->heap_node[0];
        uint64_t k = g->heap_key[0];
        nh--;
        uint32_t lastn = g->heap_node[nh];
        uint64_t lastk = g->heap_key[nh];
        size_t i = 0;
        for (;;) { /* sift down */
            size_t c = 2 * i + 1;
            if (c >= nh)
                break;
            if (c + 1 < nh && g->heap_key[c + 1] < g->heap_key[c])
                c++;
            if (g->heap_key[c] >= lastk)
                break;
            g->heap_node[i] = g->heap_node[c];
            g->heap_key[i] = g->heap_key[c];
            i = c;
        }
        if (nh) {
            g->heap_node[i] = lastn;
            g->heap_key[i] = lastk;
        }
        if (k != g->dist[v])
            continue;
        if (v == dst)
            return k;
        for (uint32_t j = g->start[v]; j < g->start[v + 1]; j++) {
            uint64_t d = k + g->e[j].w;
            uint32_t u = g->e[j].to;
            if (d >= g->dist[u])
                continue;
            g->dist[u] = d;
            size_t p = nh++; /* sift up */
            while (p > 0 && g->heap_key[(p - 1) / 2] > d) {
                g->heap_node[p] = g->heap_node[(p - 1) / 2];
                g->heap_key[p] = g->heap_key[(p - 1) / 2];
                p = (p - 1) / 2;
            }
            g->heap_node[p] = u;
            g->heap_key[p] = d;
        }
    }
    return UINT64_MAX;
}

/* ------------------------------------------------------------------- main */

int main(int argc, char **argv)
{
    unsigned contacts = 1000, nodes = 50, queries = 200;
    uint64_t seed = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--contacts") && i + 1 < argc)
            contacts = (unsigned)strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--nodes") && i + 1 < argc)
            nodes = (unsigned)strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--queries") && i + 1 < argc)
            queries = (unsigned)strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 10);
        else {
            fprintf(stderr,
                    "usage: bench_cgr --contacts C --nodes N [--queries Q] [--seed S]\n");
            return 2;
        }
    }
    if (nodes < 2 || !contacts || !queries) {
        fprintf(stderr, "bench_cgr: need --nodes >= 2, --contacts and --queries > 0\n");
        return 2;
    }
    rng_state = seed;

    /* the plan, as ionadmin text */
    size_t cap = (size_t)contacts * 64 + (size_t)nodes * nodes * 48 + 64, len = 0;
    char *text = malloc(cap);
    uint32_t *owlt = calloc((size_t)nodes * nodes, sizeof *owlt); /* 0: no range yet */
    if (!text || !owlt)
        die("plan", -ENOMEM);
    text[0] = '\0';
    unsigned own = contacts / nodes > 2 ? contacts / nodes : 2;
    for (unsigned i = 0; i < contacts; i++) {
        unsigned a = i < own ? 1 : 1 + (unsigned)(rnd() % nodes);
        unsigned b = 1 + (unsigned)(rnd() % nodes);
        while (b == a)
            b = 1 + (unsigned)(rnd() % nodes);
        unsigned start = (unsigned)(rnd() % 86400), dur = 300 + (unsigned)(rnd() % 3300);
        uint64_t rate = 10000 + rnd() % 990000;
        len += (size_t)snprintf(text + len, cap - len,
                                "a contact +%u +%u %u %u %" PRIu64 "\n", start,
                                start + dur, a, b, rate);
        unsigned lo = a < b ? a : b, hi = a < b ? b : a;
        uint32_t *o = &owlt[(size_t)(lo - 1) * nodes + (hi - 1)];
        if (!*o) {
            *o = 1 + (uint32_t)(rnd() % 600);
            len += (size_t)snprintf(text + len, cap - len,
                                    "a range +0 +200000 %u %u %u\n", lo, hi, *o);
        }
    }
    bp_plan *plan;
    tern_rc *rcf;
    int rc = bp_plan_new(&plan);
    if (rc || (rc = tern_rc_parse(&rcf, "bench.rc", text, len, "ionadmin")))
        die("parse", rc);
    for (size_t i = 0; i < tern_rc_count(rcf); i++) {
        char msg[256];
        rc = bp_ionadmin_apply(plan, tern_rc_at(rcf, i), T0, msg, sizeof msg);
        if (rc < 0) {
            fprintf(stderr, "bench_cgr: %s\n", msg);
            return 1;
        }
    }
    tern_rc_free(rcf);
    free(text);

    /* the engines: lists of 8 routes (the default) and of 1 */
    double t = now_ms();
    bp_cgr *c, *c1;
    if ((rc = bp_cgr_new(plan, 1, NULL, NULL, &c)))
        die("bp_cgr_new", rc);
    double build_ms = now_ms() - t;
    bp_cgr_cfg one = {.max_routes = 1};
    if ((rc = bp_cgr_new(plan, 1, &one, NULL, &c1)))
        die("bp_cgr_new", rc);

    /* the static graph: an edge each way per pair with a range */
    sgraph g = {.n = nodes};
    g.start = calloc(nodes + 1, sizeof *g.start);
    g.e = malloc((size_t)nodes * nodes * sizeof *g.e);
    g.dist = malloc(nodes * sizeof *g.dist);
    g.heap_node = malloc((size_t)nodes * nodes * sizeof *g.heap_node + 64);
    g.heap_key = malloc((size_t)nodes * nodes * sizeof *g.heap_key + 64);
    if (!g.start || !g.e || !g.dist || !g.heap_node || !g.heap_key)
        die("graph", -ENOMEM);
    size_t ne = 0;
    for (unsigned a = 0; a < nodes; a++) {
        g.start[a] = (uint32_t)ne;
        for (unsigned b = 0; b < nodes; b++) {
            unsigned lo = a < b ? a : b, hi = a < b ? b : a;
            uint32_t w = a == b ? 0 : owlt[(size_t)lo * nodes + hi];
            if (w)
                g.e[ne++] = (edge){b, w * 1000};
        }
    }
    g.start[nodes] = (uint32_t)ne;

    double *fresh = malloc(queries * sizeof *fresh),
           *fresh1 = malloc(queries * sizeof *fresh1),
           *cached = malloc(queries * sizeof *cached),
           *base = malloc(queries * sizeof *base);
    uint64_t *dests = malloc(queries * sizeof *dests);
    if (!fresh || !fresh1 || !cached || !base || !dests)
        die("samples", -ENOMEM);
    unsigned found = 0, hops = 0;
    /* destinations node 1 can reach at all (random plans leave some nodes
     * without a route in time); all of them if none is */
    uint64_t *reach = malloc(nodes * sizeof *reach);
    unsigned nreach = 0;
    bp_cgr_route r;
    if (!reach)
        die("samples", -ENOMEM);
    for (uint64_t d = 2; d <= nodes; d++)
        if (bp_cgr_routes(c1, T0, d, &r, 1))
            reach[nreach++] = d;
    for (unsigned q = 0; q < queries; q++)
        dests[q] = nreach ? reach[rnd() % nreach] : 2 + rnd() % (nodes - 1);
    for (unsigned q = 0; q < queries; q++) {
        bp_cgr_bundle b = {.dest = dests[q],
                           .size = 1000,
                           .expire_ms = UINT64_MAX,
                           .priority = BP_PRIO_STANDARD};
        bp_cgr_forget_routes(c);
        t = now_ms();
        rc = bp_cgr_find(c, T0, &b, &r);
        fresh[q] = now_ms() - t;
        if (rc == 0) {
            found++;
            hops += r.nhops;
        }
        bp_cgr_forget_routes(c1);
        t = now_ms();
        bp_cgr_find(c1, T0, &b, &r);
        fresh1[q] = now_ms() - t;
        t = now_ms();
        bp_cgr_find(c, T0, &b, &r); /* the list computed just above */
        cached[q] = (now_ms() - t) * 1000.0;
        t = now_ms();
        volatile uint64_t d = static_dijkstra(&g, 0, (uint32_t)(dests[q] - 1));
        (void)d;
        base[q] = now_ms() - t;
    }
    double fm, f9, f1m, f19, cm, c9, bm, b9;
    stats(fresh, queries, &fm, &f9);
    stats(fresh1, queries, &f1m, &f19);
    stats(cached, queries, &cm, &c9);
    stats(base, queries, &bm, &b9);
    bp_cgr_stats st;
    bp_cgr_stats_get(c, &st);
    printf(
        "{\"contacts\": %u, \"nodes\": %u, \"queries\": %u, \"graph_contacts\": %" PRIu64
        ", \"build_ms\": %.4f, \"fresh_ms\": %.5f, \"fresh_p90_ms\": %.5f, "
        "\"fresh1_ms\": %.5f, \"fresh1_p90_ms\": %.5f, \"cached_us\": %.4f, "
        "\"cached_p90_us\": %.4f, \"baseline_ms\": %.5f, \"baseline_p90_ms\": %.5f, "
        "\"found\": %.4f, \"reachable\": %.4f, \"mean_hops\": %.3f}\n",
        contacts, nodes, queries, st.contacts, build_ms, fm, f9, f1m, f19, cm, c9, bm, b9,
        (double)found / queries, (double)nreach / (nodes - 1),
        found ? (double)hops / found : 0.0);
    bp_cgr_free(c);
    bp_cgr_free(c1);
    bp_plan_free(plan);
    free(owlt);
    free(g.start);
    free(g.e);
    free(g.dist);
    free(g.heap_node);
    free(g.heap_key);
    free(fresh);
    free(fresh1);
    free(cached);
    free(base);
    free(dests);
    free(reach);
    return 0;
}
