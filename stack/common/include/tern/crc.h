/* The CRCs the DTN protocols use.
 *
 * - CRC-16/X.25 (BPv7 CRC type 1): reflected poly 0x1021, init and xorout 0xFFFF.
 * - CRC-32C/Castagnoli (BPv7 CRC type 2): reflected poly 0x1EDC6F41, init and
 *   xorout 0xFFFFFFFF; uses the SSE4.2 instruction where the CPU has it.
 * - CRC-32 (zlib's, ISO-HDLC): for files and stored records.
 * - CRC-16/CCITT-FALSE (CFDP's PDU CRC, CCSDS 727.0-B-5 4.1.1): poly 0x1021
 *   MSB first, init 0xFFFF, no xorout.
 *
 * Each takes a running value so data can be fed in pieces: start with 0 and
 * pass the previous result back in (the init/xorout steps are internal).
 * CRC-16/CCITT-FALSE has no xorout, so its running value is the register
 * itself: start it with 0xFFFF (TERN_CRC16_CCITT_FALSE_INIT).
 */
#ifndef TERN_CRC_H
#define TERN_CRC_H

#include "tern/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/** CRC-16/X.25 of buf, continuing from crc (0 to start). "123456789" -> 0x906E. */
TERN_API uint16_t tern_crc16_x25(uint16_t crc, const void *buf, size_t len);

/** CRC-32C of buf, continuing from crc (0 to start). "123456789" -> 0xE3069283. */
TERN_API uint32_t tern_crc32c(uint32_t crc, const void *buf, size_t len);

/** The CRC-32C of A followed by B, from crc_a = CRC-32C(A), crc_b = CRC-32C(B)
 * and B's length: lets a receiver check a message whose parts were
 * checksummed separately without reading it again. O(log len_b). */
TERN_API uint32_t tern_crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);

/** CRC-32 (zlib) of buf, continuing from crc (0 to start). "123456789" -> 0xCBF43926. */
TERN_API uint32_t tern_crc32(uint32_t crc, const void *buf, size_t len);

/** The starting value of tern_crc16_ccitt_false(). */
#define TERN_CRC16_CCITT_FALSE_INIT 0xFFFF

/** CRC-16/CCITT-FALSE of buf, continuing from crc (0xFFFF to start).
 * "123456789" -> 0x29B1. */
TERN_API uint16_t tern_crc16_ccitt_false(uint16_t crc, const void *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
