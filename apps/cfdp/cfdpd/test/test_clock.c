/* cfdpd's clock: saved deadlines keep their meaning across a restart in
 * the same boot (the offset stays) and across a reboot (the clock goes on
 * from the saved time plus the downtime the wall clock tells, never back);
 * the saved clock survives a reopen of the store. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cfdpd.h"
#include "tern_test.h"

TEST(clock_resumes_in_the_same_boot_and_after_a_reboot)
{
    cfdpd_clock c = {.boot = "boot-a",
                     .off_ms = 5000,
                     .engine_ms = 9000005000,
                     .real_ms = 1700000000000};
    /* nothing saved: the monotonic clock as it is */
    CHECK_EQ_INT(cfdpd_clock_resume(NULL, "boot-a", 123, 1700000000000), 0);
    /* same boot: the same offset, whatever the clocks say (downtime counts) */
    CHECK_EQ_INT(cfdpd_clock_resume(&c, "boot-a", 9000060000, 1700000055000), 5000);
    /* a reboot 55 s later, monotonic near 0: the clock goes on from 9,000,005,000
     * plus the 55 s, so a deadline saved 10 s ahead is 45 s overdue, not days away */
    int64_t off = cfdpd_clock_resume(&c, "boot-b", 2000, 1700000055000);
    CHECK_EQ_U64((uint64_t)(2000 + off), 9000005000ull + 55000);
    /* a wall clock that went back: no downtime, never back in time */
    off = cfdpd_clock_resume(&c, "boot-b", 2000, 1600000000000);
    CHECK_EQ_U64((uint64_t)(2000 + off), 9000005000ull);
    /* a wall clock absurdly far ahead: no guess either */
    off = cfdpd_clock_resume(&c, "boot-b", 2000, UINT64_MAX);
    CHECK_EQ_U64((uint64_t)(2000 + off), 9000005000ull);
}

TEST(saved_clock_survives_a_reopen)
{
    char why[256];
    cfdpd_store *st;
    uint64_t next;
    CHECK_OK(cfdpd_store_open(tt_tmpdir(), 8, 0, &st, &next, why, sizeof why));
    cfdpd_clock c;
    CHECK_RC(cfdpd_store_get_clock(st, &c), -ENOENT);
    cfdpd_clock w = {.boot = "0b2c9c4e-5f7d-4d1e-9a51-1f1e2d3c4b5a",
                     .off_ms = -77,
                     .engine_ms = 123456,
                     .real_ms = 1700000000123};
    CHECK_OK(cfdpd_store_begin(st));
    CHECK_OK(cfdpd_store_set_clock(st, &w));
    CHECK_OK(cfdpd_store_commit(st, 1));
    w.engine_ms = 223456; /* replaced in place */
    CHECK_OK(cfdpd_store_begin(st));
    CHECK_OK(cfdpd_store_set_clock(st, &w));
    CHECK_OK(cfdpd_store_commit(st, 1));
    cfdpd_store_close(st);
    CHECK_OK(cfdpd_store_open(tt_tmpdir(), 8, 0, &st, &next, why, sizeof why));
    CHECK_OK(cfdpd_store_get_clock(st, &c));
    CHECK_EQ_STR(c.boot, w.boot);
    CHECK_EQ_INT(c.off_ms, -77);
    CHECK_EQ_U64(c.engine_ms, 223456);
    CHECK_EQ_U64(c.real_ms, 1700000000123ull);
    cfdpd_store_close(st);
}

TEST(boot_id_is_the_kernels_or_the_tests)
{
    char b[40];
    unsetenv("TERN_TEST_BOOT_ID");
    CHECK_OK(cfdpd_boot_id(b, sizeof b));
    CHECK_EQ_U64(strlen(b), 36); /* a UUID */
    setenv("TERN_TEST_BOOT_ID", "another-boot", 1);
    CHECK_OK(cfdpd_boot_id(b, sizeof b));
    CHECK_EQ_STR(b, "another-boot");
    unsetenv("TERN_TEST_BOOT_ID");
}
