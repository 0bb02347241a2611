/* libterncfdp: the reserved CFDP messages (CCSDS 727.0-B-5 chapter 6), the
 * user operations' messages carried in Message to User TLVs.
 *
 * A reserved message is a Message to User TLV whose value starts with the
 * ASCII identifier "cfdp" and a message type byte; the rest is the
 * message's content (tables 6-2 to 6-25). One struct, cfdp_msg, holds any
 * of them; which fields matter depends on type (see each field). Decoding
 * is zero-copy (names and messages point into the decoded buffer) and never
 * trusts a length: every LV is bounded by the value, entity IDs are 1-8
 * bytes, nothing may follow the content. A refusal returns a tern/base.h
 * code and sets *why to a fixed text. Spare bits are ignored on decode and
 * written as zero.
 */
#ifndef TERN_CFDP_MSG_H
#define TERN_CFDP_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "cfdp_pdu.h"
#include "tern/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Message types (tables 6-3, 6-14, 6-17, 6-20, 6-23 and 6.1.5). */
enum cfdp_msg_type {
    CFDP_MSG_PROXY_PUT_REQ = 0x00,
    CFDP_MSG_PROXY_MSG_TO_USER = 0x01,
    CFDP_MSG_PROXY_FS_REQ = 0x02,
    CFDP_MSG_PROXY_FAULT_HANDLER = 0x03, /**< proxy fault handler override */
    CFDP_MSG_PROXY_TX_MODE = 0x04,       /**< proxy transmission mode */
    CFDP_MSG_PROXY_FLOW_LABEL = 0x05,
    CFDP_MSG_PROXY_SEG_CTRL = 0x06, /**< proxy segmentation control */
    CFDP_MSG_PROXY_PUT_RESP = 0x07,
    CFDP_MSG_PROXY_FS_RESP = 0x08,
    CFDP_MSG_PROXY_PUT_CANCEL = 0x09,
    CFDP_MSG_ORIGINATING_TID = 0x0A, /**< originating transaction ID */
    CFDP_MSG_PROXY_CLOSURE = 0x0B,   /**< proxy closure request */
    CFDP_MSG_DIR_LIST_REQ = 0x10,
    CFDP_MSG_DIR_LIST_RESP = 0x11,
    CFDP_MSG_STATUS_REPORT_REQ = 0x20, /**< remote status report request */
    CFDP_MSG_STATUS_REPORT_RESP = 0x21,
    CFDP_MSG_SUSPEND_REQ = 0x30, /**< remote suspend request */
    CFDP_MSG_SUSPEND_RESP = 0x31,
    CFDP_MSG_RESUME_REQ = 0x38, /**< remote resume request */
    CFDP_MSG_RESUME_RESP = 0x39,
};

/** A transaction ID as the messages carry it: the source entity and the
 * sequence number, each 1-8 bytes (0 on encode: the fewest that hold it). */
typedef struct cfdp_tid {
    uint64_t src, tsn;
    uint8_t src_len, tsn_len;
} cfdp_tid;

/** Any reserved CFDP message. */
typedef struct cfdp_msg {
    uint8_t type; /**< enum cfdp_msg_type */
    /** PROXY_PUT_REQ: the entity the proxy is to send to (len 1-8; 0 on
     * encode: the fewest bytes). */
    cfdp_eid dst;
    /** PROXY_PUT_REQ: source and destination file names (may be empty);
     * DIR_LIST_REQ, DIR_LIST_RESP: the directory and the listing file;
     * STATUS_REPORT_REQ: name1 is the report file. */
    cfdp_lv name1, name2;
    /** PROXY_MSG_TO_USER: the message to pass on; PROXY_FLOW_LABEL: the
     * label. */
    cfdp_lv data;
    /** PROXY_FS_REQ / PROXY_FS_RESP: the filestore request or response
     * (its type is set by the decoder and ignored by the encoder). */
    cfdp_tlv fs;
    uint8_t condition;   /**< PROXY_FAULT_HANDLER, PROXY_PUT_RESP: condition code */
    uint8_t handler;     /**< PROXY_FAULT_HANDLER: enum cfdp_handler */
    uint8_t delivery;    /**< PROXY_PUT_RESP: enum cfdp_delivery */
    uint8_t file_status; /**< PROXY_PUT_RESP: enum cfdp_file_status */
    uint8_t mode;        /**< PROXY_TX_MODE: enum cfdp_tx_mode (0 acknowledged) */
    /** PROXY_CLOSURE: 1 closure requested; PROXY_SEG_CTRL: the
     * segmentation control bit as table 6-10 gives it. */
    uint8_t flag;
    /** DIR_LIST_RESP, STATUS_REPORT_RESP: 1 successful. (On the wire the
     * listing response writes 0 for success in its top bit, the report
     * response 1 in its low bit: tables 6-16 and 6-19.) */
    uint8_t ok;
    /** SUSPEND_RESP, RESUME_RESP: 1 the transaction is suspended. */
    uint8_t suspended;
    /** STATUS_REPORT_RESP, SUSPEND_RESP, RESUME_RESP: enum cfdp_txn_status. */
    uint8_t txn_status;
    /** ORIGINATING_TID, and the transaction a STATUS_REPORT_*, SUSPEND_* or
     * RESUME_* message names. */
    cfdp_tid tid;
} cfdp_msg;

/** Largest encoded message: a Message to User TLV's value is 255 bytes. */
#define CFDP_MSG_MAX 255

/** 1 if the message to user value[0..len) is a reserved CFDP message (it
 * begins with "cfdp" and a type byte), else 0. */
TERN_API int cfdp_msg_is_reserved(const void *value, size_t len);

/**
 * Decodes the message to user value buf[0..len) into *m (views point into
 * buf). Returns 0; TERN_ETYPE if it is not a reserved CFDP message (an
 * ordinary message to user); TERN_EMALFORMED (longer than CFDP_MSG_MAX, a
 * type not defined,
 * an entity ID LV not 1-8 bytes, a code out of range, bytes after the
 * content) or TERN_ETRUNCATED (a field runs past the end), with *why set
 * (if why is not NULL) to a fixed text.
 */
TERN_API int cfdp_msg_decode(const void *buf, size_t len, cfdp_msg *m, const char **why);

/** Checks that *m can be encoded; -EINVAL or TERN_EOVERFLOW with *why. */
TERN_API int cfdp_msg_check(const cfdp_msg *m, const char **why);

/** Encodes *m (the "cfdp" identifier, the type, the content) into
 * buf[0..cap) and sets *len; TERN_ENOSPACE if it does not fit, -EINVAL
 * (*m fails cfdp_msg_check) or TERN_EOVERFLOW (longer than CFDP_MSG_MAX). */
TERN_API int cfdp_msg_encode(const cfdp_msg *m, void *buf, size_t cap, size_t *len);

/** Encodes *m into buf[0..cap) and makes *tlv the Message to User TLV that
 * carries it (tlv->data points into buf): for a put's options. */
TERN_API int cfdp_msg_tlv(const cfdp_msg *m, uint8_t *buf, size_t cap, cfdp_tlv *tlv);

/** sizeof(cfdp_msg), for bindings to check their layout. */
TERN_API size_t cfdp_msg_struct_size(void);

/** "proxy put request", ..., "remote resume response"; "unknown" otherwise. */
TERN_API const char *cfdp_msg_type_name(unsigned type);

#ifdef __cplusplus
}
#endif
#endif
