/*
 * ams_rams.h — Remote AMS (CCSDS 735.1-B-1, section 5): the RAMS PDU
 * ("envelope") codec and the gateway's machine, sans I/O.
 *
 * A RAMS gateway is a module of its continuum's message space (role 1,
 * "RAMS") that joins the RAMS network of its venture and exchanges RAMS
 * PDUs with the gateways of the neighbouring continua. The machine here
 * keeps ION's procedures and state (petitions with their distribution
 * module set, destination and source gateway sets; invitations; declared
 * neighbours) and is driven by its caller (ramsgate): PDUs from peers, the
 * gateway module's AMS notices and messages, petition-log lines to play
 * back. It acts through the callbacks in ams_rams_io: a PDU to send to a
 * neighbour, a subscription to make or drop, an enclosure to hand to a
 * local module, a petition-log line to keep.
 *
 * The envelope is ION's, byte for byte (docs/ams.md, "RAMS on the wire"):
 *
 *   0     control code (low 4 bits)       6     source id (a role)
 *   1     flags (ION: reserved, 0)        7     destination id (module or role)
 *   2..3  continuum (15 bits)             8..9  subject (signed)
 *   4..5  unit                            10..11 enclosure length
 *   12..  the enclosure: an AAMS message (16-byte header, content)
 *
 * Byte 1 carries Tern's flags, which ION ignores: AMS_RAMS_F_REPLY on a
 * declaration that answers one (never itself answered), AMS_RAMS_F_TERN on a
 * declaration from a gateway that takes Tern's batches (ams_rams_batch_*).
 */
#ifndef TERN_AMS_RAMS_H
#define TERN_AMS_RAMS_H

#include <stddef.h>
#include <stdint.h>

#include "ams_mib.h"
#include "tern/base.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AMS_RAMS_ROLE    1  /**< the gateway's role in every venture */
#define AMS_RAMS_ENV_LEN 12 /**< envelope bytes before the enclosure */

/** Control codes (ION's values). */
enum ams_rams_cc {
    AMS_RAMS_DECLARATION = 1, /**< defined by ION, never sent: a declaration is an
                                 assertion on the sender's pseudo-subject */
    AMS_RAMS_ASSERT = 2,
    AMS_RAMS_CANCEL = 3,
    AMS_RAMS_PUBLISH = 4,
    AMS_RAMS_SEND = 5,
    AMS_RAMS_ANNOUNCE = 6
};

#define AMS_RAMS_F_REPLY 0x01 /**< this declaration answers one: do not answer it */
#define AMS_RAMS_F_TERN  0x02 /**< the sender takes Tern's batches */

/** An envelope, decoded. */
typedef struct ams_rams_env {
    int cc, flags;
    int continuum, unit;
    int src, dst; /**< source id, destination id */
    int subject;
    size_t enc_len;
    const uint8_t *enc; /**< into the decoded buffer */
} ams_rams_env;

/** Writes e's 12 envelope bytes (enc_len included, the enclosure not). */
TERN_API void ams_rams_env_encode(const ams_rams_env *e, uint8_t out[AMS_RAMS_ENV_LEN]);

/** Decodes one envelope at the start of buf; *used is its length with its
 * enclosure. TERN_EMALFORMED with *why naming the fault. */
TERN_API int ams_rams_env_decode(const uint8_t *buf, size_t len, ams_rams_env *e,
                                 size_t *used, const char **why);

/* ---------------------------------------------------------------- batches
 * Between two Tern gateways (each told the other AMS_RAMS_F_TERN) one bundle
 * carries a batch: magic 0xB1, the sender's incarnation (4 bytes), the
 * batch's sequence number on this neighbour and class (8 bytes), then whole
 * RAMS PDUs back to back. Sequence numbers let the receiver take batches in
 * order and once (ams_rams_order). ION gateways get one PDU per bundle. */
#define AMS_RAMS_BATCH_MAGIC 0xB1
#define AMS_RAMS_BATCH_HDR   13

/** Writes a batch header. */
TERN_API void ams_rams_batch_header(uint32_t incarnation, uint64_t seq,
                                    uint8_t out[AMS_RAMS_BATCH_HDR]);

/** 1 if buf is a batch (else a single PDU); with *inc and *seq set. */
TERN_API int ams_rams_batch_parse(const uint8_t *buf, size_t len, uint32_t *inc,
                                  uint64_t *seq);

/* ------------------------------------------------------------ the machine */

typedef struct ams_rams ams_rams;

typedef struct ams_rams_io {
    void *ctx;
    /** Sends pdu to neighbour continuum (its gateway EID eid) with flow label
     * flow (BP class of service: flow & 3). */
    int (*send)(void *ctx, int continuum, const char *eid, unsigned flow,
                const uint8_t *pdu, size_t len);
    /** The gateway module subscribes (add 1) or unsubscribes. */
    int (*subscribe)(void *ctx, int add, int role, int continuum, int unit, int subject);
    /** Hands an enclosure (an AAMS message from another continuum) to local
     * module (unit, module). */
    int (*deliver)(void *ctx, int unit, int module, const uint8_t *enc, size_t len);
    /** The role of local module (unit, module), or -1. */
    int (*role_of)(void *ctx, int unit, int module);
    /** Keeps a petition-log line (ION's format, with its newline). */
    void (*log)(void *ctx, const char *line);
} ams_rams_io;

/** Why PDUs were dropped (counters in ams_rams_stats.dropped). */
enum ams_rams_drop {
    AMS_RAMS_DROP_MALFORMED,   /**< envelope or enclosure does not decode */
    AMS_RAMS_DROP_STRANGER,    /**< from no neighbour of the MIB */
    AMS_RAMS_DROP_UNDECLARED,  /**< petition from a neighbour not yet declared */
    AMS_RAMS_DROP_BAD_CODE,    /**< control code not 2..6 */
    AMS_RAMS_DROP_BAD_DOMAIN,  /**< unknown continuum, unit, role or subject */
    AMS_RAMS_DROP_NO_CONDUIT,  /**< for a continuum no neighbour leads to */
    AMS_RAMS_DROP_NOT_INVITED, /**< private or announced message nobody invited */
    AMS_RAMS_DROP_N
};

typedef struct ams_rams_stats {
    uint64_t pdus_in, pdus_out;
    uint64_t by_cc_in[7], by_cc_out[7]; /**< by control code */
    uint64_t delivered;                 /**< enclosures handed to local modules */
    uint64_t forwarded;                 /**< local messages sent on to neighbours */
    uint64_t send_errors;               /**< the send callback failed */
    uint64_t dropped[AMS_RAMS_DROP_N];
    uint64_t petitions, invitations; /**< held now */
} ams_rams_stats;

/** Creates the machine for the venture v of mib (both must outlive it),
 * the gateway being module (unit, module) of the local continuum. */
TERN_API int ams_rams_new(const ams_mib *mib, const ams_mib_venture *v, int unit,
                          int module, const ams_rams_io *io, ams_rams **out);

TERN_API void ams_rams_free(ams_rams *r);

/** Plays back one petition-log line ("1 ipn:3.9 2 -3 0 0 0": protocol,
 * gateway EID, control code, subject, continuum, unit, role). Blank lines
 * and '#' comments are fine. TERN_ESYNTAX with the reason in err. */
TERN_API int ams_rams_playback(ams_rams *r, const char *line, char *err, size_t cap);

/** The current petition state as log lines (declarations first), for a
 * compacted log; returns the length written (truncated at cap) or needed. */
TERN_API size_t ams_rams_state(const ams_rams *r, char *out, size_t cap);

/** Joins the RAMS network: declares itself to every neighbour. */
TERN_API int ams_rams_start(ams_rams *r);

/** Leaves it: cancels its declaration where it was heard. */
TERN_API int ams_rams_stop(ams_rams *r);

/** A PDU from the gateway whose EID is from. Returns 0 if taken, or the
 * enum ams_rams_drop + 1 of why it was dropped (counted; *why says more). */
TERN_API int ams_rams_input(ams_rams *r, const char *from, const uint8_t *pdu, size_t len,
                            const char **why);

/** A subscription (sub 1) or invitation (sub 0) of local module (unit,
 * module) began (add 1) or ended, with its domain. */
TERN_API int ams_rams_notice(ams_rams *r, int sub, int add, int unit, int module,
                             int role, int continuum, int dunit, int subject);

/** Local module (unit, module) left the message space. */
TERN_API int ams_rams_module_left(ams_rams *r, int unit, int module);

/** A message the gateway module received: published by a local module
 * (subject > 0; the AAMS fields and content), or on a pseudo-subject (an
 * envelope for another continuum, content being the envelope). */
TERN_API int ams_rams_message(ams_rams *r, int continuum, int unit, int module,
                              int subject, int type, int priority, unsigned flow,
                              int context, const uint8_t *content, size_t len);

/** Counters. */
TERN_API void ams_rams_get_stats(const ams_rams *r, ams_rams_stats *st);

/** Neighbours: n in *n; for i < n its continuum, EID and whether it declared
 * itself (and with AMS_RAMS_F_TERN). Returns 0, or TERN_ENOTFOUND past n. */
TERN_API int ams_rams_neighbor(const ams_rams *r, int i, int *continuum, const char **eid,
                               int *declared, int *tern, int *n);

/* ------------------------------------------------------------ ordering */

typedef struct ams_rams_order ams_rams_order;

/** Takes batches from one neighbour and class in sequence order and once;
 * holds at most max_bytes out of order (then gives up on the gap). */
TERN_API int ams_rams_order_new(size_t max_bytes, ams_rams_order **out);
TERN_API void ams_rams_order_free(ams_rams_order *o);

/** Offers batch (inc, seq) of len bytes at now_ms. Returns 1 if it is next:
 * the caller takes it, then calls ams_rams_order_next for those it released;
 * 0 if it was kept (out of order; the bytes are copied); -1 if it is a
 * duplicate (drop it). A new incarnation starts a new sequence, at the
 * first batch taken; one numbered below that (sent before this receiver
 * started or the sender restarted) is taken at once, out of order. */
TERN_API int ams_rams_order_offer(ams_rams_order *o, uint32_t inc, uint64_t seq,
                                  const uint8_t *buf, size_t len, uint64_t now_ms);

/** A kept batch that is now next (the caller frees *buf), or 0 if none. A
 * gap older than hold_ms (or the byte bound) is skipped and counted. */
TERN_API int ams_rams_order_next(ams_rams_order *o, uint64_t now_ms, uint64_t hold_ms,
                                 uint8_t **buf, size_t *len);

/** Batches kept, gaps skipped, duplicates dropped. */
TERN_API void ams_rams_order_counts(const ams_rams_order *o, uint64_t *kept,
                                    uint64_t *skipped, uint64_t *dups);

#ifdef __cplusplus
}
#endif
#endif
