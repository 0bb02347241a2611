/* LTP segments (RFC 5326 section 3): the wire codec.
 *
 * Every field of every segment type is encoded and decoded exactly as the
 * RFC lays it out: version and type in the first byte, SDNV session ID,
 * extension counts, header extensions, content, trailer extensions. Decoding
 * never reads past the buffer and never trusts a length; unknown extensions
 * are kept as (tag, length, value) views and otherwise skipped.
 */
#ifndef TERN_LTP_SEG_H
#define TERN_LTP_SEG_H

#include <stddef.h>
#include <stdint.h>

#include "tern/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Segment type codes (RFC 5326 section 3.1.3, with erratum 1657). */
enum ltp_seg_type {
    LTP_RD = 0x0,         /**< red data, not a checkpoint */
    LTP_RD_CP = 0x1,      /**< red data, checkpoint */
    LTP_RD_CP_EORP = 0x2, /**< red data, checkpoint, end of red part */
    LTP_RD_CP_EOB = 0x3,  /**< red data, checkpoint, end of red part, end of block */
    LTP_GD = 0x4,         /**< green data */
    LTP_GD_5 = 0x5,       /**< green data, undefined flags (accepted as green) */
    LTP_GD_6 = 0x6,       /**< green data, undefined flags (accepted as green) */
    LTP_GD_EOB = 0x7,     /**< green data, end of block */
    LTP_RS = 0x8,         /**< report segment */
    LTP_RA = 0x9,         /**< report acknowledgment */
    LTP_CTRL_A = 0xa,     /**< undefined control segment */
    LTP_CTRL_B = 0xb,     /**< undefined control segment */
    LTP_CS = 0xc,         /**< cancel from block sender */
    LTP_CAS = 0xd,        /**< cancel acknowledgment to block sender */
    LTP_CR = 0xe,         /**< cancel from block receiver */
    LTP_CAR = 0xf,        /**< cancel acknowledgment to block receiver */
};

/** Cancel reason codes (RFC 5326 section 3.2.4). */
enum ltp_reason {
    LTP_USR_CNCLD = 0,  /**< client service cancelled the session */
    LTP_UNREACH = 1,    /**< unreachable client service */
    LTP_RLEXC = 2,      /**< retransmission limit exceeded */
    LTP_MISCOLORED = 3, /**< received red after green, or the reverse */
    LTP_SYS_CNCLD = 4,  /**< a system error cancelled the session */
    LTP_RXMTCYCEXC = 5, /**< retransmission cycles (repair rounds) exceeded */
};

/** Most extensions a segment can carry in its header or its trailer. */
#define LTP_MAX_EXT 15

/** Tern's header extension on a report segment (tag from the private and
 * experimental range 0xC0-0xFF of IANA's LTP Extension Tags, no value):
 * the receiver has the block but no room to take it yet; its claims stop
 * short of the red part's end, and the sender should keep the block and
 * wait rather than resend or give up. Other implementations skip it. */
#define LTP_EXT_NO_ROOM 0xC8

/** One reception claim, offset relative to the report's lower bound. */
typedef struct ltp_claim {
    uint64_t offset;
    uint64_t length;
} ltp_claim;

/** One extension, as a view into the segment. */
typedef struct ltp_ext {
    uint8_t tag;
    uint64_t len;
    const uint8_t *value;
} ltp_ext;

/** A decoded (or to-be-encoded) segment. Which fields matter depends on type. */
typedef struct ltp_seg {
    uint8_t type;     /**< enum ltp_seg_type */
    uint64_t engine;  /**< session originator engine ID */
    uint64_t session; /**< session number */
    uint8_t n_hext, n_text;
    ltp_ext hext[LTP_MAX_EXT], text[LTP_MAX_EXT];

    /* data segments (types 0x0-0x7) */
    uint64_t client;     /**< client service ID */
    uint64_t offset;     /**< offset of data in the block */
    uint64_t length;     /**< bytes of data */
    uint64_t cp_serial;  /**< checkpoint serial number (checkpoints only) */
    uint64_t rpt_serial; /**< report serial number (checkpoints only; 0 if none) */
    const uint8_t *data; /**< view into the segment (decode) or source (encode) */

    /* report segment (0x8): rpt_serial, cp_serial as above, and: */
    uint64_t upper, lower;
    uint64_t n_claims; /**< claims in the segment */
    ltp_claim *claims; /**< caller's array (decode: capacity max_claims) */

    /* report acknowledgment (0x9): rpt_serial. cancel (0xc, 0xe): */
    uint8_t reason;
} ltp_seg;

/** True for the data segment types (red or green). */
static inline int ltp_seg_is_data(uint8_t type)
{
    return type <= LTP_GD_EOB;
}

/** True for red data types, and for checkpoints (all red types but 0x0). */
static inline int ltp_seg_is_red(uint8_t type)
{
    return type <= LTP_RD_CP_EOB;
}
static inline int ltp_seg_is_cp(uint8_t type)
{
    return type >= LTP_RD_CP && type <= LTP_RD_CP_EOB;
}

/**
 * Decodes buf[0..len) into *seg. Report claims go to seg->claims, which the
 * caller points at an array of max_claims entries (a report with more claims
 * gives TERN_EFULL). Views in seg point into buf. Errors: TERN_ETRUNCATED,
 * TERN_EMALFORMED (version not 0, an undefined control type, a claim outside
 * its report's bounds, lower > upper, bytes left over after the trailer),
 * TERN_EOVERFLOW (an SDNV wider than 64 bits,
 * offset + length wrapping). A data segment of length 0 decodes; the engine
 * decides what to do with it.
 */
TERN_API int ltp_seg_decode(const uint8_t *buf, size_t len, ltp_seg *seg,
                            size_t max_claims);

/**
 * Encodes *seg into buf[0..cap): returns the length (> 0), or TERN_ENOSPACE
 * if it does not fit, -EINVAL if the segment is inconsistent, or
 * TERN_EOVERFLOW if its length would not fit an int. A data
 * segment's data is copied from seg->data.
 */
TERN_API int ltp_seg_encode(const ltp_seg *seg, uint8_t *buf, size_t cap);

/** Bytes a data segment's header (everything before its data) takes. */
TERN_API size_t ltp_seg_data_hdr_len(const ltp_seg *seg);

/** Name of a segment type ("RD", "RD-CP-EOB", "RS", "CAS", ...). */
TERN_API const char *ltp_seg_type_name(uint8_t type);

/** Name of a cancel reason ("RLEXC", ...), or "unknown". */
TERN_API const char *ltp_reason_name(uint8_t reason);

#ifdef __cplusplus
}
#endif
#endif
