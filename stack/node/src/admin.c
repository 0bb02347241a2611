/* Runtime administration: 'tern admin <module>' sends command lines here.
 *
 * Each line is checked by the same interpreter as the configuration file
 * (so errors read the same), recorded in the node's settings, and acted on:
 *   ionadmin  a|d contact, a|d range (spans take new light times), l contact|range
 *   ltpadmin  a span (new peers), l span, i span, l seat, i seat
 *   bpadmin   a|c|d endpoint, a|d outduct, l endpoint|outduct|induct|plan
 *   ipnadmin  a|d plan, a|d exit, l plan|exit
 * Other commands are refused with a message saying they take effect only
 * from the host.rc at the next start.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "node_int.h"
#include "tern/clock.h"
#include "tern/rc.h"
#include "tern/suggest.h"

static int is(const tern_rc_cmd *c, const char *op, const char *what)
{
    return c->argc >= 2 && strcmp(c->argv[0], op) == 0 && strcmp(c->argv[1], what) == 0;
}

/* A command tern admin does not apply: a typo of one it does is named as
 * such, anything else is for the host.rc. */
static void not_at_runtime(const tern_rc_cmd *c, const char *module,
                           const char *const *runtime, const char *list, char *out,
                           size_t cap)
{
    char head[160], dym[200];
    const char *near = tern_suggest_cmd(c, runtime);
    tern_cmd_head(c, 2, head, sizeof head);
    if (near)
        snprintf(out, cap, "unknown %s command '%s'%s; at runtime: %s", module, head,
                 tern_did_you_mean(near, dym, sizeof dym), list);
    else
        snprintf(out, cap,
                 "%s '%s' is read from the host.rc at start only; at runtime: %s", module,
                 head, list);
}

static int ionadmin(struct tern_node *n, const tern_rc_cmd *c, char *out, size_t cap)
{
    uint64_t now = tern_clock_dtn_ms(tern_loop_clock(n->loop));
    if (!(c->argc >= 2 &&
          (strcmp(c->argv[1], "contact") == 0 || strcmp(c->argv[1], "range") == 0))) {
        static const char *const runtime[] = {
            "a contact", "d contact", "l contact", "a range", "d range", "l range", NULL};
        not_at_runtime(c, "ionadmin", runtime, "a|d|l contact, a|d|l range", out, cap);
        return -ENOTSUP;
    }
    int rc = bp_ionadmin_apply(n->cfg.plan, c, now, out, cap);
    if (rc < 0)
        return rc;
    if (c->argv[0][0] != 'l') {
        node__contacts_apply(n); /* spans up or down, new light times */
        if (n->cgr)
            bp_cgr_plan_changed(n->cgr); /* new routes, gates, limbo routed again */
        int s = bp_plan_save(n->cfg.plan, n->store);
        if (s)
            TERN_WARN(n->lg, "admin", "contact plan not saved: %s", tern_strerror(s));
        TERN_INFO(n->lg, "admin", "ionadmin: %s %s applied", c->argv[0], c->argv[1]);
        if (!out[0])
            snprintf(out, cap, "ok");
    }
    return 0;
}

static int ltpadmin(struct tern_node *n, const tern_rc_cmd *c, char *out, size_t cap)
{
    int listing =
        c->argc >= 1 && (strcmp(c->argv[0], "l") == 0 || strcmp(c->argv[0], "i") == 0);
    if (!listing && !is(c, "a", "span")) {
        static const char *const runtime[] = {"a span", "l span", "i span",
                                              "l seat", "i seat", NULL};
        not_at_runtime(c, "ltpadmin", runtime, "a span, l span, i span, l seat, i seat",
                       out, cap);
        return -ENOTSUP;
    }
    if (!n->eng) {
        snprintf(out, cap, "this node runs no LTP engine (no ltpadmin section)");
        return TERN_ENOTFOUND;
    }
    size_t before = n->cfg.ltp.nspans;
    int rc = ltp_admin_apply(&n->cfg.ltp, c, out, cap);
    if (rc >= 0 && listing && c->argc == 2 && strcmp(c->argv[1], "seat") == 0) {
        /* the seat may say port 0: say which port it got */
        size_t len = strlen(out);
        snprintf(out + len, cap - len, "listening on UDP port %u\n",
                 ltp_udp_port(n->lsu));
    }
    if (rc >= 0 && listing && c->argc >= 2 && strcmp(c->argv[1], "span") == 0) {
        /* what the engine uses now (light times from the contact plan's
         * ranges, ...), not only what the host.rc said */
        uint64_t peer = c->argc == 3 ? strtoull(c->argv[2], NULL, 10) : 0;
        ltp_admin_list_spans_live(&n->cfg.ltp, n->eng, peer, out, cap);
    }
    if (rc < 0 || listing)
        return rc < 0 ? rc : 0;
    if (n->cfg.ltp.nspans == before) {
        snprintf(out, cap, "span not added");
        return -EINVAL;
    }
    const ltp_admin_span *s = &n->cfg.ltp.spans[n->cfg.ltp.nspans - 1];
    if ((rc = ltp_span_add(n->eng, &s->cfg)) ||
        (rc = ltp_udp_add_peer(n->lsu, s->cfg.peer, s->lso, 0))) {
        snprintf(out, cap, "span to engine %" PRIu64 ": %s", s->cfg.peer,
                 tern_strerror(rc));
        return rc;
    }
    node__contacts_apply(n);
    TERN_INFO(n->lg, "admin", "ltpadmin: span to engine %" PRIu64 " added", s->cfg.peer);
    snprintf(out, cap, "ok");
    return 0;
}

/* Lists the live agent's endpoints or outducts. */
static void list_agent(struct tern_node *n, int ducts, char *out, size_t cap)
{
    size_t len = 0;
    out[0] = '\0';
    size_t count =
        ducts ? bp_agent_outduct_count(n->agent) : bp_agent_endpoint_count(n->agent);
    for (size_t i = 0; i < count && len < cap; i++) {
        int w;
        if (ducts) {
            const char *proto, *name;
            bool up;
            bp_outduct *od = bp_agent_outduct_at(n->agent, i);
            bp_outduct_info(od, &proto, &name, &up, NULL);
            w = snprintf(out + len, cap - len, "%s/%s %s, %zu queued\n", proto, name,
                         up ? "up" : "down", bp_outduct_queued(od));
        } else {
            bp_eid e;
            int rule;
            bool open;
            size_t q;
            char t[BP_EID_TEXT_MAX];
            bp_agent_endpoint_at(n->agent, i, &e, &rule, &open, &q);
            bp_eid_print(&e, t, sizeof t);
            w = snprintf(out + len, cap - len, "%s %c%s, %zu queued\n", t, rule,
                         open ? " (open)" : "", q);
        }
        if (w > 0)
            len += (size_t)w;
    }
}

static int parse_eid(const char *s, bp_eid *e, char *out, size_t cap)
{
    const char *why = NULL;
    int rc = bp_eid_parse(s, e, &why);
    if (rc)
        snprintf(out, cap, "'%s' is not an endpoint ID: %s", s,
                 why ? why : tern_strerror(rc));
    return rc;
}

static int bpadmin(struct tern_node *n, const tern_rc_cmd *c, char *out, size_t cap,
                   int ipn)
{
    if (!n->agent) {
        snprintf(out, cap, "this node runs no bundle agent (no bpadmin section)");
        return TERN_ENOTFOUND;
    }
    const char *op = c->argv[0], *what = c->argc > 1 ? c->argv[1] : "";
    if (!ipn && strcmp(op, "l") == 0 &&
        (strcmp(what, "endpoint") == 0 || strcmp(what, "outduct") == 0)) {
        list_agent(n, what[0] == 'o', out, cap);
        return 0;
    }
    bp_admin *cfg = &n->cfg.bp;
    size_t neps = cfg->nendpoints, nout = cfg->noutducts, nplans = cfg->nplans,
           nexits = cfg->nexits;
    int rc =
        ipn ? bp_ipnadmin_apply(cfg, c, out, cap) : bp_bpadmin_apply(cfg, c, out, cap);
    if (rc < 0)
        return rc;
    if (rc == BP_ADMIN_IGNORED)
        return 0; /* the warning is in out */
    if (strcmp(op, "l") == 0 || strcmp(op, "i") == 0)
        return 0;
    char msg[512] = "";
    if (!ipn && is(c, "a", "endpoint") && cfg->nendpoints > neps) {
        const bp_admin_endpoint *e = &cfg->endpoints[cfg->nendpoints - 1];
        rc = bp_endpoint_add(n->agent, &e->eid, e->rule);
    } else if (!ipn && is(c, "c", "endpoint") && c->argc >= 3) {
        bp_eid e;
        if ((rc = parse_eid(c->argv[2], &e, out, cap)))
            return rc;
        rc = bp_endpoint_change(n->agent, &e,
                                c->argc >= 4 && c->argv[3][0] == 'q' ? BP_RECV_QUEUE
                                                                     : BP_RECV_DISCARD);
    } else if (!ipn && is(c, "d", "endpoint") && c->argc >= 3) {
        bp_eid e;
        if ((rc = parse_eid(c->argv[2], &e, out, cap)))
            return rc;
        rc = bp_endpoint_del(n->agent, &e);
    } else if (!ipn && is(c, "a", "outduct") && cfg->noutducts > nout) {
        const bp_admin_duct *d = &cfg->outducts[cfg->noutducts - 1];
        rc = bp_outduct_add(n->agent, d->protocol, d->name, d->cmd, d->max_payload);
    } else if (!ipn && is(c, "d", "outduct") && c->argc >= 4) {
        rc = bp_outduct_del(n->agent, c->argv[2], c->argv[3]);
    } else if (ipn && is(c, "a", "plan") && cfg->nplans > nplans) {
        const bp_admin_plan *p = &cfg->plans[cfg->nplans - 1];
        if (!bp_outduct_find(n->agent, p->protocol, p->duct)) {
            snprintf(out, cap,
                     "a plan %" PRIu64 ": no outduct %s/%s; add it first (bpadmin 'a "
                     "outduct %s %s ...')",
                     p->node, p->protocol, p->duct, p->protocol, p->duct);
            cfg->nplans--; /* not in effect: not recorded */
            return TERN_ENOTFOUND;
        }
        rc = bp_egress_plan_add(n->agent, p->node, p->protocol, p->duct);
    } else if (ipn && is(c, "d", "plan") && c->argc >= 3) {
        rc = bp_egress_plan_del(n->agent, strtoull(c->argv[2], NULL, 10));
    } else if (ipn && is(c, "a", "exit") && cfg->nexits > nexits) {
        const bp_admin_exit *x = &cfg->exits[cfg->nexits - 1];
        rc = bp_egress_exit_add(n->agent, x->first, x->last, x->gateway.node);
    } else if (ipn && is(c, "d", "exit") && c->argc >= 3) {
        rc = bp_egress_exit_del(n->agent, strtoull(c->argv[2], NULL, 10));
    } else {
        snprintf(
            out, cap,
            "%s '%s %s' is recorded but takes effect only from the host.rc at the next "
            "start; at runtime: %s",
            ipn ? "ipnadmin" : "bpadmin", op, what,
            ipn ? "a|d plan, a|d exit, l plan|exit"
                : "a|c|d endpoint, a|d outduct, l endpoint|outduct|induct|plan");
        return 0;
    }
    if (rc) {
        snprintf(out, cap, "%s %s: %s", op, what, msg[0] ? msg : tern_strerror(rc));
        return rc;
    }
    if (n->cgr)
        bp_cgr_plan_changed(n->cgr); /* plans and ducts are fallbacks and hops */
    TERN_INFO(n->lg, "admin", "%s: %s %s applied", ipn ? "ipnadmin" : "bpadmin", op,
              what);
    snprintf(out, cap, "ok");
    return 0;
}

int node__admin(struct tern_node *n, const char *module, const char *line, char *out,
                size_t cap)
{
    tern_rc *rcf = NULL;
    char section[64];
    snprintf(section, sizeof section, "%s", module);
    out[0] = '\0';
    int rc = tern_rc_parse(&rcf, "admin", line, strlen(line), section);
    if (rc == -ENOMEM)
        return rc;
    if (tern_rc_error_count(rcf)) {
        int is_err;
        snprintf(out, cap, "%s", tern_rc_diag_at(rcf, 0, &is_err));
        tern_rc_free(rcf);
        return TERN_ESYNTAX;
    }
    rc = 0;
    for (size_t i = 0; i < tern_rc_count(rcf) && rc >= 0; i++) {
        const tern_rc_cmd *c = tern_rc_at(rcf, i);
        if (strcmp(module, "ionadmin") == 0)
            rc = ionadmin(n, c, out, cap);
        else if (strcmp(module, "ltpadmin") == 0)
            rc = ltpadmin(n, c, out, cap);
        else if (strcmp(module, "bpadmin") == 0)
            rc = bpadmin(n, c, out, cap, 0);
        else if (strcmp(module, "ipnadmin") == 0)
            rc = bpadmin(n, c, out, cap, 1);
        else {
            static const char *const modules[] = {"ionadmin", "ltpadmin", "bpadmin",
                                                  "ipnadmin", NULL};
            char dym[200];
            snprintf(out, cap,
                     "unknown module '%s'%s; expected ionadmin, ltpadmin, bpadmin or "
                     "ipnadmin",
                     module,
                     tern_did_you_mean(tern_suggest(module, modules), dym, sizeof dym));
            rc = -EINVAL;
        }
    }
    if (rc < 0)
        TERN_WARN(n->lg, "admin", "%s '%s' refused: %s", module, line, out);
    tern_rc_free(rcf);
    return rc;
}
