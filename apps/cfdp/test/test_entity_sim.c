/* CFDP entity: random scenarios on the simulated network. Each seed picks a
 * class, file size, checksum type, NAK mode, PDU size, delay, reordering,
 * loss (0-30 %), duplication and sometimes an outage, runs one transfer to
 * its end and checks the outcome: class 2 ends intact (SHA-256) or with a
 * limit fault, within a time bound; class 1 never claims success for a
 * damaged file. TERN_CFDP_SEEDS sets the count (1,000 by default; 20,000
 * in the long mode); TT_SEED the first seed. Prints the totals. */
#include <stdio.h>

#include "entity_harness.h"

typedef struct totals {
    uint64_t runs, intact[3], incomplete1, by_cond[16], rx_never_knew, resent, naks,
        restarts;
} totals;

typedef struct scenario {
    unsigned cls, cksum, nak_mode;
    size_t size;
    uint32_t max_pdu, inflight;
    uint64_t delay, jitter;
    double loss, dup;
    int outage;
    int restart; /* 0 none, 1 the sender, 2 the receiver, mid-transfer */
} scenario;

static uint64_t rnd(cfdp_sim *s, uint64_t n)
{
    return n ? cfdp_sim_rand(s) % n : 0;
}

static cfdp_sim *trace_sim;

/* CFDP_SIM_TRACE=1: every PDU sent, for a failing seed */
static int trace(void *arg, uint64_t from, uint64_t to, const uint8_t *b, size_t len)
{
    (void)arg;
    cfdp_pdu p;
    int rc = cfdp_pdu_decode(b, len, 0, &p, NULL);
    printf("# %8llu %llu->%llu %s len %zu", (unsigned long long)cfdp_sim_now(trace_sim),
           (unsigned long long)from, (unsigned long long)to,
           rc ? "?" : cfdp_kind_name(p.kind), len);
    if (!rc && p.kind == CFDP_FILE_DATA)
        printf(" off %llu+%zu", (unsigned long long)p.u.fd.offset, p.u.fd.len);
    if (!rc && (p.kind == CFDP_EOF || p.kind == CFDP_FINISHED))
        printf(" cond %u", p.kind == CFDP_EOF ? p.u.eof.condition : p.u.fin.condition);
    printf("\n");
    return 0;
}

static int ended(void *arg)
{
    net *n = arg;
    return end_of(n, 0) && end_of(n, 1);
}

static void one(uint64_t seed, totals *tot)
{
    static const unsigned cks[] = {CFDP_CKSUM_MODULAR, CFDP_CKSUM_PROX1,
                                   CFDP_CKSUM_CRC32C, CFDP_CKSUM_CRC32, CFDP_CKSUM_NULL};
    static const size_t sizes[] = {0, 1, 2, 3, 1023, 1024, 1025};
    cfdp_sim *pick;
    CHECK_OK(cfdp_sim_new(seed ^ 0x5eed, &pick));
    scenario sc;
    sc.cls = 1 + (unsigned)rnd(pick, 2);
    sc.cksum = cks[rnd(pick, 5)];
    sc.nak_mode = (unsigned)rnd(pick, 4);
    sc.size = rnd(pick, 4) == 0    ? sizes[rnd(pick, 7)]
              : rnd(pick, 25) == 0 ? (size_t)rnd(pick, 2000000)
                                   : (size_t)rnd(pick, 60000);
    sc.max_pdu = 128 + (uint32_t)rnd(pick, 4000);
    sc.inflight = rnd(pick, 2) ? 0 : 1 + (uint32_t)rnd(pick, 32);
    sc.delay = rnd(pick, 50) == 0 ? 1200000 : rnd(pick, 2000);
    sc.jitter = rnd(pick, 2) ? rnd(pick, 100) : 0;
    sc.loss = rnd(pick, 5) == 0 ? 0 : (double)rnd(pick, 301) / 1000.0;
    sc.dup = rnd(pick, 3) == 0 ? (double)rnd(pick, 100) / 1000.0 : 0;
    sc.outage = rnd(pick, 8) == 0;
    sc.restart = rnd(pick, 6) == 0 ? 1 + (int)rnd(pick, 2) : 0;
    cfdp_sim_free(pick);

    cfdp_peer_cfg pc;
    cfdp_peer_cfg_defaults(&pc);
    uint64_t rtt = 2 * (sc.delay + sc.jitter) + 100;
    pc.max_pdu = sc.max_pdu;
    pc.nak_mode = (uint8_t)sc.nak_mode;
    pc.ack_timer_ms = (uint32_t)(rtt + rtt / 2);
    pc.ack_limit = 8;
    pc.nak_timer_ms = (uint32_t)(rtt + rtt / 2);
    pc.nak_limit = 8;
    pc.nak_delay_ms = (uint32_t)(sc.jitter + 20);
    pc.prompt_ms = (uint32_t)rtt;
    pc.check_timer_ms = (uint32_t)rtt;
    pc.check_limit = 2;
    pc.inactivity_ms = (uint32_t)(12 * pc.ack_timer_ms);
    cfdp_outage out = {sc.delay / 2, sc.delay / 2 + 3 * rtt};
    cfdp_link_cfg lk = {.delay_ms = sc.delay,
                        .jitter_ms = sc.jitter,
                        .loss = sc.loss,
                        .dup = sc.dup,
                        .max_inflight = sc.inflight,
                        .outages = &out,
                        .noutages = sc.outage ? 1 : 0};
    net n;
    net_init(&n, 2, &pc, &lk, seed);
    if (getenv("CFDP_SIM_TRACE")) {
        trace_sim = n.s;
        cfdp_sim_set_filter(n.s, trace, NULL);
    }
    uint8_t *data = malloc(sc.size + 1);
    fill(data, sc.size, seed);
    CHECK_OK(cfdp_memfs_put(n.m[0], "f", data, sc.size));
    free(data);
    cfdp_put_req q = put_req(2, "f", "g", sc.cls);
    q.checksum_type = (int16_t)sc.cksum;
    CHECK_OK(cfdp_put(n.e[0], 0, &q, NULL));
    /* the bound: every limit run out one after another, twice over */
    uint64_t bound =
        2 * ((uint64_t)(pc.ack_limit + 2) * pc.ack_timer_ms * 3 +
             (uint64_t)(pc.nak_limit + 2) * pc.nak_timer_ms * 4 +
             3 * (uint64_t)pc.inactivity_ms) +
        200 * (sc.size / 100 + 1) * (sc.inflight ? rtt / sc.inflight + 1 : 1);
    int rc;
    if (sc.restart) {
        /* run a while, then restart one side from its saved transaction */
        int i = sc.restart - 1;
        cfdp_sim_run(n.s, sc.delay + rtt / 3);
        uint8_t buf[65536];
        size_t len = 0;
        int have = cfdp_txn_save(n.e[i], (cfdp_txn_id){1, 1}, buf, sizeof buf, &len) == 0;
        net_drain(&n, i);
        CHECK_OK(cfdp_sim_restart(n.s, (uint64_t)i + 1, &n.e[i]));
        if (have)
            CHECK_OK(cfdp_txn_restore(n.e[i], cfdp_sim_now(n.s), buf, len, NULL));
        tot->restarts++;
    }
    rc = cfdp_sim_run_until(n.s, bound, ended, &n);
    if (getenv("CFDP_SIM_TRACE"))
        for (int i = 0; i < 2; i++) {
            cfdp_entity_stats es;
            cfdp_entity_stats_get(n.e[i], &es);
            printf("# entity %d: in %llu unexpected %llu unknown %llu malformed %llu\n",
                   i + 1, (unsigned long long)es.pdus_in,
                   (unsigned long long)es.drop_unexpected,
                   (unsigned long long)es.drop_unknown_txn,
                   (unsigned long long)es.drop_malformed);
        }
    const rec *tx = end_of(&n, 0), *rx = end_of(&n, 1);
    int intact = same_file(&n, 0, "f", 1, "g");
    char what[240];
    snprintf(
        what, sizeof what,
        "seed %llu: class %u size %zu cksum %u nak %u pdu %u infl %u delay %llu jit %llu "
        "loss %.3f dup %.3f outage %d restart %d",
        (unsigned long long)seed, sc.cls, sc.size, sc.cksum, sc.nak_mode, sc.max_pdu,
        sc.inflight, (unsigned long long)sc.delay, (unsigned long long)sc.jitter, sc.loss,
        sc.dup, sc.outage, sc.restart);
    /* both ended, or the network went quiet (a receiver that never heard
     * of the transaction has nothing to end); never the time bound */
    CHECK_MSG(rc == 0 || rc == -EAGAIN, "%s: no end by %llu ms (rc %d)", what,
              (unsigned long long)bound, rc);
    CHECK_MSG(tx, "%s: the sender never ended", what);
    tot->runs++;
    if (sc.cls == 2) {
        CHECK_MSG(rx || tx->condition != CFDP_COND_NO_ERROR, "%s: success, no receiver",
                  what);
        if (tx->condition == CFDP_COND_NO_ERROR) {
            CHECK_MSG(intact, "%s: sender reports success, file damaged", what);
            CHECK_MSG(tx->delivery == CFDP_DATA_COMPLETE, "%s: delivery", what);
        }
        if (rx && rx->condition == CFDP_COND_NO_ERROR)
            CHECK_MSG(intact, "%s: receiver reports success, file damaged", what);
        uint8_t c = tx->condition ? tx->condition : rx ? rx->condition : 0;
        CHECK_MSG(c == CFDP_COND_NO_ERROR || c == CFDP_COND_ACK_LIMIT ||
                      c == CFDP_COND_NAK_LIMIT || c == CFDP_COND_INACTIVITY,
                  "%s: condition %u", what, c);
        if (c == CFDP_COND_NO_ERROR) {
            tot->intact[2]++;
        } else {
            tot->by_cond[c]++;
            printf("# class 2 fault: %s: %s\n", what, cfdp_condition_name(c));
        }
    } else {
        if (!rx) {
            tot->rx_never_knew++;
        } else if (rx->condition == CFDP_COND_NO_ERROR) {
            CHECK_MSG(intact, "%s: class 1 success on a damaged file", what);
            CHECK_MSG(rx->delivery == CFDP_DATA_COMPLETE, "%s: delivery", what);
            tot->intact[1]++;
        } else {
            CHECK_MSG(rx->delivery == CFDP_DATA_INCOMPLETE, "%s: delivery", what);
            CHECK_MSG(rx->condition == CFDP_COND_CHECK_LIMIT ||
                          rx->condition == CFDP_COND_INACTIVITY,
                      "%s: condition %u", what, rx->condition);
            tot->incomplete1++;
            tot->by_cond[rx->condition]++;
        }
        if (sc.loss == 0 && sc.dup == 0 && !sc.outage)
            CHECK_MSG(intact && rx && rx->condition == 0, "%s: lossless class 1 failed",
                      what);
    }
    cfdp_entity_stats st;
    cfdp_entity_stats_get(n.e[0], &st);
    tot->resent += st.file_bytes_resent;
    cfdp_entity_stats_get(n.e[1], &st);
    tot->naks += st.naks_sent;
    net_free(&n);
}

TEST(random_scenarios)
{
    const char *env = getenv("TERN_CFDP_SEEDS");
    uint64_t count = env ? strtoull(env, NULL, 10) : 1000;
    const char *s0 = getenv("TT_SEED");
    uint64_t first = s0 ? strtoull(s0, NULL, 10) : 1;
    totals t;
    memset(&t, 0, sizeof t);
    for (uint64_t s = first; s < first + count; s++)
        one(s, &t);
    printf("# cfdp random scenarios: %llu seeds from %llu: class 2 intact %llu, class 1 "
           "intact "
           "%llu, class 1 incomplete %llu, class 1 unseen %llu\n",
           (unsigned long long)t.runs, (unsigned long long)first,
           (unsigned long long)t.intact[2], (unsigned long long)t.intact[1],
           (unsigned long long)t.incomplete1, (unsigned long long)t.rx_never_knew);
    printf("# faults by condition:");
    for (int c = 1; c < 16; c++)
        if (t.by_cond[c])
            printf(" %s=%llu", cfdp_condition_name((unsigned)c),
                   (unsigned long long)t.by_cond[c]);
    printf("\n# NAKs %llu, bytes resent %llu, restarts from saved state %llu\n",
           (unsigned long long)t.naks, (unsigned long long)t.resent,
           (unsigned long long)t.restarts);
    CHECK_EQ_U64(t.runs, count);
    CHECK(t.intact[2] > 0 && t.intact[1] > 0);
}
