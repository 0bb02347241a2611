/* libFuzzer target: the client protocol's decoders (tern_proto.h). The input
 * is taken as a whole datagram (header + body), decoded by its type, and
 * also as a bare body given to every decoder. Whatever decodes must encode
 * again to something that decodes to the same fields. */
#include <stdlib.h>
#include <string.h>

#include "tern_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t out[TERN_PROTO_MSG_MAX];

static void check_send(const tern_msg_send *m)
{
    tern_msg_send back;
    int n = tern_proto_enc_send(out, sizeof out, 1, m);
    if (n < 0) {
        if (!m->has_fd && m->len > TERN_PROTO_INLINE_MAX)
            abort(); /* the decoder let an oversized inline payload through */
        return;
    }
    if (tern_proto_dec_send(out + TERN_PROTO_HDR, (size_t)n - TERN_PROTO_HDR, &back,
                            NULL) ||
        strcmp(back.src, m->src) || strcmp(back.dest, m->dest) ||
        strcmp(back.report_to, m->report_to) || back.len != m->len ||
        back.has_fd != m->has_fd || back.lifetime_ms != m->lifetime_ms ||
        back.priority != m->priority || back.ordinal != m->ordinal ||
        back.flags != m->flags || back.offset != m->offset ||
        (!m->has_fd && m->len && memcmp(back.payload, m->payload, (size_t)m->len)))
        abort();
}

static void bodies(uint32_t type, const uint8_t *b, size_t n)
{
    uint64_t v, w;
    int64_t code;
    char eid[TERN_PROTO_EID_MAX], text[128], mod[TERN_PROTO_TEXT_MAX + 1],
        line[TERN_PROTO_TEXT_MAX + 1], status[512];
    tern_msg_send s;
    tern_msg_sent st;
    tern_msg_deliver d;
    tern_proto_iter it;
    const char *why;
    int all = type == 0;
    if (all || type == TERN_MSG_HELLO)
        tern_proto_dec_hello(b, n, &v, &why);
    if (all || type == TERN_MSG_HELLO_OK)
        tern_proto_dec_hello_ok(b, n, &v, &w, &why);
    if (all || type == TERN_MSG_OPEN || type == TERN_MSG_CLOSE)
        if (!tern_proto_dec_eid(b, n, eid, &why) && strlen(eid) >= TERN_PROTO_EID_MAX)
            abort();
    if (all || type == TERN_MSG_STATUS || type == TERN_MSG_STOP || type == TERN_MSG_OK)
        tern_proto_dec_empty(b, n, &why);
    if ((all || type == TERN_MSG_SEND) && !tern_proto_dec_send(b, n, &s, &why))
        check_send(&s);
    if (all || type == TERN_MSG_RECV)
        tern_proto_dec_recv(b, n, eid, &v, &v, &why);
    if (all || type == TERN_MSG_ERROR || type == TERN_MSG_ADMIN_OK)
        if (!tern_proto_dec_code_text(b, n, &code, text, sizeof text, &why) && code > 0)
            abort();
    if (all || type == TERN_MSG_ADMIN)
        tern_proto_dec_admin(b, n, mod, sizeof mod, line, sizeof line, &why);
    if (all || type == TERN_MSG_SENT)
        tern_proto_dec_sent(b, n, &st, &why);
    if (all || type == TERN_MSG_DROPPED) {
        /* a decoded notice is a drop (negative code), its texts terminated,
         * and encodes again */
        tern_msg_dropped dm;
        uint8_t again[TERN_PROTO_MSG_MAX];
        if (!tern_proto_dec_dropped(b, n, &dm, &why) &&
            (dm.code >= 0 || strnlen(dm.eid, sizeof dm.eid) == sizeof dm.eid ||
             strnlen(dm.text, sizeof dm.text) == sizeof dm.text ||
             tern_proto_enc_dropped(again, sizeof again, &dm) <= 0))
            abort();
    }
    if (all || type == TERN_MSG_DELIVER)
        tern_proto_dec_deliver(b, n, &d, &why);
    if (all || type == TERN_MSG_STATUS_OK)
        tern_proto_dec_status_ok(b, n, status, sizeof status, &why);
    if ((all || type == TERN_MSG_SEND_BATCH) && !tern_proto_iter_begin(&it, b, n, &why)) {
        int rc, k = 0;
        while ((rc = tern_proto_iter_send(&it, &s, &why)) == 0) {
            check_send(&s);
            if (++k > TERN_PROTO_BATCH_MAX)
                abort();
        }
    }
    if ((all || type == TERN_MSG_DELIVER_BATCH) &&
        !tern_proto_iter_begin(&it, b, n, &why)) {
        int k = 0;
        while (tern_proto_iter_deliver(&it, &d, &why) == 0) {
            /* a batched payload lies inside the body and is never a descriptor */
            if (d.has_fd || (d.len && (d.payload < b || d.payload + d.len > b + n)))
                abort();
            if (++k > TERN_PROTO_BATCH_MAX)
                abort();
        }
    }
    if ((all || type == TERN_MSG_SENT_BATCH) && !tern_proto_iter_begin(&it, b, n, &why)) {
        int k = 0;
        while (tern_proto_iter_sent(&it, &st, &why) == 0)
            if (++k > TERN_PROTO_BATCH_MAX)
                abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tern_msg_hdr h;
    const char *why;
    if (tern_proto_hdr_unpack(data, size, &h, &why) == 0)
        bodies(h.type, data + TERN_PROTO_HDR, h.len);
    else if (!why)
        abort(); /* every refusal names its cause */
    /* the same bytes as a bare body, copied so reads past the end are caught */
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy)
        return 0;
    memcpy(copy, data, size);
    bodies(0, copy, size);
    free(copy);
    return 0;
}
