/* Private structures of the bundle agent (agent.c, map.c). */
#ifndef TERN_BP_AGENT_INT_H
#define TERN_BP_AGENT_INT_H

#include "bp_agent.h"

/* Where a bundle is. */
enum {
    BN_LOOSE = 0, /* in no list (being dispatched, or just made) */
    BN_PENDING,   /* loaded from the store, waiting for bp_agent_resume */
    BN_LIMBO,     /* no route */
    BN_QUEUED,    /* on an outduct queue */
    BN_FLIGHT,    /* handed to a CLA */
    BN_DELIVERY,  /* in an endpoint queue */
    BN_FRAG,      /* a fragment waiting for its siblings */
    BN_DEAD,      /* deleted while in flight: freed when the CLA reports */
    BN_LENT,      /* handed to an application, not yet acknowledged */
};

typedef struct bp__bnd bp__bnd;

/* An intrusive FIFO of bundles. */
typedef struct bp__bq {
    bp__bnd *head, *tail;
    size_t n;
} bp__bq;

/* One bundle the agent holds (its bytes are in the store). */
struct bp__bnd {
    bp__bnd *next, *prev;
    sdr_off rec, elt; /* store record and its element in the bundle list */
    uint64_t len;     /* encoded bytes */
    uint64_t arrival_ms;
    uint64_t expire_ms;
    size_t hidx;   /* position in the expiry heap */
    uint64_t xmit; /* transmission id while in flight */
    uint8_t *xbuf; /* the encoded copy a CLA is sending */
    bp_outduct *od;
    struct bp__ep *ep;
    struct bp__fragset *fs;
    uint64_t foff, flen; /* fragments: offset and payload length */
    uint32_t pflags;     /* the primary's processing flags */
    uint8_t state, prio, ordinal, blob; /* blob: REC_INLINE, REC_BLOB or REC_FILE */
    struct bp__file *file; /* REC_FILE: the open file, once looked up */
    uint64_t claim; /* the receive claim it came in with (0: none) */
    bool wire;      /* the stored bytes are what goes on the wire from here */
    bool drop_late; /* deleted in flight: leaves the store when the CLA reports */
};

static inline void bp__bq_push(bp__bq *q, bp__bnd *b, int front)
{
    if (front) {
        b->prev = NULL;
        b->next = q->head;
        if (q->head)
            q->head->prev = b;
        else
            q->tail = b;
        q->head = b;
    } else {
        b->next = NULL;
        b->prev = q->tail;
        if (q->tail)
            q->tail->next = b;
        else
            q->head = b;
        q->tail = b;
    }
    q->n++;
}

static inline void bp__bq_remove(bp__bq *q, bp__bnd *b)
{
    if (b->prev)
        b->prev->next = b->next;
    else
        q->head = b->next;
    if (b->next)
        b->next->prev = b->prev;
    else
        q->tail = b->prev;
    b->next = b->prev = NULL;
    q->n--;
}

/* An open-addressing map from nonzero 64-bit keys to pointers. */
typedef struct bp__map {
    uint64_t *keys;
    void **vals;
    size_t cap, n; /* cap: a power of two */
} bp__map;

int bp__map_init(bp__map *m, size_t cap);
void bp__map_free(bp__map *m);
void *bp__map_get(const bp__map *m, uint64_t key);
int bp__map_put(bp__map *m, uint64_t key, void *val);
void *bp__map_del(bp__map *m, uint64_t key);

/* 64-bit mixing of a value into a hash. */
static inline uint64_t bp__mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 29;
    return h;
}

#endif
