/* File checksums for CFDP: modular, Proximity-1 CRC-32, CRC-32C, CRC-32, null.
 *
 * The CRCs are fed out of order by linearity: the register of a file is the
 * XOR of each segment's register (taken from zero) moved to the file's end,
 * and moving a register past n zero bytes is a product with x^(8n) modulo
 * the generator. Tables of x^(8 * 2^k) for k < 64 are built once
 * (pthread_once), so a move costs one product per set bit of n.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "cfdp_cksum.h"
#include "cfdp_pdu.h"
#include "tern/ckd.h"
#include "tern/crc.h"

#define POLY_CRC32C 0x82F63B78u /* reflected 0x1EDC6F41 */
#define POLY_CRC32  0xEDB88320u /* reflected 0x04C11DB7 */
#define POLY_PROX1  0x00A00805u /* MSB first */

enum { CRC_C, CRC_IEEE, CRC_PROX1, NCRC };

struct crc_def {
    uint32_t poly;
    int reflected;
    uint32_t init, xorout;
};

static const struct crc_def crcs[NCRC] = {
    [CRC_C] = {POLY_CRC32C, 1, 0xFFFFFFFFu, 0xFFFFFFFFu},
    [CRC_IEEE] = {POLY_CRC32, 1, 0xFFFFFFFFu, 0xFFFFFFFFu},
    [CRC_PROX1] = {POLY_PROX1, 0, 0, 0},
};

static uint32_t xpow_tab[NCRC][64]; /* x^(8 * 2^k) mod poly */
static uint32_t prox1_tab[256];
static pthread_once_t tab_once = PTHREAD_ONCE_INIT;

/* a * b modulo the generator. Reflected: bit 31 is x^0; else bit 0 is x^0. */
static uint32_t mulmod(const struct crc_def *d, uint32_t a, uint32_t b)
{
    uint32_t prod = 0;
    for (int k = 0; k < 32; k++) {
        if (d->reflected) {
            if (a & (0x80000000u >> k))
                prod ^= b;
            b = (b & 1) ? (b >> 1) ^ d->poly : b >> 1;
        } else {
            if (a & (1u << k))
                prod ^= b;
            b = (b & 0x80000000u) ? (b << 1) ^ d->poly : b << 1;
        }
    }
    return prod;
}

static void tab_init(void)
{
    for (int i = 0; i < NCRC; i++) {
        const struct crc_def *d = &crcs[i];
        uint32_t x8 = d->reflected ? 0x80000000u >> 8 : 1u << 8;
        xpow_tab[i][0] = x8;
        for (int k = 1; k < 64; k++)
            xpow_tab[i][k] = mulmod(d, xpow_tab[i][k - 1], xpow_tab[i][k - 1]);
    }
    for (unsigned b = 0; b < 256; b++) {
        uint32_t r = (uint32_t)b << 24;
        for (int k = 0; k < 8; k++)
            r = (r & 0x80000000u) ? (r << 1) ^ POLY_PROX1 : r << 1;
        prox1_tab[b] = r;
    }
}

/* The register r moved past n zero bytes. */
static uint32_t shift(int which, uint32_t r, uint64_t n)
{
    const struct crc_def *d = &crcs[which];
    for (int k = 0; n && r; k++, n >>= 1)
        if (n & 1)
            r = mulmod(d, r, xpow_tab[which][k]);
    return r;
}

/* The register r continued over data (no preset, no final XOR). */
static uint32_t feed(int which, uint32_t r, const uint8_t *p, size_t len)
{
    switch (which) {
    case CRC_C:
        return ~tern_crc32c(~r, p, len);
    case CRC_IEEE:
        return ~tern_crc32(~r, p, len);
    default:
        while (len--)
            r = (r << 8) ^ prox1_tab[(r >> 24) ^ *p++];
        return r;
    }
}

static int crc_of(unsigned type)
{
    switch (type) {
    case CFDP_CKSUM_CRC32C:
        return CRC_C;
    case CFDP_CKSUM_CRC32:
        return CRC_IEEE;
    case CFDP_CKSUM_PROX1:
        return CRC_PROX1;
    default:
        return -1;
    }
}

TERN_API int cfdp_cksum_supported(unsigned type)
{
    return type == CFDP_CKSUM_MODULAR || type == CFDP_CKSUM_NULL || crc_of(type) >= 0;
}

TERN_API int cfdp_cksum_init(cfdp_cksum *c, unsigned type)
{
    memset(c, 0, sizeof *c);
    if (!cfdp_cksum_supported(type))
        return -ENOTSUP;
    pthread_once(&tab_once, tab_init);
    c->type = (uint8_t)type;
    return 0;
}

/* Byte at file offset off weighs 2^(8 * (3 - off % 4)) in its word. */
static uint32_t modular_add(uint32_t sum, uint64_t off, const uint8_t *p, size_t len)
{
    while (len && (off & 3)) {
        sum += (uint32_t)*p++ << (8 * (3 - (off & 3)));
        off++;
        len--;
    }
    while (len >= 4) {
        sum += (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
        p += 4;
        len -= 4;
    }
    for (unsigned k = 0; k < len; k++)
        sum += (uint32_t)p[k] << (8 * (3 - k));
    return sum;
}

TERN_API int cfdp_cksum_update(cfdp_cksum *c, uint64_t offset, const void *data,
                               size_t len)
{
    uint64_t end;
    if (tern_ckd_add(&end, offset, len))
        return TERN_EOVERFLOW;
    if (!len)
        return 0;
    int which = crc_of(c->type);
    if (c->type == CFDP_CKSUM_MODULAR) {
        c->value = modular_add(c->value, offset, data, len);
    } else if (which >= 0) {
        pthread_once(&tab_once, tab_init);
        if (offset == c->end) {
            c->value = feed(which, c->value, data, len);
        } else {
            uint32_t seg = feed(which, 0, data, len);
            if (end >= c->end)
                c->value = shift(which, c->value, end - c->end) ^ seg;
            else
                c->value ^= shift(which, seg, c->end - end);
        }
    }
    if (end > c->end)
        c->end = end;
    return 0;
}

TERN_API int cfdp_cksum_final(const cfdp_cksum *c, uint64_t file_size, uint32_t *out)
{
    if (c->end > file_size)
        return TERN_EMALFORMED;
    int which = crc_of(c->type);
    if (which < 0) {
        *out = c->type == CFDP_CKSUM_MODULAR ? c->value : 0;
        return 0;
    }
    pthread_once(&tab_once, tab_init);
    const struct crc_def *d = &crcs[which];
    /* register from the preset over the whole file: the preset's own path
     * through file_size bytes plus the data's */
    uint32_t r =
        shift(which, c->value, file_size - c->end) ^ shift(which, d->init, file_size);
    *out = r ^ d->xorout;
    return 0;
}

TERN_API int cfdp_cksum_buf(unsigned type, const void *buf, size_t len, uint32_t *out)
{
    cfdp_cksum c;
    int rc = cfdp_cksum_init(&c, type);
    if (rc == 0)
        rc = cfdp_cksum_update(&c, 0, buf, len);
    if (rc == 0)
        rc = cfdp_cksum_final(&c, len, out);
    return rc;
}
