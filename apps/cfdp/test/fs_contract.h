/* Test helper: what every cfdp_fs must do (cfdp_fs.h's contract), run
 * against the memfs and the posixfs alike. */
#ifndef CFDP_TEST_FS_CONTRACT_H
#define CFDP_TEST_FS_CONTRACT_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cfdp_fs.h"
#include "tern_test.h"

static inline int fs_open(const cfdp_fs *fs, const char *p, unsigned fl, void **f)
{
    return fs->ops->open(fs->ctx, p, fl, f);
}

/* Writes data as a whole new file. */
static inline void fs_put(const cfdp_fs *fs, const char *path, const void *data,
                          size_t len)
{
    void *f;
    CHECK_OK(fs_open(fs, path, CFDP_FS_WR | CFDP_FS_CREAT | CFDP_FS_TRUNC, &f));
    CHECK_OK(fs->ops->write(fs->ctx, f, 0, data, len));
    CHECK_OK(fs->ops->close(fs->ctx, f));
}

/* Reads a whole file into a malloc'd buffer (NUL-terminated); *len gets its size. */
static inline char *fs_slurp(const cfdp_fs *fs, const char *path, size_t *len)
{
    cfdp_fs_stat st;
    void *f;
    CHECK_OK(fs->ops->stat(fs->ctx, path, &st));
    CHECK(!st.is_dir);
    char *buf = malloc((size_t)st.size + 1);
    CHECK(buf);
    CHECK_OK(fs_open(fs, path, CFDP_FS_RD, &f));
    size_t got = 0;
    CHECK_OK(fs->ops->read(fs->ctx, f, 0, buf, (size_t)st.size + 1, &got));
    CHECK_EQ_U64(got, st.size);
    CHECK_OK(fs->ops->close(fs->ctx, f));
    buf[got] = 0;
    if (len)
        *len = got;
    return buf;
}

static inline int fs_exists(const cfdp_fs *fs, const char *path)
{
    cfdp_fs_stat st;
    return fs->ops->stat(fs->ctx, path, &st) == 0;
}

struct fs_names {
    char text[512];
};

static int fs_names_each(void *arg, const cfdp_fs_dirent *e)
{
    struct fs_names *n = arg;
    size_t l = strlen(n->text);
    snprintf(n->text + l, sizeof n->text - l, "%s%s%s:%llu", l ? " " : "", e->name,
             e->is_dir ? "/" : "", (unsigned long long)e->size);
    return 0;
}

/* "a:3 d/:0 ..." for directory path, in listing order. */
static inline const char *fs_listing(const cfdp_fs *fs, const char *path,
                                     struct fs_names *n)
{
    n->text[0] = 0;
    CHECK_OK(fs->ops->list(fs->ctx, path, fs_names_each, n));
    return n->text;
}

static int fs_stop_each(void *arg, const cfdp_fs_dirent *e)
{
    (*(int *)arg)++;
    return 77;
}

/* Every operation and error code of the contract, on an empty filestore. */
static inline void fs_contract(const cfdp_fs *fs)
{
    void *ctx = fs->ctx;
    const cfdp_fs_ops *o = fs->ops;
    void *f, *g;
    size_t got;
    char buf[64];
    cfdp_fs_stat st;
    struct fs_names names;

    /* the root is an empty directory */
    CHECK_OK(o->stat(ctx, "", &st));
    CHECK(st.is_dir);
    CHECK_EQ_STR(fs_listing(fs, "", &names), "");

    /* open's flags */
    CHECK_RC(fs_open(fs, "a", CFDP_FS_RD, &f), -ENOENT);
    CHECK_RC(fs_open(fs, "a", CFDP_FS_CREAT, &f), -EINVAL);
    CHECK_RC(fs_open(fs, "a", CFDP_FS_RD | CFDP_FS_TRUNC, &f), -EINVAL);
    CHECK_OK(fs_open(fs, "a", CFDP_FS_RD | CFDP_FS_WR | CFDP_FS_CREAT, &f));
    CHECK_RC(fs_open(fs, "a", CFDP_FS_WR | CFDP_FS_CREAT | CFDP_FS_EXCL, &g), -EEXIST);

    /* out-of-order writes with a hole: the hole reads as zeros */
    CHECK_OK(o->write(ctx, f, 6, "world", 5));
    CHECK_OK(o->write(ctx, f, 0, "hel", 3));
    CHECK_OK(o->stat(ctx, "a", &st));
    CHECK(!st.is_dir);
    CHECK_EQ_U64(st.size, 11);
    memset(buf, 'x', sizeof buf);
    CHECK_OK(o->read(ctx, f, 0, buf, sizeof buf, &got));
    CHECK_EQ_U64(got, 11);
    CHECK_EQ_MEM(buf, "hel\0\0\0world", 11);
    CHECK_OK(o->read(ctx, f, 9, buf, 10, &got)); /* short at the end */
    CHECK_EQ_U64(got, 2);
    CHECK_EQ_MEM(buf, "ld", 2);
    CHECK_OK(o->read(ctx, f, 11, buf, 10, &got));
    CHECK_EQ_U64(got, 0);
    CHECK_OK(o->read(ctx, f, 1000, buf, 10, &got));
    CHECK_EQ_U64(got, 0);
    CHECK_OK(o->write(ctx, f, 3, "lo ", 3));
    CHECK_OK(o->sync(ctx, f));
    CHECK_OK(o->truncate(ctx, f, 5));
    CHECK_OK(o->truncate(ctx, f, 7)); /* extends with zeros */
    CHECK_OK(o->read(ctx, f, 0, buf, sizeof buf, &got));
    CHECK_EQ_U64(got, 7);
    CHECK_EQ_MEM(buf, "hello\0\0", 7);
    CHECK_OK(o->close(ctx, f));

    /* a read-only handle does not write, a write-only one does not read */
    CHECK_OK(fs_open(fs, "a", CFDP_FS_RD, &f));
    CHECK_RC(o->write(ctx, f, 0, "x", 1), -EBADF);
    CHECK_RC(o->truncate(ctx, f, 0), -EBADF);
    CHECK_OK(o->close(ctx, f));
    CHECK_OK(fs_open(fs, "a", CFDP_FS_WR, &f));
    CHECK_RC(o->read(ctx, f, 0, buf, 1, &got), -EBADF);
    CHECK_OK(o->close(ctx, f));
    /* TRUNC empties */
    CHECK_OK(fs_open(fs, "a", CFDP_FS_WR | CFDP_FS_TRUNC, &f));
    CHECK_OK(o->close(ctx, f));
    CHECK_OK(o->stat(ctx, "a", &st));
    CHECK_EQ_U64(st.size, 0);

    /* directories */
    CHECK_OK(o->mkdir(ctx, "d"));
    CHECK_RC(o->mkdir(ctx, "d"), -EEXIST);
    CHECK_RC(o->mkdir(ctx, "a"), -EEXIST);
    CHECK_RC(o->mkdir(ctx, "x/y"), -ENOENT);
    CHECK_RC(o->mkdir(ctx, "a/y"), -ENOTDIR);
    CHECK_OK(o->mkdir(ctx, "d/e"));
    fs_put(fs, "d/f2", "22", 2);
    fs_put(fs, "d/f1", "1", 1);
    fs_put(fs, "d/e/deep", "deep", 4);
    CHECK_EQ_STR(fs_listing(fs, "d", &names), "e/:0 f1:1 f2:2");
    CHECK_EQ_STR(fs_listing(fs, "d/", &names), "e/:0 f1:1 f2:2");
    CHECK_EQ_STR(fs_listing(fs, "./d//e", &names), "deep:4");
    CHECK_EQ_STR(fs_listing(fs, "", &names), "a:0 d/:0");
    int calls = 0;
    CHECK_RC(o->list(ctx, "d", fs_stop_each, &calls), 77);
    CHECK_EQ_INT(calls, 1);
    CHECK_RC(o->list(ctx, "a", fs_stop_each, &calls), -ENOTDIR);
    CHECK_RC(o->list(ctx, "nope", fs_stop_each, &calls), -ENOENT);
    CHECK_RC(fs_open(fs, "d", CFDP_FS_RD, &f), -EISDIR);
    CHECK_RC(fs_open(fs, "a/b", CFDP_FS_RD | CFDP_FS_CREAT | CFDP_FS_WR, &f), -ENOTDIR);
    CHECK_RC(fs_open(fs, "nodir/b", CFDP_FS_WR | CFDP_FS_CREAT, &f), -ENOENT);
    CHECK_RC(o->rmdir(ctx, "d"), -ENOTEMPTY);
    CHECK_RC(o->rmdir(ctx, "a"), -ENOTDIR);
    CHECK_RC(o->rmdir(ctx, "zz"), -ENOENT);
    CHECK_RC(o->remove(ctx, "d"), -EISDIR);
    CHECK_RC(o->remove(ctx, "zz"), -ENOENT);
    CHECK_OK(o->stat(ctx, "d/e", &st));
    CHECK(st.is_dir);
    CHECK_EQ_U64(st.size, 0);

    /* rename: files and directories, never over an existing name */
    CHECK_RC(o->rename(ctx, "d/f1", "d/f2"), -EEXIST);
    CHECK_RC(o->rename(ctx, "d/none", "d/f3"), -ENOENT);
    CHECK_RC(o->rename(ctx, "d/f1", "nodir/f1"), -ENOENT);
    CHECK_OK(o->rename(ctx, "d/f1", "f1moved"));
    CHECK(!fs_exists(fs, "d/f1"));
    char *t = fs_slurp(fs, "f1moved", NULL);
    CHECK_EQ_STR(t, "1");
    free(t);
    CHECK_RC(o->rename(ctx, "d", "d/e/inside"), -EINVAL);
    CHECK_OK(o->rename(ctx, "d/e", "e2"));
    t = fs_slurp(fs, "e2/deep", NULL);
    CHECK_EQ_STR(t, "deep");
    free(t);
    CHECK_OK(o->remove(ctx, "e2/deep"));
    CHECK_OK(o->rmdir(ctx, "e2"));
    CHECK(!fs_exists(fs, "e2"));

    /* a file removed while open lives on through its handle */
    fs_put(fs, "tmp", "abc", 3);
    CHECK_OK(fs_open(fs, "tmp", CFDP_FS_RD | CFDP_FS_WR, &f));
    CHECK_OK(o->remove(ctx, "tmp"));
    CHECK(!fs_exists(fs, "tmp"));
    CHECK_OK(o->write(ctx, f, 3, "d", 1));
    CHECK_OK(o->read(ctx, f, 0, buf, sizeof buf, &got));
    CHECK_EQ_U64(got, 4);
    CHECK_EQ_MEM(buf, "abcd", 4);
    CHECK_OK(o->close(ctx, f));

    /* paths that would leave the root, and bad paths */
    char longp[CFDP_FS_PATH_MAX + 2];
    memset(longp, 'n', sizeof longp - 1);
    longp[sizeof longp - 1] = 0;
    const char *escapes[] = {"/etc/passwd", "..", "../x", "d/../../x", "d/..", "/"};
    for (size_t i = 0; i < sizeof escapes / sizeof *escapes; i++) {
        const char *p = escapes[i];
        CHECK_RC(fs_open(fs, p, CFDP_FS_WR | CFDP_FS_CREAT, &f), -EACCES);
        CHECK_RC(o->stat(ctx, p, &st), -EACCES);
        CHECK_RC(o->mkdir(ctx, p), -EACCES);
        CHECK_RC(o->remove(ctx, p), -EACCES);
        CHECK_RC(o->rmdir(ctx, p), -EACCES);
        CHECK_RC(o->rename(ctx, "a", p), -EACCES);
        CHECK_RC(o->rename(ctx, p, "a2"), -EACCES);
        CHECK_RC(o->list(ctx, p, fs_stop_each, &calls), -EACCES);
    }
    CHECK_RC(fs_open(fs, longp, CFDP_FS_WR | CFDP_FS_CREAT, &f), -EINVAL);
    CHECK_RC(o->stat(ctx, longp, &st), -EINVAL);
    CHECK_RC(o->rmdir(ctx, ""), -EACCES);
    CHECK_RC(o->remove(ctx, ""), -EISDIR);
    CHECK_RC(o->mkdir(ctx, ""), -EEXIST);
    CHECK_EQ_STR(fs_listing(fs, "", &names), "a:0 d/:0 f1moved:1");
}

#endif
