/* libFuzzer target: the STCP framing decoder must never over-read; every
 * bundle it frames must lie inside the input, and its length must re-encode
 * to a head that frames the same bytes. */
#include <stdlib.h>
#include <string.h>

#include "bp_tcpcl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t off = 0;
    while (off < size) {
        const uint8_t *d;
        size_t len, used;
        if (stcp_decode(data + off, size - off, 1 << 20, &d, &len, &used) != 0)
            break;
        if (used > size - off || d < data + off || d + len > data + off + used)
            abort();
        volatile uint8_t sink = 0;
        for (size_t i = 0; i < len; i++)
            sink ^= d[i];
        (void)sink;
        uint8_t h[16], *frame = malloc(len + 16);
        if (!frame)
            return 0;
        size_t hl = STCP_HDR_LEN;
        if (stcp_encode_hdr(h, len) != 0)
            abort();
        memcpy(frame, h, hl);
        memcpy(frame + hl, d, len);
        const uint8_t *d2;
        size_t len2, used2;
        if (stcp_decode(frame, hl + len, 1 << 20, &d2, &len2, &used2) != 0 ||
            len2 != len || used2 != hl + len || memcmp(d2, d, len) != 0)
            abort();
        free(frame);
        off += used;
    }
    return 0;
}
