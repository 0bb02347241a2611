/* Test helper: hex text ("24 00 16 ...", spaces ignored) to bytes. */
#ifndef CFDP_TEST_HEX_H
#define CFDP_TEST_HEX_H

#include <ctype.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* Bytes of hex into out (cap bytes); aborts on a malformed string. */
static inline size_t hex(const char *text, uint8_t *out, size_t cap)
{
    size_t n = 0;
    int hi = -1;
    for (const char *c = text; *c; c++) {
        if (isspace((unsigned char)*c))
            continue;
        int v =
            isdigit((unsigned char)*c) ? *c - '0' : tolower((unsigned char)*c) - 'a' + 10;
        if (v < 0 || v > 15 || (hi < 0 && n >= cap))
            abort();
        if (hi < 0) {
            hi = v;
        } else {
            out[n++] = (uint8_t)(hi << 4 | v);
            hi = -1;
        }
    }
    if (hi >= 0)
        abort();
    return n;
}

#endif
