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
 *
 * The same adapter, created with bp_udpm_cla_new, is the broadcast
 * convergence layer "udpm" (docs/udpm.md): one datagram reaches every node
 * on an IPv4 multicast group or broadcast address.
 *
 *   a protocol udpm
 *   a induct udpm 239.1.2.3:4556 'udpmcli [if=<IPv4>]'
 *       -> bp_udpm_cla_induct(c, "239.1.2.3:4556", "udpmcli ...", &port)
 *   a outduct udpm 239.1.2.3:4556 'udpmclo [<rate>] [ttl=N] [if=<IPv4>] [loop=0|1]'
 *   a plan 3 udpm/239.1.2.3:4556
 *
 * Outduct: names "<IPv4 group or broadcast address>:<port>" (numeric; port
 * 4556 by default). Each duct has a socket of its own, since the options
 * are per socket: IP_MULTICAST_TTL ttl= (default 1: the link only),
 * IP_MULTICAST_IF if= (the interface with that IPv4 address; for a
 * broadcast address the socket is bound to it instead, which picks the
 * source address), IP_MULTICAST_LOOP loop= (default 1, so that nodes on one
 * host, 127.0.0.1 or one namespace, hear each other). SO_BROADCAST is set
 * for an address that is not multicast. Pacing, sendmmsg batches, the
 * default maximum payload (BP_UDP_MAX_PAYLOAD) and the refusal of what
 * cannot fit are the udp outduct's: a larger bundle is fragmented by the
 * agent to fit; one that may not be fragmented is deleted when routed to
 * the duct (bp_agent_send returns TERN_ETOOBIG, the log names the limit),
 * or refused by send with -EMSGSIZE and a log line.
 *
 * Induct: binds "<group>:<port>" (port 0: any free port, for
 * tern_ports_publish) with SO_REUSEADDR and SO_REUSEPORT, so that several
 * nodes of one host listen on one group port (the kernel gives each of them
 * every multicast or broadcast datagram); a multicast group is joined on
 * the interface of if= (default: the one the kernel's routes choose) and
 * the socket is bound to the group address; for a broadcast or unicast
 * address the socket is bound to INADDR_ANY on the port.
 *
 * Receive filter: a broadcast medium carries bundles for everyone, so only
 * bundles whose destination is this node (ipn:<node>.*, or the dtn name
 * set with bp_udpm_cla_set_dtn_name) or a group (imc:, the agent decides)
 * go to the agent; the others are counted in not_for_us and dropped (the
 * destination is read from the primary block, nothing more is decoded). A
 * udpm hop therefore never relays: the destination must be on the medium.
 * Datagrams from this adapter's own outduct sockets (source address one of
 * this host's, source port that of the socket), which loop=1 brings back,
 * are counted in own_in and dropped.
 */
#ifndef TERN_BP_UDP_H
#define TERN_BP_UDP_H

#include <stdbool.h>
#include <stddef.h>
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
    uint64_t not_for_us;            /**< udpm: bundles for other nodes (dropped) */
    uint64_t own_in;                /**< udpm: our own datagrams looped back (dropped) */
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

/** Creates the broadcast convergence layer "udpm" (see above) for agent a
 * on loop and registers it as protocol "udpm". lg may be NULL. Freed with
 * bp_udp_cla_free; its counters come from bp_udp_cla_stats. */
TERN_API int bp_udpm_cla_new(bp_agent *a, tern_loop *loop, tern_log *lg,
                             bp_udp_cla **out);

/**
 * Opens a udpm induct (udpmcli): addr is "<IPv4 group or broadcast
 * address>[:<port>]" (port 4556 by default, 0 for any free port), cmd ""
 * or "udpmcli [if=<IPv4 address>]" (may be NULL). *bound_port (may be NULL)
 * gets the port bound. Errors: TERN_ESYNTAX (logged, naming what was
 * expected), -errno from socket, bind or IP_ADD_MEMBERSHIP; -EINVAL if c
 * is not a udpm adapter.
 */
TERN_API int bp_udpm_cla_induct(bp_udp_cla *c, const char *addr, const char *cmd,
                                uint16_t *bound_port);

/** Checks a udpm duct's name and command as bp_udpm_cla_induct (outduct
 * false) or the outduct's open (outduct true) would, without opening
 * anything: 0, or TERN_ESYNTAX with why (may be NULL) saying what was
 * expected. For configuration checks that name file:line. */
TERN_API int bp_udpm_check(bool outduct, const char *name, const char *cmd, char *why,
                           size_t cap);

/** Also takes bundles for dtn node name ("//name", NULL or "" for none):
 * their destination is "dtn://name" or "dtn://name/...". */
TERN_API int bp_udpm_cla_set_dtn_name(bp_udp_cla *c, const char *name);

/** The adapter's counters. */
TERN_API void bp_udp_cla_stats(const bp_udp_cla *c, bp_udp_stats *st);

/** Frees the adapter and closes its sockets: after bp_agent_free, or after
 * its outducts are gone. NULL is fine. */
TERN_API void bp_udp_cla_free(bp_udp_cla *c);

#ifdef __cplusplus
}
#endif
#endif
