/* cfdp_posixfs: the filestore contract on a host directory, with openat2
 * and with the component walk; escapes through absolute paths, ".." and
 * symbolic links pointing out are refused with -EACCES, and nothing outside
 * the root changes (a snapshot of the outside tree before and after). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cfdp_fs.h"
#include "fs_contract.h"
#include "posixfs_int.h"
#include "tern_test.h"

static void mkpath(const char *a, const char *b, char *out, size_t cap)
{
    CHECK((size_t)snprintf(out, cap, "%s/%s", a, b) < cap);
}

static void host_write(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CHECK(f);
    CHECK(fputs(text, f) >= 0);
    CHECK(fclose(f) == 0);
}

/* A text naming every entry under dir (recursively, links not followed)
 * with its type, size, mode, mtime and content: any change shows. */
static void snapshot(const char *dir, char *out, size_t cap)
{
    DIR *d = opendir(dir);
    CHECK(d);
    struct dirent *de;
    char names[64][256];
    int n = 0;
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
            CHECK(n < 64);
            snprintf(names[n++], 256, "%s", de->d_name);
        }
    closedir(d);
    qsort(names, (size_t)n, 256, (int (*)(const void *, const void *))strcmp);
    for (int i = 0; i < n; i++) {
        char p[1024];
        mkpath(dir, names[i], p, sizeof p);
        struct stat st;
        CHECK(lstat(p, &st) == 0);
        size_t l = strlen(out);
        snprintf(out + l, cap - l, "[%s %o %lld %lld.%09ld", p, (unsigned)st.st_mode,
                 (long long)st.st_size, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
        l = strlen(out);
        if (S_ISREG(st.st_mode)) {
            FILE *f = fopen(p, "r");
            CHECK(f);
            size_t k = fread(out + l, 1, cap - l - 2 > 100 ? 100 : 0, f);
            out[l + k] = 0;
            fclose(f);
        } else if (S_ISLNK(st.st_mode)) {
            ssize_t k = readlink(p, out + l, 200);
            CHECK(k >= 0);
            out[l + k] = 0;
        }
        l = strlen(out);
        snprintf(out + l, cap - l, "]\n");
        if (S_ISDIR(st.st_mode))
            snapshot(p, out, cap);
    }
}

static cfdp_posixfs *open_fs(const char *root, int walk, cfdp_fs *fs)
{
    cfdp_posixfs *p;
    CHECK_OK(cfdp_posixfs_new(root, &p, fs));
    if (walk)
        cfdp__posixfs_force_walk(p);
    return p;
}

static void contract(int walk)
{
    char root[512];
    mkpath(tt_tmpdir(), "root", root, sizeof root);
    CHECK(mkdir(root, 0700) == 0);
    cfdp_fs fs;
    cfdp_posixfs *p = open_fs(root, walk, &fs);
    CHECK_EQ_INT(cfdp__posixfs_uses_openat2(p), !walk);
    fs_contract(&fs);
    /* what the contract left is on the host too */
    char host[600];
    mkpath(root, "d/f2", host, sizeof host);
    struct stat st;
    CHECK(stat(host, &st) == 0 && st.st_size == 2);
    cfdp_posixfs_free(p);
}

TEST(posixfs_contract_openat2)
{
    cfdp_fs fs;
    cfdp_posixfs *p = open_fs(tt_tmpdir(), 0, &fs);
    /* this machine's kernel (6.x) has openat2: the tests cover both paths */
    CHECK_MSG(cfdp__posixfs_uses_openat2(p), "openat2 not available here");
    cfdp_posixfs_free(p);
    contract(0);
}

TEST(posixfs_contract_walk)
{
    contract(1);
}

TEST(posixfs_new_refuses_a_missing_root)
{
    cfdp_fs fs;
    cfdp_posixfs *p;
    char root[512];
    mkpath(tt_tmpdir(), "none", root, sizeof root);
    CHECK_RC(cfdp_posixfs_new(root, &p, &fs), -ENOENT);
    mkpath(tt_tmpdir(), "file", root, sizeof root);
    host_write(root, "x");
    CHECK_RC(cfdp_posixfs_new(root, &p, &fs), -ENOTDIR);
}

/* root/ holds links pointing out (relative, absolute, dangling, through a
 * directory) and one pointing inside; outside/ holds what must not change. */
static void escapes(int walk)
{
    char root[512], out[512], p[1024], q[1024];
    mkpath(tt_tmpdir(), "root", root, sizeof root);
    mkpath(tt_tmpdir(), "outside", out, sizeof out);
    CHECK(mkdir(root, 0700) == 0 && mkdir(out, 0700) == 0);
    mkpath(out, "secret", p, sizeof p);
    host_write(p, "secret");
    mkpath(out, "dir", p, sizeof p);
    CHECK(mkdir(p, 0700) == 0);
    mkpath(out, "dir/keep", p, sizeof p);
    host_write(p, "keep");
    mkpath(root, "sub", p, sizeof p);
    CHECK(mkdir(p, 0700) == 0);
    mkpath(root, "sub/inner", p, sizeof p);
    host_write(p, "inner");
    mkpath(root, "a", p, sizeof p);
    host_write(p, "a");
    mkpath(root, "up", p, sizeof p);
    CHECK(symlink("../outside", p) == 0);
    mkpath(root, "abs", p, sizeof p);
    mkpath(out, "secret", q, sizeof q);
    CHECK(symlink(q, p) == 0);
    mkpath(root, "absdir", p, sizeof p);
    CHECK(symlink(out, p) == 0);
    mkpath(root, "dangling", p, sizeof p);
    CHECK(symlink("../outside/created", p) == 0);
    mkpath(root, "sub/updir", p, sizeof p);
    CHECK(symlink("../../outside/dir", p) == 0);
    mkpath(root, "proc", p, sizeof p);
    /* deliberately absolute: a link through the kernel's magic link to the
     * host's root, the escape RESOLVE_NO_MAGICLINKS exists for (creating a
     * symlink needs no target, so no machine path is relied on) */
    CHECK(symlink("/proc/self/root/etc", p) == 0);
    mkpath(root, "in", p, sizeof p);
    CHECK(symlink("sub/inner", p) == 0);

    static char before[65536], after[65536];
    before[0] = after[0] = 0;
    snapshot(out, before, sizeof before);

    cfdp_fs fs;
    cfdp_posixfs *px = open_fs(root, walk, &fs);
    void *ctx = fs.ctx;
    const cfdp_fs_ops *o = fs.ops;
    void *f;
    cfdp_fs_stat st;
    int calls = 0;
    const char *through[] = {
        "up/secret",      "abs",         "absdir/secret",     "up/dir/keep",
        "sub/updir/keep", "proc/passwd", "dangling",          "up",
        "absdir",         "sub/updir",   "../outside/secret", "sub/../../outside/secret"};
    for (size_t i = 0; i < sizeof through / sizeof *through; i++) {
        const char *t = through[i];
        int is_link = !strchr(t, '/') || !strcmp(t, "sub/updir");
        CHECK_RC(fs_open(&fs, t, CFDP_FS_RD, &f), -EACCES);
        CHECK_RC(fs_open(&fs, t, CFDP_FS_WR | CFDP_FS_CREAT | CFDP_FS_TRUNC, &f),
                 -EACCES);
        CHECK_RC(o->stat(ctx, t, &st), -EACCES);
        CHECK_RC(o->list(ctx, t, fs_stop_each, &calls), -EACCES);
        if (!is_link) { /* a name behind a link: its parent resolves out */
            CHECK_RC(o->remove(ctx, t), -EACCES);
            CHECK_RC(o->rmdir(ctx, t), -EACCES);
            CHECK_RC(o->mkdir(ctx, t), -EACCES);
            CHECK_RC(o->rename(ctx, t, "stolen"), -EACCES);
            CHECK_RC(o->rename(ctx, "a", t), -EACCES);
        }
    }
    CHECK_RC(o->mkdir(ctx, "up/newdir"), -EACCES);
    CHECK_RC(o->mkdir(ctx, "absdir/newdir"), -EACCES);
    CHECK_RC(o->rename(ctx, "a", "up/a"), -EACCES);
    CHECK_RC(o->rename(ctx, "a", "sub/updir/a"), -EACCES);
    CHECK_RC(fs_open(&fs, "up/new", CFDP_FS_WR | CFDP_FS_CREAT, &f), -EACCES);
    CHECK_RC(fs_open(&fs, "dangling", CFDP_FS_WR | CFDP_FS_CREAT | CFDP_FS_EXCL, &f),
             walk ? -EACCES : -EEXIST);
    /* a link to a directory out is not listed, nor are the others */
    struct fs_names names;
    CHECK_EQ_STR(fs_listing(&fs, "", &names), "a:1 sub/:0");
    /* renaming or removing a link inside the root acts on the link only */
    CHECK_OK(o->rename(ctx, "abs", "sub/abs2"));
    CHECK_OK(o->remove(ctx, "sub/abs2"));
    CHECK_OK(o->remove(ctx, "up"));
    CHECK_RC(o->rmdir(ctx, "absdir"), -ENOTDIR);

    /* a link that stays beneath the root: followed by openat2, refused by
     * the walk (which follows none) */
    if (walk) {
        CHECK_RC(fs_open(&fs, "in", CFDP_FS_RD, &f), -EACCES);
    } else {
        char *t = fs_slurp(&fs, "in", NULL);
        CHECK_EQ_STR(t, "inner");
        free(t);
    }
    cfdp_posixfs_free(px);

    snapshot(out, after, sizeof after);
    CHECK_EQ_STR(after, before);
    mkpath(out, "created", p, sizeof p);
    CHECK(access(p, F_OK) != 0);
    CHECK(strstr(before, "secret]") || strstr(before, "secret"));
}

TEST(posixfs_escapes_refused_openat2)
{
    escapes(0);
}

TEST(posixfs_escapes_refused_walk)
{
    escapes(1);
}

TEST(posixfs_refuses_special_files)
{
    char p[1024];
    mkpath(tt_tmpdir(), "fifo", p, sizeof p);
    CHECK(mkfifo(p, 0600) == 0);
    cfdp_fs fs;
    cfdp_posixfs *px = open_fs(tt_tmpdir(), 0, &fs);
    void *f;
    /* a FIFO must neither block the caller nor be read as a file */
    CHECK_RC(fs_open(&fs, "fifo", CFDP_FS_RD, &f), -EACCES);
    CHECK_RC(fs_open(&fs, "fifo", CFDP_FS_RD | CFDP_FS_WR | CFDP_FS_TRUNC, &f), -EACCES);
    struct fs_names names;
    CHECK_EQ_STR(fs_listing(&fs, "", &names), "");
    /* 64-bit offsets: a write past 4 GiB makes a sparse file of that size */
    CHECK_OK(fs_open(&fs, "sparse", CFDP_FS_RD | CFDP_FS_WR | CFDP_FS_CREAT, &f));
    uint64_t off = 5ull << 30;
    CHECK_OK(fs.ops->write(fs.ctx, f, off, "end", 3));
    cfdp_fs_stat st;
    CHECK_OK(fs.ops->stat(fs.ctx, "sparse", &st));
    CHECK_EQ_U64(st.size, off + 3);
    char buf[8];
    size_t got;
    CHECK_OK(fs.ops->read(fs.ctx, f, off - 2, buf, 8, &got));
    CHECK_EQ_U64(got, 5);
    CHECK_EQ_MEM(buf, "\0\0end", 5);
    CHECK_RC(fs.ops->write(fs.ctx, f, UINT64_MAX - 1, "x", 1), -EINVAL);
    CHECK_OK(fs.ops->close(fs.ctx, f));
    cfdp_posixfs_free(px);
}

/* Large writes go past the page cache (O_DIRECT, staged a megabyte at a
 * time, unaligned heads and tails buffered): whatever the order, sizes and
 * interleaved reads, truncates and syncs, the file holds what a plain
 * model says, before and after close. On a file system without O_DIRECT
 * the same holds with no direct bytes. */
static void direct_writes_in(const char *root, int want_direct)
{
    cfdp_fs fs;
    cfdp_posixfs *p = open_fs(root, 0, &fs);
    if (!want_direct)
        cfdp__posixfs_refuse_direct(p);
    cfdp__posixfs_sync_behind(p, 2u << 20); /* syncs in the background too */
    enum { SIZE = 9 << 20 };
    uint8_t *model = calloc(1, SIZE), *got = malloc(SIZE), *src = malloc(SIZE);
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < SIZE; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        src[i] = (uint8_t)x;
    }
    void *f;
    CHECK_OK(
        fs.ops->open(fs.ctx, "big.bin", CFDP_FS_RD | CFDP_FS_WR | CFDP_FS_CREAT, &f));
    uint64_t end = 0, off = 0;
    for (int step = 0; step < 600; step++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        unsigned kind = (unsigned)(x % 16);
        size_t len = kind < 10   ? 64000 /* in order, CFDP-sized, unaligned */
                     : kind < 13 ? (size_t)(x >> 20) % 200000
                                 : (size_t)(x >> 20) % 3000;
        if (kind >= 12) /* anywhere, overlapping what is there */
            off = (x >> 40) % (SIZE - 200000);
        if (off + len > SIZE)
            off = 0;
        CHECK_OK(fs.ops->write(fs.ctx, f, off, src + off, len));
        memcpy(model + off, src + off, len);
        if (off + len > end)
            end = off + len;
        off += len;
        if (kind == 15 && step % 7 == 0) { /* a read of a piece sees the writes */
            size_t n = 0, at = (size_t)(x >> 8) % (size_t)end;
            size_t want = end - at < 100000 ? end - at : 100000;
            CHECK_OK(fs.ops->read(fs.ctx, f, at, got, want, &n));
            CHECK_EQ_U64(n, want);
            CHECK_EQ_MEM(got, model + at, want);
        }
        if (step % 97 == 0)
            CHECK_OK(fs.ops->sync(fs.ctx, f));
        if (step == 300) { /* cut the file, as a re-received file may be */
            uint64_t cut = end / 2;
            CHECK_OK(fs.ops->truncate(fs.ctx, f, cut));
            memset(model + cut, 0, end - cut);
            end = cut;
            off = cut;
        }
    }
    uint64_t direct = cfdp__posixfs_direct_bytes(f);
    CHECK_OK(fs.ops->sync(fs.ctx, f));
    /* the thread took at least one request (it may merge several) */
    uint64_t behind = cfdp__posixfs_behind_syncs(f);
    for (int i = 0; i < 200 && want_direct && !behind; i++) {
        usleep(10000);
        behind = cfdp__posixfs_behind_syncs(f);
    }
    CHECK_MSG(want_direct ? behind >= 1 : behind == 0, "%llu background syncs",
              (unsigned long long)behind);
    size_t n = 0;
    CHECK_OK(fs.ops->read(fs.ctx, f, 0, got, SIZE, &n));
    CHECK_EQ_U64(n, end);
    CHECK_EQ_MEM(got, model, end);
    CHECK_OK(fs.ops->close(fs.ctx, f));
    char host[4200];
    mkpath(root, "big.bin", host, sizeof host);
    FILE *hf = fopen(host, "rb");
    CHECK(hf);
    CHECK_EQ_U64(fread(got, 1, SIZE, hf), end);
    fclose(hf);
    CHECK_EQ_MEM(got, model, end);
    if (want_direct)
        CHECK_MSG(direct >= (2u << 20), "only %llu bytes went direct",
                  (unsigned long long)direct);
    else
        CHECK_EQ_U64(direct, 0);
    remove(host);
    free(model);
    free(got);
    free(src);
    cfdp_posixfs_free(p);
}

TEST(posixfs_large_writes_go_past_the_page_cache)
{
    direct_writes_in(tt_tmpdir(), 1);
}

TEST(posixfs_large_writes_without_o_direct_stay_buffered)
{
    direct_writes_in(tt_tmpdir(), 0);
}
