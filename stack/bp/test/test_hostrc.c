/* Reading an ION host.rc into the admin settings. */
#include <string.h>

#include "bp_hostrc.h"
#include "tern_test.h"

static const char good[] = "## begin ionadmin\n"
                           "1 2 node2.ionconfig\n"
                           "s\n"
                           "a contact +1 +3600 2 3 100000\n"
                           "a range +1 +3600 2 3 1\n"
                           "## end ionadmin\n"
                           "##begin ionsecadmin\n"
                           "1\n"
                           "e 1\n"
                           "## end ionsecadmin\n"
                           "## begin ltpadmin\n"
                           "1 32\n"
                           "a span 3 32 32 1400 10000 1 'udplso 127.0.0.1:1113'\n"
                           "s 'udplsi 127.0.0.1:1114'\n"
                           "## end ltpadmin\n"
                           "## begin bpadmin\n"
                           "1\n"
                           "a scheme ipn 'ipnfw' 'ipnadminep'\n"
                           "a endpoint ipn:2.1 q\n"
                           "a protocol ltp 1400 100\n"
                           "a induct ltp 2 ltpcli\n"
                           "a outduct ltp 3 ltpclo\n"
                           "s\n"
                           "## end bpadmin\n"
                           "## begin ipnadmin\n"
                           "a plan 3 ltp/3\n"
                           "## end ipnadmin\n"
                           "## begin cfdpadmin\n"
                           "1\n"
                           "## end cfdpadmin\n";

static int has_warning(const bp_hostrc *h, const char *needle)
{
    for (size_t i = 0; i < h->nwarnings; i++)
        if (strstr(h->warnings[i], needle))
            return 1;
    return 0;
}

TEST(hostrc_reads_every_section)
{
    bp_hostrc h;
    char err[512];
    CHECK_OK(
        bp_hostrc_read(&h, "host2.rc", good, strlen(good), 1000000, err, sizeof err));
    CHECK_EQ_U64(bp_plan_node(h.plan), 2);
    const char *where;
    CHECK_EQ_STR(bp_plan_ionconfig(h.plan, &where), "node2.ionconfig");
    CHECK_EQ_STR(where, "host2.rc:2");
    const bp_contact *c;
    CHECK_EQ_U64(bp_plan_contacts(h.plan, &c), 1);
    CHECK(h.has_ltp && h.ltp.initialized);
    CHECK_EQ_U64(h.ltp.nspans, 1);
    CHECK_EQ_INT(h.ltp.nseats, 1);
    CHECK_EQ_STR(h.ltp.seats[0].lsi, "udplsi 127.0.0.1:1114");
    CHECK_EQ_STR(h.ltp.seats[0].file, "host2.rc");
    CHECK_EQ_INT(h.ltp.seats[0].line, 14);
    CHECK(h.has_bp);
    CHECK(has_warning(&h, "host2.rc:9")); /* ionsecadmin 'e' */
    CHECK(has_warning(&h, "cfdpadmin"));
    bp_hostrc_free(&h);
}

static void expect_error(const char *text, const char *needle)
{
    bp_hostrc h;
    char err[512] = "";
    CHECK_RC(bp_hostrc_read(&h, "x.rc", text, strlen(text), 0, err, sizeof err),
             TERN_ESYNTAX);
    CHECK_MSG(strstr(err, needle) != NULL, "error '%s' lacks '%s'", err, needle);
    bp_hostrc_free(&h);
}

TEST(hostrc_errors_name_the_line)
{
    expect_error("1 2\n", "x.rc:1: '1' is outside any section");
    expect_error("## begin ionadmin\n1 2\n## end ionadmin\n## begin frobadmin\nx\n"
                 "## end frobadmin\n",
                 "x.rc:5: unknown section 'frobadmin'");
    expect_error("## begin ionadmin\ns\n## end ionadmin\n", "no node number");
    expect_error("## begin ionadmin\n1 2\n## end ionadmin\n## begin ltpadmin\n"
                 "a span 3 32 32 1400 10000 1 'udplso 127.0.0.1:1113'\n## end ltpadmin\n",
                 "x.rc");
    expect_error("## begin ionadmin\n1 2\n## end ionadmin\n## begin bpadmin\n1\n"
                 "a endpoint ipn:2.1 z\n## end bpadmin\n",
                 "x.rc:6");
}

/* A node as ION 4.1.3 writes one: the induct side of LTP is a seat and 's'
 * comes bare; spans in the older form with block sizes and a negative
 * queuing latency, as most of ION's own test configurations have them. */
static const char ion413[] = "## begin ionadmin\n"
                             "1 1 node.ionconfig\n"
                             "s\n"
                             "a contact +0 +3600 1 2 125000\n"
                             "a range +0 +3600 1 2 1\n"
                             "m production 1000000\n"
                             "## end ionadmin\n"
                             "## begin ltpadmin\n"
                             "1 32\n"
                             "a span 2 32 100000 32 100000 1400 10000 1 "
                             "'udplso 127.0.0.1:2113' -1\n"
                             "a seat 'udplsi 127.0.0.1:1113'\n"
                             "s\n"
                             "## end ltpadmin\n"
                             "## begin bpadmin\n"
                             "1\n"
                             "a scheme ipn 'ipnfw' 'ipnadminep'\n"
                             "a endpoint ipn:1.1 q\n"
                             "a protocol ltp 1400 100\n"
                             "a induct ltp 1 ltpcli\n"
                             "a outduct ltp 2 ltpclo\n"
                             "s\n"
                             "## end bpadmin\n"
                             "## begin ipnadmin\n"
                             "a plan 2 ltp/2\n"
                             "## end ipnadmin\n";

TEST(hostrc_reads_ion_4_1_3_seats_and_spans)
{
    bp_hostrc h;
    char err[512];
    CHECK_MSG(bp_hostrc_read(&h, "host1.rc", ion413, strlen(ion413), 1000000, err,
                             sizeof err) == 0,
              "%s", err);
    CHECK_EQ_INT(h.ltp.nseats, 1);
    CHECK_EQ_STR(h.ltp.seats[0].lsi, "udplsi 127.0.0.1:1113");
    CHECK_EQ_INT(h.ltp.seats[0].line, 11);
    CHECK_EQ_INT(h.ltp.nspans, 1);
    CHECK_EQ_INT(h.ltp.spans[0].cfg.max_import, 32);
    CHECK_EQ_INT(h.ltp.spans[0].cfg.max_seg, 1400);
    CHECK_EQ_INT(h.ltp.spans[0].cfg.qtime_ms, 1000);
    CHECK(has_warning(&h, "host1.rc:10: span 2: the block sizes (100000, 100000)"));
    bp_hostrc_free(&h);
}
