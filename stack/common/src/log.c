/* Logger: each line is formatted once and written with one write() per sink,
 * so lines from several threads or processes appending to one file never
 * interleave mid-line (O_APPEND). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "tern/clock.h"
#include "tern/log.h"

#define LOG_LINE_MAX 2048

struct tern_log {
    char name[64];
    int fd; /* log file, or -1 */
    int level;
    unsigned flags;
    const tern_clock *clk;
};

static const char *const level_names[] = {"ERROR", "WARN", "INFO", "DEBUG", "TRACE"};

TERN_API int tern_log_open(tern_log **out, const char *name, const char *path, int level,
                           unsigned flags)
{
    tern_log *lg = calloc(1, sizeof *lg);
    if (!lg)
        return -ENOMEM;
    snprintf(lg->name, sizeof lg->name, "%s", name ? name : "tern");
    lg->fd = -1;
    lg->level = level;
    lg->flags = flags;
    lg->clk = tern_clock_real();
    if (path) {
        do
            lg->fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        while (lg->fd < 0 && errno == EINTR);
        if (lg->fd < 0) {
            int rc = -errno;
            free(lg);
            return rc;
        }
    }
    *out = lg;
    return 0;
}

TERN_API void tern_log_close(tern_log *lg)
{
    if (!lg)
        return;
    if (lg->fd >= 0)
        close(lg->fd);
    free(lg);
}

TERN_API void tern_log_set_level(tern_log *lg, int level)
{
    lg->level = level;
}

TERN_API void tern_log_set_clock(tern_log *lg, const tern_clock *clk)
{
    lg->clk = clk ? clk : tern_clock_real();
}

TERN_API int tern_log_enabled(const tern_log *lg, int level)
{
    return level <= (lg ? lg->level : TERN_LOG_WARN);
}

TERN_API int tern_log_level_parse(const char *s)
{
    for (int i = 0; i < 5; i++)
        if (strcasecmp(s, level_names[i]) == 0)
            return i;
    if (strcasecmp(s, "warning") == 0)
        return TERN_LOG_WARN;
    if (s[0] >= '0' && s[0] <= '4' && s[1] == '\0')
        return s[0] - '0';
    return -1;
}

static void log_put(int fd, const char *buf, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, buf, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return; /* nowhere left to report a failing log */
        buf += w;
        n -= (size_t)w;
    }
}

TERN_API void tern_log_vwrite(tern_log *lg, int level, const char *subsys,
                              const char *fmt, va_list ap)
{
    char line[LOG_LINE_MAX];
    char ts[TERN_DTN_ISO_BUFSZ];
    if (level < 0)
        level = 0;
    if (level > TERN_LOG_TRACE)
        level = TERN_LOG_TRACE;
    tern_dtn_format_iso(tern_clock_dtn_ms(lg ? lg->clk : tern_clock_real()), ts,
                        sizeof ts);
    int n = snprintf(line, sizeof line, "%s %s %s %s: ", ts, lg ? lg->name : "tern",
                     level_names[level], subsys ? subsys : "-");
    if (n < 0)
        return;
    int m = vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof line - 1) {
        len = sizeof line - 1;
        memcpy(line + len - 3, "...", 3); /* say that the line was cut */
    }
    line[len++] = '\n';
    if (lg && lg->fd >= 0)
        log_put(lg->fd, line, len);
    if (!lg || (lg->flags & TERN_LOG_TO_STDERR))
        log_put(STDERR_FILENO, line, len);
}

TERN_API void tern_log_write(tern_log *lg, int level, const char *subsys, const char *fmt,
                             ...)
{
    va_list ap;
    va_start(ap, fmt);
    tern_log_vwrite(lg, level, subsys, fmt, ap);
    va_end(ap);
}

/* ---- rate-limited lines ----------------------------------------------------- */

TERN_API int tern_log_limited(tern_log *lg, tern_log_limit *rl, uint64_t now_ns,
                              int level, const char *subsys, const char *fmt, ...)
{
    uint64_t iv = rl->interval_ns ? rl->interval_ns : TERN_LOG_LIMIT_DEFAULT_NS;
    rl->count++;
    if (rl->written && now_ns - rl->last_ns < iv) {
        rl->quiet++;
        return 0;
    }
    if (!tern_log_enabled(lg, level)) {
        rl->quiet++;
        return 0;
    }
    char msg[LOG_LINE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (rl->quiet)
        tern_log_write(lg, level, subsys,
                       "%s (%llu more since the last such line, %llu s ago)", msg,
                       (unsigned long long)rl->quiet,
                       (unsigned long long)((now_ns - rl->last_ns) / 1000000000ull));
    else
        tern_log_write(lg, level, subsys, "%s", msg);
    rl->written = 1;
    rl->last_ns = now_ns;
    rl->quiet = 0;
    return 1;
}

TERN_API tern_log_limit *tern_log_cause(tern_log_causes *set, const char *cause)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)(cause ? cause : ""); *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    for (size_t i = 0; i < set->n; i++)
        if (set->key[i] == h)
            return &set->lim[i];
    tern_log_limit *l = &set->other;
    if (set->n < TERN_LOG_CAUSES_MAX) {
        set->key[set->n] = h;
        l = &set->lim[set->n++];
        memset(l, 0, sizeof *l);
    }
    l->interval_ns = set->interval_ns;
    return l;
}
