/* The client side of cfdpd's command socket (cfdp_ctl.h, docs/cfdpd.md). */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
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

/* ------------------------------------------------ put requests' text */

static const char *const k_fs_words[] = {
    "createFile",      "deleteFile",      "renameFile", "appendFile",   "replaceFile",
    "createDirectory", "removeDirectory", "denyFile",   "denyDirectory"};
#define FS_WORDS (sizeof k_fs_words / sizeof k_fs_words[0])

TERN_API const char *cfdp_ctl_fs_word(unsigned a)
{
    return a < FS_WORDS ? k_fs_words[a] : "unknown";
}

/* rename, append and replace name two files */
static int two_names(unsigned a)
{
    return a == CFDP_FS_RENAME_FILE || a == CFDP_FS_APPEND_FILE ||
           a == CFDP_FS_REPLACE_FILE;
}

static const char *const k_prios[] = {"standard", "bulk", "standard", "expedited"};

TERN_API const char *cfdp_ctl_priority_name(int p)
{
    return p >= 0 && p <= CFDP_CTL_PRIO_EXPEDITED ? k_prios[p] : "unknown";
}

TERN_API int cfdp_ctl_priority_parse(const char *t)
{
    if (!t)
        return -EINVAL;
    /* BP's numbers too, as ION's bpcp -S and bptrace take them */
    static const char *const num[] = {"0", "1", "2"};
    for (int i = 0; i < 3; i++) {
        if (!strcasecmp(t, k_prios[i + 1]))
            return i + 1;
        if (!strcmp(t, num[i]))
            return i + 1;
    }
    return -EINVAL;
}

/* A name a filestore request may carry on the command socket. */
static int fs_name_ok(const char *n)
{
    size_t l = strlen(n);
    return l >= 1 && l <= CFDP_FS_PATH_MAX && !strpbrk(n, "\t\n");
}

/* A caller that wants no reason gives no buffer: write into a dummy. */
static void why_buf(char **why, size_t *whylen, char *dummy, size_t dl)
{
    if (!*why || !*whylen) {
        *why = dummy;
        *whylen = dl;
    }
}

static int fsreq_ok(const cfdp_ctl_fsreq *f)
{
    if (f->action >= FS_WORDS || !fs_name_ok(f->first))
        return 0;
    return two_names(f->action) ? fs_name_ok(f->second) : !f->second[0];
}

TERN_API int cfdp_ctl_fs_parse(const char *spec, cfdp_ctl_fsreq *out, char *why,
                               size_t whylen)
{
    char dummy[1];
    why_buf(&why, &whylen, dummy, sizeof dummy);
    if (!spec || !out) {
        snprintf(why, whylen, "no filestore request");
        return -EINVAL;
    }
    memset(out, 0, sizeof *out);
    const char *colon = strchr(spec, ':');
    size_t al = colon ? (size_t)(colon - spec) : strlen(spec);
    unsigned a = 0;
    while (a < FS_WORDS &&
           (strlen(k_fs_words[a]) != al || strncasecmp(spec, k_fs_words[a], al)))
        a++;
    if (a == FS_WORDS) {
        snprintf(why, whylen,
                 "'%.*s' is not a filestore action (createFile, deleteFile, renameFile, "
                 "appendFile, replaceFile, createDirectory, removeDirectory, denyFile, "
                 "denyDirectory)",
                 (int)(al > 40 ? 40 : al), spec);
        return -EINVAL;
    }
    out->action = (uint8_t)a;
    const char *first = colon ? colon + 1 : "";
    const char *second = "";
    size_t fl = strlen(first);
    if (two_names(a)) {
        const char *c2 = strchr(first, ':');
        if (!c2) {
            snprintf(why, whylen, "%s names two files: %s:NAME:NAME2", k_fs_words[a],
                     k_fs_words[a]);
            return -EINVAL;
        }
        fl = (size_t)(c2 - first);
        second = c2 + 1;
    }
    if (fl < 1 || fl > CFDP_FS_PATH_MAX || strlen(second) > CFDP_FS_PATH_MAX ||
        (two_names(a) && !*second)) {
        snprintf(why, whylen, "%s: a name is 1 to %d bytes", k_fs_words[a],
                 CFDP_FS_PATH_MAX);
        return -EINVAL;
    }
    memcpy(out->first, first, fl);
    out->first[fl] = 0;
    snprintf(out->second, sizeof out->second, "%s", second);
    if (!fsreq_ok(out)) {
        snprintf(why, whylen, "%s: a name may not hold a tab or a newline",
                 k_fs_words[a]);
        return -EINVAL;
    }
    return 0;
}

static int has_nl(const char *s)
{
    return s && strchr(s, '\n') != NULL;
}

static int put_check(const cfdp_ctl_put_req *r)
{
    const char *src = r->src_name ? r->src_name : "";
    const char *dn = r->dst_name ? r->dst_name : "";
    if (has_nl(src) || has_nl(dn) || r->nfs > CFDP_CTL_FS_MAX || (r->nfs && !r->fs) ||
        r->priority < 0 || r->priority > CFDP_CTL_PRIO_EXPEDITED)
        return -EINVAL;
    /* both names (a file) or neither (filestore requests only) */
    if (!*src != !*dn || (!*src && !r->nfs))
        return -EINVAL;
    for (size_t i = 0; i < r->nfs; i++)
        if (!fsreq_ok(&r->fs[i]))
            return -EINVAL;
    return 0;
}

TERN_API int cfdp_ctl_put_encode(const cfdp_ctl_put_req *r, char *req, size_t cap)
{
    if (!r || !req || !cap)
        return -EINVAL;
    int rc = put_check(r);
    if (rc)
        return rc;
    int n =
        snprintf(req, cap,
                 "put\nsrc=%s\ndst=%" PRIu64 "\ndst_name=%s\nclass=%d\nclosure=%d\n"
                 "checksum=%d\nsegment=%u\nlifetime=%u\n",
                 r->src_name ? r->src_name : "", r->dst, r->dst_name ? r->dst_name : "",
                 r->cls, r->closure, r->checksum_type, r->segment, r->lifetime_s);
    if (n < 0 || (size_t)n >= cap)
        return -ENAMETOOLONG;
    size_t len = (size_t)n;
    if (r->priority != CFDP_CTL_PRIO_DEFAULT) {
        n = snprintf(req + len, cap - len, "priority=%s\n",
                     cfdp_ctl_priority_name(r->priority));
        if (n < 0 || (size_t)n >= cap - len)
            return -ENAMETOOLONG;
        len += (size_t)n;
    }
    for (size_t i = 0; i < r->nfs; i++) {
        const cfdp_ctl_fsreq *f = &r->fs[i];
        n = snprintf(req + len, cap - len, "fs=%u %s%s%s\n", f->action, f->first,
                     f->second[0] ? "\t" : "", f->second);
        if (n < 0 || (size_t)n >= cap - len)
            return -ENAMETOOLONG;
        len += (size_t)n;
    }
    return (int)len;
}

/* A number in [lo, hi] in v[0..n). */
static int num_in(const char *v, size_t n, long long lo, long long hi, long long *out)
{
    char b[24];
    if (n == 0 || n >= sizeof b)
        return -EINVAL;
    memcpy(b, v, n);
    b[n] = 0;
    if (b[0] != '-' && (b[0] < '0' || b[0] > '9'))
        return -EINVAL; /* strtoll would take spaces and '+' */
    char *end;
    errno = 0;
    long long x = strtoll(b, &end, 10);
    if (errno || *end || x < lo || x > hi)
        return -EINVAL;
    *out = x;
    return 0;
}

TERN_API int cfdp_ctl_put_decode(const char *text, cfdp_ctl_put_msg *m, char *why,
                                 size_t whylen)
{
    char dummy[1];
    why_buf(&why, &whylen, dummy, sizeof dummy);
    if (!text || !m)
        return -EINVAL;
    memset(m, 0, sizeof *m);
    cfdp_ctl_put_req *r = &m->req;
    r->closure = -1;
    r->checksum_type = -1;
    r->src_name = m->src;
    r->dst_name = m->dst_name;
    r->fs = m->fs;
    if (strncmp(text, "put\n", 4)) {
        snprintf(why, whylen, "not a put request");
        return -EINVAL;
    }
    static const struct {
        const char *key;
        long long lo, hi;
    } nums[] = {{"dst", 1, INT64_MAX}, {"class", 0, 2},
                {"closure", -1, 1},    {"checksum", -1, 15},
                {"segment", 0, 65535}, {"lifetime", 0, UINT32_MAX}};
    unsigned seen = 0; /* bit per scalar key: each at most once */
    long long v[6] = {0, 0, -1, -1, 0, 0};
    for (const char *l = text + 4; *l;) {
        size_t ll = strcspn(l, "\n");
        const char *eq = memchr(l, '=', ll);
        const char *next = l + ll + (l[ll] == '\n');
        if (!eq) {
            if (ll) {
                snprintf(why, whylen, "put: '%.*s' is not key=value",
                         (int)(ll > 40 ? 40 : ll), l);
                return -EINVAL;
            }
            l = next;
            continue;
        }
        size_t kl = (size_t)(eq - l), vl = ll - kl - 1;
        const char *val = eq + 1;
        int k = -1;
        for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++)
            if (strlen(nums[i].key) == kl && !memcmp(l, nums[i].key, kl))
                k = (int)i;
#define KEY(s) (kl == sizeof s - 1 && !memcmp(l, s, kl))
        if (k >= 0) {
            if (seen & (1u << k) || num_in(val, vl, nums[k].lo, nums[k].hi, &v[k])) {
                snprintf(why, whylen,
                         "put: %s must be a number from %lld to %lld, given once",
                         nums[k].key, nums[k].lo, nums[k].hi);
                return -EINVAL;
            }
            seen |= 1u << k;
        } else if (KEY("src") || KEY("dst_name")) {
            int is_src = KEY("src");
            unsigned bit = is_src ? 1u << 6 : 1u << 7;
            char *dst = is_src ? m->src : m->dst_name;
            if ((seen & bit) || vl > CFDP_FS_PATH_MAX) {
                snprintf(why, whylen, "put: %s is at most %d bytes, given once",
                         is_src ? "src" : "dst_name", CFDP_FS_PATH_MAX);
                return -EINVAL;
            }
            memcpy(dst, val, vl);
            dst[vl] = 0;
            seen |= bit;
        } else if (KEY("priority")) {
            char b[16];
            int p = -EINVAL;
            if (vl < sizeof b && !(seen & (1u << 8))) {
                memcpy(b, val, vl);
                b[vl] = 0;
                p = cfdp_ctl_priority_parse(b);
            }
            if (p < 0) {
                snprintf(why, whylen,
                         "put: priority is bulk, standard or expedited, given once");
                return -EINVAL;
            }
            r->priority = p;
            seen |= 1u << 8;
        } else if (KEY("fs")) {
            if (r->nfs == CFDP_CTL_FS_MAX) {
                snprintf(why, whylen, "put: at most %d filestore requests",
                         CFDP_CTL_FS_MAX);
                return -EINVAL;
            }
            cfdp_ctl_fsreq *f = &m->fs[r->nfs];
            /* "<action> <first>[\t<second>]" */
            const char *tab = memchr(val, '\t', vl);
            size_t fl = (tab ? (size_t)(tab - val) : vl), sl = tab ? vl - fl - 1 : 0;
            if (vl < 3 || val[0] < '0' || val[0] > '8' || val[1] != ' ' || fl - 2 < 1 ||
                fl - 2 > CFDP_FS_PATH_MAX || sl > CFDP_FS_PATH_MAX) {
                snprintf(why, whylen,
                         "put: filestore request %zu is not fs=<action 0-8> "
                         "<name>[<tab><name>] (names of 1 to %d bytes)",
                         r->nfs + 1, CFDP_FS_PATH_MAX);
                return -EINVAL;
            }
            f->action = (uint8_t)(val[0] - '0');
            memcpy(f->first, val + 2, fl - 2);
            f->first[fl - 2] = 0;
            if (tab) {
                memcpy(f->second, tab + 1, sl);
                f->second[sl] = 0;
            }
            if (!fsreq_ok(f)) {
                snprintf(why, whylen,
                         "put: filestore request %zu (%s) needs %s name%s, no tab inside",
                         r->nfs + 1, cfdp_ctl_fs_word(f->action),
                         two_names(f->action) ? "two" : "one",
                         two_names(f->action) ? "s" : "");
                return -EINVAL;
            }
            r->nfs++;
        } /* other keys: a newer client's, ignored */
#undef KEY
        l = next;
    }
    if (!(seen & 1u)) {
        snprintf(why, whylen, "put needs dst= (the destination entity, from 1)");
        return -EINVAL;
    }
    if (!m->src[0] != !m->dst_name[0] || (!m->src[0] && !r->nfs)) {
        snprintf(why, whylen,
                 "put needs src= and dst_name= (1 to %d bytes each), or neither and "
                 "filestore requests (fs=)",
                 CFDP_FS_PATH_MAX);
        return -EINVAL;
    }
    r->dst = (uint64_t)v[0];
    r->cls = (int)v[1];
    r->closure = (int)v[2];
    r->checksum_type = (int)v[3];
    r->segment = (uint32_t)v[4];
    r->lifetime_s = (uint32_t)v[5];
    return 0;
}

TERN_API int cfdp_ctl_put(cfdp_ctl *c, const cfdp_ctl_put_req *r, cfdp_txn_id *id)
{
    if (!c || !r)
        return -EINVAL;
    char *req = malloc(CFDP_CTL_MSG_MAX);
    if (!req)
        return -ENOMEM;
    int rc = cfdp_ctl_put_encode(r, req, CFDP_CTL_MSG_MAX);
    if (rc >= 0)
        rc = cfdp_ctl_request(c, req, NULL, 0, CTL_TIMEOUT_MS);
    free(req);
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

TERN_API int cfdp_ctl_get_to(cfdp_ctl *c, uint64_t peer, uint64_t to,
                             const char *src_name, const char *dst_name, int cls,
                             int priority, cfdp_txn_id *id)
{
    if (!c || !src_name || !dst_name || has_nl(src_name) || has_nl(dst_name) ||
        priority < 0 || priority > CFDP_CTL_PRIO_EXPEDITED)
        return -EINVAL;
    char req[2 * 300 + 200], tos[40] = "";
    if (to)
        snprintf(tos, sizeof tos, "to=%" PRIu64 "\n", to);
    int n =
        snprintf(req, sizeof req,
                 "get\nentity=%" PRIu64 "\nsrc=%s\ndst_name=%s\nclass=%d\n%s%s%s%s", peer,
                 src_name, dst_name, cls, tos, priority ? "priority=" : "",
                 priority ? cfdp_ctl_priority_name(priority) : "", priority ? "\n" : "");
    if (n < 0 || (size_t)n >= sizeof req)
        return -ENAMETOOLONG;
    return txn_answer(c, req, id);
}

TERN_API int cfdp_ctl_get_prio(cfdp_ctl *c, uint64_t peer, const char *src_name,
                               const char *dst_name, int cls, int priority,
                               cfdp_txn_id *id)
{
    return cfdp_ctl_get_to(c, peer, 0, src_name, dst_name, cls, priority, id);
}

TERN_API int cfdp_ctl_get(cfdp_ctl *c, uint64_t peer, const char *src_name,
                          const char *dst_name, int cls, cfdp_txn_id *id)
{
    return cfdp_ctl_get_prio(c, peer, src_name, dst_name, cls, CFDP_CTL_PRIO_DEFAULT, id);
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

/* The status answer's transaction lines into info[0..cap) (and prio, if
 * not NULL); *n gets how many there are. */
static int status_parse(cfdp_ctl *c, cfdp_txn_info *info, size_t istride, int *prio,
                        size_t pstride, size_t cap, size_t *n)
{
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
            cfdp_txn_info *t = (cfdp_txn_info *)((char *)info + k * istride);
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
            if (prio) {
                /* an older cfdpd says none: it sends everything standard */
                char pb[16];
                int p = cfdp_ctl_kv(line, "priority", 1, pb, sizeof pb)
                            ? CFDP_CTL_PRIO_STANDARD
                            : cfdp_ctl_priority_parse(pb);
                if (p < 0)
                    return TERN_EMALFORMED;
                *(int *)((char *)prio + k * pstride) = p;
            }
        }
        k++;
    }
    *n = k;
    return 0;
}

TERN_API int cfdp_ctl_status(cfdp_ctl *c, cfdp_txn_info *out, size_t cap, size_t *n)
{
    if (!c || (!out && cap) || !n)
        return -EINVAL;
    return status_parse(c, out, sizeof *out, NULL, 0, cap, n);
}

TERN_API int cfdp_ctl_txns(cfdp_ctl *c, cfdp_ctl_txn *out, size_t cap, size_t *n)
{
    if (!c || (!out && cap) || !n)
        return -EINVAL;
    return status_parse(c, out ? &out->info : NULL, sizeof *out,
                        out ? &out->priority : NULL, sizeof *out, cap, n);
}

TERN_API size_t cfdp_ctl_struct_size(const char *name)
{
    static const struct {
        const char *name;
        size_t size;
    } t[] = {{"cfdp_ctl_info", sizeof(cfdp_ctl_info)},
             {"cfdp_ctl_put_req", sizeof(cfdp_ctl_put_req)},
             {"cfdp_ctl_fsreq", sizeof(cfdp_ctl_fsreq)},
             {"cfdp_ctl_event", sizeof(cfdp_ctl_event)},
             {"cfdp_ctl_txn", sizeof(cfdp_ctl_txn)}};
    for (size_t i = 0; name && i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(t[i].name, name))
            return t[i].size;
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
        /* filestore responses: "fs=<action>,<status> ..." */
        char fs[CFDP_CTL_FS_MAX * 8];
        if (!cfdp_ctl_kv(c->buf, "fs", 0, fs, sizeof fs)) {
            for (char *p = fs; *p && ev->nfs < CFDP_CTL_FS_MAX;) {
                unsigned a, st;
                int used = 0;
                if (sscanf(p, "%3u,%3u%n", &a, &st, &used) != 2 || a > 255 || st > 255)
                    return TERN_EMALFORMED;
                ev->fs_action[ev->nfs] = (uint8_t)a;
                ev->fs_status[ev->nfs] = (uint8_t)st;
                ev->nfs++;
                p += used;
                while (*p == ' ')
                    p++;
            }
        }
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
