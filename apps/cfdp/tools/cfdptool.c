/* The file commands' shared core (cfdptool.h): staging a local file into
 * cfdpd's filestore, moving a received one out, the options every put
 * command takes, and the filestore responses' report. Compiled into each
 * command. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cfdptool.h"

/* Copies in to out, both open. */
static int copy_fd(int in, int out)
{
    char buf[1 << 16];
    ssize_t n;
    while ((n = read(in, buf, sizeof buf)) > 0) {
        for (ssize_t done = 0; done < n;) {
            ssize_t w = write(out, buf + done, (size_t)(n - done));
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                return w < 0 ? -errno : -EIO;
            done += w;
        }
    }
    return n < 0 ? -errno : 0;
}

/* Copies src to dst, a new file (flags: O_EXCL to refuse one that exists,
 * or O_TRUNC to replace it); a failed copy leaves no dst behind. */
static int copy_file(const char *src, const char *dst, int flags)
{
    int in = open(src, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return -errno;
    int out = open(dst, O_WRONLY | O_CREAT | O_CLOEXEC | flags, 0644);
    if (out < 0) {
        int rc = -errno;
        close(in);
        return rc;
    }
    int rc = copy_fd(in, out);
    close(in);
    if (close(out) && !rc)
        rc = -errno;
    if (rc)
        unlink(dst);
    return rc;
}

int ct_stage(const char *root, const char *local, const char *tag, struct ct_staged *s)
{
    char real[PATH_MAX];
    struct stat st;
    memset(s, 0, sizeof *s);
    if (!realpath(local, real) || stat(real, &st))
        return -errno;
    if (!S_ISREG(st.st_mode))
        return -EISDIR;
    s->size = (long long)st.st_size;
    size_t rl = strlen(root);
    if (!strncmp(real, root, rl) && real[rl] == '/') {
        snprintf(s->rel, sizeof s->rel, "%s", real + rl + 1);
        return 0;
    }
    /* outside the filestore: a hard link (or, across file systems, a copy)
     * in <root>/.outbox, which cfdpd can read */
    char box[PATH_MAX];
    if (snprintf(box, sizeof box, "%s/.outbox", root) >= (int)sizeof box)
        return -ENAMETOOLONG;
    if (mkdir(box, 0755) && errno != EEXIST)
        return -errno;
    int n = snprintf(s->staged, sizeof s->staged, "%s/%ld-%s%s", box, (long)getpid(), tag,
                     strrchr(real, '/') + 1);
    if (n < 0 || (size_t)n >= sizeof s->staged) {
        s->staged[0] = 0;
        return -ENAMETOOLONG;
    }
    int rc = 0;
    if (link(real, s->staged) && (rc = copy_file(real, s->staged, O_EXCL))) {
        s->staged[0] = 0;
        return rc;
    }
    snprintf(s->rel, sizeof s->rel, "%s", s->staged + rl + 1);
    return 0;
}

void ct_unstage(struct ct_staged *s)
{
    if (s->staged[0]) {
        unlink(s->staged);
        s->staged[0] = 0;
    }
}

int ct_move_file(const char *from, const char *to)
{
    if (!rename(from, to))
        return 0;
    if (errno != EXDEV)
        return -errno;
    int rc = copy_file(from, to, O_TRUNC);
    if (!rc)
        unlink(from);
    return rc;
}

int ct_opt_class(const char *prog, const char *arg, int *cls)
{
    if (strcmp(arg, "1") && strcmp(arg, "2")) {
        fprintf(stderr, "%s: --class is 1 or 2, not '%s'\n", prog, arg);
        return -EINVAL;
    }
    *cls = arg[0] - '0';
    return 0;
}

int ct_opt_priority(const char *prog, const char *arg, int *prio)
{
    int p = cfdp_ctl_priority_parse(arg);
    if (p < 0) {
        fprintf(stderr, "%s: --priority is bulk, standard or expedited, not '%s'\n", prog,
                arg);
        return -EINVAL;
    }
    *prio = p;
    return 0;
}

int ct_opt_fs(const char *prog, const char *arg, struct ct_fs *fs)
{
    if (fs->n == CFDP_CTL_FS_MAX) {
        fprintf(stderr, "%s: at most %d filestore requests (--fs) per put\n", prog,
                CFDP_CTL_FS_MAX);
        return -E2BIG;
    }
    char why[300];
    if (cfdp_ctl_fs_parse(arg, &fs->req[fs->n], why, sizeof why)) {
        fprintf(stderr, "%s: --fs '%s': %s\n", prog, arg, why);
        return -EINVAL;
    }
    fs->n++;
    return 0;
}

void ct_json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

/* The status of request i in words: the Finished's, or "no response". */
static const char *fs_word(const struct ct_fs *fs, const cfdp_ctl_event *ev, size_t i,
                           unsigned *status)
{
    if (i >= ev->nfs || ev->fs_action[i] != fs->req[i].action) {
        *status = 256; /* not a CFDP status: none came */
        return "no response from the receiver";
    }
    *status = ev->fs_status[i];
    return cfdp_fs_status_name(ev->fs_action[i], ev->fs_status[i]);
}

size_t ct_fs_failed(const struct ct_fs *fs, const cfdp_ctl_event *ev)
{
    size_t bad = 0;
    for (size_t i = 0; i < fs->n; i++) {
        unsigned st;
        fs_word(fs, ev, i, &st);
        bad += st != CFDP_FS_SUCCESS;
    }
    return bad;
}

void ct_fs_report(const char *prog, const struct ct_fs *fs, const cfdp_ctl_event *ev,
                  FILE *out)
{
    for (size_t i = 0; i < fs->n; i++) {
        const cfdp_ctl_fsreq *r = &fs->req[i];
        unsigned st;
        const char *w = fs_word(fs, ev, i, &st);
        int ok = st == CFDP_FS_SUCCESS;
        fprintf(ok ? out : stderr, "%s%sfilestore request %zu, %s %s%s%s: %s\n",
                ok ? "" : prog, ok ? "" : ": ", i + 1, cfdp_ctl_fs_word(r->action),
                r->first, r->second[0] ? " " : "", r->second, w);
    }
}

void ct_fs_json(const struct ct_fs *fs, const cfdp_ctl_event *ev)
{
    printf("[");
    for (size_t i = 0; i < fs->n; i++) {
        const cfdp_ctl_fsreq *r = &fs->req[i];
        unsigned st;
        const char *w = fs_word(fs, ev, i, &st);
        printf("%s{\"action\": \"%s\", \"first\": ", i ? ", " : "",
               cfdp_ctl_fs_word(r->action));
        ct_json_str(stdout, r->first);
        printf(", \"second\": ");
        ct_json_str(stdout, r->second);
        if (st > 255)
            printf(", \"status_code\": null");
        else
            printf(", \"status_code\": %u", st);
        printf(", \"status\": \"%s\", \"ok\": %s}", w,
               st == CFDP_FS_SUCCESS ? "true" : "false");
    }
    printf("]");
}
