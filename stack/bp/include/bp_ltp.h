/* The LTP convergence layer: bundles as LTP blocks (BP is LTP client
 * service 1), on an ltp_engine the host owns.
 *
 * Outduct names are peer engine numbers ("ltp/2" is outduct "2" of protocol
 * "ltp"). Each bundle goes as one all-red block, without a copy (the agent
 * keeps the encoded bundle until the block's fate is known); the peer's
 * claim of the whole block is BP_XMIT_OK, a cancelled session
 * BP_XMIT_CANCELLED (the agent forwards the bundle again). A received red
 * part may hold several bundles back to back (ION aggregates them); it is
 * claimed only after the agent has committed them.
 *
 * The host's ltp_host.notice callback passes every notice for client
 * service 1 to bp_ltp_cla_notice().
 */
#ifndef TERN_BP_LTP_H
#define TERN_BP_LTP_H

#include "bp_agent.h"
#include "ltp.h"

#ifdef __cplusplus
extern "C" {
#endif

/** BP's LTP client service number. */
#define BP_LTP_CLIENT 1

/** Bytes of blocks a duct keeps in flight at most (besides the span's export
 * sessions): about what a receiving kernel buffers for one socket. */
#define BP_LTP_WINDOW_BYTES (32u << 20)

typedef struct bp_ltp_cla bp_ltp_cla;

/** Creates the LTP convergence layer for agent a over engine e and registers
 * it with the agent as protocol "ltp". max_blocks caps the blocks in flight
 * per outduct (0: 64); beyond it bundles wait in the agent's priority queues. */
TERN_API int bp_ltp_cla_new(bp_agent *a, ltp_engine *e, unsigned max_blocks,
                            bp_ltp_cla **out);

/** Frees the adapter, after bp_agent_free (the agent may still hold durable
 * waits that release the adapter's held LTP blocks). */
TERN_API void bp_ltp_cla_free(bp_ltp_cla *c);

/** Takes one LTP notice for client service BP_LTP_CLIENT. Returns what the
 * engine expects from ltp_host.notice: 0, or negative to cancel an import. */
TERN_API int bp_ltp_cla_notice(bp_ltp_cla *c, const ltp_notice *n);

/** Green segments received and dropped (bundles travel red only); the first
 * is logged as a warning naming the peer. */
TERN_API uint64_t bp_ltp_cla_green_ignored(const bp_ltp_cla *c);

#ifdef __cplusplus
}
#endif
#endif
