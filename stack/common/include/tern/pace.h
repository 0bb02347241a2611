/* Pacing: a token bucket that keeps a sender to a rate in small bursts.
 *
 * The link services (LTP over UDP, the UDP convergence layer) hold their
 * datagrams to a link's rate with one of these. Its depth is what a burst
 * may be: 10 ms at the rate, but never more than TERN_PACE_BURST_MAX bytes
 * or TERN_PACE_SPAN_US at the rate, whichever is more. Up to about 1 Gbit/s
 * that is 64 KiB, so a peer that keeps Linux's default 212,992-byte UDP
 * receive buffer (ION's udplsi and udpcli do) is never sent more at once
 * than it holds; above, a receiver that drains the rate at all has buffers
 * for half a millisecond of it, and the bucket does not cost a wakeup per
 * datagram. A datagram may leave whenever the bucket holds any token (it
 * may then go negative); once it has run dry, sending resumes when half of
 * it is back (one wakeup per half bucket). Time comes from the caller (ns
 * on any monotonic clock).
 */
#ifndef TERN_PACE_H
#define TERN_PACE_H

#include <stddef.h>
#include <stdint.h>

#include "tern/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The largest burst, bytes: a third of Linux's default receive buffer, as
 * the kernel charges a small datagram about twice its size. */
#define TERN_PACE_BURST_MAX 65536

/** Above TERN_PACE_BURST_MAX / TERN_PACE_SPAN_US (about 1 Gbit/s) a burst
 * may be this long at the rate, microseconds. */
#define TERN_PACE_SPAN_US 500

typedef struct tern_pace {
    uint64_t rate_bps; /**< 0: unlimited */
    double tokens;     /**< bits; may be negative after a datagram */
    double depth;      /**< bits */
    uint64_t last_ns;
    int waiting; /**< ran dry: waits for half the bucket */
} tern_pace;

/** Sets the rate in bits/s (0: unlimited). A new rate keeps the tokens
 * earned so far, within the new depth. */
TERN_API void tern_pace_set(tern_pace *p, uint64_t rate_bps, uint64_t now_ns);

/** 0 if a datagram may leave now, else the ns until one may. */
TERN_API uint64_t tern_pace_wait_ns(tern_pace *p, uint64_t now_ns);

/** Takes len bytes' worth of tokens for a datagram that left. */
static inline void tern_pace_spend(tern_pace *p, size_t len)
{
    if (p->rate_bps)
        p->tokens -= 8.0 * (double)len;
}

/** The smaller of two rates, where 0 means unlimited. */
static inline uint64_t tern_pace_min_rate(uint64_t a, uint64_t b)
{
    return !a ? b : !b ? a : a < b ? a : b;
}

#ifdef __cplusplus
}
#endif
#endif
