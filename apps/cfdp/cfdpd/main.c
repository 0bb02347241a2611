/* cfdpd: the CFDP entity of a node (docs/cfdpd.md).
 *
 * One loop waits on BP deliveries (bp_sap_fd of ipn:N.65), the command
 * socket and the entity's next deadline. Each turn is a batch: the inputs
 * are fed to the entity, whose outputs (PDUs, answers, events) are only
 * queued; then every transaction that changed is saved and the store
 * committed, flushed to disk when a directive (Metadata, EOF, ACK, NAK,
 * Finished...) is among the PDUs, and only then do the PDUs go to BP and the
 * answers to the commands: nothing acknowledges what is not committed. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cfdp.h"
#include "cfdp_cksum.h"
#include "cfdp_ctl.h"
#include "cfdp_fs.h"
#include "cfdp_msg.h"
#include "cfdp_user.h"
#include "cfdpd.h"
#include "tern/ports.h"
#include "tern_bp.h"

#define MAX_CLIENTS  64
#define OUT_MAX_PDUS 64 /* a batch's PDUs before the entity is told to wait */
#define OUT_MAX_B    (4u << 20)
#define RX_PER_TURN  256 /* deliveries taken per turn before the rest is served */
/* ...and bytes: a delivery libtern handed over is gone from ternd, so what a
 * turn took and a kill -9 cut off before its commit is asked for again (256
 * file-data PDUs were 16 MB) */
#define RX_BYTES_PER_TURN (4u << 20)
#define PROGRESS_MS       200  /* progress events to a watcher at most this often */
#define RECENT_MAX        256  /* finished transactions remembered for late watchers */
#define FULL_SAVE_MS      1000 /* every transaction's state compared at least this often */

struct outpdu {
    uint64_t dst;
    uint32_t lifetime_s;
    int priority; /* BP_*_PRIORITY: its transaction's */
    size_t len;   /* b's bytes: the PDU, or with fd >= 0 its head */
    uint8_t *b;
    size_t cap; /* b is kept from batch to batch */
    int fd;     /* >= 0: the PDU's data are flen bytes at off in this file (a dup) */
    uint64_t off;
    size_t flen;
};

struct outmsg {
    int slot, fd;
    char *text;
};

struct client {
    int fd; /* -1: free */
    int watching;
    cfdp_txn_id watch;
    uint64_t last_progress;
};

struct known { /* per transaction: its lifetime and its last saved bytes */
    cfdp_txn_id id;
    uint32_t lifetime_s;
    uint8_t priority; /* BP_*_PRIORITY of its PDUs' bundles */
    uint8_t *saved;
    size_t saved_len;
    int live;          /* seen in this batch's walk */
    char *name;        /* receiver: its file, synced before a commit records new data */
    int changed;       /* saved again in this batch */
    int touched;       /* a PDU, indication or command for it in this batch */
    int directive;     /* a directive of it is queued in this batch */
    uint64_t saved_at; /* when it was last saved (engine ms) */
};

/* A receiver whose batch only took file data is saved again at most this
 * often: each save of a receiver syncs its file first (durable stores),
 * and a save per batch (about 300 kB) made the syncs what limited a
 * durable transfer. A crash then costs at most this much re-sent data. */
#define RX_SAVE_MS 50

/* A Finished's filestore responses as the event line gives them: at most
 * CFDP_CTL_FS_MAX "action,status" pairs */
#define FS_TEXT_MAX (CFDP_CTL_FS_MAX * 8 + 8)

struct recent {
    cfdp_txn_id id;
    uint8_t condition, delivery, file_status, cls;
    uint8_t
        priority; /* BP_*_PRIORITY: a late PDU's answer (ACK of a Finished) keeps it */
    uint32_t lifetime_s;
    uint64_t progress, size;
    char fs[FS_TEXT_MAX];
};

struct d {
    cfdpd_config cfg;
    uint64_t entity;
    BpNode *node;
    BpSAP rx, tx;
    int rxfd, lfd;
    cfdp_entity *e;
    cfdp_posixfs *px;
    cfdp_user *u;
    struct {
        cfdp_txn_id request;
        char text[384];
    } answers[RECENT_MAX]; /* answers to get/ls, for watchers that come late */
    size_t nanswers, answers_at;
    cfdpd_store *st;
    cfdpd_udp *udp; /* NULL: every peer over BP */
    int udpfd;
    struct outpdu *out;
    size_t nout, outb;
    int busy; /* send said -EAGAIN: tell the entity after the batch */
    struct outmsg *msgs;
    size_t nmsgs, capmsgs;
    struct client cl[MAX_CLIENTS];
    struct known *kn;
    size_t nkn, capkn;
    size_t *kh; /* open-addressing index of kn: slot -> index + 1, 0 empty */
    size_t khcap;
    int full; /* compare every transaction's state at this batch's end */
    uint64_t last_full;
    cfdp_fs inner; /* posixfs, behind the deferred-sync table below */
    cfdp_fs_ops fsops;
    int sync_due; /* a file's sync was asked for in this batch */
    int rootfd;   /* the filestore root, for syncfs */
    struct recent recent[RECENT_MAX];
    size_t nrecent, recent_at;
    uint8_t *sbuf;
    size_t scap;
    uint8_t *rbuf;
    uint64_t pdus_sent, send_errors, batches, flushes;
    uint64_t pdus_by_fd; /* of pdus_sent, file-data PDUs whose data went by descriptor */
    uint64_t own_syncs;  /* received files synced on their own, not by syncfs */
    uint64_t batch_now;  /* the batch being ended's time */
    char boot[40];       /* this boot's ID */
    int64_t clk_off;     /* engine time = CLOCK_MONOTONIC ms + clk_off */
    uint64_t clk_saved;  /* engine time the clock was last saved at (0: not yet) */
};

static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
    (void)sig;
    g_stop = 1;
}

static uint64_t clock_ms(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The engine's clock (clock.c): CLOCK_MONOTONIC plus the offset that keeps
 * saved deadlines meaningful across a reboot. TERN_TEST_MONO_SHIFT_MS moves
 * CLOCK_MONOTONIC back, as a fresh boot's is (tests). */
static uint64_t mono_ms(void)
{
    static int64_t shift = -1;
    if (shift < 0) {
        const char *e = getenv("TERN_TEST_MONO_SHIFT_MS");
        shift = e ? strtoll(e, NULL, 10) : 0;
        if (shift < 0)
            shift = 0;
    }
    uint64_t m = clock_ms(CLOCK_MONOTONIC);
    return m > (uint64_t)shift ? m - (uint64_t)shift : 0;
}

static uint64_t now_of(const struct d *d)
{
    return (uint64_t)((int64_t)mono_ms() + d->clk_off);
}

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    fprintf(stderr, "%lld.%03ld cfdpd: %s\n", (long long)ts.tv_sec, ts.tv_nsec / 1000000,
            line);
}

static int same(cfdp_txn_id a, cfdp_txn_id b)
{
    return a.src == b.src && a.seq == b.seq;
}

/* The end of every batch looks up each live transaction: with thousands of
 * small files in flight a linear search made each batch quadratic. */
static size_t kh_home(const struct d *d, cfdp_txn_id id)
{
    uint64_t h = id.src * 0x9E3779B97F4A7C15ull ^ id.seq * 0xC2B2AE3D27D4EB4Full;
    h ^= h >> 29;
    return (size_t)h & (d->khcap - 1);
}

/* id's slot, or the empty slot where it would go */
static size_t kh_find(const struct d *d, cfdp_txn_id id)
{
    size_t s = kh_home(d, id);
    while (d->kh[s] && !same(d->kn[d->kh[s] - 1].id, id))
        s = (s + 1) & (d->khcap - 1);
    return s;
}

static int kh_grow(struct d *d)
{
    size_t nc = d->khcap ? d->khcap * 2 : 64;
    size_t *p = calloc(nc, sizeof *p);
    if (!p)
        return -ENOMEM;
    free(d->kh);
    d->kh = p;
    d->khcap = nc;
    for (size_t i = 0; i < d->nkn; i++)
        d->kh[kh_find(d, d->kn[i].id)] = i + 1;
    return 0;
}

/* Empties slot s, shifting back the entries after it that may sit there
 * (linear probing needs no tombstones then). */
static void kh_del(struct d *d, size_t s)
{
    size_t m = d->khcap - 1;
    for (size_t j = (s + 1) & m; d->kh[j]; j = (j + 1) & m) {
        size_t home = kh_home(d, d->kn[d->kh[j] - 1].id);
        if (((j - home) & m) >= ((j - s) & m)) {
            d->kh[s] = d->kh[j];
            s = j;
        }
    }
    d->kh[s] = 0;
}

static const struct recent *recent_find(const struct d *d, cfdp_txn_id id)
{
    for (size_t i = 0; i < d->nrecent; i++)
        if (same(d->recent[i].id, id))
            return &d->recent[i];
    return NULL;
}

static struct known *known_get(struct d *d, cfdp_txn_id id, int add)
{
    if (d->khcap) {
        size_t s = kh_find(d, id);
        if (d->kh[s])
            return &d->kn[d->kh[s] - 1];
    }
    if (!add)
        return NULL;
    if (2 * (d->nkn + 1) > d->khcap && kh_grow(d))
        return NULL;
    if (d->nkn == d->capkn) {
        size_t nc = d->capkn ? d->capkn * 2 : 32;
        struct known *p = realloc(d->kn, nc * sizeof *p);
        if (!p)
            return NULL;
        d->kn = p;
        d->capkn = nc;
    }
    struct known *k = &d->kn[d->nkn++];
    memset(k, 0, sizeof *k);
    k->id = id;
    /* a PDU of a transaction finished here (a late Finished) brings it back
     * for this batch: its answers go as the transaction's did */
    const struct recent *r = recent_find(d, id);
    k->lifetime_s = r ? r->lifetime_s : d->cfg.lifetime_s;
    k->priority = r ? r->priority : BP_STD_PRIORITY;
    d->kh[kh_find(d, id)] = d->nkn;
    return k;
}

static void known_drop(struct d *d, struct known *k)
{
    size_t i = (size_t)(k - d->kn), last = d->nkn - 1;
    kh_del(d, kh_find(d, k->id));
    free(k->saved);
    free(k->name);
    if (i != last) {
        size_t s = kh_find(d, d->kn[last].id);
        d->kn[i] = d->kn[last];
        d->kh[s] = i + 1;
    }
    d->nkn--;
}

/* A transaction whose state may have changed in this batch: its state is
 * saved at the batch's end. Only these are (plus all of them every
 * FULL_SAVE_MS): serialising ten thousand idle transactions every batch
 * was most of the time a batch of small files took. */
static void touch(struct d *d, cfdp_txn_id id, int add)
{
    struct known *k = known_get(d, id, add);
    if (k)
        k->touched = 1;
    else
        d->full = 1; /* unknown (or no memory): compare them all */
}

/* ------------------------------------------- the batch's file sync */

/* The engine syncs a received file when it closes it, before its Finished.
 * That Finished only leaves at the batch's end, so the sync can wait until
 * then too: one syncfs for every file closed in the batch, where a batch of
 * small files took an fdatasync (a journal commit) each. */
static int dfs_open(void *c, const char *p, unsigned fl, void **f)
{
    struct d *d = c;
    return d->inner.ops->open(d->inner.ctx, p, fl, f);
}
static int dfs_close(void *c, void *f)
{
    struct d *d = c;
    return d->inner.ops->close(d->inner.ctx, f);
}
static int dfs_read(void *c, void *f, uint64_t off, void *b, size_t n, size_t *got)
{
    struct d *d = c;
    return d->inner.ops->read(d->inner.ctx, f, off, b, n, got);
}
static int dfs_write(void *c, void *f, uint64_t off, const void *b, size_t n)
{
    struct d *d = c;
    return d->inner.ops->write(d->inner.ctx, f, off, b, n);
}
static int dfs_truncate(void *c, void *f, uint64_t size)
{
    struct d *d = c;
    return d->inner.ops->truncate(d->inner.ctx, f, size);
}
/* The sync of a file the engine closes: small files are covered by one
 * syncfs at the end of the batch (10,000 files of 1 kB finishing), but a
 * syncfs also writes every other dirty page of the file system (a source
 * file just written, say): a large file is synced on its own, now, which
 * costs little since its bulk went past the page cache (posixfs). */
#define SYNC_OWN_BYTES (4u << 20)
static int dfs_sync(void *c, void *f)
{
    struct d *d = c;
    int fd = d->inner.ops->fd ? d->inner.ops->fd(d->inner.ctx, f) : -1;
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size >= (off_t)SYNC_OWN_BYTES) {
        d->own_syncs++;
        return d->inner.ops->sync(d->inner.ctx, f);
    }
    d->sync_due = 1;
    return 0;
}
static int dfs_stat(void *c, const char *p, cfdp_fs_stat *st)
{
    struct d *d = c;
    return d->inner.ops->stat(d->inner.ctx, p, st);
}
static int dfs_rename(void *c, const char *from, const char *to)
{
    struct d *d = c;
    return d->inner.ops->rename(d->inner.ctx, from, to);
}
static int dfs_remove(void *c, const char *p)
{
    struct d *d = c;
    return d->inner.ops->remove(d->inner.ctx, p);
}
static int dfs_mkdir(void *c, const char *p)
{
    struct d *d = c;
    return d->inner.ops->mkdir(d->inner.ctx, p);
}
static int dfs_rmdir(void *c, const char *p)
{
    struct d *d = c;
    return d->inner.ops->rmdir(d->inner.ctx, p);
}
static int dfs_list(void *c, const char *p, cfdp_fs_each each, void *arg)
{
    struct d *d = c;
    return d->inner.ops->list(d->inner.ctx, p, each, arg);
}
static int dfs_fd(void *c, void *f)
{
    struct d *d = c;
    return d->inner.ops->fd ? d->inner.ops->fd(d->inner.ctx, f) : -1;
}

static cfdp_fs dfs_wrap(struct d *d, cfdp_fs inner)
{
    d->inner = inner;
    d->fsops = (cfdp_fs_ops){dfs_open,  dfs_close, dfs_read,   dfs_write,  dfs_truncate,
                             dfs_sync,  dfs_stat,  dfs_rename, dfs_remove, dfs_mkdir,
                             dfs_rmdir, dfs_list,  dfs_fd};
    return (cfdp_fs){&d->fsops, d};
}

/* ------------------------------------------------------------ queues */

static void msg_queue(struct d *d, int slot, const char *text)
{
    if (slot < 0 || d->cl[slot].fd < 0)
        return;
    if (d->nmsgs == d->capmsgs) {
        size_t nc = d->capmsgs ? d->capmsgs * 2 : 32;
        struct outmsg *p = realloc(d->msgs, nc * sizeof *p);
        if (!p)
            return;
        d->msgs = p;
        d->capmsgs = nc;
    }
    char *t = strdup(text);
    if (!t)
        return;
    d->msgs[d->nmsgs++] = (struct outmsg){slot, d->cl[slot].fd, t};
}

static void event_to_watchers(struct d *d, cfdp_txn_id id, const char *text)
{
    for (int i = 0; i < MAX_CLIENTS; i++)
        if (d->cl[i].fd >= 0 && d->cl[i].watching && same(d->cl[i].watch, id))
            msg_queue(d, i, text);
}

/* Queues pdu[0..len) for dst (with fd >= 0: its head, the data being flen
 * bytes at off in fd) until the batch's state is committed. */
static int queue_pdu(struct d *d, uint64_t dst, const uint8_t *pdu, size_t len, int fd,
                     uint64_t off, size_t flen)
{
    if (d->nout >= OUT_MAX_PDUS || d->outb + len > OUT_MAX_B) {
        d->busy = 1;
        return -EAGAIN;
    }
    /* the slot's buffer stays: 4 MiB malloc'd and freed every batch were
     * trimmed from the heap and faulted in again, page by page */
    struct outpdu *o = &d->out[d->nout];
    if (o->cap < len) {
        uint8_t *nb = realloc(o->b, len);
        if (!nb)
            return -ENOMEM;
        o->b = nb;
        o->cap = len;
    }
    o->fd = -1;
    if (fd >= 0 && (o->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0)
        return -errno; /* the file may close before the batch is sent */
    memcpy(o->b, pdu, len);
    o->off = off;
    o->flen = flen;
    uint32_t life = d->cfg.lifetime_s;
    int prio = BP_STD_PRIORITY;
    cfdp_header h;
    size_t hl, whole = len;
    /* a file-data PDU by descriptor is only its head here, and its header's
     * data length counts the file's bytes too: decode the header against the
     * whole PDU's length (it reads no byte past the header, which the head
     * holds whole: checked from byte 3's ID and sequence number lengths) */
    if (fd >= 0 && len >= 4 &&
        (size_t)(4 + 2 * (((pdu[3] >> 4) & 7) + 1) + (pdu[3] & 7) + 1) <= len)
        whole = len + flen;
    if (cfdp_header_decode(pdu, whole, &h, &hl, NULL) == 0) {
        /* no entry added here: a caller may hold a known pointer */
        struct known *k = known_get(d, (cfdp_txn_id){h.src, h.tsn}, 0);
        const struct recent *r;
        if (k) {
            life = k->lifetime_s;
            prio = k->priority;
            if (!(pdu[0] & 0x10)) /* PDU type bit 0: a file directive */
                k->directive = 1;
        } else if ((r = recent_find(d, (cfdp_txn_id){h.src, h.tsn}))) {
            /* finished already: a late Finished's ACK goes as its transaction's did */
            life = r->lifetime_s;
            prio = r->priority;
        }
        touch(d, (cfdp_txn_id){h.src, h.tsn}, 0);
    } else {
        d->full = 1;
    }
    o->dst = dst;
    o->lifetime_s = life;
    o->priority = prio;
    o->len = len;
    d->nout++;
    d->outb += len;
    return 0;
}

static int host_send(void *ctx, uint64_t dst, const uint8_t *pdu, size_t len)
{
    return queue_pdu(ctx, dst, pdu, len, -1, 0, 0);
}

/* A file-data PDU by descriptor: ternd reads its data from the file itself
 * (bp_send_fd_head), so they cross neither cfdpd nor the socket. Over UDP
 * the datagram needs the bytes: the entity then sends the whole PDU. */
static int host_send_file(void *ctx, uint64_t dst, const uint8_t *head, size_t hlen,
                          int fd, uint64_t off, size_t len)
{
    struct d *d = ctx;
    if (cfdpd_udp_has(d->udp, dst) || hlen > BP_SEND_HEAD_MAX || off > INT64_MAX)
        return -ENOTSUP;
    return queue_pdu(d, dst, head, hlen, fd, off, len);
}

static void recent_add(struct d *d, const cfdp_ind *ind, const char *fs)
{
    struct recent *r = &d->recent[d->recent_at];
    const struct known *k = known_get(d, ind->txn, 0);
    d->recent_at = (d->recent_at + 1) % RECENT_MAX;
    if (d->nrecent < RECENT_MAX)
        d->nrecent++;
    *r = (struct recent){.id = ind->txn,
                         .priority = k ? k->priority : BP_STD_PRIORITY,
                         .lifetime_s = k ? k->lifetime_s : d->cfg.lifetime_s,
                         .condition = ind->condition,
                         .delivery = ind->delivery,
                         .file_status = ind->file_status,
                         .cls = ind->cls,
                         .progress = ind->progress,
                         .size = ind->file_size};
    snprintf(r->fs, sizeof r->fs, "%s", fs);
}

/* A Finished's filestore responses as "action,status ..." (the first
 * CFDP_CTL_FS_MAX; a peer may send more than we asked for). */
static void fs_text(const cfdp_tlvs *resp, char *out, size_t cap)
{
    size_t pos = 0, len = 0;
    cfdp_tlv t;
    out[0] = 0;
    for (int n = 0; n < CFDP_CTL_FS_MAX && cfdp_tlvs_next(resp, &pos, &t) == 0;) {
        if (t.type != CFDP_TLV_FS_RESPONSE)
            continue;
        int w =
            snprintf(out + len, cap - len, "%s%u,%u", n ? " " : "", t.action, t.status);
        if (w < 0 || (size_t)w >= cap - len)
            break;
        len += (size_t)w;
        n++;
    }
}

static void fmt_finished(char *b, size_t cap, cfdp_txn_id id, unsigned cond, unsigned dlv,
                         unsigned fst, uint64_t progress, uint64_t size, const char *fs)
{
    snprintf(b, cap,
             "event\ntype=%d\ntxn=%" PRIu64 ".%" PRIu64 "\ncondition=%u\ndelivery=%u\n"
             "file_status=%u\nprogress=%" PRIu64 "\nsize=%" PRIu64 "\n%s%s%s",
             CFDP_IND_FINISHED, id.src, id.seq, cond, dlv, fst, progress, size,
             fs[0] ? "fs=" : "", fs, fs[0] ? "\n" : "");
}

static void on_ind(struct d *d, const cfdp_ind *ind)
{
    char ev[512 + FS_TEXT_MAX];
    if (ind->type == CFDP_IND_METADATA && ind->role == CFDP_ROLE_RECEIVER &&
        ind->dst_name[0]) {
        struct known *k = known_get(d, ind->txn, 1);
        if (k && !k->name)
            k->name = strdup(ind->dst_name);
    }
    /* an abandoned transaction ends too (a fault while cancelling, e.g. the
     * ACK limit toward an entity that never answers): watchers get the
     * same finished event, or a waiting cfdpput would wait forever */
    if (ind->type == CFDP_IND_FINISHED || ind->type == CFDP_IND_ABANDONED) {
        char fs[FS_TEXT_MAX];
        fs_text(&ind->responses, fs, sizeof fs);
        recent_add(d, ind, fs);
        fmt_finished(ev, sizeof ev, ind->txn, ind->condition, ind->delivery,
                     ind->file_status, ind->progress, ind->file_size, fs);
        logf_("transaction %" PRIu64 ".%" PRIu64 " (%s, class %u, peer %" PRIu64
              ") %s: %s, data %s, %" PRIu64 " of %" PRIu64 " bytes",
              ind->txn.src, ind->txn.seq, ind->role ? "receiver" : "sender", ind->cls,
              ind->peer, ind->type == CFDP_IND_FINISHED ? "finished" : "abandoned",
              cfdp_condition_name(ind->condition),
              ind->delivery == CFDP_DATA_COMPLETE ? "complete" : "incomplete",
              ind->progress, ind->file_size);
    } else {
        if (ind->type == CFDP_IND_FILE_SEGMENT || ind->type == CFDP_IND_REPORT)
            return;
        snprintf(ev, sizeof ev,
                 "event\ntype=%u\ntxn=%" PRIu64 ".%" PRIu64
                 "\ncondition=%u\nprogress=%" PRIu64 "\nsize=%" PRIu64 "\n",
                 ind->type, ind->txn.src, ind->txn.seq, ind->condition, ind->progress,
                 ind->file_size);
        if (d->cfg.verbose || ind->type == CFDP_IND_METADATA ||
            ind->type == CFDP_IND_FAULT)
            logf_("transaction %" PRIu64 ".%" PRIu64 ": %s%s%s%s%s", ind->txn.src,
                  ind->txn.seq, cfdp_ind_name(ind->type),
                  ind->type == CFDP_IND_METADATA ? " " : "",
                  ind->type == CFDP_IND_METADATA ? ind->src_name : "",
                  ind->type == CFDP_IND_METADATA ? " -> " : "",
                  ind->type == CFDP_IND_METADATA ? ind->dst_name : "");
    }
    event_to_watchers(d, ind->txn, ev);
}

/* An answer to one of our get/ls requests (a cfdp_user event). */
static void on_user_event(struct d *d, const cfdp_user_event *ev)
{
    unsigned cond, dlv, fst, ok;
    if (ev->type == CFDP_MSG_PROXY_PUT_RESP) {
        cond = ev->msg.condition;
        dlv = ev->msg.delivery;
        fst = ev->msg.file_status;
        ok = cond == CFDP_COND_NO_ERROR && dlv == CFDP_DATA_COMPLETE;
    } else {
        /* a listing: did the peer list it, and did its file arrive */
        cond = ev->condition;
        dlv = ev->delivery;
        fst = ev->file_status;
        ok = ev->msg.ok && cond == CFDP_COND_NO_ERROR && dlv == CFDP_DATA_COMPLETE;
    }
    size_t i = d->answers_at;
    d->answers_at = (d->answers_at + 1) % RECENT_MAX;
    if (d->nanswers < RECENT_MAX)
        d->nanswers++;
    d->answers[i].request = ev->request;
    snprintf(d->answers[i].text, sizeof d->answers[i].text,
             "event\ntype=%d\ntxn=%" PRIu64 ".%" PRIu64
             "\nanswer=%u\nok=%u\ncondition=%u\n"
             "delivery=%u\nfile_status=%u\npeer=%" PRIu64 "\ncarrier=%" PRIu64 ".%" PRIu64
             "\n",
             CFDP_CTL_EV_ANSWER, ev->request.src, ev->request.seq, ev->type, ok, cond,
             dlv, fst, ev->peer, ev->carrier.src, ev->carrier.seq);
    logf_("answer to request %" PRIu64 ".%" PRIu64 " from entity %" PRIu64 ": %s, %s",
          ev->request.src, ev->request.seq, ev->peer,
          ev->type == CFDP_MSG_PROXY_PUT_RESP ? "proxy put response" : "listing response",
          ok ? "success" : cfdp_condition_name(cond));
    event_to_watchers(d, ev->request, d->answers[i].text);
}

/* Hands every queued indication to cfdpd and to the user layer (which may
 * start transactions: their indications are taken in the same loop), then
 * the user layer's events. */
static void drain_indications(struct d *d, uint64_t now)
{
    cfdp_ind ind;
    while (cfdp_entity_next_indication(d->e, &ind) == 0) {
        if (ind.type != CFDP_IND_REPORT) /* ours, from end_batch: not a change */
            touch(d, ind.txn, 1);
        on_ind(d, &ind);
        int rc = cfdp_user_on_indication(d->u, now, &ind);
        if (rc)
            logf_("user operation for transaction %" PRIu64 ".%" PRIu64 ": %s",
                  ind.txn.src, ind.txn.seq, tern_strerror(rc));
    }
    static cfdp_user_event ev; /* large; one loop thread */
    while (cfdp_user_next_event(d->u, &ev) == 0)
        on_user_event(d, &ev);
}

static void host_log(void *ctx, const char *line)
{
    (void)ctx;
    logf_("%s", line);
}

/* ---------------------------------------------------- the batch's end */

struct walk {
    struct d *d;
    cfdp_txn_info *v;
    size_t n, cap;
};

static int collect(void *arg, const cfdp_txn_info *info)
{
    struct walk *w = arg;
    if (w->n == w->cap) {
        size_t nc = w->cap ? w->cap * 2 : 64;
        cfdp_txn_info *p = realloc(w->v, nc * sizeof *p);
        if (!p)
            return -ENOMEM;
        w->v = p;
        w->cap = nc;
    }
    w->v[w->n++] = *info;
    return 0;
}

static int txns_walk(struct d *d, struct walk *w)
{
    memset(w, 0, sizeof *w);
    w->d = d;
    return cfdp_entity_each_txn(d->e, collect, w);
}

static int save_one(struct d *d, const cfdp_txn_info *t, int *changed)
{
    struct known *k = known_get(d, t->id, 1);
    if (!k)
        return -ENOMEM;
    k->live = 1;
    size_t len;
    int rc;
    while ((rc = cfdp_txn_save(d->e, t->id, d->sbuf, d->scap, &len)) == TERN_ENOSPACE) {
        uint8_t *p = realloc(d->sbuf, len);
        if (!p)
            return -ENOMEM;
        d->sbuf = p;
        d->scap = len;
    }
    if (rc)
        return rc;
    if (k->saved && k->saved_len == len && !memcmp(k->saved, d->sbuf, len))
        return 0;
    uint8_t *copy = malloc(len ? len : 1);
    if (!copy)
        return -ENOMEM;
    memcpy(copy, d->sbuf, len);
    cfdpd_rec r = {t->id, k->lifetime_s, d->sbuf, len, k->name, k->priority};
    if ((rc = cfdpd_store_put(d->st, &r))) {
        free(copy);
        return rc;
    }
    free(k->saved);
    k->saved = copy;
    k->saved_len = len;
    k->changed = 1;
    k->saved_at = d->batch_now;
    *changed = 1;
    return 0;
}

/* The state about to be committed says which bytes a receiver holds: they
 * must be on disk first, or a power loss would leave a file with holes
 * that the restored state (and its running checksum) call complete. */
static int sync_files(struct d *d)
{
    size_t n = 0;
    for (size_t i = 0; i < d->nkn; i++) {
        struct known *k = &d->kn[i];
        if (k->changed && k->name && !d->cfg.memory_store)
            n++;
    }
    /* many files (small ones finishing): one syncfs for all, as for the
     * syncs the engine asked for */
    if (n > 4)
        d->sync_due = 1;
    if (d->sync_due) {
        if (syncfs(d->rootfd)) {
            int e = errno;
            logf_("syncfs %s: %s", d->cfg.root, strerror(e));
            return -e;
        }
        d->sync_due = 0;
    }
    for (size_t i = 0; i < d->nkn; i++) {
        struct known *k = &d->kn[i];
        if (!k->changed || !k->name)
            continue;
        k->changed = 0;
        if (d->cfg.memory_store || n > 4)
            continue;
        char path[PATH_MAX + CFDP_FS_PATH_MAX + 2];
        snprintf(path, sizeof path, "%s/%s", d->cfg.root, k->name);
        int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
            continue; /* not created yet, or renamed by a filestore request */
        if (fdatasync(fd))
            logf_("fdatasync %s: %s", path, strerror(errno));
        close(fd);
    }
    return 0;
}

static void progress_events(struct d *d, uint64_t now)
{
    for (int i = 0; i < MAX_CLIENTS; i++) {
        struct client *c = &d->cl[i];
        if (c->fd < 0 || !c->watching || now - c->last_progress < PROGRESS_MS)
            continue;
        cfdp_txn_info info;
        if (!cfdp_report(d->e, c->watch, &info)) {
            const cfdp_txn_info *t = &info;
            char ev[320];
            snprintf(ev, sizeof ev,
                     "event\ntype=%d\ntxn=%" PRIu64 ".%" PRIu64
                     "\nstate=%u\ncondition=%u\n"
                     "progress=%" PRIu64 "\nsize=%" PRIu64 "\nresent=%" PRIu64 "\n",
                     CFDP_CTL_EV_PROGRESS, t->id.src, t->id.seq, t->state, t->condition,
                     t->progress, t->file_size, t->bytes_resent);
            msg_queue(d, i, ev);
            c->last_progress = now;
        }
    }
}

/* Saves what changed, commits (to disk if a directive is going out), then
 * lets the queued PDUs and messages go. A store failure is fatal: cfdpd
 * must not acknowledge what it could not keep. */
static int end_batch(struct d *d, uint64_t now)
{
    struct walk w;
    memset(&w, 0, sizeof w);
    d->batch_now = now;
    int full = d->full || now - d->last_full >= FULL_SAVE_MS;
    int rc = full ? txns_walk(d, &w) : 0;
    if (rc)
        goto out;
    int changed = 0;
    if ((rc = cfdpd_store_begin(d->st)))
        goto out;
    if (full) { /* every transaction the entity has */
        for (size_t i = 0; i < d->nkn; i++)
            d->kn[i].live = 0;
        for (size_t i = 0; i < w.n; i++) {
            const cfdp_txn_info *t = &w.v[i];
            if (t->state == CFDP_STATE_FINISHED)
                continue;
            if ((rc = save_one(d, t, &changed)))
                break;
        }
    } else { /* the touched ones; the others' saved state stands */
        for (size_t i = 0; i < d->nkn; i++)
            d->kn[i].live = 1;
        for (size_t i = 0; !rc && i < d->nkn; i++) {
            struct known *k = &d->kn[i];
            cfdp_txn_info t;
            if (!k->touched)
                continue;
            if (cfdp_report(d->e, k->id, &t) || t.state == CFDP_STATE_FINISHED)
                k->live = 0;
            else if (t.role == CFDP_ROLE_RECEIVER && k->saved && !k->directive &&
                     now - k->saved_at < RX_SAVE_MS)
                continue; /* file data only: the next save takes it */
            else
                rc = save_one(d, &t, &changed);
        }
    }
    /* finished or gone: no longer kept */
    for (size_t i = d->nkn; !rc && i-- > 0;) {
        if (d->kn[i].live)
            continue;
        if (d->kn[i].saved) {
            rc = cfdpd_store_del(d->st, d->kn[i].id);
            changed = 1;
        }
        known_drop(d, &d->kn[i]);
    }
    for (size_t i = 0; i < d->nkn; i++)
        d->kn[i].touched = d->kn[i].directive = 0;
    if (full) {
        d->full = 0;
        d->last_full = now;
    }
    if (!rc)
        rc = cfdpd_store_set_seq(d->st, cfdp_entity_next_seq(d->e));
    if (!rc && (!d->clk_saved || now - d->clk_saved >= 1000)) {
        /* the downtime a reboot costs is judged from this: a second is close enough */
        cfdpd_clock ck = {
            .off_ms = d->clk_off, .engine_ms = now, .real_ms = clock_ms(CLOCK_REALTIME)};
        snprintf(ck.boot, sizeof ck.boot, "%s", d->boot);
        if ((rc = cfdpd_store_set_clock(d->st, &ck)) == 0)
            d->clk_saved = now;
    }
    if (rc) {
        logf_("saving the transactions failed: %s", tern_strerror(rc));
        goto out;
    }
    if ((rc = sync_files(d)))
        goto out;
    int directive = 0;
    for (size_t i = 0; i < d->nout; i++)
        if (!(d->out[i].b[0] & 0x10)) /* PDU type bit 0: a file directive */
            directive = 1;
    if ((rc = cfdpd_store_commit(d->st, directive || (changed && d->nmsgs)))) {
        logf_("committing the store failed: %s", tern_strerror(rc));
        goto out;
    }
    d->batches++;
    if (directive)
        d->flushes++;
    size_t last_bp = d->nout; /* BP_SEND_MORE on all but the batch's last bundle */
    for (size_t i = 0; i < d->nout; i++)
        if (!cfdpd_udp_has(d->udp, d->out[i].dst))
            last_bp = i;
    for (size_t i = 0; i < d->nout; i++) {
        struct outpdu *o = &d->out[i];
        if (cfdpd_udp_has(d->udp, o->dst)) {
            int urc = cfdpd_udp_send(d->udp, o->dst, o->b, o->len);
            cfdpd_udp_stats us;
            cfdpd_udp_stats_get(d->udp, &us);
            if (urc &&
                !(us.send_errors & (us.send_errors - 1))) /* 1, 2, 4, ...: no flood */
                logf_("UDP send to entity %" PRIu64 ": %s (%" PRIu64 " lost so far)",
                      o->dst, tern_strerror(urc), us.send_errors);
            continue; /* the slot keeps its buffer for the next batch */
        }
        char dest[64];
        snprintf(dest, sizeof dest, "ipn:%" PRIu64 ".%u", o->dst, d->cfg.peer_service);
        BpSendOpts so = BP_SEND_OPTS_INIT;
        so.lifetime_s = o->lifetime_s;
        so.priority = o->priority;
        if (i < last_bp)
            so.flags |= BP_SEND_MORE;
        int src, byfd = o->fd >= 0;
        if (byfd) {
            /* ternd may keep the file by reference: the file's bytes then
             * are not copied into its store (half of a durable node's disk
             * writes); the file stays as it is until its transaction ends */
            so.flags |= BP_SEND_FILE_REF;
            src = bp_send_fd_head(d->tx, dest, o->b, o->len, o->fd, (off_t)o->off,
                                  o->flen, &so, NULL);
            close(o->fd);
            o->fd = -1;
        } else {
            src = bp_send(d->tx, dest, o->b, o->len, &so, NULL);
        }
        if (src) {
            d->send_errors++;
            logf_("bp_send to %s: %s (%s)", dest, bp_strerror(src), bp_errmsg());
        } else {
            d->pdus_sent++;
            d->pdus_by_fd += byfd;
        }
    }
    d->nout = 0;
    d->outb = 0;
    progress_events(d, now);
    for (size_t i = 0; i < d->nmsgs; i++) {
        struct outmsg *m = &d->msgs[i];
        if (d->cl[m->slot].fd == m->fd)
            send(m->fd, m->text, strlen(m->text), MSG_NOSIGNAL | MSG_DONTWAIT);
        free(m->text);
    }
    d->nmsgs = 0;
out:
    free(w.v);
    return rc;
}

/* ---------------------------------------------------------- commands */

static void answer_err(struct d *d, int slot, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void answer_err(struct d *d, int slot, int code, const char *fmt, ...)
{
    char msg[400], a[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(a, sizeof a, "err\ncode=%d\nmsg=%s\n", code, msg);
    msg_queue(d, slot, a);
}

static int kv_int(const char *req, const char *key, long long lo, long long hi,
                  long long dflt, long long *v)
{
    char b[32];
    if (cfdp_ctl_kv(req, key, 1, b, sizeof b)) {
        *v = dflt;
        return 0;
    }
    char *end;
    errno = 0;
    long long x = strtoll(b, &end, 10);
    if (errno || end == b || *end || x < lo || x > hi)
        return -EINVAL;
    *v = x;
    return 0;
}

/* enum cfdp_ctl_priority -> BP_*_PRIORITY */
static uint8_t bp_prio(int p)
{
    return p == CFDP_CTL_PRIO_BULK        ? BP_BULK_PRIORITY
           : p == CFDP_CTL_PRIO_EXPEDITED ? BP_EXPEDITED_PRIORITY
                                          : BP_STD_PRIORITY;
}

static int ctl_prio(uint8_t p)
{
    return p == BP_BULK_PRIORITY        ? CFDP_CTL_PRIO_BULK
           : p == BP_EXPEDITED_PRIORITY ? CFDP_CTL_PRIO_EXPEDITED
                                        : CFDP_CTL_PRIO_STANDARD;
}

/* The known entry of the transaction the next put will start, given the
 * put's lifetime and priority before it starts: its first PDUs (Metadata,
 * data) are queued inside cfdp_put and take them from there. */
static struct known *known_next(struct d *d, uint32_t lifetime, uint8_t prio)
{
    cfdp_txn_id next = {d->entity, cfdp_entity_next_seq(d->e)};
    struct known *k = known_get(d, next, 1);
    if (k) {
        k->lifetime_s = lifetime;
        k->priority = prio;
    }
    return k;
}

static void cmd_put(struct d *d, int slot, const char *req, uint64_t now)
{
    static cfdp_ctl_put_msg m; /* 16 KiB of names; one loop thread */
    char why[300];
    if (cfdp_ctl_put_decode(req, &m, why, sizeof why)) {
        answer_err(d, slot, -EINVAL, "%s", why);
        return;
    }
    const cfdp_ctl_put_req *q = &m.req;
    long long dst = (long long)q->dst;
    if (q->checksum_type >= 0 && !cfdp_cksum_supported((unsigned)q->checksum_type)) {
        /* the engine's -ENOTSUP alone reads "Operation not supported" */
        answer_err(d, slot, -ENOTSUP,
                   "put: checksum type %d is not one Tern computes (0 modular, "
                   "1 Proximity-1 CRC-32, 2 CRC-32C, 3 CRC-32, 15 null)",
                   q->checksum_type);
        return;
    }
    cfdp_tlv tlv[CFDP_CTL_FS_MAX];
    for (size_t i = 0; i < q->nfs; i++) {
        const cfdp_ctl_fsreq *f = &q->fs[i];
        /* lengths bounded by the decoder: 1 to CFDP_FS_PATH_MAX */
        tlv[i] = (cfdp_tlv){
            .type = CFDP_TLV_FS_REQUEST,
            .action = f->action,
            .first = {(const uint8_t *)f->first, (uint8_t)strlen(f->first)},
            .second = {(const uint8_t *)f->second, (uint8_t)strlen(f->second)}};
    }
    cfdp_peer_cfg peer = d->cfg.defaults; /* or the cfdprc's entry for it */
    for (size_t i = 0; i < d->cfg.npeers; i++)
        if (d->cfg.peers[i].id == q->dst)
            peer = d->cfg.peers[i];
    peer.id = q->dst;
    if (q->segment) {
        cfdp_peer_cfg p = peer;
        p.max_segment = q->segment;
        cfdp_entity_set_peer(d->e, &p);
    }
    int meta_only = !m.src[0];
    cfdp_put_req pr = {.dst = q->dst,
                       .src_name = meta_only ? NULL : m.src,
                       .dst_name = meta_only ? NULL : m.dst_name,
                       .cls = (uint8_t)q->cls,
                       .closure = (int8_t)q->closure,
                       .checksum_type = (int16_t)q->checksum_type,
                       .nak_mode = -1,
                       .options = {q->nfs ? tlv : NULL, q->nfs, NULL, 0}};
    cfdp_txn_id id;
    uint32_t lifetime = q->lifetime_s ? q->lifetime_s : d->cfg.lifetime_s;
    struct known *k = known_next(d, lifetime, bp_prio(q->priority));
    int rc = cfdp_put(d->e, now, &pr, &id);
    if (q->segment)
        cfdp_entity_set_peer(d->e, &peer); /* later puts get the default again */
    if (rc) {
        if (k && !k->saved)
            known_drop(d, k);
        answer_err(d, slot, rc, "put %s to entity %lld: %s",
                   meta_only ? "(filestore requests)" : m.src, dst,
                   rc == -ENOENT     ? "no such file in the filestore"
                   : rc == -EACCES   ? "the path leaves the filestore root"
                   : rc == -EMSGSIZE ? "names or options too long for the peer's PDU size"
                                     : tern_strerror(rc));
        return;
    }
    logf_("put %s -> %lld:%s: transaction %" PRIu64 ".%" PRIu64
          " (class %d, %s priority, %zu filestore request%s)",
          meta_only ? "(no file)" : m.src, dst, meta_only ? "" : m.dst_name, id.src,
          id.seq, q->cls ? q->cls : 2, cfdp_ctl_priority_name(q->priority), q->nfs,
          q->nfs == 1 ? "" : "s");
    char a[128];
    snprintf(a, sizeof a, "ok\ntxn=%" PRIu64 ".%" PRIu64 "\n", id.src, id.seq);
    msg_queue(d, slot, a);
}

static int name_arg(struct d *d, int slot, const char *req, const char *key, char *out,
                    const char *cmd)
{
    if (cfdp_ctl_kv(req, key, 0, out, CFDP_FS_PATH_MAX + 1) || !out[0]) {
        answer_err(d, slot, -EINVAL, "%s needs %s= (1 to %d bytes)", cmd, key,
                   CFDP_FS_PATH_MAX);
        return -EINVAL;
    }
    return 0;
}

/* get: a proxy put request asking entity `entity` to send us its file (or,
 * with to=, to send it to that entity: a remote to remote copy). */
static void cmd_get(struct d *d, int slot, const char *req, uint64_t now)
{
    char src[CFDP_FS_PATH_MAX + 1], dst_name[CFDP_FS_PATH_MAX + 1];
    long long peer, cls;
    if (name_arg(d, slot, req, "src", src, "get") ||
        name_arg(d, slot, req, "dst_name", dst_name, "get"))
        return;
    long long to;
    if (kv_int(req, "entity", 1, INT64_MAX, 0, &peer) || !peer ||
        kv_int(req, "class", 0, 2, 0, &cls) || kv_int(req, "to", 0, INT64_MAX, 0, &to)) {
        answer_err(d, slot, -EINVAL,
                   "get: entity (from 1), class (0-2) and to (an entity) are numbers");
        return;
    }
    if (to == peer) {
        answer_err(d, slot, -EINVAL, "get: entity %lld cannot send its file to itself",
                   to);
        return;
    }
    char pb[16];
    int prio = CFDP_CTL_PRIO_DEFAULT;
    if (!cfdp_ctl_kv(req, "priority", 1, pb, sizeof pb) &&
        (prio = cfdp_ctl_priority_parse(pb)) < 0) {
        answer_err(d, slot, -EINVAL, "get: priority is bulk, standard or expedited");
        return;
    }
    cfdp_proxy_put_req pr = {.proxy = (uint64_t)peer,
                             .dst = to ? (uint64_t)to : d->entity,
                             .src_name = src,
                             .dst_name = dst_name,
                             .mode = cls == 1   ? CFDP_UNACKNOWLEDGED
                                     : cls == 2 ? CFDP_ACKNOWLEDGED
                                                : -1,
                             .closure = cls == 1 ? 1 : -1};
    cfdp_txn_id id;
    /* the request's own PDUs take the priority (the file comes at the
     * remote's choice: no proxy message carries one) */
    struct known *k = known_next(d, d->cfg.lifetime_s, bp_prio(prio));
    int rc = cfdp_user_proxy_put(d->u, now, &pr, &id);
    if (rc) {
        if (k && !k->saved)
            known_drop(d, k);
        answer_err(d, slot, rc, "get %lld:%s: %s", peer, src, tern_strerror(rc));
        return;
    }
    touch(d, id, 1);
    logf_("get %lld:%s -> %" PRIu64 ":%s: request %" PRIu64 ".%" PRIu64, peer, src,
          pr.dst, dst_name, id.src, id.seq);
    char a[128];
    snprintf(a, sizeof a, "ok\ntxn=%" PRIu64 ".%" PRIu64 "\n", id.src, id.seq);
    msg_queue(d, slot, a);
}

/* ls: a directory listing request; the listing arrives as a file. */
static void cmd_ls(struct d *d, int slot, const char *req, uint64_t now)
{
    char dir[CFDP_FS_PATH_MAX + 1], listing[CFDP_FS_PATH_MAX + 1];
    long long peer;
    if (name_arg(d, slot, req, "dir", dir, "ls") ||
        name_arg(d, slot, req, "listing", listing, "ls"))
        return;
    if (kv_int(req, "entity", 1, INT64_MAX, 0, &peer) || !peer) {
        answer_err(d, slot, -EINVAL, "ls: entity must be a number from 1");
        return;
    }
    cfdp_txn_id id;
    int rc = cfdp_user_dir_list(d->u, now, (uint64_t)peer, dir, listing, &id);
    if (rc) {
        answer_err(d, slot, rc, "ls %lld:%s: %s", peer, dir, tern_strerror(rc));
        return;
    }
    touch(d, id, 1);
    char a[128];
    snprintf(a, sizeof a, "ok\ntxn=%" PRIu64 ".%" PRIu64 "\n", id.src, id.seq);
    msg_queue(d, slot, a);
}

struct status_buf {
    struct d *d;
    char *b;
    size_t len, cap;
};

static int status_line(void *arg, const cfdp_txn_info *t)
{
    struct status_buf *s = arg;
    const struct known *k = known_get(s->d, t->id, 0);
    if (s->cap - s->len < 320)
        return 1; /* full: the count says how many there are */
    s->len += (size_t)snprintf(
        s->b + s->len, s->cap - s->len,
        "txn=%" PRIu64 ".%" PRIu64 " peer=%" PRIu64 " role=%u state=%u class=%u "
        "condition=%u size=%" PRIu64 " progress=%" PRIu64 " gaps=%" PRIu64
        " resent=%" PRIu64 " priority=%s\n",
        t->id.src, t->id.seq, t->peer, t->role, t->state, t->cls, t->condition,
        t->file_size, t->progress, t->gaps, t->bytes_resent,
        cfdp_ctl_priority_name(ctl_prio(k ? k->priority : BP_STD_PRIORITY)));
    return 0;
}

static void cmd_status(struct d *d, int slot)
{
    char *b = malloc(CFDP_CTL_MSG_MAX);
    if (!b)
        return;
    cfdp_entity_stats es;
    cfdp_entity_stats_get(d->e, &es);
    struct status_buf s = {d, b, 0, CFDP_CTL_MSG_MAX};
    s.len = (size_t)snprintf(
        b, s.cap,
        "ok\nentity=%" PRIu64 "\npdus_in=%" PRIu64 "\npdus_out=%" PRIu64
        "\nfile_bytes_out=%" PRIu64 "\nfile_bytes_resent=%" PRIu64
        "\nfile_bytes_in=%" PRIu64 "\ndrop_malformed=%" PRIu64 "\ntxns_active=%" PRIu64
        "\nsaved=%zu\nbp_sent=%" PRIu64 "\nbp_send_errors=%" PRIu64 "\nbatches=%" PRIu64
        "\nflushes=%" PRIu64 "\nbp_sent_by_fd=%" PRIu64 "\nfiles_synced_alone=%" PRIu64
        "\n",
        d->entity, es.pdus_in, es.pdus_out, es.file_bytes_out, es.file_bytes_resent,
        es.file_bytes_in, es.drop_malformed, es.txns_active, cfdpd_store_count(d->st),
        d->pdus_sent, d->send_errors, d->batches, d->flushes, d->pdus_by_fd,
        d->own_syncs);
    if (d->udp) {
        cfdpd_udp_stats us;
        cfdpd_udp_stats_get(d->udp, &us);
        s.len += (size_t)snprintf(
            b + s.len, s.cap - s.len,
            "udp_port=%u\nudp_in=%" PRIu64 "\nudp_out=%" PRIu64
            "\nudp_send_errors=%" PRIu64 "\nudp_truncated=%" PRIu64 "\n",
            cfdpd_udp_port(d->udp), us.in, us.out, us.send_errors, us.truncated);
    }
    cfdp_entity_each_txn(d->e, status_line, &s);
    msg_queue(d, slot, b);
    free(b);
}

static void cmd_txn(struct d *d, int slot, const char *cmd, const char *req, uint64_t now)
{
    char t[64];
    cfdp_txn_id id;
    if (cfdp_ctl_kv(req, "txn", 1, t, sizeof t) || cfdp_ctl_parse_txn(t, &id)) {
        answer_err(d, slot, -EINVAL, "%s needs txn=<source>.<sequence number>", cmd);
        return;
    }
    cfdp_txn_info info;
    int rc = cfdp_report(d->e, id, &info);
    const struct recent *r = recent_find(d, id);
    const char *answer = NULL;
    for (size_t i = 0; i < d->nanswers; i++)
        if (same(d->answers[i].request, id))
            answer = d->answers[i].text;
    if (rc && !((r || answer) && !strcmp(cmd, "watch"))) {
        answer_err(d, slot, -ENOENT, "no transaction %s", t);
        return;
    }
    if (!strcmp(cmd, "watch")) {
        d->cl[slot].watching = 1;
        d->cl[slot].watch = id;
        d->cl[slot].last_progress = 0;
        msg_queue(d, slot, "ok\n");
        if (r) { /* it ended before the watch: say how */
            char ev[512 + FS_TEXT_MAX];
            fmt_finished(ev, sizeof ev, id, r->condition, r->delivery, r->file_status,
                         r->progress, r->size, r->fs);
            msg_queue(d, slot, ev);
        }
        if (answer)
            msg_queue(d, slot, answer);
        return;
    }
    rc = !strcmp(cmd, "cancel")    ? cfdp_cancel(d->e, now, id)
         : !strcmp(cmd, "suspend") ? cfdp_suspend(d->e, now, id)
                                   : cfdp_resume(d->e, now, id);
    if (rc) {
        answer_err(d, slot, rc, "%s %s: %s", cmd, t, tern_strerror(rc));
        return;
    }
    touch(d, id, 1);
    logf_("%s transaction %s", cmd, t);
    msg_queue(d, slot, "ok\n");
}

static void client_close(struct d *d, int slot)
{
    close(d->cl[slot].fd);
    d->cl[slot].fd = -1;
    d->cl[slot].watching = 0;
}

static void on_client(struct d *d, int slot, uint64_t now)
{
    ssize_t n = recv(d->cl[slot].fd, d->rbuf, CFDP_CTL_MSG_MAX, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) {
        client_close(d, slot);
        return;
    }
    char *req = (char *)d->rbuf;
    req[n] = 0;
    size_t cl = strcspn(req, "\n");
    char cmd[32];
    snprintf(cmd, sizeof cmd, "%.*s", (int)(cl < 31 ? cl : 31), req);
    if (!strcmp(cmd, "info")) {
        char a[CFDP_CTL_PATH_MAX + 128];
        snprintf(a, sizeof a, "ok\nentity=%" PRIu64 "\nroot=%s\ntxns=%zu\n", d->entity,
                 d->cfg.root, cfdpd_store_count(d->st));
        msg_queue(d, slot, a);
    } else if (!strcmp(cmd, "put")) {
        cmd_put(d, slot, req, now);
    } else if (!strcmp(cmd, "get")) {
        cmd_get(d, slot, req, now);
    } else if (!strcmp(cmd, "ls")) {
        cmd_ls(d, slot, req, now);
    } else if (!strcmp(cmd, "status")) {
        cmd_status(d, slot);
    } else if (!strcmp(cmd, "cancel") || !strcmp(cmd, "suspend") ||
               !strcmp(cmd, "resume") || !strcmp(cmd, "watch")) {
        cmd_txn(d, slot, cmd, req, now);
    } else {
        answer_err(
            d, slot, -ENOTSUP,
            "unknown command '%s' (info, put, get, ls, status, cancel, suspend, resume, "
            "watch)",
            cmd);
    }
}

static void on_accept(struct d *d)
{
    for (;;) {
        int fd = accept4(d->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0)
            return;
        int slot = -1;
        for (int i = 0; i < MAX_CLIENTS && slot < 0; i++)
            if (d->cl[i].fd < 0)
                slot = i;
        if (slot < 0) {
            const char *busy =
                "err\ncode=-16\nmsg=cfdpd has too many command connections\n";
            send(fd, busy, strlen(busy), MSG_NOSIGNAL | MSG_DONTWAIT);
            close(fd);
            continue;
        }
        d->cl[slot] = (struct client){.fd = fd};
    }
}

/* ------------------------------------------------------------ startup */

static int restore_one(void *arg, const cfdpd_rec *r)
{
    struct d *d = arg;
    cfdp_txn_id id;
    int rc = cfdp_txn_restore(d->e, now_of(d), r->blob, r->len, &id);
    if (rc) {
        logf_("saved transaction %" PRIu64 ".%" PRIu64 " not restored: %s (dropped)",
              r->id.src, r->id.seq, tern_strerror(rc));
        return 0; /* the next batch removes its record: it is not live */
    }
    struct known *k = known_get(d, id, 1);
    if (!k)
        return -ENOMEM;
    k->lifetime_s = r->lifetime_s;
    k->priority = r->priority;
    k->saved = malloc(r->len ? r->len : 1);
    if (!k->saved)
        return -ENOMEM;
    memcpy(k->saved, r->blob, r->len);
    k->saved_len = r->len;
    if (r->name && r->name[0] && !(k->name = strdup(r->name)))
        return -ENOMEM;
    logf_("restored transaction %" PRIu64 ".%" PRIu64, id.src, id.seq);
    return 0;
}

/* A record that did not restore has no entry in known: remember it so the
 * first batch deletes it. */
static int note_record(void *arg, const cfdpd_rec *r)
{
    struct d *d = arg;
    struct known *k = known_get(d, r->id, 0);
    if (k)
        return 0;
    k = known_get(d, r->id, 1);
    if (!k)
        return -ENOMEM;
    k->saved = malloc(1);
    k->saved_len = 0;
    return k->saved ? 0 : -ENOMEM;
}

static int listen_ctl(struct d *d, char *why, size_t whylen)
{
    struct sockaddr_un sa;
    socklen_t salen;
    int rc = cfdp_ctl_sockaddr(d->cfg.node_dir, &sa, &salen);
    if (rc) {
        snprintf(why, whylen, "node directory %.900s: %s", d->cfg.node_dir,
                 tern_strerror(rc));
        return rc;
    }
    d->lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (d->lfd < 0)
        return -errno;
    if (bind(d->lfd, (struct sockaddr *)&sa, salen)) {
        rc = -errno;
        snprintf(why, whylen,
                 rc == -EADDRINUSE
                     ? "another cfdpd serves %.800s (socket @%.100s is taken)"
                     : "command socket @%.800s%.100s: bind failed",
                 rc == -EADDRINUSE ? d->cfg.node_dir : sa.sun_path + 1,
                 rc == -EADDRINUSE ? sa.sun_path + 1 : "");
        return rc;
    }
    if (listen(d->lfd, 32))
        return -errno;
    return 0;
}

static size_t udp_peers(const cfdpd_config *cfg)
{
    size_t n = 0;
    for (size_t i = 0; i < cfg->rc.npeers; i++)
        n += cfg->rc.peers[i].transport == CFDP_RC_UDP;
    return n;
}

/* Which file configured it, and its warnings, go to the log. */
static void log_config(const cfdpd_config *cfg)
{
    if (!cfg->rc_path[0]) {
        logf_("no cfdprc (%s/host.rc, %s/node.cfdprc): defaults and options",
              cfg->node_dir, cfg->node_dir);
        return;
    }
    size_t warnings = cfg->rc.ndiags - cfg->rc.nerrors;
    if (!cfg->rc.ncommands && !warnings) {
        logf_("configuration from %s: no cfdpadmin commands (defaults and options)",
              cfg->rc_path);
        return;
    }
    logf_("configuration from %s: %zu cfdpadmin command(s), %zu entit%s, %zu warning(s)",
          cfg->rc_path, cfg->rc.ncommands, cfg->rc.npeers,
          cfg->rc.npeers == 1 ? "y" : "ies", warnings);
    for (size_t i = 0; i < cfg->rc.ndiags; i++)
        if (!cfg->rc.diags[i].is_error)
            logf_("warning: %s", cfg->rc.diags[i].text);
}

static int start(struct d *d, char *why, size_t whylen)
{
    int rc = bp_node_attach(d->cfg.node_dir, &d->node);
    if (rc) {
        snprintf(why, whylen, "%s", bp_errmsg());
        return rc;
    }
    d->entity = d->cfg.entity ? d->cfg.entity : bp_node_number(d->node);
    if ((rc = listen_ctl(d, why, whylen)))
        return rc;
    if (mkdir(d->cfg.root, 0755) && errno != EEXIST) {
        rc = -errno;
        snprintf(why, whylen, "filestore root %.900s: %s", d->cfg.root, strerror(errno));
        return rc;
    }
    cfdp_fs pfs;
    if ((rc = cfdp_posixfs_new(d->cfg.root, &d->px, &pfs))) {
        snprintf(why, whylen, "filestore root %.900s: %s", d->cfg.root,
                 tern_strerror(rc));
        return rc;
    }
    if ((d->rootfd = open(d->cfg.root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        rc = -errno;
        snprintf(why, whylen, "filestore root %.900s: %s", d->cfg.root, strerror(errno));
        return rc;
    }
    cfdp_fs fs = dfs_wrap(d, pfs);
    uint64_t next_seq;
    if ((rc = cfdpd_store_open(d->cfg.node_dir, d->cfg.heap_mb, d->cfg.memory_store,
                               &d->st, &next_seq, why, whylen)))
        return rc;
    /* the clock the saved deadlines were set on goes on from where it was */
    cfdpd_clock ck;
    int have = cfdpd_store_get_clock(d->st, &ck) == 0;
    if (cfdpd_boot_id(d->boot, sizeof d->boot))
        d->boot[0] = '\0'; /* unknown: every start counts as a new boot */
    d->clk_off = cfdpd_clock_resume(have ? &ck : NULL, d->boot[0] ? d->boot : "?",
                                    mono_ms(), clock_ms(CLOCK_REALTIME));
    if (have && strcmp(ck.boot, d->boot))
        logf_("a new boot since the state was saved: timers go on from %" PRIu64
              " ms (saved at %" PRIu64 " ms, %" PRIu64 " ms down by the wall clock)",
              now_of(d), ck.engine_ms,
              now_of(d) > ck.engine_ms ? now_of(d) - ck.engine_ms : 0);
    cfdp_entity_cfg ec = {.id = d->entity,
                          .fs = fs,
                          .defaults = d->cfg.defaults,
                          .peers = d->cfg.peers,
                          .npeers = d->cfg.npeers,
                          .first_seq = next_seq,
                          .fs_requests = cfdp_fs_requests_execute};
    cfdp_host host = {.ctx = d,
                      .send = host_send,
                      .log = host_log,
                      .queue_indications = 1,
                      .send_file = d->cfg.copy_pdus ? NULL : host_send_file};
    if ((rc = cfdp_entity_new(&ec, &host, &d->e))) {
        snprintf(why, whylen, "the CFDP entity: %s", tern_strerror(rc));
        return rc;
    }
    cfdp_user_cfg uc = {.fs = fs, .work_dir = ".cfdp-user"};
    if ((rc = cfdp_user_new(d->e, &uc, &d->u))) {
        snprintf(why, whylen, "the CFDP user layer: %s", tern_strerror(rc));
        return rc;
    }
    if ((rc = cfdpd_store_each(d->st, restore_one, d)) ||
        (rc = cfdpd_store_each(d->st, note_record, d))) {
        snprintf(why, whylen, "reading the saved transactions: %s", tern_strerror(rc));
        return rc;
    }
    char eid[64];
    snprintf(eid, sizeof eid, "ipn:%" PRIu64 ".%u", bp_node_number(d->node),
             d->cfg.rx_service);
    /* PDUs that come while cfdpd is down (a restart) must wait in ternd's
     * store, not be discarded: the endpoint's rule is "queue" */
    char line[128], ans[512];
    snprintf(line, sizeof line, "a endpoint %s q", eid);
    if (bp_node_admin(d->node, "bpadmin", line, ans, sizeof ans)) {
        snprintf(line, sizeof line, "c endpoint %s q", eid);
        if ((rc = bp_node_admin(d->node, "bpadmin", line, ans, sizeof ans)))
            logf_("%s: %s (PDUs that come while cfdpd is down may be lost)", line, ans);
    }
    if ((rc = bp_node_open(d->node, eid, &d->rx))) {
        snprintf(why, whylen, "%s", bp_errmsg());
        return rc;
    }
    snprintf(eid, sizeof eid, "ipn:%" PRIu64 ".%u", bp_node_number(d->node),
             d->cfg.tx_service);
    if ((rc = bp_node_open(d->node, eid, &d->tx))) {
        snprintf(why, whylen, "%s", bp_errmsg());
        return rc;
    }
    d->rxfd = bp_sap_fd(d->rx);
    if (d->rxfd < 0) {
        snprintf(why, whylen, "bp_sap_fd: %s", bp_strerror(d->rxfd));
        return d->rxfd;
    }
    if (d->cfg.udp) {
        if ((rc = cfdpd_udp_open(&d->cfg, &d->udp, why, whylen)))
            return rc;
        d->udpfd = cfdpd_udp_fd(d->udp);
        /* as ternd's own sockets: a test binding port 0 reads it there */
        if ((rc = tern_ports_publish(d->cfg.node_dir, "cfdp", "udp",
                                     cfdpd_udp_port(d->udp))))
            logf_("publishing the UDP port in %s/ports: %s", d->cfg.node_dir,
                  tern_strerror(rc));
        logf_("CFDP over UDP: receiving at %s:%u, %zu UDP peer(s)",
              d->cfg.udp_host[0] ? d->cfg.udp_host : "*", cfdpd_udp_port(d->udp),
              udp_peers(&d->cfg));
    }
    logf_("entity %" PRIu64 " of %s: filestore %s, receiving at ipn:%" PRIu64
          ".%u, %zu transaction(s) restored, next sequence number %" PRIu64,
          d->entity, d->cfg.node_dir, d->cfg.root, bp_node_number(d->node),
          d->cfg.rx_service, cfdpd_store_count(d->st), cfdp_entity_next_seq(d->e));
    return 0;
}

/* Datagrams go to the entity as deliveries do; a malformed one is counted
 * there (drop_malformed) and dropped. */
static void udp_in(struct d *d, uint64_t now)
{
    for (int k = 0; k < RX_PER_TURN; k++) {
        const uint8_t *pdu;
        size_t len;
        int q = cfdpd_udp_recv(d->udp, &pdu, &len);
        if (q < 0)
            logf_("UDP receive: %s", tern_strerror(q));
        if (q <= 0)
            break;
        cfdp_entity_pdu_in(d->e, now, pdu, len);
    }
}

static int run(struct d *d)
{
    d->full = 1;
    int rc = end_batch(d, now_of(d)); /* drops records that did not restore */
    while (!rc && !g_stop) {
        uint64_t now = now_of(d);
        uint64_t dl = cfdp_entity_next_deadline(d->e);
        int timeout = -1;
        if (d->busy || cfdp_entity_wants_send(d->e))
            timeout = 0;
        else if (dl != UINT64_MAX)
            timeout = dl <= now ? 0 : dl - now > 60000 ? 60000 : (int)(dl - now);
        for (int i = 0; i < MAX_CLIENTS; i++)
            if (d->cl[i].fd >= 0 && d->cl[i].watching && timeout != 0)
                timeout = timeout < 0 || timeout > PROGRESS_MS ? PROGRESS_MS : timeout;
        struct pollfd p[3 + MAX_CLIENTS];
        int slot_of[3 + MAX_CLIENTS];
        int np = 0;
        p[np++] = (struct pollfd){.fd = d->rxfd, .events = POLLIN};
        p[np++] = (struct pollfd){.fd = d->lfd, .events = POLLIN};
        p[np++] = (struct pollfd){.fd = d->udp ? d->udpfd : -1, .events = POLLIN};
        for (int i = 0; i < MAX_CLIENTS; i++)
            if (d->cl[i].fd >= 0) {
                slot_of[np] = i;
                p[np++] = (struct pollfd){.fd = d->cl[i].fd, .events = POLLIN};
            }
        int r = poll(p, (nfds_t)np, timeout);
        if (r < 0 && errno != EINTR) {
            rc = -errno;
            break;
        }
        now = now_of(d);
        if (r > 0 && p[0].revents) {
            BpDelivery dv;
            size_t took = 0;
            for (int k = 0; k < RX_PER_TURN && took < RX_BYTES_PER_TURN; k++) {
                int q = bp_receive(d->rx, &dv, 0);
                if (q == -EAGAIN)
                    break;
                if (q) {
                    logf_("bp_receive: %s (%s)", bp_strerror(q), bp_errmsg());
                    break;
                }
                if (!(dv.flags & 0x2)) { /* administrative records are not PDUs */
                    cfdp_header h;
                    size_t hl;
                    if (cfdp_header_decode(dv.payload, dv.len, &h, &hl, NULL) == 0)
                        touch(d, (cfdp_txn_id){h.src, h.tsn}, 1);
                    cfdp_entity_pdu_in(d->e, now, dv.payload, dv.len);
                }
                took += dv.len;
                bp_release_delivery(&dv);
            }
        }
        if (r > 0 && p[1].revents)
            on_accept(d);
        if (r > 0 && p[2].revents)
            udp_in(d, now);
        for (int i = 3; r > 0 && i < np; i++)
            if (p[i].revents)
                on_client(d, slot_of[i], now);
        if (cfdp_entity_next_deadline(d->e) <= now)
            cfdp_entity_advance(d->e, now);
        if (d->busy) {
            d->busy = 0;
            cfdp_entity_transport_ready(d->e, now);
        }
        drain_indications(d, now);
        rc = end_batch(d, now);
    }
    return rc;
}

/* --ready-fd N (from 'tern start', as ternd takes it): a pipe that gets
 * "ok" once cfdpd serves, or "error: <why>"; taken out of argv before the
 * options are read. -1 if absent. */
static int ready_fd_take(int *argc, char **argv)
{
    for (int i = 1; i + 1 < *argc; i++) {
        if (strcmp(argv[i], "--ready-fd"))
            continue;
        char *end;
        long fd = strtol(argv[i + 1], &end, 10);
        if (*end || fd < 0 || fd > INT_MAX)
            return -1;
        memmove(argv + i, argv + i + 2, (size_t)(*argc - i - 1) * sizeof *argv);
        *argc -= 2;
        return (int)fd;
    }
    return -1;
}

static void ready(int fd, const char *msg)
{
    if (fd < 0)
        return;
    ssize_t w;
    do
        w = write(fd, msg, strlen(msg));
    while (w < 0 && errno == EINTR);
    close(fd);
}

/* <node dir>/cfdpd.pid, for 'tern stop' and 'tern status' */
static void pid_file(const struct d *d, int make)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/cfdpd.pid", d->cfg.node_dir);
    if (!make) {
        unlink(path);
        return;
    }
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(f, "%ld\n", (long)getpid());
        fclose(f);
    }
}

int main(int argc, char **argv)
{
    static struct d d;
    char why[1024] = "";
    int rfd = ready_fd_take(&argc, argv);
    int rc = cfdpd_config_load(argc, argv, &d.cfg, why, sizeof why);
    if (rc == 1) {
        fputs(cfdpd_usage(), stdout);
        return 0;
    }
    if (rc == TERN_ESYNTAX) { /* the file's errors, each file:line */
        for (size_t i = 0; i < d.cfg.rc.ndiags; i++)
            if (d.cfg.rc.diags[i].is_error)
                fprintf(stderr, "cfdpd: error: %s\n", d.cfg.rc.diags[i].text);
        fprintf(stderr, "%s; not started\n", why);
        char msg[1400] = "";
        for (size_t i = 0; i < d.cfg.rc.ndiags && !msg[0]; i++)
            if (d.cfg.rc.diags[i].is_error) /* the first names the line */
                snprintf(msg, sizeof msg, "error: %.1000s (%s)\n", d.cfg.rc.diags[i].text,
                         why);
        ready(rfd, msg[0] ? msg : "error: the configuration has errors\n");
        cfdpd_config_free(&d.cfg);
        return 1;
    }
    if (rc) {
        fprintf(stderr, "%s\n", why);
        char msg[1100];
        snprintf(msg, sizeof msg, "error: %s\n", why);
        ready(rfd, msg);
        cfdpd_config_free(&d.cfg);
        return rc == -EINVAL ? 2 : 1;
    }
    log_config(&d.cfg);
    for (int i = 0; i < MAX_CLIENTS; i++)
        d.cl[i].fd = -1;
    d.lfd = -1;
    d.out = calloc(OUT_MAX_PDUS, sizeof *d.out);
    d.rbuf = malloc(CFDP_CTL_MSG_MAX + 1);
    if (!d.out || !d.rbuf)
        return 1;
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    rc = start(&d, why, sizeof why);
    if (rc) {
        fprintf(stderr, "cfdpd: %s\n", why[0] ? why : tern_strerror(rc));
        char msg[1100];
        snprintf(msg, sizeof msg, "error: %s\n", why[0] ? why : tern_strerror(rc));
        ready(rfd, msg);
        return 1;
    }
    pid_file(&d, 1);
    ready(rfd, "ok\n");
    rc = run(&d);
    pid_file(&d, 0);
    logf_("stopping%s%s", rc ? ": " : "", rc ? tern_strerror(rc) : "");
    if (d.udp)
        tern_ports_withdraw(d.cfg.node_dir, "cfdp", "udp");
    cfdpd_udp_close(d.udp);
    for (size_t i = 0; i < d.nout; i++)
        if (d.out[i].fd >= 0)
            close(d.out[i].fd);
    bp_close(d.rx);
    bp_close(d.tx);
    bp_node_detach(d.node);
    cfdp_user_free(d.u);
    cfdp_entity_free(d.e);
    cfdpd_store_close(d.st);
    cfdp_posixfs_free(d.px);
    if (d.rootfd > 0) /* 0 until start opened it; stdin holds 0 */
        close(d.rootfd);
    cfdpd_config_free(&d.cfg);
    return rc ? 1 : 0;
}
