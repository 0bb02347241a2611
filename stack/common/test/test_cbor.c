#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "tern/cbor.h"
#include "tern_test.h"

/* ------------------------------------------------------------- helpers */

/* Parses hex (spaces allowed) into out; returns the byte count. */
static size_t unhex(const char *hex, uint8_t *out, size_t cap)
{
    size_t n = 0;
    int hi = -1;
    for (const char *s = hex; *s; s++) {
        int v;
        if (*s >= '0' && *s <= '9')
            v = *s - '0';
        else if (*s >= 'a' && *s <= 'f')
            v = *s - 'a' + 10;
        else if (*s >= 'A' && *s <= 'F')
            v = *s - 'A' + 10;
        else
            continue;
        if (hi < 0) {
            hi = v;
        } else {
            if (n >= cap)
                tt_fail(__FILE__, __LINE__, "hex too long: %s", hex);
            out[n++] = (uint8_t)(hi << 4 | v);
            hi = -1;
        }
    }
    return n;
}

/* 2^k for a normal-range k, without libm. */
static double pow2(int k)
{
    uint64_t b = (uint64_t)(k + 1023) << 52;
    double v;
    memcpy(&v, &b, sizeof v);
    return v;
}

/* Walks one item with the typed getters and re-encodes it. */
static int reencode(tern_cbor_dec *d, tern_cbor_enc *e, int depth)
{
    tern_cbor_kind k;
    bool indef;
    int rc = tern_cbor_peek(d, &k, &indef);
    if (rc == TERN_EEND)
        return TERN_ETRUNCATED;
    if (rc)
        return rc;
    if (depth > TERN_CBOR_MAX_DEPTH)
        return TERN_EDEPTH;
    switch (k) {
    case TERN_CBOR_UINT: {
        uint64_t v;
        if ((rc = tern_cbor_dec_uint(d, &v)))
            return rc;
        tern_cbor_enc_uint(e, v);
        return 0;
    }
    case TERN_CBOR_NEGINT: {
        uint64_t v;
        if ((rc = tern_cbor_dec_negint(d, &v)))
            return rc;
        tern_cbor_enc_negint(e, v);
        return 0;
    }
    case TERN_CBOR_BYTES:
    case TERN_CBOR_TEXT: {
        const uint8_t *p;
        size_t n;
        if (!indef) {
            if (k == TERN_CBOR_BYTES) {
                if ((rc = tern_cbor_dec_bytes(d, &p, &n)))
                    return rc;
                tern_cbor_enc_bytes(e, p, n);
            } else {
                const char *s;
                if ((rc = tern_cbor_dec_text(d, &s, &n)))
                    return rc;
                tern_cbor_enc_text(e, s, n);
            }
            return 0;
        }
        tern_cbor_chunks it;
        if ((rc = tern_cbor_chunks_begin(d, &it, k)))
            return rc;
        if (k == TERN_CBOR_BYTES)
            tern_cbor_enc_bytes_indef(e);
        else
            tern_cbor_enc_text_indef(e);
        while ((rc = tern_cbor_chunks_next(&it, &p, &n)) == 0) {
            if (k == TERN_CBOR_BYTES)
                tern_cbor_enc_bytes(e, p, n);
            else
                tern_cbor_enc_text(e, (const char *)p, n);
        }
        if (rc != TERN_EEND)
            return rc;
        tern_cbor_enc_break(e);
        return 0;
    }
    case TERN_CBOR_ARRAY:
    case TERN_CBOR_MAP: {
        bool map = k == TERN_CBOR_MAP;
        uint64_t n;
        rc = map ? tern_cbor_dec_map(d, &n) : tern_cbor_dec_array(d, &n);
        if (rc)
            return rc;
        if (n == TERN_CBOR_INDEF) {
            if (map)
                tern_cbor_enc_map_indef(e);
            else
                tern_cbor_enc_array_indef(e);
            while (!tern_cbor_at_break(d)) {
                for (int j = 0; j < (map ? 2 : 1); j++)
                    if ((rc = reencode(d, e, depth + 1)))
                        return rc;
            }
            if ((rc = tern_cbor_dec_break(d)))
                return rc;
            tern_cbor_enc_break(e);
            return 0;
        }
        if (map)
            tern_cbor_enc_map(e, n);
        else
            tern_cbor_enc_array(e, n);
        for (uint64_t i = 0; i < (map ? 2 * n : n); i++)
            if ((rc = reencode(d, e, depth + 1)))
                return rc;
        return 0;
    }
    case TERN_CBOR_TAG: {
        uint64_t t;
        if ((rc = tern_cbor_dec_tag(d, &t)))
            return rc;
        tern_cbor_enc_tag(e, t);
        return reencode(d, e, depth + 1);
    }
    case TERN_CBOR_SIMPLE: {
        uint8_t v;
        if ((rc = tern_cbor_dec_simple(d, &v)))
            return rc;
        tern_cbor_enc_simple(e, v);
        return 0;
    }
    case TERN_CBOR_FLOAT: {
        double v;
        if ((rc = tern_cbor_dec_double(d, &v)))
            return rc;
        tern_cbor_enc_double(e, v);
        return 0;
    }
    case TERN_CBOR_BREAK:
    default:
        return TERN_EMALFORMED;
    }
}

static const char *diag_hex(const char *hex, int *rcp)
{
    static char out[1024];
    uint8_t b[256];
    size_t n = unhex(hex, b, sizeof b);
    *rcp = tern_cbor_diag(b, n, out, sizeof out);
    return out;
}

#define CHECK_DIAG(hex, want)                                                            \
    do {                                                                                 \
        int rc_;                                                                         \
        const char *got_ = diag_hex(hex, &rc_);                                          \
        CHECK_MSG(rc_ == 0, "diag(%s) rc %d (%s)", hex, rc_, tern_strerror(rc_));        \
        CHECK_MSG(strcmp(got_, want) == 0, "diag(%s) = %s, want %s", hex, got_, want);   \
    } while (0)

/* Encodes with `body` using enc `e` and compares to hex. */
#define CHECK_ENC(hex, body)                                                             \
    do {                                                                                 \
        uint8_t buf_[256], want_[256];                                                   \
        size_t wn_ = unhex(hex, want_, sizeof want_), n_;                                \
        tern_cbor_enc enc_, *e = &enc_;                                                  \
        tern_cbor_enc_init(e, buf_, sizeof buf_);                                        \
        body;                                                                            \
        CHECK_OK(tern_cbor_enc_finish(e, &n_));                                          \
        CHECK_MSG(n_ == wn_ && memcmp(buf_, want_, n_) == 0, "encoding != %s", hex);     \
    } while (0)

/* ------------------------------------------ RFC 8949 Appendix A vectors */

struct vec {
    const char *hex;
    const char *diag;
    bool preferred; /* re-encoding with preferred serialization gives hex */
};

static const struct vec vecs[] = {
    {"00", "0", 1},
    {"01", "1", 1},
    {"0a", "10", 1},
    {"17", "23", 1},
    {"1818", "24", 1},
    {"1819", "25", 1},
    {"1864", "100", 1},
    {"1903e8", "1000", 1},
    {"1a000f4240", "1000000", 1},
    {"1b000000e8d4a51000", "1000000000000", 1},
    {"1bffffffffffffffff", "18446744073709551615", 1},
    /* 18446744073709551616 */
    {"c249010000000000000000", "2(h'010000000000000000')", 1},
    {"3bffffffffffffffff", "-18446744073709551616", 1},
    /* -18446744073709551617 */
    {"c349010000000000000000", "3(h'010000000000000000')", 1},
    {"20", "-1", 1},
    {"29", "-10", 1},
    {"3863", "-100", 1},
    {"3903e7", "-1000", 1},
    {"f90000", "0.0", 1},
    {"f98000", "-0.0", 1},
    {"f93c00", "1.0", 1},
    {"fb3ff199999999999a", "1.1", 1},
    {"f93e00", "1.5", 1},
    {"f97bff", "65504.0", 1},
    {"fa47c35000", "100000.0", 1},
    {"fa7f7fffff", "3.4028234663852886e+38", 1},
    {"fb7e37e43c8800759c", "1.0e+300", 1},
    {"f90001", "5.960464477539063e-8", 1},
    {"f90400", "0.00006103515625", 1},
    {"f9c400", "-4.0", 1},
    {"fbc010666666666666", "-4.1", 1},
    {"f97c00", "Infinity", 1},
    {"f97e00", "NaN", 1},
    {"f9fc00", "-Infinity", 1},
    {"fa7f800000", "Infinity", 0},
    {"fa7fc00000", "NaN", 0},
    {"faff800000", "-Infinity", 0},
    {"fb7ff0000000000000", "Infinity", 0},
    {"fb7ff8000000000000", "NaN", 0},
    {"fbfff0000000000000", "-Infinity", 0},
    {"f4", "false", 1},
    {"f5", "true", 1},
    {"f6", "null", 1},
    {"f7", "undefined", 1},
    {"f0", "simple(16)", 1},
    {"f8ff", "simple(255)", 1},
    {"c074323031332d30332d32315432303a30343a30305a", "0(\"2013-03-21T20:04:00Z\")", 1},
    {"c11a514b67b0", "1(1363896240)", 1},
    {"c1fb41d452d9ec200000", "1(1363896240.5)", 1},
    {"d74401020304", "23(h'01020304')", 1},
    {"d818456449455446", "24(h'6449455446')", 1},
    {"d82076687474703a2f2f7777772e6578616d706c652e636f6d",
     "32(\"http://www.example.com\")", 1},
    {"40", "h''", 1},
    {"4401020304", "h'01020304'", 1},
    {"60", "\"\"", 1},
    {"6161", "\"a\"", 1},
    {"6449455446", "\"IETF\"", 1},
    {"62225c", "\"\\\"\\\\\"", 1},
    {"62c3bc", "\"\\u00fc\"", 1},
    {"63e6b0b4", "\"\\u6c34\"", 1},
    {"64f0908591", "\"\\ud800\\udd51\"", 1},
    {"80", "[]", 1},
    {"83010203", "[1, 2, 3]", 1},
    {"8301820203820405", "[1, [2, 3], [4, 5]]", 1},
    {"98190102030405060708090a0b0c0d0e0f101112131415161718181819",
     "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, "
     "23, 24, 25]",
     1},
    {"a0", "{}", 1},
    {"a201020304", "{1: 2, 3: 4}", 1},
    {"a26161016162820203", "{\"a\": 1, \"b\": [2, 3]}", 1},
    {"826161a161626163", "[\"a\", {\"b\": \"c\"}]", 1},
    {"a56161614161626142616361436164614461656145",
     "{\"a\": \"A\", \"b\": \"B\", \"c\": \"C\", \"d\": \"D\", \"e\": \"E\"}", 1},
    {"5f42010243030405ff", "(_ h'0102', h'030405')", 1},
    {"7f657374726561646d696e67ff", "(_ \"strea\", \"ming\")", 1},
    {"9fff", "[_ ]", 1},
    {"9f018202039f0405ffff", "[_ 1, [2, 3], [_ 4, 5]]", 1},
    {"9f01820203820405ff", "[_ 1, [2, 3], [4, 5]]", 1},
    {"83018202039f0405ff", "[1, [2, 3], [_ 4, 5]]", 1},
    {"83019f0203ff820405", "[1, [_ 2, 3], [4, 5]]", 1},
    {"9f0102030405060708090a0b0c0d0e0f101112131415161718181819ff",
     "[_ 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, "
     "22, 23, 24, 25]",
     1},
    {"bf61610161629f0203ffff", "{_ \"a\": 1, \"b\": [_ 2, 3]}", 1},
    {"826161bf61626163ff", "[\"a\", {_ \"b\": \"c\"}]", 1},
    {"bf6346756ef563416d7421ff", "{_ \"Fun\": true, \"Amt\": -2}", 1},
};
#define NVECS (sizeof vecs / sizeof vecs[0])

TEST(appendix_a_diag)
{
    CHECK_EQ_INT(NVECS, 81);
    for (size_t i = 0; i < NVECS; i++)
        CHECK_DIAG(vecs[i].hex, vecs[i].diag);
}

TEST(appendix_a_wellformed_and_skip)
{
    for (size_t i = 0; i < NVECS; i++) {
        uint8_t b[128];
        size_t n = unhex(vecs[i].hex, b, sizeof b);
        CHECK_OK(tern_cbor_wellformed(b, n));
        CHECK_OK(tern_cbor_wellformed_seq(b, n));
        tern_cbor_dec d;
        tern_cbor_dec_init(&d, b, n);
        CHECK_OK(tern_cbor_skip(&d));
        CHECK_MSG(d.pos == n && tern_cbor_dec_done(&d), "skip(%s)", vecs[i].hex);
        /* a trailing byte makes it a sequence of two, not one item */
        b[n] = 0x00;
        CHECK_RC(tern_cbor_wellformed(b, n + 1), TERN_EMALFORMED);
        CHECK_OK(tern_cbor_wellformed_seq(b, n + 1));
        char out[256];
        CHECK_RC(tern_cbor_diag(b, n + 1, out, sizeof out), TERN_EMALFORMED);
    }
}

TEST(appendix_a_reencode_with_getters)
{
    for (size_t i = 0; i < NVECS; i++) {
        uint8_t b[128], o[128];
        size_t n = unhex(vecs[i].hex, b, sizeof b), on;
        tern_cbor_dec d;
        tern_cbor_enc e;
        tern_cbor_dec_init(&d, b, n);
        tern_cbor_enc_init(&e, o, sizeof o);
        CHECK_MSG(reencode(&d, &e, 0) == 0, "walk %s", vecs[i].hex);
        CHECK(tern_cbor_dec_done(&d));
        CHECK_OK(tern_cbor_enc_finish(&e, &on));
        if (vecs[i].preferred)
            CHECK_MSG(on == n && memcmp(o, b, n) == 0, "re-encoding of %s differs",
                      vecs[i].hex);
        /* same diagnostic either way */
        char d1[512], d2[512];
        CHECK_OK(tern_cbor_diag(b, n, d1, sizeof d1));
        CHECK_OK(tern_cbor_diag(o, on, d2, sizeof d2));
        CHECK_EQ_STR(d1, d2);
    }
}

TEST(appendix_a_prefixes_truncated)
{
    for (size_t i = 0; i < NVECS; i++) {
        uint8_t full[128];
        size_t n = unhex(vecs[i].hex, full, sizeof full);
        for (size_t k = 0; k < n; k++) {
            /* copy to an exact-size heap block so ASan catches any overread */
            uint8_t *b = malloc(k ? k : 1);
            memcpy(b, full, k);
            CHECK_MSG(tern_cbor_wellformed(b, k) == TERN_ETRUNCATED, "%s[:%zu]",
                      vecs[i].hex, k);
            tern_cbor_dec d;
            tern_cbor_dec_init(&d, b, k);
            CHECK_RC(tern_cbor_skip(&d), TERN_ETRUNCATED);
            CHECK_EQ_U64(d.pos, 0);
            char out[256];
            CHECK_RC(tern_cbor_diag(b, k, out, sizeof out), TERN_ETRUNCATED);
            uint8_t o[128];
            tern_cbor_enc e;
            tern_cbor_enc_init(&e, o, sizeof o);
            tern_cbor_dec_init(&d, b, k);
            CHECK_MSG(reencode(&d, &e, 0) == TERN_ETRUNCATED, "walk %s[:%zu]",
                      vecs[i].hex, k);
            free(b);
        }
    }
}

TEST(appendix_a_encode_explicit)
{
    CHECK_ENC("00", tern_cbor_enc_uint(e, 0));
    CHECK_ENC("17", tern_cbor_enc_uint(e, 23));
    CHECK_ENC("1818", tern_cbor_enc_uint(e, 24));
    CHECK_ENC("1903e8", tern_cbor_enc_uint(e, 1000));
    CHECK_ENC("1a000f4240", tern_cbor_enc_uint(e, 1000000));
    CHECK_ENC("1b000000e8d4a51000", tern_cbor_enc_uint(e, 1000000000000));
    CHECK_ENC("1bffffffffffffffff", tern_cbor_enc_uint(e, UINT64_MAX));
    CHECK_ENC("c249010000000000000000", {
        tern_cbor_enc_tag(e, 2);
        tern_cbor_enc_bytes(e, "\x01\0\0\0\0\0\0\0\0", 9);
    });
    CHECK_ENC("3bffffffffffffffff", tern_cbor_enc_negint(e, UINT64_MAX));
    CHECK_ENC("c349010000000000000000", {
        tern_cbor_enc_tag(e, 3);
        tern_cbor_enc_bytes_head(e, 9);
        tern_cbor_enc_raw(e, "\x01\0\0\0\0\0\0\0\0", 9);
    });
    CHECK_ENC("20", tern_cbor_enc_int(e, -1));
    CHECK_ENC("29", tern_cbor_enc_int(e, -10));
    CHECK_ENC("3863", tern_cbor_enc_int(e, -100));
    CHECK_ENC("3903e7", tern_cbor_enc_int(e, -1000));
    CHECK_ENC("1864", tern_cbor_enc_int(e, 100));
    CHECK_ENC("f90000", tern_cbor_enc_double(e, 0.0));
    CHECK_ENC("f98000", tern_cbor_enc_double(e, -0.0));
    CHECK_ENC("f93c00", tern_cbor_enc_double(e, 1.0));
    CHECK_ENC("fb3ff199999999999a", tern_cbor_enc_double(e, 1.1));
    CHECK_ENC("f93e00", tern_cbor_enc_double(e, 1.5));
    CHECK_ENC("f97bff", tern_cbor_enc_double(e, 65504.0));
    CHECK_ENC("fa47c35000", tern_cbor_enc_double(e, 100000.0));
    CHECK_ENC("fa7f7fffff", tern_cbor_enc_double(e, 3.4028234663852886e+38));
    CHECK_ENC("fb7e37e43c8800759c", tern_cbor_enc_double(e, 1.0e+300));
    CHECK_ENC("f90001", tern_cbor_enc_double(e, 5.960464477539063e-8));
    CHECK_ENC("f90400", tern_cbor_enc_double(e, 0.00006103515625));
    CHECK_ENC("f9c400", tern_cbor_enc_double(e, -4.0));
    CHECK_ENC("fbc010666666666666", tern_cbor_enc_double(e, -4.1));
    CHECK_ENC("f97c00", tern_cbor_enc_double(e, INFINITY));
    CHECK_ENC("f97e00", tern_cbor_enc_double(e, NAN));
    CHECK_ENC("f9fc00", tern_cbor_enc_double(e, -INFINITY));
    CHECK_ENC("fa7f800000", tern_cbor_enc_float32(e, INFINITY));
    CHECK_ENC("fa7fc00000", tern_cbor_enc_float32(e, NAN));
    CHECK_ENC("faff800000", tern_cbor_enc_float32(e, -INFINITY));
    CHECK_ENC("fb7ff0000000000000", tern_cbor_enc_float64(e, INFINITY));
    CHECK_ENC("fb7ff8000000000000", tern_cbor_enc_float64(e, NAN));
    CHECK_ENC("fbfff0000000000000", tern_cbor_enc_float64(e, -INFINITY));
    CHECK_ENC("f97bff", tern_cbor_enc_float16_bits(e, 0x7bff));
    CHECK_ENC("f4", tern_cbor_enc_bool(e, false));
    CHECK_ENC("f5", tern_cbor_enc_bool(e, true));
    CHECK_ENC("f6", tern_cbor_enc_null(e));
    CHECK_ENC("f7", tern_cbor_enc_undefined(e));
    CHECK_ENC("f0", tern_cbor_enc_simple(e, 16));
    CHECK_ENC("f8ff", tern_cbor_enc_simple(e, 255));
    CHECK_ENC("f820", tern_cbor_enc_simple(e, 32));
    CHECK_ENC("c074323031332d30332d32315432303a30343a30305a", {
        tern_cbor_enc_tag(e, 0);
        tern_cbor_enc_cstr(e, "2013-03-21T20:04:00Z");
    });
    CHECK_ENC("c11a514b67b0", {
        tern_cbor_enc_tag(e, 1);
        tern_cbor_enc_uint(e, 1363896240);
    });
    CHECK_ENC("c1fb41d452d9ec200000", {
        tern_cbor_enc_tag(e, 1);
        tern_cbor_enc_double(e, 1363896240.5);
    });
    CHECK_ENC("d74401020304", {
        tern_cbor_enc_tag(e, 23);
        tern_cbor_enc_bytes(e, "\1\2\3\4", 4);
    });
    CHECK_ENC("d818456449455446", {
        tern_cbor_enc_tag(e, 24);
        tern_cbor_enc_bytes(e, "\x64IETF", 5);
    });
    CHECK_ENC("d82076687474703a2f2f7777772e6578616d706c652e636f6d", {
        tern_cbor_enc_tag(e, 32);
        tern_cbor_enc_cstr(e, "http://www.example.com");
    });
    CHECK_ENC("40", tern_cbor_enc_bytes(e, NULL, 0));
    CHECK_ENC("60", tern_cbor_enc_text(e, NULL, 0));
    CHECK_ENC("6161", tern_cbor_enc_cstr(e, "a"));
    CHECK_ENC("62225c", tern_cbor_enc_cstr(e, "\"\\"));
    CHECK_ENC("62c3bc", tern_cbor_enc_cstr(e, "\xc3\xbc"));
    CHECK_ENC("63e6b0b4", tern_cbor_enc_cstr(e, "\xe6\xb0\xb4"));
    CHECK_ENC("64f0908591", tern_cbor_enc_cstr(e, "\xf0\x90\x85\x91"));
    CHECK_ENC("80", tern_cbor_enc_array(e, 0));
    CHECK_ENC("8301820203820405", {
        tern_cbor_enc_array(e, 3);
        tern_cbor_enc_uint(e, 1);
        tern_cbor_enc_array(e, 2);
        tern_cbor_enc_uint(e, 2);
        tern_cbor_enc_uint(e, 3);
        tern_cbor_enc_array(e, 2);
        tern_cbor_enc_uint(e, 4);
        tern_cbor_enc_uint(e, 5);
    });
    CHECK_ENC("98190102030405060708090a0b0c0d0e0f101112131415161718181819", {
        tern_cbor_enc_array(e, 25);
        for (int i = 1; i <= 25; i++)
            tern_cbor_enc_uint(e, (uint64_t)i);
    });
    CHECK_ENC("a0", tern_cbor_enc_map(e, 0));
    CHECK_ENC("a26161016162820203", {
        tern_cbor_enc_map(e, 2);
        tern_cbor_enc_cstr(e, "a");
        tern_cbor_enc_uint(e, 1);
        tern_cbor_enc_cstr(e, "b");
        tern_cbor_enc_array(e, 2);
        tern_cbor_enc_uint(e, 2);
        tern_cbor_enc_uint(e, 3);
    });
    CHECK_ENC("5f42010243030405ff", {
        tern_cbor_enc_bytes_indef(e);
        tern_cbor_enc_bytes(e, "\1\2", 2);
        tern_cbor_enc_bytes(e, "\3\4\5", 3);
        tern_cbor_enc_break(e);
    });
    CHECK_ENC("7f657374726561646d696e67ff", {
        tern_cbor_enc_text_indef(e);
        tern_cbor_enc_cstr(e, "strea");
        tern_cbor_enc_text_head(e, 4);
        tern_cbor_enc_raw(e, "ming", 4);
        tern_cbor_enc_break(e);
    });
    CHECK_ENC("9fff", {
        tern_cbor_enc_array_indef(e);
        tern_cbor_enc_break(e);
    });
    CHECK_ENC("83019f0203ff820405", {
        tern_cbor_enc_array(e, 3);
        tern_cbor_enc_uint(e, 1);
        tern_cbor_enc_array_indef(e);
        tern_cbor_enc_uint(e, 2);
        tern_cbor_enc_uint(e, 3);
        tern_cbor_enc_break(e);
        tern_cbor_enc_array(e, 2);
        tern_cbor_enc_uint(e, 4);
        tern_cbor_enc_uint(e, 5);
    });
    CHECK_ENC("bf6346756ef563416d7421ff", {
        tern_cbor_enc_map_indef(e);
        tern_cbor_enc_cstr(e, "Fun");
        tern_cbor_enc_bool(e, true);
        tern_cbor_enc_cstr(e, "Amt");
        tern_cbor_enc_int(e, -2);
        tern_cbor_enc_break(e);
    });
}

/* --------------------------------------------------------- well-formedness */

static int wf_hex(const char *hex)
{
    uint8_t b[64];
    size_t n = unhex(hex, b, sizeof b);
    uint8_t *h = malloc(n ? n : 1); /* exact size: ASan sees any overread */
    memcpy(h, b, n);
    int rc = tern_cbor_wellformed(h, n);
    /* the printer and skip must agree with the checker */
    char out[512];
    int rc2 = tern_cbor_diag(h, n, out, sizeof out);
    tern_cbor_dec d;
    tern_cbor_dec_init(&d, h, n);
    int rc3 = tern_cbor_skip(&d);
    free(h);
    if (rc2 != rc)
        tt_fail(__FILE__, __LINE__, "%s: diag %d, wellformed %d", hex, rc2, rc);
    if (rc3 != rc && !(rc == TERN_EMALFORMED && rc3 == 0))
        tt_fail(__FILE__, __LINE__, "%s: skip %d, wellformed %d", hex, rc3, rc);
    return rc;
}

/* RFC 8949 Appendix F.1: well-formedness errors. */
TEST(appendix_f_truncated)
{
    static const char *const t[] = {
        /* end of input in a head */
        "18", "19", "1a", "1b", "19 01", "1a 01 02", "1b 01 02 03 04 05 06 07", "38",
        "58", "78", "98", "9a 01 ff 00", "b8", "d8", "f8", "f9 00", "fa 00 00",
        "fb 00 00 00",
        /* definite-length strings with short data */
        "41", "61", "5a ff ff ff ff 00", "5b ff ff ff ff ff ff ff ff 01 02 03",
        "7a ff ff ff ff 00", "7b 7f ff ff ff ff ff ff ff 01 02 03",
        /* definite-length maps and arrays not closed with enough items */
        "81", "81 81 81 81 81 81 81 81 81", "82 00", "a1", "a2 01 02", "a1 00",
        "a2 00 00 00",
        /* tag number not followed by tag content */
        "c0",
        /* indefinite-length strings not closed by a break */
        "5f 41 00", "7f 61 00",
        /* indefinite-length maps and arrays not closed by a break */
        "9f", "9f 01 02", "bf", "bf 01 02 01 02", "81 9f", "9f 80 00",
        "9f 9f 9f 9f 9f ff ff ff ff", "9f 81 9f 81 9f 9f ff ff ff",
        /* empty input */
        ""};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        CHECK_MSG(wf_hex(t[i]) == TERN_ETRUNCATED, "%s: %d", t[i], wf_hex(t[i]));
}

TEST(appendix_f_malformed)
{
    static const char *const t[] = {
        /* reserved additional information values */
        "1c", "1d", "1e", "3c", "3d", "3e", "5c", "5d", "5e", "7c", "7d", "7e", "9c",
        "9d", "9e", "bc", "bd", "be", "dc", "dd", "de", "fc", "fd", "fe",
        /* reserved two-byte encodings of simple values */
        "f8 00", "f8 01", "f8 18", "f8 1f",
        /* indefinite-length string chunks not of the correct type */
        "5f 00 ff", "5f 21 ff", "5f 61 00 ff", "5f 80 ff", "5f a0 ff", "5f c0 00 ff",
        "5f e0 ff", "7f 41 00 ff",
        /* indefinite-length string chunks not definite length */
        "5f 5f 41 00 ff ff", "7f 7f 61 00 ff ff",
        /* break on its own outside of an indefinite-length item */
        "ff",
        /* break in a definite-length array or map or a tag */
        "81 ff", "82 00 ff", "a1 ff", "a1 ff 00", "a1 00 ff", "a2 00 00 ff", "9f 81 ff",
        "9f 82 9f 81 9f 9f ff ff ff ff", "c0 ff",
        /* break in a value position of an indefinite-length map */
        "bf 00 ff", "bf 00 00 00 ff",
        /* major types 0, 1, 6 with additional information 31 */
        "1f", "3f", "df",
        /* a reserved value nested deep inside */
        "9f 81 a1 01 1c ff", "5f 41 00 5c ff"};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        CHECK_MSG(wf_hex(t[i]) == TERN_EMALFORMED, "%s: %d", t[i], wf_hex(t[i]));
}

TEST(getters_reject_malformed_heads)
{
    static const uint8_t bad[] = {0x1c, 0x3d, 0x5e, 0x7c, 0x9d, 0xbe,
                                  0xdc, 0xfd, 0x1f, 0x3f, 0xdf};
    for (size_t i = 0; i < sizeof bad; i++) {
        tern_cbor_dec d;
        tern_cbor_kind k;
        uint64_t u;
        int64_t s;
        const uint8_t *p;
        size_t n;
        tern_cbor_dec_init(&d, &bad[i], 1);
        CHECK_RC(tern_cbor_peek(&d, &k, NULL), TERN_EMALFORMED);
        CHECK_RC(tern_cbor_dec_uint(&d, &u), TERN_EMALFORMED);
        CHECK_RC(tern_cbor_dec_int(&d, &s), TERN_EMALFORMED);
        CHECK_RC(tern_cbor_dec_bytes(&d, &p, &n), TERN_EMALFORMED);
        CHECK_RC(tern_cbor_dec_array(&d, &u), TERN_EMALFORMED);
        CHECK_RC(tern_cbor_dec_tag(&d, &u), TERN_EMALFORMED);
        CHECK_EQ_U64(d.pos, 0);
    }
    uint8_t f818[] = {0xf8, 0x18};
    tern_cbor_dec d;
    uint8_t v;
    tern_cbor_dec_init(&d, f818, 2);
    CHECK_RC(tern_cbor_dec_simple(&d, &v), TERN_EMALFORMED);
}

/* ------------------------------------------------------------ limits */

static size_t nest(uint8_t *b, unsigned levels, uint8_t open, const char *close)
{
    size_t n = 0;
    for (unsigned i = 0; i < levels; i++)
        b[n++] = open;
    b[n++] = 0x00;
    if (close)
        for (unsigned i = 0; i < levels; i++)
            b[n++] = (uint8_t)close[0];
    return n;
}

TEST(depth_limit)
{
    static uint8_t b[1024];
    char out[2048];
    const struct {
        uint8_t open;
        const char *close;
    } forms[] = {{0x81, NULL}, {0x9f, "\xff"}, {0xc6, NULL}, {0xa1, NULL}};
    for (size_t f = 0; f < 4; f++) {
        size_t n;
        if (forms[f].open == 0xa1) { /* {0: {0: ... 0}} */
            n = 0;
            for (int i = 0; i < TERN_CBOR_MAX_DEPTH; i++) {
                b[n++] = 0xa1;
                b[n++] = 0x00;
            }
            b[n++] = 0x00;
        } else {
            n = nest(b, TERN_CBOR_MAX_DEPTH, forms[f].open, forms[f].close);
        }
        CHECK_OK(tern_cbor_wellformed(b, n));
        CHECK_OK(tern_cbor_diag(b, n, out, sizeof out));
        if (forms[f].open == 0xa1) {
            n = 0;
            for (int i = 0; i < TERN_CBOR_MAX_DEPTH + 1; i++) {
                b[n++] = 0xa1;
                b[n++] = 0x00;
            }
            b[n++] = 0x00;
        } else {
            n = nest(b, TERN_CBOR_MAX_DEPTH + 1, forms[f].open, forms[f].close);
        }
        CHECK_RC(tern_cbor_wellformed(b, n), TERN_EDEPTH);
        CHECK_RC(tern_cbor_diag(b, n, out, sizeof out), TERN_EDEPTH);
        tern_cbor_dec d;
        tern_cbor_dec_init(&d, b, n);
        CHECK_RC(tern_cbor_skip(&d), TERN_EDEPTH);
        CHECK_EQ_U64(d.pos, 0);
    }
    /* depth is nesting, not item count: long flat arrays are fine */
    size_t n = 0;
    b[n++] = 0x99;
    b[n++] = 0x03;
    b[n++] = 0x00;
    for (int i = 0; i < 768; i++)
        b[n++] = 0x80;
    CHECK_OK(tern_cbor_wellformed(b, n));
    /* 10000 levels: checked in constant stack */
    static uint8_t deep[20001];
    n = nest(deep, 10000, 0x9f, "\xff");
    CHECK_RC(tern_cbor_wellformed(deep, n), TERN_EDEPTH);
    CHECK_RC(tern_cbor_diag(deep, n, out, sizeof out), TERN_EDEPTH);
}

TEST(huge_declared_lengths)
{
    static const char *const t[] = {
        "5b 80 00 00 00 00 00 00 00 01 02",
        "5b ff ff ff ff ff ff ff ff 00",
        "7b ff ff ff ff ff ff ff f0 00",
        "5f 5b ff ff ff ff ff ff ff ff 00 ff",
        "9b ff ff ff ff ff ff ff ff 00",
        "9b 80 00 00 00 00 00 00 00 00",
        "bb 80 00 00 00 00 00 00 00 00 00",
        "bb ff ff ff ff ff ff ff ff 00 00",
        "bb 7f ff ff ff ff ff ff ff 00 00 00 00 00",
        "82 5a ff ff ff f0 00 00",
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        CHECK_MSG(wf_hex(t[i]) == TERN_ETRUNCATED, "%s", t[i]);
        uint8_t b[32];
        size_t n = unhex(t[i], b, sizeof b);
        tern_cbor_dec d;
        tern_cbor_dec_init(&d, b, n);
        const uint8_t *p;
        size_t len;
        uint64_t c;
        if (b[0] == 0x5b || b[0] == 0x7b) {
            int rc = b[0] == 0x5b ? tern_cbor_dec_bytes(&d, &p, &len)
                                  : tern_cbor_dec_text(&d, (const char **)&p, &len);
            CHECK_RC(rc, TERN_ETRUNCATED);
        } else if (b[0] == 0x9b) {
            CHECK_RC(tern_cbor_dec_array(&d, &c), TERN_ETRUNCATED);
        } else if (b[0] == 0xbb) {
            CHECK_RC(tern_cbor_dec_map(&d, &c), TERN_ETRUNCATED);
        } else if (b[0] == 0x5f) {
            tern_cbor_chunks it;
            CHECK_OK(tern_cbor_chunks_begin(&d, &it, TERN_CBOR_BYTES));
            CHECK_RC(tern_cbor_chunks_next(&it, &p, &len), TERN_ETRUNCATED);
        }
    }
    /* counts up to the bytes left are accepted by the head getters */
    uint8_t arr[] = {0x83, 1, 2, 3}, map[] = {0xa2, 1, 2, 3, 4}, map2[] = {0xa2, 1, 2, 3};
    tern_cbor_dec d;
    uint64_t c;
    tern_cbor_dec_init(&d, arr, sizeof arr);
    CHECK_OK(tern_cbor_dec_array(&d, &c));
    CHECK_EQ_U64(c, 3);
    tern_cbor_dec_init(&d, map, sizeof map);
    CHECK_OK(tern_cbor_dec_map(&d, &c));
    CHECK_EQ_U64(c, 2);
    tern_cbor_dec_init(&d, map2, sizeof map2);
    CHECK_RC(tern_cbor_dec_map(&d, &c), TERN_ETRUNCATED);
}

/* ---------------------------------------------------------------- encoder */

TEST(encoder_sizing_pass_and_nospace)
{
    uint8_t payload[300];
    for (size_t i = 0; i < sizeof payload; i++)
        payload[i] = (uint8_t)i;
#define BODY(e)                                                                          \
    do {                                                                                 \
        tern_cbor_enc_array(e, 4);                                                       \
        tern_cbor_enc_uint(e, 7);                                                        \
        tern_cbor_enc_int(e, INT64_MIN);                                                 \
        tern_cbor_enc_bytes(e, payload, sizeof payload);                                 \
        tern_cbor_enc_double(e, 1.1);                                                    \
    } while (0)
    tern_cbor_enc e;
    size_t need, got;
    tern_cbor_enc_init(&e, NULL, 0);
    BODY(&e);
    CHECK_RC(tern_cbor_enc_finish(&e, &need), TERN_ENOSPACE);
    CHECK_EQ_U64(need, 1 + 1 + 9 + 3 + 300 + 9);

    uint8_t *full = malloc(need);
    tern_cbor_enc_init(&e, full, need);
    BODY(&e);
    CHECK_OK(tern_cbor_enc_finish(&e, &got));
    CHECK_EQ_U64(got, need);
    CHECK_OK(tern_cbor_wellformed(full, got));

    /* every smaller buffer: ENOSPACE, same needed length, no write past cap */
    for (size_t cap = 0; cap < need; cap++) {
        uint8_t *b = malloc(cap + 16);
        memset(b, 0xa5, cap + 16);
        tern_cbor_enc_init(&e, b, cap);
        BODY(&e);
        CHECK_RC(tern_cbor_enc_finish(&e, &got), TERN_ENOSPACE);
        CHECK_EQ_U64(got, need);
        for (size_t i = cap; i < cap + 16; i++)
            CHECK(b[i] == 0xa5);
        /* whatever was written is a prefix of the real encoding */
        for (size_t i = 0; i < cap; i++)
            CHECK(b[i] == 0xa5 || b[i] == full[i]);
        free(b);
    }
    free(full);
    CHECK_RC(tern_cbor_enc_finish(&e, NULL), TERN_ENOSPACE);
#undef BODY
}

TEST(encoder_reserve_and_errors)
{
    uint8_t b[8];
    tern_cbor_enc e;
    size_t n;
    tern_cbor_enc_init(&e, b, sizeof b);
    tern_cbor_enc_bytes_head(&e, 4);
    uint8_t *p = tern_cbor_enc_reserve(&e, 4);
    CHECK(p == b + 1);
    memcpy(p, "\xde\xad\xbe\xef", 4);
    CHECK(tern_cbor_enc_reserve(&e, 4) == NULL); /* 9 > 8 */
    CHECK_RC(tern_cbor_enc_finish(&e, &n), TERN_ENOSPACE);
    CHECK_EQ_U64(n, 9);
    CHECK_EQ_MEM(b, "\x44\xde\xad\xbe\xef", 5);

    tern_cbor_enc_init(&e, b, sizeof b);
    tern_cbor_enc_simple(&e, 24);
    tern_cbor_enc_uint(&e, 1);
    CHECK_RC(tern_cbor_enc_finish(&e, &n), -EINVAL);
    for (int v = 0; v < 256; v++) {
        tern_cbor_enc_init(&e, b, sizeof b);
        tern_cbor_enc_simple(&e, (uint8_t)v);
        int rc = tern_cbor_enc_finish(&e, &n);
        if (v >= 24 && v < 32) {
            CHECK_RC(rc, -EINVAL);
        } else {
            CHECK_OK(rc);
            CHECK_OK(tern_cbor_wellformed(b, n));
            tern_cbor_dec d;
            uint8_t got;
            tern_cbor_dec_init(&d, b, n);
            CHECK_OK(tern_cbor_dec_simple(&d, &got));
            CHECK_EQ_INT(got, v);
        }
    }
    /* counting past SIZE_MAX is an error, not a wrap */
    tern_cbor_enc_init(&e, NULL, 0);
    tern_cbor_enc_reserve(&e, SIZE_MAX - 1);
    tern_cbor_enc_uint(&e, 1000);
    CHECK_RC(tern_cbor_enc_finish(&e, &n), TERN_EOVERFLOW);
}

TEST(encoder_argument_boundaries)
{
    static const struct {
        uint64_t v;
        const char *hex;
    } t[] = {
        {23, "17"},
        {24, "1818"},
        {255, "18ff"},
        {256, "190100"},
        {65535, "19ffff"},
        {65536, "1a00010000"},
        {4294967295u, "1affffffff"},
        {4294967296u, "1b0000000100000000"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        CHECK_ENC(t[i].hex, tern_cbor_enc_uint(e, t[i].v));
        uint8_t b[16];
        size_t n = unhex(t[i].hex, b, sizeof b);
        tern_cbor_dec d;
        uint64_t v;
        tern_cbor_dec_init(&d, b, n);
        CHECK_OK(tern_cbor_dec_uint(&d, &v));
        CHECK_EQ_U64(v, t[i].v);
    }
    CHECK_ENC("3b7fffffffffffffff", tern_cbor_enc_int(e, INT64_MIN));
    CHECK_ENC("1b7fffffffffffffff", tern_cbor_enc_int(e, INT64_MAX));
    CHECK_ENC("37", tern_cbor_enc_int(e, -24));
    CHECK_ENC("3818", tern_cbor_enc_int(e, -25));
    CHECK_ENC("9818", tern_cbor_enc_array(e, 24));
    CHECK_ENC("b90100", tern_cbor_enc_map(e, 256));
    CHECK_ENC("d9d9f7", tern_cbor_enc_tag(e, 55799));
}

/* ---------------------------------------------------------------- decoder */

TEST(int64_boundaries)
{
    static const struct {
        const char *hex;
        int rc;
        int64_t v;
    } t[] = {
        {"1b7fffffffffffffff", 0, INT64_MAX},
        {"1b8000000000000000", TERN_EOVERFLOW, 0},
        {"1bffffffffffffffff", TERN_EOVERFLOW, 0},
        {"3b7fffffffffffffff", 0, INT64_MIN},
        {"3b7ffffffffffffffe", 0, INT64_MIN + 1},
        {"3b8000000000000000", TERN_EOVERFLOW, 0},
        {"3bffffffffffffffff", TERN_EOVERFLOW, 0},
        {"20", 0, -1},
        {"00", 0, 0},
        {"40", TERN_ETYPE, 0},
        {"f93c00", TERN_ETYPE, 0},
        {"1b00000000000000", TERN_ETRUNCATED, 0},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        uint8_t b[16];
        size_t n = unhex(t[i].hex, b, sizeof b);
        tern_cbor_dec d;
        int64_t v = 42;
        tern_cbor_dec_init(&d, b, n);
        CHECK_RC(tern_cbor_dec_int(&d, &v), t[i].rc);
        if (t[i].rc == 0) {
            CHECK_EQ_INT(v, t[i].v);
            CHECK(tern_cbor_dec_done(&d));
        } else {
            CHECK_EQ_INT(v, 42);
            CHECK_EQ_U64(d.pos, 0);
        }
    }
    uint8_t b[] = {0x3b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    tern_cbor_dec d;
    uint64_t u;
    tern_cbor_dec_init(&d, b, sizeof b);
    CHECK_RC(tern_cbor_dec_uint(&d, &u), TERN_ETYPE);
    CHECK_OK(tern_cbor_dec_negint(&d, &u));
    CHECK_EQ_U64(u, UINT64_MAX);
    tern_cbor_dec_init(&d, b, 0);
    CHECK_RC(tern_cbor_dec_negint(&d, &u), TERN_ETRUNCATED);
}

TEST(typed_getters_walk)
{
    /* [7, -2, h'00ff', "dtn", 1(12.5), {_ 1: true}, [_ ], null, undefined, 2.5] */
    uint8_t b[64];
    size_t n = unhex("8a 07 21 42 00 ff 63 64 74 6e c1 f9 4a 40 bf 01 f5 ff 9f ff f6 f7"
                     "f9 41 00",
                     b, sizeof b);
    tern_cbor_dec d;
    tern_cbor_dec_init(&d, b, n);
    tern_cbor_kind k;
    bool indef;
    uint64_t c, u;
    int64_t s;
    const uint8_t *p;
    const char *t;
    size_t len;
    bool bv;
    double dv;
    CHECK_OK(tern_cbor_peek(&d, &k, &indef));
    CHECK(k == TERN_CBOR_ARRAY && !indef);
    CHECK_RC(tern_cbor_dec_map(&d, &c), TERN_ETYPE);
    CHECK_OK(tern_cbor_dec_array(&d, &c));
    CHECK_EQ_U64(c, 10);
    CHECK_OK(tern_cbor_dec_uint(&d, &u));
    CHECK_EQ_U64(u, 7);
    CHECK_RC(tern_cbor_dec_uint(&d, &u), TERN_ETYPE);
    CHECK_OK(tern_cbor_dec_int(&d, &s));
    CHECK_EQ_INT(s, -2);
    CHECK_RC(tern_cbor_dec_text(&d, &t, &len), TERN_ETYPE);
    CHECK_OK(tern_cbor_dec_bytes(&d, &p, &len));
    CHECK(p == b + 4 && len == 2);
    CHECK_OK(tern_cbor_dec_text(&d, &t, &len));
    CHECK(len == 3 && memcmp(t, "dtn", 3) == 0 && (const uint8_t *)t == b + 7);
    CHECK_OK(tern_cbor_peek(&d, &k, NULL));
    CHECK(k == TERN_CBOR_TAG);
    CHECK_OK(tern_cbor_dec_tag(&d, &u));
    CHECK_EQ_U64(u, 1);
    CHECK_OK(tern_cbor_peek(&d, &k, NULL));
    CHECK(k == TERN_CBOR_FLOAT);
    CHECK_RC(tern_cbor_dec_simple(&d, &(uint8_t){0}), TERN_ETYPE);
    CHECK_OK(tern_cbor_dec_double(&d, &dv));
    CHECK(dv == 12.5);
    CHECK_OK(tern_cbor_peek(&d, &k, &indef));
    CHECK(k == TERN_CBOR_MAP && indef);
    CHECK_OK(tern_cbor_dec_map(&d, &c));
    CHECK_EQ_U64(c, TERN_CBOR_INDEF);
    CHECK(!tern_cbor_at_break(&d));
    CHECK_RC(tern_cbor_dec_break(&d), TERN_ETYPE);
    CHECK_OK(tern_cbor_dec_uint(&d, &u));
    CHECK_RC(tern_cbor_dec_null(&d), TERN_ETYPE);
    CHECK_OK(tern_cbor_dec_bool(&d, &bv));
    CHECK(bv);
    CHECK_OK(tern_cbor_peek(&d, &k, NULL));
    CHECK(k == TERN_CBOR_BREAK);
    CHECK_RC(tern_cbor_dec_bool(&d, &bv), TERN_ETYPE);
    CHECK(tern_cbor_at_break(&d));
    CHECK_OK(tern_cbor_dec_break(&d));
    CHECK_OK(tern_cbor_dec_array(&d, &c));
    CHECK_EQ_U64(c, TERN_CBOR_INDEF);
    CHECK_OK(tern_cbor_dec_break(&d));
    CHECK_RC(tern_cbor_dec_undefined(&d), TERN_ETYPE);
    CHECK_OK(tern_cbor_dec_null(&d));
    CHECK_RC(tern_cbor_dec_null(&d), TERN_ETYPE);
    CHECK_OK(tern_cbor_dec_undefined(&d));
    CHECK_RC(tern_cbor_dec_int(&d, &s), TERN_ETYPE);
    CHECK_OK(tern_cbor_dec_double(&d, &dv));
    CHECK(dv == 2.5);
    CHECK(tern_cbor_dec_done(&d));
    CHECK_RC(tern_cbor_peek(&d, &k, NULL), TERN_EEND);
    CHECK_RC(tern_cbor_dec_uint(&d, &u), TERN_ETRUNCATED);
    CHECK_RC(tern_cbor_dec_break(&d), TERN_ETRUNCATED);
    CHECK_RC(tern_cbor_dec_bool(&d, &bv), TERN_ETRUNCATED);
    CHECK(!tern_cbor_at_break(&d));

    /* simple values */
    n = unhex("f4 f5 f0 f8 ff f6", b, sizeof b);
    tern_cbor_dec_init(&d, b, n);
    uint8_t sv;
    CHECK_OK(tern_cbor_dec_bool(&d, &bv));
    CHECK(!bv);
    CHECK_OK(tern_cbor_dec_simple(&d, &sv));
    CHECK_EQ_INT(sv, TERN_CBOR_TRUE);
    CHECK_RC(tern_cbor_dec_bool(&d, &bv), TERN_ETYPE);
    CHECK_OK(tern_cbor_dec_simple(&d, &sv));
    CHECK_EQ_INT(sv, 16);
    CHECK_OK(tern_cbor_dec_simple(&d, &sv));
    CHECK_EQ_INT(sv, 255);
    CHECK_OK(tern_cbor_dec_simple(&d, &sv));
    CHECK_EQ_INT(sv, TERN_CBOR_NULL);
}

TEST(indefinite_strings_chunks)
{
    uint8_t b[64];
    size_t n = unhex("5f 42 01 02 43 03 04 05 ff", b, sizeof b);
    tern_cbor_dec d;
    tern_cbor_chunks it;
    const uint8_t *p;
    size_t len;
    tern_cbor_dec_init(&d, b, n);
    /* the zero-copy getter refuses it, without moving */
    CHECK_RC(tern_cbor_dec_bytes(&d, &p, &len), TERN_ETYPE);
    CHECK_EQ_U64(d.pos, 0);
    CHECK_RC(tern_cbor_chunks_begin(&d, &it, TERN_CBOR_TEXT), TERN_ETYPE);
    CHECK_RC(tern_cbor_chunks_begin(&d, &it, TERN_CBOR_ARRAY), -EINVAL);
    CHECK_OK(tern_cbor_chunks_begin(&d, &it, TERN_CBOR_BYTES));
    CHECK_OK(tern_cbor_chunks_next(&it, &p, &len));
    CHECK(p == b + 2 && len == 2);
    CHECK_OK(tern_cbor_chunks_next(&it, &p, &len));
    CHECK(p == b + 5 && len == 3);
    CHECK_RC(tern_cbor_chunks_next(&it, &p, &len), TERN_EEND);
    CHECK_RC(tern_cbor_chunks_next(&it, &p, &len), TERN_EEND);
    CHECK(tern_cbor_dec_done(&d));

    /* a definite string is one chunk */
    n = unhex("63 61 62 63", b, sizeof b);
    tern_cbor_dec_init(&d, b, n);
    CHECK_OK(tern_cbor_chunks_begin(&d, &it, TERN_CBOR_TEXT));
    CHECK_OK(tern_cbor_chunks_next(&it, &p, &len));
    CHECK(len == 3 && p == b + 1);
    CHECK_RC(tern_cbor_chunks_next(&it, &p, &len), TERN_EEND);
    CHECK(tern_cbor_dec_done(&d));

    /* empty indefinite string, wrong chunk type, nested indefinite chunk */
    n = unhex("7f ff", b, sizeof b);
    tern_cbor_dec_init(&d, b, n);
    CHECK_OK(tern_cbor_chunks_begin(&d, &it, TERN_CBOR_TEXT));
    CHECK_RC(tern_cbor_chunks_next(&it, &p, &len), TERN_EEND);
    CHECK(tern_cbor_dec_done(&d));
    CHECK_DIAG("7fff", "\"\"_");
    CHECK_DIAG("5fff", "''_");
    CHECK_DIAG("5f40ff", "(_ h'')");
    n = unhex("7f 41 00 ff", b, sizeof b);
    tern_cbor_dec_init(&d, b, n);
    CHECK_OK(tern_cbor_chunks_begin(&d, &it, TERN_CBOR_TEXT));
    CHECK_RC(tern_cbor_chunks_next(&it, &p, &len), TERN_EMALFORMED);
    n = unhex("5f 5f 41 00 ff ff", b, sizeof b);
    tern_cbor_dec_init(&d, b, n);
    CHECK_OK(tern_cbor_chunks_begin(&d, &it, TERN_CBOR_BYTES));
    CHECK_RC(tern_cbor_chunks_next(&it, &p, &len), TERN_EMALFORMED);
    n = unhex("5f 41", b, sizeof b);
    tern_cbor_dec_init(&d, b, n);
    CHECK_OK(tern_cbor_chunks_begin(&d, &it, TERN_CBOR_BYTES));
    CHECK_RC(tern_cbor_chunks_next(&it, &p, &len), TERN_ETRUNCATED);
    CHECK_RC(tern_cbor_chunks_next(&it, &p, &len), TERN_ETRUNCATED);
}

TEST(skip_items)
{
    uint8_t b[64];
    size_t n = unhex("83 01 9f 02 03 ff a1 61 61 c1 01 5f 41 00 ff 07", b, sizeof b);
    tern_cbor_dec d;
    uint64_t u, c;
    tern_cbor_dec_init(&d, b, n);
    CHECK_OK(tern_cbor_dec_array(&d, &c));
    CHECK_OK(tern_cbor_skip(&d));
    CHECK_EQ_U64(d.pos, 2);
    CHECK_OK(tern_cbor_skip(&d));
    CHECK_EQ_U64(d.pos, 6);
    CHECK_OK(tern_cbor_skip(&d));
    CHECK_EQ_U64(d.pos, 11);
    CHECK_OK(tern_cbor_skip(&d));
    CHECK_EQ_U64(d.pos, 15);
    CHECK_OK(tern_cbor_dec_uint(&d, &u));
    CHECK_EQ_U64(u, 7);
    CHECK_RC(tern_cbor_skip(&d), TERN_ETRUNCATED);
    /* skipping a break is malformed: it is not an item */
    n = unhex("ff", b, sizeof b);
    tern_cbor_dec_init(&d, b, n);
    CHECK_RC(tern_cbor_skip(&d), TERN_EMALFORMED);
    CHECK_OK(tern_cbor_wellformed_seq(NULL, 0));
    CHECK_RC(tern_cbor_wellformed(NULL, 0), TERN_ETRUNCATED);
    n = unhex("01 02 83 01 02", b, sizeof b);
    CHECK_RC(tern_cbor_wellformed_seq(b, n), TERN_ETRUNCATED);
    CHECK_OK(tern_cbor_wellformed_seq(b, 2));
}

/* ----------------------------------------------------------------- floats */

TEST(half_precision_all_patterns)
{
    for (uint32_t h = 0; h < 0x10000; h++) {
        double v = tern_cbor_half_to_double((uint16_t)h);
        unsigned e = (h >> 10) & 0x1f, m = h & 0x3ff;
        double mag;
        if (e == 0)
            mag = m * pow2(-24);
        else if (e == 31)
            mag = m ? NAN : INFINITY;
        else
            mag = (m + 1024) * pow2((int)e - 25);
        if (e == 31 && m)
            CHECK(isnan(v));
        else
            CHECK_MSG(v == ((h & 0x8000) ? -mag : mag), "half %04x", h);
        CHECK(!!signbit(v) == !!(h & 0x8000));
        /* the shortest encoding of that double is the same half */
        uint8_t b[9], want[3] = {0xf9, (uint8_t)(h >> 8), (uint8_t)h};
        tern_cbor_enc enc;
        size_t n;
        tern_cbor_enc_init(&enc, b, sizeof b);
        tern_cbor_enc_double(&enc, v);
        CHECK_OK(tern_cbor_enc_finish(&enc, &n));
        CHECK_MSG(n == 3 && memcmp(b, want, 3) == 0, "half %04x re-encodes to %zu bytes",
                  h, n);
    }
    CHECK(tern_cbor_half_to_double(0x0001) == pow2(-24));
    CHECK(tern_cbor_half_to_double(0x03ff) == 1023 * pow2(-24));
    CHECK(tern_cbor_half_to_double(0x0400) == pow2(-14));
    CHECK(tern_cbor_half_to_double(0x7bff) == 65504.0);
    CHECK(tern_cbor_half_to_double(0xfc00) == -INFINITY);
}

TEST(float_shortest_width)
{
    static const struct {
        double v;
        size_t n;
    } t[] = {
        {1.0, 3},
        {65504.0, 3},
        {65505.0, 5},
        {65520.0, 5}, /* rounds to inf in half; exact in single */
        {0x1p-24, 3},
        {0x1p-25, 5},
        {0x1.8p-24, 5},
        {0x1p-14, 3},
        {0x1.ff8p-15, 3}, /* largest half subnormal */
        {0x1.ffcp-15, 5},
        {0x1p-149, 5},
        {0x1p-150, 9},
        {0x1p-126, 5},
        {0x1.fffffep127, 5},
        {0x1.fffffe1p127, 9},
        {0x1p128, 9},
        {0.1, 9},
        {(double)0.1f, 5},
        {4.9406564584124654e-324, 9},
        {-0x1p-1074, 9},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        uint8_t b[16];
        tern_cbor_enc e;
        size_t n;
        tern_cbor_enc_init(&e, b, sizeof b);
        tern_cbor_enc_double(&e, t[i].v);
        CHECK_OK(tern_cbor_enc_finish(&e, &n));
        CHECK_MSG(n == t[i].n, "%a: %zu bytes, want %zu", t[i].v, n, t[i].n);
        tern_cbor_dec d;
        double v;
        tern_cbor_dec_init(&d, b, n);
        CHECK_OK(tern_cbor_dec_double(&d, &v));
        CHECK_MSG(memcmp(&v, &t[i].v, sizeof v) == 0, "%a round trip", t[i].v);
    }
    /* NaN payloads survive in the smallest width that holds them */
    uint64_t nb = UINT64_C(0x7ff4000000000000);
    double nan1;
    memcpy(&nan1, &nb, sizeof nan1);
    CHECK_ENC("f97d00", tern_cbor_enc_double(e, nan1));
    nb = UINT64_C(0x7ff8000020000000);
    memcpy(&nan1, &nb, sizeof nan1);
    CHECK_ENC("fa7fc00001", tern_cbor_enc_double(e, nan1));
    nb = UINT64_C(0xfff8000000000001);
    memcpy(&nan1, &nb, sizeof nan1);
    CHECK_ENC("fbfff8000000000001", tern_cbor_enc_double(e, nan1));
    uint8_t b[] = {0xfa, 0x7f, 0xc0, 0x00, 0x01};
    tern_cbor_dec d;
    double v;
    tern_cbor_dec_init(&d, b, sizeof b);
    CHECK_OK(tern_cbor_dec_double(&d, &v));
    memcpy(&nb, &v, sizeof nb);
    CHECK_EQ_U64(nb, UINT64_C(0x7ff8000020000000));
}

TEST(diag_floats_and_misc)
{
    CHECK_DIAG("fb3fb999999999999a", "0.1");
    CHECK_DIAG("fb4415af1d78b58c40", "100000000000000000000.0");
    CHECK_DIAG("fb444b1ae4d6e2ef50", "1.0e+21");
    CHECK_DIAG("fb3eb0c6f7a0b5ed8d", "0.000001");
    CHECK_DIAG("fb3e7ad7f29abcaf48", "1.0e-7");
    CHECK_DIAG("fb0000000000000001", "5.0e-324");
    CHECK_DIAG("fb7fefffffffffffff", "1.7976931348623157e+308");
    CHECK_DIAG("fbc0c81c8000000000", "-12345.0");
    CHECK_DIAG("fb3ff0000000000001", "1.0000000000000002");
    CHECK_DIAG("fa3dcccccd", "0.10000000149011612");
    CHECK_DIAG("f97d00", "NaN");
    CHECK_DIAG("f9fe00", "NaN");
    CHECK_DIAG("f98001", "-5.960464477539063e-8");
    CHECK_DIAG("f903ff", "0.00006097555160522461");
    /* text escapes */
    CHECK_DIAG("66 0a 09 01 7f 22 2f", "\"\\n\\t\\u0001\\u007f\\\"/\"");
    CHECK_DIAG("63 61 ff 62", "\"a\\xffb\"");
    CHECK_DIAG("62 c0 80", "\"\\xc0\\x80\"");         /* overlong */
    CHECK_DIAG("63 ed a0 80", "\"\\xed\\xa0\\x80\""); /* surrogate */
    CHECK_DIAG("64 f4 8f bf bf", "\"\\udbff\\udfff\"");
    CHECK_DIAG("c1 c2 c3 00", "1(2(3(0)))");
    CHECK_DIAG("d9d9f7 80", "55799([])");
    CHECK_DIAG("f8 20", "simple(32)");
    CHECK_DIAG("e0", "simple(0)");
    CHECK_DIAG("f3", "simple(19)");
    CHECK_DIAG("a2 80 a0 a0 80", "{[]: {}, {}: []}");
    CHECK_DIAG("bf ff", "{_ }");
    CHECK_DIAG("3b 7fffffffffffffff", "-9223372036854775808");
    CHECK_DIAG("38 ff", "-256");
}

TEST(diag_output_buffer)
{
    uint8_t b[64];
    size_t n = unhex("83 01 82 02 03 82 04 05", b, sizeof b);
    const char *want = "[1, [2, 3], [4, 5]]";
    size_t wl = strlen(want);
    char out[64];
    for (size_t cap = 0; cap <= wl + 1; cap++) {
        memset(out, 'X', sizeof out);
        int rc = tern_cbor_diag(b, n, cap ? out : NULL, cap);
        if (cap > wl) {
            CHECK_OK(rc);
            CHECK_EQ_STR(out, want);
        } else {
            CHECK_RC(rc, TERN_ENOSPACE);
            if (cap) {
                CHECK(out[cap - 1] == '\0');
                CHECK(strncmp(out, want, cap - 1) == 0);
            }
            CHECK(out[cap] == 'X');
        }
    }
    /* diag_item: full length reported, cursor kept until it fits */
    n = unhex("01 63 61 62 63 80", b, sizeof b);
    tern_cbor_dec d;
    size_t need;
    tern_cbor_dec_init(&d, b, n);
    CHECK_OK(tern_cbor_diag_item(&d, out, sizeof out, &need));
    CHECK_EQ_STR(out, "1");
    CHECK_RC(tern_cbor_diag_item(&d, out, 3, &need), TERN_ENOSPACE);
    CHECK_EQ_U64(need, 5);
    CHECK_EQ_U64(d.pos, 1);
    CHECK_OK(tern_cbor_diag_item(&d, out, need + 1, &need));
    CHECK_EQ_STR(out, "\"abc\"");
    CHECK_OK(tern_cbor_diag_item(&d, out, sizeof out, NULL));
    CHECK_EQ_STR(out, "[]");
    CHECK_RC(tern_cbor_diag_item(&d, out, sizeof out, NULL), TERN_ETRUNCATED);
    /* malformed input beats a short buffer */
    n = unhex("82 01 1c", b, sizeof b);
    CHECK_RC(tern_cbor_diag(b, n, out, 2), TERN_EMALFORMED);
}

TEST(utf8_validity)
{
    CHECK(tern_cbor_utf8_valid("", 0));
    CHECK(tern_cbor_utf8_valid("abc", 3));
    CHECK(tern_cbor_utf8_valid("\xc3\xbc\xe6\xb0\xb4\xf0\x90\x85\x91", 9));
    CHECK(tern_cbor_utf8_valid("\xf4\x8f\xbf\xbf", 4));
    CHECK(!tern_cbor_utf8_valid("\xf4\x90\x80\x80", 4)); /* > U+10FFFF */
    CHECK(!tern_cbor_utf8_valid("\xc0\xaf", 2));         /* overlong */
    CHECK(!tern_cbor_utf8_valid("\xe0\x80\xaf", 3));     /* overlong */
    CHECK(!tern_cbor_utf8_valid("\xed\xa0\x80", 3));     /* surrogate */
    CHECK(!tern_cbor_utf8_valid("\xc3", 1));             /* cut */
    CHECK(!tern_cbor_utf8_valid("\x80", 1));
    CHECK(!tern_cbor_utf8_valid("\xff", 1));
}

/* Random inputs: the checker, skip, the printer and the getters agree. */
TEST(random_inputs_consistent)
{
    uint64_t s = tt_seed();
    static uint8_t b[64];
    static char out[8192];
    static uint8_t o[4096];
    /* bytes biased towards heads that open things */
    static const uint8_t pick[] = {0x00, 0x18, 0x19, 0x1b, 0x20, 0x41, 0x5f, 0x61,
                                   0x7f, 0x81, 0x82, 0x9f, 0xa1, 0xbf, 0xc1, 0xf9,
                                   0xfa, 0xfb, 0xf8, 0xff, 0xff, 0x01, 0x02, 0xf5};
    for (int iter = 0; iter < 200000; iter++) {
        s = s * 6364136223846793005u + 1442695040888963407u;
        size_t n = (s >> 33) % sizeof b;
        for (size_t i = 0; i < n; i++) {
            s = s * 6364136223846793005u + 1442695040888963407u;
            b[i] = (s >> 60) < 6 ? pick[(s >> 40) % sizeof pick] : (uint8_t)(s >> 32);
        }
        int wf = tern_cbor_wellformed(b, n);
        int dr = tern_cbor_diag(b, n, out, sizeof out);
        CHECK_MSG(wf == dr, "wellformed %d, diag %d", wf, dr);
        if (wf == 0) {
            tern_cbor_dec d;
            tern_cbor_enc e;
            size_t on;
            tern_cbor_dec_init(&d, b, n);
            tern_cbor_enc_init(&e, o, sizeof o);
            CHECK_OK(reencode(&d, &e, 0));
            CHECK(tern_cbor_dec_done(&d));
            CHECK_OK(tern_cbor_enc_finish(&e, &on));
            CHECK_OK(tern_cbor_wellformed(o, on));
            static char out2[8192];
            CHECK_OK(tern_cbor_diag(o, on, out2, sizeof out2));
            CHECK_EQ_STR(out, out2);
            for (size_t k = 0; k < n; k++)
                CHECK_RC(tern_cbor_wellformed(b, k), TERN_ETRUNCATED);
        }
    }
}
