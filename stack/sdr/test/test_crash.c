/* Crash torture: a child runs random transactions on a durable store and is
 * killed with SIGKILL at random moments; the parent reopens the store and
 * checks that it holds exactly a committed state and a consistent heap.
 *
 * Every transaction ends by storing (count, digest of all live data) in a
 * root object; the child also publishes each commit's digest in shared
 * memory before committing. After a kill, the store's count k must be the
 * last commit the child saw return (sync), or lie between the last commit
 * known durable and the last returned (group); one more is allowed if the
 * child died inside sdr_txn_end. The store's own digest field and a fresh
 * walk of its data must both equal the digest published for k. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sdr.h"
#include "tern/crc.h"
#include "tern_test.h"

#define MAXC 200000

struct shared {
    volatile uint64_t returned; /* commits that returned to the child */
    volatile uint64_t durable;  /* commits known durable */
    volatile int in_commit;
    volatile int ready;
    uint64_t digest[MAXC];
};

struct root {
    uint64_t count;
    uint64_t digest;
    sdr_off objs; /* list of data objects (heap objects or blobs) */
};

static uint64_t rnd(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* Digest of all live data, in list order, independent of addresses. */
static uint64_t walk_digest(sdr *s, sdr_off objs)
{
    static uint8_t buf[1 << 17];
    uint64_t d = 0;
    for (sdr_off e = sdr_list_first(s, objs); e; e = sdr_list_next(s, e)) {
        sdr_off o = sdr_list_data(s, e);
        uint64_t len = 0;
        uint32_t c;
        if (sdr_blob_len(s, o, &len) == 0) {
            if (len > sizeof buf || sdr_blob_read(s, o, 0, buf, (size_t)len))
                return 1; /* impossible digest value: flags the failure */
            c = tern_crc32c(0xb10b, buf, (size_t)len);
        } else {
            size_t sz;
            uint32_t n;
            if (sdr_size(s, o, &sz) || sdr_read(s, o, &n, 4) || n > sz - 4)
                return 1;
            c = tern_crc32c(0, sdr_peek(s, o, 4 + n), 4 + n);
        }
        d = d * 1000003 + c + len;
    }
    return d;
}

static sdr_profile profile(int commit)
{
    sdr_profile p;
    memset(&p, 0, sizeof p);
    p.name = "crash";
    p.dir = tt_tmpdir();
    p.heap_size = 512 << 10;
    p.mode = SDR_DURABLE;
    p.commit = commit;
    p.group_ms = 5;
    p.checkpoint_bytes = 256 << 10; /* checkpoints happen often, so kills hit them */
    return p;
}

static void child(struct shared *sh, int commit, uint64_t seed)
{
    sdr_profile p = profile(commit);
    sdr *s;
    char why[256];
    alarm(20);
    if (sdr_open(&p, &s, why, sizeof why)) {
        fprintf(stderr, "# child open: %s\n", why);
        _exit(3);
    }
    sdr_off rootoff;
    struct root r;
    if (sdr_catalog_get(s, "root", &rootoff)) {
        sdr_txn_begin(s);
        sdr_alloc(s, sizeof r, SDR_OPS, &rootoff);
        memset(&r, 0, sizeof r);
        sdr_list_create(s, 0, &r.objs);
        r.digest = walk_digest(s, r.objs);
        sdr_write(s, rootoff, &r, sizeof r);
        sdr_catalog_put(s, "root", rootoff);
        sh->digest[0] = r.digest;
        if (sdr_txn_end(s))
            _exit(4);
        sdr_flush(s);
    }
    sdr_read(s, rootoff, &r, sizeof r);
    sh->returned = sh->durable = r.count;
    sh->ready = 1;
    uint64_t x = seed | 1;
    uint8_t data[70000];
    for (;;) {
        if (r.count + 2 >= MAXC)
            pause();
        sdr_txn_begin(s);
        int ops = 1 + (int)(rnd(&x) % 6), ok = 1;
        uint64_t n = sdr_list_length(s, r.objs);
        for (int i = 0; i < ops && ok; i++) {
            unsigned what = (unsigned)(rnd(&x) % 10);
            if (what < 4 || n < 5) {
                uint32_t len = (uint32_t)(rnd(&x) % 1500);
                for (uint32_t k = 0; k < len; k++)
                    data[4 + k] = (uint8_t)rnd(&x);
                memcpy(data, &len, 4);
                sdr_off o;
                if (sdr_alloc(s, 4 + len, SDR_BULK, &o) == 0) {
                    ok = sdr_write(s, o, data, 4 + len) == 0 &&
                         sdr_list_insert_last(s, r.objs, o, NULL) == 0;
                    n++;
                }
            } else if (what < 5) {
                size_t len = (size_t)(rnd(&x) % 65536);
                for (size_t k = 0; k < len; k++)
                    data[k] = (uint8_t)rnd(&x);
                sdr_off b;
                if (sdr_blob_put(s, data, len, &b) == 0) {
                    ok = sdr_list_insert_first(s, r.objs, b, NULL) == 0;
                    n++;
                }
            } else if (what < 8) {
                sdr_off e = sdr_list_first(s, r.objs), o;
                for (uint64_t k = rnd(&x) % n; k > 0; k--)
                    e = sdr_list_next(s, e);
                ok = sdr_list_delete(s, e, &o) == 0;
                uint64_t bl;
                if (ok)
                    ok = (sdr_blob_len(s, o, &bl) == 0 ? sdr_blob_free(s, o)
                                                       : sdr_free(s, o)) == 0;
                n--;
            } else {
                sdr_off e = sdr_list_last(s, r.objs);
                for (uint64_t k = rnd(&x) % n; k > 0; k--)
                    e = sdr_list_prev(s, e);
                sdr_off o = sdr_list_data(s, e);
                uint32_t len;
                uint64_t bl;
                if (sdr_blob_len(s, o, &bl) != 0 && sdr_read(s, o, &len, 4) == 0 && len) {
                    uint32_t at = (uint32_t)(rnd(&x) % len);
                    uint8_t v = (uint8_t)rnd(&x);
                    ok = sdr_write(s, o + 4 + at, &v, 1) == 0;
                }
            }
        }
        if (!ok)
            _exit(5);
        if (rnd(&x) % 8 == 0) {
            sdr_txn_cancel(s);
            continue;
        }
        r.count++;
        r.digest = walk_digest(s, r.objs);
        sdr_write(s, rootoff, &r, sizeof r);
        sh->digest[r.count] = r.digest;
        sh->in_commit = 1;
        int rc = sdr_txn_end(s);
        if (rc) {
            fprintf(stderr, "# child commit: %s\n", tern_strerror(rc));
            _exit(6);
        }
        sh->returned = r.count;
        sh->in_commit = 0;
        sdr_usage u;
        sdr_get_usage(s, &u);
        /* Seq counts every committed transaction; the root's count lags it
         * by the one that created the root. The durable commit count is at
         * least the root count of the last transaction flushed. */
        if (commit == SDR_COMMIT_SYNC)
            sh->durable = r.count;
        else if (rnd(&x) % 16 == 0 && sdr_flush(s) == 0)
            sh->durable = r.count;
    }
}

static int run_kills(int commit, int kills, uint64_t seed)
{
    struct shared *sh =
        mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(sh != MAP_FAILED);
    uint64_t x = seed | 1, max_count = 0;
    tt_tmpdir(); /* made before the first fork, so parent and children share it */
    for (int i = 0; i < kills; i++) {
        sh->ready = 0;
        sh->in_commit = 0;
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0)
            child(sh, commit, seed + (uint64_t)i * 7919);
        /* Kill at random: sometimes during open/recovery, mostly while busy. */
        unsigned us = (unsigned)(rnd(&x) % 40000);
        if (rnd(&x) % 4)
            while (!sh->ready) {
                int st;
                if (waitpid(pid, &st, WNOHANG) == pid)
                    tt_fail(__FILE__, __LINE__, "child exited early with status %d", st);
                usleep(200);
            }
        usleep(us);
        kill(pid, SIGKILL);
        int st;
        CHECK(waitpid(pid, &st, 0) == pid);
        CHECK_MSG(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "child status %d", st);

        sdr_profile p = profile(commit);
        sdr *s;
        char why[256];
        int rc = sdr_open(&p, &s, why, sizeof why);
        CHECK_MSG(rc == 0, "kill %d: reopen: %s: %s", i, tern_strerror(rc), why);
        CHECK_MSG(sdr_check(s, why, sizeof why) == 0, "kill %d: %s", i, why);
        sdr_off rootoff;
        if (sdr_catalog_get(s, "root", &rootoff) != 0) {
            /* Killed before the first commit ever became durable. */
            CHECK_MSG(sh->returned == 0, "kill %d: root lost after %llu commits", i,
                      (unsigned long long)sh->returned);
            CHECK_OK(sdr_close(s));
            continue;
        }
        struct root r;
        CHECK_OK(sdr_read(s, rootoff, &r, sizeof r));
        uint64_t lo = sh->durable, hi = sh->returned + (sh->in_commit ? 1 : 0);
        if (!sh->ready)
            lo = 0; /* killed during open: durable/returned are the previous run's */
        if (!sh->ready)
            hi = max_count + 1;
        CHECK_MSG(r.count >= lo && r.count <= hi,
                  "kill %d (%s): store holds commit %llu, expected %llu..%llu", i,
                  commit == SDR_COMMIT_SYNC ? "sync" : "group",
                  (unsigned long long)r.count, (unsigned long long)lo,
                  (unsigned long long)hi);
        if (commit == SDR_COMMIT_SYNC && sh->ready)
            CHECK_MSG(r.count == sh->returned || (sh->in_commit && r.count == hi),
                      "kill %d: sync store holds %llu, last returned %llu", i,
                      (unsigned long long)r.count, (unsigned long long)sh->returned);
        CHECK_MSG(r.digest == sh->digest[r.count],
                  "kill %d: digest of commit %llu differs", i,
                  (unsigned long long)r.count);
        CHECK_MSG(walk_digest(s, r.objs) == r.digest,
                  "kill %d: data of commit %llu does not match its digest", i,
                  (unsigned long long)r.count);
        max_count = r.count;
        CHECK_OK(sdr_close(s));
    }
    munmap(sh, sizeof *sh);
    return (int)max_count;
}

static int kill_count(void)
{
    return getenv("TT_LONG") ? 2000 : 160;
}

TEST(sdr_crash_torture_sync)
{
    int k = kill_count();
    int commits = run_kills(SDR_COMMIT_SYNC, k, tt_seed());
    fprintf(
        stderr,
        "# crash torture (sync): %d SIGKILLs, %d commits survived, all states exact\n", k,
        commits);
}

TEST(sdr_crash_torture_group)
{
    int k = kill_count();
    int commits = run_kills(SDR_COMMIT_GROUP, k, tt_seed() ^ 0x5bd1e995);
    fprintf(
        stderr,
        "# crash torture (group): %d SIGKILLs, %d commits survived, all states committed "
        "prefixes\n",
        k, commits);
}
