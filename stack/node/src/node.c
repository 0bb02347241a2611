/* A node: components wired together from an ION host.rc (see tern_node.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ftw.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bp_hostrc.h"
#include "bp_ltp.h"
#include "ltp_udp.h"
#include "bp_udp.h"
#include "node_int.h"
#include "tern/clock.h"
#include "tern/ports.h"

#define FAIL(code, ...)                                                                  \
    do {                                                                                 \
        if (err && errlen)                                                               \
            snprintf(err, errlen, __VA_ARGS__);                                          \
        rc = (code);                                                                     \
        goto fail;                                                                       \
    } while (0)

TERN_API int tern_node_dir_canon(const char *dir, char *out, size_t cap)
{
    char buf[PATH_MAX];
    if (!realpath(dir, buf))
        return -errno;
    if (strlen(buf) >= cap)
        return -ENAMETOOLONG;
    memcpy(out, buf, strlen(buf) + 1);
    return 0;
}

/* Reads the ionconfig file named by the host.rc (node__ionconfig_parse does
 * the parsing); a missing file is a warning, not an error. */
static int read_ionconfig(struct tern_node *n, const char *path, const char *where,
                          sdr_profile *p, char *err, size_t errlen)
{
    char *text;
    size_t len;
    int rc = node__read_file(path, &text, &len);
    if (rc) {
        node__note(&n->notes, TERN_LOG_WARN,
                   "%s: ionconfig file %s: %s; using Tern's store defaults (durable, "
                   "%llu MiB heap)",
                   where, path, tern_strerror(rc),
                   (unsigned long long)(NODE_DEFAULT_HEAP >> 20));
        return 0;
    }
    rc = node__ionconfig_parse(path, text, len, n->dir, p, &n->notes, err, errlen);
    free(text);
    return rc;
}

/* The convergence layers a duct may name (ducts.c, ltp_cla.c). */
static int served(const char *proto)
{
    static const char *const clas[] = {"ltp", "udp", "udpm", "tcp", "stcp", "mtcp", NULL};
    for (const char *const *p = clas; *p; p++)
        if (strcmp(proto, *p) == 0)
            return 1;
    return 0;
}

/* What the configuration asks for that the node could not set up, found
 * before anything is created in the directory (the rest, a port in use or a
 * full disk, can only show while starting). */
static int check_config(struct tern_node *n, char *err, size_t errlen)
{
    const bp_hostrc *h = &n->cfg;
    int rc = 0;
    if (h->has_ltp && h->ltp.nseats > 1) {
        const ltp_admin_seat *a = &h->ltp.seats[0], *b = &h->ltp.seats[1];
        FAIL(TERN_ESYNTAX,
             "%s:%u: a second LTP seat '%s' (the first, '%s', is at %s:%u): Tern's "
             "link service listens on one address; expected one 'a seat' (\"a seat "
             "'udplsi @:<port>'\" listens on every local address)",
             b->file, b->line, b->lsi, a->lsi, a->file, a->line);
    }
    if (!h->has_bp)
        return 0;
    const bp_admin *a = &h->bp;
    for (size_t i = 0; i < a->ninducts; i++) {
        const bp_admin_duct *d = &a->inducts[i];
        if (!served(d->protocol))
            FAIL(TERN_ENOTFOUND,
                 "%s:%u: %s induct '%s': Tern has no %s convergence layer (ltp, udp, "
                 "udpm, tcp, stcp and mtcp exist)",
                 d->at.file, d->at.line, d->protocol, d->name, d->protocol);
        if (strcmp(d->protocol, "ltp") == 0 && !h->has_ltp)
            FAIL(TERN_ESYNTAX,
                 "%s:%u: an ltp induct needs LTP; expected an ltpadmin section",
                 d->at.file, d->at.line);
        char why[400];
        if (strcmp(d->protocol, "udpm") == 0 &&
            bp_udpm_check(false, d->name, d->cmd, why, sizeof why))
            FAIL(TERN_ESYNTAX, "%s:%u: %s", d->at.file, d->at.line, why);
    }
    for (size_t i = 0; i < a->noutducts; i++) {
        const bp_admin_duct *d = &a->outducts[i];
        if (!served(d->protocol))
            FAIL(TERN_ENOTFOUND,
                 "%s:%u: outduct %s/%s: no convergence layer serves protocol '%s' in "
                 "this node; expected one of ltp, tcp, stcp, mtcp, udp, udpm",
                 d->at.file, d->at.line, d->protocol, d->name, d->protocol);
        if (strcmp(d->protocol, "ltp") == 0 && !h->has_ltp)
            FAIL(TERN_ESYNTAX,
                 "%s:%u: outduct ltp/%s needs LTP; expected an ltpadmin section with a "
                 "span to engine %s",
                 d->at.file, d->at.line, d->name, d->name);
        char why[400];
        if (strcmp(d->protocol, "udpm") == 0 &&
            bp_udpm_check(true, d->name, d->cmd, why, sizeof why))
            FAIL(TERN_ESYNTAX, "%s:%u: %s", d->at.file, d->at.line, why);
    }
    for (size_t i = 0; i < a->nendpoints; i++) {
        const bp_admin_endpoint *e = &a->endpoints[i];
        if (e->eid.scheme == BP_SCHEME_IPN && e->eid.node != n->number)
            FAIL(-EINVAL,
                 "%s:%u: endpoint ipn:%" PRIu64 ".%" PRIu64
                 " does not belong to this node; expected an endpoint of ipn:%" PRIu64
                 ".*",
                 e->at.file, e->at.line, e->eid.node, e->eid.service, n->number);
    }
    for (size_t i = 0; i < a->nplans; i++) {
        const bp_admin_plan *p = &a->plans[i];
        int found = !p->protocol[0];
        for (size_t k = 0; k < a->noutducts && !found; k++)
            found = strcmp(a->outducts[k].protocol, p->protocol) == 0 &&
                    strcmp(a->outducts[k].name, p->duct) == 0;
        if (!found)
            FAIL(TERN_ENOTFOUND,
                 "%s:%u: a plan uses outduct %s/%s, which is not configured; expected "
                 "'a outduct %s %s ...' in bpadmin",
                 p->duct_at.file, p->duct_at.line, p->protocol, p->duct, p->protocol,
                 p->duct);
    }
fail:
    return rc;
}

/* LTP notices: BP's go to its convergence layer, others are logged. */
static int node_notice(void *ctx, const ltp_notice *no)
{
    struct tern_node *n = ctx;
    if (no->client == BP_LTP_CLIENT && n->ltpcla)
        return bp_ltp_cla_notice(n->ltpcla, no);
    if (no->kind == LTP_RED_PART)
        TERN_INFO(n->lg, "node",
                  "LTP block for client service %" PRIu64 " dropped: no such client",
                  no->client);
    return 0;
}

static void node_deliverable(void *ctx, const bp_eid *ep)
{
    struct tern_node *n = ctx;
    node__deliverable(n, ep);
}

static void node_dropped(void *ctx, const bp_eid *src, uint64_t ctime_ms, uint64_t seq,
                         int code, const char *why)
{
    struct tern_node *n = ctx;
    node__dropped(n, src, ctime_ms, seq, code, why);
}

static uint8_t *node_ltp_send_buf(void *ctx, uint64_t peer, size_t len);
static int node_ltp_send_commit(void *ctx, uint64_t peer, uint8_t *seg, size_t len);

static int setup_ltp(struct tern_node *n, bp_hostrc *h, char *err, size_t errlen)
{
    int rc;
    uint64_t self = n->number;
    const ltp_admin_seat *seat = h->ltp.nseats ? &h->ltp.seats[0] : NULL;
    const char *lsi = seat ? seat->lsi : "udplsi 127.0.0.1:1113";
    /* One socket sends and receives for every span (ltp_udp.h); "udplsi @"
     * receives on every local address where ION would run one udplsi each. */
    if (!seat)
        TERN_WARN(n->lg, "node",
                  "ltpadmin declares no seat ('a seat' or \"s '<LSI command>'\"): LTP "
                  "listens on ION's default 127.0.0.1:1113");
    rc = ltp_udp_new(n->loop, lsi, NULL, n->lg, &n->lsu);
    if (rc && seat)
        FAIL(rc, "%s:%u: LTP link service '%s': %s", seat->file, seat->line, lsi,
             tern_strerror(rc));
    if (rc)
        FAIL(rc,
             "LTP link service '%s' (ION's default: ltpadmin declares no seat): %s; "
             "expected \"a seat 'udplsi <host>:<port>'\" in ltpadmin",
             lsi, tern_strerror(rc));
    ltp_engine_cfg ec = h->ltp.engine;
    ec.engine_id = self;
    /* LTP keeps no copy of its export blocks in the store: every block
     * carries bundles the agent holds there already, and after a restart the
     * agent sends them again in new sessions (receivers drop the duplicates
     * by bundle ID). A second copy cost a copy per bundle and, in a memory
     * store, the heap room bundles waiting for the window needed. Session
     * numbers start from the clock, so they do not repeat after a restart. */
    ec.store = NULL;
    /* notices come to the node, segments go to the link service */
    ltp_host lh = {.ctx = n,
                   .send = node__ltp_send,
                   .send_buf = node_ltp_send_buf,
                   .send_commit = node_ltp_send_commit,
                   .notice = node_notice,
                   .tx_notify = 1};
    rc = ltp_engine_new(n->loop, &ec, &lh, n->lg, &n->eng);
    if (rc)
        FAIL(rc, "LTP engine: %s", tern_strerror(rc));
    uint64_t now = tern_clock_dtn_ms(tern_loop_clock(n->loop));
    for (size_t i = 0; i < h->ltp.nspans; i++) {
        const ltp_admin_span *s = &h->ltp.spans[i];
        if (s->cfg.peer == self) {
            TERN_INFO(n->lg, "node",
                      "span to engine %" PRIu64
                      " (this node) not needed: bundles for this "
                      "node are delivered locally",
                      self);
            continue;
        }
        ltp_span_cfg sc = s->cfg;
        uint32_t owlt_s;
        if (bp_plan_owlt(h->plan, self, sc.peer, now, &owlt_s) == 0)
            sc.owlt_ms = owlt_s * 1000u;
        if ((rc = ltp_span_add(n->eng, &sc)))
            FAIL(rc, "%s: LTP span to engine %" PRIu64 ": %s", s->at, sc.peer,
                 tern_strerror(rc));
        if ((rc = ltp_udp_add_peer(n->lsu, sc.peer, s->lso, 0)))
            FAIL(rc, "%s: LTP span to engine %" PRIu64 ": link service '%s': %s%s", s->at,
                 sc.peer, s->lso,
                 rc == TERN_ENOTFOUND ? "no such host" : tern_strerror(rc),
                 rc == -EAFNOSUPPORT ? " (not the address family of the seat)" : "");
    }
    if ((rc = ltp_udp_attach(n->lsu, n->eng)))
        FAIL(rc, "LTP link service: %s", tern_strerror(rc));
    tern_ports_publish(n->dir, "ltp", "udp", ltp_udp_port(n->lsu));
    TERN_INFO(n->lg, "node",
              "LTP engine %" PRIu64 ": %zu span(s), listening on UDP port %u", self,
              h->ltp.nspans, ltp_udp_port(n->lsu));
    return 0;
fail:
    return rc;
}

int node__ltp_send(void *ctx, uint64_t peer, const uint8_t *seg, size_t len)
{
    struct tern_node *n = ctx;
    return ltp_udp_send(n->lsu, peer, seg, len);
}

static uint8_t *node_ltp_send_buf(void *ctx, uint64_t peer, size_t len)
{
    struct tern_node *n = ctx;
    return n->lsu ? ltp_udp_send_buf(n->lsu, peer, len) : NULL;
}

static int node_ltp_send_commit(void *ctx, uint64_t peer, uint8_t *seg, size_t len)
{
    struct tern_node *n = ctx;
    return ltp_udp_send_commit(n->lsu, peer, seg, len);
}

/* The names ternd publishes in the ports file (node.c, ducts.c). */
static const char *const port_names[][2] = {{"ltp", "udp"},     {"bp-udp", "udp"},
                                            {"bp-udpm", "udp"}, {"bp-tcp", "tcp"},
                                            {"bp-stcp", "tcp"}, {"bp-mtcp", "tcp"}};

static int exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* The pid in dir's ternd.pid: a start that won the lock writes it at once,
 * so one that lost waits a moment for it rather than say '?'. */
static void read_pid(const char *dir, char *pid, size_t cap)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/ternd.pid", dir);
    for (int i = 0; i < 100; i++) {
        FILE *pf = fopen(path, "re");
        if (pf) {
            int ok = fgets(pid, (int)cap, pf) != NULL;
            fclose(pf);
            pid[strcspn(pid, "\n")] = '\0';
            if (ok && pid[0])
                return;
        }
        usleep(20000);
    }
    snprintf(pid, cap, "unknown: no ternd.pid");
}

/* Takes dir's lock (made if missing). A failed start removes the lock file it
 * made; a start that opened that file just before is left holding a lock on
 * a removed file, so the lock counts only if the path is still that file. */
static int take_lock(struct tern_node *n, const char *shown, char *err, size_t errlen)
{
    char path[PATH_MAX + 32];
    int rc = 0;
    snprintf(path, sizeof path, "%s/ternd.lock", n->dir);
    for (int tries = 0; tries < 100; tries++) {
        int made = 0, fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT) {
            fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
            made = fd >= 0;
            if (fd < 0 && errno == EEXIST)
                continue;
        }
        if (fd < 0)
            FAIL(-errno, "%s: %s", path, strerror(errno));
        if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
            int e = errno;
            close(fd);
            if (e != EWOULDBLOCK)
                FAIL(-e, "%s: %s", path, strerror(e));
            char pid[64];
            read_pid(n->dir, pid, sizeof pid);
            FAIL(TERN_EEXIST,
                 "node %s is already running (ternd pid %s); 'tern stop %s' first",
                 n->dir, pid, shown);
        }
        struct stat a, b;
        if (fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
            a.st_ino == b.st_ino) {
            n->lock_fd = fd;
            n->locked = 1;
            n->made_lock = made;
            return 0;
        }
        close(fd); /* removed under us: try the new one */
    }
    FAIL(-EAGAIN, "%s: it keeps being replaced", path);
fail:
    return rc;
}

/* The pid file, replaced whole so a reader never sees it half written. */
static void write_pid(struct tern_node *n)
{
    char path[PATH_MAX + 32], tmp[PATH_MAX + 48];
    snprintf(path, sizeof path, "%s/ternd.pid", n->dir);
    snprintf(tmp, sizeof tmp, "%s/.ternd.pid.%d", n->dir, (int)getpid());
    FILE *pf = fopen(tmp, "we");
    if (!pf)
        return;
    int ok = fprintf(pf, "%d\n", (int)getpid()) > 0;
    if (fclose(pf) != 0 || !ok || rename(tmp, path) != 0)
        unlink(tmp);
}

static void teardown(struct tern_node *n);

static int rm_entry(const char *path, const struct stat *st, int type, struct FTW *f)
{
    (void)st;
    (void)f;
    return (type == FTW_DP ? rmdir(path) : unlink(path)) < 0 && errno != ENOENT ? -1 : 0;
}

TERN_API int tern_node_open(const tern_node_cfg *cfg, tern_node **out, char *err,
                            size_t errlen)
{
    int rc;
    char path[PATH_MAX + 64];
    if (err && errlen)
        err[0] = '\0';
    struct tern_node *n = calloc(1, sizeof *n);
    if (!n)
        return -ENOMEM;
    n->lock_fd = -1;
    /* Nothing is made in the directory until the whole configuration has
     * been read and checked: a start that fails on it leaves no trace. */
    struct stat st;
    if (stat(cfg->dir, &st) < 0)
        FAIL(-errno,
             "node directory %s: %s; expected a directory holding the node's host.rc "
             "(or ION's admin files node.ionrc, node.ltprc, ...)",
             cfg->dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        FAIL(-ENOTDIR, "node directory %s: not a directory", cfg->dir);
    if ((rc = tern_node_dir_canon(cfg->dir, n->dir, sizeof n->dir)))
        FAIL(rc, "node directory %s: %s", cfg->dir, tern_strerror(rc));
    if ((rc = tern_loop_new(tern_clock_real(), &n->loop)))
        FAIL(rc, "event loop: %s", tern_strerror(rc));
    uint64_t now = tern_clock_dtn_ms(tern_loop_clock(n->loop));
    node_config nc;
    if ((rc = node__config_read(n->dir, cfg->rc, now, &n->cfg, &nc, err, errlen)))
        goto fail;
    n->number = bp_plan_node(n->cfg.plan);
    sdr_profile prof = {.name = "tern",
                        .heap_size = NODE_DEFAULT_HEAP,
                        .mode = SDR_DURABLE,
                        .commit = SDR_COMMIT_GROUP};
    const char *where, *ionconfig = bp_plan_ionconfig(n->cfg.plan, &where);
    if (ionconfig) {
        char icpath[2 * PATH_MAX + 64];
        if (ionconfig[0] == '/') {
            snprintf(icpath, sizeof icpath, "%s", ionconfig);
        } else { /* relative to the configuration, as ionstart users write it */
            snprintf(icpath, sizeof icpath, "%s/%s", nc.base, ionconfig);
        }
        if ((rc = read_ionconfig(n, icpath, where, &prof, err, errlen)))
            goto fail;
    }
    if ((rc = check_config(n, err, errlen)))
        goto fail;

    /* One ternd per directory: the lock goes with the process, even kill -9. */
    if ((rc = take_lock(n, cfg->dir, err, errlen)))
        goto fail;
    write_pid(n);
    /* a ternd that died left its ports; none of them is bound now */
    for (size_t i = 0; i < sizeof port_names / sizeof port_names[0]; i++)
        tern_ports_withdraw(n->dir, port_names[i][0], port_names[i][1]);

    snprintf(path, sizeof path, "%s/ternd.log", n->dir);
    n->made_log = !exists(path);
    char lname[32];
    snprintf(lname, sizeof lname, "node%" PRIu64, n->number);
    if ((rc = tern_log_open(&n->lg, lname, path,
                            cfg->log_level ? cfg->log_level : TERN_LOG_INFO,
                            cfg->log_flags)))
        FAIL(rc, "log %s: %s", path, tern_strerror(rc));
    TERN_INFO(n->lg, "node", "starting node %" PRIu64 " in %s from %s (pid %d)",
              n->number, n->dir, nc.used, (int)getpid());
    if (nc.note[0])
        TERN_WARN(n->lg, "config", "%s", nc.note);
    for (size_t i = 0; i < n->cfg.nwarnings; i++)
        TERN_WARN(n->lg, "config", "%s", n->cfg.warnings[i]);
    for (size_t i = 0; i < n->notes.n; i++)
        tern_log_write(n->lg, n->notes.v[i].level, "config", "%s", n->notes.v[i].text);

    /* the store */
    snprintf(n->store_dir, sizeof n->store_dir, "%s/store", n->dir);
    if (prof.mode == SDR_DURABLE) {
        n->made_store = !exists(n->store_dir);
        if (mkdir(n->store_dir, 0755) < 0 && errno != EEXIST)
            FAIL(-errno, "%s: %s", n->store_dir, strerror(errno));
    }
    prof.dir = n->store_dir;
    char why[512] = "";
    if ((rc = sdr_open(&prof, &n->store, why, sizeof why)))
        FAIL(rc, "store: %s", why[0] ? why : tern_strerror(rc));
    TERN_INFO(
        n->lg, "node", "store: %s, %llu MiB heap%s", prof.mode ? "durable" : "in memory",
        (unsigned long long)(prof.heap_size >> 20), prof.mode ? " (group commit)" : "");
    /* A store keeps the node's bundles, sent and received under its number:
     * another number would send them with a source that is not this node. */
    bp_plan *stored = NULL;
    if (bp_plan_load(n->store, &stored) == 0) {
        uint64_t was = bp_plan_node(stored);
        bp_plan_free(stored);
        if (was && was != n->number)
            FAIL(TERN_EEXIST,
                 "%s holds the store of node %" PRIu64
                 ", and this configuration makes it node %" PRIu64
                 "; expected '1 %" PRIu64 "' in ionadmin, or the store moved away (its "
                 "bundles are node %" PRIu64 "'s) to start node %" PRIu64 " afresh",
                 n->store_dir, was, n->number, was, was, n->number);
    }
    if ((rc = bp_plan_save(n->cfg.plan, n->store)))
        TERN_WARN(n->lg, "node", "contact plan not saved in the store: %s",
                  tern_strerror(rc));

    if (n->cfg.has_ltp && (rc = setup_ltp(n, &n->cfg, err, errlen)))
        goto fail;
    node__contacts_apply(n);

    if (n->cfg.has_bp) {
        /* In a durable store, bundles above 4 KiB go to blob files, so the
         * heap (and its checkpoint images) holds records, not payloads. */
        bp_agent_cfg ac = {.node = n->number,
                           .store = n->store,
                           .small_max = prof.mode == SDR_DURABLE ? 4096 : 0};
        bp_agent_host ah = {
            .ctx = n, .deliverable = node_deliverable, .dropped = node_dropped};
        if ((rc = bp_agent_new(n->loop, &ac, &ah, n->lg, &n->agent)))
            FAIL(rc, "bundle agent: %s", tern_strerror(rc));
        if (n->eng && (rc = bp_ltp_cla_new(n->agent, n->eng, 0, &n->ltpcla)))
            FAIL(rc, "LTP convergence layer: %s", tern_strerror(rc));
        if ((rc = node__clas(n, &n->cfg.bp, err, errlen)))
            goto fail;
        char msg[1024] = "";
        if ((rc = bp_admin_configure(&n->cfg.bp, n->agent, msg, sizeof msg)) < 0)
            FAIL(rc, "%s", msg[0] ? msg : tern_strerror(rc));
        if ((rc = node__inducts(n, &n->cfg.bp, err, errlen)))
            goto fail;
        /* Contact Graph Routing decides first (static plans and exits when
         * the contact graph has no route), and the contacts gate and pace
         * the outducts toward the neighbours they name. */
        if ((rc = bp_cgr_new(n->cfg.plan, n->number, NULL, n->lg, &n->cgr)) ||
            (rc = bp_cgr_attach(n->cgr, n->agent)))
            FAIL(rc, "contact graph routing: %s", tern_strerror(rc));
    }
    if (n->eng) {
        int k = ltp_engine_resume(n->eng);
        if (k > 0)
            TERN_INFO(n->lg, "node", "LTP: %d export session(s) resumed from the store",
                      k);
    }
    if (n->agent) {
        int k = bp_agent_resume(n->agent);
        if (k > 0)
            TERN_INFO(n->lg, "node", "BP: %d bundle(s) resumed from the store", k);
    }
    if ((rc = node__server_start(n, err, errlen)))
        goto fail;
    TERN_INFO(n->lg, "node", "node %" PRIu64 " running", n->number);
    n->running = 1;
    *out = n;
    return 0;
fail:
    if (n->lg && err && err[0])
        TERN_ERROR(n->lg, "node", "%s", err);
    teardown(n);
    /* What this start made goes, last the lock file, while it is still held. */
    if (n->made_store && nftw(n->store_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
        fprintf(stderr, "ternd: could not remove %s: %s\n", n->store_dir,
                strerror(errno));
    if (n->made_log) {
        snprintf(path, sizeof path, "%s/ternd.log", n->dir);
        unlink(path);
    }
    if (n->made_lock) {
        snprintf(path, sizeof path, "%s/ternd.lock", n->dir);
        unlink(path);
    }
    if (n->lock_fd >= 0)
        close(n->lock_fd);
    node__notes_free(&n->notes);
    free(n);
    return rc;
}

TERN_API int tern_node_run(tern_node *n)
{
    return tern_loop_run(n->loop, TERN_RUN_DEFAULT);
}

TERN_API void tern_node_stop(tern_node *n)
{
    tern_loop_stop(n->loop);
}

/* Stops every part, and gives up the pid and ports files (the lock stays
 * held: the caller closes it). */
static void teardown(struct tern_node *n)
{
    node__server_stop(n);
    /* The agent closes its outducts, cancelling LTP exports; the engine's
     * notices for them must not reach a half-freed convergence layer. */
    bp_ltp_cla *cla = n->ltpcla;
    n->ltpcla = NULL;
    bp_cgr_free(n->cgr); /* detaches from the agent first */
    n->cgr = NULL;
    bp_agent_free(n->agent);
    n->agent = NULL;
    bp_ltp_cla_free(cla);
    node__clas_free(n);
    node__contacts_stop(n);
    ltp_engine_free(n->eng);
    n->eng = NULL;
    ltp_udp_free(n->lsu);
    n->lsu = NULL;
    if (n->store) {
        int rc = sdr_close(n->store);
        if (rc)
            TERN_ERROR(n->lg, "node", "closing the store: %s", tern_strerror(rc));
        n->store = NULL;
    }
    if (n->locked) { /* the pid and ports files are ours only while we hold the lock */
        char path[PATH_MAX + 32];
        for (size_t i = 0; i < sizeof port_names / sizeof port_names[0]; i++)
            tern_ports_withdraw(n->dir, port_names[i][0], port_names[i][1]);
        snprintf(path, sizeof path, "%s/ternd.pid", n->dir);
        unlink(path);
    }
    bp_hostrc_free(&n->cfg);
    if (n->loop)
        tern_loop_close(n->loop);
    n->loop = NULL;
    if (n->lg && n->running)
        TERN_INFO(n->lg, "node", "node %" PRIu64 " stopped", n->number);
    tern_log_close(n->lg);
    n->lg = NULL;
}

TERN_API void tern_node_close(tern_node *n)
{
    if (!n)
        return;
    teardown(n);
    if (n->lock_fd >= 0)
        close(n->lock_fd);
    node__notes_free(&n->notes);
    free(n);
}

TERN_API size_t tern_node_warnings(const tern_node *n, const char **out, size_t max)
{
    size_t k = 0, all = n->cfg.nwarnings;
    for (size_t i = 0; i < n->cfg.nwarnings && k < max; i++)
        out[k++] = n->cfg.warnings[i];
    for (size_t i = 0; i < n->notes.n; i++)
        if (n->notes.v[i].level == TERN_LOG_WARN) {
            all++;
            if (k < max)
                out[k++] = n->notes.v[i].text;
        }
    return all;
}

TERN_API uint64_t tern_node_number(const tern_node *n)
{
    return n->number;
}

TERN_API const char *tern_node_cfdp_rc(const tern_node *n)
{
    return n->cfg.has_cfdp ? n->cfg.cfdp_file : NULL;
}

TERN_API const char *tern_node_ramsgate(const tern_node *n, int i)
{
    return i >= 0 && i < n->cfg.n_ramsgate ? n->cfg.ramsgate[i] : NULL;
}

TERN_API const char *tern_node_amsd(const tern_node *n, int i)
{
    return i >= 0 && i < n->cfg.n_amsd ? n->cfg.amsd[i] : NULL;
}

TERN_API tern_loop *tern_node_loop(const tern_node *n)
{
    return n->loop;
}

TERN_API bp_agent *tern_node_agent(const tern_node *n)
{
    return n->agent;
}

TERN_API ltp_engine *tern_node_engine(const tern_node *n)
{
    return n->eng;
}

TERN_API tern_log *tern_node_log(const tern_node *n)
{
    return n->lg;
}
