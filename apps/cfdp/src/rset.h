/* Private: a set of byte ranges [start, end), sorted, disjoint and never
 * adjacent (touching ranges merge). Memory is proportional to the number of
 * ranges, never to the span they cover: a receiver keeps what it got, a
 * sender what it must send again. Appending at the end is O(1); other
 * changes are a binary search and a move of the tail. */
#ifndef CFDP_RSET_H
#define CFDP_RSET_H

#include <stddef.h>
#include <stdint.h>

#include "cfdp_pdu.h"

typedef struct cfdp__rset {
    cfdp_range *r;
    size_t n, cap;
    uint64_t total; /* bytes covered */
} cfdp__rset;

/* Called for each piece of an added range that was not in the set before. */
typedef int (*cfdp__rset_piece)(void *arg, uint64_t start, uint64_t end);

void cfdp__rset_free(cfdp__rset *s);
void cfdp__rset_clear(cfdp__rset *s);

/* Adds [start, end) (start <= end); piece (may be NULL) sees each new
 * sub-range, in order, before the set changes; a non-zero return from piece
 * stops and is returned, the set then unchanged. -ENOMEM. */
int cfdp__rset_add(cfdp__rset *s, uint64_t start, uint64_t end, cfdp__rset_piece piece,
                   void *arg);

/* Removes [start, end). -ENOMEM (a split needs a slot). */
int cfdp__rset_remove(cfdp__rset *s, uint64_t start, uint64_t end);

/* 1 if [start, end) is wholly in the set (an empty range is). */
int cfdp__rset_covers(const cfdp__rset *s, uint64_t start, uint64_t end);

/* The first gap at or after pos and before limit: 1 and *gs, *ge set, or 0. */
int cfdp__rset_next_gap(const cfdp__rset *s, uint64_t pos, uint64_t limit, uint64_t *gs,
                        uint64_t *ge);

/* Number of gaps in [0, limit). */
uint64_t cfdp__rset_gap_count(const cfdp__rset *s, uint64_t limit);

/* The highest end in the set (0 if empty). */
uint64_t cfdp__rset_max(const cfdp__rset *s);

#endif
