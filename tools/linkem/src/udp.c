/* UDP relay: two sockets, one per direction's LISTEN address. A datagram that
 * arrives at a2b's socket goes through the a2b channel and leaves to a2b's
 * TARGET from b2a's socket (and the other way round), so a peer that answers
 * the source address of what it received reaches the relay again.
 *
 * Reception drains each socket with recvmmsg, a bounded number of batches per
 * wakeup (the watcher is level-triggered). Sending is one sendto per
 * datagram, at the moment the channel releases it; if the socket pushes back
 * the datagram waits in a per-socket backlog until the socket is writable,
 * so nothing that the link delivered is lost to a full send buffer.
 */
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "relay.h"

#define RX_BATCH    32
#define RX_BUF      65536 /* the largest UDP payload fits */
#define RX_ROUNDS   4     /* batches per wakeup before other work gets a turn */
#define BUF_WANT    (8 << 20)
#define BACKLOG_MAX (64u << 20)

struct bl_item {
    struct bl_item *next;
    size_t len;
    uint8_t data[];
};

struct usock {
    struct lk_udp *u;
    int idx; /* the direction whose LISTEN this is; it sends the other one's */
    int fd;
    tern_io io;
    unsigned interest;
    const struct sockaddr *dst; /* where this socket sends: target[1 - idx] */
    socklen_t dstlen;
    struct bl_item *bl_head, *bl_tail;
    size_t bl_bytes;
};

typedef struct lk_udp {
    lk_relay base;
    tern_loop *loop;
    tern_log *lg;
    const lk_config *cfg;
    int present[2];
    struct usock s[2];
    struct sockaddr_storage target[2];
    socklen_t tlen[2];
    lk_channel *ch[2];
    struct mmsghdr rmsg[RX_BATCH];
    struct iovec riov[RX_BATCH];
    uint8_t *rbuf;
    uint64_t ignored, send_errors;
} lk_udp;

static void set_interest(struct usock *s)
{
    unsigned want = TERN_IO_READ | (s->bl_head ? TERN_IO_WRITE : 0);
    if (want != s->interest) {
        s->interest = want;
        tern_io_start(&s->io, want);
    }
}

static void note_send_error(lk_udp *u, int dir, int err)
{
    if (u->send_errors++ % 1000 == 0)
        TERN_WARN(u->lg, "linkem",
                  "%s: cannot send to the target: %s (%" PRIu64 " so far)",
                  lk_dir_name(dir), strerror(err), u->send_errors);
}

static int backlog_add(struct usock *s, const uint8_t *data, size_t len)
{
    if (s->bl_bytes + len > BACKLOG_MAX)
        return -ENOBUFS;
    struct bl_item *it = malloc(sizeof *it + len);
    if (!it)
        return -ENOMEM;
    it->next = NULL;
    it->len = len;
    memcpy(it->data, data, len);
    if (s->bl_tail)
        s->bl_tail->next = it;
    else
        s->bl_head = it;
    s->bl_tail = it;
    s->bl_bytes += len;
    set_interest(s);
    return 0;
}

static void backlog_flush(struct usock *s)
{
    while (s->bl_head) {
        struct bl_item *it = s->bl_head;
        ssize_t n = sendto(s->fd, it->data, it->len, MSG_DONTWAIT, s->dst, s->dstlen);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS))
            break;
        if (n < 0)
            note_send_error(s->u, 1 - s->idx, errno);
        s->bl_head = it->next;
        if (!s->bl_head)
            s->bl_tail = NULL;
        s->bl_bytes -= it->len;
        free(it);
    }
    set_interest(s);
}

/* The channel of direction dir releases a datagram: it leaves from the other
 * direction's socket. */
static int deliver(void *arg, void *tag, uint8_t *data, size_t len, unsigned pflags)
{
    struct usock *s = arg;
    (void)tag;
    (void)pflags;
    if (s->bl_head)
        return backlog_add(s, data, len); /* keep the order */
    for (;;) {
        ssize_t n = sendto(s->fd, data, len, MSG_DONTWAIT, s->dst, s->dstlen);
        if (n >= 0)
            return 0;
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS)
            return backlog_add(s, data, len);
        int e = errno;
        note_send_error(s->u, 1 - s->idx, e);
        return -e;
    }
}

static void on_io(tern_io *w, int fd, unsigned events, void *arg)
{
    struct usock *s = arg;
    lk_udp *u = s->u;
    (void)w;
    if (events & TERN_IO_WRITE)
        backlog_flush(s);
    if (!(events & (TERN_IO_READ | TERN_IO_ERROR)))
        return;
    for (int round = 0; round < RX_ROUNDS; round++) {
        for (int i = 0; i < RX_BATCH; i++) {
            u->riov[i].iov_len = RX_BUF;
            u->rmsg[i].msg_hdr.msg_namelen = 0;
            u->rmsg[i].msg_hdr.msg_controllen = 0;
            u->rmsg[i].msg_hdr.msg_flags = 0;
        }
        int n = recvmmsg(fd, u->rmsg, RX_BATCH, MSG_DONTWAIT, NULL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                TERN_DEBUG(u->lg, "linkem", "%s socket: receive: %s", lk_dir_name(s->idx),
                           strerror(errno));
            return;
        }
        for (int i = 0; i < n; i++) {
            if (!u->present[s->idx]) {
                u->ignored++; /* a send-only socket: that direction is not emulated */
                continue;
            }
            if (lk_channel_send(u->ch[s->idx], u->riov[i].iov_base, u->rmsg[i].msg_len,
                                NULL, 0) == -ENOMEM)
                TERN_WARN(u->lg, "linkem", "%s: out of memory, datagram dropped",
                          lk_dir_name(s->idx));
        }
        if (n < RX_BATCH)
            return;
    }
}

static int udp_start(lk_relay *r, uint64_t epoch_ns)
{
    lk_udp *u = (lk_udp *)r;
    for (int d = 0; d < 2; d++) {
        if (u->ch[d])
            lk_channel_set_epoch(u->ch[d], epoch_ns);
        u->s[d].interest = TERN_IO_READ;
        int rc = tern_io_start(&u->s[d].io, TERN_IO_READ);
        if (rc)
            return rc;
    }
    return 0;
}

static int udp_ports(const lk_relay *r, char *buf, size_t size)
{
    const lk_udp *u = (const lk_udp *)r;
    size_t off = 0;
    if (size)
        buf[0] = 0;
    for (int d = 0; d < 2; d++) {
        if (!u->present[d])
            continue;
        int n = snprintf(buf + off, size - off, "%s %d\n", lk_dir_name(d),
                         lk_local_port(u->s[d].fd));
        if (n < 0 || (size_t)n >= size - off)
            return TERN_ENOSPACE;
        off += (size_t)n;
    }
    return 0;
}

static void udp_counters(const lk_relay *r, int dir, lk_counters *out)
{
    const lk_udp *u = (const lk_udp *)r;
    memset(out, 0, sizeof *out);
    if (u->ch[dir])
        *out = *lk_channel_counters(u->ch[dir]);
}

static void udp_destroy(lk_relay *r)
{
    lk_udp *u = (lk_udp *)r;
    for (int d = 0; d < 2; d++) {
        lk_channel_free(u->ch[d]);
        struct usock *s = &u->s[d];
        if (s->fd >= 0) {
            tern_io_stop(&s->io);
            close(s->fd);
        }
        while (s->bl_head) {
            struct bl_item *it = s->bl_head;
            s->bl_head = it->next;
            free(it);
        }
    }
    if (u->ignored)
        TERN_INFO(u->lg, "linkem", "%" PRIu64 " datagrams ignored at a send-only socket",
                  u->ignored);
    free(u->rbuf);
    free(u);
}

static const struct relay_ops udp_ops = {udp_start, udp_ports, udp_counters, udp_destroy};

static int open_socket(lk_udp *u, int d, const struct sockaddr_storage *addr,
                       socklen_t alen, const char *what, char *err, size_t errlen)
{
    struct usock *s = &u->s[d];
    s->fd = socket(addr->ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s->fd < 0) {
        int rc = -errno;
        lk_seterr(err, errlen, "%s: socket: %s", what, strerror(errno));
        return rc;
    }
    if (addr->ss_family == AF_INET6) {
        int off = 0; /* "[::]" takes IPv4 peers too */
        setsockopt(s->fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
    }
    if (bind(s->fd, (const struct sockaddr *)addr, alen) != 0) {
        int rc = -errno;
        lk_seterr(err, errlen, "%s: cannot bind: %s", what, strerror(errno));
        return rc;
    }
    int rb = lk_raise_buf(s->fd, SO_RCVBUFFORCE, SO_RCVBUF, BUF_WANT);
    int sb = lk_raise_buf(s->fd, SO_SNDBUFFORCE, SO_SNDBUF, BUF_WANT);
    TERN_INFO(u->lg, "linkem", "%s socket bound to port %d (receive buffer %d, send %d)",
              lk_dir_name(d), lk_local_port(s->fd), rb, sb);
    return tern_io_init(u->loop, &s->io, s->fd, on_io, s);
}

int lk_udp_create(tern_loop *loop, const lk_config *cfg, tern_log *lg, char *err,
                  size_t errlen, lk_relay **out)
{
    lk_udp *u = calloc(1, sizeof *u);
    if (!u)
        return -ENOMEM;
    u->base.ops = &udp_ops;
    u->loop = loop;
    u->lg = lg;
    u->cfg = cfg;
    u->s[0].fd = u->s[1].fd = -1;
    int rc = 0;
    for (int d = 0; d < 2; d++) {
        u->s[d].u = u;
        u->s[d].idx = d;
        u->present[d] = cfg->udp_listen[d] != NULL;
    }
    /* Listening sockets first: their families decide how targets resolve. */
    for (int d = 0; d < 2; d++) {
        if (!u->present[d])
            continue;
        struct sockaddr_storage a;
        socklen_t al;
        char what[64];
        snprintf(what, sizeof what, "--%s LISTEN", lk_dir_name(d));
        rc = lk_resolve(cfg->udp_listen[d], SOCK_DGRAM, 1, 0, &a, &al, err, errlen);
        if (rc)
            goto fail;
        rc = open_socket(u, d, &a, al, cfg->udp_listen[d], err, errlen);
        if (rc)
            goto fail;
    }
    /* An absent direction still needs a socket to send the other one's
     * datagrams from: an ephemeral one of the target's family. */
    for (int d = 0; d < 2; d++) {
        if (u->present[d])
            continue;
        struct sockaddr_storage t, any;
        socklen_t tl;
        rc = lk_resolve(cfg->udp_target[1 - d], SOCK_DGRAM, 0, 0, &t, &tl, err, errlen);
        if (rc)
            goto fail;
        memset(&any, 0, sizeof any);
        any.ss_family = t.ss_family;
        socklen_t al = t.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                               : sizeof(struct sockaddr_in);
        rc = open_socket(u, d, &any, al, "send socket", err, errlen);
        if (rc)
            goto fail;
    }
    for (int d = 0; d < 2; d++) {
        if (!u->present[d])
            continue;
        int fam = 0;
        struct sockaddr_storage ls;
        socklen_t ll = sizeof ls;
        if (getsockname(u->s[1 - d].fd, (struct sockaddr *)&ls, &ll) == 0)
            fam = ls.ss_family;
        rc = lk_resolve(cfg->udp_target[d], SOCK_DGRAM, 0, fam, &u->target[d],
                        &u->tlen[d], err, errlen);
        if (rc)
            goto fail;
        u->s[1 - d].dst = (const struct sockaddr *)&u->target[d];
        u->s[1 - d].dstlen = u->tlen[d];
        rc = lk_channel_new(loop, &cfg->dir[d], cfg->seed, d, 0, deliver, &u->s[1 - d],
                            &u->ch[d]);
        if (rc) {
            lk_seterr(err, errlen, "channel: %s", tern_strerror(rc));
            goto fail;
        }
    }
    u->rbuf = malloc((size_t)RX_BATCH * RX_BUF);
    if (!u->rbuf) {
        rc = -ENOMEM;
        goto fail;
    }
    for (int i = 0; i < RX_BATCH; i++) {
        u->riov[i].iov_base = u->rbuf + (size_t)i * RX_BUF;
        u->riov[i].iov_len = RX_BUF;
        u->rmsg[i].msg_hdr.msg_iov = &u->riov[i];
        u->rmsg[i].msg_hdr.msg_iovlen = 1;
    }
    *out = &u->base;
    return 0;
fail:
    if (!err[0])
        lk_seterr(err, errlen, "udp relay: %s", tern_strerror(rc));
    udp_destroy(&u->base);
    return rc;
}
