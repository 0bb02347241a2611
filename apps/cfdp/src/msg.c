/* Reserved CFDP messages (CCSDS 727.0-B-5 chapter 6): "cfdp", a type byte,
 * the content. Bit layouts follow tables 6-2 to 6-25 (bit 0 is the most
 * significant, as everywhere in CFDP). */
#include <errno.h>
#include <string.h>

#include "cfdp_msg.h"
#include "cfdp_pdu.h"
#include "tlv.h"
#include "wire.h"

#define FAIL(code, text)                                                                 \
    do {                                                                                 \
        if (why)                                                                         \
            *why = (text);                                                               \
        return (code);                                                                   \
    } while (0)

static const char ident[4] = {'c', 'f', 'd', 'p'};

const char *cfdp_msg_type_name(unsigned type)
{
    switch (type) {
    case CFDP_MSG_PROXY_PUT_REQ:
        return "proxy put request";
    case CFDP_MSG_PROXY_MSG_TO_USER:
        return "proxy message to user";
    case CFDP_MSG_PROXY_FS_REQ:
        return "proxy filestore request";
    case CFDP_MSG_PROXY_FAULT_HANDLER:
        return "proxy fault handler override";
    case CFDP_MSG_PROXY_TX_MODE:
        return "proxy transmission mode";
    case CFDP_MSG_PROXY_FLOW_LABEL:
        return "proxy flow label";
    case CFDP_MSG_PROXY_SEG_CTRL:
        return "proxy segmentation control";
    case CFDP_MSG_PROXY_PUT_RESP:
        return "proxy put response";
    case CFDP_MSG_PROXY_FS_RESP:
        return "proxy filestore response";
    case CFDP_MSG_PROXY_PUT_CANCEL:
        return "proxy put cancel";
    case CFDP_MSG_ORIGINATING_TID:
        return "originating transaction ID";
    case CFDP_MSG_PROXY_CLOSURE:
        return "proxy closure request";
    case CFDP_MSG_DIR_LIST_REQ:
        return "directory listing request";
    case CFDP_MSG_DIR_LIST_RESP:
        return "directory listing response";
    case CFDP_MSG_STATUS_REPORT_REQ:
        return "remote status report request";
    case CFDP_MSG_STATUS_REPORT_RESP:
        return "remote status report response";
    case CFDP_MSG_SUSPEND_REQ:
        return "remote suspend request";
    case CFDP_MSG_SUSPEND_RESP:
        return "remote suspend response";
    case CFDP_MSG_RESUME_REQ:
        return "remote resume request";
    case CFDP_MSG_RESUME_RESP:
        return "remote resume response";
    default:
        return "unknown";
    }
}

static int defined(unsigned type)
{
    return strcmp(cfdp_msg_type_name(type), "unknown") != 0;
}

int cfdp_msg_is_reserved(const void *value, size_t len)
{
    return value && len >= 5 && memcmp(value, ident, 4) == 0;
}

/* ------------------------------------------------------------- decoding */

static int take_lv(rd *r, cfdp_lv *lv)
{
    const uint8_t *n = rd_take(r, 1);
    if (!n)
        return -1;
    const uint8_t *v = rd_take(r, *n);
    if (!v)
        return -1;
    lv->ptr = *n ? v : NULL;
    lv->len = *n;
    return 0;
}

/* The lengths byte (spare, 3 bits entity ID length - 1, spare, 3 bits
 * sequence number length - 1), the source entity ID, the sequence number:
 * table 6-2's layout, which the remote requests and responses repeat. */
static int take_tid(rd *r, cfdp_tid *t)
{
    const uint8_t *b = rd_take(r, 1);
    if (!b)
        return -1;
    t->src_len = (uint8_t)(((*b >> 4) & 7) + 1);
    t->tsn_len = (uint8_t)((*b & 7) + 1);
    const uint8_t *s = rd_take(r, t->src_len);
    if (!s)
        return -1;
    const uint8_t *q = rd_take(r, t->tsn_len);
    if (!q)
        return -1;
    t->src = be_get(s, t->src_len);
    t->tsn = be_get(q, t->tsn_len);
    return 0;
}

static int take_byte(rd *r, uint8_t *v)
{
    const uint8_t *b = rd_take(r, 1);
    if (!b)
        return -1;
    *v = *b;
    return 0;
}

int cfdp_msg_decode(const void *buf, size_t len, cfdp_msg *m, const char **why)
{
    if (!buf || !m)
        return -EINVAL;
    memset(m, 0, sizeof *m);
    if (!cfdp_msg_is_reserved(buf, len))
        FAIL(TERN_ETYPE, "not a reserved CFDP message (no \"cfdp\" identifier and type)");
    if (len > CFDP_MSG_MAX) /* what no Message to User TLV carries, nor could encode */
        FAIL(TERN_EMALFORMED, "reserved CFDP message: longer than the 255 bytes of a "
                              "message to user");
    const uint8_t *p = buf;
    m->type = p[4];
    if (!defined(m->type))
        FAIL(TERN_EMALFORMED, "reserved CFDP message: type not defined");
    rd r = {p, len, 5};
    uint8_t b = 0;
    cfdp_lv v;
    switch (m->type) {
    case CFDP_MSG_PROXY_PUT_REQ:
        if (take_lv(&r, &v))
            FAIL(TERN_ETRUNCATED, "proxy put request: destination entity ID runs past "
                                  "the message");
        if (v.len < 1 || v.len > 8)
            FAIL(TERN_EMALFORMED,
                 "proxy put request: destination entity ID not 1-8 bytes");
        m->dst.len = v.len;
        m->dst.id = be_get(v.ptr, v.len);
        if (take_lv(&r, &m->name1) || take_lv(&r, &m->name2))
            FAIL(TERN_ETRUNCATED, "proxy put request: a file name runs past the message");
        break;
    case CFDP_MSG_PROXY_MSG_TO_USER:
    case CFDP_MSG_PROXY_FLOW_LABEL:
        if (take_lv(&r, &m->data))
            FAIL(TERN_ETRUNCATED, m->type == CFDP_MSG_PROXY_MSG_TO_USER
                                      ? "proxy message to user: message runs past the end"
                                      : "proxy flow label: label runs past the end");
        break;
    case CFDP_MSG_PROXY_FS_REQ:
    case CFDP_MSG_PROXY_FS_RESP: {
        int resp = m->type == CFDP_MSG_PROXY_FS_RESP;
        if (take_lv(&r, &v))
            FAIL(TERN_ETRUNCATED, resp
                                      ? "proxy filestore response: runs past the message"
                                      : "proxy filestore request: runs past the message");
        int rc = cfdp__fs_decode(v.ptr, v.len, resp, &m->fs, why);
        if (rc)
            return rc;
        break;
    }
    case CFDP_MSG_PROXY_FAULT_HANDLER:
        if (take_byte(&r, &b))
            FAIL(TERN_ETRUNCATED,
                 "proxy fault handler override: no condition and handler");
        m->condition = b >> 4;
        m->handler = b & 0x0f;
        if (cfdp__condition_reserved(m->condition))
            FAIL(TERN_EMALFORMED, "condition code is reserved (12 or 13)");
        if (m->handler < CFDP_HANDLER_CANCEL || m->handler > CFDP_HANDLER_ABANDON)
            FAIL(TERN_EMALFORMED, "fault handler code not defined");
        break;
    case CFDP_MSG_PROXY_TX_MODE:
    case CFDP_MSG_PROXY_SEG_CTRL:
    case CFDP_MSG_PROXY_CLOSURE:
        /* seven spare bits, then the flag */
        if (take_byte(&r, &b))
            FAIL(TERN_ETRUNCATED, "proxy message: no flag byte");
        if (m->type == CFDP_MSG_PROXY_TX_MODE)
            m->mode = b & 1;
        else
            m->flag = b & 1;
        break;
    case CFDP_MSG_PROXY_PUT_RESP:
        /* condition (4 bits), spare, delivery code, file status (2 bits) */
        if (take_byte(&r, &b))
            FAIL(TERN_ETRUNCATED, "proxy put response: no status byte");
        m->condition = b >> 4;
        m->delivery = (b >> 2) & 1;
        m->file_status = b & 3;
        if (cfdp__condition_reserved(m->condition))
            FAIL(TERN_EMALFORMED, "condition code is reserved (12 or 13)");
        break;
    case CFDP_MSG_PROXY_PUT_CANCEL:
        break;
    case CFDP_MSG_ORIGINATING_TID:
    case CFDP_MSG_SUSPEND_REQ:
    case CFDP_MSG_RESUME_REQ:
        if (take_tid(&r, &m->tid))
            FAIL(TERN_ETRUNCATED, "transaction ID runs past the message");
        break;
    case CFDP_MSG_DIR_LIST_RESP:
        /* listing response code in bit 0: 0 successful */
        if (take_byte(&r, &b))
            FAIL(TERN_ETRUNCATED, "directory listing response: no response code");
        m->ok = !(b & 0x80);
        __attribute__((fallthrough)); /* the names follow as in the request */
    case CFDP_MSG_DIR_LIST_REQ:
        if (take_lv(&r, &m->name1) || take_lv(&r, &m->name2))
            FAIL(TERN_ETRUNCATED, "directory listing: a name runs past the message");
        break;
    case CFDP_MSG_STATUS_REPORT_REQ:
        if (take_tid(&r, &m->tid))
            FAIL(TERN_ETRUNCATED, "transaction ID runs past the message");
        if (take_lv(&r, &m->name1))
            FAIL(TERN_ETRUNCATED, "remote status report request: report file name runs "
                                  "past the message");
        break;
    case CFDP_MSG_STATUS_REPORT_RESP:
        /* transaction status (2 bits), 5 spare, response code: 1 successful */
        if (take_byte(&r, &b))
            FAIL(TERN_ETRUNCATED, "remote status report response: no status byte");
        m->txn_status = b >> 6;
        m->ok = b & 1;
        if (take_tid(&r, &m->tid))
            FAIL(TERN_ETRUNCATED, "transaction ID runs past the message");
        break;
    default: /* CFDP_MSG_SUSPEND_RESP, CFDP_MSG_RESUME_RESP */
        /* suspension indicator, transaction status (2 bits), 5 spare */
        if (take_byte(&r, &b))
            FAIL(TERN_ETRUNCATED, "remote suspend/resume response: no status byte");
        m->suspended = b >> 7;
        m->txn_status = (b >> 5) & 3;
        if (take_tid(&r, &m->tid))
            FAIL(TERN_ETRUNCATED, "transaction ID runs past the message");
        break;
    }
    if (rd_left(&r))
        FAIL(TERN_EMALFORMED, "reserved CFDP message: bytes after its content");
    return 0;
}

/* ------------------------------------------------------------- encoding */

static int lv_ok(const cfdp_lv *lv)
{
    return !lv->len || lv->ptr;
}

static int id_ok(uint64_t v, uint8_t len)
{
    return len <= 8 && (len == 0 || len == 8 || v >> (8 * len) == 0);
}

int cfdp_msg_check(const cfdp_msg *m, const char **why)
{
    if (!m)
        return -EINVAL;
    if (!defined(m->type))
        FAIL(-EINVAL, "reserved CFDP message: type not defined");
    switch (m->type) {
    case CFDP_MSG_PROXY_PUT_REQ:
        if (!id_ok(m->dst.id, m->dst.len))
            FAIL(-EINVAL, "proxy put request: destination entity ID does not fit its "
                          "length");
        if (!lv_ok(&m->name1) || !lv_ok(&m->name2))
            FAIL(-EINVAL, "proxy put request: a file name has a length but no bytes");
        break;
    case CFDP_MSG_PROXY_MSG_TO_USER:
    case CFDP_MSG_PROXY_FLOW_LABEL:
        if (!lv_ok(&m->data))
            FAIL(-EINVAL, "proxy message: data has a length but no bytes");
        break;
    case CFDP_MSG_PROXY_FS_REQ:
    case CFDP_MSG_PROXY_FS_RESP: {
        cfdp_tlv t = m->fs;
        t.type =
            m->type == CFDP_MSG_PROXY_FS_REQ ? CFDP_TLV_FS_REQUEST : CFDP_TLV_FS_RESPONSE;
        int rc = cfdp_tlv_check(&t, why);
        if (rc)
            return rc;
        break;
    }
    case CFDP_MSG_PROXY_FAULT_HANDLER:
        if (cfdp__condition_reserved(m->condition))
            FAIL(-EINVAL, "condition code is reserved (12 or 13) or past 4 bits");
        if (m->handler < CFDP_HANDLER_CANCEL || m->handler > CFDP_HANDLER_ABANDON)
            FAIL(-EINVAL, "fault handler code not defined");
        break;
    case CFDP_MSG_PROXY_TX_MODE:
        if (m->mode > 1)
            FAIL(-EINVAL, "proxy transmission mode: mode is not 0 or 1");
        break;
    case CFDP_MSG_PROXY_SEG_CTRL:
    case CFDP_MSG_PROXY_CLOSURE:
        if (m->flag > 1)
            FAIL(-EINVAL, "proxy message: flag is not 0 or 1");
        break;
    case CFDP_MSG_PROXY_PUT_RESP:
        if (cfdp__condition_reserved(m->condition))
            FAIL(-EINVAL, "condition code is reserved (12 or 13) or past 4 bits");
        if (m->delivery > 1 || m->file_status > 3)
            FAIL(-EINVAL,
                 "proxy put response: delivery code or file status out of range");
        break;
    case CFDP_MSG_DIR_LIST_REQ:
    case CFDP_MSG_DIR_LIST_RESP:
        if (!lv_ok(&m->name1) || !lv_ok(&m->name2))
            FAIL(-EINVAL, "directory listing: a name has a length but no bytes");
        if (m->ok > 1)
            FAIL(-EINVAL, "directory listing response: ok is not 0 or 1");
        break;
    case CFDP_MSG_STATUS_REPORT_REQ:
        if (!lv_ok(&m->name1))
            FAIL(-EINVAL, "remote status report request: report file name has a length "
                          "but no bytes");
        break;
    case CFDP_MSG_STATUS_REPORT_RESP:
    case CFDP_MSG_SUSPEND_RESP:
    case CFDP_MSG_RESUME_RESP:
        if (m->txn_status > 3 || m->ok > 1 || m->suspended > 1)
            FAIL(-EINVAL, "remote response: status out of range");
        break;
    default:
        break;
    }
    switch (m->type) {
    case CFDP_MSG_ORIGINATING_TID:
    case CFDP_MSG_STATUS_REPORT_REQ:
    case CFDP_MSG_STATUS_REPORT_RESP:
    case CFDP_MSG_SUSPEND_REQ:
    case CFDP_MSG_SUSPEND_RESP:
    case CFDP_MSG_RESUME_REQ:
    case CFDP_MSG_RESUME_RESP:
        if (!id_ok(m->tid.src, m->tid.src_len) || !id_ok(m->tid.tsn, m->tid.tsn_len))
            FAIL(-EINVAL, "transaction ID: a value does not fit its length");
        break;
    default:
        break;
    }
    return 0;
}

static void put_lv(wr *w, const cfdp_lv *lv)
{
    wr_u8(w, lv->len);
    wr_bytes(w, lv->ptr, lv->len);
}

static void put_tid(wr *w, const cfdp_tid *t)
{
    unsigned sl = t->src_len ? t->src_len : cfdp_id_len(t->src);
    unsigned ql = t->tsn_len ? t->tsn_len : cfdp_id_len(t->tsn);
    wr_u8(w, (sl - 1) << 4 | (ql - 1));
    wr_be(w, t->src, sl);
    wr_be(w, t->tsn, ql);
}

int cfdp_msg_encode(const cfdp_msg *m, void *buf, size_t cap, size_t *len)
{
    int rc = cfdp_msg_check(m, NULL);
    if (rc)
        return rc;
    if (!len || (cap && !buf))
        return -EINVAL;
    /* a sizing pass, then the write: nothing is written unless it fits */
    for (int pass = 0; pass < 2; pass++) {
        wr w = {pass ? buf : NULL, pass ? cap : 0, 0, 0};
        wr_bytes(&w, ident, 4);
        wr_u8(&w, m->type);
        switch (m->type) {
        case CFDP_MSG_PROXY_PUT_REQ: {
            unsigned dl = m->dst.len ? m->dst.len : cfdp_id_len(m->dst.id);
            wr_u8(&w, dl);
            wr_be(&w, m->dst.id, dl);
            put_lv(&w, &m->name1);
            put_lv(&w, &m->name2);
            break;
        }
        case CFDP_MSG_PROXY_MSG_TO_USER:
        case CFDP_MSG_PROXY_FLOW_LABEL:
            put_lv(&w, &m->data);
            break;
        case CFDP_MSG_PROXY_FS_REQ:
        case CFDP_MSG_PROXY_FS_RESP: {
            /* the TLV's length and value are the LV this message carries */
            cfdp_tlv t = m->fs;
            t.type = m->type == CFDP_MSG_PROXY_FS_REQ ? CFDP_TLV_FS_REQUEST
                                                      : CFDP_TLV_FS_RESPONSE;
            uint8_t tmp[2 + 255];
            size_t n;
            if ((rc = cfdp_tlv_encode(&t, tmp, sizeof tmp, &n)))
                return rc == TERN_ENOSPACE ? TERN_EOVERFLOW : rc;
            wr_bytes(&w, tmp + 1, n - 1);
            break;
        }
        case CFDP_MSG_PROXY_FAULT_HANDLER:
            wr_u8(&w, (unsigned)m->condition << 4 | m->handler);
            break;
        case CFDP_MSG_PROXY_TX_MODE:
            wr_u8(&w, m->mode);
            break;
        case CFDP_MSG_PROXY_SEG_CTRL:
        case CFDP_MSG_PROXY_CLOSURE:
            wr_u8(&w, m->flag);
            break;
        case CFDP_MSG_PROXY_PUT_RESP:
            wr_u8(&w, (unsigned)m->condition << 4 | (unsigned)m->delivery << 2 |
                          m->file_status);
            break;
        case CFDP_MSG_PROXY_PUT_CANCEL:
            break;
        case CFDP_MSG_ORIGINATING_TID:
        case CFDP_MSG_SUSPEND_REQ:
        case CFDP_MSG_RESUME_REQ:
            put_tid(&w, &m->tid);
            break;
        case CFDP_MSG_DIR_LIST_REQ:
        case CFDP_MSG_DIR_LIST_RESP:
            if (m->type == CFDP_MSG_DIR_LIST_RESP)
                wr_u8(&w, m->ok ? 0x00 : 0x80);
            put_lv(&w, &m->name1);
            put_lv(&w, &m->name2);
            break;
        case CFDP_MSG_STATUS_REPORT_REQ:
            put_tid(&w, &m->tid);
            put_lv(&w, &m->name1);
            break;
        case CFDP_MSG_STATUS_REPORT_RESP:
            wr_u8(&w, (unsigned)m->txn_status << 6 | m->ok);
            put_tid(&w, &m->tid);
            break;
        default: /* suspend / resume response */
            wr_u8(&w, (unsigned)m->suspended << 7 | (unsigned)m->txn_status << 5);
            put_tid(&w, &m->tid);
            break;
        }
        if (w.len > CFDP_MSG_MAX)
            return TERN_EOVERFLOW;
        if (!pass && w.len > cap)
            return TERN_ENOSPACE;
        *len = w.len;
    }
    return 0;
}

int cfdp_msg_tlv(const cfdp_msg *m, uint8_t *buf, size_t cap, cfdp_tlv *tlv)
{
    if (!tlv)
        return -EINVAL;
    size_t n;
    int rc = cfdp_msg_encode(m, buf, cap, &n);
    if (rc)
        return rc;
    memset(tlv, 0, sizeof *tlv);
    tlv->type = CFDP_TLV_MSG_TO_USER;
    tlv->data.ptr = buf;
    tlv->data.len = (uint8_t)n;
    return 0;
}

size_t cfdp_msg_struct_size(void)
{
    return sizeof(cfdp_msg);
}
