#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "tern/rc.h"
#include "tern_test.h"

static tern_rc *parse(const char *text, const char *dflt, int want_rc)
{
    tern_rc *rc = NULL;
    CHECK_RC(tern_rc_parse(&rc, "t.rc", text, strlen(text), dflt), want_rc);
    CHECK(rc != NULL);
    return rc;
}

static void check_words(const tern_rc_cmd *c, int argc, const char *const *words)
{
    CHECK(c != NULL);
    CHECK_EQ_INT(c->argc, argc);
    for (int i = 0; i < argc; i++)
        CHECK_EQ_STR(c->argv[i], words[i]);
    CHECK(c->argv[argc] == NULL);
}

TEST(rc_words_quotes_comments)
{
    tern_rc *rc =
        parse("# ltpadmin for node 1\n"
              "\n"
              "1  32\r\n"
              "a  span   25  1  1  1400  1400  1  'udplso 127.0.0.1:1113 1000000000'\n"
              "\t s\t'udplsi 127.0.0.1:1113'   # trailing comment\n"
              "m maxrepairrounds 8\n"
              "a x ''\n"
              "w 1#notacomment\n",
              "ltpadmin", 0);
    CHECK_EQ_INT(tern_rc_count(rc), 6);
    check_words(tern_rc_at(rc, 0), 2, (const char *[]){"1", "32"});
    check_words(tern_rc_at(rc, 1), 9,
                (const char *[]){"a", "span", "25", "1", "1", "1400", "1400", "1",
                                 "udplso 127.0.0.1:1113 1000000000"});
    check_words(tern_rc_at(rc, 2), 2, (const char *[]){"s", "udplsi 127.0.0.1:1113"});
    check_words(tern_rc_at(rc, 4), 3, (const char *[]){"a", "x", ""});
    check_words(tern_rc_at(rc, 5), 2, (const char *[]){"w", "1#notacomment"});
    CHECK_EQ_INT(tern_rc_at(rc, 0)->line, 3);
    CHECK_EQ_INT(tern_rc_at(rc, 2)->line, 5);
    CHECK_EQ_STR(tern_rc_at(rc, 3)->section, "ltpadmin");
    CHECK_EQ_STR(tern_rc_at(rc, 3)->file, "t.rc");
    CHECK_EQ_INT(tern_rc_diag_count(rc), 0);
    CHECK(tern_rc_at(rc, 6) == NULL);
    tern_rc_free(rc);
}

/* Marker spacing as found in ION's own Deployment Guide example. */
static const char host_rc[] =
    "## begin ionadmin  \n"
    "1   1  node1.ionconfig\n"
    "s\n"
    "a  contact  +1  +86400    25    25  50000000\n"
    "## end ionadmin\n"
    "##########################################\n"
    "## begin ltpadmin  \n"
    "1  32\n"
    "a  span 25 1 1 1400 1400 1 'udplso 127.0.0.1:1113 1000000000'\n"
    "## end ltpadmin  \n"
    "##begin bpadmin\n"
    "1\n"
    "## end bpadmin\n"
    "##  begin  ipnadmin\n"
    "a  plan   25  ltp/25\n"
    "## end  ipnadmin  \n";

TEST(rc_host_rc_sections)
{
    tern_rc *rc = parse(host_rc, NULL, 0);
    static const char *const want[][2] = {
        {"ionadmin", "1"}, {"ionadmin", "s"}, {"ionadmin", "a"}, {"ltpadmin", "1"},
        {"ltpadmin", "a"}, {"bpadmin", "1"},  {"ipnadmin", "a"},
    };
    CHECK_EQ_INT(tern_rc_count(rc), 7);
    for (size_t i = 0; i < 7; i++) {
        CHECK_EQ_STR(tern_rc_at(rc, i)->section, want[i][0]);
        CHECK_EQ_STR(tern_rc_at(rc, i)->argv[0], want[i][1]);
    }
    CHECK_EQ_INT(tern_rc_at(rc, 6)->line, 15);
    CHECK_EQ_INT(tern_rc_diag_count(rc), 0);
    tern_rc_free(rc);
}

static void check_error(const char *text, unsigned n_cmds, const char *want_diag)
{
    tern_rc *rc = parse(text, "bpadmin", TERN_ESYNTAX);
    CHECK_EQ_INT(tern_rc_count(rc), n_cmds);
    CHECK(tern_rc_error_count(rc) >= 1);
    int is_err = 0;
    const char *d = tern_rc_diag_at(rc, 0, &is_err);
    CHECK(is_err);
    CHECK_EQ_STR(d, want_diag);
    tern_rc_free(rc);
}

TEST(rc_errors_name_file_line_and_expectation)
{
    check_error("1\na span 1 'udplso 127.0.0.1\n2\n", 2,
                "t.rc:2: unterminated quoted string starting at column 10; expected a "
                "closing ' before the end of the line");
    check_error("## begin ionadmin\n1 1\n## begin ltpadmin\n## end ionadmin\n", 1,
                "t.rc:3: '## begin ltpadmin' inside section ionadmin (begun at line 1); "
                "expected '## end ionadmin' first");
    check_error("## begin ionadmin\n1 1\n## end ltpadmin\n## end ionadmin\n", 1,
                "t.rc:3: '## end ltpadmin' closes section ionadmin (begun at line 1); "
                "expected '## end ionadmin'");
    check_error("## end bpadmin\n", 0,
                "t.rc:1: '## end bpadmin' outside any section; expected '## begin "
                "bpadmin' before it");
    check_error("## begin ionadmin\n1 1\n", 1,
                "t.rc:2: section ionadmin begun at line 1 has no '## end ionadmin'");
    check_error("## begin\n", 0,
                "t.rc:1: malformed section marker; expected '## begin <name>'");
    check_error("## begin a b\n## end a\n", 0,
                "t.rc:1: malformed section marker; expected '## begin <name>'");
    check_error("a\x01 b\n", 0,
                "t.rc:1: control character 0x01 at column 2; expected printable text");
}

TEST(rc_nul_byte_and_long_line)
{
    tern_rc *rc = NULL;
    static const char nul[] = "1\nx\0y\n2\n";
    CHECK_RC(tern_rc_parse(&rc, "n.rc", nul, sizeof nul - 1, NULL), TERN_ESYNTAX);
    CHECK_EQ_INT(tern_rc_count(rc), 2);
    CHECK_EQ_STR(tern_rc_diag_at(rc, 0, NULL),
                 "n.rc:2: control character 0x00 at column 2; expected printable text");
    tern_rc_free(rc);

    size_t n = TERN_RC_MAX_LINE + 10;
    char *big = malloc(n + 8);
    CHECK(big);
    memset(big, 'x', n);
    memcpy(big + n, "\nok\n", 5);
    CHECK_RC(tern_rc_parse(&rc, "b.rc", big, strlen(big), NULL), TERN_ESYNTAX);
    CHECK_EQ_INT(tern_rc_count(rc), 1);
    CHECK_EQ_STR(tern_rc_at(rc, 0)->argv[0], "ok");
    free(big);
    tern_rc_free(rc);
}

TEST(rc_commands_outside_sections_warned_and_dropped)
{
    tern_rc *rc = parse("1 stray\n## begin bpadmin\n1\n## end bpadmin\nx\n", NULL, 0);
    CHECK_EQ_INT(tern_rc_count(rc), 1);
    CHECK_EQ_STR(tern_rc_at(rc, 0)->section, "bpadmin");
    CHECK_EQ_INT(tern_rc_diag_count(rc), 2);
    CHECK_EQ_INT(tern_rc_error_count(rc), 0);
    int is_err = 1;
    CHECK_EQ_STR(tern_rc_diag_at(rc, 0, &is_err),
                 "t.rc:1: command '1' is outside any '## begin' section; ignored");
    CHECK_EQ_INT(is_err, 0);
    CHECK_EQ_STR(tern_rc_diag_at(rc, 1, NULL),
                 "t.rc:5: command 'x' is outside any '## begin' section; ignored");
    tern_rc_free(rc);
}

TEST(rc_load_file_and_missing_file)
{
    char path[512];
    snprintf(path, sizeof path, "%s/host.rc", tt_tmpdir());
    FILE *f = fopen(path, "w");
    CHECK(f);
    fputs(host_rc, f);
    fclose(f);
    tern_rc *rc = NULL;
    CHECK_OK(tern_rc_load(&rc, path, NULL));
    CHECK_EQ_INT(tern_rc_count(rc), 7);
    CHECK_EQ_STR(tern_rc_at(rc, 0)->file, path);
    tern_rc_free(rc);
    snprintf(path, sizeof path, "%s/none.rc", tt_tmpdir());
    CHECK_RC(tern_rc_load(&rc, path, NULL), -ENOENT);
    CHECK_RC(tern_rc_load(&rc, tt_tmpdir(), NULL), -EISDIR);
}

TEST(rc_empty_input)
{
    tern_rc *rc = parse("", NULL, 0);
    CHECK_EQ_INT(tern_rc_count(rc), 0);
    tern_rc_free(rc);
    rc = parse("no newline at end", "x", 0);
    CHECK_EQ_INT(tern_rc_count(rc), 1);
    CHECK_EQ_INT(tern_rc_at(rc, 0)->argc, 4);
    tern_rc_free(rc);
}
