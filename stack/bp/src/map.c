/* A small open-addressing hash map (linear probing, backward-shift deletion)
 * for the agent's in-memory indexes: transmissions, duplicate suppression,
 * fragment sets. Key 0 marks an empty slot. */
#include <errno.h>
#include <stdlib.h>

#include "agent_int.h"

static size_t slot(const bp__map *m, uint64_t key)
{
    uint64_t h = key * 0x9e3779b97f4a7c15ull;
    return (size_t)(h ^ (h >> 29)) & (m->cap - 1);
}

int bp__map_init(bp__map *m, size_t cap)
{
    size_t c = 16;
    while (c < cap)
        c <<= 1;
    m->keys = calloc(c, sizeof *m->keys);
    m->vals = calloc(c, sizeof *m->vals);
    if (!m->keys || !m->vals) {
        free(m->keys);
        free(m->vals);
        return -ENOMEM;
    }
    m->cap = c;
    m->n = 0;
    return 0;
}

void bp__map_free(bp__map *m)
{
    free(m->keys);
    free(m->vals);
    m->keys = NULL;
    m->vals = NULL;
    m->cap = m->n = 0;
}

void *bp__map_get(const bp__map *m, uint64_t key)
{
    for (size_t i = slot(m, key);; i = (i + 1) & (m->cap - 1)) {
        if (m->keys[i] == key)
            return m->vals[i];
        if (m->keys[i] == 0)
            return NULL;
    }
}

static int grow(bp__map *m)
{
    bp__map n;
    int rc = bp__map_init(&n, m->cap * 2);
    if (rc)
        return rc;
    for (size_t i = 0; i < m->cap; i++)
        if (m->keys[i])
            bp__map_put(&n, m->keys[i], m->vals[i]);
    bp__map_free(m);
    *m = n;
    return 0;
}

int bp__map_put(bp__map *m, uint64_t key, void *val)
{
    if ((m->n + 1) * 4 > m->cap * 3) {
        int rc = grow(m);
        if (rc)
            return rc;
    }
    size_t i = slot(m, key);
    while (m->keys[i] && m->keys[i] != key)
        i = (i + 1) & (m->cap - 1);
    if (!m->keys[i])
        m->n++;
    m->keys[i] = key;
    m->vals[i] = val;
    return 0;
}

void *bp__map_del(bp__map *m, uint64_t key)
{
    size_t i = slot(m, key);
    while (m->keys[i] != key) {
        if (!m->keys[i])
            return NULL;
        i = (i + 1) & (m->cap - 1);
    }
    void *val = m->vals[i];
    m->n--;
    /* Shift later members of the probe run back so lookups never stop early. */
    size_t j = i;
    for (;;) {
        j = (j + 1) & (m->cap - 1);
        if (!m->keys[j])
            break;
        size_t home = slot(m, m->keys[j]);
        /* keys[j] may move to i if its home is not in (i, j] cyclically */
        if ((j > i && (home <= i || home > j)) || (j < i && (home <= i && home > j))) {
            m->keys[i] = m->keys[j];
            m->vals[i] = m->vals[j];
            i = j;
        }
    }
    m->keys[i] = 0;
    m->vals[i] = NULL;
    return val;
}
