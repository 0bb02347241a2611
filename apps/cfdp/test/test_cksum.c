/* CFDP file checksums: known values, any order of segments giving the
 * in-order result, sparse files, saved state, and the refusals. */
#include <errno.h>
#include <stdlib.h>

#include "cfdp_cksum.h"
#include "cfdp_pdu.h"
#include "tern/crc.h"
#include "tern_test.h"

static const unsigned types[] = {CFDP_CKSUM_MODULAR, CFDP_CKSUM_PROX1, CFDP_CKSUM_CRC32C,
                                 CFDP_CKSUM_CRC32, CFDP_CKSUM_NULL};
#define NTYPES (sizeof types / sizeof types[0])

static uint32_t whole(unsigned type, const void *buf, size_t len)
{
    uint32_t v = 0;
    CHECK_OK(cfdp_cksum_buf(type, buf, len, &v));
    return v;
}

TEST(cksum_known_values)
{
    const char *check = "123456789";
    /* Modular: big-endian words from offset 0, the last padded with zeros:
     * 0x31323334 + 0x35363738 + 0x39000000 = 0x9F686A6C (mod 2^32). */
    CHECK_EQ_U64(whole(CFDP_CKSUM_MODULAR, check, 9), 0x9F686A6Cu);
    CHECK_EQ_U64(whole(CFDP_CKSUM_CRC32C, check, 9), 0xE3069283u);
    CHECK_EQ_U64(whole(CFDP_CKSUM_CRC32, check, 9), 0xCBF43926u);
    CHECK_EQ_U64(whole(CFDP_CKSUM_NULL, check, 9), 0);
    /* Proximity-1 (generator 0x00A00805, MSB first, preset 0, no final XOR):
     * no published check value; 0x51693C0C comes from a bit-at-a-time loop
     * in Python written apart from Tern, and from the same loop in C below. */
    CHECK_EQ_U64(whole(CFDP_CKSUM_PROX1, check, 9), 0x51693C0Cu);
    uint32_t r = 0;
    for (int i = 0; i < 9; i++) {
        r ^= (uint32_t)(uint8_t)check[i] << 24;
        for (int k = 0; k < 8; k++)
            r = (r & 0x80000000u) ? (r << 1) ^ 0x00A00805u : r << 1;
    }
    CHECK_EQ_U64(r, 0x51693C0Cu);
    /* an empty file */
    for (size_t t = 0; t < NTYPES; t++)
        CHECK_EQ_U64(whole(types[t], "", 0), 0);
    /* a byte's modular weight depends on its offset modulo 4 */
    cfdp_cksum c;
    uint32_t v;
    CHECK_OK(cfdp_cksum_init(&c, CFDP_CKSUM_MODULAR));
    CHECK_OK(cfdp_cksum_update(&c, 3, "\x01", 1));
    CHECK_OK(cfdp_cksum_update(&c, 4, "\x01", 1));
    CHECK_OK(cfdp_cksum_update(&c, 1001, "\xff\xff", 2));
    CHECK_OK(cfdp_cksum_final(&c, 2000, &v));
    CHECK_EQ_U64(v, 0x00000001u + 0x01000000u + 0x00ffff00u);
    /* the sum wraps modulo 2^32 */
    CHECK_EQ_U64(whole(CFDP_CKSUM_MODULAR, "\xff\xff\xff\xff\x00\x00\x00\x02", 8), 1);
}

static uint64_t rng(uint64_t *x)
{
    *x = *x * 6364136223846793005ull + 1442695040888963407ull;
    return *x >> 33;
}

/* A file cut into segments of random lengths, fed in a random order (the
 * receiver's view of a transfer with loss and retransmission) gives the
 * checksum of the file fed in order, for every type. */
TEST(cksum_any_segment_order)
{
    size_t n = 60001;
    uint8_t *file = malloc(n);
    CHECK(file);
    uint64_t x = tt_seed() | 1;
    for (size_t i = 0; i < n; i++)
        file[i] = (uint8_t)rng(&x);
    CHECK_EQ_U64(whole(CFDP_CKSUM_CRC32C, file, n), tern_crc32c(0, file, n));
    CHECK_EQ_U64(whole(CFDP_CKSUM_CRC32, file, n), tern_crc32(0, file, n));
    struct seg {
        size_t off, len;
    } *segs = malloc(n * sizeof *segs);
    CHECK(segs);
    int orders = 0;
    for (int round = 0; round < 40; round++) {
        size_t ns = 0, maxlen = round < 10 ? 7 : round < 20 ? 300 : 9000;
        for (size_t off = 0; off < n;) {
            size_t len = 1 + rng(&x) % maxlen;
            if (len > n - off)
                len = n - off;
            segs[ns++] = (struct seg){off, len};
            off += len;
        }
        if (round % 5 == 4) { /* last segment first */
            for (size_t i = 0; i < ns / 2; i++) {
                struct seg t = segs[i];
                segs[i] = segs[ns - 1 - i];
                segs[ns - 1 - i] = t;
            }
        } else {
            for (size_t i = ns; i > 1; i--) { /* Fisher-Yates */
                size_t j = rng(&x) % i;
                struct seg t = segs[i - 1];
                segs[i - 1] = segs[j];
                segs[j] = t;
            }
        }
        for (size_t t = 0; t < NTYPES; t++) {
            cfdp_cksum c;
            CHECK_OK(cfdp_cksum_init(&c, types[t]));
            for (size_t i = 0; i < ns; i++)
                CHECK_OK(
                    cfdp_cksum_update(&c, segs[i].off, file + segs[i].off, segs[i].len));
            uint32_t v;
            CHECK_OK(cfdp_cksum_final(&c, n, &v));
            CHECK_MSG(v == whole(types[t], file, n),
                      "%s, round %d (%zu segments): %08x != %08x",
                      cfdp_checksum_name(types[t]), round, ns, v,
                      whole(types[t], file, n));
        }
        orders++;
    }
    fprintf(stderr,
            "# %d random segment orders x %zu checksum types agree with in-order\n",
            orders, NTYPES);
    free(segs);
    free(file);
}

/* Bytes never fed count as zeros: a sparse file's checksum from its one
 * non-zero byte equals the checksum of the whole buffer. */
TEST(cksum_sparse_and_trailing_zeros)
{
    size_t n = 64u << 20;
    uint8_t *file = calloc(1, n);
    CHECK(file);
    file[n / 2] = 0x5a;
    file[n - 1] = 0xa5;
    for (size_t t = 0; t < NTYPES; t++) {
        cfdp_cksum c;
        uint32_t v;
        CHECK_OK(cfdp_cksum_init(&c, types[t]));
        CHECK_OK(cfdp_cksum_update(&c, n - 1, file + n - 1, 1));
        CHECK_OK(cfdp_cksum_update(&c, n / 2, file + n / 2, 1));
        CHECK_OK(cfdp_cksum_final(&c, n, &v));
        CHECK_EQ_U64(v, whole(types[t], file, n));
        /* and a file that ends in zeros nobody sent */
        CHECK_OK(cfdp_cksum_init(&c, types[t]));
        CHECK_OK(cfdp_cksum_update(&c, 0, file + n / 2, 1));
        CHECK_OK(cfdp_cksum_final(&c, 1000, &v));
        uint8_t small[1000] = {0x5a};
        CHECK_EQ_U64(v, whole(types[t], small, sizeof small));
    }
    free(file);
}

/* The running state is plain data: copied mid-transfer (saved with the
 * transaction) and continued, it gives the same checksum. */
TEST(cksum_state_saved_and_restored)
{
    uint8_t file[5000];
    uint64_t x = tt_seed() | 1;
    for (size_t i = 0; i < sizeof file; i++)
        file[i] = (uint8_t)rng(&x);
    for (size_t t = 0; t < NTYPES; t++) {
        cfdp_cksum a, saved;
        uint32_t v;
        CHECK_OK(cfdp_cksum_init(&a, types[t]));
        CHECK_OK(cfdp_cksum_update(&a, 3000, file + 3000, 2000));
        CHECK_OK(cfdp_cksum_update(&a, 0, file, 1000));
        uint8_t blob[sizeof saved];
        memcpy(blob, &a, sizeof a);
        memset(&a, 0xee, sizeof a);
        memcpy(&saved, blob, sizeof saved);
        CHECK_OK(cfdp_cksum_update(&saved, 1000, file + 1000, 2000));
        CHECK_OK(cfdp_cksum_final(&saved, sizeof file, &v));
        CHECK_EQ_U64(v, whole(types[t], file, sizeof file));
    }
}

TEST(cksum_refusals)
{
    for (unsigned t = 0; t < 16; t++) {
        int want = t <= 3 || t == 15;
        CHECK_EQ_INT(cfdp_cksum_supported(t), want);
        cfdp_cksum c;
        CHECK_RC(cfdp_cksum_init(&c, t), want ? 0 : -ENOTSUP);
    }
    CHECK_EQ_INT(cfdp_cksum_supported(255), 0);
    uint32_t v;
    CHECK_RC(cfdp_cksum_buf(7, "x", 1, &v), -ENOTSUP);
    cfdp_cksum c;
    CHECK_OK(cfdp_cksum_init(&c, CFDP_CKSUM_CRC32C));
    CHECK_RC(cfdp_cksum_update(&c, UINT64_MAX, "ab", 2), TERN_EOVERFLOW);
    CHECK_OK(cfdp_cksum_update(&c, UINT64_MAX - 2, "ab", 2));
    CHECK_OK(cfdp_cksum_init(&c, CFDP_CKSUM_MODULAR));
    CHECK_OK(cfdp_cksum_update(&c, 10, "ab", 2));
    CHECK_RC(cfdp_cksum_final(&c, 11, &v), TERN_EMALFORMED);
    CHECK_OK(cfdp_cksum_final(&c, 12, &v));
}
