/* The file operations under a durable store.
 *
 * The store does all of its file I/O through this table, so a test can put
 * it on a double that simulates power loss: writes not yet made durable by
 * sync are dropped, reordered or torn. The default (sdr_io_posix()) is the
 * real file system. Every operation returns 0 (or a count) or -errno.
 *
 * Durability contract the store relies on (and the double enforces):
 *  - data written with pwrite is durable once sync(fd) returns;
 *  - creating, renaming or unlinking a file is durable once sync_dir(dir)
 *    returns; until then a power cut may undo it.
 */
#ifndef TERN_SDR_IO_H
#define TERN_SDR_IO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "tern/base.h"

#ifdef __cplusplus
extern "C" {
#endif

struct sdr_io {
    void *ctx;
    /** Opens path; create: make it if absent (0644). Returns a descriptor >= 0. */
    int (*open)(void *ctx, const char *path, int create);
    int (*close)(void *ctx, int fd);
    ssize_t (*pread)(void *ctx, int fd, void *buf, size_t n, uint64_t off);
    ssize_t (*pwrite)(void *ctx, int fd, const void *buf, size_t n, uint64_t off);
    /** Makes the file's data (and its size) durable. */
    int (*sync)(void *ctx, int fd);
    int (*truncate)(void *ctx, int fd, uint64_t len);
    /** Current size of the file. */
    int (*size)(void *ctx, int fd, uint64_t *len);
    int (*rename)(void *ctx, const char *from, const char *to);
    /** Removes path; -ENOENT if it does not exist. */
    int (*unlink)(void *ctx, const char *path);
    /** Makes creations, renames and unlinks in dir durable. */
    int (*sync_dir)(void *ctx, const char *dir);
    /** 0 if path exists, -ENOENT if not. */
    int (*exists)(void *ctx, const char *path);
    /** Optional (NULL: not offered). A second descriptor of the file open
     * as fd, for pwrite calls that bypass the page cache (O_DIRECT): their
     * buffer, length and offset are multiples of SDR_IO_DIRECT_ALIGN. The
     * store writes large staged blobs through it, so the kernel copies
     * nothing; sync(fd) still makes them durable (it syncs the file). A
     * pwrite on it that fails with -EINVAL makes the store write through
     * fd from then on. Closed with close. */
    int (*open_direct)(void *ctx, int fd);
};

/** Alignment of buffer, length and offset for writes on open_direct's
 * descriptors (a page: covers 512- and 4096-byte logical blocks). */
#define SDR_IO_DIRECT_ALIGN 4096u

/** The real file system (a shared constant table). */
TERN_API const struct sdr_io *sdr_io_posix(void);

#ifdef __cplusplus
}
#endif
#endif
