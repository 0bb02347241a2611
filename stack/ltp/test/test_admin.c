#include <stdio.h>

#include "ltp_admin.h"
#include "tern_test.h"

/* The ltpadmin section of the three-node example in ION's Deployment Guide,
 * addresses moved to 127.0.0.1. */
static const char guide[] =
    "## begin ltpadmin\n"
    "1  32\n"
    "\n"
    "a  span   25  1  1  1400  1400  1  'udplso 127.0.0.1:1113 1000000000'\n"
    "a  span  101  1  1  1400  1400  1  'udplso 127.0.0.1:1114 1000000000'\n"
    "a  span    1  1  1  1400  1400  1  'udplso 127.0.0.1:1115 1000000000'\n"
    "\n"
    "s  'udplsi 127.0.0.1:1115'\n"
    "m maxrepairrounds 8\n"
    "m span 101 maxrepairrounds 3\n"
    "m screening n\n"
    "## end ltpadmin\n";

static int apply_all(ltp_admin *a, const char *text, char *last, size_t len,
                     int *warnings)
{
    tern_rc *rc;
    int r = tern_rc_parse(&rc, "node1.rc", text, strlen(text), "ltpadmin");
    if (r)
        return r;
    *warnings = 0;
    for (size_t i = 0; i < tern_rc_count(rc); i++) {
        r = ltp_admin_apply(a, tern_rc_at(rc, i), last, len);
        if (r == LTP_ADMIN_IGNORED)
            (*warnings)++;
        else if (r)
            break;
        r = 0;
    }
    tern_rc_free(rc);
    return r;
}

TEST(ltp_admin_reads_the_deployment_guide_example)
{
    ltp_admin a;
    char msg[2048];
    int warn;
    ltp_admin_init(&a);
    CHECK_OK(apply_all(&a, guide, msg, sizeof msg, &warn));
    CHECK_EQ_INT(warn, 1);
    CHECK_EQ_STR(msg, "node1.rc:11: 'm screening' is accepted but has no effect in Tern");
    CHECK_EQ_INT(a.est_max_export, 32);
    CHECK_EQ_INT(a.nspans, 3);
    CHECK_EQ_U64(a.spans[0].cfg.peer, 25);
    CHECK_EQ_INT(a.spans[0].cfg.max_seg, 1400);
    CHECK_EQ_INT(a.spans[0].cfg.agg_size, 1400);
    CHECK_EQ_INT(a.spans[0].cfg.agg_ms, 1000);
    CHECK_EQ_INT(a.spans[0].cfg.qtime_ms, 1000);
    CHECK_EQ_STR(a.spans[1].lso, "udplso 127.0.0.1:1114 1000000000");
    CHECK_EQ_INT(a.spans[1].cfg.max_rounds, 3);
    CHECK_EQ_STR(a.lsi, "udplsi 127.0.0.1:1115");
    /* 8 rounds x 6 tries x (0 ms light time + 1 s own + 1 s peer queuing). */
    CHECK_EQ_U64(ltp_admin_budget_ms(&a.engine, &a.spans[0].cfg), 96000);
    CHECK_EQ_U64(ltp_admin_budget_ms(&a.engine, &a.spans[1].cfg), 36000);
    int n = ltp_admin_list_spans(&a, 0, msg, sizeof msg);
    CHECK(n > 0 && (size_t)n < sizeof msg);
    CHECK_MSG(strstr(msg, "span 25: max export 1, max import 1, segment 1400 B") != NULL,
              "%s", msg);
    CHECK_MSG(strstr(msg, "worst case to deliver or abandon a 64 KiB block: 96.000 s") !=
                  NULL,
              "%s", msg);
    CHECK_MSG(strstr(msg, "max repair rounds 3 (this span)") != NULL, "%s", msg);
    CHECK_MSG(strstr(msg, "36.000 s") != NULL, "%s", msg);
    ltp_admin_free(&a);
}

static void check_error(const char *line, const char *want)
{
    ltp_admin a;
    char msg[1024], text[512];
    int warn;
    ltp_admin_init(&a);
    snprintf(text, sizeof text, "1 10\n%s\n", line);
    CHECK_RC(apply_all(&a, text, msg, sizeof msg, &warn), TERN_ESYNTAX);
    CHECK_EQ_STR(msg, want);
    ltp_admin_free(&a);
}

TEST(ltp_admin_errors_name_file_line_and_expectation)
{
    check_error(
        "a span 25 1 1 1400 1400 1",
        "node1.rc:2: 'a span' takes 7 or 8 arguments, got 6; expected 'a span <peer "
        "engine> <max export sessions> <max import sessions> <max segment size> "
        "<aggregation size threshold> <aggregation time limit> '<LSO command>' "
        "[queuing latency]'");
    check_error("a span 25 1 1 99999 1400 1 'udplso 127.0.0.1:1113'",
                "node1.rc:2: max segment size '99999': expected bytes from 64 to 65536");
    check_error(
        "a span 25 1 1 1400 1400 1 'tcplso x'",
        "node1.rc:2: LSO command 'tcplso x': expected 'udplso <host>:<port> [<rate "
        "bits/s>]' (Tern's link service)");
    check_error("m maxrepairrounds 300",
                "node1.rc:2: expected 'm maxrepairrounds <1..256>'");
    check_error("m span 7 maxrepairrounds 2",
                "node1.rc:2: no span for engine 7; expected 'a span' before 'm span'");
    check_error("c span 25 1 1 1400 1400 1 'udplso 127.0.0.1:1113'",
                "node1.rc:2: no span for engine 25 to change; expected 'a span' first");
    check_error("z",
                "node1.rc:2: unknown ltpadmin command 'z'; expected 1, a span, c span, "
                "d span, s, m, l span or i span");

    ltp_admin a;
    char msg[256];
    int warn;
    ltp_admin_init(&a);
    CHECK_RC(apply_all(&a, "a span 1 1 1 1400 1400 1 'udplso 127.0.0.1:1'\n", msg,
                       sizeof msg, &warn),
             TERN_ESYNTAX);
    CHECK_EQ_STR(
        msg, "node1.rc:1: 'a' before '1'; expected '1 <est_max_export_sessions>' first");
    ltp_admin_free(&a);
}

/* Seconds may carry fractions (Tern's extension for LAN spans); anything
 * that is not a number of seconds is refused naming the field. */
TEST(ltp_admin_fractional_seconds)
{
    ltp_admin a;
    char msg[2048];
    int warn;
    ltp_admin_init(&a);
    CHECK_OK(apply_all(&a,
                       "1 8\nm ownqtime 0.05\n"
                       "a span 2 4 4 1400 64000 0.25 'udplso 127.0.0.1:1113' 0.02\n",
                       msg, sizeof msg, &warn));
    CHECK_EQ_INT(a.engine.own_qtime_ms, 50);
    CHECK_EQ_INT(a.spans[0].cfg.agg_ms, 250);
    CHECK_EQ_INT(a.spans[0].cfg.qtime_ms, 20);
    ltp_admin_free(&a);
    ltp_admin_init(&a);
    CHECK(apply_all(&a, "1 8\nm ownqtime soon\n", msg, sizeof msg, &warn) != 0);
    CHECK_MSG(strstr(msg, "ownqtime"), "message: %s", msg);
    CHECK(apply_all(&a, "a span 2 4 4 1400 64000 -1 'udplso 127.0.0.1:1113'\n", msg,
                    sizeof msg, &warn) != 0);
    CHECK_MSG(strstr(msg, "aggregation time limit '-1'"), "message: %s", msg);
    ltp_admin_free(&a);
}

/* Session numbers are 32 bits by default (what ION 4.1.3 keeps); a span to a
 * peer that takes 64 bits says so. */
TEST(ltp_admin_span_session_bits)
{
    ltp_admin a;
    char msg[1024];
    int warn;
    ltp_admin_init(&a);
    CHECK_OK(apply_all(&a,
                       "1 8\n"
                       "a span 2 1 1 1400 1400 1 'udplso 127.0.0.1:1113'\n"
                       "a span 3 1 1 1400 1400 1 'udplso 127.0.0.1:1114'\n"
                       "m span 3 sessionbits 64\n",
                       msg, sizeof msg, &warn));
    CHECK_EQ_INT(a.spans[0].cfg.session_bits, 0);
    CHECK_EQ_INT(a.spans[1].cfg.session_bits, 64);
    char out[4096];
    ltp_admin_list_spans(&a, 3, out, sizeof out);
    CHECK(strstr(out, "64-bit session numbers") != NULL);
    ltp_admin_list_spans(&a, 2, out, sizeof out);
    CHECK(strstr(out, "32-bit session numbers") != NULL);
    ltp_admin_free(&a);
    check_error("m span 25 sessionbits 48",
                "node1.rc:2: expected 'm span <engine> maxrepairrounds <1..256>' or 'm "
                "span <engine> sessionbits <32|64>'");
}
