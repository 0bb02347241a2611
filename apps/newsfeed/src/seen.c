/* What a receiver has seen: per publisher a floor (every number at or below
 * it is settled), the highest number and a bitmap of the window between
 * them; and a bounded history of Message-ID hashes. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <sodium.h>

#include "nf_int.h"
#include "tern/crc.h"

#define NF__WORDS    (NF_SEEN_WINDOW / 64)
#define NF__HBITS    19 /* 2^19 slots: the history at most 40% full */
#define NF__HSIZE    (1u << NF__HBITS)
#define NF__MAX_PUBS 65536

typedef struct nf__pub {
    char id[NF_PUBLISHER_MAX + 1];
    uint64_t floor, high, accepted, lost;
    uint64_t bits[NF__WORDS]; /* bit (s % WINDOW) for floor < s <= high */
} nf__pub;

struct nf_seen {
    nf__pub *pubs;
    size_t npubs, cap;
    uint64_t *table; /* open addressing, linear probing; 0 = empty */
    uint64_t *ring;  /* the history in arrival order, for forgetting */
    size_t ring_head, ring_n;
};

int nf_seen_new(nf_seen **out)
{
    nf_seen *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    s->table = calloc(NF__HSIZE, sizeof *s->table);
    s->ring = calloc(NF_SEEN_HISTORY, sizeof *s->ring);
    if (!s->table || !s->ring) {
        nf_seen_free(s);
        return -ENOMEM;
    }
    *out = s;
    return 0;
}

void nf_seen_free(nf_seen *s)
{
    if (!s)
        return;
    free(s->pubs);
    free(s->table);
    free(s->ring);
    free(s);
}

/* ----------------------------------------------------------- Message-IDs */

static uint64_t nf__msgid_hash(const char *id, size_t n)
{
    uint8_t h[8];
    crypto_generichash(h, sizeof h, (const uint8_t *)id, n, NULL, 0);
    uint64_t v = nf__get64(h);
    return v ? v : 1; /* 0 marks an empty slot */
}

static size_t nf__slot_of(uint64_t h)
{
    return (size_t)(h >> (64 - NF__HBITS));
}

static bool nf__hist_has(const nf_seen *s, uint64_t h)
{
    for (size_t i = nf__slot_of(h);; i = (i + 1) & (NF__HSIZE - 1)) {
        if (s->table[i] == h)
            return true;
        if (s->table[i] == 0)
            return false;
    }
}

/* Removes h, shifting later members of its probe run back into the hole so
 * no tombstones are needed. */
static void nf__hist_del(nf_seen *s, uint64_t h)
{
    size_t i = nf__slot_of(h);
    while (s->table[i] != h) {
        if (s->table[i] == 0)
            return;
        i = (i + 1) & (NF__HSIZE - 1);
    }
    size_t hole = i;
    for (size_t j = (hole + 1) & (NF__HSIZE - 1); s->table[j];
         j = (j + 1) & (NF__HSIZE - 1)) {
        size_t home = nf__slot_of(s->table[j]);
        /* j's entry may move to hole if its home is not in (hole, j]. */
        bool in = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (!in) {
            s->table[hole] = s->table[j];
            hole = j;
        }
    }
    s->table[hole] = 0;
}

static void nf__hist_add(nf_seen *s, uint64_t h)
{
    if (nf__hist_has(s, h))
        return;
    if (s->ring_n == NF_SEEN_HISTORY) {
        nf__hist_del(s, s->ring[s->ring_head]);
        s->ring_n--;
        s->ring_head = (s->ring_head + 1) % NF_SEEN_HISTORY;
    }
    s->ring[(s->ring_head + s->ring_n++) % NF_SEEN_HISTORY] = h;
    size_t i = nf__slot_of(h);
    while (s->table[i])
        i = (i + 1) & (NF__HSIZE - 1);
    s->table[i] = h;
}

/* ------------------------------------------------------------- sequences */

static nf__pub *nf__find(const nf_seen *s, const char *id)
{
    for (size_t i = 0; i < s->npubs; i++)
        if (strcmp(s->pubs[i].id, id) == 0)
            return &s->pubs[i];
    return NULL;
}

static bool nf__bit(const nf__pub *p, uint64_t seq)
{
    uint64_t b = seq % NF_SEEN_WINDOW;
    return p->bits[b / 64] >> (b % 64) & 1;
}

static void nf__setbit(nf__pub *p, uint64_t seq, bool on)
{
    uint64_t b = seq % NF_SEEN_WINDOW;
    if (on)
        p->bits[b / 64] |= 1ull << (b % 64);
    else
        p->bits[b / 64] &= ~(1ull << (b % 64));
}

/* Raises the floor to f (f <= high), counting unseen numbers as lost. */
static void nf__raise_floor(nf__pub *p, uint64_t f)
{
    if (f <= p->floor)
        return;
    if (f - p->floor >= NF_SEEN_WINDOW || p->high - p->floor > NF_SEEN_WINDOW) {
        /* Everything in the window goes: count its unseen, then the rest. */
        uint64_t seen = 0;
        for (size_t w = 0; w < NF__WORDS; w++)
            seen += (uint64_t)__builtin_popcountll(p->bits[w]);
        p->lost += (f - p->floor) - seen;
        memset(p->bits, 0, sizeof p->bits);
        p->floor = f;
        return;
    }
    while (p->floor < f) {
        p->floor++;
        if (!nf__bit(p, p->floor))
            p->lost++;
        nf__setbit(p, p->floor, false);
    }
}

static int nf__check_seq(const nf__pub *p, uint64_t seq, nf_err *err)
{
    if (!p)
        return 0;
    if (seq <= p->floor)
        return nf__fail(err, NF_R_REPLAY, TERN_EEXIST,
                        "replay: %s #%llu is at or below #%llu, all settled", p->id,
                        (unsigned long long)seq, (unsigned long long)p->floor);
    if (seq <= p->high && nf__bit(p, seq))
        return nf__fail(err, NF_R_REPLAY, TERN_EEXIST,
                        "replay: %s #%llu was seen already", p->id,
                        (unsigned long long)seq);
    return 0;
}

int nf_seen_check(const nf_seen *s, const char *publisher, uint64_t seq,
                  const char *msgid, size_t msgid_len, nf_err *err)
{
    if (seq == 0)
        return nf__fail(err, NF_R_MALFORMED, -EINVAL, "sequence number 0");
    int rc = nf__check_seq(nf__find(s, publisher), seq, err);
    if (rc)
        return rc;
    if (msgid && nf__hist_has(s, nf__msgid_hash(msgid, msgid_len)))
        return nf__fail(err, NF_R_DUPLICATE, TERN_EEXIST, "duplicate: %.*s seen already",
                        (int)(msgid_len > 250 ? 250 : msgid_len), msgid);
    return 0;
}

static int nf__add_pub(nf_seen *s, const char *publisher, nf__pub **out)
{
    if (!nf__publisher_valid(publisher, strlen(publisher)))
        return -EINVAL;
    if (s->npubs == s->cap) {
        if (s->cap >= NF__MAX_PUBS)
            return TERN_EFULL;
        size_t nc = s->cap ? s->cap * 2 : 4;
        nf__pub *np = realloc(s->pubs, nc * sizeof *np);
        if (!np)
            return -ENOMEM;
        s->pubs = np;
        s->cap = nc;
    }
    nf__pub *p = &s->pubs[s->npubs++];
    memset(p, 0, sizeof *p);
    snprintf(p->id, sizeof p->id, "%s", publisher);
    *out = p;
    return 0;
}

int nf_seen_mark(nf_seen *s, const char *publisher, uint64_t seq, const char *msgid,
                 size_t msgid_len, nf_err *err)
{
    int rc = nf_seen_check(s, publisher, seq, msgid, msgid_len, err);
    if (rc)
        return rc;
    nf__pub *p = nf__find(s, publisher);
    if (!p) {
        if ((rc = nf__add_pub(s, publisher, &p)) != 0)
            return nf__fail(err, NF_R_LIMIT, rc, "cannot track publisher %s", publisher);
        p->floor = p->high = seq - 1; /* a late joiner starts here */
    }
    if (seq > p->high) {
        /* Clear the bits the window's new numbers reuse, then keep the
         * window at most NF_SEEN_WINDOW wide. */
        if (seq - p->high >= NF_SEEN_WINDOW) {
            nf__raise_floor(p, p->high); /* count the unseen in the window */
            p->lost += seq - 1 - p->high - (NF_SEEN_WINDOW - 1);
            p->floor = seq - NF_SEEN_WINDOW;
            memset(p->bits, 0, sizeof p->bits);
        } else {
            if (seq - p->floor > NF_SEEN_WINDOW)
                nf__raise_floor(p, seq - NF_SEEN_WINDOW);
            for (uint64_t q = p->high + 1; q <= seq; q++)
                nf__setbit(p, q, false);
        }
        p->high = seq;
    }
    nf__setbit(p, seq, true);
    p->accepted++;
    /* Settle the contiguous run above the floor so the window stays empty in
     * the usual, gapless case. */
    while (p->floor < p->high && nf__bit(p, p->floor + 1)) {
        p->floor++;
        nf__setbit(p, p->floor, false);
    }
    if (msgid)
        nf__hist_add(s, nf__msgid_hash(msgid, msgid_len));
    return 0;
}

int nf_seen_expect(nf_seen *s, const char *publisher, uint64_t floor)
{
    if (nf__find(s, publisher))
        return TERN_EEXIST;
    nf__pub *p;
    int rc = nf__add_pub(s, publisher, &p);
    if (rc)
        return rc;
    p->floor = p->high = floor;
    return 0;
}

int nf_seen_settle(nf_seen *s, const char *publisher, uint64_t seq)
{
    nf__pub *p = nf__find(s, publisher);
    if (!p)
        return TERN_ENOTFOUND;
    if (seq > p->high)
        seq = p->high;
    nf__raise_floor(p, seq);
    while (p->floor < p->high && nf__bit(p, p->floor + 1)) {
        p->floor++;
        nf__setbit(p, p->floor, false);
    }
    return 0;
}

size_t nf_seen_publishers(const nf_seen *s)
{
    return s->npubs;
}

int nf_seen_publisher_at(const nf_seen *s, size_t i, nf_seen_pub *out)
{
    if (i >= s->npubs)
        return TERN_ENOTFOUND;
    const nf__pub *p = &s->pubs[i];
    memset(out, 0, sizeof *out);
    snprintf(out->publisher, sizeof out->publisher, "%s", p->id);
    out->floor = p->floor;
    out->high = p->high;
    out->accepted = p->accepted;
    out->lost = p->lost;
    uint64_t seen = 0;
    for (uint64_t q = p->floor + 1; q <= p->high && q > p->floor; q++)
        seen += nf__bit(p, q);
    out->missing = p->high - p->floor - seen;
    return 0;
}

int nf_seen_gaps(const nf_seen *s, const char *publisher, nf_range *r, size_t max,
                 size_t *n)
{
    const nf__pub *p = nf__find(s, publisher);
    *n = 0;
    if (!p)
        return TERN_ENOTFOUND;
    bool in_gap = false;
    nf_range cur = {0, 0};
    for (uint64_t q = p->floor + 1; q <= p->high && q > p->floor; q++) {
        bool have = nf__bit(p, q);
        if (!have && !in_gap) {
            cur.lo = q;
            in_gap = true;
        }
        if (have && in_gap) {
            cur.hi = q - 1;
            in_gap = false;
            if (*n == max)
                return TERN_ENOSPACE;
            r[(*n)++] = cur;
        }
    }
    if (in_gap) { /* cannot happen (high is always seen), kept for safety */
        cur.hi = p->high;
        if (*n == max)
            return TERN_ENOSPACE;
        r[(*n)++] = cur;
    }
    return 0;
}

/* ----------------------------------------------------------------- files */

static const uint8_t nf__seen_magic[8] = {'N', 'F', 'S', 'E', 'E', 'N', '0', '1'};
#define NF__PUB_REC (1 + NF_PUBLISHER_MAX + 4 * 8 + NF__WORDS * 8)

int nf__seen_encode(const nf_seen *s, uint8_t **out, size_t *out_len)
{
    size_t len = 8 + 4 + s->npubs * NF__PUB_REC + 4 + s->ring_n * 8 + 4;
    uint8_t *buf = calloc(1, len), *w = buf;
    if (!buf)
        return -ENOMEM;
    memcpy(w, nf__seen_magic, 8);
    w += 8;
    nf__put32(w, (uint32_t)s->npubs);
    w += 4;
    for (size_t i = 0; i < s->npubs; i++) {
        const nf__pub *p = &s->pubs[i];
        size_t idl = strlen(p->id);
        *w = (uint8_t)idl;
        memcpy(w + 1, p->id, idl); /* fixed-size record: the rest stays 0 */
        w += 1 + NF_PUBLISHER_MAX;
        nf__put64(w, p->floor);
        nf__put64(w + 8, p->high);
        nf__put64(w + 16, p->accepted);
        nf__put64(w + 24, p->lost);
        w += 32;
        for (size_t k = 0; k < NF__WORDS; k++, w += 8)
            nf__put64(w, p->bits[k]);
    }
    nf__put32(w, (uint32_t)s->ring_n);
    w += 4;
    for (size_t k = 0; k < s->ring_n; k++, w += 8)
        nf__put64(w, s->ring[(s->ring_head + k) % NF_SEEN_HISTORY]);
    nf__put32(w, tern_crc32c(0, buf, (size_t)(w - buf)));
    *out = buf;
    *out_len = len;
    return 0;
}

int nf_seen_save(const nf_seen *s, const char *path, nf_err *err)
{
    uint8_t *buf;
    size_t len;
    int rc = nf__seen_encode(s, &buf, &len);
    if (rc)
        return nf__fail(err, NF_R_IO, rc, "out of memory");
    rc = nf__write_atomic(path, buf, len, 0644);
    free(buf);
    if (rc)
        return nf__fail(err, NF_R_IO, rc, "%s: %s", path, tern_strerror(rc));
    return 0;
}

int nf__seen_decode(const uint8_t *buf, size_t len, nf_seen **out, const char **why_out)
{
    nf_seen *s = NULL;
    const char *why = NULL;
    size_t need;
    int rc;
    if (len < 8 + 4 + 4 + 4 || memcmp(buf, nf__seen_magic, 8) != 0) {
        why = "not a newsfeed state file";
        goto bad;
    }
    if (tern_crc32c(0, buf, len - 4) != nf__get32(buf + len - 4)) {
        why = "checksum mismatch";
        goto bad;
    }
    uint32_t npubs = nf__get32(buf + 8);
    if (npubs > NF__MAX_PUBS || tern_ckd_mul_size(&need, npubs, NF__PUB_REC) ||
        tern_ckd_add_size(&need, need, 8 + 4 + 4 + 4) || need > len) {
        why = "publisher count does not fit the file";
        goto bad;
    }
    if ((rc = nf_seen_new(&s)) != 0) {
        *why_out = "out of memory";
        return rc;
    }
    const uint8_t *r = buf + 12;
    for (uint32_t i = 0; i < npubs; i++, r += NF__PUB_REC) {
        char id[NF_PUBLISHER_MAX + 1];
        size_t idl = r[0];
        if (idl > NF_PUBLISHER_MAX || !nf__publisher_valid((const char *)r + 1, idl)) {
            why = "bad publisher ID";
            goto bad;
        }
        memcpy(id, r + 1, idl);
        id[idl] = 0;
        nf__pub *p;
        if (nf__find(s, id) || nf__add_pub(s, id, &p) != 0) {
            why = "repeated publisher";
            goto bad;
        }
        const uint8_t *q = r + 1 + NF_PUBLISHER_MAX;
        p->floor = nf__get64(q);
        p->high = nf__get64(q + 8);
        p->accepted = nf__get64(q + 16);
        p->lost = nf__get64(q + 24);
        if (p->high < p->floor || p->high - p->floor > NF_SEEN_WINDOW) {
            why = "window out of range";
            goto bad;
        }
        for (size_t k = 0; k < NF__WORDS; k++)
            p->bits[k] = nf__get64(q + 32 + 8 * k);
        /* Only bits for (floor, high] may be set: anything else would be a
         * number "seen" outside the window. */
        for (uint64_t k = 0; k < NF_SEEN_WINDOW; k++) {
            uint64_t seq = p->floor + 1 + k; /* may wrap: then it is outside */
            bool in = k < p->high - p->floor;
            if (!in && nf__bit(p, seq)) {
                why = "window bits outside the window";
                goto bad;
            }
        }
    }
    uint32_t nh = nf__get32(r);
    r += 4;
    if (nh > NF_SEEN_HISTORY || tern_ckd_mul_size(&need, nh, 8) ||
        tern_ckd_add_size(&need, need, (size_t)(r - buf) + 4) || need != len) {
        why = "history does not fit the file";
        goto bad;
    }
    for (uint32_t k = 0; k < nh; k++, r += 8) {
        uint64_t h = nf__get64(r);
        nf__hist_add(s, h ? h : 1);
    }
    *out = s;
    return 0;
bad:
    nf_seen_free(s);
    *why_out = why;
    return TERN_ECORRUPT;
}

int nf_seen_load(nf_seen **out, const char *path, nf_err *err)
{
    uint8_t *buf;
    size_t len;
    size_t max = 8 + 4 + (size_t)NF__MAX_PUBS * NF__PUB_REC + 4 + NF_SEEN_HISTORY * 8 + 4;
    int rc = nf__read_file(path, max, &buf, &len);
    if (rc)
        return nf__fail(err, NF_R_IO, rc, "%s: %s", path, tern_strerror(rc));
    const char *why = NULL;
    rc = nf__seen_decode(buf, len, out, &why);
    free(buf);
    if (rc)
        return nf__fail(err, NF_R_IO, rc, "%s: %s", path, why);
    return 0;
}
