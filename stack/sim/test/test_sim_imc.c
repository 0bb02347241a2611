/* tern_sim: multicast (imc groups) across relays on the virtual clock. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bp_imc.h"
#include "tern_sim.h"
#include "tern_test.h"

#define NMAX 64

/* A network: nodes 1..n, undirected edges; next hop by breadth-first
 * search from each node (ties to the lower number, so routes agree). */
typedef struct net {
    int n;
    bool adj[NMAX + 1][NMAX + 1];
    int nh[NMAX + 1][NMAX + 1];
} net;

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
static tern_sim *build(const net *t, const bool *members, double loss)
{
    tern_sim *s;
    tern_sim_cfg cfg = {.seed = tt_seed(), .heap_bytes = 8 << 20};
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

/* Takes every bundle queued at node's imc:7.1: counts[i] gets how many times
 * bundle i (its first four bytes) arrived; false if a payload is wrong. */
static bool drain(tern_sim *s, int node, int nb, int *counts)
{
    uint8_t buf[2048];
    size_t len;
    char src[64];
    while (tern_sim_recv(s, (uint64_t)node, "imc:7.1", src, sizeof src, NULL, NULL, NULL,
                         buf, sizeof buf, &len) == 0) {
        uint32_t idx;
        if (len != 1000 || strcmp(src, "ipn:1.1"))
            return false;
        memcpy(&idx, buf, 4);
        for (size_t k = 4; k < len; k++)
            if (buf[k] != (uint8_t)(idx + k))
                return false;
        if ((int)idx >= nb)
            return false;
        counts[idx]++;
    }
    return true;
}

static int send_n(tern_sim *s, int from, int i0, int nb)
{
    uint8_t buf[1000];
    for (int i = i0; i < i0 + nb; i++) {
        uint32_t idx = (uint32_t)i;
        memcpy(buf, &idx, 4);
        for (size_t k = 4; k < sizeof buf; k++)
            buf[k] = (uint8_t)(idx + k);
        int rc = tern_sim_send(s, (uint64_t)from, "ipn:1.1", "imc:7.1", buf, sizeof buf,
                               0, BP_PRIO_STANDARD, 0, 0, 0, NULL, NULL, NULL);
        if (rc)
            return rc;
    }
    return 0;
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
