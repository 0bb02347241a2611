/* bplist: the node's queued bundles, per endpoint and per outduct
 * (docs/tools.md).
 *
 *   bplist [count | detail] [<destination EID>[/<priority>]] [--eid EID]
 *          [--node DIR]
 *
 * ION's bplist walks the bundle agent's timeline; a Tern application sees
 * the node only through its status report, which gives counts: bundles
 * waiting for delivery at each endpoint, bundles queued on each outduct, and
 * the totals. So 'count' is what is shown; 'detail' shows the same counts and
 * says so. A destination (or --eid) shows only that endpoint of this node.
 * Exit status 0, 1 if the node cannot be asked or the endpoint is not one of
 * the node's, 2 for usage errors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bptool.h"

#define PROG "bplist"

#define STATUS_CAP (1u << 20)

static void usage(FILE *f)
{
    fprintf(f,
            "usage: bplist [count | detail] [<destination EID>[/<priority>]] [options]\n"
            "  queued bundles per endpoint and per outduct (counts; see docs/tools.md)\n"
            "  --eid EID    only this endpoint of the node\n"
            "  --node DIR   the node directory (default $TERN_NODE_DIR, else .)\n"
            "exit status: 0 ok, 1 the node could not be asked or no such endpoint,\n"
            "             2 usage\n");
}

/* The number just before the word "queued" in a status line, or -1. */
static long long queued_of(const char *line)
{
    const char *q = strstr(line, " queued");
    if (!q)
        return -1;
    const char *p = q;
    while (p > line && p[-1] >= '0' && p[-1] <= '9')
        p--;
    if (p == q)
        return -1;
    return strtoll(p, NULL, 10);
}

int main(int argc, char **argv)
{
    const char *node = NULL, *eid = NULL;
    int detail = 0, npos = 0;
    char want[BP_EID_MAX];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--node") || !strcmp(a, "--eid")) {
            if (i + 1 >= argc) {
                fprintf(stderr, PROG ": %s needs a value\n", a);
                return 2;
            }
            if (!strcmp(a, "--node"))
                node = argv[++i];
            else
                eid = argv[++i];
        } else if (a[0] == '-') {
            fprintf(stderr, PROG ": unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        } else if (npos == 0 && (!strcmp(a, "count") || !strcmp(a, "detail"))) {
            detail = !strcmp(a, "detail");
            npos = 1;
        } else if (npos <= 1 && !eid) {
            eid = a;
            npos = 2;
        } else {
            fprintf(stderr, PROG ": unexpected argument '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (eid) {
        /* ION's destination/priority: the priority cannot narrow counts. */
        snprintf(want, sizeof want, "%s", eid);
        char *slash = strrchr(want, '/');
        if (slash && !strncmp(want, "ipn:", 4)) {
            char *end;
            long prio = strtol(slash + 1, &end, 10);
            if (*end || prio < 0 || prio > 2) {
                fprintf(stderr,
                        PROG ": bad priority in '%s' (expected EID/0, /1 or /2)\n", eid);
                return 2;
            }
            *slash = '\0';
            fprintf(stderr, PROG ": note: queues are not counted per priority; showing "
                                 "all priorities\n");
        }
        int rc = bt_check_eid(PROG, "destination EID", want);
        if (rc)
            return rc;
    }
    if (bt_attach(PROG, node))
        return 1;
    char *buf = malloc(STATUS_CAP);
    if (!buf) {
        fprintf(stderr, PROG ": out of memory\n");
        bp_detach();
        return 1;
    }
    int rc = bp_node_status(bp_node(), buf, STATUS_CAP);
    bp_detach();
    if (rc) {
        bt_report(PROG, "cannot get the node's status", rc);
        free(buf);
        return 1;
    }
    if (detail)
        fprintf(stderr, PROG ": note: the node reports counts, not single bundles; "
                             "'detail' shows the counts\n");

    enum { NONE, EPS, DUCTS } sec = NONE;
    const char *totals = NULL;
    int found = 0, ep_head = 0, od_head = 0;
    long long ep_sum = 0, od_sum = 0;
    char *save = NULL;
    for (char *line = strtok_r(buf, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        if (!strncmp(line, "bundles:", 8)) {
            totals = line;
            continue;
        }
        if (!strcmp(line, "endpoints:")) {
            sec = EPS;
            continue;
        }
        if (!strcmp(line, "outducts:")) {
            sec = DUCTS;
            continue;
        }
        if (strncmp(line, "  ", 2)) {
            sec = NONE;
            continue;
        }
        char name[BP_EID_MAX], state[16] = "";
        if (sscanf(line, " %263s", name) != 1)
            continue;
        long long q = queued_of(line);
        if (q < 0)
            continue;
        if (sec == EPS) {
            if (eid && strcmp(name, want))
                continue;
            char rule[4] = "", open[8] = "";
            sscanf(line, " %*s %3s %7s", rule, open);
            snprintf(state, sizeof state, "%s",
                     !strcmp(open, "open") ? "open" : "closed");
            if (!ep_head++)
                printf("%-28s %-7s %s\n", "endpoint", "app", "queued for delivery");
            printf("%-28s %-7s %lld\n", name, state, q);
            ep_sum += q;
            found = 1;
        } else if (sec == DUCTS && !eid) {
            sscanf(line, " %*s %15s", state);
            if (!od_head++)
                printf("%s%-28s %-7s %s\n", ep_head ? "\n" : "", "outduct", "state",
                       "queued for transmission");
            printf("%-28s %-7s %lld\n", name, state, q);
            od_sum += q;
        }
    }
    if (eid && !found) {
        fprintf(stderr,
                PROG ": %s is not an endpoint of this node; bundles for other nodes are "
                     "counted per outduct (run bplist without an EID)\n",
                want);
        free(buf);
        return 1;
    }
    if (!eid) {
        if (!ep_head && !od_head)
            printf("(the node reports no endpoints and no outducts)\n");
        printf("\ntotal: %lld waiting for delivery, %lld queued on outducts\n", ep_sum,
               od_sum);
        if (totals)
            printf("%s\n", totals);
    }
    free(buf);
    return 0;
}
