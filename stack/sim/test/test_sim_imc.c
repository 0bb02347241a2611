/* tern_sim: multicast (imc groups) across relays on the virtual clock. */
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bp_imc.h"
#include "tern_sim.h"
#include "tern_test.h"

#define NMAX 72

/* A network: nodes 1..n, undirected edges; next hop by breadth-first
 * search from each node (ties to the lower number, so routes agree). */
typedef struct net {
    int n;
    bool adj[NMAX + 1][NMAX + 1];
    int nh[NMAX + 1][NMAX + 1];
} net;

static void edge(net *t, int u, int v)
{
    t->adj[u][v] = t->adj[v][u] = true;
}

static void net_routes(net *t)
{
    for (int s = 1; s <= t->n; s++) {
        int q[NMAX + 1], first[NMAX + 1] = {0}, h = 0, e = 0;
        bool seen[NMAX + 1] = {false};
        seen[s] = true;
        q[e++] = s;
        while (h < e) {
            int u = q[h++];
            for (int v = 1; v <= t->n; v++)
                if (t->adj[u][v] && !seen[v]) {
                    seen[v] = true;
                    first[v] = u == s ? v : first[u];
                    q[e++] = v;
                }
        }
        for (int d = 1; d <= t->n; d++)
            t->nh[s][d] = d == s ? 0 : first[d];
    }
}

/* One node's host.rc: spans and outducts to its neighbours, a plan for
 * every other node through its next hop, and the endpoints given. */
static void node_rc(const net *t, int me, const char *eps, char *out, size_t cap)
{
    int k = snprintf(
        out, cap, "## begin ionadmin\n1 %d\n## end ionadmin\n## begin ltpadmin\n1 64\n",
        me);
    for (int v = 1; v <= t->n; v++)
        if (t->adj[me][v])
            k += snprintf(out + k, cap - (size_t)k,
                          "a span %d 64 64 1400 1 0 'udplso 127.0.0.1:1113'\n", v);
    k += snprintf(out + k, cap - (size_t)k,
                  "## end ltpadmin\n## begin bpadmin\n1\na scheme ipn 'ipnfw' "
                  "'ipnadminep'\na scheme imc 'imcfw' 'imcadminep'\n"
                  "a protocol ltp 1400 100\na induct ltp %d ltpcli\n%s",
                  me, eps ? eps : "");
    for (int v = 1; v <= t->n; v++)
        if (t->adj[me][v])
            k += snprintf(out + k, cap - (size_t)k, "a outduct ltp %d ltpclo\n", v);
    k += snprintf(out + k, cap - (size_t)k, "s\n## end bpadmin\n## begin ipnadmin\n");
    for (int d = 1; d <= t->n; d++)
        if (d != me && t->nh[me][d])
            k +=
                snprintf(out + k, cap - (size_t)k, "a plan %d ltp/%d\n", d, t->nh[me][d]);
    snprintf(out + k, cap - (size_t)k, "## end ipnadmin\n");
}

/* Builds the simulation: members[i] true makes node i a member of group 7
 * (endpoint imc:7.1, rule q). */
static tern_sim *build_seeded(const net *t, const bool *members, double loss,
                              uint64_t seed, uint64_t heap)
{
    tern_sim *s;
    tern_sim_cfg cfg = {.seed = seed, .heap_bytes = heap};
    if (tern_sim_new(&cfg, &s))
        return NULL;
    static char rc[16384];
    char err[512];
    for (int i = 1; i <= t->n; i++) {
        node_rc(t, i, members[i] ? "a endpoint imc:7.1 q\n" : NULL, rc, sizeof rc);
        if (tern_sim_node_add(s, NULL, rc, err, sizeof err, NULL)) {
            fprintf(stderr, "node %d: %s\n", i, err);
            tern_sim_free(s);
            return NULL;
        }
    }
    for (int u = 1; u <= t->n; u++)
        for (int v = u + 1; v <= t->n; v++)
            if (t->adj[u][v] && tern_sim_link_add(s, u, v, 20, 0, loss, 0)) {
                tern_sim_free(s);
                return NULL;
            }
    return s;
}

static tern_sim *build(const net *t, const bool *members, double loss)
{
    return build_seeded(t, members, loss, tt_seed(), 8 << 20);
}

/* The payload of bundle idx from node from: idx, from, then a pattern. */
static void payload(uint32_t idx, uint32_t from, uint8_t *buf, size_t len)
{
    memcpy(buf, &idx, 4);
    memcpy(buf + 4, &from, 4);
    for (size_t k = 8; k < len; k++)
        buf[k] = (uint8_t)(idx * 31 + from + k);
}

#define PLEN 1000

/* Takes every bundle queued at node's imc:7.1: counts[i] gets how many times
 * bundle i arrived; false (and *bad says why) if one is not what node from
 * sent. */
static bool drain_from(tern_sim *s, int node, int from, int nb, int *counts,
                       const char **bad)
{
    uint8_t buf[2048], want[PLEN];
    size_t len;
    char src[64], wsrc[64];
    snprintf(wsrc, sizeof wsrc, "ipn:%d.1", from);
    while (tern_sim_recv(s, (uint64_t)node, "imc:7.1", src, sizeof src, NULL, NULL, NULL,
                         buf, sizeof buf, &len) == 0) {
        uint32_t idx;
        if (len != PLEN || strcmp(src, wsrc)) {
            *bad = "wrong length or source";
            return false;
        }
        memcpy(&idx, buf, 4);
        if ((int)idx >= nb) {
            *bad = "bundle index out of range";
            return false;
        }
        payload(idx, (uint32_t)from, want, PLEN);
        if (memcmp(buf, want, PLEN)) {
            *bad = "payload bytes differ";
            return false;
        }
        counts[idx]++;
    }
    return true;
}

static bool drain(tern_sim *s, int node, int nb, int *counts)
{
    const char *bad;
    return drain_from(s, node, 1, nb, counts, &bad);
}

static int send_from(tern_sim *s, int from, int i0, int nb)
{
    uint8_t buf[PLEN];
    char src[32];
    snprintf(src, sizeof src, "ipn:%d.1", from);
    for (int i = i0; i < i0 + nb; i++) {
        payload((uint32_t)i, (uint32_t)from, buf, sizeof buf);
        int rc = tern_sim_send(s, (uint64_t)from, src, "imc:7.1", buf, sizeof buf, 0,
                               BP_PRIO_STANDARD, 0, 0, 0, NULL, NULL, NULL);
        if (rc)
            return rc;
    }
    return 0;
}

static int send_n(tern_sim *s, int from, int i0, int nb)
{
    return send_from(s, from, i0, nb);
}

static bp_imc_stats imc_stats(tern_sim *s, int node)
{
    bp_imc_stats st;
    bp_agent_imc_stats_get(tern_sim_node_agent(s, (uint64_t)node), &st);
    return st;
}

static bp_agent_stats bp_stats(tern_sim *s, int node)
{
    tern_sim_node_stats st;
    CHECK_OK(tern_sim_node_stats_get(s, (uint64_t)node, &st));
    return st.bp;
}

static tern_sim_link_stats link_stats(tern_sim *s, int a, int b)
{
    tern_sim_link_stats st;
    CHECK_OK(tern_sim_link_stats_get(s, (uint64_t)a, (uint64_t)b, &st));
    return st;
}

/* Line 1 - 2 - 3 - 4, members 2 and 4: node 3 relays without delivering,
 * each member gets each bundle once, and one copy crosses each link. */
TEST(imc_line_members_get_each_bundle_once)
{
    net t = {.n = 4};
    t.adj[1][2] = t.adj[2][1] = t.adj[2][3] = t.adj[3][2] = t.adj[3][4] = t.adj[4][3] =
        true;
    net_routes(&t);
    bool m[NMAX + 1] = {false};
    m[2] = m[4] = true;
    tern_sim *s = build(&t, m, 0);
    CHECK(s);
    tern_sim_run(s, 30000, 0); /* petitions settle */
    uint64_t mem[8];
    CHECK_EQ_U64(bp_agent_imc_members(tern_sim_node_agent(s, 1), 7, mem, 8), 2);
    CHECK_EQ_U64(mem[0], 2);
    CHECK_EQ_U64(mem[1], 4);
    enum { NB = 20 };
    bp_imc_stats st;
    bp_agent_imc_stats_get(tern_sim_node_agent(s, 1), &st);
    uint64_t copies0 = st.copies;
    CHECK_OK(send_n(s, 1, 0, NB));
    tern_sim_run(s, 120000, 0);
    int c2[NB] = {0}, c3[NB] = {0}, c4[NB] = {0};
    CHECK(drain(s, 2, NB, c2));
    CHECK(drain(s, 4, NB, c4));
    CHECK(drain(s, 3, NB, c3));
    for (int i = 0; i < NB; i++) {
        CHECK_EQ_INT(c2[i], 1);
        CHECK_EQ_INT(c4[i], 1);
        CHECK_EQ_INT(c3[i], 0);
    }
    bp_agent_imc_stats_get(tern_sim_node_agent(s, 1), &st);
    CHECK_EQ_U64(st.sent, NB);
    CHECK_EQ_U64(st.copies - copies0, NB); /* one copy toward 2 serves 2 and 4 */
    bp_agent_imc_stats_get(tern_sim_node_agent(s, 3), &st);
    CHECK_EQ_U64(st.delivered, 0);
    bp_agent_imc_stats_get(tern_sim_node_agent(s, 2), &st);
    CHECK_EQ_U64(st.delivered, NB);
    tern_sim_free(s);
}

/* Contact graph routing books a group bundle's volume once per copy. Star
 * 1 - 2 - {3, 4, 5}, members 3, 4 and 5; node 1's only contact to 2 holds
 * 2,500 bytes: one 1 KB copy serving all three fits, a booking per
 * destination (three copies' worth) would not, and the third member would
 * wait for a contact that never comes. Each member gets each bundle once,
 * nothing is unreachable at 1, and node 1's CGR books one route per copy. */
TEST(imc_cgr_books_one_copy_not_each_destination)
{
    net t = {.n = 5};
    edge(&t, 1, 2);
    edge(&t, 2, 3);
    edge(&t, 2, 4);
    edge(&t, 2, 5);
    net_routes(&t);
    bool m[NMAX + 1] = {false};
    m[3] = m[4] = m[5] = true;
    tern_sim *s = build(&t, m, 0);
    CHECK(s);
    char cmds[2048], out[512];
    int k = 0;
    for (int u = 1; u <= 5; u++)
        for (int v = 1; v <= 5; v++)
            if (t.adj[u][v]) {
                bool narrow = u == 1 && v == 2;
                k += snprintf(cmds + k, sizeof cmds - (size_t)k,
                              "a contact +%d +%d %d %d %d\na range +0 +3600 %d %d 1\n",
                              narrow ? 40 : 0, narrow ? 50 : 3600, u, v,
                              narrow ? 250 : 100000, u, v);
            }
    for (int n = 1; n <= 5; n++)
        CHECK_OK(tern_sim_node_ionadmin(s, (uint64_t)n, cmds, out, sizeof out));
    CHECK_OK(tern_sim_set_cgr(s, 1));
    tern_sim_run(s, 30000, 0); /* petitions from 3, 4, 5 reach 1 over 2 -> 1 */
    uint64_t mem[8];
    CHECK_EQ_U64(bp_agent_imc_members(tern_sim_node_agent(s, 1), 7, mem, 8), 3);
    uint64_t v0[32], v1[32];
    int nc = tern_sim_cgr_counters(s, 1, v0, 32);
    CHECK(nc > 0);
    size_t routed = 0;
    while (tern_sim_cgr_counter_name(routed) &&
           strcmp(tern_sim_cgr_counter_name(routed), "routed"))
        routed++;
    CHECK((int)routed < nc);
    uint64_t copies0 = imc_stats(s, 1).copies;
    CHECK_OK(send_n(s, 1, 0, 1));
    tern_sim_run(s, 200000, 0);
    CHECK_EQ_INT(tern_sim_cgr_counters(s, 1, v1, 32), nc);
    for (int n = 3; n <= 5; n++) {
        int c[1] = {0};
        CHECK(drain(s, n, 1, c));
        CHECK_MSG(c[0] == 1, "member %d got the bundle %d times", n, c[0]);
    }
    bp_imc_stats st = imc_stats(s, 1);
    CHECK_EQ_U64(st.unreachable, 0);
    CHECK_EQ_U64(st.copies - copies0, 1);
    CHECK_EQ_U64(v1[routed] - v0[routed], 1); /* one booking: the copy */
    tern_sim_free(s);
}

/* ---- 50 receivers in a tree of relays ----------------------------------- */

/* Root 1; relays 2..5 below it; 6..17 (three under each of 2..5); four
 * leaves under each of 6..17 (18..65). Node p's parent is par[p]. */
#define TREE_N 65
static void tree(net *t, int *par)
{
    memset(t, 0, sizeof *t);
    t->n = TREE_N;
    par[1] = 0;
    for (int k = 2; k <= 5; k++)
        par[k] = 1;
    for (int j = 6; j <= 17; j++)
        par[j] = 2 + (j - 6) / 3;
    for (int l = 18; l <= 65; l++)
        par[l] = 6 + (l - 18) / 4;
    for (int v = 2; v <= TREE_N; v++)
        edge(t, par[v], v);
    net_routes(t);
}

/* 50 members at depths 1, 2 and 3 under relays that are not all members;
 * links lose 5% of their segments; leaf 40 is cut off from its relay for a
 * minute while half the bundles are sent. Each member gets each bundle
 * exactly once, with its bytes; a non-member gets none; each node of the
 * tree that leads to members receives each bundle once (one copy per link:
 * the parent's copies count the links it serves), and no segment goes
 * down a link to a subtree without members. */
TEST(imc_tree_50_members_loss_and_an_offline_member)
{
    net t;
    int par[TREE_N + 1];
    tree(&t, par);
    bool m[NMAX + 1] = {false};
    for (int l = 18; l <= 61; l++)
        m[l] = l != 18 && l != 30; /* 17's leaves 62..65 are not members */
    m[2] = m[3] = m[6] = m[7] = m[9] = m[10] = m[12] = m[13] = true;
    int nm = 0;
    for (int i = 1; i <= TREE_N; i++)
        nm += m[i];
    CHECK_EQ_INT(nm, 50);
    /* on[v]: v is a member or leads to one */
    bool on[NMAX + 1] = {false};
    for (int v = TREE_N; v >= 1; v--)
        if (m[v] || on[v])
            for (int u = v; u; u = par[u])
                on[u] = true;
    CHECK(!on[17] && !on[62] && on[5] && on[15] && !on[18]);

    tern_sim *s = build(&t, m, 0.05);
    CHECK(s);
    CHECK_EQ_INT(tern_sim_run(s, 30000, 0), TERN_SIM_STOP_TIME); /* petitions settle */
    uint64_t mem[64];
    for (int v = 1; v <= TREE_N; v++)
        CHECK_MSG(bp_agent_imc_members(tern_sim_node_agent(s, (uint64_t)v), 7, mem, 64) ==
                      50,
                  "node %d knows %zu members", v,
                  bp_agent_imc_members(tern_sim_node_agent(s, (uint64_t)v), 7, mem, 64));

    enum { NB = 20, OFF = 40 };
    bp_agent_stats b0[TREE_N + 1];
    bp_imc_stats i0[TREE_N + 1];
    tern_sim_link_stats l0[TREE_N + 1];
    for (int v = 1; v <= TREE_N; v++) {
        b0[v] = bp_stats(s, v);
        i0[v] = imc_stats(s, v);
        if (par[v])
            l0[v] = link_stats(s, par[v], v);
    }
    CHECK_OK(tern_sim_outage_add(s, (uint64_t)par[OFF], OFF, 31000, 91000, 0));
    CHECK_OK(send_n(s, 1, 0, NB / 2));
    tern_sim_run(s, 40000, 0);
    CHECK_OK(send_n(s, 1, NB / 2, NB / 2)); /* while 40 is cut off */
    tern_sim_run(s, 85000, 0);
    int c[TREE_N + 1][NB];
    memset(c, 0, sizeof c);
    CHECK(drain(s, OFF, NB, c[OFF]));
    for (int i = NB / 2; i < NB; i++)
        CHECK_MSG(c[OFF][i] == 0, "bundle %d reached node %d during its outage", i, OFF);
    tern_sim_run(s, 300000, 0);
    for (int v = 1; v <= TREE_N; v++) {
        CHECK_MSG(drain(s, v, NB, c[v]), "node %d: a bad bundle", v);
        for (int i = 0; i < NB; i++)
            CHECK_MSG(c[v][i] == (m[v] ? 1 : 0), "node %d got bundle %d %d times", v, i,
                      c[v][i]);
    }
    for (int v = 1; v <= TREE_N; v++) {
        bp_agent_stats b = bp_stats(s, v);
        bp_imc_stats st = imc_stats(s, v);
        int kids = 0;
        for (int u = 2; u <= TREE_N; u++)
            kids += par[u] == v && on[u];
        CHECK_MSG(st.delivered - i0[v].delivered == (m[v] ? NB : 0),
                  "node %d delivered %" PRIu64, v, st.delivered - i0[v].delivered);
        CHECK_EQ_U64(st.no_endpoint, 0);
        CHECK_EQ_U64(st.refused, 0);
        CHECK_EQ_U64(st.unreachable - i0[v].unreachable, 0);
        CHECK_MSG(st.copies - i0[v].copies == (uint64_t)(kids * NB),
                  "node %d made %" PRIu64 " copies for %d links", v,
                  st.copies - i0[v].copies, kids);
        if (v == 1)
            continue;
        CHECK_MSG(b.received - b0[v].received == (on[v] ? NB : 0),
                  "node %d received %" PRIu64 " group bundles", v,
                  b.received - b0[v].received);
        CHECK_MSG(b.duplicates == b0[v].duplicates, "node %d: %" PRIu64 " duplicates", v,
                  b.duplicates - b0[v].duplicates);
        tern_sim_link_stats l = link_stats(s, par[v], v);
        if (on[v])
            CHECK(l.delivered > l0[v].delivered);
        else
            CHECK_MSG(l.sent == l0[v].sent,
                      "%" PRIu64 " segments toward %d, no member there",
                      l.sent - l0[v].sent, v);
    }
    uint64_t lost = 0;
    for (int v = 2; v <= TREE_N; v++)
        lost += link_stats(s, par[v], v).lost + link_stats(s, v, par[v]).lost;
    CHECK(lost > 0); /* the loss was there to recover from */
    CHECK_EQ_U64(imc_stats(s, 1).sent - i0[1].sent, NB);
    CHECK_EQ_U64(bp_stats(s, 1).stored, 0);
    tern_sim_free(s);
}

/* ---- random topologies -------------------------------------------------- */

static uint64_t mix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A random connected graph of 5..30 nodes: a random tree over shuffled
 * labels (so low numbers, which win BFS ties, sit anywhere) plus up to n
 * extra edges, which make cycles and so routes from different nodes that
 * disagree about paths. */
static void random_net(net *t, uint64_t *r)
{
    memset(t, 0, sizeof *t);
    t->n = 5 + (int)(mix64(r) % 26);
    int lab[NMAX + 1];
    for (int i = 1; i <= t->n; i++)
        lab[i] = i;
    for (int i = t->n; i > 1; i--) {
        int j = 1 + (int)(mix64(r) % (uint64_t)i), x = lab[i];
        lab[i] = lab[j];
        lab[j] = x;
    }
    for (int v = 2; v <= t->n; v++)
        edge(t, lab[v], lab[1 + (int)(mix64(r) % (uint64_t)(v - 1))]);
    int extra = (int)(mix64(r) % (uint64_t)(t->n + 1));
    for (int i = 0; i < extra; i++) {
        int u = 1 + (int)(mix64(r) % (uint64_t)t->n),
            v = 1 + (int)(mix64(r) % (uint64_t)t->n);
        if (u != v)
            edge(t, u, v);
    }
    net_routes(t);
}

/* What the agents are to do with one group bundle from src, as the model of
 * ION's gangs: at each node the destinations left (itself removed) are split
 * by next hop, one copy per hop, none back to the node it came from. Fills
 * rx[u] (copies node u receives), tx[u] (copies u sends) and link[u][v]
 * (copies over u -> v); returns false if a member is never reached. */
static bool model(const net *t, const bool *m, int src, int *rx, int *tx,
                  int link[NMAX + 1][NMAX + 1])
{
    typedef struct cp {
        int at, prev;
        uint64_t dst; /* bit d: node d still to reach */
    } cp;
    static cp q[1 << 16];
    int h = 0, e = 0;
    uint64_t all = 0, reached = 0;
    for (int d = 1; d <= t->n; d++)
        if (m[d] && d != src)
            all |= 1ull << d;
    q[e++] = (cp){src, 0, all};
    while (h < e) {
        cp c = q[h++];
        if (c.prev)
            rx[c.at]++;
        if (c.dst & (1ull << c.at))
            reached |= 1ull << c.at;
        c.dst &= ~(1ull << c.at);
        uint64_t by[NMAX + 1] = {0};
        for (int d = 1; d <= t->n; d++)
            if (c.dst & (1ull << d)) {
                int hop = t->nh[c.at][d];
                if (c.prev && hop == t->nh[c.at][c.prev])
                    continue; /* the not-back rule */
                by[hop] |= 1ull << d;
            }
        for (int v = 1; v <= t->n; v++)
            if (by[v]) {
                tx[c.at]++;
                link[c.at][v]++;
                if (e < (int)(sizeof q / sizeof q[0]))
                    q[e++] = (cp){v, c.at, by[v]};
            }
    }
    return reached == all;
}

/* One random topology: false with *why filled in if anything is off. */
static bool one_topology(uint64_t seed, int nb, int *twice, char *why, size_t cap)
{
    uint64_t r = seed;
    net t;
    random_net(&t, &r);
    bool m[NMAX + 1] = {false};
    int pm = 15 + (int)(mix64(&r) % 70), nm = 0;
    for (int i = 1; i <= t.n; i++)
        nm += m[i] = (int)(mix64(&r) % 100) < pm;
    if (!nm)
        m[1 + (int)(mix64(&r) % (uint64_t)t.n)] = true, nm = 1;
    int src = 1 + (int)(mix64(&r) % (uint64_t)t.n);
    int rx[NMAX + 1] = {0}, tx[NMAX + 1] = {0};
    static int link[NMAX + 1][NMAX + 1];
    memset(link, 0, sizeof link);
    if (!model(&t, m, src, rx, tx, link)) {
        snprintf(why, cap, "the model itself misses a member (routes disagree)");
        return false;
    }
    for (int u = 1; u <= t.n; u++)
        for (int v = 1; v <= t.n; v++)
            *twice += link[u][v] > 1;
    if (*twice) {
        snprintf(why, cap, "%d links would carry a bundle twice", *twice);
        return false;
    }
    /* a small heap: an in-memory store's heap is cleared when it opens */
    tern_sim *s = build_seeded(&t, m, 0, seed, 256 << 10);
    if (!s) {
        snprintf(why, cap, "the simulation could not be built");
        return false;
    }
    bool ok = false;
    tern_sim_run(s, 5000, 0); /* petitions settle */
    uint64_t mem[NMAX + 1];
    size_t k = bp_agent_imc_members(tern_sim_node_agent(s, (uint64_t)src), 7, mem, NMAX);
    if ((int)k != nm) {
        snprintf(why, cap, "sender %d knows %zu members of %d", src, k, nm);
        goto out;
    }
    bp_agent_stats b0[NMAX + 1];
    bp_imc_stats i0[NMAX + 1];
    for (int v = 1; v <= t.n; v++) {
        b0[v] = bp_stats(s, v);
        i0[v] = imc_stats(s, v);
    }
    if (send_from(s, src, 0, nb)) {
        snprintf(why, cap, "send refused");
        goto out;
    }
    tern_sim_run(s, 15000, 0);
    for (int v = 1; v <= t.n; v++) {
        int c[8] = {0};
        const char *bad = "";
        if (!drain_from(s, v, src, nb, c, &bad)) {
            snprintf(why, cap, "node %d: %s", v, bad);
            goto out;
        }
        for (int i = 0; i < nb; i++)
            if (c[i] != (m[v] ? 1 : 0)) {
                snprintf(why, cap, "%s %d got bundle %d from %d %d times",
                         m[v] ? "member" : "non-member", v, i, src, c[i]);
                goto out;
            }
        bp_agent_stats b = bp_stats(s, v);
        bp_imc_stats st = imc_stats(s, v);
        uint64_t got = b.received - b0[v].received, made = st.copies - i0[v].copies;
        if (b.duplicates != b0[v].duplicates || st.seen_before != i0[v].seen_before ||
            st.unreachable != i0[v].unreachable || st.refused || st.no_endpoint) {
            snprintf(why, cap,
                     "node %d: %" PRIu64 " duplicates, %" PRIu64 " seen before, %" PRIu64
                     " unreachable, %" PRIu64 " refused, %" PRIu64 " without endpoint",
                     v, b.duplicates - b0[v].duplicates,
                     st.seen_before - i0[v].seen_before,
                     st.unreachable - i0[v].unreachable, st.refused, st.no_endpoint);
            goto out;
        }
        if (got != (uint64_t)(rx[v] * nb) || made != (uint64_t)(tx[v] * nb)) {
            snprintf(why, cap,
                     "node %d received %" PRIu64 " and sent %" PRIu64
                     " copies, the model %d and %d",
                     v, got, made, rx[v] * nb, tx[v] * nb);
            goto out;
        }
        if (st.delivered - i0[v].delivered != (uint64_t)(m[v] ? nb : 0)) {
            snprintf(why, cap, "node %d delivered %" PRIu64, v,
                     st.delivered - i0[v].delivered);
            goto out;
        }
    }
    ok = true;
out:
    tern_sim_free(s);
    return ok;
}

/* 1,000 random connected graphs (5..30 nodes, with cycles), random member
 * sets and a random sender, the links without loss: every member gets every
 * bundle exactly once, no non-member gets one, no node counts a duplicate,
 * and each node receives and sends the copies the model of ION's gangs says
 * (so no copy is lost or made twice). A failure names the topology's seed:
 * IMC_TOPO_SEED=<seed> runs that one alone. */
TEST(imc_random_topologies)
{
    enum { TOPOLOGIES = 1000, NB = 2 };
    uint64_t base = tt_seed();
    /* Each agent callocs its duplicate-suppression ring (8 MB); kept below
     * malloc's sliding mmap threshold, it would be cleared by memset 17,000
     * times. Mapped fresh, only the pages touched cost anything. */
    mallopt(M_MMAP_THRESHOLD, 256 << 10);
    const char *one = getenv("IMC_TOPO_SEED");
    int count = one ? 1 : TOPOLOGIES, twice = 0, with_twice = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < count; i++) {
        uint64_t seed = one ? strtoull(one, NULL, 0) : base * 1000003u + (uint64_t)i;
        char why[256] = "";
        int tw = 0;
        bool ok = one_topology(seed, NB, &tw, why, sizeof why);
        CHECK_MSG(ok, "topology %d: %s (rerun it alone with IMC_TOPO_SEED=%" PRIu64 ")",
                  i, why, seed);
        twice += tw;
        with_twice += tw > 0;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("# imc: %d random topologies in %.1f s\n", count,
           (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
    CHECK_EQ_INT(with_twice + twice, 0);
}
