/* The contact plan drives the LTP spans' link state.
 *
 * A span is up while the plan has a contact from this node to its peer in
 * effect; outside contacts it is down, so LTP sends nothing to the peer and
 * its retransmission timers stand still (an announced outage costs no repair
 * rounds). A peer the plan never mentions as a contact destination is always
 * up: a configuration without contacts keeps working. The state is
 * re-evaluated at the next contact boundary and whenever the plan changes
 * (tern admin ionadmin), together with the spans' one-way light times and
 * rates (LTP segments go at the rate of the contact in effect). */
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>

#include "node_int.h"
#include "tern/ckd.h"
#include "tern/clock.h"

static void fire(tern_timer *t, void *arg)
{
    (void)t;
    node__contacts_apply(arg);
}

static int *span_state(struct tern_node *n, size_t i)
{
    if (n->nspan_up <= i) {
        size_t nc = n->cfg.ltp.nspans;
        int *p = realloc(n->span_up, nc * sizeof *p);
        if (!p)
            return NULL;
        for (size_t k = n->nspan_up; k < nc; k++)
            p[k] = -1;
        n->span_up = p;
        n->nspan_up = nc;
    }
    return &n->span_up[i];
}

void node__contacts_apply(struct tern_node *n)
{
    if (!n->eng)
        return;
    uint64_t now = tern_clock_dtn_ms(tern_loop_clock(n->loop)), next = UINT64_MAX;
    const bp_contact *ct;
    size_t nct = bp_plan_contacts(n->cfg.plan, &ct);
    for (size_t i = 0; i < n->cfg.ltp.nspans; i++) {
        uint64_t peer = n->cfg.ltp.spans[i].cfg.peer;
        if (peer == n->number)
            continue;
        int any = 0, up = 0;
        uint64_t rate = 0; /* bytes/s: the highest of the contacts in effect */
        for (size_t k = 0; k < nct; k++) {
            if (ct[k].from_node != n->number || ct[k].to_node != peer)
                continue;
            any = 1;
            if (ct[k].from_ms <= now && now < ct[k].until_ms) {
                up = 1;
                if (ct[k].rate > rate)
                    rate = ct[k].rate;
            }
            if (ct[k].from_ms > now && ct[k].from_ms < next)
                next = ct[k].from_ms;
            if (ct[k].until_ms > now && ct[k].until_ms < next)
                next = ct[k].until_ms;
        }
        if (!any)
            up = 1;
        uint32_t owlt;
        if (bp_plan_owlt(n->cfg.plan, n->number, peer, now, &owlt) == 0) {
            /* a range is seconds and the span's light time ms in 32 bits:
             * above 49.7 days it is held at the most the span can say
             * rather than wrapped to a short one */
            uint64_t ms;
            if (tern_ckd_mul(&ms, owlt, 1000) || ms > UINT_MAX)
                ms = UINT_MAX;
            ltp_span_set_owlt(n->eng, peer, (unsigned)ms);
        }
        /* LTP goes at the contact's rate, as ION's does, in small bursts: an
         * ION peer's udplsi drops what its default socket buffer cannot hold */
        if (n->lsu && up)
            ltp_udp_set_link_rate(n->lsu, peer,
                                  rate > UINT64_MAX / 8 ? UINT64_MAX : rate * 8);
        int *st = span_state(n, i);
        if (!st || *st == up)
            continue;
        if (*st != -1 || !up)
            TERN_INFO(n->lg, "node", "LTP span to engine %" PRIu64 " %s: %s", peer,
                      up ? "up" : "down",
                      up ? "a contact began" : "no contact in the plan now");
        *st = up;
        ltp_span_link(n->eng, peer, up);
        if (n->lsu)
            ltp_udp_hold(n->lsu, peer, !up); /* nor what the link service queued */
    }
    if (!n->contact_tm_init) {
        if (tern_timer_init(n->loop, &n->contact_tm))
            return;
        n->contact_tm_init = 1;
    }
    tern_timer_stop(&n->contact_tm);
    uint64_t ns;
    if (next !=
        UINT64_MAX) /* a contact centuries away: its timer waits as long as it can */
        tern_timer_start(&n->contact_tm, fire, n,
                         tern_ckd_mul(&ns, next - now, 1000000u) ? UINT64_MAX : ns, 0);
}

void node__contacts_stop(struct tern_node *n)
{
    if (n->contact_tm_init)
        tern_timer_stop(&n->contact_tm);
    free(n->span_up);
    n->span_up = NULL;
    n->nspan_up = 0;
}
