/* Private helpers of the CFDP codec: a bounded reader and writer. */
#ifndef CFDP_WIRE_H
#define CFDP_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* A cursor over p[0..len): every take is checked against what is left. */
typedef struct rd {
    const uint8_t *p;
    size_t len, pos;
} rd;

static inline size_t rd_left(const rd *r)
{
    return r->len - r->pos;
}

/* The next n bytes, or NULL if fewer are left. */
static inline const uint8_t *rd_take(rd *r, size_t n)
{
    if (n > rd_left(r))
        return NULL;
    const uint8_t *q = r->p + r->pos;
    r->pos += n;
    return q;
}

/* A big-endian number of n (1-8) bytes. */
static inline uint64_t be_get(const uint8_t *q, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v = v << 8 | q[i];
    return v;
}

static inline void be_put(uint8_t *q, uint64_t v, unsigned n)
{
    for (unsigned i = n; i-- > 0; v >>= 8)
        q[i] = (uint8_t)v;
}

/* A writer over p[0..cap); a write past cap sets over and writes nothing,
 * so a sizing pass (p NULL, cap 0) counts the bytes. */
typedef struct wr {
    uint8_t *p;
    size_t cap, len;
    int over;
} wr;

static inline void wr_bytes(wr *w, const void *src, size_t n)
{
    if (w->over || n > w->cap - w->len) {
        w->over = 1;
        w->len += n;
        return;
    }
    /* src may already be in place: the entity reads file data straight
     * into its PDU buffer, so the copy is skipped rather than overlapped */
    if (n && w->p + w->len != (const uint8_t *)src)
        memcpy(w->p + w->len, src, n);
    w->len += n;
}

static inline void wr_u8(wr *w, unsigned v)
{
    uint8_t b = (uint8_t)v;
    wr_bytes(w, &b, 1);
}

static inline void wr_be(wr *w, uint64_t v, unsigned n)
{
    uint8_t b[8];
    be_put(b, v, n);
    wr_bytes(w, b, n);
}

#endif
