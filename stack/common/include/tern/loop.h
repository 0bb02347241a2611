/* The event loop: fd watchers (epoll), timers, deferred work and cross-thread
 * wakeups around one injected clock. One loop per thread; every call except
 * tern_loop_wake() and tern_async_send() must come from the loop's thread.
 *
 * Handles (tern_timer, tern_io, tern_async) are embedded in the caller's
 * structs, libuv style: the loop allocates nothing per handle, and a handle
 * may be stopped or freed from any callback, including its own. A handle must
 * be stopped before its memory is freed or reused.
 *
 * On the real clock the loop sleeps in epoll_wait until the next timer is due
 * (millisecond resolution, rounded up). On a virtual clock it polls fds
 * without blocking and, when nothing is ready, jumps the clock to the next
 * timer deadline: a loop with only timers is a discrete-event simulation, and
 * hours of virtual time pass in microseconds. A virtual clock should be driven
 * by one loop only: two loops jumping one clock would skip each other's timers.
 *
 * Iteration order: due timers; deferred work; poll fds (the only place the
 * loop blocks or a virtual clock jumps) and run their callbacks; due timers.
 */
#ifndef TERN_LOOP_H
#define TERN_LOOP_H

#include <stddef.h>
#include <stdint.h>

#include "tern/base.h"
#include "tern/clock.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tern_loop tern_loop;
typedef struct tern_timer tern_timer;
typedef struct tern_io tern_io;
typedef struct tern_async tern_async;

typedef void (*tern_timer_cb)(tern_timer *t, void *arg);
/** events: the TERN_IO_* bits that are ready. */
typedef void (*tern_io_cb)(tern_io *w, int fd, unsigned events, void *arg);
typedef void (*tern_async_cb)(tern_async *a, void *arg);
typedef void (*tern_defer_cb)(tern_loop *loop, void *arg);

/** fd readiness. READ and WRITE are interest and result; ERROR and HUP are
 * reported whether asked for or not (the kernel always reports them). */
#define TERN_IO_READ  0x1u
#define TERN_IO_WRITE 0x2u
#define TERN_IO_ERROR 0x4u
#define TERN_IO_HUP   0x8u

/** Modes of tern_loop_run(). */
enum tern_run_mode {
    /** Until tern_loop_stop() or no active handles, timers or deferred work. */
    TERN_RUN_DEFAULT = 0,
    /** One iteration: runs what is ready; if nothing was, blocks (or jumps a
     * virtual clock) until something is and runs that. */
    TERN_RUN_ONCE = 1,
    /** One iteration; never blocks and never moves a virtual clock. */
    TERN_RUN_NOWAIT = 2,
};

/* Private fields: the structs are public only so callers can embed them. */
struct tern__link {
    struct tern__link *next, *prev;
};

struct tern_timer {
    tern_loop *loop;
    tern_timer_cb cb;
    void *arg;
    uint64_t deadline; /* monotonic ns of the loop's clock */
    uint64_t repeat;
    uint64_t seq; /* insertion order: FIFO among equal deadlines */
    size_t index; /* position in the loop's heap; SIZE_MAX when stopped */
};

struct tern_io {
    tern_loop *loop;
    tern_io_cb cb;
    void *arg;
    int fd;
    unsigned events;
    int active;
};

struct tern_async {
    tern_loop *loop;
    tern_async_cb cb;
    void *arg;
    struct tern__link link;
    int pending; /* set by any thread, cleared by the loop (atomics) */
    int active;
};

/* ---- loop ---- */

/** Creates a loop on clk (NULL: the real clock). clk must outlive the loop; a
 * virtual clk is advanced by the loop. */
TERN_API int tern_loop_new(tern_clock *clk, tern_loop **out);

/** Frees the loop and its epoll and eventfd descriptors. TERN_ESTATE (loop
 * untouched) while any timer, watcher or async handle is active or deferred
 * work is pending, or when called from inside tern_loop_run(). NULL is fine. */
TERN_API int tern_loop_close(tern_loop *loop);

/** Runs the loop in a tern_run_mode. TERN_ESTATE if already running (no
 * nesting); -errno if epoll fails. */
TERN_API int tern_loop_run(tern_loop *loop, int mode);

/** Runs until the clock reaches deadline_ns (monotonic ns), then returns after
 * the timers due by then and the deferred work they queue have run. A virtual
 * clock jumps from timer to timer and finally to exactly deadline_ns, even with
 * no handles; a real clock waits. Ends early on tern_loop_stop(). With
 * UINT64_MAX it also ends, like DEFAULT, when nothing is left to run. */
TERN_API int tern_loop_run_until(tern_loop *loop, uint64_t deadline_ns);

/** Makes the running tern_loop_run() or _run_until() return after the current
 * phase (if none is running, the next one returns after its first phase). */
TERN_API void tern_loop_stop(tern_loop *loop);

/** Number of active timers, watchers, async handles and pending deferred calls;
 * DEFAULT mode runs while this is non-zero. */
TERN_API size_t tern_loop_alive(const tern_loop *loop);

/** The loop's clock. */
TERN_API tern_clock *tern_loop_clock(const tern_loop *loop);

/** The clock's current monotonic time in ns (read now, not cached). */
TERN_API uint64_t tern_loop_now(const tern_loop *loop);

/** The earliest active timer's deadline; TERN_ENOTFOUND if none. */
TERN_API int tern_loop_next_deadline(const tern_loop *loop, uint64_t *deadline_ns);

/** Loop iterations so far, for diagnostics (and to show it does not spin). */
TERN_API uint64_t tern_loop_iterations(const tern_loop *loop);

/** Wakes the loop from any thread: a blocked poll returns. Thread-safe and
 * async-signal-safe. */
TERN_API int tern_loop_wake(tern_loop *loop);

/* ---- deferred work ---- */

/** Queues cb(loop, arg) for the next iteration, before the loop blocks. Calls
 * run in FIFO order; those queued by a deferred call wait for the following
 * iteration, so a call that requeues itself cannot starve fds and timers. */
TERN_API int tern_loop_defer(tern_loop *loop, tern_defer_cb cb, void *arg);

/** Cancels every pending deferred call equal to (cb, arg): for freeing arg
 * before its call ran. TERN_ENOTFOUND if none was pending. */
TERN_API int tern_loop_defer_cancel(tern_loop *loop, tern_defer_cb cb, void *arg);

/* ---- timers ---- */

/** Binds t to loop, stopped. Call once before the other tern_timer_* calls. */
TERN_API int tern_timer_init(tern_loop *loop, tern_timer *t);

/** (Re)starts t to fire cb(t, arg) timeout_ns from now, then every repeat_ns
 * (0: once). Restarting an active timer moves it: it fires after timers
 * already started with the same deadline. O(log n); -ENOMEM when the heap
 * cannot grow (t is unchanged). A deadline past UINT64_MAX saturates. */
TERN_API int tern_timer_start(tern_timer *t, tern_timer_cb cb, void *arg,
                              uint64_t timeout_ns, uint64_t repeat_ns);

/** As tern_timer_start() with an absolute deadline in the clock's monotonic ns
 * (engines that compute deadlines need no conversion). A past deadline fires
 * on the next timer phase. */
TERN_API int tern_timer_start_at(tern_timer *t, tern_timer_cb cb, void *arg,
                                 uint64_t deadline_ns, uint64_t repeat_ns);

/** Stops t; a stopped timer is fine. O(log n). A repeating timer is re-armed
 * before its callback runs, so stopping it there ends the series. */
TERN_API int tern_timer_stop(tern_timer *t);

/** 1 if t is started and has not fired (or repeats), else 0. */
TERN_API int tern_timer_is_active(const tern_timer *t);

/** t's deadline in monotonic ns (meaningful while active). */
TERN_API uint64_t tern_timer_deadline(const tern_timer *t);

/* ---- fd watchers ---- */

/** Binds w (stopped or fresh) to fd on loop. One watcher per fd: epoll refuses a second
 * registration with -EEXIST. */
TERN_API int tern_io_init(tern_loop *loop, tern_io *w, int fd, tern_io_cb cb, void *arg);

/** Sets w's interest (TERN_IO_READ | TERN_IO_WRITE) and registers it if
 * stopped. Level-triggered: a callback is repeated every iteration while the
 * fd stays ready, so a callback may do a bounded amount of I/O and leave the
 * rest for later without losing the event. 0 watches only ERROR/HUP;
 * TERN_IO_HUP asks for HUP also when a stream's peer closed only its side
 * (EPOLLRDHUP): how a socket that is not read learns that its peer left. */
TERN_API int tern_io_start(tern_io *w, unsigned events);

/** Unregisters w; a stopped watcher is fine. Stop before closing the fd: an
 * fd closed first is dropped by the kernel only once every duplicate of it is
 * closed. Events already fetched for w in this iteration are discarded. */
TERN_API int tern_io_stop(tern_io *w);

/** 1 if w is registered, else 0. */
TERN_API int tern_io_is_active(const tern_io *w);

/* ---- cross-thread wakeups ---- */

/** Activates a (which must be stopped or fresh): each tern_async_send() makes the loop
 * call cb(a, arg) on its own thread. Sends that arrive before the callback runs coalesce
 * into one call, so the callback drains whatever queue the senders fill. */
TERN_API int tern_async_start(tern_loop *loop, tern_async *a, tern_async_cb cb,
                              void *arg);

/** Asks the loop to run a's callback. Thread-safe and async-signal-safe; the
 * only tern_async call allowed off the loop's thread. */
TERN_API int tern_async_send(tern_async *a);

/** Deactivates a. Senders must have stopped sending before a is freed. */
TERN_API int tern_async_stop(tern_async *a);

#ifdef __cplusplus
}
#endif
#endif
