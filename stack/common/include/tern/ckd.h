/*
 * tern/ckd.h — checked arithmetic for sizes and offsets taken from the wire.
 *
 * Every number a peer sends is hostile until bounded: an offset of 2^63 - 1
 * plus a length of 10 wraps, and so does a buffer that doubles until it
 * holds it. These helpers are the one place such sums and products are
 * formed. Each returns true when the exact result does not fit (C23's
 * ckd_add convention), leaving *r unspecified; callers treat that as
 * malformed input, never as a value.
 */
#ifndef TERN_CKD_H
#define TERN_CKD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** *r = a + b; true if it overflows. */
static inline bool tern_ckd_add(uint64_t *r, uint64_t a, uint64_t b)
{
    return __builtin_add_overflow(a, b, r);
}

/** *r = a * b; true if it overflows. */
static inline bool tern_ckd_mul(uint64_t *r, uint64_t a, uint64_t b)
{
    return __builtin_mul_overflow(a, b, r);
}

/** *r = a + b in size_t; true if it overflows. */
static inline bool tern_ckd_add_size(size_t *r, size_t a, size_t b)
{
    return __builtin_add_overflow(a, b, r);
}

/** *r = a * b in size_t; true if it overflows. */
static inline bool tern_ckd_mul_size(size_t *r, size_t a, size_t b)
{
    return __builtin_mul_overflow(a, b, r);
}

/** True if [off, off + len) lies inside [0, limit) without overflowing:
 * the test for "this extent fits what I can hold". */
static inline bool tern_ckd_extent_ok(uint64_t off, uint64_t len, uint64_t limit)
{
    return off <= limit && len <= limit - off;
}

/** The smallest power-of-two multiple of start (start > 0) that is >= need,
 * or 0 if need exceeds max (or the doubling would overflow): for buffers
 * that grow by doubling up to a bound. */
static inline uint64_t tern_ckd_grow(uint64_t start, uint64_t need, uint64_t max)
{
    if (!start || need > max)
        return 0;
    uint64_t c = start;
    while (c < need) {
        if (c > max / 2)
            return need; /* the last doubling would pass max: exactly need */
        c *= 2;
    }
    return c > max ? max : c;
}

#endif
