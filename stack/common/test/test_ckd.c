#include "tern/ckd.h"
#include "tern_test.h"

TEST(ckd_add_and_mul_catch_wraps)
{
    uint64_t r;
    CHECK(!tern_ckd_add(&r, 1, 2) && r == 3);
    CHECK(!tern_ckd_add(&r, UINT64_MAX - 1, 1) && r == UINT64_MAX);
    CHECK(tern_ckd_add(&r, UINT64_MAX, 1));
    /* offset 2^63 - 1 plus length 10 fits 64 unsigned bits (the extent test
     * below is what refuses it); 2^64 - 6 plus 10 does not */
    CHECK(!tern_ckd_add(&r, INT64_MAX, 10));
    CHECK(tern_ckd_add(&r, UINT64_MAX - 5, 10));
    CHECK(!tern_ckd_mul(&r, 1ull << 31, 1ull << 32) && r == 1ull << 63);
    CHECK(tern_ckd_mul(&r, 1ull << 32, 1ull << 32));
    size_t z;
    CHECK(!tern_ckd_add_size(&z, 10, 20) && z == 30);
    CHECK(tern_ckd_add_size(&z, SIZE_MAX, 1));
    CHECK(tern_ckd_mul_size(&z, SIZE_MAX / 2 + 1, 2));
}

TEST(ckd_extent_ok_bounds_without_overflow)
{
    CHECK(tern_ckd_extent_ok(0, 0, 0));
    CHECK(tern_ckd_extent_ok(0, 100, 100));
    CHECK(!tern_ckd_extent_ok(1, 100, 100));
    CHECK(!tern_ckd_extent_ok(101, 0, 100));
    /* offset 2^63 - 1, length 10 in a session that may hold 1 MiB */
    CHECK(!tern_ckd_extent_ok(INT64_MAX, 10, 1u << 20));
    CHECK(!tern_ckd_extent_ok(10, UINT64_MAX, UINT64_MAX));
    CHECK(tern_ckd_extent_ok(UINT64_MAX, 0, UINT64_MAX));
}

TEST(ckd_grow_doubles_up_to_the_bound)
{
    CHECK_EQ_U64(tern_ckd_grow(65536, 1, 1u << 30), 65536);
    CHECK_EQ_U64(tern_ckd_grow(65536, 65537, 1u << 30), 131072);
    CHECK_EQ_U64(tern_ckd_grow(65536, 3u << 20, 1u << 30), 4u << 20);
    /* past the bound: refused, not wrapped to 0 and looped on */
    CHECK_EQ_U64(tern_ckd_grow(65536, (1u << 30) + 1, 1u << 30), 0);
    CHECK_EQ_U64(tern_ckd_grow(65536, (uint64_t)INT64_MAX + 10, UINT64_MAX),
                 (uint64_t)INT64_MAX + 10);
    CHECK_EQ_U64(tern_ckd_grow(65536, UINT64_MAX, UINT64_MAX), UINT64_MAX);
    CHECK_EQ_U64(tern_ckd_grow(3, 1000, 700), 0);
    CHECK_EQ_U64(tern_ckd_grow(3, 700, 700), 700);
    CHECK_EQ_U64(tern_ckd_grow(0, 1, 10), 0);
}
