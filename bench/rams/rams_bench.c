/* bench_rams: the processes of bench/rams (run.py drives them).
 *
 *   bench_rams sub CONT WARM_S WINDOW_S [-l]
 *       subscribe (assured) to "bench" with domain continuum CONT (0: all
 *       continua), print "subscribed"; from the first message count WARM_S
 *       seconds of warm-up, then the messages of a WINDOW_S window
 *       ("window start" / "window end" on stdout as they happen), then take
 *       the rest until the end marker; print JSON of the window's rate and,
 *       with -l, of every message's one-way latency (us)
 *   bench_rams pub SIZE SECS RATE ROLE
 *       wait until a module of role ROLE (RAMS: the continuum's gateway,
 *       benchr: a local subscriber) subscribes to "bench", publish messages
 *       of SIZE bytes for SECS seconds (RATE/s, 0: as fast as it can), then
 *       the end marker; print JSON
 *   bench_rams bprecv EID MAX_S
 *       open EID on the node of $TERN_NODE_DIR, print "ready", take bundles
 *       until the end marker (or MAX_S), print JSON of their one-way
 *       latencies (us)
 *   bench_rams bpsend EID DEST SIZE RATE SECS
 *       send bundles of SIZE bytes from EID to DEST at RATE/s for SECS
 *       seconds (class of service bulk, lifetime 300 s: what ramsgate
 *       sends with), then the end marker; print JSON
 *
 * The MIB is TERN_AMS_MIB (venture amsdemo/test). Every message and bundle
 * holds its sequence number (8 bytes) and its send time (8 bytes,
 * CLOCK_MONOTONIC: sender and receiver share the machine); the end marker
 * has sequence number UINT64_MAX. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ams.h"
#include "tern_bp.h"

#define END UINT64_MAX

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_until(uint64_t t)
{
    struct timespec ts = {.tv_sec = (time_t)(t / 1000000000u),
                          .tv_nsec = (long)(t % 1000000000u)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

static void stamp(char *buf, uint64_t seq, uint64_t t)
{
    memcpy(buf, &seq, 8);
    memcpy(buf + 8, &t, 8);
}

/* Latencies, growing. */
struct lat {
    double *v;
    size_t n, cap;
};

static void lat_add(struct lat *l, double us)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 4096;
        l->v = realloc(l->v, l->cap * sizeof *l->v);
        if (!l->v) {
            fprintf(stderr, "bench_rams: out of memory\n");
            exit(1);
        }
    }
    l->v[l->n++] = us;
}

static void lat_print(const struct lat *l)
{
    printf("\"lat_us\": [");
    for (size_t i = 0; i < l->n; i++)
        printf("%s%.1f", i ? ", " : "", l->v[i]);
    printf("]");
}

/* How long the paced sender's send calls took (the latency it stamps in
 * includes them). */
struct calls {
    uint64_t over_1ms, max_ns, total_ns, n;
};

static void call_took(struct calls *c, uint64_t ns)
{
    c->n++;
    c->total_ns += ns;
    if (ns > 1000000)
        c->over_1ms++;
    if (ns > c->max_ns)
        c->max_ns = ns;
}

static void calls_print(const struct calls *c)
{
    printf("\"send_calls_over_1ms\": %llu, \"send_call_max_us\": %.1f, "
           "\"send_call_mean_us\": %.2f}\n",
           (unsigned long long)c->over_1ms, (double)c->max_ns / 1000.0,
           c->n ? (double)c->total_ns / (double)c->n / 1000.0 : 0.0);
}

static AmsModule reg(const char *role)
{
    AmsModule m;
    if (ams_register("", NULL, "amsdemo", "test", "", role, &m) < 0) {
        fprintf(stderr, "bench_rams: register %s: %s\n", role, ams_last_error());
        exit(1);
    }
    return m;
}

static int subject(AmsModule m, const char *name)
{
    int s = ams_lookup_subject_nbr(m, name);
    if (s < 0) {
        fprintf(stderr, "bench_rams: %s\n", ams_last_error());
        exit(1);
    }
    return s;
}

/* ------------------------------------------------------------------ AMS */

static int do_sub(int cont, double warm_s, double window_s, int lat)
{
    AmsModule m = reg("benchr");
    int s = subject(m, "bench");
    if (ams_subscribe(m, 0, cont, 0, s, 8, 0, AmsArrivalOrder, AmsAssured) < 0) {
        fprintf(stderr, "bench_rams sub: %s\n", ams_last_error());
        return 1;
    }
    printf("subscribed\n");
    fflush(stdout);
    struct lat l = {0};
    uint64_t msgs = 0, win_msgs = 0, first_seq = 0, max_seq = 0, out_of_order = 0;
    uint64_t t0 = 0, tlast = 0, ws = 0, we = 0, win_last = 0;
    int phase = 0; /* 0 before the window, 1 in it, 2 after */
    uint64_t started = now_ns(), bytes = 0;
    const char *why = NULL;
    for (;;) {
        AmsEvent e;
        if (ams_get_event(m, 100000, &e) < 0) {
            why = "ams_get_event failed";
            break;
        }
        uint64_t t = now_ns();
        if (phase == 0 && t0 && t >= ws) {
            phase = 1;
            printf("window start\n");
            fflush(stdout);
        }
        if (phase == 1 && t >= we) {
            phase = 2;
            printf("window end\n");
            fflush(stdout);
        }
        if (!t0 && t - started > 60000000000ull) {
            why = "no message in 60 s";
            if (e)
                ams_recycle_event(e);
            break;
        }
        if (t0 && t - tlast > 30000000000ull) {
            why = "no message for 30 s (no end marker)";
            if (e)
                ams_recycle_event(e);
            break;
        }
        if (!e)
            continue;
        if (ams_get_event_type(e) != AMS_MSG_EVT) {
            ams_recycle_event(e);
            continue;
        }
        char *c;
        int len;
        ams_parse_msg(e, NULL, NULL, NULL, NULL, &len, &c, NULL, NULL, NULL, NULL);
        uint64_t seq = 0, sent = 0;
        if (len >= 16) {
            memcpy(&seq, c, 8);
            memcpy(&sent, c + 8, 8);
        }
        ams_recycle_event(e);
        if (seq == END)
            break;
        if (!t0) {
            t0 = t;
            first_seq = seq;
            ws = t0 + (uint64_t)(warm_s * 1e9);
            we = ws + (uint64_t)(window_s * 1e9);
        }
        tlast = t;
        msgs++;
        bytes += (uint64_t)len;
        if (seq < max_seq)
            out_of_order++;
        else
            max_seq = seq;
        if (phase == 1) {
            win_msgs++;
            win_last = t;
        }
        if (lat && sent && t >= sent)
            lat_add(&l, (double)(t - sent) / 1000.0);
    }
    if (phase < 2 && t0) { /* the end came before the window closed */
        if (phase == 0)
            printf("window start\n");
        printf("window end\n");
        fflush(stdout);
        we = win_last > ws ? win_last : ws;
    }
    ams_module_stats st;
    ams_get_stats(m, &st);
    double wsecs = (double)(we - ws) / 1e9;
    printf(
        "{\"msgs\": %llu, \"bytes\": %llu, \"window_msgs\": %llu, \"window_secs\": %.6f, "
        "\"msgs_per_s\": %.1f, \"first_seq\": %llu, \"max_seq\": %llu, "
        "\"missing\": %lld, \"out_of_order\": %llu, \"secs\": %.6f, "
        "\"dropped_queue_full\": %llu, \"error\": %s%s%s, ",
        (unsigned long long)msgs, (unsigned long long)bytes, (unsigned long long)win_msgs,
        wsecs, wsecs > 0 ? (double)win_msgs / wsecs : 0.0, (unsigned long long)first_seq,
        (unsigned long long)max_seq,
        msgs ? (long long)(max_seq - first_seq + 1) - (long long)msgs : 0,
        (unsigned long long)out_of_order, t0 ? (double)(tlast - t0) / 1e9 : 0.0,
        (unsigned long long)st.dropped_queue_full, why ? "\"" : "", why ? why : "null",
        why ? "\"" : "");
    lat_print(&l);
    printf("}\n");
    fflush(stdout);
    ams_unregister(m);
    return why ? 1 : 0;
}

/* Waits until a module of role role_name subscribes to subject s. */
static int wait_sub(AmsModule m, int s, const char *role_name)
{
    uint64_t end = now_ns() + 60000000000ull;
    while (now_ns() < end) {
        AmsEvent e;
        if (ams_get_event(m, 100000, &e) < 0)
            break;
        if (!e)
            continue;
        AmsStateType st;
        AmsChangeType ch;
        int unit = -1, module = -1, subj = -1;
        int found = 0;
        if (ams_get_event_type(e) == NOTICE_EVT &&
            ams_parse_notice(e, &st, &ch, &unit, &module, NULL, NULL, NULL, &subj, NULL,
                             NULL, NULL, NULL) == 0 &&
            st == AmsSubscriptionState && ch == AmsStateBegins && subj == s) {
            const char *r = ams_get_role_name(m, unit, module);
            found = r && !strcmp(r, role_name);
        }
        ams_recycle_event(e);
        if (found)
            return 0;
    }
    fprintf(stderr, "bench_rams pub: no subscription by a module of role %s in 60 s\n",
            role_name);
    return -1;
}

static int do_pub(int size, double secs, double rate, const char *role)
{
    AmsModule m = reg("benchs");
    int s = subject(m, "bench");
    if (wait_sub(m, s, role))
        return 1;
    if (size < 16)
        size = 16;
    char *buf = calloc(1, (size_t)size);
    uint64_t t0 = now_ns(), end = t0 + (uint64_t)(secs * 1e9), n = 0;
    uint64_t gap = rate > 0 ? (uint64_t)(1e9 / rate) : 0, late = 0;
    struct calls calls = {0};
    for (;;) {
        uint64_t t = now_ns();
        if (t >= end)
            break;
        if (gap) {
            uint64_t due = t0 + n * gap;
            if (due > t)
                sleep_until(due);
            else if (t - due > 1000000)
                late++; /* more than 1 ms behind its schedule */
        }
        n++;
        uint64_t ts = now_ns();
        stamp(buf, n, ts);
        if (ams_publish(m, s, 0, 0, size, buf, 0) < 0) {
            fprintf(stderr, "bench_rams pub: %s\n", ams_last_error());
            return 1;
        }
        if (gap)
            call_took(&calls, now_ns() - ts);
    }
    uint64_t t1 = now_ns();
    stamp(buf, END, 0);
    ams_publish(m, s, 0, 0, size, buf, 0);
    usleep(200000); /* the end marker leaves before the streams close */
    ams_module_stats st;
    ams_get_stats(m, &st);
    printf("{\"published\": %llu, \"secs\": %.6f, \"per_s\": %.1f, \"late_1ms\": %llu, "
           "\"send_errors\": %llu, ",
           (unsigned long long)n, (double)(t1 - t0) / 1e9,
           (double)n / ((double)(t1 - t0) / 1e9), (unsigned long long)late,
           (unsigned long long)st.send_errors);
    calls_print(&calls);
    fflush(stdout);
    free(buf);
    ams_unregister(m);
    return 0;
}

/* ------------------------------------------------------------------- BP */

static int bp_up(const char *eid, BpSAP *sap)
{
    int rc = bp_attach(NULL);
    if (rc) {
        fprintf(stderr, "bench_rams: attach: %s (%s)\n", bp_strerror(rc), bp_errmsg());
        return -1;
    }
    if ((rc = bp_open(eid, sap))) {
        fprintf(stderr, "bench_rams: open %s: %s (%s)\n", eid, bp_strerror(rc),
                bp_errmsg());
        bp_detach();
        return -1;
    }
    return 0;
}

static int do_bprecv(const char *eid, double max_s)
{
    BpSAP sap;
    if (bp_up(eid, &sap))
        return 1;
    printf("ready\n");
    fflush(stdout);
    struct lat l = {0};
    uint64_t got = 0, first_seq = 0, max_seq = 0, start = now_ns();
    uint64_t end = start + (uint64_t)(max_s * 1e9);
    const char *why = NULL;
    for (;;) {
        if (now_ns() > end) {
            why = "no end marker in time";
            break;
        }
        BpDelivery d;
        int rc = bp_receive(sap, &d, 200);
        if (rc == -ETIMEDOUT || rc == -EAGAIN || rc == -EINTR)
            continue;
        if (rc) {
            why = "bp_receive failed";
            break;
        }
        uint64_t t = now_ns(), seq = 0, sent = 0;
        if (d.len >= 16) {
            memcpy(&seq, d.payload, 8);
            memcpy(&sent, d.payload + 8, 8);
        }
        bp_release_delivery(&d);
        if (seq == END)
            break;
        if (!got)
            first_seq = seq;
        got++;
        if (seq > max_seq)
            max_seq = seq;
        if (sent && t >= sent)
            lat_add(&l, (double)(t - sent) / 1000.0);
    }
    printf("{\"received\": %llu, \"first_seq\": %llu, \"max_seq\": %llu, \"error\": "
           "%s%s%s, ",
           (unsigned long long)got, (unsigned long long)first_seq,
           (unsigned long long)max_seq, why ? "\"" : "", why ? why : "null",
           why ? "\"" : "");
    lat_print(&l);
    printf("}\n");
    fflush(stdout);
    bp_close(sap);
    bp_detach();
    return why ? 1 : 0;
}

static int do_bpsend(const char *eid, const char *dest, int size, double rate,
                     double secs)
{
    BpSAP sap;
    if (bp_up(eid, &sap))
        return 1;
    if (size < 16)
        size = 16;
    char *buf = calloc(1, (size_t)size);
    BpSendOpts opts = BP_SEND_OPTS_INIT;
    opts.lifetime_s = 300;
    opts.priority = BP_BULK_PRIORITY;
    uint64_t t0 = now_ns(), end = t0 + (uint64_t)(secs * 1e9), n = 0, late = 0;
    uint64_t gap = (uint64_t)(1e9 / rate);
    int rc = 0;
    struct calls calls = {0};
    for (;;) {
        uint64_t t = now_ns();
        if (t >= end)
            break;
        uint64_t due = t0 + n * gap;
        if (due > t)
            sleep_until(due);
        else if (t - due > 1000000)
            late++;
        n++;
        uint64_t ts = now_ns();
        stamp(buf, n, ts);
        if ((rc = bp_send(sap, dest, buf, (size_t)size, &opts, NULL))) {
            fprintf(stderr, "bench_rams bpsend: %s (%s)\n", bp_strerror(rc), bp_errmsg());
            return 1;
        }
        call_took(&calls, now_ns() - ts);
    }
    uint64_t t1 = now_ns();
    stamp(buf, END, 0);
    bp_send(sap, dest, buf, (size_t)size, &opts, NULL);
    rc = bp_flush(sap, 10000);
    printf("{\"sent\": %llu, \"secs\": %.6f, \"per_s\": %.1f, \"late_1ms\": %llu, "
           "\"flush\": %d, ",
           (unsigned long long)n, (double)(t1 - t0) / 1e9,
           (double)n / ((double)(t1 - t0) / 1e9), (unsigned long long)late, rc);
    calls_print(&calls);
    fflush(stdout);
    free(buf);
    bp_close(sap);
    bp_detach();
    return 0;
}

int main(int argc, char **argv)
{
    if ((argc == 5 || argc == 6) && !strcmp(argv[1], "sub"))
        return do_sub(atoi(argv[2]), atof(argv[3]), atof(argv[4]),
                      argc == 6 && !strcmp(argv[5], "-l"));
    if (argc == 6 && !strcmp(argv[1], "pub"))
        return do_pub(atoi(argv[2]), atof(argv[3]), atof(argv[4]), argv[5]);
    if (argc == 4 && !strcmp(argv[1], "bprecv"))
        return do_bprecv(argv[2], atof(argv[3]));
    if (argc == 7 && !strcmp(argv[1], "bpsend"))
        return do_bpsend(argv[2], argv[3], atoi(argv[4]), atof(argv[5]), atof(argv[6]));
    fprintf(stderr,
            "usage: bench_rams sub CONT WARM_S WINDOW_S [-l] | pub SIZE SECS RATE "
            "ROLE | bprecv EID MAX_S | bpsend EID DEST SIZE RATE SECS\n");
    return 2;
}
