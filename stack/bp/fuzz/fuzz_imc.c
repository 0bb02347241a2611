/* libFuzzer target: the imc petition, list (block 195) and briefing decoders
 * (bp_imc.h) never over-read; what they accept re-encodes to bytes that
 * decode to the same values. The first byte picks the decoder. */
#include <stdlib.h>
#include <string.h>

#include "bp_imc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t v[BP_IMC_LIST_MAX], w[BP_IMC_LIST_MAX];
static uint8_t out[9 * BP_IMC_LIST_MAX + 32];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int which = data[0] % 3;
    data++;
    size--;
    /* a copy of just the bytes, so that ASan sees any over-read */
    uint8_t *b = malloc(size ? size : 1);
    memcpy(b, data, size);
    const char *why = NULL;
    size_t n = 0, k = 0, len;
    if (which == 0) {
        uint64_t g, g2;
        bool m, m2;
        if (bp_imc_petition_decode(b, size, &g, &m, &why) == 0) {
            if (bp_imc_petition_encode(g, m, out, sizeof out, &len) ||
                bp_imc_petition_decode(out, len, &g2, &m2, &why) || g2 != g || m2 != m)
                abort();
        } else if (!why) {
            abort();
        }
    } else if (which == 1) {
        size_t max = size % 2 ? BP_IMC_LIST_MAX : 16;
        int rc = bp_imc_list_decode(b, size, v, max, &n, &why);
        if (rc == 0) {
            for (size_t i = 1; i < n; i++)
                if (v[i - 1] >= v[i])
                    abort(); /* sorted, no repeats */
            if (bp_imc_list_encode(v, n, out, sizeof out, &len) ||
                bp_imc_list_decode(out, len, w, BP_IMC_LIST_MAX, &k, &why) || k != n ||
                memcmp(v, w, n * sizeof *v))
                abort();
        } else if (!why) {
            abort();
        }
    } else {
        int rc = bp_imc_briefing_decode(b, size, v, BP_IMC_LIST_MAX, &n, &why);
        if (rc == 0) {
            if (bp_imc_briefing_encode(v, n, out, sizeof out, &len) ||
                bp_imc_briefing_decode(out, len, w, BP_IMC_LIST_MAX, &k, &why) ||
                k != n || memcmp(v, w, n * sizeof *v))
                abort();
        } else if (rc != TERN_ENOTFOUND && !why) {
            abort();
        }
    }
    free(b);
    return 0;
}
