/* LTP over UDP: the "udplso" / "udplsi" link service.
 *
 * A link service sits between an LTP engine and the network. Its whole
 * interface with the engine is two calls, so other adapters (shared memory,
 * a simulator, ...) plug in the same way without touching the engine:
 *
 *   - outbound: the engine's ltp_host.send callback (here ltp_udp_send);
 *   - inbound:  ltp_engine_receive() for every datagram that arrives.
 *
 * Wiring, since the engine needs its host before it exists and the link
 * service needs the engine to deliver to:
 *
 *   ltp_udp *u;
 *   ltp_udp_new(loop, "127.0.0.1:0", NULL, lg, &u);        // udplsi
 *   ltp_udp_add_peer(u, 2, "127.0.0.1:1113", 0);           // udplso, per span
 *   ltp_host h = {.ctx = u, .send = ltp_udp_send, .notice = my_notice};
 *   ltp_engine_new(loop, &cfg, &h, lg, &e);
 *   ltp_udp_attach(u, e);                                  // starts reading
 *   ...
 *   ltp_engine_free(e); ltp_udp_free(u);
 *
 * One UDP socket per link service: it is bound to the LSI address and used to
 * send to every peer. Segments given to ltp_udp_send are copied into a
 * per-peer FIFO (chunks reused, no allocation per segment) and leave in
 * sendmmsg batches: at the end of the loop iteration (tern_loop_defer) or as
 * soon as a batch is full. Each peer may have a rate: the lower of its
 * udplso rate and the rate of the contact in effect (ltp_udp_set_link_rate),
 * kept by a token bucket in bursts of at most TERN_PACE_BURST_MAX bytes
 * (tern/pace.h), which a receiver with Linux's default socket buffer holds;
 * segments beyond it wait on a timer. When the socket pushes back (EAGAIN, ENOBUFS)
 * segments stay queued until it is writable again; they are dropped only
 * when a peer's queue exceeds its byte limit. Reception uses recvmmsg.
 *
 * The link service tells the attached engine when a checkpoint, report or
 * cancel segment actually leaves (ltp_engine_sent), so build the engine's
 * host with tx_notify = 1: retransmission timers then run from transmission,
 * and segments queued behind a rate limit never time out before they go.
 */
#ifndef TERN_LTP_UDP_H
#define TERN_LTP_UDP_H

#include <stddef.h>
#include <stdint.h>

#include "ltp.h"
#include "tern/base.h"
#include "tern/log.h"
#include "tern/loop.h"

#ifdef __cplusplus
extern "C" {
#endif

/** ION's default LTP UDP port. */
#define LTP_UDP_DEFAULT_PORT 1113

typedef struct ltp_udp ltp_udp;

/** Options for ltp_udp_new(); zero fields take the defaults. */
typedef struct ltp_udp_cfg {
    size_t rcvbuf;     /**< receive buffer to ask for (0: 64 MiB) */
    size_t sndbuf;     /**< send buffer to ask for (0: 16 MiB) */
    size_t max_queue;  /**< bytes queued per peer before drops (0: 256 MiB) */
    unsigned batch;    /**< datagrams per sendmmsg/recvmmsg, 1..256 (0: 64) */
    size_t warn_below; /**< warn if a socket buffer ends up smaller (0: 8 MiB) */
} ltp_udp_cfg;

/** Counters. "now" fields are levels, the rest only grow. */
typedef struct ltp_udp_stats {
    uint64_t dgrams_in, bytes_in;    /**< datagrams received (and handed to the engine) */
    uint64_t dgrams_out, bytes_out;  /**< datagrams the kernel accepted */
    uint64_t send_calls, recv_calls; /**< sendmmsg / recvmmsg system calls */
    uint64_t would_block;            /**< times the socket pushed back (EAGAIN/ENOBUFS) */
    uint64_t rate_waits;             /**< times a peer's token bucket ran dry */
    uint64_t send_errors;            /**< other send failures (each drops one datagram) */
    uint64_t recv_errors;            /**< recvmmsg failures other than EAGAIN */
    uint64_t drop_queue_full;        /**< segments dropped: peer queue over max_queue */
    uint64_t drop_no_peer;           /**< segments for an engine with no peer address */
    uint64_t drop_too_big;           /**< segments larger than a UDP datagram */
    uint64_t drop_truncated;         /**< datagrams received larger than the buffer */
    uint64_t drop_no_engine;         /**< datagrams received before ltp_udp_attach */
    uint64_t queued_now, queued_bytes_now; /**< waiting in the peer queues */
    uint64_t queued_bytes_max;             /**< high-water mark of queued bytes */
    int rcvbuf, sndbuf; /**< socket buffer sizes the kernel granted (bytes) */
} ltp_udp_stats;

/**
 * Parses an ION link-service-output command,
 * "udplso {<host>|@}[:<port>] [<rate bits/s>] [<engine>]": the host (a name,
 * an IPv4 literal or a bracketed IPv6 literal "[::1]"; "@" means 127.0.0.1),
 * the port (default 1113) and the rate (default 0: unlimited). A trailing
 * engine number, which ION's ltpadmin appends, is accepted and ignored.
 * Returns 0 or TERN_ESYNTAX with a message naming what was expected in err.
 */
TERN_API int ltp_udp_parse_lso(const char *cmd, char *host, size_t hostcap,
                               unsigned *port, uint64_t *rate_bps, char *err,
                               size_t errcap);

/**
 * Parses an ION link-service-input command, "udplsi {<host>|@}[:<port>]"
 * ("@" means every local address, 0.0.0.0; port 0 binds any free port).
 */
TERN_API int ltp_udp_parse_lsi(const char *cmd, char *host, size_t hostcap,
                               unsigned *port, char *err, size_t errcap);

/**
 * Creates a link service whose socket is bound to lsi: "host:port" or a whole
 * "udplsi ..." command (port 0: any free port, see ltp_udp_port). cfg may be
 * NULL; lg may be NULL. Names are resolved with getaddrinfo. Socket buffers
 * are raised (SO_RCVBUFFORCE / SO_SNDBUFFORCE when permitted, else up to
 * net.core.rmem_max / wmem_max) and a warning names the sysctl to raise when
 * the result is below cfg->warn_below.
 */
TERN_API int ltp_udp_new(tern_loop *loop, const char *lsi, const ltp_udp_cfg *cfg,
                         tern_log *lg, ltp_udp **out);

/** The port the socket is bound to. */
TERN_API unsigned ltp_udp_port(const ltp_udp *u);

/** The socket, for diagnostics (do not read from or close it). */
TERN_API int ltp_udp_fd(const ltp_udp *u);

/**
 * Sets where segments for engine go: "host:port" or a whole "udplso ..."
 * command, and the rate in bits/s (0: unlimited; a nonzero rate_bps overrides
 * the one in a udplso command). Calling it again for the same engine replaces
 * the address and rate. Errors: TERN_ESYNTAX, -EINVAL, -EAFNOSUPPORT (the
 * address family does not match the socket's), getaddrinfo failures as
 * TERN_ENOTFOUND.
 */
TERN_API int ltp_udp_add_peer(ltp_udp *u, uint64_t engine, const char *lso,
                              uint64_t rate_bps);

/**
 * The rate of the link to engine now, bits/s (the contact plan's rate for
 * the contact in effect; 0: none known). Segments go at the lower of it and
 * the udplso rate. TERN_ENOTFOUND if the engine has no peer entry.
 */
TERN_API int ltp_udp_set_link_rate(ltp_udp *u, uint64_t engine, uint64_t rate_bps);

/**
 * With on, an engine that has no address (ltp_udp_add_peer) but a span in
 * the attached engine gets the source address of the segments it
 * originates (data, cancel-from-sender): for receivers whose senders bind
 * port 0. Segments naming an engine without a span teach nothing. Configured
 * addresses are never replaced. Off by default.
 */
TERN_API int ltp_udp_learn(ltp_udp *u, int on);

/** Starts delivering received datagrams to e (ltp_engine_receive). NULL
 * detaches (datagrams then wait in the kernel). */
TERN_API int ltp_udp_attach(ltp_udp *u, ltp_engine *e);

/**
 * The ltp_host.send callback: ctx is the ltp_udp. Queues (or sends) one
 * segment to engine peer. 0 when queued; -ENOBUFS when dropped because the
 * peer's queue is full; TERN_ENOTFOUND for an engine with no address;
 * -EMSGSIZE for a segment that cannot be a datagram.
 */
TERN_API int ltp_udp_send(void *ctx, uint64_t peer, const uint8_t *seg, size_t len);

/** The ltp_host.send_buf callback: room for a len-byte data segment at the
 * tail of peer's queue (NULL where ltp_udp_send would refuse it, or with
 * no memory). */
TERN_API uint8_t *ltp_udp_send_buf(void *ctx, uint64_t peer, size_t len);

/** The ltp_host.send_commit callback: sends or queues the segment written
 * where ltp_udp_send_buf said, as ltp_udp_send would (without copying it). */
TERN_API int ltp_udp_send_commit(void *ctx, uint64_t peer, uint8_t *seg, size_t len);

/** The link to engine is down (hold) or up again: while held, segments for it
 * stay queued (what LTP queued before its span went down leaves when the
 * link returns, and the timers of checkpoints among them start then) instead
 * of being sent into the outage. TERN_ENOTFOUND for an unknown engine. */
TERN_API int ltp_udp_hold(ltp_udp *u, uint64_t engine, int hold);

/** Tries to send everything queued now (normally done at the end of each
 * loop iteration). Returns the number of datagrams still queued. */
TERN_API size_t ltp_udp_flush(ltp_udp *u);

/** Counters. */
TERN_API void ltp_udp_stats_get(const ltp_udp *u, ltp_udp_stats *st);

/**
 * The last datagram the engine refused as malformed (unknown_engine 0) or
 * as a session of an engine without a span (1), counted in ltp_stats: its
 * size, sender, time and cause, "" if there was none.
 */
TERN_API const char *ltp_udp_last_refused(const ltp_udp *u, int unknown_engine);

/** Stops the watchers and timers, closes the socket and frees what is queued. */
TERN_API void ltp_udp_free(ltp_udp *u);

#ifdef __cplusplus
}
#endif
#endif
