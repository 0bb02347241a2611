/* bench_sdr: throughput of the SDR store (libternsdr).
 *
 *   bench_sdr [--dir D] [--time S] [--reps N] [--heap-mb M] [--keep] <prefix>
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
 *     bounded). Unit: MB/s, MB = 1e6 bytes.
 *   - baselines: 1 MiB pwrite + fdatasync appended to fresh 64 MiB files in
 *     the store's directory (rotated like blob segments), and a 1 MiB memcpy.
 *   - commit latency under the group policy: sdr_txn_end of one small
 *     transaction until sdr_flush returns.
 * Durable cases end every repetition with sdr_flush inside the timed window,
 * so only durable commits are counted.
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
    char err[200];
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

static void summarize(struct result *r)
{
    r->median = median_of(r->value, r->n);
    r->min = r->max = r->n ? r->value[0] : NAN;
    for (int i = 1; i < r->n; i++) {
        if (r->value[i] < r->min)
            r->min = r->value[i];
        if (r->value[i] > r->max)
            r->max = r->value[i];
    }
    if (!r->n) {
        r->min = r->max = NAN;
    }
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
    uint64_t i;
    uint8_t *buf; /* BIG bytes */
    uint8_t *dst;
    /* disk baseline */
    int fd, fileno;
    uint64_t fpos;
    char dir[2200];
};

typedef int (*step_fn)(struct ctx *);

/* Runs step until secs have passed (the clock is read every mask+1 steps),
 * then finish; *ops and *el get the count and elapsed time. */
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
        if ((n & mask) == 0 && now() >= end)
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
        snprintf(path, sizeof path, "%s/disk.%d", c->dir, c->fileno - 1);
        unlink(path);
    }
    c->fileno++;
    snprintf(path, sizeof path, "%s/disk.%d", c->dir, c->fileno);
    c->fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (c->fd < 0)
        return -errno;
    c->fpos = 0;
    return 0;
}

static int step_disk(struct ctx *c)
{
    int rc;
    if ((c->fd < 0 || c->fpos + BIG > DISK_FILE) && (rc = disk_open_next(c)))
        return rc;
    size_t done = 0;
    while (done < BIG) {
        ssize_t w = pwrite(c->fd, c->buf + done, BIG - done, (off_t)(c->fpos + done));
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -errno;
        done += (size_t)w;
    }
    c->fpos += BIG;
    while (fdatasync(c->fd) < 0)
        if (errno != EINTR)
            return -errno;
    return 0;
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

static void case_dir(struct ctx *c, const char *name)
{
    snprintf(c->dir, sizeof c->dir, "%s/%s", root_dir, name);
    if (mkdir(c->dir, 0755) < 0 && errno != EEXIST)
        die("mkdir %s: %s", c->dir, strerror(errno));
}

static void store_open(struct ctx *c, const char *name, int mode, int commit)
{
    char why[512];
    sdr_profile p;
    memset(&p, 0, sizeof p);
    case_dir(c, name);
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

/* Runs one case: a short warm-up, then opt_reps timed repetitions. per_op is
 * the unit count of one step (1 transaction, or 1 MiB in MB). */
static void run_case(struct ctx *c, struct result *r, step_fn step, step_fn finish,
                     unsigned mask, double per_op)
{
    uint64_t ops;
    double el;
    int rc =
        timed(c, step, finish, opt_time / 4 < 0.5 ? opt_time / 4 : 0.5, mask, &ops, &el);
    if (rc)
        die("%s (warm-up): %s", r->label, tern_strerror(rc));
    for (int k = 0; k < opt_reps; k++) {
        progress(r, k, 0);
        if ((rc = timed(c, step, finish, opt_time, mask, &ops, &el)))
            die("%s: %s", r->label, tern_strerror(rc));
        r->ops[k] = (double)ops;
        r->secs[k] = el;
        r->value[k] = (double)ops * per_op / el;
        r->n = k + 1;
        progress(r, k, 1);
    }
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

/* ------------------------------------------------------------ main */

enum {
    R_MEMCPY,
    R_DISK,
    R_DISK_SMALL,
    R_MEM_SMALL,
    R_MEM_BIG,
    R_GRP_SMALL,
    R_GRP_BIG,
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
                .unit = "MB/s"},
    [R_DISK_SMALL] = {.key = "disk_fdatasync_small_per_s",
                      .label = "baseline: disk 104 B + fdatasync",
                      .unit = "writes/s"},
    [R_MEM_SMALL] = {.key = "memory_small_txn_per_s",
                     .label = "memory, 64 B txn",
                     .unit = "txn/s"},
    [R_MEM_BIG] = {.key = "memory_1mib_mb_per_s",
                   .label = "memory, 1 MiB sdr_write txn",
                   .unit = "MB/s"},
    [R_GRP_SMALL] = {.key = "durable_group_small_txn_per_s",
                     .label = "durable-group, 64 B txn",
                     .unit = "txn/s"},
    [R_GRP_BIG] = {.key = "durable_group_1mib_mb_per_s",
                   .label = "durable-group, 1 MiB blob txn",
                   .unit = "MB/s"},
    [R_SYNC_SMALL] = {.key = "durable_sync_small_txn_per_s",
                      .label = "durable-sync, 64 B txn",
                      .unit = "txn/s"},
    [R_SYNC_BIG] = {.key = "durable_sync_1mib_mb_per_s",
                    .label = "durable-sync, 1 MiB blob txn",
                    .unit = "MB/s"},
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

static void run_disk(struct ctx *c, struct result *r, step_fn step, double per_op)
{
    case_dir(c, "disk");
    c->fileno = 0;
    c->fd = -1;
    run_case(c, r, step, NULL, 0, per_op);
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    rm_dir(c->dir);
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

    /* each disk baseline right before the durable case it is compared to */
    if (want(R_DISK))
        run_disk(c, &res[R_DISK], step_disk, mb_per_big);
    if (want(R_GRP_BIG)) {
        store_open(c, "groupbig", SDR_DURABLE, SDR_COMMIT_GROUP);
        run_case(c, &res[R_GRP_BIG], step_big_blob, finish_flush, 0, mb_per_big);
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

    /* targets */
    double t_mem = 2e6, t_grp = 3e5, frac = 0.8;
    double t_big = frac * res[R_DISK].median;
    int met_mem = res[R_MEM_SMALL].median >= t_mem;
    int met_grp = res[R_GRP_SMALL].median >= t_grp;
    int met_big = res[R_GRP_BIG].median >= t_big;

    /* table */
    printf("SDR benchmark: %s, %ld cores, %s %s, store on %s, heap %u MiB\n", cpu, cores,
           un.sysname, un.release, fs, opt_heap_mb);
    printf("%d repetitions of %.1f s per case; MB = 1e6 bytes\n\n", opt_reps, opt_time);
    printf("%-34s %14s %14s %14s  %s\n", "case", "median", "min", "max", "unit");
    for (int i = 0; i < R_N; i++) {
        struct result *r = &res[i];
        char a[32], b[32], m[32];
        snprintf(m, sizeof m, isfinite(r->median) ? "%.1f" : "-", r->median);
        snprintf(a, sizeof a, isfinite(r->min) ? "%.1f" : "-", r->min);
        snprintf(b, sizeof b, isfinite(r->max) ? "%.1f" : "-", r->max);
        printf("%-34s %14s %14s %14s  %s\n", r->label, m, a, b, r->unit);
    }
    printf("\ndurable-group commit latency (txn_end .. flush), %d samples: p50 %.1f us, "
           "p90 %.1f us, p99 %.1f us, max %.1f us\n",
           nlat, pct(50), pct(90), pct(99), pct(100));
    fflush(stdout);
    printf("\ntargets:\n");
    printf("  memory small txn/s        >= %.0f: %.0f  %s\n", t_mem,
           res[R_MEM_SMALL].median, met_mem ? "met" : "MISSED");
    printf("  durable-group small txn/s >= %.0f: %.0f  %s\n", t_grp,
           res[R_GRP_SMALL].median, met_grp ? "met" : "MISSED");
    printf("  durable-group 1 MiB MB/s  >= 80%% of disk fdatasync (%.1f): %.1f (%.0f%%)  "
           "%s\n",
           t_big, res[R_GRP_BIG].median,
           100.0 * res[R_GRP_BIG].median / res[R_DISK].median,
           met_big ? "met" : "MISSED");

    /* JSON */
    char path[PATH_MAX + 8];
    snprintf(path, sizeof path, "%s.json", prefix);
    FILE *f = fopen(path, "w");
    if (!f)
        die("%s: %s", path, strerror(errno));
    fprintf(f,
            "{\n  \"benchmark\": \"sdr\",\n  \"units\": {\"txn_per_s\": \"transactions "
            "per second\", \"mb_per_s\": \"MB per second, MB = 1e6 bytes\", "
            "\"latency\": \"microseconds\"},\n");
    fprintf(f, "  \"metrics\": {\n");
    for (int i = 0; i < R_N; i++) {
        fprintf(f, "    ");
        jstr(f, res[i].key);
        fprintf(f, ": ");
        jnum(f, res[i].median);
        fprintf(f, ",\n");
    }
    fprintf(f, "    \"durable_group_commit_latency_p50_us\": ");
    jnum(f, pct(50));
    fprintf(f, ",\n    \"durable_group_commit_latency_p99_us\": ");
    jnum(f, pct(99));
    fprintf(f, "\n  },\n");
    fprintf(f, "  \"baselines\": {\"disk_fdatasync_mb_per_s\": ");
    jnum(f, res[R_DISK].median);
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
            "    \"durable_group_1mib_mb_per_s\": {\"op\": \">=\", \"fraction\": %.2f, "
            "\"of\": \"disk_fdatasync_mb_per_s\", \"target\": ",
            frac);
    jnum(f, t_big);
    fprintf(f, ", \"value\": ");
    jnum(f, res[R_GRP_BIG].median);
    fprintf(f, ", \"met\": %s}\n  },\n", met_big ? "true" : "false");
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
    fprintf(f, "},\n");
    fprintf(
        f,
        "  \"config\": {\"seconds_per_rep\": %.3f, \"reps\": %d, \"heap_bytes\": %llu, "
        "\"small_write_bytes\": %d, \"small_objects\": %d, \"big_bytes\": %u, "
        "\"blobs_kept\": %d, \"disk_file_bytes\": %u, \"durable_reps_end_with_flush\": "
        "true},\n",
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
