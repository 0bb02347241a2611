/* AMS sockets (ams_net.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ams_net.h"

TERN_API void ams_net_sockaddr(const mams_ep *e, struct sockaddr_in *sa)
{
    memset(sa, 0, sizeof *sa);
    sa->sin_family = AF_INET;
    sa->sin_addr.s_addr = htonl(e->addr);
    sa->sin_port = htons(e->port);
}

TERN_API mams_ep ams_net_ep(const struct sockaddr_in *sa)
{
    return (mams_ep){ntohl(sa->sin_addr.s_addr), ntohs(sa->sin_port)};
}

static int resolve(const char *host, uint32_t *addr)
{
    struct addrinfo hints = {.ai_family = AF_INET}, *res = NULL;
    if (getaddrinfo(host, NULL, &hints, &res) || !res)
        return -1;
    *addr = ntohl(((struct sockaddr_in *)res->ai_addr)->sin_addr.s_addr);
    freeaddrinfo(res);
    return 0;
}

TERN_API mams_ep ams_net_host(void)
{
    char name[256];
    mams_ep e = {0x7f000001, 0};
    const char *env = getenv("TERN_AMS_HOST");
    if (env && *env && resolve(env, &e.addr) == 0)
        return e;
    if (gethostname(name, sizeof name) == 0) {
        name[sizeof name - 1] = 0;
        uint32_t a;
        if (resolve(name, &a) == 0)
            e.addr = a;
    }
    return e;
}

TERN_API int ams_net_parse(const char *spec, uint16_t dflt_port, mams_ep *out, char *err,
                           size_t cap)
{
    char host[256];
    const char *colon = strrchr(spec, ':');
    size_t hl = colon ? (size_t)(colon - spec) : strlen(spec);
    if (hl >= sizeof host) {
        snprintf(err, cap, "endpoint '%s': host name too long", spec);
        return -EINVAL;
    }
    memcpy(host, spec, hl);
    host[hl] = 0;
    unsigned long port = dflt_port;
    if (colon) {
        char *end;
        port = strtoul(colon + 1, &end, 10);
        if (!colon[1] || *end || port == 0 || port > 65535) {
            snprintf(err, cap, "endpoint '%s': the port is a number 1..65535", spec);
            return -EINVAL;
        }
    }
    mams_ep e = {0, (uint16_t)port};
    if (!*host || !strcmp(host, "@")) {
        e.addr = ams_net_host().addr;
    } else if (resolve(host, &e.addr)) {
        snprintf(err, cap, "endpoint '%s': cannot resolve host %s", spec, host);
        return -EHOSTUNREACH;
    }
    *out = e;
    return 0;
}

TERN_API int ams_net_udp(int *fd, uint16_t port, mams_ep *self)
{
    mams_ep at = {0, port};
    return ams_net_udp_at(fd, &at, self);
}

TERN_API int ams_net_udp_at(int *fd, const mams_ep *at, mams_ep *self)
{
    uint16_t port = at->port;
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return -errno;
    int big = 8 << 20;
    (void)setsockopt(s, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    (void)setsockopt(s, SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons(port),
                             .sin_addr.s_addr = htonl(at->addr)};
    socklen_t sl = sizeof sa;
    if (bind(s, (struct sockaddr *)&sa, sizeof sa) ||
        getsockname(s, (struct sockaddr *)&sa, &sl)) {
        int e = -errno;
        close(s);
        return e;
    }
    *fd = s;
    *self = (mams_ep){0, ntohs(sa.sin_port)};
    return 0;
}

TERN_API int ams_net_tcp_listen(int *fd, mams_ep *self)
{
    mams_ep any = {0, 0};
    return ams_net_tcp_listen_at(fd, &any, self);
}

TERN_API int ams_net_tcp_listen_at(int *fd, const mams_ep *at, mams_ep *self)
{
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return -errno;
    int one = 1;
    (void)setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons(at->port),
                             .sin_addr.s_addr = htonl(at->addr)};
    socklen_t sl = sizeof sa;
    if (bind(s, (struct sockaddr *)&sa, sizeof sa) || listen(s, 64) ||
        getsockname(s, (struct sockaddr *)&sa, &sl)) {
        int e = -errno;
        close(s);
        return e;
    }
    *fd = s;
    *self = (mams_ep){0, ntohs(sa.sin_port)};
    return 0;
}

TERN_API int ams_net_tcp_connect(const mams_ep *to, int *fd)
{
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return -errno;
    struct sockaddr_in sa;
    ams_net_sockaddr(to, &sa);
    int one = 1;
    (void)setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    int rc;
    do
        rc = connect(s, (struct sockaddr *)&sa, sizeof sa);
    while (rc < 0 && errno == EINTR);
    if (rc) {
        int e = -errno;
        close(s);
        return e;
    }
    *fd = s;
    return 0;
}
