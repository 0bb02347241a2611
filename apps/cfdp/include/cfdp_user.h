/* libterncfdp: the CFDP user operations (CCSDS 727.0-B-5 chapter 6) on top
 * of an entity (cfdp.h): proxy put, directory listing, remote status
 * report, remote suspend and resume, for both sides.
 *
 * A cfdp_user sits beside one entity. The application hands it every
 * indication the entity produces (cfdp_user_on_indication, called outside
 * the entity's own calls: from the loop that drains
 * cfdp_entity_next_indication, never from inside cfdp_host.indication,
 * since acting on a request starts new transactions).
 *
 * As the responder it acts on the reserved messages (cfdp_msg.h) of every
 * Metadata received:
 * - proxy put request: a put from this entity's filestore to the entity
 *   named, with the proxy messages to user, filestore requests, fault
 *   handler overrides, flow label, transmission mode and closure request
 *   that came with it and an originating transaction ID naming the
 *   request; when that put finishes, a proxy put response (its condition,
 *   delivery code, file status) and its filestore responses go back to the
 *   requester. A proxy put cancel cancels it.
 * - directory listing request: the directory is listed through the
 *   filestore into a file (one line per entry, see docs/cfdp-filestore.md)
 *   under the work directory, and sent back under the name asked for with
 *   a directory listing response; a directory that cannot be listed is
 *   answered unsuccessful, without a file.
 * - remote status report, suspend and resume requests act on the named
 *   transaction of this entity and answer with its status (a report file
 *   is sent when the request names one).
 * Every answer is a put back to the requester carrying an originating
 * transaction ID that names the request's transaction.
 *
 * As the originator it sends those requests (cfdp_user_proxy_put,
 * cfdp_user_dir_list, ...) as metadata-only puts and turns the answers into
 * events (cfdp_user_next_event), each once the transaction that carried it
 * has finished (so a listing's event says whether its file arrived).
 */
#ifndef TERN_CFDP_USER_H
#define TERN_CFDP_USER_H

#include <stddef.h>
#include <stdint.h>

#include "cfdp.h"
#include "cfdp_fs.h"
#include "cfdp_msg.h"
#include "tern/base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cfdp_user cfdp_user;

/** A user layer's configuration. */
typedef struct cfdp_user_cfg {
    /** The filestore listings are made in and written to: the entity's. */
    cfdp_fs fs;
    /** Directory (made if absent) for the listing and report files sent
     * back; NULL: ".cfdp-user". */
    const char *work_dir;
    /** Requests this entity answers as failed without acting on them:
     * CFDP_USER_REFUSE_* bits (0: serve them all). */
    unsigned refuse;
} cfdp_user_cfg;

/** cfdp_user_cfg.refuse bits. A refused proxy put is answered like one
 * whose file could not be read (filestore rejection), a refused listing as
 * unsuccessful, a refused remote request as for an unknown transaction. */
#define CFDP_USER_REFUSE_PROXY   0x1u /**< proxy put requests (and cancels) */
#define CFDP_USER_REFUSE_LISTING 0x2u /**< directory listing requests */
#define CFDP_USER_REFUSE_REMOTE  0x4u /**< remote status report, suspend, resume */

/** A user layer for entity e (which must outlive it). */
TERN_API int cfdp_user_new(cfdp_entity *e, const cfdp_user_cfg *cfg, cfdp_user **out);

/** Frees it. NULL is fine. */
TERN_API void cfdp_user_free(cfdp_user *u);

/**
 * Acts on one indication of the entity (see above); indications that
 * concern no user operation are ignored. Returns 0, or the first error of
 * a request it could not act on (a put the entity refused is answered as a
 * failure to the requester all the same, when an answer can be sent).
 */
TERN_API int cfdp_user_on_indication(cfdp_user *u, uint64_t now_ms, const cfdp_ind *ind);

/** A proxy put request: ask entity proxy to send its file src_name to
 * entity dst as dst_name. */
typedef struct cfdp_proxy_put_req {
    uint64_t proxy;              /**< the entity asked to send */
    uint64_t dst;                /**< where it sends the file */
    const char *src_name;        /**< at the proxy; NULL or "" with dst_name: no file */
    const char *dst_name;        /**< at dst */
    int8_t mode;                 /**< -1: the proxy's default; else enum cfdp_tx_mode */
    int8_t closure;              /**< -1: not asked; 0 or 1: a proxy closure request */
    const cfdp_tlv *fs_requests; /**< filestore requests for the proxy's put */
    size_t n_fs_requests;
    const cfdp_lv *messages; /**< messages to user for the proxy's put */
    size_t n_messages;
    const cfdp_tlv *fault_handlers; /**< fault handler override TLVs */
    size_t n_fault_handlers;
    cfdp_lv flow_label; /**< len 0: none */
} cfdp_proxy_put_req;

/** Sends a proxy put request; *id (may be NULL) gets the request's
 * transaction, which the answer names. */
TERN_API int cfdp_user_proxy_put(cfdp_user *u, uint64_t now_ms,
                                 const cfdp_proxy_put_req *r, cfdp_txn_id *id);

/** Asks entity proxy to cancel the put it started for our request
 * (a proxy put cancel naming request). */
TERN_API int cfdp_user_proxy_cancel(cfdp_user *u, uint64_t now_ms, uint64_t proxy,
                                    cfdp_txn_id request, cfdp_txn_id *id);

/** Asks entity peer for a listing of its directory dir, to arrive here as
 * file listing_name. */
TERN_API int cfdp_user_dir_list(cfdp_user *u, uint64_t now_ms, uint64_t peer,
                                const char *dir, const char *listing_name,
                                cfdp_txn_id *id);

/** Asks entity peer for the status of its transaction target; report_name
 * (NULL or "": none) names a report file for it to send. */
TERN_API int cfdp_user_remote_report(cfdp_user *u, uint64_t now_ms, uint64_t peer,
                                     cfdp_txn_id target, const char *report_name,
                                     cfdp_txn_id *id);

/** Asks entity peer to suspend its transaction target (the request goes
 * in class 2, as 6.5.3.1.2 has it). */
TERN_API int cfdp_user_remote_suspend(cfdp_user *u, uint64_t now_ms, uint64_t peer,
                                      cfdp_txn_id target, cfdp_txn_id *id);

/** Asks entity peer to resume its transaction target (class 2). */
TERN_API int cfdp_user_remote_resume(cfdp_user *u, uint64_t now_ms, uint64_t peer,
                                     cfdp_txn_id target, cfdp_txn_id *id);

/** Largest total of proxy filestore responses an event keeps. */
#define CFDP_USER_FS_RESP_MAX 2048

/** An answer to one of our requests. */
typedef struct cfdp_user_event {
    /** The answer: CFDP_MSG_PROXY_PUT_RESP, CFDP_MSG_DIR_LIST_RESP,
     * CFDP_MSG_STATUS_REPORT_RESP, CFDP_MSG_SUSPEND_RESP or
     * CFDP_MSG_RESUME_RESP. */
    uint8_t type;
    uint64_t peer;       /**< the entity that answered */
    cfdp_txn_id request; /**< our request's transaction */
    cfdp_txn_id carrier; /**< the transaction that brought the answer */
    uint8_t condition;   /**< how the carrier ended here (its Finished fields): */
    uint8_t delivery;    /**<   for a listing or report, did its file arrive */
    uint8_t file_status;
    /** The answer as decoded; its views point into raw, in this struct. */
    cfdp_msg msg;
    /** PROXY_PUT_RESP: the proxy's filestore responses, as filestore
     * response TLVs (raw form, into fs_raw). */
    cfdp_tlvs fs_responses;
    uint8_t raw[CFDP_MSG_MAX];
    uint8_t fs_raw[CFDP_USER_FS_RESP_MAX];
} cfdp_user_event;

/** Takes the oldest event into *out: 0, or TERN_EEND if none. */
TERN_API int cfdp_user_next_event(cfdp_user *u, cfdp_user_event *out);

/** Counters of what the responder side did. */
typedef struct cfdp_user_stats {
    uint64_t proxy_puts, proxy_cancels, listings, reports, suspends, resumes;
    uint64_t answers_sent;   /**< response puts started */
    uint64_t answers_failed; /**< response puts the entity refused */
    uint64_t refused;        /**< requests refused by cfdp_user_cfg.refuse */
    uint64_t bad_messages;   /**< reserved messages that did not decode */
    uint64_t events;         /**< events queued (originator side) */
} cfdp_user_stats;

/** Copies the counters. */
TERN_API void cfdp_user_stats_get(const cfdp_user *u, cfdp_user_stats *out);

#ifdef __cplusplus
}
#endif
#endif
