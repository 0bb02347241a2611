/* cfdpd's parts (docs/cfdpd.md): its configuration and its durable store.
 * Private to the daemon. */
#ifndef CFDPD_H
#define CFDPD_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "cfdp.h"

/** What cfdpd runs with. cfdpd_config_load fills it from the command line
 * and defaults; the cfdprc reader (issue 20) will feed the same struct. */
typedef struct cfdpd_config {
    char node_dir[PATH_MAX];
    char root[PATH_MAX];    /**< filestore root ("": <node dir>/cfdp) */
    uint64_t entity;        /**< 0: the node's number */
    uint32_t rx_service;    /**< ipn service it receives on [65] */
    uint32_t tx_service;    /**< ipn service it sends from [64] */
    uint32_t peer_service;  /**< service of the peers' entities [65] */
    uint64_t heap_mb;       /**< its store's heap [64] */
    int memory_store;       /**< 1: a memory store (state lost at exit) */
    uint32_t lifetime_s;    /**< default bundle lifetime [86400] */
    cfdp_peer_cfg defaults; /**< MIB entry of every peer */
    int verbose;
} cfdpd_config;

/** Fills *cfg from argv (cfdpd <node dir> [options]); on an error writes a
 * line naming the option to why and returns -EINVAL; 1 for --help. */
int cfdpd_config_load(int argc, char **argv, cfdpd_config *cfg, char *why, size_t whylen);

/** The usage text. */
const char *cfdpd_usage(void);

typedef struct cfdpd_store cfdpd_store;

/** A saved transaction as cfdpd keeps it. */
typedef struct cfdpd_rec {
    cfdp_txn_id id;
    uint32_t lifetime_s;
    const uint8_t *blob; /**< cfdp_txn_save's bytes */
    size_t len;
    const char *name; /**< receiver: its file in the filestore (NULL/"": none) */
} cfdpd_rec;

/** Opens (creates) the store "cfdpd" in dir (durable, group commit) or in
 * memory; *next_seq gets the persisted next sequence number (1 if new). */
int cfdpd_store_open(const char *dir, uint64_t heap_mb, int memory, cfdpd_store **out,
                     uint64_t *next_seq, char *why, size_t whylen);

/** Closes it (what was committed is durable). */
void cfdpd_store_close(cfdpd_store *s);

/** Calls each for every saved transaction; non-zero stops. */
int cfdpd_store_each(cfdpd_store *s, int (*each)(void *arg, const cfdpd_rec *r),
                     void *arg);

/** Starts a batch of changes (one store transaction). */
int cfdpd_store_begin(cfdpd_store *s);

/** Saves (replaces) transaction r, inside a batch. */
int cfdpd_store_put(cfdpd_store *s, const cfdpd_rec *r);

/** Removes transaction id if saved, inside a batch. */
int cfdpd_store_del(cfdpd_store *s, cfdp_txn_id id);

/** Records the next sequence number, inside a batch. */
int cfdpd_store_set_seq(cfdpd_store *s, uint64_t next_seq);

/** Commits the batch; with durable 1 also waits until it is on disk. */
int cfdpd_store_commit(cfdpd_store *s, int durable);

/** Saved transactions now. */
size_t cfdpd_store_count(const cfdpd_store *s);

#endif
