/* Interval sets and the session map used by the engine. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ltp_int.h"
#include "tern/base.h"

int ltp__iv_add(struct ltp_ivset *s, uint64_t lo, uint64_t hi, size_t max_n,
                uint64_t *added)
{
    if (added)
        *added = 0;
    if (lo >= hi)
        return 0;
    /* Find the first interval that ends at or after lo. */
    size_t i = 0, j;
    size_t a = 0, b = s->n;
    while (a < b) {
        size_t mid = (a + b) / 2;
        if (s->v[mid].hi < lo)
            a = mid + 1;
        else
            b = mid;
    }
    i = a;
    j = i;
    uint64_t before = 0; /* bytes of [lo, hi) already in the set */
    while (j < s->n && s->v[j].lo <= hi) {
        uint64_t a0 = s->v[j].lo > lo ? s->v[j].lo : lo;
        uint64_t b0 = s->v[j].hi < hi ? s->v[j].hi : hi;
        if (b0 > a0)
            before += b0 - a0;
        j++;
    }
    if (added)
        *added = hi - lo - before;
    if (j > i) {
        if (s->v[i].lo < lo)
            lo = s->v[i].lo;
        if (s->v[j - 1].hi > hi)
            hi = s->v[j - 1].hi;
    }
    if (j == i) {
        if (s->n >= max_n)
            return TERN_EFULL;
        if (s->n == s->cap) {
            size_t nc = s->cap ? s->cap * 2 : 8;
            if (nc > max_n)
                nc = max_n > s->n ? max_n : s->n + 1;
            struct ltp_iv *p = realloc(s->v, nc * sizeof *p);
            if (!p)
                return -ENOMEM;
            s->v = p;
            s->cap = nc;
        }
        memmove(s->v + i + 1, s->v + i, (s->n - i) * sizeof *s->v);
        s->n++;
    } else if (j > i + 1) {
        memmove(s->v + i + 1, s->v + j, (s->n - j) * sizeof *s->v);
        s->n -= j - i - 1;
    }
    s->v[i].lo = lo;
    s->v[i].hi = hi;
    return 0;
}

int ltp__iv_covers(const struct ltp_ivset *s, uint64_t lo, uint64_t hi)
{
    if (lo >= hi)
        return 1;
    size_t a = 0, b = s->n;
    while (a < b) {
        size_t mid = (a + b) / 2;
        if (s->v[mid].hi <= lo)
            a = mid + 1;
        else
            b = mid;
    }
    return a < s->n && s->v[a].lo <= lo && s->v[a].hi >= hi;
}

void ltp__iv_free(struct ltp_ivset *s)
{
    free(s->v);
    memset(s, 0, sizeof *s);
}

static size_t map_hash(uint64_t a, uint64_t b)
{
    uint64_t h = a * 0x9E3779B97F4A7C15ull ^ (b + 0x632BE59BD9B4E019ull);
    h ^= h >> 31;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 29;
    return (size_t)h;
}

void *ltp__map_get(const struct ltp_map *m, uint64_t a, uint64_t b)
{
    if (!m->cap)
        return NULL;
    for (size_t i = map_hash(a, b) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        const struct ltp_map_ent *e = &m->t[i];
        if (!e->p)
            return NULL;
        if (e->p != LTP_MAP_TOMB && e->a == a && e->b == b)
            return e->p;
    }
}

static int map_grow(struct ltp_map *m)
{
    size_t nc = m->cap ? m->cap * 2 : 64;
    if (m->n * 4 < m->cap)
        nc = m->cap; /* mostly tombstones: rebuild at the same size */
    struct ltp_map_ent *old = m->t, *t = calloc(nc, sizeof *t);
    size_t oc = m->cap;
    if (!t)
        return -ENOMEM;
    m->t = t;
    m->cap = nc;
    m->n = m->used = 0;
    for (size_t i = 0; i < oc; i++)
        if (old[i].p && old[i].p != LTP_MAP_TOMB)
            ltp__map_put(m, old[i].a, old[i].b, old[i].p);
    free(old);
    return 0;
}

int ltp__map_put(struct ltp_map *m, uint64_t a, uint64_t b, void *p)
{
    if ((m->used + 1) * 2 > m->cap) {
        int rc = map_grow(m);
        if (rc)
            return rc;
    }
    size_t tomb = (size_t)-1;
    for (size_t i = map_hash(a, b) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        struct ltp_map_ent *e = &m->t[i];
        if (!e->p) {
            if (tomb != (size_t)-1)
                e = &m->t[tomb];
            else
                m->used++;
            e->a = a;
            e->b = b;
            e->p = p;
            m->n++;
            return 0;
        }
        if (e->p == LTP_MAP_TOMB) {
            if (tomb == (size_t)-1)
                tomb = i;
        } else if (e->a == a && e->b == b) {
            e->p = p;
            return 0;
        }
    }
}

void ltp__map_del(struct ltp_map *m, uint64_t a, uint64_t b)
{
    if (!m->cap)
        return;
    for (size_t i = map_hash(a, b) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        struct ltp_map_ent *e = &m->t[i];
        if (!e->p)
            return;
        if (e->p != LTP_MAP_TOMB && e->a == a && e->b == b) {
            e->p = LTP_MAP_TOMB;
            m->n--;
            return;
        }
    }
}

void ltp__map_free(struct ltp_map *m)
{
    free(m->t);
    memset(m, 0, sizeof *m);
}
