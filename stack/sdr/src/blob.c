/* Blobs: bulk data written once to append-only segment files and named by a
 * small heap object, so large payloads never pass through the redo log.
 *
 * A segment's record (id, bytes appended, bytes live) lives in the heap; a
 * segment whose live count drops to zero is marked dead, and its file is let
 * go once a checkpoint image records that. Blob bytes are synced before the
 * commit record that refers to them. In a memory store, blob bytes are heap
 * objects.
 *
 * The file of a dead segment is kept as a spare (renamed <name>.spare.<k>)
 * and becomes a later segment by another rename: writing over blocks the
 * file already has costs the file system no allocation and a sync of them no
 * journal commit (measured on ext4 with 1 MiB writes and a sync every
 * 16 MiB: 950 MB/s over an old file against 630 MB/s into a new one), and
 * nothing is discarded and allocated again. A reused file holds old bytes
 * past and between the new blobs; nothing reads them, since every blob is
 * read at its own place and checked against its CRC. */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/uio.h>

#include "sdr_int.h"
#include "tern/ckd.h"
#include "tern/crc.h"

#define SEG_MAX    (64u << 20)
#define BLOB_MAGIC UINT64_C(0x424c4f42) /* "BLOB" */
#define SEG_MAGIC  UINT64_C(0x53454730) /* "SEG0" */
#define SEG_DEAD   UINT64_C(0x44454144) /* "DEAD": emptied, file to be removed */

struct blobd {
    uint64_t magic;
    uint64_t seg; /* segment id, or 0 for a heap blob (memory store) */
    uint64_t pos; /* offset in the segment, or heap object */
    uint64_t len;
    uint64_t segrec; /* the segment's record */
    uint32_t crc;
    uint32_t pad;
};

struct segrec {
    uint64_t magic;
    uint64_t id;
    uint64_t size;
    uint64_t live;
};

/* Under group commit, blobs at least STAGE_MIN long are held in memory and
 * written by the helper with the batch of their commit, so that one freed
 * before then (a bundle forwarded or delivered within a few ms) is never
 * written at all. Written at put time instead: small blobs (not worth a
 * buffer each), and anything once STAGE_MAX bytes are held (a slow disk). */
#define STAGE_MIN (64u << 10)
#define STAGE_MAX (256u << 20)

/* Bytes from off up to the next SDR_IO_DIRECT_ALIGN boundary. */
static uint64_t direct_pad(uint64_t off)
{
    return (SDR_IO_DIRECT_ALIGN - off % SDR_IO_DIRECT_ALIGN) % SDR_IO_DIRECT_ALIGN;
}

/* A stage's buffer: page aligned and a whole number of pages, the tail
 * zeroed, so that it can be written past the page cache as it is. */
static uint8_t *stage_alloc(size_t n)
{
    size_t whole = n + direct_pad(n);
    void *p;
    if (whole < n || posix_memalign(&p, SDR_IO_DIRECT_ALIGN, whole))
        return NULL;
    memset((uint8_t *)p + n, 0, whole - n);
    return p;
}

#define BF(f) offsetof(struct blobd, f)
#define SF(f) offsetof(struct segrec, f)

static int is_seg(const sdr *s, uint64_t rec)
{
    uint64_t usable;
    uint64_t magic;
    if (!rec || sdr__obj_ok(s, rec, &usable) || usable < sizeof(struct segrec))
        return 0;
    magic = sdr__rd64(s, rec + SF(magic));
    return magic == SEG_MAGIC || magic == SEG_DEAD;
}

static int seg_valid(const sdr *s, uint64_t rec, uint64_t id)
{
    return is_seg(s, rec) && sdr__rd64(s, rec + SF(magic)) == SEG_MAGIC &&
           sdr__rd64(s, rec + SF(id)) == id;
}

/* Unlinks the files of dead (or empty, when at open) segments and drops
 * their records in the open transaction. The caller makes the unlinks
 * durable (sync_dir) before the transaction commits. */
static int segs_reap(sdr *s, int empty_too)
{
    uint64_t segs = sdr__sb(s)->blob_segs;
    char path[4200];
    int rc;
    if (!segs)
        return 0;
    for (sdr_off e = sdr_list_first(s, segs), next; e; e = next) {
        next = sdr_list_next(s, e);
        sdr_off rec = sdr_list_data(s, e);
        if (!is_seg(s, rec))
            return TERN_ECORRUPT;
        int dead = sdr__rd64(s, rec + SF(magic)) == SEG_DEAD;
        if (!dead && !(empty_too && sdr__rd64(s, rec + SF(live)) == 0))
            continue;
        if ((rc = sdr__path(s, path, sizeof path, "blob", sdr__rd64(s, rec + SF(id)))))
            return rc;
        if (s->io->exists(s->io->ctx, path) == 0)
            sdr__seg_file_done(s, sdr__rd64(s, rec + SF(id)));
        if ((rc = s->io->exists(s->io->ctx, path)) != -ENOENT)
            return rc ? rc : -EIO; /* it must be gone before its record is */
        if ((rc = sdr_list_delete(s, e, NULL)))
            return rc;
        sdr__w64(s, rec + SF(magic), 0);
        if ((rc = sdr__free(s, rec)))
            return rc;
    }
    return 0;
}

static void spare_lock(sdr *s)
{
    if (s->thread_running)
        pthread_mutex_lock(&s->mu);
}

static void spare_unlock(sdr *s)
{
    if (s->thread_running)
        pthread_mutex_unlock(&s->mu);
}

void sdr__seg_file_done(sdr *s, uint64_t id)
{
    char from[4200], to[4200];
    int k;
    if (sdr__path(s, from, sizeof from, "blob", id))
        return;
    /* A file larger than a segment (it held one larger blob) is no spare:
     * the spares' bound (SDR_SPARE_MAX files of SEG_MAX) would not hold. */
    uint64_t size = 0;
    int fd = s->io->open(s->io->ctx, from, 0);
    if (fd >= 0) {
        if (s->io->size(s->io->ctx, fd, &size))
            size = 0;
        s->io->close(s->io->ctx, fd);
    }
    if (size > SEG_MAX) {
        s->io->unlink(s->io->ctx, from);
        return;
    }
    spare_lock(s);
    uint32_t taken = s->spare_ready | s->spare_busy;
    for (k = 0; k < SDR_SPARE_MAX && (taken >> k & 1u); k++)
        ;
    if (k < SDR_SPARE_MAX)
        s->spare_busy |= 1u << k;
    spare_unlock(s);
    if (k == SDR_SPARE_MAX || sdr__path(s, to, sizeof to, "spare", (uint64_t)k + 1) ||
        s->io->rename(s->io->ctx, from, to)) {
        s->io->unlink(s->io->ctx, from);
        k = k < SDR_SPARE_MAX ? -k - 1 : SDR_SPARE_MAX;
    }
    spare_lock(s);
    if (k < 0) /* the rename failed: the slot is free again */
        s->spare_busy &= ~(1u << (-k - 1));
    else if (k < SDR_SPARE_MAX) {
        s->spare_busy &= ~(1u << k);
        s->spare_ready |= 1u << k;
    }
    spare_unlock(s);
}

/* Makes a spare file the file at path: 1 if it did, 0 if there was none
 * (or it could not be renamed: the caller creates a new file). */
static int spare_take(sdr *s, const char *path)
{
    char from[4200];
    int k;
    spare_lock(s);
    for (k = 0; k < SDR_SPARE_MAX && !(s->spare_ready >> k & 1u); k++)
        ;
    if (k < SDR_SPARE_MAX)
        s->spare_ready &= ~(1u << k);
    spare_unlock(s);
    if (k == SDR_SPARE_MAX || sdr__path(s, from, sizeof from, "spare", (uint64_t)k + 1))
        return 0;
    if (s->io->rename(s->io->ctx, from, path)) {
        s->io->unlink(s->io->ctx, from);
        return 0;
    }
    return 1;
}

/* The helper reads both under its lock. */
static void seg_fd_set(sdr *s, int fd, uint64_t id)
{
    if (s->thread_running)
        pthread_mutex_lock(&s->mu);
    s->seg_fd = fd;
    s->seg_id = id;
    if (s->thread_running)
        pthread_mutex_unlock(&s->mu);
}

static void seg_drop(sdr *s)
{
    int fd = s->seg_fd;
    seg_fd_set(s, -1, 0);
    if (fd >= 0)
        s->io->close(s->io->ctx, fd);
    s->seg_rec = 0;
}

/* Ends the current segment: no blob is appended to it any more. */
static int seg_finish(sdr *s)
{
    int rc;
    int handed = 0;
    if (s->seg_fd >= 0 && s->commit == SDR_COMMIT_GROUP && s->thread_running) {
        /* Under group commit the helper writes and syncs what the old
         * segment still needs, and closes it once the commits that may use
         * it (this one included) are durable: the loop does not wait. */
        pthread_mutex_lock(&s->mu);
        if (s->nretired < SDR_RETIRED_MAX && !s->io_err) {
            s->retired[s->nretired++] =
                (struct sdr_retired){s->seg_id, s->seq + 1, s->seg_fd};
            s->seg_fd = -1;
            s->seg_id = 0;
            handed = 1;
        }
        pthread_mutex_unlock(&s->mu);
        if (handed)
            s->seg_rec = 0;
    }
    if (s->seg_fd >= 0) {
        /* Let the helper finish with the old descriptor before it closes;
         * then write and sync this transaction's blobs in it ourselves,
         * since the helper will only know the new segment. */
        if ((rc = sdr__durable_flush(s)))
            return rc;
        for (size_t i = 0; i < s->staged.n; i++) {
            struct sdr_stage *st = s->staged.v[i];
            if (st->seq || st->written || st->seg != s->seg_id)
                continue;
            ssize_t w = s->io->pwrite(s->io->ctx, s->seg_fd, st->data, st->len, st->pos);
            if (w < 0 || (uint64_t)w != st->len)
                return w < 0 ? (int)w : -EIO;
            st->written = 1;
        }
        if ((rc = s->io->sync(s->io->ctx, s->seg_fd)))
            return rc;
        seg_drop(s);
    }
    s->seg_rec = 0;
    return 0;
}

/* Starts a new segment file, recorded in the heap by this transaction. */
static int seg_new(sdr *s)
{
    struct sdr_sb *sb = sdr__sb(s);
    char path[4200];
    int rc;
    uint64_t id = sb->next_seg, rec;
    if ((rc = seg_finish(s)))
        return rc;
    if (!sb->blob_segs) {
        uint64_t l;
        if ((rc = sdr_list_create(s, 0, &l)))
            return rc;
        sdr__w64(s, offsetof(struct sdr_sb, blob_segs), l);
    }
    if ((rc = sdr__alloc(s, sizeof(struct segrec), SDR_OPS, &rec)))
        return rc;
    struct segrec r = {SEG_MAGIC, id, 0, 0};
    sdr__raw_write(s, rec, &r, sizeof r);
    if ((rc = sdr_list_insert_last(s, sb->blob_segs, rec, NULL)))
        return rc;
    sdr__w64(s, offsetof(struct sdr_sb, next_seg), id + 1);
    if ((rc = sdr__path(s, path, sizeof path, "blob", id)))
        return rc;
    /* A file of this id can only be an orphan of a cancelled transaction:
     * reused as it is, like a spare, which otherwise becomes this file by a
     * rename; else one is created. */
    int reused = s->io->exists(s->io->ctx, path) == 0 || spare_take(s, path);
    int fd = s->io->open(s->io->ctx, path, 1);
    if (fd < 0)
        return fd;
    /* The file's name must be durable before the commit naming it is:
     * under group commit the helper syncs the directory with that batch. */
    int later = s->commit == SDR_COMMIT_GROUP && s->thread_running;
    if ((!reused && (rc = s->io->truncate(s->io->ctx, fd, 0))) ||
        (!later && (rc = s->io->sync_dir(s->io->ctx, s->dir)))) {
        s->io->close(s->io->ctx, fd);
        return rc;
    }
    if (later) {
        pthread_mutex_lock(&s->mu);
        s->dir_dirty = 1;
        pthread_mutex_unlock(&s->mu);
    }
    seg_fd_set(s, fd, id);
    s->seg_rec = rec;
    s->seg_off = 0;
    return s->txn_err;
}

/* A memory store has no disk to guard against and nothing to recover, so
 * its blobs carry no checksum and are copied in without an undo record: the
 * object is new in this transaction, and a cancel gives its bytes back to
 * free space, where their contents matter to no one. */
#define BLOB_NOCRC 1u

TERN_API int sdr_blob_putv(sdr *s, const struct iovec *iov, int niov, sdr_off *blob)
{
    int rc;
    uint64_t d;
    size_t n = 0;
    if (!s->in_txn)
        return TERN_ENOTXN;
    if (s->txn_err)
        return s->txn_err;
    if (niov < 0 || niov > IOV_MAX)
        return -EINVAL;
    for (int i = 0; i < niov; i++)
        n += iov[i].iov_len;
    if ((rc = sdr__alloc(s, sizeof(struct blobd), SDR_BULK, &d)))
        return rc;
    struct blobd b = {BLOB_MAGIC, 0, 0, n, 0, 0, 0};
    /* An empty blob lives in the heap even in a durable store: it adds
     * nothing to a segment's live count, so a segment holding only empty
     * blobs would be removed at open and their reads fail. */
    if (s->mode == SDR_MEMORY || n == 0) {
        uint64_t obj;
        if ((rc = sdr__alloc(s, n, SDR_BULK, &obj)))
            return sdr__fail(s, rc);
        size_t at = 0;
        for (int i = 0; i < niov; i++) {
            memcpy(s->heap + obj + at, iov[i].iov_base, iov[i].iov_len);
            at += iov[i].iov_len;
        }
        b.pos = obj;
        b.pad = BLOB_NOCRC;
    } else {
        for (int i = 0; i < niov; i++)
            b.crc = tern_crc32c(b.crc, iov[i].iov_base, iov[i].iov_len);
        if (!seg_valid(s, s->seg_rec, s->seg_id))
            seg_drop(s); /* its creating transaction was cancelled */
        int stage = s->commit == SDR_COMMIT_GROUP && n >= STAGE_MIN &&
                    s->staged_bytes + n <= STAGE_MAX;
        /* A blob the helper writes past the page cache starts and ends on
         * a page of its own: the write covers whole pages, and no other
         * blob's bytes share them. */
        int dio = stage && atomic_load(&s->direct);
        uint64_t pad = dio ? direct_pad(s->seg_off) : 0;
        if (!s->seg_rec || (s->seg_off > 0 && s->seg_off + pad + n > SEG_MAX)) {
            if ((rc = seg_new(s)))
                return sdr__fail(s, rc);
            pad = 0;
        }
        s->seg_off += pad;
        struct sdr_stage *st = NULL;
        if (stage && (st = malloc(sizeof *st))) {
            *st = (struct sdr_stage){
                .seg = s->seg_id, .pos = s->seg_off, .len = n, .data = stage_alloc(n)};
            if (!st->data || (rc = sdr__stages_push(&s->staged, st))) {
                free(st->data);
                free(st);
                st = NULL; /* written at put instead */
            } else {
                s->staged_bytes += n;
            }
        }
        size_t at = 0;
        for (int i = 0; i < niov; at += iov[i].iov_len, i++) {
            if (!iov[i].iov_len)
                continue;
            if (st) {
                memcpy(st->data + at, iov[i].iov_base, iov[i].iov_len);
                continue;
            }
            ssize_t w = s->io->pwrite(s->io->ctx, s->seg_fd, iov[i].iov_base,
                                      iov[i].iov_len, s->seg_off + at);
            if (w < 0 || (size_t)w != iov[i].iov_len)
                return sdr__fail(s, w < 0 ? (int)w : -EIO);
        }
        b.seg = s->seg_id;
        b.pos = s->seg_off;
        b.segrec = s->seg_rec;
        s->seg_off += n;
        uint64_t tail = dio ? direct_pad(s->seg_off) : 0;
        s->seg_off += tail;
        sdr__w64(s, s->seg_rec + SF(size),
                 sdr__rd64(s, s->seg_rec + SF(size)) + pad + n + tail);
        sdr__w64(s, s->seg_rec + SF(live), sdr__rd64(s, s->seg_rec + SF(live)) + n);
        s->txn_blobs = 1;
    }
    sdr__raw_write(s, d, &b, sizeof b);
    sdr__w64(s, offsetof(struct sdr_sb, blob_bytes), sdr__sb(s)->blob_bytes + n);
    if (s->txn_err)
        return s->txn_err;
    *blob = d;
    return 0;
}

TERN_API int sdr_blob_put(sdr *s, const void *src, size_t n, sdr_off *blob)
{
    struct iovec v = {(void *)src, n};
    return sdr_blob_putv(s, &v, 1, blob);
}

static int blob_get(const sdr *s, sdr_off d, struct blobd *b)
{
    uint64_t usable;
    if (sdr__obj_ok(s, d, &usable) || usable < sizeof *b)
        return -EINVAL;
    memcpy(b, s->heap + d, sizeof *b);
    return b->magic == BLOB_MAGIC ? 0 : -EINVAL;
}

TERN_API int sdr_blob_len(const sdr *s, sdr_off blob, uint64_t *len)
{
    struct blobd b;
    int rc = blob_get(s, blob, &b);
    if (rc == 0)
        *len = b.len;
    return rc;
}

/* The staged copy of the blob at seg:pos, if it has one (newest last). */
static struct sdr_stage *stage_find(const sdr *s, uint64_t seg, uint64_t pos,
                                    uint64_t len)
{
    if (len < STAGE_MIN)
        return NULL;
    for (size_t i = s->staged.n; i-- > 0;) {
        struct sdr_stage *st = s->staged.v[i];
        if (st->seg == seg && st->pos == pos)
            return st;
    }
    return NULL;
}

/* Copies from a staged blob's bytes if the helper has not let them go
 * (it does once they are in the file): 1, or 0 to read the file. */
static int stage_copy(sdr *s, struct sdr_stage *st, uint64_t pos, void *dst, size_t n)
{
    spare_lock(s);
    int ok = st->data != NULL;
    if (ok)
        memcpy(dst, st->data + pos, n);
    spare_unlock(s);
    return ok;
}

TERN_API int sdr_blob_read(sdr *s, sdr_off blob, uint64_t pos, void *dst, size_t n)
{
    struct sdr_stage *st;
    struct blobd b;
    int rc = blob_get(s, blob, &b);
    if (rc)
        return rc;
    if (pos > b.len || n > b.len - pos)
        return -EINVAL;
    if (b.seg == 0) {
        uint64_t usable;
        if (sdr__obj_ok(s, b.pos, &usable) || usable < b.len)
            return TERN_ECORRUPT;
        memcpy(dst, s->heap + b.pos + pos, n);
    } else if ((st = stage_find(s, b.seg, b.pos, b.len)) &&
               stage_copy(s, st, pos, dst, n)) {
        return 0; /* the bytes put, still in memory: nothing to check them against */
    } else {
        char path[4200];
        int fd = b.seg == s->seg_id ? s->seg_fd : -1, own = 0;
        if (fd < 0) {
            if ((rc = sdr__path(s, path, sizeof path, "blob", b.seg)))
                return rc;
            if ((fd = s->io->open(s->io->ctx, path, 0)) < 0)
                return fd == -ENOENT ? TERN_ECORRUPT : fd;
            own = 1;
        }
        uint64_t at;
        if (tern_ckd_add(&at, b.pos, pos)) { /* a damaged blob record */
            if (own)
                s->io->close(s->io->ctx, fd);
            return TERN_ECORRUPT;
        }
        ssize_t r = s->io->pread(s->io->ctx, fd, dst, n, at);
        if (own)
            s->io->close(s->io->ctx, fd);
        if (r < 0)
            return (int)r;
        if ((size_t)r != n)
            return TERN_ECORRUPT;
    }
    /* Whole-blob reads are checked against the CRC taken when it was put. */
    if (pos == 0 && n == b.len && !(b.pad & BLOB_NOCRC) &&
        tern_crc32c(0, dst, n) != b.crc)
        return TERN_ECORRUPT;
    return 0;
}

TERN_API int sdr_blob_peek(const sdr *s, sdr_off blob, const void **p, size_t *n)
{
    struct blobd b;
    int rc = blob_get(s, blob, &b);
    if (rc)
        return rc;
    if (b.seg != 0)
        return -ENOTSUP;
    uint64_t usable;
    if (sdr__obj_ok(s, b.pos, &usable) || usable < b.len)
        return TERN_ECORRUPT;
    *p = s->heap + b.pos;
    *n = b.len;
    return 0;
}

TERN_API int sdr_blob_free(sdr *s, sdr_off blob)
{
    struct blobd b;
    int rc;
    if (!s->in_txn)
        return TERN_ENOTXN;
    if (s->txn_err)
        return s->txn_err;
    if ((rc = blob_get(s, blob, &b)))
        return rc;
    sdr__w64(s, blob + BF(magic), 0);
    if ((rc = sdr__free(s, blob)))
        return rc;
    sdr__w64(s, offsetof(struct sdr_sb, blob_bytes), sdr__sb(s)->blob_bytes - b.len);
    if (b.seg == 0)
        return sdr__free(s, b.pos);
    if (!seg_valid(s, b.segrec, b.seg))
        return sdr__fail(s, TERN_ECORRUPT);
    struct sdr_stage *st = stage_find(s, b.seg, b.pos, b.len);
    if (st && (rc = sdr__stages_push(&s->txn_drop, st)))
        return sdr__fail(s, rc);
    uint64_t live = sdr__rd64(s, b.segrec + SF(live)) - b.len;
    sdr__w64(s, b.segrec + SF(live), live);
    if (live == 0 && b.seg == s->seg_id && s->seg_off >= SEG_MAX && (rc = seg_finish(s)))
        return sdr__fail(s, rc);
    /* (the current segment emptied and full — typically one blob larger
     * than a segment — takes no more blobs: finished now, so that its file
     * goes rather than waiting for the next segment to start) */
    if (live == 0 && b.seg != s->seg_id) {
        /* Last blob of a finished segment. Its file goes only once a
         * checkpoint image records it dead: every recovery starts from an
         * image, so no recoverable state can still need the file. */
        sdr__w64(s, b.segrec + SF(magic), SEG_DEAD);
        /* Counted so that a checkpoint comes soon enough to give the space
         * back (a cancelled free only makes it come a little earlier). */
        uint64_t size = sdr__rd64(s, b.segrec + SF(size));
        s->dead_bytes += size;
        if (size > SEG_MAX)
            s->dead_over += size; /* no spare: the next checkpoint comes now */
    }
    return s->txn_err;
}

int sdr__blob_dead_ids(sdr *s, uint64_t **ids, size_t *n)
{
    uint64_t segs = sdr__sb(s)->blob_segs, *v = NULL;
    size_t k = 0, cap = 0;
    *ids = NULL;
    *n = 0;
    if (!segs)
        return 0;
    for (sdr_off e = sdr_list_first(s, segs); e; e = sdr_list_next(s, e)) {
        sdr_off rec = sdr_list_data(s, e);
        if (!is_seg(s, rec) || sdr__rd64(s, rec + SF(magic)) != SEG_DEAD)
            continue;
        if (k == cap) {
            size_t nc = cap ? cap * 2 : 8;
            uint64_t *p = realloc(v, nc * sizeof *p);
            if (!p) {
                free(v);
                return -ENOMEM;
            }
            v = p;
            cap = nc;
        }
        v[k++] = sdr__rd64(s, rec + SF(id));
    }
    *ids = v;
    *n = k;
    return 0;
}

/* At open: no segment is current. Dead and empty segments are removed, and
 * so are files of segments whose creating transaction never committed (ids
 * from next_seg up). */
int sdr__blob_open(sdr *s)
{
    char path[4200];
    int rc;
    s->seg_fd = -1;
    /* Spares left by the last run are taken as they are. */
    s->spare_ready = s->spare_busy = 0;
    for (uint64_t k = 0; k < SDR_SPARE_MAX; k++)
        if (!sdr__path(s, path, sizeof path, "spare", k + 1) &&
            s->io->exists(s->io->ctx, path) == 0)
            s->spare_ready |= 1u << k;
    if (sdr__sb(s)->blob_segs) {
        if ((rc = sdr_txn_begin(s)))
            return rc;
        if ((rc = segs_reap(s, 1)) || (rc = s->io->sync_dir(s->io->ctx, s->dir))) {
            sdr_txn_cancel(s);
            return rc;
        }
        if ((rc = sdr_txn_end(s)))
            return rc;
    }
    for (uint64_t id = sdr__sb(s)->next_seg;; id++)
        if (sdr__path(s, path, sizeof path, "blob", id) ||
            s->io->unlink(s->io->ctx, path))
            break;
    return 0;
}

int sdr__stages_push(struct sdr_stages *l, struct sdr_stage *st)
{
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 64;
        struct sdr_stage **v = realloc(l->v, nc * sizeof *v);
        if (!v)
            return -ENOMEM;
        l->v = v;
        l->cap = nc;
    }
    l->v[l->n++] = st;
    return 0;
}

/* Written blobs still live keep their bytes, the newest first, up to
 * KEEP_MAX in all: a bundle read after its flush (queued behind a link's
 * window, say) is then a copy, not a disk read (the write passed the page
 * cache by). */
#define KEEP_MAX (64u << 20)

/* Forgets staged blobs the helper is done with and nobody needs the bytes
 * of (under its lock, or with it stopped); with all_ too the ones still open
 * or queued (at close). */
static void stages_reap(sdr *s, int all_)
{
    size_t n = s->staged.n, keep = n;
    uint64_t kept = 0;
    for (size_t i = n; i-- > 0;) {
        struct sdr_stage *st = s->staged.v[i];
        int drop = all_;
        if (st->released && !drop) {
            drop = st->gone || st->dead || !st->data || kept + st->len > KEEP_MAX;
            if (!drop)
                kept += st->len;
        }
        if (drop) {
            s->staged_bytes -= st->len;
            free(st->data);
            free(st);
        } else {
            s->staged.v[--keep] = st;
        }
    }
    if (n > keep) /* v is NULL while nothing was ever staged */
        memmove(s->staged.v, s->staged.v + keep, (n - keep) * sizeof *s->staged.v);
    s->staged.n = n - keep;
}

/* A transaction commits under group commit (the helper's lock held, s->seq
 * its number): its staged blobs join the batch, and the fresh blobs it freed
 * whose batch the helper has not taken yet need never be written. */
void sdr__blob_commit_locked(sdr *s)
{
    for (size_t i = 0; i < s->txn_drop.n; i++) {
        struct sdr_stage *st = s->txn_drop.v[i];
        if (!st->written && (st->seq == 0 || st->seq > s->taken_seq) && !st->dead) {
            st->dead = 1;
            s->unwritten += st->len;
        }
        st->gone = 1; /* its bytes are kept for no one */
    }
    s->txn_drop.n = 0;
    for (size_t i = s->staged.n; i-- > 0 && s->staged.v[i]->seq == 0;) {
        struct sdr_stage *st = s->staged.v[i];
        st->seq = s->seq;
        if (st->written) {
            st->released = 1;
        } else if (sdr__stages_push(&s->pend_stage, st)) {
            /* No room to queue it: write it here and now. */
            ssize_t w = s->io->pwrite(s->io->ctx, s->seg_fd, st->data, st->len, st->pos);
            if ((w < 0 || (uint64_t)w != st->len) && !s->io_err)
                s->io_err = w < 0 ? (int)w : -EIO;
            st->written = st->released = 1;
        }
    }
    stages_reap(s, 0);
}

/* Between transactions: lets go of the bytes of blobs the helper has
 * written since the last commit, beyond what is kept, so that a store gone
 * idle after a burst does not hold them. */
void sdr__blob_idle(sdr *s)
{
    if (!s->staged.n)
        return;
    spare_lock(s);
    stages_reap(s, 0);
    spare_unlock(s);
}

/* A transaction is cancelled: the blobs it put are forgotten. */
void sdr__blob_cancel(sdr *s)
{
    s->txn_drop.n = 0;
    while (s->staged.n && s->staged.v[s->staged.n - 1]->seq == 0) {
        struct sdr_stage *st = s->staged.v[--s->staged.n];
        s->staged_bytes -= st->len;
        free(st->data);
        free(st);
    }
}

void sdr__blob_close(sdr *s)
{
    seg_drop(s);
    for (int r = 0; r < s->nretired; r++)
        s->io->close(s->io->ctx, s->retired[r].fd);
    s->nretired = 0;
    stages_reap(s, 1);
    free(s->staged.v);
    free(s->txn_drop.v);
    free(s->pend_stage.v);
    memset(&s->staged, 0, sizeof s->staged);
    memset(&s->txn_drop, 0, sizeof s->txn_drop);
    memset(&s->pend_stage, 0, sizeof s->pend_stage);
}
