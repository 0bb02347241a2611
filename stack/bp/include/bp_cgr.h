/* Contact Graph Routing (CCSDS 734.3-B-1, Schedule-Aware Bundle Routing)
 * and contact-driven transmission.
 *
 * The engine reads a contact plan (bp_plan.h) and answers, for a bundle of a
 * given size, priority and expiry, which neighbour to hand it to now so that
 * it arrives at its destination earliest. It is sans-I/O: every question
 * carries the time (DTN ms); attached to an agent it takes the time from the
 * agent's loop clock.
 *
 * The contact graph. Each contact of the plan (a contact <from> <until>
 * <from node> <to node> <rate>) is a vertex; its one-way light time is the
 * range in effect at the contact's start, from its from node to its to node,
 * or else the reverse one (ranges are symmetric unless a range for the
 * reverse direction says otherwise). A contact no range covers is not used
 * for routing (its light time is unknown), as ION does. Loopback contacts (a
 * node to itself, which ION's configurations carry for a node's own LTP
 * loopback span) are kept in the plan and listed, but never a hop: bundles
 * for this node are delivered by the agent without a route. Contacts with a
 * rate of 0 carry nothing and are skipped. Confidence is read, not used.
 *
 * Routes. A search is Dijkstra over the graph by earliest arrival time: a
 * bundle reaching node v at time t can leave on a contact from v that has
 * not ended, at max(t, contact start), and reaches its to node one light
 * time later; a route never passes through this node again. For a
 * destination the engine keeps a ranked list of up to max_routes routes:
 * the best one, then the best one with the first-ending ("limiting")
 * contact of each earlier route suppressed, and so on. The list is computed
 * when first needed and kept until a contact of one of its routes ends or
 * the plan changes (bp_cgr_plan_changed).
 *
 * Forwarding a bundle (SABR's route selection). Each listed route is judged
 * for this bundle: its first byte leaves each contact once the volume
 * booked ahead of it there is sent (on this node's own contact in progress,
 * what is booked and not yet handed to the convergence layer) and no earlier
 * than it arrives; its last byte leaves size/rate later, which must be
 * before the contact ends; and the contact's residual volume for its
 * priority must hold it. The projected arrival must not be after the
 * bundle's expiry. Among usable routes the earliest projected arrival wins,
 * then fewer hops, then the later closing route, then the smaller neighbour
 * number (ION's order). If no listed route is usable, a search that counts
 * this bundle's size and the booked volumes at every contact looks for one
 * off the list. The chosen route's contacts are booked with the bundle's
 * size.
 *
 * Priorities (ION's classes bulk, standard, expedited) and volume. Each
 * contact has a capacity, rate x duration, and books bytes per class. A
 * bundle of class p sees as free the capacity minus what classes p and
 * above have booked: what lower classes booked does not count against it,
 * because its class goes first out of the queues and pushes their bundles
 * back. So higher priorities book first even when they arrive last, and
 * lower-priority bundles cannot take volume a higher class needs; those
 * pushed out of a contact are routed again when it ends (re-forwarding).
 * A bundle routed again (at a contact's end or after a convergence-layer
 * failure) releases what it had booked first; one deleted while still
 * queued (expired, say) releases it at once (the agent's release hook).
 *
 * Outcomes (the router hook of an attached engine): a route: the neighbour's
 * outduct (its egress plan: ipnadmin "a plan N ..."; a neighbour without one
 * is not used as a first hop); no route to the destination in the contact
 * graph at all: TERN_ENOTFOUND, so the agent's static plans and exits
 * apply; routes exist but none can bring the bundle before it expires:
 * BP_ROUTE_DELETE, the agent deletes it (reason 6, "no known route to
 * destination from here", with a deletion report if asked); routes exist in
 * time but their contacts are fully booked for this bundle's class:
 * TERN_EFULL, the bundle waits in limbo (it is routed again whenever a
 * contact of this node begins or ends or the plan changes).
 *
 * Contact-driven transmission (bp_cgr_attach). For each neighbour that a
 * contact from this node names, its outduct is gated (bp_outduct_set_gate):
 * open while such a contact is in effect, throttled to its rate (the
 * highest if several overlap), closed otherwise. Outducts of neighbours no
 * contact names stay ungated: always open, unthrottled. When a neighbour's
 * contact ends, the bundles still queued on its outduct are routed again
 * (possibly by another route); those already handed to the convergence
 * layer stay with it (LTP keeps its sessions across the gap, timers
 * suspended, and reports a cancelled one, which the agent then routes
 * again).
 */
#ifndef TERN_BP_CGR_H
#define TERN_BP_CGR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bp_agent.h"
#include "bp_plan.h"
#include "tern/base.h"
#include "tern/log.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bp_cgr bp_cgr;

/** Longest route, in contacts. */
#define BP_CGR_MAX_HOPS 32

/** Engine settings; zero fields take the defaults. */
typedef struct bp_cgr_cfg {
    unsigned max_routes; /**< routes kept per destination (0: 8, at most 64) */
} bp_cgr_cfg;

/** One contact of a route. */
typedef struct bp_cgr_hop {
    uint64_t from_node, to_node;
    uint64_t from_ms, until_ms; /**< DTN time */
    uint64_t rate;              /**< bytes/s */
    uint32_t owlt_ms;           /**< one-way light time */
    uint32_t contact;           /**< its index in bp_plan_contacts() */
} bp_cgr_hop;

/** A route from this node. */
typedef struct bp_cgr_route {
    uint64_t next_hop;   /**< the neighbour of the first contact */
    uint64_t arrival_ms; /**< DTN ms: best case for a listed route, the
                              projected arrival for bp_cgr_find's bundle */
    uint64_t to_ms;      /**< DTN ms: the route closes when its first contact
                              to end ends */
    unsigned nhops;
    bp_cgr_hop hops[BP_CGR_MAX_HOPS];
} bp_cgr_route;

/** A bundle to route. */
typedef struct bp_cgr_bundle {
    uint64_t dest;      /**< destination node */
    uint64_t size;      /**< bytes */
    uint64_t expire_ms; /**< DTN ms its lifetime ends (UINT64_MAX: never) */
    int priority;       /**< BP_PRIO_* */
    uint64_t exclude;   /**< a node that may not be the first hop (the one it came
                             from, as ION does), 0: none */
} bp_cgr_bundle;

/** Counters. */
typedef struct bp_cgr_stats {
    uint64_t contacts;      /**< contacts in the graph (usable for routing) */
    uint64_t no_range;      /**< contacts skipped: no range covers their start */
    uint64_t nodes;         /**< nodes in the graph */
    uint64_t searches;      /**< Dijkstra runs */
    uint64_t lists;         /**< route lists computed */
    uint64_t routed;        /**< bundles given a route (and booked) */
    uint64_t off_list;      /**< of those, routes found by the per-bundle search */
    uint64_t unknown;       /**< bundles for a node the graph cannot reach */
    uint64_t too_late;      /**< bundles no route brings before they expire */
    uint64_t no_capacity;   /**< bundles whose routes were fully booked */
    uint64_t reforwarded;   /**< bundles routed again at a contact's end */
    uint64_t gate_opened;   /**< outduct gates opened (contacts began) */
    uint64_t gate_closed;   /**< outduct gates closed (contacts ended) */
    uint64_t plan_changes;  /**< bp_cgr_plan_changed calls */
    uint64_t bookings_live; /**< bundles whose booking is remembered now */
} bp_cgr_stats;

/** Creates an engine for node self over plan. The plan stays the caller's
 * and must outlive the engine; after changing it call
 * bp_cgr_plan_changed(). cfg and lg may be NULL. */
TERN_API int bp_cgr_new(const bp_plan *plan, uint64_t self, const bp_cgr_cfg *cfg,
                        tern_log *lg, bp_cgr **out);

/** Frees the engine, detaching it first. NULL is fine. */
TERN_API void bp_cgr_free(bp_cgr *c);

/**
 * Makes the engine the agent's router and turns on contact-driven
 * transmission (gates on the outducts of neighbours the plan names; a timer
 * on the agent's loop at each start and end of a contact of this node).
 * Call after the agent's outducts and egress plans are configured; bundles
 * in limbo are routed again. -EBUSY if attached already.
 */
TERN_API int bp_cgr_attach(bp_cgr *c, bp_agent *a);

/** Undoes bp_cgr_attach: no router hook, every outduct ungated. */
TERN_API void bp_cgr_detach(bp_cgr *c);

/** The plan (contacts, ranges) or the agent's outducts or egress plans
 * changed: rebuilds the graph (bookings of contacts that remain are kept),
 * drops every route list, sets the gates again and, if attached, routes the
 * bundles in limbo again. */
TERN_API int bp_cgr_plan_changed(bp_cgr *c);

/** Drops the cached route lists (the graph and bookings stay): the next
 * question computes them afresh. */
TERN_API void bp_cgr_forget_routes(bp_cgr *c);

/**
 * The route bundle b should take at now_ms (nothing is booked). 0 with *out
 * filled; TERN_ENOTFOUND if the graph has no route to b->dest at all;
 * -ETIME if routes exist but none brings b before b->expire_ms; TERN_EFULL
 * if routes would bring it in time but their contacts are booked full for
 * its class. -EINVAL for a bad priority or dest.
 */
TERN_API int bp_cgr_find(bp_cgr *c, uint64_t now_ms, const bp_cgr_bundle *b,
                         bp_cgr_route *out);

/** Books size bytes of class priority on every contact of r (a route from
 * bp_cgr_find or bp_cgr_routes since the last plan change). TERN_ENOTFOUND
 * if a hop is not in the graph. */
TERN_API int bp_cgr_book(bp_cgr *c, const bp_cgr_route *r, uint64_t size, int priority);

/** The ranked route list to dest at now_ms (computed if needed): fills
 * out[0..cap) best first and returns how many routes the list holds. */
TERN_API size_t bp_cgr_routes(bp_cgr *c, uint64_t now_ms, uint64_t dest,
                              bp_cgr_route *out, size_t cap);

/** A contact of this node, as tern status shows it. */
typedef struct bp_cgr_contact_info {
    bp_contact contact;   /**< as in the plan */
    uint32_t contact_idx; /**< its index in bp_plan_contacts() */
    bool routable;        /**< in the graph (has a range, a rate, is not loopback) */
    uint32_t owlt_ms;     /**< its light time (routable only) */
    bool in_effect;       /**< from_ms <= now < until_ms */
    uint64_t capacity;    /**< bytes: rate x duration */
    uint64_t booked[3];   /**< bytes booked per class (bulk, standard, expedited) */
} bp_cgr_contact_info;

/** Contacts from this node in effect at now_ms or later (the current ones
 * first, then by start time): fills out[0..cap), returns how many there are. */
TERN_API size_t bp_cgr_local_contacts(bp_cgr *c, uint64_t now_ms,
                                      bp_cgr_contact_info *out, size_t cap);

/** Writes a few lines for tern status into buf[0..cap) (always terminated):
 * the counters, the current and next contacts of this node with their
 * booked volume, and the cached routes. Returns the length it wanted. */
TERN_API int bp_cgr_status(bp_cgr *c, uint64_t now_ms, char *buf, size_t cap);

/** The counters. */
TERN_API void bp_cgr_stats_get(const bp_cgr *c, bp_cgr_stats *st);

#ifdef __cplusplus
}
#endif
#endif
