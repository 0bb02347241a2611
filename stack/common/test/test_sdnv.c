#include "tern/sdnv.h"
#include "tern_test.h"

/* RFC 6256 section 2.1 examples, plus the 64-bit edges. */
static const struct {
    uint64_t v;
    size_t n;
    uint8_t b[10];
} vectors[] = {
    {0x0, 1, {0x00}},
    {0x7f, 1, {0x7f}},
    {0x80, 2, {0x81, 0x00}},
    {0xabc, 2, {0x95, 0x3c}},
    {0x1234, 2, {0xa4, 0x34}},
    {0x4234, 3, {0x81, 0x84, 0x34}},
    {0x3fff, 2, {0xff, 0x7f}},
    {0x4000, 3, {0x81, 0x80, 0x00}},
    {UINT64_MAX, 10, {0x81, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}},
    {1ull << 63, 10, {0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}},
};

TEST(sdnv_rfc6256_vectors)
{
    for (size_t i = 0; i < sizeof vectors / sizeof vectors[0]; i++) {
        uint8_t buf[TERN_SDNV_MAX_LEN];
        uint64_t v = 0;
        CHECK_EQ_INT(tern_sdnv_len(vectors[i].v), vectors[i].n);
        CHECK_EQ_INT(tern_sdnv_encode(vectors[i].v, buf, sizeof buf), vectors[i].n);
        CHECK_EQ_MEM(buf, vectors[i].b, vectors[i].n);
        CHECK_EQ_INT(tern_sdnv_decode(vectors[i].b, vectors[i].n, &v), vectors[i].n);
        CHECK_EQ_U64(v, vectors[i].v);
    }
}

TEST(sdnv_truncated_and_short_buffer)
{
    static const uint8_t b[] = {0x81, 0x84, 0x34};
    uint64_t v = 99;
    CHECK_RC(tern_sdnv_decode(b, 0, &v), TERN_ETRUNCATED);
    CHECK_RC(tern_sdnv_decode(b, 2, &v), TERN_ETRUNCATED);
    CHECK_EQ_U64(v, 99);
    uint8_t out[2] = {0xee, 0xee};
    CHECK_RC(tern_sdnv_encode(0x4234, out, 2), TERN_ENOSPACE);
    CHECK(out[0] == 0xee && out[1] == 0xee);
}

TEST(sdnv_leading_zero_groups_accepted)
{
    static const uint8_t b[] = {0x80, 0x80, 0x81, 0x00};
    uint64_t v;
    CHECK_EQ_INT(tern_sdnv_decode(b, sizeof b, &v), 4);
    CHECK_EQ_U64(v, 0x80);
}

TEST(sdnv_overflow_and_overlong)
{
    /* 2^64 needs 65 bits. */
    static const uint8_t wide[] = {0x82, 0x80, 0x80, 0x80, 0x80,
                                   0x80, 0x80, 0x80, 0x80, 0x00};
    /* Eleven bytes of zero groups: value fits, encoding does not end in time. */
    static const uint8_t longz[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
                                    0x80, 0x80, 0x80, 0x80, 0x00};
    uint64_t v;
    CHECK_RC(tern_sdnv_decode(wide, sizeof wide, &v), TERN_EOVERFLOW);
    CHECK_RC(tern_sdnv_decode(longz, sizeof longz, &v), TERN_EMALFORMED);
}

TEST(sdnv_roundtrip_random)
{
    uint64_t x = tt_seed() | 1;
    for (int i = 0; i < 200000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        uint64_t val = x >> (x & 63);
        uint8_t buf[TERN_SDNV_MAX_LEN];
        uint64_t back;
        int n = tern_sdnv_encode(val, buf, sizeof buf);
        CHECK(n > 0);
        CHECK_EQ_INT(tern_sdnv_decode(buf, (size_t)n, &back), n);
        CHECK_EQ_U64(back, val);
    }
}
