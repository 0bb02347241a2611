/* TCPCLv4, STCP and MTCP codecs and the TCPCLv4 session machine: byte-exact
 * vectors laid out from RFC 9174's message formats, HDTN's captured session
 * (../shared/interop/hdtn/tcpclv4-session.hex) replayed message by message,
 * and two sessions talking to each other in memory. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bp_bundle.h"
#include "bp_tcpcl.h"
#include "tern_test.h"

static size_t unhex(const char *h, uint8_t *out, size_t cap)
{
    size_t n = 0;
    while (h[0] && h[1]) {
        if (h[0] == ' ') {
            h++;
            continue;
        }
        unsigned v;
        CHECK(sscanf(h, "%2x", &v) == 1);
        CHECK(n < cap);
        out[n++] = (uint8_t)v;
        h += 2;
    }
    return n;
}

#define CHECK_HEX(buf, len, hex)                                                         \
    do {                                                                                 \
        static uint8_t want_[4096];                                                      \
        size_t wl_ = unhex(hex, want_, sizeof want_);                                    \
        CHECK_MSG((len) == wl_ && (wl_ == 0 || memcmp((buf), want_, wl_) == 0),          \
                  "bytes differ from %s (got %zu bytes, want %zu)", hex, (size_t)(len),  \
                  wl_);                                                                  \
    } while (0)

/* ---- codec vectors -------------------------------------------------------- */

TEST(contact_header)
{
    uint8_t b[6], v, f;
    CHECK_EQ_INT(tcpcl4_contact_encode(b, 0), 6);
    CHECK_HEX(b, 6, "64746e21 04 00");
    CHECK_OK(tcpcl4_contact_decode(b, 6, &v, &f));
    CHECK_EQ_INT(v, 4);
    CHECK_EQ_INT(f, 0);
    CHECK_RC(tcpcl4_contact_decode(b, 5, &v, &f), TERN_ETRUNCATED);
    CHECK_RC(tcpcl4_contact_decode((const uint8_t *)"dtx", 3, &v, &f), TERN_EMALFORMED);
    CHECK_RC(tcpcl4_contact_decode((const uint8_t *)"GET / ", 6, &v, &f),
             TERN_EMALFORMED);
}

TEST(message_vectors)
{
    uint8_t b[128];
    size_t n = tcpcl4_enc_sess_init(b, 60, 0x100000, 0x4000000, "ipn:5.0");
    CHECK_HEX(b, n,
              "07 003c 0000000000100000 0000000004000000 0007 69706e3a352e30 00000000");
    n = tcpcl4_enc_seg_hdr(b, TCPCL4_SEG_START | TCPCL4_SEG_END, 1, 3, 0);
    CHECK_HEX(b, n, "01 03 0000000000000001 00000000 0000000000000003");
    n = tcpcl4_enc_seg_hdr(b, TCPCL4_SEG_START, 2, 4, 10);
    CHECK_HEX(b, n,
              "01 02 0000000000000002 0000000d 00 0001 0008 000000000000000a "
              "0000000000000004");
    n = tcpcl4_enc_seg_hdr(b, TCPCL4_SEG_END, 2, 6, 10);
    CHECK_HEX(b, n, "01 01 0000000000000002 0000000000000006");
    n = tcpcl4_enc_ack(b, TCPCL4_SEG_END, 2, 10);
    CHECK_HEX(b, n, "02 01 0000000000000002 000000000000000a");
    n = tcpcl4_enc_refuse(b, TCPCL4_REFUSE_NO_RESOURCES, 7);
    CHECK_HEX(b, n, "03 02 0000000000000007");
    n = tcpcl4_enc_keepalive(b);
    CHECK_HEX(b, n, "04");
    n = tcpcl4_enc_term(b, TCPCL4_TERM_REPLY, TCPCL4_TERM_CONTACT_FAILURE);
    CHECK_HEX(b, n, "05 01 04");
    n = tcpcl4_enc_reject(b, TCPCL4_REJECT_TYPE_UNKNOWN, 0x09);
    CHECK_HEX(b, n, "06 01 09");
}

TEST(decode_each_type)
{
    uint8_t b[128];
    tcpcl4_msg m;
    size_t used, n;

    n = unhex("07 000f 0000000000030d40 0000000000989680 0008 69706e3a31302e30 00000000",
              b, sizeof b);
    CHECK_OK(tcpcl4_decode(b, n, 1000, &m, &used));
    CHECK_EQ_INT(used, n);
    CHECK_EQ_INT(m.type, TCPCL4_SESS_INIT);
    CHECK_EQ_INT(m.u.init.keepalive_s, 15);
    CHECK_EQ_U64(m.u.init.seg_mru, 200000);
    CHECK_EQ_U64(m.u.init.xfer_mru, 10000000);
    CHECK(m.u.init.node_id_len == 8 && memcmp(m.u.init.node_id, "ipn:10.0", 8) == 0);
    /* every proper prefix is incomplete, never an error or an over-read */
    for (size_t k = 0; k < n; k++)
        CHECK_RC(tcpcl4_decode(b, k, 1000, &m, &used), TERN_ETRUNCATED);

    n = unhex("01 02 0000000000000002 0000000d 00 0001 0008 000000000000000a "
              "0000000000000004 deadbeef",
              b, sizeof b);
    CHECK_OK(tcpcl4_decode(b, n, 1000, &m, &used));
    CHECK_EQ_INT(used, n);
    CHECK_EQ_INT(m.u.seg.flags, TCPCL4_SEG_START);
    CHECK_EQ_U64(m.u.seg.tid, 2);
    CHECK_EQ_U64(m.u.seg.len, 4);
    CHECK(memcmp(m.u.seg.data, "\xde\xad\xbe\xef", 4) == 0);
    CHECK_EQ_INT(m.u.seg.ext_len, 13);
    for (size_t k = 0; k < n; k++)
        CHECK_RC(tcpcl4_decode(b, k, 1000, &m, &used), TERN_ETRUNCATED);
    /* a segment larger than our segment MRU is refused before its data arrives */
    CHECK_RC(tcpcl4_decode(b, n - 4, 3, &m, &used), TERN_EOVERFLOW);
    /* an extension item running past its list */
    n = unhex("01 02 0000000000000002 00000006 00 0001 0008 00 0000000000000000", b,
              sizeof b);
    CHECK_RC(tcpcl4_decode(b, n, 1000, &m, &used), TERN_EMALFORMED);
    /* a SESS_INIT declaring a 4 GB extension list */
    n = unhex("07 000f 0000000000030d40 0000000000989680 0000 ffffffff", b, sizeof b);
    CHECK_RC(tcpcl4_decode(b, n, 1000, &m, &used), TERN_EOVERFLOW);

    n = unhex("02 03 0000000000000000 000000000000042c", b, sizeof b);
    CHECK_OK(tcpcl4_decode(b, n, 0, &m, &used));
    CHECK_EQ_INT(used, 18);
    CHECK_EQ_U64(m.u.ack.len, 1068);
    n = unhex("03 04 0000000000000009", b, sizeof b);
    CHECK_OK(tcpcl4_decode(b, n, 0, &m, &used));
    CHECK_EQ_INT(m.u.refuse.reason, TCPCL4_REFUSE_NOT_ACCEPTABLE);
    CHECK_EQ_U64(m.u.refuse.tid, 9);
    n = unhex("05 00 01 06 03 07", b, sizeof b);
    CHECK_OK(tcpcl4_decode(b, n, 0, &m, &used));
    CHECK_EQ_INT(used, 3);
    CHECK_EQ_INT(m.u.term.reason, TCPCL4_TERM_IDLE_TIMEOUT);
    CHECK_OK(tcpcl4_decode(b + 3, 3, 0, &m, &used));
    CHECK_EQ_INT(m.u.reject.reason, TCPCL4_REJECT_UNEXPECTED);
    CHECK_EQ_INT(m.u.reject.rejected, 7);
    CHECK_OK(tcpcl4_decode((const uint8_t *)"\x04", 1, 0, &m, &used));
    CHECK_EQ_INT(m.type, TCPCL4_KEEPALIVE);
    CHECK_RC(tcpcl4_decode((const uint8_t *)"\x00", 1, 0, &m, &used), TERN_ETYPE);
    CHECK_RC(tcpcl4_decode((const uint8_t *)"\x08", 1, 0, &m, &used), TERN_ETYPE);
    CHECK_EQ_INT(m.type, 8);
}

TEST(node_id)
{
    uint64_t n;
    CHECK_OK(tcpcl4_node_id_parse((const uint8_t *)"ipn:10.0", 8, &n));
    CHECK_EQ_U64(n, 10);
    CHECK_OK(tcpcl4_node_id_parse((const uint8_t *)"ipn:0.0", 7, &n));
    const char *bad[] = {"ipn:10.1",
                         "ipn:10",
                         "dtn://a/",
                         "ipn:.0",
                         "ipn:01.0",
                         "ipn:1.0x",
                         "ipn:99999999999999999999.0",
                         "IPN:1.0"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_MSG(tcpcl4_node_id_parse((const uint8_t *)bad[i], strlen(bad[i]), &n) ==
                      TERN_EMALFORMED,
                  "%s accepted", bad[i]);
}

/* ---- HDTN's captured session ------------------------------------------------ */

typedef struct cap_msg {
    char dir;
    char name[64];
    uint8_t *b;
    size_t n;
} cap_msg;

/* From ../shared/interop/hdtn/tcpclv4-session.hex (copied verbatim): HDTN
 * 1.3.1, bpgen ipn:1 (A, connecting) to HDTN ipn:10 (P, listening). */
static const struct {
    char dir;
    const char *name, *hex;
} hdtn_capture[] = {
    {'A', "Contact_Header", "64746e210400"},
    {'P', "Contact_Header", "64746e210400"},
    {'A', "SESS_INIT",
     "0700110000000000030d400000000000989680000769706e3a312e3000000000"},
    {'P', "SESS_INIT",
     "07000f0000000000030d400000000000989680000869706e3a31302e3000000000"},
    {'A', "XFER_SEGMENT",
     "0103000000000000000000000000000000000000042c9f8907040282028202018202820101820100"
     "821b000000c5bf8d3473001a000f424044ae918e4e860a021002448218640044db675d4986010100"
     "025903e8000000000000000000000000000000000000000000000000000000000000000000000000"
     "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
     "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
     "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
     "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
     "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
     "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
     "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
     "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
     "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
     "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
     "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
     "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
     "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
     "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
     "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
     "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
     "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
     "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
     "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
     "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
     "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
     "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
     "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
     "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
     "0000000044fea13ab2ff"},
    {'P', "XFER_ACK", "02030000000000000000000000000000042c"},
};

static size_t load_capture(cap_msg *out, size_t cap)
{
    size_t n = sizeof hdtn_capture / sizeof hdtn_capture[0];
    CHECK(n <= cap);
    for (size_t i = 0; i < n; i++) {
        cap_msg *m = &out[i];
        m->dir = hdtn_capture[i].dir;
        snprintf(m->name, sizeof m->name, "%s", hdtn_capture[i].name);
        size_t hl = strlen(hdtn_capture[i].hex);
        m->b = malloc(hl / 2 + 1);
        m->n = unhex(hdtn_capture[i].hex, m->b, hl / 2 + 1);
    }
    return n;
}

TEST(hdtn_capture_decodes)
{
    cap_msg c[16];
    size_t n = load_capture(c, 16);
    CHECK_EQ_INT(n, 6);
    uint8_t v, f;
    for (int i = 0; i < 2; i++) {
        CHECK_OK(tcpcl4_contact_decode(c[i].b, c[i].n, &v, &f));
        CHECK_EQ_INT(v, 4);
        CHECK_EQ_INT(f, 0);
    }
    tcpcl4_msg m;
    size_t used;
    CHECK_OK(tcpcl4_decode(c[2].b, c[2].n, 1 << 20, &m, &used));
    CHECK_EQ_INT(used, c[2].n);
    CHECK_EQ_INT(m.u.init.keepalive_s, 17);
    CHECK_EQ_U64(m.u.init.seg_mru, 200000);
    CHECK_EQ_U64(m.u.init.xfer_mru, 10000000);
    uint64_t node;
    CHECK_OK(tcpcl4_node_id_parse(m.u.init.node_id, m.u.init.node_id_len, &node));
    CHECK_EQ_U64(node, 1);
    CHECK_EQ_INT(m.u.init.ext_len, 0);
    CHECK_OK(tcpcl4_decode(c[3].b, c[3].n, 1 << 20, &m, &used));
    CHECK_EQ_INT(m.u.init.keepalive_s, 15);
    CHECK_OK(tcpcl4_node_id_parse(m.u.init.node_id, m.u.init.node_id_len, &node));
    CHECK_EQ_U64(node, 10);
    CHECK_OK(tcpcl4_decode(c[4].b, c[4].n, 1 << 20, &m, &used));
    CHECK_EQ_INT(used, c[4].n);
    CHECK_EQ_INT(m.u.seg.flags, TCPCL4_SEG_START | TCPCL4_SEG_END);
    CHECK_EQ_U64(m.u.seg.tid, 0);
    CHECK_EQ_U64(m.u.seg.len, 1068);
    CHECK_EQ_INT(m.u.seg.data[0], 0x9f); /* a BPv7 bundle: indefinite CBOR array */
    CHECK_OK(tcpcl4_decode(c[5].b, c[5].n, 1 << 20, &m, &used));
    CHECK_EQ_INT(m.type, TCPCL4_XFER_ACK);
    CHECK_EQ_U64(m.u.ack.len, 1068);
    for (size_t i = 0; i < n; i++)
        free(c[i].b);
}

static void drain(tcpcl4_sess *s, uint8_t *out, size_t *n)
{
    size_t l;
    const uint8_t *p = tcpcl4_sess_output(s, &l);
    if (out) {
        memcpy(out + *n, p, l);
        *n += l;
    }
    tcpcl4_sess_sent(s, l);
}

/* Tern as HDTN's listening side: fed bpgen's half of the session, it must
 * accept HDTN's keepalive and MRUs and answer with the same ACK bytes HDTN did. */
static void replay_as_listener(size_t chunk, int direct)
{
    cap_msg c[16];
    size_t n = load_capture(c, 16);
    tcpcl4_cfg cfg = {.active = 0,
                      .node = 10,
                      .keepalive_s = 30,
                      .seg_mru = 200000,
                      .xfer_mru = 10000000};
    tcpcl4_sess *s;
    CHECK_OK(tcpcl4_sess_new(&cfg, &s));
    static uint8_t out[1 << 16];
    size_t on = 0;
    int bundles = 0;
    for (size_t i = 0; i < n; i++) {
        if (c[i].dir != 'A')
            continue;
        for (size_t off = 0; off < c[i].n; off += chunk) {
            size_t k = c[i].n - off < chunk ? c[i].n - off : chunk;
            if (direct) { /* read straight into the session's buffer */
                size_t room;
                uint8_t *into = tcpcl4_sess_rxbuf(s, k, &room);
                CHECK(into && room >= k);
                memcpy(into, c[i].b + off, k);
                CHECK_OK(tcpcl4_sess_received(s, k, 0));
            } else {
                CHECK_OK(tcpcl4_sess_recv(s, c[i].b + off, k, 0));
            }
            tcpcl4_ev e;
            while (tcpcl4_sess_event(s, &e) == 0) {
                if (e.kind == TCPCL4_EV_BUNDLE) {
                    bundles++;
                    CHECK_EQ_INT(e.len, 1068);
                    CHECK(memcmp(e.data, c[4].b + 22, 1068) == 0);
                    on = 0;
                    drain(s, NULL, &on);
                    CHECK_OK(tcpcl4_sess_ack(s, e.tid, e.len, e.flags));
                    drain(s, out, &on);
                    CHECK_HEX(out, on, "02030000000000000000000000000000042c");
                    CHECK_EQ_INT(on, c[5].n);
                    CHECK(memcmp(out, c[5].b, on) == 0);
                } else {
                    CHECK_EQ_INT(e.kind, TCPCL4_EV_UP);
                }
            }
            if (i == 0 && off + k == c[i].n) { /* our contact header, like HDTN's */
                drain(s, out, &on);
                CHECK_HEX(out, on, "64746e210400");
                on = 0;
            }
            if (i == 2 && off + k == c[i].n) { /* our SESS_INIT: ipn:10.0 as HDTN */
                drain(s, out, &on);
                CHECK_HEX(
                    out, on,
                    "07001e0000000000030d400000000000989680000869706e3a31302e3000000000");
                on = 0;
            }
        }
    }
    CHECK_EQ_INT(bundles, 1);
    CHECK_EQ_INT(tcpcl4_sess_state(s), TCPCL4_S_UP);
    CHECK_EQ_INT(tcpcl4_sess_keepalive(s), 17); /* min(30, HDTN's 17) */
    CHECK_EQ_U64(tcpcl4_sess_peer_seg_mru(s), 200000);
    CHECK_EQ_U64(tcpcl4_sess_peer_xfer_mru(s), 10000000);
    CHECK_EQ_U64(tcpcl4_sess_peer_node(s), 1);
    tcpcl4_sess_free(s);
    for (size_t i = 0; i < n; i++)
        free(c[i].b);
}

TEST(hdtn_replay_listener)
{
    replay_as_listener(1 << 20, 0);
}

/* The same through tcpcl4_sess_rxbuf/received, whole and byte by byte. */
TEST(hdtn_replay_listener_read_in_place)
{
    replay_as_listener(1 << 20, 1);
    replay_as_listener(1, 1);
}

TEST(hdtn_replay_listener_bytewise)
{
    replay_as_listener(1, 0);
}

/* Tern as bpgen: connecting to HDTN, sending the same bundle. */
TEST(hdtn_replay_connector)
{
    cap_msg c[16];
    size_t n = load_capture(c, 16);
    tcpcl4_cfg cfg = {.active = 1,
                      .node = 1,
                      .keepalive_s = 17,
                      .seg_mru = 200000,
                      .xfer_mru = 10000000};
    tcpcl4_sess *s;
    CHECK_OK(tcpcl4_sess_new(&cfg, &s));
    static uint8_t out[1 << 16];
    size_t on = 0;
    drain(s, out, &on);
    CHECK(on == c[0].n && memcmp(out, c[0].b, on) == 0);
    on = 0;
    CHECK_OK(tcpcl4_sess_recv(s, c[1].b, c[1].n, 0)); /* HDTN's contact header */
    drain(s, out, &on);
    CHECK(on == c[2].n &&
          memcmp(out, c[2].b, on) == 0); /* bpgen's SESS_INIT, byte for byte */
    CHECK_OK(tcpcl4_sess_recv(s, c[3].b, c[3].n, 0));
    tcpcl4_ev e;
    CHECK_OK(tcpcl4_sess_event(s, &e));
    CHECK_EQ_INT(e.kind, TCPCL4_EV_UP);
    CHECK_EQ_INT(tcpcl4_sess_keepalive(s), 15);
    CHECK_EQ_U64(tcpcl4_sess_peer_node(s), 10);
    uint64_t tid;
    CHECK_OK(tcpcl4_sess_send(s, c[4].b + 22, 1068, &tid));
    CHECK_EQ_U64(tid, 0);
    on = 0;
    drain(s, out, &on);
    CHECK(on == c[4].n && memcmp(out, c[4].b, on) == 0); /* bpgen's XFER_SEGMENT */
    CHECK_OK(tcpcl4_sess_recv(s, c[5].b, c[5].n, 0));
    CHECK_OK(tcpcl4_sess_event(s, &e));
    CHECK_EQ_INT(e.kind, TCPCL4_EV_ACKED);
    CHECK_EQ_U64(e.tid, 0);
    CHECK_RC(tcpcl4_sess_event(s, &e), TERN_EEND);
    tcpcl4_sess_free(s);
    for (size_t i = 0; i < n; i++)
        free(c[i].b);
}

/* ---- two sessions in memory --------------------------------------------------- */

typedef struct pair {
    tcpcl4_sess *a, *p;
    tcpcl4_ev ea[64], ep[64];
    size_t na, np;
    uint8_t *bundle; /* copy of the last bundle p received */
    size_t blen;
    int rc_a, rc_p;
} pair;

static void pump(pair *w, int64_t now)
{
    for (int progress = 1; progress;) {
        progress = 0;
        size_t l;
        const uint8_t *o = tcpcl4_sess_output(w->a, &l);
        if (l) {
            w->rc_p = tcpcl4_sess_recv(w->p, o, l, now);
            tcpcl4_sess_sent(w->a, l);
            progress = 1;
            tcpcl4_ev e;
            while (tcpcl4_sess_event(w->p, &e) == 0) {
                if (e.kind == TCPCL4_EV_BUNDLE) {
                    free(w->bundle);
                    w->bundle = malloc(e.len);
                    memcpy(w->bundle, e.data, e.len);
                    w->blen = e.len;
                    e.data = NULL;
                }
                CHECK(w->np < 64);
                w->ep[w->np++] = e;
            }
        }
        o = tcpcl4_sess_output(w->p, &l);
        if (l) {
            w->rc_a = tcpcl4_sess_recv(w->a, o, l, now);
            tcpcl4_sess_sent(w->p, l);
            progress = 1;
            tcpcl4_ev e;
            while (tcpcl4_sess_event(w->a, &e) == 0) {
                CHECK(w->na < 64);
                w->ea[w->na++] = e;
            }
        }
    }
}

static void pair_open(pair *w, uint16_t ka_a, uint16_t ka_p, uint64_t seg_p,
                      uint64_t xfer_p)
{
    memset(w, 0, sizeof *w);
    tcpcl4_cfg ca = {.active = 1, .node = 1, .keepalive_s = ka_a};
    tcpcl4_cfg cp = {.active = 0,
                     .node = 2,
                     .keepalive_s = ka_p,
                     .seg_mru = seg_p,
                     .xfer_mru = xfer_p};
    CHECK_OK(tcpcl4_sess_new(&ca, &w->a));
    CHECK_OK(tcpcl4_sess_new(&cp, &w->p));
    pump(w, 0);
    CHECK_EQ_INT(tcpcl4_sess_state(w->a), TCPCL4_S_UP);
    CHECK_EQ_INT(tcpcl4_sess_state(w->p), TCPCL4_S_UP);
    CHECK(w->na == 1 && w->ea[0].kind == TCPCL4_EV_UP);
    CHECK(w->np == 1 && w->ep[0].kind == TCPCL4_EV_UP);
    w->na = w->np = 0;
}

static void pair_close(pair *w)
{
    tcpcl4_sess_free(w->a);
    tcpcl4_sess_free(w->p);
    free(w->bundle);
}

TEST(session_segmented_transfer)
{
    pair w;
    pair_open(&w, 30, 20, 16384, 1 << 20);
    CHECK_EQ_INT(tcpcl4_sess_keepalive(w.a), 20);
    CHECK_EQ_INT(tcpcl4_sess_keepalive(w.p), 20);
    CHECK_EQ_U64(tcpcl4_sess_peer_node(w.a), 2);
    CHECK_EQ_U64(tcpcl4_sess_peer_node(w.p), 1);
    CHECK_EQ_U64(tcpcl4_sess_peer_seg_mru(w.a), 16384);
    size_t len = 100000;
    uint8_t *b = malloc(len);
    for (size_t i = 0; i < len; i++)
        b[i] = (uint8_t)(i * 7 + 3);
    uint64_t tid;
    CHECK_OK(tcpcl4_sess_send(w.a, b, len, &tid));
    pump(&w, 0);
    CHECK(w.np == 1 && w.ep[0].kind == TCPCL4_EV_BUNDLE);
    CHECK_EQ_U64(w.ep[0].tid, tid);
    CHECK(w.blen == len && memcmp(w.bundle, b, len) == 0);
    tcpcl4_stats st;
    tcpcl4_sess_stats(w.p, &st);
    CHECK_EQ_U64(st.msgs_in, 1 + 7); /* SESS_INIT + ceil(100000 / 16384) segments */
    CHECK_EQ_INT(w.na, 0);           /* intermediate acks do not complete it */
    CHECK_OK(tcpcl4_sess_ack(w.p, w.ep[0].tid, w.ep[0].len, w.ep[0].flags));
    pump(&w, 0);
    CHECK(w.na == 1 && w.ea[0].kind == TCPCL4_EV_ACKED && w.ea[0].tid == tid);
    /* the next transfer gets the next ID */
    uint64_t tid2;
    CHECK_OK(tcpcl4_sess_send(w.a, b, 10, &tid2));
    CHECK_EQ_U64(tid2, tid + 1);
    free(b);
    pair_close(&w);
}

/* Moves up to chunk bytes of a's output to p, gathered with
 * tcpcl4_sess_output_iov in at most maxiov pieces; collects p's bundles in
 * got (each malloc'd) and acknowledges them. Returns the bytes moved. */
static size_t feed_iov(pair *w, size_t chunk, int maxiov, uint8_t **got, size_t *glen,
                       size_t *ngot)
{
    struct iovec iov[8];
    size_t total, moved = 0;
    static uint8_t tmp[1 << 18];
    int k = tcpcl4_sess_output_iov(w->a, iov, maxiov, &total);
    CHECK(total <= tcpcl4_sess_pending(w->a));
    for (int i = 0; i < k && moved < chunk; i++) {
        size_t m = iov[i].iov_len < chunk - moved ? iov[i].iov_len : chunk - moved;
        memcpy(tmp + moved, iov[i].iov_base, m);
        moved += m;
    }
    if (!moved)
        return 0;
    CHECK_OK(tcpcl4_sess_recv(w->p, tmp, moved, 0));
    tcpcl4_sess_sent(w->a, moved);
    tcpcl4_ev e;
    while (tcpcl4_sess_event(w->p, &e) == 0)
        if (e.kind == TCPCL4_EV_BUNDLE) {
            got[*ngot] = malloc(e.len);
            memcpy(got[*ngot], e.data, e.len);
            glen[(*ngot)++] = e.len;
            CHECK_OK(tcpcl4_sess_ack(w->p, e.tid, e.len, e.flags));
        }
    return moved;
}

/* Bundles sent in place (tcpcl4_sess_send_ref) between copied ones arrive
 * intact however the output is taken; a peer that acknowledges a transfer
 * before it has all left still gets its bytes after the sender let go. */
TEST(session_send_in_place)
{
    pair w;
    pair_open(&w, 30, 20, 16384, 1 << 20);
    size_t lens[4] = {100000, 5000, 70000, 50000};
    uint8_t *b[4], *orig[4], *got[8];
    size_t glen[8], ngot = 0;
    for (int i = 0; i < 4; i++) {
        b[i] = malloc(lens[i]);
        orig[i] = malloc(lens[i]);
        for (size_t j = 0; j < lens[i]; j++)
            b[i][j] = orig[i][j] = (uint8_t)(j * (unsigned)(i + 3) + (unsigned)i);
    }
    uint64_t tid[4];
    CHECK_OK(tcpcl4_sess_send_ref(w.a, b[0], lens[0], &tid[0]));
    CHECK_OK(tcpcl4_sess_send(w.a, b[1], lens[1], &tid[1]));
    CHECK_OK(tcpcl4_sess_send_ref(w.a, b[2], lens[2], &tid[2]));
    /* Odd chunks and few pieces per call: every boundary gets crossed. */
    for (size_t moved = 1; moved;)
        moved = feed_iov(&w, 777, 3, got, glen, &ngot);
    CHECK_EQ_U64(tcpcl4_sess_pending(w.a), 0);
    CHECK_EQ_U64(ngot, 3);
    for (int i = 0; i < 3; i++)
        CHECK(glen[i] == lens[i] && memcmp(got[i], orig[i], lens[i]) == 0);
    size_t l;
    const uint8_t *o = tcpcl4_sess_output(w.p, &l);
    CHECK_OK(tcpcl4_sess_recv(w.a, o, l, 0));
    tcpcl4_sess_sent(w.p, l);
    tcpcl4_ev e;
    for (int i = 0; i < 3; i++) {
        CHECK_OK(tcpcl4_sess_event(w.a, &e));
        CHECK(e.kind == TCPCL4_EV_ACKED && e.tid == tid[i]);
    }

    CHECK_OK(tcpcl4_sess_send_ref(w.a, b[3], lens[3], &tid[3]));
    CHECK_EQ_U64(feed_iov(&w, 20000, 8, got, glen, &ngot), 20000);
    /* The peer claims all of it early; the sender's caller frees its copy. */
    CHECK_OK(tcpcl4_sess_ack(w.p, tid[3], lens[3], TCPCL4_SEG_START | TCPCL4_SEG_END));
    o = tcpcl4_sess_output(w.p, &l);
    CHECK_OK(tcpcl4_sess_recv(w.a, o, l, 0));
    tcpcl4_sess_sent(w.p, l);
    CHECK_OK(tcpcl4_sess_event(w.a, &e));
    CHECK(e.kind == TCPCL4_EV_ACKED && e.tid == tid[3]);
    memset(b[3], 0xee, lens[3]);
    for (size_t moved = 1; moved;)
        moved = feed_iov(&w, 4096, 8, got, glen, &ngot);
    CHECK_EQ_U64(ngot, 4);
    CHECK(glen[3] == lens[3] && memcmp(got[3], orig[3], lens[3]) == 0);
    for (size_t i = 0; i < ngot; i++)
        free(got[i]);
    for (int i = 0; i < 4; i++) {
        free(b[i]);
        free(orig[i]);
    }
    pair_close(&w);
}

TEST(session_transfer_mru)
{
    pair w;
    pair_open(&w, 0, 0, 1000, 5000);
    static uint8_t b[8000];
    uint64_t tid;
    /* the sender honours the peer's transfer MRU */
    CHECK_RC(tcpcl4_sess_send(w.a, b, sizeof b, &tid), -EMSGSIZE);
    CHECK_RC(tcpcl4_sess_send(w.a, b, 0, &tid), -EMSGSIZE);
    /* a peer that ignores it: a transfer length extension over the MRU is refused */
    uint8_t m[64];
    size_t n = tcpcl4_enc_seg_hdr(m, TCPCL4_SEG_START, 5, 100, 8000);
    CHECK_OK(tcpcl4_sess_recv(w.p, m, n, 0));
    CHECK_OK(tcpcl4_sess_recv(w.p, b, 100, 0));
    size_t l;
    const uint8_t *o = tcpcl4_sess_output(w.p, &l);
    CHECK_HEX(o, l, "03 02 0000000000000005");
    tcpcl4_sess_sent(w.p, l);
    /* the rest of the refused transfer is ignored */
    n = tcpcl4_enc_seg_hdr(m, TCPCL4_SEG_END, 5, 100, 0);
    CHECK_OK(tcpcl4_sess_recv(w.p, m, n, 0));
    CHECK_OK(tcpcl4_sess_recv(w.p, b, 100, 0));
    CHECK(tcpcl4_sess_output(w.p, &l) == NULL);
    /* without the extension: refused once the data passes the MRU */
    for (int i = 0; i < 6; i++) {
        n = tcpcl4_enc_seg_hdr(m, i == 0 ? TCPCL4_SEG_START : 0, 6, 1000, 0);
        CHECK_OK(tcpcl4_sess_recv(w.p, m, n, 0));
        CHECK_OK(tcpcl4_sess_recv(w.p, b, 1000, 0));
    }
    o = tcpcl4_sess_output(w.p, &l);
    CHECK(l >= 10);
    CHECK_HEX(o + l - 10, 10, "03 02 0000000000000006");
    CHECK_EQ_INT(l, 5 * 18 + 10); /* five progress acks, then the refusal */
    tcpcl4_ev e;
    CHECK_RC(tcpcl4_sess_event(w.p, &e), TERN_EEND);
    CHECK_EQ_INT(tcpcl4_sess_state(w.p), TCPCL4_S_UP);
    pair_close(&w);
}

TEST(session_refused_and_rejected)
{
    pair w;
    pair_open(&w, 0, 0, 0, 0);
    uint64_t tid;
    CHECK_OK(tcpcl4_sess_send(w.a, (const uint8_t *)"abc", 3, &tid));
    pump(&w, 0);
    CHECK(w.np == 1 && w.ep[0].kind == TCPCL4_EV_BUNDLE);
    CHECK_OK(tcpcl4_sess_refuse(w.p, tid, TCPCL4_REFUSE_NOT_ACCEPTABLE));
    pump(&w, 0);
    CHECK(w.na == 1 && w.ea[0].kind == TCPCL4_EV_REFUSED && w.ea[0].tid == tid);
    CHECK_EQ_INT(w.ea[0].reason, TCPCL4_REFUSE_NOT_ACCEPTABLE);
    /* a second SESS_INIT is unexpected: MSG_REJECT, the session goes on */
    uint8_t m[64];
    size_t n = tcpcl4_enc_sess_init(m, 0, 100, 100, "ipn:1.0");
    CHECK_OK(tcpcl4_sess_recv(w.p, m, n, 0));
    size_t l;
    const uint8_t *o = tcpcl4_sess_output(w.p, &l);
    CHECK_HEX(o, l, "06 03 07");
    w.na = 0;
    pump(&w, 0);
    CHECK(w.na == 1 && w.ea[0].kind == TCPCL4_EV_REJECTED && w.ea[0].rejected == 7);
    CHECK_EQ_INT(tcpcl4_sess_state(w.p), TCPCL4_S_UP);
    pair_close(&w);
}

TEST(session_term_exchange)
{
    pair w;
    pair_open(&w, 0, 0, 0, 0);
    CHECK_OK(tcpcl4_sess_close(w.a, TCPCL4_TERM_BUSY));
    uint64_t tid;
    CHECK_RC(tcpcl4_sess_send(w.a, (const uint8_t *)"x", 1, &tid), TERN_ESTATE);
    size_t l;
    const uint8_t *o = tcpcl4_sess_output(w.a, &l);
    CHECK_HEX(o, l, "05 00 03");
    pump(&w, 0);
    CHECK(w.np == 1 && w.ep[0].kind == TCPCL4_EV_TERM && w.ep[0].by_peer == 1);
    CHECK_EQ_INT(w.ep[0].reason, TCPCL4_TERM_BUSY);
    CHECK(w.na == 1 && w.ea[0].kind == TCPCL4_EV_TERM && w.ea[0].by_peer == 0);
    CHECK_EQ_INT(tcpcl4_sess_state(w.a), TCPCL4_S_CLOSED);
    CHECK_EQ_INT(tcpcl4_sess_state(w.p), TCPCL4_S_CLOSED);
    pair_close(&w);
}

TEST(session_keepalive_and_idle)
{
    pair w;
    pair_open(&w, 10, 4, 0, 0);
    CHECK_EQ_INT(tcpcl4_sess_keepalive(w.a), 4);
    CHECK_EQ_INT(tcpcl4_sess_tick(w.a, 0), 4000);
    CHECK_EQ_INT(tcpcl4_sess_tick(w.a, 4000), 8000); /* sent one */
    size_t l;
    const uint8_t *o = tcpcl4_sess_output(w.a, &l);
    CHECK_HEX(o, l, "04");
    pump(&w, 4000);
    tcpcl4_stats st;
    tcpcl4_sess_stats(w.p, &st);
    CHECK_EQ_U64(st.keepalives_in, 1);
    /* p hears nothing more: after twice the interval it ends the session */
    tcpcl4_sess_tick(w.p, 4000);
    tcpcl4_sess_sent(w.p, 1000);
    CHECK_EQ_INT(tcpcl4_sess_tick(w.p, 11999) > 0, 1);
    CHECK_EQ_INT(tcpcl4_sess_state(w.p), TCPCL4_S_UP);
    tcpcl4_sess_sent(w.p, 1000);
    CHECK_EQ_INT(tcpcl4_sess_tick(w.p, 12000), -1);
    CHECK_EQ_INT(tcpcl4_sess_state(w.p), TCPCL4_S_CLOSED);
    o = tcpcl4_sess_output(w.p, &l);
    CHECK_HEX(o, l, "05 00 01");
    CHECK(strstr(tcpcl4_sess_error(w.p), "nothing received") != NULL);
    pair_close(&w);
}

/* ---- a listener facing bad peers --------------------------------------------- */

static tcpcl4_sess *listener(void)
{
    tcpcl4_cfg cfg = {.active = 0, .node = 2, .keepalive_s = 30};
    tcpcl4_sess *s;
    CHECK_OK(tcpcl4_sess_new(&cfg, &s));
    return s;
}

static void expect_refusal(const char *hex, const char *want_out, const char *why)
{
    uint8_t b[256];
    size_t n = unhex(hex, b, sizeof b);
    tcpcl4_sess *s = listener();
    CHECK(tcpcl4_sess_recv(s, b, n, 0) < 0);
    CHECK_EQ_INT(tcpcl4_sess_state(s), TCPCL4_S_CLOSED);
    size_t l;
    const uint8_t *o = tcpcl4_sess_output(s, &l);
    CHECK_HEX(o, l, want_out);
    CHECK_MSG(strstr(tcpcl4_sess_error(s), why) != NULL, "error \"%s\" lacks \"%s\"",
              tcpcl4_sess_error(s), why);
    /* nothing more is read once closed */
    CHECK_OK(tcpcl4_sess_recv(s, b, n, 0));
    tcpcl4_sess_free(s);
}

#define INIT_1   "07 001e 0000000000100000 0000000004000000 0007 69706e3a312e30 "
#define OUR_INIT "07 001e 0000000000100000 0000000004000000 0007 69706e3a322e30 00000000 "

TEST(bad_peers)
{
    expect_refusal("64746e21 03 00", "64746e210400 050002", "version 3");
    expect_refusal("47455420 2f20", "", "contact header");
    /* a critical session extension we do not know */
    expect_refusal("64746e21 04 00 " INIT_1 "00000006 01 1234 0001 ff",
                   "64746e210400 050004", "critical");
    /* a transfer before SESS_INIT */
    expect_refusal("64746e21 04 00 04", "64746e210400 050004", "before SESS_INIT");
    /* after SESS_INIT: an unknown message type, a segment over the MRU, a
     * segment of a transfer never started */
    expect_refusal("64746e21 04 00 " INIT_1 "00000000 99",
                   "64746e210400 " OUR_INIT "060199 050000", "unknown message type");
    expect_refusal("64746e21 04 00 " INIT_1 "00000000 01 03 0000000000000000 00000000 "
                   "0000000000100001",
                   "64746e210400 " OUR_INIT "050005", "XFER_SEGMENT declares");
    expect_refusal("64746e21 04 00 " INIT_1
                   "00000000 01 01 0000000000000004 0000000000000001 00",
                   "64746e210400 " OUR_INIT "050000", "without START");
}

TEST(unknown_noncritical_extensions_skipped)
{
    uint8_t b[256];
    size_t n =
        unhex("64746e21 04 00 " INIT_1 "0000000d 00 1234 0001 ff 00 4321 0002 ffff "
              "01 02 0000000000000003 00000006 01 7777 0001 00 0000000000000002 abcd",
              b, sizeof b);
    tcpcl4_sess *s = listener();
    CHECK_OK(tcpcl4_sess_recv(s, b, n, 0));
    tcpcl4_ev e;
    CHECK_OK(tcpcl4_sess_event(s, &e));
    CHECK_EQ_INT(e.kind, TCPCL4_EV_UP);
    /* the transfer carried a critical transfer extension we do not know */
    size_t l;
    const uint8_t *o = tcpcl4_sess_output(s, &l);
    CHECK(l >= 10);
    CHECK_HEX(o + l - 10, 10, "03 05 0000000000000003");
    CHECK_RC(tcpcl4_sess_event(s, &e), TERN_EEND);
    tcpcl4_sess_free(s);
}

/* ---- STCP and MTCP ------------------------------------------------------------ */

TEST(stcp_framing)
{
    uint8_t h[4];
    CHECK_OK(stcp_encode_hdr(h, 1068));
    CHECK_HEX(h, 4, "0000042c");
    CHECK_OK(stcp_encode_hdr(h, 0xfffffffful));
    CHECK_HEX(h, 4, "ffffffff");
    if (sizeof(size_t) > 4)
        CHECK_RC(stcp_encode_hdr(h, (size_t)0x100000000ull), -EMSGSIZE);
    uint8_t b[16];
    size_t n = unhex("00000003 616263 00000001", b, sizeof b);
    const uint8_t *d;
    size_t len, used;
    CHECK_OK(stcp_decode(b, n, 100, &d, &len, &used));
    CHECK(len == 3 && used == 7 && memcmp(d, "abc", 3) == 0);
    CHECK_RC(stcp_decode(b + 7, n - 7, 100, &d, &len, &used), TERN_ETRUNCATED);
    for (size_t k = 0; k < 7; k++)
        CHECK_RC(stcp_decode(b, k, 100, &d, &len, &used), TERN_ETRUNCATED);
    CHECK_RC(stcp_decode(b, n, 2, &d, &len, &used), TERN_EOVERFLOW);
    /* a zero length is ION's keepalive */
    CHECK_OK(stcp_decode((const uint8_t *)"\0\0\0\0", 4, 100, &d, &len, &used));
    CHECK(len == 0 && used == 4);
}

TEST(mtcp_framing)
{
    uint8_t h[9];
    CHECK_EQ_INT(mtcp_encode_hdr(h, 0), 1);
    CHECK_HEX(h, 1, "40");
    CHECK_EQ_INT(mtcp_encode_hdr(h, 23), 1);
    CHECK_HEX(h, 1, "57");
    CHECK_EQ_INT(mtcp_encode_hdr(h, 24), 2);
    CHECK_HEX(h, 2, "5818");
    CHECK_EQ_INT(mtcp_encode_hdr(h, 1068), 3);
    CHECK_HEX(h, 3, "59042c");
    CHECK_EQ_INT(mtcp_encode_hdr(h, 5000000), 5);
    CHECK_HEX(h, 5, "5a004c4b40");
    CHECK_EQ_INT(mtcp_encode_hdr(h, 0x100000000ull), 9);
    CHECK_HEX(h, 9, "5b0000000100000000");
    uint8_t b[16];
    size_t n = unhex("43 616263 5803 787878", b, sizeof b);
    const uint8_t *d;
    size_t len, used;
    CHECK_OK(mtcp_decode(b, n, 100, &d, &len, &used));
    CHECK(len == 3 && used == 4 && memcmp(d, "abc", 3) == 0);
    CHECK_OK(mtcp_decode(b + 4, n - 4, 100, &d, &len, &used)); /* non-shortest head */
    CHECK(len == 3 && used == 5 && memcmp(d, "xxx", 3) == 0);
    for (size_t k = 0; k < 4; k++)
        CHECK_RC(mtcp_decode(b, k, 100, &d, &len, &used), TERN_ETRUNCATED);
    CHECK_RC(mtcp_decode(b, n, 2, &d, &len, &used), TERN_EOVERFLOW);
    CHECK_RC(mtcp_decode((const uint8_t *)"\x5f", 1, 100, &d, &len, &used),
             TERN_EMALFORMED);
    CHECK_RC(mtcp_decode((const uint8_t *)"\x63"
                                          "abc",
                         4, 100, &d, &len, &used),
             TERN_EMALFORMED); /* a text string */
    CHECK_RC(mtcp_decode((const uint8_t *)"\x5b\xff\xff\xff\xff\xff\xff\xff\xff", 9,
                         UINT64_MAX, &d, &len, &used),
             TERN_ETRUNCATED);
}

/* ---- TCPCLv3 ---------------------------------------------------------------- */

TEST(v3_vectors)
{
    uint8_t b[64];
    size_t n =
        tcpcl3_contact_encode(b, TCPCL3_FLAG_ACKS | TCPCL3_FLAG_REFUSAL, 30, "ipn:1.0");
    CHECK_HEX(b, n, "64746e21 03 05 001e 07 69706e3a312e30");
    tcpcl3_contact c;
    size_t used;
    CHECK_OK(tcpcl3_contact_decode(b, n, &c, &used));
    CHECK_EQ_INT(used, n);
    CHECK(c.version == 3 && c.flags == 5 && c.keepalive_s == 30 && c.eid_len == 7);
    for (size_t k = 0; k < n; k++)
        CHECK_RC(tcpcl3_contact_decode(b, k, &c, &used), TERN_ETRUNCATED);
    tcpcl3_msg m;
    /* DATA_SEGMENT START|END of 200 bytes: the length is the SDNV 81 48 */
    static uint8_t seg[256];
    size_t sl = unhex("13 8148", seg, sizeof seg) + 200;
    CHECK_OK(tcpcl3_decode(seg, sl, 1000, &m, &used));
    CHECK(m.type == TCPCL3_DATA_SEGMENT && m.flags == 3 && m.len == 200 && used == sl);
    CHECK_RC(tcpcl3_decode(seg, sl - 1, 1000, &m, &used), TERN_ETRUNCATED);
    CHECK_RC(tcpcl3_decode(seg, sl, 199, &m, &used), TERN_EOVERFLOW);
    n = unhex("20 8148", b, sizeof b);
    CHECK_OK(tcpcl3_decode(b, n, 0, &m, &used));
    CHECK(m.type == TCPCL3_ACK_SEGMENT && m.len == 200);
    n = unhex("32", b, sizeof b);
    CHECK_OK(tcpcl3_decode(b, n, 0, &m, &used));
    CHECK(m.type == TCPCL3_REFUSE_BUNDLE && m.flags == 2);
    n = unhex("53 02 3c", b, sizeof b);
    CHECK_OK(tcpcl3_decode(b, n, 0, &m, &used));
    CHECK(m.type == TCPCL3_SHUTDOWN && m.has_reason && m.reason == 2 && m.has_delay &&
          m.delay_s == 60 && used == 3);
    CHECK_RC(tcpcl3_decode(b, 2, 0, &m, &used), TERN_ETRUNCATED);
    CHECK_RC(tcpcl3_decode((const uint8_t *)"\x70", 1, 0, &m, &used), TERN_ETYPE);
    CHECK_RC(
        tcpcl3_decode((const uint8_t *)"\x60\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",
                      12, 0, &m, &used),
        TERN_EMALFORMED);
}

static void pump3(tcpcl3_sess *a, tcpcl3_sess *p)
{
    for (int progress = 1; progress;) {
        progress = 0;
        size_t l;
        const uint8_t *o = tcpcl3_sess_output(a, &l);
        if (l) {
            tcpcl3_sess_recv(p, o, l, 0);
            tcpcl3_sess_sent(a, l);
            progress = 1;
        }
        o = tcpcl3_sess_output(p, &l);
        if (l) {
            tcpcl3_sess_recv(a, o, l, 0);
            tcpcl3_sess_sent(p, l);
            progress = 1;
        }
    }
}

TEST(v3_session_transfer)
{
    tcpcl4_cfg ca = {.active = 1, .node = 1, .keepalive_s = 30, .seg_mru = 128};
    tcpcl4_cfg cp = {.active = 0, .node = 2, .keepalive_s = 20};
    tcpcl3_sess *a, *p;
    CHECK_OK(tcpcl3_sess_new(&ca, &a));
    CHECK_OK(tcpcl3_sess_new(&cp, &p));
    pump3(a, p);
    tcpcl4_ev e;
    CHECK_OK(tcpcl3_sess_event(a, &e));
    CHECK_EQ_INT(e.kind, TCPCL4_EV_UP);
    CHECK_OK(tcpcl3_sess_event(p, &e));
    CHECK_EQ_INT(e.kind, TCPCL4_EV_UP);
    CHECK_EQ_INT(tcpcl3_sess_keepalive(a), 20);
    CHECK(tcpcl3_sess_acks(a) && tcpcl3_sess_acks(p));
    CHECK(strcmp(tcpcl3_sess_peer_eid(p), "ipn:1.0") == 0);
    uint8_t b[300];
    for (size_t i = 0; i < sizeof b; i++)
        b[i] = (uint8_t)i;
    uint64_t tid;
    CHECK_OK(tcpcl3_sess_send(a, b, sizeof b, &tid));
    size_t l;
    const uint8_t *o = tcpcl3_sess_output(a, &l);
    CHECK_EQ_INT(l, 3 + 3 + 2 + 300); /* segments of 128 (SDNV 81 00), 128 and 44 */
    CHECK_EQ_INT(o[0], 0x12);
    CHECK_EQ_INT(o[3 + 128], 0x10);
    CHECK_EQ_INT(o[6 + 256], 0x11);
    pump3(a, p);
    CHECK_OK(tcpcl3_sess_event(p, &e));
    CHECK_EQ_INT(e.kind, TCPCL4_EV_BUNDLE);
    CHECK(e.len == 300 && memcmp(e.data, b, 300) == 0);
    CHECK_RC(tcpcl3_sess_event(a, &e), TERN_EEND); /* only progress acks so far */
    CHECK_OK(tcpcl3_sess_ack(p, e.tid, e.len));
    o = tcpcl3_sess_output(p, &l);
    CHECK_HEX(o, l, "20 822c");
    pump3(a, p);
    CHECK_OK(tcpcl3_sess_event(a, &e));
    CHECK(e.kind == TCPCL4_EV_ACKED && e.tid == tid);
    CHECK_OK(tcpcl3_sess_close(a, TCPCL3_SHUT_BUSY));
    pump3(a, p);
    CHECK_OK(tcpcl3_sess_event(p, &e));
    CHECK(e.kind == TCPCL4_EV_TERM && e.reason == TCPCL3_SHUT_BUSY && e.by_peer);
    CHECK_EQ_INT(tcpcl3_sess_state(p), TCPCL4_S_CLOSED);
    tcpcl3_sess_free(a);
    tcpcl3_sess_free(p);
}

TEST(v3_bad_peers)
{
    tcpcl4_cfg cp = {.active = 0, .node = 2, .keepalive_s = 20};
    tcpcl3_sess *p;
    uint8_t b[64];
    size_t l;
    /* a v4 contact header: our contact header, then SHUTDOWN(version mismatch) */
    CHECK_OK(tcpcl3_sess_new(&cp, &p));
    size_t n = unhex("64746e21 04 00 0000 00", b, sizeof b);
    CHECK(tcpcl3_sess_recv(p, b, n, 0) < 0);
    const uint8_t *o = tcpcl3_sess_output(p, &l);
    CHECK_HEX(o, l, "64746e21 03 05 0014 07 69706e3a322e30 52 01");
    CHECK(strstr(tcpcl3_sess_error(p), "version 4") != NULL);
    tcpcl3_sess_free(p);
    /* an unknown message type after the contact headers */
    CHECK_OK(tcpcl3_sess_new(&cp, &p));
    n = unhex("64746e21 03 00 0000 07 69706e3a312e30 70", b, sizeof b);
    CHECK(tcpcl3_sess_recv(p, b, n, 0) < 0);
    CHECK_EQ_INT(tcpcl3_sess_state(p), TCPCL4_S_CLOSED);
    CHECK(strstr(tcpcl3_sess_error(p), "unknown message type") != NULL);
    tcpcl3_sess_free(p);
    /* a peer without acknowledgements: our bundles count as sent at once */
    CHECK_OK(tcpcl3_sess_new(&cp, &p));
    n = unhex("64746e21 03 00 0000 07 69706e3a312e30", b, sizeof b);
    CHECK_OK(tcpcl3_sess_recv(p, b, n, 0));
    tcpcl4_ev e;
    CHECK_OK(tcpcl3_sess_event(p, &e));
    CHECK_EQ_INT(e.kind, TCPCL4_EV_UP);
    CHECK(!tcpcl3_sess_acks(p));
    CHECK_EQ_INT(tcpcl3_sess_keepalive(p), 0);
    uint64_t tid;
    CHECK_OK(tcpcl3_sess_send(p, (const uint8_t *)"xyz", 3, &tid));
    CHECK_OK(tcpcl3_sess_event(p, &e));
    CHECK(e.kind == TCPCL4_EV_ACKED && e.tid == tid);
    CHECK_RC(tcpcl3_sess_refuse(p, 0, 2), -ENOTSUP);
    tcpcl3_sess_free(p);
}

/* ---- acknowledgements in bundle order across held commits -------------------- */

/* One answer a session sent: an acknowledgement (v3 and v4) or a refusal. */
typedef struct answer {
    uint8_t type, flags;
    uint64_t tid, len;
} answer;

/* Takes a v4 session's output and appends the XFER_ACKs and XFER_REFUSEs in
 * it to got, in order. */
static void v4_answers(tcpcl4_sess *s, answer *got, size_t *n, size_t cap)
{
    size_t l, off = 0;
    const uint8_t *o = tcpcl4_sess_output(s, &l);
    while (off < l) {
        tcpcl4_msg m;
        size_t used;
        CHECK_OK(tcpcl4_decode(o + off, l - off, 1 << 20, &m, &used));
        if (m.type == TCPCL4_XFER_ACK) {
            CHECK(*n < cap);
            got[(*n)++] = (answer){m.type, m.u.ack.flags, m.u.ack.tid, m.u.ack.len};
        } else if (m.type == TCPCL4_XFER_REFUSE) {
            CHECK(*n < cap);
            got[(*n)++] = (answer){m.type, m.u.refuse.reason, m.u.refuse.tid, 0};
        }
        off += used;
    }
    tcpcl4_sess_sent(s, l);
}

/* The same for a v3 session: ACK_SEGMENT (len) and REFUSE_BUNDLE (flags). */
static void v3_answers(tcpcl3_sess *s, answer *got, size_t *n, size_t cap)
{
    size_t l, off = 0;
    const uint8_t *o = tcpcl3_sess_output(s, &l);
    while (off < l) {
        tcpcl3_msg m;
        size_t used;
        CHECK_OK(tcpcl3_decode(o + off, l - off, 1 << 20, &m, &used));
        if (m.type == TCPCL3_ACK_SEGMENT || m.type == TCPCL3_REFUSE_BUNDLE) {
            CHECK(*n < cap);
            got[(*n)++] = (answer){m.type, m.flags, 0, m.len};
        }
        off += used;
    }
    tcpcl3_sess_sent(s, l);
}

/* The store stand-in: bundles taken wait for their commit, which the test
 * completes when and in the order it likes (as durable waits do). */
typedef struct held {
    uint64_t tid, len;
    uint8_t flags;
} held;

static void v4_take(tcpcl4_sess *s, held *h, size_t *nh)
{
    tcpcl4_ev e;
    while (tcpcl4_sess_event(s, &e) == 0)
        if (e.kind == TCPCL4_EV_BUNDLE)
            h[(*nh)++] = (held){e.tid, e.len, e.flags};
}

/* A v4 transfer as ION's tcpclo cuts a 65,617-byte bundle: 65,536 bytes,
 * then 81. */
static void v4_feed_two_segments(tcpcl4_sess *s, uint64_t tid)
{
    static uint8_t data[65536];
    uint8_t h[TCPCL4_SEG_HDR_MAX];
    size_t n = tcpcl4_enc_seg_hdr(h, TCPCL4_SEG_START, tid, 65536, 65617);
    CHECK_OK(tcpcl4_sess_recv(s, h, n, 0));
    CHECK_OK(tcpcl4_sess_recv(s, data, 65536, 0));
    n = tcpcl4_enc_seg_hdr(h, TCPCL4_SEG_END, tid, 81, 0);
    CHECK_OK(tcpcl4_sess_recv(s, h, n, 0));
    CHECK_OK(tcpcl4_sess_recv(s, data, 81, 0));
}

static void check_ack(const answer *a, uint8_t flags, uint64_t tid, uint64_t len)
{
    CHECK_MSG(a->type == TCPCL4_XFER_ACK && a->flags == flags && a->tid == tid &&
                  a->len == len,
              "answer type %u flags %u tid %llu len %llu, want XFER_ACK %u %llu %llu",
              a->type, a->flags, (unsigned long long)a->tid, (unsigned long long)a->len,
              flags, (unsigned long long)tid, (unsigned long long)len);
}

/* Transfer 1's final segment is held for its commit while transfer 2
 * arrives: transfer 2's progress acknowledgement must not overtake transfer
 * 1's final one, even when transfer 2 commits first. Every XFER_ACK carries
 * the bytes of its own transfer received so far. */
TEST(v4_acks_in_transfer_order)
{
    uint8_t b[256];
    size_t n = unhex("64746e21 04 00 " INIT_1 "00000000", b, sizeof b);
    tcpcl4_sess *s = listener();
    CHECK_OK(tcpcl4_sess_recv(s, b, n, 0));
    size_t l;
    tcpcl4_sess_output(s, &l);
    tcpcl4_sess_sent(s, l); /* contact header and SESS_INIT */
    answer got[32];
    size_t ng = 0;
    held h[8];
    size_t nh = 0;

    v4_feed_two_segments(s, 7);
    v4_take(s, h, &nh);
    CHECK(nh == 1 && h[0].tid == 7 && h[0].len == 65617 && h[0].flags == TCPCL4_SEG_END);
    v4_feed_two_segments(s, 8);
    v4_take(s, h, &nh);
    CHECK(nh == 2 && h[1].tid == 8);
    v4_answers(s, got, &ng, 32);
    CHECK_EQ_INT(ng, 1); /* transfer 8's progress waits for transfer 7's commit */
    check_ack(&got[0], TCPCL4_SEG_START, 7, 65536);

    /* transfer 8 commits first: its final answer waits too */
    CHECK_OK(tcpcl4_sess_ack(s, h[1].tid, h[1].len, h[1].flags));
    v4_answers(s, got, &ng, 32);
    CHECK_EQ_INT(ng, 1);
    CHECK_EQ_INT(tcpcl4_sess_answers_held(s), 3);
    CHECK_OK(tcpcl4_sess_ack(s, h[0].tid, h[0].len, h[0].flags));
    v4_answers(s, got, &ng, 32);
    CHECK_EQ_INT(ng, 4);
    check_ack(&got[1], TCPCL4_SEG_END, 7, 65617);
    check_ack(&got[2], TCPCL4_SEG_START, 8, 65536);
    check_ack(&got[3], TCPCL4_SEG_END, 8, 65617);
    CHECK_EQ_INT(tcpcl4_sess_answers_held(s), 0);

    /* nothing owed: a progress acknowledgement leaves at once */
    uint8_t hd[TCPCL4_SEG_HDR_MAX];
    n = tcpcl4_enc_seg_hdr(hd, TCPCL4_SEG_START, 9, 10, 0);
    CHECK_OK(tcpcl4_sess_recv(s, hd, n, 0));
    CHECK_OK(tcpcl4_sess_recv(s, b, 10, 0));
    v4_answers(s, got, &ng, 32);
    CHECK_EQ_INT(ng, 5);
    check_ack(&got[4], TCPCL4_SEG_START, 9, 10);
    n = tcpcl4_enc_seg_hdr(hd, TCPCL4_SEG_END, 9, 5, 0);
    CHECK_OK(tcpcl4_sess_recv(s, hd, n, 0));
    CHECK_OK(tcpcl4_sess_recv(s, b, 5, 0));
    /* a refusal keeps its place too: transfer 10 refused before 9 is acked */
    n = tcpcl4_enc_seg_hdr(hd, TCPCL4_SEG_START | TCPCL4_SEG_END, 10, 3, 0);
    CHECK_OK(tcpcl4_sess_recv(s, hd, n, 0));
    CHECK_OK(tcpcl4_sess_recv(s, b, 3, 0));
    nh = 0;
    v4_take(s, h, &nh);
    CHECK(nh == 2 && h[0].tid == 9 && h[0].len == 15 && h[1].tid == 10);
    CHECK_OK(tcpcl4_sess_refuse(s, 10, TCPCL4_REFUSE_NOT_ACCEPTABLE));
    v4_answers(s, got, &ng, 32);
    CHECK_EQ_INT(ng, 5);
    CHECK_OK(tcpcl4_sess_ack(s, 9, 15, h[0].flags));
    v4_answers(s, got, &ng, 32);
    CHECK_EQ_INT(ng, 7);
    check_ack(&got[5], TCPCL4_SEG_END, 9, 15);
    CHECK(got[6].type == TCPCL4_XFER_REFUSE && got[6].tid == 10 &&
          got[6].flags == TCPCL4_REFUSE_NOT_ACCEPTABLE);
    tcpcl4_stats st;
    tcpcl4_sess_stats(s, &st);
    CHECK_EQ_U64(st.bundles_in, 4);
    CHECK_EQ_U64(st.refused_out, 1);
    tcpcl4_sess_free(s);
}

/* ION -> Tern over TCPCLv3, as seen live: bundles of a 65,536-byte and an
 * 81-byte segment, each bundle's final ACK_SEGMENT sent once its store
 * commit is done. ION's tcpclo ties every acknowledgement to its oldest
 * unacknowledged bundle, so they must come 65536, 65617, 65536, 65617, not
 * 65536, 65536, 65617, 65617. */
TEST(v3_acks_in_bundle_order)
{
    tcpcl4_cfg cp = {.active = 0, .node = 2, .keepalive_s = 20};
    tcpcl3_sess *p;
    CHECK_OK(tcpcl3_sess_new(&cp, &p));
    uint8_t b[64];
    /* ION's contact header: acknowledgements, no refusals */
    size_t n = unhex("64746e21 03 01 000f 07 69706e3a312e30", b, sizeof b);
    CHECK_OK(tcpcl3_sess_recv(p, b, n, 0));
    CHECK(tcpcl3_sess_acks(p));
    size_t l;
    tcpcl3_sess_output(p, &l);
    tcpcl3_sess_sent(p, l); /* our contact header */
    answer got[32];
    size_t ng = 0;
    static uint8_t seg1[4 + 65536], seg2[2 + 81];
    size_t l1 = unhex("12 848000", seg1, sizeof seg1) + 65536; /* START, SDNV 65536 */
    size_t l2 = unhex("11 51", seg2, sizeof seg2) + 81;        /* END, SDNV 81 */
    held h[4];
    size_t nh = 0;
    for (int bundle = 0; bundle < 2; bundle++) {
        CHECK_OK(tcpcl3_sess_recv(p, seg1, l1, 0));
        CHECK_OK(tcpcl3_sess_recv(p, seg2, l2, 0));
        tcpcl4_ev e;
        while (tcpcl3_sess_event(p, &e) == 0)
            if (e.kind == TCPCL4_EV_BUNDLE)
                h[nh++] = (held){e.tid, e.len, e.flags};
    }
    CHECK_EQ_INT(nh, 2);
    CHECK(h[0].len == 65617 && h[1].len == 65617 && h[0].tid != h[1].tid);
    v3_answers(p, got, &ng, 32);
    CHECK_EQ_INT(ng, 1);
    CHECK(got[0].type == TCPCL3_ACK_SEGMENT && got[0].len == 65536);
    CHECK_OK(tcpcl3_sess_ack(p, h[1].tid, h[1].len)); /* the second commits first */
    v3_answers(p, got, &ng, 32);
    CHECK_EQ_INT(ng, 1);
    CHECK_OK(tcpcl3_sess_ack(p, h[0].tid, h[0].len));
    v3_answers(p, got, &ng, 32);
    CHECK_EQ_INT(ng, 4);
    const uint64_t want[4] = {65536, 65617, 65536, 65617};
    for (int i = 0; i < 4; i++)
        CHECK_MSG(got[i].type == TCPCL3_ACK_SEGMENT && got[i].len == want[i],
                  "ack %d: type %u length %llu, want %llu", i, got[i].type,
                  (unsigned long long)got[i].len, (unsigned long long)want[i]);
    CHECK_EQ_INT(tcpcl3_sess_answers_held(p), 0);
    /* an empty intermediate segment acknowledges nothing: ION takes a
     * repeated length as a failure */
    n = unhex("12 03 616263 10 00 11 02 6465", b, sizeof b);
    CHECK_OK(tcpcl3_sess_recv(p, b, n, 0));
    v3_answers(p, got, &ng, 32);
    CHECK_EQ_INT(ng, 5);
    CHECK(got[4].len == 3);
    tcpcl3_sess_free(p);
}

/* A peer sending tiny segments while a commit is pending: past
 * TCL_ANS_HOLD_MAX held answers its progress acknowledgements merge into
 * the latest, which still counts every byte; they stay ascending. */
TEST(v4_held_answers_bounded)
{
    uint8_t b[256];
    size_t n = unhex("64746e21 04 00 " INIT_1 "00000000", b, sizeof b);
    tcpcl4_sess *s = listener();
    CHECK_OK(tcpcl4_sess_recv(s, b, n, 0));
    size_t l;
    tcpcl4_sess_output(s, &l);
    tcpcl4_sess_sent(s, l);
    answer *got = malloc(20000 * sizeof *got);
    size_t ng = 0;
    uint8_t hd[TCPCL4_SEG_HDR_MAX];
    n = tcpcl4_enc_seg_hdr(hd, TCPCL4_SEG_START | TCPCL4_SEG_END, 1, 1, 0);
    CHECK_OK(tcpcl4_sess_recv(s, hd, n, 0));
    CHECK_OK(tcpcl4_sess_recv(s, b, 1, 0));
    for (int i = 0; i < 10000; i++) {
        n = tcpcl4_enc_seg_hdr(hd, i == 0 ? TCPCL4_SEG_START : 0, 2, 1, 0);
        CHECK_OK(tcpcl4_sess_recv(s, hd, n, 0));
        CHECK_OK(tcpcl4_sess_recv(s, b, 1, 0));
    }
    CHECK(tcpcl4_sess_answers_held(s) <= 4096);
    CHECK_OK(tcpcl4_sess_ack(s, 1, 1, TCPCL4_SEG_START | TCPCL4_SEG_END));
    v4_answers(s, got, &ng, 20000);
    CHECK(ng >= 2 && ng <= 4096);
    check_ack(&got[0], TCPCL4_SEG_START | TCPCL4_SEG_END, 1, 1);
    for (size_t i = 2; i < ng; i++)
        CHECK(got[i].tid == 2 && got[i].len > got[i - 1].len);
    CHECK_EQ_U64(got[ng - 1].len, 10000);
    free(got);
    tcpcl4_sess_free(s);
}

/* ---- a peer that sets CAN_TLS, node IDs of any scheme ------------------------ */

/* RFC 9174 4.3: TLS is used only when both contact headers set CAN_TLS;
 * Tern's never does, so a peer that offers TLS gets a plain session. */
TEST(v4_peer_can_tls_gets_plain_session)
{
    uint8_t b[256];
    size_t n = unhex("64746e21 04 01 " INIT_1 "00000000", b, sizeof b);
    tcpcl4_sess *s = listener();
    CHECK_OK(tcpcl4_sess_recv(s, b, n, 0));
    CHECK_EQ_INT(tcpcl4_sess_state(s), TCPCL4_S_UP);
    CHECK_EQ_INT(tcpcl4_sess_peer_flags(s), TCPCL4_FLAG_CAN_TLS);
    size_t l;
    const uint8_t *o = tcpcl4_sess_output(s, &l);
    CHECK_HEX(o, l, "64746e210400 " OUR_INIT); /* our flags stay 0 */
    tcpcl4_ev e;
    CHECK_OK(tcpcl4_sess_event(s, &e));
    CHECK_EQ_INT(e.kind, TCPCL4_EV_UP);
    CHECK_EQ_STR(tcpcl4_sess_error(s), "");
    tcpcl4_sess_free(s);
    /* the connecting side: the peer's contact header with CAN_TLS is
     * answered with our SESS_INIT */
    tcpcl4_cfg ca = {.active = 1, .node = 1, .keepalive_s = 30};
    CHECK_OK(tcpcl4_sess_new(&ca, &s));
    tcpcl4_sess_sent(s, 6);
    CHECK_OK(tcpcl4_sess_recv(s, (const uint8_t *)"dtn!\x04\x01", 6, 0));
    o = tcpcl4_sess_output(s, &l);
    CHECK(l > 0 && o[0] == TCPCL4_SESS_INIT);
    tcpcl4_sess_sent(s, l);
    n = unhex("07 001e 0000000000100000 0000000004000000 0007 69706e3a322e30 00000000", b,
              sizeof b);
    CHECK_OK(tcpcl4_sess_recv(s, b, n, 0));
    CHECK_EQ_INT(tcpcl4_sess_state(s), TCPCL4_S_UP);
    tcpcl4_sess_free(s);
}

/* A listener fed a contact header and a SESS_INIT with node ID id. */
static tcpcl4_sess *init_with_node_id(const char *id, size_t idlen)
{
    uint8_t b[512];
    size_t n =
        unhex("64746e21 04 00 07 001e 0000000000100000 0000000004000000", b, sizeof b);
    b[n++] = (uint8_t)(idlen >> 8);
    b[n++] = (uint8_t)idlen;
    memcpy(b + n, id, idlen);
    n += idlen;
    memset(b + n, 0, 4);
    n += 4;
    tcpcl4_sess *s = listener();
    tcpcl4_sess_recv(s, b, n, 0);
    return s;
}

TEST(v4_node_ids_of_any_scheme)
{
    static const struct {
        const char *sent, *kept;
        int kind;
        uint64_t node;
    } good[] = {
        {"dtn://peer/", "dtn://peer/", TCPCL4_NODE_DTN, 0}, /* dtn7-rs */
        {"dtn://peer", "dtn://peer/", TCPCL4_NODE_DTN, 0},
        {"dtn://ud3tn.dtn/", "dtn://ud3tn.dtn/", TCPCL4_NODE_DTN, 0},
        {"ipn:1.0", "ipn:1.0", TCPCL4_NODE_IPN, 1},
        {"ipn:977.5.0", "ipn:977.5.0", TCPCL4_NODE_IPN,
         (977ull << 32) | 5},          /* RFC 9758 */
        {"", "", TCPCL4_NODE_NONE, 0}, /* RFC 9174 4.6: withheld */
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        tcpcl4_sess *s = init_with_node_id(good[i].sent, strlen(good[i].sent));
        CHECK_MSG(tcpcl4_sess_state(s) == TCPCL4_S_UP, "%s refused: %s", good[i].sent,
                  tcpcl4_sess_error(s));
        CHECK_EQ_STR(tcpcl4_sess_peer_node_id(s), good[i].kept);
        CHECK_EQ_INT(tcpcl4_sess_peer_node_kind(s), good[i].kind);
        CHECK_EQ_U64(tcpcl4_sess_peer_node(s), good[i].node);
        size_t l;
        const uint8_t *o = tcpcl4_sess_output(s, &l);
        CHECK_HEX(o, l, "64746e210400 " OUR_INIT); /* ours stays ipn:2.0 */
        tcpcl4_sess_free(s);
    }
    static const struct {
        const char *sent, *why;
    } bad[] = {
        {"dtn://", "no node name"},
        {"dtn:none", "dtn:none is the null endpoint"},
        {"dtn://peer/app", "names an endpoint"},
        {"dtn:peer", "not dtn://"},
        {"dtn://pe er/", "space"},
        {"ipn:1.1", "service number 0"},
        {"ipn:01.0", "leading zero"},
        {"ipn:1", "not ipn:N.0"},
        {"ipn:1.2.3.0", "not ipn:N.0"},
        {"ipn:4294967296.1.0", "above 2^32-1"},
        {"http://peer/", "scheme other than ipn or dtn"},
        {"peer", "not a URI"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tcpcl4_sess *s = init_with_node_id(bad[i].sent, strlen(bad[i].sent));
        CHECK_MSG(tcpcl4_sess_state(s) == TCPCL4_S_CLOSED, "%s accepted", bad[i].sent);
        const char *err = tcpcl4_sess_error(s);
        CHECK_MSG(strstr(err, bad[i].why) && strstr(err, bad[i].sent),
                  "%s: error \"%s\" lacks \"%s\"", bad[i].sent, err, bad[i].why);
        size_t l;
        const uint8_t *o = tcpcl4_sess_output(s, &l);
        CHECK(l >= 3);
        CHECK_HEX(o + l - 3, 3, "05 00 04"); /* SESS_TERM, contact failure */
        tcpcl4_sess_free(s);
    }
    /* control bytes are shown escaped, and too long an ID is refused */
    tcpcl4_sess *s = init_with_node_id("dtn://a\x01/", 9);
    CHECK(strstr(tcpcl4_sess_error(s), "dtn://a\\x01/") != NULL);
    tcpcl4_sess_free(s);
    char longid[300];
    memcpy(longid, "dtn://", 6);
    memset(longid + 6, 'a', sizeof longid - 7);
    longid[sizeof longid - 1] = '/';
    s = init_with_node_id(longid, sizeof longid);
    CHECK(strstr(tcpcl4_sess_error(s), "longer than 259 bytes") != NULL);
    tcpcl4_sess_free(s);
}

/* A real ION 4.1.3 tcpclo session into Tern's induct (captured on lo,
 * 2026-12-01; vectors/ion413-tcpclv3-to-tern.bin is what ION sent): its
 * contact header, bpdriver's 3-byte pilot bundle in one segment, then three
 * 65,621-byte bundles, each a 65,536-byte segment and an 85-byte one. Fed
 * to a v3 listener in 1,000-byte reads, with the commits finishing in the
 * reverse order, the acknowledgements must still come in bundle order, each
 * cumulative for its own bundle: 84, then 65536 and 65621 three times (the
 * capture's own answers; ION drops the session on any other order). */
TEST(ion_v3_capture_acked_in_bundle_order)
{
    FILE *f = fopen(TERN_TEST_VECTORS "/ion413-tcpclv3-to-tern.bin", "rb");
    CHECK_MSG(f != NULL, "cannot open %s",
              TERN_TEST_VECTORS "/ion413-tcpclv3-to-tern.bin");
    static uint8_t ion[200000];
    size_t n = fread(ion, 1, sizeof ion, f);
    fclose(f);
    CHECK_EQ_INT(n, 196983);
    tcpcl4_cfg cp = {.active = 0, .node = 1, .keepalive_s = 30};
    tcpcl3_sess *p;
    CHECK_OK(tcpcl3_sess_new(&cp, &p));
    held h[8];
    size_t nh = 0;
    answer got[16];
    size_t ng = 0;
    int contact = 0;
    for (size_t off = 0; off < n; off += 1000) {
        CHECK_OK(tcpcl3_sess_recv(p, ion + off, n - off < 1000 ? n - off : 1000, 0));
        if (!contact && tcpcl3_sess_peer_eid(p)) {
            size_t l;
            tcpcl3_sess_output(p, &l);
            tcpcl3_sess_sent(p, l); /* our contact header */
            contact = 1;
        }
        tcpcl4_ev e;
        while (tcpcl3_sess_event(p, &e) == 0)
            if (e.kind == TCPCL4_EV_BUNDLE) {
                CHECK(nh < 8);
                bp_bundle b;
                CHECK_OK(bp_bundle_decode(e.data, e.len, &b, NULL, NULL));
                CHECK_EQ_U64(b.pri.src.node, 2);
                CHECK_EQ_U64(b.pri.dest.node, 1);
                h[nh++] = (held){e.tid, e.len, e.flags};
            }
        v3_answers(p, got, &ng, 16);
    }
    CHECK(contact);
    CHECK_EQ_STR(tcpcl3_sess_peer_eid(p), "ipn:2.0");
    CHECK_EQ_INT(nh, 4);
    CHECK_EQ_U64(h[0].len, 84);
    for (int i = 1; i < 4; i++)
        CHECK_EQ_U64(h[i].len, 65621);
    for (int i = 3; i >= 0; i--) { /* the last bundle's commit first */
        CHECK_OK(tcpcl3_sess_ack(p, h[i].tid, h[i].len));
        v3_answers(p, got, &ng, 16);
    }
    const uint64_t want[7] = {84, 65536, 65621, 65536, 65621, 65536, 65621};
    CHECK_EQ_INT(ng, 7);
    for (int i = 0; i < 7; i++)
        CHECK_MSG(got[i].type == TCPCL3_ACK_SEGMENT && got[i].len == want[i],
                  "ack %d: type %u length %llu, want %llu", i, got[i].type,
                  (unsigned long long)got[i].len, (unsigned long long)want[i]);
    tcpcl3_sess_free(p);
}

/* ---- a transfer the peer refused is not sent further -------------------------- */

/* Takes up to max bytes of s's output (all of it with SIZE_MAX), gathered as
 * tcpcl4_sess_output_iov gives it, into out. */
static size_t take_out(tcpcl4_sess *s, uint8_t *out, size_t cap, size_t max)
{
    struct iovec iov[64];
    size_t total, n = 0;
    int k = tcpcl4_sess_output_iov(s, iov, 64, &total);
    for (int i = 0; i < k && n < max; i++) {
        size_t m = iov[i].iov_len < max - n ? iov[i].iov_len : max - n;
        CHECK(n + m <= cap);
        memcpy(out + n, iov[i].iov_base, m);
        n += m;
    }
    tcpcl4_sess_sent(s, n);
    return n;
}

/* The peer (segment MRU 1,000) refuses transfer 1 of 5,000 bytes once its
 * first segment arrived: none of transfer 1's other four segments leaves,
 * while transfer 2 follows whole. In place, a first segment part sent still
 * goes out whole (from a copy: the caller lets the bundle go on the
 * refusal). */
static void refused_transfer_stops(int in_place)
{
    pair w;
    pair_open(&w, 0, 0, 1000, 1 << 20);
    static uint8_t b1[5000], b2[3000], out[16384];
    for (size_t i = 0; i < sizeof b1; i++)
        b1[i] = (uint8_t)(i * 13 + 1);
    for (size_t i = 0; i < sizeof b2; i++)
        b2[i] = (uint8_t)(i * 5 + 2);
    uint64_t t1, t2;
    if (in_place) {
        CHECK_OK(tcpcl4_sess_send_ref(w.a, b1, sizeof b1, &t1));
        CHECK_OK(tcpcl4_sess_send_ref(w.a, b2, sizeof b2, &t2));
    } else {
        CHECK_OK(tcpcl4_sess_send(w.a, b1, sizeof b1, &t1));
        CHECK_OK(tcpcl4_sess_send(w.a, b2, sizeof b2, &t2));
    }
    /* The first segment (a 35-byte START header with the transfer length),
     * or in place its header and half its data, goes out. */
    size_t first = in_place ? 35 + 500 : 35 + 1000;
    CHECK_EQ_U64(take_out(w.a, out, sizeof out, first), first);
    uint8_t r[10];
    CHECK_OK(tcpcl4_sess_recv(w.a, r,
                              tcpcl4_enc_refuse(r, TCPCL4_REFUSE_NO_RESOURCES, t1), 0));
    tcpcl4_ev e;
    CHECK_OK(tcpcl4_sess_event(w.a, &e));
    CHECK(e.kind == TCPCL4_EV_REFUSED && e.tid == t1);
    CHECK_EQ_INT(e.reason, TCPCL4_REFUSE_NO_RESOURCES);
    memset(b1, 0xee, sizeof b1); /* the caller let it go */
    size_t n = take_out(w.a, out, sizeof out, SIZE_MAX);
    size_t off = 0;
    if (in_place) { /* the rest of the segment begun */
        CHECK(n >= 500);
        for (size_t i = 500; i < 1000; i++)
            CHECK((uint8_t)(i * 13 + 1) == out[i - 500]);
        off = 500;
    }
    size_t segs1 = 0, segs2 = 0, got2 = 0;
    uint8_t last = 0;
    while (off < n) {
        tcpcl4_msg m;
        size_t used;
        CHECK_OK(tcpcl4_decode(out + off, n - off, 1 << 20, &m, &used));
        CHECK_EQ_INT(m.type, TCPCL4_XFER_SEGMENT);
        if (m.u.seg.tid == t1)
            segs1++;
        if (m.u.seg.tid == t2) {
            segs2++;
            CHECK(got2 + m.u.seg.len <= sizeof b2);
            CHECK(memcmp(m.u.seg.data, b2 + got2, (size_t)m.u.seg.len) == 0);
            got2 += (size_t)m.u.seg.len;
            last = m.u.seg.flags;
        }
        off += used;
    }
    CHECK_MSG(segs1 == 0, "%zu more XFER_SEGMENTs of refused transfer %llu", segs1,
              (unsigned long long)t1);
    CHECK_EQ_U64(segs2, 3);
    CHECK_EQ_U64(got2, sizeof b2);
    CHECK(last & TCPCL4_SEG_END);
    CHECK_EQ_U64(tcpcl4_sess_pending(w.a), 0);
    tcpcl4_stats st;
    tcpcl4_sess_stats(w.a, &st);
    CHECK_EQ_U64(st.segs_cut, 4);
    CHECK_EQ_U64(st.refused_in, 1);
    pair_close(&w);
}

TEST(v4_refused_transfer_stops)
{
    refused_transfer_stops(0);
}

TEST(v4_refused_transfer_stops_in_place)
{
    refused_transfer_stops(1);
}

/* Found by fuzz_tcpcl_session: a peer declaring a small segment MRU has our
 * bundles cut in many segments, and one XFER_REFUSE then took every later
 * segment's bytes and refs one memmove and one pass each: quadratic, 420 ms
 * of CPU for 11 transfers of 20 kB in 1-byte segments (seconds for MiBs).
 * Now a peer MRU below 512 bytes ends the session, and a refusal cuts
 * its transfer's segments in one pass. Here 32 transfers of 256 KiB in 512
 * segments each, interleaved with kept ones, are refused: quick, and the
 * transfers kept go out intact. */
TEST(v4_refuse_of_many_segments_is_linear)
{
    pair w;
    pair_open(&w, 0, 0, 512, 1 << 20);
    enum { NT = 32, LEN = 256 * 1024 };
    static uint8_t big[LEN], small[700];
    for (size_t i = 0; i < sizeof small; i++)
        small[i] = (uint8_t)(i * 3 + 1);
    uint64_t refused[NT], kept[NT];
    for (int i = 0; i < NT; i++) {
        CHECK_OK(tcpcl4_sess_send_ref(w.a, big, LEN, &refused[i]));
        CHECK_OK(tcpcl4_sess_send(w.a, small, sizeof small, &kept[i]));
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
    for (int i = 0; i < NT; i++) {
        uint8_t r[10];
        CHECK_OK(tcpcl4_sess_recv(
            w.a, r, tcpcl4_enc_refuse(r, TCPCL4_REFUSE_NO_RESOURCES, refused[i]), 0));
    }
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
    double ms =
        (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    fprintf(stderr, "# 32 refusals of 512 segments each: %.1f ms of CPU\n", ms);
    CHECK_MSG(ms < 200, "refusals took %.1f ms", ms);
    tcpcl4_stats st;
    tcpcl4_sess_stats(w.a, &st);
    CHECK_EQ_U64(st.segs_cut, (uint64_t)NT * (LEN / 512));
    /* what is left: the kept transfers, whole, in order */
    static uint8_t out[NT * 1000];
    size_t n = take_out(w.a, out, sizeof out, SIZE_MAX), off = 0;
    int got = 0;
    while (off < n) {
        tcpcl4_msg m;
        size_t used;
        CHECK_OK(tcpcl4_decode(out + off, n - off, 1 << 20, &m, &used));
        CHECK_EQ_INT(m.type, TCPCL4_XFER_SEGMENT);
        if (m.u.seg.flags & TCPCL4_SEG_START)
            CHECK_EQ_U64(m.u.seg.tid, kept[got / 2]);
        CHECK(memcmp(m.u.seg.data, small + (got % 2 ? 512 : 0), (size_t)m.u.seg.len) ==
              0);
        got++;
        off += used;
    }
    CHECK_EQ_INT(got, 2 * NT); /* 700 bytes: 512 + 188 */
    CHECK_EQ_U64(tcpcl4_sess_pending(w.a), 0);
    pair_close(&w);
}

TEST(v4_peer_tiny_segment_mru_refused)
{
    tcpcl4_cfg cp = {.active = 0, .node = 2, .keepalive_s = 0};
    tcpcl4_sess *s;
    CHECK_OK(tcpcl4_sess_new(&cp, &s));
    uint8_t m[64];
    size_t n = tcpcl4_contact_encode(m, 0);
    n += tcpcl4_enc_sess_init(m + n, 0, 16, 1 << 20, "ipn:1.0");
    CHECK_RC(tcpcl4_sess_recv(s, m, n, 0), TERN_EMALFORMED);
    CHECK_EQ_INT(tcpcl4_sess_state(s), TCPCL4_S_CLOSED);
    CHECK_EQ_STR(tcpcl4_sess_error(s), "peer's segment MRU 16 is below 512 bytes");
    tcpcl4_sess_free(s);
}

/* ---- TCPCLv3 refusals wait behind earlier bundles' acknowledgements ----------- */

/* A v3 peer with acknowledgements and refusals (flags 0x05) pipelines four
 * bundles while bundle 0's commit is pending: bundle 1 is refused by the
 * agent (tcpcl3_sess_refuse), bundle 2 by the session itself (above the
 * transfer MRU), bundle 3 commits first. Nothing of bundles 1-3 may leave
 * before bundle 0's final acknowledgement (the peer ties each answer to its
 * oldest bundle), then each gets its answer in arrival order. */
TEST(v3_refusals_wait_in_bundle_order)
{
    tcpcl4_cfg cp = {.active = 0, .node = 2, .keepalive_s = 20, .xfer_mru = 100};
    tcpcl3_sess *p;
    CHECK_OK(tcpcl3_sess_new(&cp, &p));
    uint8_t b[256];
    size_t n = unhex("64746e21 03 05 000f 07 69706e3a312e30", b, sizeof b);
    CHECK_OK(tcpcl3_sess_recv(p, b, n, 0));
    size_t l;
    tcpcl3_sess_output(p, &l);
    tcpcl3_sess_sent(p, l);
    answer got[16];
    size_t ng = 0;
    /* bundle 0: 3 + 2 bytes; bundle 1: 4 bytes in one segment; bundle 2:
     * 60 + 60 bytes (over the MRU of 100 at its second segment); bundle 3:
     * 2 + 1 bytes */
    static uint8_t seg60[2 + 60] = {0x12, 60}, seg60e[2 + 60] = {0x11, 60};
    n = unhex("12 03 616263 11 02 6465  13 04 61626364", b, sizeof b);
    CHECK_OK(tcpcl3_sess_recv(p, b, n, 0));
    CHECK_OK(tcpcl3_sess_recv(p, seg60, sizeof seg60, 0));
    CHECK_OK(tcpcl3_sess_recv(p, seg60e, sizeof seg60e, 0));
    n = unhex("12 02 6162 11 01 63", b, sizeof b);
    CHECK_OK(tcpcl3_sess_recv(p, b, n, 0));
    held h[4];
    size_t nh = 0;
    tcpcl4_ev e;
    while (tcpcl3_sess_event(p, &e) == 0)
        if (e.kind == TCPCL4_EV_BUNDLE)
            h[nh++] = (held){e.tid, e.len, e.flags};
    CHECK_EQ_INT(nh, 3); /* bundle 2 never reaches the agent */
    CHECK(h[0].len == 5 && h[1].len == 4 && h[2].len == 3);
    CHECK_OK(tcpcl3_sess_refuse(p, h[1].tid, TCPCL4_REFUSE_NO_RESOURCES));
    CHECK_OK(tcpcl3_sess_ack(p, h[2].tid, h[2].len));
    v3_answers(p, got, &ng, 16);
    CHECK_MSG(ng == 1, "%zu answers before bundle 0's commit, want its progress ack only",
              ng);
    CHECK(got[0].type == TCPCL3_ACK_SEGMENT && got[0].len == 3);
    CHECK_OK(tcpcl3_sess_ack(p, h[0].tid, h[0].len));
    v3_answers(p, got, &ng, 16);
    /* 0: ack 3, ack 5; 1: refused; 2: ack 60, refused; 3: ack 2, ack 3 */
    const struct {
        uint8_t type, flags;
        uint64_t len;
    } want[7] = {{TCPCL3_ACK_SEGMENT, 0, 3},
                 {TCPCL3_ACK_SEGMENT, 0, 5},
                 {TCPCL3_REFUSE_BUNDLE, TCPCL4_REFUSE_NO_RESOURCES, 0},
                 {TCPCL3_ACK_SEGMENT, 0, 60},
                 {TCPCL3_REFUSE_BUNDLE, TCPCL4_REFUSE_NO_RESOURCES, 0},
                 {TCPCL3_ACK_SEGMENT, 0, 2},
                 {TCPCL3_ACK_SEGMENT, 0, 3}};
    CHECK_EQ_INT(ng, 7);
    for (int i = 0; i < 7; i++)
        CHECK_MSG(got[i].type == want[i].type && got[i].len == want[i].len &&
                      (want[i].type != TCPCL3_REFUSE_BUNDLE ||
                       (got[i].flags & 0x0f) == want[i].flags),
                  "answer %d: type %u flags %u length %llu, want type %u length %llu", i,
                  got[i].type, got[i].flags, (unsigned long long)got[i].len, want[i].type,
                  (unsigned long long)want[i].len);
    CHECK_EQ_INT(tcpcl3_sess_answers_held(p), 0);
    tcpcl3_sess_free(p);
}

/* ---- answers owed when the peer ends the session ------------------------------ */

/* The peer ends the session (SESS_TERM) while transfer 1's commit is
 * pending and transfer 2's refusal is held behind it: the session stays
 * ENDING, both answers still go out in order, and it closes with the last. */
TEST(v4_answers_owed_survive_peer_term)
{
    pair w;
    pair_open(&w, 0, 0, 0, 0);
    uint64_t t1, t2;
    CHECK_OK(tcpcl4_sess_send(w.a, (const uint8_t *)"abc", 3, &t1));
    CHECK_OK(tcpcl4_sess_send(w.a, (const uint8_t *)"defg", 4, &t2));
    pump(&w, 0);
    CHECK(w.np == 2 && w.ep[0].kind == TCPCL4_EV_BUNDLE &&
          w.ep[1].kind == TCPCL4_EV_BUNDLE);
    CHECK_OK(tcpcl4_sess_refuse(w.p, t2, TCPCL4_REFUSE_NOT_ACCEPTABLE));
    CHECK_OK(tcpcl4_sess_close(w.a, TCPCL4_TERM_UNKNOWN));
    pump(&w, 0); /* a's SESS_TERM, p's reply: nothing else */
    CHECK_EQ_INT(tcpcl4_sess_state(w.a), TCPCL4_S_CLOSED);
    CHECK_EQ_INT(tcpcl4_sess_state(w.p), TCPCL4_S_ENDING);
    CHECK_EQ_INT(tcpcl4_sess_answers_held(w.p), 2);
    CHECK_OK(tcpcl4_sess_ack(w.p, t1, 3, TCPCL4_SEG_START | TCPCL4_SEG_END));
    answer got[4];
    size_t ng = 0;
    v4_answers(w.p, got, &ng, 4);
    CHECK_EQ_INT(ng, 2);
    check_ack(&got[0], TCPCL4_SEG_START | TCPCL4_SEG_END, t1, 3);
    CHECK(got[1].type == TCPCL4_XFER_REFUSE && got[1].tid == t2 &&
          got[1].flags == TCPCL4_REFUSE_NOT_ACCEPTABLE);
    CHECK_EQ_INT(tcpcl4_sess_state(w.p), TCPCL4_S_CLOSED);
    pair_close(&w);
}

/* The same for v3: the peer's SHUTDOWN arrives while bundle 0's commit is
 * pending and bundle 1's refusal waits behind it. */
TEST(v3_answers_owed_survive_peer_shutdown)
{
    tcpcl4_cfg cp = {.active = 0, .node = 2, .keepalive_s = 20};
    tcpcl3_sess *p;
    CHECK_OK(tcpcl3_sess_new(&cp, &p));
    uint8_t b[64];
    size_t n = unhex("64746e21 03 05 000f 07 69706e3a312e30", b, sizeof b);
    CHECK_OK(tcpcl3_sess_recv(p, b, n, 0));
    size_t l;
    tcpcl3_sess_output(p, &l);
    tcpcl3_sess_sent(p, l);
    n = unhex("13 03 616263 13 02 6465", b, sizeof b);
    CHECK_OK(tcpcl3_sess_recv(p, b, n, 0));
    held h[2];
    size_t nh = 0;
    tcpcl4_ev e;
    while (tcpcl3_sess_event(p, &e) == 0)
        if (e.kind == TCPCL4_EV_BUNDLE)
            h[nh++] = (held){e.tid, e.len, e.flags};
    CHECK_EQ_INT(nh, 2);
    CHECK_OK(tcpcl3_sess_refuse(p, h[1].tid, TCPCL4_REFUSE_NO_RESOURCES));
    n = unhex("50", b, sizeof b); /* SHUTDOWN, no reason, no delay */
    CHECK_OK(tcpcl3_sess_recv(p, b, n, 0));
    CHECK_OK(tcpcl3_sess_event(p, &e));
    CHECK_EQ_INT(e.kind, TCPCL4_EV_TERM);
    CHECK_EQ_INT(tcpcl3_sess_state(p), TCPCL4_S_ENDING);
    CHECK_OK(tcpcl3_sess_ack(p, h[0].tid, h[0].len));
    answer got[4];
    size_t ng = 0;
    v3_answers(p, got, &ng, 4);
    CHECK_EQ_INT(ng, 2);
    CHECK(got[0].type == TCPCL3_ACK_SEGMENT && got[0].len == 3);
    CHECK(got[1].type == TCPCL3_REFUSE_BUNDLE &&
          (got[1].flags & 0x0f) == TCPCL4_REFUSE_NO_RESOURCES);
    CHECK_EQ_INT(tcpcl3_sess_state(p), TCPCL4_S_CLOSED);
    tcpcl3_sess_free(p);
}
