/* CFDP PDUs (CCSDS 727.0-B-5 5.1-5.3): the fixed header, File Data and the
 * file directives EOF, Finished, ACK, Metadata, NAK, Prompt and Keep Alive. */
#include <errno.h>
#include <string.h>

#include "cfdp_pdu.h"
#include "tern/ckd.h"
#include "tern/crc.h"
#include "tlv.h"
#include "wire.h"

#define FAIL(code, text)                                                                 \
    do {                                                                                 \
        if (why)                                                                         \
            *why = (text);                                                               \
        return (code);                                                                   \
    } while (0)

#define TRY(expr)                                                                        \
    do {                                                                                 \
        int rc_ = (expr);                                                                \
        if (rc_)                                                                         \
            return rc_;                                                                  \
    } while (0)

#define LIMIT_32 0x100000000ull

TERN_API int tern_cfdp_abi_version(void)
{
    return CFDP_ABI_VERSION;
}

TERN_API uint8_t cfdp_id_len(uint64_t id)
{
    uint8_t n = 1;
    while (n < 8 && id >> (8 * n))
        n++;
    return n;
}

static unsigned eid_len_of(const cfdp_header *h)
{
    if (h->eid_len)
        return h->eid_len;
    uint8_t a = cfdp_id_len(h->src), b = cfdp_id_len(h->dst);
    return a > b ? a : b;
}

static unsigned tsn_len_of(const cfdp_header *h)
{
    return h->tsn_len ? h->tsn_len : cfdp_id_len(h->tsn);
}

TERN_API size_t cfdp_header_len(const cfdp_header *hdr)
{
    return 4 + 2 * (size_t)eid_len_of(hdr) + tsn_len_of(hdr);
}

/* ------------------------------------------------------------------ decode */

TERN_API int cfdp_header_decode(const void *buf, size_t len, cfdp_header *hdr,
                                size_t *hdr_len, const char **why)
{
    const uint8_t *p = buf;
    memset(hdr, 0, sizeof *hdr);
    if (len < 4)
        FAIL(TERN_ETRUNCATED, "PDU shorter than its 4-byte fixed header");
    hdr->version = p[0] >> 5;
    if (hdr->version != 1)
        FAIL(TERN_EMALFORMED, "version is not 001");
    hdr->type = (p[0] >> 4) & 1;
    hdr->direction = (p[0] >> 3) & 1;
    hdr->mode = (p[0] >> 2) & 1;
    hdr->crc = (p[0] >> 1) & 1;
    hdr->large_file = p[0] & 1;
    hdr->data_len = (uint16_t)(p[1] << 8 | p[2]);
    hdr->seg_ctrl = p[3] >> 7;
    hdr->eid_len = (uint8_t)(((p[3] >> 4) & 7) + 1);
    hdr->seg_meta = (p[3] >> 3) & 1;
    hdr->tsn_len = (uint8_t)((p[3] & 7) + 1);
    size_t hl = 4 + 2 * (size_t)hdr->eid_len + hdr->tsn_len;
    if (len < hl)
        FAIL(TERN_ETRUNCATED,
             "PDU shorter than its header's entity IDs and sequence number");
    hdr->src = be_get(p + 4, hdr->eid_len);
    hdr->tsn = be_get(p + 4 + hdr->eid_len, hdr->tsn_len);
    hdr->dst = be_get(p + 4 + hdr->eid_len + hdr->tsn_len, hdr->eid_len);
    if (hdr->data_len > len - hl)
        FAIL(TERN_ETRUNCATED, "data field runs past the end of the PDU");
    *hdr_len = hl;
    return 0;
}

static const char *const reserved_cond = "condition code is reserved (12 or 13)";

static int decode_file_data(rd *r, const cfdp_header *h, unsigned fss, cfdp_file_data *fd,
                            const char **why)
{
    if (h->seg_meta) {
        const uint8_t *b = rd_take(r, 1);
        if (!b)
            FAIL(TERN_ETRUNCATED, "file data: no segment metadata field");
        fd->record = *b >> 6;
        fd->meta.len = *b & 0x3f;
        fd->meta.ptr = rd_take(r, fd->meta.len);
        if (!fd->meta.ptr)
            FAIL(TERN_ETRUNCATED, "file data: segment metadata runs past the data field");
    }
    const uint8_t *o = rd_take(r, fss);
    if (!o)
        FAIL(TERN_ETRUNCATED, "file data: no room for its offset");
    fd->offset = be_get(o, fss);
    fd->len = rd_left(r);
    fd->data = rd_take(r, fd->len);
    uint64_t end;
    if (tern_ckd_add(&end, fd->offset, fd->len))
        FAIL(TERN_EOVERFLOW, "file data: offset + length passes 2^64");
    if (!h->large_file && end > LIMIT_32)
        FAIL(TERN_EOVERFLOW, "file data: offset + length passes 2^32 in the 32-bit form");
    return 0;
}

/* The optional fault location ending an EOF: an entity ID TLV, nothing else. */
static int decode_eof(rd *r, unsigned fss, cfdp_eof *e, const char **why)
{
    const uint8_t *f = rd_take(r, 1 + 4 + fss);
    if (!f)
        FAIL(TERN_ETRUNCATED, "EOF: shorter than its fixed fields");
    e->condition = f[0] >> 4;
    if (cfdp__condition_reserved(e->condition))
        FAIL(TERN_EMALFORMED, reserved_cond);
    e->checksum = (uint32_t)be_get(f + 1, 4);
    e->file_size = be_get(f + 5, fss);
    if (!rd_left(r))
        return 0;
    cfdp_tlv t;
    size_t used;
    TRY(cfdp_tlv_decode(r->p + r->pos, rd_left(r), &t, &used, why));
    if (t.type != CFDP_TLV_ENTITY_ID)
        FAIL(TERN_EMALFORMED, "EOF: a TLV other than the fault location");
    if (used != rd_left(r))
        FAIL(TERN_EMALFORMED, "EOF: bytes after the fault location");
    if (e->condition == CFDP_COND_NO_ERROR)
        FAIL(TERN_EMALFORMED, "EOF: a fault location with condition 'no error'");
    e->fault = t.eid;
    r->pos += used;
    return 0;
}

static int decode_finished(rd *r, cfdp_finished *fin, const char **why)
{
    const uint8_t *b = rd_take(r, 1);
    if (!b)
        FAIL(TERN_ETRUNCATED, "Finished: no condition code field");
    fin->condition = *b >> 4;
    if (cfdp__condition_reserved(fin->condition))
        FAIL(TERN_EMALFORMED, reserved_cond);
    fin->delivery = (*b >> 2) & 1;
    fin->file_status = *b & 3;
    fin->responses.raw = r->p + r->pos;
    while (rd_left(r)) {
        cfdp_tlv t;
        size_t used;
        TRY(cfdp_tlv_decode(r->p + r->pos, rd_left(r), &t, &used, why));
        if (t.type == CFDP_TLV_FS_RESPONSE) {
            if (fin->fault.len)
                FAIL(TERN_EMALFORMED, "Finished: a filestore response after the fault "
                                      "location");
            fin->responses.count++;
            fin->responses.raw_len += used;
        } else if (t.type == CFDP_TLV_ENTITY_ID) {
            if (fin->fault.len)
                FAIL(TERN_EMALFORMED, "Finished: two fault locations");
            fin->fault = t.eid;
        } else {
            FAIL(TERN_EMALFORMED,
                 "Finished: a TLV other than filestore responses and the "
                 "fault location");
        }
        r->pos += used;
    }
    if (fin->fault.len && fin->condition == CFDP_COND_NO_ERROR)
        FAIL(TERN_EMALFORMED, "Finished: a fault location with condition 'no error'");
    return 0;
}

static int decode_ack(rd *r, cfdp_ack *a, const char **why)
{
    const uint8_t *b = rd_take(r, 2);
    if (!b)
        FAIL(TERN_ETRUNCATED, "ACK: shorter than its 2 bytes of fields");
    if (rd_left(r))
        FAIL(TERN_EMALFORMED, "ACK: bytes after its fields");
    a->directive = b[0] >> 4;
    a->subtype = b[0] & 0x0f;
    if (a->directive != CFDP_EOF && a->directive != CFDP_FINISHED)
        FAIL(TERN_EMALFORMED, "ACK: acknowledges neither EOF nor Finished");
    a->condition = b[1] >> 4;
    if (cfdp__condition_reserved(a->condition))
        FAIL(TERN_EMALFORMED, reserved_cond);
    a->txn_status = b[1] & 3;
    return 0;
}

static int metadata_option(unsigned type)
{
    return type == CFDP_TLV_FS_REQUEST || type == CFDP_TLV_MSG_TO_USER ||
           type == CFDP_TLV_FAULT_HANDLER || type == CFDP_TLV_FLOW_LABEL;
}

static int decode_name(rd *r, cfdp_lv *lv, const char *none, const char *past,
                       const char **why)
{
    const uint8_t *n = rd_take(r, 1);
    if (!n)
        FAIL(TERN_ETRUNCATED, none);
    lv->len = *n;
    lv->ptr = rd_take(r, *n);
    if (!lv->ptr)
        FAIL(TERN_ETRUNCATED, past);
    return 0;
}

static int decode_metadata(rd *r, unsigned fss, cfdp_metadata *m, const char **why)
{
    const uint8_t *f = rd_take(r, 1 + fss);
    if (!f)
        FAIL(TERN_ETRUNCATED, "Metadata: shorter than its fixed fields");
    m->closure = (f[0] >> 6) & 1;
    m->checksum_type = f[0] & 0x0f;
    m->file_size = be_get(f + 1, fss);
    TRY(decode_name(r, &m->src_name, "Metadata: no source file name field",
                    "Metadata: source file name runs past the data field", why));
    TRY(decode_name(r, &m->dst_name, "Metadata: no destination file name field",
                    "Metadata: destination file name runs past the data field", why));
    m->options.raw = r->p + r->pos;
    m->options.raw_len = rd_left(r);
    while (rd_left(r)) {
        cfdp_tlv t;
        size_t used;
        TRY(cfdp_tlv_decode(r->p + r->pos, rd_left(r), &t, &used, why));
        if (!metadata_option(t.type))
            FAIL(TERN_EMALFORMED,
                 "Metadata: an option of a type Metadata does not carry");
        m->options.count++;
        r->pos += used;
    }
    return 0;
}

static int decode_nak(rd *r, unsigned fss, cfdp_nak *n, const char **why)
{
    const uint8_t *s = rd_take(r, 2 * (size_t)fss);
    if (!s)
        FAIL(TERN_ETRUNCATED, "NAK: shorter than its scope");
    n->scope_start = be_get(s, fss);
    n->scope_end = be_get(s + fss, fss);
    if (n->scope_end < n->scope_start)
        FAIL(TERN_EMALFORMED, "NAK: scope ends before it starts");
    if (rd_left(r) % (2 * (size_t)fss))
        FAIL(TERN_EMALFORMED, "NAK: segment requests do not fill whole pairs");
    n->segments.raw = r->p + r->pos;
    n->segments.raw_width = (uint8_t)fss;
    n->segments.count = rd_left(r) / (2 * (size_t)fss);
    for (size_t i = 0; i < n->segments.count; i++) {
        cfdp_range g = cfdp_nak_segment(&n->segments, i);
        if (g.end < g.start)
            FAIL(TERN_EMALFORMED, "NAK: a segment request ends before it starts");
    }
    r->pos = r->len;
    return 0;
}

static int decode_prompt(rd *r, cfdp_prompt *pr, const char **why)
{
    const uint8_t *b = rd_take(r, 1);
    if (!b)
        FAIL(TERN_ETRUNCATED, "Prompt: no response field");
    if (rd_left(r))
        FAIL(TERN_EMALFORMED, "Prompt: bytes after its field");
    pr->response = *b >> 7;
    return 0;
}

static int decode_keep_alive(rd *r, unsigned fss, cfdp_keep_alive *k, const char **why)
{
    const uint8_t *b = rd_take(r, fss);
    if (!b)
        FAIL(TERN_ETRUNCATED, "Keep Alive: shorter than its progress field");
    if (rd_left(r))
        FAIL(TERN_EMALFORMED, "Keep Alive: bytes after its progress field");
    k->progress = be_get(b, fss);
    return 0;
}

TERN_API int cfdp_pdu_decode(const void *buf, size_t len, unsigned flags, cfdp_pdu *pdu,
                             const char **why)
{
    const uint8_t *p = buf;
    size_t hl;
    memset(pdu, 0, sizeof *pdu);
    TRY(cfdp_header_decode(buf, len, &pdu->hdr, &hl, why));
    const cfdp_header *h = &pdu->hdr;
    size_t dl = h->data_len;
    if (len - hl > dl)
        FAIL(TERN_EMALFORMED, "bytes after the PDU's data field");
    if (h->crc) {
        if (dl < 2)
            FAIL(TERN_ETRUNCATED, "data field too short for its CRC");
        uint16_t got = (uint16_t)(p[hl + dl - 2] << 8 | p[hl + dl - 1]);
        if (tern_crc16_ccitt_false(TERN_CRC16_CCITT_FALSE_INIT, p, hl + dl - 2) != got)
            FAIL(TERN_ECORRUPT, "PDU CRC does not match");
        dl -= 2;
    } else if (flags & CFDP_DECODE_CRC_REQUIRED) {
        FAIL(TERN_EMALFORMED, "CRC required for this peer but the PDU has none");
    }
    rd r = {p + hl, dl, 0};
    unsigned fss = h->large_file ? 8 : 4;
    if (h->type == CFDP_TYPE_FILE_DATA) {
        pdu->kind = CFDP_FILE_DATA;
        return decode_file_data(&r, h, fss, &pdu->u.fd, why);
    }
    const uint8_t *code = rd_take(&r, 1);
    if (!code)
        FAIL(TERN_ETRUNCATED, "directive PDU without a directive code");
    pdu->kind = *code;
    switch (*code) {
    case CFDP_EOF:
        return decode_eof(&r, fss, &pdu->u.eof, why);
    case CFDP_FINISHED:
        return decode_finished(&r, &pdu->u.fin, why);
    case CFDP_ACK:
        return decode_ack(&r, &pdu->u.ack, why);
    case CFDP_METADATA:
        return decode_metadata(&r, fss, &pdu->u.md, why);
    case CFDP_NAK:
        return decode_nak(&r, fss, &pdu->u.nak, why);
    case CFDP_PROMPT:
        return decode_prompt(&r, &pdu->u.prompt, why);
    case CFDP_KEEP_ALIVE:
        return decode_keep_alive(&r, fss, &pdu->u.ka, why);
    default:
        FAIL(TERN_EMALFORMED, "file directive code not defined");
    }
}

TERN_API cfdp_range cfdp_nak_segment(const cfdp_ranges *segs, size_t i)
{
    if (segs->items)
        return segs->items[i];
    unsigned w = segs->raw_width;
    const uint8_t *q = segs->raw + 2 * (size_t)w * i;
    return (cfdp_range){be_get(q, w), be_get(q + w, w)};
}

/* ------------------------------------------------------------------- check */

static int fits(const cfdp_header *h, uint64_t v)
{
    return h->large_file || v < LIMIT_32;
}

static const char *const too_big_32 = "a file offset or size passes 2^32: set large_file";

static int check_lv(const cfdp_lv *lv, const char **why)
{
    if (lv->len && !lv->ptr)
        FAIL(-EINVAL, "a file name's bytes are missing");
    return 0;
}

static int check_cond(unsigned c, const char **why)
{
    if (cfdp__condition_reserved(c))
        FAIL(-EINVAL, reserved_cond);
    return 0;
}

static int check_fault(const cfdp_eid *f, unsigned cond, const char **why)
{
    TRY(cfdp__eid_check(f, 1, why));
    if (f->len && cond == CFDP_COND_NO_ERROR)
        FAIL(-EINVAL, "a fault location with condition 'no error'");
    return 0;
}

/* Every TLV of list checked, and of a type accepted(type) allows. */
static int check_tlvs(const cfdp_tlvs *list, int (*accepted)(unsigned), const char *wrong,
                      const char **why)
{
    size_t pos = 0;
    cfdp_tlv t;
    int rc;
    while ((rc = cfdp_tlvs_next(list, &pos, &t)) == 0) {
        TRY(cfdp_tlv_check(&t, why));
        if (!accepted(t.type))
            FAIL(-EINVAL, wrong);
    }
    if (rc != TERN_EEND)
        FAIL(rc, "a raw TLV list does not decode");
    return 0;
}

static int fs_response(unsigned type)
{
    return type == CFDP_TLV_FS_RESPONSE;
}

static int check_header(const cfdp_header *h, const char **why)
{
    if ((h->direction | h->mode | h->crc | h->large_file | h->seg_ctrl | h->seg_meta) > 1)
        FAIL(-EINVAL, "header: a one-bit flag is not 0 or 1");
    if (h->eid_len > 8 || h->tsn_len > 8)
        FAIL(-EINVAL, "header: entity ID or sequence number length above 8 bytes");
    if (cfdp_id_len(h->src) > eid_len_of(h) || cfdp_id_len(h->dst) > eid_len_of(h))
        FAIL(TERN_EOVERFLOW,
             "header: source or destination entity ID does not fit eid_len");
    if (cfdp_id_len(h->tsn) > tsn_len_of(h))
        FAIL(TERN_EOVERFLOW, "header: sequence number does not fit tsn_len");
    return 0;
}

static int check_body(const cfdp_pdu *pdu, const char **why)
{
    const cfdp_header *h = &pdu->hdr;
    switch (pdu->kind) {
    case CFDP_FILE_DATA: {
        const cfdp_file_data *fd = &pdu->u.fd;
        uint64_t end;
        if (fd->len && !fd->data)
            FAIL(-EINVAL, "file data: data bytes missing");
        if (!h->seg_meta && (fd->meta.len || fd->record))
            FAIL(-EINVAL, "file data: segment metadata without hdr.seg_meta");
        if (fd->meta.len > 63 || fd->record > 3 || check_lv(&fd->meta, NULL))
            FAIL(-EINVAL,
                 "file data: segment metadata above 63 bytes or bad record state");
        if (tern_ckd_add(&end, fd->offset, fd->len))
            FAIL(TERN_EOVERFLOW, "file data: offset + length passes 2^64");
        if (!h->large_file && end > LIMIT_32)
            FAIL(TERN_EOVERFLOW, too_big_32);
        return 0;
    }
    case CFDP_EOF:
        TRY(check_cond(pdu->u.eof.condition, why));
        if (!fits(h, pdu->u.eof.file_size))
            FAIL(TERN_EOVERFLOW, too_big_32);
        return check_fault(&pdu->u.eof.fault, pdu->u.eof.condition, why);
    case CFDP_FINISHED: {
        const cfdp_finished *f = &pdu->u.fin;
        TRY(check_cond(f->condition, why));
        if (f->delivery > 1 || f->file_status > 3)
            FAIL(-EINVAL, "Finished: delivery code or file status out of range");
        TRY(check_tlvs(&f->responses, fs_response,
                       "Finished: a TLV other than filestore responses", why));
        return check_fault(&f->fault, f->condition, why);
    }
    case CFDP_ACK: {
        const cfdp_ack *a = &pdu->u.ack;
        if (a->directive != CFDP_EOF && a->directive != CFDP_FINISHED)
            FAIL(-EINVAL, "ACK: acknowledges neither EOF nor Finished");
        if (a->subtype > 15 || a->txn_status > 3)
            FAIL(-EINVAL, "ACK: subtype or transaction status out of range");
        return check_cond(a->condition, why);
    }
    case CFDP_METADATA: {
        const cfdp_metadata *m = &pdu->u.md;
        if (m->closure > 1 || m->checksum_type > 15)
            FAIL(-EINVAL, "Metadata: closure flag or checksum type out of range");
        if (!fits(h, m->file_size))
            FAIL(TERN_EOVERFLOW, too_big_32);
        TRY(check_lv(&m->src_name, why));
        TRY(check_lv(&m->dst_name, why));
        return check_tlvs(&m->options, metadata_option,
                          "Metadata: an option of a type Metadata does not carry", why);
    }
    case CFDP_NAK: {
        const cfdp_nak *n = &pdu->u.nak;
        if (n->scope_end < n->scope_start)
            FAIL(-EINVAL, "NAK: scope ends before it starts");
        if (!fits(h, n->scope_end))
            FAIL(TERN_EOVERFLOW, too_big_32);
        if (!n->segments.items && n->segments.count && !n->segments.raw)
            FAIL(-EINVAL, "NAK: segment requests missing");
        if (!n->segments.items && n->segments.count && n->segments.raw_width != 4 &&
            n->segments.raw_width != 8)
            FAIL(-EINVAL, "NAK: raw segment requests of a width other than 4 or 8");
        for (size_t i = 0; i < n->segments.count; i++) {
            cfdp_range g = cfdp_nak_segment(&n->segments, i);
            if (g.end < g.start)
                FAIL(-EINVAL, "NAK: a segment request ends before it starts");
            if (!fits(h, g.end))
                FAIL(TERN_EOVERFLOW, too_big_32);
        }
        return 0;
    }
    case CFDP_PROMPT:
        if (pdu->u.prompt.response > 1)
            FAIL(-EINVAL, "Prompt: response is neither NAK nor Keep Alive");
        return 0;
    case CFDP_KEEP_ALIVE:
        if (!fits(h, pdu->u.ka.progress))
            FAIL(TERN_EOVERFLOW, too_big_32);
        return 0;
    default:
        FAIL(-EINVAL, "kind is neither file data nor a defined directive");
    }
}

/* ------------------------------------------------------------------ encode */

static void write_name(wr *w, const cfdp_lv *lv)
{
    wr_u8(w, lv->len);
    wr_bytes(w, lv->ptr, lv->len);
}

static void write_tlvs(wr *w, const cfdp_tlvs *list)
{
    size_t pos = 0;
    cfdp_tlv t;
    while (cfdp_tlvs_next(list, &pos, &t) == 0)
        cfdp__tlv_write(w, &t);
}

static void write_fault(wr *w, const cfdp_eid *f)
{
    if (!f->len)
        return;
    cfdp_tlv t = {.type = CFDP_TLV_ENTITY_ID, .eid = *f};
    cfdp__tlv_write(w, &t);
}

/* The data field without its CRC, for a PDU that passed check_body(). */
static void write_body(wr *w, const cfdp_pdu *pdu)
{
    const cfdp_header *h = &pdu->hdr;
    unsigned fss = h->large_file ? 8 : 4;
    if (pdu->kind != CFDP_FILE_DATA)
        wr_u8(w, pdu->kind);
    switch (pdu->kind) {
    case CFDP_FILE_DATA: {
        const cfdp_file_data *fd = &pdu->u.fd;
        if (h->seg_meta) {
            wr_u8(w, (unsigned)fd->record << 6 | fd->meta.len);
            wr_bytes(w, fd->meta.ptr, fd->meta.len);
        }
        wr_be(w, fd->offset, fss);
        wr_bytes(w, fd->data, fd->len);
        break;
    }
    case CFDP_EOF:
        wr_u8(w, (unsigned)pdu->u.eof.condition << 4);
        wr_be(w, pdu->u.eof.checksum, 4);
        wr_be(w, pdu->u.eof.file_size, fss);
        write_fault(w, &pdu->u.eof.fault);
        break;
    case CFDP_FINISHED: {
        const cfdp_finished *f = &pdu->u.fin;
        wr_u8(w,
              (unsigned)f->condition << 4 | (unsigned)f->delivery << 2 | f->file_status);
        write_tlvs(w, &f->responses);
        write_fault(w, &f->fault);
        break;
    }
    case CFDP_ACK: {
        const cfdp_ack *a = &pdu->u.ack;
        wr_u8(w, (unsigned)a->directive << 4 | a->subtype);
        wr_u8(w, (unsigned)a->condition << 4 | a->txn_status);
        break;
    }
    case CFDP_METADATA: {
        const cfdp_metadata *m = &pdu->u.md;
        wr_u8(w, (unsigned)m->closure << 6 | m->checksum_type);
        wr_be(w, m->file_size, fss);
        write_name(w, &m->src_name);
        write_name(w, &m->dst_name);
        write_tlvs(w, &m->options);
        break;
    }
    case CFDP_NAK: {
        const cfdp_nak *n = &pdu->u.nak;
        wr_be(w, n->scope_start, fss);
        wr_be(w, n->scope_end, fss);
        for (size_t i = 0; i < n->segments.count; i++) {
            cfdp_range g = cfdp_nak_segment(&n->segments, i);
            wr_be(w, g.start, fss);
            wr_be(w, g.end, fss);
        }
        break;
    }
    case CFDP_PROMPT:
        wr_u8(w, (unsigned)pdu->u.prompt.response << 7);
        break;
    case CFDP_KEEP_ALIVE:
        wr_be(w, pdu->u.ka.progress, fss);
        break;
    }
}

/* Checks *pdu and sets *data_len to its data field's length (CRC included). */
static int check_all(const cfdp_pdu *pdu, size_t *data_len, const char **why)
{
    TRY(check_header(&pdu->hdr, why));
    TRY(check_body(pdu, why));
    wr sizing = {NULL, 0, 0, 0};
    write_body(&sizing, pdu);
    size_t dl = sizing.len + (pdu->hdr.crc ? 2 : 0);
    if (dl > 65535)
        FAIL(TERN_EOVERFLOW, "data field longer than 65535 bytes");
    *data_len = dl;
    return 0;
}

TERN_API int cfdp_pdu_check(const cfdp_pdu *pdu, const char **why)
{
    size_t dl;
    return check_all(pdu, &dl, why);
}

TERN_API int cfdp_pdu_size(const cfdp_pdu *pdu, size_t *len)
{
    size_t dl;
    TRY(check_all(pdu, &dl, NULL));
    *len = cfdp_header_len(&pdu->hdr) + dl;
    return 0;
}

TERN_API int cfdp_pdu_encode(const cfdp_pdu *pdu, void *buf, size_t cap, size_t *len)
{
    const cfdp_header *h = &pdu->hdr;
    size_t dl;
    TRY(check_all(pdu, &dl, NULL));
    unsigned el = eid_len_of(h), tl = tsn_len_of(h);
    size_t total = cfdp_header_len(h) + dl;
    if (cap < total)
        return TERN_ENOSPACE;
    wr w = {buf, cap, 0, 0};
    unsigned type =
        pdu->kind == CFDP_FILE_DATA ? CFDP_TYPE_FILE_DATA : CFDP_TYPE_DIRECTIVE;
    wr_u8(&w, 1u << 5 | type << 4 | (unsigned)h->direction << 3 | (unsigned)h->mode << 2 |
                  (unsigned)h->crc << 1 | h->large_file);
    wr_be(&w, dl, 2);
    wr_u8(&w, (unsigned)h->seg_ctrl << 7 | (el - 1) << 4 | (unsigned)h->seg_meta << 3 |
                  (tl - 1));
    wr_be(&w, h->src, el);
    wr_be(&w, h->tsn, tl);
    wr_be(&w, h->dst, el);
    write_body(&w, pdu);
    if (h->crc)
        wr_be(&w, tern_crc16_ccitt_false(TERN_CRC16_CCITT_FALSE_INIT, buf, w.len), 2);
    if (w.over || w.len != total)
        return TERN_ENOSPACE; /* not reached: sized above */
    *len = w.len;
    return 0;
}

/* ------------------------------------------------------------------- sizes */

TERN_API size_t cfdp_file_data_room(const cfdp_header *hdr, size_t meta_len,
                                    size_t max_pdu)
{
    size_t fixed = cfdp_header_len(hdr) + (hdr->large_file ? 8 : 4) + (hdr->crc ? 2 : 0);
    if (hdr->seg_meta)
        fixed += 1 + meta_len;
    size_t limit = cfdp_header_len(hdr) + 65535; /* the data field length's limit */
    if (max_pdu > limit)
        max_pdu = limit;
    return max_pdu > fixed ? max_pdu - fixed : 0;
}

TERN_API size_t cfdp_nak_room(const cfdp_header *hdr, size_t max_pdu)
{
    size_t fss = hdr->large_file ? 8 : 4;
    size_t fixed = cfdp_header_len(hdr) + 1 + 2 * fss + (hdr->crc ? 2 : 0);
    size_t limit = cfdp_header_len(hdr) + 65535;
    if (max_pdu > limit)
        max_pdu = limit;
    return max_pdu > fixed ? (max_pdu - fixed) / (2 * fss) : 0;
}

TERN_API size_t cfdp_pdu_struct_size(void)
{
    return sizeof(cfdp_pdu);
}
