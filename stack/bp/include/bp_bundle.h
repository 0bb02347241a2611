/* BPv7 bundles (RFC 9171): endpoint IDs, the bundle codec and status reports.
 *
 * Decoding is zero-copy: block data are views into the caller's buffer, which
 * must outlive the decoded struct. The decoder never reads past its input and
 * never trusts a declared length. Each failure returns a negative code
 * (TERN_ETRUNCATED, TERN_EMALFORMED, TERN_ECORRUPT for a CRC mismatch,
 * TERN_EOVERFLOW; -ENOMEM only if a bundle of very many blocks found no
 * memory for them) and, through *why, a short
 * static string naming the cause: the pointer is stable per cause, so a caller
 * can log once per distinct cause by comparing pointers.
 *
 * Re-encoding a decoded bundle keeps its encoding choices (definite or
 * indefinite outer array, CRC type per block, block order and numbers, the
 * 2- or 3-element form of each ipn EID), so a bundle that was encoded
 * canonically (shortest integer heads, as ION does) re-encodes to the same
 * bytes.
 */
#ifndef TERN_BP_BUNDLE_H
#define TERN_BP_BUNDLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tern/base.h"
#include "tern/cbor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ endpoint IDs */

/** EID scheme codes (RFC 9171 section 9.7; imc is ION's, docs/multicast.md). */
enum bp_scheme {
    BP_SCHEME_DTN = 1,
    BP_SCHEME_IPN = 2,
    BP_SCHEME_IMC = 3,
};

/** Longest dtn scheme-specific part kept ("//node/service"), in bytes. */
#define BP_DTN_SSP_MAX 255

/** A buffer of this size holds any EID's text form with its NUL. */
#define BP_EID_TEXT_MAX (BP_DTN_SSP_MAX + 8)

/** An endpoint ID. dtn: ssp holds "//node/service" (NUL-terminated),
 * ssp_len 0 means dtn:none. ipn: node.service, node being RFC 9758's
 * fully-qualified node number (allocator identifier << 32 | node number;
 * the default allocator 0 makes it the plain node number). imc: group
 * (node) .service. */
typedef struct bp_eid {
    uint8_t scheme; /**< enum bp_scheme */
    bool ipn3;      /**< ipn: decoded from RFC 9758's [allocator, node, service]
                         form, and encoded in it again; ignored by bp_eid_equal */
    uint64_t node;  /**< ipn fully-qualified node number, imc group number */
    uint64_t service;
    size_t ssp_len;
    char ssp[BP_DTN_SSP_MAX + 1];
} bp_eid;

/** Sets *e to ipn:node.service. */
TERN_API void bp_eid_ipn(bp_eid *e, uint64_t node, uint64_t service);

/** Sets *e to dtn:none. */
TERN_API void bp_eid_none(bp_eid *e);

/** True if *e is dtn:none. */
TERN_API bool bp_eid_is_none(const bp_eid *e);

/** True if a and b name the same endpoint. */
TERN_API bool bp_eid_equal(const bp_eid *a, const bp_eid *b);

/** Parses "ipn:N.S", "ipn:A.N.S" (RFC 9758: allocator A and node N each at
 * most 2^32-1), "imc:G.S", "dtn:none" or "dtn://node/demux". In "ipn:N.S" N
 * is a fully-qualified node number (up to 2^64-1, as RFC 9171 had it), so
 * "ipn:0.N.S" and "ipn:N.S" are the same EID. Errors: TERN_ESYNTAX (with
 * *why), TERN_EOVERFLOW (number too large or ssp too long). why may be NULL. */
TERN_API int bp_eid_parse(const char *text, bp_eid *e, const char **why);

/** Prints *e into out (NUL-terminated if cap > 0): an ipn EID of the default
 * allocator as "ipn:N.S", any other as RFC 9758's "ipn:A.N.S". Returns the
 * text length, or TERN_ENOSPACE if it did not fit (out then holds a cut
 * text), -EINVAL for a bad scheme. */
TERN_API int bp_eid_print(const bp_eid *e, char *out, size_t cap);

/** Encodes *e as RFC 9171 section 4.2.5.1: [1, "//..."], [1, 0] or
 * [2, [node, service]] — or, for an EID decoded from it (ipn3), RFC 9758's
 * [2, [allocator, node, service]], so what was received leaves as it came.
 * -EINVAL for a bad scheme or number (nothing written). imc is ION's
 * [3, [group, service]]. */
TERN_API int bp_eid_encode(tern_cbor_enc *enc, const bp_eid *e);

/** Decodes one EID at the cursor (advanced only on success). An ipn SSP is
 * [fully-qualified node number, service] or RFC 9758's [allocator, node,
 * service] with each at most 2^32-1 (TERN_EOVERFLOW above); anything else
 * is TERN_EMALFORMED. */
TERN_API int bp_eid_decode(tern_cbor_dec *d, bp_eid *e, const char **why);

/* --------------------------------------------------------------- bundles */

/** Bundle processing control flags (RFC 9171 section 4.2.3). */
enum {
    BP_FLAG_FRAGMENT = 0x000001,
    BP_FLAG_ADMIN = 0x000002,
    BP_FLAG_NO_FRAGMENT = 0x000004,
    BP_FLAG_ACK_REQ = 0x000020,
    BP_FLAG_STATUS_TIME = 0x000040,
    BP_FLAG_RPT_RECEPTION = 0x004000,
    BP_FLAG_RPT_FORWARD = 0x010000,
    BP_FLAG_RPT_DELIVERY = 0x020000,
    BP_FLAG_RPT_DELETION = 0x040000,
};

/** Block processing control flags (RFC 9171 section 4.2.4). */
enum {
    BP_BLK_REPLICATE = 0x01,     /**< replicate in every fragment */
    BP_BLK_REPORT = 0x02,        /**< report if block can't be processed */
    BP_BLK_DELETE_BUNDLE = 0x04, /**< delete bundle if block can't be processed */
    BP_BLK_DISCARD = 0x10,       /**< discard block if it can't be processed */
};

/** Block type codes. */
enum {
    BP_BLOCK_PAYLOAD = 1,
    BP_BLOCK_PREV_NODE = 6,
    BP_BLOCK_AGE = 7,
    BP_BLOCK_HOP_COUNT = 10,
};

/** CRC types. */
enum {
    BP_CRC_NONE = 0,
    BP_CRC_16 = 1,  /**< CRC-16/X.25, 2 bytes */
    BP_CRC_32C = 2, /**< CRC-32C, 4 bytes */
};

/** Canonical blocks (payload included) a bp_bundle holds in itself. RFC 9171
 * sets no limit: a decoded bundle with more keeps all of them in memory it
 * owns (bp_bundle.ext), freed by bp_bundle_release(). */
#define BP_MAX_BLOCKS 24

/** The primary block. */
typedef struct bp_primary {
    uint64_t version; /**< always 7 */
    uint64_t flags;   /**< BP_FLAG_* */
    uint8_t crc_type; /**< BP_CRC_* */
    uint32_t crc;     /**< the CRC as received (decode only) */
    bp_eid dest, src, report_to;
    uint64_t ctime_ms; /**< creation time, ms since 2000-01-01 (DTN time), 0 if none */
    uint64_t seq;      /**< creation timestamp sequence number */
    uint64_t lifetime_ms;
    uint64_t frag_offset;   /**< only with BP_FLAG_FRAGMENT */
    uint64_t total_adu_len; /**< only with BP_FLAG_FRAGMENT */
} bp_primary;

/** A canonical block. For payload and unknown types, data/data_len is the
 * block-type-specific data (a view). For previous node, bundle age and hop
 * count the encoder builds the data from the bp_bundle fields instead, so an
 * agent can update them; the decoder still sets the view. */
typedef struct bp_block {
    uint64_t type;
    uint64_t number;
    uint64_t flags;   /**< BP_BLK_* */
    uint8_t crc_type; /**< BP_CRC_* */
    uint32_t crc;     /**< as received (decode only) */
    const uint8_t *data;
    size_t data_len;
} bp_block;

/** A whole bundle. Its blocks are bp_bundle_blocks(b)[0..n_blocks): blocks
 * itself while ext is NULL (so a bundle built by hand, zeroed, uses blocks),
 * else ext, which the decoder allocates for a bundle of more than
 * BP_MAX_BLOCKS blocks. The payload block is always the last. A copy of the
 * struct shares ext: release only one of them. */
typedef struct bp_bundle {
    bool definite; /**< outer array is definite-length (default: indefinite) */
    bp_primary pri;
    size_t n_blocks;
    bp_block blocks[BP_MAX_BLOCKS];
    bp_block *ext;  /**< all the blocks, when they did not fit in blocks */
    size_t ext_cap; /**< entries of ext */
    /* decoded known extension blocks */
    bool has_prev_node, has_age, has_hop_count;
    bp_eid prev_node;
    uint64_t age_ms;
    uint64_t hop_limit, hop_count;
    /** extension blocks that came numbered 0 and were given free numbers */
    unsigned renumbered;
} bp_bundle;

/** The bundle's blocks: ext if set, else blocks. */
static inline bp_block *bp_bundle_blocks(bp_bundle *b)
{
    return b->ext ? b->ext : b->blocks;
}

/** As bp_bundle_blocks, for a const bundle. */
static inline const bp_block *bp_bundle_cblocks(const bp_bundle *b)
{
    return b->ext ? b->ext : b->blocks;
}

/** The payload block (the last). */
static inline const bp_block *bp_bundle_payload(const bp_bundle *b)
{
    return &bp_bundle_cblocks(b)[b->n_blocks - 1];
}

/** Frees what a decode allocated for a bundle of many blocks (ext) and sets
 * it to NULL; harmless on a bundle with none. */
TERN_API void bp_bundle_release(bp_bundle *b);

/** Makes room for n blocks: while n <= BP_MAX_BLOCKS nothing changes; above,
 * the blocks move to ext (allocated, or grown). -ENOMEM. */
TERN_API int bp_bundle_reserve(bp_bundle *b, size_t n);

/** Decodes the bundle at the start of buf[0..len); *used (may be NULL) gets the
 * bytes it took, so bundles back to back decode one after the other. Checks
 * version 7, CRCs, block numbers (unique, payload number 1), exactly one
 * payload block and it last, the known extension blocks, fragment fields.
 * An extension block numbered 0 (RFC 9171 gives 0 to the primary block
 * only, but ION 4.1.3 numbers every extension block of a fragment 0) is
 * taken and given the next free number (counted in b->renumbered), so the
 * bundle re-encodes valid.
 * Any number of blocks is taken: above BP_MAX_BLOCKS they go to ext, which
 * the caller frees with bp_bundle_release() (on failure nothing is left
 * allocated). *b is overwritten: release a previous decode's ext first. */
TERN_API int bp_bundle_decode(const uint8_t *buf, size_t len, bp_bundle *b, size_t *used,
                              const char **why);

/** Encodes *b into buf[0..cap), computing each block's CRC. *len gets the
 * encoded length (or the length needed, with TERN_ENOSPACE). buf may be NULL
 * with cap 0 to size. -EINVAL (with *why) for a bundle that would not decode:
 * no payload last, bad CRC type, an EID with no encoding, more blocks than blocks or ext hold. */
TERN_API int bp_bundle_encode(const bp_bundle *b, uint8_t *buf, size_t cap, size_t *len,
                              const char **why);

/** As bp_bundle_encode, without copying the payload: buf gets the bytes
 * before the payload block's data (*head_len of them) followed by those after
 * it (*tail_len: its CRC field and the closing break, if any). The bundle is
 * head, payload data, tail; CRCs are computed as for the whole. */
TERN_API int bp_bundle_encode_split(const bp_bundle *b, uint8_t *buf, size_t cap,
                                    size_t *head_len, size_t *tail_len, const char **why);

/** Looks up a block by number; NULL if none. */
TERN_API const bp_block *bp_bundle_block(const bp_bundle *b, uint64_t number);

/** True for block types this codec understands (1, 6, 7, 10). */
TERN_API bool bp_block_type_known(uint64_t type);

/** What to do with a block that can't be processed (RFC 9171 section 4.2.4). */
typedef enum bp_unknown_action {
    BP_UNKNOWN_KEEP = 0,          /**< forward the block unchanged */
    BP_UNKNOWN_DISCARD_BLOCK = 1, /**< drop the block, keep the bundle */
    BP_UNKNOWN_DELETE_BUNDLE = 2, /**< delete the bundle (reason: block unintelligible) */
} bp_unknown_action;

/** The action for an unprocessable block with these flags; *report (may be
 * NULL) says whether a status report is requested for it. */
TERN_API bp_unknown_action bp_block_unknown_action(uint64_t flags, bool *report);

/* ------------------------------------------------ administrative records */

/** Administrative record type codes. */
enum {
    BP_ADMIN_STATUS_REPORT = 1,
};

/** Status report reason codes (RFC 9171 section 6.1.1). */
enum {
    BP_REASON_NONE = 0,
    BP_REASON_EXPIRED = 1,
    BP_REASON_FORWARD_UNIDIR = 2,
    BP_REASON_CANCELLED = 3,
    BP_REASON_DEPLETED = 4,
    BP_REASON_DEST_UNAVAILABLE = 5,   /**< destination endpoint ID unavailable */
    BP_REASON_EID_UNINTELLIGIBLE = 5, /**< RFC 5050's name for code 5 */
    BP_REASON_NO_ROUTE = 6,
    BP_REASON_NO_CONTACT = 7,
    BP_REASON_BLOCK_UNINTELLIGIBLE = 8,
    BP_REASON_HOP_LIMIT = 9,
    BP_REASON_TRAFFIC_PARED = 10,
    BP_REASON_BLOCK_UNSUPPORTED = 11,
};

/** One status assertion: [asserted] or [true, time]. */
typedef struct bp_status_item {
    bool asserted;
    bool has_time; /**< only when asserted */
    uint64_t time_ms;
} bp_status_item;

/** A bundle status report (RFC 9171 section 6.1.1). */
typedef struct bp_status_report {
    bp_status_item received, forwarded, delivered, deleted;
    uint64_t reason;
    bp_eid source;
    uint64_t ctime_ms, seq;
    bool is_fragment;
    uint64_t frag_offset, frag_len;
} bp_status_report;

/** An administrative record [type, content]. Other types than status reports
 * keep their content as a view of one CBOR item. */
typedef struct bp_admin_record {
    uint64_t type;
    bp_status_report sr; /**< type BP_ADMIN_STATUS_REPORT */
    const uint8_t *content;
    size_t content_len;
} bp_admin_record;

/** Decodes an administrative record: buf[0..len) (a payload) must be exactly
 * one record. */
TERN_API int bp_admin_decode(const uint8_t *buf, size_t len, bp_admin_record *r,
                             const char **why);

/** Encodes *r; *len as for bp_bundle_encode(). -EINVAL for an unencodable
 * record (a time on an unasserted item). */
TERN_API int bp_admin_encode(const bp_admin_record *r, uint8_t *buf, size_t cap,
                             size_t *len);

#ifdef __cplusplus
}
#endif
#endif
