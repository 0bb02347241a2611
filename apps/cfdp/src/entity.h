/* Private: the entity's structures, shared by the machines (entity.c) and
 * the serialisation (txn_save.c). */
#ifndef CFDP_ENTITY_H
#define CFDP_ENTITY_H

#include <stdint.h>

#include "cfdp.h"
#include "cfdp_cksum.h"
#include "rset.h"

/* A transaction's timers: absolute deadlines, OFF when not running. */
enum { T_ACK, T_NAK, T_INACT, T_KA, T_CHECK, T_PROMPT, T_NAKDELAY, T_LINGER, NT };
#define OFF UINT64_MAX

typedef struct txn {
    cfdp_txn_id id;
    uint64_t peer;
    cfdp_peer_cfg pc; /* the MIB entry when the transaction began */
    uint8_t role, cls, state, suspended, closure, ck_type, large, crc;
    uint8_t condition; /* the fault or cancel that ends it, 0 while fine */
    uint8_t delivery, file_status, ended; /* ended: FINISHED/ABANDONED issued */
    uint8_t ck_ok;                        /* checksum type computable */
    uint64_t fault_entity;
    uint8_t handlers[16]; /* fault handler overrides (0: the MIB's) */

    struct txn *hnext; /* hash chain */
    struct txn *rnext; /* ready list */
    uint8_t in_ready;
    size_t hidx;                /* timer heap slot, SIZE_MAX if none */
    uint64_t wake;              /* min of t[] */
    uint64_t t[NT], frozen[NT]; /* frozen: time left while suspended */
    uint16_t ack_count, nak_count, check_count;

    void *file;
    char src[256], dst[256];
    uint64_t size; /* sender: the file's; receiver: from EOF (or Metadata) */
    cfdp_cksum ck;
    uint8_t *opts; /* Metadata options, raw */
    size_t opts_len, opts_count;

    /* sender */
    uint64_t next_off; /* first pass: sent [0, next_off) */
    cfdp__rset resend; /* NAKed ranges still to send again */
    uint8_t need_md, need_eof, need_ack_fin, need_prompt; /* prompt: response + 1 */
    uint8_t eof_sent, eof_acked, ack_fin_cond;
    uint32_t cksum_val;
    uint64_t resent;

    /* receiver */
    cfdp__rset got; /* file bytes held */
    uint8_t md_got, eof_got, eof_cond, need_ack_eof, need_nak, need_fin, need_ka;
    uint8_t fin_sent, nak_md; /* nak_md: this NAK round still asks for Metadata */
    uint64_t md_size, eof_size;
    uint32_t eof_cksum;
    uint64_t nak_cursor, nak_scope_end, naked_upto, nak_arm_hwm, got_at_nak;
    struct early *early; /* file data that came before Metadata (bounded) */
    size_t early_bytes;
    cfdp__rset early_set; /* the ranges of early */
    uint8_t *resp;        /* filestore responses, raw */
    size_t resp_len, resp_count;
} txn;

typedef struct early {
    struct early *next;
    uint64_t offset;
    size_t len;
    uint8_t b[];
} early;

#define EARLY_MAX (1u << 20) /* bytes of early file data kept per transaction */

typedef struct loose {
    struct loose *next;
    uint64_t dst;
    size_t len;
    uint8_t b[];
} loose;

typedef struct qent {
    cfdp_ind ind;
    void *blob; /* names, options, responses of a queued indication */
} qent;

struct cfdp_entity {
    cfdp_entity_cfg cfg;
    cfdp_peer_cfg *peers;
    size_t npeers, peers_cap;
    cfdp_host host;
    uint64_t next_seq, now;

    txn **buckets;
    size_t nbuckets, ntxn;
    txn **heap;
    size_t hn, hcap;
    txn *rhead, *rtail;
    loose *lhead, *ltail;

    uint8_t *out; /* the PDU being sent (kept when the transport is busy) */
    size_t out_len;
    uint64_t out_dst;
    int out_pending, busy, pumping;
    int out_fd;          /* >= 0: out is a file-data PDU whose data may go by fd */
    uint64_t out_fd_off; /* where its data are in the file */
    size_t out_fd_len;   /* its data bytes (the PDU's last, no CRC after them) */
    cfdp_range *nakbuf;
    size_t nakcap;

    qent *q;
    size_t qhead, qn, qcap;
    void *last_blob;

    uint64_t seg_off, seg_len; /* the FILE_SEGMENT being reported */
    cfdp_entity_stats st;
    struct {
        const char *why;
        uint64_t n;
    } drops[64];
    size_t ndrops;
};

/* entity.c, for txn_save.c */
const cfdp_peer_cfg *cfdp__peer(const cfdp_entity *e, uint64_t id);
txn *cfdp__txn_find(const cfdp_entity *e, uint64_t src, uint64_t seq, int role);
int cfdp__txn_insert(cfdp_entity *e, txn *t);
void cfdp__txn_free(txn *t);
void cfdp__txn_timers_changed(cfdp_entity *e, txn *t);
void cfdp__ready(cfdp_entity *e, txn *t);
int cfdp__pump(cfdp_entity *e);

#endif
