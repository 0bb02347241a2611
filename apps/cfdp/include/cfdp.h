/* libterncfdp, the entity: CFDP class 1 and class 2 machines (CCSDS
 * 727.0-B-5, chapter 4), sans-I/O.
 *
 * A cfdp_entity is driven by inputs and produces outputs:
 * - inputs: a PDU arrived (cfdp_entity_pdu_in), time passed
 *   (cfdp_entity_advance), the transport can take PDUs again
 *   (cfdp_entity_transport_ready), user requests (cfdp_put, cfdp_cancel,
 *   cfdp_suspend, cfdp_resume, cfdp_report, cfdp_nak_now, cfdp_send_prompt);
 * - outputs: PDUs handed to cfdp_host.send with their destination entity,
 *   the next deadline (cfdp_entity_next_deadline) and indications (through
 *   cfdp_host.indication and/or an unbounded queue read with
 *   cfdp_entity_next_indication: nothing is dropped when read late).
 *
 * Time is only what the caller passes (now_ms, any monotonic millisecond
 * clock; the virtual clock in tests). Files are reached only through the
 * cfdp_fs of the configuration. No global state: entities are independent.
 *
 * Every call returns 0 or a negative code (-errno or TERN_E*).
 */
#ifndef TERN_CFDP_H
#define TERN_CFDP_H

#include <stddef.h>
#include <stdint.h>

#include "cfdp_fs.h"
#include "cfdp_pdu.h"
#include "tern/base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cfdp_entity cfdp_entity;

/** A transaction: its source entity and sequence number. */
typedef struct cfdp_txn_id {
    uint64_t src;
    uint64_t seq;
} cfdp_txn_id;

/** When a class 2 receiver asks for missing data before EOF. After EOF
 * every mode runs the NAK procedure until complete, and a Prompt (NAK) or
 * cfdp_nak_now() is answered in every mode. */
enum cfdp_nak_mode {
    CFDP_NAK_IMMEDIATE = 0, /**< as gaps appear, after nak_delay_ms (reordering) */
    CFDP_NAK_DEFERRED = 1,  /**< only after EOF */
    CFDP_NAK_PROMPTED = 2,  /**< before EOF only on a Prompt (NAK); the sender
                               prompts every prompt_ms */
    CFDP_NAK_ASYNC = 3,     /**< before EOF only on cfdp_nak_now() */
};

/** What the MIB holds about one remote entity (and, as cfdp_entity_cfg.
 * defaults, about every entity not listed). 0 in a timer or limit means the
 * library default given in brackets. */
typedef struct cfdp_peer_cfg {
    uint64_t id;               /**< the remote entity ID */
    uint32_t max_pdu;          /**< largest PDU sent to it, bytes [1024] */
    uint32_t max_segment;      /**< largest file data per PDU; 0 = what fits */
    uint16_t max_nak_segments; /**< most segment requests per NAK it takes; 0 = fit */
    uint8_t crc_required;      /**< 1: PDUs both ways carry the PDU CRC */
    uint8_t default_class;     /**< 1 or 2 [2] */
    uint8_t closure;           /**< class 1: closure requested by default */
    uint8_t checksum_type;     /**< enum cfdp_checksum_type [0, modular] */
    uint8_t nak_mode;          /**< enum cfdp_nak_mode [immediate] */
    uint8_t keep_incomplete;   /**< 1: a cancelled receiver keeps its partial file */
    uint8_t ion_filestore;     /**< 1: filestore requests of puts given as items go out
                                  with ION's empty second names (cfdp_pdu.h); the
                                  responses' form is the fs_requests hook's choice */
    uint32_t ack_timer_ms;     /**< EOF/Finished positive ACK timer [10000] */
    uint16_t ack_limit;        /**< expirations before ACK limit reached [4] */
    uint32_t nak_timer_ms;     /**< NAK retransmission timer [10000] */
    uint16_t nak_limit;        /**< NAKs without progress before NAK limit [4] */
    uint32_t nak_delay_ms;  /**< immediate mode: wait this long for reordered data [50] */
    uint32_t inactivity_ms; /**< transaction inactivity timer [60000] */
    uint32_t keep_alive_ms; /**< receiver sends Keep Alive this often; 0 = never */
    uint64_t keep_alive_limit; /**< sender: fault if the receiver lags by more bytes; 0 =
                                  off */
    uint32_t
        check_timer_ms;   /**< class 1 receiver: wait after an incomplete EOF [10000] */
    uint16_t check_limit; /**< check timer expirations before check limit [2] */
    uint32_t
        prompt_ms; /**< sender: Prompt (NAK) this often in prompted mode [nak_timer] */
    uint8_t handlers[16]; /**< fault handler per condition code (enum cfdp_handler);
                             0 = cancel */
} cfdp_peer_cfg;

/** Filestore requests of a Metadata PDU, executed by the receiving entity
 * when the file is complete (or at the end of a metadata-only transaction):
 * runs reqs against fs, writes the filestore response TLVs, encoded, into
 * out[0..cap) and sets *out_len and *out_count. Returns 0, or a negative
 * code if it could not run at all (the Finished then carries no responses).
 * NULL in the configuration: requests are not executed and not answered. */
typedef int (*cfdp_fs_requests_fn)(void *ctx, const cfdp_fs *fs, const cfdp_tlvs *reqs,
                                   uint8_t *out, size_t cap, size_t *out_len,
                                   size_t *out_count);

/** An entity's configuration (copied by cfdp_entity_new). */
typedef struct cfdp_entity_cfg {
    uint64_t id;                /**< the local entity ID */
    cfdp_fs fs;                 /**< where files are read and written */
    const cfdp_peer_cfg *peers; /**< known remote entities */
    size_t npeers;
    cfdp_peer_cfg defaults;      /**< for any entity not in peers (its id ignored) */
    uint8_t eid_len;             /**< entity ID bytes in headers; 0 = fewest */
    uint8_t tsn_len;             /**< sequence number bytes; 0 = fewest */
    uint64_t first_seq;          /**< first sequence number assigned [1] */
    uint32_t linger_ms;          /**< keep a finished transaction this long to answer a
                                    duplicate EOF or Finished [the peer's ack_timer_ms *
                                    (ack_limit + 1)] */
    uint8_t segment_indications; /**< 1: a File-Segment-Recv indication per new segment */
    cfdp_fs_requests_fn fs_requests;
    void *fs_requests_ctx;
} cfdp_entity_cfg;

/* ------------------------------------------------------------ indications */

/** Indication types (4.1.2's primitives, plus a report). */
enum cfdp_ind_type {
    CFDP_IND_TRANSACTION = 1,  /**< put accepted: the new transaction's ID */
    CFDP_IND_METADATA = 2,     /**< receiver: Metadata received (names, size, options) */
    CFDP_IND_FILE_SEGMENT = 3, /**< receiver: new file data (offset, length) */
    CFDP_IND_EOF_SENT = 4,
    CFDP_IND_EOF_RECEIVED = 5,
    CFDP_IND_FINISHED = 6, /**< transaction finished (condition, delivery, file status,
                              filestore responses) */
    CFDP_IND_FAULT = 7,    /**< a fault whose handler is "ignore" */
    CFDP_IND_SUSPENDED = 8,
    CFDP_IND_RESUMED = 9,
    CFDP_IND_ABANDONED = 10,
    CFDP_IND_REPORT = 11, /**< answer to cfdp_report */
};

/** A transaction's role at this entity. */
enum cfdp_role { CFDP_ROLE_SENDER = 0, CFDP_ROLE_RECEIVER = 1 };

/** A transaction's state, as reported. */
enum cfdp_txn_state {
    CFDP_STATE_ACTIVE = 0, /**< sending or receiving */
    CFDP_STATE_SUSPENDED = 1,
    CFDP_STATE_CANCELLING = 2, /**< Notice of Cancellation sent, waiting for its ACK */
    CFDP_STATE_CLOSING = 3,    /**< data done, waiting for EOF ACK / Finished / its ACK */
    CFDP_STATE_FINISHED = 4,   /**< terminated (kept a while to answer duplicates) */
};

/** What cfdp_report and CFDP_IND_REPORT tell about a transaction. */
typedef struct cfdp_txn_info {
    cfdp_txn_id id;
    uint64_t peer;      /**< the other entity */
    uint8_t role;       /**< enum cfdp_role */
    uint8_t state;      /**< enum cfdp_txn_state */
    uint8_t cls;        /**< 1 or 2 */
    uint8_t condition;  /**< last condition code (0 while all is well) */
    uint64_t file_size; /**< as known (0 until Metadata/EOF at a receiver) */
    uint64_t progress;  /**< sender: bytes sent (first pass); receiver: bytes received */
    uint64_t gaps;      /**< receiver: missing ranges below the highest offset seen */
    uint64_t bytes_resent; /**< sender: file data bytes sent again on NAKs */
} cfdp_txn_info;

/** One indication. Pointers (names, options, responses) are valid during the
 * callback, or until the next cfdp_entity_next_indication call. */
typedef struct cfdp_ind {
    uint8_t type; /**< enum cfdp_ind_type */
    uint8_t role; /**< enum cfdp_role */
    cfdp_txn_id txn;
    uint64_t peer;
    uint8_t condition;     /**< FINISHED, FAULT, SUSPENDED, ABANDONED, EOF_RECEIVED */
    uint8_t delivery;      /**< FINISHED: enum cfdp_delivery */
    uint8_t file_status;   /**< FINISHED: enum cfdp_file_status */
    uint8_t cls;           /**< 1 or 2 */
    uint64_t fault_entity; /**< FINISHED/FAULT: the entity where the fault arose */
    uint64_t offset;       /**< FILE_SEGMENT */
    uint64_t length;       /**< FILE_SEGMENT */
    uint64_t file_size;    /**< METADATA, EOF_*, FINISHED */
    uint64_t progress;     /**< SUSPENDED, RESUMED, FINISHED: bytes sent or received */
    const char *src_name;  /**< METADATA: NUL-terminated ("" when absent) */
    const char *dst_name;
    cfdp_tlvs options;   /**< METADATA: the Metadata options as raw TLVs (filestore
                            requests, messages to user, fault handler overrides,
                            flow label); SENDER FINISHED: empty */
    cfdp_tlvs responses; /**< FINISHED: filestore responses (raw TLVs) */
    cfdp_txn_info info;  /**< REPORT */
} cfdp_ind;

/** The host: what the entity calls out to. */
typedef struct cfdp_host {
    void *ctx;
    /** Sends one PDU to entity dst: 0 taken, -EAGAIN transport busy (the entity
     * keeps the PDU and waits for cfdp_entity_transport_ready), other < 0: the
     * PDU is counted as lost. Required. */
    int (*send)(void *ctx, uint64_t dst, const uint8_t *pdu, size_t len);
    /** Optional: each indication as it happens. */
    void (*indication)(void *ctx, const cfdp_ind *ind);
    /** Optional: one line about a dropped PDU or an internal problem. */
    void (*log)(void *ctx, const char *line);
    /** 1: also queue indications for cfdp_entity_next_indication (unbounded). */
    int queue_indications;
    /** Optional: sends a file-data PDU without its data in memory: the PDU is
     * head[0..hlen) followed by the len bytes at off in fd (the file's
     * descriptor, from cfdp_fs_ops.fd; valid for this call only). Returns as
     * send; -ENOTSUP makes the entity call send with the whole PDU instead.
     * Used for PDUs without a CRC, from filestores that give a descriptor. */
    int (*send_file)(void *ctx, uint64_t dst, const uint8_t *head, size_t hlen, int fd,
                     uint64_t off, size_t len);
} cfdp_host;

/* -------------------------------------------------------- put request */

/** A Put.request. Strings are copied. src_name and dst_name both NULL (or
 * "") make a metadata-only transaction (messages to user, filestore
 * requests: proxy operations, directory requests), which still ends with
 * an EOF. */
typedef struct cfdp_put_req {
    uint64_t dst;         /**< destination entity */
    const char *src_name; /**< file in the local filestore */
    const char *dst_name; /**< name at the destination */
    uint8_t cls;          /**< 1 or 2; 0 = the peer's default_class */
    int8_t closure; /**< class 1: 1 request Finished, 0 not, -1 the peer's default */
    int16_t checksum_type; /**< -1: the peer's checksum_type */
    int8_t nak_mode;       /**< -1: the peer's nak_mode (the receiver's MIB wins there;
                              this only makes a prompted sender prompt) */
    /** Metadata options in order: filestore requests, messages to user (an
     * originating transaction ID is a message to user), fault handler
     * overrides (also applied by this entity to this transaction) and a
     * flow label. Either form of cfdp_tlvs; copied. */
    cfdp_tlvs options;
} cfdp_put_req;

/* ---------------------------------------------------------- statistics */

/** Counters of an entity (since cfdp_entity_new). */
typedef struct cfdp_entity_stats {
    uint64_t pdus_in, pdus_out, bytes_in, bytes_out;
    uint64_t file_bytes_out;    /**< file data bytes sent, first pass and resent */
    uint64_t file_bytes_resent; /**< of those, sent again on NAKs */
    uint64_t file_bytes_in;     /**< file data bytes received (duplicates included) */
    uint64_t file_bytes_dup;    /**< received bytes already held */
    uint64_t drop_malformed;    /**< refused by the decoder (any reason) */
    uint64_t drop_not_for_us;   /**< destination is another entity */
    uint64_t drop_unknown_txn;  /**< for no transaction and not starting one */
    uint64_t drop_unexpected;   /**< a PDU the transaction's state does not take */
    uint64_t send_busy;         /**< -EAGAIN from send */
    uint64_t send_failed;       /**< other errors from send */
    uint64_t naks_sent, nak_segments_sent, naks_in;
    uint64_t eofs_resent, finished_resent;
    uint64_t txns_started, txns_finished, txns_active;
    uint64_t indications_queued; /**< waiting in the queue now */
    uint64_t file_data_by_fd;    /**< file-data PDUs handed over by send_file */
} cfdp_entity_stats;

/* --------------------------------------------------------------- calls */

/** Creates an entity. host->send is required; cfg and host are copied
 * (cfg->peers too). */
TERN_API int cfdp_entity_new(const cfdp_entity_cfg *cfg, const cfdp_host *host,
                             cfdp_entity **out);

/** Frees the entity: open files are closed, transactions dropped without
 * indications. NULL is fine. */
TERN_API void cfdp_entity_free(cfdp_entity *e);

/** Fills *cfg with the library defaults (every timer and limit set). */
TERN_API void cfdp_peer_cfg_defaults(cfdp_peer_cfg *cfg);

/** Adds or replaces the MIB entry of remote entity cfg->id (transactions
 * already running keep the entry they began with). */
TERN_API int cfdp_entity_set_peer(cfdp_entity *e, const cfdp_peer_cfg *cfg);

/** A PDU arrived (buf need not outlive the call). A malformed PDU is counted
 * (cfdp_entity_drops), logged and dropped: returns its decode code; 0 for
 * every PDU taken or ignored by the protocol. */
TERN_API int cfdp_entity_pdu_in(cfdp_entity *e, uint64_t now_ms, const void *buf,
                                size_t len);

/** Runs every timer due at now_ms and sends what became due. */
TERN_API int cfdp_entity_advance(cfdp_entity *e, uint64_t now_ms);

/** The earliest time a timer is due (UINT64_MAX if none): call
 * cfdp_entity_advance then. */
TERN_API uint64_t cfdp_entity_next_deadline(const cfdp_entity *e);

/** The transport takes PDUs again after a send returned -EAGAIN. */
TERN_API int cfdp_entity_transport_ready(cfdp_entity *e, uint64_t now_ms);

/** 1 if the entity has PDUs waiting for the transport, else 0. */
TERN_API int cfdp_entity_wants_send(const cfdp_entity *e);

/** Put.request: starts a transaction and sets *id (may be NULL). -ENOENT if
 * the source file does not exist, -EINVAL for a bad request, -ENOTSUP for an
 * unsupported checksum type, -EMSGSIZE if its Metadata (names and options)
 * or the smallest File Data PDU would not fit the peer's max_pdu. */
TERN_API int cfdp_put(cfdp_entity *e, uint64_t now_ms, const cfdp_put_req *req,
                      cfdp_txn_id *id);

/** Cancel.request: Notice of Cancellation (condition CFDP_COND_CANCEL). */
TERN_API int cfdp_cancel(cfdp_entity *e, uint64_t now_ms, cfdp_txn_id id);

/** Suspend.request: stops sending and freezes the transaction's timers. */
TERN_API int cfdp_suspend(cfdp_entity *e, uint64_t now_ms, cfdp_txn_id id);

/** Resume.request: restarts a suspended transaction (timers continue from
 * where they were frozen). */
TERN_API int cfdp_resume(cfdp_entity *e, uint64_t now_ms, cfdp_txn_id id);

/** Report.request: queues a CFDP_IND_REPORT and fills *info (may be NULL). */
TERN_API int cfdp_report(cfdp_entity *e, cfdp_txn_id id, cfdp_txn_info *info);

/** Class 2 receiver: sends a NAK for the gaps known now (asynchronous NAK). */
TERN_API int cfdp_nak_now(cfdp_entity *e, uint64_t now_ms, cfdp_txn_id id);

/** Class 2 sender: sends a Prompt asking for a NAK or a Keep Alive
 * (enum cfdp_prompt_response). */
TERN_API int cfdp_send_prompt(cfdp_entity *e, uint64_t now_ms, cfdp_txn_id id,
                              unsigned response);

/** Takes the oldest queued indication into *out: 0, or TERN_EEND if none. */
TERN_API int cfdp_entity_next_indication(cfdp_entity *e, cfdp_ind *out);

/** Copies the counters. */
TERN_API void cfdp_entity_stats_get(const cfdp_entity *e, cfdp_entity_stats *out);

/** Dropped-PDU reasons: the i-th distinct decoder text seen and how often;
 * TERN_EEND past the last. */
TERN_API int cfdp_entity_drops(const cfdp_entity *e, size_t i, const char **why,
                               uint64_t *count);

/** The next sequence number put will assign (to keep across restarts). */
TERN_API uint64_t cfdp_entity_next_seq(const cfdp_entity *e);

/** Calls each for every transaction (finished ones still lingering too);
 * non-zero from each stops and is returned. */
TERN_API int cfdp_entity_each_txn(cfdp_entity *e,
                                  int (*each)(void *arg, const cfdp_txn_info *info),
                                  void *arg);

/* ------------------------------------------------------- serialisation */

/**
 * Saves what transaction id needs to go on after a restart into
 * buf[0..cap) and sets *len (docs/cfdp.md lists what is kept). With cap too
 * small returns TERN_ENOSPACE and sets *len to the size needed.
 */
TERN_API int cfdp_txn_save(cfdp_entity *e, cfdp_txn_id id, void *buf, size_t cap,
                           size_t *len);

/**
 * Rebuilds a saved transaction in entity e (which must have the same local
 * ID) and sets *id (may be NULL): files are reopened through e's filestore,
 * timers keep their saved deadlines. TERN_EMALFORMED / TERN_ETRUNCATED for
 * bytes that are not a saved transaction, TERN_EEXIST if e has it already.
 */
TERN_API int cfdp_txn_restore(cfdp_entity *e, uint64_t now_ms, const void *buf,
                              size_t len, cfdp_txn_id *id);

/** "transaction", "metadata received", ...; "unknown" otherwise. */
TERN_API const char *cfdp_ind_name(unsigned type);

#ifdef __cplusplus
}
#endif
#endif
