/* The memfs and the posixfs (both resolution modes) given the same random
 * operations must answer alike: the same return codes, the same bytes read,
 * the same listings, and in the end the same tree. The posixfs stands for
 * what a file system does; the memfs must not drift from it, since the
 * entity is tested on the memfs and run on the posixfs. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cfdp_fs.h"
#include "fs_contract.h"
#include "posixfs_int.h"
#include "tern_test.h"

#define NFS     3
#define HANDLES 6

static uint64_t rnd(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* A path of 1-3 components over a small alphabet, so operations collide. */
static void rand_path(uint64_t *x, char *out)
{
    static const char *names[] = {"a", "b", "c", "d"};
    int depth = 1 + (int)(rnd(x) % 3);
    out[0] = 0;
    for (int i = 0; i < depth; i++) {
        if (i)
            strcat(out, "/");
        strcat(out, names[rnd(x) % 4]);
    }
}

typedef struct tree {
    char text[16384];
} tree;

static void walk(const cfdp_fs *fs, const char *dir, tree *t);

typedef struct walk_ctx {
    const cfdp_fs *fs;
    const char *dir;
    char names[32][64];
    int dirs[32];
    int n;
} walk_ctx;

static int walk_each(void *arg, const cfdp_fs_dirent *e)
{
    walk_ctx *w = arg;
    CHECK(w->n < 32);
    snprintf(w->names[w->n], 64, "%s", e->name);
    w->dirs[w->n] = e->is_dir;
    w->n++;
    return 0;
}

/* Every entry under dir with its size and content, in listing order. */
static void walk(const cfdp_fs *fs, const char *dir, tree *t)
{
    walk_ctx w = {fs, dir, {{0}}, {0}, 0};
    CHECK_OK(fs->ops->list(fs->ctx, dir, walk_each, &w));
    for (int i = 0; i < w.n; i++) {
        char p[256];
        snprintf(p, sizeof p, "%s%s%s", dir, dir[0] ? "/" : "", w.names[i]);
        size_t l = strlen(t->text);
        if (w.dirs[i]) {
            snprintf(t->text + l, sizeof t->text - l, "[%s/]", p);
            walk(fs, p, t);
        } else {
            size_t n;
            char *c = fs_slurp(fs, p, &n);
            snprintf(t->text + l, sizeof t->text - l, "[%s %zu ", p, n);
            l = strlen(t->text);
            for (size_t k = 0; k < n && l + 3 < sizeof t->text; k++, l += 2)
                snprintf(t->text + l, 3, "%02x", (unsigned char)c[k]);
            snprintf(t->text + l, sizeof t->text - l, "]");
            free(c);
        }
    }
}

typedef struct lst {
    char text[1024];
} lst;

static int lst_each(void *arg, const cfdp_fs_dirent *e)
{
    lst *l = arg;
    size_t n = strlen(l->text);
    snprintf(l->text + n, sizeof l->text - n, "%s%c%llu ", e->name, e->is_dir ? '/' : ':',
             (unsigned long long)e->size);
    return 0;
}

static void one_seed(uint64_t seed, int ops)
{
    cfdp_fs fs[NFS];
    cfdp_memfs *m;
    cfdp_posixfs *px[2];
    CHECK_OK(cfdp_memfs_new(&m, &fs[0]));
    for (int i = 0; i < 2; i++) {
        char root[512];
        snprintf(root, sizeof root, "%s/s%llu-%d", tt_tmpdir(), (unsigned long long)seed,
                 i);
        CHECK(mkdir(root, 0700) == 0);
        CHECK_OK(cfdp_posixfs_new(root, &px[i], &fs[i + 1]));
        if (i)
            cfdp__posixfs_force_walk(px[i]);
    }
    void *h[NFS][HANDLES] = {{0}};
    uint64_t x = seed | 1;
    for (int step = 0; step < ops; step++) {
        char p1[64], p2[64];
        rand_path(&x, p1);
        rand_path(&x, p2);
        unsigned op = (unsigned)(rnd(&x) % 12);
        int slot = (int)(rnd(&x) % HANDLES);
        uint64_t off = rnd(&x) % 40;
        size_t len = (size_t)(rnd(&x) % 20);
        uint8_t data[20];
        for (size_t k = 0; k < sizeof data; k++)
            data[k] = (uint8_t)rnd(&x);
        unsigned flags = (unsigned)(rnd(&x) % 32);
        int rc[NFS];
        char out[NFS][64];
        size_t got[NFS];
        lst ls[NFS];
        cfdp_fs_stat st[NFS];
        memset(out, 0, sizeof out);
        memset(got, 0, sizeof got);
        memset(ls, 0, sizeof ls);
        memset(st, 0, sizeof st);
        for (int f = 0; f < NFS; f++) {
            const cfdp_fs_ops *o = fs[f].ops;
            void *c = fs[f].ctx;
            switch (op) {
            case 0: /* open into an empty slot */
                if (h[f][slot]) {
                    rc[f] = 1;
                    break;
                }
                rc[f] = o->open(c, p1, flags, &h[f][slot]);
                if (rc[f])
                    h[f][slot] = NULL;
                break;
            case 1:
                rc[f] = h[f][slot] ? o->close(c, h[f][slot]) : 1;
                h[f][slot] = NULL;
                break;
            case 2:
                rc[f] =
                    h[f][slot] ? o->read(c, h[f][slot], off, out[f], len, &got[f]) : 1;
                break;
            case 3:
                rc[f] = h[f][slot] ? o->write(c, h[f][slot], off, data, len) : 1;
                break;
            case 4:
                rc[f] = h[f][slot] ? o->truncate(c, h[f][slot], off) : 1;
                break;
            case 5:
                rc[f] = o->stat(c, p1, &st[f]);
                break;
            case 6:
                rc[f] = o->rename(c, p1, p2);
                break;
            case 7:
                rc[f] = o->remove(c, p1);
                break;
            case 8:
            case 9:
                rc[f] = o->mkdir(c, p1);
                break;
            case 10:
                rc[f] = o->rmdir(c, p1);
                break;
            default:
                rc[f] = o->list(c, p1, lst_each, &ls[f]);
                break;
            }
        }
        for (int f = 1; f < NFS; f++) {
            CHECK_MSG(
                rc[f] == rc[0],
                "seed %llu step %d op %u (%s, %s, flags %u): memfs %d, posixfs%s %d",
                (unsigned long long)seed, step, op, p1, p2, flags, rc[0],
                f == 2 ? " (walk)" : "", rc[f]);
            CHECK_MSG(
                got[f] == got[0] && !memcmp(out[f], out[0], got[0]) &&
                    !strcmp(ls[f].text, ls[0].text) && st[f].is_dir == st[0].is_dir &&
                    st[f].size == st[0].size,
                "seed %llu step %d op %u (%s, %s): memfs read %zu list '%s' stat %d "
                "%llu; posixfs%s read %zu list '%s' stat %d %llu",
                (unsigned long long)seed, step, op, p1, p2, got[0], ls[0].text,
                st[0].is_dir, (unsigned long long)st[0].size, f == 2 ? " (walk)" : "",
                got[f], ls[f].text, st[f].is_dir, (unsigned long long)st[f].size);
        }
        if (getenv("FS_DIFF_EVERY_STEP")) {
            static tree a, b;
            a.text[0] = b.text[0] = 0;
            walk(&fs[0], "", &a);
            walk(&fs[1], "", &b);
            CHECK_MSG(!strcmp(a.text, b.text),
                      "seed %llu step %d op %u (%s, %s, flags %u, off %llu len %zu slot "
                      "%d): trees differ\nmemfs %s\nposix %s",
                      (unsigned long long)seed, step, op, p1, p2, flags,
                      (unsigned long long)off, len, slot, a.text, b.text);
        }
    }
    for (int f = 0; f < NFS; f++)
        for (int s = 0; s < HANDLES; s++)
            if (h[f][s])
                CHECK_OK(fs[f].ops->close(fs[f].ctx, h[f][s]));
    static tree t[NFS];
    for (int f = 0; f < NFS; f++) {
        t[f].text[0] = 0;
        walk(&fs[f], "", &t[f]);
    }
    CHECK_EQ_STR(t[1].text, t[0].text);
    CHECK_EQ_STR(t[2].text, t[0].text);
    CHECK_EQ_INT(cfdp_memfs_open_files(m), 0);
    cfdp_memfs_free(m);
    cfdp_posixfs_free(px[0]);
    cfdp_posixfs_free(px[1]);
}

TEST(fs_memfs_and_posixfs_agree)
{
    uint64_t base = tt_seed();
    int seeds = 40;
    for (int i = 0; i < seeds; i++)
        one_seed(base + (uint64_t)i * 7919, 400);
    printf("# %d seeds x 400 operations: memfs, posixfs (openat2) and posixfs (walk) "
           "agree\n",
           seeds);
}
