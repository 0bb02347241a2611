/* Doubly linked lists and the catalog of named roots, built on heap objects. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>

#include "sdr_int.h"

#define LIST_MAGIC UINT64_C(0x4c495354) /* "LIST" */
#define ELT_MAGIC  UINT64_C(0x454c5400) /* "ELT" */

struct lhdr {
    uint64_t first, last, length, user_data, magic;
};
struct lelt {
    uint64_t prev, next, list, data, magic;
};

#define LF(f) offsetof(struct lhdr, f)
#define EF(f) offsetof(struct lelt, f)

/* An allocated object with room for n bytes: reading its fields is safe
 * whatever the heap holds. */
static int obj_fits(const sdr *s, sdr_off o, uint64_t n)
{
    uint64_t usable;
    return sdr__obj_ok(s, o, &usable) == 0 && usable >= n;
}

static int is_list(const sdr *s, sdr_off l)
{
    return obj_fits(s, l, sizeof(struct lhdr)) &&
           sdr__rd64(s, l + LF(magic)) == LIST_MAGIC;
}

static int is_elt(const sdr *s, sdr_off e)
{
    return obj_fits(s, e, sizeof(struct lelt)) &&
           sdr__rd64(s, e + EF(magic)) == ELT_MAGIC;
}

static int writable(sdr *s)
{
    if (!s->in_txn)
        return TERN_ENOTXN;
    return s->txn_err;
}

TERN_API int sdr_list_create(sdr *s, sdr_off user_data, sdr_off *list)
{
    int rc = writable(s);
    sdr_off l;
    if (rc || (rc = sdr__alloc(s, sizeof(struct lhdr), SDR_OPS, &l)))
        return rc;
    struct lhdr h = {0, 0, 0, user_data, LIST_MAGIC};
    sdr__raw_write(s, l, &h, sizeof h);
    *list = l;
    return s->txn_err;
}

TERN_API int sdr_list_destroy(sdr *s, sdr_off list)
{
    int rc = writable(s);
    if (rc)
        return rc;
    if (!is_list(s, list))
        return -EINVAL;
    for (sdr_off e = sdr__rd64(s, list + LF(first)); e;) {
        sdr_off n = sdr__rd64(s, e + EF(next));
        sdr__w64(s, e + EF(magic), 0);
        if ((rc = sdr__free(s, e)))
            return rc;
        e = n;
    }
    sdr__w64(s, list + LF(magic), 0);
    return sdr__free(s, list);
}

/* Links a new element holding data between prev and next (either may be 0). */
static int link_new(sdr *s, sdr_off list, sdr_off prev, sdr_off next, sdr_off data,
                    sdr_off *elt)
{
    sdr_off e;
    int rc = sdr__alloc(s, sizeof(struct lelt), SDR_OPS, &e);
    if (rc)
        return rc;
    struct lelt x = {prev, next, list, data, ELT_MAGIC};
    sdr__raw_write(s, e, &x, sizeof x);
    if (prev)
        sdr__w64(s, prev + EF(next), e);
    else
        sdr__w64(s, list + LF(first), e);
    if (next)
        sdr__w64(s, next + EF(prev), e);
    else
        sdr__w64(s, list + LF(last), e);
    sdr__w64(s, list + LF(length), sdr__rd64(s, list + LF(length)) + 1);
    if (elt)
        *elt = e;
    return s->txn_err;
}

TERN_API int sdr_list_insert_first(sdr *s, sdr_off list, sdr_off data, sdr_off *elt)
{
    int rc = writable(s);
    if (rc)
        return rc;
    if (!is_list(s, list))
        return -EINVAL;
    return link_new(s, list, 0, sdr__rd64(s, list + LF(first)), data, elt);
}

TERN_API int sdr_list_insert_last(sdr *s, sdr_off list, sdr_off data, sdr_off *elt)
{
    int rc = writable(s);
    if (rc)
        return rc;
    if (!is_list(s, list))
        return -EINVAL;
    return link_new(s, list, sdr__rd64(s, list + LF(last)), 0, data, elt);
}

TERN_API int sdr_list_insert_before(sdr *s, sdr_off at, sdr_off data, sdr_off *elt)
{
    int rc = writable(s);
    if (rc)
        return rc;
    if (!is_elt(s, at))
        return -EINVAL;
    return link_new(s, sdr__rd64(s, at + EF(list)), sdr__rd64(s, at + EF(prev)), at, data,
                    elt);
}

TERN_API int sdr_list_insert_after(sdr *s, sdr_off at, sdr_off data, sdr_off *elt)
{
    int rc = writable(s);
    if (rc)
        return rc;
    if (!is_elt(s, at))
        return -EINVAL;
    return link_new(s, sdr__rd64(s, at + EF(list)), at, sdr__rd64(s, at + EF(next)), data,
                    elt);
}

TERN_API int sdr_list_delete(sdr *s, sdr_off elt, sdr_off *data)
{
    int rc = writable(s);
    if (rc)
        return rc;
    if (!is_elt(s, elt))
        return -EINVAL;
    sdr_off l = sdr__rd64(s, elt + EF(list)), p = sdr__rd64(s, elt + EF(prev)),
            n = sdr__rd64(s, elt + EF(next));
    if (p)
        sdr__w64(s, p + EF(next), n);
    else
        sdr__w64(s, l + LF(first), n);
    if (n)
        sdr__w64(s, n + EF(prev), p);
    else
        sdr__w64(s, l + LF(last), p);
    sdr__w64(s, l + LF(length), sdr__rd64(s, l + LF(length)) - 1);
    if (data)
        *data = sdr__rd64(s, elt + EF(data));
    sdr__w64(s, elt + EF(magic), 0);
    return sdr__free(s, elt);
}

TERN_API sdr_off sdr_list_first(const sdr *s, sdr_off list)
{
    return is_list(s, list) ? sdr__rd64(s, list + LF(first)) : 0;
}

TERN_API sdr_off sdr_list_last(const sdr *s, sdr_off list)
{
    return is_list(s, list) ? sdr__rd64(s, list + LF(last)) : 0;
}

TERN_API sdr_off sdr_list_next(const sdr *s, sdr_off elt)
{
    return is_elt(s, elt) ? sdr__rd64(s, elt + EF(next)) : 0;
}

TERN_API sdr_off sdr_list_prev(const sdr *s, sdr_off elt)
{
    return is_elt(s, elt) ? sdr__rd64(s, elt + EF(prev)) : 0;
}

TERN_API sdr_off sdr_list_data(const sdr *s, sdr_off elt)
{
    return is_elt(s, elt) ? sdr__rd64(s, elt + EF(data)) : 0;
}

TERN_API sdr_off sdr_list_of(const sdr *s, sdr_off elt)
{
    return is_elt(s, elt) ? sdr__rd64(s, elt + EF(list)) : 0;
}

TERN_API uint64_t sdr_list_length(const sdr *s, sdr_off list)
{
    return is_list(s, list) ? sdr__rd64(s, list + LF(length)) : 0;
}

TERN_API sdr_off sdr_list_user_data(const sdr *s, sdr_off list)
{
    return is_list(s, list) ? sdr__rd64(s, list + LF(user_data)) : 0;
}

TERN_API int sdr_list_set_user_data(sdr *s, sdr_off list, sdr_off user_data)
{
    int rc = writable(s);
    if (rc)
        return rc;
    if (!is_list(s, list))
        return -EINVAL;
    sdr__w64(s, list + LF(user_data), user_data);
    return s->txn_err;
}

int sdr__list_check(const sdr *s, sdr_off list, char *why, size_t whylen)
{
    if (!is_list(s, list)) {
        if (why)
            snprintf(why, whylen, "%llu is not a list", (unsigned long long)list);
        return TERN_ECORRUPT;
    }
    uint64_t n = 0, len = sdr__rd64(s, list + LF(length));
    sdr_off prev = 0;
    for (sdr_off e = sdr__rd64(s, list + LF(first)); e; e = sdr__rd64(s, e + EF(next))) {
        if (!is_elt(s, e) || sdr__rd64(s, e + EF(list)) != list ||
            sdr__rd64(s, e + EF(prev)) != prev || ++n > len) {
            if (why)
                snprintf(why, whylen,
                         "list %llu: element %llu (#%llu) is not linked right",
                         (unsigned long long)list, (unsigned long long)e,
                         (unsigned long long)n);
            return TERN_ECORRUPT;
        }
        prev = e;
    }
    if (n != len || sdr__rd64(s, list + LF(last)) != prev) {
        if (why)
            snprintf(why, whylen, "list %llu: length %llu, %llu elements linked",
                     (unsigned long long)list, (unsigned long long)len,
                     (unsigned long long)n);
        return TERN_ECORRUPT;
    }
    return 0;
}

/* ---------------------------------------------------------------- catalog */

struct centry {
    char name[SDR_NAME_MAX + 1];
    uint64_t off;
};

static sdr_off cat_find(const sdr *s, const char *name)
{
    sdr_off l = sdr__sb(s)->catalog;
    if (!l)
        return 0;
    for (sdr_off e = sdr_list_first(s, l); e; e = sdr_list_next(s, e)) {
        sdr_off d = sdr_list_data(s, e);
        if (obj_fits(s, d, sizeof(struct centry)) &&
            strncmp((const char *)s->heap + d, name, SDR_NAME_MAX + 1) == 0)
            return e;
    }
    return 0;
}

static int cat_name_ok(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    return n > 0 && n <= SDR_NAME_MAX;
}

TERN_API int sdr_catalog_put(sdr *s, const char *name, sdr_off off)
{
    int rc = writable(s);
    if (rc)
        return rc;
    if (!cat_name_ok(name))
        return -EINVAL;
    sdr_off e = cat_find(s, name);
    if (e) {
        sdr__w64(s, sdr__rd64(s, e + EF(data)) + offsetof(struct centry, off), off);
        return s->txn_err;
    }
    sdr_off l = sdr__sb(s)->catalog, d;
    if (!l) {
        if ((rc = sdr_list_create(s, 0, &l)))
            return rc;
        sdr__w64(s, offsetof(struct sdr_sb, catalog), l);
    }
    if ((rc = sdr__alloc(s, sizeof(struct centry), SDR_OPS, &d)))
        return rc;
    struct centry c;
    memset(&c, 0, sizeof c);
    memcpy(c.name, name, strlen(name));
    c.off = off;
    sdr__raw_write(s, d, &c, sizeof c);
    return link_new(s, l, sdr__rd64(s, l + LF(last)), 0, d, NULL);
}

TERN_API int sdr_catalog_get(const sdr *s, const char *name, sdr_off *off)
{
    if (!cat_name_ok(name))
        return -EINVAL;
    sdr_off e = cat_find(s, name);
    if (!e)
        return TERN_ENOTFOUND;
    *off = sdr__rd64(s, sdr_list_data(s, e) + offsetof(struct centry, off));
    return 0;
}

TERN_API int sdr_catalog_del(sdr *s, const char *name)
{
    int rc = writable(s);
    if (rc)
        return rc;
    if (!cat_name_ok(name))
        return -EINVAL;
    sdr_off e = cat_find(s, name), d;
    if (!e)
        return TERN_ENOTFOUND;
    if ((rc = sdr_list_delete(s, e, &d)))
        return rc;
    return sdr__free(s, d);
}
