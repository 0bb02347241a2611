/* The node's client server: libtern applications attach here (docs/node.md).
 * STATUS, ADMIN and STOP requests come back to the node. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "node_cserver.h"
#include "node_int.h"
#include "tern_proto.h"

static int on_request(void *ctx, uint32_t type, const uint8_t *body, size_t len,
                      char *reply, size_t cap)
{
    struct tern_node *n = ctx;
    switch (type) {
    case TERN_MSG_ADMIN: {
        char module[64], line[4096];
        const char *why = NULL;
        int rc = tern_proto_dec_admin(body, len, module, sizeof module, line, sizeof line,
                                      &why);
        if (rc) {
            snprintf(reply, cap, "malformed admin request: %s",
                     why ? why : tern_strerror(rc));
            return rc;
        }
        return node__admin(n, module, line, reply, cap);
    }
    case TERN_MSG_STATUS:
        tern_node_status(n, reply, cap);
        return 0;
    case TERN_MSG_STOP:
        TERN_INFO(n->lg, "node", "stop requested by a client");
        snprintf(reply, cap, "node %llu stopping", (unsigned long long)n->number);
        tern_node_stop(n);
        return 0;
    default:
        snprintf(reply, cap, "request %u not supported", (unsigned)type);
        return -ENOTSUP;
    }
}

int node__server_start(struct tern_node *n, char *err, size_t errlen)
{
    int rc = node_cserver_new(n->loop, n->agent, n->lg, n->dir, &n->srv);
    if (rc) {
        snprintf(err, errlen, "client socket for %s: %s", n->dir, tern_strerror(rc));
        return rc;
    }
    node_cserver_set_handler(n->srv, on_request, n);
    return 0;
}

void node__server_stop(struct tern_node *n)
{
    node_cserver_free(n->srv);
    n->srv = NULL;
}

void node__deliverable(struct tern_node *n, const bp_eid *ep)
{
    if (n->srv)
        node_cserver_deliverable(n->srv, ep);
}

void node__dropped(struct tern_node *n, const bp_eid *src, uint64_t ctime_ms,
                   uint64_t seq, int code, const char *why)
{
    if (n->srv)
        node_cserver_dropped(n->srv, src, ctime_ms, seq, code, why);
}
