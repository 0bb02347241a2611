/* The relay dispatch and the helpers the relays share. */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "relay.h"

void lk_seterr(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

int lk_resolve(const char *hostport, int socktype, int passive, int want_family,
               struct sockaddr_storage *ss, socklen_t *len, char *err, size_t errlen)
{
    char host[256], port[16];
    const char *colon;
    if (hostport[0] == '[') {
        const char *rb = strchr(hostport, ']');
        if (!rb || rb[1] != ':' || (size_t)(rb - hostport - 1) >= sizeof host)
            goto bad;
        memcpy(host, hostport + 1, (size_t)(rb - hostport - 1));
        host[rb - hostport - 1] = 0;
        colon = rb + 1;
    } else {
        colon = strrchr(hostport, ':');
        if (!colon || (size_t)(colon - hostport) >= sizeof host)
            goto bad;
        memcpy(host, hostport, (size_t)(colon - hostport));
        host[colon - hostport] = 0;
    }
    if (strlen(colon + 1) >= sizeof port)
        goto bad;
    strcpy(port, colon + 1);

    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = want_family == AF_INET ? AF_INET : AF_UNSPEC;
    hints.ai_socktype = socktype;
    hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
    int g = getaddrinfo(host, port, &hints, &res);
    if (g != 0) {
        lk_seterr(err, errlen, "%s: cannot resolve '%s': %s", hostport, host,
                  gai_strerror(g));
        return TERN_ESYNTAX;
    }
    /* Prefer an address of the family asked for, else map IPv4 into IPv6. */
    const struct addrinfo *pick = res;
    if (want_family)
        for (const struct addrinfo *a = res; a; a = a->ai_next)
            if (a->ai_family == want_family) {
                pick = a;
                break;
            }
    memset(ss, 0, sizeof *ss);
    if (want_family == AF_INET6 && pick->ai_family == AF_INET) {
        const struct sockaddr_in *v4 = (const struct sockaddr_in *)pick->ai_addr;
        struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
        v6->sin6_family = AF_INET6;
        v6->sin6_port = v4->sin_port;
        v6->sin6_addr.s6_addr[10] = 0xff;
        v6->sin6_addr.s6_addr[11] = 0xff;
        memcpy(&v6->sin6_addr.s6_addr[12], &v4->sin_addr, 4);
        *len = sizeof *v6;
    } else if (want_family == AF_INET && pick->ai_family != AF_INET) {
        freeaddrinfo(res);
        lk_seterr(err, errlen, "%s: not an IPv4 address (the other end is IPv4)",
                  hostport);
        return TERN_ESYNTAX;
    } else {
        memcpy(ss, pick->ai_addr, pick->ai_addrlen);
        *len = pick->ai_addrlen;
    }
    freeaddrinfo(res);
    return 0;
bad:
    lk_seterr(err, errlen, "'%s' is not host:port", hostport);
    return TERN_ESYNTAX;
}

int lk_local_port(int fd)
{
    struct sockaddr_storage ss;
    socklen_t l = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &l) != 0)
        return -errno;
    if (ss.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

int lk_raise_buf(int fd, int force_opt, int opt, int want)
{
    /* FORCE passes net.core.[rw]mem_max when we may (root); else the plain
     * option, which the kernel caps at that sysctl. */
    if (setsockopt(fd, SOL_SOCKET, force_opt, &want, sizeof want) != 0)
        setsockopt(fd, SOL_SOCKET, opt, &want, sizeof want);
    int got = 0;
    socklen_t l = sizeof got;
    getsockopt(fd, SOL_SOCKET, opt, &got, &l);
    return got / 2; /* the kernel reports data plus bookkeeping */
}

TERN_API int lk_relay_new(tern_loop *loop, const lk_config *cfg, tern_log *lg, char *err,
                          size_t errlen, lk_relay **out)
{
    if (err && errlen)
        err[0] = 0;
    switch (cfg->mode) {
    case LK_MODE_UDP:
        return lk_udp_create(loop, cfg, lg, err, errlen, out);
    case LK_MODE_TCP:
        return lk_tcp_create(loop, cfg, lg, err, errlen, out);
    case LK_MODE_PACKET:
        return lk_packet_create(loop, cfg, lg, err, errlen, out);
    }
    lk_seterr(err, errlen, "unknown mode %d", cfg->mode);
    return -EINVAL;
}

TERN_API int lk_relay_start(lk_relay *r, uint64_t epoch_ns)
{
    return r->ops->start(r, epoch_ns);
}

TERN_API int lk_relay_ports(const lk_relay *r, char *buf, size_t size)
{
    return r->ops->ports(r, buf, size);
}

TERN_API void lk_relay_counters(const lk_relay *r, int dir, lk_counters *out)
{
    r->ops->counters(r, dir, out);
}

TERN_API void lk_relay_free(lk_relay *r)
{
    if (r)
        r->ops->destroy(r);
}
