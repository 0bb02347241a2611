/* The contact plan: ionadmin's contacts and ranges, read into plain data.
 *
 *   1 <node number> [ionconfig file]
 *   a contact <from> <until> <from node> <to node> <rate bytes/s> [confidence]
 *   a range   <from> <until> <from node> <to node> <one-way light time, s>
 *   d contact <from> <from node> <to node>      d range <from> <from node> <to node>
 *   l contact | l range
 *   m production <bytes/s> | m consumption <bytes/s>
 *
 * Times are "+N" (seconds after the moment the command is read) or
 * "yyyy/mm/dd-hh:mm:ss" (UTC); stored as DTN time in milliseconds. A range
 * from A to B also holds from B to A unless a range from B to A is given
 * (ION's rule: the canonical form is from the smaller node number).
 * Routing (Contact Graph Routing) comes with the agent; this module reads,
 * checks, stores and answers questions about the plan.
 */
#ifndef TERN_BP_PLAN_H
#define TERN_BP_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "sdr.h"
#include "tern/base.h"
#include "tern/rc.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bp_contact {
    uint64_t from_ms, until_ms; /**< DTN time */
    uint64_t from_node, to_node;
    uint64_t rate;     /**< bytes per second */
    double confidence; /**< 0..1 (1 when not given) */
} bp_contact;

typedef struct bp_range {
    uint64_t from_ms, until_ms;
    uint64_t from_node, to_node;
    uint32_t owlt_s; /**< one-way light time, seconds */
} bp_range;

typedef struct bp_plan bp_plan;

/** Result of bp_ionadmin_apply besides 0 and errors: accepted, not acted on. */
#define BP_PLAN_IGNORED 1

/** An empty plan. */
TERN_API int bp_plan_new(bp_plan **out);

/** Frees a plan. NULL is accepted. */
TERN_API void bp_plan_free(bp_plan *p);

/**
 * Applies one ionadmin command; now_ms (DTN time) anchors "+N" times. Returns
 * 0; BP_PLAN_IGNORED with a warning in msg; TERN_ESYNTAX with msg
 * "file:line: what was wrong; what was expected"; -ENOMEM. "l contact" and
 * "l range" write their listing to msg.
 */
TERN_API int bp_ionadmin_apply(bp_plan *p, const tern_rc_cmd *cmd, uint64_t now_ms,
                               char *msg, size_t msglen);

/** This node's number (from "1"), 0 if not set. */
TERN_API uint64_t bp_plan_node(const bp_plan *p);

/** The ionconfig file named by "1 <node> <file>", NULL if none; *where (may
 * be NULL) gets "file:line" of that command. */
TERN_API const char *bp_plan_ionconfig(const bp_plan *p, const char **where);

/** The contacts and ranges, in the order they were added. */
TERN_API size_t bp_plan_contacts(const bp_plan *p, const bp_contact **out);
TERN_API size_t bp_plan_ranges(const bp_plan *p, const bp_range **out);

/** m production / m consumption (bytes/s, 0 if not given). */
TERN_API void bp_plan_rates(const bp_plan *p, uint64_t *production,
                            uint64_t *consumption);

/** One-way light time from one node to another at time at_ms: a range from
 * `from` to `to` covering at_ms, else the reverse range (symmetry).
 * TERN_ENOTFOUND if none covers it. */
TERN_API int bp_plan_owlt(const bp_plan *p, uint64_t from, uint64_t to, uint64_t at_ms,
                          uint32_t *owlt_s);

/** Saves the plan in the store (catalog name "bp.plan"), replacing what was
 * there, in one transaction: a restarted node finds its plan again. */
TERN_API int bp_plan_save(const bp_plan *p, sdr *store);

/** Loads the plan saved in the store into a new plan; TERN_ENOTFOUND if none,
 * TERN_ECORRUPT if what is there is not a plan. */
TERN_API int bp_plan_load(sdr *store, bp_plan **out);

/** Parses an ionadmin time ("+N" or "yyyy/mm/dd-hh:mm:ss") into DTN ms. */
TERN_API int bp_plan_parse_time(const char *s, uint64_t now_ms, uint64_t *out_ms);

/** Formats DTN ms as "yyyy/mm/dd-hh:mm:ss" (buf >= 20 bytes). */
TERN_API int bp_plan_format_time(uint64_t ms, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
