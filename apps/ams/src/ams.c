/* libams: ION's AMS API (ams.h) over the MIB (ams_mib.h), the module's
 * MAMS machine (ams_mod.h) and AAMS over UDP and TCP.
 *
 * Threads: a module's MAMS thread owns its MAMS socket, the AAMS stream
 * listener and the streams other modules opened to it; it runs the
 * ams_mod machine and turns what changes in the view into notices.
 * Best-effort messages are read by the thread that takes events
 * (ams_get_event reads the AAMS datagram socket itself, in batches), so a
 * message crosses no thread on its way to the application. mu guards the
 * machine, the view, the event queue and the declarations; publishing holds
 * it while it sends, so what it sends to matches one version of the view.
 *
 * Assured messages go over TCP, one connection per destination module,
 * each AAMS message behind a 4-byte big-endian length (Tern's framing). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "ams.h"
#include "ams_mib.h"
#include "ams_mod.h"
#include "ams_net.h"
#include "ams_rams.h"

#define QUEUE_MAX   200000 /* events held for the application at most */
#define RX_BATCH    64
#define TIN_MAX     256 /* streams into one module */
#define STREAM_HDR  4
#define DEFAULT_PRI 8
/* Coalescing (docs/ams.md): a message to a destination that had a datagram
 * (or stream write) within BUSY_NS waits, with others, for one datagram of
 * at most PEND_MAX bytes, sent when full or when its first message is
 * COALESCE_NS old (by the next publish or the MAMS thread). A message after
 * a quieter spell (2,500 a second and fewer to one destination) goes at
 * once. */
#define BUSY_NS     250000u
#define COALESCE_NS 200000u
#define PEND_MAX    8192u

/* ------------------------------------------------------------ errors */

static __thread char last_err[320];

__attribute__((format(printf, 2, 3))) static int fail(int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_err, sizeof last_err, fmt, ap);
    va_end(ap);
    return rc;
}

TERN_API const char *ams_last_error(void)
{
    return last_err;
}

static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ------------------------------------------------------------ events */

struct amsevtst {
    struct amsevtst *next;
    int type;
    /* AMS_MSG_EVT */
    int continuum, unit, module, subject, context, priority;
    unsigned char flow;
    AmsMsgType mtype;
    /* NOTICE_EVT */
    AmsStateType state;
    AmsChangeType change;
    int role, dcont, dunit;
    AmsSequence seq;
    AmsDiligence dil;
    /* USER_DEFINED_EVT */
    int code;
    int len;
    char *data;
    char bytes[];
};

static AmsEvent ev_new(int type, size_t len)
{
    AmsEvent e = calloc(1, sizeof *e + len + 1);
    if (!e)
        return NULL;
    e->type = type;
    e->data = e->bytes;
    e->len = (int)len;
    return e;
}

/* ------------------------------------------------------------ the module */

struct dest {
    mams_ep ep;
    int assured;
    int priority;
    unsigned char flow;
};

struct subj_cache {
    uint64_t version; /* of the view it was built from (0: never) */
    struct dest *d;
    size_t n, cap;
};

struct pend { /* messages waiting for one datagram (or one write) to ep */
    mams_ep ep;
    int assured;                /* to ep's stream, each message behind its length */
    uint64_t last_ns, first_ns; /* last datagram sent; first message waiting */
    size_t len;
    int n;
    uint8_t buf[PEND_MAX];
};

struct tout { /* a stream to another module */
    mams_ep ep;
    int fd;
};

struct tin { /* a stream from another module */
    int fd;
    uint8_t *buf;
    size_t len;
};

struct amssapst {
    ams_mib *mib;
    const ams_mib_venture *v;
    int cnbr, unit, role;
    int mams_fd, udp_fd, tcp_fd, wake_fd, ev_fd, ep_fd;
    mams_ep host;
    pthread_t thr;
    int thr_on;
    atomic_int stop;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    ams_mod *mod;
    int in, refused;
    int taking_assured;   /* take_msg is taking a stream's message */
    int signaled;         /* ev_fd is readable */
    const char *said[16]; /* causes of dropped input already logged */
    int nsaid;
    int reading;     /* the taking thread queues datagrams it reads itself */
    int tin_stalled; /* streams are not read: the queue is full */
    AmsEvent qh, qt;
    size_t qn, qbytes;       /* events queued, their content bytes */
    size_t qmax, qbytes_max; /* bounds (ams_set_queue_limit) */
    mams_rule *subs, *invs;
    size_t nsubs, ninvs;
    struct subj_cache *cache; /* by index in v->subjects */
    struct tout *tout;
    size_t ntout;
    struct pend **pend;
    size_t npend;
    int pending; /* some pend has messages waiting */
    struct tin tin[TIN_MAX];
    ams_module_stats st;
    /* event manager */
    pthread_t mgr;
    int mgr_on;
    atomic_int mgr_stop;
    AmsEventMgt rules;
    uint8_t sbuf[AAMS_HDR_LEN];
    uint8_t mbuf[MAMS_MAX_PDU];
};

static atomic_int last_continuum = -1;

/* A message space's pseudo-subject (-continuum): RAMS traffic. */
static int pseudo_ok(const AmsModule m, int subject)
{
    return subject < 0 && ams_mib_msgspace_get(m->v, -subject) != NULL;
}

/* Queues an event (mu held); priority events go first. */
/* Makes the pollable descriptor readable: the queue is not empty. */
static void signal_locked(AmsModule m)
{
    if (m->signaled || !m->qh)
        return;
    uint64_t one = 1;
    ssize_t w = write(m->ev_fd, &one, sizeof one);
    (void)w;
    m->signaled = 1;
}

static void push_locked(AmsModule m, AmsEvent e, int front)
{
    /* assured messages are never dropped: their streams stop being read
     * while the queue is full (the MAMS thread), which slows their senders */
    if ((m->qn >= m->qmax || m->qbytes >= m->qbytes_max) && e->type != USER_DEFINED_EVT &&
        !m->taking_assured) {
        m->st.dropped_queue_full++;
        free(e);
        return;
    }
    e->next = NULL;
    if (front) {
        e->next = m->qh;
        m->qh = e;
        if (!m->qt)
            m->qt = e;
    } else {
        if (m->qt)
            m->qt->next = e;
        else
            m->qh = e;
        m->qt = e;
    }
    m->qn++;
    m->qbytes += (size_t)e->len;
    if (!m->reading)
        signal_locked(m);
}

static void wake(AmsModule m);

static AmsEvent pop_locked(AmsModule m)
{
    AmsEvent e = m->qh;
    if (!e)
        return NULL;
    m->qh = e->next;
    if (!m->qh) {
        m->qt = NULL;
        if (m->signaled) { /* the queue is empty: no longer readable */
            uint64_t v;
            ssize_t r = read(m->ev_fd, &v, sizeof v);
            (void)r;
            m->signaled = 0;
        }
    }
    m->qn--;
    m->qbytes -= (size_t)e->len;
    e->next = NULL;
    if (m->tin_stalled && m->qn < m->qmax / 2 && m->qbytes <= m->qbytes_max / 2) {
        m->tin_stalled = 0;
        wake(m); /* the streams are read again */
    }
    return e;
}

/* ------------------------------------------------------------ the view's notices */

static void note(void *ctx, int kind, const mams_module *who, const mams_rule *r,
                 int reason)
{
    AmsModule m = ctx; /* mu held: the machine calls back from inside */
    AmsEvent e;
    switch (kind) {
    case AMS_NOTE_SELF_IN:
        m->in = 1;
        pthread_cond_broadcast(&m->cv);
        return;
    case AMS_NOTE_REFUSED:
        m->refused = reason ? reason : -1;
        pthread_cond_broadcast(&m->cv);
        return;
    case AMS_NOTE_JOINED:
    case AMS_NOTE_LEFT:
        if (!(e = ev_new(NOTICE_EVT, 0)))
            return;
        e->state = AmsRegistrationState;
        e->change = kind == AMS_NOTE_JOINED ? AmsStateBegins : AmsStateEnds;
        e->unit = who->unit;
        e->module = who->module;
        e->role = who->role;
        break;
    default:
        if (!(e = ev_new(NOTICE_EVT, 0)))
            return;
        e->state = kind == AMS_NOTE_SUB_ADDED || kind == AMS_NOTE_SUB_REMOVED
                       ? AmsSubscriptionState
                       : AmsInvitationState;
        e->change = kind == AMS_NOTE_SUB_ADDED || kind == AMS_NOTE_INV_ADDED
                        ? AmsStateBegins
                        : AmsStateEnds;
        e->unit = who->unit;
        e->module = who->module;
        e->role = r->role;
        e->dcont = r->continuum;
        e->dunit = r->unit;
        e->subject = r->subject;
        e->priority = r->priority;
        e->flow = r->flow;
        e->seq = (r->flags & MAMS_RULE_TXORDER) ? AmsTransmissionOrder : AmsArrivalOrder;
        e->dil = (r->flags & MAMS_RULE_ASSURED) ? AmsAssured : AmsBestEffort;
        break;
    }
    push_locked(m, e, 0);
}

static void mams_out(void *ctx, const mams_ep *to, const uint8_t *pdu, size_t len)
{
    AmsModule m = ctx;
    struct sockaddr_in sa;
    ams_net_sockaddr(to, &sa);
    ssize_t w;
    do
        w = sendto(m->mams_fd, pdu, len, 0, (struct sockaddr *)&sa, sizeof sa);
    while (w < 0 && errno == EINTR);
    if (w < 0)
        m->st.send_errors++;
}

/* ------------------------------------------------------------ receiving */

/* Logs a cause of dropped input the first time it is seen (mu held, or
 * the MAMS thread's own): counted always, told once. */
static void drop_said(AmsModule m, const char *what, const char *why)
{
    if (!why)
        why = "malformed";
    for (int i = 0; i < m->nsaid; i++)
        if (m->said[i] == why)
            return;
    if (m->nsaid < 16)
        m->said[m->nsaid++] = why;
    fprintf(stderr,
            "ams: module %d of unit %d: dropped %s: %s (said once; counted in "
            "ams_get_stats)\n",
            ams_mod_nbr(m->mod), m->unit, what, why);
}

/* Does rule r cover a sender of role, continuum and unit on subject? */
static int covers(const AmsModule m, const mams_rule *r, int subject, int role, int cont,
                  int unit)
{
    return (r->subject == 0 || r->subject == subject) &&
           (r->role == 0 || r->role == role) &&
           (r->continuum == 0 || r->continuum == cont) &&
           ams_mib_unit_within(m->v, unit, r->unit);
}

static void queue_msg_event(AmsModule m, const aams_msg *a)
{
    AmsEvent e = ev_new(AMS_MSG_EVT, a->len);
    if (!e)
        return;
    e->continuum = a->continuum;
    e->unit = a->unit;
    e->module = a->module;
    e->subject = a->subject;
    e->context = a->context;
    e->priority = a->priority;
    e->flow = a->flow;
    e->mtype = (AmsMsgType)a->type;
    if (a->len)
        memcpy(e->data, a->content, a->len);
    m->st.received++;
    push_locked(m, e, 0);
}

/* A message on a message space's pseudo-subject (mu held). To a RAMS
 * gateway: an envelope a module made for another continuum, queued as it
 * is. To any other module, from its continuum's gateway: a message from
 * another continuum inside (ION's enclosure: an AAMS message), delivered as
 * its sender sent it. */
static void take_pseudo(AmsModule m, const aams_msg *a, int role)
{
    if (m->role == AMS_RAMS_ROLE) {
        int ok = 0;
        for (size_t i = 0; i < m->nsubs && !ok; i++)
            ok = m->subs[i].subject == a->subject &&
                 covers(m, &m->subs[i], a->subject, role, a->continuum, a->unit);
        if (!ok) {
            m->st.dropped_unsolicited++;
            return;
        }
        queue_msg_event(m, a);
        return;
    }
    if (role != AMS_RAMS_ROLE || a->subject != -m->cnbr || a->continuum != m->cnbr) {
        m->st.dropped_unauthorised++;
        drop_said(m, "a message on a message space's pseudo-subject",
                  "not from this continuum's RAMS gateway");
        return;
    }
    aams_msg in;
    const char *why = NULL;
    uint8_t *copy = NULL;
    int rc = aams_decode(a->content, a->len, &in, &why);
    if (rc && a->len >= AAMS_HDR_LEN && (a->content[2] & 0x80) &&
        AAMS_HDR_LEN + (size_t)(a->content[14] << 8 | a->content[15]) == a->len &&
        (copy = malloc(a->len))) {
        /* ION's libams flags a checksum on what it encloses and adds none */
        memcpy(copy, a->content, a->len);
        copy[2] &= 0x7f;
        rc = aams_decode(copy, a->len, &in, &why);
    }
    if (!rc && (in.subject <= 0 || !ams_mib_subject_get(m->v, in.subject))) {
        rc = -1;
        why = "enclosed message on a subject not in the venture";
    }
    if (rc) {
        m->st.dropped_malformed++;
        drop_said(m, "a message from another continuum", why);
        free(copy);
        return;
    }
    if (in.type != AmsMsgReply) { /* the enclosure has no role: the gateway matched it */
        int ok = 0;
        for (size_t i = 0; i < m->nsubs + m->ninvs && !ok; i++) {
            const mams_rule *r = i < m->nsubs ? &m->subs[i] : &m->invs[i - m->nsubs];
            ok = (r->subject == 0 || r->subject == in.subject) &&
                 (r->continuum == 0 || r->continuum == in.continuum) &&
                 ams_mib_unit_within(m->v, in.unit, r->unit);
        }
        if (!ok) {
            m->st.dropped_unsolicited++;
            free(copy);
            return;
        }
    }
    queue_msg_event(m, &in);
    free(copy);
}

/* Takes one AAMS message (mu held): checks it against the declarations and
 * the MIB, queues it. */
static void take_msg(AmsModule m, const uint8_t *buf, size_t len)
{
    aams_msg a;
    const char *why = NULL;
    if (aams_decode(buf, len, &a, &why)) {
        m->st.dropped_malformed++;
        drop_said(m, "an AAMS message", why);
        return;
    }
    int role = 0;
    if (a.continuum == m->cnbr) {
        const mams_module *s = ams_mod_find(m->mod, (uint16_t)a.unit, (uint8_t)a.module);
        if (!s) /* it may have left after sending */
            s = ams_mod_find_gone(m->mod, (uint16_t)a.unit, (uint8_t)a.module);
        if (!s) {
            m->st.dropped_unsolicited++; /* nobody this module knows */
            return;
        }
        role = s->role;
    }
    if (a.subject < 0) {
        take_pseudo(m, &a, role);
        return;
    }
    if (!ams_mib_may_send(m->v, a.subject, role) && a.type != AmsMsgReply) {
        m->st.dropped_unauthorised++;
        return;
    }
    if (a.type != AmsMsgReply) {
        int ok = 0;
        for (size_t i = 0; i < m->nsubs && !ok; i++)
            ok = covers(m, &m->subs[i], a.subject, role, a.continuum, a.unit);
        for (size_t i = 0; i < m->ninvs && !ok; i++)
            ok = covers(m, &m->invs[i], a.subject, role, a.continuum, a.unit);
        if (!ok) {
            m->st.dropped_unsolicited++;
            return;
        }
    }
    queue_msg_event(m, &a);
}

/* A datagram: one AAMS message, or (from a Tern module coalescing) several
 * back to back, each as long as its header says (mu held). */
static void take_datagram(AmsModule m, const uint8_t *b, size_t len)
{
    while (len >= AAMS_HDR_LEN) {
        size_t one = AAMS_HDR_LEN + ((size_t)b[14] << 8 | b[15]) +
                     ((b[2] & 0x80) ? AAMS_CKSUM_LEN : 0);
        if (one > len)
            break;
        take_msg(m, b, one);
        b += one;
        len -= one;
    }
    if (len) {
        m->st.dropped_malformed++;
        drop_said(m, "a datagram", "bytes after its last whole AAMS message");
    }
}

/* Reads what datagrams are there (up to a batch): >0 read, 0 none. */
static int read_datagrams(AmsModule m)
{
    static __thread uint8_t bufs[RX_BATCH]
                                [AAMS_HDR_LEN + MAX_AMS_CONTENT + AAMS_CKSUM_LEN];
    struct mmsghdr h[RX_BATCH];
    struct iovec iov[RX_BATCH];
    for (int i = 0; i < RX_BATCH; i++) {
        iov[i] = (struct iovec){bufs[i], sizeof bufs[i]};
        h[i] = (struct mmsghdr){.msg_hdr = {.msg_iov = &iov[i], .msg_iovlen = 1}};
    }
    int n;
    do
        n = recvmmsg(m->udp_fd, h, RX_BATCH, MSG_DONTWAIT, NULL);
    while (n < 0 && errno == EINTR);
    if (n <= 0)
        return 0;
    pthread_mutex_lock(&m->mu);
    /* queued by the thread that takes them: the descriptor need not say so
     * unless more than the one it takes next remain */
    m->reading = 1;
    for (int i = 0; i < n; i++)
        take_datagram(m, bufs[i], h[i].msg_len);
    m->reading = 0;
    if (m->qh && m->qh->next)
        signal_locked(m);
    pthread_mutex_unlock(&m->mu);
    return n;
}

/* ------------------------------------------------------------ best-effort datagrams */

static void wake(AmsModule m);
static int tout_fd(AmsModule m, const mams_ep *ep);
static void tout_drop(AmsModule m, int fd);
static int write_all(int fd, struct iovec *iov, int n);

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static struct pend *pend_get(AmsModule m, const mams_ep *ep, int assured)
{
    for (size_t i = 0; i < m->npend; i++)
        if (m->pend[i]->ep.addr == ep->addr && m->pend[i]->ep.port == ep->port &&
            m->pend[i]->assured == assured)
            return m->pend[i];
    struct pend **g = realloc(m->pend, (m->npend + 1) * sizeof *g);
    if (!g)
        return NULL;
    m->pend = g;
    struct pend *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->ep = *ep;
    p->assured = assured;
    m->pend[m->npend++] = p;
    return p;
}

static void udp_out(AmsModule m, const mams_ep *ep, int assured, struct iovec *iov, int n)
{
    if (assured) { /* a slow receiver holds the sender here: flow control */
        int fd = tout_fd(m, ep);
        if (fd < 0 || write_all(fd, iov, n)) {
            if (fd >= 0)
                tout_drop(m, fd);
            m->st.send_errors++;
        }
        return;
    }
    struct sockaddr_in sa;
    ams_net_sockaddr(ep, &sa);
    struct msghdr mh = {.msg_name = &sa,
                        .msg_namelen = sizeof sa,
                        .msg_iov = iov,
                        .msg_iovlen = (size_t)n};
    ssize_t w;
    do
        w = sendmsg(m->udp_fd, &mh, 0);
    while (w < 0 && errno == EINTR);
    if (w < 0)
        m->st.send_errors++;
}

static void pend_flush(AmsModule m, struct pend *p, uint64_t now)
{
    if (!p->n)
        return;
    struct iovec iov = {p->buf, p->len};
    udp_out(m, &p->ep, p->assured, &iov, 1);
    p->len = 0;
    p->n = 0;
    p->last_ns = now;
}

/* Sends what waits at least age ns (0: all of it); UINT64_MAX if nothing
 * waits any more, else when the next wait ends. mu held. */
static uint64_t pend_flush_all(AmsModule m, uint64_t age)
{
    uint64_t now = mono_ns(), next = UINT64_MAX;
    if (!m->pending)
        return next;
    m->pending = 0;
    for (size_t i = 0; i < m->npend; i++) {
        struct pend *p = m->pend[i];
        if (!p->n)
            continue;
        if (now - p->first_ns >= age) {
            pend_flush(m, p, now);
        } else {
            m->pending = 1;
            if (p->first_ns + age < next)
                next = p->first_ns + age;
        }
    }
    return next;
}

/* A message (hl bytes of header, len of content): sent at once, or added to
 * what waits for its destination (mu held). */
static void queue_msg(AmsModule m, const mams_ep *ep, int assured, uint8_t *hdr,
                      size_t hl, const char *content, size_t len)
{
    uint64_t now = mono_ns();
    struct pend *p = pend_get(m, ep, assured);
    size_t need = hl + len;
    if (p && p->n && p->len + need > PEND_MAX)
        pend_flush(m, p, now);
    if (!p || need > PEND_MAX || (!p->n && now - p->last_ns > BUSY_NS)) {
        struct iovec iov[2] = {{hdr, hl}, {(void *)content, len}};
        udp_out(m, ep, assured, iov, len ? 2 : 1);
        if (p)
            p->last_ns = now;
        return;
    }
    memcpy(p->buf + p->len, hdr, hl);
    if (len)
        memcpy(p->buf + p->len + hl, content, len);
    p->len += need;
    if (!p->n++) {
        p->first_ns = now;
        if (!m->pending) {
            m->pending = 1;
            wake(m); /* the MAMS thread sends it if no publish does */
        }
    } else if (now - p->first_ns >= COALESCE_NS) {
        pend_flush(m, p, now);
    }
}

/* ------------------------------------------------------------ the MAMS thread */

static void tin_close(struct tin *t)
{
    close(t->fd);
    free(t->buf);
    t->fd = -1;
    t->buf = NULL;
    t->len = 0;
}

/* Reads a stream; whole messages are taken. 0, or -1 when it closed. */
static int tin_read(AmsModule m, struct tin *t)
{
    size_t cap = STREAM_HDR + AAMS_HDR_LEN + MAX_AMS_CONTENT + AAMS_CKSUM_LEN;
    if (!t->buf && !(t->buf = malloc(cap)))
        return -1;
    ssize_t r;
    do
        r = read(t->fd, t->buf + t->len, cap - t->len);
    while (r < 0 && errno == EINTR);
    if (r <= 0)
        return r < 0 && errno == EAGAIN ? 0 : -1;
    t->len += (size_t)r;
    size_t off = 0;
    pthread_mutex_lock(&m->mu);
    while (t->len - off >= STREAM_HDR) {
        const uint8_t *p = t->buf + off;
        uint32_t n =
            (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
        if (n < AAMS_HDR_LEN || n > cap - STREAM_HDR) {
            m->st.dropped_malformed++;
            pthread_mutex_unlock(&m->mu);
            return -1; /* a stream out of step cannot be trusted further */
        }
        if (t->len - off - STREAM_HDR < n)
            break;
        m->taking_assured = 1;
        take_msg(m, p + STREAM_HDR, n);
        m->taking_assured = 0;
        off += STREAM_HDR + n;
    }
    pthread_mutex_unlock(&m->mu);
    memmove(t->buf, t->buf + off, t->len - off);
    t->len -= off;
    return 0;
}

static void *mams_main(void *arg)
{
    AmsModule m = arg;
    struct pollfd pf[3 + TIN_MAX];
    int idx[3 + TIN_MAX];
    while (!atomic_load(&m->stop)) {
        pthread_mutex_lock(&m->mu);
        uint64_t now = mono_ms();
        ams_mod_tick(m->mod, now);
        uint64_t dl = ams_mod_deadline(m->mod);
        uint64_t due = pend_flush_all(m, COALESCE_NS);
        pthread_mutex_unlock(&m->mu);
        uint64_t wait_ns = dl <= now         ? 0
                           : dl - now > 1000 ? 1000000000u
                                             : (dl - now) * 1000000u;
        if (due != UINT64_MAX) { /* messages wait for their datagram */
            uint64_t t = mono_ns();
            uint64_t w = due > t ? due - t : 0;
            if (w < wait_ns)
                wait_ns = w;
        }
        struct timespec tmo = {(time_t)(wait_ns / 1000000000u),
                               (long)(wait_ns % 1000000000u)};
        int n = 0;
        pf[n++] = (struct pollfd){.fd = m->mams_fd, .events = POLLIN};
        pf[n++] = (struct pollfd){.fd = m->tcp_fd, .events = POLLIN};
        pf[n++] = (struct pollfd){.fd = m->wake_fd, .events = POLLIN};
        pthread_mutex_lock(&m->mu);
        int full = m->qn >= m->qmax || m->qbytes >= m->qbytes_max;
        m->tin_stalled = full;
        pthread_mutex_unlock(&m->mu);
        for (int i = 0; i < TIN_MAX && !full; i++)
            if (m->tin[i].fd >= 0) {
                idx[n] = i;
                pf[n++] = (struct pollfd){.fd = m->tin[i].fd, .events = POLLIN};
            }
        int r = ppoll(pf, (nfds_t)n, &tmo, NULL);
        if (r <= 0)
            continue;
        if (pf[0].revents & POLLIN) {
            for (int k = 0; k < 64; k++) {
                struct sockaddr_in sa;
                socklen_t sl = sizeof sa;
                ssize_t len = recvfrom(m->mams_fd, m->mbuf, sizeof m->mbuf, MSG_DONTWAIT,
                                       (struct sockaddr *)&sa, &sl);
                if (len < 0)
                    break;
                mams_ep from = ams_net_ep(&sa);
                mams_pdu chk;
                const char *why = NULL;
                pthread_mutex_lock(&m->mu);
                if (mams_decode(m->mbuf, (size_t)len, &chk, &why))
                    drop_said(m, "a MAMS PDU", why); /* the machine counts it */
                ams_mod_input(m->mod, mono_ms(), &from, m->mbuf, (size_t)len);
                pthread_mutex_unlock(&m->mu);
            }
        }
        if (pf[1].revents & POLLIN) {
            int fd = accept4(m->tcp_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (fd >= 0) {
                int i = 0;
                while (i < TIN_MAX && m->tin[i].fd >= 0)
                    i++;
                if (i == TIN_MAX)
                    close(fd); /* more streams than modules in a cell */
                else
                    m->tin[i].fd = fd;
            }
        }
        if (pf[2].revents & POLLIN) {
            uint64_t v;
            ssize_t rr = read(m->wake_fd, &v, sizeof v);
            (void)rr;
        }
        for (int k = 3; k < n; k++)
            if (pf[k].revents & (POLLIN | POLLHUP | POLLERR))
                if (tin_read(m, &m->tin[idx[k]]))
                    tin_close(&m->tin[idx[k]]);
    }
    return NULL;
}

static void wake(AmsModule m)
{
    uint64_t one = 1;
    ssize_t w = write(m->wake_fd, &one, sizeof one);
    (void)w;
}

/* ------------------------------------------------------------ registration */

/* The MIB source: the argument, TERN_AMS_MIB, amsmib.xml or mib.amsrc. */
static const char *mib_source(const char *src)
{
    if (src && *src)
        return src;
    const char *env = getenv("TERN_AMS_MIB");
    if (env && *env)
        return env;
    return access("amsmib.xml", R_OK) == 0 ? "amsmib.xml" : "mib.amsrc";
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

static void sap_free(AmsModule m)
{
    if (m->thr_on) {
        atomic_store(&m->stop, 1);
        wake(m);
        pthread_join(m->thr, NULL);
    }
    if (m->mod) {
        pend_flush_all(m, 0); /* what waits for its datagram goes now */
        ams_mod_free(m->mod, mono_ms());
    }
    for (int i = 0; i < TIN_MAX; i++)
        if (m->tin[i].fd >= 0)
            tin_close(&m->tin[i]);
    for (size_t i = 0; i < m->ntout; i++)
        close(m->tout[i].fd);
    free(m->tout);
    for (size_t i = 0; i < m->npend; i++)
        free(m->pend[i]);
    free(m->pend);
    AmsEvent e;
    while ((e = m->qh)) {
        m->qh = e->next;
        free(e);
    }
    if (m->cache)
        for (int i = 0; i < m->v->n_subjects; i++)
            free(m->cache[i].d);
    free(m->cache);
    free(m->subs);
    free(m->invs);
    close_fd(&m->mams_fd);
    close_fd(&m->udp_fd);
    close_fd(&m->tcp_fd);
    close_fd(&m->wake_fd);
    close_fd(&m->ev_fd);
    close_fd(&m->ep_fd);
    pthread_mutex_destroy(&m->mu);
    pthread_cond_destroy(&m->cv);
    ams_mib_free(m->mib);
    free(m);
}

static const char *refusal(int why)
{
    switch (why) {
    case MAMS_REJ_CELL_FULL:
        return "its cell is full (255 modules)";
    case MAMS_REJ_NO_SUCH_ROLE:
        return "the registrar knows no such role";
    case MAMS_REJ_NO_SUCH_UNIT:
        return "the registrar serves another unit";
    case MAMS_REJ_WRONG_VENTURE:
        return "the registrar serves another venture";
    default:
        return "refused";
    }
}

static int declare(AmsModule m, int sub, int add, int role, int cont, int unit,
                   int subject, int priority, unsigned char flow, AmsSequence seq,
                   AmsDiligence dil);

TERN_API int ams_register(const char *mibSource, const char *tsorder,
                          const char *applicationName, const char *authorityName,
                          const char *unitName, const char *roleName, AmsModule *module)
{
    (void)tsorder;
    if (!module || !applicationName || !authorityName || !roleName)
        return fail(-EINVAL, "ams_register: application, authority, role and module are "
                             "required");
    *module = NULL;
    AmsModule m = calloc(1, sizeof *m);
    if (!m)
        return fail(-ENOMEM, "out of memory");
    m->qmax = QUEUE_MAX;
    m->qbytes_max = SIZE_MAX;
    m->mams_fd = m->udp_fd = m->tcp_fd = m->wake_fd = m->ev_fd = m->ep_fd = -1;
    for (int i = 0; i < TIN_MAX; i++)
        m->tin[i].fd = -1;
    pthread_mutex_init(&m->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&m->cv, &ca);
    pthread_condattr_destroy(&ca);
    char err[300];
    const char *src = mib_source(mibSource);
    int rc = ams_mib_load_file(src, &m->mib, err, sizeof err);
    if (rc) {
        sap_free(m);
        return fail(rc, "%s", err);
    }
    m->cnbr = ams_mib_continuum_nbr(m->mib);
    m->v = ams_mib_venture_find(m->mib, applicationName, authorityName);
    if (!m->v) {
        sap_free(m);
        return fail(TERN_ENOTFOUND, "%s: no venture of application %s under authority %s",
                    src, applicationName, authorityName);
    }
    const ams_mib_unit *u = ams_mib_unit_named(m->v, unitName ? unitName : "");
    const ams_mib_role *r = ams_mib_role_named(m->v, roleName);
    if (!u || !r) {
        rc = fail(TERN_ENOTFOUND, "%s: venture %d has no %s %s", src, m->v->nbr,
                  u ? "role" : "unit", u ? roleName : unitName);
        sap_free(m); /* after: the venture lives in the MIB */
        return rc;
    }
    m->unit = u->nbr;
    m->role = r->nbr;
    m->cache =
        calloc((size_t)m->v->n_subjects ? (size_t)m->v->n_subjects : 1, sizeof *m->cache);
    int n_cs;
    const char *const *cs = ams_mib_cs_endpoints(m->mib, &n_cs);
    mams_ep cse[8];
    size_t ncs = 0;
    for (int i = 0; i < n_cs && ncs < 8; i++)
        if (ams_net_parse(cs[i], AMS_CS_PORT, &cse[ncs], err, sizeof err) == 0)
            ncs++;
    if (!m->cache || !ncs) {
        sap_free(m);
        return fail(ncs ? -ENOMEM : TERN_ENOTFOUND,
                    "%s: no configuration server endpoint Tern can reach", src);
    }
    m->host = ams_net_host();
    /* the MIB's amsendpoint specs: where this host's modules take their
     * AAMS datagrams (udp, or ION's dgr) and streams (tcp); "@" (ION's
     * default) is this host, any port */
    mams_ep at_udp = {0, 0}, at_tcp = {0, 0};
    int neps;
    const ams_mib_epspec *eps = ams_mib_ams_endpoints(m->mib, &neps);
    for (int i = 0; i < neps; i++) {
        int is_tcp = !strcmp(eps[i].ts, "tcp");
        if ((!is_tcp && strcmp(eps[i].ts, "udp") && strcmp(eps[i].ts, "dgr")) ||
            !strcmp(eps[i].epspec, "@"))
            continue;
        mams_ep e;
        if (ams_net_parse(eps[i].epspec, 0, &e, err, sizeof err)) {
            rc = fail(-EINVAL, "%s: amsendpoint %s: %s", src, eps[i].ts, err);
            sap_free(m); /* after: eps lives in the MIB */
            return rc;
        }
        *(is_tcp ? &at_tcp : &at_udp) = e;
    }
    mams_ep me, mu_, mt, mams_at = {at_udp.addr, 0};
    if ((rc = ams_net_udp_at(&m->mams_fd, &mams_at, &me)) ||
        (rc = ams_net_udp_at(&m->udp_fd, &at_udp, &mu_)) ||
        (rc = ams_net_tcp_listen_at(&m->tcp_fd, &at_tcp, &mt))) {
        sap_free(m);
        return fail(rc, "sockets: %s", strerror(-rc));
    }
    me.addr = mu_.addr = at_udp.addr ? at_udp.addr : m->host.addr;
    mt.addr = at_tcp.addr ? at_tcp.addr : m->host.addr;
    m->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    m->ev_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    m->ep_fd = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ee = {.events = EPOLLIN};
    if (m->wake_fd < 0 || m->ev_fd < 0 || m->ep_fd < 0 ||
        epoll_ctl(m->ep_fd, EPOLL_CTL_ADD, m->udp_fd, &ee) ||
        epoll_ctl(m->ep_fd, EPOLL_CTL_ADD, m->ev_fd, &ee)) {
        rc = -errno;
        sap_free(m);
        return fail(rc, "event descriptors: %s", strerror(-rc));
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ams_mod_cfg mc = {.venture = (uint16_t)m->v->nbr,
                      .unit = (uint16_t)m->unit,
                      .role = (uint8_t)m->role,
                      .mams = me,
                      .udp = mu_,
                      .tcp = mt,
                      .cs = cse,
                      .n_cs = ncs,
                      .incarnation = (uint32_t)(ts.tv_sec * 1000003u + ts.tv_nsec / 1000 +
                                                (uint32_t)getpid() * 7919u)};
    if ((rc = ams_mod_new(&mc, mams_out, note, m, mono_ms(), &m->mod))) {
        sap_free(m);
        return fail(rc, "module: %s", strerror(-rc));
    }
    if ((rc = -pthread_create(&m->thr, NULL, mams_main, m))) {
        sap_free(m);
        return fail(rc, "thread: %s", strerror(-rc));
    }
    m->thr_on = 1;
    /* wait for the registrar's answer */
    const char *tmo = getenv("TERN_AMS_REGISTER_MS");
    uint64_t limit = tmo ? strtoull(tmo, NULL, 10) : 10000;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t end_ns =
        (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + limit * 1000000u;
    struct timespec dl = {(time_t)(end_ns / 1000000000u), (long)(end_ns % 1000000000u)};
    pthread_mutex_lock(&m->mu);
    rc = 0;
    while (!m->in && !m->refused && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&m->cv, &m->mu, &dl);
    int in = m->in, refused = m->refused, state = ams_mod_state(m->mod), cnbr = m->cnbr;
    pthread_mutex_unlock(&m->mu);
    if (!in) {
        sap_free(m);
        if (refused)
            return fail(-EACCES, "registration of role %s in unit %s refused: %s",
                        roleName, unitName && *unitName ? unitName : "(root)",
                        refusal(refused));
        return fail(-ETIMEDOUT,
                    "no %s answered within %llu ms (is amsd running for continuum %d, "
                    "venture %s/%s, unit %s?)",
                    state == AMS_MOD_QUERYING ? "configuration server" : "registrar",
                    (unsigned long long)limit, cnbr, applicationName, authorityName,
                    unitName && *unitName ? unitName : "(root)");
    }
    atomic_store(&last_continuum, m->cnbr);
    /* as ION's modules do: take messages from other continua, which this
     * continuum's RAMS gateway hands on (assured: a slow module slows it) */
    if (m->role != AMS_RAMS_ROLE)
        declare(m, 0, 1, AMS_RAMS_ROLE, m->cnbr, 0, -m->cnbr, DEFAULT_PRI, 0,
                AmsTransmissionOrder, AmsAssured);
    *module = m;
    return 0;
}

TERN_API int ams_unregister(AmsModule m)
{
    if (!m)
        return fail(-EINVAL, "ams_unregister: no module");
    ams_remove_event_mgr(m);
    sap_free(m);
    return 0;
}

/* ------------------------------------------------------------ identity and lookups */

TERN_API int ams_get_module_nbr(AmsModule m)
{
    pthread_mutex_lock(&m->mu);
    int n = ams_mod_nbr(m->mod);
    pthread_mutex_unlock(&m->mu);
    return n;
}

TERN_API int ams_get_unit_nbr(AmsModule m)
{
    return m->unit;
}

TERN_API int ams_get_venture_nbr(AmsModule m)
{
    return m->v->nbr;
}

TERN_API int ams_get_role_nbr(AmsModule m)
{
    return m->role;
}

TERN_API int ams_get_continuum_nbr(void)
{
    return atomic_load(&last_continuum);
}

TERN_API int ams_rams_net_is_tree(AmsModule m)
{
    return m->v->net_is_tree;
}

TERN_API int ams_msgspace_is_neighbor(AmsModule m, int continuumNbr)
{
    const ams_mib_msgspace *s = ams_mib_msgspace_get(m->v, continuumNbr);
    return s ? s->neighbor : 0;
}

TERN_API const char *ams_get_role_name(AmsModule m, int unitNbr, int moduleNbr)
{
    if (unitNbr < 0 || unitNbr > 65535 || moduleNbr < 1 || moduleNbr > 255)
        return NULL;
    pthread_mutex_lock(&m->mu);
    const mams_module *r = ams_mod_find(m->mod, (uint16_t)unitNbr, (uint8_t)moduleNbr);
    int role = r ? r->role : 0;
    pthread_mutex_unlock(&m->mu);
    const ams_mib_role *ro = role ? ams_mib_role_get(m->v, role) : NULL;
    return ro ? ro->name : NULL;
}

TERN_API int ams_subunit_of(AmsModule m, int argUnitNbr, int refUnitNbr)
{
    return ams_mib_unit_within(m->v, argUnitNbr, refUnitNbr);
}

TERN_API int ams_lookup_unit_nbr(AmsModule m, const char *name)
{
    const ams_mib_unit *u = name ? ams_mib_unit_named(m->v, name) : NULL;
    return u ? u->nbr : fail(TERN_ENOTFOUND, "no unit %s", name ? name : "(null)");
}

TERN_API int ams_lookup_role_nbr(AmsModule m, const char *name)
{
    const ams_mib_role *r = name ? ams_mib_role_named(m->v, name) : NULL;
    return r ? r->nbr : fail(TERN_ENOTFOUND, "no role %s", name ? name : "(null)");
}

TERN_API int ams_lookup_subject_nbr(AmsModule m, const char *name)
{
    const ams_mib_subject *s = name ? ams_mib_subject_named(m->v, name) : NULL;
    return s ? s->nbr : fail(TERN_ENOTFOUND, "no subject %s", name ? name : "(null)");
}

TERN_API int ams_lookup_continuum_nbr(AmsModule m, const char *name)
{
    const ams_mib_continuum *c = name ? ams_mib_continuum_named(m->mib, name) : NULL;
    return c ? c->nbr : fail(TERN_ENOTFOUND, "no continuum %s", name ? name : "(null)");
}

TERN_API const char *ams_lookup_unit_name(AmsModule m, int nbr)
{
    const ams_mib_unit *u = ams_mib_unit_get(m->v, nbr);
    return u ? u->name : NULL;
}

TERN_API const char *ams_lookup_role_name(AmsModule m, int nbr)
{
    const ams_mib_role *r = ams_mib_role_get(m->v, nbr);
    return r ? r->name : NULL;
}

TERN_API const char *ams_lookup_subject_name(AmsModule m, int nbr)
{
    const ams_mib_subject *s = ams_mib_subject_get(m->v, nbr);
    return s ? s->name : NULL;
}

TERN_API const char *ams_lookup_continuum_name(AmsModule m, int nbr)
{
    const ams_mib_continuum *c = ams_mib_continuum_get(m->mib, nbr);
    return c ? c->name : NULL;
}

/* ------------------------------------------------------------ declarations */

/* Checks a declaration's domain and subject; fills r. */
static int make_rule(AmsModule m, const char *what, int role, int cont, int unit,
                     int subject, int priority, unsigned char flow, AmsSequence seq,
                     AmsDiligence dil, mams_rule *r)
{
    if (subject < 0 ? !pseudo_ok(m, subject)
                    : subject && !ams_mib_subject_get(m->v, subject))
        return fail(TERN_ENOTFOUND, "%s: no subject %d in venture %d", what, subject,
                    m->v->nbr);
    if (role < 0 || (role && !ams_mib_role_get(m->v, role)))
        return fail(TERN_ENOTFOUND, "%s: no role %d in venture %d", what, role,
                    m->v->nbr);
    if (cont == THIS_CONTINUUM)
        cont = m->cnbr;
    if (cont < 0 || (cont && !ams_mib_continuum_get(m->mib, cont)))
        return fail(TERN_ENOTFOUND, "%s: no continuum %d in the MIB", what, cont);
    if (unit < 0 || !ams_mib_unit_get(m->v, unit))
        return fail(TERN_ENOTFOUND, "%s: no unit %d in venture %d", what, unit,
                    m->v->nbr);
    if (priority < 0 || priority > 15)
        return fail(-EINVAL, "%s: priority %d is not 0..15", what, priority);
    *r = (mams_rule){
        .subject = (int16_t)subject,
        .continuum = (uint16_t)cont,
        .unit = (uint16_t)unit,
        .role = (uint8_t)role,
        .priority = (uint8_t)(priority ? priority : DEFAULT_PRI),
        .flow = flow,
        .flags = (uint8_t)((dil == AmsAssured ? MAMS_RULE_ASSURED : 0) |
                           (seq == AmsTransmissionOrder ? MAMS_RULE_TXORDER : 0))};
    return 0;
}

static int same_domain(const mams_rule *a, const mams_rule *b)
{
    return a->subject == b->subject && a->continuum == b->continuum &&
           a->unit == b->unit && a->role == b->role;
}

/* Adds (or with add 0 removes) r in the list, then declares (mu held). */
static int redeclare(AmsModule m, mams_rule **list, size_t *n, const mams_rule *r,
                     int add, const char *what)
{
    size_t i = 0;
    while (i < *n && !same_domain(&(*list)[i], r))
        i++;
    if (add) {
        if (i == *n) {
            mams_rule *g = realloc(*list, (*n + 1) * sizeof *g);
            if (!g)
                return fail(-ENOMEM, "out of memory");
            *list = g;
            (*n)++;
        }
        (*list)[i] = *r;
    } else {
        if (i == *n)
            return fail(TERN_ENOTFOUND,
                        "%s: no such declaration (subject %d, role %d, "
                        "continuum %d, unit %d)",
                        what, r->subject, r->role, r->continuum, r->unit);
        (*list)[i] = (*list)[--*n];
    }
    int rc = ams_mod_declare(m->mod, mono_ms(), m->subs, m->nsubs, m->invs, m->ninvs);
    if (rc)
        return fail(rc, "%s: %s", what,
                    rc == -E2BIG ? "more declarations than a MAMS PDU holds"
                                 : strerror(-rc));
    return 0;
}

static int declare(AmsModule m, int sub, int add, int role, int cont, int unit,
                   int subject, int priority, unsigned char flow, AmsSequence seq,
                   AmsDiligence dil)
{
    const char *what = sub ? (add ? "ams_subscribe" : "ams_unsubscribe")
                           : (add ? "ams_invite" : "ams_disinvite");
    if (!m)
        return fail(-EINVAL, "%s: no module", what);
    mams_rule r;
    int rc = make_rule(m, what, role, cont, unit, subject, priority, flow, seq, dil, &r);
    if (rc)
        return rc;
    if (sub && add && subject > 0 && m->role != AMS_RAMS_ROLE &&
        !ams_mib_may_receive(m->v, subject, m->role))
        return fail(-EPERM,
                    "%s: subject %d (%s): role %d (%s) is not an authorised receiver",
                    what, subject, ams_mib_subject_get(m->v, subject)->name, m->role,
                    ams_mib_role_get(m->v, m->role)->name);
    pthread_mutex_lock(&m->mu);
    rc = sub ? redeclare(m, &m->subs, &m->nsubs, &r, add, what)
             : redeclare(m, &m->invs, &m->ninvs, &r, add, what);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

TERN_API int ams_subscribe(AmsModule m, int roleNbr, int continuumNbr, int unitNbr,
                           int subjectNbr, int priority, unsigned char flowLabel,
                           AmsSequence sequence, AmsDiligence diligence)
{
    return declare(m, 1, 1, roleNbr, continuumNbr, unitNbr, subjectNbr, priority,
                   flowLabel, sequence, diligence);
}

TERN_API int ams_unsubscribe(AmsModule m, int roleNbr, int continuumNbr, int unitNbr,
                             int subjectNbr)
{
    return declare(m, 1, 0, roleNbr, continuumNbr, unitNbr, subjectNbr, 0, 0, 0, 0);
}

TERN_API int ams_invite(AmsModule m, int roleNbr, int continuumNbr, int unitNbr,
                        int subjectNbr, int priority, unsigned char flowLabel,
                        AmsSequence sequence, AmsDiligence diligence)
{
    return declare(m, 0, 1, roleNbr, continuumNbr, unitNbr, subjectNbr, priority,
                   flowLabel, sequence, diligence);
}

TERN_API int ams_disinvite(AmsModule m, int roleNbr, int continuumNbr, int unitNbr,
                           int subjectNbr)
{
    return declare(m, 0, 0, roleNbr, continuumNbr, unitNbr, subjectNbr, 0, 0, 0, 0);
}

/* ------------------------------------------------------------ sending */

/* A stream to ep, opened if need be (mu held). */
static int tout_fd(AmsModule m, const mams_ep *ep)
{
    for (size_t i = 0; i < m->ntout; i++)
        if (m->tout[i].ep.addr == ep->addr && m->tout[i].ep.port == ep->port)
            return m->tout[i].fd;
    int fd;
    if (ams_net_tcp_connect(ep, &fd))
        return -1;
    struct tout *g = realloc(m->tout, (m->ntout + 1) * sizeof *g);
    if (!g) {
        close(fd);
        return -1;
    }
    m->tout = g;
    m->tout[m->ntout++] = (struct tout){*ep, fd};
    return fd;
}

static void tout_drop(AmsModule m, int fd)
{
    for (size_t i = 0; i < m->ntout; i++)
        if (m->tout[i].fd == fd) {
            close(fd);
            m->tout[i] = m->tout[--m->ntout];
            return;
        }
}

static int write_all(int fd, struct iovec *iov, int n)
{
    while (n > 0) {
        ssize_t w = writev(fd, iov, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        while (n > 0 && (size_t)w >= iov->iov_len) {
            w -= (ssize_t)iov->iov_len;
            iov++;
            n--;
        }
        if (n > 0) {
            iov->iov_base = (char *)iov->iov_base + w;
            iov->iov_len -= (size_t)w;
        }
    }
    return 0;
}

/* Sends one message to one destination (mu held). */
static void xmit(AmsModule m, const struct dest *d, int type, int subject, int priority,
                 unsigned char flow, const char *content, int len, int context)
{
    aams_msg a = {.type = type,
                  .priority = priority ? priority : d->priority,
                  .flow = flow ? flow : d->flow,
                  .continuum = m->cnbr,
                  .unit = m->unit,
                  .module = ams_mod_nbr(m->mod),
                  .context = context,
                  .subject = subject,
                  .len = (size_t)len};
    uint8_t hdr[STREAM_HDR + AAMS_HDR_LEN];
    aams_header_encode(&a, hdr + STREAM_HDR);
    if (d->assured) {
        uint32_t n = AAMS_HDR_LEN + (uint32_t)len;
        hdr[0] = (uint8_t)(n >> 24);
        hdr[1] = (uint8_t)(n >> 16);
        hdr[2] = (uint8_t)(n >> 8);
        hdr[3] = (uint8_t)n;
        queue_msg(m, &d->ep, 1, hdr, sizeof hdr, content, (size_t)len);
    } else {
        queue_msg(m, &d->ep, 0, hdr + STREAM_HDR, AAMS_HDR_LEN, content, (size_t)len);
    }
    m->st.sent++;
}

static int check_send(AmsModule m, const char *what, int subject, int len,
                      const char *content)
{
    if (!m)
        return fail(-EINVAL, "%s: no module", what);
    if (len < 0 || len > MAX_AMS_CONTENT || (len && !content))
        return fail(-EMSGSIZE, "%s: content of %d bytes (at most %d)", what, len,
                    MAX_AMS_CONTENT);
    if (m->role == AMS_RAMS_ROLE && subject == -m->cnbr)
        return 0; /* a gateway's message from another continuum to a local module */
    if (subject <= 0 || !ams_mib_subject_get(m->v, subject))
        return fail(TERN_ENOTFOUND, "%s: no subject %d in venture %d", what, subject,
                    m->v->nbr);
    if (!ams_mib_may_send(m->v, subject, m->role))
        return fail(-EPERM,
                    "%s: subject %d (%s): role %d (%s) is not an authorised sender", what,
                    subject, ams_mib_subject_get(m->v, subject)->name, m->role,
                    ams_mib_role_get(m->v, m->role)->name);
    return 0;
}

/* The first of rec's rules (subscriptions if sub) that covers this module
 * on subject, or -1. */
static int covering_rule(AmsModule m, const mams_module *rec, int sub, int subject,
                         mams_rule *out)
{
    size_t lo = sub ? 0 : rec->n_subs,
           hi = sub ? rec->n_subs : (size_t)rec->n_subs + rec->n_invs;
    for (size_t i = lo; i < hi; i++) {
        mams_module_rule(rec, i, out);
        if (covers(m, out, subject, m->role, m->cnbr, m->unit))
            return 0;
    }
    return -1;
}

static struct dest to_dest(const mams_module *rec, const mams_rule *r)
{
    int assured = (r->flags & MAMS_RULE_ASSURED) != 0;
    return (struct dest){assured ? rec->tcp : rec->udp, assured, r->priority, r->flow};
}

/* The subscribers of subject (mu held): rebuilt when the view changed. */
static const struct subj_cache *subscribers(AmsModule m, int subject)
{
    const ams_mib_subject *s = ams_mib_subject_get(m->v, subject);
    struct subj_cache *c = &m->cache[s - m->v->subjects];
    uint64_t ver = ams_mod_view_version(m->mod) + 1;
    if (c->version == ver)
        return c;
    c->n = 0;
    size_t cur = 0;
    const mams_module *rec;
    while ((rec = ams_mod_next(m->mod, &cur))) {
        mams_rule r;
        if (!ams_mib_may_receive(m->v, subject, rec->role) ||
            covering_rule(m, rec, 1, subject, &r))
            continue;
        if (c->n == c->cap) {
            size_t nc = c->cap ? 2 * c->cap : 8;
            struct dest *d = realloc(c->d, nc * sizeof *d);
            if (!d)
                break; /* the next publish tries again */
            c->d = d;
            c->cap = nc;
        }
        c->d[c->n++] = to_dest(rec, &r);
    }
    c->version = ver;
    return c;
}

TERN_API int ams_publish(AmsModule m, int subjectNbr, int priority,
                         unsigned char flowLabel, int contentLength, const char *content,
                         int context)
{
    int rc = check_send(m, "ams_publish", subjectNbr, contentLength, content);
    if (rc)
        return rc;
    if (subjectNbr <= 0)
        return fail(TERN_ENOTFOUND, "ams_publish: subject %d is not one to publish on",
                    subjectNbr);
    if (priority < 0 || priority > 15)
        return fail(-EINVAL, "ams_publish: priority %d is not 0..15", priority);
    pthread_mutex_lock(&m->mu);
    const struct subj_cache *c = subscribers(m, subjectNbr);
    for (size_t i = 0; i < c->n; i++)
        xmit(m, &c->d[i], AmsMsgUnary, subjectNbr, priority, flowLabel, content,
             contentLength, context);
    m->st.published++;
    pthread_mutex_unlock(&m->mu);
    return 0;
}

/* A message for another continuum (mu not held): ION's envelope of control
 * code cc with the message (AAMS header and content) enclosed, published on
 * pseudo-subject pseudo to the RAMS gateways subscribed to it. must: no
 * gateway is an error. */
static int enveloped(AmsModule m, const char *what, int cc, int type, int pseudo,
                     int env_cont, int unit, int dst, int subject, int priority,
                     unsigned char flow, int len, const char *content, int context,
                     int must)
{
    size_t total = AMS_RAMS_ENV_LEN + AAMS_HDR_LEN + (size_t)len;
    if (total > MAX_AMS_CONTENT)
        return fail(-EMSGSIZE,
                    "%s: content of %d bytes: a message to another continuum carries at "
                    "most %d",
                    what, len, MAX_AMS_CONTENT - AMS_RAMS_ENV_LEN - AAMS_HDR_LEN);
    uint8_t *buf = malloc(total);
    if (!buf)
        return fail(-ENOMEM, "out of memory");
    pthread_mutex_lock(&m->mu);
    aams_msg a = {.type = type,
                  .priority = priority ? priority : DEFAULT_PRI,
                  .flow = flow,
                  .continuum = m->cnbr,
                  .unit = m->unit,
                  .module = ams_mod_nbr(m->mod),
                  .context = context,
                  .subject = subject,
                  .len = (size_t)len};
    aams_header_encode(&a, buf + AMS_RAMS_ENV_LEN);
    if (len)
        memcpy(buf + AMS_RAMS_ENV_LEN + AAMS_HDR_LEN, content, (size_t)len);
    ams_rams_env e = {.cc = cc,
                      .continuum = env_cont,
                      .unit = unit,
                      .src = m->role,
                      .dst = dst,
                      .subject = subject,
                      .enc_len = AAMS_HDR_LEN + (size_t)len};
    ams_rams_env_encode(&e, buf);
    int n = 0;
    size_t cur = 0;
    const mams_module *rec;
    while ((rec = ams_mod_next(m->mod, &cur))) {
        if (rec->role != AMS_RAMS_ROLE)
            continue;
        for (size_t i = 0; i < rec->n_subs; i++) {
            mams_rule r;
            mams_module_rule(rec, i, &r);
            if (r.subject != pseudo || !covers(m, &r, pseudo, m->role, m->cnbr, m->unit))
                continue;
            struct dest d = to_dest(rec, &r);
            xmit(m, &d, AmsMsgUnary, pseudo, a.priority, flow, (const char *)buf,
                 (int)total, 0);
            n++;
            break;
        }
    }
    pthread_mutex_unlock(&m->mu);
    free(buf);
    if (!n && must)
        return fail(TERN_ENOTFOUND,
                    "%s: no RAMS gateway of continuum %d leads to continuum %d (is "
                    "ramsgate running, and has continuum %d declared itself to it?)",
                    what, m->cnbr, -pseudo, -pseudo);
    return 0;
}

/* A private message (or query, or reply) to one module. */
static int send_one(AmsModule m, const char *what, int type, int cont, int unit, int nbr,
                    int subject, int priority, unsigned char flow, int len,
                    const char *content, int context)
{
    int rc = check_send(m, what, subject, len, content);
    if (rc)
        return rc;
    if (cont == THIS_CONTINUUM || cont == 0)
        cont = m->cnbr;
    if (unit < 0 || unit > 65535 || nbr < 1 || nbr > 255 || priority < 0 || priority > 15)
        return fail(-EINVAL, "%s: unit %d, module %d, priority %d", what, unit, nbr,
                    priority);
    if (cont != m->cnbr) {
        if (cont < 0 || !ams_mib_msgspace_get(m->v, cont) || subject < 0)
            return fail(TERN_ENOTFOUND,
                        "%s: venture %d has no message space in continuum %d", what,
                        m->v->nbr, cont);
        return enveloped(m, what, AMS_RAMS_SEND, type, -cont, cont, unit, nbr, subject,
                         priority, flow, len, content, context, 1);
    }
    pthread_mutex_lock(&m->mu);
    const mams_module *rec = ams_mod_find(m->mod, (uint16_t)unit, (uint8_t)nbr);
    mams_rule r = {.priority = DEFAULT_PRI};
    if (!rec) {
        pthread_mutex_unlock(&m->mu);
        return fail(TERN_ENOTFOUND, "%s: no module %d in unit %d", what, nbr, unit);
    }
    if (type != AmsMsgReply && covering_rule(m, rec, 0, subject, &r)) {
        pthread_mutex_unlock(&m->mu);
        return fail(-EPERM,
                    "%s: module %d of unit %d has not invited subject %d from this "
                    "module's role, continuum and unit",
                    what, nbr, unit, subject);
    }
    struct dest d = to_dest(rec, &r);
    xmit(m, &d, type, subject, priority, flow, content, len, context);
    pthread_mutex_unlock(&m->mu);
    return 0;
}

TERN_API int ams_send(AmsModule m, int continuumNbr, int unitNbr, int moduleNbr,
                      int subjectNbr, int priority, unsigned char flowLabel,
                      int contentLength, const char *content, int context)
{
    return send_one(m, "ams_send", AmsMsgUnary, continuumNbr, unitNbr, moduleNbr,
                    subjectNbr, priority, flowLabel, contentLength, content, context);
}

TERN_API int ams_reply(AmsModule m, AmsEvent msg, int subjectNbr, int priority,
                       unsigned char flowLabel, int contentLength, const char *content)
{
    if (!msg || msg->type != AMS_MSG_EVT)
        return fail(-EINVAL, "ams_reply: not a message event");
    return send_one(m, "ams_reply", AmsMsgReply, msg->continuum, msg->unit, msg->module,
                    subjectNbr, priority, flowLabel, contentLength, content,
                    msg->context);
}

TERN_API int ams_announce(AmsModule m, int roleNbr, int continuumNbr, int unitNbr,
                          int subjectNbr, int priority, unsigned char flowLabel,
                          int contentLength, const char *content, int context)
{
    int rc = check_send(m, "ams_announce", subjectNbr, contentLength, content);
    if (rc)
        return rc;
    if (continuumNbr == THIS_CONTINUUM)
        continuumNbr = m->cnbr;
    if (!ams_mib_unit_get(m->v, unitNbr) || roleNbr < 0 || roleNbr > 255 ||
        priority < 0 || priority > 15)
        return fail(-EINVAL, "ams_announce: unit %d, role %d, priority %d", unitNbr,
                    roleNbr, priority);
    if (continuumNbr != m->cnbr) { /* another continuum, or all of them (0) */
        if (continuumNbr < 0 ||
            (continuumNbr && !ams_mib_msgspace_get(m->v, continuumNbr)))
            return fail(TERN_ENOTFOUND,
                        "ams_announce: venture %d has no message space in continuum %d",
                        m->v->nbr, continuumNbr);
        rc = enveloped(m, "ams_announce", AMS_RAMS_ANNOUNCE, AmsMsgUnary,
                       continuumNbr ? -continuumNbr : -m->cnbr, continuumNbr, unitNbr,
                       roleNbr, subjectNbr, priority, flowLabel, contentLength, content,
                       context, continuumNbr != 0);
        if (rc || continuumNbr)
            return rc;
    }
    pthread_mutex_lock(&m->mu);
    size_t cur = 0;
    const mams_module *rec;
    while ((rec = ams_mod_next(m->mod, &cur))) {
        mams_rule r;
        if ((roleNbr && rec->role != roleNbr) ||
            !ams_mib_unit_within(m->v, rec->unit, unitNbr) ||
            covering_rule(m, rec, 0, subjectNbr, &r))
            continue;
        struct dest d = to_dest(rec, &r);
        xmit(m, &d, AmsMsgUnary, subjectNbr, priority, flowLabel, content, contentLength,
             context);
    }
    pthread_mutex_unlock(&m->mu);
    return 0;
}

/* ------------------------------------------------------------ events */

TERN_API int ams_post_user_event(AmsModule m, int code, int len, const char *data,
                                 int priority)
{
    if (!m || len < 0 || len > MAX_AMS_CONTENT || (len && !data))
        return fail(-EINVAL, "ams_post_user_event: %d bytes of data", len);
    AmsEvent e = ev_new(USER_DEFINED_EVT, (size_t)len);
    if (!e)
        return fail(-ENOMEM, "out of memory");
    e->code = code;
    if (len)
        memcpy(e->data, data, (size_t)len);
    pthread_mutex_lock(&m->mu);
    push_locked(m, e, priority > 0);
    pthread_mutex_unlock(&m->mu);
    return 0;
}

static AmsEvent timeout_event(void)
{
    return ev_new(TIMEOUT_EVT, 0);
}

TERN_API int ams_get_event(AmsModule m, int term, AmsEvent *event)
{
    if (!m || !event)
        return fail(-EINVAL, "ams_get_event: no module or event pointer");
    *event = NULL;
    uint64_t end = term > 0 ? mono_ms() + (uint64_t)term / 1000u : 0;
    for (;;) {
        pthread_mutex_lock(&m->mu);
        AmsEvent e = pop_locked(m);
        pthread_mutex_unlock(&m->mu);
        if (e) {
            *event = e;
            return 0;
        }
        if (read_datagrams(m))
            continue;
        if (term == AMS_POLL)
            return 0;
        int wait = -1;
        if (term > 0) {
            uint64_t now = mono_ms();
            if (now >= end) {
                *event = timeout_event();
                return *event ? 0 : fail(-ENOMEM, "out of memory");
            }
            wait = (int)(end - now);
        }
        struct epoll_event ee;
        int r = epoll_wait(m->ep_fd, &ee, 1, wait);
        if (r < 0 && errno != EINTR)
            return fail(-errno, "ams_get_event: %s", strerror(errno));
    }
}

TERN_API int ams_query(AmsModule m, int continuumNbr, int unitNbr, int moduleNbr,
                       int subjectNbr, int priority, unsigned char flowLabel,
                       int contentLength, const char *content, int context, int term,
                       AmsEvent *event)
{
    if (event)
        *event = NULL;
    int rc = send_one(m, "ams_query", AmsMsgQuery, continuumNbr, unitNbr, moduleNbr,
                      subjectNbr, priority, flowLabel, contentLength, content, context);
    if (rc || term == AMS_POLL)
        return rc;
    if (!event)
        return fail(-EINVAL, "ams_query: no event pointer for the reply");
    /* events other than the reply wait aside, then go back in front */
    AmsEvent aside = NULL, *tail = &aside;
    uint64_t end = term > 0 ? mono_ms() + (uint64_t)term / 1000u : 0;
    for (;;) {
        int left = -1;
        if (term > 0) {
            uint64_t now = mono_ms();
            left = now >= end ? 1 : (int)((end - now) * 1000u);
        }
        AmsEvent e;
        rc = ams_get_event(m, left, &e);
        if (rc)
            break;
        if (e->type == AMS_MSG_EVT && e->mtype == AmsMsgReply && e->context == context &&
            e->unit == unitNbr && e->module == moduleNbr) {
            *event = e;
            break;
        }
        if (e->type == TIMEOUT_EVT && term > 0 && mono_ms() >= end) {
            *event = e;
            break;
        }
        *tail = e;
        tail = &e->next;
    }
    if (aside) {
        pthread_mutex_lock(&m->mu);
        size_t k = 0;
        AmsEvent last = NULL;
        for (AmsEvent x = aside; x; x = x->next) {
            k++;
            m->qbytes += (size_t)x->len;
            last = x;
        }
        last->next = m->qh;
        if (!m->qh)
            m->qt = last;
        m->qh = aside;
        m->qn += k;
        signal_locked(m);
        pthread_mutex_unlock(&m->mu);
    }
    return rc;
}

TERN_API int ams_set_queue_limit(AmsModule m, size_t max_events, size_t max_bytes)
{
    if (!m || !max_events || !max_bytes)
        return fail(-EINVAL, "ams_set_queue_limit: no module, or a bound of 0");
    pthread_mutex_lock(&m->mu);
    m->qmax = max_events;
    m->qbytes_max = max_bytes;
    pthread_mutex_unlock(&m->mu);
    wake(m); /* the streams' reading follows the new bounds */
    return 0;
}

TERN_API int ams_get_fd(AmsModule m)
{
    return m ? m->ep_fd : fail(-EINVAL, "ams_get_fd: no module");
}

TERN_API int ams_get_event_type(AmsEvent e)
{
    return e ? e->type : fail(-EINVAL, "no event");
}

TERN_API int ams_parse_msg(AmsEvent e, int *continuumNbr, int *unitNbr, int *moduleNbr,
                           int *subjectNbr, int *contentLength, char **content,
                           int *context, AmsMsgType *msgType, int *priority,
                           unsigned char *flowLabel)
{
    if (!e || e->type != AMS_MSG_EVT)
        return fail(-EINVAL, "ams_parse_msg: not a message event");
#define SET(p, v)                                                                        \
    do {                                                                                 \
        if (p)                                                                           \
            *(p) = (v);                                                                  \
    } while (0)
    SET(continuumNbr, e->continuum);
    SET(unitNbr, e->unit);
    SET(moduleNbr, e->module);
    SET(subjectNbr, e->subject);
    SET(contentLength, e->len);
    SET(content, e->data);
    SET(context, e->context);
    SET(msgType, e->mtype);
    SET(priority, e->priority);
    SET(flowLabel, e->flow);
    return 0;
}

TERN_API int ams_parse_notice(AmsEvent e, AmsStateType *state, AmsChangeType *change,
                              int *unitNbr, int *moduleNbr, int *roleNbr,
                              int *domainContinuumNbr, int *domainUnitNbr,
                              int *subjectNbr, int *priority, unsigned char *flowLabel,
                              AmsSequence *sequence, AmsDiligence *diligence)
{
    if (!e || e->type != NOTICE_EVT)
        return fail(-EINVAL, "ams_parse_notice: not a notice event");
    SET(state, e->state);
    SET(change, e->change);
    SET(unitNbr, e->unit);
    SET(moduleNbr, e->module);
    SET(roleNbr, e->role);
    SET(domainContinuumNbr, e->dcont);
    SET(domainUnitNbr, e->dunit);
    SET(subjectNbr, e->subject);
    SET(priority, e->priority);
    SET(flowLabel, e->flow);
    SET(sequence, e->seq);
    SET(diligence, e->dil);
    return 0;
}

TERN_API int ams_parse_user_event(AmsEvent e, int *code, int *dataLength, char **data)
{
    if (!e || e->type != USER_DEFINED_EVT)
        return fail(-EINVAL, "ams_parse_user_event: not a user event");
    SET(code, e->code);
    SET(dataLength, e->len);
    SET(data, e->data);
#undef SET
    return 0;
}

TERN_API int ams_recycle_event(AmsEvent e)
{
    free(e);
    return 0;
}

/* ------------------------------------------------------------ event manager */

static void *mgr_main(void *arg)
{
    AmsModule m = arg;
    AmsEventMgt *h = &m->rules;
    while (!atomic_load(&m->mgr_stop)) {
        AmsEvent e;
        if (ams_get_event(m, 100000, &e) || !e)
            continue;
        switch (e->type) {
        case AMS_MSG_EVT:
            if (h->msgHandler) {
                h->msgHandler(m, h->msgHandlerUserData, &e, e->continuum, e->unit,
                              e->module, e->subject, e->len, e->data, e->context,
                              e->mtype, e->priority, e->flow);
                break;
            }
            goto recycle;
        case NOTICE_EVT:
            if (e->state == AmsRegistrationState && e->change == AmsStateBegins &&
                h->registrationHandler) {
                h->registrationHandler(m, h->registrationHandlerUserData, &e, e->unit,
                                       e->module, e->role);
                break;
            }
            if (e->state == AmsRegistrationState && e->change == AmsStateEnds &&
                h->unregistrationHandler) {
                h->unregistrationHandler(m, h->unregistrationHandlerUserData, &e, e->unit,
                                         e->module);
                break;
            }
            if (e->state == AmsSubscriptionState && e->change == AmsStateBegins &&
                h->subscriptionHandler) {
                h->subscriptionHandler(m, h->subscriptionHandlerUserData, &e, e->unit,
                                       e->module, e->role, e->dcont, e->dunit, e->subject,
                                       e->priority, e->flow, e->seq, e->dil);
                break;
            }
            if (e->state == AmsSubscriptionState && e->change == AmsStateEnds &&
                h->unsubscriptionHandler) {
                h->unsubscriptionHandler(m, h->unsubscriptionHandlerUserData, &e, e->unit,
                                         e->module, e->role, e->dcont, e->dunit,
                                         e->subject);
                break;
            }
            if (e->state == AmsInvitationState && e->change == AmsStateBegins &&
                h->invitationHandler) {
                h->invitationHandler(m, h->invitationHandlerUserData, &e, e->unit,
                                     e->module, e->role, e->dcont, e->dunit, e->subject,
                                     e->priority, e->flow, e->seq, e->dil);
                break;
            }
            if (e->state == AmsInvitationState && e->change == AmsStateEnds &&
                h->disinvitationHandler) {
                h->disinvitationHandler(m, h->disinvitationHandlerUserData, &e, e->unit,
                                        e->module, e->role, e->dcont, e->dunit,
                                        e->subject);
                break;
            }
            goto recycle;
        case USER_DEFINED_EVT:
            if (h->userEventHandler) {
                h->userEventHandler(m, h->userEventHandlerUserData, &e, e->code, e->len,
                                    e->data);
                break;
            }
            goto recycle;
        default:
        recycle:
            break;
        }
        /* a handler that keeps the event sets *eventRef to NULL */
        if (e)
            ams_recycle_event(e);
    }
    return NULL;
}

TERN_API int ams_set_event_mgr(AmsModule m, AmsEventMgt *rules)
{
    if (!m || !rules)
        return fail(-EINVAL, "ams_set_event_mgr: no module or rules");
    if (m->mgr_on)
        return fail(-EALREADY,
                    "ams_set_event_mgr: the module has an event manager already");
    m->rules = *rules;
    atomic_store(&m->mgr_stop, 0);
    int rc = -pthread_create(&m->mgr, NULL, mgr_main, m);
    if (rc)
        return fail(rc, "ams_set_event_mgr: %s", strerror(-rc));
    m->mgr_on = 1;
    return 0;
}

TERN_API void ams_remove_event_mgr(AmsModule m)
{
    if (!m || !m->mgr_on)
        return;
    atomic_store(&m->mgr_stop, 1);
    pthread_join(m->mgr, NULL);
    m->mgr_on = 0;
}

TERN_API int ams_get_stats(AmsModule m, ams_module_stats *st)
{
    if (!m || !st)
        return fail(-EINVAL, "ams_get_stats: no module or stats");
    pthread_mutex_lock(&m->mu);
    *st = m->st;
    ams_mod_stats ms;
    ams_mod_stats_get(m->mod, &ms);
    st->reconnects = ms.reconnects;
    st->dropped_malformed += ms.malformed;
    pthread_mutex_unlock(&m->mu);
    return 0;
}

TERN_API int tern_ams_abi_version(void)
{
    return AMS_ABI_VERSION;
}

TERN_API size_t ams_struct_size(const char *name)
{
    return name && !strcmp(name, "ams_module_stats") ? sizeof(ams_module_stats) : 0;
}

TERN_API AmsEvent ams_make_msg_event(int continuumNbr, int unitNbr, int moduleNbr,
                                     int subjectNbr, int context)
{
    AmsEvent e = ev_new(AMS_MSG_EVT, 0);
    if (e) {
        e->continuum = continuumNbr;
        e->unit = unitNbr;
        e->module = moduleNbr;
        e->subject = subjectNbr;
        e->context = context;
        e->mtype = AmsMsgQuery;
    }
    return e;
}
