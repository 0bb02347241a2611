/* bpping: round-trip latency through bpecho, in the manner of ping(8)
 * (docs/tools.md).
 *
 *   bpping [-c count] [-i interval] [-q] [-p payload size] [-W wait] [-t ttl]
 *          [--node DIR] <own EID> <destination EID>
 *
 * Sends a bundle every interval seconds (0: the next as soon as the reply
 * came) from the own endpoint to the destination, where bpecho sends it
 * back; prints a line per reply and, at the end (count reached, or
 * SIGINT/SIGTERM), min/avg/max/mdev, median and 99th percentile. The payload
 * layout is in bptool.h; a reply whose bytes differ from what was sent counts
 * as corrupt. Exit status 0 if any reply came, 1 if none did, 2 for usage.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bptool.h"

#define PROG "bpping"

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: bpping [-c count] [-i interval] [-q] [-p payload size] [-W wait]\n"
        "              [-t ttl] [--node DIR] <own EID> <destination EID>\n"
        "  the destination runs bpecho; prints round-trip times like ping(8)\n"
        "  -c count     stop after count replies or losses (default: until SIGINT)\n"
        "  -i interval  seconds between bundles, may be fractional; 0 sends the next\n"
        "               as soon as a reply came (default 1)\n"
        "  -p size      payload bytes, at least %d (default 64; k/M suffixes)\n"
        "  -W wait      seconds to wait for the last replies (default 5)\n"
        "  -t ttl       lifetime of the bundles in seconds (default %d)\n"
        "  -q           only the summary\n"
        "  --node DIR   the node directory (default $TERN_NODE_DIR, else .)\n"
        "exit status: 0 a reply came, 1 none did (or a failure), 2 usage\n",
        BT_PING_HDR, BT_ION_TTL);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Square root by Newton's method: the tools link no libm. */
static double root(double v)
{
    if (v <= 0)
        return 0;
    double x = v > 1 ? v : 1;
    for (int i = 0; i < 200; i++) {
        double nx = (x + v / x) / 2;
        if (nx == x)
            break;
        x = nx;
    }
    return x;
}

/* The payload's check value: bytes 0..24 and everything after 28. */
static uint32_t ping_crc(const uint8_t *p, size_t len)
{
    uint32_t c = tern_crc32c(0, p, 24);
    return tern_crc32c(c, p + 28, len - 28);
}

int main(int argc, char **argv)
{
    const char *node = NULL;
    uint64_t count = 0, size = 64, ttl = BT_ION_TTL;
    double interval = 1, wait_s = 5;
    int quiet = 0;
    static const struct option lopts[] = {
        {"node", required_argument, 0, 'N'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int o;
    while ((o = getopt_long(argc, argv, "+c:i:qp:W:t:h", lopts, NULL)) != -1) {
        int bad = 0;
        switch (o) {
        case 'c':
            bad = bt_parse_size(optarg, &count) || !count;
            break;
        case 'i':
            bad = bt_parse_secs(optarg, &interval);
            break;
        case 'q':
            quiet = 1;
            break;
        case 'p':
            bad =
                bt_parse_size(optarg, &size) || size < BT_PING_HDR || size > (1ull << 30);
            break;
        case 'W':
            bad = bt_parse_secs(optarg, &wait_s);
            break;
        case 't':
            bad = bt_parse_size(optarg, &ttl) || !ttl || ttl > UINT32_MAX;
            break;
        case 'N':
            node = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
        if (bad) {
            fprintf(stderr, PROG ": bad value '%s' for -%c%s\n", optarg, o,
                    o == 'p' ? " (payload size, at least 32 bytes)" : "");
            return 2;
        }
    }
    if (argc - optind != 2) {
        if (argc - optind > 2)
            fprintf(stderr, PROG ": unexpected argument '%s'\n", argv[optind + 2]);
        usage(stderr);
        return 2;
    }
    const char *own = argv[optind], *dest = argv[optind + 1];
    int rc = bt_check_eid(PROG, "own EID", own);
    if (!rc)
        rc = bt_check_eid(PROG, "destination EID", dest);
    if (rc)
        return rc;

    uint8_t *buf = malloc(size);
    double *rtt = NULL;
    size_t nrtt = 0, caprtt = 0;
    uint8_t *seen = NULL; /* one byte per sequence number: replied */
    size_t capseen = 0;
    if (!buf) {
        fprintf(stderr, PROG ": out of memory\n");
        return 1;
    }
    uint64_t seed = bt_seed();
    for (size_t k = 28; k < size; k++)
        buf[k] = (uint8_t)bt_rand(&seed);
    bt_put32(buf, BT_PING_MAGIC);
    uint32_t id = (uint32_t)bt_rand(&seed);
    bt_put32(buf + 4, id);

    BpSAP sap;
    if (bt_start(PROG, node, own, &sap)) {
        free(buf);
        return 1;
    }

    BpSendOpts so = BP_SEND_OPTS_INIT;
    so.lifetime_s = (uint32_t)ttl;
    if (!quiet)
        printf("BPPING %s from %s: %" PRIu64 " bytes of payload\n", dest, own, size);
    fflush(stdout);
    uint64_t sent = 0, received = 0, dups = 0, corrupt = 0, other = 0;
    int status = 0;
    double t0 = bt_now(), next = t0, last_sent = t0;
    int waiting = 0; /* interval 0: a bundle is out and unanswered */
    for (;;) {
        double now = bt_now();
        int more = !bt_stopped() && (!count || sent < count);
        if (more && now >= next && !waiting) {
            bt_put64(buf + 8, sent);
            bt_put64(buf + 16, bt_now_ns());
            bt_put32(buf + 28, 0);
            bt_put32(buf + 24, ping_crc(buf, size));
            rc = bp_send(sap, dest, buf, size, &so, NULL);
            if (rc == -EINTR && bt_stopped())
                break;
            if (rc) {
                bt_report(PROG, "send failed", rc);
                status = 1;
                break;
            }
            sent++;
            last_sent = now;
            if (interval > 0) {
                next += interval;
                if (next < now)
                    next = now + interval; /* late: do not send a burst */
            } else {
                waiting = 1;
            }
            continue;
        }
        double until;
        if (more && !waiting)
            until = next;
        else if (more && waiting)
            until = last_sent + wait_s; /* interval 0: give the reply up then */
        else
            until = last_sent + wait_s;
        if (!more && (received + corrupt >= sent || bt_stopped()))
            break;
        double left = until - now;
        int ms = left > 0 ? (int)(left * 1000) + 1 : 0;
        BpDelivery d;
        rc = bp_receive(sap, &d, ms);
        if (rc == -EINTR)
            continue; /* stops sending; the loop ends above */
        if (rc == -ETIMEDOUT || rc == -EAGAIN) {
            if (waiting) {
                if (!quiet)
                    printf("no reply to seq=%" PRIu64 " within %.1f s\n", sent - 1,
                           wait_s);
                waiting = 0;
                next = bt_now();
            } else if (!more) {
                break; /* the last replies did not come */
            }
            continue;
        }
        if (rc) {
            bt_report(PROG, "bundle reception failed", rc);
            status = 1;
            break;
        }
        uint64_t t_recv = bt_now_ns();
        const uint8_t *p = d.payload;
        if (d.len < BT_PING_HDR || bt_get32(p) != BT_PING_MAGIC ||
            bt_get32(p + 4) != id) {
            other++;
            bp_release_delivery(&d);
            continue;
        }
        uint64_t seq = bt_get64(p + 8);
        if (d.len != size || ping_crc(p, d.len) != bt_get32(p + 24) || seq >= sent) {
            corrupt++;
            if (!quiet)
                printf("%zu bytes from %s: corrupt reply (length or CRC-32C differs)\n",
                       d.len, d.src);
            bp_release_delivery(&d);
            continue;
        }
        double ms_rtt = (double)(t_recv - bt_get64(p + 16)) / 1e6;
        if (seq >= capseen) {
            size_t nc = capseen ? capseen * 2 : 1024;
            while (nc <= seq)
                nc *= 2;
            uint8_t *ns = realloc(seen, nc);
            if (!ns) {
                fprintf(stderr, PROG ": out of memory\n");
                status = 1;
                bp_release_delivery(&d);
                break;
            }
            memset(ns + capseen, 0, nc - capseen);
            seen = ns;
            capseen = nc;
        }
        if (seen[seq]) {
            dups++;
            if (!quiet)
                printf("%zu bytes from %s: seq=%" PRIu64 " time=%.3f ms (DUP!)\n", d.len,
                       d.src, seq, ms_rtt);
            bp_release_delivery(&d);
            continue;
        }
        seen[seq] = 1;
        received++;
        if (nrtt == caprtt) {
            size_t nc = caprtt ? caprtt * 2 : 1024;
            double *nr = realloc(rtt, nc * sizeof *nr);
            if (!nr) {
                fprintf(stderr, PROG ": out of memory\n");
                status = 1;
                bp_release_delivery(&d);
                break;
            }
            rtt = nr;
            caprtt = nc;
        }
        rtt[nrtt++] = ms_rtt;
        if (!quiet)
            printf("%zu bytes from %s: seq=%" PRIu64 " time=%.3f ms\n", d.len, d.src, seq,
                   ms_rtt);
        fflush(stdout);
        if (waiting && seq == sent - 1) {
            waiting = 0;
            next = bt_now();
        }
        bp_release_delivery(&d);
    }
    double total = bt_now() - t0;
    bt_signals_wake(NULL);
    bp_close(sap);
    bp_detach();

    printf("\n--- %s bpping statistics ---\n", dest);
    printf("%" PRIu64 " bundles transmitted, %" PRIu64 " received, ", sent, received);
    if (dups)
        printf("+%" PRIu64 " duplicates, ", dups);
    if (corrupt)
        printf("%" PRIu64 " corrupt, ", corrupt);
    printf("%.1f%% bundle loss, time %.0fms\n",
           sent ? 100.0 * (double)(sent - received) / (double)sent : 0.0, total * 1e3);
    if (nrtt) {
        double sum = 0, sum2 = 0, mn = rtt[0], mx = rtt[0];
        for (size_t i = 0; i < nrtt; i++) {
            sum += rtt[i];
            sum2 += rtt[i] * rtt[i];
            mn = rtt[i] < mn ? rtt[i] : mn;
            mx = rtt[i] > mx ? rtt[i] : mx;
        }
        double avg = sum / (double)nrtt;
        double var = sum2 / (double)nrtt - avg * avg;
        qsort(rtt, nrtt, sizeof *rtt, cmp_double);
        double med = nrtt % 2 ? rtt[nrtt / 2] : (rtt[nrtt / 2 - 1] + rtt[nrtt / 2]) / 2;
        size_t k99 = (99 * nrtt + 99) / 100; /* nearest rank: ceil(0.99 n) */
        double p99 = rtt[k99 ? k99 - 1 : 0];
        printf("rtt min/avg/max/mdev = %.3f/%.3f/%.3f/%.3f ms\n", mn, avg, mx, root(var));
        printf("rtt median = %.3f ms, p99 = %.3f ms\n", med, p99);
    }
    if (other)
        printf("%" PRIu64 " other bundles arrived on %s and were ignored\n", other, own);
    fflush(stdout);
    free(buf);
    free(rtt);
    free(seen);
    return status ? 1 : received ? 0 : 1;
}
