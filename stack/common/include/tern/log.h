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
