/* Multicast (imc): ION's petition, briefing and destinations-block layouts
 * (docs/multicast.md), and the table of group members the agent keeps. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bp_imc.h"
#include "imc_int.h"
#include "tern/cbor.h"
#include "tern/ckd.h"

#define TABLE_MAGIC 0x31434d49u /* "IMC1" */

TERN_API int bp_imc_petition_encode(uint64_t group, bool member, uint8_t *buf, size_t cap,
                                    size_t *len)
{
    tern_cbor_enc e;
    tern_cbor_enc_init(&e, buf, cap);
    tern_cbor_enc_array(&e, 2);
    tern_cbor_enc_uint(&e, group);
    tern_cbor_enc_uint(&e, member ? 1 : 0);
    return tern_cbor_enc_finish(&e, len);
}

static int fault(const char **why, const char *what)
{
    if (why)
        *why = what;
    return TERN_EMALFORMED;
}

TERN_API int bp_imc_petition_decode(const uint8_t *buf, size_t len, uint64_t *group,
                                    bool *member, const char **why)
{
    tern_cbor_dec d;
    uint64_t n, g, m;
    tern_cbor_dec_init(&d, buf, len);
    if (tern_cbor_dec_array(&d, &n) < 0 || n != 2)
        return fault(why, "petition is not a two-item array [group, isMember]");
    if (tern_cbor_dec_uint(&d, &g) < 0)
        return fault(why, "petition group number is not an unsigned integer");
    if (tern_cbor_dec_uint(&d, &m) < 0)
        return fault(why, "petition membership switch is not an unsigned integer");
    if (!tern_cbor_dec_done(&d))
        return fault(why, "bytes after the petition");
    *group = g;
    *member = m != 0;
    return 0;
}

TERN_API int bp_imc_list_encode(const uint64_t *v, size_t n, uint8_t *buf, size_t cap,
                                size_t *len)
{
    if (n > BP_IMC_LIST_MAX)
        return -EINVAL;
    tern_cbor_enc e;
    tern_cbor_enc_init(&e, buf, cap);
    tern_cbor_enc_array(&e, n);
    for (size_t i = 0; i < n; i++)
        tern_cbor_enc_uint(&e, v[i]);
    return tern_cbor_enc_finish(&e, len);
}

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

/* Sorts v[0..n) and drops repeats; returns the new count. */
static size_t sort_unique(uint64_t *v, size_t n)
{
    if (n < 2)
        return n;
    qsort(v, n, sizeof *v, cmp_u64);
    size_t k = 1;
    for (size_t i = 1; i < n; i++)
        if (v[i] != v[k - 1])
            v[k++] = v[i];
    return k;
}

/* Decodes an array of unsigned integers at d into v[0..max). */
static int list_at(tern_cbor_dec *d, uint64_t *v, size_t max, size_t *n, const char **why)
{
    uint64_t cnt;
    tern_cbor_kind kind;
    bool indef;
    if (tern_cbor_peek(d, &kind, &indef) < 0 || kind != TERN_CBOR_ARRAY || indef)
        return fault(why, "not a definite-length array");
    if (tern_cbor_dec_array(d, &cnt) < 0)
        return fault(why, "not a definite-length array");
    if (cnt > max || cnt > BP_IMC_LIST_MAX)
        return fault(why, "too many numbers in the list");
    for (uint64_t i = 0; i < cnt; i++)
        if (tern_cbor_dec_uint(d, &v[i]) < 0)
            return fault(why, "a list item is not an unsigned integer");
    *n = sort_unique(v, (size_t)cnt);
    return 0;
}

TERN_API int bp_imc_list_decode(const uint8_t *buf, size_t len, uint64_t *v, size_t max,
                                size_t *n, const char **why)
{
    tern_cbor_dec d;
    tern_cbor_dec_init(&d, buf, len);
    int rc = list_at(&d, v, max, n, why);
    if (rc == 0 && !tern_cbor_dec_done(&d))
        return fault(why, "bytes after the list");
    return rc;
}

TERN_API int bp_imc_briefing_encode(const uint64_t *groups, size_t n, uint8_t *buf,
                                    size_t cap, size_t *len)
{
    if (n > BP_IMC_LIST_MAX)
        return -EINVAL;
    tern_cbor_enc e;
    tern_cbor_enc_init(&e, buf, cap);
    tern_cbor_enc_array(&e, 2);
    tern_cbor_enc_uint(&e, BP_ADMIN_IMC_BRIEFING);
    tern_cbor_enc_array(&e, n);
    for (size_t i = 0; i < n; i++)
        tern_cbor_enc_uint(&e, groups[i]);
    return tern_cbor_enc_finish(&e, len);
}

TERN_API int bp_imc_briefing_decode(const uint8_t *buf, size_t len, uint64_t *groups,
                                    size_t max, size_t *n, const char **why)
{
    tern_cbor_dec d;
    uint64_t cnt, type;
    tern_cbor_dec_init(&d, buf, len);
    if (tern_cbor_dec_array(&d, &cnt) < 0 || cnt != 2)
        return fault(why, "administrative record is not a two-item array");
    if (tern_cbor_dec_uint(&d, &type) < 0)
        return fault(why, "administrative record type is not an unsigned integer");
    if (type != BP_ADMIN_IMC_BRIEFING)
        return TERN_ENOTFOUND;
    int rc = list_at(&d, groups, max, n, why);
    if (rc == 0 && !tern_cbor_dec_done(&d))
        return fault(why, "bytes after the briefing");
    if (rc && why && *why && strncmp(*why, "briefing", 8))
        *why = "briefing is not a definite-length array of group numbers (or lists "
               "more than allowed)";
    return rc;
}

/* ---------------------------------------------------------- the table */

bool bp__u64_has(const uint64_t *v, size_t n, uint64_t x)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid] == x)
            return true;
        if (v[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

/* Inserts x into the sorted set v (1 if added, 0 if there, negative error). */
int bp__u64_add(uint64_t **v, size_t *n, size_t *cap, size_t max, uint64_t x)
{
    size_t lo = 0, hi = *n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if ((*v)[mid] == x)
            return 0;
        if ((*v)[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (*n >= max)
        return TERN_EFULL;
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 8;
        uint64_t *nv = realloc(*v, nc * sizeof *nv);
        if (!nv)
            return -ENOMEM;
        *v = nv;
        *cap = nc;
    }
    memmove(&(*v)[lo + 1], &(*v)[lo], (*n - lo) * sizeof **v);
    (*v)[lo] = x;
    (*n)++;
    return 1;
}

/* Removes x from the sorted set (1 if it was there). */
int bp__u64_del(uint64_t *v, size_t *n, uint64_t x)
{
    for (size_t i = 0; i < *n; i++)
        if (v[i] == x) {
            memmove(&v[i], &v[i + 1], (*n - i - 1) * sizeof *v);
            (*n)--;
            return 1;
        }
    return 0;
}

bp__imc_group *bp__imc_find(const bp__imc *t, uint64_t group)
{
    size_t lo = 0, hi = t->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->g[mid].group == group)
            return &t->g[mid];
        if (t->g[mid].group < group)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static int group_get(bp__imc *t, uint64_t group, bp__imc_group **out)
{
    if ((*out = bp__imc_find(t, group)))
        return 0;
    if (t->n >= BP_IMC_GROUPS_MAX)
        return TERN_EFULL;
    if (t->n == t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 8;
        bp__imc_group *ng = realloc(t->g, nc * sizeof *ng);
        if (!ng)
            return -ENOMEM;
        t->g = ng;
        t->cap = nc;
    }
    size_t at = 0;
    while (at < t->n && t->g[at].group < group)
        at++;
    memmove(&t->g[at + 1], &t->g[at], (t->n - at) * sizeof *t->g);
    t->g[at] = (bp__imc_group){.group = group};
    t->n++;
    *out = &t->g[at];
    return 0;
}

int bp__imc_member_set(bp__imc *t, uint64_t group, uint64_t node, bool member)
{
    bp__imc_group *g;
    if (!member) {
        g = bp__imc_find(t, group);
        return g ? bp__u64_del(g->nodes, &g->n, node) : 0;
    }
    int rc = group_get(t, group, &g);
    if (rc)
        return rc;
    return bp__u64_add(&g->nodes, &g->n, &g->cap, BP_IMC_MEMBERS_MAX, node);
}

int bp__imc_local_set(bp__imc *t, uint64_t group, bool member)
{
    bp__imc_group *g;
    if (!member) {
        g = bp__imc_find(t, group);
        if (!g || !g->local)
            return 0;
        g->local = false;
        return 1;
    }
    int rc = group_get(t, group, &g);
    if (rc)
        return rc;
    if (g->local)
        return 0;
    g->local = true;
    return 1;
}

void bp__imc_free(bp__imc *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->g[i].nodes);
    free(t->g);
    free(t->region);
    memset(t, 0, sizeof *t);
}

/* Stored form: magic, pair count, then (group, node) pairs; the remote
 * memberships only (a node's own come back with its endpoints). */
int bp__imc_save(bp__imc *t, sdr *s, const char *name)
{
    size_t pairs = 0, bytes;
    for (size_t i = 0; i < t->n; i++)
        pairs += t->g[i].n;
    if (tern_ckd_mul_size(&bytes, pairs, 16) || tern_ckd_add_size(&bytes, bytes, 8))
        return -EOVERFLOW;
    uint8_t *buf = malloc(bytes);
    if (!buf)
        return -ENOMEM;
    uint32_t hdr[2] = {TABLE_MAGIC, (uint32_t)pairs};
    memcpy(buf, hdr, 8);
    size_t at = 8;
    for (size_t i = 0; i < t->n; i++)
        for (size_t k = 0; k < t->g[i].n; k++) {
            memcpy(buf + at, &t->g[i].group, 8);
            memcpy(buf + at + 8, &t->g[i].nodes[k], 8);
            at += 16;
        }
    sdr_off old = 0, nw = 0;
    int rc = sdr_txn_begin(s);
    if (rc)
        goto out;
    if (sdr_catalog_get(s, name, &old) == 0 && old)
        rc = sdr_free(s, old);
    if (!rc)
        rc = sdr_alloc(s, bytes, 0, &nw);
    if (!rc)
        rc = sdr_write(s, nw, buf, bytes);
    if (!rc)
        rc = sdr_catalog_put(s, name, nw);
    rc = rc ? (sdr_txn_cancel(s), rc) : sdr_txn_end(s);
out:
    free(buf);
    return rc;
}

int bp__imc_load(bp__imc *t, const sdr *s, const char *name)
{
    sdr_off off;
    size_t size;
    uint32_t hdr[2];
    if (sdr_catalog_get(s, name, &off) || !off)
        return 0;
    if (sdr_size(s, off, &size) || size < 8 || sdr_read(s, off, hdr, 8) ||
        hdr[0] != TABLE_MAGIC || (size - 8) / 16 < hdr[1])
        return TERN_ECORRUPT;
    for (uint32_t i = 0; i < hdr[1]; i++) {
        uint64_t pr[2];
        if (sdr_read(s, off + 8 + (sdr_off)i * 16, pr, 16))
            return TERN_ECORRUPT;
        int rc = bp__imc_member_set(t, pr[0], pr[1], true);
        if (rc < 0)
            return rc;
    }
    return 0;
}
