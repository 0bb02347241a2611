/* bpsource: sends text as bundles, as ION's does (docs/tools.md).
 *
 *   bpsource <destination EID> ["text"] [-t<TTL>] [--node DIR] [--src EID]
 *
 * With text: one bundle, then exit. Without: each line of stdin is a bundle
 * (on a terminal with ION's ": " prompt); a line "!" or the end of input
 * ends. Bundles are anonymous (from dtn:none) unless --src names an
 * endpoint of the node. Exit status 0 once every bundle is committed by the
 * node, 1 on failure, 2 for usage errors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bptool.h"

#define PROG "bpsource"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: bpsource <destination EID> [\"text\"] [-t<TTL>] [options]\n"
            "  sends the text as one bundle, or each line of stdin as a bundle\n"
            "  (a line \"!\" ends, as in ION)\n"
            "  -t<TTL>, --ttl S     lifetime in seconds (default %d)\n"
            "  --node DIR           the node directory (default $TERN_NODE_DIR, else .)\n"
            "  --src EID            send from this endpoint (default: anonymous, "
            "dtn:none)\n"
            "  --priority 0|1|2     bulk, standard (default) or expedited\n"
            "  --quiet              no prompt and no summary\n"
            "exit status: 0 sent and committed, 1 failure, 2 usage\n",
            BT_ION_TTL);
}

/* While a send waits: says once why, if it is the node's full store. */
static void note_full(void *arg)
{
    int *told = arg;
    if (*told || !bp_node_store_full(bp_node()))
        return;
    *told = 1;
    fprintf(stderr,
            PROG ": the node's store is full: waiting for room (bundles leave it as they "
                 "are forwarded, delivered or expire; Ctrl-C stops)\n");
}

int main(int argc, char **argv)
{
    const char *dest = NULL, *text = NULL, *node = NULL, *src = NULL;
    uint64_t ttl = BT_ION_TTL, prio = BP_STD_PRIORITY;
    int quiet = 0, npos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--node") || !strcmp(a, "--src") || !strcmp(a, "--ttl") ||
                   !strcmp(a, "--priority")) {
            if (!val) {
                fprintf(stderr, PROG ": %s needs a value\n", a);
                return 2;
            }
            i++;
            if (!strcmp(a, "--node"))
                node = val;
            else if (!strcmp(a, "--src"))
                src = val;
            else if (!strcmp(a, "--ttl") ? bt_parse_size(val, &ttl) || !ttl
                                         : bt_parse_size(val, &prio) || prio > 2) {
                fprintf(stderr, PROG ": bad value '%s' for %s\n", val, a);
                return 2;
            }
        } else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
            quiet = 1;
        } else if (!strncmp(a, "-t", 2) && a[2]) {
            /* ION's -t<TTL> */
            if (bt_parse_size(a + 2, &ttl) || !ttl) {
                fprintf(stderr,
                        PROG ": bad TTL '%s' (expected -t<seconds>, e.g. -t300)\n", a);
                return 2;
            }
        } else if (!strcmp(a, "-t")) {
            if (!val || bt_parse_size(val, &ttl) || !ttl) {
                fprintf(stderr, PROG ": -t needs a TTL in seconds\n");
                return 2;
            }
            i++;
        } else if (a[0] == '-' && a[1] == '-') {
            fprintf(stderr, PROG ": unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        } else if (npos == 0) {
            dest = a;
            npos++;
        } else if (npos == 1) {
            text = a;
            npos++;
        } else {
            fprintf(stderr, PROG ": unexpected argument '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!dest) {
        usage(stderr);
        return 2;
    }
    int rc = bt_check_eid(PROG, "destination EID", dest);
    if (!rc && src)
        rc = bt_check_eid(PROG, "--src EID", src);
    if (rc)
        return rc;
    if (ttl > UINT32_MAX) {
        fprintf(stderr, PROG ": TTL %" PRIu64 " s is too long\n", ttl);
        return 2;
    }

    bt_signals_start();
    if (bt_attach(PROG, node))
        return 1;
    BpSAP sap = NULL;
    if (src && bt_open(PROG, src, &sap)) {
        bp_detach();
        return 1;
    }
    BpSendOpts o = BP_SEND_OPTS_INIT;
    o.lifetime_s = (uint32_t)ttl;
    o.priority = (int)prio;

    int status = 0;
    uint64_t sent = 0, bytes = 0;
    int told = quiet;
    if (text) {
        rc = bt_wait_room(sap, note_full, &told);
        if (!rc)
            rc = bp_send(sap, dest, text, strlen(text), &o, NULL);
        if (rc == -EINTR && bt_stopped()) {
            status = 1;
        } else if (rc) {
            bt_report(PROG, "send failed", rc);
            status = 1;
        } else {
            sent++;
            bytes += strlen(text);
        }
    } else {
        int tty = isatty(0) && !quiet;
        char *line = NULL;
        size_t cap = 0;
        int rerr = 0;
        for (;;) {
            if (tty) {
                fputs(": ", stdout);
                fflush(stdout);
            }
            /* not getline: a signal must end the wait for a line */
            ssize_t n = bt_getline(&line, &cap, STDIN_FILENO);
            if (n < 0 && errno != EINTR)
                rerr = errno;
            if (n <= 0 || bt_stopped())
                break;
            if (n > 0 && line[n - 1] == '\n')
                line[--n] = '\0';
            if (n > 0 && line[n - 1] == '\r')
                line[--n] = '\0';
            if (!strcmp(line, "!"))
                break;
            if (n == 0)
                continue; /* an empty line carries nothing: not sent */
            rc = bt_wait_room(sap, note_full, &told);
            if (!rc)
                rc = bp_send(sap, dest, line, (size_t)n, &o, NULL);
            if (rc == -EINTR && bt_stopped()) {
                status = 1;
                break;
            }
            if (rc) {
                bt_report(PROG, "send failed", rc);
                status = 1;
                break;
            }
            sent++;
            bytes += (uint64_t)n;
        }
        free(line);
        if (rerr) {
            fprintf(stderr, PROG ": reading stdin: %s\n", strerror(rerr));
            status = 1;
        }
    }
    /* The node answers each bundle once it is committed: wait for all, in
     * steps that say so if its full store keeps them. */
    double until = bt_now() + 30;
    while ((rc = bt_flush(sap, 500)) == -ETIMEDOUT && !bt_stopped() && bt_now() < until)
        note_full(&told);
    if (bt_stopped()) {
        unsigned left = bp_node_unanswered(bp_node());
        fprintf(stderr, PROG ": stopped by %s", bt_signame());
        if (left)
            fprintf(stderr, " with %u bundle%s not yet committed by the node%s", left,
                    left == 1 ? "" : "s",
                    bp_node_store_full(bp_node()) ? " (its store is full)" : "");
        fprintf(stderr, "\n");
        status = 1;
    } else if (rc && !status) {
        bt_report(
            PROG,
            bp_node_store_full(bp_node())
                ? "the node did not take every bundle within 30 s (its store is full)"
                : "the node did not accept every bundle",
            rc);
        status = 1;
    }
    if (!quiet && !text && isatty(2))
        fprintf(stderr, PROG ": sent %" PRIu64 " bundles (%" PRIu64 " bytes) to %s\n",
                sent, bytes, dest);
    if (sap)
        bp_close(sap);
    bp_detach();
    return status;
}
