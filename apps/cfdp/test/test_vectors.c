/* CFDP PDUs built from fixed inputs and compared byte for byte with hex
 * written out by hand from the field tables of CCSDS 727.0-B-5 (5.1 fixed
 * header, 5.2 file directives, 5.3 file data, 5.4 TLVs). Each vector's
 * comment derives every byte; the same bytes must also decode back to the
 * inputs.
 *
 * Fixed header (table 5-1), 4 bytes then the IDs:
 *   byte 0: version (3 bits, '001'), PDU type (1: 0 directive, 1 file data),
 *           direction (1: 0 toward receiver, 1 toward sender), transmission
 *           mode (1: 0 acknowledged, 1 unacknowledged), CRC flag (1),
 *           large file flag (1)
 *   bytes 1-2: PDU data field length (16 bits, the CRC included)
 *   byte 3: segmentation control (1), entity ID length - 1 (3),
 *           segment metadata flag (1), sequence number length - 1 (3)
 *   then source entity ID, transaction sequence number, destination entity ID.
 */
#include "cfdp_pdu.h"
#include "hex.h"
#include "pdu_eq.h"
#include "tern_test.h"

#define S(s)  ((const uint8_t *)(s))
#define LV(s) ((cfdp_lv){S(s), (uint8_t)(sizeof(s) - 1)})

/* Encodes *pdu and compares with the hex; decodes the hex and compares with *pdu. */
static void vector(const cfdp_pdu *pdu, const char *want_hex)
{
    uint8_t want[512], got[512];
    size_t wn = hex(want_hex, want, sizeof want), gn = 0;
    const char *why = NULL;
    int rc = cfdp_pdu_check(pdu, &why);
    CHECK_MSG(rc == 0, "check: %s", why);
    CHECK_OK(cfdp_pdu_encode(pdu, got, sizeof got, &gn));
    CHECK_EQ_INT(gn, wn);
    for (size_t i = 0; i < wn; i++)
        CHECK_MSG(got[i] == want[i], "byte %zu: encoded %02x, by hand %02x", i, got[i],
                  want[i]);
    size_t sz;
    CHECK_OK(cfdp_pdu_size(pdu, &sz));
    CHECK_EQ_INT(sz, wn);
    cfdp_pdu back;
    rc = cfdp_pdu_decode(want, wn, 0, &back, &why);
    CHECK_MSG(rc == 0, "decode: %s", why);
    CHECK_EQ_INT(back.hdr.version, 1);
    CHECK_EQ_INT(back.hdr.type, pdu->kind == CFDP_FILE_DATA);
    CHECK_EQ_INT(back.hdr.data_len, (want[1] << 8) | want[2]);
    cfdp_header h =
        pdu->hdr; /* the inputs leave version, type and data_len to the encoder */
    h.version = 1;
    h.type = pdu->kind == CFDP_FILE_DATA;
    cfdp_pdu in = *pdu;
    in.hdr = h;
    CHECK_MSG(cfdp_pdu_eq(&in, &back), "decoded fields differ from the inputs");
}

/* The header most vectors share: entity 1 sends transaction 7 to entity 2, IDs
 * and sequence number 1 byte each. */
static cfdp_header hdr_1_7_2(void)
{
    return (cfdp_header){.eid_len = 1, .tsn_len = 1, .src = 1, .tsn = 7, .dst = 2};
}

TEST(vector_metadata_unacknowledged_with_message)
{
    /* Metadata (5.2.5), unacknowledged, closure requested, CRC-32C, 1000 bytes,
     * "a.txt" -> "b.txt", one message to user "hi".
     * 24       001 0 0 1 0 0: version 1, directive, toward receiver, unacknowledged,
     *          no CRC, 32-bit
     * 00 16    data field: 1 code + 1 flags + 4 size + 6 + 6 names + 4 TLV = 22
     * 00       0 000 0 000: boundaries not preserved, 1-byte IDs, no segment
     *          metadata, 1-byte sequence number
     * 01 07 02 source 1, sequence 7, destination 2
     * 07       directive code: Metadata
     * 42       0 1 00 0010: reserved, closure requested, reserved, checksum type 2
     * 00 00 03 e8           file size 1000 (32 bits)
     * 05 61 2e 74 78 74     source file name LV "a.txt"
     * 05 62 2e 74 78 74     destination file name LV "b.txt"
     * 02 02 68 69           TLV type 2 (message to user), length 2, "hi" */
    cfdp_tlv msg = {.type = CFDP_TLV_MSG_TO_USER, .data = LV("hi")};
    cfdp_pdu p = {.hdr = hdr_1_7_2(), .kind = CFDP_METADATA};
    p.hdr.mode = CFDP_UNACKNOWLEDGED;
    p.u.md = (cfdp_metadata){.closure = 1,
                             .checksum_type = CFDP_CKSUM_CRC32C,
                             .file_size = 1000,
                             .src_name = LV("a.txt"),
                             .dst_name = LV("b.txt"),
                             .options = {.items = &msg, .count = 1}};
    vector(&p, "24 0016 00 01 07 02"
               "07 42 000003e8 05 612e747874 05 622e747874 02 02 6869");
}

TEST(vector_file_data_with_crc)
{
    /* File Data (5.3), acknowledged, with the PDU CRC, 2-byte entity IDs and a
     * 4-byte sequence number; 4 bytes "CFDP" at offset 65536.
     * 32       001 1 0 0 1 0: file data, toward receiver, acknowledged, CRC, 32-bit
     * 00 0a    data field: 4 offset + 4 data + 2 CRC = 10
     * 13       0 001 0 011: 2-byte IDs, no segment metadata, 4-byte sequence number
     * 01 02    source 0x0102
     * 00 00 00 2a           sequence number 42
     * 02 03    destination 0x0203
     * 00 01 00 00           offset 65536
     * 43 46 44 50           "CFDP"
     * c9 85    CRC-16/CCITT-FALSE of the 20 bytes before it, computed apart from
     *          Tern with Python's binascii.crc_hqx(bytes, 0xFFFF) */
    cfdp_pdu p = {.kind = CFDP_FILE_DATA};
    p.hdr = (cfdp_header){
        .crc = 1, .eid_len = 2, .tsn_len = 4, .src = 0x0102, .tsn = 42, .dst = 0x0203};
    p.u.fd = (cfdp_file_data){.offset = 65536, .data = S("CFDP"), .len = 4};
    vector(&p, "32 000a 13 0102 0000002a 0203 00010000 43464450 c985");
}

TEST(vector_file_data_segment_metadata_large)
{
    /* File Data with segment metadata (5.3.2), large file, records preserved.
     * 35       001 1 0 1 0 1: file data, toward receiver, unacknowledged, no CRC,
     *          64-bit
     * 00 0d    data field: 1 + 3 metadata + 8 offset + 1 data = 13
     * 89       1 000 1 001: boundaries preserved, 1-byte IDs, segment metadata,
     *          2-byte sequence number
     * 05 00 09 06           source 5, sequence 9, destination 6
     * c3       11 000011: record continuation "start and end", metadata length 3
     * 78 79 7a              metadata "xyz"
     * 00 00 00 01 00 00 00 00  offset 2^32 (64 bits)
     * 5a       "Z" */
    cfdp_pdu p = {.kind = CFDP_FILE_DATA};
    p.hdr = (cfdp_header){.mode = CFDP_UNACKNOWLEDGED,
                          .large_file = 1,
                          .seg_ctrl = 1,
                          .seg_meta = 1,
                          .eid_len = 1,
                          .tsn_len = 2,
                          .src = 5,
                          .tsn = 9,
                          .dst = 6};
    p.u.fd = (cfdp_file_data){.offset = 1ull << 32,
                              .data = S("Z"),
                              .len = 1,
                              .record = CFDP_REC_WHOLE,
                              .meta = LV("xyz")};
    vector(&p, "35 000d 89 05 0009 06 c3 78797a 0000000100000000 5a");
}

TEST(vector_eof_cancel_with_fault_location)
{
    /* EOF (5.2.2) after a cancel, with the fault location.
     * 20       001 0 0 0 0 0: directive, toward receiver, acknowledged, no CRC, 32-bit
     * 00 0d    data field: 1 code + 1 condition + 4 checksum + 4 size + 3 TLV = 13
     * 00 05 03 06           1-byte lengths; source 5, sequence 3, destination 6
     * 04       directive code: EOF
     * f0       1111 0000: condition 15 (cancel request received), spare
     * 12 34 56 78           file checksum
     * 00 00 04 00           file size 1024
     * 06 01 05              TLV type 6 (entity ID), length 1, entity 5 */
    cfdp_pdu p = {.kind = CFDP_EOF};
    p.hdr = (cfdp_header){.eid_len = 1, .tsn_len = 1, .src = 5, .tsn = 3, .dst = 6};
    p.u.eof = (cfdp_eof){.condition = CFDP_COND_CANCEL,
                         .checksum = 0x12345678,
                         .file_size = 1024,
                         .fault = {5, 1}};
    vector(&p, "20 000d 00 05 03 06 04 f0 12345678 00000400 06 01 05");
}

TEST(vector_finished_with_filestore_response)
{
    /* Finished (5.2.3) with one filestore response.
     * 28       001 0 1 0 0 0: directive, toward sender, acknowledged, no CRC, 32-bit
     * 00 0a    data field: 1 code + 1 flags + 8 TLV = 10
     * 00 01 07 02
     * 05       directive code: Finished
     * 02       0000 0 0 10: condition 0, spare, delivery 0 (complete), file status 2
     *          (retained)
     * 01 06    TLV type 1 (filestore response), length 6
     * 20       0010 0000: action 2 (rename file), status 0 (successful)
     * 01 61    first file name LV "a"
     * 01 62    second file name LV "b" (rename names two files)
     * 00       filestore message LV, empty */
    cfdp_tlv resp = {.type = CFDP_TLV_FS_RESPONSE,
                     .action = CFDP_FS_RENAME_FILE,
                     .status = CFDP_FS_SUCCESS,
                     .first = LV("a"),
                     .second = LV("b")};
    cfdp_pdu p = {.hdr = hdr_1_7_2(), .kind = CFDP_FINISHED};
    p.hdr.direction = CFDP_TOWARD_SENDER;
    p.u.fin = (cfdp_finished){.condition = CFDP_COND_NO_ERROR,
                              .delivery = CFDP_DATA_COMPLETE,
                              .file_status = CFDP_FILE_RETAINED,
                              .responses = {.items = &resp, .count = 1}};
    vector(&p, "28 000a 00 01 07 02 05 02 01 06 20 0161 0162 00");
}

TEST(vector_ack_of_finished)
{
    /* ACK (5.2.4) of a Finished PDU.
     * 20 00 03 00 01 07 02  directive, toward receiver; data field 3
     * 06       directive code: ACK
     * 51       0101 0001: acknowledged directive 5 (Finished), subtype 1
     * 02       0000 00 10: condition 0, spare, transaction status 2 (terminated) */
    cfdp_pdu p = {.hdr = hdr_1_7_2(), .kind = CFDP_ACK};
    p.u.ack = (cfdp_ack){.directive = CFDP_FINISHED,
                         .subtype = CFDP_ACK_SUBTYPE_FINISHED,
                         .condition = CFDP_COND_NO_ERROR,
                         .txn_status = CFDP_TXN_TERMINATED};
    vector(&p, "20 0003 00 01 07 02 06 51 02");
}

TEST(vector_nak_large_file)
{
    /* NAK (5.2.6), large file: scope [0, 8 GiB), two segment requests, the
     * metadata (0, 0) and [2^32, 2^32 + 1024).
     * 29       001 0 1 0 0 1: directive, toward sender, acknowledged, no CRC, 64-bit
     * 00 31    data field: 1 code + 16 scope + 2 x 16 requests = 49
     * 00 01 07 02
     * 08       directive code: NAK
     * 00 00 00 00 00 00 00 00   start of scope 0
     * 00 00 00 02 00 00 00 00   end of scope 2^33
     * 00 00 00 00 00 00 00 00   request 1 start 0
     * 00 00 00 00 00 00 00 00   request 1 end 0
     * 00 00 00 01 00 00 00 00   request 2 start 2^32
     * 00 00 00 01 00 00 04 00   request 2 end 2^32 + 1024 */
    cfdp_range segs[2] = {{0, 0}, {1ull << 32, (1ull << 32) + 1024}};
    cfdp_pdu p = {.hdr = hdr_1_7_2(), .kind = CFDP_NAK};
    p.hdr.direction = CFDP_TOWARD_SENDER;
    p.hdr.large_file = 1;
    p.u.nak = (cfdp_nak){.scope_start = 0,
                         .scope_end = 1ull << 33,
                         .segments = {.items = segs, .count = 2}};
    vector(&p, "29 0031 00 01 07 02 08 0000000000000000 0000000200000000"
               "0000000000000000 0000000000000000 0000000100000000 0000000100000400");
}

TEST(vector_nak_32bit)
{
    /* NAK in the 32-bit form: scope [100, 5000), one request [200, 300).
     * 28 00 11 00 01 07 02  toward sender; data field 1 + 8 + 8 = 17
     * 08
     * 00 00 00 64  00 00 13 88   scope 100 .. 5000
     * 00 00 00 c8  00 00 01 2c   request 200 .. 300 */
    cfdp_range seg = {200, 300};
    cfdp_pdu p = {.hdr = hdr_1_7_2(), .kind = CFDP_NAK};
    p.hdr.direction = CFDP_TOWARD_SENDER;
    p.u.nak = (cfdp_nak){
        .scope_start = 100, .scope_end = 5000, .segments = {.items = &seg, .count = 1}};
    vector(&p, "28 0011 00 01 07 02 08 00000064 00001388 000000c8 0000012c");
}

TEST(vector_prompt_keep_alive_8_byte_ids)
{
    /* Prompt (5.2.7) asking for a Keep Alive, with 8-byte IDs and sequence number.
     * 20       directive, toward receiver, acknowledged, no CRC, 32-bit
     * 00 02    data field: 1 code + 1 = 2
     * 77       0 111 0 111: 8-byte IDs, 8-byte sequence number
     * 01 02 03 04 05 06 07 08   source
     * 11 12 13 14 15 16 17 18   sequence number
     * 21 22 23 24 25 26 27 28   destination
     * 09       directive code: Prompt
     * 80       1 0000000: response required 1 (Keep Alive), spare */
    cfdp_pdu p = {.kind = CFDP_PROMPT};
    p.hdr = (cfdp_header){.eid_len = 8,
                          .tsn_len = 8,
                          .src = 0x0102030405060708ull,
                          .tsn = 0x1112131415161718ull,
                          .dst = 0x2122232425262728ull};
    p.u.prompt.response = CFDP_PROMPT_KEEP_ALIVE;
    vector(&p, "20 0002 77 0102030405060708 1112131415161718 2122232425262728 09 80");
}

TEST(vector_keep_alive)
{
    /* Keep Alive (5.2.8), progress 4096.
     * 28 00 05 00 01 07 02  toward sender; data field 1 + 4 = 5
     * 0c       directive code: Keep Alive
     * 00 00 10 00           progress 4096 */
    cfdp_pdu p = {.hdr = hdr_1_7_2(), .kind = CFDP_KEEP_ALIVE};
    p.hdr.direction = CFDP_TOWARD_SENDER;
    p.u.ka.progress = 4096;
    vector(&p, "28 0005 00 01 07 02 0c 00001000");
}

TEST(vector_metadata_every_option)
{
    /* Metadata carrying each option type it may (5.2.5, 5.4): a filestore
     * request, a fault handler override and a flow label; no closure,
     * modular checksum, unbounded size (0), no file names (a metadata-only
     * transaction).
     * 20       directive, toward receiver, acknowledged
     * 00 13    data field: 1 + 1 + 4 + 1 + 1 + 5 + 3 + 3 = 19
     * 00 01 07 02
     * 07       Metadata
     * 00       0 0 00 0000: no closure, checksum type 0 (modular)
     * 00 00 00 00           file size 0
     * 00       source file name LV, empty
     * 00       destination file name LV, empty
     * 00 03 50 01 64        TLV 0 (filestore request), length 3: 0101 0000
     *                       (action 5, create directory), first name LV "d"
     * 04 01 53              TLV 4 (fault handler override), length 1: 0101 0011
     *                       (condition 5, file checksum failure; handler 3, ignore)
     * 05 01 ab              TLV 5 (flow label), length 1, 0xab */
    cfdp_tlv opts[3] = {
        {.type = CFDP_TLV_FS_REQUEST, .action = CFDP_FS_CREATE_DIR, .first = LV("d")},
        {.type = CFDP_TLV_FAULT_HANDLER,
         .condition = CFDP_COND_CHECKSUM_FAILURE,
         .handler = CFDP_HANDLER_IGNORE},
        {.type = CFDP_TLV_FLOW_LABEL, .data = LV("\xab")},
    };
    cfdp_pdu p = {.hdr = hdr_1_7_2(), .kind = CFDP_METADATA};
    p.u.md = (cfdp_metadata){.checksum_type = CFDP_CKSUM_MODULAR,
                             .options = {.items = opts, .count = 3}};
    vector(&p,
           "20 0013 00 01 07 02 07 00 00000000 00 00 00 03 50 01 64 04 01 53 05 01 ab");
}

/* A TLV encoded from fixed inputs equals the hand-written bytes, and they
 * decode back to the inputs. */
static void tlv_vector(const cfdp_tlv *t, const char *want_hex)
{
    uint8_t want[300], got[300];
    size_t wn = hex(want_hex, want, sizeof want), gn = 0, used = 0;
    CHECK_OK(cfdp_tlv_encode(t, got, sizeof got, &gn));
    CHECK_EQ_INT(gn, wn);
    CHECK_EQ_MEM(got, want, wn);
    cfdp_tlv back;
    const char *why = NULL;
    int rc = cfdp_tlv_decode(want, wn, &back, &used, &why);
    CHECK_MSG(rc == 0, "decode: %s", why);
    CHECK_EQ_INT(used, wn);
    CHECK(cfdp_tlv_eq(&back, t));
}

TEST(vector_tlvs)
{
    /* Filestore request (table 5-16): 00 03, 0000 0000 (create file), LV "f". */
    tlv_vector(&(cfdp_tlv){.type = CFDP_TLV_FS_REQUEST,
                           .action = CFDP_FS_CREATE_FILE,
                           .first = LV("f")},
               "00 03 00 01 66");
    /* Filestore request, append: 00 05, 0011 0000, LV "f", LV "g". */
    tlv_vector(&(cfdp_tlv){.type = CFDP_TLV_FS_REQUEST,
                           .action = CFDP_FS_APPEND_FILE,
                           .first = LV("f"),
                           .second = LV("g")},
               "00 05 30 01 66 01 67");
    /* Filestore response (table 5-17): 01 06, 0001 0010 (delete file, delete
     * not allowed), LV "f", message LV "no". */
    tlv_vector(&(cfdp_tlv){.type = CFDP_TLV_FS_RESPONSE,
                           .action = CFDP_FS_DELETE_FILE,
                           .status = CFDP_FS_DELETE_NOT_ALLOWED,
                           .first = LV("f"),
                           .data = LV("no")},
               "01 06 12 01 66 02 6e 6f");
    /* Filestore response, not performed: 01 04, 0000 1111, LV "f", empty message. */
    tlv_vector(&(cfdp_tlv){.type = CFDP_TLV_FS_RESPONSE,
                           .action = CFDP_FS_CREATE_FILE,
                           .status = CFDP_FS_NOT_PERFORMED,
                           .first = LV("f")},
               "01 04 0f 01 66 00");
    /* Message to user (5.4.3): 02 03 "abc". */
    tlv_vector(&(cfdp_tlv){.type = CFDP_TLV_MSG_TO_USER, .data = LV("abc")},
               "02 03 616263");
    /* Message to user, empty: 02 00. */
    tlv_vector(&(cfdp_tlv){.type = CFDP_TLV_MSG_TO_USER}, "02 00");
    /* Fault handler override (table 5-19): 04 01, 0111 0100 (NAK limit; abandon). */
    tlv_vector(&(cfdp_tlv){.type = CFDP_TLV_FAULT_HANDLER,
                           .condition = CFDP_COND_NAK_LIMIT,
                           .handler = CFDP_HANDLER_ABANDON},
               "04 01 74");
    /* Flow label (5.4.5): 05 02 ab cd. */
    tlv_vector(&(cfdp_tlv){.type = CFDP_TLV_FLOW_LABEL, .data = LV("\xab\xcd")},
               "05 02 abcd");
    /* Entity ID (5.4.6): 06 02 01 00 (entity 256 in 2 bytes). */
    tlv_vector(&(cfdp_tlv){.type = CFDP_TLV_ENTITY_ID, .eid = {256, 2}}, "06 02 0100");
    /* Entity ID in 8 bytes. */
    tlv_vector(&(cfdp_tlv){.type = CFDP_TLV_ENTITY_ID, .eid = {0xfedcba9876543210ull, 8}},
               "06 08 fedcba9876543210");
}

/* ION 4.1.3 writes an empty second-name LV in filestore requests and responses
 * whose action names one file (and needs one in requests); the standard
 * omits it. Both forms decode; empty_second records the ION form, so the
 * same bytes encode again.
 * 00 04  00 01 66 00            request: create file "f", empty second name
 * 01 07  12 01 66 00 02 6e 6f   response: delete file, status 2, "f", empty
 *                               second name, message "no"
 * 01 05  10 01 66 00 00         response: delete file, successful, "f", empty
 *                               second name, empty message */
TEST(vector_ion_filestore_forms)
{
    tlv_vector(&(cfdp_tlv){.type = CFDP_TLV_FS_REQUEST,
                           .action = CFDP_FS_CREATE_FILE,
                           .empty_second = 1,
                           .first = LV("f")},
               "00 04 00 01 66 00");
    tlv_vector(&(cfdp_tlv){.type = CFDP_TLV_FS_RESPONSE,
                           .action = CFDP_FS_DELETE_FILE,
                           .status = CFDP_FS_DELETE_NOT_ALLOWED,
                           .empty_second = 1,
                           .first = LV("f"),
                           .data = LV("no")},
               "01 07 12 01 66 00 02 6e 6f");
    tlv_vector(&(cfdp_tlv){.type = CFDP_TLV_FS_RESPONSE,
                           .action = CFDP_FS_DELETE_FILE,
                           .status = CFDP_FS_SUCCESS,
                           .empty_second = 1,
                           .first = LV("f")},
               "01 05 10 01 66 00 00");
}
