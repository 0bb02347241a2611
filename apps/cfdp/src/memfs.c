/* cfdp_memfs: a filestore in memory (see cfdp_fs.h).
 *
 * A tree of nodes; a directory keeps its children sorted by name so list
 * walks them in order and lookups are binary searches. A plain file is one
 * growable buffer. A pattern file holds only its size and seed. A sink holds
 * a sorted set of disjoint, non-adjacent written ranges, so a file written
 * in order costs one range whatever its size, and one with holes costs a
 * range per hole. A file removed or renamed over while open lives on, out
 * of the tree, until its last handle is closed.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cfdp_fs.h"
#include "fspath.h"
#include "sha256.h"
#include "tern/ckd.h"

enum { N_DIR, N_PLAIN, N_PATTERN, N_SINK };

#define FAIL_RULES  8
#define CHUNK       4096
#define PLAIN_LIMIT ((uint64_t)SIZE_MAX / 2)

struct range {
    uint64_t start, end;
};

typedef struct node {
    char *name;
    struct node *parent; /* NULL: the root, or out of the tree */
    int kind;
    unsigned opens;
    uint64_t size;
    uint64_t seed;
    struct node **kids; /* N_DIR, sorted by name */
    size_t nkids, capkids;
    uint8_t *data; /* N_PLAIN */
    size_t cap;
    struct range *r; /* N_SINK */
    size_t nr, capr;
    uint64_t mismatches;
} node;

struct fail_rule {
    char op[16];
    unsigned n;
    int rc;
};

struct cfdp_memfs {
    node root;
    uint64_t held, limit;
    unsigned open_files;
    node **orphans; /* out of the tree, still open */
    size_t norphans, caporphans;
    struct fail_rule fail[FAIL_RULES];
};

typedef struct mfile {
    node *n;
    unsigned flags;
} mfile;

/* ------------------------------------------------------------ patterns */

static inline uint64_t mix(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* Word k of seed's pattern: one splitmix64 per 64-byte line, and each word
 * of the line that mixed value XOR its index times an odd constant, so every
 * word differs from its neighbours and every byte offset has its own byte
 * (a segment moved by any amount mismatches), at an eighth of the mixing
 * cost: the pattern is generated on every read of a source and every write
 * to a sink, at the speed the benchmarks push data. Byte o is byte (o & 7)
 * of word o >> 3. */
#define WORD_STEP 0xD6E8FEB86659FD93ull

static inline uint64_t line_hash(uint64_t seed, uint64_t line)
{
    return mix(line + seed * 0x9E3779B97F4A7C15ull);
}

static inline uint64_t pattern_word(uint64_t seed, uint64_t k)
{
    return line_hash(seed, k >> 3) ^ ((k & 7) * WORD_STEP);
}

uint8_t cfdp_memfs_pattern_byte(uint64_t seed, uint64_t o)
{
    return (uint8_t)(pattern_word(seed, o >> 3) >> (8 * (o & 7)));
}

/* The words [k, k + n) of seed's pattern, handed one by one to body (as w,
 * with its index k): whole 64-byte lines take one hash and eight XORs. */
#define FOR_WORDS(seed, k0, nwords, body)                                                \
    do {                                                                                 \
        uint64_t k = (k0), end_ = (k0) + (nwords);                                       \
        while (k < end_ && (k & 7)) { /* up to a line boundary */                        \
            uint64_t w = pattern_word(seed, k);                                          \
            body;                                                                        \
            k++;                                                                         \
        }                                                                                \
        for (; end_ - k >= 8;) {                                                         \
            uint64_t h_ = line_hash(seed, k >> 3);                                       \
            for (unsigned j_ = 0; j_ < 8; j_++, k++) {                                   \
                uint64_t w = h_ ^ (j_ * WORD_STEP);                                      \
                body;                                                                    \
            }                                                                            \
        }                                                                                \
        for (; k < end_; k++) {                                                          \
            uint64_t w = pattern_word(seed, k);                                          \
            body;                                                                        \
        }                                                                                \
    } while (0)

static void pattern_fill(uint64_t seed, uint64_t off, uint8_t *buf, size_t len)
{
    while (len && (off & 7)) { /* up to a word boundary */
        *buf++ = cfdp_memfs_pattern_byte(seed, off++);
        len--;
    }
    size_t nw = len / 8;
    FOR_WORDS(seed, off >> 3, nw, {
        uint64_t le = htole64(w); /* byte b of the word is byte b of the 8 */
        memcpy(buf, &le, 8);
        buf += 8;
    });
    off += 8 * nw;
    for (len -= 8 * nw; len; len--)
        *buf++ = cfdp_memfs_pattern_byte(seed, off++);
}

/* 1 if buf[0..len) is seed's pattern at off: one pass, nothing stored. */
static int pattern_matches(uint64_t seed, uint64_t off, const uint8_t *buf, size_t len)
{
    while (len && (off & 7)) {
        if (*buf++ != cfdp_memfs_pattern_byte(seed, off++))
            return 0;
        len--;
    }
    size_t nw = len / 8;
    uint64_t diff = 0;
    FOR_WORDS(seed, off >> 3, nw, {
        uint64_t v;
        memcpy(&v, buf, 8);
        diff |= le64toh(v) ^ w; /* no branch per word: checked at the end */
        buf += 8;
    });
    if (diff)
        return 0;
    off += 8 * nw;
    for (len -= 8 * nw; len; len--)
        if (*buf++ != cfdp_memfs_pattern_byte(seed, off++))
            return 0;
    return 1;
}

/* ------------------------------------------------------------- failures */

static int injected(cfdp_memfs *m, const char *op)
{
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < FAIL_RULES; i++) {
            struct fail_rule *f = &m->fail[i];
            if (!f->n || strcmp(f->op, pass ? "*" : op) != 0)
                continue;
            f->n--;
            return f->rc;
        }
    return 0;
}

void cfdp_memfs_fail(cfdp_memfs *m, const char *op, unsigned n, int rc)
{
    if (!m || !op || strlen(op) >= sizeof m->fail[0].op)
        return;
    struct fail_rule *slot = NULL;
    for (size_t i = 0; i < FAIL_RULES; i++) {
        if (m->fail[i].n && strcmp(m->fail[i].op, op) == 0) {
            slot = &m->fail[i];
            break;
        }
        if (!slot && !m->fail[i].n)
            slot = &m->fail[i];
    }
    if (!slot)
        slot = &m->fail[FAIL_RULES - 1]; /* full: the newest rule wins */
    strcpy(slot->op, op);
    slot->n = n;
    slot->rc = rc < 0 ? rc : -EIO;
}

/* ---------------------------------------------------------------- nodes */

static int reserve(cfdp_memfs *m, uint64_t old_bytes, uint64_t new_bytes)
{
    if (new_bytes > old_bytes && m->held - old_bytes + new_bytes > m->limit)
        return -ENOSPC;
    return 0;
}

static void drop_content(cfdp_memfs *m, node *n)
{
    m->held -= n->cap + n->capr * sizeof(struct range);
    free(n->data);
    free(n->r);
    n->data = NULL;
    n->r = NULL;
    n->cap = n->nr = n->capr = 0;
    n->size = 0;
    n->mismatches = 0;
}

/* Frees n and its subtree; only cfdp_memfs_free reaches open files here
 * (a directory is removed only when empty). */
static void free_node(cfdp_memfs *m, node *n)
{
    for (size_t i = 0; i < n->nkids; i++)
        free_node(m, n->kids[i]);
    free(n->kids);
    drop_content(m, n);
    free(n->name);
    if (n != &m->root)
        free(n);
}

/* Index of name in dir, or -(insert position) - 1. */
static long find_kid(const node *dir, const char *name)
{
    size_t lo = 0, hi = dir->nkids;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(dir->kids[mid]->name, name);
        if (c == 0)
            return (long)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -(long)lo - 1;
}

static int attach(node *dir, node *n)
{
    long at = find_kid(dir, n->name);
    if (at >= 0)
        return -EEXIST;
    size_t pos = (size_t)(-at - 1);
    if (dir->nkids == dir->capkids) {
        size_t c = dir->capkids ? dir->capkids * 2 : 4;
        node **k = realloc(dir->kids, c * sizeof *k);
        if (!k)
            return -ENOMEM;
        dir->kids = k;
        dir->capkids = c;
    }
    memmove(dir->kids + pos + 1, dir->kids + pos, (dir->nkids - pos) * sizeof *dir->kids);
    dir->kids[pos] = n;
    dir->nkids++;
    n->parent = dir;
    return 0;
}

static void detach(node *n)
{
    node *dir = n->parent;
    long at = find_kid(dir, n->name);
    memmove(dir->kids + at, dir->kids + at + 1,
            (dir->nkids - (size_t)at - 1) * sizeof *dir->kids);
    dir->nkids--;
    n->parent = NULL;
}

/* Takes n out of the tree; frees it unless a handle still has it open
 * (then it waits among the orphans for its last close). */
static void unlink_node(cfdp_memfs *m, node *n)
{
    detach(n);
    if (!n->opens) {
        free_node(m, n);
        return;
    }
    if (m->norphans == m->caporphans) {
        size_t c = m->caporphans ? m->caporphans * 2 : 4;
        node **o = realloc(m->orphans, c * sizeof *o);
        if (!o) {
            /* cannot track it: the file dies now and its handles read it empty */
            drop_content(m, n);
            n->kind = N_PLAIN;
            return;
        }
        m->orphans = o;
        m->caporphans = c;
    }
    m->orphans[m->norphans++] = n;
}

static node *new_node(const char *name, size_t len, int kind)
{
    node *n = calloc(1, sizeof *n);
    if (!n)
        return NULL;
    n->name = malloc(len + 1);
    if (!n->name) {
        free(n);
        return NULL;
    }
    memcpy(n->name, name, len);
    n->name[len] = 0;
    n->kind = kind;
    return n;
}

/* ---------------------------------------------------------------- paths */

/* The directory holding the last component (all of them if whole). */
static int walk(cfdp_memfs *m, const cfdp__fs_path *p, size_t upto, node **out)
{
    node *d = &m->root;
    for (size_t i = 0; i < upto; i++) {
        if (d->kind != N_DIR)
            return -ENOTDIR;
        long at = find_kid(d, p->comp[i]);
        if (at < 0)
            return -ENOENT;
        d = d->kids[at];
    }
    *out = d;
    return 0;
}

static int lookup(cfdp_memfs *m, const char *path, node **out)
{
    cfdp__fs_path p;
    int rc = cfdp__fs_path_parse(path, &p);
    return rc ? rc : walk(m, &p, p.n, out);
}

/* The parent directory of path and, if present, the node itself (*n =
 * NULL if absent); IS_ROOT if path names the root, which has no parent. */
#define IS_ROOT 1
static int lookup_parent(cfdp_memfs *m, const char *path, cfdp__fs_path *p, node **dir,
                         node **n)
{
    int rc = cfdp__fs_path_parse(path, p);
    if (rc)
        return rc;
    if (!p->n)
        return IS_ROOT;
    if ((rc = walk(m, p, p->n - 1, dir)))
        return rc;
    if ((*dir)->kind != N_DIR)
        return -ENOTDIR;
    long at = find_kid(*dir, p->comp[p->n - 1]);
    *n = at >= 0 ? (*dir)->kids[at] : NULL;
    return 0;
}

/* For the test helpers: path's node, made (with its parents) if absent. */
static int make_file(cfdp_memfs *m, const char *path, node **out)
{
    cfdp__fs_path p;
    int rc = cfdp__fs_path_parse(path, &p);
    if (rc)
        return rc;
    if (!p.n)
        return -EISDIR;
    node *d = &m->root;
    for (size_t i = 0; i < p.n; i++) {
        if (d->kind != N_DIR)
            return -ENOTDIR;
        long at = find_kid(d, p.comp[i]);
        if (at >= 0) {
            d = d->kids[at];
            continue;
        }
        node *k = new_node(p.comp[i], strlen(p.comp[i]), i + 1 < p.n ? N_DIR : N_PLAIN);
        if (!k)
            return -ENOMEM;
        if ((rc = attach(d, k))) {
            free_node(m, k);
            return rc;
        }
        d = k;
    }
    if (d->kind == N_DIR)
        return -EISDIR;
    *out = d;
    return 0;
}

/* --------------------------------------------------------------- ranges */

/* Records [s, e) written: merges every range it touches or abuts. */
static int range_add(cfdp_memfs *m, node *n, uint64_t s, uint64_t e)
{
    size_t lo = 0, hi = n->nr;
    while (lo < hi) { /* first range ending at or after s */
        size_t mid = lo + (hi - lo) / 2;
        if (n->r[mid].end < s)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t i = lo, j = i;
    while (j < n->nr && n->r[j].start <= e)
        j++;
    if (j > i) { /* r[i..j) overlap or abut [s, e) */
        if (n->r[i].start < s)
            s = n->r[i].start;
        if (n->r[j - 1].end > e)
            e = n->r[j - 1].end;
        n->r[i].start = s;
        n->r[i].end = e;
        memmove(n->r + i + 1, n->r + j, (n->nr - j) * sizeof *n->r);
        n->nr -= j - i - 1;
        /* give back what shuffled arrivals needed once the holes close */
        if (n->capr > 16 && n->nr < n->capr / 4) {
            struct range *r = realloc(n->r, n->capr / 2 * sizeof *r);
            if (r) {
                m->held -= n->capr / 2 * sizeof *r;
                n->r = r;
                n->capr /= 2;
            }
        }
        return 0;
    }
    if (n->nr == n->capr) {
        size_t c = n->capr ? n->capr * 2 : 4;
        int rc = reserve(m, n->capr * sizeof *n->r, c * sizeof *n->r);
        if (rc)
            return rc;
        struct range *r = realloc(n->r, c * sizeof *r);
        if (!r)
            return -ENOMEM;
        m->held += (c - n->capr) * sizeof *r;
        n->r = r;
        n->capr = c;
    }
    memmove(n->r + i + 1, n->r + i, (n->nr - i) * sizeof *n->r);
    n->r[i].start = s;
    n->r[i].end = e;
    n->nr++;
    return 0;
}

static void range_cut(node *n, uint64_t size)
{
    while (n->nr && n->r[n->nr - 1].start >= size)
        n->nr--;
    if (n->nr && n->r[n->nr - 1].end > size)
        n->r[n->nr - 1].end = size;
}

/* --------------------------------------------------------------- the ops */

static int m_open(void *ctx, const char *path, unsigned flags, void **file)
{
    cfdp_memfs *m = ctx;
    int rc = injected(m, "open");
    if (rc)
        return rc;
    if (!file || !(flags & (CFDP_FS_RD | CFDP_FS_WR)) ||
        (flags &
         ~(CFDP_FS_RD | CFDP_FS_WR | CFDP_FS_CREAT | CFDP_FS_EXCL | CFDP_FS_TRUNC)) ||
        ((flags & CFDP_FS_TRUNC) && !(flags & CFDP_FS_WR)))
        return -EINVAL;
    cfdp__fs_path p;
    node *dir, *n;
    if ((rc = lookup_parent(m, path, &p, &dir, &n)))
        return rc == IS_ROOT ? -EISDIR : rc;
    if (n && (flags & CFDP_FS_CREAT) && (flags & CFDP_FS_EXCL))
        return -EEXIST;
    if (n && n->kind == N_DIR)
        return -EISDIR;
    if (n && n->kind == N_PATTERN && (flags & CFDP_FS_WR))
        return -EACCES;
    if (!n && !(flags & CFDP_FS_CREAT))
        return -ENOENT;
    mfile *f = malloc(sizeof *f);
    if (!f)
        return -ENOMEM;
    if (!n) {
        const char *leaf = p.comp[p.n - 1];
        if (!(n = new_node(leaf, strlen(leaf), N_PLAIN)) || attach(dir, n)) {
            if (n)
                free_node(m, n);
            free(f);
            return -ENOMEM;
        }
    } else if (flags & CFDP_FS_TRUNC) {
        n->size = 0;
        n->nr = 0;
    }
    n->opens++;
    m->open_files++;
    f->n = n;
    f->flags = flags;
    *file = f;
    return 0;
}

static int m_close(void *ctx, void *file)
{
    cfdp_memfs *m = ctx;
    mfile *f = file;
    if (!f)
        return -EINVAL;
    int rc = injected(m, "close"); /* the handle is released all the same */
    node *n = f->n;
    free(f);
    m->open_files--;
    if (!--n->opens && !n->parent) {
        for (size_t i = 0; i < m->norphans; i++)
            if (m->orphans[i] == n) {
                m->orphans[i] = m->orphans[--m->norphans];
                break;
            }
        free_node(m, n);
    }
    return rc;
}

/* Fills buf with what n holds at [off, off + len), clipped to its size. */
static size_t node_read(const node *n, uint64_t off, uint8_t *buf, size_t len)
{
    if (off >= n->size)
        return 0;
    if (len > n->size - off)
        len = (size_t)(n->size - off);
    switch (n->kind) {
    case N_PLAIN:
        memcpy(buf, n->data + off, len);
        break;
    case N_PATTERN:
        pattern_fill(n->seed, off, buf, len);
        break;
    case N_SINK: {
        /* unwritten holes read as zeros */
        memset(buf, 0, len);
        uint64_t end = off + len;
        size_t lo = 0, hi = n->nr;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (n->r[mid].end <= off)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (size_t i = lo; i < n->nr && n->r[i].start < end; i++) {
            uint64_t s = n->r[i].start > off ? n->r[i].start : off;
            uint64_t e = n->r[i].end < end ? n->r[i].end : end;
            pattern_fill(n->seed, s, buf + (s - off), (size_t)(e - s));
        }
        break;
    }
    }
    return len;
}

static int m_read(void *ctx, void *file, uint64_t off, void *buf, size_t len, size_t *got)
{
    cfdp_memfs *m = ctx;
    mfile *f = file;
    int rc = injected(m, "read");
    if (rc)
        return rc;
    if (!f || !got || (len && !buf))
        return -EINVAL;
    if (!(f->flags & CFDP_FS_RD))
        return -EBADF;
    *got = node_read(f->n, off, buf, len);
    return 0;
}

static int plain_grow(cfdp_memfs *m, node *n, uint64_t need)
{
    if (need <= n->cap)
        return 0;
    if (need > PLAIN_LIMIT)
        return -ENOSPC;
    uint64_t c = tern_ckd_grow(n->cap ? n->cap : 64, need, PLAIN_LIMIT);
    int rc = reserve(m, n->cap, c);
    if (rc)
        return rc;
    uint8_t *d = realloc(n->data, (size_t)c);
    if (!d)
        return -ENOMEM;
    m->held += c - n->cap;
    n->data = d;
    n->cap = (size_t)c;
    return 0;
}

static int m_write(void *ctx, void *file, uint64_t off, const void *buf, size_t len)
{
    cfdp_memfs *m = ctx;
    mfile *f = file;
    int rc = injected(m, "write");
    if (rc)
        return rc;
    if (!f || (len && !buf))
        return -EINVAL;
    if (!(f->flags & CFDP_FS_WR))
        return -EBADF;
    node *n = f->n;
    uint64_t end;
    if (tern_ckd_add(&end, off, len))
        return -EINVAL;
    if (!len)
        return 0; /* as pwrite: nothing written, the size unchanged */
    if (n->kind == N_SINK) {
        if (!pattern_matches(n->seed, off, buf, len)) {
            n->mismatches++;
            return -EIO;
        }
        if ((rc = range_add(m, n, off, end)))
            return rc;
    } else {
        if ((rc = plain_grow(m, n, end)))
            return rc;
        if (off > n->size)
            memset(n->data + n->size, 0, (size_t)(off - n->size));
        if (len)
            memcpy(n->data + off, buf, len);
    }
    if (end > n->size)
        n->size = end;
    return 0;
}

static int m_truncate(void *ctx, void *file, uint64_t size)
{
    cfdp_memfs *m = ctx;
    mfile *f = file;
    int rc = injected(m, "truncate");
    if (rc)
        return rc;
    if (!f)
        return -EINVAL;
    if (!(f->flags & CFDP_FS_WR))
        return -EBADF;
    node *n = f->n;
    if (n->kind == N_SINK) {
        range_cut(n, size); /* an extension is a hole, not written data */
    } else {
        if ((rc = plain_grow(m, n, size)))
            return rc;
        if (size > n->size)
            memset(n->data + n->size, 0, (size_t)(size - n->size));
    }
    n->size = size;
    return 0;
}

static int m_sync(void *ctx, void *file)
{
    return file ? injected(ctx, "sync") : -EINVAL;
}

static int m_stat(void *ctx, const char *path, cfdp_fs_stat *st)
{
    cfdp_memfs *m = ctx;
    int rc = injected(m, "stat");
    node *n;
    if (rc || (rc = lookup(m, path, &n)))
        return rc;
    if (!st)
        return -EINVAL;
    st->is_dir = n->kind == N_DIR;
    st->size = st->is_dir ? 0 : n->size;
    return 0;
}

static int m_rename(void *ctx, const char *from, const char *to)
{
    cfdp_memfs *m = ctx;
    int rc = injected(m, "rename");
    if (rc)
        return rc;
    cfdp__fs_path pf, pt;
    node *fdir, *n, *tdir, *there;
    if ((rc = lookup_parent(m, from, &pf, &fdir, &n)) ||
        (rc = lookup_parent(m, to, &pt, &tdir, &there)))
        return rc == IS_ROOT ? -EACCES : rc;
    if (!n)
        return -ENOENT;
    if (there)
        return -EEXIST; /* itself too, as renameat2(RENAME_NOREPLACE) says */
    for (node *d = tdir; d; d = d->parent)
        if (d == n)
            return -EINVAL; /* a directory into itself */
    const char *leaf = pt.comp[pt.n - 1];
    char *name = strdup(leaf);
    if (!name)
        return -ENOMEM;
    detach(n);
    free(n->name);
    n->name = name;
    if ((rc = attach(tdir, n))) { /* only -ENOMEM: put it back under its new name */
        if (attach(fdir, n))
            unlink_node(m, n); /* cannot happen: fdir had room for it */
        return rc;
    }
    return 0;
}

static int m_remove(void *ctx, const char *path)
{
    cfdp_memfs *m = ctx;
    int rc = injected(m, "remove");
    if (rc)
        return rc;
    cfdp__fs_path p;
    node *dir, *n;
    if ((rc = lookup_parent(m, path, &p, &dir, &n)))
        return rc == IS_ROOT ? -EISDIR : rc;
    if (!n)
        return -ENOENT;
    if (n->kind == N_DIR)
        return -EISDIR;
    unlink_node(m, n);
    return 0;
}

static int m_mkdir(void *ctx, const char *path)
{
    cfdp_memfs *m = ctx;
    int rc = injected(m, "mkdir");
    if (rc)
        return rc;
    cfdp__fs_path p;
    node *dir, *n;
    if ((rc = lookup_parent(m, path, &p, &dir, &n)))
        return rc == IS_ROOT ? -EEXIST : rc;
    if (n)
        return -EEXIST;
    const char *leaf = p.comp[p.n - 1];
    if (!(n = new_node(leaf, strlen(leaf), N_DIR)))
        return -ENOMEM;
    if ((rc = attach(dir, n)))
        free_node(m, n);
    return rc;
}

static int m_rmdir(void *ctx, const char *path)
{
    cfdp_memfs *m = ctx;
    int rc = injected(m, "rmdir");
    if (rc)
        return rc;
    cfdp__fs_path p;
    node *dir, *n;
    if ((rc = lookup_parent(m, path, &p, &dir, &n)))
        return rc == IS_ROOT ? -EACCES : rc;
    if (!n)
        return -ENOENT;
    if (n->kind != N_DIR)
        return -ENOTDIR;
    if (n->nkids)
        return -ENOTEMPTY;
    unlink_node(m, n);
    return 0;
}

static int m_list(void *ctx, const char *path, cfdp_fs_each each, void *arg)
{
    cfdp_memfs *m = ctx;
    int rc = injected(m, "list");
    node *d;
    if (rc || (rc = lookup(m, path, &d)))
        return rc;
    if (!each)
        return -EINVAL;
    if (d->kind != N_DIR)
        return -ENOTDIR;
    for (size_t i = 0; i < d->nkids; i++) {
        const node *k = d->kids[i];
        cfdp_fs_dirent e = {k->name, k->kind == N_DIR, k->kind == N_DIR ? 0 : k->size};
        if ((rc = each(arg, &e)))
            return rc;
    }
    return 0;
}

static const cfdp_fs_ops memfs_ops = {
    .open = m_open,
    .close = m_close,
    .read = m_read,
    .write = m_write,
    .truncate = m_truncate,
    .sync = m_sync,
    .stat = m_stat,
    .rename = m_rename,
    .remove = m_remove,
    .mkdir = m_mkdir,
    .rmdir = m_rmdir,
    .list = m_list,
};

/* ---------------------------------------------------------- the helpers */

int cfdp_memfs_new(cfdp_memfs **out, cfdp_fs *fs)
{
    if (!out || !fs)
        return -EINVAL;
    cfdp_memfs *m = calloc(1, sizeof *m);
    if (!m)
        return -ENOMEM;
    m->root.kind = N_DIR;
    m->limit = UINT64_MAX;
    *out = m;
    fs->ops = &memfs_ops;
    fs->ctx = m;
    return 0;
}

void cfdp_memfs_free(cfdp_memfs *m)
{
    if (m) {
        free_node(m, &m->root);
        for (size_t i = 0; i < m->norphans; i++)
            free_node(m, m->orphans[i]);
        free(m->orphans);
        free(m);
    }
}

int cfdp_memfs_put(cfdp_memfs *m, const char *path, const void *data, size_t len)
{
    if (!m || (len && !data))
        return -EINVAL;
    node *n;
    int rc = make_file(m, path, &n);
    if (rc)
        return rc;
    uint64_t old = n->cap + n->capr * sizeof(struct range);
    if ((rc = reserve(m, old, len)))
        return rc;
    uint8_t *d = NULL;
    if (len && !(d = malloc(len)))
        return -ENOMEM;
    drop_content(m, n);
    if (len)
        memcpy(d, data, len);
    n->kind = N_PLAIN;
    n->data = d;
    n->cap = len;
    n->size = len;
    m->held += len;
    return 0;
}

int cfdp_memfs_put_pattern(cfdp_memfs *m, const char *path, uint64_t size, uint64_t seed)
{
    if (!m)
        return -EINVAL;
    node *n;
    int rc = make_file(m, path, &n);
    if (rc)
        return rc;
    drop_content(m, n);
    n->kind = N_PATTERN;
    n->size = size;
    n->seed = seed;
    return 0;
}

int cfdp_memfs_expect_pattern(cfdp_memfs *m, const char *path, uint64_t seed)
{
    if (!m)
        return -EINVAL;
    node *n;
    int rc = make_file(m, path, &n);
    if (rc)
        return rc;
    drop_content(m, n);
    n->kind = N_SINK;
    n->seed = seed;
    return 0;
}

static int find_file(cfdp_memfs *m, const char *path, node **n)
{
    if (!m)
        return -EINVAL;
    int rc = lookup(m, path, n);
    if (rc)
        return rc;
    return (*n)->kind == N_DIR ? -EISDIR : 0;
}

int cfdp_memfs_pattern_complete(cfdp_memfs *m, const char *path, uint64_t size,
                                uint64_t *mismatches)
{
    node *n;
    int rc = find_file(m, path, &n);
    if (rc)
        return rc;
    if (n->kind != N_SINK)
        return -EINVAL;
    if (mismatches)
        *mismatches = n->mismatches;
    if (n->size != size)
        return 0;
    return size == 0 || (n->nr == 1 && n->r[0].start == 0 && n->r[0].end == size);
}

int cfdp_memfs_get(cfdp_memfs *m, const char *path, const uint8_t **data, size_t *len)
{
    node *n;
    int rc = find_file(m, path, &n);
    if (rc)
        return rc == -EISDIR ? -ENOENT : rc;
    if (n->kind != N_PLAIN || !data || !len)
        return n->kind != N_PLAIN ? -ENOENT : -EINVAL;
    *data = n->data;
    *len = (size_t)n->size;
    return 0;
}

int cfdp_memfs_sha256(cfdp_memfs *m, const char *path, uint8_t out[32])
{
    node *n;
    int rc = find_file(m, path, &n);
    if (rc)
        return rc;
    if (!out)
        return -EINVAL;
    cfdp__sha256_ctx s;
    cfdp__sha256_init(&s);
    if (n->kind == N_PLAIN) {
        cfdp__sha256_update(&s, n->data, (size_t)n->size);
    } else {
        uint8_t chunk[CHUNK];
        for (uint64_t off = 0; off < n->size;) {
            size_t k = node_read(n, off, chunk, sizeof chunk);
            cfdp__sha256_update(&s, chunk, k);
            off += k;
        }
    }
    cfdp__sha256_final(&s, out);
    return 0;
}

uint64_t cfdp_memfs_bytes_held(const cfdp_memfs *m)
{
    return m ? m->held : 0;
}

void cfdp_memfs_set_limit(cfdp_memfs *m, uint64_t bytes)
{
    if (m)
        m->limit = bytes;
}

unsigned cfdp_memfs_open_files(const cfdp_memfs *m)
{
    return m ? m->open_files : 0;
}
