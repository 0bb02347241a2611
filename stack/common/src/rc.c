/* ION admin-file lexer. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tern/rc.h"

struct rc_diag {
    char *msg;
    unsigned line;
    int is_error;
};

struct tern_rc {
    char *file;
    tern_rc_cmd *cmds;
    unsigned char *outside; /* per command: seen outside any section */
    size_t ncmds, capcmds, capoutside;
    struct rc_diag *diags;
    size_t ndiags, capdiags, nerrors;
    char **sections; /* interned section names, owned here */
    size_t nsections;
    int oom;
};

static int rc_grow(void **arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t ncap = *cap ? *cap * 2 : 16;
    while (ncap < need)
        ncap *= 2;
    void *p = realloc(*arr, ncap * elem);
    if (!p)
        return -ENOMEM;
    *arr = p;
    *cap = ncap;
    return 0;
}

__attribute__((format(printf, 4, 5))) static void
rc_diag(tern_rc *rc, unsigned line, int is_error, const char *fmt, ...)
{
    char body[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof body, fmt, ap);
    va_end(ap);
    if (rc_grow((void **)&rc->diags, &rc->capdiags, rc->ndiags + 1, sizeof *rc->diags)) {
        rc->oom = 1;
        return;
    }
    char *msg;
    if (asprintf(&msg, "%s:%u: %s", rc->file, line, body) < 0) {
        rc->oom = 1;
        return;
    }
    rc->diags[rc->ndiags].msg = msg;
    rc->diags[rc->ndiags].line = line;
    rc->diags[rc->ndiags].is_error = is_error;
    rc->ndiags++;
    rc->nerrors += is_error != 0;
}

static const char *rc_intern(tern_rc *rc, const char *s, size_t n)
{
    for (size_t i = 0; i < rc->nsections; i++)
        if (strlen(rc->sections[i]) == n && memcmp(rc->sections[i], s, n) == 0)
            return rc->sections[i];
    char **p = realloc(rc->sections, (rc->nsections + 1) * sizeof *p);
    if (!p)
        return NULL;
    rc->sections = p;
    if (!(p[rc->nsections] = strndup(s, n)))
        return NULL;
    return p[rc->nsections++];
}

static int rc_isspace(char c)
{
    return c == ' ' || c == '\t';
}

/* Recognises "##begin X", "## begin  X", "## end X". Returns 1 begin, 2 end,
 * 0 if the line is an ordinary comment; the name goes to *name and *nlen. */
static int rc_marker(const char *p, const char *end, const char **name, size_t *nlen)
{
    if (end - p < 2 || p[0] != '#' || p[1] != '#')
        return 0;
    p += 2;
    while (p < end && rc_isspace(*p))
        p++;
    int kind;
    if (end - p >= 5 && memcmp(p, "begin", 5) == 0) {
        kind = 1;
        p += 5;
    } else if (end - p >= 3 && memcmp(p, "end", 3) == 0) {
        kind = 2;
        p += 3;
    } else {
        return 0;
    }
    if (p < end && !rc_isspace(*p))
        return 0; /* "##beginning of file" is a comment */
    while (p < end && rc_isspace(*p))
        p++;
    const char *n = p;
    while (p < end && !rc_isspace(*p))
        p++;
    *name = n;
    *nlen = (size_t)(p - n);
    while (p < end && rc_isspace(*p))
        p++;
    if (p != end)
        *nlen = (size_t)-1; /* trailing words: malformed marker */
    return kind;
}

/* Splits one line into words. Returns 0 and a command, 1 for a blank or
 * comment line, or -1 after logging a diagnostic. */
static int rc_words(tern_rc *rc, unsigned lineno, const char *p, const char *end,
                    const char *section, int outside)
{
    size_t len = (size_t)(end - p);
    /* argv pointers then the words themselves, in one block. */
    size_t maxwords = len / 2 + 2;
    char *block = malloc(maxwords * sizeof(char *) + len + 1);
    if (!block) {
        rc->oom = 1;
        return -1;
    }
    char **argv = (char **)block;
    char *out = block + maxwords * sizeof(char *);
    int argc = 0;
    const char *q = p;
    while (q < end) {
        while (q < end && rc_isspace(*q))
            q++;
        if (q == end || *q == '#')
            break;
        argv[argc++] = out;
        while (q < end && !rc_isspace(*q)) {
            if (*q == '\'') {
                const char *start = q++;
                while (q < end && *q != '\'')
                    *out++ = *q++;
                if (q == end) {
                    rc_diag(rc, lineno, 1,
                            "unterminated quoted string starting at column %zu; "
                            "expected a closing ' before the end of the line",
                            (size_t)(start - p) + 1);
                    free(block);
                    return -1;
                }
                q++;
            } else {
                *out++ = *q++;
            }
        }
        *out++ = '\0';
    }
    if (argc == 0) {
        free(block);
        return 1;
    }
    argv[argc] = NULL;
    if (rc_grow((void **)&rc->cmds, &rc->capcmds, rc->ncmds + 1, sizeof *rc->cmds) ||
        rc_grow((void **)&rc->outside, &rc->capoutside, rc->ncmds + 1, 1)) {
        free(block);
        rc->oom = 1;
        return -1;
    }
    rc->outside[rc->ncmds] = (unsigned char)outside;
    tern_rc_cmd *c = &rc->cmds[rc->ncmds++];
    c->file = rc->file;
    c->line = lineno;
    c->section = section;
    c->argc = argc;
    c->argv = argv;
    return 0;
}

/* Control characters (other than tab and a trailing CR) have no place in an
 * admin file; they usually mean a binary or mis-encoded file. */
static int rc_check_chars(tern_rc *rc, unsigned lineno, const char *p, const char *end)
{
    for (const char *q = p; q < end; q++) {
        unsigned char ch = (unsigned char)*q;
        if ((ch < 0x20 && ch != '\t') || ch == 0x7f) {
            rc_diag(rc, lineno, 1,
                    "control character 0x%02x at column %zu; expected printable text", ch,
                    (size_t)(q - p) + 1);
            return -1;
        }
    }
    return 0;
}

TERN_API int tern_rc_parse(tern_rc **out, const char *name, const char *text, size_t len,
                           const char *default_section)
{
    tern_rc *rc = calloc(1, sizeof *rc);
    if (!rc)
        return -ENOMEM;
    rc->file = strdup(name ? name : "<input>");
    if (!rc->file)
        goto oom;
    const char *dflt = NULL;
    if (default_section &&
        !(dflt = rc_intern(rc, default_section, strlen(default_section))))
        goto oom;

    const char *cur = NULL; /* open section */
    unsigned cur_line = 0, lineno = 0;
    int have_markers = 0;
    const char *p = text, *tend = text + len;
    while (p < tend && !rc->oom) {
        const char *eol = memchr(p, '\n', (size_t)(tend - p));
        const char *next = eol ? eol + 1 : tend;
        const char *e = eol ? eol : tend;
        lineno++;
        if (e > p && e[-1] == '\r')
            e--;
        if ((size_t)(e - p) > TERN_RC_MAX_LINE) {
            rc_diag(rc, lineno, 1, "line is %zu bytes long; expected at most %d",
                    (size_t)(e - p), TERN_RC_MAX_LINE);
            p = next;
            continue;
        }
        if (rc_check_chars(rc, lineno, p, e)) {
            p = next;
            continue;
        }
        const char *s = p;
        while (s < e && rc_isspace(*s))
            s++;
        const char *mname;
        size_t mlen;
        int kind = rc_marker(s, e, &mname, &mlen);
        if (kind == 1 || kind == 2) {
            /* Only a begin marker makes this a sectioned host.rc. */
            have_markers |= kind == 1;
            if (mlen == 0 || mlen == (size_t)-1) {
                rc_diag(rc, lineno, 1,
                        "malformed section marker; expected '## %s <name>'",
                        kind == 1 ? "begin" : "end");
            } else if (kind == 1 && cur) {
                rc_diag(rc, lineno, 1,
                        "'## begin %.*s' inside section %s (begun at line %u); "
                        "expected '## end %s' first",
                        (int)mlen, mname, cur, cur_line, cur);
            } else if (kind == 1) {
                if (!(cur = rc_intern(rc, mname, mlen)))
                    goto oom;
                cur_line = lineno;
            } else if (!cur) {
                rc_diag(rc, lineno, 1,
                        "'## end %.*s' outside any section; expected '## begin %.*s' "
                        "before it",
                        (int)mlen, mname, (int)mlen, mname);
            } else if (strlen(cur) != mlen || memcmp(cur, mname, mlen) != 0) {
                rc_diag(rc, lineno, 1,
                        "'## end %.*s' closes section %s (begun at line %u); expected "
                        "'## end %s'",
                        (int)mlen, mname, cur, cur_line, cur);
            } else {
                cur = NULL;
            }
        } else {
            rc_words(rc, lineno, s, e, cur ? cur : dflt, cur == NULL);
        }
        p = next;
    }
    if (rc->oom)
        goto oom;
    if (cur)
        rc_diag(rc, lineno, 1, "section %s begun at line %u has no '## end %s'", cur,
                cur_line, cur);

    if (have_markers) {
        /* ionstart runs only what is inside sections; say what is skipped. */
        size_t w = 0;
        for (size_t i = 0; i < rc->ncmds; i++) {
            tern_rc_cmd *c = &rc->cmds[i];
            if (rc->outside[i]) {
                rc_diag(rc, c->line, 0,
                        "command '%s' is outside any '## begin' section; ignored",
                        c->argv[0]);
                free(c->argv);
            } else {
                rc->cmds[w++] = *c;
            }
        }
        rc->ncmds = w;
        /* Those warnings were appended late: restore line order (stable). */
        for (size_t i = 1; i < rc->ndiags; i++) {
            struct rc_diag d = rc->diags[i];
            size_t j = i;
            for (; j > 0 && rc->diags[j - 1].line > d.line; j--)
                rc->diags[j] = rc->diags[j - 1];
            rc->diags[j] = d;
        }
    }
    if (rc->oom)
        goto oom;
    *out = rc;
    return rc->nerrors ? TERN_ESYNTAX : 0;
oom:
    tern_rc_free(rc);
    return -ENOMEM;
}

TERN_API int tern_rc_load(tern_rc **out, const char *path, const char *default_section)
{
    int fd, rc;
    struct stat st;
    char *buf = NULL;
    size_t have = 0;

    do
        fd = open(path, O_RDONLY | O_CLOEXEC);
    while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return -errno;
    if (fstat(fd, &st) < 0) {
        rc = -errno;
        goto out_close;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
        goto out_close;
    }
    buf = malloc((size_t)st.st_size + 1);
    if (!buf) {
        rc = -ENOMEM;
        goto out_close;
    }
    while (have < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + have, (size_t)st.st_size - have);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = -errno;
            goto out_free;
        }
        if (n == 0)
            break; /* file shrank while we read it: parse what is there */
        have += (size_t)n;
    }
    rc = tern_rc_parse(out, path, buf, have, default_section);
out_free:
    free(buf);
out_close:
    close(fd);
    return rc;
}

TERN_API size_t tern_rc_count(const tern_rc *rc)
{
    return rc->ncmds;
}

TERN_API const tern_rc_cmd *tern_rc_at(const tern_rc *rc, size_t i)
{
    return i < rc->ncmds ? &rc->cmds[i] : NULL;
}

TERN_API size_t tern_rc_diag_count(const tern_rc *rc)
{
    return rc->ndiags;
}

TERN_API const char *tern_rc_diag_at(const tern_rc *rc, size_t i, int *is_error)
{
    if (i >= rc->ndiags)
        return NULL;
    if (is_error)
        *is_error = rc->diags[i].is_error;
    return rc->diags[i].msg;
}

TERN_API size_t tern_rc_error_count(const tern_rc *rc)
{
    return rc->nerrors;
}

TERN_API void tern_rc_free(tern_rc *rc)
{
    if (!rc)
        return;
    for (size_t i = 0; i < rc->ncmds; i++)
        free(rc->cmds[i].argv);
    for (size_t i = 0; i < rc->ndiags; i++)
        free(rc->diags[i].msg);
    for (size_t i = 0; i < rc->nsections; i++)
        free(rc->sections[i]);
    free(rc->cmds);
    free(rc->outside);
    free(rc->diags);
    free(rc->sections);
    free(rc->file);
    free(rc);
}
