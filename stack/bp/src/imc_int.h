/* The multicast table the agent keeps (imc.c). */
#ifndef TERN_BP_IMC_INT_H
#define TERN_BP_IMC_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bp_imc.h"
#include "sdr.h"

/* One group: the other nodes known to be members, and whether this one is. */
typedef struct bp__imc_group {
    uint64_t group;
    uint64_t *nodes; /* sorted */
    size_t n, cap;
    bool local;
} bp__imc_group;

typedef struct bp__imc {
    bp__imc_group *g; /* sorted by group */
    size_t n, cap;
    uint64_t *region; /* nodes the host named (bp_agent_imc_node_add), sorted */
    size_t nregion, capregion;
    bp_imc_stats st;
} bp__imc;

bool bp__u64_has(const uint64_t *v, size_t n, uint64_t x);
int bp__u64_add(uint64_t **v, size_t *n, size_t *cap, size_t max, uint64_t x);
int bp__u64_del(uint64_t *v, size_t *n, uint64_t x);

bp__imc_group *bp__imc_find(const bp__imc *t, uint64_t group);
/* 1 if the membership changed, 0 if not, TERN_EFULL past the table's bounds. */
int bp__imc_member_set(bp__imc *t, uint64_t group, uint64_t node, bool member);
int bp__imc_local_set(bp__imc *t, uint64_t group, bool member);
void bp__imc_free(bp__imc *t);
int bp__imc_save(bp__imc *t, sdr *s, const char *name);
int bp__imc_load(bp__imc *t, const sdr *s, const char *name);

#endif
