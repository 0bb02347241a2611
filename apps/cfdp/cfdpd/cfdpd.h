/* cfdpd's parts (docs/cfdpd.md): its configuration and its durable store.
 * Private to the daemon. */
#ifndef CFDPD_H
#define CFDPD_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "cfdp.h"
#include "cfdp_rc.h"

/** What cfdpd runs with. cfdpd_config_load fills it from the node's cfdprc
 * (cfdpadmin commands), then the command line, which overrides the file. */
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
    cfdp_peer_cfg defaults; /**< MIB entry of every peer not in peers */
    int verbose;
    int copy_pdus;          /* --copy-pdus: file data as bytes, not by descriptor */
    char rc_path[PATH_MAX]; /**< the cfdprc or host.rc read ("": none) */
    cfdp_rc rc;             /**< what it said: transports, diagnostics */
    cfdp_peer_cfg *peers;   /**< per-peer MIB, parallel to rc.peers */
    size_t npeers;
    int udp;            /**< 1: open the UDP socket (a UDP peer or a port given) */
    char udp_host[256]; /**< address to bind ("": every address) */
    uint16_t udp_port;  /**< port to bind (0: any, published in <node dir>/ports) */
} cfdpd_config;

/** Fills *cfg from argv (cfdpd <node dir> [--rc FILE] [options]) and the
 * cfdprc: --rc FILE, else <node dir>/host.rc's cfdpadmin section, else
 * <node dir>/node.cfdprc, else none. On a bad option writes a line naming it
 * to why and returns -EINVAL; 1 for --help; -errno (why says) if the file
 * cannot be read; TERN_ESYNTAX if it has errors (cfg->rc.diags lists them).
 * Call cfdpd_config_free in every case. */
int cfdpd_config_load(int argc, char **argv, cfdpd_config *cfg, char *why, size_t whylen);

/** Frees what cfdpd_config_load allocated (the rc, the peers). */
void cfdpd_config_free(cfdpd_config *cfg);

/** The UDP peer entry for entity id, or NULL if it is reached over BP. */
const cfdp_rc_peer *cfdpd_config_udp_peer(const cfdpd_config *cfg, uint64_t id);

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

typedef struct cfdpd_udp cfdpd_udp;

/** cfdpd_udp's counters. */
typedef struct cfdpd_udp_stats {
    uint64_t in;          /**< datagrams received (each handed to the entity) */
    uint64_t out;         /**< datagrams sent */
    uint64_t send_errors; /**< datagrams that could not be sent (lost) */
    uint64_t truncated;   /**< datagrams over CFDP_RC_UDP_MAX_PDU, dropped */
    uint64_t unknown;     /**< PDUs for an entity with no address, dropped */
} cfdpd_udp_stats;

/** Binds cfg's UDP port (udp_host:udp_port; port 0 picks one) and resolves
 * every UDP peer's address. On an error writes why (naming the cfdprc line
 * of a peer that does not resolve). */
int cfdpd_udp_open(const cfdpd_config *cfg, cfdpd_udp **out, char *why, size_t whylen);

/** Closes the socket and frees u (NULL is fine). */
void cfdpd_udp_close(cfdpd_udp *u);

/** The socket to poll for datagrams. */
int cfdpd_udp_fd(const cfdpd_udp *u);

/** The port bound. */
unsigned cfdpd_udp_port(const cfdpd_udp *u);

/** 1 if entity id is reached over UDP. */
int cfdpd_udp_has(const cfdpd_udp *u, uint64_t id);

/** Sends one PDU to entity id as one datagram (waits a little when the
 * socket buffer is full). 0, or a negative code (counted as a send error). */
int cfdpd_udp_send(cfdpd_udp *u, uint64_t id, const uint8_t *pdu, size_t len);

/** Takes the next datagram: 1 with *pdu and *len set (valid until the next
 * call), 0 when none waits, or a negative code. */
int cfdpd_udp_recv(cfdpd_udp *u, const uint8_t **pdu, size_t *len);

/** Its counters. */
void cfdpd_udp_stats_get(const cfdpd_udp *u, cfdpd_udp_stats *st);

#endif
