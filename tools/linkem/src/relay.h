/* Private: what the three relays share. */
#ifndef LINKEM_RELAY_H
#define LINKEM_RELAY_H

#include <stdarg.h>
#include <sys/socket.h>

#include "linkem.h"

struct relay_ops {
    int (*start)(lk_relay *r, uint64_t epoch_ns);
    int (*ports)(const lk_relay *r, char *buf, size_t size);
    void (*counters)(const lk_relay *r, int dir, lk_counters *out);
    void (*destroy)(lk_relay *r);
};

/* Every relay struct starts with this. */
struct lk_relay {
    const struct relay_ops *ops;
};

int lk_udp_create(tern_loop *loop, const lk_config *cfg, tern_log *lg, char *err,
                  size_t errlen, lk_relay **out);
int lk_tcp_create(tern_loop *loop, const lk_config *cfg, tern_log *lg, char *err,
                  size_t errlen, lk_relay **out);
int lk_packet_create(tern_loop *loop, const lk_config *cfg, tern_log *lg, char *err,
                     size_t errlen, lk_relay **out);

void lk_seterr(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Resolves "host:port" / "[v6]:port" for socktype (SOCK_DGRAM, SOCK_STREAM).
 * want_family: 0 for the first address, AF_INET6 to map an IPv4 result into
 * ::ffff:a.b.c.d (for an IPv6 socket), AF_INET to insist on IPv4.
 * TERN_ESYNTAX with err naming the address if it does not resolve. */
int lk_resolve(const char *hostport, int socktype, int passive, int want_family,
               struct sockaddr_storage *ss, socklen_t *len, char *err, size_t errlen);

/* The port of a bound socket, or -errno. */
int lk_local_port(int fd);

/* Raises a socket buffer (SO_RCVBUFFORCE then SO_RCVBUF, ...); returns what
 * the kernel granted. */
int lk_raise_buf(int fd, int force_opt, int opt, int want);

#endif
