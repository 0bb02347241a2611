/* bpecho: sends every bundle delivered to an endpoint back to its source
 * (docs/tools.md). bpping and bpdriver's echo mode talk to it.
 *
 *   bpecho <own EID> [--node DIR] [--count N] [--ion-reply] [--verbose]
 *
 * The payload goes back unchanged (bpping checks it), or with --ion-reply as
 * ION 4.1.3's bpecho answers: its first 1,024 bytes. Runs until SIGINT/SIGTERM
 * or --count bundles. Exit status 0, 1 on a failure, 2 for usage errors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bptool.h"

#define PROG         "bpecho"
#define ION_ECHO_MAX 1024

static void usage(FILE *f)
{
    fprintf(f,
            "usage: bpecho <own EID> [options]\n"
            "  sends every bundle it receives back to the bundle's source\n"
            "  --node DIR       the node directory (default $TERN_NODE_DIR, else .)\n"
            "  --count N        exit after N bundles\n"
            "  --ttl S          lifetime of the replies in seconds (default %d)\n"
            "  --ion-reply      echo only the first 1,024 bytes, as ION's bpecho\n"
            "  --verbose        one line per bundle on stderr\n"
            "exit status: 0 ok, 1 failure, 2 usage\n",
            BT_ION_TTL);
}

int main(int argc, char **argv)
{
    const char *own = NULL, *node = NULL;
    uint64_t count = 0, ttl = BT_ION_TTL;
    int verbose = 0, ion_reply = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--verbose") || !strcmp(a, "-v")) {
            verbose = 1;
        } else if (!strcmp(a, "--ion-reply")) {
            ion_reply = 1;
        } else if (!strcmp(a, "--node") || !strcmp(a, "--count") || !strcmp(a, "--ttl")) {
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
            else
                bad = bt_parse_size(val, &ttl) || !ttl || ttl > UINT32_MAX;
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

    BpSendOpts o = BP_SEND_OPTS_INIT;
    o.lifetime_s = (uint32_t)ttl;
    int status = 0;
    uint64_t echoed = 0, anonymous = 0, admin = 0;
    while (!bt_stopped() && (!count || echoed + anonymous + admin < count)) {
        BpDelivery d;
        rc = bp_receive(sap, &d, -1);
        if (rc == -EINTR)
            break;
        if (rc) {
            bt_report(PROG, "bundle reception failed", rc);
            status = 1;
            break;
        }
        if (d.flags & 0x2) {
            admin++; /* a status report: nobody to answer */
        } else if (!strcmp(d.src, "dtn:none")) {
            if (!anonymous++)
                fprintf(stderr, PROG ": anonymous bundles (from dtn:none) cannot be "
                                     "echoed; dropping them\n");
        } else {
            /* ION 4.1.3's bpecho answers with the payload's first 1,024 bytes */
            size_t n = ion_reply && d.len > ION_ECHO_MAX ? ION_ECHO_MAX : d.len;
            rc = bp_send(sap, d.src, d.payload, n, &o, NULL);
            if (rc == -EINTR && bt_stopped()) {
                bp_release_delivery(&d);
                break;
            }
            if (rc) {
                char what[BP_EID_MAX + 40];
                snprintf(what, sizeof what, "cannot send the echo to %s", d.src);
                bt_report(PROG, what, rc);
                bp_release_delivery(&d);
                status = 1;
                break;
            }
            echoed++;
            if (verbose)
                fprintf(stderr, PROG ": echoed %zu bytes to %s\n", d.len, d.src);
        }
        bp_release_delivery(&d);
    }
    rc = bt_flush(sap, 10000);
    if (rc == -EINTR || bt_stopped())
        rc = 0; /* stopped: what the node did not take yet is not waited for */
    if (rc && !status) {
        bt_report(PROG, "the node did not accept every echo", rc);
        status = 1;
    }
    bt_signals_wake(NULL);
    bp_close(sap);
    bp_detach();
    fprintf(stderr,
            PROG ": echoed %" PRIu64 " bundles (%" PRIu64 " anonymous and %" PRIu64
                 " administrative not answered)\n",
            echoed, anonymous, admin);
    return status;
}
