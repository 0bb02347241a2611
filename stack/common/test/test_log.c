#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tern/clock.h"
#include "tern/log.h"
#include "tern_test.h"

static size_t slurp(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY);
    CHECK(fd >= 0);
    ssize_t n = read(fd, buf, cap - 1);
    close(fd);
    CHECK(n >= 0);
    buf[n] = '\0';
    return (size_t)n;
}

TEST(log_file_levels_and_virtual_time)
{
    char path[512], buf[8192];
    snprintf(path, sizeof path, "%s/node.log", tt_tmpdir());
    tern_log *lg;
    tern_clock *vc;
    CHECK_OK(tern_log_open(&lg, "node7", path, TERN_LOG_INFO, 0));
    /* 2026-11-30T00:00:00Z is 849,312,000 s after the DTN epoch. */
    CHECK_OK(tern_clock_virtual_new(UINT64_C(849312000000), &vc));
    tern_log_set_clock(lg, vc);
    TERN_INFO(lg, "ltp", "span %d up", 25);
    TERN_DEBUG(lg, "ltp", "not written at INFO");
    CHECK_OK(tern_clock_advance(vc, 1500 * TERN_NS_PER_MS));
    TERN_ERROR(lg, "bp", "bundle %s dropped: %s", "ipn:1.1", "malformed");
    CHECK(tern_log_enabled(lg, TERN_LOG_WARN));
    CHECK(!tern_log_enabled(lg, TERN_LOG_DEBUG));
    tern_log_set_level(lg, TERN_LOG_DEBUG);
    TERN_DEBUG(lg, "sdr", "now written");
    slurp(path, buf, sizeof buf);
    CHECK_EQ_STR(buf, "2026-11-30T00:00:00.000Z node7 INFO ltp: span 25 up\n"
                      "2026-11-30T00:00:01.500Z node7 ERROR bp: bundle ipn:1.1 dropped: "
                      "malformed\n"
                      "2026-11-30T00:00:01.500Z node7 DEBUG sdr: now written\n");
    tern_log_close(lg);
    tern_clock_free(vc);
}

TEST(log_long_line_is_cut_and_marked)
{
    char path[512];
    static char buf[8192];
    snprintf(path, sizeof path, "%s/long.log", tt_tmpdir());
    tern_log *lg;
    CHECK_OK(tern_log_open(&lg, "n", path, TERN_LOG_INFO, 0));
    char *big = malloc(5000);
    CHECK(big);
    memset(big, 'y', 4999);
    big[4999] = '\0';
    TERN_WARN(lg, "x", "%s", big);
    size_t n = slurp(path, buf, sizeof buf);
    CHECK_EQ_INT(n, 2048);
    CHECK(memcmp(buf + n - 4, "...\n", 4) == 0);
    free(big);
    tern_log_close(lg);
}

TEST(log_open_failure_and_level_parse)
{
    tern_log *lg = NULL;
    CHECK_RC(tern_log_open(&lg, "n", "/nonexistent-dir/x.log", TERN_LOG_INFO, 0),
             -ENOENT);
    CHECK_EQ_INT(tern_log_level_parse("warn"), TERN_LOG_WARN);
    CHECK_EQ_INT(tern_log_level_parse("DEBUG"), TERN_LOG_DEBUG);
    CHECK_EQ_INT(tern_log_level_parse("3"), 3);
    CHECK_EQ_INT(tern_log_level_parse("loud"), -1);
    CHECK(tern_log_enabled(NULL, TERN_LOG_ERROR));
    CHECK(!tern_log_enabled(NULL, TERN_LOG_INFO));
}

static size_t count_lines(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

TEST(log_limited_once_per_interval_with_a_count)
{
    char path[512];
    static char buf[16384];
    snprintf(path, sizeof path, "%s/lim.log", tt_tmpdir());
    tern_log *lg;
    tern_clock *vc;
    CHECK_OK(tern_log_open(&lg, "n", path, TERN_LOG_INFO, 0));
    CHECK_OK(tern_clock_virtual_new(UINT64_C(849312000000), &vc));
    tern_log_set_clock(lg, vc);
    tern_log_limit lim = {0}, other = {0};
    int written = 0;
    /* 1,000 garbage connections in 5 s: one line */
    for (int i = 0; i < 1000; i++) {
        written += tern_log_limited(lg, &lim, tern_clock_now_ns(vc), TERN_LOG_WARN, "bp",
                                    "dropping peer %d: garbage", i);
        CHECK_OK(tern_clock_advance(vc, 5 * TERN_NS_PER_MS));
    }
    CHECK_EQ_INT(written, 1);
    /* another cause has its own limit */
    CHECK_EQ_INT(
        tern_log_limited(lg, &other, tern_clock_now_ns(vc), TERN_LOG_WARN, "bp", "other"),
        1);
    /* 7 s later (12 s after the first line): the next one says how many */
    CHECK_OK(tern_clock_advance(vc, 7000 * TERN_NS_PER_MS));
    CHECK_EQ_INT(tern_log_limited(lg, &lim, tern_clock_now_ns(vc), TERN_LOG_WARN, "bp",
                                  "dropping peer %d: garbage", 1000),
                 1);
    CHECK_EQ_U64(lim.count, 1001);
    CHECK_EQ_U64(lim.quiet, 0);
    /* below the level: counted, not written */
    tern_log_limit dbg = {0};
    CHECK_EQ_INT(
        tern_log_limited(lg, &dbg, tern_clock_now_ns(vc), TERN_LOG_DEBUG, "bp", "quiet"),
        0);
    CHECK_EQ_U64(dbg.count, 1);
    slurp(path, buf, sizeof buf);
    CHECK_EQ_INT(count_lines(buf), 3);
    CHECK(strstr(buf, "WARN bp: dropping peer 0: garbage\n"));
    CHECK(strstr(buf,
                 "WARN bp: dropping peer 1000: garbage (999 more since the last such "
                 "line, 12 s ago)\n"));
    tern_log_close(lg);
    tern_clock_free(vc);
}

TEST(log_causes_bounded)
{
    tern_log_causes set = {.interval_ns = 1000};
    tern_log_limit *a = tern_log_cause(&set, "no contact header");
    CHECK(a == tern_log_cause(&set, "no contact header"));
    CHECK(a != tern_log_cause(&set, "unknown message type"));
    CHECK_EQ_U64(a->interval_ns, 1000);
    char text[32];
    for (int i = 0; i < 100; i++) {
        snprintf(text, sizeof text, "node ID %d refused", i);
        tern_log_limit *l = tern_log_cause(&set, text);
        CHECK(l != NULL);
        if (i >= TERN_LOG_CAUSES_MAX)
            CHECK(l == &set.other); /* an attacker's ever new texts share one limit */
    }
    CHECK_EQ_U64(set.n, TERN_LOG_CAUSES_MAX);
    CHECK(a == tern_log_cause(&set, "no contact header"));
}
