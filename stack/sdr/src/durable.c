/* Durability: a redo log plus checkpoint images.
 *
 * Files in the store's directory:
 *   <name>.img         the heap as of transaction S, with per-64-KiB CRCs;
 *                      replaced atomically (write .img.tmp, sync, rename)
 *   <name>.log.<gen>   redo records of transactions after S, in order; each
 *                      record carries its sequence number and a CRC-32C
 *   <name>.blob.<id>   append-only blob segments (blob.c)
 *
 * Recovery loads the image and replays log records in sequence until the
 * first record that is torn, corrupt or out of order: what remains is
 * exactly a prefix of the committed transactions. A commit is durable when
 * its record is synced; blob data is synced before the record that refers
 * to it. Under the group policy a helper thread writes and syncs whatever
 * commits have queued, as soon as it is idle, so one sync covers many. It
 * writes them as a batch: a batch header with the CRC of all its records,
 * then the records. Recovery takes a batch whole or not at all, which lets
 * the helper drop the bytes of blobs that were put and freed within one
 * batch instead of writing them: no recoverable state refers to them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "sdr_int.h"
#include "tern/ckd.h"
#include "tern/crc.h"

#define IMG_HDR_SIZE 4096u
#define IMG_CHUNK    65536u
#define IMG_VERSION  1u
#define LOG_HDR_SIZE 64u
#define REC_MAGIC    0x52454354u /* "TCER" */
#define REC_HDR      24u         /* magic, total length, seq, entries, flags */
#define ENT_HDR      12u         /* off u64, len u32 */
#define BATCH_MAGIC  0x42434554u /* "TECB" */
#define BATCH_HDR                                                                        \
    28u /* magic, length of the records, first seq,                                      \
           records' CRC, flags, header CRC */

struct img_hdr {
    char magic[8];
    uint32_t version;
    uint32_t crc;
    char name[40];
    uint64_t heap_size;
    uint32_t reserve_pct;
    uint32_t chunk;
    uint64_t seq;
    uint64_t log_gen;
    uint64_t nchunks;
};

int sdr__path(const sdr *s, char *buf, size_t cap, const char *kind, uint64_t n)
{
    int k = n ? snprintf(buf, cap, "%s/%s.%s.%" PRIu64, s->dir, s->name, kind, n)
              : snprintf(buf, cap, "%s/%s.%s", s->dir, s->name, kind);
    return k < 0 || (size_t)k >= cap ? -ENAMETOOLONG : 0;
}

static int write_all(sdr *s, int fd, const void *p, size_t n, uint64_t off)
{
    ssize_t w = s->io->pwrite(s->io->ctx, fd, p, n, off);
    if (w < 0)
        return (int)w;
    return (size_t)w == n ? 0 : -EIO;
}

static int read_all(sdr *s, int fd, void *p, size_t n, uint64_t off)
{
    ssize_t r = s->io->pread(s->io->ctx, fd, p, n, off);
    if (r < 0)
        return (int)r;
    return (size_t)r == n ? 0 : TERN_ETRUNCATED;
}

/* ---------------------------------------------------------------- image */

/* Writes an image of heap, whose bytes from len on are all zero: those are
 * left as a hole in the file (they read back as zeros), so a store whose
 * heap is mostly unused does not write its whole size at every checkpoint. */
static int image_write(sdr *s, const uint8_t *heap, uint64_t len, uint64_t seq,
                       uint64_t gen)
{
    static const uint8_t zeros[IMG_CHUNK];
    char tmp[4200], img[4200];
    int rc, fd;
    uint64_t nchunks = (s->heap_size + IMG_CHUNK - 1) / IMG_CHUNK;
    uint32_t *crcs = malloc(nchunks * 4);
    if (!crcs)
        return -ENOMEM;
    if (len > s->heap_size)
        len = s->heap_size;
    if ((rc = sdr__path(s, tmp, sizeof tmp, "img.tmp", 0)) ||
        (rc = sdr__path(s, img, sizeof img, "img", 0)))
        goto out_free;
    fd = s->io->open(s->io->ctx, tmp, 1);
    if (fd < 0) {
        rc = fd;
        goto out_free;
    }
    if ((rc = s->io->truncate(s->io->ctx, fd, 0)))
        goto out_close;
    for (uint64_t c = 0; c < nchunks; c++) {
        uint64_t off = c * IMG_CHUNK;
        size_t n =
            (size_t)(s->heap_size - off < IMG_CHUNK ? s->heap_size - off : IMG_CHUNK);
        size_t data = off >= len ? 0 : (size_t)(len - off < n ? len - off : n);
        crcs[c] = tern_crc32c(tern_crc32c(0, heap + off, data), zeros, n - data);
    }
    /* Heap first, header last: a torn image never has a valid header. */
    for (uint64_t off = 0; off < len; off += 1u << 20) {
        size_t n = (size_t)(len - off < (1u << 20) ? len - off : 1u << 20);
        if ((rc = write_all(s, fd, heap + off, n, IMG_HDR_SIZE + off)))
            goto out_close;
    }
    if ((rc = write_all(s, fd, crcs, nchunks * 4, IMG_HDR_SIZE + s->heap_size)))
        goto out_close;
    uint8_t hb[IMG_HDR_SIZE];
    struct img_hdr h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, "TERNSDR", 8);
    h.version = IMG_VERSION;
    snprintf(h.name, sizeof h.name, "%s", s->name);
    h.heap_size = s->heap_size;
    h.reserve_pct = s->reserve_pct;
    h.chunk = IMG_CHUNK;
    h.seq = seq;
    h.log_gen = gen;
    h.nchunks = nchunks;
    memset(hb, 0, sizeof hb);
    memcpy(hb, &h, sizeof h);
    h.crc = tern_crc32c(0, hb, IMG_HDR_SIZE);
    memcpy(hb, &h, sizeof h);
    if ((rc = write_all(s, fd, hb, IMG_HDR_SIZE, 0)))
        goto out_close;
    if ((rc = s->io->sync(s->io->ctx, fd)))
        goto out_close;
    rc = s->io->close(s->io->ctx, fd);
    fd = -1;
    if (rc || (rc = s->io->rename(s->io->ctx, tmp, img)) ||
        (rc = s->io->sync_dir(s->io->ctx, s->dir)))
        goto out_free;
out_close:
    if (fd >= 0)
        s->io->close(s->io->ctx, fd);
out_free:
    free(crcs);
    return rc;
}

#define WHY(...)                                                                         \
    do {                                                                                 \
        if (why)                                                                         \
            snprintf(why, whylen, __VA_ARGS__);                                          \
    } while (0)

static int image_read(sdr *s, const char *img, uint64_t *seq, uint64_t *gen, char *why,
                      size_t whylen)
{
    uint8_t hb[IMG_HDR_SIZE];
    struct img_hdr h;
    uint64_t size;
    int rc, fd = s->io->open(s->io->ctx, img, 0);
    uint32_t *crcs = NULL;
    if (fd < 0) {
        WHY("%s: cannot open: %s", img, tern_strerror(fd));
        return fd;
    }
    if ((rc = s->io->size(s->io->ctx, fd, &size)))
        goto out;
    if (size < IMG_HDR_SIZE || (rc = read_all(s, fd, hb, IMG_HDR_SIZE, 0))) {
        WHY("%s: truncated (%" PRIu64 " bytes): the header is incomplete", img, size);
        rc = TERN_ECORRUPT;
        goto out;
    }
    memcpy(&h, hb, sizeof h);
    uint32_t want = h.crc;
    h.crc = 0;
    memcpy(hb, &h, sizeof h);
    if (memcmp(h.magic, "TERNSDR", 8) != 0 || tern_crc32c(0, hb, IMG_HDR_SIZE) != want) {
        WHY("%s: header checksum mismatch: not a Tern store image, or damaged", img);
        rc = TERN_ECORRUPT;
        goto out;
    }
    if (h.version != IMG_VERSION) {
        WHY("%s: format version %u, this build reads version %u", img, h.version,
            IMG_VERSION);
        rc = TERN_EPROFILE;
        goto out;
    }
    if (h.heap_size != s->heap_size) {
        WHY("store '%s' in %s was created with heap size %" PRIu64
            " bytes; the profile asks for %" PRIu64 ": open it with heap size %" PRIu64
            ", or remove %s/%s.* to recreate it",
            s->name, s->dir, h.heap_size, s->heap_size, h.heap_size, s->dir, s->name);
        rc = TERN_EPROFILE;
        goto out;
    }
    if (h.reserve_pct != s->reserve_pct) {
        WHY("store '%s' in %s was created with a %u%% reserve; the profile asks for "
            "%u%%: "
            "open it with reserve %u%%, or remove %s/%s.* to recreate it",
            s->name, s->dir, h.reserve_pct, s->reserve_pct, h.reserve_pct, s->dir,
            s->name);
        rc = TERN_EPROFILE;
        goto out;
    }
    uint64_t nchunks = (s->heap_size + IMG_CHUNK - 1) / IMG_CHUNK;
    if (h.chunk != IMG_CHUNK || h.nchunks != nchunks) {
        WHY("%s: chunk layout %u x %" PRIu64 " does not match the heap", img, h.chunk,
            h.nchunks);
        rc = TERN_ECORRUPT;
        goto out;
    }
    if (size < IMG_HDR_SIZE + s->heap_size + nchunks * 4) {
        WHY("%s: truncated to %" PRIu64 " bytes; a complete image has %" PRIu64, img,
            size, IMG_HDR_SIZE + s->heap_size + nchunks * 4);
        rc = TERN_ECORRUPT;
        goto out;
    }
    crcs = malloc(nchunks * 4);
    if (!crcs) {
        rc = -ENOMEM;
        goto out;
    }
    if ((rc = read_all(s, fd, s->heap, s->heap_size, IMG_HDR_SIZE)) ||
        (rc = read_all(s, fd, crcs, nchunks * 4, IMG_HDR_SIZE + s->heap_size)))
        goto out;
    for (uint64_t c = 0; c < nchunks; c++) {
        uint64_t off = c * IMG_CHUNK;
        size_t n =
            (size_t)(s->heap_size - off < IMG_CHUNK ? s->heap_size - off : IMG_CHUNK);
        if (tern_crc32c(0, s->heap + off, n) != crcs[c]) {
            WHY("%s: heap bytes %" PRIu64 "-%" PRIu64
                " fail their checksum; the image is "
                "damaged and cannot be trusted",
                img, off, off + n - 1);
            rc = TERN_ECORRUPT;
            goto out;
        }
    }
    *seq = h.seq;
    *gen = h.log_gen;
out:
    free(crcs);
    s->io->close(s->io->ctx, fd);
    return rc;
}

/* ------------------------------------------------------------------ log */

static int log_create(sdr *s, uint64_t gen, int *fdp)
{
    char path[4200];
    uint8_t hb[LOG_HDR_SIZE];
    int rc = sdr__path(s, path, sizeof path, "log", gen);
    if (rc)
        return rc;
    int fd = s->io->open(s->io->ctx, path, 1);
    if (fd < 0)
        return fd;
    memset(hb, 0, sizeof hb);
    memcpy(hb, "TERNLOG", 8);
    memcpy(hb + 8, &gen, 8);
    uint32_t crc = tern_crc32c(0, hb, 16);
    memcpy(hb + 16, &crc, 4);
    if ((rc = s->io->truncate(s->io->ctx, fd, 0)) ||
        (rc = write_all(s, fd, hb, sizeof hb, 0)) || (rc = s->io->sync(s->io->ctx, fd)) ||
        (rc = s->io->sync_dir(s->io->ctx, s->dir))) {
        s->io->close(s->io->ctx, fd);
        return rc;
    }
    *fdp = fd;
    return 0;
}

/* Whether a record or batch numbered seq may come next in a log file, where
 * next is the number the previous one there leaves (0 at the start). A log
 * may start with commits the image already holds: a checkpoint switches to a
 * new generation without waiting for the commits queued so far, which the
 * helper then writes there (they are skipped on replay). */
static int seq_fits(const sdr *s, uint64_t next, uint64_t seq)
{
    return next ? seq == next : seq >= 1 && seq <= s->seq + 1;
}

/* Applies the valid records of one log file to the heap. Returns 1 if the
 * whole file was valid (replay may go on to the next one), 0 if it stopped at
 * a damaged or out-of-sequence record, or a negative error. */
static int log_replay(sdr *s, const char *path, uint64_t gen, uint64_t *records)
{
    int fd = s->io->open(s->io->ctx, path, 0), rc;
    uint64_t size;
    uint8_t *buf = NULL;
    if (fd < 0)
        return fd;
    if ((rc = s->io->size(s->io->ctx, fd, &size)))
        goto out;
    if (size < LOG_HDR_SIZE) {
        rc = 0;
        goto out;
    }
    buf = malloc(size);
    if (!buf) {
        rc = -ENOMEM;
        goto out;
    }
    if ((rc = read_all(s, fd, buf, size, 0)))
        goto out;
    uint64_t g;
    uint32_t crc;
    memcpy(&g, buf + 8, 8);
    memcpy(&crc, buf + 16, 4);
    if (memcmp(buf, "TERNLOG", 8) != 0 || g != gen || tern_crc32c(0, buf, 16) != crc) {
        rc = 0;
        goto out;
    }
    uint64_t pos = LOG_HDR_SIZE, next = 0; /* seq the next record must have */
    rc = 1;
    while (pos < size) {
        uint32_t magic, total, nent;
        uint64_t seq;
        if (size - pos < REC_HDR + 4) {
            rc = 0;
            break;
        }
        memcpy(&magic, buf + pos, 4);
        if (magic == BATCH_MAGIC) {
            /* A batch applies whole or not at all (see the top). */
            uint32_t blen, bcrc, hcrc;
            if (size - pos < BATCH_HDR) {
                rc = 0;
                break;
            }
            memcpy(&blen, buf + pos + 4, 4);
            memcpy(&seq, buf + pos + 8, 8);
            memcpy(&bcrc, buf + pos + 16, 4);
            memcpy(&hcrc, buf + pos + 24, 4);
            if (tern_crc32c(0, buf + pos, 24) != hcrc || !seq_fits(s, next, seq) ||
                blen > size - pos - BATCH_HDR ||
                tern_crc32c(0, buf + pos + BATCH_HDR, blen) != bcrc) {
                rc = 0;
                break;
            }
            next = seq;
            pos += BATCH_HDR;
            continue;
        }
        memcpy(&total, buf + pos + 4, 4);
        memcpy(&seq, buf + pos + 8, 8);
        memcpy(&nent, buf + pos + 16, 4);
        if (magic != REC_MAGIC || total < REC_HDR + 4 || total > size - pos ||
            !seq_fits(s, next, seq)) {
            rc = 0;
            break;
        }
        memcpy(&crc, buf + pos + total - 4, 4);
        if (tern_crc32c(0, buf + pos, total - 4) != crc) {
            rc = 0;
            break;
        }
        /* Check every entry before applying any: a record applies whole or not. */
        uint64_t e = pos + REC_HDR, end = pos + total - 4;
        int ok = 1;
        for (uint32_t i = 0; i < nent && ok; i++) {
            uint64_t off;
            uint32_t len;
            if (end - e < ENT_HDR) {
                ok = 0;
                break;
            }
            memcpy(&off, buf + e, 8);
            memcpy(&len, buf + e + 8, 4);
            if (len > end - e - ENT_HDR || off > s->heap_size || len > s->heap_size - off)
                ok = 0;
            e += ENT_HDR + len;
        }
        /* a record numbered 2^64 - 1 could have no successor: damaged */
        if (!ok || e != end || tern_ckd_add(&next, seq, 1)) {
            rc = 0;
            break;
        }
        if (seq <= s->seq) { /* already in the image */
            pos += total;
            continue;
        }
        for (e = pos + REC_HDR; e < end;) {
            uint64_t off;
            uint32_t len;
            memcpy(&off, buf + e, 8);
            memcpy(&len, buf + e + 8, 4);
            memcpy(s->heap + off, buf + e + ENT_HDR, len);
            e += ENT_HDR + len;
        }
        s->seq = seq;
        (*records)++;
        pos += total;
    }
out:
    free(buf);
    s->io->close(s->io->ctx, fd);
    return rc;
}

/* Removes log files of generations below gen (older checkpoints), oldest
 * first, so an interrupted cleanup leaves a contiguous run to finish later. */
static void unlink_logs_below(sdr *s, uint64_t gen)
{
    char path[4200];
    uint64_t low = gen;
    while (low > 1 && sdr__path(s, path, sizeof path, "log", low - 1) == 0 &&
           s->io->exists(s->io->ctx, path) == 0)
        low--;
    for (uint64_t g = low; g < gen; g++)
        if (sdr__path(s, path, sizeof path, "log", g) == 0)
            s->io->unlink(s->io->ctx, path);
}

/* --------------------------------------------------------- helper thread */

/* The group bound is about wall time on this host, whatever clock the node's
 * engines use, so the store reads CLOCK_MONOTONIC directly. */
static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Writes one staged blob, past the page cache if it was placed for that
 * (dfd: the batch's direct descriptors, opened as first needed). Only a
 * refusal by the file system (-EINVAL) falls back, for good. */
static int stage_write(sdr *s, const struct sdr_stage *st, int fd, int *dfd)
{
    uint64_t whole = st->len + (SDR_IO_DIRECT_ALIGN - st->len % SDR_IO_DIRECT_ALIGN) %
                                   SDR_IO_DIRECT_ALIGN;
    if (atomic_load(&s->direct) && st->pos % SDR_IO_DIRECT_ALIGN == 0) {
        if (*dfd == -1 && (*dfd = s->io->open_direct(s->io->ctx, fd)) < 0) {
            atomic_store(&s->direct, 0);
        } else if (*dfd >= 0) {
            ssize_t w = s->io->pwrite(s->io->ctx, *dfd, st->data, whole, st->pos);
            if (w >= 0 && (uint64_t)w == whole) {
                atomic_fetch_add(&s->direct_bytes, st->len);
                return 0;
            }
            if (w != -EINVAL)
                return w < 0 ? (int)w : -EIO;
            atomic_store(&s->direct, 0);
        }
    }
    ssize_t w = s->io->pwrite(s->io->ctx, fd, st->data, st->len, st->pos);
    if (w < 0 || (uint64_t)w != st->len)
        return w < 0 ? (int)w : -EIO;
    return 0;
}

/* Writes the staged blobs of a batch that are still alive (after-images
 * of bytes nobody else writes: no lock needed). */
static int stages_write(sdr *s, int sfd, uint64_t seg, const struct sdr_retired *ret,
                        int nret, const struct sdr_stages *tk, const uint8_t *dead)
{
    int rc = 0, dfd[SDR_RETIRED_MAX + 1];
    for (int r = 0; r <= SDR_RETIRED_MAX; r++)
        dfd[r] = -1;
    for (size_t i = 0; !rc && i < tk->n; i++) {
        const struct sdr_stage *st = tk->v[i];
        if (dead[i] || st->written)
            continue;
        int fd = st->seg == seg ? sfd : -1, k = fd >= 0 ? nret : -1;
        for (int r = 0; fd < 0 && r < nret; r++)
            if (ret[r].id == st->seg)
                fd = ret[k = r].fd;
        if (fd < 0)
            rc = TERN_ECORRUPT; /* a segment closes only once its batches are done */
        else
            rc = stage_write(s, st, fd, &dfd[k]);
    }
    /* sync on the segment's own descriptor covers these writes: it syncs
     * the file, whichever descriptor wrote it */
    for (int r = 0; r <= SDR_RETIRED_MAX; r++)
        if (dfd[r] >= 0)
            s->io->close(s->io->ctx, dfd[r]);
    return rc;
}

/* The batch header for n bytes of records starting at seq first. */
static void batch_hdr(uint8_t *h, const uint8_t *recs, size_t n, uint64_t first)
{
    uint32_t magic = BATCH_MAGIC, len = (uint32_t)n, crc = tern_crc32c(0, recs, n),
             fl = 0;
    memcpy(h, &magic, 4);
    memcpy(h + 4, &len, 4);
    memcpy(h + 8, &first, 8);
    memcpy(h + 16, &crc, 4);
    memcpy(h + 20, &fl, 4);
    uint32_t hcrc = tern_crc32c(0, h, 24);
    memcpy(h + 24, &hcrc, 4);
}

static void *helper_main(void *arg)
{
    sdr *s = arg;
    struct sdr_buf w = {0};
    struct sdr_stages tk = {0};
    uint8_t *dead = NULL;
    size_t dead_cap = 0;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->stop && s->pend.len == 0)
            pthread_cond_wait(&s->cv_work, &s->mu);
        /* Let a young batch gather a little longer (unless someone waits
         * for it): blobs freed meanwhile are never written. */
        if (s->pend.len && !s->stop && !s->flush_waiters && s->gather_ns) {
            uint64_t due = s->pend_since_ns + s->gather_ns;
            if (mono_ns() < due) {
                struct timespec ts = {(time_t)(due / 1000000000u),
                                      (long)(due % 1000000000u)};
                pthread_cond_timedwait(&s->cv_work, &s->mu, &ts);
                continue;
            }
        }
        if (s->pend.len) {
            struct sdr_buf t = s->pend;
            s->pend = w;
            s->pend.len = 0;
            w = t;
            struct sdr_stages t2 = s->pend_stage;
            s->pend_stage = tk;
            s->pend_stage.n = 0;
            tk = t2;
            /* From here on no commit can mark these dead: copy the marks. */
            if (tk.n > dead_cap) {
                uint8_t *nd = realloc(dead, tk.n);
                if (nd) {
                    dead = nd;
                    dead_cap = tk.n;
                } else if (!s->io_err) {
                    s->io_err = -ENOMEM;
                }
            }
            for (size_t i = 0; i < tk.n && i < dead_cap; i++)
                dead[i] = (uint8_t)tk.v[i]->dead;
            uint64_t hi = s->pend_seq, since = s->pend_since_ns, seg = s->seg_id;
            uint64_t first = s->taken_seq + 1;
            int blob = s->pend_blob, lfd = s->log_fd, sfd = s->seg_fd;
            struct sdr_retired ret[SDR_RETIRED_MAX];
            int nret = s->nretired, dir = s->dir_dirty;
            memcpy(ret, s->retired, sizeof ret);
            s->dir_dirty = 0;
            /* After a failed batch the log has a hole where it belongs: later
             * batches must neither land after it nor count as durable. */
            int failed = s->io_err;
            uint64_t off = s->log_off;
            s->pend_blob = 0;
            s->taken_seq = hi;
            s->batch_fd = lfd;
            pthread_mutex_unlock(&s->mu);
            int rc = failed;
            uint8_t hdr[BATCH_HDR];
            /* Records may exceed what one batch header covers only if no
             * blob died in them (a dead one needs the batch whole). */
            size_t hl = w.len > UINT32_MAX ? 0 : BATCH_HDR;
            if (hl)
                batch_hdr(hdr, w.p, w.len, first);
            else
                memset(dead, 0, tk.n < dead_cap ? tk.n : dead_cap);
            if (!rc && tk.n)
                rc = stages_write(s, sfd, seg, ret, nret, &tk, dead);
            if (!rc && blob && sfd >= 0)
                rc = s->io->sync(s->io->ctx, sfd);
            for (int r = 0; !rc && r < nret; r++)
                rc = s->io->sync(s->io->ctx, ret[r].fd);
            if (!rc && dir)
                rc = s->io->sync_dir(s->io->ctx, s->dir);
            if (!rc && hl)
                rc = write_all(s, lfd, hdr, hl, off);
            if (!rc)
                rc = write_all(s, lfd, w.p, w.len, off + hl);
            if (!rc)
                rc = s->io->sync(s->io->ctx, lfd);
            pthread_mutex_lock(&s->mu);
            for (size_t i = 0; i < tk.n; i++) {
                /* in the file (or dead): a dead one's memory goes now, not
                 * at the next commit, which an idle store may never make;
                 * a live one's is the loop's to keep or let go */
                tk.v[i]->released = 1;
                if (!rc && tk.v[i]->dead) {
                    free(tk.v[i]->data);
                    tk.v[i]->data = NULL;
                }
            }
            tk.n = 0;
            s->batch_fd = -1;
            int old_log = lfd == s->log_old_fd;
            if (old_log) { /* a checkpoint moved on to a new generation */
                s->io->close(s->io->ctx, lfd);
                s->log_old_fd = -1;
            }
            if (rc) {
                if (!s->io_err)
                    s->io_err = rc;
            } else {
                if (!old_log)
                    s->log_off = off + hl + w.len;
                atomic_store(&s->durable_seq, hi);
                /* Retired segments whose commits are all durable now are
                 * done (retired before this batch was taken, so synced). */
                for (int r = 0; r < s->nretired;) {
                    if (s->retired[r].until_seq <= hi) {
                        s->io->close(s->io->ctx, s->retired[r].fd);
                        s->retired[r] = s->retired[--s->nretired];
                    } else {
                        r++;
                    }
                }
                if (mono_ns() - since > (uint64_t)s->group_ms * 1000000u)
                    s->late_flushes++;
            }
            if (s->durable_efd >= 0) {
                uint64_t one = 1;
                ssize_t w2;
                do
                    w2 = write(s->durable_efd, &one, sizeof one);
                while (w2 < 0 && errno == EINTR);
                (void)w2; /* EAGAIN: the counter is already non-zero */
            }
            pthread_cond_broadcast(&s->cv_done);
            continue;
        }
        if (s->stop)
            break;
    }
    pthread_mutex_unlock(&s->mu);
    free(w.p);
    free(tk.v);
    free(dead);
    return NULL;
}

static void *ckpt_main(void *arg)
{
    sdr *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->stop && !s->snap)
            pthread_cond_wait(&s->cv_ckpt, &s->mu);
        if (!s->snap)
            break;
        uint8_t *snap = s->snap;
        uint64_t seq = s->snap_seq, gen = s->snap_gen, *dead = s->snap_dead;
        uint64_t snap_len = s->snap_len;
        size_t ndead = s->snap_ndead;
        s->snap_dead = NULL;
        s->snap_ndead = 0;
        /* The image may name staged blobs and must not stand for commits
         * that are not yet in a log: wait until the snapshot's commits are
         * durable (at the helper's own pace: the image is in no hurry). */
        while (!s->io_err && atomic_load(&s->durable_seq) < seq)
            pthread_cond_wait(&s->cv_done, &s->mu);
        int failed = s->io_err;
        pthread_mutex_unlock(&s->mu);
        int rc = failed ? failed : image_write(s, snap, snap_len, seq, gen);
        if (!rc && !failed) {
            unlink_logs_below(s, gen);
            /* The image records these segments dead: no recovery needs them. */
            for (size_t i = 0; i < ndead; i++)
                sdr__seg_file_done(s, dead[i]);
        }
        free(dead); /* snap's memory is s->snap_buf, used again next time */
        /* Ready the generation after this one for the next checkpoint
         * (replay takes an empty log as it is; if this fails, the next
         * checkpoint creates it itself and reports why). */
        int nfd = -1;
        if (!rc && log_create(s, gen + 1, &nfd))
            nfd = -1;
        pthread_mutex_lock(&s->mu);
        s->next_log_fd = nfd;
        if (rc && !s->io_err)
            s->io_err = rc;
        s->snap = NULL;
        s->ckpt_busy = 0;
        pthread_cond_broadcast(&s->cv_done);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

int sdr__durable_flush(sdr *s)
{
    if (!s->thread_running)
        return s->io_err;
    pthread_mutex_lock(&s->mu);
    s->flush_waiters++;
    pthread_cond_signal(&s->cv_work);
    while (!s->io_err && (s->pend.len || atomic_load(&s->durable_seq) < s->seq))
        pthread_cond_wait(&s->cv_done, &s->mu);
    s->flush_waiters--;
    int rc = s->io_err;
    pthread_mutex_unlock(&s->mu);
    return rc;
}

static void ckpt_wait(sdr *s)
{
    pthread_mutex_lock(&s->mu);
    while (s->ckpt_busy)
        pthread_cond_wait(&s->cv_done, &s->mu);
    pthread_mutex_unlock(&s->mu);
}

/* Starts a checkpoint: commits not yet taken by the group-commit helper, and
 * all later ones, go to a new log generation; the checkpoint thread writes
 * the heap as of now once those commits are durable, then drops the older
 * logs. Nothing here waits for the disk. */
static int ckpt_start(sdr *s)
{
    int rc, fd;
    /* One buffer for every snapshot: a fresh one would fault in page by page
     * while the loop waits. Only the heap below its high-water mark is
     * copied (the rest is zero). */
    if (!s->snap_buf && !(s->snap_buf = malloc(s->heap_size)))
        return -ENOMEM;
    uint8_t *snap = s->snap_buf;
    /* The checkpoint thread made the next generation's file ready (its
     * creation syncs the file and the directory). */
    pthread_mutex_lock(&s->mu);
    fd = s->next_log_fd;
    s->next_log_fd = -1;
    pthread_mutex_unlock(&s->mu);
    if (fd < 0 && (rc = log_create(s, s->log_gen + 1, &fd)))
        return rc;
    uint64_t *dead = NULL;
    size_t ndead = 0;
    if (sdr__blob_dead_ids(s, &dead, &ndead))
        ndead = 0; /* out of memory: those files wait for the next checkpoint */
    uint64_t snap_len = s->hwm < s->heap_size ? s->hwm : s->heap_size;
    memcpy(snap, s->heap, snap_len);
    pthread_mutex_lock(&s->mu);
    free(s->snap_dead);
    s->snap_dead = dead;
    s->snap_ndead = ndead;
    /* A batch the helper is writing goes on into the old log: it closes
     * that one when done (at most one, since the next checkpoint waits for
     * this one, which waits for that batch). */
    if (s->batch_fd == s->log_fd)
        s->log_old_fd = s->log_fd;
    else
        s->io->close(s->io->ctx, s->log_fd);
    s->log_fd = fd;
    s->log_off = LOG_HDR_SIZE;
    s->log_gen++;
    s->snap = snap;
    s->snap_len = snap_len;
    s->snap_seq = s->seq;
    s->snap_gen = s->log_gen;
    s->ckpt_busy = 1;
    pthread_cond_signal(&s->cv_ckpt);
    pthread_mutex_unlock(&s->mu);
    s->log_since_ckpt = 0;
    s->dead_bytes = s->dead_over = 0;
    return 0;
}

int sdr__durable_commit(sdr *s)
{
    size_t total = REC_HDR + 4;
    for (size_t i = 0; i < s->nranges; i++)
        total += ENT_HDR + s->ranges[i].len;
    if (total > UINT32_MAX)
        return -EFBIG;
    s->rec.len = 0;
    if (sdr__buf_reserve(&s->rec, total))
        return -ENOMEM;
    uint8_t *p = s->rec.p;
    uint32_t magic = REC_MAGIC, t32 = (uint32_t)total, nent = (uint32_t)s->nranges,
             fl = 0;
    uint64_t seq = s->seq + 1;
    memcpy(p, &magic, 4);
    memcpy(p + 4, &t32, 4);
    memcpy(p + 8, &seq, 8);
    memcpy(p + 16, &nent, 4);
    memcpy(p + 20, &fl, 4);
    size_t pos = REC_HDR;
    for (size_t i = 0; i < s->nranges; i++) {
        uint32_t len = (uint32_t)s->ranges[i].len;
        memcpy(p + pos, &s->ranges[i].off, 8);
        memcpy(p + pos + 8, &len, 4);
        memcpy(p + pos + ENT_HDR, s->heap + s->ranges[i].off, len);
        pos += ENT_HDR + len;
    }
    uint32_t crc = tern_crc32c(0, p, pos);
    memcpy(p + pos, &crc, 4);

    int rc;
    if (s->commit == SDR_COMMIT_SYNC) {
        /* Everything queued before (none under this policy) is already durable. */
        if (s->txn_blobs && s->seg_fd >= 0 && (rc = s->io->sync(s->io->ctx, s->seg_fd)))
            goto io_fail;
        if ((rc = write_all(s, s->log_fd, p, total, s->log_off)) ||
            (rc = s->io->sync(s->io->ctx, s->log_fd)))
            goto io_fail;
        s->log_off += total;
        s->seq = seq;
        atomic_store(&s->durable_seq, seq);
    } else {
        pthread_mutex_lock(&s->mu);
        rc = s->io_err;
        if (!rc && sdr__buf_reserve(&s->pend, total))
            rc = -ENOMEM;
        if (!rc) {
            memcpy(s->pend.p + s->pend.len, p, total);
            s->pend.len += total;
            if (s->pend.len == total)
                s->pend_since_ns = mono_ns();
            s->pend_seq = seq;
            s->pend_blob |= s->txn_blobs;
            s->seq = seq;
            sdr__blob_commit_locked(s);
            pthread_cond_signal(&s->cv_work);
        }
        pthread_mutex_unlock(&s->mu);
        if (rc)
            return rc;
    }
    s->log_since_ckpt += total;
    /* A checkpoint also comes once emptied blob segments hold 1 GiB, or one
     * larger than a segment was emptied (it does not become a spare): only
     * an image lets their files go. */
    if ((s->log_since_ckpt > s->ckpt_threshold || s->dead_bytes > (UINT64_C(1) << 30) ||
         s->dead_over) &&
        !__atomic_load_n(&s->ckpt_busy, __ATOMIC_ACQUIRE)) {
        /* The commit stands even if the checkpoint cannot start now. */
        int crc2 = ckpt_start(s);
        if (crc2 && crc2 != -ENOMEM) {
            pthread_mutex_lock(&s->mu);
            if (!s->io_err)
                s->io_err = crc2;
            pthread_mutex_unlock(&s->mu);
        }
    }
    return 0;
io_fail:
    /* After a failed sync the kernel may have dropped the data: refuse
     * further commits until the store is reopened and recovered. */
    s->io_err = rc;
    return rc;
}

/* ---------------------------------------------------------------- open */

int sdr__durable_open(sdr *s, char *why, size_t whylen)
{
    char img[4200], path[4200];
    int rc;
    uint64_t seq = 0, gen = 1, records = 0;

    if (!s->ckpt_threshold)
        s->ckpt_threshold = 2 * (s->heap_size > (32u << 20) ? s->heap_size : (32u << 20));
    if ((rc = sdr__path(s, img, sizeof img, "img", 0)))
        return rc;
    rc = s->io->exists(s->io->ctx, s->dir);
    if (rc) {
        WHY("store directory %s: %s", s->dir, tern_strerror(rc));
        return rc;
    }
    if (s->io->exists(s->io->ctx, img) == -ENOENT) {
        /* A new store. Leftovers of an earlier creation that never finished
         * (no image was ever made durable) are removed. */
        if (!sdr__path(s, path, sizeof path, "img.tmp", 0))
            s->io->unlink(s->io->ctx, path);
        for (uint64_t g = 1; g < 1000; g++)
            if (sdr__path(s, path, sizeof path, "log", g) ||
                s->io->unlink(s->io->ctx, path))
                break;
        sdr__heap_format(s);
        s->seq = 0;
    } else {
        if ((rc = image_read(s, img, &seq, &gen, why, whylen)))
            return rc;
        s->seq = seq;
        uint64_t g = gen;
        for (;; g++) {
            if ((rc = sdr__path(s, path, sizeof path, "log", g)))
                return rc;
            /* Only a log that is not there ends the replay: a failed lookup
             * must not pass for one, or its committed records are dropped. */
            if ((rc = s->io->exists(s->io->ctx, path)) == -ENOENT)
                break;
            if (rc) {
                WHY("%s: cannot look for the log: %s", path, tern_strerror(rc));
                return rc;
            }
            rc = log_replay(s, path, g, &records);
            if (rc < 0) {
                WHY("%s: cannot replay: %s", path, tern_strerror(rc));
                return rc;
            }
            if (rc == 0) {
                g++;
                break; /* later generations cannot follow a damaged one */
            }
        }
        gen = g; /* the first generation not replayed */
        sdr__starts_rebuild(s);
        if ((rc = sdr__heap_check(s, why, whylen))) {
            char inner[256];
            snprintf(inner, sizeof inner, "%s", why ? why : "");
            WHY("store '%s' in %s fails its consistency check after recovery: %s",
                s->name, s->dir, inner);
            return rc;
        }
    }
    /* Whatever wrote the heap so far (format, image, replay), the bytes past
     * its last non-zero chunk are zero: checkpoints copy and write only up
     * to there (sdr__raw_write raises the mark). */
    s->hwm = s->heap_size;
    while (s->hwm > 0) {
        uint64_t c = (s->hwm - 1) / IMG_CHUNK * IMG_CHUNK;
        const uint8_t *p = s->heap + c;
        size_t n = (size_t)(s->hwm - c);
        if (p[0] || memcmp(p, p + 1, n - 1))
            break;
        s->hwm = c;
    }
    /* Start from a fresh image: recovery's result becomes the new base, and
     * every older or damaged log can go. */
    if ((rc = image_write(s, s->heap, s->hwm, s->seq, gen))) {
        WHY("%s: cannot write the store image: %s", img, tern_strerror(rc));
        return rc;
    }
    unlink_logs_below(s, gen);
    /* Generations after a damaged one must never be replayed later. */
    for (uint64_t g = gen + 1;; g++)
        if (sdr__path(s, path, sizeof path, "log", g) || s->io->unlink(s->io->ctx, path))
            break;
    s->log_gen = gen;
    if ((rc = log_create(s, gen, &s->log_fd))) {
        WHY("cannot create log generation %" PRIu64 " in %s: %s", gen, s->dir,
            tern_strerror(rc));
        return rc;
    }
    s->log_off = LOG_HDR_SIZE;
    if (log_create(s, gen + 1, &s->next_log_fd))
        s->next_log_fd = -1; /* the first checkpoint creates it */
    atomic_store(&s->durable_seq, s->seq);
    s->taken_seq = s->seq;
    s->batch_fd = s->log_old_fd = -1;
    s->seg_fd = -1;
    if (s->commit == SDR_COMMIT_GROUP &&
        (s->durable_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) {
        rc = -errno;
        WHY("store '%s': eventfd: %s", s->name, tern_strerror(rc));
        s->io->close(s->io->ctx, s->log_fd);
        s->log_fd = -1;
        if (s->next_log_fd >= 0)
            s->io->close(s->io->ctx, s->next_log_fd);
        s->next_log_fd = -1;
        return rc;
    }
    pthread_mutex_init(&s->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cv_work, &ca);
    pthread_condattr_destroy(&ca);
    /* Half the bound gathering, half for the flush itself. */
    s->gather_ns = (uint64_t)s->group_ms * 500000u;
    pthread_cond_init(&s->cv_ckpt, NULL);
    pthread_cond_init(&s->cv_done, NULL);
    if ((rc = -pthread_create(&s->thread, NULL, helper_main, s)))
        goto fail_threads;
    if ((rc = -pthread_create(&s->ckpt_thread, NULL, ckpt_main, s))) {
        pthread_mutex_lock(&s->mu);
        s->stop = 1;
        pthread_cond_signal(&s->cv_work);
        pthread_mutex_unlock(&s->mu);
        pthread_join(s->thread, NULL);
        goto fail_threads;
    }
    s->thread_running = 1;
    if ((rc = sdr__blob_open(s)) || (rc = sdr__durable_flush(s))) {
        WHY("store '%s': cleaning blob segments: %s", s->name, tern_strerror(rc));
        sdr__durable_close(s);
        return rc;
    }
    return 0;
fail_threads:
    pthread_cond_destroy(&s->cv_done);
    pthread_cond_destroy(&s->cv_ckpt);
    pthread_cond_destroy(&s->cv_work);
    pthread_mutex_destroy(&s->mu);
    s->io->close(s->io->ctx, s->log_fd);
    s->log_fd = -1;
    if (s->next_log_fd >= 0)
        s->io->close(s->io->ctx, s->next_log_fd);
    s->next_log_fd = -1;
    if (s->durable_efd >= 0)
        close(s->durable_efd);
    s->durable_efd = -1;
    return rc;
}

void sdr__durable_close(sdr *s)
{
    if (s->thread_running) {
        ckpt_wait(s);
        pthread_mutex_lock(&s->mu);
        s->stop = 1;
        pthread_cond_signal(&s->cv_work);
        pthread_cond_signal(&s->cv_ckpt);
        pthread_mutex_unlock(&s->mu);
        pthread_join(s->thread, NULL);
        pthread_join(s->ckpt_thread, NULL);
        s->thread_running = 0;
        pthread_cond_destroy(&s->cv_done);
        pthread_cond_destroy(&s->cv_ckpt);
        pthread_cond_destroy(&s->cv_work);
        pthread_mutex_destroy(&s->mu);
    }
    free(s->pend.p);
    free(s->snap_dead);
    s->snap_dead = NULL;
    free(s->snap_buf);
    s->snap_buf = NULL;
    sdr__blob_close(s);
    if (s->log_fd >= 0)
        s->io->close(s->io->ctx, s->log_fd);
    s->log_fd = -1;
    if (s->next_log_fd >= 0)
        s->io->close(s->io->ctx, s->next_log_fd);
    s->next_log_fd = -1;
    if (s->durable_efd >= 0)
        close(s->durable_efd);
    s->durable_efd = -1;
}
