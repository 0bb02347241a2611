/* A tradspool-like spool: comp.lang.c's articles are root/comp/lang/c/<n>,
 * with root/comp/lang/c/.overview beside them. Articles are written once
 * to a temporary file and hard-linked under their numbers, so a reader (or
 * a crash) never sees half an article under a number. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nf_int.h"

#define NF__BUCKETS 4096

typedef struct nf__grp {
    struct nf__grp *next;
    uint64_t high; /* highest number in use */
    char name[];
} nf__grp;

struct nf_spool {
    char *root;
    int root_fd;
    uint64_t tmp_seq; /* names temporary files: unique within this handle */
    nf__grp *buckets[NF__BUCKETS];
};

static uint32_t nf__fnv(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static int nf__mkdirs(char *path)
{
    /* path is writable: each '/' is cut in turn to make the parents. */
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        int r = mkdir(path, 0755);
        *p = '/';
        if (r < 0 && errno != EEXIST)
            return -errno;
    }
    if (mkdir(path, 0755) < 0 && errno != EEXIST)
        return -errno;
    struct stat st;
    if (stat(path, &st) < 0)
        return -errno;
    return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

int nf_spool_open(nf_spool **out, const char *dir, nf_err *err)
{
    nf_spool *sp = calloc(1, sizeof *sp);
    if (!sp)
        return nf__fail(err, NF_R_IO, -ENOMEM, "out of memory");
    sp->root = strdup(dir);
    sp->root_fd = -1;
    if (!sp->root) {
        free(sp);
        return nf__fail(err, NF_R_IO, -ENOMEM, "out of memory");
    }
    int rc = nf__mkdirs(sp->root);
    if (rc == 0) {
        sp->root_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (sp->root_fd < 0)
            rc = -errno;
    }
    if (rc) {
        nf_spool_close(sp);
        return nf__fail(err, NF_R_IO, rc, "spool %s: %s", dir, tern_strerror(rc));
    }
    *out = sp;
    return 0;
}

void nf_spool_close(nf_spool *sp)
{
    if (!sp)
        return;
    for (size_t i = 0; i < NF__BUCKETS; i++)
        for (nf__grp *g = sp->buckets[i], *n; g; g = n) {
            n = g->next;
            free(g);
        }
    if (sp->root_fd >= 0)
        close(sp->root_fd);
    free(sp->root);
    free(sp);
}

int nf_spool_sync(nf_spool *sp)
{
    return syncfs(sp->root_fd) < 0 ? -errno : 0;
}

/* root/comp/lang/c for comp.lang.c. */
static int nf__group_dir(const nf_spool *sp, const char *group, char *buf, size_t cap)
{
    if (!nf_group_valid(group, strlen(group)))
        return -EINVAL;
    int n = snprintf(buf, cap, "%s/%s", sp->root, group);
    if (n < 0 || (size_t)n >= cap)
        return -ENAMETOOLONG;
    for (char *p = buf + strlen(sp->root) + 1; *p; p++)
        if (*p == '.')
            *p = '/';
    return 0;
}

/* The highest numbered file in dir (0 if none or no dir). */
static uint64_t nf__scan_high(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    uint64_t high = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *s = e->d_name;
        if (*s < '1' || *s > '9' || strlen(s) > 19)
            continue;
        uint64_t v = 0;
        for (; *s >= '0' && *s <= '9'; s++)
            v = v * 10 + (uint64_t)(*s - '0');
        if (*s == 0 && v > high)
            high = v;
    }
    closedir(d);
    return high;
}

static int nf__grp_get(nf_spool *sp, const char *group, const char *dir, nf__grp **out)
{
    uint32_t b = nf__fnv(group) % NF__BUCKETS;
    for (nf__grp *g = sp->buckets[b]; g; g = g->next)
        if (strcmp(g->name, group) == 0) {
            *out = g;
            return 0;
        }
    size_t n = strlen(group) + 1;
    nf__grp *g = malloc(sizeof *g + n);
    if (!g)
        return -ENOMEM;
    memcpy(g->name, group, n);
    g->high = dir ? nf__scan_high(dir) : 0;
    g->next = sp->buckets[b];
    sp->buckets[b] = g;
    *out = g;
    return 0;
}

int nf_spool_high(nf_spool *sp, const char *group, uint64_t *high)
{
    char dir[PATH_MAX];
    int rc = nf__group_dir(sp, group, dir, sizeof dir);
    if (rc)
        return rc;
    nf__grp *g;
    if ((rc = nf__grp_get(sp, group, dir, &g)) != 0)
        return rc;
    *high = g->high;
    return 0;
}

/* An overview field: unfolded, then TAB, CR and LF made spaces. */
static size_t nf__ov_field(char *dst, size_t cap, nf_slice v)
{
    size_t o = 0;
    for (size_t i = 0; i < v.n && o + 1 < cap; i++) {
        char c = v.p[i];
        if (c == '\r' && i + 1 < v.n && v.p[i + 1] == '\n')
            continue; /* CRLF of a fold: the WSP after it stays */
        if (c == '\n')
            continue;
        dst[o++] = (c == '\t' || c == '\r') ? ' ' : c;
    }
    return o;
}

static int nf__write_all(int fd, const void *data, size_t len)
{
    const uint8_t *p = data;
    while (len) {
        ssize_t w = write(fd, p, len);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

static int nf__overview(const char *dir, uint64_t num, const nf_msg *m, size_t len)
{
    /* Header lines are at most 998 bytes, but folded fields may be longer:
     * 8 KiB per field is plenty for an overview and bounds the line. */
    static const size_t field_cap = 8192;
    char *line = malloc(6 * field_cap + 64);
    if (!line)
        return -ENOMEM;
    size_t o = (size_t)sprintf(line, "%llu", (unsigned long long)num);
    const nf_slice *f[] = {&m->subject, &m->from, &m->date, &m->message_id,
                           &m->references};
    for (size_t i = 0; i < 5; i++) {
        line[o++] = '\t';
        o += nf__ov_field(line + o, field_cap, *f[i]);
    }
    o += (size_t)sprintf(line + o, "\t%zu\t%zu\n", len, m->body_lines);
    char path[PATH_MAX];
    int rc = 0;
    if ((size_t)snprintf(path, sizeof path, "%s/.overview", dir) >= sizeof path) {
        rc = -ENAMETOOLONG;
    } else {
        int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd < 0)
            rc = -errno;
        else {
            /* One write per line: O_APPEND keeps concurrent lines whole. */
            rc = nf__write_all(fd, line, o);
            close(fd);
        }
    }
    free(line);
    return rc;
}

int nf_spool_store(nf_spool *sp, const void *article, size_t len, const nf_msg *m,
                   nf_spool_where *where, nf_err *err)
{
    if (m->ngroups == 0)
        return nf__fail(err, NF_R_BAD_ARTICLE, -EINVAL, "article names no newsgroup");
    char tmp[PATH_MAX], dir[PATH_MAX], path[PATH_MAX], group[512];
    /* Unique per process and handle; another handle on the same spool in
     * this process may have taken the name, so step on past it. */
    int fd = -1;
    for (int tries = 0; fd < 0 && tries < 1000; tries++) {
        snprintf(tmp, sizeof tmp, "%s/.incoming.%ld.%llu", sp->root, (long)getpid(),
                 (unsigned long long)sp->tmp_seq++);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    if (fd < 0)
        return nf__fail(err, NF_R_IO, -errno, "%s: %s", tmp, strerror(errno));
    int rc = nf__write_all(fd, article, len);
    if (close(fd) < 0 && rc == 0)
        rc = -errno;
    if (rc) {
        unlink(tmp);
        return nf__fail(err, NF_R_IO, rc, "%s: %s", tmp, tern_strerror(rc));
    }
    size_t stored = 0;
    uint64_t first = 0;
    for (size_t i = 0; i < m->ngroups; i++) {
        if (nf_msg_group(m, i, group, sizeof group) != 0 ||
            nf__group_dir(sp, group, dir, sizeof dir) != 0) {
            rc = nf__fail(err, NF_R_BAD_ARTICLE, -EINVAL, "bad newsgroup #%zu", i + 1);
            break;
        }
        if ((rc = nf__mkdirs(dir)) != 0) {
            rc = nf__fail(err, NF_R_IO, rc, "%s: %s", dir, tern_strerror(rc));
            break;
        }
        nf__grp *g;
        if ((rc = nf__grp_get(sp, group, dir, &g)) != 0) {
            rc = nf__fail(err, NF_R_IO, rc, "out of memory");
            break;
        }
        /* The next number not taken (a file there that we did not count,
         * or a subgroup's directory named like a number, is skipped). */
        for (;;) {
            if (g->high == UINT64_MAX) {
                rc =
                    nf__fail(err, NF_R_LIMIT, TERN_EFULL, "%s: numbers exhausted", group);
                break;
            }
            uint64_t n = g->high + 1;
            if ((size_t)snprintf(path, sizeof path, "%s/%llu", dir,
                                 (unsigned long long)n) >= sizeof path) {
                rc = nf__fail(err, NF_R_IO, -ENAMETOOLONG, "%s: name too long", dir);
                break;
            }
            if (link(tmp, path) == 0) {
                g->high = n;
                break;
            }
            if (errno != EEXIST) {
                rc = nf__fail(err, NF_R_IO, -errno, "%s: %s", path, strerror(errno));
                break;
            }
            g->high = n;
        }
        if (rc)
            break;
        if (i == 0)
            first = g->high;
        if ((rc = nf__overview(dir, g->high, m, len)) != 0) {
            rc = nf__fail(err, NF_R_IO, rc, "%s/.overview: %s", dir, tern_strerror(rc));
            break;
        }
        stored++;
    }
    unlink(tmp);
    if (rc)
        return rc;
    if (where) {
        where->ngroups = stored;
        where->first_num = first;
    }
    return 0;
}
