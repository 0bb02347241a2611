/* A minimal in-memory file system under the store, for the fuzz target. */
#ifndef TERN_SDR_MEMIO_H
#define TERN_SDR_MEMIO_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sdr_io.h"

#define MEMIO_FILES 32

struct memfile {
    char path[256];
    uint8_t *data;
    size_t len, cap;
    int used;
};

struct memio {
    struct memfile f[MEMIO_FILES];
    int fd_file[64]; /* fd -> file index, -1 if closed */
    struct sdr_io io;
};

static struct memfile *memio_find(struct memio *m, const char *path)
{
    for (int i = 0; i < MEMIO_FILES; i++)
        if (m->f[i].used && strcmp(m->f[i].path, path) == 0)
            return &m->f[i];
    return NULL;
}

static int memio_open(void *ctx, const char *path, int create)
{
    struct memio *m = ctx;
    struct memfile *f = memio_find(m, path);
    if (!f) {
        if (!create)
            return -ENOENT;
        for (int i = 0; i < MEMIO_FILES && !f; i++)
            if (!m->f[i].used) {
                f = &m->f[i];
                memset(f, 0, sizeof *f);
                f->used = 1;
                strncpy(f->path, path, sizeof f->path - 1);
            }
        if (!f)
            return -ENOSPC;
    }
    for (int fd = 3; fd < 64; fd++)
        if (m->fd_file[fd] < 0) {
            m->fd_file[fd] = (int)(f - m->f);
            return fd;
        }
    return -EMFILE;
}

static struct memfile *memio_fd(struct memio *m, int fd)
{
    return fd >= 0 && fd < 64 && m->fd_file[fd] >= 0 ? &m->f[m->fd_file[fd]] : NULL;
}

static int memio_close(void *ctx, int fd)
{
    struct memio *m = ctx;
    if (!memio_fd(m, fd))
        return -EBADF;
    m->fd_file[fd] = -1;
    return 0;
}

static ssize_t memio_pread(void *ctx, int fd, void *buf, size_t n, uint64_t off)
{
    struct memfile *f = memio_fd(ctx, fd);
    if (!f)
        return -EBADF;
    if (off >= f->len)
        return 0;
    size_t k = f->len - off < n ? f->len - off : n;
    memcpy(buf, f->data + off, k);
    return (ssize_t)k;
}

static int memio_resize(struct memfile *f, size_t len)
{
    if (len > f->cap) {
        size_t nc = f->cap ? f->cap : 4096;
        while (nc < len)
            nc *= 2;
        uint8_t *p = realloc(f->data, nc);
        if (!p)
            return -ENOMEM;
        f->data = p;
        f->cap = nc;
    }
    if (len > f->len)
        memset(f->data + f->len, 0, len - f->len);
    f->len = len;
    return 0;
}

static ssize_t memio_pwrite(void *ctx, int fd, const void *buf, size_t n, uint64_t off)
{
    struct memfile *f = memio_fd(ctx, fd);
    if (!f)
        return -EBADF;
    if (off + n > f->len && memio_resize(f, off + n))
        return -ENOMEM;
    memcpy(f->data + off, buf, n);
    return (ssize_t)n;
}

static int memio_sync(void *ctx, int fd)
{
    return memio_fd(ctx, fd) ? 0 : -EBADF;
}

static int memio_truncate(void *ctx, int fd, uint64_t len)
{
    struct memfile *f = memio_fd(ctx, fd);
    if (!f)
        return -EBADF;
    if (len < f->len) {
        f->len = len;
        return 0;
    }
    return memio_resize(f, len);
}

static int memio_size(void *ctx, int fd, uint64_t *len)
{
    struct memfile *f = memio_fd(ctx, fd);
    if (!f)
        return -EBADF;
    *len = f->len;
    return 0;
}

static int memio_unlink(void *ctx, const char *path)
{
    struct memfile *f = memio_find(ctx, path);
    if (!f)
        return -ENOENT;
    free(f->data);
    memset(f, 0, sizeof *f);
    return 0;
}

static int memio_rename(void *ctx, const char *from, const char *to)
{
    struct memio *m = ctx;
    struct memfile *f = memio_find(m, from), *t = memio_find(m, to);
    if (!f)
        return -ENOENT;
    if (t && t != f) {
        /* Open descriptors of the replaced file now see nothing useful. */
        for (int fd = 0; fd < 64; fd++)
            if (m->fd_file[fd] == (int)(t - m->f))
                m->fd_file[fd] = -1;
        memio_unlink(ctx, to);
    }
    strncpy(f->path, to, sizeof f->path - 1);
    return 0;
}

static int memio_sync_dir(void *ctx, const char *dir)
{
    return 0;
}

static int memio_exists(void *ctx, const char *path)
{
    struct memio *m = ctx;
    if (strcmp(path, "/mem") == 0)
        return 0;
    return memio_find(m, path) ? 0 : -ENOENT;
}

static void memio_init(struct memio *m)
{
    memset(m, 0, sizeof *m);
    for (int i = 0; i < 64; i++)
        m->fd_file[i] = -1;
    m->io = (struct sdr_io){m,
                            memio_open,
                            memio_close,
                            memio_pread,
                            memio_pwrite,
                            memio_sync,
                            memio_truncate,
                            memio_size,
                            memio_rename,
                            memio_unlink,
                            memio_sync_dir,
                            memio_exists,
                            NULL}; /* no open_direct: writes stay buffered */
}

static void memio_free(struct memio *m)
{
    for (int i = 0; i < MEMIO_FILES; i++)
        if (m->f[i].used)
            free(m->f[i].data);
}

#endif
