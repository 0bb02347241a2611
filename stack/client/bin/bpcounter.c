/* bpcounter: counts the bundles bpdriver streams to an endpoint, as ION's
 * does, and verifies them (docs/tools.md).
 *
 *   bpcounter <own EID> [<max nbr of bundles>] [--node DIR] [--timeout S]
 *             [--json FILE] [--quiet]
 *
 * Counts bundles and bytes until the maximum is reached (ION's default: 2
 * billion), SIGINT/SIGTERM, or --timeout seconds without a bundle; then
 * prints the throughput from the first bundle to the last. Bundles that carry
 * bpdriver's header (bptool.h) are checked: CRC-32C, length, and duplicates
 * of a sequence number within one bpdriver run. Exit status 0 if nothing was
 * corrupt or duplicated (and the maximum, if given, was reached), 1 otherwise,
 * 2 for usage errors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bptool.h"

#define PROG "bpcounter"

#define ION_MAX_COUNT 2000000000ull

struct counter {
    uint64_t bundles, bytes, verified, corrupt, dups, plain, runs;
    uint32_t run;
    uint8_t *seen; /* bitmap of the current run's sequence numbers */
    uint64_t seen_cap;
};

static void usage(FILE *f)
{
    fprintf(f, "usage: bpcounter <own EID> [<max nbr of bundles>] [options]\n"
               "  counts bundles (from bpdriver with a negative length) and prints the\n"
               "  throughput; stops at the maximum (default 2 billion) or on SIGINT\n"
               "  --node DIR     the node directory (default $TERN_NODE_DIR, else .)\n"
               "  --timeout S    stop when no bundle came for S seconds\n"
               "  --json FILE    also write the results as JSON\n"
               "  --quiet        no progress line\n"
               "exit status: 0 ok, 1 corrupt/duplicate bundles or maximum not reached,\n"
               "             2 usage\n");
}

/* 1 if seq was seen in this run already. */
static int mark_seen(struct counter *c, uint64_t seq)
{
    if (seq >= (1ull << 34))
        return 0; /* beyond what is tracked */
    if (seq / 8 >= c->seen_cap) {
        uint64_t nc = c->seen_cap ? c->seen_cap : 4096;
        while (nc <= seq / 8)
            nc *= 2;
        uint8_t *p = realloc(c->seen, nc);
        if (!p)
            return 0;
        memset(p + c->seen_cap, 0, nc - c->seen_cap);
        c->seen = p;
        c->seen_cap = nc;
    }
    uint8_t bit = (uint8_t)(1u << (seq % 8));
    int was = !!(c->seen[seq / 8] & bit);
    c->seen[seq / 8] |= bit;
    return was;
}

static void count(struct counter *c, const BpDelivery *d)
{
    c->bundles++;
    c->bytes += d->len;
    bt_drv_hdr h;
    int v = bt_drv_check(d->payload, d->len, &h);
    if (v == 0) {
        c->plain++;
        return;
    }
    if (v < 0) {
        c->corrupt++;
        if (c->corrupt <= 5)
            fprintf(stderr,
                    PROG ": bundle %" PRIu64 " from %s (%zu bytes) is corrupt: header or "
                         "CRC-32C does not match\n",
                    c->bundles, d->src, d->len);
        return;
    }
    c->verified++;
    if (!c->runs || h.run != c->run) {
        /* A new bpdriver run: sequence numbers start again. */
        c->runs++;
        c->run = h.run;
        if (c->seen)
            memset(c->seen, 0, c->seen_cap);
    }
    if (mark_seen(c, h.seq)) {
        c->dups++;
        if (c->dups <= 5)
            fprintf(stderr, PROG ": bundle number %" PRIu64 " from %s arrived again\n",
                    h.seq, d->src);
    }
}

int main(int argc, char **argv)
{
    const char *own = NULL, *node = NULL, *json = NULL;
    uint64_t max = 0;
    double timeout = 0;
    int quiet = 0, npos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
            quiet = 1;
        } else if (!strcmp(a, "--node") || !strcmp(a, "--json") ||
                   !strcmp(a, "--timeout") || !strcmp(a, "--count")) {
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
            else if (!strcmp(a, "--count"))
                bad = bt_parse_size(val, &max) || !max;
            else
                bad = bt_parse_secs(val, &timeout);
            if (bad) {
                fprintf(stderr, PROG ": bad value '%s' for %s\n", val, a);
                return 2;
            }
        } else if (a[0] == '-' && a[1] && !(a[1] >= '0' && a[1] <= '9')) {
            fprintf(stderr, PROG ": unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        } else if (npos == 0) {
            own = a;
            npos++;
        } else if (npos == 1) {
            if (bt_parse_size(a, &max) || !max) {
                fprintf(stderr, PROG ": bad max nbr of bundles '%s' (a count above 0)\n",
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
    if (!own) {
        usage(stderr);
        return 2;
    }
    int rc = bt_check_eid(PROG, "own EID", own);
    if (rc)
        return rc;
    int max_given = max != 0;
    if (!max)
        max = ION_MAX_COUNT;
    bt_tune_malloc();

    BpSAP sap;
    if (bt_start(PROG, node, own, &sap)) {
        return 1;
    }
    if (!quiet)
        fprintf(stderr, PROG ": counting bundles on %s%s\n", own,
                isatty(2) ? " (Ctrl-C to stop)" : "");

    struct counter c;
    memset(&c, 0, sizeof c);
    bt_progress pg;
    bt_progress_init(&pg, quiet);
    const char *why = "count reached";
    int failed = 0;
    double t_first = 0, t_last = 0;
    int wait_ms = timeout > 0 ? (int)(timeout * 1000 + 0.5) : -1;
    while (c.bundles < max) {
        if (bt_stopped()) {
            why = bt_signame();
            break;
        }
        BpDelivery d;
        rc = bp_receive(sap, &d, wait_ms);
        if (rc == -EINTR) {
            why = bt_signame();
            break;
        }
        if (rc == -ETIMEDOUT) {
            why = "timeout";
            break;
        }
        if (rc) {
            bt_report(PROG, "bundle reception failed", rc);
            why = "receive error";
            failed = 1;
            break;
        }
        t_last = bt_now();
        if (!t_first)
            t_first = t_last;
        count(&c, &d);
        bp_release_delivery(&d);
        if (bt_progress_due(&pg)) {
            double el = t_last - t_first;
            fprintf(stderr,
                    "\r" PROG ": %" PRIu64 " bundles, %" PRIu64
                    " bytes, %.2f Mbit/s, %" PRIu64 " corrupt  ",
                    c.bundles, c.bytes, el > 0 ? (double)c.bytes * 8 / el / 1e6 : 0.0,
                    c.corrupt);
        }
    }
    bt_progress_end(&pg);
    bt_signals_wake(NULL);
    bp_close(sap);
    bp_detach();

    double secs = t_last > t_first ? t_last - t_first : 0;
    double mbps = secs > 0 ? (double)c.bytes * 8 / secs / 1e6 : 0;
    double bps = secs > 0 ? (double)c.bundles / secs : 0;
    int ok = !failed && c.corrupt == 0 && c.dups == 0 && (!max_given || c.bundles >= max);
    printf("bpcounter: %" PRIu64 " bundles received on %s (%s)\n", c.bundles, own, why);
    printf("bundles received = %" PRIu64 ", bytes received = %" PRIu64
           ", seconds elapsed = %.3f, bundles/s = %.0f\n",
           c.bundles, c.bytes, secs, bps);
    printf("throughput = %.3f Mbps\n", mbps);
    printf("verified = %" PRIu64 ", corrupt = %" PRIu64 ", duplicates = %" PRIu64
           ", without header = %" PRIu64 "\n",
           c.verified, c.corrupt, c.dups, c.plain);
    fflush(stdout);
    if (json) {
        FILE *f = fopen(json, "w");
        if (!f) {
            fprintf(stderr, PROG ": cannot write %s: %s\n", json, strerror(errno));
            ok = 0;
        } else {
            fprintf(f,
                    "{\"ok\": %s, \"reason\": \"%s\", \"bundles\": %" PRIu64
                    ", \"bytes\": %" PRIu64 ", \"seconds\": %.6f, \"mbps\": %.6f, "
                    "\"bundles_per_s\": %.1f, \"verified\": %" PRIu64
                    ", \"corrupt\": %" PRIu64 ", \"duplicates\": %" PRIu64
                    ", \"without_header\": %" PRIu64 "}\n",
                    ok ? "true" : "false", why, c.bundles, c.bytes, secs, mbps, bps,
                    c.verified, c.corrupt, c.dups, c.plain);
            fclose(f);
        }
    }
    free(c.seen);
    return ok ? 0 : 1;
}
