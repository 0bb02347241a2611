/* libterncfdp, the codec: CFDP PDUs and TLVs (CCSDS 727.0-B-5, chapter 5).
 *
 * Plain structs for every PDU and TLV, one decoder and one encoder. Decoding
 * is zero-copy: file data, file names, messages and the raw bytes of TLV
 * lists and NAK segment requests point into the buffer that was decoded, so
 * that buffer must outlive the struct. Decoding never trusts a length: every
 * field is bounded by the data field, the data field by the buffer, and
 * sums of offsets and lengths are checked (tern/ckd.h). A refusal returns a
 * tern/base.h code and sets *why to a fixed text naming what was wrong.
 *
 * Lists (the options of a Metadata PDU, the filestore responses of a
 * Finished PDU, the segment requests of a NAK) have two forms: a decoded
 * list keeps the raw bytes (already checked) and a count; a list to encode
 * gives an array of items. cfdp_tlvs_next() and cfdp_nak_segment() read
 * either form, so a decoded PDU can be encoded again as it is.
 *
 * Spare bits are ignored on decode and written as zero. Values the
 * protocol answers rather than drops (an unsupported checksum type in
 * Metadata) decode; values that make a PDU unreadable or meaningless
 * (version, directive code, reserved condition codes, TLVs in the wrong
 * place, lengths) are refused.
 */
#ifndef TERN_CFDP_PDU_H
#define TERN_CFDP_PDU_H

#include <stddef.h>
#include <stdint.h>

#include "tern/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Bumped whenever a public struct or signature of libterncfdp changes. */
/* 2: cfdp_ctl_* (cfdp_ctl.h); 3: send_file, fs fd; 4: cfdp_ctl's priority and
 * filestore requests; 5: cfdp_ctl_get_to */
#define CFDP_ABI_VERSION 5

/** The ABI version libterncfdp was built with (CFDP_ABI_VERSION). */
TERN_API int tern_cfdp_abi_version(void);

/* ------------------------------------------------------------------ codes */

/** Header: PDU type bit. */
enum cfdp_pdu_type { CFDP_TYPE_DIRECTIVE = 0, CFDP_TYPE_FILE_DATA = 1 };

/** Header: direction bit. */
enum cfdp_direction { CFDP_TOWARD_RECEIVER = 0, CFDP_TOWARD_SENDER = 1 };

/** Header: transmission mode bit. */
enum cfdp_tx_mode { CFDP_ACKNOWLEDGED = 0, CFDP_UNACKNOWLEDGED = 1 };

/** What a PDU is: file data (0) or a file directive code (table 5-4). */
enum cfdp_kind {
    CFDP_FILE_DATA = 0x00,
    CFDP_EOF = 0x04,
    CFDP_FINISHED = 0x05,
    CFDP_ACK = 0x06,
    CFDP_METADATA = 0x07,
    CFDP_NAK = 0x08,
    CFDP_PROMPT = 0x09,
    CFDP_KEEP_ALIVE = 0x0C,
};

/** Condition codes (table 5-5); 12 and 13 are reserved. */
enum cfdp_condition {
    CFDP_COND_NO_ERROR = 0,
    CFDP_COND_ACK_LIMIT = 1,        /**< positive ACK limit reached */
    CFDP_COND_KEEP_ALIVE_LIMIT = 2, /**< keep alive limit reached */
    CFDP_COND_INVALID_MODE = 3,     /**< invalid transmission mode */
    CFDP_COND_FILESTORE_REJECTION = 4,
    CFDP_COND_CHECKSUM_FAILURE = 5, /**< file checksum failure */
    CFDP_COND_FILE_SIZE_ERROR = 6,
    CFDP_COND_NAK_LIMIT = 7,             /**< NAK limit reached */
    CFDP_COND_INACTIVITY = 8,            /**< inactivity detected */
    CFDP_COND_INVALID_STRUCTURE = 9,     /**< invalid file structure */
    CFDP_COND_CHECK_LIMIT = 10,          /**< check limit reached */
    CFDP_COND_UNSUPPORTED_CHECKSUM = 11, /**< unsupported checksum type */
    CFDP_COND_SUSPEND = 14,              /**< Suspend.request received */
    CFDP_COND_CANCEL = 15,               /**< Cancel.request received */
};

/** Finished: delivery code. */
enum cfdp_delivery { CFDP_DATA_COMPLETE = 0, CFDP_DATA_INCOMPLETE = 1 };

/** Finished: file status. */
enum cfdp_file_status {
    CFDP_FILE_DISCARDED = 0,  /**< discarded deliberately */
    CFDP_FILE_REJECTED = 1,   /**< discarded: filestore rejection */
    CFDP_FILE_RETAINED = 2,   /**< retained in the filestore */
    CFDP_FILE_UNREPORTED = 3, /**< status unreported */
};

/** ACK: transaction status. */
enum cfdp_txn_status {
    CFDP_TXN_UNDEFINED = 0,
    CFDP_TXN_ACTIVE = 1,
    CFDP_TXN_TERMINATED = 2,
    CFDP_TXN_UNRECOGNIZED = 3,
};

/** ACK: the directive subtype code the standard gives each acknowledged PDU. */
enum cfdp_ack_subtype { CFDP_ACK_SUBTYPE_EOF = 0, CFDP_ACK_SUBTYPE_FINISHED = 1 };

/** Prompt: the response asked for. */
enum cfdp_prompt_response { CFDP_PROMPT_NAK = 0, CFDP_PROMPT_KEEP_ALIVE = 1 };

/** File data with segment metadata: record continuation state. */
enum cfdp_record {
    CFDP_REC_MIDDLE = 0, /**< neither the start nor the end of a record */
    CFDP_REC_START = 1,
    CFDP_REC_END = 2,
    CFDP_REC_WHOLE = 3, /**< both the start and the end */
};

/** Checksum types (SANA "Checksum Identifiers"). */
enum cfdp_checksum_type {
    CFDP_CKSUM_MODULAR = 0,
    CFDP_CKSUM_PROX1 = 1, /**< Proximity-1 CRC-32 (see cfdp_cksum.h) */
    CFDP_CKSUM_CRC32C = 2,
    CFDP_CKSUM_CRC32 = 3, /**< IEEE 802.3 */
    CFDP_CKSUM_NULL = 15,
};

/** TLV types (table 5-15). */
enum cfdp_tlv_type {
    CFDP_TLV_FS_REQUEST = 0x00,
    CFDP_TLV_FS_RESPONSE = 0x01,
    CFDP_TLV_MSG_TO_USER = 0x02,
    CFDP_TLV_FAULT_HANDLER = 0x04, /**< fault handler override */
    CFDP_TLV_FLOW_LABEL = 0x05,
    CFDP_TLV_ENTITY_ID = 0x06,
};

/** Filestore request and response: action codes. */
enum cfdp_fs_action {
    CFDP_FS_CREATE_FILE = 0,
    CFDP_FS_DELETE_FILE = 1,
    CFDP_FS_RENAME_FILE = 2, /**< second name: the new name */
    CFDP_FS_APPEND_FILE = 3, /**< second name: the file appended to the first */
    CFDP_FS_REPLACE_FILE =
        4, /**< second name: the file whose content replaces the first */
    CFDP_FS_CREATE_DIR = 5,
    CFDP_FS_REMOVE_DIR = 6,
    CFDP_FS_DENY_FILE = 7, /**< delete the file if present */
    CFDP_FS_DENY_DIR = 8,  /**< remove the directory if present */
};

/** Filestore response status codes; their meaning depends on the action. */
enum cfdp_fs_status {
    CFDP_FS_SUCCESS = 0,
    CFDP_FS_NOT_PERFORMED = 15,
    CFDP_FS_CREATE_NOT_ALLOWED = 1,
    CFDP_FS_DELETE_NO_FILE = 1,
    CFDP_FS_DELETE_NOT_ALLOWED = 2,
    CFDP_FS_RENAME_NO_OLD = 1,
    CFDP_FS_RENAME_NEW_EXISTS = 2,
    CFDP_FS_RENAME_NOT_ALLOWED = 3,
    CFDP_FS_APPEND_NO_FIRST = 1,
    CFDP_FS_APPEND_NO_SECOND = 2,
    CFDP_FS_APPEND_NOT_ALLOWED = 3,
    CFDP_FS_REPLACE_NO_FIRST = 1,
    CFDP_FS_REPLACE_NO_SECOND = 2,
    CFDP_FS_REPLACE_NOT_ALLOWED = 3,
    CFDP_FS_MKDIR_CANNOT = 1,
    CFDP_FS_RMDIR_NO_DIR = 1,
    CFDP_FS_RMDIR_NOT_ALLOWED = 2,
    CFDP_FS_DENY_NOT_ALLOWED = 2,
};

/** Fault handler override: handler codes (0 and 5-15 are reserved). */
enum cfdp_handler {
    CFDP_HANDLER_CANCEL = 1,  /**< issue Notice of Cancellation */
    CFDP_HANDLER_SUSPEND = 2, /**< issue Notice of Suspension */
    CFDP_HANDLER_IGNORE = 3,  /**< ignore the error */
    CFDP_HANDLER_ABANDON = 4, /**< abandon the transaction */
};

/* ---------------------------------------------------------------- structs */

/** A length-value field (file names, messages, segment metadata): a view. */
typedef struct cfdp_lv {
    const uint8_t *ptr; /**< may be NULL when len is 0 */
    uint8_t len;
} cfdp_lv;

/** An entity ID as carried in an Entity ID TLV: len 1-8 bytes; len 0 means
 * "absent" where the field is optional (fault locations). */
typedef struct cfdp_eid {
    uint64_t id;
    uint8_t len;
} cfdp_eid;

/** One TLV. Which fields matter depends on type:
 * - filestore request: action, first, second (rename, append, replace);
 * - filestore response: action, status, first, second (as for requests),
 *   data (the filestore message, may be empty);
 * - both: empty_second, for an action that names one file: 1 writes an empty
 *   second-name LV, as ION 4.1.3 does and needs (it ignores requests without
 *   one) and Wireshark 4.0 expects; 0 (the standard) omits it. The decoder
 *   reads both and records which arrived;
 * - message to user, flow label: data (any bytes, 0-255);
 * - fault handler override: condition, handler;
 * - entity ID: eid. */
typedef struct cfdp_tlv {
    uint8_t type; /**< enum cfdp_tlv_type */
    uint8_t action;
    uint8_t status;
    uint8_t condition;
    uint8_t handler;
    uint8_t empty_second;
    cfdp_lv first, second, data;
    cfdp_eid eid;
} cfdp_tlv;

/** A list of TLVs: items[0..count) to encode, or (decoded, items NULL) count
 * TLVs in raw[0..raw_len). Read either with cfdp_tlvs_next(). */
typedef struct cfdp_tlvs {
    const cfdp_tlv *items;
    size_t count;
    const uint8_t *raw;
    size_t raw_len;
} cfdp_tlvs;

/** A range of file offsets [start, end): a NAK's scope or segment request. */
typedef struct cfdp_range {
    uint64_t start, end;
} cfdp_range;

/** A NAK's segment requests: items[0..count) to encode, or (decoded, items
 * NULL) count pairs of raw_width-byte offsets at raw. Read either with
 * cfdp_nak_segment(). */
typedef struct cfdp_ranges {
    const cfdp_range *items;
    size_t count;
    const uint8_t *raw;
    uint8_t raw_width; /**< 4 or 8 */
} cfdp_ranges;

/** The fixed header (5.1). */
typedef struct cfdp_header {
    uint8_t version;    /**< decoded: 1; the encoder always writes 001 */
    uint8_t type;       /**< enum cfdp_pdu_type (the encoder derives it from kind) */
    uint8_t direction;  /**< enum cfdp_direction */
    uint8_t mode;       /**< enum cfdp_tx_mode */
    uint8_t crc;        /**< 1: a CRC-16/CCITT-FALSE ends the data field */
    uint8_t large_file; /**< 1: file offsets and sizes are 64-bit, else 32-bit */
    uint8_t seg_ctrl;   /**< segmentation control: 1 = record boundaries preserved */
    uint8_t seg_meta;   /**< 1: file data PDUs carry segment metadata */
    uint8_t eid_len;    /**< bytes of each entity ID, 1-8 (encode: 0 = fewest that fit) */
    uint8_t tsn_len;    /**< bytes of the sequence number, 1-8 (encode: 0 = fewest) */
    uint16_t data_len;  /**< data field length with the CRC (decoded; encode computes) */
    uint64_t src;       /**< source entity ID */
    uint64_t tsn;       /**< transaction sequence number */
    uint64_t dst;       /**< destination entity ID */
} cfdp_header;

/** File Data PDU (5.3). record and meta matter only if hdr.seg_meta. */
typedef struct cfdp_file_data {
    uint64_t offset;
    const uint8_t *data;
    size_t len;
    uint8_t record; /**< enum cfdp_record */
    cfdp_lv meta;   /**< segment metadata, 0-63 bytes */
} cfdp_file_data;

/** EOF PDU (5.2.2). */
typedef struct cfdp_eof {
    uint8_t condition; /**< enum cfdp_condition */
    uint32_t checksum;
    uint64_t file_size;
    cfdp_eid fault; /**< fault location (len 0: absent; never with no error) */
} cfdp_eof;

/** Finished PDU (5.2.3). */
typedef struct cfdp_finished {
    uint8_t condition;   /**< enum cfdp_condition */
    uint8_t delivery;    /**< enum cfdp_delivery */
    uint8_t file_status; /**< enum cfdp_file_status */
    cfdp_tlvs responses; /**< filestore response TLVs only */
    cfdp_eid fault;      /**< fault location (len 0: absent; never with no error) */
} cfdp_finished;

/** ACK PDU (5.2.4). */
typedef struct cfdp_ack {
    uint8_t directive;  /**< the acknowledged PDU: CFDP_EOF or CFDP_FINISHED */
    uint8_t subtype;    /**< enum cfdp_ack_subtype: kept as sent, written as given */
    uint8_t condition;  /**< of the acknowledged PDU */
    uint8_t txn_status; /**< enum cfdp_txn_status */
} cfdp_ack;

/** Metadata PDU (5.2.5). */
typedef struct cfdp_metadata {
    uint8_t closure;       /**< 1: closure requested */
    uint8_t checksum_type; /**< 0-15 as sent; see cfdp_cksum_supported() */
    uint64_t file_size;    /**< 0 for a file of unbounded size */
    cfdp_lv src_name, dst_name;
    cfdp_tlvs options; /**< filestore requests, messages to user, fault handler
                          overrides, flow labels */
} cfdp_metadata;

/** NAK PDU (5.2.6). */
typedef struct cfdp_nak {
    uint64_t scope_start, scope_end;
    cfdp_ranges segments;
} cfdp_nak;

/** Prompt PDU (5.2.7). */
typedef struct cfdp_prompt {
    uint8_t response; /**< enum cfdp_prompt_response */
} cfdp_prompt;

/** Keep Alive PDU (5.2.8). */
typedef struct cfdp_keep_alive {
    uint64_t progress;
} cfdp_keep_alive;

/** Any PDU: the header, what it is, and the matching member of u. */
typedef struct cfdp_pdu {
    cfdp_header hdr;
    uint8_t kind; /**< enum cfdp_kind */
    union {
        cfdp_file_data fd;
        cfdp_eof eof;
        cfdp_finished fin;
        cfdp_ack ack;
        cfdp_metadata md;
        cfdp_nak nak;
        cfdp_prompt prompt;
        cfdp_keep_alive ka;
    } u;
} cfdp_pdu;

/* ------------------------------------------------------------ the codec */

/** cfdp_pdu_decode() flag: refuse a PDU without a CRC (the peer's MIB entry
 * says its PDUs carry one). */
#define CFDP_DECODE_CRC_REQUIRED 0x1u

/** Largest header (4 fixed bytes, two 8-byte entity IDs, an 8-byte number). */
#define CFDP_HEADER_MAX 28

/** Largest PDU: the biggest header and a data field of 65535 bytes. */
#define CFDP_PDU_MAX (CFDP_HEADER_MAX + 65535)

/**
 * Decodes the fixed header of the PDU at buf[0..len) into *hdr and sets
 * *hdr_len to its size; checks the version and that the data field fits in
 * len (bytes after it are not looked at). For a receiver that must find the
 * peer's MIB entry before the full decode. Errors as for cfdp_pdu_decode().
 */
TERN_API int cfdp_header_decode(const void *buf, size_t len, cfdp_header *hdr,
                                size_t *hdr_len, const char **why);

/**
 * Decodes exactly one PDU, buf[0..len), into *pdu (views point into buf).
 * flags: CFDP_DECODE_CRC_REQUIRED or 0. On a refusal returns
 * TERN_ETRUNCATED (a field or the data field runs past its end),
 * TERN_EMALFORMED (a reserved or invalid value, bytes left over),
 * TERN_ECORRUPT (the PDU CRC does not match) or TERN_EOVERFLOW (file data
 * past 2^64, or past 2^32 in the 32-bit form), and sets *why (if why is
 * not NULL) to a fixed text; *pdu is then unspecified.
 */
TERN_API int cfdp_pdu_decode(const void *buf, size_t len, unsigned flags, cfdp_pdu *pdu,
                             const char **why);

/**
 * Checks that *pdu can be encoded: every code defined, every value fits its
 * field (32-bit form included), lengths within their limits. Returns 0, or
 * -EINVAL / TERN_EOVERFLOW with *why (if not NULL) naming the field.
 */
TERN_API int cfdp_pdu_check(const cfdp_pdu *pdu, const char **why);

/**
 * Encodes *pdu into buf[0..cap) and sets *len. The header's type, version
 * and data field length are derived; a CRC is appended if hdr.crc. Returns
 * 0, TERN_ENOSPACE if cap is too small, or what cfdp_pdu_check() returns.
 */
TERN_API int cfdp_pdu_encode(const cfdp_pdu *pdu, void *buf, size_t cap, size_t *len);

/** Sets *len to the size cfdp_pdu_encode() would write; errors as for
 * cfdp_pdu_check(). */
TERN_API int cfdp_pdu_size(const cfdp_pdu *pdu, size_t *len);

/** Bytes the fixed header takes with hdr's lengths (0s resolved as the
 * encoder resolves them). */
TERN_API size_t cfdp_header_len(const cfdp_header *hdr);

/** Most file data bytes one File Data PDU with header hdr and meta_len bytes of
 * segment metadata can carry within max_pdu bytes (0 if none fit). */
TERN_API size_t cfdp_file_data_room(const cfdp_header *hdr, size_t meta_len,
                                    size_t max_pdu);

/** Most segment requests one NAK with header hdr can carry within max_pdu
 * bytes (0 if none fit). */
TERN_API size_t cfdp_nak_room(const cfdp_header *hdr, size_t max_pdu);

/** The fewest bytes (1-8) that hold id: for header lengths and entity IDs. */
TERN_API uint8_t cfdp_id_len(uint64_t id);

/**
 * Reads the next TLV of *list into *out. *pos starts at 0 and is advanced.
 * Returns 0, TERN_EEND after the last one, or (raw bytes not from the
 * decoder) what cfdp_tlv_decode() returns.
 */
TERN_API int cfdp_tlvs_next(const cfdp_tlvs *list, size_t *pos, cfdp_tlv *out);

/** Segment request i (< count) of a NAK's list, in either form. */
TERN_API cfdp_range cfdp_nak_segment(const cfdp_ranges *segs, size_t i);

/**
 * Decodes one TLV at the start of buf[0..len) into *tlv and sets *used to
 * its size (type, length and value). The value is checked for its type:
 * filestore names, action and handler codes, entity ID lengths. A TLV type
 * that is not defined is refused. Errors and *why as for cfdp_pdu_decode().
 */
TERN_API int cfdp_tlv_decode(const void *buf, size_t len, cfdp_tlv *tlv, size_t *used,
                             const char **why);

/** Checks that *tlv can be encoded; errors and *why as for cfdp_pdu_check(). */
TERN_API int cfdp_tlv_check(const cfdp_tlv *tlv, const char **why);

/** Encodes *tlv into buf[0..cap) and sets *len; TERN_ENOSPACE if it does not
 * fit, else what cfdp_tlv_check() returns. */
TERN_API int cfdp_tlv_encode(const cfdp_tlv *tlv, void *buf, size_t cap, size_t *len);

/** sizeof(cfdp_pdu), for bindings to check their layout. */
TERN_API size_t cfdp_pdu_struct_size(void);

/** sizeof(cfdp_tlv), for bindings to check their layout. */
TERN_API size_t cfdp_tlv_struct_size(void);

/* ----------------------------------------------------------- names for logs */

/** "File Data", "EOF", "Finished", ...; "unknown" otherwise. */
TERN_API const char *cfdp_kind_name(unsigned kind);

/** "no error", "positive ACK limit reached", ...; "reserved" for 12, 13. */
TERN_API const char *cfdp_condition_name(unsigned condition);

/** "data complete" / "data incomplete". */
TERN_API const char *cfdp_delivery_name(unsigned delivery);

/** "discarded deliberately", "discarded by filestore rejection", ... */
TERN_API const char *cfdp_file_status_name(unsigned status);

/** "undefined", "active", "terminated", "unrecognized". */
TERN_API const char *cfdp_txn_status_name(unsigned status);

/** "create file", "delete file", ...; "unknown" otherwise. */
TERN_API const char *cfdp_fs_action_name(unsigned action);

/** What status means for action ("successful", "file does not exist",
 * "not performed", ...); "unknown" for codes the action does not define. */
TERN_API const char *cfdp_fs_status_name(unsigned action, unsigned status);

/** "cancel", "suspend", "ignore", "abandon"; "reserved" otherwise. */
TERN_API const char *cfdp_handler_name(unsigned handler);

/** "filestore request", ..., "entity ID"; "unknown" otherwise. */
TERN_API const char *cfdp_tlv_type_name(unsigned type);

/** "modular", "Proximity-1 CRC-32", "CRC-32C", "CRC-32", "null";
 * "unknown" otherwise. */
TERN_API const char *cfdp_checksum_name(unsigned type);

/** "middle of a record", "start of a record", "end of a record", "whole record". */
TERN_API const char *cfdp_record_name(unsigned record);

#ifdef __cplusplus
}
#endif
#endif
