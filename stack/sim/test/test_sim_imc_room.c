/* tern_sim: a sender whose store has no room for a group bundle's copies
 * holds the bundle and tries again; no destination is lost. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bp_imc.h"
#include "tern_sim.h"
#include "tern_test.h"

/* Node me of the star 1 - {2, 3}: spans, ducts and plans to its peers. */
static void star_rc(int me, char *out, size_t cap)
{
    int peers[2], np = 0;
    if (me == 1) {
        peers[np++] = 2;
        peers[np++] = 3;
    } else {
        peers[np++] = 1;
    }
    int k = snprintf(
        out, cap, "## begin ionadmin\n1 %d\n## end ionadmin\n## begin ltpadmin\n1 64\n",
        me);
    for (int i = 0; i < np; i++)
        k += snprintf(out + k, cap - (size_t)k,
                      "a span %d 64 64 1400 1 0 'udplso 127.0.0.1:1113'\n", peers[i]);
    k += snprintf(out + k, cap - (size_t)k,
                  "## end ltpadmin\n## begin bpadmin\n1\na scheme ipn 'ipnfw' "
                  "'ipnadminep'\na scheme imc 'imcfw' 'imcadminep'\n"
                  "a protocol ltp 1400 100\na induct ltp %d ltpcli\n%s",
                  me, me == 1 ? "" : "a endpoint imc:7.1 q\n");
    for (int i = 0; i < np; i++)
        k += snprintf(out + k, cap - (size_t)k, "a outduct ltp %d ltpclo\n", peers[i]);
    k += snprintf(out + k, cap - (size_t)k, "s\n## end bpadmin\n## begin ipnadmin\n");
    for (int i = 0; i < np; i++)
        k += snprintf(out + k, cap - (size_t)k, "a plan %d ltp/%d\n", peers[i], peers[i]);
    snprintf(out + k, cap - (size_t)k, "## end ipnadmin\n");
}

/* Node 1's store holds about 60 bundles of 64 KB; it sends as many as it
 * takes while the link is slow, each needing two copies (one per member):
 * every member gets every bundle the sender took, once. */
TEST(imc_copies_without_room_wait_and_lose_nothing)
{
    tern_sim *s;
    tern_sim_cfg cfg = {.seed = tt_seed(), .heap_bytes = 4 << 20};
    CHECK_OK(tern_sim_new(&cfg, &s));
    char rc[4096], err[512];
    for (int i = 1; i <= 3; i++) {
        star_rc(i, rc, sizeof rc);
        CHECK_MSG(tern_sim_node_add(s, NULL, rc, err, sizeof err, NULL) == 0, "%s", err);
    }
    CHECK_OK(tern_sim_link_add(s, 1, 2, 10, 2000000, 0, 0));
    CHECK_OK(tern_sim_link_add(s, 1, 3, 10, 2000000, 0, 0));
    tern_sim_run(s, 20000, 0);
    uint64_t mem[4];
    CHECK_EQ_U64(bp_agent_imc_members(tern_sim_node_agent(s, 1), 7, mem, 4), 2);
    enum { NB = 200, LEN = 40000 };
    uint8_t *buf = malloc(LEN);
    CHECK(buf);
    int taken = 0, got[4] = {0};
    for (int i = 0; i < NB; i++) {
        memset(buf, (uint8_t)i, LEN);
        memcpy(buf, &i, sizeof i);
        int r = tern_sim_send(s, 1, "ipn:1.1", "imc:7.1", buf, LEN, 0, BP_PRIO_STANDARD,
                              0, 0, 0, NULL, NULL, NULL);
        if (r == 0)
            taken++;
        tern_sim_run(s, tern_sim_now_ms(s) + 5, 0);
        for (uint64_t n = 2; n <= 3; n++) { /* the members read as they go */
            size_t len;
            while (tern_sim_recv(s, n, "imc:7.1", NULL, 0, NULL, NULL, NULL, buf, LEN,
                                 &len) == 0)
                got[n] += len == LEN;
        }
    }
    for (int k = 0; k < 600; k++) {
        tern_sim_run(s, tern_sim_now_ms(s) + 1000, 0);
        for (uint64_t n = 2; n <= 3; n++) {
            size_t len;
            while (tern_sim_recv(s, n, "imc:7.1", NULL, 0, NULL, NULL, NULL, buf, LEN,
                                 &len) == 0)
                got[n] += len == LEN;
        }
    }
    bp_agent_stats st;
    bp_agent_stats_get(tern_sim_node_agent(s, 1), &st);
    CHECK(st.store_errors > 0); /* the store did run out of room */
    CHECK_EQ_INT(got[2], taken);
    CHECK_EQ_INT(got[3], taken);
    free(buf);
    tern_sim_free(s);
}
