/* ION's simple TCP convergence layer: a bundle is its length as a 32-bit
 * big-endian integer followed by the bundle's bytes. Nothing else is on the
 * wire but keepalives (ION's stcpclo sends a zero length every few seconds):
 * no handshake, no acknowledgement. */
#include <errno.h>

#include "bp_tcpcl.h"

int stcp_encode_hdr(uint8_t out[STCP_HDR_LEN], size_t len)
{
    if ((uint64_t)len > UINT32_MAX)
        return -EMSGSIZE;
    out[0] = (uint8_t)(len >> 24);
    out[1] = (uint8_t)(len >> 16);
    out[2] = (uint8_t)(len >> 8);
    out[3] = (uint8_t)len;
    return 0;
}

int stcp_decode(const uint8_t *b, size_t n, uint64_t max, const uint8_t **data,
                size_t *len, size_t *used)
{
    if (n < STCP_HDR_LEN)
        return TERN_ETRUNCATED;
    uint32_t l =
        ((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) | ((uint32_t)b[2] << 8) | b[3];
    if (l > max)
        return TERN_EOVERFLOW;
    if (n - STCP_HDR_LEN < l) {
        *used = STCP_HDR_LEN + (size_t)l; /* what to buffer: 32 bits plus 4 fit */
        return TERN_ETRUNCATED;
    }
    *data = b + STCP_HDR_LEN;
    *len = l;
    *used = STCP_HDR_LEN + (size_t)l;
    return 0;
}
