#include <errno.h>
#include <time.h>

#include "tern/clock.h"
#include "tern_test.h"

/* DTN ms worked out by hand from day counts (see comments), not by the code
 * under test. */
static const struct {
    const char *iso;
    uint64_t dtn_ms;
} known[] = {
    {"2000-01-01T00:00:00.000Z", 0},
    /* Jan 31 + Feb 29 (2000 is a leap year: divisible by 400) = 60 days. */
    {"2000-03-01T00:00:00.000Z", UINT64_C(60) * 86400000},
    /* Last ms of 2000-02-29: 59 days + 86,399,999 ms. */
    {"2000-02-29T23:59:59.999Z", UINT64_C(59) * 86400000 + 86399999},
    /* 366 days. */
    {"2001-01-01T00:00:00.000Z", UINT64_C(366) * 86400000},
    /* 24 years with 6 leap days (2000..2020) = 8766 days, + 31 + 28 = 8825
     * days, + 12:34:56.789 = 45,296,789 ms. */
    {"2024-02-29T12:34:56.789Z", UINT64_C(8825) * 86400000 + 45296789},
    /* Unix 2^31 s: (2147483648 - 946684800) s. */
    {"2038-01-19T03:14:08.000Z", UINT64_C(1200798848000)},
    /* 2100 is not a leap year: 36500 + 25 leap days (2000..2096) + 31 + 28. */
    {"2100-03-01T00:00:00.000Z", UINT64_C(36584) * 86400000},
    /* 8000 years = 20 Gregorian cycles of 146,097 days, minus 1 ms. */
    {"9999-12-31T23:59:59.999Z", UINT64_C(20) * 146097 * 86400000 - 1},
};

TEST(dtn_epoch_is_2000)
{
    int64_t unix_ms;
    uint64_t dtn;
    char buf[TERN_DTN_ISO_BUFSZ];

    CHECK_EQ_INT(TERN_DTN_EPOCH_UNIX_S, 946684800);
    CHECK_OK(tern_dtn_ms_to_unix_ms(0, &unix_ms));
    CHECK_EQ_INT(unix_ms, INT64_C(946684800000));
    CHECK_OK(tern_dtn_ms_from_unix_ms(INT64_C(946684800000), &dtn));
    CHECK_EQ_U64(dtn, 0);
    CHECK_OK(tern_dtn_format_iso(0, buf, sizeof buf));
    CHECK_EQ_STR(buf, "2000-01-01T00:00:00.000Z");
}

TEST(dtn_known_dates)
{
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        char buf[TERN_DTN_ISO_BUFSZ];
        int64_t unix_ms;
        uint64_t back;
        struct timespec ts;

        CHECK_OK(tern_dtn_format_iso(known[i].dtn_ms, buf, sizeof buf));
        CHECK_EQ_STR(buf, known[i].iso);
        CHECK_OK(tern_dtn_ms_to_unix_ms(known[i].dtn_ms, &unix_ms));
        CHECK_EQ_INT(unix_ms, (int64_t)known[i].dtn_ms + INT64_C(946684800000));
        CHECK_OK(tern_dtn_ms_from_unix_ms(unix_ms, &back));
        CHECK_EQ_U64(back, known[i].dtn_ms);
        CHECK_OK(tern_dtn_ms_to_timespec(known[i].dtn_ms, &ts));
        CHECK_EQ_INT(ts.tv_sec, unix_ms / 1000);
        CHECK_EQ_INT(ts.tv_nsec, (unix_ms % 1000) * 1000000);
        CHECK_OK(tern_dtn_ms_from_timespec(&ts, &back));
        CHECK_EQ_U64(back, known[i].dtn_ms);
    }
}

TEST(dtn_before_2000_and_overflow_rejected)
{
    uint64_t dtn = 77;
    int64_t unix_ms = 77;
    struct timespec ts = {.tv_sec = 946684799, .tv_nsec = 999999999};

    CHECK_RC(tern_dtn_ms_from_unix_ms(INT64_C(946684799999), &dtn), TERN_EOVERFLOW);
    CHECK_RC(tern_dtn_ms_from_unix_ms(-1, &dtn), TERN_EOVERFLOW);
    CHECK_RC(tern_dtn_ms_from_timespec(&ts, &dtn), TERN_EOVERFLOW);
    CHECK_EQ_U64(dtn, 77);
    CHECK_RC(tern_dtn_ms_to_unix_ms(UINT64_MAX, &unix_ms), TERN_EOVERFLOW);
    CHECK_EQ_INT(unix_ms, 77);
    /* The last DTN time that fits a signed 64-bit Unix ms. */
    CHECK_OK(
        tern_dtn_ms_to_unix_ms((uint64_t)(INT64_MAX - INT64_C(946684800000)), &unix_ms));
    CHECK_EQ_INT(unix_ms, INT64_MAX);
    ts.tv_sec = 946684800;
    ts.tv_nsec = 1000000000L;
    CHECK_RC(tern_dtn_ms_from_timespec(&ts, &dtn), -EINVAL);
}

TEST(dtn_timespec_rounds_down_to_ms)
{
    struct timespec ts = {.tv_sec = 946684800 + 5, .tv_nsec = 999999};
    uint64_t dtn;

    CHECK_OK(tern_dtn_ms_from_timespec(&ts, &dtn));
    CHECK_EQ_U64(dtn, 5000);
    ts.tv_nsec = 1000000;
    CHECK_OK(tern_dtn_ms_from_timespec(&ts, &dtn));
    CHECK_EQ_U64(dtn, 5001);
}

TEST(dtn_format_buffer_limits)
{
    char buf[TERN_DTN_ISO_BUFSZ];
    char small[24]; /* one short of "2000-01-01T00:00:00.000Z" + NUL */

    CHECK_RC(tern_dtn_format_iso(0, small, sizeof small), TERN_ENOSPACE);
    CHECK_EQ_STR(small, "");
    CHECK_RC(tern_dtn_format_iso(0, NULL, 0), TERN_ENOSPACE);
    char exact[25];
    CHECK_OK(tern_dtn_format_iso(0, exact, sizeof exact));
    CHECK_EQ_STR(exact, "2000-01-01T00:00:00.000Z");
    /* The largest DTN time still fits the documented buffer size. */
    CHECK_OK(tern_dtn_format_iso(UINT64_MAX, buf, sizeof buf));
    CHECK_MSG(strlen(buf) > 24 && buf[strlen(buf) - 1] == 'Z', "got %s", buf);
    /* Year 10000 widens the year field. */
    CHECK_OK(tern_dtn_format_iso(UINT64_C(20) * 146097 * 86400000, buf, sizeof buf));
    CHECK_EQ_STR(buf, "10000-01-01T00:00:00.000Z");
}

/* An independent judge for everything between the hand-picked dates. */
TEST(dtn_format_matches_gmtime)
{
    uint64_t x = tt_seed() | 1;

    for (int i = 0; i < 100000; i++) {
        char buf[TERN_DTN_ISO_BUFSZ], want[64];
        struct tm tm;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        uint64_t dtn = x % UINT64_C(252455616000000); /* up to year 9999 */
        time_t s = (time_t)(dtn / 1000) + 946684800;
        CHECK(gmtime_r(&s, &tm) != NULL);
        snprintf(want, sizeof want, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
                 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                 tm.tm_sec, (int)(dtn % 1000));
        CHECK_OK(tern_dtn_format_iso(dtn, buf, sizeof buf));
        CHECK_EQ_STR(buf, want);
    }
}

TEST(real_clock_tracks_host_clocks)
{
    tern_clock *c = tern_clock_real();
    struct timespec a, b;

    CHECK(c != NULL);
    CHECK(c == tern_clock_real());
    CHECK_EQ_INT(tern_clock_is_virtual(c), 0);

    clock_gettime(CLOCK_MONOTONIC, &a);
    uint64_t now = tern_clock_now_ns(c);
    clock_gettime(CLOCK_MONOTONIC, &b);
    CHECK((uint64_t)a.tv_sec * 1000000000u + (uint64_t)a.tv_nsec <= now);
    CHECK(now <= (uint64_t)b.tv_sec * 1000000000u + (uint64_t)b.tv_nsec);
    CHECK(tern_clock_now_ns(c) >= now);

    clock_gettime(CLOCK_REALTIME, &a);
    uint64_t dtn = tern_clock_dtn_ms(c);
    clock_gettime(CLOCK_REALTIME, &b);
    uint64_t lo = ((uint64_t)a.tv_sec - 946684800) * 1000 + (uint64_t)a.tv_nsec / 1000000;
    uint64_t hi = ((uint64_t)b.tv_sec - 946684800) * 1000 + (uint64_t)b.tv_nsec / 1000000;
    CHECK_MSG(lo <= dtn && dtn <= hi, "dtn %" PRIu64 " not in [%" PRIu64 ", %" PRIu64 "]",
              dtn, lo, hi);

    /* The real clock cannot be moved or freed. */
    CHECK_RC(tern_clock_advance(c, 1), -EINVAL);
    CHECK_RC(tern_clock_set_ns(c, UINT64_MAX), -EINVAL);
    tern_clock_free(c);
    tern_clock_free(NULL);
    CHECK(tern_clock_now_ns(tern_clock_real()) >= now);
}

TEST(virtual_clock_moves_only_when_told)
{
    /* 2024-02-29T12:34:56.789Z */
    const uint64_t start = UINT64_C(8825) * 86400000 + 45296789;
    tern_clock *c;
    char buf[TERN_DTN_ISO_BUFSZ];

    CHECK_OK(tern_clock_virtual_new(start, &c));
    CHECK_EQ_INT(tern_clock_is_virtual(c), 1);
    CHECK_EQ_U64(tern_clock_now_ns(c), 0);
    CHECK_EQ_U64(tern_clock_dtn_ms(c), start);
    struct timespec nap = {0, 2000000};
    nanosleep(&nap, NULL);
    CHECK_EQ_U64(tern_clock_now_ns(c), 0);

    /* Sub-millisecond steps accumulate; DTN time rounds down. */
    CHECK_OK(tern_clock_advance(c, 999999));
    CHECK_EQ_U64(tern_clock_dtn_ms(c), start);
    CHECK_OK(tern_clock_advance(c, 1));
    CHECK_EQ_U64(tern_clock_now_ns(c), 1000000);
    CHECK_EQ_U64(tern_clock_dtn_ms(c), start + 1);

    CHECK_OK(tern_clock_set_ns(c, UINT64_C(3600) * TERN_NS_PER_S));
    CHECK_EQ_U64(tern_clock_dtn_ms(c), start + 3600000);
    CHECK_OK(tern_dtn_format_iso(tern_clock_dtn_ms(c), buf, sizeof buf));
    CHECK_EQ_STR(buf, "2024-02-29T13:34:56.789Z");

    /* Never backwards; setting the same time is fine; errors change nothing. */
    CHECK_RC(tern_clock_set_ns(c, UINT64_C(3600) * TERN_NS_PER_S - 1), TERN_ESTATE);
    CHECK_OK(tern_clock_set_ns(c, UINT64_C(3600) * TERN_NS_PER_S));
    CHECK_OK(tern_clock_advance(c, 0));
    CHECK_RC(tern_clock_advance(c, UINT64_MAX), TERN_EOVERFLOW);
    CHECK_EQ_U64(tern_clock_now_ns(c), UINT64_C(3600) * TERN_NS_PER_S);
    tern_clock_free(c);

    /* DTN time must not wrap either. */
    CHECK_OK(tern_clock_virtual_new(UINT64_MAX - 5, &c));
    CHECK_OK(tern_clock_advance(c, 5 * TERN_NS_PER_MS));
    CHECK_EQ_U64(tern_clock_dtn_ms(c), UINT64_MAX);
    CHECK_RC(tern_clock_advance(c, TERN_NS_PER_MS), TERN_EOVERFLOW);
    tern_clock_free(c);
}

TEST(virtual_clocks_are_independent)
{
    tern_clock *a, *b;

    CHECK_OK(tern_clock_virtual_new(1000, &a));
    CHECK_OK(tern_clock_virtual_new(2000, &b));
    CHECK_OK(tern_clock_advance(a, 7 * TERN_NS_PER_S));
    CHECK_EQ_U64(tern_clock_now_ns(a), 7 * TERN_NS_PER_S);
    CHECK_EQ_U64(tern_clock_now_ns(b), 0);
    CHECK_EQ_U64(tern_clock_dtn_ms(a), 8000);
    CHECK_EQ_U64(tern_clock_dtn_ms(b), 2000);
    CHECK_RC(tern_clock_virtual_new(0, NULL), -EINVAL);
    tern_clock_free(a);
    tern_clock_free(b);
}
