/* The event loop: epoll + a binary min-heap of timers + a deferred-call ring. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "tern/loop.h"

#define EV_BATCH      64
#define TIMER_STOPPED SIZE_MAX
#define NO_LIMIT      UINT64_MAX

/* How an iteration may wait when nothing is ready. */
enum { POLL_NOWAIT, POLL_IF_IDLE, POLL_BLOCK };

struct defer_ent {
    tern_defer_cb cb; /* NULL once cancelled */
    void *arg;
};

struct tern_loop {
    tern_clock *clock;
    int virt;
    int epfd;
    int wakefd;
    int running;
    int no_pwait2; /* the kernel has no epoll_pwait2: millisecond sleeps */
    int stop;
    uint64_t iterations;

    /* Timers: heap[0] is the earliest (deadline, seq). */
    tern_timer **heap;
    size_t nheap, capheap;
    uint64_t timer_seq;

    size_t nio;
    size_t nasync;
    struct tern__link asyncs;

    /* Deferred calls: a ring, capacity a power of two. */
    struct defer_ent *dq;
    size_t dq_head, dq_len, dq_cap, dq_live;

    /* The batch being dispatched, so a stopped watcher's later events can be
     * dropped before they reach freed memory. */
    struct epoll_event ev[EV_BATCH];
    int ev_n, ev_i;
};

/* ---- timer heap ---- */

static int timer_before(const tern_timer *a, const tern_timer *b)
{
    return a->deadline < b->deadline || (a->deadline == b->deadline && a->seq < b->seq);
}

static void heap_set(tern_loop *loop, size_t i, tern_timer *t)
{
    loop->heap[i] = t;
    t->index = i;
}

static void heap_up(tern_loop *loop, size_t i)
{
    tern_timer *t = loop->heap[i];

    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!timer_before(t, loop->heap[parent]))
            break;
        heap_set(loop, i, loop->heap[parent]);
        i = parent;
    }
    heap_set(loop, i, t);
}

static void heap_down(tern_loop *loop, size_t i)
{
    tern_timer *t = loop->heap[i];
    size_t n = loop->nheap;

    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && timer_before(loop->heap[c + 1], loop->heap[c]))
            c++;
        if (!timer_before(loop->heap[c], t))
            break;
        heap_set(loop, i, loop->heap[c]);
        i = c;
    }
    heap_set(loop, i, t);
}

/* Restores heap order at i after its key changed either way. */
static void heap_fix(tern_loop *loop, size_t i)
{
    if (i > 0 && timer_before(loop->heap[i], loop->heap[(i - 1) / 2]))
        heap_up(loop, i);
    else
        heap_down(loop, i);
}

static int heap_reserve(tern_loop *loop)
{
    tern_timer **h;
    size_t cap;

    if (loop->nheap < loop->capheap)
        return 0;
    cap = loop->capheap ? loop->capheap * 2 : 64;
    if (cap > SIZE_MAX / sizeof *h)
        return -ENOMEM;
    h = realloc(loop->heap, cap * sizeof *h);
    if (!h)
        return -ENOMEM;
    loop->heap = h;
    loop->capheap = cap;
    return 0;
}

/* Caller has reserved room. */
static void heap_push(tern_loop *loop, tern_timer *t)
{
    size_t i = loop->nheap++;

    heap_set(loop, i, t);
    heap_up(loop, i);
}

static void heap_remove(tern_loop *loop, tern_timer *t)
{
    size_t i = t->index;
    tern_timer *last = loop->heap[--loop->nheap];

    t->index = TIMER_STOPPED;
    if (last == t)
        return;
    heap_set(loop, i, last);
    heap_fix(loop, i);
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
    return b > UINT64_MAX - a ? UINT64_MAX : a + b;
}

/* Fires timers due at now. Timers (re)started during this pass get a sequence
 * number >= the pass's and wait for the next pass: a callback that restarts
 * itself with timeout 0 cannot starve the loop. */
static int run_timers(tern_loop *loop, uint64_t now)
{
    uint64_t seq_end = loop->timer_seq;
    int fired = 0;

    while (loop->nheap > 0) {
        tern_timer *t = loop->heap[0];
        if (t->deadline > now || t->seq >= seq_end)
            break;
        heap_remove(loop, t);
        if (t->repeat) {
            /* Keep the phase (no drift); after a stall skip the missed ticks
             * instead of firing them back to back. */
            uint64_t next = add_sat(t->deadline, t->repeat);
            if (next <= now)
                next = add_sat(now, t->repeat);
            t->deadline = next;
            t->seq = loop->timer_seq++;
            heap_push(loop, t); /* cannot fail: the slot was just freed */
        }
        /* t may be freed by its callback: not touched after this call. */
        t->cb(t, t->arg);
        fired++;
    }
    return fired;
}

TERN_API int tern_timer_init(tern_loop *loop, tern_timer *t)
{
    memset(t, 0, sizeof *t);
    t->loop = loop;
    t->index = TIMER_STOPPED;
    return 0;
}

TERN_API int tern_timer_start_at(tern_timer *t, tern_timer_cb cb, void *arg,
                                 uint64_t deadline_ns, uint64_t repeat_ns)
{
    tern_loop *loop = t->loop;
    int rc;

    if (!cb || !loop)
        return -EINVAL;
    if (t->index == TIMER_STOPPED) {
        rc = heap_reserve(loop);
        if (rc)
            return rc;
    }
    t->cb = cb;
    t->arg = arg;
    t->deadline = deadline_ns;
    t->repeat = repeat_ns;
    t->seq = loop->timer_seq++;
    if (t->index == TIMER_STOPPED)
        heap_push(loop, t);
    else
        heap_fix(loop, t->index);
    return 0;
}

TERN_API int tern_timer_start(tern_timer *t, tern_timer_cb cb, void *arg,
                              uint64_t timeout_ns, uint64_t repeat_ns)
{
    if (!t->loop)
        return -EINVAL;
    /* A fresh clock reading, not the iteration's: a timer must never fire
     * earlier than timeout_ns after this call. */
    return tern_timer_start_at(
        t, cb, arg, add_sat(tern_clock_now_ns(t->loop->clock), timeout_ns), repeat_ns);
}

TERN_API int tern_timer_stop(tern_timer *t)
{
    if (t->index != TIMER_STOPPED)
        heap_remove(t->loop, t);
    return 0;
}

TERN_API int tern_timer_is_active(const tern_timer *t)
{
    return t->index != TIMER_STOPPED;
}

TERN_API uint64_t tern_timer_deadline(const tern_timer *t)
{
    return t->deadline;
}

/* ---- deferred calls ---- */

static int defer_grow(tern_loop *loop)
{
    size_t cap = loop->dq_cap ? loop->dq_cap * 2 : 16;
    struct defer_ent *q;

    if (cap > SIZE_MAX / sizeof *q)
        return -ENOMEM;
    q = malloc(cap * sizeof *q);
    if (!q)
        return -ENOMEM;
    /* Unwrap the ring so the new one starts at 0. */
    for (size_t i = 0; i < loop->dq_len; i++)
        q[i] = loop->dq[(loop->dq_head + i) & (loop->dq_cap - 1)];
    free(loop->dq);
    loop->dq = q;
    loop->dq_cap = cap;
    loop->dq_head = 0;
    return 0;
}

TERN_API int tern_loop_defer(tern_loop *loop, tern_defer_cb cb, void *arg)
{
    int rc;

    if (!cb)
        return -EINVAL;
    if (loop->dq_len == loop->dq_cap) {
        rc = defer_grow(loop);
        if (rc)
            return rc;
    }
    struct defer_ent *e = &loop->dq[(loop->dq_head + loop->dq_len) & (loop->dq_cap - 1)];
    e->cb = cb;
    e->arg = arg;
    loop->dq_len++;
    loop->dq_live++;
    return 0;
}

TERN_API int tern_loop_defer_cancel(tern_loop *loop, tern_defer_cb cb, void *arg)
{
    int found = 0;

    for (size_t i = 0; i < loop->dq_len; i++) {
        struct defer_ent *e = &loop->dq[(loop->dq_head + i) & (loop->dq_cap - 1)];
        if (e->cb && e->cb == cb && e->arg == arg) {
            e->cb = NULL;
            loop->dq_live--;
            found = 1;
        }
    }
    return found ? 0 : TERN_ENOTFOUND;
}

/* Runs the calls queued before this pass; later ones wait for the next. */
static int run_deferred(tern_loop *loop)
{
    size_t n = loop->dq_len;
    int ran = 0;

    while (n-- > 0) {
        /* Copy out first: the callback may grow (reallocate) the ring. */
        struct defer_ent e = loop->dq[loop->dq_head];
        loop->dq_head = (loop->dq_head + 1) & (loop->dq_cap - 1);
        loop->dq_len--;
        if (e.cb) {
            loop->dq_live--;
            e.cb(loop, e.arg);
            ran = 1;
        }
    }
    return ran;
}

/* ---- async handles and wakeups ---- */

static void link_init(struct tern__link *l)
{
    l->next = l->prev = l;
}

static void link_insert_tail(struct tern__link *head, struct tern__link *l)
{
    l->prev = head->prev;
    l->next = head;
    head->prev->next = l;
    head->prev = l;
}

static void link_remove(struct tern__link *l)
{
    l->prev->next = l->next;
    l->next->prev = l->prev;
    link_init(l);
}

TERN_API int tern_loop_wake(tern_loop *loop)
{
    uint64_t one = 1;
    int saved = errno, rc = 0; /* errno kept intact for signal handlers */

    while (write(loop->wakefd, &one, sizeof one) != (ssize_t)sizeof one) {
        if (errno == EINTR)
            continue;
        /* EAGAIN: the counter is saturated, so a wakeup is pending anyway. */
        rc = errno == EAGAIN ? 0 : -errno;
        break;
    }
    errno = saved;
    return rc;
}

TERN_API int tern_async_start(tern_loop *loop, tern_async *a, tern_async_cb cb, void *arg)
{
    if (!cb)
        return -EINVAL;
    memset(a, 0, sizeof *a);
    a->loop = loop;
    a->cb = cb;
    a->arg = arg;
    a->active = 1;
    link_insert_tail(&loop->asyncs, &a->link);
    loop->nasync++;
    return 0;
}

TERN_API int tern_async_send(tern_async *a)
{
    /* Only the first send since the loop last looked needs a wakeup. */
    if (__atomic_exchange_n(&a->pending, 1, __ATOMIC_SEQ_CST) == 0)
        return tern_loop_wake(a->loop);
    return 0;
}

TERN_API int tern_async_stop(tern_async *a)
{
    if (!a->active)
        return 0;
    link_remove(&a->link);
    a->active = 0;
    a->loop->nasync--;
    return 0;
}

static void run_asyncs(tern_loop *loop)
{
    struct tern__link todo;
    uint64_t cnt;

    while (read(loop->wakefd, &cnt, sizeof cnt) < 0 && errno == EINTR)
        ;
    if (loop->asyncs.next == &loop->asyncs)
        return;
    /* Move the list aside and put each handle back before its callback, so a
     * callback may stop or free any handle, its own included. */
    todo.next = loop->asyncs.next;
    todo.prev = loop->asyncs.prev;
    todo.next->prev = &todo;
    todo.prev->next = &todo;
    link_init(&loop->asyncs);
    while (todo.next != &todo) {
        struct tern__link *l = todo.next;
        tern_async *a = (tern_async *)((char *)l - offsetof(tern_async, link));
        link_remove(l);
        link_insert_tail(&loop->asyncs, l);
        if (__atomic_exchange_n(&a->pending, 0, __ATOMIC_SEQ_CST))
            a->cb(a, a->arg);
    }
}

/* ---- fd watchers ---- */

static uint32_t to_epoll(unsigned events)
{
    return (events & TERN_IO_READ ? EPOLLIN : 0u) |
           (events & TERN_IO_WRITE ? EPOLLOUT : 0u) |
           (events & TERN_IO_HUP ? EPOLLRDHUP : 0u);
}

static unsigned from_epoll(uint32_t ev)
{
    return (ev & (EPOLLIN | EPOLLPRI) ? TERN_IO_READ : 0u) |
           (ev & EPOLLOUT ? TERN_IO_WRITE : 0u) | (ev & EPOLLERR ? TERN_IO_ERROR : 0u) |
           (ev & (EPOLLHUP | EPOLLRDHUP) ? TERN_IO_HUP : 0u);
}

TERN_API int tern_io_init(tern_loop *loop, tern_io *w, int fd, tern_io_cb cb, void *arg)
{
    if (fd < 0 || !cb)
        return -EINVAL;
    memset(w, 0, sizeof *w);
    w->loop = loop;
    w->cb = cb;
    w->arg = arg;
    w->fd = fd;
    return 0;
}

TERN_API int tern_io_start(tern_io *w, unsigned events)
{
    struct epoll_event ev = {.events = to_epoll(events), .data.ptr = w};

    if (!w->loop || (events & ~(TERN_IO_READ | TERN_IO_WRITE | TERN_IO_HUP)))
        return -EINVAL;
    if (w->active && w->events == events)
        return 0; /* a system call per flush of every socket adds up */
    if (epoll_ctl(w->loop->epfd, w->active ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, w->fd, &ev) <
        0)
        return -errno;
    w->events = events;
    if (!w->active) {
        w->active = 1;
        w->loop->nio++;
    }
    return 0;
}

TERN_API int tern_io_stop(tern_io *w)
{
    tern_loop *loop = w->loop;
    int rc = 0;

    if (!w->active)
        return 0;
    /* ENOENT/EBADF: the fd is already gone; the watcher is stopped anyway. */
    if (epoll_ctl(loop->epfd, EPOLL_CTL_DEL, w->fd, NULL) < 0 && errno != ENOENT &&
        errno != EBADF)
        rc = -errno;
    w->active = 0;
    loop->nio--;
    for (int i = loop->ev_i + 1; i < loop->ev_n; i++)
        if (loop->ev[i].data.ptr == w)
            loop->ev[i].data.ptr = NULL;
    return rc;
}

TERN_API int tern_io_is_active(const tern_io *w)
{
    return w->active;
}

static void dispatch(tern_loop *loop, int n)
{
    loop->ev_n = n;
    for (loop->ev_i = 0; loop->ev_i < n; loop->ev_i++) {
        void *p = loop->ev[loop->ev_i].data.ptr;
        if (!p)
            continue;
        if (p == loop) {
            run_asyncs(loop);
            continue;
        }
        tern_io *w = p;
        /* Interest may have shrunk since the batch was fetched. */
        unsigned got = from_epoll(loop->ev[loop->ev_i].events) &
                       (w->events | TERN_IO_ERROR | TERN_IO_HUP);
        if (got)
            w->cb(w, w->fd, got, w->arg);
    }
    loop->ev_n = 0;
    loop->ev_i = 0;
}

/* ---- the loop ---- */

TERN_API int tern_loop_new(tern_clock *clk, tern_loop **out)
{
    struct epoll_event ev = {.events = EPOLLIN};
    tern_loop *loop;
    int rc;

    if (!out)
        return -EINVAL;
    loop = calloc(1, sizeof *loop);
    if (!loop)
        return -ENOMEM;
    loop->clock = clk ? clk : tern_clock_real();
    loop->virt = tern_clock_is_virtual(loop->clock);
    link_init(&loop->asyncs);
    loop->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (loop->epfd < 0) {
        rc = -errno;
        goto err_free;
    }
    loop->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (loop->wakefd < 0) {
        rc = -errno;
        goto err_epoll;
    }
    /* The loop's own address tags the wakeup: no watcher can live there. */
    ev.data.ptr = loop;
    if (epoll_ctl(loop->epfd, EPOLL_CTL_ADD, loop->wakefd, &ev) < 0) {
        rc = -errno;
        goto err_wake;
    }
    *out = loop;
    return 0;

err_wake:
    close(loop->wakefd);
err_epoll:
    close(loop->epfd);
err_free:
    free(loop);
    return rc;
}

TERN_API size_t tern_loop_alive(const tern_loop *loop)
{
    return loop->nheap + loop->nio + loop->nasync + loop->dq_live;
}

TERN_API int tern_loop_close(tern_loop *loop)
{
    if (!loop)
        return 0;
    if (loop->running || tern_loop_alive(loop))
        return TERN_ESTATE;
    close(loop->wakefd);
    close(loop->epfd);
    free(loop->dq);
    free(loop->heap);
    free(loop);
    return 0;
}

TERN_API void tern_loop_stop(tern_loop *loop)
{
    loop->stop = 1;
}

TERN_API tern_clock *tern_loop_clock(const tern_loop *loop)
{
    return loop->clock;
}

TERN_API uint64_t tern_loop_now(const tern_loop *loop)
{
    return tern_clock_now_ns(loop->clock);
}

TERN_API int tern_loop_next_deadline(const tern_loop *loop, uint64_t *deadline_ns)
{
    if (loop->nheap == 0)
        return TERN_ENOTFOUND;
    *deadline_ns = loop->heap[0]->deadline;
    return 0;
}

TERN_API uint64_t tern_loop_iterations(const tern_loop *loop)
{
    return loop->iterations;
}

/* The earliest moment the loop must wake for: next timer or the run limit. */
static uint64_t wake_target(const tern_loop *loop, uint64_t limit)
{
    uint64_t t = loop->nheap ? loop->heap[0]->deadline : NO_LIMIT;
    return t < limit ? t : limit;
}

/* How long this poll may sleep, in ns: -1 without limit, 0 not at all. */
static int64_t poll_timeout(const tern_loop *loop, int block, uint64_t limit)
{
    uint64_t target, now;

    if (!block || loop->stop || loop->dq_len > 0)
        return 0;
    target = wake_target(loop, limit);
    if (target == NO_LIMIT)
        /* Nothing timed: sleep for fds or a wakeup, if anything could come. */
        return loop->nio + loop->nasync > 0 ? -1 : 0;
    if (loop->virt)
        return 0; /* virtual time moves by jumping, not by waiting */
    now = tern_clock_now_ns(loop->clock);
    if (target <= now)
        return 0;
    return target - now > INT64_MAX ? INT64_MAX : (int64_t)(target - now);
}

/* Sleeps in epoll for at most timeout ns. epoll_pwait2 keeps sub-millisecond
 * timers (pacing a link at its rate) from sleeping a whole millisecond; a
 * kernel without it gets epoll_wait, rounded up: waking a little late is
 * harmless, early means another round. */
static int epoll_sleep(tern_loop *loop, int64_t timeout)
{
    if (timeout > 0 && !loop->no_pwait2) {
        struct timespec ts = {(time_t)(timeout / 1000000000),
                              (long)(timeout % 1000000000)};
        int n = epoll_pwait2(loop->epfd, loop->ev, EV_BATCH, &ts, NULL);
        if (n >= 0 || errno != ENOSYS)
            return n;
        loop->no_pwait2 = 1;
    }
    int ms = timeout <= 0 ? (int)timeout
             : (uint64_t)timeout >= (uint64_t)INT_MAX * TERN_NS_PER_MS
                 ? INT_MAX
                 : (int)(((uint64_t)timeout + TERN_NS_PER_MS - 1) / TERN_NS_PER_MS);
    return epoll_wait(loop->epfd, loop->ev, EV_BATCH, ms);
}

static int poll_io(tern_loop *loop, int block, uint64_t limit)
{
    int n;

    for (;;) {
        int64_t timeout = poll_timeout(loop, block, limit);
        /* A virtual loop with nothing to poll skips the syscall: a pure
         * simulation then costs no kernel entry per event. */
        if (timeout == 0 && loop->virt && loop->nio + loop->nasync == 0)
            return 0;
        n = epoll_sleep(loop, timeout);
        if (n >= 0)
            break;
        if (errno != EINTR)
            return -errno;
    }
    dispatch(loop, n);
    return n;
}

/* One iteration. wait (POLL_*): whether an idle poll may block (real clock)
 * or jump (virtual clock). ONCE waits only if the first phases found nothing
 * to do, so one ONCE call is one step of progress, never two. */
static int iterate(tern_loop *loop, int wait, uint64_t limit)
{
    int n, worked, block;

    loop->iterations++;
    worked = run_timers(loop, tern_clock_now_ns(loop->clock));
    worked |= run_deferred(loop);
    if (loop->stop)
        return 0;
    block = wait == POLL_BLOCK || (wait == POLL_IF_IDLE && !worked);
    n = poll_io(loop, block, limit);
    if (n < 0)
        return n;
    if (loop->virt && block && n == 0 && loop->dq_len == 0 && !loop->stop) {
        uint64_t target = wake_target(loop, limit);
        if (target != NO_LIMIT && target > tern_clock_now_ns(loop->clock)) {
            int rc = tern_clock_set_ns(loop->clock, target);
            if (rc)
                return rc;
        }
    }
    if (block && !loop->stop)
        run_timers(loop, tern_clock_now_ns(loop->clock));
    return 0;
}

TERN_API int tern_loop_run(tern_loop *loop, int mode)
{
    int rc = 0;

    if (mode != TERN_RUN_DEFAULT && mode != TERN_RUN_ONCE && mode != TERN_RUN_NOWAIT)
        return -EINVAL;
    if (loop->running)
        return TERN_ESTATE;
    loop->running = 1;
    if (mode != TERN_RUN_DEFAULT || tern_loop_alive(loop)) {
        do {
            rc = iterate(loop,
                         mode == TERN_RUN_DEFAULT ? POLL_BLOCK
                         : mode == TERN_RUN_ONCE  ? POLL_IF_IDLE
                                                  : POLL_NOWAIT,
                         NO_LIMIT);
        } while (rc == 0 && mode == TERN_RUN_DEFAULT && !loop->stop &&
                 tern_loop_alive(loop));
    }
    loop->stop = 0;
    loop->running = 0;
    return rc;
}

/* Work that runs without waiting: deferred calls or a timer due by now. */
static int work_ready(const tern_loop *loop, uint64_t now)
{
    return loop->dq_live > 0 || (loop->nheap > 0 && loop->heap[0]->deadline <= now);
}

TERN_API int tern_loop_run_until(tern_loop *loop, uint64_t deadline_ns)
{
    int rc = 0;

    if (loop->running)
        return TERN_ESTATE;
    loop->running = 1;
    while (!loop->stop) {
        uint64_t now = tern_clock_now_ns(loop->clock);
        if (now >= deadline_ns && !work_ready(loop, now))
            break;
        /* No limit and nothing that could ever happen: do not spin. */
        if (deadline_ns == NO_LIMIT && !tern_loop_alive(loop))
            break;
        rc = iterate(loop, POLL_BLOCK, deadline_ns);
        if (rc)
            break;
    }
    loop->stop = 0;
    loop->running = 0;
    return rc;
}
