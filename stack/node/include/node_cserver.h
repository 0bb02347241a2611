/* The client server inside ternd: applications' requests over the node's
 * Unix socket (docs/node.md, tern_proto.h), served on the daemon's tern_loop.
 *
 * Each client has its own state: the endpoints it opened (closed when it
 * goes), delivery credit per endpoint, and a queue of answers waiting for
 * its socket. A SEND is answered only after bp_agent_send returned, i.e.
 * once the bundle is committed. A client whose answers pile up is not read
 * until they drain, so no client makes ternd buffer without bound. A
 * malformed message is counted, logged once per cause, and ends that client
 * only.
 */
#ifndef TERN_NODE_CSERVER_H
#define TERN_NODE_CSERVER_H

#include <stddef.h>
#include <stdint.h>

#include "bp_agent.h"
#include "tern/base.h"
#include "tern/log.h"
#include "tern/loop.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct node_cserver node_cserver;

/**
 * The daemon's part of STATUS, ADMIN and STOP requests (type is
 * TERN_MSG_STATUS, _ADMIN or _STOP; body[0..len) the request's CBOR body,
 * for ADMIN [module, command line]). Writes a NUL-terminated answer text
 * into reply[0..cap) and returns 0 or a negative code, which goes back to
 * the client. For STOP the daemon should stop after returning (the answer
 * is sent first).
 */
typedef int (*node_cserver_handler)(void *ctx, uint32_t type, const uint8_t *body,
                                    size_t len, char *reply, size_t cap);

/** Server counters. */
typedef struct node_cserver_stats {
    uint64_t clients;       /**< connected now */
    uint64_t accepted;      /**< connections so far */
    uint64_t messages;      /**< datagrams read */
    uint64_t sends;         /**< SENDs (batched ones included) */
    uint64_t batches;       /**< SEND_BATCH datagrams */
    uint64_t delivered;     /**< DELIVERs sent */
    uint64_t fd_payloads;   /**< payloads that came or went as descriptors */
    uint64_t fd_heads;      /**< of those sent, with head bytes before the descriptor's */
    uint64_t file_refs;     /**< of those sent, kept by reference to their file */
    uint64_t malformed;     /**< clients dropped for a malformed message */
    uint64_t held;          /**< SENDs held until the store had room */
    uint64_t held_now;      /**< clients whose SENDs wait for room now */
    uint64_t drops_told;    /**< DROPPED notices sent */
    uint64_t drops_unheard; /**< such deletions with no application to tell */
} node_cserver_stats;

/** Binds the abstract socket of node_dir (see tern_proto_sockaddr) and
 * serves it on loop. -EADDRINUSE if another ternd serves that directory. */
TERN_API int node_cserver_new(tern_loop *loop, bp_agent *a, tern_log *lg,
                              const char *node_dir, node_cserver **out);

/** Closes every client (their endpoints are closed) and the socket. NULL is fine. */
TERN_API void node_cserver_free(node_cserver *srv);

/** A bundle was queued for ep (call from the agent's host.deliverable): it
 * is pushed to the client that has ep open, if that client has credit. */
TERN_API void node_cserver_deliverable(node_cserver *srv, const bp_eid *ep);

/** Tells the application that has endpoint src open that its bundle
 * (ctime_ms, seq) was deleted after its send was answered (a DROPPED
 * notice; libtern reports it as the result of its next call on that
 * endpoint). If none has src open the loss is only logged and counted. */
TERN_API void node_cserver_dropped(node_cserver *srv, const bp_eid *src,
                                   uint64_t ctime_ms, uint64_t seq, int code,
                                   const char *why);

/** Sets the handler of STATUS (extra text), ADMIN and STOP. */
TERN_API void node_cserver_set_handler(node_cserver *srv, node_cserver_handler fn,
                                       void *ctx);

/** The server's counters. */
TERN_API void node_cserver_stats_get(const node_cserver *srv, node_cserver_stats *st);

/** The socket's abstract name ("tern-<hex>"). */
TERN_API const char *node_cserver_name(const node_cserver *srv);

#ifdef __cplusplus
}
#endif
#endif
