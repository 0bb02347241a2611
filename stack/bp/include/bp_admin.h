/* bpadmin and ipnadmin: ION's bundle-protocol configuration, read into plain
 * settings, then applied to an agent.
 *
 * A node's host.rc (or bpadmin / ipnadmin file) is lexed by tern/rc.h; each
 * command of the bpadmin section goes through bp_bpadmin_apply(), each of the
 * ipnadmin section through bp_ipnadmin_apply(). What Tern acts on:
 *
 * bpadmin:
 *   1                              s [protocol]         x [protocol]
 *   a|c scheme ipn|dtn '<forwarder>' '<admin app>'      d scheme <name>
 *   a|c endpoint <eid> [q|x] ['<recv script>']  (no rule: x)
 *   d endpoint <eid>
 *   a protocol <name> [<payload/frame> <overhead/frame> [<rate>]]
 *   d protocol <name>
 *   a|c induct <protocol> <duct> '<CLI command>'
 *   a|c outduct <protocol> <duct> '<CLO command>' [max payload]
 *   d induct|outduct <protocol> <duct>
 *   a|c plan ipn:N.0|dtn://name [nominal rate]          d plan <eid>
 *   a planduct <eid> <protocol> <duct>
 *   d planduct [<eid>] <protocol> <duct>
 *   m heapmax <bytes>              w 0|1|<activity letters>
 *   m statusreports on|off         (Tern's: RFC 9171 5.1 reports, off by default)
 *   l scheme|endpoint|protocol|induct|outduct|plan      i <object> <key...>
 *
 * ipnadmin (ION 3 / 4.0 plans):
 *   a|c plan <node> <protocol>/<duct> [rate]            d plan <node>
 *   a|c exit <first node> <last node> <gateway eid>     d exit <first> <last>
 *   l plan | l exit | i plan <node> | i exit <first> <last>
 *
 * Other ION commands (a egress, m crypto, b/u plan, r, e, h, v, planrule ...)
 * are accepted with a warning naming file:line and have no effect.
 */
#ifndef TERN_BP_ADMIN_H
#define TERN_BP_ADMIN_H

#include <stddef.h>
#include <stdint.h>

#include "bp_agent.h"
#include "bp_bundle.h"
#include "tern/base.h"
#include "tern/rc.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Result of the apply functions besides 0 and errors: accepted, not acted on. */
#define BP_ADMIN_IGNORED 1

/** Longest protocol name, duct name and command string kept (with the NUL). */
#define BP_ADMIN_NAME_MAX 32
#define BP_ADMIN_DUCT_MAX 256
#define BP_ADMIN_CMD_MAX  256

/** Where a setting came from (file points into the bp_admin's own copy). */
typedef struct bp_admin_where {
    const char *file;
    unsigned line;
} bp_admin_where;

typedef struct bp_admin_scheme {
    char name[8]; /**< "ipn" or "dtn" */
    char forwarder[BP_ADMIN_CMD_MAX];
    char admin_app[BP_ADMIN_CMD_MAX];
    bp_admin_where at;
} bp_admin_scheme;

typedef struct bp_admin_endpoint {
    bp_eid eid;                    /**< ipn or dtn */
    int rule;                      /**< BP_RECV_QUEUE or BP_RECV_DISCARD */
    char script[BP_ADMIN_CMD_MAX]; /**< recv script, "" if none (not run by Tern) */
    bp_admin_where at;
} bp_admin_endpoint;

typedef struct bp_admin_protocol {
    char name[BP_ADMIN_NAME_MAX];
    uint64_t payload_per_frame, overhead_per_frame, rate; /**< 0 when not given */
    bp_admin_where at;
} bp_admin_protocol;

/** An induct or an outduct. */
typedef struct bp_admin_duct {
    char protocol[BP_ADMIN_NAME_MAX];
    char name[BP_ADMIN_DUCT_MAX];
    char cmd[BP_ADMIN_CMD_MAX]; /**< CLI / CLO command, may be "" */
    uint64_t max_payload;       /**< outducts: 0 = no limit */
    bp_admin_where at;
} bp_admin_duct;

/** An egress plan: from ipnadmin "a plan N p/d", or bpadmin plan + planduct. */
typedef struct bp_admin_plan {
    int scheme;                        /**< BP_SCHEME_IPN or BP_SCHEME_DTN */
    uint64_t node;                     /**< ipn node number */
    char dtn_node[BP_DTN_SSP_MAX + 1]; /**< dtn: "//name" */
    uint64_t rate;                     /**< nominal data rate, bytes/s (0: not given) */
    char protocol[BP_ADMIN_NAME_MAX];  /**< "" until a planduct names the duct */
    char duct[BP_ADMIN_DUCT_MAX];
    int from_ipnadmin;
    bp_admin_where at;      /**< the plan command */
    bp_admin_where duct_at; /**< the planduct command (== at for ipnadmin) */
} bp_admin_plan;

/** ipnadmin exit: nodes first..last go the way of gateway. */
typedef struct bp_admin_exit {
    uint64_t first, last;
    bp_eid gateway; /**< ipn */
    bp_admin_where at;
} bp_admin_exit;

/** Everything bpadmin and ipnadmin files configure. */
typedef struct bp_admin {
    int initialized;    /**< bpadmin "1" seen */
    int started;        /**< "s" seen (and no later "x") */
    int watch;          /**< "w 1" or activity letters */
    uint64_t heapmax;   /**< m heapmax (0: not given) */
    int status_reports; /**< m statusreports on|off (Tern's; 0, off, unless given) */
    bp_admin_scheme *schemes;
    size_t nschemes;
    bp_admin_endpoint *endpoints;
    size_t nendpoints;
    bp_admin_protocol *protocols;
    size_t nprotocols;
    bp_admin_duct *inducts;
    size_t ninducts;
    bp_admin_duct *outducts;
    size_t noutducts;
    bp_admin_plan *plans;
    size_t nplans;
    bp_admin_exit *exits;
    size_t nexits;
    char **files; /**< copies of the file names settings point to */
    size_t nfiles;
} bp_admin;

/** Empty settings. */
TERN_API void bp_admin_init(bp_admin *a);

/** Frees every table (the struct may be initialized again). */
TERN_API void bp_admin_free(bp_admin *a);

/**
 * Applies one bpadmin command. Returns 0; BP_ADMIN_IGNORED with a warning in
 * msg ("file:line: ..."); TERN_ESYNTAX with msg "file:line: what was wrong;
 * what was expected"; -ENOMEM. Listings ("l ...", "i ...") write their text
 * to msg and return 0.
 */
TERN_API int bp_bpadmin_apply(bp_admin *a, const tern_rc_cmd *cmd, char *msg,
                              size_t msglen);

/** Applies one ipnadmin command; same returns as bp_bpadmin_apply(). */
TERN_API int bp_ipnadmin_apply(bp_admin *a, const tern_rc_cmd *cmd, char *msg,
                               size_t msglen);

/** Writes the listing of object ("scheme", "endpoint", "protocol", "induct",
 * "outduct", "plan", "exit"), one item a line. Returns the length it needed
 * (as snprintf), or TERN_ENOTFOUND for another object. */
TERN_API int bp_admin_list(const bp_admin *a, const char *object, char *out, size_t cap);

/**
 * Applies the settings to agent: endpoints (an existing one gets its rule
 * changed), outducts, plans that have a duct, exits, in that order. Inducts,
 * schemes and protocols are not the agent's business (the host wires the
 * inducts). Returns 0 or the first error with msg naming the config line:
 * TERN_ENOTFOUND when no convergence layer serves an outduct's protocol or a
 * plan names an outduct that does not exist; the agent's error otherwise.
 */
TERN_API int bp_admin_configure(const bp_admin *a, bp_agent *agent, char *msg,
                                size_t msglen);

#ifdef __cplusplus
}
#endif
#endif
