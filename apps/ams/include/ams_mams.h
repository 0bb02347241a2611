/*
 * ams_mams.h — Tern's MAMS (AMS's meta-protocol) on the wire: the PDUs that
 * configuration servers, registrars and modules exchange inside one
 * continuum, and the AAMS header of messages between modules.
 *
 * AAMS messages use ION's 16-byte header and 16-bit checksum, byte for
 * byte, so RAMS can carry them to and from ION. MAMS is Tern's own: ION's
 * PDU type numbers where the meaning matches, a layout of its own (one
 * header, fixed-size records, a CRC-32C) built for soft state that every
 * party refreshes, so a lost datagram or a restarted registrar costs one
 * heartbeat period, not a registration (docs/ams.md, "MAMS").
 *
 * Decoders take hostile bytes: every count and length is bounded against
 * what remains before it is used; TERN_EMALFORMED / TERN_ETRUNCATED name
 * the failure and ams_mams_decode() also says why in a static text.
 */
#ifndef TERN_AMS_MAMS_H
#define TERN_AMS_MAMS_H

#include <stddef.h>
#include <stdint.h>

#include "tern/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ AAMS */

#define AAMS_HDR_LEN   16
#define AAMS_CKSUM_LEN 2

/** One AAMS message as ION lays it out. */
typedef struct aams_msg {
    int type;        /**< AmsMsgUnary, AmsMsgQuery, AmsMsgReply */
    int priority;    /**< 0..15 */
    uint8_t flow;    /**< flow label */
    int has_cksum;   /**< the checksum flag */
    int continuum;   /**< sender's continuum, 1..32767 */
    int unit;        /**< sender's unit */
    int module;      /**< sender's module number */
    int32_t context; /**< caller's context (queries and replies match on it) */
    int subject;     /**< subject number (negative: a RAMS message space) */
    const uint8_t *content;
    size_t len;
} aams_msg;

/** ION's AAMS checksum: the 16-bit sum of the bytes taken as big-endian
 * 16-bit words (an odd last byte padded with zero). */
TERN_API uint16_t aams_checksum(const uint8_t *p, size_t n);

/** Writes m's 16-byte header into hdr (its length field from m->len, which
 * must be <= 65535). */
TERN_API int aams_header_encode(const aams_msg *m, uint8_t hdr[AAMS_HDR_LEN]);

/** Decodes a whole datagram: header, content, checksum (checked if the flag
 * says one is there). m->content points into buf. */
TERN_API int aams_decode(const uint8_t *buf, size_t len, aams_msg *m, const char **why);

/* ------------------------------------------------------------------ MAMS */

#define MAMS_MAGIC   0xA7 /**< first byte; an AAMS header never starts so */
#define MAMS_VERSION 1
#define MAMS_HDR_LEN 20
#define MAMS_CRC_LEN 4
/** Largest MAMS datagram Tern sends or takes. */
#define MAMS_MAX_PDU 65000

/** PDU types: ION's numbers where the meaning is the same. */
enum mams_type {
    MAMS_HEARTBEAT = 1,
    MAMS_REJECTION = 2,
    MAMS_YOU_ARE_DEAD = 3,
    MAMS_REGISTRAR_UNKNOWN = 5,
    MAMS_ANNOUNCE_REGISTRAR = 7,
    MAMS_CELL_SPEC = 10,
    MAMS_REGISTRAR_QUERY = 18,
    MAMS_MODULE_REGISTRATION = 19,
    MAMS_YOU_ARE_IN = 20,
    MAMS_DECLARATION = 23,
    MAMS_I_AM_STOPPING = 26,
    MAMS_RECONNECT = 27,
    MAMS_MODULE_STATUS = 31,
    MAMS_STATUS_QUERY = 64, /**< Tern: "send me these modules' records" */
    MAMS_STOP = 65,         /**< Tern: amsstop's order to a registrar */
};

/** An IPv4 endpoint (address and port in host order). */
typedef struct mams_ep {
    uint32_t addr;
    uint16_t port;
} mams_ep;

/** Rule flags. */
#define MAMS_RULE_ASSURED 1 /**< AmsAssured */
#define MAMS_RULE_TXORDER 2 /**< AmsTransmissionOrder */

/** A subscription or invitation. */
typedef struct mams_rule {
    int16_t subject;    /**< 0: all subjects */
    uint16_t continuum; /**< 0: all continua */
    uint16_t unit;      /**< domain unit (and its subunits) */
    uint8_t role;       /**< 0: any role */
    uint8_t priority;
    uint8_t flow;
    uint8_t flags;
} mams_rule;
#define MAMS_RULE_LEN 10

/** Rejection reasons. */
enum mams_reject {
    MAMS_REJ_CELL_FULL = 1,
    MAMS_REJ_NO_SUCH_ROLE = 2,
    MAMS_REJ_CENSUS = 3,    /**< a restarted registrar still hears from its cell */
    MAMS_REJ_NBR_TAKEN = 4, /**< reconnect: the number belongs to another module */
    MAMS_REJ_NO_SUCH_UNIT = 5,
    MAMS_REJ_WRONG_VENTURE = 6,
};

/** One module's record as registrars relay it. */
typedef struct mams_module {
    uint16_t unit;
    uint8_t module;
    uint8_t role;
    uint8_t gone;           /**< it stopped or was declared dead */
    uint32_t incarnation;   /**< the module's, changes when it registers anew */
    uint32_t version;       /**< of its declaration */
    mams_ep mams, udp, tcp; /**< MAMS, AAMS datagram and AAMS stream endpoints */
    uint16_t n_subs, n_invs;
    const uint8_t *rules; /**< n_subs then n_invs rules, as on the wire */
} mams_module;
#define MAMS_MODULE_LEN 35 /* without its rules */

/** A registrar as the configuration server lists it. */
typedef struct mams_registrar {
    uint16_t unit;
    mams_ep ep;
    uint32_t incarnation;
} mams_registrar;
#define MAMS_REGISTRAR_LEN 12

/** One digest entry: a module and its declaration's version. */
typedef struct mams_digest_ent {
    uint16_t unit;
    uint8_t module;
    uint32_t version;
    uint32_t incarnation;
} mams_digest_ent;
#define MAMS_DIGEST_LEN 11

/** A decoded MAMS PDU: the header's fields, and the body as its type has it.
 * Pointers point into the buffer decoded. */
typedef struct mams_pdu {
    int type;
    uint8_t flags;
    uint16_t venture;
    uint16_t unit;        /**< sender's unit (registrar: its cell) */
    uint8_t role;         /**< sender's role (0: not a module) */
    uint8_t module;       /**< sender's module number (0: not a module) */
    uint32_t incarnation; /**< sender's */
    uint32_t memo;        /**< echoed in the answer */
    const uint8_t *body;
    size_t body_len;
} mams_pdu;

/** Header flag: the sending registrar is still taking its census. */
#define MAMS_F_CENSUS 1

/** Encodes a PDU with the given body into out (cap bytes); *n its length. */
TERN_API int mams_encode(const mams_pdu *p, uint8_t *out, size_t cap, size_t *n);

/** Decodes and checks a PDU (magic, version, length, CRC-32C). */
TERN_API int mams_decode(const uint8_t *buf, size_t len, mams_pdu *p, const char **why);

/* Body readers and writers: a cursor over a body. */
typedef struct mams_cur {
    uint8_t *w;       /**< writing: where the next byte goes */
    const uint8_t *r; /**< reading: the next byte */
    size_t left;      /**< bytes left (to write or to read) */
    int err;          /**< first error; every later call does nothing */
} mams_cur;

TERN_API void mams_cur_writer(mams_cur *c, uint8_t *buf, size_t cap);
TERN_API void mams_cur_reader(mams_cur *c, const uint8_t *buf, size_t len);
TERN_API void mams_put8(mams_cur *c, uint8_t v);
TERN_API void mams_put16(mams_cur *c, uint16_t v);
TERN_API void mams_put32(mams_cur *c, uint32_t v);
TERN_API void mams_put_ep(mams_cur *c, const mams_ep *e);
TERN_API void mams_put_rule(mams_cur *c, const mams_rule *r);
TERN_API void mams_put_bytes(mams_cur *c, const void *p, size_t n);
TERN_API uint8_t mams_get8(mams_cur *c);
TERN_API uint16_t mams_get16(mams_cur *c);
TERN_API uint32_t mams_get32(mams_cur *c);
TERN_API void mams_get_ep(mams_cur *c, mams_ep *e);
TERN_API void mams_get_rule(mams_cur *c, mams_rule *r);
/** Points *p at the next n bytes (after checking that many remain). */
TERN_API void mams_get_bytes(mams_cur *c, const uint8_t **p, size_t n);

/** Writes a module record: rules from the arrays given, or, if both are
 * NULL, the n_subs + n_invs rules at m->rules as they are on the wire. */
TERN_API void mams_put_module(mams_cur *c, const mams_module *m, const mams_rule *subs,
                              const mams_rule *invs);
/** Reads a module record; its rules stay on the wire (m->rules), bounded. */
TERN_API void mams_get_module(mams_cur *c, mams_module *m);
/** The i-th rule of a decoded module record (subscriptions first). */
TERN_API void mams_module_rule(const mams_module *m, size_t i, mams_rule *r);

#ifdef __cplusplus
}
#endif
#endif
