/* cfdpls: lists a directory of another entity's filestore (a directory
 * listing request through the node's cfdpd; docs/cfdpd.md). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cfdptool.h"

int main(int argc, char **argv)
{
    const char *node = NULL;
    double timeout = 60;
    int o;
    while ((o = getopt(argc, argv, "n:t:h")) != -1) {
        if (o == 'n') {
            node = optarg;
        } else if (o == 't') {
            timeout = atof(optarg);
        } else {
            fputs("usage: cfdpls [-n node dir] [-t timeout s] <entity>:<directory>\n",
                  o == 'h' ? stdout : stderr);
            return o == 'h' ? 0 : 2;
        }
    }
    uint64_t peer;
    const char *dir;
    if (argc - optind != 1 || ct_split(argv[optind], &peer, &dir)) {
        fputs("usage: cfdpls [-n node dir] [-t timeout s] <entity>:<directory>\n",
              stderr);
        return 2;
    }
    cfdp_ctl *c = ct_connect("cfdpls", node);
    if (!c)
        return 3;
    cfdp_ctl_info info;
    int rc = cfdp_ctl_info_get(c, &info);
    if (rc) {
        fprintf(stderr, "cfdpls: cfdpd: %s\n", cfdp_ctl_errmsg(c));
        return 3;
    }
    char path[CFDP_CTL_PATH_MAX + 64], name[64];
    snprintf(path, sizeof path, "%s/.cfdpls", info.root);
    mkdir(path, 0755);
    snprintf(name, sizeof name, ".cfdpls/%ld.txt", (long)getpid());
    cfdp_txn_id id;
    cfdp_ctl_event ev;
    if ((rc = cfdp_ctl_ls(c, peer, dir, name, &id)) || (rc = cfdp_ctl_watch(c, id)) ||
        (rc = ct_wait_answer(c, timeout, &ev))) {
        fprintf(stderr, "cfdpls: %s\n",
                rc == -ETIMEDOUT ? "timed out waiting for the listing"
                                 : cfdp_ctl_errmsg(c));
        return 1;
    }
    snprintf(path, sizeof path, "%s/%s", info.root, name);
    if (!ev.ok) {
        fprintf(stderr, "cfdpls: entity %" PRIu64 " could not list %s%s%s\n", peer, dir,
                ev.condition ? ": " : "",
                ev.condition ? cfdp_condition_name(ev.condition) : "");
        unlink(path);
        return 1;
    }
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "cfdpls: the listing %s: %s\n", path, strerror(errno));
        return 1;
    }
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        fwrite(buf, 1, n, stdout);
    fclose(f);
    unlink(path);
    cfdp_ctl_close(c);
    return 0;
}
