/* The client side of a feed into a news server. Commands are pipelined in
 * streaming mode; responses come back in command order, so a FIFO of what
 * was sent tells each response's meaning. An article leaves the machine
 * only with an outcome: taken, duplicate, rejected, or retry — anything
 * unexpected or a lost connection is retry, never a silent drop. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "nf_int.h"

enum { C_GREETING, C_MODE, C_CHECK, C_TAKETHIS, C_IHAVE, C_ARTICLE };

typedef struct nf__job {
    struct nf__job *next;
    uint64_t tag;
    char msgid[NF_NNTP_MAX_CMD];
    uint8_t *art;
    size_t len;
} nf__job;

typedef struct nf__sent {
    int cmd;
    nf__job *job;
} nf__sent;

struct nf_nntpc {
    nf_nntpc_opts o;
    bool ready, stream, closed;
    nf__job *q_head, *q_tail; /* offered, nothing sent yet */
    size_t njobs;             /* offered without an outcome */
    nf__sent *sent;           /* ring of commands awaiting a response */
    size_t s_head, s_n, s_cap;
    nf_nntpc_result *res; /* ring of outcomes */
    size_t r_head, r_n, r_cap;
    char line[NF_NNTP_MAX_CMD + 1];
    size_t line_len;
    bool line_long;
    char *out;
    size_t out_off, out_len, out_cap;
};

static int nf__put(nf_nntpc *c, const void *p, size_t n)
{
    if (c->out_off == c->out_len)
        c->out_off = c->out_len = 0;
    size_t need;
    if (tern_ckd_add_size(&need, c->out_len, n))
        return -ENOMEM;
    if (need > c->out_cap) {
        if (c->out_off) {
            memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
            c->out_len -= c->out_off;
            c->out_off = 0;
            return nf__put(c, p, n);
        }
        size_t nc = c->out_cap * 2 > need ? c->out_cap * 2 : need;
        char *no = realloc(c->out, nc);
        if (!no)
            return -ENOMEM;
        c->out = no;
        c->out_cap = nc;
    }
    memcpy(c->out + c->out_len, p, n);
    c->out_len += n;
    return 0;
}

static int nf__puts(nf_nntpc *c, const char *a, const char *b)
{
    int rc = nf__put(c, a, strlen(a));
    if (rc == 0 && b)
        rc = nf__put(c, b, strlen(b));
    return rc ? rc : nf__put(c, "\r\n", 2);
}

/* The article as NNTP data: CRLF line ends, leading dots doubled, a CRLF
 * before the terminating dot line. */
static int nf__put_article(nf_nntpc *c, const uint8_t *a, size_t n)
{
    size_t i = 0;
    int rc = 0;
    while (i < n && rc == 0) {
        const uint8_t *nl = memchr(a + i, '\n', n - i);
        size_t end = nl ? (size_t)(nl - a) : n;
        size_t body_end = end > i && a[end - 1] == '\r' ? end - 1 : end;
        if (a[i] == '.')
            rc = nf__put(c, ".", 1);
        if (rc == 0)
            rc = nf__put(c, a + i, body_end - i);
        if (rc == 0)
            rc = nf__put(c, "\r\n", 2);
        i = nl ? end + 1 : n;
    }
    return rc ? rc : nf__put(c, ".\r\n", 3);
}

static int nf__push_sent(nf_nntpc *c, int cmd, nf__job *j)
{
    if (c->s_n == c->s_cap) {
        size_t nc = c->s_cap ? c->s_cap * 2 : 16;
        nf__sent *ns = malloc(nc * sizeof *ns);
        if (!ns)
            return -ENOMEM;
        for (size_t i = 0; i < c->s_n; i++)
            ns[i] = c->sent[(c->s_head + i) % c->s_cap];
        free(c->sent);
        c->sent = ns;
        c->s_head = 0;
        c->s_cap = nc;
    }
    c->sent[(c->s_head + c->s_n++) % c->s_cap] = (nf__sent){cmd, j};
    return 0;
}

static int nf__outcome(nf_nntpc *c, nf__job *j, nf_nntpc_outcome o, int code,
                       const char *text)
{
    if (c->r_n == c->r_cap) {
        size_t nc = c->r_cap ? c->r_cap * 2 : 16;
        nf_nntpc_result *nr = malloc(nc * sizeof *nr);
        if (!nr)
            return -ENOMEM;
        for (size_t i = 0; i < c->r_n; i++)
            nr[i] = c->res[(c->r_head + i) % c->r_cap];
        free(c->res);
        c->res = nr;
        c->r_head = 0;
        c->r_cap = nc;
    }
    nf_nntpc_result *r = &c->res[(c->r_head + c->r_n++) % c->r_cap];
    r->tag = j->tag;
    r->outcome = o;
    r->code = code;
    snprintf(r->text, sizeof r->text, "%s", text);
    free(j->art);
    free(j);
    c->njobs--;
    return 0;
}

int nf_nntpc_new(nf_nntpc **out, const nf_nntpc_opts *o)
{
    nf_nntpc *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    if (o)
        c->o = *o;
    if (!c->o.max_inflight)
        c->o.max_inflight = 16;
    c->out_cap = 1024;
    c->out = malloc(c->out_cap); /* never NULL: nf_nntpc_output() points into it */
    if (!c->out || nf__push_sent(c, C_GREETING, NULL) != 0) {
        free(c->out);
        free(c);
        return -ENOMEM;
    }
    *out = c;
    return 0;
}

void nf_nntpc_free(nf_nntpc *c)
{
    if (!c)
        return;
    for (nf__job *j = c->q_head, *n; j; j = n) {
        n = j->next;
        free(j->art);
        free(j);
    }
    /* A job is in the ring at most once: a CHECK or IHAVE leaves it before
     * the TAKETHIS or the article goes in. */
    for (size_t i = 0; i < c->s_n; i++) {
        nf__job *j = c->sent[(c->s_head + i) % c->s_cap].job;
        if (j) {
            free(j->art);
            free(j);
        }
    }
    free(c->sent);
    free(c->res);
    free(c->out);
    free(c);
}

/* Sends what the mode and the in-flight limit allow. */
static int nf__pump(nf_nntpc *c)
{
    int rc = 0;
    while (rc == 0 && c->ready && !c->closed && c->q_head) {
        size_t limit = c->stream ? c->o.max_inflight : 1;
        if (c->s_n >= limit)
            break;
        nf__job *j = c->q_head;
        c->q_head = j->next;
        if (!c->q_head)
            c->q_tail = NULL;
        j->next = NULL;
        if (c->stream) {
            rc = nf__puts(c, "CHECK ", j->msgid);
            if (rc == 0)
                rc = nf__push_sent(c, C_CHECK, j);
        } else {
            rc = nf__puts(c, "IHAVE ", j->msgid);
            if (rc == 0)
                rc = nf__push_sent(c, C_IHAVE, j);
        }
    }
    return rc;
}

int nf_nntpc_offer(nf_nntpc *c, uint64_t tag, const char *msgid, const void *article,
                   size_t len)
{
    if (!nf_msgid_valid(msgid, strlen(msgid)))
        return -EINVAL;
    nf__job *j = calloc(1, sizeof *j);
    if (!j)
        return -ENOMEM;
    j->art = malloc(len ? len : 1);
    if (!j->art) {
        free(j);
        return -ENOMEM;
    }
    memcpy(j->art, article, len);
    j->len = len;
    j->tag = tag;
    snprintf(j->msgid, sizeof j->msgid, "%s", msgid);
    if (c->q_tail)
        c->q_tail->next = j;
    else
        c->q_head = j;
    c->q_tail = j;
    c->njobs++;
    if (c->closed) {
        nf_nntpc_abort(c);
        return 0;
    }
    return nf__pump(c);
}

void nf_nntpc_abort(nf_nntpc *c)
{
    c->closed = true;
    while (c->s_n) {
        nf__sent s = c->sent[c->s_head];
        c->s_head = (c->s_head + 1) % c->s_cap;
        c->s_n--;
        if (s.job)
            nf__outcome(c, s.job, NF_NNTPC_RETRY, 0, "connection ended");
    }
    while (c->q_head) {
        nf__job *j = c->q_head;
        c->q_head = j->next;
        nf__outcome(c, j, NF_NNTPC_RETRY, 0, "connection ended");
    }
    c->q_tail = NULL;
}

static int nf__response(nf_nntpc *c, const char *line)
{
    int code = -1;
    if (line[0] >= '1' && line[0] <= '5' && line[1] >= '0' && line[1] <= '9' &&
        line[2] >= '0' && line[2] <= '9' && (line[3] == ' ' || line[3] == 0))
        code = (line[0] - '0') * 100 + (line[1] - '0') * 10 + (line[2] - '0');
    if (c->s_n == 0 || code < 0 || code == 400 || code == 205) {
        /* Unsolicited, unparseable, or the server going away: nothing more
         * this connection says can be trusted to pair with our commands. */
        nf_nntpc_abort(c);
        return 0;
    }
    nf__sent s = c->sent[c->s_head];
    c->s_head = (c->s_head + 1) % c->s_cap;
    c->s_n--;
    nf__job *j = s.job;
    int rc = 0;
    switch (s.cmd) {
    case C_GREETING:
        if (code != 200 && code != 201) {
            nf_nntpc_abort(c);
            return 0;
        }
        if (c->o.no_stream) {
            c->ready = true;
        } else {
            rc = nf__puts(c, "MODE STREAM", NULL);
            if (rc == 0)
                rc = nf__push_sent(c, C_MODE, NULL);
        }
        break;
    case C_MODE:
        c->stream = code == 203;
        c->ready = true;
        break;
    case C_CHECK:
        if (code == 238) {
            rc = nf__puts(c, "TAKETHIS ", j->msgid);
            if (rc == 0)
                rc = nf__put_article(c, j->art, j->len);
            if (rc == 0)
                rc = nf__push_sent(c, C_TAKETHIS, j);
        } else {
            rc = nf__outcome(c, j, code == 438 ? NF_NNTPC_DUPLICATE : NF_NNTPC_RETRY,
                             code, line);
        }
        break;
    case C_TAKETHIS:
        rc = nf__outcome(c, j,
                         code == 239   ? NF_NNTPC_TAKEN
                         : code == 439 ? NF_NNTPC_REJECTED
                                       : NF_NNTPC_RETRY,
                         code, line);
        break;
    case C_IHAVE:
        if (code == 335) {
            rc = nf__put_article(c, j->art, j->len);
            if (rc == 0)
                rc = nf__push_sent(c, C_ARTICLE, j);
        } else {
            rc = nf__outcome(c, j,
                             code == 435   ? NF_NNTPC_DUPLICATE
                             : code == 437 ? NF_NNTPC_REJECTED
                                           : NF_NNTPC_RETRY,
                             code, line);
        }
        break;
    default: /* C_ARTICLE */
        rc = nf__outcome(c, j,
                         code == 235   ? NF_NNTPC_TAKEN
                         : code == 437 ? NF_NNTPC_REJECTED
                                       : NF_NNTPC_RETRY,
                         code, line);
        break;
    }
    if (code == 502 && s.cmd != C_MODE)
        nf_nntpc_abort(c); /* "service permanently unavailable" */
    return rc ? rc : nf__pump(c);
}

int nf_nntpc_feed(nf_nntpc *c, const void *data, size_t len, size_t *used)
{
    const uint8_t *in = data;
    size_t i = 0;
    int rc = 0;
    while (i < len && rc == 0 && !c->closed) {
        const uint8_t *nl = memchr(in + i, '\n', len - i);
        size_t end = nl ? (size_t)(nl - in) : len;
        size_t n = end - i;
        if (!c->line_long && c->line_len + n <= NF_NNTP_MAX_CMD) {
            memcpy(c->line + c->line_len, in + i, n);
            c->line_len += n;
        } else {
            c->line_long = true; /* a response line is short; keep the start */
        }
        i = nl ? end + 1 : len;
        if (!nl)
            break;
        size_t ll = c->line_len;
        if (ll && c->line[ll - 1] == '\r')
            ll--;
        c->line[ll] = 0;
        c->line_len = 0;
        c->line_long = false;
        rc = nf__response(c, c->line);
    }
    *used = c->closed ? len : i; /* after the end, the rest is ignored */
    return rc;
}

size_t nf_nntpc_output(const nf_nntpc *c, const char **p)
{
    *p = c->out + c->out_off;
    return c->out_len - c->out_off;
}

void nf_nntpc_output_done(nf_nntpc *c, size_t n)
{
    size_t have = c->out_len - c->out_off;
    c->out_off += n < have ? n : have;
}

int nf_nntpc_next(nf_nntpc *c, nf_nntpc_result *r)
{
    if (!c->r_n)
        return TERN_EEND;
    *r = c->res[c->r_head];
    c->r_head = (c->r_head + 1) % c->r_cap;
    c->r_n--;
    return 0;
}

int nf_nntpc_closed(const nf_nntpc *c)
{
    return c->closed;
}

size_t nf_nntpc_pending(const nf_nntpc *c)
{
    return c->njobs;
}
