/* CRC-16/X.25, CRC-16/CCITT-FALSE, CRC-32C and CRC-32.
 *
 * Tables are built once (pthread_once) rather than kept as literals; they are
 * written before any reader sees them, so they are not shared mutable state.
 */
#include <pthread.h>
#include <string.h>
#include <zlib.h>

#include "tern/crc.h"

static uint16_t crc16_tab[256];
static uint16_t crc16_msb_tab[256]; /* poly 0x1021, MSB first */
static uint32_t crc32c_tab[8][256];
static int crc32c_hw;

/* The crc32 instruction has a latency of three cycles but can start one per
 * cycle: three independent lanes over adjacent slices keep it busy, and the
 * lanes are then joined by "shifting" a register over LANE zero bytes,
 * which is linear and so a table lookup (about 3x the single-lane speed). */
#define LANE 8192
static uint32_t crc32c_shift_tab[4][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

#if defined(__x86_64__)
/* Register after LANE zero bytes, starting from v (no pre/post inversion). */
__attribute__((target("sse4.2"))) static uint32_t crc32c_zeros(uint32_t v)
{
    uint64_t c = v;
    for (size_t i = 0; i < LANE; i += 8)
        c = __builtin_ia32_crc32di(c, 0);
    return (uint32_t)c;
}

static void crc32c_shift_init(void)
{
    for (unsigned k = 0; k < 4; k++)
        for (unsigned b = 0; b < 256; b++)
            crc32c_shift_tab[k][b] = crc32c_zeros((uint32_t)b << (8 * k));
}

static uint32_t crc32c_shift(uint32_t r)
{
    return crc32c_shift_tab[0][r & 0xff] ^ crc32c_shift_tab[1][(r >> 8) & 0xff] ^
           crc32c_shift_tab[2][(r >> 16) & 0xff] ^ crc32c_shift_tab[3][r >> 24];
}
#endif

static void crc_init(void)
{
    for (unsigned i = 0; i < 256; i++) {
        uint16_t c16 = (uint16_t)i;
        uint32_t c32 = i;
        for (int k = 0; k < 8; k++) {
            c16 = (c16 & 1) ? (uint16_t)((c16 >> 1) ^ 0x8408) : (uint16_t)(c16 >> 1);
            c32 = (c32 & 1) ? (c32 >> 1) ^ 0x82F63B78u : c32 >> 1;
        }
        crc16_tab[i] = c16;
        uint16_t m16 = (uint16_t)(i << 8);
        for (int k = 0; k < 8; k++)
            m16 = (m16 & 0x8000) ? (uint16_t)((m16 << 1) ^ 0x1021) : (uint16_t)(m16 << 1);
        crc16_msb_tab[i] = m16;
        crc32c_tab[0][i] = c32;
    }
    /* Slicing-by-8 tables: tab[k][i] is the CRC of byte i followed by k zeros. */
    for (unsigned i = 0; i < 256; i++)
        for (int k = 1; k < 8; k++)
            crc32c_tab[k][i] =
                (crc32c_tab[k - 1][i] >> 8) ^ crc32c_tab[0][crc32c_tab[k - 1][i] & 0xff];
#if defined(__x86_64__)
    __builtin_cpu_init();
    crc32c_hw = __builtin_cpu_supports("sse4.2");
    if (crc32c_hw)
        crc32c_shift_init();
#endif
}

TERN_API uint16_t tern_crc16_x25(uint16_t crc, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    pthread_once(&crc_once, crc_init);
    crc = (uint16_t)~crc;
    while (len--)
        crc = (uint16_t)((crc >> 8) ^ crc16_tab[(crc ^ *p++) & 0xff]);
    return (uint16_t)~crc;
}

TERN_API uint16_t tern_crc16_ccitt_false(uint16_t crc, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    pthread_once(&crc_once, crc_init);
    while (len--)
        crc = (uint16_t)((crc << 8) ^ crc16_msb_tab[((crc >> 8) ^ *p++) & 0xff]);
    return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t
crc32c_sse42(uint32_t c, const uint8_t *p, size_t len)
{
    while (len >= 3 * LANE) {
        uint64_t a = c, b = 0, d = 0;
        for (size_t i = 0; i < LANE; i += 8) {
            uint64_t wa, wb, wd;
            memcpy(&wa, p + i, 8);
            memcpy(&wb, p + LANE + i, 8);
            memcpy(&wd, p + 2 * LANE + i, 8);
            a = __builtin_ia32_crc32di(a, wa);
            b = __builtin_ia32_crc32di(b, wb);
            d = __builtin_ia32_crc32di(d, wd);
        }
        c = crc32c_shift((uint32_t)a) ^ (uint32_t)b;
        c = crc32c_shift(c) ^ (uint32_t)d;
        p += 3 * LANE;
        len -= 3 * LANE;
    }
    uint64_t c64 = c;
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c64 = __builtin_ia32_crc32di(c64, w);
        p += 8;
        len -= 8;
    }
    c = (uint32_t)c64;
    while (len--)
        c = __builtin_ia32_crc32qi(c, *p++);
    return c;
}
#endif

static uint32_t crc32c_sw(uint32_t c, const uint8_t *p, size_t len)
{
    while (len >= 8) {
        uint32_t lo, hi;
        memcpy(&lo, p, 4);
        memcpy(&hi, p + 4, 4);
        lo ^= c; /* little-endian hosts only; Tern targets x86-64 and arm64 LE */
        c = crc32c_tab[7][lo & 0xff] ^ crc32c_tab[6][(lo >> 8) & 0xff] ^
            crc32c_tab[5][(lo >> 16) & 0xff] ^ crc32c_tab[4][lo >> 24] ^
            crc32c_tab[3][hi & 0xff] ^ crc32c_tab[2][(hi >> 8) & 0xff] ^
            crc32c_tab[1][(hi >> 16) & 0xff] ^ crc32c_tab[0][hi >> 24];
        p += 8;
        len -= 8;
    }
    while (len--)
        c = (c >> 8) ^ crc32c_tab[0][(c ^ *p++) & 0xff];
    return c;
}

/* Exposed for the unit test that checks both paths agree. */
TERN_API uint32_t tern__crc32c_sw(uint32_t crc, const void *buf, size_t len);
TERN_API uint32_t tern__crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
    pthread_once(&crc_once, crc_init);
    return ~crc32c_sw(~crc, buf, len);
}

TERN_API uint32_t tern_crc32c(uint32_t crc, const void *buf, size_t len)
{
    pthread_once(&crc_once, crc_init);
#if defined(__x86_64__)
    if (crc32c_hw)
        return ~crc32c_sse42(~crc, buf, len);
#endif
    return ~crc32c_sw(~crc, buf, len);
}

/* Combining: appending len zero bytes to a CRC register is a linear map over
 * GF(2), a 32x32 matrix; squaring it doubles the bytes it stands for, so the
 * map for any length is built from log2(len) squarings. */
static uint32_t gf2_times(const uint32_t *mat, uint32_t vec)
{
    uint32_t sum = 0;
    for (; vec; vec >>= 1, mat++)
        if (vec & 1)
            sum ^= *mat;
    return sum;
}

static void gf2_square(uint32_t *sq, const uint32_t *mat)
{
    for (int n = 0; n < 32; n++)
        sq[n] = gf2_times(mat, mat[n]);
}

TERN_API uint32_t tern_crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b)
{
    uint32_t even[32], odd[32];
    if (len_b == 0)
        return crc_a;
    odd[0] = 0x82F63B78u; /* one zero bit */
    for (int n = 1; n < 32; n++)
        odd[n] = 1u << (n - 1);
    gf2_square(even, odd); /* two bits */
    gf2_square(odd, even); /* four bits */
    for (;;) {
        gf2_square(even, odd); /* one byte, then 4, 16, ... */
        if (len_b & 1)
            crc_a = gf2_times(even, crc_a);
        if (!(len_b >>= 1))
            break;
        gf2_square(odd, even);
        if (len_b & 1)
            crc_a = gf2_times(odd, crc_a);
        if (!(len_b >>= 1))
            break;
    }
    return crc_a ^ crc_b;
}

TERN_API uint32_t tern_crc32(uint32_t crc, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    /* zlib takes uInt lengths; feed very large buffers in pieces. */
    while (len > 0) {
        uInt n = len > (1u << 30) ? (1u << 30) : (uInt)len;
        crc = (uint32_t)crc32(crc, p, n);
        p += n;
        len -= n;
    }
    return crc;
}
