/* The real file system under a durable store. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sdr_io.h"

static int px_open(void *ctx, const char *path, int create)
{
    int fd;
    do
        fd = open(path, O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0644);
    while (fd < 0 && errno == EINTR);
    return fd < 0 ? -errno : fd;
}

static int px_close(void *ctx, int fd)
{
    return close(fd) < 0 && errno != EINTR ? -errno : 0;
}

static ssize_t px_pread(void *ctx, int fd, void *buf, size_t n, uint64_t off)
{
    size_t done = 0;
    while (done < n) {
        ssize_t r = pread(fd, (char *)buf + done, n - done, (off_t)(off + done));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -errno;
        if (r == 0)
            break;
        done += (size_t)r;
    }
    return (ssize_t)done;
}

static ssize_t px_pwrite(void *ctx, int fd, const void *buf, size_t n, uint64_t off)
{
    size_t done = 0;
    while (done < n) {
        ssize_t r = pwrite(fd, (const char *)buf + done, n - done, (off_t)(off + done));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -errno;
        done += (size_t)r;
    }
    return (ssize_t)done;
}

static int px_sync(void *ctx, int fd)
{
    int r;
    do
        r = fdatasync(fd);
    while (r < 0 && errno == EINTR);
    return r < 0 ? -errno : 0;
}

static int px_truncate(void *ctx, int fd, uint64_t len)
{
    int r;
    do
        r = ftruncate(fd, (off_t)len);
    while (r < 0 && errno == EINTR);
    return r < 0 ? -errno : 0;
}

static int px_size(void *ctx, int fd, uint64_t *len)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        return -errno;
    *len = (uint64_t)st.st_size;
    return 0;
}

static int px_rename(void *ctx, const char *from, const char *to)
{
    return rename(from, to) < 0 ? -errno : 0;
}

static int px_unlink(void *ctx, const char *path)
{
    return unlink(path) < 0 ? -errno : 0;
}

static int px_sync_dir(void *ctx, const char *dir)
{
    int fd, r;
    do
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return -errno;
    do
        r = fsync(fd);
    while (r < 0 && errno == EINTR);
    int rc = r < 0 ? -errno : 0;
    close(fd);
    return rc;
}

static int px_exists(void *ctx, const char *path)
{
    struct stat st;
    return stat(path, &st) < 0 ? -errno : 0;
}

/* Reopening through /proc names the very file fd has open, whatever was
 * renamed since; file systems without O_DIRECT refuse with EINVAL, and the
 * store then writes through fd. */
static int px_open_direct(void *ctx, int fd)
{
    char path[64];
    int d;
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    do
        d = open(path, O_WRONLY | O_CLOEXEC | O_DIRECT);
    while (d < 0 && errno == EINTR);
    return d < 0 ? -errno : d;
}

static const struct sdr_io px_io = {
    NULL,    px_open,   px_close,  px_pread,    px_pwrite, px_sync,        px_truncate,
    px_size, px_rename, px_unlink, px_sync_dir, px_exists, px_open_direct,
};

TERN_API const struct sdr_io *sdr_io_posix(void)
{
    return &px_io;
}
