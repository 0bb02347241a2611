/* posixfs internals the tests reach. */
#ifndef TERN_CFDP_POSIXFS_INT_H
#define TERN_CFDP_POSIXFS_INT_H

#include "cfdp_fs.h"

/** Makes p resolve paths component by component with O_NOFOLLOW, as on a
 * kernel without openat2 (so the tests cover that path on this one). */
TERN_API void cfdp__posixfs_force_walk(cfdp_posixfs *p);

/** 1 if p resolves with openat2, 0 if by the walk. */
TERN_API int cfdp__posixfs_uses_openat2(const cfdp_posixfs *p);

/** Makes p's files refuse O_DIRECT, as a file system without it does. */
TERN_API void cfdp__posixfs_refuse_direct(cfdp_posixfs *p);

/** Files of p sync in the background every bytes written direct (0: the
 * default, 64 MiB). */
TERN_API void cfdp__posixfs_sync_behind(cfdp_posixfs *p, uint64_t bytes);

/** Background syncs an open file's thread has done so far. */
TERN_API uint64_t cfdp__posixfs_behind_syncs(void *file);

/** Bytes of an open file written with O_DIRECT so far (file as open gave). */
TERN_API uint64_t cfdp__posixfs_direct_bytes(void *file);

#endif
