/* Real and virtual clocks, DTN time conversions and UTC formatting. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "tern/clock.h"

enum { CLOCK_KIND_REAL = 1, CLOCK_KIND_VIRTUAL = 2 };

/* A kind tag rather than a vtable: the hot path is one well-predicted branch. */
struct tern_clock {
    int kind;
    uint64_t now_ns;       /* virtual: elapsed since creation */
    uint64_t start_dtn_ms; /* virtual: DTN time at monotonic 0 */
};

#define DTN_EPOCH_UNIX_MS (TERN_DTN_EPOCH_UNIX_S * 1000)

/* Read-only (.rodata), so it is shared safely by every loop and thread; the
 * setters check the kind before writing and never touch it. */
static const struct tern_clock real_clock = {.kind = CLOCK_KIND_REAL};

TERN_API tern_clock *tern_clock_real(void)
{
    return (tern_clock *)&real_clock;
}

TERN_API int tern_clock_virtual_new(uint64_t start_dtn_ms, tern_clock **out)
{
    tern_clock *c;

    if (!out)
        return -EINVAL;
    c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    c->kind = CLOCK_KIND_VIRTUAL;
    c->start_dtn_ms = start_dtn_ms;
    *out = c;
    return 0;
}

TERN_API void tern_clock_free(tern_clock *c)
{
    if (c && c->kind == CLOCK_KIND_VIRTUAL)
        free(c);
}

TERN_API int tern_clock_is_virtual(const tern_clock *c)
{
    return c->kind == CLOCK_KIND_VIRTUAL;
}

TERN_API uint64_t tern_clock_now_ns(const tern_clock *c)
{
    struct timespec ts;

    if (c->kind == CLOCK_KIND_VIRTUAL)
        return c->now_ns;
    /* CLOCK_MONOTONIC cannot fail with a valid id and pointer. */
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * TERN_NS_PER_S + (uint64_t)ts.tv_nsec;
}

TERN_API uint64_t tern_clock_dtn_ms(const tern_clock *c)
{
    struct timespec ts;
    uint64_t ms;

    if (c->kind == CLOCK_KIND_VIRTUAL)
        return c->start_dtn_ms + c->now_ns / TERN_NS_PER_MS;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (tern_dtn_ms_from_timespec(&ts, &ms) != 0)
        return 0;
    return ms;
}

TERN_API int tern_clock_set_ns(tern_clock *c, uint64_t now_ns)
{
    if (c->kind != CLOCK_KIND_VIRTUAL)
        return -EINVAL;
    if (now_ns < c->now_ns)
        return TERN_ESTATE;
    /* DTN time must stay representable, or timestamps would wrap to 2000. */
    if (now_ns / TERN_NS_PER_MS > UINT64_MAX - c->start_dtn_ms)
        return TERN_EOVERFLOW;
    c->now_ns = now_ns;
    return 0;
}

TERN_API int tern_clock_advance(tern_clock *c, uint64_t delta_ns)
{
    if (c->kind != CLOCK_KIND_VIRTUAL)
        return -EINVAL;
    if (delta_ns > UINT64_MAX - c->now_ns)
        return TERN_EOVERFLOW;
    return tern_clock_set_ns(c, c->now_ns + delta_ns);
}

TERN_API int tern_dtn_ms_to_unix_ms(uint64_t dtn_ms, int64_t *unix_ms)
{
    if (dtn_ms > (uint64_t)(INT64_MAX - DTN_EPOCH_UNIX_MS))
        return TERN_EOVERFLOW;
    *unix_ms = (int64_t)dtn_ms + DTN_EPOCH_UNIX_MS;
    return 0;
}

TERN_API int tern_dtn_ms_from_unix_ms(int64_t unix_ms, uint64_t *dtn_ms)
{
    if (unix_ms < DTN_EPOCH_UNIX_MS)
        return TERN_EOVERFLOW;
    *dtn_ms = (uint64_t)(unix_ms - DTN_EPOCH_UNIX_MS);
    return 0;
}

TERN_API int tern_dtn_ms_to_timespec(uint64_t dtn_ms, struct timespec *ts)
{
    uint64_t s = dtn_ms / 1000 + (uint64_t)TERN_DTN_EPOCH_UNIX_S;
    time_t t = (time_t)s;

    /* Catches a 32-bit time_t; with 64 bits every DTN time fits. */
    if (t < 0 || (uint64_t)t != s)
        return TERN_EOVERFLOW;
    ts->tv_sec = t;
    ts->tv_nsec = (long)(dtn_ms % 1000) * 1000000L;
    return 0;
}

TERN_API int tern_dtn_ms_from_timespec(const struct timespec *ts, uint64_t *dtn_ms)
{
    uint64_t s;

    if (ts->tv_nsec < 0 || ts->tv_nsec >= 1000000000L)
        return -EINVAL;
    if ((int64_t)ts->tv_sec < TERN_DTN_EPOCH_UNIX_S)
        return TERN_EOVERFLOW;
    s = (uint64_t)((int64_t)ts->tv_sec - TERN_DTN_EPOCH_UNIX_S);
    if (s > (UINT64_MAX - 999) / 1000)
        return TERN_EOVERFLOW;
    *dtn_ms = s * 1000 + (uint64_t)ts->tv_nsec / 1000000;
    return 0;
}

/* Days since 1970-01-01 -> proleptic Gregorian date (Howard Hinnant's
 * civil_from_days). Own arithmetic rather than gmtime_r: no TZ, no locale,
 * no year limits. */
static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;

    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

TERN_API int tern_dtn_format_iso(uint64_t dtn_ms, char *buf, size_t size)
{
    const uint64_t ms_per_day = UINT64_C(86400000);
    uint64_t days = dtn_ms / ms_per_day, rem = dtn_ms % ms_per_day;
    int64_t y;
    unsigned mo, d;
    int n;

    civil_from_days((int64_t)days + 10957, &y, &mo, &d); /* 10957: 1970 -> 2000 */
    n = snprintf(buf, size, "%04" PRId64 "-%02u-%02uT%02u:%02u:%02u.%03uZ", y, mo, d,
                 (unsigned)(rem / 3600000), (unsigned)(rem / 60000 % 60),
                 (unsigned)(rem / 1000 % 60), (unsigned)(rem % 1000));
    if (n < 0 || (size_t)n >= size) {
        if (size > 0)
            buf[0] = '\0';
        return TERN_ENOSPACE;
    }
    return 0;
}
