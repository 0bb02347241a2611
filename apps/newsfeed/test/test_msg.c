/* RFC 5536 parsing: the fields newsfeed uses, folding, both line ends, and
 * a refusal naming the line for each way an article can be unacceptable. */
#include "nf_test.h"

static char art[8192];

static int parse(const char *text, nf_msg *m, nf_err *e)
{
    memset(e, 0, sizeof *e);
    int rc = nf_msg_parse(text, strlen(text), m, e);
    if (rc)
        CHECK_EQ_INT(e->reason, NF_R_BAD_ARTICLE);
    return rc;
}

static int slice_is(nf_slice s, const char *w)
{
    return s.n == strlen(w) && memcmp(s.p, w, s.n) == 0;
}

TEST(fields_and_body)
{
    size_t n = nf_t_article(art, sizeof art, "<m1@pub.example>", "comp.lang.c, alt.test",
                            "one\r\ntwo\r\nthree\r\n");
    nf_msg m;
    nf_err e;
    CHECK_OK(nf_msg_parse(art, n, &m, &e));
    CHECK(slice_is(m.message_id, "<m1@pub.example>"));
    CHECK(slice_is(m.path, "pub.example!not-for-mail"));
    CHECK(slice_is(m.newsgroups, "comp.lang.c, alt.test"));
    CHECK(slice_is(m.subject, "On the analytical engine"));
    CHECK(slice_is(m.references, "<a@x> <b@y>"));
    CHECK_EQ_U64(m.ngroups, 2);
    char g[64];
    CHECK_OK(nf_msg_group(&m, 0, g, sizeof g));
    CHECK_EQ_STR(g, "comp.lang.c");
    CHECK_OK(nf_msg_group(&m, 1, g, sizeof g));
    CHECK_EQ_STR(g, "alt.test");
    CHECK_RC(nf_msg_group(&m, 2, g, sizeof g), TERN_ENOTFOUND);
    CHECK_RC(nf_msg_group(&m, 0, g, 5), TERN_ENOSPACE);
    CHECK_EQ_U64(m.body_lines, 3);
    CHECK_EQ_U64(m.body_len, 17);
    CHECK_EQ_MEM(art + m.body_off, "one\r\n", 5);
    nf_slice v;
    CHECK_OK(nf_msg_field(&m, "references", &v));
    CHECK(slice_is(v, "<a@x> <b@y>"));
    CHECK_RC(nf_msg_field(&m, "X-None", &v), TERN_ENOTFOUND);
}

TEST(lf_lines_folding_and_no_body)
{
    const char *a = "Path: a!b\nFrom: x@y\nNewsgroups: misc.test\nSubject: a long\n"
                    "\tfolded subject\nDate: today\nMessage-ID: <f@y>\nX-Extra: 1\n\n";
    nf_msg m;
    nf_err e;
    CHECK_OK(parse(a, &m, &e));
    CHECK(slice_is(m.subject, "a long\n\tfolded subject"));
    CHECK_EQ_U64(m.body_len, 0);
    CHECK_EQ_U64(m.body_lines, 0);
    CHECK_EQ_U64(m.references.n, 0);
    nf_slice v;
    CHECK_OK(nf_msg_field(&m, "x-extra", &v));
    CHECK(slice_is(v, "1"));
    /* a last body line without a line end still counts */
    const char *b = "Path: a\nFrom: x\nNewsgroups: g\nSubject: s\nDate: d\n"
                    "Message-ID: <q@y>\n\nl1\nl2";
    CHECK_OK(parse(b, &m, &e));
    CHECK_EQ_U64(m.body_lines, 2);
}

TEST(each_missing_required_header_named)
{
    static const char *names[] = {"Path",    "From", "Newsgroups",
                                  "Subject", "Date", "Message-ID"};
    for (size_t i = 0; i < 6; i++) {
        char a[1024] = "";
        static const char *lines[] = {"Path: a\r\n",       "From: x\r\n",
                                      "Newsgroups: g\r\n", "Subject: s\r\n",
                                      "Date: d\r\n",       "Message-ID: <q@y>\r\n"};
        for (size_t j = 0; j < 6; j++)
            if (j != i)
                strcat(a, lines[j]);
        strcat(a, "\r\nbody\r\n");
        nf_msg m;
        nf_err e;
        CHECK_RC(parse(a, &m, &e), TERN_EMALFORMED);
        CHECK_MSG(strstr(e.text, names[i]), "%s: %s", names[i], e.text);
    }
}

TEST(malformed_articles_refused_with_line)
{
    static const struct {
        const char *text, *why;
    } bad[] = {
        {"Path: a\r\nFrom: x\r\n", "without an empty line"},
        {"", "without an empty line"},
        {"\r\nbody\r\n", "no header"},
        {" folded: first\r\n\r\n", "line 1: continuation"},
        {"Path: a\r\nNo colon here\r\n\r\n", "line 2: header line without"},
        {"Path: a\r\nBad name: x\r\n\r\n", "line 2: bad character"},
        {"Path: a\r\nFrom: x\r\nNewsgroups: g\r\nSubject: s\r\nDate: d\r\n"
         "Message-ID: <q@y>\r\nMessage-ID: <r@y>\r\n\r\n",
         "line 7: a second Message-ID"},
        {"Path: a\r\nFrom: x\r\nNewsgroups: g\r\nSubject: s\r\nDate: d\r\n"
         "Message-ID: q@y\r\n\r\n",
         "line 6: Message-ID is not"},
        {"Path: a\r\nFrom: x\r\nNewsgroups: g\r\nSubject: s\r\nDate: d\r\n"
         "Message-ID: <q y@z>\r\n\r\n",
         "Message-ID is not"},
        {"Path: a\r\nFrom: x\r\nNewsgroups: g\r\nSubject: s\r\nDate: d\r\n"
         "Message-ID: <noat>\r\n\r\n",
         "Message-ID is not"},
        {"Path: a\r\nFrom: x\r\nNewsgroups: comp..lang\r\n\r\n",
         "line 3: \"comp..lang\""},
        {"Path: a\r\nFrom: x\r\nNewsgroups: ../etc\r\n\r\n", "is not a newsgroup"},
        {"Path: a\r\nFrom: x\r\nNewsgroups: a/b\r\n\r\n", "is not a newsgroup"},
        {"Path: a\r\nFrom: x\r\nNewsgroups: a,,b\r\n\r\n", "\"\" is not a newsgroup"},
        {"Path: a\r\nFrom: x\r\nNewsgroups: \r\n\r\n", "empty Newsgroups"},
        {"Path: a b\r\n\r\n", "white space inside Path"},
        {"Path: a\rb\r\n\r\n", "bare CR"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        nf_msg m;
        nf_err e;
        CHECK_MSG(parse(bad[i].text, &m, &e) == TERN_EMALFORMED, "case %zu accepted", i);
        CHECK_MSG(strstr(e.text, bad[i].why), "case %zu: '%s' lacks '%s'", i, e.text,
                  bad[i].why);
    }
    /* NUL and over-long header lines */
    char a[4096];
    size_t n = nf_t_article(a, sizeof a, "<z@y>", "g", "b\r\n");
    a[3] = 0;
    nf_msg m;
    nf_err e;
    CHECK_RC(nf_msg_parse(a, n, &m, &e), TERN_EMALFORMED);
    CHECK_MSG(strstr(e.text, "line 1: NUL"), "%s", e.text);
    char subj[1100];
    memset(subj, 's', 1000);
    subj[1000] = 0;
    snprintf(a, sizeof a, "Path: a\r\nSubject: %s\r\n\r\n", subj);
    CHECK_RC(parse(a, &m, &e), TERN_EMALFORMED);
    CHECK_MSG(strstr(e.text, "line 2: header line of 1009 bytes"), "%s", e.text);
}

TEST(msgid_and_group_validators)
{
    CHECK(nf_msgid_valid("<a@b>", 5));
    CHECK(nf_msgid_valid("<\"q\"@[1.2.3.4]>", 15));
    CHECK(!nf_msgid_valid("<@b>", 4));
    CHECK(!nf_msgid_valid("<a@>", 4));
    CHECK(!nf_msgid_valid("<a@b", 4));
    CHECK(!nf_msgid_valid("<a<@b>", 6));
    char big[300] = "<";
    memset(big + 1, 'a', 246);
    memcpy(big + 247, "@b>", 4);
    CHECK(nf_msgid_valid(big, 250));
    big[249] = 'b';
    big[250] = '>';
    CHECK(!nf_msgid_valid(big, 251));
    CHECK(nf_group_valid("comp.lang.c++", 13));
    CHECK(nf_group_valid("alt.2600", 8));
    CHECK(!nf_group_valid("comp.", 5));
    CHECK(!nf_group_valid(".comp", 5));
    CHECK(!nf_group_valid("comp lang", 9));
    CHECK(!nf_group_valid("", 0));
}
