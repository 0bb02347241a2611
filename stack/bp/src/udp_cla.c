/* The UDP convergence layer (see bp_udp.h).
 *
 * Outbound: send() only records the bundle (the agent keeps its bytes until
 * the result), and the records of one loop iteration leave in one sendmmsg
 * per socket at the end of it, or as soon as a batch is full. A result is
 * reported for each datagram the kernel took (BP_XMIT_OK) or refused
 * (BP_XMIT_FAILED, and the duct's next send fails so the agent pauses it
 * instead of spinning). When the socket pushes back, the batch waits for
 * EPOLLOUT (EAGAIN) or a short timer (ENOBUFS: no event will come) and the
 * ducts that got -EAGAIN are told when they can send again.
 *
 * Inbound: one bound socket per induct, drained with recvmmsg a few batches
 * per wakeup, each datagram handed to bp_agent_receive. The kernel's count
 * of datagrams dropped at a full receive buffer (SO_MEMINFO) is checked at
 * most once a second and logged when it grows: it is the only trace such
 * losses leave.
 */
#include <errno.h>
#include <limits.h>
#include <linux/sock_diag.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bp_udp.h"
#include "tern/pace.h"

#define SUBSYS           "bp-udp"
#define TX_BATCH         64
#define RX_BATCH         32
#define RX_BUF           65536 /* above any UDP payload: truncation is impossible */
#define RX_ROUNDS        8
#define ENOBUFS_RETRY_NS 1000000ull
#define DROP_CHECK_NS    1000000000ull
#define RCVBUF_WANT      (64u << 20)
#define RCVBUF_WARN      (8u << 20)
#define SNDBUF_WANT      (8u << 20)

typedef struct uduct uduct;
typedef struct usock usock;

/* A bundle taken by send() and not yet given to the kernel. */
struct pend {
    uduct *d;
    const uint8_t *buf;
    size_t len;
    uint64_t xmit;
};

/* The outbound socket shared by the outducts of one address family. */
struct usock {
    bp_udp_cla *c;
    int fd, family;
    tern_io io;
    tern_timer retry;
    int blocked; /* 1: waiting for EPOLLOUT, 2: waiting after ENOBUFS */
    unsigned n;
    struct pend q[TX_BATCH];
    struct mmsghdr msg[TX_BATCH];
    struct iovec iov[TX_BATCH];
};

struct uduct {
    uduct *next, *prev;
    bp_udp_cla *c;
    bp_outduct *od;
    usock *s;
    struct sockaddr_storage addr;
    socklen_t alen;
    size_t max_dgram;
    bool waiting;      /* got -EAGAIN: owed a bp_outduct_ready */
    uint64_t cmd_rate; /* bits/s from "udpclo <rate>" (0: none) */
    tern_pace pace;    /* at the lower of it and the contact's rate */
    tern_timer pace_tm;
    int err; /* errno of a failed send, returned by the next send() */
    char name[96];
};

struct induct {
    bp_udp_cla *c;
    int fd;
    tern_io io;
    uint16_t port;
    uint64_t drops_seen, checked_ns;
    char name[128];
};

struct bp_udp_cla {
    bp_agent *a;
    tern_loop *loop;
    tern_log *lg;
    usock *out[2]; /* AF_INET, AF_INET6 */
    uduct *ducts;
    struct induct **in;
    size_t nin;
    struct mmsghdr *rmsg; /* receive batch, shared by the inducts */
    struct iovec *riov;
    uint8_t *rbuf;
    bool defer_pending;
    bp_udp_stats st;
};

/* ------------------------------------------------------------ addresses */

static int parse_port(const char *s, unsigned *port)
{
    if (!*s || strlen(s) > 5)
        return -1;
    unsigned v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        v = v * 10 + (unsigned)(*p - '0');
    }
    if (v > 65535)
        return -1;
    *port = v;
    return 0;
}

/* "<host>[:<port>]" or "[<IPv6>][:<port>]"; what names the command in the
 * message written to err. Port 0 only for inducts. */
static int parse_addr(const char *s, const char *what, bool induct, char *host,
                      size_t hostcap, unsigned *port, char *err, size_t errcap)
{
    const char *h = s, *ps = NULL;
    size_t hl;
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (!close) {
            snprintf(
                err, errcap,
                "%s: unterminated IPv6 literal in '%s' (expected [<address>]:<port>)",
                what, s);
            return TERN_ESYNTAX;
        }
        h = s + 1;
        hl = (size_t)(close - h);
        if (close[1] == ':')
            ps = close + 2;
        else if (close[1]) {
            snprintf(err, errcap, "%s: expected ':<port>' after ']' in '%s'", what, s);
            return TERN_ESYNTAX;
        }
    } else {
        const char *colon = strchr(s, ':');
        if (colon && strchr(colon + 1, ':')) {
            snprintf(err, errcap,
                     "%s: IPv6 address in '%s' must be in brackets, as in [::1]:%d", what,
                     s, BP_UDP_DEFAULT_PORT);
            return TERN_ESYNTAX;
        }
        hl = colon ? (size_t)(colon - s) : strlen(s);
        if (colon)
            ps = colon + 1;
    }
    if (hl == 0) {
        snprintf(err, errcap, "%s: missing host in '%s' (expected <host>[:<port>])", what,
                 s);
        return TERN_ESYNTAX;
    }
    unsigned pv = BP_UDP_DEFAULT_PORT;
    if (ps && (parse_port(ps, &pv) || (!induct && pv == 0))) {
        snprintf(err, errcap, "%s: bad port '%s' in '%s' (expected %s)", what, ps, s,
                 induct ? "0-65535" : "1-65535");
        return TERN_ESYNTAX;
    }
    for (size_t i = 0; i < hl; i++)
        if (h[i] == ' ' || h[i] == '\t') {
            snprintf(err, errcap, "%s: blank in address '%s' (expected <host>[:<port>])",
                     what, s);
            return TERN_ESYNTAX;
        }
    if (hl >= hostcap) {
        snprintf(err, errcap, "%s: host name too long in '%s'", what, s);
        return TERN_ESYNTAX;
    }
    memcpy(host, h, hl);
    host[hl] = '\0';
    *port = pv;
    return 0;
}

static int resolve(const char *host, unsigned port, bool passive,
                   struct sockaddr_storage *ss, socklen_t *len)
{
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_DGRAM;
    hints.ai_protocol = IPPROTO_UDP;
    hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
    char ps[8];
    snprintf(ps, sizeof ps, "%u", port);
    int rc = getaddrinfo(host, ps, &hints, &res);
    if (rc != 0 || !res) {
        if (res)
            freeaddrinfo(res);
        if (rc == EAI_SYSTEM && errno)
            return -errno;
        return TERN_ENOTFOUND;
    }
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    *len = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

static void clear_so_error(int fd)
{
    int e = 0;
    socklen_t l = sizeof e;
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &l);
}

/* Asks for a buffer of want bytes (beyond net.core.[rw]mem_max when
 * permitted); returns what the kernel granted for data. */
static size_t raise_buf(int fd, int force_opt, int opt, size_t want)
{
    int v = want > INT_MAX / 2 ? INT_MAX / 2 : (int)want;
    if (setsockopt(fd, SOL_SOCKET, force_opt, &v, sizeof v) != 0)
        setsockopt(fd, SOL_SOCKET, opt, &v, sizeof v); /* capped at the sysctl */
    int g = 0;
    socklen_t l = sizeof g;
    getsockopt(fd, SOL_SOCKET, opt, &g, &l);
    return g > 0 ? (size_t)g / 2 : 0; /* the kernel reports data + overhead */
}

/* Datagrams the kernel dropped at fd (receive buffer full, ...). */
static uint64_t kernel_drops(int fd)
{
#ifdef SO_MEMINFO
    uint32_t mi[SK_MEMINFO_VARS];
    socklen_t l = sizeof mi;
    memset(mi, 0, sizeof mi);
    if (getsockopt(fd, SOL_SOCKET, SO_MEMINFO, mi, &l) == 0 &&
        l > SK_MEMINFO_DROPS * sizeof mi[0])
        return mi[SK_MEMINFO_DROPS];
#else
    (void)fd;
#endif
    return 0;
}

/* ------------------------------------------------------------ sending */

static void wake_ducts(bp_udp_cla *c, usock *s)
{
    uduct *d = c->ducts;
    while (d && !s->blocked) {
        uduct *next = d->next;
        if (d->s == s && d->waiting) {
            d->waiting = false;
            bp_outduct_ready(d->od);
        }
        d = next;
    }
}

static void sock_watch(usock *s, unsigned events)
{
    if (!events) {
        tern_io_stop(&s->io);
        return;
    }
    int rc = tern_io_start(&s->io, events);
    if (rc)
        TERN_ERROR(s->c->lg, SUBSYS, "cannot watch the outduct socket: %s",
                   tern_strerror(rc));
}

static void retry_fire(tern_timer *t, void *arg);

/* Sends what s holds, until it is empty or the socket pushes back. */
static void sock_flush(usock *s)
{
    bp_udp_cla *c = s->c;
    while (s->n && !s->blocked) {
        unsigned cnt = s->n;
        for (unsigned i = 0; i < cnt; i++) {
            s->iov[i].iov_base = (void *)s->q[i].buf;
            s->iov[i].iov_len = s->q[i].len;
            struct msghdr *m = &s->msg[i].msg_hdr;
            memset(m, 0, sizeof *m);
            m->msg_name = &s->q[i].d->addr;
            m->msg_namelen = s->q[i].d->alen;
            m->msg_iov = &s->iov[i];
            m->msg_iovlen = 1;
        }
        int r;
        do
            r = sendmmsg(s->fd, s->msg, cnt, MSG_DONTWAIT);
        while (r < 0 && errno == EINTR);
        c->st.send_calls++;
        int fail = 0;
        if (r < 0) {
            int e = errno;
            if (e == EAGAIN || e == EWOULDBLOCK) {
                c->st.would_block++;
                s->blocked = 1;
                sock_watch(s, TERN_IO_WRITE);
                return;
            }
            if (e == ENOBUFS) { /* no EPOLLOUT will tell when it passes */
                c->st.would_block++;
                s->blocked = 2;
                tern_timer_start(&s->retry, retry_fire, s, ENOBUFS_RETRY_NS, 0);
                return;
            }
            /* The first datagram cannot go; the others are tried again. */
            fail = e;
            r = 1;
            c->st.send_errors++;
            if (c->st.send_errors == 1 || tern_log_enabled(c->lg, TERN_LOG_DEBUG))
                TERN_WARN(c->lg, SUBSYS,
                          "send of a %zu-byte bundle to %s failed: %s (forwarded again; "
                          "further failures are counted)",
                          s->q[0].len, s->q[0].d->name, strerror(e));
        }
        /* Results may re-enter send() (a failed bundle is dispatched
         * again), so the batch leaves the queue before they are reported. */
        struct pend done[TX_BATCH];
        memcpy(done, s->q, (size_t)r * sizeof *done);
        memmove(s->q, s->q + r, (s->n - (unsigned)r) * sizeof *s->q);
        s->n -= (unsigned)r;
        for (int i = 0; i < r; i++) {
            if (fail) {
                done[i].d->err = fail;
            } else {
                c->st.dgrams_out++;
                c->st.bytes_out += done[i].len;
            }
            bp_outduct_result(done[i].d->od, done[i].xmit,
                              fail ? BP_XMIT_FAILED : BP_XMIT_OK);
        }
    }
}

static void retry_fire(tern_timer *t, void *arg)
{
    (void)t;
    usock *s = arg;
    s->blocked = 0;
    sock_flush(s);
    wake_ducts(s->c, s);
}

static void on_sock_io(tern_io *w, int fd, unsigned events, void *arg)
{
    (void)w;
    usock *s = arg;
    if (events & TERN_IO_ERROR)
        clear_so_error(fd);
    if (s->blocked == 1 && (events & TERN_IO_WRITE)) {
        s->blocked = 0;
        sock_watch(s, 0);
        sock_flush(s);
        wake_ducts(s->c, s);
    }
}

static void defer_cb(tern_loop *loop, void *arg)
{
    (void)loop;
    bp_udp_cla *c = arg;
    c->defer_pending = false;
    for (int i = 0; i < 2; i++)
        if (c->out[i] && !c->out[i]->blocked) {
            sock_flush(c->out[i]);
            wake_ducts(c, c->out[i]);
        }
}

static int sock_get(bp_udp_cla *c, int family, usock **out)
{
    int k = family == AF_INET6 ? 1 : 0;
    if (c->out[k]) {
        *out = c->out[k];
        return 0;
    }
    usock *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    s->c = c;
    s->family = family;
    s->fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_UDP);
    if (s->fd < 0) {
        int rc = -errno;
        free(s);
        return rc;
    }
    /* A small send buffer costs only pushback (EAGAIN), never a loss, so
     * no warning when the kernel grants less. */
    raise_buf(s->fd, SO_SNDBUFFORCE, SO_SNDBUF, SNDBUF_WANT);
    if (family == AF_INET) { /* UDP is the CLA of broadcast links */
        int on = 1;
        setsockopt(s->fd, SOL_SOCKET, SO_BROADCAST, &on, sizeof on);
    }
    tern_timer_init(c->loop, &s->retry);
    int rc = tern_io_init(c->loop, &s->io, s->fd, on_sock_io, s);
    if (rc) {
        close(s->fd);
        free(s);
        return rc;
    }
    c->out[k] = s;
    *out = s;
    return 0;
}

static void sock_free(usock *s)
{
    if (!s)
        return;
    tern_io_stop(&s->io);
    tern_timer_stop(&s->retry);
    close(s->fd);
    free(s);
}

/* "udpclo [<rate>]": ION's command for the outduct. */
static int check_cmd(bp_udp_cla *c, const char *name, const char *cmd, uint64_t *rate)
{
    char buf[256], *w[3];
    size_t n = strlen(cmd);
    if (n >= sizeof buf)
        goto bad;
    memcpy(buf, cmd, n + 1);
    int k = 0;
    char *save = NULL;
    for (char *p = strtok_r(buf, " \t\r\n", &save); p;
         p = strtok_r(NULL, " \t\r\n", &save)) {
        if (k == 3)
            goto bad;
        w[k++] = p;
    }
    if (k == 0)
        return 0;
    if (strcmp(w[0], "udpclo") != 0 || k > 2)
        goto bad;
    if (k == 2) {
        size_t nd = strlen(w[1]);
        if (!nd || nd > 19 || strspn(w[1], "0123456789") != nd)
            goto bad;
        *rate = strtoull(w[1], NULL, 10);
    }
    return 0;
bad:
    TERN_ERROR(c->lg, SUBSYS,
               "outduct udp/%s: expected 'udpclo [<rate bits/s>]', got '%s'", name, cmd);
    return TERN_ESYNTAX;
}

static int open_duct(void *cla, bp_outduct *od, const char *name, const char *cmd,
                     void **duct)
{
    bp_udp_cla *c = cla;
    char host[256], err[320];
    unsigned port;
    int rc =
        parse_addr(name, "outduct udp", false, host, sizeof host, &port, err, sizeof err);
    if (rc) {
        TERN_ERROR(c->lg, SUBSYS, "%s", err);
        return rc;
    }
    uint64_t rate = 0;
    if ((rc = check_cmd(c, name, cmd, &rate)))
        return rc;
    uduct *d = calloc(1, sizeof *d);
    if (!d)
        return -ENOMEM;
    d->cmd_rate = rate;
    rc = resolve(host, port, false, &d->addr, &d->alen);
    if (rc) {
        TERN_ERROR(c->lg, SUBSYS, "outduct udp/%s: cannot resolve '%s': %s", name, host,
                   rc == TERN_ENOTFOUND ? "no such host" : tern_strerror(rc));
        free(d);
        return rc;
    }
    if ((rc = sock_get(c, d->addr.ss_family, &d->s))) {
        TERN_ERROR(c->lg, SUBSYS, "outduct udp/%s: cannot open a socket: %s", name,
                   tern_strerror(rc));
        free(d);
        return rc;
    }
    d->c = c;
    d->od = od;
    tern_timer_init(c->loop, &d->pace_tm);
    d->max_dgram = BP_UDP_MAX_DGRAM4;
    if (d->addr.ss_family == AF_INET6 &&
        !IN6_IS_ADDR_V4MAPPED(&((struct sockaddr_in6 *)&d->addr)->sin6_addr))
        d->max_dgram = BP_UDP_MAX_DGRAM6; /* a v4-mapped peer is reached over IPv4 */
    snprintf(d->name, sizeof d->name, "%s", name);
    d->next = c->ducts;
    if (c->ducts)
        c->ducts->prev = d;
    c->ducts = d;
    bp_outduct_set_max_payload(od, BP_UDP_MAX_PAYLOAD);
    char what[160];
    snprintf(what, sizeof what, "the %zu-byte UDP datagram limit to %s", d->max_dgram,
             name);
    bp_outduct_set_max_bundle(od, d->max_dgram, what);
    *duct = d;
    return 0;
}

static void close_duct(void *cla, void *duct)
{
    bp_udp_cla *c = cla;
    uduct *d = duct;
    usock *s = d->s;
    /* Its bundles not yet sent are abandoned: the agent takes them back. */
    unsigned k = 0;
    for (unsigned i = 0; i < s->n; i++)
        if (s->q[i].d != d)
            s->q[k++] = s->q[i];
    s->n = k;
    tern_timer_stop(&d->pace_tm);
    if (d->prev)
        d->prev->next = d->next;
    else
        c->ducts = d->next;
    if (d->next)
        d->next->prev = d->prev;
    free(d);
}

static void pace_fire(tern_timer *t, void *arg)
{
    (void)t;
    uduct *d = arg;
    if (d->waiting) {
        d->waiting = false;
        bp_outduct_ready(d->od);
    }
}

/* One datagram per bundle, so the duct is paced here: at the lower of the
 * udpclo rate and the rate of the contact in effect (the outduct's gate), in
 * bursts a receiver with Linux's default socket buffer holds (ION's udpcli
 * keeps the default; the agent's gate alone lets an idle duct send 100 ms of
 * the contact at once). True if the bundle must wait: the duct is told
 * when it may send. */
static bool pace_wait(uduct *d)
{
    uint64_t crate = 0;
    if (bp_outduct_gate(d->od, &crate) != BP_GATE_OPEN)
        crate = 0;
    uint64_t r =
        tern_pace_min_rate(d->cmd_rate, crate > UINT64_MAX / 8 ? UINT64_MAX : crate * 8);
    uint64_t now = tern_loop_now(d->c->loop);
    if (r != d->pace.rate_bps)
        tern_pace_set(&d->pace, r, now);
    uint64_t ns = tern_pace_wait_ns(&d->pace, now);
    if (!ns)
        return false;
    d->c->st.rate_waits++;
    d->waiting = true;
    if (!tern_timer_is_active(&d->pace_tm))
        tern_timer_start(&d->pace_tm, pace_fire, d, ns, 0);
    return true;
}

static int send_bundle(void *cla, void *duct, const uint8_t *bundle, size_t len,
                       uint64_t xmit)
{
    bp_udp_cla *c = cla;
    uduct *d = duct;
    usock *s = d->s;
    if (len > d->max_dgram) {
        c->st.too_big++;
        TERN_WARN(
            c->lg, SUBSYS,
            "bundle of %zu bytes does not fit a UDP datagram to %s (limit %zu "
            "bytes): refused, and deleted (let it be fragmented, or use ltp or tcp)",
            len, d->name, d->max_dgram);
        return -EMSGSIZE;
    }
    if (d->err) { /* the last send failed: the agent pauses the duct */
        int e = d->err;
        d->err = 0;
        return -e;
    }
    if (pace_wait(d))
        return -EAGAIN;
    if (s->n == TX_BATCH && !s->blocked)
        sock_flush(s);
    if (s->n == TX_BATCH) {
        d->waiting = true;
        return -EAGAIN;
    }
    s->q[s->n++] = (struct pend){.d = d, .buf = bundle, .len = len, .xmit = xmit};
    tern_pace_spend(&d->pace, len);
    if (!c->defer_pending && tern_loop_defer(c->loop, defer_cb, c) == 0)
        c->defer_pending = true;
    return 0;
}

static const bp_cla_ops udp_ops = {
    .protocol = "udp",
    .outduct_open = open_duct,
    .outduct_close = close_duct,
    .send = send_bundle,
};

/* ------------------------------------------------------------ receiving */

static void check_drops(bp_udp_cla *c, struct induct *in)
{
    uint64_t now = tern_loop_now(c->loop);
    if (in->checked_ns && now - in->checked_ns < DROP_CHECK_NS)
        return;
    in->checked_ns = now ? now : 1;
    uint64_t d = kernel_drops(in->fd);
    if (d > in->drops_seen) {
        TERN_WARN(c->lg, SUBSYS,
                  "induct %s: the kernel dropped %llu datagrams (%llu in all): its "
                  "receive buffer was full; raise net.core.rmem_max or run with "
                  "CAP_NET_ADMIN",
                  in->name, (unsigned long long)(d - in->drops_seen),
                  (unsigned long long)d);
        in->drops_seen = d;
    }
}

static void on_induct_io(tern_io *w, int fd, unsigned events, void *arg)
{
    (void)w;
    struct induct *in = arg;
    bp_udp_cla *c = in->c;
    if (events & TERN_IO_ERROR)
        clear_so_error(fd);
    if (!(events & (TERN_IO_READ | TERN_IO_ERROR)))
        return;
    for (int round = 0; round < RX_ROUNDS; round++) {
        int n;
        do
            n = recvmmsg(fd, c->rmsg, RX_BATCH, MSG_DONTWAIT, NULL);
        while (n < 0 && errno == EINTR);
        c->st.recv_calls++;
        if (n < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK) {
                c->st.recv_errors++;
                clear_so_error(fd);
            }
            break;
        }
        for (int i = 0; i < n; i++) {
            struct mmsghdr *m = &c->rmsg[i];
            if (m->msg_hdr.msg_flags & MSG_TRUNC) {
                c->st.truncated++;
                continue;
            }
            c->st.dgrams_in++;
            c->st.bytes_in += m->msg_len;
            if (!m->msg_len) {
                c->st.empty_in++;
                continue;
            }
            int rc = bp_agent_receive(c->a, c->rbuf + (size_t)i * RX_BUF, m->msg_len);
            if (rc > 0) {
                c->st.bundles_in += (uint64_t)rc;
            } else {
                c->st.refused_in++;
                if (c->st.refused_in == 1 && (rc == TERN_EFULL || rc == -ENOMEM))
                    TERN_WARN(c->lg, SUBSYS,
                              "induct %s: bundle of %u bytes lost: %s (UDP cannot ask "
                              "the sender to keep it; further losses are counted)",
                              in->name, m->msg_len, tern_strerror(rc));
            }
        }
        if (n < RX_BATCH)
            break;
    }
    check_drops(c, in);
}

static int rx_buffers(bp_udp_cla *c)
{
    if (c->rbuf)
        return 0;
    c->rmsg = calloc(RX_BATCH, sizeof *c->rmsg);
    c->riov = calloc(RX_BATCH, sizeof *c->riov);
    c->rbuf = malloc((size_t)RX_BATCH * RX_BUF);
    if (!c->rmsg || !c->riov || !c->rbuf) {
        free(c->rmsg);
        free(c->riov);
        free(c->rbuf);
        c->rmsg = NULL;
        c->riov = NULL;
        c->rbuf = NULL;
        return -ENOMEM;
    }
    for (size_t i = 0; i < RX_BATCH; i++) {
        c->riov[i].iov_base = c->rbuf + i * RX_BUF;
        c->riov[i].iov_len = RX_BUF;
        c->rmsg[i].msg_hdr.msg_iov = &c->riov[i];
        c->rmsg[i].msg_hdr.msg_iovlen = 1;
    }
    return 0;
}

TERN_API int bp_udp_cla_induct(bp_udp_cla *c, const char *addr, uint16_t *bound_port)
{
    if (!c || !addr)
        return -EINVAL;
    const char *s = addr;
    while (*s == ' ' || *s == '\t')
        s++;
    if (strncmp(s, "udpcli", 6) == 0 && (s[6] == ' ' || s[6] == '\t')) {
        s += 6; /* the whole command, "udpcli <host>[:<port>]" */
        while (*s == ' ' || *s == '\t')
            s++;
    }
    char host[256], err[320], word[128];
    size_t wl = strcspn(s, " \t\r\n");
    if (s[wl + strspn(s + wl, " \t\r\n")] || wl >= sizeof word) {
        TERN_ERROR(c->lg, SUBSYS, "induct udp: expected '<host>[:<port>]', got '%s'",
                   addr);
        return TERN_ESYNTAX;
    }
    memcpy(word, s, wl);
    word[wl] = '\0';
    unsigned port;
    int rc =
        parse_addr(word, "induct udp", true, host, sizeof host, &port, err, sizeof err);
    if (rc) {
        TERN_ERROR(c->lg, SUBSYS, "%s", err);
        return rc;
    }
    struct sockaddr_storage ss;
    socklen_t sl;
    if ((rc = resolve(host, port, true, &ss, &sl))) {
        TERN_ERROR(c->lg, SUBSYS, "induct udp %s: cannot resolve '%s': %s", word, host,
                   rc == TERN_ENOTFOUND ? "no such host" : tern_strerror(rc));
        return rc;
    }
    if ((rc = rx_buffers(c)))
        return rc;
    struct induct **v = realloc(c->in, (c->nin + 1) * sizeof *v);
    if (!v)
        return -ENOMEM;
    c->in = v;
    struct induct *in = calloc(1, sizeof *in);
    if (!in)
        return -ENOMEM;
    in->c = c;
    snprintf(in->name, sizeof in->name, "%s", word);
    in->fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_UDP);
    if (in->fd < 0) {
        rc = -errno;
        goto fail_free;
    }
    if (ss.ss_family == AF_INET6) {
        int off = 0; /* "[::]" also takes IPv4 peers (v4-mapped) */
        setsockopt(in->fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
    }
    if (bind(in->fd, (struct sockaddr *)&ss, sl) != 0) {
        rc = -errno;
        TERN_ERROR(c->lg, SUBSYS, "induct udp %s: cannot bind: %s", word,
                   strerror(errno));
        goto fail_close;
    }
    struct sockaddr_storage b;
    socklen_t bl = sizeof b;
    if (getsockname(in->fd, (struct sockaddr *)&b, &bl) != 0) {
        rc = -errno;
        goto fail_close;
    }
    in->port = ntohs(b.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&b)->sin6_port
                                             : ((struct sockaddr_in *)&b)->sin_port);
    size_t got = raise_buf(in->fd, SO_RCVBUFFORCE, SO_RCVBUF, RCVBUF_WANT);
    if (got < RCVBUF_WARN)
        TERN_WARN(c->lg, SUBSYS,
                  "induct udp %s: receive buffer is only %zu bytes (asked for %u): "
                  "bundles will be lost in bursts; raise net.core.rmem_max (sysctl -w "
                  "net.core.rmem_max=%u) or run with CAP_NET_ADMIN",
                  word, got, RCVBUF_WANT, RCVBUF_WANT);
    in->drops_seen = kernel_drops(in->fd);
    if ((rc = tern_io_init(c->loop, &in->io, in->fd, on_induct_io, in)))
        goto fail_close;
    if ((rc = tern_io_start(&in->io, TERN_IO_READ)))
        goto fail_close;
    c->in[c->nin++] = in;
    TERN_INFO(c->lg, SUBSYS, "udpcli bound to %s port %u (receive buffer %zu bytes)",
              host, in->port, got);
    if (bound_port)
        *bound_port = in->port;
    return 0;
fail_close:
    close(in->fd);
fail_free:
    free(in);
    return rc;
}

/* ---------------------------------------------------------------- life */

TERN_API int bp_udp_cla_new(bp_agent *a, tern_loop *loop, tern_log *lg, bp_udp_cla **out)
{
    if (!a || !loop || !out)
        return -EINVAL;
    bp_udp_cla *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    c->a = a;
    c->loop = loop;
    c->lg = lg;
    int rc = bp_cla_register(a, &udp_ops, c);
    if (rc) {
        free(c);
        return rc;
    }
    *out = c;
    return 0;
}

TERN_API void bp_udp_cla_stats(const bp_udp_cla *c, bp_udp_stats *st)
{
    *st = c->st;
    st->kernel_drops = 0;
    for (size_t i = 0; i < c->nin; i++)
        st->kernel_drops += kernel_drops(c->in[i]->fd);
}

TERN_API void bp_udp_cla_free(bp_udp_cla *c)
{
    if (!c)
        return;
    if (c->defer_pending)
        tern_loop_defer_cancel(c->loop, defer_cb, c);
    for (size_t i = 0; i < c->nin; i++) {
        tern_io_stop(&c->in[i]->io);
        close(c->in[i]->fd);
        free(c->in[i]);
    }
    free(c->in);
    while (c->ducts) { /* only if the agent outlives the adapter (misuse) */
        uduct *d = c->ducts;
        c->ducts = d->next;
        free(d);
    }
    sock_free(c->out[0]);
    sock_free(c->out[1]);
    free(c->rmsg);
    free(c->riov);
    free(c->rbuf);
    free(c);
}
