/* The heap allocator: segregated free lists over boundary-tagged blocks.
 *
 * Each block header records its own size and its predecessor's, so
 * neighbours coalesce in O(1) without footers inside objects. Free lists are
 * doubly linked through the headers, one per size class, with a bitmap of
 * non-empty classes so a fit is found with a few word scans. */
#include <stddef.h>
#include <stdio.h>

#include "sdr_int.h"

#define F_SIZE        0
#define F_PREV        8
#define F_NEXTF       16
#define F_PREVF       24
#define SB_OFF(field) offsetof(struct sdr_sb, field)

static uint64_t blk_sf(const sdr *s, uint64_t b)
{
    return sdr__rd64(s, b + F_SIZE);
}

static uint64_t blk_size(const sdr *s, uint64_t b)
{
    return blk_sf(s, b) & ~(uint64_t)SDR_FLAGMASK;
}

static unsigned size_class(uint64_t sz)
{
    if (sz < 2048)
        return (unsigned)(sz / SDR_ALIGN);
    unsigned e = 63u - (unsigned)__builtin_clzll(sz);
    unsigned c = 64u + (e - 11u) * 4u + (unsigned)((sz >> (e - 2)) & 3u);
    return c < SDR_NCLASSES ? c : SDR_NCLASSES - 1;
}

/* ---- block-start bitmap (memory only; rebuilt at open) */

static void start_set(sdr *s, uint64_t b, int on)
{
    uint64_t slot = b / SDR_ALIGN, bit = UINT64_C(1) << (slot % 64);
    uint64_t *w = &s->starts[slot / 64];
    if (!!(*w & bit) == !!on)
        return;
    *w ^= bit;
    if (s->in_txn) {
        if (s->nflips == s->capflips) {
            size_t nc = s->capflips ? s->capflips * 2 : 64;
            uint64_t *p = realloc(s->flips, nc * sizeof *p);
            if (!p) {
                sdr__fail(s, -ENOMEM);
                return;
            }
            s->flips = p;
            s->capflips = nc;
        }
        s->flips[s->nflips++] = slot;
    }
}

static int start_get(const sdr *s, uint64_t b)
{
    uint64_t slot = b / SDR_ALIGN;
    return (s->starts[slot / 64] >> (slot % 64)) & 1;
}

void sdr__flip_undo(sdr *s)
{
    while (s->nflips > 0) {
        uint64_t slot = s->flips[--s->nflips];
        s->starts[slot / 64] ^= UINT64_C(1) << (slot % 64);
    }
}

void sdr__starts_rebuild(sdr *s)
{
    memset(s->starts, 0, ((s->heap_size / SDR_ALIGN + 63) / 64) * 8);
    uint64_t hs = sdr__sb(s)->heap_size;
    if (hs > s->heap_size)
        hs = s->heap_size; /* a damaged superblock; sdr_check reports it */
    for (uint64_t b = SDR_SB_SIZE; b < hs;) {
        uint64_t sz = blk_size(s, b);
        if (sz < SDR_MIN_BLOCK || sz > hs - b)
            break; /* sdr_check reports it */
        uint64_t slot = b / SDR_ALIGN;
        s->starts[slot / 64] |= UINT64_C(1) << (slot % 64);
        b += sz;
    }
}

/* ---- free lists */

static void nonempty_set(sdr *s, unsigned c, int on)
{
    uint64_t w = sdr__sb(s)->nonempty[c / 64];
    uint64_t nw = on ? w | (UINT64_C(1) << (c % 64)) : w & ~(UINT64_C(1) << (c % 64));
    if (nw != w)
        sdr__w64(s, SB_OFF(nonempty) + (c / 64) * 8, nw);
}

static void fl_insert(sdr *s, uint64_t b, uint64_t sz)
{
    unsigned c = size_class(sz);
    uint64_t head = sdr__sb(s)->heads[c];
    sdr__w64(s, b + F_NEXTF, head);
    sdr__w64(s, b + F_PREVF, 0);
    if (head)
        sdr__w64(s, head + F_PREVF, b);
    else
        nonempty_set(s, c, 1);
    sdr__w64(s, SB_OFF(heads) + c * 8, b);
}

static void fl_remove(sdr *s, uint64_t b, uint64_t sz)
{
    unsigned c = size_class(sz);
    uint64_t n = sdr__rd64(s, b + F_NEXTF), p = sdr__rd64(s, b + F_PREVF);
    if (p)
        sdr__w64(s, p + F_NEXTF, n);
    else {
        sdr__w64(s, SB_OFF(heads) + c * 8, n);
        if (!n)
            nonempty_set(s, c, 0);
    }
    if (n)
        sdr__w64(s, n + F_PREVF, p);
}

/* The heap comes zeroed from calloc: not touching it again keeps a large
 * in-memory store's pages unmapped until used (a simulation holds hundreds). */
void sdr__heap_format(sdr *s)
{
    struct sdr_sb *sb = sdr__sb(s);
    uint64_t hs = s->heap_size & ~(uint64_t)(SDR_ALIGN - 1);
    sb->magic = SDR_MAGIC;
    sb->heap_size = hs;
    sb->next_seg = 1;
    uint64_t b = SDR_SB_SIZE, sz = hs - SDR_SB_SIZE;
    struct sdr_blk h = {sz, 0, 0, 0};
    memcpy(s->heap + b, &h, sizeof h);
    unsigned c = size_class(sz);
    sb->heads[c] = b;
    sb->nonempty[c / 64] |= UINT64_C(1) << (c % 64);
    sdr__starts_rebuild(s);
}

static uint64_t find_fit(const sdr *s, uint64_t need)
{
    const struct sdr_sb *sb = sdr__sb(s);
    unsigned c = size_class(need);
    /* Same class: sizes in a wide class vary, so look for a fit (bounded). */
    int budget = 64;
    for (uint64_t b = sb->heads[c]; b && budget--; b = sdr__rd64(s, b + F_NEXTF))
        if (blk_size(s, b) >= need)
            return b;
    /* Any block of a higher class fits: take the first non-empty one's head. */
    for (unsigned cc = c + 1; cc < SDR_NCLASSES;) {
        uint64_t w = sb->nonempty[cc / 64] & (~UINT64_C(0) << (cc % 64));
        if (w)
            return sb->heads[(cc & ~63u) + (unsigned)__builtin_ctzll(w)];
        cc = (cc & ~63u) + 64;
    }
    return 0;
}

int sdr__alloc(sdr *s, size_t size, int cls, uint64_t *out)
{
    struct sdr_sb *sb = sdr__sb(s);
    if (size > sb->heap_size)
        return TERN_EFULL;
    uint64_t need =
        ((uint64_t)(size ? size : 1) + SDR_ALIGN - 1) & ~(uint64_t)(SDR_ALIGN - 1);
    need += SDR_HDR;
    if (cls == SDR_BULK) {
        uint64_t usable = sb->heap_size - SDR_SB_SIZE;
        uint64_t reserve = usable / 100 * s->reserve_pct;
        if (sb->in_use + need > usable - reserve)
            return TERN_EFULL;
    }
    uint64_t b = find_fit(s, need);
    if (!b)
        return TERN_EFULL;
    uint64_t sz = blk_size(s, b);
    fl_remove(s, b, sz);
    uint64_t flags = SDR_INUSE | (cls == SDR_BULK ? SDR_BULKF : 0);
    if (sz - need >= SDR_MIN_BLOCK) {
        uint64_t r = b + need, rsz = sz - need;
        sdr__w64(s, r + F_SIZE, rsz);
        sdr__w64(s, r + F_PREV, need);
        if (r + rsz < sb->heap_size)
            sdr__w64(s, r + rsz + F_PREV, rsz);
        fl_insert(s, r, rsz);
        start_set(s, r, 1);
        sz = need;
    }
    sdr__w64(s, b + F_SIZE, sz | flags);
    sdr__w64(s, SB_OFF(in_use), sb->in_use + sz);
    sdr__w64(s, SB_OFF(objects), sb->objects + 1);
    if (cls == SDR_BULK)
        sdr__w64(s, SB_OFF(in_use_bulk), sb->in_use_bulk + sz);
    if (s->txn_err)
        return s->txn_err;
    *out = b + SDR_HDR;
    return 0;
}

int sdr__obj_ok(const sdr *s, uint64_t off, uint64_t *usable)
{
    uint64_t hs = sdr__sb(s)->heap_size;
    if (off < SDR_SB_SIZE + SDR_HDR || off >= hs || off % SDR_ALIGN)
        return -EINVAL;
    uint64_t b = off - SDR_HDR;
    if (!start_get(s, b) || !(blk_sf(s, b) & SDR_INUSE))
        return -EINVAL;
    if (usable)
        *usable = blk_size(s, b) - SDR_HDR;
    return 0;
}

int sdr__obj_containing(const sdr *s, uint64_t off, uint64_t n)
{
    uint64_t hs = sdr__sb(s)->heap_size;
    if (off < SDR_SB_SIZE || off >= hs)
        return -EINVAL;
    int64_t slot = (int64_t)(off / SDR_ALIGN);
    for (int64_t w = slot / 64; w >= 0; w--) {
        uint64_t bits = s->starts[w];
        if (w == slot / 64)
            bits &=
                (slot % 64 == 63) ? ~UINT64_C(0) : ((UINT64_C(1) << (slot % 64 + 1)) - 1);
        if (!bits)
            continue;
        uint64_t b =
            ((uint64_t)w * 64 + 63 - (uint64_t)__builtin_clzll(bits)) * SDR_ALIGN;
        uint64_t sf = blk_sf(s, b);
        if (!(sf & SDR_INUSE) || off < b + SDR_HDR ||
            n > (sf & ~(uint64_t)SDR_FLAGMASK) ||
            off + n > b + (sf & ~(uint64_t)SDR_FLAGMASK))
            return -EINVAL;
        return 0;
    }
    return -EINVAL;
}

int sdr__free(sdr *s, uint64_t off)
{
    struct sdr_sb *sb = sdr__sb(s);
    int rc = sdr__obj_ok(s, off, NULL);
    if (rc)
        return rc;
    uint64_t b = off - SDR_HDR, sf = blk_sf(s, b), sz = sf & ~(uint64_t)SDR_FLAGMASK;
    sdr__w64(s, SB_OFF(in_use), sb->in_use - sz);
    sdr__w64(s, SB_OFF(objects), sb->objects - 1);
    if (sf & SDR_BULKF)
        sdr__w64(s, SB_OFF(in_use_bulk), sb->in_use_bulk - sz);
    uint64_t nb = b + sz;
    if (nb < sb->heap_size && !(blk_sf(s, nb) & SDR_INUSE)) {
        uint64_t nsz = blk_size(s, nb);
        fl_remove(s, nb, nsz);
        start_set(s, nb, 0);
        sz += nsz;
    }
    uint64_t psz = sdr__rd64(s, b + F_PREV);
    if (psz) {
        uint64_t pb = b - psz;
        if (!(blk_sf(s, pb) & SDR_INUSE)) {
            fl_remove(s, pb, psz);
            start_set(s, b, 0);
            b = pb;
            sz += psz;
        }
    }
    sdr__w64(s, b + F_SIZE, sz);
    if (b + sz < sb->heap_size)
        sdr__w64(s, b + sz + F_PREV, sz);
    fl_insert(s, b, sz);
    return s->txn_err;
}

uint64_t sdr__largest_free(const sdr *s)
{
    const struct sdr_sb *sb = sdr__sb(s);
    for (int c = SDR_NCLASSES - 1; c >= 0; c--) {
        if (!sb->heads[c])
            continue;
        uint64_t best = 0;
        for (uint64_t b = sb->heads[c]; b; b = sdr__rd64(s, b + F_NEXTF))
            if (blk_size(s, b) > best)
                best = blk_size(s, b);
        return best - SDR_HDR;
    }
    return 0;
}

#define BAD(...)                                                                         \
    do {                                                                                 \
        if (why)                                                                         \
            snprintf(why, whylen, __VA_ARGS__);                                          \
        return TERN_ECORRUPT;                                                            \
    } while (0)

int sdr__heap_check(const sdr *s, char *why, size_t whylen)
{
    const struct sdr_sb *sb = sdr__sb(s);
    uint64_t hs = sb->heap_size;
    if (sb->magic != SDR_MAGIC)
        BAD("heap superblock magic is %#llx", (unsigned long long)sb->magic);
    if (hs > s->heap_size || hs < SDR_SB_SIZE + SDR_MIN_BLOCK)
        BAD("heap size %llu in superblock, store has %llu", (unsigned long long)hs,
            (unsigned long long)s->heap_size);
    uint64_t used = 0, used_bulk = 0, objs = 0, freeb = 0, nfree = 0, prev = 0;
    int prev_free = 0;
    for (uint64_t b = SDR_SB_SIZE; b < hs;) {
        uint64_t sf = blk_sf(s, b), sz = sf & ~(uint64_t)SDR_FLAGMASK;
        if (sz < SDR_MIN_BLOCK || sz % SDR_ALIGN || sz > hs - b)
            BAD("block at %llu has bad size %llu", (unsigned long long)b,
                (unsigned long long)sz);
        if (sdr__rd64(s, b + F_PREV) != prev)
            BAD("block at %llu records previous size %llu, previous block is %llu",
                (unsigned long long)b, (unsigned long long)sdr__rd64(s, b + F_PREV),
                (unsigned long long)prev);
        if (!start_get(s, b))
            BAD("block at %llu missing from the start map", (unsigned long long)b);
        for (uint64_t k = b + SDR_ALIGN; k < b + sz; k += SDR_ALIGN)
            if (start_get(s, k))
                BAD("start map marks %llu inside block %llu", (unsigned long long)k,
                    (unsigned long long)b);
        if (sf & SDR_INUSE) {
            used += sz;
            objs++;
            if (sf & SDR_BULKF)
                used_bulk += sz;
            prev_free = 0;
        } else {
            if (prev_free)
                BAD("adjacent free blocks at %llu (not coalesced)",
                    (unsigned long long)b);
            freeb += sz;
            nfree++;
            prev_free = 1;
        }
        prev = sz;
        b += sz;
    }
    if (used + freeb != hs - SDR_SB_SIZE)
        BAD("used %llu + free %llu != heap %llu", (unsigned long long)used,
            (unsigned long long)freeb, (unsigned long long)(hs - SDR_SB_SIZE));
    if (used != sb->in_use || objs != sb->objects || used_bulk != sb->in_use_bulk)
        BAD("superblock counts in use %llu/%llu objects %llu/%llu bulk %llu/%llu",
            (unsigned long long)sb->in_use, (unsigned long long)used,
            (unsigned long long)sb->objects, (unsigned long long)objs,
            (unsigned long long)sb->in_use_bulk, (unsigned long long)used_bulk);
    uint64_t listed = 0;
    for (unsigned c = 0; c < SDR_NCLASSES; c++) {
        int bit = (sb->nonempty[c / 64] >> (c % 64)) & 1;
        if (bit != (sb->heads[c] != 0))
            BAD("class %u: non-empty bit %d but head %llu", c, bit,
                (unsigned long long)sb->heads[c]);
        uint64_t p = 0;
        for (uint64_t b = sb->heads[c]; b; b = sdr__rd64(s, b + F_NEXTF)) {
            if (b < SDR_SB_SIZE || b >= hs || !start_get(s, b) ||
                (blk_sf(s, b) & SDR_INUSE))
                BAD("class %u lists %llu, which is not a free block", c,
                    (unsigned long long)b);
            if (size_class(blk_size(s, b)) != c)
                BAD("block %llu of size %llu on list %u", (unsigned long long)b,
                    (unsigned long long)blk_size(s, b), c);
            if (sdr__rd64(s, b + F_PREVF) != p)
                BAD("free list %u: back link of %llu broken", c, (unsigned long long)b);
            if (++listed > nfree)
                BAD("free lists hold more blocks than the heap (%llu)",
                    (unsigned long long)nfree);
            p = b;
        }
    }
    if (listed != nfree)
        BAD("%llu free blocks, %llu on free lists", (unsigned long long)nfree,
            (unsigned long long)listed);
    if (sb->next_seg == 0 || sb->next_seg > (UINT64_C(1) << 32))
        BAD("blob segment counter %llu out of range", (unsigned long long)sb->next_seg);
    if (sb->catalog && sdr__list_check(s, sb->catalog, why, whylen))
        return TERN_ECORRUPT;
    if (sb->blob_segs && sdr__list_check(s, sb->blob_segs, why, whylen))
        return TERN_ECORRUPT;
    return 0;
}
