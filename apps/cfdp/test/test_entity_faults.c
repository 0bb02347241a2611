/* CFDP entity: one test per failure mode other implementations shipped
 * (issue 19's list). Most deliver captured PDUs by hand (entity_harness.h's
 * wire) so the order and the losses are exactly the ones that broke. */
#include "entity_harness.h"

static cfdp_peer_cfg peer(unsigned nak_mode, uint32_t seg)
{
    cfdp_peer_cfg pc;
    cfdp_peer_cfg_defaults(&pc);
    pc.nak_mode = (uint8_t)nak_mode;
    pc.max_segment = seg;
    pc.ack_timer_ms = 1000;
    pc.nak_timer_ms = 1000;
    pc.inactivity_ms = 30000;
    return pc;
}

typedef struct pair {
    cfdp_memfs *ma, *mb;
    cfdp_fs fa, fb;
    wire wa, wb; /* what A sent, what B sent */
    cfdp_entity *a, *b;
    cfdp_txn_id id;
    uint8_t data[8192];
    size_t size;
} pair;

/* A (1) puts a size-byte file to B (2); A's PDUs are captured, not delivered. */
static void pair_init(pair *p, const cfdp_peer_cfg *pc, size_t size, unsigned cls)
{
    memset(p, 0, sizeof *p);
    CHECK_OK(cfdp_memfs_new(&p->ma, &p->fa));
    CHECK_OK(cfdp_memfs_new(&p->mb, &p->fb));
    p->a = wired(1, p->fa, pc, &p->wa);
    p->b = wired(2, p->fb, pc, &p->wb);
    p->size = size;
    fill(p->data, size, size);
    CHECK_OK(cfdp_memfs_put(p->ma, "f", p->data, size));
    cfdp_put_req q = put_req(2, "f", "g", cls);
    q.checksum_type = CFDP_CKSUM_CRC32;
    CHECK_OK(cfdp_put(p->a, 0, &q, &p->id));
}

static void pair_free(pair *p)
{
    cfdp_entity_free(p->a);
    cfdp_entity_free(p->b);
    cfdp_memfs_free(p->ma);
    cfdp_memfs_free(p->mb);
    wire_free(&p->wa);
    wire_free(&p->wb);
}

static void to_b(pair *p, size_t i, uint64_t now)
{
    CHECK(i < p->wa.n);
    cfdp_entity_pdu_in(p->b, now, p->wa.p[i].b, p->wa.p[i].len);
}

static int b_file_is(pair *p, const void *want, size_t len)
{
    const uint8_t *d;
    size_t l;
    if (cfdp_memfs_get(p->mb, "g", &d, &l))
        return 0;
    return l == len && memcmp(d, want, len) == 0;
}

static size_t index_of(const wire *w, int kind, size_t nth)
{
    for (size_t i = 0; i < w->n; i++)
        if (pdu_kind(&w->p[i]) == kind && nth-- == 0)
            return i;
    tt_fail(__FILE__, __LINE__, "no PDU of kind %d", kind);
}

/* Encodes a PDU of transaction p->id from A to B. */
static void forge(pair *p, cfdp_pdu *x, unsigned kind, cap *out)
{
    x->hdr.direction = CFDP_TOWARD_RECEIVER;
    x->hdr.mode = CFDP_ACKNOWLEDGED;
    x->hdr.src = 1;
    x->hdr.dst = 2;
    x->hdr.tsn = p->id.seq;
    x->kind = (uint8_t)kind;
    CHECK_OK(cfdp_pdu_encode(x, out->b, sizeof out->b, &out->len));
}

TEST(fm_short_last_segment_before_earlier_ones_ion31)
{
    /* 2500 B in 1000 B segments: the 500 B last one first, then the rest
     * backwards and twice: the file must be 2500 B and intact */
    cfdp_peer_cfg pc = peer(CFDP_NAK_DEFERRED, 1000);
    pair p;
    pair_init(&p, &pc, 2500, 2);
    CHECK_EQ_U64(wire_count(&p.wa, CFDP_FILE_DATA), 3);
    size_t md = index_of(&p.wa, CFDP_METADATA, 0),
           fd0 = index_of(&p.wa, CFDP_FILE_DATA, 0);
    size_t eof = index_of(&p.wa, CFDP_EOF, 0);
    to_b(&p, md, 1);
    to_b(&p, fd0 + 2, 2);
    to_b(&p, fd0 + 2, 3);
    to_b(&p, fd0 + 1, 4);
    to_b(&p, eof, 5);
    to_b(&p, fd0 + 1, 6);
    to_b(&p, fd0, 7);
    cfdp_ind ind;
    CHECK(ind_wait(p.b, CFDP_IND_EOF_RECEIVED, &ind));
    CHECK(b_file_is(&p, p.data, 2500));
    CHECK_EQ_U64(wire_count(&p.wb, CFDP_FINISHED), 1);
    cfdp_entity_stats st;
    cfdp_entity_stats_get(p.b, &st);
    CHECK_EQ_U64(st.file_bytes_dup, 1500);
    pair_free(&p);
}

TEST(fm_file_data_past_declared_size_cf520)
{
    cfdp_peer_cfg pc = peer(CFDP_NAK_DEFERRED, 0);
    pair p;
    pair_init(&p, &pc, 1000, 2);
    to_b(&p, index_of(&p.wa, CFDP_METADATA, 0), 1);
    /* file data near 4 GiB for a 1000 B file */
    cfdp_pdu x;
    memset(&x, 0, sizeof x);
    x.u.fd.offset = 0xFFFFFF00u;
    x.u.fd.data = p.data;
    x.u.fd.len = 100;
    cap c;
    forge(&p, &x, CFDP_FILE_DATA, &c);
    CHECK_OK(cfdp_entity_pdu_in(p.b, 2, c.b, c.len));
    cfdp_ind ind;
    CHECK(ind_wait(p.b, CFDP_IND_FINISHED, &ind) ==
          0); /* waits for the ACK of Finished */
    CHECK_EQ_U64(wire_count(&p.wb, CFDP_FINISHED), 1);
    cfdp_pdu fin;
    CHECK_OK(cfdp_pdu_decode(p.wb.p[index_of(&p.wb, CFDP_FINISHED, 0)].b,
                             p.wb.p[index_of(&p.wb, CFDP_FINISHED, 0)].len, 0, &fin,
                             NULL));
    CHECK_EQ_INT(fin.u.fin.condition, CFDP_COND_FILE_SIZE_ERROR);
    CHECK_EQ_INT(fin.u.fin.delivery, CFDP_DATA_INCOMPLETE);
    /* nothing was written out there, and the partial file was discarded */
    const uint8_t *d;
    size_t l = 0;
    CHECK(cfdp_memfs_get(p.mb, "g", &d, &l) != 0 || l <= 1000);
    /* the sender takes the Finished: a fault, not a success */
    cfdp_entity_pdu_in(p.a, 3, p.wb.p[index_of(&p.wb, CFDP_FINISHED, 0)].b,
                       p.wb.p[index_of(&p.wb, CFDP_FINISHED, 0)].len);
    CHECK(ind_wait(p.a, CFDP_IND_FINISHED, &ind));
    CHECK_EQ_INT(ind.condition, CFDP_COND_FILE_SIZE_ERROR);
    CHECK_EQ_U64(ind.fault_entity, 2);
    pair_free(&p);
}

TEST(fm_eof_smaller_than_data_and_nak_past_size_cf499)
{
    cfdp_peer_cfg pc = peer(CFDP_NAK_DEFERRED, 0);
    pair p;
    pair_init(&p, &pc, 1000, 2);
    to_b(&p, index_of(&p.wa, CFDP_METADATA, 0), 1);
    to_b(&p, index_of(&p.wa, CFDP_FILE_DATA, 0), 1);
    /* an EOF claiming 500 bytes after 1000 arrived: no underflowing gap
     * arithmetic, a file size error */
    cfdp_pdu x;
    memset(&x, 0, sizeof x);
    x.u.eof.file_size = 500;
    cap c;
    forge(&p, &x, CFDP_EOF, &c);
    CHECK_OK(cfdp_entity_pdu_in(p.b, 2, c.b, c.len));
    cfdp_pdu fin;
    size_t fi = index_of(&p.wb, CFDP_FINISHED, 0);
    CHECK_OK(cfdp_pdu_decode(p.wb.p[fi].b, p.wb.p[fi].len, 0, &fin, NULL));
    CHECK_EQ_INT(fin.u.fin.condition, CFDP_COND_FILE_SIZE_ERROR);
    CHECK_EQ_U64(wire_count(&p.wb, CFDP_NAK), 0);
    /* a NAK asking past the end: only [900, 1000) is sent again */
    cfdp_pdu k;
    memset(&k, 0, sizeof k);
    k.hdr.direction = CFDP_TOWARD_SENDER;
    k.hdr.src = 1;
    k.hdr.dst = 2;
    k.hdr.tsn = p.id.seq;
    k.kind = CFDP_NAK;
    cfdp_range r[] = {{900, 5000}, {7000, 9000}};
    k.u.nak.scope_end = 9000;
    k.u.nak.segments = (cfdp_ranges){r, 2, NULL, 0};
    CHECK_OK(cfdp_pdu_encode(&k, c.b, sizeof c.b, &c.len));
    size_t before = p.wa.n;
    CHECK_OK(cfdp_entity_pdu_in(p.a, 3, c.b, c.len));
    CHECK_EQ_U64(p.wa.n, before + 1);
    cfdp_pdu fd;
    CHECK_OK(cfdp_pdu_decode(p.wa.p[before].b, p.wa.p[before].len, 0, &fd, NULL));
    CHECK_EQ_INT(fd.kind, CFDP_FILE_DATA);
    CHECK_EQ_U64(fd.u.fd.offset, 900);
    CHECK_EQ_U64(fd.u.fd.len, 100);
    pair_free(&p);
}

typedef struct drop_ctx {
    uint8_t seen[4096];
    uint32_t max_pdu;
    size_t naks, nak_segs, too_big;
} drop_ctx;

/* Drops every other File Data PDU the first time its offset is sent. */
static int drop_odd(void *arg, uint64_t from, uint64_t to, const uint8_t *b, size_t len)
{
    (void)to;
    drop_ctx *c = arg;
    cfdp_pdu p;
    if (cfdp_pdu_decode(b, len, 0, &p, NULL))
        return 0;
    if (p.kind == CFDP_NAK && from == 2) {
        c->naks++;
        c->nak_segs += p.u.nak.segments.count;
        c->too_big += len > c->max_pdu;
    }
    if (p.kind != CFDP_FILE_DATA)
        return 0;
    size_t i = (size_t)(p.u.fd.offset / 100);
    if (i % 2 == 1 && i < sizeof c->seen && !c->seen[i]) {
        c->seen[i] = 1;
        return 1;
    }
    return 0;
}

TEST(fm_long_nak_list_split_over_several_naks_yamcs830)
{
    for (int limited = 0; limited < 2; limited++) {
        cfdp_peer_cfg pc = peer(CFDP_NAK_DEFERRED, 100);
        pc.max_pdu = 128;
        if (limited)
            pc.max_nak_segments = 2; /* a peer that takes two requests per NAK */
        cfdp_link_cfg lk = {.delay_ms = 10};
        net n;
        net_init(&n, 2, &pc, &lk, 1);
        drop_ctx dc = {.max_pdu = 128};
        cfdp_sim_set_filter(n.s, drop_odd, &dc);
        static uint8_t data[200000];
        fill(data, sizeof data, 4);
        CHECK_OK(cfdp_memfs_put(n.m[0], "f", data, sizeof data));
        cfdp_put_req q = put_req(2, "f", "g", 2);
        CHECK_OK(cfdp_put(n.e[0], 0, &q, NULL));
        cfdp_sim_run_idle(n.s, 3600000);
        const rec *rx = end_of(&n, 1);
        CHECK(rx && rx->condition == CFDP_COND_NO_ERROR);
        CHECK(same_file(&n, 0, "f", 1, "g"));
        /* 1000 gaps, each asked for once, in NAKs that fit */
        cfdp_header h = {.eid_len = 1, .tsn_len = 1};
        size_t room = limited ? 2 : cfdp_nak_room(&h, 128);
        CHECK(room >= 2 && room < 20);
        CHECK_EQ_U64(dc.nak_segs, 1000);
        CHECK(dc.naks >= (1000 + room - 1) / room);
        CHECK_EQ_U64(dc.too_big, 0);
        net_free(&n);
    }
}

TEST(fm_duplicate_eof_acked_in_every_state)
{
    cfdp_peer_cfg pc = peer(CFDP_NAK_DEFERRED, 0);
    pair p;
    pair_init(&p, &pc, 3000, 2);
    size_t eof = index_of(&p.wa, CFDP_EOF, 0);
    /* collecting: EOF without the data */
    to_b(&p, index_of(&p.wa, CFDP_METADATA, 0), 1);
    to_b(&p, eof, 1);
    CHECK_EQ_U64(wire_count(&p.wb, CFDP_ACK), 1);
    to_b(&p, eof, 2);
    CHECK_EQ_U64(wire_count(&p.wb, CFDP_ACK), 2);
    /* suspended */
    CHECK_OK(cfdp_suspend(p.b, 3, p.id));
    to_b(&p, eof, 3);
    CHECK_EQ_U64(wire_count(&p.wb, CFDP_ACK), 3);
    CHECK_OK(cfdp_resume(p.b, 4, p.id));
    /* closing: all data, Finished sent, waiting for its ACK */
    for (size_t i = 0; i < p.wa.n; i++)
        if (pdu_kind(&p.wa.p[i]) == CFDP_FILE_DATA)
            to_b(&p, i, 5);
    CHECK_EQ_U64(wire_count(&p.wb, CFDP_FINISHED), 1);
    to_b(&p, eof, 6);
    CHECK_EQ_U64(wire_count(&p.wb, CFDP_ACK), 4);
    /* terminated: Finished acknowledged, lingering */
    size_t fi = index_of(&p.wb, CFDP_FINISHED, 0);
    cfdp_entity_pdu_in(p.a, 7, p.wb.p[fi].b, p.wb.p[fi].len);
    size_t ai = index_of(&p.wa, CFDP_ACK, 0);
    to_b(&p, ai, 8);
    cfdp_ind ind;
    CHECK(ind_wait(p.b, CFDP_IND_FINISHED, &ind));
    CHECK_EQ_INT(ind.condition, CFDP_COND_NO_ERROR);
    to_b(&p, eof, 9);
    CHECK_EQ_U64(wire_count(&p.wb, CFDP_ACK), 5);
    cfdp_pdu ack;
    size_t last = p.wb.n - 1;
    CHECK_OK(cfdp_pdu_decode(p.wb.p[last].b, p.wb.p[last].len, 0, &ack, NULL));
    CHECK_EQ_INT(ack.kind, CFDP_ACK);
    CHECK_EQ_INT(ack.u.ack.directive, CFDP_EOF);
    CHECK_EQ_INT(ack.u.ack.txn_status, CFDP_TXN_TERMINATED);
    CHECK(b_file_is(&p, p.data, 3000));
    pair_free(&p);
}

TEST(fm_metadata_during_deferred_nak_keeps_receiver_cfdppy54)
{
    cfdp_peer_cfg pc = peer(CFDP_NAK_DEFERRED, 1000);
    pair p;
    pair_init(&p, &pc, 3000, 2);
    size_t md = index_of(&p.wa, CFDP_METADATA, 0),
           fd0 = index_of(&p.wa, CFDP_FILE_DATA, 0);
    to_b(&p, md, 1);
    to_b(&p, fd0, 1);
    to_b(&p, fd0 + 2, 1);
    to_b(&p, index_of(&p.wa, CFDP_EOF, 0), 1);
    CHECK_EQ_U64(wire_count(&p.wb, CFDP_NAK), 0); /* the NAK delay first */
    CHECK_OK(cfdp_entity_advance(p.b, 1 + pc.nak_delay_ms));
    CHECK_EQ_U64(wire_count(&p.wb, CFDP_NAK), 1);
    /* Metadata again (the sender answering a NAK, or a duplicate) */
    to_b(&p, md, 2);
    cfdp_txn_info in;
    CHECK_OK(cfdp_report(p.b, p.id, &in));
    CHECK_EQ_U64(in.progress, 2000);
    CHECK_EQ_U64(in.gaps, 1);
    to_b(&p, fd0 + 1, 3);
    CHECK_EQ_U64(wire_count(&p.wb, CFDP_FINISHED), 1);
    CHECK(b_file_is(&p, p.data, 3000));
    pair_free(&p);
}

TEST(fm_metadata_only_transaction_carries_eof)
{
    cfdp_peer_cfg pc = peer(CFDP_NAK_IMMEDIATE, 0);
    pair p;
    pair_init(&p, &pc, 10, 2);
    cfdp_tlv msg = {.type = CFDP_TLV_MSG_TO_USER,
                    .data = {(const uint8_t *)"cfdp\x10hello", 10}};
    cfdp_put_req q = put_req(2, NULL, NULL, 2);
    q.options = (cfdp_tlvs){&msg, 1, NULL, 0};
    cfdp_txn_id id;
    size_t from = p.wa.n;
    CHECK_OK(cfdp_put(p.a, 1, &q, &id));
    CHECK_EQ_U64(p.wa.n - from, 2);
    CHECK_EQ_INT(pdu_kind(&p.wa.p[from]), CFDP_METADATA);
    CHECK_EQ_INT(pdu_kind(&p.wa.p[from + 1]), CFDP_EOF);
    wire_deliver(&p.wa, from, p.b, 2);
    cfdp_ind ind;
    CHECK(ind_wait(p.b, CFDP_IND_METADATA, &ind));
    CHECK_EQ_U64(ind.options.count, 1);
    cfdp_tlv got;
    size_t pos = 0;
    CHECK_OK(cfdp_tlvs_next(&ind.options, &pos, &got));
    CHECK_EQ_INT(got.type, CFDP_TLV_MSG_TO_USER);
    CHECK_EQ_U64(got.data.len, 10);
    CHECK_EQ_MEM(got.data.ptr, "cfdp\x10hello", 10);
    CHECK_EQ_U64(wire_count(&p.wb, CFDP_FINISHED), 1);
    pair_free(&p);
}

static int both_ended(void *arg)
{
    net *n = arg;
    return end_of(n, 0) && end_of(n, 1);
}

TEST(fm_eof_cancel_answered_with_ack_and_finished_cf389)
{
    cfdp_peer_cfg pc = peer(CFDP_NAK_IMMEDIATE, 0);
    pc.inactivity_ms = 600000;
    cfdp_link_cfg lk = {.delay_ms = 100, .max_inflight = 8};
    net n;
    net_init(&n, 2, &pc, &lk, 1);
    static uint8_t data[100000];
    fill(data, sizeof data, 1);
    CHECK_OK(cfdp_memfs_put(n.m[0], "f", data, sizeof data));
    cfdp_put_req q = put_req(2, "f", "g", 2);
    cfdp_txn_id id;
    CHECK_OK(cfdp_put(n.e[0], 0, &q, &id));
    cfdp_sim_run(n.s, 1000);
    CHECK_OK(cfdp_cancel(n.e[0], 1000, id));
    CHECK_OK(cfdp_sim_run_until(n.s, 3600000, both_ended, &n));
    const rec *tx = end_of(&n, 0), *rx = end_of(&n, 1);
    CHECK_EQ_INT(tx->type, CFDP_IND_FINISHED);
    CHECK_EQ_INT(tx->condition, CFDP_COND_CANCEL);
    CHECK_EQ_INT(rx->type, CFDP_IND_FINISHED);
    CHECK_EQ_INT(rx->condition, CFDP_COND_CANCEL);
    CHECK_EQ_INT(rx->delivery, CFDP_DATA_INCOMPLETE);
    CHECK_EQ_INT(rx->file_status, CFDP_FILE_DISCARDED);
    /* within a few round trips, not after the inactivity timer */
    CHECK(cfdp_sim_now(n.s) < 1000 + 10 * 200);
    cfdp_entity_stats st;
    cfdp_entity_stats_get(n.e[1], &st);
    CHECK(st.pdus_out >= 2); /* its ACK of EOF and its Finished */
    const uint8_t *d;
    size_t l;
    CHECK_RC(cfdp_memfs_get(n.m[1], "g", &d, &l), -ENOENT); /* discarded */
    net_free(&n);
}

TEST(fm_eof_while_suspended_naks_on_resume_yamcs956)
{
    cfdp_peer_cfg pc = peer(CFDP_NAK_DEFERRED, 1000);
    pair p;
    pair_init(&p, &pc, 3000, 2);
    size_t fd0 = index_of(&p.wa, CFDP_FILE_DATA, 0);
    to_b(&p, index_of(&p.wa, CFDP_METADATA, 0), 1);
    CHECK_OK(cfdp_suspend(p.b, 1, p.id));
    to_b(&p, fd0, 2);
    to_b(&p, fd0 + 2, 2);
    to_b(&p, index_of(&p.wa, CFDP_EOF, 0), 3);
    CHECK_EQ_U64(wire_count(&p.wb, CFDP_ACK), 1);
    CHECK_EQ_U64(wire_count(&p.wb, CFDP_NAK), 0);
    /* hours pass: timers are frozen, no NAK, no inactivity */
    CHECK_OK(cfdp_entity_advance(p.b, 10 * 3600000ull));
    CHECK_EQ_U64(wire_count(&p.wb, CFDP_NAK), 0);
    cfdp_ind ind;
    CHECK(!ind_wait(p.b, CFDP_IND_FINISHED, &ind));
    CHECK_OK(cfdp_resume(p.b, 10 * 3600000ull + 1, p.id));
    CHECK_EQ_U64(wire_count(&p.wb, CFDP_NAK), 1);
    cfdp_pdu k;
    size_t ki = index_of(&p.wb, CFDP_NAK, 0);
    CHECK_OK(cfdp_pdu_decode(p.wb.p[ki].b, p.wb.p[ki].len, 0, &k, NULL));
    CHECK_EQ_U64(k.u.nak.segments.count, 1);
    CHECK_EQ_U64(cfdp_nak_segment(&k.u.nak.segments, 0).start, 1000);
    CHECK_EQ_U64(cfdp_nak_segment(&k.u.nak.segments, 0).end, 2000);
    pair_free(&p);
}

TEST(fm_resume_with_no_gaps_finishes_yamcs1153)
{
    cfdp_peer_cfg pc = peer(CFDP_NAK_DEFERRED, 1000);
    pair p;
    pair_init(&p, &pc, 3000, 2);
    to_b(&p, index_of(&p.wa, CFDP_METADATA, 0), 1);
    CHECK_OK(cfdp_suspend(p.b, 1, p.id));
    for (size_t i = 0; i < p.wa.n; i++)
        if (pdu_kind(&p.wa.p[i]) != CFDP_METADATA)
            to_b(&p, i, 2);
    CHECK_EQ_U64(wire_count(&p.wb, CFDP_FINISHED), 0);
    CHECK_OK(cfdp_resume(p.b, 3, p.id));
    CHECK_EQ_U64(wire_count(&p.wb, CFDP_FINISHED), 1);
    CHECK_EQ_U64(wire_count(&p.wb, CFDP_NAK), 0);
    CHECK(b_file_is(&p, p.data, 3000));
    pair_free(&p);
}

TEST(fm_immediate_nak_waits_out_reordering_cfdprs48)
{
    size_t naks[2];
    for (int control = 0; control < 2; control++) {
        cfdp_peer_cfg pc = peer(CFDP_NAK_IMMEDIATE, 0);
        pc.nak_delay_ms = control ? 1 : 200; /* the control NAKs reordered data */
        cfdp_link_cfg lk = {.delay_ms = 50, .jitter_ms = 40};
        net n;
        net_init(&n, 2, &pc, &lk, 11);
        static uint8_t data[200000];
        fill(data, sizeof data, 2);
        CHECK_OK(cfdp_memfs_put(n.m[0], "f", data, sizeof data));
        cfdp_put_req q = put_req(2, "f", "g", 2);
        CHECK_OK(cfdp_put(n.e[0], 0, &q, NULL));
        cfdp_sim_run_idle(n.s, 3600000);
        CHECK(same_file(&n, 0, "f", 1, "g"));
        cfdp_entity_stats st;
        cfdp_entity_stats_get(n.e[1], &st);
        naks[control] = st.naks_sent;
        net_free(&n);
    }
    CHECK_EQ_U64(naks[0], 0);
    CHECK(naks[1] > 0);
}

TEST(fm_indications_never_dropped_when_read_late_ion)
{
    cfdp_peer_cfg pc = peer(CFDP_NAK_IMMEDIATE, 0);
    cfdp_link_cfg lk = {.delay_ms = 5};
    net n;
    net_init(&n, 2, &pc, &lk, 1);
    CHECK_OK(cfdp_memfs_put(n.m[0], "f", "abc", 3));
    for (int i = 0; i < 500; i++) {
        char name[32];
        snprintf(name, sizeof name, "d%d", i);
        cfdp_put_req q = put_req(2, "f", name, i % 2 + 1);
        CHECK_OK(cfdp_put(n.e[0], 0, &q, NULL));
    }
    cfdp_sim_run_idle(n.s, 3600000);
    cfdp_entity_stats st;
    cfdp_entity_stats_get(n.e[0], &st);
    CHECK(st.indications_queued >= 1000);
    CHECK_EQ_U64(count_type(&n, 0, CFDP_IND_TRANSACTION), 500);
    CHECK_EQ_U64(count_type(&n, 0, CFDP_IND_FINISHED), 500);
    CHECK_EQ_U64(count_type(&n, 1, CFDP_IND_FINISHED), 500);
    CHECK_EQ_U64(count_type(&n, 1, CFDP_IND_METADATA), 500);
    net_free(&n);
}

TEST(fm_finished_reports_what_happened_cf325_ion20)
{
    /* receiver cancels: both ends report the cancel, the sender exactly once
     * even when the Finished arrives three times (each acknowledged) */
    cfdp_peer_cfg pc = peer(CFDP_NAK_DEFERRED, 1000);
    pair p;
    pair_init(&p, &pc, 3000, 2);
    to_b(&p, index_of(&p.wa, CFDP_METADATA, 0), 1);
    to_b(&p, index_of(&p.wa, CFDP_FILE_DATA, 0), 1);
    CHECK_OK(cfdp_cancel(p.b, 2, p.id));
    size_t fi = index_of(&p.wb, CFDP_FINISHED, 0);
    size_t acks = wire_count(&p.wa, CFDP_ACK);
    for (int i = 0; i < 3; i++)
        cfdp_entity_pdu_in(p.a, 3 + (uint64_t)i, p.wb.p[fi].b, p.wb.p[fi].len);
    CHECK_EQ_U64(wire_count(&p.wa, CFDP_ACK), acks + 3);
    cfdp_ind ind;
    int finished = 0;
    while (cfdp_entity_next_indication(p.a, &ind) == 0)
        if (ind.type == CFDP_IND_FINISHED) {
            finished++;
            CHECK_EQ_INT(ind.condition, CFDP_COND_CANCEL);
            CHECK_EQ_U64(ind.fault_entity, 2);
        }
    CHECK_EQ_INT(finished, 1);
    /* the receiver ends with the ACK of its Finished: cancel, never success */
    to_b(&p, index_of(&p.wa, CFDP_ACK, 0), 4);
    CHECK(ind_wait(p.b, CFDP_IND_FINISHED, &ind));
    CHECK_EQ_INT(ind.condition, CFDP_COND_CANCEL);
    CHECK_EQ_INT(ind.delivery, CFDP_DATA_INCOMPLETE);
    CHECK(!ind_wait(p.b, CFDP_IND_FINISHED, &ind));
    pair_free(&p);
}

TEST(fm_asynchronous_nak_on_request)
{
    cfdp_peer_cfg pc = peer(CFDP_NAK_ASYNC, 1000);
    pair p;
    pair_init(&p, &pc, 3000, 2);
    size_t fd0 = index_of(&p.wa, CFDP_FILE_DATA, 0);
    to_b(&p, index_of(&p.wa, CFDP_METADATA, 0), 1);
    to_b(&p, fd0, 1);
    to_b(&p, fd0 + 2, 1);
    CHECK_OK(cfdp_entity_advance(p.b, 5000));
    CHECK_EQ_U64(wire_count(&p.wb, CFDP_NAK), 0);
    CHECK_OK(cfdp_nak_now(p.b, 5001, p.id));
    CHECK_EQ_U64(wire_count(&p.wb, CFDP_NAK), 1);
    cfdp_pdu k;
    size_t ki = index_of(&p.wb, CFDP_NAK, 0);
    CHECK_OK(cfdp_pdu_decode(p.wb.p[ki].b, p.wb.p[ki].len, 0, &k, NULL));
    CHECK_EQ_U64(k.u.nak.segments.count, 1);
    CHECK_EQ_U64(cfdp_nak_segment(&k.u.nak.segments, 0).start, 1000);
    CHECK_EQ_U64(cfdp_nak_segment(&k.u.nak.segments, 0).end, 2000);
    pair_free(&p);
}

TEST(prompts_answered_with_nak_or_keep_alive)
{
    cfdp_peer_cfg pc = peer(CFDP_NAK_DEFERRED, 1000);
    pair p;
    pair_init(&p, &pc, 3000, 2);
    size_t fd0 = index_of(&p.wa, CFDP_FILE_DATA, 0);
    to_b(&p, index_of(&p.wa, CFDP_METADATA, 0), 1);
    to_b(&p, fd0 + 1, 1);
    size_t from = p.wa.n;
    CHECK_OK(cfdp_send_prompt(p.a, 2, p.id, CFDP_PROMPT_KEEP_ALIVE));
    CHECK_OK(cfdp_send_prompt(p.a, 2, p.id, CFDP_PROMPT_NAK));
    CHECK_EQ_U64(p.wa.n - from, 2);
    wire_deliver(&p.wa, from, p.b, 3);
    CHECK_EQ_U64(wire_count(&p.wb, CFDP_KEEP_ALIVE), 1);
    CHECK_EQ_U64(wire_count(&p.wb, CFDP_NAK), 1);
    cfdp_pdu k;
    size_t ki = index_of(&p.wb, CFDP_KEEP_ALIVE, 0);
    CHECK_OK(cfdp_pdu_decode(p.wb.p[ki].b, p.wb.p[ki].len, 0, &k, NULL));
    CHECK_EQ_U64(k.u.ka.progress, 2000);
    /* deferred mode, no EOF yet: the prompt's NAK covers [0, 1000) only */
    ki = index_of(&p.wb, CFDP_NAK, 0);
    CHECK_OK(cfdp_pdu_decode(p.wb.p[ki].b, p.wb.p[ki].len, 0, &k, NULL));
    CHECK_EQ_U64(k.u.nak.segments.count, 1);
    CHECK_EQ_U64(cfdp_nak_segment(&k.u.nak.segments, 0).start, 0);
    CHECK_EQ_U64(cfdp_nak_segment(&k.u.nak.segments, 0).end, 1000);
    /* the sender answers that NAK with exactly that range */
    from = p.wa.n;
    cfdp_entity_pdu_in(p.a, 4, p.wb.p[ki].b, p.wb.p[ki].len);
    CHECK_EQ_U64(p.wa.n - from, 1);
    cfdp_pdu fd;
    CHECK_OK(cfdp_pdu_decode(p.wa.p[from].b, p.wa.p[from].len, 0, &fd, NULL));
    CHECK_EQ_INT(fd.kind, CFDP_FILE_DATA);
    CHECK_EQ_U64(fd.u.fd.offset, 0);
    CHECK_EQ_U64(fd.u.fd.len, 1000);
    pair_free(&p);
}
