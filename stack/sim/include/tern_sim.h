/* tern_sim: whole networks of Tern nodes in one process, on a virtual clock.
 *
 * Each node is what ternd would host — an in-memory store, an LTP engine, a
 * bundle protocol agent with its LTP convergence layer, a logger — configured
 * from an ION host.rc text (ionadmin, ltpadmin, bpadmin, ipnadmin sections).
 * Nodes are joined by simulated links: per direction a FIFO transmitter with
 * a rate, a one-way delay, a segment loss probability, and scheduled
 * outages. Every engine and agent shares one tern_loop on one virtual clock,
 * so the clock jumps from event to event: hours of light time pass in
 * milliseconds of real time.
 *
 * Every random draw (segment loss) comes from the simulation's own seeded
 * generator, so a seed reproduces a run exactly. Nothing is global: several
 * simulations may live in one process (each used by one thread at a time).
 *
 * The API uses plain C types so that ctypes can call it (bindings/python/
 * tern/sim.py); nodes are named by their ipn node number. Calls return 0 (or
 * a documented positive value) or a negative error (tern/base.h).
 */
#ifndef TERN_SIM_H
#define TERN_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "bp_agent.h"
#include "bp_cgr.h"
#include "ltp.h"
#include "sdr.h"
#include "tern/base.h"
#include "tern/clock.h"
#include "tern/log.h"
#include "tern/loop.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Bumped whenever a public struct or signature of libternsim changes. */
#define TERN_SIM_ABI_VERSION 2

/** The ABI version libternsim was built with (TERN_SIM_ABI_VERSION). */
TERN_API int tern_sim_abi_version(void);

typedef struct tern_sim tern_sim;

/** Default DTN start time: 2025-01-01T00:00:00Z. */
#define TERN_SIM_DEFAULT_START_MS UINT64_C(789004800000)

/** Simulation settings; zero fields take the defaults. */
typedef struct tern_sim_cfg {
    uint64_t seed;         /**< seeds the generator (0 is a seed like any other) */
    uint64_t start_dtn_ms; /**< DTN time at virtual time 0 (0: the default above) */
    uint64_t heap_bytes;   /**< each node's store heap (0: 256 MiB; memory is
                                only touched as it is used) */
    const char *log_dir;   /**< each node logs to <log_dir>/node<N>.log, with
                                virtual timestamps (NULL: no log files;
                                warnings and errors go to stderr) */
    int log_level;         /**< TERN_LOG_* for the files (0: TERN_LOG_ERROR) */
} tern_sim_cfg;

/** Creates a simulation at virtual time 0. */
TERN_API int tern_sim_new(const tern_sim_cfg *cfg, tern_sim **out);

/** Frees the simulation, its nodes, links and everything in flight. NULL is fine. */
TERN_API void tern_sim_free(tern_sim *s);

/* ------------------------------------------------------------------ nodes */

/**
 * Adds a node configured by an ION host.rc text (sections between "## begin
 * <admin>" and "## end <admin>"): ionadmin (its "1 <node>" names the node;
 * ranges give LTP spans their one-way light time; "+N" times count from now),
 * ltpadmin (the engine and its spans; link-service commands are ignored:
 * links come from tern_sim_link_add), bpadmin and ipnadmin (endpoints,
 * outducts, plans). name labels the text in messages (NULL: "node<k>.rc",
 * k counting nodes from 1). On a configuration error, err gets "file:line:
 * what was wrong; what was expected" and nothing is added. *node (may be
 * NULL) gets the node number. TERN_EEXIST if the number is taken.
 */
TERN_API int tern_sim_node_add(tern_sim *s, const char *name, const char *rc, char *err,
                               size_t errlen, uint64_t *node);

/** Number of nodes, and the i-th node's number (0 if out of range). */
TERN_API size_t tern_sim_node_count(const tern_sim *s);
TERN_API uint64_t tern_sim_node_at(const tern_sim *s, size_t i);

/** A node's parts, for C tests and tools (NULL if there is no such node or
 * the node has no such part: a node without bpadmin has no agent). */
TERN_API bp_agent *tern_sim_node_agent(const tern_sim *s, uint64_t node);
TERN_API ltp_engine *tern_sim_node_engine(const tern_sim *s, uint64_t node);
TERN_API sdr *tern_sim_node_store(const tern_sim *s, uint64_t node);
TERN_API tern_log *tern_sim_node_log(const tern_sim *s, uint64_t node);

/** For nodes without an agent (LTP-only tests): LTP notices for every
 * client service go to fn (C only). Without fn, red parts are counted (and
 * counted as deliveries). */
typedef int (*tern_sim_ltp_fn)(void *ctx, uint64_t node, const ltp_notice *n);
TERN_API int tern_sim_node_ltp_hook(tern_sim *s, uint64_t node, tern_sim_ltp_fn fn,
                                    void *ctx);

/* ------------------------------------------------------------------ links */

/** Link flags. */
#define TERN_SIM_ONE_WAY 0x1u /**< tern_sim_link_add: only the direction a -> b */
#define TERN_SIM_SILENT  0x2u /**< tern_sim_outage_add: drop only, tell nobody */
#define TERN_SIM_CONTACTS                                                                \
    0x4u /**< tern_sim_link_add: each direction follows the contact plan (below) */

/**
 * Joins nodes a and b (both directions, or a -> b with TERN_SIM_ONE_WAY).
 * Per direction: segments queue FIFO behind a transmitter of rate bytes/s
 * (0: unlimited), then travel delay_ms; each is lost with probability loss
 * (0..1). A span without a contact-plan range gets delay_ms as its one-way
 * light time. TERN_EEXIST if a direction exists; TERN_ENOTFOUND for an
 * unknown node; TERN_ESTATE if a node has no LTP engine.
 *
 * With TERN_SIM_CONTACTS each direction x -> y follows the contact plan of
 * its sending node x: it is up exactly while a contact from x to y (with a
 * rate above 0) is in effect, and its delay is then the light time of the
 * range in effect when the contact began (delay_ms if no range covers it).
 * A direction that no contact of x's plan names is always up. Segments
 * handed to a direction outside its contacts are dropped and counted
 * (tern_sim_link_contact_stats: outside); those sent inside arrive whenever
 * their delay says, even after the contact ended. At each change x is told
 * (ltp_span_link, and the "ltp" outduct's bp_outduct_set_up), as for an
 * outage; the plan is read again at every change and by
 * tern_sim_node_ionadmin.
 */
TERN_API int tern_sim_link_add(tern_sim *s, uint64_t a, uint64_t b, uint64_t delay_ms,
                               uint64_t rate, double loss, unsigned flags);

/** Changes the direction a -> b: delay, rate and loss apply to segments sent
 * from now on (arrivals never overtake earlier ones). */
TERN_API int tern_sim_link_set(tern_sim *s, uint64_t a, uint64_t b, uint64_t delay_ms,
                               uint64_t rate, double loss);

/**
 * Takes the link a <-> b down from virtual time from_ms until until_ms
 * (milliseconds since the simulation began; a start already past begins
 * now). Segments sent, or arriving, while it is down are dropped. At the
 * start and the end both ends are told (ltp_span_link and the "ltp" outduct's
 * bp_outduct_set_up), unless TERN_SIM_SILENT. Outages may overlap.
 */
TERN_API int tern_sim_outage_add(tern_sim *s, uint64_t a, uint64_t b, uint64_t from_ms,
                                 uint64_t until_ms, unsigned flags);

/** Counters of one link direction, all uint64_t. */
typedef struct tern_sim_link_stats {
    uint64_t sent;            /**< segments handed to the link */
    uint64_t bytes_sent;      /**< their bytes */
    uint64_t lost;            /**< lost to the loss probability */
    uint64_t dropped;         /**< dropped by outages */
    uint64_t delivered;       /**< segments handed to the far engine */
    uint64_t bytes_delivered; /**< their bytes */
    uint64_t queued;          /**< segments on the link now (queued or flying) */
    uint64_t max_queued;      /**< the most there have been */
    uint64_t down;            /**< 1 while an outage holds the link down */
} tern_sim_link_stats;

/** Counters of the direction a -> b. TERN_ENOTFOUND if there is none. */
TERN_API int tern_sim_link_stats_get(const tern_sim *s, uint64_t a, uint64_t b,
                                     tern_sim_link_stats *st);

/** Contact-plan counters of a TERN_SIM_CONTACTS direction, all uint64_t. */
typedef struct tern_sim_contact_stats {
    uint64_t follows;          /**< 1 if the direction follows the contact plan */
    uint64_t open;             /**< 1 while a contact is in effect (as x was told) */
    uint64_t windows;          /**< contacts that have begun */
    uint64_t outside;          /**< segments handed over outside contacts (dropped) */
    uint64_t bytes_in_contact; /**< bytes handed over inside contacts */
} tern_sim_contact_stats;

/** The contact counters of the direction a -> b. TERN_ENOTFOUND if there is
 * no such direction. */
TERN_API int tern_sim_link_contact_stats(const tern_sim *s, uint64_t a, uint64_t b,
                                         tern_sim_contact_stats *st);

/* ----------------------------------------------------- contact graph routing */

/**
 * Contact Graph Routing (bp_cgr.h) on every node with an agent, those there
 * now and those added later (on 1) or on none (0): each node routes by its own
 * contact plan, and its outducts toward neighbours its plan's contacts name
 * send only during those contacts, at their rate.
 */
TERN_API int tern_sim_set_cgr(tern_sim *s, int on);

/** The same for one node. TERN_ESTATE if it has no agent. */
TERN_API int tern_sim_node_cgr(tern_sim *s, uint64_t node, int on);

/**
 * Applies ionadmin commands (a|d|l contact, a|d|l range; one per line, "+N"
 * counting from now) to node's contact plan, then tells its CGR engine and
 * its TERN_SIM_CONTACTS links. out (may be NULL) gets listings or the error
 * ("file:line: ..."). -ENOTSUP for other ionadmin commands.
 */
TERN_API int tern_sim_node_ionadmin(tern_sim *s, uint64_t node, const char *cmds,
                                    char *out, size_t cap);

/**
 * The route node's CGR engine would give now a bundle of size bytes for node
 * dest, living lifetime_ms more (0: forever), of class priority (nothing is
 * booked). Fills nodes[0..cap) with the nodes after this one and from_ms
 * (may be NULL) with each contact's start, virtual ms (0 for one already in
 * effect at the simulation's start); *arrival_ms (may be NULL) gets the
 * projected arrival, virtual ms. Returns the number of hops, or
 * TERN_ENOTFOUND (no route), -ETIME (none in time), TERN_EFULL (contacts
 * booked full), TERN_ESTATE (the node does not route by CGR).
 */
TERN_API int tern_sim_cgr_route(tern_sim *s, uint64_t node, uint64_t dest, uint64_t size,
                                uint64_t lifetime_ms, int priority, uint64_t *nodes,
                                uint64_t *from_ms, size_t cap, uint64_t *arrival_ms);

/** A node's CGR counters (bp_cgr_stats) as an array: fills vals[0..cap)
 * and returns how many there are; tern_sim_cgr_counter_name(i) names them
 * ("routed", "too_late", ...; NULL past the end). TERN_ESTATE if the node
 * does not route by CGR. */
TERN_API int tern_sim_cgr_counters(const tern_sim *s, uint64_t node, uint64_t *vals,
                                   size_t cap);
TERN_API const char *tern_sim_cgr_counter_name(size_t i);

/** Writes node's CGR status text (bp_cgr_status) into buf. */
TERN_API int tern_sim_cgr_status(const tern_sim *s, uint64_t node, char *buf, size_t cap);

/* --------------------------------------------------------------- bundles */

/**
 * bp_agent_send on node: a bundle from src to dest (EID texts) carrying
 * payload[0..len). lifetime_ms 0 means one day; priority BP_PRIO_*; ordinal
 * for expedited bundles; flags BP_FLAG_*; hop_limit 0 for none; report_to
 * NULL for the source. *ctime_ms and *seq (may be NULL) identify the bundle.
 * TERN_ESYNTAX for a malformed EID, TERN_ESTATE if the node has no agent.
 */
TERN_API int tern_sim_send(tern_sim *s, uint64_t node, const char *src, const char *dest,
                           const void *payload, size_t len, uint64_t lifetime_ms,
                           int priority, unsigned ordinal, uint64_t flags,
                           uint64_t hop_limit, const char *report_to, uint64_t *ctime_ms,
                           uint64_t *seq);

/**
 * bp_agent_recv on node for endpoint eid: takes the oldest bundle queued there.
 * src (srccap bytes) gets its source EID text; ctime_ms, seq, flags (each
 * may be NULL) its creation time, sequence number and processing flags;
 * buf[0..cap) its payload, *len its length. TERN_EAGAIN if none is queued;
 * TERN_ENOSPACE if cap is too small, with *len the size needed (the bundle
 * stays first in line for the next call).
 */
TERN_API int tern_sim_recv(tern_sim *s, uint64_t node, const char *eid, char *src,
                           size_t srccap, uint64_t *ctime_ms, uint64_t *seq,
                           uint64_t *flags, void *buf, size_t cap, size_t *len);

/* ---------------------------------------------------------------- running */

/** Why tern_sim_run() returned. */
enum tern_sim_stop {
    TERN_SIM_STOP_TIME = 1,       /**< virtual time reached until_ms */
    TERN_SIM_STOP_DELIVERIES = 2, /**< the deliveries asked for happened */
    TERN_SIM_STOP_IDLE = 3,       /**< nothing was left to do (until_ms UINT64_MAX) */
};

/**
 * Runs the network until virtual time until_ms (ms since the simulation
 * began; UINT64_MAX: no limit) or, if deliveries > 0, until that many
 * bundles have been delivered to endpoints (any node) during this call.
 * Returns a tern_sim_stop value, or a negative error.
 */
TERN_API int tern_sim_run(tern_sim *s, uint64_t until_ms, uint64_t deliveries);

/** Virtual time: ms since the simulation began, and DTN time. */
TERN_API uint64_t tern_sim_now_ms(const tern_sim *s);
TERN_API uint64_t tern_sim_dtn_ms(const tern_sim *s);

/** Bundles delivered to endpoints so far, all nodes together. */
TERN_API uint64_t tern_sim_deliveries(const tern_sim *s);

/** The shared loop and its virtual clock. */
TERN_API tern_loop *tern_sim_loop(const tern_sim *s);
TERN_API tern_clock *tern_sim_clock(const tern_sim *s);

/** A draw from the simulation's generator (for tests that want theirs
 * reproduced by the same seed). */
TERN_API uint64_t tern_sim_random(tern_sim *s);

/* ---------------------------------------------------------------- counters */

/** A node's counters, all uint64_t. */
typedef struct tern_sim_node_stats {
    uint64_t deliveries; /**< bundles (or, without an agent, red parts) delivered */
    uint64_t red_parts;  /**< LTP red parts received by a node without an agent */
    uint64_t red_bytes;
    bp_agent_stats bp; /**< zero without an agent */
    ltp_stats ltp;     /**< zero without an engine */
} tern_sim_node_stats;

/** A node's counters. TERN_ENOTFOUND if there is no such node. */
TERN_API int tern_sim_node_stats_get(const tern_sim *s, uint64_t node,
                                     tern_sim_node_stats *st);

/** The same counters as an array, for bindings: fills vals[0..cap) and
 * returns how many counters there are; tern_sim_node_counter_name(i) names
 * counter i ("deliveries", "bp.created", "ltp.seg_out", ...; NULL past the
 * end). tern_sim_link_counters/_name do the same for a link direction. */
TERN_API int tern_sim_node_counters(const tern_sim *s, uint64_t node, uint64_t *vals,
                                    size_t cap);
TERN_API const char *tern_sim_node_counter_name(size_t i);
TERN_API int tern_sim_link_counters(const tern_sim *s, uint64_t a, uint64_t b,
                                    uint64_t *vals, size_t cap);
TERN_API const char *tern_sim_link_counter_name(size_t i);

#ifdef __cplusplus
}
#endif
#endif
