/* CFDP over UDP (docs/cfdpd.md, "CFDP over UDP"): one PDU per datagram, to
 * the address a peer's 'a entity <nbr> udp <host>:<port>' gave, from the
 * socket bound to 'm udpport' (so a peer that answers to the source address
 * reaches it too). */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cfdpd.h"

/* Bursts of a batch (up to 4 MiB) must fit the receiver's buffer or they
 * are lost there; the kernel caps this at net.core.rmem_max. */
#define UDP_SOCKBUF  (8 << 20)
#define SEND_WAIT_MS 200 /* a full send buffer: wait this long, then drop */

struct udp_peer {
    uint64_t id;
    struct sockaddr_storage sa;
    socklen_t len;
};

struct cfdpd_udp {
    int fd;
    unsigned port;
    struct udp_peer *peers;
    size_t npeers;
    cfdpd_udp_stats st;
    uint8_t buf[CFDP_RC_UDP_MAX_PDU + 1]; /* one more: a longer datagram shows */
};

static int resolve(const char *host, unsigned port, int family, int passive,
                   struct sockaddr_storage *sa, socklen_t *len)
{
    char ps[8];
    snprintf(ps, sizeof ps, "%u", port);
    struct addrinfo hints = {.ai_family = family,
                             .ai_socktype = SOCK_DGRAM,
                             .ai_flags = (passive ? AI_PASSIVE : 0) | AI_NUMERICSERV |
                                         (family == AF_INET6 ? AI_V4MAPPED : 0)};
    struct addrinfo *ai = NULL;
    int r = getaddrinfo(host[0] ? host : NULL, ps, &hints, &ai);
    if (r)
        return r;
    memcpy(sa, ai->ai_addr, ai->ai_addrlen);
    *len = ai->ai_addrlen;
    freeaddrinfo(ai);
    return 0;
}

int cfdpd_udp_open(const cfdpd_config *cfg, cfdpd_udp **out, char *why, size_t whylen)
{
    int rc;
    cfdpd_udp *u = calloc(1, sizeof *u);
    if (!u)
        return -ENOMEM;
    u->fd = -1;
    /* "" binds every IPv4 address; a v6 host makes a v6 socket, which also
     * reaches v4 peers through mapped addresses */
    struct sockaddr_storage sa;
    socklen_t salen;
    int family = strchr(cfg->udp_host, ':') ? AF_INET6 : AF_INET;
    int g = resolve(cfg->udp_host, cfg->udp_port, family, 1, &sa, &salen);
    if (g) {
        snprintf(why, whylen, "UDP port %.300s:%u: %s", cfg->udp_host, cfg->udp_port,
                 gai_strerror(g));
        rc = -EINVAL;
        goto fail;
    }
    u->fd = socket(sa.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (u->fd < 0) {
        rc = -errno;
        snprintf(why, whylen, "UDP socket: %s", strerror(errno));
        goto fail;
    }
    if (sa.ss_family == AF_INET6) {
        int off = 0;
        setsockopt(u->fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
    }
    int sz = UDP_SOCKBUF;
    setsockopt(u->fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof sz);
    setsockopt(u->fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
    if (bind(u->fd, (struct sockaddr *)&sa, salen)) {
        rc = -errno;
        snprintf(why, whylen, "UDP port %.300s:%u: bind: %s",
                 cfg->udp_host[0] ? cfg->udp_host : "*", cfg->udp_port, strerror(errno));
        goto fail;
    }
    struct sockaddr_storage bound;
    socklen_t bl = sizeof bound;
    if (getsockname(u->fd, (struct sockaddr *)&bound, &bl)) {
        rc = -errno;
        goto fail;
    }
    u->port =
        ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                          : ((struct sockaddr_in *)&bound)->sin_port);
    u->peers = calloc(cfg->rc.npeers ? cfg->rc.npeers : 1, sizeof *u->peers);
    if (!u->peers) {
        rc = -ENOMEM;
        goto fail;
    }
    for (size_t i = 0; i < cfg->rc.npeers; i++) {
        const cfdp_rc_peer *p = &cfg->rc.peers[i];
        if (p->transport != CFDP_RC_UDP)
            continue;
        struct udp_peer *q = &u->peers[u->npeers];
        if ((g = resolve(p->host, p->port, sa.ss_family, 0, &q->sa, &q->len))) {
            snprintf(why, whylen, "%.300s: entity %llu's address %.300s: %s", p->at,
                     (unsigned long long)p->cfg.id, p->endpoint, gai_strerror(g));
            rc = -EINVAL;
            goto fail;
        }
        q->id = p->cfg.id;
        u->npeers++;
    }
    *out = u;
    return 0;
fail:
    cfdpd_udp_close(u);
    return rc;
}

void cfdpd_udp_close(cfdpd_udp *u)
{
    if (!u)
        return;
    if (u->fd >= 0)
        close(u->fd);
    free(u->peers);
    free(u);
}

int cfdpd_udp_fd(const cfdpd_udp *u)
{
    return u->fd;
}

unsigned cfdpd_udp_port(const cfdpd_udp *u)
{
    return u->port;
}

static const struct udp_peer *find(const cfdpd_udp *u, uint64_t id)
{
    for (size_t i = 0; i < u->npeers; i++)
        if (u->peers[i].id == id)
            return &u->peers[i];
    return NULL;
}

int cfdpd_udp_has(const cfdpd_udp *u, uint64_t id)
{
    return u && find(u, id) != NULL;
}

int cfdpd_udp_send(cfdpd_udp *u, uint64_t id, const uint8_t *pdu, size_t len)
{
    const struct udp_peer *p = find(u, id);
    if (!p) {
        u->st.unknown++;
        return -EDESTADDRREQ;
    }
    if (len > CFDP_RC_UDP_MAX_PDU) { /* the MIB caps max_pdu: not expected */
        u->st.send_errors++;
        return -EMSGSIZE;
    }
    for (int tries = 0;; tries++) {
        if (sendto(u->fd, pdu, len, MSG_NOSIGNAL, (const struct sockaddr *)&p->sa,
                   p->len) == (ssize_t)len) {
            u->st.out++;
            return 0;
        }
        int e = errno;
        if ((e != EAGAIN && e != EWOULDBLOCK && e != ENOBUFS && e != EINTR) || tries) {
            u->st.send_errors++;
            return -e;
        }
        struct pollfd pf = {.fd = u->fd, .events = POLLOUT};
        poll(&pf, 1, SEND_WAIT_MS);
    }
}

int cfdpd_udp_recv(cfdpd_udp *u, const uint8_t **pdu, size_t *len)
{
    for (;;) {
        ssize_t n = recv(u->fd, u->buf, sizeof u->buf, MSG_DONTWAIT | MSG_TRUNC);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return 0;
            if (errno == EINTR || errno == ECONNREFUSED)
                continue; /* ICMP of an earlier send to a peer not up yet */
            return -errno;
        }
        if ((size_t)n > CFDP_RC_UDP_MAX_PDU) {
            u->st.truncated++;
            continue;
        }
        u->st.in++;
        *pdu = u->buf;
        *len = (size_t)n;
        return 1;
    }
}

void cfdpd_udp_stats_get(const cfdpd_udp *u, cfdpd_udp_stats *st)
{
    if (u)
        *st = u->st;
    else
        memset(st, 0, sizeof *st);
}
