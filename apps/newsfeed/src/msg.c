/* RFC 5536 articles: the header/body split and the fields newsfeed needs.
 * Strict where a wrong answer would misfile or misroute an article (the
 * Message-ID, the newsgroups), lenient about everything else. */
#include <errno.h>
#include <stdio.h>

#include "nf_int.h"

#define NF__MSGID_MAX 250 /* RFC 5536 3.1.3 */

int nf_msgid_valid(const char *s, size_t n)
{
    if (n < 5 || n > NF__MSGID_MAX || s[0] != '<' || s[n - 1] != '>')
        return 0;
    size_t at = 0;
    for (size_t i = 1; i + 1 < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 33 || c > 126 || c == '<' || c == '>')
            return 0;
        if (c == '@')
            at = i;
    }
    /* Both sides of the (last) '@' non-empty. */
    return at > 1 && at < n - 2;
}

int nf_group_valid(const char *s, size_t n)
{
    if (n == 0)
        return 0;
    size_t comp = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '.') {
            if (comp == 0)
                return 0; /* empty component: "a..b", ".a" */
            comp = 0;
            continue;
        }
        if (!(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') &&
            !(c >= '0' && c <= '9') && c != '+' && c != '-' && c != '_')
            return 0;
        comp++;
    }
    return comp > 0;
}

static bool nf__wsp(char c)
{
    return c == ' ' || c == '\t';
}

/* One header field while walking: its name and its raw value's extent. */
typedef struct nf__field {
    const char *name;
    size_t name_len;
    nf_slice value; /* trimmed, continuation lines included */
} nf__field;

/* Walks header fields of text[0..len). Calls back per field; stops at the
 * empty line. Returns 0 and sets *body_off, or TERN_EMALFORMED with err. */
typedef int (*nf__field_fn)(void *ctx, const nf__field *f, unsigned line, nf_err *err);

static nf_slice nf__trim(const char *p, size_t n)
{
    while (n && (nf__wsp(*p) || *p == '\r' || *p == '\n'))
        p++, n--;
    while (n && (nf__wsp(p[n - 1]) || p[n - 1] == '\r' || p[n - 1] == '\n'))
        n--;
    return (nf_slice){p, n};
}

static int nf__walk(const char *text, size_t len, nf__field_fn fn, void *ctx,
                    size_t *body_off, nf_err *err)
{
    size_t pos = 0;
    unsigned line = 0;
    nf__field cur = {0};
    unsigned cur_line = 0;
    const char *val_start = NULL;
    size_t val_end = 0;
    int rc;
    for (;;) {
        line++;
        if (pos >= len)
            return nf__fail(err, NF_R_BAD_ARTICLE, TERN_EMALFORMED,
                            "line %u: the header ends without an empty line", line);
        const char *nl = memchr(text + pos, '\n', len - pos);
        if (!nl)
            return nf__fail(err, NF_R_BAD_ARTICLE, TERN_EMALFORMED,
                            "line %u: the header ends without an empty line", line);
        size_t eol = (size_t)(nl - text);
        size_t end = eol > pos && text[eol - 1] == '\r' ? eol - 1 : eol;
        size_t n = end - pos;
        const char *l = text + pos;
        if (n > NF_MSG_MAX_LINE - 2)
            return nf__fail(err, NF_R_BAD_ARTICLE, TERN_EMALFORMED,
                            "line %u: header line of %zu bytes (at most %d)", line, n,
                            NF_MSG_MAX_LINE - 2);
        if (memchr(l, '\0', n) || memchr(l, '\r', n))
            return nf__fail(err, NF_R_BAD_ARTICLE, TERN_EMALFORMED,
                            "line %u: NUL or bare CR in a header line", line);
        if (n == 0 || nf__wsp(l[0])) {
            if (n > 0 && !cur.name)
                return nf__fail(err, NF_R_BAD_ARTICLE, TERN_EMALFORMED,
                                "line %u: continuation line before any header field",
                                line);
            if (n > 0) { /* folded: the value runs on */
                val_end = end;
                pos = eol + 1;
                continue;
            }
        }
        /* A new field (or the end): finish the previous one. */
        if (cur.name) {
            cur.value = nf__trim(val_start, val_end - (size_t)(val_start - text));
            if ((rc = fn(ctx, &cur, cur_line, err)) != 0)
                return rc;
            cur.name = NULL;
        }
        if (n == 0) {
            if (line == 1)
                return nf__fail(err, NF_R_BAD_ARTICLE, TERN_EMALFORMED,
                                "line 1: the article has no header");
            *body_off = eol + 1;
            return 0;
        }
        const char *colon = memchr(l, ':', n);
        if (!colon || colon == l)
            return nf__fail(err, NF_R_BAD_ARTICLE, TERN_EMALFORMED,
                            "line %u: header line without a field name and colon", line);
        for (const char *c = l; c < colon; c++)
            if ((unsigned char)*c < 33 || (unsigned char)*c > 126)
                return nf__fail(err, NF_R_BAD_ARTICLE, TERN_EMALFORMED,
                                "line %u: bad character in field name", line);
        cur.name = l;
        cur.name_len = (size_t)(colon - l);
        cur_line = line;
        val_start = colon + 1;
        val_end = end;
        pos = eol + 1;
    }
}

enum { F_DATE, F_FROM, F_MSGID, F_NEWSGROUPS, F_PATH, F_SUBJECT, F_REFERENCES, F_N };
static const char *const nf__required[F_N] = {
    "Date", "From", "Message-ID", "Newsgroups", "Path", "Subject", "References"};

typedef struct nf__parse_ctx {
    nf_msg *m;
    unsigned seen[F_N];
} nf__parse_ctx;

static nf_slice *nf__slot(nf_msg *m, int i)
{
    switch (i) {
    case F_DATE:
        return &m->date;
    case F_FROM:
        return &m->from;
    case F_MSGID:
        return &m->message_id;
    case F_NEWSGROUPS:
        return &m->newsgroups;
    case F_PATH:
        return &m->path;
    case F_SUBJECT:
        return &m->subject;
    default:
        return &m->references;
    }
}

/* Splits the next comma-separated item of a Newsgroups value at *pos. */
static bool nf__next_group(nf_slice v, size_t *pos, nf_slice *g)
{
    while (*pos < v.n) {
        size_t s = *pos;
        const char *c = memchr(v.p + s, ',', v.n - s);
        size_t e = c ? (size_t)(c - v.p) : v.n;
        *pos = c ? e + 1 : v.n;
        *g = nf__trim(v.p + s, e - s);
        return true;
    }
    return false;
}

static int nf__on_field(void *vctx, const nf__field *f, unsigned line, nf_err *err)
{
    nf__parse_ctx *ctx = vctx;
    for (int i = 0; i < F_N; i++) {
        if (!nf__ieq(f->name, f->name_len, nf__required[i]))
            continue;
        if (ctx->seen[i]++)
            return nf__fail(err, NF_R_BAD_ARTICLE, TERN_EMALFORMED,
                            "line %u: a second %s header", line, nf__required[i]);
        if (f->value.n == 0 && i != F_REFERENCES)
            return nf__fail(err, NF_R_BAD_ARTICLE, TERN_EMALFORMED,
                            "line %u: empty %s header", line, nf__required[i]);
        *nf__slot(ctx->m, i) = f->value;
        if (i == F_MSGID && !nf_msgid_valid(f->value.p, f->value.n))
            return nf__fail(err, NF_R_BAD_ARTICLE, TERN_EMALFORMED,
                            "line %u: Message-ID is not <left@right> of printable ASCII "
                            "up to %d bytes",
                            line, NF__MSGID_MAX);
        if (i == F_NEWSGROUPS) {
            size_t pos = 0, n = 0;
            nf_slice g;
            while (nf__next_group(f->value, &pos, &g)) {
                if (!nf_group_valid(g.p, g.n))
                    return nf__fail(err, NF_R_BAD_ARTICLE, TERN_EMALFORMED,
                                    "line %u: \"%.*s\" is not a newsgroup name", line,
                                    (int)(g.n > 80 ? 80 : g.n), g.p);
                n++;
            }
            ctx->m->ngroups = n;
        }
        if (i == F_PATH) {
            for (size_t k = 0; k < f->value.n; k++)
                if (nf__wsp(f->value.p[k]) || f->value.p[k] == '\n')
                    return nf__fail(err, NF_R_BAD_ARTICLE, TERN_EMALFORMED,
                                    "line %u: white space inside Path", line);
        }
        return 0;
    }
    return 0;
}

int nf_msg_parse(const void *article, size_t len, nf_msg *m, nf_err *err)
{
    memset(m, 0, sizeof *m);
    m->text = article;
    m->len = len;
    nf__parse_ctx ctx = {.m = m};
    size_t body_off = 0;
    int rc = nf__walk(article, len, nf__on_field, &ctx, &body_off, err);
    if (rc) {
        memset(m, 0, sizeof *m);
        return rc;
    }
    for (int i = 0; i < F_REFERENCES; i++)
        if (!ctx.seen[i]) {
            memset(m, 0, sizeof *m);
            return nf__fail(err, NF_R_BAD_ARTICLE, TERN_EMALFORMED,
                            "no %s header (RFC 5536 requires one)", nf__required[i]);
        }
    m->text = article;
    m->len = len;
    m->header_len = body_off;
    m->body_off = body_off;
    m->body_len = len - body_off;
    const char *b = (const char *)article + body_off;
    size_t lines = 0;
    for (const char *p = b; (p = memchr(p, '\n', (size_t)(b + m->body_len - p))); p++)
        lines++;
    if (m->body_len && b[m->body_len - 1] != '\n')
        lines++;
    m->body_lines = lines;
    return 0;
}

int nf_msg_group(const nf_msg *m, size_t i, char *buf, size_t cap)
{
    size_t pos = 0, k = 0;
    nf_slice g;
    while (nf__next_group(m->newsgroups, &pos, &g)) {
        if (k++ != i)
            continue;
        if (g.n >= cap)
            return TERN_ENOSPACE;
        memcpy(buf, g.p, g.n);
        buf[g.n] = 0;
        return 0;
    }
    return TERN_ENOTFOUND;
}

typedef struct nf__find_ctx {
    const char *name;
    nf_slice *v;
    bool found;
} nf__find_ctx;

static int nf__on_find(void *vctx, const nf__field *f, unsigned line, nf_err *err)
{
    nf__find_ctx *ctx = vctx;
    if (!ctx->found && nf__ieq(f->name, f->name_len, ctx->name)) {
        *ctx->v = f->value;
        ctx->found = true;
    }
    return 0;
}

int nf_msg_field(const nf_msg *m, const char *name, nf_slice *v)
{
    nf__find_ctx ctx = {name, v, false};
    size_t body_off;
    if (!m->text)
        return -EINVAL;
    int rc = nf__walk(m->text, m->header_len, nf__on_find, &ctx, &body_off, NULL);
    if (rc)
        return rc;
    return ctx.found ? 0 : TERN_ENOTFOUND;
}
