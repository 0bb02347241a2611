/* SHA-256 (FIPS 180-4), for the memfs's digests: small and dependency-free,
 * so libterncfdp does not link a crypto library for what tests compare. */
#ifndef TERN_CFDP_SHA256_H
#define TERN_CFDP_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct cfdp__sha256 {
    uint32_t h[8];
    uint64_t bytes; /* message length so far */
    uint8_t block[64];
    size_t fill; /* bytes in block */
} cfdp__sha256_ctx;

void cfdp__sha256_init(cfdp__sha256_ctx *s);
void cfdp__sha256_update(cfdp__sha256_ctx *s, const void *data, size_t len);
void cfdp__sha256_final(cfdp__sha256_ctx *s, uint8_t out[32]);

#endif
