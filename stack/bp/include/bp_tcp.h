/* BP over TCP: the convergence layers "tcp" (TCPCLv4, RFC 9174, and TCPCLv3,
 * RFC 7242), "stcp" (ION's simple TCP) and "mtcp" (draft-ietf-dtn-mtcpcl), on
 * real sockets on the agent's loop. Codecs: bp_tcpcl.h. A tcp induct speaks
 * the version of each peer's contact header; a tcp outduct speaks v4 and falls
 * back to v3 when the peer answers with a v3 contact header. See docs/tcpcl.md.
 *
 *   a protocol tcp
 *   a induct tcp 127.0.0.1:4556 tcpcli    (bp_tcp_cla_induct(c, "tcp", ...))
 *   a outduct tcp 127.0.0.1:4556 tcpclo   (bp_outduct_add(a, "tcp", ...))
 *   a induct stcp 127.0.0.1:4557 stcpcli  and  a outduct stcp ... stcpclo
 *   a induct mtcp 127.0.0.1:4558 mtcpcli  and  a outduct mtcp ... mtcpclo
 *
 * Duct names are "<host>[:<port>]" or "[<IPv6>][:<port>]", port 4556 by
 * default. Every socket has TCP_NODELAY. An outduct connects when it opens
 * and again, with back-off (0.1 s doubling to 5 s), whenever its connection
 * drops; while it is down the agent keeps its bundles queued. A bundle counts
 * as forwarded (BP_XMIT_OK) once the peer acknowledged all of it (tcp: the
 * final XFER_ACK or v3 ACK_SEGMENT) or, for stcp and mtcp, which have no
 * acknowledgements, once the peer's TCP acknowledged its last byte (so does v3 without
 * acknowledgements); bundles in flight when a connection drops
 * are reported BP_XMIT_FAILED and forwarded again. An induct acknowledges a
 * transfer only after bp_agent_receive committed the bundle and the store
 * says it is durable. A peer that breaks its protocol is dropped with a
 * logged reason; the others are served on.
 *
 * Limits against hostile peers, set with options after the command word of
 * an induct ("tcpcli maxconns=64 peerconns=4 idle=120 rxbuffer=67108864
 * xfermru=16777216"; each optional, defaults below) and, for idle and
 * xfermru, of an outduct ("tcpclo idle=600"): connections at once per induct
 * (maxconns) and per peer address on it (peerconns), beyond which a
 * connection is accepted and closed at once; the largest bundle a session
 * takes (xfermru: TCPCLv4's advertised transfer MRU, the v3, STCP and MTCP
 * bundle limit), which bounds what one session buffers; the bytes all
 * sessions of an induct may hold for input not yet complete (rxbuffer), a
 * session beyond its share waiting (not reading) until the others give
 * some back; and the time (idle, seconds, 0: never) after which a session
 * that made no progress — no bundle or acknowledgement in either direction,
 * less than 1 MiB moved — is closed, whatever its keepalive (an outduct's
 * only while it has bundles in flight). Every line a peer can cause is
 * logged at most once per 10 s per cause, with the count of the others.
 */
#ifndef TERN_BP_TCP_H
#define TERN_BP_TCP_H

#include <stdint.h>

#include "bp_agent.h"
#include "tern/log.h"
#include "tern/loop.h"

#ifdef __cplusplus
extern "C" {
#endif

#define BP_TCP_DEFAULT_PORT 4556

/* Defaults of the induct and outduct options (see above). */
#define BP_TCP_MAXCONNS  256
#define BP_TCP_PEERCONNS 8
#define BP_TCP_IDLE_S    300
#define BP_TCP_RXBUFFER  (256ull << 20)
#define BP_TCP_XFER_MRU  (128ull << 20)

typedef struct bp_tcp_cla bp_tcp_cla;

/** Counters; they only grow (but rx_held). */
typedef struct bp_tcp_stats {
    uint64_t accepted, connects, connect_failures, drops; /**< connections */
    uint64_t protocol_errors; /**< peers dropped for breaking their protocol */
    uint64_t bundles_in, bundles_out, bytes_in, bytes_out;
    uint64_t refused_in;    /**< received bundles the agent did not take */
    uint64_t failed_out;    /**< bundles reported FAILED (drop, refusal) */
    uint64_t pauses;        /**< times a connection stopped reading: the store was full */
    uint64_t refused_conns; /**< connections closed at accept: maxconns or peerconns */
    uint64_t idle_closes;   /**< sessions closed for making no progress (idle) */
    uint64_t starved;       /**< times a session waited: its induct's rxbuffer was used */
    uint64_t rx_held;       /**< now (not a counter): bytes the inducts' sessions hold for
                                 incomplete input */
} bp_tcp_stats;

/** Creates the TCP convergence layers for agent a on loop and registers them
 * as protocols "tcp", "stcp" and "mtcp". lg may be NULL. */
TERN_API int bp_tcp_cla_new(bp_agent *a, tern_loop *loop, tern_log *lg, bp_tcp_cla **out);

/**
 * Opens an induct for protocol ("tcp", "stcp" or "mtcp"): listens on addr
 * (port 0: any free port; *bound_port, may be NULL, gets it). cmd (may be
 * NULL) is the induct's command, "tcpcli [key=value ...]" with the options
 * above. Errors: TERN_ESYNTAX (bad address or option; logged),
 * TERN_ENOTFOUND (unknown host or protocol), -errno.
 */
TERN_API int bp_tcp_cla_induct(bp_tcp_cla *c, const char *protocol, const char *addr,
                               const char *cmd, uint16_t *bound_port);

/** The adapter's counters. */
TERN_API void bp_tcp_cla_stats(const bp_tcp_cla *c, bp_tcp_stats *st);

/** Frees the adapter, closing its sockets: after bp_agent_free. NULL is fine. */
TERN_API void bp_tcp_cla_free(bp_tcp_cla *c);

#ifdef __cplusplus
}
#endif
#endif
