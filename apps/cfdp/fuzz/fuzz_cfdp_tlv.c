/* libFuzzer target: the CFDP TLV decoder must never over-read and must give a
 * reason with every refusal; a TLV it accepts must encode into bytes that
 * decode to the same TLV and encode to the same bytes again. The whole input
 * is also walked as a TLV list (as Metadata options and Finished responses
 * are), each TLV checked the same way. */
#include <stdlib.h>
#include <string.h>

#include "cfdp_pdu.h"
#include "pdu_eq.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_one(const cfdp_tlv *t, size_t used)
{
    uint8_t a[300], b[300];
    size_t an, bn, u2;
    cfdp_tlv back;
    if (cfdp_tlv_check(t, NULL) != 0 || cfdp_tlv_encode(t, a, sizeof a, &an) != 0)
        abort();
    if (an > used || an > 257)
        abort();
    if (cfdp_tlv_decode(a, an, &back, &u2, NULL) != 0 || u2 != an ||
        !cfdp_tlv_eq(t, &back))
        abort();
    if (cfdp_tlv_encode(&back, b, sizeof b, &bn) != 0 || bn != an ||
        memcmp(a, b, an) != 0)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *buf = malloc(size ? size : 1); /* exact size: ASan sees any over-read */
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    cfdp_tlv t;
    size_t used;
    const char *why = NULL;
    int rc = cfdp_tlv_decode(buf, size, &t, &used, &why);
    if (rc == 0) {
        if (used < 2 || used > size)
            abort();
        check_one(&t, used);
    } else if (rc > 0 || !why) {
        abort();
    }
    cfdp_tlvs list = {.raw = buf, .raw_len = size};
    size_t pos = 0, last = 0;
    while ((rc = cfdp_tlvs_next(&list, &pos, &t)) == 0) {
        if (pos <= last || pos > size)
            abort();
        check_one(&t, pos - last);
        last = pos;
    }
    if (rc > 0)
        abort();
    free(buf);
    return 0;
}
