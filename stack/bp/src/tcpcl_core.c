/* The plumbing the TCPCL v3 and v4 sessions share (tcpcl_int.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tcpcl_int.h"

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
    if (more > SIZE_MAX / 4)
        return -ENOMEM;
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->len < more)
        cap *= 2;
    uint8_t *p = realloc(b->p, cap);
    if (!p)
        return -ENOMEM;
    b->p = p;
    b->cap = cap;
    return 0;
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

const uint8_t *tcl__output(tcl_core *c, size_t *len)
{
    *len = c->tx.len - c->tx.off;
    return *len ? c->tx.p + c->tx.off : NULL;
}

void tcl__sent(tcl_core *c, size_t n)
{
    size_t have = c->tx.len - c->tx.off;
    c->tx.off += n < have ? n : have;
}
