/* The CFDP codec: every refusal with its code and its text, the CRC, the
 * encoder's checks, round trips of every PDU and TLV type with 1- and 8-byte
 * IDs and the large-file flag off and on, and the sizing helpers. */
#include <errno.h>
#include <stdlib.h>

#include "cfdp_pdu.h"
#include "hex.h"
#include "pdu_eq.h"
#include "tern/crc.h"
#include "tern_test.h"

#define S(s)  ((const uint8_t *)(s))
#define LV(s) ((cfdp_lv){S(s), (uint8_t)(sizeof(s) - 1)})

/* Decodes hex and expects the refusal rc with the text want. */
static void refused(const char *h, unsigned flags, int rc, const char *want)
{
    uint8_t b[600];
    size_t n = hex(h, b, sizeof b);
    cfdp_pdu p;
    const char *why = NULL;
    int got = cfdp_pdu_decode(b, n, flags, &p, &why);
    CHECK_MSG(got == rc, "%s: returned %d (%s), want %d; why: %s", h, got,
              tern_strerror(got), rc, why ? why : "(none)");
    CHECK_EQ_STR(why, want);
}

/* Header "20 LLLL 00 01 07 02": a directive toward the receiver, acknowledged,
 * 32-bit, 1-byte IDs; then the data field. */
TEST(pdu_refusals_header)
{
    refused("", 0, TERN_ETRUNCATED, "PDU shorter than its 4-byte fixed header");
    refused("20 00 02", 0, TERN_ETRUNCATED, "PDU shorter than its 4-byte fixed header");
    refused("40 0002 00 01 07 02 09 00", 0, TERN_EMALFORMED, "version is not 001");
    refused("00 0002 00 01 07 02 09 00", 0, TERN_EMALFORMED, "version is not 001");
    refused("e0 0002 00 01 07 02 09 00", 0, TERN_EMALFORMED, "version is not 001");
    refused("20 0002 00 01 07", 0, TERN_ETRUNCATED,
            "PDU shorter than its header's entity IDs and sequence number");
    /* 8-byte IDs (0x77) but only 10 bytes of them */
    refused("20 0002 77 0102030405060708 0102", 0, TERN_ETRUNCATED,
            "PDU shorter than its header's entity IDs and sequence number");
    refused("20 0003 00 01 07 02 09 00", 0, TERN_ETRUNCATED,
            "data field runs past the end of the PDU");
    refused("20 ffff 00 01 07 02 09 00", 0, TERN_ETRUNCATED,
            "data field runs past the end of the PDU");
    refused("20 0002 00 01 07 02 09 00 00", 0, TERN_EMALFORMED,
            "bytes after the PDU's data field");
    refused("20 0000 00 01 07 02", 0, TERN_ETRUNCATED,
            "directive PDU without a directive code");
    refused("20 0001 00 01 07 02 03", 0, TERN_EMALFORMED,
            "file directive code not defined");
    refused("20 0001 00 01 07 02 0a", 0, TERN_EMALFORMED,
            "file directive code not defined");
    refused("20 0001 00 01 07 02 ff", 0, TERN_EMALFORMED,
            "file directive code not defined");
}

TEST(pdu_refusals_crc)
{
    /* Prompt with a CRC: 22 = CRC flag set; data field 2 + 2 */
    uint8_t b[16];
    size_t n = hex("22 0004 00 01 07 02 09 00", b, sizeof b);
    uint16_t crc = tern_crc16_ccitt_false(0xFFFF, b, n);
    b[n++] = (uint8_t)(crc >> 8);
    b[n++] = (uint8_t)crc;
    cfdp_pdu p;
    const char *why = NULL;
    CHECK_OK(cfdp_pdu_decode(b, n, CFDP_DECODE_CRC_REQUIRED, &p, &why));
    CHECK_EQ_INT(p.hdr.crc, 1);
    CHECK_EQ_INT(p.hdr.data_len, 4);
    CHECK_EQ_INT(p.kind, CFDP_PROMPT);
    /* a flipped bit in the IDs, the data or the CRC fails the CRC; one in the
     * first 4 bytes (flags, length, ID lengths) is refused one way or another */
    for (size_t i = 0; i < n; i++) {
        for (int bit = 0; bit < 8; bit++) {
            b[i] ^= (uint8_t)(1 << bit);
            int rc = cfdp_pdu_decode(b, n, 0, &p, &why);
            if (i >= 4)
                CHECK_MSG(rc == TERN_ECORRUPT &&
                              strcmp(why, "PDU CRC does not match") == 0,
                          "byte %zu bit %d: %d %s", i, bit, rc, why);
            else
                CHECK_MSG(rc != 0, "byte %zu bit %d decoded", i, bit);
            b[i] ^= (uint8_t)(1 << bit);
        }
    }
    refused("22 0001 00 01 07 02 09", 0, TERN_ETRUNCATED,
            "data field too short for its CRC");
    refused("20 0002 00 01 07 02 09 00", CFDP_DECODE_CRC_REQUIRED, TERN_EMALFORMED,
            "CRC required for this peer but the PDU has none");
}

TEST(pdu_refusals_file_data)
{
    /* 30: file data, 32-bit; 3 bytes where the offset needs 4 */
    refused("30 0003 00 01 07 02 000000", 0, TERN_ETRUNCATED,
            "file data: no room for its offset");
    /* 38 in byte 3: segment metadata flag; empty data field */
    refused("30 0000 08 01 07 02", 0, TERN_ETRUNCATED,
            "file data: no segment metadata field");
    /* metadata length 5, 2 bytes follow */
    refused("30 0003 08 01 07 02 05 aabb", 0, TERN_ETRUNCATED,
            "file data: segment metadata runs past the data field");
    /* 32-bit form: offset 0xffffffff and 2 bytes of data end past 2^32 */
    refused("30 0006 00 01 07 02 ffffffff 0102", 0, TERN_EOVERFLOW,
            "file data: offset + length passes 2^32 in the 32-bit form");
    /* 64-bit form: offset 2^64 - 1 and 2 bytes of data wrap */
    refused("31 000a 00 01 07 02 ffffffffffffffff 0102", 0, TERN_EOVERFLOW,
            "file data: offset + length passes 2^64");
    /* ... while the last byte of a 4 GiB file and of a 2^64 - 1 byte file are fine */
    uint8_t b[32];
    cfdp_pdu p;
    size_t n = hex("30 0005 00 01 07 02 ffffffff 01", b, sizeof b);
    CHECK_OK(cfdp_pdu_decode(b, n, 0, &p, NULL));
    CHECK_EQ_U64(p.u.fd.offset, 0xffffffffu);
    n = hex("31 0009 00 01 07 02 fffffffffffffffe 01", b, sizeof b);
    CHECK_OK(cfdp_pdu_decode(b, n, 0, &p, NULL));
}

TEST(pdu_refusals_directives)
{
    /* EOF */
    refused("20 0009 00 01 07 02 04 00 00000000 000000", 0, TERN_ETRUNCATED,
            "EOF: shorter than its fixed fields");
    refused("20 000a 00 01 07 02 04 c0 00000000 00000000", 0, TERN_EMALFORMED,
            "condition code is reserved (12 or 13)");
    refused("20 000a 00 01 07 02 04 d0 00000000 00000000", 0, TERN_EMALFORMED,
            "condition code is reserved (12 or 13)");
    refused("20 000d 00 01 07 02 04 f0 00000000 00000000 02 01 05", 0, TERN_EMALFORMED,
            "EOF: a TLV other than the fault location");
    refused("20 000e 00 01 07 02 04 f0 00000000 00000000 06 01 05 00", 0, TERN_EMALFORMED,
            "EOF: bytes after the fault location");
    refused("20 000d 00 01 07 02 04 00 00000000 00000000 06 01 05", 0, TERN_EMALFORMED,
            "EOF: a fault location with condition 'no error'");
    refused("20 000d 00 01 07 02 04 f0 00000000 00000000 06 02 05", 0, TERN_ETRUNCATED,
            "TLV value runs past the end of its list");
    refused("20 000c 00 01 07 02 04 f0 00000000 00000000 06 00", 0, TERN_EMALFORMED,
            "entity ID TLV: length not 1-8 bytes");
    refused("20 0015 00 01 07 02 04 f0 00000000 00000000 06 09 010203040506070809", 0,
            TERN_EMALFORMED, "entity ID TLV: length not 1-8 bytes");
    refused("20 000b 00 01 07 02 04 f0 00000000 00000000 06", 0, TERN_ETRUNCATED,
            "TLV shorter than its type and length");
    /* Finished */
    refused("28 0001 00 01 07 02 05", 0, TERN_ETRUNCATED,
            "Finished: no condition code field");
    refused("28 0002 00 01 07 02 05 c2", 0, TERN_EMALFORMED,
            "condition code is reserved (12 or 13)");
    refused("28 0005 00 01 07 02 05 02 02 01 00", 0, TERN_EMALFORMED,
            "Finished: a TLV other than filestore responses and the fault location");
    refused("28 000b 00 01 07 02 05 f2 06 01 05 01 04 00 01 66 00", 0, TERN_EMALFORMED,
            "Finished: a filestore response after the fault location");
    refused("28 0008 00 01 07 02 05 f2 06 01 05 06 01 05", 0, TERN_EMALFORMED,
            "Finished: two fault locations");
    refused("28 0005 00 01 07 02 05 02 06 01 05", 0, TERN_EMALFORMED,
            "Finished: a fault location with condition 'no error'");
    /* ACK */
    refused("20 0002 00 01 07 02 06 40", 0, TERN_ETRUNCATED,
            "ACK: shorter than its 2 bytes of fields");
    refused("20 0004 00 01 07 02 06 40 00 00", 0, TERN_EMALFORMED,
            "ACK: bytes after its fields");
    refused("20 0003 00 01 07 02 06 70 00", 0, TERN_EMALFORMED,
            "ACK: acknowledges neither EOF nor Finished");
    refused("20 0003 00 01 07 02 06 40 d0", 0, TERN_EMALFORMED,
            "condition code is reserved (12 or 13)");
    /* Metadata */
    refused("20 0005 00 01 07 02 07 00 000000", 0, TERN_ETRUNCATED,
            "Metadata: shorter than its fixed fields");
    refused("20 0006 00 01 07 02 07 00 00000000", 0, TERN_ETRUNCATED,
            "Metadata: no source file name field");
    refused("20 0008 00 01 07 02 07 00 00000000 02 61", 0, TERN_ETRUNCATED,
            "Metadata: source file name runs past the data field");
    refused("20 0008 00 01 07 02 07 00 00000000 01 61", 0, TERN_ETRUNCATED,
            "Metadata: no destination file name field");
    refused("20 000a 00 01 07 02 07 00 00000000 01 61 05 62", 0, TERN_ETRUNCATED,
            "Metadata: destination file name runs past the data field");
    refused("20 000b 00 01 07 02 07 00 00000000 00 00 06 01 05", 0, TERN_EMALFORMED,
            "Metadata: an option of a type Metadata does not carry");
    refused("20 000e 00 01 07 02 07 00 00000000 00 00 01 04 00 01 66 00", 0,
            TERN_EMALFORMED, "Metadata: an option of a type Metadata does not carry");
    refused("20 000a 00 01 07 02 07 00 00000000 00 00 03 00", 0, TERN_EMALFORMED,
            "TLV type not defined");
    /* NAK */
    refused("28 0008 00 01 07 02 08 00000000 000000", 0, TERN_ETRUNCATED,
            "NAK: shorter than its scope");
    refused("28 0009 00 01 07 02 08 00000010 0000000f", 0, TERN_EMALFORMED,
            "NAK: scope ends before it starts");
    refused("28 000d 00 01 07 02 08 00000000 00000100 00000010", 0, TERN_EMALFORMED,
            "NAK: segment requests do not fill whole pairs");
    refused("28 0011 00 01 07 02 08 00000000 00000100 00000010 0000000f", 0,
            TERN_EMALFORMED, "NAK: a segment request ends before it starts");
    refused("29 0010 00 01 07 02 08 0000000000000000 00000000000001", 0, TERN_ETRUNCATED,
            "NAK: shorter than its scope");
    /* Prompt, Keep Alive */
    refused("20 0001 00 01 07 02 09", 0, TERN_ETRUNCATED, "Prompt: no response field");
    refused("20 0003 00 01 07 02 09 80 00", 0, TERN_EMALFORMED,
            "Prompt: bytes after its field");
    refused("28 0004 00 01 07 02 0c 000010", 0, TERN_ETRUNCATED,
            "Keep Alive: shorter than its progress field");
    refused("28 0006 00 01 07 02 0c 00001000 00", 0, TERN_EMALFORMED,
            "Keep Alive: bytes after its progress field");
    refused("29 0005 00 01 07 02 0c 00001000", 0, TERN_ETRUNCATED,
            "Keep Alive: shorter than its progress field");
}

/* Decodes one TLV from hex and expects the refusal. */
static void tlv_refused(const char *h, int rc, const char *want)
{
    uint8_t b[300];
    size_t n = hex(h, b, sizeof b), used;
    cfdp_tlv t;
    const char *why = NULL;
    int got = cfdp_tlv_decode(b, n, &t, &used, &why);
    CHECK_MSG(got == rc, "%s: returned %d, want %d; why: %s", h, got, rc,
              why ? why : "(none)");
    CHECK_EQ_STR(why, want);
}

TEST(tlv_refusals)
{
    tlv_refused("", TERN_ETRUNCATED, "TLV shorter than its type and length");
    tlv_refused("02", TERN_ETRUNCATED, "TLV shorter than its type and length");
    tlv_refused("02 03 6162", TERN_ETRUNCATED, "TLV value runs past the end of its list");
    tlv_refused("03 00", TERN_EMALFORMED, "TLV type not defined");
    tlv_refused("07 00", TERN_EMALFORMED, "TLV type not defined");
    tlv_refused("00 00", TERN_ETRUNCATED, "filestore request: no action code");
    tlv_refused("01 00", TERN_ETRUNCATED, "filestore response: no action code");
    tlv_refused("00 03 90 01 66", TERN_EMALFORMED, "filestore action code not defined");
    tlv_refused("00 03 f0 01 66", TERN_EMALFORMED, "filestore action code not defined");
    tlv_refused("00 01 00", TERN_ETRUNCATED,
                "filestore TLV: first file name runs past the TLV");
    tlv_refused("00 03 00 02 66", TERN_ETRUNCATED,
                "filestore TLV: first file name runs past the TLV");
    tlv_refused("00 02 00 00", TERN_EMALFORMED,
                "filestore TLV: first file name is empty");
    tlv_refused("00 03 20 01 66", TERN_ETRUNCATED,
                "filestore TLV: second file name of rename, append or replace missing");
    tlv_refused("00 04 40 01 66 00", TERN_EMALFORMED,
                "filestore TLV: second file name is empty");
    tlv_refused("00 06 20 01 66 01 67 00", TERN_EMALFORMED,
                "filestore request: bytes after its file names");
    tlv_refused("00 05 00 01 66 01 67", TERN_EMALFORMED,
                "filestore request: bytes after its file names");
    tlv_refused("01 03 00 01 66", TERN_ETRUNCATED,
                "filestore response: no filestore message field");
    tlv_refused("01 04 00 01 66 02", TERN_ETRUNCATED,
                "filestore response: message runs past the TLV");
    tlv_refused("01 06 20 01 66 01 67 01", TERN_ETRUNCATED,
                "filestore response: message runs past the TLV");
    tlv_refused("01 07 20 01 66 01 67 00 00", TERN_EMALFORMED,
                "filestore response: bytes after its message");
    tlv_refused("04 00", TERN_EMALFORMED, "fault handler override: value is not 1 byte");
    tlv_refused("04 02 11 00", TERN_EMALFORMED,
                "fault handler override: value is not 1 byte");
    tlv_refused("04 01 10", TERN_EMALFORMED, "fault handler code not defined");
    tlv_refused("04 01 15", TERN_EMALFORMED, "fault handler code not defined");
    tlv_refused("04 01 1f", TERN_EMALFORMED, "fault handler code not defined");
    tlv_refused("06 00", TERN_EMALFORMED, "entity ID TLV: length not 1-8 bytes");
    tlv_refused("06 09 010203040506070809", TERN_EMALFORMED,
                "entity ID TLV: length not 1-8 bytes");
}

/* Values a decoder must pass up rather than refuse: an unsupported checksum
 * type (the receiver answers with a condition code), spare bits (written as
 * zero), any filestore status, any ACK subtype. */
TEST(pdu_accepts_what_the_protocol_answers)
{
    uint8_t b[64];
    cfdp_pdu p;
    size_t n = hex("20 0008 00 01 07 02 07 ff 00000010 00 00", b, sizeof b);
    CHECK_OK(cfdp_pdu_decode(b, n, 0, &p, NULL));
    CHECK_EQ_INT(p.u.md.checksum_type, 15);
    CHECK_EQ_INT(p.u.md.closure, 1);
    n = hex("20 0008 00 01 07 02 07 87 00000010 00 00", b, sizeof b);
    CHECK_OK(cfdp_pdu_decode(b, n, 0, &p, NULL));
    CHECK_EQ_INT(p.u.md.checksum_type, 7); /* no such type: decoded, not computed */
    CHECK_EQ_INT(p.u.md.closure, 0);
    n = hex("20 0002 00 01 07 02 09 7f", b, sizeof b); /* spare bits set */
    CHECK_OK(cfdp_pdu_decode(b, n, 0, &p, NULL));
    CHECK_EQ_INT(p.u.prompt.response, 0);
    uint8_t out[64];
    size_t on;
    CHECK_OK(cfdp_pdu_encode(&p, out, sizeof out, &on));
    CHECK_EQ_INT(out[on - 1], 0x00);
    n = hex("20 0003 00 01 07 02 06 4f 0e", b,
            sizeof b); /* ACK of EOF, subtype 15, spare */
    CHECK_OK(cfdp_pdu_decode(b, n, 0, &p, NULL));
    CHECK_EQ_INT(p.u.ack.subtype, 15);
    CHECK_EQ_INT(p.u.ack.txn_status, 2);
    n = hex("28 0008 00 01 07 02 05 0e 01 04 09 01 66 00", b, sizeof b); /* status 9 */
    CHECK_OK(cfdp_pdu_decode(b, n, 0, &p, NULL));
    cfdp_tlv t;
    size_t pos = 0;
    CHECK_OK(cfdp_tlvs_next(&p.u.fin.responses, &pos, &t));
    CHECK_EQ_INT(t.status, 9);
    CHECK_EQ_STR(cfdp_fs_status_name(t.action, t.status), "unknown");
    CHECK_RC(cfdp_tlvs_next(&p.u.fin.responses, &pos, &t), TERN_EEND);
}

/* ---------------------------------------------------------- encoder checks */

static void enc_refused(const cfdp_pdu *p, int rc, const char *want)
{
    const char *why = NULL;
    uint8_t b[128];
    size_t n;
    CHECK_RC(cfdp_pdu_check(p, &why), rc);
    CHECK_EQ_STR(why, want);
    CHECK_RC(cfdp_pdu_encode(p, b, sizeof b, &n), rc);
}

TEST(pdu_encoder_checks)
{
    cfdp_pdu p = {.kind = CFDP_EOF, .hdr = {.src = 1, .dst = 2, .tsn = 3}};
    p.u.eof.file_size = 1ull << 32;
    enc_refused(&p, TERN_EOVERFLOW, "a file offset or size passes 2^32: set large_file");
    p.hdr.large_file = 1;
    CHECK_OK(cfdp_pdu_check(&p, NULL));
    p.u.eof.condition = 12;
    enc_refused(&p, -EINVAL, "condition code is reserved (12 or 13)");
    p.u.eof.condition = CFDP_COND_NO_ERROR;
    p.u.eof.fault = (cfdp_eid){5, 1};
    enc_refused(&p, -EINVAL, "a fault location with condition 'no error'");
    p.u.eof.condition = CFDP_COND_CANCEL;
    p.u.eof.fault = (cfdp_eid){300, 1};
    enc_refused(&p, TERN_EOVERFLOW, "entity ID does not fit its length");
    p.u.eof.fault = (cfdp_eid){300, 9};
    enc_refused(&p, -EINVAL, "entity ID length not 1-8 bytes");
    p.u.eof.fault = (cfdp_eid){300, 2};
    CHECK_OK(cfdp_pdu_check(&p, NULL));
    p.hdr.eid_len = 1;
    p.hdr.src = 256;
    enc_refused(&p, TERN_EOVERFLOW,
                "header: source or destination entity ID does not fit eid_len");
    p.hdr.eid_len = 9;
    enc_refused(&p, -EINVAL, "header: entity ID or sequence number length above 8 bytes");
    p.hdr.eid_len = 0;
    p.hdr.tsn_len = 1;
    p.hdr.tsn = 1000;
    enc_refused(&p, TERN_EOVERFLOW, "header: sequence number does not fit tsn_len");
    p.hdr.tsn_len = 0;
    p.hdr.crc = 2;
    enc_refused(&p, -EINVAL, "header: a one-bit flag is not 0 or 1");
    p.hdr.crc = 0;
    p.kind = 3;
    enc_refused(&p, -EINVAL, "kind is neither file data nor a defined directive");

    /* file data */
    cfdp_pdu f = {.kind = CFDP_FILE_DATA, .hdr = {.src = 1, .dst = 2}};
    f.u.fd = (cfdp_file_data){.offset = 0xffffffffu, .data = S("ab"), .len = 2};
    enc_refused(&f, TERN_EOVERFLOW, "a file offset or size passes 2^32: set large_file");
    f.hdr.large_file = 1;
    f.u.fd.offset = UINT64_MAX;
    enc_refused(&f, TERN_EOVERFLOW, "file data: offset + length passes 2^64");
    f.u.fd.offset = 0;
    f.u.fd.meta = LV("x");
    enc_refused(&f, -EINVAL, "file data: segment metadata without hdr.seg_meta");
    f.hdr.seg_meta = 1;
    CHECK_OK(cfdp_pdu_check(&f, NULL));
    f.u.fd.meta.len = 64;
    enc_refused(&f, -EINVAL,
                "file data: segment metadata above 63 bytes or bad record state");
    f.u.fd.meta.len = 1;
    f.u.fd.data = NULL;
    enc_refused(&f, -EINVAL, "file data: data bytes missing");
    uint8_t big[70000] = {0};
    f.u.fd.data = big;
    f.u.fd.len = 65535;
    enc_refused(&f, TERN_EOVERFLOW, "data field longer than 65535 bytes");
    /* the most that fits does */
    f.u.fd.len = cfdp_file_data_room(&f.hdr, 1, SIZE_MAX);
    CHECK_OK(cfdp_pdu_check(&f, NULL));
    f.u.fd.len++;
    CHECK_RC(cfdp_pdu_check(&f, NULL), TERN_EOVERFLOW);

    /* directives */
    cfdp_pdu a = {.kind = CFDP_ACK, .hdr = {.src = 1, .dst = 2}};
    a.u.ack.directive = CFDP_METADATA;
    enc_refused(&a, -EINVAL, "ACK: acknowledges neither EOF nor Finished");
    cfdp_range bad = {10, 9};
    cfdp_pdu n = {.kind = CFDP_NAK, .hdr = {.src = 1, .dst = 2}};
    n.u.nak =
        (cfdp_nak){.scope_start = 0, .scope_end = 100, .segments = {&bad, 1, NULL, 0}};
    enc_refused(&n, -EINVAL, "NAK: a segment request ends before it starts");
    n.u.nak.scope_start = 101;
    enc_refused(&n, -EINVAL, "NAK: scope ends before it starts");
    cfdp_tlv wrong = {.type = CFDP_TLV_ENTITY_ID, .eid = {1, 1}};
    cfdp_pdu m = {.kind = CFDP_METADATA, .hdr = {.src = 1, .dst = 2}};
    m.u.md.options = (cfdp_tlvs){.items = &wrong, .count = 1};
    enc_refused(&m, -EINVAL, "Metadata: an option of a type Metadata does not carry");
    cfdp_tlv noname = {
        .type = CFDP_TLV_FS_REQUEST, .action = CFDP_FS_RENAME_FILE, .first = LV("a")};
    m.u.md.options = (cfdp_tlvs){.items = &noname, .count = 1};
    enc_refused(&m, -EINVAL,
                "filestore TLV: second file name of rename, append or replace missing");
    cfdp_pdu fin = {.kind = CFDP_FINISHED, .hdr = {.src = 1, .dst = 2}};
    cfdp_tlv req = {
        .type = CFDP_TLV_FS_REQUEST, .action = CFDP_FS_DELETE_FILE, .first = LV("a")};
    fin.u.fin.responses = (cfdp_tlvs){.items = &req, .count = 1};
    enc_refused(&fin, -EINVAL, "Finished: a TLV other than filestore responses");
    cfdp_pdu pr = {.kind = CFDP_PROMPT, .hdr = {.src = 1, .dst = 2}};
    pr.u.prompt.response = 2;
    enc_refused(&pr, -EINVAL, "Prompt: response is neither NAK nor Keep Alive");

    /* no room */
    cfdp_pdu ka = {.kind = CFDP_KEEP_ALIVE, .hdr = {.src = 1, .dst = 2}};
    uint8_t b[16];
    size_t len;
    CHECK_OK(cfdp_pdu_size(&ka, &len));
    CHECK_EQ_INT(len, 7 + 5);
    CHECK_RC(cfdp_pdu_encode(&ka, b, len - 1, &len), TERN_ENOSPACE);
}

TEST(tlv_encoder_checks)
{
    const char *why;
    uint8_t b[300];
    size_t n;
    cfdp_tlv t = {.type = CFDP_TLV_FS_REQUEST, .action = 9, .first = LV("a")};
    CHECK_RC(cfdp_tlv_check(&t, &why), -EINVAL);
    CHECK_EQ_STR(why, "filestore action code not defined");
    t.action = CFDP_FS_DELETE_FILE;
    t.second = LV("b");
    CHECK_RC(cfdp_tlv_check(&t, &why), -EINVAL);
    CHECK_EQ_STR(why, "filestore TLV: a second file name for an action that takes none");
    t.action = CFDP_FS_RENAME_FILE;
    t.empty_second = 1;
    CHECK_RC(cfdp_tlv_check(&t, &why), -EINVAL);
    CHECK_EQ_STR(why,
                 "filestore TLV: empty_second set for an action that names two files");
    t.empty_second = 0;
    t.action = CFDP_FS_DELETE_FILE;
    t.second = (cfdp_lv){0};
    t.first = (cfdp_lv){0};
    CHECK_RC(cfdp_tlv_check(&t, &why), -EINVAL);
    CHECK_EQ_STR(why, "filestore TLV: first file name is empty");
    static const uint8_t name[255];
    t = (cfdp_tlv){.type = CFDP_TLV_FS_REQUEST,
                   .action = CFDP_FS_RENAME_FILE,
                   .first = {name, 200},
                   .second = {name, 52}};
    CHECK_OK(cfdp_tlv_check(&t, NULL)); /* 1 + 201 + 53 = 255 */
    t.second.len = 53;
    CHECK_RC(cfdp_tlv_check(&t, &why), TERN_EOVERFLOW);
    CHECK_EQ_STR(why, "TLV value longer than 255 bytes");
    CHECK_RC(cfdp_tlv_encode(&t, b, sizeof b, &n), TERN_EOVERFLOW);
    t = (cfdp_tlv){.type = CFDP_TLV_FAULT_HANDLER, .condition = 13, .handler = 1};
    CHECK_OK(cfdp_tlv_check(&t, NULL)); /* reserved codes pass, as decoded (ION) */
    t.condition = 16;
    CHECK_RC(cfdp_tlv_check(&t, &why), -EINVAL);
    CHECK_EQ_STR(why, "fault handler override: condition code past 4 bits");
    t.condition = 1;
    t.handler = 0;
    CHECK_RC(cfdp_tlv_check(&t, &why), -EINVAL);
    CHECK_EQ_STR(why, "fault handler code not defined");
    t = (cfdp_tlv){.type = 3};
    CHECK_RC(cfdp_tlv_check(&t, &why), -EINVAL);
    CHECK_EQ_STR(why, "TLV type not defined");
    t = (cfdp_tlv){.type = CFDP_TLV_MSG_TO_USER, .data = LV("abc")};
    CHECK_RC(cfdp_tlv_encode(&t, b, 4, &n), TERN_ENOSPACE);
    CHECK_OK(cfdp_tlv_encode(&t, b, 5, &n));
    CHECK_EQ_INT(n, 5);
}

/* ------------------------------------------------------------- round trips */

static const uint8_t payload[300] = {1, 2, 3, 4, 5, 6, 7, 8, 9};

/* One PDU of every kind (and both file data forms) for a header. */
static size_t every_pdu(const cfdp_header *h, cfdp_pdu *out)
{
    static const cfdp_tlv opts[] = {
        {.type = CFDP_TLV_FS_REQUEST, .action = CFDP_FS_CREATE_FILE, .first = LV("new")},
        {.type = CFDP_TLV_FS_REQUEST,
         .action = CFDP_FS_RENAME_FILE,
         .first = LV("old"),
         .second = LV("new")},
        {.type = CFDP_TLV_MSG_TO_USER, .data = LV("cfdp\x00hello")},
        {.type = CFDP_TLV_FAULT_HANDLER,
         .condition = CFDP_COND_INACTIVITY,
         .handler = CFDP_HANDLER_SUSPEND},
        {.type = CFDP_TLV_FLOW_LABEL, .data = LV("fl")},
    };
    static const cfdp_tlv resps[] = {
        {.type = CFDP_TLV_FS_RESPONSE,
         .action = CFDP_FS_APPEND_FILE,
         .status = CFDP_FS_APPEND_NO_SECOND,
         .first = LV("x"),
         .second = LV("y"),
         .data = LV("missing")},
        {.type = CFDP_TLV_FS_RESPONSE, .action = CFDP_FS_DENY_DIR, .first = LV("d")},
    };
    static const cfdp_range segs[] = {{0, 0}, {10, 20}, {4000, 4096}};
    uint64_t big = h->large_file ? (1ull << 40) : 0xfffffff0u;
    size_t n = 0;
    cfdp_pdu p = {.hdr = *h};
    p.kind = CFDP_FILE_DATA;
    p.hdr.seg_meta = 0;
    p.u.fd = (cfdp_file_data){.offset = big, .data = payload, .len = 9};
    out[n++] = p;
    p.hdr.seg_meta = 1;
    p.u.fd.record = CFDP_REC_END;
    p.u.fd.meta = LV("segment metadata");
    out[n++] = p;
    p.hdr.seg_meta = 0;
    p.u.fd = (cfdp_file_data){.offset = 7}; /* no data at all */
    out[n++] = p;
    p.kind = CFDP_EOF;
    p.u.eof = (cfdp_eof){.checksum = 0xdeadbeef, .file_size = big};
    out[n++] = p;
    p.u.eof.condition = CFDP_COND_NAK_LIMIT;
    p.u.eof.fault = (cfdp_eid){h->src, cfdp_id_len(h->src)};
    out[n++] = p;
    p.kind = CFDP_FINISHED;
    p.u.fin = (cfdp_finished){.condition = CFDP_COND_FILESTORE_REJECTION,
                              .delivery = CFDP_DATA_INCOMPLETE,
                              .file_status = CFDP_FILE_REJECTED,
                              .responses = {resps, 2, NULL, 0},
                              .fault = {h->dst, 8}};
    out[n++] = p;
    p.u.fin = (cfdp_finished){.file_status = CFDP_FILE_UNREPORTED};
    out[n++] = p;
    p.kind = CFDP_ACK;
    p.u.ack = (cfdp_ack){CFDP_EOF, CFDP_ACK_SUBTYPE_EOF, CFDP_COND_CHECK_LIMIT,
                         CFDP_TXN_ACTIVE};
    out[n++] = p;
    p.kind = CFDP_METADATA;
    p.u.md = (cfdp_metadata){.closure = 1,
                             .checksum_type = CFDP_CKSUM_PROX1,
                             .file_size = big,
                             .src_name = LV("/src/file"),
                             .dst_name = LV("dst"),
                             .options = {opts, 5, NULL, 0}};
    out[n++] = p;
    p.u.md = (cfdp_metadata){.checksum_type = CFDP_CKSUM_NULL};
    out[n++] = p;
    p.kind = CFDP_NAK;
    p.u.nak =
        (cfdp_nak){.scope_start = 0, .scope_end = big, .segments = {segs, 3, NULL, 0}};
    out[n++] = p;
    p.u.nak = (cfdp_nak){.scope_start = 5, .scope_end = 5};
    out[n++] = p;
    p.kind = CFDP_PROMPT;
    p.u.prompt.response = CFDP_PROMPT_NAK;
    out[n++] = p;
    p.kind = CFDP_KEEP_ALIVE;
    p.u.ka.progress = big;
    out[n++] = p;
    return n;
}

/* Encode, decode, compare; encode the decoded PDU (raw lists) and compare
 * bytes. */
static void round_trip(const cfdp_pdu *p)
{
    uint8_t a[1024], b[1024];
    size_t an, bn;
    const char *why = NULL;
    int rc = cfdp_pdu_check(p, &why);
    CHECK_MSG(rc == 0, "%s: %s", cfdp_kind_name(p->kind), why);
    CHECK_OK(cfdp_pdu_encode(p, a, sizeof a, &an));
    cfdp_pdu d;
    rc = cfdp_pdu_decode(a, an, p->hdr.crc ? CFDP_DECODE_CRC_REQUIRED : 0, &d, &why);
    CHECK_MSG(rc == 0, "%s: %s", cfdp_kind_name(p->kind), why);
    cfdp_pdu want = *p;
    want.hdr.version = 1;
    want.hdr.type = p->kind == CFDP_FILE_DATA;
    want.hdr.eid_len = (uint8_t)((cfdp_header_len(&p->hdr) - 4 - (d.hdr.tsn_len)) / 2);
    want.hdr.tsn_len = d.hdr.tsn_len;
    CHECK_MSG(cfdp_pdu_eq(&want, &d), "%s differs after a round trip",
              cfdp_kind_name(p->kind));
    CHECK_EQ_INT(d.hdr.data_len, an - cfdp_header_len(&p->hdr));
    CHECK_OK(cfdp_pdu_encode(&d, b, sizeof b, &bn));
    CHECK_EQ_INT(bn, an);
    CHECK_EQ_MEM(a, b, an);
    /* every truncation is refused, never read past */
    for (size_t cut = 0; cut < an; cut++) {
        uint8_t *t = malloc(cut ? cut : 1);
        memcpy(t, a, cut);
        CHECK(cfdp_pdu_decode(t, cut, 0, &d, &why) != 0);
        free(t);
    }
}

TEST(pdu_round_trip_every_kind)
{
    size_t total = 0;
    for (int ids = 0; ids < 2; ids++)
        for (int large = 0; large < 2; large++)
            for (int crc = 0; crc < 2; crc++) {
                cfdp_header h = {.direction = (uint8_t)crc,
                                 .mode = (uint8_t)large,
                                 .crc = (uint8_t)crc,
                                 .large_file = (uint8_t)large,
                                 .seg_ctrl = (uint8_t)ids};
                if (ids) { /* 8-byte IDs and sequence number */
                    h.src = 0x8877665544332211ull;
                    h.dst = 0x0102030405060708ull;
                    h.tsn = UINT64_MAX;
                } else { /* 1-byte ones, given explicitly */
                    h.eid_len = h.tsn_len = 1;
                    h.src = 255;
                    h.dst = 1;
                    h.tsn = 0;
                }
                cfdp_pdu pdus[16];
                size_t n = every_pdu(&h, pdus);
                for (size_t i = 0; i < n; i++)
                    round_trip(&pdus[i]);
                total += n;
            }
    fprintf(stderr,
            "# %zu PDUs round-tripped (1- and 8-byte IDs, 32/64-bit, CRC on/off)\n",
            total);
}

TEST(tlv_round_trip_every_type)
{
    static const uint8_t name[255] = {'n'};
    const cfdp_tlv tlvs[] = {
        {.type = CFDP_TLV_FS_REQUEST,
         .action = CFDP_FS_CREATE_FILE,
         .first = {name, 253}},
        {.type = CFDP_TLV_FS_REQUEST, .action = CFDP_FS_DELETE_FILE, .first = LV("a")},
        {.type = CFDP_TLV_FS_REQUEST,
         .action = CFDP_FS_REPLACE_FILE,
         .first = LV("a"),
         .second = LV("b")},
        {.type = CFDP_TLV_FS_REQUEST, .action = CFDP_FS_REMOVE_DIR, .first = LV("d")},
        {.type = CFDP_TLV_FS_REQUEST, .action = CFDP_FS_DENY_FILE, .first = LV("f")},
        {.type = CFDP_TLV_FS_REQUEST,
         .action = CFDP_FS_DELETE_FILE,
         .empty_second = 1,
         .first = LV("ion")},
        {.type = CFDP_TLV_FS_RESPONSE,
         .action = CFDP_FS_REMOVE_DIR,
         .status = CFDP_FS_RMDIR_NOT_ALLOWED,
         .empty_second = 1,
         .first = LV("ion"),
         .data = LV("busy")},
        {.type = CFDP_TLV_FS_RESPONSE,
         .action = CFDP_FS_RENAME_FILE,
         .status = CFDP_FS_RENAME_NEW_EXISTS,
         .first = LV("a"),
         .second = LV("b"),
         .data = LV("exists")},
        {.type = CFDP_TLV_FS_RESPONSE,
         .action = CFDP_FS_CREATE_DIR,
         .status = CFDP_FS_MKDIR_CANNOT,
         .first = LV("d")},
        {.type = CFDP_TLV_MSG_TO_USER, .data = {name, 255}},
        {.type = CFDP_TLV_FAULT_HANDLER,
         .condition = CFDP_COND_UNSUPPORTED_CHECKSUM,
         .handler = CFDP_HANDLER_CANCEL},
        {.type = CFDP_TLV_FLOW_LABEL},
        {.type = CFDP_TLV_ENTITY_ID, .eid = {0, 1}},
        {.type = CFDP_TLV_ENTITY_ID, .eid = {UINT64_MAX, 8}},
    };
    for (size_t i = 0; i < sizeof tlvs / sizeof tlvs[0]; i++) {
        uint8_t a[300], b[300];
        size_t an, bn, used;
        cfdp_tlv d;
        CHECK_OK(cfdp_tlv_encode(&tlvs[i], a, sizeof a, &an));
        CHECK_OK(cfdp_tlv_decode(a, an, &d, &used, NULL));
        CHECK_EQ_INT(used, an);
        CHECK_MSG(cfdp_tlv_eq(&d, &tlvs[i]), "TLV %zu (%s) differs", i,
                  cfdp_tlv_type_name(tlvs[i].type));
        CHECK_OK(cfdp_tlv_encode(&d, b, sizeof b, &bn));
        CHECK_EQ_INT(bn, an);
        CHECK_EQ_MEM(a, b, an);
        for (size_t cut = 0; cut < an; cut++)
            CHECK(cfdp_tlv_decode(a, cut, &d, &used, NULL) != 0);
    }
}

/* A NAK filled to cfdp_nak_room() fits the PDU size it was sized for; one
 * more request does not. The machines split long gap lists with it. */
TEST(pdu_room_helpers)
{
    static cfdp_range segs[9000];
    for (size_t i = 0; i < 9000; i++)
        segs[i] = (cfdp_range){i * 10, i * 10 + 5};
    size_t sizes[] = {0, 20, 40, 100, 1024, 65000, 70000};
    for (int large = 0; large < 2; large++)
        for (int crc = 0; crc < 2; crc++)
            for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
                cfdp_pdu p = {.kind = CFDP_NAK,
                              .hdr = {.large_file = (uint8_t)large,
                                      .crc = (uint8_t)crc,
                                      .src = 1,
                                      .dst = 2,
                                      .tsn = 300}};
                size_t room = cfdp_nak_room(&p.hdr, sizes[k]);
                p.u.nak = (cfdp_nak){0, 90000, {segs, room, NULL, 0}};
                size_t len;
                CHECK_OK(cfdp_pdu_size(&p, &len));
                if (room)
                    CHECK_MSG(len <= sizes[k], "%zu requests take %zu > %zu", room, len,
                              sizes[k]);
                p.u.nak.segments.count++;
                if (cfdp_pdu_size(&p, &len) == 0)
                    CHECK_MSG(len > sizes[k], "room %zu is not the most for %zu", room,
                              sizes[k]);
                static uint8_t data[70000];
                cfdp_pdu f = {.kind = CFDP_FILE_DATA, .hdr = p.hdr};
                f.hdr.seg_meta = 1;
                f.u.fd = (cfdp_file_data){.data = data, .meta = {data, 3}};
                f.u.fd.len = cfdp_file_data_room(&f.hdr, 3, sizes[k]);
                CHECK_OK(cfdp_pdu_size(&f, &len));
                if (f.u.fd.len)
                    CHECK(len <= sizes[k]);
                f.u.fd.len++;
                if (cfdp_pdu_size(&f, &len) == 0)
                    CHECK(len > sizes[k]);
            }
    CHECK_EQ_INT(cfdp_id_len(0), 1);
    CHECK_EQ_INT(cfdp_id_len(255), 1);
    CHECK_EQ_INT(cfdp_id_len(256), 2);
    CHECK_EQ_INT(cfdp_id_len(UINT64_MAX), 8);
}

TEST(pdu_header_decode_alone)
{
    /* 3d: 001 1 1 1 0 1: file data, toward sender, unacknowledged, no CRC, 64-bit;
     * 93: 1 001 0 011: records preserved, 2-byte IDs, 4-byte sequence number.
     * The data field (5 bytes, too short for a 64-bit offset) is not parsed. */
    uint8_t b[64] = {0};
    size_t n = hex("3d 0005 93 0102 00000009 0304 00000000 ff", b, sizeof b), hl;
    cfdp_header h;
    CHECK_OK(cfdp_header_decode(b, n, &h, &hl, NULL));
    CHECK_EQ_INT(hl, 12);
    CHECK_EQ_INT(h.version, 1);
    CHECK_EQ_INT(h.type, CFDP_TYPE_FILE_DATA);
    CHECK_EQ_INT(h.direction, CFDP_TOWARD_SENDER);
    CHECK_EQ_INT(h.mode, CFDP_UNACKNOWLEDGED);
    CHECK_EQ_INT(h.crc, 0);
    CHECK_EQ_INT(h.large_file, 1);
    CHECK_EQ_INT(h.seg_ctrl, 1);
    CHECK_EQ_INT(h.seg_meta, 0);
    CHECK_EQ_INT(h.eid_len, 2);
    CHECK_EQ_INT(h.tsn_len, 4);
    CHECK_EQ_U64(h.src, 0x0102);
    CHECK_EQ_U64(h.tsn, 9);
    CHECK_EQ_U64(h.dst, 0x0304);
    CHECK_EQ_INT(h.data_len, 5);
    CHECK_OK(cfdp_header_decode(b, n + 1, &h, &hl,
                                NULL)); /* what follows is not its business */
    cfdp_pdu p;
    const char *why;
    CHECK_RC(cfdp_pdu_decode(b, n, 0, &p, &why), TERN_ETRUNCATED);
    CHECK_EQ_STR(why, "file data: no room for its offset");
}

TEST(names)
{
    CHECK_EQ_STR(cfdp_kind_name(CFDP_FILE_DATA), "File Data");
    CHECK_EQ_STR(cfdp_kind_name(CFDP_KEEP_ALIVE), "Keep Alive");
    CHECK_EQ_STR(cfdp_kind_name(1), "unknown");
    CHECK_EQ_STR(cfdp_kind_name(200), "unknown");
    CHECK_EQ_STR(cfdp_condition_name(CFDP_COND_CHECK_LIMIT), "check limit reached");
    CHECK_EQ_STR(cfdp_condition_name(CFDP_COND_UNSUPPORTED_CHECKSUM),
                 "unsupported checksum type");
    CHECK_EQ_STR(cfdp_condition_name(12), "reserved (12)");
    CHECK_EQ_STR(cfdp_condition_name(16), "unknown");
    for (unsigned c = 0; c < 16; c++)
        CHECK(strcmp(cfdp_condition_name(c), "unknown") != 0);
    CHECK_EQ_STR(cfdp_delivery_name(1), "data incomplete");
    CHECK_EQ_STR(cfdp_file_status_name(CFDP_FILE_RETAINED), "retained in the filestore");
    CHECK_EQ_STR(cfdp_txn_status_name(CFDP_TXN_UNRECOGNIZED), "unrecognized");
    CHECK_EQ_STR(cfdp_fs_action_name(CFDP_FS_DENY_DIR), "deny directory");
    CHECK_EQ_STR(cfdp_fs_action_name(9), "unknown");
    CHECK_EQ_STR(cfdp_fs_status_name(CFDP_FS_RENAME_FILE, 2),
                 "new file name already exists");
    CHECK_EQ_STR(cfdp_fs_status_name(CFDP_FS_CREATE_FILE, 15), "not performed");
    CHECK_EQ_STR(cfdp_fs_status_name(CFDP_FS_DENY_FILE, 1), "unknown");
    CHECK_EQ_STR(cfdp_handler_name(CFDP_HANDLER_ABANDON), "abandon");
    CHECK_EQ_STR(cfdp_handler_name(0), "reserved");
    CHECK_EQ_STR(cfdp_tlv_type_name(CFDP_TLV_FAULT_HANDLER), "fault handler override");
    CHECK_EQ_STR(cfdp_tlv_type_name(3), "unknown");
    CHECK_EQ_STR(cfdp_checksum_name(CFDP_CKSUM_PROX1), "Proximity-1 CRC-32");
    CHECK_EQ_STR(cfdp_checksum_name(4), "unknown");
    CHECK_EQ_STR(cfdp_record_name(CFDP_REC_WHOLE), "whole record");
    CHECK_EQ_INT(tern_cfdp_abi_version(), CFDP_ABI_VERSION);
}
