/* bpcp: ION's remote copy command over the node's cfdpd (docs/bpcp.md).
 *
 *   bpcp [-dqr | -v] [-L lifetime] [-C custody] [-S class] [host1:]file1 ...
 * [host2:]file2
 *
 * A host is a CFDP entity number (the node number). Local to remote is a
 * CFDP class 2 put per file (-r: the remote directories are made first, a
 * createDirectory filestore request each); remote to local (or remote to
 * remote) needs a proxy put, asked of cfdpd with its "get" command. -S sets
 * the bundles' priority. Exit 0 only when every file was delivered and its
 * checksum verified by the receiver, else 1. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cfdptool.h"

#ifndef TERN_VERSION
#define TERN_VERSION "unknown"
#endif

#define BATCH 32 /* puts in flight before their outcomes are collected */

struct opts {
    int debug, quiet, recursive;
    int unack; /* -u: class 1 with closure (an ION 4.1.3 peer takes no class 2) */
    uint32_t lifetime;
    int priority; /* enum cfdp_ctl_priority */
    const char *node;
};

/* One file to send: its local path, its name in cfdpd's filestore (a
 * staged copy when it lies outside the root) and the name at the peer. */
struct job {
    char local[PATH_MAX];
    struct ct_staged st;
    char remote[PATH_MAX];
    cfdp_txn_id id;
    int started;
};

/* A remote directory -r makes, at its depth below the copy's top. */
struct rdir {
    char path[CFDP_FS_PATH_MAX + 1];
    int depth;
    cfdp_txn_id id;
    int started;
};

struct run {
    struct opts o;
    cfdp_ctl *c;
    cfdp_ctl *w; /* watches, one transaction after the other */
    char root[PATH_MAX];
    uint64_t dst;
    struct job *jobs;
    size_t njobs, capjobs;
    struct rdir *dirs;
    size_t ndirs, capdirs;
    unsigned ok, failed;
    unsigned staged; /* names the staged copies apart */
    unsigned dirs_failed;
    uint64_t self; /* this entity */
    unsigned fetched;
};

static void usage(FILE *f)
{
    fputs("usage: bpcp [-dqru | -v] [-L lifetime] [-C custody] [-S class] [-n node dir]\n"
          "            [host1:]file1 ... [host2:]file2\n"
          "  -d            debug output (repeat for more)\n"
          "  -q            quiet: no status messages\n"
          "  -r            recursive: copy directories (a put per file)\n"
          "  -u            unacknowledged: CFDP class 1 with closure (Tern; for ION\n"
          "                peers, which take no class 2)\n"
          "  -v            version\n"
          "  -L seconds    bundle lifetime (default 86400)\n"
          "  -C on|off     BP custody (accepted; Tern has none: CFDP class 2 "
          "acknowledges)\n"
          "  -S 0|1|2      BP class of service: bulk, standard (default), expedited\n"
          "  -n dir        node directory (Tern; default $TERN_NODE_DIR, else .)\n"
          "A host is a CFDP entity number. Files go through the node's cfdpd\n"
          "(start it with bpcpd); see docs/bpcp.md.\n",
          f);
}

/* "[host:]path": the host (0 if local) and where the path starts. */
static uint64_t split_host(const char *arg, const char **path)
{
    const char *colon = strchr(arg, ':');
    *path = arg;
    if (!colon || colon == arg)
        return 0;
    for (const char *p = arg; p < colon; p++)
        if (*p < '0' || *p > '9')
            return 0; /* "a:b" is a local file name */
    char *end;
    errno = 0;
    unsigned long long h = strtoull(arg, &end, 10);
    if (errno || end != colon || !h)
        return 0;
    *path = colon + 1;
    return h;
}

static int join(char *out, size_t cap, const char *dir, const char *name)
{
    int n = *dir ? snprintf(out, cap, "%s%s%s", dir,
                            dir[strlen(dir) - 1] == '/' ? "" : "/", name)
                 : snprintf(out, cap, "%s", name);
    return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

/* Room for one more of n elements of size sz in *v (capacity *cap). */
static int grow(void **v, size_t *cap, size_t n, size_t sz)
{
    if (n < *cap)
        return 0;
    size_t nc = *cap ? *cap * 2 : 16;
    void *p = realloc(*v, nc * sz);
    if (!p)
        return -ENOMEM;
    *v = p;
    *cap = nc;
    return 0;
}

static int add_job(struct run *r, const char *local, const char *remote)
{
    if (grow((void **)&r->jobs, &r->capjobs, r->njobs, sizeof *r->jobs))
        return -ENOMEM;
    struct job *j = &r->jobs[r->njobs];
    memset(j, 0, sizeof *j);
    if (snprintf(j->local, sizeof j->local, "%s", local) >= (int)sizeof j->local ||
        snprintf(j->remote, sizeof j->remote, "%s", remote) >= (int)sizeof j->remote)
        return -ENAMETOOLONG;
    r->njobs++;
    return 0;
}

static int add_dir(struct run *r, const char *remote, int depth)
{
    if (strlen(remote) > CFDP_FS_PATH_MAX)
        return -ENAMETOOLONG;
    if (grow((void **)&r->dirs, &r->capdirs, r->ndirs, sizeof *r->dirs))
        return -ENOMEM;
    struct rdir *d = &r->dirs[r->ndirs++];
    memset(d, 0, sizeof *d);
    snprintf(d->path, sizeof d->path, "%s", remote);
    d->depth = depth;
    return 0;
}

/* Every regular file under dir, to remote/<its path below dir>, and every
 * directory (remote itself too) to be made there first. Symbolic links are
 * skipped, as ION's bpcp does for local to remote copies. */
static int walk(struct run *r, const char *dir, const char *remote, int depth)
{
    int arc = add_dir(r, remote, depth);
    if (arc)
        return arc;
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "bpcp: %s: %s\n", dir, strerror(errno));
        r->failed++;
        return 0;
    }
    struct dirent *de;
    int rc = 0;
    while (!rc && (de = readdir(d)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        char lp[PATH_MAX], rp[PATH_MAX];
        struct stat st;
        if ((rc = join(lp, sizeof lp, dir, de->d_name)) ||
            (rc = join(rp, sizeof rp, remote, de->d_name)))
            break;
        if (lstat(lp, &st))
            continue;
        if (S_ISDIR(st.st_mode))
            rc = walk(r, lp, rp, depth + 1);
        else if (S_ISREG(st.st_mode))
            rc = add_job(r, lp, rp);
        else if (r->o.debug)
            fprintf(stderr, "bpcp: %s: not a regular file, skipped\n", lp);
    }
    closedir(d);
    return rc;
}

/* Gives j its name in cfdpd's filestore (cfdptool.c), staged in
 * <root>/.outbox if it lies outside; the tag keeps this run's copies of
 * files of the same name apart. */
static int stage(struct run *r, struct job *j)
{
    char tag[32];
    snprintf(tag, sizeof tag, "bpcp%u-", r->staged++);
    return ct_stage(r->root, j->local, tag, &j->st);
}

static const char *hint(unsigned cond)
{
    switch (cond) {
    case CFDP_COND_ACK_LIMIT:
    case CFDP_COND_INACTIVITY:
    case CFDP_COND_NAK_LIMIT:
    case CFDP_COND_KEEP_ALIVE_LIMIT:
        return ": no answer from the receiver (is a CFDP entity running there, "
               "and is it reachable?)";
    case CFDP_COND_FILESTORE_REJECTION:
        return ": the receiver's filestore refused the file (does its directory "
               "exist there?)";
    default:
        return "";
    }
}

/* Waits for the end of transaction id, watched on r->w: 0 and *ev, or a
 * negative code. */
static int wait_end(struct run *r, cfdp_txn_id id, cfdp_ctl_event *ev)
{
    int rc = cfdp_ctl_watch(r->w, id);
    memset(ev, 0, sizeof *ev);
    while (!rc) {
        rc = cfdp_ctl_next_event(r->w, ev, -1);
        if (rc || ev->txn.src != id.src || ev->txn.seq != id.seq)
            continue;
        if (ev->type == CFDP_CTL_EV_PROGRESS && r->o.debug)
            fprintf(stderr,
                    "bpcp: %" PRIu64 ".%" PRIu64 ": %" PRIu64 " of %" PRIu64
                    " bytes sent, %s\n",
                    ev->txn.src, ev->txn.seq, ev->progress, ev->file_size,
                    cfdp_ctl_state_name(ev->state));
        /* the end: Finished; or abandoned (a limit hit while cancelling),
         * which cfdpd tells as its own event or only as the state */
        if (ev->type == CFDP_IND_FINISHED || ev->type == CFDP_IND_ABANDONED ||
            (ev->type == CFDP_CTL_EV_PROGRESS && ev->state == CFDP_STATE_FINISHED))
            break;
    }
    return rc;
}

/* Waits for j's outcome and reports it. */
static void collect(struct run *r, struct job *j)
{
    double t0 = ct_now();
    cfdp_ctl_event ev;
    int rc = wait_end(r, j->id, &ev);
    ct_unstage(&j->st);
    if (rc) {
        fprintf(stderr, "bpcp: %s -> %" PRIu64 ":%s: %s\n", j->local, r->dst, j->remote,
                rc == -ECONNRESET          ? "cfdpd went away before the transfer ended"
                : cfdp_ctl_errmsg(r->w)[0] ? cfdp_ctl_errmsg(r->w)
                                           : tern_strerror(rc));
        r->failed++;
        return;
    }
    /* class 2, or class 1 with closure (-u): a Finished saying complete means
     * the receiver checked the checksum */
    int finished = ev.type == CFDP_IND_FINISHED;
    if (finished && ev.condition == CFDP_COND_NO_ERROR &&
        ev.delivery == CFDP_DATA_COMPLETE) {
        r->ok++;
        if (!r->o.quiet) {
            char b[32];
            printf("%s -> %" PRIu64 ":%s: %s, checksum verified (transaction %" PRIu64
                   ".%" PRIu64 ")\n",
                   j->local, r->dst, j->remote, ct_bytes(b, sizeof b, (double)j->st.size),
                   j->id.src, j->id.seq);
        }
        if (r->o.debug)
            fprintf(stderr, "bpcp: %" PRIu64 ".%" PRIu64 " took %.3f s after its put\n",
                    j->id.src, j->id.seq, ct_now() - t0);
        return;
    }
    r->failed++;
    fprintf(stderr, "bpcp: %s -> %" PRIu64 ":%s failed: %s%s (condition %u), data %s%s\n",
            j->local, r->dst, j->remote, finished ? "" : "abandoned, ",
            cfdp_condition_name(ev.condition), ev.condition,
            finished && ev.delivery == CFDP_DATA_COMPLETE ? "complete" : "incomplete",
            hint(ev.condition));
}

static void start(struct run *r, struct job *j)
{
    int rc = stage(r, j);
    if (rc) {
        fprintf(stderr, "bpcp: %s: %s\n", j->local,
                rc == -EISDIR ? "not a regular file (a directory needs -r)"
                              : tern_strerror(rc));
        r->failed++;
        return;
    }
    cfdp_ctl_put_req pr = {.src_name = j->st.rel,
                           .dst = r->dst,
                           .dst_name = j->remote,
                           .cls = r->o.unack ? 1 : 2,
                           .closure = r->o.unack ? 1 : -1,
                           .checksum_type = -1,
                           .lifetime_s = r->o.lifetime,
                           .priority = r->o.priority};
    if ((rc = cfdp_ctl_put(r->c, &pr, &j->id))) {
        fprintf(stderr, "bpcp: %s -> %" PRIu64 ":%s: %s\n", j->local, r->dst, j->remote,
                cfdp_ctl_errmsg(r->c)[0] ? cfdp_ctl_errmsg(r->c) : tern_strerror(rc));
        ct_unstage(&j->st);
        r->failed++;
        return;
    }
    j->started = 1;
    if (r->o.debug)
        fprintf(stderr,
                "bpcp: put %s (as %s) -> %" PRIu64 ":%s: transaction %" PRIu64 ".%" PRIu64
                "\n",
                j->local, j->st.rel, r->dst, j->remote, j->id.src, j->id.seq);
}

/* -r: makes the remote directories before any file goes there, parents
 * before children: one metadata-only put per directory carrying a
 * createDirectory request (a put per directory, since a failed request
 * stops the ones after it in the same put, and a directory that is already
 * there fails: that is no error here). The directories of one depth go in
 * parallel, BATCH at a time. A directory that could not be made shows in
 * its files' puts (filestore rejection). */
static void make_dirs(struct run *r)
{
    int maxd = 0;
    for (size_t i = 0; i < r->ndirs; i++)
        if (r->dirs[i].depth > maxd)
            maxd = r->dirs[i].depth;
    for (int depth = 0; depth <= maxd; depth++) {
        size_t at = 0;
        while (at < r->ndirs) {
            size_t batch[BATCH], nb = 0;
            for (; at < r->ndirs && nb < BATCH; at++)
                if (r->dirs[at].depth == depth)
                    batch[nb++] = at;
            for (size_t k = 0; k < nb; k++) {
                struct rdir *d = &r->dirs[batch[k]];
                cfdp_ctl_fsreq fr = {.action = CFDP_FS_CREATE_DIR};
                snprintf(fr.first, sizeof fr.first, "%s", d->path);
                cfdp_ctl_put_req pr = {.dst = r->dst,
                                       .cls = r->o.unack ? 1 : 2,
                                       .closure = r->o.unack ? 1 : -1,
                                       .checksum_type = -1,
                                       .lifetime_s = r->o.lifetime,
                                       .priority = r->o.priority,
                                       .nfs = 1,
                                       .fs = &fr};
                int rc = cfdp_ctl_put(r->c, &pr, &d->id);
                if (rc) {
                    fprintf(stderr,
                            "bpcp: %" PRIu64 ":%s: cannot ask for the directory: %s\n",
                            r->dst, d->path,
                            cfdp_ctl_errmsg(r->c)[0] ? cfdp_ctl_errmsg(r->c)
                                                     : tern_strerror(rc));
                    r->dirs_failed++;
                    continue;
                }
                d->started = 1;
            }
            for (size_t k = 0; k < nb; k++) {
                struct rdir *d = &r->dirs[batch[k]];
                if (!d->started)
                    continue;
                cfdp_ctl_event ev;
                int rc = wait_end(r, d->id, &ev);
                int made = !rc && ev.type == CFDP_IND_FINISHED &&
                           ev.condition == CFDP_COND_NO_ERROR && ev.nfs == 1 &&
                           ev.fs_status[0] == CFDP_FS_SUCCESS;
                if (r->o.debug)
                    fprintf(stderr, "bpcp: mkdir %" PRIu64 ":%s: %s\n", r->dst, d->path,
                            rc     ? tern_strerror(rc)
                            : made ? "made"
                            : ev.condition != CFDP_COND_NO_ERROR
                                ? cfdp_condition_name(ev.condition)
                            : ev.nfs ? "not made (already there?)"
                                     : "no filestore response");
                if (rc || ev.type != CFDP_IND_FINISHED ||
                    ev.condition != CFDP_COND_NO_ERROR) {
                    /* the transaction itself failed: the peer is not answering */
                    fprintf(stderr,
                            "bpcp: %" PRIu64 ":%s: making the directory failed: %s\n",
                            r->dst, d->path,
                            rc ? tern_strerror(rc) : cfdp_condition_name(ev.condition));
                    r->dirs_failed++;
                }
            }
        }
    }
}

/* Remote to local, and remote to remote: a proxy put, asked of cfdpd
 * (cfdp_ctl_get_to); its answer event, the proxy put response, tells
 * whether the file arrived complete where it was sent. */
static int fetch(struct run *r, uint64_t from, const char *path, uint64_t to,
                 const char *dest)
{
    if (to == from) {
        fprintf(stderr,
                "bpcp: %" PRIu64 ":%s -> %" PRIu64 ":%s: a copy within one remote "
                "entity is not a CFDP transfer\n",
                from, path, to, dest);
        return 1;
    }
    size_t rl = strlen(r->root);
    if (to == r->self && dest[0] == '/') { /* a local path: in cfdpd's filestore */
        if (strncmp(dest, r->root, rl) || dest[rl] != '/') {
            fprintf(stderr, "bpcp: %s: a fetched file lands in cfdpd's filestore %s\n",
                    dest, r->root);
            return 1;
        }
        dest += rl + 1;
    }
    cfdp_txn_id id;
    cfdp_ctl_event ev;
    int rc = cfdp_ctl_get_to(r->c, from, to == r->self ? 0 : to, path, dest, 2,
                             r->o.priority, &id);
    if (!rc)
        rc = cfdp_ctl_watch(r->c, id);
    while (!rc) {
        rc = cfdp_ctl_next_event(r->c, &ev, -1);
        if (!rc && ev.type == CFDP_CTL_EV_ANSWER)
            break;
    }
    if (rc) {
        fprintf(stderr, "bpcp: %" PRIu64 ":%s: cfdpd cannot fetch it: %s\n", from, path,
                cfdp_ctl_errmsg(r->c)[0] ? cfdp_ctl_errmsg(r->c) : tern_strerror(rc));
        return 1;
    }
    if (!ev.ok) {
        fprintf(stderr, "bpcp: %" PRIu64 ":%s failed: %s (condition %u)\n", from, path,
                cfdp_condition_name(ev.condition), ev.condition);
        return 1;
    }
    if (!r->o.quiet && to == r->self)
        printf("%" PRIu64 ":%s -> %s: checksum verified (request %" PRIu64 ".%" PRIu64
               ")\n",
               from, path, dest, id.src, id.seq);
    else if (!r->o.quiet)
        printf("%" PRIu64 ":%s -> %" PRIu64 ":%s: delivered, checksum verified there "
               "(request %" PRIu64 ".%" PRIu64 ")\n",
               from, path, to, dest, id.src, id.seq);
    r->fetched++;
    return 0;
}

static int parse_custody(const char *s)
{
    static const char *const on[] = {"on", "yes", "1"}, *const off[] = {"off", "no", "0"};
    for (int i = 0; i < 3; i++) {
        if (!strcasecmp(s, on[i]))
            return 1;
        if (!strcasecmp(s, off[i]))
            return 0;
    }
    return -1;
}

int main(int argc, char **argv)
{
    struct run r = {.o = {.lifetime = 0}};
    int custody = 0, cos = 1, o;
    while ((o = getopt(argc, argv, "dqruvL:C:S:n:h")) != -1) {
        char *end;
        long v;
        switch (o) {
        case 'd':
            r.o.debug++;
            break;
        case 'q':
            r.o.quiet = 1;
            break;
        case 'r':
            r.o.recursive = 1;
            break;
        case 'u':
            r.o.unack = 1;
            break;
        case 'v':
            printf("bpcp (Tern %s): ION's bpcp command over cfdpd\n", TERN_VERSION);
            return 0;
        case 'L':
            errno = 0;
            v = strtol(optarg, &end, 10);
            if (errno || *end || end == optarg || v < 1 || v > (long)UINT32_MAX) {
                fprintf(stderr, "bpcp: -L wants a lifetime in seconds, not '%s'\n",
                        optarg);
                return 1;
            }
            r.o.lifetime = (uint32_t)v;
            break;
        case 'C':
            if ((custody = parse_custody(optarg)) < 0) {
                fprintf(stderr, "bpcp: -C wants ON/OFF, YES/NO or 1/0, not '%s'\n",
                        optarg);
                return 1;
            }
            break;
        case 'S':
            if (strlen(optarg) != 1 || optarg[0] < '0' || optarg[0] > '2') {
                fprintf(stderr,
                        "bpcp: -S wants 0 (bulk), 1 (standard) or 2 (expedited), not "
                        "'%s'\n",
                        optarg);
                return 1;
            }
            cos = optarg[0] - '0';
            r.o.priority = cfdp_ctl_priority_parse(optarg);
            break;
        case 'n':
            r.o.node = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 1;
        }
    }
    if (argc - optind < 2) {
        usage(stderr);
        return 1;
    }
    if (custody && !r.o.quiet)
        fprintf(stderr, "bpcp: warning: -C on: Tern has no BP custody transfer; CFDP "
                        "class 2 acknowledges every file instead\n");
    if (r.o.debug && cos != 1)
        fprintf(stderr, "bpcp: -S %d: %s priority\n", cos,
                cfdp_ctl_priority_name(r.o.priority));

    const char *dpath;
    uint64_t dhost = split_host(argv[argc - 1], &dpath);
    int nsrc = argc - optind - 1;
    r.c = ct_connect("bpcp", r.o.node);
    if (!r.c)
        return 1;
    cfdp_ctl_info info;
    int rc = cfdp_ctl_info_get(r.c, &info);
    if (rc || !realpath(info.root, r.root)) {
        fprintf(stderr, "bpcp: cfdpd: %s\n",
                rc ? cfdp_ctl_errmsg(r.c) : "its filestore root is not reachable");
        cfdp_ctl_close(r.c);
        return 1;
    }
    int failed = 0;
    r.self = info.entity;
    for (int i = 0; i < nsrc; i++) {
        const char *spath;
        uint64_t shost = split_host(argv[optind + i], &spath);
        if (shost) {
            /* remote source: to here (dhost 0) or to another host */
            char dest[PATH_MAX];
            const char *base = strrchr(spath, '/') ? strrchr(spath, '/') + 1 : spath;
            if (!*dpath || dpath[strlen(dpath) - 1] == '/' || nsrc > 1)
                join(dest, sizeof dest, dpath, base);
            else
                snprintf(dest, sizeof dest, "%s", dpath);
            failed += fetch(&r, shost, spath, dhost ? dhost : info.entity, dest);
            continue;
        }
        if (!dhost) {
            fprintf(stderr, "bpcp: %s -> %s: both ends are local (use cp)\n", spath,
                    dpath);
            failed++;
            continue;
        }
        r.dst = dhost;
        struct stat st;
        if (stat(spath, &st)) {
            fprintf(stderr, "bpcp: %s: %s\n", spath, strerror(errno));
            failed++;
            continue;
        }
        char tmp[PATH_MAX], base[PATH_MAX];
        snprintf(tmp, sizeof tmp, "%s", spath);
        size_t tl = strlen(tmp);
        while (tl > 1 && tmp[tl - 1] == '/')
            tmp[--tl] = 0;
        snprintf(base, sizeof base, "%s",
                 strrchr(tmp, '/') ? strrchr(tmp, '/') + 1 : tmp);
        char remote[PATH_MAX];
        int into_dir = nsrc > 1 || !*dpath || dpath[strlen(dpath) - 1] == '/';
        if (S_ISDIR(st.st_mode)) {
            if (!r.o.recursive) {
                fprintf(stderr, "bpcp: %s: is a directory (use -r)\n", spath);
                failed++;
                continue;
            }
            /* dir -> <dest>/<dir>/..., like cp -r into an existing directory */
            if (join(remote, sizeof remote, dpath, base) || walk(&r, tmp, remote, 0)) {
                fprintf(stderr, "bpcp: %s: path too long or out of memory\n", spath);
                failed++;
            }
            continue;
        }
        rc = into_dir ? join(remote, sizeof remote, dpath, base)
             : snprintf(remote, sizeof remote, "%s", dpath) >= (int)sizeof remote
                 ? -ENAMETOOLONG
                 : 0;
        if (rc || add_job(&r, spath, remote)) {
            fprintf(stderr, "bpcp: %s: path too long or out of memory\n", spath);
            failed++;
        }
    }
    if (r.njobs || r.ndirs) {
        if ((rc = cfdp_ctl_open(r.o.node, &r.w))) {
            fprintf(stderr, "bpcp: a second connection to cfdpd: %s\n",
                    tern_strerror(rc));
            failed++;
            r.njobs = 0;
            r.ndirs = 0;
        }
    }
    make_dirs(&r);
    for (size_t at = 0; at < r.njobs; at += BATCH) {
        size_t end = at + BATCH < r.njobs ? at + BATCH : r.njobs;
        for (size_t i = at; i < end; i++)
            start(&r, &r.jobs[i]);
        for (size_t i = at; i < end; i++)
            if (r.jobs[i].started)
                collect(&r, &r.jobs[i]);
    }
    failed += (int)r.failed + (int)r.dirs_failed;
    if (!r.o.quiet && (r.njobs > 1 || failed))
        printf("bpcp: %u of %zu file(s) delivered and verified%s\n", r.ok, r.njobs,
               failed ? "; failures above" : "");
    cfdp_ctl_close(r.w);
    cfdp_ctl_close(r.c);
    free(r.jobs);
    free(r.dirs);
    return failed || r.ok != r.njobs ? 1 : 0;
}
