/* The user operations (cfdp_user.h) between entities in the simulator:
 * proxy put (with its options, a missing source, a cancel), directory
 * listing (a file sent back, an unlistable directory), remote status
 * report, suspend and resume of a live transaction. Each entity has a
 * memfs, a user layer fed every indication between simulator events, and
 * executes filestore requests (cfdp_fs_requests_execute). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cfdp.h"
#include "cfdp_fs.h"
#include "cfdp_msg.h"
#include "cfdp_sim.h"
#include "cfdp_user.h"
#include "tern_test.h"

#define N 3

static uint64_t world_seed = 7; /* the simulator's PRNG */

typedef struct world {
    cfdp_sim *s;
    cfdp_memfs *m[N];
    cfdp_fs fs[N];
    cfdp_entity *e[N];
    cfdp_user *u[N];
    int rc; /* first error a user layer returned */
    /* what entity 3 (index 2) saw in Metadata: messages to user */
    int saw_hello, saw_orig;
    cfdp_txn_id orig_named;
} world;

static void look_at_options(world *w, const cfdp_ind *ind)
{
    size_t pos = 0;
    cfdp_tlv t;
    while (cfdp_tlvs_next(&ind->options, &pos, &t) == 0) {
        if (t.type != CFDP_TLV_MSG_TO_USER)
            continue;
        if (t.data.len == 5 && memcmp(t.data.ptr, "hello", 5) == 0)
            w->saw_hello++;
        cfdp_msg m;
        if (cfdp_msg_decode(t.data.ptr, t.data.len, &m, NULL) == 0 &&
            m.type == CFDP_MSG_ORIGINATING_TID) {
            w->saw_orig++;
            w->orig_named = (cfdp_txn_id){m.tid.src, m.tid.tsn};
        }
    }
}

/* Between simulator events: every indication to its user layer. */
static int pump(void *arg)
{
    world *w = arg;
    for (int i = 0; i < N; i++) {
        cfdp_ind ind;
        while (cfdp_entity_next_indication(w->e[i], &ind) == 0) {
            if (i == 2 && ind.type == CFDP_IND_METADATA)
                look_at_options(w, &ind);
            int rc = cfdp_user_on_indication(w->u[i], cfdp_sim_now(w->s), &ind);
            if (rc && !w->rc)
                w->rc = rc;
        }
    }
    return 0;
}

static void run(world *w, uint64_t limit_ms)
{
    for (int round = 0; round < 100; round++) {
        int rc = cfdp_sim_run_until(w->s, limit_ms, pump, w);
        pump(w); /* what the last event produced */
        if (rc == -ETIMEDOUT)
            return;
        if (cfdp_sim_run_idle(w->s, cfdp_sim_now(w->s)) == 0) {
            /* idle and nothing new queued by the pump: done */
            int queued = 0;
            for (int i = 0; i < N; i++)
                queued |= cfdp_entity_wants_send(w->e[i]);
            if (!queued && cfdp_sim_run_until(w->s, limit_ms, pump, w) == -EAGAIN) {
                pump(w);
                if (cfdp_sim_run_idle(w->s, cfdp_sim_now(w->s)) == 0)
                    return;
            }
        }
    }
}

static void world_init_refusing(world *w, uint64_t delay_23_ms, unsigned refuse)
{
    memset(w, 0, sizeof *w);
    CHECK_OK(cfdp_sim_new(world_seed, &w->s));
    cfdp_peer_cfg pc;
    cfdp_peer_cfg_defaults(&pc);
    for (int i = 0; i < N; i++) {
        CHECK_OK(cfdp_memfs_new(&w->m[i], &w->fs[i]));
        cfdp_entity_cfg c;
        memset(&c, 0, sizeof c);
        c.id = (uint64_t)i + 1;
        c.fs = w->fs[i];
        c.defaults = pc;
        c.fs_requests = cfdp_fs_requests_execute;
        CHECK_OK(cfdp_sim_add_entity(w->s, &c, &w->e[i]));
        cfdp_user_cfg uc = {w->fs[i], NULL, i == 1 ? refuse : 0};
        CHECK_OK(cfdp_user_new(w->e[i], &uc, &w->u[i]));
    }
    cfdp_link_cfg lk;
    memset(&lk, 0, sizeof lk);
    lk.delay_ms = 20;
    for (int i = 1; i <= N; i++)
        for (int j = 1; j <= N; j++)
            if (i != j)
                CHECK_OK(cfdp_sim_link(w->s, (uint64_t)i, (uint64_t)j, &lk));
    lk.delay_ms = delay_23_ms;
    CHECK_OK(cfdp_sim_link2(w->s, 2, 3, &lk));
}

static void world_init(world *w, uint64_t delay_23_ms)
{
    world_init_refusing(w, delay_23_ms, 0);
}

static void world_free(world *w)
{
    for (int i = 0; i < N; i++)
        cfdp_user_free(w->u[i]);
    cfdp_sim_free(w->s);
    for (int i = 0; i < N; i++)
        cfdp_memfs_free(w->m[i]);
}

static cfdp_lv lv(const char *s)
{
    cfdp_lv v = {(const uint8_t *)s, (uint8_t)strlen(s)};
    return v;
}

static int same_sha(cfdp_memfs *a, const char *pa, cfdp_memfs *b, const char *pb)
{
    uint8_t x[32], y[32];
    return !cfdp_memfs_sha256(a, pa, x) && !cfdp_memfs_sha256(b, pb, y) &&
           !memcmp(x, y, 32);
}

static int exists(cfdp_memfs *m, cfdp_fs *fs, const char *p)
{
    (void)m;
    cfdp_fs_stat st;
    return fs->ops->stat(fs->ctx, p, &st) == 0;
}

TEST(user_proxy_put_with_options)
{
    world w;
    world_init(&w, 20);
    static uint8_t data[30011];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (uint8_t)(i * 31 + 7);
    CHECK_OK(cfdp_memfs_put(w.m[1], "src.bin", data, sizeof data));
    /* 1 asks 2 to send src.bin to 3 as got.bin, renamed there afterwards
     * by a proxy filestore request, with a proxy message to user, in
     * class 1 with closure */
    cfdp_tlv fsr;
    memset(&fsr, 0, sizeof fsr);
    fsr.type = CFDP_TLV_FS_REQUEST;
    fsr.action = CFDP_FS_RENAME_FILE;
    fsr.first = lv("got.bin");
    fsr.second = lv("final.bin");
    cfdp_lv hello = lv("hello");
    cfdp_proxy_put_req r;
    memset(&r, 0, sizeof r);
    r.proxy = 2;
    r.dst = 3;
    r.src_name = "src.bin";
    r.dst_name = "got.bin";
    r.mode = CFDP_UNACKNOWLEDGED;
    r.closure = 1;
    r.fs_requests = &fsr;
    r.n_fs_requests = 1;
    r.messages = &hello;
    r.n_messages = 1;
    cfdp_txn_id req;
    CHECK_OK(cfdp_user_proxy_put(w.u[0], 0, &r, &req));
    CHECK_EQ_U64(req.src, 1);
    run(&w, 600000);
    CHECK_OK(w.rc);
    /* the file reached 3 intact, and was renamed there */
    CHECK(same_sha(w.m[1], "src.bin", w.m[2], "final.bin"));
    CHECK(!exists(w.m[2], &w.fs[2], "got.bin"));
    /* 3 saw the message to user and an originating ID naming 1's request */
    CHECK_EQ_INT(w.saw_hello, 1);
    CHECK_EQ_INT(w.saw_orig, 1);
    CHECK_EQ_U64(w.orig_named.src, req.src);
    CHECK_EQ_U64(w.orig_named.seq, req.seq);
    /* 1 got the proxy put response, with 3's filestore response */
    cfdp_user_event ev;
    CHECK_OK(cfdp_user_next_event(w.u[0], &ev));
    CHECK_EQ_INT(ev.type, CFDP_MSG_PROXY_PUT_RESP);
    CHECK_EQ_U64(ev.peer, 2);
    CHECK_EQ_U64(ev.request.seq, req.seq);
    CHECK_EQ_INT(ev.msg.condition, CFDP_COND_NO_ERROR);
    CHECK_EQ_INT(ev.msg.delivery, CFDP_DATA_COMPLETE);
    CHECK_EQ_INT(ev.msg.file_status, CFDP_FILE_RETAINED);
    CHECK_EQ_U64(ev.fs_responses.count, 1);
    size_t pos = 0;
    cfdp_tlv t;
    CHECK_OK(cfdp_tlvs_next(&ev.fs_responses, &pos, &t));
    CHECK_EQ_INT(t.action, CFDP_FS_RENAME_FILE);
    CHECK_EQ_INT(t.status, CFDP_FS_SUCCESS);
    CHECK_RC(cfdp_user_next_event(w.u[0], &ev), TERN_EEND);
    cfdp_user_stats st;
    cfdp_user_stats_get(w.u[1], &st);
    CHECK_EQ_U64(st.proxy_puts, 1);
    CHECK_EQ_U64(st.answers_sent, 1);
    world_free(&w);
}

TEST(user_proxy_put_of_a_missing_file_is_answered)
{
    world w;
    world_init(&w, 20);
    cfdp_proxy_put_req r;
    memset(&r, 0, sizeof r);
    r.proxy = 2;
    r.dst = 3;
    r.src_name = "absent.bin";
    r.dst_name = "x.bin";
    r.mode = -1;
    r.closure = -1;
    cfdp_txn_id req;
    CHECK_OK(cfdp_user_proxy_put(w.u[0], 0, &r, &req));
    run(&w, 600000);
    CHECK_RC(w.rc, -ENOENT); /* 2's user layer reports the put it could not make */
    cfdp_user_event ev;
    CHECK_OK(cfdp_user_next_event(w.u[0], &ev));
    CHECK_EQ_INT(ev.type, CFDP_MSG_PROXY_PUT_RESP);
    CHECK_EQ_INT(ev.msg.condition, CFDP_COND_FILESTORE_REJECTION);
    CHECK_EQ_INT(ev.msg.delivery, CFDP_DATA_INCOMPLETE);
    CHECK_EQ_INT(ev.msg.file_status, CFDP_FILE_REJECTED);
    CHECK(!exists(w.m[2], &w.fs[2], "x.bin"));
    world_free(&w);
}

static int count_each(void *arg, const cfdp_fs_dirent *e)
{
    (void)e;
    (*(int *)arg)++;
    return 0;
}

TEST(user_directory_listing)
{
    world w;
    world_init(&w, 20);
    CHECK_OK(cfdp_memfs_put(w.m[1], "logs/a", "abc", 3));
    CHECK_OK(cfdp_memfs_put(w.m[1], "logs/b", "0123456789", 10));
    CHECK_OK(w.fs[1].ops->mkdir(w.fs[1].ctx, "logs/old"));
    cfdp_txn_id req, bad;
    CHECK_OK(cfdp_user_dir_list(w.u[0], 0, 2, "logs", "listing.txt", &req));
    CHECK_OK(cfdp_user_dir_list(w.u[0], 0, 2, "nope", "nope.txt", &bad));
    run(&w, 600000);
    CHECK_RC(w.rc, -ENOENT); /* the unlistable directory, at 2 */
    const uint8_t *d;
    size_t n;
    CHECK_OK(cfdp_memfs_get(w.m[0], "listing.txt", &d, &n));
    const char *want = "f 3 a\nf 10 b\nd 0 old\n";
    CHECK_EQ_U64(n, strlen(want));
    CHECK_EQ_MEM(d, want, n);
    CHECK(!exists(w.m[0], &w.fs[0], "nope.txt"));
    /* both answered; order by arrival */
    int seen_ok = 0, seen_bad = 0;
    cfdp_user_event ev;
    while (cfdp_user_next_event(w.u[0], &ev) == 0) {
        CHECK_EQ_INT(ev.type, CFDP_MSG_DIR_LIST_RESP);
        if (ev.request.seq == req.seq) {
            seen_ok++;
            CHECK_EQ_INT(ev.msg.ok, 1);
            CHECK_EQ_INT(ev.delivery, CFDP_DATA_COMPLETE);
            CHECK(ev.msg.name1.len == 4 && !memcmp(ev.msg.name1.ptr, "logs", 4));
            CHECK(ev.msg.name2.len == 11 && !memcmp(ev.msg.name2.ptr, "listing.txt", 11));
        } else {
            CHECK_EQ_U64(ev.request.seq, bad.seq);
            seen_bad++;
            CHECK_EQ_INT(ev.msg.ok, 0);
        }
    }
    CHECK_EQ_INT(seen_ok, 1);
    CHECK_EQ_INT(seen_bad, 1);
    /* 2 deleted its listing file once sent; its work directory is empty */
    cfdp_fs_stat st;
    CHECK_OK(w.fs[1].ops->stat(w.fs[1].ctx, ".cfdp-user", &st));
    CHECK(st.is_dir);
    int entries = 0;
    CHECK_OK(w.fs[1].ops->list(w.fs[1].ctx, ".cfdp-user", count_each, &entries));
    CHECK_EQ_INT(entries, 0);
    world_free(&w);
}

static cfdp_user_event take(world *w, int i, uint8_t type)
{
    cfdp_user_event ev;
    CHECK_OK(cfdp_user_next_event(w->u[i], &ev));
    CHECK_EQ_INT(ev.type, type);
    return ev;
}

TEST(user_remote_suspend_report_resume)
{
    /* 2 sends a file to 3 in class 2 across a 5 s light time, so the
     * transaction lives for seconds; 1 (20 ms from 2) suspends it, asks
     * for its status with a report file, resumes it, and asks again once
     * it is over */
    world w;
    world_init(&w, 5000);
    static uint8_t data[20000];
    memset(data, 0x5A, sizeof data);
    CHECK_OK(cfdp_memfs_put(w.m[1], "big.bin", data, sizeof data));
    cfdp_put_req q;
    memset(&q, 0, sizeof q);
    q.dst = 3;
    q.src_name = "big.bin";
    q.dst_name = "big.bin";
    q.cls = 2;
    q.closure = -1;
    q.checksum_type = -1;
    q.nak_mode = -1;
    cfdp_txn_id T;
    CHECK_OK(cfdp_put(w.e[1], 0, &q, &T));

    cfdp_txn_id rq;
    CHECK_OK(cfdp_user_remote_suspend(w.u[0], 0, 2, T, &rq));
    run(&w, 1000);
    CHECK_OK(w.rc);
    cfdp_user_event ev = take(&w, 0, CFDP_MSG_SUSPEND_RESP);
    CHECK_EQ_U64(ev.request.seq, rq.seq);
    CHECK_EQ_INT(ev.msg.suspended, 1);
    CHECK_EQ_INT(ev.msg.txn_status, CFDP_TXN_ACTIVE);
    CHECK_EQ_U64(ev.msg.tid.src, T.src);
    CHECK_EQ_U64(ev.msg.tid.tsn, T.seq);
    cfdp_txn_info info;
    CHECK_OK(cfdp_report(w.e[1], T, &info));
    CHECK_EQ_INT(info.state, CFDP_STATE_SUSPENDED);

    /* a report, with a report file */
    CHECK_OK(cfdp_user_remote_report(w.u[0], cfdp_sim_now(w.s), 2, T, "T.report", &rq));
    run(&w, 2000);
    CHECK_OK(w.rc);
    ev = take(&w, 0, CFDP_MSG_STATUS_REPORT_RESP);
    CHECK_EQ_INT(ev.msg.ok, 1);
    CHECK_EQ_INT(ev.msg.txn_status, CFDP_TXN_ACTIVE);
    CHECK_EQ_INT(ev.delivery, CFDP_DATA_COMPLETE);
    const uint8_t *d;
    size_t n;
    CHECK_OK(cfdp_memfs_get(w.m[0], "T.report", &d, &n));
    char text[512];
    CHECK(n < sizeof text);
    memcpy(text, d, n);
    text[n] = 0;
    CHECK_MSG(strstr(text, "state suspended\n") && strstr(text, "role sender\n") &&
                  strstr(text, "file_size 20000\n"),
              "report: %s", text);

    /* a transaction 2 does not know: unrecognized, unsuccessful */
    cfdp_txn_id ghost = {2, 999};
    CHECK_OK(cfdp_user_remote_report(w.u[0], cfdp_sim_now(w.s), 2, ghost, NULL, &rq));
    CHECK_OK(cfdp_user_remote_suspend(w.u[0], cfdp_sim_now(w.s), 2, ghost, &rq));
    run(&w, 3000);
    CHECK_RC(w.rc, TERN_ENOTFOUND);
    w.rc = 0;
    ev = take(&w, 0, CFDP_MSG_STATUS_REPORT_RESP);
    CHECK_EQ_INT(ev.msg.ok, 0);
    CHECK_EQ_INT(ev.msg.txn_status, CFDP_TXN_UNRECOGNIZED);
    ev = take(&w, 0, CFDP_MSG_SUSPEND_RESP);
    CHECK_EQ_INT(ev.msg.suspended, 0);
    CHECK_EQ_INT(ev.msg.txn_status, CFDP_TXN_UNRECOGNIZED);

    /* the file has not arrived while suspended; resume and it completes */
    CHECK(!cfdp_memfs_get(w.m[2], "big.bin", &d, &n) ? n < sizeof data : 1);
    CHECK_OK(cfdp_user_remote_resume(w.u[0], cfdp_sim_now(w.s), 2, T, &rq));
    run(&w, 4000);
    CHECK_OK(w.rc);
    ev = take(&w, 0, CFDP_MSG_RESUME_RESP);
    CHECK_EQ_INT(ev.msg.suspended, 0);
    CHECK_EQ_INT(ev.msg.txn_status, CFDP_TXN_ACTIVE);
    run(&w, 600000);
    CHECK_OK(w.rc);
    CHECK(same_sha(w.m[1], "big.bin", w.m[2], "big.bin"));
    CHECK_OK(cfdp_user_remote_report(w.u[0], cfdp_sim_now(w.s), 2, T, NULL, &rq));
    run(&w, cfdp_sim_now(w.s) + 1000);
    ev = take(&w, 0, CFDP_MSG_STATUS_REPORT_RESP);
    /* finished: terminated while 2 still keeps it, unrecognized after */
    CHECK(ev.msg.txn_status == CFDP_TXN_TERMINATED ||
          ev.msg.txn_status == CFDP_TXN_UNRECOGNIZED);
    CHECK_RC(cfdp_user_next_event(w.u[0], &ev), TERN_EEND);
    world_free(&w);
}

TEST(user_proxy_cancel)
{
    /* the proxy's put toward 3 is slow (5 s light time); 1 cancels it
     * through 2: the answer says cancelled */
    world w;
    world_init(&w, 5000);
    static uint8_t data[5000];
    memset(data, 1, sizeof data);
    CHECK_OK(cfdp_memfs_put(w.m[1], "s.bin", data, sizeof data));
    cfdp_proxy_put_req r;
    memset(&r, 0, sizeof r);
    r.proxy = 2;
    r.dst = 3;
    r.src_name = "s.bin";
    r.dst_name = "s.bin";
    r.mode = CFDP_ACKNOWLEDGED;
    r.closure = -1;
    cfdp_txn_id req, c;
    CHECK_OK(cfdp_user_proxy_put(w.u[0], 0, &r, &req));
    run(&w, 500);
    CHECK_OK(w.rc);
    CHECK_OK(cfdp_user_proxy_cancel(w.u[0], cfdp_sim_now(w.s), 2, req, &c));
    run(&w, 900000);
    CHECK_OK(w.rc);
    cfdp_user_stats st;
    cfdp_user_stats_get(w.u[1], &st);
    CHECK_EQ_U64(st.proxy_cancels, 1);
    cfdp_user_event ev = take(&w, 0, CFDP_MSG_PROXY_PUT_RESP);
    CHECK_EQ_U64(ev.request.seq, req.seq);
    CHECK_EQ_INT(ev.msg.condition, CFDP_COND_CANCEL);
    world_free(&w);
}

TEST(user_refused_requests_are_answered_as_failures)
{
    /* entity 2 serves no user operation: each request is answered, as a
     * failure, and nothing is acted on */
    world w;
    world_init_refusing(&w, 20,
                        CFDP_USER_REFUSE_PROXY | CFDP_USER_REFUSE_LISTING |
                            CFDP_USER_REFUSE_REMOTE);
    CHECK_OK(cfdp_memfs_put(w.m[1], "secret", "s3cr3t", 6));
    CHECK_OK(cfdp_memfs_put(w.m[1], "dir/x", "x", 1));
    cfdp_proxy_put_req r;
    memset(&r, 0, sizeof r);
    r.proxy = 2;
    r.dst = 1;
    r.src_name = "secret";
    r.dst_name = "stolen";
    r.mode = -1;
    r.closure = -1;
    cfdp_txn_id q1, q2, q3, q4;
    CHECK_OK(cfdp_user_proxy_put(w.u[0], 0, &r, &q1));
    CHECK_OK(cfdp_user_dir_list(w.u[0], 0, 2, "dir", "dir.lst", &q2));
    /* a live transaction of 2's, which a served suspend would stop */
    static uint8_t data[4000];
    CHECK_OK(cfdp_memfs_put(w.m[1], "f", data, sizeof data));
    cfdp_put_req q;
    memset(&q, 0, sizeof q);
    q.dst = 3;
    q.src_name = "f";
    q.dst_name = "f";
    q.cls = 2;
    q.closure = -1;
    q.checksum_type = -1;
    q.nak_mode = -1;
    cfdp_txn_id T;
    CHECK_OK(cfdp_put(w.e[1], 0, &q, &T));
    CHECK_OK(cfdp_user_remote_suspend(w.u[0], 0, 2, T, &q3));
    CHECK_OK(cfdp_user_remote_report(w.u[0], 0, 2, T, "T.rep", &q4));
    run(&w, 600000);
    CHECK_RC(w.rc, -EACCES);
    cfdp_user_stats st;
    cfdp_user_stats_get(w.u[1], &st);
    CHECK_EQ_U64(st.refused, 4);
    int n = 0;
    cfdp_user_event ev;
    while (cfdp_user_next_event(w.u[0], &ev) == 0) {
        n++;
        if (ev.request.seq == q1.seq) {
            CHECK_EQ_INT(ev.type, CFDP_MSG_PROXY_PUT_RESP);
            CHECK_EQ_INT(ev.msg.condition, CFDP_COND_FILESTORE_REJECTION);
        } else if (ev.request.seq == q2.seq) {
            CHECK_EQ_INT(ev.type, CFDP_MSG_DIR_LIST_RESP);
            CHECK_EQ_INT(ev.msg.ok, 0);
        } else if (ev.request.seq == q3.seq) {
            CHECK_EQ_INT(ev.type, CFDP_MSG_SUSPEND_RESP);
            CHECK_EQ_INT(ev.msg.suspended, 0);
            CHECK_EQ_INT(ev.msg.txn_status, CFDP_TXN_UNRECOGNIZED);
        } else {
            CHECK_EQ_U64(ev.request.seq, q4.seq);
            CHECK_EQ_INT(ev.type, CFDP_MSG_STATUS_REPORT_RESP);
            CHECK_EQ_INT(ev.msg.ok, 0);
            CHECK_EQ_INT(ev.msg.txn_status, CFDP_TXN_UNRECOGNIZED);
        }
    }
    CHECK_EQ_INT(n, 4);
    /* nothing was sent or stopped on the requester's behalf */
    CHECK(!exists(w.m[0], &w.fs[0], "stolen"));
    CHECK(!exists(w.m[0], &w.fs[0], "dir.lst"));
    CHECK(!exists(w.m[0], &w.fs[0], "T.rep"));
    CHECK(same_sha(w.m[1], "f", w.m[2], "f")); /* T was not suspended: it completed */
    world_free(&w);
}

static void get_and_listing(void);
static uint64_t lossy_lost, lossy_dup;

TEST(user_get_and_listing_over_lossy_links)
{
    uint64_t base = tt_seed();
    for (int i = 0; i < 30; i++) {
        world_seed = base + (uint64_t)i;
        get_and_listing();
    }
    /* the runs did meet losses and duplicates */
    CHECK_MSG(lossy_lost > 30 && lossy_dup > 10, "the links lost %llu, duplicated %llu",
              (unsigned long long)lossy_lost, (unsigned long long)lossy_dup);
    printf("# 30 seeds: get and listing over lossy links complete (%llu PDUs lost, %llu "
           "duplicated)\n",
           (unsigned long long)lossy_lost, (unsigned long long)lossy_dup);
}

static void get_and_listing(void)
{
    /* a get is a proxy put whose destination is the requester: entity 1
     * fetches a file from 2 and a listing of 2's directory across links
     * that lose 10% of PDUs, duplicate 5% and reorder (jitter), in class 2
     * (the default); every answer arrives once, the files intact */
    world w;
    world_init(&w, 20);
    cfdp_link_cfg lk;
    memset(&lk, 0, sizeof lk);
    lk.delay_ms = 300;
    lk.jitter_ms = 200;
    lk.loss = 0.10;
    lk.dup = 0.05;
    CHECK_OK(cfdp_sim_link2(w.s, 1, 2, &lk));
    static uint8_t data[100003];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (uint8_t)(i ^ (i >> 8));
    CHECK_OK(cfdp_memfs_put(w.m[1], "remote/data.bin", data, sizeof data));
    CHECK_OK(cfdp_memfs_put(w.m[1], "remote/notes.txt", "n", 1));
    cfdp_proxy_put_req r;
    memset(&r, 0, sizeof r);
    r.proxy = 2;
    r.dst = 1; /* to ourselves: a get */
    r.src_name = "remote/data.bin";
    r.dst_name = "local.bin";
    r.mode = -1;
    r.closure = -1;
    cfdp_txn_id get, ls;
    CHECK_OK(cfdp_user_proxy_put(w.u[0], 0, &r, &get));
    CHECK_OK(cfdp_user_dir_list(w.u[0], 0, 2, "remote", "remote.lst", &ls));
    run(&w, 3600000);
    CHECK_OK(w.rc);
    CHECK(same_sha(w.m[1], "remote/data.bin", w.m[0], "local.bin"));
    const uint8_t *d;
    size_t n;
    CHECK_OK(cfdp_memfs_get(w.m[0], "remote.lst", &d, &n));
    const char *want = "f 100003 data.bin\nf 1 notes.txt\n";
    CHECK_EQ_U64(n, strlen(want));
    CHECK_EQ_MEM(d, want, n);
    int got_put = 0, got_ls = 0;
    cfdp_user_event ev;
    while (cfdp_user_next_event(w.u[0], &ev) == 0) {
        if (ev.type == CFDP_MSG_PROXY_PUT_RESP) {
            got_put++;
            CHECK_EQ_U64(ev.request.seq, get.seq);
            CHECK_EQ_INT(ev.msg.condition, CFDP_COND_NO_ERROR);
            CHECK_EQ_INT(ev.msg.delivery, CFDP_DATA_COMPLETE);
        } else {
            CHECK_EQ_INT(ev.type, CFDP_MSG_DIR_LIST_RESP);
            CHECK_EQ_U64(ev.request.seq, ls.seq);
            CHECK_EQ_INT(ev.msg.ok, 1);
            CHECK_EQ_INT(ev.delivery, CFDP_DATA_COMPLETE);
            got_ls++;
        }
    }
    CHECK_EQ_INT(got_put, 1);
    CHECK_EQ_INT(got_ls, 1);
    cfdp_sim_stats ss;
    cfdp_sim_stats_get(w.s, &ss);
    lossy_lost += ss.lost;
    lossy_dup += ss.duplicated;
    world_free(&w);
}
