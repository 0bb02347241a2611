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
 *
 * udpm (bp_udpm_cla_new) is the same adapter in another mode: each outduct
 * has a socket of its own (multicast TTL, interface and loop are socket
 * options), each datagram's source is read so that our own looped-back
 * datagrams are recognised, and the primary block's destination decides
 * whether a datagram is handed to the agent at all.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <limits.h>
#include <linux/sock_diag.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bp_udp.h"
#include "tern/cbor.h"
#include "tern/pace.h"

#define SUBSYS(c)        ((c)->mcast ? "bp-udpm" : "bp-udp")
#define TX_BATCH         64
#define RX_BATCH         32
#define RX_BUF           65536 /* above any UDP payload: truncation is impossible */
#define RX_ROUNDS        8
#define ENOBUFS_RETRY_NS 1000000ull
#define DROP_CHECK_NS    1000000000ull
#define RCVBUF_WANT      (64u << 20)
#define RCVBUF_WARN      (8u << 20)
#define SNDBUF_WANT      (8u << 20)
#define LADDR_REFRESH_NS 1000000000ull
#define UDPM_DEFAULT_TTL 1

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
    int blocked;              /* 1: waiting for EPOLLOUT, 2: waiting after ENOBUFS */
    struct sockaddr_in local; /* udpm: the address and port it sends from */
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

/* A udpm duct's options (its name and its udpmclo/udpmcli command). */
struct mopts {
    struct sockaddr_in addr;
    uint64_t rate;
    int ttl, loop;
    struct in_addr ifaddr; /* INADDR_ANY: none given */
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
    bool mcast;                /* udpm: see the top of the file */
    struct sockaddr_in *rname; /* udpm: the sources of the receive batch */
    struct in_addr *laddr;     /* udpm: this host's IPv4 addresses, cached */
    size_t nladdr;
    uint64_t laddr_ns;                 /* when they were read (0: never) */
    char dtn_name[BP_DTN_SSP_MAX + 1]; /* udpm: "//name" or "" */
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
        TERN_ERROR(s->c->lg, SUBSYS(s->c), "cannot watch the outduct socket: %s",
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
                TERN_WARN(c->lg, SUBSYS(c),
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
    if (c->mcast) { /* a socket per duct */
        for (uduct *d = c->ducts, *next; d; d = next) {
            next = d->next;
            if (d->s->n && !d->s->blocked) {
                sock_flush(d->s);
                wake_ducts(c, d->s);
            }
        }
        return;
    }
    for (int i = 0; i < 2; i++)
        if (c->out[i] && !c->out[i]->blocked) {
            sock_flush(c->out[i]);
            wake_ducts(c, c->out[i]);
        }
}

/* A new outbound socket of family (not yet watched by the loop). */
static int sock_make(bp_udp_cla *c, int family, usock **out)
{
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
    *out = s;
    return 0;
}

/* The socket the udp outducts of family share. */
static int sock_get(bp_udp_cla *c, int family, usock **out)
{
    int k = family == AF_INET6 ? 1 : 0;
    if (!c->out[k]) {
        int rc = sock_make(c, family, &c->out[k]);
        if (rc)
            return rc;
    }
    *out = c->out[k];
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
    TERN_ERROR(c->lg, SUBSYS(c),
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
        TERN_ERROR(c->lg, SUBSYS(c), "%s", err);
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
        TERN_ERROR(c->lg, SUBSYS(c), "outduct udp/%s: cannot resolve '%s': %s", name,
                   host, rc == TERN_ENOTFOUND ? "no such host" : tern_strerror(rc));
        free(d);
        return rc;
    }
    if ((rc = sock_get(c, d->addr.ss_family, &d->s))) {
        TERN_ERROR(c->lg, SUBSYS(c), "outduct udp/%s: cannot open a socket: %s", name,
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
    if (c->mcast)
        sock_free(s);
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
            c->lg, SUBSYS(c),
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

/* ------------------------------------------------------------ udpm ducts */

static bool is_multicast(struct in_addr a)
{
    return IN_MULTICAST(ntohl(a.s_addr));
}

static int parse_v4(const char *s, struct in_addr *a)
{
    return inet_pton(AF_INET, s, a) == 1 ? 0 : -1;
}

#define UDPMCLO_FORM                                                                     \
    "'udpmclo [<rate bits/s>] [ttl=<0-255>] [if=<IPv4 address>] [loop=0|1]'"
#define UDPMCLI_FORM "'udpmcli [if=<IPv4 address>]'"

/* A udpm duct's name, "<IPv4>[:<port>]", and command (see bp_udp.h) into
 * *o; why gets what was expected. */
static int udpm_parse(bool out, const char *name, const char *cmd, struct mopts *o,
                      char *why, size_t cap)
{
    const char *what = out ? "outduct udpm" : "induct udpm";
    memset(o, 0, sizeof *o);
    o->ttl = -1;
    o->loop = -1;
    char host[64], err[320];
    unsigned port;
    if (!name)
        name = "";
    int rc = parse_addr(name, what, !out, host, sizeof host, &port, err, sizeof err);
    if (rc) {
        snprintf(why, cap, "%s", err);
        return rc;
    }
    o->addr.sin_family = AF_INET;
    o->addr.sin_port = htons((uint16_t)port);
    if (name[0] == '[' || parse_v4(host, &o->addr.sin_addr)) {
        snprintf(why, cap,
                 "%s: '%s' is not an IPv4 address (expected <multicast group or "
                 "broadcast address>:<port>, e.g. 239.1.2.3:%d)",
                 what, host, BP_UDP_DEFAULT_PORT);
        return TERN_ESYNTAX;
    }
    char buf[256];
    const char *form = out ? UDPMCLO_FORM : UDPMCLI_FORM;
    if (!cmd)
        cmd = "";
    if (strlen(cmd) >= sizeof buf) {
        snprintf(why, cap, "%s %s: command too long; expected %s", what, name, form);
        return TERN_ESYNTAX;
    }
    memcpy(buf, cmd, strlen(cmd) + 1);
    char *save = NULL;
    int k = 0;
    bool have_rate = false, have_if = false;
    for (char *w = strtok_r(buf, " \t\r\n", &save); w;
         w = strtok_r(NULL, " \t\r\n", &save), k++) {
        const char *bad = NULL;
        if (k == 0) {
            if (strcmp(w, out ? "udpmclo" : "udpmcli") != 0)
                bad = "the command's name";
        } else if (strncmp(w, "if=", 3) == 0) {
            if (have_if || parse_v4(w + 3, &o->ifaddr))
                bad = "if=";
            have_if = true;
        } else if (out && strncmp(w, "ttl=", 4) == 0) {
            size_t nd = strlen(w + 4);
            if (o->ttl >= 0 || !nd || nd > 3 || strspn(w + 4, "0123456789") != nd ||
                atoi(w + 4) > 255)
                bad = "ttl=";
            else
                o->ttl = atoi(w + 4);
        } else if (out && strncmp(w, "loop=", 5) == 0) {
            if (o->loop >= 0 || (strcmp(w + 5, "0") && strcmp(w + 5, "1")))
                bad = "loop=";
            else
                o->loop = w[5] == '1';
        } else if (out && w[0] >= '0' && w[0] <= '9') {
            size_t nd = strlen(w);
            if (have_rate || nd > 19 || strspn(w, "0123456789") != nd)
                bad = "the rate";
            else
                o->rate = strtoull(w, NULL, 10);
            have_rate = true;
        } else {
            bad = "unknown option";
        }
        if (bad) {
            snprintf(why, cap, "%s %s: %s%s '%s' in '%s'; expected %s", what, name,
                     strcmp(bad, "unknown option") ? "bad " : "", bad, w, cmd, form);
            return TERN_ESYNTAX;
        }
    }
    if (o->ttl < 0)
        o->ttl = UDPM_DEFAULT_TTL;
    if (o->loop < 0)
        o->loop = 1;
    return 0;
}

TERN_API int bp_udpm_check(bool outduct, const char *name, const char *cmd, char *why,
                           size_t cap)
{
    struct mopts o;
    char tmp[2];
    if (!why || !cap) {
        why = tmp;
        cap = sizeof tmp;
    }
    why[0] = '\0';
    return udpm_parse(outduct, name, cmd, &o, why, cap);
}

/* Whether a is the broadcast address of one of this host's interfaces. */
static bool is_local_broadcast(struct in_addr a)
{
    /* lo has no broadcast flag, yet 127.255.255.255 reaches every socket of
     * the host: the loopback medium of several nodes on one host. */
    if (a.s_addr == htonl(INADDR_BROADCAST) || a.s_addr == htonl(0x7fffffffu))
        return true;
    struct ifaddrs *ifs = NULL;
    if (getifaddrs(&ifs) != 0)
        return false;
    bool found = false;
    for (struct ifaddrs *i = ifs; i && !found; i = i->ifa_next)
        if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
            (i->ifa_flags & IFF_BROADCAST) && i->ifa_broadaddr)
            found = ((struct sockaddr_in *)i->ifa_broadaddr)->sin_addr.s_addr == a.s_addr;
    freeifaddrs(ifs);
    return found;
}

/* The socket of a udpm outduct, with its options; bound now, so that its
 * port (which our own looped-back datagrams carry) is known. */
static int mduct_sock(bp_udp_cla *c, const char *name, const struct mopts *o, usock **out)
{
    usock *s;
    int rc = sock_make(c, AF_INET, &s);
    if (rc)
        return rc;
    bool mc = is_multicast(o->addr.sin_addr);
    unsigned char ttl = (unsigned char)o->ttl, lp = (unsigned char)o->loop;
    int on = 1;
    const char *what = NULL;
    if (mc) {
        if (setsockopt(s->fd, IPPROTO_IP, IP_MULTICAST_TTL, &ttl, sizeof ttl))
            what = "IP_MULTICAST_TTL";
        else if (setsockopt(s->fd, IPPROTO_IP, IP_MULTICAST_LOOP, &lp, sizeof lp))
            what = "IP_MULTICAST_LOOP";
        else if (o->ifaddr.s_addr != htonl(INADDR_ANY) &&
                 setsockopt(s->fd, IPPROTO_IP, IP_MULTICAST_IF, &o->ifaddr,
                            sizeof o->ifaddr))
            what = "IP_MULTICAST_IF";
    } else if (setsockopt(s->fd, SOL_SOCKET, SO_BROADCAST, &on, sizeof on)) {
        what = "SO_BROADCAST";
    }
    struct sockaddr_in b = {.sin_family = AF_INET, .sin_addr = o->ifaddr};
    socklen_t bl = sizeof b;
    if (!what && bind(s->fd, (struct sockaddr *)&b, sizeof b) != 0)
        what = "bind to the if= address";
    if (!what && getsockname(s->fd, (struct sockaddr *)&s->local, &bl) != 0)
        what = "getsockname";
    if (what) {
        rc = -errno;
        TERN_ERROR(c->lg, SUBSYS(c), "outduct udpm/%s: %s: %s", name, what,
                   strerror(errno));
        sock_free(s);
        return rc;
    }
    *out = s;
    return 0;
}

static int open_mduct(void *cla, bp_outduct *od, const char *name, const char *cmd,
                      void **duct)
{
    bp_udp_cla *c = cla;
    struct mopts o;
    char why[400];
    int rc = udpm_parse(true, name, cmd, &o, why, sizeof why);
    if (rc) {
        TERN_ERROR(c->lg, SUBSYS(c), "%s", why);
        return rc;
    }
    if (!is_multicast(o.addr.sin_addr) && !is_local_broadcast(o.addr.sin_addr))
        TERN_WARN(c->lg, SUBSYS(c),
                  "outduct udpm/%s: %s is neither a multicast group (224.0.0.0/4) nor "
                  "the broadcast address of an interface here: only its owner will hear "
                  "it",
                  name, inet_ntoa(o.addr.sin_addr));
    uduct *d = calloc(1, sizeof *d);
    if (!d)
        return -ENOMEM;
    if ((rc = mduct_sock(c, name, &o, &d->s))) {
        free(d);
        return rc;
    }
    d->s->c = c;
    memcpy(&d->addr, &o.addr, sizeof o.addr);
    d->alen = sizeof o.addr;
    d->cmd_rate = o.rate;
    d->c = c;
    d->od = od;
    tern_timer_init(c->loop, &d->pace_tm);
    d->max_dgram = BP_UDP_MAX_DGRAM4;
    snprintf(d->name, sizeof d->name, "%s", name);
    d->next = c->ducts;
    if (c->ducts)
        c->ducts->prev = d;
    c->ducts = d;
    bp_outduct_set_max_payload(od, BP_UDP_MAX_PAYLOAD);
    char what[160];
    snprintf(what, sizeof what, "the %zu-byte UDP datagram limit of udpm/%s",
             d->max_dgram, name);
    bp_outduct_set_max_bundle(od, d->max_dgram, what);
    TERN_INFO(c->lg, SUBSYS(c),
              "outduct udpm/%s: from port %u, ttl %d, loop %d, interface %s", name,
              ntohs(d->s->local.sin_port), o.ttl, o.loop,
              o.ifaddr.s_addr ? inet_ntoa(o.ifaddr) : "(routes)");
    *duct = d;
    return 0;
}

static const bp_cla_ops udpm_ops = {
    .protocol = "udpm",
    .outduct_open = open_mduct,
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
        TERN_WARN(c->lg, SUBSYS(c),
                  "induct %s: the kernel dropped %llu datagrams (%llu in all): its "
                  "receive buffer was full; raise net.core.rmem_max or run with "
                  "CAP_NET_ADMIN",
                  in->name, (unsigned long long)(d - in->drops_seen),
                  (unsigned long long)d);
        in->drops_seen = d;
    }
}

/* This host's IPv4 addresses, read again at most once a second (only when
 * a datagram comes from the port of one of our sockets). */
static void laddr_refresh(bp_udp_cla *c)
{
    uint64_t now = tern_loop_now(c->loop);
    if (c->laddr_ns && now - c->laddr_ns < LADDR_REFRESH_NS)
        return;
    c->laddr_ns = now ? now : 1;
    struct ifaddrs *ifs = NULL;
    if (getifaddrs(&ifs) != 0)
        return; /* keep what we had */
    size_t n = 0;
    for (struct ifaddrs *i = ifs; i; i = i->ifa_next)
        n += i->ifa_addr && i->ifa_addr->sa_family == AF_INET;
    struct in_addr *v = n ? calloc(n, sizeof *v) : NULL;
    if (n && !v) {
        freeifaddrs(ifs);
        return;
    }
    size_t k = 0;
    for (struct ifaddrs *i = ifs; i; i = i->ifa_next)
        if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET)
            v[k++] = ((struct sockaddr_in *)i->ifa_addr)->sin_addr;
    freeifaddrs(ifs);
    free(c->laddr);
    c->laddr = v;
    c->nladdr = k;
}

/* A datagram that one of our udpm outducts sent, looped back to us. */
static bool is_own(bp_udp_cla *c, const struct sockaddr_in *src)
{
    if (src->sin_family != AF_INET)
        return false;
    for (uduct *d = c->ducts; d; d = d->next) {
        const struct sockaddr_in *l = &d->s->local;
        if (l->sin_port != src->sin_port)
            continue;
        if (l->sin_addr.s_addr != htonl(INADDR_ANY))
            return l->sin_addr.s_addr == src->sin_addr.s_addr;
        laddr_refresh(c); /* bound to any address: is the source one of ours? */
        for (size_t i = 0; i < c->nladdr; i++)
            if (c->laddr[i].s_addr == src->sin_addr.s_addr)
                return true;
    }
    return false;
}

/* Whether a bundle on the broadcast medium is for this node: its destination
 * is this node or a group. Only the primary block's head is read; what does
 * not decode goes to the agent, which counts it as malformed. */
static bool for_us(bp_udp_cla *c, const uint8_t *p, size_t len)
{
    tern_cbor_dec d;
    tern_cbor_dec_init(&d, p, len);
    uint64_t n, v;
    bp_eid dest;
    if (tern_cbor_dec_array(&d, &n) < 0 || tern_cbor_dec_array(&d, &n) < 0 ||
        tern_cbor_dec_uint(&d, &v) < 0 || tern_cbor_dec_uint(&d, &v) < 0 ||
        tern_cbor_dec_uint(&d, &v) < 0 || bp_eid_decode(&d, &dest, NULL) < 0)
        return true;
    switch (dest.scheme) {
    case BP_SCHEME_IPN:
        return dest.node == bp_agent_node(c->a);
    case BP_SCHEME_IMC:
        return true; /* the agent knows the groups it has members of */
    case BP_SCHEME_DTN: {
        size_t nl = strlen(c->dtn_name);
        return nl && dest.ssp_len >= nl && memcmp(dest.ssp, c->dtn_name, nl) == 0 &&
               (dest.ssp_len == nl || dest.ssp[nl] == '/');
    }
    default:
        return true; /* the agent refuses it, counted */
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
        if (c->mcast) /* the kernel overwrites each source length */
            for (size_t i = 0; i < RX_BATCH; i++)
                c->rmsg[i].msg_hdr.msg_namelen = sizeof *c->rname;
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
            const uint8_t *dg = c->rbuf + (size_t)i * RX_BUF;
            if (c->mcast) {
                if (m->msg_hdr.msg_namelen >= sizeof *c->rname &&
                    is_own(c, &c->rname[i])) {
                    c->st.own_in++;
                    continue;
                }
                if (!for_us(c, dg, m->msg_len)) {
                    c->st.not_for_us++;
                    continue;
                }
            }
            int rc = bp_agent_receive(c->a, dg, m->msg_len);
            if (rc > 0) {
                c->st.bundles_in += (uint64_t)rc;
            } else {
                c->st.refused_in++;
                if (c->st.refused_in == 1 && (rc == TERN_EFULL || rc == -ENOMEM))
                    TERN_WARN(c->lg, SUBSYS(c),
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
    if (c->mcast)
        c->rname = calloc(RX_BATCH, sizeof *c->rname);
    if (!c->rmsg || !c->riov || !c->rbuf || (c->mcast && !c->rname)) {
        free(c->rmsg);
        free(c->riov);
        free(c->rbuf);
        free(c->rname);
        c->rmsg = NULL;
        c->riov = NULL;
        c->rbuf = NULL;
        c->rname = NULL;
        return -ENOMEM;
    }
    for (size_t i = 0; i < RX_BATCH; i++) {
        c->riov[i].iov_base = c->rbuf + i * RX_BUF;
        c->riov[i].iov_len = RX_BUF;
        c->rmsg[i].msg_hdr.msg_iov = &c->riov[i];
        c->rmsg[i].msg_hdr.msg_iovlen = 1;
        if (c->mcast)
            c->rmsg[i].msg_hdr.msg_name = &c->rname[i];
    }
    return 0;
}

/* Opens an induct bound to ss; mo (udpm only, else NULL) says which group
 * to join and on which interface. word names it in the log. */
static int induct_open(bp_udp_cla *c, const char *word, const struct sockaddr_storage *ss,
                       socklen_t sl, const struct mopts *mo, uint16_t *bound_port)
{
    const char *proto = c->mcast ? "udpm" : "udp";
    int rc;
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
    in->fd =
        socket(ss->ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_UDP);
    if (in->fd < 0) {
        rc = -errno;
        goto fail_free;
    }
    if (ss->ss_family == AF_INET6) {
        int off = 0; /* "[::]" also takes IPv4 peers (v4-mapped) */
        setsockopt(in->fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
    }
    if (mo) {
        /* Several nodes of one host listen on one group port: the kernel
         * gives every one of them each multicast or broadcast datagram. */
        int on = 1;
        if (setsockopt(in->fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) != 0 ||
            setsockopt(in->fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof on) != 0) {
            rc = -errno;
            TERN_ERROR(c->lg, SUBSYS(c), "induct udpm %s: SO_REUSEADDR/SO_REUSEPORT: %s",
                       word, strerror(errno));
            goto fail_close;
        }
    }
    if (bind(in->fd, (const struct sockaddr *)ss, sl) != 0) {
        rc = -errno;
        TERN_ERROR(c->lg, SUBSYS(c), "induct %s %s: cannot bind: %s", proto, word,
                   strerror(errno));
        goto fail_close;
    }
    if (mo && is_multicast(mo->addr.sin_addr)) {
        struct ip_mreq mr = {.imr_multiaddr = mo->addr.sin_addr,
                             .imr_interface = mo->ifaddr};
        if (setsockopt(in->fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mr, sizeof mr) != 0) {
            rc = -errno;
            TERN_ERROR(c->lg, SUBSYS(c),
                       "induct udpm %s: cannot join the group on interface %s: %s%s",
                       word, mo->ifaddr.s_addr ? inet_ntoa(mo->ifaddr) : "(routes)",
                       strerror(errno),
                       errno == ENODEV ? " (no route to the group: add one, e.g. 'ip "
                                         "route add 224.0.0.0/4 dev <if>', or give if=)"
                                       : "");
            goto fail_close;
        }
#ifdef IP_MULTICAST_ALL
        int off = 0; /* only the group joined here, not others of this host */
        setsockopt(in->fd, IPPROTO_IP, IP_MULTICAST_ALL, &off, sizeof off);
#endif
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
        TERN_WARN(c->lg, SUBSYS(c),
                  "induct %s %s: receive buffer is only %zu bytes (asked for %u): "
                  "bundles will be lost in bursts; raise net.core.rmem_max (sysctl -w "
                  "net.core.rmem_max=%u) or run with CAP_NET_ADMIN",
                  proto, word, got, RCVBUF_WANT, RCVBUF_WANT);
    in->drops_seen = kernel_drops(in->fd);
    if ((rc = tern_io_init(c->loop, &in->io, in->fd, on_induct_io, in)))
        goto fail_close;
    if ((rc = tern_io_start(&in->io, TERN_IO_READ)))
        goto fail_close;
    c->in[c->nin++] = in;
    TERN_INFO(c->lg, SUBSYS(c), "%scli bound to %s port %u (receive buffer %zu bytes)",
              proto, word, in->port, got);
    if (bound_port)
        *bound_port = in->port;
    return 0;
fail_close:
    close(in->fd);
fail_free:
    free(in);
    return rc;
}

TERN_API int bp_udp_cla_induct(bp_udp_cla *c, const char *addr, uint16_t *bound_port)
{
    if (!c || !addr)
        return -EINVAL;
    if (c->mcast)
        return bp_udpm_cla_induct(c, addr, NULL, bound_port);
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
        TERN_ERROR(c->lg, SUBSYS(c), "induct udp: expected '<host>[:<port>]', got '%s'",
                   addr);
        return TERN_ESYNTAX;
    }
    memcpy(word, s, wl);
    word[wl] = '\0';
    unsigned port;
    int rc =
        parse_addr(word, "induct udp", true, host, sizeof host, &port, err, sizeof err);
    if (rc) {
        TERN_ERROR(c->lg, SUBSYS(c), "%s", err);
        return rc;
    }
    struct sockaddr_storage ss;
    socklen_t sl;
    if ((rc = resolve(host, port, true, &ss, &sl))) {
        TERN_ERROR(c->lg, SUBSYS(c), "induct udp %s: cannot resolve '%s': %s", word, host,
                   rc == TERN_ENOTFOUND ? "no such host" : tern_strerror(rc));
        return rc;
    }
    return induct_open(c, word, &ss, sl, NULL, bound_port);
}

TERN_API int bp_udpm_cla_induct(bp_udp_cla *c, const char *addr, const char *cmd,
                                uint16_t *bound_port)
{
    if (!c || !addr || !c->mcast)
        return -EINVAL;
    struct mopts o;
    char why[400];
    int rc = udpm_parse(false, addr, cmd, &o, why, sizeof why);
    if (rc) {
        TERN_ERROR(c->lg, SUBSYS(c), "%s", why);
        return rc;
    }
    /* Bound to the group, the socket takes only that group's datagrams; a
     * broadcast (or unicast) address is bound to any address on the port,
     * since a broadcast may come to 255.255.255.255 or the subnet's. */
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
    *sin = o.addr;
    if (!is_multicast(o.addr.sin_addr))
        sin->sin_addr.s_addr = htonl(INADDR_ANY);
    return induct_open(c, addr, &ss, sizeof *sin, &o, bound_port);
}

/* ---------------------------------------------------------------- life */

static int cla_new(bp_agent *a, tern_loop *loop, tern_log *lg, bool mcast,
                   bp_udp_cla **out)
{
    if (!a || !loop || !out)
        return -EINVAL;
    bp_udp_cla *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    c->a = a;
    c->loop = loop;
    c->lg = lg;
    c->mcast = mcast;
    int rc = bp_cla_register(a, mcast ? &udpm_ops : &udp_ops, c);
    if (rc) {
        free(c);
        return rc;
    }
    *out = c;
    return 0;
}

TERN_API int bp_udp_cla_new(bp_agent *a, tern_loop *loop, tern_log *lg, bp_udp_cla **out)
{
    return cla_new(a, loop, lg, false, out);
}

TERN_API int bp_udpm_cla_new(bp_agent *a, tern_loop *loop, tern_log *lg, bp_udp_cla **out)
{
    return cla_new(a, loop, lg, true, out);
}

TERN_API int bp_udpm_cla_set_dtn_name(bp_udp_cla *c, const char *name)
{
    if (!c || !c->mcast)
        return -EINVAL;
    if (!name)
        name = "";
    if (name[0] && strncmp(name, "//", 2) != 0)
        return TERN_ESYNTAX;
    if (strlen(name) >= sizeof c->dtn_name)
        return TERN_EOVERFLOW;
    snprintf(c->dtn_name, sizeof c->dtn_name, "%s", name);
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
        tern_timer_stop(&d->pace_tm);
        if (c->mcast)
            sock_free(d->s);
        free(d);
    }
    sock_free(c->out[0]);
    sock_free(c->out[1]);
    free(c->rmsg);
    free(c->riov);
    free(c->rbuf);
    free(c->rname);
    free(c->laddr);
    free(c);
}
