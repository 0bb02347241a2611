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
#include "cfdp_fs.h"
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

/** Filestore requests one put may carry (each a line of the request). */
#define CFDP_CTL_FS_MAX 32

/** Bundle priority (class of service) of a transaction's PDUs. 0 is the
 * default, standard; the others are BP's three classes plus one. */
enum cfdp_ctl_priority {
    CFDP_CTL_PRIO_DEFAULT = 0,
    CFDP_CTL_PRIO_BULK = 1,
    CFDP_CTL_PRIO_STANDARD = 2,
    CFDP_CTL_PRIO_EXPEDITED = 3,
};

/** One filestore request (CCSDS 727.0-B-5 5.4.1.2) of a put. */
typedef struct cfdp_ctl_fsreq {
    uint8_t action;                    /**< enum cfdp_fs_action */
    char first[CFDP_FS_PATH_MAX + 1];  /**< 1 to 255 bytes, no tab or newline */
    char second[CFDP_FS_PATH_MAX + 1]; /**< rename, append, replace: 1 to 255
                                          bytes; "" for the others */
} cfdp_ctl_fsreq;

/** A put request. 0 / -1 mean cfdpd's default where noted. src_name and
 * dst_name both NULL or "" with filestore requests: a metadata-only
 * transaction (the requests run at the destination, no file moves). */
typedef struct cfdp_ctl_put_req {
    const char *src_name; /**< source file, relative to cfdpd's filestore root */
    uint64_t dst;         /**< destination entity */
    const char *dst_name; /**< name at the destination */
    int cls;              /**< 1 or 2; 0: the peer's default (2) */
    int closure;          /**< class 1: 1 ask for a Finished, 0 not, -1 default */
    int checksum_type;    /**< enum cfdp_checksum_type; -1: the peer's */
    uint32_t segment;     /**< largest file data per PDU; 0: what fits */
    uint32_t lifetime_s;  /**< bundle lifetime of its PDUs; 0: one day */
    int priority;         /**< enum cfdp_ctl_priority of its PDUs' bundles */
    size_t nfs; /**< filestore requests in fs[0..nfs), at most CFDP_CTL_FS_MAX */
    const cfdp_ctl_fsreq *fs;
} cfdp_ctl_put_req;

/** A put request as cfdpd reads it (cfdp_ctl_put_decode): req's strings
 * and fs point into the arrays that follow. */
typedef struct cfdp_ctl_put_msg {
    cfdp_ctl_put_req req;
    char src[CFDP_FS_PATH_MAX + 1];
    char dst_name[CFDP_FS_PATH_MAX + 1];
    cfdp_ctl_fsreq fs[CFDP_CTL_FS_MAX];
} cfdp_ctl_put_msg;

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
    uint8_t nfs;       /**< FINISHED: filestore responses in the Finished */
    uint8_t fs_action[CFDP_CTL_FS_MAX]; /**< FINISHED: each response's action */
    uint8_t fs_status[CFDP_CTL_FS_MAX]; /**< and its status (enum cfdp_fs_status) */
} cfdp_ctl_event;

/** A transaction as cfdp_ctl_txns lists it: the engine's report and the
 * priority cfdpd sends its PDUs with. */
typedef struct cfdp_ctl_txn {
    cfdp_txn_info info;
    int priority; /**< enum cfdp_ctl_priority (never DEFAULT) */
} cfdp_ctl_txn;

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

/** Starts a put; *id (may be NULL) gets the new transaction's ID.
 * -EINVAL (nothing sent) for a name holding a newline (or a tab, in a
 * filestore request), more than CFDP_CTL_FS_MAX requests, an unknown action
 * or priority, a missing or superfluous second name. */
TERN_API int cfdp_ctl_put(cfdp_ctl *c, const cfdp_ctl_put_req *req, cfdp_txn_id *id);

/** Writes the text of put request req into buf[0..cap) (what cfdp_ctl_put
 * sends): its length, -EINVAL as cfdp_ctl_put, or -ENAMETOOLONG. */
TERN_API int cfdp_ctl_put_encode(const cfdp_ctl_put_req *req, char *buf, size_t cap);

/** Reads a put request's text (cfdpd's side) into *out, every value
 * bounded: 0, or -EINVAL with a sentence naming the key that was wrong in
 * why[0..whylen). Defaults as cfdp_ctl_put_req says. */
TERN_API int cfdp_ctl_put_decode(const char *text, cfdp_ctl_put_msg *out, char *why,
                                 size_t whylen);

/** Parses a filestore request as the commands take it, "ACTION:NAME" or
 * "ACTION:NAME:NAME2" (ACTION one of createFile, deleteFile, renameFile,
 * appendFile, replaceFile, createDirectory, removeDirectory, denyFile,
 * denyDirectory, any case; the three two-name actions split at the first
 * ':' after the action's, one-name actions take the rest whole). 0, or
 * -EINVAL with the reason in why[0..whylen). */
TERN_API int cfdp_ctl_fs_parse(const char *spec, cfdp_ctl_fsreq *out, char *why,
                               size_t whylen);

/** The command-line word of filestore action a ("createDirectory"), or
 * "unknown". */
TERN_API const char *cfdp_ctl_fs_word(unsigned a);

/** "bulk", "standard", "expedited" for enum cfdp_ctl_priority (DEFAULT:
 * "standard"); "unknown" otherwise. */
TERN_API const char *cfdp_ctl_priority_name(int priority);

/** Parses "bulk", "standard" or "expedited" (or 0, 1, 2, BP's numbers):
 * the enum cfdp_ctl_priority value, or -EINVAL. */
TERN_API int cfdp_ctl_priority_parse(const char *text);

/** Asks entity peer to send us its file src_name (a proxy put request), to
 * arrive as dst_name in cfdpd's filestore; cls 0 (its default), 1 or 2.
 * *id gets the request's transaction: watch it for the CFDP_CTL_EV_ANSWER. */
TERN_API int cfdp_ctl_get(cfdp_ctl *c, uint64_t peer, const char *src_name,
                          const char *dst_name, int cls, cfdp_txn_id *id);

/** cfdp_ctl_get with the priority (enum cfdp_ctl_priority) of the request's
 * own bundles (the file comes at the remote entity's choice). */
TERN_API int cfdp_ctl_get_prio(cfdp_ctl *c, uint64_t peer, const char *src_name,
                               const char *dst_name, int cls, int priority,
                               cfdp_txn_id *id);

/** cfdp_ctl_get_prio asking peer to send its file to entity to instead of
 * to us (0: to us): a remote to remote copy. The ANSWER event, the proxy
 * put response, comes here when peer's put to `to` has finished; dst_name
 * is a name in to's filestore. */
TERN_API int cfdp_ctl_get_to(cfdp_ctl *c, uint64_t peer, uint64_t to,
                             const char *src_name, const char *dst_name, int cls,
                             int priority, cfdp_txn_id *id);

/** Asks entity peer for a listing of its directory dir, to arrive as file
 * listing in cfdpd's filestore; watch *id for the CFDP_CTL_EV_ANSWER. */
TERN_API int cfdp_ctl_ls(cfdp_ctl *c, uint64_t peer, const char *dir, const char *listing,
                         cfdp_txn_id *id);

/** Every transaction cfdpd holds, up to cap of them into out; *n gets how
 * many cfdpd has (more than cap: only cap were filled). */
TERN_API int cfdp_ctl_status(cfdp_ctl *c, cfdp_txn_info *out, size_t cap, size_t *n);

/** cfdp_ctl_status with each transaction's priority. */
TERN_API int cfdp_ctl_txns(cfdp_ctl *c, cfdp_ctl_txn *out, size_t cap, size_t *n);

/** Sizes of this header's structs for bindings ("cfdp_ctl_info",
 * "cfdp_ctl_put_req", "cfdp_ctl_fsreq", "cfdp_ctl_event", "cfdp_ctl_txn"),
 * 0 for another name. */
TERN_API size_t cfdp_ctl_struct_size(const char *name);

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
