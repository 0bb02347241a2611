/* Simulated links: per direction a FIFO transmitter (rate), a propagation
 * delay, random loss and outages, driven by one timer per direction.
 *
 * Every segment, lost or not, goes through the transmitter: the sending
 * engine runs with tx_notify, so checkpoints, reports and cancels must be
 * announced with ltp_engine_sent() when they leave, or their retransmission
 * timers would never start. A lost segment is freed once announced; others
 * fly for the delay and reach the far engine unless an outage holds the
 * link down when they arrive.
 *
 * A direction that follows the contact plan (TERN_SIM_CONTACTS) takes
 * segments only inside the sending node's contacts toward the far node;
 * the check is made against the plan itself at hand-over, while a timer at
 * each contact boundary tells the sending end.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sim_int.h"

static uint64_t seg_due(const struct sim_seg *g)
{
    return g->lost ? g->depart_ns : g->arrive_ns;
}

static void dir_fire(tern_timer *t, void *arg);

static void dir_arm(struct sim_dir *d)
{
    uint64_t at = UINT64_MAX;
    if (d->txp)
        at = d->txp->depart_ns;
    if (d->head && seg_due(d->head) < at)
        at = seg_due(d->head);
    if (at == UINT64_MAX) {
        if (d->timer_armed)
            tern_timer_stop(&d->timer);
        d->timer_armed = 0;
        return;
    }
    if (d->timer_armed && d->timer_at == at)
        return;
    /* A failure (no memory for the timer heap) leaves the segments queued;
     * the next send or arrival re-arms. */
    if (tern_timer_start_at(&d->timer, dir_fire, d, at, 0) == 0) {
        d->timer_armed = 1;
        d->timer_at = at;
    }
}

static struct sim_seg *next_notify(struct sim_seg *g)
{
    for (g = g->next; g && !g->notify; g = g->next)
        ;
    return g;
}

static void dir_fire(tern_timer *t, void *arg)
{
    struct sim_dir *d = arg;
    tern_sim *s = d->sim;
    d->timer_armed = 0;
    uint64_t now = tern_loop_now(s->loop);
    /* Departures before arrivals: a segment due to arrive has left. */
    while (d->txp && d->txp->depart_ns <= now) {
        struct sim_seg *g = d->txp;
        d->txp = next_notify(g);
        if (d->from->eng)
            ltp_engine_sent(d->from->eng, g->data, g->len);
    }
    while (d->head && seg_due(d->head) <= now) {
        struct sim_seg *g = d->head;
        if (g->notify && g == d->txp)
            break; /* not announced yet (cannot happen: departures came first) */
        d->head = g->next;
        if (!d->head)
            d->tail = NULL;
        d->st.queued--;
        if (g->lost) {
            free(g);
            continue;
        }
        if (d->down || !d->to->eng) {
            d->st.dropped++;
        } else {
            d->st.delivered++;
            d->st.bytes_delivered += g->len;
            ltp_engine_receive(d->to->eng, g->data, g->len);
        }
        free(g);
    }
    dir_arm(d);
}

int sim__link_send(void *ctx, uint64_t peer, const uint8_t *seg, size_t len)
{
    struct sim_node *n = ctx;
    if (n->sim->closing)
        return -ESHUTDOWN;
    struct sim_dir *d = sim__dir(n, peer);
    if (!d)
        return TERN_ENOTFOUND;
    tern_sim *s = d->sim;
    uint64_t now = tern_loop_now(s->loop);
    d->st.sent++;
    d->st.bytes_sent += len;
    if (d->follow && sim__dir_in_contact(d, tern_clock_dtn_ms(s->clk)))
        d->cst.bytes_in_contact += len;
    int lost = 0;
    if (d->follow && !sim__dir_in_contact(d, tern_clock_dtn_ms(s->clk))) {
        lost = 1;
        d->cst.outside++;
    } else if (d->down) {
        lost = 1;
        d->st.dropped++;
    } else if (d->loss > 0 && sim__unit(s) < d->loss) {
        lost = 1;
        d->st.lost++;
    }
    uint64_t start = d->busy_until > now ? d->busy_until : now;
    uint64_t depart = start;
    if (d->rate) {
        /* len * 1e9 / rate without overflow for any segment size. */
        uint64_t ns = (uint64_t)len / d->rate * TERN_NS_PER_S +
                      ((uint64_t)len % d->rate) * TERN_NS_PER_S / d->rate;
        depart = start + ns;
        d->busy_until = depart;
    }
    int notify = ltp_seg_needs_tx_notice(seg, len);
    if (lost && !notify)
        return 0; /* its transmitter time is taken (busy_until); nothing to announce */
    struct sim_seg *g = malloc(sizeof *g + len);
    if (!g)
        return -ENOMEM;
    g->next = NULL;
    g->depart_ns = depart;
    uint64_t arrive = depart + d->delay_ns;
    if (arrive < d->last_arrive)
        arrive = d->last_arrive;
    g->arrive_ns = arrive;
    g->lost = (uint8_t)lost;
    g->notify = (uint8_t)notify;
    g->len = len;
    memcpy(g->data, seg, len);
    if (!lost)
        d->last_arrive = arrive;
    if (d->tail)
        d->tail->next = g;
    else
        d->head = g;
    d->tail = g;
    if (notify && !d->txp)
        d->txp = g;
    if (++d->st.queued > d->st.max_queued)
        d->st.max_queued = d->st.queued;
    dir_arm(d);
    return 0;
}

void sim__dir_free(struct sim_dir *d)
{
    if (!d)
        return;
    tern_timer_stop(&d->timer);
    if (d->follow)
        tern_timer_stop(&d->ctimer);
    free(d->wins);
    struct sim_seg *g = d->head;
    while (g) {
        struct sim_seg *nx = g->next;
        free(g);
        g = nx;
    }
    free(d);
}

/* ------------------------------------------------------ following contacts */

int sim__dir_in_contact(const struct sim_dir *d, uint64_t dtn_ms)
{
    if (!d->named)
        return 1;
    for (size_t i = 0; i < d->nwins; i++)
        if (d->wins[i].from_ms <= dtn_ms && dtn_ms < d->wins[i].until_ms)
            return 1;
    return 0;
}

void sim__dir_tell(struct sim_dir *d)
{
    int up = !d->loud_down && (!d->follow || d->cup);
    if (up == d->told_up)
        return;
    d->told_up = up;
    sim__node_link_state(d->from, d->to->number, up);
}

static void contacts_fire(tern_timer *t, void *arg)
{
    (void)t;
    sim__dir_contacts(arg);
}

/* Reads the sending node's plan again: this direction's windows, whether
 * one is in effect now (a new one sets the delay from its range), and the
 * timer for the next boundary. */
void sim__dir_contacts(struct sim_dir *d)
{
    tern_sim *s = d->sim;
    uint64_t now = tern_clock_dtn_ms(s->clk), next = UINT64_MAX;
    const bp_contact *ct;
    size_t n = bp_plan_contacts(d->from->plan, &ct), k = 0;
    uint64_t a = d->from->number, b = d->to->number;
    struct sim_win *w = NULL;
    size_t cnt = 0;
    d->named = 0;
    for (size_t i = 0; i < n; i++)
        if (ct[i].from_node == a && ct[i].to_node == b) {
            d->named = 1;
            cnt += ct[i].rate != 0;
        }
    if (cnt && !(w = malloc(cnt * sizeof *w)))
        cnt = 0; /* no memory: treated as no windows (down), told at the next change */
    for (size_t i = 0; i < n && k < cnt; i++) {
        if (ct[i].from_node != a || ct[i].to_node != b || !ct[i].rate)
            continue;
        w[k++] = (struct sim_win){ct[i].from_ms, ct[i].until_ms};
        if (ct[i].from_ms > now && ct[i].from_ms < next)
            next = ct[i].from_ms;
        if (ct[i].until_ms > now && ct[i].until_ms < next)
            next = ct[i].until_ms;
    }
    free(d->wins);
    d->wins = w;
    d->nwins = k;
    int up = sim__dir_in_contact(d, now);
    if (up && !d->cup) {
        uint32_t owlt_s;
        uint64_t delay = d->base_delay_ns;
        if (d->named && bp_plan_owlt(d->from->plan, a, b, now, &owlt_s) == 0) {
            delay = (uint64_t)owlt_s * TERN_NS_PER_S;
            if (d->from->eng)
                ltp_span_set_owlt(d->from->eng, b, owlt_s * 1000u);
        }
        d->delay_ns = delay;
        if (d->named)
            d->cst.windows++;
    }
    d->cup = up;
    d->cst.open = (uint64_t)up;
    sim__dir_tell(d);
    tern_timer_stop(&d->ctimer);
    if (next != UINT64_MAX && next - now < UINT64_MAX / TERN_NS_PER_MS / 4)
        tern_timer_start(&d->ctimer, contacts_fire, d, (next - now) * TERN_NS_PER_MS, 0);
}
