/* The range set (rset.h). */
#include "rset.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void cfdp__rset_free(cfdp__rset *s)
{
    free(s->r);
    memset(s, 0, sizeof *s);
}

void cfdp__rset_clear(cfdp__rset *s)
{
    s->n = 0;
    s->total = 0;
}

static int reserve(cfdp__rset *s, size_t n)
{
    if (n <= s->cap)
        return 0;
    size_t c = s->cap ? s->cap * 2 : 4;
    while (c < n)
        c *= 2;
    cfdp_range *r = realloc(s->r, c * sizeof *r);
    if (!r)
        return -ENOMEM;
    s->r = r;
    s->cap = c;
    return 0;
}

/* The first index whose range ends at or after pos. */
static size_t lower(const cfdp__rset *s, uint64_t pos)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->r[mid].end < pos)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int cfdp__rset_add(cfdp__rset *s, uint64_t start, uint64_t end, cfdp__rset_piece piece,
                   void *arg)
{
    if (start >= end)
        return 0;
    /* the common case: in order, at or after the end */
    if (s->n && s->r[s->n - 1].end <= start) {
        cfdp_range *last = &s->r[s->n - 1];
        if (piece) {
            int rc = piece(arg, start, end);
            if (rc)
                return rc;
        }
        if (last->end == start) {
            last->end = end;
        } else {
            int rc = reserve(s, s->n + 1);
            if (rc)
                return rc;
            s->r[s->n++] = (cfdp_range){start, end};
        }
        s->total += end - start;
        return 0;
    }
    size_t i = lower(s, start), j = i;
    uint64_t cur = start, added = 0;
    while (j < s->n && s->r[j].start <= end) {
        if (s->r[j].start > cur) {
            if (piece) {
                int rc = piece(arg, cur, s->r[j].start);
                if (rc)
                    return rc;
            }
            added += s->r[j].start - cur;
        }
        if (s->r[j].end > cur)
            cur = s->r[j].end;
        j++;
    }
    if (cur < end) {
        if (piece) {
            int rc = piece(arg, cur, end);
            if (rc)
                return rc;
        }
        added += end - cur;
    }
    if (j == i) { /* no overlap: insert at i */
        int rc = reserve(s, s->n + 1);
        if (rc)
            return rc;
        memmove(&s->r[i + 1], &s->r[i], (s->n - i) * sizeof *s->r);
        s->r[i] = (cfdp_range){start, end};
        s->n++;
    } else {
        cfdp_range m = {s->r[i].start < start ? s->r[i].start : start,
                        s->r[j - 1].end > end ? s->r[j - 1].end : end};
        s->r[i] = m;
        memmove(&s->r[i + 1], &s->r[j], (s->n - j) * sizeof *s->r);
        s->n -= j - i - 1;
    }
    s->total += added;
    return 0;
}

int cfdp__rset_remove(cfdp__rset *s, uint64_t start, uint64_t end)
{
    if (start >= end || !s->n)
        return 0;
    size_t i = lower(s, start + 1); /* first range ending after start */
    while (i < s->n && s->r[i].start < end) {
        cfdp_range *r = &s->r[i];
        uint64_t os = r->start > start ? r->start : start;
        uint64_t oe = r->end < end ? r->end : end;
        if (r->start < start && r->end > end) { /* split */
            int rc = reserve(s, s->n + 1);
            if (rc)
                return rc;
            r = &s->r[i];
            memmove(&s->r[i + 1], &s->r[i], (s->n - i) * sizeof *s->r);
            s->n++;
            s->r[i].end = start;
            s->r[i + 1].start = end;
            s->total -= end - start;
            return 0;
        }
        s->total -= oe - os;
        if (r->start >= start && r->end <= end) {
            memmove(&s->r[i], &s->r[i + 1], (s->n - i - 1) * sizeof *s->r);
            s->n--;
            continue;
        }
        if (r->start < start)
            r->end = start;
        else
            r->start = end;
        i++;
    }
    return 0;
}

int cfdp__rset_covers(const cfdp__rset *s, uint64_t start, uint64_t end)
{
    if (start >= end)
        return 1;
    size_t i = lower(s, start + 1);
    return i < s->n && s->r[i].start <= start && s->r[i].end >= end;
}

int cfdp__rset_next_gap(const cfdp__rset *s, uint64_t pos, uint64_t limit, uint64_t *gs,
                        uint64_t *ge)
{
    while (pos < limit) {
        size_t i = lower(s, pos + 1); /* first range ending after pos */
        if (i == s->n || s->r[i].start > pos) {
            *gs = pos;
            uint64_t e = i == s->n ? limit : s->r[i].start;
            *ge = e < limit ? e : limit;
            return 1;
        }
        pos = s->r[i].end;
    }
    return 0;
}

uint64_t cfdp__rset_gap_count(const cfdp__rset *s, uint64_t limit)
{
    uint64_t n = 0, pos = 0;
    for (size_t i = 0; i < s->n && s->r[i].start < limit; i++) {
        if (s->r[i].start > pos)
            n++;
        pos = s->r[i].end;
    }
    return n + (pos < limit);
}

uint64_t cfdp__rset_max(const cfdp__rset *s)
{
    return s->n ? s->r[s->n - 1].end : 0;
}
