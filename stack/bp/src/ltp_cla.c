/* The LTP convergence layer (see bp_ltp.h).
 *
 * Each transmission is one all-red block. The block is copied into the
 * engine (ltp_block_send), so an outduct can close while LTP still works on
 * its sessions: their tickets are then orphaned and the sessions cancelled.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "bp_ltp.h"

typedef struct lduct lduct;

/* One block in flight. */
typedef struct ticket {
    struct ticket *next, *prev;
    lduct *d; /* NULL once orphaned */
    uint64_t xmit, session;
} ticket;

struct lduct {
    bp_ltp_cla *c;
    bp_outduct *od;
    uint64_t peer;
    unsigned inflight;
    bool blocked;
};

struct bp_ltp_cla {
    bp_agent *a;
    ltp_engine *e;
    unsigned max_blocks;
    ticket *tickets; /* every ticket, orphans included */
    uint64_t green_ignored;
};

static void ticket_unlink(bp_ltp_cla *c, ticket *t)
{
    if (t->prev)
        t->prev->next = t->next;
    else
        c->tickets = t->next;
    if (t->next)
        t->next->prev = t->prev;
}

static int parse_engine(const char *s, uint64_t *v)
{
    if (!*s || strlen(s) > 20)
        return -EINVAL;
    uint64_t x = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9' || x > (UINT64_MAX - 9) / 10)
            return -EINVAL;
        x = x * 10 + (uint64_t)(*p - '0');
    }
    if (x == 0)
        return -EINVAL;
    *v = x;
    return 0;
}

static int open_duct(void *cla, bp_outduct *od, const char *name, const char *cmd,
                     void **duct)
{
    (void)cmd; /* ltpclo takes no arguments */
    bp_ltp_cla *c = cla;
    uint64_t peer;
    if (parse_engine(name, &peer))
        return -EINVAL;
    lduct *d = calloc(1, sizeof *d);
    if (!d)
        return -ENOMEM;
    d->c = c;
    d->od = od;
    d->peer = peer;
    *duct = d;
    return 0;
}

static void close_duct(void *cla, void *duct)
{
    bp_ltp_cla *c = cla;
    lduct *d = duct;
    /* Orphan first, cancel after: a cancel may report (and free the ticket)
     * from inside ltp_export_cancel. */
    size_t n = 0;
    for (ticket *t = c->tickets; t; t = t->next)
        if (t->d == d) {
            t->d = NULL; /* the agent forwards the bundle again */
            n++;
        }
    uint64_t *sessions = n ? malloc(n * sizeof *sessions) : NULL;
    size_t k = 0;
    for (ticket *t = c->tickets; t && sessions; t = t->next)
        if (!t->d && k < n)
            sessions[k++] = t->session;
    for (size_t i = 0; i < k; i++)
        ltp_export_cancel(c->e, sessions[i]);
    free(sessions);
    free(d);
}

static int send_bundle(void *cla, void *duct, const uint8_t *bundle, size_t len,
                       uint64_t xmit)
{
    bp_ltp_cla *c = cla;
    lduct *d = duct;
    if (d->inflight >= c->max_blocks) {
        d->blocked = true;
        return -EAGAIN;
    }
    ticket *t = calloc(1, sizeof *t);
    if (!t)
        return -ENOMEM;
    t->d = d;
    t->xmit = xmit;
    int rc = ltp_block_send(c->e, d->peer, BP_LTP_CLIENT, bundle, len, 0, t, &t->session);
    if (rc) {
        free(t);
        return rc;
    }
    t->next = c->tickets;
    if (c->tickets)
        c->tickets->prev = t;
    c->tickets = t;
    d->inflight++;
    return 0;
}

static const bp_cla_ops ltp_ops = {
    .protocol = "ltp",
    .outduct_open = open_duct,
    .outduct_close = close_duct,
    .send = send_bundle,
};

TERN_API int bp_ltp_cla_new(bp_agent *a, ltp_engine *e, unsigned max_blocks,
                            bp_ltp_cla **out)
{
    if (!a || !e)
        return -EINVAL;
    bp_ltp_cla *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    c->a = a;
    c->e = e;
    c->max_blocks = max_blocks ? max_blocks : 64;
    int rc = bp_cla_register(a, &ltp_ops, c);
    if (rc) {
        free(c);
        return rc;
    }
    *out = c;
    return 0;
}

TERN_API void bp_ltp_cla_free(bp_ltp_cla *c)
{
    if (!c)
        return;
    while (c->tickets) {
        ticket *t = c->tickets;
        ticket_unlink(c, t);
        free(t);
    }
    free(c);
}

/* A block's fate is known. */
static void finish(bp_ltp_cla *c, ticket *t, int result)
{
    lduct *d = t->d;
    ticket_unlink(c, t);
    uint64_t xmit = t->xmit;
    free(t);
    if (!d)
        return; /* orphaned: the agent has already taken the bundle back */
    d->inflight--;
    bp_outduct_result(d->od, xmit, result);
    if (d->blocked) {
        d->blocked = false;
        bp_outduct_ready(d->od);
    }
}

TERN_API int bp_ltp_cla_notice(bp_ltp_cla *c, const ltp_notice *n)
{
    switch (n->kind) {
    case LTP_RED_PART: {
        int rc = bp_agent_receive(c->a, n->data, n->len);
        /* Only a full store makes the peer keep its copy (the session is
         * cancelled and the block sent again later); a malformed block would
         * be malformed again, so it is claimed and dropped (counted). */
        return rc == TERN_EFULL || rc == -ENOMEM ? rc : 0;
    }
    case LTP_GREEN_SEG:
        c->green_ignored++;
        return 0;
    case LTP_EXPORT_DONE:
        finish(c, n->user, BP_XMIT_OK);
        return 0;
    case LTP_EXPORT_CANCELLED:
        finish(c, n->user, BP_XMIT_CANCELLED);
        return 0;
    default:
        return 0;
    }
}
