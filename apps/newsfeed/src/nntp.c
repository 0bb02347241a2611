/* The server side of an NNTP transit feed, sans I/O: bytes from the peer go
 * in, response bytes and articles come out, and the caller decides each
 * offer and article. Responses leave in command order, so a streaming peer
 * (RFC 4644) may pipeline as much as it likes; the machine simply stops
 * consuming while a decision or too much output is pending. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "nf_int.h"

enum { S_CMD, S_ARTICLE };
enum { A_BOL, A_DOT, A_DOTCR, A_MID };
enum { K_IHAVE, K_TAKETHIS };

struct nf_nntp {
    size_t max_article, max_output;
    int state;
    char line[NF_NNTP_MAX_CMD + 1];
    size_t line_len;
    bool line_long;
    /* the article being read */
    uint8_t *art;
    size_t art_len, art_cap;
    bool art_big;
    int art_at, art_kind;
    bool msgid_ok;
    char msgid[NF_NNTP_MAX_CMD];
    /* the decision waited for */
    nf_nntp_ev_type ev;
    /* output */
    char *out;
    size_t out_off, out_len, out_cap;
    bool closing;
    nf_nntp_stats st;
};

static int nf__out(nf_nntp *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int nf__out(nf_nntp *s, const char *fmt, ...)
{
    if (s->out_off && s->out_off == s->out_len)
        s->out_off = s->out_len = 0;
    for (;;) {
        size_t room = s->out_cap - s->out_len;
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(s->out + s->out_len, room, fmt, ap);
        va_end(ap);
        if (n < 0)
            return -EINVAL;
        if ((size_t)n < room) {
            s->out_len += (size_t)n;
            return 0;
        }
        if (s->out_off) { /* reclaim what was sent before growing */
            memmove(s->out, s->out + s->out_off, s->out_len - s->out_off);
            s->out_len -= s->out_off;
            s->out_off = 0;
            continue;
        }
        size_t nc = s->out_cap * 2 + (size_t)n + 1;
        char *no = realloc(s->out, nc);
        if (!no)
            return -ENOMEM;
        s->out = no;
        s->out_cap = nc;
    }
}

int nf_nntp_new(nf_nntp **out, const nf_nntp_opts *o)
{
    nf_nntp *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    s->max_article = o && o->max_article ? o->max_article : NF_DEFAULT_MAX_ARTICLE;
    s->max_output = o && o->max_output ? o->max_output : 65536;
    s->out_cap = 1024;
    s->out = malloc(s->out_cap);
    if (!s->out) {
        free(s);
        return -ENOMEM;
    }
    const char *g = o && o->greeting ? o->greeting : "Tern newsfeed ready (transit)";
    if (nf__out(s, "200 %.400s\r\n", g)) {
        nf_nntp_free(s);
        return -ENOMEM;
    }
    *out = s;
    return 0;
}

void nf_nntp_free(nf_nntp *s)
{
    if (!s)
        return;
    free(s->art);
    free(s->out);
    free(s);
}

size_t nf_nntp_output(const nf_nntp *s, const char **p)
{
    *p = s->out + s->out_off;
    return s->out_len - s->out_off;
}

void nf_nntp_output_done(nf_nntp *s, size_t n)
{
    size_t have = s->out_len - s->out_off;
    s->out_off += n < have ? n : have;
    if (s->out_off == s->out_len)
        s->out_off = s->out_len = 0;
}

int nf_nntp_closing(const nf_nntp *s)
{
    return s->closing;
}

void nf_nntp_get_stats(const nf_nntp *s, nf_nntp_stats *st)
{
    *st = s->st;
}

void nf_nntp_event(const nf_nntp *s, nf_nntp_ev *ev)
{
    memset(ev, 0, sizeof *ev);
    ev->type = s->ev;
    if (s->ev == NF_NNTP_EV_NONE)
        return;
    ev->msgid = s->msgid;
    if (s->ev == NF_NNTP_EV_ARTICLE || s->ev == NF_NNTP_EV_TAKETHIS) {
        ev->article = s->art;
        ev->article_len = s->art_len;
    }
}

int nf_nntp_decide(nf_nntp *s, nf_nntp_verdict v)
{
    const char *id = s->msgid;
    int rc;
    switch (s->ev) {
    case NF_NNTP_EV_NONE:
        return TERN_ESTATE;
    case NF_NNTP_EV_CHECK:
        if (v == NF_NNTP_WANT)
            rc = nf__out(s, "238 %s\r\n", id);
        else if (v == NF_NNTP_UNWANTED)
            rc = nf__out(s, "438 %s\r\n", id), s->st.rejected++;
        else if (v == NF_NNTP_DEFER)
            rc = nf__out(s, "431 %s\r\n", id), s->st.deferred++;
        else
            return -EINVAL;
        break;
    case NF_NNTP_EV_IHAVE:
        if (v == NF_NNTP_WANT) {
            rc = nf__out(s, "335 Send it; end with <CR-LF>.<CR-LF>\r\n");
            s->state = S_ARTICLE;
            s->art_kind = K_IHAVE;
            s->art_len = 0;
            s->art_big = false;
            s->art_at = A_BOL;
        } else if (v == NF_NNTP_UNWANTED) {
            rc = nf__out(s, "435 Duplicate\r\n"), s->st.rejected++;
        } else if (v == NF_NNTP_DEFER) {
            rc = nf__out(s, "436 Retry later\r\n"), s->st.deferred++;
        } else {
            return -EINVAL;
        }
        break;
    case NF_NNTP_EV_ARTICLE:
        if (v == NF_NNTP_ACCEPT)
            rc = nf__out(s, "235 Article transferred OK\r\n"), s->st.accepted++;
        else if (v == NF_NNTP_REJECT)
            rc = nf__out(s, "437 Article rejected; do not retry\r\n"), s->st.rejected++;
        else if (v == NF_NNTP_DEFER)
            rc = nf__out(s, "436 Transfer failed; try again later\r\n"), s->st.deferred++;
        else
            return -EINVAL;
        break;
    case NF_NNTP_EV_TAKETHIS:
        if (v == NF_NNTP_ACCEPT) {
            rc = nf__out(s, "239 %s\r\n", id), s->st.accepted++;
        } else if (v == NF_NNTP_REJECT) {
            rc = nf__out(s, "439 %s\r\n", id), s->st.rejected++;
        } else if (v == NF_NNTP_DEFER) {
            /* TAKETHIS has no "later" answer (RFC 4644): 439 would make the
             * peer drop the article, so close instead and let it requeue. */
            rc = nf__out(s, "400 Service temporarily unavailable; try again later\r\n");
            s->st.deferred++;
            s->closing = true;
        } else {
            return -EINVAL;
        }
        break;
    default:
        return TERN_ESTATE;
    }
    s->ev = NF_NNTP_EV_NONE;
    return rc;
}

/* The words of a command line: verb and up to two arguments. */
static int nf__split(char *line, char **w, int max)
{
    int n = 0;
    char *p = line;
    while (*p) {
        while (*p == ' ' || *p == '\t')
            *p++ = 0;
        if (!*p)
            break;
        if (n == max)
            return max + 1; /* too many */
        w[n++] = p;
        while (*p && *p != ' ' && *p != '\t')
            p++;
    }
    return n;
}

static bool nf__verb(const char *w, const char *v)
{
    return nf__ieq(w, strlen(w), v);
}

static int nf__command(nf_nntp *s, char *line, size_t n)
{
    s->st.commands++;
    if (s->line_long) {
        s->st.bad_commands++;
        return nf__out(s, "501 Command line too long (at most %d bytes)\r\n",
                       NF_NNTP_MAX_CMD);
    }
    if (memchr(line, '\0', n)) {
        s->st.bad_commands++;
        return nf__out(s, "501 NUL in command line\r\n");
    }
    char *w[3];
    int nw = nf__split(line, w, 2);
    if (nw == 0) {
        s->st.bad_commands++;
        return nf__out(s, "500 Empty command\r\n");
    }
    const char *verb = w[0];
    const char *arg = nw >= 2 ? w[1] : NULL;
    if (nf__verb(verb, "CAPABILITIES")) {
        if (nw > 2)
            goto syntax;
        return nf__out(s, "101 Capability list:\r\nVERSION 2\r\nIMPLEMENTATION Tern "
                          "newsfeed\r\nIHAVE\r\nSTREAMING\r\n.\r\n");
    }
    if (nf__verb(verb, "MODE")) {
        if (nw != 2)
            goto syntax;
        if (nf__verb(arg, "STREAM"))
            return nf__out(s, "203 Streaming permitted\r\n");
        if (nf__verb(arg, "READER")) {
            s->st.bad_commands++;
            return nf__out(s, "502 Transit service only; no reading here\r\n");
        }
        goto syntax;
    }
    if (nf__verb(verb, "QUIT")) {
        if (nw != 1)
            goto syntax;
        s->closing = true;
        return nf__out(s, "205 Bye\r\n");
    }
    if (nf__verb(verb, "HELP")) {
        return nf__out(s, "100 Commands:\r\n  CAPABILITIES\r\n  CHECK message-id\r\n"
                          "  HELP\r\n  IHAVE message-id\r\n  MODE STREAM\r\n  QUIT\r\n"
                          "  TAKETHIS message-id\r\n.\r\n");
    }
    bool check = nf__verb(verb, "CHECK"), ihave = nf__verb(verb, "IHAVE"),
         take = nf__verb(verb, "TAKETHIS");
    if (check || ihave || take) {
        if (nw != 2)
            goto syntax;
        s->st.offered++;
        size_t al = strlen(arg);
        bool ok = nf_msgid_valid(arg, al) != 0;
        memcpy(s->msgid, arg, al + 1);
        if (take) {
            /* The article follows whatever we think of the id: read it,
             * then answer 439 if the id was bad. */
            s->state = S_ARTICLE;
            s->art_kind = K_TAKETHIS;
            s->msgid_ok = ok;
            s->art_len = 0;
            s->art_big = false;
            s->art_at = A_BOL;
            return 0;
        }
        if (!ok) {
            s->st.bad_commands++;
            return nf__out(s, "501 Bad message-id\r\n");
        }
        s->ev = check ? NF_NNTP_EV_CHECK : NF_NNTP_EV_IHAVE;
        return 0;
    }
    s->st.bad_commands++;
    return nf__out(s, "500 Unknown command\r\n");
syntax:
    s->st.bad_commands++;
    return nf__out(s, "501 Syntax error\r\n");
}

static int nf__art_put(nf_nntp *s, const void *p, size_t n)
{
    if (s->art_big)
        return 0;
    size_t need;
    if (tern_ckd_add_size(&need, s->art_len, n) || need > s->max_article) {
        s->art_big = true; /* keep reading to the end, storing nothing */
        return 0;
    }
    if (need > s->art_cap) {
        size_t nc = (size_t)tern_ckd_grow(4096, need, s->max_article);
        uint8_t *na = realloc(s->art, nc);
        if (!na)
            return -ENOMEM;
        s->art = na;
        s->art_cap = nc;
    }
    memcpy(s->art + s->art_len, p, n);
    s->art_len = need;
    return 0;
}

/* The terminating dot line arrived. */
static int nf__art_end(nf_nntp *s)
{
    s->state = S_CMD;
    if (s->art_big) {
        s->st.too_big++;
        s->st.rejected++;
        if (s->art_kind == K_IHAVE)
            return nf__out(s, "437 Article too large (over %zu bytes)\r\n",
                           s->max_article);
        return nf__out(s, "439 %s\r\n", s->msgid);
    }
    if (s->art_kind == K_TAKETHIS && !s->msgid_ok) {
        s->st.bad_commands++;
        s->st.rejected++;
        return nf__out(s, "439 %s\r\n", s->msgid);
    }
    s->ev = s->art_kind == K_IHAVE ? NF_NNTP_EV_ARTICLE : NF_NNTP_EV_TAKETHIS;
    return 0;
}

/* Article bytes: lines as sent, a leading dot of a stuffed line removed,
 * the article over at a line of just "." (CRLF or bare LF). */
static int nf__article(nf_nntp *s, const uint8_t *in, size_t len, size_t *used)
{
    size_t i = 0;
    int rc = 0;
    while (i < len && rc == 0) {
        uint8_t c = in[i];
        switch (s->art_at) {
        case A_BOL:
            if (c == '.') {
                s->art_at = A_DOT;
                i++;
            } else {
                s->art_at = A_MID;
            }
            break;
        case A_DOT:
            if (c == '\r') {
                s->art_at = A_DOTCR;
                i++;
            } else if (c == '\n') {
                *used = i + 1;
                return nf__art_end(s);
            } else {
                /* ".." is a stuffed "."; a lone dot before text was not
                 * stuffed by the peer, and is kept as sent. */
                if (c != '.')
                    rc = nf__art_put(s, ".", 1);
                s->art_at = A_MID;
            }
            break;
        case A_DOTCR:
            if (c == '\n') {
                *used = i + 1;
                return nf__art_end(s);
            }
            rc = nf__art_put(s, ".\r", 2);
            s->art_at = A_MID;
            break;
        default: { /* the rest of a line, at memchr speed */
            const uint8_t *nl = memchr(in + i, '\n', len - i);
            size_t end = nl ? (size_t)(nl - in) + 1 : len;
            rc = nf__art_put(s, in + i, end - i);
            i = end;
            if (nl)
                s->art_at = A_BOL;
        }
        }
    }
    *used = i;
    return rc;
}

int nf_nntp_feed(nf_nntp *s, const void *data, size_t len, size_t *used)
{
    const uint8_t *in = data;
    size_t i = 0;
    int rc = 0;
    while (i < len && rc == 0) {
        if (s->ev != NF_NNTP_EV_NONE || s->closing ||
            s->out_len - s->out_off >= s->max_output)
            break;
        if (s->state == S_ARTICLE) {
            size_t u = 0;
            rc = nf__article(s, in + i, len - i, &u);
            i += u;
            continue;
        }
        const uint8_t *nl = memchr(in + i, '\n', len - i);
        size_t end = nl ? (size_t)(nl - in) : len;
        size_t n = end - i;
        if (!s->line_long && s->line_len + n <= NF_NNTP_MAX_CMD - 1) {
            memcpy(s->line + s->line_len, in + i, n);
            s->line_len += n;
        } else {
            s->line_long = true; /* drop the rest up to LF */
        }
        i = nl ? end + 1 : len;
        if (!nl)
            break;
        size_t ll = s->line_len;
        if (ll && s->line[ll - 1] == '\r')
            ll--;
        s->line[ll] = 0;
        rc = nf__command(s, s->line, ll);
        s->line_len = 0;
        s->line_long = false;
    }
    *used = i;
    return rc;
}
