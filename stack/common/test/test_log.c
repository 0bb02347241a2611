#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
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
