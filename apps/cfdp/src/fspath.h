/* The path rules both filestores share (cfdp_fs.h): a CFDP name split into
 * components, with escapes refused before any lookup. */
#ifndef TERN_CFDP_FSPATH_H
#define TERN_CFDP_FSPATH_H

#include <stddef.h>

#include "cfdp_fs.h"

#define CFDP__FS_DEPTH 128 /* components a 255-byte path can have */

typedef struct cfdp__fs_path {
    char buf[CFDP_FS_PATH_MAX + 1];
    char *comp[CFDP__FS_DEPTH];
    size_t n; /* 0: the root */
} cfdp__fs_path;

/** Splits path into p's components: empty ones and "." are skipped; NULL
 * or longer than CFDP_FS_PATH_MAX: -EINVAL; absolute, or any "..": -EACCES
 * (refused even where it would stay beneath the root, so no lookup ever
 * climbs). p->n is 0 on an error. */
int cfdp__fs_path_parse(const char *path, cfdp__fs_path *p);

/** Writes components [0, upto) joined by '/' into out ("." for none). */
void cfdp__fs_path_join(const cfdp__fs_path *p, size_t upto,
                        char out[CFDP_FS_PATH_MAX + 2]);

#endif
