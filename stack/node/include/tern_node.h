/* A Tern node: the store, the LTP engine on its UDP link service, the bundle
 * agent with its convergence layers and the client server, around one event
 * loop, configured from an ION host.rc or ION's admin files (node.ionrc,
 * node.ltprc, ...). ternd is this plus signal handling; tests may run a node
 * in-process.
 *
 * A node is a directory (docs/node.md): host.rc (or node.ionrc, node.ltprc,
 * node.bprc, node.ipnrc, ...), store/, ternd.log, ternd.lock (held while the
 * node runs), ternd.pid, ports.
 */
#ifndef TERN_NODE_H
#define TERN_NODE_H

#include <stddef.h>
#include <stdint.h>

#include "bp_agent.h"
#include "ltp.h"
#include "tern/base.h"
#include "tern/log.h"
#include "tern/loop.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tern_node tern_node;

typedef struct tern_node_cfg {
    const char *dir;    /**< the node directory (must exist) */
    const char *rc;     /**< a host.rc, or an admin file (<name>.ionrc, <name>.ltprc,
                             ...) naming its set (NULL: <dir>/host.rc, else the
                             set of node.ionrc or of the only *.ionrc) */
    int log_level;      /**< TERN_LOG_* (0: info) */
    unsigned log_flags; /**< TERN_LOG_TO_STDERR to copy the log to stderr */
} tern_node_cfg;

/**
 * Opens the node: reads and checks the whole configuration, takes the
 * directory's lock (TERN_EEXIST if a ternd already serves it: err names its
 * pid), opens or recovers the store, creates every component on a loop of
 * the real clock, resumes stored bundles and LTP exports, and starts
 * listening. err gets one line naming file:line or the component and what to
 * do. A node that fails to open leaves the directory as it found it: the
 * lock, log and store it made are removed again, and so are its pid and
 * ports files. The directory must exist.
 */
TERN_API int tern_node_open(const tern_node_cfg *cfg, tern_node **out, char *err,
                            size_t errlen);

/** Runs the node's loop until tern_node_stop() (or a signal handled by the
 * caller stops it). */
TERN_API int tern_node_run(tern_node *n);

/** Asks the loop to return (callable from the loop's own callbacks). */
TERN_API void tern_node_stop(tern_node *n);

/** Stops everything, makes the store durable, removes the pid and ports
 * files, releases the lock. */
TERN_API void tern_node_close(tern_node *n);

/** The configuration's warnings (file:line: what is accepted but not acted
 * on), at most max of them into out (valid until tern_node_close); returns how
 * many there are. */
TERN_API size_t tern_node_warnings(const tern_node *n, const char **out, size_t max);

/** This node's number. */
TERN_API uint64_t tern_node_number(const tern_node *n);

/** The configuration file that holds cfdpadmin commands (a host.rc with a
 * cfdpadmin section, or a <name>.cfdprc), for cfdpd; NULL if none. */
TERN_API const char *tern_node_cfdp_rc(const tern_node *n);

/** The i-th amsd line of the host.rc ('## begin amsd'): amsd's arguments,
 * tab-joined, for 'tern start'; NULL past the last. */
TERN_API const char *tern_node_amsd(const tern_node *n, int i);

/** The i-th ramsgate line of that section (ramsgate's arguments,
 * tab-joined); NULL past the last. */
TERN_API const char *tern_node_ramsgate(const tern_node *n, int i);

/** The components (NULL where not configured). */
TERN_API tern_loop *tern_node_loop(const tern_node *n);
TERN_API bp_agent *tern_node_agent(const tern_node *n);
TERN_API ltp_engine *tern_node_engine(const tern_node *n);
TERN_API tern_log *tern_node_log(const tern_node *n);

/** A status report (endpoints, ducts, queues, LTP, store) as text into
 * out[0..cap); returns its length as snprintf does. */
TERN_API int tern_node_status(tern_node *n, char *out, size_t cap);

/** The canonical path of a node directory (realpath), for naming. */
TERN_API int tern_node_dir_canon(const char *dir, char *out, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
