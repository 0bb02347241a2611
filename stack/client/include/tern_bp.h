/* libtern: the Bundle Protocol API for applications, in the spirit of ION's.
 *
 *   bp_attach(NULL);                      // $TERN_NODE_DIR, else "."
 *   BpSAP sap;
 *   bp_open("ipn:1.1", &sap);
 *   bp_send(sap, "ipn:2.1", "hi", 2, NULL, NULL);
 *   BpDelivery d;
 *   if (bp_receive(sap, &d, 5000) == 0) { use(d.payload, d.len); bp_release_delivery(&d);
 * } bp_close(sap); bp_detach();
 *
 * An application talks to its node's ternd over a Unix socket (docs/node.md).
 * bp_send queues the bundle in a window of unanswered sends (64) and returns;
 * the node answers each once the bundle is committed to its store. When the
 * window is full bp_send waits (or, with BP_SEND_NONBLOCK, returns -EAGAIN),
 * so a fast sender is slowed, never dropped. bp_flush waits for every answer.
 * If ternd restarts, the next call reattaches: it reconnects (retrying for
 * two minutes by default: TERN_REATTACH_S, bp_node_set_reattach), opens the
 * endpoints again and resends the unanswered bundles (a bundle whose answer
 * was lost in the restart may then exist twice); deliveries the application
 * took and ternd offers again after the restart are dropped.
 *
 * bp_attach/bp_open work on one process-wide attachment, as ION's do;
 * bp_node_attach/bp_node_open give explicit handles (several nodes in one
 * process, as test helpers need). Calls on one attachment are serialised by
 * its lock, so threads may share it; a blocked bp_receive does not hold the
 * lock, and bp_interrupt wakes it, or a blocked send, from any thread or a
 * signal handler.
 *
 * Errors are 0 or negative: -errno or TERN_E* (tern/base.h); bp_strerror
 * describes them and bp_errmsg gives the last failure's details in this
 * thread (which node directory, which endpoint).
 */
#ifndef TERN_BP_H
#define TERN_BP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "tern/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Bumped whenever a public struct or signature of libternclient changes. */
#define TERN_CLIENT_ABI_VERSION                                                          \
    4 /* 2: bp_sap_fd; 3: bp_send_fd_head; 4: BP_SEND_FILE_REF */

/** Unanswered sends an attachment keeps in flight. */
#define BP_SEND_WINDOW 64

/** Most head bytes bp_send_fd_head puts before a descriptor's. */
#define BP_SEND_HEAD_MAX 1024

/** Room for an EID's text with its NUL. */
#define BP_EID_MAX 264

/** Classes of service (ION's names and values). */
#define BP_BULK_PRIORITY      0
#define BP_STD_PRIORITY       1
#define BP_EXPEDITED_PRIORITY 2

/** Status report requests (ION's srrFlags values). */
#define BP_RECEIVED_RPT  0x01
#define BP_FORWARDED_RPT 0x04
#define BP_DELIVERED_RPT 0x08
#define BP_DELETED_RPT   0x10

/** BpSendOpts.flags. */
#define BP_SEND_NONBLOCK   0x1 /**< full window: -EAGAIN instead of waiting */
#define BP_SEND_MORE       0x2 /**< more sends follow: hold this one to batch it */
#define BP_SEND_NOFRAGMENT 0x4 /**< the bundle must not be fragmented */
/** bp_send_fd / bp_send_fd_head of a regular file: the node may keep a
 * reference to the file (its path and identity) instead of a copy of its
 * bytes, and read them each time the bundle goes out, as ION's file
 * references do. The file must then not change, be replaced or go until the
 * bundle has left the node: a bundle whose file changed is deleted. Saves the
 * node's store a copy of every byte (the durable store's disk writes). */
#define BP_SEND_FILE_REF 0x8

typedef struct BpNode BpNode;  /**< an attachment to a node */
typedef struct BpSap_s *BpSAP; /**< an open endpoint */

/** Options of bp_send; start from BP_SEND_OPTS_INIT. NULL means the defaults. */
typedef struct BpSendOpts {
    uint64_t lifetime_ms;  /**< 0: lifetime_s */
    uint32_t lifetime_s;   /**< 0 (and lifetime_ms 0): one day */
    int priority;          /**< BP_*_PRIORITY */
    unsigned ordinal;      /**< expedited only: 0..254, higher first */
    unsigned rpt_flags;    /**< BP_*_RPT */
    const char *report_to; /**< where reports go; NULL: the source */
    unsigned flags;        /**< BP_SEND_* */
} BpSendOpts;

#define BP_SEND_OPTS_INIT                                                                \
    {                                                                                    \
        0, 0, BP_STD_PRIORITY, 0, 0, NULL, 0                                             \
    }

/** Identifies a sent bundle (with the sending endpoint). */
typedef struct BpBundleRef {
    uint64_t ctime_ms; /**< creation time, DTN ms */
    uint64_t seq;
} BpBundleRef;

/** A received bundle. The payload belongs to the library until
 * bp_release_delivery. */
typedef struct BpDelivery {
    char src[BP_EID_MAX]; /**< source EID */
    uint64_t ctime_ms;    /**< creation time, ms since 2000-01-01 (DTN time) */
    uint64_t seq;         /**< creation sequence number */
    uint64_t flags;       /**< bundle processing flags (0x2: administrative record) */
    const uint8_t *payload;
    size_t len;
    void *priv; /**< the library's */
} BpDelivery;

/* --------------------------------------------------------- attachments */

/** Attaches the process to the node in node_dir (NULL: $TERN_NODE_DIR, else
 * "."). Again with the same node: a reference more. -ECONNREFUSED if no ternd
 * serves it, -ENOENT if the directory does not exist, -EBUSY if attached to
 * another node. */
TERN_API int bp_attach(const char *node_dir);

/** Drops a reference; the last one flushes, closes the endpoints still open
 * and detaches. */
TERN_API void bp_detach(void);

/** The process-wide attachment (NULL if none). */
TERN_API BpNode *bp_node(void);

/** Attaches to a node with an explicit handle (node_dir as bp_attach). */
TERN_API int bp_node_attach(const char *node_dir, BpNode **out);

/** Flushes, closes the handle's endpoints and frees it; returns the first
 * error of a bundle that was refused and not yet reported. NULL is fine. */
TERN_API int bp_node_detach(BpNode *n);

/** The node's ipn number. */
TERN_API uint64_t bp_node_number(const BpNode *n);

/** The node's counters as "name value" lines, then ternd's own status text. */
TERN_API int bp_node_status(BpNode *n, char *out, size_t cap);

/** Runs an admin command line for module ("bpadmin", "ipnadmin", ...) on the
 * node; out gets ternd's answer. Returns ternd's code. */
TERN_API int bp_node_admin(BpNode *n, const char *module, const char *line, char *out,
                           size_t cap);

/** Asks ternd to stop; 0 once it accepted. */
TERN_API int bp_node_stop(BpNode *n);

/** How long a call retries to reach a restarted ternd, in ms (-1: for ever);
 * the default is TERN_REATTACH_S seconds, else 120 s. */
TERN_API void bp_node_set_reattach(BpNode *n, int timeout_ms);

/** 1 while ternd holds this attachment's sends because its store is full (it
 * says so, and says when it takes them again), else 0. */
TERN_API int bp_node_store_full(BpNode *n);

/* ------------------------------------------------------------ endpoints */

/** Opens endpoint eid on the process-wide attachment. -EBUSY if an
 * application has it open; -EINVAL if it is not an endpoint of this node. */
TERN_API int bp_open(const char *eid, BpSAP *sap);

/** Opens endpoint eid on node n. */
TERN_API int bp_node_open(BpNode *n, const char *eid, BpSAP *sap);

/** Flushes the endpoint's sends and closes it. Deliveries the library took
 * for it and nobody received are dropped. NULL is fine. Returns bp_flush's.
 * After bp_interrupt(sap) (with no send since) it does not wait: sends not
 * yet answered are left to ternd unawaited, and it returns -EINTR if there
 * were any. */
TERN_API int bp_close(BpSAP sap);

/** The endpoint's EID. */
TERN_API const char *bp_sap_eid(BpSAP sap);

/* ---------------------------------------------------------------- send */

/**
 * Sends payload[0..len) from sap's endpoint (sap NULL on the process-wide
 * attachment: from dtn:none) to dest. An anonymous bundle is never
 * fragmented and asks for no status report, whatever opts says (RFC 9171
 * 4.2.3). Returns once the bundle is queued in
 * the window; with out, waits for ternd's answer and fills *out. Payloads
 * over 64 KiB are handed over in a memfd. A negative result may report an
 * earlier bundle that ternd refused (this one is then not sent). A full
 * window makes it wait; bp_interrupt(sap) ends that wait with -EINTR (the
 * bundle is then not sent; with out, an interrupted wait for the answer
 * returns -EINTR and the bundle stays sent, as without out).
 */
TERN_API int bp_send(BpSAP sap, const char *dest, const void *payload, size_t len,
                     const BpSendOpts *opts, BpBundleRef *out);

/** As bp_send with the payload at off in fd (a regular file or memfd; it must
 * not change until answered): the descriptor, not the bytes, goes to ternd. */
TERN_API int bp_send_fd(BpSAP sap, const char *dest, int fd, off_t off, size_t len,
                        const BpSendOpts *opts, BpBundleRef *out);

/** As bp_send_fd, the payload being head[0..hlen) (at most BP_SEND_HEAD_MAX
 * bytes, copied) followed by the len bytes at off in fd: a protocol header
 * in front of a file's bytes (a CFDP file-data PDU) without copying the
 * file through the application. */
TERN_API int bp_send_fd_head(BpSAP sap, const char *dest, const void *head, size_t hlen,
                             int fd, off_t off, size_t len, const BpSendOpts *opts,
                             BpBundleRef *out);

/** Waits up to timeout_ms (-1: for ever) until every bundle sent on sap's
 * attachment is answered; returns the first refusal on sap not yet
 * reported, -ETIMEDOUT, or -EINTR after bp_interrupt(sap). */
TERN_API int bp_flush(BpSAP sap, int timeout_ms);

/** Waits up to timeout_ms (-1: for ever, 0: not at all) until the window has
 * room, so that bp_send on sap would not wait: 0, -ETIMEDOUT, or -EINTR
 * after bp_interrupt(sap). A sender that shows progress while its node is
 * slow (or its store full: bp_node_store_full) waits here in steps. */
TERN_API int bp_send_ready(BpSAP sap, int timeout_ms);

/** Unanswered sends of the attachment right now (queued or in flight). */
TERN_API unsigned bp_node_unanswered(BpNode *n);

/* -------------------------------------------------------------- receive */

/** Takes the next bundle for sap, waiting up to timeout_ms (-1: for ever, 0:
 * only what has arrived). -ETIMEDOUT (-EAGAIN for 0) if none came, -EINTR
 * after bp_interrupt. */
TERN_API int bp_receive(BpSAP sap, BpDelivery *dlv, int timeout_ms);

/**
 * A descriptor for poll/epoll in an application's own event loop: readable
 * (POLLIN) while bp_receive(sap, .., 0) would not wait: a delivery is
 * queued, ternd sent something the library has not read yet (then
 * bp_receive may file it and return -EAGAIN), or the attachment is lost
 * (bp_receive reattaches, or returns the error). The library owns it
 * (closed by bp_close); it stays the same across reattaches. Returns the
 * descriptor or a negative code. Only read it through bp_receive.
 */
TERN_API int bp_sap_fd(BpSAP sap);

/** Gives a delivery's payload back to the library. */
TERN_API void bp_release_delivery(BpDelivery *dlv);

/** Wakes a bp_receive, bp_send, bp_send_fd, bp_flush or bp_send_ready
 * blocked on sap (NULL: anonymous sends of the process-wide attachment), or
 * a reattach it waits for, with -EINTR; if none waits, the next such call
 * that would wait returns -EINTR. bp_close(sap) after it does not wait.
 * Thread-safe and async-signal-safe. */
TERN_API void bp_interrupt(BpSAP sap);

/* ---------------------------------------------------------------- errors */

/** Describes a return code (as tern_strerror, with libtern's meanings). */
TERN_API const char *bp_strerror(int rc);

/** The last failure's details in the calling thread ("" if none). */
TERN_API const char *bp_errmsg(void);

/** TERN_CLIENT_ABI_VERSION as built. */
TERN_API int tern_client_abi_version(void);

#ifdef __cplusplus
}
#endif
#endif
