/* The node's convergence layers other than LTP, and its inducts. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "bp_tcp.h"
#include "bp_udp.h"
#include "node_int.h"
#include "tern/ports.h"

int node__clas(struct tern_node *n, const bp_admin *cfg, char *err, size_t errlen)
{
    (void)cfg;
    int rc = bp_udp_cla_new(n->agent, n->loop, n->lg, &n->udpcla);
    if (rc) {
        snprintf(err, errlen, "UDP convergence layer: %s", tern_strerror(rc));
        return rc;
    }
    rc = bp_udpm_cla_new(n->agent, n->loop, n->lg, &n->udpmcla);
    if (rc) {
        snprintf(err, errlen, "UDP broadcast convergence layer (udpm): %s",
                 tern_strerror(rc));
        return rc;
    }
    rc = bp_tcp_cla_new(n->agent, n->loop, n->lg, &n->tcpcla);
    if (rc)
        snprintf(err, errlen, "TCP convergence layers: %s", tern_strerror(rc));
    return rc;
}

int node__inducts(struct tern_node *n, const bp_admin *cfg, char *err, size_t errlen)
{
    for (size_t i = 0; i < cfg->ninducts; i++) {
        const bp_admin_duct *d = &cfg->inducts[i];
        if (strcmp(d->protocol, "ltp") == 0) {
            char own[24];
            snprintf(own, sizeof own, "%" PRIu64, n->number);
            if (!n->eng) {
                snprintf(err, errlen,
                         "%s:%u: an ltp induct needs LTP; expected an ltpadmin section",
                         d->at.file, d->at.line);
                return TERN_ESYNTAX;
            }
            if (strcmp(d->name, own) != 0)
                TERN_WARN(n->lg, "node",
                          "%s:%u: ltp induct '%s' is not this engine's number %s; LTP "
                          "delivers to this node whatever its name",
                          d->at.file, d->at.line, d->name, own);
        } else if (strcmp(d->protocol, "udp") == 0) {
            uint16_t port = 0;
            int rc = bp_udp_cla_induct(n->udpcla, d->name, &port);
            if (rc) {
                snprintf(err, errlen, "%s:%u: udp induct '%s': %s", d->at.file,
                         d->at.line, d->name, tern_strerror(rc));
                return rc;
            }
            tern_ports_publish(n->dir, "bp-udp", "udp", port);
            TERN_INFO(n->lg, "node", "udp induct %s: listening on UDP port %u", d->name,
                      port);
        } else if (strcmp(d->protocol, "udpm") == 0) {
            uint16_t port = 0;
            int rc = bp_udpm_cla_induct(n->udpmcla, d->name, d->cmd, &port);
            if (rc) {
                snprintf(err, errlen, "%s:%u: udpm induct '%s' '%s': %s", d->at.file,
                         d->at.line, d->name, d->cmd, tern_strerror(rc));
                return rc;
            }
            tern_ports_publish(n->dir, "bp-udpm", "udp", port);
            TERN_INFO(n->lg, "node", "udpm induct %s: listening on UDP port %u", d->name,
                      port);
        } else if (n->tcpcla &&
                   (strcmp(d->protocol, "tcp") == 0 || strcmp(d->protocol, "stcp") == 0 ||
                    strcmp(d->protocol, "mtcp") == 0)) {
            uint16_t port = 0;
            int rc = bp_tcp_cla_induct(n->tcpcla, d->protocol, d->name, d->cmd, &port);
            if (rc) {
                snprintf(err, errlen, "%s:%u: %s induct '%s': %s", d->at.file, d->at.line,
                         d->protocol, d->name, tern_strerror(rc));
                return rc;
            }
            char svc[48];
            snprintf(svc, sizeof svc, "bp-%s", d->protocol);
            tern_ports_publish(n->dir, svc, "tcp", port);
            TERN_INFO(n->lg, "node", "%s induct %s: listening on TCP port %u",
                      d->protocol, d->name, port);
        } else {
            snprintf(err, errlen,
                     "%s:%u: %s induct '%s': Tern has no %s convergence layer (ltp, udp, "
                     "udpm, tcp, stcp and mtcp exist)",
                     d->at.file, d->at.line, d->protocol, d->name, d->protocol);
            return TERN_ENOTFOUND;
        }
    }
    return 0;
}

void node__clas_free(struct tern_node *n)
{
    bp_udp_cla_free(n->udpcla);
    n->udpcla = NULL;
    bp_udp_cla_free(n->udpmcla);
    n->udpmcla = NULL;
    bp_tcp_cla_free(n->tcpcla);
    n->tcpcla = NULL;
}
