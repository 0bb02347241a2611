/* Self-Delimiting Numeric Values (RFC 6256), as LTP uses them.
 *
 * Seven value bits per byte, most significant group first; every byte but the
 * last has its top bit set. Tern decodes values up to 64 bits and rejects
 * anything longer or wider instead of wrapping.
 */
#ifndef TERN_SDNV_H
#define TERN_SDNV_H

#include "tern/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Longest SDNV that can carry a 64-bit value. */
#define TERN_SDNV_MAX_LEN 10

/** Bytes needed to encode v (1..10). */
TERN_API size_t tern_sdnv_len(uint64_t v);

/**
 * Encodes v into buf (capacity cap). Returns the number of bytes written (> 0),
 * or TERN_ENOSPACE if cap is too small (nothing is written then).
 */
TERN_API int tern_sdnv_encode(uint64_t v, uint8_t *buf, size_t cap);

/**
 * Decodes one SDNV from buf[0..len). On success stores the value in *v and
 * returns the number of bytes consumed (> 0). Errors: TERN_ETRUNCATED (buffer
 * ends inside the SDNV), TERN_EOVERFLOW (value wider than 64 bits),
 * TERN_EMALFORMED (an SDNV longer than 10 bytes, which no 64-bit value needs).
 */
TERN_API int tern_sdnv_decode(const uint8_t *buf, size_t len, uint64_t *v);

#ifdef __cplusplus
}
#endif
#endif
