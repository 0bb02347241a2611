/* CBOR (RFC 8949): encoder, decoder cursor, well-formedness check, diagnostic
 * notation. No allocation, no global state, no libm. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tern/cbor.h"

#define MASK(n) ((UINT64_C(1) << (n)) - 1)

static uint64_t dbits(double v)
{
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    return b;
}

static double bitsd(uint64_t b)
{
    double v;
    memcpy(&v, &b, sizeof v);
    return v;
}

static inline uint64_t rd_be(const uint8_t *p, unsigned n)
{
    switch (n) {
    case 1:
        return p[0];
    case 2:
        return (uint64_t)p[0] << 8 | p[1];
    case 4:
        return (uint64_t)p[0] << 24 | (uint64_t)p[1] << 16 | (uint64_t)p[2] << 8 | p[3];
    default:
        return rd_be(p, 4) << 32 | rd_be(p + 4, 4);
    }
}

/* ================================================================ encoder */

TERN_API void tern_cbor_enc_init(tern_cbor_enc *e, uint8_t *buf, size_t cap)
{
    e->buf = buf;
    e->cap = buf ? cap : 0;
    e->len = 0;
    e->err = 0;
}

TERN_API int tern_cbor_enc_finish(const tern_cbor_enc *e, size_t *len)
{
    if (len)
        *len = e->len;
    if (e->err)
        return e->err;
    return e->len > e->cap ? TERN_ENOSPACE : 0;
}

static void enc_seterr(tern_cbor_enc *e, int err)
{
    if (!e->err)
        e->err = err;
}

/* Appends n bytes, or only counts them once the buffer is full. */
static inline void enc_put(tern_cbor_enc *e, const void *p, size_t n)
{
    if (n > SIZE_MAX - e->len) {
        enc_seterr(e, TERN_EOVERFLOW);
        return;
    }
    if (n && e->len <= e->cap && n <= e->cap - e->len)
        memcpy(e->buf + e->len, p, n);
    e->len += n;
}

static inline void enc_byte(tern_cbor_enc *e, uint8_t b)
{
    if (e->len < e->cap)
        e->buf[e->len] = b;
    if (e->len == SIZE_MAX) {
        enc_seterr(e, TERN_EOVERFLOW);
        return;
    }
    e->len++;
}

/* Head with the shortest argument encoding (preferred serialization). */
static inline void enc_head(tern_cbor_enc *e, unsigned major, uint64_t v)
{
    uint8_t t[9];
    size_t n;
    uint8_t mt = (uint8_t)(major << 5);
    if (v < 24) {
        enc_byte(e, (uint8_t)(mt | v));
        return;
    }
    if (v <= 0xff) {
        t[0] = mt | 24;
        n = 1;
    } else if (v <= 0xffff) {
        t[0] = mt | 25;
        n = 2;
    } else if (v <= 0xffffffff) {
        t[0] = mt | 26;
        n = 4;
    } else {
        t[0] = mt | 27;
        n = 8;
    }
    for (size_t i = 0; i < n; i++)
        t[1 + i] = (uint8_t)(v >> (8 * (n - 1 - i)));
    enc_put(e, t, n + 1);
}

static void enc_fixed(tern_cbor_enc *e, uint8_t ib, uint64_t v, unsigned n)
{
    uint8_t t[9];
    t[0] = ib;
    for (unsigned i = 0; i < n; i++)
        t[1 + i] = (uint8_t)(v >> (8 * (n - 1 - i)));
    enc_put(e, t, n + 1);
}

TERN_API void tern_cbor_enc_uint(tern_cbor_enc *e, uint64_t v)
{
    enc_head(e, TERN_CBOR_MT_UINT, v);
}

TERN_API void tern_cbor_enc_negint(tern_cbor_enc *e, uint64_t n)
{
    enc_head(e, TERN_CBOR_MT_NEGINT, n);
}

TERN_API void tern_cbor_enc_int(tern_cbor_enc *e, int64_t v)
{
    if (v >= 0)
        enc_head(e, TERN_CBOR_MT_UINT, (uint64_t)v);
    else
        enc_head(e, TERN_CBOR_MT_NEGINT, ~(uint64_t)v); /* -1 - v */
}

TERN_API void tern_cbor_enc_bytes(tern_cbor_enc *e, const void *p, size_t n)
{
    enc_head(e, TERN_CBOR_MT_BYTES, n);
    enc_put(e, p, n);
}

TERN_API void tern_cbor_enc_text(tern_cbor_enc *e, const char *s, size_t n)
{
    enc_head(e, TERN_CBOR_MT_TEXT, n);
    enc_put(e, s, n);
}

TERN_API void tern_cbor_enc_cstr(tern_cbor_enc *e, const char *s)
{
    tern_cbor_enc_text(e, s, strlen(s));
}

TERN_API void tern_cbor_enc_bytes_head(tern_cbor_enc *e, uint64_t n)
{
    enc_head(e, TERN_CBOR_MT_BYTES, n);
}

TERN_API void tern_cbor_enc_text_head(tern_cbor_enc *e, uint64_t n)
{
    enc_head(e, TERN_CBOR_MT_TEXT, n);
}

TERN_API void tern_cbor_enc_raw(tern_cbor_enc *e, const void *p, size_t n)
{
    enc_put(e, p, n);
}

TERN_API uint8_t *tern_cbor_enc_reserve(tern_cbor_enc *e, size_t n)
{
    if (n > SIZE_MAX - e->len) {
        enc_seterr(e, TERN_EOVERFLOW);
        return NULL;
    }
    uint8_t *p = NULL;
    if (e->buf && e->len <= e->cap && n <= e->cap - e->len)
        p = e->buf + e->len;
    e->len += n;
    return p;
}

TERN_API void tern_cbor_enc_array(tern_cbor_enc *e, uint64_t n)
{
    enc_head(e, TERN_CBOR_MT_ARRAY, n);
}

TERN_API void tern_cbor_enc_map(tern_cbor_enc *e, uint64_t n)
{
    enc_head(e, TERN_CBOR_MT_MAP, n);
}

TERN_API void tern_cbor_enc_array_indef(tern_cbor_enc *e)
{
    enc_byte(e, 0x9f);
}

TERN_API void tern_cbor_enc_map_indef(tern_cbor_enc *e)
{
    enc_byte(e, 0xbf);
}

TERN_API void tern_cbor_enc_bytes_indef(tern_cbor_enc *e)
{
    enc_byte(e, 0x5f);
}

TERN_API void tern_cbor_enc_text_indef(tern_cbor_enc *e)
{
    enc_byte(e, 0x7f);
}

TERN_API void tern_cbor_enc_break(tern_cbor_enc *e)
{
    enc_byte(e, 0xff);
}

TERN_API void tern_cbor_enc_tag(tern_cbor_enc *e, uint64_t tag)
{
    enc_head(e, TERN_CBOR_MT_TAG, tag);
}

TERN_API void tern_cbor_enc_simple(tern_cbor_enc *e, uint8_t v)
{
    if (v >= 24 && v < 32) {
        enc_seterr(e, -EINVAL);
        return;
    }
    enc_head(e, TERN_CBOR_MT_SIMPLE, v);
}

TERN_API void tern_cbor_enc_bool(tern_cbor_enc *e, bool v)
{
    enc_byte(e, v ? 0xf5 : 0xf4);
}

TERN_API void tern_cbor_enc_null(tern_cbor_enc *e)
{
    enc_byte(e, 0xf6);
}

TERN_API void tern_cbor_enc_undefined(tern_cbor_enc *e)
{
    enc_byte(e, 0xf7);
}

/* The half-precision pattern of v if it holds v exactly. */
static bool double_to_half(double v, uint16_t *out)
{
    uint64_t b = dbits(v);
    uint16_t sign = (uint16_t)((b >> 48) & 0x8000);
    int e = (int)((b >> 52) & 0x7ff);
    uint64_t m = b & MASK(52);
    if (e == 0x7ff) { /* inf, NaN: the payload must fit in 10 bits */
        if (m & MASK(42))
            return false;
        *out = (uint16_t)(sign | 0x7c00 | (m >> 42));
        return true;
    }
    if (e == 0) { /* zero; double subnormals are far below half's range */
        if (m)
            return false;
        *out = sign;
        return true;
    }
    int ue = e - 1023;
    if (ue > 15 || ue < -24)
        return false;
    if (ue >= -14) {
        if (m & MASK(42))
            return false;
        *out = (uint16_t)(sign | ((ue + 15) << 10) | (m >> 42));
        return true;
    }
    /* half subnormal: k * 2^-24 with k < 1024 */
    uint64_t full = m | (UINT64_C(1) << 52);
    unsigned shift = (unsigned)(28 - ue); /* 43..52 */
    if (full & MASK(shift))
        return false;
    *out = (uint16_t)(sign | (full >> shift));
    return true;
}

/* The single-precision pattern of v if it holds v exactly. */
static bool double_to_single(double v, uint32_t *out)
{
    uint64_t b = dbits(v);
    uint32_t sign = (uint32_t)((b >> 32) & 0x80000000u);
    int e = (int)((b >> 52) & 0x7ff);
    uint64_t m = b & MASK(52);
    if (e == 0x7ff) {
        if (m & MASK(29))
            return false;
        *out = sign | 0x7f800000u | (uint32_t)(m >> 29);
        return true;
    }
    if (e == 0) {
        if (m)
            return false;
        *out = sign;
        return true;
    }
    int ue = e - 1023;
    if (ue > 127 || ue < -149)
        return false;
    if (ue >= -126) {
        if (m & MASK(29))
            return false;
        *out = sign | ((uint32_t)(ue + 127) << 23) | (uint32_t)(m >> 29);
        return true;
    }
    uint64_t full = m | (UINT64_C(1) << 52);
    unsigned shift = (unsigned)(-97 - ue); /* 30..52 */
    if (full & MASK(shift))
        return false;
    *out = sign | (uint32_t)(full >> shift);
    return true;
}

TERN_API void tern_cbor_enc_double(tern_cbor_enc *e, double v)
{
    uint16_t h;
    uint32_t s;
    if (double_to_half(v, &h))
        enc_fixed(e, 0xf9, h, 2);
    else if (double_to_single(v, &s))
        enc_fixed(e, 0xfa, s, 4);
    else
        enc_fixed(e, 0xfb, dbits(v), 8);
}

TERN_API void tern_cbor_enc_float64(tern_cbor_enc *e, double v)
{
    enc_fixed(e, 0xfb, dbits(v), 8);
}

TERN_API void tern_cbor_enc_float32(tern_cbor_enc *e, float v)
{
    uint32_t b;
    memcpy(&b, &v, sizeof b);
    enc_fixed(e, 0xfa, b, 4);
}

TERN_API void tern_cbor_enc_float16_bits(tern_cbor_enc *e, uint16_t bits)
{
    enc_fixed(e, 0xf9, bits, 2);
}

/* ================================================================ decoder */

struct head {
    uint64_t arg; /* argument; 0 for additional information 31 */
    uint8_t ib;   /* initial byte */
    uint8_t major;
    uint8_t ai;   /* additional information */
    uint8_t hlen; /* bytes in the head */
};

/* Reads the head at buf[pos]: 0, TERN_ETRUNCATED or TERN_EMALFORMED. On
 * success pos + hlen <= len. AI 31 is a break for major type 7, indefinite
 * length for types 2-5. */
static inline int rd_head(const uint8_t *buf, size_t len, size_t pos, struct head *h)
{
    if (pos >= len)
        return TERN_ETRUNCATED;
    uint8_t ib = buf[pos];
    h->ib = ib;
    h->major = ib >> 5;
    h->ai = ib & 31;
    if (h->ai < 24) {
        h->arg = h->ai;
        h->hlen = 1;
        return 0;
    }
    if (h->ai < 28) {
        unsigned n = 1u << (h->ai - 24);
        if (len - pos - 1 < n)
            return TERN_ETRUNCATED;
        h->arg = rd_be(buf + pos + 1, n);
        h->hlen = (uint8_t)(1 + n);
        /* simple values below 32 must use the one-byte form */
        if (h->major == 7 && n == 1 && h->arg < 32)
            return TERN_EMALFORMED;
        return 0;
    }
    if (h->ai < 31)
        return TERN_EMALFORMED; /* reserved */
    if (h->major <= 1 || h->major == 6)
        return TERN_EMALFORMED; /* no indefinite ints or tags */
    h->arg = 0;
    h->hlen = 1;
    return 0;
}

TERN_API void tern_cbor_dec_init(tern_cbor_dec *d, const uint8_t *buf, size_t len)
{
    d->buf = buf;
    d->len = buf ? len : 0;
    d->pos = 0;
}

TERN_API bool tern_cbor_dec_done(const tern_cbor_dec *d)
{
    return d->pos >= d->len;
}

TERN_API int tern_cbor_peek(const tern_cbor_dec *d, tern_cbor_kind *kind, bool *indef)
{
    if (d->pos >= d->len)
        return TERN_EEND;
    uint8_t ib = d->buf[d->pos];
    unsigned major = ib >> 5, ai = ib & 31;
    if (ai >= 28 && ai <= 30)
        return TERN_EMALFORMED;
    if (ai == 31 && (major <= 1 || major == 6))
        return TERN_EMALFORMED;
    tern_cbor_kind k = (tern_cbor_kind)major;
    if (major == 7) {
        if (ai == 31)
            k = TERN_CBOR_BREAK;
        else if (ai >= 25)
            k = TERN_CBOR_FLOAT;
    }
    *kind = k;
    if (indef)
        *indef = ai == 31 && major >= 2 && major <= 5;
    return 0;
}

/* Reads the head of an item of the given major type. */
static inline int take(const tern_cbor_dec *d, unsigned major, struct head *h)
{
    int rc = rd_head(d->buf, d->len, d->pos, h);
    if (rc)
        return rc;
    return h->major == major ? 0 : TERN_ETYPE;
}

TERN_API int tern_cbor_dec_uint(tern_cbor_dec *d, uint64_t *v)
{
    struct head h;
    int rc = take(d, TERN_CBOR_MT_UINT, &h);
    if (rc)
        return rc;
    *v = h.arg;
    d->pos += h.hlen;
    return 0;
}

TERN_API int tern_cbor_dec_negint(tern_cbor_dec *d, uint64_t *n)
{
    struct head h;
    int rc = take(d, TERN_CBOR_MT_NEGINT, &h);
    if (rc)
        return rc;
    *n = h.arg;
    d->pos += h.hlen;
    return 0;
}

TERN_API int tern_cbor_dec_int(tern_cbor_dec *d, int64_t *v)
{
    struct head h;
    int rc = rd_head(d->buf, d->len, d->pos, &h);
    if (rc)
        return rc;
    if (h.major > 1)
        return TERN_ETYPE;
    if (h.arg > INT64_MAX)
        return TERN_EOVERFLOW;
    *v = h.major == 0 ? (int64_t)h.arg : -1 - (int64_t)h.arg;
    d->pos += h.hlen;
    return 0;
}

static int dec_string(tern_cbor_dec *d, unsigned major, const uint8_t **p, size_t *n)
{
    struct head h;
    int rc = take(d, major, &h);
    if (rc)
        return rc;
    if (h.ai == 31)
        return TERN_ETYPE; /* indefinite: no single span to return */
    size_t start = d->pos + h.hlen;
    if (h.arg > d->len - start)
        return TERN_ETRUNCATED;
    *p = d->buf + start;
    *n = (size_t)h.arg;
    d->pos = start + (size_t)h.arg;
    return 0;
}

TERN_API int tern_cbor_dec_bytes(tern_cbor_dec *d, const uint8_t **p, size_t *n)
{
    return dec_string(d, TERN_CBOR_MT_BYTES, p, n);
}

TERN_API int tern_cbor_dec_text(tern_cbor_dec *d, const char **s, size_t *n)
{
    const uint8_t *p;
    int rc = dec_string(d, TERN_CBOR_MT_TEXT, &p, n);
    if (rc == 0)
        *s = (const char *)p;
    return rc;
}

TERN_API int tern_cbor_chunks_begin(tern_cbor_dec *d, tern_cbor_chunks *it,
                                    tern_cbor_kind kind)
{
    if (kind != TERN_CBOR_BYTES && kind != TERN_CBOR_TEXT)
        return -EINVAL;
    struct head h;
    int rc = take(d, (unsigned)kind, &h);
    if (rc)
        return rc;
    it->d = d;
    it->major = (uint8_t)kind;
    it->indef = h.ai == 31;
    it->done = 0;
    if (it->indef)
        d->pos += h.hlen;
    return 0;
}

TERN_API int tern_cbor_chunks_next(tern_cbor_chunks *it, const uint8_t **p, size_t *n)
{
    tern_cbor_dec *d = it->d;
    if (it->done)
        return TERN_EEND;
    if (!it->indef) {
        int rc = dec_string(d, it->major, p, n);
        if (rc == 0)
            it->done = 1;
        return rc;
    }
    struct head h;
    int rc = rd_head(d->buf, d->len, d->pos, &h);
    if (rc)
        return rc;
    if (h.ib == 0xff) {
        d->pos++;
        it->done = 1;
        return TERN_EEND;
    }
    if (h.major != it->major || h.ai == 31)
        return TERN_EMALFORMED;
    rc = dec_string(d, it->major, p, n);
    return rc;
}

static int dec_container(tern_cbor_dec *d, unsigned major, uint64_t *count)
{
    struct head h;
    int rc = take(d, major, &h);
    if (rc)
        return rc;
    size_t rest = d->len - d->pos - h.hlen;
    if (h.ai == 31) {
        *count = TERN_CBOR_INDEF;
    } else {
        /* every item takes at least one byte */
        uint64_t max = major == TERN_CBOR_MT_MAP ? rest / 2 : rest;
        if (h.arg > max)
            return TERN_ETRUNCATED;
        *count = h.arg;
    }
    d->pos += h.hlen;
    return 0;
}

TERN_API int tern_cbor_dec_array(tern_cbor_dec *d, uint64_t *count)
{
    return dec_container(d, TERN_CBOR_MT_ARRAY, count);
}

TERN_API int tern_cbor_dec_map(tern_cbor_dec *d, uint64_t *count)
{
    return dec_container(d, TERN_CBOR_MT_MAP, count);
}

TERN_API int tern_cbor_dec_break(tern_cbor_dec *d)
{
    if (d->pos >= d->len)
        return TERN_ETRUNCATED;
    if (d->buf[d->pos] != 0xff)
        return TERN_ETYPE;
    d->pos++;
    return 0;
}

TERN_API bool tern_cbor_at_break(const tern_cbor_dec *d)
{
    return d->pos < d->len && d->buf[d->pos] == 0xff;
}

TERN_API int tern_cbor_dec_tag(tern_cbor_dec *d, uint64_t *tag)
{
    struct head h;
    int rc = take(d, TERN_CBOR_MT_TAG, &h);
    if (rc)
        return rc;
    *tag = h.arg;
    d->pos += h.hlen;
    return 0;
}

TERN_API int tern_cbor_dec_simple(tern_cbor_dec *d, uint8_t *v)
{
    struct head h;
    int rc = take(d, TERN_CBOR_MT_SIMPLE, &h);
    if (rc)
        return rc;
    if (h.ai > 24)
        return TERN_ETYPE; /* float or break */
    *v = (uint8_t)h.arg;
    d->pos += h.hlen;
    return 0;
}

TERN_API int tern_cbor_dec_bool(tern_cbor_dec *d, bool *v)
{
    if (d->pos >= d->len)
        return TERN_ETRUNCATED;
    uint8_t ib = d->buf[d->pos];
    if (ib != 0xf4 && ib != 0xf5) {
        tern_cbor_kind k;
        int rc = tern_cbor_peek(d, &k, NULL);
        return rc ? rc : TERN_ETYPE;
    }
    *v = ib == 0xf5;
    d->pos++;
    return 0;
}

static int dec_one(tern_cbor_dec *d, uint8_t want)
{
    if (d->pos >= d->len)
        return TERN_ETRUNCATED;
    uint8_t ib = d->buf[d->pos];
    if (ib != want) {
        tern_cbor_kind k;
        int rc = tern_cbor_peek(d, &k, NULL);
        return rc ? rc : TERN_ETYPE;
    }
    d->pos++;
    return 0;
}

TERN_API int tern_cbor_dec_null(tern_cbor_dec *d)
{
    return dec_one(d, 0xf6);
}

TERN_API int tern_cbor_dec_undefined(tern_cbor_dec *d)
{
    return dec_one(d, 0xf7);
}

TERN_API double tern_cbor_half_to_double(uint16_t h)
{
    uint64_t sign = (uint64_t)(h & 0x8000) << 48;
    unsigned e = (h >> 10) & 0x1f;
    uint64_t m = h & 0x3ff;
    uint64_t b;
    if (e == 31) {
        b = sign | (UINT64_C(0x7ff) << 52) | (m << 42);
    } else if (e) {
        b = sign | ((uint64_t)(e - 15 + 1023) << 52) | (m << 42);
    } else if (m == 0) {
        b = sign;
    } else {
        /* subnormal: m * 2^-24 = 1.f * 2^(p-24), p = index of m's top bit */
        unsigned p = 9;
        while (!(m & (1u << p)))
            p--;
        b = sign | ((uint64_t)(p - 24 + 1023) << 52) | ((m << (52 - p)) & MASK(52));
    }
    return bitsd(b);
}

static double single_to_double(uint32_t b)
{
    float f;
    memcpy(&f, &b, sizeof f);
    if (f != f) { /* keep the NaN payload exactly; no FPU quieting */
        uint64_t s = (uint64_t)(b & 0x80000000u) << 32;
        return bitsd(s | (UINT64_C(0x7ff) << 52) | ((uint64_t)(b & 0x7fffff) << 29));
    }
    return (double)f;
}

TERN_API int tern_cbor_dec_double(tern_cbor_dec *d, double *v)
{
    struct head h;
    int rc = take(d, TERN_CBOR_MT_SIMPLE, &h);
    if (rc)
        return rc;
    switch (h.ai) {
    case 25:
        *v = tern_cbor_half_to_double((uint16_t)h.arg);
        break;
    case 26:
        *v = single_to_double((uint32_t)h.arg);
        break;
    case 27:
        *v = bitsd(h.arg);
        break;
    default:
        return TERN_ETYPE;
    }
    d->pos += h.hlen;
    return 0;
}

/* ====================================================== skip / well-formed */

/* After the head h of a string at *pos (already past the head), skips its
 * payload, or all chunks and the break of an indefinite string. */
static int skip_string(const uint8_t *buf, size_t len, size_t *pos, const struct head *h)
{
    if (h->ai != 31) {
        if (h->arg > len - *pos)
            return TERN_ETRUNCATED;
        *pos += (size_t)h->arg;
        return 0;
    }
    for (;;) {
        struct head c;
        int rc = rd_head(buf, len, *pos, &c);
        if (rc)
            return rc;
        if (c.ib == 0xff) {
            *pos += 1;
            return 0;
        }
        if (c.major != h->major || c.ai == 31)
            return TERN_EMALFORMED; /* chunk of another type, or nested */
        *pos += c.hlen;
        if (c.arg > len - *pos)
            return TERN_ETRUNCATED;
        *pos += (size_t)c.arg;
    }
}

/* Open containers while skipping: items (pairs for maps) still expected in a
 * definite one, and state bits. A tag is a definite frame of one item. */
#define F_INDEF 1u
#define F_MAP   2u
#define F_VALUE 4u /* map: the key is read, the value is next */

/* Skips one item at *ppos. Errors are reported in input order: the first
 * problem met while reading the item front to back wins. */
static int skip_at(const uint8_t *buf, size_t len, size_t *ppos)
{
    uint64_t left[TERN_CBOR_MAX_DEPTH];
    uint8_t st[TERN_CBOR_MAX_DEPTH];
    unsigned depth = 0;
    size_t pos = *ppos;
    for (;;) {
        struct head h;
        int rc = rd_head(buf, len, pos, &h);
        if (rc)
            return rc;
        pos += h.hlen;
        switch (h.major) {
        case 2:
        case 3:
            rc = skip_string(buf, len, &pos, &h);
            if (rc)
                return rc;
            break;
        case 4:
        case 5:
        case 6:
            if (depth == TERN_CBOR_MAX_DEPTH)
                return TERN_EDEPTH;
            if (h.major == 6) {
                left[depth] = 1;
                st[depth++] = 0;
                continue;
            }
            if (h.ai != 31 && h.arg == 0)
                break; /* empty: complete */
            left[depth] = h.arg;
            st[depth++] =
                (uint8_t)((h.ai == 31 ? F_INDEF : 0) | (h.major == 5 ? F_MAP : 0));
            continue;
        case 7:
            if (h.ai == 31) { /* break */
                if (depth == 0 || (st[depth - 1] & (F_INDEF | F_VALUE)) != F_INDEF)
                    return TERN_EMALFORMED;
                depth--;
            }
            break;
        default: /* 0, 1 */
            break;
        }
        /* one item complete: account for it in the enclosing frames */
        while (depth > 0) {
            unsigned i = depth - 1;
            if (st[i] & F_MAP) {
                st[i] ^= F_VALUE;
                if (st[i] & F_VALUE)
                    break; /* a key: its value is next */
            }
            if ((st[i] & F_INDEF) || --left[i] > 0)
                break;
            depth--; /* definite container or tag complete */
        }
        if (depth == 0) {
            *ppos = pos;
            return 0;
        }
    }
}

TERN_API int tern_cbor_skip(tern_cbor_dec *d)
{
    size_t pos = d->pos;
    int rc = skip_at(d->buf, d->len, &pos);
    if (rc == 0)
        d->pos = pos;
    return rc;
}

TERN_API int tern_cbor_wellformed(const uint8_t *buf, size_t len)
{
    size_t pos = 0;
    if (!buf)
        len = 0;
    int rc = skip_at(buf, len, &pos);
    if (rc)
        return rc;
    return pos == len ? 0 : TERN_EMALFORMED;
}

TERN_API int tern_cbor_wellformed_seq(const uint8_t *buf, size_t len)
{
    size_t pos = 0;
    if (!buf)
        len = 0;
    while (pos < len) {
        int rc = skip_at(buf, len, &pos);
        if (rc)
            return rc;
    }
    return 0;
}

/* ================================================================ UTF-8 */

/* Decodes one UTF-8 sequence from p[0..n): its length, or 0 if invalid. */
static size_t utf8_one(const uint8_t *p, size_t n, uint32_t *cp)
{
    uint8_t c = p[0];
    size_t k;
    uint32_t v, min;
    if (c < 0x80) {
        *cp = c;
        return 1;
    } else if (c >= 0xc2 && c <= 0xdf) {
        k = 2;
        v = c & 0x1f;
        min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
        k = 3;
        v = c & 0x0f;
        min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        k = 4;
        v = c & 0x07;
        min = 0x10000;
    } else {
        return 0;
    }
    if (n < k)
        return 0;
    for (size_t i = 1; i < k; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        v = (v << 6) | (p[i] & 0x3f);
    }
    if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
        return 0;
    *cp = v;
    return k;
}

TERN_API bool tern_cbor_utf8_valid(const void *p, size_t n)
{
    const uint8_t *s = p;
    size_t i = 0;
    while (i < n) {
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        uint32_t cp;
        size_t k = utf8_one(s + i, n - i, &cp);
        if (!k)
            return false;
        i += k;
    }
    return true;
}

/* ================================================== diagnostic notation */

struct out {
    char *p;
    size_t cap; /* usable bytes, excluding the terminating NUL */
    size_t len; /* full text length */
};

static void out_put(struct out *o, const char *s, size_t n)
{
    if (o->len < o->cap) {
        size_t room = o->cap - o->len;
        memcpy(o->p + o->len, s, n < room ? n : room);
    }
    o->len += n;
}

static void out_str(struct out *o, const char *s)
{
    out_put(o, s, strlen(s));
}

static void out_chr(struct out *o, char c)
{
    out_put(o, &c, 1);
}

static void out_u64(struct out *o, uint64_t v)
{
    char t[24];
    int n = snprintf(t, sizeof t, "%" PRIu64, v);
    out_put(o, t, (size_t)n);
}

static const char hexd[] = "0123456789abcdef";

static void out_hex16(struct out *o, const char *pfx, uint32_t v)
{
    char t[8];
    size_t n = strlen(pfx);
    memcpy(t, pfx, n);
    t[n] = hexd[(v >> 12) & 15];
    t[n + 1] = hexd[(v >> 8) & 15];
    t[n + 2] = hexd[(v >> 4) & 15];
    t[n + 3] = hexd[v & 15];
    out_put(o, t, n + 4);
}

static void diag_bytes(struct out *o, const uint8_t *p, size_t n)
{
    out_str(o, "h'");
    for (size_t i = 0; i < n; i++) {
        char t[2] = {hexd[p[i] >> 4], hexd[p[i] & 15]};
        out_put(o, t, 2);
    }
    out_chr(o, '\'');
}

/* JSON-style string; bytes that are not UTF-8 are shown as \xNN. */
static void diag_text(struct out *o, const uint8_t *p, size_t n)
{
    out_chr(o, '"');
    size_t i = 0;
    while (i < n) {
        uint8_t c = p[i];
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
            size_t j = i + 1;
            while (j < n && p[j] >= 0x20 && p[j] < 0x7f && p[j] != '"' && p[j] != '\\')
                j++;
            out_put(o, (const char *)p + i, j - i);
            i = j;
            continue;
        }
        uint32_t cp;
        size_t k = utf8_one(p + i, n - i, &cp);
        if (!k) {
            char t[4] = {'\\', 'x', hexd[c >> 4], hexd[c & 15]};
            out_put(o, t, 4);
            i++;
            continue;
        }
        i += k;
        switch (cp) {
        case '"':
            out_str(o, "\\\"");
            break;
        case '\\':
            out_str(o, "\\\\");
            break;
        case '\b':
            out_str(o, "\\b");
            break;
        case '\f':
            out_str(o, "\\f");
            break;
        case '\n':
            out_str(o, "\\n");
            break;
        case '\r':
            out_str(o, "\\r");
            break;
        case '\t':
            out_str(o, "\\t");
            break;
        default:
            if (cp >= 0x10000) {
                cp -= 0x10000;
                out_hex16(o, "\\u", 0xd800 + (cp >> 10));
                out_hex16(o, "\\u", 0xdc00 + (cp & 0x3ff));
            } else {
                out_hex16(o, "\\u", cp);
            }
        }
    }
    out_chr(o, '"');
}

/* Reads back mantissa digits d[0..k) times 10^(e10 - k + 1); the text has no
 * decimal point, so the locale does not matter. */
static bool reads_back(const char *d, int k, int e10, double mag)
{
    char t[48];
    memcpy(t, d, (size_t)k);
    snprintf(t + k, sizeof t - (size_t)k, "e%d", e10 - k + 1);
    return strtod(t, NULL) == mag;
}

/* Shortest decimal that reads back as v (the closest one if two do), laid out
 * as ECMAScript's Number.prototype.toString does, with ".0" added to integral
 * mantissas: 1.0, 100000.0, 0.00006103515625, 1.0e+300, 5.960464477539063e-8. */
static void diag_double(struct out *o, double v)
{
    if (v != v) {
        out_str(o, "NaN");
        return;
    }
    uint64_t b = dbits(v);
    bool neg = b >> 63;
    double mag = bitsd(b & MASK(63));
    if (b << 1 == UINT64_C(0x7ff) << 53) {
        out_str(o, neg ? "-Infinity" : "Infinity");
        return;
    }
    /* 40 significant digits of |v|: d.ddd...e+XX (any decimal point) */
    char t[64], all[48];
    snprintf(t, sizeof t, "%.39e", mag);
    int na = 0, e10 = 0;
    const char *s = t;
    for (; *s && *s != 'e'; s++)
        if (*s >= '0' && *s <= '9' && na < (int)sizeof all)
            all[na++] = *s;
    if (*s == 'e')
        e10 = atoi(s + 1);
    char dig[24];
    int k;
    for (k = 1; k <= 17; k++) {
        char hi[24];
        int hk = k, he = e10;
        memcpy(hi, all, (size_t)k);
        int i = k - 1;
        while (i >= 0 && hi[i] == '9')
            hi[i--] = '0';
        if (i >= 0) {
            hi[i]++;
        } else { /* 99.9 -> 100.0 */
            hi[0] = '1';
            hk = 1;
            he++;
        }
        bool lo_ok = reads_back(all, k, e10, mag);
        bool hi_ok = reads_back(hi, hk, he, mag);
        if (lo_ok && hi_ok) { /* both read back: the closer, or the even one */
            int cmp = 0;      /* remaining digits against one half */
            if (all[k] != '5') {
                cmp = all[k] > '5' ? 1 : -1;
            } else {
                for (int j = k + 1; j < na && !cmp; j++)
                    if (all[j] != '0')
                        cmp = 1;
            }
            if (cmp == 0)
                cmp = (all[k - 1] - '0') % 2 ? 1 : -1;
            hi_ok = cmp > 0;
            lo_ok = !hi_ok;
        }
        if (lo_ok || hi_ok) {
            if (lo_ok) {
                memcpy(dig, all, (size_t)k);
            } else {
                memcpy(dig, hi, (size_t)hk);
                k = hk;
                e10 = he;
            }
            break;
        }
    }
    if (k > 17) { /* not reached: 17 digits always read back */
        k = 17;
        memcpy(dig, all, 17);
    }
    while (k > 1 && dig[k - 1] == '0')
        k--;
    int n = e10 + 1; /* value = 0.dig * 10^n */
    char r[64];
    int m = 0;
    if (neg)
        r[m++] = '-';
    if (k <= n && n <= 21) {
        memcpy(r + m, dig, (size_t)k);
        m += k;
        for (int i = k; i < n; i++)
            r[m++] = '0';
        r[m++] = '.';
        r[m++] = '0';
    } else if (0 < n && n <= 21) {
        memcpy(r + m, dig, (size_t)n);
        m += n;
        r[m++] = '.';
        memcpy(r + m, dig + n, (size_t)(k - n));
        m += k - n;
    } else if (-6 < n && n <= 0) {
        r[m++] = '0';
        r[m++] = '.';
        for (int i = n; i < 0; i++)
            r[m++] = '0';
        memcpy(r + m, dig, (size_t)k);
        m += k;
    } else {
        r[m++] = dig[0];
        r[m++] = '.';
        if (k > 1) {
            memcpy(r + m, dig + 1, (size_t)(k - 1));
            m += k - 1;
        } else {
            r[m++] = '0';
        }
        m += snprintf(r + m, sizeof r - (size_t)m, "e%c%d", n - 1 < 0 ? '-' : '+',
                      n - 1 < 0 ? 1 - n : n - 1);
    }
    out_put(o, r, (size_t)m);
}

static int diag_at(const uint8_t *buf, size_t len, size_t *pos, struct out *o,
                   unsigned depth)
{
    struct head h;
    int rc = rd_head(buf, len, *pos, &h);
    if (rc)
        return rc;
    if (h.ib == 0xff)
        return TERN_EMALFORMED; /* break where an item is expected */
    *pos += h.hlen;
    switch (h.major) {
    case 0:
        out_u64(o, h.arg);
        return 0;
    case 1:
        if (h.arg == UINT64_MAX) {
            out_str(o, "-18446744073709551616");
        } else {
            out_chr(o, '-');
            out_u64(o, h.arg + 1);
        }
        return 0;
    case 2:
    case 3:
        if (h.ai != 31) {
            if (h.arg > len - *pos)
                return TERN_ETRUNCATED;
            if (h.major == 2)
                diag_bytes(o, buf + *pos, (size_t)h.arg);
            else
                diag_text(o, buf + *pos, (size_t)h.arg);
            *pos += (size_t)h.arg;
            return 0;
        }
        if (*pos < len && buf[*pos] == 0xff) {
            *pos += 1;
            out_str(o, h.major == 2 ? "''_" : "\"\"_");
            return 0;
        }
        out_str(o, "(_ ");
        for (int i = 0;; i++) {
            struct head c;
            rc = rd_head(buf, len, *pos, &c);
            if (rc)
                return rc;
            if (c.ib == 0xff) {
                *pos += 1;
                break;
            }
            if (c.major != h.major || c.ai == 31)
                return TERN_EMALFORMED;
            *pos += c.hlen;
            if (c.arg > len - *pos)
                return TERN_ETRUNCATED;
            if (i)
                out_str(o, ", ");
            if (h.major == 2)
                diag_bytes(o, buf + *pos, (size_t)c.arg);
            else
                diag_text(o, buf + *pos, (size_t)c.arg);
            *pos += (size_t)c.arg;
        }
        out_chr(o, ')');
        return 0;
    case 4:
    case 5: {
        bool map = h.major == 5;
        if (depth == TERN_CBOR_MAX_DEPTH)
            return TERN_EDEPTH;
        out_chr(o, map ? '{' : '[');
        if (h.ai == 31) {
            out_str(o, "_ ");
            for (int i = 0;; i++) {
                if (*pos < len && buf[*pos] == 0xff) {
                    *pos += 1;
                    break;
                }
                if (i)
                    out_str(o, ", ");
                if ((rc = diag_at(buf, len, pos, o, depth + 1)))
                    return rc;
                if (map) {
                    out_str(o, ": ");
                    if ((rc = diag_at(buf, len, pos, o, depth + 1)))
                        return rc;
                }
            }
        } else {
            /* each item takes a byte: the loop ends with the input */
            for (uint64_t i = 0; i < h.arg; i++) {
                if (i)
                    out_str(o, ", ");
                if ((rc = diag_at(buf, len, pos, o, depth + 1)))
                    return rc;
                if (map) {
                    out_str(o, ": ");
                    if ((rc = diag_at(buf, len, pos, o, depth + 1)))
                        return rc;
                }
            }
        }
        out_chr(o, map ? '}' : ']');
        return 0;
    }
    case 6:
        if (depth == TERN_CBOR_MAX_DEPTH)
            return TERN_EDEPTH;
        out_u64(o, h.arg);
        out_chr(o, '(');
        if ((rc = diag_at(buf, len, pos, o, depth + 1)))
            return rc;
        out_chr(o, ')');
        return 0;
    default:
        switch (h.ai) {
        case TERN_CBOR_FALSE:
            out_str(o, "false");
            return 0;
        case TERN_CBOR_TRUE:
            out_str(o, "true");
            return 0;
        case TERN_CBOR_NULL:
            out_str(o, "null");
            return 0;
        case TERN_CBOR_UNDEFINED:
            out_str(o, "undefined");
            return 0;
        case 25:
            diag_double(o, tern_cbor_half_to_double((uint16_t)h.arg));
            return 0;
        case 26:
            diag_double(o, single_to_double((uint32_t)h.arg));
            return 0;
        case 27:
            diag_double(o, bitsd(h.arg));
            return 0;
        default:
            out_str(o, "simple(");
            out_u64(o, h.arg);
            out_chr(o, ')');
            return 0;
        }
    }
}

/* Prints the item at *pos; returns the decoding error, *textlen the text size. */
static int diag_run(const uint8_t *buf, size_t len, size_t *pos, char *out, size_t outcap,
                    size_t *textlen)
{
    struct out o = {out, out && outcap ? outcap - 1 : 0, 0};
    int rc = diag_at(buf, len, pos, &o, 0);
    if (out && outcap)
        out[o.len < o.cap ? o.len : o.cap] = '\0';
    *textlen = o.len;
    if (rc)
        return rc;
    return o.len > o.cap ? TERN_ENOSPACE : 0;
}

TERN_API int tern_cbor_diag_item(tern_cbor_dec *d, char *out, size_t outcap,
                                 size_t *outlen)
{
    size_t pos = d->pos, n;
    int rc = diag_run(d->buf, d->len, &pos, out, outcap, &n);
    if (outlen)
        *outlen = n;
    if (rc == 0)
        d->pos = pos;
    return rc;
}

TERN_API int tern_cbor_diag(const uint8_t *buf, size_t len, char *out, size_t outcap)
{
    size_t pos = 0, n;
    if (!buf)
        len = 0;
    int rc = diag_run(buf, len, &pos, out, outcap, &n);
    if ((rc == 0 || rc == TERN_ENOSPACE) && pos != len)
        return TERN_EMALFORMED; /* bytes after the item */
    return rc;
}
