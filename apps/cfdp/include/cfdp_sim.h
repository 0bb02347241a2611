/* libterncfdp: a simulated network of CFDP entities on a virtual clock.
 *
 * N entities (cfdp.h) in one process, joined by one-way links with a delay,
 * random extra delay (reordering), loss, duplication, scheduled outages and
 * a bound on PDUs in flight (beyond it the sender sees -EAGAIN and later
 * cfdp_entity_transport_ready). Randomness comes from one seeded PRNG, so a
 * seed replays a run exactly. Time is virtual: a 20-minute light time costs
 * nothing. For unit tests, the bindings and benchmarks.
 */
#ifndef TERN_CFDP_SIM_H
#define TERN_CFDP_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "cfdp.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cfdp_sim cfdp_sim;

/** A window [start_ms, end_ms) in which a link loses everything sent. */
typedef struct cfdp_outage {
    uint64_t start_ms, end_ms;
} cfdp_outage;

/** One direction of a link. */
typedef struct cfdp_link_cfg {
    uint64_t delay_ms;     /**< one-way delay */
    uint64_t jitter_ms;    /**< extra delay, uniform in [0, jitter_ms): reorders */
    double loss;           /**< probability that a PDU is lost */
    double dup;            /**< probability that a PDU arrives twice */
    uint32_t max_inflight; /**< PDUs on the link before send says -EAGAIN; 0 = no bound */
    const cfdp_outage *outages; /**< copied */
    size_t noutages;
} cfdp_link_cfg;

/** Counters of a simulation. */
typedef struct cfdp_sim_stats {
    uint64_t sent, delivered, lost, duplicated, outage_lost, filtered, busy, unroutable;
    uint64_t events;
} cfdp_sim_stats;

/** Called for every PDU sent: non-zero drops it (targeted losses in tests). */
typedef int (*cfdp_sim_filter)(void *ctx, uint64_t from, uint64_t to, const uint8_t *pdu,
                               size_t len);

/** A new, empty simulation whose PRNG starts from seed; the clock starts at 0. */
TERN_API int cfdp_sim_new(uint64_t seed, cfdp_sim **out);

/** Frees the simulation, its entities and PDUs in flight. NULL is fine. */
TERN_API void cfdp_sim_free(cfdp_sim *s);

/** Creates an entity from cfg (its host is the simulation; indications are
 * queued: read them with cfdp_entity_next_indication). *e may be NULL. */
TERN_API int cfdp_sim_add_entity(cfdp_sim *s, const cfdp_entity_cfg *cfg,
                                 cfdp_entity **e);

/** The entity with local ID id, or NULL. */
TERN_API cfdp_entity *cfdp_sim_entity(const cfdp_sim *s, uint64_t id);

/** Replaces entity id by a fresh one built from the same configuration
 * (a restart: every transaction is gone; restore them with
 * cfdp_txn_restore). PDUs in flight to it still arrive. */
TERN_API int cfdp_sim_restart(cfdp_sim *s, uint64_t id, cfdp_entity **e);

/** Sets (or replaces) the link from -> to. */
TERN_API int cfdp_sim_link(cfdp_sim *s, uint64_t from, uint64_t to,
                           const cfdp_link_cfg *cfg);

/** Sets both directions between a and b to cfg. */
TERN_API int cfdp_sim_link2(cfdp_sim *s, uint64_t a, uint64_t b,
                            const cfdp_link_cfg *cfg);

/** Installs a filter (NULL removes it). */
TERN_API void cfdp_sim_set_filter(cfdp_sim *s, cfdp_sim_filter f, void *ctx);

/** The virtual time, ms. */
TERN_API uint64_t cfdp_sim_now(const cfdp_sim *s);

/** Runs every event due up to until_ms; the clock then reads until_ms. */
TERN_API int cfdp_sim_run(cfdp_sim *s, uint64_t until_ms);

/** Runs until nothing is in flight and no timer is set, or the clock passes
 * limit_ms: 0 idle, -ETIMEDOUT if the limit came first. */
TERN_API int cfdp_sim_run_idle(cfdp_sim *s, uint64_t limit_ms);

/** Runs until stop(arg) returns non-zero (checked after each event), the
 * network is idle (-EAGAIN) or the clock passes limit_ms (-ETIMEDOUT). */
TERN_API int cfdp_sim_run_until(cfdp_sim *s, uint64_t limit_ms, int (*stop)(void *arg),
                                void *arg);

/** Copies the counters. */
TERN_API void cfdp_sim_stats_get(const cfdp_sim *s, cfdp_sim_stats *out);

/** The next number of the simulation's PRNG (for tests that want more). */
TERN_API uint64_t cfdp_sim_rand(cfdp_sim *s);

/** sizeof the cfdp.h / cfdp_sim.h struct named name ("cfdp_peer_cfg",
 * "cfdp_ind", ...), 0 for a name it does not know: bindings that lay the
 * structs out by hand check them with it. */
TERN_API size_t cfdp_struct_size(const char *name);

#ifdef __cplusplus
}
#endif
#endif
