#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "tern/ports.h"
#include "tern_test.h"

TEST(ports_publish_replace_lookup)
{
    const char *d = tt_tmpdir();
    unsigned p = 0;
    CHECK_RC(tern_ports_lookup(d, "ltp", "udp", &p), TERN_ENOTFOUND);
    CHECK_OK(tern_ports_publish(d, "ltp", "udp", 40113));
    CHECK_OK(tern_ports_publish(d, "tcpcl", "tcp", 4556));
    CHECK_OK(tern_ports_publish(d, "ltp", "udp", 40114));
    CHECK_OK(tern_ports_lookup(d, "ltp", "udp", &p));
    CHECK_EQ_INT(p, 40114);
    CHECK_OK(tern_ports_lookup(d, "tcpcl", "tcp", &p));
    CHECK_EQ_INT(p, 4556);
    CHECK_RC(tern_ports_lookup(d, "tcpcl", "udp", &p), TERN_ENOTFOUND);

    char path[512], buf[256];
    snprintf(path, sizeof path, "%s/ports", d);
    FILE *f = fopen(path, "r");
    CHECK(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    CHECK_EQ_STR(buf, "tcpcl tcp 4556\nltp udp 40114\n");
}

TEST(ports_rejects_bad_words)
{
    const char *d = tt_tmpdir();
    CHECK_RC(tern_ports_publish(d, "two words", "udp", 1), -EINVAL);
    CHECK_RC(tern_ports_publish(d, "x", "", 1), -EINVAL);
    CHECK_RC(tern_ports_publish(d, "x", "udp", 70000), -EINVAL);
    CHECK_RC(tern_ports_publish("/nonexistent-dir", "x", "udp", 1), -ENOENT);
}

TEST(ports_withdraw)
{
    const char *d = tt_tmpdir();
    unsigned p = 0;
    char path[512];
    snprintf(path, sizeof path, "%s/ports", d);
    CHECK_OK(tern_ports_withdraw(d, "ltp", "udp")); /* no file: nothing to do */
    CHECK_OK(tern_ports_publish(d, "ltp", "udp", 40113));
    CHECK_OK(tern_ports_publish(d, "bp-tcp", "tcp", 4556));
    CHECK_OK(tern_ports_withdraw(d, "ltp", "udp"));
    CHECK_RC(tern_ports_lookup(d, "ltp", "udp", &p), TERN_ENOTFOUND);
    CHECK_OK(tern_ports_lookup(d, "bp-tcp", "tcp", &p));
    CHECK_EQ_INT(p, 4556);
    CHECK_OK(tern_ports_withdraw(d, "ltp", "udp")); /* not there: nothing to do */
    CHECK_OK(tern_ports_withdraw(d, "bp-tcp", "tcp"));
    CHECK_MSG(access(path, F_OK) != 0, "an empty ports file stays");
    CHECK_RC(tern_ports_withdraw(d, "two words", "udp"), -EINVAL);
}
