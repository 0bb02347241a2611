/* bpstats: prints the node's counters (docs/tools.md).
 *
 *   bpstats [--node DIR] [--raw]
 *
 * ION's bpstats logs its statistics to ion.log; Tern's prints them: the
 * node's counters as an aligned table, then ternd's status report (bundles,
 * endpoints, outducts, LTP, store). --raw prints bp_node_status's text as it
 * came. Exit status 0, 1 if the node cannot be asked, 2 for usage errors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bptool.h"

#define PROG "bpstats"

#define STATUS_CAP (1u << 20)

static void usage(FILE *f)
{
    fprintf(f, "usage: bpstats [--node DIR] [--raw]\n"
               "  prints the node's bundle counters and status report\n"
               "  --node DIR   the node directory (default $TERN_NODE_DIR, else .)\n"
               "  --raw        the status text exactly as the node sent it\n"
               "exit status: 0 ok, 1 the node could not be asked, 2 usage\n");
}

int main(int argc, char **argv)
{
    const char *node = NULL;
    int raw = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--raw")) {
            raw = 1;
        } else if (!strcmp(a, "--node")) {
            if (i + 1 >= argc) {
                fprintf(stderr, PROG ": --node needs a directory\n");
                return 2;
            }
            node = argv[++i];
        } else {
            fprintf(stderr, PROG ": unexpected argument '%s'\n", a);
            usage(stderr);
            return 2;
        }
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
    uint64_t nbr = bp_node_number(bp_node());
    bp_detach();
    if (rc) {
        bt_report(PROG, "cannot get the node's status", rc);
        free(buf);
        return 1;
    }
    if (raw) {
        fputs(buf, stdout);
        free(buf);
        return 0;
    }
    /* "name value" lines until "node:", then the node's own report. */
    printf("node %" PRIu64 " counters:\n", nbr);
    char *save = NULL;
    int counters = 0, in_report = 0;
    for (char *line = strtok_r(buf, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        if (!in_report && !strcmp(line, "node:")) {
            if (!counters)
                printf("  (none reported)\n");
            printf("\nnode report:\n");
            in_report = 1;
            continue;
        }
        if (in_report) {
            printf("  %s\n", line);
            continue;
        }
        char *sp = strrchr(line, ' ');
        if (sp) {
            *sp = '\0';
            printf("  %-32s %20s\n", line, sp + 1);
        } else {
            printf("  %s\n", line);
        }
        counters++;
    }
    if (!in_report && !counters)
        printf("  (none reported)\n");
    free(buf);
    return 0;
}
