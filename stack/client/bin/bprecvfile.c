/* bprecvfile: receives files sent by bpsendfile (docs/tools.md).
 *
 *   bprecvfile <own EID> [--dir D] [--count N] [--timeout S] [--overwrite]
 *              [--node DIR] [--quiet]
 *
 * Pieces are written at their offsets into a hidden temporary file in D as
 * they come (in any order, duplicates ignored); once a file is complete its
 * CRC-32C is computed from what is on disk and compared with the sender's,
 * and it is renamed to its name. Names are sanitized: the last path
 * component only, no leading dot, no control or shell-special characters, so
 * nothing lands outside D. An existing file is not replaced (name.1, name.2,
 * ... instead) unless --overwrite. One line per file on stdout.
 *
 * Runs until N files are done, SIGINT/SIGTERM, or --timeout seconds without
 * a bundle. Exit status 0 if every file arrived intact (and N were done),
 * 1 otherwise, 2 for usage errors.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bptool.h"

#define PROG "bprecvfile"

#define MAX_XFERS  64
#define MAX_PIECES (1ull << 26)
#define CHUNK      (4u << 20)

struct xfer {
    int used;
    char src[BP_EID_MAX];
    bt_file_hdr h;
    char name[256]; /* sanitized */
    char tmp[64];
    int fd;
    uint64_t npieces, got_pieces, got_bytes, dups;
    uint8_t *bits;
    double t_first;
};

static void usage(FILE *f)
{
    fprintf(f, "usage: bprecvfile <own EID> [options]\n"
               "  receives files from bpsendfile and writes them into a directory\n"
               "  --dir D         where files go (default: the current directory)\n"
               "  --count N       exit after N files\n"
               "  --timeout S     exit when no bundle came for S seconds\n"
               "  --overwrite     replace an existing file of the same name\n"
               "  --node DIR      the node directory (default $TERN_NODE_DIR, else .)\n"
               "  --quiet         no progress line\n"
               "exit status: 0 all files intact, 1 a file failed or was incomplete,\n"
               "             2 usage\n");
}

/* A name that stays inside the directory: the last component, safe bytes. */
static void sanitize(const char *in, uint64_t xfer, char *out, size_t cap)
{
    const char *base = in;
    for (const char *p = in; *p; p++)
        if (*p == '/' || *p == '\\')
            base = p + 1;
    size_t n = 0;
    for (const char *p = base; *p && n + 1 < cap; p++) {
        unsigned char c = (unsigned char)*p;
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                 (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_' || c == '+' ||
                 c == ',' || c == '=' || c == '@' || c >= 0x80;
        out[n++] = ok ? (char)c : '_';
    }
    out[n] = '\0';
    if (n && out[0] == '.')
        out[0] = '_'; /* no hidden files, no "." or ".." */
    if (!n)
        snprintf(out, cap, "file-%016" PRIx64, xfer);
}

static int write_at(int fd, const uint8_t *p, size_t len, off_t off)
{
    while (len) {
        ssize_t n = pwrite(fd, p, len, off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        p += n;
        len -= (size_t)n;
        off += n;
    }
    return 0;
}

static void xfer_drop(int dirfd, struct xfer *x)
{
    if (x->fd >= 0)
        close(x->fd);
    unlinkat(dirfd, x->tmp, 0);
    free(x->bits);
    memset(x, 0, sizeof *x);
    x->fd = -1;
}

/* The file is complete: check it and give it its name. 0 ok, 1 failed. */
static int xfer_finish(int dirfd, const char *dir, struct xfer *x, int overwrite,
                       uint8_t *buf)
{
    uint32_t crc = 0;
    int rc = 0;
    for (uint64_t off = 0; off < x->h.total && !rc;) {
        size_t want = x->h.total - off > CHUNK ? CHUNK : (size_t)(x->h.total - off);
        ssize_t n = pread(x->fd, buf, want, (off_t)off);
        if (n <= 0) {
            rc = n < 0 ? -errno : -EIO;
            break;
        }
        crc = tern_crc32c(crc, buf, (size_t)n);
        off += (uint64_t)n;
    }
    if (!rc && fsync(x->fd))
        rc = -errno;
    double secs = bt_now() - x->t_first;
    if (rc) {
        printf(PROG ": %s from %s: cannot read it back: %s; discarded\n", x->name, x->src,
               strerror(-rc));
        xfer_drop(dirfd, x);
        return 1;
    }
    if (crc != x->h.fcrc) {
        printf(PROG ": %s from %s: CRC-32C mismatch (0x%08x on disk, 0x%08x sent); "
                    "discarded\n",
               x->name, x->src, crc, x->h.fcrc);
        xfer_drop(dirfd, x);
        return 1;
    }
    char final[300];
    snprintf(final, sizeof final, "%s", x->name);
    if (overwrite) {
        rc = renameat(dirfd, x->tmp, dirfd, final) ? -errno : 0;
    } else {
        rc = -EEXIST;
        for (int k = 0; k < 1000 && rc == -EEXIST; k++) {
            if (k)
                snprintf(final, sizeof final, "%s.%d", x->name, k);
            rc = renameat2(dirfd, x->tmp, dirfd, final, RENAME_NOREPLACE) ? -errno : 0;
        }
    }
    if (rc) {
        printf(PROG ": %s from %s: cannot name it in %s: %s; discarded\n", x->name,
               x->src, dir, strerror(-rc));
        xfer_drop(dirfd, x);
        return 1;
    }
    char hb[32];
    printf(PROG ": received %s/%s (%" PRIu64 " bytes, %s, %" PRIu64
                " piece%s) from %s in %.3f s (%.2f Mbit/s), CRC-32C 0x%08x ok\n",
           dir, final, x->h.total, bt_human((double)x->h.total, hb, sizeof hb),
           x->npieces, x->npieces == 1 ? "" : "s", x->src, secs,
           secs > 0 ? (double)x->h.total * 8 / secs / 1e6 : 0.0, crc);
    fflush(stdout);
    close(x->fd);
    x->fd = -1;
    xfer_drop(dirfd, x); /* the temporary name is gone: unlinkat just fails */
    return 0;
}

int main(int argc, char **argv)
{
    const char *own = NULL, *node = NULL, *dir = ".";
    uint64_t count = 0;
    double timeout = 0;
    int quiet = 0, overwrite = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
            quiet = 1;
        } else if (!strcmp(a, "--overwrite")) {
            overwrite = 1;
        } else if (!strcmp(a, "--dir") || !strcmp(a, "--count") ||
                   !strcmp(a, "--timeout") || !strcmp(a, "--node")) {
            if (!val) {
                fprintf(stderr, PROG ": %s needs a value\n", a);
                return 2;
            }
            i++;
            int bad = 0;
            if (!strcmp(a, "--dir"))
                dir = val;
            else if (!strcmp(a, "--count"))
                bad = bt_parse_size(val, &count);
            else if (!strcmp(a, "--timeout"))
                bad = bt_parse_secs(val, &timeout);
            else
                node = val;
            if (bad) {
                fprintf(stderr, PROG ": bad value '%s' for %s\n", val, a);
                return 2;
            }
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, PROG ": unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        } else if (!own) {
            own = a;
        } else {
            fprintf(stderr, PROG ": unexpected argument '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!own) {
        usage(stderr);
        return 2;
    }
    int rc = bt_check_eid(PROG, "own EID", own);
    if (rc)
        return rc;
    int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0) {
        fprintf(stderr, PROG ": --dir %s: %s\n", dir, strerror(errno));
        return 1;
    }
    uint8_t *buf = malloc(CHUNK);
    struct xfer *xs = calloc(MAX_XFERS, sizeof *xs);
    if (!buf || !xs) {
        fprintf(stderr, PROG ": out of memory\n");
        free(buf);
        free(xs);
        close(dirfd);
        return 1;
    }
    for (int i = 0; i < MAX_XFERS; i++)
        xs[i].fd = -1;
    bt_tune_malloc();

    BpSAP sap;
    if (bt_start(PROG, node, own, &sap)) {
        free(buf);
        free(xs);
        close(dirfd);
        return 1;
    }
    bt_progress pg;
    bt_progress_init(&pg, quiet);

    uint64_t files_ok = 0, files_bad = 0, stray = 0, late = 0;
    uint64_t done_ids[MAX_XFERS]; /* finished transfers: late duplicates are ignored */
    unsigned ndone = 0;
    int failed = 0;
    int wait_ms = timeout > 0 ? (int)(timeout * 1000 + 0.5) : -1;
    while (!bt_stopped() && (!count || files_ok + files_bad < count)) {
        BpDelivery d;
        rc = bp_receive(sap, &d, wait_ms);
        if (rc == -EINTR)
            break;
        if (rc == -ETIMEDOUT) {
            bt_progress_end(&pg);
            fprintf(stderr, PROG ": no bundle for %.1f s, giving up\n", timeout);
            break;
        }
        if (rc) {
            bt_report(PROG, "bundle reception failed", rc);
            failed = 1;
            break;
        }
        bt_file_hdr h;
        size_t off = 0;
        const char *why = bt_file_hdr_get(d.payload, d.len, &h, &off);
        if (why) {
            if (stray++ < 5) {
                bt_progress_end(&pg);
                fprintf(stderr, PROG ": ignored a %zu-byte bundle from %s: %s\n", d.len,
                        d.src, why);
            }
            bp_release_delivery(&d);
            continue;
        }
        int finished = 0;
        for (unsigned i = 0; i < ndone && i < MAX_XFERS; i++)
            finished |= done_ids[i] == h.xfer;
        if (finished) {
            late++;
            bp_release_delivery(&d);
            continue;
        }
        struct xfer *x = NULL, *fr = NULL;
        for (int i = 0; i < MAX_XFERS; i++) {
            if (xs[i].used && xs[i].h.xfer == h.xfer && !strcmp(xs[i].src, d.src))
                x = &xs[i];
            else if (!xs[i].used && !fr)
                fr = &xs[i];
        }
        if (x && (x->h.total != h.total || x->h.piece != h.piece || x->h.fcrc != h.fcrc ||
                  strcmp(x->h.name, h.name))) {
            bt_progress_end(&pg);
            fprintf(stderr,
                    PROG ": a piece of %s from %s disagrees with the others; "
                         "ignored\n",
                    x->name, d.src);
            stray++;
            bp_release_delivery(&d);
            continue;
        }
        if (!x) {
            uint64_t np = h.total ? (h.total + h.piece - 1) / h.piece : 1;
            if (!fr || np > MAX_PIECES) {
                bt_progress_end(&pg);
                fprintf(stderr, PROG ": cannot take %s from %s: %s\n", h.name, d.src,
                        !fr ? "too many files at once" : "too many pieces");
                stray++;
                bp_release_delivery(&d);
                continue;
            }
            x = fr;
            memset(x, 0, sizeof *x);
            x->used = 1;
            snprintf(x->src, sizeof x->src, "%s", d.src);
            x->h = h;
            sanitize(h.name, h.xfer, x->name, sizeof x->name);
            snprintf(x->tmp, sizeof x->tmp, ".bprecvfile-%016" PRIx64 ".part", h.xfer);
            x->npieces = np;
            x->bits = calloc((np + 7) / 8, 1);
            x->fd = openat(dirfd, x->tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
            x->t_first = bt_now();
            if (!x->bits || x->fd < 0) {
                fprintf(stderr, PROG ": cannot create %s/%s: %s\n", dir, x->tmp,
                        x->bits ? strerror(errno) : "out of memory");
                xfer_drop(dirfd, x);
                files_bad++;
                bp_release_delivery(&d);
                continue;
            }
            if (h.total && ftruncate(x->fd, (off_t)h.total)) {
                fprintf(stderr,
                        PROG ": cannot make room for %s (%" PRIu64 " bytes): %s\n",
                        x->name, h.total, strerror(errno));
                xfer_drop(dirfd, x);
                files_bad++;
                bp_release_delivery(&d);
                continue;
            }
        }
        uint64_t k = h.total ? h.offset / h.piece : 0;
        if (x->bits[k / 8] & (1u << (k % 8))) {
            x->dups++;
        } else {
            rc = write_at(x->fd, d.payload + off, d.len - off, (off_t)h.offset);
            if (rc) {
                bt_progress_end(&pg);
                printf(PROG ": %s from %s: cannot write: %s; discarded\n", x->name,
                       x->src, strerror(-rc));
                xfer_drop(dirfd, x);
                files_bad++;
                bp_release_delivery(&d);
                continue;
            }
            x->bits[k / 8] |= (uint8_t)(1u << (k % 8));
            x->got_pieces++;
            x->got_bytes += d.len - off;
        }
        bp_release_delivery(&d);
        if (x->got_pieces == x->npieces) {
            bt_progress_end(&pg);
            done_ids[ndone++ % MAX_XFERS] = h.xfer;
            if (xfer_finish(dirfd, dir, x, overwrite, buf))
                files_bad++;
            else
                files_ok++;
        } else if (bt_progress_due(&pg)) {
            fprintf(stderr, "\r" PROG ": %s %.1f%% (%" PRIu64 "/%" PRIu64 " pieces)  ",
                    x->name, 100.0 * (double)x->got_bytes / (double)x->h.total,
                    x->got_pieces, x->npieces);
        }
    }
    bt_progress_end(&pg);
    bt_signals_wake(NULL);
    bp_close(sap);
    bp_detach();
    uint64_t partial = 0;
    for (int i = 0; i < MAX_XFERS; i++) {
        if (!xs[i].used)
            continue;
        printf(PROG ": %s from %s incomplete: %" PRIu64 " of %" PRIu64 " bytes (%" PRIu64
                    " of %" PRIu64 " pieces); discarded\n",
               xs[i].name, xs[i].src, xs[i].got_bytes, xs[i].h.total, xs[i].got_pieces,
               xs[i].npieces);
        xfer_drop(dirfd, &xs[i]);
        partial++;
    }
    if (late)
        fprintf(stderr, PROG ": %" PRIu64 " pieces of finished files arrived again\n",
                late);
    if (stray)
        fprintf(stderr, PROG ": %" PRIu64 " bundles were not usable pieces\n", stray);
    if (!quiet || files_bad || partial)
        fprintf(stderr,
                PROG ": %" PRIu64 " files received intact, %" PRIu64 " failed, %" PRIu64
                     " incomplete\n",
                files_ok, files_bad, partial);
    free(buf);
    free(xs);
    close(dirfd);
    int ok = !failed && !files_bad && !partial && (!count || files_ok >= count);
    return ok ? 0 : 1;
}
