/* CFDP TLVs (CCSDS 727.0-B-5 5.4): filestore request and response, message
 * to user, fault handler override, flow label, entity ID. */
#include <errno.h>
#include <string.h>

#include "cfdp_pdu.h"
#include "tlv.h"
#include "wire.h"

#define FAIL(code, text)                                                                 \
    do {                                                                                 \
        if (why)                                                                         \
            *why = (text);                                                               \
        return (code);                                                                   \
    } while (0)

int cfdp__condition_reserved(unsigned c)
{
    return c == 12 || c == 13 || c > 15;
}

/* Rename, append and replace name a second file; the other actions do not. */
static int takes_second(unsigned action)
{
    return action == CFDP_FS_RENAME_FILE || action == CFDP_FS_APPEND_FILE ||
           action == CFDP_FS_REPLACE_FILE;
}

/* An LV field: one length byte and that many bytes. */
static int take_lv(rd *r, cfdp_lv *lv)
{
    const uint8_t *n = rd_take(r, 1);
    if (!n)
        return -1;
    const uint8_t *v = rd_take(r, *n);
    if (!v)
        return -1;
    lv->ptr = v;
    lv->len = *n;
    return 0;
}

/* The filestore request or response value v[0..vlen). ION writes an empty
 * second-name LV for actions that take none (and reads one back); the
 * standard omits it. Both are read, and empty_second says which came. */
static int decode_fs(const uint8_t *v, size_t vlen, int response, cfdp_tlv *t,
                     const char **why)
{
    rd r = {v, vlen, 0};
    const uint8_t *b = rd_take(&r, 1);
    if (!b)
        FAIL(TERN_ETRUNCATED, response ? "filestore response: no action code"
                                       : "filestore request: no action code");
    t->action = *b >> 4;
    if (response)
        t->status = *b & 0x0f;
    if (t->action > CFDP_FS_DENY_DIR)
        FAIL(TERN_EMALFORMED, "filestore action code not defined");
    if (take_lv(&r, &t->first))
        FAIL(TERN_ETRUNCATED, "filestore TLV: first file name runs past the TLV");
    if (!t->first.len)
        FAIL(TERN_EMALFORMED, "filestore TLV: first file name is empty");
    if (takes_second(t->action)) {
        if (take_lv(&r, &t->second))
            FAIL(TERN_ETRUNCATED,
                 "filestore TLV: second file name of rename, append or replace missing");
        if (!t->second.len)
            FAIL(TERN_EMALFORMED, "filestore TLV: second file name is empty");
    }
    if (!response) {
        if (!takes_second(t->action) && rd_left(&r) == 1 && v[r.pos] == 0) {
            r.pos++; /* ION's empty second name */
            t->empty_second = 1;
        }
        if (rd_left(&r))
            FAIL(TERN_EMALFORMED, "filestore request: bytes after its file names");
        return 0;
    }
    /* response: the filestore message LV ends the value */
    rd keep = r;
    if (take_lv(&r, &t->data) == 0 && !rd_left(&r))
        return 0;
    if (!takes_second(t->action)) {
        cfdp_lv empty;
        r = keep;
        if (take_lv(&r, &empty) == 0 && empty.len == 0 && take_lv(&r, &t->data) == 0 &&
            !rd_left(&r)) {
            t->empty_second = 1;
            return 0;
        }
    }
    t->data = (cfdp_lv){0};
    r = keep;
    if (!rd_left(&r))
        FAIL(TERN_ETRUNCATED, "filestore response: no filestore message field");
    if (take_lv(&r, &t->data))
        FAIL(TERN_ETRUNCATED, "filestore response: message runs past the TLV");
    FAIL(TERN_EMALFORMED, "filestore response: bytes after its message");
}

int cfdp__fs_decode(const uint8_t *v, size_t vlen, int response, cfdp_tlv *t,
                    const char **why)
{
    memset(t, 0, sizeof *t);
    t->type = response ? CFDP_TLV_FS_RESPONSE : CFDP_TLV_FS_REQUEST;
    return decode_fs(v, vlen, response, t, why);
}

TERN_API int cfdp_tlv_decode(const void *buf, size_t len, cfdp_tlv *tlv, size_t *used,
                             const char **why)
{
    const uint8_t *p = buf;
    memset(tlv, 0, sizeof *tlv);
    if (len < 2)
        FAIL(TERN_ETRUNCATED, "TLV shorter than its type and length");
    size_t vlen = p[1];
    if (vlen > len - 2)
        FAIL(TERN_ETRUNCATED, "TLV value runs past the end of its list");
    const uint8_t *v = p + 2;
    tlv->type = p[0];
    int rc = 0;
    switch (p[0]) {
    case CFDP_TLV_FS_REQUEST:
    case CFDP_TLV_FS_RESPONSE:
        rc = decode_fs(v, vlen, p[0] == CFDP_TLV_FS_RESPONSE, tlv, why);
        break;
    case CFDP_TLV_MSG_TO_USER:
    case CFDP_TLV_FLOW_LABEL:
        tlv->data.ptr = v;
        tlv->data.len = (uint8_t)vlen;
        break;
    case CFDP_TLV_FAULT_HANDLER:
        if (vlen != 1)
            FAIL(TERN_EMALFORMED, "fault handler override: value is not 1 byte");
        tlv->condition = v[0] >> 4;
        tlv->handler = v[0] & 0x0f;
        /* A reserved condition code (12, 13) is accepted here: ION 4.1.3's
         * bpcp sends an override for each of the 16 codes in every Metadata,
         * and refusing them refused its whole transfer. Such an override can
         * never apply, since no fault of that code is ever raised. */
        if (tlv->handler < CFDP_HANDLER_CANCEL || tlv->handler > CFDP_HANDLER_ABANDON)
            FAIL(TERN_EMALFORMED, "fault handler code not defined");
        break;
    case CFDP_TLV_ENTITY_ID:
        if (vlen < 1 || vlen > 8)
            FAIL(TERN_EMALFORMED, "entity ID TLV: length not 1-8 bytes");
        tlv->eid.len = (uint8_t)vlen;
        tlv->eid.id = be_get(v, (unsigned)vlen);
        break;
    default:
        FAIL(TERN_EMALFORMED, "TLV type not defined");
    }
    if (rc)
        return rc;
    *used = 2 + vlen;
    return 0;
}

static int lv_ok(const cfdp_lv *lv)
{
    return lv->ptr || !lv->len;
}

/* Bytes of the TLV's value as the encoder writes it (> 255: does not fit). */
static size_t value_len(const cfdp_tlv *t)
{
    switch (t->type) {
    case CFDP_TLV_FS_REQUEST:
    case CFDP_TLV_FS_RESPONSE: {
        size_t n = 1 + 1 + (size_t)t->first.len;
        if (takes_second(t->action))
            n += 1 + (size_t)t->second.len;
        else if (t->empty_second)
            n += 1;
        if (t->type == CFDP_TLV_FS_RESPONSE)
            n += 1 + (size_t)t->data.len;
        return n;
    }
    case CFDP_TLV_MSG_TO_USER:
    case CFDP_TLV_FLOW_LABEL:
        return t->data.len;
    case CFDP_TLV_FAULT_HANDLER:
        return 1;
    default:
        return t->eid.len;
    }
}

int cfdp__eid_check(const cfdp_eid *e, int optional, const char **why)
{
    if (optional && e->len == 0)
        return 0;
    if (e->len < 1 || e->len > 8)
        FAIL(-EINVAL, "entity ID length not 1-8 bytes");
    if (e->len < 8 && e->id >> (8 * e->len))
        FAIL(TERN_EOVERFLOW, "entity ID does not fit its length");
    return 0;
}

TERN_API int cfdp_tlv_check(const cfdp_tlv *t, const char **why)
{
    switch (t->type) {
    case CFDP_TLV_FS_REQUEST:
    case CFDP_TLV_FS_RESPONSE:
        if (t->action > CFDP_FS_DENY_DIR)
            FAIL(-EINVAL, "filestore action code not defined");
        if (t->type == CFDP_TLV_FS_RESPONSE && t->status > 15)
            FAIL(-EINVAL, "filestore status code wider than 4 bits");
        if (!t->first.len || !lv_ok(&t->first))
            FAIL(-EINVAL, "filestore TLV: first file name is empty");
        if (takes_second(t->action) && (!t->second.len || !lv_ok(&t->second)))
            FAIL(-EINVAL, "filestore TLV: second file name of rename, append or replace "
                          "missing");
        if (!takes_second(t->action) && t->second.len)
            FAIL(-EINVAL,
                 "filestore TLV: a second file name for an action that takes none");
        if (t->empty_second > 1 || (t->empty_second && takes_second(t->action)))
            FAIL(-EINVAL, "filestore TLV: empty_second set for an action that names two "
                          "files");
        if (!lv_ok(&t->data))
            FAIL(-EINVAL, "filestore response: message bytes missing");
        break;
    case CFDP_TLV_MSG_TO_USER:
    case CFDP_TLV_FLOW_LABEL:
        if (!lv_ok(&t->data))
            FAIL(-EINVAL, "TLV value bytes missing");
        break;
    case CFDP_TLV_FAULT_HANDLER:
        /* 12 and 13 allowed, as the decoder does, so that a received option
         * list encodes again byte for byte; only 4 bits fit. */
        if (t->condition > 15)
            FAIL(-EINVAL, "fault handler override: condition code past 4 bits");
        if (t->handler < CFDP_HANDLER_CANCEL || t->handler > CFDP_HANDLER_ABANDON)
            FAIL(-EINVAL, "fault handler code not defined");
        break;
    case CFDP_TLV_ENTITY_ID: {
        int rc = cfdp__eid_check(&t->eid, 0, why);
        if (rc)
            return rc;
        break;
    }
    default:
        FAIL(-EINVAL, "TLV type not defined");
    }
    if (value_len(t) > 255)
        FAIL(TERN_EOVERFLOW, "TLV value longer than 255 bytes");
    return 0;
}

static void write_lv(wr *w, const cfdp_lv *lv)
{
    wr_u8(w, lv->len);
    wr_bytes(w, lv->ptr, lv->len);
}

void cfdp__tlv_write(wr *w, const cfdp_tlv *t)
{
    wr_u8(w, t->type);
    wr_u8(w, (unsigned)value_len(t));
    switch (t->type) {
    case CFDP_TLV_FS_REQUEST:
    case CFDP_TLV_FS_RESPONSE:
        wr_u8(w, (unsigned)t->action << 4 |
                     (t->type == CFDP_TLV_FS_RESPONSE ? t->status & 0x0f : 0));
        write_lv(w, &t->first);
        if (takes_second(t->action))
            write_lv(w, &t->second);
        else if (t->empty_second)
            wr_u8(w, 0);
        if (t->type == CFDP_TLV_FS_RESPONSE)
            write_lv(w, &t->data);
        break;
    case CFDP_TLV_MSG_TO_USER:
    case CFDP_TLV_FLOW_LABEL:
        wr_bytes(w, t->data.ptr, t->data.len);
        break;
    case CFDP_TLV_FAULT_HANDLER:
        wr_u8(w, (unsigned)t->condition << 4 | t->handler);
        break;
    default:
        wr_be(w, t->eid.id, t->eid.len);
        break;
    }
}

TERN_API int cfdp_tlv_encode(const cfdp_tlv *tlv, void *buf, size_t cap, size_t *len)
{
    int rc = cfdp_tlv_check(tlv, NULL);
    if (rc)
        return rc;
    wr w = {buf, cap, 0, 0};
    cfdp__tlv_write(&w, tlv);
    if (w.over)
        return TERN_ENOSPACE;
    *len = w.len;
    return 0;
}

TERN_API int cfdp_tlvs_next(const cfdp_tlvs *list, size_t *pos, cfdp_tlv *out)
{
    if (list->items) {
        if (*pos >= list->count)
            return TERN_EEND;
        *out = list->items[(*pos)++];
        return 0;
    }
    if (!list->raw || *pos >= list->raw_len)
        return TERN_EEND;
    size_t used;
    int rc = cfdp_tlv_decode(list->raw + *pos, list->raw_len - *pos, out, &used, NULL);
    if (rc)
        return rc;
    *pos += used;
    return 0;
}

TERN_API size_t cfdp_tlv_struct_size(void)
{
    return sizeof(cfdp_tlv);
}
