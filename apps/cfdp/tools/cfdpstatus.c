/* cfdpstatus: the transactions of the node's cfdpd (docs/cfdpd.md). */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfdptool.h"

int main(int argc, char **argv)
{
    const char *node = NULL;
    int json = 0, counters = 0;
    static const struct option opts[] = {{"node", required_argument, NULL, 'n'},
                                         {"json", no_argument, NULL, 'j'},
                                         {"counters", no_argument, NULL, 'c'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    int o;
    while ((o = getopt_long(argc, argv, "n:jch", opts, NULL)) != -1) {
        if (o == 'n') {
            node = optarg;
        } else if (o == 'j') {
            json = 1;
        } else if (o == 'c') {
            counters = 1;
        } else {
            fputs("usage: cfdpstatus [-n node dir] [--json | --counters]\n",
                  o == 'h' ? stdout : stderr);
            return o == 'h' ? 0 : 2;
        }
    }
    cfdp_ctl *c = ct_connect("cfdpstatus", node);
    if (!c)
        return 3;
    if (counters) { /* cfdpd's counters, "name value" lines */
        static char buf[CFDP_CTL_MSG_MAX + 1];
        int rc = cfdp_ctl_request(c, "status\n", buf, sizeof buf, 10000);
        if (rc) {
            fprintf(stderr, "cfdpstatus: %s\n", cfdp_ctl_errmsg(c));
            return 1;
        }
        for (char *l = strchr(buf, '\n'); l && l[1] && strncmp(l + 1, "txn=", 4);
             l = strchr(l + 1, '\n')) {
            char *eq = strchr(l + 1, '=');
            char *nl = strchr(l + 1, '\n');
            if (eq && (!nl || eq < nl))
                printf("%.*s %.*s\n", (int)(eq - l - 1), l + 1,
                       (int)(nl ? nl - eq - 1 : (long)strlen(eq + 1)), eq + 1);
        }
        cfdp_ctl_close(c);
        return 0;
    }
    size_t cap = 1024, n = 0;
    cfdp_ctl_txn *v = calloc(cap, sizeof *v);
    int rc = v ? cfdp_ctl_txns(c, v, cap, &n) : -ENOMEM;
    if (rc) {
        fprintf(stderr, "cfdpstatus: %s\n",
                cfdp_ctl_errmsg(c)[0] ? cfdp_ctl_errmsg(c) : tern_strerror(rc));
        return 1;
    }
    if (n > cap)
        n = cap;
    if (json)
        printf("{\"transactions\": [");
    else
        printf("%-14s %-8s %-6s %-10s %-5s %-9s %12s %12s %6s %10s  %s\n", "TRANSACTION",
               "ROLE", "PEER", "STATE", "CLASS", "PRIORITY", "SIZE", "BYTES", "GAPS",
               "RESENT", "CONDITION");
    for (size_t i = 0; i < n; i++) {
        const cfdp_txn_info *t = &v[i].info;
        const char *prio = cfdp_ctl_priority_name(v[i].priority);
        char id[48];
        snprintf(id, sizeof id, "%" PRIu64 ".%" PRIu64, t->id.src, t->id.seq);
        if (json)
            printf("%s{\"txn\": \"%s\", \"role\": \"%s\", \"peer\": %" PRIu64
                   ", \"state\": \"%s\", \"class\": %u, \"priority\": \"%s\", \"size\": "
                   "%" PRIu64 ", \"progress\": %" PRIu64 ", \"gaps\": %" PRIu64
                   ", \"resent\": %" PRIu64 ", \"condition\": \"%s\"}",
                   i ? ", " : "", id, ct_role(t->role), t->peer,
                   cfdp_ctl_state_name(t->state), t->cls, prio, t->file_size, t->progress,
                   t->gaps, t->bytes_resent, cfdp_condition_name(t->condition));
        else
            printf("%-14s %-8s %-6" PRIu64 " %-10s %-5u %-9s %12" PRIu64 " %12" PRIu64
                   " %6" PRIu64 " %10" PRIu64 "  %s\n",
                   id, ct_role(t->role), t->peer, cfdp_ctl_state_name(t->state), t->cls,
                   prio, t->file_size, t->progress, t->gaps, t->bytes_resent,
                   cfdp_condition_name(t->condition));
    }
    if (json)
        printf("]}\n");
    else if (!n)
        printf("(no transactions)\n");
    free(v);
    cfdp_ctl_close(c);
    return 0;
}
