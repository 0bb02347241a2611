/* bpsendfile: sends a file as one bundle, or split in pieces, with its name
 * (docs/tools.md); bprecvfile puts it back together.
 *
 *   bpsendfile <own EID> <destination EID> <file> [--split BYTES] [--ttl S]
 *              [--name NAME] [--priority 0|1|2] [--node DIR] [--quiet]
 *
 * Each bundle carries the header of bptool.h (file name, size, the piece's
 * offset, the split size, CRC-32C of the whole file) and then the piece's
 * bytes. Pieces over 64 KiB are handed to the node as a memfd (bp_send_fd),
 * filled from the file by copy_file_range, so the bytes never cross the
 * client socket. Exit status 0 once the node has committed every piece, 1
 * on failure, 2 for usage errors.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bptool.h"

#define PROG "bpsendfile"

#define INLINE_MAX (64u << 10)
#define CHUNK      (4u << 20)

static void usage(FILE *f)
{
    fprintf(f,
            "usage: bpsendfile <own EID> <destination EID> <file> [options]\n"
            "  sends the file as one bundle (or pieces) to bprecvfile\n"
            "  --split BYTES      pieces of at most BYTES of the file (k/M/G, Ki/Mi/Gi)\n"
            "  --ttl S            lifetime in seconds (default 86400)\n"
            "  --name NAME        the name the receiver gets (default: the file's)\n"
            "  --priority 0|1|2   bulk, standard (default) or expedited\n"
            "  --node DIR         the node directory (default $TERN_NODE_DIR, else .)\n"
            "  --quiet            no progress line and no summary\n"
            "exit status: 0 sent and committed, 1 failure, 2 usage\n");
}

/* Reads len bytes at off; 0 or -errno. */
static int pread_all(int fd, void *buf, size_t len, off_t off)
{
    uint8_t *p = buf;
    while (len) {
        ssize_t n = pread(fd, p, len, off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            return -EIO; /* the file shrank */
        p += n;
        len -= (size_t)n;
        off += n;
    }
    return 0;
}

static int write_all(int fd, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Appends len bytes of in at off to out: in the kernel where it can. */
static int copy_range(int in, off_t off, int out, uint64_t len, uint8_t *bounce)
{
    int kernel = 1;
    while (len) {
        size_t want = len > CHUNK ? CHUNK : (size_t)len;
        if (kernel) {
            ssize_t n = copy_file_range(in, &off, out, NULL, want, 0);
            if (n > 0) {
                len -= (uint64_t)n;
                continue;
            }
            if (n == 0)
                return -EIO;
            if (errno == EINTR)
                continue;
            if (errno != EXDEV && errno != ENOSYS && errno != EINVAL &&
                errno != EOPNOTSUPP)
                return -errno;
            kernel = 0; /* e.g. across file systems on older kernels */
        }
        int rc = pread_all(in, bounce, want, off);
        if (!rc)
            rc = write_all(out, bounce, want);
        if (rc)
            return rc;
        off += (off_t)want;
        len -= want;
    }
    return 0;
}

/* What the progress line shows. */
struct prog {
    bt_progress pg;
    uint64_t sent, npieces, done_bytes, total;
    double t0;
};

static void show(void *arg)
{
    struct prog *p = arg;
    if (!bt_progress_due(&p->pg))
        return;
    double el = bt_now() - p->t0;
    fprintf(stderr,
            "\r\033[K" PROG ": %" PRIu64 "/%" PRIu64 " pieces, %.1f%%, %.2f Mbit/s%s",
            p->sent, p->npieces,
            p->total ? 100.0 * (double)p->done_bytes / (double)p->total : 100.0,
            el > 0 ? (double)p->done_bytes * 8 / el / 1e6 : 0.0, bt_store_note());
}

int main(int argc, char **argv)
{
    const char *own = NULL, *dest = NULL, *path = NULL, *node = NULL, *name = NULL;
    uint64_t split = 0, ttl = 86400, prio = BP_STD_PRIORITY;
    int quiet = 0, npos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
            quiet = 1;
        } else if (!strcmp(a, "--split") || !strcmp(a, "--ttl") || !strcmp(a, "--name") ||
                   !strcmp(a, "--priority") || !strcmp(a, "--node")) {
            if (!val) {
                fprintf(stderr, PROG ": %s needs a value\n", a);
                return 2;
            }
            i++;
            int bad = 0;
            if (!strcmp(a, "--split"))
                bad = bt_parse_size(val, &split) || !split;
            else if (!strcmp(a, "--ttl"))
                bad = bt_parse_size(val, &ttl) || !ttl || ttl > UINT32_MAX;
            else if (!strcmp(a, "--priority"))
                bad = bt_parse_size(val, &prio) || prio > 2;
            else if (!strcmp(a, "--name"))
                name = val;
            else
                node = val;
            if (bad) {
                fprintf(stderr, PROG ": bad value '%s' for %s\n", val, a);
                return 2;
            }
        } else if (a[0] == '-' && a[1] == '-') {
            fprintf(stderr, PROG ": unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        } else if (npos == 0) {
            own = a, npos++;
        } else if (npos == 1) {
            dest = a, npos++;
        } else if (npos == 2) {
            path = a, npos++;
        } else {
            fprintf(stderr, PROG ": unexpected argument '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (npos != 3) {
        usage(stderr);
        return 2;
    }
    int rc = bt_check_eid(PROG, "own EID", own);
    if (!rc)
        rc = bt_check_eid(PROG, "destination EID", dest);
    if (rc)
        return rc;
    if (!name) {
        const char *slash = strrchr(path, '/');
        name = slash ? slash + 1 : path;
    }
    size_t namelen = strlen(name);
    if (namelen == 0 || namelen > 255) {
        fprintf(stderr,
                PROG ": the file name '%s' must have 1 to 255 bytes (use --name)\n",
                name);
        return 2;
    }
    bt_tune_malloc();

    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st)) {
        fprintf(stderr, PROG ": cannot read %s: %s\n", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return 1;
    }
    if (!S_ISREG(st.st_mode)) {
        fprintf(stderr, PROG ": %s is not a regular file\n", path);
        close(fd);
        return 1;
    }
    uint64_t total = (uint64_t)st.st_size;
    uint64_t piece = split && split < total ? split : (total ? total : 1);
    uint64_t npieces = total ? (total + piece - 1) / piece : 1;
    uint8_t *bounce = malloc(CHUNK + BT_FILE_HDR + 256);
    if (!bounce) {
        fprintf(stderr, PROG ": out of memory\n");
        close(fd);
        return 1;
    }
    /* The whole file's CRC-32C first: the receiver checks what it wrote. */
    double tc = bt_now();
    uint32_t fcrc = 0;
    for (uint64_t off = 0; off < total;) {
        size_t want = total - off > CHUNK ? CHUNK : (size_t)(total - off);
        if ((rc = pread_all(fd, bounce, want, (off_t)off))) {
            fprintf(stderr, PROG ": reading %s: %s\n", path, strerror(-rc));
            free(bounce);
            close(fd);
            return 1;
        }
        fcrc = tern_crc32c(fcrc, bounce, want);
        off += want;
    }
    tc = bt_now() - tc;

    BpSAP sap;
    if (bt_start(PROG, node, own, &sap)) {
        free(bounce);
        close(fd);
        return 1;
    }
    BpSendOpts o = BP_SEND_OPTS_INIT;
    o.lifetime_s = (uint32_t)ttl;
    o.priority = (int)prio;
    uint64_t seed = bt_seed();
    bt_file_hdr h;
    memset(&h, 0, sizeof h);
    h.namelen = (uint16_t)namelen;
    h.xfer = bt_rand(&seed);
    h.total = total;
    h.piece = piece;
    h.fcrc = fcrc;
    memcpy(h.name, name, namelen);

    struct prog pr = {.npieces = npieces, .total = total, .t0 = bt_now()};
    bt_progress_init(&pr.pg, quiet);
    int status = 0;
    uint64_t sent = 0, done_bytes = 0;
    double t0 = pr.t0;
    for (uint64_t k = 0; k < npieces; k++) {
        if (bt_stopped()) {
            fprintf(stderr,
                    PROG ": stopped by %s after %" PRIu64 " of %" PRIu64 " pieces\n",
                    bt_signame(), sent, npieces);
            status = 1;
            break;
        }
        pr.sent = sent;
        pr.done_bytes = done_bytes;
        if ((rc = bt_wait_room(sap, show,
                               &pr))) { /* the progress line goes on meanwhile */
            if (rc == -EINTR && bt_stopped())
                continue; /* said at the top of the loop */
            bt_report(PROG, "send failed", rc);
            status = 1;
            break;
        }
        h.offset = k * piece;
        uint64_t dlen = total - h.offset < piece ? total - h.offset : piece;
        if (!total)
            dlen = 0;
        size_t hl = bt_file_hdr_put(bounce, &h);
        if (hl + dlen <= INLINE_MAX) {
            if ((rc = pread_all(fd, bounce + hl, (size_t)dlen, (off_t)h.offset))) {
                fprintf(stderr, PROG ": reading %s: %s\n", path, strerror(-rc));
                status = 1;
                break;
            }
            o.flags = k + 1 < npieces ? BP_SEND_MORE : 0;
            rc = bp_send(sap, dest, bounce, hl + (size_t)dlen, &o, NULL);
        } else {
            /* The library keeps its own duplicate of the descriptor until the
             * node answers, so ours closes right after. */
            int mfd = memfd_create("bpsendfile", MFD_CLOEXEC);
            if (mfd < 0) {
                fprintf(stderr, PROG ": memfd_create: %s\n", strerror(errno));
                status = 1;
                break;
            }
            rc = write_all(mfd, bounce, hl);
            if (!rc)
                rc = copy_range(fd, (off_t)h.offset, mfd, dlen, bounce);
            if (rc) {
                fprintf(stderr, PROG ": copying %s into a memfd: %s\n", path,
                        strerror(-rc));
                close(mfd);
                status = 1;
                break;
            }
            o.flags = 0;
            rc = bp_send_fd(sap, dest, mfd, 0, hl + (size_t)dlen, &o, NULL);
            close(mfd);
        }
        if (rc == -EINTR && bt_stopped())
            continue; /* said at the top of the loop */
        if (rc) {
            bt_report(PROG, "send failed", rc);
            status = 1;
            break;
        }
        sent++;
        done_bytes += dlen;
        pr.sent = sent;
        pr.done_bytes = done_bytes;
        show(&pr);
    }
    /* Done once the node has committed every piece: waited for in steps, so
     * the progress line says what keeps it (a full store, say). */
    while (!status) {
        rc = bp_flush(sap, 500);
        if (rc == -ETIMEDOUT && !bt_stopped()) {
            show(&pr);
            continue;
        }
        if (rc == -EINTR || bt_stopped()) {
            unsigned left = bp_node_unanswered(bp_node());
            fprintf(stderr,
                    PROG ": stopped by %s with %u piece%s not yet committed by the "
                         "node%s\n",
                    bt_signame(), left, left == 1 ? "" : "s",
                    bp_node_store_full(bp_node()) ? " (its store is full)" : "");
        } else if (rc) {
            bt_report(PROG, "the node did not accept every piece", rc);
        }
        status = rc != 0;
        break;
    }
    double secs = bt_now() - t0;
    bt_progress_end(&pr.pg);
    bt_signals_wake(NULL); /* no signal may touch the endpoint once closed */
    /* A piece the node accepted and then had to delete while we were still
     * attached (too big for a peer's limit learnt late) comes back here. */
    rc = bp_close(sap);
    if (rc && !status) {
        bt_report(PROG, "the node deleted a piece it had accepted", rc);
        status = 1;
    }
    bp_detach();
    if (!status && !quiet) {
        char hb[32];
        printf(PROG ": sent %s (%" PRIu64 " bytes, %s) to %s as %" PRIu64
                    " bundle%s in %.3f s (%.2f Mbit/s; CRC-32C 0x%08x took %.3f s)\n",
               name, total, bt_human((double)total, hb, sizeof hb), dest, sent,
               sent == 1 ? "" : "s", secs,
               secs > 0 ? (double)total * 8 / secs / 1e6 : 0.0, fcrc, tc);
    }
    free(bounce);
    close(fd);
    return status;
}
