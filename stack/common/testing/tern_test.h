/* Tern's C unit-test harness.
 *
 * Each TEST() runs in its own forked process with a timeout, so a crash or a
 * hang fails one test, not the run. A test also fails if it leaves more file
 * descriptors open than it found (handles leak), or, under LeakSanitizer, if
 * it leaks memory. Output is TAP; the last line is "# tests N pass P fail F".
 *
 *   TEST(cbor_uint_roundtrip) { CHECK_EQ_U64(x, 23); }
 *
 * Environment: TT_TIMEOUT=<s> (default 120), TT_NOFORK=1 (for gdb),
 * TT_SEED=<n> (tests that use tt_seed() print and reuse it).
 */
#ifndef TERN_TEST_H
#define TERN_TEST_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tern/base.h"

typedef void (*tt_fn)(void);
void tt_register(const char *name, tt_fn fn);
void tt_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));
/** A per-run random seed (TT_SEED or time-based), printed once. */
uint64_t tt_seed(void);
/** A private temporary directory for this test (removed when the test ends). */
const char *tt_tmpdir(void);

#define TEST(name)                                                                       \
    static void tt_test_##name(void);                                                    \
    __attribute__((constructor)) static void tt_reg_##name(void)                         \
    {                                                                                    \
        tt_register(#name, tt_test_##name);                                              \
    }                                                                                    \
    static void tt_test_##name(void)

#define CHECK(cond)                                                                      \
    do {                                                                                 \
        if (!(cond))                                                                     \
            tt_fail(__FILE__, __LINE__, "CHECK(%s)", #cond);                             \
    } while (0)

#define CHECK_MSG(cond, ...)                                                             \
    do {                                                                                 \
        if (!(cond))                                                                     \
            tt_fail(__FILE__, __LINE__, __VA_ARGS__);                                    \
    } while (0)

#define CHECK_OK(expr)                                                                   \
    do {                                                                                 \
        int tt_rc_ = (expr);                                                             \
        if (tt_rc_ != 0)                                                                 \
            tt_fail(__FILE__, __LINE__, "%s returned %d (%s)", #expr, tt_rc_,            \
                    tern_strerror(tt_rc_));                                              \
    } while (0)

#define CHECK_RC(expr, want)                                                             \
    do {                                                                                 \
        int tt_rc_ = (expr), tt_w_ = (want);                                             \
        if (tt_rc_ != tt_w_)                                                             \
            tt_fail(__FILE__, __LINE__, "%s returned %d (%s), want %d (%s)", #expr,      \
                    tt_rc_, tern_strerror(tt_rc_), tt_w_, tern_strerror(tt_w_));         \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                               \
    do {                                                                                 \
        long long tt_a_ = (long long)(a), tt_b_ = (long long)(b);                        \
        if (tt_a_ != tt_b_)                                                              \
            tt_fail(__FILE__, __LINE__, "%s == %s: %lld != %lld", #a, #b, tt_a_, tt_b_); \
    } while (0)

#define CHECK_EQ_U64(a, b)                                                               \
    do {                                                                                 \
        uint64_t tt_a_ = (uint64_t)(a), tt_b_ = (uint64_t)(b);                           \
        if (tt_a_ != tt_b_)                                                              \
            tt_fail(__FILE__, __LINE__, "%s == %s: %" PRIu64 " != %" PRIu64, #a, #b,     \
                    tt_a_, tt_b_);                                                       \
    } while (0)

#define CHECK_EQ_STR(a, b)                                                               \
    do {                                                                                 \
        const char *tt_a_ = (a), *tt_b_ = (b);                                           \
        if (!tt_a_ || !tt_b_ || strcmp(tt_a_, tt_b_) != 0)                               \
            tt_fail(__FILE__, __LINE__, "%s == %s: \"%s\" != \"%s\"", #a, #b,            \
                    tt_a_ ? tt_a_ : "(null)", tt_b_ ? tt_b_ : "(null)");                 \
    } while (0)

#define CHECK_EQ_MEM(a, b, n)                                                            \
    do {                                                                                 \
        size_t tt_n_ = (n);                                                              \
        if (memcmp((a), (b), tt_n_) != 0)                                                \
            tt_fail(__FILE__, __LINE__, "%s == %s: %zu bytes differ", #a, #b, tt_n_);    \
    } while (0)

#endif
