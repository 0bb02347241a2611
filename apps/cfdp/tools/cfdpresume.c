/* cfdpresume: asks the node's cfdpd to resume a transaction (docs/cfdpd.md). */
#include <getopt.h>
#include <stdio.h>

#include "cfdptool.h"

int main(int argc, char **argv)
{
    const char *node = NULL;
    int o;
    while ((o = getopt(argc, argv, "n:h")) != -1) {
        if (o == 'n') {
            node = optarg;
        } else {
            fputs("usage: cfdpresume [-n node dir] <source entity>.<sequence number>\n",
                  o == 'h' ? stdout : stderr);
            return o == 'h' ? 0 : 2;
        }
    }
    cfdp_txn_id id;
    if (argc - optind != 1 || cfdp_ctl_parse_txn(argv[optind], &id)) {
        fputs("usage: cfdpresume [-n node dir] <source entity>.<sequence number>\n",
              stderr);
        return 2;
    }
    cfdp_ctl *c = ct_connect("cfdpresume", node);
    if (!c)
        return 3;
    int rc = cfdp_ctl_resume(c, id);
    if (rc)
        fprintf(stderr, "cfdpresume: %s\n", cfdp_ctl_errmsg(c));
    cfdp_ctl_close(c);
    return rc ? 1 : 0;
}
