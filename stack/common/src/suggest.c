/* Nearest known word (see tern/suggest.h). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tern/suggest.h"

#define LONGEST 64

static char fold(char ch)
{
    return ch >= 'A' && ch <= 'Z' ? (char)(ch - 'A' + 'a') : ch;
}

TERN_API size_t tern_edit_distance(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    if (n > LONGEST || m > LONGEST)
        return SIZE_MAX;
    /* Three rows of the optimal-string-alignment table: a swap looks two
     * rows back. */
    size_t r0[LONGEST + 1], r1[LONGEST + 1], r2[LONGEST + 1];
    size_t *pp = r0, *p = r1, *c = r2;
    for (size_t j = 0; j <= m; j++)
        p[j] = j;
    for (size_t i = 1; i <= n; i++) {
        c[0] = i;
        for (size_t j = 1; j <= m; j++) {
            size_t cost = fold(a[i - 1]) != fold(b[j - 1]);
            size_t v = p[j - 1] + cost;
            if (p[j] + 1 < v)
                v = p[j] + 1;
            if (c[j - 1] + 1 < v)
                v = c[j - 1] + 1;
            if (i > 1 && j > 1 && fold(a[i - 1]) == fold(b[j - 2]) &&
                fold(a[i - 2]) == fold(b[j - 1]) && pp[j - 2] + 1 < v)
                v = pp[j - 2] + 1;
            c[j] = v;
        }
        size_t *t = pp;
        pp = p;
        p = c;
        c = t;
    }
    return p[m];
}

/* How far a typo of a known word of this length may be from it. */
static size_t reach(size_t len)
{
    return len <= 2 ? 0 : len <= 5 ? 1 : len <= 10 ? 2 : 3;
}

/* The known entry nearest to its typed text (heads[w - 1] for an entry of w
 * words); word alone when heads is NULL. */
static const char *nearest(const char *word, char heads[][4 * LONGEST + 4],
                           const char *const *known)
{
    const char *best = NULL;
    size_t bestd = SIZE_MAX;
    for (size_t i = 0; known[i]; i++) {
        const char *typed = word;
        if (heads) {
            int w = 1;
            for (const char *k = known[i]; *k; k++)
                w += *k == ' ';
            typed = heads[(w > 4 ? 4 : w) - 1];
        }
        size_t d = tern_edit_distance(typed, known[i]);
        /* A known one is no typo, whatever its neighbours; a case slip is. */
        if (d == 0 && strcmp(typed, known[i]) == 0)
            return NULL;
        if (d > reach(strlen(known[i])) || (best && d >= bestd))
            continue;
        best = known[i];
        bestd = d;
    }
    return best;
}

TERN_API const char *tern_suggest(const char *word, const char *const *known)
{
    return word && known ? nearest(word, NULL, known) : NULL;
}

TERN_API const char *tern_cmd_head(const tern_rc_cmd *c, int nwords, char *buf,
                                   size_t cap)
{
    size_t len = 0;
    if (!cap)
        return buf;
    buf[0] = '\0';
    for (int i = 0; c && i < c->argc && i < nwords; i++) {
        int k = snprintf(buf + len, cap - len, "%s%s", i ? " " : "", c->argv[i]);
        if (k < 0 || (size_t)k >= cap - len) {
            buf[len] = '\0'; /* whole words only */
            break;
        }
        len += (size_t)k;
    }
    return buf;
}

TERN_API const char *tern_suggest_cmd(const tern_rc_cmd *c, const char *const *known)
{
    if (!c || !known)
        return NULL;
    char heads[4][4 * LONGEST + 4];
    for (int w = 1; w <= 4; w++)
        tern_cmd_head(c, w, heads[w - 1], sizeof heads[w - 1]);
    return nearest(NULL, heads, known);
}

TERN_API const char *tern_did_you_mean(const char *near, char *buf, size_t cap)
{
    if (!cap)
        return buf;
    buf[0] = '\0';
    if (near)
        snprintf(buf, cap, " (did you mean '%s'?)", near);
    return buf;
}
