/* Reserved CFDP messages (CCSDS 727.0-B-5 chapter 6): every message type
 * built from fixed inputs and compared byte for byte with hex written out
 * by hand from its content table, decoded back, and every truncation and
 * extension refused. */
#include <errno.h>
#include <string.h>

#include "cfdp_msg.h"
#include "cfdp_pdu.h"
#include "hex.h"
#include "tern_test.h"

static cfdp_lv lv(const char *s)
{
    cfdp_lv v = {(const uint8_t *)s, (uint8_t)strlen(s)};
    return v;
}

static int lv_is(cfdp_lv v, const char *s)
{
    return v.len == strlen(s) && (!v.len || memcmp(v.ptr, s, v.len) == 0);
}

/* Encodes m, compares with want_hex, decodes the bytes back into *back,
 * re-encodes them to the same bytes, and refuses every truncation and an
 * extra byte. */
static void vector(const cfdp_msg *m, const char *want_hex, cfdp_msg *back)
{
    static uint8_t want[300], got[300], again[300];
    size_t wl = hex(want_hex, want, sizeof want), gl = 0, al = 0;
    CHECK_OK(cfdp_msg_encode(m, got, sizeof got, &gl));
    CHECK_MSG(gl == wl && memcmp(got, want, wl) == 0,
              "%s: encoding differs from the vector", cfdp_msg_type_name(m->type));
    const char *why = NULL;
    CHECK_OK(cfdp_msg_decode(want, wl, back, &why));
    CHECK_EQ_INT(back->type, m->type);
    CHECK_OK(cfdp_msg_encode(back, again, sizeof again, &al));
    CHECK_EQ_U64(al, wl);
    CHECK_EQ_MEM(again, want, wl);
    for (size_t n = 0; n < wl; n++) {
        cfdp_msg t;
        why = NULL;
        int rc = cfdp_msg_decode(want, n, &t, &why);
        CHECK_MSG(rc < 0 && why, "%s: a %zu-byte prefix decoded",
                  cfdp_msg_type_name(m->type), n);
        CHECK_RC(rc, n < 5 ? TERN_ETYPE : TERN_ETRUNCATED);
    }
    want[wl] = 0;
    why = NULL;
    cfdp_msg t;
    CHECK_RC(cfdp_msg_decode(want, wl + 1, &t, &why), TERN_EMALFORMED);
    CHECK_EQ_STR(why, "reserved CFDP message: bytes after its content");
    /* too small a buffer: refused, nothing claimed */
    CHECK_RC(cfdp_msg_encode(m, got, wl - 1, &gl), TERN_ENOSPACE);
}

/* Every message starts "cfdp" (63 66 64 70) and its type byte (table 6-1);
 * the content follows. Bit 0 is the most significant bit. */
#define ID "63 66 64 70 "

TEST(msg_proxy_vectors)
{
    cfdp_msg m, b;
    /* Proxy put request (table 6-4): destination entity ID as an LV (02,
     * 02 03), source file name LV (05 "a.txt"), destination file name LV
     * (01 "b"). */
    memset(&m, 0, sizeof m);
    m.type = CFDP_MSG_PROXY_PUT_REQ;
    m.dst.id = 0x0203;
    m.name1 = lv("a.txt");
    m.name2 = lv("b");
    vector(&m, ID "00 02 02 03 05 61 2E 74 78 74 01 62", &b);
    CHECK_EQ_U64(b.dst.id, 0x0203);
    CHECK_EQ_INT(b.dst.len, 2);
    CHECK(lv_is(b.name1, "a.txt") && lv_is(b.name2, "b"));
    /* with no file names (a proxy metadata-only put): two empty LVs */
    m.name1 = lv("");
    m.name2 = lv("");
    m.dst.len = 8;
    vector(&m, ID "00 08 00 00 00 00 00 00 02 03 00 00", &b);
    CHECK_EQ_INT(b.dst.len, 8);

    /* Proxy message to user (table 6-5): the message as an LV. */
    memset(&m, 0, sizeof m);
    m.type = CFDP_MSG_PROXY_MSG_TO_USER;
    m.data = lv("hi");
    vector(&m, ID "01 02 68 69", &b);
    CHECK(lv_is(b.data, "hi"));

    /* Proxy filestore request (table 6-6): an LV holding a filestore
     * request TLV's value: rename (action 2 in the top 4 bits: 20), first
     * name LV 01 "x", second 02 "yz"; 6 bytes. */
    memset(&m, 0, sizeof m);
    m.type = CFDP_MSG_PROXY_FS_REQ;
    m.fs.action = CFDP_FS_RENAME_FILE;
    m.fs.first = lv("x");
    m.fs.second = lv("yz");
    vector(&m, ID "02 06 20 01 78 02 79 7A", &b);
    CHECK_EQ_INT(b.fs.type, CFDP_TLV_FS_REQUEST);
    CHECK_EQ_INT(b.fs.action, CFDP_FS_RENAME_FILE);
    CHECK(lv_is(b.fs.first, "x") && lv_is(b.fs.second, "yz"));

    /* Proxy fault handler override (table 6-7): condition code in the top
     * 4 bits (8, inactivity), handler code in the low 4 (4, abandon): 84. */
    memset(&m, 0, sizeof m);
    m.type = CFDP_MSG_PROXY_FAULT_HANDLER;
    m.condition = CFDP_COND_INACTIVITY;
    m.handler = CFDP_HANDLER_ABANDON;
    vector(&m, ID "03 84", &b);
    CHECK_EQ_INT(b.condition, 8);
    CHECK_EQ_INT(b.handler, 4);

    /* Proxy transmission mode (table 6-8): 7 spare bits, the mode as in
     * the PDU header (1 unacknowledged). */
    memset(&m, 0, sizeof m);
    m.type = CFDP_MSG_PROXY_TX_MODE;
    m.mode = CFDP_UNACKNOWLEDGED;
    vector(&m, ID "04 01", &b);
    CHECK_EQ_INT(b.mode, 1);

    /* Proxy flow label (table 6-9): the label as an LV. */
    memset(&m, 0, sizeof m);
    m.type = CFDP_MSG_PROXY_FLOW_LABEL;
    m.data = lv("L");
    vector(&m, ID "05 01 4C", &b);
    CHECK(lv_is(b.data, "L"));

    /* Proxy segmentation control (table 6-10): 7 spare bits, the bit. */
    memset(&m, 0, sizeof m);
    m.type = CFDP_MSG_PROXY_SEG_CTRL;
    m.flag = 1;
    vector(&m, ID "06 01", &b);
    CHECK_EQ_INT(b.flag, 1);

    /* Proxy put response (table 6-12): condition (4 bits), spare, delivery
     * code, file status (2 bits). No error, data incomplete (1), retained
     * (2): 0000 0 1 10 = 06; cancel (15), complete, discarded: F0. */
    memset(&m, 0, sizeof m);
    m.type = CFDP_MSG_PROXY_PUT_RESP;
    m.delivery = CFDP_DATA_INCOMPLETE;
    m.file_status = CFDP_FILE_RETAINED;
    vector(&m, ID "07 06", &b);
    CHECK_EQ_INT(b.condition, 0);
    CHECK_EQ_INT(b.delivery, 1);
    CHECK_EQ_INT(b.file_status, 2);
    m.condition = CFDP_COND_CANCEL;
    m.delivery = CFDP_DATA_COMPLETE;
    m.file_status = CFDP_FILE_DISCARDED;
    vector(&m, ID "07 F0", &b);
    CHECK_EQ_INT(b.condition, 15);

    /* Proxy filestore response (table 6-13): an LV holding a filestore
     * response TLV's value: delete file (1) with status 1 (no such file):
     * 11, first name 01 "f", an empty filestore message 00; 4 bytes. */
    memset(&m, 0, sizeof m);
    m.type = CFDP_MSG_PROXY_FS_RESP;
    m.fs.action = CFDP_FS_DELETE_FILE;
    m.fs.status = CFDP_FS_DELETE_NO_FILE;
    m.fs.first = lv("f");
    vector(&m, ID "08 04 11 01 66 00", &b);
    CHECK_EQ_INT(b.fs.type, CFDP_TLV_FS_RESPONSE);
    CHECK_EQ_INT(b.fs.status, 1);
    CHECK(lv_is(b.fs.first, "f"));

    /* Proxy put cancel (6.2.6.2): no content. */
    memset(&m, 0, sizeof m);
    m.type = CFDP_MSG_PROXY_PUT_CANCEL;
    vector(&m, ID "09", &b);

    /* Proxy closure request (table 6-11): 7 spare bits, closure requested. */
    memset(&m, 0, sizeof m);
    m.type = CFDP_MSG_PROXY_CLOSURE;
    m.flag = 1;
    vector(&m, ID "0B 01", &b);
    CHECK_EQ_INT(b.flag, 1);
}

TEST(msg_tid_and_directory_vectors)
{
    cfdp_msg m, b;
    /* Originating transaction ID (table 6-2): spare, entity ID length - 1
     * (3 bits), spare, sequence number length - 1 (3 bits); then the
     * source entity ID and the sequence number. Source 5 in 1 byte,
     * sequence 0x1234 in 2: 0 000 0 001 = 01, 05, 12 34. */
    memset(&m, 0, sizeof m);
    m.type = CFDP_MSG_ORIGINATING_TID;
    m.tid.src = 5;
    m.tid.tsn = 0x1234;
    vector(&m, ID "0A 01 05 12 34", &b);
    CHECK_EQ_U64(b.tid.src, 5);
    CHECK_EQ_U64(b.tid.tsn, 0x1234);
    CHECK_EQ_INT(b.tid.src_len, 1);
    CHECK_EQ_INT(b.tid.tsn_len, 2);
    /* 8-byte lengths: 0 111 0 111 = 77 */
    m.tid.src = 0x0102030405060708ull;
    m.tid.tsn = 0xFFFFFFFFFFFFFFFFull;
    vector(&m, ID "0A 77 01 02 03 04 05 06 07 08 FF FF FF FF FF FF FF FF", &b);
    CHECK_EQ_U64(b.tid.src, 0x0102030405060708ull);
    CHECK_EQ_U64(b.tid.tsn, UINT64_MAX);
    /* spare bits set on the wire are ignored (and written back as 0) */
    uint8_t odd[16];
    size_t ol = hex(ID "0A 89 05 12 34", odd, sizeof odd); /* 1 000 1 001 */
    CHECK_OK(cfdp_msg_decode(odd, ol, &b, NULL));
    CHECK_EQ_INT(b.tid.src_len, 1);
    CHECK_EQ_INT(b.tid.tsn_len, 2);

    /* Directory listing request (table 6-15): directory name LV (01 "d"),
     * directory file name LV (05 "l.txt"). */
    memset(&m, 0, sizeof m);
    m.type = CFDP_MSG_DIR_LIST_REQ;
    m.name1 = lv("d");
    m.name2 = lv("l.txt");
    vector(&m, ID "10 01 64 05 6C 2E 74 78 74", &b);
    CHECK(lv_is(b.name1, "d") && lv_is(b.name2, "l.txt"));

    /* Directory listing response (table 6-16): listing response code in
     * bit 0 ('0' successful, '1' unsuccessful), 7 spare, then the request's
     * two names. */
    m.type = CFDP_MSG_DIR_LIST_RESP;
    m.ok = 1;
    vector(&m, ID "11 00 01 64 05 6C 2E 74 78 74", &b);
    CHECK_EQ_INT(b.ok, 1);
    m.ok = 0;
    vector(&m, ID "11 80 01 64 05 6C 2E 74 78 74", &b);
    CHECK_EQ_INT(b.ok, 0);
}

TEST(msg_remote_vectors)
{
    cfdp_msg m, b;
    /* The transaction named: source 0x0102 (2 bytes), sequence 7 (1 byte):
     * lengths 0 001 0 000 = 10, then 01 02, 07. */
    cfdp_tid tid = {0x0102, 7, 0, 0};
#define TID "10 01 02 07"

    /* Remote status report request (table 6-18): the transaction ID, the
     * report file name LV (01 "r"). */
    memset(&m, 0, sizeof m);
    m.type = CFDP_MSG_STATUS_REPORT_REQ;
    m.tid = tid;
    m.name1 = lv("r");
    vector(&m, ID "20 " TID " 01 72", &b);
    CHECK_EQ_U64(b.tid.src, 0x0102);
    CHECK_EQ_U64(b.tid.tsn, 7);
    CHECK(lv_is(b.name1, "r"));

    /* Remote status report response (table 6-19): transaction status (2
     * bits; 1 active), 5 spare, report response code ('1' successful):
     * 01 00000 1 = 41; then the transaction ID. */
    memset(&m, 0, sizeof m);
    m.type = CFDP_MSG_STATUS_REPORT_RESP;
    m.tid = tid;
    m.txn_status = CFDP_TXN_ACTIVE;
    m.ok = 1;
    vector(&m, ID "21 41 " TID, &b);
    CHECK_EQ_INT(b.txn_status, 1);
    CHECK_EQ_INT(b.ok, 1);
    m.txn_status = CFDP_TXN_UNRECOGNIZED; /* 11 00000 0 = C0 */
    m.ok = 0;
    vector(&m, ID "21 C0 " TID, &b);
    CHECK_EQ_INT(b.txn_status, 3);
    CHECK_EQ_INT(b.ok, 0);

    /* Remote suspend and resume requests (tables 6-21, 6-24): the ID. */
    memset(&m, 0, sizeof m);
    m.type = CFDP_MSG_SUSPEND_REQ;
    m.tid = tid;
    vector(&m, ID "30 " TID, &b);
    CHECK_EQ_U64(b.tid.tsn, 7);
    m.type = CFDP_MSG_RESUME_REQ;
    vector(&m, ID "38 " TID, &b);
    CHECK_EQ_U64(b.tid.src, 0x0102);

    /* Remote suspend and resume responses (tables 6-22, 6-25): suspension
     * indicator (1 suspended), transaction status (2 bits), 5 spare, then
     * the ID. Suspended and active: 1 01 00000 = A0; not suspended and
     * terminated: 0 10 00000 = 40. */
    memset(&m, 0, sizeof m);
    m.type = CFDP_MSG_SUSPEND_RESP;
    m.tid = tid;
    m.suspended = 1;
    m.txn_status = CFDP_TXN_ACTIVE;
    vector(&m, ID "31 A0 " TID, &b);
    CHECK_EQ_INT(b.suspended, 1);
    CHECK_EQ_INT(b.txn_status, 1);
    m.type = CFDP_MSG_RESUME_RESP;
    m.suspended = 0;
    m.txn_status = CFDP_TXN_TERMINATED;
    vector(&m, ID "39 40 " TID, &b);
    CHECK_EQ_INT(b.suspended, 0);
    CHECK_EQ_INT(b.txn_status, 2);
#undef TID
}

static void refused(const char *h, int want, const char *want_why)
{
    uint8_t buf[300];
    size_t n = hex(h, buf, sizeof buf);
    cfdp_msg m;
    const char *why = NULL;
    CHECK_RC(cfdp_msg_decode(buf, n, &m, &why), want);
    CHECK_EQ_STR(why, want_why);
}

TEST(msg_refusals)
{
    /* not reserved: an ordinary message to user */
    refused("68 65 6C 6C 6F", TERN_ETYPE,
            "not a reserved CFDP message (no \"cfdp\" identifier and type)");
    refused(ID, TERN_ETYPE,
            "not a reserved CFDP message (no \"cfdp\" identifier and type)");
    CHECK_EQ_INT(cfdp_msg_is_reserved("cfdp\x09", 5), 1);
    CHECK_EQ_INT(cfdp_msg_is_reserved("cfdp", 4), 0);
    CHECK_EQ_INT(cfdp_msg_is_reserved("CFDP\x09", 5), 0);
    /* types chapter 6 does not define (0x0C, B-4's store-and-forward 0x40) */
    refused(ID "0C", TERN_EMALFORMED, "reserved CFDP message: type not defined");
    refused(ID "40 00", TERN_EMALFORMED, "reserved CFDP message: type not defined");
    /* an entity ID LV of 0 or 9 bytes */
    refused(ID "00 00 00 00", TERN_EMALFORMED,
            "proxy put request: destination entity ID not 1-8 bytes");
    refused(ID "00 09 01 02 03 04 05 06 07 08 09 00 00", TERN_EMALFORMED,
            "proxy put request: destination entity ID not 1-8 bytes");
    /* an LV length past the end */
    refused(ID "00 01 05 FF 61", TERN_ETRUNCATED,
            "proxy put request: a file name runs past the message");
    refused(ID "01 03 68 69", TERN_ETRUNCATED,
            "proxy message to user: message runs past the end");
    /* a proxy filestore request whose inner value is malformed */
    refused(ID "02 02 90 00", TERN_EMALFORMED, "filestore action code not defined");
    refused(ID "02 03 20 01 78", TERN_ETRUNCATED,
            "filestore TLV: second file name of rename, append or replace missing");
    refused(ID "02 07 20 01 78 02 79 7A", TERN_ETRUNCATED,
            "proxy filestore request: runs past the message");
    /* codes out of range */
    refused(ID "03 C1", TERN_EMALFORMED, "condition code is reserved (12 or 13)");
    refused(ID "03 85", TERN_EMALFORMED, "fault handler code not defined");
    refused(ID "03 80", TERN_EMALFORMED, "fault handler code not defined");
    refused(ID "07 D0", TERN_EMALFORMED, "condition code is reserved (12 or 13)");
    /* a transaction ID whose lengths run past the message */
    refused(ID "30 77 01 02 03", TERN_ETRUNCATED, "transaction ID runs past the message");

    /* longer than a Message to User TLV can hold: found by fuzz_cfdp_msg (a
     * proxy put request of 266 bytes decoded, then could not be encoded) */
    static uint8_t longm[266];
    memcpy(longm, "cfdp\x00\x03LLL\xff", 10);
    memset(longm + 10, 0xff, sizeof longm - 10);
    cfdp_msg lm;
    const char *lwhy = NULL;
    CHECK_RC(cfdp_msg_decode(longm, sizeof longm, &lm, &lwhy), TERN_EMALFORMED);
    CHECK_EQ_STR(lwhy,
                 "reserved CFDP message: longer than the 255 bytes of a message to user");

    /* the encoder's refusals */
    cfdp_msg m;
    memset(&m, 0, sizeof m);
    uint8_t buf[300];
    size_t n;
    const char *why = NULL;
    m.type = 0x0C;
    CHECK_RC(cfdp_msg_encode(&m, buf, sizeof buf, &n), -EINVAL);
    m.type = CFDP_MSG_PROXY_PUT_REQ;
    m.dst.id = 0x1FF;
    m.dst.len = 1;
    CHECK_RC(cfdp_msg_check(&m, &why), -EINVAL);
    CHECK_EQ_STR(why, "proxy put request: destination entity ID does not fit its length");
    /* names that together pass the 255-byte value: TERN_EOVERFLOW */
    static char big[201];
    memset(big, 'n', 200);
    m.dst.len = 0;
    m.name1 = lv(big);
    m.name2 = lv(big);
    CHECK_RC(cfdp_msg_encode(&m, buf, sizeof buf, &n), TERN_EOVERFLOW);
    m.type = CFDP_MSG_PROXY_FAULT_HANDLER;
    m.condition = 12;
    m.handler = 1;
    CHECK_RC(cfdp_msg_check(&m, &why), -EINVAL);
    m.type = CFDP_MSG_SUSPEND_REQ;
    m.tid.src = 256;
    m.tid.src_len = 1;
    CHECK_RC(cfdp_msg_check(&m, &why), -EINVAL);
    CHECK_EQ_STR(why, "transaction ID: a value does not fit its length");
    m.type = CFDP_MSG_PROXY_TX_MODE;
    m.mode = 2;
    CHECK_RC(cfdp_msg_check(&m, &why), -EINVAL);
    CHECK_EQ_STR(cfdp_msg_type_name(0x39), "remote resume response");
    CHECK_EQ_STR(cfdp_msg_type_name(0x0C), "unknown");
}

TEST(msg_in_a_metadata_pdu)
{
    /* cfdp_msg_tlv makes the Message to User TLV a put carries; in a
     * Metadata PDU's options it decodes back through the PDU codec. */
    cfdp_msg m;
    memset(&m, 0, sizeof m);
    m.type = CFDP_MSG_DIR_LIST_REQ;
    m.name1 = lv("logs");
    m.name2 = lv("logs.lst");
    uint8_t mbuf[CFDP_MSG_MAX];
    cfdp_tlv opt[2];
    CHECK_OK(cfdp_msg_tlv(&m, mbuf, sizeof mbuf, &opt[0]));
    cfdp_msg o;
    memset(&o, 0, sizeof o);
    o.type = CFDP_MSG_ORIGINATING_TID;
    o.tid.src = 9;
    o.tid.tsn = 300;
    uint8_t obuf[32];
    CHECK_OK(cfdp_msg_tlv(&o, obuf, sizeof obuf, &opt[1]));
    cfdp_pdu p;
    memset(&p, 0, sizeof p);
    p.kind = CFDP_METADATA;
    p.hdr.src = 1;
    p.hdr.dst = 2;
    p.hdr.tsn = 3;
    p.u.md.options.items = opt;
    p.u.md.options.count = 2;
    uint8_t pdu[512];
    size_t plen;
    CHECK_OK(cfdp_pdu_encode(&p, pdu, sizeof pdu, &plen));
    cfdp_pdu d;
    CHECK_OK(cfdp_pdu_decode(pdu, plen, 0, &d, NULL));
    size_t pos = 0;
    cfdp_tlv t;
    CHECK_OK(cfdp_tlvs_next(&d.u.md.options, &pos, &t));
    CHECK_EQ_INT(t.type, CFDP_TLV_MSG_TO_USER);
    cfdp_msg back;
    CHECK_OK(cfdp_msg_decode(t.data.ptr, t.data.len, &back, NULL));
    CHECK_EQ_INT(back.type, CFDP_MSG_DIR_LIST_REQ);
    CHECK(lv_is(back.name1, "logs") && lv_is(back.name2, "logs.lst"));
    CHECK_OK(cfdp_tlvs_next(&d.u.md.options, &pos, &t));
    CHECK_OK(cfdp_msg_decode(t.data.ptr, t.data.len, &back, NULL));
    CHECK_EQ_INT(back.type, CFDP_MSG_ORIGINATING_TID);
    CHECK_EQ_U64(back.tid.src, 9);
    CHECK_EQ_U64(back.tid.tsn, 300);
    CHECK_RC(cfdp_tlvs_next(&d.u.md.options, &pos, &t), TERN_EEND);
}
