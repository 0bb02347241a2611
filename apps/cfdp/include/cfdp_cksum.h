/* libterncfdp: the file checksums a Metadata PDU names (CCSDS 727.0-B-5
 * 4.2.2 and SANA's checksum identifiers).
 *
 * - 0, modular: the sum modulo 2^32 of the file taken as big-endian 32-bit
 *   words aligned to offset 0 (a last short word padded with zeros). Each
 *   byte's weight depends only on its offset, so segments may come in any
 *   order.
 * - 1, Proximity-1 CRC-32: generator 0x00A00805 (x^32 + x^23 + x^21 + x^11 +
 *   x^2 + 1, CCSDS 211.2-B), MSB first, register preset to zero, no final
 *   XOR. The generator is public; the preset and bit order are those of the
 *   two public CFDP implementations that offer this type (yamcs, OpenC3),
 *   which name no check value to compare with (docs/cfdp.md).
 * - 2, CRC-32C (Castagnoli) and 3, CRC-32 (IEEE 802.3): as tern/crc.h.
 * - 15, null: always 0.
 * Other types are not defined: cfdp_cksum_init() refuses them, and the
 * entity answers with CFDP_COND_UNSUPPORTED_CHECKSUM.
 *
 * cfdp_cksum_update() takes each segment with its file offset, in any
 * order. The CRCs are kept as the register of the bytes so far, as if the
 * file ended at the highest end seen (bytes not yet fed count as zeros);
 * a segment that lands before that end is moved into place by multiplying
 * by x^(8n) modulo the generator, one that extends it in order just
 * continues the register. Every byte must be fed exactly once: overlapping
 * or repeated segments give a wrong checksum (the receiver feeds only the
 * bytes that filled a gap). The state is a plain struct, so it can be saved
 * with a transaction and restored.
 */
#ifndef TERN_CFDP_CKSUM_H
#define TERN_CFDP_CKSUM_H

#include <stddef.h>
#include <stdint.h>

#include "tern/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A running checksum (plain data: may be copied, saved and restored). */
typedef struct cfdp_cksum {
    uint8_t type;   /**< enum cfdp_checksum_type */
    uint32_t value; /**< modular: the sum; CRCs: the register of [0, end) */
    uint64_t end;   /**< CRCs: the highest end offset fed so far */
} cfdp_cksum;

/** 1 if Tern computes checksum type t (0, 1, 2, 3, 15), else 0. */
TERN_API int cfdp_cksum_supported(unsigned type);

/** Starts *c for type; -ENOTSUP for a type Tern does not compute. */
TERN_API int cfdp_cksum_init(cfdp_cksum *c, unsigned type);

/** Adds data[0..len), the file's bytes at [offset, offset + len); any order.
 * TERN_EOVERFLOW if offset + len passes 2^64. */
TERN_API int cfdp_cksum_update(cfdp_cksum *c, uint64_t offset, const void *data,
                               size_t len);

/** The checksum of the file of file_size bytes fed so far (bytes never fed
 * count as zeros). TERN_EMALFORMED if data past file_size was fed. */
TERN_API int cfdp_cksum_final(const cfdp_cksum *c, uint64_t file_size, uint32_t *out);

/** One call: the checksum of type of buf[0..len) taken as a whole file. */
TERN_API int cfdp_cksum_buf(unsigned type, const void *buf, size_t len, uint32_t *out);

#ifdef __cplusplus
}
#endif
#endif
