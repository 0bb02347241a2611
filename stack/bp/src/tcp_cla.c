/* BP over TCP: TCPCLv4, STCP and MTCP convergence layers (see bp_tcp.h).
 *
 * One connection object per TCP connection, inbound (accepted by an induct)
 * or outbound (an outduct's). The protocol work is done by the sans-I/O
 * codecs of bp_tcpcl.h; this file moves bytes between them and the sockets,
 * maps transfers to the agent's transmissions and runs the timers: session
 * setup deadline, TCPCLv4 keepalives and an outduct's reconnection back-off.
 * Connections are freed from a deferred callback, never inside their own
 * I/O callback. */
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <stddef.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bp_tcp.h"
#include "bp_tcpcl.h"
#include "tcpcl_int.h"

#define SUBSYS      "bp-tcp"
#define RBUF        (256u << 10)
#define READ_ROUNDS 16
/* A connection whose bundle the store could not take stops reading (TCP's
 * own flow control then holds the sender back) until the store has room
 * for ROOM_MIN bytes, looking again every PAUSE_MS. */
#define ROOM_MIN    (4u << 20)
#define PAUSE_MS    20
#define SEG_MRU     (4u << 20)
#define KEEPALIVE_S 30
/* A session makes progress when a bundle or an acknowledgement passes, or
 * when this many bytes moved since the last progress (a big bundle on a slow
 * link). */
#define PROGRESS_BYTES (1u << 20)
/* A session holding no more than this for incomplete input never waits for
 * its induct's rxbuffer: small bundles always get through. */
#define STARVE_MIN RBUF
/* accept() failing for want of descriptors: the listener rests this long
 * (its socket stays readable, so retrying at once would spin). */
#define ACCEPT_REST_MS 100
/* How often a connection without acknowledgements looks whether the peer's
 * TCP acknowledged the bytes of its bundles in flight. */
#define ACKED_MS 2
/* connect() and the TCPCL session must be up within this: three round trips
 * at 5 s one way take 30 s, and a DTN link may be that long */
#define SETUP_MS          60000
#define BACKOFF_MIN_MS    100
#define BACKOFF_MAX_MS    5000
#define SEND_IN_PLACE_MIN 16384 /* bytes */
#define MAX_INFLIGHT      1024
#define MAX_PENDING_OUT   (32u << 20)

enum { F_TCP, F_STCP, F_MTCP, F_N };
static const char *const flav_name[F_N] = {"tcp", "stcp", "mtcp"};

/* The limits of an induct's sessions, or of an outduct's (see bp_tcp.h). */
typedef struct topts {
    uint64_t maxconns, peerconns, idle_s, rxbuffer, xfer_mru;
} topts;

typedef struct inflight {
    uint64_t xmit, key; /* key: transfer ID (tcp) or end of the bundle in the stream */
} inflight;

typedef struct tconn tconn;
typedef struct tduct tduct;
typedef struct listener listener;

struct tconn {
    tconn *next, *prev;
    bp_tcp_cla *c;
    int flav, fd;
    tern_io io;
    tern_timer timer;
    tduct *d;    /* the outduct it serves; NULL when accepted by an induct */
    listener *l; /* the induct that accepted it; NULL for an outduct's */
    struct sockaddr_storage addr; /* the peer's */
    topts o;                      /* its duct's limits */
    int connecting, dead, up, outbound;
    /* progress (bp_tcp.h): when it last came, bytes moved since */
    uint64_t progress_ns, moved;
    tern_timer idle_tm;
    tern_timer acked_tm; /* by_bytes: looks at the peer's TCP acknowledgements */
    /* bytes held for incomplete input, as accounted to the induct */
    size_t held;
    int starved;     /* not reading: the induct's rxbuffer is used up */
    int flush_soon;  /* a deferred conn_flush is queued */
    int paused;      /* not reading: the store is full */
    int full_logged; /* this pause was logged: its end is too */
    tern_timer pause_tm;
    /* tcp: the bundle the full store could not take, kept (its data stays
     * valid while nothing is read) and taken once there is room */
    int has_held;
    tcpcl4_ev hev;
    tcpcl4_sess *s;  /* tcp, version 4 */
    tcpcl3_sess *s3; /* tcp, version 3 */
    tcl_buf rx, tx;  /* stcp, mtcp; rx also holds an induct's first bytes until the
                     contact header's version is known */
    /* stream bytes queued and taken by the kernel (stcp, mtcp, and TCPCLv3
     * without acknowledgements: their bundles count as forwarded once the
     * peer's TCP acknowledged the last byte, conn_acked) */
    uint64_t queued, written;
    uint64_t started_ns;
    char peer[80];
};

struct tduct {
    bp_tcp_cla *c;
    int flav;
    bp_outduct *od;
    char name[96];
    struct sockaddr_storage addr;
    socklen_t alen;
    tconn *conn;
    tern_timer retry;
    uint64_t backoff_ms;
    int failing; /* a connect failure was logged: log the next ones at debug level */
    int v3;      /* the peer answered TCPCLv4 with a v3 contact header: speak v3 */
    topts o;
    inflight *fl;
    size_t nfl, capfl;
    int waiting;
    /* the maximum payload the configuration gave (0: none), read when the
     * first session came up: later ones set the outduct's from the peer */
    int cfg_known;
    size_t cfg_max_payload;
};

struct listener {
    bp_tcp_cla *c;
    int flav, fd;
    tern_io io;
    tern_timer rest; /* accept() ran out of descriptors */
    uint16_t port;
    char name[96];
    topts o;
    size_t nconns;   /* its connections now */
    uint64_t held;   /* bytes they hold for incomplete input */
    size_t nstarved; /* of them waiting for held to fall */
};

typedef struct reg {
    bp_tcp_cla *c;
    int flav;
} reg;

struct bp_tcp_cla {
    bp_agent *a;
    tern_loop *loop;
    tern_log *lg;
    reg regs[F_N];
    tconn *conns;
    tconn *graveyard; /* closed, freed by the deferred reaper */
    int reap_pending;
    listener **ls;
    size_t nls;
    uint8_t *rbuf;
    int freeing; /* bp_tcp_cla_free: the agent is already gone */
    bp_tcp_stats st;
    tern_log_limit full_lim; /* "the store is full" */
    tern_log_causes logs;    /* every other line a peer can cause */
};

static int64_t now_ms(bp_tcp_cla *c)
{
    return (int64_t)(tern_loop_now(c->loop) / 1000000u);
}

/* Logs a line a peer can cause: at most one per 10 s per cause (the text
 * cause names it), with the count of those held back. */
#define CLOG(c, level, cause, ...)                                                       \
    tern_log_limited((c)->lg, tern_log_cause(&(c)->logs, (cause)),                       \
                     tern_loop_now((c)->loop), (level), SUBSYS, __VA_ARGS__)

static const char *conn_dir(const tconn *t)
{
    return t->outbound ? "connection to" : "connection from";
}

/* ------------------------------------------------------------ addresses */

static int parse_addr(bp_tcp_cla *c, const char *s, const char *what, int induct,
                      struct sockaddr_storage *ss, socklen_t *sl)
{
    char host[256];
    const char *h = s, *ps = NULL;
    size_t hl;
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (!close || (close[1] && close[1] != ':'))
            goto bad;
        h = s + 1;
        hl = (size_t)(close - h);
        if (close[1] == ':')
            ps = close + 2;
    } else {
        const char *colon = strchr(s, ':');
        if (colon && strchr(colon + 1, ':'))
            goto bad;
        hl = colon ? (size_t)(colon - s) : strlen(s);
        if (colon)
            ps = colon + 1;
    }
    if (hl == 0 || hl >= sizeof host || memchr(h, ' ', hl) || memchr(h, '\t', hl))
        goto bad;
    unsigned port = BP_TCP_DEFAULT_PORT;
    if (ps) {
        if (!*ps || strlen(ps) > 5 || strspn(ps, "0123456789") != strlen(ps))
            goto bad;
        port = (unsigned)atoi(ps);
        if (port > 65535 || (!induct && port == 0))
            goto bad;
    }
    memcpy(host, h, hl);
    host[hl] = 0;
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICSERV | (induct ? AI_PASSIVE : 0)},
                    *res = NULL;
    char pstr[8];
    snprintf(pstr, sizeof pstr, "%u", port);
    if (getaddrinfo(host, pstr, &hints, &res) != 0 || !res) {
        if (res)
            freeaddrinfo(res);
        TERN_ERROR(c->lg, SUBSYS, "%s: cannot resolve host '%s'", what, host);
        return TERN_ENOTFOUND;
    }
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    *sl = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
bad:
    TERN_ERROR(c->lg, SUBSYS,
               "%s: bad address '%s' (expected <host>[:<port>] or [<IPv6>][:<port>])",
               what, s);
    return TERN_ESYNTAX;
}

static void addr_text(const struct sockaddr_storage *ss, char *out, size_t cap)
{
    char h[64] = "?", p[8] = "?";
    getnameinfo((const struct sockaddr *)ss, sizeof *ss, h, sizeof h, p, sizeof p,
                NI_NUMERICHOST | NI_NUMERICSERV);
    snprintf(out, cap, "%s:%s", h, p);
}

/* The options after the command word of a duct's command ("tcpcli
 * maxconns=64 idle=120"); outducts take idle and xfermru only. */
static int parse_opts(bp_tcp_cla *c, const char *what, const char *cmd, int induct,
                      topts *o)
{
    *o = (topts){.maxconns = BP_TCP_MAXCONNS,
                 .peerconns = BP_TCP_PEERCONNS,
                 .idle_s = BP_TCP_IDLE_S,
                 .rxbuffer = BP_TCP_RXBUFFER,
                 .xfer_mru = BP_TCP_XFER_MRU};
    static const struct {
        const char *key;
        size_t off;
        uint64_t min, max;
        int induct_only;
    } keys[] = {
        {"maxconns", offsetof(topts, maxconns), 1, 1000000, 1},
        {"peerconns", offsetof(topts, peerconns), 1, 1000000, 1},
        {"idle", offsetof(topts, idle_s), 0, 100u * 365 * 86400, 0},
        {"rxbuffer", offsetof(topts, rxbuffer), 1u << 20, UINT64_MAX / 4, 1},
        {"xfermru", offsetof(topts, xfer_mru), 4096, 1ull << 40, 0},
    };
    const char *p = cmd ? cmd : "";
    p += strcspn(p, " \t"); /* the command word itself */
    for (;;) {
        p += strspn(p, " \t");
        if (!*p)
            break;
        size_t wl = strcspn(p, " \t");
        const char *eq = memchr(p, '=', wl);
        size_t kl = eq ? (size_t)(eq - p) : wl, k;
        for (k = 0; k < sizeof keys / sizeof keys[0]; k++)
            if (strlen(keys[k].key) == kl && memcmp(p, keys[k].key, kl) == 0 &&
                (induct || !keys[k].induct_only))
                break;
        if (!eq) { /* ION writes none; a word without '=' is not one of ours */
            TERN_WARN(c->lg, SUBSYS,
                      "%s: '%.*s' in the command is not an option: ignored", what,
                      (int)wl, p);
            p += wl;
            continue;
        }
        uint64_t v = 0;
        int ok = k < sizeof keys / sizeof keys[0] && eq + 1 < p + wl;
        for (const char *q = eq ? eq + 1 : p; ok && q < p + wl; q++) {
            if (*q < '0' || *q > '9' || v > (UINT64_MAX - 9) / 10)
                ok = 0;
            else
                v = v * 10 + (uint64_t)(*q - '0');
        }
        if (!ok || v < keys[k].min || v > keys[k].max) {
            if (k < sizeof keys / sizeof keys[0])
                TERN_ERROR(c->lg, SUBSYS,
                           "%s: option '%.*s': expected %s=<%" PRIu64 "..%" PRIu64 ">",
                           what, (int)wl, p, keys[k].key, keys[k].min, keys[k].max);
            else
                TERN_ERROR(c->lg, SUBSYS, "%s: unknown option '%.*s'; expected %s", what,
                           (int)wl, p,
                           induct ? "maxconns=, peerconns=, idle=, rxbuffer= or xfermru="
                                  : "idle= or xfermru=");
            return TERN_ESYNTAX;
        }
        memcpy((char *)o + keys[k].off, &v, sizeof v);
        p += wl;
    }
    /* one bundle of xfermru, in segments of up to SEG_MRU, must fit the
     * rxbuffer, or its session would wait for room that never comes */
    uint64_t need = o->xfer_mru + (o->xfer_mru < SEG_MRU ? o->xfer_mru : SEG_MRU);
    if (induct && o->rxbuffer < need) {
        TERN_ERROR(c->lg, SUBSYS,
                   "%s: rxbuffer=%" PRIu64 " cannot hold one bundle of xfermru=%" PRIu64
                   " and a segment; expected rxbuffer=%" PRIu64 " or more (or a smaller "
                   "xfermru)",
                   what, o->rxbuffer, o->xfer_mru, need);
        return TERN_ESYNTAX;
    }
    return 0;
}

static int same_host(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
    if (a->ss_family != b->ss_family)
        return 0;
    if (a->ss_family == AF_INET)
        return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
               ((const struct sockaddr_in *)b)->sin_addr.s_addr;
    if (a->ss_family == AF_INET6)
        return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
                      &((const struct sockaddr_in6 *)b)->sin6_addr,
                      sizeof(struct in6_addr)) == 0;
    return 0;
}

static void sock_opts(int fd)
{
    int one = 1; /* without it, small bundles wait ~40 ms for delayed ACKs */
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* ------------------------------------------- TCPCL sessions, v4 or v3 */

static int has_sess(const tconn *t)
{
    return t->s || t->s3;
}

static const uint8_t *sess_output(tconn *t, size_t *l)
{
    if (t->s3)
        return tcpcl3_sess_output(t->s3, l);
    if (t->s)
        return tcpcl4_sess_output(t->s, l);
    *l = 0;
    return NULL;
}

static void sess_sent(tconn *t, size_t n)
{
    if (t->s3)
        tcpcl3_sess_sent(t->s3, n);
    else
        tcpcl4_sess_sent(t->s, n);
}

static int sess_state(const tconn *t)
{
    if (t->s3)
        return tcpcl3_sess_state(t->s3);
    return t->s ? tcpcl4_sess_state(t->s) : TCPCL4_S_CONTACT;
}

static int64_t sess_tick(tconn *t, int64_t now)
{
    return t->s3 ? tcpcl3_sess_tick(t->s3, now) : tcpcl4_sess_tick(t->s, now);
}

static const char *sess_error(const tconn *t)
{
    if (t->s3)
        return tcpcl3_sess_error(t->s3);
    return t->s ? tcpcl4_sess_error(t->s) : "";
}

static int sess_event(tconn *t, tcpcl4_ev *e)
{
    return t->s3 ? tcpcl3_sess_event(t->s3, e) : tcpcl4_sess_event(t->s, e);
}

static void sess_ack(tconn *t, uint64_t tid, uint64_t len, uint8_t flags)
{
    if (t->s3)
        tcpcl3_sess_ack(t->s3, tid, len);
    else
        tcpcl4_sess_ack(t->s, tid, len, flags);
}

/* Refuses received bundle tid: 0, or -ENOTSUP from a TCPCLv3
 * session without negotiated refusals (stock ION offers none). */
static int sess_refuse(tconn *t, uint64_t tid, uint8_t reason)
{
    if (t->s3)
        return tcpcl3_sess_refuse(t->s3, tid, reason);
    tcpcl4_sess_refuse(t->s, tid, reason);
    return 0;
}

static int sess_new(tconn *t, int active, int v3)
{
    uint64_t mru = t->o.xfer_mru;
    tcpcl4_cfg cfg = {.active = active,
                      .node = bp_agent_node(t->c->a),
                      .keepalive_s = KEEPALIVE_S,
                      .seg_mru = mru < SEG_MRU ? mru : SEG_MRU,
                      .xfer_mru = mru};
    return v3 ? tcpcl3_sess_new(&cfg, &t->s3) : tcpcl4_sess_new(&cfg, &t->s);
}

/* ---------------------------------------------------------- connections */

static void conn_close(tconn *t, const char *why);
static void conn_flush(tconn *t);
static void conn_acked(tconn *t);
static size_t conn_pending(tconn *t);
static void duct_retry_later(tduct *d);

static void fl_done(tduct *d, size_t i, int result)
{
    uint64_t xmit = d->fl[i].xmit;
    memmove(&d->fl[i], &d->fl[i + 1], (d->nfl - i - 1) * sizeof *d->fl);
    d->nfl--;
    if (result != BP_XMIT_OK)
        d->c->st.failed_out++;
    bp_outduct_result(d->od, xmit, result);
}

static void duct_maybe_ready(tduct *d)
{
    if (d->waiting && d->nfl < MAX_INFLIGHT / 2) {
        d->waiting = 0;
        bp_outduct_ready(d->od);
    }
}

static void flush_soon_cb(tern_loop *loop, void *arg)
{
    (void)loop;
    tconn *t = arg;
    t->flush_soon = 0;
    conn_flush(t);
}

/* Flushes once the loop has run what is ready: bundles the agent hands over
 * in a burst leave in one send() instead of one each. */
static void conn_flush_soon(tconn *t)
{
    if (t->flush_soon || t->dead)
        return;
    if (tern_loop_defer(t->c->loop, flush_soon_cb, t) == 0)
        t->flush_soon = 1;
    else
        conn_flush(t);
}

/* Bundles of this connection count as forwarded once the kernel took their
 * last byte: STCP and MTCP have no acknowledgements, nor has TCPCLv3 unless
 * both sides asked for them. Counted when queued, they were lost with a
 * connection that dropped before the kernel had them. */
static int by_bytes(const tconn *t)
{
    return t->flav != F_TCP || (t->s3 && !tcpcl3_sess_acks(t->s3));
}

static void conn_progress(tconn *t)
{
    t->progress_ns = tern_loop_now(t->c->loop);
    t->moved = 0;
}

/* n bytes moved: progress once they add up to PROGRESS_BYTES. */
static void conn_moved(tconn *t, size_t n)
{
    t->moved += n;
    if (t->moved >= PROGRESS_BYTES)
        conn_progress(t);
}

static void conn_want(tconn *t);

static size_t conn_buffered(const tconn *t)
{
    if (t->s)
        return tcpcl4_sess_buffered(t->s);
    if (t->s3)
        return tcpcl3_sess_buffered(t->s3);
    return t->rx.len - t->rx.off;
}

/* Lets the sessions of l that wait for its rxbuffer read again, once what
 * its sessions hold fell to the limit. */
static void induct_wake(listener *l)
{
    for (tconn *t = l->c->conns; t && l->nstarved && l->held < l->o.rxbuffer; t = t->next)
        if (t->l == l && t->starved) {
            t->starved = 0;
            l->nstarved--;
            conn_want(t);
        }
}

/* Accounts to t's induct what t holds for input not yet complete (a segment
 * or bundle partly received). A session holding more than STARVE_MIN while
 * the induct's sessions together hold more than its rxbuffer stops reading
 * until they hold less: a peer's partial segments cannot pin more memory
 * than that, and TCP holds the sender back meanwhile. */
static void conn_account(tconn *t)
{
    listener *l = t->l;
    if (!l)
        return;
    size_t now = t->dead ? 0 : conn_buffered(t);
    l->held = l->held - t->held + now;
    t->held = now;
    if (!t->dead && !t->starved && now >= STARVE_MIN && l->held >= l->o.rxbuffer) {
        t->starved = 1;
        l->nstarved++;
        t->c->st.starved++;
        CLOG(t->c, TERN_LOG_WARN, "rxbuffer",
             "%s induct %s: sessions hold %" PRIu64 " bytes of incomplete input, above "
             "rxbuffer=%" PRIu64 ": not reading from %s (%zu bytes) until they hold less",
             flav_name[t->flav], l->name, l->held, l->o.rxbuffer, t->peer, now);
        conn_want(t);
    } else if (l->nstarved && l->held < l->o.rxbuffer) {
        induct_wake(l);
    }
}

/* How many bytes t may read now: any session may hold STARVE_MIN, and more
 * while its induct's sessions together hold less than rxbuffer. */
static size_t conn_allowance(const tconn *t)
{
    const listener *l = t->l;
    if (!l)
        return SIZE_MAX;
    size_t own = t->held < STARVE_MIN ? STARVE_MIN - t->held : 0;
    uint64_t shared = l->held < l->o.rxbuffer ? l->o.rxbuffer - l->held : 0;
    return own > shared ? own : (size_t)(shared < SIZE_MAX ? shared : SIZE_MAX);
}

static void idle_cb(tern_timer *tm, void *arg);

/* Closes a session that made no progress for its idle time: TCPCLv4 with
 * SESS_TERM "idle timeout", v3 with SHUTDOWN (idle). */
static void conn_idle_close(tconn *t)
{
    char why[96];
    snprintf(why, sizeof why, "no progress for %" PRIu64 " s (idle=%" PRIu64 ")",
             (tern_loop_now(t->c->loop) - t->progress_ns) / 1000000000u, t->o.idle_s);
    t->c->st.idle_closes++;
    if (t->s)
        tcpcl4_sess_close(t->s, TCPCL4_TERM_IDLE_TIMEOUT);
    else if (t->s3)
        tcpcl3_sess_close(t->s3, TCPCL3_SHUT_IDLE);
    conn_flush(t); /* best effort: the SESS_TERM or SHUTDOWN */
    if (!t->dead)
        conn_close(t, why);
}

static void idle_arm(tconn *t)
{
    if (t->o.idle_s && !t->dead)
        tern_timer_start_at(&t->idle_tm, idle_cb, t,
                            t->progress_ns + t->o.idle_s * 1000000000ull, 0);
}

static void idle_cb(tern_timer *tm, void *arg)
{
    (void)tm;
    tconn *t = arg;
    if (t->dead)
        return;
    /* Waiting for our own store is not the peer's fault, nor is an outduct's
     * session idle while it has nothing to send (keepalives keep it). */
    if (t->paused || (t->outbound && !(t->d && t->d->nfl)))
        conn_progress(t);
    else if (tern_loop_now(t->c->loop) - t->progress_ns >= t->o.idle_s * 1000000000ull) {
        conn_idle_close(t);
        return;
    }
    idle_arm(t);
}

static void reap(tern_loop *loop, void *arg)
{
    (void)loop;
    bp_tcp_cla *c = arg;
    c->reap_pending = 0;
    while (c->graveyard) {
        tconn *t = c->graveyard;
        c->graveyard = t->next;
        if (t->flush_soon)
            tern_loop_defer_cancel(c->loop, flush_soon_cb, t);
        tern_timer_stop(&t->idle_tm);
        tern_timer_stop(&t->acked_tm);
        tcpcl4_sess_free(t->s);
        tcpcl3_sess_free(t->s3);
        free(t->rx.p);
        free(t->tx.p);
        free(t);
    }
}

static void conn_timer_cb(tern_timer *tm, void *arg);

static void conn_arm(tconn *t)
{
    bp_tcp_cla *c = t->c;
    int64_t next = -1;
    if (t->flav == F_TCP && !t->connecting) {
        if (sess_state(t) < TCPCL4_S_UP) {
            next = (int64_t)(t->started_ns / 1000000u) + SETUP_MS;
        } else {
            next = sess_tick(t, now_ms(c));
            /* a keepalive the tick just queued goes now: left for the next
             * flush it could wait a whole interval, and the peer, hearing
             * nothing for two, would end the session */
            if (conn_pending(t)) {
                conn_flush(t);
                if (t->dead)
                    return;
            }
        }
    } else if (t->connecting) {
        next = (int64_t)(t->started_ns / 1000000u) + SETUP_MS;
    }
    if (next < 0)
        tern_timer_stop(&t->timer);
    else
        tern_timer_start_at(&t->timer, conn_timer_cb, t, (uint64_t)next * 1000000u, 0);
}

static void conn_timer_cb(tern_timer *tm, void *arg)
{
    (void)tm;
    tconn *t = arg;
    if (t->dead)
        return;
    if (t->connecting) {
        conn_close(t, "connection not established within 60 s");
        return;
    }
    if (t->flav == F_TCP && sess_state(t) < TCPCL4_S_UP) {
        conn_close(t, "no TCPCL session within 60 s");
        return;
    }
    if (t->flav == F_TCP) {
        sess_tick(t, now_ms(t->c));
        if (sess_state(t) == TCPCL4_S_CLOSED) {
            conn_flush(t);
            conn_close(t, sess_error(t));
            return;
        }
        conn_flush(t);
    }
    if (!t->dead)
        conn_arm(t);
}

/* Watches for input unless paused, and for writability while output waits. */
static void conn_want(tconn *t)
{
    /* A session waiting for its induct's rxbuffer hears when its peer leaves
     * (one that holds memory and goes must give it back now, not at its
     * idle time). */
    tern_io_start(&t->io, (t->paused    ? 0
                           : t->starved ? TERN_IO_HUP
                                        : TERN_IO_READ) |
                              (conn_pending(t) ? TERN_IO_WRITE : 0));
}

static int frame_input(tconn *t);
static int bundle_in(tconn *t, const tcpcl4_ev *e);
static void tcp_events(tconn *t);

static void pause_cb(tern_timer *tm, void *arg)
{
    (void)tm;
    tconn *t = arg;
    if (t->dead)
        return;
    if (!bp_agent_has_room(t->c->a, ROOM_MIN)) {
        tern_timer_start(&t->pause_tm, pause_cb, t, PAUSE_MS * 1000000ull, 0);
        return;
    }
    t->paused = 0;
    if (t->flav != F_TCP) {
        frame_input(t); /* the bundle held back, and any after it */
        if (t->dead)
            return;
    } else if (t->has_held) {
        t->has_held = 0;
        if (bundle_in(t, &t->hev) == 0)
            tcp_events(t); /* the events that waited behind it */
        if (t->dead)
            return;
        conn_flush(t);
        if (t->dead)
            return;
    }
    conn_account(t);
    if (!t->paused) {
        if (t->full_logged)
            TERN_INFO(t->c->lg, SUBSYS, "%s %s %s: the store has room again: reading",
                      flav_name[t->flav], conn_dir(t), t->peer);
        t->full_logged = 0;
        conn_want(t);
    }
}

/* Stops reading until the store has room: nothing already received is
 * dropped, and the sender is held back by TCP itself. */
static void conn_pause(tconn *t)
{
    if (t->paused || t->dead)
        return;
    t->paused = 1;
    t->c->st.pauses++;
    /* A store that keeps filling (an application slower than the link)
     * pauses many times a second: one line per 10 s says so. */
    bp_tcp_cla *c = t->c;
    if (tern_log_limited(c->lg, &c->full_lim, tern_loop_now(c->loop), TERN_LOG_WARN,
                         SUBSYS, "%s %s %s: the store is full: not reading for now",
                         flav_name[t->flav], conn_dir(t), t->peer))
        t->full_logged = 1;
    conn_want(t);
    tern_timer_start(&t->pause_tm, pause_cb, t, PAUSE_MS * 1000000ull, 0);
}

static size_t conn_pending(tconn *t)
{
    size_t l = 0;
    if (t->s && !t->s3) {
        l = tcpcl4_sess_pending(t->s);
    } else if (t->flav == F_TCP) {
        sess_output(t, &l);
    } else {
        l = t->tx.len - t->tx.off;
    }
    return l;
}

/* Writes what the kernel takes; watches for writability while more waits. */
static void conn_flush(tconn *t)
{
    if (t->dead || t->connecting)
        return;
    for (;;) {
        size_t l;
        const uint8_t *p;
        if (t->flav == F_TCP)
            p = sess_output(t, &l);
        else {
            l = t->tx.len - t->tx.off;
            p = t->tx.p + t->tx.off;
        }
        if (!l)
            break;
        ssize_t w;
        if (t->s && !t->s3) {
            /* TCPCLv4 sends bundles in place: headers and the stored bytes
             * go out together. */
            struct iovec iov[64];
            struct msghdr mh = {0};
            mh.msg_iov = iov;
            mh.msg_iovlen = (size_t)tcpcl4_sess_output_iov(t->s, iov, 64, &l);
            w = sendmsg(t->fd, &mh, MSG_NOSIGNAL);
        } else {
            w = send(t->fd, p, l, MSG_NOSIGNAL);
        }
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                break;
            char why[128];
            snprintf(why, sizeof why, "send: %s", strerror(errno));
            conn_close(t, why);
            return;
        }
        t->c->st.bytes_out += (uint64_t)w;
        conn_moved(t, (size_t)w);
        if (t->flav == F_TCP) {
            sess_sent(t, (size_t)w);
        } else {
            t->tx.off += (size_t)w;
            if (t->tx.off == t->tx.len) { /* a big bundle's copy is not kept */
                t->tx.off = t->tx.len = 0;
                tcl__buf_trim(&t->tx, TCL_BUF_KEEP);
            }
        }
        t->written += (uint64_t)w;
        tduct *d = t->d;
        if (d && by_bytes(t)) {
            conn_acked(t);
            if (t->dead)
                return;
        }
    }
    conn_want(t);
}

static void acked_cb(tern_timer *tm, void *arg)
{
    (void)tm;
    tconn *t = arg;
    if (!t->dead)
        conn_acked(t);
}

/* Bundles of a connection without acknowledgements (by_bytes) are
 * forwarded once the peer's TCP acknowledged their last byte: the bytes the
 * kernel took minus those still in its send queue (SIOCOUTQ: unsent or not
 * acknowledged). Counted when the kernel took them, a bundle whose bytes
 * were still on the way when the connection dropped was lost; now it goes
 * again (a copy the peer did get is a duplicate there, and dropped). What
 * is out but not yet acknowledged is looked at again every ACKED_MS. */
static void conn_acked(tconn *t)
{
    tduct *d = t->d;
    if (!d)
        return;
    int outq = 0;
    uint64_t acked = t->written;
    if (ioctl(t->fd, SIOCOUTQ, &outq) == 0 && outq > 0 && (uint64_t)outq <= t->written)
        acked = t->written - (uint64_t)outq;
    while (d->nfl && d->fl[0].key <= acked && !t->dead) {
        t->c->st.bundles_out++;
        conn_progress(t);
        fl_done(d, 0, BP_XMIT_OK);
    }
    if (t->dead)
        return;
    duct_maybe_ready(d);
    if (!t->dead && d->nfl && d->fl[0].key <= t->written &&
        !tern_timer_is_active(&t->acked_tm))
        tern_timer_start(&t->acked_tm, acked_cb, t, ACKED_MS * 1000000ull, 0);
}

static void conn_close(tconn *t, const char *why)
{
    bp_tcp_cla *c = t->c;
    if (t->dead)
        return;
    t->dead = 1;
    c->st.drops++;
    if (why && *why) {
        char cause[160];
        snprintf(cause, sizeof cause, "closed %s %d %s", flav_name[t->flav], t->outbound,
                 why);
        CLOG(c, TERN_LOG_INFO, cause, "%s %s %s: closed: %s", flav_name[t->flav],
             conn_dir(t), t->peer, why);
    }
    if (!c->freeing)
        bp_agent_durable_forget(c->a, t);
    tern_io_stop(&t->io);
    tern_timer_stop(&t->timer);
    tern_timer_stop(&t->pause_tm);
    tern_timer_stop(&t->idle_tm);
    tern_timer_stop(&t->acked_tm);
    close(t->fd);
    listener *l = t->l;
    if (l) {
        l->nconns--;
        if (t->starved) {
            t->starved = 0;
            l->nstarved--;
        }
        conn_account(t); /* gives back what it held (dead: 0) */
    }
    if (t->prev)
        t->prev->next = t->next;
    else
        c->conns = t->next;
    if (t->next)
        t->next->prev = t->prev;
    tduct *d = t->d;
    if (d) {
        /* Whatever the peer did not acknowledge goes again, once reconnected. */
        d->conn = NULL;
        while (d->nfl) /* in sending order, so they queue again in it */
            fl_done(d, 0, BP_XMIT_FAILED);
        bp_outduct_set_up(d->od, false);
        duct_retry_later(d);
    }
    t->next = c->graveyard;
    c->graveyard = t;
    if (!c->reap_pending && tern_loop_defer(c->loop, reap, c) == 0)
        c->reap_pending = 1;
}

static void conn_up(tconn *t)
{
    t->up = 1;
    conn_progress(t);
    tduct *d = t->d;
    if (d) {
        d->backoff_ms = 0;
        d->failing = 0;
        TERN_INFO(t->c->lg, SUBSYS, "%s outduct %s: connected", flav_name[t->flav],
                  d->name);
        bp_outduct_set_up(d->od, true);
        if (d->waiting) {
            d->waiting = 0;
            bp_outduct_ready(d->od);
        }
    }
}

static void on_durable(void *ctx, uint64_t tid, uint64_t arg2)
{
    tconn *t = ctx;
    if (t->dead)
        return;
    sess_ack(t, tid, arg2 & ((1ull << 56) - 1), (uint8_t)(arg2 >> 56));
    if (sess_state(t) == TCPCL4_S_CLOSED) {
        /* the peer ended the session and this was the last answer owed */
        conn_flush(t);
        conn_close(t, "session ended");
        return;
    }
    conn_flush_soon(t); /* one flush for every acknowledgement a commit releases */
}

/* Hands a received bundle to the agent; 1 if it took it. */
static int take_bundle(tconn *t, const uint8_t *b, size_t len, int *rc_out)
{
    bp_tcp_cla *c = t->c;
    int rc = bp_agent_receive(c->a, b, len);
    *rc_out = rc;
    if (rc == TERN_EFULL || rc == -ENOMEM) {
        conn_pause(t); /* logged there, once */
        return 0;
    }
    conn_progress(t); /* a whole bundle came, taken or not */
    if (rc <= 0) {
        const char *why = rc < 0 ? tern_strerror(rc) : "empty";
        char cause[96];
        c->st.refused_in++;
        snprintf(cause, sizeof cause, "not taken %s", why);
        CLOG(c, TERN_LOG_WARN, cause, "%s from %s: bundle of %zu bytes not taken: %s",
             flav_name[t->flav], t->peer, len, why);
        return 0;
    }
    c->st.bundles_in++;
    return 1;
}

/* Takes a received bundle and acknowledges it once durable. -EAGAIN: the
 * store is full: the bundle is held (reading stops) and taken later. */
static int bundle_in(tconn *t, const tcpcl4_ev *e)
{
    bp_tcp_cla *c = t->c;
    int rc;
    if (!take_bundle(t, e->data, e->len, &rc)) {
        if (t->paused) { /* full: no refusal, so it is not sent again */
            t->hev = *e;
            t->has_held = 1;
            return -EAGAIN;
        }
        /* v3 has no "not acceptable": its refusal reasons stop at 3. A v3
         * peer without refusals still needs this bundle's answer, or every
         * later acknowledgement waits for it: the bundle arrived whole (the
         * agent dropped it and said why), so it is acknowledged, and
         * sending it again would only have it dropped again. */
        if (sess_refuse(t, e->tid,
                        t->s3 ? TCPCL4_REFUSE_NO_RESOURCES
                              : TCPCL4_REFUSE_NOT_ACCEPTABLE) == -ENOTSUP)
            sess_ack(t, e->tid, e->len, e->flags);
        return 0;
    }
    uint64_t mark = bp_agent_durable_mark(c->a);
    uint64_t arg2 = (uint64_t)e->len | ((uint64_t)e->flags << 56);
    rc = bp_agent_durable_wait(c->a, mark, on_durable, t, e->tid, arg2);
    if (rc == 0)
        sess_ack(t, e->tid, e->len, e->flags);
    else if (rc < 0 && sess_refuse(t, e->tid, TCPCL4_REFUSE_NO_RESOURCES) == -ENOTSUP)
        /* unknown durability and no way to refuse: the sender keeps it only
         * if the session ends unacknowledged */
        conn_close(t, "cannot tell when a received bundle is durable");
    return 0;
}

/* Payload limits below this are not worth fragmenting to (a peer declaring
 * a tiny transfer MRU would make thousands of fragments of one bundle): such
 * bundles are deleted with their report instead. */
#define MRU_FRAG_MIN 4096

/* A TCPCLv4 session is up: the peer's transfer MRU bounds a whole bundle,
 * so the outduct fragments its bundles to fit (leaving room for their other
 * blocks, up to 4 KiB), unless the configuration set a smaller limit. */
static void duct_learns_mru(tduct *d, tconn *t)
{
    uint64_t mru = tcpcl4_sess_peer_xfer_mru(t->s);
    /* Bundles that may not be fragmented are refused above it when they
     * are sent (bp_agent_send), not deleted when they reach the session. */
    char what[TCPCL4_NODE_ID_MAX + 96];
    const char *id = tcpcl4_sess_peer_node_id(t->s);
    snprintf(what, sizeof what, "the %" PRIu64 "-byte transfer MRU of the TCPCL peer %s",
             mru, *id ? id : t->peer);
    bp_outduct_set_max_bundle(d->od, mru > SIZE_MAX ? SIZE_MAX : (size_t)mru, what);
    if (!d->cfg_known) {
        bp_outduct_info(d->od, NULL, NULL, NULL, &d->cfg_max_payload);
        d->cfg_known = 1;
    }
    uint64_t room = mru / 4 < 4096 ? mru / 4 : 4096;
    uint64_t max = mru - room;
    if (max > SIZE_MAX)
        max = SIZE_MAX;
    if (max < MRU_FRAG_MIN || (d->cfg_max_payload && d->cfg_max_payload <= max))
        max = d->cfg_max_payload;
    bp_outduct_set_max_payload(d->od, (size_t)max);
}

/* An outduct's session is up: the peer's node ID meets the plans. A dtn
 * node that no plan names gets one through this outduct (bundles for
 * dtn://name/... then leave here: a dtn node ID has no ipn node number for
 * the ipn plans or contact graph to route by); a plan that names another
 * outduct for the peer's node is kept and said. */
static void duct_meets_peer(tduct *d, tconn *t)
{
    bp_tcp_cla *c = d->c;
    const char *why, *text;
    uint64_t node;
    char id[TCPCL4_NODE_ID_MAX + 2];
    int kind;
    if (t->s3) { /* v3: the EID of the contact header */
        text = tcpcl3_sess_peer_eid(t->s3);
        kind = tcpcl4_node_id_check((const uint8_t *)text, strlen(text), &node, id,
                                    sizeof id, &why);
    } else {
        kind = tcpcl4_sess_peer_node_kind(t->s);
        node = tcpcl4_sess_peer_node(t->s);
        snprintf(id, sizeof id, "%s", tcpcl4_sess_peer_node_id(t->s));
    }
    const char *proto = NULL, *duct = NULL;
    bp_outduct *planned = NULL;
    if (kind == TCPCL4_NODE_IPN) {
        planned = bp_egress_plan_duct(c->a, node);
    } else if (kind == TCPCL4_NODE_DTN) {
        char name[TCPCL4_NODE_ID_MAX + 2]; /* "//name" of "dtn://name/" */
        snprintf(name, sizeof name, "%.*s", (int)(strlen(id) - 5), id + 4);
        bool has_plan;
        planned = bp_egress_plan_duct_dtn(c->a, name, &has_plan);
        if (!has_plan) {
            int rc = bp_egress_plan_add_dtn(c->a, name, "tcp", d->name);
            if (rc == 0)
                TERN_INFO(c->lg, SUBSYS,
                          "tcp outduct %s: the peer is %s, which no plan names: bundles "
                          "for %s... leave through this outduct",
                          d->name, id, id);
            else
                TERN_WARN(c->lg, SUBSYS, "tcp outduct %s: no route for peer %s: %s",
                          d->name, id, tern_strerror(rc));
            return;
        }
    }
    if (planned && planned != d->od) {
        bp_outduct_info(planned, &proto, &duct, NULL, NULL);
        TERN_INFO(c->lg, SUBSYS,
                  "tcp outduct %s: the peer is %s, whose plan names outduct %s/%s: "
                  "bundles for it keep going there",
                  d->name, id, proto, duct);
    }
}

static void tcp_events(tconn *t)
{
    bp_tcp_cla *c = t->c;
    tcpcl4_ev e;
    tduct *d = t->d;
    while (!t->dead && sess_event(t, &e) == 0) {
        switch (e.kind) {
        case TCPCL4_EV_UP:
            if (t->s3)
                TERN_DEBUG(c->lg, SUBSYS, "tcp (v3) session with %s (%s): keepalive %u s",
                           t->peer, tcpcl3_sess_peer_eid(t->s3),
                           tcpcl3_sess_keepalive(t->s3));
            else
                TERN_DEBUG(c->lg, SUBSYS,
                           "tcp session with %s (%s): keepalive %u s, "
                           "segment MRU %" PRIu64 ", transfer MRU %" PRIu64,
                           t->peer,
                           *tcpcl4_sess_peer_node_id(t->s)
                               ? tcpcl4_sess_peer_node_id(t->s)
                               : "no node ID",
                           tcpcl4_sess_keepalive(t->s), tcpcl4_sess_peer_seg_mru(t->s),
                           tcpcl4_sess_peer_xfer_mru(t->s));
            if (d && !t->s3)
                duct_learns_mru(d, t);
            else if (d) /* TCPCLv3 declares no limit */
                bp_outduct_set_max_bundle(d->od, 0, NULL);
            conn_up(t);
            if (d && !t->dead)
                duct_meets_peer(d, t);
            break;
        case TCPCL4_EV_BUNDLE:
            if (bundle_in(t, &e) == -EAGAIN)
                return; /* held: the rest waits with it until there is room */
            break;
        case TCPCL4_EV_ACKED:
        case TCPCL4_EV_REFUSED:
            /* v3 without acknowledgements "acknowledges" when queued: such
             * bundles are done once the kernel took them (conn_flush) */
            if (!d || by_bytes(t))
                break;
            conn_progress(t);
            for (size_t i = 0; i < d->nfl; i++)
                if (d->fl[i].key == e.tid) {
                    int ok =
                        e.kind == TCPCL4_EV_ACKED || e.reason == TCPCL4_REFUSE_COMPLETED;
                    if (!ok)
                        CLOG(c, TERN_LOG_WARN, tcpcl4_refuse_name(e.reason),
                             "tcp outduct %s: peer refused a bundle: %s", d->name,
                             tcpcl4_refuse_name(e.reason));
                    if (ok)
                        c->st.bundles_out++;
                    fl_done(d, i, ok ? BP_XMIT_OK : BP_XMIT_FAILED);
                    break;
                }
            duct_maybe_ready(d);
            break;
        case TCPCL4_EV_TERM:
            /* no new transfers, while the answers still owed go out */
            t->up = 0;
            if (e.by_peer) {
                char cause[64];
                snprintf(cause, sizeof cause, "ends %u", e.reason);
                CLOG(c, TERN_LOG_INFO, cause,
                     "tcp session with %s ends (%s, by the peer)", t->peer,
                     tcpcl4_term_name(e.reason));
            } else { /* why is logged where it was decided */
                TERN_DEBUG(c->lg, SUBSYS, "tcp session with %s ends (%s, by us)", t->peer,
                           tcpcl4_term_name(e.reason));
            }
            break;
        case TCPCL4_EV_REJECTED:
            CLOG(c, TERN_LOG_WARN, "rejected", "tcp peer %s rejected our %s (reason %u)",
                 t->peer, tcpcl4_type_name(e.rejected), e.reason);
            break;
        }
    }
}

/* stcp / mtcp input: frames bundles out of the stream. */
static int frame_input(tconn *t)
{
    tcl_buf *r = &t->rx;
    while (r->off < r->len) {
        const uint8_t *data;
        size_t len, used = 0;
        uint64_t max = t->o.xfer_mru;
        int rc =
            t->flav == F_STCP
                ? stcp_decode(r->p + r->off, r->len - r->off, max, &data, &len, &used)
                : mtcp_decode(r->p + r->off, r->len - r->off, max, &data, &len, &used);
        if (rc == TERN_ETRUNCATED) {
            /* room for the whole bundle at once: growing by doubling copies
             * it at every size and leaves the freed copies resident */
            if (used > r->len - r->off &&
                tcl__buf_reserve(r, used - (r->len - r->off)) < 0) {
                conn_close(t, "out of memory");
                return -ENOMEM;
            }
            break;
        }
        if (rc < 0) {
            char why[160];
            if (rc == TERN_EOVERFLOW)
                snprintf(why, sizeof why,
                         "peer broke the %s framing (bundle longer than xfermru=%" PRIu64
                         ")",
                         flav_name[t->flav], max);
            else
                snprintf(why, sizeof why, "peer broke the %s framing (%s)",
                         flav_name[t->flav], "not a CBOR byte string");
            t->c->st.protocol_errors++;
            CLOG(t->c, TERN_LOG_WARN, why, "dropping %s peer %s: %s", flav_name[t->flav],
                 t->peer, why);
            conn_close(t, NULL);
            return rc;
        }
        int trc;
        if (len && !take_bundle(t, data, len, &trc) && t->paused)
            return 0; /* kept in rx: taken when the store has room */
        r->off += used;
    }
    if (r->off == r->len) {
        r->off = r->len = 0;
        tcl__buf_trim(r, TCL_BUF_KEEP);
    }
    return 0;
}

/* Input for the connection: b[0..n), or (b NULL) n bytes read straight
 * into the session's receive buffer (sess_rxbuf). */
static void conn_input(tconn *t, const uint8_t *b, size_t n)
{
    if (t->flav == F_TCP && !has_sess(t)) {
        /* An induct: the contact header's version picks v4 or v3. */
        if (tcl__buf_put(&t->rx, b, n) < 0) {
            conn_close(t, "out of memory");
            return;
        }
        size_t have = t->rx.len - t->rx.off;
        const uint8_t *p = t->rx.p + t->rx.off;
        if (have < 5 && memcmp(p, "dtn!", have) == 0)
            return;
        int v3 = have >= 5 && memcmp(p, "dtn!", 4) == 0 && p[4] == TCPCL3_VERSION;
        if (sess_new(t, 0, v3) < 0) {
            conn_close(t, "out of memory");
            return;
        }
        t->rx.off = t->rx.len = 0;
        b = p;
        n = have;
    }
    if (t->flav == F_TCP) {
        int rc = !b      ? (t->s3 ? tcpcl3_sess_received(t->s3, n, now_ms(t->c))
                                  : tcpcl4_sess_received(t->s, n, now_ms(t->c)))
                 : t->s3 ? tcpcl3_sess_recv(t->s3, b, n, now_ms(t->c))
                         : tcpcl4_sess_recv(t->s, b, n, now_ms(t->c));
        tcp_events(t);
        if (t->dead)
            return;
        tduct *d = t->d;
        if (rc < 0 && d && t->s && tcpcl4_sess_peer_version(t->s) == TCPCL3_VERSION) {
            TERN_INFO(t->c->lg, SUBSYS,
                      "tcp outduct %s: the peer speaks TCPCLv3: falling back to it",
                      d->name);
            d->v3 = 1;
            d->backoff_ms = 0;
            conn_flush(t); /* our SESS_TERM (version mismatch), best effort */
            conn_close(t, NULL);
            return;
        }
        if (rc < 0) {
            t->c->st.protocol_errors++;
            CLOG(t->c, TERN_LOG_WARN, sess_error(t), "dropping tcp peer %s: %s", t->peer,
                 sess_error(t));
        }
        if (sess_state(t) == TCPCL4_S_CLOSED) {
            conn_flush(t); /* best effort: our SESS_TERM */
            conn_close(t, rc < 0 ? NULL : "session ended"); /* a drop is said above */
            return;
        }
        conn_flush(t);
        conn_arm(t);
    } else {
        if (tcl__buf_put(&t->rx, b, n) < 0) {
            conn_close(t, "out of memory");
            return;
        }
        frame_input(t);
    }
}

static void connected(tconn *t)
{
    t->connecting = 0;
    t->started_ns = tern_loop_now(t->c->loop);
    conn_progress(t);
    idle_arm(t);
    if (t->flav == F_TCP) {
        if (sess_new(t, 1, t->d->v3) < 0) {
            conn_close(t, "out of memory");
            return;
        }
        conn_flush(t);
        conn_arm(t);
    } else {
        tern_timer_stop(&t->timer);
        conn_up(t);
        conn_flush(t);
    }
}

static void on_conn_io(tern_io *w, int fd, unsigned events, void *arg)
{
    (void)w;
    tconn *t = arg;
    if (t->dead)
        return;
    if (t->connecting) {
        int err = 0;
        socklen_t el = sizeof err;
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el);
        if (err) {
            char why[128];
            snprintf(why, sizeof why, "connect: %s", strerror(err));
            t->c->st.connect_failures++;
            t->d->failing++;
            t->c->st.drops--; /* not a drop: it never came up */
            if (t->d->failing == 1)
                TERN_INFO(t->c->lg, SUBSYS, "%s outduct %s: %s (retrying)",
                          flav_name[t->flav], t->d->name, why);
            conn_close(t, NULL);
            return;
        }
        connected(t);
        return;
    }
    if (events & TERN_IO_WRITE)
        conn_flush(t);
    if (t->dead)
        return;
    if ((events & (TERN_IO_ERROR | TERN_IO_HUP)) && (t->paused || t->starved)) {
        /* reported whether or not input is watched: not reading, it would
         * come back on every turn of the loop */
        conn_close(t, "peer closed the connection");
        return;
    }
    if ((events & (TERN_IO_ERROR | TERN_IO_HUP)) ||
        ((events & TERN_IO_READ) && !t->paused && !t->starved)) {
        for (int round = 0; round < READ_ROUNDS && !t->dead && !t->paused && !t->starved;
             round++) {
            /* a TCPCL session's bytes go straight into its receive buffer */
            uint8_t *into = t->c->rbuf;
            size_t room = RBUF;
            int direct = t->flav == F_TCP && has_sess(t);
            if (direct) {
                into = t->s3 ? tcpcl3_sess_rxbuf(t->s3, RBUF, &room)
                             : tcpcl4_sess_rxbuf(t->s, RBUF, &room);
                if (!into) {
                    conn_close(t, "out of memory");
                    return;
                }
            }
            size_t allow = conn_allowance(t);
            if (allow == 0) {
                conn_account(t); /* waits: its induct's rxbuffer is used up */
                break;
            }
            if (room > allow)
                room = allow;
            ssize_t r = recv(fd, into, room, 0);
            if (r < 0) {
                if (errno == EINTR)
                    continue;
                if (errno == EAGAIN || errno == EWOULDBLOCK)
                    break;
                char why[128];
                snprintf(why, sizeof why, "recv: %s", strerror(errno));
                conn_close(t, why);
                return;
            }
            if (r == 0) {
                conn_close(t, "peer closed the connection");
                return;
            }
            t->c->st.bytes_in += (uint64_t)r;
            conn_moved(t, (size_t)r);
            conn_input(t, direct ? NULL : t->c->rbuf, (size_t)r);
            if (t->dead)
                return;
            conn_account(t);
            if ((size_t)r < room)
                break;
        }
    }
}

static tconn *conn_new(bp_tcp_cla *c, int flav, int fd, tduct *d)
{
    tconn *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->c = c;
    t->flav = flav;
    t->fd = fd;
    t->d = d;
    t->outbound = d != NULL;
    t->started_ns = tern_loop_now(c->loop);
    if (d)
        t->o = d->o;
    tern_timer_init(c->loop, &t->timer);
    tern_timer_init(c->loop, &t->pause_tm);
    tern_timer_init(c->loop, &t->idle_tm);
    tern_timer_init(c->loop, &t->acked_tm);
    if (tern_io_init(c->loop, &t->io, fd, on_conn_io, t) < 0) {
        free(t);
        return NULL;
    }
    t->next = c->conns;
    if (c->conns)
        c->conns->prev = t;
    c->conns = t;
    return t;
}

/* -------------------------------------------------------------- outducts */

static void duct_connect(tduct *d);

static void retry_cb(tern_timer *tm, void *arg)
{
    (void)tm;
    duct_connect(arg);
}

static void duct_retry_later(tduct *d)
{
    d->backoff_ms = d->backoff_ms ? d->backoff_ms * 2 : BACKOFF_MIN_MS;
    if (d->backoff_ms > BACKOFF_MAX_MS)
        d->backoff_ms = BACKOFF_MAX_MS;
    tern_timer_start(&d->retry, retry_cb, d, d->backoff_ms * 1000000u, 0);
}

static void duct_connect(tduct *d)
{
    bp_tcp_cla *c = d->c;
    int fd = socket(d->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        duct_retry_later(d);
        return;
    }
    sock_opts(fd);
    c->st.connects++;
    tconn *t = conn_new(c, d->flav, fd, d);
    if (!t) {
        close(fd);
        duct_retry_later(d);
        return;
    }
    addr_text(&d->addr, t->peer, sizeof t->peer);
    d->conn = t;
    int rc;
    do
        rc = connect(fd, (struct sockaddr *)&d->addr, d->alen);
    while (rc < 0 && errno == EINTR);
    if (rc < 0 && errno != EINPROGRESS) {
        char why[128];
        snprintf(why, sizeof why, "connect: %s", strerror(errno));
        c->st.connect_failures++;
        c->st.drops--;
        if (++d->failing == 1)
            TERN_INFO(c->lg, SUBSYS, "%s outduct %s: %s (retrying)", flav_name[d->flav],
                      d->name, why);
        conn_close(t, NULL);
        return;
    }
    t->connecting = 1;
    tern_io_start(&t->io, TERN_IO_WRITE);
    conn_arm(t);
}

static int open_duct(void *cla, bp_outduct *od, const char *name, const char *cmd,
                     void **duct)
{
    reg *r = cla;
    bp_tcp_cla *c = r->c;
    char what[128];
    snprintf(what, sizeof what, "outduct %s/%s", flav_name[r->flav], name);
    char want[16];
    snprintf(want, sizeof want, "%sclo", flav_name[r->flav]);
    size_t cl = cmd ? strcspn(cmd, " \t") : 0;
    int ours = cl == strlen(want) && strncmp(cmd, want, cl) == 0;
    if (cmd && *cmd && !ours)
        TERN_WARN(c->lg, SUBSYS, "%s: command '%s' is not '%s': ignored", what, cmd,
                  want);
    tduct *d = calloc(1, sizeof *d);
    if (!d)
        return -ENOMEM;
    int rc = parse_addr(c, name, what, 0, &d->addr, &d->alen);
    if (rc == 0)
        rc = parse_opts(c, what, ours ? cmd : NULL, 0, &d->o);
    if (rc) {
        free(d);
        return rc;
    }
    d->c = c;
    d->flav = r->flav;
    d->od = od;
    snprintf(d->name, sizeof d->name, "%s", name);
    tern_timer_init(c->loop, &d->retry);
    bp_outduct_set_up(od, false);
    if (d->flav == F_STCP) /* known from the start: a bundle's length is 32 bits */
        bp_outduct_set_max_bundle(od, UINT32_MAX, "STCP's 32-bit length prefix");
    duct_connect(d);
    *duct = d;
    return 0;
}

static void close_duct(void *cla, void *duct)
{
    (void)cla;
    tduct *d = duct;
    tern_timer_stop(&d->retry);
    d->nfl = 0; /* abandoned: the agent takes those bundles back */
    if (d->conn) {
        tconn *t = d->conn;
        t->d = NULL;
        d->conn = NULL;
        conn_close(t, "outduct closed");
    }
    free(d->fl);
    free(d);
}

static int send_bundle(void *cla, void *duct, const uint8_t *bundle, size_t len,
                       uint64_t xmit)
{
    (void)cla;
    tduct *d = duct;
    tconn *t = d->conn;
    if (!t || t->dead || !t->up || d->nfl >= MAX_INFLIGHT ||
        conn_pending(t) > MAX_PENDING_OUT) {
        d->waiting = 1;
        return -EAGAIN;
    }
    if (d->nfl == d->capfl) {
        size_t cap = d->capfl ? d->capfl * 2 : 32;
        inflight *p = realloc(d->fl, cap * sizeof *p);
        if (!p)
            return -ENOMEM;
        d->fl = p;
        d->capfl = cap;
    }
    uint64_t key;
    if (!d->nfl)
        conn_progress(t); /* the idle time of a session with bundles in flight starts */
    if (t->s3) {
        int rc = tcpcl3_sess_send(t->s3, bundle, len, &key);
        if (rc < 0)
            return rc;
        if (by_bytes(t)) { /* done when the kernel took its last byte */
            size_t l;
            sess_output(t, &l);
            key = t->written + l;
        }
    } else if (t->flav == F_TCP) {
        /* A large bundle goes out in place (it stays valid until its result
         * is reported, bp_cla_ops); small ones are cheaper copied, so that
         * one send() carries many. */
        int rc = len >= SEND_IN_PLACE_MIN ? tcpcl4_sess_send_ref(t->s, bundle, len, &key)
                                          : tcpcl4_sess_send(t->s, bundle, len, &key);
        if (rc == -EMSGSIZE) {
            CLOG(d->c, TERN_LOG_WARN, "peer xfer mru",
                 "tcp outduct %s: bundle of %zu bytes exceeds the peer's transfer "
                 "MRU %" PRIu64,
                 d->name, len, tcpcl4_sess_peer_xfer_mru(t->s));
            return -EMSGSIZE;
        }
        if (rc < 0)
            return rc;
    } else {
        uint8_t h[MTCP_HDR_MAX];
        size_t hl;
        if (t->flav == F_STCP) {
            if (stcp_encode_hdr(h, len) < 0)
                return -EMSGSIZE;
            hl = STCP_HDR_LEN;
        } else {
            hl = mtcp_encode_hdr(h, len);
        }
        if (tcl__buf_put(&t->tx, h, hl) < 0 || tcl__buf_put(&t->tx, bundle, len) < 0)
            return -ENOMEM;
        t->queued += hl + len;
        key = t->queued;
    }
    d->fl[d->nfl++] = (inflight){xmit, key};
    conn_flush_soon(t);
    if (t->s3 && !t->dead)
        tcp_events(t); /* v3 without acknowledgements "acks" at once: taken, ignored */
    return 0;
}

static const bp_cla_ops ops[F_N] = {
    {.protocol = "tcp",
     .outduct_open = open_duct,
     .outduct_close = close_duct,
     .send = send_bundle},
    {.protocol = "stcp",
     .outduct_open = open_duct,
     .outduct_close = close_duct,
     .send = send_bundle},
    {.protocol = "mtcp",
     .outduct_open = open_duct,
     .outduct_close = close_duct,
     .send = send_bundle},
};

/* --------------------------------------------------------------- inducts */

static void rest_cb(tern_timer *tm, void *arg)
{
    (void)tm;
    listener *l = arg;
    tern_io_start(&l->io, TERN_IO_READ);
}

/* Why a new connection from ss may not stay (NULL: it may): the induct's
 * maxconns, or its peerconns for that address. */
static const char *conn_refusal(const listener *l, const struct sockaddr_storage *ss,
                                char *why, size_t cap)
{
    if (l->nconns >= l->o.maxconns) {
        snprintf(why, cap, "%zu connections already (maxconns=%" PRIu64 ")", l->nconns,
                 l->o.maxconns);
        return "maxconns";
    }
    uint64_t same = 0;
    for (const tconn *t = l->c->conns; t; t = t->next)
        same += t->l == l && same_host(&t->addr, ss);
    if (same >= l->o.peerconns) {
        snprintf(why, cap,
                 "%" PRIu64 " connections from that address already "
                 "(peerconns=%" PRIu64 ")",
                 same, l->o.peerconns);
        return "peerconns";
    }
    return NULL;
}

static void on_accept(tern_io *w, int fd, unsigned events, void *arg)
{
    (void)w;
    (void)events;
    listener *l = arg;
    bp_tcp_cla *c = l->c;
    for (int i = 0; i < 16; i++) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        int cfd = accept4(fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (cfd < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return;
            CLOG(c, TERN_LOG_WARN, "accept", "%s induct %s: accept: %s",
                 flav_name[l->flav], l->name, strerror(errno));
            /* Out of descriptors (or another lasting error): the pending
             * connection stays queued and the socket readable, so rest
             * instead of spinning. */
            tern_io_stop(&l->io);
            tern_timer_start(&l->rest, rest_cb, l, ACCEPT_REST_MS * 1000000ull, 0);
            return;
        }
        char peer[80], why[128];
        const char *cap = conn_refusal(l, &ss, why, sizeof why);
        if (cap) {
            char cause[32];
            c->st.refused_conns++;
            addr_text(&ss, peer, sizeof peer);
            snprintf(cause, sizeof cause, "refused %s", cap);
            CLOG(c, TERN_LOG_WARN, cause, "%s induct %s: connection from %s refused: %s",
                 flav_name[l->flav], l->name, peer, why);
            close(cfd);
            continue;
        }
        sock_opts(cfd);
        tconn *t = conn_new(c, l->flav, cfd, NULL);
        if (!t) {
            close(cfd);
            continue;
        }
        c->st.accepted++;
        t->l = l;
        t->addr = ss;
        t->o = l->o;
        l->nconns++;
        conn_progress(t);
        idle_arm(t);
        addr_text(&ss, t->peer, sizeof t->peer);
        if (l->flav == F_TCP) {
            conn_arm(t); /* the session starts with the peer's contact header */
        } else {
            t->up = 1;
        }
        tern_io_start(&t->io, TERN_IO_READ);
        TERN_DEBUG(c->lg, SUBSYS, "%s induct %s: connection from %s", flav_name[l->flav],
                   l->name, t->peer);
    }
}

TERN_API int bp_tcp_cla_induct(bp_tcp_cla *c, const char *protocol, const char *addr,
                               const char *cmd, uint16_t *bound_port)
{
    int flav = -1;
    for (int i = 0; i < F_N; i++)
        if (strcmp(protocol, flav_name[i]) == 0)
            flav = i;
    if (flav < 0)
        return TERN_ENOTFOUND;
    char what[128];
    snprintf(what, sizeof what, "induct %s %s", protocol, addr);
    struct sockaddr_storage ss;
    socklen_t sl;
    int rc = parse_addr(c, addr, what, 1, &ss, &sl);
    if (rc)
        return rc;
    char want[16];
    snprintf(want, sizeof want, "%scli", protocol);
    size_t cl = cmd ? strcspn(cmd, " \t") : 0;
    int ours = cl == strlen(want) && strncmp(cmd, want, cl) == 0;
    if (cmd && *cmd && !ours)
        TERN_WARN(c->lg, SUBSYS, "%s: command '%s' is not '%s': ignored", what, cmd,
                  want);
    topts o;
    if ((rc = parse_opts(c, what, ours ? cmd : NULL, 1, &o)))
        return rc;
    listener **v = realloc(c->ls, (c->nls + 1) * sizeof *v);
    if (!v)
        return -ENOMEM;
    c->ls = v;
    listener *l = calloc(1, sizeof *l);
    if (!l)
        return -ENOMEM;
    l->c = c;
    l->flav = flav;
    l->o = o;
    tern_timer_init(c->loop, &l->rest);
    snprintf(l->name, sizeof l->name, "%s", addr);
    l->fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (l->fd < 0) {
        rc = -errno;
        goto fail_free;
    }
    int one = 1;
    setsockopt(l->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(l->fd, (struct sockaddr *)&ss, sl) != 0 || listen(l->fd, 64) != 0) {
        rc = -errno;
        TERN_ERROR(c->lg, SUBSYS, "%s: cannot listen: %s", what, strerror(errno));
        goto fail_close;
    }
    struct sockaddr_storage b;
    socklen_t bl = sizeof b;
    if (getsockname(l->fd, (struct sockaddr *)&b, &bl) != 0) {
        rc = -errno;
        goto fail_close;
    }
    l->port = ntohs(b.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&b)->sin6_port
                                            : ((struct sockaddr_in *)&b)->sin_port);
    if ((rc = tern_io_init(c->loop, &l->io, l->fd, on_accept, l)))
        goto fail_close;
    if ((rc = tern_io_start(&l->io, TERN_IO_READ)))
        goto fail_close;
    c->ls[c->nls++] = l;
    TERN_INFO(c->lg, SUBSYS, "%scli listening on %s (port %u)", protocol, addr, l->port);
    if (bound_port)
        *bound_port = l->port;
    return 0;
fail_close:
    close(l->fd);
fail_free:
    free(l);
    return rc;
}

/* ------------------------------------------------------------------ life */

TERN_API int bp_tcp_cla_new(bp_agent *a, tern_loop *loop, tern_log *lg, bp_tcp_cla **out)
{
    if (!a || !loop || !out)
        return -EINVAL;
    bp_tcp_cla *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    c->a = a;
    c->loop = loop;
    c->lg = lg;
    c->rbuf = malloc(RBUF);
    if (!c->rbuf) {
        free(c);
        return -ENOMEM;
    }
    for (int i = 0; i < F_N; i++) {
        c->regs[i] = (reg){c, i};
        int rc = bp_cla_register(a, &ops[i], &c->regs[i]);
        if (rc) {
            free(c->rbuf);
            free(c);
            return rc;
        }
    }
    *out = c;
    return 0;
}

TERN_API void bp_tcp_cla_stats(const bp_tcp_cla *c, bp_tcp_stats *st)
{
    *st = c->st;
    st->rx_held = 0;
    for (size_t i = 0; i < c->nls; i++)
        st->rx_held += c->ls[i]->held;
}

TERN_API void bp_tcp_cla_free(bp_tcp_cla *c)
{
    if (!c)
        return;
    c->freeing = 1;
    while (c->conns) {
        tconn *t = c->conns;
        t->d = NULL; /* the ducts are gone with the agent */
        conn_close(t, NULL);
    }
    if (c->reap_pending)
        tern_loop_defer_cancel(c->loop, reap, c);
    reap(c->loop, c);
    for (size_t i = 0; i < c->nls; i++) {
        tern_timer_stop(&c->ls[i]->rest);
        tern_io_stop(&c->ls[i]->io);
        close(c->ls[i]->fd);
        free(c->ls[i]);
    }
    free(c->ls);
    free(c->rbuf);
    free(c);
}
