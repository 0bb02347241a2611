/* CFDP entity: the range set, class 1 and class 2 transfers on the virtual
 * clock (sizes, checksum types, loss, duplication, reordering, long delays,
 * outages), user requests, fault handlers and timers. The failure modes of
 * other implementations have their own tests in test_entity_faults.c. */
#include "entity_harness.h"
#include "rset.c" /* internal (hidden) symbols: the test links its own copy */

/* ---------------------------------------------------------- range set */

typedef struct pieces {
    cfdp_range r[16];
    size_t n;
} pieces;

static int on_piece(void *arg, uint64_t s, uint64_t e)
{
    pieces *p = arg;
    p->r[p->n++] = (cfdp_range){s, e};
    return 0;
}

TEST(rset_add_reports_new_pieces_and_merges)
{
    cfdp__rset s = {0};
    pieces p = {0};
    CHECK_OK(cfdp__rset_add(&s, 10, 20, on_piece, &p));
    CHECK_OK(cfdp__rset_add(&s, 30, 40, on_piece, &p));
    CHECK_OK(cfdp__rset_add(&s, 0, 5, on_piece, &p));
    CHECK_EQ_U64(s.n, 3);
    p.n = 0;
    /* overlaps [10,20) and [30,40): new bytes are [5,10), [20,30), [40,45) */
    CHECK_OK(cfdp__rset_add(&s, 5, 45, on_piece, &p));
    CHECK_EQ_U64(p.n, 3);
    CHECK_EQ_U64(p.r[0].start, 5);
    CHECK_EQ_U64(p.r[0].end, 10);
    CHECK_EQ_U64(p.r[1].start, 20);
    CHECK_EQ_U64(p.r[1].end, 30);
    CHECK_EQ_U64(p.r[2].start, 40);
    CHECK_EQ_U64(p.r[2].end, 45);
    CHECK_EQ_U64(s.n, 1);
    CHECK_EQ_U64(s.total, 45);
    /* a duplicate adds nothing */
    p.n = 0;
    CHECK_OK(cfdp__rset_add(&s, 7, 9, on_piece, &p));
    CHECK_EQ_U64(p.n, 0);
    CHECK_EQ_U64(s.total, 45);
    /* touching ranges merge */
    CHECK_OK(cfdp__rset_add(&s, 45, 50, NULL, NULL));
    CHECK_EQ_U64(s.n, 1);
    CHECK(cfdp__rset_covers(&s, 0, 50));
    CHECK(!cfdp__rset_covers(&s, 0, 51));
    cfdp__rset_free(&s);
}

TEST(rset_remove_and_gaps)
{
    cfdp__rset s = {0};
    CHECK_OK(cfdp__rset_add(&s, 0, 100, NULL, NULL));
    CHECK_OK(cfdp__rset_remove(&s, 10, 20)); /* split */
    CHECK_OK(cfdp__rset_remove(&s, 90, 200));
    CHECK_OK(cfdp__rset_remove(&s, 0, 5));
    CHECK_EQ_U64(s.n, 2);
    CHECK_EQ_U64(s.total, 5 + 70);
    uint64_t gs, ge;
    CHECK(cfdp__rset_next_gap(&s, 0, 100, &gs, &ge));
    CHECK_EQ_U64(gs, 0);
    CHECK_EQ_U64(ge, 5);
    CHECK(cfdp__rset_next_gap(&s, ge, 100, &gs, &ge));
    CHECK_EQ_U64(gs, 10);
    CHECK_EQ_U64(ge, 20);
    CHECK(cfdp__rset_next_gap(&s, ge, 100, &gs, &ge));
    CHECK_EQ_U64(gs, 90);
    CHECK_EQ_U64(ge, 100);
    CHECK(!cfdp__rset_next_gap(&s, ge, 100, &gs, &ge));
    CHECK_EQ_U64(cfdp__rset_gap_count(&s, 100), 3);
    /* a gap at the very top of the 64-bit space: no wrap */
    cfdp__rset t = {0};
    CHECK_OK(cfdp__rset_add(&t, UINT64_MAX - 10, UINT64_MAX, NULL, NULL));
    CHECK(cfdp__rset_next_gap(&t, 0, UINT64_MAX, &gs, &ge));
    CHECK_EQ_U64(ge, UINT64_MAX - 10);
    CHECK(!cfdp__rset_next_gap(&t, UINT64_MAX - 10, UINT64_MAX, &gs, &ge));
    cfdp__rset_free(&t);
    cfdp__rset_free(&s);
}

TEST(rset_memory_follows_gaps_not_span)
{
    /* 5 GiB received in 64 KiB pieces with every 1000th missing: ranges, not bytes */
    cfdp__rset s = {0};
    uint64_t seg = 65536, n = (5ull << 30) / seg;
    for (uint64_t i = 0; i < n; i++)
        if (i % 1000 != 999)
            CHECK_OK(cfdp__rset_add(&s, i * seg, (i + 1) * seg, NULL, NULL));
    CHECK_EQ_U64(s.n, n / 1000 + 1);
    CHECK(s.cap * sizeof(cfdp_range) < 64 * 1024);
    CHECK_EQ_U64(cfdp__rset_gap_count(&s, n * seg), n / 1000);
    cfdp__rset_free(&s);
}

/* ----------------------------------------------------------- transfers */

static cfdp_peer_cfg fast_peer(void)
{
    cfdp_peer_cfg pc;
    cfdp_peer_cfg_defaults(&pc);
    pc.ack_timer_ms = 1000;
    pc.nak_timer_ms = 1000;
    pc.inactivity_ms = 30000;
    pc.check_timer_ms = 1000;
    return pc;
}

typedef struct xfer_result {
    const rec *tx, *rx;
    int intact;
} xfer_result;

/* Puts a file of size bytes from 1 to 2; runs until idle. */
static xfer_result xfer(net *n, unsigned cls, size_t size, int cksum, uint64_t seed,
                        uint64_t limit_ms)
{
    uint8_t *data = malloc(size ? size : 1);
    fill(data, size, seed);
    CHECK_OK(cfdp_memfs_put(n->m[0], "src.bin", data, size));
    free(data);
    cfdp_put_req q = put_req(2, "src.bin", "dst.bin", cls);
    q.checksum_type = (int16_t)cksum;
    cfdp_txn_id id;
    CHECK_OK(cfdp_put(n->e[0], cfdp_sim_now(n->s), &q, &id));
    cfdp_sim_run_idle(n->s, limit_ms);
    xfer_result r;
    r.tx = end_of(n, 0);
    r.rx = end_of(n, 1);
    r.intact = same_file(n, 0, "src.bin", 1, "dst.bin");
    return r;
}

TEST(class2_sizes_and_every_checksum)
{
    static const size_t sizes[] = {0, 1, 3, 1000, 1001, 4093, 100003};
    static const int types[] = {CFDP_CKSUM_MODULAR, CFDP_CKSUM_PROX1, CFDP_CKSUM_CRC32C,
                                CFDP_CKSUM_CRC32, CFDP_CKSUM_NULL};
    cfdp_peer_cfg pc = fast_peer();
    cfdp_link_cfg lk = {.delay_ms = 10};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
            net n;
            net_init(&n, 2, &pc, &lk, i * 10 + k);
            xfer_result r = xfer(&n, 2, sizes[i], types[k], i, 600000);
            CHECK_MSG(r.tx && r.rx, "size %zu type %d: no end", sizes[i], types[k]);
            CHECK_EQ_INT(r.tx->type, CFDP_IND_FINISHED);
            CHECK_EQ_INT(r.tx->condition, CFDP_COND_NO_ERROR);
            CHECK_EQ_INT(r.tx->delivery, CFDP_DATA_COMPLETE);
            CHECK_EQ_INT(r.tx->file_status, CFDP_FILE_RETAINED);
            CHECK_EQ_INT(r.rx->type, CFDP_IND_FINISHED);
            CHECK_EQ_INT(r.rx->condition, CFDP_COND_NO_ERROR);
            CHECK_MSG(r.intact, "size %zu type %d: file differs", sizes[i], types[k]);
            CHECK_EQ_U64(count_type(&n, 0, CFDP_IND_FINISHED), 1);
            CHECK_EQ_U64(count_type(&n, 1, CFDP_IND_FINISHED), 1);
            CHECK_EQ_U64(count_type(&n, 1, CFDP_IND_METADATA), 1);
            cfdp_entity_stats st;
            cfdp_entity_stats_get(n.e[1], &st);
            CHECK_EQ_U64(st.naks_sent, 0);
            CHECK_EQ_U64(st.txns_active, 0);
            net_free(&n);
        }
}

TEST(class1_sizes_and_every_checksum)
{
    static const size_t sizes[] = {0, 1, 7, 1024, 65537};
    static const int types[] = {CFDP_CKSUM_MODULAR, CFDP_CKSUM_PROX1, CFDP_CKSUM_CRC32C,
                                CFDP_CKSUM_CRC32, CFDP_CKSUM_NULL};
    cfdp_peer_cfg pc = fast_peer();
    cfdp_link_cfg lk = {.delay_ms = 10};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
            net n;
            net_init(&n, 2, &pc, &lk, i * 10 + k);
            xfer_result r = xfer(&n, 1, sizes[i], types[k], i, 600000);
            CHECK(r.tx && r.rx);
            CHECK_EQ_INT(r.tx->type, CFDP_IND_FINISHED);
            CHECK_EQ_INT(r.tx->file_status, CFDP_FILE_UNREPORTED);
            CHECK_EQ_INT(r.rx->type, CFDP_IND_FINISHED);
            CHECK_EQ_INT(r.rx->condition, CFDP_COND_NO_ERROR);
            CHECK_EQ_INT(r.rx->delivery, CFDP_DATA_COMPLETE);
            CHECK(r.intact);
            net_free(&n);
        }
}

TEST(class1_closure_reports_back)
{
    cfdp_peer_cfg pc = fast_peer();
    pc.closure = 1;
    cfdp_link_cfg lk = {.delay_ms = 100};
    net n;
    net_init(&n, 2, &pc, &lk, 3);
    xfer_result r = xfer(&n, 1, 5000, CFDP_CKSUM_CRC32, 3, 600000);
    CHECK(r.tx && r.rx && r.intact);
    CHECK_EQ_INT(r.tx->condition, CFDP_COND_NO_ERROR);
    CHECK_EQ_INT(r.tx->delivery, CFDP_DATA_COMPLETE);
    CHECK_EQ_INT(r.tx->file_status, CFDP_FILE_RETAINED);
    net_free(&n);
}

TEST(class1_under_loss_reports_incomplete)
{
    cfdp_peer_cfg pc = fast_peer();
    cfdp_link_cfg lk = {.delay_ms = 5, .loss = 0.2};
    int incomplete = 0;
    for (uint64_t seed = 1; seed <= 20; seed++) {
        net n;
        net_init(&n, 2, &pc, &lk, seed);
        xfer_result r = xfer(&n, 1, 20000, CFDP_CKSUM_CRC32C, seed, 600000);
        const rec *rx = r.rx;
        if (rx && rx->condition == CFDP_COND_NO_ERROR) {
            CHECK_MSG(r.intact, "seed %llu: success claimed on a damaged file",
                      (unsigned long long)seed);
            CHECK_EQ_INT(rx->delivery, CFDP_DATA_COMPLETE);
        } else if (rx) {
            CHECK_EQ_INT(rx->delivery, CFDP_DATA_INCOMPLETE);
            /* check limit after an EOF, inactivity when the EOF was lost */
            CHECK_MSG(rx->condition == CFDP_COND_CHECK_LIMIT ||
                          rx->condition == CFDP_COND_INACTIVITY,
                      "condition %d", rx->condition);
            incomplete++;
        } else {
            /* Metadata and EOF both lost: the receiver never knew */
            CHECK(!r.intact);
        }
        net_free(&n);
    }
    CHECK(incomplete > 10);
}

TEST(class2_10mb_with_loss_and_duplication)
{
    cfdp_peer_cfg pc = fast_peer();
    pc.max_pdu = 8192;
    cfdp_link_cfg lk = {.delay_ms = 50, .loss = 0.05, .dup = 0.05, .jitter_ms = 20};
    net n;
    net_init(&n, 2, &pc, &lk, 77);
    xfer_result r = xfer(&n, 2, 10 * 1000 * 1000, CFDP_CKSUM_CRC32C, 77, 3600000);
    CHECK(r.tx && r.rx);
    CHECK_EQ_INT(r.tx->condition, CFDP_COND_NO_ERROR);
    CHECK_EQ_INT(r.rx->condition, CFDP_COND_NO_ERROR);
    CHECK(r.intact);
    cfdp_entity_stats st;
    cfdp_entity_stats_get(n.e[0], &st);
    CHECK(st.file_bytes_resent > 0);
    cfdp_entity_stats_get(n.e[1], &st);
    CHECK(st.naks_sent > 0);
    CHECK(st.file_bytes_dup > 0);
    net_free(&n);
}

TEST(class2_twenty_minute_light_time_and_outage)
{
    cfdp_peer_cfg pc = fast_peer();
    /* timers must outlast a round trip of 40 min */
    pc.ack_timer_ms = 2500000;
    pc.nak_timer_ms = 2500000;
    pc.inactivity_ms = 3 * 3600000;
    cfdp_outage out[] = {{1200000, 1300000}};
    cfdp_link_cfg lk = {.delay_ms = 1200000, .loss = 0.1, .outages = out, .noutages = 1};
    net n;
    net_init(&n, 2, &pc, &lk, 5);
    xfer_result r = xfer(&n, 2, 50000, CFDP_CKSUM_MODULAR, 5, 48 * 3600000ull);
    CHECK(r.tx && r.rx && r.intact);
    CHECK_EQ_INT(r.tx->condition, CFDP_COND_NO_ERROR);
    CHECK(cfdp_sim_now(n.s) >= 2 * 1200000);
    net_free(&n);
}

TEST(class2_sparse_5gib_pattern_file)
{
    cfdp_peer_cfg pc = fast_peer();
    pc.max_pdu = 65535;
    cfdp_link_cfg lk = {.delay_ms = 20, .loss = 0.001, .max_inflight = 64};
    net n;
    net_init(&n, 2, &pc, &lk, 9);
    uint64_t size = (5ull << 30) + 12345;
    CHECK_OK(cfdp_memfs_put_pattern(n.m[0], "big", size, 42));
    CHECK_OK(cfdp_memfs_expect_pattern(n.m[1], "big.out", 42));
    cfdp_put_req q = put_req(2, "big", "big.out", 2);
    q.checksum_type = CFDP_CKSUM_CRC32C;
    CHECK_OK(cfdp_put(n.e[0], 0, &q, NULL));
    cfdp_sim_run_idle(n.s, 24 * 3600000ull);
    const rec *tx = end_of(&n, 0), *rx = end_of(&n, 1);
    CHECK(tx && rx);
    CHECK_EQ_INT(rx->condition, CFDP_COND_NO_ERROR);
    CHECK_EQ_INT(tx->condition, CFDP_COND_NO_ERROR);
    CHECK_EQ_U64(rx->file_size, size);
    uint64_t bad = 1;
    CHECK(cfdp_memfs_pattern_complete(n.m[1], "big.out", size, &bad));
    CHECK_EQ_U64(bad, 0);
    CHECK(cfdp_memfs_bytes_held(n.m[1]) < 1024 * 1024);
    net_free(&n);
}
