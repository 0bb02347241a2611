/* libFuzzer target: whatever bytes a convergence layer hands the agent, it
 * must not crash, leak or corrupt its store; it keeps serving afterwards.
 *
 * Input: one control byte, then the received bytes. Control bits choose
 * whether the fake outduct reports success or cancellation, whether the
 * input is given twice (duplicates), and how far the clock jumps afterwards
 * (expiry). Node 2 has endpoint ipn:2.1, routes to nodes 1 and 3 through an
 * outduct with a 64-byte maximum payload (fragmentation), and reads
 * everything delivered before checking the store. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bp_agent.h"
#include "tern/clock.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int result_mode;

static int f_open(void *cla, bp_outduct *od, const char *name, const char *cmd,
                  void **duct)
{
    (void)cla;
    (void)name;
    (void)cmd;
    *duct = od;
    return 0;
}

static int f_send(void *cla, void *duct, const uint8_t *b, size_t len, uint64_t xmit)
{
    (void)cla;
    bp_bundle chk;
    /* what the agent sends must itself decode */
    if (bp_bundle_decode(b, len, &chk, NULL, NULL) != 0)
        abort();
    bp_bundle_release(&chk);
    bp_outduct_result(duct, xmit, result_mode ? BP_XMIT_CANCELLED : BP_XMIT_OK);
    return 0;
}

static const bp_cla_ops ops = {.protocol = "f", .outduct_open = f_open, .send = f_send};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t ctl = data[0];
    data++;
    size--;
    result_mode = ctl & 1;
    tern_clock *clk;
    tern_loop *loop;
    sdr *store;
    bp_agent *a;
    /* DTN time of ION's vector bundles, so real-looking inputs are alive */
    if (tern_clock_virtual_new(849320526000ULL, &clk) || tern_loop_new(clk, &loop))
        abort();
    sdr_profile p = {.name = "fz", .heap_size = 1u << 20, .mode = SDR_MEMORY};
    if (sdr_open(&p, &store, NULL, 0))
        abort();
    bp_agent_cfg cfg = {.node = 2, .store = store, .dedup_max = 64};
    if (bp_agent_new(loop, &cfg, NULL, NULL, &a))
        abort();
    bp_eid ep;
    bp_eid_ipn(&ep, 2, 1);
    if (bp_endpoint_add(a, &ep, BP_RECV_QUEUE) || bp_cla_register(a, &ops, NULL) ||
        bp_outduct_add(a, "f", "x", "", 64) || bp_egress_plan_add(a, 1, "f", "x") ||
        bp_egress_plan_add(a, 3, "f", "x"))
        abort();
    bp_agent_receive(a, data, size);
    if (ctl & 2)
        bp_agent_receive(a, data, size);
    uint64_t jump = (ctl >> 2) & 3 ? (uint64_t)1000000 << (6 * ((ctl >> 2) & 3)) : 0;
    tern_loop_run_until(loop, tern_loop_now(loop) + jump);
    bp_delivery d;
    bp_eid admin;
    bp_eid_ipn(&admin, 2, 0);
    while (bp_agent_recv(a, &ep, &d) == 0)
        bp_delivery_release(&d);
    while (bp_agent_recv(a, &admin, &d) == 0)
        bp_delivery_release(&d);
    /* and it still works */
    bp_eid dst;
    bp_eid_ipn(&dst, 2, 1);
    if (bp_agent_send(a, &ep, &dst, NULL, "ok", 2, NULL) || bp_agent_recv(a, &ep, &d) ||
        d.len != 2 || memcmp(d.payload, "ok", 2))
        abort();
    bp_delivery_release(&d);
    char why[256];
    if (sdr_check(store, why, sizeof why)) {
        fprintf(stderr, "store damaged: %s\n", why);
        abort();
    }
    bp_agent_free(a);
    sdr_close(store);
    tern_loop_close(loop);
    tern_clock_free(clk);
    return 0;
}
