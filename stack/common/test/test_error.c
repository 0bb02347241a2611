#include <errno.h>

#include "tern_test.h"

TEST(strerror_covers_every_library_code)
{
    for (int rc = TERN_E_FIRST; rc <= TERN_E_LAST; rc++) {
        const char *s = tern_strerror(rc);
        CHECK_MSG(s && strcmp(s, "unknown error") != 0, "code %d has no text", rc);
    }
}

TEST(strerror_system_and_unknown)
{
    CHECK_EQ_STR(tern_strerror(0), "success");
    CHECK_EQ_STR(tern_strerror(-ENOENT), "No such file or directory");
    CHECK_EQ_STR(tern_strerror(12345), "unknown error");
    CHECK_EQ_STR(tern_strerror(TERN_EPROFILE), "profile mismatch");
}

TEST(abi_version)
{
    CHECK_EQ_INT(tern_common_abi_version(), TERN_COMMON_ABI_VERSION);
}
