/* powercut_io.h: an in-memory file system under a durable store (struct
 * sdr_io) that models what survives a power cut. Header-only, for tests.
 *
 * Per file (inode): the durable content, the volatile content (what reads
 * see) and the queue of writes and truncates issued since the last sync.
 * Per directory: creations, renames and unlinks issued since the last
 * sync_dir of that directory. sync(fd) makes a file's data durable;
 * sync_dir(dir) makes the directory operations in dir durable.
 *
 * pc_cut() simulates a power cut. Each directory operation not yet synced is
 * kept or undone independently (a rename is atomic: the entry is under the
 * old name or the new one). Each file's pending writes then reach the disk in
 * one of three ways, chosen at random per file:
 *   - independently: each write (or truncate) is dropped, applied, or torn
 *     (only a prefix of it applied, at byte or 512-byte-sector granularity),
 *     so a later write may land while an earlier one is lost;
 *   - in order: a prefix of the queue lands, the write at the boundary torn;
 *   - by sector: like page-cache writeback, each 512-byte sector that differs
 *     between the durable and the volatile content takes either, and the size
 *     is either the old or the new one.
 * Afterwards every descriptor is gone and volatile := durable.
 *
 * Fault injection: pc_fail_after(fs, n, sticky) makes the n-th operation
 * from now fail with -EIO (and, if sticky, every later one too). A failed
 * pwrite may leave a prefix of its bytes in the page cache; a failed sync may
 * (if lose_on_sync_fail) forget the writes it did not persist, as Linux does
 * ("fsyncgate"): reads still see them but a later sync does not save them.
 *
 * Snapshots: pc_snapshot() deep-copies the whole state (durable and pending)
 * into a new pc_fs; pc_snap_after(fs, n) does it automatically just before the
 * n-th operation from now, inside the double's lock, so a snapshot can fall
 * anywhere, even while the store's helper thread is mid-commit. Every
 * operation is atomic with respect to snapshots.
 *
 * Everything random is drawn from seeded generators: the double is
 * deterministic given the seed and the order of its calls.
 */
#ifndef TERN_POWERCUT_IO_H
#define TERN_POWERCUT_IO_H

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sdr_io.h"

#define PC_FN      static __attribute__((unused))
#define PC_MAXFD   64
#define PC_MAXSNAP 8
#define PC_SECTOR  512u
#define PC_FD_BASE 1000

enum { PC_OP_WRITE, PC_OP_TRUNC };
enum { PC_D_CREATE, PC_D_RENAME, PC_D_UNLINK };

struct pc_op {
    int kind;
    uint64_t off; /* write offset, or the new length */
    size_t len;
    uint8_t *data;
};

struct pc_bytes {
    uint8_t *p;
    uint64_t len, cap;
};

struct pc_inode {
    struct pc_bytes dur, vol;
    struct pc_op *ops;
    size_t nops, capops;
};

struct pc_dent {
    char *name;
    int ino;
};

struct pc_ns {
    struct pc_dent *e;
    size_t n, cap;
};

struct pc_dop {
    int kind;
    char *a, *b; /* path; rename: from, to */
    int ino;     /* create: the new inode */
};

struct pc_stats {
    uint64_t cuts, dropped, applied, torn, dir_kept, dir_undone, failed;
};

typedef struct pc_fs pc_fs;

struct pc_fs {
    pthread_mutex_t mu;
    struct sdr_io io;
    struct pc_inode **ino;
    size_t nino;
    struct pc_ns vol, dur;
    struct pc_dop *dops;
    size_t ndops, capdops;
    char **dirs;
    size_t ndirs;
    int fds[PC_MAXFD]; /* inode + 1, or 0 if free */
    uint64_t nops;     /* operations so far */
    uint64_t fail_at;  /* nops value at which to fail (0: never) */
    int fail_sticky, failing;
    int lose_on_sync_fail;
    uint64_t snap_at; /* nops value before which to snapshot (0: never) */
    pc_fs *snaps[PC_MAXSNAP];
    uint64_t snap_tag[PC_MAXSNAP];
    int nsnaps;
    uint64_t tag; /* copied into snap_tag when a snapshot is taken */
    uint64_t rng;
    struct pc_stats st;
    int trace; /* print every operation */
    pthread_cond_t cv;
    int hold_syncs, held; /* syncs wait while hold_syncs; held: how many wait */
    const char *what;
};

/* ------------------------------------------------------------------ utils */

PC_FN uint64_t pc_rand(uint64_t *st)
{
    uint64_t z = (*st += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* Uniform in [0, n) (n > 0). */
PC_FN uint64_t pc_below(uint64_t *st, uint64_t n)
{
    return n ? pc_rand(st) % n : 0;
}

static void pc_oom(void)
{
    fprintf(stderr, "powercut_io: out of memory\n");
    abort();
}

static void *pc_xalloc(size_t n)
{
    void *p = calloc(1, n ? n : 1);
    if (!p)
        pc_oom();
    return p;
}

static char *pc_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = pc_xalloc(n);
    memcpy(p, s, n);
    return p;
}

static void pc_bytes_resize(struct pc_bytes *b, uint64_t len)
{
    if (len > b->cap) {
        uint64_t nc = b->cap ? b->cap : 4096;
        while (nc < len)
            nc *= 2;
        uint8_t *p = realloc(b->p, nc);
        if (!p)
            pc_oom();
        b->p = p;
        b->cap = nc;
    }
    if (len > b->len)
        memset(b->p + b->len, 0, len - b->len);
    b->len = len;
}

static void pc_bytes_write(struct pc_bytes *b, uint64_t off, const void *src, size_t n)
{
    if (off + n > b->len)
        pc_bytes_resize(b, off + n);
    if (n)
        memcpy(b->p + off, src, n);
}

static void pc_bytes_copy(struct pc_bytes *d, const struct pc_bytes *s)
{
    d->len = 0;
    pc_bytes_resize(d, s->len);
    if (s->len)
        memcpy(d->p, s->p, s->len);
}

static void pc_op_apply(struct pc_bytes *b, const struct pc_op *op, size_t n)
{
    if (op->kind == PC_OP_TRUNC) {
        if (op->off < b->len)
            b->len = op->off;
        else
            pc_bytes_resize(b, op->off);
    } else {
        pc_bytes_write(b, op->off, op->data, n);
    }
}

static void pc_inode_free(struct pc_inode *in)
{
    if (!in)
        return;
    for (size_t i = 0; i < in->nops; i++)
        free(in->ops[i].data);
    free(in->ops);
    free(in->dur.p);
    free(in->vol.p);
    free(in);
}

static void pc_inode_clear_ops(struct pc_inode *in)
{
    for (size_t i = 0; i < in->nops; i++)
        free(in->ops[i].data);
    in->nops = 0;
}

static void pc_inode_push(struct pc_inode *in, int kind, uint64_t off, const void *data,
                          size_t len)
{
    if (in->nops == in->capops) {
        size_t nc = in->capops ? in->capops * 2 : 16;
        struct pc_op *p = realloc(in->ops, nc * sizeof *p);
        if (!p)
            pc_oom();
        in->ops = p;
        in->capops = nc;
    }
    struct pc_op *op = &in->ops[in->nops++];
    op->kind = kind;
    op->off = off;
    op->len = len;
    op->data = NULL;
    if (kind == PC_OP_WRITE) {
        op->data = pc_xalloc(len);
        if (len)
            memcpy(op->data, data, len);
    }
}

static struct pc_inode *pc_inode_dup(const struct pc_inode *s)
{
    struct pc_inode *d = pc_xalloc(sizeof *d);
    pc_bytes_copy(&d->dur, &s->dur);
    pc_bytes_copy(&d->vol, &s->vol);
    for (size_t i = 0; i < s->nops; i++)
        pc_inode_push(d, s->ops[i].kind, s->ops[i].off, s->ops[i].data, s->ops[i].len);
    return d;
}

/* ---------------------------------------------------------------- names */

static int pc_ns_find(const struct pc_ns *ns, const char *name)
{
    for (size_t i = 0; i < ns->n; i++)
        if (strcmp(ns->e[i].name, name) == 0)
            return (int)i;
    return -1;
}

static int pc_ns_get(const struct pc_ns *ns, const char *name)
{
    int i = pc_ns_find(ns, name);
    return i < 0 ? -1 : ns->e[i].ino;
}

static void pc_ns_set(struct pc_ns *ns, const char *name, int ino)
{
    int i = pc_ns_find(ns, name);
    if (i >= 0) {
        ns->e[i].ino = ino;
        return;
    }
    if (ns->n == ns->cap) {
        size_t nc = ns->cap ? ns->cap * 2 : 16;
        struct pc_dent *p = realloc(ns->e, nc * sizeof *p);
        if (!p)
            pc_oom();
        ns->e = p;
        ns->cap = nc;
    }
    ns->e[ns->n].name = pc_strdup(name);
    ns->e[ns->n].ino = ino;
    ns->n++;
}

static void pc_ns_del(struct pc_ns *ns, const char *name)
{
    int i = pc_ns_find(ns, name);
    if (i < 0)
        return;
    free(ns->e[i].name);
    ns->e[i] = ns->e[--ns->n];
}

static void pc_ns_free(struct pc_ns *ns)
{
    for (size_t i = 0; i < ns->n; i++)
        free(ns->e[i].name);
    free(ns->e);
    memset(ns, 0, sizeof *ns);
}

static void pc_ns_copy(struct pc_ns *d, const struct pc_ns *s)
{
    memset(d, 0, sizeof *d);
    for (size_t i = 0; i < s->n; i++)
        pc_ns_set(d, s->e[i].name, s->e[i].ino);
}

/* Applies one directory operation to a name space (no-op if it cannot). */
static void pc_dop_apply(struct pc_ns *ns, const struct pc_dop *d)
{
    int ino;
    switch (d->kind) {
    case PC_D_CREATE:
        pc_ns_set(ns, d->a, d->ino);
        break;
    case PC_D_RENAME:
        if ((ino = pc_ns_get(ns, d->a)) >= 0) {
            pc_ns_del(ns, d->a);
            pc_ns_set(ns, d->b, ino);
        }
        break;
    case PC_D_UNLINK:
        pc_ns_del(ns, d->a);
        break;
    }
}

static int pc_in_dir(const char *path, const char *dir)
{
    const char *slash = strrchr(path, '/');
    size_t n = slash ? (size_t)(slash - path) : 0;
    size_t dl = strlen(dir);
    while (dl > 1 && dir[dl - 1] == '/')
        dl--;
    return n == dl && strncmp(path, dir, n) == 0;
}

static int pc_dir_known(const pc_fs *fs, const char *dir)
{
    for (size_t i = 0; i < fs->ndirs; i++)
        if (strcmp(fs->dirs[i], dir) == 0)
            return 1;
    return 0;
}

static int pc_parent_ok(const pc_fs *fs, const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return 0;
    for (size_t i = 0; i < fs->ndirs; i++)
        if (strlen(fs->dirs[i]) == (size_t)(slash - path) &&
            strncmp(fs->dirs[i], path, (size_t)(slash - path)) == 0)
            return 1;
    return 0;
}

static void pc_dop_push(pc_fs *fs, int kind, const char *a, const char *b, int ino)
{
    if (fs->ndops == fs->capdops) {
        size_t nc = fs->capdops ? fs->capdops * 2 : 16;
        struct pc_dop *p = realloc(fs->dops, nc * sizeof *p);
        if (!p)
            pc_oom();
        fs->dops = p;
        fs->capdops = nc;
    }
    struct pc_dop *d = &fs->dops[fs->ndops++];
    d->kind = kind;
    d->a = pc_strdup(a);
    d->b = b ? pc_strdup(b) : NULL;
    d->ino = ino;
}

static void pc_dop_free(struct pc_dop *d)
{
    free(d->a);
    free(d->b);
}

/* Frees inodes nothing refers to any more. */
static void pc_gc(pc_fs *fs)
{
    uint8_t *used = pc_xalloc(fs->nino + 1);
    for (size_t i = 0; i < fs->vol.n; i++)
        used[fs->vol.e[i].ino] = 1;
    for (size_t i = 0; i < fs->dur.n; i++)
        used[fs->dur.e[i].ino] = 1;
    for (size_t i = 0; i < fs->ndops; i++)
        if (fs->dops[i].kind == PC_D_CREATE)
            used[fs->dops[i].ino] = 1;
    for (int i = 0; i < PC_MAXFD; i++)
        if (fs->fds[i])
            used[fs->fds[i] - 1] = 1;
    for (size_t i = 0; i < fs->nino; i++)
        if (!used[i] && fs->ino[i]) {
            pc_inode_free(fs->ino[i]);
            fs->ino[i] = NULL;
        }
    free(used);
}

static int pc_new_inode(pc_fs *fs)
{
    for (size_t i = 0; i < fs->nino; i++)
        if (!fs->ino[i]) {
            fs->ino[i] = pc_xalloc(sizeof(struct pc_inode));
            return (int)i;
        }
    struct pc_inode **p = realloc(fs->ino, (fs->nino + 1) * sizeof *p);
    if (!p)
        pc_oom();
    fs->ino = p;
    fs->ino[fs->nino] = pc_xalloc(sizeof(struct pc_inode));
    return (int)fs->nino++;
}

/* --------------------------------------------------- the operation gate */

/* Called under the lock at the start of every operation: counts it, takes
 * a due snapshot, and says whether it must fail. */
static pc_fs *pc_copy_locked(pc_fs *fs);

static int pc_enter(pc_fs *fs, const char *what)
{
    pthread_mutex_lock(&fs->mu);
    if (what[0] == 's' && strcmp(what, "sync") == 0) {
        fs->held++;
        while (fs->hold_syncs)
            pthread_cond_wait(&fs->cv, &fs->mu);
        fs->held--;
    }
    fs->what = what;
    fs->nops++;
    if (fs->snap_at && fs->nops == fs->snap_at) {
        fs->snap_at = 0;
        if (fs->nsnaps < PC_MAXSNAP) {
            fs->snap_tag[fs->nsnaps] = fs->tag;
            fs->snaps[fs->nsnaps++] = pc_copy_locked(fs);
        }
    }
    if (fs->fail_at && fs->nops == fs->fail_at) {
        fs->failing = 1;
        fs->st.failed++;
        return -EIO;
    }
    if (fs->failing && fs->fail_sticky) {
        fs->st.failed++;
        return -EIO;
    }
    return 0;
}

static void pc_leave(pc_fs *fs, long rc)
{
    if (fs->trace)
        fprintf(stderr, "pc %" PRIu64 " %s -> %ld\n", fs->nops, fs->what, rc);
    pthread_mutex_unlock(&fs->mu);
}

static struct pc_inode *pc_fd_inode(pc_fs *fs, int fd)
{
    int i = fd - PC_FD_BASE;
    if (i < 0 || i >= PC_MAXFD || !fs->fds[i])
        return NULL;
    return fs->ino[fs->fds[i] - 1];
}

/* ------------------------------------------------------------ sdr_io ops */

static int pc_io_open(void *ctx, const char *path, int create)
{
    pc_fs *fs = ctx;
    int rc = pc_enter(fs, "open");
    if (fs->trace)
        fprintf(stderr, "pc   %s\n", path);
    if (rc)
        goto out;
    if (!pc_parent_ok(fs, path)) {
        rc = -ENOENT;
        goto out;
    }
    int ino = pc_ns_get(&fs->vol, path);
    if (ino < 0) {
        if (!create) {
            rc = -ENOENT;
            goto out;
        }
        ino = pc_new_inode(fs);
        pc_ns_set(&fs->vol, path, ino);
        pc_dop_push(fs, PC_D_CREATE, path, NULL, ino);
    }
    rc = -EMFILE;
    for (int i = 0; i < PC_MAXFD; i++)
        if (!fs->fds[i]) {
            fs->fds[i] = ino + 1;
            rc = PC_FD_BASE + i;
            break;
        }
out:
    pc_leave(fs, (long)rc);
    return rc;
}

static int pc_io_close(void *ctx, int fd)
{
    pc_fs *fs = ctx;
    int rc = pc_enter(fs, "close");
    if (!pc_fd_inode(fs, fd)) {
        rc = -EBADF;
    } else {
        /* As on Linux, the descriptor is gone even if close reports an error. */
        fs->fds[fd - PC_FD_BASE] = 0;
        pc_gc(fs);
    }
    pc_leave(fs, (long)rc);
    return rc;
}

static ssize_t pc_io_pread(void *ctx, int fd, void *buf, size_t n, uint64_t off)
{
    pc_fs *fs = ctx;
    ssize_t rc = pc_enter(fs, "pread");
    struct pc_inode *in = pc_fd_inode(fs, fd);
    if (!rc && !in)
        rc = -EBADF;
    if (!rc) {
        uint64_t avail = off < in->vol.len ? in->vol.len - off : 0;
        size_t k = n < avail ? n : (size_t)avail;
        if (k)
            memcpy(buf, in->vol.p + off, k);
        rc = (ssize_t)k;
    }
    pc_leave(fs, (long)rc);
    return rc;
}

static ssize_t pc_io_pwrite(void *ctx, int fd, const void *buf, size_t n, uint64_t off)
{
    pc_fs *fs = ctx;
    ssize_t rc = pc_enter(fs, "pwrite");
    struct pc_inode *in = pc_fd_inode(fs, fd);
    if (!in) {
        rc = -EBADF;
    } else {
        size_t k = n;
        if (rc) /* a failed write may still leave a prefix in the page cache */
            k = pc_below(&fs->rng, 2) ? (size_t)pc_below(&fs->rng, n + 1) : 0;
        if (k) {
            pc_bytes_write(&in->vol, off, buf, k);
            pc_inode_push(in, PC_OP_WRITE, off, buf, k);
        }
        if (!rc)
            rc = (ssize_t)n;
    }
    pc_leave(fs, (long)rc);
    return rc;
}

static int pc_io_sync(void *ctx, int fd)
{
    pc_fs *fs = ctx;
    int rc = pc_enter(fs, "sync");
    struct pc_inode *in = pc_fd_inode(fs, fd);
    if (!in) {
        rc = -EBADF;
    } else if (rc) {
        if (fs->lose_on_sync_fail && pc_below(&fs->rng, 2))
            pc_inode_clear_ops(in); /* forgotten: never reaches the disk */
    } else {
        for (size_t i = 0; i < in->nops; i++)
            pc_op_apply(&in->dur, &in->ops[i], in->ops[i].len);
        pc_inode_clear_ops(in);
    }
    pc_leave(fs, (long)rc);
    return rc;
}

static int pc_io_truncate(void *ctx, int fd, uint64_t len)
{
    pc_fs *fs = ctx;
    int rc = pc_enter(fs, "truncate");
    struct pc_inode *in = pc_fd_inode(fs, fd);
    if (!rc && !in)
        rc = -EBADF;
    if (!rc) {
        struct pc_op op = {PC_OP_TRUNC, len, 0, NULL};
        pc_op_apply(&in->vol, &op, 0);
        pc_inode_push(in, PC_OP_TRUNC, len, NULL, 0);
    }
    pc_leave(fs, (long)rc);
    return rc;
}

static int pc_io_size(void *ctx, int fd, uint64_t *len)
{
    pc_fs *fs = ctx;
    int rc = pc_enter(fs, "size");
    struct pc_inode *in = pc_fd_inode(fs, fd);
    if (!rc && !in)
        rc = -EBADF;
    if (!rc)
        *len = in->vol.len;
    pc_leave(fs, (long)rc);
    return rc;
}

static int pc_io_rename(void *ctx, const char *from, const char *to)
{
    pc_fs *fs = ctx;
    int rc = pc_enter(fs, "rename");
    if (!rc) {
        int ino = pc_ns_get(&fs->vol, from);
        if (ino < 0 || !pc_parent_ok(fs, to)) {
            rc = -ENOENT;
        } else if (strcmp(from, to) != 0) {
            pc_ns_del(&fs->vol, from);
            pc_ns_set(&fs->vol, to, ino);
            pc_dop_push(fs, PC_D_RENAME, from, to, -1);
            pc_gc(fs);
        }
    }
    pc_leave(fs, (long)rc);
    return rc;
}

static int pc_io_unlink(void *ctx, const char *path)
{
    pc_fs *fs = ctx;
    int rc = pc_enter(fs, "unlink");
    if (fs->trace)
        fprintf(stderr, "pc   %s\n", path);
    if (!rc) {
        if (pc_ns_get(&fs->vol, path) < 0) {
            rc = -ENOENT;
        } else {
            pc_ns_del(&fs->vol, path);
            pc_dop_push(fs, PC_D_UNLINK, path, NULL, -1);
            pc_gc(fs);
        }
    }
    pc_leave(fs, (long)rc);
    return rc;
}

static int pc_io_sync_dir(void *ctx, const char *dir)
{
    pc_fs *fs = ctx;
    int rc = pc_enter(fs, "sync_dir");
    if (!rc && !pc_dir_known(fs, dir))
        rc = -ENOENT;
    if (!rc) {
        size_t k = 0;
        for (size_t i = 0; i < fs->ndops; i++) {
            if (pc_in_dir(fs->dops[i].a, dir)) {
                pc_dop_apply(&fs->dur, &fs->dops[i]);
                pc_dop_free(&fs->dops[i]);
            } else {
                fs->dops[k++] = fs->dops[i];
            }
        }
        fs->ndops = k;
        pc_gc(fs);
    }
    pc_leave(fs, (long)rc);
    return rc;
}

static int pc_io_exists(void *ctx, const char *path)
{
    pc_fs *fs = ctx;
    int rc = pc_enter(fs, "exists");
    if (fs->trace)
        fprintf(stderr, "pc   %s\n", path);
    if (!rc)
        rc = pc_dir_known(fs, path) || pc_ns_get(&fs->vol, path) >= 0 ? 0 : -ENOENT;
    pc_leave(fs, (long)rc);
    return rc;
}

/* ------------------------------------------------------------ public API */

/** A new, empty file system with directory dir; seed drives its choices. */
PC_FN pc_fs *pc_new(const char *dir, uint64_t seed)
{
    pc_fs *fs = pc_xalloc(sizeof *fs);
    pthread_mutex_init(&fs->mu, NULL);
    pthread_cond_init(&fs->cv, NULL);
    fs->io.ctx = fs;
    fs->io.open = pc_io_open;
    fs->io.close = pc_io_close;
    fs->io.pread = pc_io_pread;
    fs->io.pwrite = pc_io_pwrite;
    fs->io.sync = pc_io_sync;
    fs->io.truncate = pc_io_truncate;
    fs->io.size = pc_io_size;
    fs->io.rename = pc_io_rename;
    fs->io.unlink = pc_io_unlink;
    fs->io.sync_dir = pc_io_sync_dir;
    fs->io.exists = pc_io_exists;
    fs->dirs = pc_xalloc(sizeof(char *));
    fs->dirs[0] = pc_strdup(dir);
    fs->ndirs = 1;
    fs->rng = seed;
    return fs;
}

PC_FN void pc_free(pc_fs *fs)
{
    if (!fs)
        return;
    for (int i = 0; i < fs->nsnaps; i++)
        pc_free(fs->snaps[i]);
    for (size_t i = 0; i < fs->nino; i++)
        pc_inode_free(fs->ino[i]);
    free(fs->ino);
    pc_ns_free(&fs->vol);
    pc_ns_free(&fs->dur);
    for (size_t i = 0; i < fs->ndops; i++)
        pc_dop_free(&fs->dops[i]);
    free(fs->dops);
    for (size_t i = 0; i < fs->ndirs; i++)
        free(fs->dirs[i]);
    free(fs->dirs);
    pthread_cond_destroy(&fs->cv);
    pthread_mutex_destroy(&fs->mu);
    free(fs);
}

static pc_fs *pc_copy_locked(pc_fs *fs)
{
    pc_fs *c = pc_new(fs->dirs[0], pc_rand(&fs->rng));
    for (size_t i = 1; i < fs->ndirs; i++) {
        char **p = realloc(c->dirs, (c->ndirs + 1) * sizeof *p);
        if (!p)
            pc_oom();
        c->dirs = p;
        c->dirs[c->ndirs++] = pc_strdup(fs->dirs[i]);
    }
    /* Inodes only descriptors keep alive vanish with the process. */
    uint8_t *used = pc_xalloc(fs->nino + 1);
    for (size_t i = 0; i < fs->vol.n; i++)
        used[fs->vol.e[i].ino] = 1;
    for (size_t i = 0; i < fs->dur.n; i++)
        used[fs->dur.e[i].ino] = 1;
    for (size_t i = 0; i < fs->ndops; i++)
        if (fs->dops[i].kind == PC_D_CREATE)
            used[fs->dops[i].ino] = 1;
    c->ino = pc_xalloc((fs->nino + 1) * sizeof *c->ino);
    c->nino = fs->nino;
    for (size_t i = 0; i < fs->nino; i++)
        if (used[i] && fs->ino[i])
            c->ino[i] = pc_inode_dup(fs->ino[i]);
    free(used);
    pc_ns_copy(&c->vol, &fs->vol);
    pc_ns_copy(&c->dur, &fs->dur);
    for (size_t i = 0; i < fs->ndops; i++)
        pc_dop_push(c, fs->dops[i].kind, fs->dops[i].a, fs->dops[i].b, fs->dops[i].ino);
    c->lose_on_sync_fail = fs->lose_on_sync_fail;
    c->trace = fs->trace;
    return c;
}

/** A deep copy of fs as it is now: durable content and pending writes. */
PC_FN pc_fs *pc_snapshot(pc_fs *fs)
{
    pthread_mutex_lock(&fs->mu);
    pc_fs *c = pc_copy_locked(fs);
    pthread_mutex_unlock(&fs->mu);
    return c;
}

/** Makes file syncs wait (on) until released (off), so that a test can
 * hold a store's helper thread in the middle of a flush. */
PC_FN void pc_hold_syncs(pc_fs *fs, int on)
{
    pthread_mutex_lock(&fs->mu);
    fs->hold_syncs = on;
    pthread_cond_broadcast(&fs->cv);
    pthread_mutex_unlock(&fs->mu);
}

/** How many syncs are waiting in pc_hold_syncs. */
PC_FN int pc_held_syncs(pc_fs *fs)
{
    pthread_mutex_lock(&fs->mu);
    int n = fs->held;
    pthread_mutex_unlock(&fs->mu);
    return n;
}

/** Takes a snapshot just before the n-th operation from now (0: cancel). */
PC_FN void pc_snap_after(pc_fs *fs, uint64_t n)
{
    pthread_mutex_lock(&fs->mu);
    fs->snap_at = n ? fs->nops + n : 0;
    pthread_mutex_unlock(&fs->mu);
}

/** Sets the tag recorded with automatic snapshots taken from now on. */
PC_FN void pc_set_tag(pc_fs *fs, uint64_t tag)
{
    pthread_mutex_lock(&fs->mu);
    fs->tag = tag;
    pthread_mutex_unlock(&fs->mu);
}

/** Hands over the automatic snapshots taken so far (at most PC_MAXSNAP). */
PC_FN int pc_take_snaps(pc_fs *fs, pc_fs **out, uint64_t *tags)
{
    pthread_mutex_lock(&fs->mu);
    int n = fs->nsnaps;
    for (int i = 0; i < n; i++) {
        out[i] = fs->snaps[i];
        if (tags)
            tags[i] = fs->snap_tag[i];
        fs->snaps[i] = NULL;
    }
    fs->nsnaps = 0;
    pthread_mutex_unlock(&fs->mu);
    return n;
}

/** The n-th operation from now fails with -EIO; if sticky, every later one
 * too. n == 0 disarms (and ends a sticky failure). */
PC_FN void pc_fail_after(pc_fs *fs, uint64_t n, int sticky)
{
    pthread_mutex_lock(&fs->mu);
    fs->fail_at = n ? fs->nops + n : 0;
    fs->fail_sticky = sticky;
    fs->failing = 0;
    pthread_mutex_unlock(&fs->mu);
}

/** Operations performed so far. */
PC_FN uint64_t pc_ops(pc_fs *fs)
{
    pthread_mutex_lock(&fs->mu);
    uint64_t n = fs->nops;
    pthread_mutex_unlock(&fs->mu);
    return n;
}

/** Descriptors the store still has open. */
PC_FN int pc_open_fds(pc_fs *fs)
{
    int n = 0;
    pthread_mutex_lock(&fs->mu);
    for (int i = 0; i < PC_MAXFD; i++)
        n += fs->fds[i] != 0;
    pthread_mutex_unlock(&fs->mu);
    return n;
}

/* What one file holds after the cut: its pending writes, some of them. */
static void pc_cut_file(pc_fs *fs, struct pc_inode *in, uint64_t *rng)
{
    struct pc_bytes out = {0};
    pc_bytes_copy(&out, &in->dur);
    int mode = (int)pc_below(rng, 3);
    int sector = (int)pc_below(rng, 2);
    if (mode == 2) {
        /* Writeback by sector: each changed sector is old or new. */
        uint64_t len = pc_below(rng, 2) ? in->vol.len : in->dur.len;
        struct pc_bytes old = {0};
        pc_bytes_copy(&old, &in->dur);
        pc_bytes_resize(&out, 0);
        pc_bytes_resize(&out, len);
        for (uint64_t s = 0; s < len; s += PC_SECTOR) {
            uint64_t n = len - s < PC_SECTOR ? len - s : PC_SECTOR;
            int take_new = (int)pc_below(rng, 2);
            const struct pc_bytes *src = take_new ? &in->vol : &old;
            for (uint64_t i = s; i < s + n; i++)
                out.p[i] = i < src->len ? src->p[i] : 0;
            if (take_new)
                fs->st.applied++;
            else
                fs->st.dropped++;
        }
        free(old.p);
    } else {
        /* mode 0: each write independently; mode 1: a prefix of the queue. */
        size_t stop = mode == 1 ? (size_t)pc_below(rng, in->nops + 1) : in->nops;
        for (size_t i = 0; i < in->nops; i++) {
            const struct pc_op *op = &in->ops[i];
            int what; /* 0 drop, 1 apply, 2 torn */
            if (mode == 1)
                what = i < stop ? 1 : i == stop ? 2 : 0;
            else
                what = (int)pc_below(rng, 3);
            if (op->kind == PC_OP_TRUNC && what == 2)
                what = (int)pc_below(rng, 2);
            if (what == 0) {
                fs->st.dropped++;
                continue;
            }
            size_t n = op->len;
            if (what == 2) {
                n = (size_t)pc_below(rng, op->len + 1);
                if (sector) {
                    /* Whole sectors of the file only. */
                    uint64_t end = (op->off + n) / PC_SECTOR * PC_SECTOR;
                    n = end > op->off ? (size_t)(end - op->off) : 0;
                }
                fs->st.torn++;
            } else {
                fs->st.applied++;
            }
            pc_op_apply(&out, op, n);
        }
    }
    free(in->dur.p);
    in->dur = out;
    pc_bytes_copy(&in->vol, &in->dur);
    pc_inode_clear_ops(in);
}

/** Simulates a power cut: see the top of this file. Every descriptor is
 * dropped; afterwards the volatile state is the durable one. */
PC_FN void pc_cut(pc_fs *fs, uint64_t *rng)
{
    pthread_mutex_lock(&fs->mu);
    /* Directory keep-probability per cut: none, half or all. */
    int keep = (int)pc_below(rng, 4);
    for (size_t i = 0; i < fs->ndops; i++) {
        int k = keep == 0 ? 0 : keep == 3 ? 1 : (int)pc_below(rng, 2);
        if (k) {
            pc_dop_apply(&fs->dur, &fs->dops[i]);
            fs->st.dir_kept++;
        } else {
            fs->st.dir_undone++;
        }
        pc_dop_free(&fs->dops[i]);
    }
    fs->ndops = 0;
    memset(fs->fds, 0, sizeof fs->fds);
    pc_ns_free(&fs->vol);
    pc_ns_copy(&fs->vol, &fs->dur);
    pc_gc(fs);
    for (size_t i = 0; i < fs->nino; i++)
        if (fs->ino[i])
            pc_cut_file(fs, fs->ino[i], rng);
    fs->snap_at = 0;
    fs->fail_at = 0;
    fs->failing = 0;
    fs->st.cuts++;
    pthread_mutex_unlock(&fs->mu);
}

/** Size of the file at path (volatile), or -1. For tests that inspect files. */
PC_FN int64_t pc_file_size(pc_fs *fs, const char *path)
{
    pthread_mutex_lock(&fs->mu);
    int ino = pc_ns_get(&fs->vol, path);
    int64_t n = ino < 0 ? -1 : (int64_t)fs->ino[ino]->vol.len;
    pthread_mutex_unlock(&fs->mu);
    return n;
}

#endif
