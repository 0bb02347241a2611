#include <stdlib.h>

#include "tern/crc.h"
#include "tern_test.h"

uint32_t tern__crc32c_sw(uint32_t crc, const void *buf, size_t len);

static const char check[] = "123456789";

TEST(crc_check_values)
{
    CHECK_EQ_INT(tern_crc16_x25(0, check, 9), 0x906E);
    CHECK_EQ_U64(tern_crc32c(0, check, 9), 0xE3069283u);
    CHECK_EQ_U64(tern__crc32c_sw(0, check, 9), 0xE3069283u);
    CHECK_EQ_U64(tern_crc32(0, check, 9), 0xCBF43926u);
    CHECK_EQ_INT(tern_crc16_ccitt_false(TERN_CRC16_CCITT_FALSE_INIT, check, 9), 0x29B1);
}

/* CRC-16/CCITT-FALSE: the empty input leaves the 0xFFFF preset; pieces chain;
 * the table agrees with the bit-at-a-time definition (MSB first, 0x1021). */
TEST(crc16_ccitt_false_pieces_and_bitwise)
{
    CHECK_EQ_INT(tern_crc16_ccitt_false(0xFFFF, "", 0), 0xFFFF);
    uint8_t buf[1000];
    uint64_t x = tt_seed() | 1;
    for (size_t i = 0; i < sizeof buf; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        buf[i] = (uint8_t)(x >> 56);
    }
    uint16_t bit = 0xFFFF;
    for (size_t i = 0; i < sizeof buf; i++) {
        bit ^= (uint16_t)(buf[i] << 8);
        for (int k = 0; k < 8; k++)
            bit = (bit & 0x8000) ? (uint16_t)((bit << 1) ^ 0x1021) : (uint16_t)(bit << 1);
    }
    CHECK_EQ_INT(tern_crc16_ccitt_false(0xFFFF, buf, sizeof buf), bit);
    for (size_t cut = 0; cut <= sizeof buf; cut += 97)
        CHECK_EQ_INT(tern_crc16_ccitt_false(tern_crc16_ccitt_false(0xFFFF, buf, cut),
                                            buf + cut, sizeof buf - cut),
                     bit);
}

TEST(crc_empty_is_zero)
{
    CHECK_EQ_INT(tern_crc16_x25(0, "", 0), 0);
    CHECK_EQ_U64(tern_crc32c(0, "", 0), 0);
    CHECK_EQ_U64(tern_crc32(0, "", 0), 0);
}

/* RFC 3720 (iSCSI) appendix B.4 CRC-32C vectors. */
TEST(crc32c_rfc3720_vectors)
{
    uint8_t buf[48];
    memset(buf, 0, 32);
    CHECK_EQ_U64(tern_crc32c(0, buf, 32), 0x8A9136AAu);
    memset(buf, 0xff, 32);
    CHECK_EQ_U64(tern_crc32c(0, buf, 32), 0x62A8AB43u);
    for (int i = 0; i < 32; i++)
        buf[i] = (uint8_t)i;
    CHECK_EQ_U64(tern_crc32c(0, buf, 32), 0x46DD794Eu);
    for (int i = 0; i < 32; i++)
        buf[i] = (uint8_t)(31 - i);
    CHECK_EQ_U64(tern_crc32c(0, buf, 32), 0x113FDB5Cu);
    static const uint8_t scsi[48] = {
        0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00,
        0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18, 0x28, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
    CHECK_EQ_U64(tern_crc32c(0, scsi, 48), 0xD9963A56u);
}

/* Feeding data in pieces gives the same CRC; hardware and table paths agree. */
TEST(crc_incremental_and_paths_agree)
{
    size_t n = 100003;
    uint8_t *buf = malloc(n);
    CHECK(buf);
    uint64_t x = tt_seed() | 1;
    for (size_t i = 0; i < n; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        buf[i] = (uint8_t)(x >> 56);
    }
    for (size_t cut = 0; cut < n; cut += 9973) {
        CHECK_EQ_INT(tern_crc16_x25(tern_crc16_x25(0, buf, cut), buf + cut, n - cut),
                     tern_crc16_x25(0, buf, n));
        CHECK_EQ_U64(tern_crc32c(tern_crc32c(0, buf, cut), buf + cut, n - cut),
                     tern_crc32c(0, buf, n));
        CHECK_EQ_U64(tern_crc32(tern_crc32(0, buf, cut), buf + cut, n - cut),
                     tern_crc32(0, buf, n));
    }
    for (size_t off = 0; off < 16; off++)
        CHECK_EQ_U64(tern_crc32c(0, buf + off, n - off),
                     tern__crc32c_sw(0, buf + off, n - off));
    /* Lengths around the three-lane rounds (3 x 8192 bytes) of the fast path. */
    static const size_t lens[] = {24575, 24576, 24577, 49152, 49159, 73733, 98304};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++)
        CHECK_EQ_U64(tern_crc32c(0x12345678, buf + 3, lens[i]),
                     tern__crc32c_sw(0x12345678, buf + 3, lens[i]));
    free(buf);
}

TEST(crc32c_combine_matches_the_whole)
{
    uint8_t buf[70000];
    uint64_t x = tt_seed() | 1;
    for (size_t i = 0; i < sizeof buf; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        buf[i] = (uint8_t)(x >> 56);
    }
    static const size_t cuts[] = {0, 1, 7, 28, 1000, 24576, 69999, 70000};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        size_t a = cuts[i], b = sizeof buf - a;
        CHECK_EQ_U64(
            tern_crc32c_combine(tern_crc32c(0, buf, a), tern_crc32c(0, buf + a, b), b),
            tern_crc32c(0, buf, sizeof buf));
    }
    CHECK_EQ_U64(
        tern_crc32c_combine(tern_crc32c(0, "1234", 4), tern_crc32c(0, "56789", 5), 5),
        0xE3069283u);
}
