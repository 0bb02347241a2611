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
          "  -n, --node DIR     node directory (default $TERN_NODE_DIR, else .)\n"
          "  -c, --class N      1 (unacknowledged) or 2 (acknowledged, default)\n"
          "      --closure      class 1: ask for a Finished (default with --wait)\n"
          "      --no-closure   class 1: do not\n"
          "  -k, --checksum N   checksum type (0 modular, 2 CRC-32C, 3 CRC-32, 15 null)\n"
          "  -s, --segment B    largest file data per PDU\n"
          "  -L, --lifetime S   bundle lifetime in seconds (default one day)\n"
          "  -w, --wait         wait for the outcome, with progress (default on a tty)\n"
          "  -W, --no-wait      print the transaction ID and return\n"
          "  -t, --timeout S    give up waiting after S seconds (the transfer goes on)\n"
          "  -j, --json         one JSON object on stdout\n"
          "The local file is sent from cfdpd's filestore: a file outside it is linked\n"
          "(or copied) into <root>/.outbox first and removed when --wait ends.\n",
          f);
}

/* Copies src to dst (a file outside the filestore's file system). */
static int copy_file(const char *src, const char *dst)
{
    int in = open(src, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return -errno;
    int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (out < 0) {
        int rc = -errno;
        close(in);
        return rc;
    }
    char buf[1 << 16];
    ssize_t n;
    int rc = 0;
    while ((n = read(in, buf, sizeof buf)) > 0)
        if (write(out, buf, (size_t)n) != n) {
            rc = -EIO;
            break;
        }
    if (n < 0)
        rc = -errno;
    close(in);
    if (close(out) && !rc)
        rc = -errno;
    if (rc)
        unlink(dst);
    return rc;
}

int main(int argc, char **argv)
{
    const char *node = NULL;
    int cls = 0, closure = -1, ck = -1, json = 0;
    int wait = isatty(STDOUT_FILENO);
    long segment = 0, lifetime = 0;
    double timeout = 0;
    static const struct option opts[] = {{"node", required_argument, NULL, 'n'},
                                         {"class", required_argument, NULL, 'c'},
                                         {"closure", no_argument, NULL, 'C'},
                                         {"no-closure", no_argument, NULL, 'N'},
                                         {"checksum", required_argument, NULL, 'k'},
                                         {"segment", required_argument, NULL, 's'},
                                         {"lifetime", required_argument, NULL, 'L'},
                                         {"wait", no_argument, NULL, 'w'},
                                         {"no-wait", no_argument, NULL, 'W'},
                                         {"timeout", required_argument, NULL, 't'},
                                         {"json", no_argument, NULL, 'j'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    int o;
    while ((o = getopt_long(argc, argv, "n:c:k:s:L:wWt:jh", opts, NULL)) != -1) {
        switch (o) {
        case 'n':
            node = optarg;
            break;
        case 'c':
            cls = atoi(optarg);
            if (cls != 1 && cls != 2) {
                fprintf(stderr, "cfdpput: --class is 1 or 2, not '%s'\n", optarg);
                return 2;
            }
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
    if (argc - optind != 2) {
        usage(stderr);
        return 2;
    }
    const char *local = argv[optind], *remote = argv[optind + 1];
    char *colon = strchr(remote, ':');
    char *end;
    uint64_t dst = colon ? strtoull(remote, &end, 10) : 0;
    if (!colon || end != colon || !dst || !colon[1]) {
        fprintf(stderr, "cfdpput: '%s' is not <entity>:<remote path>\n", remote);
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
    char lreal[PATH_MAX], rreal[PATH_MAX], staged[PATH_MAX + 64] = "";
    struct stat st;
    if (!realpath(local, lreal) || stat(lreal, &st) || !S_ISREG(st.st_mode)) {
        fprintf(stderr, "cfdpput: %s: %s\n", local,
                errno ? strerror(errno) : "not a regular file");
        return 2;
    }
    if (!realpath(info.root, rreal)) {
        fprintf(stderr, "cfdpput: cfdpd's filestore %s: %s\n", info.root,
                strerror(errno));
        return 3;
    }
    const char *rel;
    size_t rl = strlen(rreal);
    if (!strncmp(lreal, rreal, rl) && lreal[rl] == '/') {
        rel = lreal + rl + 1;
    } else {
        char box[PATH_MAX + 16];
        snprintf(box, sizeof box, "%s/.outbox", rreal);
        mkdir(box, 0755);
        const char *base = strrchr(lreal, '/') + 1;
        snprintf(staged, sizeof staged, "%s/%ld-%s", box, (long)getpid(), base);
        if (link(lreal, staged) && (rc = copy_file(lreal, staged))) {
            fprintf(stderr, "cfdpput: cannot stage %s in %s: %s\n", local, box,
                    tern_strerror(rc));
            return 2;
        }
        rel = staged + rl + 1;
    }
    cfdp_ctl_put_req pr = {.src_name = rel,
                           .dst = dst,
                           .dst_name = colon + 1,
                           .cls = cls,
                           .closure = closure,
                           .checksum_type = ck,
                           .segment = (uint32_t)segment,
                           .lifetime_s = (uint32_t)lifetime};
    double t0 = ct_now();
    cfdp_txn_id id;
    if ((rc = cfdp_ctl_put(c, &pr, &id))) {
        fprintf(stderr, "cfdpput: %s\n", cfdp_ctl_errmsg(c));
        if (staged[0])
            unlink(staged);
        return 1;
    }
    if (!wait) {
        if (json)
            printf("{\"txn\": \"%" PRIu64 ".%" PRIu64 "\", \"size\": %lld}\n", id.src,
                   id.seq, (long long)st.st_size);
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
    int tty = isatty(STDERR_FILENO) && !json;
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
                double eta = rate > 0 && (double)st.st_size > (double)ev.progress
                                 ? ((double)st.st_size - (double)ev.progress) / rate
                                 : 0;
                char a[32], b[32], r[32];
                fprintf(stderr, "\r%s of %s sent  %s/s  ETA %.0f s  %s   ",
                        ct_bytes(a, sizeof a, (double)ev.progress),
                        ct_bytes(b, sizeof b, (double)st.st_size),
                        ct_bytes(r, sizeof r, rate), eta, cfdp_ctl_state_name(ev.state));
            }
        } else if (ev.type == CFDP_IND_FINISHED) {
            done = 1;
        }
    }
    if (tty)
        fputc('\n', stderr);
    double el = ct_now() - t0;
    if (staged[0])
        unlink(staged);
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
    /* class 2, or class 1 with closure: the receiver compared the checksum */
    int verified = ok && !(cls == 1 && closure == 0);
    double rate = el > 0 ? (double)st.st_size * 8 / el : 0;
    if (json) {
        printf(
            "{\"txn\": \"%" PRIu64 ".%" PRIu64 "\", \"delivered\": %s, "
            "\"checksum_verified\": %s, \"condition\": \"%s\", \"condition_code\": %u, "
            "\"size\": %lld, \"seconds\": %.3f, \"bits_per_s\": %.0f, "
            "\"bytes_resent\": %" PRIu64 "}\n",
            id.src, id.seq, ok ? "true" : "false", verified ? "true" : "false",
            cfdp_condition_name(ev.condition), ev.condition, (long long)st.st_size, el,
            rate, resent);
    } else if (ok) {
        char a[32];
        printf("%s -> %" PRIu64 ":%s: %s in %.2f s (%.1f Mbit/s), transaction %" PRIu64
               ".%" PRIu64 ", %s\n",
               local, dst, colon + 1, ct_bytes(a, sizeof a, (double)st.st_size), el,
               rate / 1e6, id.src, id.seq,
               verified ? "checksum verified by the receiver"
                        : "not verified (class 1 without closure)");
    } else {
        fprintf(stderr,
                "cfdpput: %s -> %" PRIu64 ":%s failed: %s (condition %u), data %s, "
                "transaction %" PRIu64 ".%" PRIu64 "\n",
                local, dst, colon + 1, cfdp_condition_name(ev.condition), ev.condition,
                ev.delivery == CFDP_DATA_COMPLETE ? "complete" : "incomplete", id.src,
                id.seq);
    }
    cfdp_ctl_close(c);
    return ok ? 0 : 1;
}
