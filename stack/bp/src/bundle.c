/* BPv7 bundle codec (RFC 9171 sections 4 and 6.1).
 *
 * A bundle is a CBOR array (indefinite-length by the RFC, definite accepted)
 * of the primary block followed by canonical blocks, the payload block last.
 * Primary: [version, flags, crc type, dest, src, report-to, [time, seq],
 * lifetime, (fragment offset, total ADU length), (crc)]. Canonical:
 * [type, number, flags, crc type, data (byte string), (crc)]. A CRC is
 * computed over the block's whole encoding with the CRC byte string's value
 * zeroed, and is sent big-endian.
 */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "bp_bundle.h"
#include "tern/ckd.h"
#include "tern/crc.h"

#define FAIL(code, reason)                                                               \
    do {                                                                                 \
        if (why)                                                                         \
            *why = (reason);                                                             \
        return (code);                                                                   \
    } while (0)

/* Returns rc with *why set to reason if rc is an error. */
static int fail_if(int rc, const char **why, const char *reason)
{
    if (rc < 0 && why)
        *why = reason;
    return rc;
}

/* ---- endpoint IDs ------------------------------------------------------- */

TERN_API void bp_eid_ipn(bp_eid *e, uint64_t node, uint64_t service)
{
    memset(e, 0, sizeof *e);
    e->scheme = BP_SCHEME_IPN;
    e->node = node;
    e->service = service;
}

TERN_API void bp_eid_none(bp_eid *e)
{
    memset(e, 0, sizeof *e);
    e->scheme = BP_SCHEME_DTN;
}

TERN_API bool bp_eid_is_none(const bp_eid *e)
{
    return e->scheme == BP_SCHEME_DTN && e->ssp_len == 0;
}

TERN_API bool bp_eid_equal(const bp_eid *a, const bp_eid *b)
{
    if (a->scheme != b->scheme)
        return false;
    if (a->scheme == BP_SCHEME_DTN)
        return a->ssp_len == b->ssp_len && memcmp(a->ssp, b->ssp, a->ssp_len) == 0;
    return a->node == b->node && a->service == b->service;
}

/* Checks a dtn scheme-specific part other than none: "//" node "/" demux,
 * node non-empty and without '/', no control characters, valid UTF-8. */
static int dtn_ssp_check(const char *s, size_t n, const char **why)
{
    if (n > BP_DTN_SSP_MAX)
        FAIL(TERN_EOVERFLOW, "dtn EID too long");
    if (n < 4 || s[0] != '/' || s[1] != '/')
        FAIL(TERN_ESYNTAX, "dtn EID not \"//node/demux\"");
    size_t i = 2;
    while (i < n && s[i] != '/')
        i++;
    if (i == 2 || i == n)
        FAIL(TERN_ESYNTAX, "dtn EID without node name or '/'");
    for (size_t k = 0; k < n; k++) {
        unsigned char c = (unsigned char)s[k];
        if (c < 0x20 || c == 0x7f)
            FAIL(TERN_ESYNTAX, "dtn EID has a control character");
    }
    if (!tern_cbor_utf8_valid(s, n))
        FAIL(TERN_ESYNTAX, "dtn EID not UTF-8");
    return 0;
}

/* Parses a decimal uint64 of s[0..n): digits only, no leading zero. */
static int parse_u64(const char *s, size_t n, uint64_t *v, const char **why)
{
    if (n == 0)
        FAIL(TERN_ESYNTAX, "EID number missing");
    if (n > 1 && s[0] == '0')
        FAIL(TERN_ESYNTAX, "EID number has a leading zero");
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            FAIL(TERN_ESYNTAX, "EID number not decimal");
        unsigned d = (unsigned)(s[i] - '0');
        if (x > (UINT64_MAX - d) / 10)
            FAIL(TERN_EOVERFLOW, "EID number too large");
        x = x * 10 + d;
    }
    *v = x;
    return 0;
}

TERN_API int bp_eid_parse(const char *text, bp_eid *e, const char **why)
{
    if (!text || !e)
        FAIL(-EINVAL, "no EID text");
    size_t n = strlen(text);
    bp_eid t;
    memset(&t, 0, sizeof t);
    if (n >= 4 && (memcmp(text, "ipn:", 4) == 0 || memcmp(text, "imc:", 4) == 0)) {
        t.scheme = text[1] == 'p' ? BP_SCHEME_IPN : BP_SCHEME_IMC;
        const char *p = text + 4, *end = text + n;
        const char *dot = memchr(p, '.', n - 4);
        if (!dot)
            FAIL(TERN_ESYNTAX, "ipn/imc EID without '.'");
        const char *dot2 = memchr(dot + 1, '.', (size_t)(end - dot - 1));
        int rc;
        if (dot2 && t.scheme == BP_SCHEME_IPN) {
            /* RFC 9758: allocator.node.service, the first two 32-bit */
            uint64_t alloc, node;
            rc = parse_u64(p, (size_t)(dot - p), &alloc, why);
            if (rc == 0)
                rc = parse_u64(dot + 1, (size_t)(dot2 - dot - 1), &node, why);
            if (rc == 0)
                rc = parse_u64(dot2 + 1, (size_t)(end - dot2 - 1), &t.service, why);
            if (rc < 0)
                return rc;
            if (alloc > UINT32_MAX)
                FAIL(TERN_EOVERFLOW, "ipn allocator identifier above 2^32-1");
            if (node > UINT32_MAX)
                FAIL(TERN_EOVERFLOW, "ipn node number above 2^32-1 after an allocator");
            t.node = alloc << 32 | node;
        } else {
            rc = parse_u64(p, (size_t)(dot - p), &t.node, why);
            if (rc == 0)
                rc = parse_u64(dot + 1, (size_t)(end - dot - 1), &t.service, why);
            if (rc < 0)
                return rc;
            if (t.scheme == BP_SCHEME_IMC && t.service > UINT32_MAX)
                FAIL(TERN_EOVERFLOW, "imc service number above 2^32-1");
        }
    } else if (n >= 4 && memcmp(text, "dtn:", 4) == 0) {
        t.scheme = BP_SCHEME_DTN;
        if (strcmp(text + 4, "none") != 0) {
            int rc = dtn_ssp_check(text + 4, n - 4, why);
            if (rc < 0)
                return rc;
            memcpy(t.ssp, text + 4, n - 4);
            t.ssp_len = n - 4;
        }
    } else {
        FAIL(TERN_ESYNTAX, "unknown EID scheme");
    }
    *e = t;
    return 0;
}

TERN_API int bp_eid_print(const bp_eid *e, char *out, size_t cap)
{
    int n;
    switch (e->scheme) {
    case BP_SCHEME_IPN:
        if (e->node >> 32) { /* not the default allocator: RFC 9758's A.N.S */
            n = snprintf(out, cap, "ipn:%llu.%llu.%llu",
                         (unsigned long long)(e->node >> 32),
                         (unsigned long long)(e->node & UINT32_MAX),
                         (unsigned long long)e->service);
            break;
        }
        /* fall through */
    case BP_SCHEME_IMC:
        n = snprintf(out, cap, "%s:%llu.%llu", e->scheme == BP_SCHEME_IPN ? "ipn" : "imc",
                     (unsigned long long)e->node, (unsigned long long)e->service);
        break;
    case BP_SCHEME_DTN:
        if (e->ssp_len > BP_DTN_SSP_MAX)
            return -EINVAL;
        if (e->ssp_len == 0)
            n = snprintf(out, cap, "dtn:none");
        else
            n = snprintf(out, cap, "dtn:%.*s", (int)e->ssp_len, e->ssp);
        break;
    default:
        return -EINVAL;
    }
    if (n < 0)
        return -EINVAL;
    if ((size_t)n >= cap)
        return TERN_ENOSPACE;
    return n;
}

TERN_API int bp_eid_encode(tern_cbor_enc *enc, const bp_eid *e)
{
    if (e->scheme == BP_SCHEME_IPN) {
        if (e->ipn3 && e->service > UINT32_MAX)
            return -EINVAL; /* no such 3-element EID */
        tern_cbor_enc_array(enc, 2);
        tern_cbor_enc_uint(enc, BP_SCHEME_IPN);
        if (e->ipn3) {
            tern_cbor_enc_array(enc, 3);
            tern_cbor_enc_uint(enc, e->node >> 32);
            tern_cbor_enc_uint(enc, e->node & UINT32_MAX);
        } else {
            tern_cbor_enc_array(enc, 2);
            tern_cbor_enc_uint(enc, e->node);
        }
        tern_cbor_enc_uint(enc, e->service);
        return 0;
    }
    if (e->scheme == BP_SCHEME_IMC) { /* ION's: [3, [group, service]] */
        if (e->service > UINT32_MAX)
            return -EINVAL;
        tern_cbor_enc_array(enc, 2);
        tern_cbor_enc_uint(enc, BP_SCHEME_IMC);
        tern_cbor_enc_array(enc, 2);
        tern_cbor_enc_uint(enc, e->node);
        tern_cbor_enc_uint(enc, e->service);
        return 0;
    }
    if (e->scheme != BP_SCHEME_DTN || e->ssp_len > BP_DTN_SSP_MAX)
        return -EINVAL;
    tern_cbor_enc_array(enc, 2);
    tern_cbor_enc_uint(enc, BP_SCHEME_DTN);
    if (e->ssp_len == 0)
        tern_cbor_enc_uint(enc, 0);
    else
        tern_cbor_enc_text(enc, e->ssp, e->ssp_len);
    return 0;
}

static int eid_decode(tern_cbor_dec *d, bp_eid *e, const char **why)
{
    uint64_t n, scheme;
    int rc = tern_cbor_dec_array(d, &n);
    if (rc < 0)
        return fail_if(rc, why, "EID not an array");
    if (n != 2)
        FAIL(TERN_EMALFORMED, "EID array not of 2 items");
    rc = tern_cbor_dec_uint(d, &scheme);
    if (rc < 0)
        return fail_if(rc, why, "EID scheme not an unsigned integer");
    e->node = e->service = 0;
    e->ipn3 = false;
    e->ssp_len = 0;
    e->ssp[0] = '\0';
    if (scheme == BP_SCHEME_IPN) {
        e->scheme = BP_SCHEME_IPN;
        rc = tern_cbor_dec_array(d, &n);
        if (rc < 0)
            return fail_if(rc, why, "ipn EID SSP not an array");
        if (n != 2 && n != 3)
            FAIL(TERN_EMALFORMED,
                 "ipn EID SSP not [node, service] or [allocator, node, service]");
        uint64_t v[3];
        for (uint64_t i = 0; i < n; i++)
            if ((rc = tern_cbor_dec_uint(d, &v[i])) < 0)
                return fail_if(rc, why, "ipn EID number not an unsigned integer");
        if (n == 2) { /* [fully-qualified node number, service] */
            e->node = v[0];
            e->service = v[1];
            return 0;
        }
        /* RFC 9758's [allocator, node, service]: 32 bits each */
        if (v[0] > UINT32_MAX)
            FAIL(TERN_EOVERFLOW, "ipn allocator identifier above 2^32-1");
        if (v[1] > UINT32_MAX)
            FAIL(TERN_EOVERFLOW, "ipn node number above 2^32-1 in a 3-element EID");
        if (v[2] > UINT32_MAX)
            FAIL(TERN_EOVERFLOW, "ipn service number above 2^32-1 in a 3-element EID");
        e->node = v[0] << 32 | v[1];
        e->service = v[2];
        e->ipn3 = true;
        return 0;
    }
    if (scheme == BP_SCHEME_IMC) { /* ION's: [group, service] */
        e->scheme = BP_SCHEME_IMC;
        rc = tern_cbor_dec_array(d, &n);
        if (rc < 0)
            return fail_if(rc, why, "imc EID SSP not an array");
        if (n != 2)
            FAIL(TERN_EMALFORMED, "imc EID SSP not [group, service]");
        if ((rc = tern_cbor_dec_uint(d, &e->node)) < 0 ||
            (rc = tern_cbor_dec_uint(d, &e->service)) < 0)
            return fail_if(rc, why, "imc EID number not an unsigned integer");
        if (e->service > UINT32_MAX)
            FAIL(TERN_EOVERFLOW, "imc service number above 2^32-1");
        return 0;
    }
    if (scheme != BP_SCHEME_DTN)
        FAIL(TERN_EMALFORMED, "unsupported EID scheme");
    e->scheme = BP_SCHEME_DTN;
    tern_cbor_kind k;
    rc = tern_cbor_peek(d, &k, NULL);
    if (rc == TERN_EEND)
        rc = TERN_ETRUNCATED;
    if (rc < 0)
        return fail_if(rc, why, "dtn EID SSP missing");
    if (k == TERN_CBOR_UINT) {
        uint64_t z;
        rc = tern_cbor_dec_uint(d, &z);
        if (rc < 0)
            return fail_if(rc, why, "dtn EID SSP truncated");
        if (z != 0)
            FAIL(TERN_EMALFORMED, "dtn EID SSP integer not 0");
        return 0;
    }
    const char *s;
    size_t sn;
    rc = tern_cbor_dec_text(d, &s, &sn);
    if (rc < 0)
        return fail_if(rc, why, "dtn EID SSP not a text string or 0");
    rc = dtn_ssp_check(s, sn, why);
    if (rc < 0)
        return rc == TERN_ESYNTAX ? TERN_EMALFORMED : rc;
    memcpy(e->ssp, s, sn);
    e->ssp[sn] = '\0';
    e->ssp_len = sn;
    return 0;
}

TERN_API int bp_eid_decode(tern_cbor_dec *d, bp_eid *e, const char **why)
{
    tern_cbor_dec save = *d;
    bp_eid t;
    int rc = eid_decode(d, &t, why);
    if (rc < 0) {
        *d = save;
        return rc;
    }
    *e = t;
    return 0;
}

/* ---- bundle decoding ---------------------------------------------------- */

static size_t crc_len(uint8_t type)
{
    return type == BP_CRC_16 ? 2 : type == BP_CRC_32C ? 4 : 0;
}

/* CRC of buf[start..end) with the CRC value at crc_at (n bytes) taken as zero. */
static uint32_t crc_calc(uint8_t type, const uint8_t *buf, size_t start, size_t crc_at,
                         size_t end)
{
    static const uint8_t zero[4];
    size_t n = crc_len(type);
    if (type == BP_CRC_16) {
        uint16_t c = tern_crc16_x25(0, buf + start, crc_at - start);
        c = tern_crc16_x25(c, zero, n);
        return tern_crc16_x25(c, buf + crc_at + n, end - crc_at - n);
    }
    uint32_t c = tern_crc32c(0, buf + start, crc_at - start);
    c = tern_crc32c(c, zero, n);
    return tern_crc32c(c, buf + crc_at + n, end - crc_at - n);
}

/* Reads the CRC byte string (its value must follow immediately as the last
 * item of the block) and checks it against the block buf[start..). */
static int crc_check(tern_cbor_dec *d, uint8_t type, size_t start, uint32_t *crc,
                     const char **why)
{
    const uint8_t *p;
    size_t n;
    int rc = tern_cbor_dec_bytes(d, &p, &n);
    if (rc < 0)
        return fail_if(rc, why, "CRC not a byte string");
    if (n != crc_len(type))
        FAIL(TERN_EMALFORMED, "CRC of the wrong length for its type");
    uint32_t got = 0;
    for (size_t i = 0; i < n; i++)
        got = got << 8 | p[i];
    *crc = got;
    size_t at = (size_t)(p - d->buf);
    if (crc_calc(type, d->buf, start, at, d->pos) != got)
        FAIL(TERN_ECORRUPT, type == BP_CRC_16 ? "CRC-16 mismatch" : "CRC-32C mismatch");
    return 0;
}

static int dec_u(tern_cbor_dec *d, uint64_t *v, const char **why, const char *reason)
{
    return fail_if(tern_cbor_dec_uint(d, v), why, reason);
}

static int decode_primary(tern_cbor_dec *d, bp_primary *p, const char **why)
{
    size_t start = d->pos;
    uint64_t n, crct;
    int rc = tern_cbor_dec_array(d, &n);
    if (rc < 0)
        return fail_if(rc, why, "primary block not an array");
    if (n == TERN_CBOR_INDEF || n < 8 || n > 11)
        FAIL(TERN_EMALFORMED, "primary block not an array of 8 to 11 items");
    if ((rc = dec_u(d, &p->version, why, "primary version not an integer")) < 0)
        return rc;
    if (p->version != 7)
        FAIL(TERN_EMALFORMED, "bundle protocol version not 7");
    if ((rc = dec_u(d, &p->flags, why, "primary flags not an integer")) < 0 ||
        (rc = dec_u(d, &crct, why, "primary CRC type not an integer")) < 0)
        return rc;
    if (crct > BP_CRC_32C)
        FAIL(TERN_EMALFORMED, "primary CRC type unknown");
    p->crc_type = (uint8_t)crct;
    uint64_t want = 8 + ((p->flags & BP_FLAG_FRAGMENT) ? 2 : 0) + (crct ? 1 : 0);
    if (n != want)
        FAIL(TERN_EMALFORMED, "primary block item count disagrees with flags/CRC type");
    if ((rc = bp_eid_decode(d, &p->dest, why)) < 0 ||
        (rc = bp_eid_decode(d, &p->src, why)) < 0 ||
        (rc = bp_eid_decode(d, &p->report_to, why)) < 0)
        return rc;
    /* a group (imc) is only ever a destination: no bundle comes from one */
    if (p->src.scheme == BP_SCHEME_IMC || p->report_to.scheme == BP_SCHEME_IMC)
        FAIL(TERN_EMALFORMED, "source or report-to is a group (imc)");
    uint64_t tn;
    rc = tern_cbor_dec_array(d, &tn);
    if (rc < 0)
        return fail_if(rc, why, "creation timestamp not an array");
    if (tn != 2)
        FAIL(TERN_EMALFORMED, "creation timestamp not [time, seq]");
    if ((rc = dec_u(d, &p->ctime_ms, why, "creation time not an integer")) < 0 ||
        (rc = dec_u(d, &p->seq, why, "sequence number not an integer")) < 0 ||
        (rc = dec_u(d, &p->lifetime_ms, why, "lifetime not an integer")) < 0)
        return rc;
    p->frag_offset = p->total_adu_len = 0;
    if (p->flags & BP_FLAG_FRAGMENT) {
        if ((rc = dec_u(d, &p->frag_offset, why, "fragment offset not an integer")) < 0 ||
            (rc = dec_u(d, &p->total_adu_len, why, "total ADU length not an integer")) <
                0)
            return rc;
    }
    p->crc = 0;
    if (crct)
        return crc_check(d, p->crc_type, start, &p->crc, why);
    return 0;
}

/* Decodes a known extension block's data, which must be exactly one item. */
static int decode_known(bp_bundle *b, const bp_block *k, const char **why)
{
    tern_cbor_dec d;
    tern_cbor_dec_init(&d, k->data, k->data_len);
    int rc = 0;
    if (k->type == BP_BLOCK_PREV_NODE) {
        if (b->has_prev_node)
            FAIL(TERN_EMALFORMED, "two previous node blocks");
        rc = bp_eid_decode(&d, &b->prev_node, why);
        if (rc == 0 && b->prev_node.scheme == BP_SCHEME_IMC)
            FAIL(TERN_EMALFORMED, "previous node is a group (imc)");
        b->has_prev_node = true;
    } else if (k->type == BP_BLOCK_AGE) {
        if (b->has_age)
            FAIL(TERN_EMALFORMED, "two bundle age blocks");
        rc = dec_u(&d, &b->age_ms, why, "bundle age not an integer");
        b->has_age = true;
    } else if (k->type == BP_BLOCK_HOP_COUNT) {
        if (b->has_hop_count)
            FAIL(TERN_EMALFORMED, "two hop count blocks");
        uint64_t n;
        rc = tern_cbor_dec_array(&d, &n);
        if (rc < 0)
            return fail_if(rc == TERN_ETRUNCATED ? TERN_EMALFORMED : rc, why,
                           "hop count not an array");
        if (n != 2)
            FAIL(TERN_EMALFORMED, "hop count not [limit, count]");
        rc = dec_u(&d, &b->hop_limit, why, "hop limit not an integer");
        if (rc == 0)
            rc = dec_u(&d, &b->hop_count, why, "hop count not an integer");
        b->has_hop_count = true;
    } else {
        return 0;
    }
    /* The data is a byte string of known length: running out inside it is a
     * malformed block, not a truncated bundle. */
    if (rc == TERN_ETRUNCATED)
        rc = TERN_EMALFORMED;
    if (rc < 0)
        return rc;
    if (!tern_cbor_dec_done(&d))
        FAIL(TERN_EMALFORMED, "extension block data has trailing bytes");
    return 0;
}

static int decode_block(tern_cbor_dec *d, bp_block *k, const char **why)
{
    size_t start = d->pos;
    uint64_t n, crct;
    int rc = tern_cbor_dec_array(d, &n);
    if (rc < 0)
        return fail_if(rc, why, "block not an array");
    if (n != 5 && n != 6)
        FAIL(TERN_EMALFORMED, "block not an array of 5 or 6 items");
    if ((rc = dec_u(d, &k->type, why, "block type not an integer")) < 0 ||
        (rc = dec_u(d, &k->number, why, "block number not an integer")) < 0 ||
        (rc = dec_u(d, &k->flags, why, "block flags not an integer")) < 0 ||
        (rc = dec_u(d, &crct, why, "block CRC type not an integer")) < 0)
        return rc;
    if (crct > BP_CRC_32C)
        FAIL(TERN_EMALFORMED, "block CRC type unknown");
    k->crc_type = (uint8_t)crct;
    if (n != (crct ? 6u : 5u))
        FAIL(TERN_EMALFORMED, "block item count disagrees with CRC type");
    rc = tern_cbor_dec_bytes(d, &k->data, &k->data_len);
    if (rc < 0)
        return fail_if(rc, why, "block data not a definite byte string");
    k->crc = 0;
    if (crct)
        return crc_check(d, k->crc_type, start, &k->crc, why);
    return 0;
}

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

/* Block numbers must be unique; for many blocks, sorted in n log n rather
 * than compared pairwise (a hostile bundle of 100,000 blocks). */
static int unique_numbers(const bp_bundle *b, const char **why)
{
    size_t bytes;
    uint64_t *v =
        tern_ckd_mul_size(&bytes, b->n_blocks, sizeof *v) ? NULL : malloc(bytes);
    if (!v)
        FAIL(-ENOMEM, "no memory for the blocks");
    for (size_t i = 0; i < b->n_blocks; i++)
        v[i] = b->ext[i].number;
    qsort(v, b->n_blocks, sizeof *v, cmp_u64);
    int rc = 0;
    for (size_t i = 1; i < b->n_blocks && rc == 0; i++)
        if (v[i] == v[i - 1])
            rc = fail_if(TERN_EMALFORMED, why, "duplicate block number");
    free(v);
    return rc;
}

TERN_API int bp_bundle_reserve(bp_bundle *b, size_t n)
{
    size_t cap = b->ext ? b->ext_cap : BP_MAX_BLOCKS;
    if (n <= cap)
        return 0;
    size_t nc = cap;
    while (nc < n) {
        if (nc > SIZE_MAX / 2 / sizeof(bp_block))
            return -ENOMEM;
        nc *= 2;
    }
    bp_block *x = realloc(b->ext, nc * sizeof *x);
    if (!x)
        return -ENOMEM;
    if (!b->ext)
        memcpy(x, b->blocks, b->n_blocks * sizeof *x);
    b->ext = x;
    b->ext_cap = nc;
    return 0;
}

TERN_API void bp_bundle_release(bp_bundle *b)
{
    free(b->ext);
    b->ext = NULL;
    b->ext_cap = 0;
}

static int bundle_decode(tern_cbor_dec *d, bp_bundle *b, const char **why)
{
    uint64_t n;
    int rc = tern_cbor_dec_array(d, &n);
    if (rc < 0)
        return fail_if(rc, why, "bundle not an array");
    b->definite = n != TERN_CBOR_INDEF;
    if (b->definite && n < 2)
        FAIL(TERN_EMALFORMED, "bundle array of fewer than 2 blocks");
    if ((rc = decode_primary(d, &b->pri, why)) < 0)
        return rc;
    b->n_blocks = 0;
    bool payload = false;
    for (uint64_t i = 1;; i++) {
        if (b->definite ? i == n : tern_cbor_at_break(d))
            break;
        if (!b->definite && d->pos >= d->len)
            FAIL(TERN_ETRUNCATED, "bundle ends before its break");
        if (payload)
            FAIL(TERN_EMALFORMED, "payload block not last");
        /* RFC 9171 sets no limit on blocks: each takes at least 6 bytes of
         * the input, so the count is bounded by len / 6 and so is ext. */
        if ((rc = bp_bundle_reserve(b, b->n_blocks + 1)) < 0)
            return fail_if(rc, why, "no memory for the blocks");
        bp_block *k = &bp_bundle_blocks(b)[b->n_blocks];
        if ((rc = decode_block(d, k, why)) < 0)
            return rc;
        if (k->type == 0)
            FAIL(TERN_EMALFORMED, "canonical block of type 0 (primary)");
        if (k->type == BP_BLOCK_PAYLOAD) {
            if (k->number != 1)
                FAIL(TERN_EMALFORMED, "payload block number not 1");
            payload = true;
        } else if (k->number == 0) {
            b->renumbered++; /* numbered below, once every number is known */
        } else if (k->number == 1) {
            FAIL(TERN_EMALFORMED, "block number 1 on a non-payload block");
        }
        if (!b->ext && k->number) /* a few: compared here; many: sorted below */
            for (size_t j = 0; j < b->n_blocks; j++)
                if (b->blocks[j].number == k->number)
                    FAIL(TERN_EMALFORMED, "duplicate block number");
        b->n_blocks++;
        if ((rc = decode_known(b, k, why)) < 0)
            return rc;
    }
    if (!b->definite && (rc = tern_cbor_dec_break(d)) < 0)
        return fail_if(rc, why, "bundle array not closed");
    if (!payload)
        FAIL(TERN_EMALFORMED, "no payload block");
    if (b->renumbered) { /* after the highest number, in the order received */
        bp_block *v = bp_bundle_blocks(b);
        uint64_t next = 2;
        for (size_t i = 0; i < b->n_blocks; i++)
            if (v[i].number >= next) {
                if (v[i].number == UINT64_MAX)
                    FAIL(TERN_EMALFORMED, "block number 0 and no free number for it");
                next = v[i].number + 1;
            }
        for (size_t i = 0; i < b->n_blocks; i++)
            if (v[i].number == 0) {
                if (next == 0)
                    FAIL(TERN_EMALFORMED, "block number 0 and no free number for it");
                v[i].number = next++;
            }
    }
    if (b->ext && (rc = unique_numbers(b, why)) < 0)
        return rc;
    if (b->pri.flags & BP_FLAG_FRAGMENT) {
        uint64_t plen = bp_bundle_payload(b)->data_len;
        if (!tern_ckd_extent_ok(b->pri.frag_offset, plen, b->pri.total_adu_len))
            FAIL(TERN_EMALFORMED, "fragment extends past the total ADU length");
    }
    return 0;
}

TERN_API int bp_bundle_decode(const uint8_t *buf, size_t len, bp_bundle *b, size_t *used,
                              const char **why)
{
    if (!buf && len)
        FAIL(-EINVAL, "no input");
    tern_cbor_dec d;
    tern_cbor_dec_init(&d, buf, len);
    /* Only what decoding may leave unset is cleared: the struct is 2.5 kB and
     * an agent decodes every bundle more than once. */
    b->n_blocks = 0;
    b->ext = NULL;
    b->ext_cap = 0;
    b->has_prev_node = b->has_age = b->has_hop_count = false;
    b->age_ms = b->hop_limit = b->hop_count = 0;
    b->renumbered = 0;
    int rc = bundle_decode(&d, b, why);
    if (rc == TERN_EEND)
        rc = TERN_ETRUNCATED;
    if (rc == TERN_ETYPE)
        rc = TERN_EMALFORMED;
    if (rc < 0) {
        bp_bundle_release(b);
        return rc;
    }
    if (used)
        *used = d.pos;
    return 0;
}

/* ---- bundle encoding ---------------------------------------------------- */

/* Appends the CRC field for the block that started at start. */
static void enc_crc(tern_cbor_enc *e, uint8_t type, size_t start)
{
    size_t n = crc_len(type);
    tern_cbor_enc_bytes_head(e, n);
    size_t at = e->len;
    uint8_t *p = tern_cbor_enc_reserve(e, n);
    if (!p)
        return; /* sizing pass or out of space: the length still counts */
    memset(p, 0, n);
    uint32_t c = crc_calc(type, e->buf, start, at, e->len);
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(c >> (8 * (n - 1 - i)));
}

/* Encodes a known extension block's data into tmp; returns its length. */
static int known_data(const bp_bundle *b, uint64_t type, uint8_t *tmp, size_t cap,
                      size_t *n)
{
    tern_cbor_enc e;
    tern_cbor_enc_init(&e, tmp, cap);
    if (type == BP_BLOCK_PREV_NODE) {
        if (bp_eid_encode(&e, &b->prev_node) < 0)
            return -EINVAL;
    } else if (type == BP_BLOCK_AGE) {
        tern_cbor_enc_uint(&e, b->age_ms);
    } else {
        tern_cbor_enc_array(&e, 2);
        tern_cbor_enc_uint(&e, b->hop_limit);
        tern_cbor_enc_uint(&e, b->hop_count);
    }
    return tern_cbor_enc_finish(&e, n);
}

/* The payload block's CRC when its data is not in buf: the block runs from
 * start to the data (buf[start..head)), the data, then its CRC field. */
static void enc_crc_split(tern_cbor_enc *e, uint8_t type, size_t start, size_t head,
                          const uint8_t *data, size_t data_len)
{
    static const uint8_t zero[4];
    size_t n = crc_len(type);
    size_t field = e->len;
    tern_cbor_enc_bytes_head(e, n);
    size_t at = e->len;
    uint8_t *p = tern_cbor_enc_reserve(e, n);
    if (!p)
        return;
    uint32_t c;
    if (type == BP_CRC_16) {
        uint16_t c16 = tern_crc16_x25(0, e->buf + start, head - start);
        c16 = tern_crc16_x25(c16, data, data_len);
        c16 = tern_crc16_x25(c16, e->buf + field, at - field);
        c = tern_crc16_x25(c16, zero, n);
    } else {
        c = tern_crc32c(0, e->buf + start, head - start);
        c = tern_crc32c(c, data, data_len);
        c = tern_crc32c(c, e->buf + field, at - field);
        c = tern_crc32c(c, zero, n);
    }
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(c >> (8 * (n - 1 - i)));
}

/* Encodes b; with split set, the payload block's data is left out and
 * *split gets the offset where it belongs. */
static int encode(const bp_bundle *b, uint8_t *buf, size_t cap, size_t *len,
                  size_t *split, const char **why)
{
    const bp_primary *p = &b->pri;
    if (b->n_blocks == 0 || b->n_blocks > (b->ext ? b->ext_cap : BP_MAX_BLOCKS) ||
        bp_bundle_payload(b)->type != BP_BLOCK_PAYLOAD)
        FAIL(-EINVAL, "payload block missing or not last");
    const bp_block *blocks = bp_bundle_cblocks(b);
    if (p->crc_type > BP_CRC_32C)
        FAIL(-EINVAL, "bad primary CRC type");
    tern_cbor_enc e;
    tern_cbor_enc_init(&e, buf, cap);
    if (b->definite)
        tern_cbor_enc_array(&e, 1 + b->n_blocks);
    else
        tern_cbor_enc_array_indef(&e);

    size_t start = e.len;
    bool frag = (p->flags & BP_FLAG_FRAGMENT) != 0;
    tern_cbor_enc_array(&e, 8 + (frag ? 2 : 0) + (p->crc_type ? 1 : 0));
    tern_cbor_enc_uint(&e, p->version);
    tern_cbor_enc_uint(&e, p->flags);
    tern_cbor_enc_uint(&e, p->crc_type);
    if (bp_eid_encode(&e, &p->dest) < 0 || bp_eid_encode(&e, &p->src) < 0 ||
        bp_eid_encode(&e, &p->report_to) < 0)
        FAIL(-EINVAL, "EID not encodable (bad scheme or number)");
    tern_cbor_enc_array(&e, 2);
    tern_cbor_enc_uint(&e, p->ctime_ms);
    tern_cbor_enc_uint(&e, p->seq);
    tern_cbor_enc_uint(&e, p->lifetime_ms);
    if (frag) {
        tern_cbor_enc_uint(&e, p->frag_offset);
        tern_cbor_enc_uint(&e, p->total_adu_len);
    }
    if (p->crc_type)
        enc_crc(&e, p->crc_type, start);

    for (size_t i = 0; i < b->n_blocks; i++) {
        const bp_block *k = &blocks[i];
        if (k->crc_type > BP_CRC_32C)
            FAIL(-EINVAL, "bad block CRC type");
        if (k->type == BP_BLOCK_PAYLOAD && i + 1 != b->n_blocks)
            FAIL(-EINVAL, "payload block not last");
        start = e.len;
        tern_cbor_enc_array(&e, k->crc_type ? 6 : 5);
        tern_cbor_enc_uint(&e, k->type);
        tern_cbor_enc_uint(&e, k->number);
        tern_cbor_enc_uint(&e, k->flags);
        tern_cbor_enc_uint(&e, k->crc_type);
        if (k->type == BP_BLOCK_PREV_NODE || k->type == BP_BLOCK_AGE ||
            k->type == BP_BLOCK_HOP_COUNT) {
            uint8_t tmp[BP_DTN_SSP_MAX + 32];
            size_t n;
            if (known_data(b, k->type, tmp, sizeof tmp, &n) < 0)
                FAIL(-EINVAL, "extension block data not encodable");
            tern_cbor_enc_bytes(&e, tmp, n);
        } else {
            if (!k->data && k->data_len)
                FAIL(-EINVAL, "block data missing");
            if (split && k->type == BP_BLOCK_PAYLOAD) {
                tern_cbor_enc_bytes_head(&e, k->data_len);
                *split = e.len;
                if (k->crc_type)
                    enc_crc_split(&e, k->crc_type, start, *split, k->data, k->data_len);
                continue;
            }
            tern_cbor_enc_bytes(&e, k->data, k->data_len);
        }
        if (k->crc_type)
            enc_crc(&e, k->crc_type, start);
    }
    if (!b->definite)
        tern_cbor_enc_break(&e);
    int rc = tern_cbor_enc_finish(&e, len);
    return fail_if(rc, why, rc == TERN_ENOSPACE ? "buffer too small" : "encoding failed");
}

TERN_API int bp_bundle_encode(const bp_bundle *b, uint8_t *buf, size_t cap, size_t *len,
                              const char **why)
{
    return encode(b, buf, cap, len, NULL, why);
}

TERN_API int bp_bundle_encode_split(const bp_bundle *b, uint8_t *buf, size_t cap,
                                    size_t *head_len, size_t *tail_len, const char **why)
{
    size_t len, split = 0;
    int rc = encode(b, buf, cap, &len, &split, why);
    if (rc)
        return rc;
    *head_len = split;
    *tail_len = len - split;
    return 0;
}

TERN_API const bp_block *bp_bundle_block(const bp_bundle *b, uint64_t number)
{
    size_t cap = b->ext ? b->ext_cap : BP_MAX_BLOCKS;
    const bp_block *k = bp_bundle_cblocks(b);
    for (size_t i = 0; i < b->n_blocks && i < cap; i++)
        if (k[i].number == number)
            return &k[i];
    return NULL;
}

TERN_API bool bp_block_type_known(uint64_t type)
{
    return type == BP_BLOCK_PAYLOAD || type == BP_BLOCK_PREV_NODE ||
           type == BP_BLOCK_AGE || type == BP_BLOCK_HOP_COUNT;
}

TERN_API bp_unknown_action bp_block_unknown_action(uint64_t flags, bool *report)
{
    if (report)
        *report = (flags & BP_BLK_REPORT) != 0;
    if (flags & BP_BLK_DELETE_BUNDLE)
        return BP_UNKNOWN_DELETE_BUNDLE;
    if (flags & BP_BLK_DISCARD)
        return BP_UNKNOWN_DISCARD_BLOCK;
    return BP_UNKNOWN_KEEP;
}

/* ---- administrative records --------------------------------------------- */

static int status_item_decode(tern_cbor_dec *d, bp_status_item *it, const char **why)
{
    uint64_t n;
    int rc = tern_cbor_dec_array(d, &n);
    if (rc < 0)
        return fail_if(rc, why, "status item not an array");
    if (n != 1 && n != 2)
        FAIL(TERN_EMALFORMED, "status item not [asserted] or [true, time]");
    rc = tern_cbor_dec_bool(d, &it->asserted);
    if (rc < 0)
        return fail_if(rc, why, "status item flag not a boolean");
    it->has_time = n == 2;
    it->time_ms = 0;
    if (n == 2) {
        if (!it->asserted)
            FAIL(TERN_EMALFORMED, "status time on an unasserted item");
        return dec_u(d, &it->time_ms, why, "status time not an integer");
    }
    return 0;
}

static int status_report_decode(tern_cbor_dec *d, bp_status_report *sr, const char **why)
{
    uint64_t n;
    int rc = tern_cbor_dec_array(d, &n);
    if (rc < 0)
        return fail_if(rc, why, "status report not an array");
    if (n != 4 && n != 6)
        FAIL(TERN_EMALFORMED, "status report not an array of 4 or 6 items");
    sr->is_fragment = n == 6;
    uint64_t m;
    rc = tern_cbor_dec_array(d, &m);
    if (rc < 0)
        return fail_if(rc, why, "status information not an array");
    /* RFC 9171 6.1.1: "at least four" items; later ones may be defined by
     * future extensions, so they are checked for well-formedness and skipped.
     * An indefinite array is refused: the record is canonical CBOR. */
    if (m < 4 || m == TERN_CBOR_INDEF)
        FAIL(TERN_EMALFORMED, "status information not of at least 4 items");
    if ((rc = status_item_decode(d, &sr->received, why)) < 0 ||
        (rc = status_item_decode(d, &sr->forwarded, why)) < 0 ||
        (rc = status_item_decode(d, &sr->delivered, why)) < 0 ||
        (rc = status_item_decode(d, &sr->deleted, why)) < 0)
        return rc;
    for (uint64_t i = 4; i < m; i++) {
        /* Each item takes at least one byte: a count beyond the input is
         * truncation, found without looping over a hostile count. */
        if (m - i > d->len - d->pos)
            FAIL(TERN_ETRUNCATED, "status information ends early");
        if ((rc = tern_cbor_skip(d)) < 0)
            return fail_if(rc, why, "extra status item not well-formed");
    }
    if ((rc = dec_u(d, &sr->reason, why, "reason code not an integer")) < 0 ||
        (rc = bp_eid_decode(d, &sr->source, why)) < 0)
        return rc;
    if (sr->source.scheme == BP_SCHEME_IMC) /* a source is one node, never a group */
        FAIL(TERN_EMALFORMED, "status report about a bundle from a group (imc)");
    rc = tern_cbor_dec_array(d, &m);
    if (rc < 0)
        return fail_if(rc, why, "creation timestamp not an array");
    if (m != 2)
        FAIL(TERN_EMALFORMED, "creation timestamp not [time, seq]");
    if ((rc = dec_u(d, &sr->ctime_ms, why, "creation time not an integer")) < 0 ||
        (rc = dec_u(d, &sr->seq, why, "sequence number not an integer")) < 0)
        return rc;
    sr->frag_offset = sr->frag_len = 0;
    if (sr->is_fragment &&
        ((rc = dec_u(d, &sr->frag_offset, why, "fragment offset not an integer")) < 0 ||
         (rc = dec_u(d, &sr->frag_len, why, "fragment length not an integer")) < 0))
        return rc;
    return 0;
}

static int admin_decode(const uint8_t *buf, size_t len, bp_admin_record *r,
                        const char **why)
{
    if (!buf && len)
        FAIL(-EINVAL, "no input");
    memset(r, 0, sizeof *r);
    tern_cbor_dec d;
    tern_cbor_dec_init(&d, buf, len);
    uint64_t n;
    int rc = tern_cbor_dec_array(&d, &n);
    if (rc == TERN_EEND)
        rc = TERN_ETRUNCATED;
    if (rc < 0)
        return fail_if(rc, why, "administrative record not an array");
    if (n != 2)
        FAIL(TERN_EMALFORMED, "administrative record not [type, content]");
    if ((rc = dec_u(&d, &r->type, why, "record type not an integer")) < 0)
        return rc;
    size_t at = d.pos;
    if (r->type == BP_ADMIN_STATUS_REPORT)
        rc = status_report_decode(&d, &r->sr, why);
    else
        rc = fail_if(tern_cbor_skip(&d), why, "record content not well-formed");
    if (rc < 0)
        return rc;
    r->content = buf + at;
    r->content_len = d.pos - at;
    if (!tern_cbor_dec_done(&d))
        FAIL(TERN_EMALFORMED, "bytes after the administrative record");
    return 0;
}

TERN_API int bp_admin_decode(const uint8_t *buf, size_t len, bp_admin_record *r,
                             const char **why)
{
    int rc = admin_decode(buf, len, r, why);
    if (rc == TERN_EEND)
        rc = TERN_ETRUNCATED;
    return rc == TERN_ETYPE ? TERN_EMALFORMED : rc;
}

static int status_item_encode(tern_cbor_enc *e, const bp_status_item *it)
{
    if (it->has_time && !it->asserted)
        return -EINVAL;
    tern_cbor_enc_array(e, it->has_time ? 2 : 1);
    tern_cbor_enc_bool(e, it->asserted);
    if (it->has_time)
        tern_cbor_enc_uint(e, it->time_ms);
    return 0;
}

TERN_API int bp_admin_encode(const bp_admin_record *r, uint8_t *buf, size_t cap,
                             size_t *len)
{
    tern_cbor_enc e;
    tern_cbor_enc_init(&e, buf, cap);
    tern_cbor_enc_array(&e, 2);
    tern_cbor_enc_uint(&e, r->type);
    if (r->type != BP_ADMIN_STATUS_REPORT) {
        if (!r->content || tern_cbor_wellformed(r->content, r->content_len) < 0)
            return -EINVAL;
        tern_cbor_enc_raw(&e, r->content, r->content_len);
        return tern_cbor_enc_finish(&e, len);
    }
    const bp_status_report *sr = &r->sr;
    tern_cbor_enc_array(&e, sr->is_fragment ? 6 : 4);
    tern_cbor_enc_array(&e, 4);
    if (status_item_encode(&e, &sr->received) < 0 ||
        status_item_encode(&e, &sr->forwarded) < 0 ||
        status_item_encode(&e, &sr->delivered) < 0 ||
        status_item_encode(&e, &sr->deleted) < 0)
        return -EINVAL;
    tern_cbor_enc_uint(&e, sr->reason);
    if (bp_eid_encode(&e, &sr->source) < 0)
        return -EINVAL;
    tern_cbor_enc_array(&e, 2);
    tern_cbor_enc_uint(&e, sr->ctime_ms);
    tern_cbor_enc_uint(&e, sr->seq);
    if (sr->is_fragment) {
        tern_cbor_enc_uint(&e, sr->frag_offset);
        tern_cbor_enc_uint(&e, sr->frag_len);
    }
    return tern_cbor_enc_finish(&e, len);
}
