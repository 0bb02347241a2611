/* bpcpd: ION's bpcp daemon command (docs/bpcp.md). In Tern the node's cfdpd
 * is what receives and serves files, so bpcpd makes sure one runs: if a
 * cfdpd already serves the node directory it says so and exits 0; otherwise
 * it becomes cfdpd (exec) in the foreground, as ION's bpcpd runs until it
 * is stopped.
 *
 *   bpcpd [-d | -v] [-n node dir] [-- cfdpd options]
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cfdptool.h"

#ifndef TERN_VERSION
#define TERN_VERSION "unknown"
#endif

static void usage(FILE *f)
{
    fputs("usage: bpcpd [-d | -v] [-n node dir] [-- cfdpd options]\n"
          "  -d        debug: cfdpd logs every transaction event (cfdpd -v)\n"
          "  -v        version\n"
          "  -n dir    node directory (Tern; default $TERN_NODE_DIR, else .)\n"
          "Starts the node's cfdpd in the foreground, or says which one already\n"
          "serves it. See docs/bpcp.md.\n",
          f);
}

int main(int argc, char **argv)
{
    int debug = 0, o;
    const char *node = NULL;
    while ((o = getopt(argc, argv, "dvn:h")) != -1) {
        switch (o) {
        case 'd':
            debug++;
            break;
        case 'v':
            printf("bpcpd (Tern %s): starts the node's cfdpd\n", TERN_VERSION);
            return 0;
        case 'n':
            node = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 1;
        }
    }
    if (!node)
        node = getenv("TERN_NODE_DIR");
    if (!node || !*node)
        node = ".";
    cfdp_ctl *c;
    int rc = cfdp_ctl_open(node, &c);
    if (!rc) {
        cfdp_ctl_info info;
        rc = cfdp_ctl_info_get(c, &info);
        if (!rc)
            printf("bpcpd: cfdpd already serves %s as CFDP entity %" PRIu64
                   " (filestore %s)\n",
                   node, info.entity, info.root);
        else
            fprintf(stderr, "bpcpd: a cfdpd holds %s's socket but answers: %s\n", node,
                    cfdp_ctl_errmsg(c));
        cfdp_ctl_close(c);
        return rc ? 1 : 0;
    }
    if (rc != -ECONNREFUSED) {
        fprintf(stderr, "bpcpd: node directory %s: %s\n", node, tern_strerror(rc));
        return 1;
    }
    /* cfdpd from bpcpd's own directory first (a build tree), else $PATH */
    char self[PATH_MAX], prog[PATH_MAX + 8] = "cfdpd";
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = 0;
        char *slash = strrchr(self, '/');
        if (slash) {
            *slash = 0;
            snprintf(prog, sizeof prog, "%s/cfdpd", self);
            if (access(prog, X_OK))
                snprintf(prog, sizeof prog, "cfdpd");
        }
    }
    int extra = argc - optind;
    char **av = calloc((size_t)extra + 4, sizeof *av);
    if (!av)
        return 1;
    int k = 0;
    av[k++] = prog;
    av[k++] = (char *)node;
    if (debug)
        av[k++] = "-v";
    for (int i = 0; i < extra; i++)
        av[k++] = argv[optind + i];
    av[k] = NULL;
    if (debug)
        fprintf(stderr, "bpcpd: no cfdpd serves %s: starting %s\n", node, prog);
    execvp(prog, av);
    fprintf(stderr, "bpcpd: cannot run %s: %s\n", prog, strerror(errno));
    free(av);
    return 1;
}
