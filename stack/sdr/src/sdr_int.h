/* libsdr internals shared by its source files (not installed). */
#ifndef TERN_SDR_INT_H
#define TERN_SDR_INT_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "sdr.h"
#include "sdr_io.h"

/* ---- heap layout --------------------------------------------------------
 * offset 0: the superblock (below); then blocks to the end of the heap.
 * Every block starts with a 32-byte header; an object's address is the byte
 * after its header. Allocator state lives only in headers and the superblock,
 * never inside objects, and changes through the same logged writes as user
 * data, so allocation is transactional for free. */
#define SDR_ALIGN     32u
#define SDR_HDR       32u
#define SDR_MIN_BLOCK 64u
#define SDR_NCLASSES  256
#define SDR_INUSE     0x1u
#define SDR_BULKF     0x2u
#define SDR_FLAGMASK  0x1fu
#define SDR_MAGIC     UINT64_C(0x5445524e48454150) /* "TERNHEAP" */

struct sdr_sb {
    uint64_t magic;
    uint64_t heap_size; /* usable heap (multiple of SDR_ALIGN) */
    uint64_t in_use;    /* bytes in allocated blocks */
    uint64_t in_use_bulk;
    uint64_t objects;
    uint64_t catalog;    /* list of catalog entries, or 0 */
    uint64_t blob_segs;  /* list of blob segment records, or 0 */
    uint64_t next_seg;   /* id of the next blob segment file */
    uint64_t blob_bytes; /* live bytes in blobs */
    uint64_t spare[7];
    uint64_t nonempty[SDR_NCLASSES / 64];
    uint64_t heads[SDR_NCLASSES];
};

struct sdr_blk {
    uint64_t size_flags;
    uint64_t prev_size;
    uint64_t next_free;
    uint64_t prev_free;
};

#define SDR_SB_SIZE ((sizeof(struct sdr_sb) + SDR_ALIGN - 1) & ~(uint64_t)(SDR_ALIGN - 1))

/* A write range remembered for the redo log. */
struct sdr_range {
    uint64_t off;
    uint64_t len;
};

/* A large blob's bytes held in memory from its put until the helper writes
 * them with the batch of its commit, or never if a commit in the same batch
 * frees it. Identified by segment and offset (segments are append-only). */
struct sdr_stage {
    uint64_t seg, pos, len;
    uint64_t seq; /* the commit that put it; 0 while that is open */
    int dead;     /* freed before the helper took it: never written */
    int written;  /* written directly (its segment was closed) */
    int released; /* the helper is done with it: in the file, or dead */
    int gone;     /* its blob was freed by a committed transaction */
    /* the bytes (page aligned, whole pages); the helper frees those of a
     * dead stage (under its lock) once it released it; the loop keeps
     * those of written live blobs up to a bound (blob.c, KEEP_MAX), so an
     * idle store holds at most that: NULL then, and reads go to the file */
    uint8_t *data;
};

struct sdr_stages {
    struct sdr_stage **v;
    size_t n, cap;
};

struct sdr_buf {
    uint8_t *p;
    size_t len, cap;
};

#define SDR_RETIRED_MAX 8
/* Files of emptied blob segments kept for later segments (blob.c). */
#define SDR_SPARE_MAX 16

struct sdr {
    char name[40];
    char dir[4096];
    int mode, commit;
    unsigned group_ms, reserve_pct, flags;
    const sdr_io *io;

    uint8_t *heap;
    uint64_t heap_size;
    uint64_t *starts; /* bitmap: a block header starts at this 32-byte slot */

    /* transaction */
    int in_txn;
    int txn_err;         /* sticky failure inside the transaction */
    struct sdr_buf undo; /* [off u64][len u32][bytes] entries */
    struct sdr_range *ranges;
    size_t nranges, capranges;
    uint64_t *flips; /* start-bitmap slots flipped in this transaction */
    size_t nflips, capflips;
    int txn_blobs; /* blob bytes written in this transaction */
    /* Group commit: large blobs held in memory (oldest first) until the
     * loop thread sees the helper released them, and those of them freed in
     * this transaction. */
    struct sdr_stages staged, txn_drop;
    uint64_t staged_bytes;
    uint64_t unwritten; /* bytes of blobs freed before they were written */
    /* Staged blobs are placed on SDR_IO_DIRECT_ALIGN boundaries and the
     * helper writes them past the page cache (io->open_direct); cleared for
     * good (atomically: the helper clears it) once the file system refuses. */
    _Atomic int direct;
    _Atomic uint64_t direct_bytes; /* blob bytes the helper wrote that way */

    /* durable state */
    uint64_t seq; /* last committed transaction */
    _Atomic uint64_t durable_seq;
    int durable_efd; /* eventfd the helper signals as durable_seq advances */
    uint64_t commits;
    uint64_t log_gen;
    int log_fd;
    uint64_t log_off;        /* append position in the current log */
    uint64_t log_since_ckpt; /* bytes logged since the last checkpoint */
    uint64_t ckpt_threshold;
    struct sdr_buf rec; /* record being built at commit */

    /* blob segment being appended */
    uint64_t seg_id;
    uint64_t seg_rec; /* heap object describing it, or 0 */
    int seg_fd;
    uint64_t seg_off;

    /* the helper threads: group commit, and checkpoints (separate, so that
     * writing an image never holds up commits) */
    pthread_t thread;      /* writes and syncs queued commits */
    pthread_t ckpt_thread; /* writes checkpoint images */
    int thread_running;
    pthread_mutex_t mu;
    pthread_cond_t cv_work, cv_ckpt, cv_done;
    struct sdr_buf pend;    /* encoded records waiting for the log */
    uint64_t pend_seq;      /* highest seq in pend */
    uint64_t pend_since_ns; /* when the oldest commit in pend was queued */
    uint64_t late_flushes;
    int pend_blob;                /* pend covers blob data: sync the segment first */
    struct sdr_stages pend_stage; /* staged blobs of the commits in pend */
    /* Segments the loop has moved on from, still the helper's to write and
     * sync until the commits that may use them are durable. */
    struct sdr_retired {
        uint64_t id, until_seq;
        int fd;
    } retired[SDR_RETIRED_MAX];
    int nretired;
    int dir_dirty; /* a segment file was created: sync the directory */
    /* spare segment files <name>.spare.<k+1>: present and free to take, or
     * being renamed (both under mu once the helpers run) */
    uint32_t spare_ready, spare_busy;
    uint64_t taken_seq; /* highest seq the helper has taken */
    int batch_fd;       /* log the helper's batch in progress goes to, or -1 */
    int log_old_fd;     /* a log generation left to the helper to close, or -1 */
    int next_log_fd;    /* the next generation's log, created ahead, or -1 */
    uint64_t gather_ns; /* how long a batch may gather when idle */
    int flush_waiters;  /* threads in sdr__durable_flush */
    int stop;
    int io_err;    /* sticky I/O failure of the helper */
    uint8_t *snap; /* checkpoint snapshot handed to the helper */
    uint64_t snap_seq, snap_gen;
    uint64_t snap_len;   /* bytes of the heap in snap; the rest is zero */
    uint8_t *snap_buf;   /* snap's memory, kept from one checkpoint to the next */
    uint64_t hwm;        /* heap bytes from hwm on are all zero */
    uint64_t *snap_dead; /* emptied blob segments to unlink once the image is safe */
    uint64_t dead_bytes; /* blob bytes in segments emptied since the last checkpoint */
    uint64_t dead_over;  /* of those, in segments larger than SEG_MAX */
    size_t snap_ndead;
    int ckpt_busy;
};

static inline struct sdr_sb *sdr__sb(const sdr *s)
{
    return (struct sdr_sb *)s->heap;
}

static inline uint64_t sdr__rd64(const sdr *s, uint64_t off)
{
    uint64_t v;
    memcpy(&v, s->heap + off, 8);
    return v;
}

int sdr__buf_reserve(struct sdr_buf *b, size_t more);
/* Records old bytes (undo) and the range (redo), then writes. No checks. */
void sdr__raw_write(sdr *s, uint64_t off, const void *src, size_t n);
void sdr__w64(sdr *s, uint64_t off, uint64_t v);
/* Fails the open transaction with rc (returned for convenience). */
int sdr__fail(sdr *s, int rc);

/* heap.c */
void sdr__heap_format(sdr *s);
void sdr__starts_rebuild(sdr *s);
int sdr__alloc(sdr *s, size_t size, int cls, uint64_t *out);
int sdr__free(sdr *s, uint64_t off);
int sdr__obj_ok(const sdr *s, uint64_t off, uint64_t *usable);
int sdr__obj_containing(const sdr *s, uint64_t off, uint64_t n);
void sdr__flip_undo(sdr *s);
int sdr__heap_check(const sdr *s, char *why, size_t whylen);
uint64_t sdr__largest_free(const sdr *s);

/* list.c: structural check of one list (links, length, membership). */
int sdr__list_check(const sdr *s, uint64_t list, char *why, size_t whylen);

/* durable.c */
int sdr__durable_open(sdr *s, char *why, size_t whylen);
int sdr__durable_commit(sdr *s);
int sdr__durable_flush(sdr *s);
void sdr__durable_close(sdr *s);
int sdr__path(const sdr *s, char *buf, size_t cap, const char *kind, uint64_t n);

/* blob.c */
int sdr__blob_open(sdr *s);
int sdr__stages_push(struct sdr_stages *l, struct sdr_stage *st);
void sdr__blob_commit_locked(sdr *s);
void sdr__blob_cancel(sdr *s);
void sdr__blob_idle(sdr *s);
/* Ids of blob segments marked dead (emptied) in the current heap. */
int sdr__blob_dead_ids(sdr *s, uint64_t **ids, size_t *n);
/* Disposes of the file of segment id, which no recovery needs any more:
 * kept as a spare if a slot is free, else removed. */
void sdr__seg_file_done(sdr *s, uint64_t id);
void sdr__blob_close(sdr *s);

#endif
