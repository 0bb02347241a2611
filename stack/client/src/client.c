/* libtern: applications' side of the client protocol (tern_bp.h, docs/client.md).
 *
 * An attachment (BpNode) is one SOCK_SEQPACKET connection to ternd, guarded
 * by a mutex that every call holds, except bp_receive while it sleeps in
 * poll: whoever holds the lock reads the socket and files what arrives —
 * answers into the window of pending sends, deliveries into their endpoint's
 * queue, waking that endpoint's eventfd for a receiver sleeping elsewhere.
 *
 * The window keeps each unanswered SEND as encoded bytes (and descriptor), so
 * after a reconnect they are written again in order. Consecutive queued
 * SENDs without a descriptor leave as one SEND_BATCH datagram.
 */
#include <inttypes.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tern_bp.h"
#include "tern_proto.h"

/* How long a call retries to reach a restarted ternd (TERN_REATTACH_S or
 * bp_node_set_reattach change it): a durable node with a large store takes
 * seconds to come back (docs/client.md, "Threads and restarts"). */
#define REATTACH_MS_DEFAULT 120000
#define REQUEST_MS          30000
/* Writes of a close or detach wait at most this long: a ternd that holds
 * this client's sends for want of room does not read its socket. */
#define CLOSE_WRITE_MS 1000
/* IDs of the last deliveries an endpoint handed to its application: after a
 * reattach ternd offers again those it never heard acknowledged, and the
 * next SEEN_MAX deliveries are checked against them. */
#define SEEN_MAX 1024
#define CREDIT   256 /* deliveries ternd may push ahead of bp_receive */
/* An application that never runs dry still acknowledges this often: ternd
 * lends at most 32 MiB of payloads, so waiting for an empty queue would
 * make it stop and go in 32 MiB steps. */
#define ACK_EVERY       (CREDIT / 4)
#define ACK_EVERY_BYTES (8u << 20)
#define BATCH_BYTES     32768
#define SEND_OVERHEAD   (3 * TERN_PROTO_EID_MAX + 96)
#define MFD_POOL        8

enum { P_QUEUED = 0, P_WRITTEN = 1 };

struct pend {
    uint64_t id;
    uint8_t *msg;
    size_t len;
    int fd;         /* owned: a dup of the caller's or our memfd; -1 */
    int pooled;     /* fd is one of our memfds: back to the pool when answered */
    int msg_pooled; /* msg is a buffer of the attachment's pool */
    size_t mcap;    /* its size */
    struct BpSap_s *sap;
    int state, sync, done, rc;
    uint64_t ctime, seq;
};

/* Buffers of inline payloads (deliveries, and sends' messages), kept for
 * reuse. A 64 KiB payload
 * malloc'd per delivery and freed by the application came from the top
 * of the heap, which glibc trimmed and grew again, so the copy into it
 * page-faulted on every 4 KiB (a receiving cfdpd spent a third of its
 * time there). Deliveries may outlive their attachment (released after
 * bp_node_detach), so the pool counts its users: the attachment, and each
 * delivery holding one of its buffers. */
#define POOL_BUF  TERN_PROTO_MSG_MAX
#define POOL_KEEP 256 /* at most 16 MiB kept */

struct bufpool {
    pthread_mutex_t mu;
    unsigned refs, n;
    void *free[POOL_KEEP];
};

static struct bufpool *pool_new(void)
{
    struct bufpool *p = calloc(1, sizeof *p);
    if (p) {
        pthread_mutex_init(&p->mu, NULL);
        p->refs = 1;
    }
    return p;
}

/* A POOL_BUF buffer, and a reference to p for it. */
static void *pool_get(struct bufpool *p)
{
    pthread_mutex_lock(&p->mu);
    void *b = p->n ? p->free[--p->n] : malloc(POOL_BUF);
    if (b)
        p->refs++;
    pthread_mutex_unlock(&p->mu);
    return b;
}

/* Drops a reference (b: a buffer back, or NULL); the last frees the pool. */
static void pool_put(struct bufpool *p, void *b)
{
    pthread_mutex_lock(&p->mu);
    if (b && p->n < POOL_KEEP && p->refs > 1) {
        p->free[p->n++] = b;
        b = NULL;
    }
    unsigned left = --p->refs;
    pthread_mutex_unlock(&p->mu);
    free(b);
    if (left)
        return;
    for (unsigned i = 0; i < p->n; i++)
        free(p->free[i]);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

struct dlv {
    struct dlv *next;
    char src[BP_EID_MAX];
    uint64_t ctime, seq, flags;
    uint8_t *data;
    size_t len;
    struct bufpool *pool; /* data is a buffer of this pool, or NULL: malloc'd */
    int dup; /* offered again after a reattach: acknowledged in turn, not handed over */
};

/* Who waits in a call: bp_interrupt sets flag and wakes fd. */
struct intr {
    atomic_int flag;    /* the next (or current) blocked call returns -EINTR */
    atomic_int stopped; /* interrupted since its last send: a close does not wait */
    atomic_int fd;      /* eventfd; -1: none (anonymous sends) */
};

struct BpSap_s {
    BpNode *n;
    char eid[BP_EID_MAX];
    int evfd;
    int epfd; /* bp_sap_fd: an epoll set of evfd and the node's socket; -1 until asked */
    struct dlv *qh, *qt;
    uint64_t credit;      /* granted to ternd and not used yet */
    uint64_t acked;       /* deliveries handed to the application, not yet told ternd */
    uint64_t acked_bytes; /* their payload bytes */
    int err;              /* first refusal of an asynchronous send, not yet reported */
    char errwhy[640];     /* what ternd said of err when it came as a DROPPED notice */
    int broken;           /* the re-open after a reattach failed with this */
    struct intr in;       /* bp_interrupt(sap) */
    uint64_t seen[SEEN_MAX]; /* ring of delivery IDs (dlv_id) handed to the application */
    unsigned seen_n, seen_at;
    unsigned recheck; /* deliveries after a reattach still checked against seen */
    struct BpSap_s *next;
};

struct BpNode {
    pthread_mutex_t mu;
    char dir[PATH_MAX];
    struct sockaddr_un sa;
    socklen_t salen;
    int sock;
    int attached_once, in_reattach;
    int global;            /* the process-wide attachment (anonymous sends are its) */
    int reattach_ms;       /* -1: for ever */
    atomic_int store_full; /* ternd said it holds our sends for want of room */
    struct intr *cur;      /* the interrupt of the call holding the lock (NULL: none) */
    uint64_t node_nbr, next_id;
    struct pend pend[BP_SEND_WINDOW];
    unsigned npend;
    struct {
        uint64_t id;
        int waiting, done, lost;
        uint32_t type;
        uint8_t *body;
        size_t len;
    } ans;
    struct BpSap_s *saps;
    int err_nosap;
    uint8_t *rbuf, *wbuf;
    /* memfds of answered sends, for reuse: their pages stay allocated */
    struct {
        int fd;
        size_t cap;
    } mfds[MFD_POOL];
    unsigned nmfds;
    struct bufpool *pool; /* inline deliveries' payload buffers */
};

/* ION's API has one implicit attachment per process. */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static BpNode *g_node;
static int g_refs;
/* bp_interrupt(NULL): anonymous sends, which only the process-wide
 * attachment makes. No eventfd (a signal handler could write to one closed
 * meanwhile): their waits look at the flag every ANON_POLL_MS. */
static struct intr g_anon = {0, 0, -1};
#define ANON_POLL_MS 50

static _Thread_local char t_errmsg[640];

static void seterr(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void seterr(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t_errmsg, sizeof t_errmsg, fmt, ap);
    va_end(ap);
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int left_ms(int64_t deadline)
{
    if (deadline < 0)
        return -1;
    int64_t l = deadline - now_ms();
    return l < 0 ? 0 : l > INT_MAX ? INT_MAX : (int)l;
}

static void wake(int evfd)
{
    uint64_t one = 1;
    ssize_t r = write(evfd, &one, sizeof one);
    (void)r; /* a full counter is still a wakeup */
}

static void dlv_free(struct dlv *d)
{
    if (d->pool)
        pool_put(d->pool, d->data);
    else
        free(d->data);
    free(d);
}

static void evfd_clear(int fd)
{
    uint64_t v;
    ssize_t r = read(fd, &v, sizeof v);
    (void)r; /* nothing to read is fine */
}

/* Takes a pending interrupt of ir: 1 if there was one. */
static int intr_take(struct intr *ir)
{
    return ir && atomic_exchange(&ir->flag, 0);
}

static void intr_raise(struct intr *ir)
{
    atomic_store(&ir->flag, 1);
    atomic_store(&ir->stopped, 1);
    int fd = atomic_load(&ir->fd);
    if (fd >= 0)
        wake(fd);
}

/* poll() on p[0..cnt) and the eventfd of ir (p has room for one more):
 * -EINTR if ir was interrupted, else poll's result (-errno on failure). */
static int poll_intr(struct intr *ir, struct pollfd *p, int cnt, int timeout_ms)
{
    if (intr_take(ir))
        return -EINTR;
    int ifd = ir ? atomic_load(&ir->fd) : -1;
    if (ir && ifd < 0 && (timeout_ms < 0 || timeout_ms > ANON_POLL_MS))
        timeout_ms = ANON_POLL_MS;
    p[cnt] = (struct pollfd){.fd = ifd, .events = POLLIN};
    int r = poll(p, (nfds_t)cnt + 1, timeout_ms);
    if (r < 0 && errno != EINTR)
        return -errno;
    if (r > 0 && (p[cnt].revents & POLLIN))
        evfd_clear(ifd);
    if (intr_take(ir))
        return -EINTR;
    return r < 0 ? 0 : r;
}

/* A delivery's identity for spotting it offered again: source, creation
 * time, sequence number, and length and flags (anonymous bundles of other
 * implementations may share the first three), FNV-1a mixed to 64 bits. */
static uint64_t dlv_id(const char *src, uint64_t ctime, uint64_t seq, uint64_t len,
                       uint64_t flags)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (const char *c = src; *c; c++)
        h = (h ^ (uint8_t)*c) * 0x100000001b3ull;
    const uint64_t v[4] = {ctime, seq, len, flags};
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 64; k += 8)
            h = (h ^ ((v[i] >> k) & 0xff)) * 0x100000001b3ull;
    return h;
}

static int seen_has(const struct BpSap_s *s, uint64_t id)
{
    for (unsigned i = 0; i < s->seen_n; i++)
        if (s->seen[i] == id)
            return 1;
    return 0;
}

static void seen_add(struct BpSap_s *s, uint64_t id)
{
    s->seen[s->seen_at] = id;
    s->seen_at = (s->seen_at + 1) % SEEN_MAX;
    if (s->seen_n < SEEN_MAX)
        s->seen_n++;
}

/* ----------------------------------------------------------- connection */

/* A memfd holding p[0..len) at offset 0, from the pool if it has one (ternd
 * reads it with pread before it answers, so an answered send's memfd may be
 * written again); a new one otherwise. Not sealed: ternd does not map it. */
static int mfd_get(BpNode *n, const void *p, size_t len, int *fd, size_t *cap)
{
    int f = -1;
    size_t have = 0;
    if (n->nmfds) {
        unsigned best = 0;
        for (unsigned i = 1; i < n->nmfds; i++)
            if (n->mfds[i].cap >= len &&
                (n->mfds[best].cap < len || n->mfds[i].cap < n->mfds[best].cap))
                best = i;
        f = n->mfds[best].fd;
        have = n->mfds[best].cap;
        n->mfds[best] = n->mfds[--n->nmfds];
    } else if ((f = memfd_create("tern-payload", MFD_CLOEXEC)) < 0) {
        return -errno;
    }
    int rc = tern_proto_pwrite(f, p, len);
    if (rc) {
        close(f);
        return rc;
    }
    *fd = f;
    *cap = have > len ? have : len;
    return 0;
}

static void pend_drop(BpNode *n, unsigned i)
{
    struct pend *p = &n->pend[i];
    if (p->msg_pooled)
        pool_put(n->pool, p->msg);
    else
        free(p->msg);
    if (p->fd >= 0 && p->pooled && n->nmfds < MFD_POOL && p->mcap <= (64u << 20)) {
        n->mfds[n->nmfds].fd = p->fd;
        n->mfds[n->nmfds++].cap = p->mcap;
    } else if (p->fd >= 0) {
        close(p->fd);
    }
    memmove(&n->pend[i], &n->pend[i + 1], (n->npend - i - 1) * sizeof *p);
    n->npend--;
}

static void conn_down(BpNode *n)
{
    if (n->sock < 0)
        return;
    /* Out of the epoll sets explicitly: a forked child holding a copy of the
     * socket would keep its entry alive (and hung up, readable) after close. */
    for (struct BpSap_s *s = n->saps; s; s = s->next)
        if (s->epfd >= 0)
            epoll_ctl(s->epfd, EPOLL_CTL_DEL, n->sock, NULL);
    close(n->sock);
    n->sock = -1;
    for (unsigned i = 0; i < n->npend; i++)
        if (!n->pend[i].done)
            n->pend[i].state = P_QUEUED; /* ternd may not have it: send again */
    for (struct BpSap_s *s = n->saps; s; s = s->next) {
        s->credit = 0;
        /* Deliveries not yet handed over were only lent: the restarted
         * ternd queues them again, so keeping them would duplicate them. */
        while (s->qh) {
            struct dlv *d = s->qh;
            s->qh = d->next;
            dlv_free(d);
        }
        s->qt = NULL;
        /* Taken by the application, not yet acknowledged (or acknowledged
         * and not yet committed by ternd): the next ternd offers them again,
         * and seen[] spots them. */
        s->acked = s->acked_bytes = 0;
        s->recheck = SEEN_MAX;
        wake(s->evfd); /* a receiver polling the old socket looks again */
    }
    atomic_store(&n->store_full, 0);
    if (n->ans.waiting)
        n->ans.lost = 1;
}

static struct pend *pend_find(BpNode *n, uint64_t id, unsigned *idx)
{
    for (unsigned i = 0; i < n->npend; i++)
        if (n->pend[i].id == id) {
            if (idx)
                *idx = i;
            return &n->pend[i];
        }
    return NULL;
}

static void complete(BpNode *n, uint64_t id, const tern_msg_sent *s)
{
    unsigned i;
    struct pend *p = pend_find(n, id, &i);
    if (!p || p->state != P_WRITTEN)
        return; /* not ours (any more) */
    if (p->sync) {
        p->done = 1;
        p->rc = (int)s->code;
        p->ctime = s->ctime_ms;
        p->seq = s->seq;
        return;
    }
    if (s->code) {
        int *err = p->sap ? &p->sap->err : &n->err_nosap;
        if (!*err)
            *err = (int)s->code;
    }
    pend_drop(n, i);
}

static struct BpSap_s *sap_find(BpNode *n, const char *eid)
{
    for (struct BpSap_s *s = n->saps; s; s = s->next)
        if (!strcmp(s->eid, eid))
            return s;
    return NULL;
}

/* A bundle ternd had accepted from one of our endpoints was deleted before
 * it reached its end: reported as that endpoint's pending error, with its
 * reason, like a refusal. */
static void on_dropped(BpNode *n, const tern_msg_dropped *m)
{
    struct BpSap_s *s = sap_find(n, m->eid);
    if (!s || s->err)
        return;
    s->err = (int)m->code;
    snprintf(s->errwhy, sizeof s->errwhy,
             "bundle %" PRIu64 ".%" PRIu64
             " from %s was accepted, then deleted by ternd: %s",
             m->ctime_ms, m->seq, m->eid, m->text);
}

/* Takes *err (a pending refusal) into the thread's error message. */
static int take_err(struct BpSap_s *sap, int *err, const char *what)
{
    int rc = *err;
    *err = 0;
    if (sap && sap->errwhy[0]) {
        seterr("%s", sap->errwhy);
        sap->errwhy[0] = '\0';
    } else {
        seterr("%s was refused by ternd: %s", what, bp_strerror(rc));
    }
    return rc;
}

/* Files one decoded delivery (fd: its descriptor payload, or -1). */
static int file_delivery(BpNode *n, const tern_msg_deliver *mp, int fd, const char **why)
{
    const tern_msg_deliver m = *mp;
    struct BpSap_s *s = sap_find(n, m.eid);
    if (!s)
        return 0; /* closed meanwhile: ternd took it out of the store; dropped */
    struct dlv *d = calloc(1, sizeof *d);
    if (!d)
        return -ENOMEM;
    memcpy(d->src, m.src, sizeof d->src);
    d->ctime = m.ctime_ms;
    d->seq = m.seq;
    d->flags = m.flags;
    d->len = (size_t)m.len;
    if (s->recheck) {
        s->recheck--;
        if (seen_has(s, dlv_id(m.src, m.ctime_ms, m.seq, m.len, m.flags))) {
            /* the application has it: acknowledged in its place in the
             * queue (acknowledgements count deliveries in order) */
            d->dup = 1;
            d->len = 0;
            if (s->credit)
                s->credit--;
            if (!s->qh) {
                s->acked++;
                free(d);
                return 0;
            }
            s->qt->next = d;
            s->qt = d;
            return 0;
        }
    }
    if (m.has_fd && m.len) {
        struct stat st;
        if (m.len > SIZE_MAX || fstat(fd, &st) || (uint64_t)st.st_size < m.len) {
            free(d);
            *why = "DELIVER descriptor is shorter than the payload";
            return TERN_EMALFORMED;
        }
        /* Read, not mapped: a fresh mapping costs a page fault per 4 KiB at
         * first touch (far more on paravirtualised hosts), while malloc
         * hands back memory whose pages are already mapped. */
        d->data = malloc(d->len);
        if (!d->data) {
            free(d);
            return -ENOMEM;
        }
        int rc = tern_proto_pread(fd, 0, d->data, d->len);
        if (rc) {
            free(d->data);
            free(d);
            return rc;
        }
    } else {
        if (d->len > 4096 && d->len <= POOL_BUF && (d->data = pool_get(n->pool)))
            d->pool = n->pool;
        else
            d->data = malloc(d->len ? d->len : 1);
        if (!d->data) {
            free(d);
            return -ENOMEM;
        }
        if (d->len)
            memcpy(d->data, m.payload, d->len);
    }
    /* A receiver sleeps only on an empty queue: wake it on the first. */
    int was_empty = !s->qh;
    if (s->qt)
        s->qt->next = d;
    else
        s->qh = d;
    s->qt = d;
    if (s->credit)
        s->credit--;
    if (was_empty)
        wake(s->evfd);
    return 0;
}

static int on_deliver(BpNode *n, const uint8_t *body, size_t len, int fd,
                      const char **why)
{
    tern_msg_deliver m;
    int rc = tern_proto_dec_deliver(body, len, &m, why);
    if (rc)
        return rc;
    if (m.has_fd != (fd >= 0)) {
        *why = "DELIVER payload length without a descriptor, or the reverse";
        return TERN_EMALFORMED;
    }
    return file_delivery(n, &m, fd, why);
}

static int on_deliver_batch(BpNode *n, const uint8_t *body, size_t len, const char **why)
{
    tern_proto_iter it;
    tern_msg_deliver m;
    int rc = tern_proto_iter_begin(&it, body, len, why);
    if (rc)
        return rc;
    while ((rc = tern_proto_iter_deliver(&it, &m, why)) == 0)
        if ((rc = file_delivery(n, &m, -1, why)))
            return rc;
    return rc == TERN_EEND ? 0 : rc;
}

/* Files one message from ternd. */
static int dispatch(BpNode *n, const uint8_t *msg, size_t len, int fd)
{
    tern_msg_hdr h;
    const char *why = NULL;
    int rc = tern_proto_hdr_unpack(msg, len, &h, &why);
    const uint8_t *b = msg + TERN_PROTO_HDR;
    if (rc)
        goto bad;
    switch (h.type) {
    case TERN_MSG_SENT: {
        tern_msg_sent s;
        if ((rc = tern_proto_dec_sent(b, h.len, &s, &why)))
            goto bad;
        complete(n, h.id, &s);
        break;
    }
    case TERN_MSG_SENT_BATCH: {
        tern_proto_iter it;
        tern_msg_sent s;
        if ((rc = tern_proto_iter_begin(&it, b, h.len, &why)))
            goto bad;
        uint64_t id = h.id;
        while ((rc = tern_proto_iter_sent(&it, &s, &why)) == 0)
            complete(n, id++, &s);
        if (rc != TERN_EEND)
            goto bad;
        break;
    }
    case TERN_MSG_DELIVER:
        if ((rc = on_deliver(n, b, h.len, fd, &why)))
            goto bad;
        break;
    case TERN_MSG_DELIVER_BATCH:
        if (fd >= 0) {
            why = "DELIVER_BATCH with a descriptor";
            rc = TERN_EMALFORMED;
            goto bad;
        }
        if ((rc = on_deliver_batch(n, b, h.len, &why)))
            goto bad;
        break;
    case TERN_MSG_DROPPED: {
        tern_msg_dropped m;
        if ((rc = tern_proto_dec_dropped(b, h.len, &m, &why)))
            goto bad;
        on_dropped(n, &m);
        break;
    }
    case TERN_MSG_ERROR:
        if (h.id == 0) {
            /* not an answer: ternd holds our sends for want of room
             * (TERN_EFULL) or takes them again (0) */
            int64_t code;
            char text[256];
            if ((rc = tern_proto_dec_code_text(b, h.len, &code, text, sizeof text, &why)))
                goto bad;
            atomic_store(&n->store_full, code == TERN_EFULL);
            break;
        }
        /* fall through */
    case TERN_MSG_OK:
    case TERN_MSG_HELLO_OK:
    case TERN_MSG_STATUS_OK:
    case TERN_MSG_ADMIN_OK:
        if (n->ans.waiting && !n->ans.done && h.id == n->ans.id) {
            n->ans.body = malloc(h.len ? h.len : 1);
            if (!n->ans.body) {
                rc = -ENOMEM;
                goto bad;
            }
            memcpy(n->ans.body, b, h.len);
            n->ans.len = h.len;
            n->ans.type = h.type;
            n->ans.done = 1;
        }
        break;
    default:
        why = "a request type sent by ternd";
        rc = TERN_EMALFORMED;
        goto bad;
    }
    if (fd >= 0)
        close(fd);
    return 0;
bad:
    if (fd >= 0)
        close(fd);
    if (rc == TERN_EMALFORMED)
        seterr("ternd (%s) sent a malformed %s message: %s", n->dir,
               tern_proto_type_name(len >= 4 ? msg[0] : 0), why ? why : "?");
    return rc;
}

/* Reads and files everything waiting. -ENOTCONN if the connection is gone. */
static int pump(BpNode *n)
{
    while (n->sock >= 0) {
        int fd;
        int r = tern_proto_recv(n->sock, n->rbuf, TERN_PROTO_MSG_MAX, &fd, MSG_DONTWAIT);
        if (r == -EAGAIN)
            return 0;
        if (r <= 0 && r != TERN_ETRUNCATED) {
            conn_down(n);
            return -ENOTCONN;
        }
        if (r == TERN_ETRUNCATED ||
            dispatch(n, n->rbuf, (size_t)r, fd) == TERN_EMALFORMED) {
            /* a daemon that speaks another protocol: start over with it */
            conn_down(n);
            return -ENOTCONN;
        }
    }
    return -ENOTCONN;
}

/* Waits up to timeout_ms for input and files it; -EINTR if the call was
 * interrupted. */
static int wait_io(BpNode *n, int timeout_ms)
{
    if (n->sock < 0)
        return -ENOTCONN;
    struct pollfd p[2] = {{.fd = n->sock, .events = POLLIN}};
    int r = poll_intr(n->cur, p, 1, timeout_ms);
    if (r < 0)
        return r;
    if (r > 0 && p[0].revents)
        return pump(n);
    return 0;
}

/* Writes one datagram; wait_ms (-1: for ever, 0: not at all) is how long it
 * waits (reading what arrives meanwhile, so the two sides never wait for
 * each other) until the socket takes it: -EAGAIN after that, -EINTR if the
 * call was interrupted. */
static int write_msg(BpNode *n, const struct iovec *iov, int cnt, int fd, int wait_ms)
{
    int64_t deadline = wait_ms < 0 ? -1 : now_ms() + wait_ms;
    for (;;) {
        if (n->sock < 0)
            return -ENOTCONN;
        int rc = tern_proto_send(n->sock, iov, cnt, fd, MSG_DONTWAIT);
        if (rc == 0)
            return 0;
        if (rc != -EAGAIN && rc != -ENOBUFS) {
            if (rc == -EMSGSIZE)
                return rc;
            conn_down(n);
            return -ENOTCONN;
        }
        int left = deadline < 0 ? 1000 : left_ms(deadline);
        if (left == 0)
            return -EAGAIN;
        struct pollfd p[2] = {{.fd = n->sock, .events = POLLIN | POLLOUT}};
        int r = poll_intr(n->cur, p, 1, left > 1000 ? 1000 : left);
        if (r < 0)
            return r;
        if (r > 0 && (p[0].revents & (POLLIN | POLLHUP | POLLERR))) {
            int pr = pump(n);
            if (pr)
                return pr;
        }
    }
}

/* Writes the queued sends in order, batching those that can be; block: waits
 * for room in the socket (else -EAGAIN once it is full). */
static int flush_out(BpNode *n, int block)
{
    for (;;) {
        unsigned q = 0;
        while (q < n->npend && n->pend[q].state != P_QUEUED)
            q++;
        if (q == n->npend)
            return 0;
        unsigned k = 1;
        size_t bytes = n->pend[q].len;
        if (n->pend[q].fd < 0)
            while (q + k < n->npend && k < TERN_PROTO_BATCH_MAX) {
                struct pend *x = &n->pend[q + k];
                if (x->state != P_QUEUED || x->fd >= 0 || x->id != n->pend[q].id + k ||
                    bytes + x->len > BATCH_BYTES)
                    break;
                bytes += x->len;
                k++;
            }
        uint64_t id0 = n->pend[q].id;
        struct iovec iov;
        int rc;
        if (k == 1) {
            iov = (struct iovec){n->pend[q].msg, n->pend[q].len};
        } else {
            const uint8_t *msgs[TERN_PROTO_BATCH_MAX];
            size_t lens[TERN_PROTO_BATCH_MAX];
            for (unsigned i = 0; i < k; i++) {
                msgs[i] = n->pend[q + i].msg;
                lens[i] = n->pend[q + i].len;
            }
            rc = tern_proto_enc_batch(n->wbuf, TERN_PROTO_MSG_MAX, msgs, lens, k);
            if (rc < 0)
                return rc;
            iov = (struct iovec){n->wbuf, (size_t)rc};
        }
        rc = write_msg(n, &iov, 1, n->pend[q].fd, block ? -1 : 0);
        if (rc)
            return rc;
        /* reading while waiting may have removed answered entries: by id */
        for (unsigned i = 0; i < k; i++) {
            struct pend *p = pend_find(n, id0 + i, NULL);
            if (p)
                p->state = P_WRITTEN;
        }
    }
}

static int conn_up(BpNode *n);

/* Sends a request and waits for its answer (copied into n->ans). */
static int request(BpNode *n, const uint8_t *msg, size_t len)
{
    tern_msg_hdr h;
    if (tern_proto_hdr_unpack(msg, len, &h, NULL))
        return -EINVAL;
    for (;;) {
        int rc = n->in_reattach ? (n->sock < 0 ? -ENOTCONN : 0) : conn_up(n);
        if (rc)
            return rc;
        if (!n->in_reattach && (rc = flush_out(n, 1)) != 0) {
            if (rc == -ENOTCONN)
                continue;
            return rc;
        }
        free(n->ans.body);
        n->ans.body = NULL;
        n->ans.id = h.id;
        n->ans.waiting = 1;
        n->ans.done = n->ans.lost = 0;
        struct iovec iov = {(void *)msg, len};
        rc = write_msg(n, &iov, 1, -1, -1);
        int64_t deadline = now_ms() + REQUEST_MS;
        while (!rc && !n->ans.done && !n->ans.lost) {
            if (left_ms(deadline) == 0) {
                rc = -ETIMEDOUT;
                seterr("ternd (%s) did not answer a %s request", n->dir,
                       tern_proto_type_name(h.type));
                break;
            }
            rc = wait_io(n, left_ms(deadline));
        }
        n->ans.waiting = 0;
        if (n->ans.done)
            return 0;
        if (rc == -ENOTCONN || n->ans.lost) {
            if (n->in_reattach)
                return -ENOTCONN;
            continue; /* ternd went away: reattach and ask again */
        }
        return rc;
    }
}

/* The code of an OK / ERROR answer. */
static int ans_code(BpNode *n, const char *what)
{
    if (n->ans.type == TERN_MSG_OK)
        return 0;
    int64_t code = 0;
    char text[512];
    const char *why;
    if (n->ans.type != TERN_MSG_ERROR ||
        tern_proto_dec_code_text(n->ans.body, n->ans.len, &code, text, sizeof text,
                                 &why) ||
        code >= 0) {
        seterr("ternd (%s): unexpected answer %s to %s", n->dir,
               tern_proto_type_name(n->ans.type), what);
        return TERN_EMALFORMED;
    }
    seterr("%s: %s", what, text);
    return (int)code;
}

static int sap_reopen(BpNode *n, struct BpSap_s *s)
{
    uint8_t buf[TERN_PROTO_EID_MAX + 64];
    int len = tern_proto_enc_eid(buf, sizeof buf, TERN_MSG_OPEN, n->next_id++, s->eid);
    if (len < 0)
        return len;
    int rc = request(n, buf, (size_t)len);
    if (rc)
        return rc;
    char what[BP_EID_MAX + 16];
    snprintf(what, sizeof what, "open %s", s->eid);
    return ans_code(n, what);
}

static int sap_ack(BpNode *n, BpSAP sap, int wait_ms);

/* Adds the node's socket to sap's epoll set (bp_sap_fd). */
static int sap_watch_sock(struct BpSap_s *s, int sock)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = sock};
    if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, sock, &ev) && errno != EEXIST)
        return -errno;
    return 0;
}

static int try_connect(BpNode *n)
{
    int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (s < 0)
        return -errno;
    if (connect(s, (struct sockaddr *)&n->sa, n->salen)) {
        int rc = -errno;
        close(s);
        return rc;
    }
    int sz = 1 << 20; /* room for a window of inline sends; the kernel caps it */
    setsockopt(s, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
    setsockopt(s, SOL_SOCKET, SO_RCVBUF, &sz, sizeof sz);
    n->sock = s;
    n->in_reattach = 1;
    uint8_t buf[64];
    int rc, len = tern_proto_enc_hello(buf, sizeof buf, n->next_id++, TERN_PROTO_VERSION);
    rc = request(n, buf, (size_t)len);
    if (!rc) {
        uint64_t ver = 0;
        if (n->ans.type == TERN_MSG_HELLO_OK &&
            !tern_proto_dec_hello_ok(n->ans.body, n->ans.len, &ver, &n->node_nbr, NULL)) {
            if (ver != TERN_PROTO_VERSION) {
                seterr("ternd (%s) speaks protocol version %llu, libtern %d", n->dir,
                       (unsigned long long)ver, TERN_PROTO_VERSION);
                rc = -EPROTONOSUPPORT;
            }
        } else {
            rc = ans_code(n, "hello");
            if (!rc)
                rc = -EPROTO;
        }
    }
    for (struct BpSap_s *sp = n->saps; !rc && sp; sp = sp->next) {
        int orc = sap_reopen(n, sp);
        if (orc == -ENOTCONN)
            rc = orc;
        else if (orc)
            sp->broken = orc; /* someone took it meanwhile: that SAP is done */
    }
    n->in_reattach = 0;
    if (rc) {
        conn_down(n);
        return rc;
    }
    n->attached_once = 1;
    /* a closed socket left the epoll sets by itself: its successor joins them */
    for (struct BpSap_s *sp = n->saps; sp; sp = sp->next)
        if (sp->epfd >= 0) {
            sap_watch_sock(sp, n->sock);
            sap_ack(n, sp, 0); /* credit: ternd pushes before anyone calls bp_receive */
        }
    return 0;
}

/* Connects (again) if needed: a first attach tries once, a reattach keeps
 * trying for n->reattach_ms while ternd restarts (-EINTR if the call is
 * interrupted meanwhile). */
static int conn_up(BpNode *n)
{
    if (n->sock >= 0)
        return 0;
    int64_t t0 = now_ms();
    int64_t deadline = !n->attached_once    ? t0
                       : n->reattach_ms < 0 ? -1
                                            : t0 + n->reattach_ms;
    unsigned delay = 10;
    for (;;) {
        int rc = try_connect(n);
        if (rc == 0)
            return 0;
        if (rc != -ECONNREFUSED && rc != -ENOTCONN && rc != -ECONNRESET &&
            rc != -EAGAIN && rc != -EPIPE)
            return rc;
        if (deadline >= 0 && now_ms() >= deadline) {
            if (n->attached_once)
                seterr("no ternd serves %s: start it with 'tern start %s' (waited %.1f s "
                       "for it to come back; TERN_REATTACH_S sets how long)",
                       n->dir, n->dir, (double)(now_ms() - t0) / 1000);
            else
                seterr("no ternd serves %s: start it with 'tern start %s'", n->dir,
                       n->dir);
            return -ECONNREFUSED;
        }
        struct pollfd p[1];
        int r = poll_intr(n->cur, p, 0, (int)delay);
        if (r == -EINTR) {
            seterr("interrupted while waiting for ternd (%s) to come back", n->dir);
            return r;
        }
        delay = delay * 2 > 200 ? 200 : delay * 2;
    }
}

/* TERN_REATTACH_S: seconds (fractions allowed; "inf" or -1: for ever). */
static int reattach_from_env(void)
{
    const char *e = getenv("TERN_REATTACH_S");
    if (!e || !*e)
        return REATTACH_MS_DEFAULT;
    if (!strcmp(e, "inf") || !strcmp(e, "-1"))
        return -1;
    char *end;
    double v = strtod(e, &end);
    if (*end || !(v >= 0) || v > INT_MAX / 1000.0)
        return REATTACH_MS_DEFAULT; /* documented: a bad value keeps the default */
    return (int)(v * 1000 + 0.5);
}

/* ---------------------------------------------------------- attachments */

static const char *default_dir(const char *node_dir)
{
    if (node_dir)
        return node_dir;
    const char *e = getenv("TERN_NODE_DIR");
    return e && *e ? e : ".";
}

TERN_API int bp_node_attach(const char *node_dir, BpNode **out)
{
    const char *dir = default_dir(node_dir);
    t_errmsg[0] = '\0';
    BpNode *n = calloc(1, sizeof *n);
    if (!n)
        return -ENOMEM;
    int rc = -ENOMEM;
    n->sock = -1;
    n->next_id = 1;
    n->reattach_ms = reattach_from_env();
    n->rbuf = malloc(TERN_PROTO_MSG_MAX);
    n->wbuf = malloc(TERN_PROTO_MSG_MAX);
    n->pool = pool_new();
    if (!n->rbuf || !n->wbuf || !n->pool)
        goto fail;
    if (!realpath(dir, n->dir)) {
        rc = -errno;
        seterr("node directory %s: %s", dir, strerror(errno));
        goto fail;
    }
    if ((rc = tern_proto_sockaddr(n->dir, &n->sa, &n->salen, NULL, 0)))
        goto fail;
    pthread_mutex_init(&n->mu, NULL);
    if ((rc = conn_up(n))) {
        pthread_mutex_destroy(&n->mu);
        goto fail;
    }
    *out = n;
    return 0;
fail:
    if (n->pool)
        pool_put(n->pool, NULL);
    free(n->rbuf);
    free(n->wbuf);
    free(n);
    return rc;
}

static void sap_free(struct BpSap_s *s)
{
    while (s->qh) {
        struct dlv *d = s->qh;
        s->qh = d->next;
        dlv_free(d);
    }
    close(s->evfd);
    if (s->epfd >= 0)
        close(s->epfd);
    int ifd = atomic_load(&s->in.fd);
    if (ifd >= 0)
        close(ifd);
    free(s);
}

static void sap_unlink(BpNode *n, struct BpSap_s *s)
{
    for (struct BpSap_s **pp = &n->saps; *pp; pp = &(*pp)->next)
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    for (unsigned i = 0; i < n->npend; i++)
        if (n->pend[i].sap == s)
            n->pend[i].sap = NULL;
}

/* Leaves the unanswered sends of sap (NULL: anonymous ones) to ternd
 * without waiting for their answers: what was written stays in its socket
 * (it takes those if it can), what was not is dropped. */
static unsigned abandon(BpNode *n, BpSAP sap)
{
    unsigned k = 0;
    if (n->sock >= 0)
        flush_out(n, 0);
    for (unsigned i = n->npend; i-- > 0;)
        if (n->pend[i].sap == sap && !n->pend[i].sync) {
            pend_drop(n, i);
            k++;
        }
    return k;
}

/* Waits until the window is empty or the deadline passes (-EINTR if the
 * call is interrupted). */
static int drain(BpNode *n, int64_t deadline)
{
    /* notices that came while nothing was awaited (DROPPED) are filed first */
    if (n->sock >= 0)
        (void)pump(n);
    for (;;) {
        int rc = conn_up(n);
        if (rc)
            return rc;
        rc = flush_out(n, 1);
        if (rc == -ENOTCONN)
            continue;
        if (rc)
            return rc;
        int busy = 0;
        for (unsigned i = 0; i < n->npend; i++)
            busy |= !n->pend[i].sync;
        if (!busy)
            return 0;
        if (deadline >= 0 && left_ms(deadline) == 0)
            return -ETIMEDOUT;
        rc = wait_io(n, deadline < 0 ? 1000 : left_ms(deadline));
        if (rc && rc != -ENOTCONN)
            return rc;
    }
}

TERN_API int bp_node_detach(BpNode *n)
{
    if (!n)
        return 0;
    pthread_mutex_lock(&n->mu);
    /* an interrupted application is not kept waiting by a node whose store
     * is full (its answers would come only as bundles leave the store) */
    for (struct BpSap_s *s = n->saps; s; s = s->next)
        if (atomic_load(&s->in.stopped))
            abandon(n, s);
    if (n->global && atomic_load(&g_anon.stopped))
        abandon(n, NULL);
    int rc = 0;
    if (n->npend)
        rc = drain(n, now_ms() + REQUEST_MS);
    else if (n->sock >= 0)
        (void)pump(n); /* a DROPPED notice not yet read */
    if (!rc && n->err_nosap)
        rc = n->err_nosap;
    while (n->saps) {
        struct BpSap_s *s = n->saps;
        if (!rc && s->err)
            rc = take_err(s, &s->err, "a bundle");
        if (n->sock >= 0) {
            uint8_t buf[TERN_PROTO_EID_MAX + 64];
            int len;
            if (s->acked) { /* what the application got leaves ternd's store */
                len = tern_proto_enc_recv(buf, sizeof buf, n->next_id++, s->eid, 0,
                                          s->acked);
                struct iovec ia = {buf, (size_t)len};
                if (len > 0)
                    write_msg(n, &ia, 1, -1, CLOSE_WRITE_MS);
            }
            len =
                tern_proto_enc_eid(buf, sizeof buf, TERN_MSG_CLOSE, n->next_id++, s->eid);
            struct iovec iov = {buf, (size_t)len};
            if (len > 0) /* closing the socket closes it anyway */
                write_msg(n, &iov, 1, -1, CLOSE_WRITE_MS);
        }
        sap_unlink(n, s);
        sap_free(s);
    }
    conn_down(n);
    while (n->npend)
        pend_drop(n, n->npend - 1);
    for (unsigned i = 0; i < n->nmfds; i++)
        close(n->mfds[i].fd);
    free(n->ans.body);
    pthread_mutex_unlock(&n->mu);
    pthread_mutex_destroy(&n->mu);
    pool_put(n->pool, NULL); /* freed with the last delivery still held */
    free(n->rbuf);
    free(n->wbuf);
    free(n);
    return rc;
}

TERN_API int bp_attach(const char *node_dir)
{
    pthread_mutex_lock(&g_mu);
    int rc = 0;
    if (g_node) {
        char real[PATH_MAX];
        if (!realpath(default_dir(node_dir), real) || strcmp(real, g_node->dir)) {
            seterr("already attached to %s", g_node->dir);
            rc = -EBUSY;
        } else {
            g_refs++;
        }
    } else if ((rc = bp_node_attach(node_dir, &g_node)) == 0) {
        g_refs = 1;
        atomic_store(&g_anon.flag, 0);
        atomic_store(&g_anon.stopped, 0);
        pthread_mutex_lock(&g_node->mu);
        g_node->global = 1;
        pthread_mutex_unlock(&g_node->mu);
    }
    pthread_mutex_unlock(&g_mu);
    return rc;
}

TERN_API void bp_detach(void)
{
    pthread_mutex_lock(&g_mu);
    if (g_node && --g_refs == 0) {
        bp_node_detach(g_node);
        g_node = NULL;
    }
    pthread_mutex_unlock(&g_mu);
}

TERN_API BpNode *bp_node(void)
{
    pthread_mutex_lock(&g_mu);
    BpNode *n = g_node;
    pthread_mutex_unlock(&g_mu);
    return n;
}

TERN_API uint64_t bp_node_number(const BpNode *n)
{
    return n ? n->node_nbr : 0;
}

TERN_API int bp_node_status(BpNode *n, char *out, size_t cap)
{
    if (!n || !out || !cap)
        return -EINVAL;
    pthread_mutex_lock(&n->mu);
    uint8_t buf[64];
    int len = tern_proto_enc_empty(buf, sizeof buf, TERN_MSG_STATUS, n->next_id++);
    int rc = request(n, buf, (size_t)len);
    if (!rc) {
        const char *why = NULL;
        if (n->ans.type == TERN_MSG_STATUS_OK)
            rc = tern_proto_dec_status_ok(n->ans.body, n->ans.len, out, cap, &why);
        else
            rc = ans_code(n, "status");
        if (rc == TERN_EMALFORMED)
            seterr("ternd (%s) sent a malformed STATUS_OK: %s", n->dir, why ? why : "?");
    }
    pthread_mutex_unlock(&n->mu);
    return rc;
}

TERN_API int bp_node_admin(BpNode *n, const char *module, const char *line, char *out,
                           size_t cap)
{
    if (!n || !module || !line)
        return -EINVAL;
    uint8_t *buf = malloc(2 * TERN_PROTO_TEXT_MAX + 64);
    if (!buf)
        return -ENOMEM;
    pthread_mutex_lock(&n->mu);
    int rc = tern_proto_enc_admin(buf, 2 * TERN_PROTO_TEXT_MAX + 64, n->next_id++, module,
                                  line);
    if (rc > 0)
        rc = request(n, buf, (size_t)rc);
    if (!rc) {
        int64_t code;
        const char *why = NULL;
        char dummy[1];
        if (n->ans.type == TERN_MSG_ADMIN_OK) {
            rc = tern_proto_dec_code_text(n->ans.body, n->ans.len, &code,
                                          out && cap ? out : dummy,
                                          out && cap ? cap : sizeof dummy, &why);
            if (!rc)
                rc = (int)code;
        } else {
            rc = ans_code(n, "admin");
        }
    }
    pthread_mutex_unlock(&n->mu);
    free(buf);
    return rc;
}

TERN_API int bp_node_stop(BpNode *n)
{
    if (!n)
        return -EINVAL;
    pthread_mutex_lock(&n->mu);
    uint8_t buf[64];
    int len = tern_proto_enc_empty(buf, sizeof buf, TERN_MSG_STOP, n->next_id++);
    int rc = request(n, buf, (size_t)len);
    if (!rc)
        rc = ans_code(n, "stop");
    pthread_mutex_unlock(&n->mu);
    return rc;
}

/* ------------------------------------------------------------ endpoints */

TERN_API int bp_node_open(BpNode *n, const char *eid, BpSAP *sap)
{
    if (!n || !sap)
        return -EINVAL;
    if (tern_proto_eid_check(eid)) {
        seterr("bad endpoint ID '%s' (expected ipn:N.S or dtn://node/service)",
               eid ? eid : "(null)");
        return -EINVAL;
    }
    struct BpSap_s *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    s->n = n;
    snprintf(s->eid, sizeof s->eid, "%s", eid);
    s->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    s->epfd = -1;
    int ifd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (s->evfd < 0 || ifd < 0) {
        int rc = -errno;
        if (s->evfd >= 0)
            close(s->evfd);
        if (ifd >= 0)
            close(ifd);
        free(s);
        return rc;
    }
    atomic_init(&s->in.flag, 0);
    atomic_init(&s->in.stopped, 0);
    atomic_init(&s->in.fd, ifd);
    pthread_mutex_lock(&n->mu);
    int rc;
    if (sap_find(n, eid)) {
        seterr("endpoint %s is already open in this process", eid);
        rc = -EBUSY;
    } else if ((rc = sap_reopen(n, s)) == 0) {
        s->next = n->saps;
        n->saps = s;
    }
    pthread_mutex_unlock(&n->mu);
    if (rc) {
        sap_free(s);
        return rc;
    }
    *sap = s;
    return 0;
}

TERN_API int bp_open(const char *eid, BpSAP *sap)
{
    BpNode *n = bp_node();
    if (!n) {
        seterr("not attached: call bp_attach first");
        return -ENOTCONN;
    }
    return bp_node_open(n, eid, sap);
}

TERN_API const char *bp_sap_eid(BpSAP sap)
{
    return sap ? sap->eid : "dtn:none";
}

TERN_API int bp_close(BpSAP sap)
{
    if (!sap)
        return 0;
    BpNode *n = sap->n;
    pthread_mutex_lock(&n->mu);
    n->cur = &sap->in;
    /* Interrupted (before or during the wait): the application wants out,
     * and a node whose store is full answers only as bundles leave it. */
    int rc = 0, quick = atomic_load(&sap->in.stopped);
    if (!quick && n->npend) {
        rc = drain(n, now_ms() + REQUEST_MS);
        quick = rc == -EINTR;
    } else if (n->sock >= 0) {
        (void)pump(n); /* a DROPPED notice not yet read */
    }
    if (quick) {
        unsigned k = abandon(n, sap);
        if (k && !rc) {
            rc = -EINTR;
            seterr("closed with %u send(s) of %s not answered by ternd", k, sap->eid);
        }
    }
    if (!rc && sap->err)
        rc = take_err(sap, &sap->err, "a bundle");
    if (n->sock >= 0 && !sap->broken) {
        uint8_t buf[TERN_PROTO_EID_MAX + 64];
        int len;
        if (sap->acked) { /* what the application got leaves ternd's store */
            len = tern_proto_enc_recv(buf, sizeof buf, n->next_id++, sap->eid, 0,
                                      sap->acked);
            if (len > 0) {
                struct iovec iov = {buf, (size_t)len};
                if (write_msg(n, &iov, 1, -1, CLOSE_WRITE_MS) == 0)
                    sap->acked = sap->acked_bytes = 0;
            }
        }
        len = tern_proto_enc_eid(buf, sizeof buf, TERN_MSG_CLOSE, n->next_id++, sap->eid);
        if (quick) { /* its answer is not awaited: ternd closes it anyway */
            struct iovec iov = {buf, (size_t)(len > 0 ? len : 0)};
            if (len > 0)
                write_msg(n, &iov, 1, -1, 0);
        } else {
            int crc = len > 0 ? request(n, buf, (size_t)len) : len;
            if (!crc)
                crc = ans_code(n, "close");
            if (!rc && crc && crc != -ECONNREFUSED)
                rc = crc;
        }
    }
    n->cur = NULL;
    sap_unlink(n, sap);
    sap_free(sap);
    pthread_mutex_unlock(&n->mu);
    return rc;
}

/* ---------------------------------------------------------------- send */

static uint64_t wire_flags(const BpSendOpts *o)
{
    uint64_t f = 0;
    if (o->rpt_flags & BP_RECEIVED_RPT)
        f |= 0x004000;
    if (o->rpt_flags & BP_FORWARDED_RPT)
        f |= 0x010000;
    if (o->rpt_flags & BP_DELIVERED_RPT)
        f |= 0x020000;
    if (o->rpt_flags & BP_DELETED_RPT)
        f |= 0x040000;
    if (o->flags & BP_SEND_NOFRAGMENT)
        f |= 0x000004;
    return f;
}

/* The interrupt of calls on sap: anonymous sends are those of the
 * process-wide attachment. */
static struct intr *sap_intr(BpNode *n, BpSAP sap)
{
    if (sap)
        return &sap->in;
    return n->global ? &g_anon : NULL;
}

/* The body of bp_send, bp_send_fd and bp_send_fd_head: fd >= 0 sends from a
 * descriptor, head[0..hlen) before its bytes. */
static int do_send(BpNode *n, BpSAP sap, const char *dest, const void *payload, int fd,
                   uint64_t off, size_t len, const void *head, size_t hlen,
                   const BpSendOpts *opts, BpBundleRef *out)
{
    static const BpSendOpts defaults = BP_SEND_OPTS_INIT;
    const BpSendOpts *o = opts ? opts : &defaults;
    if (tern_proto_eid_check(dest)) {
        seterr("bad destination EID '%s' (expected ipn:N.S or dtn://node/service)",
               dest ? dest : "(null)");
        return -EINVAL;
    }
    if ((o->report_to && tern_proto_eid_check(o->report_to)) || o->priority < 0 ||
        o->priority > 2 || o->ordinal > 254 || (!payload && len && fd < 0)) {
        seterr("bad send options (report-to EID, class 0-2, ordinal 0-254, payload)");
        return -EINVAL;
    }
    int nonblock = (o->flags & BP_SEND_NONBLOCK) != 0;
    int rc = 0;
    pthread_mutex_lock(&n->mu);
    struct intr *ir = sap_intr(n, sap);
    n->cur = ir;
    int *err = sap ? &sap->err : &n->err_nosap;
    if (sap && sap->broken) {
        rc = sap->broken;
        goto out;
    }
    if (*err) {
        rc = take_err(sap, err, "an earlier bundle");
        goto out;
    }
    /* room in the window */
    while (n->npend >= BP_SEND_WINDOW) {
        if ((rc = conn_up(n)))
            goto out;
        rc = flush_out(n, !nonblock);
        if (rc == -ENOTCONN)
            continue;
        if (rc && rc != -EAGAIN)
            goto out;
        if (n->npend < BP_SEND_WINDOW)
            break;
        if (nonblock) {
            if ((rc = pump(n)) == -ENOTCONN)
                continue;
            if (n->npend >= BP_SEND_WINDOW) {
                rc = -EAGAIN;
                goto out;
            }
            break;
        }
        rc = wait_io(n, 1000);
        if (rc && rc != -ENOTCONN)
            goto out;
    }
    rc = 0;
    tern_msg_send m;
    memset(&m, 0, sizeof m);
    snprintf(m.src, sizeof m.src, "%s", sap ? sap->eid : "dtn:none");
    snprintf(m.dest, sizeof m.dest, "%s", dest);
    snprintf(m.report_to, sizeof m.report_to, "%s", o->report_to ? o->report_to : "");
    m.lifetime_ms = o->lifetime_ms  ? o->lifetime_ms
                    : o->lifetime_s ? (uint64_t)o->lifetime_s * 1000
                                    : 86400000;
    m.priority = (uint64_t)o->priority;
    m.ordinal = o->ordinal;
    m.flags = wire_flags(o);
    m.len = len;
    int pfd = -1, pooled = 0;
    size_t mcap = 0;
    if (fd >= 0) {
        pfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
        if (pfd < 0) {
            rc = -errno;
            goto out;
        }
        m.has_fd = 1;
        m.offset = off;
        m.head = head;
        m.head_len = hlen;
        if (o->flags & BP_SEND_FILE_REF)
            m.flags |= TERN_PROTO_SEND_FILE_REF;
    } else if (len > TERN_PROTO_INLINE_MAX) {
        if ((rc = mfd_get(n, payload, len, &pfd, &mcap)))
            goto out;
        pooled = 1;
        m.has_fd = 1;
    } else {
        m.payload = payload;
    }
    size_t cap = TERN_PROTO_HDR + SEND_OVERHEAD + (m.has_fd ? hlen : len);
    int msg_pooled = cap > 4096 && cap <= POOL_BUF;
    uint8_t *msg = msg_pooled ? pool_get(n->pool) : malloc(cap);
    if (!msg) {
        if (pfd >= 0)
            close(pfd);
        rc = -ENOMEM;
        goto out;
    }
    uint64_t id = n->next_id++;
    int mlen = tern_proto_enc_send(msg, cap, id, &m);
    if (mlen < 0) {
        if (msg_pooled)
            pool_put(n->pool, msg);
        else
            free(msg);
        if (pfd >= 0)
            close(pfd);
        rc = mlen;
        goto out;
    }
    n->pend[n->npend++] = (struct pend){.id = id,
                                        .msg = msg,
                                        .len = (size_t)mlen,
                                        .fd = pfd,
                                        .pooled = pooled,
                                        .msg_pooled = msg_pooled,
                                        .mcap = mcap,
                                        .sap = sap,
                                        .state = P_QUEUED,
                                        .sync = out != NULL};
    /* Held back with BP_SEND_MORE until a batch is full. */
    size_t queued = 0;
    unsigned nq = 0;
    for (unsigned i = 0; i < n->npend; i++)
        if (n->pend[i].state == P_QUEUED) {
            queued += n->pend[i].len;
            nq++;
        }
    int hold = (o->flags & BP_SEND_MORE) && !out && pfd < 0 && queued < BATCH_BYTES &&
               nq < TERN_PROTO_BATCH_MAX;
    while (!hold) {
        if ((rc = conn_up(n)))
            break;
        rc = flush_out(n, !nonblock);
        if (rc != -ENOTCONN)
            break;
    }
    if (rc == -EINTR && ir) {
        /* this bundle is in the window all the same: the next call that
         * would wait takes the interrupt */
        atomic_store(&ir->flag, 1);
        rc = 0;
    }
    if (rc == -EAGAIN)
        rc = 0; /* queued: written by the next call that waits */
    if (rc)
        goto out;
    if (ir)
        atomic_store(&ir->stopped, 0); /* sending again: a close waits again */
    if (out) {
        for (;;) {
            unsigned i;
            struct pend *p = pend_find(n, id, &i);
            if (!p) {
                rc = -EIO;
                break;
            }
            if (p->done) {
                rc = p->rc;
                out->ctime_ms = p->ctime;
                out->seq = p->seq;
                pend_drop(n, i);
                if (rc)
                    seterr("ternd refused the bundle: %s", bp_strerror(rc));
                break;
            }
            if ((rc = conn_up(n)) == 0) {
                rc = flush_out(n, 1);
                if (rc == 0 || rc == -ENOTCONN)
                    rc = wait_io(n, 1000);
                if (rc == -ENOTCONN)
                    rc = 0;
            }
            if (rc) {
                /* no answer awaited any more: it is answered as an
                 * asynchronous send (a refusal reported by the next call) */
                if ((p = pend_find(n, id, NULL)))
                    p->sync = 0;
                break;
            }
        }
    } else if (n->sock >= 0) {
        pump(n); /* file answers now: keeps the window open */
    }
out:
    n->cur = NULL;
    pthread_mutex_unlock(&n->mu);
    return rc;
}

static BpNode *sap_node(BpSAP sap)
{
    return sap ? sap->n : bp_node();
}

TERN_API int bp_send(BpSAP sap, const char *dest, const void *payload, size_t len,
                     const BpSendOpts *opts, BpBundleRef *out)
{
    BpNode *n = sap_node(sap);
    if (!n) {
        seterr("not attached: call bp_attach first");
        return -ENOTCONN;
    }
    return do_send(n, sap, dest, payload, -1, 0, len, NULL, 0, opts, out);
}

TERN_API int bp_send_fd(BpSAP sap, const char *dest, int fd, off_t off, size_t len,
                        const BpSendOpts *opts, BpBundleRef *out)
{
    BpNode *n = sap_node(sap);
    if (!n) {
        seterr("not attached: call bp_attach first");
        return -ENOTCONN;
    }
    if (fd < 0 || off < 0)
        return -EINVAL;
    return do_send(n, sap, dest, NULL, fd, (uint64_t)off, len, NULL, 0, opts, out);
}

TERN_API int bp_send_fd_head(BpSAP sap, const char *dest, const void *head, size_t hlen,
                             int fd, off_t off, size_t len, const BpSendOpts *opts,
                             BpBundleRef *out)
{
    BpNode *n = sap_node(sap);
    if (!n) {
        seterr("not attached: call bp_attach first");
        return -ENOTCONN;
    }
    if (fd < 0 || off < 0 || hlen > BP_SEND_HEAD_MAX || (hlen && !head)) {
        seterr("bad descriptor send (descriptor, offset, or head over %d bytes)",
               BP_SEND_HEAD_MAX);
        return -EINVAL;
    }
    return do_send(n, sap, dest, NULL, fd, (uint64_t)off, len, head, hlen, opts, out);
}

TERN_API int bp_flush(BpSAP sap, int timeout_ms)
{
    BpNode *n = sap_node(sap);
    if (!n)
        return -ENOTCONN;
    pthread_mutex_lock(&n->mu);
    n->cur = sap_intr(n, sap);
    int rc = drain(n, timeout_ms < 0 ? -1 : now_ms() + timeout_ms);
    int *err = sap ? &sap->err : &n->err_nosap;
    if (!rc && *err)
        rc = take_err(sap, err, "a bundle");
    n->cur = NULL;
    pthread_mutex_unlock(&n->mu);
    return rc;
}

TERN_API int bp_send_ready(BpSAP sap, int timeout_ms)
{
    BpNode *n = sap_node(sap);
    if (!n)
        return -ENOTCONN;
    int64_t deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
    int rc = 0;
    pthread_mutex_lock(&n->mu);
    n->cur = sap_intr(n, sap);
    while (n->npend >= BP_SEND_WINDOW) {
        if ((rc = conn_up(n)))
            break;
        /* held-back sends (BP_SEND_MORE) go out first, as far as the socket takes them */
        rc = flush_out(n, 0);
        if (rc == -ENOTCONN)
            continue;
        if (rc && rc != -EAGAIN)
            break;
        rc = 0;
        if ((rc = pump(n)) == -ENOTCONN)
            continue;
        if (n->npend < BP_SEND_WINDOW)
            break;
        int left = left_ms(deadline);
        if (left == 0) {
            rc = -ETIMEDOUT;
            break;
        }
        /* readable: answers; writable: room for the sends still queued */
        struct pollfd p[2] = {{.fd = n->sock, .events = POLLIN}};
        for (unsigned i = 0; i < n->npend; i++)
            if (n->pend[i].state == P_QUEUED)
                p[0].events |= POLLOUT;
        rc = poll_intr(n->cur, p, 1, left < 0 || left > 1000 ? 1000 : left);
        if (rc < 0)
            break;
        rc = 0;
    }
    n->cur = NULL;
    pthread_mutex_unlock(&n->mu);
    return rc;
}

TERN_API int bp_node_store_full(BpNode *n)
{
    if (!n)
        return 0;
    /* A sender waiting for room holds the lock and reads the socket itself:
     * then its last news is the answer. */
    if (pthread_mutex_trylock(&n->mu) == 0) {
        if (n->sock >= 0)
            pump(n); /* what ternd said meanwhile */
        pthread_mutex_unlock(&n->mu);
    }
    return atomic_load(&n->store_full);
}

TERN_API void bp_node_set_reattach(BpNode *n, int timeout_ms)
{
    if (!n)
        return;
    pthread_mutex_lock(&n->mu);
    n->reattach_ms = timeout_ms < 0 ? -1 : timeout_ms;
    pthread_mutex_unlock(&n->mu);
}

TERN_API unsigned bp_node_unanswered(BpNode *n)
{
    if (!n)
        return 0;
    pthread_mutex_lock(&n->mu);
    unsigned k = n->npend;
    pthread_mutex_unlock(&n->mu);
    return k;
}

/* -------------------------------------------------------------- receive */

/* Tops sap's credit up and tells ternd what the application took (waiting
 * up to wait_ms for room in the socket). */
static int sap_ack(BpNode *n, BpSAP sap, int wait_ms)
{
    uint8_t buf[TERN_PROTO_EID_MAX + 64];
    int len = tern_proto_enc_recv(buf, sizeof buf, n->next_id++, sap->eid,
                                  CREDIT - sap->credit, sap->acked);
    struct iovec iov = {buf, (size_t)len};
    int rc = write_msg(n, &iov, 1, -1, wait_ms);
    if (rc)
        return rc;
    sap->credit = CREDIT;
    sap->acked = sap->acked_bytes = 0;
    return 0;
}

/* Leaves sap's eventfd readable exactly while bp_receive would not wait:
 * deliveries are queued, the endpoint is broken, or the connection is gone
 * (the next call reattaches or fails). bp_sap_fd's set relies on it. */
static void sap_ready_sync(struct BpSap_s *s)
{
    /* Without bp_sap_fd nobody polls the eventfd but bp_receive, which looks
     * at the queue first and clears a stale wakeup itself: keeping it in step
     * would cost a syscall per delivery. bp_sap_fd syncs it when made. */
    if (s->epfd < 0)
        return;
    /* A pollable endpoint's application waits in its own loop, not in
     * bp_receive: the credit that lets ternd push is topped up here. */
    if (s->epfd >= 0 && s->n->sock >= 0 && !s->qh && (s->credit < CREDIT / 2 || s->acked))
        sap_ack(s->n, s, 0);
    if (s->qh || s->broken || s->n->sock < 0)
        wake(s->evfd);
    else
        evfd_clear(s->evfd);
}

TERN_API int bp_receive(BpSAP sap, BpDelivery *dlv, int timeout_ms)
{
    if (!sap || !dlv)
        return -EINVAL;
    BpNode *n = sap->n;
    int64_t deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
    int rc = 0;
    pthread_mutex_lock(&n->mu);
    n->cur = &sap->in;
    for (;;) {
        if (sap->qh) {
            struct dlv *d = sap->qh;
            sap->qh = d->next;
            if (!sap->qh)
                sap->qt = NULL;
            if (d->dup) { /* the application had it before the reattach */
                sap->acked++;
                dlv_free(d);
                continue;
            }
            seen_add(sap, dlv_id(d->src, d->ctime, d->seq, d->len, d->flags));
            memcpy(dlv->src, d->src, sizeof dlv->src);
            dlv->ctime_ms = d->ctime;
            dlv->seq = d->seq;
            dlv->flags = d->flags;
            dlv->payload = d->data;
            dlv->len = d->len;
            dlv->priv = d;
            sap->acked++; /* told ternd with the next RECV or at close */
            sap->acked_bytes += d->len;
            rc = 0;
            if (sap->acked >= ACK_EVERY || sap->acked_bytes >= ACK_EVERY_BYTES)
                sap_ack(n, sap, 0); /* best effort: else with the next one */
            break;
        }
        if (intr_take(&sap->in)) {
            rc = -EINTR;
            break;
        }
        if (sap->broken) {
            rc = sap->broken;
            break;
        }
        if ((rc = conn_up(n)))
            break;
        /* About to wait: top the credit up, and report what the application
         * took (ternd also bounds the bytes it lends, and frees them only on
         * this acknowledgement). */
        if (sap->credit < CREDIT / 2 || sap->acked) {
            rc = sap_ack(n, sap, -1);
            if (rc == -ENOTCONN)
                continue;
            if (rc)
                break;
        }
        rc = flush_out(n, 1);
        if (rc == -ENOTCONN || (!rc && (rc = pump(n)) == -ENOTCONN))
            continue;
        if (rc)
            break;
        if (sap->qh)
            continue;
        int wait = left_ms(deadline);
        if (wait == 0) {
            rc = timeout_ms == 0 ? -EAGAIN : -ETIMEDOUT;
            break;
        }
        struct pollfd p[3] = {{.fd = n->sock, .events = POLLIN},
                              {.fd = sap->evfd, .events = POLLIN}};
        n->cur = NULL;
        pthread_mutex_unlock(&n->mu);
        int r = poll_intr(&sap->in, p, 2, wait);
        pthread_mutex_lock(&n->mu);
        n->cur = &sap->in;
        if (r < 0) {
            rc = r;
            break;
        }
        if (p[1].revents & POLLIN)
            evfd_clear(sap->evfd);
    }
    sap_ready_sync(sap);
    n->cur = NULL;
    pthread_mutex_unlock(&n->mu);
    return rc;
}

TERN_API int bp_sap_fd(BpSAP sap)
{
    if (!sap)
        return -EINVAL;
    BpNode *n = sap->n;
    int rc = 0;
    pthread_mutex_lock(&n->mu);
    if (sap->epfd < 0) {
        int ep = epoll_create1(EPOLL_CLOEXEC);
        if (ep < 0) {
            rc = -errno;
            goto out;
        }
        struct epoll_event ev = {.events = EPOLLIN, .data.fd = sap->evfd};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, sap->evfd, &ev)) {
            rc = -errno;
            close(ep);
            goto out;
        }
        sap->epfd = ep;
        if (n->sock >= 0 && (rc = sap_watch_sock(sap, n->sock))) {
            close(ep);
            sap->epfd = -1;
            goto out;
        }
        sap_ready_sync(sap);
    }
    rc = sap->epfd;
out:
    pthread_mutex_unlock(&n->mu);
    return rc;
}

TERN_API void bp_release_delivery(BpDelivery *dlv)
{
    if (!dlv || !dlv->priv)
        return;
    dlv_free(dlv->priv);
    dlv->priv = NULL;
    dlv->payload = NULL;
    dlv->len = 0;
}

TERN_API void bp_interrupt(BpSAP sap)
{
    intr_raise(sap ? &sap->in : &g_anon);
}

/* ---------------------------------------------------------------- errors */

TERN_API const char *bp_strerror(int rc)
{
    switch (rc) {
    case -ECONNREFUSED:
        return "no ternd serves this node directory (start it with 'tern start <dir>')";
    case -EBUSY:
        return "the endpoint is open by another application";
    case -ENOTCONN:
        return "not attached to a node (call bp_attach first)";
    case -EPROTONOSUPPORT:
        return "ternd speaks another version of the client protocol";
    default:
        return tern_strerror(rc);
    }
}

TERN_API const char *bp_errmsg(void)
{
    return t_errmsg;
}

TERN_API int tern_client_abi_version(void)
{
    return TERN_CLIENT_ABI_VERSION;
}
