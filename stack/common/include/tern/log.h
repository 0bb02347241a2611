/* Logging: one logger per node (no global state), UTC timestamps, a level,
 * a node log file and/or stderr. One call-site style across the project:
 *
 *   TERN_WARN(lg, "ltp", "span %llu: segment dropped: %s", peer, why);
 *
 * A NULL logger writes warnings and errors to stderr, so libraries can log
 * before (or without) a node being set up.
 */
#ifndef TERN_LOG_H
#define TERN_LOG_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "tern/base.h"

#ifdef __cplusplus
extern "C" {
#endif

enum tern_log_level {
    TERN_LOG_ERROR = 0,
    TERN_LOG_WARN = 1,
    TERN_LOG_INFO = 2,
    TERN_LOG_DEBUG = 3,
    TERN_LOG_TRACE = 4,
};

/** Flags for tern_log_open. */
#define TERN_LOG_TO_STDERR 0x1 /**< also copy each line to stderr */

typedef struct tern_log tern_log;
struct tern_clock;

/**
 * Opens a logger. name tags every line (a node name, "ternd", ...); path is
 * the log file, appended to and created 0644 (NULL: no file); level is the
 * most verbose level written. Returns 0, or -errno if the file cannot be opened.
 */
TERN_API int tern_log_open(tern_log **out, const char *name, const char *path, int level,
                           unsigned flags);

/** Closes a logger and its file. NULL is accepted. */
TERN_API void tern_log_close(tern_log *lg);

/** Changes the level. */
TERN_API void tern_log_set_level(tern_log *lg, int level);

/** Takes timestamps from clk (e.g. a simulation's virtual clock) instead of the
 * real clock. clk must outlive the logger; NULL restores the real clock. */
TERN_API void tern_log_set_clock(tern_log *lg, const struct tern_clock *clk);

/** True if a message at level would be written (cheap; use before costly work). */
TERN_API int tern_log_enabled(const tern_log *lg, int level);

/** Parses "error", "warn", "info", "debug", "trace" (or 0-4). -1 if unknown. */
TERN_API int tern_log_level_parse(const char *s);

/** Writes one line: "<UTC time> <name> <LEVEL> <subsys>: <message>". */
TERN_API void tern_log_write(tern_log *lg, int level, const char *subsys, const char *fmt,
                             ...) __attribute__((format(printf, 4, 5)));

/** va_list form of tern_log_write. */
TERN_API void tern_log_vwrite(tern_log *lg, int level, const char *subsys,
                              const char *fmt, va_list ap);

/* ---- rate-limited lines: what a peer or an attacker can cause -------------
 * A line that input from outside can trigger (a malformed datagram, a garbage
 * connection) is written at most once per interval per cause; the ones held
 * back are counted and the next line written says how many:
 *
 *   static tern_log_limit lim;  (zero: the default interval, 10 s)
 *   tern_log_limited(lg, &lim, now_ns, TERN_LOG_WARN, "bp", "dropped: %s", why);
 *   ... "dropped: bundle not an array (57 more since the last such line, 12 s ago)"
 *
 * Nothing is written between occurrences: a burst that ends is reported with
 * the next occurrence of its cause (the counters of the module say it
 * meanwhile). */

#define TERN_LOG_LIMIT_DEFAULT_NS 10000000000ull /**< 10 s */

/** The limit of one cause; zero-initialise it. */
typedef struct tern_log_limit {
    uint64_t interval_ns; /**< at most one line per interval (0: 10 s) */
    uint64_t last_ns;     /**< when its last line was written */
    uint64_t quiet;       /**< occurrences held back since then */
    uint64_t count;       /**< occurrences in all */
    int written;          /**< a line was written at least once */
} tern_log_limit;

/**
 * Counts one occurrence of the cause rl and writes its line if none was
 * written within rl's interval before now_ns (monotonic ns of the caller's
 * clock); a line written after some were held back ends in " (N more since
 * the last such line, T s ago)". Returns 1 if written, 0 if held back (or
 * level not enabled; the occurrence is counted either way).
 */
TERN_API int tern_log_limited(tern_log *lg, tern_log_limit *rl, uint64_t now_ns,
                              int level, const char *subsys, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

/** Causes told apart by a text (hashed): for lines whose cause is only known
 * as a string. A set holds TERN_LOG_CAUSES_MAX causes; the ones after share
 * one limit, so a stream of ever new texts cannot grow it. */
#define TERN_LOG_CAUSES_MAX 32

typedef struct tern_log_causes {
    uint64_t interval_ns; /**< for every cause of the set (0: 10 s) */
    size_t n;
    uint64_t key[TERN_LOG_CAUSES_MAX];
    tern_log_limit lim[TERN_LOG_CAUSES_MAX];
    tern_log_limit other; /**< every cause after the first TERN_LOG_CAUSES_MAX */
} tern_log_causes;

/** The limit of the cause named cause in set (added if new). Never NULL. */
TERN_API tern_log_limit *tern_log_cause(tern_log_causes *set, const char *cause);

#define TERN_LOG_AT(lg, level, subsys, ...)                                              \
    do {                                                                                 \
        if (tern_log_enabled((lg), (level)))                                             \
            tern_log_write((lg), (level), (subsys), __VA_ARGS__);                        \
    } while (0)
#define TERN_ERROR(lg, subsys, ...) TERN_LOG_AT(lg, TERN_LOG_ERROR, subsys, __VA_ARGS__)
#define TERN_WARN(lg, subsys, ...)  TERN_LOG_AT(lg, TERN_LOG_WARN, subsys, __VA_ARGS__)
#define TERN_INFO(lg, subsys, ...)  TERN_LOG_AT(lg, TERN_LOG_INFO, subsys, __VA_ARGS__)
#define TERN_DEBUG(lg, subsys, ...) TERN_LOG_AT(lg, TERN_LOG_DEBUG, subsys, __VA_ARGS__)

#ifdef __cplusplus
}
#endif
#endif
