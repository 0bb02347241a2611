/* Sockets for AMS: IPv4 endpoints as MAMS writes them, ION's endpoint specs
 * ("@" is this host), and the few socket calls libams and amsd make. */
#ifndef TERN_AMS_NET_H
#define TERN_AMS_NET_H

#include <netinet/in.h>
#include <stddef.h>

#include "ams_mams.h"
#include "tern/base.h"

/** ION's configuration server port when a spec gives none. */
#define AMS_CS_PORT 2357

TERN_API void ams_net_sockaddr(const mams_ep *e, struct sockaddr_in *sa);
TERN_API mams_ep ams_net_ep(const struct sockaddr_in *sa);
/** This host's IPv4 address (its name resolved; 127.0.0.1 if it does not). */
TERN_API mams_ep ams_net_host(void);
/** Parses "host:port", "host", "@:port" or "@" (this host). */
TERN_API int ams_net_parse(const char *spec, uint16_t dflt_port, mams_ep *out, char *err,
                           size_t cap);
/** A UDP socket bound to port (0: any) on every address; *self its port. */
TERN_API int ams_net_udp(int *fd, uint16_t port, mams_ep *self);
/** A UDP socket bound to at (addr 0: every address; port 0: any). */
TERN_API int ams_net_udp_at(int *fd, const mams_ep *at, mams_ep *self);
/** A listening TCP socket at at (as ams_net_udp_at). */
TERN_API int ams_net_tcp_listen_at(int *fd, const mams_ep *at, mams_ep *self);
/** A listening TCP socket on any port; *self its port. */
TERN_API int ams_net_tcp_listen(int *fd, mams_ep *self);
/** A connected TCP socket (blocking, no Nagle). */
TERN_API int ams_net_tcp_connect(const mams_ep *to, int *fd);

#endif
