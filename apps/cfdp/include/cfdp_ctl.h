/* libterncfdp, the client side of cfdpd's command socket (docs/cfdpd.md).
 *
 * cfdpd, the CFDP entity of a node, listens on a SOCK_SEQPACKET Unix socket
 * in the abstract namespace named after the node directory. The commands
 * (cfdpput, cfdpstatus, ...) and the Python bindings talk to it through
 * these calls: one request datagram, one answer datagram, plus event
 * datagrams on a connection that watches a transaction.
 *
 * The protocol is text: lines separated by '\n'; a request's first line is
 * its command, then "key=value" lines; an answer's first line is "ok" or
 * "err", then "key=value" lines (status: one "txn=..." line per
 * transaction with space-separated key=value fields). Values never hold a
 * newline.
 *
 * Every call returns 0 or a negative code (-errno or TERN_E*); after an
 * "err" answer the code is cfdpd's and cfdp_ctl_errmsg() has its text.
 */
#ifndef TERN_CFDP_CTL_H
#define TERN_CFDP_CTL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "cfdp.h"
#include "tern/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Largest request, answer or event datagram. */
#define CFDP_CTL_MSG_MAX 65536

/** Room for the filestore root's path in cfdp_ctl_info. */
#define CFDP_CTL_PATH_MAX 4096

/** cfdp_ctl_event types besides enum cfdp_ind_type: bytes moved so far;
 * the answer to a get or ls request. */
#define CFDP_CTL_EV_PROGRESS 100
#define CFDP_CTL_EV_ANSWER   101

typedef struct cfdp_ctl cfdp_ctl;

/** What cfdpd says about itself. */
typedef struct cfdp_ctl_info {
    uint64_t entity;              /**< its entity ID (the node number) */
    char root[CFDP_CTL_PATH_MAX]; /**< its filestore root, absolute */
    uint64_t txns;                /**< transactions it holds now */
} cfdp_ctl_info;

/** A put request. 0 / -1 mean cfdpd's default where noted. */
typedef struct cfdp_ctl_put_req {
    const char *src_name; /**< source file, relative to cfdpd's filestore root */
    uint64_t dst;         /**< destination entity */
    const char *dst_name; /**< name at the destination */
    int cls;              /**< 1 or 2; 0: the peer's default (2) */
    int closure;          /**< class 1: 1 ask for a Finished, 0 not, -1 default */
    int checksum_type;    /**< enum cfdp_checksum_type; -1: the peer's */
    uint32_t segment;     /**< largest file data per PDU; 0: what fits */
    uint32_t lifetime_s;  /**< bundle lifetime of its PDUs; 0: one day */
} cfdp_ctl_put_req;

/** An event of a watched transaction. */
typedef struct cfdp_ctl_event {
    unsigned type; /**< enum cfdp_ind_type, or CFDP_CTL_EV_PROGRESS */
    cfdp_txn_id txn;
    uint8_t condition;   /**< FINISHED, FAULT, SUSPENDED, ABANDONED */
    uint8_t delivery;    /**< FINISHED: enum cfdp_delivery */
    uint8_t file_status; /**< FINISHED: enum cfdp_file_status */
    uint8_t state;       /**< PROGRESS: enum cfdp_txn_state */
    uint64_t file_size;
    uint64_t progress; /**< bytes sent (sender) or received (receiver) */
    uint64_t resent;   /**< PROGRESS, sender: bytes sent again on NAKs */
    unsigned answer;   /**< ANSWER: CFDP_MSG_PROXY_PUT_RESP or CFDP_MSG_DIR_LIST_RESP */
    uint8_t ok;        /**< ANSWER: 1 the file (or listing) arrived complete */
    uint64_t peer;     /**< ANSWER: the entity that answered */
} cfdp_ctl_event;

/** The abstract socket address of the cfdpd of node_dir ("tern-cfdpd-" and
 * the FNV-1a 64-bit hash of its real path, in hex). -ENOENT if the
 * directory does not exist. */
TERN_API int cfdp_ctl_sockaddr(const char *node_dir, struct sockaddr_un *sa,
                               socklen_t *len);

/** Connects to the cfdpd of node_dir (NULL: $TERN_NODE_DIR, else ".").
 * -ECONNREFUSED if none runs there. */
TERN_API int cfdp_ctl_open(const char *node_dir, cfdp_ctl **out);

/** Closes the connection. NULL is fine. */
TERN_API void cfdp_ctl_close(cfdp_ctl *c);

/** The text of the last failure on c ("" if none). */
TERN_API const char *cfdp_ctl_errmsg(const cfdp_ctl *c);

/** The descriptor events arrive on (poll it for cfdp_ctl_next_event). */
TERN_API int cfdp_ctl_fd(const cfdp_ctl *c);

/** Sends request req (its text) and waits up to timeout_ms for the answer,
 * copied NUL-terminated into ans[0..cap). 0 for "ok", cfdpd's code for
 * "err". The typed calls below use it. */
TERN_API int cfdp_ctl_request(cfdp_ctl *c, const char *req, char *ans, size_t cap,
                              int timeout_ms);

/** Finds "key=value" in text (at a line's start or after a space) and
 * copies the value (up to the end of line; up to a space if space_ends) into
 * out[0..cap): 0, TERN_ENOTFOUND, or TERN_ENOSPACE. */
TERN_API int cfdp_ctl_kv(const char *text, const char *key, int space_ends, char *out,
                         size_t cap);

/** Asks cfdpd for its entity ID and filestore root. */
TERN_API int cfdp_ctl_info_get(cfdp_ctl *c, cfdp_ctl_info *out);

/** Starts a put; *id (may be NULL) gets the new transaction's ID. */
TERN_API int cfdp_ctl_put(cfdp_ctl *c, const cfdp_ctl_put_req *req, cfdp_txn_id *id);

/** Asks entity peer to send us its file src_name (a proxy put request), to
 * arrive as dst_name in cfdpd's filestore; cls 0 (its default), 1 or 2.
 * *id gets the request's transaction: watch it for the CFDP_CTL_EV_ANSWER. */
TERN_API int cfdp_ctl_get(cfdp_ctl *c, uint64_t peer, const char *src_name,
                          const char *dst_name, int cls, cfdp_txn_id *id);

/** Asks entity peer for a listing of its directory dir, to arrive as file
 * listing in cfdpd's filestore; watch *id for the CFDP_CTL_EV_ANSWER. */
TERN_API int cfdp_ctl_ls(cfdp_ctl *c, uint64_t peer, const char *dir, const char *listing,
                         cfdp_txn_id *id);

/** Every transaction cfdpd holds, up to cap of them into out; *n gets how
 * many cfdpd has (more than cap: only cap were filled). */
TERN_API int cfdp_ctl_status(cfdp_ctl *c, cfdp_txn_info *out, size_t cap, size_t *n);

/** Cancel, suspend or resume transaction id. -ENOENT if cfdpd has none. */
TERN_API int cfdp_ctl_cancel(cfdp_ctl *c, cfdp_txn_id id);
TERN_API int cfdp_ctl_suspend(cfdp_ctl *c, cfdp_txn_id id);
TERN_API int cfdp_ctl_resume(cfdp_ctl *c, cfdp_txn_id id);

/** Subscribes this connection to transaction id's events (one transaction
 * per connection; open another connection for the others). -ENOENT if
 * cfdpd has no such transaction. */
TERN_API int cfdp_ctl_watch(cfdp_ctl *c, cfdp_txn_id id);

/** Waits up to timeout_ms (-1: for ever) for the next event: 0,
 * -ETIMEDOUT, or -ECONNRESET if cfdpd went away. */
TERN_API int cfdp_ctl_next_event(cfdp_ctl *c, cfdp_ctl_event *ev, int timeout_ms);

/** Parses "S.Q" (source entity, sequence number) into *id. */
TERN_API int cfdp_ctl_parse_txn(const char *text, cfdp_txn_id *id);

/** "active", "suspended", "cancelling", "closing", "finished"; "unknown". */
TERN_API const char *cfdp_ctl_state_name(unsigned state);

#ifdef __cplusplus
}
#endif
#endif
