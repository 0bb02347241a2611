/* libFuzzer target: the CFDP PDU decoder must never over-read and must give a
 * reason with every refusal; whatever it accepts must encode again (from its
 * raw lists and from the same lists as arrays, to the same bytes) into bytes
 * that decode to the same PDU, and encoding that PDU must give the same bytes
 * (the encoder's form is a fixed point). The first input byte picks the
 * decode flags. */
#include <stdlib.h>
#include <string.h>

#include "cfdp_pdu.h"
#include "pdu_eq.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t out1[CFDP_PDU_MAX], out2[CFDP_PDU_MAX], out3[CFDP_PDU_MAX];
static cfdp_tlv tlvs[65536 / 2];
static cfdp_range segs[65536 / 8];

/* The decoded lists of p copied into arrays (items form). */
static void to_items(cfdp_pdu *p)
{
    cfdp_tlvs *list = p->kind == CFDP_METADATA   ? &p->u.md.options
                      : p->kind == CFDP_FINISHED ? &p->u.fin.responses
                                                 : NULL;
    if (list) {
        size_t pos = 0, n = 0;
        while (cfdp_tlvs_next(list, &pos, &tlvs[n]) == 0)
            n++;
        if (n != list->count)
            abort();
        *list = (cfdp_tlvs){.items = tlvs, .count = n};
    }
    if (p->kind == CFDP_NAK) {
        for (size_t i = 0; i < p->u.nak.segments.count; i++)
            segs[i] = cfdp_nak_segment(&p->u.nak.segments, i);
        p->u.nak.segments =
            (cfdp_ranges){.items = segs, .count = p->u.nak.segments.count};
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned flags = data[0] & 1 ? CFDP_DECODE_CRC_REQUIRED : 0;
    size--;
    uint8_t *buf = malloc(size ? size : 1); /* exact size: ASan sees any over-read */
    if (!buf)
        return 0;
    memcpy(buf, data + 1, size);

    cfdp_pdu p, q;
    const char *why = NULL;
    int rc = cfdp_pdu_decode(buf, size, flags, &p, &why);
    if (rc != 0) {
        if (rc > 0 || !why)
            abort();
        free(buf);
        return 0;
    }
    cfdp_header h;
    size_t hl;
    if (cfdp_header_decode(buf, size, &h, &hl, NULL) != 0 || !cfdp_header_eq(&h, &p.hdr))
        abort();

    size_t n1, n2, n3, sz;
    if (cfdp_pdu_check(&p, &why) != 0 || cfdp_pdu_encode(&p, out1, sizeof out1, &n1) != 0)
        abort();
    if (cfdp_pdu_size(&p, &sz) != 0 || sz != n1 || n1 > size)
        abort();
    if (cfdp_pdu_decode(out1, n1, flags, &q, &why) != 0 || !cfdp_pdu_eq(&p, &q))
        abort();
    if (cfdp_pdu_encode(&q, out2, sizeof out2, &n2) != 0 || n2 != n1 ||
        memcmp(out1, out2, n1) != 0)
        abort();
    to_items(&p);
    if (cfdp_pdu_encode(&p, out3, sizeof out3, &n3) != 0 || n3 != n1 ||
        memcmp(out1, out3, n1) != 0)
        abort();
    free(buf);
    return 0;
}
