/* LTP segment codec tests: hand-built RFC 5326 vectors, round trips, malformed
 * input, and real segments captured from ION and HDTN. */
#include <errno.h>
#include <stdlib.h>

#include "ltp_seg.h"
#include "tern_test.h"

/* ---- helpers ------------------------------------------------------------ */

/* Parses a hex string into a malloc'ed buffer of exactly its length. */
static uint8_t *unhex(const char *hex, size_t *len)
{
    size_t n = strlen(hex);
    CHECK(n % 2 == 0);
    uint8_t *b = malloc(n / 2 ? n / 2 : 1);
    CHECK(b != NULL);
    for (size_t i = 0; i < n / 2; i++) {
        unsigned v;
        CHECK(sscanf(hex + 2 * i, "%2x", &v) == 1);
        b[i] = (uint8_t)v;
    }
    *len = n / 2;
    return b;
}

static void check_ext_eq(const ltp_ext *a, const ltp_ext *b)
{
    CHECK_EQ_INT(a->tag, b->tag);
    CHECK_EQ_U64(a->len, b->len);
    if (a->len)
        CHECK_EQ_MEM(a->value, b->value, (size_t)a->len);
}

/* Compares the fields that matter for the segment's type. */
static void check_seg_eq(const ltp_seg *a, const ltp_seg *b)
{
    CHECK_EQ_INT(a->type, b->type);
    CHECK_EQ_U64(a->engine, b->engine);
    CHECK_EQ_U64(a->session, b->session);
    CHECK_EQ_INT(a->n_hext, b->n_hext);
    CHECK_EQ_INT(a->n_text, b->n_text);
    for (int i = 0; i < a->n_hext; i++)
        check_ext_eq(&a->hext[i], &b->hext[i]);
    for (int i = 0; i < a->n_text; i++)
        check_ext_eq(&a->text[i], &b->text[i]);
    if (ltp_seg_is_data(a->type)) {
        CHECK_EQ_U64(a->client, b->client);
        CHECK_EQ_U64(a->offset, b->offset);
        CHECK_EQ_U64(a->length, b->length);
        if (a->length)
            CHECK_EQ_MEM(a->data, b->data, (size_t)a->length);
        if (ltp_seg_is_cp(a->type)) {
            CHECK_EQ_U64(a->cp_serial, b->cp_serial);
            CHECK_EQ_U64(a->rpt_serial, b->rpt_serial);
        }
    } else if (a->type == LTP_RS) {
        CHECK_EQ_U64(a->rpt_serial, b->rpt_serial);
        CHECK_EQ_U64(a->cp_serial, b->cp_serial);
        CHECK_EQ_U64(a->upper, b->upper);
        CHECK_EQ_U64(a->lower, b->lower);
        CHECK_EQ_U64(a->n_claims, b->n_claims);
        for (uint64_t i = 0; i < a->n_claims; i++) {
            CHECK_EQ_U64(a->claims[i].offset, b->claims[i].offset);
            CHECK_EQ_U64(a->claims[i].length, b->claims[i].length);
        }
    } else if (a->type == LTP_RA) {
        CHECK_EQ_U64(a->rpt_serial, b->rpt_serial);
    } else if (a->type == LTP_CS || a->type == LTP_CR) {
        CHECK_EQ_INT(a->reason, b->reason);
    }
}

#define MAXC 64

/* Decodes hex (which must be valid), re-encodes it and checks the bytes are
 * identical; leaves the decoded segment in *seg (claims in claims[]) and the
 * buffer it points into in *bufp (the caller frees it). */
static void decode_reencode(const char *hex, ltp_seg *seg, ltp_claim *claims,
                            uint8_t **bufp, size_t *lenp)
{
    size_t len;
    uint8_t *buf = unhex(hex, &len);
    seg->claims = claims;
    CHECK_OK(ltp_seg_decode(buf, len, seg, MAXC));
    uint8_t *out = malloc(len + 16);
    CHECK(out != NULL);
    CHECK_EQ_INT(ltp_seg_encode(seg, out, len + 16), len);
    CHECK_EQ_MEM(out, buf, len);
    /* Exactly enough room works too; one byte less does not. */
    CHECK_EQ_INT(ltp_seg_encode(seg, out, len), len);
    CHECK_RC(ltp_seg_encode(seg, out, len - 1), TERN_ENOSPACE);
    if (ltp_seg_is_data(seg->type) && seg->n_text == 0)
        CHECK_EQ_U64(ltp_seg_data_hdr_len(seg) + seg->length, len);
    if (ltp_seg_is_data(seg->type))
        CHECK(seg->data == buf + ltp_seg_data_hdr_len(seg));
    free(out);
    *bufp = buf;
    *lenp = len;
}

/* ---- hand-built vectors (RFC 5326 section 3 layout) ----------------------- */

/* RD: engine 5, session 128, client 1, offset 256, "abc". */
static const char v_rd[] = "00"
                           "05"
                           "8100"
                           "00"
                           "01"
                           "8200"
                           "03"
                           "616263";
/* RD-CP: engine 2, session 3, client 1, offset 10, length 2, cp 4, rpt 5. */
static const char v_rd_cp[] = "01020300010a020405aabb";
/* RD-CP-EORP with 64-bit extremes: session and cp serial 2^64-1, rpt 2^63. */
static const char v_rd_cp_eorp[] = "02"
                                   "01"
                                   "81ffffffffffffffff7f"
                                   "00"
                                   "01"
                                   "00"
                                   "01"
                                   "81ffffffffffffffff7f"
                                   "81808080808080808000"
                                   "78";
/* GD-5 with no data (a zero-length data segment decodes). */
static const char v_gd5[] = "05020300010000";
/* GD-EOB, one header extension (tag 0, aa bb) and one trailer (tag 1, cc). */
static const char v_gd_eob_ext[] = "07"
                                   "01"
                                   "02"
                                   "11"
                                   "0002aabb"
                                   "01"
                                   "00"
                                   "02"
                                   "dead"
                                   "0101cc";
/* RS: rpt 5, cp 7, upper 2000, lower 1000, claims (0,100) and (500,500). */
static const char v_rs[] = "08"
                           "02"
                           "03"
                           "00"
                           "05"
                           "07"
                           "8f50"
                           "8768"
                           "02"
                           "0064"
                           "83748374";
/* RS with no claims: rpt 1, cp 1, upper 10, lower 0. */
static const char v_rs0[] = "080203000101"
                            "0a0000";
/* RA: report serial 5. */
static const char v_ra[] = "0902030005";
/* CS with a header extension (tag 5, empty) and a trailer (tag 6, ff). */
static const char v_cs_ext[] = "0c020311"
                               "0500"
                               "00"
                               "0601ff";
static const char v_cas[] = "0d020300";
/* CR, reason RLEXC. */
static const char v_cr[] = "0e02030002";
static const char v_car[] = "0f020300";

/* From ../shared/interop/ion/ltp-udp-exchange.hex (copied verbatim). */
static const char ion_ds_hex[] =
    "030181250001008340e413009f8907184001820282020182028201018202820101821b000000c5bf"
    "72c2301a000222e31a000493e042461185060210004582028201008518c103010045840001000085"
    "07040100410085010101004303476fff9f8907184001820282020182028201018202820101821b00"
    "0000c5bf72c2941a000222e41a000493e0427f2b85060210004582028201008518c1030100458400"
    "0100008507040100410085010101005864746573742e2e2e00000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000ff9f89"
    "07184001820282020182028201018202820101821b000000c5bf72c2941a000222e51a000493e042"
    "32d685060210004582028201008518c1030100458400010000850704010041018501010100586474"
    "6573742e2e2e00000000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000ff";
static const char ion_rs_hex[] = "08018125008d11e41383400001008340";
static const char ion_ra_hex[] = "09018125008d11";

/* From ../shared/interop/hdtn/ltp-udp.hex (copied verbatim). */
static const char hdtn_cs_hex[] = "0c8148bfffffffffffffff7f0000";
static const char hdtn_cas_hex[] = "0d8148bfffffffffffffff7f00";
static const char hdtn_ds_hex[] =
    "038148a7bea48d8fd0808001000100882cb2b4a1e2b5b2848001009f890704028202820201820282"
    "0101820100821b000000c5bf8dc3e2001a000f424044cc64531f860a021002448218640044db675d"
    "4986010100025903e800000000000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000000044fea13ab2ff";
static const char hdtn_rs_hex[] =
    "088148a7bea48d8fd080800100f1e7aa838492888001b2b4a1e2b5b2848001882c000100882c";
static const char hdtn_ra_hex[] = "098148a7bea48d8fd080800100f1e7aa838492888001";

static const char *const all_vectors[] = {
    v_rd,        v_rd_cp,      v_rd_cp_eorp, v_gd5,       v_gd_eob_ext,
    v_rs,        v_rs0,        v_ra,         v_cs_ext,    v_cas,
    v_cr,        v_car,        ion_ds_hex,   ion_rs_hex,  ion_ra_hex,
    hdtn_cs_hex, hdtn_cas_hex, hdtn_ds_hex,  hdtn_rs_hex, hdtn_ra_hex,
};
#define N_VECTORS (sizeof all_vectors / sizeof all_vectors[0])

/* ---- hand-built vectors: exact fields --------------------------------------- */

TEST(ltp_seg_vector_rd)
{
    ltp_seg s;
    ltp_claim c[MAXC];
    uint8_t *buf;
    size_t len;
    decode_reencode(v_rd, &s, c, &buf, &len);
    CHECK_EQ_INT(s.type, LTP_RD);
    CHECK_EQ_U64(s.engine, 5);
    CHECK_EQ_U64(s.session, 128);
    CHECK_EQ_INT(s.n_hext, 0);
    CHECK_EQ_INT(s.n_text, 0);
    CHECK_EQ_U64(s.client, 1);
    CHECK_EQ_U64(s.offset, 256);
    CHECK_EQ_U64(s.length, 3);
    CHECK_EQ_MEM(s.data, "abc", 3);
    CHECK_EQ_U64(s.cp_serial, 0);
    CHECK_EQ_U64(s.rpt_serial, 0);
    CHECK_EQ_INT(ltp_seg_data_hdr_len(&s), 9);
    free(buf);
}

TEST(ltp_seg_vector_rd_cp)
{
    ltp_seg s;
    ltp_claim c[MAXC];
    uint8_t *buf;
    size_t len;
    decode_reencode(v_rd_cp, &s, c, &buf, &len);
    CHECK_EQ_INT(s.type, LTP_RD_CP);
    CHECK_EQ_U64(s.engine, 2);
    CHECK_EQ_U64(s.session, 3);
    CHECK_EQ_U64(s.client, 1);
    CHECK_EQ_U64(s.offset, 10);
    CHECK_EQ_U64(s.length, 2);
    CHECK_EQ_U64(s.cp_serial, 4);
    CHECK_EQ_U64(s.rpt_serial, 5);
    CHECK_EQ_MEM(s.data, "\xaa\xbb", 2);
    free(buf);
}

TEST(ltp_seg_vector_64bit_extremes)
{
    ltp_seg s;
    ltp_claim c[MAXC];
    uint8_t *buf;
    size_t len;
    decode_reencode(v_rd_cp_eorp, &s, c, &buf, &len);
    CHECK_EQ_INT(s.type, LTP_RD_CP_EORP);
    CHECK_EQ_U64(s.engine, 1);
    CHECK_EQ_U64(s.session, UINT64_MAX);
    CHECK_EQ_U64(s.cp_serial, UINT64_MAX);
    CHECK_EQ_U64(s.rpt_serial, 1ull << 63);
    CHECK_EQ_U64(s.length, 1);
    CHECK_EQ_INT(s.data[0], 'x');
    free(buf);
}

TEST(ltp_seg_vector_zero_length_data)
{
    ltp_seg s;
    ltp_claim c[MAXC];
    uint8_t *buf;
    size_t len;
    decode_reencode(v_gd5, &s, c, &buf, &len);
    CHECK_EQ_INT(s.type, LTP_GD_5);
    CHECK(ltp_seg_is_data(s.type) && !ltp_seg_is_red(s.type));
    CHECK_EQ_U64(s.length, 0);
    free(buf);
}

TEST(ltp_seg_vector_extensions)
{
    ltp_seg s;
    ltp_claim c[MAXC];
    uint8_t *buf;
    size_t len;
    decode_reencode(v_gd_eob_ext, &s, c, &buf, &len);
    CHECK_EQ_INT(s.type, LTP_GD_EOB);
    CHECK_EQ_INT(s.n_hext, 1);
    CHECK_EQ_INT(s.n_text, 1);
    CHECK_EQ_INT(s.hext[0].tag, 0);
    CHECK_EQ_U64(s.hext[0].len, 2);
    CHECK(s.hext[0].value == buf + 6);
    CHECK_EQ_MEM(s.hext[0].value, "\xaa\xbb", 2);
    CHECK_EQ_U64(s.length, 2);
    CHECK_EQ_MEM(s.data, "\xde\xad", 2);
    CHECK_EQ_INT(s.text[0].tag, 1);
    CHECK_EQ_U64(s.text[0].len, 1);
    CHECK_EQ_INT(s.text[0].value[0], 0xcc);
    /* The header includes the header extension, not the trailer. */
    CHECK_EQ_INT(ltp_seg_data_hdr_len(&s), 11);
    CHECK_EQ_INT(len, 11 + 2 + 3);

    free(buf);

    decode_reencode(v_cs_ext, &s, c, &buf, &len);
    CHECK_EQ_INT(s.type, LTP_CS);
    CHECK_EQ_INT(s.n_hext, 1);
    CHECK_EQ_INT(s.hext[0].tag, 5);
    CHECK_EQ_U64(s.hext[0].len, 0);
    CHECK_EQ_INT(s.reason, LTP_USR_CNCLD);
    CHECK_EQ_INT(s.n_text, 1);
    CHECK_EQ_INT(s.text[0].tag, 6);
    CHECK_EQ_U64(s.text[0].len, 1);
    CHECK_EQ_INT(s.text[0].value[0], 0xff);
    free(buf);
}

TEST(ltp_seg_vector_report)
{
    ltp_seg s;
    ltp_claim c[MAXC];
    uint8_t *buf;
    size_t len;
    decode_reencode(v_rs, &s, c, &buf, &len);
    CHECK_EQ_INT(s.type, LTP_RS);
    CHECK_EQ_U64(s.rpt_serial, 5);
    CHECK_EQ_U64(s.cp_serial, 7);
    CHECK_EQ_U64(s.upper, 2000);
    CHECK_EQ_U64(s.lower, 1000);
    CHECK_EQ_U64(s.n_claims, 2);
    CHECK_EQ_U64(c[0].offset, 0);
    CHECK_EQ_U64(c[0].length, 100);
    CHECK_EQ_U64(c[1].offset, 500);
    CHECK_EQ_U64(c[1].length, 500);
    /* Exactly as many claims as the caller has room for is fine. */
    CHECK_OK(ltp_seg_decode(buf, len, &s, 2));
    CHECK_RC(ltp_seg_decode(buf, len, &s, 1), TERN_EFULL);
    CHECK_RC(ltp_seg_decode(buf, len, &s, 0), TERN_EFULL);
    free(buf);
}

TEST(ltp_seg_vector_report_without_claims)
{
    /* RFC 5326 3.2.2 sets no minimum on the reception claim count. */
    ltp_seg s;
    uint8_t *buf;
    size_t len;
    decode_reencode(v_rs0, &s, NULL, &buf, &len);
    CHECK_EQ_INT(s.type, LTP_RS);
    CHECK_EQ_U64(s.upper, 10);
    CHECK_EQ_U64(s.lower, 0);
    CHECK_EQ_U64(s.n_claims, 0);
    CHECK_OK(ltp_seg_decode(buf, len, &s, 0));
    free(buf);
}

TEST(ltp_seg_vector_control)
{
    ltp_seg s;
    ltp_claim c[MAXC];
    uint8_t *buf;
    size_t len;
    decode_reencode(v_ra, &s, c, &buf, &len);
    CHECK_EQ_INT(s.type, LTP_RA);
    CHECK_EQ_U64(s.engine, 2);
    CHECK_EQ_U64(s.session, 3);
    CHECK_EQ_U64(s.rpt_serial, 5);
    free(buf);
    decode_reencode(v_cr, &s, c, &buf, &len);
    CHECK_EQ_INT(s.type, LTP_CR);
    CHECK_EQ_INT(s.reason, LTP_RLEXC);
    free(buf);
    decode_reencode(v_cas, &s, c, &buf, &len);
    CHECK_EQ_INT(s.type, LTP_CAS);
    CHECK_EQ_INT(len, 4);
    free(buf);
    decode_reencode(v_car, &s, c, &buf, &len);
    CHECK_EQ_INT(s.type, LTP_CAR);
    free(buf);
}

/* ---- every vector: prefixes, trailing junk ---------------------------------- */

TEST(ltp_seg_every_strict_prefix_truncated)
{
    ltp_claim c[MAXC];
    for (size_t v = 0; v < N_VECTORS; v++) {
        size_t len;
        uint8_t *full = unhex(all_vectors[v], &len);
        for (size_t n = 0; n < len; n++) {
            /* Exact-size copy so ASan sees any over-read. */
            uint8_t *p = malloc(n ? n : 1);
            CHECK(p != NULL);
            memcpy(p, full, n);
            ltp_seg s = {.claims = c};
            int rc = ltp_seg_decode(p, n, &s, MAXC);
            CHECK_MSG(rc == TERN_ETRUNCATED, "vector %zu prefix %zu/%zu: %d (%s)", v, n,
                      len, rc, tern_strerror(rc));
            free(p);
        }
        free(full);
    }
}

TEST(ltp_seg_trailing_junk_malformed)
{
    ltp_claim c[MAXC];
    for (size_t v = 0; v < N_VECTORS; v++) {
        size_t len;
        uint8_t *full = unhex(all_vectors[v], &len);
        uint8_t *p = malloc(len + 1);
        CHECK(p != NULL);
        memcpy(p, full, len);
        p[len] = 0;
        ltp_seg s = {.claims = c};
        CHECK_OK(ltp_seg_decode(p, len, &s, MAXC));
        int rc = ltp_seg_decode(p, len + 1, &s, MAXC);
        CHECK_MSG(rc == TERN_EMALFORMED, "vector %zu + 1 byte: %d", v, rc);
        free(p);
        free(full);
    }
}

/* ---- malformed input ------------------------------------------------------- */

static int dec_hex(const char *hex, size_t max_claims)
{
    size_t len;
    uint8_t *buf = unhex(hex, &len);
    ltp_claim c[MAXC];
    ltp_seg s = {.claims = c};
    int rc = ltp_seg_decode(buf, len, &s, max_claims);
    free(buf);
    return rc;
}

TEST(ltp_seg_malformed)
{
    /* Version 1 (otherwise a valid CAS). */
    CHECK_RC(dec_hex("1d020300", MAXC), TERN_EMALFORMED);
    CHECK_RC(dec_hex("f0020300", MAXC), TERN_EMALFORMED);
    /* The undefined control types. */
    CHECK_RC(dec_hex("0a020300", MAXC), TERN_EMALFORMED);
    CHECK_RC(dec_hex("0b020300", MAXC), TERN_EMALFORMED);
    CHECK_RC(dec_hex("0a", MAXC), TERN_EMALFORMED);
    /* Claim past the upper bound: span 10, claim (5, 6); then (11, 0). */
    CHECK_RC(dec_hex("08020300010a0a00010506", MAXC), TERN_EMALFORMED);
    CHECK_RC(dec_hex("08020300010a0a00010b00", MAXC), TERN_EMALFORMED);
    /* ... and one ending exactly at it is fine: (5, 5); a second one is not. */
    CHECK_OK(dec_hex("08020300010a0a00010505", MAXC));
    CHECK_RC(dec_hex("08020300010a0a000205050a01", MAXC), TERN_EMALFORMED);
    /* Claim with offset + length wrapping 64 bits. */
    CHECK_RC(dec_hex("08020300010a0a000105"
                     "81ffffffffffffffff7f",
                     MAXC),
             TERN_EMALFORMED);
    /* Lower bound above upper bound. */
    CHECK_RC(dec_hex("08020300010a050601000a", MAXC), TERN_EMALFORMED);
    CHECK_RC(dec_hex("08020300010a050600", MAXC), TERN_EMALFORMED);
    /* Trailing junk after a trailer extension. */
    CHECK_RC(dec_hex("0d0203010101aa00", MAXC), TERN_EMALFORMED);
    CHECK_OK(dec_hex("0d0203010101aa", MAXC));
}

TEST(ltp_seg_sdnv_overflow)
{
    /* Session number 2^64. */
    CHECK_RC(dec_hex("0d0282808080808080808000"
                     "00",
                     MAXC),
             TERN_EOVERFLOW);
    /* Engine ID 2^64. */
    CHECK_RC(dec_hex("0d828080808080808080000200", MAXC), TERN_EOVERFLOW);
    /* Report serial 2^65. */
    CHECK_RC(dec_hex("0902030084808080808080808000", MAXC), TERN_EOVERFLOW);
    /* Eleven-byte SDNV (value 0): longer than any 64-bit value needs. */
    CHECK_RC(dec_hex("090203008080808080808080808000", MAXC), TERN_EMALFORMED);
    /* Data offset 2^64-1 with length 1: the end does not fit 64 bits. */
    CHECK_RC(dec_hex("040203000181ffffffffffffffff7f0141", MAXC), TERN_EOVERFLOW);
    /* Extension length 2^64 (header extension). */
    CHECK_RC(dec_hex("0d020310018280808080808080808000", MAXC), TERN_EOVERFLOW);
}

TEST(ltp_seg_lengths_never_trusted)
{
    /* Data length larger than what is left. */
    CHECK_RC(dec_hex("04020300010003aabb", MAXC), TERN_ETRUNCATED);
    CHECK_RC(dec_hex("04020300010081ffffffffffffffff7f", MAXC), TERN_ETRUNCATED);
    /* Extension length larger than what is left. */
    CHECK_RC(dec_hex("0d0203100105aa", MAXC), TERN_ETRUNCATED);
    CHECK_RC(dec_hex("0d020301"
                     "0181ffffffffffffffff7f",
                     MAXC),
             TERN_ETRUNCATED);
    /* A claim count the buffer cannot hold is a truncation, not EFULL. */
    CHECK_RC(dec_hex("08020300010a0a00"
                     "8480808000"
                     "0000",
                     MAXC),
             TERN_ETRUNCATED);
    CHECK_RC(dec_hex("08020300010a0a0003000100020003", 2), TERN_EFULL);
    /* Extension counts promise more extensions than there are. */
    CHECK_RC(dec_hex("0d0203f0", MAXC), TERN_ETRUNCATED);
    CHECK_RC(dec_hex("0d02030f0100", MAXC), TERN_ETRUNCATED);
}

TEST(ltp_seg_decode_bad_args)
{
    uint8_t b[4] = {0x0d, 2, 3, 0};
    CHECK_RC(ltp_seg_decode(b, sizeof b, NULL, 0), -EINVAL);
    ltp_seg s = {.claims = NULL};
    CHECK_RC(ltp_seg_decode(NULL, 4, &s, 0), -EINVAL);
    CHECK_RC(ltp_seg_decode(NULL, 0, &s, 0), TERN_ETRUNCATED);
    /* A report with claims but no array to put them in. */
    CHECK_RC(dec_hex("08020300010a0a00010505", 0), TERN_EFULL);
    uint8_t *buf;
    size_t len;
    buf = unhex("08020300010a0a00010505", &len);
    CHECK_RC(ltp_seg_decode(buf, len, &s, 4), -EINVAL);
    free(buf);
}

/* ---- round trips ----------------------------------------------------------- */

static const uint8_t payload[300] = {1, 2, 3, 4, 5, 6, 7, 8, 9};

static void fill(ltp_seg *s, uint8_t type, uint64_t x, ltp_claim *claims)
{
    memset(s, 0, sizeof *s);
    s->type = type;
    s->engine = x;
    s->session = ~x;
    s->n_hext = (uint8_t)(x % 3);
    s->n_text = (uint8_t)(x % 2 ? 2 : 0);
    for (int i = 0; i < s->n_hext; i++)
        s->hext[i] = (ltp_ext){
            .tag = (uint8_t)(0x10 + i), .len = (uint64_t)(i * 130), .value = payload};
    for (int i = 0; i < s->n_text; i++)
        s->text[i] = (ltp_ext){
            .tag = (uint8_t)(0xf0 + i), .len = (uint64_t)(i + 1), .value = payload + 7};
    if (ltp_seg_is_data(type)) {
        s->client = x & 0xffff;
        s->offset = x >> 1;
        s->length = x % 257;
        s->data = payload + 3;
        if (ltp_seg_is_cp(type)) {
            s->cp_serial = x * 0x9e3779b97f4a7c15ull;
            s->rpt_serial = x >> 7;
        }
    } else if (type == LTP_RS) {
        s->rpt_serial = x ^ 0x5555;
        s->cp_serial = x * 3;
        s->lower = x >> 2;
        s->upper = s->lower + 5000;
        s->claims = claims;
        s->n_claims = 1 + x % 7;
        for (uint64_t i = 0; i < s->n_claims; i++)
            claims[i] = (ltp_claim){.offset = i * 700, .length = 1 + i * 13};
    } else if (type == LTP_RA) {
        s->rpt_serial = x;
    } else if (type == LTP_CS || type == LTP_CR) {
        s->reason = (uint8_t)(x % 6);
    }
}

TEST(ltp_seg_roundtrip_every_type)
{
    uint64_t seeds[] = {0,
                        1,
                        2,
                        3,
                        127,
                        128,
                        16383,
                        16384,
                        1ull << 31,
                        1ull << 32,
                        (1ull << 63) - 1,
                        1ull << 63,
                        UINT64_MAX,
                        0x0123456789abcdefull};
    for (uint8_t t = 0; t < 16; t++) {
        if (t == LTP_CTRL_A || t == LTP_CTRL_B)
            continue;
        for (size_t k = 0; k < sizeof seeds / sizeof seeds[0]; k++) {
            ltp_claim in_c[8], out_c[8];
            ltp_seg in, out = {.claims = out_c};
            fill(&in, t, seeds[k], in_c);
            uint8_t buf[2048];
            int n = ltp_seg_encode(&in, buf, sizeof buf);
            CHECK_MSG(n > 0, "type %u seed %zu: %d", t, k, n);
            /* Exact-size copy so ASan sees over-reads. */
            uint8_t *p = malloc((size_t)n);
            CHECK(p != NULL);
            memcpy(p, buf, (size_t)n);
            CHECK_OK(ltp_seg_decode(p, (size_t)n, &out, 8));
            check_seg_eq(&in, &out);
            CHECK_EQ_INT(p[0], t);
            if (ltp_seg_is_data(t)) {
                size_t tl = 0;
                for (int i = 0; i < in.n_text; i++)
                    tl += 1 + 1 + (size_t)in.text[i].len;
                CHECK_EQ_U64(ltp_seg_data_hdr_len(&in) + in.length + tl, n);
                CHECK(out.data == p + ltp_seg_data_hdr_len(&in));
            } else {
                CHECK_EQ_INT(ltp_seg_data_hdr_len(&in), 0);
            }
            /* Every smaller capacity fails without writing past it. */
            for (int cap = 0; cap < n; cap++)
                CHECK_RC(ltp_seg_encode(&in, p, (size_t)cap), TERN_ENOSPACE);
            free(p);
        }
    }
}

TEST(ltp_seg_roundtrip_max_extensions)
{
    ltp_seg in, out;
    memset(&in, 0, sizeof in);
    in.type = LTP_RD_CP_EOB;
    in.engine = 7;
    in.session = 9;
    in.n_hext = LTP_MAX_EXT;
    in.n_text = LTP_MAX_EXT;
    for (int i = 0; i < LTP_MAX_EXT; i++) {
        in.hext[i] = (ltp_ext){.tag = (uint8_t)i, .len = (uint64_t)i, .value = payload};
        in.text[i] = (ltp_ext){.tag = (uint8_t)(100 + i), .len = 1, .value = payload + i};
    }
    in.client = 1;
    in.length = 5;
    in.data = payload;
    in.cp_serial = 1;
    uint8_t buf[512];
    int n = ltp_seg_encode(&in, buf, sizeof buf);
    CHECK(n > 0);
    CHECK_EQ_INT(buf[0], 0x03);
    CHECK_EQ_INT(buf[3], 0xff);
    CHECK_OK(ltp_seg_decode(buf, (size_t)n, &out, 0));
    check_seg_eq(&in, &out);
}

TEST(ltp_seg_encode_rejects_inconsistent)
{
    ltp_claim c[2] = {{0, 5}, {5, 6}};
    ltp_seg s;
    uint8_t buf[256];
    fill(&s, LTP_CAS, 1, NULL);
    s.type = LTP_CTRL_A;
    CHECK_RC(ltp_seg_encode(&s, buf, sizeof buf), -EINVAL);
    s.type = LTP_CTRL_B;
    CHECK_RC(ltp_seg_encode(&s, buf, sizeof buf), -EINVAL);
    s.type = 0x10;
    CHECK_RC(ltp_seg_encode(&s, buf, sizeof buf), -EINVAL);
    s.type = LTP_CAS;
    s.n_hext = LTP_MAX_EXT + 1;
    CHECK_RC(ltp_seg_encode(&s, buf, sizeof buf), -EINVAL);
    s.n_hext = 0;
    s.n_text = 1;
    s.text[0] = (ltp_ext){.tag = 1, .len = 3, .value = NULL};
    CHECK_RC(ltp_seg_encode(&s, buf, sizeof buf), -EINVAL);
    CHECK_RC(ltp_seg_encode(NULL, buf, sizeof buf), -EINVAL);

    /* Report: claim past the upper bound, lower above upper, no claims array. */
    memset(&s, 0, sizeof s);
    s.type = LTP_RS;
    s.upper = 10;
    s.claims = c;
    s.n_claims = 2;
    CHECK_RC(ltp_seg_encode(&s, buf, sizeof buf), -EINVAL);
    s.n_claims = 1;
    CHECK(ltp_seg_encode(&s, buf, sizeof buf) > 0);
    s.lower = 11;
    CHECK_RC(ltp_seg_encode(&s, buf, sizeof buf), -EINVAL);
    s.lower = 0;
    s.claims = NULL;
    CHECK_RC(ltp_seg_encode(&s, buf, sizeof buf), -EINVAL);
    s.n_claims = 0; /* no claims needs no array */
    CHECK(ltp_seg_encode(&s, buf, sizeof buf) > 0);

    /* Data: no data pointer, offset + length wrapping. */
    memset(&s, 0, sizeof s);
    s.type = LTP_GD;
    s.length = 4;
    CHECK_RC(ltp_seg_encode(&s, buf, sizeof buf), -EINVAL);
    s.data = payload;
    s.offset = UINT64_MAX - 3;
    CHECK_RC(ltp_seg_encode(&s, buf, sizeof buf), -EINVAL);
    s.offset = UINT64_MAX - 4;
    CHECK(ltp_seg_encode(&s, buf, sizeof buf) > 0);
    /* A segment that cannot fit any buffer. */
    s.offset = 0;
    s.length = UINT64_MAX;
    CHECK(ltp_seg_encode(&s, buf, sizeof buf) < 0);
}

TEST(ltp_seg_shortest_sdnvs)
{
    /* Non-shortest SDNVs decode; re-encoding uses the shortest form. */
    size_t len;
    ltp_seg s = {0};
    uint8_t *b = unhex("0d800280800300", &len);
    CHECK_OK(ltp_seg_decode(b, len, &s, 0));
    CHECK_EQ_U64(s.engine, 2);
    CHECK_EQ_U64(s.session, 3);
    uint8_t out[16];
    CHECK_EQ_INT(ltp_seg_encode(&s, out, sizeof out), 4);
    CHECK_EQ_MEM(out, "\x0d\x02\x03\x00", 4);
    free(b);
}

TEST(ltp_seg_names)
{
    CHECK_EQ_STR(ltp_seg_type_name(LTP_RD), "RD");
    CHECK_EQ_STR(ltp_seg_type_name(LTP_RD_CP_EOB), "RD-CP-EOB");
    CHECK_EQ_STR(ltp_seg_type_name(LTP_GD_EOB), "GD-EOB");
    CHECK_EQ_STR(ltp_seg_type_name(LTP_RS), "RS");
    CHECK_EQ_STR(ltp_seg_type_name(LTP_CAS), "CAS");
    CHECK_EQ_STR(ltp_seg_type_name(LTP_CAR), "CAR");
    CHECK_EQ_STR(ltp_seg_type_name(16), "unknown");
    for (unsigned t = 0; t < 256; t++)
        CHECK(ltp_seg_type_name((uint8_t)t) != NULL);
    CHECK_EQ_STR(ltp_reason_name(LTP_USR_CNCLD), "USR_CNCLD");
    CHECK_EQ_STR(ltp_reason_name(LTP_RLEXC), "RLEXC");
    CHECK_EQ_STR(ltp_reason_name(LTP_RXMTCYCEXC), "RXMTCYCEXC");
    CHECK_EQ_STR(ltp_reason_name(6), "unknown");
    CHECK_EQ_STR(ltp_reason_name(255), "unknown");
}

/* ---- interop: ION 4.1.3 ----------------------------------------------------- */

TEST(ltp_seg_interop_ion)
{
    ltp_seg s;
    ltp_claim c[MAXC];
    uint8_t *buf;
    size_t len;

    decode_reencode(ion_ds_hex, &s, c, &buf, &len);
    CHECK_EQ_INT(len, 460);
    CHECK_EQ_INT(s.type, LTP_RD_CP_EOB);
    CHECK_EQ_U64(s.engine, 1);
    CHECK_EQ_U64(s.session, 165);
    CHECK_EQ_INT(s.n_hext, 0);
    CHECK_EQ_INT(s.n_text, 0);
    CHECK_EQ_U64(s.client, 1);
    CHECK_EQ_U64(s.offset, 0);
    CHECK_EQ_U64(s.length, 448);
    CHECK_EQ_U64(s.cp_serial, 12819);
    CHECK_EQ_U64(s.rpt_serial, 0);
    CHECK_EQ_INT(ltp_seg_data_hdr_len(&s), 12);
    /* The block: three indefinite-length CBOR arrays back to back. */
    CHECK_EQ_INT(s.data[0], 0x9f);
    CHECK_EQ_INT(s.data[447], 0xff);
    free(buf);

    decode_reencode(ion_rs_hex, &s, c, &buf, &len);
    CHECK_EQ_INT(s.type, LTP_RS);
    CHECK_EQ_U64(s.engine, 1);
    CHECK_EQ_U64(s.session, 165);
    CHECK_EQ_U64(s.rpt_serial, 1681);
    CHECK_EQ_U64(s.cp_serial, 12819);
    CHECK_EQ_U64(s.upper, 448);
    CHECK_EQ_U64(s.lower, 0);
    CHECK_EQ_U64(s.n_claims, 1);
    CHECK_EQ_U64(c[0].offset, 0);
    CHECK_EQ_U64(c[0].length, 448);
    free(buf);

    decode_reencode(ion_ra_hex, &s, c, &buf, &len);
    CHECK_EQ_INT(s.type, LTP_RA);
    CHECK_EQ_U64(s.engine, 1);
    CHECK_EQ_U64(s.session, 165);
    CHECK_EQ_U64(s.rpt_serial, 1681);
    free(buf);
}

/* ---- interop: HDTN 1.3.1 ---------------------------------------------------- */

TEST(ltp_seg_interop_hdtn)
{
    ltp_seg s;
    ltp_claim c[MAXC];
    uint8_t *buf;
    size_t len;
    const uint64_t session = 0x277c9068fa000001ull; /* random, 62 bits */
    const uint64_t cp = 0x3268871356410001ull;
    const uint64_t rpt = 0x71cea81842420001ull;

    /* The link "ping": cancel from sender, reason 0, session 2^62-1. */
    decode_reencode(hdtn_cs_hex, &s, c, &buf, &len);
    CHECK_EQ_INT(s.type, LTP_CS);
    CHECK_EQ_U64(s.engine, 200);
    CHECK_EQ_U64(s.session, 0x3FFFFFFFFFFFFFFFull);
    CHECK_EQ_INT(s.reason, LTP_USR_CNCLD);
    CHECK_EQ_INT(s.n_hext + s.n_text, 0);
    free(buf);

    decode_reencode(hdtn_cas_hex, &s, c, &buf, &len);
    CHECK_EQ_INT(s.type, LTP_CAS);
    CHECK_EQ_U64(s.engine, 200);
    CHECK_EQ_U64(s.session, 0x3FFFFFFFFFFFFFFFull);
    free(buf);

    decode_reencode(hdtn_ds_hex, &s, c, &buf, &len);
    CHECK_EQ_INT(s.type, LTP_RD_CP_EOB);
    CHECK_EQ_U64(s.engine, 200);
    CHECK_EQ_U64(s.session, session);
    CHECK_EQ_U64(s.client, 1);
    CHECK_EQ_U64(s.offset, 0);
    CHECK_EQ_U64(s.length, 1068);
    CHECK_EQ_U64(s.cp_serial, cp);
    CHECK_EQ_U64(s.rpt_serial, 0);
    CHECK_EQ_INT(ltp_seg_data_hdr_len(&s), 27);
    CHECK_EQ_INT(s.data[0], 0x9f); /* one BPv7 bundle */
    CHECK_EQ_INT(s.data[1067], 0xff);
    free(buf);

    decode_reencode(hdtn_rs_hex, &s, c, &buf, &len);
    CHECK_EQ_INT(s.type, LTP_RS);
    CHECK_EQ_U64(s.engine, 200);
    CHECK_EQ_U64(s.session, session);
    CHECK_EQ_U64(s.rpt_serial, rpt);
    CHECK_EQ_U64(s.cp_serial, cp);
    CHECK_EQ_U64(s.upper, 1068);
    CHECK_EQ_U64(s.lower, 0);
    CHECK_EQ_U64(s.n_claims, 1);
    CHECK_EQ_U64(c[0].offset, 0);
    CHECK_EQ_U64(c[0].length, 1068);
    free(buf);

    decode_reencode(hdtn_ra_hex, &s, c, &buf, &len);
    CHECK_EQ_INT(s.type, LTP_RA);
    CHECK_EQ_U64(s.engine, 200);
    CHECK_EQ_U64(s.session, session);
    CHECK_EQ_U64(s.rpt_serial, rpt);
    free(buf);
}
