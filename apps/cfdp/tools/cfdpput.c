/* cfdpput: sends a file to another CFDP entity through the node's cfdpd
 * (docs/cfdpd.md, "Commands"). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cfdptool.h"

static void usage(FILE *f)
{
    fputs("usage: cfdpput [options] <local file> <entity>:<remote path>\n"
          "       cfdpput [options] --fs REQ [--fs REQ ...] <entity>   (no file)\n"
          "  -n, --node DIR     node directory (default $TERN_NODE_DIR, else .)\n"
          "  -c, --class N      1 (unacknowledged) or 2 (acknowledged, default)\n"
          "      --closure      class 1: ask for a Finished (default with --wait)\n"
          "      --no-closure   class 1: do not\n"
          "  -k, --checksum N   checksum type (0 modular, 2 CRC-32C, 3 CRC-32, 15 null)\n"
          "  -s, --segment B    largest file data per PDU\n"
          "  -L, --lifetime S   bundle lifetime in seconds (default one day)\n"
          "  -p, --priority P   bundle priority: bulk, standard (default), expedited\n"
          "  -f, --fs REQ       a filestore request run at the receiver once the file\n"
          "                     is complete (repeat, at most 32, run in order):\n"
          "                     ACTION:NAME with createFile, deleteFile,\n"
          "                     createDirectory, removeDirectory, denyFile,\n"
          "                     denyDirectory; ACTION:NAME:NAME2 with renameFile,\n"
          "                     appendFile, replaceFile (NAME2 the new name, the\n"
          "                     file appended, the replacing file); names are\n"
          "                     relative to the receiver's filestore root\n"
          "  -w, --wait         wait for the outcome, with progress (default on a tty)\n"
          "  -W, --no-wait      print the transaction ID and return\n"
          "  -t, --timeout S    give up waiting after S seconds (the transfer goes on)\n"
          "  -j, --json         one JSON object on stdout\n"
          "The local file is sent from cfdpd's filestore: a file outside it is linked\n"
          "(or copied) into <root>/.outbox first and removed when --wait ends.\n"
          "Exit 0 only if the file arrived verified and every filestore request\n"
          "succeeded; 1 otherwise (the condition or each failed request's status in\n"
          "words), 2 bad usage or local file, 3 no cfdpd.\n",
          f);
}

/* "<entity>" or "<entity>:" (a put of filestore requests only), or
 * "<entity>:<path>": 0, or -EINVAL. */
static int split_dest(const char *arg, int need_path, uint64_t *dst, const char **path)
{
    char *end;
    if (arg[0] < '0' || arg[0] > '9')
        return -EINVAL;
    errno = 0;
    *dst = strtoull(arg, &end, 10);
    if (errno || !*dst || (*end && *end != ':'))
        return -EINVAL;
    *path = *end ? end + 1 : "";
    return need_path == !!**path ? 0 : -EINVAL;
}

int main(int argc, char **argv)
{
    const char *node = NULL;
    int cls = 0, closure = -1, ck = -1, json = 0, prio = CFDP_CTL_PRIO_DEFAULT;
    int wait = isatty(STDOUT_FILENO);
    long segment = 0, lifetime = 0;
    double timeout = 0;
    static struct ct_fs fs;
    static const struct option opts[] = {{"node", required_argument, NULL, 'n'},
                                         {"class", required_argument, NULL, 'c'},
                                         {"closure", no_argument, NULL, 'C'},
                                         {"no-closure", no_argument, NULL, 'N'},
                                         {"checksum", required_argument, NULL, 'k'},
                                         {"segment", required_argument, NULL, 's'},
                                         {"lifetime", required_argument, NULL, 'L'},
                                         {"priority", required_argument, NULL, 'p'},
                                         {"fs", required_argument, NULL, 'f'},
                                         {"wait", no_argument, NULL, 'w'},
                                         {"no-wait", no_argument, NULL, 'W'},
                                         {"timeout", required_argument, NULL, 't'},
                                         {"json", no_argument, NULL, 'j'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    int o;
    while ((o = getopt_long(argc, argv, "n:c:k:s:L:p:f:wWt:jh", opts, NULL)) != -1) {
        switch (o) {
        case 'n':
            node = optarg;
            break;
        case 'c':
            if (ct_opt_class("cfdpput", optarg, &cls))
                return 2;
            break;
        case 'C':
            closure = 1;
            break;
        case 'N':
            closure = 0;
            break;
        case 'k':
            ck = atoi(optarg);
            break;
        case 's':
            segment = atol(optarg);
            break;
        case 'L':
            lifetime = atol(optarg);
            break;
        case 'p':
            if (ct_opt_priority("cfdpput", optarg, &prio))
                return 2;
            break;
        case 'f':
            if (ct_opt_fs("cfdpput", optarg, &fs))
                return 2;
            break;
        case 'w':
            wait = 1;
            break;
        case 'W':
            wait = 0;
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
    /* a file and where it goes, or (filestore requests only) an entity */
    int nargs = argc - optind;
    if (nargs != 2 && !(nargs == 1 && fs.n)) {
        usage(stderr);
        return 2;
    }
    const char *local = nargs == 2 ? argv[optind] : NULL, *remote = argv[argc - 1];
    const char *rpath;
    uint64_t dst;
    if (split_dest(remote, local != NULL, &dst, &rpath)) {
        fprintf(stderr, "cfdpput: '%s' is not %s\n", remote,
                local ? "<entity>:<remote path>"
                      : "<entity> (a put of filestore requests only names no file)");
        return 2;
    }
    if (cls == 1 && closure < 0 && wait)
        closure = 1; /* waiting for an outcome needs one */

    cfdp_ctl *c = ct_connect("cfdpput", node);
    if (!c)
        return 3;
    cfdp_ctl_info info;
    int rc = cfdp_ctl_info_get(c, &info);
    if (rc) {
        fprintf(stderr, "cfdpput: cfdpd: %s\n", cfdp_ctl_errmsg(c));
        return 3;
    }
    char rreal[PATH_MAX];
    if (!realpath(info.root, rreal)) {
        fprintf(stderr, "cfdpput: cfdpd's filestore %s: %s\n", info.root,
                strerror(errno));
        return 3;
    }
    static struct ct_staged sf;
    if (local && (rc = ct_stage(rreal, local, "", &sf))) {
        fprintf(stderr, "cfdpput: %s: %s\n", local,
                rc == -EISDIR ? "not a regular file" : tern_strerror(rc));
        return 2;
    }
    long long size = local ? sf.size : 0;
    cfdp_ctl_put_req pr = {.src_name = local ? sf.rel : NULL,
                           .dst = dst,
                           .dst_name = local ? rpath : NULL,
                           .cls = cls,
                           .closure = closure,
                           .checksum_type = ck,
                           .segment = (uint32_t)segment,
                           .lifetime_s = (uint32_t)lifetime,
                           .priority = prio,
                           .nfs = fs.n,
                           .fs = fs.req};
    double t0 = ct_now();
    cfdp_txn_id id;
    if ((rc = cfdp_ctl_put(c, &pr, &id))) {
        fprintf(stderr, "cfdpput: %s\n",
                cfdp_ctl_errmsg(c)[0] ? cfdp_ctl_errmsg(c) : tern_strerror(rc));
        ct_unstage(&sf);
        return 1;
    }
    if (!wait) {
        if (json)
            printf("{\"txn\": \"%" PRIu64 ".%" PRIu64 "\", \"size\": %lld, \"priority\": "
                   "\"%s\"}\n",
                   id.src, id.seq, size, cfdp_ctl_priority_name(prio));
        else
            printf("%" PRIu64 ".%" PRIu64 "\n", id.src, id.seq);
        cfdp_ctl_close(c);
        return 0;
    }
    if ((rc = cfdp_ctl_watch(c, id))) {
        fprintf(stderr, "cfdpput: watching %" PRIu64 ".%" PRIu64 ": %s\n", id.src, id.seq,
                cfdp_ctl_errmsg(c));
        return 1;
    }
    int tty = isatty(STDERR_FILENO) && !json && local;
    cfdp_ctl_event ev;
    int done = 0;
    uint64_t resent = 0;
    while (!done) {
        int left = -1;
        if (timeout > 0) {
            double l = timeout - (ct_now() - t0);
            if (l <= 0) {
                rc = -ETIMEDOUT;
                break;
            }
            left = (int)(l * 1000) + 1;
        }
        if ((rc = cfdp_ctl_next_event(c, &ev, left)))
            break;
        if (ev.type == CFDP_CTL_EV_PROGRESS) {
            resent = ev.resent;
            if (tty) {
                double el = ct_now() - t0, rate = el > 0 ? (double)ev.progress / el : 0;
                double eta = rate > 0 && (double)size > (double)ev.progress
                                 ? ((double)size - (double)ev.progress) / rate
                                 : 0;
                char a[32], b[32], r[32];
                fprintf(stderr, "\r%s of %s sent  %s/s  ETA %.0f s  %s   ",
                        ct_bytes(a, sizeof a, (double)ev.progress),
                        ct_bytes(b, sizeof b, (double)size), ct_bytes(r, sizeof r, rate),
                        eta, cfdp_ctl_state_name(ev.state));
            }
        } else if (ev.type == CFDP_IND_FINISHED) {
            done = 1;
        }
    }
    if (tty)
        fputc('\n', stderr);
    double el = ct_now() - t0;
    ct_unstage(&sf);
    if (rc) {
        const char *why = rc == -ETIMEDOUT ? "timed out waiting (the transfer goes on)"
                                           : "cfdpd went away";
        if (json)
            printf("{\"txn\": \"%" PRIu64 ".%" PRIu64
                   "\", \"delivered\": false, \"error\": \"%s\"}\n",
                   id.src, id.seq, why);
        else
            fprintf(stderr, "cfdpput: %" PRIu64 ".%" PRIu64 ": %s\n", id.src, id.seq,
                    why);
        return 1;
    }
    int ok = ev.condition == CFDP_COND_NO_ERROR && ev.delivery == CFDP_DATA_COMPLETE;
    /* class 2, or class 1 with closure: the receiver compared the checksum
     * (and answered the filestore requests) */
    int verified = ok && !(cls == 1 && closure == 0);
    size_t fs_bad = verified ? ct_fs_failed(&fs, &ev) : 0; /* unknown is not failed */
    double rate = el > 0 ? (double)size * 8 / el : 0;
    const char *what = local ? local : "(filestore requests)";
    if (json) {
        printf(
            "{\"txn\": \"%" PRIu64 ".%" PRIu64 "\", \"delivered\": %s, "
            "\"checksum_verified\": %s, \"condition\": \"%s\", \"condition_code\": %u, "
            "\"size\": %lld, \"seconds\": %.3f, \"bits_per_s\": %.0f, "
            "\"bytes_resent\": %" PRIu64 ", \"priority\": \"%s\", "
            "\"filestore_failed\": %zu, \"filestore\": ",
            id.src, id.seq, ok ? "true" : "false", verified ? "true" : "false",
            cfdp_condition_name(ev.condition), ev.condition, size, el, rate, resent,
            cfdp_ctl_priority_name(prio), fs_bad);
        ct_fs_json(&fs, &ev);
        printf("}\n");
    } else if (ok) {
        char a[32];
        if (local)
            printf("%s -> %" PRIu64
                   ":%s: %s in %.2f s (%.1f Mbit/s), transaction %" PRIu64 ".%" PRIu64
                   ", %s\n",
                   local, dst, rpath, ct_bytes(a, sizeof a, (double)size), el, rate / 1e6,
                   id.src, id.seq,
                   verified ? "checksum verified by the receiver"
                            : "not verified (class 1 without closure)");
        else
            printf("%zu filestore request(s) -> entity %" PRIu64
                   " in %.2f s, transaction "
                   "%" PRIu64 ".%" PRIu64 "\n",
                   fs.n, dst, el, id.src, id.seq);
        if (verified)
            ct_fs_report("cfdpput", &fs, &ev, stdout);
        else if (fs.n)
            fprintf(stderr,
                    "cfdpput: the filestore requests' outcome is unknown (class 1 "
                    "without closure: no Finished)\n");
    } else {
        fprintf(stderr,
                "cfdpput: %s -> %" PRIu64 ":%s failed: %s (condition %u), data %s, "
                "transaction %" PRIu64 ".%" PRIu64 "\n",
                what, dst, rpath, cfdp_condition_name(ev.condition), ev.condition,
                ev.delivery == CFDP_DATA_COMPLETE ? "complete" : "incomplete", id.src,
                id.seq);
        if (fs.n && ev.nfs)
            ct_fs_report("cfdpput", &fs, &ev, stdout);
    }
    cfdp_ctl_close(c);
    return ok && !fs_bad ? 0 : 1;
}
