/* cfdpd's store: saved transactions and the next sequence number survive a
 * close and reopen (durable) exactly as committed; replaced records keep
 * one copy, deleted ones are gone, a cancelled-by-crash batch (never
 * committed) leaves the previous state; and a record of real engine state
 * restores into a new entity. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cfdpd.h"
#include "sdr.h"
#include "tern_test.h"

struct seen {
    int n;
    cfdp_txn_id ids[8];
    char blobs[8][64];
    char names[8][64];
    uint32_t life[8];
    uint8_t prio[8];
};

static int each(void *arg, const cfdpd_rec *r)
{
    struct seen *s = arg;
    CHECK(s->n < 8);
    s->ids[s->n] = r->id;
    snprintf(s->blobs[s->n], 64, "%.*s", (int)r->len, (const char *)r->blob);
    snprintf(s->names[s->n], 64, "%s", r->name ? r->name : "");
    s->life[s->n] = r->lifetime_s;
    s->prio[s->n] = r->priority;
    s->n++;
    return 0;
}

static int find(const struct seen *s, uint64_t seq)
{
    for (int i = 0; i < s->n; i++)
        if (s->ids[i].seq == seq)
            return i;
    return -1;
}

static cfdpd_rec rec(uint64_t seq, const char *blob, const char *name)
{
    return (cfdpd_rec){
        {1, seq}, (uint32_t)(100 + seq), (const uint8_t *)blob, strlen(blob), name, 1};
}

TEST(records_and_sequence_survive_a_reopen)
{
    char why[512] = "";
    cfdpd_store *st;
    uint64_t next;
    CHECK_OK(cfdpd_store_open(tt_tmpdir(), 8, 0, &st, &next, why, sizeof why));
    CHECK_EQ_U64(next, 1);
    CHECK_OK(cfdpd_store_begin(st));
    cfdpd_rec a = rec(1, "alpha", "in/a"), b = rec(2, "bravo", NULL), c = rec(3, "", "c");
    CHECK_OK(cfdpd_store_put(st, &a));
    CHECK_OK(cfdpd_store_put(st, &b));
    CHECK_OK(cfdpd_store_put(st, &c));
    CHECK_OK(cfdpd_store_set_seq(st, 4));
    CHECK_OK(cfdpd_store_commit(st, 1));
    CHECK_EQ_U64(cfdpd_store_count(st), 3);
    /* replace one, delete one */
    CHECK_OK(cfdpd_store_begin(st));
    cfdpd_rec a2 = rec(1, "alpha, later", "in/a");
    CHECK_OK(cfdpd_store_put(st, &a2));
    CHECK_OK(cfdpd_store_del(st, (cfdp_txn_id){1, 2}));
    CHECK_OK(cfdpd_store_del(st, (cfdp_txn_id){9, 9})); /* absent: fine */
    CHECK_OK(cfdpd_store_set_seq(st, 7));
    CHECK_OK(cfdpd_store_commit(st, 1));
    cfdpd_store_close(st);

    CHECK_OK(cfdpd_store_open(tt_tmpdir(), 8, 0, &st, &next, why, sizeof why));
    CHECK_EQ_U64(next, 7);
    struct seen s = {0};
    CHECK_OK(cfdpd_store_each(st, each, &s));
    CHECK_EQ_INT(s.n, 2);
    int i = find(&s, 1), j = find(&s, 3);
    CHECK(i >= 0 && j >= 0);
    CHECK_EQ_STR(s.blobs[i], "alpha, later");
    CHECK_EQ_STR(s.names[i], "in/a");
    CHECK_EQ_U64(s.life[i], 101);
    CHECK_EQ_STR(s.blobs[j], "");
    CHECK_EQ_STR(s.names[j], "c");
    CHECK_EQ_INT(find(&s, 2), -1);
    cfdpd_store_close(st);
}

TEST(a_batch_not_committed_is_not_there_after_kill)
{
    char why[512] = "";
    cfdpd_store *st;
    uint64_t next;
    CHECK_OK(cfdpd_store_open(tt_tmpdir(), 8, 0, &st, &next, why, sizeof why));
    CHECK_OK(cfdpd_store_begin(st));
    cfdpd_rec a = rec(1, "kept", NULL);
    CHECK_OK(cfdpd_store_put(st, &a));
    CHECK_OK(cfdpd_store_set_seq(st, 2));
    CHECK_OK(cfdpd_store_commit(st, 1));
    cfdpd_store_close(st);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        /* a child that opens, changes without committing, and dies */
        if (cfdpd_store_open(tt_tmpdir(), 8, 0, &st, &next, why, sizeof why))
            _exit(3);
        cfdpd_store_begin(st);
        cfdpd_rec b = rec(2, "lost", NULL);
        cfdpd_store_put(st, &b);
        cfdpd_store_del(st, (cfdp_txn_id){1, 1});
        cfdpd_store_set_seq(st, 99);
        _exit(0);
    }
    int status;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_OK(cfdpd_store_open(tt_tmpdir(), 8, 0, &st, &next, why, sizeof why));
    CHECK_EQ_U64(next, 2);
    struct seen s = {0};
    CHECK_OK(cfdpd_store_each(st, each, &s));
    CHECK_EQ_INT(s.n, 1);
    CHECK_EQ_STR(s.blobs[0], "kept");
    cfdpd_store_close(st);
}

TEST(another_profile_is_refused_with_a_reason)
{
    char why[512] = "";
    cfdpd_store *st;
    uint64_t next;
    CHECK_OK(cfdpd_store_open(tt_tmpdir(), 8, 0, &st, &next, why, sizeof why));
    cfdpd_store_close(st);
    int rc = cfdpd_store_open(tt_tmpdir(), 16, 0, &st, &next, why, sizeof why);
    CHECK(rc < 0);
    CHECK_MSG(why[0] != 0, "no reason given for %d", rc);
}

TEST(config_defaults_and_errors)
{
    cfdpd_config cfg;
    char why[512];
    char *a1[] = {"cfdpd", "/n", NULL};
    CHECK_OK(cfdpd_config_load(2, a1, &cfg, why, sizeof why));
    CHECK_EQ_STR(cfg.node_dir, "/n");
    CHECK_EQ_STR(cfg.root, "/n/cfdp");
    CHECK_EQ_U64(cfg.rx_service, 65);
    CHECK_EQ_U64(cfg.tx_service, 64);
    CHECK_EQ_U64(cfg.entity, 0);
    CHECK_EQ_U64(cfg.lifetime_s, 86400);
    CHECK_EQ_U64(cfg.defaults.max_pdu, 64000);
    char *a2[] = {"cfdpd",       "--root", "/r",    "--entity", "9",
                  "--ack-timer", "500",    "--crc", "/n",       NULL};
    CHECK_OK(cfdpd_config_load(9, a2, &cfg, why, sizeof why));
    CHECK_EQ_STR(cfg.root, "/r");
    CHECK_EQ_U64(cfg.entity, 9);
    CHECK_EQ_U64(cfg.defaults.ack_timer_ms, 500);
    CHECK_EQ_INT(cfg.defaults.crc_required, 1);
    char *a3[] = {"cfdpd", "--max-pdu", "50", "/n", NULL};
    CHECK_RC(cfdpd_config_load(4, a3, &cfg, why, sizeof why), -EINVAL);
    CHECK_MSG(strstr(why, "--max-pdu") && strstr(why, "'50'"), "%s", why);
    char *a4[] = {"cfdpd", NULL};
    CHECK_RC(cfdpd_config_load(1, a4, &cfg, why, sizeof why), -EINVAL);
    CHECK(strstr(why, "node directory"));
}

/* The priority rides in header byte 26 as 0x80 | priority; a record written
 * before it was kept has 0 there and reads back as standard (1). */
TEST(priority_survives_a_reopen_and_old_records_read_as_standard)
{
    char why[512] = "";
    cfdpd_store *st;
    uint64_t next;
    CHECK_OK(cfdpd_store_open(tt_tmpdir(), 8, 0, &st, &next, why, sizeof why));
    CHECK_OK(cfdpd_store_begin(st));
    cfdpd_rec a = rec(1, "bulk", NULL), b = rec(2, "expedited", NULL),
              c = rec(3, "old", NULL);
    a.priority = 0;
    b.priority = 2;
    c.priority = 2;
    CHECK_OK(cfdpd_store_put(st, &a));
    CHECK_OK(cfdpd_store_put(st, &b));
    CHECK_OK(cfdpd_store_put(st, &c));
    CHECK_OK(cfdpd_store_commit(st, 1));
    cfdpd_store_close(st);

    /* make record 3 look as an older cfdpd wrote it: byte 26 zero */
    sdr_profile p = {.name = "cfdpd",
                     .dir = tt_tmpdir(),
                     .heap_size = 8u << 20,
                     .mode = SDR_DURABLE,
                     .commit = SDR_COMMIT_GROUP};
    sdr *s;
    CHECK_OK(sdr_open(&p, &s, why, sizeof why));
    sdr_off root;
    CHECK_OK(sdr_catalog_get(s, "cfdpd", &root));
    struct {
        uint32_t magic, version;
        uint64_t next_seq;
        sdr_off list;
    } r;
    CHECK_OK(sdr_read(s, root, &r, sizeof r));
    int patched = 0;
    for (sdr_off e = sdr_list_first(s, r.list); e; e = sdr_list_next(s, e)) {
        sdr_off obj = sdr_list_data(s, e);
        uint8_t h[28];
        CHECK_OK(sdr_read(s, obj, h, sizeof h));
        CHECK_EQ_INT(h[26] & 0x80, 0x80); /* written by this version */
        uint64_t seq;
        memcpy(&seq, h + 8, 8);
        if (seq != 3)
            continue;
        uint8_t zero = 0;
        CHECK_OK(sdr_txn_begin(s));
        CHECK_OK(sdr_write(s, obj + 26, &zero, 1));
        CHECK_OK(sdr_txn_end(s));
        patched++;
    }
    CHECK_EQ_INT(patched, 1);
    CHECK_OK(sdr_flush(s));
    sdr_close(s);

    CHECK_OK(cfdpd_store_open(tt_tmpdir(), 8, 0, &st, &next, why, sizeof why));
    struct seen sn = {0};
    CHECK_OK(cfdpd_store_each(st, each, &sn));
    CHECK_EQ_INT(sn.n, 3);
    int i1 = find(&sn, 1), i2 = find(&sn, 2), i3 = find(&sn, 3);
    CHECK(i1 >= 0 && i2 >= 0 && i3 >= 0);
    CHECK_EQ_INT(sn.prio[i1], 0);
    CHECK_EQ_INT(sn.prio[i2], 2);
    CHECK_EQ_INT(sn.prio[i3], 1);
    CHECK_EQ_STR(sn.blobs[i3], "old");
    cfdpd_store_close(st);
}
