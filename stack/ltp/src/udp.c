/* LTP over UDP: the udplso / udplsi link service (see ltp_udp.h).
 *
 * Outbound: each peer has a FIFO of segments, copied into 1 MiB chunks that
 * are recycled (no allocation per segment). Queues are drained with sendmmsg
 * at the end of the loop iteration (deferred work) or as soon as a peer has a
 * full batch, limited by the peer's token bucket. A large segment for a peer
 * with nothing queued and no rate goes out at once with one sendto: for
 * 64 kB segments, copying into the queue costs more than the system call
 * that batching saves.
 *
 * Inbound: recvmmsg into preallocated buffers, a few batches per wakeup,
 * each datagram handed to ltp_engine_receive.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ltp_udp.h"
#include "tern/clock.h"
#include "tern/pace.h"
#include "tern/sdnv.h"

#define CHUNK_SIZE  (1u << 20)
#define CHUNKS_KEPT 32
#define RBUF_SIZE   65536
#define RECV_ROUNDS 8
#define DIRECT_MIN                                                                       \
    16384 /* segments at least this big skip the queue when it is empty                  \
           */
#define MAX_DGRAM4       65507
#define MAX_DGRAM6       65527
#define ENOBUFS_RETRY_NS 1000000ull

struct chunk {
    struct chunk *next;
    size_t rd, wr;
    uint8_t data[];
};

/* Queue entry header; the segment follows, entries are 8-byte aligned. */
struct ent {
    uint32_t len;
    uint32_t pad;
};

struct peer {
    struct ltp_udp *u;
    uint64_t engine;
    struct sockaddr_storage addr;
    socklen_t alen;
    uint64_t lso_rate;  /* bits/s from udplso (0: unlimited) */
    uint64_t link_rate; /* bits/s of the contact in effect (0: none known) */
    tern_pace pace;     /* at the lower of the two */
    /* Two lanes: 0 for reports, acknowledgments and cancels, which go
     * first so that repair is not stuck behind a window of data on a slow
     * link; 1 for data segments, checkpoints included (a checkpoint must not
     * overtake the data it covers). */
    struct lane {
        struct chunk *head, *tail;
        size_t count;
    } lane[2];
    size_t qcount, qbytes; /* both lanes */
    tern_timer timer;      /* token bucket refill */
    int learned;           /* address taken from received segments */
    int held;              /* the link to the peer is down: keep the queue */
};

struct ltp_udp {
    tern_loop *loop;
    tern_log *lg;
    ltp_engine *eng;
    ltp_udp_cfg cfg;
    int fd, family;
    unsigned port;
    size_t max_dgram;
    tern_io io;
    int blocked; /* 1: waiting for EPOLLOUT, 2: waiting after ENOBUFS */
    int defer_pending;
    tern_timer retry;
    struct peer **peers;
    size_t npeers;
    struct peer *last;
    struct chunk *free_chunks;
    unsigned nfree;
    struct mmsghdr *smsg;
    struct iovec *siov;
    uint8_t *slane; /* lane of each datagram in the batch being sent */
    struct mmsghdr *rmsg;
    struct iovec *riov;
    uint8_t *rbuf;
    struct sockaddr_storage *rname;
    int learn;
    ltp_udp_stats st;
    /* the engine's refusal counters as last seen, and the last refusal of
     * each kind, said for tern status */
    uint64_t seen_malformed, seen_unknown;
    char last_malformed[256], last_unknown[256];
};

/* ------------------------------------------------------------ parsing */

static void seterr(char *err, size_t errcap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void seterr(char *err, size_t errcap, const char *fmt, ...)
{
    if (!err || !errcap)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errcap, fmt, ap);
    va_end(ap);
}

/* Splits s into whitespace-separated words, copied into buf; w has room for
 * max + 1 words and a return of max + 1 means "more than max". */
static int split_words(const char *s, char *buf, size_t bufcap, char **w, int max)
{
    size_t n = strlen(s);
    if (n >= bufcap)
        return -1;
    memcpy(buf, s, n + 1);
    int k = 0;
    char *p = buf;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
            p++;
        if (!*p)
            break;
        w[k++] = p;
        while (*p && *p != ' ' && *p != '\t' && *p != '\n' && *p != '\r')
            p++;
        if (*p)
            *p++ = '\0';
        if (k == max + 1)
            break;
    }
    return k;
}

static int parse_u64(const char *s, uint64_t *v)
{
    if (!*s)
        return -1;
    uint64_t x = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        unsigned d = (unsigned)(*p - '0');
        if (x > (UINT64_MAX - d) / 10)
            return -1;
        x = x * 10 + d;
    }
    *v = x;
    return 0;
}

/* "{<host>|@}[:<port>]", "[v6]:port". what names the command in messages. */
static int parse_addr(const char *word, const char *what, int lsi, char *host,
                      size_t hostcap, unsigned *port, char *err, size_t errcap)
{
    const char *h = word, *ps = NULL;
    size_t hl;
    if (word[0] == '[') {
        const char *close = strchr(word, ']');
        if (!close) {
            seterr(err, errcap,
                   "%s: unterminated IPv6 literal in '%s' (expected [<address>]:<port>)",
                   what, word);
            return TERN_ESYNTAX;
        }
        h = word + 1;
        hl = (size_t)(close - h);
        if (close[1] == ':') {
            ps = close + 2;
        } else if (close[1]) {
            seterr(err, errcap, "%s: expected ':<port>' after ']' in '%s'", what, word);
            return TERN_ESYNTAX;
        }
    } else {
        const char *c = strchr(word, ':');
        if (c && strchr(c + 1, ':')) {
            seterr(err, errcap,
                   "%s: IPv6 address in '%s' must be in brackets, as in [::1]:1113", what,
                   word);
            return TERN_ESYNTAX;
        }
        hl = c ? (size_t)(c - word) : strlen(word);
        if (c)
            ps = c + 1;
    }
    if (hl == 0) {
        seterr(err, errcap, "%s: missing host in '%s' (expected <host>[:<port>])", what,
               word);
        return TERN_ESYNTAX;
    }
    uint64_t pv = LTP_UDP_DEFAULT_PORT;
    if (ps && (parse_u64(ps, &pv) || pv > 65535 || (!lsi && pv == 0))) {
        seterr(err, errcap, "%s: bad port '%s' in '%s' (expected %s)", what, ps, word,
               lsi ? "0-65535" : "1-65535");
        return TERN_ESYNTAX;
    }
    if (hl == 1 && h[0] == '@') {
        h = lsi ? "0.0.0.0" : "127.0.0.1";
        hl = strlen(h);
    }
    if (hl >= hostcap) {
        seterr(err, errcap, "%s: host name too long in '%s'", what, word);
        return TERN_ESYNTAX;
    }
    memcpy(host, h, hl);
    host[hl] = '\0';
    *port = (unsigned)pv;
    return 0;
}

#define LSO_USAGE "'udplso {<host>|@}[:<port>] [<rate bits/s>] [<engine>]'"
#define LSI_USAGE "'udplsi {<host>|@}[:<port>]'"

TERN_API int ltp_udp_parse_lso(const char *cmd, char *host, size_t hostcap,
                               unsigned *port, uint64_t *rate_bps, char *err,
                               size_t errcap)
{
    char buf[1024], *w[5];
    int n = cmd ? split_words(cmd, buf, sizeof buf, w, 4) : 0;
    if (n < 0) {
        seterr(err, errcap, "udplso: command too long");
        return TERN_ESYNTAX;
    }
    if (n == 0 || strcmp(w[0], "udplso") != 0) {
        seterr(err, errcap, "expected " LSO_USAGE ", got '%s'", cmd ? cmd : "");
        return TERN_ESYNTAX;
    }
    if (n == 1) {
        seterr(err, errcap, "udplso: missing address (expected " LSO_USAGE ")");
        return TERN_ESYNTAX;
    }
    if (n > 4) {
        seterr(err, errcap,
               "udplso: unexpected '%s' after the engine number (expected " LSO_USAGE ")",
               w[4]);
        return TERN_ESYNTAX;
    }
    int rc = parse_addr(w[1], "udplso", 0, host, hostcap, port, err, errcap);
    if (rc)
        return rc;
    uint64_t rate = 0, eng;
    if (n >= 3 && parse_u64(w[2], &rate)) {
        seterr(err, errcap,
               "udplso: bad rate '%s' (expected bits per second, a whole number)", w[2]);
        return TERN_ESYNTAX;
    }
    if (n == 4 && parse_u64(w[3], &eng)) {
        seterr(err, errcap, "udplso: bad engine number '%s' (expected a whole number)",
               w[3]);
        return TERN_ESYNTAX;
    }
    if (rate_bps)
        *rate_bps = rate;
    return 0;
}

TERN_API int ltp_udp_parse_lsi(const char *cmd, char *host, size_t hostcap,
                               unsigned *port, char *err, size_t errcap)
{
    char buf[1024], *w[3];
    int n = cmd ? split_words(cmd, buf, sizeof buf, w, 2) : 0;
    if (n < 0) {
        seterr(err, errcap, "udplsi: command too long");
        return TERN_ESYNTAX;
    }
    if (n == 0 || strcmp(w[0], "udplsi") != 0) {
        seterr(err, errcap, "expected " LSI_USAGE ", got '%s'", cmd ? cmd : "");
        return TERN_ESYNTAX;
    }
    if (n == 1) {
        seterr(err, errcap, "udplsi: missing address (expected " LSI_USAGE ")");
        return TERN_ESYNTAX;
    }
    if (n > 2) {
        seterr(err, errcap,
               "udplsi: unexpected '%s' after the address (expected " LSI_USAGE ")",
               w[2]);
        return TERN_ESYNTAX;
    }
    return parse_addr(w[1], "udplsi", 1, host, hostcap, port, err, errcap);
}

/* Resolves host:port (numeric service) for family (AF_UNSPEC: any). */
static int resolve(const char *host, unsigned port, int family, int passive,
                   struct sockaddr_storage *ss, socklen_t *len)
{
    char ps[8];
    snprintf(ps, sizeof ps, "%u", port);
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = family;
    hints.ai_socktype = SOCK_DGRAM;
    hints.ai_protocol = IPPROTO_UDP;
    hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0) |
                     (family == AF_INET6 ? AI_V4MAPPED : 0);
    int rc = getaddrinfo(host, ps, &hints, &res);
    if (rc != 0 || !res) {
        if (res)
            freeaddrinfo(res);
        if (rc == EAI_FAMILY || rc == EAI_ADDRFAMILY)
            return -EAFNOSUPPORT;
        if (rc == EAI_SYSTEM)
            return errno ? -errno : TERN_ENOTFOUND;
        return TERN_ENOTFOUND;
    }
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    *len = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

/* ------------------------------------------------------------- queues */

static struct chunk *chunk_get(struct ltp_udp *u)
{
    struct chunk *c = u->free_chunks;
    if (c) {
        u->free_chunks = c->next;
        u->nfree--;
    } else {
        c = malloc(sizeof *c + CHUNK_SIZE);
        if (!c)
            return NULL;
    }
    c->next = NULL;
    c->rd = c->wr = 0;
    return c;
}

static void chunk_put(struct ltp_udp *u, struct chunk *c)
{
    if (u->nfree >= CHUNKS_KEPT) {
        free(c);
        return;
    }
    c->next = u->free_chunks;
    u->free_chunks = c;
    u->nfree++;
}

static size_t ent_size(size_t len)
{
    return (sizeof(struct ent) + len + 7) & ~(size_t)7;
}

static int seg_lane(const uint8_t *seg, size_t len)
{
    return len && (seg[0] & 0x0f) >= LTP_RS ? 0 : 1;
}

/* Room for a segment of up to len bytes at the tail of lane which of p:
 * where it is to be written, not yet queued (q_commit queues it). */
static uint8_t *q_reserve(struct ltp_udp *u, struct peer *p, int which, size_t len)
{
    size_t need = ent_size(len);
    struct lane *l = &p->lane[which];
    struct chunk *c = l->tail;
    if (!c || c->wr + need > CHUNK_SIZE) {
        struct chunk *nc = chunk_get(u);
        if (!nc)
            return NULL;
        if (c)
            c->next = nc;
        else
            l->head = nc;
        l->tail = c = nc;
    }
    return (uint8_t *)((struct ent *)(c->data + c->wr) + 1);
}

/* Queues the len-byte segment written where q_reserve said. */
static void q_commit(struct ltp_udp *u, struct peer *p, int which, size_t len)
{
    struct lane *l = &p->lane[which];
    struct chunk *c = l->tail;
    struct ent *e = (struct ent *)(c->data + c->wr);
    e->len = (uint32_t)len;
    c->wr += ent_size(len);
    l->count++;
    p->qcount++;
    p->qbytes += len;
    u->st.queued_now++;
    u->st.queued_bytes_now += len;
    if (u->st.queued_bytes_now > u->st.queued_bytes_max)
        u->st.queued_bytes_max = u->st.queued_bytes_now;
}

static int q_push(struct ltp_udp *u, struct peer *p, const uint8_t *seg, size_t len)
{
    int which = seg_lane(seg, len);
    uint8_t *at = q_reserve(u, p, which, len);
    if (!at)
        return -ENOMEM;
    memcpy(at, seg, len);
    q_commit(u, p, which, len);
    return 0;
}

static void q_pop(struct ltp_udp *u, struct peer *p, int which)
{
    struct lane *l = &p->lane[which];
    struct chunk *c = l->head;
    struct ent *e = (struct ent *)(c->data + c->rd);
    c->rd += ent_size(e->len);
    l->count--;
    p->qcount--;
    p->qbytes -= e->len;
    u->st.queued_now--;
    u->st.queued_bytes_now -= e->len;
    if (c->rd == c->wr) {
        if (c == l->tail) {
            c->rd = c->wr = 0;
        } else {
            l->head = c->next;
            chunk_put(u, c);
        }
    }
}

static void q_clear(struct ltp_udp *u, struct peer *p)
{
    for (int w = 0; w < 2; w++) {
        while (p->lane[w].count)
            q_pop(u, p, w);
        if (p->lane[w].head)
            chunk_put(u, p->lane[w].head);
        p->lane[w].head = p->lane[w].tail = NULL;
    }
}

/* ------------------------------------------------------------ sending */

static void update_io(struct ltp_udp *u)
{
    unsigned want = (u->eng ? TERN_IO_READ : 0) | (u->blocked == 1 ? TERN_IO_WRITE : 0);
    if (!want) {
        tern_io_stop(&u->io);
        return;
    }
    if (!tern_io_is_active(&u->io) || u->io.events != want) {
        int rc = tern_io_start(&u->io, want);
        if (rc)
            TERN_ERROR(u->lg, "ltp-udp", "cannot watch the socket: %s",
                       tern_strerror(rc));
    }
}

static void flush_peer(struct ltp_udp *u, struct peer *p);
static void pace_update(struct ltp_udp *u, struct peer *p);

static void rate_fire(tern_timer *t, void *arg)
{
    struct peer *p = arg;
    flush_peer(p->u, p);
}

static void retry_fire(tern_timer *t, void *arg)
{
    struct ltp_udp *u = arg;
    u->blocked = 0;
    ltp_udp_flush(u);
}

static void flush_peer(struct ltp_udp *u, struct peer *p)
{
    while (p->qcount && !u->blocked && !p->held) {
        if (p->pace.rate_bps) {
            if (tern_timer_is_active(&p->timer))
                return;
            uint64_t ns = tern_pace_wait_ns(&p->pace, tern_loop_now(u->loop));
            if (ns) {
                u->st.rate_waits++;
                tern_timer_start(&p->timer, rate_fire, p, ns, 0);
                return;
            }
        }
        /* Build a batch: the control lane first, then data. */
        unsigned cnt = 0;
        double budget = p->pace.tokens;
        for (int w = 0; w < 2 && cnt < u->cfg.batch; w++) {
            struct lane *l = &p->lane[w];
            struct chunk *c = l->head;
            size_t off = c ? c->rd : 0, taken = 0;
            while (cnt < u->cfg.batch && taken < l->count) {
                if (off == c->wr) {
                    c = c->next;
                    off = c->rd;
                }
                struct ent *e = (struct ent *)(c->data + off);
                u->siov[cnt].iov_base = e + 1;
                u->siov[cnt].iov_len = e->len;
                u->slane[cnt] = (uint8_t)w;
                struct msghdr *m = &u->smsg[cnt].msg_hdr;
                m->msg_name = &p->addr;
                m->msg_namelen = p->alen;
                m->msg_iov = &u->siov[cnt];
                m->msg_iovlen = 1;
                m->msg_control = NULL;
                m->msg_controllen = 0;
                m->msg_flags = 0;
                off += ent_size(e->len);
                cnt++;
                taken++;
                if (p->pace.rate_bps) {
                    budget -= 8.0 * e->len;
                    if (budget <= 0)
                        break;
                }
            }
            if (p->pace.rate_bps && budget <= 0)
                break;
        }
        int n;
        do
            n = sendmmsg(u->fd, u->smsg, cnt, MSG_DONTWAIT);
        while (n < 0 && errno == EINTR);
        u->st.send_calls++;
        if (n < 0) {
            int err = errno;
            if (err == EAGAIN || err == EWOULDBLOCK) {
                u->st.would_block++;
                u->blocked = 1;
                update_io(u);
                return;
            }
            if (err == ENOBUFS) {
                u->st.would_block++;
                u->blocked = 2;
                tern_timer_start(&u->retry, retry_fire, u, ENOBUFS_RETRY_NS, 0);
                return;
            }
            /* The first datagram cannot be sent: drop it and go on. */
            u->st.send_errors++;
            if (u->st.send_errors == 1 || tern_log_enabled(u->lg, TERN_LOG_DEBUG))
                TERN_WARN(u->lg, "ltp-udp",
                          "send of %zu bytes to engine %llu failed: %s (dropped; further "
                          "failures are counted)",
                          u->siov[0].iov_len, (unsigned long long)p->engine,
                          strerror(err));
            n = 1;
        } else {
            for (int i = 0; i < n; i++) {
                u->st.dgrams_out++;
                u->st.bytes_out += u->siov[i].iov_len;
            }
        }
        for (int i = 0; i < n; i++) {
            tern_pace_spend(&p->pace, u->siov[i].iov_len);
            /* Checkpoints and reports start their timers as they leave. */
            if (u->eng &&
                ltp_seg_needs_tx_notice(u->siov[i].iov_base, u->siov[i].iov_len))
                ltp_engine_sent(u->eng, u->siov[i].iov_base, u->siov[i].iov_len);
            q_pop(u, p, u->slane[i]);
        }
    }
}

static void flush_all(struct ltp_udp *u)
{
    for (size_t i = 0; i < u->npeers && !u->blocked; i++)
        if (u->peers[i]->qcount)
            flush_peer(u, u->peers[i]);
}

static void defer_cb(tern_loop *loop, void *arg)
{
    struct ltp_udp *u = arg;
    u->defer_pending = 0;
    flush_all(u);
}

static struct peer *find_peer(struct ltp_udp *u, uint64_t engine)
{
    if (u->last && u->last->engine == engine)
        return u->last;
    for (size_t i = 0; i < u->npeers; i++)
        if (u->peers[i]->engine == engine)
            return u->last = u->peers[i];
    return NULL;
}

/* Sends or queues seg; in_place: seg is where ltp_udp_send_buf reserved
 * it, in lane 1, so queueing it only commits it. */
static int send_seg(struct ltp_udp *u, uint64_t peer, const uint8_t *seg, size_t len,
                    int in_place)
{
    struct peer *p = find_peer(u, peer);
    if (!p) {
        u->st.drop_no_peer++;
        return TERN_ENOTFOUND;
    }
    if (len > u->max_dgram) {
        u->st.drop_too_big++;
        return -EMSGSIZE;
    }
    if (!p->qcount && !u->blocked && !p->held && len >= DIRECT_MIN &&
        (!p->pace.rate_bps || (!tern_timer_is_active(&p->timer) &&
                               !tern_pace_wait_ns(&p->pace, tern_loop_now(u->loop))))) {
        ssize_t n;
        do
            n = sendto(u->fd, seg, len, MSG_DONTWAIT, (struct sockaddr *)&p->addr,
                       p->alen);
        while (n < 0 && errno == EINTR);
        u->st.send_calls++;
        if (n >= 0) {
            u->st.dgrams_out++;
            u->st.bytes_out += len;
            tern_pace_spend(&p->pace, len);
            if (u->eng && ltp_seg_needs_tx_notice(seg, len))
                ltp_engine_sent(u->eng, seg, len);
            return 0;
        }
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != ENOBUFS) {
            int err = errno;
            u->st.send_errors++;
            if (u->st.send_errors == 1)
                TERN_WARN(u->lg, "ltp-udp",
                          "send of %zu bytes to engine %llu failed: %s (dropped; further "
                          "failures are counted)",
                          len, (unsigned long long)peer, strerror(err));
            return -err;
        }
        u->st.would_block++; /* queue it; the flush below waits as needed */
    }
    if (p->qbytes + len > u->cfg.max_queue) {
        u->st.drop_queue_full++;
        if (u->st.drop_queue_full == 1)
            TERN_WARN(u->lg, "ltp-udp",
                      "queue to engine %llu is full (%zu bytes): segments dropped",
                      (unsigned long long)peer, p->qbytes);
        return -ENOBUFS;
    }
    if (in_place) {
        q_commit(u, p, 1, len);
    } else {
        int rc = q_push(u, p, seg, len);
        if (rc)
            return rc;
    }
    if (p->qcount >= u->cfg.batch && !u->blocked)
        flush_peer(u, p);
    if (p->qcount && !u->defer_pending && !u->blocked &&
        !tern_timer_is_active(&p->timer)) {
        if (tern_loop_defer(u->loop, defer_cb, u) == 0)
            u->defer_pending = 1;
    }
    return 0;
}

TERN_API int ltp_udp_send(void *ctx, uint64_t peer, const uint8_t *seg, size_t len)
{
    return send_seg(ctx, peer, seg, len, 0);
}

TERN_API uint8_t *ltp_udp_send_buf(void *ctx, uint64_t peer, size_t len)
{
    struct ltp_udp *u = ctx;
    struct peer *p = find_peer(u, peer);
    /* the cases ltp_udp_send refuses go through it, to be counted there */
    if (!p || len > u->max_dgram || p->qbytes + len > u->cfg.max_queue)
        return NULL;
    return q_reserve(u, p, 1, len);
}

TERN_API int ltp_udp_send_commit(void *ctx, uint64_t peer, uint8_t *seg, size_t len)
{
    return send_seg(ctx, peer, seg, len, 1);
}

TERN_API int ltp_udp_hold(ltp_udp *u, uint64_t engine, int hold)
{
    struct peer *p = find_peer(u, engine);
    if (!p)
        return TERN_ENOTFOUND;
    p->held = hold ? 1 : 0;
    if (!p->held && p->qcount && !u->defer_pending &&
        tern_loop_defer(u->loop, defer_cb, u) == 0)
        u->defer_pending = 1;
    return 0;
}

TERN_API size_t ltp_udp_flush(ltp_udp *u)
{
    flush_all(u);
    return u->st.queued_now;
}

/* ---------------------------------------------------------- receiving */

static void clear_so_error(struct ltp_udp *u)
{
    int e = 0;
    socklen_t l = sizeof e;
    getsockopt(u->fd, SOL_SOCKET, SO_ERROR, &e, &l);
}

static struct peer *peer_new(struct ltp_udp *u, uint64_t engine)
{
    struct peer **np = realloc(u->peers, (u->npeers + 1) * sizeof *np);
    if (!np)
        return NULL;
    u->peers = np;
    struct peer *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->u = u;
    p->engine = engine;
    tern_timer_init(u->loop, &p->timer);
    u->peers[u->npeers++] = p;
    return p;
}

/* Segments a session's sender originates (data, CS, CAR) name the sending
 * engine: remember where they came from, for engines with no address. */
static void learn(struct ltp_udp *u, const uint8_t *seg, size_t len,
                  const struct sockaddr_storage *from, socklen_t fromlen)
{
    unsigned type = len ? seg[0] & 0x0fu : 99u;
    if (len < 2 || (seg[0] >> 4) != 0 || !(type <= 7 || type == 12 || type == 15))
        return;
    uint64_t engine;
    if (tern_sdnv_decode(seg + 1, len - 1, &engine) <= 0 || !engine)
        return;
    struct peer *p = find_peer(u, engine);
    if (p &&
        (!p->learned || (p->alen == fromlen && memcmp(&p->addr, from, fromlen) == 0)))
        return;
    /* Only engines the engine has a span for: a datagram naming any other
     * number would otherwise cost a peer entry each, without bound. */
    ltp_span_cfg sc;
    if (!p && (!u->eng || ltp_span_get(u->eng, engine, &sc) != 0))
        return;
    if (!p && !(p = peer_new(u, engine)))
        return;
    memcpy(&p->addr, from, fromlen);
    p->alen = fromlen;
    p->learned = 1;
    TERN_INFO(u->lg, "ltp-udp", "learned the address of engine %llu from its segments",
              (unsigned long long)engine);
}

/* The engine refused a datagram (rc < 0): if it counted it as malformed or
 * as from an engine without a span, keep what it was, from where and why. */
static void note_refused(struct ltp_udp *u, int rc, const uint8_t *seg, size_t len,
                         const struct sockaddr_storage *from, socklen_t fromlen)
{
    ltp_stats es;
    ltp_engine_stats(u->eng, &es);
    int malformed = es.malformed != u->seen_malformed,
        unknown = es.unknown_span != u->seen_unknown;
    u->seen_malformed = es.malformed;
    u->seen_unknown = es.unknown_span;
    if (!malformed && !unknown)
        return;
    char host[NI_MAXHOST] = "?", serv[NI_MAXSERV] = "?", when[TERN_DTN_ISO_BUFSZ];
    if (fromlen)
        getnameinfo((const struct sockaddr *)from, fromlen, host, sizeof host, serv,
                    sizeof serv, NI_NUMERICHOST | NI_NUMERICSERV);
    tern_dtn_format_iso(tern_clock_dtn_ms(tern_loop_clock(u->loop)), when, sizeof when);
    if (malformed) {
        char why[64];
        if (len && seg[0] >> 4)
            snprintf(why, sizeof why, "LTP version %u (only 0 exists)", seg[0] >> 4);
        else
            snprintf(why, sizeof why, "%s", tern_strerror(rc));
        snprintf(u->last_malformed, sizeof u->last_malformed,
                 "%zu bytes from %s:%s at %s: %s", len, host, serv, when, why);
    } else {
        uint64_t engine = 0;
        if (len > 1)
            tern_sdnv_decode(seg + 1, len - 1, &engine);
        snprintf(u->last_unknown, sizeof u->last_unknown,
                 "%zu bytes from %s:%s at %s: a session of engine %llu, which has no "
                 "span here",
                 len, host, serv, when, (unsigned long long)engine);
    }
}

static void on_io(tern_io *w, int fd, unsigned events, void *arg)
{
    struct ltp_udp *u = arg;
    if (events & TERN_IO_ERROR)
        clear_so_error(u);
    if ((events & TERN_IO_WRITE) && u->blocked == 1) {
        u->blocked = 0;
        update_io(u);
        flush_all(u);
    }
    if (!(events & (TERN_IO_READ | TERN_IO_ERROR)))
        return;
    for (int round = 0; round < RECV_ROUNDS && u->eng; round++) {
        int n;
        /* senders' addresses: for learning, and to name a refused one */
        for (unsigned i = 0; i < u->cfg.batch; i++) {
            u->rmsg[i].msg_hdr.msg_name = &u->rname[i];
            u->rmsg[i].msg_hdr.msg_namelen = sizeof u->rname[i];
        }
        do
            n = recvmmsg(fd, u->rmsg, u->cfg.batch, MSG_DONTWAIT, NULL);
        while (n < 0 && errno == EINTR);
        u->st.recv_calls++;
        if (n < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK) {
                u->st.recv_errors++;
                clear_so_error(u);
            }
            break;
        }
        for (int i = 0; i < n && u->eng; i++) {
            struct mmsghdr *m = &u->rmsg[i];
            if (m->msg_hdr.msg_flags & MSG_TRUNC) {
                u->st.drop_truncated++;
                continue;
            }
            u->st.dgrams_in++;
            u->st.bytes_in += m->msg_len;
            if (u->learn)
                learn(u, u->rbuf + (size_t)i * RBUF_SIZE, m->msg_len, &u->rname[i],
                      m->msg_hdr.msg_namelen);
            const uint8_t *seg = u->rbuf + (size_t)i * RBUF_SIZE;
            int rc = ltp_engine_receive(u->eng, seg, m->msg_len);
            if (rc < 0 && u->eng)
                note_refused(u, rc, seg, m->msg_len, &u->rname[i],
                             m->msg_hdr.msg_namelen);
        }
        if ((unsigned)n < u->cfg.batch)
            break;
    }
}

/* ------------------------------------------------------------ set up */

static void raise_buf(struct ltp_udp *u, int force_opt, int opt, size_t want,
                      const char *what, const char *sysctl, int *got)
{
    int v = want > INT_MAX / 2 ? INT_MAX / 2 : (int)want;
    if (setsockopt(u->fd, SOL_SOCKET, force_opt, &v, sizeof v) != 0)
        setsockopt(u->fd, SOL_SOCKET, opt, &v, sizeof v); /* capped at the sysctl */
    int g = 0;
    socklen_t l = sizeof g;
    getsockopt(u->fd, SOL_SOCKET, opt, &g, &l);
    *got = g;
    /* The kernel reports twice what it grants for data (the rest is overhead). */
    if ((size_t)g / 2 < u->cfg.warn_below && (size_t)g / 2 < want)
        TERN_WARN(
            u->lg, "ltp-udp",
            "UDP %s buffer is only %d bytes (asked for %zu): datagrams will be lost "
            "under load; raise %s (sysctl -w %s=%zu) or run with CAP_NET_ADMIN",
            what, g / 2, want, sysctl, sysctl, want);
}

TERN_API int ltp_udp_new(tern_loop *loop, const char *lsi, const ltp_udp_cfg *cfg,
                         tern_log *lg, ltp_udp **out)
{
    if (!loop || !lsi || !out)
        return -EINVAL;
    char host[256], err[256];
    unsigned port;
    int rc;
    const char *s = lsi;
    while (*s == ' ' || *s == '\t')
        s++;
    if (strncmp(s, "udplsi", 6) == 0 && (s[6] == ' ' || s[6] == '\t' || !s[6]))
        rc = ltp_udp_parse_lsi(s, host, sizeof host, &port, err, sizeof err);
    else
        rc = parse_addr(s, "udplsi", 1, host, sizeof host, &port, err, sizeof err);
    if (rc) {
        TERN_ERROR(lg, "ltp-udp", "%s", err);
        return rc;
    }
    struct ltp_udp *u = calloc(1, sizeof *u);
    if (!u)
        return -ENOMEM;
    u->loop = loop;
    u->lg = lg;
    u->fd = -1;
    if (cfg)
        u->cfg = *cfg;
    if (!u->cfg.rcvbuf)
        u->cfg.rcvbuf = 64u << 20;
    if (!u->cfg.sndbuf)
        u->cfg.sndbuf = 16u << 20;
    if (!u->cfg.max_queue)
        u->cfg.max_queue = 256u << 20;
    if (!u->cfg.batch)
        u->cfg.batch = 64;
    if (u->cfg.batch > 256)
        u->cfg.batch = 256;
    if (!u->cfg.warn_below)
        u->cfg.warn_below = 8u << 20;
    tern_timer_init(loop, &u->retry);

    struct sockaddr_storage ss;
    socklen_t sl;
    rc = resolve(host, port, AF_UNSPEC, 1, &ss, &sl);
    if (rc) {
        TERN_ERROR(lg, "ltp-udp", "udplsi: cannot resolve '%s': %s", host,
                   rc == TERN_ENOTFOUND ? "no such host" : tern_strerror(rc));
        goto fail;
    }
    u->family = ss.ss_family;
    u->max_dgram = u->family == AF_INET6 ? MAX_DGRAM6 : MAX_DGRAM4;
    u->fd = socket(u->family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_UDP);
    if (u->fd < 0) {
        rc = -errno;
        goto fail;
    }
    if (u->family == AF_INET6) {
        int off = 0; /* "[::]" also takes IPv4 peers (v4-mapped) */
        setsockopt(u->fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
    }
    if (bind(u->fd, (struct sockaddr *)&ss, sl) != 0) {
        rc = -errno;
        TERN_ERROR(lg, "ltp-udp", "udplsi: cannot bind %s:%u: %s", host, port,
                   strerror(errno));
        goto fail;
    }
    struct sockaddr_storage bound;
    socklen_t bl = sizeof bound;
    if (getsockname(u->fd, (struct sockaddr *)&bound, &bl) != 0) {
        rc = -errno;
        goto fail;
    }
    u->port =
        ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                          : ((struct sockaddr_in *)&bound)->sin_port);
    raise_buf(u, SO_RCVBUFFORCE, SO_RCVBUF, u->cfg.rcvbuf, "receive", "net.core.rmem_max",
              &u->st.rcvbuf);
    raise_buf(u, SO_SNDBUFFORCE, SO_SNDBUF, u->cfg.sndbuf, "send", "net.core.wmem_max",
              &u->st.sndbuf);

    size_t b = u->cfg.batch;
    u->smsg = calloc(b, sizeof *u->smsg);
    u->siov = calloc(b, sizeof *u->siov);
    u->slane = calloc(b, 1);
    u->rmsg = calloc(b, sizeof *u->rmsg);
    u->riov = calloc(b, sizeof *u->riov);
    u->rbuf = malloc(b * RBUF_SIZE);
    u->rname = calloc(b, sizeof *u->rname);
    if (!u->smsg || !u->siov || !u->slane || !u->rmsg || !u->riov || !u->rbuf ||
        !u->rname) {
        rc = -ENOMEM;
        goto fail;
    }
    for (size_t i = 0; i < b; i++) {
        u->riov[i].iov_base = u->rbuf + i * RBUF_SIZE;
        u->riov[i].iov_len = RBUF_SIZE;
        u->rmsg[i].msg_hdr.msg_iov = &u->riov[i];
        u->rmsg[i].msg_hdr.msg_iovlen = 1;
    }
    rc = tern_io_init(loop, &u->io, u->fd, on_io, u);
    if (rc)
        goto fail;
    TERN_INFO(lg, "ltp-udp", "udplsi bound to %s:%u (receive buffer %d, send buffer %d)",
              host, u->port, u->st.rcvbuf, u->st.sndbuf);
    *out = u;
    return 0;
fail:
    if (u->fd >= 0)
        close(u->fd);
    free(u->smsg);
    free(u->siov);
    free(u->slane);
    free(u->rmsg);
    free(u->riov);
    free(u->rbuf);
    free(u->rname);
    free(u);
    return rc;
}

TERN_API unsigned ltp_udp_port(const ltp_udp *u)
{
    return u->port;
}

TERN_API int ltp_udp_fd(const ltp_udp *u)
{
    return u->fd;
}

TERN_API int ltp_udp_add_peer(ltp_udp *u, uint64_t engine, const char *lso,
                              uint64_t rate_bps)
{
    if (!u || !lso || !engine)
        return -EINVAL;
    char host[256], err[256];
    unsigned port;
    uint64_t rate = 0;
    int rc;
    const char *s = lso;
    while (*s == ' ' || *s == '\t')
        s++;
    if (strncmp(s, "udplso", 6) == 0 && (s[6] == ' ' || s[6] == '\t' || !s[6]))
        rc = ltp_udp_parse_lso(s, host, sizeof host, &port, &rate, err, sizeof err);
    else
        rc = parse_addr(s, "udplso", 0, host, sizeof host, &port, err, sizeof err);
    if (rc) {
        TERN_ERROR(u->lg, "ltp-udp", "%s", err);
        return rc;
    }
    if (rate_bps)
        rate = rate_bps;
    struct sockaddr_storage ss;
    socklen_t sl;
    rc = resolve(host, port, u->family, 0, &ss, &sl);
    if (rc) {
        TERN_ERROR(u->lg, "ltp-udp", "udplso: cannot resolve '%s' for engine %llu: %s",
                   host, (unsigned long long)engine,
                   rc == TERN_ENOTFOUND ? "no such host" : tern_strerror(rc));
        return rc;
    }
    struct peer *p = NULL;
    for (size_t i = 0; i < u->npeers; i++)
        if (u->peers[i]->engine == engine)
            p = u->peers[i];
    if (!p && !(p = peer_new(u, engine)))
        return -ENOMEM;
    p->learned = 0;
    memcpy(&p->addr, &ss, sl);
    p->alen = sl;
    p->lso_rate = rate;
    pace_update(u, p);
    return 0;
}

/* The lower of the LSO's rate and the link's governs; going unlimited
 * sends what waited for tokens at once. */
static void pace_update(struct ltp_udp *u, struct peer *p)
{
    uint64_t r = tern_pace_min_rate(p->lso_rate, p->link_rate);
    if (r == p->pace.rate_bps)
        return;
    tern_pace_set(&p->pace, r, tern_loop_now(u->loop));
    if (tern_timer_is_active(&p->timer)) {
        tern_timer_stop(&p->timer);
        flush_peer(u, p);
    }
}

TERN_API int ltp_udp_set_link_rate(ltp_udp *u, uint64_t engine, uint64_t rate_bps)
{
    if (!u)
        return -EINVAL;
    struct peer *p = find_peer(u, engine);
    if (!p)
        return TERN_ENOTFOUND;
    p->link_rate = rate_bps;
    pace_update(u, p);
    return 0;
}

TERN_API int ltp_udp_learn(ltp_udp *u, int on)
{
    if (!u)
        return -EINVAL;
    u->learn = !!on;
    if (!on)
        for (unsigned i = 0; i < u->cfg.batch; i++) {
            u->rmsg[i].msg_hdr.msg_name = NULL;
            u->rmsg[i].msg_hdr.msg_namelen = 0;
        }
    return 0;
}

TERN_API int ltp_udp_attach(ltp_udp *u, ltp_engine *e)
{
    if (!u)
        return -EINVAL;
    u->eng = e;
    update_io(u);
    return 0;
}

TERN_API void ltp_udp_stats_get(const ltp_udp *u, ltp_udp_stats *st)
{
    *st = u->st;
}

TERN_API const char *ltp_udp_last_refused(const ltp_udp *u, int unknown_engine)
{
    return unknown_engine ? u->last_unknown : u->last_malformed;
}

TERN_API void ltp_udp_free(ltp_udp *u)
{
    if (!u)
        return;
    tern_io_stop(&u->io);
    tern_timer_stop(&u->retry);
    if (u->defer_pending)
        tern_loop_defer_cancel(u->loop, defer_cb, u);
    for (size_t i = 0; i < u->npeers; i++) {
        struct peer *p = u->peers[i];
        tern_timer_stop(&p->timer);
        q_clear(u, p);
        free(p);
    }
    free(u->peers);
    while (u->free_chunks) {
        struct chunk *c = u->free_chunks;
        u->free_chunks = c->next;
        free(c);
    }
    if (u->fd >= 0)
        close(u->fd);
    free(u->smsg);
    free(u->siov);
    free(u->slane);
    free(u->rmsg);
    free(u->riov);
    free(u->rbuf);
    free(u->rname);
    free(u);
}
