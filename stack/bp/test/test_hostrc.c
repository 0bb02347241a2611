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
    CHECK(h.has_cfdp);                    /* cfdpd's section: no warning from ternd */
    CHECK_EQ_STR(h.cfdp_file, "host2.rc");
    CHECK(!has_warning(&h, "cfdpadmin"));
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

/* The same node as ionstart -i node.ionrc -l node.ltprc -b node.bprc -p
 * node.ipnrc -s node.ionsecrc runs it: one file per admin program, no
 * section markers, messages naming each file's own lines. */
static const char n_ionrc[] = "1 1 node.ionconfig\n"
                              "s\n"
                              "a contact +0 +3600 1 2 125000\n"
                              "a range +0 +3600 1 2 1\n";
static const char n_ionsecrc[] = "1\n";
static const char n_ltprc[] = "# LTP, ION 4.1 style\n"
                              "1 32\n"
                              "a span 2 32 32 1400 10000 1 'udplso 127.0.0.1:2113'\n"
                              "a seat 'udplsi 127.0.0.1:1113'\n"
                              "s\n"
                              "w 1\n";
static const char n_bprc[] = "1\n"
                             "a scheme ipn 'ipnfw' 'ipnadminep'\n"
                             "a endpoint ipn:1.1 q\n"
                             "a protocol ltp 1400 100\n"
                             "a induct ltp 1 ltpcli\n"
                             "a outduct ltp 2 ltpclo\n"
                             "r 'ipnadmin node.ipnrc'\n"
                             "s\n";
static const char n_ipnrc[] = "a plan 2 ltp/2\n";

#define NFILE(n, p, t)                                                                   \
    {                                                                                    \
        .name = n, .program = p, .text = t, .len = sizeof t - 1                          \
    }

TEST(hostrc_reads_one_file_per_program)
{
    bp_hostrc_file files[] = {
        NFILE("n1/node.ionrc", "ionadmin", n_ionrc),
        NFILE("n1/node.ionsecrc", "ionsecadmin", n_ionsecrc),
        NFILE("n1/node.ltprc", "ltpadmin", n_ltprc),
        NFILE("n1/node.bprc", "bpadmin", n_bprc),
        NFILE("n1/node.ipnrc", "ipnadmin", n_ipnrc),
    };
    bp_hostrc h;
    char err[512];
    CHECK_MSG(bp_hostrc_read_files(&h, files, 5, 1000000, err, sizeof err) == 0, "%s",
              err);
    CHECK_EQ_U64(bp_plan_node(h.plan), 1);
    const char *where;
    CHECK_EQ_STR(bp_plan_ionconfig(h.plan, &where), "node.ionconfig");
    CHECK_EQ_STR(where, "n1/node.ionrc:1");
    const bp_contact *c;
    CHECK_EQ_U64(bp_plan_contacts(h.plan, &c), 1);
    CHECK(h.has_ltp && h.ltp.initialized && h.has_bp);
    CHECK_EQ_INT(h.ltp.nspans, 1);
    CHECK_EQ_INT(h.ltp.nseats, 1);
    CHECK_EQ_STR(h.ltp.seats[0].file, "n1/node.ltprc");
    CHECK_EQ_INT(h.ltp.seats[0].line, 4);
    CHECK_EQ_INT(h.bp.noutducts, 1);
    CHECK_EQ_INT(h.bp.nplans, 1);
    CHECK_EQ_STR(h.bp.plans[0].at.file, "n1/node.ipnrc");
    CHECK(has_warning(&h, "n1/node.ltprc:6")); /* w */
    CHECK(has_warning(&h, "n1/node.bprc:7"));  /* r */
    bp_hostrc_free(&h);

    /* Errors name the file and its line. */
    static const char bad_ltprc[] = "1 32\na seat 'udplsi 127.0.0.1:99999'\n";
    bp_hostrc_file bad[] = {NFILE("n1/node.ionrc", "ionadmin", n_ionrc),
                            NFILE("n1/node.ltprc", "ltpadmin", bad_ltprc)};
    CHECK_RC(bp_hostrc_read_files(&h, bad, 2, 0, err, sizeof err), TERN_ESYNTAX);
    CHECK_EQ_STR(err, "n1/node.ltprc:2: LSI command 'udplsi 127.0.0.1:99999': udplsi: "
                      "bad port '99999' in '127.0.0.1:99999' (expected 0-65535)");
    bp_hostrc_free(&h);

    /* A file for one program holds only that program's commands. */
    static const char mixed[] = "1 32\n## begin bpadmin\n1\n## end bpadmin\n";
    bp_hostrc_file mix[] = {NFILE("n1/node.ionrc", "ionadmin", n_ionrc),
                            NFILE("n1/node.ltprc", "ltpadmin", mixed)};
    CHECK_RC(bp_hostrc_read_files(&h, mix, 2, 0, err, sizeof err), TERN_ESYNTAX);
    CHECK_EQ_STR(err, "n1/node.ltprc:3: '## begin bpadmin' in a file of ltpadmin "
                      "commands; expected ltpadmin commands only (or an ionstart host.rc "
                      "holding every section)");
    bp_hostrc_free(&h);

    /* The set's checks name the file concerned. */
    bp_hostrc_file noltp1[] = {NFILE("n1/node.ionrc", "ionadmin", n_ionrc),
                               NFILE("n1/node.ltprc", "ltpadmin", "a seat 'udplsi @'\n")};
    CHECK_RC(bp_hostrc_read_files(&h, noltp1, 2, 0, err, sizeof err), TERN_ESYNTAX);
    CHECK_EQ_STR(err, "n1/node.ltprc:1: 'a' before '1'; expected "
                      "'1 <est_max_export_sessions>' first");
    bp_hostrc_free(&h);
    bp_hostrc_file nonum[] = {NFILE("n1/node.ionrc", "ionadmin", "s\n"),
                              NFILE("n1/node.bprc", "bpadmin", "1\n")};
    CHECK_RC(bp_hostrc_read_files(&h, nonum, 2, 0, err, sizeof err), TERN_ESYNTAX);
    CHECK_EQ_STR(err, "n1/node.ionrc: no node number; expected '1 <node number>' in "
                      "the ionadmin file");
    bp_hostrc_free(&h);
}

TEST(hostrc_kinds_follow_ionstart)
{
    const char *suffix, *program, *order[16];
    size_t n = 0;
    while (bp_hostrc_kind(n, &suffix, &program) == 0 && n < 16)
        order[n++] = suffix;
    CHECK_EQ_INT(n, 13);
    CHECK_EQ_STR(order[0], "ionrc");
    CHECK_OK(bp_hostrc_kind(5, &suffix, &program));
    CHECK_EQ_STR(suffix, "ltprc");
    CHECK_EQ_STR(program, "ltpadmin");
    /* ionrc, ionsecrc, ltprc, bprc, ipnrc: the order ionstart runs them in */
    size_t at[5], k = 0;
    const char *want[5] = {"ionrc", "ionsecrc", "ltprc", "bprc", "ipnrc"};
    for (size_t w = 0; w < 5; w++)
        for (size_t i = 0; i < n; i++)
            if (strcmp(order[i], want[w]) == 0)
                at[k++] = i;
    CHECK_EQ_INT(k, 5);
    for (size_t i = 1; i < 5; i++)
        CHECK(at[i - 1] < at[i]);
    CHECK_RC(bp_hostrc_kind(13, &suffix, &program), TERN_ENOTFOUND);
}
