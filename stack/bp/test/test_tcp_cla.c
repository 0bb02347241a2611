/* The TCP convergence layer (tcp_cla.c) against hostile peers, over real
 * sockets on 127.0.0.1 and a loop on the virtual clock: the peers are
 * sockets this test holds; the loop runs between their moves and its clock
 * jumps to the next timer when nothing is ready, so idle times of minutes
 * pass at once. Node 2 has an induct; the tests open connections to it (from
 * 127.0.0.1, or 127.0.0.2 for a second peer address) or have it connect out
 * to a listener of theirs. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bp_tcp.h"
#include "bp_tcpcl.h"
#include "tern/clock.h"
#include "tern_test.h"

typedef struct node {
    tern_clock *clk;
    tern_loop *loop;
    tern_log *lg;
    sdr *store;
    bp_agent *a;
    bp_tcp_cla *c;
    uint16_t port;
    char log_path[512];
} node;

static bp_eid eid(const char *text)
{
    bp_eid e;
    CHECK_OK(bp_eid_parse(text, &e, NULL));
    return e;
}

/* Node 2 on a virtual clock, with a tcp induct on 127.0.0.1 whose command is
 * cmd (NULL: none). */
static void node_open(node *n, const char *protocol, const char *cmd)
{
    memset(n, 0, sizeof *n);
    CHECK_OK(tern_clock_virtual_new(UINT64_C(849312000000), &n->clk));
    CHECK_OK(tern_loop_new(n->clk, &n->loop));
    snprintf(n->log_path, sizeof n->log_path, "%s/node.log", tt_tmpdir());
    CHECK_OK(tern_log_open(&n->lg, "n2", n->log_path, TERN_LOG_INFO, 0));
    tern_log_set_clock(n->lg, n->clk);
    sdr_profile p = {.name = "n2", .heap_size = 64u << 20, .mode = SDR_MEMORY};
    char why[256] = "";
    CHECK_MSG(sdr_open(&p, &n->store, why, sizeof why) == 0, "sdr_open: %s", why);
    bp_agent_cfg cfg = {.node = 2, .store = n->store};
    CHECK_OK(bp_agent_new(n->loop, &cfg, NULL, n->lg, &n->a));
    bp_eid ep = eid("ipn:2.1");
    CHECK_OK(bp_endpoint_add(n->a, &ep, BP_RECV_QUEUE));
    CHECK_OK(bp_tcp_cla_new(n->a, n->loop, n->lg, &n->c));
    if (protocol)
        CHECK_OK(bp_tcp_cla_induct(n->c, protocol, "127.0.0.1:0", cmd, &n->port));
}

static void node_close(node *n)
{
    bp_agent_free(n->a);
    bp_tcp_cla_free(n->c);
    CHECK_OK(sdr_close(n->store));
    tern_log_close(n->lg);
    CHECK_OK(tern_loop_close(n->loop));
    tern_clock_free(n->clk);
}

/* Runs the node's loop for ms of virtual time (ready sockets first). */
static void run_ms(node *n, uint64_t ms)
{
    for (int i = 0; i < 4; i++)
        tern_loop_run(n->loop, TERN_RUN_NOWAIT);
    tern_loop_run_until(n->loop, tern_loop_now(n->loop) + ms * 1000000ull);
}

static bp_tcp_stats stats(const node *n)
{
    bp_tcp_stats st;
    bp_tcp_cla_stats(n->c, &st);
    return st;
}

/* A connection to the node's induct from address from ("127.0.0.1", ...). */
static int peer_connect(node *n, const char *from)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    CHECK_EQ_INT(inet_pton(AF_INET, from, &a.sin_addr), 1);
    CHECK_OK(bind(fd, (struct sockaddr *)&a, sizeof a) ? -errno : 0);
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(n->port)};
    inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
    CHECK_OK(connect(fd, (struct sockaddr *)&to, sizeof to) ? -errno : 0);
    return fd;
}

static void put(int fd, const void *b, size_t len)
{
    const uint8_t *p = b;
    while (len) {
        ssize_t w = send(fd, p, len, MSG_NOSIGNAL);
        CHECK_MSG(w > 0, "send: %s", strerror(errno));
        p += w;
        len -= (size_t)w;
    }
}

/* What the node sent on fd so far (without waiting); *eof: it closed. */
static size_t take(int fd, uint8_t *buf, size_t cap, int *eof)
{
    size_t n = 0;
    *eof = 0;
    while (n < cap) {
        ssize_t r = recv(fd, buf + n, cap - n, MSG_DONTWAIT);
        if (r == 0) {
            *eof = 1;
            break;
        }
        if (r < 0) {
            CHECK_MSG(errno == EAGAIN || errno == ECONNRESET, "recv: %s",
                      strerror(errno));
            if (errno == ECONNRESET)
                *eof = 1;
            break;
        }
        n += (size_t)r;
    }
    return n;
}

static int closed_by_node(int fd)
{
    uint8_t buf[4096];
    int eof;
    take(fd, buf, sizeof buf, &eof);
    return eof;
}

static size_t log_count(const node *n, const char *what)
{
    static char text[1 << 20];
    int fd = open(n->log_path, O_RDONLY);
    CHECK(fd >= 0);
    ssize_t len = read(fd, text, sizeof text - 1);
    close(fd);
    CHECK(len >= 0);
    text[len] = 0;
    size_t k = 0;
    for (const char *p = text; (p = strstr(p, what)); p++)
        k++;
    return k;
}

/* A TCPCLv4 contact header and SESS_INIT from node ipn:7.0 offering keepalive. */
static size_t v4_hello(uint8_t *out, uint16_t keepalive)
{
    size_t n = tcpcl4_contact_encode(out, 0);
    return n + tcpcl4_enc_sess_init(out + n, keepalive, 1u << 20, 1u << 26, "ipn:7.0");
}

/* ---- connections per induct and per peer address ------------------------- */

TEST(induct_caps_connections_per_peer_address)
{
    /* The defaults: 1,000 idle connections were all accepted before; now a
     * peer address gets BP_TCP_PEERCONNS (8) and the rest are closed. */
    node n;
    node_open(&n, "tcp", "tcpcli");
    int fds[20];
    for (int i = 0; i < 20; i++) {
        fds[i] = peer_connect(&n, "127.0.0.1");
        run_ms(&n, 1);
    }
    run_ms(&n, 10);
    int closed = 0;
    for (int i = 0; i < 20; i++)
        closed += closed_by_node(fds[i]);
    CHECK_EQ_INT(closed, 20 - BP_TCP_PEERCONNS);
    bp_tcp_stats st = stats(&n);
    CHECK_EQ_U64(st.accepted, BP_TCP_PEERCONNS);
    CHECK_EQ_U64(st.refused_conns, 20 - BP_TCP_PEERCONNS);
    /* another address is not held back by the first one's */
    int other = peer_connect(&n, "127.0.0.2");
    run_ms(&n, 10);
    CHECK(!closed_by_node(other));
    /* one line for the 12 refusals of the last 10 s */
    CHECK_EQ_INT(log_count(&n, "refused: 8 connections from that address already "
                               "(peerconns=8)"),
                 1);
    for (int i = 0; i < 20; i++)
        close(fds[i]);
    close(other);
    node_close(&n);
}

TEST(induct_caps_configured)
{
    node n;
    node_open(&n, "stcp", "stcpcli maxconns=5 peerconns=3 idle=0");
    int fds[8];
    const char *from[8] = {"127.0.0.1", "127.0.0.1", "127.0.0.1", "127.0.0.1",
                           "127.0.0.2", "127.0.0.2", "127.0.0.3", "127.0.0.3"};
    for (int i = 0; i < 8; i++) {
        fds[i] = peer_connect(&n, from[i]);
        run_ms(&n, 1);
    }
    run_ms(&n, 10);
    /* .1: 3 of 4 (peerconns); .2: both (5 in all); .3: none (maxconns) */
    int want[8] = {0, 0, 0, 1, 0, 0, 1, 1};
    for (int i = 0; i < 8; i++)
        CHECK_MSG(closed_by_node(fds[i]) == want[i], "connection %d from %s", i, from[i]);
    CHECK_EQ_U64(stats(&n).refused_conns, 3);
    /* a place freed is a place to take */
    close(fds[0]);
    run_ms(&n, 10);
    int again = peer_connect(&n, "127.0.0.3");
    run_ms(&n, 10);
    CHECK(!closed_by_node(again));
    close(again);
    for (int i = 1; i < 8; i++)
        close(fds[i]);
    node_close(&n);
}

TEST(induct_options_checked)
{
    node n;
    node_open(&n, NULL, NULL);
    uint16_t port;
    CHECK_RC(bp_tcp_cla_induct(n.c, "tcp", "127.0.0.1:0", "tcpcli maxconn=5", &port),
             TERN_ESYNTAX);
    CHECK_RC(bp_tcp_cla_induct(n.c, "tcp", "127.0.0.1:0", "tcpcli maxconns=0", &port),
             TERN_ESYNTAX);
    CHECK_RC(bp_tcp_cla_induct(n.c, "tcp", "127.0.0.1:0", "tcpcli idle=x", &port),
             TERN_ESYNTAX);
    CHECK_RC(bp_tcp_cla_induct(n.c, "tcp", "127.0.0.1:0", "tcpcli xfermru=100", &port),
             TERN_ESYNTAX);
    CHECK_RC(
        bp_tcp_cla_induct(n.c, "tcp", "127.0.0.1:0", "tcpcli rxbuffer=16777216", &port),
        TERN_ESYNTAX); /* below the default xfermru (128 MiB) */
    CHECK_OK(
        bp_tcp_cla_induct(n.c, "tcp", "127.0.0.1:0",
                          "tcpcli maxconns=64 peerconns=4 idle=120 rxbuffer=67108864 "
                          "xfermru=16777216",
                          &port));
    CHECK_EQ_INT(log_count(&n, "unknown option 'maxconn=5'; expected maxconns=, "
                               "peerconns=, idle=, rxbuffer= or xfermru="),
                 1);
    CHECK_EQ_INT(log_count(&n, "option 'maxconns=0': expected maxconns=<1..1000000>"), 1);
    CHECK_EQ_INT(log_count(&n, "rxbuffer=16777216 cannot hold one bundle of "
                               "xfermru=134217728 and a segment; expected "
                               "rxbuffer=138412032 or more"),
                 1);
    node_close(&n);
}

/* ---- sessions that make no progress -------------------------------------- */

TEST(keepalive_zero_session_closed_when_idle)
{
    /* A TCPCLv4 peer that negotiates keepalive 0 and then says nothing:
     * before, its session stayed open for ever. */
    node n;
    node_open(&n, "tcp", "tcpcli idle=120");
    int fd = peer_connect(&n, "127.0.0.1");
    uint8_t hello[64], buf[256];
    put(fd, hello, v4_hello(hello, 0));
    run_ms(&n, 10);
    int eof;
    size_t got = take(fd, buf, sizeof buf, &eof);
    CHECK(!eof);
    CHECK(got >= TCPCL4_CONTACT_LEN + TCPCL4_SESS_INIT_FIXED); /* its answer: up */
    run_ms(&n, 119 * 1000);
    CHECK(!closed_by_node(fd));
    run_ms(&n, 2 * 1000);
    got = take(fd, buf, sizeof buf, &eof);
    CHECK(eof);
    /* it said why: SESS_TERM(idle timeout) */
    uint8_t term[3];
    tcpcl4_enc_term(term, 0, TCPCL4_TERM_IDLE_TIMEOUT);
    CHECK_EQ_MEM(buf, term, 3);
    CHECK_EQ_U64(stats(&n).idle_closes, 1);
    CHECK_EQ_INT(log_count(&n, "closed: no progress for 120 s (idle=120)"), 1);
    close(fd);
    node_close(&n);
}

TEST(session_with_traffic_not_idle)
{
    /* Bundles arriving are progress; keepalives are not. */
    node n;
    node_open(&n, "tcp", "tcpcli idle=60");
    int fd = peer_connect(&n, "127.0.0.1");
    uint8_t hello[64], buf[4096];
    put(fd, hello, v4_hello(hello, 0));
    run_ms(&n, 10);
    int eof;
    take(fd, buf, sizeof buf, &eof);
    for (int i = 0; i < 5; i++) { /* a (malformed) bundle every 50 s */
        run_ms(&n, 50 * 1000);
        uint8_t seg[64];
        size_t hl =
            tcpcl4_enc_seg_hdr(seg, TCPCL4_SEG_START | TCPCL4_SEG_END, (uint64_t)i, 4, 0);
        memcpy(seg + hl, "abcd", 4);
        put(fd, seg, hl + 4);
        run_ms(&n, 10);
        take(fd, buf, sizeof buf, &eof);
        CHECK_MSG(!eof, "closed after bundle %d", i);
    }
    uint8_t ka = TCPCL4_KEEPALIVE;
    for (int i = 0; i < 5; i++) { /* then keepalives only, for 50 s */
        run_ms(&n, 10 * 1000);
        put(fd, &ka, 1);
        run_ms(&n, 1);
        take(fd, buf, sizeof buf, &eof);
        CHECK(!eof);
    }
    run_ms(&n, 15 * 1000); /* 65 s after the last bundle */
    take(fd, buf, sizeof buf, &eof);
    CHECK(eof);
    CHECK_EQ_U64(stats(&n).idle_closes, 1);
    close(fd);
    node_close(&n);
}

/* ---- what sessions may hold for incomplete input ------------------------- */

TEST(partial_segments_bounded_by_rxbuffer)
{
    /* Peers each sending most of a 1 MiB segment and then nothing: what the
     * induct's sessions hold stays near rxbuffer (2 MiB here), the others
     * wait, unread, in TCP; and it is all given back when they close. */
    node n;
    node_open(&n, "tcp", "tcpcli rxbuffer=2097152 xfermru=1048576 peerconns=16");
    enum { NPEER = 6, PART = 700 * 1024 };
    int fds[NPEER];
    static uint8_t seg[PART + 64];
    for (int i = 0; i < NPEER; i++) {
        fds[i] = peer_connect(&n, "127.0.0.1");
        int big = 1 << 20;
        setsockopt(fds[i], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
        CHECK_OK(fcntl(fds[i], F_SETFL, O_NONBLOCK) ? -errno : 0);
        uint8_t hello[64];
        put(fds[i], hello, v4_hello(hello, 0));
    }
    run_ms(&n, 10);
    for (int i = 0; i < NPEER; i++) {
        size_t hl = tcpcl4_enc_seg_hdr(seg, TCPCL4_SEG_START, 1, (1u << 20) - 1, 0);
        memset(seg + hl, 'x', PART);
        size_t off = 0, len = hl + PART;
        for (int k = 0; k < 2000 && off < len; k++) {
            ssize_t w = send(fds[i], seg + off, len - off, MSG_NOSIGNAL);
            if (w > 0)
                off += (size_t)w;
            run_ms(&n, 1);
        }
    }
    run_ms(&n, 100);
    bp_tcp_stats st = stats(&n);
    fprintf(stderr, "# held %" PRIu64 " bytes, %" PRIu64 " waits\n", st.rx_held,
            st.starved);
    CHECK(st.starved >= 1);
    /* the limit, plus the 256 KiB any session may always hold */
    CHECK(st.rx_held <= (2u << 20) + NPEER * (256u << 10));
    CHECK_EQ_INT(log_count(&n, "above rxbuffer=2097152: not reading from"), 1);
    for (int i = 0; i < NPEER; i++)
        close(fds[i]);
    run_ms(&n, 100);
    CHECK_EQ_U64(stats(&n).rx_held, 0);
    node_close(&n);
}

/* Sends as much of b[*off..len) as fd takes within a few turns of the loop. */
static void push(node *n, int fd, const uint8_t *b, size_t len, size_t *off)
{
    for (int k = 0; k < 400 && *off < len; k++) {
        ssize_t w = send(fd, b + *off, len - *off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0)
            *off += (size_t)w;
        run_ms(n, 1);
    }
}

TEST(waiting_session_reads_again_when_room_returns)
{
    /* rxbuffer 2 MiB: two peers hold most of a 1 MiB segment each, a third
     * one's bundle (one segment of 900 KB) waits, unread, and goes on when
     * one of the two leaves; it arrives whole (the agent refuses it: it is
     * no bundle, but the refusal shows that the transfer was taken). */
    node n;
    node_open(&n, "tcp", "tcpcli rxbuffer=2097152 xfermru=1048576");
    int a1 = peer_connect(&n, "127.0.0.1"), a2 = peer_connect(&n, "127.0.0.1"),
        b = peer_connect(&n, "127.0.0.1");
    uint8_t hello[64], buf[4096];
    int eof;
    int fds[3] = {a1, a2, b};
    for (int i = 0; i < 3; i++)
        put(fds[i], hello, v4_hello(hello, 0));
    run_ms(&n, 10);
    for (int i = 0; i < 3; i++)
        take(fds[i], buf, sizeof buf, &eof); /* the node's contact header, SESS_INIT */
    static uint8_t seg[(1u << 20) + 64];
    size_t hl = tcpcl4_enc_seg_hdr(seg, TCPCL4_SEG_START, 1, 1u << 20, 0);
    memset(seg + hl, 'a', 1u << 20);
    size_t off1 = 0, off2 = 0;
    push(&n, a1, seg, hl + (1u << 20) - 1000, &off1);
    push(&n, a2, seg, hl + (1u << 20) - 1000, &off2);
    size_t blen = 900000;
    hl = tcpcl4_enc_seg_hdr(seg, TCPCL4_SEG_START | TCPCL4_SEG_END, 5, blen, 0);
    memset(seg + hl, 0x41, blen);
    size_t off = 0;
    push(&n, b, seg, hl + blen, &off);
    run_ms(&n, 50);
    CHECK(stats(&n).starved >= 1);
    CHECK_EQ_U64(take(b, buf, sizeof buf, &eof), 0); /* no answer yet: b waits */
    close(a1);
    run_ms(&n, 10);
    push(&n, b, seg, hl + blen, &off);
    CHECK_EQ_U64(off, hl + blen);
    run_ms(&n, 50);
    size_t got = take(b, buf, sizeof buf, &eof);
    uint8_t refuse[10];
    tcpcl4_enc_refuse(refuse, TCPCL4_REFUSE_NOT_ACCEPTABLE, 5);
    CHECK_EQ_U64(got, 10);
    CHECK_EQ_MEM(buf, refuse, 10);
    close(a2);
    close(b);
    node_close(&n);
}

/* ---- garbage connections and the log ------------------------------------- */

TEST(garbage_connections_log_bounded)
{
    /* Before, each garbage connection wrote three lines (session ends,
     * dropping, closed): 150 for 50. Now one per cause per 10 s, and the
     * next one says how many were held back. */
    node n;
    node_open(&n, "tcp", "tcpcli");
    for (int i = 0; i < 50; i++) {
        int fd = peer_connect(&n, "127.0.0.1");
        put(fd, "GET / HTTP/1.0\r\n\r\n", 18);
        run_ms(&n, 5);
        CHECK(closed_by_node(fd));
        close(fd);
    }
    CHECK_EQ_INT(log_count(&n, "bp-tcp:"), 2); /* listening, then one drop */
    CHECK_EQ_INT(log_count(&n, "dropping tcp peer 127.0.0.1:"), 1);
    run_ms(&n, 11 * 1000);
    int fd = peer_connect(&n, "127.0.0.1");
    put(fd, "GET / HTTP/1.0\r\n\r\n", 18);
    run_ms(&n, 5);
    close(fd);
    CHECK_EQ_INT(log_count(&n, "no \"dtn!\" contact header (49 more since the last such "
                               "line, 11 s ago)"),
                 1);
    CHECK_EQ_U64(stats(&n).protocol_errors, 51);
    node_close(&n);
}

/* ---- bundles of sessions without acknowledgements ------------------------ */

static int accept_within(node *n, int l)
{
    for (int k = 0; k < 500; k++) {
        int fd = accept4(l, NULL, NULL, SOCK_CLOEXEC);
        if (fd >= 0)
            return fd;
        CHECK(errno == EAGAIN || errno == EWOULDBLOCK);
        run_ms(n, 2);
    }
    CHECK_MSG(0, "the node did not connect");
    return -1;
}

TEST(v3_without_acks_forwarded_once_the_kernel_took_it)
{
    /* An outduct that fell back to a TCPCLv3 peer asking for no
     * acknowledgements: a bundle counted as forwarded the moment it was
     * queued, so one still in the session's buffer when the connection
     * dropped was lost without a word. Now it counts once the kernel took
     * its last byte, and goes again when the connection drops first. */
    node n;
    node_open(&n, NULL, NULL);
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int small = 4096;
    setsockopt(l, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    struct sockaddr_in a = {.sin_family = AF_INET};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    CHECK_OK(bind(l, (struct sockaddr *)&a, sizeof a) ? -errno : 0);
    CHECK_OK(listen(l, 4) ? -errno : 0);
    socklen_t al = sizeof a;
    getsockname(l, (struct sockaddr *)&a, &al);
    char duct[32];
    snprintf(duct, sizeof duct, "127.0.0.1:%u", ntohs(a.sin_port));
    CHECK_OK(bp_outduct_add(n.a, "tcp", duct, "tcpclo", 0));
    CHECK_OK(bp_egress_plan_add(n.a, 3, "tcp", duct));
    uint8_t buf[4096], v3[32];
    int eof;
    size_t v3len = tcpcl3_contact_encode(v3, 0, 0, "ipn:3.0"); /* no acknowledgements */
    int c1 = accept_within(&n, l);                             /* v4 first */
    run_ms(&n, 5);
    take(c1, buf, sizeof buf, &eof);
    put(c1, v3, v3len);
    run_ms(&n, 5);
    close(c1);
    int c2 = accept_within(&n, l); /* and again, in v3 */
    run_ms(&n, 5);
    CHECK(take(c2, buf, sizeof buf, &eof) > 8 && buf[4] == TCPCL3_VERSION);
    put(c2, v3, v3len);
    run_ms(&n, 20);
    static uint8_t p[4u << 20];
    bp_eid s = eid("ipn:2.1"), d = eid("ipn:3.1");
    CHECK_OK(bp_agent_send(n.a, &s, &d, NULL, p, sizeof p, NULL));
    run_ms(&n, 50);
    bp_agent_stats st;
    bp_agent_stats_get(n.a, &st);
    CHECK_EQ_U64(st.forwarded, 0); /* most of it still waits: not sent yet */
    CHECK_EQ_U64(st.in_flight, 1);
    close(c2); /* the peer goes, unread bytes and all */
    run_ms(&n, 50);
    bp_agent_stats_get(n.a, &st);
    CHECK_EQ_U64(st.forwarded, 0);
    CHECK(st.reforwarded >= 1); /* kept, to go again */
    CHECK_EQ_U64(st.stored, 1);
    CHECK_EQ_U64(st.deleted, 0);
    close(l);
    node_close(&n);
}

TEST(stcp_forwarded_once_the_peer_acknowledged_it)
{
    /* STCP has no acknowledgements: a bundle counted as forwarded when the
     * kernel took its bytes, so one whose bytes were still on their way
     * when the peer went was lost without a word. Now it counts once the
     * peer's TCP acknowledged its last byte, and goes again when the
     * connection drops first. The peer here reads nothing and has a tiny
     * receive buffer. */
    node n;
    node_open(&n, NULL, NULL);
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int small = 2048;
    setsockopt(l, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    struct sockaddr_in a = {.sin_family = AF_INET};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    CHECK_OK(bind(l, (struct sockaddr *)&a, sizeof a) ? -errno : 0);
    CHECK_OK(listen(l, 4) ? -errno : 0);
    socklen_t al = sizeof a;
    getsockname(l, (struct sockaddr *)&a, &al);
    char duct[32];
    snprintf(duct, sizeof duct, "127.0.0.1:%u", ntohs(a.sin_port));
    CHECK_OK(bp_outduct_add(n.a, "stcp", duct, "stcpclo", 0));
    CHECK_OK(bp_egress_plan_add(n.a, 3, "stcp", duct));
    int c = accept_within(&n, l);
    run_ms(&n, 5);
    static uint8_t p[12000];
    bp_eid s = eid("ipn:2.1"), d = eid("ipn:3.1");
    CHECK_OK(bp_agent_send(n.a, &s, &d, NULL, p, sizeof p, NULL));
    run_ms(&n, 50);
    bp_tcp_stats ts = stats(&n);
    bp_agent_stats st;
    bp_agent_stats_get(n.a, &st);
    CHECK(ts.bytes_out >= 12004);  /* the kernel took it all (4 + the bundle) */
    CHECK_EQ_U64(st.forwarded, 0); /* the peer's TCP did not acknowledge it all */
    CHECK_EQ_U64(st.in_flight, 1);
    struct linger lg = {1, 0};
    setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    close(c); /* the peer goes (a reset) */
    run_ms(&n, 50);
    bp_agent_stats_get(n.a, &st);
    CHECK_EQ_U64(st.forwarded, 0);
    CHECK(st.reforwarded >= 1); /* kept, to go again */
    CHECK_EQ_U64(st.stored, 1);
    /* a peer that reads: acknowledged, forwarded */
    c = accept_within(&n, l);
    run_ms(&n, 20);
    uint8_t buf[65536];
    int eof;
    size_t got = 0;
    for (int k = 0; k < 200 && got < 12000; k++) {
        got += take(c, buf, sizeof buf, &eof);
        run_ms(&n, 2);
    }
    run_ms(&n, 20);
    bp_agent_stats_get(n.a, &st);
    CHECK_EQ_U64(st.forwarded, 1);
    close(c);
    close(l);
    node_close(&n);
}
