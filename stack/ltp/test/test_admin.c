#include <stdio.h>

#include "ltp_admin.h"
#include "tern/clock.h"
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
    CHECK_EQ_INT(a.nseats, 1);
    CHECK_EQ_STR(a.seats[0].lsi, "udplsi 127.0.0.1:1115");
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
        "node1.rc:2: 'a span' takes 7 or 8 arguments (9 or 10 in the older form with "
        "block sizes), got 6; expected 'a span <peer engine> <max export sessions> <max "
        "import sessions> <max segment size> "
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
                "d span, i span, l span, a seat, c seat, d seat, i seat, l seat, s or m");

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

/* A bad udplso address is refused on its line, as the link service would
 * read it, not later when the node starts; the span keeps its line. */
TEST(ltp_admin_lso_checked_on_its_line)
{
    check_error("a span 25 1 1 1400 1400 1 'udplso 127.0.0.1:99999'",
                "node1.rc:2: LSO command 'udplso 127.0.0.1:99999': udplso: bad port "
                "'99999' in '127.0.0.1:99999' (expected 1-65535)");
    check_error("a span 25 1 1 1400 1400 1 'udplso'",
                "node1.rc:2: LSO command 'udplso': udplso: missing address (expected "
                "'udplso {<host>|@}[:<port>] [<rate bits/s>] [<engine>]')");
    check_error("a span 25 1 1 1400 1400 1 'udplso 127.0.0.1:1113 fast'",
                "node1.rc:2: LSO command 'udplso 127.0.0.1:1113 fast': udplso: bad rate "
                "'fast' (expected bits per second, a whole number)");
    ltp_admin a;
    char msg[256];
    int warn;
    ltp_admin_init(&a);
    CHECK_OK(apply_all(&a, "1 1\n\na span 2 1 1 1400 1400 1 'udplso 127.0.0.1:1113'\n",
                       msg, sizeof msg, &warn));
    CHECK_EQ_STR(a.spans[0].at, "node1.rc:3");
    ltp_admin_free(&a);
}

/* An unknown command is named whole, and the nearest known one suggested. */
TEST(ltp_admin_unknown_commands_suggest_the_nearest)
{
    check_error("a spna 25 1 1 1400 1400 1 'udplso 127.0.0.1:1113'",
                "node1.rc:2: unknown ltpadmin command 'a spna' (did you mean 'a span'?); "
                "expected 1, a span, c span, d span, i span, l span, a seat, c seat, d "
                "seat, i seat, l seat, s or m");
    check_error("l sapn", "node1.rc:2: unknown ltpadmin command 'l sapn' (did you mean "
                          "'l span'?); expected 1, a span, c span, d span, i span, l "
                          "span, a seat, c seat, d seat, i seat, l seat, s or m");
    check_error("a seta 'udplsi 127.0.0.1:1113'",
                "node1.rc:2: unknown ltpadmin command 'a seta' (did you mean 'a seat'?); "
                "expected 1, a span, c span, d span, i span, l span, a seat, c seat, d "
                "seat, i seat, l seat, s or m");
    /* nothing near: no guess */
    check_error("a contact +1 +2 1 2 100",
                "node1.rc:2: unknown ltpadmin command 'a contact'; expected 1, a span, c "
                "span, d span, i span, l span, a seat, c seat, d seat, i seat, l seat, s "
                "or m");
    check_error("m maxretires 3",
                "node1.rc:2: unknown ltpadmin command 'm maxretires' (did you mean 'm "
                "maxretries'?); expected m maxrepairrounds, m span, m maxretries, m "
                "maxseglossrate, m ownqtime, m maxblocksize or m maximportbytes");
    check_error("m ownqtiem 1", "node1.rc:2: unknown ltpadmin command 'm ownqtiem' (did "
                                "you mean 'm ownqtime'?); expected m maxrepairrounds, m "
                                "span, m maxretries, m maxseglossrate, m ownqtime, m "
                                "maxblocksize or m maximportbytes");
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

/* ION 4.1's ltprc declares the induct side as a seat ('a seat' with the LSI
 * command) and starts with a bare 's'; 's' with an LSI is the older form
 * (ltprc(5): deprecated, the same as 'a seat' then 's'). ltpadmin also joins
 * an unquoted "udplsi host:port" (two words) into one command. */
static const char ion41[] = "1 32\n"
                            "a span 2 32 32 1400 10000 1 'udplso 127.0.0.1:1114'\n"
                            "a seat 'udplsi 127.0.0.1:1113'\n"
                            "a seat udplsi 127.0.0.1:1115\n"
                            "s\n";

TEST(ltp_admin_seats)
{
    ltp_admin a;
    char msg[2048];
    int warn;
    ltp_admin_init(&a);
    CHECK_OK(apply_all(&a, ion41, msg, sizeof msg, &warn));
    CHECK_EQ_INT(warn, 0);
    CHECK_EQ_INT(a.nspans, 1);
    CHECK_EQ_INT(a.nseats, 2);
    CHECK_EQ_STR(a.seats[0].lsi, "udplsi 127.0.0.1:1113");
    CHECK_EQ_STR(a.seats[0].file, "node1.rc");
    CHECK_EQ_INT(a.seats[0].line, 3);
    CHECK_EQ_STR(a.seats[1].lsi, "udplsi 127.0.0.1:1115");
    CHECK_EQ_INT(a.seats[1].line, 4);

    tern_rc_cmd l = {"x.rc", 9, "ltpadmin", 2, (char *[]){"l", "seat", NULL}};
    CHECK_OK(ltp_admin_apply(&a, &l, msg, sizeof msg));
    CHECK_EQ_STR(msg, "seat 'udplsi 127.0.0.1:1113' (node1.rc:3)\n"
                      "seat 'udplsi 127.0.0.1:1115' (node1.rc:4)\n");
    tern_rc_cmd i = {"x.rc", 10, "ltpadmin", 3,
                     (char *[]){"i", "seat", "udplsi  127.0.0.1:1115", NULL}};
    CHECK_OK(ltp_admin_apply(&a, &i, msg, sizeof msg));
    CHECK_EQ_STR(msg, "seat 'udplsi 127.0.0.1:1115' (node1.rc:4)\n");

    /* c seat: the seat named by its LSI command takes a new one, in place. */
    tern_rc_cmd ch = {
        "x.rc", 11, "ltpadmin", 4,
        (char *[]){"c", "seat", "udplsi 127.0.0.1:1113", "udplsi 0.0.0.0:1200", NULL}};
    CHECK_OK(ltp_admin_apply(&a, &ch, msg, sizeof msg));
    CHECK_EQ_STR(a.seats[0].lsi, "udplsi 0.0.0.0:1200");
    CHECK_EQ_STR(a.seats[0].file, "x.rc");
    CHECK_EQ_INT(a.seats[0].line, 11);

    /* d seat, either form; then the listing says there is none. */
    tern_rc_cmd d1 = {"x.rc", 12, "ltpadmin", 4,
                      (char *[]){"d", "seat", "udplsi", "127.0.0.1:1115", NULL}};
    CHECK_OK(ltp_admin_apply(&a, &d1, msg, sizeof msg));
    tern_rc_cmd d2 = {"x.rc", 13, "ltpadmin", 3,
                      (char *[]){"d", "seat", "udplsi 0.0.0.0:1200", NULL}};
    CHECK_OK(ltp_admin_apply(&a, &d2, msg, sizeof msg));
    CHECK_EQ_INT(a.nseats, 0);
    CHECK_OK(ltp_admin_apply(&a, &l, msg, sizeof msg));
    CHECK_EQ_STR(msg, "no seat\n");
    ltp_admin_free(&a);

    /* The deprecated 's' forms declare the seat too; 's' naming a seat that
     * is declared already only starts it, with a note (ION: "Duplicate LSI"). */
    ltp_admin_init(&a);
    CHECK_OK(apply_all(&a, "1 8\ns udplsi 127.0.0.1:1117\n", msg, sizeof msg, &warn));
    CHECK_EQ_INT(a.nseats, 1);
    CHECK_EQ_STR(a.seats[0].lsi, "udplsi 127.0.0.1:1117");
    ltp_admin_free(&a);
    ltp_admin_init(&a);
    CHECK_OK(apply_all(&a, "1 8\na seat 'udplsi @:1118'\ns 'udplsi @:1118'\n", msg,
                       sizeof msg, &warn));
    CHECK_EQ_INT(warn, 1);
    CHECK_EQ_STR(msg, "node1.rc:3: seat 'udplsi @:1118' is declared already "
                      "(node1.rc:2); 's' only starts it");
    CHECK_EQ_INT(a.nseats, 1);
    ltp_admin_free(&a);
}

TEST(ltp_admin_seat_errors)
{
    check_error("a seat",
                "node1.rc:2: 'a seat' takes one LSI command, got none; expected "
                "\"a seat '<LSI command>'\", e.g. a seat 'udplsi 127.0.0.1:1113'");
    check_error("a seat 'udplsi 127.0.0.1:1113' 'udplsi 127.0.0.1:1114' x",
                "node1.rc:2: 'a seat' takes one LSI command, got 3 words; expected "
                "\"a seat '<LSI command>'\", e.g. a seat 'udplsi 127.0.0.1:1113'");
    check_error("a seat 'tcplsi 127.0.0.1:1113'",
                "node1.rc:2: LSI command 'tcplsi 127.0.0.1:1113': expected 'udplsi "
                "{<host>|@}[:<port>]' (Tern's link service)");
    check_error("a seat 'udplsi 127.0.0.1:70000'",
                "node1.rc:2: LSI command 'udplsi 127.0.0.1:70000': udplsi: bad port "
                "'70000' in '127.0.0.1:70000' (expected 0-65535)");
    check_error("a seat udplsi",
                "node1.rc:2: LSI command 'udplsi': udplsi: missing address (expected "
                "'udplsi {<host>|@}[:<port>]')");
    check_error("d seat 'udplsi 127.0.0.1:1'",
                "node1.rc:2: no seat 'udplsi 127.0.0.1:1' to delete; expected one "
                "listed by 'l seat'");
    check_error("i seat 'udplsi 127.0.0.1:1'",
                "node1.rc:2: no seat 'udplsi 127.0.0.1:1'; expected one listed by 'l "
                "seat'");
    check_error("c seat 'udplsi 127.0.0.1:1' 'udplsi 127.0.0.1:2'",
                "node1.rc:2: no seat 'udplsi 127.0.0.1:1' to change; expected one "
                "listed by 'l seat'");
    check_error("c seat udplsi 127.0.0.1:1",
                "node1.rc:2: new LSI command '127.0.0.1:1': expected 'udplsi "
                "{<host>|@}[:<port>]' (Tern's link service); expected \"c seat '<LSI "
                "command>' '<new LSI command>'\"");
    check_error("l seat 'udplsi 127.0.0.1:1'", "node1.rc:2: expected 'l seat'");
    check_error("s 'udplsi 127.0.0.1:1' 'udplsi 127.0.0.1:2' x",
                "node1.rc:2: 's' takes at most one LSI command; expected 's' or "
                "\"s '<LSI command>'\"");

    ltp_admin a;
    char msg[512];
    int warn;
    ltp_admin_init(&a);
    CHECK_RC(apply_all(&a,
                       "1 8\na seat 'udplsi 127.0.0.1:1113'\n"
                       "a seat 'udplsi  127.0.0.1:1113'\n",
                       msg, sizeof msg, &warn),
             TERN_ESYNTAX);
    CHECK_EQ_STR(msg, "node1.rc:3: a seat 'udplsi 127.0.0.1:1113' exists already "
                      "(node1.rc:2); expected 'c seat' to change it");
    ltp_admin_free(&a);
}

/* ION 4.1.3's ltpadmin reads 'a span' and 'c span' in the form without
 * block sizes (7 or 8 arguments) and, for older configurations, with the
 * export and import block sizes after each session count (9 or 10), which
 * it ignores; a negative queuing latency means its absolute value plus
 * session purging. Most configurations in ION 4.1.3's own tests use the
 * older form, many with -1. */
TEST(ltp_admin_span_forms_of_ion_4_1_3)
{
    ltp_admin a;
    char msg[1024];
    int warn;
    ltp_admin_init(&a);
    CHECK_OK(
        apply_all(&a,
                  "1 10\n"
                  "a span 3 2 10000 5 20000 1000 10000 1 'udplso localhost:3113' -1\n"
                  "a span 4 2 100100 20 1000000 1200 100100 2 'udplso "
                  "localhost:4113'\n"
                  "a span 5 2 2 1200 100000 1 'udplso localhost:5113' -3\n"
                  "c span 4 7 8 1300 64000 3 'udplso localhost:4114' 2\n",
                  msg, sizeof msg, &warn));
    CHECK_EQ_INT(warn, 3);
    CHECK_EQ_INT(a.nspans, 3);
    const ltp_span_cfg *s3 = &a.spans[0].cfg, *s4 = &a.spans[1].cfg,
                       *s5 = &a.spans[2].cfg;
    CHECK_EQ_U64(s3->peer, 3);
    CHECK_EQ_INT(s3->max_export, 2);
    CHECK_EQ_INT(s3->max_import, 5);
    CHECK_EQ_INT(s3->max_seg, 1000);
    CHECK_EQ_INT(s3->agg_size, 10000);
    CHECK_EQ_INT(s3->agg_ms, 1000);
    CHECK_EQ_INT(s3->qtime_ms, 1000);
    CHECK_EQ_STR(a.spans[0].lso, "udplso localhost:3113");
    CHECK_EQ_INT(s4->max_export, 7);
    CHECK_EQ_INT(s4->max_import, 8);
    CHECK_EQ_INT(s4->max_seg, 1300);
    CHECK_EQ_INT(s4->agg_ms, 3000);
    CHECK_EQ_INT(s4->qtime_ms, 2000);
    CHECK_EQ_STR(a.spans[1].lso, "udplso localhost:4114");
    CHECK_EQ_INT(s5->qtime_ms, 3000);
    CHECK_EQ_STR(msg, "");
    ltp_admin_free(&a);

    /* Each departure from what Tern does is a warning naming the line. */
    ltp_admin_init(&a);
    CHECK_RC(
        apply_all(&a,
                  "1 10\n"
                  "a span 3 2 10000 5 20000 1000 10000 1 'udplso localhost:3113' -1\n",
                  msg, sizeof msg, &warn),
        0);
    CHECK_EQ_INT(warn, 1);
    CHECK_EQ_STR(msg, "node1.rc:2: span 3: the block sizes (10000, 20000) of this older "
                      "form are ignored, as ION 4 does; queuing latency -1: Tern takes "
                      "1 s and does not purge sessions at the end of a contact (ION's "
                      "meaning of the sign): they wait for the next contact");
    ltp_admin_free(&a);
    check_error("a span 3 2 big 5 20000 1000 10000 1 'udplso localhost:3113'",
                "node1.rc:2: max export block size 'big': expected a number of bytes");
    check_error("a span 3 2 10000 5 20000 1000 10000 1 'udplso localhost:3113' -1 x",
                "node1.rc:2: 'a span' takes 7 or 8 arguments (9 or 10 in the older form "
                "with block sizes), got 11; expected 'a span <peer engine> <max export "
                "sessions> <max import sessions> <max segment size> <aggregation size "
                "threshold> <aggregation time limit> '<LSO command>' [queuing "
                "latency]'");
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
                "node1.rc:2: expected 'm span <engine> sessionbits <32|64>'");
}

/* Issue 18 item 1: the largest block taken from a peer and what a span's
 * imports may hold, engine-wide and per span, in bytes with K, M or G. */
TEST(ltp_admin_max_block_and_import_bytes)
{
    ltp_admin a;
    char msg[1024];
    int warn;
    ltp_admin_init(&a);
    CHECK_OK(apply_all(&a,
                       "## begin ltpadmin\n1 8\n"
                       "a span 2 4 4 1400 1400 1 'udplso 127.0.0.1:1113'\n"
                       "a span 3 4 4 1400 1400 1 'udplso 127.0.0.1:1114'\n"
                       "m maxblocksize 64M\nm maximportbytes 1G\n"
                       "m span 3 maxblocksize 4096\nm span 3 maximportbytes 512k\n"
                       "## end ltpadmin\n",
                       msg, sizeof msg, &warn));
    CHECK_EQ_U64(a.engine.max_block, UINT64_C(64) << 20);
    CHECK_EQ_U64(a.engine.max_import_bytes, UINT64_C(1) << 30);
    CHECK_EQ_U64(a.spans[0].cfg.max_block, 0);
    CHECK_EQ_U64(a.spans[1].cfg.max_block, 4096);
    CHECK_EQ_U64(a.spans[1].cfg.max_import_bytes, 512 << 10);
    static const char *bad[] = {
        "m maxblocksize 0",        "m maxblocksize 12T",
        "m maxblocksize -1",       "m maximportbytes",
        "m span 3 maxblocksize x", "m maxblocksize 99999999999999999999G"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[256];
        snprintf(text, sizeof text, "## begin ltpadmin\n%s\n## end ltpadmin\n", bad[i]);
        CHECK_RC(apply_all(&a, text, msg, sizeof msg, &warn), TERN_ESYNTAX);
        CHECK_MSG(strstr(msg, "node1.rc:2: expected 'm ") != NULL, "%s: %s", bad[i], msg);
    }
    ltp_admin_free(&a);
}

static int no_send(void *ctx, uint64_t peer, const uint8_t *seg, size_t len)
{
    (void)ctx;
    (void)peer;
    (void)seg;
    (void)len;
    return 0;
}

/* Issue 18 item 15: 'l span' on a running node showed the host.rc's 0 ms
 * light time and 2 s timeout while the contact plan's range gave 10 s. The
 * live listing shows what the engine uses, and where each value came from:
 * the contact plan, the configuration, or the default. */
TEST(ltp_admin_live_listing_names_sources)
{
    ltp_admin a;
    char msg[8192];
    int warn;
    ltp_admin_init(&a);
    CHECK_OK(apply_all(&a, guide, msg, sizeof msg, &warn));
    CHECK_OK(apply_all(&a, "m maxblocksize 1M\nm span 1 maximportbytes 8M\n", msg,
                       sizeof msg, &warn));
    tern_clock *clk;
    tern_loop *loop;
    ltp_engine *e;
    CHECK_OK(tern_clock_virtual_new(UINT64_C(849312000000), &clk));
    CHECK_OK(tern_loop_new(clk, &loop));
    ltp_engine_cfg ec = a.engine;
    ec.engine_id = 9;
    ltp_host host = {.send = no_send};
    CHECK_OK(ltp_engine_new(loop, &ec, &host, NULL, &e));
    for (size_t i = 0; i < a.nspans; i++)
        CHECK_OK(ltp_span_add(e, &a.spans[i].cfg));
    /* the contact plan's range to 25: 10 s (what the node does) */
    CHECK_OK(ltp_span_set_owlt(e, 25, 10000));
    CHECK_OK(ltp_span_link(e, 1, 0));
    int n = ltp_admin_list_spans_live(&a, e, 0, msg, sizeof msg);
    CHECK(n > 0 && (size_t)n < sizeof msg);
    static const char *want[] = {
        "span 25: max export 1, max import 1, segment 1400 B, aggregation 1400 B or "
        "1000 ms, LSO 'udplso 127.0.0.1:1113 1000000000', 32-bit session numbers, link "
        "up\n"
        "  one-way light time 10000 ms (contact plan range), queuing latency own 1000 ms "
        "(default) + peer 1000 ms (default): retransmission timeout 22000 ms\n"
        "  max retries 5 (default), max repair rounds 8 (m maxrepairrounds), segment "
        "loss "
        "rate 0.01 (default; 1 report segment per round for a 64 KiB block)\n"
        "  largest block 1048576 B (m maxblocksize), imports may hold 2622464 B "
        "(default), "
        "hold 0 B now\n",
        "  worst case to deliver or abandon a 64 KiB block: 1056.000 s (8 rounds x 6 "
        "tries x 22000 ms; time the link is down not counted)\n",
        "span 101: ",
        "  one-way light time 0 ms (default: no range in the contact plan), queuing "
        "latency own 1000 ms (default) + peer 1000 ms (default): retransmission timeout "
        "2000 ms\n",
        "max repair rounds 3 (m span maxrepairrounds)",
        "span 1: ",
        "32-bit session numbers, link down\n",
        "imports may hold 8388608 B (m span maximportbytes)",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        CHECK_MSG(strstr(msg, want[i]) != NULL, "missing\n%s\nin\n%s", want[i], msg);
    /* one span */
    n = ltp_admin_list_spans_live(&a, e, 101, msg, sizeof msg);
    CHECK(strstr(msg, "span 101: ") == msg && !strstr(msg, "span 25"));
    ltp_engine_free(e);
    CHECK_OK(tern_loop_close(loop));
    tern_clock_free(clk);
    ltp_admin_free(&a);
}
