/* The impairment channel of one direction, and the outage schedule.
 *
 * Packets wait in a binary heap ordered by (delivery time, sequence number);
 * one loop timer is armed at the head. The transmitter is modelled by the
 * time it becomes free (tx_free): a packet starts when both it and the
 * transmitter are ready and takes len*8/rate, so packets leave one after
 * another. The bytes that wait for the transmitter are kept in a small ring
 * of (start time, length) and expired lazily on each send, which is all the
 * tail-drop test needs.
 *
 * On the real clock the head's deadline is a timerfd (CLOCK_MONOTONIC, the
 * clock tern_loop reads) rather than a loop timer: the loop sleeps in whole
 * milliseconds, rounded up, which would make every delay up to 1 ms long;
 * the timerfd wakes it within tens of microseconds. On a virtual clock the
 * loop timer is exact and the loop jumps to it.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "linkem.h"

struct pkt {
    uint64_t when, seq;
    void *tag;
    unsigned pflags;
    size_t len;
    uint8_t data[];
};

struct txent {
    uint64_t start;
    uint64_t len;
};

struct lk_channel {
    tern_loop *loop;
    tern_timer timer; /* virtual clock */
    int tfd;          /* real clock: a timerfd, watched by tio */
    tern_io tio;
    uint64_t tfd_deadline; /* 0: disarmed */
    lk_impair imp;         /* outage.down is our own copy */
    unsigned flags;
    int dir;
    lk_deliver_cb cb;
    void *arg;
    uint64_t epoch;
    uint64_t rng[4];
    uint64_t draws;
    uint64_t delay_ns, jitter_ns, gap_ns;
    double ber_log1m; /* log(1 - ber), for geometric gaps between flipped bits */
    uint64_t tx_free;
    struct txent *tx; /* ring of packets waiting for the transmitter */
    size_t tx_head, tx_n, tx_cap;
    uint64_t waiting;
    uint64_t held_bytes;
    uint64_t last_when; /* FIFO: a packet never leaves before the previous one */
    uint64_t seq;
    struct pkt **heap;
    size_t n, cap;
    lk_counters c;
};

TERN_API int tern_linkem_abi_version(void)
{
    return LINKEM_ABI_VERSION;
}

/* ------------------------------------------------------------ schedule */

static int in_intervals(const lk_schedule *s, uint64_t t, uint64_t *end)
{
    int down = 0;
    uint64_t e = 0;
    for (size_t i = 0; i < s->n_down; i++)
        if (s->down[i].start_ns <= t && t < s->down[i].end_ns) {
            down = 1;
            if (s->down[i].end_ns > e)
                e = s->down[i].end_ns;
        }
    if (end)
        *end = e;
    return down;
}

/* Periodic part: 1 if down at t; *end is then the end of that down phase. */
static int in_periodic(const lk_schedule *s, uint64_t t, uint64_t *end)
{
    if (s->down_ns == 0 || t < s->offset_ns)
        return 0;
    uint64_t period = s->up_ns + s->down_ns;
    uint64_t k = (t - s->offset_ns) / period, phase = (t - s->offset_ns) % period;
    if (phase < s->up_ns)
        return 0;
    if (end)
        *end = s->offset_ns + (k + 1) * period;
    return 1;
}

TERN_API int lk_schedule_is_down(const lk_schedule *s, uint64_t rel_ns)
{
    return in_intervals(s, rel_ns, NULL) || in_periodic(s, rel_ns, NULL);
}

TERN_API uint64_t lk_schedule_next_up(const lk_schedule *s, uint64_t rel_ns)
{
    uint64_t t = rel_ns;
    /* Each round leaves one down stretch; overlapping stretches chain. */
    for (;;) {
        uint64_t e;
        if (in_intervals(s, t, &e)) {
            t = e;
            continue;
        }
        if (in_periodic(s, t, &e)) {
            t = e;
            continue;
        }
        return t;
    }
}

TERN_API uint64_t lk_schedule_next_change(const lk_schedule *s, uint64_t rel_ns)
{
    if (lk_schedule_is_down(s, rel_ns))
        return lk_schedule_next_up(s, rel_ns);
    uint64_t best = UINT64_MAX;
    for (size_t i = 0; i < s->n_down; i++)
        if (s->down[i].start_ns > rel_ns && s->down[i].start_ns < best &&
            s->down[i].end_ns > s->down[i].start_ns)
            best = s->down[i].start_ns;
    if (s->down_ns) {
        uint64_t p = s->up_ns + s->down_ns, d;
        if (rel_ns < s->offset_ns)
            d = s->offset_ns + s->up_ns;
        else
            d = s->offset_ns + ((rel_ns - s->offset_ns) / p) * p + s->up_ns;
        if (d <= rel_ns)
            d += p;
        if (d < best)
            best = d;
    }
    return best;
}

/* ------------------------------------------------------------ PRNG */

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static inline uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

/* xoshiro256** */
static uint64_t next_u64(lk_channel *ch)
{
    uint64_t *s = ch->rng;
    uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    ch->draws++;
    return r;
}

/* Uniform in [0, 1). */
static double next_unit(lk_channel *ch)
{
    return (double)(next_u64(ch) >> 11) * 0x1.0p-53;
}

/* Bits to skip before the next flipped one: geometric with parameter ber,
 * which is the exact law of the gaps between independent flips. */
static uint64_t next_gap(lk_channel *ch, uint64_t limit)
{
    if (ch->imp.ber >= 1.0) {
        next_u64(ch);
        return 0;
    }
    double u = 1.0 - next_unit(ch); /* (0, 1] */
    double g = log(u) / ch->ber_log1m;
    if (!(g < (double)limit))
        return limit;
    return (uint64_t)g;
}

/* ------------------------------------------------------------ heap */

static int before(const struct pkt *a, const struct pkt *b)
{
    return a->when < b->when || (a->when == b->when && a->seq < b->seq);
}

static void sift_up(lk_channel *ch, size_t i)
{
    struct pkt *p = ch->heap[i];
    while (i > 0) {
        size_t up = (i - 1) / 2;
        if (!before(p, ch->heap[up]))
            break;
        ch->heap[i] = ch->heap[up];
        i = up;
    }
    ch->heap[i] = p;
}

static void sift_down(lk_channel *ch, size_t i)
{
    struct pkt *p = ch->heap[i];
    for (;;) {
        size_t l = 2 * i + 1, m;
        if (l >= ch->n)
            break;
        m = l + 1 < ch->n && before(ch->heap[l + 1], ch->heap[l]) ? l + 1 : l;
        if (!before(ch->heap[m], p))
            break;
        ch->heap[i] = ch->heap[m];
        i = m;
    }
    ch->heap[i] = p;
}

static int heap_push(lk_channel *ch, struct pkt *p)
{
    if (ch->n == ch->cap) {
        size_t nc = ch->cap ? ch->cap * 2 : 64;
        struct pkt **nh = realloc(ch->heap, nc * sizeof *nh);
        if (!nh)
            return -ENOMEM;
        ch->heap = nh;
        ch->cap = nc;
    }
    ch->heap[ch->n++] = p;
    sift_up(ch, ch->n - 1);
    ch->held_bytes += p->len;
    return 0;
}

static struct pkt *heap_pop(lk_channel *ch)
{
    struct pkt *p = ch->heap[0];
    ch->heap[0] = ch->heap[--ch->n];
    if (ch->n)
        sift_down(ch, 0);
    ch->held_bytes -= p->len;
    return p;
}

/* ------------------------------------------------------------ timing */

static uint64_t add_sat(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t ms_to_ns(double ms)
{
    double ns = ms * 1e6;
    if (!(ns > 0))
        return 0;
    if (ns >= 1.8e19)
        return UINT64_MAX;
    return (uint64_t)llround(ns);
}

static uint64_t rel(const lk_channel *ch, uint64_t t)
{
    return t > ch->epoch ? t - ch->epoch : 0;
}

static int down_at(const lk_channel *ch, uint64_t t)
{
    return lk_schedule_is_down(&ch->imp.outage, rel(ch, t));
}

static void on_timer(tern_timer *t, void *arg);
static void on_tfd(tern_io *w, int fd, unsigned events, void *arg);

static void arm(lk_channel *ch)
{
    if (ch->n == 0) {
        tern_timer_stop(&ch->timer);
        return; /* a timerfd left armed fires into an empty heap: harmless */
    }
    uint64_t when = ch->heap[0]->when;
    /* Due already (no delay): the loop's own timer phase, no system call. */
    if (ch->tfd >= 0 && when > tern_loop_now(ch->loop)) {
        tern_timer_stop(&ch->timer);
        if (ch->tfd_deadline == when)
            return;
        struct itimerspec its = {
            {0, 0}, {(time_t)(when / TERN_NS_PER_S), (long)(when % TERN_NS_PER_S)}};
        if (timerfd_settime(ch->tfd, TFD_TIMER_ABSTIME, &its, NULL) == 0) {
            ch->tfd_deadline = when;
            return;
        }
        /* Cannot happen with a valid timerfd; the loop timer still works. */
    }
    if (tern_timer_is_active(&ch->timer) && tern_timer_deadline(&ch->timer) == when)
        return;
    tern_timer_start_at(&ch->timer, on_timer, ch, when, 0);
}

/* Releases every packet due by now. */
static void deliver_due(lk_channel *ch)
{
    uint64_t now = tern_loop_now(ch->loop);
    while (ch->n && ch->heap[0]->when <= now) {
        struct pkt *p = ch->heap[0];
        /* Judged at the scheduled time, not when the timer got to run: a
         * late wakeup must not move a packet into (or out of) an outage. */
        if (down_at(ch, p->when)) {
            if (ch->flags & LK_CH_STREAM) {
                heap_pop(ch);
                uint64_t up = lk_schedule_next_up(&ch->imp.outage, rel(ch, p->when));
                p->when = add_sat(ch->epoch, up);
                if (heap_push(ch, p) != 0) /* cannot fail: we just freed a slot */
                    free(p);
                continue;
            }
            heap_pop(ch);
            if (!(p->pflags & LK_PKT_MARKER))
                ch->c.dropped_outage++;
            free(p);
            continue;
        }
        heap_pop(ch);
        int rc = ch->cb(ch->arg, p->tag, p->data, p->len, p->pflags);
        if (!(p->pflags & LK_PKT_MARKER)) {
            if (rc == 0) {
                ch->c.packets_out++;
                ch->c.bytes_out += p->len;
            } else {
                ch->c.send_errors++;
            }
        }
        free(p);
    }
    arm(ch);
}

static void on_timer(tern_timer *t, void *arg)
{
    (void)t;
    deliver_due(arg);
}

static void on_tfd(tern_io *w, int fd, unsigned events, void *arg)
{
    lk_channel *ch = arg;
    uint64_t expirations;
    (void)w;
    (void)events;
    if (read(fd, &expirations, sizeof expirations) < 0 && errno != EAGAIN &&
        errno != EINTR)
        return;
    ch->tfd_deadline = 0; /* a one-shot timer that has fired */
    deliver_due(ch);
}

/* ------------------------------------------------------------ public */

TERN_API int lk_channel_new(tern_loop *loop, const lk_impair *imp, uint64_t seed, int dir,
                            unsigned flags, lk_deliver_cb cb, void *arg, lk_channel **out)
{
    if (!loop || !imp || !cb || !out || (dir != LK_A2B && dir != LK_B2A))
        return -EINVAL;
    lk_channel *ch = calloc(1, sizeof *ch);
    if (!ch)
        return -ENOMEM;
    ch->loop = loop;
    ch->imp = *imp;
    ch->imp.outage.down = NULL;
    if (imp->outage.n_down) {
        ch->imp.outage.down = malloc(imp->outage.n_down * sizeof *ch->imp.outage.down);
        if (!ch->imp.outage.down) {
            free(ch);
            return -ENOMEM;
        }
        memcpy(ch->imp.outage.down, imp->outage.down,
               imp->outage.n_down * sizeof *ch->imp.outage.down);
    }
    ch->flags = flags;
    ch->dir = dir;
    ch->cb = cb;
    ch->arg = arg;
    ch->epoch = tern_loop_now(loop);
    /* Each direction has its own stream: a2b's fates do not depend on how
     * much traffic went b2a. */
    uint64_t x = seed ^ (UINT64_C(0xD1B54A32D192ED03) * (uint64_t)(dir + 1));
    for (int i = 0; i < 4; i++)
        ch->rng[i] = splitmix64(&x);
    ch->delay_ns = ms_to_ns(imp->delay_ms);
    ch->jitter_ns = ms_to_ns(imp->jitter_ms);
    ch->gap_ns = imp->reorder_gap_ms >= 0 ? ms_to_ns(imp->reorder_gap_ms)
                                          : ms_to_ns(2 * imp->delay_ms + 1);
    ch->ber_log1m = imp->ber > 0 && imp->ber < 1 ? log1p(-imp->ber) : 0;
    tern_timer_init(loop, &ch->timer);
    ch->tfd = -1;
    if (!tern_clock_is_virtual(tern_loop_clock(loop))) {
        ch->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
        if (ch->tfd >= 0 && (tern_io_init(loop, &ch->tio, ch->tfd, on_tfd, ch) != 0 ||
                             tern_io_start(&ch->tio, TERN_IO_READ) != 0)) {
            close(ch->tfd);
            ch->tfd = -1;
        }
    }
    *out = ch;
    return 0;
}

TERN_API void lk_channel_free(lk_channel *ch)
{
    if (!ch)
        return;
    tern_timer_stop(&ch->timer);
    if (ch->tfd >= 0) {
        tern_io_stop(&ch->tio);
        close(ch->tfd);
    }
    for (size_t i = 0; i < ch->n; i++)
        free(ch->heap[i]);
    free(ch->heap);
    free(ch->tx);
    free(ch->imp.outage.down);
    free(ch);
}

TERN_API void lk_channel_set_epoch(lk_channel *ch, uint64_t epoch_ns)
{
    ch->epoch = epoch_ns;
}

static void tx_expire(lk_channel *ch, uint64_t now)
{
    while (ch->tx_n && ch->tx[ch->tx_head].start <= now) {
        ch->waiting -= ch->tx[ch->tx_head].len;
        ch->tx_head = (ch->tx_head + 1) % ch->tx_cap;
        ch->tx_n--;
    }
}

static int tx_push(lk_channel *ch, uint64_t start, uint64_t len)
{
    if (ch->tx_n == ch->tx_cap) {
        size_t nc = ch->tx_cap ? ch->tx_cap * 2 : 64;
        struct txent *nt = malloc(nc * sizeof *nt);
        if (!nt)
            return -ENOMEM;
        for (size_t i = 0; i < ch->tx_n; i++)
            nt[i] = ch->tx[(ch->tx_head + i) % ch->tx_cap];
        free(ch->tx);
        ch->tx = nt;
        ch->tx_cap = nc;
        ch->tx_head = 0;
    }
    ch->tx[(ch->tx_head + ch->tx_n) % ch->tx_cap] = (struct txent){start, len};
    ch->tx_n++;
    ch->waiting += len;
    return 0;
}

static uint64_t serialization_ns(const lk_channel *ch, size_t len)
{
    if (!ch->imp.rate_bps)
        return 0;
    /* Rounded up: a link never goes faster than its rate. */
    unsigned __int128 bits = (unsigned __int128)len * 8u * 1000000000u;
    unsigned __int128 ns = (bits + ch->imp.rate_bps - 1) / ch->imp.rate_bps;
    return ns > UINT64_MAX ? UINT64_MAX : (uint64_t)ns;
}

TERN_API int lk_channel_send(lk_channel *ch, const uint8_t *data, size_t len, void *tag,
                             unsigned pflags)
{
    uint64_t now = tern_loop_now(ch->loop);
    int marker = (pflags & LK_PKT_MARKER) != 0, stream = (ch->flags & LK_CH_STREAM) != 0;
    unsigned fate = 0;
    if (marker)
        len = 0;
    else {
        ch->c.packets_in++;
        ch->c.bytes_in += len;
    }
    struct pkt *p = malloc(sizeof *p + len);
    if (!p)
        return -ENOMEM;
    if (len)
        memcpy(p->data, data, len);
    p->tag = tag;
    p->pflags = pflags;
    p->len = len;

    /* The draws, always all of them and in this order, whatever happens to
     * the packet afterwards: fates depend on the seed and the packet sequence
     * only, not on timing. */
    double u_loss = 0, u_dup = 0, u_reorder = 0, u_jitter = 0;
    uint64_t flips = 0;
    if (!marker) {
        if (!stream) {
            u_loss = next_unit(ch);
            if (ch->imp.ber > 0 && len) {
                uint64_t nbits = (uint64_t)len * 8, pos = 0;
                if (ch->flags & LK_CH_BER_DELIVER) {
                    for (;;) {
                        uint64_t g = next_gap(ch, nbits - pos);
                        pos += g;
                        if (pos >= nbits)
                            break;
                        p->data[pos / 8] ^= (uint8_t)(0x80u >> (pos % 8));
                        flips++;
                        pos++;
                    }
                } else if (next_gap(ch, nbits) < nbits) {
                    flips = 1; /* dropped anyway: where the others fall is moot */
                }
            }
            u_dup = next_unit(ch);
            u_reorder = next_unit(ch);
        }
        u_jitter = next_unit(ch);
    }

    if (!marker && !stream) {
        if (down_at(ch, now))
            fate |= LK_FATE_OUTAGE;
        else if (u_loss < ch->imp.loss)
            fate |= LK_FATE_LOSS;
        if (!(fate & LK_FATE_DROPPED) && flips) {
            fate |= LK_FATE_CORRUPT;
            if (!(ch->flags & LK_CH_BER_DELIVER))
                fate |= LK_FATE_BER;
        }
    }
    tx_expire(ch, now);
    if (!(fate & LK_FATE_DROPPED) && !stream && !marker && ch->imp.rate_bps &&
        ch->tx_free > now && ch->waiting + len > ch->imp.queue_bytes)
        fate |= LK_FATE_QUEUE;

    if (fate & LK_FATE_DROPPED) {
        if (fate & LK_FATE_OUTAGE)
            ch->c.dropped_outage++;
        else if (fate & LK_FATE_LOSS)
            ch->c.dropped_loss++;
        else if (fate & LK_FATE_BER)
            ch->c.dropped_ber++;
        else
            ch->c.dropped_queue++;
        if (fate & LK_FATE_CORRUPT)
            ch->c.corrupted++;
        free(p);
        return (int)fate;
    }
    if (fate & LK_FATE_CORRUPT)
        ch->c.corrupted++;

    uint64_t start = ch->tx_free > now ? ch->tx_free : now;
    uint64_t end = add_sat(start, serialization_ns(ch, len));
    if (start > now && len && tx_push(ch, start, len) != 0) {
        free(p);
        return -ENOMEM;
    }
    ch->tx_free = end;
    uint64_t when = add_sat(end, ch->delay_ns);
    if (ch->jitter_ns)
        when = add_sat(when, (uint64_t)(u_jitter * (double)ch->jitter_ns));
    int reordered = !marker && !stream && u_reorder < ch->imp.reorder;
    if (reordered) {
        /* Held back, and out of the FIFO order the others keep. */
        when = add_sat(when, ch->gap_ns);
        fate |= LK_FATE_REORDER;
        ch->c.reordered++;
    } else {
        if (when < ch->last_when)
            when = ch->last_when;
        ch->last_when = when;
    }
    p->when = when;
    p->seq = ch->seq++;
    if (heap_push(ch, p) != 0) {
        free(p);
        return -ENOMEM;
    }
    if (!marker && !stream && u_dup < ch->imp.dup) {
        struct pkt *d = malloc(sizeof *d + len);
        if (d) {
            memcpy(d, p, sizeof *d + len);
            d->seq = ch->seq++;
            if (heap_push(ch, d) != 0)
                free(d);
            else {
                fate |= LK_FATE_DUP;
                ch->c.duplicated++;
            }
        }
    }
    arm(ch);
    return (int)fate;
}

TERN_API size_t lk_channel_cancel(lk_channel *ch, void *tag)
{
    size_t k = 0, gone = 0;
    for (size_t i = 0; i < ch->n; i++) {
        struct pkt *p = ch->heap[i];
        if (p->tag == tag) {
            ch->held_bytes -= p->len;
            free(p);
            gone++;
        } else {
            ch->heap[k++] = p;
        }
    }
    ch->n = k;
    if (gone) {
        for (size_t i = ch->n / 2; i-- > 0;)
            sift_down(ch, i);
        arm(ch);
    }
    return gone;
}

TERN_API lk_counters *lk_channel_counters(lk_channel *ch)
{
    return &ch->c;
}

TERN_API uint64_t lk_channel_waiting_bytes(lk_channel *ch)
{
    tx_expire(ch, tern_loop_now(ch->loop));
    return ch->waiting;
}

TERN_API uint64_t lk_channel_next_tx_start(lk_channel *ch)
{
    tx_expire(ch, tern_loop_now(ch->loop));
    return ch->tx_n ? ch->tx[ch->tx_head].start : 0;
}

TERN_API uint64_t lk_channel_held_bytes(const lk_channel *ch)
{
    return ch->held_bytes;
}

TERN_API size_t lk_channel_held_packets(const lk_channel *ch)
{
    return ch->n;
}

TERN_API int lk_channel_is_down(const lk_channel *ch)
{
    return down_at(ch, tern_loop_now(ch->loop));
}

TERN_API uint64_t lk_channel_next_change(const lk_channel *ch)
{
    uint64_t now = tern_loop_now(ch->loop);
    uint64_t r = lk_schedule_next_change(&ch->imp.outage, rel(ch, now));
    return r == UINT64_MAX ? r : add_sat(ch->epoch, r);
}

TERN_API uint64_t lk_channel_draws(const lk_channel *ch)
{
    return ch->draws;
}
