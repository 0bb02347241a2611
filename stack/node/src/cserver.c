/* The client server: libtern's requests on the daemon's loop (node_cserver.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "cserver_int.h"
#include "tern/ckd.h"
#include "tern_proto.h"

/* Descriptor payloads at least this long are mapped rather than read. */
#define PBUF_KEEP (64u << 20)
/* Smaller file payloads are copied even when a reference is allowed: a
 * reference costs an fstat and a read per transmission, a copy of a few
 * kilobytes costs nothing the store would notice. */
#define FILE_REF_MIN (16u << 10)
#define MFD_POOL     64
#define MFD_BYTES    (128u << 20)
/* Deliveries up to DBATCH_ITEM_MAX bytes travel together, DBATCH_BYTES of
 * payload per datagram at most. */
#define DBATCH_ITEM_MAX (8u << 10)
#define DBATCH_BYTES    (60u << 10)
/* Payload bytes an endpoint may have lent ahead of the application's reads. */
#define LOAN_BYTES_MAX   (32u << 20)
#define READS_PER_WAKE   64 /* bounded work per callback: others get their turn */
#define ACCEPTS_PER_WAKE 16
#define OUT_PAUSE_BYTES  (8u << 20) /* stop reading a client whose answers pile up */
#define OUT_PAUSE_MSGS   1024
#define CREDIT_MAX       (1u << 20)
#define MAX_CLIENTS      1024
#define MAX_CAUSES       64

struct outmsg {
    struct outmsg *next;
    int fd;
    size_t len;
    uint8_t data[];
};

/* An answer saying "taken", waiting until what it acknowledges is durable. */
struct taken {
    struct taken *next;
    uint64_t mark;
    size_t len;
    uint8_t data[];
};

struct cep {
    struct cep *next;
    bp_eid eid;
    char text[TERN_PROTO_EID_MAX];
    uint64_t credit;
    /* bundles pushed and not yet acknowledged, oldest first: they stay in
     * the store until the client says the application has them */
    struct loan {
        uint64_t token, len;
        int fd;     /* the payload's memfd (kept for reuse), -1 */
        size_t cap; /* its size */
    } * loans;
    size_t nloans, loan_cap;
    uint64_t loan_bytes; /* payload bytes lent and not yet acknowledged */
    int due;             /* the agent queued bundles for it: pump at the deferred call */
};

struct node_cserver_client {
    node_cserver *srv;
    node_cserver_client *next, *prev;
    int fd;
    tern_io io;
    uint64_t serial;
    int hello, dead, paused;
    int gone; /* its socket hung up: read what it said, answer nothing */
    /* a SEND the store had no room for: kept, and the client not read, until
     * there is room (a fast sender is slowed, never refused) */
    uint8_t *held;
    size_t held_len;
    int held_fd;
    int told_full; /* it heard that its sends wait for room (and not yet that they go on)
                    */
    struct cep *eps;
    struct outmsg *oh, *ot;
    size_t oq_n, oq_bytes;
    struct taken *th, *tt; /* SENT answers in order, for the store's flush */
};

struct node_cserver {
    tern_loop *loop;
    bp_agent *a;
    tern_log *lg;
    char name[32];
    int lfd;
    tern_io lio;
    tern_log_limit told_lim, unheard_lim; /* DROPPED lines: one per 10 s each */
    node_cserver_client *clients;         /* live ones */
    node_cserver_client *dead;            /* ended, freed by reap() */
    int reap_pending;
    int pump_pending; /* pump_due is deferred */
    uint8_t *rbuf, *obuf;
    uint8_t *pbuf; /* payloads sent as descriptors are read into this */
    size_t pbuf_cap;
    /* memfds of deliveries the application has acknowledged, for reuse:
     * their pages stay allocated, so the next payload neither allocates
     * nor the application frees 256 pages per megabyte */
    struct mfd {
        int fd;
        size_t cap;
    } mfds[MFD_POOL];
    size_t nmfds, mfd_bytes;
    struct dbatch *batch; /* pump's DELIVER_BATCH being filled */
    node_cserver_handler fn;
    void *fn_ctx;
    node_cserver_stats st;
    const char *logged[MAX_CAUSES];
    size_t nlogged;
    uint64_t serial;
    tern_timer retry; /* tries held SENDs again */
};

/* ----------------------------------------------------------------- clients */

static void pump_due(tern_loop *loop, void *arg);

static void reap(tern_loop *loop, void *arg)
{
    (void)loop;
    node_cserver *srv = arg;
    srv->reap_pending = 0;
    while (srv->dead) {
        node_cserver_client *c = srv->dead;
        srv->dead = c->next;
        while (c->oh) {
            struct outmsg *m = c->oh;
            c->oh = m->next;
            if (m->fd >= 0)
                close(m->fd);
            free(m);
        }
        close(c->fd);
        free(c);
    }
}

/* A memfd holding p[0..len) at offset 0: one from the pool (the smallest
 * that fits, else the largest, which grows) or a new one. Not sealed: only
 * ternd writes it, and the application reads it with pread before it
 * acknowledges the delivery, after which ternd may write it again. */
static int mfd_get(node_cserver *srv, const void *p, size_t len, int *fd, size_t *cap)
{
    size_t best = SIZE_MAX;
    for (size_t i = 0; i < srv->nmfds; i++) {
        size_t c = srv->mfds[i].cap;
        if (best == SIZE_MAX ||
            (c >= len && (srv->mfds[best].cap < len || c < srv->mfds[best].cap)) ||
            (c < len && srv->mfds[best].cap < len && c > srv->mfds[best].cap))
            best = i;
    }
    int f;
    size_t have = 0;
    if (best != SIZE_MAX) {
        f = srv->mfds[best].fd;
        have = srv->mfds[best].cap;
        srv->mfd_bytes -= have;
        srv->mfds[best] = srv->mfds[--srv->nmfds];
    } else if ((f = memfd_create("tern-delivery", MFD_CLOEXEC)) < 0) {
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

static void mfd_put(node_cserver *srv, int fd, size_t cap)
{
    if (fd < 0)
        return;
    if (srv->nmfds == MFD_POOL || srv->mfd_bytes + cap > MFD_BYTES) {
        close(fd);
        return;
    }
    srv->mfds[srv->nmfds++] = (struct mfd){fd, cap};
    srv->mfd_bytes += cap;
}

/* The first k loans reached the application: they leave the store. */
static void loans_done(node_cserver *srv, struct cep *x, uint64_t k)
{
    if (k > x->nloans)
        k = x->nloans;
    if (!k)
        return;
    for (size_t i = 0; i < k; i++) {
        bp_agent_recv_done(srv->a, x->loans[i].token);
        x->loan_bytes -= x->loans[i].len;
        mfd_put(srv, x->loans[i].fd, x->loans[i].cap);
    }
    memmove(x->loans, x->loans + k, (x->nloans - k) * sizeof *x->loans);
    x->nloans -= k;
}

/* The client is gone or closed the endpoint: what it did not acknowledge
 * goes back to the head of the endpoint's queue, in its order. */
static void loans_undo(node_cserver *srv, struct cep *x)
{
    for (size_t i = x->nloans; i-- > 0;) {
        bp_agent_recv_undo(srv->a, x->loans[i].token);
        mfd_put(srv, x->loans[i].fd, x->loans[i].cap);
    }
    x->nloans = 0;
    x->loan_bytes = 0;
    free(x->loans);
    x->loans = NULL;
    x->loan_cap = 0;
}

/* Ends a client: its endpoints are closed at once (another application may
 * open them), its memory goes on the next iteration (we may be deep inside
 * one of its callbacks). */
static void c_kill(node_cserver_client *c)
{
    if (c->dead)
        return;
    node_cserver *srv = c->srv;
    c->dead = 1;
    tern_io_stop(&c->io);
    bp_agent_durable_forget(srv->a, c);
    while (c->th) {
        struct taken *t = c->th;
        c->th = t->next;
        free(t);
    }
    c->tt = NULL;
    if (c->held) {
        free(c->held);
        c->held = NULL;
        if (c->held_fd >= 0)
            close(c->held_fd);
    }
    while (c->eps) {
        struct cep *e = c->eps;
        c->eps = e->next;
        loans_undo(srv, e);
        bp_endpoint_close(srv->a, &e->eid);
        TERN_DEBUG(srv->lg, "client", "client %" PRIu64 " gone: endpoint %s closed",
                   c->serial, e->text);
        free(e);
    }
    if (c->prev)
        c->prev->next = c->next;
    else
        srv->clients = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->next = srv->dead;
    srv->dead = c;
    srv->st.clients--;
    if (!srv->reap_pending && tern_loop_defer(srv->loop, reap, srv) == 0)
        srv->reap_pending = 1;
}

static void c_update_io(node_cserver_client *c)
{
    if (c->dead)
        return;
    unsigned want = c->gone ? TERN_IO_READ
                            : (c->paused || c->held ? 0 : TERN_IO_READ) |
                                  (c->oh && !c->gone ? TERN_IO_WRITE : 0);
    if (!tern_io_is_active(&c->io) || c->io.events != want)
        if (tern_io_start(&c->io, want))
            c_kill(c);
}

/* Queues or sends one message; takes fd over. */
static void c_out(node_cserver_client *c, const uint8_t *msg, size_t len, int fd)
{
    if (c->dead || c->gone) {
        if (fd >= 0)
            close(fd);
        return;
    }
    if (!c->oh) {
        struct iovec iov = {(void *)msg, len};
        int rc = tern_proto_send(c->fd, &iov, 1, fd, MSG_DONTWAIT);
        if (rc == 0) {
            if (fd >= 0)
                close(fd);
            return;
        }
        if (rc != -EAGAIN && rc != -ENOBUFS) {
            /* the client went: what it sent before still gets read (its
             * hang-up ends it), nothing more is sent */
            if (fd >= 0)
                close(fd);
            c->gone = 1;
            return;
        }
    }
    struct outmsg *m = malloc(sizeof *m + len);
    if (!m) {
        if (fd >= 0)
            close(fd);
        TERN_ERROR(c->srv->lg, "client", "client %" PRIu64 ": out of memory: ended",
                   c->serial);
        c_kill(c);
        return;
    }
    m->next = NULL;
    m->fd = fd;
    m->len = len;
    memcpy(m->data, msg, len);
    if (c->ot)
        c->ot->next = m;
    else
        c->oh = m;
    c->ot = m;
    c->oq_n++;
    c->oq_bytes += len;
    if (c->oq_n >= OUT_PAUSE_MSGS || c->oq_bytes >= OUT_PAUSE_BYTES)
        c->paused = 1;
    c_update_io(c);
}

/* Sends the SENT answers whose bundles are durable now, in order. */
static void taken_ready(void *ctx, uint64_t arg1, uint64_t arg2)
{
    (void)arg1;
    (void)arg2;
    node_cserver_client *c = ctx;
    while (c->th && bp_agent_is_durable(c->srv->a, c->th->mark)) {
        struct taken *t = c->th;
        c->th = t->next;
        if (!c->th)
            c->tt = NULL;
        c_out(c, t->data, t->len, -1);
        free(t);
    }
}

/* Sends an answer acknowledging SENDs once the store has made their bundles
 * durable: an application may drop its copy when it hears "sent", so a crash
 * must not lose the bundle after that (group commit lags a few ms). */
static void c_out_taken(node_cserver_client *c, const uint8_t *msg, size_t len)
{
    node_cserver *srv = c->srv;
    uint64_t mark = bp_agent_durable_mark(srv->a);
    if (!c->th && bp_agent_is_durable(srv->a, mark)) {
        c_out(c, msg, len, -1);
        return;
    }
    struct taken *t = malloc(sizeof *t + len);
    if (!t) {
        TERN_ERROR(srv->lg, "client", "client %" PRIu64 ": out of memory: ended",
                   c->serial);
        c_kill(c);
        return;
    }
    t->next = NULL;
    t->mark = mark;
    t->len = len;
    memcpy(t->data, msg, len);
    if (c->tt)
        c->tt->next = t;
    else
        c->th = t;
    c->tt = t;
    int rc = bp_agent_durable_wait(srv->a, mark, taken_ready, c, 0, 0);
    if (rc == 0) {
        taken_ready(c, 0, 0);
    } else if (rc < 0) {
        TERN_ERROR(srv->lg, "client", "client %" PRIu64 ": cannot wait for the store: %s",
                   c->serial, tern_strerror(rc));
        c_kill(c);
    }
}

static void pump(node_cserver_client *c, struct cep *e);

static void c_drain(node_cserver_client *c)
{
    while (c->oh && !c->dead) {
        struct outmsg *m = c->oh;
        struct iovec iov = {m->data, m->len};
        int rc = tern_proto_send(c->fd, &iov, 1, m->fd, MSG_DONTWAIT);
        if (rc == -EAGAIN || rc == -ENOBUFS)
            break;
        if (rc) { /* gone: its input is read to the end, then it ends */
            c->gone = 1;
            break;
        }
        c->oh = m->next;
        if (!c->oh)
            c->ot = NULL;
        c->oq_n--;
        c->oq_bytes -= m->len;
        if (m->fd >= 0)
            close(m->fd);
        free(m);
    }
    if (c->paused && !c->oh) {
        c->paused = 0;
        for (struct cep *e = c->eps; e; e = e->next) {
            pump(c, e);
            if (c->paused || c->dead)
                break; /* a killed client's list is gone */
        }
    }
    c_update_io(c);
}

static void c_io(tern_io *w, int fd, unsigned events, void *arg)
{
    (void)w;
    node_cserver_client *c = arg;
    node_cserver *srv = c->srv;
    if (events & (TERN_IO_HUP | TERN_IO_ERROR)) {
        /* Gone. What it sent before going still counts — above all the
         * acknowledgement of the deliveries it took — so read it all, even
         * if we had stopped reading it; nothing more is sent or lent. */
        c->gone = 1;
        for (int resets = 0;;) {
            int pfd;
            int r =
                tern_proto_recv(fd, srv->rbuf, TERN_PROTO_MSG_MAX, &pfd, MSG_DONTWAIT);
            /* A client that closes with deliveries unread makes the kernel
             * report ECONNRESET once, ahead of the messages still queued. */
            if (r == -ECONNRESET && !resets++)
                continue;
            if (r <= 0 || r == TERN_ETRUNCATED)
                break;
            node_cserver__input(srv, c, srv->rbuf, (size_t)r, pfd);
            if (c->dead)
                return;
        }
        c_kill(c);
        return;
    }
    if ((events & TERN_IO_WRITE) && !c->gone)
        c_drain(c);
    if (c->dead)
        return;
    if (!(events & (TERN_IO_READ | TERN_IO_HUP | TERN_IO_ERROR)))
        return;
    int reset = 0;
    for (int i = 0;
         i < READS_PER_WAKE && !c->dead && ((!c->paused && !c->held) || c->gone); i++) {
        int pfd;
        int r = tern_proto_recv(fd, srv->rbuf, TERN_PROTO_MSG_MAX, &pfd, MSG_DONTWAIT);
        if (r == -EAGAIN)
            break;
        if (r == TERN_ETRUNCATED) {
            node_cserver__input(srv, c, srv->rbuf, TERN_PROTO_MSG_MAX + 1, -1);
            break;
        }
        if (r == -ECONNRESET && !reset) {
            /* reported once, ahead of what it sent before closing */
            c->gone = reset = 1;
            continue;
        }
        if (r <= 0) {
            TERN_DEBUG(srv->lg, "client", "client %" PRIu64 " disconnected", c->serial);
            c_kill(c);
            break;
        }
        node_cserver__input(srv, c, srv->rbuf, (size_t)r, pfd);
    }
    c_update_io(c);
}

TERN_API int node_cserver__client_add(node_cserver *srv, int fd,
                                      node_cserver_client **out)
{
    node_cserver_client *c = calloc(1, sizeof *c);
    if (!c) {
        close(fd);
        return -ENOMEM;
    }
    c->srv = srv;
    c->fd = fd;
    c->serial = ++srv->serial;
    int rc = tern_io_init(srv->loop, &c->io, fd, c_io, c);
    if (!rc)
        rc = tern_io_start(&c->io, TERN_IO_READ);
    if (rc) {
        close(fd);
        free(c);
        return rc;
    }
    c->next = srv->clients;
    if (c->next)
        c->next->prev = c;
    srv->clients = c;
    srv->st.clients++;
    srv->st.accepted++;
    if (out)
        *out = c;
    return 0;
}

static void on_accept(tern_io *w, int fd, unsigned events, void *arg)
{
    (void)w;
    (void)events;
    node_cserver *srv = arg;
    for (int i = 0; i < ACCEPTS_PER_WAKE; i++) {
        int s = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (s < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
                errno != ECONNABORTED)
                TERN_WARN(srv->lg, "client", "accept on %s: %s", srv->name,
                          strerror(errno));
            return;
        }
        if (srv->st.clients >= MAX_CLIENTS) {
            TERN_WARN(srv->lg, "client", "%d clients already: connection refused",
                      MAX_CLIENTS);
            close(s);
            continue;
        }
        int sz = 1 << 20; /* a window of answers and deliveries; the kernel caps it */
        setsockopt(s, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
        node_cserver_client *c;
        if (node_cserver__client_add(srv, s, &c) == 0)
            TERN_DEBUG(srv->lg, "client", "client %" PRIu64 " connected", c->serial);
    }
}

/* --------------------------------------------------------------- messages */

static int malformed(node_cserver *srv, node_cserver_client *c, uint32_t type,
                     const char *why)
{
    srv->st.malformed++;
    size_t i = 0;
    while (i < srv->nlogged && srv->logged[i] != why)
        i++;
    if (i == srv->nlogged) {
        if (srv->nlogged < MAX_CAUSES)
            srv->logged[srv->nlogged++] = why;
        TERN_WARN(srv->lg, "client",
                  "client %" PRIu64 ": malformed %s message (%s): client dropped "
                  "(further cases of this cause are only counted)",
                  c->serial, tern_proto_type_name(type), why ? why : "?");
    }
    c_kill(c);
    return TERN_EMALFORMED;
}

static void answer_code(node_cserver_client *c, uint32_t type, uint64_t id, int code,
                        const char *text)
{
    node_cserver *srv = c->srv;
    int n = tern_proto_enc_code_text(srv->obuf, TERN_PROTO_MSG_MAX, type, id, code, text);
    if (n > 0)
        c_out(c, srv->obuf, (size_t)n, -1);
}

static void answer_ok(node_cserver_client *c, uint64_t id)
{
    node_cserver *srv = c->srv;
    int n = tern_proto_enc_empty(srv->obuf, TERN_PROTO_MSG_MAX, TERN_MSG_OK, id);
    if (n > 0)
        c_out(c, srv->obuf, (size_t)n, -1);
}

static struct cep *cep_find(node_cserver_client *c, const bp_eid *e)
{
    for (struct cep *x = c->eps; x; x = x->next)
        if (bp_eid_equal(&x->eid, e))
            return x;
    return NULL;
}

/* Sends queued bundles of e while the client has credit and room. */
/* Small deliveries pending in one DELIVER_BATCH. */
struct dbatch {
    tern_msg_deliver m[TERN_PROTO_BATCH_MAX];
    bp_delivery d[TERN_PROTO_BATCH_MAX];
    uint64_t token[TERN_PROTO_BATCH_MAX];
    size_t n, bytes;
};

/* Sends what b holds (one DELIVER, or a DELIVER_BATCH) and records the loans;
 * on failure the bundles go back to the queue. */
static void batch_flush(node_cserver_client *c, struct cep *e, struct dbatch *b)
{
    node_cserver *srv = c->srv;
    if (!b->n)
        return;
    int n = b->n == 1 ? tern_proto_enc_deliver(srv->obuf, TERN_PROTO_MSG_MAX, 0, &b->m[0])
                      : tern_proto_enc_deliver_batch(srv->obuf, TERN_PROTO_MSG_MAX, 0,
                                                     b->m, b->n);
    for (size_t i = 0; i < b->n; i++) {
        if (n < 0) {
            bp_agent_recv_undo(srv->a, b->token[i]);
            e->credit++;
        } else {
            e->loans[e->nloans++] = (struct loan){b->token[i], b->d[i].len, -1, 0};
            e->loan_bytes += b->d[i].len;
            srv->st.delivered++;
        }
        bp_delivery_release(&b->d[i]);
    }
    if (n < 0)
        TERN_ERROR(srv->lg, "client", "endpoint %s: DELIVER not encoded: %s", e->text,
                   tern_strerror(n));
    else
        c_out(c, srv->obuf, (size_t)n, -1);
    b->n = b->bytes = 0;
}

/* Sends queued bundles of e while the client has credit and room: small
 * ones batched into one datagram, large ones each as a memfd. */
static void pump(node_cserver_client *c, struct cep *e)
{
    node_cserver *srv = c->srv;
    struct dbatch *b = srv->batch;
    b->n = b->bytes = 0;
    /* Credit counts deliveries; the byte bound keeps large bundles (each a
     * memfd of its own) from piling up in a slow application's socket. */
    while (!c->dead && !c->paused && !c->gone && e->credit &&
           e->loan_bytes < LOAN_BYTES_MAX) {
        bp_delivery d;
        uint64_t token;
        if (e->nloans + b->n + 1 >= e->loan_cap) {
            size_t cap = e->loan_cap ? e->loan_cap * 2 : 128;
            struct loan *v = realloc(e->loans, cap * sizeof *v);
            if (!v)
                break;
            e->loans = v;
            e->loan_cap = cap;
        }
        int rc = bp_agent_recv_lend(srv->a, &e->eid, &d, &token);
        if (rc == -EAGAIN || rc == TERN_ENOTFOUND)
            break;
        if (rc) {
            /* the agent dropped an unreadable bundle; go on with the next */
            TERN_WARN(srv->lg, "client",
                      "endpoint %s: a queued bundle was unreadable: %s", e->text,
                      tern_strerror(rc));
            if (rc == -ENOMEM)
                break;
            continue;
        }
        tern_msg_deliver m;
        memset(&m, 0, sizeof m);
        memcpy(m.eid, e->text, sizeof m.eid);
        if (bp_eid_print(&d.src, m.src, sizeof m.src) < 0)
            snprintf(m.src, sizeof m.src, "dtn:none");
        m.ctime_ms = d.ctime_ms;
        m.seq = d.seq;
        m.flags = d.flags;
        m.len = d.len;
        if (d.len <= DBATCH_ITEM_MAX) {
            size_t need = d.len + strlen(m.eid) + strlen(m.src) + 48;
            if (b->n == TERN_PROTO_BATCH_MAX || b->bytes + need > DBATCH_BYTES)
                batch_flush(c, e, b);
            m.payload = d.payload;
            b->m[b->n] = m;
            b->d[b->n] = d;
            b->token[b->n++] = token;
            b->bytes += need;
            e->credit--;
            continue;
        }
        batch_flush(c, e, b); /* keep the order */
        int fd = -1, lfd = -1;
        size_t lcap = 0;
        if (d.len > TERN_PROTO_INLINE_MAX) {
            if ((rc = mfd_get(srv, d.payload, d.len, &lfd, &lcap)) ||
                ((fd = fcntl(lfd, F_DUPFD_CLOEXEC, 0)) < 0 && (rc = -errno))) {
                mfd_put(srv, lfd, lcap);
                TERN_ERROR(srv->lg, "client",
                           "endpoint %s: no memfd for a %zu-byte payload (%s): kept for "
                           "later",
                           e->text, d.len, tern_strerror(rc));
                bp_delivery_release(&d);
                bp_agent_recv_undo(srv->a, token);
                return;
            }
            m.has_fd = 1;
            srv->st.fd_payloads++;
        } else {
            m.payload = d.payload;
        }
        int n = tern_proto_enc_deliver(srv->obuf, TERN_PROTO_MSG_MAX, 0, &m);
        bp_delivery_release(&d);
        if (n < 0) {
            if (fd >= 0)
                close(fd);
            mfd_put(srv, lfd, lcap);
            TERN_ERROR(srv->lg, "client", "endpoint %s: DELIVER not encoded: %s", e->text,
                       tern_strerror(n));
            bp_agent_recv_undo(srv->a, token);
            return;
        }
        e->loans[e->nloans++] = (struct loan){token, d.len, lfd, lcap};
        e->loan_bytes += d.len;
        e->credit--;
        srv->st.delivered++;
        c_out(c, srv->obuf, (size_t)n, fd);
    }
    batch_flush(c, e, b);
}

static int parse_eid(const char *text, bp_eid *e, char *err, size_t cap)
{
    const char *why = NULL;
    int rc = bp_eid_parse(text, e, &why);
    if (rc)
        snprintf(err, cap, "bad EID '%s': %s", text, why ? why : tern_strerror(rc));
    return rc;
}

static void on_open(node_cserver_client *c, uint64_t id, const char *text)
{
    node_cserver *srv = c->srv;
    char err[TERN_PROTO_EID_MAX + 128];
    bp_eid e;
    int rc = parse_eid(text, &e, err, sizeof err);
    if (rc) {
        answer_code(c, TERN_MSG_ERROR, id, -EINVAL, err);
        return;
    }
    if (cep_find(c, &e)) {
        snprintf(err, sizeof err, "endpoint %s is already open by this application",
                 text);
        answer_code(c, TERN_MSG_ERROR, id, -EBUSY, err);
        return;
    }
    struct cep *x = calloc(1, sizeof *x);
    if (!x) {
        answer_code(c, TERN_MSG_ERROR, id, -ENOMEM, "out of memory");
        return;
    }
    rc = bp_endpoint_open(srv->a, &e);
    if (rc == TERN_ENOTFOUND) {
        rc = bp_endpoint_add(srv->a, &e, BP_RECV_DISCARD);
        if (rc == -EINVAL) {
            snprintf(err, sizeof err, "endpoint %s does not belong to node %" PRIu64,
                     text, bp_agent_node(srv->a));
            answer_code(c, TERN_MSG_ERROR, id, rc, err);
            free(x);
            return;
        }
        if (rc == 0)
            TERN_INFO(srv->lg, "client",
                      "endpoint %s registered for an application (rule x: bundles for it "
                      "are discarded while no application has it open)",
                      text);
        rc = bp_endpoint_open(srv->a, &e);
    }
    if (rc) {
        if (rc == -EBUSY)
            snprintf(err, sizeof err, "endpoint %s is open by another application", text);
        else
            snprintf(err, sizeof err, "endpoint %s: %s", text, tern_strerror(rc));
        answer_code(c, TERN_MSG_ERROR, id, rc, err);
        free(x);
        return;
    }
    x->eid = e;
    snprintf(x->text, sizeof x->text, "%s", text);
    x->next = c->eps;
    c->eps = x;
    TERN_DEBUG(srv->lg, "client", "client %" PRIu64 " opened %s", c->serial, text);
    answer_ok(c, id);
}

static void on_close(node_cserver_client *c, uint64_t id, const char *text)
{
    bp_eid e;
    char err[TERN_PROTO_EID_MAX + 128];
    if (parse_eid(text, &e, err, sizeof err)) {
        answer_code(c, TERN_MSG_ERROR, id, -EINVAL, err);
        return;
    }
    for (struct cep **pp = &c->eps; *pp; pp = &(*pp)->next) {
        struct cep *x = *pp;
        if (!bp_eid_equal(&x->eid, &e))
            continue;
        *pp = x->next;
        loans_undo(c->srv, x);
        bp_endpoint_close(c->srv->a, &x->eid);
        free(x);
        answer_ok(c, id);
        return;
    }
    snprintf(err, sizeof err, "endpoint %s is not open by this application", text);
    answer_code(c, TERN_MSG_ERROR, id, TERN_ENOTFOUND, err);
}

/* One SEND: *ans gets the answer. */
static void do_send(node_cserver_client *c, const tern_msg_send *m, int fd,
                    tern_msg_sent *ans)
{
    node_cserver *srv = c->srv;
    char err[TERN_PROTO_EID_MAX + 128];
    bp_eid src, dest, rpt;
    memset(ans, 0, sizeof *ans);
    srv->st.sends++;
    if (parse_eid(m->src, &src, err, sizeof err) ||
        parse_eid(m->dest, &dest, err, sizeof err) ||
        (m->report_to[0] && parse_eid(m->report_to, &rpt, err, sizeof err))) {
        TERN_DEBUG(srv->lg, "client", "client %" PRIu64 ": SEND refused: %s", c->serial,
                   err);
        ans->code = -EINVAL;
        return;
    }
    if (!bp_eid_is_none(&src) && !cep_find(c, &src)) {
        ans->code = -EPERM; /* sending from an endpoint this client has not opened */
        return;
    }
    bp_send_opts o;
    bp_send_opts_init(&o);
    o.lifetime_ms = m->lifetime_ms;
    o.priority = (int)m->priority;
    o.ordinal = (unsigned)m->ordinal;
    o.flags = m->flags & ~TERN_PROTO_SEND_FILE_REF;
    o.report_to = m->report_to[0] ? &rpt : NULL;
    const void *payload = m->payload;
    uint64_t plen = m->len;
    if (m->has_fd) {
        struct stat st;
        srv->st.fd_payloads++;
        /* head bytes (a protocol header the client put before a file's
         * bytes) then the descriptor's: one payload */
        if (tern_ckd_add(&plen, m->head_len, m->len) || plen > SIZE_MAX ||
            fstat(fd, &st) || !S_ISREG(st.st_mode) ||
            !tern_ckd_extent_ok(m->offset, m->len, (uint64_t)st.st_size)) {
            ans->code = -EINVAL; /* the descriptor does not hold what was announced */
            return;
        }
        if ((m->flags & TERN_PROTO_SEND_FILE_REF) && m->len >= FILE_REF_MIN) {
            bp_bundle_ref ref = {0, 0};
            int rc = bp_agent_send_file(srv->a, &src, &dest, &o, m->head,
                                        (size_t)m->head_len, fd, m->offset, m->len, &ref);
            if (rc != -ENOTSUP) { /* else: not a file the node can keep; copied */
                if (rc == 0)
                    srv->st.file_refs++;
                else
                    TERN_DEBUG(srv->lg, "client",
                               "client %" PRIu64 ": bundle to %s refused: %s", c->serial,
                               m->dest, tern_strerror(rc));
                if (m->head_len)
                    srv->st.fd_heads++;
                ans->code = rc;
                ans->ctime_ms = ref.ctime_ms;
                ans->seq = ref.seq;
                return;
            }
        }
        /* Read into one buffer kept for the purpose, not mapped: a fresh
         * mapping costs a page fault per 4 KiB at first touch (far more on
         * paravirtualised hosts) and a TLB shootdown when it goes; the
         * buffer's pages stay mapped from one bundle to the next. */
        if (srv->pbuf_cap < plen) {
            uint8_t *p = realloc(srv->pbuf, (size_t)plen);
            if (!p) {
                ans->code = -ENOMEM;
                return;
            }
            srv->pbuf = p;
            srv->pbuf_cap = (size_t)plen;
        }
        if (m->head_len) {
            memcpy(srv->pbuf, m->head, (size_t)m->head_len);
            srv->st.fd_heads++;
        }
        int rc = tern_proto_pread(fd, m->offset, srv->pbuf + m->head_len, (size_t)m->len);
        if (rc) {
            ans->code = rc;
            return;
        }
        payload = srv->pbuf;
    }
    bp_bundle_ref ref = {0, 0};
    int rc = bp_agent_send(srv->a, &src, &dest, &o, payload, (size_t)plen, &ref);
    if (srv->pbuf_cap > PBUF_KEEP) { /* one huge bundle does not pin its size */
        free(srv->pbuf);
        srv->pbuf = NULL;
        srv->pbuf_cap = 0;
    }
    if (rc)
        TERN_DEBUG(srv->lg, "client", "client %" PRIu64 ": bundle to %s refused: %s",
                   c->serial, m->dest, tern_strerror(rc));
    ans->code = rc;
    ans->ctime_ms = ref.ctime_ms;
    ans->seq = ref.seq;
}

static void on_status(node_cserver_client *c, uint64_t id, const uint8_t *body,
                      size_t len)
{
    node_cserver *srv = c->srv;
    bp_agent_stats a;
    bp_agent_stats_get(srv->a, &a);
    node_cserver_stats cs;
    node_cserver_stats_get(srv, &cs);
    const node_cserver_stats *s = &cs;
    /* "clients": the others; the one asking (tern status) is not news */
    uint64_t others = s->clients ? s->clients - 1 : 0;
    static const char *const keys[] = {"created",
                                       "received",
                                       "malformed",
                                       "duplicates",
                                       "forwarded",
                                       "reforwarded",
                                       "delivered",
                                       "taken",
                                       "discarded",
                                       "expired",
                                       "deleted",
                                       "stored",
                                       "stored_bytes",
                                       "limbo",
                                       "queued",
                                       "in_flight",
                                       "store_errors",
                                       "clients",
                                       "client_messages",
                                       "client_sends",
                                       "client_batches",
                                       "client_delivered",
                                       "client_fd_payloads",
                                       "client_fd_heads",
                                       "client_file_refs",
                                       "file_refs",
                                       "file_refs_lost",
                                       "client_malformed",
                                       "client_sends_held",
                                       "client_senders_waiting"};
    const uint64_t vals[] = {
        a.created,     a.received,       a.malformed,    a.duplicates, a.forwarded,
        a.reforwarded, a.delivered,      a.taken,        a.discarded,  a.expired,
        a.deleted,     a.stored,         a.stored_bytes, a.limbo,      a.queued,
        a.in_flight,   a.store_errors,   others,         s->messages,  s->sends,
        s->batches,    s->delivered,     s->fd_payloads, s->fd_heads,  s->file_refs,
        a.file_refs,   a.file_refs_lost, s->malformed,   s->held,      s->held_now};
    _Static_assert(sizeof keys / sizeof keys[0] == sizeof vals / sizeof vals[0],
                   "a value per key");
    char text[TERN_PROTO_TEXT_MAX];
    const char *node_text = NULL;
    if (srv->fn) {
        text[0] = '\0';
        srv->fn(srv->fn_ctx, TERN_MSG_STATUS, body, len, text, sizeof text);
        text[sizeof text - 1] = '\0';
        node_text = text;
    }
    int n = tern_proto_enc_status_ok(srv->obuf, TERN_PROTO_MSG_MAX, id, keys, vals,
                                     sizeof vals / sizeof vals[0], node_text);
    if (n > 0)
        c_out(c, srv->obuf, (size_t)n, -1);
}

static int handle_batch(node_cserver *srv, node_cserver_client *c, const tern_msg_hdr *h,
                        const uint8_t *body)
{
    tern_proto_iter it;
    const char *why;
    tern_msg_sent ans[TERN_PROTO_BATCH_MAX];
    if (tern_proto_iter_begin(&it, body, h->len, &why))
        return malformed(srv, c, h->type, why);
    srv->st.batches++;
    size_t n = 0;
    for (;;) {
        tern_msg_send m;
        int rc = tern_proto_iter_send(&it, &m, &why);
        if (rc == TERN_EEND)
            break;
        if (rc)
            return malformed(srv, c, h->type, why);
        if (m.has_fd)
            return malformed(srv, c, h->type, "batched SEND with a descriptor");
        do_send(c, &m, -1, &ans[n++]);
    }
    int k = tern_proto_enc_sent_batch(srv->obuf, TERN_PROTO_MSG_MAX, h->id, ans, n);
    if (k > 0)
        c_out_taken(c, srv->obuf, (size_t)k);
    return 0;
}

/* Store space a SEND or SEND_BATCH needs: its payload bytes (a batch's
 * body is about that), or the announced length of a descriptor payload. */
static size_t room_needed(const tern_msg_hdr *h, const uint8_t *body)
{
    if (h->type == TERN_MSG_SEND) {
        tern_msg_send m;
        if (tern_proto_dec_send(body, h->len, &m, NULL) == 0)
            return m.len > SIZE_MAX / 2 ? SIZE_MAX / 2 : (size_t)m.len;
    }
    return h->len;
}

static void retry_held(tern_timer *t, void *arg)
{
    (void)t;
    node_cserver *srv = arg;
    int still = 0;
    for (node_cserver_client *c = srv->clients; c; c = c->next) {
        if (!c->held || c->dead)
            continue;
        uint8_t *msg = c->held;
        size_t len = c->held_len;
        int fd = c->held_fd;
        c->held = NULL;
        node_cserver__input(srv, c, msg, len, fd); /* may hold it again */
        free(msg);
        still |= c->held != NULL;
        if (!c->held && c->told_full && !c->dead) {
            c->told_full = 0;
            answer_code(c, TERN_MSG_ERROR, 0, 0,
                        "the store has room again: your sends are taken");
        }
        c_update_io(c);
    }
    if (still)
        tern_timer_start(&srv->retry, retry_held, srv, 20 * 1000000ull, 0);
}

/* Keeps a SEND for later and stops reading its client. */
static int hold(node_cserver *srv, node_cserver_client *c, const uint8_t *msg, size_t len,
                int fd)
{
    uint8_t *copy = malloc(len);
    if (!copy) {
        if (fd >= 0)
            close(fd);
        return -ENOMEM;
    }
    memcpy(copy, msg, len);
    c->held = copy;
    c->held_len = len;
    c->held_fd = fd;
    if (!srv->st.held++)
        TERN_INFO(
            srv->lg, "client",
            "the store is full: senders wait until bundles leave it (reported once)");
    if (!c->told_full) {
        /* request id 0: a notice, not an answer (libtern shows it to tools) */
        c->told_full = 1;
        answer_code(c, TERN_MSG_ERROR, 0, TERN_EFULL,
                    "the node's store is full: your sends wait until bundles leave it");
    }
    c_update_io(c);
    if (!tern_timer_is_active(&srv->retry))
        tern_timer_start(&srv->retry, retry_held, srv, 20 * 1000000ull, 0);
    return 0;
}

TERN_API int node_cserver__input(node_cserver *srv, node_cserver_client *c,
                                 const uint8_t *msg, size_t len, int fd)
{
    tern_msg_hdr h = {0, 0, 0};
    const char *why = NULL;
    int rc = 0;
    if (c->dead)
        goto out;
    srv->st.messages++;
    if (tern_proto_hdr_unpack(msg, len, &h, &why)) {
        rc = malformed(srv, c, len >= 4 ? msg[0] : 0, why);
        goto out;
    }
    const uint8_t *b = msg + TERN_PROTO_HDR;
    if (h.type >= 0x80) {
        rc = malformed(srv, c, h.type, "an answer type sent by a client");
        goto out;
    }
    if (!c->hello && h.type != TERN_MSG_HELLO) {
        rc = malformed(srv, c, h.type, "request before HELLO");
        goto out;
    }
    if (fd >= 0 && h.type != TERN_MSG_SEND) {
        rc =
            malformed(srv, c, h.type, "descriptor attached to a message that takes none");
        goto out;
    }
    /* (one that can never fit goes on, to be refused: waiting would be for ever) */
    if ((h.type == TERN_MSG_SEND || h.type == TERN_MSG_SEND_BATCH) && !c->gone &&
        !bp_agent_has_room(srv->a, room_needed(&h, b)) &&
        bp_agent_could_fit(srv->a, room_needed(&h, b))) {
        rc = hold(srv, c, msg, len, fd);
        fd = -1; /* held with the message */
        goto out;
    }
    char eid[TERN_PROTO_EID_MAX];
    switch (h.type) {
    case TERN_MSG_HELLO: {
        uint64_t ver;
        if (tern_proto_dec_hello(b, h.len, &ver, &why)) {
            rc = malformed(srv, c, h.type, why);
            break;
        }
        if (ver != TERN_PROTO_VERSION) {
            char t[96];
            snprintf(t, sizeof t,
                     "protocol version %" PRIu64 " not spoken (ternd speaks %d)", ver,
                     TERN_PROTO_VERSION);
            answer_code(c, TERN_MSG_ERROR, h.id, -EPROTONOSUPPORT, t);
            break;
        }
        c->hello = 1;
        int n = tern_proto_enc_hello_ok(srv->obuf, TERN_PROTO_MSG_MAX, h.id,
                                        TERN_PROTO_VERSION, bp_agent_node(srv->a));
        if (n > 0)
            c_out(c, srv->obuf, (size_t)n, -1);
        break;
    }
    case TERN_MSG_OPEN:
    case TERN_MSG_CLOSE:
        if (tern_proto_dec_eid(b, h.len, eid, &why)) {
            rc = malformed(srv, c, h.type, why);
            break;
        }
        if (h.type == TERN_MSG_OPEN)
            on_open(c, h.id, eid);
        else
            on_close(c, h.id, eid);
        break;
    case TERN_MSG_SEND: {
        tern_msg_send m;
        tern_msg_sent ans;
        if (tern_proto_dec_send(b, h.len, &m, &why)) {
            rc = malformed(srv, c, h.type, why);
            break;
        }
        if (m.has_fd != (fd >= 0)) {
            rc = malformed(srv, c, h.type,
                           "SEND payload length without a descriptor, or the reverse");
            break;
        }
        do_send(c, &m, fd, &ans);
        int n = tern_proto_enc_sent(srv->obuf, TERN_PROTO_MSG_MAX, h.id, &ans);
        if (n > 0)
            c_out_taken(c, srv->obuf, (size_t)n);
        break;
    }
    case TERN_MSG_SEND_BATCH:
        rc = handle_batch(srv, c, &h, b);
        break;
    case TERN_MSG_RECV: {
        uint64_t credit, acked;
        bp_eid e;
        char err[TERN_PROTO_EID_MAX + 128];
        if (tern_proto_dec_recv(b, h.len, eid, &credit, &acked, &why)) {
            rc = malformed(srv, c, h.type, why);
            break;
        }
        struct cep *x = NULL;
        if (!parse_eid(eid, &e, err, sizeof err))
            x = cep_find(c, &e);
        if (!x) {
            snprintf(err, sizeof err, "endpoint %s is not open by this application", eid);
            answer_code(c, TERN_MSG_ERROR, h.id, TERN_ENOTFOUND, err);
            break;
        }
        loans_done(srv, x, acked);
        x->credit = credit > CREDIT_MAX - x->credit ? CREDIT_MAX : x->credit + credit;
        pump(c, x);
        break;
    }
    case TERN_MSG_STATUS:
        if (tern_proto_dec_empty(b, h.len, &why)) {
            rc = malformed(srv, c, h.type, why);
            break;
        }
        on_status(c, h.id, b, h.len);
        break;
    case TERN_MSG_ADMIN:
    case TERN_MSG_STOP: {
        char *mod = NULL, *line = NULL;
        if (h.type == TERN_MSG_ADMIN) {
            mod = malloc(2 * (TERN_PROTO_TEXT_MAX + 1));
            if (!mod) {
                answer_code(c, TERN_MSG_ERROR, h.id, -ENOMEM, "out of memory");
                break;
            }
            line = mod + TERN_PROTO_TEXT_MAX + 1;
            if (tern_proto_dec_admin(b, h.len, mod, TERN_PROTO_TEXT_MAX + 1, line,
                                     TERN_PROTO_TEXT_MAX + 1, &why)) {
                free(mod);
                rc = malformed(srv, c, h.type, why);
                break;
            }
            free(mod);
        } else if (tern_proto_dec_empty(b, h.len, &why)) {
            rc = malformed(srv, c, h.type, why);
            break;
        }
        char reply[TERN_PROTO_TEXT_MAX];
        int code = -ENOTSUP;
        snprintf(reply, sizeof reply, "this server takes no %s requests",
                 tern_proto_type_name(h.type));
        if (srv->fn) {
            reply[0] = '\0';
            code = srv->fn(srv->fn_ctx, h.type, b, h.len, reply, sizeof reply);
            reply[sizeof reply - 1] = '\0';
            if (code > 0)
                code = 0;
        }
        if (h.type == TERN_MSG_ADMIN)
            answer_code(c, TERN_MSG_ADMIN_OK, h.id, code, reply);
        else if (code)
            answer_code(c, TERN_MSG_ERROR, h.id, code, reply);
        else
            answer_ok(c, h.id);
        break;
    }
    default:
        rc = malformed(srv, c, h.type, "unknown request type");
        break;
    }
out:
    if (fd >= 0)
        close(fd);
    return rc;
}

/* ------------------------------------------------------------------ server */

TERN_API int node_cserver_new(tern_loop *loop, bp_agent *a, tern_log *lg,
                              const char *node_dir, node_cserver **out)
{
    node_cserver *srv = calloc(1, sizeof *srv);
    if (!srv)
        return -ENOMEM;
    int rc = -ENOMEM;
    srv->loop = loop;
    srv->a = a;
    srv->lg = lg;
    srv->lfd = -1;
    srv->rbuf = malloc(TERN_PROTO_MSG_MAX + 1);
    srv->obuf = malloc(TERN_PROTO_MSG_MAX);
    srv->batch = malloc(sizeof *srv->batch);
    if (!srv->rbuf || !srv->obuf || !srv->batch)
        goto fail;
    struct sockaddr_un sa;
    socklen_t salen;
    if ((rc = tern_proto_sockaddr(node_dir, &sa, &salen, srv->name, sizeof srv->name))) {
        TERN_ERROR(lg, "client", "node directory %s: %s", node_dir, tern_strerror(rc));
        goto fail;
    }
    srv->lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (srv->lfd < 0) {
        rc = -errno;
        goto fail;
    }
    if (bind(srv->lfd, (struct sockaddr *)&sa, salen)) {
        rc = -errno;
        if (rc == -EADDRINUSE)
            TERN_ERROR(lg, "client", "another ternd serves %s (socket @%s is taken)",
                       node_dir, srv->name);
        else
            TERN_ERROR(lg, "client", "socket @%s: bind: %s", srv->name, strerror(-rc));
        goto fail;
    }
    if (listen(srv->lfd, 128)) {
        rc = -errno;
        goto fail;
    }
    if ((rc = tern_timer_init(loop, &srv->retry)) ||
        (rc = tern_io_init(loop, &srv->lio, srv->lfd, on_accept, srv)) ||
        (rc = tern_io_start(&srv->lio, TERN_IO_READ)))
        goto fail;
    TERN_INFO(lg, "client", "applications attach at @%s (node directory %s)", srv->name,
              node_dir);
    *out = srv;
    return 0;
fail:
    if (srv->lfd >= 0)
        close(srv->lfd);
    free(srv->rbuf);
    free(srv->pbuf);
    free(srv->obuf);
    free(srv->batch);
    free(srv);
    return rc;
}

TERN_API void node_cserver_free(node_cserver *srv)
{
    if (!srv)
        return;
    while (srv->clients)
        c_kill(srv->clients);
    if (srv->reap_pending)
        tern_loop_defer_cancel(srv->loop, reap, srv);
    if (srv->pump_pending)
        tern_loop_defer_cancel(srv->loop, pump_due, srv);
    reap(srv->loop, srv);
    tern_timer_stop(&srv->retry);
    tern_io_stop(&srv->lio);
    close(srv->lfd);
    for (size_t i = 0; i < srv->nmfds; i++)
        close(srv->mfds[i].fd);
    free(srv->rbuf);
    free(srv->pbuf);
    free(srv->obuf);
    free(srv->batch);
    free(srv);
}

/* Pumps every endpoint the agent queued bundles for since the last call:
 * an LTP block of 60 bundles goes to the application as one DELIVER_BATCH,
 * not 60 datagrams (each a sendmsg here and a recvmsg there). */
static void pump_due(tern_loop *loop, void *arg)
{
    (void)loop;
    node_cserver *srv = arg;
    srv->pump_pending = 0;
    for (node_cserver_client *c = srv->clients; c; c = c->next)
        for (struct cep *x = c->eps; x; x = x->next)
            if (x->due) {
                x->due = 0;
                pump(c, x);
            }
}

TERN_API void node_cserver_deliverable(node_cserver *srv, const bp_eid *ep)
{
    if (!srv)
        return;
    for (node_cserver_client *c = srv->clients; c; c = c->next) {
        struct cep *x = cep_find(c, ep);
        if (!x)
            continue;
        if (!srv->pump_pending && tern_loop_defer(srv->loop, pump_due, srv) == 0)
            srv->pump_pending = 1;
        if (srv->pump_pending)
            x->due = 1;
        else
            pump(c, x); /* no deferred call: at once */
        return;
    }
}

TERN_API void node_cserver_dropped(node_cserver *srv, const bp_eid *src,
                                   uint64_t ctime_ms, uint64_t seq, int code,
                                   const char *why)
{
    if (!srv)
        return;
    tern_msg_dropped m = {.ctime_ms = ctime_ms, .seq = seq, .code = code};
    bp_eid_print(src, m.eid, sizeof m.eid);
    snprintf(m.text, sizeof m.text, "%s", why ? why : tern_strerror(code));
    for (node_cserver_client *c = srv->clients; c; c = c->next) {
        if (c->dead || !cep_find(c, src))
            continue;
        int n = tern_proto_enc_dropped(srv->obuf, TERN_PROTO_MSG_MAX, &m);
        if (n > 0) {
            c_out(c, srv->obuf, (size_t)n, -1);
            srv->st.drops_told++;
            tern_log_limited(srv->lg, &srv->told_lim, tern_loop_now(srv->loop),
                             TERN_LOG_INFO, "client",
                             "bundle %" PRIu64 ".%" PRIu64 " of %s deleted after it was "
                             "accepted (%s): its application is told",
                             ctime_ms, seq, m.eid, m.text);
            return;
        }
    }
    srv->st.drops_unheard++;
    tern_log_limited(srv->lg, &srv->unheard_lim, tern_loop_now(srv->loop), TERN_LOG_WARN,
                     "client",
                     "bundle %" PRIu64 ".%" PRIu64 " of %s deleted after it was accepted "
                     "(%s); no application has %s open to be told",
                     ctime_ms, seq, m.eid, m.text, m.eid);
}

TERN_API void node_cserver_set_handler(node_cserver *srv, node_cserver_handler fn,
                                       void *ctx)
{
    srv->fn = fn;
    srv->fn_ctx = ctx;
}

TERN_API void node_cserver_stats_get(const node_cserver *srv, node_cserver_stats *st)
{
    *st = srv->st;
    st->held_now = 0;
    for (const node_cserver_client *c = srv->clients; c; c = c->next)
        st->held_now += c->held != NULL;
}

TERN_API const char *node_cserver_name(const node_cserver *srv)
{
    return srv->name;
}
