/* The newsfeed configuration file: one command per line in ION's rc
 * lexical syntax (tern/rc.h: words, quotes, '#' comments), so errors come
 * out as "file:line: what was wrong" like every other Tern config. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <sodium.h>

#include "nf_int.h"
#include "tern/rc.h"

typedef struct nf__map {
    char *pattern; /* "comp.lang.c", "comp.*" or "*" */
    uint32_t imc;
} nf__map;

struct nf_config {
    char publisher[NF_PUBLISHER_MAX + 1];
    uint8_t sk[NF_SECRETKEY_BYTES];
    bool have_sk;
    nf_trust *trust;
    char *spool, *state, *nntp_listen;
    nf_limits lim;
    int level;
    nf__map *maps;
    size_t nmaps;
    uint32_t *imcs;
    size_t nimcs;
    char **diags;
    size_t ndiags;
    size_t errors;
};

static void nf__diag(nf_config *c, const char *file, unsigned line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void nf__diag(nf_config *c, const char *file, unsigned line, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    c->errors++;
    char **nd = realloc(c->diags, (c->ndiags + 1) * sizeof *nd);
    if (!nd)
        return; /* the error still counts */
    c->diags = nd;
    size_t n = strlen(file) + strlen(msg) + 24;
    if ((nd[c->ndiags] = malloc(n)) != NULL) {
        snprintf(nd[c->ndiags], n, "%s:%u: %s", file, line, msg);
        c->ndiags++;
    }
}

static char *nf__join(const char *base, const char *p)
{
    if (p[0] == '/' || !base || !*base)
        return strdup(p);
    size_t n = strlen(base) + strlen(p) + 2;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s/%s", base, p);
    return s;
}

/* "123", "64k", "4M": bytes, 1..2^32-1. */
static bool nf__size(const char *s, uint32_t *out)
{
    char *end;
    if (*s < '0' || *s > '9')
        return false;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno)
        return false;
    uint64_t mul = 1;
    if (*end == 'k' || *end == 'K')
        mul = 1024, end++;
    else if (*end == 'm' || *end == 'M')
        mul = 1024 * 1024, end++;
    uint64_t r;
    if (*end || tern_ckd_mul(&r, v, mul) || r == 0 || r > UINT32_MAX)
        return false;
    *out = (uint32_t)r;
    return true;
}

static bool nf__imc(const char *s, uint32_t *out)
{
    if (strncmp(s, "imc:", 4) == 0)
        s += 4;
    if (*s < '0' || *s > '9')
        return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v == 0 || v > UINT32_MAX)
        return false; /* imc group 0 is the agent's own */
    *out = (uint32_t)v;
    return true;
}

static bool nf__pattern_valid(const char *p)
{
    size_t n = strlen(p);
    if (n == 1 && p[0] == '*')
        return true;
    if (n > 2 && p[n - 1] == '*' && p[n - 2] == '.')
        return nf_group_valid(p, n - 2);
    return nf_group_valid(p, n);
}

static bool nf__pattern_match(const char *pat, const char *g)
{
    size_t n = strlen(pat);
    if (n == 1 && pat[0] == '*')
        return true;
    if (n > 2 && pat[n - 1] == '*') /* "comp.*": comp.x and below */
        return strncmp(g, pat, n - 1) == 0 && g[n - 1] != 0;
    return strcmp(pat, g) == 0;
}

static int nf__set_path(nf_config *c, char **slot, const tern_rc_cmd *cmd,
                        const char *base)
{
    if (*slot) {
        nf__diag(c, cmd->file, cmd->line, "%s given twice", cmd->argv[0]);
        return 0;
    }
    *slot = nf__join(base, cmd->argv[1]);
    return *slot ? 0 : -ENOMEM;
}

static int nf__command(nf_config *c, const tern_rc_cmd *cmd, const char *base,
                       bool *seen_max_dec)
{
    const char *name = cmd->argv[0];
    static const struct {
        const char *name;
        int args;
        const char *usage;
    } cmds[] = {
        {"publisher", 1, "publisher <id>"},
        {"secret-key", 1, "secret-key <file>"},
        {"trust", 2, "trust <publisher-id> <public key file or 64 hex digits>"},
        {"group", 2, "group <newsgroup | prefix.* | *> <imc group number>"},
        {"spool", 1, "spool <directory>"},
        {"state", 1, "state <file>"},
        {"nntp-listen", 1, "nntp-listen <host:port>"},
        {"max-article-size", 1, "max-article-size <bytes[k|M]>"},
        {"max-decompressed-size", 1, "max-decompressed-size <bytes[k|M]>"},
        {"compression-level", 1, "compression-level <0-9>"},
    };
    size_t k = 0, nk = sizeof cmds / sizeof cmds[0];
    while (k < nk && strcmp(cmds[k].name, name) != 0)
        k++;
    if (k == nk) {
        nf__diag(c, cmd->file, cmd->line,
                 "unknown command '%s'; expected publisher, secret-key, trust, group, "
                 "spool, state, nntp-listen, max-article-size, max-decompressed-size or "
                 "compression-level",
                 name);
        return 0;
    }
    if (cmd->argc - 1 != cmds[k].args) {
        nf__diag(c, cmd->file, cmd->line, "%s takes %d argument%s, got %d; expected '%s'",
                 name, cmds[k].args, cmds[k].args == 1 ? "" : "s", cmd->argc - 1,
                 cmds[k].usage);
        return 0;
    }
    const char *a1 = cmd->argv[1], *a2 = cmd->argc > 2 ? cmd->argv[2] : NULL;
    nf_err e;
    if (strcmp(name, "publisher") == 0) {
        if (c->publisher[0])
            nf__diag(c, cmd->file, cmd->line, "publisher given twice");
        else if (!nf__publisher_valid(a1, strlen(a1)))
            nf__diag(
                c, cmd->file, cmd->line,
                "bad publisher ID '%s'; expected 1-%d letters, digits, '.', '-', '_'", a1,
                NF_PUBLISHER_MAX);
        else
            snprintf(c->publisher, sizeof c->publisher, "%s", a1);
    } else if (strcmp(name, "secret-key") == 0) {
        char *p = nf__join(base, a1);
        if (!p)
            return -ENOMEM;
        if (c->have_sk)
            nf__diag(c, cmd->file, cmd->line, "secret-key given twice");
        else if (nf_key_read_secret(p, c->sk, &e) != 0)
            nf__diag(c, cmd->file, cmd->line, "%s", e.text);
        else
            c->have_sk = true;
        free(p);
    } else if (strcmp(name, "trust") == 0) {
        uint8_t pk[NF_PUBLICKEY_BYTES];
        size_t n2 = strlen(a2);
        char *p =
            n2 == 64 && a2[0] != '/' && a2[0] != '.' ? strdup(a2) : nf__join(base, a2);
        if (!p)
            return -ENOMEM;
        int rc = nf_key_read_public(p, pk, &e);
        free(p);
        if (!nf__publisher_valid(a1, strlen(a1)))
            nf__diag(c, cmd->file, cmd->line, "bad publisher ID '%s'", a1);
        else if (rc)
            nf__diag(c, cmd->file, cmd->line, "%s", e.text);
        else if ((rc = nf_trust_add(c->trust, a1, pk)) == TERN_EEXIST)
            nf__diag(c, cmd->file, cmd->line, "key already trusted for %s", a1);
        else if (rc)
            return rc;
    } else if (strcmp(name, "group") == 0) {
        uint32_t imc;
        if (!nf__pattern_valid(a1)) {
            nf__diag(c, cmd->file, cmd->line,
                     "bad newsgroup pattern '%s'; expected a newsgroup name, "
                     "'prefix.*' or '*'",
                     a1);
            return 0;
        }
        if (!nf__imc(a2, &imc)) {
            nf__diag(c, cmd->file, cmd->line,
                     "bad imc group '%s'; expected a number 1..4294967295 (or imc:N)",
                     a2);
            return 0;
        }
        nf__map *nm = realloc(c->maps, (c->nmaps + 1) * sizeof *nm);
        if (!nm)
            return -ENOMEM;
        c->maps = nm;
        if (!(nm[c->nmaps].pattern = strdup(a1)))
            return -ENOMEM;
        nm[c->nmaps++].imc = imc;
        size_t i = 0;
        while (i < c->nimcs && c->imcs[i] != imc)
            i++;
        if (i == c->nimcs) {
            uint32_t *ni = realloc(c->imcs, (c->nimcs + 1) * sizeof *ni);
            if (!ni)
                return -ENOMEM;
            c->imcs = ni;
            ni[c->nimcs++] = imc;
        }
    } else if (strcmp(name, "spool") == 0) {
        return nf__set_path(c, &c->spool, cmd, base);
    } else if (strcmp(name, "state") == 0) {
        return nf__set_path(c, &c->state, cmd, base);
    } else if (strcmp(name, "nntp-listen") == 0) {
        const char *colon = strrchr(a1, ':');
        char *end = NULL;
        unsigned long port = colon ? strtoul(colon + 1, &end, 10) : 0;
        if (!colon || colon == a1 || !colon[1] || *end || port > 65535)
            nf__diag(c, cmd->file, cmd->line,
                     "bad address '%s'; expected host:port (port 0..65535)", a1);
        else if (c->nntp_listen)
            nf__diag(c, cmd->file, cmd->line, "nntp-listen given twice");
        else if (!(c->nntp_listen = strdup(a1)))
            return -ENOMEM;
    } else if (strcmp(name, "compression-level") == 0) {
        if (a1[0] < '0' || a1[0] > '9' || a1[1])
            nf__diag(c, cmd->file, cmd->line,
                     "bad compression level '%s'; expected 0 (never) to 9 (smallest)",
                     a1);
        else
            c->level = a1[0] - '0';
    } else {
        bool art = strcmp(name, "max-article-size") == 0;
        uint32_t v;
        if (!nf__size(a1, &v))
            nf__diag(
                c, cmd->file, cmd->line,
                "bad size '%s'; expected bytes 1..4294967295, optionally with k or M",
                a1);
        else if (art)
            c->lim.max_article = v;
        else {
            c->lim.max_decompressed = v;
            *seen_max_dec = true;
        }
    }
    return 0;
}

int nf_config_parse(nf_config **out, const char *name, const char *text, size_t len,
                    const char *base_dir)
{
    nf_config *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    int rc = nf_trust_new(&c->trust);
    if (rc) {
        free(c);
        return rc;
    }
    c->lim.max_article = NF_DEFAULT_MAX_ARTICLE;
    /* Level 1: on a 2-core machine level 6 signs and compresses ~4,000
     * 11 KB articles/s, level 1 ~9,800, for a few percent more bytes. */
    c->level = 1;
    tern_rc *rcf = NULL;
    rc = tern_rc_parse(&rcf, name, text, len, NULL);
    if (rc && rc != TERN_ESYNTAX) {
        nf_config_free(c);
        return rc;
    }
    for (size_t i = 0; i < tern_rc_diag_count(rcf); i++) {
        int is_error = 0;
        const char *d = tern_rc_diag_at(rcf, i, &is_error);
        char **nd = realloc(c->diags, (c->ndiags + 1) * sizeof *nd);
        if (nd) {
            c->diags = nd;
            if ((nd[c->ndiags] = strdup(d)))
                c->ndiags++;
        }
        if (is_error)
            c->errors++;
    }
    bool seen_max_dec = false;
    rc = 0;
    for (size_t i = 0; rc == 0 && i < tern_rc_count(rcf); i++)
        rc = nf__command(c, tern_rc_at(rcf, i), base_dir, &seen_max_dec);
    tern_rc_free(rcf);
    if (rc) {
        nf_config_free(c);
        return rc;
    }
    /* Unless told otherwise, inflate as far as the largest article allowed. */
    if (!seen_max_dec)
        c->lim.max_decompressed = c->lim.max_article;
    *out = c;
    return c->errors ? TERN_ESYNTAX : 0;
}

int nf_config_load(nf_config **out, const char *path)
{
    uint8_t *buf;
    size_t len;
    int rc = nf__read_file(path, 1u << 24, &buf, &len);
    if (rc)
        return rc;
    char *base = strdup(path);
    if (!base) {
        free(buf);
        return -ENOMEM;
    }
    char *slash = strrchr(base, '/');
    if (slash)
        *slash = 0;
    else
        base[0] = 0;
    rc = nf_config_parse(out, path, (const char *)buf, len, slash ? base : NULL);
    free(base);
    free(buf);
    return rc;
}

void nf_config_free(nf_config *c)
{
    if (!c)
        return;
    sodium_memzero(c->sk, sizeof c->sk);
    nf_trust_free(c->trust);
    free(c->spool);
    free(c->state);
    free(c->nntp_listen);
    for (size_t i = 0; i < c->nmaps; i++)
        free(c->maps[i].pattern);
    free(c->maps);
    free(c->imcs);
    for (size_t i = 0; i < c->ndiags; i++)
        free(c->diags[i]);
    free(c->diags);
    free(c);
}

size_t nf_config_diag_count(const nf_config *c)
{
    return c->ndiags;
}

const char *nf_config_diag_at(const nf_config *c, size_t i)
{
    return i < c->ndiags ? c->diags[i] : NULL;
}

const char *nf_config_publisher(const nf_config *c)
{
    return c->publisher;
}

int nf_config_secret_key(const nf_config *c, uint8_t sk[NF_SECRETKEY_BYTES])
{
    if (!c->have_sk)
        return TERN_ENOTFOUND;
    memcpy(sk, c->sk, NF_SECRETKEY_BYTES);
    return 0;
}

const nf_trust *nf_config_trust(const nf_config *c)
{
    return c->trust;
}

const char *nf_config_spool(const nf_config *c)
{
    return c->spool;
}

const char *nf_config_state(const nf_config *c)
{
    return c->state;
}

const char *nf_config_nntp_listen(const nf_config *c)
{
    return c->nntp_listen;
}

int nf_config_compression_level(const nf_config *c)
{
    return c->level;
}

nf_limits nf_config_limits(const nf_config *c)
{
    return c->lim;
}

int nf_config_group_for(const nf_config *c, const char *newsgroup, uint32_t *imc)
{
    for (size_t i = 0; i < c->nmaps; i++)
        if (nf__pattern_match(c->maps[i].pattern, newsgroup)) {
            *imc = c->maps[i].imc;
            return 0;
        }
    return TERN_ENOTFOUND;
}

size_t nf_config_imc_count(const nf_config *c)
{
    return c->nimcs;
}

uint32_t nf_config_imc_at(const nf_config *c, size_t i)
{
    return i < c->nimcs ? c->imcs[i] : 0;
}
