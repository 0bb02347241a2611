/* The client protocol's wire format (see tern_proto.h, docs/node.md). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "tern/cbor.h"
#include "tern_proto.h"

/* ---------------------------------------------------------------- header */

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

TERN_API void tern_proto_hdr_pack(uint8_t *out, uint32_t type, uint32_t len, uint64_t id)
{
    put32(out, type);
    put32(out + 4, len);
    put64(out + 8, id);
}

TERN_API const char *tern_proto_type_name(uint32_t type)
{
    switch (type) {
    case TERN_MSG_HELLO:
        return "HELLO";
    case TERN_MSG_OPEN:
        return "OPEN";
    case TERN_MSG_CLOSE:
        return "CLOSE";
    case TERN_MSG_SEND:
        return "SEND";
    case TERN_MSG_RECV:
        return "RECV";
    case TERN_MSG_STATUS:
        return "STATUS";
    case TERN_MSG_ADMIN:
        return "ADMIN";
    case TERN_MSG_STOP:
        return "STOP";
    case TERN_MSG_SEND_BATCH:
        return "SEND_BATCH";
    case TERN_MSG_OK:
        return "OK";
    case TERN_MSG_ERROR:
        return "ERROR";
    case TERN_MSG_HELLO_OK:
        return "HELLO_OK";
    case TERN_MSG_SENT:
        return "SENT";
    case TERN_MSG_SENT_BATCH:
        return "SENT_BATCH";
    case TERN_MSG_DELIVER:
        return "DELIVER";
    case TERN_MSG_DELIVER_BATCH:
        return "DELIVER_BATCH";
    case TERN_MSG_DROPPED:
        return "DROPPED";
    case TERN_MSG_STATUS_OK:
        return "STATUS_OK";
    case TERN_MSG_ADMIN_OK:
        return "ADMIN_OK";
    default:
        return "unknown";
    }
}

TERN_API int tern_proto_hdr_unpack(const uint8_t *msg, size_t n, tern_msg_hdr *h,
                                   const char **why)
{
    const char *w = NULL;
    if (n < TERN_PROTO_HDR)
        w = "message shorter than its 16-byte header";
    else if (n > TERN_PROTO_MSG_MAX)
        w = "message longer than the protocol allows";
    if (!w) {
        h->type = get32(msg);
        h->len = get32(msg + 4);
        h->id = get64(msg + 8);
        if ((size_t)h->len != n - TERN_PROTO_HDR)
            w = "body length in the header differs from the datagram's";
        else if (!strcmp(tern_proto_type_name(h->type), "unknown"))
            w = "unknown message type";
    }
    if (why)
        *why = w;
    return w ? TERN_EMALFORMED : 0;
}

/* ------------------------------------------------------------- encoders */

/* Encodes the body with the header in front: the caller fills e after
 * enc_begin and calls enc_end. */
static void enc_begin(tern_cbor_enc *e, uint8_t *buf, size_t cap)
{
    if (cap < TERN_PROTO_HDR)
        tern_cbor_enc_init(e, NULL, 0);
    else
        tern_cbor_enc_init(e, buf + TERN_PROTO_HDR, cap - TERN_PROTO_HDR);
}

static int enc_end(tern_cbor_enc *e, uint8_t *buf, size_t cap, uint32_t type, uint64_t id)
{
    size_t n;
    int rc = tern_cbor_enc_finish(e, &n);
    if (rc == 0 && cap < TERN_PROTO_HDR)
        rc = TERN_ENOSPACE;
    if (rc)
        return rc;
    if (n + TERN_PROTO_HDR > TERN_PROTO_MSG_MAX)
        return -EMSGSIZE;
    tern_proto_hdr_pack(buf, type, (uint32_t)n, id);
    return (int)(n + TERN_PROTO_HDR);
}

static int text_ok(const char *s, size_t max)
{
    return s && strlen(s) < max;
}

TERN_API int tern_proto_enc_hello(uint8_t *buf, size_t cap, uint64_t id, uint64_t version)
{
    tern_cbor_enc e;
    enc_begin(&e, buf, cap);
    tern_cbor_enc_array(&e, 1);
    tern_cbor_enc_uint(&e, version);
    return enc_end(&e, buf, cap, TERN_MSG_HELLO, id);
}

TERN_API int tern_proto_enc_hello_ok(uint8_t *buf, size_t cap, uint64_t id,
                                     uint64_t version, uint64_t node)
{
    tern_cbor_enc e;
    enc_begin(&e, buf, cap);
    tern_cbor_enc_array(&e, 2);
    tern_cbor_enc_uint(&e, version);
    tern_cbor_enc_uint(&e, node);
    return enc_end(&e, buf, cap, TERN_MSG_HELLO_OK, id);
}

TERN_API int tern_proto_enc_eid(uint8_t *buf, size_t cap, uint32_t type, uint64_t id,
                                const char *eid)
{
    if (!text_ok(eid, TERN_PROTO_EID_MAX))
        return -EINVAL;
    tern_cbor_enc e;
    enc_begin(&e, buf, cap);
    tern_cbor_enc_array(&e, 1);
    tern_cbor_enc_cstr(&e, eid);
    return enc_end(&e, buf, cap, type, id);
}

TERN_API int tern_proto_enc_empty(uint8_t *buf, size_t cap, uint32_t type, uint64_t id)
{
    tern_cbor_enc e;
    enc_begin(&e, buf, cap);
    tern_cbor_enc_array(&e, 0);
    return enc_end(&e, buf, cap, type, id);
}

static void enc_send_body(tern_cbor_enc *e, const tern_msg_send *m)
{
    int head = m->has_fd && m->head_len;
    tern_cbor_enc_array(e, head ? 10 : 9);
    tern_cbor_enc_cstr(e, m->src);
    tern_cbor_enc_cstr(e, m->dest);
    tern_cbor_enc_uint(e, m->lifetime_ms);
    tern_cbor_enc_uint(e, m->priority);
    tern_cbor_enc_uint(e, m->ordinal);
    tern_cbor_enc_uint(e, m->flags);
    tern_cbor_enc_cstr(e, m->report_to);
    tern_cbor_enc_uint(e, m->offset);
    if (m->has_fd)
        tern_cbor_enc_uint(e, m->len);
    else
        tern_cbor_enc_bytes(e, m->payload, (size_t)m->len);
    if (head)
        tern_cbor_enc_bytes(e, m->head, (size_t)m->head_len);
}

TERN_API int tern_proto_enc_send(uint8_t *buf, size_t cap, uint64_t id,
                                 const tern_msg_send *m)
{
    if (!text_ok(m->src, TERN_PROTO_EID_MAX) || !text_ok(m->dest, TERN_PROTO_EID_MAX) ||
        !text_ok(m->report_to, TERN_PROTO_EID_MAX) ||
        (!m->has_fd && (m->len > TERN_PROTO_INLINE_MAX || (m->len && !m->payload))) ||
        m->head_len > TERN_PROTO_HEAD_MAX || (m->head_len && (!m->has_fd || !m->head)))
        return -EINVAL;
    tern_cbor_enc e;
    enc_begin(&e, buf, cap);
    enc_send_body(&e, m);
    return enc_end(&e, buf, cap, TERN_MSG_SEND, id);
}

TERN_API int tern_proto_enc_recv(uint8_t *buf, size_t cap, uint64_t id, const char *eid,
                                 uint64_t credit, uint64_t acked)
{
    if (!text_ok(eid, TERN_PROTO_EID_MAX))
        return -EINVAL;
    tern_cbor_enc e;
    enc_begin(&e, buf, cap);
    tern_cbor_enc_array(&e, 3);
    tern_cbor_enc_cstr(&e, eid);
    tern_cbor_enc_uint(&e, credit);
    tern_cbor_enc_uint(&e, acked);
    return enc_end(&e, buf, cap, TERN_MSG_RECV, id);
}

TERN_API int tern_proto_enc_code_text(uint8_t *buf, size_t cap, uint32_t type,
                                      uint64_t id, int64_t code, const char *text)
{
    if (!text)
        text = "";
    size_t tl = strnlen(text, TERN_PROTO_TEXT_MAX); /* longer texts are cut */
    tern_cbor_enc e;
    enc_begin(&e, buf, cap);
    tern_cbor_enc_array(&e, 2);
    tern_cbor_enc_int(&e, code);
    tern_cbor_enc_text(&e, text, tl);
    return enc_end(&e, buf, cap, type, id);
}

TERN_API int tern_proto_enc_admin(uint8_t *buf, size_t cap, uint64_t id,
                                  const char *module, const char *line)
{
    if (!text_ok(module, TERN_PROTO_TEXT_MAX) || !text_ok(line, TERN_PROTO_TEXT_MAX))
        return -EINVAL;
    tern_cbor_enc e;
    enc_begin(&e, buf, cap);
    tern_cbor_enc_array(&e, 2);
    tern_cbor_enc_cstr(&e, module);
    tern_cbor_enc_cstr(&e, line);
    return enc_end(&e, buf, cap, TERN_MSG_ADMIN, id);
}

TERN_API int tern_proto_enc_dropped(uint8_t *buf, size_t cap, const tern_msg_dropped *m)
{
    if (m->code >= 0 || m->code < INT_MIN || !text_ok(m->eid, TERN_PROTO_EID_MAX))
        return -EINVAL;
    tern_cbor_enc e;
    enc_begin(&e, buf, cap);
    tern_cbor_enc_array(&e, 5);
    tern_cbor_enc_cstr(&e, m->eid);
    tern_cbor_enc_uint(&e, m->ctime_ms);
    tern_cbor_enc_uint(&e, m->seq);
    tern_cbor_enc_int(&e, m->code);
    tern_cbor_enc_text(&e, m->text, strnlen(m->text, sizeof m->text));
    return enc_end(&e, buf, cap, TERN_MSG_DROPPED, 0);
}

static void enc_sent_item(tern_cbor_enc *e, const tern_msg_sent *s)
{
    tern_cbor_enc_array(e, 3);
    tern_cbor_enc_int(e, s->code);
    tern_cbor_enc_uint(e, s->ctime_ms);
    tern_cbor_enc_uint(e, s->seq);
}

TERN_API int tern_proto_enc_sent(uint8_t *buf, size_t cap, uint64_t id,
                                 const tern_msg_sent *s)
{
    tern_cbor_enc e;
    enc_begin(&e, buf, cap);
    enc_sent_item(&e, s);
    return enc_end(&e, buf, cap, TERN_MSG_SENT, id);
}

TERN_API int tern_proto_enc_sent_batch(uint8_t *buf, size_t cap, uint64_t id,
                                       const tern_msg_sent *s, size_t n)
{
    if (n == 0 || n > TERN_PROTO_BATCH_MAX)
        return -EINVAL;
    tern_cbor_enc e;
    enc_begin(&e, buf, cap);
    tern_cbor_enc_array(&e, n);
    for (size_t i = 0; i < n; i++)
        enc_sent_item(&e, &s[i]);
    return enc_end(&e, buf, cap, TERN_MSG_SENT_BATCH, id);
}

/* One DELIVER body into e (alone or as a batch item); -EINVAL if a field
 * cannot be sent. */
static int enc_deliver_item(tern_cbor_enc *e, const tern_msg_deliver *m)
{
    if (!text_ok(m->eid, TERN_PROTO_EID_MAX) || !text_ok(m->src, TERN_PROTO_EID_MAX) ||
        (!m->has_fd && (m->len > TERN_PROTO_INLINE_MAX || (m->len && !m->payload))))
        return -EINVAL;
    tern_cbor_enc_array(e, 6);
    tern_cbor_enc_cstr(e, m->eid);
    tern_cbor_enc_cstr(e, m->src);
    tern_cbor_enc_uint(e, m->ctime_ms);
    tern_cbor_enc_uint(e, m->seq);
    tern_cbor_enc_uint(e, m->flags);
    if (m->has_fd)
        tern_cbor_enc_uint(e, m->len);
    else
        tern_cbor_enc_bytes(e, m->payload, (size_t)m->len);
    return 0;
}

TERN_API int tern_proto_enc_deliver(uint8_t *buf, size_t cap, uint64_t id,
                                    const tern_msg_deliver *m)
{
    tern_cbor_enc e;
    enc_begin(&e, buf, cap);
    int rc = enc_deliver_item(&e, m);
    return rc ? rc : enc_end(&e, buf, cap, TERN_MSG_DELIVER, id);
}

TERN_API int tern_proto_enc_deliver_batch(uint8_t *buf, size_t cap, uint64_t id,
                                          const tern_msg_deliver *m, size_t n)
{
    if (n == 0 || n > TERN_PROTO_BATCH_MAX)
        return -EINVAL;
    tern_cbor_enc e;
    enc_begin(&e, buf, cap);
    tern_cbor_enc_array(&e, n);
    for (size_t i = 0; i < n; i++) {
        if (m[i].has_fd)
            return -EINVAL; /* a descriptor travels alone */
        int rc = enc_deliver_item(&e, &m[i]);
        if (rc)
            return rc;
    }
    return enc_end(&e, buf, cap, TERN_MSG_DELIVER_BATCH, id);
}

TERN_API int tern_proto_enc_status_ok(uint8_t *buf, size_t cap, uint64_t id,
                                      const char *const *keys, const uint64_t *vals,
                                      size_t n, const char *node_text)
{
    tern_cbor_enc e;
    enc_begin(&e, buf, cap);
    tern_cbor_enc_map(&e, n + (node_text != NULL));
    for (size_t i = 0; i < n; i++) {
        tern_cbor_enc_cstr(&e, keys[i]);
        tern_cbor_enc_uint(&e, vals[i]);
    }
    if (node_text) {
        tern_cbor_enc_cstr(&e, "node");
        tern_cbor_enc_text(&e, node_text, strnlen(node_text, TERN_PROTO_TEXT_MAX));
    }
    return enc_end(&e, buf, cap, TERN_MSG_STATUS_OK, id);
}

TERN_API int tern_proto_enc_batch(uint8_t *buf, size_t cap, const uint8_t *const *msgs,
                                  const size_t *lens, size_t n)
{
    if (n == 0 || n > TERN_PROTO_BATCH_MAX)
        return -EINVAL;
    tern_cbor_enc e;
    enc_begin(&e, buf, cap);
    tern_cbor_enc_array(&e, n);
    uint64_t id = 0;
    for (size_t i = 0; i < n; i++) {
        tern_msg_hdr h;
        if (tern_proto_hdr_unpack(msgs[i], lens[i], &h, NULL) || h.type != TERN_MSG_SEND)
            return -EINVAL;
        if (i == 0)
            id = h.id;
        else if (h.id != id + i)
            return -EINVAL; /* the batch's ids are implied: they must follow */
        tern_cbor_enc_raw(&e, msgs[i] + TERN_PROTO_HDR, lens[i] - TERN_PROTO_HDR);
    }
    return enc_end(&e, buf, cap, TERN_MSG_SEND_BATCH, id);
}

/* ------------------------------------------------------------- decoders */

#define BAD(w)                                                                           \
    do {                                                                                 \
        if (why)                                                                         \
            *why = (w);                                                                  \
        return TERN_EMALFORMED;                                                          \
    } while (0)

static int dec_array(tern_cbor_dec *d, uint64_t want, const char **why, const char *w)
{
    uint64_t n;
    if (tern_cbor_dec_array(d, &n) || n != want)
        BAD(w);
    return 0;
}

static int dec_text(tern_cbor_dec *d, char *out, size_t cap, const char **why,
                    const char *w)
{
    const char *s;
    size_t n;
    if (tern_cbor_dec_text(d, &s, &n) || n >= cap || memchr(s, 0, n))
        BAD(w);
    memcpy(out, s, n);
    out[n] = '\0';
    return 0;
}

static int dec_uint(tern_cbor_dec *d, uint64_t *v, const char **why, const char *w)
{
    if (tern_cbor_dec_uint(d, v))
        BAD(w);
    return 0;
}

static int dec_done(const tern_cbor_dec *d, const char **why)
{
    if (!tern_cbor_dec_done(d))
        BAD("bytes after the message body");
    if (why)
        *why = NULL;
    return 0;
}

TERN_API int tern_proto_dec_hello(const uint8_t *b, size_t n, uint64_t *version,
                                  const char **why)
{
    tern_cbor_dec d;
    tern_cbor_dec_init(&d, b, n);
    if (dec_array(&d, 1, why, "HELLO body is not [version]") ||
        dec_uint(&d, version, why, "HELLO version is not an unsigned integer"))
        return TERN_EMALFORMED;
    return dec_done(&d, why);
}

TERN_API int tern_proto_dec_hello_ok(const uint8_t *b, size_t n, uint64_t *version,
                                     uint64_t *node, const char **why)
{
    tern_cbor_dec d;
    tern_cbor_dec_init(&d, b, n);
    if (dec_array(&d, 2, why, "HELLO_OK body is not [version, node]") ||
        dec_uint(&d, version, why, "HELLO_OK version is not an unsigned integer") ||
        dec_uint(&d, node, why, "HELLO_OK node is not an unsigned integer"))
        return TERN_EMALFORMED;
    return dec_done(&d, why);
}

TERN_API int tern_proto_dec_eid(const uint8_t *b, size_t n, char *eid, const char **why)
{
    tern_cbor_dec d;
    tern_cbor_dec_init(&d, b, n);
    if (dec_array(&d, 1, why, "body is not [eid]") ||
        dec_text(&d, eid, TERN_PROTO_EID_MAX, why,
                 "EID is not a text string of < 264 bytes"))
        return TERN_EMALFORMED;
    return dec_done(&d, why);
}

TERN_API int tern_proto_dec_empty(const uint8_t *b, size_t n, const char **why)
{
    tern_cbor_dec d;
    tern_cbor_dec_init(&d, b, n);
    if (dec_array(&d, 0, why, "body is not an empty array"))
        return TERN_EMALFORMED;
    return dec_done(&d, why);
}

/* One SEND body at the cursor. */
static int dec_send_item(tern_cbor_dec *d, tern_msg_send *m, const char **why)
{
    memset(m, 0, sizeof *m);
    uint64_t items;
    if (tern_cbor_dec_array(d, &items) || (items != 9 && items != 10))
        BAD("SEND body is not an array of 9 or 10 items");
    if (dec_text(d, m->src, sizeof m->src, why, "SEND source EID is not a short text") ||
        dec_text(d, m->dest, sizeof m->dest, why,
                 "SEND destination EID is not a short text") ||
        dec_uint(d, &m->lifetime_ms, why, "SEND lifetime is not an unsigned integer") ||
        dec_uint(d, &m->priority, why, "SEND class is not an unsigned integer") ||
        dec_uint(d, &m->ordinal, why, "SEND ordinal is not an unsigned integer") ||
        dec_uint(d, &m->flags, why, "SEND flags are not an unsigned integer") ||
        dec_text(d, m->report_to, sizeof m->report_to, why,
                 "SEND report-to EID is not a short text") ||
        dec_uint(d, &m->offset, why, "SEND offset is not an unsigned integer"))
        return TERN_EMALFORMED;
    if (m->priority > 2)
        BAD("SEND class is not 0, 1 or 2");
    if (m->ordinal > 254)
        BAD("SEND ordinal is above 254");
    tern_cbor_kind k;
    if (tern_cbor_peek(d, &k, NULL))
        BAD("SEND body ends before its payload");
    if (k == TERN_CBOR_UINT) {
        if (tern_cbor_dec_uint(d, &m->len))
            BAD("SEND payload length is malformed");
        m->has_fd = 1;
    } else {
        size_t len;
        if (tern_cbor_dec_bytes(d, &m->payload, &len))
            BAD("SEND payload is neither a byte string nor a length");
        if (len > TERN_PROTO_INLINE_MAX)
            BAD("SEND inline payload is longer than 64 KiB");
        if (m->offset)
            BAD("SEND inline payload has an offset");
        m->len = len;
    }
    if (items == 10) {
        size_t hl;
        if (!m->has_fd)
            BAD("SEND head with an inline payload");
        if (tern_cbor_dec_bytes(d, &m->head, &hl))
            BAD("SEND head is not a byte string");
        if (hl > TERN_PROTO_HEAD_MAX)
            BAD("SEND head is longer than 1024 bytes");
        m->head_len = hl;
    }
    return 0;
}

TERN_API int tern_proto_dec_send(const uint8_t *b, size_t n, tern_msg_send *m,
                                 const char **why)
{
    tern_cbor_dec d;
    tern_cbor_dec_init(&d, b, n);
    int rc = dec_send_item(&d, m, why);
    return rc ? rc : dec_done(&d, why);
}

TERN_API int tern_proto_dec_recv(const uint8_t *b, size_t n, char *eid, uint64_t *credit,
                                 uint64_t *acked, const char **why)
{
    tern_cbor_dec d;
    tern_cbor_dec_init(&d, b, n);
    if (dec_array(&d, 3, why, "RECV body is not [eid, credit, acknowledged]") ||
        dec_text(&d, eid, TERN_PROTO_EID_MAX, why, "RECV EID is not a short text") ||
        dec_uint(&d, credit, why, "RECV credit is not an unsigned integer") ||
        dec_uint(&d, acked, why, "RECV acknowledged count is not an unsigned integer"))
        return TERN_EMALFORMED;
    return dec_done(&d, why);
}

TERN_API int tern_proto_dec_code_text(const uint8_t *b, size_t n, int64_t *code,
                                      char *text, size_t cap, const char **why)
{
    tern_cbor_dec d;
    tern_cbor_dec_init(&d, b, n);
    const char *s;
    size_t sl;
    if (dec_array(&d, 2, why, "body is not [code, text]"))
        return TERN_EMALFORMED;
    if (tern_cbor_dec_int(&d, code) || *code < INT_MIN || *code > 0)
        BAD("answer code is not 0 or a negative integer");
    if (tern_cbor_dec_text(&d, &s, &sl) || memchr(s, 0, sl))
        BAD("answer text is not a text string");
    if (cap) {
        size_t k = sl < cap - 1 ? sl : cap - 1;
        memcpy(text, s, k);
        text[k] = '\0';
    }
    return dec_done(&d, why);
}

TERN_API int tern_proto_dec_admin(const uint8_t *b, size_t n, char *module, size_t modcap,
                                  char *line, size_t linecap, const char **why)
{
    tern_cbor_dec d;
    tern_cbor_dec_init(&d, b, n);
    if (dec_array(&d, 2, why, "ADMIN body is not [module, line]") ||
        dec_text(&d, module, modcap, why, "ADMIN module is not a short text") ||
        dec_text(&d, line, linecap, why, "ADMIN command line is not a short text"))
        return TERN_EMALFORMED;
    return dec_done(&d, why);
}

static int dec_sent_item(tern_cbor_dec *d, tern_msg_sent *s, const char **why)
{
    if (dec_array(d, 3, why, "SENT body is not [code, ctime, seq]"))
        return TERN_EMALFORMED;
    if (tern_cbor_dec_int(d, &s->code) || s->code < INT_MIN || s->code > 0)
        BAD("SENT code is not 0 or a negative integer");
    if (dec_uint(d, &s->ctime_ms, why, "SENT creation time is not an unsigned integer") ||
        dec_uint(d, &s->seq, why, "SENT sequence number is not an unsigned integer"))
        return TERN_EMALFORMED;
    return 0;
}

TERN_API int tern_proto_dec_dropped(const uint8_t *b, size_t n, tern_msg_dropped *m,
                                    const char **why)
{
    tern_cbor_dec d;
    tern_cbor_dec_init(&d, b, n);
    const char *s;
    size_t sl;
    memset(m, 0, sizeof *m);
    if (dec_array(&d, 5, why, "DROPPED body is not an array of 5 items") ||
        dec_text(&d, m->eid, sizeof m->eid, why, "DROPPED EID is not a short text") ||
        dec_uint(&d, &m->ctime_ms, why,
                 "DROPPED creation time is not an unsigned integer") ||
        dec_uint(&d, &m->seq, why, "DROPPED sequence number is not an unsigned integer"))
        return TERN_EMALFORMED;
    if (tern_cbor_dec_int(&d, &m->code) || m->code < INT_MIN || m->code >= 0)
        BAD("DROPPED code is not a negative integer");
    if (tern_cbor_dec_text(&d, &s, &sl) || memchr(s, 0, sl))
        BAD("DROPPED text is not a text string");
    size_t k = sl < sizeof m->text - 1 ? sl : sizeof m->text - 1;
    memcpy(m->text, s, k);
    m->text[k] = '\0';
    return dec_done(&d, why);
}

TERN_API int tern_proto_dec_sent(const uint8_t *b, size_t n, tern_msg_sent *s,
                                 const char **why)
{
    tern_cbor_dec d;
    tern_cbor_dec_init(&d, b, n);
    int rc = dec_sent_item(&d, s, why);
    return rc ? rc : dec_done(&d, why);
}

/* One DELIVER body at d (alone or as a DELIVER_BATCH item). */
static int dec_deliver_item(tern_cbor_dec *d, tern_msg_deliver *m, const char **why)
{
    memset(m, 0, sizeof *m);
    if (dec_array(d, 6, why, "DELIVER body is not an array of 6 items") ||
        dec_text(d, m->eid, sizeof m->eid, why, "DELIVER EID is not a short text") ||
        dec_text(d, m->src, sizeof m->src, why, "DELIVER source is not a short text") ||
        dec_uint(d, &m->ctime_ms, why,
                 "DELIVER creation time is not an unsigned integer") ||
        dec_uint(d, &m->seq, why, "DELIVER sequence number is not an unsigned integer") ||
        dec_uint(d, &m->flags, why, "DELIVER flags are not an unsigned integer"))
        return TERN_EMALFORMED;
    tern_cbor_kind k;
    if (tern_cbor_peek(d, &k, NULL))
        BAD("DELIVER body ends before its payload");
    if (k == TERN_CBOR_UINT) {
        if (tern_cbor_dec_uint(d, &m->len))
            BAD("DELIVER payload length is malformed");
        m->has_fd = 1;
    } else {
        size_t len;
        if (tern_cbor_dec_bytes(d, &m->payload, &len))
            BAD("DELIVER payload is neither a byte string nor a length");
        m->len = len;
    }
    return 0;
}

TERN_API int tern_proto_dec_deliver(const uint8_t *b, size_t n, tern_msg_deliver *m,
                                    const char **why)
{
    tern_cbor_dec d;
    tern_cbor_dec_init(&d, b, n);
    int rc = dec_deliver_item(&d, m, why);
    return rc ? rc : dec_done(&d, why);
}

TERN_API int tern_proto_dec_status_ok(const uint8_t *b, size_t n, char *out, size_t cap,
                                      const char **why)
{
    tern_cbor_dec d;
    tern_cbor_dec_init(&d, b, n);
    uint64_t pairs;
    if (tern_cbor_dec_map(&d, &pairs) || pairs == TERN_CBOR_INDEF)
        BAD("STATUS_OK body is not a map");
    size_t used = 0;
    if (cap)
        out[0] = '\0';
    const char *node = NULL;
    size_t nodelen = 0;
    for (uint64_t i = 0; i < pairs; i++) {
        const char *k;
        size_t kl;
        uint64_t v;
        if (tern_cbor_dec_text(&d, &k, &kl) || memchr(k, 0, kl))
            BAD("STATUS_OK key is not a text string");
        tern_cbor_kind kind;
        if (tern_cbor_peek(&d, &kind, NULL))
            BAD("STATUS_OK ends before a value");
        if (kind == TERN_CBOR_TEXT) {
            if (tern_cbor_dec_text(&d, &node, &nodelen) || memchr(node, 0, nodelen))
                BAD("STATUS_OK text value is malformed");
            continue;
        }
        if (tern_cbor_dec_uint(&d, &v))
            BAD("STATUS_OK value is neither an unsigned integer nor a text");
        int w = snprintf(out + used, cap > used ? cap - used : 0, "%.*s %llu\n", (int)kl,
                         k, (unsigned long long)v);
        used += (size_t)w;
    }
    if (node) {
        int w = snprintf(out + used, cap > used ? cap - used : 0, "node:\n%.*s\n",
                         (int)nodelen, node);
        used += (size_t)w;
    }
    int rc = dec_done(&d, why);
    if (rc)
        return rc;
    return used >= cap ? TERN_ENOSPACE : 0;
}

TERN_API int tern_proto_iter_begin(tern_proto_iter *it, const uint8_t *b, size_t n,
                                   const char **why)
{
    tern_cbor_dec d;
    tern_cbor_dec_init(&d, b, n);
    uint64_t count;
    if (tern_cbor_dec_array(&d, &count))
        BAD("batch body is not an array");
    if (count != TERN_CBOR_INDEF && (count == 0 || count > TERN_PROTO_BATCH_MAX))
        BAD("batch holds no item or more than 64");
    it->buf = b;
    it->len = n;
    it->pos = d.pos;
    it->left = count;
    it->count = 0;
    return 0;
}

/* Positions d at the next item; TERN_EEND at the end of the batch. */
static int iter_next(tern_proto_iter *it, tern_cbor_dec *d, const char **why)
{
    tern_cbor_dec_init(d, it->buf, it->len);
    d->pos = it->pos;
    if (it->left == TERN_CBOR_INDEF) {
        if (tern_cbor_at_break(d)) {
            tern_cbor_dec_break(d);
            if (it->count == 0)
                BAD("batch holds no item");
            it->pos = d->pos;
            it->left = 0;
            return dec_done(d, why) ? TERN_EMALFORMED : TERN_EEND;
        }
        if (it->count >= TERN_PROTO_BATCH_MAX)
            BAD("batch holds more than 64 items");
    } else if (it->left == 0) {
        return dec_done(d, why) ? TERN_EMALFORMED : TERN_EEND;
    }
    return 0;
}

static void iter_advance(tern_proto_iter *it, const tern_cbor_dec *d)
{
    it->pos = d->pos;
    it->count++;
    if (it->left != TERN_CBOR_INDEF)
        it->left--;
}

TERN_API int tern_proto_iter_send(tern_proto_iter *it, tern_msg_send *m, const char **why)
{
    tern_cbor_dec d;
    int rc = iter_next(it, &d, why);
    if (rc)
        return rc;
    if ((rc = dec_send_item(&d, m, why)))
        return rc;
    iter_advance(it, &d);
    return 0;
}

TERN_API int tern_proto_iter_deliver(tern_proto_iter *it, tern_msg_deliver *m,
                                     const char **why)
{
    tern_cbor_dec d;
    int rc = iter_next(it, &d, why);
    if (rc)
        return rc;
    if ((rc = dec_deliver_item(&d, m, why)))
        return rc;
    if (m->has_fd)
        BAD("batched DELIVER with a descriptor");
    iter_advance(it, &d);
    return 0;
}

TERN_API int tern_proto_iter_sent(tern_proto_iter *it, tern_msg_sent *s, const char **why)
{
    tern_cbor_dec d;
    int rc = iter_next(it, &d, why);
    if (rc)
        return rc;
    if ((rc = dec_sent_item(&d, s, why)))
        return rc;
    iter_advance(it, &d);
    return 0;
}

static int digits(const char *s, const char **end)
{
    const char *p = s;
    while (*p >= '0' && *p <= '9')
        p++;
    *end = p;
    return p > s && p - s <= 20;
}

TERN_API int tern_proto_eid_check(const char *eid)
{
    if (!eid || strlen(eid) >= TERN_PROTO_EID_MAX)
        return -EINVAL;
    const char *p;
    if (!strncmp(eid, "ipn:", 4) || !strncmp(eid, "imc:", 4)) {
        if (!digits(eid + 4, &p) || *p != '.' || !digits(p + 1, &p))
            return -EINVAL;
        /* ipn:A.N.S, RFC 9758's form for an allocator other than 0 (what a
         * node prints for such a source); ternd checks the ranges */
        if (*p == '.' && eid[1] == 'p' && !digits(p + 1, &p))
            return -EINVAL;
        return *p ? -EINVAL : 0;
    }
    if (!strcmp(eid, "dtn:none"))
        return 0;
    if (!strncmp(eid, "dtn://", 6) && eid[6] && eid[6] != '/')
        return 0;
    return -EINVAL;
}

/* ------------------------------------------------------ sockets and fds */

TERN_API int tern_proto_sockaddr(const char *node_dir, struct sockaddr_un *sa,
                                 socklen_t *salen, char *name, size_t namecap)
{
    char *real = realpath(node_dir, NULL);
    if (!real)
        return -errno;
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a 64 */
    for (const unsigned char *p = (const unsigned char *)real; *p; p++) {
        h ^= *p;
        h *= 0x100000001b3ull;
    }
    free(real);
    char nm[32];
    int k = snprintf(nm, sizeof nm, "tern-%016llx", (unsigned long long)h);
    memset(sa, 0, sizeof *sa);
    sa->sun_family = AF_UNIX;
    memcpy(sa->sun_path + 1, nm, (size_t)k); /* sun_path[0] = 0: abstract */
    *salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)k);
    if (name && namecap) {
        if ((size_t)k >= namecap)
            return TERN_ENOSPACE;
        memcpy(name, nm, (size_t)k + 1);
    }
    return 0;
}

TERN_API int tern_proto_send(int sock, const struct iovec *iov, int n, int fd, int flags)
{
    union {
        struct cmsghdr h;
        char b[CMSG_SPACE(sizeof(int))];
    } cm;
    struct msghdr mh = {.msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)n};
    if (fd >= 0) {
        memset(&cm, 0, sizeof cm);
        mh.msg_control = cm.b;
        mh.msg_controllen = sizeof cm.b;
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof fd);
    }
    ssize_t r;
    do
        r = sendmsg(sock, &mh, flags | MSG_NOSIGNAL);
    while (r < 0 && errno == EINTR);
    if (r < 0)
        return errno == EWOULDBLOCK ? -EAGAIN : -errno;
    return 0;
}

TERN_API int tern_proto_recv(int sock, uint8_t *buf, size_t cap, int *fd, int flags)
{
    union {
        struct cmsghdr h;
        char b[CMSG_SPACE(8 * sizeof(int))];
    } cm;
    struct iovec iov = {buf, cap};
    struct msghdr mh = {.msg_iov = &iov,
                        .msg_iovlen = 1,
                        .msg_control = cm.b,
                        .msg_controllen = sizeof cm.b};
    *fd = -1;
    ssize_t r;
    do
        r = recvmsg(sock, &mh, flags | MSG_CMSG_CLOEXEC);
    while (r < 0 && errno == EINTR);
    if (r < 0)
        return errno == EWOULDBLOCK ? -EAGAIN : -errno;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        size_t nfd = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < nfd; i++) {
            int f;
            memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof f);
            if (*fd < 0)
                *fd = f;
            else
                close(f); /* one descriptor per message: the rest are noise */
        }
    }
    if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
        if (*fd >= 0)
            close(*fd);
        *fd = -1;
        return TERN_ETRUNCATED;
    }
    return (int)r;
}

TERN_API int tern_proto_memfd(const void *p, size_t len, int *fd)
{
    int f = memfd_create("tern-payload", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (f < 0)
        return -errno;
    int rc = tern_proto_pwrite(f, p, len);
    if (rc) {
        close(f);
        return rc;
    }
    /* Sealed: the reader may map it without fearing SIGBUS from a shrink. */
    if (fcntl(f, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL)) {
        rc = -errno;
        close(f);
        return rc;
    }
    *fd = f;
    return 0;
}

TERN_API int tern_proto_pwrite(int fd, const void *p, size_t len)
{
    const uint8_t *q = p;
    for (size_t done = 0; done < len;) {
        ssize_t w = pwrite(fd, q + done, len - done, (off_t)done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? -errno : -EIO;
        done += (size_t)w;
    }
    return 0;
}

TERN_API int tern_proto_pread(int fd, uint64_t off, void *buf, size_t len)
{
    uint8_t *q = buf;
    size_t done = 0;
    if (off > (uint64_t)INT64_MAX || len > (uint64_t)INT64_MAX - off)
        return -EINVAL;
    while (done < len) {
        ssize_t r = pread(fd, q + done, len - done, (off_t)(off + done));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -errno;
        if (r == 0)
            return TERN_ETRUNCATED;
        done += (size_t)r;
    }
    return 0;
}
