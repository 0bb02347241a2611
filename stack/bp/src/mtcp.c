/* MTCP (draft-ietf-dtn-mtcpcl, what uD3TN speaks): every bundle is sent as
 * one CBOR byte string, definite length, on the TCP stream. */
#include "bp_tcpcl.h"
#include "tern/ckd.h"

size_t mtcp_encode_hdr(uint8_t out[MTCP_HDR_MAX], uint64_t len)
{
    const uint8_t mt = 2u << 5;
    if (len < 24) {
        out[0] = (uint8_t)(mt | len);
        return 1;
    }
    int bytes = len <= 0xff ? 1 : len <= 0xffff ? 2 : len <= 0xffffffffu ? 4 : 8;
    out[0] = (uint8_t)(mt | (bytes == 1 ? 24 : bytes == 2 ? 25 : bytes == 4 ? 26 : 27));
    for (int i = 0; i < bytes; i++)
        out[1 + i] = (uint8_t)(len >> (8 * (bytes - 1 - i)));
    return 1 + (size_t)bytes;
}

int mtcp_decode(const uint8_t *b, size_t n, uint64_t max, const uint8_t **data,
                size_t *len, size_t *used)
{
    if (n < 1)
        return TERN_ETRUNCATED;
    if ((b[0] >> 5) != 2)
        return TERN_EMALFORMED;
    uint8_t ai = b[0] & 0x1f;
    uint64_t l;
    size_t hl;
    if (ai < 24) {
        l = ai;
        hl = 1;
    } else if (ai <= 27) {
        size_t bytes = (size_t)1 << (ai - 24);
        if (n < 1 + bytes)
            return TERN_ETRUNCATED;
        l = 0;
        for (size_t i = 0; i < bytes; i++)
            l = (l << 8) | b[1 + i];
        hl = 1 + bytes;
    } else {
        return TERN_EMALFORMED; /* reserved, or indefinite length */
    }
    if (l > max)
        return TERN_EOVERFLOW;
    if ((uint64_t)(n - hl) < l) {
        uint64_t whole; /* what to buffer, bounded by max above */
        if (!tern_ckd_add(&whole, hl, l) && whole <= SIZE_MAX)
            *used = (size_t)whole;
        return TERN_ETRUNCATED;
    }
    *data = b + hl;
    *len = (size_t)l;
    *used = hl + (size_t)l;
    return 0;
}
