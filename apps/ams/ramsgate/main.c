/* ramsgate: the RAMS gateway of one venture in one continuum, a BP
 * application (docs/ams.md, "RAMS").
 *
 *   ramsgate <application> <authority> [<bundle lifetime s>]   (ION's form)
 *
 * It registers in the root unit of the venture in role RAMS, opens the
 * venture's gateway endpoint (the MIB's gweid, by default
 * ipn:<continuum>.<venture>) on the node in the current directory (or
 * $TERN_NODE_DIR), plays back <venture>.petition.log, declares itself to
 * the neighbouring continua and runs the RAMS machine (ams_rams.h).
 *
 * Threads: one takes AMS events, one takes bundles, one sends bundles; the
 * machine is under one lock, the outgoing queue under another, and nothing
 * waits on BP while holding the machine. What waits to be sent is bounded
 * (TERN_RAMS_QUEUE_MAX bytes, 16 MiB by default): past it the gateway stops
 * taking AMS events (assured publishers are slowed through their streams,
 * best-effort messages are dropped by the gateway's module and counted) and
 * bundles (ternd keeps them). The main thread writes the status file
 * ramsgate.<venture>.status every second and handles SIGTERM. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ams.h"
#include "ams_mib.h"
#include "ams_rams.h"
#include "tern_bp.h"

#define BATCH_MAX   (60 * 1024)
#define ORDER_BYTES (64u << 20)
#define MAX_NB      64

struct out { /* a bundle waiting to be sent */
    struct out *next;
    int nb;
    unsigned cls;
    int batch; /* a Tern batch: its header is filled in when it goes */
    size_t len, cap;
    uint8_t buf[];
};

struct peer {
    int cont;
    char eid[BP_EID_MAX];
    struct out *open[3]; /* the batch being filled, per class */
    uint64_t seq;
    ams_rams_order *order;
    uint64_t bundles_in, bundles_out;
};

static struct gw {
    AmsModule mod;
    ams_mib *mib;
    const ams_mib_venture *v;
    ams_rams *rams;
    BpSAP sap;
    char eid[BP_EID_MAX];
    int cnbr;
    uint32_t incarnation;
    uint64_t lifetime_s;
    pthread_mutex_t eng_mu; /* the machine */
    pthread_mutex_t q_mu;   /* the outgoing queue */
    pthread_cond_t q_cv;
    struct out *qh, *qt;
    size_t qbytes, qmax, qpeak;
    uint64_t made;         /* PDUs the machine sent (io_send calls) */
    uint64_t pushed, done; /* bundles queued; bundles bp_send answered */
    uint64_t waits;        /* times a taker stopped for the queue's bound */
    struct peer peers[MAX_NB];
    int npeers;
    int logfd;
    char logname[64];
    uint64_t loglines;
    atomic_int stop;
    uint64_t bundles_in, bundles_out, send_failures, strays, said_mask;
    const char *said[16];
    int nsaid;
} G;

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("ramsgate: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    fflush(stderr);
}

/* Tells a cause of dropped input once (counted always, in the status). */
static void said_once(const char *what, const char *from, const char *why)
{
    for (int i = 0; i < G.nsaid; i++)
        if (G.said[i] == why)
            return;
    if (G.nsaid < 16)
        G.said[G.nsaid++] = why;
    say("dropped %s from %s: %s (said once per cause; counted in ramsgate.%d.status)",
        what, from, why, G.v->nbr);
}

static struct peer *peer_of(int cont)
{
    for (int i = 0; i < G.npeers; i++)
        if (G.peers[i].cont == cont)
            return &G.peers[i];
    return NULL;
}

static struct peer *peer_by_eid(const char *eid)
{
    for (int i = 0; i < G.npeers; i++)
        if (!strcmp(G.peers[i].eid, eid))
            return &G.peers[i];
    return NULL;
}

/* ------------------------------------------------------------ the queue */

static struct out *out_new(int nb, unsigned cls, int batch, size_t cap)
{
    struct out *o = malloc(sizeof *o + cap);
    if (!o)
        return NULL;
    *o = (struct out){.nb = nb, .cls = cls, .batch = batch, .cap = cap};
    if (batch)
        o->len = AMS_RAMS_BATCH_HDR;
    return o;
}

static void q_push_locked(struct out *o)
{
    o->next = NULL;
    if (G.qt)
        G.qt->next = o;
    else
        G.qh = o;
    G.qt = o;
    G.pushed++;
    G.qbytes += o->len;
    if (G.qbytes > G.qpeak)
        G.qpeak = G.qbytes;
    pthread_cond_broadcast(&G.q_cv);
}

/* An open batch goes into the queue; its bytes were counted as they came. */
static void push_batch_locked(struct out *o)
{
    G.qbytes -= o->len - AMS_RAMS_BATCH_HDR;
    q_push_locked(o);
}

/* The machine's send (eng_mu held): a PDU into its neighbour's open batch
 * (Tern peers) or a bundle of its own (ION peers). */
static int io_send(void *ctx, int cont, const char *eid, unsigned flow,
                   const uint8_t *pdu, size_t len)
{
    (void)ctx;
    (void)eid;
    struct peer *p = peer_of(cont);
    if (!p)
        return -ENOENT;
    int nb = (int)(p - G.peers), tern = 0;
    ams_rams_neighbor(G.rams, nb, NULL, NULL, NULL, &tern, NULL);
    unsigned cls = flow & 3;
    if (cls > 2)
        cls = 2;
    pthread_mutex_lock(&G.q_mu);
    G.made++;
    if (!tern) {
        struct out *o = out_new(nb, cls, 0, len);
        if (!o) {
            pthread_mutex_unlock(&G.q_mu);
            return -ENOMEM;
        }
        memcpy(o->buf, pdu, len);
        o->len = len;
        q_push_locked(o);
        pthread_mutex_unlock(&G.q_mu);
        return 0;
    }
    struct out *o = p->open[cls];
    if (o && o->len + len > o->cap) { /* full: it goes, a new one opens */
        push_batch_locked(o);
        o = p->open[cls] = NULL;
    }
    if (!o) {
        size_t cap = AMS_RAMS_BATCH_HDR + (len > BATCH_MAX ? len : BATCH_MAX);
        if (!(o = p->open[cls] = out_new(nb, cls, 1, cap))) {
            pthread_mutex_unlock(&G.q_mu);
            return -ENOMEM;
        }
    }
    memcpy(o->buf + o->len, pdu, len);
    o->len += len;
    G.qbytes += len; /* counted while open too: it is held */
    pthread_mutex_unlock(&G.q_mu);
    return 0;
}

/* Closes the open batches: they go now (q_mu held). */
static void close_batches_locked(void)
{
    for (int i = 0; i < G.npeers; i++)
        for (int c = 0; c < 3; c++) {
            struct out *o = G.peers[i].open[c];
            if (!o)
                continue;
            G.peers[i].open[c] = NULL;
            push_batch_locked(o);
        }
}

static void flush_batches(void)
{
    pthread_mutex_lock(&G.q_mu);
    close_batches_locked();
    pthread_mutex_unlock(&G.q_mu);
}

static int over_bound(void)
{
    pthread_mutex_lock(&G.q_mu);
    int over = G.qbytes > G.qmax;
    pthread_mutex_unlock(&G.q_mu);
    return over;
}

/* Waits while what waits to be sent is over the bound. */
static void wait_for_room(void)
{
    pthread_mutex_lock(&G.q_mu);
    if (G.qbytes > G.qmax) {
        /* the open batches stay open: the sender closes them when it has
         * sent what is queued, so they leave full */
        G.waits++;
        while (G.qbytes > G.qmax && !atomic_load(&G.stop)) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 100000000;
            if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&G.q_cv, &G.q_mu, &ts);
        }
    }
    pthread_mutex_unlock(&G.q_mu);
}

static void *sender_main(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&G.q_mu);
        while (!G.qh && !atomic_load(&G.stop)) {
            close_batches_locked();
            if (G.qh)
                break;
            pthread_cond_wait(&G.q_cv, &G.q_mu);
        }
        struct out *o = G.qh;
        if (!o) {
            pthread_mutex_unlock(&G.q_mu);
            return NULL;
        }
        G.qh = o->next;
        if (!G.qh)
            G.qt = NULL;
        struct peer *p = &G.peers[o->nb];
        if (o->batch) /* numbered in the order they go */
            ams_rams_batch_header(G.incarnation, ++p->seq, o->buf);
        pthread_mutex_unlock(&G.q_mu);
        BpSendOpts opts = BP_SEND_OPTS_INIT;
        opts.lifetime_s = (uint32_t)G.lifetime_s;
        opts.priority = (int)o->cls;
        int rc = bp_send(G.sap, p->eid, o->buf, o->len, &opts, NULL);
        pthread_mutex_lock(&G.q_mu);
        G.qbytes -= o->len;
        G.done++;
        if (rc) {
            G.send_failures++;
            if (rc != -EINTR)
                said_once("a bundle", p->eid, "bp_send refused it (see the node's log)");
        } else {
            G.bundles_out++;
            p->bundles_out++;
        }
        pthread_cond_broadcast(&G.q_cv);
        pthread_mutex_unlock(&G.q_mu);
        free(o);
    }
}

/* ------------------------------------------------------------ the machine's other needs
 */

static int io_subscribe(void *ctx, int add, int role, int cont, int unit, int subject)
{
    (void)ctx;
    int rc = add ? ams_subscribe(G.mod, role, cont, unit, subject, 8, 0,
                                 AmsTransmissionOrder, AmsAssured)
                 : ams_unsubscribe(G.mod, role, cont, unit, subject);
    if (rc < 0 && add)
        say("cannot subscribe to subject %d (continuum %d, unit %d, role %d): %s",
            subject, cont, unit, role, ams_last_error());
    return rc < 0 ? rc : 0;
}

static int io_deliver(void *ctx, int unit, int module, const uint8_t *enc, size_t len)
{
    (void)ctx;
    int rc = ams_send(G.mod, G.cnbr, unit, module, -G.cnbr, 8, 0, (int)len,
                      (const char *)enc, 0);
    return rc < 0 ? rc : 0;
}

static int io_role_of(void *ctx, int unit, int module)
{
    (void)ctx;
    const char *name = ams_get_role_name(G.mod, unit, module);
    const ams_mib_role *r = name ? ams_mib_role_named(G.v, name) : NULL;
    return r ? r->nbr : -1;
}

static void io_log(void *ctx, const char *line)
{
    (void)ctx;
    if (G.logfd < 0)
        return;
    size_t n = strlen(line);
    if (write(G.logfd, line, n) != (ssize_t)n || fdatasync(G.logfd))
        said_once("nothing", G.logname, "cannot write the petition log");
    G.loglines++;
}

/* ------------------------------------------------------------ the petition log */

/* Plays back the log, then rewrites it as the state it left (compacted),
 * and opens it for appending. */
static int petition_log_open(void)
{
    snprintf(G.logname, sizeof G.logname, "%d.petition.log", G.v->nbr);
    FILE *f = fopen(G.logname, "r");
    int lines = 0, bad = 0;
    if (f) {
        char line[512], err[256];
        while (fgets(line, sizeof line, f)) {
            lines++;
            if (ams_rams_playback(G.rams, line, err, sizeof err)) {
                bad++;
                say("%s:%d: %s (line skipped)", G.logname, lines, err);
            }
        }
        fclose(f);
    }
    size_t need = ams_rams_state(G.rams, NULL, 0);
    char *text = malloc(need + 1);
    char tmp[80];
    snprintf(tmp, sizeof tmp, "%s.tmp", G.logname);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (!text || fd < 0) {
        free(text);
        if (fd >= 0)
            close(fd);
        say("cannot write %s: %s", tmp, strerror(errno));
        return -1;
    }
    ams_rams_state(G.rams, text, need + 1);
    int ok = write(fd, text, need) == (ssize_t)need && fsync(fd) == 0;
    close(fd);
    free(text);
    if (!ok || rename(tmp, G.logname)) {
        say("cannot replace %s: %s", G.logname, strerror(errno));
        return -1;
    }
    G.logfd = open(G.logname, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (G.logfd < 0) {
        say("cannot open %s: %s", G.logname, strerror(errno));
        return -1;
    }
    if (lines)
        say("played back %d line(s) of %s (%d skipped)", lines, G.logname, bad);
    return 0;
}

/* ------------------------------------------------------------ taking AMS events */

static void take_event(AmsEvent e)
{
    int type = ams_get_event_type(e);
    if (type == AMS_MSG_EVT) {
        int cont, unit, module, subject, len, context, prio;
        char *content;
        AmsMsgType mt;
        unsigned char flow;
        ams_parse_msg(e, &cont, &unit, &module, &subject, &len, &content, &context, &mt,
                      &prio, &flow);
        pthread_mutex_lock(&G.eng_mu);
        ams_rams_message(G.rams, cont, unit, module, subject, (int)mt, prio, flow,
                         context, (const uint8_t *)content, (size_t)len);
        pthread_mutex_unlock(&G.eng_mu);
    } else if (type == NOTICE_EVT) {
        AmsStateType st;
        AmsChangeType ch;
        int unit, module, role, dcont, dunit, subject, prio;
        unsigned char flow;
        AmsSequence seq;
        AmsDiligence dil;
        ams_parse_notice(e, &st, &ch, &unit, &module, &role, &dcont, &dunit, &subject,
                         &prio, &flow, &seq, &dil);
        pthread_mutex_lock(&G.eng_mu);
        if (st == AmsRegistrationState) {
            if (ch == AmsStateEnds)
                ams_rams_module_left(G.rams, unit, module);
        } else {
            ams_rams_notice(G.rams, st == AmsSubscriptionState, ch == AmsStateBegins,
                            unit, module, role, dcont, dunit, subject);
        }
        pthread_mutex_unlock(&G.eng_mu);
    }
    ams_recycle_event(e);
}

static void *ams_main(void *arg)
{
    (void)arg;
    while (!atomic_load(&G.stop)) {
        wait_for_room();
        AmsEvent e;
        if (ams_get_event(G.mod, 200000, &e) < 0 || !e)
            continue;
        if (ams_get_event_type(e) == TIMEOUT_EVT) {
            ams_recycle_event(e);
            continue;
        }
        take_event(e);
        /* what else is there now goes in the same batches */
        for (int k = 0; k < 4096 && !atomic_load(&G.stop) && !over_bound(); k++) {
            if (ams_get_event(G.mod, AMS_POLL, &e) < 0 || !e)
                break;
            take_event(e);
        }
        /* what was made goes now, unless the sender is busy with a full
         * queue: it closes the open batches once it has sent that, so they
         * leave full */
        if (!over_bound())
            flush_batches();
    }
    return NULL;
}

/* ------------------------------------------------------------ taking bundles */

static void take_pdus(struct peer *p, const uint8_t *b, size_t len, int batch)
{
    pthread_mutex_lock(&G.eng_mu);
    while (len) {
        size_t used = len;
        const char *why = NULL;
        if (batch) {
            ams_rams_env e;
            if (ams_rams_env_decode(b, len, &e, &used, &why)) {
                ams_rams_input(G.rams, p->eid, b, len, &why); /* counted */
                said_once("a RAMS PDU", p->eid, why);
                break;
            }
        }
        if (ams_rams_input(G.rams, p->eid, b, used, &why) > 0)
            said_once("a RAMS PDU", p->eid, why);
        b += used;
        len -= used;
    }
    pthread_mutex_unlock(&G.eng_mu);
}

static void take_bundle(const BpDelivery *d)
{
    G.bundles_in++;
    struct peer *p = peer_by_eid(d->src);
    if (!p) {
        G.strays++;
        pthread_mutex_lock(&G.eng_mu);
        const char *why = NULL;
        ams_rams_input(G.rams, d->src, d->payload, d->len, &why); /* counted */
        pthread_mutex_unlock(&G.eng_mu);
        said_once("a bundle", d->src, "its source is no neighbouring gateway of the MIB");
        return;
    }
    p->bundles_in++;
    uint32_t inc;
    uint64_t seq;
    if (!ams_rams_batch_parse(d->payload, d->len, &inc, &seq)) {
        take_pdus(p, d->payload, d->len, 0); /* an ION gateway's single PDU */
        return;
    }
    uint64_t now = now_ms(), hold = G.lifetime_s * 1000u;
    int rc = ams_rams_order_offer(p->order, inc, seq, d->payload, d->len, now);
    if (rc == 1)
        take_pdus(p, d->payload + AMS_RAMS_BATCH_HDR, d->len - AMS_RAMS_BATCH_HDR, 1);
    uint8_t *buf;
    size_t len;
    while (ams_rams_order_next(p->order, now, hold, &buf, &len) == 1) {
        take_pdus(p, buf + AMS_RAMS_BATCH_HDR, len - AMS_RAMS_BATCH_HDR, 1);
        free(buf);
    }
}

static void *bp_main(void *arg)
{
    (void)arg;
    while (!atomic_load(&G.stop)) {
        wait_for_room();
        BpDelivery d;
        int rc = bp_receive(G.sap, &d, 200);
        if (rc == -ETIMEDOUT || rc == -EAGAIN || rc == -EINTR)
            continue;
        if (rc) {
            say("bp_receive: %s (%s); stopping", bp_strerror(rc), bp_errmsg());
            atomic_store(&G.stop, 1);
            break;
        }
        pthread_mutex_lock(&G.q_mu);
        uint64_t made = G.made;
        pthread_mutex_unlock(&G.q_mu);
        if (!(d.flags & 0x2)) /* administrative records are not RAMS */
            take_bundle(&d);
        bp_release_delivery(&d);
        flush_batches(); /* what it made (relayed, answered) goes now */
        /* The durability rule: the next bp_receive may acknowledge this
         * delivery, letting the node drop it. What it made for other
         * gateways (a relay's forwarding) must be committed by then. */
        pthread_mutex_lock(&G.q_mu);
        if (G.made != made) {
            uint64_t want = G.pushed;
            while (G.done < want && !atomic_load(&G.stop))
                pthread_cond_wait(&G.q_cv, &G.q_mu);
            pthread_mutex_unlock(&G.q_mu);
            bp_flush(G.sap, 60000);
        } else {
            pthread_mutex_unlock(&G.q_mu);
        }
    }
    return NULL;
}

/* ------------------------------------------------------------ status */

static void write_status(void)
{
    char name[64], tmp[72];
    snprintf(name, sizeof name, "ramsgate.%d.status", G.v->nbr);
    snprintf(tmp, sizeof tmp, "%s.tmp", name);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return;
    ams_rams_stats st;
    ams_module_stats ms;
    pthread_mutex_lock(&G.eng_mu);
    ams_rams_get_stats(G.rams, &st);
    fprintf(f,
            "gateway of venture %d (%s/%s) in continuum %d at %s, pid %ld, bundle "
            "lifetime %llu s\n",
            G.v->nbr, G.v->app, G.v->auth, G.cnbr, G.eid, (long)getpid(),
            (unsigned long long)G.lifetime_s);
    for (int i = 0; i < G.npeers; i++) {
        int cont, declared, tern;
        const char *eid;
        ams_rams_neighbor(G.rams, i, &cont, &eid, &declared, &tern, NULL);
        uint64_t kept, skipped, dups;
        ams_rams_order_counts(G.peers[i].order, &kept, &skipped, &dups);
        fprintf(f,
                "peer continuum %d at %s: %s%s, bundles in %llu out %llu, batches "
                "reordered %llu, gaps skipped %llu, duplicates %llu\n",
                cont, eid, declared ? "declared" : "not declared",
                declared ? (tern ? " (Tern)" : " (ION: one PDU per bundle)") : "",
                (unsigned long long)G.peers[i].bundles_in,
                (unsigned long long)G.peers[i].bundles_out, (unsigned long long)kept,
                (unsigned long long)skipped, (unsigned long long)dups);
    }
    pthread_mutex_unlock(&G.eng_mu);
    fprintf(f, "petitions %llu invitations %llu\n", (unsigned long long)st.petitions,
            (unsigned long long)st.invitations);
    fprintf(
        f,
        "pdus in %llu (assert %llu cancel %llu publish %llu send %llu announce %llu), "
        "out %llu (assert %llu cancel %llu publish %llu send %llu announce %llu)\n",
        (unsigned long long)st.pdus_in, (unsigned long long)st.by_cc_in[2],
        (unsigned long long)st.by_cc_in[3], (unsigned long long)st.by_cc_in[4],
        (unsigned long long)st.by_cc_in[5], (unsigned long long)st.by_cc_in[6],
        (unsigned long long)st.pdus_out, (unsigned long long)st.by_cc_out[2],
        (unsigned long long)st.by_cc_out[3], (unsigned long long)st.by_cc_out[4],
        (unsigned long long)st.by_cc_out[5], (unsigned long long)st.by_cc_out[6]);
    fprintf(f, "messages delivered here %llu, forwarded %llu, send errors %llu\n",
            (unsigned long long)st.delivered, (unsigned long long)st.forwarded,
            (unsigned long long)st.send_errors);
    fprintf(
        f,
        "dropped malformed %llu, from strangers %llu, undeclared %llu, bad code %llu, "
        "bad domain %llu, no conduit %llu, not invited %llu\n",
        (unsigned long long)st.dropped[AMS_RAMS_DROP_MALFORMED],
        (unsigned long long)st.dropped[AMS_RAMS_DROP_STRANGER],
        (unsigned long long)st.dropped[AMS_RAMS_DROP_UNDECLARED],
        (unsigned long long)st.dropped[AMS_RAMS_DROP_BAD_CODE],
        (unsigned long long)st.dropped[AMS_RAMS_DROP_BAD_DOMAIN],
        (unsigned long long)st.dropped[AMS_RAMS_DROP_NO_CONDUIT],
        (unsigned long long)st.dropped[AMS_RAMS_DROP_NOT_INVITED]);
    ams_get_stats(G.mod, &ms);
    pthread_mutex_lock(&G.q_mu);
    fprintf(f,
            "bundles in %llu out %llu, send failures %llu, queued %zu bytes (peak %zu, "
            "bound %zu), waits for room %llu, AMS messages dropped (queue full) %llu\n",
            (unsigned long long)G.bundles_in, (unsigned long long)G.bundles_out,
            (unsigned long long)G.send_failures, G.qbytes, G.qpeak, G.qmax,
            (unsigned long long)G.waits, (unsigned long long)ms.dropped_queue_full);
    pthread_mutex_unlock(&G.q_mu);
    fclose(f);
    rename(tmp, name);
}

/* ------------------------------------------------------------ main */

static void on_term(int sig)
{
    (void)sig;
    atomic_store(&G.stop, 1); /* the threads look every 200 ms */
}

static size_t env_size(const char *name, size_t dflt)
{
    const char *s = getenv(name);
    return s && *s ? (size_t)strtoull(s, NULL, 10) : dflt;
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: ramsgate <application> <authority> [<bundle lifetime "
                        "seconds, default 86400>]\n");
        return 2;
    }
    char *endp = NULL;
    long long life = argc > 3 ? strtoll(argv[3], &endp, 10) : 86400;
    if ((argc > 3 && (*endp || endp == argv[3])) || life < 1 || life > 0xffffffffLL) {
        say("bundle lifetime '%s' is not a number of seconds from 1 to 4294967295",
            argv[3]);
        return 2;
    }
    G.lifetime_s = (uint64_t)life;
    G.logfd = -1;
    G.qmax = env_size("TERN_RAMS_QUEUE_MAX", 16u << 20);
    pthread_mutex_init(&G.eng_mu, NULL);
    pthread_mutex_init(&G.q_mu, NULL);
    pthread_cond_init(&G.q_cv, NULL);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    G.incarnation = (uint32_t)(ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u) ^
                    (uint32_t)getpid() << 16;

    const char *src = getenv("TERN_AMS_MIB");
    if (!src || !*src)
        src = access("amsmib.xml", R_OK) == 0 ? "amsmib.xml" : "mib.amsrc";
    char err[320];
    if (ams_mib_load_file(src, &G.mib, err, sizeof err)) {
        say("%s", err);
        return 1;
    }
    G.cnbr = ams_mib_continuum_nbr(G.mib);
    G.v = ams_mib_venture_find(G.mib, argv[1], argv[2]);
    if (!G.v) {
        say("%s: no venture of application %s under authority %s", src, argv[1], argv[2]);
        return 1;
    }
    const ams_mib_msgspace *own = ams_mib_msgspace_get(G.v, G.cnbr);
    if (G.v->gw_proto != AMS_MIB_GW_BP || (own && own->gw_proto != AMS_MIB_GW_BP)) {
        say("%s: venture %d's gateway EID is udp@...: Tern's gateway speaks RAMS over BP "
            "only (gweid='bp@ipn:N.V')",
            src, G.v->nbr);
        return 1;
    }
    snprintf(G.eid, sizeof G.eid, "%s", own && own->gweid ? own->gweid : G.v->gweid);

    signal(SIGPIPE, SIG_IGN);
    struct sigaction sa = {.sa_handler = on_term};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    int rc = bp_attach(NULL);
    if (rc) {
        say("no node to attach to (%s): %s", bp_errmsg(), bp_strerror(rc));
        return 1;
    }
    char answer[512];
    char cmd[BP_EID_MAX + 32];
    /* bundles for the gateway wait for it while it is down (ION: rule q) */
    snprintf(cmd, sizeof cmd, "a endpoint %s q", G.eid);
    bp_node_admin(bp_node(), "bpadmin", cmd, answer, sizeof answer);
    if ((rc = bp_open(G.eid, &G.sap))) {
        say("cannot open the gateway endpoint %s: %s (%s)", G.eid, bp_strerror(rc),
            bp_errmsg());
        bp_detach();
        return 1;
    }
    if (ams_register(src, NULL, argv[1], argv[2], "", "RAMS", &G.mod) < 0) {
        say("cannot register in venture %s/%s: %s", argv[1], argv[2], ams_last_error());
        bp_close(G.sap);
        bp_detach();
        return 1;
    }
    size_t qevents = env_size("TERN_RAMS_AMS_EVENTS", 65536);
    ams_set_queue_limit(G.mod, qevents, G.qmax);

    ams_rams_io io = {.send = io_send,
                      .subscribe = io_subscribe,
                      .deliver = io_deliver,
                      .role_of = io_role_of,
                      .log = io_log};
    if ((rc = ams_rams_new(G.mib, G.v, ams_get_unit_nbr(G.mod), ams_get_module_nbr(G.mod),
                           &io, &G.rams))) {
        say("cannot start the RAMS machine: %s", tern_strerror(rc));
        return 1;
    }
    for (int i = 0;; i++) {
        int cont, n;
        const char *eid;
        if (ams_rams_neighbor(G.rams, i, &cont, &eid, NULL, NULL, &n))
            break;
        struct peer *p = &G.peers[G.npeers++];
        p->cont = cont;
        snprintf(p->eid, sizeof p->eid, "%s", eid);
        ams_rams_order_new(ORDER_BYTES, &p->order);
    }
    /* the gateway's own subscription: envelopes local modules address to it */
    if (ams_subscribe(G.mod, 0, 0, 0, -G.cnbr, 8, 0, AmsTransmissionOrder, AmsAssured) <
        0) {
        say("cannot subscribe to the pseudo-subject of continuum %d: %s", G.cnbr,
            ams_last_error());
        return 1;
    }
    pthread_mutex_lock(&G.eng_mu);
    rc = petition_log_open();
    pthread_mutex_unlock(&G.eng_mu);
    if (rc)
        return 1;

    pthread_t ts_send, ts_ams, ts_bp;
    pthread_create(&ts_send, NULL, sender_main, NULL);
    pthread_mutex_lock(&G.eng_mu);
    ams_rams_start(G.rams);
    pthread_mutex_unlock(&G.eng_mu);
    flush_batches();
    pthread_create(&ts_ams, NULL, ams_main, NULL);
    pthread_create(&ts_bp, NULL, bp_main, NULL);

    char peers[1024] = "";
    size_t pl = 0;
    for (int i = 0; i < G.npeers && pl < sizeof peers - 64; i++)
        pl += (size_t)snprintf(peers + pl, sizeof peers - pl, "%s%d (%s)", i ? ", " : "",
                               G.peers[i].cont, G.peers[i].eid);
    say("gateway of venture %d (%s/%s) in continuum %d at %s, module %d, bundle lifetime "
        "%llu s, %s network, neighbours: %s",
        G.v->nbr, G.v->app, G.v->auth, G.cnbr, G.eid, ams_get_module_nbr(G.mod),
        (unsigned long long)G.lifetime_s, G.v->net_is_tree ? "tree" : "mesh",
        G.npeers ? peers : "none");

    while (!atomic_load(&G.stop)) {
        write_status();
        for (int i = 0; i < 10 && !atomic_load(&G.stop); i++)
            usleep(100000);
    }
    /* leaving: its declaration is cancelled where it was heard */
    pthread_mutex_lock(&G.eng_mu);
    ams_rams_stop(G.rams);
    pthread_mutex_unlock(&G.eng_mu);
    flush_batches();
    pthread_join(ts_ams, NULL);
    pthread_join(ts_bp, NULL);
    /* the sender drains what waits, then ends */
    for (int i = 0; i < 50; i++) {
        pthread_mutex_lock(&G.q_mu);
        int empty = !G.qh;
        pthread_cond_broadcast(&G.q_cv);
        pthread_mutex_unlock(&G.q_mu);
        if (empty)
            break;
        usleep(100000);
    }
    pthread_mutex_lock(&G.q_mu);
    pthread_cond_broadcast(&G.q_cv);
    pthread_mutex_unlock(&G.q_mu);
    pthread_join(ts_send, NULL);
    write_status();
    bp_flush(G.sap, 5000);
    ams_unregister(G.mod);
    bp_close(G.sap);
    bp_detach();
    say("stopped");
    return 0;
}
