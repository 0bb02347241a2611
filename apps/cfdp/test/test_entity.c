/* CFDP entity: the range set, class 1 and class 2 transfers on the virtual
 * clock (sizes, checksum types, loss, duplication, reordering, long delays,
 * outages), user requests, fault handlers and timers. The failure modes of
 * other implementations have their own tests in test_entity_faults.c. */
#include <stdio.h>
#include <unistd.h>

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

/* ------------------------------------------------- save and restore */

typedef struct progress_at {
    net *n;
    int i;
    cfdp_txn_id id;
    uint64_t want;
} progress_at;

static int reached(void *arg)
{
    progress_at *p = arg;
    cfdp_txn_info in;
    if (cfdp_report(p->n->e[p->i], p->id, &in))
        return 0;
    net_drain(p->n, p->i);
    return in.progress >= p->want;
}

TEST(restore_receiver_mid_transfer)
{
    cfdp_peer_cfg pc = fast_peer();
    cfdp_link_cfg lk = {.delay_ms = 100, .loss = 0.05, .max_inflight = 16};
    net n;
    net_init(&n, 2, &pc, &lk, 21);
    static uint8_t data[300000];
    fill(data, sizeof data, 21);
    CHECK_OK(cfdp_memfs_put(n.m[0], "f", data, sizeof data));
    cfdp_put_req q = put_req(2, "f", "g", 2);
    q.checksum_type = CFDP_CKSUM_CRC32;
    cfdp_txn_id id;
    CHECK_OK(cfdp_put(n.e[0], 0, &q, &id));
    progress_at pa = {&n, 1, id, sizeof data / 2};
    CHECK_OK(cfdp_sim_run_until(n.s, 3600000, reached, &pa));
    cfdp_txn_info before;
    CHECK_OK(cfdp_report(n.e[1], id, &before));
    CHECK(before.progress < sizeof data); /* mid-transfer */
    size_t len = 0;
    CHECK_RC(cfdp_txn_save(n.e[1], id, NULL, 0, &len), TERN_ENOSPACE);
    uint8_t *buf = malloc(len);
    CHECK_OK(cfdp_txn_save(n.e[1], id, buf, len, &len));
    /* every truncation of the saved state is refused */
    for (size_t cut = 0; cut < len; cut++) {
        cfdp_entity *tmp = NULL;
        cfdp_sim_restart(n.s, 2, &tmp);
        CHECK(cfdp_txn_restore(tmp, 0, buf, cut, NULL) < 0);
    }
    cfdp_entity *fresh;
    CHECK_OK(cfdp_sim_restart(n.s, 2, &fresh));
    n.e[1] = fresh;
    free(n.r[1]);
    n.r[1] = NULL;
    n.nr[1] = n.cr[1] = 0;
    cfdp_txn_id rid;
    CHECK_OK(cfdp_txn_restore(fresh, cfdp_sim_now(n.s), buf, len, &rid));
    CHECK_RC(cfdp_txn_restore(fresh, cfdp_sim_now(n.s), buf, len, NULL), TERN_EEXIST);
    CHECK_EQ_U64(rid.seq, id.seq);
    cfdp_txn_info after;
    CHECK_OK(cfdp_report(fresh, id, &after));
    CHECK_EQ_U64(after.progress, before.progress);
    CHECK_EQ_U64(after.gaps, before.gaps);
    cfdp_entity_stats s0;
    cfdp_entity_stats_get(n.e[0], &s0);
    cfdp_sim_run_idle(n.s, 3600000);
    const rec *tx = end_of(&n, 0), *rx = end_of(&n, 1);
    CHECK(tx && rx);
    CHECK_EQ_INT(rx->condition, CFDP_COND_NO_ERROR);
    CHECK_EQ_INT(tx->condition, CFDP_COND_NO_ERROR);
    CHECK(same_file(&n, 0, "f", 1, "g"));
    /* what the receiver held was not asked for again */
    cfdp_entity_stats s1;
    cfdp_entity_stats_get(n.e[0], &s1);
    CHECK_MSG(s1.file_bytes_resent - s0.file_bytes_resent <=
                  2 * (sizeof data - before.progress),
              "resent %llu, missing %llu, sent %llu",
              (unsigned long long)(s1.file_bytes_resent - s0.file_bytes_resent),
              (unsigned long long)(sizeof data - before.progress),
              (unsigned long long)s0.file_bytes_out);
    cfdp_entity_stats rs;
    cfdp_entity_stats_get(fresh, &rs);
    CHECK(rs.file_bytes_in - rs.file_bytes_dup <= sizeof data - before.progress);
    CHECK_EQ_U64(rs.file_bytes_in - rs.file_bytes_dup, sizeof data - before.progress);
    free(buf);
    net_free(&n);
}

TEST(restore_sender_mid_transfer)
{
    cfdp_peer_cfg pc = fast_peer();
    cfdp_link_cfg lk = {.delay_ms = 100, .max_inflight = 16};
    net n;
    net_init(&n, 2, &pc, &lk, 22);
    static uint8_t data[300000];
    fill(data, sizeof data, 22);
    CHECK_OK(cfdp_memfs_put(n.m[0], "f", data, sizeof data));
    cfdp_put_req q = put_req(2, "f", "g", 2);
    cfdp_txn_id id;
    CHECK_OK(cfdp_put(n.e[0], 0, &q, &id));
    progress_at pa = {&n, 0, id, sizeof data * 2 / 5};
    CHECK_OK(cfdp_sim_run_until(n.s, 3600000, reached, &pa));
    cfdp_txn_info before;
    CHECK_OK(cfdp_report(n.e[0], id, &before));
    uint8_t buf[4096];
    size_t len;
    CHECK_OK(cfdp_txn_save(n.e[0], id, buf, sizeof buf, &len));
    uint64_t seq = cfdp_entity_next_seq(n.e[0]);
    cfdp_entity *fresh;
    CHECK_OK(cfdp_sim_restart(n.s, 1, &fresh));
    n.e[0] = fresh;
    free(n.r[0]);
    n.r[0] = NULL;
    n.nr[0] = n.cr[0] = 0;
    CHECK_OK(cfdp_txn_restore(fresh, cfdp_sim_now(n.s), buf, len, NULL));
    cfdp_sim_run_idle(n.s, 3600000);
    const rec *tx = end_of(&n, 0), *rx = end_of(&n, 1);
    CHECK(tx && rx);
    CHECK_EQ_INT(tx->condition, CFDP_COND_NO_ERROR);
    CHECK_EQ_INT(rx->condition, CFDP_COND_NO_ERROR);
    CHECK(same_file(&n, 0, "f", 1, "g"));
    /* the restored sender went on from where it was: the bytes it sent are
     * the rest of the file, plus what the restart lost in its hands */
    cfdp_entity_stats st;
    cfdp_entity_stats_get(fresh, &st);
    CHECK(st.file_bytes_out - st.file_bytes_resent == sizeof data - before.progress);
    CHECK(st.file_bytes_resent <= 2 * 1024);
    CHECK(seq > id.seq);
    net_free(&n);
}

TEST(restore_refuses_garbage)
{
    cfdp_peer_cfg pc = fast_peer();
    wire w = {0};
    cfdp_memfs *m;
    cfdp_fs fs;
    CHECK_OK(cfdp_memfs_new(&m, &fs));
    cfdp_entity *e = wired(1, fs, &pc, &w);
    CHECK_RC(cfdp_txn_restore(e, 0, "CFDPTXN\x02", 8, NULL), TERN_EMALFORMED);
    CHECK_RC(cfdp_txn_restore(e, 0, "CFD", 3, NULL), TERN_ETRUNCATED);
    uint8_t junk[600];
    fill(junk, sizeof junk, 1);
    memcpy(junk, "CFDPTXN\x01", 8);
    CHECK(cfdp_txn_restore(e, 0, junk, sizeof junk, NULL) < 0);
    cfdp_entity_free(e);
    cfdp_memfs_free(m);
    wire_free(&w);
}

/* ------------------------------------------ requests, timers, faults */

/* Drops every PDU of kind (and direction from -> any) while on. */
typedef struct kill_ctx {
    int kind;
    uint64_t from;
    int on;
    size_t dropped;
} kill_ctx;

static int kill_kind(void *arg, uint64_t from, uint64_t to, const uint8_t *b, size_t len)
{
    (void)to;
    kill_ctx *k = arg;
    cfdp_pdu p;
    if (!k->on || from != k->from || cfdp_pdu_decode(b, len, 0, &p, NULL))
        return 0;
    if (k->kind == -1 || p.kind == k->kind ||
        (k->kind == -2 && p.kind != CFDP_METADATA)) {
        k->dropped++;
        return 1;
    }
    return 0;
}

TEST(ack_limit_reached_when_eof_acks_are_lost)
{
    cfdp_peer_cfg pc = fast_peer();
    pc.ack_limit = 3;
    cfdp_link_cfg lk = {.delay_ms = 10};
    net n;
    net_init(&n, 2, &pc, &lk, 1);
    /* nothing from the receiver gets back: neither ACK nor Finished */
    kill_ctx k = {-1, 2, 1, 0};
    cfdp_sim_set_filter(n.s, kill_kind, &k);
    xfer_result r = xfer(&n, 2, 3000, CFDP_CKSUM_MODULAR, 1, 3600000);
    CHECK(r.tx);
    /* limit 3: the EOF sent 1 + 3 times, then the fault; the default
     * handler cancels, and that EOF's ACK is lost too: abandoned */
    cfdp_entity_stats st;
    cfdp_entity_stats_get(n.e[0], &st);
    CHECK(st.eofs_resent >= 3);
    CHECK(r.tx->condition == CFDP_COND_ACK_LIMIT);
    CHECK(r.tx->type == CFDP_IND_ABANDONED || r.tx->type == CFDP_IND_FINISHED);
    CHECK(r.intact); /* the data got through; only its ACKs did not */
    net_free(&n);
}

TEST(nak_limit_reached_when_data_never_arrives)
{
    cfdp_peer_cfg pc = fast_peer();
    pc.nak_limit = 2;
    pc.max_segment = 500;
    cfdp_link_cfg lk = {.delay_ms = 10};
    net n;
    net_init(&n, 2, &pc, &lk, 1);
    kill_ctx k = {CFDP_FILE_DATA, 1, 1, 0};
    cfdp_sim_set_filter(n.s, kill_kind, &k);
    xfer_result r = xfer(&n, 2, 3000, CFDP_CKSUM_MODULAR, 1, 3600000);
    CHECK(r.rx && r.tx);
    CHECK_EQ_INT(r.rx->condition, CFDP_COND_NAK_LIMIT);
    CHECK_EQ_INT(r.rx->delivery, CFDP_DATA_INCOMPLETE);
    CHECK_EQ_INT(r.tx->condition, CFDP_COND_NAK_LIMIT);
    CHECK_EQ_U64(r.tx->type, CFDP_IND_FINISHED);
    cfdp_entity_stats st;
    cfdp_entity_stats_get(n.e[1], &st);
    CHECK_EQ_U64(st.naks_sent, 1 + 2); /* the first, two retries, then the fault */
    net_free(&n);
}

TEST(inactivity_at_the_receiver)
{
    cfdp_peer_cfg pc = fast_peer();
    pc.inactivity_ms = 5000;
    cfdp_link_cfg lk = {.delay_ms = 10};
    net n;
    net_init(&n, 2, &pc, &lk, 1);
    kill_ctx k = {-2, 1, 1, 0}; /* all but Metadata */
    cfdp_sim_set_filter(n.s, kill_kind, &k);
    CHECK_OK(cfdp_memfs_put(n.m[0], "f", "0123456789", 10));
    cfdp_put_req q = put_req(2, "f", "g", 2);
    cfdp_txn_id id;
    CHECK_OK(cfdp_put(n.e[0], 0, &q, &id));
    /* metadata only got through, then the sender vanished */
    cfdp_entity *gone = NULL;
    CHECK_OK(cfdp_sim_restart(n.s, 1, &gone));
    n.e[0] = gone;
    k.on = 0; /* the new sender answers the Finished of a transaction it forgot */
    cfdp_sim_run_idle(n.s, 3600000);
    const rec *rx = end_of(&n, 1);
    CHECK(rx);
    CHECK_EQ_INT(rx->condition, CFDP_COND_INACTIVITY);
    CHECK(cfdp_sim_now(n.s) >= 5000);
    net_free(&n);
}

typedef struct handler_case {
    unsigned handler;
    unsigned want_type;
} handler_case;

TEST(each_fault_handler_on_checksum_failure)
{
    /* the receiver's MIB says the checksum is CRC-32 but the sender's file is
     * damaged in flight: a checksum failure, handled four ways */
    static const handler_case cases[] = {
        {CFDP_HANDLER_CANCEL, CFDP_IND_FINISHED},
        {CFDP_HANDLER_ABANDON, CFDP_IND_ABANDONED},
        {CFDP_HANDLER_IGNORE, CFDP_IND_FINISHED},
        {CFDP_HANDLER_SUSPEND, CFDP_IND_SUSPENDED},
    };
    for (size_t c = 0; c < 4; c++) {
        cfdp_peer_cfg pc = fast_peer();
        pc.max_segment = 1000;
        wire wa = {0}, wb = {0};
        cfdp_memfs *ma, *mb;
        cfdp_fs fa, fb;
        CHECK_OK(cfdp_memfs_new(&ma, &fa));
        CHECK_OK(cfdp_memfs_new(&mb, &fb));
        cfdp_entity *a = wired(1, fa, &pc, &wa);
        cfdp_peer_cfg pb = pc;
        pb.handlers[CFDP_COND_CHECKSUM_FAILURE] = (uint8_t)cases[c].handler;
        cfdp_entity *b = wired(2, fb, &pb, &wb);
        uint8_t data[3000];
        fill(data, sizeof data, 5);
        CHECK_OK(cfdp_memfs_put(ma, "f", data, sizeof data));
        cfdp_put_req q = put_req(2, "f", "g", 2);
        q.checksum_type = CFDP_CKSUM_CRC32;
        cfdp_txn_id id;
        CHECK_OK(cfdp_put(a, 0, &q, &id));
        for (size_t i = 0; i < wa.n; i++) {
            cfdp_pdu p;
            CHECK_OK(cfdp_pdu_decode(wa.p[i].b, wa.p[i].len, 0, &p, NULL));
            if (p.kind == CFDP_FILE_DATA && p.u.fd.offset == 1000)
                wa.p[i].b[wa.p[i].len - 1] ^= 0x40; /* one bit of file data */
            cfdp_entity_pdu_in(b, 1, wa.p[i].b, wa.p[i].len);
        }
        cfdp_entity_advance(b, 1000);
        cfdp_ind ind;
        int seen = 0, fault = 0;
        while (cfdp_entity_next_indication(b, &ind) == 0) {
            fault |=
                ind.type == CFDP_IND_FAULT && ind.condition == CFDP_COND_CHECKSUM_FAILURE;
            if (ind.type == cases[c].want_type && ind.type != CFDP_IND_EOF_RECEIVED)
                seen = 1;
            if (ind.type == CFDP_IND_SUSPENDED)
                CHECK_EQ_INT(ind.condition, CFDP_COND_CHECKSUM_FAILURE);
        }
        if (cases[c].handler == CFDP_HANDLER_CANCEL ||
            cases[c].handler == CFDP_HANDLER_IGNORE) {
            /* a Finished went out: cancel says checksum failure, ignore no error */
            size_t fi = SIZE_MAX;
            for (size_t i = 0; i < wb.n; i++)
                if (pdu_kind(&wb.p[i]) == CFDP_FINISHED)
                    fi = i;
            CHECK(fi != SIZE_MAX);
            cfdp_pdu f;
            CHECK_OK(cfdp_pdu_decode(wb.p[fi].b, wb.p[fi].len, 0, &f, NULL));
            CHECK_EQ_INT(f.u.fin.condition, cases[c].handler == CFDP_HANDLER_CANCEL
                                                ? CFDP_COND_CHECKSUM_FAILURE
                                                : CFDP_COND_NO_ERROR);
            CHECK_EQ_INT(fault, cases[c].handler == CFDP_HANDLER_IGNORE);
            wire_deliver(&wb, 0, a, 2);
            size_t ack = wa.n;
            wire_deliver(&wa, ack - 1, b, 3);
            CHECK(ind_wait(b, CFDP_IND_FINISHED, &ind));
            seen = 1;
        } else if (cases[c].handler == CFDP_HANDLER_ABANDON) {
            CHECK_EQ_U64(wire_count(&wb, CFDP_FINISHED), 0);
        } else {
            CHECK_EQ_U64(wire_count(&wb, CFDP_FINISHED), 0);
            cfdp_txn_info in;
            CHECK_OK(cfdp_report(b, id, &in));
            CHECK_EQ_INT(in.state, CFDP_STATE_SUSPENDED);
        }
        CHECK_MSG(seen, "handler %u", cases[c].handler);
        cfdp_entity_free(a);
        cfdp_entity_free(b);
        cfdp_memfs_free(ma);
        cfdp_memfs_free(mb);
        wire_free(&wa);
        wire_free(&wb);
    }
}

/* A host that takes file data by descriptor: it reads them back from the
 * file, as ternd does, and puts the whole PDU on the wire. */
typedef struct fdhost {
    wire w;
    int mode; /* 0 take, 1 -ENOTSUP, 2 -EAGAIN for the 3rd one */
    size_t calls, taken, bad_head;
} fdhost;

static int fd_send(void *ctx, uint64_t dst, const uint8_t *b, size_t len)
{
    return wire_send(&((fdhost *)ctx)->w, dst, b, len);
}

static int fd_send_file(void *ctx, uint64_t dst, const uint8_t *head, size_t hlen, int fd,
                        uint64_t off, size_t len)
{
    fdhost *h = ctx;
    h->calls++;
    if (h->mode == 1)
        return -ENOTSUP;
    if (h->mode == 2 && h->calls == 3)
        return -EAGAIN;
    uint8_t pdu[CFDP_PDU_MAX];
    if (hlen + len > sizeof pdu)
        return -EINVAL;
    memcpy(pdu, head, hlen);
    if (pread(fd, pdu + hlen, len, (off_t)off) != (ssize_t)len)
        return -EIO;
    /* the head is the PDU up to its data: its offset field names off */
    cfdp_pdu p;
    if (cfdp_pdu_decode(pdu, hlen + len, 0, &p, NULL) || p.kind != CFDP_FILE_DATA ||
        p.u.fd.offset != off || p.u.fd.len != len)
        h->bad_head++;
    h->taken++;
    return wire_send(&h->w, dst, pdu, hlen + len);
}

TEST(file_data_goes_by_descriptor_when_the_host_takes_it)
{
    enum { SIZE = 200003 };
    uint8_t *data = malloc(SIZE);
    fill(data, SIZE, 41);
    uint8_t want[32];
    cfdp_sha256(data, SIZE, want);
    const char *root = tt_tmpdir();
    char path[4200];
    snprintf(path, sizeof path, "%s/src.bin", root);
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(data, 1, SIZE, f) == SIZE);
    fclose(f);
    /* mode 0 and 2 by descriptor (2: one refused busy, sent later as bytes),
     * 1 refused as unsupported, 3 a peer that wants the CRC: always bytes */
    for (int mode = 0; mode < 4; mode++) {
        cfdp_peer_cfg pc = fast_peer();
        pc.max_segment = 4000;
        pc.crc_required = mode == 3;
        cfdp_posixfs *px;
        cfdp_fs fa, fb;
        cfdp_memfs *mb;
        CHECK_OK(cfdp_posixfs_new(root, &px, &fa));
        CHECK_OK(cfdp_memfs_new(&mb, &fb));
        fdhost h = {.mode = mode == 3 ? 0 : mode};
        cfdp_entity_cfg c;
        memset(&c, 0, sizeof c);
        c.id = 1;
        c.fs = fa;
        c.defaults = pc;
        cfdp_host host = {.ctx = &h,
                          .send = fd_send,
                          .queue_indications = 1,
                          .send_file = fd_send_file};
        cfdp_entity *a = NULL;
        CHECK_OK(cfdp_entity_new(&c, &host, &a));
        wire wb = {0};
        cfdp_entity *b = wired(2, fb, &pc, &wb);
        cfdp_put_req q = put_req(2, "src.bin", "dst.bin", 1);
        cfdp_txn_id id;
        CHECK_OK(cfdp_put(a, 0, &q, &id));
        if (mode == 2)
            CHECK_OK(cfdp_entity_transport_ready(a, 1));
        wire_deliver(&h.w, 0, b, 2);
        cfdp_entity_advance(b, 3);
        cfdp_ind ind;
        CHECK(ind_wait(b, CFDP_IND_FINISHED, &ind));
        CHECK_EQ_INT(ind.condition, CFDP_COND_NO_ERROR);
        uint8_t got[32];
        CHECK_OK(cfdp_memfs_sha256(mb, "dst.bin", got));
        CHECK_EQ_MEM(got, want, 32);
        size_t fdpdus = wire_count(&h.w, CFDP_FILE_DATA);
        CHECK(fdpdus >= (SIZE + 3999) / 4000);
        cfdp_entity_stats st;
        cfdp_entity_stats_get(a, &st);
        CHECK_EQ_U64(h.bad_head, 0);
        if (mode == 0) {
            CHECK_EQ_U64(h.taken, fdpdus);
            CHECK_EQ_U64(st.file_data_by_fd, fdpdus);
        } else if (mode == 2) {
            CHECK_EQ_U64(h.taken, fdpdus - 1); /* the busy one went again as bytes */
            CHECK_EQ_U64(st.file_data_by_fd, fdpdus - 1);
            CHECK_EQ_U64(st.send_busy, 1);
        } else {
            CHECK_EQ_U64(st.file_data_by_fd, 0);
            CHECK_EQ_U64(h.taken, 0);
            CHECK_EQ_U64(h.calls, mode == 1 ? fdpdus : 0);
        }
        cfdp_entity_free(a);
        cfdp_entity_free(b);
        cfdp_posixfs_free(px);
        cfdp_memfs_free(mb);
        wire_free(&h.w);
        wire_free(&wb);
    }
    free(data);
}

TEST(suspend_freezes_timers_resume_continues)
{
    cfdp_peer_cfg pc = fast_peer();
    pc.inactivity_ms = 5000;
    cfdp_link_cfg lk = {.delay_ms = 100, .max_inflight = 4};
    net n;
    net_init(&n, 2, &pc, &lk, 1);
    static uint8_t data[50000];
    fill(data, sizeof data, 9);
    CHECK_OK(cfdp_memfs_put(n.m[0], "f", data, sizeof data));
    cfdp_put_req q = put_req(2, "f", "g", 2);
    cfdp_txn_id id;
    CHECK_OK(cfdp_put(n.e[0], 0, &q, &id));
    cfdp_sim_run(n.s, 500);
    CHECK_OK(cfdp_suspend(n.e[0], 500, id));
    CHECK_OK(cfdp_suspend(n.e[1], 500, id));
    CHECK_RC(cfdp_suspend(n.e[1], 500, id), TERN_ESTATE);
    cfdp_txn_info in0, in1;
    CHECK_OK(cfdp_report(n.e[0], id, &in0));
    /* ten times the inactivity timer: nothing happens */
    cfdp_sim_run(n.s, 50500);
    CHECK_OK(cfdp_report(n.e[0], id, &in1));
    CHECK_EQ_U64(in1.progress, in0.progress);
    CHECK_EQ_INT(in1.state, CFDP_STATE_SUSPENDED);
    CHECK(!end_of(&n, 0) && !end_of(&n, 1));
    CHECK_EQ_U64(count_type(&n, 0, CFDP_IND_SUSPENDED), 1);
    CHECK_OK(cfdp_resume(n.e[1], 50500, id));
    CHECK_OK(cfdp_resume(n.e[0], 50500, id));
    CHECK_EQ_U64(count_type(&n, 0, CFDP_IND_RESUMED), 1);
    cfdp_sim_run_idle(n.s, 3600000);
    CHECK(end_of(&n, 0) && end_of(&n, 1));
    CHECK_EQ_INT(end_of(&n, 0)->condition, CFDP_COND_NO_ERROR);
    CHECK(same_file(&n, 0, "f", 1, "g"));
    net_free(&n);
}

static int both_end(void *arg)
{
    net *n = arg;
    return end_of(n, 0) && end_of(n, 1);
}

TEST(cancel_from_the_receiver)
{
    cfdp_peer_cfg pc = fast_peer();
    cfdp_link_cfg lk = {.delay_ms = 100, .max_inflight = 4};
    net n;
    net_init(&n, 2, &pc, &lk, 1);
    static uint8_t data[50000];
    fill(data, sizeof data, 9);
    CHECK_OK(cfdp_memfs_put(n.m[0], "f", data, sizeof data));
    cfdp_put_req q = put_req(2, "f", "g", 2);
    cfdp_txn_id id;
    CHECK_OK(cfdp_put(n.e[0], 0, &q, &id));
    cfdp_sim_run(n.s, 500);
    CHECK_OK(cfdp_cancel(n.e[1], 500, id));
    CHECK_RC(cfdp_cancel(n.e[1], 500, id), TERN_ESTATE);
    CHECK_OK(cfdp_sim_run_until(n.s, 3600000, both_end, &n));
    const rec *tx = end_of(&n, 0), *rx = end_of(&n, 1);
    CHECK(tx && rx);
    CHECK_EQ_INT(tx->type, CFDP_IND_FINISHED);
    CHECK_EQ_INT(tx->condition, CFDP_COND_CANCEL);
    CHECK_EQ_INT(rx->condition, CFDP_COND_CANCEL);
    CHECK_EQ_INT(rx->file_status, CFDP_FILE_DISCARDED);
    CHECK(cfdp_sim_now(n.s) < 5000);
    net_free(&n);
}

TEST(keep_alive_limit_and_prompts)
{
    cfdp_peer_cfg pc = fast_peer();
    pc.keep_alive_ms = 100;
    pc.keep_alive_limit = 2000;
    pc.nak_mode = CFDP_NAK_PROMPTED;
    pc.prompt_ms = 50;
    pc.max_segment = 500;
    cfdp_link_cfg lk = {.delay_ms = 10, .max_inflight = 2};
    net n;
    net_init(&n, 2, &pc, &lk, 1);
    /* data from 1 is lost: the receiver's Keep Alives say it has nothing */
    kill_ctx k = {CFDP_FILE_DATA, 1, 1, 0};
    cfdp_sim_set_filter(n.s, kill_kind, &k);
    static uint8_t data[100000];
    fill(data, sizeof data, 3);
    CHECK_OK(cfdp_memfs_put(n.m[0], "f", data, sizeof data));
    cfdp_put_req q = put_req(2, "f", "g", 2);
    CHECK_OK(cfdp_put(n.e[0], 0, &q, NULL));
    cfdp_sim_run_idle(n.s, 3600000);
    const rec *tx = end_of(&n, 0);
    CHECK(tx);
    CHECK_EQ_INT(tx->condition, CFDP_COND_KEEP_ALIVE_LIMIT);
    cfdp_entity_stats st;
    cfdp_entity_stats_get(n.e[1], &st);
    CHECK(st.naks_sent > 0); /* prompted NAKs before any EOF */
    net_free(&n);
}

TEST(unsupported_checksum_type_answered_with_condition_11)
{
    cfdp_peer_cfg pc = fast_peer();
    wire wb = {0};
    cfdp_memfs *mb;
    cfdp_fs fb;
    CHECK_OK(cfdp_memfs_new(&mb, &fb));
    cfdp_entity *b = wired(2, fb, &pc, &wb);
    cfdp_pdu x;
    memset(&x, 0, sizeof x);
    x.hdr.src = 1;
    x.hdr.dst = 2;
    x.hdr.tsn = 7;
    x.kind = CFDP_METADATA;
    x.u.md.checksum_type = 9;
    x.u.md.file_size = 10;
    x.u.md.src_name = (cfdp_lv){(const uint8_t *)"a", 1};
    x.u.md.dst_name = (cfdp_lv){(const uint8_t *)"b", 1};
    uint8_t buf[256];
    size_t len;
    CHECK_OK(cfdp_pdu_encode(&x, buf, sizeof buf, &len));
    CHECK_OK(cfdp_entity_pdu_in(b, 0, buf, len));
    CHECK_EQ_U64(wire_count(&wb, CFDP_FINISHED), 1);
    cfdp_pdu f;
    CHECK_OK(cfdp_pdu_decode(wb.p[0].b, wb.p[0].len, 0, &f, NULL));
    CHECK_EQ_INT(f.u.fin.condition, CFDP_COND_UNSUPPORTED_CHECKSUM);
    CHECK_EQ_U64(f.u.fin.fault.id, 2);
    /* and put refuses to send with one */
    cfdp_put_req q = put_req(1, NULL, NULL, 2);
    q.checksum_type = 9;
    CHECK_RC(cfdp_put(b, 0, &q, NULL), -ENOTSUP);
    cfdp_entity_free(b);
    cfdp_memfs_free(mb);
    wire_free(&wb);
}

TEST(malformed_pdus_counted_by_reason_and_crc_required)
{
    cfdp_peer_cfg pc = fast_peer();
    pc.crc_required = 1;
    wire wb = {0};
    cfdp_memfs *mb;
    cfdp_fs fb;
    CHECK_OK(cfdp_memfs_new(&mb, &fb));
    cfdp_entity *b = wired(2, fb, &pc, &wb);
    cfdp_pdu x;
    memset(&x, 0, sizeof x);
    x.hdr.src = 1;
    x.hdr.dst = 2;
    x.hdr.tsn = 7;
    x.kind = CFDP_PROMPT;
    uint8_t buf[64];
    size_t len;
    CHECK_OK(cfdp_pdu_encode(&x, buf, sizeof buf, &len));
    CHECK_RC(cfdp_entity_pdu_in(b, 0, buf, len), TERN_EMALFORMED); /* no CRC */
    CHECK_RC(cfdp_entity_pdu_in(b, 0, buf, 2), TERN_ETRUNCATED);
    CHECK_RC(cfdp_entity_pdu_in(b, 0, buf, 2), TERN_ETRUNCATED);
    x.hdr.crc = 1;
    CHECK_OK(cfdp_pdu_encode(&x, buf, sizeof buf, &len));
    buf[len - 1] ^= 1;
    CHECK_RC(cfdp_entity_pdu_in(b, 0, buf, len), TERN_ECORRUPT);
    cfdp_entity_stats st;
    cfdp_entity_stats_get(b, &st);
    CHECK_EQ_U64(st.drop_malformed, 4);
    const char *why;
    uint64_t cnt, total = 0;
    size_t i = 0;
    for (; cfdp_entity_drops(b, i, &why, &cnt) == 0; i++) {
        CHECK(why && *why);
        total += cnt;
    }
    CHECK_EQ_U64(i, 3);
    CHECK_EQ_U64(total, 4);
    CHECK_EQ_U64(wb.n, 0);
    cfdp_entity_free(b);
    cfdp_memfs_free(mb);
    wire_free(&wb);
}

TEST(transport_busy_holds_the_pdu_until_ready)
{
    cfdp_peer_cfg pc = fast_peer();
    wire wa = {0};
    cfdp_memfs *ma;
    cfdp_fs fa;
    CHECK_OK(cfdp_memfs_new(&ma, &fa));
    cfdp_entity *a = wired(1, fa, &pc, &wa);
    static uint8_t data[10000];
    fill(data, sizeof data, 1);
    CHECK_OK(cfdp_memfs_put(ma, "f", data, sizeof data));
    wa.busy = 1;
    cfdp_put_req q = put_req(2, "f", "g", 1);
    CHECK_OK(cfdp_put(a, 0, &q, NULL));
    CHECK_EQ_U64(wa.n, 0);
    CHECK(cfdp_entity_wants_send(a));
    wa.busy = 0;
    CHECK_OK(cfdp_entity_transport_ready(a, 1));
    CHECK_EQ_U64(wire_count(&wa, CFDP_METADATA), 1);
    CHECK_EQ_U64(wire_count(&wa, CFDP_EOF), 1);
    uint64_t sum = 0;
    for (size_t i = 0; i < wa.n; i++) {
        cfdp_pdu p;
        CHECK_OK(cfdp_pdu_decode(wa.p[i].b, wa.p[i].len, 0, &p, NULL));
        if (p.kind == CFDP_FILE_DATA)
            sum += p.u.fd.len;
    }
    CHECK_EQ_U64(sum, sizeof data);
    cfdp_entity_stats st;
    cfdp_entity_stats_get(a, &st);
    CHECK_EQ_U64(st.send_busy, 1);
    CHECK(!cfdp_entity_wants_send(a));
    cfdp_entity_free(a);
    cfdp_memfs_free(ma);
    wire_free(&wa);
}

TEST(three_entities_cross_traffic)
{
    cfdp_peer_cfg pc = fast_peer();
    cfdp_link_cfg lk = {.delay_ms = 30, .loss = 0.1, .jitter_ms = 10};
    net n;
    net_init(&n, 3, &pc, &lk, 31);
    static uint8_t data[40000];
    for (int i = 0; i < 3; i++) {
        fill(data, sizeof data, (uint64_t)i);
        CHECK_OK(cfdp_memfs_put(n.m[i], "f", data, sizeof data - (size_t)i * 7));
    }
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            if (i != j) {
                char name[16];
                snprintf(name, sizeof name, "from%d", i);
                cfdp_put_req q = put_req((uint64_t)j + 1, "f", name, 2);
                CHECK_OK(cfdp_put(n.e[i], 0, &q, NULL));
            }
    cfdp_sim_run_idle(n.s, 3600000);
    for (int i = 0; i < 3; i++) {
        CHECK_EQ_U64(count_type(&n, i, CFDP_IND_FINISHED), 4);
        for (int j = 0; j < 3; j++)
            if (i != j) {
                char name[16];
                snprintf(name, sizeof name, "from%d", i);
                CHECK(same_file(&n, i, "f", j, name));
            }
    }
    net_free(&n);
}

TEST(class2_thirty_percent_loss_both_ways)
{
    cfdp_peer_cfg pc = fast_peer();
    pc.max_pdu = 1500;
    pc.nak_limit = 10;
    pc.ack_limit = 10;
    cfdp_link_cfg lk = {.delay_ms = 200, .loss = 0.3, .jitter_ms = 30};
    for (uint64_t seed = 1; seed <= 3; seed++) {
        net n;
        net_init(&n, 2, &pc, &lk, seed);
        xfer_result r = xfer(&n, 2, 1000000, CFDP_CKSUM_CRC32C, seed, 24 * 3600000ull);
        CHECK(r.tx && r.rx);
        CHECK_EQ_INT(r.tx->condition, CFDP_COND_NO_ERROR);
        CHECK_EQ_INT(r.rx->condition, CFDP_COND_NO_ERROR);
        CHECK(r.intact);
        net_free(&n);
    }
}

typedef struct crc_seen {
    size_t with, without;
} crc_seen;

static int see_crc(void *arg, uint64_t from, uint64_t to, const uint8_t *b, size_t len)
{
    (void)from;
    (void)to;
    crc_seen *c = arg;
    cfdp_header h;
    size_t hl;
    if (cfdp_header_decode(b, len, &h, &hl, NULL) == 0) {
        if (h.crc)
            c->with++;
        else
            c->without++;
    }
    return 0;
}

TEST(crc_required_transfer_carries_crcs_both_ways)
{
    cfdp_peer_cfg pc = fast_peer();
    pc.crc_required = 1;
    cfdp_link_cfg lk = {.delay_ms = 10, .loss = 0.1};
    net n;
    net_init(&n, 2, &pc, &lk, 8);
    crc_seen c = {0};
    cfdp_sim_set_filter(n.s, see_crc, &c);
    xfer_result r = xfer(&n, 2, 30000, CFDP_CKSUM_MODULAR, 8, 3600000);
    CHECK(r.tx && r.rx && r.intact);
    CHECK_EQ_INT(r.rx->condition, CFDP_COND_NO_ERROR);
    CHECK(c.with > 30);
    CHECK_EQ_U64(c.without, 0);
    cfdp_entity_stats st;
    cfdp_entity_stats_get(n.e[1], &st);
    CHECK_EQ_U64(st.drop_malformed, 0);
    net_free(&n);
}

typedef struct eof_cancel_seen {
    size_t eof_fault, fin;
} eof_cancel_seen;

static int drop_from_2(void *arg, uint64_t from, uint64_t to, const uint8_t *b,
                       size_t len)
{
    (void)to;
    eof_cancel_seen *s = arg;
    cfdp_pdu p;
    if (cfdp_pdu_decode(b, len, 0, &p, NULL) == 0) {
        if (p.kind == CFDP_EOF && p.u.eof.condition)
            s->eof_fault++;
        if (p.kind == CFDP_FINISHED)
            s->fin++;
    }
    return from == 2;
}

TEST(fault_handler_overrides_from_the_put_apply_at_both_ends)
{
    size_t eof_faults[2];
    for (int override = 0; override < 2; override++) {
        cfdp_peer_cfg pc = fast_peer();
        pc.ack_limit = 2;
        pc.nak_limit = 1;
        pc.max_segment = 500;
        cfdp_link_cfg lk = {.delay_ms = 10};
        net n;
        net_init(&n, 2, &pc, &lk, 1);
        eof_cancel_seen seen = {0};
        cfdp_sim_set_filter(n.s, drop_from_2, &seen);
        CHECK_OK(cfdp_memfs_put(n.m[0], "f", "0123456789", 10));
        cfdp_tlv ov[] = {
            {.type = CFDP_TLV_FAULT_HANDLER,
             .condition = CFDP_COND_ACK_LIMIT,
             .handler = CFDP_HANDLER_ABANDON},
            {.type = CFDP_TLV_FAULT_HANDLER,
             .condition = CFDP_COND_INACTIVITY,
             .handler = CFDP_HANDLER_ABANDON},
        };
        cfdp_put_req q = put_req(2, "f", "g", 2);
        if (override)
            q.options = (cfdp_tlvs){ov, 2, NULL, 0};
        CHECK_OK(cfdp_put(n.e[0], 0, &q, NULL));
        cfdp_sim_run_idle(n.s, 3600000);
        const rec *tx = end_of(&n, 0), *rx = end_of(&n, 1);
        CHECK(tx && rx);
        CHECK_EQ_INT(tx->type, CFDP_IND_ABANDONED);
        CHECK_EQ_INT(tx->condition, CFDP_COND_ACK_LIMIT);
        /* the receiver's Finished never gets an ACK: ACK limit there too */
        CHECK_EQ_INT(rx->condition, CFDP_COND_ACK_LIMIT);
        CHECK_EQ_INT(rx->type, CFDP_IND_ABANDONED);
        if (override)
            CHECK_EQ_U64(count_type(&n, 1, CFDP_IND_METADATA), 1);
        eof_faults[override] = seen.eof_fault;
        net_free(&n);
    }
    /* by default the ACK limit cancels (an EOF with the condition goes out
     * before the abandon); the override abandons at once */
    CHECK(eof_faults[0] > 0);
    CHECK_EQ_U64(eof_faults[1], 0);
}

static int fs_exec(void *ctx, const cfdp_fs *fs, const cfdp_tlvs *reqs, uint8_t *out,
                   size_t room, size_t *out_len, size_t *out_count)
{
    return cfdp_fs_requests_execute(ctx, fs, reqs, out, room, out_len, out_count);
}

TEST(filestore_requests_run_through_the_hook_and_answer_in_finished)
{
    cfdp_peer_cfg pc = fast_peer();
    wire wa = {0}, wb = {0};
    cfdp_memfs *ma, *mb;
    cfdp_fs fa, fb;
    CHECK_OK(cfdp_memfs_new(&ma, &fa));
    CHECK_OK(cfdp_memfs_new(&mb, &fb));
    cfdp_entity *a = wired(1, fa, &pc, &wa);
    cfdp_entity_cfg c;
    memset(&c, 0, sizeof c);
    c.id = 2;
    c.fs = fb;
    c.defaults = pc;
    c.fs_requests = fs_exec;
    cfdp_host h = {.ctx = &wb, .send = wire_send, .queue_indications = 1};
    cfdp_entity *b;
    CHECK_OK(cfdp_entity_new(&c, &h, &b));
    CHECK_OK(cfdp_memfs_put(ma, "f", "payload", 7));
    cfdp_tlv reqs[] = {
        {.type = CFDP_TLV_FS_REQUEST,
         .action = CFDP_FS_CREATE_DIR,
         .first = {(const uint8_t *)"out", 3}},
        {.type = CFDP_TLV_FS_REQUEST,
         .action = CFDP_FS_RENAME_FILE,
         .first = {(const uint8_t *)"tmp", 3},
         .second = {(const uint8_t *)"out/final", 9}},
        {.type = CFDP_TLV_FS_REQUEST,
         .action = CFDP_FS_DELETE_FILE,
         .first = {(const uint8_t *)"../escape", 9}},
    };
    cfdp_put_req q = put_req(2, "f", "tmp", 2);
    q.options = (cfdp_tlvs){reqs, 3, NULL, 0};
    CHECK_OK(cfdp_put(a, 0, &q, NULL));
    wire_deliver(&wa, 0, b, 1);
    CHECK_OK(cfdp_entity_advance(b, 1000));
    wire_deliver(&wb, 0, a, 2);
    cfdp_ind ind;
    CHECK(ind_wait(a, CFDP_IND_FINISHED, &ind));
    CHECK_EQ_INT(ind.condition, CFDP_COND_NO_ERROR);
    CHECK_EQ_U64(ind.responses.count, 3);
    size_t pos = 0;
    cfdp_tlv r;
    unsigned want[] = {CFDP_FS_SUCCESS, CFDP_FS_SUCCESS, CFDP_FS_DELETE_NOT_ALLOWED};
    for (int i = 0; i < 3; i++) {
        CHECK_OK(cfdp_tlvs_next(&ind.responses, &pos, &r));
        CHECK_EQ_INT(r.type, CFDP_TLV_FS_RESPONSE);
        CHECK_EQ_INT(r.status, want[i]);
    }
    const uint8_t *d;
    size_t l;
    CHECK_OK(cfdp_memfs_get(mb, "out/final", &d, &l));
    CHECK_EQ_U64(l, 7);
    CHECK_EQ_MEM(d, "payload", 7);
    CHECK_RC(cfdp_memfs_get(mb, "tmp", &d, &l), -ENOENT);
    cfdp_entity_free(a);
    cfdp_entity_free(b);
    cfdp_memfs_free(ma);
    cfdp_memfs_free(mb);
    wire_free(&wa);
    wire_free(&wb);
}

static int count_txn(void *arg, const cfdp_txn_info *in)
{
    size_t *c = arg;
    c[in->state == CFDP_STATE_FINISHED]++;
    return 0;
}

TEST(ion_filestore_form_and_transaction_listing)
{
    for (int ion = 0; ion < 2; ion++) {
        cfdp_peer_cfg pc = fast_peer();
        pc.ion_filestore = (uint8_t)ion;
        wire wa = {0};
        cfdp_memfs *ma;
        cfdp_fs fa;
        CHECK_OK(cfdp_memfs_new(&ma, &fa));
        cfdp_entity *a = wired(1, fa, &pc, &wa);
        cfdp_tlv del = {.type = CFDP_TLV_FS_REQUEST,
                        .action = CFDP_FS_DELETE_FILE,
                        .first = {(const uint8_t *)"old", 3}};
        cfdp_put_req q = put_req(2, NULL, NULL, 1);
        q.options = (cfdp_tlvs){&del, 1, NULL, 0};
        CHECK_OK(cfdp_put(a, 0, &q, NULL));
        cfdp_pdu md;
        CHECK_OK(cfdp_pdu_decode(wa.p[0].b, wa.p[0].len, 0, &md, NULL));
        CHECK_EQ_INT(md.kind, CFDP_METADATA);
        cfdp_tlv got;
        size_t pos = 0;
        CHECK_OK(cfdp_tlvs_next(&md.u.md.options, &pos, &got));
        CHECK_EQ_INT(got.empty_second, ion);
        CHECK_EQ_U64(md.u.md.options.raw_len, 2 + 1 + 1 + 3 + (size_t)ion);
        /* class 1 without closure: finished at once, lingering */
        size_t c[2] = {0, 0};
        CHECK_OK(cfdp_entity_each_txn(a, count_txn, c));
        CHECK_EQ_U64(c[1], 1);
        CHECK_EQ_U64(c[0], 0);
        CHECK_OK(cfdp_entity_advance(a, 3600000)); /* the linger ends */
        c[0] = c[1] = 0;
        CHECK_OK(cfdp_entity_each_txn(a, count_txn, c));
        CHECK_EQ_U64(c[0] + c[1], 0);
        cfdp_entity_free(a);
        cfdp_memfs_free(ma);
        wire_free(&wa);
    }
}

TEST(put_refuses_what_could_never_be_sent)
{
    cfdp_peer_cfg pc = fast_peer();
    pc.max_pdu = 40;
    wire wa = {0};
    cfdp_memfs *ma;
    cfdp_fs fa;
    CHECK_OK(cfdp_memfs_new(&ma, &fa));
    cfdp_entity *a = wired(1, fa, &pc, &wa);
    CHECK_OK(cfdp_memfs_put(ma, "f", "x", 1));
    CHECK_OK(cfdp_memfs_put(ma, "a-rather-long-source-file-name", "x", 1));
    cfdp_put_req q = put_req(2, "a-rather-long-source-file-name", "g", 2);
    CHECK_RC(cfdp_put(a, 0, &q, NULL), -EMSGSIZE); /* Metadata over 40 bytes */
    q = put_req(2, "f", "g", 2);
    CHECK_OK(cfdp_put(a, 0, &q, NULL)); /* fits */
    q = put_req(2, "missing", "g", 2);
    CHECK_RC(cfdp_put(a, 0, &q, NULL), -ENOENT);
    q = put_req(2, "f", NULL, 2);
    CHECK_RC(cfdp_put(a, 0, &q, NULL), -EINVAL);
    q = put_req(2, "f", "g", 3);
    CHECK_RC(cfdp_put(a, 0, &q, NULL), -EINVAL);
    cfdp_entity_stats st;
    cfdp_entity_stats_get(a, &st);
    CHECK_EQ_U64(st.txns_active, 1);
    CHECK_EQ_U64(cfdp_entity_next_seq(a), 2);
    CHECK_EQ_U64(cfdp_memfs_open_files(ma), 1);
    cfdp_entity_free(a);
    cfdp_memfs_free(ma);
    wire_free(&wa);
}
