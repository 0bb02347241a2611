/* bpsink: prints each bundle delivered to an endpoint, as ION's does
 * (docs/tools.md).
 *
 *   bpsink <own EID> [--node DIR] [--count N] [--timeout S] [--verbose]
 *
 * For each bundle: "ION event: Payload delivered.", the payload length, and
 * the text (non-printable bytes escaped). Runs until SIGINT/SIGTERM, --count
 * bundles or --timeout seconds without a bundle. Exit status 0, 1 on a
 * failure (or a timeout before --count), 2 for usage errors.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bptool.h"

#define PROG "bpsink"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: bpsink <own EID> [options]\n"
            "  prints every bundle delivered to the endpoint until SIGINT/SIGTERM\n"
            "  --node DIR        the node directory (default $TERN_NODE_DIR, else .)\n"
            "  --count N         exit after N bundles\n"
            "  --timeout S       exit if no bundle came for S seconds\n"
            "  --max-text BYTES  print at most this much of each payload (default 4096)\n"
            "  --verbose         also print the source and creation time\n"
            "exit status: 0 ok, 1 failure or timeout before --count, 2 usage\n");
}

/* The payload as text: printable bytes as they are, the rest as \xNN (and
 * \n, \t, \\ and \' as such), so one bundle stays one quoted line. */
static void print_text(const uint8_t *p, size_t len)
{
    putchar('\t');
    putchar('\'');
    for (size_t i = 0; i < len; i++) {
        uint8_t c = p[i];
        if (c == '\n')
            fputs("\\n", stdout);
        else if (c == '\t')
            fputs("\\t", stdout);
        else if (c == '\\' || c == '\'')
            printf("\\%c", c);
        else if (c >= 0x20 && c < 0x7f)
            putchar(c);
        else if (c == 0 && i + 1 == len)
            ; /* ION's tools send C strings with their NUL */
        else
            printf("\\x%02x", c);
    }
    putchar('\'');
    putchar('\n');
}

int main(int argc, char **argv)
{
    const char *own = NULL, *node = NULL;
    uint64_t count = 0, maxtext = 4096;
    double timeout = 0;
    int verbose = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--verbose") || !strcmp(a, "-v")) {
            verbose = 1;
        } else if (!strcmp(a, "--node") || !strcmp(a, "--count") ||
                   !strcmp(a, "--timeout") || !strcmp(a, "--max-text")) {
            if (!val) {
                fprintf(stderr, PROG ": %s needs a value\n", a);
                return 2;
            }
            i++;
            int bad = 0;
            if (!strcmp(a, "--node"))
                node = val;
            else if (!strcmp(a, "--count"))
                bad = bt_parse_size(val, &count);
            else if (!strcmp(a, "--timeout"))
                bad = bt_parse_secs(val, &timeout);
            else
                bad = bt_parse_size(val, &maxtext);
            if (bad) {
                fprintf(stderr, PROG ": bad value '%s' for %s\n", val, a);
                return 2;
            }
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, PROG ": unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        } else if (!own) {
            own = a;
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

    BpSAP sap;
    if (bt_start(PROG, node, own, &sap)) {
        return 1;
    }

    int status = 0;
    uint64_t got = 0;
    int wait_ms = timeout > 0 ? (int)(timeout * 1000 + 0.5) : -1;
    while (!bt_stopped() && (!count || got < count)) {
        BpDelivery d;
        rc = bp_receive(sap, &d, wait_ms);
        if (rc == -EINTR)
            break;
        if (rc == -ETIMEDOUT) {
            fprintf(stderr, PROG ": no bundle for %.1f s, giving up\n", timeout);
            if (count)
                status = 1;
            break;
        }
        if (rc) {
            bt_report(PROG, "bundle reception failed", rc);
            status = 1;
            break;
        }
        got++;
        printf("ION event: Payload delivered.\n");
        printf("\tpayload length is %zu.\n", d.len);
        if (verbose)
            printf("\tfrom %s, created %" PRIu64 " ms after 2000-01-01, number %" PRIu64
                   "%s\n",
                   d.src, d.ctime_ms, d.seq,
                   d.flags & 0x2 ? ", administrative record" : "");
        if (d.len)
            print_text(d.payload, d.len < maxtext ? d.len : (size_t)maxtext);
        if (d.len > maxtext)
            printf("\t(%zu more bytes not shown)\n", d.len - (size_t)maxtext);
        fflush(stdout);
        bp_release_delivery(&d);
    }
    bt_signals_wake(NULL);
    bp_close(sap);
    bp_detach();
    if (verbose || bt_stopped())
        fprintf(stderr, PROG ": %" PRIu64 " bundles received%s%s\n", got,
                bt_stopped() ? ", stopped by " : "", bt_stopped() ? bt_signame() : "");
    return status;
}
