/* Shared by ltpdriver and ltpcounter: the test-data format and small helpers.
 *
 * Every block (or, with --sdu, every service data unit) starts with a 28-byte
 * header, little-endian:
 *
 *   0  magic   u32  0x42544C54 ("TLTB")
 *   4  kind    u32  1: a whole block, 2: one unit of an aggregated block
 *   8  index   u64  block or unit number, from 0
 *   16 length  u64  payload bytes after the header
 *   24 crc     u32  CRC-32C of the payload
 */
#ifndef LTPTOOL_H
#define LTPTOOL_H

#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LT_MAGIC 0x42544C54u
#define LT_HDR   28
#define LT_BLOCK 1
#define LT_UNIT  2

struct lt_hdr {
    uint32_t magic, kind;
    uint64_t index, length;
    uint32_t crc;
};

/* Blocks are allocated and freed at a high rate: keep freed memory in the
 * process (no mmap per block, no trimming), so the next block reuses warm
 * pages instead of faulting fresh ones (measured: about half the driver's
 * time went to page faults). A process setting, so it lives in the tools. */
static inline void lt_tune_malloc(void)
{
    mallopt(M_MMAP_THRESHOLD, 256 << 20);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

static inline void lt_put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline void lt_put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint32_t lt_get32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static inline uint64_t lt_get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static inline void lt_hdr_put(uint8_t *p, const struct lt_hdr *h)
{
    lt_put32(p, h->magic);
    lt_put32(p + 4, h->kind);
    lt_put64(p + 8, h->index);
    lt_put64(p + 16, h->length);
    lt_put32(p + 24, h->crc);
}

static inline void lt_hdr_get(const uint8_t *p, struct lt_hdr *h)
{
    h->magic = lt_get32(p);
    h->kind = lt_get32(p + 4);
    h->index = lt_get64(p + 8);
    h->length = lt_get64(p + 16);
    h->crc = lt_get32(p + 24);
}

static inline double lt_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A whole number with an optional k/M/G suffix (powers of 1000) or
 * Ki/Mi/Gi (powers of 1024). */
static inline int lt_parse_size(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || s[0] == '-')
        return -1;
    uint64_t m = 1;
    if (*end == 'k' || *end == 'K')
        m = 1000, end++;
    else if (*end == 'M')
        m = 1000000, end++;
    else if (*end == 'G')
        m = 1000000000, end++;
    if (*end == 'i' && m > 1) {
        m = m == 1000 ? 1024 : m == 1000000 ? 1048576 : 1073741824;
        end++;
    }
    if (*end)
        return -1;
    if (m > 1 && v > UINT64_MAX / m)
        return -1;
    *out = (uint64_t)v * m;
    return 0;
}

/* "<engine>" or "<engine>:<host>:<port>" (host may be [v6]). */
static inline int lt_parse_peer(const char *s, uint64_t *engine, const char **addr)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || !v || s[0] == '-')
        return -1;
    *engine = v;
    if (*end == '\0') {
        *addr = NULL;
        return 0;
    }
    if (*end != ':' || !end[1])
        return -1;
    *addr = end + 1;
    return 0;
}

#endif
