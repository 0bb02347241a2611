/* Private: the client server's message handler, for tests and the fuzzer. */
#ifndef TERN_CSERVER_INT_H
#define TERN_CSERVER_INT_H

#include "node_cserver.h"

typedef struct node_cserver_client node_cserver_client;

/** Adds a client on connected socket fd (taken over: closed with the client). */
TERN_API int node_cserver__client_add(node_cserver *srv, int fd,
                                      node_cserver_client **out);

/** Handles one datagram msg[0..len) from c, with descriptor fd (-1: none;
 * always taken over). TERN_EMALFORMED if it was malformed: c is then ended
 * (freed on the loop's next iteration, or by node_cserver_free). */
TERN_API int node_cserver__input(node_cserver *srv, node_cserver_client *c,
                                 const uint8_t *msg, size_t len, int fd);

#endif
