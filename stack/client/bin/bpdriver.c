/* bpdriver: ION's throughput driver (docs/tools.md).
 *
 *   bpdriver <nbr of cycles> <own EID> <destination EID> [<length of ADU>]
 *            [t<TTL>] [i<rate>] [--node DIR] [--json FILE] [--quiet] ...
 *
 * As ION's: sends the cycles' bundles of the given length (default 60000)
 * to the destination. A positive length runs in echo mode (after each bundle
 * wait for a reply, from bpecho); a negative one streams (for bpcounter).
 * An effective length of 1 picks random multiples of 1024 from 1024 to 62464
 * for each bundle. A negative cycle count asked ION for custody transfer,
 * which BPv7 does not have: accepted, noted, ignored. t<TTL> is the lifetime
 * in seconds (default 300), i<rate> an injection rate in bits per second.
 *
 * Each payload starts with the 28-byte header of bptool.h (sequence number
 * and CRC-32C) so bpcounter can verify it. Exit status 0 once every bundle
 * is committed by the node (and, in echo mode, answered), 1 otherwise, 2 for
 * usage errors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bptool.h"

#define PROG "bpdriver"

#define ION_DEFAULT_LEN 60000
#define RAND_MIN_LEN    1024
#define RAND_MAX_LEN    62464

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: bpdriver <nbr of cycles> <own EID> <destination EID> [<length of ADU>]\n"
        "                [t<TTL>] [i<rate>] [options]\n"
        "  length > 0: echo mode, waits for bpecho's reply to each bundle\n"
        "  length < 0: streaming mode (to bpcounter), length = -length\n"
        "  length 1 (or -1): random multiples of 1024 from 1024 to 62464\n"
        "  default length %d; a negative cycle count (ION's custody transfer) is\n"
        "  accepted and ignored\n"
        "  t<TTL>              lifetime in seconds (default %d)\n"
        "  i<rate>             injection rate in bits per second (k/M/G suffixes)\n"
        "  --node DIR          the node directory (default $TERN_NODE_DIR, else .)\n"
        "  --stream            streaming mode whatever the sign of the length\n"
        "  --priority 0|1|2    bulk, standard (default) or expedited\n"
        "  --timeout S         echo mode: give up on a reply after S seconds\n"
        "  --json FILE         also write the results as JSON\n"
        "  --quiet             no progress line, no notes\n"
        "  lengths take k, M, G (1000s) or Ki, Mi, Gi (1024s)\n"
        "exit status: 0 all sent (and echoed), 1 failure, 2 usage\n",
        ION_DEFAULT_LEN, BT_ION_TTL);
}

/* A length in ION's form: optional '-', digits, optional size suffix. */
static int parse_len(const char *s, int64_t *out)
{
    int neg = s[0] == '-';
    uint64_t v;
    if (bt_parse_size(s + neg, &v) || v > (1ull << 40))
        return -1;
    *out = neg ? -(int64_t)v : (int64_t)v;
    return 0;
}

/* What the progress line shows. */
struct prog {
    bt_progress pg;
    uint64_t sent, n, bytes;
    double t0;
};

static void show(void *arg)
{
    struct prog *p = arg;
    if (!bt_progress_due(&p->pg))
        return;
    double el = bt_now() - p->t0;
    fprintf(stderr, "\r\033[K" PROG ": %" PRIu64 "/%" PRIu64 " bundles, %.2f Mbit/s%s",
            p->sent, p->n, el > 0 ? (double)p->bytes * 8 / el / 1e6 : 0.0,
            bt_store_note());
}

int main(int argc, char **argv)
{
    const char *own = NULL, *dest = NULL, *node = NULL, *json = NULL;
    int64_t cycles = 0, length = ION_DEFAULT_LEN;
    uint64_t ttl = BT_ION_TTL, rate = 0, prio = BP_STD_PRIORITY;
    double timeout = 0;
    int quiet = 0, force_stream = 0, npos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
            quiet = 1;
        } else if (!strcmp(a, "--stream")) {
            force_stream = 1;
        } else if (!strcmp(a, "--node") || !strcmp(a, "--json") ||
                   !strcmp(a, "--timeout") || !strcmp(a, "--priority") ||
                   !strcmp(a, "--ttl") || !strcmp(a, "--rate")) {
            if (!val) {
                fprintf(stderr, PROG ": %s needs a value\n", a);
                return 2;
            }
            i++;
            int bad = 0;
            if (!strcmp(a, "--node"))
                node = val;
            else if (!strcmp(a, "--json"))
                json = val;
            else if (!strcmp(a, "--timeout"))
                bad = bt_parse_secs(val, &timeout);
            else if (!strcmp(a, "--priority"))
                bad = bt_parse_size(val, &prio) || prio > 2;
            else if (!strcmp(a, "--ttl"))
                bad = bt_parse_size(val, &ttl) || !ttl;
            else
                bad = bt_parse_size(val, &rate);
            if (bad) {
                fprintf(stderr, PROG ": bad value '%s' for %s\n", val, a);
                return 2;
            }
        } else if (a[0] == '-' && a[1] == '-') {
            fprintf(stderr, PROG ": unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        } else if (npos >= 3 && a[0] == 't' && a[1]) {
            if (bt_parse_size(a + 1, &ttl) || !ttl) {
                fprintf(stderr, PROG ": bad TTL '%s' (expected t<seconds>, e.g. t300)\n",
                        a);
                return 2;
            }
        } else if (npos >= 3 && a[0] == 'i' && a[1]) {
            if (bt_parse_size(a + 1, &rate)) {
                fprintf(stderr,
                        PROG ": bad rate '%s' (expected i<bits per second>, e.g. "
                             "i100M)\n",
                        a);
                return 2;
            }
        } else if (npos == 0) {
            if (bt_parse_int(a, &cycles) || cycles == 0) {
                fprintf(stderr,
                        PROG ": bad number of cycles '%s' (a whole number, not 0)\n", a);
                return 2;
            }
            npos++;
        } else if (npos == 1) {
            own = a;
            npos++;
        } else if (npos == 2) {
            dest = a;
            npos++;
        } else if (npos == 3) {
            if (parse_len(a, &length) || length == 0) {
                fprintf(stderr,
                        PROG ": bad length of ADU '%s' (bytes, negative to stream, "
                             "not 0)\n",
                        a);
                return 2;
            }
            npos++;
        } else {
            fprintf(stderr, PROG ": unexpected argument '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (npos < 3) {
        usage(stderr);
        return 2;
    }
    int rc = bt_check_eid(PROG, "own EID", own);
    if (!rc)
        rc = bt_check_eid(PROG, "destination EID", dest);
    if (rc)
        return rc;
    if (ttl > UINT32_MAX) {
        fprintf(stderr, PROG ": TTL %" PRIu64 " s is too long\n", ttl);
        return 2;
    }
    int stream = force_stream || length < 0;
    uint64_t len = (uint64_t)(length < 0 ? -length : length);
    int random_len = len == 1;
    uint64_t n = (uint64_t)(cycles < 0 ? -cycles : cycles);
    if (cycles < 0 && !quiet)
        fprintf(stderr, PROG ": note: custody transfer (negative cycle count) does not "
                             "exist in BPv7; sending without it\n");
    uint64_t maxlen = random_len ? RAND_MAX_LEN : len;
    bt_tune_malloc();

    /* One buffer of random data; only each bundle's header changes. */
    uint8_t *buf = malloc(maxlen);
    if (!buf) {
        fprintf(stderr, PROG ": out of memory for %" PRIu64 "-byte bundles\n", maxlen);
        return 1;
    }
    uint64_t seed = bt_seed();
    for (uint64_t k = 0; k < maxlen; k += 8) {
        uint64_t r = bt_rand(&seed);
        memcpy(buf + k, &r, maxlen - k < 8 ? maxlen - k : 8);
    }
    uint32_t run = (uint32_t)bt_rand(&seed);
    uint32_t fixed_crc =
        len >= BT_DRV_HDR ? tern_crc32c(0, buf + BT_DRV_HDR, len - BT_DRV_HDR) : 0;
    if (!random_len && len < BT_DRV_HDR && !quiet)
        fprintf(stderr,
                PROG ": note: bundles of %" PRIu64 " bytes are too short for the %d-byte "
                     "test header: bpcounter cannot verify them\n",
                len, BT_DRV_HDR);

    BpSAP sap;
    if (bt_start(PROG, node, own, &sap)) {
        free(buf);
        return 1;
    }

    BpSendOpts o = BP_SEND_OPTS_INIT;
    o.lifetime_s = (uint32_t)ttl;
    o.priority = (int)prio;
    struct prog pr = {.n = n};
    bt_progress_init(&pr.pg, quiet);
    uint64_t sent = 0, bytes = 0, echoes = 0;
    double rtt_sum = 0;
    const char *why = "done";
    int status = 0;
    int wait_ms = timeout > 0 ? (int)(timeout * 1000 + 0.5) : -1;
    double t0 = bt_now();
    pr.t0 = t0;
    for (uint64_t seq = 0; seq < n; seq++) {
        if (bt_stopped()) {
            why = bt_signame();
            status = 1;
            break;
        }
        uint64_t blen = random_len ? RAND_MIN_LEN * (1 + bt_rand(&seed) % 61) : len;
        if (blen >= BT_DRV_HDR) {
            uint32_t dcrc = random_len
                                ? tern_crc32c(0, buf + BT_DRV_HDR, blen - BT_DRV_HDR)
                                : fixed_crc;
            bt_drv_seal(buf, run, seq, blen - BT_DRV_HDR, dcrc);
        }
        if (rate) {
            /* Paced: bundle k leaves once the bytes before it fit the rate. */
            double due = t0 + (double)bytes * 8 / (double)rate;
            double now = bt_now();
            if (due > now)
                usleep((useconds_t)((due - now) * 1e6));
        }
        /* Streaming small bundles: let the library batch them. */
        o.flags = stream && !rate && seq + 1 < n ? BP_SEND_MORE : 0;
        double ts = bt_now();
        pr.sent = sent;
        pr.bytes = bytes;
        rc = bt_wait_room(sap, show, &pr); /* the progress line goes on meanwhile */
        if (!rc)
            rc = bp_send(sap, dest, buf, (size_t)blen, &o, NULL);
        if (rc == -EINTR && bt_stopped()) {
            why = bt_signame();
            status = 1;
            break;
        }
        if (rc) {
            bt_report(PROG, "send failed", rc);
            why = "send error";
            status = 1;
            break;
        }
        sent++;
        bytes += blen;
        if (!stream) {
            if ((rc = bp_flush(sap, -1)) == -EINTR && bt_stopped()) {
                why = bt_signame();
                status = 1;
                break;
            }
            if (rc) {
                bt_report(PROG, "the node refused a bundle", rc);
                why = "send error";
                status = 1;
                break;
            }
            BpDelivery d;
            rc = bp_receive(sap, &d, wait_ms);
            if (rc == -EINTR) {
                why = bt_signame();
                status = 1;
                break;
            }
            if (rc == -ETIMEDOUT) {
                fprintf(stderr,
                        PROG ": no reply to bundle %" PRIu64 " within %.1f s (is bpecho "
                             "running on %s? use a negative length to stream to "
                             "bpcounter)\n",
                        seq, timeout, dest);
                why = "timeout";
                status = 1;
                break;
            }
            if (rc) {
                bt_report(PROG, "receiving the echo failed", rc);
                why = "receive error";
                status = 1;
                break;
            }
            bp_release_delivery(&d);
            echoes++;
            rtt_sum += bt_now() - ts;
        }
        pr.sent = sent;
        pr.bytes = bytes;
        show(&pr);
    }
    /* Done when the node has committed every bundle (after a signal only
     * what it commits at once). */
    unsigned left = 0;
    int full = 0;
    if (!status || bt_stopped()) {
        rc = bt_flush(sap, 60000);
        left = bp_node_unanswered(bp_node());
        full = bp_node_store_full(bp_node());
        if (rc && !bt_stopped())
            bt_report(PROG, "the node did not accept every bundle", rc);
        if (rc) {
            if (!status)
                why = "send error";
            status = 1;
        }
    }
    double secs = bt_now() - t0;
    bt_progress_end(&pr.pg);
    bt_signals_wake(NULL);
    bp_close(sap);
    bp_detach();
    if (left)
        fprintf(stderr,
                PROG ": %u of the bundles sent were not committed by the node%s\n", left,
                full ? " (its store is full)" : "");

    double mbps = secs > 0 ? (double)bytes * 8 / secs / 1e6 : 0;
    double bps = secs > 0 ? (double)sent / secs : 0;
    printf("bpdriver: %s mode, %" PRIu64 " of %" PRIu64 " bundles sent to %s (%s)\n",
           stream ? "streaming" : "echo", sent, n, dest, why);
    printf("bytes sent = %" PRIu64 ", seconds elapsed = %.3f, bundles/s = %.0f\n", bytes,
           secs, bps);
    printf("throughput = %.3f Mbps\n", mbps);
    if (!stream && echoes)
        printf("echoes = %" PRIu64 ", mean round trip = %.3f ms\n", echoes,
               rtt_sum / (double)echoes * 1e3);
    fflush(stdout);
    if (json) {
        FILE *f = fopen(json, "w");
        if (!f) {
            fprintf(stderr, PROG ": cannot write %s: %s\n", json, strerror(errno));
            status = 1;
        } else {
            fprintf(
                f,
                "{\"ok\": %s, \"reason\": \"%s\", \"mode\": \"%s\", \"cycles\": %" PRIu64
                ", \"bundles\": %" PRIu64 ", \"bytes\": %" PRIu64
                ", \"seconds\": %.6f, \"mbps\": %.6f, \"bundles_per_s\": %.1f, "
                "\"echoes\": %" PRIu64 "}\n",
                status ? "false" : "true", why, stream ? "stream" : "echo", n, sent,
                bytes, secs, mbps, bps, echoes);
            fclose(f);
        }
    }
    free(buf);
    return status;
}
