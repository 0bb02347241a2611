/* cfdp_posixfs: a host directory as a filestore, every path resolved
 * beneath it (see cfdp_fs.h).
 *
 * The names are checked first (cfdp__fs_path_parse: no absolute paths, no
 * ".."), then resolved from the root's descriptor: with openat2 and
 * RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS, so a symbolic link may lead
 * elsewhere beneath the root but never out (the kernel answers EXDEV or
 * ELOOP); without openat2, one component at a time with O_NOFOLLOW, so no
 * link is followed at all. Operations on a name (rename, remove, mkdir,
 * rmdir) resolve its parent that way and then act on the last component
 * with the *at calls, which do not follow a final link: removing a link
 * inside the root removes the link, never what it points to.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cfdp_fs.h"
#include "fspath.h"
#include "posixfs_int.h"

struct cfdp_posixfs {
    int root;
    int use_openat2;
    int refuse_direct;    /* tests: as a file system without O_DIRECT */
    uint64_t sync_behind; /* tests: background sync every this many bytes (0: default) */
};

/* Large received files are written past the page cache: buffered writes
 * into a new file cost the writer a page-cache page and buffer heads per
 * 4 KiB, and the final fdatasync then allocates and writes the whole file
 * at once (seconds of CPU for 1 GiB, charged to cfdpd before its
 * Finished). Data arriving in order are staged in an aligned buffer and
 * written with O_DIRECT (a second descriptor on the same file) a
 * megabyte at a time; what does not fill whole 4 KiB blocks (a run's
 * unaligned head and tail, small writes) goes through the page cache as
 * before. A file system that refuses O_DIRECT gets buffered writes. */
#define DIRECT_ALIGN 4096u
#define DIRECT_STAGE (1u << 20)
#define DIRECT_MIN   16384u /* a write this large starts the direct path */

/* Data written past the page cache may still sit in the device's write
 * cache, and the fdatasync before a Finished flushed all of it at once
 * (a second for 1 GiB here, after the last byte came). So every
 * SYNC_BEHIND bytes written direct, a thread of the file's own syncs what
 * is there while the transfer goes on; the final fdatasync then has
 * little left to flush. */
#define SYNC_BEHIND (64u << 20)

struct behind {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int fd;
    int req, stop;
    int err;       /* the first failed background sync's errno */
    uint64_t done; /* background syncs done */
};

static void *behind_main(void *arg)
{
    struct behind *b = arg;
    pthread_mutex_lock(&b->mu);
    for (;;) {
        while (!b->req && !b->stop)
            pthread_cond_wait(&b->cv, &b->mu);
        if (b->stop)
            break;
        b->req = 0;
        pthread_mutex_unlock(&b->mu);
        int e = fdatasync(b->fd) ? errno : 0;
        pthread_mutex_lock(&b->mu);
        if (e && !b->err)
            b->err = e;
        b->done++;
    }
    pthread_mutex_unlock(&b->mu);
    return NULL;
}

typedef struct pfile {
    int fd;
    unsigned
        flags; /* as opened: a read of a write-only handle is -EBADF even for 0 bytes */
    int dfd;   /* O_DIRECT descriptor, -1 none yet, -2 never (refused, or small) */
    uint8_t *stage;  /* DIRECT_STAGE bytes, DIRECT_ALIGN aligned */
    uint64_t st_off; /* aligned: the staged run is [st_off, st_off + st_len) */
    size_t st_len;
    uint64_t direct_bytes; /* written with O_DIRECT */
    uint64_t unsynced;     /* of those, since the last background sync */
    uint64_t behind_every; /* SYNC_BEHIND, or the tests' */
    struct behind *bh;     /* NULL until the first background sync */
} pfile;

/* Asks f's thread for a sync of what is written (started at the first). */
static void behind_kick(pfile *f)
{
    if (!f->bh) {
        struct behind *b = calloc(1, sizeof *b);
        if (!b)
            return; /* no background sync: the final one does it all */
        b->fd = f->fd;
        pthread_mutex_init(&b->mu, NULL);
        pthread_cond_init(&b->cv, NULL);
        if (pthread_create(&b->th, NULL, behind_main, b)) {
            pthread_cond_destroy(&b->cv);
            pthread_mutex_destroy(&b->mu);
            free(b);
            return;
        }
        f->bh = b;
    }
    pthread_mutex_lock(&f->bh->mu);
    f->bh->req = 1;
    pthread_cond_signal(&f->bh->cv);
    pthread_mutex_unlock(&f->bh->mu);
}

/* Stops f's thread: 0, or the errno of a background sync that failed. */
static int behind_stop(pfile *f)
{
    struct behind *b = f->bh;
    if (!b)
        return 0;
    pthread_mutex_lock(&b->mu);
    b->stop = 1;
    pthread_cond_signal(&b->cv);
    pthread_mutex_unlock(&b->mu);
    pthread_join(b->th, NULL);
    int e = b->err;
    pthread_cond_destroy(&b->cv);
    pthread_mutex_destroy(&b->mu);
    free(b);
    f->bh = NULL;
    return e;
}

/* A background sync's failure, reported by the next sync or close. */
static int behind_err(pfile *f)
{
    if (!f->bh)
        return 0;
    pthread_mutex_lock(&f->bh->mu);
    int e = f->bh->err;
    pthread_mutex_unlock(&f->bh->mu);
    return e;
}

/* What the kernel says about a refused escape, and what else means "no". */
static int map_errno(int e)
{
    switch (e) {
    case EXDEV: /* RESOLVE_BENEATH: the path would leave the root */
    case ELOOP: /* a link under O_NOFOLLOW or a magic link */
    case EPERM: /* not allowed */
    case EROFS: /* a read-only file system */
    case ETXTBSY:
        return -EACCES;
    case EDQUOT:
    case EFBIG:
        return -ENOSPC;
    case ENAMETOOLONG:
        return -EINVAL;
    case 0:
        return -EIO;
    default:
        return -e;
    }
}

static int sys_openat2(int dirfd, const char *path, int flags, mode_t mode)
{
    struct open_how how = {
        .flags = (unsigned)flags,
        .mode = (flags & O_CREAT) ? mode : 0,
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
    };
    long fd;
    do
        fd = syscall(SYS_openat2, dirfd, path, &how, sizeof how);
    while (fd < 0 && errno == EINTR);
    return (int)fd;
}

/* openat of one component for the walk; a link where it stands is refused
 * as an escape (-EACCES), whatever error the kernel gives for it. */
static int walk_at(int dir, const char *name, int flags, mode_t mode)
{
    int fd = openat(dir, name, flags | O_NOFOLLOW, mode);
    if (fd >= 0)
        return fd;
    int e = errno;
    struct stat st;
    if ((e == ENOTDIR || e == ELOOP || e == EEXIST) &&
        !fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) && S_ISLNK(st.st_mode))
        return -EACCES;
    return map_errno(e);
}

/* Opens components [0, upto) of p beneath the root with flags (the walk
 * adds O_NOFOLLOW to each); returns a descriptor or a negative code. */
static int open_beneath(const cfdp_posixfs *fs, const cfdp__fs_path *p, size_t upto,
                        int flags, mode_t mode)
{
    flags |= O_CLOEXEC;
    if (fs->use_openat2) {
        char rel[CFDP_FS_PATH_MAX + 2];
        cfdp__fs_path_join(p, upto, rel);
        int fd = sys_openat2(fs->root, rel, flags, mode);
        return fd >= 0 ? fd : map_errno(errno);
    }
    int dir = fs->root;
    for (size_t i = 0; i + 1 < upto; i++) {
        int next = walk_at(dir, p->comp[i], O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
        if (dir != fs->root)
            close(dir);
        if (next < 0)
            return next;
        dir = next;
    }
    int fd = upto ? walk_at(dir, p->comp[upto - 1], flags, mode)
                  : openat(dir, ".", flags, mode);
    if (!upto && fd < 0)
        fd = map_errno(errno);
    if (dir != fs->root)
        close(dir);
    if (fd < 0)
        return fd;
    /* O_NOFOLLOW | O_PATH opens a link itself rather than failing */
    if (flags & O_PATH) {
        struct stat st;
        if (fstat(fd, &st) || S_ISLNK(st.st_mode)) {
            close(fd);
            return -EACCES;
        }
    }
    return fd;
}

/* The parent directory of the last component of path, opened O_PATH; 1
 * (nothing opened) if path is the root. */
static int open_parent(const cfdp_posixfs *fs, const char *path, cfdp__fs_path *p,
                       int *dir)
{
    int rc = cfdp__fs_path_parse(path, p);
    if (rc)
        return rc;
    if (!p->n)
        return 1;
    int fd = open_beneath(fs, p, p->n - 1, O_PATH | O_DIRECTORY, 0);
    if (fd < 0)
        return fd;
    *dir = fd;
    return 0;
}

static int px_open(void *ctx, const char *path, unsigned flags, void **file)
{
    cfdp_posixfs *fs = ctx;
    if (!file || !(flags & (CFDP_FS_RD | CFDP_FS_WR)) ||
        (flags &
         ~(CFDP_FS_RD | CFDP_FS_WR | CFDP_FS_CREAT | CFDP_FS_EXCL | CFDP_FS_TRUNC)) ||
        ((flags & CFDP_FS_TRUNC) && !(flags & CFDP_FS_WR)))
        return -EINVAL;
    cfdp__fs_path p;
    int rc = cfdp__fs_path_parse(path, &p);
    if (rc)
        return rc;
    if (!p.n)
        return -EISDIR;
    int of = (flags & CFDP_FS_RD) && (flags & CFDP_FS_WR) ? O_RDWR
             : (flags & CFDP_FS_WR)                       ? O_WRONLY
                                                          : O_RDONLY;
    if (flags & CFDP_FS_CREAT)
        of |= O_CREAT;
    if (flags & CFDP_FS_EXCL)
        of |= O_EXCL;
    /* O_NONBLOCK: a FIFO must not hold the entity; refused below anyway.
     * O_TRUNC waits until the file is known to be a regular one. */
    int fd = open_beneath(fs, &p, p.n, of | O_NONBLOCK, 0666);
    if (fd < 0)
        return fd;
    struct stat st;
    if (fstat(fd, &st)) {
        rc = map_errno(errno);
        goto fail;
    }
    if (S_ISDIR(st.st_mode)) {
        rc = -EISDIR;
        goto fail;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = -EACCES;
        goto fail;
    }
    if (fcntl(fd, F_SETFL, 0) || ((flags & CFDP_FS_TRUNC) && ftruncate(fd, 0))) {
        rc = map_errno(errno);
        goto fail;
    }
    pfile *f = malloc(sizeof *f);
    if (!f) {
        rc = -ENOMEM;
        goto fail;
    }
    f->fd = fd;
    f->flags = flags;
    f->dfd = (flags & CFDP_FS_WR) && !fs->refuse_direct ? -1 : -2;
    f->stage = NULL;
    f->st_off = 0;
    f->st_len = 0;
    f->direct_bytes = 0;
    f->unsynced = 0;
    f->behind_every = fs->sync_behind ? fs->sync_behind : SYNC_BEHIND;
    f->bh = NULL;
    *file = f;
    return 0;
fail:
    close(fd);
    return rc;
}

static int pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
{
    for (size_t done = 0; done < len;) {
        ssize_t n = pwrite(fd, (const char *)buf + done, len - done, (off_t)(off + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            return -EIO;
        done += (size_t)n;
    }
    return 0;
}

/* Drops the direct path for good: the staged bytes go buffered. */
static void direct_off(pfile *f)
{
    if (f->dfd >= 0)
        close(f->dfd);
    f->dfd = -2;
}

/* Writes the staged run out: whole blocks direct, the rest buffered. */
static int stage_flush(pfile *f)
{
    if (!f->st_len)
        return 0;
    size_t whole = f->st_len & ~(size_t)(DIRECT_ALIGN - 1);
    int rc = 0;
    if (whole && f->dfd >= 0) {
        rc = pwrite_all(f->dfd, f->stage, whole, f->st_off);
        if (rc == -EINVAL) { /* the file system takes no O_DIRECT after all */
            direct_off(f);
            rc = 0;
        } else if (rc == 0) {
            f->direct_bytes += whole;
            if ((f->unsynced += whole) >= f->behind_every) {
                f->unsynced = 0;
                behind_kick(f);
            }
        } else {
            return map_errno(-rc);
        }
    }
    if (f->dfd < 0)
        whole = 0;
    if (whole < f->st_len &&
        (rc = pwrite_all(f->fd, f->stage + whole, f->st_len - whole, f->st_off + whole)))
        return map_errno(-rc);
    f->st_off += f->st_len;
    f->st_len = 0;
    return 0;
}

/* Opens the O_DIRECT descriptor and the stage: 0 ready, else not to be. */
static int direct_start(pfile *f)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", f->fd);
    int d = open(path, O_WRONLY | O_DIRECT | O_CLOEXEC);
    void *b = NULL;
    if (d < 0 || posix_memalign(&b, DIRECT_ALIGN, DIRECT_STAGE)) {
        if (d >= 0)
            close(d);
        f->dfd = -2;
        return -1;
    }
    f->dfd = d;
    f->stage = b;
    return 0;
}

static int px_close(void *ctx, void *file)
{
    pfile *f = file;
    if (!f)
        return -EINVAL;
    int frc = stage_flush(f);
    int be = behind_stop(f);
    if (!frc && be)
        frc = map_errno(be);
    if (f->dfd >= 0)
        close(f->dfd);
    free(f->stage);
    int rc = close(f->fd) ? map_errno(errno) : 0;
    free(f);
    if (frc)
        return frc;
    return rc == -EINTR ? 0 : rc; /* Linux closed it anyway */
}

static int px_read(void *ctx, void *file, uint64_t off, void *buf, size_t len,
                   size_t *got)
{
    pfile *f = file;
    if (!f || !got || (len && !buf))
        return -EINVAL;
    if (!(f->flags & CFDP_FS_RD))
        return -EBADF;
    int frc = stage_flush(f);
    if (frc)
        return frc;
    size_t done = 0;
    while (done < len) {
        if (off + done > (uint64_t)INT64_MAX)
            break; /* past any file's end */
        ssize_t n = pread(f->fd, (char *)buf + done, len - done, (off_t)(off + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return map_errno(errno);
        if (n == 0)
            break;
        done += (size_t)n;
    }
    *got = done;
    return 0;
}

static int px_write(void *ctx, void *file, uint64_t off, const void *buf, size_t len)
{
    pfile *f = file;
    if (!f || (len && !buf))
        return -EINVAL;
    if (!(f->flags & CFDP_FS_WR))
        return -EBADF;
    if (off > (uint64_t)INT64_MAX || len > (uint64_t)INT64_MAX - off)
        return -EINVAL;
    const uint8_t *p = buf;
    int rc;
    if (f->dfd == -1 && len >= DIRECT_MIN)
        direct_start(f);
    int appending = f->st_len && f->st_off + f->st_len == off;
    if (f->dfd < 0 || (!appending && len < DIRECT_MIN)) {
        /* buffered; a staged run goes first, so writes land in order */
        if ((rc = stage_flush(f)))
            return rc;
        rc = pwrite_all(f->fd, p, len, off);
        return rc ? map_errno(-rc) : 0;
    }
    if (!appending) { /* a new run, from the next block boundary */
        if ((rc = stage_flush(f)))
            return rc;
        size_t head = (DIRECT_ALIGN - off % DIRECT_ALIGN) % DIRECT_ALIGN;
        if (head > len)
            head = len;
        if (head && (rc = pwrite_all(f->fd, p, head, off)))
            return map_errno(-rc);
        p += head;
        off += head;
        len -= head;
        f->st_off = off;
    }
    while (len) {
        size_t n = DIRECT_STAGE - f->st_len;
        if (n > len)
            n = len;
        memcpy(f->stage + f->st_len, p, n);
        f->st_len += n;
        p += n;
        len -= n;
        if (f->st_len == DIRECT_STAGE && (rc = stage_flush(f)))
            return rc;
    }
    return 0;
}

static int px_truncate(void *ctx, void *file, uint64_t size)
{
    pfile *f = file;
    if (!f)
        return -EINVAL;
    if (!(f->flags & CFDP_FS_WR))
        return -EBADF;
    if (size > (uint64_t)INT64_MAX)
        return -ENOSPC;
    int rc = stage_flush(f);
    if (rc)
        return rc;
    return ftruncate(f->fd, (off_t)size) ? map_errno(errno) : 0;
}

static int px_sync(void *ctx, void *file)
{
    pfile *f = file;
    if (!f)
        return -EINVAL;
    int rc = stage_flush(f);
    if (rc)
        return rc;
    if (fdatasync(f->fd))
        return map_errno(errno);
    int be = behind_err(f); /* what a background sync could not write */
    return be ? map_errno(be) : 0;
}

static int px_stat(void *ctx, const char *path, cfdp_fs_stat *st)
{
    cfdp_posixfs *fs = ctx;
    cfdp__fs_path p;
    int rc = cfdp__fs_path_parse(path, &p);
    if (rc)
        return rc;
    if (!st)
        return -EINVAL;
    int fd = open_beneath(fs, &p, p.n, O_PATH, 0);
    if (fd < 0)
        return fd;
    struct stat s;
    rc = fstat(fd, &s) ? map_errno(errno) : 0;
    close(fd);
    if (rc)
        return rc;
    st->is_dir = S_ISDIR(s.st_mode);
    st->size = S_ISREG(s.st_mode) ? (uint64_t)s.st_size : 0;
    return 0;
}

static int px_rename(void *ctx, const char *from, const char *to)
{
    cfdp_posixfs *fs = ctx;
    cfdp__fs_path pf, pt;
    int df = -1, dt = -1;
    int rc = open_parent(fs, from, &pf, &df);
    if (rc)
        return rc == 1 ? -EACCES : rc;
    if ((rc = open_parent(fs, to, &pt, &dt))) {
        rc = rc == 1 ? -EACCES : rc;
        goto out;
    }
    if (renameat2(df, pf.comp[pf.n - 1], dt, pt.comp[pt.n - 1], RENAME_NOREPLACE))
        rc = map_errno(errno);
out:
    if (dt >= 0)
        close(dt);
    close(df);
    return rc;
}

/* unlinkat or mkdirat on path's last component. root_rc: what the root
 * itself gets. */
static int px_name_op(cfdp_posixfs *fs, const char *path, int op, int root_rc)
{
    cfdp__fs_path p;
    int dir = -1;
    int rc = open_parent(fs, path, &p, &dir);
    if (rc)
        return rc == 1 ? root_rc : rc;
    const char *leaf = p.comp[p.n - 1];
    if (op == 'm')
        rc = mkdirat(dir, leaf, 0777);
    else
        rc = unlinkat(dir, leaf, op == 'd' ? AT_REMOVEDIR : 0);
    rc = rc ? map_errno(errno) : 0;
    if (rc == -EEXIST && op == 'd')
        rc = -ENOTEMPTY; /* Linux may say either for a non-empty directory */
    close(dir);
    return rc;
}

static int px_remove(void *ctx, const char *path)
{
    return px_name_op(ctx, path, 'f', -EISDIR);
}

static int px_mkdir(void *ctx, const char *path)
{
    return px_name_op(ctx, path, 'm', -EEXIST);
}

static int px_rmdir(void *ctx, const char *path)
{
    return px_name_op(ctx, path, 'd', -EACCES);
}

struct ent {
    char *name;
    int is_dir;
    uint64_t size;
};

static int ent_cmp(const void *a, const void *b)
{
    return strcmp(((const struct ent *)a)->name, ((const struct ent *)b)->name);
}

/* Lists regular files and directories in name order; links, devices and
 * the like are left out, so a listing never says what lies behind a link. */
static int px_list(void *ctx, const char *path, cfdp_fs_each each, void *arg)
{
    cfdp_posixfs *fs = ctx;
    cfdp__fs_path p;
    int rc = cfdp__fs_path_parse(path, &p);
    if (rc)
        return rc;
    if (!each)
        return -EINVAL;
    int fd = open_beneath(fs, &p, p.n, O_RDONLY | O_DIRECTORY, 0);
    if (fd < 0)
        return fd;
    DIR *d = fdopendir(fd);
    if (!d) {
        rc = map_errno(errno);
        close(fd);
        return rc;
    }
    struct ent *v = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    errno = 0;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        struct stat st;
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW))
            continue; /* gone since readdir */
        if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
            continue;
        if (n == cap) {
            size_t c = cap ? cap * 2 : 16;
            struct ent *nv = realloc(v, c * sizeof *nv);
            if (!nv) {
                rc = -ENOMEM;
                goto out;
            }
            v = nv;
            cap = c;
        }
        if (!(v[n].name = strdup(de->d_name))) {
            rc = -ENOMEM;
            goto out;
        }
        v[n].is_dir = S_ISDIR(st.st_mode);
        v[n].size = S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
        n++;
        errno = 0;
    }
    if (errno) {
        rc = map_errno(errno);
        goto out;
    }
    if (n)
        qsort(v, n, sizeof *v, ent_cmp);
    for (size_t i = 0; i < n && !rc; i++) {
        cfdp_fs_dirent e = {v[i].name, v[i].is_dir, v[i].size};
        rc = each(arg, &e);
    }
out:
    for (size_t i = 0; i < n; i++)
        free(v[i].name);
    free(v);
    closedir(d);
    return rc;
}

static int px_fd(void *ctx, void *file)
{
    (void)ctx;
    pfile *f = file;
    if (stage_flush(f)) /* whoever reads the descriptor sees what was written */
        return -1;
    return f->fd;
}

void cfdp__posixfs_refuse_direct(cfdp_posixfs *p)
{
    p->refuse_direct = 1;
}

void cfdp__posixfs_sync_behind(cfdp_posixfs *p, uint64_t bytes)
{
    p->sync_behind = bytes;
}

uint64_t cfdp__posixfs_behind_syncs(void *file)
{
    pfile *f = file;
    if (!f || !f->bh)
        return 0;
    pthread_mutex_lock(&f->bh->mu);
    uint64_t n = f->bh->done;
    pthread_mutex_unlock(&f->bh->mu);
    return n;
}

uint64_t cfdp__posixfs_direct_bytes(void *file)
{
    return file ? ((pfile *)file)->direct_bytes : 0;
}

static const cfdp_fs_ops posixfs_ops = {
    .open = px_open,
    .close = px_close,
    .read = px_read,
    .write = px_write,
    .truncate = px_truncate,
    .sync = px_sync,
    .stat = px_stat,
    .rename = px_rename,
    .remove = px_remove,
    .mkdir = px_mkdir,
    .rmdir = px_rmdir,
    .list = px_list,
    .fd = px_fd,
};

int cfdp_posixfs_new(const char *root, cfdp_posixfs **out, cfdp_fs *fs)
{
    if (!root || !out || !fs)
        return -EINVAL;
    cfdp_posixfs *p = calloc(1, sizeof *p);
    if (!p)
        return -ENOMEM;
    p->root = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (p->root < 0) {
        int rc = -errno;
        free(p);
        return rc;
    }
    /* probe openat2: ENOSYS on kernels before 5.6, EPERM under some
     * seccomp filters; either way the walk takes over */
    int fd = sys_openat2(p->root, ".", O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
    if (fd >= 0) {
        close(fd);
        p->use_openat2 = 1;
    }
    *out = p;
    fs->ops = &posixfs_ops;
    fs->ctx = p;
    return 0;
}

void cfdp_posixfs_free(cfdp_posixfs *p)
{
    if (p) {
        close(p->root);
        free(p);
    }
}

void cfdp__posixfs_force_walk(cfdp_posixfs *p)
{
    p->use_openat2 = 0;
}

int cfdp__posixfs_uses_openat2(const cfdp_posixfs *p)
{
    return p->use_openat2;
}
