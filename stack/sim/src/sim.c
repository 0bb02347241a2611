/* tern_sim: the simulation object, its generator, links, outages, running
 * and counters. Nodes are built in node.c, link directions run in link.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_int.h"
#include "tern/rc.h"

TERN_API int tern_sim_abi_version(void)
{
    return TERN_SIM_ABI_VERSION;
}

/* ---------------------------------------------------------------- generator */

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

/* xoshiro256** */
TERN_API uint64_t tern_sim_random(tern_sim *s)
{
    uint64_t *r = s->rng;
    uint64_t out = rotl(r[1] * 5, 7) * 9;
    uint64_t t = r[1] << 17;
    r[2] ^= r[0];
    r[3] ^= r[1];
    r[1] ^= r[2];
    r[0] ^= r[3];
    r[2] ^= t;
    r[3] = rotl(r[3], 45);
    return out;
}

double sim__unit(tern_sim *s)
{
    return (double)(tern_sim_random(s) >> 11) * (1.0 / 9007199254740992.0);
}

/* ---------------------------------------------------------------- lifecycle */

TERN_API int tern_sim_new(const tern_sim_cfg *cfg, tern_sim **out)
{
    static const tern_sim_cfg defaults = {0};
    int rc;
    if (!out)
        return -EINVAL;
    *out = NULL;
    if (!cfg)
        cfg = &defaults;
    if (cfg->log_level < 0 || cfg->log_level > TERN_LOG_TRACE ||
        (cfg->heap_bytes && cfg->heap_bytes < 65536))
        return -EINVAL;
    tern_sim *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    uint64_t x = cfg->seed;
    for (int i = 0; i < 4; i++)
        s->rng[i] = splitmix64(&x);
    s->start_dtn_ms = cfg->start_dtn_ms ? cfg->start_dtn_ms : TERN_SIM_DEFAULT_START_MS;
    s->heap_bytes = cfg->heap_bytes ? cfg->heap_bytes : UINT64_C(256) << 20;
    s->log_level = cfg->log_level;
    if (cfg->log_dir && !(s->log_dir = strdup(cfg->log_dir))) {
        rc = -ENOMEM;
        goto fail_sim;
    }
    rc = tern_clock_virtual_new(s->start_dtn_ms, &s->clk);
    if (rc)
        goto fail_dir;
    rc = tern_loop_new(s->clk, &s->loop);
    if (rc)
        goto fail_clock;
    *out = s;
    return 0;
fail_clock:
    tern_clock_free(s->clk);
fail_dir:
    free(s->log_dir);
fail_sim:
    free(s);
    return rc;
}

TERN_API void tern_sim_free(tern_sim *s)
{
    if (!s)
        return;
    for (struct sim_outage *o = s->outages, *nx; o; o = nx) {
        nx = o->next;
        tern_timer_stop(&o->timer);
        free(o);
    }
    /* Nodes first, with links refusing segments: freeing an engine or an
     * agent may still try to send (cancels). Then the queues. */
    s->closing = 1;
    for (size_t i = 0; i < s->nnodes; i++)
        sim__node_free(s->nodes[i]);
    free(s->nodes);
    for (size_t i = 0; i < s->ndirs; i++)
        sim__dir_free(s->dirs[i]);
    free(s->dirs);
    /* A component that left a handle or deferred call on the loop is a bug:
     * say so, and leak the loop and its clock rather than free them under it. */
    if (tern_loop_close(s->loop) != 0) {
        TERN_ERROR(NULL, "sim", "loop still has %zu active handles at free; leaked",
                   tern_loop_alive(s->loop));
        free(s->log_dir);
        free(s);
        return;
    }
    tern_clock_free(s->clk);
    free(s->log_dir);
    free(s);
}

/* -------------------------------------------------------------------- nodes */

static size_t node_pos(const tern_sim *s, uint64_t number)
{
    size_t lo = 0, hi = s->nnodes;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->nodes[mid]->number < number)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

struct sim_node *sim__node(const tern_sim *s, uint64_t number)
{
    size_t i = node_pos(s, number);
    return i < s->nnodes && s->nodes[i]->number == number ? s->nodes[i] : NULL;
}

TERN_API int tern_sim_node_add(tern_sim *s, const char *name, const char *rc, char *err,
                               size_t errlen, uint64_t *node)
{
    if (err && errlen)
        err[0] = '\0';
    if (!s || !rc)
        return -EINVAL;
    if (s->nnodes == s->capnodes) {
        size_t nc = s->capnodes ? 2 * s->capnodes : 16;
        struct sim_node **p = realloc(s->nodes, nc * sizeof *p);
        if (!p)
            return -ENOMEM;
        s->nodes = p;
        s->capnodes = nc;
    }
    char defname[32];
    if (!name) {
        snprintf(defname, sizeof defname, "node%zu.rc", s->added + 1);
        name = defname;
    }
    struct sim_node *n;
    int r = sim__node_new(s, name, rc, err, errlen, &n);
    if (r)
        return r;
    size_t i = node_pos(s, n->number);
    memmove(s->nodes + i + 1, s->nodes + i, (s->nnodes - i) * sizeof *s->nodes);
    s->nodes[i] = n;
    s->nnodes++;
    s->added++;
    if (node)
        *node = n->number;
    return 0;
}

TERN_API size_t tern_sim_node_count(const tern_sim *s)
{
    return s ? s->nnodes : 0;
}

TERN_API uint64_t tern_sim_node_at(const tern_sim *s, size_t i)
{
    return s && i < s->nnodes ? s->nodes[i]->number : 0;
}

TERN_API bp_agent *tern_sim_node_agent(const tern_sim *s, uint64_t node)
{
    struct sim_node *n = s ? sim__node(s, node) : NULL;
    return n ? n->agent : NULL;
}

TERN_API ltp_engine *tern_sim_node_engine(const tern_sim *s, uint64_t node)
{
    struct sim_node *n = s ? sim__node(s, node) : NULL;
    return n ? n->eng : NULL;
}

TERN_API sdr *tern_sim_node_store(const tern_sim *s, uint64_t node)
{
    struct sim_node *n = s ? sim__node(s, node) : NULL;
    return n ? n->store : NULL;
}

TERN_API tern_log *tern_sim_node_log(const tern_sim *s, uint64_t node)
{
    struct sim_node *n = s ? sim__node(s, node) : NULL;
    return n ? n->lg : NULL;
}

TERN_API int tern_sim_node_ltp_hook(tern_sim *s, uint64_t node, tern_sim_ltp_fn fn,
                                    void *ctx)
{
    struct sim_node *n = s ? sim__node(s, node) : NULL;
    if (!n)
        return TERN_ENOTFOUND;
    n->hook = fn;
    n->hook_ctx = ctx;
    return 0;
}

void sim__delivered(struct sim_node *n)
{
    tern_sim *s = n->sim;
    n->deliveries++;
    s->deliveries++;
    if (s->stop_at && s->deliveries >= s->stop_at)
        tern_loop_stop(s->loop);
}

/* -------------------------------------------------------------------- links */

static size_t peer_pos(const struct sim_node *n, uint64_t peer)
{
    size_t lo = 0, hi = n->npeers;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (n->peers[mid].peer < peer)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

struct sim_dir *sim__dir(const struct sim_node *n, uint64_t peer)
{
    if (n->last_peer < n->npeers && n->peers[n->last_peer].peer == peer)
        return n->peers[n->last_peer].dir;
    size_t i = peer_pos(n, peer);
    if (i < n->npeers && n->peers[i].peer == peer) {
        ((struct sim_node *)n)->last_peer = i;
        return n->peers[i].dir;
    }
    return NULL;
}

static int check_link_args(uint64_t delay_ms, double loss)
{
    if (!(loss >= 0.0 && loss <= 1.0) || delay_ms > UINT64_MAX / TERN_NS_PER_MS / 4)
        return -EINVAL;
    return 0;
}

/* Makes room for both directions first, so adding a link either fully
 * succeeds or changes nothing. */
static int reserve(tern_sim *s, struct sim_node *a, struct sim_node *b)
{
    if (s->ndirs + 2 > s->capdirs) {
        size_t nc = s->capdirs ? 2 * s->capdirs : 16;
        struct sim_dir **p = realloc(s->dirs, nc * sizeof *p);
        if (!p)
            return -ENOMEM;
        s->dirs = p;
        s->capdirs = nc;
    }
    struct sim_node *ns[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        struct sim_node *n = ns[i];
        if (n->npeers + 1 > n->cappeers) {
            size_t nc = n->cappeers ? 2 * n->cappeers : 4;
            struct sim_peer *p = realloc(n->peers, nc * sizeof *p);
            if (!p)
                return -ENOMEM;
            n->peers = p;
            n->cappeers = nc;
        }
    }
    return 0;
}

static void dir_add(tern_sim *s, struct sim_dir *d)
{
    struct sim_node *n = d->from;
    size_t i = peer_pos(n, d->to->number);
    memmove(n->peers + i + 1, n->peers + i, (n->npeers - i) * sizeof *n->peers);
    n->peers[i].peer = d->to->number;
    n->peers[i].dir = d;
    n->npeers++;
    s->dirs[s->ndirs++] = d;
    sim__node_span_owlt(n, d->to->number, d->delay_ns / TERN_NS_PER_MS);
}

static struct sim_dir *dir_new(tern_sim *s, struct sim_node *from, struct sim_node *to,
                               uint64_t delay_ms, uint64_t rate, double loss)
{
    struct sim_dir *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    d->sim = s;
    d->from = from;
    d->to = to;
    d->delay_ns = delay_ms * TERN_NS_PER_MS;
    d->rate = rate;
    d->loss = loss;
    d->told_up = 1;
    tern_timer_init(s->loop, &d->timer);
    return d;
}

TERN_API int tern_sim_link_add(tern_sim *s, uint64_t a, uint64_t b, uint64_t delay_ms,
                               uint64_t rate, double loss, unsigned flags)
{
    if (!s || a == b || check_link_args(delay_ms, loss) ||
        (flags & ~(TERN_SIM_ONE_WAY | TERN_SIM_CONTACTS)))
        return -EINVAL;
    struct sim_node *na = sim__node(s, a), *nb = sim__node(s, b);
    if (!na || !nb)
        return TERN_ENOTFOUND;
    if (!na->eng || !nb->eng)
        return TERN_ESTATE;
    int both = !(flags & TERN_SIM_ONE_WAY);
    if (sim__dir(na, b) || (both && sim__dir(nb, a)))
        return TERN_EEXIST;
    int rc = reserve(s, na, nb);
    if (rc)
        return rc;
    struct sim_dir *ab = dir_new(s, na, nb, delay_ms, rate, loss);
    struct sim_dir *ba = both ? dir_new(s, nb, na, delay_ms, rate, loss) : NULL;
    if (!ab || (both && !ba)) {
        free(ab);
        free(ba);
        return -ENOMEM;
    }
    dir_add(s, ab);
    if (ba)
        dir_add(s, ba);
    if (flags & TERN_SIM_CONTACTS) {
        struct sim_dir *ds[2] = {ab, ba};
        for (int i = 0; i < 2; i++) {
            if (!ds[i])
                continue;
            ds[i]->follow = 1;
            ds[i]->cst.follows = 1;
            ds[i]->base_delay_ns = ds[i]->delay_ns;
            tern_timer_init(s->loop, &ds[i]->ctimer);
            sim__dir_contacts(ds[i]);
        }
    }
    return 0;
}

TERN_API int tern_sim_link_set(tern_sim *s, uint64_t a, uint64_t b, uint64_t delay_ms,
                               uint64_t rate, double loss)
{
    if (!s || check_link_args(delay_ms, loss))
        return -EINVAL;
    struct sim_node *na = sim__node(s, a);
    struct sim_dir *d = na ? sim__dir(na, b) : NULL;
    if (!d)
        return TERN_ENOTFOUND;
    d->delay_ns = delay_ms * TERN_NS_PER_MS;
    d->base_delay_ns = d->delay_ns;
    d->rate = rate;
    d->loss = loss;
    return 0;
}

static void dir_down(struct sim_dir *d, int down, int loud)
{
    if (!d)
        return;
    if (down) {
        d->down++;
        d->loud_down += loud != 0;
    } else {
        d->down--;
        d->loud_down -= loud != 0;
    }
    d->st.down = d->down ? 1 : 0;
    sim__dir_tell(d);
}

static void outage_fire(tern_timer *t, void *arg)
{
    struct sim_outage *o = arg;
    int loud = !(o->flags & TERN_SIM_SILENT);
    if (!o->started) {
        o->started = 1;
        dir_down(o->dir[0], 1, loud);
        dir_down(o->dir[1], 1, loud);
        tern_timer_start_at(&o->timer, outage_fire, o, o->until_ns, 0);
        return;
    }
    dir_down(o->dir[0], 0, loud);
    dir_down(o->dir[1], 0, loud);
}

TERN_API int tern_sim_outage_add(tern_sim *s, uint64_t a, uint64_t b, uint64_t from_ms,
                                 uint64_t until_ms, unsigned flags)
{
    if (!s || until_ms <= from_ms || (flags & ~TERN_SIM_SILENT) ||
        until_ms > UINT64_MAX / TERN_NS_PER_MS)
        return -EINVAL;
    struct sim_node *na = sim__node(s, a), *nb = sim__node(s, b);
    if (!na || !nb)
        return TERN_ENOTFOUND;
    struct sim_dir *ab = sim__dir(na, b), *ba = sim__dir(nb, a);
    if (!ab && !ba)
        return TERN_ENOTFOUND;
    uint64_t now = tern_loop_now(s->loop);
    if (until_ms * TERN_NS_PER_MS <= now)
        return 0; /* entirely past */
    struct sim_outage *o = calloc(1, sizeof *o);
    if (!o)
        return -ENOMEM;
    o->sim = s;
    o->dir[0] = ab;
    o->dir[1] = ba;
    o->until_ns = until_ms * TERN_NS_PER_MS;
    o->flags = flags;
    tern_timer_init(s->loop, &o->timer);
    uint64_t from_ns = from_ms * TERN_NS_PER_MS;
    int rc =
        tern_timer_start_at(&o->timer, outage_fire, o, from_ns < now ? now : from_ns, 0);
    if (rc) {
        free(o);
        return rc;
    }
    o->next = s->outages;
    s->outages = o;
    return 0;
}

TERN_API int tern_sim_link_stats_get(const tern_sim *s, uint64_t a, uint64_t b,
                                     tern_sim_link_stats *st)
{
    struct sim_node *na = s ? sim__node(s, a) : NULL;
    struct sim_dir *d = na ? sim__dir(na, b) : NULL;
    if (!d || !st)
        return d ? -EINVAL : TERN_ENOTFOUND;
    *st = d->st;
    return 0;
}

TERN_API int tern_sim_link_contact_stats(const tern_sim *s, uint64_t a, uint64_t b,
                                         tern_sim_contact_stats *st)
{
    struct sim_node *na = s ? sim__node(s, a) : NULL;
    struct sim_dir *d = na ? sim__dir(na, b) : NULL;
    if (!d || !st)
        return d ? -EINVAL : TERN_ENOTFOUND;
    *st = d->cst;
    return 0;
}

/* ---------------------------------------------------- contact graph routing */

TERN_API int tern_sim_set_cgr(tern_sim *s, int on)
{
    if (!s)
        return -EINVAL;
    s->cgr = on != 0;
    for (size_t i = 0; i < s->nnodes; i++)
        if (s->nodes[i]->agent) {
            int rc = sim__node_set_cgr(s->nodes[i], on);
            if (rc)
                return rc;
        }
    return 0;
}

TERN_API int tern_sim_node_cgr(tern_sim *s, uint64_t node, int on)
{
    struct sim_node *n = s ? sim__node(s, node) : NULL;
    if (!n)
        return s ? TERN_ENOTFOUND : -EINVAL;
    return sim__node_set_cgr(n, on);
}

TERN_API int tern_sim_node_ionadmin(tern_sim *s, uint64_t node, const char *cmds,
                                    char *out, size_t cap)
{
    struct sim_node *n = s ? sim__node(s, node) : NULL;
    if (out && cap)
        out[0] = '\0';
    if (!n || !cmds)
        return n || !s ? -EINVAL : TERN_ENOTFOUND;
    tern_rc *rcf;
    int rc = tern_rc_parse(&rcf, "ionadmin", cmds, strlen(cmds), "ionadmin");
    if (rc < 0 && rc != TERN_ESYNTAX)
        return rc;
    if (tern_rc_error_count(rcf)) {
        int is_err;
        if (out && cap)
            snprintf(out, cap, "%s", tern_rc_diag_at(rcf, 0, &is_err));
        tern_rc_free(rcf);
        return TERN_ESYNTAX;
    }
    uint64_t now = tern_clock_dtn_ms(s->clk);
    int changed = 0;
    rc = 0;
    for (size_t i = 0; i < tern_rc_count(rcf) && rc >= 0; i++) {
        const tern_rc_cmd *c = tern_rc_at(rcf, i);
        if (c->argc < 2 ||
            (strcmp(c->argv[1], "contact") && strcmp(c->argv[1], "range"))) {
            if (out && cap)
                snprintf(out, cap,
                         "%s:%u: ionadmin '%s' is not taken at run time; expected a|d|l "
                         "contact or a|d|l range",
                         c->file, c->line, c->argv[0]);
            rc = -ENOTSUP;
            break;
        }
        rc = bp_ionadmin_apply(n->plan, c, now, out, cap);
        changed |= rc >= 0 && c->argv[0][0] != 'l';
    }
    tern_rc_free(rcf);
    if (changed) {
        if (n->cgr) {
            int r = bp_cgr_plan_changed(n->cgr);
            if (r && rc >= 0)
                rc = r;
        }
        for (size_t i = 0; i < n->npeers; i++) {
            struct sim_dir *d = n->peers[i].dir;
            if (d->follow)
                sim__dir_contacts(d);
            sim__node_span_owlt(n, d->to->number, d->base_delay_ns / TERN_NS_PER_MS);
        }
    }
    return rc < 0 ? rc : 0;
}

TERN_API int tern_sim_cgr_route(tern_sim *s, uint64_t node, uint64_t dest, uint64_t size,
                                uint64_t lifetime_ms, int priority, uint64_t *nodes,
                                uint64_t *from_ms, size_t cap, uint64_t *arrival_ms)
{
    struct sim_node *n = s ? sim__node(s, node) : NULL;
    if (!n)
        return s ? TERN_ENOTFOUND : -EINVAL;
    if (!n->cgr)
        return TERN_ESTATE;
    uint64_t now = tern_clock_dtn_ms(s->clk);
    bp_cgr_bundle b = {.dest = dest,
                       .size = size,
                       .expire_ms = lifetime_ms ? now + lifetime_ms : UINT64_MAX,
                       .priority = priority};
    bp_cgr_route r;
    int rc = bp_cgr_find(n->cgr, now, &b, &r);
    if (rc)
        return rc;
    for (unsigned h = 0; h < r.nhops && h < cap; h++) {
        if (nodes)
            nodes[h] = r.hops[h].to_node;
        if (from_ms)
            from_ms[h] = r.hops[h].from_ms > s->start_dtn_ms
                             ? r.hops[h].from_ms - s->start_dtn_ms
                             : 0;
    }
    if (arrival_ms)
        *arrival_ms = r.arrival_ms > s->start_dtn_ms ? r.arrival_ms - s->start_dtn_ms : 0;
    return (int)r.nhops;
}

static const char *const cgr_names[] = {
    "contacts",    "no_range",    "nodes",       "searches",     "lists",
    "routed",      "off_list",    "unknown",     "too_late",     "no_capacity",
    "reforwarded", "gate_opened", "gate_closed", "plan_changes", "bookings_live",
};
#define NCGR (sizeof cgr_names / sizeof cgr_names[0])
_Static_assert(sizeof(bp_cgr_stats) == NCGR * sizeof(uint64_t),
               "cgr_names must name every counter of bp_cgr_stats");

TERN_API int tern_sim_cgr_counters(const tern_sim *s, uint64_t node, uint64_t *vals,
                                   size_t cap)
{
    struct sim_node *n = s ? sim__node(s, node) : NULL;
    if (!n)
        return s ? TERN_ENOTFOUND : -EINVAL;
    if (!n->cgr)
        return TERN_ESTATE;
    bp_cgr_stats st;
    bp_cgr_stats_get(n->cgr, &st);
    uint64_t all[NCGR];
    memcpy(all, &st, sizeof all);
    if (vals)
        memcpy(vals, all, (cap < NCGR ? cap : NCGR) * sizeof *vals);
    return (int)NCGR;
}

TERN_API const char *tern_sim_cgr_counter_name(size_t i)
{
    return i < NCGR ? cgr_names[i] : NULL;
}

TERN_API int tern_sim_cgr_status(const tern_sim *s, uint64_t node, char *buf, size_t cap)
{
    struct sim_node *n = s ? sim__node(s, node) : NULL;
    if (!n || !buf)
        return n ? -EINVAL : TERN_ENOTFOUND;
    if (!n->cgr)
        return TERN_ESTATE;
    bp_cgr_status(n->cgr, tern_clock_dtn_ms(s->clk), buf, cap);
    return 0;
}

/* ------------------------------------------------------------------ bundles */

static int parse_eid(const char *text, bp_eid *e)
{
    if (!text)
        return -EINVAL;
    int rc = bp_eid_parse(text, e, NULL);
    return rc == TERN_EOVERFLOW ? TERN_ESYNTAX : rc;
}

TERN_API int tern_sim_send(tern_sim *s, uint64_t node, const char *src, const char *dest,
                           const void *payload, size_t len, uint64_t lifetime_ms,
                           int priority, unsigned ordinal, uint64_t flags,
                           uint64_t hop_limit, const char *report_to, uint64_t *ctime_ms,
                           uint64_t *seq)
{
    struct sim_node *n = s ? sim__node(s, node) : NULL;
    if (!n)
        return s ? TERN_ENOTFOUND : -EINVAL;
    if (!n->agent)
        return TERN_ESTATE;
    if (!payload && len)
        return -EINVAL;
    bp_eid e_src, e_dest, e_rpt;
    int rc = parse_eid(src, &e_src);
    if (!rc)
        rc = parse_eid(dest, &e_dest);
    if (!rc && report_to)
        rc = parse_eid(report_to, &e_rpt);
    if (rc)
        return rc;
    bp_send_opts o;
    bp_send_opts_init(&o);
    if (lifetime_ms)
        o.lifetime_ms = lifetime_ms;
    o.priority = priority;
    o.ordinal = ordinal;
    o.flags = flags;
    o.hop_limit = hop_limit;
    o.report_to = report_to ? &e_rpt : NULL;
    bp_bundle_ref ref;
    rc = bp_agent_send(n->agent, &e_src, &e_dest, &o, payload ? payload : "", len, &ref);
    if (rc)
        return rc;
    if (ctime_ms)
        *ctime_ms = ref.ctime_ms;
    if (seq)
        *seq = ref.seq;
    return 0;
}

TERN_API int tern_sim_recv(tern_sim *s, uint64_t node, const char *eid, char *src,
                           size_t srccap, uint64_t *ctime_ms, uint64_t *seq,
                           uint64_t *flags, void *buf, size_t cap, size_t *len)
{
    struct sim_node *n = s ? sim__node(s, node) : NULL;
    if (!n)
        return s ? TERN_ENOTFOUND : -EINVAL;
    if (!n->agent)
        return TERN_ESTATE;
    bp_eid ep;
    int rc = parse_eid(eid, &ep);
    if (rc)
        return rc;
    char canon[BP_EID_TEXT_MAX];
    if (bp_eid_print(&ep, canon, sizeof canon) < 0)
        return -EINVAL;
    struct sim_stash **pp = &n->stash, *st = NULL;
    for (; *pp; pp = &(*pp)->next)
        if (strcmp((*pp)->eid, canon) == 0) {
            st = *pp;
            break;
        }
    if (!st) {
        st = calloc(1, sizeof *st);
        if (!st)
            return -ENOMEM;
        rc = bp_agent_recv(n->agent, &ep, &st->d);
        if (rc) {
            free(st);
            return rc;
        }
        memcpy(st->eid, canon, sizeof canon);
        st->next = NULL;
        for (pp = &n->stash; *pp; pp = &(*pp)->next)
            ;
        *pp = st;
    }
    if (len)
        *len = st->d.len;
    if (st->d.len > cap || (!buf && st->d.len))
        return TERN_ENOSPACE; /* kept first in line */
    if (src && srccap) {
        rc = bp_eid_print(&st->d.src, src, srccap);
        if (rc == TERN_ENOSPACE)
            return rc;
    }
    if (ctime_ms)
        *ctime_ms = st->d.ctime_ms;
    if (seq)
        *seq = st->d.seq;
    if (flags)
        *flags = st->d.flags;
    if (st->d.len)
        memcpy(buf, st->d.payload, st->d.len);
    *pp = st->next;
    bp_delivery_release(&st->d);
    free(st);
    return 0;
}

/* ------------------------------------------------------------------ running */

TERN_API int tern_sim_run(tern_sim *s, uint64_t until_ms, uint64_t deliveries)
{
    if (!s)
        return -EINVAL;
    uint64_t deadline =
        until_ms >= UINT64_MAX / TERN_NS_PER_MS ? UINT64_MAX : until_ms * TERN_NS_PER_MS;
    if (deadline != UINT64_MAX && deadline <= tern_loop_now(s->loop) && !deliveries)
        return TERN_SIM_STOP_TIME;
    /* The network starts when it first runs: nodes configured, links
     * made, each agent resumes (multicast petitions go out then). */
    for (size_t i = 0; i < s->nnodes; i++)
        if (!s->nodes[i]->started && s->nodes[i]->agent) {
            s->nodes[i]->started = true;
            bp_agent_resume(s->nodes[i]->agent);
        }
    uint64_t target = deliveries ? s->deliveries + deliveries : 0;
    s->stop_at = target;
    int rc = tern_loop_run_until(s->loop, deadline);
    s->stop_at = 0;
    if (rc < 0)
        return rc;
    if (target && s->deliveries >= target)
        return TERN_SIM_STOP_DELIVERIES;
    if (deadline != UINT64_MAX && tern_loop_now(s->loop) >= deadline)
        return TERN_SIM_STOP_TIME;
    return TERN_SIM_STOP_IDLE;
}

TERN_API uint64_t tern_sim_now_ms(const tern_sim *s)
{
    return s ? tern_loop_now(s->loop) / TERN_NS_PER_MS : 0;
}

TERN_API uint64_t tern_sim_dtn_ms(const tern_sim *s)
{
    return s ? tern_clock_dtn_ms(s->clk) : 0;
}

TERN_API uint64_t tern_sim_deliveries(const tern_sim *s)
{
    return s ? s->deliveries : 0;
}

TERN_API tern_loop *tern_sim_loop(const tern_sim *s)
{
    return s ? s->loop : NULL;
}

TERN_API tern_clock *tern_sim_clock(const tern_sim *s)
{
    return s ? s->clk : NULL;
}

/* ----------------------------------------------------------------- counters */

TERN_API int tern_sim_node_stats_get(const tern_sim *s, uint64_t node,
                                     tern_sim_node_stats *st)
{
    struct sim_node *n = s ? sim__node(s, node) : NULL;
    if (!n || !st)
        return n ? -EINVAL : TERN_ENOTFOUND;
    memset(st, 0, sizeof *st);
    st->deliveries = n->deliveries;
    st->red_parts = n->red_parts;
    st->red_bytes = n->red_bytes;
    if (n->agent)
        bp_agent_stats_get(n->agent, &st->bp);
    if (n->eng)
        ltp_engine_stats(n->eng, &st->ltp);
    return 0;
}

/* Names in struct order; the structs hold nothing but uint64_t. */
static const char *const node_names[] = {
    "deliveries",
    "red_parts",
    "red_bytes",
    "bp.created",
    "bp.received",
    "bp.malformed",
    "bp.duplicates",
    "bp.forwarded",
    "bp.reforwarded",
    "bp.delivered",
    "bp.taken",
    "bp.discarded",
    "bp.expired",
    "bp.hop_exceeded",
    "bp.deleted",
    "bp.fragmented",
    "bp.fragments_made",
    "bp.reassembled",
    "bp.reports_sent",
    "bp.reports_received",
    "bp.reports_suppressed",
    "bp.store_errors",
    "bp.stored",
    "bp.stored_bytes",
    "bp.limbo",
    "bp.queued",
    "bp.in_flight",
    "bp.drops_told",
    "bp.file_refs",
    "bp.file_refs_lost",
    "ltp.seg_in",
    "ltp.seg_out",
    "ltp.bytes_in",
    "ltp.bytes_out",
    "ltp.malformed",
    "ltp.unknown_span",
    "ltp.stale",
    "ltp.data_retx",
    "ltp.cp_timeouts",
    "ltp.rs_timeouts",
    "ltp.exports_started",
    "ltp.exports_done",
    "ltp.exports_cancelled",
    "ltp.imports_started",
    "ltp.imports_done",
    "ltp.imports_cancelled",
    "ltp.export_sessions",
    "ltp.import_sessions",
    "ltp.closed_remembered",
    "ltp.queued_blocks",
    "ltp.send_errors",
    "ltp.store_errors",
    "ltp.imports_refused",
    "ltp.oversized",
    "ltp.bad_reports",
    "ltp.imports_over_share",
    "ltp.import_bytes",
    "ltp.segs_not_kept",
    "ltp.imports_waiting",
    "ltp.exports_waiting",
    "ltp.peer_no_room",
};

static const char *const link_names[] = {
    "sent",   "bytes_sent", "lost", "dropped", "delivered", "bytes_delivered",
    "queued", "max_queued", "down",
};

#define NNODE (sizeof node_names / sizeof node_names[0])
#define NLINK (sizeof link_names / sizeof link_names[0])

_Static_assert(sizeof(tern_sim_node_stats) == NNODE * sizeof(uint64_t),
               "node_names must name every counter of tern_sim_node_stats");
_Static_assert(sizeof(tern_sim_link_stats) == NLINK * sizeof(uint64_t),
               "link_names must name every counter of tern_sim_link_stats");

TERN_API int tern_sim_node_counters(const tern_sim *s, uint64_t node, uint64_t *vals,
                                    size_t cap)
{
    tern_sim_node_stats st;
    int rc = tern_sim_node_stats_get(s, node, &st);
    if (rc)
        return rc;
    uint64_t all[NNODE];
    memcpy(all, &st, sizeof all);
    if (vals)
        memcpy(vals, all, (cap < NNODE ? cap : NNODE) * sizeof *vals);
    return (int)NNODE;
}

TERN_API const char *tern_sim_node_counter_name(size_t i)
{
    return i < NNODE ? node_names[i] : NULL;
}

TERN_API int tern_sim_link_counters(const tern_sim *s, uint64_t a, uint64_t b,
                                    uint64_t *vals, size_t cap)
{
    tern_sim_link_stats st;
    int rc = tern_sim_link_stats_get(s, a, b, &st);
    if (rc)
        return rc;
    uint64_t all[NLINK];
    memcpy(all, &st, sizeof all);
    if (vals)
        memcpy(vals, all, (cap < NLINK ? cap : NLINK) * sizeof *vals);
    return (int)NLINK;
}

TERN_API const char *tern_sim_link_counter_name(size_t i)
{
    return i < NLINK ? link_names[i] : NULL;
}
