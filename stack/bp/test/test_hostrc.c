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
    CHECK_EQ_STR(h.ltp.lsi, "udplsi 127.0.0.1:1114");
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
