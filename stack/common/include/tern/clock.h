/* The injected clock: every engine reads time only through a tern_clock, so
 * the same code runs on the host's clocks or on a simulation's virtual time.
 *
 * Two scales:
 *  - monotonic nanoseconds, for timers and intervals (never jumps back);
 *  - DTN time, milliseconds since 2000-01-01T00:00:00Z (RFC 9171 4.2.6), for
 *    bundle creation timestamps, contact plans and log lines.
 *
 * The real clock is a shared constant (no allocation, thread-safe). A virtual
 * clock starts at a chosen DTN time with monotonic time 0 and moves only when
 * told; it is not thread-safe and is normally driven by one tern_loop.
 */
#ifndef TERN_CLOCK_H
#define TERN_CLOCK_H

#include <stdint.h>
#include <time.h>

#include "tern/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Unix time (seconds) of the DTN epoch, 2000-01-01T00:00:00Z. */
#define TERN_DTN_EPOCH_UNIX_S INT64_C(946684800)

/** Buffer size that fits any tern_dtn_format_iso() output, NUL included. */
#define TERN_DTN_ISO_BUFSZ 32

#define TERN_NS_PER_MS UINT64_C(1000000)
#define TERN_NS_PER_S  UINT64_C(1000000000)

typedef struct tern_clock tern_clock;

/** The host clock (CLOCK_MONOTONIC, CLOCK_REALTIME). Never NULL; never freed;
 * the functions that would change a clock refuse it with -EINVAL. */
TERN_API tern_clock *tern_clock_real(void);

/** Creates a virtual clock at DTN time start_dtn_ms, monotonic time 0. */
TERN_API int tern_clock_virtual_new(uint64_t start_dtn_ms, tern_clock **out);

/** Frees a virtual clock. NULL and the real clock are accepted (no-op). */
TERN_API void tern_clock_free(tern_clock *c);

/** 1 for a virtual clock, 0 for the real one. */
TERN_API int tern_clock_is_virtual(const tern_clock *c);

/** Monotonic time in ns: the real clock's CLOCK_MONOTONIC, or a virtual clock's
 * elapsed time since its creation. */
TERN_API uint64_t tern_clock_now_ns(const tern_clock *c);

/** DTN time in ms. A real clock set before 2000 reports 0, which RFC 9171
 * reserves for "this node has no accurate clock". A virtual clock reports
 * start + elapsed, rounded down to the millisecond. */
TERN_API uint64_t tern_clock_dtn_ms(const tern_clock *c);

/** Moves a virtual clock forward by delta_ns. -EINVAL on the real clock,
 * TERN_EOVERFLOW if the monotonic or DTN time would wrap. */
TERN_API int tern_clock_advance(tern_clock *c, uint64_t delta_ns);

/** Sets a virtual clock's monotonic time. TERN_ESTATE if that is earlier than
 * now (time never runs backwards), -EINVAL on the real clock. */
TERN_API int tern_clock_set_ns(tern_clock *c, uint64_t now_ns);

/** DTN ms -> Unix ms. TERN_EOVERFLOW beyond int64_t. */
TERN_API int tern_dtn_ms_to_unix_ms(uint64_t dtn_ms, int64_t *unix_ms);

/** Unix ms -> DTN ms. TERN_EOVERFLOW before 2000-01-01 (DTN time is unsigned). */
TERN_API int tern_dtn_ms_from_unix_ms(int64_t unix_ms, uint64_t *dtn_ms);

/** DTN ms -> Unix timespec (CLOCK_REALTIME scale). TERN_EOVERFLOW beyond time_t. */
TERN_API int tern_dtn_ms_to_timespec(uint64_t dtn_ms, struct timespec *ts);

/** Unix timespec -> DTN ms, rounding down to the millisecond. TERN_EOVERFLOW
 * before 2000-01-01; -EINVAL if tv_nsec is out of range. */
TERN_API int tern_dtn_ms_from_timespec(const struct timespec *ts, uint64_t *dtn_ms);

/** Formats DTN ms as UTC ISO 8601, "2000-01-01T00:00:00.000Z" (years past
 * 9999 get more digits). Independent of TZ and locale. TERN_ENOSPACE if buf
 * is too small (TERN_DTN_ISO_BUFSZ always suffices); buf is then "" if size > 0. */
TERN_API int tern_dtn_format_iso(uint64_t dtn_ms, char *buf, size_t size);

#ifdef __cplusplus
}
#endif
#endif
