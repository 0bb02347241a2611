/* LTP segment codec (RFC 5326 section 3).
 *
 * Layout: one byte version (high nibble, 0) | type (low nibble); session
 * originator engine ID and session number (SDNVs); one byte header extension
 * count (high nibble) | trailer extension count (low nibble); the header
 * extensions; the content, which depends on the type; the trailer extensions.
 * Each extension is a one-byte tag, an SDNV length and that many value bytes.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "ltp_seg.h"
#include "tern/sdnv.h"

/* ---- decoding ---------------------------------------------------------- */

typedef struct rd {
    const uint8_t *p;
    size_t left;
} rd;

static int rd_sdnv(rd *r, uint64_t *v)
{
    int n = tern_sdnv_decode(r->p, r->left, v);
    if (n < 0)
        return n;
    r->p += n;
    r->left -= (size_t)n;
    return 0;
}

static int rd_byte(rd *r, uint8_t *b)
{
    if (r->left < 1)
        return TERN_ETRUNCATED;
    *b = r->p[0];
    r->p++;
    r->left--;
    return 0;
}

static int rd_exts(rd *r, ltp_ext *ext, uint8_t n)
{
    for (uint8_t i = 0; i < n; i++) {
        int rc = rd_byte(r, &ext[i].tag);
        if (rc == 0)
            rc = rd_sdnv(r, &ext[i].len);
        if (rc < 0)
            return rc;
        if (ext[i].len > r->left)
            return TERN_ETRUNCATED;
        ext[i].value = r->p;
        r->p += ext[i].len;
        r->left -= (size_t)ext[i].len;
    }
    return 0;
}

static int rd_data(rd *r, ltp_seg *seg)
{
    int rc;
    if ((rc = rd_sdnv(r, &seg->client)) < 0 || (rc = rd_sdnv(r, &seg->offset)) < 0 ||
        (rc = rd_sdnv(r, &seg->length)) < 0)
        return rc;
    if (ltp_seg_is_cp(seg->type)) {
        if ((rc = rd_sdnv(r, &seg->cp_serial)) < 0 ||
            (rc = rd_sdnv(r, &seg->rpt_serial)) < 0)
            return rc;
    }
    if (seg->length > r->left)
        return TERN_ETRUNCATED;
    if (seg->offset > UINT64_MAX - seg->length)
        return TERN_EOVERFLOW;
    seg->data = r->p;
    r->p += seg->length;
    r->left -= (size_t)seg->length;
    return 0;
}

static int rd_report(rd *r, ltp_seg *seg, size_t max_claims)
{
    int rc;
    if ((rc = rd_sdnv(r, &seg->rpt_serial)) < 0 ||
        (rc = rd_sdnv(r, &seg->cp_serial)) < 0 || (rc = rd_sdnv(r, &seg->upper)) < 0 ||
        (rc = rd_sdnv(r, &seg->lower)) < 0)
        return rc;
    if (seg->lower > seg->upper)
        return TERN_EMALFORMED;
    uint64_t n;
    if ((rc = rd_sdnv(r, &n)) < 0)
        return rc;
    /* RFC 5326 3.2.2 sets no minimum claim count, so 0 claims decodes.
     * Each claim takes at least two bytes: a count the rest of the buffer
     * cannot hold is a truncation, whatever the caller's capacity. */
    if (n > r->left / 2)
        return TERN_ETRUNCATED;
    if (n > max_claims)
        return TERN_EFULL;
    if (n > 0 && !seg->claims)
        return -EINVAL;
    uint64_t span = seg->upper - seg->lower;
    for (uint64_t i = 0; i < n; i++) {
        ltp_claim *c = &seg->claims[i];
        if ((rc = rd_sdnv(r, &c->offset)) < 0 || (rc = rd_sdnv(r, &c->length)) < 0)
            return rc;
        if (c->offset > span || c->length > span - c->offset)
            return TERN_EMALFORMED;
    }
    seg->n_claims = n;
    return 0;
}

TERN_API int ltp_seg_decode(const uint8_t *buf, size_t len, ltp_seg *seg,
                            size_t max_claims)
{
    if (!seg || (!buf && len))
        return -EINVAL;
    ltp_claim *claims = seg->claims;
    memset(seg, 0, sizeof *seg);
    seg->claims = claims;

    rd r = {buf, len};
    uint8_t b;
    int rc;
    if ((rc = rd_byte(&r, &b)) < 0)
        return rc;
    if (b >> 4)
        return TERN_EMALFORMED; /* only version 0 exists */
    seg->type = b & 0x0f;
    if (seg->type == LTP_CTRL_A || seg->type == LTP_CTRL_B)
        return TERN_EMALFORMED;
    if ((rc = rd_sdnv(&r, &seg->engine)) < 0 || (rc = rd_sdnv(&r, &seg->session)) < 0 ||
        (rc = rd_byte(&r, &b)) < 0)
        return rc;
    seg->n_hext = b >> 4;
    seg->n_text = b & 0x0f;
    if ((rc = rd_exts(&r, seg->hext, seg->n_hext)) < 0)
        return rc;

    if (ltp_seg_is_data(seg->type)) {
        rc = rd_data(&r, seg);
    } else {
        switch (seg->type) {
        case LTP_RS:
            rc = rd_report(&r, seg, max_claims);
            break;
        case LTP_RA:
            rc = rd_sdnv(&r, &seg->rpt_serial);
            break;
        case LTP_CS:
        case LTP_CR:
            rc = rd_byte(&r, &seg->reason);
            break;
        default: /* LTP_CAS, LTP_CAR: no content */
            rc = 0;
            break;
        }
    }
    if (rc < 0)
        return rc;
    if ((rc = rd_exts(&r, seg->text, seg->n_text)) < 0)
        return rc;
    if (r.left)
        return TERN_EMALFORMED;
    return 0;
}

/* ---- encoding ---------------------------------------------------------- */

/* Bytes an extension list takes on the wire. */
static int exts_len(const ltp_ext *ext, uint8_t n, uint64_t *out)
{
    uint64_t sum = 0;
    for (uint8_t i = 0; i < n; i++) {
        if (ext[i].len && !ext[i].value)
            return -EINVAL;
        uint64_t one = 1 + tern_sdnv_len(ext[i].len);
        if (ext[i].len > UINT64_MAX - one - sum)
            return TERN_EOVERFLOW;
        sum += one + ext[i].len;
    }
    *out = sum;
    return 0;
}

static uint64_t data_fields_len(const ltp_seg *seg)
{
    uint64_t n = tern_sdnv_len(seg->client) + tern_sdnv_len(seg->offset) +
                 tern_sdnv_len(seg->length);
    if (ltp_seg_is_cp(seg->type))
        n += tern_sdnv_len(seg->cp_serial) + tern_sdnv_len(seg->rpt_serial);
    return n;
}

/* Bytes of the content (for data segments: the fields and the data). */
static int content_len(const ltp_seg *seg, uint64_t *out)
{
    uint64_t n = 0;
    if (ltp_seg_is_data(seg->type)) {
        if (seg->length && !seg->data)
            return -EINVAL;
        if (seg->offset > UINT64_MAX - seg->length)
            return -EINVAL;
        n = data_fields_len(seg);
        if (seg->length > UINT64_MAX - n)
            return TERN_EOVERFLOW;
        n += seg->length;
    } else {
        switch (seg->type) {
        case LTP_RS: {
            if (seg->lower > seg->upper || (seg->n_claims && !seg->claims))
                return -EINVAL;
            uint64_t span = seg->upper - seg->lower;
            n = tern_sdnv_len(seg->rpt_serial) + tern_sdnv_len(seg->cp_serial) +
                tern_sdnv_len(seg->upper) + tern_sdnv_len(seg->lower) +
                tern_sdnv_len(seg->n_claims);
            /* Any claim takes 2..20 bytes; this bounds the loop below. */
            if (seg->n_claims > (UINT64_MAX - n) / (2 * TERN_SDNV_MAX_LEN))
                return TERN_EOVERFLOW;
            for (uint64_t i = 0; i < seg->n_claims; i++) {
                const ltp_claim *c = &seg->claims[i];
                if (c->offset > span || c->length > span - c->offset)
                    return -EINVAL;
                n += tern_sdnv_len(c->offset) + tern_sdnv_len(c->length);
            }
            break;
        }
        case LTP_RA:
            n = tern_sdnv_len(seg->rpt_serial);
            break;
        case LTP_CS:
        case LTP_CR:
            n = 1;
            break;
        case LTP_CAS:
        case LTP_CAR:
            n = 0;
            break;
        default: /* 0xa, 0xb and anything above 0xf */
            return -EINVAL;
        }
    }
    *out = n;
    return 0;
}

typedef struct wr {
    uint8_t *p;
} wr;

static void wr_sdnv(wr *w, uint64_t v)
{
    /* The total length was checked against the capacity beforehand. */
    int n = tern_sdnv_encode(v, w->p, TERN_SDNV_MAX_LEN);
    w->p += n;
}

static void wr_byte(wr *w, uint8_t b)
{
    *w->p++ = b;
}

static void wr_bytes(wr *w, const uint8_t *src, uint64_t n)
{
    if (n)
        memcpy(w->p, src, (size_t)n);
    w->p += n;
}

static void wr_exts(wr *w, const ltp_ext *ext, uint8_t n)
{
    for (uint8_t i = 0; i < n; i++) {
        wr_byte(w, ext[i].tag);
        wr_sdnv(w, ext[i].len);
        wr_bytes(w, ext[i].value, ext[i].len);
    }
}

TERN_API int ltp_seg_encode(const ltp_seg *seg, uint8_t *buf, size_t cap)
{
    if (!seg || seg->n_hext > LTP_MAX_EXT || seg->n_text > LTP_MAX_EXT)
        return -EINVAL;
    uint64_t hext, text, content;
    int rc;
    if ((rc = exts_len(seg->hext, seg->n_hext, &hext)) < 0 ||
        (rc = exts_len(seg->text, seg->n_text, &text)) < 0 ||
        (rc = content_len(seg, &content)) < 0)
        return rc;
    uint64_t total = 2 + tern_sdnv_len(seg->engine) + tern_sdnv_len(seg->session);
    if (hext > UINT64_MAX - total || text > UINT64_MAX - total - hext ||
        content > UINT64_MAX - total - hext - text)
        return TERN_EOVERFLOW;
    total += hext + text + content;
    if (total > cap)
        return TERN_ENOSPACE;
    if (total > INT_MAX)
        return TERN_EOVERFLOW;
    if (!buf)
        return -EINVAL;

    wr w = {buf};
    wr_byte(&w, seg->type); /* version 0 in the high nibble */
    wr_sdnv(&w, seg->engine);
    wr_sdnv(&w, seg->session);
    wr_byte(&w, (uint8_t)(seg->n_hext << 4 | seg->n_text));
    wr_exts(&w, seg->hext, seg->n_hext);
    if (ltp_seg_is_data(seg->type)) {
        wr_sdnv(&w, seg->client);
        wr_sdnv(&w, seg->offset);
        wr_sdnv(&w, seg->length);
        if (ltp_seg_is_cp(seg->type)) {
            wr_sdnv(&w, seg->cp_serial);
            wr_sdnv(&w, seg->rpt_serial);
        }
        wr_bytes(&w, seg->data, seg->length);
    } else if (seg->type == LTP_RS) {
        wr_sdnv(&w, seg->rpt_serial);
        wr_sdnv(&w, seg->cp_serial);
        wr_sdnv(&w, seg->upper);
        wr_sdnv(&w, seg->lower);
        wr_sdnv(&w, seg->n_claims);
        for (uint64_t i = 0; i < seg->n_claims; i++) {
            wr_sdnv(&w, seg->claims[i].offset);
            wr_sdnv(&w, seg->claims[i].length);
        }
    } else if (seg->type == LTP_RA) {
        wr_sdnv(&w, seg->rpt_serial);
    } else if (seg->type == LTP_CS || seg->type == LTP_CR) {
        wr_byte(&w, seg->reason);
    }
    wr_exts(&w, seg->text, seg->n_text);
    return (int)(w.p - buf);
}

TERN_API size_t ltp_seg_data_hdr_len(const ltp_seg *seg)
{
    if (!seg || !ltp_seg_is_data(seg->type) || seg->n_hext > LTP_MAX_EXT)
        return 0;
    uint64_t hext;
    if (exts_len(seg->hext, seg->n_hext, &hext) < 0)
        return 0;
    uint64_t n = 2 + tern_sdnv_len(seg->engine) + tern_sdnv_len(seg->session) +
                 data_fields_len(seg);
    if (hext > SIZE_MAX - n)
        return 0;
    return (size_t)(n + hext);
}

/* ---- names ------------------------------------------------------------- */

TERN_API const char *ltp_seg_type_name(uint8_t type)
{
    static const char *const names[16] = {
        "RD", "RD-CP", "RD-CP-EORP", "RD-CP-EOB", "GD", "GD-5", "GD-6", "GD-EOB",
        "RS", "RA",    "CTRL-A",     "CTRL-B",    "CS", "CAS",  "CR",   "CAR",
    };
    return type < 16 ? names[type] : "unknown";
}

TERN_API const char *ltp_reason_name(uint8_t reason)
{
    static const char *const names[] = {
        "USR_CNCLD", "UNREACH", "RLEXC", "MISCOLORED", "SYS_CNCLD", "RXMTCYCEXC",
    };
    return reason < sizeof names / sizeof names[0] ? names[reason] : "unknown";
}
