/* bench_bpsim: bundles per second through one agent on a virtual clock.
 *
 *   bench_bpsim --path send|relay|deliver --mode memory|durable --size B
 *               --count N [--dir D]
 *   bench_bpsim --memcpy --size B --count N
 *
 * send:    bp_agent_send from ipn:1.1 to ipn:2.1, out through a loopback outduct
 *          (it reports each bundle sent at once) — create, store, route,
 *          encode the wire copy, delete.
 * relay:   bundles of node 9 for node 2 taken from a convergence layer
 *          (bp_agent_receive) and forwarded the same way — decode, check,
 *          store, route, re-encode, delete.
 * deliver: bundles for ipn:1.1 taken from a convergence layer and read by
 *          the application (bp_agent_recv).
 * Prints one JSON object: {"bundles": N, "seconds": s, "bundles_per_s": r}.
 * Input bundles are encoded before the clock starts; a warm-up of N/4
 * bundles goes first, untimed.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bp_agent.h"
#include "tern/clock.h"

#define T0 849320526000ULL

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int loop_open(void *cla, bp_outduct *od, const char *name, const char *cmd,
                     void **duct)
{
    (void)cla;
    (void)name;
    (void)cmd;
    *duct = od;
    return 0;
}

static int loop_send(void *cla, void *duct, const uint8_t *b, size_t len, uint64_t xmit)
{
    uint64_t *bytes = cla;
    *bytes += len;
    (void)b;
    bp_outduct_result(duct, xmit, BP_XMIT_OK);
    return 0;
}

static const bp_cla_ops loop_ops = {
    .protocol = "loop", .outduct_open = loop_open, .send = loop_send};

static void die(const char *what, int rc)
{
    fprintf(stderr, "bench_bpsim: %s: %s\n", what, tern_strerror(rc));
    exit(1);
}

/* Encodes count distinct bundles (sequence numbers differ) from ipn:9.1. */
static uint8_t **make_inputs(size_t count, size_t size, const char *dst, size_t **lens)
{
    uint8_t **in = calloc(count, sizeof *in);
    *lens = calloc(count, sizeof **lens);
    uint8_t *payload = malloc(size ? size : 1);
    if (!in || !*lens || !payload)
        die("inputs", -ENOMEM);
    memset(payload, 0x5a, size);
    bp_bundle b;
    memset(&b, 0, sizeof b);
    b.pri.version = 7;
    b.pri.crc_type = BP_CRC_32C;
    bp_eid_parse(dst, &b.pri.dest, NULL);
    bp_eid_ipn(&b.pri.src, 9, 1);
    bp_eid_none(&b.pri.report_to);
    b.pri.ctime_ms = T0;
    b.pri.lifetime_ms = 86400000;
    b.blocks[0] = (bp_block){.type = 1, .number = 1, .data = payload, .data_len = size};
    b.n_blocks = 1;
    for (size_t i = 0; i < count; i++) {
        b.pri.seq = i;
        size_t cap = size + 128, n;
        in[i] = malloc(cap);
        int rc = bp_bundle_encode(&b, in[i], cap, &n, NULL);
        if (rc)
            die("encode", rc);
        (*lens)[i] = n;
    }
    free(payload);
    return in;
}

int main(int argc, char **argv)
{
    const char *path = "send", *mode = "memory", *dir = NULL;
    size_t size = 1000, count = 100000;
    int do_memcpy = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--path") && i + 1 < argc)
            path = argv[++i];
        else if (!strcmp(argv[i], "--mode") && i + 1 < argc)
            mode = argv[++i];
        else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
            dir = argv[++i];
        else if (!strcmp(argv[i], "--size") && i + 1 < argc)
            size = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--count") && i + 1 < argc)
            count = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--memcpy"))
            do_memcpy = 1;
        else {
            fprintf(stderr, "usage: bench_bpsim --path send|relay|deliver --mode "
                            "memory|durable --size B --count N [--dir D] | --memcpy "
                            "--size B --count N\n");
            return 2;
        }
    }
    if (do_memcpy) { /* the baseline: copying each bundle's bytes once */
        uint8_t *src = malloc(size + 1), *dst = malloc(size + 1);
        memset(src, 1, size + 1);
        double t0 = now_s();
        for (size_t i = 0; i < count; i++) {
            src[i % (size + 1)] = (uint8_t)i;
            memcpy(dst, src, size);
            __asm__ volatile("" ::"r"(dst) : "memory");
        }
        double dt = now_s() - t0;
        printf("{\"bundles\": %zu, \"seconds\": %.6f, \"bundles_per_s\": %.1f}\n", count,
               dt, (double)count / dt);
        free(src);
        free(dst);
        return 0;
    }
    int durable = !strcmp(mode, "durable");
    if (durable && !dir) {
        fprintf(stderr, "bench_bpsim: --mode durable needs --dir\n");
        return 2;
    }
    tern_clock *clk;
    tern_loop *loop;
    int rc;
    if ((rc = tern_clock_virtual_new(T0, &clk)) || (rc = tern_loop_new(clk, &loop)))
        die("loop", rc);
    sdr_profile p = {.name = "bpsim",
                     .dir = dir,
                     .heap_size = 64u << 20,
                     .mode = durable ? SDR_DURABLE : SDR_MEMORY,
                     .commit = SDR_COMMIT_GROUP};
    sdr *store;
    char why[256] = "";
    if ((rc = sdr_open(&p, &store, why, sizeof why))) {
        fprintf(stderr, "bench_bpsim: store: %s\n", why);
        return 1;
    }
    bp_agent *a;
    bp_agent_cfg cfg = {.node = 1, .store = store};
    if ((rc = bp_agent_new(loop, &cfg, NULL, NULL, &a)))
        die("agent", rc);
    uint64_t out_bytes = 0;
    bp_eid src, dst, ep;
    bp_eid_ipn(&src, 1, 1);
    bp_eid_ipn(&dst, 2, 1);
    bp_eid_ipn(&ep, 1, 1);
    if ((rc = bp_cla_register(a, &loop_ops, &out_bytes)) ||
        (rc = bp_outduct_add(a, "loop", "2", "", 0)) ||
        (rc = bp_egress_plan_add(a, 2, "loop", "2")) ||
        (rc = bp_endpoint_add(a, &ep, BP_RECV_QUEUE)))
        die("config", rc);

    uint8_t **in = NULL;
    size_t *lens = NULL;
    uint8_t *payload = malloc(size ? size : 1);
    memset(payload, 0xa5, size);
    /* The first quarter warms the heap and malloc up and is not timed: the
     * figure is the steady state. */
    size_t warm = count / 4, total = count + warm;
    if (!strcmp(path, "relay"))
        in = make_inputs(total, size, "ipn:2.1", &lens);
    else if (!strcmp(path, "deliver"))
        in = make_inputs(total, size, "ipn:1.1", &lens);
    else if (strcmp(path, "send"))
        die("--path", -EINVAL);

    double t0 = now_s();
    for (size_t i = 0; i < total; i++) {
        if (i == warm) {
            if (durable && (rc = sdr_flush(store)))
                die("flush", rc);
            t0 = now_s();
        }
        if (!in) {
            if ((rc = bp_agent_send(a, &src, &dst, NULL, payload, size, NULL)))
                die("bp_agent_send", rc);
            /* a new millisecond now and then keeps sequence numbers small */
            if ((i & 1023) == 1023)
                tern_clock_advance(clk, 1000000);
        } else {
            if ((rc = bp_agent_receive(a, in[i], lens[i])) != 1)
                die("bp_agent_receive", rc);
            if (!strcmp(path, "deliver")) {
                bp_delivery d;
                if ((rc = bp_agent_recv(a, &ep, &d)))
                    die("bp_agent_recv", rc);
                bp_delivery_release(&d);
            }
        }
    }
    if (durable && (rc = sdr_flush(store)))
        die("flush", rc);
    double dt = now_s() - t0;
    bp_agent_stats st;
    bp_agent_stats_get(a, &st);
    if (st.stored != 0 || (strcmp(path, "deliver") && st.forwarded != total) ||
        (!strcmp(path, "deliver") && st.taken != total)) {
        fprintf(stderr,
                "bench_bpsim: bundles went missing: stored %" PRIu64 " forwarded %" PRIu64
                " taken %" PRIu64 "\n",
                st.stored, st.forwarded, st.taken);
        return 1;
    }
    printf(
        "{\"bundles\": %zu, \"seconds\": %.6f, \"bundles_per_s\": %.1f, \"out_bytes\": "
        "%" PRIu64 "}\n",
        count, dt, (double)count / dt, out_bytes);
    bp_agent_free(a);
    sdr_close(store);
    if (in)
        for (size_t i = 0; i < total; i++)
            free(in[i]);
    free(in);
    free(lens);
    free(payload);
    tern_loop_close(loop);
    tern_clock_free(clk);
    return 0;
}
