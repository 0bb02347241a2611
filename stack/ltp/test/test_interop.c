/* The engine against real peers' traffic: ION 4.1.3 and HDTN 1.3.1 (the
 * captures in ../shared/interop). A Tern engine is fed their segments and
 * must answer as those peers expect. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "ltp.h"
#include "tern/clock.h"
#include "tern_test.h"

/* ../shared/interop/ion/ltp-udp-exchange.hex: engine 1 -> 2 data (checkpoint,
 * EORP, EOB; session 165; 448 bytes), 2 -> 1 report, 1 -> 2 report ack. */
static const char ion_data[] =
    "030181250001008340e413009f8907184001820282020182028201018202820101821b000000"
    "c5bf72c2301a000222e31a000493e042461185060210004582028201008518c1030100458400"
    "0100008507040100410085010101004303476fff9f8907184001820282020182028201018202"
    "820101821b000000c5bf72c2941a000222e41a000493e0427f2b850602100045820282010085"
    "18c10301004584000100008507040100410085010101005864746573742e2e2e000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000ff9f8907184001820282020182028201018202820101821b000000"
    "c5bf72c2941a000222e51a000493e04232d685060210004582028201008518c1030100458400"
    "0100008507040100410185010101005864746573742e2e2e0000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000"
    "000000ff";
static const char ion_rs[] = "08018125008d11e41383400001008340";
static const char ion_ra[] = "09018125008d11";

/* ../shared/interop/ion/ltp-session-number-32bit.hex: a Tern engine 1 (session
 * number 13591433943456) -> ION 4.1.3 engine 2, and ION's report, which names
 * the session number modulo 2^32. */
static const char ion32_data[] =
    "0301838bc884deb3200001008130a84e009f890700028202820201820100820100821b000000"
    "c5c80980b7001a000493e04432d099ad85060200004582028201008501010000581e31623a20"
    "616e6f6e796d6f75732066726f6d205465726e206e6f64652031ff9f89070002820282020182"
    "028201018202820101821b000000c5c80980ba001a000493e044bb014d688506020000458202"
    "8201008501010000581e31623a2066726f6d2069706e3a312e3120285465726e206e6f646520"
    "3129ff";
static const char ion32_rs[] = "08018884deb320008f73a84e81300001008130";

/* ../shared/interop/hdtn/ltp-udp.hex: engine 200 -> 100 cancel "ping" for a
 * session that does not exist, 100 -> 200 its acknowledgment, then a data
 * checkpoint, the report and the report ack. */
static const char hdtn_ping[] = "0c8148bfffffffffffffff7f0000";
static const char hdtn_cas[] = "0d8148bfffffffffffffff7f00";
static const char hdtn_data[] =
    "038148a7bea48d8fd0808001000100882cb2b4a1e2b5b2848001009f89070402820282020182"
    "02820101820100821b000000c5bf8dc3e2001a000f424044cc64531f860a0210024482186400"
    "44db675d4986010100025903e800000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000044fea13ab2ff";
static const char hdtn_rs[] =
    "088148a7bea48d8fd080800100f1e7aa838492888001b2b4a1e2b5b2848001882c000100882c";

struct cap {
    int exports_done;
    tern_loop *loop;
    tern_clock *clk;
    ltp_engine *e;
    uint8_t out[16][2048];
    size_t outlen[16];
    uint64_t outpeer[16];
    int nout;
    size_t red_len;
    uint8_t red[4096];
    int red_parts;
};

static size_t unhex(const char *h, uint8_t *out)
{
    size_t n = strlen(h) / 2;
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        sscanf(h + 2 * i, "%2x", &v);
        out[i] = (uint8_t)v;
    }
    return n;
}

static int cap_send(void *ctx, uint64_t peer, const uint8_t *seg, size_t len)
{
    struct cap *c = ctx;
    CHECK(c->nout < 16 && len <= sizeof c->out[0]);
    memcpy(c->out[c->nout], seg, len);
    c->outlen[c->nout] = len;
    c->outpeer[c->nout] = peer;
    c->nout++;
    return 0;
}

static int cap_notice(void *ctx, const ltp_notice *n)
{
    struct cap *c = ctx;
    if (n->kind == LTP_RED_PART) {
        CHECK(n->len <= sizeof c->red);
        memcpy(c->red, n->data, n->len);
        c->red_len = n->len;
        c->red_parts++;
    }
    if (n->kind == LTP_EXPORT_DONE)
        c->exports_done++;
    return 0;
}

static void setup_first(struct cap *c, uint64_t own, uint64_t peer, uint64_t first)
{
    memset(c, 0, sizeof *c);
    CHECK_OK(tern_clock_virtual_new(UINT64_C(849312000000), &c->clk));
    CHECK_OK(tern_loop_new(c->clk, &c->loop));
    ltp_engine_cfg ec = {.engine_id = own, .first_session = first};
    ltp_host h = {.ctx = c, .send = cap_send, .notice = cap_notice};
    CHECK_OK(ltp_engine_new(c->loop, &ec, &h, NULL, &c->e));
    ltp_span_cfg sc = {.peer = peer,
                       .max_export = 4,
                       .max_import = 4,
                       .max_seg = 1400,
                       .agg_size = 1000,
                       .agg_ms = 1000,
                       .owlt_ms = 10};
    CHECK_OK(ltp_span_add(c->e, &sc));
}

static void setup(struct cap *c, uint64_t own, uint64_t peer)
{
    setup_first(c, own, peer, 0);
}

static void teardown(struct cap *c)
{
    ltp_engine_free(c->e);
    CHECK_OK(tern_loop_close(c->loop));
    tern_clock_free(c->clk);
}

static ltp_seg decode(const uint8_t *b, size_t n, ltp_claim *claims)
{
    ltp_seg s;
    s.claims = claims;
    CHECK_OK(ltp_seg_decode(b, n, &s, 16));
    return s;
}

/* Tern as ION's receiving engine 2: it must report the same claim ION did. */
TEST(ltp_ion_data_segment_gets_the_same_report)
{
    struct cap c;
    uint8_t in[1024], rs[64];
    ltp_claim cl[16], cl2[16];
    setup(&c, 2, 1);
    size_t n = unhex(ion_data, in);
    CHECK_OK(ltp_engine_receive(c.e, in, n));
    CHECK_EQ_INT(c.red_parts, 1);
    CHECK_EQ_INT(c.red_len, 448);
    ltp_seg d = decode(in, n, cl2);
    CHECK_EQ_MEM(c.red, d.data, 448);
    CHECK_EQ_INT(c.nout, 1);
    CHECK_EQ_U64(c.outpeer[0], 1);
    ltp_seg mine = decode(c.out[0], c.outlen[0], cl);
    size_t m = unhex(ion_rs, rs);
    ltp_seg ions = decode(rs, m, cl2);
    CHECK_EQ_INT(mine.type, LTP_RS);
    CHECK_EQ_U64(mine.engine, ions.engine);
    CHECK_EQ_U64(mine.session, ions.session);
    CHECK_EQ_U64(mine.cp_serial, ions.cp_serial);
    CHECK_EQ_U64(mine.lower, ions.lower);
    CHECK_EQ_U64(mine.upper, ions.upper);
    CHECK_EQ_U64(mine.n_claims, 1);
    CHECK_EQ_U64(mine.claims[0].offset, ions.claims[0].offset);
    CHECK_EQ_U64(mine.claims[0].length, ions.claims[0].length);
    CHECK_EQ_U64(mine.claims[0].length, 448);
    /* ION's own report ack (another serial) is understood and changes nothing. */
    m = unhex(ion_ra, rs);
    CHECK_OK(ltp_engine_receive(c.e, rs, m));
    ltp_stats st;
    ltp_engine_stats(c.e, &st);
    CHECK_EQ_U64(st.malformed, 0);
    CHECK_EQ_U64(st.import_sessions, 1); /* still waiting for the ack of its report */
    /* The ack of our report closes the session. */
    ltp_seg ra = {
        .type = LTP_RA, .engine = 1, .session = 165, .rpt_serial = mine.rpt_serial};
    uint8_t rab[64];
    int k = ltp_seg_encode(&ra, rab, sizeof rab);
    CHECK(k > 0);
    CHECK_OK(ltp_engine_receive(c.e, rab, (size_t)k));
    ltp_engine_stats(c.e, &st);
    CHECK_EQ_U64(st.import_sessions, 0);
    CHECK_EQ_U64(st.imports_done, 1);
    /* A retransmitted checkpoint for the closed session is answered in full. */
    c.nout = 0;
    n = unhex(ion_data, in);
    CHECK_OK(ltp_engine_receive(c.e, in, n));
    CHECK_EQ_INT(c.red_parts, 1);
    CHECK_EQ_INT(c.nout, 1);
    mine = decode(c.out[0], c.outlen[0], cl);
    CHECK_EQ_U64(mine.claims[0].length, 448);
    teardown(&c);
}

/* Tern as HDTN's receiving engine 100: the link "ping" must be answered
 * byte for byte as HDTN's own receiver did, and the data reported in full. */
TEST(ltp_hdtn_ping_answered_and_data_reported)
{
    struct cap c;
    uint8_t in[2048], want[64];
    ltp_claim cl[16], cl2[16];
    setup(&c, 100, 200);
    size_t n = unhex(hdtn_ping, in);
    CHECK_OK(ltp_engine_receive(c.e, in, n));
    CHECK_EQ_INT(c.nout, 1);
    size_t m = unhex(hdtn_cas, want);
    CHECK_EQ_INT(c.outlen[0], m);
    CHECK_EQ_MEM(c.out[0], want, m);
    c.nout = 0;
    n = unhex(hdtn_data, in);
    CHECK_OK(ltp_engine_receive(c.e, in, n));
    CHECK_EQ_INT(c.red_parts, 1);
    CHECK_EQ_INT(c.nout, 1);
    ltp_seg mine = decode(c.out[0], c.outlen[0], cl);
    m = unhex(hdtn_rs, want);
    ltp_seg theirs = decode(want, m, cl2);
    CHECK_EQ_U64(mine.session, theirs.session); /* a random 64-bit number */
    CHECK(mine.session > UINT32_MAX);
    CHECK_EQ_U64(mine.cp_serial, theirs.cp_serial);
    CHECK_EQ_U64(mine.upper, theirs.upper);
    CHECK_EQ_U64(mine.lower, theirs.lower);
    CHECK_EQ_U64(mine.n_claims, theirs.n_claims);
    CHECK_EQ_U64(mine.claims[0].length, theirs.claims[0].length);
    CHECK_EQ_INT(c.red_len, mine.upper);
    teardown(&c);
}

/* Garbage never stops the engine: it is counted and the next good segment
 * is served. */
TEST(ltp_malformed_segments_counted_and_dropped)
{
    struct cap c;
    uint8_t in[1024];
    setup(&c, 100, 200);
    static const uint8_t junk[][6] = {{0x13, 0, 0, 0, 0, 0},
                                      {0x0a, 0x81, 0x48, 0, 0, 0},
                                      {0x03, 0xff, 0xff, 0xff, 0xff, 0xff},
                                      {0}};
    for (size_t i = 0; i < 4; i++)
        CHECK(ltp_engine_receive(c.e, junk[i], i == 3 ? 1 : 6) < 0);
    ltp_stats st;
    ltp_engine_stats(c.e, &st);
    CHECK_EQ_U64(st.malformed, 4);
    size_t n = unhex(hdtn_ping, in);
    CHECK_OK(ltp_engine_receive(c.e, in, n));
    CHECK_EQ_INT(c.nout, 1);
    teardown(&c);
}

/* Tern as ION's sending engine 1 with a session counter above 2^32: the data
 * segment names the low 32 bits, so ION's report (which names the number
 * modulo 2^32) completes the export instead of being taken for a stranger. */
TEST(ltp_ion_report_for_a_32bit_session_number_completes_the_export)
{
    struct cap c;
    uint8_t in[1024], rs[64];
    ltp_claim cl[16], cl2[16];
    size_t n = unhex(ion32_data, in), m = unhex(ion32_rs, rs);
    ltp_seg old = decode(in, n, cl);
    ltp_seg ions = decode(rs, m, cl2);
    /* the deviation the vector shows */
    CHECK(old.session > UINT32_MAX);
    CHECK_EQ_U64(ions.session, old.session & UINT32_MAX);
    setup_first(&c, 1, 2, old.session);
    CHECK_OK(ltp_block_send(c.e, 2, 1, old.data, old.length, 0, NULL, NULL));
    CHECK_EQ_INT(c.nout, 1);
    ltp_seg mine = decode(c.out[0], c.outlen[0], cl);
    CHECK_EQ_U64(mine.session, ions.session);
    CHECK_EQ_MEM(mine.data, old.data, old.length);
    /* ION's report, answering our checkpoint's serial */
    ions.cp_serial = mine.cp_serial;
    uint8_t rb[64];
    int k = ltp_seg_encode(&ions, rb, sizeof rb);
    CHECK(k > 0);
    CHECK_OK(ltp_engine_receive(c.e, rb, (size_t)k));
    CHECK_EQ_INT(c.exports_done, 1);
    ltp_stats st;
    ltp_engine_stats(c.e, &st);
    CHECK_EQ_U64(st.exports_done, 1);
    CHECK_EQ_U64(st.exports_cancelled, 0);
    teardown(&c);
}

/* A span set to 64-bit session numbers (HDTN) sends the counter as it is. */
TEST(ltp_span_with_64bit_session_numbers_sends_them_whole)
{
    struct cap c;
    ltp_claim cl[16];
    uint64_t first = UINT64_C(13591433943456), sess;
    memset(&c, 0, sizeof c);
    CHECK_OK(tern_clock_virtual_new(UINT64_C(849312000000), &c.clk));
    CHECK_OK(tern_loop_new(c.clk, &c.loop));
    ltp_engine_cfg ec = {.engine_id = 1, .first_session = first};
    ltp_host h = {.ctx = &c, .send = cap_send, .notice = cap_notice};
    CHECK_OK(ltp_engine_new(c.loop, &ec, &h, NULL, &c.e));
    ltp_span_cfg sc = {.peer = 2,
                       .max_export = 4,
                       .max_import = 4,
                       .max_seg = 1400,
                       .agg_size = 1000,
                       .agg_ms = 1000,
                       .owlt_ms = 10,
                       .session_bits = 64};
    CHECK_OK(ltp_span_add(c.e, &sc));
    sc.peer = 3;
    sc.session_bits = 48;
    CHECK_RC(ltp_span_add(c.e, &sc), -EINVAL);
    CHECK_OK(ltp_block_send(c.e, 2, 1, "abc", 3, 0, NULL, &sess));
    CHECK_EQ_U64(sess, first);
    ltp_seg mine = decode(c.out[0], c.outlen[0], cl);
    CHECK_EQ_U64(mine.session, first);
    teardown(&c);
}
