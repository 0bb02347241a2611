/* The CFDP user operations (cfdp_user.h): reserved messages in, puts out. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfdp.h"
#include "cfdp_fs.h"
#include "cfdp_msg.h"
#include "cfdp_user.h"

#define MAX_MSGS  64 /* reserved messages looked at in one Metadata */
#define MAX_OPTS  80 /* options of one put we build */
#define OPT_STORE 8192

enum { JOB_PROXY = 1, JOB_LISTING, JOB_REPORT };

/* Responder side: a put we started for a request. */
typedef struct job {
    int kind;
    cfdp_txn_id put;     /* our transaction */
    cfdp_txn_id request; /* the request's transaction (the answer names it) */
    uint64_t requester;
    char tmp[CFDP_FS_PATH_MAX + 1]; /* a listing or report file to delete after */
} job;

/* Originator side: a request we sent, or an answer waiting for the end of
 * the transaction that carries it. */
typedef struct pend {
    cfdp_txn_id request;
    uint8_t kind; /* the request's message type */
    uint64_t peer;
} pend;

typedef struct uev {
    uint8_t type;
    uint64_t peer;
    cfdp_txn_id request, carrier;
    uint8_t condition, delivery, file_status;
    uint8_t raw[CFDP_MSG_MAX];
    size_t raw_len;
    uint8_t fs_raw[CFDP_USER_FS_RESP_MAX];
    size_t fs_len, fs_count;
} uev;

struct cfdp_user {
    cfdp_entity *e;
    cfdp_fs fs;
    char work[CFDP_FS_PATH_MAX + 1];
    unsigned refuse;
    job *jobs;
    size_t njobs, capjobs;
    pend *pends;
    size_t npends, cappends;
    uev *waits; /* answers whose carrier has not finished */
    size_t nwaits, capwaits;
    uev *q; /* events, oldest first from qhead */
    size_t qhead, qn, qcap;
    cfdp_user_stats st;
};

/* A growable array of n items of size sz. */
static int grow(void **v, size_t *cap, size_t n, size_t sz)
{
    if (n < *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : 8;
    void *p = realloc(*v, c * sz);
    if (!p)
        return -ENOMEM;
    *v = p;
    *cap = c;
    return 0;
}

static int same(cfdp_txn_id a, cfdp_txn_id b)
{
    return a.src == b.src && a.seq == b.seq;
}

/* ------------------------------------------------------------ options */

typedef struct opts {
    cfdp_tlv items[MAX_OPTS];
    size_t n;
    uint8_t store[OPT_STORE];
    size_t used;
} opts;

static int add_msg(opts *o, const cfdp_msg *m)
{
    if (o->n == MAX_OPTS || o->used + CFDP_MSG_MAX > OPT_STORE)
        return TERN_EFULL;
    int rc = cfdp_msg_tlv(m, o->store + o->used, CFDP_MSG_MAX, &o->items[o->n]);
    if (rc)
        return rc;
    o->used += o->items[o->n].data.len;
    o->n++;
    return 0;
}

static int add_tlv(opts *o, const cfdp_tlv *t)
{
    if (o->n == MAX_OPTS)
        return TERN_EFULL;
    o->items[o->n++] = *t;
    return 0;
}

static cfdp_msg tid_msg(uint8_t type, cfdp_txn_id id)
{
    cfdp_msg m;
    memset(&m, 0, sizeof m);
    m.type = type;
    m.tid.src = id.src;
    m.tid.tsn = id.seq;
    return m;
}

static cfdp_lv lv_of(const char *s)
{
    cfdp_lv v = {(const uint8_t *)s, (uint8_t)(s ? strlen(s) : 0)};
    return v;
}

/* An LV as a C string; -EINVAL if it cannot be one (a NUL inside). */
static int str_of(cfdp_lv v, char out[CFDP_FS_PATH_MAX + 1])
{
    if (v.len && memchr(v.ptr, 0, v.len))
        return -EINVAL;
    if (v.len)
        memcpy(out, v.ptr, v.len);
    out[v.len] = 0;
    return 0;
}

/* A put to dst of src_name (NULL: metadata only) with the options. */
static int put(cfdp_user *u, uint64_t now, uint64_t dst, const char *src_name,
               const char *dst_name, uint8_t cls, int8_t closure, const opts *o,
               cfdp_txn_id *id)
{
    cfdp_put_req r;
    memset(&r, 0, sizeof r);
    r.dst = dst;
    r.src_name = src_name;
    r.dst_name = dst_name;
    r.cls = cls;
    r.closure = closure;
    r.checksum_type = -1;
    r.nak_mode = -1;
    r.options.items = o->items;
    r.options.count = o->n;
    return cfdp_put(u->e, now, &r, id);
}

/* ----------------------------------------------------------- responder */

static int add_job(cfdp_user *u, int kind, cfdp_txn_id put_id, cfdp_txn_id request,
                   uint64_t requester, const char *tmp)
{
    if (grow((void **)&u->jobs, &u->capjobs, u->njobs, sizeof *u->jobs))
        return -ENOMEM;
    job *j = &u->jobs[u->njobs++];
    j->kind = kind;
    j->put = put_id;
    j->request = request;
    j->requester = requester;
    snprintf(j->tmp, sizeof j->tmp, "%s", tmp ? tmp : "");
    return 0;
}

/* An answer: a put back to the requester of file (NULL: none) as dst_name
 * with the originating transaction ID and the messages. */
static int answer(cfdp_user *u, uint64_t now, uint64_t requester, cfdp_txn_id request,
                  const cfdp_msg *msgs, size_t n, const char *file, const char *dst_name,
                  cfdp_txn_id *id)
{
    static const cfdp_txn_id none;
    opts *o = calloc(1, sizeof *o);
    if (!o)
        return -ENOMEM;
    cfdp_msg tid = tid_msg(CFDP_MSG_ORIGINATING_TID, request);
    int rc = add_msg(o, &tid);
    for (size_t i = 0; i < n && !rc; i++)
        rc = add_msg(o, &msgs[i]);
    cfdp_txn_id got = none;
    if (!rc)
        rc = put(u, now, requester, file, dst_name, 0, -1, o, &got);
    free(o);
    if (rc)
        u->st.answers_failed++;
    else
        u->st.answers_sent++;
    if (id)
        *id = got;
    return rc;
}

static int ensure_work_dir(cfdp_user *u)
{
    int rc = u->fs.ops->mkdir(u->fs.ctx, u->work);
    return rc == -EEXIST ? 0 : rc;
}

/* Writes data[0..len) as the whole of file path. */
static int write_file(cfdp_user *u, const char *path, const void *data, size_t len)
{
    void *f;
    int rc =
        u->fs.ops->open(u->fs.ctx, path, CFDP_FS_WR | CFDP_FS_CREAT | CFDP_FS_TRUNC, &f);
    if (rc)
        return rc;
    rc = len ? u->fs.ops->write(u->fs.ctx, f, 0, data, len) : 0;
    if (!rc)
        rc = u->fs.ops->sync(u->fs.ctx, f);
    int rc2 = u->fs.ops->close(u->fs.ctx, f);
    return rc ? rc : rc2;
}

typedef struct text {
    char *p;
    size_t len, cap;
    int oom;
} text;

static void text_add(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void text_add(text *t, const char *fmt, ...)
{
    for (int pass = 0; pass < 2 && !t->oom; pass++) {
        va_list ap;
        va_start(ap, fmt);
        int n =
            vsnprintf(t->p ? t->p + t->len : NULL, t->p ? t->cap - t->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            t->oom = 1;
            return;
        }
        if (t->p && (size_t)n < t->cap - t->len) {
            t->len += (size_t)n;
            return;
        }
        size_t c = t->cap ? t->cap : 256;
        while (c - t->len <= (size_t)n)
            c *= 2;
        char *q = realloc(t->p, c);
        if (!q) {
            t->oom = 1;
            return;
        }
        t->p = q;
        t->cap = c;
    }
}

static int list_each(void *arg, const cfdp_fs_dirent *d)
{
    text_add(arg, "%c %" PRIu64 " %s\n", d->is_dir ? 'd' : 'f', d->is_dir ? 0 : d->size,
             d->name);
    return 0;
}

static int do_listing(cfdp_user *u, uint64_t now, const cfdp_ind *ind,
                      const cfdp_msg *req)
{
    u->st.listings++;
    char dir[CFDP_FS_PATH_MAX + 1], dst[CFDP_FS_PATH_MAX + 1], tmp[CFDP_FS_PATH_MAX + 1];
    cfdp_msg resp = *req;
    resp.type = CFDP_MSG_DIR_LIST_RESP;
    resp.ok = 0;
    text t = {0};
    int rc = str_of(req->name1, dir) || str_of(req->name2, dst) ? -EINVAL : 0;
    if (!rc && !dst[0])
        rc = -EINVAL; /* nowhere to put the listing */
    if (!rc && (u->refuse & CFDP_USER_REFUSE_LISTING)) {
        u->st.refused++;
        rc = -EACCES;
    }
    if (!rc)
        rc = u->fs.ops->list(u->fs.ctx, dir, list_each, &t);
    if (!rc && t.oom)
        rc = -ENOMEM;
    if (!rc && !(rc = ensure_work_dir(u))) {
        if ((size_t)snprintf(tmp, sizeof tmp, "%s/listing-%" PRIu64 "-%" PRIu64, u->work,
                             ind->txn.src, ind->txn.seq) >= sizeof tmp)
            rc = -EINVAL;
        else
            rc = write_file(u, tmp, t.p, t.len);
    }
    free(t.p);
    if (rc) { /* unsuccessful: answered without a file */
        answer(u, now, ind->peer, ind->txn, &resp, 1, NULL, NULL, NULL);
        return rc;
    }
    resp.ok = 1;
    cfdp_txn_id id;
    int arc = answer(u, now, ind->peer, ind->txn, &resp, 1, tmp, dst, &id);
    if (arc) {
        u->fs.ops->remove(u->fs.ctx, tmp);
        return arc;
    }
    return add_job(u, JOB_LISTING, id, ind->txn, ind->peer, tmp);
}

static uint8_t txn_status_of(int rc, const cfdp_txn_info *info)
{
    if (rc)
        return CFDP_TXN_UNRECOGNIZED;
    return info->state == CFDP_STATE_FINISHED ? CFDP_TXN_TERMINATED : CFDP_TXN_ACTIVE;
}

static const char *state_name(unsigned s)
{
    static const char *n[] = {"active", "suspended", "cancelling", "closing", "finished"};
    return s < 5 ? n[s] : "unknown";
}

static int do_remote(cfdp_user *u, uint64_t now, const cfdp_ind *ind, const cfdp_msg *req)
{
    cfdp_txn_id target = {req->tid.src, req->tid.tsn};
    cfdp_txn_info info;
    memset(&info, 0, sizeof info);
    int rc = 0;
    int refused = (u->refuse & CFDP_USER_REFUSE_REMOTE) != 0;
    if (refused) {
        u->st.refused++;
        rc = -EACCES;
    } else if (req->type == CFDP_MSG_SUSPEND_REQ) {
        u->st.suspends++;
        rc = cfdp_suspend(u->e, now, target);
    } else if (req->type == CFDP_MSG_RESUME_REQ) {
        u->st.resumes++;
        rc = cfdp_resume(u->e, now, target);
    } else {
        u->st.reports++;
    }
    /* the state after the act; a refused request is answered as for a
     * transaction not known, telling nothing about this entity's */
    int found = refused ? TERN_ENOTFOUND : cfdp_report(u->e, target, &info);
    cfdp_msg resp;
    memset(&resp, 0, sizeof resp);
    resp.tid = req->tid;
    resp.txn_status = txn_status_of(found, &info);
    if (req->type == CFDP_MSG_STATUS_REPORT_REQ) {
        resp.type = CFDP_MSG_STATUS_REPORT_RESP;
        resp.ok = found == 0;
        char name[CFDP_FS_PATH_MAX + 1], tmp[CFDP_FS_PATH_MAX + 1];
        if (resp.ok && !str_of(req->name1, name) && name[0] && !ensure_work_dir(u)) {
            text t = {0};
            text_add(&t,
                     "transaction %" PRIu64 ".%" PRIu64 "\nrole %s\nstate %s\nclass %u\n"
                     "condition %u\nfile_size %" PRIu64 "\nprogress %" PRIu64
                     "\ngaps %" PRIu64 "\n",
                     info.id.src, info.id.seq,
                     info.role == CFDP_ROLE_SENDER ? "sender" : "receiver",
                     state_name(info.state), info.cls, info.condition, info.file_size,
                     info.progress, info.gaps);
            int wrc = t.oom ? -ENOMEM : 0;
            if (!wrc &&
                (size_t)snprintf(tmp, sizeof tmp, "%s/report-%" PRIu64 "-%" PRIu64,
                                 u->work, ind->txn.src, ind->txn.seq) >= sizeof tmp)
                wrc = -EINVAL;
            if (!wrc)
                wrc = write_file(u, tmp, t.p, t.len);
            free(t.p);
            if (!wrc) {
                cfdp_txn_id id;
                int arc = answer(u, now, ind->peer, ind->txn, &resp, 1, tmp, name, &id);
                if (arc) {
                    u->fs.ops->remove(u->fs.ctx, tmp);
                    return arc;
                }
                return add_job(u, JOB_REPORT, id, ind->txn, ind->peer, tmp);
            }
        }
    } else {
        resp.type = req->type == CFDP_MSG_SUSPEND_REQ ? CFDP_MSG_SUSPEND_RESP
                                                      : CFDP_MSG_RESUME_RESP;
        resp.suspended = found == 0 && info.state == CFDP_STATE_SUSPENDED;
    }
    int arc = answer(u, now, ind->peer, ind->txn, &resp, 1, NULL, NULL, NULL);
    return rc ? rc : arc;
}

static int do_proxy_put(cfdp_user *u, uint64_t now, const cfdp_ind *ind,
                        const cfdp_msg *msgs, size_t n, const cfdp_msg *req)
{
    u->st.proxy_puts++;
    opts *o = calloc(1, sizeof *o);
    if (!o)
        return -ENOMEM;
    char src[CFDP_FS_PATH_MAX + 1], dst[CFDP_FS_PATH_MAX + 1];
    uint8_t cls = 0;
    int8_t closure = -1;
    int rc = str_of(req->name1, src) || str_of(req->name2, dst) ? -EINVAL : 0;
    if (!rc && (u->refuse & CFDP_USER_REFUSE_PROXY)) {
        u->st.refused++;
        rc = -EACCES;
    }
    /* the options in cfdp_put_req's order: filestore requests, messages to
     * user (the originating ID first), fault handler overrides, flow label */
    for (size_t i = 0; i < n && !rc; i++)
        if (msgs[i].type == CFDP_MSG_PROXY_FS_REQ) {
            cfdp_tlv t = msgs[i].fs;
            t.type = CFDP_TLV_FS_REQUEST;
            rc = add_tlv(o, &t);
        }
    cfdp_msg tid = tid_msg(CFDP_MSG_ORIGINATING_TID, ind->txn);
    if (!rc)
        rc = add_msg(o, &tid);
    for (size_t i = 0; i < n && !rc; i++) {
        const cfdp_msg *m = &msgs[i];
        cfdp_tlv t;
        memset(&t, 0, sizeof t);
        if (m->type == CFDP_MSG_PROXY_MSG_TO_USER) {
            t.type = CFDP_TLV_MSG_TO_USER;
            t.data = m->data;
            rc = add_tlv(o, &t);
        }
    }
    for (size_t i = 0; i < n && !rc; i++) {
        const cfdp_msg *m = &msgs[i];
        cfdp_tlv t;
        memset(&t, 0, sizeof t);
        if (m->type == CFDP_MSG_PROXY_FAULT_HANDLER) {
            t.type = CFDP_TLV_FAULT_HANDLER;
            t.condition = m->condition;
            t.handler = m->handler;
            rc = add_tlv(o, &t);
        } else if (m->type == CFDP_MSG_PROXY_FLOW_LABEL) {
            t.type = CFDP_TLV_FLOW_LABEL;
            t.data = m->data;
            rc = add_tlv(o, &t);
        } else if (m->type == CFDP_MSG_PROXY_TX_MODE) {
            cls = m->mode == CFDP_UNACKNOWLEDGED ? 1 : 2;
        } else if (m->type == CFDP_MSG_PROXY_CLOSURE) {
            closure = (int8_t)m->flag;
        }
    }
    cfdp_txn_id id;
    if (!rc)
        rc = put(u, now, req->dst.id, src[0] ? src : NULL, dst[0] ? dst : NULL, cls,
                 closure, o, &id);
    free(o);
    if (!rc)
        return add_job(u, JOB_PROXY, id, ind->txn, ind->peer, NULL);
    /* the put could not start: say so at once */
    cfdp_msg resp;
    memset(&resp, 0, sizeof resp);
    resp.type = CFDP_MSG_PROXY_PUT_RESP;
    resp.condition = CFDP_COND_FILESTORE_REJECTION;
    resp.delivery = CFDP_DATA_INCOMPLETE;
    resp.file_status = CFDP_FILE_REJECTED;
    answer(u, now, ind->peer, ind->txn, &resp, 1, NULL, NULL, NULL);
    return rc;
}

static int do_proxy_cancel(cfdp_user *u, uint64_t now, const cfdp_ind *ind,
                           const cfdp_msg *orig)
{
    u->st.proxy_cancels++;
    if (!orig)
        return -EINVAL; /* a cancel must name the request */
    if (u->refuse & CFDP_USER_REFUSE_PROXY) {
        u->st.refused++;
        return -EACCES;
    }
    cfdp_txn_id request = {orig->tid.src, orig->tid.tsn};
    for (size_t i = 0; i < u->njobs; i++)
        if (u->jobs[i].kind == JOB_PROXY && same(u->jobs[i].request, request) &&
            u->jobs[i].requester == ind->peer)
            return cfdp_cancel(u->e, now, u->jobs[i].put);
    return TERN_ENOTFOUND;
}

/* Our put for a request finished: a proxy put answers now; the others only
 * leave a file to delete. */
static int job_done(cfdp_user *u, uint64_t now, size_t ji, const cfdp_ind *ind)
{
    job j = u->jobs[ji];
    u->jobs[ji] = u->jobs[--u->njobs];
    if (j.kind != JOB_PROXY) {
        u->fs.ops->remove(u->fs.ctx, j.tmp);
        return 0;
    }
    cfdp_msg *msgs = calloc(MAX_MSGS, sizeof *msgs);
    if (!msgs)
        return -ENOMEM;
    size_t n = 0;
    msgs[n].type = CFDP_MSG_PROXY_PUT_RESP;
    msgs[n].condition = ind->condition;
    msgs[n].delivery = ind->delivery;
    msgs[n].file_status = ind->file_status;
    n++;
    size_t pos = 0;
    cfdp_tlv t;
    while (n < MAX_MSGS - 1 && cfdp_tlvs_next(&ind->responses, &pos, &t) == 0)
        if (t.type == CFDP_TLV_FS_RESPONSE) {
            msgs[n].type = CFDP_MSG_PROXY_FS_RESP;
            msgs[n].fs = t;
            n++;
        }
    int rc = answer(u, now, j.requester, j.request, msgs, n, NULL, NULL, NULL);
    free(msgs);
    return rc;
}

/* ---------------------------------------------------------- originator */

static int add_pend(cfdp_user *u, cfdp_txn_id id, uint8_t kind, uint64_t peer)
{
    if (grow((void **)&u->pends, &u->cappends, u->npends, sizeof *u->pends))
        return -ENOMEM;
    u->pends[u->npends++] = (pend){id, kind, peer};
    return 0;
}

/* An answer arrived in carrier's Metadata: keep it until carrier ends. */
static int got_answer(cfdp_user *u, const cfdp_ind *ind, const cfdp_msg *orig,
                      const cfdp_msg *msgs, size_t n, const cfdp_tlvs *opts_raw)
{
    cfdp_txn_id request = {orig->tid.src, orig->tid.tsn};
    size_t pi;
    for (pi = 0; pi < u->npends; pi++)
        if (same(u->pends[pi].request, request) && u->pends[pi].peer == ind->peer)
            break;
    if (pi == u->npends)
        return 0; /* not ours, or answered already */
    const cfdp_msg *a = NULL;
    for (size_t i = 0; i < n && !a; i++)
        switch (msgs[i].type) {
        case CFDP_MSG_PROXY_PUT_RESP:
        case CFDP_MSG_DIR_LIST_RESP:
        case CFDP_MSG_STATUS_REPORT_RESP:
        case CFDP_MSG_SUSPEND_RESP:
        case CFDP_MSG_RESUME_RESP:
            a = &msgs[i];
            break;
        default:
            break;
        }
    if (!a)
        return 0;
    if (grow((void **)&u->waits, &u->capwaits, u->nwaits, sizeof *u->waits))
        return -ENOMEM;
    uev *w = &u->waits[u->nwaits];
    memset(w, 0, sizeof *w);
    w->type = a->type;
    w->peer = ind->peer;
    w->request = request;
    w->carrier = ind->txn;
    int rc = cfdp_msg_encode(a, w->raw, sizeof w->raw, &w->raw_len);
    if (rc)
        return rc;
    /* proxy filestore responses become filestore response TLVs */
    for (size_t i = 0; i < n; i++) {
        if (msgs[i].type != CFDP_MSG_PROXY_FS_RESP)
            continue;
        cfdp_tlv t = msgs[i].fs;
        t.type = CFDP_TLV_FS_RESPONSE;
        size_t k;
        if (cfdp_tlv_encode(&t, w->fs_raw + w->fs_len, sizeof w->fs_raw - w->fs_len, &k))
            break; /* full: the rest are not kept */
        w->fs_len += k;
        w->fs_count++;
    }
    (void)opts_raw;
    u->nwaits++;
    u->pends[pi] = u->pends[--u->npends];
    return 0;
}

static int carrier_done(cfdp_user *u, const cfdp_ind *ind)
{
    for (size_t i = 0; i < u->nwaits; i++) {
        if (!same(u->waits[i].carrier, ind->txn))
            continue;
        uev w = u->waits[i];
        u->waits[i] = u->waits[--u->nwaits];
        w.condition = ind->condition;
        w.delivery = ind->delivery;
        w.file_status = ind->file_status;
        if (u->qn == u->qcap) {
            size_t c = u->qcap ? u->qcap * 2 : 8;
            uev *q = malloc(c * sizeof *q);
            if (!q)
                return -ENOMEM;
            for (size_t k = 0; k < u->qn; k++)
                q[k] = u->q[(u->qhead + k) % u->qcap];
            free(u->q);
            u->q = q;
            u->qcap = c;
            u->qhead = 0;
        }
        u->q[(u->qhead + u->qn) % u->qcap] = w;
        u->qn++;
        u->st.events++;
        return 0;
    }
    return 0;
}

/* ---------------------------------------------------------- dispatch */

static int on_metadata(cfdp_user *u, uint64_t now, const cfdp_ind *ind)
{
    cfdp_msg *msgs = calloc(MAX_MSGS, sizeof *msgs);
    if (!msgs)
        return -ENOMEM;
    size_t n = 0, pos = 0;
    cfdp_tlv t;
    while (n < MAX_MSGS && cfdp_tlvs_next(&ind->options, &pos, &t) == 0) {
        if (t.type != CFDP_TLV_MSG_TO_USER ||
            !cfdp_msg_is_reserved(t.data.ptr, t.data.len))
            continue;
        if (cfdp_msg_decode(t.data.ptr, t.data.len, &msgs[n], NULL) == 0)
            n++;
        else
            u->st.bad_messages++;
    }
    const cfdp_msg *orig = NULL;
    for (size_t i = 0; i < n; i++)
        if (msgs[i].type == CFDP_MSG_ORIGINATING_TID && !orig)
            orig = &msgs[i];
    int rc = 0, r;
    for (size_t i = 0; i < n; i++) {
        const cfdp_msg *m = &msgs[i];
        switch (m->type) {
        case CFDP_MSG_PROXY_PUT_REQ:
            r = do_proxy_put(u, now, ind, msgs, n, m);
            break;
        case CFDP_MSG_PROXY_PUT_CANCEL:
            r = do_proxy_cancel(u, now, ind, orig);
            break;
        case CFDP_MSG_DIR_LIST_REQ:
            r = do_listing(u, now, ind, m);
            break;
        case CFDP_MSG_STATUS_REPORT_REQ:
        case CFDP_MSG_SUSPEND_REQ:
        case CFDP_MSG_RESUME_REQ:
            r = do_remote(u, now, ind, m);
            break;
        default:
            r = 0;
            break;
        }
        if (r && !rc)
            rc = r;
    }
    if (orig && (r = got_answer(u, ind, orig, msgs, n, &ind->options)) && !rc)
        rc = r;
    free(msgs);
    return rc;
}

int cfdp_user_on_indication(cfdp_user *u, uint64_t now_ms, const cfdp_ind *ind)
{
    if (!u || !ind)
        return -EINVAL;
    if (ind->type == CFDP_IND_METADATA && ind->role == CFDP_ROLE_RECEIVER)
        return on_metadata(u, now_ms, ind);
    if (ind->type != CFDP_IND_FINISHED && ind->type != CFDP_IND_ABANDONED)
        return 0;
    if (ind->role == CFDP_ROLE_SENDER) {
        for (size_t i = 0; i < u->njobs; i++)
            if (same(u->jobs[i].put, ind->txn))
                return job_done(u, now_ms, i, ind);
        return 0;
    }
    return carrier_done(u, ind);
}

/* ------------------------------------------------------------ requests */

static int request(cfdp_user *u, uint64_t now, uint64_t peer, const cfdp_msg *m,
                   uint8_t cls, cfdp_txn_id *id)
{
    opts *o = calloc(1, sizeof *o);
    if (!o)
        return -ENOMEM;
    cfdp_txn_id got;
    int rc = add_msg(o, m);
    if (!rc)
        rc = put(u, now, peer, NULL, NULL, cls, -1, o, &got);
    free(o);
    if (!rc && m->type != CFDP_MSG_PROXY_PUT_CANCEL)
        rc = add_pend(u, got, m->type, peer);
    if (!rc && id)
        *id = got;
    return rc;
}

int cfdp_user_proxy_put(cfdp_user *u, uint64_t now_ms, const cfdp_proxy_put_req *r,
                        cfdp_txn_id *id)
{
    if (!u || !r || (r->n_fs_requests && !r->fs_requests) ||
        (r->n_messages && !r->messages) || (r->n_fault_handlers && !r->fault_handlers))
        return -EINVAL;
    opts *o = calloc(1, sizeof *o);
    if (!o)
        return -ENOMEM;
    cfdp_msg m;
    memset(&m, 0, sizeof m);
    m.type = CFDP_MSG_PROXY_PUT_REQ;
    m.dst.id = r->dst;
    m.name1 = lv_of(r->src_name);
    m.name2 = lv_of(r->dst_name);
    int rc = add_msg(o, &m);
    for (size_t i = 0; i < r->n_messages && !rc; i++) {
        memset(&m, 0, sizeof m);
        m.type = CFDP_MSG_PROXY_MSG_TO_USER;
        m.data = r->messages[i];
        rc = add_msg(o, &m);
    }
    for (size_t i = 0; i < r->n_fs_requests && !rc; i++) {
        memset(&m, 0, sizeof m);
        m.type = CFDP_MSG_PROXY_FS_REQ;
        m.fs = r->fs_requests[i];
        rc = add_msg(o, &m);
    }
    for (size_t i = 0; i < r->n_fault_handlers && !rc; i++) {
        memset(&m, 0, sizeof m);
        m.type = CFDP_MSG_PROXY_FAULT_HANDLER;
        m.condition = r->fault_handlers[i].condition;
        m.handler = r->fault_handlers[i].handler;
        rc = add_msg(o, &m);
    }
    if (!rc && r->flow_label.len) {
        memset(&m, 0, sizeof m);
        m.type = CFDP_MSG_PROXY_FLOW_LABEL;
        m.data = r->flow_label;
        rc = add_msg(o, &m);
    }
    if (!rc && r->mode >= 0) {
        memset(&m, 0, sizeof m);
        m.type = CFDP_MSG_PROXY_TX_MODE;
        m.mode = (uint8_t)r->mode;
        rc = add_msg(o, &m);
    }
    if (!rc && r->closure >= 0) {
        memset(&m, 0, sizeof m);
        m.type = CFDP_MSG_PROXY_CLOSURE;
        m.flag = (uint8_t)r->closure;
        rc = add_msg(o, &m);
    }
    cfdp_txn_id got;
    if (!rc)
        rc = put(u, now_ms, r->proxy, NULL, NULL, 0, -1, o, &got);
    free(o);
    if (!rc)
        rc = add_pend(u, got, CFDP_MSG_PROXY_PUT_REQ, r->proxy);
    if (!rc && id)
        *id = got;
    return rc;
}

int cfdp_user_proxy_cancel(cfdp_user *u, uint64_t now_ms, uint64_t proxy,
                           cfdp_txn_id request, cfdp_txn_id *id)
{
    if (!u)
        return -EINVAL;
    opts *o = calloc(1, sizeof *o);
    if (!o)
        return -ENOMEM;
    cfdp_msg c;
    memset(&c, 0, sizeof c);
    c.type = CFDP_MSG_PROXY_PUT_CANCEL;
    cfdp_msg tid = tid_msg(CFDP_MSG_ORIGINATING_TID, request);
    int rc = add_msg(o, &tid);
    if (!rc)
        rc = add_msg(o, &c);
    if (!rc)
        rc = put(u, now_ms, proxy, NULL, NULL, 0, -1, o, id);
    free(o);
    return rc;
}

int cfdp_user_dir_list(cfdp_user *u, uint64_t now_ms, uint64_t peer, const char *dir,
                       const char *listing_name, cfdp_txn_id *id)
{
    if (!u || !dir || !listing_name || !listing_name[0] ||
        strlen(dir) > CFDP_FS_PATH_MAX || strlen(listing_name) > CFDP_FS_PATH_MAX)
        return -EINVAL;
    cfdp_msg m;
    memset(&m, 0, sizeof m);
    m.type = CFDP_MSG_DIR_LIST_REQ;
    m.name1 = lv_of(dir);
    m.name2 = lv_of(listing_name);
    return request(u, now_ms, peer, &m, 0, id);
}

int cfdp_user_remote_report(cfdp_user *u, uint64_t now_ms, uint64_t peer,
                            cfdp_txn_id target, const char *report_name, cfdp_txn_id *id)
{
    if (!u || (report_name && strlen(report_name) > CFDP_FS_PATH_MAX))
        return -EINVAL;
    cfdp_msg m = tid_msg(CFDP_MSG_STATUS_REPORT_REQ, target);
    m.name1 = lv_of(report_name);
    return request(u, now_ms, peer, &m, 0, id);
}

int cfdp_user_remote_suspend(cfdp_user *u, uint64_t now_ms, uint64_t peer,
                             cfdp_txn_id target, cfdp_txn_id *id)
{
    if (!u)
        return -EINVAL;
    cfdp_msg m = tid_msg(CFDP_MSG_SUSPEND_REQ, target);
    return request(u, now_ms, peer, &m, 2, id);
}

int cfdp_user_remote_resume(cfdp_user *u, uint64_t now_ms, uint64_t peer,
                            cfdp_txn_id target, cfdp_txn_id *id)
{
    if (!u)
        return -EINVAL;
    cfdp_msg m = tid_msg(CFDP_MSG_RESUME_REQ, target);
    return request(u, now_ms, peer, &m, 2, id);
}

int cfdp_user_next_event(cfdp_user *u, cfdp_user_event *out)
{
    if (!u || !out)
        return -EINVAL;
    if (!u->qn)
        return TERN_EEND;
    const uev *w = &u->q[u->qhead];
    memset(out, 0, sizeof *out);
    out->type = w->type;
    out->peer = w->peer;
    out->request = w->request;
    out->carrier = w->carrier;
    out->condition = w->condition;
    out->delivery = w->delivery;
    out->file_status = w->file_status;
    memcpy(out->raw, w->raw, w->raw_len);
    memcpy(out->fs_raw, w->fs_raw, w->fs_len);
    out->fs_responses = (cfdp_tlvs){NULL, w->fs_count, out->fs_raw, w->fs_len};
    int rc = cfdp_msg_decode(out->raw, w->raw_len, &out->msg, NULL);
    u->qhead = (u->qhead + 1) % u->qcap;
    u->qn--;
    return rc; /* our own encoding: decodes */
}

void cfdp_user_stats_get(const cfdp_user *u, cfdp_user_stats *out)
{
    if (u && out)
        *out = u->st;
}

int cfdp_user_new(cfdp_entity *e, const cfdp_user_cfg *cfg, cfdp_user **out)
{
    if (!e || !cfg || !cfg->fs.ops || !out)
        return -EINVAL;
    const char *w = cfg->work_dir ? cfg->work_dir : ".cfdp-user";
    if (!w[0] || strlen(w) > 200)
        return -EINVAL; /* room for the file names made under it */
    cfdp_user *u = calloc(1, sizeof *u);
    if (!u)
        return -ENOMEM;
    u->e = e;
    u->fs = cfg->fs;
    snprintf(u->work, sizeof u->work, "%s", w);
    u->refuse = cfg->refuse;
    *out = u;
    return 0;
}

void cfdp_user_free(cfdp_user *u)
{
    if (!u)
        return;
    free(u->jobs);
    free(u->pends);
    free(u->waits);
    free(u->q);
    free(u);
}
