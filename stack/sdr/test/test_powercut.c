/* Power loss, torn files and I/O errors under a durable store.
 *
 * The store runs on powercut_io.h, an in-memory file system that knows what
 * a power cut keeps: writes not yet synced are dropped, reordered or torn,
 * directory changes not yet synced are undone or kept. A model-checked
 * workload (a catalog root, a list of records with payloads and blobs, and a
 * meta object naming the transaction that wrote it) runs against the store;
 * at random moments, between calls or in the middle of an I/O sequence
 * (even on the group-commit helper thread), the double's whole state is
 * copied, the copy is cut and a new store is opened on it. Recovery must
 * yield exactly the last returned commit under SDR_COMMIT_SYNC, and some
 * commit between the last one known durable and the last one returned under
 * SDR_COMMIT_GROUP; the recovered heap must pass sdr_check() and its walk
 * must match the model's digest of that commit.
 *
 * The same workload then runs with an I/O error injected at the k-th
 * operation, and on real files whose log, image or blob segment tails are
 * truncated or garbled.
 *
 * TT_LONG=1 multiplies the number of cuts and probes by 10.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "powercut_io.h"
#include "sdr.h"
#include "tern_test.h"

#define HEAP     (256u << 10)
#define MAXITEMS 96
#define MAXPAY   600
#define MAXBLOB  12000
/* Big enough that a blob put and freed before its commit is taken for the
 * disk is never written (sdr.h). */
#define BIGBLOB    (70000 + 12000)
#define META_MAGIC UINT64_C(0x4d455441)
#define PCDIR      "/pc"

/* ------------------------------------------------------------------ model */

struct rec {
    uint64_t id, ver, bseed;
    sdr_off blob;
    uint32_t len, blen;
};

struct meta {
    uint64_t magic, attempt, chain, n;
};

struct item {
    uint64_t id, ver, bseed;
    uint32_t len, cap, blen;
    sdr_off obj, elt, blob;
};

struct model {
    uint64_t attempt, chain, next_id;
    sdr_off meta, root;
    int n;
    struct item it[MAXITEMS];
};

/* A commit that may or may not have reached the disk (its txn_end failed). */
struct maybe {
    uint64_t attempt, digest, base_k;
};

struct run {
    sdr *s;
    pc_fs *fs; /* NULL: real files */
    sdr_profile prof;
    uint64_t rng;
    struct model m;
    uint64_t attempts;     /* attempt ids handed out */
    uint64_t k;            /* commits returned */
    uint64_t *hatt, *hdig; /* per commit k: attempt id and digest */
    size_t hcap;
    struct maybe mb[64];
    int nmb;
    uint64_t seq_base, k_base; /* durable_seq at open, and k then */
};

static uint64_t rnd(struct run *r, uint64_t n)
{
    return pc_below(&r->rng, n);
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    uint64_t st = h ^ (v * UINT64_C(0x9e3779b97f4a7c15));
    return pc_rand(&st);
}

static void fill(uint64_t seed, uint8_t *p, size_t n)
{
    uint64_t st = seed * 31 + 7, v = 0;
    for (size_t i = 0; i < n; i++) {
        if (i % 8 == 0)
            v = pc_rand(&st);
        p[i] = (uint8_t)(v >> (8 * (i % 8)));
    }
}

static uint64_t digest_model(const struct model *m)
{
    uint64_t h = mix(mix(mix(0, m->attempt), m->chain), (uint64_t)m->n);
    for (int i = 0; i < m->n; i++) {
        const struct item *it = &m->it[i];
        h = mix(h, it->id);
        h = mix(h, it->ver);
        h = mix(h, it->len);
        h = mix(h, it->blen);
        h = mix(h, it->blob ? it->bseed : 0);
    }
    return h;
}

static void hist_push(struct run *r, uint64_t attempt, uint64_t dig)
{
    if (r->k + 1 >= r->hcap) {
        r->hcap = r->hcap ? r->hcap * 2 : 256;
        r->hatt = realloc(r->hatt, r->hcap * sizeof *r->hatt);
        r->hdig = realloc(r->hdig, r->hcap * sizeof *r->hdig);
        CHECK(r->hatt && r->hdig);
    }
    r->hatt[r->k] = attempt;
    r->hdig[r->k] = dig;
}

static void run_init(struct run *r, pc_fs *fs, const char *dir, int commit, uint64_t seed)
{
    memset(r, 0, sizeof *r);
    r->fs = fs;
    r->rng = seed;
    r->prof.name = "t";
    r->prof.dir = dir;
    r->prof.heap_size = HEAP;
    r->prof.mode = SDR_DURABLE;
    r->prof.commit = commit;
    r->prof.group_ms = 1;
    r->prof.io = fs ? &fs->io : NULL;
    r->prof.checkpoint_bytes = rnd(r, 2) ? 4096 + rnd(r, 96 << 10) : 0;
    hist_push(r, 0, digest_model(&r->m)); /* k = 0: the empty store */
}

static void run_free(struct run *r)
{
    free(r->hatt);
    free(r->hdig);
}

static uint64_t durable_seq(sdr *s)
{
    sdr_usage u;
    sdr_get_usage(s, &u);
    return u.durable_seq;
}

/* The last commit known durable. */
static uint64_t k_durable(struct run *r)
{
    if (r->prof.commit == SDR_COMMIT_SYNC || !r->s)
        return r->k; /* no store open: the last close made everything durable */
    uint64_t d = durable_seq(r->s);
    CHECK(d >= r->seq_base);
    uint64_t k = r->k_base + (d - r->seq_base);
    CHECK_MSG(k <= r->k, "durable_seq %" PRIu64 " is beyond the last commit", d);
    return k;
}

static void after_open(struct run *r)
{
    r->seq_base = durable_seq(r->s);
    r->k_base = r->k;
    /* Half the opens checkpoint often: new log generations, images, unlinks. */
    r->prof.checkpoint_bytes = rnd(r, 2) ? 4096 + rnd(r, 96 << 10) : 0;
}

/* ------------------------------------------------------------ store walk */

struct walk {
    uint64_t attempt, digest;
    int blob_bad; /* blobs that read back TERN_ECORRUPT (only if allowed) */
};

static uint8_t wbuf[BIGBLOB + MAXPAY], wref[BIGBLOB + MAXPAY];

/* Walks the store as the model lays it out. 0, or a message in why. */
static int walk_store(sdr *s, int allow_bad_blobs, struct walk *w, char *why, size_t wl)
{
    sdr_off mo, l;
    struct meta mt;
    memset(w, 0, sizeof *w);
    int rc = sdr_catalog_get(s, "meta", &mo);
    if (rc == TERN_ENOTFOUND) {
        if (sdr_catalog_get(s, "root", &l) != TERN_ENOTFOUND) {
            snprintf(why, wl, "root without meta");
            return -1;
        }
        struct model empty;
        memset(&empty, 0, sizeof empty);
        w->digest = digest_model(&empty);
        return 0;
    }
    if (rc || sdr_read(s, mo, &mt, sizeof mt) || mt.magic != META_MAGIC ||
        sdr_catalog_get(s, "root", &l)) {
        snprintf(why, wl, "meta or root unreadable (rc %d)", rc);
        return -1;
    }
    if (sdr_list_length(s, l) != mt.n || sdr_list_user_data(s, l) != mo) {
        snprintf(why, wl, "root list length %" PRIu64 ", meta says %" PRIu64,
                 sdr_list_length(s, l), mt.n);
        return -1;
    }
    uint64_t h = mix(mix(mix(0, mt.attempt), mt.chain), mt.n);
    for (sdr_off e = sdr_list_first(s, l); e; e = sdr_list_next(s, e)) {
        sdr_off o = sdr_list_data(s, e);
        struct rec rc_;
        size_t sz;
        if (sdr_size(s, o, &sz) || sz < sizeof rc_ || sdr_read(s, o, &rc_, sizeof rc_) ||
            rc_.len > MAXPAY || sz < sizeof rc_ + rc_.len) {
            snprintf(why, wl, "item object %" PRIu64 " is not a record", o);
            return -1;
        }
        CHECK_OK(sdr_read(s, o + sizeof rc_, wbuf, rc_.len));
        fill(rc_.id * 1000003 + rc_.ver, wref, rc_.len);
        if (memcmp(wbuf, wref, rc_.len) != 0) {
            snprintf(why, wl, "item %" PRIu64 " v%" PRIu64 ": payload differs", rc_.id,
                     rc_.ver);
            return -1;
        }
        if (rc_.blob) {
            uint64_t bl;
            if (sdr_blob_len(s, rc_.blob, &bl) || bl != rc_.blen || bl > BIGBLOB) {
                snprintf(why, wl, "item %" PRIu64 ": blob length wrong", rc_.id);
                return -1;
            }
            int brc = sdr_blob_read(s, rc_.blob, 0, wbuf, rc_.blen);
            fill(rc_.bseed, wref, rc_.blen);
            if (brc == TERN_ECORRUPT && allow_bad_blobs) {
                w->blob_bad++;
            } else if (brc || memcmp(wbuf, wref, rc_.blen) != 0) {
                snprintf(why, wl,
                         "item %" PRIu64 ": blob of %u bytes reads back wrong (rc %d)",
                         rc_.id, rc_.blen, brc);
                return -1;
            }
        }
        h = mix(h, rc_.id);
        h = mix(h, rc_.ver);
        h = mix(h, rc_.len);
        h = mix(h, rc_.blen);
        h = mix(h, rc_.blob ? rc_.bseed : 0);
    }
    w->attempt = mt.attempt;
    w->digest = h;
    return 0;
}

/* Which commit the recovered store holds; it must lie in [lo, hi]. Returns
 * the commit index (a maybe-commit counts as its base + 1). */
static uint64_t match_state(struct run *r, sdr *s, uint64_t lo, uint64_t hi,
                            int allow_bad_blobs, const char *what)
{
    char why[512];
    struct walk w;
    int rc = sdr_check(s, why, sizeof why);
    CHECK_MSG(rc == 0, "%s: sdr_check after recovery: %s", what, why);
    CHECK_MSG(walk_store(s, allow_bad_blobs, &w, why, sizeof why) == 0,
              "%s: recovered store: %s", what, why);
    for (uint64_t k = 0; k <= r->k; k++)
        if (r->hatt[k] == w.attempt) {
            CHECK_MSG(w.digest == r->hdig[k],
                      "%s: state of commit %" PRIu64 " (attempt %" PRIu64
                      ") does not match the model: a torn transaction",
                      what, k, w.attempt);
            CHECK_MSG(k >= lo && k <= hi,
                      "%s: recovered commit %" PRIu64 ", want %" PRIu64 "..%" PRIu64,
                      what, k, lo, hi);
            return k;
        }
    for (int i = 0; i < r->nmb; i++)
        if (r->mb[i].attempt == w.attempt) {
            CHECK_MSG(w.digest == r->mb[i].digest,
                      "%s: failed commit (attempt %" PRIu64 ") recovered torn", what,
                      w.attempt);
            CHECK_MSG(r->mb[i].base_k >= lo && r->mb[i].base_k <= hi,
                      "%s: recovered a failed commit after %" PRIu64 ", want %" PRIu64
                      "..%" PRIu64,
                      what, r->mb[i].base_k, lo, hi);
            return r->mb[i].base_k + 1;
        }
    CHECK_MSG(0,
              "%s: recovered attempt %" PRIu64 " was never committed (commits 0..%" PRIu64
              ", last attempt %" PRIu64 ")",
              what, w.attempt, r->k, r->attempts);
    return 0;
}

/* ------------------------------------------------------------- workload */

static int write_item(sdr *s, const struct item *it)
{
    struct rec rc_ = {it->id, it->ver, it->bseed, it->blob, it->len, it->blen};
    uint8_t pay[MAXPAY];
    int rc;
    fill(it->id * 1000003 + it->ver, pay, it->len);
    if ((rc = sdr_write(s, it->obj, &rc_, sizeof rc_)))
        return rc;
    return sdr_write(s, it->obj + sizeof rc_, pay, it->len);
}

static int put_blob(struct run *r, struct item *it)
{
    static uint8_t b[BIGBLOB];
    uint64_t k = rnd(r, 8);
    it->blen = (uint32_t)(k == 0   ? rnd(r, 40)
                          : k == 1 ? 70000 + rnd(r, 12000)
                                   : 1 + rnd(r, MAXBLOB));
    it->bseed = pc_rand(&r->rng);
    fill(it->bseed, b, it->blen);
    return sdr_blob_put(r->s, b, it->blen, &it->blob);
}

/* Links obj in at model position pos; the model entry is made room for. */
static int link_at(struct run *r, struct model *m, int pos, struct item *it)
{
    sdr *s = r->s;
    int rc;
    if (pos == 0 && (m->n == 0 || rnd(r, 2)))
        rc = sdr_list_insert_first(s, m->root, it->obj, &it->elt);
    else if (pos == m->n && rnd(r, 2))
        rc = sdr_list_insert_last(s, m->root, it->obj, &it->elt);
    else if (pos < m->n && (pos == 0 || rnd(r, 2)))
        rc = sdr_list_insert_before(s, m->it[pos].elt, it->obj, &it->elt);
    else
        rc = sdr_list_insert_after(s, m->it[pos - 1].elt, it->obj, &it->elt);
    if (rc)
        return rc;
    memmove(&m->it[pos + 1], &m->it[pos], (size_t)(m->n - pos) * sizeof m->it[0]);
    m->it[pos] = *it;
    m->n++;
    return 0;
}

static void unlink_model(struct model *m, int i)
{
    memmove(&m->it[i], &m->it[i + 1], (size_t)(m->n - i - 1) * sizeof m->it[0]);
    m->n--;
}

static int one_op(struct run *r, struct model *m)
{
    sdr *s = r->s;
    int rc = 0, op = (int)rnd(r, 10);
    if (m->n == 0 || (op < 3 && m->n < MAXITEMS)) { /* insert */
        if (m->n >= MAXITEMS)
            return 0;
        struct item it;
        memset(&it, 0, sizeof it);
        it.id = ++m->next_id;
        it.ver = 1;
        it.len = (uint32_t)rnd(r, MAXPAY);
        it.cap = it.len + (uint32_t)rnd(r, 64);
        if ((rc = sdr_alloc(s, sizeof(struct rec) + it.cap,
                            rnd(r, 4) ? SDR_OPS : SDR_BULK, &it.obj)))
            return rc;
        if (rnd(r, 4) == 0 && (rc = put_blob(r, &it)))
            return rc;
        if ((rc = write_item(s, &it)))
            return rc;
        return link_at(r, m, (int)rnd(r, (uint64_t)m->n + 1), &it);
    }
    int i = (int)rnd(r, (uint64_t)m->n);
    struct item *it = &m->it[i];
    sdr_off d;
    switch (op) {
    case 3: /* delete */
        if ((rc = sdr_list_delete(s, it->elt, &d)))
            return rc;
        CHECK_EQ_U64(d, it->obj);
        if ((rc = sdr_free(s, it->obj)) ||
            (it->blob && (rc = sdr_blob_free(s, it->blob))))
            return rc;
        unlink_model(m, i);
        return 0;
    case 4:
    case 5: { /* update, moving to a bigger object if needed */
        it->ver++;
        it->len = (uint32_t)rnd(r, MAXPAY);
        if (it->len <= it->cap)
            return write_item(s, it);
        struct item n = *it;
        n.cap = n.len + (uint32_t)rnd(r, 64);
        if ((rc = sdr_alloc(s, sizeof(struct rec) + n.cap, SDR_OPS, &n.obj)) ||
            (rc = write_item(s, &n)) ||
            (rc = sdr_list_insert_after(s, it->elt, n.obj, &n.elt)) ||
            (rc = sdr_list_delete(s, it->elt, NULL)) || (rc = sdr_free(s, it->obj)))
            return rc;
        *it = n;
        return 0;
    }
    case 6: /* replace the blob */
        if (it->blob && (rc = sdr_blob_free(s, it->blob)))
            return rc;
        it->blob = 0;
        it->blen = 0;
        it->bseed = 0;
        if (rnd(r, 3) && (rc = put_blob(r, it)))
            return rc;
        return write_item(s, it);
    case 7: { /* move */
        struct item t = *it;
        if ((rc = sdr_list_delete(s, it->elt, NULL)))
            return rc;
        unlink_model(m, i);
        return link_at(r, m, (int)rnd(r, (uint64_t)m->n + 1), &t);
    }
    case 8: { /* scratch object, gone by the end of the transaction */
        sdr_off o;
        size_t n = 1 + (size_t)rnd(r, 3000);
        uint8_t junk[64];
        fill(pc_rand(&r->rng), junk, sizeof junk);
        if ((rc = sdr_alloc(s, n, rnd(r, 2) ? SDR_OPS : SDR_BULK, &o)) ||
            (rc = sdr_zero(s, o, n)) || (rc = sdr_write(s, o, junk, n < 64 ? n : 64)))
            return rc;
        return sdr_free(s, o);
    }
    default: /* rewrite in place, same version: the log sees a no-op change */
        return write_item(s, it);
    }
}

static int make_root(struct run *r, struct model *m)
{
    sdr *s = r->s;
    int rc = 0;
    if (!m->meta) {
        if ((rc = sdr_alloc(s, sizeof(struct meta), SDR_OPS, &m->meta)) ||
            (rc = sdr_list_create(s, m->meta, &m->root)) ||
            (rc = sdr_catalog_put(s, "meta", m->meta)) ||
            (rc = sdr_catalog_put(s, "root", m->root)))
            return rc;
    }
    return rc;
}

static int write_meta(struct run *r, struct model *m)
{
    sdr *s = r->s;
    struct meta mt = {META_MAGIC, m->attempt, m->chain, (uint64_t)m->n};
    return sdr_write(s, m->meta, &mt, sizeof mt);
}

/* Snapshots taken between calls inside a transaction, with their bounds. */
struct snapq {
    pc_fs *fs[16];
    uint64_t lo[16], hi[16];
    int n;
};

static void snap_now(struct run *r, struct snapq *q)
{
    if (!r->fs || q->n == 16)
        return;
    uint64_t lo = k_durable(r);
    q->fs[q->n] = pc_snapshot(r->fs);
    q->lo[q->n] = lo;
    q->hi[q->n] = r->k;
    q->n++;
}

/* One transaction: 1-5 random edits, then commit or (cancel) cancel. Returns
 * 0 or the first error; TERN_EFULL cancels quietly. */
static int run_txn(struct run *r, int cancel, struct snapq *q, int snap_pct)
{
    sdr *s = r->s;
    struct model *t = malloc(sizeof *t);
    CHECK(t);
    *t = r->m;
    t->attempt = ++r->attempts;
    t->chain = mix(t->chain, t->attempt);
    int rc = sdr_txn_begin(s), nops = 1 + (int)rnd(r, 5);
    if (!rc)
        rc = make_root(r, t);
    for (int i = 0; i < nops && !rc; i++) {
        rc = one_op(r, t);
        if (q && (int)rnd(r, 100) < snap_pct)
            snap_now(r, q);
    }
    if (!rc)
        rc = write_meta(r, t);
    if (rc || cancel) {
        if (sdr_in_txn(s))
            CHECK_OK(sdr_txn_cancel(s));
        free(t);
        return rc == TERN_EFULL ? 0 : rc;
    }
    uint64_t dig = digest_model(t);
    rc = sdr_txn_end(s);
    if (rc) {
        if (r->nmb < 64) {
            r->mb[r->nmb].attempt = t->attempt;
            r->mb[r->nmb].digest = dig;
            r->mb[r->nmb].base_k = r->k;
            r->nmb++;
        }
        free(t);
        return rc;
    }
    r->m = *t;
    free(t);
    r->k++;
    hist_push(r, r->m.attempt, dig);
    return 0;
}

/* ----------------------------------------------------------- cut checks */

struct counts {
    int cuts, nested, extra;
};

static sdr *open_on(struct run *r, pc_fs *fs, const char *what)
{
    sdr_profile p = r->prof;
    p.io = &fs->io;
    sdr *s = NULL;
    char why[512];
    int rc = sdr_open(&p, &s, why, sizeof why);
    CHECK_MSG(rc == 0, "%s: sdr_open after a cut: %s: %s", what, tern_strerror(rc), why);
    return s;
}

/* Cuts power on snap (consumed), recovers it and checks the state is a
 * commit in [lo, hi]. Sometimes cuts again in the middle of that recovery,
 * which must then yield the very same state. */
static void check_cut(struct run *r, pc_fs *snap, uint64_t lo, uint64_t hi,
                      struct counts *c)
{
    pc_cut(snap, &r->rng);
    int nest = rnd(r, 3) == 0;
    if (nest)
        pc_snap_after(snap, 1 + rnd(r, 40));
    sdr *s = open_on(r, snap, "cut");
    sdr *live = r->s;
    r->s = s;
    uint64_t k = match_state(r, s, lo, hi, 0, "cut");
    struct walk w;
    char why[256];
    CHECK_OK(walk_store(s, 0, &w, why, sizeof why));
    if (rnd(r, 4) == 0) {
        /* The recovered store takes new commits (outside the model's walk). */
        sdr_off b, o;
        uint8_t x[100], y[100];
        fill(k, x, sizeof x);
        CHECK_OK(sdr_txn_begin(s));
        CHECK_OK(sdr_blob_put(s, x, sizeof x, &b));
        CHECK_OK(sdr_alloc(s, 40, SDR_OPS, &o));
        CHECK_OK(sdr_catalog_put(s, "extra", b));
        CHECK_OK(sdr_txn_end(s));
        CHECK_OK(sdr_blob_read(s, b, 0, y, sizeof y));
        CHECK_EQ_MEM(x, y, sizeof x);
        c->extra++;
    }
    r->s = live;
    CHECK_OK(sdr_close(s));
    CHECK_EQ_INT(pc_open_fds(snap), 0);
    c->cuts++;
    pc_fs *ns[PC_MAXSNAP];
    int n = pc_take_snaps(snap, ns, NULL);
    for (int i = 0; i < n; i++) {
        pc_cut(ns[i], &r->rng);
        s = open_on(r, ns[i], "nested cut");
        struct walk w2;
        CHECK_MSG(sdr_check(s, why, sizeof why) == 0, "nested cut: sdr_check: %s", why);
        CHECK_MSG(walk_store(s, 0, &w2, why, sizeof why) == 0, "nested cut: %s", why);
        CHECK_MSG(w2.attempt == w.attempt && w2.digest == w.digest,
                  "a cut during recovery changed the recovered state (attempt %" PRIu64
                  " -> %" PRIu64 ")",
                  w.attempt, w2.attempt);
        CHECK_OK(sdr_close(s));
        CHECK_EQ_INT(pc_open_fds(ns[i]), 0);
        pc_free(ns[i]);
        c->nested++;
    }
    pc_free(snap);
}

/* Checks the snapshots the double took by itself during the calls just made:
 * each was tagged with the last durable commit before those calls. */
static void harvest(struct run *r, struct counts *c)
{
    pc_fs *ss[PC_MAXSNAP];
    uint64_t tags[PC_MAXSNAP];
    int n = pc_take_snaps(r->fs, ss, tags);
    for (int i = 0; i < n; i++)
        check_cut(r, ss[i], tags[i], r->k, c);
}

static void check_queue(struct run *r, struct snapq *q, struct counts *c)
{
    for (int i = 0; i < q->n; i++)
        check_cut(r, q->fs[i], q->lo[i], q->hi[i], c);
    q->n = 0;
}

static void arm(struct run *r, int pct)
{
    pc_set_tag(r->fs, k_durable(r));
    if ((int)rnd(r, 100) < pct)
        pc_snap_after(r->fs, 1 + rnd(r, 12));
}

static void live_open(struct run *r, struct counts *c)
{
    char why[512];
    int rc = sdr_open(&r->prof, &r->s, why, sizeof why);
    CHECK_MSG(rc == 0, "sdr_open: %s: %s", tern_strerror(rc), why);
    /* A clean reopen yields exactly the last commit. */
    uint64_t k = match_state(r, r->s, r->k, r->k, 0, "reopen");
    CHECK_EQ_U64(k, r->k);
    after_open(r);
    harvest(r, c);
}

static int scale(void)
{
    const char *l = getenv("TT_LONG");
    return l && atoi(l) > 0 ? 10 : 1;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void powercut_workload(int commit, const char *label)
{
    uint64_t seed = tt_seed() ^ (uint64_t)(commit + 1) * UINT64_C(0x1234567);
    int target = 300 * scale();
    struct counts c = {0, 0, 0};
    int rounds = 0;
    double t0 = now_s();
    while (c.cuts < target) {
        struct run r;
        pc_fs *fs = pc_new(PCDIR, seed + (uint64_t)rounds * 7919);
        run_init(&r, fs, PCDIR, commit, seed * 31 + (uint64_t)rounds);
        rounds++;
        arm(&r, 50); /* a cut while the store is created */
        live_open(&r, &c);
        int ntx = 30 + (int)rnd(&r, 50);
        struct snapq q = {.n = 0};
        for (int t = 0; t < ntx; t++) {
            arm(&r, 30);
            int rc = run_txn(&r, rnd(&r, 5) == 0, &q, 3);
            CHECK_MSG(rc == 0, "transaction: %s", tern_strerror(rc));
            harvest(&r, &c);
            check_queue(&r, &q, &c);
            if (rnd(&r, 5) == 0)
                snap_now(&r, &q); /* between transactions: exact under sync */
            check_queue(&r, &q, &c);
            if (rnd(&r, 10) == 0) {
                arm(&r, 30);
                CHECK_OK(sdr_flush(r.s));
                CHECK_EQ_U64(k_durable(&r), r.k);
                harvest(&r, &c);
            }
            if (rnd(&r, 20) == 0) { /* close and reopen, with a cut somewhere */
                arm(&r, 60);
                CHECK_OK(sdr_close(r.s));
                CHECK_EQ_INT(pc_open_fds(fs), 0);
                live_open(&r, &c);
            }
        }
        arm(&r, 30);
        CHECK_OK(sdr_close(r.s));
        CHECK_EQ_INT(pc_open_fds(fs), 0);
        r.s = NULL;
        harvest(&r, &c);
        /* After a clean close everything is durable: exactly the last commit. */
        check_cut(&r, fs, r.k, r.k, &c);
        run_free(&r);
    }
    fprintf(stderr,
            "# power cuts: %s %d ok (%d more during recovery, %d recovered stores "
            "committed again), %d rounds, %.1f s\n",
            label, c.cuts, c.nested, c.extra, rounds, now_s() - t0);
}

TEST(powercut_sync_exact_last_commit)
{
    powercut_workload(SDR_COMMIT_SYNC, "sync");
}

TEST(powercut_group_prefix)
{
    powercut_workload(SDR_COMMIT_GROUP, "group");
}

/* --------------------------------------------------- blobs that die young */

struct young_root {
    uint64_t phase;
    sdr_off blob;
    uint64_t bseed, blen;
};

static void young_set(sdr *s, sdr_off root, uint64_t phase, sdr_off blob, uint64_t bseed,
                      uint64_t blen)
{
    struct young_root y = {phase, blob, bseed, blen};
    CHECK_OK(sdr_write(s, root, &y, sizeof y));
}

static sdr_off young_put(sdr *s, uint64_t seed, uint64_t len)
{
    static uint8_t b[BIGBLOB];
    sdr_off blob;
    fill(seed, b, (size_t)len);
    CHECK_OK(sdr_blob_put(s, b, (size_t)len, &blob));
    return blob;
}

/* Checks a store recovered after a cut in the middle of the batch below:
 * whichever state it is in, the blob it names reads back intact. */
static void young_check(pc_fs *snap, const sdr_profile *prof, uint64_t *phases,
                        uint64_t rng)
{
    static uint8_t got[BIGBLOB], want[BIGBLOB];
    char why[512];
    sdr_profile p = *prof;
    p.io = &snap->io;
    pc_cut(snap, &rng);
    sdr *s = NULL;
    int rc = sdr_open(&p, &s, why, sizeof why);
    CHECK_MSG(rc == 0, "sdr_open after a cut: %s: %s", tern_strerror(rc), why);
    CHECK_MSG(sdr_check(s, why, sizeof why) == 0, "sdr_check: %s", why);
    sdr_off root;
    struct young_root y;
    CHECK_OK(sdr_catalog_get(s, "young", &root));
    CHECK_OK(sdr_read(s, root, &y, sizeof y));
    CHECK_MSG(y.phase >= 1 && y.phase <= 4, "phase %" PRIu64 " after recovery", y.phase);
    phases[y.phase]++;
    if (y.blob) {
        fill(y.bseed, want, (size_t)y.blen);
        rc = sdr_blob_read(s, y.blob, 0, got, (size_t)y.blen);
        CHECK_MSG(rc == 0 && memcmp(got, want, (size_t)y.blen) == 0,
                  "phase %" PRIu64 ": the blob it names (%" PRIu64
                  " bytes) reads back wrong "
                  "(rc %d): its bytes were dropped though a recoverable state needs them",
                  y.phase, y.blen, rc);
    }
    CHECK_OK(sdr_close(s));
    pc_free(snap);
}

/* A blob put and freed while the helper is busy with the previous batch,
 * and one put and freed by the same transaction, are never written; a power cut anywhere
 * in the flush of their batch recovers a state that either never had them or no longer
 * needs them (without whole-batch recovery a torn batch would name one). */
TEST(powercut_group_young_blobs_never_written)
{
    uint64_t phases[5] = {0};
    uint64_t unwritten = 0;
    int cuts = 0;
    for (int round = 0; round < 24 * scale(); round++) {
        pc_fs *fs = pc_new(PCDIR, tt_seed() + (uint64_t)round);
        sdr_profile p = {.name = "y",
                         .dir = PCDIR,
                         .heap_size = HEAP,
                         .mode = SDR_DURABLE,
                         .commit = SDR_COMMIT_GROUP,
                         .group_ms = 1,
                         .io = &fs->io};
        sdr *s = NULL;
        char why[512];
        CHECK_MSG(sdr_open(&p, &s, why, sizeof why) == 0, "sdr_open: %s", why);
        sdr_off root;
        CHECK_OK(sdr_txn_begin(s));
        CHECK_OK(sdr_alloc(s, sizeof(struct young_root), SDR_OPS, &root));
        CHECK_OK(sdr_catalog_put(s, "young", root));
        young_set(s, root, 1, 0, 0, 0);
        CHECK_OK(sdr_txn_end(s));
        CHECK_OK(sdr_flush(s));

        /* Phase 2 starts a batch and holds the helper in its sync. */
        pc_hold_syncs(fs, 1);
        CHECK_OK(sdr_txn_begin(s));
        young_set(s, root, 2, 0, 0, 0);
        CHECK_OK(sdr_txn_end(s));
        while (pc_held_syncs(fs) == 0)
            usleep(200);
        /* Phase 3 puts A; phase 4 frees it, puts and frees C in one go and
         * keeps B. All three queue behind the held flush as one batch. */
        uint64_t la = 70000 + (uint64_t)round * 100, lb = 66000 + (uint64_t)round;
        CHECK_OK(sdr_txn_begin(s));
        sdr_off a = young_put(s, 1000 + (uint64_t)round, la);
        young_set(s, root, 3, a, 1000 + (uint64_t)round, la);
        CHECK_OK(sdr_txn_end(s));
        CHECK_OK(sdr_txn_begin(s));
        CHECK_OK(sdr_blob_free(s, a));
        sdr_off c = young_put(s, 3000, 75000);
        CHECK_OK(sdr_blob_free(s, c));
        sdr_off b = young_put(s, 2000 + (uint64_t)round, lb);
        young_set(s, root, 4, b, 2000 + (uint64_t)round, lb);
        CHECK_OK(sdr_txn_end(s));
        /* A cut at each step of the flush that follows, one per round. */
        pc_snap_after(fs, 1 + (uint64_t)(round % 8));
        pc_hold_syncs(fs, 0);
        CHECK_OK(sdr_flush(s));
        sdr_usage u;
        CHECK_OK(sdr_get_usage(s, &u));
        CHECK_OK(sdr_close(s));
        unwritten += u.blob_unwritten;
        CHECK_MSG(u.blob_unwritten == la + 75000,
                  "%" PRIu64
                  " blob bytes unwritten in round %d, expected A's and C's %" PRIu64,
                  u.blob_unwritten, round, la + 75000);
        /* Several cuts of each snapshot: each tears its pending writes
         * differently. */
        pc_fs *ss[PC_MAXSNAP];
        int n = pc_take_snaps(fs, ss, NULL);
        for (int i = 0; i < n; i++) {
            for (uint64_t k = 0; k < 32; k++, cuts++)
                young_check(pc_snapshot(ss[i]), &p, phases, tt_seed() * 131 + k);
            pc_free(ss[i]);
        }
        young_check(pc_snapshot(fs), &p, phases, 7);
        pc_free(fs);
    }
    fprintf(stderr,
            "# young blobs: %d cuts mid-flush, recovered to phase 2: %" PRIu64
            ", 4: %" PRIu64 "; %" PRIu64 " bytes never written\n",
            cuts, phases[2], phases[4], unwritten);
    CHECK_MSG(phases[2] > 0 && phases[4] > 0, "the cuts never split the batch's flush");
    CHECK_EQ_U64(phases[3], 0);
}

/* ------------------------------------------- checkpoints under group commit */

struct ckpt_committer {
    sdr *s;
    sdr_off root, big;
    int done;
};

/* Commits until the log outgrows the checkpoint threshold. */
static void *ckpt_commit_main(void *arg)
{
    struct ckpt_committer *c = arg;
    static uint8_t b[6000];
    for (int i = 0; i < 3; i++) {
        memset(b, 'a' + i, sizeof b);
        CHECK_OK(sdr_txn_begin(c->s));
        CHECK_OK(sdr_write(c->s, c->big, b, sizeof b));
        young_set(c->s, c->root, 2, 0, 0, 0);
        CHECK_OK(sdr_txn_end(c->s));
    }
    __atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static sdr *ckpt_store(pc_fs *fs, sdr_profile *p, unsigned group_ms, sdr_off *root,
                       sdr_off *big)
{
    *p = (sdr_profile){.name = "k",
                       .dir = PCDIR,
                       .heap_size = HEAP,
                       .mode = SDR_DURABLE,
                       .commit = SDR_COMMIT_GROUP,
                       .group_ms = group_ms,
                       .checkpoint_bytes = 4096,
                       .io = &fs->io};
    sdr *s = NULL;
    char why[512];
    CHECK_MSG(sdr_open(p, &s, why, sizeof why) == 0, "sdr_open: %s", why);
    CHECK_OK(sdr_txn_begin(s));
    CHECK_OK(sdr_alloc(s, sizeof(struct young_root), SDR_OPS, root));
    CHECK_OK(sdr_alloc(s, 6000, SDR_OPS, big));
    CHECK_OK(sdr_catalog_put(s, "young", *root));
    young_set(s, *root, 1, 0, 0, 0);
    CHECK_OK(sdr_txn_end(s));
    CHECK_OK(sdr_flush(s));
    return s;
}

/* A checkpoint under group commit starts without waiting for the disk: with
 * the helper held in a sync, commits that cross the checkpoint threshold
 * still return. */
TEST(group_checkpoint_does_not_wait_for_the_flush)
{
    pc_fs *fs = pc_new(PCDIR, tt_seed());
    sdr_profile p;
    struct ckpt_committer c = {0};
    c.s = ckpt_store(fs, &p, 1, &c.root, &c.big);
    pc_hold_syncs(fs, 1);
    CHECK_OK(sdr_txn_begin(c.s));
    young_set(c.s, c.root, 2, 0, 0, 0);
    CHECK_OK(sdr_txn_end(c.s));
    while (pc_held_syncs(fs) == 0)
        usleep(200);
    pthread_t t;
    CHECK_EQ_INT(pthread_create(&t, NULL, ckpt_commit_main, &c), 0);
    int done = 0;
    for (int i = 0; i < 3000 && !done; i++) {
        usleep(1000);
        done = __atomic_load_n(&c.done, __ATOMIC_ACQUIRE);
    }
    pc_hold_syncs(fs, 0);
    pthread_join(t, NULL);
    CHECK_MSG(done, "commits that start a checkpoint waited for the held flush");
    CHECK_OK(sdr_flush(c.s));
    CHECK_OK(sdr_close(c.s));
    CHECK_EQ_INT(pc_open_fds(fs), 0);
    uint64_t phases[5] = {0};
    young_check(pc_snapshot(fs), &p, phases, 1);
    CHECK_EQ_U64(phases[2], 1);
    pc_free(fs);
}

/* The image of a checkpoint is written only once the commits it holds are
 * durable: a commit that puts a large blob (kept in memory until its flush)
 * and starts a checkpoint, cut while its flush gathers, recovers to the
 * state before it, never to one naming bytes that are not on the disk. */
TEST(group_checkpoint_image_waits_for_its_commits)
{
    uint64_t phases[5] = {0};
    for (int round = 0; round < 4; round++) {
        pc_fs *fs = pc_new(PCDIR, tt_seed() + (uint64_t)round);
        sdr_profile p;
        sdr_off root, big;
        /* The flush gathers for half of 1.6 s: the cut comes well before. */
        sdr *s = ckpt_store(fs, &p, 1600, &root, &big);
        static uint8_t b[6000];
        memset(b, 'x', sizeof b);
        uint64_t len = 70000 + (uint64_t)round;
        CHECK_OK(sdr_txn_begin(s));
        sdr_off blob = young_put(s, 77 + (uint64_t)round, len);
        young_set(s, root, 3, blob, 77 + (uint64_t)round, len);
        CHECK_OK(sdr_write(s, big, b, sizeof b)); /* crosses the threshold */
        CHECK_OK(sdr_txn_end(s));
        usleep(300000); /* time enough for an image that did not wait */
        young_check(pc_snapshot(fs), &p, phases, tt_seed() + (uint64_t)round);
        CHECK_OK(sdr_flush(s));
        CHECK_OK(sdr_close(s));
        young_check(pc_snapshot(fs), &p, phases, 3);
        pc_free(fs);
    }
    CHECK_EQ_U64(phases[1], 4); /* cut during the gathering */
    CHECK_EQ_U64(phases[3], 4); /* after the flush and a clean close */
}

/* ------------------------------------------------------------ I/O errors */

static void io_error_probes(int commit, const char *label)
{
    uint64_t seed = tt_seed() ^ (uint64_t)(commit + 7) * UINT64_C(0x9876543);
    int probes = 150 * scale(), opened = 0, failed_open = 0, errs = 0;
    uint64_t span = 150; /* operations of phase 2, learnt as we go */
    struct counts c = {0, 0, 0};
    double t0 = now_s();
    for (int p = 0; p < probes; p++) {
        struct run r;
        pc_fs *fs = pc_new(PCDIR, seed + (uint64_t)p);
        fs->lose_on_sync_fail = (int)(p & 1);
        /* PC_PROBE=<n>: trace every I/O operation of probe n (-1: name each). */
        if (getenv("PC_PROBE") && atoi(getenv("PC_PROBE")) < 0)
            fprintf(stderr, "# probe %d\n", p);
        if (getenv("PC_PROBE") && atoi(getenv("PC_PROBE")) == p)
            fs->trace = 1;
        run_init(&r, fs, PCDIR, commit, seed * 17 + (uint64_t)p);
        char why[512];
        /* Phase 1: some committed history. */
        CHECK_OK(sdr_open(&r.prof, &r.s, why, sizeof why));
        after_open(&r);
        for (int t = 0, n = 3 + (int)rnd(&r, 12); t < n; t++)
            CHECK_OK(run_txn(&r, rnd(&r, 6) == 0, NULL, 0));
        if (rnd(&r, 2)) {
            CHECK_OK(sdr_close(r.s));
        } else {
            /* or a crash after a flush: recovery then finds every commit but
             * also whatever else was not yet synced (unlinks, a checkpoint) */
            CHECK_OK(sdr_flush(r.s));
            pc_fs *cp = pc_snapshot(fs);
            CHECK_OK(sdr_close(r.s));
            pc_free(fs);
            pc_cut(cp, &r.rng);
            fs = r.fs = cp;
            r.prof.io = &fs->io;
            r.s = open_on(&r, fs, "phase 1 cut");
            match_state(&r, r.s, r.k, r.k, 0, "phase 1 cut");
            CHECK_OK(sdr_close(r.s));
        }
        r.s = NULL;
        /* Phase 2: the same again with the n-th I/O operation failing. */
        uint64_t at = 1 + rnd(&r, span + 20);
        int sticky = (int)rnd(&r, 2);
        if (fs->trace)
            fprintf(stderr, "phase 2: k %" PRIu64 ", fail at +%" PRIu64 " sticky %d\n",
                    r.k, at, sticky);
        uint64_t ops0 = pc_ops(fs);
        pc_fail_after(fs, at, sticky);
        int rc = sdr_open(&r.prof, &r.s, why, sizeof why);
        uint64_t lo = r.k, hi = r.k;
        if (rc) {
            CHECK_MSG(rc < 0 && why[0], "open failed (%d) without a reason", rc);
            CHECK_MSG(fs->st.failed > 0, "open failed with no injected error: %s", why);
            CHECK_EQ_INT(pc_open_fds(fs), 0);
            r.s = NULL;
            failed_open++;
        } else {
            opened++;
            CHECK_MSG(walk_store(r.s, 1, &(struct walk){0}, why, sizeof why) == 0 ||
                          fs->st.failed > 0,
                      "after open: %s", why);
            after_open(&r);
            for (int t = 0, ntx = 4 + (int)rnd(&r, 12); t < ntx; t++) {
                rc = run_txn(&r, rnd(&r, 6) == 0, NULL, 0);
                if (rc) {
                    errs++;
                    CHECK_MSG(fs->st.failed > 0,
                              "transaction failed with no injected "
                              "error: %s",
                              tern_strerror(rc));
                }
                if (rnd(&r, 8) == 0) {
                    rc = sdr_flush(r.s);
                    CHECK_MSG(rc == 0 || fs->st.failed > 0, "flush: %s",
                              tern_strerror(rc));
                }
            }
            lo = k_durable(&r);
            hi = r.k;
            rc = sdr_close(r.s);
            r.s = NULL;
            CHECK_MSG(rc == 0 || fs->st.failed > 0, "close: %s", tern_strerror(rc));
            if (rc == 0)
                lo = r.k; /* close made every commit durable */
            CHECK_MSG(pc_open_fds(fs) == 0, "the store left %d descriptor(s) open",
                      pc_open_fds(fs));
        }
        uint64_t used = pc_ops(fs) - ops0;
        if (used > span && fs->st.failed == 0)
            span = used;
        /* Phase 3: power cut, then recovery without faults. */
        if (fs->trace)
            fprintf(stderr, "phase 3: lo %" PRIu64 " hi %" PRIu64 "\n", lo, hi);
        pc_fail_after(fs, 0, 0);
        check_cut(&r, fs, lo, hi, &c);
        run_free(&r);
    }
    fprintf(stderr,
            "# I/O errors: %s %d probes (%d opens failed, %d opened, %d failed "
            "transactions), %d recoveries ok, %.1f s\n",
            label, probes, failed_open, opened, errs, c.cuts, now_s() - t0);
}

TEST(io_errors_sync)
{
    io_error_probes(SDR_COMMIT_SYNC, "sync");
}

TEST(io_errors_group)
{
    io_error_probes(SDR_COMMIT_GROUP, "group");
}

/* ------------------------------------------------- torn tails, real files */

static void copy_file(const char *from, const char *to)
{
    static uint8_t buf[1 << 16];
    int in = open(from, O_RDONLY | O_CLOEXEC), out;
    CHECK_MSG(in >= 0, "open %s: %s", from, strerror(errno));
    out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    CHECK_MSG(out >= 0, "open %s: %s", to, strerror(errno));
    ssize_t n;
    while ((n = read(in, buf, sizeof buf)) > 0)
        CHECK(write(out, buf, (size_t)n) == n);
    CHECK(n == 0);
    close(in);
    close(out);
}

/* Copies (to != NULL) or removes (to == NULL) every file of dir `from`. */
static void each_file(const char *from, const char *to)
{
    DIR *d = opendir(from);
    struct dirent *e;
    char a[1024], b[1024];
    CHECK_MSG(d, "opendir %s: %s", from, strerror(errno));
    if (to)
        CHECK(mkdir(to, 0755) == 0 || errno == EEXIST);
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(a, sizeof a, "%s/%s", from, e->d_name);
        if (to) {
            snprintf(b, sizeof b, "%s/%s", to, e->d_name);
            copy_file(a, b);
        } else {
            CHECK(unlink(a) == 0);
        }
    }
    closedir(d);
    if (!to)
        CHECK(rmdir(from) == 0);
}

/* The file of a kind ("log", "blob") with the highest number, or "img". */
static int newest(const char *dir, const char *kind, char *out, size_t cap)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char pre[64];
    uint64_t best = 0;
    snprintf(pre, sizeof pre, "t.%s", kind);
    CHECK(d);
    while ((e = readdir(d)) != NULL) {
        size_t pl = strlen(pre);
        if (strncmp(e->d_name, pre, pl) != 0)
            continue;
        uint64_t n = e->d_name[pl] == '.' ? strtoull(e->d_name + pl + 1, NULL, 10) : 0;
        if (e->d_name[pl] == 0 || (e->d_name[pl] == '.' && n >= best && n > 0)) {
            best = n;
            snprintf(out, cap, "%s/%s", dir, e->d_name);
        }
    }
    closedir(d);
    return best || strcmp(kind, "img") == 0 ? 0 : -1;
}

/* The log generation an open store appends to: the newest one is made
 * ready, empty, for its next checkpoint. */
static int current_log(const char *dir, char *out, size_t cap)
{
    char newest_log[1024];
    if (newest(dir, "log", newest_log, sizeof newest_log))
        return -1;
    uint64_t n = strtoull(strrchr(newest_log, '.') + 1, NULL, 10);
    int k = snprintf(out, cap, "%s/t.log.%" PRIu64, dir, n - 1);
    return n > 1 && k > 0 && (size_t)k < cap && access(out, F_OK) == 0 ? 0 : -1;
}

static uint64_t fsize(const char *path)
{
    struct stat st;
    CHECK_MSG(stat(path, &st) == 0, "stat %s: %s", path, strerror(errno));
    return (uint64_t)st.st_size;
}

/* Truncates path to at, or XORs len bytes from at with non-zero noise. */
static void damage(struct run *r, const char *path, int garble, uint64_t at, uint64_t len)
{
    int fd = open(path, O_RDWR | O_CLOEXEC);
    CHECK(fd >= 0);
    if (!garble) {
        CHECK(ftruncate(fd, (off_t)at) == 0);
    } else {
        uint8_t b[256];
        CHECK(len <= sizeof b);
        CHECK(pread(fd, b, len, (off_t)at) == (ssize_t)len);
        for (uint64_t i = 0; i < len; i++)
            b[i] ^= (uint8_t)(1 + rnd(r, 255));
        CHECK(pwrite(fd, b, len, (off_t)at) == (ssize_t)len);
    }
    close(fd);
}

struct bound {
    uint64_t end, k; /* the log holds commit k once it is end bytes long */
};

TEST(torn_tails_real_files)
{
    uint64_t seed = tt_seed() ^ UINT64_C(0x70726e);
    const char *base = tt_tmpdir();
    char orig[512], scratch[512], logp[1024], path[1024], why[512];
    snprintf(orig, sizeof orig, "%s/orig", base);
    snprintf(scratch, sizeof scratch, "%s/s", base);
    CHECK(mkdir(orig, 0755) == 0);
    struct run r;
    run_init(&r, NULL, orig, SDR_COMMIT_SYNC, seed);
    struct bound bd[256];
    int nb = 0;
    uint64_t k_img = 0;
    double t0 = now_s();
    for (int sess = 0; sess < 3; sess++) {
        int last = sess == 2;
        r.prof.checkpoint_bytes = 0; /* one log generation per session */
        CHECK_OK(sdr_open(&r.prof, &r.s, why, sizeof why));
        after_open(&r);
        if (last) {
            k_img = r.k;
            CHECK_OK(current_log(orig, logp, sizeof logp));
            bd[nb++] = (struct bound){0, r.k};
            bd[nb++] = (struct bound){fsize(logp), r.k};
        }
        for (int t = 0; t < 40; t++) {
            uint64_t k0 = r.k;
            CHECK_OK(run_txn(&r, rnd(&r, 6) == 0, NULL, 0));
            if (last && r.k != k0)
                bd[nb++] = (struct bound){fsize(logp), r.k};
        }
        CHECK_OK(sdr_close(r.s));
        r.s = NULL;
    }
    uint64_t k_end = r.k, logsz = fsize(logp);
    char imgp[1024], blobp[1024];
    CHECK_OK(newest(orig, "img", imgp, sizeof imgp));
    int have_blob = newest(orig, "blob", blobp, sizeof blobp) == 0;
    int iters = 120 * scale(), nlog = 0, nimg = 0, nblob = 0, bad_blobs = 0;
    for (int it = 0; it < iters; it++) {
        int what = it % 6; /* 0-3 log, 4 image, 5 blob segment */
        if (what == 5 && !have_blob)
            what = 0;
        each_file(orig, scratch);
        const char *src = what < 4 ? logp : what == 4 ? imgp : blobp;
        snprintf(path, sizeof path, "%s/%s", scratch, strrchr(src, '/') + 1);
        uint64_t size = fsize(path), at = rnd(&r, size), len = 0, first = at;
        int garble = (int)rnd(&r, 2), append = what == 3;
        if (append) {
            /* Noise after the last record: every commit stays. */
            int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
            uint8_t junk[300];
            fill(pc_rand(&r.rng), junk, sizeof junk);
            CHECK(fd >= 0 && write(fd, junk, 1 + rnd(&r, sizeof junk)) > 0);
            close(fd);
            first = UINT64_MAX;
        } else if (garble) {
            len = 1 + rnd(&r, size - at < 64 ? size - at : 64);
            damage(&r, path, 1, at, len);
            /* Log header bytes 20-63 are padding no check reads. */
            if (what < 4 && at >= 20 && at < 64)
                first = at + len > 64 ? 64 : UINT64_MAX;
        } else {
            damage(&r, path, 0, at, 0);
        }
        sdr_profile p = r.prof;
        p.dir = scratch;
        sdr *s = NULL;
        int rc = sdr_open(&p, &s, why, sizeof why);
        if (what == 4) {
            CHECK_MSG(rc == TERN_ECORRUPT && why[0],
                      "image %s at %" PRIu64 ": open gave %d (%s), want a refusal",
                      garble ? "garbled" : "truncated", at, rc, why);
            CHECK_RC(sdr_open(&p, &s, why, sizeof why), TERN_ECORRUPT);
            nimg++;
        } else {
            CHECK_MSG(rc == 0, "%s damaged at %" PRIu64 ": open: %s: %s",
                      what < 4 ? "log" : "blob", at, tern_strerror(rc), why);
            uint64_t want = k_end;
            if (what < 4 && first != UINT64_MAX) {
                want = k_img;
                for (int i = 0; i < nb; i++)
                    if (bd[i].end <= first && bd[i].k > want)
                        want = bd[i].k;
            }
            sdr *live = r.s;
            r.s = s;
            /* Even when damage inside a log's synced records takes the store
             * back in time, every blob it still holds must read back intact:
             * emptied segments are removed only once an image records it. */
            int bad_ok = what == 5;
            uint64_t k = match_state(&r, s, want, want, bad_ok, "damaged file");
            struct walk w;
            CHECK_OK(walk_store(s, 1, &w, why, sizeof why));
            bad_blobs += w.blob_bad;
            CHECK_OK(sdr_close(s));
            /* What recovery made of the damage is the store's state from now on. */
            CHECK_OK(sdr_open(&p, &s, why, sizeof why));
            r.s = s;
            CHECK_EQ_U64(match_state(&r, s, k, k, bad_ok, "reopen after damage"), k);
            CHECK_OK(sdr_close(s));
            r.s = live;
            if (what < 4)
                nlog++;
            else
                nblob++;
        }
        each_file(scratch, NULL);
    }
    CHECK_MSG(!have_blob || bad_blobs > 0, "no damaged blob was ever detected");
    fprintf(stderr,
            "# torn files: %d damaged logs (%" PRIu64 " bytes, commits %" PRIu64
            "..%" PRIu64
            ") recovered to the right prefix, %d damaged images refused, %d damaged blob "
            "segments (%d blob reads refused), %.1f s\n",
            nlog, logsz, k_img, k_end, nimg, nblob, bad_blobs, now_s() - t0);
    run_free(&r);
}
