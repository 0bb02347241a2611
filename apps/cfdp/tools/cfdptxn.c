/* cfdpcancel, cfdpsuspend, cfdpresume: ask the node's cfdpd to cancel,
 * suspend or resume a transaction (docs/cfdpd.md). One source, built three
 * times: CFDPTXN_CMD names the command each executable is. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cfdptool.h"

#ifndef CFDPTXN_CMD
#error "build with -DCFDPTXN_CMD=\"cancel\", \"suspend\" or \"resume\""
#endif

#define PROG "cfdp" CFDPTXN_CMD

static void usage(FILE *f)
{
    fprintf(f, "usage: %s [-n node dir] <source entity>.<sequence number>\n", PROG);
}

int main(int argc, char **argv)
{
    const char *node = NULL;
    int o;
    while ((o = getopt(argc, argv, "n:h")) != -1) {
        if (o == 'n') {
            node = optarg;
        } else {
            usage(o == 'h' ? stdout : stderr);
            return o == 'h' ? 0 : 2;
        }
    }
    cfdp_txn_id id;
    if (argc - optind != 1 || cfdp_ctl_parse_txn(argv[optind], &id)) {
        usage(stderr);
        return 2;
    }
    cfdp_ctl *c = ct_connect(PROG, node);
    if (!c)
        return 3;
    int rc = !strcmp(CFDPTXN_CMD, "cancel")    ? cfdp_ctl_cancel(c, id)
             : !strcmp(CFDPTXN_CMD, "suspend") ? cfdp_ctl_suspend(c, id)
                                               : cfdp_ctl_resume(c, id);
    if (rc)
        fprintf(stderr, "%s: %s\n", PROG, cfdp_ctl_errmsg(c));
    cfdp_ctl_close(c);
    return rc ? 1 : 0;
}
