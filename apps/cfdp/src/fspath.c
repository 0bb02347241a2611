/* Path rules shared by the memfs and the posixfs. */
#include <errno.h>
#include <string.h>

#include "fspath.h"

int cfdp__fs_path_parse(const char *path, cfdp__fs_path *p)
{
    p->n = 0;
    if (!path)
        return -EINVAL;
    size_t len = strlen(path);
    if (len > CFDP_FS_PATH_MAX)
        return -EINVAL;
    if (path[0] == '/')
        return -EACCES;
    memcpy(p->buf, path, len + 1);
    for (char *s = p->buf, *save = NULL, *c; (c = strtok_r(s, "/", &save)); s = NULL) {
        if (strcmp(c, ".") == 0)
            continue;
        if (strcmp(c, "..") == 0) {
            p->n = 0;
            return -EACCES;
        }
        p->comp[p->n++] = c; /* 255 bytes hold at most 128 components */
    }
    return 0;
}

void cfdp__fs_path_join(const cfdp__fs_path *p, size_t upto,
                        char out[CFDP_FS_PATH_MAX + 2])
{
    size_t o = 0;
    for (size_t i = 0; i < upto; i++) {
        size_t l = strlen(p->comp[i]);
        if (i)
            out[o++] = '/';
        memcpy(out + o, p->comp[i], l);
        o += l;
    }
    if (!o)
        out[o++] = '.';
    out[o] = 0;
}
