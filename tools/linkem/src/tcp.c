/* TCP relay: a proxy whose two byte streams go through the channels.
 *
 * Every accepted connection gets its own connection to the target; bytes
 * client->server are direction a2b, server->client b2a. Both directions of
 * every connection share one channel each, so the rate is the link's, not a
 * connection's. A chunk read from one socket is released to the other after
 * the delay and the serialization time; an end of stream (FIN) travels as an
 * in-band marker behind the last chunk, so a half-close arrives in order.
 *
 * Nothing is ever dropped from a stream: while a direction is down nothing is
 * read from it and what was in flight waits for the link to come back. A
 * direction stops reading while its transmitter queue holds --queue bytes,
 * while the channel holds HELD_MAX bytes, or while the receiving socket has
 * OUT_MAX bytes it has not taken, so memory stays bounded and the sender
 * sees TCP's own back-pressure. With --reset-on-outage every connection is
 * reset (RST, SO_LINGER 0) when an outage starts in either direction.
 */
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "relay.h"

#define CHUNK_MAX   65536
#define CHUNK_MIN   1024
#define HELD_MAX    (64u << 20)
#define OUT_MAX     (4u << 20)
#define READS_EVENT 8 /* reads per wakeup and socket */

struct buf {
    uint8_t *p;
    size_t off, len, cap;
};

struct conn;
struct side {
    struct conn *c;
    int idx; /* 0: the client (reads a2b), 1: the server (reads b2a) */
    int fd;
    tern_io io;
    unsigned interest;
    int watching;
    int eof_read;     /* read() returned 0; the marker is on its way */
    int shut_pending; /* the marker arrived: shut down writing once out is empty */
    int shut_done;
    struct buf out; /* delivered to this side, not yet taken by its socket */
};

struct conn {
    struct lk_tcp *t;
    struct conn *next, *prev;
    struct side s[2];
    int connecting;
    uint64_t id;
};

struct dirctx {
    struct lk_tcp *t;
    int d;
};

typedef struct lk_tcp {
    lk_relay base;
    tern_loop *loop;
    tern_log *lg;
    const lk_config *cfg;
    int lfd;
    tern_io lio;
    struct sockaddr_storage target;
    socklen_t tlen;
    lk_channel *ch[2];
    struct dirctx dc[2];
    struct conn *conns;
    tern_timer sched[2];   /* next outage transition per direction */
    tern_timer recheck[2]; /* the transmitter queue will have shrunk */
    int down[2];
    int started;
    int update_pending;
    size_t chunk[2];
    uint8_t *rbuf;
    uint64_t next_id;
} lk_tcp;

static void update_all(tern_loop *loop, void *arg);
static void on_recheck(tern_timer *tm, void *arg);

static void schedule_update(lk_tcp *t)
{
    if (!t->update_pending && tern_loop_defer(t->loop, update_all, t) == 0)
        t->update_pending = 1;
}

/* ------------------------------------------------------------ buffers */

static int buf_append(struct buf *b, const uint8_t *p, size_t n)
{
    if (b->off && b->off + b->len + n > b->cap) {
        memmove(b->p, b->p + b->off, b->len);
        b->off = 0;
    }
    if (b->len + n > b->cap) {
        size_t nc = b->cap ? b->cap : 65536;
        while (nc < b->len + n)
            nc *= 2;
        uint8_t *np = realloc(b->p, nc);
        if (!np)
            return -ENOMEM;
        b->p = np;
        b->cap = nc;
    }
    memcpy(b->p + b->off + b->len, p, n);
    b->len += n;
    return 0;
}

/* ------------------------------------------------------------ connections */

static void conn_free(struct conn *c, int reset)
{
    lk_tcp *t = c->t;
    for (int i = 0; i < 2; i++) {
        struct side *s = &c->s[i];
        if (s->fd >= 0) {
            tern_io_stop(&s->io);
            if (reset) {
                struct linger lg = {1, 0}; /* close sends RST */
                setsockopt(s->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
            }
            close(s->fd);
        }
        free(s->out.p);
    }
    for (int d = 0; d < 2; d++)
        lk_channel_cancel(t->ch[d], c);
    if (c->prev)
        c->prev->next = c->next;
    else
        t->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    free(c);
}

static void conn_reset(struct conn *c, const char *why)
{
    TERN_DEBUG(c->t->lg, "linkem", "connection %" PRIu64 ": reset (%s)", c->id, why);
    conn_free(c, 1);
}

/* What side i's socket should be watched for now. */
static unsigned side_want(struct conn *c, int i)
{
    lk_tcp *t = c->t;
    struct side *s = &c->s[i];
    unsigned want = 0;
    if (s->out.len || (c->connecting && i == 1))
        want |= TERN_IO_WRITE;
    if (c->connecting || s->eof_read || t->down[i] || !t->started)
        return want;
    if (t->cfg->dir[i].rate_bps &&
        lk_channel_waiting_bytes(t->ch[i]) >= t->cfg->dir[i].queue_bytes) {
        uint64_t at = lk_channel_next_tx_start(t->ch[i]);
        if (at && (!tern_timer_is_active(&t->recheck[i]) ||
                   tern_timer_deadline(&t->recheck[i]) > at))
            tern_timer_start_at(&t->recheck[i], on_recheck, t, at, 0);
        return want;
    }
    if (lk_channel_held_bytes(t->ch[i]) >= HELD_MAX || c->s[1 - i].out.len >= OUT_MAX)
        return want;
    return want | TERN_IO_READ;
}

static void on_side(tern_io *w, int fd, unsigned events, void *arg);

static void side_update(struct conn *c, int i)
{
    struct side *s = &c->s[i];
    unsigned want = side_want(c, i);
    /* Nothing wanted: not even watched, or a peer's HUP would wake us in a
     * loop; a later read or write finds any error. */
    if (!want) {
        if (s->watching) {
            tern_io_stop(&s->io);
            s->watching = 0;
        }
        return;
    }
    if (!s->watching || want != s->interest) {
        if (tern_io_start(&s->io, want) == 0) {
            s->watching = 1;
            s->interest = want;
        }
    }
}

/* 1 if c was freed. */
static int conn_check_done(struct conn *c)
{
    for (int i = 0; i < 2; i++)
        if (!c->s[i].eof_read || !c->s[i].shut_done)
            return 0;
    TERN_DEBUG(c->t->lg, "linkem", "connection %" PRIu64 ": closed", c->id);
    conn_free(c, 0);
    return 1;
}

static void conn_update(struct conn *c)
{
    side_update(c, 0);
    side_update(c, 1);
}

static void update_all(tern_loop *loop, void *arg)
{
    lk_tcp *t = arg;
    (void)loop;
    t->update_pending = 0;
    for (struct conn *c = t->conns; c; c = c->next)
        conn_update(c);
}

static void on_recheck(tern_timer *tm, void *arg)
{
    (void)tm;
    schedule_update(arg);
}

/* Writes what side s has pending. 1 if the connection was freed. */
static int side_flush(struct side *s)
{
    struct conn *c = s->c;
    while (s->out.len) {
        ssize_t n = send(s->fd, s->out.p + s->out.off, s->out.len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (n < 0) {
            conn_reset(c, strerror(errno));
            return 1;
        }
        s->out.off += (size_t)n;
        s->out.len -= (size_t)n;
    }
    if (!s->out.len)
        s->out.off = 0;
    if (!s->out.len && s->shut_pending && !s->shut_done) {
        shutdown(s->fd, SHUT_WR);
        s->shut_done = 1;
        if (conn_check_done(c))
            return 1;
    }
    return 0;
}

static int deliver(void *arg, void *tag, uint8_t *data, size_t len, unsigned pflags)
{
    struct dirctx *dc = arg;
    lk_tcp *t = dc->t;
    struct conn *c = tag;
    struct side *dst = &c->s[1 - dc->d];
    schedule_update(t);
    if (pflags & LK_PKT_MARKER) {
        dst->shut_pending = 1;
        if (side_flush(dst))
            return 0;
        side_update(c, dst->idx);
        return 0;
    }
    int had = dst->out.len != 0;
    if (buf_append(&dst->out, data, len) != 0) {
        conn_reset(c, "out of memory");
        return -ENOMEM;
    }
    if (!had) {
        if (side_flush(dst))
            return -EPIPE;
    }
    side_update(c, dst->idx);
    return 0;
}

/* Reads from side i into channel i. 1 if the connection was freed. */
static int side_read(struct conn *c, int i)
{
    lk_tcp *t = c->t;
    struct side *s = &c->s[i];
    for (int k = 0; k < READS_EVENT; k++) {
        if (!(side_want(c, i) & TERN_IO_READ))
            break;
        ssize_t n = recv(s->fd, t->rbuf, t->chunk[i], 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (n < 0) {
            conn_reset(c, strerror(errno));
            return 1;
        }
        if (n == 0) {
            s->eof_read = 1;
            lk_channel_send(t->ch[i], NULL, 0, c, LK_PKT_MARKER);
            break;
        }
        if (lk_channel_send(t->ch[i], t->rbuf, (size_t)n, c, 0) == -ENOMEM) {
            conn_reset(c, "out of memory");
            return 1;
        }
    }
    return 0;
}

static void on_side(tern_io *w, int fd, unsigned events, void *arg)
{
    struct side *s = arg;
    struct conn *c = s->c;
    (void)w;
    if (c->connecting && s->idx == 1) {
        int err = 0;
        socklen_t l = sizeof err;
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &l) != 0)
            err = errno;
        if (err) {
            TERN_WARN(c->t->lg, "linkem",
                      "connection %" PRIu64 ": cannot connect to %s: %s", c->id,
                      c->t->cfg->tcp_target, strerror(err));
            conn_reset(c, "connect failed");
            return;
        }
        if (!(events & TERN_IO_WRITE))
            return;
        c->connecting = 0;
        TERN_DEBUG(c->t->lg, "linkem", "connection %" PRIu64 ": connected", c->id);
        conn_update(c);
        return;
    }
    if (events & TERN_IO_WRITE) {
        if (side_flush(s))
            return;
    }
    if (events & (TERN_IO_READ | TERN_IO_HUP | TERN_IO_ERROR)) {
        if (side_want(c, s->idx) & TERN_IO_READ) {
            if (side_read(c, s->idx))
                return;
        } else if (events & (TERN_IO_ERROR | TERN_IO_HUP)) {
            int err = 0;
            socklen_t l = sizeof err;
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &l);
            if (err) {
                conn_reset(c, strerror(err));
                return;
            }
            /* A hang-up we cannot act on yet (not reading): a write finds
             * it now, or the watcher sleeps until reading resumes, rather
             * than waking the loop again at once. */
            if (s->out.len) {
                if (side_flush(s))
                    return;
            } else if (s->watching) {
                tern_io_stop(&s->io);
                s->watching = 0;
                return;
            }
        }
    }
    conn_update(c);
}

static void reset_all(lk_tcp *t, const char *why)
{
    while (t->conns) {
        for (int d = 0; d < 2; d++)
            lk_channel_counters(t->ch[d])->resets++;
        conn_reset(t->conns, why);
    }
}

static void on_accept(tern_io *w, int fd, unsigned events, void *arg)
{
    lk_tcp *t = arg;
    (void)w;
    (void)events;
    for (int k = 0; k < 16; k++) {
        int cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (cfd < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                TERN_WARN(t->lg, "linkem", "accept: %s", strerror(errno));
            return;
        }
        for (int d = 0; d < 2; d++)
            lk_channel_counters(t->ch[d])->connections++;
        if (t->cfg->reset_on_outage && (t->down[0] || t->down[1])) {
            struct linger lg = {1, 0};
            setsockopt(cfd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
            close(cfd);
            for (int d = 0; d < 2; d++)
                lk_channel_counters(t->ch[d])->resets++;
            continue;
        }
        struct conn *c = calloc(1, sizeof *c);
        int sfd =
            socket(t->target.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (!c || sfd < 0) {
            TERN_WARN(t->lg, "linkem", "new connection: %s",
                      c ? strerror(errno) : "out of memory");
            free(c);
            if (sfd >= 0)
                close(sfd);
            close(cfd);
            continue;
        }
        c->t = t;
        c->id = ++t->next_id;
        c->s[0].fd = cfd;
        c->s[1].fd = sfd;
        for (int i = 0; i < 2; i++) {
            c->s[i].c = c;
            c->s[i].idx = i;
            int one = 1; /* chunks are timed by the channel; do not let Nagle add more */
            setsockopt(c->s[i].fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            tern_io_init(t->loop, &c->s[i].io, c->s[i].fd, on_side, &c->s[i]);
        }
        c->next = t->conns;
        if (t->conns)
            t->conns->prev = c;
        t->conns = c;
        int r = connect(sfd, (struct sockaddr *)&t->target, t->tlen);
        if (r != 0 && errno != EINPROGRESS) {
            TERN_WARN(t->lg, "linkem", "connection %" PRIu64 ": cannot connect to %s: %s",
                      c->id, t->cfg->tcp_target, strerror(errno));
            conn_reset(c, "connect failed");
            continue;
        }
        c->connecting = r != 0;
        TERN_DEBUG(t->lg, "linkem", "connection %" PRIu64 ": accepted", c->id);
        conn_update(c);
    }
}

static void on_sched(tern_timer *tm, void *arg)
{
    struct dirctx *dc = arg;
    lk_tcp *t = dc->t;
    int d = dc->d, was = t->down[d];
    (void)tm;
    t->down[d] = lk_channel_is_down(t->ch[d]);
    if (t->down[d] != was)
        TERN_INFO(t->lg, "linkem", "%s: link %s", lk_dir_name(d),
                  t->down[d] ? "down" : "up");
    if (t->down[d] && !was && t->cfg->reset_on_outage)
        reset_all(t, "outage");
    uint64_t next = lk_channel_next_change(t->ch[d]);
    if (next != UINT64_MAX)
        tern_timer_start_at(&t->sched[d], on_sched, dc, next, 0);
    schedule_update(t);
}

static int tcp_start(lk_relay *r, uint64_t epoch_ns)
{
    lk_tcp *t = (lk_tcp *)r;
    t->started = 1;
    for (int d = 0; d < 2; d++) {
        lk_channel_set_epoch(t->ch[d], epoch_ns);
        t->down[d] = 0;
        on_sched(&t->sched[d], &t->dc[d]);
    }
    return tern_io_start(&t->lio, TERN_IO_READ);
}

static int tcp_ports(const lk_relay *r, char *buf, size_t size)
{
    const lk_tcp *t = (const lk_tcp *)r;
    int n = snprintf(buf, size, "listen %d\n", lk_local_port(t->lfd));
    return n < 0 || (size_t)n >= size ? TERN_ENOSPACE : 0;
}

static void tcp_counters(const lk_relay *r, int dir, lk_counters *out)
{
    const lk_tcp *t = (const lk_tcp *)r;
    memset(out, 0, sizeof *out);
    if (t->ch[dir])
        *out = *lk_channel_counters(t->ch[dir]);
}

static void tcp_destroy(lk_relay *r)
{
    lk_tcp *t = (lk_tcp *)r;
    while (t->conns)
        conn_free(t->conns, 0);
    if (t->update_pending)
        tern_loop_defer_cancel(t->loop, update_all, t);
    for (int d = 0; d < 2; d++) {
        tern_timer_stop(&t->sched[d]);
        tern_timer_stop(&t->recheck[d]);
        lk_channel_free(t->ch[d]);
    }
    if (t->lfd >= 0) {
        tern_io_stop(&t->lio);
        close(t->lfd);
    }
    free(t->rbuf);
    free(t);
}

static const struct relay_ops tcp_ops = {tcp_start, tcp_ports, tcp_counters, tcp_destroy};

int lk_tcp_create(tern_loop *loop, const lk_config *cfg, tern_log *lg, char *err,
                  size_t errlen, lk_relay **out)
{
    lk_tcp *t = calloc(1, sizeof *t);
    if (!t)
        return -ENOMEM;
    t->base.ops = &tcp_ops;
    t->loop = loop;
    t->lg = lg;
    t->cfg = cfg;
    t->lfd = -1;
    int rc;
    for (int d = 0; d < 2; d++) {
        tern_timer_init(loop, &t->sched[d]);
        tern_timer_init(loop, &t->recheck[d]);
    }
    for (int d = 0; d < 2; d++) {
        t->dc[d] = (struct dirctx){t, d};
        uint64_t rate = cfg->dir[d].rate_bps;
        size_t ch = rate ? (size_t)(rate / 8 / 100) : CHUNK_MAX; /* 10 ms of data */
        t->chunk[d] = ch < CHUNK_MIN ? CHUNK_MIN : ch > CHUNK_MAX ? CHUNK_MAX : ch;
        rc = lk_channel_new(loop, &cfg->dir[d], cfg->seed, d, LK_CH_STREAM, deliver,
                            &t->dc[d], &t->ch[d]);
        if (rc) {
            lk_seterr(err, errlen, "channel: %s", tern_strerror(rc));
            goto fail;
        }
    }
    t->rbuf = malloc(CHUNK_MAX);
    if (!t->rbuf) {
        rc = -ENOMEM;
        goto fail;
    }
    struct sockaddr_storage la;
    socklen_t ll;
    rc = lk_resolve(cfg->tcp_listen, SOCK_STREAM, 1, 0, &la, &ll, err, errlen);
    if (rc)
        goto fail;
    rc =
        lk_resolve(cfg->tcp_target, SOCK_STREAM, 0, 0, &t->target, &t->tlen, err, errlen);
    if (rc)
        goto fail;
    t->lfd = socket(la.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (t->lfd < 0) {
        rc = -errno;
        lk_seterr(err, errlen, "--listen %s: socket: %s", cfg->tcp_listen,
                  strerror(errno));
        goto fail;
    }
    int one = 1, off = 0;
    setsockopt(t->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (la.ss_family == AF_INET6)
        setsockopt(t->lfd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
    if (bind(t->lfd, (struct sockaddr *)&la, ll) != 0 || listen(t->lfd, 128) != 0) {
        rc = -errno;
        lk_seterr(err, errlen, "--listen %s: cannot listen: %s", cfg->tcp_listen,
                  strerror(errno));
        goto fail;
    }
    rc = tern_io_init(loop, &t->lio, t->lfd, on_accept, t);
    if (rc)
        goto fail;
    TERN_INFO(lg, "linkem", "tcp: listening on port %d, target %s", lk_local_port(t->lfd),
              cfg->tcp_target);
    *out = &t->base;
    return 0;
fail:
    if (!err[0])
        lk_seterr(err, errlen, "tcp relay: %s", tern_strerror(rc));
    tcp_destroy(&t->base);
    return rc;
}
