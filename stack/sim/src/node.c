/* A simulated node: store, logger, contact plan, LTP engine, agent and LTP
 * convergence layer, configured from an ION host.rc text. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ltp_admin.h"
#include "sim_int.h"
#include "tern/rc.h"

#include "bp_hostrc.h"

static int node_notice(void *ctx, const ltp_notice *no)
{
    struct sim_node *n = ctx;
    if (n->cla && no->client == BP_LTP_CLIENT)
        return bp_ltp_cla_notice(n->cla, no);
    if (no->kind == LTP_RED_PART) {
        n->red_parts++;
        n->red_bytes += no->len;
        sim__delivered(n);
    }
    if (n->hook)
        return n->hook(n->hook_ctx, n->number, no);
    return 0;
}

static void node_deliverable(void *ctx, const bp_eid *ep)
{
    sim__delivered(ctx);
}

void sim__node_link_state(struct sim_node *n, uint64_t peer, int up)
{
    if (n->eng)
        ltp_span_link(n->eng, peer, up); /* no span for that peer: nothing to tell */
    if (n->agent) {
        char duct[24];
        snprintf(duct, sizeof duct, "%" PRIu64, peer);
        bp_outduct *od = bp_outduct_find(n->agent, "ltp", duct);
        if (od)
            bp_outduct_set_up(od, up != 0);
    }
}

void sim__node_span_owlt(struct sim_node *n, uint64_t peer, uint64_t delay_ms)
{
    uint32_t owlt_s;
    if (!n->eng)
        return;
    /* A contact plan's range outranks the link's delay. */
    if (bp_plan_owlt(n->plan, n->number, peer, tern_clock_dtn_ms(n->sim->clk), &owlt_s) ==
        0)
        return;
    ltp_span_set_owlt(n->eng, peer,
                      delay_ms > UINT32_MAX ? UINT32_MAX : (unsigned)delay_ms);
}

int sim__node_set_cgr(struct sim_node *n, int on)
{
    if (!n->agent)
        return TERN_ESTATE;
    if (!on) {
        bp_cgr_free(n->cgr);
        n->cgr = NULL;
        return 0;
    }
    if (n->cgr)
        return 0;
    int rc = bp_cgr_new(n->plan, n->number, NULL, n->lg, &n->cgr);
    if (!rc && (rc = bp_cgr_attach(n->cgr, n->agent))) {
        bp_cgr_free(n->cgr);
        n->cgr = NULL;
    }
    return rc;
}

#define FAIL(rcode, ...)                                                                 \
    do {                                                                                 \
        if (err && errlen)                                                               \
            snprintf(err, errlen, __VA_ARGS__);                                          \
        rc = (rcode);                                                                    \
        goto out;                                                                        \
    } while (0)

int sim__node_new(tern_sim *s, const char *name, const char *text, char *err,
                  size_t errlen, struct sim_node **out)
{
    int rc;
    char msg[1024];
    bp_hostrc cfg;
    struct sim_node *n = NULL;
    uint64_t now = tern_clock_dtn_ms(s->clk);

    rc = bp_hostrc_read(&cfg, name, text, strlen(text), now, err, errlen);
    if (rc)
        goto out;
    n = calloc(1, sizeof *n);
    if (!n) {
        rc = -ENOMEM;
        goto out;
    }
    n->sim = s;
    n->plan = cfg.plan; /* the node keeps the plan */
    cfg.plan = NULL;
    n->number = bp_plan_node(n->plan);
    if (sim__node(s, n->number))
        FAIL(TERN_EEXIST, "%s: node %" PRIu64 " exists already in this simulation", name,
             n->number);
    if (s->log_dir) {
        char path[4096], lname[32];
        snprintf(lname, sizeof lname, "node%" PRIu64, n->number);
        if (snprintf(path, sizeof path, "%s/node%" PRIu64 ".log", s->log_dir,
                     n->number) >= (int)sizeof path)
            FAIL(-ENAMETOOLONG, "%s: log directory path too long", name);
        rc = tern_log_open(&n->lg, lname, path, s->log_level, 0);
        if (rc)
            FAIL(rc, "%s: cannot open log %s: %s", name, path, tern_strerror(rc));
        tern_log_set_clock(n->lg, s->clk);
    }
    for (size_t i = 0; i < cfg.nwarnings; i++)
        TERN_WARN(n->lg, "sim", "%s", cfg.warnings[i]);

    char sname[32], why[512] = "";
    snprintf(sname, sizeof sname, "node%" PRIu64, n->number);
    sdr_profile prof = {.name = sname, .heap_size = s->heap_bytes, .mode = SDR_MEMORY};
    rc = sdr_open(&prof, &n->store, why, sizeof why);
    if (rc)
        FAIL(rc, "%s: cannot create the node's store: %s", name,
             why[0] ? why : tern_strerror(rc));

    if (cfg.has_ltp) {
        ltp_engine_cfg ec = cfg.ltp.engine;
        ec.engine_id = n->number;
        ltp_host h = {
            .ctx = n, .send = sim__link_send, .notice = node_notice, .tx_notify = 1};
        rc = ltp_engine_new(s->loop, &ec, &h, n->lg, &n->eng);
        if (rc)
            FAIL(rc, "%s: cannot create the LTP engine: %s", name, tern_strerror(rc));
        for (size_t i = 0; i < cfg.ltp.nspans; i++) {
            ltp_span_cfg sc = cfg.ltp.spans[i].cfg;
            uint32_t owlt_s;
            if (bp_plan_owlt(n->plan, n->number, sc.peer, now, &owlt_s) == 0)
                sc.owlt_ms = owlt_s * 1000u;
            rc = ltp_span_add(n->eng, &sc);
            if (rc)
                FAIL(rc, "%s: span to engine %" PRIu64 ": %s", name, sc.peer,
                     tern_strerror(rc));
        }
    }

    if (cfg.has_bp) {
        bp_agent_cfg ac = {.node = n->number, .store = n->store};
        bp_agent_host ah = {.ctx = n, .deliverable = node_deliverable};
        rc = bp_agent_new(s->loop, &ac, &ah, n->lg, &n->agent);
        if (rc)
            FAIL(rc, "%s: cannot create the bundle agent: %s", name, tern_strerror(rc));
        if (n->eng) {
            rc = bp_ltp_cla_new(n->agent, n->eng, 0, &n->cla);
            if (rc)
                FAIL(rc, "%s: cannot create the LTP convergence layer: %s", name,
                     tern_strerror(rc));
        }
        msg[0] = '\0';
        rc = bp_admin_configure(&cfg.bp, n->agent, msg, sizeof msg);
        if (rc < 0)
            FAIL(rc, "%s", msg[0] ? msg : tern_strerror(rc));
        rc = 0;
        if (s->cgr && (rc = sim__node_set_cgr(n, 1)))
            FAIL(rc, "%s: cannot start contact graph routing: %s", name,
                 tern_strerror(rc));
    }
    *out = n;
    n = NULL;
    rc = 0;
out:
    sim__node_free(n);
    bp_hostrc_free(&cfg);
    return rc;
}

void sim__node_free(struct sim_node *n)
{
    if (!n)
        return;
    for (struct sim_stash *st = n->stash, *nx; st; st = nx) {
        nx = st->next;
        bp_delivery_release(&st->d);
        free(st);
    }
    /* The agent closes its outducts, cancelling LTP exports, and the engine
     * gives notices for them (some while the convergence layer walks its own
     * list): during teardown no notice may reach the agent or the CLA. */
    bp_ltp_cla *cla = n->cla;
    n->cla = NULL;
    n->hook = NULL;
    bp_cgr_free(n->cgr);
    n->cgr = NULL;
    bp_agent_free(n->agent);
    n->agent = NULL;
    bp_ltp_cla_free(cla);
    ltp_engine_free(n->eng);
    sdr_close(n->store);
    bp_plan_free(n->plan);
    tern_log_close(n->lg);
    free(n->peers);
    free(n);
}
