/* Finding and reading a node's configuration (see node_int.h, docs/node.md):
 * an ionstart host.rc, or ION's admin files one per program, as
 * "ionstart -i node.ionrc -s node.ionsecrc -l node.ltprc -b node.bprc -p
 * node.ipnrc" runs them. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "node_int.h"

#define FAIL(code, ...)                                                                  \
    do {                                                                                 \
        if (err && errlen)                                                               \
            snprintf(err, errlen, __VA_ARGS__);                                          \
        rc = (code);                                                                     \
        goto out;                                                                        \
    } while (0)

static int is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Reads a whole file, NUL-terminated (*len excludes the NUL). */
TERN_API int node__read_file(const char *path, char **text, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -errno;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (n < cap)
            break;
        char *nb = realloc(buf, cap * 2 + 1);
        if (!nb) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
        cap *= 2;
    }
    int e = ferror(f) ? -EIO : 0;
    fclose(f);
    if (!buf)
        return -ENOMEM;
    if (e) {
        free(buf);
        return e;
    }
    buf[n] = '\0';
    *text = buf;
    *len = n;
    return 0;
}

/* If name (a file name, no directory) is "<stem>.<suffix>" of an admin file
 * kind, copies the stem. */
static int stem_of(const char *name, char *stem, size_t cap)
{
    const char *suffix;
    size_t n = strlen(name);
    for (size_t i = 0; bp_hostrc_kind(i, &suffix, NULL) == 0; i++) {
        size_t s = strlen(suffix);
        if (n > s + 1 && name[n - s - 1] == '.' && strcmp(name + n - s, suffix) == 0) {
            if (n - s - 1 >= cap)
                return -ENAMETOOLONG;
            memcpy(stem, name, n - s - 1);
            stem[n - s - 1] = '\0';
            return 0;
        }
    }
    return TERN_ENOTFOUND;
}

/* The stem of the only "<stem>.ionrc" in dir; names lists them otherwise. */
static int find_stem(const char *dir, char *stem, size_t cap, char *names,
                     size_t namescap, int *count)
{
    DIR *d = opendir(dir);
    if (!d)
        return -errno;
    struct dirent *e;
    size_t used = 0;
    *count = 0;
    names[0] = '\0';
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n <= 6 || strcmp(e->d_name + n - 6, ".ionrc") != 0)
            continue;
        char path[PATH_MAX + 256];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (!is_file(path))
            continue;
        if (++*count == 1 && n - 6 < cap) {
            memcpy(stem, e->d_name, n - 6);
            stem[n - 6] = '\0';
        }
        int w = snprintf(names + used, used < namescap ? namescap - used : 0, "%s%s",
                         used ? ", " : "", e->d_name);
        if (w > 0)
            used += (size_t)w;
    }
    closedir(d);
    return 0;
}

TERN_API int node__config_read(const char *dir, const char *rcfile, uint64_t now_ms,
                               bp_hostrc *h, node_config *nc, char *err, size_t errlen)
{
    int rc = 0;
    char stem[256] = "", path[PATH_MAX + 300];
    char *texts[16] = {0};
    bp_hostrc_file files[16];
    size_t nfiles = 0, used = 0;
    memset(h, 0, sizeof *h);
    memset(nc, 0, sizeof *nc);
    if (err && errlen)
        err[0] = '\0';

    if (rcfile) {
        /* the file's directory holds the rest of a set */
        snprintf(nc->base, sizeof nc->base, "%.*s", (int)sizeof nc->base - 1, rcfile);
        char *slash = strrchr(nc->base, '/');
        const char *name = slash ? slash + 1 : rcfile;
        if (stem_of(name, stem, sizeof stem) != 0)
            stem[0] = '\0';
        if (slash)
            *slash = '\0';
        else
            snprintf(nc->base, sizeof nc->base, ".");
        if (!stem[0])
            snprintf(path, sizeof path, "%s", rcfile);
    } else {
        snprintf(nc->base, sizeof nc->base, "%s", dir);
        snprintf(path, sizeof path, "%s/host.rc", dir);
        char ionrc[PATH_MAX + 16];
        snprintf(ionrc, sizeof ionrc, "%s/node.ionrc", dir);
        if (is_file(path)) {
            if (is_file(ionrc))
                snprintf(nc->note, sizeof nc->note,
                         "%s is read; node.ionrc and the other admin files beside it "
                         "are not (a node reads one or the other)",
                         path);
        } else if (is_file(ionrc)) {
            snprintf(stem, sizeof stem, "node");
        } else {
            char names[512];
            int count = 0;
            if ((rc = find_stem(dir, stem, sizeof stem, names, sizeof names, &count)))
                FAIL(rc, "node directory %s: %s", dir, tern_strerror(rc));
            if (count == 0)
                FAIL(TERN_ENOTFOUND,
                     "%s: no host.rc and no node.ionrc; expected an ionstart host.rc, or "
                     "ION's admin files node.ionrc, node.ltprc, node.bprc, node.ipnrc "
                     "(node.ionsecrc, ...)",
                     dir);
            if (count > 1)
                FAIL(TERN_EEXIST,
                     "%s: no host.rc and several ionadmin files (%s); expected host.rc, "
                     "node.ionrc or a single <name>.ionrc, or name one: tern start "
                     "%s/<name>.ionrc",
                     dir, names, dir);
        }
    }

    if (!stem[0]) { /* an ionstart host.rc */
        if ((rc = node__read_file(path, &texts[0], &files[0].len)))
            FAIL(rc, "%s: %s", path, tern_strerror(rc));
        files[0].name = strdup(path);
        if (!files[0].name)
            FAIL(-ENOMEM, "%s: %s", path, tern_strerror(-ENOMEM));
        files[0].program = NULL;
        files[0].text = texts[0];
        nfiles = 1;
        snprintf(nc->used, sizeof nc->used, "%s", path);
    } else {
        const char *suffix, *program;
        for (size_t i = 0; bp_hostrc_kind(i, &suffix, &program) == 0 && nfiles < 16;
             i++) {
            snprintf(path, sizeof path, "%s/%s.%s", nc->base, stem, suffix);
            if (!is_file(path)) {
                if (i == 0)
                    FAIL(TERN_ENOTFOUND,
                         "%s: no such file; a node read from ION's admin files needs "
                         "its ionadmin file (%s.ionrc)",
                         path, stem);
                continue;
            }
            if ((rc = node__read_file(path, &texts[nfiles], &files[nfiles].len)))
                FAIL(rc, "%s: %s", path, tern_strerror(rc));
            files[nfiles].text = texts[nfiles];
            files[nfiles].program = program;
            if (!(files[nfiles].name = strdup(path)))
                FAIL(-ENOMEM, "%s: %s", path, tern_strerror(-ENOMEM));
            nfiles++;
            int w = snprintf(nc->used + used,
                             used < sizeof nc->used ? sizeof nc->used - used : 0, "%s%s",
                             used ? ", " : "", used ? strrchr(path, '/') + 1 : path);
            if (w > 0)
                used += (size_t)w;
        }
    }
    rc = bp_hostrc_read_files(h, files, nfiles, now_ms, err, errlen);
out:
    for (size_t i = 0; i < nfiles; i++)
        free((char *)files[i].name);
    for (size_t i = 0; i < 16; i++)
        free(texts[i]);
    return rc;
}
