/* cfdpd's durable state: a libsdr store "cfdpd" in the node directory. Its
 * catalog entry "cfdpd" names a root object (magic, version, the next
 * sequence number, a list); each list element is one saved transaction:
 * a 28-byte header (source, sequence number, lifetime, length of the
 * saved bytes, length of the file name, the bundle priority), the bytes
 * cfdp_txn_save wrote and the receiver's file name (synced before each
 * commit). The priority took byte 26, which earlier versions wrote as 0:
 * it is kept as 0x80 | priority, so a 0 there is an older record, whose
 * PDUs went at standard priority. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfdpd.h"
#include "sdr.h"

#define ROOT_MAGIC   0x44504643u /* "CFPD" */
#define ROOT_VERSION 1u
#define REC_HDR      28
#define REC_PRIO     26 /* header byte: 0x80 | BP priority; 0 before it was kept */
#define PRIO_SET     0x80u

struct root {
    uint32_t magic, version;
    uint64_t next_seq;
    sdr_off list;
};

struct idx {
    cfdp_txn_id id;
    sdr_off elt, obj;
};

struct cfdpd_store {
    sdr *s;
    sdr_off root;
    struct root r;
    struct idx *ix;
    size_t n, cap;
};

static struct idx *ix_find(cfdpd_store *st, cfdp_txn_id id)
{
    for (size_t i = 0; i < st->n; i++)
        if (st->ix[i].id.src == id.src && st->ix[i].id.seq == id.seq)
            return &st->ix[i];
    return NULL;
}

static int ix_add(cfdpd_store *st, cfdp_txn_id id, sdr_off elt, sdr_off obj)
{
    if (st->n == st->cap) {
        size_t nc = st->cap ? st->cap * 2 : 16;
        struct idx *p = realloc(st->ix, nc * sizeof *p);
        if (!p)
            return -ENOMEM;
        st->ix = p;
        st->cap = nc;
    }
    st->ix[st->n++] = (struct idx){id, elt, obj};
    return 0;
}

int cfdpd_store_open(const char *dir, uint64_t heap_mb, int memory, cfdpd_store **out,
                     uint64_t *next_seq, char *why, size_t whylen)
{
    cfdpd_store *st = calloc(1, sizeof *st);
    if (!st)
        return -ENOMEM;
    sdr_profile p = {.name = "cfdpd",
                     .dir = dir,
                     .heap_size = heap_mb << 20,
                     .mode = memory ? SDR_MEMORY : SDR_DURABLE,
                     .commit = SDR_COMMIT_GROUP};
    int rc = sdr_open(&p, &st->s, why, whylen);
    if (rc)
        goto fail;
    if (sdr_catalog_get(st->s, "cfdpd", &st->root) == 0) {
        if ((rc = sdr_read(st->s, st->root, &st->r, sizeof st->r)))
            goto fail_sdr;
        if (st->r.magic != ROOT_MAGIC || st->r.version != ROOT_VERSION) {
            snprintf(why, whylen, "store cfdpd in %s: not cfdpd's state (version %u)",
                     dir, st->r.version);
            rc = TERN_EPROFILE;
            goto fail_sdr;
        }
    } else {
        st->r = (struct root){ROOT_MAGIC, ROOT_VERSION, 1, 0};
        if ((rc = sdr_txn_begin(st->s)))
            goto fail_sdr;
        if ((rc = sdr_list_create(st->s, 0, &st->r.list)) ||
            (rc = sdr_alloc(st->s, sizeof st->r, SDR_OPS, &st->root)) ||
            (rc = sdr_write(st->s, st->root, &st->r, sizeof st->r)) ||
            (rc = sdr_catalog_put(st->s, "cfdpd", st->root))) {
            sdr_txn_cancel(st->s);
            goto fail_sdr;
        }
        if ((rc = sdr_txn_end(st->s)) || (rc = sdr_flush(st->s)))
            goto fail_sdr;
    }
    for (sdr_off e = sdr_list_first(st->s, st->r.list); e; e = sdr_list_next(st->s, e)) {
        sdr_off obj = sdr_list_data(st->s, e);
        uint64_t h[2];
        if ((rc = sdr_read(st->s, obj, h, sizeof h)) ||
            (rc = ix_add(st, (cfdp_txn_id){h[0], h[1]}, e, obj)))
            goto fail_sdr;
    }
    *next_seq = st->r.next_seq;
    *out = st;
    return 0;
fail_sdr:
    sdr_close(st->s);
fail:
    free(st->ix);
    free(st);
    return rc;
}

void cfdpd_store_close(cfdpd_store *st)
{
    if (!st)
        return;
    sdr_close(st->s);
    free(st->ix);
    free(st);
}

int cfdpd_store_each(cfdpd_store *st, int (*each)(void *arg, const cfdpd_rec *r),
                     void *arg)
{
    for (size_t i = 0; i < st->n; i++) {
        uint8_t h[REC_HDR];
        int rc = sdr_read(st->s, st->ix[i].obj, h, sizeof h);
        if (rc)
            return rc;
        cfdpd_rec r;
        uint32_t len;
        uint16_t nl;
        memcpy(&r.id.src, h, 8);
        memcpy(&r.id.seq, h + 8, 8);
        memcpy(&r.lifetime_s, h + 16, 4);
        memcpy(&len, h + 20, 4);
        memcpy(&nl, h + 24, 2);
        r.priority = (h[REC_PRIO] & PRIO_SET) && (h[REC_PRIO] & 3) <= 2
                         ? (uint8_t)(h[REC_PRIO] & 3)
                         : 1; /* an older record (or a bad value): standard */
        size_t have;
        if ((rc = sdr_size(st->s, st->ix[i].obj, &have)))
            return rc;
        if (have < REC_HDR || (uint64_t)len + nl > have - REC_HDR)
            return TERN_ECORRUPT;
        uint8_t *b = malloc((size_t)len + nl + 1);
        if (!b)
            return -ENOMEM;
        if ((rc = sdr_read(st->s, st->ix[i].obj + REC_HDR, b, (size_t)len + nl))) {
            free(b);
            return rc;
        }
        b[len + nl] = 0;
        r.blob = b;
        r.len = len;
        r.name = (const char *)b + len;
        rc = each(arg, &r);
        free(b);
        if (rc)
            return rc;
    }
    return 0;
}

int cfdpd_store_begin(cfdpd_store *st)
{
    return sdr_txn_begin(st->s);
}

int cfdpd_store_put(cfdpd_store *st, const cfdpd_rec *r)
{
    size_t nl = r->name ? strlen(r->name) : 0;
    if (r->len > UINT32_MAX - REC_HDR - 65535 || nl > 65535)
        return -EMSGSIZE;
    sdr_off obj;
    int rc = sdr_alloc(st->s, REC_HDR + r->len + nl, SDR_OPS, &obj);
    if (rc)
        return rc;
    uint8_t h[REC_HDR] = {0};
    uint32_t len = (uint32_t)r->len;
    uint16_t nl16 = (uint16_t)nl;
    memcpy(h, &r->id.src, 8);
    memcpy(h + 8, &r->id.seq, 8);
    memcpy(h + 16, &r->lifetime_s, 4);
    memcpy(h + 20, &len, 4);
    memcpy(h + 24, &nl16, 2);
    h[REC_PRIO] = (uint8_t)(PRIO_SET | (r->priority <= 2 ? r->priority : 1));
    if ((rc = sdr_write(st->s, obj, h, sizeof h)) ||
        (rc = sdr_write(st->s, obj + REC_HDR, r->blob, r->len)) ||
        (nl && (rc = sdr_write(st->s, obj + REC_HDR + r->len, r->name, nl))))
        return rc;
    struct idx *x = ix_find(st, r->id);
    if (x) {
        /* the element keeps its place; its old object goes */
        sdr_off old = x->obj;
        sdr_off e;
        if ((rc = sdr_list_insert_after(st->s, x->elt, obj, &e)) ||
            (rc = sdr_list_delete(st->s, x->elt, NULL)) || (rc = sdr_free(st->s, old)))
            return rc;
        x->elt = e;
        x->obj = obj;
        return 0;
    }
    sdr_off e;
    if ((rc = sdr_list_insert_last(st->s, st->r.list, obj, &e)))
        return rc;
    return ix_add(st, r->id, e, obj);
}

int cfdpd_store_del(cfdpd_store *st, cfdp_txn_id id)
{
    struct idx *x = ix_find(st, id);
    if (!x)
        return 0;
    int rc;
    if ((rc = sdr_list_delete(st->s, x->elt, NULL)) || (rc = sdr_free(st->s, x->obj)))
        return rc;
    *x = st->ix[--st->n];
    return 0;
}

int cfdpd_store_set_seq(cfdpd_store *st, uint64_t next_seq)
{
    if (st->r.next_seq == next_seq)
        return 0;
    st->r.next_seq = next_seq;
    return sdr_write(st->s, st->root, &st->r, sizeof st->r);
}

int cfdpd_store_commit(cfdpd_store *st, int durable)
{
    int rc = sdr_txn_end(st->s);
    if (!rc && durable)
        rc = sdr_flush(st->s);
    return rc;
}

size_t cfdpd_store_count(const cfdpd_store *st)
{
    return st->n;
}

#define CLOCK_MAGIC 0x4b4c4346u /* "FCLK" */

struct clock_rec {
    uint32_t magic, pad;
    char boot[40];
    int64_t off_ms;
    uint64_t engine_ms, real_ms;
};

int cfdpd_store_get_clock(cfdpd_store *st, cfdpd_clock *c)
{
    sdr_off o;
    struct clock_rec r;
    if (sdr_catalog_get(st->s, "cfdpd-clock", &o))
        return -ENOENT;
    int rc = sdr_read(st->s, o, &r, sizeof r);
    if (rc)
        return rc;
    if (r.magic != CLOCK_MAGIC || !memchr(r.boot, 0, sizeof r.boot))
        return -ENOENT; /* not ours: as if none was saved */
    memcpy(c->boot, r.boot, sizeof c->boot);
    c->off_ms = r.off_ms;
    c->engine_ms = r.engine_ms;
    c->real_ms = r.real_ms;
    return 0;
}

int cfdpd_store_set_clock(cfdpd_store *st, const cfdpd_clock *c)
{
    struct clock_rec r;
    memset(&r, 0, sizeof r);
    r.magic = CLOCK_MAGIC;
    snprintf(r.boot, sizeof r.boot, "%s", c->boot);
    r.off_ms = c->off_ms;
    r.engine_ms = c->engine_ms;
    r.real_ms = c->real_ms;
    sdr_off o;
    int rc;
    if (sdr_catalog_get(st->s, "cfdpd-clock", &o)) {
        if ((rc = sdr_alloc(st->s, sizeof r, SDR_OPS, &o)) ||
            (rc = sdr_catalog_put(st->s, "cfdpd-clock", o)))
            return rc;
    }
    return sdr_write(st->s, o, &r, sizeof r);
}
