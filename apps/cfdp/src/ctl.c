/* The client side of cfdpd's command socket (cfdp_ctl.h, docs/cfdpd.md). */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cfdp_ctl.h"

struct cfdp_ctl {
    int fd;
    char err[512];
    char *buf; /* CFDP_CTL_MSG_MAX + 1 */
};

#define CTL_TIMEOUT_MS 10000

TERN_API int cfdp_ctl_sockaddr(const char *node_dir, struct sockaddr_un *sa,
                               socklen_t *len)
{
    char real[PATH_MAX];
    if (!node_dir || !realpath(node_dir, real))
        return node_dir ? -errno : -EINVAL;
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a 64 */
    for (const char *p = real; *p; p++) {
        h ^= (uint8_t)*p;
        h *= 0x100000001b3ull;
    }
    memset(sa, 0, sizeof *sa);
    sa->sun_family = AF_UNIX;
    /* abstract: sun_path[0] is NUL; the name is not NUL-terminated */
    int n =
        snprintf(sa->sun_path + 1, sizeof sa->sun_path - 1, "tern-cfdpd-%016" PRIx64, h);
    *len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
    return 0;
}

static void seterr(cfdp_ctl *c, const char *fmt, const char *a, const char *b)
{
    snprintf(c->err, sizeof c->err, fmt, a, b);
}

TERN_API int cfdp_ctl_open(const char *node_dir, cfdp_ctl **out)
{
    if (!out)
        return -EINVAL;
    if (!node_dir)
        node_dir = getenv("TERN_NODE_DIR");
    if (!node_dir || !*node_dir)
        node_dir = ".";
    struct sockaddr_un sa;
    socklen_t salen;
    int rc = cfdp_ctl_sockaddr(node_dir, &sa, &salen);
    if (rc)
        return rc;
    cfdp_ctl *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    c->buf = malloc(CFDP_CTL_MSG_MAX + 1);
    if (!c->buf) {
        rc = -ENOMEM;
        goto fail;
    }
    c->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (c->fd < 0) {
        rc = -errno;
        goto fail_buf;
    }
    if (connect(c->fd, (struct sockaddr *)&sa, salen)) {
        rc = -errno;
        goto fail_sock;
    }
    *out = c;
    return 0;
fail_sock:
    close(c->fd);
fail_buf:
    free(c->buf);
fail:
    free(c);
    return rc;
}

TERN_API void cfdp_ctl_close(cfdp_ctl *c)
{
    if (!c)
        return;
    close(c->fd);
    free(c->buf);
    free(c);
}

TERN_API const char *cfdp_ctl_errmsg(const cfdp_ctl *c)
{
    return c ? c->err : "";
}

TERN_API int cfdp_ctl_fd(const cfdp_ctl *c)
{
    return c ? c->fd : -EINVAL;
}

/* One datagram into c->buf (NUL-terminated): its length, -ETIMEDOUT, or
 * -ECONNRESET when cfdpd closed the connection. */
static int recv_msg(cfdp_ctl *c, int timeout_ms)
{
    struct pollfd p = {.fd = c->fd, .events = POLLIN};
    int r;
    do
        r = poll(&p, 1, timeout_ms);
    while (r < 0 && errno == EINTR);
    if (r < 0)
        return -errno;
    if (r == 0)
        return -ETIMEDOUT;
    ssize_t n = recv(c->fd, c->buf, CFDP_CTL_MSG_MAX, 0);
    if (n < 0)
        return -errno;
    if (n == 0) {
        seterr(c, "cfdpd closed the connection%s%s", "", "");
        return -ECONNRESET;
    }
    c->buf[n] = 0;
    return (int)n;
}

TERN_API int cfdp_ctl_kv(const char *text, const char *key, int space_ends, char *out,
                         size_t cap)
{
    size_t kl = strlen(key);
    for (const char *p = text; (p = strstr(p, key)) != NULL; p++) {
        if ((p != text && p[-1] != '\n' && p[-1] != ' ') || p[kl] != '=')
            continue;
        const char *v = p + kl + 1;
        size_t n = strcspn(v, space_ends ? " \n" : "\n");
        if (n + 1 > cap)
            return TERN_ENOSPACE;
        memcpy(out, v, n);
        out[n] = 0;
        return 0;
    }
    return TERN_ENOTFOUND;
}

static int kv_u64(const char *text, const char *key, uint64_t *v)
{
    char b[32];
    int rc = cfdp_ctl_kv(text, key, 1, b, sizeof b);
    if (rc)
        return rc;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(b, &end, 10);
    if (errno || end == b || *end)
        return TERN_EMALFORMED;
    *v = x;
    return 0;
}

TERN_API int cfdp_ctl_request(cfdp_ctl *c, const char *req, char *ans, size_t cap,
                              int timeout_ms)
{
    if (!c || !req)
        return -EINVAL;
    size_t len = strlen(req);
    if (len > CFDP_CTL_MSG_MAX)
        return -EMSGSIZE;
    c->err[0] = 0;
    if (send(c->fd, req, len, MSG_NOSIGNAL) < 0)
        return -errno;
    /* events of a watch may come first: the answer is the next non-event */
    for (;;) {
        int n = recv_msg(c, timeout_ms);
        if (n < 0)
            return n;
        if (!strncmp(c->buf, "event\n", 6))
            continue;
        if (ans && cap) {
            snprintf(ans, cap, "%s", c->buf);
        }
        if (!strncmp(c->buf, "ok", 2) && (c->buf[2] == '\n' || !c->buf[2]))
            return 0;
        if (strncmp(c->buf, "err\n", 4)) {
            seterr(c, "cfdpd answered something that is not ok/err: %.60s%s", c->buf, "");
            return TERN_EMALFORMED;
        }
        char msg[400] = "";
        cfdp_ctl_kv(c->buf, "msg", 0, msg, sizeof msg);
        seterr(c, "%s%s", msg, "");
        char code[24];
        if (cfdp_ctl_kv(c->buf, "code", 1, code, sizeof code))
            return -EIO;
        long v = strtol(code, NULL, 10);
        return v < 0 && v > INT_MIN ? (int)v : -EIO;
    }
}

TERN_API int cfdp_ctl_parse_txn(const char *text, cfdp_txn_id *id)
{
    if (!text || !id)
        return -EINVAL;
    /* digits only: strtoull would take spaces, a sign, and wrap "-1" */
    if (text[0] < '0' || text[0] > '9')
        return -EINVAL;
    char *end;
    errno = 0;
    unsigned long long s = strtoull(text, &end, 10);
    if (errno || end == text || *end != '.')
        return -EINVAL;
    const char *q = end + 1;
    if (q[0] < '0' || q[0] > '9')
        return -EINVAL;
    unsigned long long n = strtoull(q, &end, 10);
    if (errno || end == q || (*end && *end != ' ' && *end != '\n'))
        return -EINVAL;
    id->src = s;
    id->seq = n;
    return 0;
}

TERN_API int cfdp_ctl_info_get(cfdp_ctl *c, cfdp_ctl_info *out)
{
    if (!c || !out)
        return -EINVAL;
    int rc = cfdp_ctl_request(c, "info\n", NULL, 0, CTL_TIMEOUT_MS);
    if (rc)
        return rc;
    memset(out, 0, sizeof *out);
    if ((rc = kv_u64(c->buf, "entity", &out->entity)) ||
        (rc = cfdp_ctl_kv(c->buf, "root", 0, out->root, sizeof out->root)))
        return rc;
    kv_u64(c->buf, "txns", &out->txns);
    return 0;
}

static int has_nl(const char *s)
{
    return s && strchr(s, '\n') != NULL;
}

TERN_API int cfdp_ctl_put(cfdp_ctl *c, const cfdp_ctl_put_req *r, cfdp_txn_id *id)
{
    if (!c || !r || has_nl(r->src_name) || has_nl(r->dst_name))
        return -EINVAL;
    char req[2 * 300 + 256];
    int n =
        snprintf(req, sizeof req,
                 "put\nsrc=%s\ndst=%" PRIu64 "\ndst_name=%s\nclass=%d\nclosure=%d\n"
                 "checksum=%d\nsegment=%u\nlifetime=%u\n",
                 r->src_name ? r->src_name : "", r->dst, r->dst_name ? r->dst_name : "",
                 r->cls, r->closure, r->checksum_type, r->segment, r->lifetime_s);
    if (n < 0 || (size_t)n >= sizeof req)
        return -ENAMETOOLONG;
    int rc = cfdp_ctl_request(c, req, NULL, 0, CTL_TIMEOUT_MS);
    if (rc)
        return rc;
    char t[64];
    if ((rc = cfdp_ctl_kv(c->buf, "txn", 1, t, sizeof t)))
        return rc;
    cfdp_txn_id got;
    if ((rc = cfdp_ctl_parse_txn(t, &got)))
        return TERN_EMALFORMED;
    if (id)
        *id = got;
    return 0;
}

static int txn_answer(cfdp_ctl *c, const char *req, cfdp_txn_id *id)
{
    int rc = cfdp_ctl_request(c, req, NULL, 0, CTL_TIMEOUT_MS);
    if (rc)
        return rc;
    char t[64];
    cfdp_txn_id got;
    if (cfdp_ctl_kv(c->buf, "txn", 1, t, sizeof t) || cfdp_ctl_parse_txn(t, &got))
        return TERN_EMALFORMED;
    if (id)
        *id = got;
    return 0;
}

TERN_API int cfdp_ctl_get(cfdp_ctl *c, uint64_t peer, const char *src_name,
                          const char *dst_name, int cls, cfdp_txn_id *id)
{
    if (!c || !src_name || !dst_name || has_nl(src_name) || has_nl(dst_name))
        return -EINVAL;
    char req[2 * 300 + 128];
    int n = snprintf(req, sizeof req,
                     "get\nentity=%" PRIu64 "\nsrc=%s\ndst_name=%s\nclass=%d\n", peer,
                     src_name, dst_name, cls);
    if (n < 0 || (size_t)n >= sizeof req)
        return -ENAMETOOLONG;
    return txn_answer(c, req, id);
}

TERN_API int cfdp_ctl_ls(cfdp_ctl *c, uint64_t peer, const char *dir, const char *listing,
                         cfdp_txn_id *id)
{
    if (!c || !dir || !listing || has_nl(dir) || has_nl(listing))
        return -EINVAL;
    char req[2 * 300 + 128];
    int n = snprintf(req, sizeof req, "ls\nentity=%" PRIu64 "\ndir=%s\nlisting=%s\n",
                     peer, dir, listing);
    if (n < 0 || (size_t)n >= sizeof req)
        return -ENAMETOOLONG;
    return txn_answer(c, req, id);
}

static const char *const k_states[] = {"active", "suspended", "cancelling", "closing",
                                       "finished"};

TERN_API const char *cfdp_ctl_state_name(unsigned state)
{
    return state < sizeof k_states / sizeof k_states[0] ? k_states[state] : "unknown";
}

TERN_API int cfdp_ctl_status(cfdp_ctl *c, cfdp_txn_info *out, size_t cap, size_t *n)
{
    if (!c || (!out && cap) || !n)
        return -EINVAL;
    int rc = cfdp_ctl_request(c, "status\n", NULL, 0, CTL_TIMEOUT_MS);
    if (rc)
        return rc;
    size_t k = 0;
    for (char *l = strstr(c->buf, "\ntxn="); l; l = strstr(l + 1, "\ntxn=")) {
        char line[512];
        size_t ll = strcspn(l + 1, "\n");
        if (ll >= sizeof line)
            return TERN_EMALFORMED;
        memcpy(line, l + 1, ll);
        line[ll] = 0;
        if (k < cap) {
            cfdp_txn_info *t = &out[k];
            memset(t, 0, sizeof *t);
            uint64_t role = 0, state = 0, cls = 0, cond = 0;
            char tx[64];
            if (cfdp_ctl_kv(line, "txn", 1, tx, sizeof tx) ||
                cfdp_ctl_parse_txn(tx, &t->id) || kv_u64(line, "peer", &t->peer) ||
                kv_u64(line, "role", &role) || kv_u64(line, "state", &state) ||
                kv_u64(line, "class", &cls) || kv_u64(line, "condition", &cond) ||
                kv_u64(line, "size", &t->file_size) ||
                kv_u64(line, "progress", &t->progress) ||
                kv_u64(line, "gaps", &t->gaps) ||
                kv_u64(line, "resent", &t->bytes_resent))
                return TERN_EMALFORMED;
            t->role = (uint8_t)role;
            t->state = (uint8_t)state;
            t->cls = (uint8_t)cls;
            t->condition = (uint8_t)cond;
        }
        k++;
    }
    *n = k;
    return 0;
}

static int txn_cmd(cfdp_ctl *c, const char *cmd, cfdp_txn_id id)
{
    if (!c)
        return -EINVAL;
    char req[128];
    snprintf(req, sizeof req, "%s\ntxn=%" PRIu64 ".%" PRIu64 "\n", cmd, id.src, id.seq);
    return cfdp_ctl_request(c, req, NULL, 0, CTL_TIMEOUT_MS);
}

TERN_API int cfdp_ctl_cancel(cfdp_ctl *c, cfdp_txn_id id)
{
    return txn_cmd(c, "cancel", id);
}

TERN_API int cfdp_ctl_suspend(cfdp_ctl *c, cfdp_txn_id id)
{
    return txn_cmd(c, "suspend", id);
}

TERN_API int cfdp_ctl_resume(cfdp_ctl *c, cfdp_txn_id id)
{
    return txn_cmd(c, "resume", id);
}

TERN_API int cfdp_ctl_watch(cfdp_ctl *c, cfdp_txn_id id)
{
    return txn_cmd(c, "watch", id);
}

TERN_API int cfdp_ctl_next_event(cfdp_ctl *c, cfdp_ctl_event *ev, int timeout_ms)
{
    if (!c || !ev)
        return -EINVAL;
    for (;;) {
        int n = recv_msg(c, timeout_ms);
        if (n < 0)
            return n;
        if (strncmp(c->buf, "event\n", 6))
            continue; /* a stray answer: not an event */
        memset(ev, 0, sizeof *ev);
        uint64_t type = 0, cond = 0, dlv = 0, fst = 0, state = 0, answer = 0, ok = 0;
        char tx[64];
        if (kv_u64(c->buf, "type", &type) ||
            cfdp_ctl_kv(c->buf, "txn", 1, tx, sizeof tx) ||
            cfdp_ctl_parse_txn(tx, &ev->txn))
            return TERN_EMALFORMED;
        kv_u64(c->buf, "condition", &cond);
        kv_u64(c->buf, "delivery", &dlv);
        kv_u64(c->buf, "file_status", &fst);
        kv_u64(c->buf, "state", &state);
        kv_u64(c->buf, "size", &ev->file_size);
        kv_u64(c->buf, "progress", &ev->progress);
        kv_u64(c->buf, "resent", &ev->resent);
        kv_u64(c->buf, "answer", &answer);
        kv_u64(c->buf, "ok", &ok);
        kv_u64(c->buf, "peer", &ev->peer);
        ev->answer = (unsigned)answer;
        ev->ok = (uint8_t)ok;
        ev->type = (unsigned)type;
        ev->condition = (uint8_t)cond;
        ev->delivery = (uint8_t)dlv;
        ev->file_status = (uint8_t)fst;
        ev->state = (uint8_t)state;
        return 0;
    }
}
