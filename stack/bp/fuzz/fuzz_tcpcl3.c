/* libFuzzer target: the TCPCLv3 decoders and session machine must never
 * over-read or crash. The input's first byte picks the chunk size and the
 * session's side; the rest is decoded as a contact header and messages, then
 * fed to a session, which acknowledges every bundle and sends one back. */
#include <stdlib.h>
#include <string.h>

#include "bp_tcpcl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t chunk = (size_t)data[0] % 64 + 1;
    const uint8_t *b = data + 1;
    size_t n = size - 1, off = 0, used;
    tcpcl3_contact c;
    if (tcpcl3_contact_decode(b, n, &c, &used) == 0) {
        if (used > n || c.eid + c.eid_len > b + n)
            abort();
        off = used;
    }
    while (off < n) {
        tcpcl3_msg m;
        if (tcpcl3_decode(b + off, n - off, 1 << 16, &m, &used) != 0)
            break;
        if (used == 0 || used > n - off)
            abort();
        off += used;
    }
    tcpcl4_cfg cfg = {.active = data[0] & 0x80 ? 1 : 0,
                      .node = 7,
                      .keepalive_s = 10,
                      .seg_mru = 4096,
                      .xfer_mru = 1 << 16};
    tcpcl3_sess *s;
    if (tcpcl3_sess_new(&cfg, &s) < 0)
        return 0;
    int64_t now = 0;
    for (size_t o = 0; o < n; o += chunk) {
        size_t k = n - o < chunk ? n - o : chunk;
        tcpcl3_sess_recv(s, b + o, k, now);
        tcpcl4_ev e;
        while (tcpcl3_sess_event(s, &e) == 0) {
            if (e.kind == TCPCL4_EV_BUNDLE) {
                volatile uint8_t sink = 0;
                for (size_t i = 0; i < e.len; i++)
                    sink ^= e.data[i];
                (void)sink;
                tcpcl3_sess_ack(s, e.tid, e.len);
            } else if (e.kind == TCPCL4_EV_UP) {
                uint64_t tid;
                tcpcl3_sess_send(s, b, n < 5000 ? n : 5000, &tid);
            }
        }
        size_t l;
        tcpcl3_sess_output(s, &l);
        tcpcl3_sess_sent(s, l);
        now += 3000;
        tcpcl3_sess_tick(s, now);
    }
    tcpcl3_sess_free(s);
    return 0;
}
