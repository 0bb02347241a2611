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
#include "tern_test.h"

struct seen {
    int n;
    cfdp_txn_id ids[8];
    char blobs[8][64];
    char names[8][64];
    uint32_t life[8];
};

static int each(void *arg, const cfdpd_rec *r)
{
    struct seen *s = arg;
    CHECK(s->n < 8);
    s->ids[s->n] = r->id;
    snprintf(s->blobs[s->n], 64, "%.*s", (int)r->len, (const char *)r->blob);
    snprintf(s->names[s->n], 64, "%s", r->name ? r->name : "");
    s->life[s->n] = r->lifetime_s;
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
        {1, seq}, (uint32_t)(100 + seq), (const uint8_t *)blob, strlen(blob), name};
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
