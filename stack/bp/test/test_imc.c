/* Multicast codecs (bp_imc.h) against ION's layouts, hand-written in CBOR
 * (docs/multicast.md). */
#include <errno.h>
#include <string.h>

#include "bp_imc.h"
#include "tern_test.h"

TEST(imc_petition_codec_as_ion)
{
    uint8_t b[32];
    size_t n;
    CHECK_OK(bp_imc_petition_encode(7, true, b, sizeof b, &n));
    CHECK_EQ_U64(n, 3);
    CHECK_EQ_MEM(b, "\x82\x07\x01", 3);
    CHECK_OK(bp_imc_petition_encode(1000, false, b, sizeof b, &n));
    CHECK_EQ_U64(n, 5);
    CHECK_EQ_MEM(b, "\x82\x19\x03\xe8\x00", 5);
    CHECK_RC(bp_imc_petition_encode(7, true, b, 2, &n), TERN_ENOSPACE);
    uint64_t g;
    bool m;
    const char *why = NULL;
    CHECK_OK(
        bp_imc_petition_decode((const uint8_t *)"\x82\x19\x03\xe8\x05", 5, &g, &m, &why));
    CHECK_EQ_U64(g, 1000);
    CHECK(m); /* any non-zero isMember joins, as ION reads it */
    static const struct {
        const char *b;
        size_t n;
    } bad[] = {{"\x83\x07\x01\x01", 4},
               {"\x81\x07", 2},
               {"\x82\x27\x01", 3},
               {"\x82\x07\xf5", 3},
               {"\x82\x07\x01\x00", 4},
               {"\x82\x07", 2},
               {"", 0},
               {"\x9f\x07\x01\xff", 4},
               {"\xa2\x07\x01", 3}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        why = NULL;
        CHECK_RC(
            bp_imc_petition_decode((const uint8_t *)bad[i].b, bad[i].n, &g, &m, &why),
            TERN_EMALFORMED);
        CHECK_MSG(why && *why, "case %zu: no reason", i);
    }
}

TEST(imc_list_codec_as_ion)
{
    uint64_t v[] = {2, 24, 70000}, out[8];
    uint8_t b[64];
    size_t n, k;
    CHECK_OK(bp_imc_list_encode(v, 3, b, sizeof b, &n));
    CHECK_EQ_U64(n, 1 + 1 + 2 + 5);
    CHECK_EQ_MEM(b, "\x83\x02\x18\x18\x1a\x00\x01\x11\x70", 9);
    const char *why = NULL;
    /* repeats count once and come back sorted */
    CHECK_OK(
        bp_imc_list_decode((const uint8_t *)"\x84\x09\x03\x09\x01", 5, out, 8, &k, &why));
    CHECK_EQ_U64(k, 3);
    CHECK_EQ_U64(out[0], 1);
    CHECK_EQ_U64(out[1], 3);
    CHECK_EQ_U64(out[2], 9);
    CHECK_OK(bp_imc_list_decode((const uint8_t *)"\x80", 1, out, 8, &k, &why));
    CHECK_EQ_U64(k, 0);
    static const struct {
        const char *b;
        size_t n;
    } bad[] = {{"\x9f\x01\xff", 3},
               {"\x82\x01\x21", 3},
               {"\x82\x01\x61\x61", 4},
               {"\x81\x01\x00", 3},
               {"\x01", 1},
               {"\x82\x01", 2},
               {"", 0}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        why = NULL;
        CHECK_RC(
            bp_imc_list_decode((const uint8_t *)bad[i].b, bad[i].n, out, 8, &k, &why),
            TERN_EMALFORMED);
        CHECK_MSG(why && *why, "case %zu: no reason", i);
    }
    /* more than max, and more than BP_IMC_LIST_MAX */
    CHECK_RC(bp_imc_list_decode((const uint8_t *)"\x83\x01\x02\x03", 4, out, 2, &k, &why),
             TERN_EMALFORMED);
    CHECK_RC(bp_imc_list_decode((const uint8_t *)"\x19\x10\x01", 3, out, 8, &k, &why),
             TERN_EMALFORMED);
    uint8_t big[8] = {0x99, 0x10, 0x01};
    CHECK_RC(bp_imc_list_decode(big, 3, out, 8, &k, &why), TERN_EMALFORMED);
    CHECK_RC(bp_imc_list_encode(v, BP_IMC_LIST_MAX + 1, b, sizeof b, &n), -EINVAL);
}

TEST(imc_briefing_codec_as_ion)
{
    uint64_t g[] = {7, 9}, out[8];
    uint8_t b[64];
    size_t n, k;
    CHECK_OK(bp_imc_briefing_encode(g, 2, b, sizeof b, &n));
    CHECK_EQ_U64(n, 5);
    CHECK_EQ_MEM(b, "\x82\x05\x82\x07\x09", 5);
    const char *why = NULL;
    CHECK_OK(bp_imc_briefing_decode(b, n, out, 8, &k, &why));
    CHECK_EQ_U64(k, 2);
    CHECK_EQ_U64(out[1], 9);
    /* another administrative record: not a briefing, not malformed */
    CHECK_RC(bp_imc_briefing_decode((const uint8_t *)"\x82\x01\x80", 3, out, 8, &k, &why),
             TERN_ENOTFOUND);
    static const struct {
        const char *b;
        size_t n;
    } bad[] = {{"\x83\x05\x80\x00", 4},
               {"\x82\x05\x9f\x07\xff", 5},
               {"\x82\x05\x81\x20", 4},
               {"\x82\x05\x80\x00", 4},
               {"\x82\x25\x80", 3},
               {"\x82\x05", 2},
               {"\x05", 1}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        why = NULL;
        CHECK_RC(
            bp_imc_briefing_decode((const uint8_t *)bad[i].b, bad[i].n, out, 8, &k, &why),
            TERN_EMALFORMED);
        CHECK_MSG(why && *why, "case %zu: no reason", i);
    }
}
