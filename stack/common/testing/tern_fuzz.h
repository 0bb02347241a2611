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
 * The limit is TERN_FUZZ_STEP_MS (default 20 ms: generous for ASan builds,
 * tiny against a hang). Header-only; fuzz targets include it from
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
    if (dt > w->limit_ns) {
        fprintf(stderr, "fuzz watchdog: %s took %.1f ms of CPU (limit %.0f ms)\n", what,
                (double)dt / 1e6, (double)w->limit_ns / 1e6);
        abort();
    }
    w->t0 = tern_fuzz__cpu_ns();
}

#endif
