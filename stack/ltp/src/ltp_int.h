/* libltp internals (not installed). */
#ifndef TERN_LTP_INT_H
#define TERN_LTP_INT_H

#include "ltp.h"

/* ---- interval sets: sorted, merged, half-open [lo, hi) ---------------- */
struct ltp_iv {
    uint64_t lo, hi;
};
struct ltp_ivset {
    struct ltp_iv *v;
    size_t n, cap;
};
/* Adds [lo, hi); *added (may be NULL) gets how many bytes were new.
 * TERN_EFULL, changing nothing, if that needs an interval beyond max_n. */
int ltp__iv_add(struct ltp_ivset *s, uint64_t lo, uint64_t hi, size_t max_n,
                uint64_t *added);
int ltp__iv_covers(const struct ltp_ivset *s, uint64_t lo, uint64_t hi);
void ltp__iv_free(struct ltp_ivset *s);

/* ---- a map from (a, b) to a pointer, open addressing ------------------- */
struct ltp_map_ent {
    uint64_t a, b;
    void *p; /* NULL: empty; LTP_MAP_TOMB: deleted */
};
struct ltp_map {
    struct ltp_map_ent *t;
    size_t cap, n, used; /* used counts tombstones too */
};
#define LTP_MAP_TOMB ((void *)1)
void *ltp__map_get(const struct ltp_map *m, uint64_t a, uint64_t b);
int ltp__map_put(struct ltp_map *m, uint64_t a, uint64_t b, void *p);
void ltp__map_del(struct ltp_map *m, uint64_t a, uint64_t b);
void ltp__map_free(struct ltp_map *m);

#endif
