/* BPv7 bundle codec tests: EIDs, round trips with every CRC type, truncation,
 * corruption, structural errors, status reports, and real bundles from ION. */
#include <errno.h>
#include <stdlib.h>

#include "bp_bundle.h"
#include "tern/crc.h"
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

static void check_eid_text(const bp_eid *e, const char *want)
{
    char out[BP_EID_TEXT_MAX];
    int n = bp_eid_print(e, out, sizeof out);
    CHECK_EQ_INT(n, strlen(want));
    CHECK_EQ_STR(out, want);
}

/* Encodes b into a malloc'ed buffer of exactly its size. */
static uint8_t *encode_exact(const bp_bundle *b, size_t *len)
{
    size_t n = 0;
    const char *why = NULL;
    CHECK_RC(bp_bundle_encode(b, NULL, 0, &n, &why), TERN_ENOSPACE);
    uint8_t *buf = malloc(n);
    CHECK(buf != NULL);
    size_t m = 0;
    CHECK_OK(bp_bundle_encode(b, buf, n, &m, &why));
    CHECK_EQ_U64(m, n);
    if (n > 1) {
        uint8_t *small = malloc(n - 1);
        CHECK(small != NULL);
        CHECK_RC(bp_bundle_encode(b, small, n - 1, &m, &why), TERN_ENOSPACE);
        CHECK_EQ_U64(m, n);
        free(small);
    }
    *len = n;
    return buf;
}

static void check_bundle_eq(const bp_bundle *a, const bp_bundle *b)
{
    CHECK_EQ_INT(a->definite, b->definite);
    CHECK_EQ_U64(a->pri.version, b->pri.version);
    CHECK_EQ_U64(a->pri.flags, b->pri.flags);
    CHECK_EQ_INT(a->pri.crc_type, b->pri.crc_type);
    CHECK(bp_eid_equal(&a->pri.dest, &b->pri.dest));
    CHECK(bp_eid_equal(&a->pri.src, &b->pri.src));
    CHECK(bp_eid_equal(&a->pri.report_to, &b->pri.report_to));
    CHECK_EQ_U64(a->pri.ctime_ms, b->pri.ctime_ms);
    CHECK_EQ_U64(a->pri.seq, b->pri.seq);
    CHECK_EQ_U64(a->pri.lifetime_ms, b->pri.lifetime_ms);
    CHECK_EQ_U64(a->pri.frag_offset, b->pri.frag_offset);
    CHECK_EQ_U64(a->pri.total_adu_len, b->pri.total_adu_len);
    CHECK_EQ_U64(a->n_blocks, b->n_blocks);
    for (size_t i = 0; i < a->n_blocks; i++) {
        const bp_block *x = &bp_bundle_cblocks(a)[i], *y = &bp_bundle_cblocks(b)[i];
        CHECK_EQ_U64(x->type, y->type);
        CHECK_EQ_U64(x->number, y->number);
        CHECK_EQ_U64(x->flags, y->flags);
        CHECK_EQ_INT(x->crc_type, y->crc_type);
        if (!bp_block_type_known(x->type) || x->type == BP_BLOCK_PAYLOAD) {
            CHECK_EQ_U64(x->data_len, y->data_len);
            if (x->data_len)
                CHECK_EQ_MEM(x->data, y->data, x->data_len);
        }
    }
    CHECK_EQ_INT(a->has_prev_node, b->has_prev_node);
    if (a->has_prev_node)
        CHECK(bp_eid_equal(&a->prev_node, &b->prev_node));
    CHECK_EQ_INT(a->has_age, b->has_age);
    CHECK_EQ_U64(a->age_ms, b->age_ms);
    CHECK_EQ_INT(a->has_hop_count, b->has_hop_count);
    CHECK_EQ_U64(a->hop_limit, b->hop_limit);
    CHECK_EQ_U64(a->hop_count, b->hop_count);
}

static const uint8_t payload[] = "hello, bundle";
static const uint8_t opaque[] = {0x84, 0x00, 0x01, 0x00, 0x00};

/* A bundle with every block kind; crc is the CRC type of every block. */
static void make_bundle(bp_bundle *b, uint8_t crc, bool definite, bool frag)
{
    memset(b, 0, sizeof *b);
    b->definite = definite;
    b->pri.version = 7;
    b->pri.flags =
        BP_FLAG_STATUS_TIME | BP_FLAG_RPT_DELIVERY | (frag ? BP_FLAG_FRAGMENT : 0);
    b->pri.crc_type = crc;
    bp_eid_ipn(&b->pri.dest, 2, 1);
    CHECK_OK(bp_eid_parse("dtn://src.example/app", &b->pri.src, NULL));
    bp_eid_none(&b->pri.report_to);
    b->pri.ctime_ms = 849320526384ULL;
    b->pri.seq = 7;
    b->pri.lifetime_ms = 86400000;
    if (frag) {
        b->pri.frag_offset = 1000;
        b->pri.total_adu_len = 5000;
    }
    b->has_prev_node = true;
    bp_eid_ipn(&b->prev_node, 1, 0);
    b->has_age = true;
    b->age_ms = 123456;
    b->has_hop_count = true;
    b->hop_limit = 30;
    b->hop_count = 2;
    bp_block *k = b->blocks;
    k[0] = (bp_block){
        .type = BP_BLOCK_PREV_NODE, .number = 2, .flags = 0x10, .crc_type = crc};
    k[1] = (bp_block){.type = 193,
                      .number = 3,
                      .flags = 1,
                      .crc_type = crc,
                      .data = opaque,
                      .data_len = sizeof opaque};
    k[2] = (bp_block){.type = BP_BLOCK_AGE, .number = 4, .flags = 1, .crc_type = crc};
    k[3] = (bp_block){.type = BP_BLOCK_HOP_COUNT, .number = 5, .crc_type = crc};
    k[4] = (bp_block){.type = BP_BLOCK_PAYLOAD,
                      .number = 1,
                      .crc_type = crc,
                      .data = payload,
                      .data_len = sizeof payload - 1};
    b->n_blocks = 5;
}

/* ---- endpoint IDs --------------------------------------------------------- */

TEST(eid_parse_print)
{
    static const char *ok[] = {"ipn:1.1",
                               "ipn:0.0",
                               "ipn:4294967295.4294967296",
                               "ipn:4294967295.4294967295.18446744073709551615",
                               "ipn:977000.100.1",
                               "dtn:none",
                               "dtn://node/svc",
                               "dtn://node/",
                               "imc:1.2",
                               "dtn://n/a/b?c"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        bp_eid e;
        const char *why = NULL;
        CHECK_OK(bp_eid_parse(ok[i], &e, &why));
        check_eid_text(&e, ok[i]);
    }
    bp_eid e;
    CHECK_OK(bp_eid_parse("ipn:18446744073709551615.7", &e, NULL));
    CHECK_EQ_INT(e.scheme, BP_SCHEME_IPN);
    CHECK_EQ_U64(e.node, UINT64_MAX);
    CHECK_EQ_U64(e.service, 7);
    /* RFC 9171's node number is RFC 9758's fully-qualified node number
     * (allocator << 32 | node): the same EID in either text form, printed
     * with the allocator when it is not the default one (0) */
    check_eid_text(&e, "ipn:4294967295.4294967295.7");
    static const struct {
        const char *text, *printed;
        uint64_t fqnn;
    } same[] = {
        {"ipn:0.5.1", "ipn:5.1", 5},
        {"ipn:0.4294967295.1", "ipn:4294967295.1", 4294967295u},
        {"ipn:4294967296.65", "ipn:1.0.65", 1ull << 32},
        {"ipn:4196183048192100.1", "ipn:977000.100.1", 977000ull << 32 | 100},
    };
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        bp_eid f;
        CHECK_OK(bp_eid_parse(same[i].text, &e, NULL));
        CHECK_OK(bp_eid_parse(same[i].printed, &f, NULL));
        CHECK_EQ_U64(e.node, same[i].fqnn);
        CHECK(bp_eid_equal(&e, &f));
        CHECK(!e.ipn3 && !f.ipn3); /* text never picks the 3-element CBOR form */
        check_eid_text(&e, same[i].printed);
    }
    CHECK_OK(bp_eid_parse("dtn:none", &e, NULL));
    CHECK(bp_eid_is_none(&e));
    CHECK_OK(bp_eid_parse("imc:3.4", &e, NULL));
    CHECK_EQ_INT(e.scheme, BP_SCHEME_IMC);
    CHECK_EQ_U64(e.node, 3);

    /* A small buffer: cut text, TERN_ENOSPACE. */
    char small[5];
    bp_eid_ipn(&e, 12, 34);
    CHECK_RC(bp_eid_print(&e, small, sizeof small), TERN_ENOSPACE);
    CHECK_EQ_STR(small, "ipn:");
}

TEST(eid_parse_errors)
{
    static const struct {
        const char *text;
        int rc;
    } bad[] = {
        {"", TERN_ESYNTAX},
        {"ipn:", TERN_ESYNTAX},
        {"ipn:1", TERN_ESYNTAX},
        {"ipn:1.", TERN_ESYNTAX},
        {"ipn:.1", TERN_ESYNTAX},
        {"ipn:a.1", TERN_ESYNTAX},
        {"ipn:01.1", TERN_ESYNTAX},
        {"ipn:1.1.1.1", TERN_ESYNTAX},
        {"ipn:1..1", TERN_ESYNTAX},
        {"ipn:1.01.1", TERN_ESYNTAX},
        {"ipn:4294967296.1.1", TERN_EOVERFLOW},
        {"ipn:1.4294967296.1", TERN_EOVERFLOW},
        {"imc:1.1.1", TERN_ESYNTAX},
        {"ipn:-1.1", TERN_ESYNTAX},
        {"ipn: 1.1", TERN_ESYNTAX},
        {"IPN:1.1", TERN_ESYNTAX},
        {"ipn:18446744073709551616.1", TERN_EOVERFLOW},
        {"dtn:", TERN_ESYNTAX},
        {"dtn:/x/y", TERN_ESYNTAX},
        {"dtn://", TERN_ESYNTAX},
        {"dtn://node", TERN_ESYNTAX},
        {"dtn:///x", TERN_ESYNTAX},
        {"dtn://a\tb/c", TERN_ESYNTAX},
        {"dtn:nonex", TERN_ESYNTAX},
        {"foo:1.1", TERN_ESYNTAX},
        {"imc:1", TERN_ESYNTAX},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        bp_eid e;
        bp_eid_ipn(&e, 9, 9);
        const char *why = NULL;
        int rc = bp_eid_parse(bad[i].text, &e, &why);
        CHECK_MSG(rc == bad[i].rc, "\"%s\": rc %d want %d", bad[i].text, rc, bad[i].rc);
        CHECK(why != NULL);
        CHECK_EQ_U64(e.node, 9); /* untouched on error */
    }
    char longtext[BP_DTN_SSP_MAX + 16] = "dtn://n/";
    memset(longtext + 8, 'x', sizeof longtext - 9);
    longtext[sizeof longtext - 1] = '\0';
    bp_eid e;
    CHECK_RC(bp_eid_parse(longtext, &e, NULL), TERN_EOVERFLOW);
}

static void eid_cbor_case(const char *text, const char *hex)
{
    bp_eid e, f;
    CHECK_OK(bp_eid_parse(text, &e, NULL));
    uint8_t buf[300];
    tern_cbor_enc enc;
    tern_cbor_enc_init(&enc, buf, sizeof buf);
    CHECK_OK(bp_eid_encode(&enc, &e));
    size_t n, wn;
    CHECK_OK(tern_cbor_enc_finish(&enc, &n));
    uint8_t *want = unhex(hex, &wn);
    CHECK_EQ_U64(n, wn);
    CHECK_EQ_MEM(buf, want, n);
    tern_cbor_dec d;
    tern_cbor_dec_init(&d, want, wn);
    CHECK_OK(bp_eid_decode(&d, &f, NULL));
    CHECK(tern_cbor_dec_done(&d));
    CHECK(bp_eid_equal(&e, &f));
    check_eid_text(&f, text);
    /* Every prefix is truncated and leaves the cursor alone. */
    for (size_t i = 0; i < wn; i++) {
        tern_cbor_dec_init(&d, want, i);
        const char *why = NULL;
        CHECK_RC(bp_eid_decode(&d, &f, &why), TERN_ETRUNCATED);
        CHECK(why != NULL);
        CHECK_EQ_U64(d.pos, 0);
    }
    free(want);
}

TEST(eid_cbor)
{
    eid_cbor_case("ipn:1.1", "8202820101");
    eid_cbor_case("ipn:1.0.65", "8202821b00000001000000001841");
    eid_cbor_case("dtn:none", "820100");
    eid_cbor_case("dtn://a/b", "8201652f2f612f62");

    bp_eid e;
    CHECK_OK(bp_eid_parse("imc:1.2", &e, NULL));
    eid_cbor_case("imc:1.2", "8203820102"); /* ION's */
    e.scheme = 9;                           /* no such scheme */
    tern_cbor_enc enc;
    tern_cbor_enc_init(&enc, NULL, 0);
    CHECK_RC(bp_eid_encode(&enc, &e), -EINVAL);

    static const char *bad[] = {
        "820101",       /* dtn integer SSP other than 0 */
        "8204820101",   /* scheme 4: none Tern knows */
        "82028101",     /* ipn SSP of one item */
        "8201617",      /* odd, replaced below */
        "830282010100", /* EID array of 3 */
        "8201612f",     /* dtn text not //node/ */
        "82016a2f2f6e6f64652f78ff",
        "820282206101", /* negative node */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (i == 3)
            continue;
        size_t n;
        uint8_t *b = unhex(bad[i], &n);
        tern_cbor_dec d;
        tern_cbor_dec_init(&d, b, n);
        const char *why = NULL;
        int rc = bp_eid_decode(&d, &e, &why);
        CHECK_MSG(rc < 0, "%s decoded", bad[i]);
        CHECK(why != NULL);
        free(b);
    }
}

/* RFC 9758's 3-element ipn form: [2, [allocator, node, service]]. */
TEST(eid_cbor_ipn_three_elements)
{
    static const struct {
        const char *hex, *text, *two; /* two: the same EID in the 2-element form */
        uint64_t fqnn, service;
    } ok[] = {
        {"820283000a02", "ipn:10.2", "8202820a02", 10, 2},
        {"8202831a000ee868186401", "ipn:977000.100.1", "8202821b000ee8680000006401",
         977000ull << 32 | 100, 1},
        {"8202831affffffff1affffffff1affffffff", "ipn:4294967295.4294967295.4294967295",
         "8202821bffffffffffffffff1affffffff", UINT64_MAX, 4294967295u},
        {"820283000000", "ipn:0.0", "8202820000", 0, 0},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        size_t n, tn;
        uint8_t *in = unhex(ok[i].hex, &n), *two = unhex(ok[i].two, &tn);
        tern_cbor_dec d;
        tern_cbor_dec_init(&d, in, n);
        bp_eid e, f;
        const char *why = NULL;
        CHECK_MSG(bp_eid_decode(&d, &e, &why) == 0, "%s: %s", ok[i].hex, why);
        CHECK(tern_cbor_dec_done(&d));
        CHECK(e.ipn3);
        CHECK_EQ_U64(e.node, ok[i].fqnn);
        CHECK_EQ_U64(e.service, ok[i].service);
        check_eid_text(&e, ok[i].text);
        /* re-encoded in the form it came in */
        uint8_t buf[64];
        tern_cbor_enc enc;
        tern_cbor_enc_init(&enc, buf, sizeof buf);
        CHECK_OK(bp_eid_encode(&enc, &e));
        size_t m;
        CHECK_OK(tern_cbor_enc_finish(&enc, &m));
        CHECK_EQ_U64(m, n);
        CHECK_EQ_MEM(buf, in, n);
        /* the 2-element form names the same endpoint, and stays 2-element */
        tern_cbor_dec_init(&d, two, tn);
        CHECK_OK(bp_eid_decode(&d, &f, NULL));
        CHECK(!f.ipn3);
        CHECK(bp_eid_equal(&e, &f));
        check_eid_text(&f, ok[i].text);
        tern_cbor_enc_init(&enc, buf, sizeof buf);
        CHECK_OK(bp_eid_encode(&enc, &f));
        CHECK_OK(tern_cbor_enc_finish(&enc, &m));
        CHECK_EQ_U64(m, tn);
        CHECK_EQ_MEM(buf, two, tn);
        /* and what text makes is 2-element */
        CHECK_OK(bp_eid_parse(ok[i].text, &f, NULL));
        CHECK(!f.ipn3 && bp_eid_equal(&e, &f));
        /* every prefix is truncated and leaves the cursor alone */
        for (size_t k = 0; k < n; k++) {
            tern_cbor_dec_init(&d, in, k);
            CHECK_RC(bp_eid_decode(&d, &f, &why), TERN_ETRUNCATED);
            CHECK_EQ_U64(d.pos, 0);
        }
        free(in);
        free(two);
    }
    static const struct {
        const char *hex;
        int rc;
        const char *why;
    } bad[] = {
        {"82028400010203", TERN_EMALFORMED,
         "ipn EID SSP not [node, service] or [allocator, node, service]"},
        {"82028101", TERN_EMALFORMED,
         "ipn EID SSP not [node, service] or [allocator, node, service]"},
        {"8202800", TERN_EMALFORMED, NULL}, /* odd, skipped */
        {"82029f000102ff", TERN_EMALFORMED,
         "ipn EID SSP not [node, service] or [allocator, node, service]"},
        {"820283200102", TERN_ETYPE, "ipn EID number not an unsigned integer"},
        {"820283002001", TERN_ETYPE, "ipn EID number not an unsigned integer"},
        {"820283000120", TERN_ETYPE, "ipn EID number not an unsigned integer"},
        {"820283000161ff", TERN_ETYPE, "ipn EID number not an unsigned integer"},
        {"8202831b00000001000000000101", TERN_EOVERFLOW,
         "ipn allocator identifier above 2^32-1"},
        {"820283001b000000010000000001", TERN_EOVERFLOW,
         "ipn node number above 2^32-1 in a 3-element EID"},
        {"82028300011b0000000100000000", TERN_EOVERFLOW,
         "ipn service number above 2^32-1 in a 3-element EID"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (!bad[i].why)
            continue;
        size_t n;
        uint8_t *b = unhex(bad[i].hex, &n);
        tern_cbor_dec d;
        tern_cbor_dec_init(&d, b, n);
        bp_eid e;
        bp_eid_ipn(&e, 9, 9);
        const char *why = NULL;
        int rc = bp_eid_decode(&d, &e, &why);
        CHECK_MSG(rc == bad[i].rc, "%s: rc %d (%s)", bad[i].hex, rc, why ? why : "-");
        CHECK_EQ_STR(why, bad[i].why);
        CHECK_EQ_U64(d.pos, 0);
        CHECK_EQ_U64(e.node, 9); /* untouched */
        free(b);
    }
    /* a 3-element EID cannot hold a service number above 32 bits */
    bp_eid e;
    bp_eid_ipn(&e, 1, 1ull << 32);
    e.ipn3 = true;
    tern_cbor_enc enc;
    tern_cbor_enc_init(&enc, NULL, 0);
    CHECK_RC(bp_eid_encode(&enc, &e), -EINVAL);
}

/* ---- bundles ------------------------------------------------------------ */

static void roundtrip(uint8_t crc, bool definite, bool frag)
{
    bp_bundle b, c;
    make_bundle(&b, crc, definite, frag);
    size_t n;
    uint8_t *buf = encode_exact(&b, &n);
    size_t used = 0;
    const char *why = NULL;
    CHECK_OK(bp_bundle_decode(buf, n, &c, &used, &why));
    CHECK_EQ_U64(used, n);
    check_bundle_eq(&b, &c);
    CHECK(c.blocks[4].data == buf + n - (definite ? 0 : 1) -
                                  (crc == 2 ? 5
                                   : crc    ? 3
                                            : 0) -
                                  c.blocks[4].data_len);
    /* Re-encoding gives the same bytes. */
    size_t m;
    uint8_t *again = encode_exact(&c, &m);
    CHECK_EQ_U64(m, n);
    CHECK_EQ_MEM(again, buf, n);
    /* Every prefix is truncated. */
    for (size_t i = 0; i < n; i++) {
        uint8_t *p = malloc(i ? i : 1);
        CHECK(p != NULL);
        memcpy(p, buf, i);
        why = NULL;
        CHECK_RC(bp_bundle_decode(p, i, &c, &used, &why), TERN_ETRUNCATED);
        CHECK(why != NULL);
        free(p);
    }
    /* Trailing bytes are not the bundle's: used says where it ended. */
    uint8_t *more = malloc(n + 3);
    CHECK(more != NULL);
    memcpy(more, buf, n);
    memset(more + n, 0x9f, 3);
    CHECK_OK(bp_bundle_decode(more, n + 3, &c, &used, NULL));
    CHECK_EQ_U64(used, n);
    free(more);
    free(again);
    free(buf);
}

TEST(bundle_roundtrip_crc_types)
{
    for (uint8_t crc = 0; crc <= 2; crc++) {
        roundtrip(crc, false, false);
        roundtrip(crc, true, false);
        roundtrip(crc, false, true);
        roundtrip(crc, true, true);
    }
}

/* The split encoding is the whole one with the payload's data cut out,
 * CRCs included, for every CRC type and both array forms. */
TEST(bundle_encode_split)
{
    for (uint8_t crc = BP_CRC_NONE; crc <= BP_CRC_32C; crc++)
        for (int definite = 0; definite < 2; definite++) {
            bp_bundle b;
            make_bundle(&b, crc, definite != 0, false);
            uint8_t whole[2048], split[2048];
            size_t n, head, tail;
            CHECK_OK(bp_bundle_encode(&b, whole, sizeof whole, &n, NULL));
            CHECK_OK(bp_bundle_encode_split(&b, split, sizeof split, &head, &tail, NULL));
            const bp_block *pl = &b.blocks[b.n_blocks - 1];
            CHECK_EQ_U64(head + pl->data_len + tail, n);
            CHECK_EQ_MEM(split, whole, head);
            CHECK_EQ_MEM(whole + head, pl->data, pl->data_len);
            CHECK_EQ_MEM(split + head, whole + head + pl->data_len, tail);
            CHECK_EQ_U64(tail, (crc == BP_CRC_16    ? 3
                                : crc == BP_CRC_32C ? 5
                                                    : 0) +
                                   (definite ? 0 : 1));
        }
}

TEST(bundle_crc_corruption)
{
    for (uint8_t crc = 1; crc <= 2; crc++) {
        bp_bundle b, c;
        make_bundle(&b, crc, false, false);
        size_t n;
        uint8_t *buf = encode_exact(&b, &n);
        /* Flip every bit of every byte: never a successful decode. With CRCs
         * on every block, any change inside a block is caught. */
        for (size_t i = 1; i + 1 < n; i++) {
            for (int bit = 0; bit < 8; bit++) {
                buf[i] ^= (uint8_t)(1u << bit);
                int rc = bp_bundle_decode(buf, n, &c, NULL, NULL);
                CHECK_MSG(rc < 0, "crc %d: flip byte %zu bit %d decoded", crc, i, bit);
                buf[i] ^= (uint8_t)(1u << bit);
            }
        }
        /* A payload byte: exactly a CRC mismatch. */
        const char *why = NULL;
        buf[n - 1 - (crc == 2 ? 5 : 3) - 1] ^= 0x20;
        CHECK_RC(bp_bundle_decode(buf, n, &c, NULL, &why), TERN_ECORRUPT);
        CHECK_EQ_STR(why, crc == 2 ? "CRC-32C mismatch" : "CRC-16 mismatch");
        free(buf);
    }
}

static void expect_bad(const char *hex, int rc_want, const char *why_want)
{
    size_t n;
    uint8_t *buf = unhex(hex, &n);
    bp_bundle b;
    const char *why = NULL;
    int rc = bp_bundle_decode(buf, n, &b, NULL, &why);
    CHECK_MSG(rc == rc_want, "%s: rc %d (%s) want %d", hex, rc, why ? why : "-", rc_want);
    CHECK_EQ_STR(why, why_want);
    free(buf);
}

/* Primary block without CRC: ipn:2.1 <- ipn:1.1, report to ipn:1.1. */
#define PRI "8807000082028202018202820101820282010182000000"
#define PAY "850101000041aa"
#define AGE                                                                              \
    "850702000041"                                                                       \
    "00"

/* Puts the CRC-32C of the block buf[start..end) into its last 4 bytes. */
static void fill_crc32c(uint8_t *buf, size_t start, size_t end)
{
    memset(buf + end - 4, 0, 4);
    uint32_t c = tern_crc32c(0, buf + start, end - start);
    for (int i = 0; i < 4; i++)
        buf[end - 4 + i] = (uint8_t)(c >> (24 - 8 * i));
}

/* A bundle whose EIDs use RFC 9758's 3-element form (as Hardy sends them)
 * decodes, and re-encodes to the same bytes: nothing is transcoded. */
TEST(bundle_with_three_element_eids_reencodes_identically)
{
    /* primary, CRC-32C: ipn:977000.2.1 <- ipn:0.9.1 (3-element),
     * report to ipn:9.0 (2-element); previous node ipn:0.9.0 (3-element) */
    static const char *pri = "89070002"
                             "8202831a000ee8680201"   /* [977000, 2, 1] */
                             "820283000901"           /* [0, 9, 1] */
                             "8202820900"             /* [9, 0] */
                             "821b000000c5bf72c0b000" /* [T0, 0] */
                             "1a0036ee80"             /* 1 h */
                             "4400000000";            /* CRC, filled below */
    static const char *prev = "8606020002"
                              "46820283000900" /* [0, 9, 0] */
                              "4400000000";
    char hex[512];
    snprintf(hex, sizeof hex, "9f%s%s850101000045%sff", pri, prev, "68656c6c6f");
    size_t n;
    uint8_t *buf = unhex(hex, &n);
    /* CRCs: the primary block from byte 1, the previous-node block after it */
    size_t pri_len = strlen(pri) / 2, prev_len = strlen(prev) / 2;
    fill_crc32c(buf, 1, 1 + pri_len);
    fill_crc32c(buf, 1 + pri_len, 1 + pri_len + prev_len);
    bp_bundle b;
    size_t used;
    const char *why = NULL;
    CHECK_MSG(bp_bundle_decode(buf, n, &b, &used, &why) == 0, "%s", why);
    CHECK_EQ_U64(used, n);
    CHECK(b.pri.dest.ipn3 && b.pri.src.ipn3 && !b.pri.report_to.ipn3);
    CHECK_EQ_U64(b.pri.dest.node, 977000ull << 32 | 2);
    check_eid_text(&b.pri.dest, "ipn:977000.2.1");
    check_eid_text(&b.pri.src, "ipn:9.1");
    bp_eid nine;
    bp_eid_ipn(&nine, 9, 1);
    CHECK(bp_eid_equal(&b.pri.src, &nine)); /* allocator 0: the same node 9 */
    CHECK(b.has_prev_node && b.prev_node.ipn3 && b.prev_node.node == 9);
    size_t m;
    uint8_t *again = encode_exact(&b, &m);
    CHECK_EQ_U64(m, n);
    CHECK_EQ_MEM(again, buf, n);
    free(again);
    free(buf);
}

/* ION 4.1.3 numbers every extension block of a fragment 0 (RFC 9171 keeps
 * 0 for the primary block): such blocks are taken and numbered after the
 * highest number, and the bundle re-encodes valid. */
TEST(extension_blocks_numbered_0_get_free_numbers)
{
    size_t n;
    uint8_t *buf = unhex("9f" PRI "8518c1000000410a"
                         "8518c0000000420102"
                         "850705000041"
                         "07" PAY "ff",
                         &n);
    bp_bundle b;
    CHECK_OK(bp_bundle_decode(buf, n, &b, NULL, NULL));
    CHECK_EQ_U64(b.renumbered, 2);
    CHECK_EQ_U64(b.n_blocks, 4);
    CHECK_EQ_U64(b.blocks[0].number, 6); /* after the 5 already there */
    CHECK_EQ_U64(b.blocks[1].number, 7);
    CHECK_EQ_U64(b.blocks[2].number, 5);
    CHECK_EQ_U64(b.blocks[3].number, 1);
    size_t m = 0;
    CHECK_RC(bp_bundle_encode(&b, NULL, 0, &m, NULL), TERN_ENOSPACE);
    uint8_t *enc = malloc(m);
    CHECK_OK(bp_bundle_encode(&b, enc, m, &m, NULL));
    bp_bundle c;
    CHECK_OK(bp_bundle_decode(enc, m, &c, NULL, NULL));
    CHECK_EQ_U64(c.renumbered, 0);
    CHECK_EQ_U64(c.blocks[0].number, 6);
    CHECK_EQ_U64(c.blocks[1].number, 7);
    CHECK_EQ_MEM(c.blocks[1].data, "\x01\x02", 2);
    free(enc);
    free(buf);
}

TEST(bundle_structure_errors)
{
    size_t n;
    uint8_t *buf = unhex("9f" PRI PAY "ff", &n);
    bp_bundle b;
    CHECK_OK(bp_bundle_decode(buf, n, &b, NULL, NULL));
    free(buf);
    buf = unhex("83" PRI AGE PAY, &n);
    CHECK_OK(bp_bundle_decode(buf, n, &b, NULL, NULL));
    CHECK(b.definite);
    CHECK(b.has_age);
    free(buf);

    expect_bad("9f" PRI PAY AGE "ff", TERN_EMALFORMED, "payload block not last");
    expect_bad("9f" PRI AGE "ff", TERN_EMALFORMED, "no payload block");
    expect_bad("9f" PRI "ff", TERN_EMALFORMED, "no payload block");
    expect_bad("9f" PRI AGE AGE PAY "ff", TERN_EMALFORMED, "duplicate block number");
    expect_bad("9f" PRI "850701000041"
               "00" PAY "ff",
               TERN_EMALFORMED, "block number 1 on a non-payload block");
    expect_bad("9f" PRI "850102000041aa"
               "ff",
               TERN_EMALFORMED, "payload block number not 1");
    expect_bad("9f" PRI "850002000041aa" PAY "ff", TERN_EMALFORMED,
               "canonical block of type 0 (primary)");
    expect_bad("9f" PRI "850703000041"
               "00"
               "850704000041"
               "01" PAY "ff",
               TERN_EMALFORMED, "two bundle age blocks");
    expect_bad("9f" PRI "85070200004200"
               "00" PAY "ff",
               TERN_EMALFORMED, "extension block data has trailing bytes");
    expect_bad("9f" PRI "850a020000420a01" PAY "ff", TERN_EMALFORMED,
               "hop count not an array");
    expect_bad("9f" PRI "850602000043820202" PAY "ff", TERN_EMALFORMED,
               "ipn EID SSP not an array");
    expect_bad("9f" PRI "850702000341"
               "00" PAY "ff",
               TERN_EMALFORMED, "block CRC type unknown");
    expect_bad("9f" PRI "860702000041"
               "00" PAY "ff",
               TERN_EMALFORMED, "block item count disagrees with CRC type");
    expect_bad("9f" PRI "8507020000"
               "5f4100ff" PAY "ff",
               TERN_EMALFORMED, "block data not a definite byte string");
    expect_bad("9f"
               "8806000082028202018202820101820282010182000000" PAY "ff",
               TERN_EMALFORMED, "bundle protocol version not 7");
    expect_bad("9f"
               "8807000382028202018202820101820282010182000000" PAY "ff",
               TERN_EMALFORMED, "primary CRC type unknown");
    expect_bad("9f"
               "8807010082028202018202820101820282010182000000" PAY "ff",
               TERN_EMALFORMED, "primary block item count disagrees with flags/CRC type");
    /* Fragment: offset 0, total 0 but one payload byte. */
    expect_bad("9f"
               "8a07010082028202018202820101820282010182000000"
               "0000" PAY "ff",
               TERN_EMALFORMED, "fragment extends past the total ADU length");
    expect_bad("81" PRI, TERN_EMALFORMED, "bundle array of fewer than 2 blocks");
    expect_bad("a0", TERN_EMALFORMED, "bundle not an array");
    expect_bad("", TERN_ETRUNCATED, "bundle not an array");
}

/* RFC 9171 sets no limit on the blocks of a bundle: 40, 200 and 3,000
 * extension blocks (more than a bp_bundle holds in itself) decode, keep
 * their order, numbers and data, and re-encode to the same bytes; a
 * duplicate block number among many is still found. */
TEST(bundle_with_many_blocks)
{
    static const size_t counts[] = {40, 200, 3000};
    for (size_t c = 0; c < 3; c++) {
        size_t n = counts[c];
        bp_bundle b;
        make_bundle(&b, BP_CRC_32C, false, false);
        bp_block pl = b.blocks[b.n_blocks - 1];
        b.n_blocks--;
        CHECK_OK(bp_bundle_reserve(&b, b.n_blocks + n + 1));
        CHECK(b.ext != NULL);
        bp_block *k = bp_bundle_blocks(&b);
        uint64_t base = b.n_blocks;
        for (size_t i = 0; i < n; i++)
            k[b.n_blocks++] = (bp_block){.type = 192 + i % 8,
                                         .number = 10 + i,
                                         .flags = i % 2 ? BP_BLK_REPLICATE : 0,
                                         .crc_type = i % 3,
                                         .data = opaque,
                                         .data_len = i % sizeof opaque};
        k[b.n_blocks++] = pl;
        size_t len;
        uint8_t *buf = encode_exact(&b, &len);
        bp_bundle d;
        size_t used;
        const char *why = NULL;
        CHECK_OK(bp_bundle_decode(buf, len, &d, &used, &why));
        CHECK_EQ_U64(used, len);
        CHECK_EQ_U64(d.n_blocks, base + n + 1);
        check_bundle_eq(&b, &d);
        CHECK_EQ_U64(bp_bundle_block(&d, 10 + n - 1)->type, 192 + (n - 1) % 8);
        CHECK_EQ_U64(bp_bundle_payload(&d)->data_len, sizeof payload - 1);
        size_t len2;
        uint8_t *again = encode_exact(&d, &len2);
        CHECK_EQ_U64(len2, len);
        CHECK_EQ_MEM(again, buf, len);
        free(again);
        bp_bundle_release(&d);
        CHECK(d.ext == NULL);
        /* truncated anywhere: refused as such, nothing kept */
        for (size_t cut = len - 1; cut > len - 40; cut--) {
            CHECK_RC(bp_bundle_decode(buf, cut, &d, NULL, NULL), TERN_ETRUNCATED);
            CHECK(d.ext == NULL);
        }
        free(buf);
        /* the last extension block takes the first one's number */
        k[base + n - 1].number = k[base].number;
        buf = encode_exact(&b, &len);
        CHECK_RC(bp_bundle_decode(buf, len, &d, NULL, &why), TERN_EMALFORMED);
        CHECK_EQ_STR(why, "duplicate block number");
        CHECK(d.ext == NULL);
        free(buf);
        bp_bundle_release(&b);
    }
}

TEST(bundle_encode_errors)
{
    bp_bundle b;
    make_bundle(&b, 1, false, false);
    size_t n;
    const char *why = NULL;
    b.blocks[4].type = 8; /* no payload last */
    CHECK_RC(bp_bundle_encode(&b, NULL, 0, &n, &why), -EINVAL);
    CHECK(why != NULL);
    make_bundle(&b, 1, false, false);
    b.pri.dest.scheme = 9; /* no such scheme */
    CHECK_RC(bp_bundle_encode(&b, NULL, 0, &n, &why), -EINVAL);
    make_bundle(&b, 1, false, false);
    b.blocks[1].crc_type = 3;
    CHECK_RC(bp_bundle_encode(&b, NULL, 0, &n, &why), -EINVAL);
}

TEST(unknown_block_action)
{
    bool rpt = true;
    CHECK_EQ_INT(bp_block_unknown_action(0, &rpt), BP_UNKNOWN_KEEP);
    CHECK(!rpt);
    CHECK_EQ_INT(bp_block_unknown_action(BP_BLK_REPLICATE, &rpt), BP_UNKNOWN_KEEP);
    CHECK_EQ_INT(bp_block_unknown_action(BP_BLK_DISCARD | BP_BLK_REPORT, &rpt),
                 BP_UNKNOWN_DISCARD_BLOCK);
    CHECK(rpt);
    CHECK_EQ_INT(bp_block_unknown_action(BP_BLK_DISCARD | BP_BLK_DELETE_BUNDLE, NULL),
                 BP_UNKNOWN_DELETE_BUNDLE);
    CHECK(bp_block_type_known(1) && bp_block_type_known(6) && bp_block_type_known(7) &&
          bp_block_type_known(10));
    CHECK(!bp_block_type_known(8) && !bp_block_type_known(193));
}

/* ---- administrative records -------------------------------------------- */

static void admin_roundtrip(const bp_admin_record *r)
{
    size_t n = 0;
    CHECK_RC(bp_admin_encode(r, NULL, 0, &n), TERN_ENOSPACE);
    uint8_t *buf = malloc(n);
    CHECK(buf != NULL);
    size_t m;
    CHECK_OK(bp_admin_encode(r, buf, n, &m));
    CHECK_EQ_U64(m, n);
    bp_admin_record s;
    const char *why = NULL;
    CHECK_OK(bp_admin_decode(buf, n, &s, &why));
    CHECK_EQ_U64(s.type, r->type);
    if (r->type == BP_ADMIN_STATUS_REPORT) {
        const bp_status_report *a = &r->sr, *b = &s.sr;
        const bp_status_item *ia[] = {&a->received, &a->forwarded, &a->delivered,
                                      &a->deleted};
        const bp_status_item *ib[] = {&b->received, &b->forwarded, &b->delivered,
                                      &b->deleted};
        for (int i = 0; i < 4; i++) {
            CHECK_EQ_INT(ia[i]->asserted, ib[i]->asserted);
            CHECK_EQ_INT(ia[i]->has_time, ib[i]->has_time);
            CHECK_EQ_U64(ia[i]->time_ms, ib[i]->time_ms);
        }
        CHECK_EQ_U64(a->reason, b->reason);
        CHECK(bp_eid_equal(&a->source, &b->source));
        CHECK_EQ_U64(a->ctime_ms, b->ctime_ms);
        CHECK_EQ_U64(a->seq, b->seq);
        CHECK_EQ_INT(a->is_fragment, b->is_fragment);
        CHECK_EQ_U64(a->frag_offset, b->frag_offset);
        CHECK_EQ_U64(a->frag_len, b->frag_len);
    } else {
        CHECK_EQ_U64(s.content_len, r->content_len);
        CHECK_EQ_MEM(s.content, r->content, r->content_len);
    }
    for (size_t i = 0; i < n; i++) {
        uint8_t *p = malloc(i ? i : 1);
        CHECK(p != NULL);
        memcpy(p, buf, i);
        CHECK_RC(bp_admin_decode(p, i, &s, &why), TERN_ETRUNCATED);
        free(p);
    }
    free(buf);
}

TEST(status_report_roundtrip)
{
    bp_admin_record r;
    memset(&r, 0, sizeof r);
    r.type = BP_ADMIN_STATUS_REPORT;
    r.sr.received = (bp_status_item){true, true, 849320526999ULL};
    r.sr.delivered = (bp_status_item){true, false, 0};
    r.sr.reason = BP_REASON_NONE;
    bp_eid_ipn(&r.sr.source, 1, 1);
    r.sr.ctime_ms = 849320526384ULL;
    r.sr.seq = 140003;
    admin_roundtrip(&r);

    /* Exact bytes of a simple report: [1, [[[true], [false], [false], [false]],
     * 0, [2, [1, 1]], [0, 5]]]. */
    memset(&r, 0, sizeof r);
    r.type = BP_ADMIN_STATUS_REPORT;
    r.sr.received.asserted = true;
    bp_eid_ipn(&r.sr.source, 1, 1);
    r.sr.seq = 5;
    uint8_t buf[64];
    size_t n;
    CHECK_OK(bp_admin_encode(&r, buf, sizeof buf, &n));
    size_t wn;
    uint8_t *want = unhex("820184"
                          "8481f581f481f481f4"
                          "00"
                          "8202820101"
                          "820005",
                          &wn);
    CHECK_EQ_U64(n, wn);
    CHECK_EQ_MEM(buf, want, n);
    free(want);

    /* A fragment, deleted with a reason. */
    r.sr.deleted = (bp_status_item){true, true, 42};
    r.sr.reason = BP_REASON_HOP_LIMIT;
    r.sr.is_fragment = true;
    r.sr.frag_offset = 100;
    r.sr.frag_len = 200;
    CHECK_OK(bp_eid_parse("dtn://x/y", &r.sr.source, NULL));
    admin_roundtrip(&r);

    /* Another record type is kept as one opaque item. */
    static const uint8_t content[] = {0x82, 0x01, 0x02};
    memset(&r, 0, sizeof r);
    r.type = 4;
    r.content = content;
    r.content_len = sizeof content;
    admin_roundtrip(&r);

    /* A time on an unasserted item cannot be encoded. */
    memset(&r, 0, sizeof r);
    r.type = BP_ADMIN_STATUS_REPORT;
    r.sr.forwarded.has_time = true;
    bp_eid_none(&r.sr.source);
    CHECK_RC(bp_admin_encode(&r, buf, sizeof buf, &n), -EINVAL);
}

TEST(status_report_errors)
{
    static const char *bad[] = {
        "830184",                                       /* 3 items */
        "8201838481f581f481f481f4008202820101820005",   /* 3-item report */
        "8201848381f581f481f4008202820101820005",       /* 3 status items */
        "8201848482f40181f481f481f4008202820101820005", /* time on false */
        "8201848481f581f481f481f4008202820101820005ff", /* trailing byte */
        "8201848481f581f481f481f4008203820101820005",   /* an imc source */
        "8201848481f581f481f481f400820282010183000500", /* timestamp of 3 */
        "8201848481f5810081f481f4008202820101820005",   /* 0 for a bool */
        "820185"
        "8481f581f481f481f4008202820101820005"
        "00",     /* 5 items */
        "8201",   /* truncated */
        "82045f", /* bad opaque */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t n;
        uint8_t *b = unhex(bad[i], &n);
        bp_admin_record r;
        const char *why = NULL;
        int rc = bp_admin_decode(b, n, &r, &why);
        CHECK_MSG(rc < 0, "%s decoded", bad[i]);
        CHECK(why != NULL);
        free(b);
    }
}

/* RFC 9171 6.1.1: the status information array has "at least four" items;
 * a report with later ones (here a fifth [true, 7] and a sixth [false]) is
 * taken, the extra items ignored. */
TEST(status_report_with_more_than_four_items)
{
    size_t n;
    uint8_t *b = unhex("820184"
                       "8681f581f482f51903e881f482f50781f4"
                       "00"
                       "8202820101"
                       "820005",
                       &n);
    bp_admin_record r;
    const char *why = NULL;
    CHECK_OK(bp_admin_decode(b, n, &r, &why));
    CHECK(r.sr.received.asserted && !r.sr.received.has_time);
    CHECK(!r.sr.forwarded.asserted);
    CHECK(r.sr.delivered.asserted && r.sr.delivered.has_time);
    CHECK_EQ_U64(r.sr.delivered.time_ms, 1000);
    CHECK(!r.sr.deleted.asserted);
    CHECK_EQ_U64(r.sr.reason, 0);
    CHECK_EQ_U64(r.sr.source.node, 1);
    CHECK_EQ_U64(r.sr.seq, 5);
    for (size_t i = 0; i < n; i++)
        CHECK_RC(bp_admin_decode(b, i, &r, &why), TERN_ETRUNCATED);
    free(b);

    /* An extra item that is not well-formed CBOR is still refused, and so is
     * a count of items far beyond the record. */
    static const char *bad[] = {
        "8201848581f581f481f481f45f008202820101820005",
        "8201849bffffffffffffffff81f581f481f481f4008202820101820005",
    };
    for (size_t i = 0; i < 2; i++) {
        uint8_t *p = unhex(bad[i], &n);
        CHECK_MSG(bp_admin_decode(p, n, &r, &why) < 0, "%s decoded", bad[i]);
        free(p);
    }
}

/* ---- ION vectors -------------------------------------------------------- */

/* The LTP data segment engine 1 -> engine 2 from ION 4.1.3 (first line of
 * ../shared/interop/ion/ltp-udp-exchange.hex): a 448-byte block holding three
 * BPv7 bundles back to back. */
static const char ion_seg[] =
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

TEST(ion_bundles)
{
    size_t n;
    uint8_t *seg_bytes = unhex(ion_seg, &n);
    CHECK_EQ_U64(n, 460);
    ltp_seg seg;
    memset(&seg, 0, sizeof seg);
    CHECK_OK(ltp_seg_decode(seg_bytes, n, &seg, 0));
    CHECK_EQ_INT(seg.type, LTP_RD_CP_EOB);
    CHECK_EQ_U64(seg.client, 1);
    CHECK_EQ_U64(seg.offset, 0);
    CHECK_EQ_U64(seg.length, 448);
    CHECK(seg.data == seg_bytes + 12);

    /* Hand decoding of the hex: creation times 0xc5bf72c230 and 0xc5bf72c294
     * (x2), sequence numbers 0x222e3..0x222e5, lifetime 0x493e0 (300 s), flags
     * 0x40 (status time requested), primary CRC-16 4611 / 7f2b / 32d6, bundle
     * age 0, 0, 1 ms, previous node ipn:1.0. */
    static const struct {
        uint64_t ctime, seq, age;
        size_t plen;
        uint32_t crc;
    } want[3] = {
        {849320526384ULL, 140003, 0, 3, 0x4611},
        {849320526484ULL, 140004, 0, 100, 0x7f2b},
        {849320526484ULL, 140005, 1, 100, 0x32d6},
    };
    const uint8_t *p = seg.data;
    size_t left = (size_t)seg.length;
    for (int i = 0; i < 3; i++) {
        bp_bundle b;
        size_t used = 0;
        const char *why = NULL;
        CHECK_OK(bp_bundle_decode(p, left, &b, &used, &why));
        char src[BP_EID_TEXT_MAX], dst[BP_EID_TEXT_MAX], rpt[BP_EID_TEXT_MAX];
        CHECK(bp_eid_print(&b.pri.src, src, sizeof src) > 0);
        CHECK(bp_eid_print(&b.pri.dest, dst, sizeof dst) > 0);
        CHECK(bp_eid_print(&b.pri.report_to, rpt, sizeof rpt) > 0);
        printf("# ION bundle %d: %zu bytes, %s -> %s (report to %s), flags 0x%" PRIx64
               ", created %" PRIu64 " ms seq %" PRIu64 ", lifetime %" PRIu64
               " ms, age %" PRIu64 " ms, payload %zu bytes\n",
               i + 1, used, src, dst, rpt, b.pri.flags, b.pri.ctime_ms, b.pri.seq,
               b.pri.lifetime_ms, b.age_ms, b.blocks[b.n_blocks - 1].data_len);
        CHECK_EQ_STR(src, "ipn:1.1");
        CHECK_EQ_STR(dst, "ipn:2.1");
        CHECK_EQ_STR(rpt, "ipn:1.1");
        CHECK(!b.definite);
        CHECK_EQ_U64(b.pri.version, 7);
        CHECK_EQ_U64(b.pri.flags, BP_FLAG_STATUS_TIME);
        CHECK_EQ_INT(b.pri.crc_type, BP_CRC_16);
        CHECK_EQ_U64(b.pri.crc, want[i].crc);
        CHECK_EQ_U64(b.pri.ctime_ms, want[i].ctime);
        CHECK_EQ_U64(b.pri.seq, want[i].seq);
        CHECK_EQ_U64(b.pri.lifetime_ms, 300000);
        CHECK_EQ_U64(b.n_blocks, 4);
        static const uint64_t types[] = {6, 193, 7, 1};
        static const uint64_t numbers[] = {2, 3, 4, 1};
        static const uint64_t flags[] = {0x10, 1, 1, 1};
        for (int k = 0; k < 4; k++) {
            CHECK_EQ_U64(b.blocks[k].type, types[k]);
            CHECK_EQ_U64(b.blocks[k].number, numbers[k]);
            CHECK_EQ_U64(b.blocks[k].flags, flags[k]);
            CHECK_EQ_INT(b.blocks[k].crc_type, BP_CRC_NONE);
        }
        CHECK(b.has_prev_node);
        check_eid_text(&b.prev_node, "ipn:1.0");
        CHECK(b.has_age);
        CHECK_EQ_U64(b.age_ms, want[i].age);
        CHECK(!b.has_hop_count);
        /* ION's class-of-service block is kept, and may be forwarded as is. */
        CHECK_EQ_U64(b.blocks[1].data_len, 5);
        CHECK_EQ_INT(bp_block_unknown_action(b.blocks[1].flags, NULL), BP_UNKNOWN_KEEP);
        const bp_block *pl = &b.blocks[3];
        CHECK_EQ_U64(pl->data_len, want[i].plen);
        CHECK(pl->data >= p && pl->data + pl->data_len <= p + used);
        if (i > 0)
            CHECK_EQ_MEM(pl->data, "test...", 7);
        CHECK(bp_bundle_block(&b, 1) == pl);

        /* Re-encoding reproduces ION's bytes. */
        size_t m;
        uint8_t *enc = encode_exact(&b, &m);
        CHECK_EQ_U64(m, used);
        CHECK_EQ_MEM(enc, p, used);
        free(enc);

        /* Every prefix of the bundle is truncated. */
        for (size_t k = 0; k < used; k++) {
            uint8_t *q = malloc(k ? k : 1);
            CHECK(q != NULL);
            memcpy(q, p, k);
            CHECK_RC(bp_bundle_decode(q, k, &b, NULL, &why), TERN_ETRUNCATED);
            free(q);
        }
        p += used;
        left -= used;
    }
    CHECK_EQ_U64(left, 0);
    free(seg_bytes);
}

TEST(ion_primary_crc_corrupt)
{
    size_t n;
    uint8_t *seg_bytes = unhex(ion_seg, &n);
    uint8_t *b = seg_bytes + 12;
    bp_bundle bb;
    const char *why = NULL;
    /* Flip a bit of the first bundle's creation time, whose last byte is at
     * offset 30 (9f 89 07 18 40 01, three 5-byte EIDs, 82 1b + 8 bytes). */
    CHECK_EQ_INT(b[30], 0x30);
    b[30] ^= 1;
    CHECK_RC(bp_bundle_decode(b, 448, &bb, NULL, &why), TERN_ECORRUPT);
    CHECK_EQ_STR(why, "CRC-16 mismatch");
    b[30] ^= 1;
    CHECK_OK(bp_bundle_decode(b, 448, &bb, NULL, &why));
    free(seg_bytes);
}

/* imc EIDs as ION encodes them (docs/multicast.md): [3, [group, service]];
 * a service above 2^32-1 is refused, as ION does. */
TEST(imc_eid_cbor_as_ion)
{
    bp_eid e, back;
    CHECK_OK(bp_eid_parse("imc:5.1", &e, NULL));
    uint8_t buf[32];
    tern_cbor_enc enc;
    tern_cbor_enc_init(&enc, buf, sizeof buf);
    CHECK_OK(bp_eid_encode(&enc, &e));
    static const uint8_t want[] = {0x82, 0x03, 0x82, 0x05, 0x01};
    CHECK_EQ_U64(enc.len, sizeof want);
    CHECK(memcmp(buf, want, sizeof want) == 0);
    tern_cbor_dec d;
    tern_cbor_dec_init(&d, buf, enc.len);
    CHECK_OK(bp_eid_decode(&d, &back, NULL));
    char txt[64];
    CHECK(bp_eid_print(&back, txt, sizeof txt) > 0);
    CHECK_EQ_STR(txt, "imc:5.1");
    /* a bundle to a group encodes and decodes */
    bp_bundle b;
    make_bundle(&b, 1, false, false);
    b.pri.dest = e;
    size_t n;
    const char *why = NULL;
    static uint8_t out[4096];
    CHECK_OK(bp_bundle_encode(&b, out, sizeof out, &n, &why));
    bp_bundle got;
    size_t used;
    CHECK_OK(bp_bundle_decode(out, n, &got, &used, &why));
    CHECK_EQ_U64(got.pri.dest.scheme, BP_SCHEME_IMC);
    CHECK_EQ_U64(got.pri.dest.node, 5);
    CHECK_EQ_U64(got.pri.dest.service, 1);
    /* a group is only a destination: a bundle from one is malformed */
    make_bundle(&b, 1, false, false);
    b.pri.src = e;
    CHECK_OK(bp_bundle_encode(&b, out, sizeof out, &n, &why));
    CHECK_RC(bp_bundle_decode(out, n, &got, &used, &why), TERN_EMALFORMED);
    CHECK(why && strstr(why, "group (imc)"));
    /* hostile numbers */
    static const uint8_t big[] = {0x82, 0x03, 0x82, 0x01, 0x1b, 0, 0, 0, 1, 0, 0, 0, 0};
    const char *w = NULL;
    tern_cbor_dec_init(&d, big, sizeof big);
    CHECK_RC(bp_eid_decode(&d, &back, &w), TERN_EOVERFLOW);
    CHECK(w && strstr(w, "imc service"));
    static const uint8_t three[] = {0x82, 0x03, 0x83, 0x01, 0x01, 0x01};
    tern_cbor_dec_init(&d, three, sizeof three);
    CHECK_RC(bp_eid_decode(&d, &back, &w), TERN_EMALFORMED);
    CHECK_RC(bp_eid_parse("imc:1.4294967296", &back, &w), TERN_EOVERFLOW);
}
