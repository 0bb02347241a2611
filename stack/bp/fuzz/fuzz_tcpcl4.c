/* libFuzzer target: the TCPCLv4 decoder and session machine must never
 * over-read or crash on any byte stream. The input is decoded message by
 * message (fixed-layout messages must re-encode to the same bytes), then fed
 * to a listening session in chunks whose sizes come from the input's first
 * byte, acknowledging every bundle it delivers. */
#include <stdlib.h>
#include <string.h>

#include "bp_tcpcl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_reencode(const tcpcl4_msg *m, const uint8_t *b, size_t used)
{
    uint8_t out[32];
    size_t n = 0;
    switch (m->type) {
    case TCPCL4_XFER_ACK:
        n = tcpcl4_enc_ack(out, m->u.ack.flags, m->u.ack.tid, m->u.ack.len);
        break;
    case TCPCL4_XFER_REFUSE:
        n = tcpcl4_enc_refuse(out, m->u.refuse.reason, m->u.refuse.tid);
        break;
    case TCPCL4_KEEPALIVE:
        n = tcpcl4_enc_keepalive(out);
        break;
    case TCPCL4_SESS_TERM:
        n = tcpcl4_enc_term(out, m->u.term.flags, m->u.term.reason);
        break;
    case TCPCL4_MSG_REJECT:
        n = tcpcl4_enc_reject(out, m->u.reject.reason, m->u.reject.rejected);
        break;
    default:
        return;
    }
    if (n != used || memcmp(out, b, n) != 0)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t chunk = (size_t)data[0] % 64 + 1;
    const uint8_t *b = data + 1;
    size_t n = size - 1;

    size_t off = n >= TCPCL4_CONTACT_LEN ? TCPCL4_CONTACT_LEN : n;
    while (off < n) {
        tcpcl4_msg m;
        size_t used = 0;
        if (tcpcl4_decode(b + off, n - off, 1 << 16, &m, &used) != 0)
            break;
        if (used == 0 || used > n - off)
            abort();
        check_reencode(&m, b + off, used);
        off += used;
    }

    tcpcl4_cfg cfg = {.active = data[0] & 0x80 ? 1 : 0,
                      .node = 7,
                      .keepalive_s = 10,
                      .seg_mru = 4096,
                      .xfer_mru = 1 << 16};
    tcpcl4_sess *s;
    if (tcpcl4_sess_new(&cfg, &s) < 0)
        return 0;
    int64_t now = 0;
    for (size_t o = 0; o < n; o += chunk) {
        size_t k = n - o < chunk ? n - o : chunk;
        size_t room;
        uint8_t *into;
        if ((data[0] & 0x40) && (into = tcpcl4_sess_rxbuf(s, k, &room)) && room >= k) {
            memcpy(into, b + o, k); /* as ternd reads: into the session's buffer */
            tcpcl4_sess_received(s, k, now);
        } else {
            tcpcl4_sess_recv(s, b + o, k, now);
        }
        tcpcl4_ev e;
        while (tcpcl4_sess_event(s, &e) == 0) {
            if (e.kind == TCPCL4_EV_BUNDLE) {
                volatile uint8_t sink = 0;
                for (size_t i = 0; i < e.len; i++)
                    sink ^= e.data[i];
                (void)sink;
                tcpcl4_sess_ack(s, e.tid, e.len, e.flags);
            } else if (e.kind == TCPCL4_EV_UP) {
                uint64_t tid;
                tcpcl4_sess_send(s, b, n < 5000 ? n : 5000, &tid);
            }
        }
        size_t l;
        tcpcl4_sess_output(s, &l);
        tcpcl4_sess_sent(s, l);
        now += 3000;
        tcpcl4_sess_tick(s, now);
    }
    tcpcl4_sess_free(s);
    return 0;
}
