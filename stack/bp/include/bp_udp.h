/* The UDP convergence layer: ION's "udpcli" / "udpclo", one bundle per
 * datagram.
 *
 *   a protocol udp
 *   a induct udp 0.0.0.0:4556 udpcli        -> bp_udp_cla_induct(c, "0.0.0.0:4556",
 * &port) a outduct udp 127.0.0.1:4556 udpclo     -> bp_outduct_add(a, "udp",
 * "127.0.0.1:4556", "udpclo", 0)
 *
 * Outduct names are the peer's induct address: "<host>[:<port>]" or
 * "[<IPv6>][:<port>]", port 4556 by default; host names are resolved once,
 * when the outduct opens. Each bundle is sent as one datagram, raw (no
 * header), as ION does. An outduct with no configured maximum payload gets
 * BP_UDP_MAX_PAYLOAD, so the agent fragments larger bundles to fit; a bundle
 * that still does not fit a datagram (it forbids fragmentation, or its blocks
 * are very large) is refused with -EMSGSIZE and the agent deletes it.
 *
 * A bundle counts as forwarded (BP_XMIT_OK) once the kernel has taken the
 * datagram: UDP says nothing about delivery. Bundles given to the adapter in
 * one loop iteration leave together in sendmmsg batches at the end of it
 * (the agent keeps each encoded bundle until its result, so nothing is
 * copied). Outducts share one unbound socket per address family; each induct
 * has its own bound socket, read with recvmmsg.
 *
 * Each outduct is paced (tern/pace.h) at the lower of its "udpclo <rate>"
 * (bits/s) and the rate of the contact in effect (the outduct's gate), in
 * bursts of at most TERN_PACE_BURST_MAX bytes, as ION's udpclo keeps to its
 * contact: a receiver that keeps Linux's default socket buffer (ION's
 * udpcli) would otherwise drop most of a burst. Without either rate it
 * sends as fast as the socket takes bundles.
 */
#ifndef TERN_BP_UDP_H
#define TERN_BP_UDP_H

#include <stdint.h>

#include "bp_agent.h"
#include "tern/log.h"
#include "tern/loop.h"

#ifdef __cplusplus
extern "C" {
#endif

/** ION's default port for BP over UDP (udpcli and udpclo). */
#define BP_UDP_DEFAULT_PORT 4556

/** Largest UDP payload over IPv4 (65,535 - 20 - 8) and over IPv6 (no jumbograms). */
#define BP_UDP_MAX_DGRAM4 65507
#define BP_UDP_MAX_DGRAM6 65527

/** Default maximum payload of a udp outduct: leaves 1,024 bytes of a
 * 65,000-byte datagram for the primary and extension blocks of a fragment. */
#define BP_UDP_MAX_PAYLOAD (65000 - 1024)

typedef struct bp_udp_cla bp_udp_cla;

/** Counters; they only grow. */
typedef struct bp_udp_stats {
    uint64_t dgrams_in, bytes_in; /**< datagrams read from the inducts */
    uint64_t bundles_in;          /**< bundles the agent took from them */
    uint64_t refused_in;          /**< datagrams the agent took nothing from
                                       (malformed, store full; see its counters) */
    uint64_t empty_in;            /**< zero-length datagrams (ignored) */
    uint64_t truncated;           /**< datagrams larger than the receive buffer */
    uint64_t kernel_drops;        /**< datagrams the kernel dropped at the inducts
                                       (socket buffer full; SO_RXQ_OVFL) */
    uint64_t recv_calls, recv_errors;
    uint64_t dgrams_out, bytes_out; /**< datagrams the kernel accepted */
    uint64_t send_calls;            /**< sendmmsg system calls */
    uint64_t would_block;           /**< times a socket pushed back (EAGAIN/ENOBUFS) */
    uint64_t send_errors;           /**< other send failures (bundle forwarded again) */
    uint64_t too_big;               /**< bundles refused with -EMSGSIZE */
    uint64_t rate_waits;            /**< times a duct waited for its pacing */
} bp_udp_stats;

/** Creates the UDP convergence layer for agent a on loop and registers it as
 * protocol "udp". lg may be NULL. */
TERN_API int bp_udp_cla_new(bp_agent *a, tern_loop *loop, tern_log *lg, bp_udp_cla **out);

/**
 * Opens an induct (ION's udpcli): binds a socket to addr, "<host>[:<port>]"
 * or "[<IPv6>][:<port>]" (port 4556 by default, 0 for any free port), and
 * hands every datagram that arrives to bp_agent_receive. *bound_port (may be
 * NULL) gets the port actually bound, for tern_ports_publish. Errors:
 * TERN_ESYNTAX (logged, naming what was expected), TERN_ENOTFOUND (unknown
 * host), -errno from socket or bind.
 */
TERN_API int bp_udp_cla_induct(bp_udp_cla *c, const char *addr, uint16_t *bound_port);

/** The adapter's counters. */
TERN_API void bp_udp_cla_stats(const bp_udp_cla *c, bp_udp_stats *st);

/** Frees the adapter and closes its sockets: after bp_agent_free, or after
 * its outducts are gone. NULL is fine. */
TERN_API void bp_udp_cla_free(bp_udp_cla *c);

#ifdef __cplusplus
}
#endif
#endif
