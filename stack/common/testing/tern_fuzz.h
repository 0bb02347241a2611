/*
 * tern_fuzz.h — the watchdog every stateful fuzz target uses.
 *
 * A decoder fuzzer finds crashes; an engine's infinite loop or quadratic
 * blow-up only shows as time. libFuzzer's own -timeout is seconds; this
 * watchdog aborts (a crash libFuzzer records with its input) as soon as one
 * step of a harness — a segment fed to an engine, a clock advance, a TCPCL
 * message — used more than a few milliseconds of CPU. CPU time of the calling
 * thread, not wall time, so a busy shared machine does not trip it.
 *
 * An input with a slow step may be run again before it counts
 * (tern_fuzz_replay). The limit is TERN_FUZZ_STEP_MS (default 20 ms: generous for ASan
 * builds, tiny against a hang). Header-only; fuzz targets include it from
 * stack/common/testing.
 */
#ifndef TERN_FUZZ_H
#define TERN_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef struct tern_fuzz_watch {
    uint64_t t0;
    uint64_t limit_ns;
    /** 1: a slow step only sets slow (see tern_fuzz_replay); 0: it aborts. */
    int lenient;
    int slow;
} tern_fuzz_watch;

static inline uint64_t tern_fuzz__cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/** Arms w for the next step. */
static inline void tern_fuzz_watch_start(tern_fuzz_watch *w)
{
    if (!w->limit_ns) {
        const char *e = getenv("TERN_FUZZ_STEP_MS");
        long ms = e ? strtol(e, NULL, 10) : 0;
        w->limit_ns = (uint64_t)(ms > 0 ? ms : 20) * 1000000ull;
    }
    w->t0 = tern_fuzz__cpu_ns();
}

/** Aborts if the step since tern_fuzz_watch_start took longer than the
 * limit; what names the step in the message. Re-arms w. */
static inline void tern_fuzz_watch_check(tern_fuzz_watch *w, const char *what)
{
    uint64_t dt = tern_fuzz__cpu_ns() - w->t0;
    if (dt > w->limit_ns && w->lenient) {
        w->slow = 1;
    } else if (dt > w->limit_ns) {
        fprintf(stderr, "fuzz watchdog: %s took %.1f ms of CPU (limit %.0f ms)\n", what,
                (double)dt / 1e6, (double)w->limit_ns / 1e6);
        abort();
    }
    w->t0 = tern_fuzz__cpu_ns();
}

/** A machine shared with other work now and then bills a step more CPU
 * than it used. A harness whose inputs are deterministic (virtual clock, no
 * randomness) runs each input with a lenient watch first and, if a step was
 * slow, again with a strict one, which aborts on a step slow again:
 *
 *   static int run(const uint8_t *d, size_t n, int lenient)
 *   { tern_fuzz_watch w = {.lenient = lenient}; ...; return w.slow; }
 *   int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
 *   { return tern_fuzz_replay(run, d, n); }
 */
static inline int tern_fuzz_replay(int (*run)(const uint8_t *, size_t, int),
                                   const uint8_t *data, size_t size)
{
    if (run(data, size, 1))
        run(data, size, 0); /* slow again: the watchdog aborts */
    return 0;
}

#endif
