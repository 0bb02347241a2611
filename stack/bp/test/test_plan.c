#include <stdio.h>

#include "bp_plan.h"
#include "tern_test.h"

/* The ionadmin section of the Deployment Guide's three-node example. */
static const char guide[] = "## begin ionadmin\n"
                            "1   1  node1.ionconfig\n"
                            "s\n"
                            "a  contact  +1  +86400    25    25  50000000\n"
                            "a  contact  +1  +84600    25   101  50000000\n"
                            "a  contact  +1  +86400     1   101  50000000\n"
                            "a  range  +1  +86400    25    25  1\n"
                            "a  range  +1  +86400    25   101  10\n"
                            "a  range  +1  +86400   101    25  12\n"
                            "a  range  +1  +86400     1   101  10\n"
                            "m  production   50000000\n"
                            "m  consumption  40000000\n"
                            "## end ionadmin\n";

/* 2026-11-30T00:00:00Z */
#define NOW UINT64_C(849312000000)

static int apply_all(bp_plan *p, const char *text, char *msg, size_t len, int *warn)
{
    tern_rc *rc;
    int r = tern_rc_parse(&rc, "host.rc", text, strlen(text), "ionadmin");
    if (r)
        return r;
    *warn = 0;
    for (size_t i = 0; i < tern_rc_count(rc) && r == 0; i++) {
        r = bp_ionadmin_apply(p, tern_rc_at(rc, i), NOW, msg, len);
        if (r == BP_PLAN_IGNORED) {
            (*warn)++;
            r = 0;
        }
    }
    tern_rc_free(rc);
    return r;
}

TEST(plan_reads_the_deployment_guide_example)
{
    bp_plan *p;
    char msg[4096];
    int warn;
    CHECK_OK(bp_plan_new(&p));
    CHECK_OK(apply_all(p, guide, msg, sizeof msg, &warn));
    CHECK_EQ_INT(warn, 1); /* "s" */
    CHECK_EQ_U64(bp_plan_node(p), 1);
    const bp_contact *c;
    CHECK_EQ_INT(bp_plan_contacts(p, &c), 3);
    CHECK_EQ_U64(c[0].from_ms, NOW + 1000);
    CHECK_EQ_U64(c[0].until_ms, NOW + 86400000);
    CHECK_EQ_U64(c[1].until_ms, NOW + 84600000);
    CHECK_EQ_U64(c[1].to_node, 101);
    CHECK_EQ_U64(c[2].rate, 50000000);
    const bp_range *r;
    CHECK_EQ_INT(bp_plan_ranges(p, &r), 4);
    uint32_t owlt;
    CHECK_OK(bp_plan_owlt(p, 25, 101, NOW + 5000, &owlt));
    CHECK_EQ_INT(owlt, 10);
    CHECK_OK(bp_plan_owlt(p, 101, 25, NOW + 5000, &owlt)); /* overriding range */
    CHECK_EQ_INT(owlt, 12);
    CHECK_OK(bp_plan_owlt(p, 101, 1, NOW + 5000, &owlt)); /* symmetric */
    CHECK_EQ_INT(owlt, 10);
    CHECK_RC(bp_plan_owlt(p, 1, 101, NOW, &owlt), TERN_ENOTFOUND); /* not yet */
    CHECK_RC(bp_plan_owlt(p, 1, 25, NOW + 5000, &owlt), TERN_ENOTFOUND);
    uint64_t prod, cons;
    bp_plan_rates(p, &prod, &cons);
    CHECK_EQ_U64(prod, 50000000);
    CHECK_EQ_U64(cons, 40000000);
    tern_rc_cmd l = {"host.rc", 20, "ionadmin", 2, (char *[]){"l", "range", NULL}};
    CHECK_OK(bp_ionadmin_apply(p, &l, NOW, msg, sizeof msg));
    CHECK_MSG(strstr(msg,
                     "range from 2026/11/30-00:00:01 until 2026/12/01-00:00:00, 25 -> "
                     "101, 10 s\n") != NULL,
              "%s", msg);
    bp_plan_free(p);
}

TEST(plan_absolute_times_and_deletes)
{
    bp_plan *p;
    char msg[512];
    int warn;
    CHECK_OK(bp_plan_new(&p));
    CHECK_OK(
        apply_all(p,
                  "1 7\n"
                  "a contact 2026/12/01-10:00:00 2026/12/01-10:15:00 7 8 125000 0.5\n"
                  "a contact +0 +60 8 7 1000\n"
                  "d contact +0 8 7\n",
                  msg, sizeof msg, &warn));
    const bp_contact *c;
    CHECK_EQ_INT(bp_plan_contacts(p, &c), 1);
    CHECK_EQ_U64(c[0].from_ms, NOW + 86400000 + 36000000);
    CHECK_EQ_U64(c[0].until_ms - c[0].from_ms, 900000);
    CHECK(c[0].confidence == 0.5);
    uint64_t t;
    CHECK_RC(bp_plan_parse_time("2026/02/30-00:00:00", NOW, &t), TERN_ESYNTAX);
    CHECK_RC(bp_plan_parse_time("1999/12/31-23:59:59", NOW, &t), TERN_ESYNTAX);
    CHECK_RC(bp_plan_parse_time("+x", NOW, &t), TERN_ESYNTAX);
    bp_plan_free(p);
}

static void check_error(const char *line, const char *want)
{
    bp_plan *p;
    char msg[512], text[256];
    int warn;
    CHECK_OK(bp_plan_new(&p));
    snprintf(text, sizeof text, "1 1\n%s\n", line);
    CHECK_RC(apply_all(p, text, msg, sizeof msg, &warn), TERN_ESYNTAX);
    CHECK_EQ_STR(msg, want);
    bp_plan_free(p);
}

TEST(plan_errors_name_file_line_and_expectation)
{
    check_error(
        "a contact +1 +10 1 2",
        "host.rc:2: 'a contact' takes 5 or 6 arguments, got 4; expected 'a contact "
        "<from time> <until time> <from node> <to node> <rate bytes/s> [confidence]'");
    check_error("a contact +10 +1 1 2 100",
                "host.rc:2: contact ends (+1) before it starts (+10)");
    check_error("a range yesterday +10 1 2 1",
                "host.rc:2: range start time 'yesterday': expected +<seconds> or "
                "yyyy/mm/dd-hh:mm:ss");
    check_error("a contact +1 +10 1 2 fast",
                "host.rc:2: contact rate 'fast': expected bytes "
                "per second");
    check_error("d range +1 1 2",
                "host.rc:2: no range from +1 between nodes 1 and 2 to delete");
    check_error(
        "q", "host.rc:2: unknown ionadmin command 'q'; expected 1, a/d/l contact, a/d/l "
             "range or m production/consumption");
}

/* An unknown command is named whole, and the nearest known one suggested. */
TEST(ionadmin_unknown_commands_suggest_the_nearest)
{
    check_error("a contcat +1 +10 1 2 100",
                "host.rc:2: unknown ionadmin command 'a contcat' (did you mean 'a "
                "contact'?); expected 1, a/d/l contact, a/d/l range or m "
                "production/consumption");
    check_error("a rnage +1 +10 1 2 1",
                "host.rc:2: unknown ionadmin command 'a rnage' (did you mean 'a "
                "range'?); expected 1, a/d/l contact, a/d/l range or m "
                "production/consumption");
    check_error("a span 2 1 1 1400 1400 1 'udplso x'",
                "host.rc:2: unknown ionadmin command 'a span'; expected 1, a/d/l "
                "contact, a/d/l range or m production/consumption");
    /* an ION 'm' command Tern does not act on warns; a misspelt one says so */
    bp_plan *p;
    char msg[512];
    int warn;
    CHECK_OK(bp_plan_new(&p));
    CHECK_OK(apply_all(p, "1 1\nm productoin 5\n", msg, sizeof msg, &warn));
    CHECK_EQ_INT(warn, 1);
    CHECK_EQ_STR(msg, "host.rc:2: ionadmin 'm productoin' is accepted but has no effect "
                      "here (did you mean 'm production'?)");
    CHECK_OK(apply_all(p, "1 1\nm horizon +0\n", msg, sizeof msg, &warn));
    CHECK_EQ_STR(msg, "host.rc:2: ionadmin 'm horizon' is accepted but has no effect "
                      "here");
    bp_plan_free(p);
}

TEST(plan_survives_in_the_store)
{
    sdr_profile prof;
    memset(&prof, 0, sizeof prof);
    prof.name = "node";
    prof.dir = tt_tmpdir();
    prof.heap_size = 1 << 20;
    prof.mode = SDR_DURABLE;
    prof.commit = SDR_COMMIT_SYNC;
    sdr *st;
    char why[256], msg[512];
    int warn;
    CHECK_OK(sdr_open(&prof, &st, why, sizeof why));
    bp_plan *p, *q;
    CHECK_RC(bp_plan_load(st, &q), TERN_ENOTFOUND);
    CHECK_OK(bp_plan_new(&p));
    CHECK_OK(apply_all(p, guide, msg, sizeof msg, &warn));
    CHECK_OK(bp_plan_save(p, st));
    CHECK_OK(bp_plan_save(p, st)); /* replaces, does not pile up */
    CHECK_OK(sdr_close(st));
    CHECK_OK(sdr_open(&prof, &st, why, sizeof why));
    CHECK_OK(bp_plan_load(st, &q));
    const bp_contact *a, *b;
    const bp_range *ra, *rb;
    CHECK_EQ_INT(bp_plan_contacts(q, &b), bp_plan_contacts(p, &a));
    CHECK_EQ_MEM(a, b, 3 * sizeof *a);
    CHECK_EQ_INT(bp_plan_ranges(q, &rb), bp_plan_ranges(p, &ra));
    CHECK_EQ_MEM(ra, rb, 4 * sizeof *ra);
    CHECK_EQ_U64(bp_plan_node(q), 1);
    uint32_t owlt;
    CHECK_OK(bp_plan_owlt(q, 101, 25, NOW + 5000, &owlt));
    CHECK_EQ_INT(owlt, 12);
    char cwhy[256];
    CHECK_OK(sdr_check(st, cwhy, sizeof cwhy));
    sdr_usage u;
    CHECK_OK(sdr_get_usage(st, &u));
    CHECK_EQ_U64(u.objects, 4); /* the plan; the catalog list, its element and entry */
    bp_plan_free(p);
    bp_plan_free(q);
    CHECK_OK(sdr_close(st));
}
