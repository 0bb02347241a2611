/* Multicast: ION's imc groups (docs/multicast.md).
 *
 * A bundle to imc:G.S reaches every node that is a member of group G, once,
 * and is delivered there to the endpoint imc:G.S. A node is a member of G
 * while it has an imc:G.* endpoint (bpadmin "a endpoint imc:G.S", or an
 * application opening one). Membership travels as ION's BPv7 code sends it:
 *
 *   petition   payload [group, isMember] from ipn:N.0 to imc:0.0, sent to
 *              every node of the region (group 0 is the petitions group);
 *   briefing   administrative record type 5, [5, [group, ...]], from
 *              ipn:M.0 to ipn:N.0: the groups M is a member of, sent to a
 *              node that announced itself (joined group 0);
 *   block 195  the IMC destinations block on each copy of a group bundle: a
 *              CBOR array of the member nodes that copy still has to reach.
 *
 * The region is every node the agent knows a way to or has heard from: the
 * nodes of its ipn plans and exits, those the host names with
 * bp_agent_imc_node_add (the contact plan's), and every node that joined a
 * group. Each node keeps, per group, its members; a group bundle's
 * destinations are split by the next hop of each (the router, else the
 * plans), one copy per outduct, never sent back over the outduct it would
 * take to the node it came from. Remote memberships live in the store, so a
 * node restarted on a durable store keeps them; its own it announces again.
 */
#ifndef TERN_BP_IMC_H
#define TERN_BP_IMC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bp_agent.h"
#include "tern/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/** ION's IMC destinations extension block (bp.h ImcDestinationsBlk). */
#define BP_BLOCK_IMC_DESTS 195

/** ION's administrative record type of a multicast briefing. */
#define BP_ADMIN_IMC_BRIEFING 5

/** The most destinations one bundle's block 195, and the most groups one
 * briefing, may list: more is malformed (ION's region is far smaller). */
#define BP_IMC_LIST_MAX 4096

/** The most groups and the most members per group a node keeps: a petition
 * beyond them is refused (counted), so no peer can grow the table without
 * bound. */
#define BP_IMC_GROUPS_MAX  4096
#define BP_IMC_MEMBERS_MAX BP_IMC_LIST_MAX

/** Encodes a petition payload [group, member]. TERN_ENOSPACE if cap is short. */
TERN_API int bp_imc_petition_encode(uint64_t group, bool member, uint8_t *buf, size_t cap,
                                    size_t *len);

/** Decodes a petition payload (a two-item array of unsigned integers, any
 * non-zero isMember meaning a join, as ION reads it). TERN_EMALFORMED with
 * *why (may be NULL) naming the fault. */
TERN_API int bp_imc_petition_decode(const uint8_t *buf, size_t len, uint64_t *group,
                                    bool *member, const char **why);

/** Encodes a definite-length CBOR array of n unsigned integers: the data of
 * block 195 (node numbers) or of a briefing's content (group numbers).
 * -EINVAL if n > BP_IMC_LIST_MAX, TERN_ENOSPACE if cap is short. */
TERN_API int bp_imc_list_encode(const uint64_t *v, size_t n, uint8_t *buf, size_t cap,
                                size_t *len);

/**
 * Decodes such an array into v[0..max), sorted and without repeats (a
 * number listed twice counts once, as ION loads it); *n gets how many.
 * TERN_EMALFORMED (*why names it) for anything but a definite array of
 * unsigned integers filling buf, or more than max (and BP_IMC_LIST_MAX)
 * items.
 */
TERN_API int bp_imc_list_decode(const uint8_t *buf, size_t len, uint64_t *v, size_t max,
                                size_t *n, const char **why);

/** Encodes a briefing as the whole administrative record [5, [groups...]]. */
TERN_API int bp_imc_briefing_encode(const uint64_t *groups, size_t n, uint8_t *buf,
                                    size_t cap, size_t *len);

/** Decodes an administrative record of type 5 into groups[0..max).
 * TERN_ENOTFOUND if it is an administrative record of another type (not
 * a briefing: leave it to bp_admin_decode); TERN_EMALFORMED as above. */
TERN_API int bp_imc_briefing_decode(const uint8_t *buf, size_t len, uint64_t *groups,
                                    size_t max, size_t *n, const char **why);

/* ------------------------------------------------------------- the agent */

/** Makes this node take part in multicast: it announces itself to the
 * region (a petition joining group 0, so that members brief it) when
 * bp_agent_resume runs, or now if it has. What bpadmin "a scheme imc" does;
 * registering or opening an imc endpoint does it too. A node that never
 * does sends no petitions, but still records others' and forwards group
 * bundles. */
TERN_API void bp_agent_imc_enable(bp_agent *a);

/** Adds node to the region (petitions reach it): what the host does for
 * each node of its contact plan. Idempotent. */
TERN_API int bp_agent_imc_node_add(bp_agent *a, uint64_t node);

/** Members of group as this node knows them (itself included when it is a
 * member): up to max into nodes (sorted), the count returned. */
TERN_API size_t bp_agent_imc_members(const bp_agent *a, uint64_t group, uint64_t *nodes,
                                     size_t max);

/** Groups with at least one known member: up to max into groups (sorted),
 * the count returned. */
TERN_API size_t bp_agent_imc_groups(const bp_agent *a, uint64_t *groups, size_t max);

/** Multicast counters; they only grow. */
typedef struct bp_imc_stats {
    uint64_t petitions_sent, petitions_taken; /**< joins and leaves */
    uint64_t briefings_sent, briefings_taken;
    uint64_t refused;     /**< malformed petitions, briefings and 195 blocks, bad
                               senders, a full table (each logged by cause) */
    uint64_t sent;        /**< group bundles made here */
    uint64_t copies;      /**< copies queued on outducts (one per outduct) */
    uint64_t delivered;   /**< group bundles delivered to a local endpoint */
    uint64_t no_endpoint; /**< for a member node without that imc:G.S endpoint */
    uint64_t no_members;  /**< made here for a group no other node is in */
    uint64_t not_back;    /**< destinations not sent back toward the previous node
                               (a broadcast medium reached them already) */
    uint64_t seen_before; /**< destinations of a copy already served here */
    uint64_t unreachable; /**< destinations with no route now (held in limbo) */
} bp_imc_stats;

/** The agent's multicast counters. */
TERN_API void bp_agent_imc_stats_get(const bp_agent *a, bp_imc_stats *st);

#ifdef __cplusplus
}
#endif
#endif
