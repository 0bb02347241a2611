/* CFDP PDUs that a real ION 4.1.3 sent to a Tern node, decoded and encoded
 * again byte for byte.
 *
 * The captures are the .hex files of pytests/cfdp/data/ion (README.md there says how and
 * when they were made): one UDP payload per line, each a BPv7 bundle from
 * ipn:2.64 to ipn:1.65 whose payload block is one CFDP PDU. This test takes
 * each bundle apart with the common CBOR reader (only as far as the payload
 * block), decodes the PDU with cfdp_pdu_decode(), checks what the capture is
 * known to hold, and encodes the decoded PDU again: the bytes must be ION's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfdp_pdu.h"
#include "tern/cbor.h"
#include "tern_test.h"

#ifndef CFDP_ION_DATA
#error "CFDP_ION_DATA (pytests/cfdp/data/ion) must be defined by the build"
#endif

#define MAX_GRAMS 16
#define GRAM_MAX  70000

typedef struct capture {
    size_t n;
    size_t len[MAX_GRAMS];
    uint8_t *gram[MAX_GRAMS];
} capture;

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Reads the capture's datagrams (lines of hex; '#' lines are comments). */
static void load(const char *name, capture *cap)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", CFDP_ION_DATA, name);
    FILE *f = fopen(path, "r");
    CHECK_MSG(f != NULL, "%s: %s", path, strerror(errno));
    memset(cap, 0, sizeof *cap);
    static char line[2 * GRAM_MAX + 2];
    while (fgets(line, sizeof line, f)) {
        size_t l = strcspn(line, "\r\n");
        CHECK_MSG(line[l] != '\0' || feof(f), "%s: a line longer than %d bytes", name,
                  GRAM_MAX);
        if (l == 0 || line[0] == '#')
            continue;
        CHECK_MSG(l % 2 == 0, "%s: odd number of hex digits", name);
        CHECK(cap->n < MAX_GRAMS);
        uint8_t *g = malloc(l / 2);
        CHECK(g != NULL);
        for (size_t i = 0; i < l / 2; i++) {
            int hi = hexval(line[2 * i]), lo = hexval(line[2 * i + 1]);
            CHECK_MSG(hi >= 0 && lo >= 0, "%s: not hex", name);
            g[i] = (uint8_t)(hi << 4 | lo);
        }
        cap->gram[cap->n] = g;
        cap->len[cap->n++] = l / 2;
    }
    fclose(f);
}

static void release(capture *cap)
{
    for (size_t i = 0; i < cap->n; i++)
        free(cap->gram[i]);
}

/* The payload block's data of a BPv7 bundle that is not a fragment. */
static void payload_of(const uint8_t *b, size_t n, const uint8_t **pay, size_t *plen)
{
    tern_cbor_dec d;
    uint64_t count, v;
    tern_cbor_dec_init(&d, b, n);
    CHECK_OK(tern_cbor_dec_array(&d, &count));
    CHECK_EQ_U64(count, TERN_CBOR_INDEF); /* ION's bundles are indefinite arrays */
    CHECK_OK(tern_cbor_dec_array(&d, &count));
    CHECK(count >= 8);
    CHECK_OK(tern_cbor_dec_uint(&d, &v));
    CHECK_EQ_U64(v, 7);
    CHECK_OK(tern_cbor_dec_uint(&d, &v));
    CHECK_MSG(!(v & 1), "a fragment: this test takes whole bundles");
    for (uint64_t i = 2; i < count; i++)
        CHECK_OK(tern_cbor_skip(&d));
    *pay = NULL;
    while (!tern_cbor_at_break(&d)) {
        uint64_t type, num, flags, crc;
        CHECK_OK(tern_cbor_dec_array(&d, &count));
        CHECK(count == 5 || count == 6);
        CHECK_OK(tern_cbor_dec_uint(&d, &type));
        CHECK_OK(tern_cbor_dec_uint(&d, &num));
        CHECK_OK(tern_cbor_dec_uint(&d, &flags));
        CHECK_OK(tern_cbor_dec_uint(&d, &crc));
        const uint8_t *data;
        size_t dlen;
        CHECK_OK(tern_cbor_dec_bytes(&d, &data, &dlen));
        if (count == 6)
            CHECK_OK(tern_cbor_skip(&d));
        if (type == 1) {
            *pay = data;
            *plen = dlen;
        }
    }
    CHECK_OK(tern_cbor_dec_break(&d));
    CHECK(tern_cbor_dec_done(&d));
    CHECK_MSG(*pay != NULL, "no payload block");
}

/* Decodes every PDU of the capture, encodes it again (ION's bytes), and
 * checks the transaction: Metadata, file data covering size bytes in order,
 * EOF, all unacknowledged, entity 2 to entity 1. Returns the Metadata's
 * options through *opts (into cap's memory). */
static void replay(const char *name, size_t size, capture *cap, cfdp_tlvs *opts)
{
    load(name, cap);
    CHECK_MSG(cap->n >= 2, "%s: %zu datagrams", name, cap->n);
    uint64_t covered = 0, tsn = 0;
    static uint8_t out[CFDP_PDU_MAX];
    for (size_t i = 0; i < cap->n; i++) {
        const uint8_t *p;
        size_t plen = 0, olen = 0;
        payload_of(cap->gram[i], cap->len[i], &p, &plen);
        cfdp_pdu pdu;
        const char *why = NULL;
        int rc = cfdp_pdu_decode(p, plen, 0, &pdu, &why);
        CHECK_MSG(rc == 0, "%s: PDU %zu: %s (%d)", name, i, why ? why : "?", rc);
        CHECK_EQ_U64(pdu.hdr.src, 2);
        CHECK_EQ_U64(pdu.hdr.dst, 1);
        CHECK_EQ_INT(pdu.hdr.mode, CFDP_UNACKNOWLEDGED);
        CHECK_EQ_INT(pdu.hdr.direction, CFDP_TOWARD_RECEIVER);
        if (i == 0)
            tsn = pdu.hdr.tsn;
        CHECK_EQ_U64(pdu.hdr.tsn, tsn);
        rc = cfdp_pdu_encode(&pdu, out, sizeof out, &olen);
        CHECK_MSG(rc == 0, "%s: PDU %zu does not encode again (%d)", name, i, rc);
        CHECK_EQ_INT(olen, plen);
        CHECK_MSG(memcmp(out, p, plen) == 0, "%s: PDU %zu encodes to other bytes", name,
                  i);
        if (i == 0) {
            CHECK_EQ_INT(pdu.kind, CFDP_METADATA);
            CHECK_EQ_U64(pdu.u.md.file_size, size);
            CHECK_EQ_INT(pdu.u.md.closure, 0);
            *opts = pdu.u.md.options;
        } else if (i == cap->n - 1) {
            CHECK_EQ_INT(pdu.kind, CFDP_EOF);
            CHECK_EQ_U64(pdu.u.eof.file_size, size);
            CHECK_EQ_INT(pdu.u.eof.condition, CFDP_COND_NO_ERROR);
        } else {
            CHECK_EQ_INT(pdu.kind, CFDP_FILE_DATA);
            CHECK_EQ_U64(pdu.u.fd.offset, covered);
            covered += pdu.u.fd.len;
        }
    }
    CHECK_EQ_U64(covered, size);
}

/* cfdptest's put: no options in the Metadata. */
TEST(ion_cfdptest_class1_pdus_decode_and_encode_byte_for_byte)
{
    capture cap;
    cfdp_tlvs opts;
    replay("ion413-cfdp-class1-to-tern.hex", 100003, &cap, &opts);
    CHECK_EQ_INT(cap.n, 4);
    size_t pos = 0;
    cfdp_tlv t;
    CHECK_RC(cfdp_tlvs_next(&opts, &pos, &t), TERN_EEND);
    release(&cap);
}

/* bpcp's put: a fault handler override for each of the 16 condition codes,
 * reserved 12 and 13 included, which Tern's decoder used to refuse (so the
 * whole Metadata, and the file, was dropped). */
TEST(ion_bpcp_metadata_with_16_fault_handler_overrides_accepted)
{
    capture cap;
    cfdp_tlvs opts;
    replay("ion413-bpcp-class1-to-tern.hex", 100003, &cap, &opts);
    size_t pos = 0, n = 0;
    cfdp_tlv t;
    unsigned seen = 0;
    int rc;
    while ((rc = cfdp_tlvs_next(&opts, &pos, &t)) == 0) {
        CHECK_EQ_INT(t.type, CFDP_TLV_FAULT_HANDLER);
        CHECK_EQ_INT(t.condition, n); /* in condition order, 0 to 15 */
        seen |= 1u << t.condition;
        n++;
    }
    CHECK_RC(rc, TERN_EEND);
    CHECK_EQ_INT(n, 16);
    CHECK_EQ_INT(seen, 0xffff);
    release(&cap);
}
