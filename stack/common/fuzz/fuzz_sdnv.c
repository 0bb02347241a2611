/* libFuzzer target: the SDNV decoder must never over-read, and every value it
 * accepts must re-encode to a form that decodes to the same value. */
#include <stdlib.h>
#include <string.h>

#include "tern/sdnv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* Copy to an exact-size heap buffer so ASan catches any over-read. */
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    size_t off = 0;
    while (off < size) {
        uint64_t v, back;
        int n = tern_sdnv_decode(buf + off, size - off, &v);
        if (n < 0)
            break;
        if ((size_t)n > size - off)
            abort();
        uint8_t enc[TERN_SDNV_MAX_LEN];
        int m = tern_sdnv_encode(v, enc, sizeof enc);
        if (m <= 0 || m > n || tern_sdnv_decode(enc, (size_t)m, &back) != m || back != v)
            abort();
        off += (size_t)n;
    }
    free(buf);
    return 0;
}
