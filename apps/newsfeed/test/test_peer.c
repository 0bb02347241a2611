/* Publisher and receiver end to end without the network: an article in,
 * a payload across, the same bytes out; replays, duplicates, foreign keys,
 * over-size and unmapped articles each refused and counted by reason. */
#include <errno.h>

#include "nf_test.h"

static char dir[512];

static nf_config *make_config(const char *pubname, const char *extra)
{
    char skp[600], pkp[600], text[2048];
    snprintf(dir, sizeof dir, "%s", tt_tmpdir());
    snprintf(skp, sizeof skp, "%s/%s.key", dir, pubname);
    snprintf(pkp, sizeof pkp, "%s/%s.pub", dir, pubname);
    uint8_t pk[32], sk[64];
    CHECK_OK(nf_keygen(pk, sk));
    nf_err e;
    CHECK_OK(nf_key_write_files(skp, pkp, pk, sk, &e));
    snprintf(text, sizeof text,
             "publisher %s\nsecret-key %s.key\ntrust %s %s.pub\ngroup comp.* 7\n%s",
             pubname, pubname, pubname, pubname, extra);
    nf_config *c;
    int rc = nf_config_parse(&c, "t.conf", text, strlen(text), dir);
    CHECK_MSG(rc == 0, "%s", nf_config_diag_at(c, 0));
    return c;
}

TEST(publish_receive_commit_replay_duplicate)
{
    nf_config *c = make_config("pub.example", "max-article-size 20k\n");
    nf_publisher *p;
    nf_err e;
    CHECK_OK(nf_publisher_new(&p, c, 1, &e));
    nf_seen *seen;
    CHECK_OK(nf_seen_new(&seen));
    nf_receiver *r;
    CHECK_OK(nf_receiver_new(&r, c, seen));
    static uint8_t pay[40000], pay2[40000];
    char art[8192];
    size_t n = nf_t_article(art, sizeof art, "<p1@x>", "comp.lang.c", "hi\r\n");
    CHECK(nf_publisher_payload_max(p) <= sizeof pay);
    nf_published res;
    CHECK_OK(nf_publisher_publish(p, art, n, 1000, pay, sizeof pay, &res, &e));
    CHECK_EQ_U64(res.seq, 1);
    CHECK_EQ_U64(res.group, 7);
    CHECK_EQ_STR(res.msgid, "<p1@x>");
    CHECK_EQ_U64(nf_publisher_next_seq(p), 2);
    nf_received got;
    CHECK_OK(nf_receiver_accept(r, pay, res.payload_len, &got, &e));
    CHECK_EQ_U64(got.len, n);
    CHECK_EQ_MEM(got.article, art, n);
    CHECK_EQ_U64(got.info.seq, 1);
    CHECK_OK(nf_receiver_commit(r, &got, &e));
    CHECK_RC(nf_receiver_commit(r, &got, &e), TERN_ESTATE);
    /* the same payload again: a replay */
    CHECK_RC(nf_receiver_accept(r, pay, res.payload_len, &got, &e), TERN_EEXIST);
    CHECK_EQ_INT(e.reason, NF_R_REPLAY);
    /* the same article under a new number: a duplicate */
    nf_published res2;
    CHECK_OK(nf_publisher_publish(p, art, n, 1001, pay2, sizeof pay2, &res2, &e));
    CHECK_EQ_U64(res2.seq, 2);
    CHECK_RC(nf_receiver_accept(r, pay2, res2.payload_len, &got, &e), TERN_EEXIST);
    CHECK_EQ_INT(e.reason, NF_R_DUPLICATE);
    /* ... whose number is settled: not a gap, and a replay if it comes again */
    CHECK_RC(nf_receiver_accept(r, pay2, res2.payload_len, &got, &e), TERN_EEXIST);
    CHECK_EQ_INT(e.reason, NF_R_REPLAY);
    /* accepted but not committed: a resend is still taken */
    n = nf_t_article(art, sizeof art, "<p3@x>", "comp.lang.c", "three\r\n");
    CHECK_OK(nf_publisher_publish(p, art, n, 1002, pay, sizeof pay, &res, &e));
    CHECK_OK(nf_receiver_accept(r, pay, res.payload_len, &got, &e));
    CHECK_OK(nf_receiver_accept(r, pay, res.payload_len, &got, &e));
    CHECK_OK(nf_receiver_commit(r, &got, &e));
    CHECK_EQ_U64(nf_receiver_count(r, NF_OK), 2);
    CHECK_EQ_U64(nf_receiver_count(r, NF_R_REPLAY), 2);
    CHECK_EQ_U64(nf_receiver_count(r, NF_R_DUPLICATE), 1);
    /* gaps: #4 lost in transit, #5 arrives */
    n = nf_t_article(art, sizeof art, "<p4@x>", "comp.lang.c", "four\r\n");
    CHECK_OK(nf_publisher_publish(p, art, n, 1003, pay, sizeof pay, &res, &e));
    n = nf_t_article(art, sizeof art, "<p5@x>", "comp.lang.c", "five\r\n");
    CHECK_OK(nf_publisher_publish(p, art, n, 1004, pay2, sizeof pay2, &res2, &e));
    CHECK_OK(nf_receiver_accept(r, pay2, res2.payload_len, &got, &e));
    CHECK_OK(nf_receiver_commit(r, &got, &e));
    nf_range gaps[4];
    size_t ng;
    CHECK_OK(nf_seen_gaps(seen, "pub.example", gaps, 4, &ng));
    CHECK_EQ_U64(ng, 1);
    CHECK(gaps[0].lo == 4 && gaps[0].hi == 4);
    nf_receiver_free(r);
    nf_seen_free(seen);
    nf_publisher_free(p);
    nf_config_free(c);
}

TEST(publisher_refusals)
{
    nf_config *c = make_config("pub", "max-article-size 2k\n");
    nf_publisher *p;
    nf_err e;
    CHECK_RC(nf_publisher_new(&p, c, 0, &e), -EINVAL);
    CHECK_OK(nf_publisher_new(&p, c, 100, &e));
    static uint8_t pay[8000];
    char art[8192], body[4000];
    memset(body, 'x', sizeof body - 3);
    memcpy(body + sizeof body - 3, "\r\n", 3);
    size_t n = nf_t_article(art, sizeof art, "<big@x>", "comp.lang.c", body);
    nf_published res;
    CHECK_RC(nf_publisher_publish(p, art, n, 1, pay, sizeof pay, &res, &e), TERN_ETOOBIG);
    CHECK_EQ_INT(e.reason, NF_R_TOO_BIG);
    n = nf_t_article(art, sizeof art, "<alt@x>", "alt.test,misc.test", "x\r\n");
    CHECK_RC(nf_publisher_publish(p, art, n, 1, pay, sizeof pay, &res, &e),
             TERN_ENOTFOUND);
    CHECK_EQ_INT(e.reason, NF_R_NO_GROUP);
    /* the second group maps */
    n = nf_t_article(art, sizeof art, "<alt2@x>", "alt.test,comp.x", "x\r\n");
    CHECK_OK(nf_publisher_publish(p, art, n, 1, pay, sizeof pay, &res, &e));
    CHECK_EQ_U64(res.seq, 100);
    CHECK_RC(nf_publisher_publish(p, "garbage", 7, 1, pay, sizeof pay, &res, &e),
             TERN_EMALFORMED);
    CHECK_EQ_INT(e.reason, NF_R_BAD_ARTICLE);
    CHECK_EQ_U64(nf_publisher_next_seq(p), 101); /* refusals use no number */
    nf_publisher_free(p);
    nf_config_free(c);
}

TEST(receiver_refuses_foreign_key_and_counts)
{
    nf_config *pc = make_config("pub", "");
    nf_config *other = make_config("pub2", ""); /* trusts pub2 only */
    nf_publisher *p;
    nf_err e;
    CHECK_OK(nf_publisher_new(&p, pc, 1, &e));
    nf_seen *seen;
    CHECK_OK(nf_seen_new(&seen));
    nf_receiver *r;
    CHECK_OK(nf_receiver_new(&r, other, seen));
    static uint8_t pay[20000];
    char art[4096];
    size_t n = nf_t_article(art, sizeof art, "<f@x>", "comp.x", "x\r\n");
    nf_published res;
    CHECK_OK(nf_publisher_publish(p, art, n, 1, pay, sizeof pay, &res, &e));
    nf_received got;
    CHECK_RC(nf_receiver_accept(r, pay, res.payload_len, &got, &e), TERN_ENOTFOUND);
    CHECK_EQ_INT(e.reason, NF_R_UNKNOWN_KEY);
    pay[res.payload_len - 1] ^= 1;
    CHECK(nf_receiver_accept(r, pay, res.payload_len, &got, &e) != 0);
    CHECK_RC(nf_receiver_accept(r, pay, 10, &got, &e), TERN_ETRUNCATED);
    CHECK_EQ_U64(nf_receiver_count(r, NF_R_UNKNOWN_KEY), 2);
    CHECK_EQ_U64(nf_receiver_count(r, NF_R_MALFORMED), 1);
    CHECK_EQ_U64(nf_receiver_count(r, NF_OK), 0);
    CHECK_EQ_U64(nf_seen_publishers(seen), 0); /* nothing stored of what was refused */
    nf_receiver_free(r);
    nf_seen_free(seen);
    nf_publisher_free(p);
    nf_config_free(pc);
    nf_config_free(other);
}

TEST(publisher_sequence_survives_restart)
{
    nf_config *c = make_config("pub", "");
    char path[700];
    snprintf(path, sizeof path, "%s/seq", dir);
    nf_err e;
    uint64_t next = 0;
    CHECK_RC(nf_publisher_load_seq(path, &next, &e), -ENOENT);
    nf_publisher *p;
    CHECK_OK(nf_publisher_new(&p, c, 1, &e));
    static uint8_t pay[20000];
    char art[4096];
    nf_published res;
    for (int i = 0; i < 3; i++) {
        char id[32];
        snprintf(id, sizeof id, "<r%d@x>", i);
        size_t n = nf_t_article(art, sizeof art, id, "comp.x", "x\r\n");
        CHECK_OK(nf_publisher_publish(p, art, n, 1, pay, sizeof pay, &res, &e));
    }
    CHECK_OK(nf_publisher_save(p, path, &e));
    nf_publisher_free(p);
    CHECK_OK(nf_publisher_load_seq(path, &next, &e));
    CHECK_EQ_U64(next, 4);
    CHECK_OK(nf_publisher_new(&p, c, next, &e));
    size_t n = nf_t_article(art, sizeof art, "<r9@x>", "comp.x", "x\r\n");
    CHECK_OK(nf_publisher_publish(p, art, n, 1, pay, sizeof pay, &res, &e));
    CHECK_EQ_U64(res.seq, 4);
    nf_publisher_free(p);
    /* damaged files are refused, not read as 0 or a prefix */
    static const char *bad[] = {"newsfeed-next-seq \n",
                                "newsfeed-next-seq 0\n",
                                "newsfeed-next-seq 12",
                                "newsfeed-next-seq 1x\n",
                                "newsfeed-next-seq 99999999999999999999999\n",
                                "7\n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        FILE *f = fopen(path, "w");
        fputs(bad[i], f);
        fclose(f);
        CHECK_MSG(nf_publisher_load_seq(path, &next, &e) == TERN_ECORRUPT, "case %zu", i);
    }
    nf_config_free(c);
}

TEST(compression_level_zero_never_compresses)
{
    nf_config *c = make_config("pub", "compression-level 0\n");
    nf_publisher *p;
    nf_err e;
    CHECK_OK(nf_publisher_new(&p, c, 1, &e));
    static uint8_t pay[40000];
    char art[8192], body[4000];
    memset(body, 'z', sizeof body - 3);
    memcpy(body + sizeof body - 3, "\r\n", 3);
    size_t n = nf_t_article(art, sizeof art, "<z@x>", "comp.x", body);
    nf_published res;
    CHECK_OK(nf_publisher_publish(p, art, n, 1, pay, sizeof pay, &res, &e));
    CHECK_EQ_INT(res.compressed, 0);
    CHECK_EQ_INT(pay[5], 0);
    nf_publisher_free(p);
    nf_config_free(c);
    c = make_config("pub2", "");
    CHECK_OK(nf_publisher_new(&p, c, 1, &e));
    CHECK_OK(nf_publisher_publish(p, art, n, 1, pay, sizeof pay, &res, &e));
    CHECK_EQ_INT(res.compressed, 1);
    CHECK(res.payload_len < n / 4);
    nf_publisher_free(p);
    nf_config_free(c);
}

/* The receiving pipeline in its durable order: accept, spool, sync, commit,
 * save; after a "restart" from the saved state the same payload is a
 * replay and the spool has the article once, byte for byte. */
TEST(receive_spool_save_restart)
{
    nf_config *c = make_config("pub", "spool sp\nstate seen\n");
    nf_publisher *p;
    nf_err e;
    CHECK_OK(nf_publisher_new(&p, c, 1, &e));
    static uint8_t pay[20000];
    char art[4096];
    size_t n = nf_t_article(art, sizeof art, "<d1@x>", "comp.lang.c,comp.std.c", "d\r\n");
    nf_published res;
    CHECK_OK(nf_publisher_publish(p, art, n, 1, pay, sizeof pay, &res, &e));
    nf_seen *seen;
    CHECK_OK(nf_seen_new(&seen));
    nf_receiver *r;
    CHECK_OK(nf_receiver_new(&r, c, seen));
    nf_spool *sp;
    CHECK_OK(nf_spool_open(&sp, nf_config_spool(c), &e));
    nf_received got;
    CHECK_OK(nf_receiver_accept(r, pay, res.payload_len, &got, &e));
    nf_spool_where w;
    CHECK_OK(nf_spool_store(sp, got.article, got.len, &got.msg, &w, &e));
    CHECK_EQ_U64(w.ngroups, 2);
    CHECK_OK(nf_spool_sync(sp));
    CHECK_OK(nf_receiver_commit(r, &got, &e));
    CHECK_OK(nf_seen_save(seen, nf_config_state(c), &e));
    nf_receiver_free(r);
    nf_seen_free(seen);
    nf_spool_close(sp);

    CHECK_OK(nf_seen_load(&seen, nf_config_state(c), &e));
    CHECK_OK(nf_receiver_new(&r, c, seen));
    CHECK_RC(nf_receiver_accept(r, pay, res.payload_len, &got, &e), TERN_EEXIST);
    CHECK_EQ_INT(e.reason, NF_R_REPLAY);
    char path[700];
    snprintf(path, sizeof path, "%s/comp/std/c/1", nf_config_spool(c));
    FILE *f = fopen(path, "rb");
    CHECK(f);
    static char back[8192];
    size_t bn = fread(back, 1, sizeof back, f);
    fclose(f);
    CHECK_EQ_U64(bn, n);
    CHECK_EQ_MEM(back, art, n);
    snprintf(path, sizeof path, "%s/comp/std/c/2", nf_config_spool(c));
    CHECK(fopen(path, "rb") == NULL);
    nf_receiver_free(r);
    nf_seen_free(seen);
    nf_publisher_free(p);
    nf_config_free(c);
}
