/* bench_multicast: the sender and the receivers of bench/multicast (run.py
 * drives them).
 *
 *   bench_multicast send OWN DEST COUNT SIZE RATE TAG
 *       open OWN on the node of $TERN_NODE_DIR, print "ready", wait for a
 *       line on stdin (the go), then send COUNT bundles of SIZE bytes to
 *       DEST (a group imc:G.S or an ipn EID), RATE bundles/s (0: as fast as
 *       the node takes them, batched with BP_SEND_MORE); wait until the node
 *       has taken every one; print JSON with the monotonic time of the first
 *       send (t0_ns) and of the last (t_last_ns)
 *   bench_multicast recv EID COUNT IDLE_S MAX_S TAG
 *       open EID (imc:G.S: the node is already a member through bpadmin),
 *       print "ready", take bundles until COUNT distinct ones came, or
 *       IDLE_S seconds passed without one after the first, or MAX_S in all;
 *       print JSON: received, distinct, duplicates, missing, the monotonic
 *       times of the first and the last delivery (first_ns, last_ns)
 *
 * Each payload starts with the run's TAG (8 bytes, given to both) and the
 * sequence number (8 bytes); the receiver keeps a bitmap of the numbers of
 * its run and counts bundles of any other run as foreign (a late or
 * duplicate delivery of an earlier run). CLOCK_MONOTONIC is one clock for every process
 * of the machine, in every network namespace, so the sender's t0_ns and the receivers'
 * last_ns can be subtracted. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tern_bp.h"

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_until(uint64_t t)
{
    struct timespec ts = {(time_t)(t / 1000000000ull), (long)(t % 1000000000ull)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

static int bp_up(const char *eid, BpSAP *sap)
{
    int rc = bp_attach(NULL);
    if (rc) {
        fprintf(stderr, "bench_multicast: attach: %s (%s)\n", bp_strerror(rc),
                bp_errmsg());
        return -1;
    }
    if ((rc = bp_open(eid, sap))) {
        fprintf(stderr, "bench_multicast: open %s: %s (%s)\n", eid, bp_strerror(rc),
                bp_errmsg());
        bp_detach();
        return -1;
    }
    return 0;
}

static int do_send(const char *own, const char *dest, uint64_t count, size_t size,
                   double rate, uint64_t tag)
{
    BpSAP sap;
    if (bp_up(own, &sap))
        return 1;
    if (size < 16)
        size = 16;
    uint8_t *buf = malloc(size);
    if (!buf)
        return 1;
    for (size_t k = 0; k < size; k++)
        buf[k] = (uint8_t)(k * 131 + 7);
    printf("ready\n");
    fflush(stdout);
    char line[64];
    if (!fgets(line, sizeof line, stdin)) {
        fprintf(stderr, "bench_multicast send: no go on stdin\n");
        return 1;
    }
    BpSendOpts o = BP_SEND_OPTS_INIT;
    o.lifetime_s = 600;
    uint64_t t0 = now_ns(), t_last = t0;
    uint64_t gap = rate > 0 ? (uint64_t)(1e9 / rate) : 0;
    memcpy(buf, &tag, 8);
    uint64_t sent = 0;
    int rc = 0;
    for (uint64_t seq = 0; seq < count; seq++) {
        if (gap) {
            uint64_t due = t0 + seq * gap;
            if (due > now_ns())
                sleep_until(due);
        }
        memcpy(buf + 8, &seq, 8);
        o.flags = !gap && seq + 1 < count ? BP_SEND_MORE : 0;
        t_last = now_ns();
        if ((rc = bp_send(sap, dest, buf, size, &o, NULL))) {
            fprintf(stderr, "bench_multicast send: bundle %llu: %s (%s)\n",
                    (unsigned long long)seq, bp_strerror(rc), bp_errmsg());
            break;
        }
        sent++;
    }
    int frc = bp_flush(sap, 120000);
    uint64_t t_flushed = now_ns();
    printf(
        "{\"sent\": %llu, \"t0_ns\": %llu, \"t_last_ns\": %llu, \"t_flushed_ns\": %llu, "
        "\"send_rc\": %d, \"flush_rc\": %d}\n",
        (unsigned long long)sent, (unsigned long long)t0, (unsigned long long)t_last,
        (unsigned long long)t_flushed, rc, frc);
    fflush(stdout);
    free(buf);
    bp_close(sap);
    bp_detach();
    return rc || frc ? 1 : 0;
}

static int do_recv(const char *eid, uint64_t count, double idle_s, double max_s,
                   uint64_t tag)
{
    BpSAP sap;
    if (bp_up(eid, &sap))
        return 1;
    uint8_t *seen = calloc((size_t)(count / 8 + 1), 1);
    if (!seen)
        return 1;
    printf("ready\n");
    fflush(stdout);
    uint64_t start = now_ns(), first = 0, last = 0, got = 0, distinct = 0, dups = 0;
    uint64_t foreign = 0, bytes = 0;
    const char *why = "count reached";
    while (distinct < count) {
        uint64_t t = now_ns();
        if (t - start > (uint64_t)(max_s * 1e9)) {
            why = "max time";
            break;
        }
        if (first && t - last > (uint64_t)(idle_s * 1e9)) { /* since our run's last */
            why = "idle";
            break;
        }
        BpDelivery d;
        int rc = bp_receive(sap, &d, 100);
        if (rc == -ETIMEDOUT || rc == -EAGAIN || rc == -EINTR)
            continue;
        if (rc) {
            fprintf(stderr, "bench_multicast recv: %s (%s)\n", bp_strerror(rc),
                    bp_errmsg());
            why = "receive error";
            break;
        }
        last = now_ns();
        uint64_t rtag = 0, seq = UINT64_MAX;
        if (d.len >= 16) {
            memcpy(&rtag, d.payload, 8);
            memcpy(&seq, d.payload + 8, 8);
        }
        bytes += d.len;
        bp_release_delivery(&d);
        got++;
        if (rtag != tag || seq >= count) {
            foreign++;
            continue;
        }
        if (!first)
            first = last;
        if (seen[seq / 8] & (1u << (seq % 8))) {
            dups++;
            continue;
        }
        seen[seq / 8] |= (uint8_t)(1u << (seq % 8));
        distinct++;
    }
    printf("{\"received\": %llu, \"distinct\": %llu, \"duplicates\": %llu, \"foreign\": "
           "%llu, "
           "\"missing\": %llu, \"bytes\": %llu, \"first_ns\": %llu, \"last_ns\": %llu, "
           "\"reason\": \"%s\", \"missing_seqs\": [",
           (unsigned long long)got, (unsigned long long)distinct,
           (unsigned long long)dups, (unsigned long long)foreign,
           (unsigned long long)(count - distinct), (unsigned long long)bytes,
           (unsigned long long)first, (unsigned long long)last, why);
    int listed = 0; /* the first 20 numbers missing */
    for (uint64_t q = 0; q < count && listed < 20; q++)
        if (!(seen[q / 8] & (1u << (q % 8))))
            printf("%s%llu", listed++ ? ", " : "", (unsigned long long)q);
    printf("]}\n");
    fflush(stdout);
    free(seen);
    bp_close(sap);
    bp_detach();
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 8 && !strcmp(argv[1], "send"))
        return do_send(argv[2], argv[3], strtoull(argv[4], NULL, 10),
                       (size_t)strtoull(argv[5], NULL, 10), atof(argv[6]),
                       strtoull(argv[7], NULL, 10));
    if (argc == 7 && !strcmp(argv[1], "recv"))
        return do_recv(argv[2], strtoull(argv[3], NULL, 10), atof(argv[4]), atof(argv[5]),
                       strtoull(argv[6], NULL, 10));
    fprintf(stderr, "usage: bench_multicast send OWN DEST COUNT SIZE RATE TAG\n"
                    "       bench_multicast recv EID COUNT IDLE_S MAX_S TAG\n");
    return 2;
}
