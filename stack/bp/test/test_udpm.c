/* The broadcast convergence layer (udpm) over real sockets on 127.0.0.1:
 * three agents (nodes 1, 2, 3; in-memory stores) on one loop with the real
 * clock. Node 1's udpm outduct sends to a multicast group (or the loopback
 * broadcast address) that nodes 2 and 3 listen on, on one port; node 1
 * listens too, and hears its own datagrams come back (loop=1). */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bp_udp.h"
#include "tern_test.h"

typedef struct node {
    sdr *store;
    bp_agent *a;
    bp_udp_cla *u;
} node;

typedef struct net {
    tern_loop *loop;
    node n[4]; /* n[1..3] */
    uint16_t port;
    char duct[64];
} net;

static bp_eid eid(const char *text)
{
    bp_eid e;
    CHECK_OK(bp_eid_parse(text, &e, NULL));
    return e;
}

static void node_open(net *w, uint64_t nbr)
{
    node *n = &w->n[nbr];
    char name[16];
    snprintf(name, sizeof name, "m%" PRIu64, nbr);
    sdr_profile p = {.name = name, .heap_size = 256u << 20, .mode = SDR_MEMORY};
    char why[256] = "";
    int rc = sdr_open(&p, &n->store, why, sizeof why);
    CHECK_MSG(rc == 0, "sdr_open: %s", why);
    bp_agent_cfg cfg = {.node = nbr, .store = n->store};
    bp_agent_host host = {.ctx = n};
    CHECK_OK(bp_agent_new(w->loop, &cfg, &host, NULL, &n->a));
    CHECK_OK(bp_udpm_cla_new(n->a, w->loop, NULL, &n->u));
    char text[32];
    snprintf(text, sizeof text, "ipn:%" PRIu64 ".1", nbr);
    bp_eid ep = eid(text);
    CHECK_OK(bp_endpoint_add(n->a, &ep, BP_RECV_QUEUE));
}

/* A group of the administratively scoped range, different in each run so
 * that parallel runs do not hear each other. */
static void group_name(char *out, size_t cap)
{
    uint64_t s = tt_seed() ^ (uint64_t)getpid() ^ (uint64_t)time(NULL);
    snprintf(out, cap, "239.%u.%u.%u", (unsigned)(s >> 8 & 0xff),
             (unsigned)(s >> 16 & 0xff), (unsigned)(1 + (s >> 24) % 254));
}

/* All three nodes listen on addr's port (the first binds port 0, the
 * others take the port it got); node 1 sends there with cmd. */
static void net_open(net *w, const char *addr, const char *incmd, const char *outcmd)
{
    memset(w, 0, sizeof *w);
    CHECK_OK(tern_loop_new(NULL, &w->loop));
    for (uint64_t i = 1; i <= 3; i++)
        node_open(w, i);
    char name[64];
    snprintf(name, sizeof name, "%s:0", addr);
    CHECK_OK(bp_udpm_cla_induct(w->n[2].u, name, incmd, &w->port));
    CHECK(w->port != 0);
    snprintf(name, sizeof name, "%s:%u", addr, w->port);
    uint16_t p = 0;
    CHECK_OK(bp_udpm_cla_induct(w->n[3].u, name, incmd, &p));
    CHECK_EQ_U64(p, w->port);
    CHECK_OK(bp_udpm_cla_induct(w->n[1].u, name, incmd, &p));
    CHECK_EQ_U64(p, w->port);
    snprintf(w->duct, sizeof w->duct, "%s:%u", addr, w->port);
    CHECK_OK(bp_outduct_add(w->n[1].a, "udpm", w->duct, outcmd, 0));
    CHECK_OK(bp_egress_plan_add(w->n[1].a, 2, "udpm", w->duct));
    CHECK_OK(bp_egress_plan_add(w->n[1].a, 3, "udpm", w->duct));
}

static void net_close(net *w)
{
    for (int i = 1; i <= 3; i++) {
        bp_agent_free(w->n[i].a);
        bp_udp_cla_free(w->n[i].u);
        CHECK_OK(sdr_close(w->n[i].store));
    }
    CHECK_OK(tern_loop_close(w->loop));
}

static void run_ms(net *w, uint64_t ms)
{
    tern_loop_run_until(w->loop, tern_loop_now(w->loop) + ms * 1000000ull);
}

static bp_udp_stats ustats(const node *n)
{
    bp_udp_stats st;
    bp_udp_cla_stats(n->u, &st);
    return st;
}

static void send_to(net *w, uint64_t nbr, const void *p, size_t len, uint64_t flags)
{
    char text[32];
    snprintf(text, sizeof text, "ipn:%" PRIu64 ".1", nbr);
    bp_eid s = eid("ipn:1.1"), d = eid(text);
    bp_send_opts o;
    bp_send_opts_init(&o);
    o.flags = flags;
    CHECK_OK(bp_agent_send(w->n[1].a, &s, &d, &o, p, len, NULL));
}

static size_t queued(net *w, uint64_t nbr)
{
    char text[32];
    snprintf(text, sizeof text, "ipn:%" PRIu64 ".1", nbr);
    bp_eid ep = eid(text);
    return bp_endpoint_queued(w->n[nbr].a, &ep);
}

/* Runs until nodes 2 and 3 hold want2 and want3 bundles (or timeout_ms). */
static void wait_for(net *w, size_t want2, size_t want3, unsigned timeout_ms)
{
    for (unsigned t = 0; t < timeout_ms; t += 5) {
        if (queued(w, 2) >= want2 && queued(w, 3) >= want3)
            break;
        run_ms(w, 5);
    }
    run_ms(w, 50); /* anything that would come twice, or to the wrong node */
}

/* Whether multicast to a group joined on 127.0.0.1 reaches a socket here
 * (lo has no MULTICAST flag, but Linux loops a group's datagrams back to
 * members on the sending interface). */
static bool lo_multicast_works(const char *group)
{
    int r = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    bool ok = false;
    struct sockaddr_in a = {.sin_family = AF_INET};
    inet_pton(AF_INET, group, &a.sin_addr);
    struct ip_mreq mr = {.imr_multiaddr = a.sin_addr};
    inet_pton(AF_INET, "127.0.0.1", &mr.imr_interface);
    socklen_t al = sizeof a;
    struct timeval tv = {.tv_sec = 1};
    if (r >= 0 && s >= 0 && bind(r, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(r, (struct sockaddr *)&a, &al) == 0 &&
        setsockopt(r, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mr, sizeof mr) == 0 &&
        setsockopt(s, IPPROTO_IP, IP_MULTICAST_IF, &mr.imr_interface,
                   sizeof mr.imr_interface) == 0 &&
        setsockopt(r, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) == 0 &&
        sendto(s, "x", 1, 0, (struct sockaddr *)&a, sizeof a) == 1) {
        char b[4];
        ok = recv(r, b, sizeof b, 0) == 1;
    }
    if (r >= 0)
        close(r);
    if (s >= 0)
        close(s);
    return ok;
}

/* ---- configuration ------------------------------------------------------ */

TEST(udpm_names_and_commands_are_checked)
{
    char why[400];
    static const char *const bad_out[][2] = {
        {"239.1.2.3:0", ""},           /* port 0 for an outduct */
        {"239.1.2.3:65536", ""},       /* port out of range */
        {"host.example:4556", ""},     /* names are numeric */
        {"[ff02::1]:4556", ""},        /* IPv4 only */
        {"239.1.2.3:4556", "udpclo"},  /* the udp command */
        {"239.1.2.3", "udpmclo fast"}, /* not a rate */
        {"239.1.2.3", "udpmclo ttl=256"},
        {"239.1.2.3", "udpmclo ttl="},
        {"239.1.2.3", "udpmclo ttl=1 ttl=2"},
        {"239.1.2.3", "udpmclo loop=2"},
        {"239.1.2.3", "udpmclo if=eth0"},
        {"239.1.2.3", "udpmclo 100 200"},
        {"239.1.2.3", "udpmclo colour=blue"},
        {"", "udpmclo"},
    };
    for (size_t i = 0; i < sizeof bad_out / sizeof *bad_out; i++) {
        why[0] = '\0';
        CHECK_MSG(bp_udpm_check(true, bad_out[i][0], bad_out[i][1], why, sizeof why) ==
                      TERN_ESYNTAX,
                  "outduct '%s' '%s' accepted", bad_out[i][0], bad_out[i][1]);
        CHECK_MSG(strstr(why, "expected") != NULL, "no 'expected' in: %s", why);
    }
    CHECK(bp_udpm_check(true, "239.1.2.3", "udpmclo ttl=1", why, sizeof why) == 0);
    CHECK(bp_udpm_check(true, "239.1.2.3:5000",
                        "udpmclo 1000000 ttl=4 if=10.0.0.1 loop=0", why,
                        sizeof why) == 0);
    CHECK(bp_udpm_check(true, "255.255.255.255:5000", "", why, sizeof why) == 0);
    CHECK(bp_udpm_check(true, "10.1.0.255:5000", NULL, why, sizeof why) == 0);
    /* Inducts take port 0 and only if=. */
    CHECK(bp_udpm_check(false, "239.1.2.3:0", "udpmcli if=127.0.0.1", why, sizeof why) ==
          0);
    CHECK(bp_udpm_check(false, "239.1.2.3:0", "udpmcli ttl=3", why, sizeof why) ==
          TERN_ESYNTAX);
    CHECK(bp_udpm_check(false, "239.1.2.3:0", "udpmclo", why, sizeof why) ==
          TERN_ESYNTAX);
    CHECK(bp_udpm_check(false, "239.1.2.3:1 2", "", why, sizeof why) == TERN_ESYNTAX);
    fprintf(stderr, "# example message: %s\n", why);

    /* The same checks where the agent opens the duct. */
    net w;
    memset(&w, 0, sizeof w);
    CHECK_OK(tern_loop_new(NULL, &w.loop));
    node_open(&w, 1);
    bp_agent *a = w.n[1].a;
    CHECK_RC(bp_outduct_add(a, "udpm", "239.1.2.3:5000", "udpmclo ttl=x", 0),
             TERN_ESYNTAX);
    CHECK_RC(bp_outduct_add(a, "udpm", "239.1.2.3:0", "", 0), TERN_ESYNTAX);
    CHECK_OK(
        bp_outduct_add(a, "udpm", "239.1.2.3:5000", "udpmclo 1000000 ttl=2 loop=0", 0));
    CHECK_OK(bp_outduct_add(a, "udpm", "239.1.2.4", "", 0));
    CHECK_OK(bp_outduct_del(a, "udpm", "239.1.2.4"));
    uint16_t p;
    CHECK_RC(bp_udpm_cla_induct(w.n[1].u, "239.1.2.3:0", "udpmcli if=nowhere", &p),
             TERN_ESYNTAX);
    CHECK_RC(bp_udp_cla_induct(w.n[1].u, "239.1.2.3:0 x", &p), TERN_ESYNTAX);
    CHECK_OK(bp_udpm_cla_set_dtn_name(w.n[1].u, "//one"));
    CHECK_RC(bp_udpm_cla_set_dtn_name(w.n[1].u, "one"), TERN_ESYNTAX);
    bp_agent_free(a);
    bp_udp_cla_free(w.n[1].u);
    CHECK_OK(sdr_close(w.n[1].store));
    CHECK_OK(tern_loop_close(w.loop));
}

/* ---- delivery ------------------------------------------------------------ */

/* n2 bundles to node 2 and n3 to node 3, one datagram each: each node takes
 * its own, counts the other's as not for it; node 1 drops its own echo. */
static void one_medium(const char *addr, const char *incmd, const char *outcmd)
{
    net w;
    net_open(&w, addr, incmd, outcmd);
    enum { N2 = 40, N3 = 60 };
    uint8_t buf[1000];
    memset(buf, 0x5a, sizeof buf);
    for (int i = 0; i < N2 + N3; i++)
        send_to(&w, i % 5 < 2 ? 2 : 3, buf, sizeof buf, 0);
    wait_for(&w, N2, N3, 5000);
    bp_udp_stats s1 = ustats(&w.n[1]), s2 = ustats(&w.n[2]), s3 = ustats(&w.n[3]);
    CHECK_EQ_U64(s1.dgrams_out, N2 + N3);
    CHECK_EQ_U64(queued(&w, 2), N2);
    CHECK_EQ_U64(queued(&w, 3), N3);
    CHECK_EQ_U64(s2.dgrams_in, N2 + N3);
    CHECK_EQ_U64(s2.bundles_in, N2);
    CHECK_EQ_U64(s2.not_for_us, N3);
    CHECK_EQ_U64(s3.bundles_in, N3);
    CHECK_EQ_U64(s3.not_for_us, N2);
    CHECK_EQ_U64(s1.own_in, N2 + N3);
    CHECK_EQ_U64(s1.bundles_in, 0);
    CHECK_EQ_U64(s2.own_in + s3.own_in, 0);
    fprintf(stderr,
            "# %s: %" PRIu64 " datagrams sent for %d bundles; node 2 took %" PRIu64
            " (%" PRIu64 " not for it), node 3 took %" PRIu64 " (%" PRIu64
            "), node 1 dropped %" PRIu64 " of its own\n",
            w.duct, s1.dgrams_out, N2 + N3, s2.bundles_in, s2.not_for_us, s3.bundles_in,
            s3.not_for_us, s1.own_in);

    /* A group bundle passes the filter at both (the agent decides on it). */
    bp_eid src = eid("ipn:1.1"), grp = eid("imc:7.1");
    bp_send_opts o;
    bp_send_opts_init(&o);
    CHECK_OK(bp_egress_plan_add(w.n[1].a, 7, "udpm", w.duct)); /* no group routing yet */
    int rc = bp_agent_send(w.n[1].a, &src, &grp, &o, buf, 10, NULL);
    if (rc == 0) {
        run_ms(&w, 200);
        CHECK_EQ_U64(ustats(&w.n[2]).not_for_us, N3);
        CHECK_EQ_U64(ustats(&w.n[3]).not_for_us, N2);
    }

    /* 150 kB is fragmented to fit datagrams; an unfragmentable one is refused. */
    uint8_t *big = calloc(1, 150000);
    send_to(&w, 3, big, 150000, 0);
    wait_for(&w, N2, N3 + 1, 5000);
    CHECK_EQ_U64(queued(&w, 3), N3 + 1);
    CHECK_EQ_U64(queued(&w, 2), N2);
    bp_eid d3 = eid("ipn:3.1");
    o.flags = BP_FLAG_NO_FRAGMENT;
    CHECK_RC(bp_agent_send(w.n[1].a, &src, &d3, &o, big, 150000, NULL), TERN_ETOOBIG);
    free(big);
    net_close(&w);
}

TEST(udpm_multicast_group_on_loopback)
{
    char g[32];
    group_name(g, sizeof g);
    if (!lo_multicast_works(g)) {
        fprintf(stderr,
                "# multicast to %s on 127.0.0.1 does not loop back here: "
                "multicast case skipped (the broadcast case still runs)\n",
                g);
        return;
    }
    one_medium(g, "udpmcli if=127.0.0.1", "udpmclo if=127.0.0.1");
}

TEST(udpm_loopback_broadcast)
{
    one_medium("127.255.255.255", "udpmcli", "udpmclo");
}

/* The filter reads only the head of the primary block: the cost of a
 * datagram not for us is a small fraction of one taken. */
TEST(udpm_filter_is_cheap)
{
    net w;
    net_open(&w, "127.255.255.255", "udpmcli", "udpmclo");
    enum { N = 20000 };
    uint8_t buf[1000];
    memset(buf, 1, sizeof buf);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < N; i++) {
        send_to(&w, 3, buf, sizeof buf, 0);
        if (i % 256 == 255)
            run_ms(&w, 1);
    }
    wait_for(&w, 0, N, 20000);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    bp_udp_stats s2 = ustats(&w.n[2]), s3 = ustats(&w.n[3]);
    /* Datagrams may be lost at a full socket buffer: count what came. */
    CHECK(s3.bundles_in > N / 2);
    CHECK_EQ_U64(s2.bundles_in, 0);
    CHECK_EQ_U64(s2.not_for_us + s2.kernel_drops, N);
    fprintf(stderr,
            "# %d 1 kB bundles through three agents on one loop in %.2f s (%.0f/s): "
            "node 3 took %" PRIu64 ", node 2 filtered %" PRIu64 "\n",
            N, s, N / s, s3.bundles_in, s2.not_for_us);
    net_close(&w);
}
