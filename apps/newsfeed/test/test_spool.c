/* The spool: one directory per newsgroup (dots become slashes), numbered
 * articles byte-identical to what was given, cross-posts in each group, an
 * overview line per group with the eight fields, numbering that resumes
 * after a reopen and steps over names already taken. */
#include <sys/stat.h>
#include <unistd.h>

#include "nf_test.h"

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    CHECK_MSG(f, "%s missing", path);
    static char buf[65536];
    *n = fread(buf, 1, sizeof buf - 1, f);
    buf[*n] = 0;
    fclose(f);
    return buf;
}

static void store(nf_spool *sp, const char *a, nf_spool_where *w)
{
    nf_msg m;
    nf_err e;
    CHECK_OK(nf_msg_parse(a, strlen(a), &m, &e));
    CHECK_MSG(nf_spool_store(sp, a, strlen(a), &m, w, &e) == 0, "%s", e.text);
}

TEST(groups_numbers_overview)
{
    char root[512], path[600];
    snprintf(root, sizeof root, "%s/spool", tt_tmpdir());
    nf_spool *sp;
    nf_err e;
    CHECK_OK(nf_spool_open(&sp, root, &e));
    char a1[4096], a2[4096];
    nf_t_article(a1, sizeof a1, "<s1@x>", "comp.lang.c,alt.test", "hello\r\nworld\r\n");
    nf_t_article(a2, sizeof a2, "<s2@x>", "comp.lang.c", "second\r\n");
    nf_spool_where w;
    store(sp, a1, &w);
    CHECK_EQ_U64(w.ngroups, 2);
    CHECK_EQ_U64(w.first_num, 1);
    store(sp, a2, &w);
    CHECK_EQ_U64(w.first_num, 2);
    size_t n;
    snprintf(path, sizeof path, "%s/comp/lang/c/1", root);
    char *got = slurp(path, &n);
    CHECK_EQ_U64(n, strlen(a1));
    CHECK_EQ_MEM(got, a1, n);
    snprintf(path, sizeof path, "%s/alt/test/1", root);
    got = slurp(path, &n);
    CHECK_EQ_MEM(got, a1, n);
    snprintf(path, sizeof path, "%s/comp/lang/c/2", root);
    got = slurp(path, &n);
    CHECK_EQ_MEM(got, a2, n);
    /* a cross-post is one file, linked */
    struct stat s1, s2;
    snprintf(path, sizeof path, "%s/comp/lang/c/1", root);
    CHECK(stat(path, &s1) == 0);
    snprintf(path, sizeof path, "%s/alt/test/1", root);
    CHECK(stat(path, &s2) == 0);
    CHECK(s1.st_ino == s2.st_ino);
    snprintf(path, sizeof path, "%s/comp/lang/c/.overview", root);
    got = slurp(path, &n);
    char want[2048];
    snprintf(
        want, sizeof want,
        "1\tOn the analytical engine\tAda <ada@example.org>\tThu, 03 Dec 2026 18:00:00 "
        "+0000\t<s1@x>\t<a@x> <b@y>\t%zu\t2\n"
        "2\tOn the analytical engine\tAda <ada@example.org>\tThu, 03 Dec 2026 18:00:00 "
        "+0000\t<s2@x>\t<a@x> <b@y>\t%zu\t1\n",
        strlen(a1), strlen(a2));
    CHECK_EQ_STR(got, want);
    uint64_t high;
    CHECK_OK(nf_spool_high(sp, "comp.lang.c", &high));
    CHECK_EQ_U64(high, 2);
    CHECK_OK(nf_spool_sync(sp));
    nf_spool_close(sp);
    /* no temporary left behind */
    snprintf(path, sizeof path, "ls -A %s | grep -q incoming", root);
    CHECK(system(path) != 0);

    /* reopened: numbering resumes; a taken name is stepped over */
    CHECK_OK(nf_spool_open(&sp, root, &e));
    snprintf(path, sizeof path, "%s/comp/lang/c/3", root);
    FILE *f = fopen(path, "w");
    CHECK(f);
    fclose(f);
    char a3[4096];
    nf_t_article(a3, sizeof a3, "<s3@x>", "comp.lang.c", "third\r\n");
    store(sp, a3, &w);
    CHECK_EQ_U64(w.first_num, 4);
    nf_spool_close(sp);
}

TEST(overview_fields_unfolded_tabs_spaced)
{
    char root[512], path[600];
    snprintf(root, sizeof root, "%s/sp", tt_tmpdir());
    nf_spool *sp;
    nf_err e;
    CHECK_OK(nf_spool_open(&sp, root, &e));
    const char *a =
        "Path: a\r\nFrom: x\r\nNewsgroups: misc.test\r\nSubject: tab\there and\r\n"
        " folded\r\nDate: d\r\nMessage-ID: <o@x>\r\n\r\nbody\r\n";
    nf_spool_where w;
    store(sp, a, &w);
    size_t n;
    snprintf(path, sizeof path, "%s/misc/test/.overview", root);
    char *got = slurp(path, &n);
    char want[512];
    snprintf(want, sizeof want, "1\ttab here and folded\tx\td\t<o@x>\t\t%zu\t1\n",
             strlen(a));
    CHECK_EQ_STR(got, want);
    nf_spool_close(sp);
}

TEST(two_handles_one_spool)
{
    char root[512], path[600];
    snprintf(root, sizeof root, "%s/two", tt_tmpdir());
    nf_spool *a, *b;
    nf_err e;
    CHECK_OK(nf_spool_open(&a, root, &e));
    CHECK_OK(nf_spool_open(&b, root, &e));
    char a1[4096], a2[4096];
    nf_t_article(a1, sizeof a1, "<t1@x>", "misc.test", "one\r\n");
    nf_t_article(a2, sizeof a2, "<t2@x>", "misc.test", "two\r\n");
    nf_spool_where w1, w2;
    /* a file left by another handle's crash under the next temporary name */
    snprintf(path, sizeof path, "%s/.incoming.%ld.0", root, (long)getpid());
    FILE *f = fopen(path, "w");
    fclose(f);
    store(a, a1, &w1);
    store(b, a2, &w2); /* b numbers after what a stored */
    CHECK_EQ_U64(w1.first_num, 1);
    CHECK_EQ_U64(w2.first_num, 2);
    size_t n;
    snprintf(path, sizeof path, "%s/misc/test/2", root);
    char *got = slurp(path, &n);
    CHECK_EQ_MEM(got, a2, n);
    nf_spool_close(a);
    nf_spool_close(b);
}

TEST(spool_refusals)
{
    nf_spool *sp;
    nf_err e;
    char root[512];
    snprintf(root, sizeof root, "%s/file", tt_tmpdir());
    FILE *f = fopen(root, "w");
    fclose(f);
    CHECK(nf_spool_open(&sp, root, &e) != 0);
    CHECK_EQ_INT(e.reason, NF_R_IO);
    snprintf(root, sizeof root, "%s/s", tt_tmpdir());
    CHECK_OK(nf_spool_open(&sp, root, &e));
    uint64_t h;
    CHECK(nf_spool_high(sp, "../etc", &h) != 0);
    nf_spool_close(sp);
}
