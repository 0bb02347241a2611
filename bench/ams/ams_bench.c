/* bench_ams: the processes of bench/ams (run.py drives them).
 *
 *   bench_ams sub [-a]              subscribe to "bench" (best effort; -a
 *                                   assured), count until the end marker,
 *                                   print JSON {msgs, bytes, secs, lost}
 *   bench_ams pub N SIZE SUBS       wait until SUBS modules subscribe,
 *                                   publish N messages on "bench" as fast as
 *                                   it can, then an end marker
 *   bench_ams echo                  subscribe to "bench", publish each
 *                                   message back on "textreturn"
 *   bench_ams ping RATE COUNT SIZE  publish COUNT messages at RATE/s with a
 *                                   send stamp, take the echoes, print JSON
 *                                   of the round trips (us)
 *   bench_ams rawudp SIZE SECS      the baseline: datagrams of SIZE bytes
 *                                   from one thread to another's socket for
 *                                   SECS, print JSON {per_s}
 *
 * The MIB is TERN_AMS_MIB (ION's amsdemo/test venture). Every message holds
 * its sequence number (8 bytes) and its send time (8 bytes); the end marker
 * has sequence number UINT64_MAX. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ams.h"

#define END UINT64_MAX

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static AmsModule reg(const char *role)
{
    AmsModule m;
    if (ams_register("", NULL, "amsdemo", "test", "", role, &m) < 0) {
        fprintf(stderr, "bench_ams: register %s: %s\n", role, ams_last_error());
        exit(1);
    }
    return m;
}

static int subject(AmsModule m, const char *name)
{
    int s = ams_lookup_subject_nbr(m, name);
    if (s < 0) {
        fprintf(stderr, "bench_ams: %s\n", ams_last_error());
        exit(1);
    }
    return s;
}

static void stamp(char *buf, uint64_t seq, uint64_t t)
{
    memcpy(buf, &seq, 8);
    memcpy(buf + 8, &t, 8);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static int do_sub(int assured)
{
    AmsModule m = reg("benchr");
    int s = subject(m, "bench");
    if (ams_subscribe(m, 0, 0, 0, s, 8, 0, AmsArrivalOrder,
                      assured ? AmsAssured : AmsBestEffort) < 0) {
        fprintf(stderr, "bench_ams: %s\n", ams_last_error());
        return 1;
    }
    printf("subscribed\n");
    fflush(stdout);
    uint64_t msgs = 0, bytes = 0, t0 = 0, t1 = 0, maxseq = 0;
    for (;;) {
        AmsEvent e;
        if (ams_get_event(m, 30000000, &e) < 0)
            return 1;
        int type = ams_get_event_type(e);
        if (type == TIMEOUT_EVT) {
            fprintf(stderr, "bench_ams sub: nothing for 30 s\n");
            ams_recycle_event(e);
            return 1;
        }
        if (type == AMS_MSG_EVT) {
            char *c;
            int len;
            ams_parse_msg(e, NULL, NULL, NULL, NULL, &len, &c, NULL, NULL, NULL, NULL);
            uint64_t seq = 0;
            if (len >= 16)
                memcpy(&seq, c, 8);
            if (seq == END) {
                ams_recycle_event(e);
                break;
            }
            if (!msgs)
                t0 = now_ns();
            t1 = now_ns();
            msgs++;
            bytes += (uint64_t)len;
            if (seq > maxseq)
                maxseq = seq;
        }
        ams_recycle_event(e);
    }
    ams_module_stats st;
    ams_get_stats(m, &st);
    double secs = t1 > t0 ? (double)(t1 - t0) / 1e9 : 0;
    printf(
        "{\"msgs\": %llu, \"bytes\": %llu, \"secs\": %.6f, \"sent_by_publisher\": %llu, "
        "\"lost\": %llu, \"dropped_queue_full\": %llu}\n",
        (unsigned long long)msgs, (unsigned long long)bytes, secs,
        (unsigned long long)maxseq, (unsigned long long)(maxseq - msgs),
        (unsigned long long)st.dropped_queue_full);
    ams_unregister(m);
    return 0;
}

/* Waits until n modules have subscribed to subject s. */
static void wait_subs(AmsModule m, int s, int n)
{
    int have = 0;
    uint64_t end = now_ns() + 30000000000ull;
    while (have < n && now_ns() < end) {
        AmsEvent e;
        if (ams_get_event(m, 100000, &e) < 0)
            break;
        AmsStateType st;
        AmsChangeType ch;
        int subj = -1;
        if (ams_get_event_type(e) == NOTICE_EVT &&
            ams_parse_notice(e, &st, &ch, NULL, NULL, NULL, NULL, NULL, &subj, NULL, NULL,
                             NULL, NULL) == 0 &&
            st == AmsSubscriptionState && ch == AmsStateBegins && subj == s)
            have++;
        ams_recycle_event(e);
    }
    if (have < n) {
        fprintf(stderr, "bench_ams pub: %d of %d subscribers after 30 s\n", have, n);
        exit(1);
    }
}

static int do_pub(uint64_t n, int size, int subs)
{
    AmsModule m = reg("benchs");
    int s = subject(m, "bench");
    wait_subs(m, s, subs);
    char *buf = calloc(1, (size_t)size);
    uint64_t t0 = now_ns();
    for (uint64_t i = 1; i <= n; i++) {
        stamp(buf, i, 0);
        if (ams_publish(m, s, 0, 0, size, buf, 0) < 0) {
            fprintf(stderr, "bench_ams pub: %s\n", ams_last_error());
            return 1;
        }
    }
    uint64_t t1 = now_ns();
    /* the end marker, a few times (best effort may lose one) */
    stamp(buf, END, 0);
    for (int k = 0; k < 20; k++) {
        ams_publish(m, s, 0, 0, size, buf, 0);
        usleep(20000);
    }
    ams_module_stats st;
    ams_get_stats(m, &st);
    printf("{\"published\": %llu, \"secs\": %.6f, \"send_errors\": %llu}\n",
           (unsigned long long)n, (double)(t1 - t0) / 1e9,
           (unsigned long long)st.send_errors);
    free(buf);
    ams_unregister(m);
    return 0;
}

static int do_echo(void)
{
    AmsModule m = reg("catch");
    int s = subject(m, "bench"), back = subject(m, "textreturn");
    if (ams_subscribe(m, 0, 0, 0, s, 8, 0, AmsArrivalOrder, AmsBestEffort) < 0)
        return 1;
    printf("subscribed\n");
    fflush(stdout);
    for (;;) {
        AmsEvent e;
        if (ams_get_event(m, AMS_BLOCKING, &e) < 0)
            return 1;
        if (ams_get_event_type(e) == AMS_MSG_EVT) {
            char *c;
            int len;
            ams_parse_msg(e, NULL, NULL, NULL, NULL, &len, &c, NULL, NULL, NULL, NULL);
            uint64_t seq = 0;
            if (len >= 8)
                memcpy(&seq, c, 8);
            ams_publish(m, back, 0, 0, len, c, 0);
            if (seq == END) {
                ams_recycle_event(e);
                break;
            }
        }
        ams_recycle_event(e);
    }
    ams_unregister(m);
    return 0;
}

static int do_ping(int rate, int count, int size)
{
    AmsModule m = reg("pitch");
    int s = subject(m, "bench"), back = subject(m, "textreturn");
    if (ams_subscribe(m, 0, 0, 0, back, 8, 0, AmsArrivalOrder, AmsBestEffort) < 0)
        return 1;
    wait_subs(m, s, 1);
    usleep(200000); /* the echo hears of this module's subscription too */
    uint64_t *rtt = calloc((size_t)count, sizeof *rtt);
    char *buf = calloc(1, (size_t)(size < 16 ? 16 : size));
    int got = 0;
    uint64_t gap = 1000000000ull / (uint64_t)rate, start = now_ns();
    for (int i = 0; i < count;) {
        uint64_t due = start + (uint64_t)i * gap, t = now_ns();
        if (t >= due) {
            stamp(buf, (uint64_t)i + 1, now_ns());
            ams_publish(m, s, 0, 0, size, buf, 0);
            i++;
            continue;
        }
        AmsEvent e;
        uint64_t wait_us = (due - t) / 1000;
        if (ams_get_event(m, wait_us ? (int)wait_us : AMS_POLL, &e) < 0 || !e)
            continue;
        if (ams_get_event_type(e) == AMS_MSG_EVT) {
            char *c;
            int len;
            ams_parse_msg(e, NULL, NULL, NULL, NULL, &len, &c, NULL, NULL, NULL, NULL);
            uint64_t seq, sent;
            if (len >= 16) {
                memcpy(&seq, c, 8);
                memcpy(&sent, c + 8, 8);
                if (seq >= 1 && seq <= (uint64_t)count && got < count)
                    rtt[got++] = now_ns() - sent;
            }
        }
        ams_recycle_event(e);
    }
    uint64_t end = now_ns() + 1000000000ull;
    while (got < count && now_ns() < end) {
        AmsEvent e;
        if (ams_get_event(m, 100000, &e) < 0 || !e)
            continue;
        if (ams_get_event_type(e) == AMS_MSG_EVT) {
            char *c;
            int len;
            ams_parse_msg(e, NULL, NULL, NULL, NULL, &len, &c, NULL, NULL, NULL, NULL);
            uint64_t sent;
            if (len >= 16) {
                memcpy(&sent, c + 8, 8);
                rtt[got++] = now_ns() - sent;
            }
        }
        ams_recycle_event(e);
    }
    stamp(buf, END, 0);
    ams_publish(m, s, 0, 0, size, buf, 0);
    qsort(rtt, (size_t)got, sizeof *rtt, cmp_u64);
    printf("{\"sent\": %d, \"echoed\": %d, \"rtt_us\": [", count, got);
    for (int i = 0; i < got; i++)
        printf("%s%.2f", i ? ", " : "", (double)rtt[i] / 1000.0);
    printf("]}\n");
    free(rtt);
    free(buf);
    ams_unregister(m);
    return 0;
}

struct rx {
    int fd;
    volatile int stop;
    uint64_t n;
};

static void *rx_main(void *arg)
{
    struct rx *r = arg;
    char buf[65536];
    while (!r->stop) {
        ssize_t k = recv(r->fd, buf, sizeof buf, 0);
        if (k > 0)
            r->n++;
    }
    return NULL;
}

static int do_rawudp(int size, double secs)
{
    int rfd = socket(AF_INET, SOCK_DGRAM, 0), sfd = socket(AF_INET, SOCK_DGRAM, 0);
    int big = 8 << 20;
    setsockopt(rfd, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    struct timeval tv = {0, 100000};
    setsockopt(rfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001)};
    socklen_t sl = sizeof sa;
    if (bind(rfd, (struct sockaddr *)&sa, sizeof sa) ||
        getsockname(rfd, (struct sockaddr *)&sa, &sl) ||
        connect(sfd, (struct sockaddr *)&sa, sizeof sa)) {
        perror("bench_ams rawudp");
        return 1;
    }
    struct rx r = {.fd = rfd};
    pthread_t t;
    pthread_create(&t, NULL, rx_main, &r);
    char *buf = calloc(1, (size_t)size);
    uint64_t t0 = now_ns(), end = t0 + (uint64_t)(secs * 1e9), sent = 0;
    while (now_ns() < end)
        if (send(sfd, buf, (size_t)size, 0) == size)
            sent++;
    uint64_t t1 = now_ns();
    usleep(200000);
    r.stop = 1;
    pthread_join(t, NULL);
    double d = (double)(t1 - t0) / 1e9;
    printf("{\"sent_per_s\": %.1f, \"received_per_s\": %.1f}\n", (double)sent / d,
           (double)r.n / d);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "sub"))
        return do_sub(argc > 2 && !strcmp(argv[2], "-a"));
    if (argc == 5 && !strcmp(argv[1], "pub"))
        return do_pub(strtoull(argv[2], NULL, 10), atoi(argv[3]), atoi(argv[4]));
    if (argc == 2 && !strcmp(argv[1], "echo"))
        return do_echo();
    if (argc == 5 && !strcmp(argv[1], "ping"))
        return do_ping(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]));
    if (argc == 4 && !strcmp(argv[1], "rawudp"))
        return do_rawudp(atoi(argv[2]), atof(argv[3]));
    fprintf(stderr,
            "usage: bench_ams sub [-a] | pub N SIZE SUBS | echo | ping RATE COUNT "
            "SIZE | rawudp SIZE SECS\n");
    return 2;
}
