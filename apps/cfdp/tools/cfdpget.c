/* cfdpget: asks another entity to send us one of its files (a proxy put
 * request through the node's cfdpd; docs/cfdpd.md). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cfdptool.h"

static void usage(FILE *f)
{
    fputs("usage: cfdpget [options] <entity>:<remote path> <local path>\n"
          "  -n, --node DIR     node directory (default $TERN_NODE_DIR, else .)\n"
          "  -c, --class N      1 or 2 (default: the remote entity's)\n"
          "  -p, --priority P   bundle priority of the request: bulk, standard\n"
          "                     (default), expedited (the file itself comes at the\n"
          "                     remote entity's priority: CFDP cannot ask for one)\n"
          "  -t, --timeout S    give up waiting after S seconds\n"
          "  -j, --json         one JSON object on stdout\n"
          "The file arrives in cfdpd's filestore; a local path outside it is received\n"
          "into <root>/.inbox and moved there at the end.\n",
          f);
}

int main(int argc, char **argv)
{
    const char *node = NULL;
    int cls = 0, json = 0, prio = CFDP_CTL_PRIO_DEFAULT;
    double timeout = 0;
    static const struct option opts[] = {{"node", required_argument, NULL, 'n'},
                                         {"class", required_argument, NULL, 'c'},
                                         {"priority", required_argument, NULL, 'p'},
                                         {"timeout", required_argument, NULL, 't'},
                                         {"json", no_argument, NULL, 'j'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    int o;
    while ((o = getopt_long(argc, argv, "n:c:p:t:jh", opts, NULL)) != -1) {
        switch (o) {
        case 'n':
            node = optarg;
            break;
        case 'c':
            if (ct_opt_class("cfdpget", optarg, &cls))
                return 2;
            break;
        case 'p':
            if (ct_opt_priority("cfdpget", optarg, &prio))
                return 2;
            break;
        case 't':
            timeout = atof(optarg);
            break;
        case 'j':
            json = 1;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    uint64_t peer;
    const char *remote;
    if (argc - optind != 2 || ct_split(argv[optind], &peer, &remote)) {
        usage(stderr);
        return 2;
    }
    const char *local = argv[optind + 1];
    cfdp_ctl *c = ct_connect("cfdpget", node);
    if (!c)
        return 3;
    cfdp_ctl_info info;
    int rc = cfdp_ctl_info_get(c, &info);
    char rreal[PATH_MAX];
    if (rc || !realpath(info.root, rreal)) {
        fprintf(stderr, "cfdpget: cfdpd's filestore: %s\n",
                rc ? cfdp_ctl_errmsg(c) : strerror(errno));
        return 3;
    }
    /* where the file is to end up: an absolute path */
    char tmp[PATH_MAX], dreal[PATH_MAX], target[2 * PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", local);
    char *dir = dirname(tmp);
    if (!realpath(dir, dreal)) {
        fprintf(stderr, "cfdpget: %s: %s\n", dir, strerror(errno));
        return 2;
    }
    snprintf(tmp, sizeof tmp, "%s", local);
    snprintf(target, sizeof target, "%s/%s", dreal, basename(tmp));
    size_t rl = strlen(rreal);
    char name[PATH_MAX + 64], inbox[PATH_MAX + 64] = "";
    if (!strncmp(target, rreal, rl) && target[rl] == '/') {
        snprintf(name, sizeof name, "%s", target + rl + 1);
    } else {
        snprintf(inbox, sizeof inbox, "%s/.inbox", rreal);
        mkdir(inbox, 0755);
        snprintf(tmp, sizeof tmp, "%s", local);
        snprintf(name, sizeof name, ".inbox/%ld-%s", (long)getpid(), basename(tmp));
    }
    double t0 = ct_now();
    cfdp_txn_id id;
    if ((rc = cfdp_ctl_get_prio(c, peer, remote, name, cls, prio, &id))) {
        fprintf(stderr, "cfdpget: %s\n",
                cfdp_ctl_errmsg(c)[0] ? cfdp_ctl_errmsg(c) : tern_strerror(rc));
        return 1;
    }
    cfdp_ctl_event ev;
    if ((rc = cfdp_ctl_watch(c, id)) || (rc = ct_wait_answer(c, timeout, &ev))) {
        fprintf(stderr, "cfdpget: request %" PRIu64 ".%" PRIu64 ": %s\n", id.src, id.seq,
                rc == -ETIMEDOUT ? "timed out waiting for the answer"
                                 : cfdp_ctl_errmsg(c));
        return 1;
    }
    double el = ct_now() - t0;
    char got[2 * PATH_MAX + 64];
    snprintf(got, sizeof got, "%s/%s", rreal, name);
    if (ev.ok && inbox[0] && (rc = ct_move_file(got, target))) {
        fprintf(stderr, "cfdpget: moving %s to %s: %s\n", got, target, tern_strerror(rc));
        return 1;
    }
    struct stat st;
    long long size = ev.ok && !stat(target, &st) ? (long long)st.st_size : -1;
    if (json)
        printf("{\"request\": \"%" PRIu64 ".%" PRIu64 "\", \"delivered\": %s, "
               "\"condition\": \"%s\", \"condition_code\": %u, \"size\": %lld, "
               "\"seconds\": %.3f}\n",
               id.src, id.seq, ev.ok ? "true" : "false",
               cfdp_condition_name(ev.condition), ev.condition, size, el);
    else if (ev.ok)
        printf("%" PRIu64 ":%s -> %s: %lld bytes in %.2f s, checksum verified\n", peer,
               remote, local, size, el);
    else
        fprintf(stderr, "cfdpget: %" PRIu64 ":%s failed: %s (condition %u), data %s\n",
                peer, remote, cfdp_condition_name(ev.condition), ev.condition,
                ev.delivery == CFDP_DATA_COMPLETE ? "complete" : "incomplete");
    cfdp_ctl_close(c);
    return ev.ok ? 0 : 1;
}
