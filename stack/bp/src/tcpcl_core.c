/* The plumbing the TCPCL v3 and v4 sessions share (tcpcl_int.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tcpcl_int.h"
#include "tern/ckd.h"

int tcl__buf_reserve(tcl_buf *b, size_t more)
{
    if (b->off && b->off == b->len)
        b->off = b->len = 0;
    if (b->cap - b->len >= more)
        return 0;
    if (b->off) { /* compact before growing */
        memmove(b->p, b->p + b->off, b->len - b->off);
        b->len -= b->off;
        b->off = 0;
        if (b->cap - b->len >= more)
            return 0;
    }
    size_t need;
    if (tern_ckd_add_size(&need, b->len, more))
        return -ENOMEM;
    size_t cap = (size_t)tern_ckd_grow(b->cap ? b->cap : 256, need, SIZE_MAX / 2);
    if (!cap)
        return -ENOMEM;
    uint8_t *p = realloc(b->p, cap);
    if (!p)
        return -ENOMEM;
    b->p = p;
    b->cap = cap;
    return 0;
}

void tcl__buf_trim(tcl_buf *b, size_t keep)
{
    if (b->off == b->len && b->cap > keep) {
        free(b->p);
        memset(b, 0, sizeof *b);
    }
}

size_t tcl__buffered(const tcl_core *c)
{
    return (c->rx.len - c->rx.off) + (c->in.len - c->in.off);
}

int tcl__buf_put(tcl_buf *b, const void *d, size_t n)
{
    int rc = tcl__buf_reserve(b, n);
    if (rc < 0)
        return rc;
    if (n)
        memcpy(b->p + b->len, d, n);
    b->len += n;
    return 0;
}

int tcl__push_ev(tcl_core *c, const tcpcl4_ev *e)
{
    if (c->ev_head && c->ev_head == c->ev_n)
        c->ev_head = c->ev_n = 0;
    if (c->ev_n == c->ev_cap) {
        size_t cap = c->ev_cap ? c->ev_cap * 2 : 8;
        tcpcl4_ev *p = realloc(c->ev, cap * sizeof *p);
        if (!p)
            return -ENOMEM;
        c->ev = p;
        c->ev_cap = cap;
    }
    c->ev[c->ev_n++] = *e;
    return 0;
}

int tcl__pop_ev(tcl_core *c, tcpcl4_ev *ev)
{
    if (c->ev_head == c->ev_n)
        return TERN_EEND;
    *ev = c->ev[c->ev_head++];
    return 0;
}

int tcl__take_in(tcl_core *c, uint8_t **data, size_t *len)
{
    if (c->owned_n == c->owned_cap) {
        size_t cap = c->owned_cap ? c->owned_cap * 2 : 4;
        uint8_t **p = realloc(c->owned, cap * sizeof *p);
        if (!p)
            return -ENOMEM;
        c->owned = p;
        c->owned_cap = cap;
    }
    size_t have = c->in.len - c->in.off;
    uint8_t *d = c->in.p;
    if (c->in.off)
        memmove(d, d + c->in.off, have);
    c->owned[c->owned_n++] = d;
    memset(&c->in, 0, sizeof c->in);
    *data = d;
    *len = have;
    return 0;
}

uint8_t *tcl__rxbuf(tcl_core *c, size_t want, size_t *room)
{
    tcl__free_owned(c);
    tcl__buf_trim(&c->rx, TCL_BUF_KEEP); /* the data of events taken is dead now */
    size_t live = c->rx.len - c->rx.off;
    if (c->rx_msg > live && c->rx_msg - live > want)
        want = c->rx_msg - live;
    if (tcl__buf_reserve(&c->rx, want) < 0)
        return NULL;
    *room = c->rx.cap - c->rx.len;
    return c->rx.p + c->rx.len;
}

void tcl__free_owned(tcl_core *c)
{
    for (size_t i = 0; i < c->owned_n; i++)
        free(c->owned[i]);
    c->owned_n = 0;
}

void tcl__core_free(tcl_core *c)
{
    tcl__free_owned(c);
    free(c->owned);
    free(c->ev);
    free(c->rx.p);
    free(c->tx.p);
    free(c->in.p);
    for (size_t i = c->ref_head; i < c->ref_n; i++)
        free(c->refs[i].owned);
    free(c->refs);
    free(c->segs);
    free(c->ans);
}

/* ---- answers to received transfers, in transfer order --------------------- */

static int ans_push(tcl_core *c, uint64_t tid, int kind, const uint8_t *msg, size_t n)
{
    if (c->ans_head && c->ans_head == c->ans_n)
        c->ans_head = c->ans_n = 0;
    if (c->ans_n == c->ans_cap) {
        if (c->ans_head) { /* compact before growing */
            memmove(c->ans, c->ans + c->ans_head,
                    (c->ans_n - c->ans_head) * sizeof *c->ans);
            c->ans_n -= c->ans_head;
            c->ans_head = 0;
        }
        if (c->ans_n == c->ans_cap) {
            size_t cap = c->ans_cap ? c->ans_cap * 2 : 16;
            tcl_ans *v = realloc(c->ans, cap * sizeof *v);
            if (!v)
                return -ENOMEM;
            c->ans = v;
            c->ans_cap = cap;
        }
    }
    tcl_ans *a = &c->ans[c->ans_n++];
    a->tid = tid;
    a->kind = (uint8_t)kind;
    a->len = (uint8_t)n;
    if (n)
        memcpy(a->msg, msg, n);
    return 0;
}

/* Moves the answers that no longer wait for an owed one to the output. */
static int ans_drain(tcl_core *c)
{
    while (c->ans_head < c->ans_n && c->ans[c->ans_head].kind != TCL_ANS_OWED) {
        const tcl_ans *a = &c->ans[c->ans_head];
        int rc = tcl__buf_put(&c->tx, a->msg, a->len);
        if (rc < 0)
            return rc; /* kept: the next drain sends it */
        c->ans_head++;
    }
    if (c->ans_head == c->ans_n)
        c->ans_head = c->ans_n = 0;
    return 0;
}

int tcl__answer(tcl_core *c, uint64_t tid, int progress, const uint8_t *msg, size_t n)
{
    if (n > TCL_ANS_MSG_MAX)
        return -EINVAL;
    if (c->ans_head == c->ans_n) /* nothing owed: the common case */
        return tcl__buf_put(&c->tx, msg, n);
    if (progress && c->ans_n - c->ans_head >= TCL_ANS_HOLD_MAX) {
        tcl_ans *last = &c->ans[c->ans_n - 1];
        if (last->kind == TCL_ANS_PROGRESS && last->tid == tid) {
            last->len = (uint8_t)n;
            memcpy(last->msg, msg, n);
            return 0;
        }
    }
    return ans_push(c, tid, progress ? TCL_ANS_PROGRESS : TCL_ANS_FINAL, msg, n);
}

int tcl__answer_owe(tcl_core *c, uint64_t tid)
{
    return ans_push(c, tid, TCL_ANS_OWED, NULL, 0);
}

int tcl__answer_final(tcl_core *c, uint64_t tid, const uint8_t *msg, size_t n)
{
    if (n > TCL_ANS_MSG_MAX)
        return -EINVAL;
    for (size_t i = c->ans_head; i < c->ans_n; i++) {
        tcl_ans *a = &c->ans[i];
        if (a->kind == TCL_ANS_OWED && a->tid == tid) {
            a->kind = TCL_ANS_FINAL;
            a->len = (uint8_t)n;
            memcpy(a->msg, msg, n);
            return i == c->ans_head ? ans_drain(c) : 0;
        }
    }
    return tcl__answer(c, tid, 0, msg, n);
}

size_t tcl__answers_held(const tcl_core *c)
{
    return c->ans_n - c->ans_head;
}

void tcl__set_err(tcl_core *c, const char *fmt, ...)
{
    if (c->err[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, sizeof c->err, fmt, ap);
    va_end(ap);
}

/* The output is the tx bytes with the refs spliced in at their places. */
static const tcl_ref *ref_next(const tcl_core *c)
{
    return c->ref_head < c->ref_n ? &c->refs[c->ref_head] : NULL;
}

static void ref_pop(tcl_core *c)
{
    tcl_ref *r = &c->refs[c->ref_head++];
    c->ref_bytes -= r->len;
    free(r->owned);
    c->ref_done = 0;
    if (c->ref_head == c->ref_n)
        c->ref_head = c->ref_n = 0;
}

const uint8_t *tcl__output(tcl_core *c, size_t *len)
{
    const tcl_ref *r = ref_next(c);
    size_t inl = c->tx.len - c->tx.off;
    if (r && r->at == c->tx_out) {
        *len = r->len - c->ref_done;
        return r->p + c->ref_done;
    }
    if (r && r->at - c->tx_out < inl)
        inl = (size_t)(r->at - c->tx_out);
    *len = inl;
    return inl ? c->tx.p + c->tx.off : NULL;
}

void tcl__sent(tcl_core *c, size_t n)
{
    while (n) {
        const tcl_ref *r = ref_next(c);
        if (r && r->at == c->tx_out) {
            size_t m = r->len - c->ref_done;
            m = n < m ? n : m;
            c->ref_done += m;
            n -= m;
            if (c->ref_done == r->len)
                ref_pop(c);
            continue;
        }
        size_t have = c->tx.len - c->tx.off;
        if (r && r->at - c->tx_out < have)
            have = (size_t)(r->at - c->tx_out);
        if (!have)
            break;
        size_t m = n < have ? n : have;
        c->tx.off += m;
        c->tx_out += m;
        n -= m;
    }
    while (c->seg_head < c->seg_n && c->segs[c->seg_head].end <= c->tx_out)
        c->seg_head++;
    if (c->seg_head == c->seg_n)
        c->seg_head = c->seg_n = 0;
    tcl__buf_trim(&c->tx, TCL_BUF_KEEP);
}

int tcl__output_iov(tcl_core *c, struct iovec *iov, int max, size_t *total)
{
    int k = 0;
    size_t off = c->tx.off, done = c->ref_done;
    uint64_t pos = c->tx_out;
    *total = 0;
    for (size_t i = c->ref_head; i < c->ref_n && k < max; i++) {
        const tcl_ref *r = &c->refs[i];
        if (r->at > pos) {
            size_t m = (size_t)(r->at - pos);
            iov[k++] = (struct iovec){c->tx.p + off, m};
            *total += m;
            off += m;
            pos += m;
            if (k == max)
                return k;
        }
        iov[k++] = (struct iovec){(void *)(r->p + done), r->len - done};
        *total += r->len - done;
        done = 0;
    }
    if (k < max && off < c->tx.len) {
        iov[k++] = (struct iovec){c->tx.p + off, c->tx.len - off};
        *total += c->tx.len - off;
    }
    return k;
}

size_t tcl__pending(const tcl_core *c)
{
    return (c->tx.len - c->tx.off) + (size_t)(c->ref_bytes - c->ref_done);
}

int tcl__reserve_refs(tcl_core *c, size_t more)
{
    if (c->ref_cap - c->ref_n >= more)
        return 0;
    if (c->ref_head) { /* compact before growing */
        memmove(c->refs, c->refs + c->ref_head,
                (c->ref_n - c->ref_head) * sizeof *c->refs);
        c->ref_n -= c->ref_head;
        c->ref_head = 0;
    }
    size_t need, bytes;
    if (tern_ckd_add_size(&need, c->ref_n, more))
        return -ENOMEM;
    size_t cap = (size_t)tern_ckd_grow(c->ref_cap ? c->ref_cap : 64, need, SIZE_MAX / 2);
    if (!cap || tern_ckd_mul_size(&bytes, cap, sizeof(tcl_ref)))
        return -ENOMEM;
    if (cap != c->ref_cap) {
        tcl_ref *v = realloc(c->refs, bytes);
        if (!v)
            return -ENOMEM;
        c->refs = v;
        c->ref_cap = cap;
    }
    return 0;
}

int tcl__put_ref(tcl_core *c, const uint8_t *p, size_t n, uint64_t tid)
{
    int rc = tcl__reserve_refs(c, 1);
    if (rc < 0)
        return rc;
    c->refs[c->ref_n++] = (tcl_ref){c->tx_out + (c->tx.len - c->tx.off), p, n, tid, NULL};
    c->ref_bytes += n;
    return 0;
}

int tcl__detach_refs(tcl_core *c, uint64_t tid)
{
    for (size_t i = c->ref_head; i < c->ref_n; i++) {
        tcl_ref *r = &c->refs[i];
        if (r->tid != tid || r->owned)
            continue;
        /* Only the unsent part matters, but the offsets stay as they are. */
        uint8_t *cp = malloc(r->len ? r->len : 1);
        if (!cp)
            return -ENOMEM;
        size_t from = i == c->ref_head ? c->ref_done : 0;
        memcpy(cp + from, r->p + from, r->len - from);
        r->owned = cp;
        r->p = cp;
    }
    return 0;
}

uint64_t tcl__tx_end(const tcl_core *c)
{
    return c->tx_out + (c->tx.len - c->tx.off);
}

int tcl__reserve_segs(tcl_core *c, size_t more)
{
    if (c->seg_cap - c->seg_n >= more)
        return 0;
    if (c->seg_head) { /* compact before growing */
        memmove(c->segs, c->segs + c->seg_head,
                (c->seg_n - c->seg_head) * sizeof *c->segs);
        c->seg_n -= c->seg_head;
        c->seg_head = 0;
    }
    size_t need, bytes;
    if (tern_ckd_add_size(&need, c->seg_n, more))
        return -ENOMEM;
    size_t cap = (size_t)tern_ckd_grow(c->seg_cap ? c->seg_cap : 64, need, SIZE_MAX / 2);
    if (!cap || tern_ckd_mul_size(&bytes, cap, sizeof(tcl_seg)))
        return -ENOMEM;
    if (cap != c->seg_cap) {
        tcl_seg *v = realloc(c->segs, bytes);
        if (!v)
            return -ENOMEM;
        c->segs = v;
        c->seg_cap = cap;
    }
    return 0;
}

int tcl__seg_add(tcl_core *c, uint64_t tid, uint64_t at)
{
    int rc = tcl__reserve_segs(c, 1);
    if (rc < 0)
        return rc;
    c->segs[c->seg_n++] = (tcl_seg){tid, at, tcl__tx_end(c)};
    return 0;
}

/* Takes out, in one pass over the output, every segment of transfer tid
 * that has not begun to go out (its at is at or past tx_out): its tx bytes
 * and the ref of its data; what follows moves down. (One memmove and one
 * pass over the segments and refs per cut segment made a refused transfer
 * of many small segments quadratic: a peer with a small segment MRU could
 * stall the node for seconds with one XFER_REFUSE.) */
size_t tcl__cut_tid(tcl_core *c, uint64_t tid)
{
    uint8_t *base = c->tx.p + c->tx.off; /* the byte at position tx_out */
    size_t live = c->tx.len - c->tx.off, w = 0, rpos = 0, cut = 0;
    uint64_t removed = 0;
    size_t k = c->seg_head, rj = c->ref_head, rk = c->ref_head;
    for (size_t i = c->seg_head; i < c->seg_n; i++) {
        tcl_seg g = c->segs[i];
        /* refs before this segment's end of header stay, moved down */
        while (rj < c->ref_n && c->refs[rj].at <= g.at) {
            tcl_ref r = c->refs[rj++];
            r.at -= removed;
            c->refs[rk++] = r;
        }
        if (g.tid != tid || g.at < c->tx_out) {
            g.at -= removed;
            g.end -= removed;
            c->segs[k++] = g;
            continue;
        }
        uint64_t l = g.end - g.at;
        size_t from = (size_t)(g.at - c->tx_out), to = (size_t)(g.end - c->tx_out);
        memmove(base + w, base + rpos, from - rpos);
        w += from - rpos;
        rpos = to;
        /* its data, sent in place, is the ref right after its header; a
         * ref starts only once the tx bytes before it are out, so it has
         * not begun */
        while (rj < c->ref_n && c->refs[rj].at <= g.end) {
            tcl_ref r = c->refs[rj++];
            if (r.tid == tid && r.at > g.at) {
                c->ref_bytes -= r.len;
                free(r.owned);
                continue;
            }
            r.at -= removed + l;
            c->refs[rk++] = r;
        }
        removed += l;
        cut++;
    }
    if (!cut)
        return 0;
    memmove(base + w, base + rpos, live - rpos);
    w += live - rpos;
    c->tx.len = c->tx.off + w;
    while (rj < c->ref_n) {
        tcl_ref r = c->refs[rj++];
        r.at -= removed;
        c->refs[rk++] = r;
    }
    c->ref_n = rk;
    if (c->ref_head == c->ref_n)
        c->ref_head = c->ref_n = 0;
    c->seg_n = k;
    if (c->seg_head == c->seg_n)
        c->seg_head = c->seg_n = 0;
    return cut;
}
