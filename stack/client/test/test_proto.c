/* The client protocol's wire format: every message type round trip, the
 * decoders' refusals, descriptor passing and the socket name. (The server
 * and libtern end to end: stack/node/test/test_cserver.c.) */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tern_bp.h"
#include "tern_proto.h"
#include "tern_test.h"

static uint8_t buf[TERN_PROTO_MSG_MAX];

/* Unpacks the header of buf[0..n) and checks type and id. */
static const uint8_t *body_of(int n, uint32_t type, uint64_t id, size_t *len)
{
    CHECK_MSG(n > 0, "encoder returned %d (%s)", n, tern_strerror(n));
    tern_msg_hdr h;
    const char *why = NULL;
    CHECK_OK(tern_proto_hdr_unpack(buf, (size_t)n, &h, &why));
    CHECK_EQ_U64(h.type, type);
    CHECK_EQ_U64(h.id, id);
    CHECK_EQ_U64(h.len, (size_t)n - TERN_PROTO_HDR);
    *len = h.len;
    return buf + TERN_PROTO_HDR;
}

TEST(header)
{
    uint8_t h[TERN_PROTO_HDR + 2];
    tern_proto_hdr_pack(h, TERN_MSG_SEND, 2, 0x0102030405060708ull);
    CHECK_EQ_INT(h[0], 4);
    CHECK_EQ_INT(h[4], 2);
    CHECK_EQ_INT(h[8], 8);
    CHECK_EQ_INT(h[15], 1);
    tern_msg_hdr x;
    const char *why;
    CHECK_OK(tern_proto_hdr_unpack(h, sizeof h, &x, &why));
    CHECK_EQ_U64(x.id, 0x0102030405060708ull);
    CHECK_RC(tern_proto_hdr_unpack(h, 15, &x, &why), TERN_EMALFORMED);
    CHECK(strstr(why, "shorter"));
    CHECK_RC(tern_proto_hdr_unpack(h, sizeof h - 1, &x, &why), TERN_EMALFORMED);
    CHECK(strstr(why, "body length"));
    tern_proto_hdr_pack(h, 77, 2, 1);
    CHECK_RC(tern_proto_hdr_unpack(h, sizeof h, &x, &why), TERN_EMALFORMED);
    CHECK(strstr(why, "unknown message type"));
    CHECK_EQ_STR(tern_proto_type_name(TERN_MSG_SENT_BATCH), "SENT_BATCH");
}

TEST(simple_messages_round_trip)
{
    size_t n;
    const uint8_t *b;
    uint64_t v, node;
    char eid[TERN_PROTO_EID_MAX], text[64];
    int64_t code;
    b = body_of(tern_proto_enc_hello(buf, sizeof buf, 7, 1), TERN_MSG_HELLO, 7, &n);
    CHECK_OK(tern_proto_dec_hello(b, n, &v, NULL));
    CHECK_EQ_U64(v, 1);
    b = body_of(tern_proto_enc_hello_ok(buf, sizeof buf, 8, 1, 42), TERN_MSG_HELLO_OK, 8,
                &n);
    CHECK_OK(tern_proto_dec_hello_ok(b, n, &v, &node, NULL));
    CHECK_EQ_U64(node, 42);
    b = body_of(tern_proto_enc_eid(buf, sizeof buf, TERN_MSG_OPEN, 9, "dtn://a/b"),
                TERN_MSG_OPEN, 9, &n);
    CHECK_OK(tern_proto_dec_eid(b, n, eid, NULL));
    CHECK_EQ_STR(eid, "dtn://a/b");
    b = body_of(tern_proto_enc_empty(buf, sizeof buf, TERN_MSG_STOP, 10), TERN_MSG_STOP,
                10, &n);
    CHECK_OK(tern_proto_dec_empty(b, n, NULL));
    uint64_t acked;
    b = body_of(tern_proto_enc_recv(buf, sizeof buf, 11, "ipn:1.2", 16, 5), TERN_MSG_RECV,
                11, &n);
    CHECK_OK(tern_proto_dec_recv(b, n, eid, &v, &acked, NULL));
    CHECK_EQ_STR(eid, "ipn:1.2");
    CHECK_EQ_U64(v, 16);
    CHECK_EQ_U64(acked, 5);
    b = body_of(
        tern_proto_enc_code_text(buf, sizeof buf, TERN_MSG_ERROR, 12, -EBUSY, "taken"),
        TERN_MSG_ERROR, 12, &n);
    CHECK_OK(tern_proto_dec_code_text(b, n, &code, text, sizeof text, NULL));
    CHECK_EQ_INT(code, -EBUSY);
    CHECK_EQ_STR(text, "taken");
    CHECK_OK(tern_proto_dec_code_text(b, n, &code, text, 3, NULL)); /* cut */
    CHECK_EQ_STR(text, "ta");
    char mod[32], line[32];
    b = body_of(tern_proto_enc_admin(buf, sizeof buf, 13, "bpadmin", "l plan"),
                TERN_MSG_ADMIN, 13, &n);
    CHECK_OK(tern_proto_dec_admin(b, n, mod, sizeof mod, line, sizeof line, NULL));
    CHECK_EQ_STR(mod, "bpadmin");
    CHECK_EQ_STR(line, "l plan");
    CHECK_RC(tern_proto_dec_admin(b, n, mod, sizeof mod, line, 4, NULL), TERN_EMALFORMED);
    tern_msg_sent s = {-EINVAL, 123456, 7}, s2;
    b = body_of(tern_proto_enc_sent(buf, sizeof buf, 14, &s), TERN_MSG_SENT, 14, &n);
    CHECK_OK(tern_proto_dec_sent(b, n, &s2, NULL));
    CHECK_EQ_INT(s2.code, -EINVAL);
    CHECK_EQ_U64(s2.ctime_ms, 123456);
    CHECK_EQ_U64(s2.seq, 7);
    /* DROPPED: a notice (id 0); a non-negative code is not a drop */
    tern_msg_dropped dm = {.eid = "ipn:1.1",
                           .ctime_ms = 99,
                           .seq = 3,
                           .code = TERN_ETOOBIG},
                     dm2;
    snprintf(dm.text, sizeof dm.text, "it exceeds the limit");
    b = body_of(tern_proto_enc_dropped(buf, sizeof buf, &dm), TERN_MSG_DROPPED, 0, &n);
    CHECK_OK(tern_proto_dec_dropped(b, n, &dm2, NULL));
    CHECK_EQ_STR(dm2.eid, "ipn:1.1");
    CHECK_EQ_U64(dm2.ctime_ms, 99);
    CHECK_EQ_U64(dm2.seq, 3);
    CHECK_EQ_INT(dm2.code, TERN_ETOOBIG);
    CHECK_EQ_STR(dm2.text, "it exceeds the limit");
    dm.code = 0;
    CHECK_RC(tern_proto_enc_dropped(buf, sizeof buf, &dm), -EINVAL);
    const char *why = NULL;
    CHECK_RC(tern_proto_dec_dropped(b, n - 1, &dm2, &why), TERN_EMALFORMED);
    CHECK(why != NULL);
    const char *keys[] = {"created", "taken"};
    uint64_t vals[] = {5, 6};
    char out[256];
    b = body_of(tern_proto_enc_status_ok(buf, sizeof buf, 15, keys, vals, 2, "all fine"),
                TERN_MSG_STATUS_OK, 15, &n);
    CHECK_OK(tern_proto_dec_status_ok(b, n, out, sizeof out, NULL));
    CHECK_EQ_STR(out, "created 5\ntaken 6\nnode:\nall fine\n");
    CHECK_RC(tern_proto_dec_status_ok(b, n, out, 8, NULL), TERN_ENOSPACE);
}

TEST(send_and_deliver_round_trip)
{
    uint8_t pl[TERN_PROTO_INLINE_MAX];
    for (size_t i = 0; i < sizeof pl; i++)
        pl[i] = (uint8_t)(i * 7);
    tern_msg_send m = {.src = "ipn:1.1",
                       .dest = "ipn:2.1",
                       .report_to = "ipn:1.0",
                       .lifetime_ms = 5000,
                       .priority = 2,
                       .ordinal = 200,
                       .flags = 0x20000,
                       .payload = pl,
                       .len = sizeof pl};
    size_t n;
    const uint8_t *b =
        body_of(tern_proto_enc_send(buf, sizeof buf, 3, &m), TERN_MSG_SEND, 3, &n);
    tern_msg_send d;
    CHECK_OK(tern_proto_dec_send(b, n, &d, NULL));
    CHECK_EQ_STR(d.src, "ipn:1.1");
    CHECK_EQ_STR(d.dest, "ipn:2.1");
    CHECK_EQ_STR(d.report_to, "ipn:1.0");
    CHECK_EQ_U64(d.lifetime_ms, 5000);
    CHECK_EQ_U64(d.priority, 2);
    CHECK_EQ_U64(d.ordinal, 200);
    CHECK_EQ_U64(d.flags, 0x20000);
    CHECK_EQ_U64(d.len, sizeof pl);
    CHECK(!d.has_fd);
    CHECK_EQ_MEM(d.payload, pl, sizeof pl);
    /* one byte more does not go inline */
    m.len = sizeof pl + 1;
    CHECK_RC(tern_proto_enc_send(buf, sizeof buf, 3, &m), -EINVAL);
    m.has_fd = 1;
    m.len = 1ull << 40;
    m.offset = 4096;
    b = body_of(tern_proto_enc_send(buf, sizeof buf, 4, &m), TERN_MSG_SEND, 4, &n);
    CHECK_OK(tern_proto_dec_send(b, n, &d, NULL));
    CHECK(d.has_fd);
    CHECK_EQ_U64(d.len, 1ull << 40);
    CHECK_EQ_U64(d.offset, 4096);
    CHECK(d.payload == NULL);
    CHECK_EQ_U64(d.head_len, 0);
    /* a head before the descriptor's bytes (a CFDP file-data PDU's header) */
    static const uint8_t head[TERN_PROTO_HEAD_MAX] = {0x14, 0x00, 0x0c, 0x22};
    m.head = head;
    m.head_len = 17;
    b = body_of(tern_proto_enc_send(buf, sizeof buf, 5, &m), TERN_MSG_SEND, 5, &n);
    CHECK_EQ_INT(b[0], 0x8a); /* ten items */
    CHECK_OK(tern_proto_dec_send(b, n, &d, NULL));
    CHECK(d.has_fd);
    CHECK_EQ_U64(d.head_len, 17);
    CHECK_EQ_MEM(d.head, head, 17);
    CHECK_EQ_U64(d.len, 1ull << 40);
    m.head_len = TERN_PROTO_HEAD_MAX;
    CHECK(tern_proto_enc_send(buf, sizeof buf, 5, &m) > 0);
    m.head_len = TERN_PROTO_HEAD_MAX + 1;
    CHECK_RC(tern_proto_enc_send(buf, sizeof buf, 5, &m), -EINVAL);
    m.head_len = 4;
    m.has_fd = 0; /* a head needs a descriptor */
    m.len = 10;
    CHECK_RC(tern_proto_enc_send(buf, sizeof buf, 5, &m), -EINVAL);
    m.head = NULL;
    m.head_len = 0;

    tern_msg_deliver dv = {.eid = "ipn:2.1",
                           .src = "ipn:1.1",
                           .ctime_ms = 99,
                           .seq = 3,
                           .flags = 2,
                           .payload = pl,
                           .len = 10};
    b = body_of(tern_proto_enc_deliver(buf, sizeof buf, 0, &dv), TERN_MSG_DELIVER, 0, &n);
    tern_msg_deliver dd;
    CHECK_OK(tern_proto_dec_deliver(b, n, &dd, NULL));
    CHECK_EQ_STR(dd.eid, "ipn:2.1");
    CHECK_EQ_STR(dd.src, "ipn:1.1");
    CHECK_EQ_U64(dd.ctime_ms, 99);
    CHECK_EQ_U64(dd.seq, 3);
    CHECK_EQ_U64(dd.flags, 2);
    CHECK_EQ_U64(dd.len, 10);
    CHECK_EQ_MEM(dd.payload, pl, 10);
}

TEST(batches_round_trip)
{
    static uint8_t msgs[5][256];
    const uint8_t *mp[5];
    size_t lens[5];
    for (int i = 0; i < 5; i++) {
        char dest[32];
        snprintf(dest, sizeof dest, "ipn:2.%d", i);
        tern_msg_send m = {.src = "ipn:1.1", .payload = (const uint8_t *)"abc", .len = 3};
        snprintf(m.dest, sizeof m.dest, "%s", dest);
        int k = tern_proto_enc_send(msgs[i], sizeof msgs[i], 100 + (uint64_t)i, &m);
        CHECK(k > 0);
        mp[i] = msgs[i];
        lens[i] = (size_t)k;
    }
    size_t n;
    const uint8_t *b = body_of(tern_proto_enc_batch(buf, sizeof buf, mp, lens, 5),
                               TERN_MSG_SEND_BATCH, 100, &n);
    tern_proto_iter it;
    tern_msg_send d;
    CHECK_OK(tern_proto_iter_begin(&it, b, n, NULL));
    for (int i = 0; i < 5; i++) {
        CHECK_OK(tern_proto_iter_send(&it, &d, NULL));
        char dest[32];
        snprintf(dest, sizeof dest, "ipn:2.%d", i);
        CHECK_EQ_STR(d.dest, dest);
    }
    CHECK_RC(tern_proto_iter_send(&it, &d, NULL), TERN_EEND);
    /* ids of a batch must follow each other */
    mp[2] = msgs[3];
    lens[2] = lens[3];
    CHECK_RC(tern_proto_enc_batch(buf, sizeof buf, mp, lens, 5), -EINVAL);

    tern_msg_sent s[3] = {{0, 1, 2}, {-ENOSPC, 0, 0}, {0, 1, 3}}, x;
    b = body_of(tern_proto_enc_sent_batch(buf, sizeof buf, 50, s, 3), TERN_MSG_SENT_BATCH,
                50, &n);
    CHECK_OK(tern_proto_iter_begin(&it, b, n, NULL));
    for (int i = 0; i < 3; i++) {
        CHECK_OK(tern_proto_iter_sent(&it, &x, NULL));
        CHECK_EQ_INT(x.code, s[i].code);
        CHECK_EQ_U64(x.seq, s[i].seq);
    }
    CHECK_RC(tern_proto_iter_sent(&it, &x, NULL), TERN_EEND);
    /* an indefinite batch is read too; an empty one is not */
    static const uint8_t indef[] = {0x9f, 0x83, 0x00, 0x01, 0x02, 0xff};
    CHECK_OK(tern_proto_iter_begin(&it, indef, sizeof indef, NULL));
    CHECK_OK(tern_proto_iter_sent(&it, &x, NULL));
    CHECK_RC(tern_proto_iter_sent(&it, &x, NULL), TERN_EEND);
    static const uint8_t empty[] = {0x9f, 0xff};
    const char *why;
    CHECK_OK(tern_proto_iter_begin(&it, empty, sizeof empty, NULL));
    CHECK_RC(tern_proto_iter_sent(&it, &x, &why), TERN_EMALFORMED);
    static const uint8_t trailing[] = {0x81, 0x83, 0x00, 0x01, 0x02, 0x00};
    CHECK_OK(tern_proto_iter_begin(&it, trailing, sizeof trailing, NULL));
    CHECK_OK(tern_proto_iter_sent(&it, &x, NULL));
    CHECK_RC(tern_proto_iter_sent(&it, &x, &why), TERN_EMALFORMED);
    CHECK(strstr(why, "bytes after"));
}

/* Small deliveries travel together: each item comes back with its own
 * source, times and payload; descriptor payloads cannot be batched. */
TEST(deliver_batch_round_trip)
{
    tern_msg_deliver m[3];
    char payload[3][64];
    memset(m, 0, sizeof m);
    for (int i = 0; i < 3; i++) {
        snprintf(m[i].eid, sizeof m[i].eid, "ipn:2.1");
        snprintf(m[i].src, sizeof m[i].src, "ipn:1.%d", i + 1);
        m[i].ctime_ms = 1000 + (uint64_t)i;
        m[i].seq = (uint64_t)i;
        int k = snprintf(payload[i], sizeof payload[i], "payload number %d", i);
        m[i].payload = (const uint8_t *)payload[i];
        m[i].len = (uint64_t)(i == 1 ? 0 : k); /* an empty one too */
    }
    size_t n;
    const uint8_t *b = body_of(tern_proto_enc_deliver_batch(buf, sizeof buf, 0, m, 3),
                               TERN_MSG_DELIVER_BATCH, 0, &n);
    tern_proto_iter it;
    tern_msg_deliver d;
    CHECK_OK(tern_proto_iter_begin(&it, b, n, NULL));
    for (int i = 0; i < 3; i++) {
        CHECK_OK(tern_proto_iter_deliver(&it, &d, NULL));
        CHECK_EQ_STR(d.src, m[i].src);
        CHECK_EQ_U64(d.ctime_ms, m[i].ctime_ms);
        CHECK_EQ_U64(d.len, m[i].len);
        CHECK(d.len == 0 || memcmp(d.payload, payload[i], d.len) == 0);
        CHECK(!d.has_fd);
    }
    CHECK_RC(tern_proto_iter_deliver(&it, &d, NULL), TERN_EEND);
    m[2].has_fd = 1;
    CHECK_RC(tern_proto_enc_deliver_batch(buf, sizeof buf, 0, m, 3), -EINVAL);
    CHECK_RC(tern_proto_enc_deliver_batch(buf, sizeof buf, 0, m, 0), -EINVAL);
    /* a length instead of bytes inside a batch is malformed */
    int k = tern_proto_enc_deliver(buf, sizeof buf, 0, &m[2]);
    CHECK(k > 0);
    uint8_t one[512];
    one[0] = 0x81;
    memcpy(one + 1, buf + TERN_PROTO_HDR, (size_t)k - TERN_PROTO_HDR);
    const char *why;
    CHECK_OK(tern_proto_iter_begin(&it, one, (size_t)k - TERN_PROTO_HDR + 1, NULL));
    CHECK_RC(tern_proto_iter_deliver(&it, &d, &why), TERN_EMALFORMED);
    CHECK(strstr(why, "descriptor"));
}

TEST(decoders_refuse_malformed_bodies)
{
    const char *why = NULL;
    char eid[TERN_PROTO_EID_MAX];
    uint64_t v;
    tern_msg_send m;
    /* wrong arity, wrong types, trailing bytes, truncation */
    static const uint8_t two[] = {0x82, 0x01, 0x02};
    CHECK_RC(tern_proto_dec_hello(two, sizeof two, &v, &why), TERN_EMALFORMED);
    CHECK(why && strstr(why, "HELLO"));
    static const uint8_t neg[] = {0x81, 0x20};
    CHECK_RC(tern_proto_dec_hello(neg, sizeof neg, &v, &why), TERN_EMALFORMED);
    static const uint8_t trail[] = {0x81, 0x01, 0x00};
    CHECK_RC(tern_proto_dec_hello(trail, sizeof trail, &v, &why), TERN_EMALFORMED);
    CHECK(strstr(why, "bytes after"));
    static const uint8_t cut[] = {0x81, 0x19, 0x01};
    CHECK_RC(tern_proto_dec_hello(cut, sizeof cut, &v, &why), TERN_EMALFORMED);
    /* a text with a NUL inside, and one too long for an EID */
    static const uint8_t nul[] = {0x81, 0x63, 'a', 0, 'b'};
    CHECK_RC(tern_proto_dec_eid(nul, sizeof nul, eid, &why), TERN_EMALFORMED);
    uint8_t longe[300] = {0x81, 0x79, 0x01, 0x2c};
    memset(longe + 4, 'a', 296);
    CHECK_RC(tern_proto_dec_eid(longe, sizeof longe, eid, &why), TERN_EMALFORMED);
    /* a length that claims more than there is */
    static const uint8_t liar[] = {0x81, 0x7a, 0xff, 0xff, 0xff, 0xff, 'a'};
    CHECK_RC(tern_proto_dec_eid(liar, sizeof liar, eid, &why), TERN_EMALFORMED);
    /* SEND: class 3, ordinal 255, inline payload with an offset */
    tern_msg_send s = {
        .src = "ipn:1.1", .dest = "ipn:2.1", .payload = (const uint8_t *)"x", .len = 1};
    int k = tern_proto_enc_send(buf, sizeof buf, 1, &s);
    CHECK(k > 0);
    uint8_t *b = buf + TERN_PROTO_HDR;
    size_t n = (size_t)k - TERN_PROTO_HDR;
    CHECK_OK(tern_proto_dec_send(b, n, &m, NULL));
    size_t cls = 1 + 8 + 8 + 1; /* array head, two 7-char texts, lifetime 0 */
    CHECK_EQ_INT(b[cls], 0);
    b[cls] = 3;
    CHECK_RC(tern_proto_dec_send(b, n, &m, &why), TERN_EMALFORMED);
    CHECK(strstr(why, "class"));
    b[cls] = 0;
    b[cls + 1] = 0x18; /* the ordinal swallows the flags: items shift */
    CHECK_RC(tern_proto_dec_send(b, n, &m, &why), TERN_EMALFORMED);
    b[cls + 1] = 0;
    b[cls + 4] = 1; /* offset with an inline payload */
    CHECK_RC(tern_proto_dec_send(b, n, &m, &why), TERN_EMALFORMED);
    CHECK(strstr(why, "offset"));
    /* every prefix of a valid SEND is refused, never read past */
    b[cls + 4] = 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t *copy = malloc(i ? i : 1);
        memcpy(copy, b, i);
        CHECK_RC(tern_proto_dec_send(copy, i, &m, &why), TERN_EMALFORMED);
        free(copy);
    }
    /* a head after an inline payload; a head over 1024 bytes */
    uint8_t hb[TERN_PROTO_HDR + 2048];
    memcpy(hb, b, n);
    CHECK_EQ_INT(hb[0], 0x89);
    hb[0] = 0x8a;
    hb[n] = 0x41;
    hb[n + 1] = 'h';
    CHECK_RC(tern_proto_dec_send(hb, n + 2, &m, &why), TERN_EMALFORMED);
    CHECK(strstr(why, "head with an inline payload"));
    static const uint8_t big_head[TERN_PROTO_HEAD_MAX + 1];
    s.has_fd = 1;
    s.payload = NULL;
    s.len = 100;
    s.head = big_head;
    s.head_len = TERN_PROTO_HEAD_MAX;
    k = tern_proto_enc_send(hb, sizeof hb, 1, &s);
    CHECK(k > 0);
    n = (size_t)k - TERN_PROTO_HDR;
    CHECK_OK(tern_proto_dec_send(hb + TERN_PROTO_HDR, n, &m, NULL));
    /* the head's length is the body's last: 0x59 0x04 0x00 then 1024 bytes */
    uint8_t *hl = hb + TERN_PROTO_HDR + n - TERN_PROTO_HEAD_MAX - 3;
    CHECK_EQ_INT(hl[0], 0x59);
    hl[2] = 0x01; /* 1025 */
    hb[TERN_PROTO_HDR + n] = 0;
    CHECK_RC(tern_proto_dec_send(hb + TERN_PROTO_HDR, n + 1, &m, &why), TERN_EMALFORMED);
    CHECK(strstr(why, "head is longer"));
    /* answers' codes are 0 or negative */
    static const uint8_t pos[] = {0x83, 0x01, 0x00, 0x00};
    tern_msg_sent st;
    CHECK_RC(tern_proto_dec_sent(pos, sizeof pos, &st, &why), TERN_EMALFORMED);
}

TEST(eid_check)
{
    CHECK_OK(tern_proto_eid_check("ipn:1.2"));
    CHECK_OK(
        tern_proto_eid_check("ipn:977000.2.1")); /* RFC 9758: allocator.node.service */
    CHECK_OK(tern_proto_eid_check("imc:0.0"));
    CHECK_RC(tern_proto_eid_check("ipn:1.2.3.4"), -EINVAL);
    CHECK_RC(tern_proto_eid_check("imc:1.2.3"), -EINVAL);
    CHECK_RC(tern_proto_eid_check("ipn:1..3"), -EINVAL);
    CHECK_OK(tern_proto_eid_check("dtn:none"));
    CHECK_OK(tern_proto_eid_check("dtn://node/svc"));
    CHECK_RC(tern_proto_eid_check("ipn:1"), -EINVAL);
    CHECK_RC(tern_proto_eid_check("ipn:1.2x"), -EINVAL);
    CHECK_RC(tern_proto_eid_check("dtn:///x"), -EINVAL);
    CHECK_RC(tern_proto_eid_check("http://x"), -EINVAL);
    CHECK_RC(tern_proto_eid_check(NULL), -EINVAL);
}

TEST(descriptors_pass_over_the_socket)
{
    int sv[2];
    CHECK_OK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv));
    static uint8_t payload[200000];
    for (size_t i = 0; i < sizeof payload; i++)
        payload[i] = (uint8_t)(i ^ (i >> 8));
    int mfd;
    CHECK_OK(tern_proto_memfd(payload, sizeof payload, &mfd));
    /* sealed: nobody can change it under the reader */
    CHECK(write(mfd, "x", 1) < 0);
    CHECK(ftruncate(mfd, 10) < 0);
    uint8_t hdr[TERN_PROTO_HDR];
    tern_proto_hdr_pack(hdr, TERN_MSG_OK, 0, 5);
    struct iovec iov = {hdr, sizeof hdr};
    CHECK_OK(tern_proto_send(sv[0], &iov, 1, mfd, 0));
    close(mfd);
    int fd;
    CHECK_EQ_INT(tern_proto_recv(sv[1], buf, sizeof buf, &fd, 0), TERN_PROTO_HDR);
    CHECK(fd >= 0);
    CHECK(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    static uint8_t back[200000];
    CHECK_OK(tern_proto_pread(fd, 0, back, sizeof back));
    CHECK_EQ_MEM(back, payload, sizeof back);
    CHECK_RC(tern_proto_pread(fd, 1, back, sizeof back), TERN_ETRUNCATED);
    close(fd);
    /* no descriptor */
    CHECK_OK(tern_proto_send(sv[0], &iov, 1, -1, 0));
    CHECK_EQ_INT(tern_proto_recv(sv[1], buf, sizeof buf, &fd, 0), TERN_PROTO_HDR);
    CHECK_EQ_INT(fd, -1);
    /* a datagram too big for the buffer is refused, its descriptor closed */
    CHECK_OK(tern_proto_memfd("abc", 3, &mfd));
    CHECK_OK(tern_proto_send(sv[0], &iov, 1, mfd, 0));
    close(mfd);
    CHECK_RC(tern_proto_recv(sv[1], buf, 4, &fd, 0), TERN_ETRUNCATED);
    CHECK_EQ_INT(fd, -1);
    /* nothing waiting */
    CHECK_RC(tern_proto_recv(sv[1], buf, sizeof buf, &fd, MSG_DONTWAIT), -EAGAIN);
    close(sv[0]);
    CHECK_EQ_INT(tern_proto_recv(sv[1], buf, sizeof buf, &fd, 0), 0);
    close(sv[1]);
}

TEST(socket_name_follows_the_real_path)
{
    const char *dir = tt_tmpdir();
    char a[4200], b[4200], link[4200];
    snprintf(a, sizeof a, "%s/a", dir);
    snprintf(b, sizeof b, "%s/b", dir);
    snprintf(link, sizeof link, "%s/l", dir);
    CHECK_OK(mkdir(a, 0700));
    CHECK_OK(mkdir(b, 0700));
    CHECK_OK(symlink(a, link));
    struct sockaddr_un sa;
    socklen_t sl;
    char na[32], nb[32], nl[32];
    CHECK_OK(tern_proto_sockaddr(a, &sa, &sl, na, sizeof na));
    CHECK_EQ_INT(strlen(na), 21);
    CHECK(!strncmp(na, "tern-", 5));
    CHECK_EQ_INT(sa.sun_path[0], 0);
    CHECK_EQ_MEM(sa.sun_path + 1, na, 21);
    CHECK_OK(tern_proto_sockaddr(b, &sa, &sl, nb, sizeof nb));
    CHECK_OK(tern_proto_sockaddr(link, &sa, &sl, nl, sizeof nl));
    CHECK(strcmp(na, nb) != 0);
    CHECK_EQ_STR(na, nl);
    snprintf(link, sizeof link, "%s/missing", dir);
    CHECK_RC(tern_proto_sockaddr(link, &sa, &sl, nl, sizeof nl), -ENOENT);
}

TEST(client_api_refuses_bad_arguments)
{
    /* nothing attached: clear errors, no crash */
    CHECK(bp_node() == NULL);
    BpSAP sap;
    CHECK_RC(bp_open("ipn:1.1", &sap), -ENOTCONN);
    CHECK_RC(bp_send(NULL, "ipn:1.1", "x", 1, NULL, NULL), -ENOTCONN);
    CHECK(strstr(bp_errmsg(), "bp_attach"));
    CHECK_RC(bp_receive(NULL, NULL, 0), -EINVAL);
    CHECK_OK(bp_close(NULL));
    bp_interrupt(NULL);
    bp_release_delivery(NULL);
    CHECK_OK(bp_node_detach(NULL));
    CHECK_EQ_INT(tern_client_abi_version(), TERN_CLIENT_ABI_VERSION);
    CHECK(strstr(bp_strerror(-EBUSY), "open by another"));
}
