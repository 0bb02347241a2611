#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sdr.h"
#include "sdr_io.h"
#include "tern_test.h"

static sdr_profile prof(int mode, int commit, uint64_t heap)
{
    sdr_profile p;
    memset(&p, 0, sizeof p);
    p.name = "t";
    p.dir = tt_tmpdir();
    p.heap_size = heap;
    p.mode = mode;
    p.commit = commit;
    return p;
}

static sdr *open_ok(const sdr_profile *p)
{
    sdr *s = NULL;
    char why[512];
    int rc = sdr_open(p, &s, why, sizeof why);
    CHECK_MSG(rc == 0, "sdr_open: %s: %s", tern_strerror(rc), why);
    return s;
}

static void check_ok(const sdr *s)
{
    char why[512];
    int rc = sdr_check(s, why, sizeof why);
    CHECK_MSG(rc == 0, "sdr_check: %s", why);
}

TEST(sdr_alloc_write_read_free_memory)
{
    sdr_profile p = prof(SDR_MEMORY, SDR_COMMIT_SYNC, 1 << 20);
    sdr *s = open_ok(&p);
    sdr_off a, b;
    char buf[100];
    CHECK_RC(sdr_alloc(s, 10, SDR_OPS, &a), TERN_ENOTXN);
    CHECK_OK(sdr_txn_begin(s));
    CHECK_RC(sdr_txn_begin(s), TERN_EINTXN);
    CHECK_EQ_STR(tern_strerror(TERN_EINTXN),
                 "a transaction is already open; transactions do not nest");
    CHECK_OK(sdr_alloc(s, 100, SDR_OPS, &a));
    CHECK_OK(sdr_alloc(s, 5000, SDR_BULK, &b));
    CHECK(a != 0 && b != 0 && a != b);
    size_t sz;
    CHECK_OK(sdr_size(s, a, &sz));
    CHECK(sz >= 100);
    CHECK_OK(sdr_write(s, a, "hello, store", 13));
    CHECK_OK(sdr_zero(s, b, 5000));
    CHECK_OK(sdr_txn_end(s));
    CHECK_OK(sdr_read(s, a, buf, 13));
    CHECK_EQ_STR(buf, "hello, store");
    CHECK(memcmp(sdr_peek(s, a, 13), "hello", 5) == 0);
    CHECK_RC(sdr_write(s, a, "x", 1), TERN_ENOTXN);
    sdr_usage u;
    CHECK_OK(sdr_get_usage(s, &u));
    CHECK_EQ_INT(u.objects, 2);
    CHECK_EQ_U64(u.in_use + u.free, u.heap_size);
    check_ok(s);
    CHECK_OK(sdr_txn_begin(s));
    CHECK_OK(sdr_free(s, a));
    CHECK_RC(sdr_free(s, a), -EINVAL);
    CHECK_RC(sdr_free(s, b + 8), -EINVAL);
    CHECK_OK(sdr_free(s, b));
    CHECK_OK(sdr_txn_end(s));
    CHECK_OK(sdr_get_usage(s, &u));
    CHECK_EQ_INT(u.objects, 0);
    CHECK_EQ_U64(u.in_use, 0);
    CHECK_EQ_U64(u.largest_free + 32, u.heap_size);
    check_ok(s);
    CHECK_OK(sdr_close(s));
}

/* Cancel restores every byte of the heap, allocator state included. */
TEST(sdr_cancel_is_byte_identical)
{
    sdr_profile p = prof(SDR_MEMORY, SDR_COMMIT_SYNC, 256 << 10);
    sdr *s = open_ok(&p);
    sdr_off objs[50], l;
    CHECK_OK(sdr_txn_begin(s));
    for (int i = 0; i < 50; i++) {
        CHECK_OK(sdr_alloc(s, (size_t)(16 + i * 37), SDR_OPS, &objs[i]));
        CHECK_OK(sdr_write(s, objs[i], &i, sizeof i));
    }
    CHECK_OK(sdr_list_create(s, 7, &l));
    CHECK_OK(sdr_catalog_put(s, "root", l));
    CHECK_OK(sdr_txn_end(s));
    uint64_t hs = 256 << 10;
    uint8_t *before = malloc(hs), *after = malloc(hs);
    CHECK(before && after);
    memcpy(before, sdr_peek(s, 4096, 0) - 4096, hs);

    CHECK_OK(sdr_txn_begin(s));
    for (int i = 0; i < 50; i += 2)
        CHECK_OK(sdr_free(s, objs[i]));
    sdr_off x;
    CHECK_OK(sdr_alloc(s, 3000, SDR_BULK, &x));
    CHECK_OK(sdr_write(s, x, "garbage", 7));
    CHECK_OK(sdr_list_insert_last(s, l, x, NULL));
    CHECK_OK(sdr_catalog_put(s, "other", x));
    CHECK_OK(sdr_catalog_del(s, "root"));
    CHECK_OK(sdr_txn_cancel(s));
    CHECK_RC(sdr_txn_cancel(s), TERN_ENOTXN);

    memcpy(after, sdr_peek(s, 4096, 0) - 4096, hs);
    CHECK_EQ_MEM(before, after, hs);
    sdr_off r;
    CHECK_OK(sdr_catalog_get(s, "root", &r));
    CHECK_EQ_U64(r, l);
    CHECK_RC(sdr_catalog_get(s, "other", &r), TERN_ENOTFOUND);
    check_ok(s);
    free(before);
    free(after);
    CHECK_OK(sdr_close(s));
}

TEST(sdr_lists)
{
    sdr_profile p = prof(SDR_MEMORY, SDR_COMMIT_SYNC, 1 << 20);
    sdr *s = open_ok(&p);
    sdr_off l, e1, e2, e3, e0, d;
    CHECK_OK(sdr_txn_begin(s));
    CHECK_OK(sdr_list_create(s, 99, &l));
    CHECK_OK(sdr_list_insert_last(s, l, 2, &e2));
    CHECK_OK(sdr_list_insert_first(s, l, 1, &e1));
    CHECK_OK(sdr_list_insert_after(s, e2, 3, &e3));
    CHECK_OK(sdr_list_insert_before(s, e1, 0, &e0));
    CHECK_OK(sdr_txn_end(s));
    CHECK_EQ_U64(sdr_list_length(s, l), 4);
    CHECK_EQ_U64(sdr_list_user_data(s, l), 99);
    uint64_t want = 0;
    for (sdr_off e = sdr_list_first(s, l); e; e = sdr_list_next(s, e))
        CHECK_EQ_U64(sdr_list_data(s, e), want++);
    CHECK_EQ_U64(want, 4);
    for (sdr_off e = sdr_list_last(s, l); e; e = sdr_list_prev(s, e))
        CHECK_EQ_U64(sdr_list_data(s, e), --want);
    CHECK_EQ_U64(sdr_list_of(s, e3), l);
    CHECK_OK(sdr_txn_begin(s));
    CHECK_OK(sdr_list_delete(s, e1, &d));
    CHECK_EQ_U64(d, 1);
    CHECK_RC(sdr_list_delete(s, e1, &d), -EINVAL);
    CHECK_OK(sdr_list_set_user_data(s, l, 5));
    CHECK_OK(sdr_txn_end(s));
    CHECK_EQ_U64(sdr_list_length(s, l), 3);
    CHECK_EQ_U64(sdr_list_next(s, e0), e2);
    CHECK_EQ_U64(sdr_list_prev(s, e2), e0);
    CHECK_EQ_U64(sdr_list_user_data(s, l), 5);
    CHECK_OK(sdr_txn_begin(s));
    CHECK_OK(sdr_list_destroy(s, l));
    CHECK_OK(sdr_txn_end(s));
    CHECK_EQ_U64(sdr_list_first(s, l), 0);
    sdr_usage u;
    CHECK_OK(sdr_get_usage(s, &u));
    CHECK_EQ_INT(u.objects, 0);
    check_ok(s);
    CHECK_OK(sdr_close(s));
}

TEST(sdr_bounds_check)
{
    sdr_profile p = prof(SDR_MEMORY, SDR_COMMIT_SYNC, 1 << 20);
    p.flags = SDR_BOUNDS_CHECK;
    sdr *s = open_ok(&p);
    sdr_off a, b;
    char buf[200] = {0};
    CHECK_OK(sdr_txn_begin(s));
    CHECK_OK(sdr_alloc(s, 64, SDR_OPS, &a));
    CHECK_OK(sdr_alloc(s, 64, SDR_OPS, &b));
    CHECK_OK(sdr_write(s, a, buf, 64));
    CHECK_OK(sdr_write(s, a + 10, buf, 54));
    CHECK_RC(sdr_write(s, a, buf, 65), -EINVAL);    /* runs into the next block */
    CHECK_RC(sdr_write(s, b - 8, buf, 4), -EINVAL); /* a block header */
    CHECK_OK(sdr_free(s, b));
    CHECK_RC(sdr_write(s, b, buf, 4), -EINVAL); /* freed */
    CHECK_OK(sdr_txn_end(s));
    CHECK_OK(sdr_close(s));
}

/* Bulk storage is refused once only the reserve is left; operational
 * allocations still succeed out of the reserve. */
TEST(sdr_reserve_refuses_bulk_cleanly)
{
    sdr_profile p = prof(SDR_MEMORY, SDR_COMMIT_SYNC, 1 << 20);
    p.reserve_pct = 25;
    sdr *s = open_ok(&p);
    sdr_off o;
    int n = 0, rc;
    CHECK_OK(sdr_txn_begin(s));
    while ((rc = sdr_alloc(s, 4000, SDR_BULK, &o)) == 0)
        n++;
    CHECK_RC(rc, TERN_EFULL);
    sdr_usage u;
    CHECK_OK(sdr_get_usage(s, &u));
    CHECK(u.in_use <= u.heap_size - u.reserve);
    CHECK(u.in_use + 4032 > u.heap_size - u.reserve);
    CHECK(n > 150);
    CHECK_OK(sdr_alloc(s, 4000, SDR_OPS, &o));
    CHECK_OK(sdr_txn_end(s));
    check_ok(s);
    CHECK_OK(sdr_close(s));
}

TEST(sdr_durable_reopen_sync_and_group)
{
    for (int commit = 0; commit < 2; commit++) {
        sdr_profile p = prof(SDR_DURABLE, commit, 1 << 20);
        char name[8];
        snprintf(name, sizeof name, "s%d", commit);
        p.name = name;
        sdr *s = open_ok(&p);
        sdr_off a, l, got;
        CHECK_OK(sdr_txn_begin(s));
        CHECK_OK(sdr_alloc(s, 32, SDR_OPS, &a));
        CHECK_OK(sdr_write(s, a, "persisted", 10));
        CHECK_OK(sdr_list_create(s, a, &l));
        CHECK_OK(sdr_catalog_put(s, "mod", l));
        CHECK_OK(sdr_txn_end(s));
        CHECK_OK(sdr_txn_begin(s));
        CHECK_OK(sdr_write(s, a, "cancelled", 10));
        CHECK_OK(sdr_txn_cancel(s));
        CHECK_OK(sdr_close(s));

        s = open_ok(&p);
        CHECK_OK(sdr_catalog_get(s, "mod", &got));
        CHECK_EQ_U64(got, l);
        char buf[10];
        CHECK_OK(sdr_read(s, sdr_list_user_data(s, l), buf, 10));
        CHECK_EQ_STR(buf, "persisted");
        check_ok(s);
        CHECK_OK(sdr_close(s));
    }
}

/* Acknowledgements wait for durability: under group commit durable_seq
 * trails commit_seq until the helper's flush, which the eventfd announces;
 * in the other modes the two are equal and there is no descriptor. */
TEST(sdr_durable_seq_and_fd)
{
    sdr_profile p = prof(SDR_MEMORY, 0, 1 << 20);
    sdr *s = open_ok(&p);
    sdr_off a;
    CHECK_EQ_INT(sdr_durable_fd(s), -1);
    CHECK_OK(sdr_txn_begin(s));
    CHECK_OK(sdr_alloc(s, 32, SDR_OPS, &a));
    CHECK_OK(sdr_txn_end(s));
    CHECK(sdr_commit_seq(s) > 0);
    CHECK_EQ_U64(sdr_durable_seq(s), sdr_commit_seq(s));
    CHECK_OK(sdr_close(s));

    p = prof(SDR_DURABLE, SDR_COMMIT_SYNC, 1 << 20);
    p.name = "seqsync";
    s = open_ok(&p);
    CHECK_EQ_INT(sdr_durable_fd(s), -1);
    CHECK_OK(sdr_txn_begin(s));
    CHECK_OK(sdr_alloc(s, 32, SDR_OPS, &a));
    CHECK_OK(sdr_txn_end(s));
    CHECK_EQ_U64(sdr_durable_seq(s), sdr_commit_seq(s));
    CHECK_OK(sdr_close(s));

    p = prof(SDR_DURABLE, SDR_COMMIT_GROUP, 1 << 20);
    p.name = "seqgroup";
    s = open_ok(&p);
    int fd = sdr_durable_fd(s);
    CHECK(fd >= 0);
    for (int i = 0; i < 20; i++) {
        uint64_t before = sdr_commit_seq(s);
        CHECK_OK(sdr_txn_begin(s));
        CHECK_OK(sdr_alloc(s, 32, SDR_OPS, &a));
        CHECK_OK(sdr_txn_end(s));
        uint64_t mark = sdr_commit_seq(s);
        CHECK_EQ_U64(mark, before + 1);
        CHECK(sdr_durable_seq(s) <= mark);
        /* wait on the descriptor alone, as an event loop would */
        while (sdr_durable_seq(s) < mark) {
            struct pollfd pf = {.fd = fd, .events = POLLIN};
            CHECK_MSG(poll(&pf, 1, 5000) == 1, "commit %" PRIu64 " not durable in 5 s",
                      mark);
            uint64_t v;
            CHECK(read(fd, &v, sizeof v) == sizeof v && v > 0);
        }
    }
    CHECK_OK(sdr_close(s));
}

TEST(sdr_profile_mismatch_names_both_values)
{
    sdr_profile p = prof(SDR_DURABLE, SDR_COMMIT_SYNC, 1 << 20);
    sdr *s = open_ok(&p);
    CHECK_OK(sdr_close(s));
    p.heap_size = 2 << 20;
    char why[512];
    CHECK_RC(sdr_open(&p, &s, why, sizeof why), TERN_EPROFILE);
    CHECK_MSG(strstr(why, "created with heap size 1048576") &&
                  strstr(why, "asks for 2097152") && strstr(why, "remove"),
              "message: %s", why);
    p.heap_size = 1 << 20;
    p.reserve_pct = 30;
    CHECK_RC(sdr_open(&p, &s, why, sizeof why), TERN_EPROFILE);
    CHECK_MSG(strstr(why, "20%") && strstr(why, "30%"), "message: %s", why);
    p.name = "bad/name";
    CHECK_RC(sdr_open(&p, &s, why, sizeof why), -EINVAL);
}

TEST(sdr_blobs_durable)
{
    sdr_profile p = prof(SDR_DURABLE, SDR_COMMIT_GROUP, 1 << 20);
    sdr *s = open_ok(&p);
    size_t n = 300000;
    uint8_t *data = malloc(n), *back = malloc(n);
    CHECK(data && back);
    for (size_t i = 0; i < n; i++)
        data[i] = (uint8_t)(i * 7 + 3);
    sdr_off b1, b2;
    CHECK_OK(sdr_txn_begin(s));
    CHECK_OK(sdr_blob_put(s, data, n, &b1));
    CHECK_OK(sdr_blob_put(s, data, 1000, &b2));
    CHECK_OK(sdr_catalog_put(s, "b1", b1));
    CHECK_OK(sdr_txn_end(s));
    CHECK_OK(sdr_close(s));
    s = open_ok(&p);
    uint64_t len;
    CHECK_OK(sdr_catalog_get(s, "b1", &b1));
    CHECK_OK(sdr_blob_len(s, b1, &len));
    CHECK_EQ_U64(len, n);
    CHECK_OK(sdr_blob_read(s, b1, 0, back, n));
    CHECK_EQ_MEM(back, data, n);
    CHECK_OK(sdr_blob_read(s, b1, 1000, back, 10));
    CHECK_EQ_MEM(back, data + 1000, 10);
    sdr_usage u;
    CHECK_OK(sdr_get_usage(s, &u));
    CHECK_EQ_U64(u.blob_bytes, n + 1000);
    CHECK_OK(sdr_txn_begin(s));
    CHECK_OK(sdr_blob_free(s, b1));
    CHECK_OK(sdr_blob_free(s, b2));
    CHECK_OK(sdr_txn_end(s));
    CHECK_OK(sdr_get_usage(s, &u));
    CHECK_EQ_U64(u.blob_bytes, 0);
    CHECK_OK(sdr_close(s));
    /* A reopen removes the now-empty segment file. */
    s = open_ok(&p);
    char path[512];
    snprintf(path, sizeof path, "%s/t.blob.1", tt_tmpdir());
    CHECK(access(path, F_OK) != 0);
    check_ok(s);
    CHECK_OK(sdr_close(s));
    free(data);
    free(back);
}

/* A gathered blob reads back as its pieces joined, in either store; only a
 * memory store lends its bytes in place. */
TEST(sdr_blob_putv_and_peek)
{
    static const char a[] = "head:", c[] = ":tail";
    uint8_t mid[70000];
    for (size_t i = 0; i < sizeof mid; i++)
        mid[i] = (uint8_t)(i * 13 + 1);
    struct iovec v[3] = {{(void *)a, 5}, {mid, sizeof mid}, {(void *)c, 5}};
    size_t n = 10 + sizeof mid;
    uint8_t *back = malloc(n);
    CHECK(back);
    for (int mode = SDR_MEMORY; mode <= SDR_DURABLE; mode++) {
        sdr_profile p = prof(mode, SDR_COMMIT_SYNC, 1 << 20);
        sdr *s = open_ok(&p);
        sdr_off b;
        CHECK_OK(sdr_txn_begin(s));
        CHECK_OK(sdr_blob_putv(s, v, 3, &b));
        CHECK_OK(sdr_txn_end(s));
        uint64_t len;
        CHECK_OK(sdr_blob_len(s, b, &len));
        CHECK_EQ_U64(len, n);
        CHECK_OK(sdr_blob_read(s, b, 0, back, n));
        CHECK_EQ_MEM(back, "head:", 5);
        CHECK_EQ_MEM(back + 5, mid, sizeof mid);
        CHECK_EQ_MEM(back + 5 + sizeof mid, ":tail", 5);
        const void *view;
        size_t vn;
        int rc = sdr_blob_peek(s, b, &view, &vn);
        if (mode == SDR_MEMORY) {
            CHECK_OK(rc);
            CHECK_EQ_U64(vn, n);
            CHECK_EQ_MEM(view, back, n);
        } else {
            CHECK_RC(rc, -ENOTSUP);
        }
        CHECK_RC(sdr_blob_putv(s, v, 3, &b), TERN_ENOTXN);
        check_ok(s);
        CHECK_OK(sdr_close(s));
    }
    free(back);
}

/* An emptied segment's file goes once a checkpoint image records it dead,
 * without waiting for a reopen. */
TEST(sdr_blob_segment_reclaimed_at_checkpoint_and_its_file_reused)
{
    sdr_profile p = prof(SDR_DURABLE, SDR_COMMIT_GROUP, 1 << 20);
    p.checkpoint_bytes = 64 << 10;
    sdr *s = open_ok(&p);
    size_t n = 40 << 20;
    uint8_t *data = calloc(1, n);
    CHECK(data);
    sdr_off b1, b2, o;
    CHECK_OK(sdr_txn_begin(s));
    CHECK_OK(sdr_blob_put(s, data, n, &b1));
    CHECK_OK(sdr_txn_end(s));
    CHECK_OK(sdr_txn_begin(s));
    CHECK_OK(sdr_blob_put(s, data, n, &b2)); /* does not fit segment 1: segment 2 */
    CHECK_OK(sdr_txn_end(s));
    CHECK_OK(sdr_txn_begin(s));
    CHECK_OK(sdr_blob_free(s, b1));
    CHECK_OK(sdr_txn_end(s));
    char path[512];
    snprintf(path, sizeof path, "%s/t.blob.1", tt_tmpdir());
    CHECK(access(path, F_OK) == 0); /* dead, but no image says so yet */
    CHECK_OK(sdr_txn_begin(s));
    CHECK_OK(sdr_alloc(s, 100, SDR_OPS, &o));
    CHECK_OK(sdr_txn_end(s));
    for (int i = 0; i < 2000; i++) { /* enough log for a checkpoint */
        CHECK_OK(sdr_txn_begin(s));
        CHECK_OK(sdr_write(s, o, data, 64));
        CHECK_OK(sdr_txn_end(s));
    }
    CHECK_OK(sdr_close(s)); /* waits for the checkpoint to finish */
    CHECK(access(path, F_OK) != 0);
    /* Its file is kept as a spare, and the next new segment is that file. */
    char spare[512], seg3[512];
    snprintf(spare, sizeof spare, "%s/t.spare.1", tt_tmpdir());
    snprintf(seg3, sizeof seg3, "%s/t.blob.3", tt_tmpdir());
    struct stat sp, s3;
    CHECK_MSG(stat(spare, &sp) == 0,
              "the emptied segment's file was not kept as a spare");
    s = open_ok(&p);
    uint64_t len;
    CHECK_OK(sdr_blob_len(s, b2, &len));
    CHECK_EQ_U64(len, n);
    CHECK_OK(sdr_blob_read(s, b2, 0, data, n));
    for (size_t i = 0; i < n; i += 4096)
        data[i] = (uint8_t)(i / 4096 + 1);
    sdr_off b3;
    CHECK_OK(sdr_txn_begin(s));
    CHECK_OK(sdr_blob_put(s, data, n, &b3)); /* does not fit segment 2: segment 3 */
    CHECK_OK(sdr_txn_end(s));
    CHECK_OK(sdr_flush(s));
    CHECK(access(spare, F_OK) != 0);
    CHECK_OK(stat(seg3, &s3));
    CHECK_MSG(s3.st_ino == sp.st_ino, "segment 3 is a new file, not the spare");
    check_ok(s);
    CHECK_OK(sdr_close(s));
    s = open_ok(&p);
    uint8_t *got = malloc(n);
    CHECK(got);
    CHECK_OK(sdr_blob_read(s, b3, 0, got, n));
    CHECK(memcmp(got, data, n) == 0);
    CHECK_OK(sdr_blob_read(s, b2, 0, got, 4096));
    check_ok(s);
    CHECK_OK(sdr_close(s));
    free(got);
    free(data);
}

/* One blob larger than a segment (a 200 MB bundle, say) gets a segment to
 * itself, the current one. Freed, that segment takes no more blobs: it ends
 * at once, the commit starts a checkpoint, and its file is removed (not kept
 * as a spare) without waiting for more traffic — an idle node gives the disk
 * back. The store goes on with a new segment, and reopens cleanly. */
static void big_blob_file_goes(int commit)
{
    sdr_profile p = prof(SDR_DURABLE, commit, 1 << 20);
    sdr *s = open_ok(&p);
    size_t n = 80 << 20;
    uint8_t *data = calloc(1, n);
    CHECK(data);
    sdr_off b, small;
    CHECK_OK(sdr_txn_begin(s));
    CHECK_OK(sdr_blob_put(s, data, n, &b));
    CHECK_OK(sdr_txn_end(s));
    CHECK_OK(sdr_flush(s));
    char path[512], spare[512];
    snprintf(path, sizeof path, "%s/t.blob.1", tt_tmpdir());
    snprintf(spare, sizeof spare, "%s/t.spare.1", tt_tmpdir());
    CHECK(access(path, F_OK) == 0);
    CHECK_OK(sdr_txn_begin(s));
    CHECK_OK(sdr_blob_free(s, b));
    CHECK_OK(sdr_txn_end(s));
    CHECK_OK(sdr_flush(s));
    /* nothing else happens on the store: the checkpoint that commit started
     * lets the file go on its own */
    for (int i = 0; i < 500 && access(path, F_OK) == 0; i++)
        poll(NULL, 0, 10);
    CHECK_MSG(access(path, F_OK) != 0,
              "the emptied 80 MiB segment's file is still there");
    CHECK_MSG(access(spare, F_OK) != 0, "an 80 MiB file was kept as a spare");
    sdr_usage u;
    CHECK_OK(sdr_get_usage(s, &u));
    CHECK_EQ_U64(u.blob_bytes, 0);
    CHECK_OK(sdr_txn_begin(s));
    CHECK_OK(sdr_blob_put(s, "after", 5, &small));
    CHECK_OK(sdr_txn_end(s));
    check_ok(s);
    CHECK_OK(sdr_close(s));
    s = open_ok(&p);
    char got[5];
    CHECK_OK(sdr_blob_read(s, small, 0, got, 5));
    CHECK(memcmp(got, "after", 5) == 0);
    check_ok(s);
    CHECK_OK(sdr_close(s));
    free(data);
}

TEST(sdr_big_blob_file_goes_when_freed_group)
{
    big_blob_file_goes(SDR_COMMIT_GROUP);
}

TEST(sdr_big_blob_file_goes_when_freed_sync)
{
    big_blob_file_goes(SDR_COMMIT_SYNC);
}

/* Under group commit the loop moves on to a new segment without waiting:
 * the flusher writes what the old one still needs (blobs held in memory)
 * and syncs and closes it later. Blobs put across several segment changes,
 * some freed young, all read back intact before and after a reopen. */
TEST(sdr_blob_segments_change_without_waiting)
{
    sdr_profile p = prof(SDR_DURABLE, SDR_COMMIT_GROUP, 4 << 20);
    sdr *s = open_ok(&p);
    enum { N = 220, LEN = 1000003 };
    uint8_t *buf = malloc(LEN), *got = malloc(LEN);
    CHECK(buf && got);
    static sdr_off keep[N];
    uint64_t kept = 0;
    for (int i = 0; i < N; i++) {
        for (size_t j = 0; j < LEN; j += 4096)
            buf[j] = (uint8_t)(i + j / 4096);
        CHECK_OK(sdr_txn_begin(s));
        CHECK_OK(sdr_blob_put(s, buf, LEN, &keep[i]));
        CHECK_OK(sdr_txn_end(s));
        if (i % 3 == 1) { /* every third dies at once */
            CHECK_OK(sdr_txn_begin(s));
            CHECK_OK(sdr_blob_free(s, keep[i]));
            CHECK_OK(sdr_txn_end(s));
            keep[i] = 0;
        } else {
            kept++;
        }
    }
    for (int pass = 0; pass < 2; pass++) {
        uint64_t n = 0;
        for (int i = 0; i < N; i++) {
            if (!keep[i])
                continue;
            CHECK_OK(sdr_blob_read(s, keep[i], 0, got, LEN));
            for (size_t j = 0; j < LEN; j += 4096)
                CHECK_EQ_INT(got[j], (uint8_t)(i + j / 4096));
            n++;
        }
        CHECK_EQ_U64(n, kept);
        check_ok(s);
        CHECK_OK(sdr_close(s));
        if (pass == 0)
            s = open_ok(&p);
    }
    free(buf);
    free(got);
}

/* 1 if the file system under dir takes O_DIRECT writes. */
static int dir_takes_direct(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/direct-probe", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_DIRECT, 0644);
    if (fd >= 0)
        close(fd);
    unlink(path);
    return fd >= 0;
}

/* A store's large blobs, of lengths that are no multiple of a page, between
 * small blobs written through the page cache: every byte reads back, before
 * and after a reopen (from the file then), and the usage says how many went
 * past the page cache. */
static void direct_blobs_run(unsigned flags, const sdr_io *io, uint64_t want_direct)
{
    sdr_profile p = prof(SDR_DURABLE, SDR_COMMIT_GROUP, 4 << 20);
    p.flags = flags;
    p.io = io;
    sdr *s = open_ok(&p);
    enum { N = 24 };
    static sdr_off off[2 * N];
    static size_t len[2 * N];
    uint64_t large = 0;
    uint8_t *buf = malloc(1 << 20), *got = malloc(1 << 20);
    CHECK(buf && got);
    for (int i = 0; i < 2 * N; i++) {
        len[i] = i % 2 ? 100 + (size_t)i : 65536 + (size_t)i * 7777;
        for (size_t j = 0; j < len[i]; j++)
            buf[j] = (uint8_t)(i * 31 + j * 7 + j / 251);
        CHECK_OK(sdr_txn_begin(s));
        CHECK_OK(sdr_blob_put(s, buf, len[i], &off[i]));
        CHECK_OK(sdr_txn_end(s));
        if (i % 2 == 0)
            large += len[i];
    }
    CHECK_OK(sdr_flush(s));
    sdr_usage u;
    CHECK_OK(sdr_get_usage(s, &u));
    CHECK_EQ_U64(u.blob_direct, want_direct ? large : 0);
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < 2 * N; i++) {
            memset(got, 0, len[i]);
            CHECK_OK(sdr_blob_read(s, off[i], 0, got, len[i]));
            for (size_t j = 0; j < len[i]; j++)
                if (got[j] != (uint8_t)(i * 31 + j * 7 + j / 251))
                    CHECK_MSG(0, "pass %d blob %d byte %zu: %u", pass, i, j, got[j]);
        }
        check_ok(s);
        CHECK_OK(sdr_close(s));
        if (pass == 0)
            s = open_ok(&p);
    }
    free(buf);
    free(got);
}

TEST(sdr_large_blobs_written_past_the_page_cache)
{
    direct_blobs_run(0, NULL, dir_takes_direct(tt_tmpdir()));
}

TEST(sdr_buffered_flag_writes_through_the_page_cache)
{
    direct_blobs_run(SDR_BUFFERED, NULL, 0);
}

/* A file system that opens O_DIRECT descriptors but refuses their writes
 * (as some do, for an alignment they need): the store falls back to plain
 * writes and loses nothing. */
static struct {
    struct sdr_io io;
    int dfd[64];
    int n, refused;
} refuse;

static int refuse_open_direct(void *ctx, int fd)
{
    int d = dup(fd);
    if (d >= 0 && refuse.n < 64)
        refuse.dfd[refuse.n++] = d;
    return d < 0 ? -errno : d;
}

static ssize_t refuse_pwrite(void *ctx, int fd, const void *b, size_t n, uint64_t off)
{
    for (int i = 0; i < refuse.n; i++)
        if (refuse.dfd[i] == fd) {
            refuse.refused++;
            return -EINVAL;
        }
    return sdr_io_posix()->pwrite(ctx, fd, b, n, off);
}

static int refuse_close(void *ctx, int fd)
{
    for (int i = 0; i < refuse.n; i++)
        if (refuse.dfd[i] == fd)
            refuse.dfd[i] = refuse.dfd[--refuse.n];
    return sdr_io_posix()->close(ctx, fd);
}

TEST(sdr_direct_write_refused_falls_back)
{
    refuse.io = *sdr_io_posix();
    refuse.io.open_direct = refuse_open_direct;
    refuse.io.pwrite = refuse_pwrite;
    refuse.io.close = refuse_close;
    direct_blobs_run(0, &refuse.io, 0);
    CHECK_EQ_INT(refuse.refused, 1); /* once: then the store stops trying */
    CHECK_EQ_INT(refuse.n, 0);       /* and closed what it opened */
}
