/* SDNV codec (RFC 6256). */
#include "tern/sdnv.h"

TERN_API size_t tern_sdnv_len(uint64_t v)
{
    size_t n = 1;
    while (v >>= 7)
        n++;
    return n;
}

TERN_API int tern_sdnv_encode(uint64_t v, uint8_t *buf, size_t cap)
{
    size_t n = tern_sdnv_len(v);
    if (n > cap)
        return TERN_ENOSPACE;
    buf[n - 1] = (uint8_t)(v & 0x7f);
    for (size_t i = n - 1; i > 0; i--) {
        v >>= 7;
        buf[i - 1] = (uint8_t)(0x80 | (v & 0x7f));
    }
    return (int)n;
}

TERN_API int tern_sdnv_decode(const uint8_t *buf, size_t len, uint64_t *v)
{
    uint64_t acc = 0;
    for (size_t i = 0; i < TERN_SDNV_MAX_LEN; i++) {
        if (i == len)
            return TERN_ETRUNCATED;
        /* Leading zero groups are legal, so check overflow, not length. */
        if (acc >> 57)
            return TERN_EOVERFLOW;
        acc = (acc << 7) | (buf[i] & 0x7f);
        if (!(buf[i] & 0x80)) {
            *v = acc;
            return (int)(i + 1);
        }
    }
    return TERN_EMALFORMED;
}
