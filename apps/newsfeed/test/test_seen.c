/* Sequence windows and the Message-ID history: replays refused, duplicates
 * dropped, gaps listed and filled, the window's edge counted as lost, and
 * the state surviving a save and load (and refusing a damaged file). */
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nf_test.h"

static nf_seen *fresh(void)
{
    nf_seen *s;
    CHECK_OK(nf_seen_new(&s));
    return s;
}

static int mark(nf_seen *s, const char *pub, uint64_t seq, const char *id, nf_reason *why)
{
    nf_err e = {0};
    int rc = nf_seen_mark(s, pub, seq, id, id ? strlen(id) : 0, &e);
    *why = e.reason;
    return rc;
}

static nf_seen_pub pubstate(const nf_seen *s, size_t i)
{
    nf_seen_pub p;
    CHECK_OK(nf_seen_publisher_at(s, i, &p));
    return p;
}

TEST(in_order_then_replays_refused)
{
    nf_seen *s = fresh();
    nf_reason why;
    char id[32];
    for (uint64_t q = 1; q <= 100; q++) {
        snprintf(id, sizeof id, "<%llu@x>", (unsigned long long)q);
        CHECK_OK(mark(s, "p", q, id, &why));
    }
    nf_seen_pub p = pubstate(s, 0);
    CHECK_EQ_U64(p.floor, 100);
    CHECK_EQ_U64(p.high, 100);
    CHECK_EQ_U64(p.missing, 0);
    CHECK_EQ_U64(p.accepted, 100);
    CHECK_RC(mark(s, "p", 100, "<new@x>", &why), TERN_EEXIST);
    CHECK_EQ_INT(why, NF_R_REPLAY);
    CHECK_RC(mark(s, "p", 3, "<new@x>", &why), TERN_EEXIST);
    CHECK_EQ_INT(why, NF_R_REPLAY);
    /* a new number with an old Message-ID: a duplicate */
    CHECK_RC(mark(s, "p", 101, "<7@x>", &why), TERN_EEXIST);
    CHECK_EQ_INT(why, NF_R_DUPLICATE);
    /* the same id from another publisher too (cross-fed) */
    CHECK_RC(mark(s, "q", 1, "<7@x>", &why), TERN_EEXIST);
    CHECK_EQ_INT(why, NF_R_DUPLICATE);
    /* check changes nothing */
    nf_err e;
    CHECK_OK(nf_seen_check(s, "p", 101, "<101@x>", 7, &e));
    CHECK_OK(nf_seen_check(s, "p", 101, "<101@x>", 7, &e));
    CHECK_EQ_U64(pubstate(s, 0).high, 100);
    CHECK_RC(nf_seen_check(s, "p", 0, NULL, 0, &e), -EINVAL);
    nf_seen_free(s);
}

TEST(first_article_sets_floor_late_joiner)
{
    nf_seen *s = fresh();
    nf_reason why;
    CHECK_OK(mark(s, "p", 1000, NULL, &why));
    nf_seen_pub p = pubstate(s, 0);
    CHECK_EQ_U64(p.floor, 1000);
    CHECK_EQ_U64(p.missing, 0);
    CHECK_RC(mark(s, "p", 999, NULL, &why), TERN_EEXIST);
    CHECK_EQ_INT(why, NF_R_REPLAY);
    nf_seen_free(s);
}

TEST(expected_publisher_takes_reordered_first_articles)
{
    nf_seen *s = fresh();
    nf_reason why;
    CHECK_OK(nf_seen_expect(s, "p", 0));
    CHECK_RC(nf_seen_expect(s, "p", 0), TERN_EEXIST);
    CHECK_OK(mark(s, "p", 5, NULL, &why));
    CHECK_OK(
        mark(s, "p", 3, NULL, &why)); /* older than the first arrival: still wanted */
    nf_range r[4];
    size_t n;
    CHECK_OK(nf_seen_gaps(s, "p", r, 4, &n));
    CHECK_EQ_U64(n, 2);
    CHECK(r[0].lo == 1 && r[0].hi == 2 && r[1].lo == 4 && r[1].hi == 4);
    nf_seen_free(s);
}

TEST(gaps_listed_and_filled)
{
    nf_seen *s = fresh();
    nf_reason why;
    static const uint64_t got[] = {1, 2, 5, 9, 10, 12};
    for (size_t i = 0; i < 6; i++)
        CHECK_OK(mark(s, "p", got[i], NULL, &why));
    nf_range r[8];
    size_t n;
    CHECK_OK(nf_seen_gaps(s, "p", r, 8, &n));
    CHECK_EQ_U64(n, 3);
    CHECK(r[0].lo == 3 && r[0].hi == 4);
    CHECK(r[1].lo == 6 && r[1].hi == 8);
    CHECK(r[2].lo == 11 && r[2].hi == 11);
    CHECK_RC(nf_seen_gaps(s, "p", r, 2, &n), TERN_ENOSPACE);
    CHECK_EQ_U64(n, 2);
    CHECK_RC(nf_seen_gaps(s, "zz", r, 8, &n), TERN_ENOTFOUND);
    nf_seen_pub p = pubstate(s, 0);
    CHECK_EQ_U64(p.floor, 2);
    CHECK_EQ_U64(p.missing, 6);
    /* late arrivals fill the gaps; a repeat of one is a replay */
    CHECK_OK(mark(s, "p", 4, NULL, &why));
    CHECK_RC(mark(s, "p", 4, NULL, &why), TERN_EEXIST);
    CHECK_EQ_INT(why, NF_R_REPLAY);
    CHECK_OK(mark(s, "p", 3, NULL, &why));
    CHECK_EQ_U64(pubstate(s, 0).floor, 5);
    for (uint64_t q = 6; q <= 8; q++)
        CHECK_OK(mark(s, "p", q, NULL, &why));
    CHECK_OK(mark(s, "p", 11, NULL, &why));
    p = pubstate(s, 0);
    CHECK_EQ_U64(p.floor, 12);
    CHECK_EQ_U64(p.missing, 0);
    CHECK_OK(nf_seen_gaps(s, "p", r, 8, &n));
    CHECK_EQ_U64(n, 0);
    /* settle gives up on numbers */
    CHECK_OK(mark(s, "p", 20, NULL, &why));
    CHECK_OK(nf_seen_settle(s, "p", 15));
    p = pubstate(s, 0);
    CHECK_EQ_U64(p.floor, 15);
    CHECK_EQ_U64(p.lost, 3);
    CHECK_EQ_U64(p.missing, 4);
    nf_seen_free(s);
}

TEST(window_edge_counts_lost)
{
    nf_seen *s = fresh();
    nf_reason why;
    CHECK_OK(mark(s, "p", 1, NULL, &why));
    CHECK_OK(mark(s, "p", 3, NULL, &why)); /* 2 missing */
    CHECK_OK(mark(s, "p", 3 + NF_SEEN_WINDOW, NULL, &why));
    nf_seen_pub p = pubstate(s, 0);
    CHECK_EQ_U64(p.high, 3 + NF_SEEN_WINDOW);
    CHECK_EQ_U64(p.floor, p.high - NF_SEEN_WINDOW);
    CHECK_EQ_U64(p.lost, 1); /* #2 fell out */
    CHECK_EQ_U64(p.missing, NF_SEEN_WINDOW - 1);
    CHECK_RC(mark(s, "p", 2, NULL, &why), TERN_EEXIST);
    /* a jump far beyond the window */
    CHECK_OK(mark(s, "p", 1000000, NULL, &why));
    p = pubstate(s, 0);
    CHECK_EQ_U64(p.floor, 1000000 - NF_SEEN_WINDOW);
    CHECK_EQ_U64(p.lost + p.missing + p.accepted, 1000000);
    CHECK_EQ_U64(p.missing, NF_SEEN_WINDOW - 1);
    /* and the highest number a uint64 holds */
    CHECK_OK(mark(s, "p", UINT64_MAX, NULL, &why));
    CHECK_RC(mark(s, "p", UINT64_MAX, NULL, &why), TERN_EEXIST);
    nf_seen_free(s);
}

TEST(history_forgets_oldest)
{
    nf_seen *s = fresh();
    nf_reason why;
    char id[32];
    for (uint64_t q = 1; q <= NF_SEEN_HISTORY + 10; q++) {
        snprintf(id, sizeof id, "<%llu@h>", (unsigned long long)q);
        CHECK_OK(mark(s, "p", q, id, &why));
    }
    nf_err e;
    CHECK_OK(nf_seen_check(s, "p", NF_SEEN_HISTORY + 11, "<5@h>", 5, &e));
    CHECK_RC(nf_seen_check(s, "p", NF_SEEN_HISTORY + 11, "<11@h>", 6, &e), TERN_EEXIST);
    snprintf(id, sizeof id, "<%u@h>", NF_SEEN_HISTORY + 10);
    CHECK_RC(nf_seen_check(s, "p", NF_SEEN_HISTORY + 11, id, strlen(id), &e),
             TERN_EEXIST);
    nf_seen_free(s);
}

TEST(save_load_roundtrip_and_damage)
{
    nf_seen *s = fresh();
    nf_reason why;
    static const uint64_t got[] = {1, 2, 5, 9};
    for (size_t i = 0; i < 4; i++) {
        char id[16];
        snprintf(id, sizeof id, "<%zu@s>", i);
        CHECK_OK(mark(s, "pa", got[i], id, &why));
    }
    CHECK_OK(mark(s, "pb", 70, "<b@s>", &why));
    char path[512];
    snprintf(path, sizeof path, "%s/seen", tt_tmpdir());
    nf_err e;
    nf_seen *l;
    CHECK_RC(nf_seen_load(&l, path, &e), -ENOENT);
    CHECK_OK(nf_seen_save(s, path, &e));
    CHECK_OK(nf_seen_load(&l, path, &e));
    CHECK_EQ_U64(nf_seen_publishers(l), 2);
    nf_range r[4];
    size_t n;
    CHECK_OK(nf_seen_gaps(l, "pa", r, 4, &n));
    CHECK_EQ_U64(n, 2);
    CHECK(r[0].lo == 3 && r[0].hi == 4 && r[1].lo == 6 && r[1].hi == 8);
    CHECK_RC(mark(l, "pa", 5, NULL, &why), TERN_EEXIST);
    CHECK_RC(mark(l, "pb", 71, "<0@s>", &why), TERN_EEXIST);
    CHECK_EQ_INT(why, NF_R_DUPLICATE);
    CHECK_OK(mark(l, "pa", 3, NULL, &why));
    nf_seen_pub a = pubstate(l, 0), b = pubstate(s, 0);
    CHECK_EQ_U64(a.accepted, b.accepted + 1);
    nf_seen_free(l);
    /* no temporary left; one flipped byte anywhere is refused */
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    struct stat st;
    CHECK(stat(tmp, &st) < 0);
    FILE *f = fopen(path, "r+b");
    CHECK(f);
    CHECK(fseek(f, 30, SEEK_SET) == 0);
    int c = fgetc(f);
    CHECK(fseek(f, 30, SEEK_SET) == 0);
    fputc(c ^ 1, f);
    fclose(f);
    CHECK_RC(nf_seen_load(&l, path, &e), TERN_ECORRUPT);
    CHECK_MSG(strstr(e.text, "checksum"), "%s", e.text);
    /* a truncated file too */
    CHECK_OK(nf_seen_save(s, path, &e));
    CHECK(truncate(path, 20) == 0);
    CHECK_RC(nf_seen_load(&l, path, &e), TERN_ECORRUPT);
    nf_seen_free(s);
}
