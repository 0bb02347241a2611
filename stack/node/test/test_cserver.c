/* The client server and libtern end to end: a forked child runs a loop (real
 * clock) with a memory store (or, for restart tests, a durable one in the
 * test's directory), a bundle agent (node 1, a sink outduct for node 2) and
 * node_cserver; the test process uses libtern against it. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sys/prctl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cserver_int.h"
#include "node_cserver.h"
#include "tern/crc.h"
#include "tern/loop.h"
#include "tern_bp.h"
#include "tern_proto.h"
#include "tern_test.h"

/* ---- the server child ---------------------------------------------------- */

struct child {
    tern_loop *loop;
    node_cserver *srv;
    uint64_t sunk;
};

/* The next server's store: each test runs in its own process, so a test
 * sets these before server_start. */
static uint64_t g_heap = 256u << 20;
static int g_durable;

static int sink_open(void *cla, bp_outduct *od, const char *name, const char *cmd,
                     void **duct)
{
    (void)cla;
    (void)name;
    (void)cmd;
    *duct = od;
    return 0;
}

static int sink_send(void *cla, void *duct, const uint8_t *b, size_t len, uint64_t xmit)
{
    (void)b;
    (void)len;
    ((struct child *)cla)->sunk++;
    bp_outduct_result(duct, xmit, BP_XMIT_OK);
    return 0;
}

static const bp_cla_ops sink_ops = {
    .protocol = "sink", .outduct_open = sink_open, .send = sink_send};

static void on_deliverable(void *ctx, const bp_eid *ep)
{
    node_cserver_deliverable(((struct child *)ctx)->srv, ep);
}

static int handler(void *ctx, uint32_t type, const uint8_t *body, size_t len, char *reply,
                   size_t cap)
{
    struct child *ch = ctx;
    if (type == TERN_MSG_STATUS) {
        snprintf(reply, cap, "sunk %" PRIu64, ch->sunk);
        return 0;
    }
    if (type == TERN_MSG_ADMIN) {
        char mod[TERN_PROTO_TEXT_MAX + 1], line[TERN_PROTO_TEXT_MAX + 1];
        if (tern_proto_dec_admin(body, len, mod, sizeof mod, line, sizeof line, NULL))
            return -EINVAL;
        if (!strcmp(line, "fail")) {
            snprintf(reply, cap, "%s: no such command", mod);
            return TERN_ESYNTAX;
        }
        snprintf(reply, cap, "%s did '%s'", mod, line);
        return 0;
    }
    if (type == TERN_MSG_STOP) {
        tern_loop_stop(ch->loop);
        snprintf(reply, cap, "stopping");
        return 0;
    }
    return -ENOTSUP;
}

static void run_server(const char *dir, int ready)
{
    /* the server dies with the test that started it, whatever happens */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    struct child ch = {0};
    sdr *store;
    bp_agent *a;
    tern_log *lg;
    char why[256], path[4200];
    if (tern_loop_new(NULL, &ch.loop))
        _exit(10);
    sdr_profile p = {.name = "cs", .heap_size = g_heap, .mode = SDR_MEMORY};
    if (g_durable) {
        /* a durable store survives the server: restarts resume its bundles */
        snprintf(path, sizeof path, "%s/store", dir);
        mkdir(path, 0700);
        p.dir = path;
        p.mode = SDR_DURABLE;
        p.commit = SDR_COMMIT_GROUP;
    }
    if (sdr_open(&p, &store, why, sizeof why))
        _exit(11);
    bp_agent_cfg cfg = {.node = 1, .store = store};
    bp_agent_host host = {.ctx = &ch, .deliverable = on_deliverable};
    snprintf(path, sizeof path, "%s/ternd.log", dir);
    if (tern_log_open(&lg, "t", path, TERN_LOG_INFO, 0))
        _exit(12);
    if (bp_agent_new(ch.loop, &cfg, &host, lg, &a) ||
        bp_cla_register(a, &sink_ops, &ch) || bp_outduct_add(a, "sink", "2", "", 0) ||
        bp_egress_plan_add(a, 2, "sink", "2"))
        _exit(13);
    if (g_durable) { /* as ternd: the configuration's endpoints, then the store's bundles
                      */
        for (uint64_t svc = 1; svc <= 3; svc++) {
            bp_eid e;
            bp_eid_ipn(&e, 1, svc);
            if (bp_endpoint_add(a, &e, BP_RECV_QUEUE))
                _exit(16);
        }
        if (bp_agent_resume(a) < 0)
            _exit(17);
    }
    if (node_cserver_new(ch.loop, a, lg, dir, &ch.srv))
        _exit(14);
    node_cserver_set_handler(ch.srv, handler, &ch);
    if (write(ready, "r", 1) != 1)
        _exit(15);
    close(ready);
    tern_loop_run(ch.loop, TERN_RUN_DEFAULT);
    node_cserver_free(ch.srv);
    bp_agent_free(a);
    sdr_close(store);
    tern_log_close(lg);
    tern_loop_close(ch.loop);
    _exit(0);
}

static pid_t server_start(const char *dir)
{
    int p[2];
    CHECK_OK(pipe2(p, O_CLOEXEC));
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        close(p[0]);
        run_server(dir, p[1]);
    }
    close(p[1]);
    char b;
    ssize_t r = read(p[0], &b, 1);
    close(p[0]);
    CHECK_MSG(r == 1, "the server child did not start");
    return pid;
}

static void server_kill(pid_t pid)
{
    /* SIGKILL ends a stopped process too. A SIGCONT first would let a
     * stopped server take (and answer) some of the SENDs waiting in its
     * socket, then lose them with its memory store: the restart tests would
     * miss bundles the old server, not the client, dropped. */
    kill(pid, SIGKILL);
    int st;
    waitpid(pid, &st, 0);
}

/* ---- helpers ----------------------------------------------------------- */

static void fill(uint8_t *p, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        p[i] = (uint8_t)(seed >> 56);
    }
}

static uint64_t status_value(BpNode *n, const char *key)
{
    static char buf[8192];
    CHECK_OK(bp_node_status(n, buf, sizeof buf));
    size_t kl = strlen(key);
    for (const char *l = buf; *l;) {
        if (!strncmp(l, key, kl) && l[kl] == ' ')
            return strtoull(l + kl + 1, NULL, 10);
        const char *nl = strchr(l, '\n');
        if (!nl)
            break;
        l = nl + 1;
    }
    CHECK_MSG(0, "no '%s' in status:\n%s", key, buf);
    return 0;
}

/* Expects the next delivery on sap; names the caller's line when it fails. */
#define recv_expect(sap, want, len, src) recv_expect_at(__LINE__, sap, want, len, src)
static void recv_expect_at(int line, BpSAP sap, const uint8_t *want, size_t len,
                           const char *src)
{
    BpDelivery d;
    int rc = bp_receive(sap, &d, 20000);
    if (rc) {
        /* the server's log says what it did with the bundle */
        char path[512];
        snprintf(path, sizeof path, "%s/ternd.log", tt_tmpdir());
        FILE *f = fopen(path, "r");
        char l[512];
        while (f && fgets(l, sizeof l, f))
            fprintf(stderr, "# ternd.log: %s", l);
        if (f)
            fclose(f);
        tt_fail(__FILE__, line, "bp_receive (expecting %zu bytes '%.*s'): %d (%s): %s",
                len, (int)len, (const char *)want, rc, tern_strerror(rc), bp_errmsg());
    }
    CHECK_EQ_U64(d.len, len);
    CHECK_EQ_STR(d.src, src);
    CHECK_MSG(len == 0 || !memcmp(d.payload, want, len),
              "payload of %zu bytes differs (ctime %" PRIu64 " seq %" PRIu64 ")", len,
              d.ctime_ms, d.seq);
    bp_release_delivery(&d);
}

/* ---- tests ------------------------------------------------------------- */

TEST(not_running_is_a_clear_error)
{
    const char *dir = tt_tmpdir();
    BpNode *n = NULL;
    CHECK_RC(bp_node_attach(dir, &n), -ECONNREFUSED);
    CHECK(strstr(bp_errmsg(), "no ternd serves"));
    CHECK(strstr(bp_errmsg(), "tern start"));
    CHECK(strstr(bp_strerror(-ECONNREFUSED), "tern start"));
    char missing[4200];
    snprintf(missing, sizeof missing, "%s/nope", dir);
    CHECK_RC(bp_node_attach(missing, &n), -ENOENT);
    CHECK(strstr(bp_errmsg(), missing));
    CHECK_RC(bp_open("ipn:1.1", &(BpSAP){0}), -ENOTCONN);
}

TEST(send_receive_1B_to_20MB)
{
    const char *dir = tt_tmpdir();
    pid_t pid = server_start(dir);
    BpNode *n;
    CHECK_OK(bp_node_attach(dir, &n));
    CHECK_EQ_U64(bp_node_number(n), 1);
    BpSAP sap;
    CHECK_OK(bp_node_open(n, "ipn:1.1", &sap));
    CHECK_EQ_STR(bp_sap_eid(sap), "ipn:1.1");
    static const size_t sizes[] = {0, 1, 1000, 65536, 65537, 1u << 20, 20u << 20};
    uint8_t *buf = malloc(20u << 20);
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t len = sizes[i];
        fill(buf, len, i + 1);
        uint32_t crc = tern_crc32c(0, buf, len);
        BpBundleRef ref = {0, 0};
        BpSendOpts o = BP_SEND_OPTS_INIT;
        o.lifetime_s = 600;
        CHECK_OK(bp_send(sap, "ipn:1.1", buf, len, &o, &ref));
        CHECK(ref.ctime_ms > 0);
        BpDelivery d;
        CHECK_OK(bp_receive(sap, &d, 20000));
        CHECK_EQ_U64(d.len, len);
        CHECK_EQ_U64(tern_crc32c(0, d.payload, d.len), crc);
        CHECK_EQ_STR(d.src, "ipn:1.1");
        CHECK_EQ_U64(d.ctime_ms, ref.ctime_ms);
        CHECK_EQ_U64(d.seq, ref.seq);
        bp_release_delivery(&d);
    }
    /* 65537 B, 1 MiB and 20 MiB went as descriptors both ways */
    CHECK_EQ_U64(status_value(n, "client_fd_payloads"), 6);
    CHECK_OK(bp_close(sap));
    CHECK_OK(bp_node_detach(n));
    free(buf);
    server_kill(pid);
}

TEST(send_fd_head_puts_the_head_before_the_file_bytes)
{
    const char *dir = tt_tmpdir();
    pid_t pid = server_start(dir);
    BpNode *n;
    CHECK_OK(bp_node_attach(dir, &n));
    BpSAP sap;
    CHECK_OK(bp_node_open(n, "ipn:1.1", &sap));
    enum { FSIZE = 300000 };
    uint8_t *file = malloc(FSIZE);
    fill(file, FSIZE, 9);
    char path[4200];
    snprintf(path, sizeof path, "%s/file", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    CHECK(fd >= 0);
    CHECK_EQ_U64((uint64_t)write(fd, file, FSIZE), FSIZE);
    uint8_t head[BP_SEND_HEAD_MAX + 1];
    fill(head, sizeof head, 77);
    static const struct {
        off_t off;
        size_t len, hlen;
    } cases[] = {{0, 1000, 40},
                 {12345, 64000, 40},
                 {299000, 1000, BP_SEND_HEAD_MAX},
                 {5, 0, 3},
                 {100, 70000, 0}};
    /* copied, then by reference where the node keeps one (64000, 70000 B) */
    for (size_t i = 0; i < 2 * (sizeof cases / sizeof cases[0]); i++) {
        int byref = i >= sizeof cases / sizeof cases[0];
        if (byref && i == sizeof cases / sizeof cases[0])
            CHECK_EQ_U64(status_value(n, "client_file_refs"), 0);
        size_t k = i % (sizeof cases / sizeof cases[0]);
        BpSendOpts o = BP_SEND_OPTS_INIT;
        o.lifetime_s = 600;
        o.flags = byref ? BP_SEND_FILE_REF : 0;
        BpBundleRef ref = {0, 0};
        CHECK_OK(bp_send_fd_head(sap, "ipn:1.1", head, cases[k].hlen, fd, cases[k].off,
                                 cases[k].len, &o, &ref));
        BpDelivery d;
        CHECK_OK(bp_receive(sap, &d, 20000));
        CHECK_EQ_U64(d.len, cases[k].hlen + cases[k].len);
        CHECK_EQ_MEM(d.payload, head, cases[k].hlen);
        CHECK_EQ_MEM(d.payload + cases[k].hlen, file + cases[k].off, cases[k].len);
        CHECK_EQ_U64(d.seq, ref.seq);
        bp_release_delivery(&d);
    }
    /* bytes the file does not have: ternd refuses the send */
    BpBundleRef ref;
    CHECK_RC(bp_send_fd_head(sap, "ipn:1.1", head, 40, fd, 299500, 1000, NULL, &ref),
             -EINVAL);
    /* a head longer than the limit: refused before it leaves */
    CHECK_RC(bp_send_fd_head(sap, "ipn:1.1", head, BP_SEND_HEAD_MAX + 1, fd, 0, 10, NULL,
                             NULL),
             -EINVAL);
    CHECK(strstr(bp_errmsg(), "head"));
    CHECK_EQ_U64(status_value(n, "client_fd_heads"), 8);
    CHECK_EQ_U64(status_value(n, "client_file_refs"), 2);
    CHECK_EQ_U64(status_value(n, "file_refs_lost"), 0);
    close(fd);
    free(file);
    CHECK_OK(bp_close(sap));
    CHECK_OK(bp_node_detach(n));
    server_kill(pid);
}

struct blocked {
    BpSAP sap;
    atomic_int done;
    int rc;
};

static void *blocked_send(void *arg)
{
    struct blocked *b = arg;
    b->rc = bp_send(b->sap, "ipn:2.1", "late", 4, NULL, NULL);
    atomic_store(&b->done, 1);
    return NULL;
}

TEST(window_slows_a_fast_sender_and_loses_nothing)
{
    const char *dir = tt_tmpdir();
    pid_t pid = server_start(dir);
    BpNode *n;
    CHECK_OK(bp_node_attach(dir, &n));
    BpSAP sap;
    CHECK_OK(bp_node_open(n, "ipn:1.1", &sap));
    /* a frozen ternd answers nothing: the window fills and then stops us */
    kill(pid, SIGSTOP);
    BpSendOpts nb = BP_SEND_OPTS_INIT;
    nb.flags = BP_SEND_NONBLOCK;
    int sent = 0, rc;
    while ((rc = bp_send(sap, "ipn:2.1", "x", 1, &nb, NULL)) == 0)
        sent++;
    CHECK_RC(rc, -EAGAIN);
    CHECK_EQ_INT(sent, BP_SEND_WINDOW);
    CHECK_EQ_INT(bp_node_unanswered(n), BP_SEND_WINDOW);
    struct blocked b = {.sap = sap};
    pthread_t th;
    CHECK_OK(pthread_create(&th, NULL, blocked_send, &b));
    struct timespec ts = {0, 300 * 1000000L};
    nanosleep(&ts, NULL);
    CHECK_MSG(!atomic_load(&b.done), "bp_send returned while the window was full");
    kill(pid, SIGCONT);
    pthread_join(th, NULL);
    CHECK_OK(b.rc);

    /* now 100,000 small bundles as fast as we can, most of them batched */
    uint8_t p[64];
    BpSendOpts more = BP_SEND_OPTS_INIT;
    for (int i = 0; i < 100000; i++) {
        fill(p, sizeof p, (uint64_t)i);
        more.flags = (i % 40 == 39) ? 0 : BP_SEND_MORE;
        CHECK_OK(bp_send(sap, "ipn:2.1", p, sizeof p, &more, NULL));
        CHECK(bp_node_unanswered(n) <= BP_SEND_WINDOW);
    }
    CHECK_OK(bp_flush(sap, 60000));
    CHECK_EQ_INT(bp_node_unanswered(n), 0);
    uint64_t total = (uint64_t)sent + 1 + 100000;
    CHECK_EQ_U64(status_value(n, "created"), total);
    CHECK_EQ_U64(status_value(n, "client_sends"), total);
    CHECK_EQ_U64(status_value(n, "forwarded"), total);
    uint64_t batches = status_value(n, "client_batches");
    CHECK_MSG(batches >= 2000, "only %" PRIu64 " batches", batches);
    fprintf(stderr,
            "# note %" PRIu64 " sends in %" PRIu64 " batches and %" PRIu64 " messages\n",
            total, batches, status_value(n, "client_messages"));
    CHECK_OK(bp_close(sap));
    CHECK_OK(bp_node_detach(n));
    server_kill(pid);
}

TEST(payload_from_a_file_descriptor)
{
    const char *dir = tt_tmpdir();
    pid_t pid = server_start(dir);
    BpNode *n;
    CHECK_OK(bp_node_attach(dir, &n));
    BpSAP sap;
    CHECK_OK(bp_node_open(n, "ipn:1.7", &sap));
    char path[4200];
    snprintf(path, sizeof path, "%s/data", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    CHECK(fd >= 0);
    size_t len = 3u << 20;
    uint8_t *buf = malloc(len + 4096);
    fill(buf, len + 4096, 77);
    CHECK(write(fd, buf, len + 4096) == (ssize_t)(len + 4096));
    BpBundleRef ref;
    CHECK_OK(bp_send_fd(sap, "ipn:1.7", fd, 4096, len, NULL, &ref));
    recv_expect(sap, buf + 4096, len, "ipn:1.7");
    /* a small payload from a descriptor arrives inline */
    CHECK_OK(bp_send_fd(sap, "ipn:1.7", fd, 10, 100, NULL, &ref));
    recv_expect(sap, buf + 10, 100, "ipn:1.7");
    /* the descriptor does not hold what is announced */
    CHECK_RC(bp_send_fd(sap, "ipn:1.7", fd, 4096, len + 1, NULL, &ref), -EINVAL);
    /* an asynchronous refusal is reported by bp_flush */
    CHECK_OK(bp_send_fd(sap, "ipn:1.7", fd, 4096, len + 1, NULL, NULL));
    CHECK_RC(bp_flush(sap, 10000), -EINVAL);
    CHECK_OK(bp_flush(sap, 10000));
    close(fd);
    free(buf);
    CHECK_OK(bp_close(sap));
    CHECK_OK(bp_node_detach(n));
    server_kill(pid);
}

TEST(endpoint_taken_is_ebusy)
{
    const char *dir = tt_tmpdir();
    pid_t pid = server_start(dir);
    BpNode *a, *b;
    CHECK_OK(bp_node_attach(dir, &a));
    CHECK_OK(bp_node_attach(dir, &b));
    BpSAP s1, s2;
    CHECK_OK(bp_node_open(a, "ipn:1.5", &s1));
    CHECK_RC(bp_node_open(b, "ipn:1.5", &s2), -EBUSY);
    CHECK(strstr(bp_errmsg(), "open by another application"));
    CHECK_RC(bp_node_open(a, "ipn:1.5", &s2), -EBUSY);
    CHECK_RC(bp_node_open(a, "ipn:9.5", &s2), -EINVAL);
    CHECK(strstr(bp_errmsg(), "does not belong to node 1"));
    CHECK_RC(bp_node_open(a, "ipn:x", &s2), -EINVAL);
    /* sending from an endpoint this application has not opened */
    BpSAP s3;
    CHECK_OK(bp_node_open(b, "ipn:1.6", &s3));
    CHECK_OK(bp_close(s1));
    CHECK_OK(bp_node_open(b, "ipn:1.5", &s2));
    /* a client that goes away gives its endpoints back */
    CHECK_OK(bp_node_open(a, "ipn:1.8", &s1));
    CHECK_OK(bp_node_detach(a));
    CHECK_OK(bp_node_open(b, "ipn:1.8", &s1));
    CHECK_OK(bp_node_detach(b));
    server_kill(pid);
}

static int readable(int fd, int timeout_ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int r = poll(&p, 1, timeout_ms);
    CHECK(r >= 0);
    return r > 0 && (p.revents & POLLIN);
}

/* Calls bp_receive(.., 0) while fd polls readable without a delivery
 * (answers ternd sent for other calls): it must return -EAGAIN at once, and
 * after a few such calls the descriptor must be quiet. */
#define settle(sap, fd) settle_at(__LINE__, sap, fd)
static void settle_at(int line, BpSAP sap, int fd)
{
    BpDelivery d;
    for (int i = 0; i < 8 && readable(fd, 0); i++)
        CHECK_RC(bp_receive(sap, &d, 0), -EAGAIN);
    CHECK_MSG(!readable(fd, 0),
              "line %d: bp_sap_fd stays readable with nothing to receive", line);
}

TEST(sap_fd_polls_readable_exactly_while_a_delivery_waits)
{
    const char *dir = tt_tmpdir();
    pid_t pid = server_start(dir);
    BpNode *n;
    CHECK_OK(bp_node_attach(dir, &n));
    BpSAP rx, tx;
    CHECK_OK(bp_node_open(n, "ipn:1.1", &rx));
    CHECK_OK(bp_node_open(n, "ipn:1.2", &tx));
    int fd = bp_sap_fd(rx);
    CHECK(fd >= 0);
    CHECK_EQ_INT(bp_sap_fd(rx), fd); /* one descriptor per endpoint */
    CHECK_RC(bp_sap_fd(NULL), -EINVAL);
    settle(rx, fd);
    CHECK(!readable(fd, 0));

    /* three bundles: readable until the third is taken */
    for (int i = 0; i < 3; i++)
        CHECK_OK(bp_send(tx, "ipn:1.1", "abc", 3, NULL, NULL));
    CHECK_OK(bp_flush(tx, 5000)); /* this call reads the socket: deliveries filed */
    for (int i = 0; i < 3; i++) {
        CHECK_MSG(readable(fd, 5000), "not readable with %d deliveries waiting", 3 - i);
        recv_expect(rx, (const uint8_t *)"abc", 3, "ipn:1.2");
    }
    settle(rx, fd);

    /* a delivery nobody has read from the socket yet wakes it too */
    CHECK_OK(bp_send(tx, "ipn:1.1", "late", 4, NULL, NULL));
    CHECK_MSG(readable(fd, 5000), "a delivery in the socket does not make it readable");
    BpDelivery d;
    int rc;
    for (int i = 0; i < 8 && (rc = bp_receive(rx, &d, 0)) == -EAGAIN; i++)
        CHECK(readable(fd, 5000));
    CHECK_OK(rc);
    CHECK_EQ_U64(d.len, 4);
    CHECK(!memcmp(d.payload, "late", 4));
    bp_release_delivery(&d);
    /* answered before the kill, else libtern rightly sends it again */
    CHECK_OK(bp_flush(tx, 5000));
    settle(rx, fd);

    /* the attachment lost: readable (the next bp_receive reattaches); the
     * same descriptor then serves the new connection */
    server_kill(pid);
    CHECK_MSG(readable(fd, 5000), "a lost attachment does not make it readable");
    pid = server_start(dir);
    CHECK_RC(bp_receive(rx, &d, 0), -EAGAIN);
    settle(rx, fd);
    CHECK_OK(bp_send(tx, "ipn:1.1", "again", 5, NULL, NULL));
    CHECK_OK(bp_flush(tx, 5000));
    CHECK(readable(fd, 5000));
    recv_expect(rx, (const uint8_t *)"again", 5, "ipn:1.2");
    settle(rx, fd);
    CHECK_OK(bp_close(tx));
    CHECK_OK(bp_close(rx));
    CHECK_OK(bp_node_detach(n));
    server_kill(pid);
}

TEST(client_reattaches_after_a_restart)
{
    const char *dir = tt_tmpdir();
    pid_t pid = server_start(dir);
    CHECK_OK(bp_attach(dir));
    CHECK_OK(bp_attach(dir)); /* a second reference */
    BpSAP sap;
    CHECK_OK(bp_open("ipn:1.1", &sap));
    CHECK_OK(bp_send(sap, "ipn:1.1", "one", 3, NULL, NULL));
    recv_expect(sap, (const uint8_t *)"one", 3, "ipn:1.1");

    server_kill(pid);
    pid = server_start(dir);
    BpBundleRef ref;
    CHECK_OK(bp_send(sap, "ipn:1.1", "two", 3, NULL, &ref));
    recv_expect(sap, (const uint8_t *)"two", 3, "ipn:1.1");

    /* unanswered sends are sent again to the next ternd */
    kill(pid, SIGSTOP);
    BpSendOpts nb = BP_SEND_OPTS_INIT;
    nb.flags = BP_SEND_NONBLOCK;
    char msg[16];
    for (int i = 0; i < 10; i++) {
        snprintf(msg, sizeof msg, "m%d", i);
        CHECK_OK(bp_send(sap, "ipn:1.1", msg, strlen(msg), &nb, NULL));
    }
    CHECK_EQ_INT(bp_node_unanswered(bp_node()), 10);
    server_kill(pid);
    pid = server_start(dir);
    CHECK_OK(bp_flush(sap, 20000));
    for (int i = 0; i < 10; i++) {
        snprintf(msg, sizeof msg, "m%d", i);
        recv_expect(sap, (const uint8_t *)msg, strlen(msg), "ipn:1.1");
    }
    /* a receive blocked across a restart carries on */
    server_kill(pid);
    pid = server_start(dir);
    BpDelivery d;
    CHECK_RC(bp_receive(sap, &d, 300), -ETIMEDOUT);
    CHECK_OK(bp_send(sap, "ipn:1.1", "three", 5, NULL, NULL));
    recv_expect(sap, (const uint8_t *)"three", 5, "ipn:1.1");
    CHECK_OK(bp_close(sap));
    bp_detach();
    CHECK(bp_node() != NULL);
    bp_detach();
    CHECK(bp_node() == NULL);
    server_kill(pid);
}

static void *interrupter(void *arg)
{
    struct timespec ts = {0, 200 * 1000000L};
    nanosleep(&ts, NULL);
    bp_interrupt(arg);
    return NULL;
}

TEST(receive_timeouts_and_interrupt)
{
    const char *dir = tt_tmpdir();
    pid_t pid = server_start(dir);
    setenv("TERN_NODE_DIR", dir, 1);
    CHECK_OK(bp_attach(NULL));
    BpSAP sap;
    CHECK_OK(bp_open("ipn:1.3", &sap));
    BpDelivery d;
    CHECK_RC(bp_receive(sap, &d, 0), -EAGAIN);
    CHECK_RC(bp_receive(sap, &d, 100), -ETIMEDOUT);
    pthread_t th;
    CHECK_OK(pthread_create(&th, NULL, interrupter, sap));
    CHECK_RC(bp_receive(sap, &d, -1), -EINTR);
    pthread_join(th, NULL);
    /* anonymous bundles go on the process-wide attachment */
    CHECK_OK(bp_send(NULL, "ipn:1.3", "anon", 4, NULL, NULL));
    recv_expect(sap, (const uint8_t *)"anon", 4, "dtn:none");
    CHECK_OK(bp_flush(NULL, 1000));
    CHECK_OK(bp_close(sap));
    bp_detach();
    server_kill(pid);
}

TEST(status_admin_and_stop)
{
    const char *dir = tt_tmpdir();
    pid_t pid = server_start(dir);
    BpNode *n;
    CHECK_OK(bp_node_attach(dir, &n));
    char out[8192];
    CHECK_OK(bp_node_status(n, out, sizeof out));
    /* the client asking is not counted: 'tern status' alone shows 0 */
    CHECK_MSG(strstr(out, "clients 0\n"), "%s", out);
    CHECK(strstr(out, "node:\nsunk 0"));
    BpNode *other;
    CHECK_OK(bp_node_attach(dir, &other));
    CHECK_OK(bp_node_status(n, out, sizeof out));
    CHECK_MSG(strstr(out, "clients 1\n"), "%s", out);
    bp_node_detach(other);
    CHECK_OK(bp_node_admin(n, "bpadmin", "l endpoint", out, sizeof out));
    CHECK_EQ_STR(out, "bpadmin did 'l endpoint'");
    CHECK_RC(bp_node_admin(n, "ipnadmin", "fail", out, sizeof out), TERN_ESYNTAX);
    CHECK_EQ_STR(out, "ipnadmin: no such command");
    CHECK_OK(bp_node_stop(n));
    int st;
    CHECK(waitpid(pid, &st, 0) == pid);
    CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "server status %d", st);
    bp_node_detach(n);
}

static int raw_connect(const char *dir)
{
    struct sockaddr_un sa;
    socklen_t sl;
    CHECK_OK(tern_proto_sockaddr(dir, &sa, &sl, NULL, 0));
    int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    CHECK(s >= 0);
    CHECK_OK(connect(s, (struct sockaddr *)&sa, sl));
    return s;
}

/* Waits until the server closes s. */
static void expect_dropped(int s)
{
    uint8_t b[256];
    struct timeval tv = {10, 0};
    setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ssize_t r;
    while ((r = recv(s, b, sizeof b, 0)) > 0)
        ;
    CHECK_MSG(r == 0, "the server did not drop the client (%zd, %s)", r, strerror(errno));
    close(s);
}

TEST(malformed_clients_are_dropped_others_go_on)
{
    const char *dir = tt_tmpdir();
    pid_t pid = server_start(dir);
    BpNode *n;
    CHECK_OK(bp_node_attach(dir, &n));
    BpSAP sap;
    CHECK_OK(bp_node_open(n, "ipn:1.1", &sap));
    /* garbage, twice: one log line, two counted */
    for (int i = 0; i < 2; i++) {
        int s = raw_connect(dir);
        CHECK(send(s, "garbage!", 8, 0) == 8);
        expect_dropped(s);
    }
    /* a well-formed header, a SEND before HELLO */
    uint8_t m[256];
    tern_msg_send ms = {
        .src = "ipn:1.1", .dest = "ipn:1.1", .payload = (const uint8_t *)"x", .len = 1};
    int len = tern_proto_enc_send(m, sizeof m, 1, &ms);
    CHECK(len > 0);
    int s = raw_connect(dir);
    CHECK(send(s, m, (size_t)len, 0) == len);
    expect_dropped(s);
    /* after HELLO: a body that lies about its type, and one cut short */
    s = raw_connect(dir);
    int hl = tern_proto_enc_hello(m, sizeof m, 1, TERN_PROTO_VERSION);
    CHECK(send(s, m, (size_t)hl, 0) == hl);
    CHECK(recv(s, m, sizeof m, 0) > 0);
    len = tern_proto_enc_send(m, sizeof m, 2, &ms);
    m[TERN_PROTO_HDR] = 0x88; /* an array of 8 */
    CHECK(send(s, m, (size_t)len, 0) == len);
    expect_dropped(s);
    /* the well-behaved client never noticed */
    CHECK_OK(bp_send(sap, "ipn:1.1", "fine", 4, NULL, NULL));
    recv_expect(sap, (const uint8_t *)"fine", 4, "ipn:1.1");
    CHECK_EQ_U64(status_value(n, "client_malformed"), 4);
    CHECK_EQ_U64(status_value(n, "clients"), 0); /* the dropped ones are gone */
    CHECK_OK(bp_node_detach(n));
    server_kill(pid);
    char path[4200], line[1024];
    snprintf(path, sizeof path, "%s/ternd.log", dir);
    FILE *f = fopen(path, "re");
    CHECK(f);
    int garbage = 0, total = 0;
    while (fgets(line, sizeof line, f)) {
        if (strstr(line, "malformed")) {
            total++;
            garbage += strstr(line, "shorter than its 16-byte header") != NULL;
        }
    }
    fclose(f);
    CHECK_EQ_INT(garbage, 1);
    CHECK_EQ_INT(total, 3);
}

/* The message handler on its own, as the fuzzer drives it. */
TEST(handler_takes_any_bytes)
{
    const char *dir = tt_tmpdir();
    tern_loop *loop;
    sdr *store;
    bp_agent *a;
    node_cserver *srv;
    char why[256];
    CHECK_OK(tern_loop_new(NULL, &loop));
    sdr_profile p = {.name = "h", .heap_size = 1u << 20, .mode = SDR_MEMORY};
    CHECK_OK(sdr_open(&p, &store, why, sizeof why));
    bp_agent_cfg cfg = {.node = 1, .store = store};
    tern_log *quiet; /* no file, no stderr: the causes are checked elsewhere */
    CHECK_OK(tern_log_open(&quiet, "t", NULL, TERN_LOG_ERROR, 0));
    CHECK_OK(bp_agent_new(loop, &cfg, NULL, NULL, &a));
    CHECK_OK(node_cserver_new(loop, a, quiet, dir, &srv));
    uint64_t seed = tt_seed();
    uint8_t msg[512];
    int sv[2];
    for (int round = 0; round < 2000; round++) {
        CHECK_OK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv));
        node_cserver_client *c;
        CHECK_OK(node_cserver__client_add(srv, sv[0], &c));
        int hl = tern_proto_enc_hello(msg, sizeof msg, 1, 1);
        CHECK_OK(node_cserver__input(srv, c, msg, (size_t)hl, -1));
        size_t len = 16 + (size_t)(seed % 200);
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        fill(msg, len, seed);
        tern_proto_hdr_pack(msg, (uint32_t)(1 + seed % 9), (uint32_t)(len - 16), 2);
        node_cserver__input(srv, c, msg, len, -1);
        close(sv[1]);
        tern_loop_run(loop, TERN_RUN_NOWAIT); /* the client sees its socket closed */
        tern_loop_run(loop, TERN_RUN_NOWAIT);
    }
    node_cserver_stats st;
    node_cserver_stats_get(srv, &st);
    CHECK_EQ_U64(st.clients, 0);
    CHECK(st.malformed > 1000);
    node_cserver_free(srv);
    tern_log_close(quiet);
    bp_agent_free(a);
    CHECK_OK(sdr_close(store));
    CHECK_OK(tern_loop_close(loop));
}

TEST(second_server_on_a_directory_is_refused)
{
    const char *dir = tt_tmpdir();
    pid_t pid = server_start(dir);
    tern_loop *loop;
    sdr *store;
    bp_agent *a;
    node_cserver *srv = NULL;
    char why[256];
    CHECK_OK(tern_loop_new(NULL, &loop));
    sdr_profile p = {.name = "h", .heap_size = 1u << 20, .mode = SDR_MEMORY};
    CHECK_OK(sdr_open(&p, &store, why, sizeof why));
    bp_agent_cfg cfg = {.node = 1, .store = store};
    CHECK_OK(bp_agent_new(loop, &cfg, NULL, NULL, &a));
    tern_log *lg;
    CHECK_OK(tern_log_open(&lg, "t", NULL, TERN_LOG_ERROR, 0));
    CHECK_RC(node_cserver_new(loop, a, lg, dir, &srv), -EADDRINUSE);
    tern_log_close(lg);
    bp_agent_free(a);
    CHECK_OK(sdr_close(store));
    CHECK_OK(tern_loop_close(loop));
    server_kill(pid);
}

/* Receives one bundle and says which of p[0..n) it is (-1: none). */
static int recv_which(BpSAP sap, uint8_t (*p)[300], int n)
{
    BpDelivery d;
    CHECK_OK(bp_receive(sap, &d, 20000));
    int which = -1;
    for (int j = 0; j < n && which < 0; j++)
        if (d.len == 300 && !memcmp(d.payload, p[j], 300))
            which = j;
    bp_release_delivery(&d);
    return which;
}

/* Bundles ternd pushed ahead of bp_receive are only lent: an application
 * that reads two of ten and closes (or is killed) leaves the other eight for
 * the next reader, in order; what it read is gone. */
TEST(unread_deliveries_stay_for_the_next_reader)
{
    const char *dir = tt_tmpdir();
    pid_t srv = server_start(dir);
    BpNode *n;
    CHECK_OK(bp_node_attach(dir, &n));
    BpSAP tx, rx;
    CHECK_OK(bp_node_open(n, "ipn:1.1", &tx));
    CHECK_OK(bp_node_open(n, "ipn:1.5", &rx));
    uint8_t p[10][300];
    for (int i = 0; i < 10; i++) {
        fill(p[i], sizeof p[i], (uint64_t)i + 40);
        CHECK_OK(bp_send(tx, "ipn:1.5", p[i], sizeof p[i], NULL, NULL));
    }
    CHECK_OK(bp_flush(tx, 10000));
    CHECK_EQ_INT(recv_which(rx, p, 10), 0);
    CHECK_EQ_INT(recv_which(rx, p, 10), 1);
    CHECK_OK(bp_close(rx));
    CHECK_EQ_U64(status_value(n, "taken"), 2);
    CHECK_EQ_U64(status_value(n, "stored"), 8);
    CHECK_OK(bp_node_open(n, "ipn:1.5", &rx));
    CHECK_EQ_INT(recv_which(rx, p, 10), 2);
    CHECK_OK(bp_node_detach(n));
    /* ternd has read the detach (acknowledging one) before anyone else comes */
    CHECK_OK(bp_node_attach(dir, &n));
    uint64_t left = 0;
    for (int k = 0; k < 200 && (left = status_value(n, "stored")) != 7; k++)
        usleep(10000);
    CHECK_EQ_U64(left, 7);
    CHECK_OK(bp_node_detach(n));
    /* a reader killed without closing: what it had not acknowledged stays */
    pid_t kid = fork();
    CHECK(kid >= 0);
    if (kid == 0) {
        BpNode *m;
        BpSAP r;
        BpDelivery d;
        if (bp_node_attach(dir, &m) || bp_node_open(m, "ipn:1.5", &r) ||
            bp_receive(r, &d, 20000))
            _exit(1);
        _exit(0); /* killed, in effect: nothing closed, nothing acknowledged */
    }
    int st;
    waitpid(kid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK_OK(bp_node_attach(dir, &n));
    CHECK_OK(bp_node_open(n, "ipn:1.5", &rx));
    for (int i = 3; i < 10; i++)
        CHECK_EQ_INT(recv_which(rx, p, 10), i);
    CHECK_OK(bp_close(rx)); /* acknowledges what it read */
    CHECK_EQ_U64(status_value(n, "stored"), 0);
    CHECK_OK(bp_node_detach(n));
    server_kill(srv);
}

/* ---- a full store, interrupts, restarts ---------------------------------- */

struct filler {
    BpSAP sap;
    atomic_int done;
    int rc;
    uint64_t sent;
    double t_end;
};

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Sends 1000-byte bundles to a node without a route (they stay in the store)
 * until a send fails. */
static void *fill_store(void *arg)
{
    struct filler *f = arg;
    uint8_t p[1000];
    BpSendOpts o = BP_SEND_OPTS_INIT;
    o.lifetime_s = 600;
    for (;;) {
        fill(p, sizeof p, f->sent);
        int rc = bp_send(f->sap, "ipn:3.1", p, sizeof p, &o, NULL);
        if (rc) {
            f->rc = rc;
            break;
        }
        f->sent++;
    }
    f->t_end = mono();
    atomic_store(&f->done, 1);
    return NULL;
}

TEST(full_store_blocked_send_is_told_and_interrupted)
{
    g_heap = 1u << 20;
    const char *dir = tt_tmpdir();
    pid_t pid = server_start(dir);
    BpNode *n, *other;
    CHECK_OK(bp_node_attach(dir, &n));
    CHECK_OK(bp_node_attach(dir, &other)); /* ternd reads it while it holds n */
    BpSAP sap;
    CHECK_OK(bp_node_open(n, "ipn:1.1", &sap));
    CHECK_EQ_INT(bp_node_store_full(n), 0);
    /* one that could never fit is refused at once, not held for ever */
    uint8_t *big = calloc(1, 2u << 20);
    CHECK(big != NULL);
    BpBundleRef ref;
    CHECK_RC(bp_send(sap, "ipn:3.1", big, 2u << 20, NULL, &ref), TERN_EFULL);
    free(big);
    CHECK_EQ_INT(bp_node_store_full(n), 0);
    struct filler f = {.sap = sap};
    pthread_t th;
    CHECK_OK(pthread_create(&th, NULL, fill_store, &f));
    /* ternd stops taking our sends, and says why */
    double t0 = mono();
    while (!bp_node_store_full(n) && mono() - t0 < 20) {
        struct timespec ts = {0, 20 * 1000000L};
        nanosleep(&ts, NULL);
    }
    CHECK_MSG(bp_node_store_full(n),
              "no store-full notice after %.1f s (%" PRIu64 " sent)", mono() - t0,
              f.sent);
    struct timespec ts = {0, 300 * 1000000L};
    nanosleep(&ts, NULL);
    CHECK_MSG(!atomic_load(&f.done), "the send returned (%d) with the store full", f.rc);
    CHECK_EQ_U64(status_value(other, "client_senders_waiting"), 1);
    char text[8192];
    CHECK_OK(bp_node_status(other, text, sizeof text));
    CHECK_MSG(strstr(text, "client_sends_held") != NULL, "%s", text);
    /* the blocked send wakes on bp_interrupt */
    BpSAP o2;
    CHECK_OK(bp_node_open(other, "ipn:1.2", &o2));
    CHECK_RC(bp_send_ready(o2, 0), 0); /* another client's window is its own */
    double ti = mono();
    bp_interrupt(sap);
    pthread_join(th, NULL);
    CHECK_RC(f.rc, -EINTR);
    CHECK_MSG(f.t_end - ti < 1.0, "bp_send took %.2f s to see the interrupt",
              f.t_end - ti);
    /* a full window waits in bp_send_ready, which times out and is interrupted too */
    CHECK_RC(bp_send_ready(sap, 200), -ETIMEDOUT);
    bp_interrupt(sap);
    CHECK_RC(bp_send_ready(sap, -1), -EINTR);
    CHECK_RC(bp_flush(sap, 100), -ETIMEDOUT);
    /* an interrupted endpoint closes without waiting for the node's answers */
    bp_interrupt(sap);
    double tc = mono();
    CHECK_RC(bp_close(sap), -EINTR);
    CHECK_OK(bp_node_detach(n));
    CHECK_MSG(mono() - tc < 3.0, "close and detach took %.2f s", mono() - tc);
    CHECK_OK(bp_close(o2));
    CHECK_OK(bp_node_detach(other));
    server_kill(pid);
}

TEST(deliveries_taken_before_a_restart_are_not_delivered_again)
{
    g_durable = 1;
    const char *dir = tt_tmpdir();
    pid_t pid = server_start(dir);
    BpNode *n;
    CHECK_OK(bp_node_attach(dir, &n));
    BpSAP sap;
    CHECK_OK(bp_node_open(n, "ipn:1.1", &sap));
    char msg[16];
    for (int i = 0; i < 20; i++) {
        snprintf(msg, sizeof msg, "d%02d", i);
        CHECK_OK(bp_send(sap, "ipn:1.1", msg, strlen(msg), NULL, NULL));
    }
    CHECK_OK(bp_flush(sap, 20000)); /* all 20 durable in the store */
    /* the application takes 12: libtern tells ternd lazily, so it has not yet */
    for (int i = 0; i < 12; i++) {
        snprintf(msg, sizeof msg, "d%02d", i);
        recv_expect(sap, (const uint8_t *)msg, strlen(msg), "ipn:1.1");
    }
    /* ternd dies before hearing it; the next one resumes all 20 from the store
     * and offers them again */
    server_kill(pid);
    pid = server_start(dir);
    for (int i = 12; i < 20; i++) {
        snprintf(msg, sizeof msg, "d%02d", i);
        recv_expect(sap, (const uint8_t *)msg, strlen(msg), "ipn:1.1");
    }
    BpDelivery d;
    int rc = bp_receive(sap, &d, 500);
    CHECK_MSG(rc == -ETIMEDOUT, "a bundle came again: %d '%.*s'", rc, rc ? 0 : (int)d.len,
              rc ? "" : (const char *)d.payload);
    CHECK_OK(bp_close(sap));
    CHECK_OK(bp_node_detach(n));
    /* the ones dropped as seen were acknowledged: nothing waits for a reader */
    CHECK_OK(bp_node_attach(dir, &n));
    CHECK_OK(bp_node_open(n, "ipn:1.1", &sap));
    rc = bp_receive(sap, &d, 500);
    CHECK_MSG(rc == -ETIMEDOUT, "left in the store: %d '%.*s'", rc, rc ? 0 : (int)d.len,
              rc ? "" : (const char *)d.payload);
    CHECK_EQ_U64(status_value(n, "stored"), 0);
    CHECK_OK(bp_close(sap));
    CHECK_OK(bp_node_detach(n));
    server_kill(pid);
}

TEST(reattach_window_is_configurable)
{
    const char *dir = tt_tmpdir();
    pid_t pid = server_start(dir);
    setenv("TERN_REATTACH_S", "0.5", 1);
    BpNode *n;
    CHECK_OK(bp_node_attach(dir, &n));
    BpSAP sap;
    CHECK_OK(bp_node_open(n, "ipn:1.1", &sap));
    server_kill(pid);
    BpDelivery d;
    double t0 = mono();
    CHECK_RC(bp_receive(sap, &d, 10000), -ECONNREFUSED);
    double took = mono() - t0;
    CHECK_MSG(took >= 0.4 && took < 3, "gave up after %.2f s, not 0.5", took);
    CHECK_MSG(strstr(bp_errmsg(), "TERN_REATTACH_S") != NULL, "%s", bp_errmsg());
    /* for ever, until interrupted */
    bp_node_set_reattach(n, -1);
    pthread_t th;
    CHECK_OK(pthread_create(&th, NULL, interrupter, sap));
    CHECK_RC(bp_receive(sap, &d, -1), -EINTR);
    pthread_join(th, NULL);
    /* and a node back within the window is reattached */
    bp_node_set_reattach(n, 20000);
    pid = server_start(dir);
    CHECK_OK(bp_send(sap, "ipn:1.1", "back", 4, NULL, NULL));
    recv_expect(sap, (const uint8_t *)"back", 4, "ipn:1.1");
    CHECK_OK(bp_close(sap));
    CHECK_OK(bp_node_detach(n));
    unsetenv("TERN_REATTACH_S");
    server_kill(pid);
}
