/* The bundle agent on a virtual clock with a fake convergence layer. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bp_agent.h"
#include "bp_imc.h"
#include "bp_ltp.h"
#include "ltp_seg.h"
#include "sdr_io.h"
#include "tern/clock.h"
#include "tern_test.h"

#define T0 849320526000ULL /* DTN ms, shortly before ION's vector bundles */

/* ---- a fake convergence layer: records what it is given ----------------- */

typedef struct sent {
    uint8_t *bytes;
    size_t len;
    uint64_t xmit;
    bp_outduct *od;
} sent;

typedef struct fake {
    int mode;          /* 0: keep pending, 1: report OK at once */
    unsigned capacity; /* pending transmissions before -EAGAIN (0: no limit) */
    size_t max_len;    /* bigger bundles get -EMSGSIZE (0: no limit) */
    sent log[4096];
    size_t n, pending;
    int opened, closed;
} fake;

typedef struct fduct {
    fake *f;
    bp_outduct *od;
} fduct;

static int f_open(void *cla, bp_outduct *od, const char *name, const char *cmd,
                  void **duct)
{
    (void)name;
    (void)cmd;
    fake *f = cla;
    fduct *d = calloc(1, sizeof *d);
    d->f = f;
    d->od = od;
    f->opened++;
    *duct = d;
    return 0;
}

static void f_close(void *cla, void *duct)
{
    ((fake *)cla)->closed++;
    free(duct);
}

static int f_send(void *cla, void *duct, const uint8_t *b, size_t len, uint64_t xmit)
{
    fake *f = cla;
    fduct *d = duct;
    if (f->capacity && f->pending >= f->capacity)
        return -EAGAIN;
    if (f->max_len && len > f->max_len)
        return -EMSGSIZE;
    CHECK(f->n < 4096);
    sent *s = &f->log[f->n++];
    s->bytes = malloc(len);
    memcpy(s->bytes, b, len);
    s->len = len;
    s->xmit = xmit;
    s->od = d->od;
    if (f->mode == 1)
        bp_outduct_result(d->od, xmit, BP_XMIT_OK);
    else
        f->pending++;
    return 0;
}

static const bp_cla_ops fake_ops = {
    .protocol = "fake", .outduct_open = f_open, .outduct_close = f_close, .send = f_send};

static void fake_free(fake *f)
{
    for (size_t i = 0; i < f->n; i++)
        free(f->log[i].bytes);
    free(f);
}

/* ---- a node: clock, loop, store, agent ---------------------------------- */

typedef struct node {
    tern_clock *clk;
    tern_loop *loop;
    sdr *store;
    bp_agent *a;
    fake *f;
    int deliverable;
    int dropped; /* host.dropped calls, the last one's values below */
    int dropped_code;
    uint64_t dropped_seq;
    char dropped_src[64], dropped_why[256];
} node;

static void on_dropped(void *ctx, const bp_eid *src, uint64_t ctime_ms, uint64_t seq,
                       int code, const char *why)
{
    node *n = ctx;
    (void)ctime_ms;
    n->dropped++;
    n->dropped_code = code;
    n->dropped_seq = seq;
    bp_eid_print(src, n->dropped_src, sizeof n->dropped_src);
    snprintf(n->dropped_why, sizeof n->dropped_why, "%s", why);
}

static void on_deliverable(void *ctx, const bp_eid *ep)
{
    (void)ep;
    ((node *)ctx)->deliverable++;
}

static uint64_t heap_bytes = 64u << 20;

static void node_open(node *n, uint64_t nbr, tern_clock *clk, tern_loop *loop,
                      const char *dir)
{
    memset(n, 0, sizeof *n);
    n->clk = clk;
    n->loop = loop;
    char name[16];
    snprintf(name, sizeof name, "n%" PRIu64, nbr);
    sdr_profile p = {.name = name, .heap_size = heap_bytes, .mode = SDR_MEMORY};
    if (dir) {
        p.dir = dir;
        p.mode = SDR_DURABLE;
    }
    char why[256] = "";
    int rc = sdr_open(&p, &n->store, why, sizeof why);
    CHECK_MSG(rc == 0, "sdr_open: %s", why);
    /* these nodes send the reports bundles ask for; the default is off */
    bp_agent_cfg cfg = {.node = nbr, .store = n->store, .status_reports = true};
    bp_agent_host host = {.ctx = n, .deliverable = on_deliverable, .dropped = on_dropped};
    CHECK_OK(bp_agent_new(loop, &cfg, &host, NULL, &n->a));
    n->f = calloc(1, sizeof *n->f);
    CHECK_OK(bp_cla_register(n->a, &fake_ops, n->f));
}

static void node_close(node *n)
{
    bp_agent_free(n->a);
    CHECK_OK(sdr_close(n->store));
    fake_free(n->f);
}

static void world(uint64_t start, tern_clock **clk, tern_loop **loop)
{
    CHECK_OK(tern_clock_virtual_new(start, clk));
    CHECK_OK(tern_loop_new(*clk, loop));
}

static void world_end(tern_clock *clk, tern_loop *loop)
{
    tern_loop_close(loop);
    tern_clock_free(clk);
}

/* Runs the loop for ms of virtual time. */
static void advance(tern_loop *loop, uint64_t ms)
{
    tern_loop_run_until(loop, tern_loop_now(loop) + ms * 1000000ull);
}

static bp_eid eid(const char *text)
{
    bp_eid e;
    CHECK_OK(bp_eid_parse(text, &e, NULL));
    return e;
}

static void fill(uint8_t *p, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        p[i] = (uint8_t)(seed >> 56);
    }
}

static bp_agent_stats stats(const node *n)
{
    bp_agent_stats st;
    bp_agent_stats_get(n->a, &st);
    return st;
}

static void send_simple(node *n, const char *src, const char *dst, const void *p,
                        size_t len, bp_send_opts *o)
{
    bp_eid s = eid(src), d = eid(dst);
    CHECK_OK(bp_agent_send(n->a, &s, &d, o, p, len, NULL));
}

static void recv_expect(node *n, const char *ep, const void *p, size_t len)
{
    bp_eid e = eid(ep);
    bp_delivery d;
    CHECK_OK(bp_agent_recv(n->a, &e, &d));
    CHECK_EQ_U64(d.len, len);
    CHECK_EQ_MEM(d.payload, p, len);
    bp_delivery_release(&d);
}

/* Decodes the i-th bundle the fake CLA was given. */
static void sent_decode(const node *n, size_t i, bp_bundle *b)
{
    CHECK(i < n->f->n);
    size_t used;
    CHECK_OK(bp_bundle_decode(n->f->log[i].bytes, n->f->log[i].len, b, &used, NULL));
    CHECK_EQ_U64(used, n->f->log[i].len);
}

/* ---- tests ---------------------------------------------------------------- */

TEST(local_delivery_and_queue_rules)
{
    tern_clock *clk;
    tern_loop *loop;
    world(T0, &clk, &loop);
    node n;
    node_open(&n, 1, clk, loop, NULL);
    bp_eid q = eid("ipn:1.2"), x = eid("ipn:1.3");
    CHECK_OK(bp_endpoint_add(n.a, &q, BP_RECV_QUEUE));
    CHECK_OK(bp_endpoint_add(n.a, &x, BP_RECV_DISCARD));
    CHECK_RC(bp_endpoint_add(n.a, &q, BP_RECV_QUEUE), TERN_EEXIST);
    bp_eid other = eid("ipn:2.1");
    CHECK_RC(bp_endpoint_add(n.a, &other, BP_RECV_QUEUE), -EINVAL);

    uint8_t p[300];
    fill(p, sizeof p, 1);
    send_simple(&n, "ipn:1.1", "ipn:1.2", p, sizeof p, NULL);
    send_simple(&n, "ipn:1.1", "ipn:1.3", p, 10, NULL); /* x, nobody reading: discarded */
    CHECK_EQ_U64(bp_endpoint_queued(n.a, &q), 1);
    CHECK_EQ_U64(bp_endpoint_queued(n.a, &x), 0);
    CHECK_EQ_U64(stats(&n).discarded, 1);
    CHECK_OK(bp_endpoint_open(n.a, &x));
    CHECK_RC(bp_endpoint_open(n.a, &x), -EBUSY);
    send_simple(&n, "ipn:1.1", "ipn:1.3", p, 20, NULL); /* now someone reads */
    CHECK_EQ_INT(n.deliverable, 2);
    recv_expect(&n, "ipn:1.2", p, sizeof p);
    recv_expect(&n, "ipn:1.3", p, 20);
    bp_delivery d;
    CHECK_RC(bp_agent_recv(n.a, &q, &d), -EAGAIN);
    CHECK_RC(bp_agent_recv(n.a, &other, &d), TERN_ENOTFOUND);
    bp_agent_stats st = stats(&n);
    CHECK_EQ_U64(st.created, 3);
    CHECK_EQ_U64(st.delivered, 2);
    CHECK_EQ_U64(st.taken, 2);
    CHECK_EQ_U64(st.stored, 0);
    /* a source that is not ours is refused */
    bp_eid s = eid("ipn:7.1");
    CHECK_RC(bp_agent_send(n.a, &s, &q, NULL, p, 1, NULL), -EINVAL);
    node_close(&n);
    world_end(clk, loop);
}

TEST(forward_by_plan_limbo_and_exit)
{
    tern_clock *clk;
    tern_loop *loop;
    world(T0, &clk, &loop);
    node n;
    node_open(&n, 1, clk, loop, NULL);
    uint8_t p[1000];
    fill(p, sizeof p, 2);
    send_simple(&n, "ipn:1.1", "ipn:2.1", p, sizeof p, NULL);
    CHECK_EQ_U64(stats(&n).limbo, 1); /* no route yet */
    CHECK_RC(bp_outduct_add(n.a, "nope", "2", "", 0), TERN_ENOTFOUND);
    CHECK_OK(bp_outduct_add(n.a, "fake", "2", "", 0));
    CHECK_RC(bp_outduct_add(n.a, "fake", "2", "", 0), TERN_EEXIST);
    CHECK_OK(bp_egress_plan_add(n.a, 2, "fake", "2"));
    CHECK_EQ_U64(stats(&n).limbo, 0);
    CHECK_EQ_U64(n.f->n, 1);
    bp_bundle b;
    sent_decode(&n, 0, &b);
    char t[64];
    bp_eid_print(&b.pri.dest, t, sizeof t);
    CHECK_EQ_STR(t, "ipn:2.1");
    CHECK(b.has_prev_node);
    bp_eid_print(&b.prev_node, t, sizeof t);
    CHECK_EQ_STR(t, "ipn:1.0");
    CHECK_EQ_MEM(b.blocks[b.n_blocks - 1].data, p, sizeof p);
    CHECK_EQ_U64(stats(&n).in_flight, 1);
    bp_outduct_result(n.f->log[0].od, n.f->log[0].xmit, BP_XMIT_OK);
    bp_agent_stats st = stats(&n);
    CHECK_EQ_U64(st.forwarded, 1);
    CHECK_EQ_U64(st.stored, 0);
    CHECK_EQ_U64(st.in_flight, 0);
    /* a stale or repeated result is ignored */
    bp_outduct_result(n.f->log[0].od, n.f->log[0].xmit, BP_XMIT_OK);
    CHECK_EQ_U64(stats(&n).forwarded, 1);

    /* exits: nodes 10..20 go the way of node 2 */
    CHECK_OK(bp_egress_exit_add(n.a, 10, 20, 2));
    send_simple(&n, "ipn:1.1", "ipn:15.1", p, 5, NULL);
    send_simple(&n, "ipn:1.1", "ipn:21.1", p, 5, NULL);
    CHECK_EQ_U64(n.f->n, 2);
    sent_decode(&n, 1, &b);
    CHECK_EQ_U64(b.pri.dest.node, 15);
    CHECK_EQ_U64(stats(&n).limbo, 1);
    node_close(&n);
    world_end(clk, loop);
}

TEST(reforward_after_cancel_and_flow_control)
{
    tern_clock *clk;
    tern_loop *loop;
    world(T0, &clk, &loop);
    node n;
    node_open(&n, 1, clk, loop, NULL);
    n.f->capacity = 2;
    CHECK_OK(bp_outduct_add(n.a, "fake", "2", "", 0));
    CHECK_OK(bp_egress_plan_add(n.a, 2, "fake", "2"));
    bp_outduct *od = bp_outduct_find(n.a, "fake", "2");
    CHECK(od != NULL);
    uint8_t p[64];
    for (int i = 0; i < 5; i++) {
        fill(p, sizeof p, (uint64_t)i);
        send_simple(&n, "ipn:1.1", "ipn:2.1", p, sizeof p, NULL);
    }
    CHECK_EQ_U64(n.f->n, 2);
    CHECK_EQ_U64(bp_outduct_queued(od), 3);
    /* the first is cancelled: it is sent again, ahead of the queue */
    n.f->pending--;
    bp_outduct_result(od, n.f->log[0].xmit, BP_XMIT_CANCELLED);
    bp_outduct_ready(od);
    CHECK_EQ_U64(n.f->n, 3);
    CHECK_EQ_MEM(n.f->log[2].bytes + n.f->log[2].len - 65,
                 n.f->log[0].bytes + n.f->log[0].len - 65, 64);
    CHECK_EQ_U64(stats(&n).reforwarded, 1);
    /* the rest drain as the CLA frees up */
    n.f->mode = 1;
    n.f->capacity = 0;
    bp_outduct_ready(od);
    CHECK_EQ_U64(n.f->n, 6);
    bp_outduct_result(od, n.f->log[1].xmit, BP_XMIT_OK);
    bp_outduct_result(od, n.f->log[2].xmit, BP_XMIT_OK);
    bp_agent_stats st = stats(&n);
    CHECK_EQ_U64(st.forwarded, 5);
    CHECK_EQ_U64(st.stored, 0);
    node_close(&n);
    world_end(clk, loop);
}

TEST(receive_relay_and_duplicates)
{
    tern_clock *clk;
    tern_loop *loop;
    world(T0, &clk, &loop);
    node n1, n2;
    node_open(&n1, 1, clk, loop, NULL);
    node_open(&n2, 2, clk, loop, NULL);
    CHECK_OK(bp_outduct_add(n1.a, "fake", "2", "", 0));
    CHECK_OK(bp_egress_plan_add(n1.a, 3, "fake", "2"));
    CHECK_OK(bp_outduct_add(n2.a, "fake", "3", "", 0));
    CHECK_OK(bp_egress_plan_add(n2.a, 3, "fake", "3"));
    uint8_t p[2000];
    fill(p, sizeof p, 3);
    bp_send_opts o;
    bp_send_opts_init(&o);
    o.hop_limit = 5;
    send_simple(&n1, "ipn:1.1", "ipn:3.1", p, sizeof p, &o);
    CHECK_EQ_U64(n1.f->n, 1);
    advance(loop, 1500); /* time spent at node 2 does not count: ctime is set */
    CHECK_EQ_INT(bp_agent_receive(n2.a, n1.f->log[0].bytes, n1.f->log[0].len), 1);
    CHECK_EQ_U64(n2.f->n, 1);
    bp_bundle b;
    sent_decode(&n2, 0, &b);
    CHECK(b.has_hop_count);
    CHECK_EQ_U64(b.hop_count, 2);
    bp_eid_print(&b.prev_node, (char[32]){0}, 32);
    CHECK_EQ_U64(b.prev_node.node, 2);
    CHECK_EQ_MEM(b.blocks[b.n_blocks - 1].data, p, sizeof p);
    /* the same bundle again is a duplicate */
    CHECK_EQ_INT(bp_agent_receive(n2.a, n1.f->log[0].bytes, n1.f->log[0].len), 1);
    CHECK_EQ_U64(n2.f->n, 1);
    CHECK_EQ_U64(stats(&n2).duplicates, 1);
    CHECK_EQ_U64(stats(&n2).received, 1);
    node_close(&n1);
    node_close(&n2);
    world_end(clk, loop);
}

TEST(status_reports_are_off_by_default_and_counted)
{
    tern_clock *clk;
    tern_loop *loop;
    world(T0, &clk, &loop);
    node n1, n2;
    node_open(&n1, 1, clk, loop, NULL);
    node_open(&n2, 2, clk, loop, NULL);
    /* node 2 as bp_agent_cfg's zero default leaves it (RFC 9171 5.1) */
    bp_agent_free(n2.a);
    bp_agent_cfg cfg = {.node = 2, .store = n2.store};
    bp_agent_host host = {.ctx = &n2, .deliverable = on_deliverable};
    CHECK_OK(bp_agent_new(loop, &cfg, &host, NULL, &n2.a));
    CHECK_OK(bp_cla_register(n2.a, &fake_ops, n2.f));
    CHECK(!bp_agent_status_reports(n2.a));
    bp_eid rep = eid("ipn:1.9");
    bp_eid dst = eid("ipn:2.1");
    CHECK_OK(bp_endpoint_add(n2.a, &dst, BP_RECV_QUEUE));
    CHECK_OK(bp_outduct_add(n1.a, "fake", "2", "", 0));
    CHECK_OK(bp_egress_plan_add(n1.a, 2, "fake", "2"));
    CHECK_OK(bp_outduct_add(n2.a, "fake", "1", "", 0));
    CHECK_OK(bp_egress_plan_add(n2.a, 1, "fake", "1"));

    bp_send_opts o;
    bp_send_opts_init(&o);
    o.flags = BP_FLAG_RPT_RECEPTION | BP_FLAG_RPT_DELIVERY;
    o.report_to = &rep;
    send_simple(&n1, "ipn:1.1", "ipn:2.1", "one", 3, &o);
    CHECK_EQ_INT(bp_agent_receive(n2.a, n1.f->log[0].bytes, n1.f->log[0].len), 1);
    bp_agent_stats st = stats(&n2);
    CHECK_EQ_U64(st.delivered, 1);
    CHECK_EQ_U64(st.reports_sent, 0);
    CHECK_EQ_U64(st.reports_suppressed, 2); /* received and delivered */
    CHECK_EQ_U64(n2.f->n, 0);               /* nothing went back to node 1 */

    /* switched on, the next bundle gets both reports */
    bp_agent_set_status_reports(n2.a, true);
    send_simple(&n1, "ipn:1.1", "ipn:2.1", "two", 3, &o);
    CHECK_EQ_INT(bp_agent_receive(n2.a, n1.f->log[1].bytes, n1.f->log[1].len), 1);
    st = stats(&n2);
    CHECK_EQ_U64(st.reports_sent, 2);
    CHECK_EQ_U64(st.reports_suppressed, 2);
    CHECK_EQ_U64(n2.f->n, 2);
    node_close(&n2);
    node_close(&n1);
    world_end(clk, loop);
}

TEST(hop_limit_and_expiry_with_reports)
{
    tern_clock *clk;
    tern_loop *loop;
    world(T0, &clk, &loop);
    node n1, n2;
    node_open(&n1, 1, clk, loop, NULL);
    node_open(&n2, 2, clk, loop, NULL);
    bp_eid rep = eid("ipn:1.9");
    CHECK_OK(bp_endpoint_add(n1.a, &rep, BP_RECV_QUEUE));
    CHECK_OK(bp_outduct_add(n1.a, "fake", "2", "", 0));
    CHECK_OK(bp_egress_plan_add(n1.a, 3, "fake", "2"));
    CHECK_OK(bp_egress_plan_add(n1.a, 4, "fake", "2"));
    CHECK_OK(bp_outduct_add(n2.a, "fake", "1", "", 0));
    CHECK_OK(bp_egress_plan_add(n2.a, 1, "fake", "1"));
    CHECK_OK(bp_outduct_add(n2.a, "fake", "3", "", 0));
    CHECK_OK(bp_egress_plan_add(n2.a, 3, "fake", "3"));

    /* hop limit 1: node 2 may not forward it */
    bp_send_opts o;
    bp_send_opts_init(&o);
    o.hop_limit = 1;
    o.flags = BP_FLAG_RPT_DELETION;
    o.report_to = &rep;
    send_simple(&n1, "ipn:1.1", "ipn:3.1", "hop", 3, &o);
    CHECK_EQ_INT(bp_agent_receive(n2.a, n1.f->log[0].bytes, n1.f->log[0].len), 1);
    bp_outduct_result(n1.f->log[0].od, n1.f->log[0].xmit, BP_XMIT_OK);
    bp_agent_stats st = stats(&n2);
    CHECK_EQ_U64(st.hop_exceeded, 1);
    CHECK_EQ_U64(st.stored, 1); /* only the report, on its way */
    CHECK_EQ_U64(st.reports_sent, 1);
    /* the report travels back to node 1 and is delivered to ipn:1.9 */
    CHECK_EQ_U64(n2.f->n, 1);
    CHECK_EQ_INT(bp_agent_receive(n1.a, n2.f->log[0].bytes, n2.f->log[0].len), 1);
    bp_delivery d;
    CHECK_OK(bp_agent_recv(n1.a, &rep, &d));
    CHECK(d.flags & BP_FLAG_ADMIN);
    bp_admin_record r;
    CHECK_OK(bp_admin_decode(d.payload, d.len, &r, NULL));
    CHECK(r.sr.deleted.asserted);
    CHECK_EQ_U64(r.sr.reason, BP_REASON_HOP_LIMIT);
    CHECK_EQ_U64(r.sr.source.node, 1);
    bp_delivery_release(&d);

    /* expiry: a bundle waiting on a down outduct dies at its lifetime */
    bp_outduct_set_up(bp_outduct_find(n1.a, "fake", "2"), false);
    bp_send_opts_init(&o);
    o.lifetime_ms = 10000;
    o.flags = BP_FLAG_RPT_DELETION | BP_FLAG_STATUS_TIME;
    o.report_to = &rep;
    send_simple(&n1, "ipn:1.1", "ipn:4.1", "exp", 3, &o);
    CHECK_EQ_U64(stats(&n1).queued, 1);
    advance(loop, 9000);
    CHECK_EQ_U64(stats(&n1).expired, 0);
    advance(loop, 2000);
    st = stats(&n1);
    CHECK_EQ_U64(st.expired, 1);
    CHECK_EQ_U64(st.queued, 0);
    CHECK_OK(bp_agent_recv(n1.a, &rep, &d)); /* the report is local */
    CHECK_OK(bp_admin_decode(d.payload, d.len, &r, NULL));
    CHECK(r.sr.deleted.asserted && r.sr.deleted.has_time);
    CHECK_EQ_U64(r.sr.deleted.time_ms, T0 + 10000);
    CHECK_EQ_U64(r.sr.reason, BP_REASON_EXPIRED);
    bp_delivery_release(&d);
    CHECK_EQ_U64(stats(&n1).stored, 0);
    node_close(&n1);
    node_close(&n2);
    world_end(clk, loop);
}

/* Issue 17 item 12: RFC 9171 4.4.3, a bundle whose hop count exceeds its
 * hop limit is deleted for reason 9, hop limit exceeded, also when it is
 * destined to this node: one that arrives with hop count 4 of limit 3 is
 * not delivered, counted, and its deletion reported; one at its limit (3 of
 * 3, it has made all its hops) is delivered. */
TEST(hop_limit_exceeded_also_for_local_delivery)
{
    tern_clock *clk;
    tern_loop *loop;
    world(T0, &clk, &loop);
    node n1, n2;
    node_open(&n1, 1, clk, loop, NULL);
    node_open(&n2, 2, clk, loop, NULL);
    bp_eid rep = eid("ipn:1.9"), dst = eid("ipn:2.1");
    CHECK_OK(bp_endpoint_add(n1.a, &rep, BP_RECV_QUEUE));
    CHECK_OK(bp_endpoint_add(n2.a, &dst, BP_RECV_QUEUE));
    CHECK_OK(bp_outduct_add(n2.a, "fake", "1", "", 0));
    CHECK_OK(bp_egress_plan_add(n2.a, 1, "fake", "1"));
    for (uint64_t count = 3; count <= 4; count++) {
        bp_bundle b;
        memset(&b, 0, sizeof b);
        b.pri.version = 7;
        b.pri.flags = BP_FLAG_RPT_DELETION;
        b.pri.crc_type = BP_CRC_32C;
        b.pri.dest = dst;
        b.pri.src = eid("ipn:1.1");
        b.pri.report_to = rep;
        b.pri.ctime_ms = T0;
        b.pri.seq = count;
        b.pri.lifetime_ms = 3600000;
        b.has_hop_count = true;
        b.hop_limit = 3;
        b.hop_count = count;
        /* the encoder writes the hop count block from the fields */
        b.blocks[0] = (bp_block){.type = BP_BLOCK_HOP_COUNT, .number = 2};
        b.blocks[1] = (bp_block){
            .type = 1, .number = 1, .data = (const uint8_t *)"hops", .data_len = 4};
        b.n_blocks = 2;
        uint8_t buf[256];
        size_t n;
        CHECK_OK(bp_bundle_encode(&b, buf, sizeof buf, &n, NULL));
        CHECK_EQ_INT(bp_agent_receive(n2.a, buf, n), 1);
    }
    bp_agent_stats st = stats(&n2);
    CHECK_EQ_U64(st.hop_exceeded, 1);
    CHECK_EQ_U64(st.deleted, 1);
    bp_delivery d;
    CHECK_OK(bp_agent_recv(n2.a, &dst, &d)); /* 3 of 3 */
    CHECK_EQ_U64(d.len, 4);
    CHECK_EQ_MEM(d.payload, "hops", 4);
    bp_delivery_release(&d);
    CHECK(bp_agent_recv(n2.a, &dst, &d) != 0); /* 4 of 3 is gone */
    /* its deletion report, reason 9, reaches ipn:1.9 */
    CHECK_EQ_U64(n2.f->n, 1);
    CHECK_EQ_INT(bp_agent_receive(n1.a, n2.f->log[0].bytes, n2.f->log[0].len), 1);
    CHECK_OK(bp_agent_recv(n1.a, &rep, &d));
    bp_admin_record r;
    CHECK_OK(bp_admin_decode(d.payload, d.len, &r, NULL));
    CHECK(r.sr.deleted.asserted);
    CHECK_EQ_U64(r.sr.reason, BP_REASON_HOP_LIMIT);
    CHECK_EQ_U64(r.sr.seq, 4);
    bp_delivery_release(&d);
    node_close(&n1);
    node_close(&n2);
    world_end(clk, loop);
}

/* A bundle created here goes out as it is stored (no rewrite); one that
 * expires while its CLA still has it stays in the store until the CLA
 * reports, then leaves it. */
TEST(expiry_in_flight_keeps_the_bytes_until_the_cla_reports)
{
    tern_clock *clk;
    tern_loop *loop;
    world(T0, &clk, &loop);
    node n;
    node_open(&n, 1, clk, loop, NULL);
    CHECK_OK(bp_outduct_add(n.a, "fake", "2", "", 0));
    CHECK_OK(bp_egress_plan_add(n.a, 2, "fake", "2"));
    size_t len = 200000;
    uint8_t *p = malloc(len);
    CHECK(p);
    fill(p, len, 9);
    bp_send_opts o;
    bp_send_opts_init(&o);
    o.lifetime_ms = 5000;
    send_simple(&n, "ipn:1.1", "ipn:2.1", p, len, &o);
    CHECK_EQ_U64(n.f->n, 1);
    bp_bundle b;
    sent_decode(&n, 0, &b);
    CHECK(b.has_prev_node);
    CHECK_EQ_U64(b.prev_node.node, 1);
    CHECK_EQ_MEM(b.blocks[b.n_blocks - 1].data, p, len);
    advance(loop, 6000);
    bp_agent_stats st = stats(&n);
    CHECK_EQ_U64(st.expired, 1);
    CHECK_EQ_U64(st.stored, 1); /* the CLA may still read it */
    bp_outduct_result(n.f->log[0].od, n.f->log[0].xmit, BP_XMIT_OK);
    st = stats(&n);
    CHECK_EQ_U64(st.stored, 0);
    CHECK_EQ_U64(st.in_flight, 0);
    CHECK_EQ_U64(st.forwarded, 0);
    sdr_usage u;
    CHECK_OK(sdr_get_usage(n.store, &u));
    CHECK_EQ_U64(u.blob_bytes, 0);
    char why[256];
    CHECK_MSG(sdr_check(n.store, why, sizeof why) == 0, "%s", why);
    free(p);
    node_close(&n);
    world_end(clk, loop);
}

TEST(status_reports_received_forwarded_delivered)
{
    tern_clock *clk;
    tern_loop *loop;
    world(T0, &clk, &loop);
    node n1, n2;
    node_open(&n1, 1, clk, loop, NULL);
    node_open(&n2, 2, clk, loop, NULL);
    bp_eid rep = eid("ipn:1.9"), dst = eid("ipn:2.1");
    CHECK_OK(bp_endpoint_add(n1.a, &rep, BP_RECV_QUEUE));
    CHECK_OK(bp_endpoint_add(n2.a, &dst, BP_RECV_QUEUE));
    n1.f->mode = 1;
    CHECK_OK(bp_outduct_add(n1.a, "fake", "2", "", 0));
    CHECK_OK(bp_egress_plan_add(n1.a, 2, "fake", "2"));
    CHECK_OK(bp_outduct_add(n2.a, "fake", "1", "", 0));
    CHECK_OK(bp_egress_plan_add(n2.a, 1, "fake", "1"));
    bp_send_opts o;
    bp_send_opts_init(&o);
    o.flags = BP_FLAG_RPT_RECEPTION | BP_FLAG_RPT_FORWARD | BP_FLAG_RPT_DELIVERY;
    o.report_to = &rep;
    send_simple(&n1, "ipn:1.1", "ipn:2.1", "hello", 5, &o);
    /* forwarded report at node 1 is local */
    CHECK_EQ_U64(bp_endpoint_queued(n1.a, &rep), 1);
    CHECK_EQ_INT(bp_agent_receive(n2.a, n1.f->log[0].bytes, n1.f->log[0].len), 1);
    recv_expect(&n2, "ipn:2.1", "hello", 5);
    CHECK_EQ_U64(n2.f->n, 2); /* received + delivered reports */
    for (size_t i = 0; i < 2; i++)
        CHECK_EQ_INT(bp_agent_receive(n1.a, n2.f->log[i].bytes, n2.f->log[i].len), 1);
    int got[3] = {0};
    bp_delivery d;
    while (bp_agent_recv(n1.a, &rep, &d) == 0) {
        bp_admin_record r;
        CHECK_OK(bp_admin_decode(d.payload, d.len, &r, NULL));
        got[0] += r.sr.received.asserted;
        got[1] += r.sr.forwarded.asserted;
        got[2] += r.sr.delivered.asserted;
        CHECK_EQ_U64(r.sr.source.node, 1);
        CHECK_EQ_U64(r.sr.source.service, 1);
        bp_delivery_release(&d);
    }
    CHECK_EQ_INT(got[0], 1);
    CHECK_EQ_INT(got[1], 1);
    CHECK_EQ_INT(got[2], 1);
    CHECK_EQ_U64(stats(&n1).reports_received, 3); /* one was made at node 1 */
    node_close(&n1);
    node_close(&n2);
    world_end(clk, loop);
}

/* RFC 9171 4.2.3: a bundle from dtn:none cannot be identified, so it must
 * not be fragmented and asks for no status report (ION refuses one that does:
 * "Fragmentation and status report requests prohibited for anonymous
 * bundle"). The agent makes it so whatever the application asked, and sends
 * no report about an anonymous bundle it receives even if it asks. */
TEST(anonymous_bundles_never_fragment_nor_ask_for_reports)
{
    tern_clock *clk;
    tern_loop *loop;
    world(T0, &clk, &loop);
    node n;
    node_open(&n, 1, clk, loop, NULL);
    /* a duct that fragments anything above 100 bytes of payload */
    CHECK_OK(bp_outduct_add(n.a, "fake", "2", "", 100));
    CHECK_OK(bp_egress_plan_add(n.a, 2, "fake", "2"));
    bp_eid none = eid("dtn:none"), dst = eid("ipn:2.1"), rep = eid("ipn:2.0");
    uint8_t p[500];
    fill(p, sizeof p, 31);
    static const uint64_t rpt = BP_FLAG_RPT_RECEPTION | BP_FLAG_RPT_FORWARD |
                                BP_FLAG_RPT_DELIVERY | BP_FLAG_RPT_DELETION;
    bp_send_opts o;
    bp_send_opts_init(&o);
    o.flags = rpt | BP_FLAG_STATUS_TIME;
    o.report_to = &rep;
    CHECK_OK(bp_agent_send(n.a, &none, &dst, &o, p, sizeof p, NULL));
    CHECK_OK(bp_agent_send(n.a, &none, &dst, NULL, p, sizeof p, NULL));
    CHECK_EQ_U64(n.f->n, 2); /* each whole: no fragments */
    CHECK_EQ_U64(stats(&n).fragmented, 0);
    for (size_t i = 0; i < 2; i++) {
        bp_bundle b;
        sent_decode(&n, i, &b);
        CHECK(bp_eid_is_none(&b.pri.src));
        CHECK_MSG(b.pri.flags & BP_FLAG_NO_FRAGMENT, "bundle %zu flags %#llx", i,
                  (unsigned long long)b.pri.flags);
        CHECK_EQ_U64(b.pri.flags & (rpt | BP_FLAG_STATUS_TIME), 0);
        CHECK(bp_eid_is_none(&b.pri.report_to));
        CHECK_EQ_U64(b.blocks[b.n_blocks - 1].data_len, sizeof p);
        /* the primary block's flags as they are on the wire: [7, 4, ...] */
        const uint8_t *w = n.f->log[i].bytes;
        CHECK_EQ_INT(w[0], 0x9f);
        CHECK_EQ_INT(w[2], 0x07);
        CHECK_EQ_INT(w[3], BP_FLAG_NO_FRAGMENT);
        bp_outduct_result(n.f->log[i].od, n.f->log[i].xmit, BP_XMIT_OK);
    }
    CHECK_EQ_U64(stats(&n).reports_sent, 0); /* no forwarded report asked */

    /* Received from a peer that asks anyway (and allows fragmentation):
     * delivered, forwarded whole, deleted, and never reported on. */
    bp_eid local = eid("ipn:1.5");
    CHECK_OK(bp_endpoint_add(n.a, &local, BP_RECV_QUEUE));
    static const char *dests[] = {"ipn:1.5", "ipn:2.1", "ipn:2.1"};
    for (size_t i = 0; i < 3; i++) {
        bp_bundle b;
        memset(&b, 0, sizeof b);
        b.pri.version = 7;
        b.pri.flags = rpt | BP_FLAG_STATUS_TIME;
        b.pri.crc_type = BP_CRC_32C;
        b.pri.dest = eid(dests[i]);
        b.pri.src = none;
        b.pri.report_to = rep;
        b.pri.ctime_ms = i == 2 ? T0 - 7200000 : T0; /* the last one has expired */
        b.pri.seq = 100 + i;
        b.pri.lifetime_ms = 3600000;
        b.blocks[0] = (bp_block){.type = 1, .number = 1, .data = p, .data_len = sizeof p};
        b.n_blocks = 1;
        uint8_t buf[1024];
        size_t len;
        CHECK_OK(bp_bundle_encode(&b, buf, sizeof buf, &len, NULL));
        CHECK_EQ_INT(bp_agent_receive(n.a, buf, len), 1);
    }
    recv_expect(&n, "ipn:1.5", p, sizeof p);
    CHECK_EQ_U64(n.f->n, 3); /* the forwarded one, whole; no report */
    bp_bundle b;
    sent_decode(&n, 2, &b);
    CHECK(bp_eid_is_none(&b.pri.src));
    CHECK_EQ_U64(b.blocks[b.n_blocks - 1].data_len, sizeof p);
    bp_outduct_result(n.f->log[2].od, n.f->log[2].xmit, BP_XMIT_OK);
    bp_agent_stats st = stats(&n);
    CHECK_EQ_U64(st.expired, 1);
    CHECK_EQ_U64(st.fragmented, 0);
    CHECK_EQ_U64(st.reports_sent, 0);
    CHECK_EQ_U64(st.stored, 0);
    node_close(&n);
    world_end(clk, loop);
}

/* Two anonymous bundles with the same creation timestamp and sequence but
 * different payloads are two bundles: nothing identifies an anonymous bundle
 * (RFC 9171 4.2.3), so neither is suppressed as a duplicate of the other,
 * and neither is one that this node sent itself. */
TEST(anonymous_bundles_with_the_same_timestamp_are_not_duplicates)
{
    tern_clock *clk;
    tern_loop *loop;
    world(T0, &clk, &loop);
    node n;
    node_open(&n, 1, clk, loop, NULL);
    bp_eid local = eid("ipn:1.5"), none = eid("dtn:none");
    CHECK_OK(bp_endpoint_add(n.a, &local, BP_RECV_QUEUE));
    /* one sent here first, at the same clock reading the peers use */
    CHECK_OK(bp_agent_send(n.a, &none, &local, NULL, "mine", 4, NULL));
    static const char *payloads[] = {"first", "second"};
    for (size_t i = 0; i < 2; i++) {
        bp_bundle b;
        memset(&b, 0, sizeof b);
        b.pri.version = 7;
        b.pri.flags = BP_FLAG_NO_FRAGMENT;
        b.pri.crc_type = BP_CRC_32C;
        b.pri.dest = local;
        b.pri.src = none;
        b.pri.report_to = none;
        b.pri.ctime_ms = T0;
        b.pri.seq = 0;
        b.pri.lifetime_ms = 3600000;
        b.blocks[0] = (bp_block){.type = 1,
                                 .number = 1,
                                 .data = (const uint8_t *)payloads[i],
                                 .data_len = strlen(payloads[i])};
        b.n_blocks = 1;
        uint8_t buf[256];
        size_t len;
        CHECK_OK(bp_bundle_encode(&b, buf, sizeof buf, &len, NULL));
        CHECK_EQ_INT(bp_agent_receive(n.a, buf, len), 1);
    }
    bp_agent_stats st = stats(&n);
    CHECK_EQ_U64(st.duplicates, 0);
    CHECK_EQ_U64(st.received, 2);
    recv_expect(&n, "ipn:1.5", "mine", 4);
    recv_expect(&n, "ipn:1.5", "first", 5);
    recv_expect(&n, "ipn:1.5", "second", 6);
    node_close(&n);
    world_end(clk, loop);
}

TEST(priority_order)
{
    tern_clock *clk;
    tern_loop *loop;
    world(T0, &clk, &loop);
    node n;
    node_open(&n, 1, clk, loop, NULL);
    CHECK_OK(bp_outduct_add(n.a, "fake", "2", "", 0));
    CHECK_OK(bp_egress_plan_add(n.a, 2, "fake", "2"));
    bp_outduct *od = bp_outduct_find(n.a, "fake", "2");
    bp_outduct_set_up(od, false);
    static const struct {
        int prio;
        unsigned ord;
        char tag;
    } mix[] = {{BP_PRIO_BULK, 0, 'a'},      {BP_PRIO_STANDARD, 0, 'b'},
               {BP_PRIO_EXPEDITED, 5, 'c'}, {BP_PRIO_EXPEDITED, 200, 'd'},
               {BP_PRIO_STANDARD, 0, 'e'},  {BP_PRIO_EXPEDITED, 5, 'f'},
               {BP_PRIO_BULK, 0, 'g'}};
    for (size_t i = 0; i < sizeof mix / sizeof *mix; i++) {
        bp_send_opts o;
        bp_send_opts_init(&o);
        o.priority = mix[i].prio;
        o.ordinal = mix[i].ord;
        send_simple(&n, "ipn:1.1", "ipn:2.1", &mix[i].tag, 1, &o);
    }
    CHECK_EQ_U64(n.f->n, 0);
    bp_outduct_set_up(od, true);
    CHECK_EQ_U64(n.f->n, 7);
    char order[8] = {0};
    for (size_t i = 0; i < 7; i++) {
        bp_bundle b;
        sent_decode(&n, i, &b);
        order[i] = (char)b.blocks[b.n_blocks - 1].data[0];
    }
    CHECK_EQ_STR(order, "dcfbeag");
    /* the class travels in ION's block 193, so a relay keeps it */
    node n2;
    node_open(&n2, 2, clk, loop, NULL);
    CHECK_OK(bp_outduct_add(n2.a, "fake", "3", "", 0));
    CHECK_OK(bp_egress_plan_add(n2.a, 2, "fake", "3")); /* unused */
    CHECK_OK(bp_egress_plan_add(n2.a, 3, "fake", "3"));
    bp_outduct *od2 = bp_outduct_find(n2.a, "fake", "3");
    bp_outduct_set_up(od2, false);
    /* re-address: node 1's bundles go to node 2, so build new ones to node 3 */
    for (size_t i = 0; i < sizeof mix / sizeof *mix; i++) {
        bp_send_opts o;
        bp_send_opts_init(&o);
        o.priority = mix[i].prio;
        o.ordinal = mix[i].ord;
        send_simple(&n, "ipn:1.1", "ipn:3.1", &mix[i].tag, 1, &o);
    }
    CHECK_OK(bp_egress_plan_add(n.a, 3, "fake", "2"));
    for (size_t i = 7; i < n.f->n; i++)
        CHECK_EQ_INT(bp_agent_receive(n2.a, n.f->log[i].bytes, n.f->log[i].len), 1);
    bp_outduct_set_up(od2, true);
    CHECK_EQ_U64(n2.f->n, 7);
    for (size_t i = 0; i < 7; i++) {
        bp_bundle b;
        sent_decode(&n2, i, &b);
        order[i] = (char)b.blocks[b.n_blocks - 1].data[0];
    }
    CHECK_EQ_STR(order, "dcfbeag");
    node_close(&n2);
    node_close(&n);
    world_end(clk, loop);
}

/* Fragments a big bundle at node 1, shuffles and duplicates the fragments,
 * and reassembles them at node 2. */
TEST(fragmentation_and_reassembly)
{
    tern_clock *clk;
    tern_loop *loop;
    world(T0, &clk, &loop);
    node n1, n2;
    node_open(&n1, 1, clk, loop, NULL);
    node_open(&n2, 2, clk, loop, NULL);
    bp_eid dst = eid("ipn:2.1");
    CHECK_OK(bp_endpoint_add(n2.a, &dst, BP_RECV_QUEUE));
    n1.f->mode = 1;
    CHECK_OK(bp_outduct_add(n1.a, "fake", "2", "", 1000));
    CHECK_OK(bp_egress_plan_add(n1.a, 2, "fake", "2"));
    size_t len = 200 * 1000 + 123; /* big enough to be a blob */
    uint8_t *p = malloc(len);
    fill(p, len, 9);
    send_simple(&n1, "ipn:1.1", "ipn:2.1", p, len, NULL);
    bp_agent_stats st = stats(&n1);
    CHECK_EQ_U64(st.fragmented, 1);
    CHECK_EQ_U64(st.fragments_made, 201);
    CHECK_EQ_U64(n1.f->n, 201);
    CHECK_EQ_U64(st.stored, 0);
    bp_bundle b;
    sent_decode(&n1, 200, &b);
    CHECK(b.pri.flags & BP_FLAG_FRAGMENT);
    CHECK_EQ_U64(b.pri.frag_offset, 200000);
    CHECK_EQ_U64(b.pri.total_adu_len, len);
    /* every fragment twice, in a shuffled order */
    size_t order[402];
    for (size_t i = 0; i < 402; i++)
        order[i] = i % 201;
    uint64_t s = tt_seed();
    for (size_t i = 401; i > 0; i--) {
        s = s * 6364136223846793005ull + 1;
        size_t j = (size_t)((s >> 33) % (i + 1));
        size_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (size_t i = 0; i < 402; i++) {
        const sent *f = &n1.f->log[order[i]];
        CHECK_EQ_INT(bp_agent_receive(n2.a, f->bytes, f->len), 1);
    }
    st = stats(&n2);
    CHECK_EQ_U64(st.reassembled, 1);
    CHECK_EQ_U64(st.duplicates, 201);
    CHECK_EQ_U64(bp_endpoint_queued(n2.a, &dst), 1);
    recv_expect(&n2, "ipn:2.1", p, len);
    CHECK_EQ_U64(stats(&n2).stored, 0);

    /* a bundle that must not be fragmented goes whole */
    bp_send_opts o;
    bp_send_opts_init(&o);
    o.flags = BP_FLAG_NO_FRAGMENT;
    send_simple(&n1, "ipn:1.1", "ipn:2.1", p, 5000, &o);
    CHECK_EQ_U64(n1.f->n, 202);
    CHECK_EQ_U64(stats(&n1).fragmented, 1);
    free(p);
    node_close(&n1);
    node_close(&n2);
    world_end(clk, loop);
}

/* Builds a bundle by hand with an extra block. */
static uint8_t *bundle_with_block(uint64_t type, uint64_t flags, const char *dst,
                                  size_t *len)
{
    bp_bundle b;
    memset(&b, 0, sizeof b);
    b.pri.version = 7;
    b.pri.crc_type = BP_CRC_16;
    b.pri.dest = eid(dst);
    b.pri.src = eid("ipn:9.1");
    b.pri.report_to = eid("dtn:none");
    b.pri.ctime_ms = T0;
    static uint64_t seq;
    b.pri.seq = ++seq; /* each one a new bundle */
    b.pri.lifetime_ms = 3600000;
    static const uint8_t opaque[] = {0x01, 0x02, 0x03};
    b.blocks[0] = (bp_block){.type = type,
                             .number = 2,
                             .flags = flags,
                             .data = opaque,
                             .data_len = sizeof opaque};
    b.blocks[1] =
        (bp_block){.type = 1, .number = 1, .data = (const uint8_t *)"x", .data_len = 1};
    b.n_blocks = 2;
    uint8_t *buf = malloc(1024);
    CHECK_OK(bp_bundle_encode(&b, buf, 1024, len, NULL));
    return buf;
}

TEST(unknown_blocks_bad_input_and_dtn_none)
{
    tern_clock *clk;
    tern_loop *loop;
    world(T0, &clk, &loop);
    node n;
    node_open(&n, 1, clk, loop, NULL);
    CHECK_OK(bp_outduct_add(n.a, "fake", "2", "", 0));
    CHECK_OK(bp_egress_plan_add(n.a, 2, "fake", "2"));
    size_t len;
    /* type 8, flags 0: kept and forwarded unchanged */
    uint8_t *b8 = bundle_with_block(8, 0, "ipn:2.1", &len);
    CHECK_EQ_INT(bp_agent_receive(n.a, b8, len), 1);
    CHECK_EQ_U64(n.f->n, 1);
    bp_bundle b;
    sent_decode(&n, 0, &b);
    CHECK(bp_bundle_block(&b, 2) && bp_bundle_block(&b, 2)->type == 8);
    CHECK_EQ_MEM(bp_bundle_block(&b, 2)->data, "\x01\x02\x03", 3);
    free(b8);
    /* discard-block flag: forwarded without it */
    b8 = bundle_with_block(8, BP_BLK_DISCARD, "ipn:2.1", &len);
    CHECK_EQ_INT(bp_agent_receive(n.a, b8, len), 1);
    CHECK_EQ_U64(n.f->n, 2);
    sent_decode(&n, 1, &b);
    for (size_t i = 0; i < b.n_blocks; i++)
        CHECK(b.blocks[i].type != 8);
    CHECK_EQ_U64(b.n_blocks, 2); /* previous node and payload */
    free(b8);
    /* delete-bundle flag: deleted */
    b8 = bundle_with_block(8, BP_BLK_DELETE_BUNDLE, "ipn:2.1", &len);
    CHECK_EQ_INT(bp_agent_receive(n.a, b8, len), 1);
    CHECK_EQ_U64(n.f->n, 2);
    CHECK_EQ_U64(stats(&n).deleted, 1);
    free(b8);
    /* to dtn:none: dropped cleanly, store intact */
    b8 = bundle_with_block(8, 0, "dtn:none", &len);
    CHECK_EQ_INT(bp_agent_receive(n.a, b8, len), 1);
    CHECK_EQ_U64(stats(&n).deleted, 2);
    free(b8);
    /* garbage, and a truncated bundle: counted, nothing stored */
    static const uint8_t junk[] = {0x9f, 0x89, 0x07, 0xff, 0x00};
    CHECK(bp_agent_receive(n.a, junk, sizeof junk) < 0);
    b8 = bundle_with_block(8, 0, "ipn:2.1", &len);
    uint8_t *life = memmem(b8, len, "\x1a\x00\x36\xee\x80", 5); /* lifetime 3600000 */
    CHECK(life != NULL);
    life[4] ^= 0x01; /* still well formed, but the primary block's CRC fails */
    CHECK_RC(bp_agent_receive(n.a, b8, len), TERN_ECORRUPT);
    life[4] ^= 0x01;
    CHECK(bp_agent_receive(n.a, b8, len / 2) < 0);
    free(b8);
    bp_agent_stats st = stats(&n);
    CHECK_EQ_U64(st.malformed, 3);
    CHECK_EQ_U64(st.stored, 2); /* the two forwarded ones, in flight */
    char why[256];
    CHECK_MSG(sdr_check(n.store, why, sizeof why) == 0, "%s", why);
    /* and the agent keeps serving */
    send_simple(&n, "ipn:1.1", "ipn:2.1", "ok", 2, NULL);
    CHECK_EQ_U64(n.f->n, 3);
    node_close(&n);
    world_end(clk, loop);
}

/* A bundle from src to ipn:1.5 (report-to ipn:9.0), with block type 8
 * carrying blk_flags before its payload; seq tells bundles apart. */
static uint8_t *bundle_rpt(const char *src, uint64_t pflags, uint64_t blk_flags,
                           uint64_t seq, size_t *len)
{
    bp_bundle b;
    memset(&b, 0, sizeof b);
    b.pri.version = 7;
    b.pri.flags = pflags;
    b.pri.crc_type = BP_CRC_32C;
    b.pri.dest = eid("ipn:1.5");
    b.pri.src = eid(src);
    b.pri.report_to = eid(bp_eid_is_none(&b.pri.src) ? "dtn:none" : "ipn:9.0");
    b.pri.ctime_ms = T0;
    b.pri.seq = seq;
    b.pri.lifetime_ms = 3600000;
    static const uint8_t opaque[] = {0x01, 0x02, 0x03};
    b.blocks[0] = (bp_block){.type = 8,
                             .number = 2,
                             .flags = blk_flags,
                             .data = opaque,
                             .data_len = sizeof opaque};
    b.blocks[1] =
        (bp_block){.type = 1, .number = 1, .data = (const uint8_t *)"x", .data_len = 1};
    b.n_blocks = 2;
    uint8_t *buf = malloc(1024);
    CHECK_OK(bp_bundle_encode(&b, buf, 1024, len, NULL));
    return buf;
}

/* RFC 9171 4.2.4 and 5.6 step 3: a block that can't be processed and has
 * "transmit status report if block can't be processed" set gets a reception
 * report with reason 11 (block unsupported) sent to the report-to endpoint,
 * whether the bundle asked for reception reports or not, and whatever else
 * the block's flags say (keep it, discard it, delete the bundle); never for
 * an anonymous bundle or an administrative record. */
TEST(unprocessable_block_asking_for_a_report_gets_reason_11)
{
    tern_clock *clk;
    tern_loop *loop;
    world(T0, &clk, &loop);
    node n;
    node_open(&n, 1, clk, loop, NULL);
    CHECK_OK(bp_outduct_add(n.a, "fake", "9", "", 0));
    CHECK_OK(bp_egress_plan_add(n.a, 9, "fake", "9"));
    bp_eid local = eid("ipn:1.5");
    CHECK_OK(bp_endpoint_add(n.a, &local, BP_RECV_QUEUE));
    static const struct {
        const char *src;
        uint64_t pflags, blk_flags;
        bool reported, delivered;
    } cases[] = {
        {"ipn:9.1", 0, BP_BLK_REPORT, true, true},
        {"ipn:9.1", BP_FLAG_RPT_RECEPTION, BP_BLK_REPORT | BP_BLK_DISCARD, true, true},
        {"ipn:9.1", 0, BP_BLK_REPORT | BP_BLK_DELETE_BUNDLE, true, false},
        {"ipn:9.1", 0, 0, false, true},
        {"dtn:none", BP_FLAG_RPT_RECEPTION, BP_BLK_REPORT, false, true},
        {"ipn:9.1", BP_FLAG_ADMIN, BP_BLK_REPORT, false, true},
    };
    size_t want_reports = 0, want_delivered = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        want_delivered += cases[i].delivered;
        size_t len;
        uint8_t *b =
            bundle_rpt(cases[i].src, cases[i].pflags, cases[i].blk_flags, 10 + i, &len);
        CHECK_EQ_INT(bp_agent_receive(n.a, b, len), 1);
        free(b);
        want_reports += cases[i].reported;
        CHECK_MSG(n.f->n == want_reports, "case %zu: %zu reports sent", i, n.f->n);
        if (cases[i].reported) {
            bp_bundle r;
            sent_decode(&n, n.f->n - 1, &r);
            CHECK(r.pri.flags & BP_FLAG_ADMIN);
            CHECK_EQ_U64(r.pri.dest.node, 9);
            CHECK_EQ_U64(r.pri.dest.service, 0);
            const bp_block *pl = &r.blocks[r.n_blocks - 1];
            bp_admin_record ar;
            CHECK_OK(bp_admin_decode(pl->data, pl->data_len, &ar, NULL));
            CHECK_EQ_U64(ar.type, BP_ADMIN_STATUS_REPORT);
            CHECK(ar.sr.received.asserted);
            CHECK(!ar.sr.forwarded.asserted && !ar.sr.delivered.asserted &&
                  !ar.sr.deleted.asserted);
            CHECK_EQ_U64(ar.sr.reason, BP_REASON_BLOCK_UNSUPPORTED);
            CHECK_EQ_U64(ar.sr.source.node, 9);
            CHECK_EQ_U64(ar.sr.source.service, 1);
            CHECK_EQ_U64(ar.sr.ctime_ms, T0);
            CHECK_EQ_U64(ar.sr.seq, 10 + i);
        }
    }
    CHECK_EQ_U64(stats(&n).reports_sent, 3);
    CHECK_EQ_U64(bp_endpoint_queued(n.a, &local), want_delivered);
    node_close(&n);
    world_end(clk, loop);
}

/* A bundle to dst made without a clock (creation time 0), with a bundle age
 * block of 1 s or none, and a payload of len bytes. */
static uint8_t *clockless_bundle(const char *dst, bool age, const uint8_t *p, size_t len,
                                 uint64_t seq, size_t *out)
{
    bp_bundle b;
    memset(&b, 0, sizeof b);
    b.pri.version = 7;
    b.pri.crc_type = BP_CRC_32C;
    b.pri.dest = eid(dst);
    b.pri.src = eid("ipn:9.1");
    b.pri.report_to = eid("ipn:9.0");
    b.pri.seq = seq;
    b.pri.lifetime_ms = 3600000;
    size_t k = 0;
    if (age) {
        b.blocks[k++] = (bp_block){.type = BP_BLOCK_AGE, .number = 2};
        b.has_age = true;
        b.age_ms = 1000;
    }
    b.blocks[k++] = (bp_block){.type = 1, .number = 1, .data = p, .data_len = len};
    b.n_blocks = k;
    size_t cap = len + 256;
    uint8_t *buf = malloc(cap);
    CHECK_OK(bp_bundle_encode(&b, buf, cap, out, NULL));
    return buf;
}

/* RFC 9171 4.4.2: a bundle whose creation time is 0 must carry a bundle age
 * block. One without is refused on reception (counted as malformed, logged
 * once), and what follows it in the same buffer is still read; one with it
 * is taken, and every fragment made of it carries the age block although
 * the block is not flagged for replication. */
TEST(clockless_bundle_needs_an_age_block_in_every_fragment)
{
    tern_clock *clk;
    tern_loop *loop;
    world(T0, &clk, &loop);
    node n;
    node_open(&n, 1, clk, loop, NULL);
    CHECK_OK(bp_outduct_add(n.a, "fake", "2", "", 100)); /* fragments above 100 */
    CHECK_OK(bp_egress_plan_add(n.a, 2, "fake", "2"));
    bp_eid local = eid("ipn:1.5");
    CHECK_OK(bp_endpoint_add(n.a, &local, BP_RECV_QUEUE));
    uint8_t p[350];
    fill(p, sizeof p, 77);
    size_t l1, l2;
    uint8_t *bad = clockless_bundle("ipn:1.5", false, p, 10, 1, &l1);
    uint8_t *good = clockless_bundle("ipn:1.5", true, p, 20, 2, &l2);
    uint8_t both[1024];
    memcpy(both, bad, l1);
    memcpy(both + l1, good, l2);
    CHECK_EQ_INT(bp_agent_receive(n.a, both, l1 + l2), 2);
    bp_agent_stats st = stats(&n);
    CHECK_EQ_U64(st.malformed, 1);
    CHECK_EQ_U64(st.received, 1);
    CHECK_EQ_U64(n.f->n, 0); /* no report about the refused one either */
    recv_expect(&n, "ipn:1.5", p, 20);
    CHECK_EQ_U64(bp_endpoint_queued(n.a, &local), 0);
    free(bad);
    free(good);
    /* refused on the way through too: nothing forwarded */
    bad = clockless_bundle("ipn:2.1", false, p, 10, 3, &l1);
    CHECK_EQ_INT(bp_agent_receive(n.a, bad, l1), 1);
    CHECK_EQ_U64(stats(&n).malformed, 2);
    CHECK_EQ_U64(n.f->n, 0);
    free(bad);

    /* forwarded in four fragments, each with its age block */
    good = clockless_bundle("ipn:2.1", true, p, sizeof p, 4, &l2);
    CHECK_EQ_INT(bp_agent_receive(n.a, good, l2), 1);
    free(good);
    CHECK_EQ_U64(stats(&n).fragments_made, 4);
    CHECK_EQ_U64(n.f->n, 4);
    for (size_t i = 0; i < n.f->n; i++) {
        bp_bundle f;
        sent_decode(&n, i, &f);
        CHECK(f.pri.flags & BP_FLAG_FRAGMENT);
        CHECK_EQ_U64(f.pri.ctime_ms, 0);
        CHECK_EQ_U64(f.pri.frag_offset, 100 * i);
        CHECK_MSG(f.has_age, "fragment %zu has no bundle age block", i);
        CHECK(f.age_ms >= 1000);
    }
    node_close(&n);
    world_end(clk, loop);
}

/* A bundle from ipn:9.1 to dst with n extension blocks of unknown type
 * (kept and forwarded unchanged) before the payload "many". */
static uint8_t *bundle_of_blocks_p(const char *dst, size_t n, uint64_t seq,
                                   const uint8_t *p, size_t plen, size_t *len)
{
    bp_bundle b;
    memset(&b, 0, sizeof b);
    b.pri.version = 7;
    b.pri.crc_type = BP_CRC_32C;
    b.pri.dest = eid(dst);
    b.pri.src = eid("ipn:9.1");
    b.pri.report_to = eid("dtn:none");
    b.pri.ctime_ms = T0;
    b.pri.seq = seq;
    b.pri.lifetime_ms = 3600000;
    CHECK_OK(bp_bundle_reserve(&b, n + 1));
    bp_block *k = bp_bundle_blocks(&b);
    static const uint8_t opaque[] = {0x01, 0x02, 0x03};
    for (size_t i = 0; i < n; i++)
        k[b.n_blocks++] = (bp_block){.type = 200 + i % 5,
                                     .number = 2 + i,
                                     .crc_type = BP_CRC_16,
                                     .data = opaque,
                                     .data_len = sizeof opaque};
    k[b.n_blocks++] = (bp_block){.type = 1, .number = 1, .data = p, .data_len = plen};
    size_t cap = 64 + n * 16 + plen;
    uint8_t *buf = malloc(cap);
    CHECK_OK(bp_bundle_encode(&b, buf, cap, len, NULL));
    bp_bundle_release(&b);
    return buf;
}

static uint8_t *bundle_of_blocks(const char *dst, size_t n, uint64_t seq, size_t *len)
{
    return bundle_of_blocks_p(dst, n, seq, (const uint8_t *)"many", 4, len);
}

/* RFC 9171 sets no limit on blocks: bundles of 40 and 200 extension blocks
 * are neither malformed nor "store full" (which would leave an LTP block
 * unclaimed and a TCP session paused for ever): each is delivered here, and
 * forwarded with every block, a previous node block added. */
TEST(bundles_of_many_blocks_delivered_and_forwarded)
{
    tern_clock *clk;
    tern_loop *loop;
    world(T0, &clk, &loop);
    node n;
    node_open(&n, 1, clk, loop, NULL);
    CHECK_OK(bp_outduct_add(n.a, "fake", "2", "", 0));
    CHECK_OK(bp_egress_plan_add(n.a, 2, "fake", "2"));
    bp_eid local = eid("ipn:1.5");
    CHECK_OK(bp_endpoint_add(n.a, &local, BP_RECV_QUEUE));
    static const size_t counts[] = {40, 200};
    for (size_t c = 0; c < 2; c++) {
        size_t len;
        uint8_t *b = bundle_of_blocks("ipn:1.5", counts[c], 2 * c, &len);
        CHECK_EQ_INT(bp_agent_receive(n.a, b, len), 1);
        free(b);
        recv_expect(&n, "ipn:1.5", "many", 4);
        b = bundle_of_blocks("ipn:2.1", counts[c], 2 * c + 1, &len);
        CHECK_EQ_INT(bp_agent_receive(n.a, b, len), 1);
        free(b);
        CHECK_EQ_U64(n.f->n, c + 1);
        bp_bundle f;
        sent_decode(&n, c, &f);
        CHECK_EQ_U64(f.n_blocks, counts[c] + 2); /* and the previous node */
        CHECK(f.has_prev_node && f.prev_node.node == 1);
        for (size_t i = 0; i < counts[c]; i++) {
            const bp_block *k = bp_bundle_block(&f, 2 + i);
            CHECK_MSG(k && k->type == 200 + i % 5, "block %zu", 2 + i);
            CHECK_EQ_MEM(k->data, "\x01\x02\x03", 3);
        }
        CHECK_EQ_MEM(bp_bundle_payload(&f)->data, "many", 4);
        bp_bundle_release(&f);
        bp_outduct_result(n.f->log[c].od, n.f->log[c].xmit, BP_XMIT_OK);
    }
    bp_agent_stats st = stats(&n);
    CHECK_EQ_U64(st.malformed, 0);
    CHECK_EQ_U64(st.received, 4);
    CHECK_EQ_U64(st.forwarded, 2);
    CHECK_EQ_U64(st.stored, 0);

    /* fragmented on a duct of 100 payload bytes: the first fragment carries
     * all 60 blocks, the others none (not flagged for replication); the
     * fragments, received at node 3, give the whole bundle back */
    node m;
    node_open(&m, 3, clk, loop, NULL);
    bp_eid there = eid("ipn:3.1");
    CHECK_OK(bp_endpoint_add(m.a, &there, BP_RECV_QUEUE));
    CHECK_OK(bp_outduct_add(n.a, "fake", "3", "", 100));
    CHECK_OK(bp_egress_plan_add(n.a, 3, "fake", "3"));
    uint8_t p[350];
    fill(p, sizeof p, 5);
    size_t len;
    uint8_t *b = bundle_of_blocks_p("ipn:3.1", 60, 9, p, sizeof p, &len);
    CHECK_EQ_INT(bp_agent_receive(n.a, b, len), 1);
    free(b);
    CHECK_EQ_U64(n.f->n, 6);
    for (size_t i = 2; i < 6; i++) {
        bp_bundle f;
        sent_decode(&n, i, &f);
        CHECK_EQ_U64(f.pri.frag_offset, 100 * (i - 2));
        CHECK_EQ_U64(f.n_blocks, i == 2 ? 62 : 2);
        CHECK_EQ_U64(bp_bundle_payload(&f)->data_len, i < 5 ? 100 : 50);
        CHECK_EQ_MEM(bp_bundle_payload(&f)->data, p + 100 * (i - 2),
                     bp_bundle_payload(&f)->data_len);
        bp_bundle_release(&f);
        CHECK_EQ_INT(bp_agent_receive(m.a, n.f->log[i].bytes, n.f->log[i].len), 1);
    }
    recv_expect(&m, "ipn:3.1", p, sizeof p);
    CHECK_EQ_U64(stats(&m).reassembled, 1);
    node_close(&m);
    node_close(&n);
    world_end(clk, loop);
}

static const char ion_seg[] =
    "030181250001008340e413009f8907184001820282020182028201018202820101821b000000c5bf"
    "72c2301a000222e31a000493e042461185060210004582028201008518c103010045840001000085"
    "07040100410085010101004303476fff9f8907184001820282020182028201018202820101821b00"
    "0000c5bf72c2941a000222e41a000493e0427f2b85060210004582028201008518c1030100458400"
    "0100008507040100410085010101005864746573742e2e2e00000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000ff9f89"
    "07184001820282020182028201018202820101821b000000c5bf72c2941a000222e51a000493e042"
    "32d685060210004582028201008518c1030100458400010000850704010041018501010100586474"
    "6573742e2e2e00000000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000ff";

/* ION's LTP block (three bundles back to back) delivered to node 2. */
/* RFC 9171 4.1: a bundle is an indefinite-length array on the wire. One
 * received definite-length is taken, and forwarded indefinite-length with
 * every block (and so every CRC) as it was. */
TEST(definite_length_bundle_forwarded_indefinite)
{
    tern_clock *clk;
    tern_loop *loop;
    world(T0, &clk, &loop);
    node n;
    node_open(&n, 1, clk, loop, NULL);
    CHECK_OK(bp_outduct_add(n.a, "fake", "2", "", 0));
    CHECK_OK(bp_egress_plan_add(n.a, 2, "fake", "2"));
    for (uint8_t crc = BP_CRC_NONE; crc <= BP_CRC_32C; crc++) {
        bp_bundle b;
        memset(&b, 0, sizeof b);
        b.definite = true;
        b.pri.version = 7;
        b.pri.crc_type = crc ? crc : BP_CRC_16; /* RFC 9171: the primary has one */
        b.pri.dest = eid("ipn:2.1");
        b.pri.src = eid("ipn:9.1");
        b.pri.report_to = eid("ipn:9.1");
        b.pri.ctime_ms = T0;
        b.pri.seq = crc;
        b.pri.lifetime_ms = 3600000;
        static const uint8_t opaque[] = {0x83, 0x01, 0x02, 0x03};
        b.blocks[0] = (bp_block){
            .type = 8, .number = 2, .crc_type = crc, .data = opaque, .data_len = 4};
        b.blocks[1] = (bp_block){.type = 1,
                                 .number = 1,
                                 .crc_type = crc,
                                 .data = (const uint8_t *)"definite",
                                 .data_len = 8};
        b.n_blocks = 2;
        uint8_t in[512];
        size_t len;
        CHECK_OK(bp_bundle_encode(&b, in, sizeof in, &len, NULL));
        CHECK_EQ_INT(in[0], 0x83); /* [primary, block 2, payload] */
        CHECK_EQ_INT(bp_agent_receive(n.a, in, len), 1);
        CHECK_EQ_U64(n.f->n, (size_t)crc + 1);
        const sent *s = &n.f->log[crc];
        CHECK_EQ_INT(s->bytes[0], 0x9f);
        CHECK_EQ_INT(s->bytes[s->len - 1], 0xff);
        bp_bundle f;
        size_t used;
        const char *why = NULL;
        CHECK_MSG(bp_bundle_decode(s->bytes, s->len, &f, &used, &why) == 0, "%s", why);
        CHECK_EQ_U64(used, s->len);
        CHECK(!f.definite);
        /* the primary block goes as it came, byte for byte */
        tern_cbor_dec d;
        tern_cbor_dec_init(&d, in + 1, len - 1);
        CHECK_OK(tern_cbor_skip(&d));
        CHECK_EQ_MEM(s->bytes + 1, in + 1, d.pos);
        const bp_block *k = bp_bundle_block(&f, 2);
        CHECK(k && k->type == 8 && k->crc_type == crc);
        CHECK_EQ_MEM(k->data, opaque, sizeof opaque);
        k = bp_bundle_block(&f, 1);
        CHECK(k && k->crc_type == crc && k->data_len == 8);
        CHECK_EQ_MEM(k->data, "definite", 8);
        CHECK(f.has_prev_node && f.prev_node.node == 1);
    }
    node_close(&n);
    world_end(clk, loop);
}

/* Builds a bundle from src to dst with the given EID forms (3: RFC 9758's
 * [allocator, node, service]) and report requests. */
static uint8_t *bundle_eids(const char *src, const char *dst, const char *rpt, bool three,
                            uint64_t flags, uint64_t seq, size_t *len)
{
    bp_bundle b;
    memset(&b, 0, sizeof b);
    b.pri.version = 7;
    b.pri.flags = flags;
    b.pri.crc_type = BP_CRC_32C;
    b.pri.src = eid(src);
    b.pri.dest = eid(dst);
    b.pri.report_to = eid(rpt);
    b.pri.src.ipn3 = b.pri.dest.ipn3 = b.pri.report_to.ipn3 = three;
    b.pri.ctime_ms = T0;
    b.pri.seq = seq;
    b.pri.lifetime_ms = 3600000;
    b.blocks[0] = (bp_block){.type = 1,
                             .number = 1,
                             .crc_type = BP_CRC_32C,
                             .data = (const uint8_t *)"three",
                             .data_len = 5};
    b.n_blocks = 1;
    uint8_t *buf = malloc(512);
    CHECK_OK(bp_bundle_encode(&b, buf, 512, len, NULL));
    return buf;
}

/* The length of the primary block of the bundle at buf (after its array head). */
static size_t primary_len(const uint8_t *buf, size_t len)
{
    tern_cbor_dec d;
    tern_cbor_dec_init(&d, buf + 1, len - 1);
    CHECK_OK(tern_cbor_skip(&d));
    return d.pos;
}

/* RFC 9758: ipn:0.N.S in the 3-element form is ipn:N.S, so it is routed and
 * delivered as node N; another allocator's node N is another node. What is
 * forwarded keeps the form it came in (the primary block byte for byte),
 * and a report goes back in it. */
TEST(three_element_ipn_eids_routed_delivered_and_forwarded_as_received)
{
    tern_clock *clk;
    tern_loop *loop;
    world(T0, &clk, &loop);
    node n;
    node_open(&n, 1, clk, loop, NULL);
    CHECK_OK(bp_outduct_add(n.a, "fake", "2", "", 0));
    CHECK_OK(bp_egress_plan_add(n.a, 2, "fake", "2"));
    CHECK_OK(bp_egress_plan_add(n.a, 9, "fake", "2"));
    bp_eid local = eid("ipn:1.5");
    CHECK_OK(bp_endpoint_add(n.a, &local, BP_RECV_QUEUE));

    /* for ipn:0.2.1, reception and forwarding reports to ipn:0.9.0 */
    size_t len;
    uint8_t *in = bundle_eids("ipn:9.1", "ipn:2.1", "ipn:9.0", true,
                              BP_FLAG_RPT_RECEPTION | BP_FLAG_RPT_FORWARD, 1, &len);
    CHECK(memmem(in, len, "\x82\x02\x83\x00\x02\x01", 6)); /* [2, [0, 2, 1]] */
    CHECK_EQ_INT(bp_agent_receive(n.a, in, len), 1);
    CHECK_EQ_U64(n.f->n, 2); /* the bundle and the reception report */
    size_t fwd = SIZE_MAX;
    for (size_t i = 0; i < n.f->n; i++) {
        bp_bundle b;
        sent_decode(&n, i, &b);
        if (b.pri.flags & BP_FLAG_ADMIN) {
            /* the report goes to the report-to EID in its form */
            CHECK(b.pri.dest.ipn3);
            CHECK_EQ_U64(b.pri.dest.node, 9);
            bp_admin_record r;
            const bp_block *pl = &b.blocks[b.n_blocks - 1];
            CHECK_OK(bp_admin_decode(pl->data, pl->data_len, &r, NULL));
            CHECK(r.sr.received.asserted);
            CHECK(r.sr.source.ipn3 && r.sr.source.node == 9 && r.sr.source.service == 1);
        } else {
            fwd = i;
        }
    }
    CHECK(fwd != SIZE_MAX);
    const sent *s = &n.f->log[fwd];
    size_t pl = primary_len(in, len);
    CHECK_EQ_U64(primary_len(s->bytes, s->len), pl);
    CHECK_EQ_MEM(s->bytes, in, 1 + pl); /* byte for byte, CRC included */
    bp_outduct_result(s->od, s->xmit, BP_XMIT_OK);
    CHECK_EQ_U64(stats(&n).reports_sent, 2); /* reception, forwarding */
    free(in);

    /* the same in the 2-element form stays 2-element, and is a duplicate */
    in = bundle_eids("ipn:9.1", "ipn:2.1", "ipn:9.0", false, 0, 1, &len);
    CHECK_EQ_INT(bp_agent_receive(n.a, in, len), 1);
    CHECK_EQ_U64(stats(&n).duplicates, 1);
    free(in);
    in = bundle_eids("ipn:9.1", "ipn:2.1", "ipn:9.0", false, 0, 2, &len);
    CHECK_EQ_INT(bp_agent_receive(n.a, in, len), 1);
    CHECK_EQ_U64(n.f->n, 4);
    CHECK_EQ_MEM(n.f->log[3].bytes, in, 1 + primary_len(in, len));
    bp_bundle b;
    sent_decode(&n, 3, &b);
    CHECK(!b.pri.dest.ipn3 && !b.pri.src.ipn3);
    free(in);

    /* ipn:0.1.5 is this node's ipn:1.5 */
    in = bundle_eids("ipn:9.1", "ipn:0.1.5", "ipn:9.0", true, 0, 3, &len);
    CHECK_EQ_INT(bp_agent_receive(n.a, in, len), 1);
    recv_expect(&n, "ipn:1.5", "three", 5);
    free(in);

    /* node 2 of allocator 977000 is not node 2: no route until it has one */
    in = bundle_eids("ipn:9.1", "ipn:977000.2.1", "ipn:9.0", true, 0, 4, &len);
    CHECK_EQ_INT(bp_agent_receive(n.a, in, len), 1);
    CHECK_EQ_U64(n.f->n, 4);
    CHECK_EQ_U64(stats(&n).limbo, 1);
    CHECK_OK(bp_egress_plan_add(n.a, 977000ull << 32 | 2, "fake", "2"));
    CHECK_EQ_U64(stats(&n).limbo, 0);
    CHECK_EQ_U64(n.f->n, 5);
    CHECK_EQ_MEM(n.f->log[4].bytes, in, 1 + primary_len(in, len));
    sent_decode(&n, 4, &b);
    char t[BP_EID_TEXT_MAX];
    bp_eid_print(&b.pri.dest, t, sizeof t);
    CHECK_EQ_STR(t, "ipn:977000.2.1");
    free(in);
    node_close(&n);
    world_end(clk, loop);
}

TEST(ion_block_delivered)
{
    tern_clock *clk;
    tern_loop *loop;
    world(T0, &clk, &loop);
    node n;
    node_open(&n, 2, clk, loop, NULL);
    bp_eid dst = eid("ipn:2.1");
    CHECK_OK(bp_endpoint_add(n.a, &dst, BP_RECV_QUEUE));
    size_t hl = strlen(ion_seg) / 2;
    uint8_t *seg = malloc(hl);
    for (size_t i = 0; i < hl; i++) {
        unsigned v;
        sscanf(ion_seg + 2 * i, "%2x", &v);
        seg[i] = (uint8_t)v;
    }
    ltp_seg s;
    memset(&s, 0, sizeof s);
    CHECK_OK(ltp_seg_decode(seg, hl, &s, 0));
    CHECK_EQ_INT(bp_agent_receive(n.a, s.data, (size_t)s.length), 3);
    static const size_t lens[3] = {3, 100, 100};
    for (int i = 0; i < 3; i++) {
        bp_delivery d;
        CHECK_OK(bp_agent_recv(n.a, &dst, &d));
        CHECK_EQ_U64(d.len, lens[i]);
        CHECK_EQ_U64(d.src.node, 1);
        CHECK_EQ_U64(d.lifetime_ms, 300000);
        if (i)
            CHECK_EQ_MEM(d.payload, "test...", 7);
        bp_delivery_release(&d);
    }
    /* after their lifetime, the same bytes are refused as expired */
    advance(loop, 400000);
    CHECK_EQ_INT(bp_agent_receive(n.a, s.data, (size_t)s.length), 3);
    CHECK_EQ_U64(stats(&n).expired, 3);
    CHECK_EQ_U64(stats(&n).delivered, 3);
    free(seg);
    node_close(&n);
    world_end(clk, loop);
}

/* Bundles survive a restart on a durable store: queued ones are sent after
 * resume, delivered-but-unread ones are still there. */
TEST(durable_restart)
{
    const char *dir = tt_tmpdir();
    tern_clock *clk;
    tern_loop *loop;
    world(T0, &clk, &loop);
    node n;
    node_open(&n, 1, clk, loop, dir);
    bp_eid q = eid("ipn:1.2");
    CHECK_OK(bp_endpoint_add(n.a, &q, BP_RECV_QUEUE));
    CHECK_OK(bp_outduct_add(n.a, "fake", "2", "", 0));
    CHECK_OK(bp_egress_plan_add(n.a, 2, "fake", "2"));
    bp_outduct_set_up(bp_outduct_find(n.a, "fake", "2"), false);
    uint8_t p[5][3000];
    for (int i = 0; i < 5; i++) {
        fill(p[i], sizeof p[i], (uint64_t)i + 100);
        send_simple(&n, "ipn:1.1", "ipn:2.1", p[i], sizeof p[i], NULL);
    }
    uint8_t *big = malloc(300000);
    fill(big, 300000, 77);
    send_simple(&n, "ipn:1.1", "ipn:1.2", big, 300000, NULL);
    node_close(&n);

    node_open(&n, 1, clk, loop, dir);
    CHECK_EQ_U64(stats(&n).stored, 6);
    CHECK_OK(bp_endpoint_add(n.a, &q, BP_RECV_QUEUE));
    CHECK_OK(bp_outduct_add(n.a, "fake", "2", "", 0));
    CHECK_OK(bp_egress_plan_add(n.a, 2, "fake", "2"));
    CHECK_EQ_INT(bp_agent_resume(n.a), 6);
    CHECK_EQ_U64(n.f->n, 5);
    for (int i = 0; i < 5; i++) {
        bp_bundle b;
        sent_decode(&n, (size_t)i, &b);
        CHECK_EQ_MEM(b.blocks[b.n_blocks - 1].data, p[i], sizeof p[i]);
        bp_outduct_result(n.f->log[i].od, n.f->log[i].xmit, BP_XMIT_OK);
    }
    recv_expect(&n, "ipn:1.2", big, 300000);
    CHECK_EQ_U64(stats(&n).stored, 0);
    free(big);
    node_close(&n);
    world_end(clk, loop);
}

/* A new file dir/name of the first 100 bytes of b, open with mode. */
static int small_file(const char *dir, const char *name, int mode, const uint8_t *b)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, mode | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0);
    CHECK_EQ_U64((uint64_t)pwrite(fd, b, 100, 0), 100);
    return fd;
}

/* A payload sent from a file by reference: the store keeps the file's path
 * and identity, not its bytes; the bytes come from the file when the bundle
 * goes out (here: out by the fake CLA, and to a local reader), also after a
 * restart, which reopens the file by path. A file that changed, or went
 * before a restart, loses its bundles, counted; the node goes on. */
TEST(file_payloads_kept_by_reference)
{
    const char *dir = tt_tmpdir();
    char path[512];
    snprintf(path, sizeof path, "%s/source.bin", dir);
    enum { FSIZE = 200000, OFF = 1000, LEN = 150000 };
    uint8_t *file = malloc(FSIZE), *want = malloc(LEN + 4);
    fill(file, FSIZE, 5);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0);
    CHECK_EQ_U64((uint64_t)pwrite(fd, file, FSIZE, 0), FSIZE);
    memcpy(want, "HDR!", 4);
    memcpy(want + 4, file + OFF, LEN);

    tern_clock *clk;
    tern_loop *loop;
    world(T0, &clk, &loop);
    node n;
    node_open(&n, 1, clk, loop, dir);
    bp_eid q = eid("ipn:1.2"), src = eid("ipn:1.1"), far = eid("ipn:2.1");
    CHECK_OK(bp_endpoint_add(n.a, &q, BP_RECV_QUEUE));
    CHECK_OK(bp_outduct_add(n.a, "fake", "2", "", 0));
    CHECK_OK(bp_egress_plan_add(n.a, 2, "fake", "2"));

    /* out through a CLA: the bytes it is given are the head and the range */
    CHECK_OK(bp_agent_send_file(n.a, &src, &far, NULL, "HDR!", 4, fd, OFF, LEN, NULL));
    CHECK_EQ_U64(stats(&n).file_refs, 1);
    sdr_usage u;
    CHECK_OK(sdr_get_usage(n.store, &u));
    CHECK_EQ_U64(u.blob_bytes, 0); /* no copy of the payload in the store */
    CHECK_EQ_U64(n.f->n, 1);
    bp_bundle b;
    sent_decode(&n, 0, &b);
    CHECK_EQ_U64(b.blocks[b.n_blocks - 1].data_len, LEN + 4);
    CHECK_EQ_MEM(b.blocks[b.n_blocks - 1].data, want, LEN + 4);
    bp_outduct_result(n.f->log[0].od, n.f->log[0].xmit, BP_XMIT_OK);
    CHECK_EQ_U64(stats(&n).file_refs, 0);
    CHECK_EQ_U64(stats(&n).stored, 0);

    /* out through a CLA that takes 50,000 B payloads: fragmented from the
     * file's bytes (the payload is not in memory when it is dispatched) */
    bp_eid third = eid("ipn:3.1");
    CHECK_OK(bp_outduct_add(n.a, "fake", "3", "", 50000));
    CHECK_OK(bp_egress_plan_add(n.a, 3, "fake", "3"));
    CHECK_OK(bp_agent_send_file(n.a, &src, &third, NULL, "HDR!", 4, fd, OFF, LEN, NULL));
    CHECK_EQ_U64(n.f->n, 5);
    for (size_t i = 1; i < 5; i++) {
        sent_decode(&n, i, &b);
        CHECK(b.pri.flags & BP_FLAG_FRAGMENT);
        uint64_t at = b.pri.frag_offset, k = b.blocks[b.n_blocks - 1].data_len;
        CHECK(at + k <= LEN + 4);
        CHECK_EQ_MEM(b.blocks[b.n_blocks - 1].data, want + at, k);
        bp_outduct_result(n.f->log[i].od, n.f->log[i].xmit, BP_XMIT_OK);
    }
    CHECK_EQ_U64(stats(&n).file_refs, 0);
    CHECK_EQ_U64(stats(&n).stored, 0);

    /* to a local reader, after a restart: reopened by its path */
    CHECK_OK(bp_agent_send_file(n.a, &src, &q, NULL, "HDR!", 4, fd, OFF, LEN, NULL));
    node_close(&n);
    node_open(&n, 1, clk, loop, dir);
    CHECK_EQ_U64(stats(&n).file_refs, 1);
    CHECK_OK(bp_endpoint_add(n.a, &q, BP_RECV_QUEUE));
    CHECK_EQ_INT(bp_agent_resume(n.a), 1);
    recv_expect(&n, "ipn:1.2", want, LEN + 4);
    CHECK_EQ_U64(stats(&n).file_refs, 0);

    /* the file changes under a queued bundle: deleted, not sent wrong */
    CHECK_OK(bp_agent_send_file(n.a, &src, &q, NULL, NULL, 0, fd, 0, FSIZE, NULL));
    struct timespec ts[2] = {{0, UTIME_OMIT}, {1000000000, 0}};
    CHECK_OK(futimens(fd, ts));
    bp_delivery d;
    CHECK(bp_agent_recv(n.a, &q, &d) != 0);
    bp_agent_stats st = stats(&n);
    CHECK_EQ_U64(st.file_refs_lost, 1);
    CHECK_EQ_U64(st.file_refs, 0);
    CHECK_EQ_U64(st.stored, 0);

    /* the file goes while the node is down: its bundle is lost at restart */
    CHECK_OK(bp_agent_send_file(n.a, &src, &q, NULL, "x", 1, fd, 0, 100, NULL));
    node_close(&n);
    CHECK_OK(unlink(path));
    node_open(&n, 1, clk, loop, dir);
    CHECK_OK(bp_endpoint_add(n.a, &q, BP_RECV_QUEUE));
    CHECK_EQ_INT(bp_agent_resume(n.a), 0); /* dropped as it is read back */
    CHECK_RC(bp_agent_recv(n.a, &q, &d), -EAGAIN);
    CHECK_EQ_U64(stats(&n).file_refs_lost, 1);
    CHECK_EQ_U64(stats(&n).file_refs, 0);
    CHECK_EQ_U64(stats(&n).stored, 0);

    /* what cannot be referenced or does not hold the range is refused */
    int pp[2];
    CHECK_OK(pipe(pp));
    CHECK_RC(bp_agent_send_file(n.a, &src, &q, NULL, NULL, 0, pp[0], 0, 10, NULL),
             -ENOTSUP);
    CHECK_RC(bp_agent_send_file(n.a, &src, &q, NULL, NULL, 0, fd, 0, 10, NULL), -ENOTSUP);
    int fd2 = open(dir, O_RDONLY);
    CHECK_RC(bp_agent_send_file(n.a, &src, &q, NULL, NULL, 0, fd2, 0, 10, NULL),
             -ENOTSUP);
    CHECK_OK(close(fd2));
    /* write-only: the agent could not read the bytes when they go out */
    fd2 = small_file(dir, "write-only.bin", O_WRONLY, file);
    CHECK_RC(bp_agent_send_file(n.a, &src, &q, NULL, NULL, 0, fd2, 0, 10, NULL),
             -ENOTSUP);
    CHECK_OK(close(fd2));
    fd2 = small_file(dir, "second.bin", O_RDWR, file);
    CHECK_RC(bp_agent_send_file(n.a, &src, &q, NULL, NULL, 0, fd2, 50, 51, NULL),
             -EINVAL);
    CHECK_RC(bp_agent_send_file(n.a, &src, &q, NULL, NULL, 0, fd2, UINT64_MAX, 2, NULL),
             -EINVAL);
    CHECK_OK(bp_agent_send_file(n.a, &src, &q, NULL, NULL, 0, fd2, 50, 50, NULL));
    recv_expect(&n, "ipn:1.2", file + 50, 50);
    close(pp[0]);
    close(pp[1]);
    close(fd2);
    close(fd);
    node_close(&n);
    world_end(clk, loop);
    free(file);
    free(want);
}

/* A full store refuses a bundle whole (the peer keeps its copy: LTP cancels
 * the session) and takes bundles again once a reader makes room. */
TEST(full_store_refuses_then_recovers)
{
    tern_clock *clk;
    tern_loop *loop;
    world(T0, &clk, &loop);
    node n1, n2;
    node_open(&n1, 1, clk, loop, NULL);
    heap_bytes = 1u << 20;
    node_open(&n2, 2, clk, loop, NULL);
    bp_eid dst = eid("ipn:2.1");
    CHECK_OK(bp_endpoint_add(n2.a, &dst, BP_RECV_QUEUE));
    CHECK_OK(bp_outduct_add(n1.a, "fake", "2", "", 0));
    CHECK_OK(bp_egress_plan_add(n1.a, 2, "fake", "2"));
    static uint8_t p[40000];
    for (int i = 0; i < 40; i++) {
        fill(p, sizeof p, (uint64_t)i);
        send_simple(&n1, "ipn:1.1", "ipn:2.1", p, sizeof p, NULL);
    }
    CHECK_EQ_U64(n1.f->n, 40);
    size_t taken = 0;
    int rc = 0;
    while (taken < 40 && (rc = bp_agent_receive(n2.a, n1.f->log[taken].bytes,
                                                n1.f->log[taken].len)) == 1)
        taken++;
    CHECK_RC(rc, TERN_EFULL);
    CHECK(taken > 5 && taken < 40);
    bp_agent_stats st = stats(&n2);
    CHECK_EQ_U64(st.stored, taken);
    CHECK_EQ_U64(st.store_errors, 1);
    char why[256];
    CHECK_MSG(sdr_check(n2.store, why, sizeof why) == 0, "%s", why);
    printf("# a 1 MiB store took %zu bundles of 40 kB, then refused one\n", taken);
    /* the refused one was not remembered as seen: it is taken when offered again */
    size_t next = taken;
    for (int round = 0; next < 40 && round < 100; round++) {
        bp_delivery d;
        CHECK_OK(bp_agent_recv(n2.a, &dst, &d));
        bp_delivery_release(&d);
        rc = bp_agent_receive(n2.a, n1.f->log[next].bytes, n1.f->log[next].len);
        CHECK(rc == 1 || rc == TERN_EFULL);
        if (rc == 1)
            next++;
    }
    CHECK_EQ_U64(next, 40);
    bp_delivery d;
    size_t left = 0;
    while (bp_agent_recv(n2.a, &dst, &d) == 0) {
        bp_delivery_release(&d);
        left++;
    }
    CHECK_EQ_U64(stats(&n2).taken, 40);
    CHECK_EQ_U64(stats(&n2).duplicates, 0);
    node_close(&n1);
    node_close(&n2);
    world_end(clk, loop);
}

/* A bundle the medium can never carry is deleted (with its report), and the
 * ones behind it still go. */
TEST(too_big_for_the_medium)
{
    tern_clock *clk;
    tern_loop *loop;
    world(T0, &clk, &loop);
    node n;
    node_open(&n, 1, clk, loop, NULL);
    n.f->max_len = 2000;
    n.f->mode = 1;
    bp_eid rep = eid("ipn:1.9");
    CHECK_OK(bp_endpoint_add(n.a, &rep, BP_RECV_QUEUE));
    CHECK_OK(bp_outduct_add(n.a, "fake", "2", "", 0));
    CHECK_OK(bp_egress_plan_add(n.a, 2, "fake", "2"));
    static uint8_t p[5000];
    bp_send_opts o;
    bp_send_opts_init(&o);
    o.flags = BP_FLAG_NO_FRAGMENT | BP_FLAG_RPT_DELETION;
    o.report_to = &rep;
    send_simple(&n, "ipn:1.1", "ipn:2.1", p, sizeof p, &o);
    send_simple(&n, "ipn:1.1", "ipn:2.1", p, 100, NULL);
    CHECK_EQ_U64(n.f->n, 1);
    bp_agent_stats st = stats(&n);
    CHECK_EQ_U64(st.deleted, 1);
    CHECK_EQ_U64(st.forwarded, 1);
    CHECK_EQ_U64(st.stored, 1); /* the report, waiting to be read */
    bp_delivery d;
    CHECK_OK(bp_agent_recv(n.a, &rep, &d));
    bp_admin_record r;
    CHECK_OK(bp_admin_decode(d.payload, d.len, &r, NULL));
    CHECK(r.sr.deleted.asserted);
    CHECK_EQ_U64(r.sr.reason, BP_REASON_NO_ROUTE);
    bp_delivery_release(&d);
    /* and with a limit set by the CLA, a fragmentable bundle is split */
    bp_outduct_set_max_payload(bp_outduct_find(n.a, "fake", "2"), 1500);
    send_simple(&n, "ipn:1.1", "ipn:2.1", p, sizeof p, NULL);
    CHECK_EQ_U64(n.f->n, 1 + 4);
    node_close(&n);
    world_end(clk, loop);
}

/* A bundle queued before the CLA learnt its medium's limit (a TCPCLv4
 * peer's transfer MRU comes with the session) is fragmented when the CLA
 * turns it down as too big, where its flags allow; one that may not be
 * fragmented is deleted with its report. */
TEST(too_big_fragmented_once_the_limit_is_known)
{
    tern_clock *clk;
    tern_loop *loop;
    world(T0, &clk, &loop);
    node n;
    node_open(&n, 1, clk, loop, NULL);
    n.f->max_len = 2000;
    n.f->mode = 1;
    bp_eid rep = eid("ipn:1.9");
    CHECK_OK(bp_endpoint_add(n.a, &rep, BP_RECV_QUEUE));
    CHECK_OK(bp_outduct_add(n.a, "fake", "2", "", 0));
    CHECK_OK(bp_egress_plan_add(n.a, 2, "fake", "2"));
    bp_outduct *od = bp_outduct_find(n.a, "fake", "2");
    bp_outduct_set_up(od, false); /* no session yet */
    static uint8_t p[5000];
    for (size_t i = 0; i < sizeof p; i++)
        p[i] = (uint8_t)(i * 7);
    bp_send_opts o;
    bp_send_opts_init(&o);
    o.flags = BP_FLAG_RPT_DELETION;
    o.report_to = &rep;
    send_simple(&n, "ipn:1.1", "ipn:2.1", p, sizeof p, &o);
    o.flags = BP_FLAG_NO_FRAGMENT | BP_FLAG_RPT_DELETION;
    send_simple(&n, "ipn:1.1", "ipn:2.1", p, sizeof p, &o);
    CHECK_EQ_U64(bp_outduct_queued(od), 2);
    /* the session comes up and brings the limit */
    bp_outduct_set_max_payload(od, 1500);
    bp_outduct_set_up(od, true);
    CHECK_EQ_U64(n.f->n, 4); /* ceil(5000 / 1500) fragments of the first */
    size_t got = 0;
    for (size_t i = 0; i < n.f->n; i++) {
        bp_bundle b;
        CHECK_OK(bp_bundle_decode(n.f->log[i].bytes, n.f->log[i].len, &b, NULL, NULL));
        CHECK(b.pri.flags & BP_FLAG_FRAGMENT);
        CHECK_EQ_U64(b.pri.frag_offset, got);
        CHECK_EQ_U64(b.pri.total_adu_len, sizeof p);
        const bp_block *pl = &b.blocks[b.n_blocks - 1];
        CHECK(pl->data_len <= 1500);
        CHECK(memcmp(pl->data, p + got, pl->data_len) == 0);
        got += pl->data_len;
    }
    CHECK_EQ_U64(got, sizeof p);
    bp_agent_stats st = stats(&n);
    CHECK_EQ_U64(st.fragmented, 1);
    CHECK_EQ_U64(st.deleted, 1); /* the one that may not be fragmented */
    /* ... and its application is told, reports or not (issue 18 item 2) */
    CHECK_EQ_INT(n.dropped, 1);
    CHECK_EQ_U64(st.drops_told, 1);
    CHECK_EQ_INT(n.dropped_code, TERN_ETOOBIG);
    CHECK_EQ_U64(n.dropped_seq, 1);
    CHECK_EQ_STR(n.dropped_src, "ipn:1.1");
    CHECK_MSG(strstr(n.dropped_why, "may not be fragmented"), "why: %s", n.dropped_why);
    bp_delivery d;
    CHECK_OK(bp_agent_recv(n.a, &rep, &d));
    bp_admin_record r;
    CHECK_OK(bp_admin_decode(d.payload, d.len, &r, NULL));
    CHECK(r.sr.deleted.asserted);
    CHECK_EQ_U64(r.sr.reason, BP_REASON_NO_ROUTE);
    bp_delivery_release(&d);
    CHECK_RC(bp_agent_recv(n.a, &rep, &d), -EAGAIN);
    node_close(&n);
    world_end(clk, loop);
}

/* A bundle that may not be fragmented and is above what its outduct's
 * medium carries, once that is known (a TCPCLv4 peer's transfer MRU, a UDP
 * datagram): refused by bp_agent_send with TERN_ETOOBIG, so the application
 * hears of it, and deleted with its deletion report if it asked and reports
 * are on (counted as suppressed when they are off). Before, bp_agent_send
 * returned 0 and the bundle was deleted when its CLA turned it down. */
static void too_big_at_send(bool reports)
{
    tern_clock *clk;
    tern_loop *loop;
    world(T0, &clk, &loop);
    node n;
    node_open(&n, 1, clk, loop, NULL);
    bp_agent_set_status_reports(n.a, reports);
    bp_eid rep = eid("ipn:1.9"), src = eid("ipn:1.1"), dst = eid("ipn:2.1"), none;
    bp_eid_none(&none);
    CHECK_OK(bp_endpoint_add(n.a, &rep, BP_RECV_QUEUE));
    CHECK_OK(bp_outduct_add(n.a, "fake", "2", "", 0));
    CHECK_OK(bp_egress_plan_add(n.a, 2, "fake", "2"));
    bp_outduct *od = bp_outduct_find(n.a, "fake", "2");
    bp_outduct_set_max_payload(od, 1500);
    bp_outduct_set_max_bundle(od, 2000,
                              "the 2000-byte transfer MRU of the TCPCL peer ipn:2.0");
    static uint8_t p[5000];
    bp_send_opts o;
    bp_send_opts_init(&o);
    o.report_to = &rep;
    o.flags = BP_FLAG_NO_FRAGMENT | BP_FLAG_RPT_DELETION;
    bp_bundle_ref ref;
    CHECK_RC(bp_agent_send(n.a, &src, &dst, &o, p, sizeof p, &ref), TERN_ETOOBIG);
    /* anonymous: must not be fragmented whatever its flags, asks no report */
    o.flags = 0;
    CHECK_RC(bp_agent_send(n.a, &none, &dst, &o, p, sizeof p, NULL), TERN_ETOOBIG);
    /* fits: sent */
    CHECK_OK(bp_agent_send(n.a, &src, &dst, &o, p, 1000, NULL));
    /* may be fragmented: fragmented */
    CHECK_OK(bp_agent_send(n.a, &src, &dst, &o, p, sizeof p, NULL));
    bp_agent_stats st = stats(&n);
    CHECK_EQ_U64(st.deleted, 2);
    CHECK_EQ_U64(st.fragmented, 1);
    /* the two refused ones are gone: the 5 in flight and a report stay */
    CHECK_EQ_U64(st.stored, 5 + (reports ? 1 : 0));
    CHECK_EQ_U64(n.f->n, 1 + 4);
    bp_delivery d;
    if (reports) {
        CHECK_EQ_U64(st.reports_sent, 1);
        CHECK_OK(bp_agent_recv(n.a, &rep, &d));
        bp_admin_record r;
        CHECK_OK(bp_admin_decode(d.payload, d.len, &r, NULL));
        CHECK(r.sr.deleted.asserted);
        CHECK_EQ_U64(r.sr.ctime_ms, ref.ctime_ms);
        CHECK_EQ_U64(r.sr.seq, ref.seq);
        bp_delivery_release(&d);
    } else {
        CHECK_EQ_U64(st.reports_sent, 0);
        CHECK_EQ_U64(st.reports_suppressed, 1);
    }
    CHECK_RC(bp_agent_recv(n.a, &rep, &d), -EAGAIN);
    node_close(&n);
    world_end(clk, loop);
}

TEST(too_big_refused_at_send_with_report)
{
    too_big_at_send(true);
}

TEST(too_big_refused_at_send_reports_off)
{
    too_big_at_send(false);
}

/* A large bundle (a blob of the store) is lent without a copy: the
 * delivery's payload is the stored payload itself; a small one is copied.
 * Either way the bytes are the sent ones, and a view survives an undo and
 * a second loan (the bundle stays where the store keeps it). */
TEST(lend_large_bundle_without_a_copy)
{
    tern_clock *clk;
    tern_loop *loop;
    world(T0, &clk, &loop);
    node n;
    node_open(&n, 1, clk, loop, NULL);
    bp_eid q = eid("ipn:1.2");
    CHECK_OK(bp_endpoint_add(n.a, &q, BP_RECV_QUEUE));
    static uint8_t big[200000];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (uint8_t)(i * 131 + 7);
    send_simple(&n, "ipn:1.1", "ipn:1.2", big, sizeof big, NULL);
    send_simple(&n, "ipn:1.1", "ipn:1.2", "tiny", 4, NULL);
    bp_delivery d;
    uint64_t t;
    CHECK_OK(bp_agent_recv_lend(n.a, &q, &d, &t));
    CHECK(d.view);
    CHECK_EQ_U64(d.len, sizeof big);
    CHECK_EQ_MEM(d.payload, big, sizeof big);
    const uint8_t *first = d.payload;
    bp_delivery_release(&d); /* a view: nothing freed (ASan would say) */
    CHECK_OK(bp_agent_recv_undo(n.a, t));
    CHECK_OK(bp_agent_recv_lend(n.a, &q, &d, &t));
    CHECK(d.view && d.payload == first);
    CHECK_EQ_MEM(d.payload, big, sizeof big);
    bp_delivery_release(&d);
    CHECK_OK(bp_agent_recv_done(n.a, t));
    CHECK_OK(bp_agent_recv_lend(n.a, &q, &d, &t));
    CHECK(!d.view);
    CHECK_EQ_U64(d.len, 4);
    CHECK_EQ_MEM(d.payload, "tiny", 4);
    bp_delivery_release(&d);
    CHECK_OK(bp_agent_recv_done(n.a, t));
    node_close(&n);
    world_end(clk, loop);
}

/* A loan keeps the bundle in the store: undone, it is first in line again;
 * done, it is gone; after a restart an unfinished loan is delivered again. */
TEST(lend_done_undo)
{
    const char *dir = tt_tmpdir();
    tern_clock *clk;
    tern_loop *loop;
    world(T0, &clk, &loop);
    node n;
    node_open(&n, 1, clk, loop, dir);
    bp_eid q = eid("ipn:1.2");
    CHECK_OK(bp_endpoint_add(n.a, &q, BP_RECV_QUEUE));
    for (int i = 0; i < 3; i++) {
        char p[8];
        snprintf(p, sizeof p, "b%d", i);
        send_simple(&n, "ipn:1.1", "ipn:1.2", p, 2, NULL);
    }
    bp_delivery d;
    uint64_t t0, t1;
    CHECK_OK(bp_agent_recv_lend(n.a, &q, &d, &t0));
    CHECK_EQ_MEM(d.payload, "b0", 2);
    bp_delivery_release(&d);
    CHECK_OK(bp_agent_recv_lend(n.a, &q, &d, &t1));
    CHECK_EQ_MEM(d.payload, "b1", 2);
    bp_delivery_release(&d);
    CHECK_EQ_U64(bp_endpoint_queued(n.a, &q), 1);
    CHECK_EQ_U64(stats(&n).stored, 3);
    CHECK_OK(bp_agent_recv_undo(n.a, t1)); /* b1 is first again */
    CHECK_OK(bp_agent_recv_done(n.a, t0));
    CHECK_RC(bp_agent_recv_done(n.a, t0), TERN_ENOTFOUND);
    CHECK_EQ_U64(stats(&n).stored, 2);
    CHECK_EQ_U64(stats(&n).taken, 1);
    CHECK_OK(bp_agent_recv_lend(n.a, &q, &d, &t1));
    CHECK_EQ_MEM(d.payload, "b1", 2);
    bp_delivery_release(&d);
    node_close(&n); /* with b1 on loan */
    node_open(&n, 1, clk, loop, dir);
    CHECK_OK(bp_endpoint_add(n.a, &q, BP_RECV_QUEUE));
    CHECK_EQ_INT(bp_agent_resume(n.a), 2);
    recv_expect(&n, "ipn:1.2", "b1", 2);
    recv_expect(&n, "ipn:1.2", "b2", 2);
    CHECK_EQ_U64(stats(&n).stored, 0);
    node_close(&n);
    world_end(clk, loop);
}

/* ------------------------------------------------ durable acknowledgements */

struct dcount {
    int calls;
    uint64_t a1, a2;
};

static void durable_cb(void *ctx, uint64_t a1, uint64_t a2)
{
    struct dcount *d = ctx;
    d->calls++;
    d->a1 = a1;
    d->a2 = a2;
}

/* Node 1's agent on a durable store under group commit (io: NULL for the
 * real file system). */
static bp_agent *group_agent(tern_loop *loop, const char *name, const sdr_io *io,
                             sdr **st)
{
    sdr_profile p = {.name = name,
                     .dir = tt_tmpdir(),
                     .heap_size = 8u << 20,
                     .mode = SDR_DURABLE,
                     .commit = SDR_COMMIT_GROUP,
                     .io = io};
    char why[256] = "";
    CHECK_MSG(sdr_open(&p, st, why, sizeof why) == 0, "sdr_open: %s", why);
    bp_agent_cfg cfg = {.node = 1, .store = *st};
    bp_agent *a;
    CHECK_OK(bp_agent_new(loop, &cfg, NULL, NULL, &a));
    return a;
}

/* Under group commit a received bundle is committed but not yet on disk: a
 * wait for its mark reports "later" (or "already", if the flush won the
 * race) and calls back from the loop once the store's helper has synced.
 * A forgotten wait never calls back. */
TEST(agent_durable_wait_follows_group_commit)
{
    tern_loop *loop;
    CHECK_OK(tern_loop_new(tern_clock_real(), &loop));
    sdr *st;
    bp_agent *a = group_agent(loop, "dur", NULL, &st);
    bp_eid q = eid("ipn:1.1"), src = eid("ipn:1.2");
    CHECK_OK(bp_endpoint_add(a, &q, BP_RECV_QUEUE));
    int later = 0;
    for (int i = 0; i < 50; i++) {
        struct dcount d = {0}, gone = {0};
        CHECK_OK(bp_agent_send(a, &src, &q, NULL, "durable?", 8, NULL));
        uint64_t mark = bp_agent_durable_mark(a);
        int rc = bp_agent_durable_wait(a, mark, durable_cb, &d, 7, (uint64_t)i);
        CHECK(rc == 0 || rc == 1);
        CHECK_EQ_INT(bp_agent_durable_wait(a, mark, durable_cb, &gone, 0, 0), rc);
        bp_agent_durable_forget(a, &gone);
        if (rc == 0) {
            CHECK(bp_agent_is_durable(a, mark));
            continue;
        }
        later++;
        uint64_t t0 = tern_loop_now(loop);
        while (!d.calls) {
            CHECK_MSG(tern_loop_now(loop) - t0 < 5000000000ull, "no callback in 5 s");
            CHECK_OK(tern_loop_run(loop, TERN_RUN_ONCE));
        }
        CHECK_EQ_INT(d.calls, 1);
        CHECK_EQ_U64(d.a1, 7);
        CHECK_EQ_U64(d.a2, (uint64_t)i);
        CHECK(bp_agent_is_durable(a, mark));
        CHECK_EQ_INT(gone.calls, 0);
    }
    CHECK_MSG(later > 0,
              "every commit was durable at once: the wait was never exercised");
    bp_agent_free(a);
    CHECK_OK(sdr_close(st));
    CHECK_OK(tern_loop_close(loop));
}

/* The real file system, with syncs that wait while held: a store's flush
 * can be caught in the middle. */
static struct gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int hold, held;
    struct sdr_io io;
} gate = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, {0}};

static int gate_sync(void *ctx, int fd)
{
    pthread_mutex_lock(&gate.mu);
    gate.held++;
    while (gate.hold)
        pthread_cond_wait(&gate.cv, &gate.mu);
    gate.held--;
    pthread_mutex_unlock(&gate.mu);
    return sdr_io_posix()->sync(ctx, fd);
}

static void gate_set(int hold)
{
    pthread_mutex_lock(&gate.mu);
    gate.hold = hold;
    pthread_cond_broadcast(&gate.cv);
    pthread_mutex_unlock(&gate.mu);
}

static int gate_held(void)
{
    pthread_mutex_lock(&gate.mu);
    int n = gate.held;
    pthread_mutex_unlock(&gate.mu);
    return n;
}

/* Runs a real-clock loop until *calls is at least want (5 s at most). */
static void run_until_calls(tern_loop *loop, const int *calls, int want)
{
    uint64_t t0 = tern_loop_now(loop);
    while (*calls < want) {
        CHECK_MSG(tern_loop_now(loop) - t0 < 5000000000ull, "no callback in 5 s");
        CHECK_OK(tern_loop_run(loop, TERN_RUN_ONCE));
    }
}

/* A convergence layer's claim on received bundles comes as soon as they
 * have all left the store (here: delivered), while the store's flush is
 * still held; a claim on a bundle that stays waits for the flush. The
 * delivered bundle's bytes are then never written. */
/* An agent on a group-commit store whose flusher is held in its sync (the
 * gate), with endpoint q open and empty. */
static bp_agent *held_flush_agent(tern_loop **loop, const char *name, sdr **st,
                                  const bp_eid *q)
{
    CHECK_OK(tern_loop_new(tern_clock_real(), loop));
    gate.io = *sdr_io_posix();
    gate.io.sync = gate_sync;
    bp_agent *a = group_agent(*loop, name, &gate.io, st);
    CHECK_OK(bp_endpoint_add(a, q, BP_RECV_QUEUE));
    /* A first commit gets the flusher going; it stops in its sync. */
    gate_set(1);
    bp_eid src = eid("ipn:1.2");
    CHECK_OK(bp_agent_send(a, &src, q, NULL, "first", 5, NULL));
    while (!gate_held())
        usleep(200);
    bp_delivery del;
    CHECK_OK(bp_agent_recv(a, q, &del));
    bp_delivery_release(&del);
    return a;
}

TEST(receive_claim_before_the_flush_once_delivered)
{
    tern_loop *loop;
    sdr *st;
    bp_eid q = eid("ipn:1.1"), far = eid("ipn:7.1");
    bp_agent *a = held_flush_agent(&loop, "claim", &st, &q);
    bp_delivery del;

    /* Two bundles from a peer: one for here, 100 kB; one for node 7. */
    static uint8_t pay[100000];
    fill(pay, sizeof pay, 42);
    uint8_t *bytes[2];
    size_t len[2];
    for (int i = 0; i < 2; i++) {
        bp_bundle b;
        memset(&b, 0, sizeof b);
        b.pri.version = 7;
        b.pri.crc_type = BP_CRC_32C;
        b.pri.dest = i == 0 ? q : far;
        b.pri.src = eid("ipn:9.1");
        b.pri.report_to = eid("dtn:none");
        b.pri.ctime_ms = tern_clock_dtn_ms(tern_clock_real()) + (uint64_t)i;
        b.pri.lifetime_ms = 3600000;
        b.blocks[0] =
            (bp_block){.type = 1, .number = 1, .data = pay, .data_len = sizeof pay};
        b.n_blocks = 1;
        bytes[i] = malloc(sizeof pay + 256);
        CHECK_OK(bp_bundle_encode(&b, bytes[i], sizeof pay + 256, &len[i], NULL));
    }
    struct dcount here = {0}, away = {0};
    CHECK_EQ_INT(bp_agent_receive_claim(a, bytes[0], len[0], durable_cb, &here, 1, 2), 1);
    CHECK_EQ_INT(bp_agent_receive_claim(a, bytes[1], len[1], durable_cb, &away, 3, 4), 1);
    uint64_t mark = bp_agent_durable_mark(a);
    for (int i = 0; i < 5; i++)
        CHECK_OK(tern_loop_run(loop, TERN_RUN_NOWAIT));
    CHECK_EQ_INT(here.calls, 0); /* still in the store, not durable */

    CHECK_OK(bp_agent_recv(a, &q, &del));
    CHECK(del.len == sizeof pay && memcmp(del.payload, pay, sizeof pay) == 0);
    bp_delivery_release(&del);
    run_until_calls(loop, &here.calls, 1);
    CHECK(here.a1 == 1 && here.a2 == 2);
    CHECK_MSG(!bp_agent_is_durable(a, mark), "the flush was not held");
    CHECK_EQ_INT(away.calls, 0); /* node 7's bundle is still here */

    gate_set(0);
    run_until_calls(loop, &away.calls, 1);
    CHECK(away.a1 == 3 && away.a2 == 4);
    CHECK(bp_agent_is_durable(a, mark));
    for (int i = 0; i < 5; i++)
        CHECK_OK(tern_loop_run(loop, TERN_RUN_NOWAIT));
    CHECK_EQ_INT(here.calls, 1); /* once, not again at the flush */
    sdr_usage u;
    CHECK_OK(sdr_get_usage(st, &u));
    CHECK_MSG(u.blob_unwritten >= sizeof pay, "%" PRIu64 " blob bytes unwritten",
              u.blob_unwritten);
    free(bytes[0]);
    free(bytes[1]);
    bp_agent_free(a);
    CHECK_OK(sdr_close(st));
    CHECK_OK(tern_loop_close(loop));
}

/* Fragments that came in under two claims are reassembled: the first
 * claim's fragment leaves the store into a bundle of the second claim, which
 * is not durable yet, so the first claim waits for the flush (it is not
 * settled by its fragment's leaving); the second settles once the whole
 * bundle is delivered. */
TEST(receive_claim_of_a_reassembled_fragment_waits_for_the_flush)
{
    tern_loop *loop;
    sdr *st;
    bp_eid q = eid("ipn:1.1");
    bp_agent *a = held_flush_agent(&loop, "frag", &st, &q);
    bp_delivery del;

    static uint8_t adu[2 * 70000];
    fill(adu, sizeof adu, 7);
    uint8_t *bytes[2];
    size_t len[2];
    uint64_t ctime = tern_clock_dtn_ms(tern_clock_real());
    for (int i = 0; i < 2; i++) {
        bp_bundle b;
        memset(&b, 0, sizeof b);
        b.pri.version = 7;
        b.pri.flags = BP_FLAG_FRAGMENT;
        b.pri.crc_type = BP_CRC_32C;
        b.pri.dest = q;
        b.pri.src = eid("ipn:9.1");
        b.pri.report_to = eid("dtn:none");
        b.pri.ctime_ms = ctime;
        b.pri.lifetime_ms = 3600000;
        b.pri.frag_offset = (uint64_t)i * 70000;
        b.pri.total_adu_len = sizeof adu;
        b.blocks[0] = (bp_block){
            .type = 1, .number = 1, .data = adu + i * 70000, .data_len = 70000};
        b.n_blocks = 1;
        bytes[i] = malloc(70000 + 256);
        CHECK_OK(bp_bundle_encode(&b, bytes[i], 70000 + 256, &len[i], NULL));
    }
    struct dcount first = {0}, second = {0};
    uint64_t mark = bp_agent_durable_mark(a);
    CHECK_EQ_INT(bp_agent_receive_claim(a, bytes[0], len[0], durable_cb, &first, 1, 0),
                 1);
    CHECK_EQ_INT(bp_agent_receive_claim(a, bytes[1], len[1], durable_cb, &second, 2, 0),
                 1);
    for (int i = 0; i < 5; i++)
        CHECK_OK(tern_loop_run(loop, TERN_RUN_NOWAIT));
    CHECK_MSG(first.calls == 0,
              "the first fragment's claim settled when it was reassembled into a "
              "bundle that is not durable");
    CHECK_EQ_INT(second.calls, 0);

    CHECK_OK(bp_agent_recv(a, &q, &del));
    CHECK(del.len == sizeof adu && memcmp(del.payload, adu, sizeof adu) == 0);
    bp_delivery_release(&del);
    run_until_calls(loop, &second.calls, 1);
    CHECK_MSG(!bp_agent_is_durable(a, mark), "the flush was not held");
    CHECK_EQ_INT(first.calls, 0);

    gate_set(0);
    run_until_calls(loop, &first.calls, 1);
    CHECK(bp_agent_is_durable(a, mark));
    CHECK_EQ_INT(second.calls, 1);
    free(bytes[0]);
    free(bytes[1]);
    bp_agent_free(a);
    CHECK_OK(sdr_close(st));
    CHECK_OK(tern_loop_close(loop));
}

/* A bundle for an endpoint of this node that nobody registered is deleted
 * with reason 5, "destination endpoint ID unavailable" (RFC 9171 6.1.1's
 * table); ION 4.1.3 says 6, "no known route to destination from here",
 * which RFC 9171 keeps for bundles that cannot be forwarded. */
TEST(unregistered_endpoint_deleted_with_reason_5)
{
    tern_clock *clk;
    tern_loop *loop;
    world(T0, &clk, &loop);
    node n1, n2;
    node_open(&n1, 1, clk, loop, NULL);
    node_open(&n2, 2, clk, loop, NULL);
    bp_eid rep = eid("ipn:1.9");
    CHECK_OK(bp_endpoint_add(n1.a, &rep, BP_RECV_QUEUE));
    CHECK_OK(bp_outduct_add(n1.a, "fake", "2", "", 0));
    CHECK_OK(bp_egress_plan_add(n1.a, 2, "fake", "2"));
    CHECK_OK(bp_outduct_add(n2.a, "fake", "1", "", 0));
    CHECK_OK(bp_egress_plan_add(n2.a, 1, "fake", "1"));
    bp_send_opts o;
    bp_send_opts_init(&o);
    o.flags = BP_FLAG_RPT_DELETION;
    o.report_to = &rep;
    send_simple(&n1, "ipn:1.1", "ipn:2.77", "nobody", 6, &o);
    CHECK_EQ_INT(bp_agent_receive(n2.a, n1.f->log[0].bytes, n1.f->log[0].len), 1);
    CHECK_EQ_U64(stats(&n2).deleted, 1);
    CHECK_EQ_U64(n2.f->n, 1);
    CHECK_EQ_INT(bp_agent_receive(n1.a, n2.f->log[0].bytes, n2.f->log[0].len), 1);
    bp_delivery d;
    CHECK_OK(bp_agent_recv(n1.a, &rep, &d));
    bp_admin_record r;
    CHECK_OK(bp_admin_decode(d.payload, d.len, &r, NULL));
    CHECK(r.sr.deleted.asserted);
    CHECK_EQ_U64(r.sr.reason, BP_REASON_DEST_UNAVAILABLE);
    CHECK_EQ_U64(r.sr.reason, 5);
    bp_delivery_release(&d);
    node_close(&n1);
    node_close(&n2);
    world_end(clk, loop);
}

static int drop_send(void *ctx, uint64_t peer, const uint8_t *seg, size_t len)
{
    (void)ctx, (void)peer, (void)seg, (void)len;
    return 0;
}

/* Issue 17 item 12: the LTP adapter drops green data (bundles travel red
 * only), but not silently: each green segment is counted, for tern status,
 * and the first one is logged as a warning naming the peer. */
TEST(agent_ltp_green_data_counted_and_logged_once)
{
    tern_loop *loop;
    CHECK_OK(tern_loop_new(tern_clock_real(), &loop));
    char path[512];
    snprintf(path, sizeof path, "%s/green.log", tt_tmpdir());
    tern_log *lg;
    CHECK_OK(tern_log_open(&lg, "n1", path, TERN_LOG_WARN, 0));
    sdr_profile p = {.name = "green", .heap_size = 1u << 20, .mode = SDR_MEMORY};
    char why[256] = "";
    sdr *st;
    CHECK_MSG(sdr_open(&p, &st, why, sizeof why) == 0, "sdr_open: %s", why);
    bp_agent_cfg cfg = {.node = 1, .store = st};
    bp_agent *a;
    CHECK_OK(bp_agent_new(loop, &cfg, NULL, lg, &a));
    ltp_engine_cfg ec = {.engine_id = 1};
    ltp_host host = {.send = drop_send};
    ltp_engine *e;
    CHECK_OK(ltp_engine_new(loop, &ec, &host, lg, &e));
    bp_ltp_cla *c;
    CHECK_OK(bp_ltp_cla_new(a, e, 0, &c));
    uint8_t data[100] = {0};
    for (uint64_t i = 0; i < 3; i++) {
        ltp_notice n = {.kind = LTP_GREEN_SEG,
                        .peer = 57,
                        .session = 9,
                        .client = BP_LTP_CLIENT,
                        .data = data,
                        .len = sizeof data,
                        .offset = i * sizeof data};
        CHECK_EQ_INT(bp_ltp_cla_notice(c, &n), 0);
    }
    CHECK_EQ_U64(bp_ltp_cla_green_ignored(c), 3);
    bp_agent_free(a);
    bp_ltp_cla_free(c);
    ltp_engine_free(e);
    tern_log_close(lg);
    FILE *f = fopen(path, "r");
    CHECK(f);
    char line[1024];
    int warned = 0;
    while (fgets(line, sizeof line, f))
        if (strstr(line, "green")) {
            warned++;
            CHECK_MSG(strstr(line, "engine 57"), "warning names no peer: %s", line);
        }
    fclose(f);
    CHECK_EQ_INT(warned, 1);
    sdr_close(st);
    CHECK_OK(tern_loop_close(loop));
}

/* The real file system, with the store's writes of at least fail_min bytes
 * (blob writes of big bundles) failing with fail_rc while fail_rc is set. */
static struct failio {
    int fail_rc;
    size_t fail_min;
    int failed;
    int fail_reads; /* reads of at least fail_min bytes fail with -EIO */
    struct sdr_io io;
} failio;

static ssize_t failio_pread(void *ctx, int fd, void *buf, size_t n, uint64_t off)
{
    if (failio.fail_reads && n >= failio.fail_min) {
        failio.failed++;
        return -EIO;
    }
    return sdr_io_posix()->pread(ctx, fd, buf, n, off);
}

static ssize_t failio_pwrite(void *ctx, int fd, const void *buf, size_t n, uint64_t off)
{
    if (failio.fail_rc && n >= failio.fail_min) {
        failio.failed++;
        return failio.fail_rc;
    }
    return sdr_io_posix()->pwrite(ctx, fd, buf, n, off);
}

static void claim_cb(void *ctx, uint64_t a1, uint64_t a2)
{
    (void)a1;
    (void)a2;
    ++*(int *)ctx;
}

/* One run of agent_ltp_store_io_error_leaves_the_block_unclaimed with the
 * blob write failing with fail_rc. */
static void store_io_error_run(const char *name, int fail_rc)
{
    tern_loop *loop;
    CHECK_OK(tern_loop_new(tern_clock_real(), &loop));
    failio = (struct failio){0};
    failio.io = *sdr_io_posix();
    failio.io.pwrite = failio_pwrite;
    failio.fail_min = 20000;
    sdr_profile p = {.name = name,
                     .dir = tt_tmpdir(),
                     .heap_size = 8u << 20,
                     .mode = SDR_DURABLE,
                     .commit = SDR_COMMIT_SYNC,
                     .io = &failio.io};
    char why[256] = "";
    sdr *st;
    CHECK_MSG(sdr_open(&p, &st, why, sizeof why) == 0, "sdr_open: %s", why);
    bp_agent_cfg cfg = {.node = 1, .store = st};
    bp_agent *a;
    CHECK_OK(bp_agent_new(loop, &cfg, NULL, NULL, &a));
    bp_eid q = eid("ipn:1.1");
    CHECK_OK(bp_endpoint_add(a, &q, BP_RECV_QUEUE));
    ltp_engine_cfg ec = {.engine_id = 1};
    ltp_host host = {.send = drop_send};
    ltp_engine *e;
    CHECK_OK(ltp_engine_new(loop, &ec, &host, NULL, &e));
    bp_ltp_cla *c;
    CHECK_OK(bp_ltp_cla_new(a, e, 0, &c));

    /* One block: a 10-byte bundle, then a 20 kB one, both for ipn:1.1. */
    static uint8_t pay[20000], block[20000 + 512];
    fill(pay, sizeof pay, 17);
    size_t at = 0;
    for (int i = 0; i < 2; i++) {
        bp_bundle b;
        memset(&b, 0, sizeof b);
        b.pri.version = 7;
        b.pri.crc_type = BP_CRC_32C;
        b.pri.dest = q;
        b.pri.src = eid("ipn:9.1");
        b.pri.report_to = eid("dtn:none");
        b.pri.ctime_ms = tern_clock_dtn_ms(tern_clock_real());
        b.pri.seq = (uint64_t)i;
        b.pri.lifetime_ms = 3600000;
        b.blocks[0] = (bp_block){
            .type = 1, .number = 1, .data = pay, .data_len = i ? sizeof pay : 10};
        b.n_blocks = 1;
        size_t n;
        CHECK_OK(bp_bundle_encode(&b, block + at, sizeof block - at, &n, NULL));
        at += n;
    }
    ltp_notice n = {.kind = LTP_RED_PART,
                    .peer = 57,
                    .session = 9,
                    .client = BP_LTP_CLIENT,
                    .data = block,
                    .len = at};

    failio.fail_rc = fail_rc;
    /* Neither 0 (claimed) nor LTP_HOLD (claimed once durable), nor
     * LTP_LATER (the failed store would never take it): a cancel. */
    CHECK_EQ_INT(bp_ltp_cla_notice(c, &n), fail_rc);
    CHECK_EQ_INT(failio.failed, 1);
    bp_agent_stats s;
    bp_agent_stats_get(a, &s);
    CHECK_EQ_U64(s.received, 1); /* the small one, taken before */
    CHECK_EQ_U64(s.store_errors, 1);
    /* The agent says the same to any layer: nothing may be claimed, and
     * the claim's callback never comes. */
    int claimed = 0;
    CHECK(bp_agent_receive_claim(a, block, at, claim_cb, &claimed, 0, 0) < 0);
    CHECK(bp_agent_receive(a, block, at) < 0);
    for (int i = 0; i < 5; i++)
        CHECK_OK(tern_loop_run(loop, TERN_RUN_NOWAIT));
    CHECK_EQ_INT(claimed, 0);

    bp_agent_free(a);
    bp_ltp_cla_free(c);
    ltp_engine_free(e);
    sdr_close(st); /* a failed store says so again at close */
    CHECK_OK(tern_loop_close(loop));
}

/* Issue 17 item 2: a store I/O error while a received LTP block's bundles are
 * committed must not end in a claim, even when a bundle before the failing
 * one was taken. The block holds a small bundle and a 20 kB one whose blob
 * write fails (-ENOSPC, then in a second store -EIO): the session is
 * cancelled, so the sender keeps its copy. */
TEST(agent_ltp_store_io_error_leaves_the_block_unclaimed)
{
    store_io_error_run("nospc", -ENOSPC);
    store_io_error_run("eio", -EIO);
}

/* A queued bundle whose stored bytes cannot be read when its outduct comes
 * up is deleted (counted) and the duct goes on with the next one; the
 * deletion used to take it off its queue twice, the second time through an
 * outduct pointer already cleared. */
TEST(unreadable_queued_bundle_deleted_once)
{
    tern_clock *clk;
    tern_loop *loop;
    world(T0, &clk, &loop);
    failio = (struct failio){0};
    failio.io = *sdr_io_posix();
    failio.io.pread = failio_pread;
    failio.fail_min = 20000;
    sdr_profile p = {.name = "rd",
                     .dir = tt_tmpdir(),
                     .heap_size = 8u << 20,
                     .mode = SDR_DURABLE,
                     .commit = SDR_COMMIT_SYNC,
                     .io = &failio.io};
    char why[256] = "";
    node n;
    memset(&n, 0, sizeof n);
    n.clk = clk;
    n.loop = loop;
    CHECK_MSG(sdr_open(&p, &n.store, why, sizeof why) == 0, "sdr_open: %s", why);
    bp_agent_cfg cfg = {.node = 1, .store = n.store};
    CHECK_OK(bp_agent_new(loop, &cfg, NULL, NULL, &n.a));
    n.f = calloc(1, sizeof *n.f);
    CHECK_OK(bp_cla_register(n.a, &fake_ops, n.f));
    CHECK_OK(bp_outduct_add(n.a, "fake", "2", "", 0));
    CHECK_OK(bp_egress_plan_add(n.a, 2, "fake", "2"));
    bp_outduct *od = bp_outduct_find(n.a, "fake", "2");
    bp_outduct_set_up(od, false);
    static uint8_t big[300000];
    fill(big, sizeof big, 5);
    send_simple(&n, "ipn:1.1", "ipn:2.1", big, sizeof big, NULL);
    send_simple(&n, "ipn:1.1", "ipn:2.1", "small", 5, NULL);
    CHECK_EQ_U64(stats(&n).queued, 2);
    failio.fail_reads = 1;
    bp_outduct_set_up(od, true);
    advance(loop, 10);
    bp_agent_stats st = stats(&n);
    CHECK(failio.failed >= 1);
    CHECK_EQ_U64(st.deleted, 1);
    CHECK_EQ_U64(st.queued, 0);
    CHECK_EQ_U64(n.f->n, 1); /* the small one went */
    CHECK_EQ_U64(n.f->log[0].len < 1000, 1);
    failio.fail_reads = 0;
    node_close(&n);
    world_end(clk, loop);
}

/* Lifetimes are numbers from the wire: one that ends centuries from now
 * (ctime + lifetime near 2^64 ms), and one of 2^64 - 1 ms on a bundle
 * without a creation time (arrival + lifetime past 2^64), used to wrap when
 * the expiry timer's delay was formed in ns: the timer fired at once, found
 * nothing expired and fired again, for ever (found by fuzz_agent_seq). Now
 * both wait, an ordinary bundle still expires on time, and an hour of
 * virtual time takes a handful of loop iterations. */
TEST(lifetimes_near_the_top_of_the_clock_do_not_spin_the_expiry_timer)
{
    alarm(20); /* the old code never returned from the advance */
    tern_clock *clk;
    tern_loop *loop;
    world(T0, &clk, &loop);
    node n;
    node_open(&n, 2, clk, loop, NULL);
    bp_eid dst = eid("ipn:2.1");
    CHECK_OK(bp_endpoint_add(n.a, &dst, BP_RECV_QUEUE));
    const struct {
        uint64_t ctime, lifetime;
        bool age;
    } cases[] = {
        {T0, UINT64_MAX - T0 - 1, false}, /* ends just before 2^64 ms */
        {T0, UINT64_MAX, false},          /* past it: saturates */
        {0, UINT64_MAX, true},            /* no creation time: arrival + lifetime wraps */
        {T0, 10000, false},               /* an ordinary one: gone after 10 s */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bp_bundle b;
        memset(&b, 0, sizeof b);
        b.pri.version = 7;
        b.pri.crc_type = BP_CRC_32C;
        b.pri.dest = dst;
        b.pri.src = eid("ipn:1.1");
        b.pri.report_to = eid("ipn:1.1");
        b.pri.ctime_ms = cases[i].ctime;
        b.pri.seq = i;
        b.pri.lifetime_ms = cases[i].lifetime;
        size_t nb = 0;
        if (cases[i].age) {
            b.has_age = true;
            b.age_ms = 5;
            b.blocks[nb++] = (bp_block){.type = BP_BLOCK_AGE, .number = 2};
        }
        b.blocks[nb++] = (bp_block){
            .type = 1, .number = 1, .data = (const uint8_t *)"life", .data_len = 4};
        b.n_blocks = nb;
        uint8_t buf[256];
        size_t len;
        CHECK_OK(bp_bundle_encode(&b, buf, sizeof buf, &len, NULL));
        CHECK_EQ_INT(bp_agent_receive(n.a, buf, len), 1);
    }
    uint64_t it0 = tern_loop_iterations(loop);
    advance(loop, 3600 * 1000);
    uint64_t its = tern_loop_iterations(loop) - it0;
    CHECK_MSG(its < 100, "an hour took %" PRIu64 " loop iterations", its);
    bp_agent_stats st = stats(&n);
    CHECK_EQ_U64(st.expired, 1);
    CHECK_EQ_U64(bp_endpoint_queued(n.a, &dst), 3);
    node_close(&n);
    world_end(clk, loop);
    alarm(0);
}

/* A duct's maximum payload can come from a peer (a TCPCLv4 transfer MRU):
 * one of 2 bytes made a 4000-byte bundle 2000 fragments, each stored and
 * sent with its headers (found by fuzz_agent_seq: 47 ms for one send).
 * Below 64 bytes the bundle goes whole and the CLA refuses it as too big,
 * with the deletion report; at 64 it is split as before. */
TEST(tiny_max_payload_does_not_shred_a_bundle)
{
    tern_clock *clk;
    tern_loop *loop;
    world(T0, &clk, &loop);
    node n;
    node_open(&n, 1, clk, loop, NULL);
    n.f->max_len = 200;
    n.f->mode = 1;
    bp_eid rep = eid("ipn:1.9");
    CHECK_OK(bp_endpoint_add(n.a, &rep, BP_RECV_QUEUE));
    CHECK_OK(bp_outduct_add(n.a, "fake", "2", "", 2));
    CHECK_OK(bp_egress_plan_add(n.a, 2, "fake", "2"));
    static uint8_t p[4000];
    bp_send_opts o;
    bp_send_opts_init(&o);
    o.flags = BP_FLAG_RPT_DELETION;
    o.report_to = &rep;
    send_simple(&n, "ipn:1.1", "ipn:2.1", p, sizeof p, &o);
    bp_agent_stats st = stats(&n);
    CHECK_EQ_U64(st.fragmented, 0);
    CHECK_EQ_U64(st.deleted, 1);
    CHECK_EQ_U64(n.f->n, 0);
    bp_delivery d;
    CHECK_OK(bp_agent_recv(n.a, &rep, &d));
    bp_delivery_release(&d);
    bp_outduct_set_max_payload(bp_outduct_find(n.a, "fake", "2"), 64);
    send_simple(&n, "ipn:1.1", "ipn:2.1", p, sizeof p, NULL);
    CHECK_EQ_U64(stats(&n).fragmented, 1);
    CHECK_EQ_U64(n.f->n, (sizeof p + 63) / 64);
    node_close(&n);
    world_end(clk, loop);
}

/* A bundle to a group (imc:5.1) that no member known here is to get is
 * deleted and counted, and never routed as if group 5 were node 5
 * (docs/multicast.md). */
TEST(imc_bundles_are_never_routed_as_nodes)
{
    tern_clock *clk;
    tern_loop *loop;
    world(T0, &clk, &loop);
    node n2;
    node_open(&n2, 2, clk, loop, NULL);
    CHECK_OK(bp_outduct_add(n2.a, "fake", "5", "", 0));
    CHECK_OK(bp_egress_plan_add(n2.a, 5, "fake", "5"));
    bp_bundle b;
    memset(&b, 0, sizeof b);
    b.pri.version = 7;
    b.pri.crc_type = BP_CRC_32C;
    b.pri.dest = eid("imc:5.1");
    b.pri.src = eid("ipn:1.1");
    b.pri.report_to = eid("ipn:1.1");
    b.pri.ctime_ms = T0;
    b.pri.lifetime_ms = 3600000;
    b.blocks[0] = (bp_block){
        .type = 1, .number = 1, .data = (const uint8_t *)"group", .data_len = 5};
    b.n_blocks = 1;
    uint8_t buf[256];
    size_t n;
    CHECK_OK(bp_bundle_encode(&b, buf, sizeof buf, &n, NULL));
    CHECK_EQ_INT(bp_agent_receive(n2.a, buf, n), 1);
    bp_agent_stats st = stats(&n2);
    CHECK_EQ_U64(st.deleted, 1);
    CHECK_EQ_U64(st.received, 0);
    CHECK_EQ_U64(st.malformed, 0);
    CHECK_EQ_U64(n2.f->n, 0); /* nothing went toward node 5 */
    node_close(&n2);
    world_end(clk, loop);
}

/* Encodes a bundle from src to dst (flags BP_FLAG_*) with payload p, and
 * a block 195 with data d[0..dn) when d is not NULL. */
static size_t imc_bundle(const char *src, const char *dst, uint64_t flags, const void *p,
                         size_t len, const uint8_t *d, size_t dn, uint64_t seq,
                         uint8_t *buf, size_t cap)
{
    bp_bundle b;
    memset(&b, 0, sizeof b);
    b.pri.version = 7;
    b.pri.flags = flags;
    b.pri.crc_type = BP_CRC_32C;
    b.pri.dest = eid(dst);
    b.pri.src = eid(src);
    b.pri.report_to = b.pri.src;
    b.pri.ctime_ms = T0;
    b.pri.seq = seq;
    b.pri.lifetime_ms = 3600000;
    if (d)
        b.blocks[b.n_blocks++] = (bp_block){.type = BP_BLOCK_IMC_DESTS,
                                            .number = 2,
                                            .flags = BP_BLK_REPLICATE,
                                            .data = d,
                                            .data_len = dn};
    b.blocks[b.n_blocks++] =
        (bp_block){.type = 1, .number = 1, .data = (const uint8_t *)p, .data_len = len};
    size_t n;
    CHECK_OK(bp_bundle_encode(&b, buf, cap, &n, NULL));
    return n;
}

/* Malformed petitions, briefings and destinations blocks are refused,
 * each counted, and the node goes on serving good ones. */
TEST(imc_malformed_petitions_briefings_and_blocks_are_refused_and_counted)
{
    tern_clock *clk;
    tern_loop *loop;
    world(T0, &clk, &loop);
    node n2;
    node_open(&n2, 2, clk, loop, NULL);
    bp_eid g = eid("imc:7.1");
    CHECK_OK(bp_endpoint_add(n2.a, &g, BP_RECV_QUEUE));
    bp_agent_resume(n2.a);
    uint8_t buf[512];
    static const uint8_t bad_cbor[] = {0xff};
    static const uint8_t join9[] = {0x82, 0x09, 0x01};
    static const uint8_t bad_brief[] = {0x82, 0x05, 0x61, 'x'};
    static const uint8_t indef[] = {0x9f, 0x02, 0xff};
    static const uint8_t text_item[] = {0x81, 0x61, 'x'};
    static const uint8_t to2[] = {0x81, 0x02};
    struct {
        const char *src, *dst;
        uint64_t flags;
        const uint8_t *p;
        size_t len;
        const uint8_t *d;
        size_t dn;
    } bad[] = {
        {"ipn:1.0", "imc:0.0", 0, bad_cbor, sizeof bad_cbor, NULL, 0},
        {"dtn://one/x", "imc:0.0", 0, join9, sizeof join9, NULL, 0},
        {"ipn:1.0", "ipn:2.0", BP_FLAG_ADMIN, bad_brief, sizeof bad_brief, NULL, 0},
        {"ipn:1.1", "imc:7.1", 0, (const uint8_t *)"a", 1, indef, sizeof indef},
        {"ipn:1.1", "imc:7.1", 0, (const uint8_t *)"b", 1, text_item, sizeof text_item},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        size_t n = imc_bundle(bad[i].src, bad[i].dst, bad[i].flags, bad[i].p, bad[i].len,
                              bad[i].d, bad[i].dn, i, buf, sizeof buf);
        bp_agent_receive(n2.a, buf, n);
        bp_imc_stats st;
        bp_agent_imc_stats_get(n2.a, &st);
        CHECK_MSG(st.refused == i + 1, "case %zu: refused %" PRIu64, i, st.refused);
    }
    /* still serving: a good group bundle and a good petition */
    size_t n = imc_bundle("ipn:1.1", "imc:7.1", 0, "good", 4, to2, sizeof to2, 100, buf,
                          sizeof buf);
    CHECK_EQ_INT(bp_agent_receive(n2.a, buf, n), 1);
    recv_expect(&n2, "imc:7.1", "good", 4);
    n = imc_bundle("ipn:1.0", "imc:0.0", 0, join9, sizeof join9, NULL, 0, 101, buf,
                   sizeof buf);
    CHECK_EQ_INT(bp_agent_receive(n2.a, buf, n), 1);
    uint64_t m[4];
    CHECK_EQ_U64(bp_agent_imc_members(n2.a, 9, m, 4), 1);
    CHECK_EQ_U64(m[0], 1);
    bp_imc_stats st;
    bp_agent_imc_stats_get(n2.a, &st);
    CHECK_EQ_U64(st.refused, 5);
    CHECK_EQ_U64(st.delivered, 1);
    CHECK_EQ_U64(st.petitions_taken, 1);
    CHECK_EQ_U64(bp_endpoint_queued(n2.a, &g), 0);
    node_close(&n2);
    world_end(clk, loop);
}
