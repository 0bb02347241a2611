/* Pacing: see tern/pace.h. */
#include "tern/pace.h"

/* 10 ms at the rate, at least one 1,500-byte datagram, at most the larger
 * of TERN_PACE_BURST_MAX and TERN_PACE_SPAN_US at the rate. */
static double depth_for(uint64_t rate)
{
    double d = (double)rate / 100.0;
    double cap = (double)rate * TERN_PACE_SPAN_US / 1e6;
    if (cap < 8.0 * TERN_PACE_BURST_MAX)
        cap = 8.0 * TERN_PACE_BURST_MAX;
    if (d > cap)
        d = cap;
    return d < 8.0 * 1500.0 ? 8.0 * 1500.0 : d;
}

static void refill(tern_pace *p, uint64_t now)
{
    if (now > p->last_ns) {
        p->tokens += (double)(now - p->last_ns) * (double)p->rate_bps / 1e9;
        if (p->tokens > p->depth)
            p->tokens = p->depth;
    }
    p->last_ns = now;
}

TERN_API void tern_pace_set(tern_pace *p, uint64_t rate_bps, uint64_t now_ns)
{
    if (p->rate_bps)
        refill(p, now_ns);
    else
        p->tokens = depth_for(rate_bps);
    p->rate_bps = rate_bps;
    p->waiting = 0;
    p->depth = rate_bps ? depth_for(rate_bps) : 0.0;
    if (p->tokens > p->depth)
        p->tokens = p->depth;
    p->last_ns = now_ns;
}

TERN_API uint64_t tern_pace_wait_ns(tern_pace *p, uint64_t now_ns)
{
    if (!p->rate_bps)
        return 0;
    refill(p, now_ns);
    if (p->tokens > 0 && !p->waiting)
        return 0;
    /* Out of tokens: wait until half the bucket is back, so that a sender
     * held to its rate wakes once per half bucket, not once per datagram. */
    double want = p->depth / 2.0;
    if (p->tokens >= want) {
        p->waiting = 0;
        return 0;
    }
    p->waiting = 1;
    return (uint64_t)((want - p->tokens) * 1e9 / (double)p->rate_bps) + 1;
}
