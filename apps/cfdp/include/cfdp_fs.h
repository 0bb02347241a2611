/* libterncfdp: the filestore a CFDP entity reads and writes files through.
 *
 * The entity machines (cfdp.h) do no file system calls of their own: every
 * file access goes through a cfdp_fs, a table of operations and a context.
 * Two filestores come with the library:
 *
 * - cfdp_memfs: files in memory, for tests and the simulator. Besides plain
 *   files it holds *pattern* files, whose bytes are a function of their
 *   offset and a seed, so a 5 GiB source costs no memory, and pattern
 *   *sinks*, which check every write against the pattern and keep only the
 *   ranges written, so a 5 GiB destination costs memory for its gaps.
 * - cfdp_posixfs: a directory of the host (the filestore root). Every path
 *   is resolved beneath the root; a path that would leave it (an absolute
 *   path, "..", a symbolic link pointing out) is refused with -EACCES and
 *   nothing outside the root is touched.
 *
 * Paths are the names CFDP carries (at most 255 bytes, no NUL), relative to
 * the filestore's root, '/' separated. Every operation returns 0 or a
 * negative code: -ENOENT (no such file or directory), -EEXIST, -EACCES (not
 * allowed, or outside the root), -ENOTDIR, -EISDIR, -ENOTEMPTY, -ENOSPC,
 * -EIO, -EINVAL (a bad path, longer than CFDP_FS_PATH_MAX), -ENOMEM,
 * -EBADF (reading a file not opened CFDP_FS_RD, writing one not opened
 * CFDP_FS_WR). Empty components and "." are skipped; "" names the root
 * (for stat and list). Both filestores refuse absolute paths and every
 * ".." component with -EACCES, even one that would stay beneath the root,
 * so a test of path escapes means the same on either.
 *
 * open: CFDP_FS_RD and/or CFDP_FS_WR must be given; CFDP_FS_TRUNC needs
 * CFDP_FS_WR; a pattern file opens read-only (-EACCES for CFDP_FS_WR); a
 * directory gives -EISDIR. A file removed or renamed over while open stays
 * readable and writable through its handles until closed.
 */
#ifndef TERN_CFDP_FS_H
#define TERN_CFDP_FS_H

#include <stddef.h>
#include <stdint.h>

#include "cfdp_pdu.h"
#include "tern/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Longest path a filestore takes (a CFDP LV holds 255 bytes). */
#define CFDP_FS_PATH_MAX 255

/** cfdp_fs_ops.open flags. */
#define CFDP_FS_RD    0x1u  /**< read */
#define CFDP_FS_WR    0x2u  /**< write */
#define CFDP_FS_CREAT 0x4u  /**< create if absent */
#define CFDP_FS_EXCL  0x8u  /**< with CREAT: -EEXIST if present */
#define CFDP_FS_TRUNC 0x10u /**< truncate to 0 on open */

/** What stat reports. */
typedef struct cfdp_fs_stat {
    int is_dir;    /**< 1: a directory */
    uint64_t size; /**< a file's size in bytes (0 for a directory) */
} cfdp_fs_stat;

/** One directory entry, for list. */
typedef struct cfdp_fs_dirent {
    const char *name; /**< the entry's name within the directory */
    int is_dir;
    uint64_t size;
} cfdp_fs_dirent;

/** Called for each entry of a listed directory; non-zero stops the listing
 * and list returns it. */
typedef int (*cfdp_fs_each)(void *arg, const cfdp_fs_dirent *ent);

/** The operations; ctx is cfdp_fs.ctx, file what open returned. */
typedef struct cfdp_fs_ops {
    int (*open)(void *ctx, const char *path, unsigned flags, void **file);
    int (*close)(void *ctx, void *file);
    /** Reads up to len bytes at off; *got < len only at the end of the file. */
    int (*read)(void *ctx, void *file, uint64_t off, void *buf, size_t len, size_t *got);
    /** Writes len bytes at off (a file may be written out of order, with holes). */
    int (*write)(void *ctx, void *file, uint64_t off, const void *buf, size_t len);
    /** Sets the file's size (cuts, or extends with zeros). */
    int (*truncate)(void *ctx, void *file, uint64_t size);
    /** Makes what was written durable (may be a no-op). */
    int (*sync)(void *ctx, void *file);
    int (*stat)(void *ctx, const char *path, cfdp_fs_stat *st);
    /** Renames a file; -EEXIST if to exists. */
    int (*rename)(void *ctx, const char *from, const char *to);
    /** Deletes a file (not a directory). */
    int (*remove)(void *ctx, const char *path);
    int (*mkdir)(void *ctx, const char *path);
    /** Removes an empty directory. */
    int (*rmdir)(void *ctx, const char *path);
    /** Calls each for every entry of directory path ("" is the root), in
     * name order. */
    int (*list)(void *ctx, const char *path, cfdp_fs_each each, void *arg);
    /** Optional: the descriptor behind an open file (owned by the file), so
     * a host may hand a file's bytes on without reading them (see
     * cfdp_host.send_file); negative if there is none. */
    int (*fd)(void *ctx, void *file);
} cfdp_fs_ops;

/** A filestore: its operations and their context. */
typedef struct cfdp_fs {
    const cfdp_fs_ops *ops;
    void *ctx;
} cfdp_fs;

/* ------------------------------------------------------------- memfs */

typedef struct cfdp_memfs cfdp_memfs;

/** An empty in-memory filestore; *fs gets its table. */
TERN_API int cfdp_memfs_new(cfdp_memfs **out, cfdp_fs *fs);

/** Frees it and its files. NULL is fine. */
TERN_API void cfdp_memfs_free(cfdp_memfs *m);

/** Creates (or replaces) file path with data[0..len) (parent directories
 * are made as needed). */
TERN_API int cfdp_memfs_put(cfdp_memfs *m, const char *path, const void *data,
                            size_t len);

/** Creates a read-only pattern file of size bytes whose byte at offset o
 * is cfdp_memfs_pattern_byte(seed, o); it holds no data. */
TERN_API int cfdp_memfs_put_pattern(cfdp_memfs *m, const char *path, uint64_t size,
                                    uint64_t seed);

/** The byte a pattern file of seed holds at offset o. */
TERN_API uint8_t cfdp_memfs_pattern_byte(uint64_t seed, uint64_t o);

/** Makes path a pattern sink (parents made as needed; an existing file's
 * content is dropped): writes to it are compared with the pattern of seed
 * (a mismatching write fails with -EIO, is counted and not kept) and only
 * the ranges written are kept, merged. It stays a sink when opened with
 * CFDP_FS_TRUNC (emptied) and when renamed; reads give the pattern where
 * written and zeros in holes; truncate past its written data leaves a
 * hole (not "written"). The receiver must write it in place: a file
 * created elsewhere and renamed onto path is not a sink. */
TERN_API int cfdp_memfs_expect_pattern(cfdp_memfs *m, const char *path, uint64_t seed);

/** For a pattern sink: 1 if [0, size) was written (all of it matching) and
 * the file's size is size, else 0; *mismatches (may be NULL) gets the
 * writes that did not match. */
TERN_API int cfdp_memfs_pattern_complete(cfdp_memfs *m, const char *path, uint64_t size,
                                         uint64_t *mismatches);

/** A plain file's bytes (a view valid until the file changes) and size;
 * -ENOENT if there is no such plain file. */
TERN_API int cfdp_memfs_get(cfdp_memfs *m, const char *path, const uint8_t **data,
                            size_t *len);

/** The SHA-256 of a file's bytes: a plain file's, a pattern file's, or
 * what a sink reads back (its unwritten holes as zeros). */
TERN_API int cfdp_memfs_sha256(cfdp_memfs *m, const char *path, uint8_t out[32]);

/** The SHA-256 of data[0..len) (FIPS 180-4), to compare with the above. */
TERN_API void cfdp_sha256(const void *data, size_t len, uint8_t out[32]);

/** Heap bytes the filestore holds for file contents and ranges (what a
 * sparse 5 GiB transfer must keep small). */
TERN_API uint64_t cfdp_memfs_bytes_held(const cfdp_memfs *m);

/** Makes the next n operations named op (the cfdp_fs_ops member's name:
 * "open", "close", "read", "write", "truncate", "sync", "stat", "rename",
 * "remove", "mkdir", "rmdir", "list"; or "*" for any) fail with rc (a
 * negative code; others become -EIO), to test the entity's filestore
 * faults. A rule for op replaces the previous one; n 0 clears it. A close
 * that fails still releases its handle. At most 8 rules are kept. */
TERN_API void cfdp_memfs_fail(cfdp_memfs *m, const char *op, unsigned n, int rc);

/** Caps cfdp_memfs_bytes_held: a write, truncate or put that would pass
 * bytes fails with -ENOSPC (a full filestore). Default: no cap. */
TERN_API void cfdp_memfs_set_limit(cfdp_memfs *m, uint64_t bytes);

/** Handles open now (a test's check that the entity closes its files). */
TERN_API unsigned cfdp_memfs_open_files(const cfdp_memfs *m);

/* ------------------------------------------------- filestore requests */

/** Options of cfdp_fs_requests_execute (its ctx; NULL: all 0). */
typedef struct cfdp_fs_exec_opts {
    /** 1: responses to actions naming one file carry an empty second-name
     * LV (ION 4.1.3's form, cfdp_pdu.h); 0: the standard's form. */
    uint8_t empty_second;
} cfdp_fs_exec_opts;

/**
 * Performs one filestore request (a CFDP_TLV_FS_REQUEST TLV) on fs and
 * returns its status (enum cfdp_fs_status for req->action): success, the
 * action's "does not exist" / "already exists" codes, or its "not allowed"
 * code for anything else, a name that would leave the filestore's root
 * (absolute, "..", a link pointing out), an empty name or one with a NUL
 * byte included. Create file makes an empty file (truncating one that
 * exists); append adds the second file's bytes to the end of the first;
 * replace makes the first file's content a copy of the second's (which
 * stays); deny file / deny directory remove the file or empty directory if
 * it exists and succeed if it does not. Returns -EINVAL if req is not a
 * filestore request.
 */
TERN_API int cfdp_fs_request_run(const cfdp_fs *fs, const cfdp_tlv *req);

/**
 * Executes the filestore requests of reqs (other TLVs in the list are
 * skipped) on fs in their order, as CCSDS 727.0-B-5 4.9 has the receiving
 * entity do: once one fails, the rest are not performed (status 1111,
 * nothing touched). Writes one filestore response TLV per request, in
 * order, encoded, into out[0..cap): the request's action and names, the
 * status, an empty filestore message. Sets *out_len and *out_count.
 * ctx: a cfdp_fs_exec_opts or NULL. The signature is cfdp.h's
 * cfdp_fs_requests_fn, so an entity's configuration can name it.
 * Returns 0 (whatever the statuses), TERN_ENOSPACE if the responses would
 * not fit cap, the error cfdp_tlv_encode gives for a response that cannot
 * be encoded (a request of 255 value bytes leaves no room for the
 * message's length byte), or what cfdp_tlvs_next returns for a list it
 * cannot read; on every error nothing was executed.
 */
TERN_API int cfdp_fs_requests_execute(void *ctx, const cfdp_fs *fs, const cfdp_tlvs *reqs,
                                      uint8_t *out, size_t cap, size_t *out_len,
                                      size_t *out_count);

/* ------------------------------------------------------------ posixfs */

typedef struct cfdp_posixfs cfdp_posixfs;

/** A filestore rooted at directory root (which must exist); *fs gets its
 * table. Paths are resolved beneath root (openat2 RESOLVE_BENEATH where the
 * kernel has it, else component by component with O_NOFOLLOW). */
TERN_API int cfdp_posixfs_new(const char *root, cfdp_posixfs **out, cfdp_fs *fs);

/** Closes the root. NULL is fine. */
TERN_API void cfdp_posixfs_free(cfdp_posixfs *p);

#ifdef __cplusplus
}
#endif
#endif
