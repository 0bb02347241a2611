/* The bundle protocol agent: storage, dispatch, delivery, forwarding,
 * expiry, status reports, fragmentation and reassembly (RFC 9171 section 5).
 *
 * Store layout: catalog "bp.bundles" names a list; each element points at a
 * record (rec_hdr, then the encoded bundle, or a blob holding it, or — for a
 * bundle made from a file by reference — rec_file, the bytes before and after
 * the file's range and the file's path). The store
 * holds the bytes as received (or as made here); what changes hop by hop
 * (bundle age, hop count, previous node) is rewritten into the copy handed to
 * a convergence layer. Queues, indexes and timers live in memory and are
 * rebuilt from the store by bp_agent_resume().
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent_int.h"
#include "imc_int.h"
#include "tern/ckd.h"
#include "tern/clock.h"

#define REC_MAGIC    0x31425042u /* "BPB1" */
#define CATALOG_NAME "bp.bundles"
#define ION_COS_BLOCK                                                                    \
    193               /* ION's class-of-service block: [flags, class, ordinal, label] */
#define NPRIO_LISTS 2 /* bulk, standard; expedited has one list per ordinal */
/* A bundle's blocks, const or not as the bundle is (bp_bundle_blocks()). */
#define BLK(b) ((b)->ext ? (b)->ext : (b)->blocks)

typedef struct rec_hdr {
    uint32_t magic;
    uint32_t blob; /* REC_* */
    uint64_t len;
    uint64_t arrival_ms;
    uint64_t blob_off;
} rec_hdr;

enum { REC_INLINE = 0, REC_BLOB = 1, REC_FILE = 2 };
#define FILE_PATH_MAX 4096

/* After rec_hdr in a REC_FILE record; then pre_len bytes (the encoded bundle
 * up to the file's range), post_len bytes (after it) and the path. */
typedef struct rec_file {
    uint64_t dev, ino, size, mtime_ns; /* the file as it was referenced */
    uint64_t off, flen;                /* its range in the payload */
    uint32_t pre_len, post_len, path_len, pad;
} rec_file;

/* An open file bundles refer to (one descriptor per file, however many).
 * One no bundle refers to stays open a while (FILE_IDLE_MAX of them): a
 * sender's bundles often all leave before its next ones come. */
typedef struct bp__file {
    struct bp__file *next;
    uint64_t dev, ino;
    int fd;
    uint64_t refs; /* bundles with bn->file == this */
    bool synced;   /* fdatasync'd when it was as below */
    uint64_t synced_size, synced_mtime;
    char *path; /* as found when first referenced by a send (else NULL) */
} bp__file;
#define FILE_IDLE_MAX 4

typedef struct bp__ep {
    bp_eid eid;
    int rule;
    bool open;
    bp__bq q;
} bp__ep;

typedef struct bp__fragset {
    uint64_t key;
    uint64_t total;
    bp__bq q; /* fragments sorted by offset */
} bp__fragset;

struct bp_outduct {
    bp_agent *a;
    const bp_cla_ops *ops;
    void *cla, *duct;
    char proto[16], name[64];
    size_t max_payload;
    size_t max_bundle;   /* largest encoded bundle its medium carries (0: not known) */
    char limit_why[160]; /* what sets max_bundle, in words */
    bool up, busy, pumping, again, closing, stalled;
    tern_timer retry; /* after a failure reported from inside send */
    /* contact-driven transmission (bp_outduct_set_gate) */
    int gate;
    uint64_t gate_rate; /* bytes/s, 0: unthrottled */
    double tokens;      /* bytes that may go now; negative: owed */
    uint64_t tok_ns;    /* loop time tokens were last counted */
    uint64_t gate_end;  /* loop time the gate closes, 0: not known */
    tern_timer gate_tm; /* wakes the duct when its debt is paid */
    uint64_t bytes_out; /* handed to the CLA, ever */
    bp__bq q[NPRIO_LISTS];
    bp__bq exq[256];
    uint64_t exbits[4];
    size_t nqueued;
};

typedef struct plan {
    bool dtn;
    uint64_t node;
    char name[BP_DTN_SSP_MAX + 1];
    char proto[16], duct[64];
} plan;

typedef struct exit_rule {
    uint64_t first, last, via;
} exit_rule;

typedef struct cla_reg {
    const bp_cla_ops *ops;
    void *cla;
} cla_reg;

struct bp_agent {
    tern_loop *loop;
    tern_log *lg;
    sdr *store;
    bp_agent_host host;
    uint64_t node;
    char dtn_name[BP_DTN_SSP_MAX + 1];
    size_t dtn_name_len;
    int crc_type;
    size_t small_max;
    bool status_reports;
    bool creating; /* in bp_agent_send: its caller hears what happens from its result */
    bool resumed;  /* bp_agent_resume has run: petitions go out */
    bool imc_on;   /* takes part in multicast: announced itself (group 0) */
    bp__imc imc;   /* multicast groups (imc.c) */
    tern_timer imc_retry; /* group bundles held for want of room for their copies */
    sdr_off list;

    cla_reg *clas;
    size_t nclas;
    bp_outduct **ducts;
    size_t nducts;
    bp__ep **eps;
    size_t neps;
    plan *plans;
    size_t nplans;
    exit_rule *exits;
    size_t nexits;
    bp_router_fn router;
    void *router_ctx;
    bp_router_release_fn router_release;
    void *router_release_ctx;

    bp__bq limbo, pending;
    bp__bq reflow;    /* bundles back from a closing outduct */
    bp__map inflight; /* xmit id -> bundle */
    bp__map lent;     /* lend token -> bundle */
    uint64_t xmit_seq;
    bp__map fragsets;

    /* duplicate suppression: a set of fingerprints, oldest forgotten first */
    bp__map seen;
    uint64_t *seen_ring;
    size_t seen_max, seen_head, seen_n;

    /* expiry: a min-heap on expire_ms, one timer for its top */
    bp__bnd **heap;
    size_t nheap, heap_cap;
    tern_timer expiry;

    uint64_t last_ctime, last_seq;
    /* Large buffers are reused: fresh ones cost a page fault per 4 KiB. */
    uint8_t *scratch; /* wire_copy's and bp_agent_recv's view of a blob */
    size_t scratch_cap;
    bool scratch_trim; /* a deferred call frees a scratch above KEEP_MAX */
    struct xpool {
        uint8_t *buf;
        size_t cap;
    } pool[8];
    size_t npool, pool_bytes;
    uint8_t *small[256]; /* transmission buffers of SMALL_XBUF bytes */
    size_t nsmall;
    bp__file *files; /* files REC_FILE bundles refer to */
    bp__bnd *spare;  /* freed bundle records, linked by next */
    size_t nspare;
    tern_log_causes
        why_log; /* malformed inputs, logged at most once per 10 s per cause */
    bp_agent_stats st;

    /* acknowledgements waiting for the store's group commit */
    tern_io durable_io;
    int durable_watch;
    struct dwait {
        uint64_t mark, arg1, arg2;
        bp_durable_cb cb;
        void *ctx;
    } * dwaits;
    size_t ndwaits, capdwaits;
    /* receive claims (bp_agent_receive_claim) not yet durable */
    bp__map claims;
    struct claim *claim_cur; /* the one bundles being admitted join */
    uint64_t claim_seq;
    bool claims_deferred;
};

/* Bundles that came in together, whose sender waits to hear they are safe. */
struct claim {
    uint64_t id;
    size_t pending; /* of them still in the store */
    bool fired, ready;
    bool pinned;         /* some left the store into bundles of other claims: wait
                            for the flush */
    bool open;           /* still taking bundles */
    struct claim *outer; /* the one open before it (claims nest) */
    bp_durable_cb cb;
    void *ctx;
    uint64_t arg1, arg2;
};

static int dispatch(bp_agent *a, bp__bnd *bn, const bp_bundle *b, int front);
static int to_duct(bp_agent *a, bp__bnd *bn, const bp_bundle *b, bp_outduct *od,
                   int front);
static int imc_dispatch(bp_agent *a, bp__bnd *bn, const bp_bundle *b, int front);
static bool imc_briefing(bp_agent *a, bp__bnd *bn, const bp_bundle *b);
static bool too_big_fragment(bp_agent *a, bp_outduct *od, bp__bnd *bn);
static void pump(bp_outduct *od);
static void duct_retry(tern_timer *t, void *arg);

static uint64_t now_ms(const bp_agent *a)
{
    return tern_clock_dtn_ms(tern_loop_clock(a->loop));
}

#define SMALL_XBUF 4096
/* Warm buffers are kept for bundles up to KEEP_MAX, and at most POOL_MAX
 * bytes of them: one huge bundle must not pin its size in the process for
 * good (a fresh buffer that large costs a page fault per 4 KiB once, which
 * is little next to moving the bundle). */
#define KEEP_MAX (64u << 20)
#define POOL_MAX (128u << 20)

/* A transmission buffer of at least n bytes, from the pool if one fits. */
static uint8_t *xbuf_get(bp_agent *a, size_t n)
{
    if (n <= SMALL_XBUF) {
        if (a->nsmall)
            return a->small[--a->nsmall];
        n = SMALL_XBUF;
    }
    for (size_t i = a->npool; i-- > 0;)
        if (a->pool[i].cap >= n) {
            uint8_t *b = a->pool[i].buf;
            a->pool_bytes -= a->pool[i].cap;
            a->pool[i] = a->pool[--a->npool];
            /* the capacity travels in front of the buffer */
            return b;
        }
    uint8_t *b = malloc(n + 16);
    if (!b)
        return NULL;
    memcpy(b, &n, sizeof n);
    return b + 16;
}

static void xbuf_put(bp_agent *a, uint8_t *b)
{
    if (!b)
        return;
    size_t cap;
    memcpy(&cap, b - 16, sizeof cap);
    if (cap == SMALL_XBUF && a->nsmall < sizeof a->small / sizeof *a->small) {
        a->small[a->nsmall++] = b;
        return;
    }
    if (cap >= 65536 && cap <= KEEP_MAX && a->pool_bytes + cap <= POOL_MAX &&
        a->npool < sizeof a->pool / sizeof *a->pool) {
        a->pool[a->npool].buf = b;
        a->pool[a->npool++].cap = cap;
        a->pool_bytes += cap;
        return;
    }
    free(b - 16);
}

/* Deferred (the view lent from it is done with by then): a scratch buffer
 * grown past KEEP_MAX for one huge bundle goes back to the system. */
static void scratch_trim(tern_loop *loop, void *arg)
{
    (void)loop;
    bp_agent *a = arg;
    a->scratch_trim = false;
    if (a->scratch_cap > KEEP_MAX) {
        free(a->scratch);
        a->scratch = NULL;
        a->scratch_cap = 0;
    }
}

/* Logs a malformed input (or another a peer can cause) at most once per 10 s
 * per cause, with the count of the others: a flood of them writes one line
 * per cause per interval. (Once per cause for ever hid a cause that came
 * back, and past 16 causes every one was logged each time.) */
static void log_once(bp_agent *a, const char *what, const char *why)
{
    char cause[256];
    snprintf(cause, sizeof cause, "%s: %s", what, why ? why : "?");
    tern_log_limited(a->lg, tern_log_cause(&a->why_log, cause), tern_loop_now(a->loop),
                     TERN_LOG_WARN, "bp", "%s (counted)", cause);
}

/* ---------------------------------------------------------------- store */

/* Puts a stored record on the bundle list; bn gets where it is. */
static int store_link(bp_agent *a, sdr_off rec, const rec_hdr *h, bp__bnd *bn)
{
    sdr_off elt = 0;
    int rc = sdr_list_insert_last(a->store, a->list, rec, &elt);
    if (rc)
        return rc;
    bn->rec = rec;
    bn->elt = elt;
    bn->len = h->len;
    bn->arrival_ms = h->arrival_ms;
    bn->blob = (uint8_t)h->blob;
    return 0;
}

static int store_put(bp_agent *a, const struct iovec *v, int nv, uint64_t arrival,
                     bp__bnd *bn)
{
    size_t len = 0;
    for (int i = 0; i < nv; i++)
        len += v[i].iov_len;
    rec_hdr h = {.magic = REC_MAGIC, .len = len, .arrival_ms = arrival};
    sdr_off rec = 0, blob = 0;
    int rc;
    if (len > a->small_max) {
        if ((rc = sdr_blob_putv(a->store, v, nv, &blob)))
            return rc;
        h.blob = 1;
        h.blob_off = blob;
        if ((rc = sdr_alloc(a->store, sizeof h, SDR_BULK, &rec)) ||
            (rc = sdr_write(a->store, rec, &h, sizeof h)))
            return rc;
    } else {
        if ((rc = sdr_alloc(a->store, sizeof h + len, SDR_BULK, &rec)) ||
            (rc = sdr_write(a->store, rec, &h, sizeof h)))
            return rc;
        size_t at = sizeof h;
        for (int i = 0; i < nv; at += v[i].iov_len, i++)
            if (v[i].iov_len &&
                (rc = sdr_write(a->store, rec + at, v[i].iov_base, v[i].iov_len)))
                return rc;
    }
    return store_link(a, rec, &h, bn);
}

/* ------------------------------------------------- payloads kept in files */

static uint64_t stat_mtime_ns(const struct stat *st)
{
    return (uint64_t)st->st_mtim.tv_sec * 1000000000u + (uint64_t)st->st_mtim.tv_nsec;
}

static void file_close(bp__file *f)
{
    close(f->fd);
    free(f->path);
    free(f);
}

/* Drops a reference; beyond FILE_IDLE_MAX unreferenced files, the one
 * unreferenced longest (new files go first in the list) is closed. */
static void file_put(bp_agent *a, bp__file *f)
{
    if (!f || --f->refs)
        return;
    size_t idle = 0;
    bp__file **last = NULL;
    for (bp__file **pp = &a->files; *pp; pp = &(*pp)->next)
        if ((*pp)->refs == 0) {
            idle++;
            last = pp;
        }
    if (idle > FILE_IDLE_MAX) {
        bp__file *old = *last;
        *last = old->next;
        file_close(old);
    }
}

static bp__file *file_find(bp_agent *a, uint64_t dev, uint64_t ino)
{
    for (bp__file *f = a->files; f; f = f->next)
        if (f->dev == dev && f->ino == ino)
            return f;
    return NULL;
}

/* The open file with this identity: one already open, else fd (duplicated)
 * when >= 0, else path opened and checked to be that file. Takes a ref. */
static int file_get(bp_agent *a, uint64_t dev, uint64_t ino, int fd, const char *path,
                    bp__file **out)
{
    bp__file *f = file_find(a, dev, ino);
    if (f) {
        f->refs++;
        *out = f;
        return 0;
    }
    int nfd = fd >= 0 ? fcntl(fd, F_DUPFD_CLOEXEC, 0)
                      : open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (nfd < 0)
        return -errno;
    struct stat st;
    if (fstat(nfd, &st) || !S_ISREG(st.st_mode) || (uint64_t)st.st_dev != dev ||
        (uint64_t)st.st_ino != ino) {
        close(nfd); /* the path names another file now */
        return -ESTALE;
    }
    f = calloc(1, sizeof *f);
    if (!f || (fd >= 0 && path && !(f->path = strdup(path)))) {
        free(f);
        close(nfd);
        return -ENOMEM;
    }
    f->next = a->files;
    f->dev = dev;
    f->ino = ino;
    f->fd = nfd;
    f->refs = 1;
    a->files = f;
    *out = f;
    return 0;
}

/* Reads the stored bytes of a REC_FILE bundle into p (bn->len of them):
 * the bytes before the file's range, the range read from the file, those
 * after it. The file must still be what it was when referenced. */
static int file_load(bp_agent *a, bp__bnd *bn, uint8_t *p)
{
    rec_file fr;
    int rc = sdr_read(a->store, bn->rec + sizeof(rec_hdr), &fr, sizeof fr);
    if (rc)
        return rc;
    uint64_t total;
    if (fr.path_len == 0 || fr.path_len > FILE_PATH_MAX ||
        tern_ckd_add(&total, (uint64_t)fr.pre_len + fr.post_len, fr.flen) ||
        total != bn->len)
        return TERN_ECORRUPT;
    sdr_off at = bn->rec + sizeof(rec_hdr) + sizeof fr;
    const uint8_t *pre =
        sdr_peek(a->store, at, (size_t)fr.pre_len + fr.post_len + fr.path_len);
    if (!pre)
        return TERN_ECORRUPT;
    if (!bn->file) {
        char path[FILE_PATH_MAX + 1];
        memcpy(path, pre + fr.pre_len + fr.post_len, fr.path_len);
        path[fr.path_len] = 0;
        bp__file *f;
        if ((rc = file_get(a, fr.dev, fr.ino, -1, path, &f)))
            goto lost;
        ((bp__bnd *)bn)->file = f;
    }
    struct stat st;
    if (fstat(bn->file->fd, &st)) {
        rc = -errno;
        goto lost;
    }
    if ((uint64_t)st.st_size != fr.size || stat_mtime_ns(&st) != fr.mtime_ns) {
        rc = -ESTALE; /* changed since: its bytes are not the bundle's any more */
        goto lost;
    }
    memcpy(p, pre, fr.pre_len);
    uint8_t *d = p + fr.pre_len;
    for (uint64_t got = 0; got < fr.flen;) {
        ssize_t n =
            pread(bn->file->fd, d + got, (size_t)(fr.flen - got), (off_t)(fr.off + got));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            rc = n < 0 ? -errno : -ESTALE;
            goto lost;
        }
        got += (uint64_t)n;
    }
    memcpy(d + fr.flen, pre + fr.pre_len, fr.post_len);
    return 0;
lost:
    a->st.file_refs_lost++;
    return rc;
}

/* Stores a bundle whose bytes are pre, the file range, post: a record with
 * the file's identity and path (the file itself is f, already held). */
static int store_put_file(bp_agent *a, const struct iovec *pre, int npre,
                          const struct iovec *post, const rec_file *fr0, const char *path,
                          uint64_t arrival, bp__bnd *bn)
{
    rec_file fr = *fr0;
    size_t plen = 0;
    for (int i = 0; i < npre; i++)
        plen += pre[i].iov_len;
    fr.pre_len = (uint32_t)plen;
    fr.post_len = (uint32_t)post->iov_len;
    fr.path_len = (uint32_t)strlen(path);
    uint64_t len = plen + post->iov_len + fr.flen;
    rec_hdr h = {.magic = REC_MAGIC, .blob = REC_FILE, .len = len, .arrival_ms = arrival};
    size_t rlen = sizeof h + sizeof fr + plen + post->iov_len + fr.path_len;
    sdr_off rec = 0;
    int rc;
    if ((rc = sdr_alloc(a->store, rlen, SDR_BULK, &rec)) ||
        (rc = sdr_write(a->store, rec, &h, sizeof h)) ||
        (rc = sdr_write(a->store, rec + sizeof h, &fr, sizeof fr)))
        return rc;
    sdr_off at = rec + sizeof h + sizeof fr;
    for (int i = 0; i < npre; at += pre[i].iov_len, i++)
        if (pre[i].iov_len &&
            (rc = sdr_write(a->store, at, pre[i].iov_base, pre[i].iov_len)))
            return rc;
    if ((post->iov_len &&
         (rc = sdr_write(a->store, at, post->iov_base, post->iov_len))) ||
        (rc = sdr_write(a->store, at + post->iov_len, path, fr.path_len)))
        return rc;
    return store_link(a, rec, &h, bn);
}

static int store_del(bp_agent *a, bp__bnd *bn)
{
    int rc = sdr_list_delete(a->store, bn->elt, NULL);
    if (!rc && bn->blob == REC_BLOB) {
        rec_hdr h;
        rc = sdr_read(a->store, bn->rec, &h, sizeof h);
        if (!rc)
            rc = sdr_blob_free(a->store, h.blob_off);
    }
    if (!rc)
        rc = sdr_free(a->store, bn->rec);
    return rc;
}

/* The stored bytes of a bundle: a view into the heap, or a copy of a blob —
 * into a->scratch if use_scratch (for callers that call nothing that could
 * load again before they are done), else malloc'd (*owned then set). */
static int load_into(bp_agent *a, const bp__bnd *bn, const uint8_t **bytes,
                     uint8_t **owned, bool use_scratch)
{
    *owned = NULL;
    if (bn->blob == REC_INLINE) {
        *bytes = sdr_peek(a->store, bn->rec + sizeof(rec_hdr), bn->len);
        return *bytes ? 0 : TERN_ECORRUPT;
    }
    rec_hdr h;
    int rc = sdr_read(a->store, bn->rec, &h, sizeof h);
    if (rc)
        return rc;
    if (bn->len > SIZE_MAX - 1)
        return TERN_ECORRUPT;
    uint8_t *p;
    if (use_scratch) {
        if (a->scratch_cap < bn->len) {
            free(a->scratch);
            a->scratch_cap = 0;
            if (!(a->scratch = malloc(bn->len)))
                return -ENOMEM;
            a->scratch_cap = bn->len;
            if (bn->len > KEEP_MAX && !a->scratch_trim &&
                tern_loop_defer(a->loop, scratch_trim, a) == 0)
                a->scratch_trim = true;
        }
        p = a->scratch;
    } else if (!(p = malloc(bn->len ? bn->len : 1))) {
        return -ENOMEM;
    }
    rc = bn->blob == REC_FILE ? file_load(a, (bp__bnd *)bn, p)
                              : sdr_blob_read(a->store, h.blob_off, 0, p, bn->len);
    if (rc) {
        if (!use_scratch)
            free(p);
        return rc;
    }
    *bytes = p;
    if (!use_scratch)
        *owned = p;
    return 0;
}

static int load(bp_agent *a, const bp__bnd *bn, const uint8_t **bytes, uint8_t **owned)
{
    return load_into(a, bn, bytes, owned, false);
}

/* The stored bytes of a bundle without a copy where the store keeps them in
 * memory, else in a->scratch; valid until the next load or store change. */
static int load_view(bp_agent *a, const bp__bnd *bn, const uint8_t **bytes)
{
    if (bn->blob == REC_BLOB) {
        rec_hdr h;
        const void *p;
        size_t n;
        int rc = sdr_read(a->store, bn->rec, &h, sizeof h);
        if (rc)
            return rc;
        if ((rc = sdr_blob_peek(a->store, h.blob_off, &p, &n)) == 0) {
            *bytes = p;
            return n == bn->len ? 0 : TERN_ECORRUPT;
        }
        if (rc != -ENOTSUP)
            return rc;
    }
    uint8_t *owned;
    return load_into(a, bn, bytes, &owned, true);
}

/* ------------------------------------------------------------- expiry heap */

static bool heap_less(bp__bnd *x, bp__bnd *y)
{
    return x->expire_ms < y->expire_ms;
}

static void heap_set(bp_agent *a, size_t i, bp__bnd *b)
{
    a->heap[i] = b;
    b->hidx = i;
}

static void heap_up(bp_agent *a, size_t i)
{
    bp__bnd *b = a->heap[i];
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!heap_less(b, a->heap[p]))
            break;
        heap_set(a, i, a->heap[p]);
        i = p;
    }
    heap_set(a, i, b);
}

static void heap_down(bp_agent *a, size_t i)
{
    bp__bnd *b = a->heap[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= a->nheap)
            break;
        if (c + 1 < a->nheap && heap_less(a->heap[c + 1], a->heap[c]))
            c++;
        if (!heap_less(a->heap[c], b))
            break;
        heap_set(a, i, a->heap[c]);
        i = c;
    }
    heap_set(a, i, b);
}

static void expiry_fire(tern_timer *t, void *arg);

static void expiry_arm(bp_agent *a)
{
    if (a->nheap == 0) {
        tern_timer_stop(&a->expiry);
        return;
    }
    /* Lifetimes come from the wire: one ending centuries from now would
     * wrap in ns and fire at once, again and again. */
    uint64_t due = a->heap[0]->expire_ms, now = now_ms(a);
    uint64_t delay_ns = 0, deadline;
    if (due > now && tern_ckd_mul(&delay_ns, due - now, 1000000ull))
        delay_ns = UINT64_MAX;
    if (tern_ckd_add(&deadline, tern_loop_now(a->loop), delay_ns))
        deadline = UINT64_MAX;
    if (tern_timer_is_active(&a->expiry) && tern_timer_deadline(&a->expiry) == deadline)
        return;
    tern_timer_start_at(&a->expiry, expiry_fire, a, deadline, 0);
}

static int heap_add(bp_agent *a, bp__bnd *b)
{
    if (a->nheap == a->heap_cap) {
        size_t cap = a->heap_cap ? a->heap_cap * 2 : 1024;
        bp__bnd **h = realloc(a->heap, cap * sizeof *h);
        if (!h)
            return -ENOMEM;
        a->heap = h;
        a->heap_cap = cap;
    }
    a->heap[a->nheap] = b;
    b->hidx = a->nheap++;
    heap_up(a, b->hidx);
    if (b->hidx == 0)
        expiry_arm(a);
    return 0;
}

static void heap_del(bp_agent *a, bp__bnd *b)
{
    size_t i = b->hidx;
    if (i >= a->nheap || a->heap[i] != b)
        return;
    b->hidx = SIZE_MAX;
    bp__bnd *last = a->heap[--a->nheap];
    if (i < a->nheap) {
        heap_set(a, i, last);
        heap_up(a, i);
        heap_down(a, last->hidx);
    }
    if (i == 0)
        expiry_arm(a);
}

/* ------------------------------------------------------------ bookkeeping */

static bp__bnd *bnd_new(bp_agent *a)
{
    bp__bnd *bn = a->spare;
    if (bn) {
        a->spare = bn->next;
        a->nspare--;
        memset(bn, 0, sizeof *bn);
    } else if (!(bn = calloc(1, sizeof *bn))) {
        return NULL;
    }
    bn->hidx = SIZE_MAX;
    return bn;
}

/* Keeps a freed record for the next bundle (a few thousand at most). */
static void bnd_free(bp_agent *a, bp__bnd *bn)
{
    if (a->nspare >= 4096) {
        free(bn);
        return;
    }
    bn->next = a->spare;
    a->spare = bn;
    a->nspare++;
}

/* Takes a bundle out of whatever queue holds it. */
static void unlink_bundle(bp_agent *a, bp__bnd *bn)
{
    switch (bn->state) {
    case BN_LIMBO:
        bp__bq_remove(&a->limbo, bn);
        a->st.limbo--;
        break;
    case BN_PENDING:
        bp__bq_remove(&a->pending, bn);
        break;
    case BN_QUEUED: {
        bp_outduct *od = bn->od;
        if (bn->prio == BP_PRIO_EXPEDITED) {
            bp__bq_remove(&od->exq[bn->ordinal], bn);
            if (!od->exq[bn->ordinal].n)
                od->exbits[bn->ordinal / 64] &= ~(1ull << (bn->ordinal % 64));
        } else {
            bp__bq_remove(&od->q[bn->prio], bn);
        }
        od->nqueued--;
        a->st.queued--;
        bn->od = NULL;
        break;
    }
    case BN_DELIVERY:
        bp__bq_remove(&bn->ep->q, bn);
        bn->ep = NULL;
        break;
    case BN_LENT:
        bp__map_del(&a->lent, bn->xmit);
        bn->ep = NULL;
        break;
    case BN_FRAG: {
        bp__fragset *fs = bn->fs;
        bp__bq_remove(&fs->q, bn);
        bn->fs = NULL;
        if (!fs->q.n) {
            bp__map_del(&a->fragsets, fs->key);
            free(fs);
        }
        break;
    }
    default:
        break;
    }
}

/* Removes a bundle from memory and the store. A bundle in flight stays
 * allocated (BN_DEAD) until its CLA reports. */
static void claim_left(bp_agent *a, uint64_t id);

/* Takes a bundle's bytes out of the store. */
static void store_drop(bp_agent *a, bp__bnd *bn)
{
    int rc = sdr_txn_begin(a->store);
    if (!rc) {
        rc = store_del(a, bn);
        rc = rc ? (sdr_txn_cancel(a->store), rc) : sdr_txn_end(a->store);
    }
    if (rc) {
        a->st.store_errors++;
        TERN_ERROR(a->lg, "bp", "could not remove a bundle from the store: %s",
                   tern_strerror(rc));
    }
    a->st.stored--;
    a->st.stored_bytes -= bn->len;
    if (bn->blob == REC_FILE) {
        a->st.file_refs--;
        file_put(a, bn->file);
        bn->file = NULL;
    }
    if (bn->claim) {
        uint64_t id = bn->claim;
        bn->claim = 0;
        claim_left(a, id);
    }
}

static void claims_run(tern_loop *loop, void *arg)
{
    (void)loop;
    bp_agent *a = arg;
    a->claims_deferred = false;
    /* The callbacks may receive more (and grow the map): ids first. */
    uint64_t ids[64];
    for (bool more = true; more;) {
        size_t k = 0;
        more = false;
        for (size_t i = 0; i < a->claims.cap; i++) {
            struct claim *c = a->claims.vals[i];
            if (!a->claims.keys[i] || !c->ready || c->fired)
                continue;
            if (k == 64) {
                more = true;
                break;
            }
            ids[k++] = c->id;
        }
        for (size_t i = 0; i < k; i++) {
            struct claim *c = bp__map_get(&a->claims, ids[i]);
            if (c && c->ready && !c->fired) {
                c->fired = true;
                c->cb(c->ctx, c->arg1, c->arg2);
            }
        }
    }
}

/* A bundle of claim id left the store. Once none of them is left, the
 * sender may let go even before the store's flush: what the crash of this
 * node could lose is already delivered, deleted or passed on. The callback
 * runs from the loop, not from whatever freed the bundle. */
static void claim_left(bp_agent *a, uint64_t id)
{
    struct claim *c = bp__map_get(&a->claims, id);
    /* One still open (taking bundles) is settled when it ends. */
    if (!c || --c->pending || c->fired || c->pinned || c->open)
        return;
    c->ready = true;
    if (!a->claims_deferred && tern_loop_defer(a->loop, claims_run, a) == 0)
        a->claims_deferred = true;
}

/* A bundle made from bundles of a claim, outside any claim of its own
 * (fragments made later than their original came in), stands in for them. */
static void claim_join(bp_agent *a, bp__bnd *bn, uint64_t id)
{
    struct claim *c = id && !bn->claim ? bp__map_get(&a->claims, id) : NULL;
    if (c) {
        bn->claim = id;
        c->pending++;
    }
}

/* Bundles of claim id are leaving the store into one of another claim (a
 * reassembled bundle): that one may not be durable yet, so the claim now
 * waits for the flush. */
static void claim_pin(bp_agent *a, uint64_t id)
{
    struct claim *c = id ? bp__map_get(&a->claims, id) : NULL;
    if (c)
        c->pinned = true;
}

static void discard(bp_agent *a, bp__bnd *bn)
{
    /* Queued and never handed over: what the router reserved for it on the
     * way (contact volume) is free for other bundles now. */
    if (bn->state == BN_QUEUED && a->router_release)
        a->router_release(a->router_release_ctx, a, bn->rec);
    unlink_bundle(a, bn);
    heap_del(a, bn);
    if (bn->state == BN_FLIGHT) {
        /* A CLA sending the stored bytes themselves has them until it
         * reports: they leave the store then. */
        bn->state = BN_DEAD;
        if (!bn->xbuf) {
            bn->drop_late = true;
            return;
        }
        store_drop(a, bn);
        return;
    }
    store_drop(a, bn);
    bnd_free(a, bn);
}

/* --------------------------------------------------------- status reports */

static int create(bp_agent *a, const bp_eid *src, const bp_eid *dest,
                  const bp_send_opts *o, uint64_t extra_flags, const void *payload,
                  size_t len, bp_bundle_ref *ref);

/* Sends a status report about pri whether or not its flags ask for this one
 * (a block's "report if it can't be processed" flag asks too). */
static void report_now(bp_agent *a, const bp_primary *pri, uint64_t payload_len,
                       uint64_t flag, uint64_t reason)
{
    /* An anonymous bundle may not ask for reports (RFC 9171 4.2.3); one that
     * does anyway gets none: a report could not name it uniquely. Nor is an
     * administrative record reported on (RFC 9171 4.2.4 and 6.1). */
    if ((pri->flags & BP_FLAG_ADMIN) || bp_eid_is_none(&pri->src) ||
        bp_eid_is_none(&pri->report_to) || pri->report_to.scheme == BP_SCHEME_IMC)
        return;
    if (!a->status_reports) {
        a->st.reports_suppressed++;
        return;
    }
    bp_admin_record r;
    memset(&r, 0, sizeof r);
    r.type = BP_ADMIN_STATUS_REPORT;
    bp_status_item *it = flag == BP_FLAG_RPT_RECEPTION  ? &r.sr.received
                         : flag == BP_FLAG_RPT_FORWARD  ? &r.sr.forwarded
                         : flag == BP_FLAG_RPT_DELIVERY ? &r.sr.delivered
                                                        : &r.sr.deleted;
    it->asserted = true;
    if (pri->flags & BP_FLAG_STATUS_TIME) {
        it->has_time = true;
        it->time_ms = now_ms(a);
    }
    r.sr.reason = reason;
    r.sr.source = pri->src;
    r.sr.ctime_ms = pri->ctime_ms;
    r.sr.seq = pri->seq;
    if (pri->flags & BP_FLAG_FRAGMENT) {
        r.sr.is_fragment = true;
        r.sr.frag_offset = pri->frag_offset;
        r.sr.frag_len = payload_len;
    }
    uint8_t buf[BP_EID_TEXT_MAX + 128];
    size_t n;
    if (bp_admin_encode(&r, buf, sizeof buf, &n) < 0)
        return;
    bp_send_opts o;
    bp_send_opts_init(&o);
    /* A report may have farther to go than its subject had left: at least
     * a day, so a deletion report does not die on the way like its bundle. */
    if (pri->lifetime_ms > o.lifetime_ms)
        o.lifetime_ms = pri->lifetime_ms;
    bp_eid admin;
    bp_eid_ipn(&admin, a->node, 0);
    if (create(a, &admin, &pri->report_to, &o, BP_FLAG_ADMIN, buf, n, NULL) == 0)
        a->st.reports_sent++;
}

/* Sends the status report flag (BP_FLAG_RPT_*) if pri's flags ask for it. */
static void report(bp_agent *a, const bp_primary *pri, uint64_t payload_len,
                   uint64_t flag, uint64_t reason)
{
    if (pri->flags & flag)
        report_now(a, pri, payload_len, flag, reason);
}

/* Deletes a bundle for a reason, with a deletion report if asked. */
static bool is_local(const bp_agent *a, const bp_eid *e);

/* What an application whose bundle is deleted before it leaves the node
 * is told: a code and a sentence, by the RFC 9171 reason. */
static int dropped_code(uint64_t reason, const char **why)
{
    switch (reason) {
    case BP_REASON_EXPIRED:
        *why = "its lifetime ended before it left this node";
        return -ETIME;
    case BP_REASON_DEST_UNAVAILABLE:
        *why = "its destination is an endpoint of this node that is not registered";
        return -ENOENT;
    default:
        *why = "no route brings it to its destination before it expires";
        return TERN_ENOROUTE;
    }
}

/* Deletes a bundle that did not reach its end: the deletion report if it
 * asked for one, and, for a bundle of an application of this node, a word
 * to that application (host.dropped) unless it is hearing the answer to its
 * send right now (a->creating). code/why (0: from the reason) say why. */
static void delete_told(bp_agent *a, bp__bnd *bn, const bp_bundle *b, uint64_t reason,
                        int code, const char *why)
{
    a->st.deleted++;
    bool tell = a->host.dropped && !a->creating && !(bn->pflags & BP_FLAG_ADMIN);
    if ((bn->pflags & BP_FLAG_RPT_DELETION) || tell) {
        bp_bundle tmp;
        const uint8_t *bytes;
        uint8_t *owned = NULL;
        if (!b && load(a, bn, &bytes, &owned) == 0 &&
            bp_bundle_decode(bytes, bn->len, &tmp, NULL, NULL) == 0)
            b = &tmp;
        if (b && (bn->pflags & BP_FLAG_RPT_DELETION))
            report(a, &b->pri, BLK(b)[b->n_blocks - 1].data_len, BP_FLAG_RPT_DELETION,
                   reason);
        if (b && tell && is_local(a, &b->pri.src)) {
            if (!code)
                code = dropped_code(reason, &why);
            a->st.drops_told++;
            a->host.dropped(a->host.ctx, &b->pri.src, b->pri.ctime_ms, b->pri.seq, code,
                            why);
        }
        if (b == &tmp)
            bp_bundle_release(&tmp);
        free(owned);
    }
    discard(a, bn);
}

static void delete_bundle(bp_agent *a, bp__bnd *bn, const bp_bundle *b, uint64_t reason)
{
    delete_told(a, bn, b, reason, 0, NULL);
}

static void expiry_fire(tern_timer *t, void *arg)
{
    (void)t;
    bp_agent *a = arg;
    uint64_t now = now_ms(a);
    while (a->nheap && a->heap[0]->expire_ms <= now) {
        bp__bnd *bn = a->heap[0];
        heap_del(a, bn);
        a->st.expired++;
        delete_bundle(a, bn, NULL, BP_REASON_EXPIRED);
    }
    expiry_arm(a);
}

/* ----------------------------------------------------------- identities */

static uint64_t eid_hash(const bp_eid *e)
{
    uint64_t h = bp__mix(0x51ed27u, e->scheme);
    if (e->scheme == BP_SCHEME_DTN) {
        for (size_t i = 0; i < e->ssp_len; i++)
            h = bp__mix(h, (uint8_t)e->ssp[i]);
        return h;
    }
    return bp__mix(bp__mix(h, e->node), e->service);
}

static uint64_t nonzero(uint64_t k)
{
    return k ? k : 1;
}

/* A bundle's fingerprint for duplicate suppression, or 0 for none: an
 * anonymous bundle (source dtn:none) has no identity (RFC 9171 4.2.3), so two
 * with the same creation timestamp may well be different bundles and none is
 * ever taken for a duplicate. */
static uint64_t bundle_key(const bp_primary *p, uint64_t payload_len)
{
    if (bp_eid_is_none(&p->src))
        return 0;
    uint64_t h = bp__mix(eid_hash(&p->src), p->ctime_ms);
    h = bp__mix(h, p->seq);
    if (p->flags & BP_FLAG_FRAGMENT)
        h = bp__mix(bp__mix(h, p->frag_offset + 1), payload_len);
    return nonzero(h);
}

static uint64_t adu_key(const bp_primary *p)
{
    uint64_t h = bp__mix(eid_hash(&p->src), p->ctime_ms);
    return nonzero(bp__mix(bp__mix(h, p->seq), p->total_adu_len));
}

/* Remembers a bundle's fingerprint (the oldest is forgotten first). */
static void seen_add(bp_agent *a, uint64_t key)
{
    if (!key || bp__map_get(&a->seen, key))
        return;
    if (a->seen_n == a->seen_max) {
        bp__map_del(&a->seen, a->seen_ring[a->seen_head]);
        a->seen_n--;
    }
    if (bp__map_put(&a->seen, key, (void *)1) == 0) {
        a->seen_ring[a->seen_head] = key;
        a->seen_head = (a->seen_head + 1) % a->seen_max;
        a->seen_n++;
    }
}

static bool is_local(const bp_agent *a, const bp_eid *e)
{
    if (e->scheme == BP_SCHEME_IPN)
        return e->node == a->node;
    if (e->scheme == BP_SCHEME_DTN && a->dtn_name_len && e->ssp_len > a->dtn_name_len)
        return memcmp(e->ssp, a->dtn_name, a->dtn_name_len) == 0 &&
               e->ssp[a->dtn_name_len] == '/';
    return false;
}

static bp__ep *ep_find(const bp_agent *a, const bp_eid *e)
{
    for (size_t i = 0; i < a->neps; i++)
        if (bp_eid_equal(&a->eps[i]->eid, e))
            return a->eps[i];
    return NULL;
}

/* Class of service: ION's block 193 when present, else standard. */
static void read_cos(const bp_bundle *b, uint8_t *prio, uint8_t *ordinal)
{
    *prio = BP_PRIO_STANDARD;
    *ordinal = 0;
    for (size_t i = 0; i + 1 < b->n_blocks; i++) {
        const bp_block *k = &BLK(b)[i];
        if (k->type != ION_COS_BLOCK)
            continue;
        tern_cbor_dec d;
        uint64_t n, flags, cls, ord;
        tern_cbor_dec_init(&d, k->data, k->data_len);
        if (tern_cbor_dec_array(&d, &n) < 0 || n < 3 ||
            tern_cbor_dec_uint(&d, &flags) < 0 || tern_cbor_dec_uint(&d, &cls) < 0 ||
            tern_cbor_dec_uint(&d, &ord) < 0)
            return;
        if (cls <= BP_PRIO_EXPEDITED)
            *prio = (uint8_t)cls;
        if (*prio == BP_PRIO_EXPEDITED && ord < 255)
            *ordinal = (uint8_t)ord;
        return;
    }
}

/* a + b, or UINT64_MAX if that does not fit (times from the wire). */
static uint64_t sat_add(uint64_t a, uint64_t b)
{
    uint64_t r;
    return tern_ckd_add(&r, a, b) ? UINT64_MAX : r;
}

static uint64_t expiry_of(const bp_bundle *b, uint64_t arrival)
{
    const bp_primary *p = &b->pri;
    if (p->ctime_ms)
        return sat_add(p->ctime_ms, p->lifetime_ms);
    uint64_t age = b->has_age ? b->age_ms : 0;
    return age >= p->lifetime_ms ? arrival : sat_add(arrival, p->lifetime_ms - age);
}

/* Fills a bundle's in-memory fields from its decoded form. */
static void bnd_fill(const bp_agent *a, bp__bnd *bn, const bp_bundle *b)
{
    bn->pflags = (uint32_t)b->pri.flags;
    bn->expire_ms = expiry_of(b, bn->arrival_ms);
    read_cos(b, &bn->prio, &bn->ordinal);
    if (b->pri.flags & BP_FLAG_FRAGMENT) {
        bn->foff = b->pri.frag_offset;
        bn->flen = BLK(b)[b->n_blocks - 1].data_len;
    }
    /* Forwarding rewrites only the previous node, bundle age and hop count
     * (and a definite-length outer array); a bundle that already names this
     * node and has neither of the others (what this node creates) goes out
     * as it is stored. */
    bn->wire = !b->definite && b->has_prev_node && !b->has_age && !b->has_hop_count &&
               b->prev_node.scheme == BP_SCHEME_IPN && b->prev_node.node == a->node &&
               b->prev_node.service == 0;
}

/* Commits the bytes gathered from v[0..nv) as a new bundle; on success *out
 * is in memory too. */
/* A payload read from a file by reference (bp_agent_send_file). */
typedef struct file_src {
    const void *head;
    size_t hlen;
    bp__file *f; /* held */
    rec_file fr; /* identity and range */
    const char *path;
} file_src;

/* Stores a bundle: v[0..nv) its bytes, or with fs its bytes before the
 * payload's (v[0], then fs->head), the file range, and those after (v[2]). */
static int admitv_from(bp_agent *a, const struct iovec *v, int nv, const file_src *fs,
                       const bp_bundle *b, bp__bnd **out)
{
    bp__bnd *bn = bnd_new(a);
    if (!bn)
        return -ENOMEM;
    int rc = sdr_txn_begin(a->store);
    if (!rc) {
        if (fs) {
            struct iovec pre[2] = {v[0], {(void *)fs->head, fs->hlen}};
            rc = store_put_file(a, pre, 2, &v[2], &fs->fr, fs->path, now_ms(a), bn);
        } else {
            rc = store_put(a, v, nv, now_ms(a), bn);
        }
        rc = rc ? (sdr_txn_cancel(a->store), rc) : sdr_txn_end(a->store);
    }
    if (rc) {
        a->st.store_errors++;
        bnd_free(a, bn);
        return rc;
    }
    if (fs) {
        bn->file = fs->f;
        bn->file->refs++;
        a->st.file_refs++;
    }
    a->st.stored++;
    a->st.stored_bytes += bn->len;
    bnd_fill(a, bn, b);
    if ((rc = heap_add(a, bn))) {
        discard(a, bn);
        return rc;
    }
    if (a->claim_cur) {
        bn->claim = a->claim_cur->id;
        a->claim_cur->pending++;
    }
    *out = bn;
    return 0;
}

static int admitv(bp_agent *a, const struct iovec *v, int nv, const bp_bundle *b,
                  bp__bnd **out)
{
    return admitv_from(a, v, nv, NULL, b, out);
}

static int admit(bp_agent *a, const uint8_t *bytes, size_t len, const bp_bundle *b,
                 bp__bnd **out)
{
    struct iovec v = {(void *)bytes, len};
    return admitv(a, &v, 1, b, out);
}

/* ------------------------------------------------------------ delivery */

static void deliver(bp_agent *a, bp__bnd *bn, const bp_bundle *b)
{
    bp__ep *ep = ep_find(a, &b->pri.dest);
    if (!ep) {
        TERN_INFO(a->lg, "bp", "bundle for unregistered endpoint deleted");
        delete_bundle(a, bn, b, BP_REASON_DEST_UNAVAILABLE);
        return;
    }
    if (!ep->open && ep->rule == BP_RECV_DISCARD) {
        a->st.discarded++;
        discard(a, bn);
        return;
    }
    bn->state = BN_DELIVERY;
    bn->ep = ep;
    bp__bq_push(&ep->q, bn, 0);
    a->st.delivered++;
    if (b->pri.flags & BP_FLAG_ADMIN)
        a->st.reports_received++;
    report(a, &b->pri, BLK(b)[b->n_blocks - 1].data_len, BP_FLAG_RPT_DELIVERY, 0);
    if (a->host.deliverable)
        a->host.deliverable(a->host.ctx, &ep->eid);
}

/* All fragments of an ADU are here: builds the whole bundle, stores it in
 * place of the fragments and delivers it. */
static void reassemble(bp_agent *a, bp__fragset *fs)
{
    uint64_t total = fs->total;
    uint8_t *adu = malloc(total ? total : 1);
    uint8_t *enc = NULL;
    bp_bundle first;
    bool have_first = false;
    if (!adu)
        return;
    for (bp__bnd *f = fs->q.head; f; f = f->next) {
        const uint8_t *bytes;
        uint8_t *owned;
        bp_bundle fb;
        if (load(a, f, &bytes, &owned) ||
            bp_bundle_decode(bytes, f->len, &fb, NULL, NULL)) {
            free(owned);
            goto out;
        }
        const bp_block *pl = &BLK(&fb)[fb.n_blocks - 1];
        if (f->foff < total)
            memcpy(adu + f->foff, pl->data,
                   f->flen < total - f->foff ? f->flen : total - f->foff);
        if (f->foff == 0 && !have_first) {
            first = fb; /* and its ext, released at the end */
            have_first = true;
            /* the views point into bytes, which may go: copy the blocks' data below */
            size_t need = 0;
            for (size_t i = 0; i + 1 < first.n_blocks; i++)
                need += BLK(&first)[i].data_len;
            uint8_t *keep = malloc(need + 1);
            if (!keep) {
                free(owned);
                goto out;
            }
            size_t at = 0;
            for (size_t i = 0; i + 1 < first.n_blocks; i++) {
                memcpy(keep + at, BLK(&first)[i].data, BLK(&first)[i].data_len);
                BLK(&first)[i].data = keep + at;
                at += BLK(&first)[i].data_len;
            }
            enc = keep;
        } else {
            bp_bundle_release(&fb);
        }
        free(owned);
    }
    if (!have_first)
        goto out;
    first.pri.flags &= ~(uint64_t)BP_FLAG_FRAGMENT;
    first.pri.frag_offset = first.pri.total_adu_len = 0;
    BLK(&first)[first.n_blocks - 1].data = adu;
    BLK(&first)[first.n_blocks - 1].data_len = total;
    size_t cap, n;
    bool big =
        tern_ckd_add_size(&cap, total, 1024 + BP_MAX_BLOCKS * (BP_DTN_SSP_MAX + 64));
    for (size_t i = 0; i + 1 < first.n_blocks; i++) /* a block's head and CRC fit in 64 */
        big |= tern_ckd_add_size(&cap, cap, BLK(&first)[i].data_len) ||
               tern_ckd_add_size(&cap, cap, 64);
    uint8_t *whole = big ? NULL : malloc(cap);
    if (!whole || bp_bundle_encode(&first, whole, cap, &n, NULL) < 0) {
        free(whole);
        goto out;
    }
    /* The whole bundle replaces its fragments. */
    bp__bnd *bn;
    int rc = admit(a, whole, n, &first, &bn);
    free(whole);
    if (rc)
        goto out;
    for (bp__bnd *f = fs->q.head; f; f = f->next)
        if (f->claim != bn->claim)
            claim_pin(a, f->claim);
    for (size_t k = fs->q.n; k > 0; k--)
        discard(a, fs->q.head); /* the last one frees fs */
    a->st.reassembled++;
    bp_bundle wb;
    const uint8_t *bytes;
    uint8_t *owned;
    if (load(a, bn, &bytes, &owned) == 0 &&
        bp_bundle_decode(bytes, bn->len, &wb, NULL, NULL) == 0) {
        deliver(a, bn, &wb);
        bp_bundle_release(&wb);
    }
    free(owned);
out:
    if (have_first)
        bp_bundle_release(&first);
    free(adu);
    free(enc);
}

static void hold_fragment(bp_agent *a, bp__bnd *bn, const bp_bundle *b)
{
    uint64_t key = adu_key(&b->pri);
    bp__fragset *fs = bp__map_get(&a->fragsets, key);
    if (!fs) {
        fs = calloc(1, sizeof *fs);
        if (!fs || bp__map_put(&a->fragsets, key, fs)) {
            free(fs);
            a->st.store_errors++;
            discard(a, bn);
            return;
        }
        fs->key = key;
        fs->total = b->pri.total_adu_len;
    }
    /* insert sorted by offset */
    bp__bnd *at = fs->q.head;
    while (at && at->foff <= bn->foff)
        at = at->next;
    bn->state = BN_FRAG;
    bn->fs = fs;
    if (!at) {
        bp__bq_push(&fs->q, bn, 0);
    } else {
        bn->next = at;
        bn->prev = at->prev;
        if (at->prev)
            at->prev->next = bn;
        else
            fs->q.head = bn;
        at->prev = bn;
        fs->q.n++;
    }
    uint64_t covered = 0, end;
    for (bp__bnd *f = fs->q.head; f; f = f->next) {
        if (f->foff > covered)
            return;
        /* (decoding kept every fragment inside its ADU: this cannot wrap) */
        if (!tern_ckd_add(&end, f->foff, f->flen) && end > covered)
            covered = end;
    }
    if (covered >= fs->total)
        reassemble(a, fs);
}

/* ------------------------------------------------------------- routing */

static bp_outduct *duct_by_name(const bp_agent *a, const char *proto, const char *name)
{
    for (size_t i = 0; i < a->nducts; i++)
        if (!strcmp(a->ducts[i]->proto, proto) && !strcmp(a->ducts[i]->name, name))
            return a->ducts[i];
    return NULL;
}

static const plan *plan_ipn(const bp_agent *a, uint64_t node)
{
    for (size_t i = 0; i < a->nplans; i++)
        if (!a->plans[i].dtn && a->plans[i].node == node)
            return &a->plans[i];
    return NULL;
}

/* The outduct for a bundle: 0 with *out set (NULL: no route now, limbo), or
 * BP_ROUTE_DELETE from the router. */
/* probe: only asks the way (bp_route_req.probe), books nothing. */
static int route_to(bp_agent *a, const bp__bnd *bn, const bp_primary *pri,
                    uint64_t prev_node, uint64_t ref, int probe, bp_outduct **out)
{
    bp_outduct *od = NULL;
    *out = NULL;
    if (a->router) {
        bp_route_req req = {.pri = pri,
                            .len = bn->len,
                            .priority = bn->prio,
                            .ordinal = bn->ordinal,
                            .expire_ms = bn->expire_ms,
                            .prev_node = prev_node,
                            .ref = ref,
                            .probe = probe};
        int rc = a->router(a->router_ctx, a, &req, &od);
        if (rc == 0 || rc == BP_ROUTE_DELETE) {
            *out = rc ? NULL : od;
            return rc;
        }
        if (rc != TERN_ENOTFOUND)
            return 0;
    }
    const bp_eid *d = &pri->dest;
    const plan *p = NULL;
    if (d->scheme == BP_SCHEME_IPN) {
        p = plan_ipn(a, d->node);
        for (size_t i = 0; !p && i < a->nexits; i++)
            if (d->node >= a->exits[i].first && d->node <= a->exits[i].last)
                p = plan_ipn(a, a->exits[i].via);
    } else if (d->scheme == BP_SCHEME_DTN) {
        for (size_t i = 0; !p && i < a->nplans; i++) {
            size_t n = strlen(a->plans[i].name);
            if (a->plans[i].dtn && d->ssp_len >= n &&
                !memcmp(d->ssp, a->plans[i].name, n) &&
                (d->ssp_len == n || d->ssp[n] == '/'))
                p = &a->plans[i];
        }
    }
    *out = p ? duct_by_name(a, p->proto, p->duct) : NULL;
    return 0;
}

static uint64_t prev_of(const bp_bundle *b)
{
    return b->has_prev_node && b->prev_node.scheme == BP_SCHEME_IPN ? b->prev_node.node
                                                                    : 0;
}

static int route(bp_agent *a, const bp__bnd *bn, const bp_bundle *b, bp_outduct **out)
{
    return route_to(a, bn, &b->pri, prev_of(b), bn->rec, 0, out);
}

static void enqueue(bp_outduct *od, bp__bnd *bn, int front)
{
    bn->state = BN_QUEUED;
    bn->od = od;
    if (bn->prio == BP_PRIO_EXPEDITED) {
        bp__bq_push(&od->exq[bn->ordinal], bn, front);
        od->exbits[bn->ordinal / 64] |= 1ull << (bn->ordinal % 64);
    } else {
        bp__bq_push(&od->q[bn->prio], bn, front);
    }
    od->nqueued++;
    od->a->st.queued++;
}

/* Splits a bundle into fragments of at most max payload bytes, which replace
 * it in the store; each is dispatched. */
/* Fragments carry at least this much payload, about what their headers
 * take: a limit below it (a TCPCLv4 peer may announce any transfer MRU)
 * would make a bundle thousands of bundles, each with its headers and its
 * place in the store. Such a duct gets the bundle whole, and its CLA
 * refuses it as too big. */
#define FRAG_MIN 64

static void fragment(bp_agent *a, bp__bnd *bn, const bp_bundle *b, size_t max)
{
    const bp_block *pl = &BLK(b)[b->n_blocks - 1];
    uint64_t base = (b->pri.flags & BP_FLAG_FRAGMENT) ? b->pri.frag_offset : 0;
    uint64_t total =
        (b->pri.flags & BP_FLAG_FRAGMENT) ? b->pri.total_adu_len : pl->data_len;
    size_t cap;
    bool big = tern_ckd_add_size(&cap, max, 1024 + BP_MAX_BLOCKS * (BP_DTN_SSP_MAX + 64));
    for (size_t i = 0; i + 1 < b->n_blocks; i++)
        big |= tern_ckd_add_size(&cap, cap, BLK(b)[i].data_len) ||
               tern_ckd_add_size(&cap, cap, 64);
    uint8_t *buf = big ? NULL : malloc(cap);
    bp_bundle *f = malloc(sizeof *f);
    bp__bnd **made = calloc(pl->data_len / max + 2, sizeof *made);
    /* A bundle of many blocks: each fragment gets its own copy of them, as
     * *f = *b would share b's and the fragment rewrites its payload. */
    bp_block *fext = b->ext ? malloc(b->n_blocks * sizeof *fext) : NULL;
    size_t nmade = 0;
    bool ok = false;
    if (!buf || !f || !made || (b->ext && !fext))
        goto out;
    for (uint64_t off = 0; off < pl->data_len; off += max) {
        *f = *b;
        if (fext) {
            memcpy(fext, b->ext, b->n_blocks * sizeof *fext);
            f->ext = fext;
            f->ext_cap = b->n_blocks;
        }
        f->pri.flags |= BP_FLAG_FRAGMENT;
        f->pri.frag_offset = base + off;
        f->pri.total_adu_len = total;
        if (off > 0) { /* later fragments carry only the blocks marked for replication */
            size_t k = 0;
            /* A fragment of a bundle made without a clock is such a bundle
             * too, and needs the age block whatever its flags (RFC 9171
             * 4.4.2). */
            bool need_age = b->pri.ctime_ms == 0;
            for (size_t i = 0; i + 1 < b->n_blocks; i++)
                if ((BLK(b)[i].flags & BP_BLK_REPLICATE) ||
                    (need_age && BLK(b)[i].type == BP_BLOCK_AGE))
                    BLK(f)[k++] = BLK(b)[i];
            BLK(f)[k++] = *pl;
            f->n_blocks = k;
            f->has_prev_node = f->has_age = f->has_hop_count = false;
            for (size_t i = 0; i + 1 < k; i++) {
                f->has_prev_node |= BLK(f)[i].type == BP_BLOCK_PREV_NODE;
                f->has_age |= BLK(f)[i].type == BP_BLOCK_AGE;
                f->has_hop_count |= BLK(f)[i].type == BP_BLOCK_HOP_COUNT;
            }
        }
        bp_block *fp = &BLK(f)[f->n_blocks - 1];
        fp->data = pl->data + off;
        fp->data_len = pl->data_len - off < max ? pl->data_len - off : max;
        size_t n;
        bp__bnd *fb;
        if (bp_bundle_encode(f, buf, cap, &n, NULL) < 0 || admit(a, buf, n, f, &fb))
            goto out;
        fb->arrival_ms = bn->arrival_ms;
        claim_join(a, fb, bn->claim);
        made[nmade++] = fb;
    }
    a->st.fragmented++;
    a->st.fragments_made += nmade;
    ok = true;
    discard(a, bn);
    for (size_t i = 0; i < nmade; i++) {
        const uint8_t *bytes;
        uint8_t *owned;
        bp_bundle fb;
        if (load(a, made[i], &bytes, &owned) == 0 &&
            bp_bundle_decode(bytes, made[i]->len, &fb, NULL, NULL) == 0) {
            dispatch(a, made[i], &fb, 0);
            bp_bundle_release(&fb);
        }
        free(owned);
    }
out:
    if (!ok) { /* the original stays, in limbo until routes change or it expires */
        for (size_t i = 0; i < nmade; i++)
            discard(a, made[i]);
        a->st.store_errors++;
        bn->state = BN_LIMBO;
        bp__bq_push(&a->limbo, bn, 0);
        a->st.limbo++;
    }
    free(made);
    free(fext);
    free(f);
    free(buf);
}

/* Logs (once per 10 s per outduct) that a bundle of len bytes is above
 * od's limit; b (may be NULL) names its source and destination. */
static void too_big_log(bp_agent *a, const bp_outduct *od, size_t len, const bp_bundle *b,
                        const char *fate)
{
    char src[BP_DTN_SSP_MAX + 24] = "?", dst[BP_DTN_SSP_MAX + 24] = "?", cause[96];
    if (b) {
        bp_eid_print(&b->pri.src, src, sizeof src);
        bp_eid_print(&b->pri.dest, dst, sizeof dst);
    }
    snprintf(cause, sizeof cause, "too big %s/%s", od->proto, od->name);
    tern_log_limited(a->lg, tern_log_cause(&a->why_log, cause), tern_loop_now(a->loop),
                     TERN_LOG_WARN, "bp",
                     "bundle of %zu bytes from %s to %s %s: it exceeds %s (outduct "
                     "%s/%s) and may not be fragmented",
                     len, src, dst, fate,
                     od->limit_why[0] ? od->limit_why : "the outduct's limit", od->proto,
                     od->name);
}

/* Decides what happens to a bundle that is in memory and in the store and in
 * no queue: deliver, hold for reassembly, queue on an outduct or limbo.
 * TERN_ETOOBIG: its outduct cannot carry it and it may not be fragmented (or
 * fragments would not fit): deleted, with its deletion report if it asked. */
static int dispatch(bp_agent *a, bp__bnd *bn, const bp_bundle *b, int front)
{
    if (b->pri.dest.scheme == BP_SCHEME_IMC)
        return imc_dispatch(a, bn, b, front);
    if (is_local(a, &b->pri.dest)) {
        if ((b->pri.flags & BP_FLAG_ADMIN) && b->pri.dest.service == 0 &&
            b->pri.dest.scheme == BP_SCHEME_IPN && imc_briefing(a, bn, b))
            return 0;
        if (b->pri.flags & BP_FLAG_FRAGMENT)
            hold_fragment(a, bn, b);
        else
            deliver(a, bn, b);
        return 0;
    }
    if (bp_eid_is_none(&b->pri.dest)) {
        /* dtn:none: nobody can receive it; drop it cleanly (ION has crashed here) */
        delete_bundle(a, bn, b, BP_REASON_NO_ROUTE);
        return 0;
    }
    bp_outduct *od;
    if (route(a, bn, b, &od) == BP_ROUTE_DELETE) {
        /* no route can deliver it before it expires: not sent into the
         * network (and, from bp_agent_send, its caller is told) */
        delete_bundle(a, bn, b, BP_REASON_NO_ROUTE);
        return TERN_ENOROUTE;
    }
    return to_duct(a, bn, b, od, front);
}

/* Queues a routed bundle on od (NULL: no route now, limbo), fragmenting it
 * to od's maximum payload where needed and allowed. */
static int to_duct(bp_agent *a, bp__bnd *bn, const bp_bundle *b, bp_outduct *od,
                   int front)
{
    if (!od) {
        bn->state = BN_LIMBO;
        bp__bq_push(&a->limbo, bn, 0);
        a->st.limbo++;
        return 0;
    }
    const bp_block *pl = &BLK(b)[b->n_blocks - 1];
    /* Fragments of an anonymous bundle could not be told from another's at
     * reassembly, whatever its flags say (RFC 9171 4.2.3). */
    bool split = od->max_payload >= FRAG_MIN && pl->data_len > od->max_payload &&
                 !(b->pri.flags & (BP_FLAG_NO_FRAGMENT | BP_FLAG_ADMIN)) &&
                 !bp_eid_is_none(&b->pri.src);
    if (!split && od->max_bundle && bn->len > od->max_bundle) {
        /* Said now, while whoever sent it can still hear it (bp_agent_send
         * returns the error), rather than when its CLA turns it down. */
        too_big_log(a, od, bn->len, b, "refused");
        if (a->router_release) /* what the router reserved on the way */
            a->router_release(a->router_release_ctx, a, bn->rec);
        delete_bundle(a, bn, b, BP_REASON_NO_ROUTE);
        return TERN_ETOOBIG;
    }
    if (split) {
        if (bn->blob != REC_FILE) {
            fragment(a, bn, b, od->max_payload);
        } else if (!too_big_fragment(a, od, bn)) {
            /* b's payload is in the file, not in memory: fragmented from the
             * bytes read back, or gone with its file */
            a->st.deleted++;
            discard(a, bn);
        }
        return 0;
    }
    enqueue(od, bn, front);
    pump(od);
    return 0;
}

/* A bundle of od's the CLA found too big: fragmented (from its stored
 * bytes, not the hop's rewritten copy) to od's maximum payload if that is
 * below its payload and its flags allow, as dispatch does; true if so. */
static bool too_big_fragment(bp_agent *a, bp_outduct *od, bp__bnd *bn)
{
    const uint8_t *bytes;
    uint8_t *owned = NULL;
    bp_bundle b;
    bool split = false;
    if (od->max_payload >= FRAG_MIN && load(a, bn, &bytes, &owned) == 0 &&
        bp_bundle_decode(bytes, bn->len, &b, NULL, NULL) == 0) {
        const bp_block *pl = &b.blocks[b.n_blocks - 1];
        split = pl->data_len > od->max_payload &&
                !(b.pri.flags & (BP_FLAG_NO_FRAGMENT | BP_FLAG_ADMIN)) &&
                !bp_eid_is_none(&b.pri.src);
        if (split)
            fragment(a, bn, &b, od->max_payload);
    }
    free(owned);
    return split;
}

/* A bundle of od's the CLA found too big and that may not be fragmented:
 * deleted, with its report if it asked and reports are on, and its
 * application told (bp_agent_host.dropped). */
static void too_big_late(bp_agent *a, bp_outduct *od, bp__bnd *bn)
{
    const uint8_t *bytes;
    uint8_t *owned = NULL;
    bp_bundle b;
    bool have = load(a, bn, &bytes, &owned) == 0 &&
                bp_bundle_decode(bytes, bn->len, &b, NULL, NULL) == 0;
    too_big_log(a, od, bn->len, have ? &b : NULL,
                bn->pflags & BP_FLAG_RPT_DELETION
                    ? (a->status_reports ? "deleted, deletion report sent"
                                         : "deleted (its deletion report is not sent: "
                                           "status reports are off)")
                    : "deleted (it asked for no deletion report)");
    char why[sizeof od->limit_why + 64];
    snprintf(why, sizeof why, "it exceeds %s and may not be fragmented",
             od->limit_why[0] ? od->limit_why : "its outduct's limit");
    delete_told(a, bn, have ? &b : NULL, BP_REASON_NO_ROUTE, TERN_ETOOBIG, why);
    if (have)
        bp_bundle_release(&b);
    free(owned);
}

/* ------------------------------------------------------------- multicast */

#define IMC_CATALOG "bp.imc"

static void imc_log(bp_agent *a, const char *what, const char *why)
{
    a->imc.st.refused++;
    log_once(a, what, why);
}

/* The nodes of the region (petitions go to them): plans, exits, nodes the
 * host named, every known member. *out is malloc'd, sorted, without this
 * node. */
static int imc_region(const bp_agent *a, uint64_t **out, size_t *n)
{
    uint64_t *v = NULL;
    size_t nv = 0, cap = 0;
    int rc = 0;
#define ADD(x)                                                                           \
    do {                                                                                 \
        uint64_t x_ = (x);                                                               \
        if (x_ && x_ != a->node &&                                                       \
            (rc = bp__u64_add(&v, &nv, &cap, BP_IMC_LIST_MAX, x_)) < 0)                  \
            goto out;                                                                    \
    } while (0)
    for (size_t i = 0; i < a->nplans; i++)
        if (!a->plans[i].dtn)
            ADD(a->plans[i].node);
    for (size_t i = 0; i < a->nexits; i++)
        ADD(a->exits[i].via);
    for (size_t i = 0; i < a->imc.nregion; i++)
        ADD(a->imc.region[i]);
    for (size_t i = 0; i < a->imc.n; i++)
        for (size_t k = 0; k < a->imc.g[i].n; k++)
            ADD(a->imc.g[i].nodes[k]);
#undef ADD
    rc = 0;
out:
    if (rc == TERN_EFULL)
        rc = 0; /* a region beyond the list's bound: the first ones */
    if (rc) {
        free(v);
        return rc;
    }
    *out = v;
    *n = nv;
    return 0;
}

/* Where a bundle of group g made here goes: the other members (the region,
 * for petitions), and this node when it is a member. */
static int imc_targets(const bp_agent *a, uint64_t g, uint64_t **out, size_t *n)
{
    if (g == 0)
        return imc_region(a, out, n);
    const bp__imc_group *grp = bp__imc_find(&a->imc, g);
    size_t cnt = grp ? grp->n : 0, cap = cnt + 1, k = 0;
    uint64_t *v = malloc(cap * sizeof *v);
    if (!v)
        return -ENOMEM;
    for (size_t i = 0; i < cnt; i++)
        if (grp->nodes[i] != a->node)
            v[k++] = grp->nodes[i];
    if (grp && grp->local)
        bp__u64_add(&v, &k, &cap, cap, a->node);
    *out = v;
    *n = k;
    return 0;
}

/* The bundle's block 195, or NULL. */
static const bp_block *imc_block(const bp_bundle *b)
{
    for (size_t i = 0; i + 1 < b->n_blocks; i++)
        if (BLK(b)[i].type == BP_BLOCK_IMC_DESTS)
            return &BLK(b)[i];
    return NULL;
}

/* *f becomes b with block 195 listing dst[0..n) (replaced or added before
 * the payload); *list holds the block's data (free it after f). */
static int imc_with_dests(const bp_bundle *b, const uint64_t *dst, size_t n, bp_bundle *f,
                          uint8_t **list)
{
    size_t cap = 9 * (n + 1), len;
    uint8_t *buf = malloc(cap);
    if (!buf)
        return -ENOMEM;
    int rc = bp_imc_list_encode(dst, n, buf, cap, &len);
    if (rc) {
        free(buf);
        return rc;
    }
    size_t nb = b->n_blocks;
    *f = *b;
    f->ext = NULL;
    f->ext_cap = 0;
    if (b->ext)
        f->n_blocks = 0;
    if ((rc = bp_bundle_reserve(f, nb + 1))) {
        free(buf);
        return rc;
    }
    if (b->ext)
        memcpy(BLK(f), b->ext, nb * sizeof *b->ext);
    f->n_blocks = nb;
    bp_block *k = NULL;
    uint64_t num = 1;
    for (size_t i = 0; i + 1 < nb; i++) {
        if (BLK(f)[i].type == BP_BLOCK_IMC_DESTS)
            k = &BLK(f)[i];
        if (BLK(f)[i].number > num)
            num = BLK(f)[i].number;
    }
    if (!k) {
        BLK(f)[nb] = BLK(f)[nb - 1];
        k = &BLK(f)[nb - 1];
        *k = (bp_block){.type = BP_BLOCK_IMC_DESTS,
                        .number = num + 1,
                        .flags = BP_BLK_REPLICATE,
                        .crc_type = BP_CRC_NONE};
        f->n_blocks = nb + 1;
    }
    k->data = buf;
    k->data_len = len;
    *list = buf;
    return 0;
}

/* Encodes b with block 195 listing dst: *out malloc'd. */
static int imc_encode(const bp_bundle *b, uint64_t blen, const uint64_t *dst, size_t n,
                      bp_bundle *f, uint8_t **list, uint8_t **out, size_t *outlen)
{
    int rc = imc_with_dests(b, dst, n, f, list);
    if (rc)
        return rc;
    size_t cap;
    if (tern_ckd_add_size(&cap, (size_t)blen, 9 * (n + 1) + 64) ||
        !(*out = malloc(cap))) {
        bp_bundle_release(f);
        free(*list);
        return -ENOMEM;
    }
    if ((rc = bp_bundle_encode(f, *out, cap, outlen, NULL))) {
        free(*out);
        bp_bundle_release(f);
        free(*list);
    }
    return rc;
}

static void imc_save(bp_agent *a)
{
    int rc = bp__imc_save(&a->imc, a->store, IMC_CATALOG);
    if (rc)
        TERN_WARN(a->lg, "bp", "multicast memberships not stored: %s", tern_strerror(rc));
}

/* Sends a petition: this node joins (member) or leaves group g. */
static void imc_petition(bp_agent *a, uint64_t g, bool member)
{
    uint8_t buf[32];
    size_t n;
    if (bp_imc_petition_encode(g, member, buf, sizeof buf, &n))
        return;
    bp_send_opts o;
    bp_send_opts_init(&o);
    o.priority = BP_PRIO_EXPEDITED; /* as ION's: membership before data */
    bp_eid src, dst;
    bp_eid_ipn(&src, a->node, 0);
    dst = (bp_eid){.scheme = BP_SCHEME_IMC, .node = 0, .service = 0};
    if (create(a, &src, &dst, &o, 0, buf, n, NULL) == 0)
        a->imc.st.petitions_sent++;
}

/* Tells node the groups this node is a member of (ION's briefing). */
static void imc_brief(bp_agent *a, uint64_t node)
{
    uint64_t *g = malloc((a->imc.n + 1) * sizeof *g);
    size_t k = 0, cap = 9 * (a->imc.n + 2) + 8, n;
    uint8_t *buf = malloc(cap);
    if (!g || !buf)
        goto out;
    for (size_t i = 0; i < a->imc.n && k < BP_IMC_LIST_MAX; i++)
        if (a->imc.g[i].local && a->imc.g[i].group)
            g[k++] = a->imc.g[i].group;
    if (bp_imc_briefing_encode(g, k, buf, cap, &n))
        goto out;
    bp_send_opts o;
    bp_send_opts_init(&o);
    o.lifetime_ms = 60000; /* as ION's */
    bp_eid src, dst;
    bp_eid_ipn(&src, a->node, 0);
    bp_eid_ipn(&dst, node, 0);
    if (create(a, &src, &dst, &o, BP_FLAG_ADMIN, buf, n, NULL) == 0)
        a->imc.st.briefings_sent++;
out:
    free(g);
    free(buf);
}

/* The sender of a petition or briefing: ipn:N.0 (0 if it is not one). */
static uint64_t imc_sender(const bp_bundle *b)
{
    return b->pri.src.scheme == BP_SCHEME_IPN ? b->pri.src.node : 0;
}

/* A petition reached this node. */
static void imc_take_petition(bp_agent *a, const bp_bundle *b)
{
    const bp_block *pl = &BLK(b)[b->n_blocks - 1];
    uint64_t g, n = imc_sender(b);
    bool member;
    const char *why = NULL;
    if (!n) {
        imc_log(a, "imc petition refused", "invalid sender (not an ipn node)");
        return;
    }
    if (bp_imc_petition_decode(pl->data, pl->data_len, &g, &member, &why)) {
        imc_log(a, "imc petition refused", why);
        return;
    }
    if (n == a->node)
        return; /* its own, come back */
    a->imc.st.petitions_taken++;
    int rc = bp__imc_member_set(&a->imc, g, n, member);
    if (rc < 0) {
        imc_log(a, "imc petition refused",
                rc == TERN_EFULL ? "the membership table is full" : tern_strerror(rc));
        return;
    }
    if (rc == 1) {
        TERN_INFO(a->lg, "bp", "imc: node %" PRIu64 " %s group %" PRIu64, n,
                  member ? "joined" : "left", g);
        imc_save(a);
    }
    bool mine = false;
    for (size_t i = 0; i < a->imc.n && !mine; i++)
        mine = a->imc.g[i].local && a->imc.g[i].group;
    if (g == 0 && member && mine)
        imc_brief(a, n); /* it announced itself: tell it our groups */
    if (rc == 1 && member)
        bp_agent_reroute(a);
}

/* A bundle for this node's administrative endpoint: true if it was a
 * briefing (taken, and the bundle gone). */
static bool imc_briefing(bp_agent *a, bp__bnd *bn, const bp_bundle *b)
{
    const bp_block *pl = &BLK(b)[b->n_blocks - 1];
    uint64_t *g = malloc(BP_IMC_LIST_MAX * sizeof *g);
    size_t n = 0;
    const char *why = NULL;
    if (!g)
        return false;
    int rc = bp_imc_briefing_decode(pl->data, pl->data_len, g, BP_IMC_LIST_MAX, &n, &why);
    if (rc == TERN_ENOTFOUND || (b->pri.flags & BP_FLAG_FRAGMENT)) {
        free(g);
        return false;
    }
    uint64_t from = imc_sender(b);
    if (rc)
        imc_log(a, "imc briefing refused", why);
    else if (!from || from == a->node)
        imc_log(a, "imc briefing refused", "invalid sender (not another ipn node)");
    else {
        bool changed = false;
        a->imc.st.briefings_taken++;
        for (size_t i = 0; i < n; i++) {
            int r = bp__imc_member_set(&a->imc, g[i], from, true);
            if (r < 0) {
                imc_log(a, "imc briefing partly refused", "the membership table is full");
                break;
            }
            changed |= r == 1;
        }
        if (changed) {
            imc_save(a);
            bp_agent_reroute(a);
        }
    }
    free(g);
    a->st.delivered++;
    discard(a, bn);
    return true;
}

/* Destinations a small list decodes into without the heap. */
#define IMC_LOCAL 64

/* The destinations of a group bundle: its block 195 or, without one (made
 * here before the block existed), the group's members. *out is local (room
 * for IMC_LOCAL) when they fit, else the heap's: free it with imc_dests_free. */
static int imc_dests(bp_agent *a, const bp_bundle *b, uint64_t *local, uint64_t **out,
                     size_t *n)
{
    const bp_block *k = imc_block(b);
    if (!k)
        return imc_targets(a, b->pri.dest.node, out, n);
    /* every item takes at least a byte: the block's length bounds the count */
    size_t max = k->data_len < BP_IMC_LIST_MAX ? (size_t)k->data_len : BP_IMC_LIST_MAX;
    uint64_t *v = max <= IMC_LOCAL ? local : malloc((max ? max : 1) * sizeof *v);
    const char *why = NULL;
    if (!v)
        return -ENOMEM;
    int rc = bp_imc_list_decode(k->data, k->data_len, v, max, n, &why);
    if (rc) {
        if (v != local)
            free(v);
        imc_log(a, "group bundle dropped: bad IMC destinations block", why);
        return rc;
    }
    *out = v;
    return 0;
}

static void imc_dests_free(uint64_t *d, const uint64_t *local)
{
    if (d != local)
        free(d);
}

static void imc_retry_fire(tern_timer *t, void *arg)
{
    (void)t;
    bp_agent_reroute(arg);
}

/* Books the way of a copy that goes toward dest (CGR counts the volume it
 * takes from the contacts): once per copy, as a unicast bundle is, not once
 * per destination it serves. */
static void imc_book(bp_agent *a, const bp__bnd *copy, const bp_bundle *b, uint64_t dest,
                     uint64_t prev)
{
    bp_primary p = b->pri;
    bp_outduct *od;
    bp_eid_ipn(&p.dest, dest, 0);
    route_to(a, copy, &p, prev, copy->rec, 0, &od);
}

typedef struct imc_gang {
    bp_outduct *od; /* NULL: no route now */
    uint64_t *dst;
    size_t n;
} imc_gang;

/* Forwards a group bundle: delivered here if this node is among its
 * destinations, the others split by next hop into one copy per outduct,
 * each listing only the destinations it serves (ION's gangs). */
static int imc_dispatch(bp_agent *a, bp__bnd *bn, const bp_bundle *b, int front)
{
    uint64_t *d = NULL, local[IMC_LOCAL];
    size_t n = 0, ng = 0;
    imc_gang *gang = NULL;
    uint64_t g = b->pri.dest.node;
    bool here = false;
    if (imc_dests(a, b, local, &d, &n)) {
        a->st.deleted++;
        discard(a, bn);
        return 0;
    }
    here = bp__u64_del(d, &n, a->node) == 1;
    if (!n && !here) {
        if (!imc_block(b)) { /* made here for a group nobody else is in */
            a->imc.st.no_members++;
            char t[48];
            snprintf(t, sizeof t, "group %" PRIu64, g);
            tern_log_limited(a->lg, tern_log_cause(&a->why_log, "imc no members"),
                             tern_loop_now(a->loop), TERN_LOG_INFO, "bp",
                             "bundle for imc %s deleted: no member known", t);
            delete_bundle(a, bn, b, BP_REASON_NO_ROUTE);
        } else {
            discard(a, bn);
        }
        imc_dests_free(d, local);
        return 0;
    }
    /* The way back toward the previous node: destinations routed there
     * were reached by its transmission (a broadcast medium) or are its to
     * serve. */
    uint64_t prev = prev_of(b);
    bp_outduct *back = NULL;
    if (prev && prev != a->node) {
        bp_primary p = b->pri;
        bp_eid_ipn(&p.dest, prev, 0);
        if (route_to(a, bn, &p, 0, 0, 1, &back))
            back = NULL;
    }
    gang = calloc(n + 1, sizeof *gang);
    uint64_t *pool = malloc((n + 1) * sizeof *pool);
    bp_outduct **via = malloc((n + 1) * sizeof *via);
    if (!gang || !pool || !via)
        goto nomem;
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        bp_primary p = b->pri;
        bp_eid_ipn(&p.dest, d[i], 0);
        bp_outduct *od = NULL;
        int rc = route_to(a, bn, &p, prev, 0, 1, &od);
        if (rc == BP_ROUTE_DELETE) {
            a->imc.st.unreachable++;
            continue;
        }
        if (od && od == back) {
            a->imc.st.not_back++;
            continue;
        }
        if (!od)
            a->imc.st.unreachable++;
        size_t k = 0;
        while (k < ng && gang[k].od != od)
            k++;
        if (k == ng)
            gang[ng++].od = od;
        gang[k].n++;
        d[kept] = d[i];
        via[kept++] = od;
    }
    /* Remembered as served here: the destinations kept (not those the
     * previous node serves) and this node. A bundle made here needs none:
     * receive_group knows it by its plain key. */
    uint64_t key = bundle_key(&b->pri, BLK(b)[b->n_blocks - 1].data_len);
    if (key && !is_local(a, &b->pri.src)) {
        for (size_t i = 0; i < kept; i++)
            seen_add(a, nonzero(bp__mix(key, d[i])));
        if (here)
            seen_add(a, nonzero(bp__mix(key, a->node)));
    }
    /* lay the gangs out in one array, in destination order */
    size_t at = 0;
    for (size_t k = 0; k < ng; k++) {
        gang[k].dst = pool + at;
        at += gang[k].n;
        gang[k].n = 0;
    }
    for (size_t i = 0; i < kept; i++)
        for (size_t k = 0; k < ng; k++)
            if (gang[k].od == via[i]) {
                gang[k].dst[gang[k].n++] = d[i];
                break;
            }
    /* The stored bundle itself goes when it is the one copy and lists just
     * what that copy serves. */
    if (!here && ng == 1 && gang[0].n == n && imc_block(b)) {
        if (gang[0].od) {
            a->imc.st.copies++;
            imc_book(a, bn, b, gang[0].dst[0], prev);
        }
        to_duct(a, bn, b, gang[0].od, front);
        goto done;
    }
    /* A payload kept by reference to a file is not in b: copies are made
     * from the bytes read back. */
    const bp_bundle *from = b;
    bp_bundle fb;
    const uint8_t *fbytes;
    uint8_t *fowned = NULL;
    bool loaded = false;
    if (ng && bn->blob == REC_FILE) {
        if (load(a, bn, &fbytes, &fowned) == 0 &&
            bp_bundle_decode(fbytes, bn->len, &fb, NULL, NULL) == 0) {
            from = &fb;
            loaded = true;
        } else {
            ng = 0; /* the file changed or went: nothing to copy */
            a->st.deleted++;
        }
    }
    /* All copies or none: one that cannot be stored (no room) would lose
     * its destinations, so the bundle waits whole and is tried again. */
    /* not zeroed: entries [0, nmade) are filled before they are read */
    bp__bnd **made = malloc((ng + 1) * sizeof *made);
    bp_bundle *mf = malloc((ng + 1) * sizeof *mf);
    uint8_t **mlist = malloc((ng + 1) * sizeof *mlist),
            **mbytes = malloc((ng + 1) * sizeof *mbytes);
    size_t nmade = 0;
    bool short_of_room = !made || !mf || !mlist || !mbytes;
    for (size_t k = 0; k < ng && !short_of_room; k++) {
        size_t len;
        if (imc_encode(from, bn->len, gang[k].dst, gang[k].n, &mf[k], &mlist[k],
                       &mbytes[k], &len)) {
            short_of_room = true;
            break;
        }
        nmade = k + 1;
        if (admit(a, mbytes[k], len, &mf[k], &made[k])) {
            made[k] = NULL;
            short_of_room = true;
        }
    }
    if (short_of_room) {
        for (size_t k = 0; k < nmade; k++)
            if (made[k])
                discard(a, made[k]);
        log_once(a, "group bundle held", "no room in the store for its copies now");
        bn->state = BN_LIMBO;
        bp__bq_push(&a->limbo, bn, 0);
        a->st.limbo++;
        if (!tern_timer_is_active(&a->imc_retry))
            tern_timer_start(&a->imc_retry, imc_retry_fire, a, 100000000ull, 0);
    } else {
        for (size_t k = 0; k < ng; k++) {
            made[k]->arrival_ms = bn->arrival_ms;
            claim_join(a, made[k], bn->claim);
            if (gang[k].od) {
                a->imc.st.copies++;
                imc_book(a, made[k], &mf[k], gang[k].dst[0], prev);
            }
            to_duct(a, made[k], &mf[k], gang[k].od, front);
        }
    }
    for (size_t k = 0; k < nmade; k++) {
        bp_bundle_release(&mf[k]);
        free(mlist[k]);
        free(mbytes[k]);
    }
    free(made);
    free(mf);
    free(mlist);
    free(mbytes);
    if (loaded)
        bp_bundle_release(&fb);
    free(fowned);
    if (short_of_room)
        goto done;
    if (here && g == 0) {
        imc_take_petition(a, b);
        discard(a, bn);
    } else if (here && ep_find(a, &b->pri.dest)) {
        a->imc.st.delivered++;
        if (b->pri.flags & BP_FLAG_FRAGMENT)
            hold_fragment(a, bn, b);
        else
            deliver(a, bn, b);
    } else {
        if (here)
            a->imc.st.no_endpoint++;
        discard(a, bn);
    }
done:
    free(via);
    free(pool);
    free(gang);
    imc_dests_free(d, local);
    return 0;
nomem:
    free(via);
    free(pool);
    free(gang);
    imc_dests_free(d, local);
    bn->state = BN_LIMBO; /* tried again when routes change */
    bp__bq_push(&a->limbo, bn, 0);
    a->st.limbo++;
    return -ENOMEM;
}

/* This node announces itself to the region (its members brief it), then
 * its own groups: at start, and so after a restart too. */
static void imc_announce(bp_agent *a)
{
    imc_petition(a, 0, true);
    for (size_t i = 0; i < a->imc.n; i++)
        if (a->imc.g[i].local && a->imc.g[i].group)
            imc_petition(a, a->imc.g[i].group, true);
}

TERN_API void bp_agent_imc_enable(bp_agent *a)
{
    if (a->imc_on)
        return;
    a->imc_on = true;
    if (a->resumed)
        imc_announce(a);
}

/* Local membership of group g follows its endpoints: one registered to
 * queue (rule q) or open makes this node a member. */
static void imc_local_update(bp_agent *a, uint64_t g)
{
    bool member = false;
    for (size_t i = 0; i < a->neps && !member; i++) {
        const bp__ep *ep = a->eps[i];
        member = ep->eid.scheme == BP_SCHEME_IMC && ep->eid.node == g &&
                 (ep->open || ep->rule == BP_RECV_QUEUE);
    }
    int rc = bp__imc_local_set(&a->imc, g, member);
    if (rc == 1 && member && !a->imc_on) {
        bp_agent_imc_enable(a); /* announces this group too */
        return;
    }
    if (rc == 1 && a->resumed)
        imc_petition(a, g, member);
    else if (rc < 0)
        TERN_WARN(a->lg, "bp", "imc group %" PRIu64 ": %s", g, tern_strerror(rc));
}

TERN_API int bp_agent_imc_node_add(bp_agent *a, uint64_t node)
{
    if (!node || node == a->node)
        return 0;
    int rc = bp__u64_add(&a->imc.region, &a->imc.nregion, &a->imc.capregion,
                         BP_IMC_LIST_MAX, node);
    return rc < 0 ? rc : 0;
}

TERN_API size_t bp_agent_imc_members(const bp_agent *a, uint64_t group, uint64_t *nodes,
                                     size_t max)
{
    const bp__imc_group *g = bp__imc_find(&a->imc, group);
    if (!g)
        return 0;
    size_t k = 0;
    bool self = g->local;
    for (size_t i = 0; i <= g->n; i++) {
        uint64_t x = i < g->n ? g->nodes[i] : UINT64_MAX;
        if (self && a->node < x) {
            if (k < max)
                nodes[k] = a->node;
            k++;
            self = false;
        }
        if (i < g->n) {
            if (k < max)
                nodes[k] = x;
            k++;
        }
    }
    return k;
}

TERN_API size_t bp_agent_imc_groups(const bp_agent *a, uint64_t *groups, size_t max)
{
    size_t k = 0;
    for (size_t i = 0; i < a->imc.n; i++)
        if (a->imc.g[i].n || a->imc.g[i].local) {
            if (k < max)
                groups[k] = a->imc.g[i].group;
            k++;
        }
    return k;
}

TERN_API void bp_agent_imc_stats_get(const bp_agent *a, bp_imc_stats *st)
{
    *st = a->imc.st;
}

/* Dispatches a stored bundle that is in no queue (decoding its bytes). */
static void redispatch(bp_agent *a, bp__bnd *bn, int front)
{
    const uint8_t *bytes;
    uint8_t *owned;
    bp_bundle b;
    int rc = load(a, bn, &bytes, &owned);
    const char *why = "unreadable in the store";
    if (!rc)
        rc = bp_bundle_decode(bytes, bn->len, &b, NULL, &why);
    if (rc) {
        log_once(a, "stored bundle dropped", why);
        a->st.deleted++;
        discard(a, bn);
    } else {
        dispatch(a, bn, &b, front);
        bp_bundle_release(&b);
    }
    free(owned);
}

/* ------------------------------------------------------------ transmission */

static bp__bnd *pick(bp_outduct *od)
{
    bp__bnd *bn = NULL;
    for (int w = 3; w >= 0 && !bn; w--) {
        if (!od->exbits[w])
            continue;
        int bit = 63 - __builtin_clzll(od->exbits[w]);
        bn = od->exq[w * 64 + bit].head;
    }
    if (!bn)
        bn = od->q[BP_PRIO_STANDARD].head;
    if (!bn)
        bn = od->q[BP_PRIO_BULK].head;
    return bn;
}

/* The bytes of a bundle as they go on the wire: bundle age grown by the
 * time spent here, hop count up by one, this node as previous node. Where
 * the stored bytes already say so (bn->wire) they go as they are, without a
 * copy if the store holds them in memory; otherwise bn->xbuf gets the copy.
 * *out stays valid until the bundle's transmission ends. */
static int wire_copy(bp_agent *a, bp__bnd *bn, const uint8_t **out, size_t *outlen)
{
    const uint8_t *bytes;
    uint8_t *owned;
    bp_bundle b;
    int rc;
    if (bn->wire) {
        const void *p;
        size_t n;
        rec_hdr h;
        *outlen = bn->len;
        if (bn->blob == REC_INLINE) {
            *out = sdr_peek(a->store, bn->rec + sizeof(rec_hdr), bn->len);
            return *out ? 0 : TERN_ECORRUPT;
        }
        if ((rc = sdr_read(a->store, bn->rec, &h, sizeof h)))
            return rc;
        if (bn->blob == REC_FILE) {
            uint8_t *buf = xbuf_get(a, bn->len);
            if (!buf)
                return -ENOMEM;
            if ((rc = file_load(a, bn, buf))) {
                xbuf_put(a, buf);
                return rc;
            }
            bn->xbuf = buf;
            *out = buf;
            return 0;
        }
        if ((rc = sdr_blob_peek(a->store, h.blob_off, &p, &n)) == 0) {
            *out = p;
            return n == bn->len ? 0 : TERN_ECORRUPT;
        }
        if (rc != -ENOTSUP)
            return rc;
        uint8_t *buf = xbuf_get(a, bn->len);
        if (!buf)
            return -ENOMEM;
        if ((rc = sdr_blob_read(a->store, h.blob_off, 0, buf, bn->len))) {
            xbuf_put(a, buf);
            return rc;
        }
        bn->xbuf = buf;
        *out = buf;
        return 0;
    }
    owned = NULL;
    if ((rc = load_view(a, bn, &bytes)))
        return rc;
    if ((rc = bp_bundle_decode(bytes, bn->len, &b, NULL, NULL)))
        goto out;
    uint64_t now = now_ms(a);
    if (b.has_age)
        b.age_ms = sat_add(b.age_ms, now > bn->arrival_ms ? now - bn->arrival_ms : 0);
    if (b.has_hop_count)
        b.hop_count = sat_add(b.hop_count, 1);
    /* RFC 9171 4.1 wants the indefinite form on the wire; a peer's definite
     * one is taken but not passed on. Blocks and their CRCs stay as they are:
     * a CRC covers its block only, not the outer array. */
    b.definite = false;
    bp_eid_ipn(&b.prev_node, a->node, 0);
    if (!b.has_prev_node && bp_bundle_reserve(&b, b.n_blocks + 1) == 0) {
        uint64_t num = 1;
        for (size_t i = 0; i < b.n_blocks; i++)
            if (BLK(&b)[i].number >= num)
                num = BLK(&b)[i].number + 1;
        BLK(&b)[b.n_blocks] = BLK(&b)[b.n_blocks - 1];
        BLK(&b)[b.n_blocks - 1] = (bp_block){.type = BP_BLOCK_PREV_NODE, .number = num};
        b.n_blocks++;
        b.has_prev_node = true;
    }
    size_t cap = bn->len + 64 + BP_DTN_SSP_MAX + 32;
    uint8_t *buf = xbuf_get(a, cap);
    if (!buf) {
        rc = -ENOMEM;
        goto out;
    }
    if ((rc = bp_bundle_encode(&b, buf, cap, outlen, NULL))) {
        xbuf_put(a, buf);
        goto out;
    }
    bn->xbuf = buf;
    *out = buf;
out:
    bp_bundle_release(&b);
    free(owned);
    return rc;
}

static void gate_fire(tern_timer *t, void *arg)
{
    (void)t;
    pump(arg);
}

/* Whether a gated duct may hand its CLA a bundle now; if it owes bytes, its
 * timer is set for when they are paid. */
static bool gate_allows(bp_outduct *od)
{
    if (od->gate == BP_GATE_NONE)
        return true;
    if (od->gate != BP_GATE_OPEN)
        return false;
    if (!od->gate_rate)
        return true;
    uint64_t now = tern_loop_now(od->a->loop);
    double burst = (double)od->gate_rate / 10.0;
    if (now > od->tok_ns) {
        od->tokens += (double)(now - od->tok_ns) * (double)od->gate_rate / 1e9;
        if (od->tokens > burst)
            od->tokens = burst;
    }
    od->tok_ns = now;
    if (od->tokens >= 0.0) {
        /* its last byte must leave before the contact ends */
        bp__bnd *next = od->gate_end ? pick(od) : NULL;
        double wire = next ? (double)next->len + 32.0 : 0.0; /* hop rewrites may add */
        if (next && now + (uint64_t)(wire * 1e9 / (double)od->gate_rate) > od->gate_end)
            return false;
        return true;
    }
    uint64_t wait_ns = (uint64_t)(-od->tokens * 1e9 / (double)od->gate_rate) + 1;
    if (!tern_timer_is_active(&od->gate_tm))
        tern_timer_start(&od->gate_tm, gate_fire, od, wait_ns, 0);
    return false;
}

static void pump(bp_outduct *od)
{
    bp_agent *a = od->a;
    if (od->pumping) {
        od->again = true;
        return;
    }
    od->pumping = true;
    do {
        od->again = false;
        while (od->up && !od->busy && !od->stalled && od->nqueued && gate_allows(od)) {
            bp__bnd *bn = pick(od);
            const uint8_t *buf;
            size_t len;
            int rc = wire_copy(a, bn, &buf, &len);
            if (rc) { /* still queued: discard unlinks it (once) */
                log_once(a, "stored bundle could not be sent",
                         bn->blob == REC_FILE && rc == -ESTALE
                             ? "the file its payload is read from changed"
                             : tern_strerror(rc));
                a->st.deleted++;
                discard(a, bn);
                continue;
            }
            unlink_bundle(a, bn);
            bn->state = BN_FLIGHT;
            bn->od = od;
            bn->xmit = ++a->xmit_seq;
            if (bp__map_put(&a->inflight, bn->xmit, bn)) {
                xbuf_put(a, bn->xbuf);
                bn->xbuf = NULL;
                bn->state = BN_LOOSE;
                enqueue(od, bn, 1);
                break;
            }
            a->st.in_flight++;
            rc = od->ops->send(od->cla, od->duct, buf, len, bn->xmit);
            if (rc == 0) {
                od->bytes_out += len;
                if (od->gate == BP_GATE_OPEN)
                    od->tokens -= (double)len;
                continue;
            }
            /* not taken: back to the head of its queue */
            bp__map_del(&a->inflight, bn->xmit);
            a->st.in_flight--;
            xbuf_put(a, bn->xbuf);
            bn->xbuf = NULL;
            bn->state = BN_LOOSE;
            if (rc == -EMSGSIZE) {
                /* Queued before the CLA learnt its limit (a TCPCLv4 peer's
                 * transfer MRU comes with its session): fragmented now if
                 * it may be, else deleted with its report. */
                if (too_big_fragment(a, od, bn))
                    continue;
                too_big_late(a, od, bn);
                continue;
            }
            enqueue(od, bn, 1);
            if (rc == -EAGAIN) {
                od->busy = true;
            } else {
                a->st.reforwarded++;
                log_once(a, "outduct refused a bundle", tern_strerror(rc));
                od->stalled = true;
                tern_timer_start(&od->retry, duct_retry, od, 1000000000ull, 0);
            }
            break;
        }
    } while (od->again && od->up && !od->busy && !od->stalled && od->nqueued &&
             gate_allows(od));
    od->pumping = false;
}

static void duct_retry(tern_timer *t, void *arg)
{
    (void)t;
    bp_outduct *od = arg;
    od->stalled = false;
    pump(od);
}

TERN_API void bp_outduct_result(bp_outduct *od, uint64_t xmit, int result)
{
    bp_agent *a = od->a;
    bp__bnd *bn = bp__map_del(&a->inflight, xmit);
    if (!bn)
        return;
    a->st.in_flight--;
    xbuf_put(a, bn->xbuf);
    bn->xbuf = NULL;
    if (bn->state == BN_DEAD) {
        if (bn->drop_late)
            store_drop(a, bn);
        bnd_free(a, bn);
        return;
    }
    bn->od = NULL;
    bn->state = BN_LOOSE;
    if (od->closing && result != BP_XMIT_OK) {
        bp__bq_push(&a->reflow, bn, 0);
        return;
    }
    if (result == BP_XMIT_OK) {
        a->st.forwarded++;
        if (bn->pflags & BP_FLAG_RPT_FORWARD) {
            const uint8_t *bytes;
            uint8_t *owned;
            bp_bundle b;
            if (load(a, bn, &bytes, &owned) == 0 &&
                bp_bundle_decode(bytes, bn->len, &b, NULL, NULL) == 0) {
                report(a, &b.pri, BLK(&b)[b.n_blocks - 1].data_len, BP_FLAG_RPT_FORWARD,
                       0);
                bp_bundle_release(&b);
            }
            free(owned);
        }
        discard(a, bn);
        return;
    }
    a->st.reforwarded++;
    if (od->pumping) {
        /* The CLA failed it from inside send: sending again at once would
         * loop, so the duct rests a second. */
        enqueue(od, bn, 0);
        od->stalled = true;
        tern_timer_start(&od->retry, duct_retry, od, 1000000000ull, 0);
        return;
    }
    redispatch(a, bn, 1);
}

TERN_API void bp_outduct_ready(bp_outduct *od)
{
    od->busy = false;
    pump(od);
}

TERN_API void bp_outduct_set_up(bp_outduct *od, bool up)
{
    od->up = up;
    if (up)
        pump(od);
}

TERN_API void bp_outduct_set_max_bundle(bp_outduct *od, size_t max_len, const char *what)
{
    od->max_bundle = max_len;
    snprintf(od->limit_why, sizeof od->limit_why, "%s", max_len && what ? what : "");
}

TERN_API void bp_outduct_set_max_payload(bp_outduct *od, size_t max_payload)
{
    od->max_payload = max_payload;
}

TERN_API size_t bp_outduct_queued(const bp_outduct *od)
{
    return od->nqueued;
}

TERN_API uint64_t bp_outduct_bytes_out(const bp_outduct *od)
{
    return od->bytes_out;
}

TERN_API void bp_outduct_set_gate(bp_outduct *od, int gate, uint64_t rate,
                                  uint64_t until_ms)
{
    if (gate != BP_GATE_OPEN && gate != BP_GATE_CLOSED)
        gate = BP_GATE_NONE;
    bool opening = gate != BP_GATE_CLOSED && od->gate == BP_GATE_CLOSED;
    if (gate == BP_GATE_OPEN && od->gate != BP_GATE_OPEN) {
        od->tokens = 0.0; /* a new contact: its first bundle goes at once */
        od->tok_ns = tern_loop_now(od->a->loop);
    }
    od->gate = gate;
    od->gate_rate = gate == BP_GATE_OPEN ? rate : 0;
    od->gate_end = 0;
    if (gate == BP_GATE_OPEN && until_ms) {
        uint64_t now = now_ms(od->a);
        uint64_t left = until_ms > now ? until_ms - now : 0;
        od->gate_end = tern_loop_now(od->a->loop) + left * TERN_NS_PER_MS;
    }
    if (gate != BP_GATE_OPEN || !rate)
        tern_timer_stop(&od->gate_tm);
    if (opening || gate != BP_GATE_CLOSED)
        pump(od);
}

TERN_API int bp_outduct_gate(const bp_outduct *od, uint64_t *rate)
{
    if (rate)
        *rate = od->gate_rate;
    return od->gate;
}

/* ------------------------------------------------------------- reception */

/* Checks a decoded bundle from a peer; returns 0 to keep it, or a reason code
 * (with *drop_silently for duplicates). May rewrite *b (blocks discarded). */
static int vet(bp_agent *a, bp_bundle *b, bool *changed, bool *block_report,
               uint64_t arrival)
{
    *changed = false;
    *block_report = false;
    for (size_t i = 0; i + 1 < b->n_blocks;) {
        const bp_block *k = &BLK(b)[i];
        if (bp_block_type_known(k->type) || k->type == ION_COS_BLOCK ||
            k->type == BP_BLOCK_IMC_DESTS) {
            i++;
            continue;
        }
        bool rep;
        bp_unknown_action act = bp_block_unknown_action(k->flags, &rep);
        *block_report |= rep;
        if (act == BP_UNKNOWN_DELETE_BUNDLE)
            return BP_REASON_BLOCK_UNSUPPORTED;
        if (act == BP_UNKNOWN_DISCARD_BLOCK) {
            memmove(&BLK(b)[i], &BLK(b)[i + 1], (b->n_blocks - i - 1) * sizeof *k);
            b->n_blocks--;
            *changed = true;
            continue;
        }
        i++;
    }
    if (expiry_of(b, arrival) <= arrival)
        return BP_REASON_EXPIRED;
    /* RFC 9171 4.4.3: a bundle whose hop count exceeds its limit is deleted,
     * whatever its destination. One to be forwarded may not reach its limit
     * either: forwarding counts one hop more. */
    if (b->has_hop_count &&
        (b->hop_count > b->hop_limit ||
         (!is_local(a, &b->pri.dest) && b->hop_count == b->hop_limit)))
        return BP_REASON_HOP_LIMIT;
    return 0;
}

/* A group bundle from a peer: duplicates are suppressed per destination
 * (two copies of one bundle, split on the way, serve different
 * destinations), and what is kept is stored listing only the destinations
 * not served here before. */
static int receive_group(bp_agent *a, bp_bundle *b, const uint8_t *p, size_t used,
                         bool changed, bool block_report, uint64_t key)
{
    uint64_t payload_len = BLK(b)[b->n_blocks - 1].data_len;
    uint64_t *d = NULL, local[IMC_LOCAL];
    size_t n = 0, k = 0;
    int rc;
    const bp_block *blk = imc_block(b);
    if (blk) {
        if ((rc = imc_dests(a, b, local, &d, &n)) < 0) {
            a->st.malformed++;
            return rc == -ENOMEM ? rc : 0;
        }
    } else {
        /* No destinations block (a sender that does not split): this node
         * serves the group's members it knows, itself included, but not the
         * node it came from. A petition without one is only for here. */
        uint64_t g = b->pri.dest.node;
        if (g == 0) {
            if (!(d = malloc(sizeof *d)))
                return -ENOMEM;
            d[n++] = a->node;
        } else if ((rc = imc_targets(a, g, &d, &n))) {
            return rc;
        }
        bp__u64_del(d, &n, prev_of(b));
    }
    if (key && is_local(a, &b->pri.src) && bp__map_get(&a->seen, key)) {
        /* made here: every destination was served when it was */
        a->imc.st.seen_before += n;
        a->st.duplicates++;
        imc_dests_free(d, local);
        return 0;
    }
    if (!n) { /* nobody this node knows of is to get it */
        a->st.deleted++;
        a->imc.st.no_members++;
        log_once(a, "group bundle deleted", "no member of its group known here");
        imc_dests_free(d, local);
        return 0;
    }
    /* Per-destination keys exist only for bundles this node saw before
     * (the plain key says so): the first copy costs one lookup, not one
     * per destination. */
    bool known = key && bp__map_get(&a->seen, key);
    for (size_t i = 0; i < n; i++) {
        uint64_t kd = known ? nonzero(bp__mix(key, d[i])) : 0;
        if (kd && bp__map_get(&a->seen, kd))
            a->imc.st.seen_before++;
        else
            d[k++] = d[i];
    }
    if (!k) {
        a->st.duplicates++;
        imc_dests_free(d, local);
        return 0;
    }
    const uint8_t *bytes = p;
    size_t len = used;
    uint8_t *re = NULL, *list = NULL;
    bp_bundle f;
    bool rebuilt = changed || k != n || !blk;
    if (rebuilt) {
        if ((rc = imc_encode(b, used, d, k, &f, &list, &re, &len))) {
            imc_dests_free(d, local);
            if (rc == -ENOMEM)
                return rc;
            a->st.malformed++;
            log_once(a, "group bundle dropped, cannot be re-encoded", tern_strerror(rc));
            return 0;
        }
        bytes = re;
    }
    bp__bnd *bn;
    rc = admit(a, bytes, len, rebuilt ? &f : b, &bn);
    if (rc == 0) {
        /* the destinations it serves are remembered by imc_dispatch, which
         * knows which ones those are (not those routed back) */
        seen_add(a, key);
        a->st.received++;
        if (block_report)
            report_now(a, &b->pri, payload_len, BP_FLAG_RPT_RECEPTION,
                       BP_REASON_BLOCK_UNSUPPORTED);
        else
            report(a, &b->pri, payload_len, BP_FLAG_RPT_RECEPTION, 0);
        dispatch(a, bn, rebuilt ? &f : b, 0);
    }
    if (rebuilt) {
        bp_bundle_release(&f);
        free(list);
        free(re);
    }
    imc_dests_free(d, local);
    return rc;
}

/* Takes the decoded bundle b, whose bytes are p[0..used). */
static int receive_decoded(bp_agent *a, bp_bundle *b, const uint8_t *p, size_t used)
{
    int rc;
    if (b->pri.ctime_ms == 0 && !b->has_age) {
        /* RFC 9171 4.4.2: a bundle made without a clock must carry its age;
         * without it, its lifetime cannot be judged here or anywhere after.
         * The bundle is whole and delimited, so what follows it is read. */
        a->st.malformed++;
        log_once(a, "bundle refused", "creation time 0 without a bundle age block");
        return 0;
    }
    uint64_t arrival = now_ms(a);
    bool changed, block_report;
    uint64_t payload_len = BLK(b)[b->n_blocks - 1].data_len;
    int reason = vet(a, b, &changed, &block_report, arrival);
    if (reason) {
        /* Not stored: a report names it, nothing else remains. RFC 9171 5.6
         * step 3 comes before the deletion: a block that asks for a report
         * if it can't be processed gets its reception report first. */
        if (block_report)
            report_now(a, &b->pri, payload_len, BP_FLAG_RPT_RECEPTION,
                       BP_REASON_BLOCK_UNSUPPORTED);
        a->st.deleted++;
        if (reason == BP_REASON_EXPIRED)
            a->st.expired++;
        else if (reason == BP_REASON_HOP_LIMIT)
            a->st.hop_exceeded++;
        report(a, &b->pri, payload_len, BP_FLAG_RPT_DELETION, (uint64_t)reason);
        return 0;
    }
    uint64_t key = bundle_key(&b->pri, payload_len);
    if (b->pri.dest.scheme == BP_SCHEME_IMC)
        return receive_group(a, b, p, used, changed, block_report, key);
    if (key && bp__map_get(&a->seen, key)) {
        a->st.duplicates++;
        return 0;
    }
    const uint8_t *bytes = p;
    size_t n = used;
    uint8_t *re = NULL;
    if (changed) {
        size_t cap = n + 64;
        re = malloc(cap);
        if (!re)
            return -ENOMEM;
        const char *why = NULL;
        if ((rc = bp_bundle_encode(b, re, cap, &n, &why)) < 0) {
            /* Not a resource error: one taken for "full" would leave the
             * peer sending it again for ever. */
            free(re);
            a->st.malformed++;
            log_once(a, "bundle dropped, cannot be re-encoded", why);
            return 0;
        }
        bytes = re;
    }
    bp__bnd *bn;
    rc = admit(a, bytes, n, b, &bn);
    if (rc == 0) {
        /* remembered only once kept: a refused bundle is welcome again */
        seen_add(a, key);
        a->st.received++;
        /* One reception report: with reason 11 (block unsupported) when a
         * block that could not be processed asks for it (RFC 9171 5.6 step
         * 3), whether or not the bundle asked for reception reports. */
        if (block_report)
            report_now(a, &b->pri, payload_len, BP_FLAG_RPT_RECEPTION,
                       BP_REASON_BLOCK_UNSUPPORTED);
        else
            report(a, &b->pri, payload_len, BP_FLAG_RPT_RECEPTION, 0);
        if (changed) { /* b's views point into re: decode the stored copy */
            const uint8_t *sb;
            uint8_t *owned;
            bp_bundle sbd;
            if (load(a, bn, &sb, &owned) == 0 &&
                bp_bundle_decode(sb, bn->len, &sbd, NULL, NULL) == 0) {
                dispatch(a, bn, &sbd, 0);
                bp_bundle_release(&sbd);
            }
            free(owned);
        } else {
            dispatch(a, bn, b, 0);
        }
    }
    free(re);
    return rc;
}

/* Takes the bundle at p; *malformed tells a bundle that is bad (sending it
 * again would not help) from one this node could not keep (no room, no
 * memory, a store I/O error: the peer must keep its copy). */
static int receive_one(bp_agent *a, const uint8_t *p, size_t len, size_t *used,
                       bool *malformed)
{
    bp_bundle b;
    const char *why = NULL;
    *malformed = false;
    int rc = bp_bundle_decode(p, len, &b, used, &why);
    if (rc == -ENOMEM)
        return rc; /* no memory for its many blocks: the peer keeps it */
    if (rc) {
        a->st.malformed++;
        log_once(a, "malformed bundle dropped", why);
        *malformed = true;
        return rc;
    }
    rc = receive_decoded(a, &b, p, *used);
    bp_bundle_release(&b);
    return rc;
}

/* As bp_agent_receive; *kept_back is set when a bundle of data could not be
 * kept here (the error returned), so nothing of data may be claimed. */
static int receive_all(bp_agent *a, const uint8_t *data, size_t len, bool *kept_back)
{
    int taken = 0;
    size_t at = 0;
    *kept_back = false;
    while (at < len) {
        size_t used = 0;
        bool malformed;
        int rc = receive_one(a, data + at, len - at, &used, &malformed);
        if (rc < 0 && !malformed) {
            /* Full, out of memory or a store I/O error (-ENOSPC, -EIO):
             * whatever the cause, the peer must keep its copy. Bundles of
             * data already taken are known duplicates when it comes again. */
            *kept_back = true;
            return rc;
        }
        if (rc < 0)
            return taken ? taken : rc;
        taken++;
        at += used;
    }
    return taken;
}

TERN_API int bp_agent_receive(bp_agent *a, const uint8_t *data, size_t len)
{
    bool kept_back;
    return receive_all(a, data, len, &kept_back);
}

static void claim_durable(void *ctx, uint64_t id, uint64_t arg2)
{
    (void)arg2;
    bp_agent *a = ctx;
    struct claim *c = bp__map_del(&a->claims, id);
    if (!c)
        return;
    if (!c->fired)
        c->cb(c->ctx, c->arg1, c->arg2);
    free(c);
}

/* Opens a claim: the bundles admitted from now on (and fragments made of
 * them) join it until claim_end. Claims nest. */
static int claim_begin(bp_agent *a)
{
    struct claim *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    c->id = ++a->claim_seq;
    /* In the map from the start, so that fragments made while it is open
     * can join it. */
    int rc = bp__map_put(&a->claims, c->id, c);
    if (rc < 0) {
        free(c);
        return rc;
    }
    c->open = true;
    c->outer = a->claim_cur;
    a->claim_cur = c;
    return 0;
}

/* Closes the open claim: 0 if its bundles are already safe, 1 if cb will be
 * called once they are (bp_agent_receive_claim), negative on error; with cb
 * NULL the claim is dropped. */
static int claim_end(bp_agent *a, bp_durable_cb cb, void *ctx, uint64_t arg1,
                     uint64_t arg2)
{
    struct claim *c = a->claim_cur;
    if (!c)
        return -EINVAL;
    a->claim_cur = c->outer;
    c->open = false;
    uint64_t mark = bp_agent_durable_mark(a);
    int rc = 0;
    if (cb && c->pending && !bp_agent_is_durable(a, mark)) {
        c->cb = cb;
        c->ctx = ctx;
        c->arg1 = arg1;
        c->arg2 = arg2;
        if ((rc = bp_agent_durable_wait(a, mark, claim_durable, a, c->id, 0)) == 1)
            return 1;
    }
    /* Settled (or cannot be waited for): its bundles keep an id no claim
     * has any more, and count for none. */
    bp__map_del(&a->claims, c->id);
    free(c);
    return rc;
}

TERN_API int bp_agent_receive_claim(bp_agent *a, const uint8_t *data, size_t len,
                                    bp_durable_cb cb, void *ctx, uint64_t arg1,
                                    uint64_t arg2)
{
    int rc = claim_begin(a);
    if (rc)
        return rc;
    bool kept_back;
    int got = receive_all(a, data, len, &kept_back);
    if (kept_back) {
        claim_end(a, NULL, NULL, 0, 0); /* nothing may be claimed */
        return got;
    }
    return claim_end(a, cb, ctx, arg1, arg2);
}

/* -------------------------------------------------------------- creation */

TERN_API void bp_send_opts_init(bp_send_opts *o)
{
    memset(o, 0, sizeof *o);
    o->lifetime_ms = 86400000;
    o->priority = BP_PRIO_STANDARD;
}

static int create_from(bp_agent *a, const bp_eid *src, const bp_eid *dest,
                       const bp_send_opts *o, uint64_t extra_flags, const void *payload,
                       size_t len, const file_src *fs, bp_bundle_ref *ref)
{
    static const uint64_t allowed = BP_FLAG_NO_FRAGMENT | BP_FLAG_ACK_REQ |
                                    BP_FLAG_STATUS_TIME | BP_FLAG_RPT_RECEPTION |
                                    BP_FLAG_RPT_FORWARD | BP_FLAG_RPT_DELIVERY |
                                    BP_FLAG_RPT_DELETION;
    if ((o->flags & ~allowed) || o->priority < BP_PRIO_BULK ||
        o->priority > BP_PRIO_EXPEDITED || o->ordinal > 254 || o->hop_limit > 255 ||
        (!payload && len))
        return -EINVAL;
    /* A group bundle names its destinations from the start (block 195), so
     * that it goes as stored when one copy serves them all. */
    uint64_t *imc_dst = NULL;
    size_t imc_n = 0;
    uint8_t imc_list[9 * 64 + 9], *imc_big = NULL, *imc_data = imc_list;
    size_t imc_len = 0;
    if (dest->scheme == BP_SCHEME_IMC) {
        int rc = imc_targets(a, dest->node, &imc_dst, &imc_n);
        if (rc)
            return rc;
        if (!imc_n) {
            free(imc_dst);
            a->imc.st.no_members++;
            return TERN_ENOROUTE;
        }
        if (imc_n > 64 && !(imc_data = imc_big = malloc(9 * imc_n + 9))) {
            free(imc_dst);
            return -ENOMEM;
        }
        rc = bp_imc_list_encode(imc_dst, imc_n, imc_data, 9 * imc_n + 9, &imc_len);
        if (rc) {
            free(imc_dst);
            free(imc_big);
            return rc;
        }
    }
    bp_bundle b;
    memset(&b.pri, 0, sizeof b.pri);
    b.definite = false;
    b.pri.version = 7;
    b.pri.flags = o->flags | extra_flags;
    b.pri.crc_type = (uint8_t)a->crc_type;
    b.pri.dest = *dest;
    b.pri.src = *src;
    if (o->report_to)
        b.pri.report_to = *o->report_to;
    else
        b.pri.report_to = *src;
    if (bp_eid_is_none(src)) {
        /* RFC 9171 4.2.3: nothing can identify an anonymous bundle, so it
         * must not be fragmented and asks for no report; ION drops one
         * that does. Whatever the application asked for, then. */
        b.pri.flags |= BP_FLAG_NO_FRAGMENT;
        b.pri.flags &= ~(uint64_t)(BP_FLAG_RPT_RECEPTION | BP_FLAG_RPT_FORWARD |
                                   BP_FLAG_RPT_DELIVERY | BP_FLAG_RPT_DELETION |
                                   BP_FLAG_STATUS_TIME);
        bp_eid_none(&b.pri.report_to);
    }
    uint64_t now = now_ms(a);
    b.pri.ctime_ms = now;
    b.pri.seq = now == a->last_ctime ? a->last_seq + 1 : 0;
    b.pri.lifetime_ms = o->lifetime_ms;
    b.n_blocks = 0;
    b.ext = NULL; /* at most 5 blocks: all in b.blocks */
    b.ext_cap = 0;
    b.has_prev_node = b.has_age = b.has_hop_count = false;
    uint64_t num = 2;
    uint8_t cos[8];
    /* Named here, so that forwarding sends the stored bytes as they are. */
    BLK(&b)[b.n_blocks++] = (bp_block){.type = BP_BLOCK_PREV_NODE, .number = num++};
    b.has_prev_node = true;
    bp_eid_ipn(&b.prev_node, a->node, 0);
    if (now == 0) { /* no clock: RFC 9171 wants a bundle age block */
        BLK(&b)[b.n_blocks++] = (bp_block){.type = BP_BLOCK_AGE, .number = num++};
        b.has_age = true;
        b.age_ms = 0;
    }
    if (o->hop_limit) {
        BLK(&b)[b.n_blocks++] = (bp_block){.type = BP_BLOCK_HOP_COUNT, .number = num++};
        b.has_hop_count = true;
        b.hop_limit = o->hop_limit;
        b.hop_count = 0;
    }
    if (o->priority != BP_PRIO_STANDARD) {
        cos[0] = 0x84;
        cos[1] = 0;
        cos[2] = (uint8_t)o->priority;
        size_t k = 3;
        if (o->ordinal < 24) {
            cos[k++] = (uint8_t)o->ordinal;
        } else {
            cos[k++] = 0x18;
            cos[k++] = (uint8_t)o->ordinal;
        }
        cos[k++] = 0;
        BLK(&b)
        [b.n_blocks++] = (bp_block){.type = ION_COS_BLOCK,
                                    .number = num++,
                                    .flags = 0,
                                    .data = cos,
                                    .data_len = k};
    }
    if (imc_len)
        BLK(&b)
    [b.n_blocks++] = (bp_block){.type = BP_BLOCK_IMC_DESTS,
                                .number = num++,
                                .flags = BP_BLK_REPLICATE,
                                .data = imc_data,
                                .data_len = imc_len};
    BLK(&b)
    [b.n_blocks++] = (bp_block){
        .type = BP_BLOCK_PAYLOAD, .number = 1, .data = payload, .data_len = len};

    /* Everything but the payload is encoded here; the payload goes from the
     * caller's buffer to the store in one copy. */
    uint8_t buf[4 * (BP_DTN_SSP_MAX + 16) + 192];
    size_t head, tail;
    uint8_t *hb = buf;
    size_t hcap = sizeof buf;
    if (imc_len) { /* room for the list */
        hcap += imc_len;
        if (!(hb = malloc(hcap))) {
            free(imc_big);
            return -ENOMEM;
        }
    }
    int rc = bp_bundle_encode_split(&b, hb, hcap, &head, &tail, NULL);
    bp__bnd *bn = NULL;
    if (!rc) {
        struct iovec v[3] = {{hb, head}, {(void *)payload, len}, {hb + head, tail}};
        rc = admitv_from(a, v, 3, fs, &b, &bn);
    }
    if (hb != buf)
        free(hb);
    if (rc) {
        free(imc_dst);
        free(imc_big);
        return rc;
    }
    if (imc_len) {
        a->imc.st.sent += b.pri.dest.node != 0;
        /* A copy that comes back (a broadcast medium loops it) is not
         * delivered or forwarded again: receive_group knows this node's own
         * bundles by the plain key seen_add below records, without a key
         * per destination. */
    }
    free(imc_dst);
    a->last_ctime = now;
    a->last_seq = b.pri.seq;
    a->st.created++;
    seen_add(a, bundle_key(&b.pri, len));
    if (ref) {
        ref->ctime_ms = b.pri.ctime_ms;
        ref->seq = b.pri.seq;
    }
    a->creating = true;
    rc = dispatch(a, bn, &b, 0);
    a->creating = false;
    free(imc_big);
    return rc;
}

static int create(bp_agent *a, const bp_eid *src, const bp_eid *dest,
                  const bp_send_opts *o, uint64_t extra_flags, const void *payload,
                  size_t len, bp_bundle_ref *ref)
{
    return create_from(a, src, dest, o, extra_flags, payload, len, NULL, ref);
}

TERN_API int bp_agent_send_file(bp_agent *a, const bp_eid *src, const bp_eid *dest,
                                const bp_send_opts *o, const void *head, size_t hlen,
                                int fd, uint64_t off, uint64_t len, bp_bundle_ref *ref)
{
    bp_send_opts def;
    if (!o) {
        bp_send_opts_init(&def);
        o = &def;
    }
    uint64_t plen, end;
    struct stat st;
    if ((!bp_eid_is_none(src) && !is_local(a, src)) || (hlen && !head) || fd < 0 ||
        hlen > UINT32_MAX / 2 || tern_ckd_add(&plen, hlen, len) || plen > SIZE_MAX / 2 ||
        tern_ckd_add(&end, off, len))
        return -EINVAL;
    int fl = fcntl(fd, F_GETFL);
    /* a descriptor the agent could not read through later: not kept */
    if (fl < 0 || (fl & O_ACCMODE) == O_WRONLY || fstat(fd, &st) || !S_ISREG(st.st_mode))
        return -ENOTSUP;
    if (end > (uint64_t)st.st_size)
        return -EINVAL; /* the file does not hold what was announced */
    bp__file *f = file_find(a, (uint64_t)st.st_dev, (uint64_t)st.st_ino);
    int rc;
    if (f && f->path) {
        f->refs++;
    } else {
        /* The path the file is reopened by after a restart: it must lead
         * back to this very file now (not deleted, not renamed over). */
        char proc[48], path[FILE_PATH_MAX + 1];
        snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(proc, path, FILE_PATH_MAX);
        if (n <= 0 || n >= FILE_PATH_MAX || path[0] != '/')
            return -ENOTSUP;
        path[n] = 0;
        struct stat ps;
        if (stat(path, &ps) || ps.st_dev != st.st_dev || ps.st_ino != st.st_ino)
            return -ENOTSUP;
        if (f) { /* reopened by a restarted bundle's path: that is this one */
            if (!(f->path = strdup(path)))
                return -ENOMEM;
            f->refs++;
        } else if ((rc = file_get(a, (uint64_t)st.st_dev, (uint64_t)st.st_ino, fd, path,
                                  &f))) {
            return rc;
        }
    }
    /* A durable store promises the bundle survives a crash: so must the
     * bytes it refers to (cheap when the file is on disk already). */
    uint64_t mt = stat_mtime_ns(&st);
    if (sdr_mode(a->store) != SDR_MEMORY &&
        !(f->synced && f->synced_size == (uint64_t)st.st_size && f->synced_mtime == mt)) {
        if (fdatasync(f->fd)) {
            rc = -errno;
            file_put(a, f);
            return rc;
        }
        f->synced = true;
        f->synced_size = (uint64_t)st.st_size;
        f->synced_mtime = mt;
    }
    file_src fs = {.head = head,
                   .hlen = hlen,
                   .f = f,
                   .fr = {.dev = (uint64_t)st.st_dev,
                          .ino = (uint64_t)st.st_ino,
                          .size = (uint64_t)st.st_size,
                          .mtime_ns = mt,
                          .off = off,
                          .flen = len},
                   .path = f->path};
    /* create() needs a payload pointer only for its length: the payload
     * block carries no CRC, so the split encoding never reads the data */
    rc = create_from(a, src, dest, o, 0, hlen ? head : "", (size_t)plen, &fs, ref);
    file_put(a, f); /* the bundle holds its own reference */
    return rc;
}

TERN_API int bp_agent_send(bp_agent *a, const bp_eid *src, const bp_eid *dest,
                           const bp_send_opts *o, const void *payload, size_t len,
                           bp_bundle_ref *ref)
{
    bp_send_opts def;
    if (!o) {
        bp_send_opts_init(&def);
        o = &def;
    }
    if (!bp_eid_is_none(src) && !is_local(a, src))
        return -EINVAL;
    return create(a, src, dest, o, 0, payload, len, ref);
}

/* Copies the oldest bundle of ep's queue into *d and takes it out of the
 * queue (it stays in the store). */
static int take(bp_agent *a, bp__ep *ep, bp_delivery *d, bp__bnd **out, bool lend)
{
    bp__bnd *bn = ep->q.head;
    if (!bn)
        return -EAGAIN;
    const uint8_t *bytes;
    uint8_t *owned = NULL;
    bp_bundle b;
    /* a lent bundle stays where the store keeps it: its payload can be
     * lent as it is when that is memory the store does not reuse meanwhile
     * (a blob; load_view's scratch is reused by the next load) */
    const void *peek = NULL;
    size_t peek_len = 0;
    if (lend && bn->blob == REC_BLOB) {
        rec_hdr h;
        if (sdr_read(a->store, bn->rec, &h, sizeof h) ||
            sdr_blob_peek(a->store, h.blob_off, &peek, &peek_len) || peek_len != bn->len)
            peek = NULL;
    }
    int rc = peek ? (bytes = peek, 0) : load_view(a, bn, &bytes);
    if (!rc)
        rc = bp_bundle_decode(bytes, bn->len, &b, NULL, NULL);
    if (rc) {
        free(owned);
        a->st.deleted++;
        discard(a, bn);
        return rc;
    }
    const bp_block *pl = &BLK(&b)[b.n_blocks - 1];
    memset(d, 0, sizeof *d);
    if (peek) {
        d->payload = (uint8_t *)pl->data;
        d->view = true;
    } else {
        d->payload = malloc(pl->data_len ? pl->data_len : 1);
        if (!d->payload) {
            bp_bundle_release(&b);
            free(owned);
            return -ENOMEM;
        }
        memcpy(d->payload, pl->data, pl->data_len);
    }
    d->len = pl->data_len;
    d->src = b.pri.src;
    d->dest = b.pri.dest;
    d->ctime_ms = b.pri.ctime_ms;
    d->seq = b.pri.seq;
    d->lifetime_ms = b.pri.lifetime_ms;
    d->flags = b.pri.flags;
    bp_bundle_release(&b);
    free(owned);
    unlink_bundle(a, bn);
    *out = bn;
    return 0;
}

/* Heap bytes a bundle of about len bytes takes: bundles above small_max
 * live in blob files in a durable store. */
static uint64_t room_need(const bp_agent *a, size_t len)
{
    uint64_t need = 4096 + len / 8;
    if (len <= a->small_max || sdr_mode(a->store) == SDR_MEMORY)
        need += len;
    return need;
}

TERN_API bool bp_agent_has_room(const bp_agent *a, size_t len)
{
    sdr_usage u;
    if (sdr_get_usage(a->store, &u))
        return true; /* the send itself will say */
    return u.bulk_avail >= room_need(a, len);
}

TERN_API bool bp_agent_could_fit(const bp_agent *a, size_t len)
{
    sdr_usage u;
    if (sdr_get_usage(a->store, &u))
        return true;
    return u.heap_size - u.reserve >= room_need(a, len);
}

TERN_API int bp_agent_recv(bp_agent *a, const bp_eid *e, bp_delivery *d)
{
    bp__ep *ep = ep_find(a, e);
    if (!ep)
        return TERN_ENOTFOUND;
    bp__bnd *bn;
    int rc = take(a, ep, d, &bn, false);
    if (rc)
        return rc;
    a->st.taken++;
    bn->state = BN_LOOSE;
    discard(a, bn);
    return 0;
}

TERN_API int bp_agent_recv_lend(bp_agent *a, const bp_eid *e, bp_delivery *d,
                                uint64_t *token)
{
    bp__ep *ep = ep_find(a, e);
    if (!ep)
        return TERN_ENOTFOUND;
    bp__bnd *bn;
    int rc = take(a, ep, d, &bn, true);
    if (rc)
        return rc;
    bn->xmit = ++a->xmit_seq;
    if ((rc = bp__map_put(&a->lent, bn->xmit, bn))) {
        bp_delivery_release(d);
        bn->state = BN_DELIVERY;
        bn->ep = ep;
        bp__bq_push(&ep->q, bn, 1);
        return rc;
    }
    bn->state = BN_LENT;
    bn->ep = ep;
    *token = bn->xmit;
    return 0;
}

TERN_API int bp_agent_recv_done(bp_agent *a, uint64_t token)
{
    bp__bnd *bn = bp__map_get(&a->lent, token);
    if (!bn)
        return TERN_ENOTFOUND; /* expired meanwhile, or already done */
    a->st.taken++;
    discard(a, bn);
    return 0;
}

TERN_API int bp_agent_recv_undo(bp_agent *a, uint64_t token)
{
    bp__bnd *bn = bp__map_get(&a->lent, token);
    if (!bn)
        return TERN_ENOTFOUND;
    bp__ep *ep = bn->ep;
    unlink_bundle(a, bn);
    bn->state = BN_DELIVERY;
    bn->ep = ep;
    bp__bq_push(&ep->q, bn, 1);
    return 0;
}

TERN_API void bp_delivery_release(bp_delivery *d)
{
    if (!d->view)
        free(d->payload);
    d->payload = NULL;
    d->len = 0;
}

/* -------------------------------------------------------------- endpoints */

static int eid_mine(const bp_agent *a, const bp_eid *e)
{
    return e->scheme != BP_SCHEME_IMC && is_local(a, e);
}

/* After an endpoint changed: the node's membership of its group. */
static void ep_changed(bp_agent *a, const bp_eid *e)
{
    if (e->scheme == BP_SCHEME_IMC)
        imc_local_update(a, e->node);
}

TERN_API int bp_endpoint_add(bp_agent *a, const bp_eid *e, int rule)
{
    /* imc:G.S with G > 0 makes this node a member of group G; group 0 is
     * the agent's own (petitions) */
    bool group = e->scheme == BP_SCHEME_IMC && e->node > 0;
    if ((!group && !eid_mine(a, e)) || (rule != BP_RECV_QUEUE && rule != BP_RECV_DISCARD))
        return -EINVAL;
    if (ep_find(a, e))
        return TERN_EEXIST;
    bp__ep **v = realloc(a->eps, (a->neps + 1) * sizeof *v);
    if (!v)
        return -ENOMEM;
    a->eps = v;
    bp__ep *ep = calloc(1, sizeof *ep);
    if (!ep)
        return -ENOMEM;
    ep->eid = *e;
    ep->rule = rule;
    a->eps[a->neps++] = ep;
    ep_changed(a, e);
    return 0;
}

TERN_API int bp_endpoint_change(bp_agent *a, const bp_eid *e, int rule)
{
    bp__ep *ep = ep_find(a, e);
    if (!ep)
        return TERN_ENOTFOUND;
    if (rule != BP_RECV_QUEUE && rule != BP_RECV_DISCARD)
        return -EINVAL;
    ep->rule = rule;
    ep_changed(a, e);
    return 0;
}

TERN_API int bp_endpoint_del(bp_agent *a, const bp_eid *e)
{
    for (size_t i = 0; i < a->neps; i++) {
        bp__ep *ep = a->eps[i];
        if (!bp_eid_equal(&ep->eid, e))
            continue;
        if (ep->eid.scheme == BP_SCHEME_IPN && ep->eid.service == 0)
            return -EINVAL; /* the administrative endpoint stays */
        while (ep->q.head) {
            a->st.deleted++;
            discard(a, ep->q.head);
        }
        for (size_t k = 0; k < a->lent.cap; k++) {
            bp__bnd *bn = a->lent.vals[k];
            if (a->lent.keys[k] && bn->ep == ep) {
                a->st.deleted++;
                discard(a, bn);
                k--; /* backward shift may have moved another entry here */
            }
        }
        a->eps[i] = a->eps[--a->neps];
        free(ep);
        ep_changed(a, e);
        return 0;
    }
    return TERN_ENOTFOUND;
}

TERN_API int bp_endpoint_open(bp_agent *a, const bp_eid *e)
{
    bp__ep *ep = ep_find(a, e);
    if (!ep)
        return TERN_ENOTFOUND;
    if (ep->open)
        return -EBUSY;
    ep->open = true;
    ep_changed(a, e);
    return 0;
}

TERN_API int bp_endpoint_close(bp_agent *a, const bp_eid *e)
{
    bp__ep *ep = ep_find(a, e);
    if (!ep)
        return TERN_ENOTFOUND;
    ep->open = false;
    ep_changed(a, e);
    return 0;
}

TERN_API size_t bp_endpoint_queued(const bp_agent *a, const bp_eid *e)
{
    bp__ep *ep = ep_find(a, e);
    return ep ? ep->q.n : 0;
}

/* ----------------------------------------------------- convergence layers */

TERN_API int bp_cla_register(bp_agent *a, const bp_cla_ops *ops, void *cla)
{
    if (!ops || !ops->protocol || !ops->send || !ops->outduct_open ||
        strlen(ops->protocol) >= sizeof(((bp_outduct *)0)->proto))
        return -EINVAL;
    for (size_t i = 0; i < a->nclas; i++)
        if (!strcmp(a->clas[i].ops->protocol, ops->protocol))
            return TERN_EEXIST;
    cla_reg *v = realloc(a->clas, (a->nclas + 1) * sizeof *v);
    if (!v)
        return -ENOMEM;
    a->clas = v;
    a->clas[a->nclas++] = (cla_reg){ops, cla};
    return 0;
}

TERN_API int bp_outduct_add(bp_agent *a, const char *protocol, const char *name,
                            const char *cmd, size_t max_payload)
{
    const cla_reg *reg = NULL;
    for (size_t i = 0; i < a->nclas; i++)
        if (!strcmp(a->clas[i].ops->protocol, protocol))
            reg = &a->clas[i];
    if (!reg)
        return TERN_ENOTFOUND;
    if (strlen(name) >= sizeof(((bp_outduct *)0)->name) || !*name)
        return -EINVAL;
    if (duct_by_name(a, protocol, name))
        return TERN_EEXIST;
    bp_outduct **v = realloc(a->ducts, (a->nducts + 1) * sizeof *v);
    if (!v)
        return -ENOMEM;
    a->ducts = v;
    bp_outduct *od = calloc(1, sizeof *od);
    int rc;
    if (!od)
        return -ENOMEM;
    od->a = a;
    od->ops = reg->ops;
    od->cla = reg->cla;
    snprintf(od->proto, sizeof od->proto, "%s", protocol);
    snprintf(od->name, sizeof od->name, "%s", name);
    od->up = true;
    if ((rc = tern_timer_init(a->loop, &od->retry)) ||
        (rc = tern_timer_init(a->loop, &od->gate_tm))) {
        free(od);
        return rc;
    }
    rc = reg->ops->outduct_open(reg->cla, od, name, cmd ? cmd : "", &od->duct);
    if (rc) {
        free(od);
        return rc;
    }
    if (max_payload) /* the configuration wins over the CLA's default */
        od->max_payload = max_payload;
    a->ducts[a->nducts++] = od;
    bp_agent_reroute(a);
    return 0;
}

/* Moves every bundle queued on od back to dispatch (od going away). */
static void drain_duct(bp_agent *a, bp_outduct *od, bp__bq *to)
{
    bp__bnd *bn;
    while ((bn = pick(od))) {
        unlink_bundle(a, bn);
        bn->state = BN_LOOSE;
        bp__bq_push(to, bn, 0);
    }
}

/* Closes od: its queued bundles and the transmissions it had not finished go
 * to a->reflow, for the caller to route again or drop. */
static void close_duct(bp_agent *a, bp_outduct *od)
{
    od->closing = true;
    tern_timer_stop(&od->retry);
    tern_timer_stop(&od->gate_tm);
    drain_duct(a, od, &a->reflow);
    if (od->ops->outduct_close)
        od->ops->outduct_close(od->cla, od->duct); /* may report pending ones */
    /* transmissions it did not report are abandoned here */
    for (size_t i = 0; i < a->inflight.cap; i++) {
        bp__bnd *bn = a->inflight.vals[i];
        if (!a->inflight.keys[i] || bn->od != od)
            continue;
        bp_outduct_result(od, bn->xmit, BP_XMIT_CANCELLED);
        i--; /* backward shift may have moved another entry here */
    }
}

TERN_API int bp_outduct_del(bp_agent *a, const char *protocol, const char *name)
{
    for (size_t i = 0; i < a->nducts; i++) {
        bp_outduct *od = a->ducts[i];
        if (strcmp(od->proto, protocol) || strcmp(od->name, name))
            continue;
        a->ducts[i] = a->ducts[--a->nducts];
        close_duct(a, od);
        free(od);
        while (a->reflow.head) { /* route them again (not through od) */
            bp__bnd *bn = a->reflow.head;
            bp__bq_remove(&a->reflow, bn);
            redispatch(a, bn, 0);
        }
        return 0;
    }
    return TERN_ENOTFOUND;
}

TERN_API size_t bp_outduct_reforward(bp_outduct *od)
{
    bp_agent *a = od->a;
    bp__bq todo = {0};
    drain_duct(a, od, &todo);
    size_t n = todo.n;
    while (todo.head) { /* each once, even if it is queued here again */
        bp__bnd *bn = todo.head;
        bp__bq_remove(&todo, bn);
        redispatch(a, bn, 0);
    }
    return n;
}

TERN_API bp_outduct *bp_outduct_find(const bp_agent *a, const char *protocol,
                                     const char *name)
{
    return duct_by_name(a, protocol, name);
}

/* ---------------------------------------------------------------- routing */

static int plan_put(bp_agent *a, bool dtn, uint64_t node, const char *name,
                    const char *protocol, const char *duct)
{
    if (strlen(protocol) >= 16 || strlen(duct) >= 64 || !*protocol || !*duct)
        return -EINVAL;
    plan *p = NULL;
    for (size_t i = 0; i < a->nplans && !p; i++)
        if (a->plans[i].dtn == dtn &&
            (dtn ? !strcmp(a->plans[i].name, name) : a->plans[i].node == node))
            p = &a->plans[i];
    if (!p) {
        plan *v = realloc(a->plans, (a->nplans + 1) * sizeof *v);
        if (!v)
            return -ENOMEM;
        a->plans = v;
        p = &a->plans[a->nplans++];
        memset(p, 0, sizeof *p);
    }
    p->dtn = dtn;
    p->node = node;
    if (dtn)
        snprintf(p->name, sizeof p->name, "%s", name);
    snprintf(p->proto, sizeof p->proto, "%s", protocol);
    snprintf(p->duct, sizeof p->duct, "%s", duct);
    bp_agent_reroute(a);
    return 0;
}

TERN_API int bp_egress_plan_add(bp_agent *a, uint64_t node, const char *protocol,
                                const char *duct)
{
    return plan_put(a, false, node, NULL, protocol, duct);
}

TERN_API int bp_egress_plan_add_dtn(bp_agent *a, const char *node_name,
                                    const char *protocol, const char *duct)
{
    if (!node_name || strncmp(node_name, "//", 2) || strlen(node_name) > BP_DTN_SSP_MAX)
        return -EINVAL;
    return plan_put(a, true, 0, node_name, protocol, duct);
}

TERN_API bp_outduct *bp_egress_plan_duct(const bp_agent *a, uint64_t node)
{
    const plan *p = plan_ipn(a, node);
    return p ? duct_by_name(a, p->proto, p->duct) : NULL;
}

TERN_API bp_outduct *bp_egress_plan_duct_dtn(const bp_agent *a, const char *node_name,
                                             bool *has_plan)
{
    if (has_plan)
        *has_plan = false;
    for (size_t i = 0; node_name && i < a->nplans; i++)
        if (a->plans[i].dtn && !strcmp(a->plans[i].name, node_name)) {
            if (has_plan)
                *has_plan = true;
            return duct_by_name(a, a->plans[i].proto, a->plans[i].duct);
        }
    return NULL;
}

TERN_API int bp_egress_plan_del(bp_agent *a, uint64_t node)
{
    for (size_t i = 0; i < a->nplans; i++)
        if (!a->plans[i].dtn && a->plans[i].node == node) {
            a->plans[i] = a->plans[--a->nplans];
            return 0;
        }
    return TERN_ENOTFOUND;
}

TERN_API int bp_egress_exit_add(bp_agent *a, uint64_t first, uint64_t last, uint64_t via)
{
    if (first > last)
        return -EINVAL;
    exit_rule *v = realloc(a->exits, (a->nexits + 1) * sizeof *v);
    if (!v)
        return -ENOMEM;
    a->exits = v;
    a->exits[a->nexits++] = (exit_rule){first, last, via};
    bp_agent_reroute(a);
    return 0;
}

TERN_API int bp_egress_exit_del(bp_agent *a, uint64_t first)
{
    for (size_t i = 0; i < a->nexits; i++)
        if (a->exits[i].first == first) {
            memmove(&a->exits[i], &a->exits[i + 1],
                    (a->nexits - i - 1) * sizeof *a->exits);
            a->nexits--;
            return 0;
        }
    return TERN_ENOTFOUND;
}

TERN_API void bp_agent_set_router(bp_agent *a, bp_router_fn fn, void *ctx)
{
    a->router = fn;
    a->router_ctx = ctx;
}

TERN_API void bp_agent_set_router_release(bp_agent *a, bp_router_release_fn fn, void *ctx)
{
    a->router_release = fn;
    a->router_release_ctx = fn ? ctx : NULL;
}

TERN_API void bp_agent_reroute(bp_agent *a)
{
    /* Each bundle is dispatched once: those still without a route go to a
     * fresh limbo. */
    bp__bq old = a->limbo;
    a->limbo = (bp__bq){0};
    a->st.limbo = 0;
    while (old.head) {
        bp__bnd *bn = old.head;
        bp__bq_remove(&old, bn);
        bn->state = BN_LOOSE;
        redispatch(a, bn, 0);
    }
}

/* ---------------------------------------------------------------- lifecycle */

static int load_store(bp_agent *a)
{
    sdr_off list;
    int rc = sdr_catalog_get(a->store, CATALOG_NAME, &list);
    if (rc == TERN_ENOTFOUND) {
        if ((rc = sdr_txn_begin(a->store)))
            return rc;
        if ((rc = sdr_list_create(a->store, 0, &list)) ||
            (rc = sdr_catalog_put(a->store, CATALOG_NAME, list))) {
            sdr_txn_cancel(a->store);
            return rc;
        }
        if ((rc = sdr_txn_end(a->store)))
            return rc;
        a->list = list;
        return 0;
    }
    if (rc)
        return rc;
    a->list = list;
    for (sdr_off e = sdr_list_first(a->store, list); e; e = sdr_list_next(a->store, e)) {
        sdr_off rec = sdr_list_data(a->store, e);
        rec_hdr h;
        if ((rc = sdr_read(a->store, rec, &h, sizeof h)))
            return rc;
        if (h.magic != REC_MAGIC)
            return TERN_ECORRUPT;
        bp__bnd *bn = bnd_new(a);
        if (!bn)
            return -ENOMEM;
        bn->rec = rec;
        bn->elt = e;
        bn->len = h.len;
        bn->arrival_ms = h.arrival_ms;
        if (h.blob > REC_FILE)
            return TERN_ECORRUPT;
        bn->blob = (uint8_t)h.blob;
        if (h.blob == REC_FILE)
            a->st.file_refs++;
        bn->state = BN_PENDING;
        bp__bq_push(&a->pending, bn, 0);
        a->st.stored++;
        a->st.stored_bytes += h.len;
    }
    return 0;
}

TERN_API int bp_agent_new(tern_loop *loop, const bp_agent_cfg *cfg,
                          const bp_agent_host *host, tern_log *lg, bp_agent **out)
{
    if (!loop || !cfg || !cfg->store || cfg->node == 0 ||
        (cfg->crc_type && cfg->crc_type != BP_CRC_16 && cfg->crc_type != BP_CRC_32C) ||
        (cfg->dtn_name &&
         (strncmp(cfg->dtn_name, "//", 2) || strlen(cfg->dtn_name) > BP_DTN_SSP_MAX - 2)))
        return -EINVAL;
    bp_agent *a = calloc(1, sizeof *a);
    if (!a)
        return -ENOMEM;
    int rc = -ENOMEM;
    a->loop = loop;
    a->lg = lg;
    a->store = cfg->store;
    if (host)
        a->host = *host;
    a->node = cfg->node;
    if (cfg->dtn_name) {
        snprintf(a->dtn_name, sizeof a->dtn_name, "%s", cfg->dtn_name);
        a->dtn_name_len = strlen(a->dtn_name);
    }
    a->crc_type = cfg->crc_type ? cfg->crc_type : BP_CRC_32C;
    a->small_max = cfg->small_max ? cfg->small_max : 65536;
    a->status_reports = cfg->status_reports;
    a->seen_max = cfg->dedup_max ? cfg->dedup_max : (1u << 20);
    a->last_ctime = UINT64_MAX;
    if (bp__map_init(&a->inflight, 256) || bp__map_init(&a->lent, 64) ||
        bp__map_init(&a->fragsets, 64) || bp__map_init(&a->seen, 1024) ||
        bp__map_init(&a->claims, 64))
        goto fail;
    if (!(a->seen_ring = calloc(a->seen_max, sizeof *a->seen_ring)))
        goto fail;
    if ((rc = tern_timer_init(loop, &a->imc_retry)))
        goto fail;
    if ((rc = tern_timer_init(loop, &a->expiry)))
        goto fail;
    bp_eid admin;
    bp_eid_ipn(&admin, a->node, 0);
    if ((rc = bp_endpoint_add(a, &admin, BP_RECV_QUEUE)))
        goto fail;
    if ((rc = load_store(a)))
        goto fail;
    if ((rc = bp__imc_load(&a->imc, a->store, IMC_CATALOG)))
        goto fail;
    *out = a;
    return 0;
fail:
    bp_agent_free(a);
    return rc;
}

/* ------------------------------------------------ durable acknowledgements */

TERN_API uint64_t bp_agent_durable_mark(const bp_agent *a)
{
    return sdr_commit_seq(a->store);
}

TERN_API int bp_agent_is_durable(const bp_agent *a, uint64_t mark)
{
    return sdr_durable_seq(a->store) >= mark;
}

static void durable_ready(tern_io *w, int fd, unsigned events, void *arg)
{
    (void)w;
    (void)events;
    bp_agent *a = arg;
    uint64_t n;
    ssize_t r;
    do
        r = read(fd, &n, sizeof n);
    while (r < 0 && errno == EINTR);
    uint64_t d = sdr_durable_seq(a->store);
    /* Callbacks may add waits: take the ripe ones out first. */
    struct dwait ripe[64];
    for (;;) {
        size_t k = 0;
        for (size_t i = 0; i < a->ndwaits && k < 64;)
            if (a->dwaits[i].mark <= d) {
                ripe[k++] = a->dwaits[i];
                a->dwaits[i] = a->dwaits[--a->ndwaits];
            } else {
                i++;
            }
        for (size_t i = 0; i < k; i++)
            ripe[i].cb(ripe[i].ctx, ripe[i].arg1, ripe[i].arg2);
        if (k < 64)
            break;
    }
    if (!a->ndwaits && a->durable_watch) {
        tern_io_stop(&a->durable_io);
        a->durable_watch = 0;
    }
}

TERN_API int bp_agent_durable_wait(bp_agent *a, uint64_t mark, bp_durable_cb cb,
                                   void *ctx, uint64_t arg1, uint64_t arg2)
{
    if (bp_agent_is_durable(a, mark))
        return 0;
    int fd = sdr_durable_fd(a->store);
    if (fd < 0)
        return 0; /* only group commit lags; nothing to wait for */
    if (a->ndwaits == a->capdwaits) {
        size_t nc = a->capdwaits ? 2 * a->capdwaits : 64;
        struct dwait *nw = realloc(a->dwaits, nc * sizeof *nw);
        if (!nw)
            return -ENOMEM;
        a->dwaits = nw;
        a->capdwaits = nc;
    }
    if (!a->durable_watch) {
        int rc = tern_io_init(a->loop, &a->durable_io, fd, durable_ready, a);
        if (!rc)
            rc = tern_io_start(&a->durable_io, TERN_IO_READ);
        if (rc)
            return rc;
        a->durable_watch = 1;
    }
    a->dwaits[a->ndwaits++] = (struct dwait){mark, arg1, arg2, cb, ctx};
    return 1;
}

TERN_API void bp_agent_durable_forget(bp_agent *a, void *ctx)
{
    for (size_t i = 0; i < a->ndwaits;)
        if (a->dwaits[i].ctx == ctx)
            a->dwaits[i] = a->dwaits[--a->ndwaits];
        else
            i++;
    for (size_t i = 0; i < a->claims.cap; i++) {
        struct claim *c = a->claims.vals[i];
        if (a->claims.keys[i] && c->ctx == ctx)
            c->fired = true; /* its owner is going: never called */
    }
}

TERN_API int bp_agent_resume(bp_agent *a)
{
    int n = 0;
    bp__bq todo = a->pending;
    a->pending = (bp__bq){0};
    while (todo.head) {
        bp__bnd *bn = todo.head;
        bp__bq_remove(&todo, bn);
        bn->state = BN_LOOSE;
        const uint8_t *bytes;
        uint8_t *owned;
        bp_bundle b;
        const char *why = bn->blob == REC_FILE
                              ? "the file its payload is read from changed or went"
                              : "unreadable in the store";
        int rc = load(a, bn, &bytes, &owned);
        if (!rc)
            rc = bp_bundle_decode(bytes, bn->len, &b, NULL, &why);
        if (rc) {
            log_once(a, "stored bundle dropped at resume", why);
            a->st.deleted++;
            discard(a, bn);
            free(owned);
            continue;
        }
        bnd_fill(a, bn, &b);
        seen_add(a, bundle_key(&b.pri, BLK(&b)[b.n_blocks - 1].data_len));
        if (heap_add(a, bn) == 0) {
            dispatch(a, bn, &b, 0);
            n++;
        }
        bp_bundle_release(&b);
        free(owned);
    }
    if (!a->resumed) {
        a->resumed = true;
        if (a->imc_on)
            imc_announce(a);
    }
    return n;
}

TERN_API void bp_agent_free(bp_agent *a)
{
    if (!a)
        return;
    for (size_t i = 0; i < a->nducts; i++) {
        close_duct(a, a->ducts[i]);
        free(a->ducts[i]);
    }
    a->nducts = 0;
    /* Every dispatched bundle is in the expiry heap; loaded ones never resumed
     * are only on the pending list. */
    while (a->pending.head) {
        bp__bnd *bn = a->pending.head;
        bp__bq_remove(&a->pending, bn);
        if (bn->hidx == SIZE_MAX)
            free(bn);
    }
    for (size_t i = 0; i < a->nheap; i++)
        free(a->heap[i]);
    for (size_t i = 0; i < a->fragsets.cap; i++)
        if (a->fragsets.keys && a->fragsets.keys[i])
            free(a->fragsets.vals[i]);
    for (size_t i = 0; i < a->neps; i++)
        free(a->eps[i]);
    if (a->loop && a->expiry.loop)
        tern_timer_stop(&a->expiry);
    if (a->loop && a->imc_retry.loop)
        tern_timer_stop(&a->imc_retry);
    if (a->durable_watch)
        tern_io_stop(&a->durable_io);
    free(a->dwaits);
    free(a->eps);
    free(a->ducts);
    free(a->clas);
    free(a->plans);
    free(a->exits);
    free(a->heap);
    free(a->seen_ring);
    if (a->scratch_trim)
        tern_loop_defer_cancel(a->loop, scratch_trim, a);
    free(a->scratch);
    while (a->files) {
        bp__file *f = a->files;
        a->files = f->next;
        file_close(f);
    }
    for (size_t i = 0; i < a->nsmall; i++)
        free(a->small[i] - 16);
    while (a->spare) {
        bp__bnd *bn = a->spare;
        a->spare = bn->next;
        free(bn);
    }
    for (size_t i = 0; i < a->npool; i++)
        free(a->pool[i].buf - 16);
    bp__map_free(&a->inflight);
    bp__map_free(&a->lent);
    if (a->claims.keys)
        for (size_t i = 0; i < a->claims.cap; i++)
            if (a->claims.keys[i])
                free(a->claims.vals[i]);
    bp__map_free(&a->claims);
    if (a->claims_deferred)
        tern_loop_defer_cancel(a->loop, claims_run, a);
    bp__map_free(&a->fragsets);
    bp__map_free(&a->seen);
    bp__imc_free(&a->imc);
    free(a);
}

TERN_API uint64_t bp_agent_node(const bp_agent *a)
{
    return a->node;
}

TERN_API void bp_agent_set_status_reports(bp_agent *a, bool on)
{
    a->status_reports = on;
}

TERN_API bool bp_agent_status_reports(const bp_agent *a)
{
    return a->status_reports;
}

TERN_API tern_loop *bp_agent_loop(const bp_agent *a)
{
    return a->loop;
}

TERN_API tern_log *bp_agent_log(const bp_agent *a)
{
    return a->lg;
}

TERN_API size_t bp_agent_endpoint_count(const bp_agent *a)
{
    return a->neps;
}

TERN_API int bp_agent_endpoint_at(const bp_agent *a, size_t i, bp_eid *eid, int *rule,
                                  bool *open, size_t *queued)
{
    if (i >= a->neps)
        return TERN_ENOTFOUND;
    const bp__ep *ep = a->eps[i];
    if (eid)
        *eid = ep->eid;
    if (rule)
        *rule = ep->rule;
    if (open)
        *open = ep->open;
    if (queued)
        *queued = ep->q.n;
    return 0;
}

TERN_API size_t bp_agent_outduct_count(const bp_agent *a)
{
    return a->nducts;
}

TERN_API bp_outduct *bp_agent_outduct_at(const bp_agent *a, size_t i)
{
    return i < a->nducts ? a->ducts[i] : NULL;
}

TERN_API void bp_outduct_info(const bp_outduct *od, const char **protocol,
                              const char **name, bool *up, size_t *max_payload)
{
    if (protocol)
        *protocol = od->proto;
    if (name)
        *name = od->name;
    if (up)
        *up = od->up;
    if (max_payload)
        *max_payload = od->max_payload;
}

TERN_API void bp_agent_stats_get(const bp_agent *a, bp_agent_stats *st)
{
    *st = a->st;
}
