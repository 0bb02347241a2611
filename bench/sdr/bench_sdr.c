/* bench_sdr: throughput of the SDR store (libternsdr).
 *
 *   bench_sdr [--dir D] [--time S] [--reps N] [--heap-mb M] [--keep]
 *             [--cases a,b] <prefix>
 *
 * Cases, each run for a fixed wall time per repetition (median, min and max
 * over the repetitions are reported):
 *   - small transactions: begin; one 64-byte sdr_write into one of 1000
 *     preallocated objects; end. Memory store, durable store with the group
 *     policy, durable store with the sync policy. Unit: transactions/s.
 *   - 1 MiB transactions. Memory store: one 1 MiB sdr_write into a
 *     preallocated object. Durable stores: sdr_blob_put of 1 MiB (the store's
 *     path for bulk data), its handle written into a ring object in the heap,
 *     and the blob 64 puts older freed in the same transaction (disk use stays
 *     bounded). Unit: MB/s of blob bytes put, MB = 1e6 bytes. Under the group
 *     policy two cases:
 *       - on disk: a blob is freed only once the flush that covered its
 *         commit has completed (sdr_durable_seq, waited on through
 *         sdr_durable_fd), so every blob put reaches the disk. This is the
 *         case the durable bandwidth target is judged on. A 1.5 GiB
 *         warm-up first takes a fresh store to writing over its spare
 *         files, as a node that has run a while does (reported apart).
 *       - churn: the blob 64 puts older is freed whether or not it has been
 *         flushed. The store never writes a blob freed before its batch is
 *         taken, so this measures short-lived blobs, not the disk.
 *   - baselines: 1 MiB pwrite + fdatasync appended to fresh 64 MiB files in
 *     the store's directory (rotated like blob segments); 1 MiB pwrites over
 *     the blocks of a 64 MiB file written before, one fdatasync per pass (the
 *     most the disk gives the store's pattern: the on-disk case is judged
 *     against it, and a figure above 1.1 x it raises a warning); a 1 MiB
 *     memcpy. Both disk baselines alternate with the on-disk case, round by
 *     round.
 *   - commit latency under the group policy: sdr_txn_end of one small
 *     transaction until sdr_flush returns.
 * Durable cases end every repetition with sdr_flush inside the timed window,
 * so only durable commits are counted. Around every repetition the bench
 * reads write_bytes and cancelled_write_bytes of /proc/self/io (all threads
 * of the process: the store's flusher and checkpoint threads too), so each
 * case reports the bytes it actually sent towards the disk, and for payload
 * cases that as a fraction of the payload; blob cases also report
 * sdr_usage.blob_unwritten, the blob bytes freed before they were written.
 *
 * Writes <prefix>.json; prints a table on stdout and progress on stderr.
 * Store files go to a fresh directory under --dir (default: <dir of
 * prefix>/tmp, the results' file system), removed at exit unless --keep.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "sdr.h"

#define MAXREP     50
#define SMALL_LEN  64
#define SMALL_OBJS 1000
#define BIG        (1u << 20)
#define KEEP_BLOBS 64
#define DISK_FILE  (64u << 20) /* the blob segment size */
#define MB         1e6

static double opt_time = 2.0;
static int opt_reps = 5;
static unsigned opt_heap_mb = 64;
static int opt_keep;
static char root_dir[2100]; /* the fresh directory holding every store */
static int tty;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (tty)
        fputc('\n', stderr);
    fputs("bench_sdr: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

/* Loud notes for the table and the JSON: figures that cannot be right. */
static char warns[8][900];
static int nwarn;

static void warn(const char *fmt, ...)
{
    va_list ap;
    if (nwarn == 8)
        return;
    va_start(ap, fmt);
    vsnprintf(warns[nwarn++], sizeof warns[0], fmt, ap);
    va_end(ap);
}

/* ----------------------------------------------------------------- results */

struct result {
    const char *key;   /* metric name in the JSON */
    const char *label; /* row in the table */
    const char *unit;
    int n;
    double value[MAXREP]; /* per repetition, in unit */
    double ops[MAXREP];   /* operations (transactions, MiB copies) */
    double secs[MAXREP];
    double median, min, max;
    double payload; /* bytes of payload per step (blob bytes put, bytes
                       written by a baseline); 0: none */
    int blob;       /* steps put blobs: sdr_usage.blob_unwritten is recorded */
    /* per repetition: write_bytes and cancelled_write_bytes of /proc/self/io
     * (NaN if the kernel does not account them), blob bytes freed before
     * they were written, frees that waited for a flush */
    double wbytes[MAXREP], cbytes[MAXREP], unwritten[MAXREP], waits[MAXREP];
    double wait_s[MAXREP];
    double frac[MAXREP]; /* (wbytes - cbytes) / payload bytes */
    double fmed, fmin, fmax;
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median_of(const double *v, int n)
{
    double t[MAXREP];
    if (n <= 0)
        return NAN;
    memcpy(t, v, (size_t)n * sizeof *t);
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

static void spread(const double *v, int n, double *med, double *lo, double *hi)
{
    *med = median_of(v, n);
    *lo = *hi = n ? v[0] : NAN;
    for (int i = 1; i < n; i++) {
        if (v[i] < *lo)
            *lo = v[i];
        if (v[i] > *hi)
            *hi = v[i];
    }
}

static void summarize(struct result *r)
{
    spread(r->value, r->n, &r->median, &r->min, &r->max);
    spread(r->frac, r->n, &r->fmed, &r->fmin, &r->fmax);
}

/* write_bytes and cancelled_write_bytes of /proc/self/io: bytes of page
 * cache this process dirtied (written back later, or at its fdatasync) and
 * of dirty pages it dropped before they were written. The kernel counts a
 * page when it becomes dirty, so a page dirtied twice around a sync counts
 * twice, as it is written twice; file-system journal and inode writes are
 * not counted. NaN if the kernel keeps no such accounting. */
static void io_bytes(double *w, double *cancelled)
{
    FILE *f = fopen("/proc/self/io", "r");
    char line[128];
    unsigned long long v;
    *w = *cancelled = NAN;
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "write_bytes: %llu", &v) == 1)
            *w = (double)v;
        else if (sscanf(line, "cancelled_write_bytes: %llu", &v) == 1)
            *cancelled = (double)v;
    }
    fclose(f);
}

static void fmt_val(char *buf, size_t cap, double v)
{
    if (!isfinite(v))
        snprintf(buf, cap, "-");
    else if (v >= 1e6)
        snprintf(buf, cap, "%.3fM", v / 1e6);
    else if (v >= 1e4)
        snprintf(buf, cap, "%.1fk", v / 1e3);
    else
        snprintf(buf, cap, "%.1f", v);
}

static void progress(const struct result *r, int rep, int done)
{
    char v[32];
    if (done && rep == opt_reps - 1) {
        /* the case's summary line stays on screen */
        char a[32], b[32], c[32];
        double lo = r->value[0], hi = r->value[0];
        for (int i = 1; i < r->n; i++) {
            lo = r->value[i] < lo ? r->value[i] : lo;
            hi = r->value[i] > hi ? r->value[i] : hi;
        }
        fmt_val(a, sizeof a, median_of(r->value, r->n));
        fmt_val(b, sizeof b, lo);
        fmt_val(c, sizeof c, hi);
        fprintf(stderr, "%sbench_sdr: %-34s median %s %s (min %s, max %s, %d reps)%s\n",
                tty ? "\r" : "", r->label, a, r->unit, b, c, r->n, tty ? "\033[K" : "");
    } else if (tty) {
        fmt_val(v, sizeof v, done ? r->value[rep] : NAN);
        fprintf(stderr, "\rbench_sdr: %-34s rep %d/%d %s %s\033[K", r->label, rep + 1,
                opt_reps, done ? v : "running", done ? r->unit : "");
    }
    fflush(stderr);
}

/* ------------------------------------------------------------- timed loop */

struct ctx {
    sdr *s;
    sdr_off objs[SMALL_OBJS];
    sdr_off big;
    sdr_off ring; /* KEEP_BLOBS handles */
    sdr_off blobs[KEEP_BLOBS];
    uint64_t bseq[KEEP_BLOBS]; /* the commit that put each blob */
    uint64_t i, waits;
    uint64_t max_ops; /* a timed loop also stops after this many steps (0: no) */
    double wait_s;    /* of the repetition, in wait_durable */
    uint8_t *buf;     /* BIG bytes */
    uint8_t *dst;
    char dir[2200]; /* the open store's */
    /* disk baselines */
    int fd, fileno;
    uint64_t fpos;
    int ofd; /* the overwrite baseline's file */
    uint64_t opos;
    char ddir[2200];
};

typedef int (*step_fn)(struct ctx *);

/* Runs step until secs have passed (the clock is read every mask+1 steps)
 * or c->max_ops steps are done, then finish; *ops and *el get the count and
 * elapsed time. */
static int timed(struct ctx *c, step_fn step, step_fn finish, double secs, unsigned mask,
                 uint64_t *ops, double *el)
{
    double t0 = now(), end = t0 + secs;
    uint64_t n = 0;
    int rc;
    for (;;) {
        if ((rc = step(c)))
            return rc;
        n++;
        if (((n & mask) == 0 && now() >= end) || n == c->max_ops)
            break;
    }
    if (finish && (rc = finish(c)))
        return rc;
    *el = now() - t0;
    *ops = n;
    return 0;
}

static int step_small(struct ctx *c)
{
    uint8_t b[SMALL_LEN];
    uint64_t i = c->i++;
    memset(b, (int)(i & 0xff), sizeof b);
    memcpy(b, &i, 8);
    int rc = sdr_txn_begin(c->s);
    if (!rc)
        rc = sdr_write(c->s, c->objs[i % SMALL_OBJS], b, sizeof b);
    if (rc) {
        if (sdr_in_txn(c->s))
            sdr_txn_cancel(c->s);
        return rc;
    }
    return sdr_txn_end(c->s);
}

static int step_big_write(struct ctx *c)
{
    uint64_t i = c->i++;
    memcpy(c->buf, &i, 8);
    int rc = sdr_txn_begin(c->s);
    if (!rc)
        rc = sdr_write(c->s, c->big, c->buf, BIG);
    if (rc) {
        if (sdr_in_txn(c->s))
            sdr_txn_cancel(c->s);
        return rc;
    }
    return sdr_txn_end(c->s);
}

static int step_big_blob(struct ctx *c)
{
    uint64_t i = c->i++;
    unsigned slot = (unsigned)(i % KEEP_BLOBS);
    sdr_off b;
    memcpy(c->buf, &i, 8);
    int rc = sdr_txn_begin(c->s);
    if (!rc && c->blobs[slot])
        rc = sdr_blob_free(c->s, c->blobs[slot]);
    if (!rc)
        rc = sdr_blob_put(c->s, c->buf, BIG, &b);
    if (!rc)
        rc = sdr_write(c->s, c->ring + slot * 8u, &b, 8);
    if (rc) {
        if (sdr_in_txn(c->s))
            sdr_txn_cancel(c->s);
        return rc;
    }
    if ((rc = sdr_txn_end(c->s)))
        return rc;
    c->blobs[slot] = b;
    return 0;
}

/* Waits until the commit seq is durable: on the store's eventfd, as an event
 * loop that holds a blob until it is on disk would. */
static int wait_durable(struct ctx *c, uint64_t seq)
{
    int fd = sdr_durable_fd(c->s);
    while (sdr_durable_seq(c->s) < seq) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int n = fd < 0 ? 0 : poll(&p, 1, 1000);
        if (n < 0 && errno != EINTR)
            return -errno;
        if (n == 0) /* no eventfd, or a failed store: sdr_flush says which */
            return sdr_flush(c->s);
        uint64_t v;
        if (n > 0 && read(fd, &v, sizeof v) < 0 && errno != EAGAIN && errno != EINTR)
            return -errno;
    }
    return 0;
}

/* As step_big_blob, but the blob freed must outlive the flush that covered
 * its commit, so every blob put is written to disk; when the flusher is 64
 * blobs behind, the put waits for it. */
static int step_big_blob_on_disk(struct ctx *c)
{
    unsigned slot = (unsigned)(c->i % KEEP_BLOBS);
    int rc;
    if (c->blobs[slot] && sdr_durable_seq(c->s) < c->bseq[slot]) {
        double t0 = now();
        c->waits++;
        rc = wait_durable(c, c->bseq[slot]);
        c->wait_s += now() - t0;
        if (rc)
            return rc;
    }
    if ((rc = step_big_blob(c)))
        return rc;
    c->bseq[slot] = sdr_commit_seq(c->s);
    return 0;
}

static int finish_flush(struct ctx *c)
{
    return sdr_flush(c->s);
}

static int step_memcpy(struct ctx *c)
{
    memcpy(c->dst, c->buf, BIG);
    __asm__ __volatile__("" : : "r"(c->dst) : "memory");
    return 0;
}

static int disk_open_next(struct ctx *c)
{
    char path[PATH_MAX + 32];
    if (c->fd >= 0) {
        close(c->fd);
        /* keep one finished file, like the 64 live blobs */
        snprintf(path, sizeof path, "%s/disk.%d", c->ddir, c->fileno - 1);
        unlink(path);
    }
    c->fileno++;
    snprintf(path, sizeof path, "%s/disk.%d", c->ddir, c->fileno);
    c->fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (c->fd < 0)
        return -errno;
    c->fpos = 0;
    return 0;
}

static int write_all(int fd, const uint8_t *p, size_t n, uint64_t off)
{
    size_t done = 0;
    while (done < n) {
        ssize_t w = pwrite(fd, p + done, n - done, (off_t)(off + done));
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -errno;
        done += (size_t)w;
    }
    return 0;
}

static int sync_fd(int fd)
{
    while (fdatasync(fd) < 0)
        if (errno != EINTR)
            return -errno;
    return 0;
}

static int step_disk(struct ctx *c)
{
    int rc;
    if ((c->fd < 0 || c->fpos + BIG > DISK_FILE) && (rc = disk_open_next(c)))
        return rc;
    if ((rc = write_all(c->fd, c->buf, BIG, c->fpos)))
        return rc;
    c->fpos += BIG;
    return sync_fd(c->fd);
}

/* What the disk gives a writer in the store's best case: 1 MiB writes over
 * blocks a file already has (as the store writes into its spare files:
 * no allocation, no journal commit at the sync), one fdatasync per 64 MiB
 * (no batch of the on-disk case holds more than its 64 unflushed blobs). */
static int disk_ow_open(struct ctx *c)
{
    char path[PATH_MAX + 32];
    int rc = 0;
    snprintf(path, sizeof path, "%s/overwrite", c->ddir);
    c->ofd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (c->ofd < 0)
        return -errno;
    for (uint64_t at = 0; at < DISK_FILE && !rc; at += BIG)
        rc = write_all(c->ofd, c->buf, BIG, at);
    c->opos = 0;
    return rc ? rc : sync_fd(c->ofd);
}

static int step_disk_ow(struct ctx *c)
{
    int rc = write_all(c->ofd, c->buf, BIG, c->opos);
    if (rc)
        return rc;
    c->opos += BIG;
    if (c->opos < DISK_FILE)
        return 0;
    c->opos = 0;
    return sync_fd(c->ofd);
}

/* A repetition counts only bytes on disk: the last pass is synced in it. */
static int finish_disk_ow(struct ctx *c)
{
    return sync_fd(c->ofd);
}

/* A durable-sync small commit appends one ~104-byte log record and syncs it:
 * the same with a bare file. */
#define DISK_SMALL 104
static int step_disk_small(struct ctx *c)
{
    int rc;
    if ((c->fd < 0 || c->fpos + DISK_SMALL > DISK_FILE) && (rc = disk_open_next(c)))
        return rc;
    ssize_t w;
    do
        w = pwrite(c->fd, c->buf, DISK_SMALL, (off_t)c->fpos);
    while (w < 0 && errno == EINTR);
    if (w != DISK_SMALL)
        return w < 0 ? -errno : -EIO;
    c->fpos += DISK_SMALL;
    while (fdatasync(c->fd) < 0)
        if (errno != EINTR)
            return -errno;
    return 0;
}

/* --------------------------------------------------------- store handling */

static void rm_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[PATH_MAX + 300];
    if (!d)
        return;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    closedir(d);
    rmdir(dir);
}

static void case_dir(char *dir, size_t cap, const char *name)
{
    snprintf(dir, cap, "%s/%s", root_dir, name);
    if (mkdir(dir, 0755) < 0 && errno != EEXIST)
        die("mkdir %s: %s", dir, strerror(errno));
}

static void store_open(struct ctx *c, const char *name, int mode, int commit)
{
    char why[512];
    sdr_profile p;
    memset(&p, 0, sizeof p);
    case_dir(c->dir, sizeof c->dir, name);
    p.name = name;
    p.dir = c->dir;
    p.heap_size = (uint64_t)opt_heap_mb << 20;
    p.mode = mode;
    p.commit = commit;
    int rc = sdr_open(&p, &c->s, why, sizeof why);
    if (rc)
        die("sdr_open %s: %s (%s)", name, tern_strerror(rc), why);
    /* setup: the objects the cases write into */
    if ((rc = sdr_txn_begin(c->s)))
        die("setup: %s", tern_strerror(rc));
    for (int i = 0; i < SMALL_OBJS && !rc; i++)
        if (!(rc = sdr_alloc(c->s, SMALL_LEN, SDR_OPS, &c->objs[i])))
            rc = sdr_zero(c->s, c->objs[i], SMALL_LEN);
    if (!rc && !(rc = sdr_alloc(c->s, KEEP_BLOBS * 8, SDR_OPS, &c->ring)))
        rc = sdr_zero(c->s, c->ring, KEEP_BLOBS * 8);
    if (!rc && mode == SDR_MEMORY && !(rc = sdr_alloc(c->s, BIG, SDR_BULK, &c->big)))
        rc = sdr_zero(c->s, c->big, BIG);
    if (rc || (rc = sdr_txn_end(c->s)) || (rc = sdr_flush(c->s)))
        die("setup of store %s: %s", name, tern_strerror(rc));
    memset(c->blobs, 0, sizeof c->blobs);
    memset(c->bseq, 0, sizeof c->bseq);
    c->i = 0;
}

static void store_close(struct ctx *c)
{
    int rc = sdr_close(c->s);
    if (rc)
        die("sdr_close: %s", tern_strerror(rc));
    c->s = NULL;
    rm_dir(c->dir);
}

static void warm_up(struct ctx *c, struct result *r, step_fn step, step_fn finish,
                    unsigned mask)
{
    uint64_t ops;
    double el;
    int rc =
        timed(c, step, finish, opt_time / 4 < 0.5 ? opt_time / 4 : 0.5, mask, &ops, &el);
    if (rc)
        die("%s (warm-up): %s", r->label, tern_strerror(rc));
}

/* Repetition k of a case. per_op is the unit count of one step (1
 * transaction, or 1 MiB in MB). */
static void run_rep(struct ctx *c, struct result *r, int k, step_fn step, step_fn finish,
                    unsigned mask, double per_op)
{
    uint64_t ops;
    double el, w0, c0, w1, c1;
    sdr_usage u0, u1;
    int rc;
    progress(r, k, 0);
    if (r->blob && (rc = sdr_get_usage(c->s, &u0)))
        die("%s: sdr_get_usage: %s", r->label, tern_strerror(rc));
    c->waits = 0;
    c->wait_s = 0;
    io_bytes(&w0, &c0);
    if ((rc = timed(c, step, finish, opt_time, mask, &ops, &el)))
        die("%s: %s", r->label, tern_strerror(rc));
    io_bytes(&w1, &c1);
    if (r->blob && (rc = sdr_get_usage(c->s, &u1)))
        die("%s: sdr_get_usage: %s", r->label, tern_strerror(rc));
    r->ops[k] = (double)ops;
    r->secs[k] = el;
    r->value[k] = (double)ops * per_op / el;
    r->wbytes[k] = w1 - w0;
    r->cbytes[k] = c1 - c0;
    r->frac[k] =
        r->payload > 0 ? (r->wbytes[k] - r->cbytes[k]) / ((double)ops * r->payload) : NAN;
    r->unwritten[k] = r->blob ? (double)(u1.blob_unwritten - u0.blob_unwritten) : NAN;
    r->waits[k] = (double)c->waits;
    r->wait_s[k] = c->wait_s;
    r->n = k + 1;
    progress(r, k, 1);
}

/* Runs one case: a short warm-up, then opt_reps timed repetitions. */
static void run_case(struct ctx *c, struct result *r, step_fn step, step_fn finish,
                     unsigned mask, double per_op)
{
    warm_up(c, r, step, finish, mask);
    for (int k = 0; k < opt_reps; k++)
        run_rep(c, r, k, step, finish, mask, per_op);
    summarize(r);
}

/* ------------------------------------------------------------ latency */

#define LAT_MAX 100000
static double lat[LAT_MAX];
static int nlat;

static void run_latency(struct ctx *c, double secs)
{
    double end = now() + secs;
    uint8_t b[SMALL_LEN];
    memset(b, 0x5a, sizeof b);
    if (tty)
        fprintf(stderr, "\rbench_sdr: %-34s running\033[K",
                "durable-group commit latency");
    /* at least 200 samples: one may wait for a whole checkpoint image */
    while (nlat < LAT_MAX && (now() < end || nlat < 200)) {
        int rc = sdr_txn_begin(c->s);
        if (!rc)
            rc = sdr_write(c->s, c->objs[nlat % SMALL_OBJS], b, sizeof b);
        double t0 = now();
        if (!rc)
            rc = sdr_txn_end(c->s);
        if (!rc)
            rc = sdr_flush(c->s);
        double t1 = now();
        if (rc)
            die("latency: %s", tern_strerror(rc));
        lat[nlat++] = (t1 - t0) * 1e6;
    }
    qsort(lat, (size_t)nlat, sizeof *lat, cmp_double);
}

static double pct(double p)
{
    if (!nlat)
        return NAN;
    size_t i = (size_t)(p / 100.0 * (nlat - 1) + 0.5);
    return lat[i];
}

/* ------------------------------------------------------------ machine */

static void cpu_model(char *buf, size_t cap)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    snprintf(buf, cap, "unknown");
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) == 0) {
            char *p = strchr(line, ':');
            if (p) {
                p++;
                while (*p == ' ' || *p == '\t')
                    p++;
                p[strcspn(p, "\n")] = '\0';
                snprintf(buf, cap, "%s", p);
            }
            break;
        }
    }
    fclose(f);
}

static const char *fs_name(long type)
{
    switch ((unsigned long)type) {
    case 0xEF53:
        return "ext4";
    case 0x58465342:
        return "xfs";
    case 0x9123683E:
        return "btrfs";
    case 0x01021994:
        return "tmpfs";
    case 0x794c7630:
        return "overlayfs";
    case 0x2fc12fc1:
        return "zfs";
    case 0x6969:
        return "nfs";
    case 0xF2F52010:
        return "f2fs";
    case 0x01021997:
        return "9p";
    case 0x65735546:
        return "fuse";
    case 0x858458f6:
        return "ramfs";
    default:
        return NULL;
    }
}

/* The first line of /proc/loadavg: on a shared machine, what else ran. */
static void loadavg(char *buf, size_t cap)
{
    FILE *f = fopen("/proc/loadavg", "r");
    snprintf(buf, cap, "unknown");
    if (f) {
        if (fgets(buf, (int)cap, f))
            buf[strcspn(buf, "\n")] = '\0';
        fclose(f);
    }
}

/* ------------------------------------------------------------ JSON */

static void jstr(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

static void jnum(FILE *f, double v)
{
    if (!isfinite(v))
        fputs("null", f);
    else if (v == floor(v) && fabs(v) < 1e15)
        fprintf(f, "%.0f", v);
    else
        fprintf(f, "%.3f", v);
}

static void jarr(FILE *f, const double *v, int n)
{
    fputc('[', f);
    for (int i = 0; i < n; i++) {
        if (i)
            fputs(", ", f);
        jnum(f, v[i]);
    }
    fputc(']', f);
}

/* "name": {"median", "min", "max", "samples"}, then a comma */
static void jspread(FILE *f, const char *name, const double *v, int n)
{
    double m, lo, hi;
    spread(v, n, &m, &lo, &hi);
    fprintf(f, "    ");
    jstr(f, name);
    fprintf(f, ": {\"median\": ");
    jnum(f, m);
    fprintf(f, ", \"min\": ");
    jnum(f, lo);
    fprintf(f, ", \"max\": ");
    jnum(f, hi);
    fprintf(f, ", \"samples\": ");
    jarr(f, v, n);
    fprintf(f, "},\n");
}

/* ------------------------------------------------------------ main */

enum {
    R_MEMCPY,
    R_DISK,
    R_DISK_OW,
    R_DISK_SMALL,
    R_MEM_SMALL,
    R_MEM_BIG,
    R_GRP_SMALL,
    R_GRP_DISK,
    R_GRP_CHURN,
    R_SYNC_SMALL,
    R_SYNC_BIG,
    R_N
};

static struct result res[R_N] = {
    [R_MEMCPY] = {.key = "memcpy_mb_per_s",
                  .label = "baseline: memcpy 1 MiB",
                  .unit = "MB/s"},
    [R_DISK] = {.key = "disk_fdatasync_mb_per_s",
                .label = "baseline: disk 1 MiB + fdatasync",
                .unit = "MB/s",
                .payload = BIG},
    [R_DISK_OW] = {.key = "disk_overwrite_mb_per_s",
                   .label = "baseline: disk overwrite, sync/64M",
                   .unit = "MB/s",
                   .payload = BIG},
    [R_DISK_SMALL] = {.key = "disk_fdatasync_small_per_s",
                      .label = "baseline: disk 104 B + fdatasync",
                      .unit = "writes/s",
                      .payload = DISK_SMALL},
    [R_MEM_SMALL] = {.key = "memory_small_txn_per_s",
                     .label = "memory, 64 B txn",
                     .unit = "txn/s",
                     .payload = SMALL_LEN},
    [R_MEM_BIG] = {.key = "memory_1mib_mb_per_s",
                   .label = "memory, 1 MiB sdr_write txn",
                   .unit = "MB/s",
                   .payload = BIG},
    [R_GRP_SMALL] = {.key = "durable_group_small_txn_per_s",
                     .label = "durable-group, 64 B txn",
                     .unit = "txn/s",
                     .payload = SMALL_LEN},
    [R_GRP_DISK] = {.key = "durable_group_1mib_on_disk_mb_per_s",
                    .label = "durable-group, 1 MiB blob, on disk",
                    .unit = "MB/s",
                    .payload = BIG,
                    .blob = 1},
    [R_GRP_CHURN] = {.key = "durable_group_1mib_churn_mb_per_s",
                     .label = "durable-group, 1 MiB blob churn",
                     .unit = "MB/s",
                     .payload = BIG,
                     .blob = 1},
    [R_SYNC_SMALL] = {.key = "durable_sync_small_txn_per_s",
                      .label = "durable-sync, 64 B txn",
                      .unit = "txn/s",
                      .payload = SMALL_LEN},
    [R_SYNC_BIG] = {.key = "durable_sync_1mib_mb_per_s",
                    .label = "durable-sync, 1 MiB blob txn",
                    .unit = "MB/s",
                    .payload = BIG,
                    .blob = 1},
};

static const char *opt_cases; /* comma-separated substrings of metric names */

static int want(int i)
{
    if (!opt_cases)
        return 1;
    const char *p = opt_cases;
    while (*p) {
        size_t n = strcspn(p, ",");
        char pat[64];
        snprintf(pat, sizeof pat, "%.*s", (int)(n < 63 ? n : 63), p);
        if (n && strstr(res[i].key, pat))
            return 1;
        p += n + (p[n] == ',');
    }
    return 0;
}

static void disk_begin(struct ctx *c)
{
    case_dir(c->ddir, sizeof c->ddir, "disk");
    c->fileno = 0;
    c->fd = -1;
    c->ofd = -1;
}

static void disk_end(struct ctx *c)
{
    if (c->fd >= 0)
        close(c->fd);
    if (c->ofd >= 0)
        close(c->ofd);
    c->fd = c->ofd = -1;
    rm_dir(c->ddir);
}

static void run_disk(struct ctx *c, struct result *r, step_fn step, double per_op)
{
    disk_begin(c);
    run_case(c, r, step, NULL, 0, per_op);
    disk_end(c);
}

/* The on-disk warm-up: a fresh store writes new segment files until its
 * first checkpoint after 1 GiB of emptied segments has made spares of them;
 * from then on it writes over its spares, as a node that has run a while
 * does. The warm-up runs until 1.5 GiB have been put (at most 60 s) and is
 * reported apart, as the fresh store's figure. */
#define WARM_ON_DISK ((uint64_t)3 << 29)
static double warm_ops, warm_secs;

/* The durable bandwidth case and the disk baselines it is judged against:
 * their repetitions alternate, so all see the same weather on a shared disk,
 * and each round gives one ratio. */
static void run_trio(struct ctx *c, struct result *rd, struct result *ro,
                     struct result *rs, double per_op)
{
    uint64_t ops;
    double el;
    int rc;
    disk_begin(c);
    if ((rc = disk_ow_open(c)))
        die("%s: %s", ro->label, tern_strerror(rc));
    store_open(c, "groupdisk", SDR_DURABLE, SDR_COMMIT_GROUP);
    warm_up(c, rd, step_disk, NULL, 0);
    warm_up(c, ro, step_disk_ow, finish_disk_ow, 0);
    if (tty)
        fprintf(stderr, "\rbench_sdr: %-34s warm-up\033[K", rs->label);
    c->max_ops = WARM_ON_DISK / BIG;
    rc = timed(c, step_big_blob_on_disk, finish_flush, 60, 0, &ops, &el);
    c->max_ops = 0;
    if (rc)
        die("%s (warm-up): %s", rs->label, tern_strerror(rc));
    warm_ops = (double)ops;
    warm_secs = el;
    for (int k = 0; k < opt_reps; k++) {
        run_rep(c, rd, k, step_disk, NULL, 0, per_op);
        run_rep(c, ro, k, step_disk_ow, finish_disk_ow, 0, per_op);
        run_rep(c, rs, k, step_big_blob_on_disk, finish_flush, 0, per_op);
    }
    summarize(rd);
    summarize(ro);
    summarize(rs);
    store_close(c);
    disk_end(c);
}

static void usage(void)
{
    fprintf(stderr,
            "usage: bench_sdr [--dir DIR] [--time SECONDS] [--reps N] [--heap-mb MB] "
            "[--keep] [--cases a,b] <prefix>\n"
            "  writes <prefix>.json; store files go to a fresh directory under DIR\n"
            "  (default <dir of prefix>/tmp), removed at exit unless --keep\n"
            "  --cases: run only cases whose metric name contains one of the words\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *prefix = NULL, *dir = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--dir") && i + 1 < argc)
            dir = argv[++i];
        else if (!strcmp(argv[i], "--time") && i + 1 < argc)
            opt_time = atof(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            opt_reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--heap-mb") && i + 1 < argc)
            opt_heap_mb = (unsigned)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--cases") && i + 1 < argc)
            opt_cases = argv[++i];
        else if (!strcmp(argv[i], "--keep"))
            opt_keep = 1;
        else if (argv[i][0] == '-' || prefix)
            usage();
        else
            prefix = argv[i];
    }
    if (!prefix || opt_time <= 0 || opt_reps < 1 || opt_reps > MAXREP || opt_heap_mb < 8)
        usage();
    tty = isatty(2);

    /* the store directory: same file system as the results by default */
    char base[2048];
    if (dir) {
        snprintf(base, sizeof base, "%s", dir);
    } else {
        const char *sl = strrchr(prefix, '/');
        if (sl)
            snprintf(base, sizeof base, "%.*s/tmp", (int)(sl - prefix), prefix);
        else
            snprintf(base, sizeof base, "tmp");
    }
    int made_base = mkdir(base, 0755) == 0;
    if (!made_base && errno != EEXIST)
        die("mkdir %s: %s", base, strerror(errno));
    snprintf(root_dir, sizeof root_dir, "%s/sdr-bench.XXXXXX", base);
    if (!mkdtemp(root_dir))
        die("mkdtemp %s: %s", root_dir, strerror(errno));

    struct ctx *c = calloc(1, sizeof *c);
    if (!c || !(c->buf = malloc(BIG)) || !(c->dst = malloc(BIG)))
        die("out of memory");
    for (size_t i = 0; i < BIG; i++)
        c->buf[i] = (uint8_t)(i * 131 + 7);
    memset(c->dst, 0, BIG);
    c->fd = -1;

    /* machine */
    char cpu[256], fsbuf[32], date[64];
    const char *fs;
    struct utsname un;
    struct statfs sf;
    cpu_model(cpu, sizeof cpu);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (uname(&un) < 0)
        memset(&un, 0, sizeof un);
    if (statfs(root_dir, &sf) == 0) {
        fs = fs_name((long)sf.f_type);
        if (!fs) {
            snprintf(fsbuf, sizeof fsbuf, "0x%lx", (unsigned long)sf.f_type);
            fs = fsbuf;
        }
    } else {
        fs = "unknown";
    }
    char load0[128], load1[128];
    loadavg(load0, sizeof load0);
    time_t t = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
    fprintf(stderr,
            "bench_sdr: %s, %ld cores, %s %s; store files in %s (%s); %d x %.1f s\n", cpu,
            cores, un.sysname, un.release, root_dir, fs, opt_reps, opt_time);

    double mb_per_big = BIG / MB;
    for (int i = 0; i < R_N; i++)
        summarize(&res[i]); /* NaN (JSON null) for cases not run */

    /* baselines */
    if (want(R_MEMCPY))
        run_case(c, &res[R_MEMCPY], step_memcpy, NULL, 63, mb_per_big);

    /* memory store */
    if (want(R_MEM_SMALL) || want(R_MEM_BIG)) {
        store_open(c, "mem", SDR_MEMORY, SDR_COMMIT_GROUP);
        if (want(R_MEM_SMALL))
            run_case(c, &res[R_MEM_SMALL], step_small, NULL, 255, 1);
        if (want(R_MEM_BIG))
            run_case(c, &res[R_MEM_BIG], step_big_write, NULL, 7, mb_per_big);
        store_close(c);
    }

    /* durable, group policy */
    if (want(R_GRP_SMALL)) {
        store_open(c, "group", SDR_DURABLE, SDR_COMMIT_GROUP);
        run_case(c, &res[R_GRP_SMALL], step_small, finish_flush, 255, 1);
        run_latency(c, opt_time);
        store_close(c);
    }

    /* the disk baseline alternates with the durable case judged against it */
    if (want(R_GRP_DISK) || want(R_DISK_OW))
        run_trio(c, &res[R_DISK], &res[R_DISK_OW], &res[R_GRP_DISK], mb_per_big);
    else if (want(R_DISK))
        run_disk(c, &res[R_DISK], step_disk, mb_per_big);
    if (want(R_GRP_CHURN)) {
        store_open(c, "groupchurn", SDR_DURABLE, SDR_COMMIT_GROUP);
        run_case(c, &res[R_GRP_CHURN], step_big_blob, finish_flush, 0, mb_per_big);
        store_close(c);
    }

    /* durable, sync policy */
    if (want(R_DISK_SMALL))
        run_disk(c, &res[R_DISK_SMALL], step_disk_small, 1);
    if (want(R_SYNC_SMALL) || want(R_SYNC_BIG)) {
        store_open(c, "sync", SDR_DURABLE, SDR_COMMIT_SYNC);
        if (want(R_SYNC_SMALL))
            run_case(c, &res[R_SYNC_SMALL], step_small, finish_flush, 0, 1);
        if (want(R_SYNC_BIG))
            run_case(c, &res[R_SYNC_BIG], step_big_blob, finish_flush, 0, mb_per_big);
        store_close(c);
    }

    if (tty)
        fputs("\r\033[K", stderr);
    if (!opt_keep) {
        rm_dir(root_dir);
        if (made_base)
            rmdir(base);
    }

    loadavg(load1, sizeof load1);

    /* targets */
    double t_mem = 2e6, t_grp = 3e5, frac = 0.8;
    /* rd: the disk's best for the store's pattern, which the on-disk case is
     * judged against; rf: syncing every MiB into new files */
    const struct result *rd = &res[R_DISK_OW], *rf = &res[R_DISK], *rg = &res[R_GRP_DISK];
    double t_big = frac * rd->median;
    int met_mem = res[R_MEM_SMALL].median >= t_mem;
    int met_grp = res[R_GRP_SMALL].median >= t_grp;
    int met_big = rg->median >= t_big;

    /* The on-disk case against the baselines beside it, round by round. */
    double ratio[MAXREP], ratio_med, ratio_min, ratio_max;
    double ratio_f[MAXREP], rf_med, rf_min, rf_max;
    double wmbps[MAXREP], wm_med, wm_min, wm_max;
    int npair = rg->n < rd->n ? rg->n : rd->n;
    int npair_f = rg->n < rf->n ? rg->n : rf->n;
    for (int k = 0; k < rg->n; k++) {
        if (k < npair)
            ratio[k] = rg->value[k] / rd->value[k];
        if (k < npair_f)
            ratio_f[k] = rg->value[k] / rf->value[k];
        wmbps[k] = (rg->wbytes[k] - rg->cbytes[k]) / MB / rg->secs[k];
    }
    spread(ratio, npair, &ratio_med, &ratio_min, &ratio_max);
    spread(ratio_f, npair_f, &rf_med, &rf_min, &rf_max);
    spread(wmbps, rg->n, &wm_med, &wm_min, &wm_max);

    /* Figures that cannot be true if the case measures what it says. */
    int above = 0;
    double lost = 0;
    for (int k = 0; k < rg->n; k++)
        lost += rg->unwritten[k];
    if (rg->n && rd->n) {
        char pairs[400] = "";
        size_t pl = 0;
        /* One slow baseline round is noise on a shared disk; a store round
         * above the disk's fastest round is not. */
        double dmax = 0;
        for (int k = 0; k < rd->n; k++)
            if (rd->value[k] > dmax)
                dmax = rd->value[k];
        for (int k = 0; k < rg->n; k++)
            if (rg->value[k] > 1.1 * dmax && pl < sizeof pairs - 40)
                pl += (size_t)snprintf(pairs + pl, sizeof pairs - pl,
                                       "%s round %d %.0f > 1.1 x %.0f", pl ? "," : "",
                                       k + 1, rg->value[k], dmax);
        above = rg->median > 1.1 * rd->median || pl;
        if (above)
            warn("durable-group 1 MiB on disk: %.1f MB/s (median) against %.1f MB/s "
                 "(median) for the disk's best case beside it (%s)%s%s. A store that "
                 "writes every blob it is given cannot outrun the disk by more than 10 "
                 "%%: either blobs were not written (written fraction %.3f and %.0f blob "
                 "bytes never written say whether every blob reached the disk), or the "
                 "baseline does not show what this disk can do (a noisy neighbour "
                 "during its repetition: compare the other rounds; or the store "
                 "writes in a way the baseline does not). Do not quote this figure as "
                 "durable bandwidth until the cause is known.",
                 rg->median, rd->median, rd->label + 10,
                 pl ? "; rounds above the disk's fastest round:" : "", pairs, rg->fmed, lost);
        if (lost > 0)
            warn("durable-group 1 MiB on disk: %.0f blob bytes were freed before they "
                 "were written (sdr_usage.blob_unwritten), though every free waited for "
                 "its blob's flush: the case does not measure the disk",
                 lost);
        if (isfinite(rg->fmin) && (rg->fmin < 0.95 || rg->fmax > 1.5))
            warn("durable-group 1 MiB on disk: the process wrote %.3f..%.3f of the blob "
                 "bytes it put (/proc/self/io); about 1 (plus log records) was expected",
                 rg->fmin, rg->fmax);
    }
    for (int i = R_DISK; i <= R_DISK_OW; i++) {
        const struct result *r = &res[i];
        if (r->n && !isfinite(r->fmed))
            warn("/proc/self/io gives no write_bytes on this kernel: the bytes each case "
                 "wrote are unknown");
        else if (r->n && (r->fmin < 0.9 || r->fmax > 1.1))
            warn("%s wrote %.3f..%.3f of its bytes by /proc/self/io, not 1: the written "
                 "fractions of this run are not to be trusted",
                 r->label, r->fmin, r->fmax);
    }

    /* table */
    printf("SDR benchmark: %s, %ld cores, %s %s, store on %s, heap %u MiB\n", cpu, cores,
           un.sysname, un.release, fs, opt_heap_mb);
    printf(
        "%d repetitions of %.1f s per case; MB = 1e6 bytes; written: bytes the process "
        "wrote (/proc/self/io) / payload bytes\n\n",
        opt_reps, opt_time);
    printf("%-36s %12s %12s %12s  %-8s  %s\n", "case", "median", "min", "max", "unit",
           "written (min..max)");
    for (int i = 0; i < R_N; i++) {
        struct result *r = &res[i];
        char a[32], b[32], m[32], w[64];
        snprintf(m, sizeof m, isfinite(r->median) ? "%.1f" : "-", r->median);
        snprintf(a, sizeof a, isfinite(r->min) ? "%.1f" : "-", r->min);
        snprintf(b, sizeof b, isfinite(r->max) ? "%.1f" : "-", r->max);
        if (isfinite(r->fmed))
            snprintf(w, sizeof w, "%.3f (%.3f..%.3f)", r->fmed, r->fmin, r->fmax);
        else
            snprintf(w, sizeof w, "-");
        printf("%-36s %12s %12s %12s  %-8s  %s\n", r->label, m, a, b, r->unit, w);
    }
    printf("\ndurable-group commit latency (txn_end .. flush), %d samples: p50 %.1f us, "
           "p90 %.1f us, p99 %.1f us, max %.1f us\n",
           nlat, pct(50), pct(90), pct(99), pct(100));
    if (rg->n) {
        printf("durable-group 1 MiB on disk, %.0f MiB warm-up first (fresh store): %.1f "
               "MB/s\n",
               warm_ops, warm_ops * BIG / MB / warm_secs);
        printf(
            "durable-group 1 MiB on disk / disk overwrite beside it, per round: median "
            "%.2f (min %.2f, max %.2f); / disk 1 MiB + fdatasync: median %.2f (min "
            "%.2f, max %.2f)\n",
            ratio_med, ratio_min, ratio_max, rf_med, rf_min, rf_max);
        printf("durable-group 1 MiB on disk, bytes written: %.1f MB/s (min %.1f, max "
               "%.1f), %.3f of the bytes put (min %.3f, max %.3f); blob bytes never "
               "written: %.0f\n",
               wm_med, wm_min, wm_max, rg->fmed, rg->fmin, rg->fmax, lost);
    }
    fflush(stdout);
    printf("\ntargets:\n");
    printf("  memory small txn/s        >= %.0f: %.0f  %s\n", t_mem,
           res[R_MEM_SMALL].median, met_mem ? "met" : "MISSED");
    printf("  durable-group small txn/s >= %.0f: %.0f  %s\n", t_grp,
           res[R_GRP_SMALL].median, met_grp ? "met" : "MISSED");
    printf("  durable-group 1 MiB on disk MB/s >= 80%% of disk overwrite (%.1f): %.1f "
           "(%.0f%%; min %.1f, max %.1f; disk %.1f..%.1f)  %s\n",
           t_big, rg->median, 100.0 * rg->median / rd->median, rg->min, rg->max, rd->min,
           rd->max, met_big ? "met" : "MISSED");
    for (int i = 0; i < nwarn; i++) {
        printf("\n**************** WARNING ****************\n%s\n", warns[i]);
        fprintf(stderr, "bench_sdr: WARNING: %s\n", warns[i]);
    }

    /* JSON */
    char path[PATH_MAX + 8];
    snprintf(path, sizeof path, "%s.json", prefix);
    FILE *f = fopen(path, "w");
    if (!f)
        die("%s: %s", path, strerror(errno));
    fprintf(f,
            "{\n  \"benchmark\": \"sdr\",\n  \"units\": {\"txn_per_s\": \"transactions "
            "per second\", \"mb_per_s\": \"MB per second, MB = 1e6 bytes\", "
            "\"latency\": \"microseconds\", \"written_fraction\": \"bytes the process "
            "wrote by /proc/self/io (write_bytes - cancelled_write_bytes) / payload "
            "bytes\"},\n");
    fprintf(f, "  \"warnings\": [");
    for (int i = 0; i < nwarn; i++) {
        fprintf(f, "%s\n    ", i ? "," : "");
        jstr(f, warns[i]);
    }
    fprintf(f, "%s],\n", nwarn ? "\n  " : "");
    fprintf(f, "  \"metrics\": {\n");
    for (int i = 0; i < R_N; i++) {
        fprintf(f, "    ");
        jstr(f, res[i].key);
        fprintf(f, ": ");
        jnum(f, res[i].median);
        fprintf(f, ",\n");
    }
    fprintf(f, "    \"durable_group_1mib_on_disk_written_fraction\": ");
    jnum(f, rg->fmed);
    fprintf(f, ",\n    \"durable_group_1mib_on_disk_vs_disk_overwrite\": ");
    jnum(f, ratio_med);
    fprintf(f, ",\n    \"durable_group_1mib_churn_written_fraction\": ");
    jnum(f, res[R_GRP_CHURN].fmed);
    fprintf(f, ",\n    \"durable_sync_1mib_written_fraction\": ");
    jnum(f, res[R_SYNC_BIG].fmed);
    fprintf(f, ",\n    \"durable_group_commit_latency_p50_us\": ");
    jnum(f, pct(50));
    fprintf(f, ",\n    \"durable_group_commit_latency_p99_us\": ");
    jnum(f, pct(99));
    fprintf(f, "\n  },\n");
    fprintf(f, "  \"baselines\": {\"disk_overwrite_mb_per_s\": ");
    jnum(f, rd->median);
    fprintf(f, ", \"disk_fdatasync_mb_per_s\": ");
    jnum(f, rf->median);
    fprintf(f, ", \"disk_fdatasync_small_per_s\": ");
    jnum(f, res[R_DISK_SMALL].median);
    fprintf(f, ", \"memcpy_mb_per_s\": ");
    jnum(f, res[R_MEMCPY].median);
    fprintf(f, "},\n");
    fprintf(f, "  \"targets\": {\n");
    fprintf(
        f,
        "    \"memory_small_txn_per_s\": {\"op\": \">=\", \"target\": %.0f, \"value\": ",
        t_mem);
    jnum(f, res[R_MEM_SMALL].median);
    fprintf(f, ", \"met\": %s},\n", met_mem ? "true" : "false");
    fprintf(f,
            "    \"durable_group_small_txn_per_s\": {\"op\": \">=\", \"target\": %.0f, "
            "\"value\": ",
            t_grp);
    jnum(f, res[R_GRP_SMALL].median);
    fprintf(f, ", \"met\": %s},\n", met_grp ? "true" : "false");
    fprintf(f,
            "    \"durable_group_1mib_on_disk_mb_per_s\": {\"op\": \">=\", \"fraction\": "
            "%.2f, \"of\": \"disk_overwrite_mb_per_s\", \"target\": ",
            frac);
    jnum(f, t_big);
    fprintf(f, ", \"value\": ");
    jnum(f, rg->median);
    fprintf(f, ", \"min\": ");
    jnum(f, rg->min);
    fprintf(f, ", \"max\": ");
    jnum(f, rg->max);
    fprintf(f, ", \"met\": %s}\n  },\n", met_big ? "true" : "false");
    /* what a reader needs to tell noise from regression, in one place */
    fprintf(f,
            "  \"durable_vs_disk\": {\"case\": \"durable_group_1mib_on_disk_mb_per_s\", "
            "\"baseline\": \"disk_overwrite_mb_per_s\", \"reps_alternate\": true,\n");
    jspread(f, "durable_mb_per_s", rg->value, rg->n);
    jspread(f, "disk_overwrite_mb_per_s", rd->value, rd->n);
    jspread(f, "disk_fdatasync_mb_per_s", rf->value, rf->n);
    jspread(f, "ratio_to_disk_overwrite", ratio, npair);
    jspread(f, "ratio_to_disk_fdatasync", ratio_f, npair_f);
    jspread(f, "written_mb_per_s", wmbps, rg->n);
    jspread(f, "written_fraction", rg->frac, rg->n);
    fprintf(f, "    \"blob_bytes_never_written\": ");
    jnum(f, lost);
    fprintf(f, ",\n    \"warm_up\": {\"blobs\": ");
    jnum(f, warm_ops);
    fprintf(f, ", \"seconds\": ");
    jnum(f, warm_secs);
    fprintf(f, ", \"mb_per_s\": ");
    jnum(f, rg->n ? warm_ops * BIG / MB / warm_secs : NAN);
    fprintf(f, "},\n    \"above_1_1x_disk\": %s},\n", above ? "true" : "false");
    fprintf(f, "  \"machine\": {\"cpu\": ");
    jstr(f, cpu);
    fprintf(f, ", \"cores\": %ld, \"kernel\": ", cores);
    char kern[600];
    snprintf(kern, sizeof kern, "%s %s %s", un.sysname, un.release, un.machine);
    jstr(f, kern);
    fprintf(f, ", \"kernel_version\": ");
    jstr(f, un.version);
    fprintf(f, ", \"store_fs\": ");
    jstr(f, fs);
    fprintf(f, ", \"store_dir\": ");
    jstr(f, root_dir);
    fprintf(f, ", \"date\": ");
    jstr(f, date);
    fprintf(f, ", \"loadavg_start\": ");
    jstr(f, load0);
    fprintf(f, ", \"loadavg_end\": ");
    jstr(f, load1);
    fprintf(f, "},\n");
    fprintf(
        f,
        "  \"config\": {\"seconds_per_rep\": %.3f, \"reps\": %d, \"heap_bytes\": %llu, "
        "\"small_write_bytes\": %d, \"small_objects\": %d, \"big_bytes\": %u, "
        "\"blobs_kept\": %d, \"disk_file_bytes\": %u, \"durable_reps_end_with_flush\": "
        "true, \"on_disk_frees_wait_for_their_flush\": true, \"churn_frees_wait\": "
        "false},\n",
        opt_time, opt_reps, (unsigned long long)opt_heap_mb << 20, SMALL_LEN, SMALL_OBJS,
        BIG, KEEP_BLOBS, DISK_FILE);
    fprintf(f, "  \"cases\": {\n");
    for (int i = 0; i < R_N; i++) {
        struct result *r = &res[i];
        fprintf(f, "    ");
        jstr(f, r->key);
        fprintf(f, ": {\"label\": ");
        jstr(f, r->label);
        fprintf(f, ", \"unit\": ");
        jstr(f, r->unit);
        fprintf(f, ", \"median\": ");
        jnum(f, r->median);
        fprintf(f, ", \"min\": ");
        jnum(f, r->min);
        fprintf(f, ", \"max\": ");
        jnum(f, r->max);
        fprintf(f, ",\n      \"samples\": ");
        jarr(f, r->value, r->n);
        fprintf(f, ",\n      \"ops\": ");
        jarr(f, r->ops, r->n);
        fprintf(f, ",\n      \"seconds\": ");
        jarr(f, r->secs, r->n);
        fprintf(f, ",\n      \"write_bytes\": ");
        jarr(f, r->wbytes, r->n);
        fprintf(f, ",\n      \"cancelled_write_bytes\": ");
        jarr(f, r->cbytes, r->n);
        if (r->payload > 0) {
            fprintf(f,
                    ",\n      \"payload_bytes_per_op\": %.0f, \"written_fraction\": "
                    "{\"median\": ",
                    r->payload);
            jnum(f, r->fmed);
            fprintf(f, ", \"min\": ");
            jnum(f, r->fmin);
            fprintf(f, ", \"max\": ");
            jnum(f, r->fmax);
            fprintf(f, ", \"samples\": ");
            jarr(f, r->frac, r->n);
            fprintf(f, "}");
        }
        if (r->blob) {
            fprintf(f, ",\n      \"blob_unwritten_bytes\": ");
            jarr(f, r->unwritten, r->n);
            double bw[MAXREP]; /* by the store's own count */
            for (int k = 0; k < r->n; k++)
                bw[k] = 1 - r->unwritten[k] / (r->ops[k] * r->payload);
            fprintf(f, ",\n      \"blob_bytes_written_fraction\": ");
            jarr(f, bw, r->n);
        }
        if (i == R_GRP_DISK) {
            fprintf(f, ",\n      \"frees_that_waited_for_a_flush\": ");
            jarr(f, r->waits, r->n);
            fprintf(f, ",\n      \"seconds_waiting_for_a_flush\": ");
            jarr(f, r->wait_s, r->n);
        }
        fprintf(f, "}%s\n", i + 1 < R_N ? "," : "");
    }
    fprintf(f, "  },\n");
    fprintf(
        f,
        "  \"latency\": {\"case\": \"durable-group: sdr_txn_end of one 64 B txn until "
        "sdr_flush returns\", \"samples\": %d, \"p50_us\": ",
        nlat);
    jnum(f, pct(50));
    fprintf(f, ", \"p90_us\": ");
    jnum(f, pct(90));
    fprintf(f, ", \"p99_us\": ");
    jnum(f, pct(99));
    fprintf(f, ", \"max_us\": ");
    jnum(f, pct(100));
    int slow = 0;
    for (int i = 0; i < nlat; i++)
        slow += lat[i] > 10000;
    fprintf(f, ", \"over_10ms\": %d, \"min_us\": ", slow);
    jnum(f, nlat ? lat[0] : NAN);
    fprintf(f, "}\n}\n");
    if (fclose(f) != 0)
        die("%s: write failed", path);
    printf("\nwrote %s\n", path);
    free(c->buf);
    free(c->dst);
    free(c);
    return 0;
}
