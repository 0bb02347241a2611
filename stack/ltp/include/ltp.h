/* libltp: a Licklider Transmission Protocol engine (RFC 5326).
 *
 * The engine is a state machine. It takes inputs — a segment arrived
 * (ltp_engine_receive), a timer fired (on the tern_loop it was given, which
 * may run on a virtual clock), the link to a peer went up or down
 * (ltp_span_link), a client asked to send (ltp_block_send, ltp_sdu_send) —
 * and produces outputs through the host's callbacks: segments to send to a
 * peer engine, notices for client services. It does no socket I/O itself;
 * link services (UDP, ...) sit outside it and call it.
 *
 * Red data is delivered reliably: checkpoints, reports, retransmission of
 * what a report does not claim, bounded by maxretries per checkpoint or
 * report and maxrepairrounds per session; green data is sent once. Timers
 * run from the span's one-way light time plus queuing latencies and are
 * suspended while the span's link is down.
 */
#ifndef TERN_LTP_H
#define TERN_LTP_H

#include <stddef.h>
#include <stdint.h>

#include "ltp_seg.h"
#include "sdr.h"
#include "tern/base.h"
#include "tern/log.h"
#include "tern/loop.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Bumped whenever a public struct or signature of libternltp changes. */
#define LTP_ABI_VERSION 3

/** The ABI version libternltp was built with. */
TERN_API int ltp_abi_version(void);

typedef struct ltp_engine ltp_engine;

/** Notices to client services. */
enum ltp_notice_kind {
    LTP_SESSION_START = 1,    /**< an import session began (first segment) */
    LTP_RED_PART = 2,         /**< the whole red part arrived: data, len */
    LTP_GREEN_SEG = 3,        /**< a green segment arrived: data, len, offset, eob */
    LTP_EXPORT_DONE = 4,      /**< the peer claimed the whole red part (user) */
    LTP_EXPORT_CANCELLED = 5, /**< an export session was cancelled (reason, user) */
    LTP_IMPORT_CANCELLED = 6, /**< an import session was cancelled (reason) */
};

typedef struct ltp_notice {
    int kind;
    uint64_t peer;    /**< the other engine */
    uint64_t session; /**< session number (originator is the sender) */
    uint64_t client;  /**< client service ID */
    const uint8_t *data;
    size_t len;
    uint64_t offset; /**< green segments: offset in the block */
    int eob;         /**< green segments: end of block */
    uint8_t reason;  /**< cancellations: enum ltp_reason */
    int by_peer;     /**< cancellations: 1 if the peer cancelled */
    void *user;      /**< exports: the cookie given to ltp_block_send */
    /** LTP_RED_PART: CRC-32C of the red part, taken while it arrived; valid
     * if red_crc_valid (its bytes came in order). Saves a client that checks
     * the data another pass over it. */
    uint32_t red_crc32c;
    int red_crc_valid;
} ltp_notice;

/** LTP_RED_PART notice result: taken, claim it after ltp_import_release(). */
#define LTP_HOLD 1
/** LTP_RED_PART notice result: not taken, no room now. The engine keeps the
 * block unclaimed: it answers the sender's checkpoints with reports that
 * claim all but the end and say it has no room (LTP_EXT_NO_ROOM), so the
 * sender keeps its copy and its session slot and waits, without using up
 * retransmissions (a full receiver slows it down instead of having it send
 * the block again); the notice comes again with ltp_import_retry(), and with
 * each red segment that arrives for the session meanwhile. */
#define LTP_LATER 2

/** What the host provides. */
typedef struct ltp_host {
    void *ctx;
    /** Sends one segment to engine peer. A failure counts as loss. */
    int (*send)(void *ctx, uint64_t peer, const uint8_t *seg, size_t len);
    /** Optional, with send_commit: room for a data segment of len bytes to
     * peer where the link service sends it from (NULL: none now; send is
     * used). The engine encodes the segment there and calls send_commit
     * before anything else, saving a copy of its data. */
    uint8_t *(*send_buf)(void *ctx, uint64_t peer, size_t len);
    /** Sends (as send) the len-byte segment encoded where send_buf said. */
    int (*send_commit)(void *ctx, uint64_t peer, uint8_t *seg, size_t len);
    /** Delivers a notice. For LTP_RED_PART, returning 0 means the client has
     * taken and committed the data (the report that claims it goes out only
     * after); LTP_HOLD means it took the data but it is not durable yet (no
     * report claims it until ltp_import_release()); LTP_LATER means it could
     * not take it now; a negative return cancels the session (LTP_SYS_CNCLD). */
    int (*notice)(void *ctx, const ltp_notice *n);
    /** 1 if the link service calls ltp_engine_sent() when a checkpoint,
     * report or cancel segment actually leaves (ltp_seg_needs_tx_notice()):
     * their retransmission timers then start at transmission, as in ION,
     * instead of when the segment is handed over. */
    int tx_notify;
} ltp_host;

/** Engine-wide settings (ltpadmin "1" and "m" commands). */
typedef struct ltp_engine_cfg {
    uint64_t engine_id;     /**< this engine's number */
    unsigned max_retries;   /**< per checkpoint, report or cancel (0: 5) */
    unsigned max_rounds;    /**< repair rounds per session, 1..256 (0: 8) */
    unsigned own_qtime_ms;  /**< own queuing latency (0: 1 ms) */
    unsigned closed_ttl_ms; /**< how long closed imports are remembered (0: 60 s) */
    uint64_t first_session; /**< first session number (0: from the clock) */
    sdr *store;         /**< if set: export blocks and session numbers are kept here until
                             the peer claims them; ltp_engine_resume() restarts them */
    uint64_t max_block; /**< largest block taken from a peer, bytes: a segment
                             beyond it is refused (0: LTP_DEFAULT_MAX_BLOCK) */
    uint64_t max_import_bytes; /**< what one span's import sessions may hold together
                                    (0: two blocks of the span's max_block size) */
} ltp_engine_cfg;

/** Default largest block (ltp_engine_cfg.max_block): 256 MiB. */
#define LTP_DEFAULT_MAX_BLOCK (UINT64_C(256) << 20)

/** A span: the link to one peer engine (ltpadmin "a span"). */
typedef struct ltp_span_cfg {
    uint64_t peer;             /**< peer engine number */
    unsigned max_export;       /**< export sessions at once: the flow-control window */
    unsigned max_import;       /**< import sessions at once */
    size_t max_seg;            /**< largest segment, bytes */
    size_t agg_size;           /**< aggregation size threshold, bytes */
    unsigned agg_ms;           /**< aggregation time limit, ms */
    unsigned owlt_ms;          /**< one-way light time until a contact plan says */
    unsigned qtime_ms;         /**< the peer's queuing latency */
    unsigned max_rounds;       /**< 0: the engine's */
    unsigned max_retries;      /**< 0: the engine's */
    double seg_loss_rate;      /**< expected segment loss (m maxseglossrate); sets how
                                    many report segments one round may use (0: no cap) */
    unsigned session_bits;     /**< 32 (0: the default) or 64: the session numbers this
                                    engine sends to the peer. ION 4.1.3 keeps them in 32
                                    bits; HDTN takes 64 (m span <engine> sessionbits) */
    uint64_t max_block;        /**< 0: the engine's */
    uint64_t max_import_bytes; /**< 0: the engine's */
} ltp_span_cfg;

/** Counters, engine-wide or per span. */
typedef struct ltp_stats {
    uint64_t seg_in, seg_out, bytes_in, bytes_out;
    uint64_t malformed;    /**< segments that did not decode, or that name bytes no
                                block may have (oversized, bad_reports) */
    uint64_t unknown_span; /**< segments from or for engines with no span */
    uint64_t stale;        /**< segments for closed sessions */
    uint64_t data_retx;    /**< data segments sent again */
    uint64_t cp_timeouts, rs_timeouts;
    uint64_t exports_started, exports_done, exports_cancelled;
    uint64_t imports_started, imports_done, imports_cancelled;
    uint64_t export_sessions, import_sessions, closed_remembered;
    uint64_t queued_blocks;   /**< blocks waiting for the export window */
    uint64_t send_errors;     /**< segments the link service refused (treated as lost) */
    uint64_t store_errors;    /**< store transactions that failed */
    uint64_t imports_refused; /**< new import sessions cancelled (CR, SYS_CNCLD)
                                   because the span's max_import were open */
    uint64_t oversized;       /**< data segments reaching past the span's max_block */
    uint64_t bad_reports;     /**< reports about bytes outside their block */
    uint64_t imports_over_share; /**< import sessions cancelled (SYS_CNCLD) for
                                      holding more than their share of memory */
    uint64_t import_bytes;       /**< bytes the import sessions hold now */
    uint64_t segs_not_kept;      /**< red segments not kept (far beyond what had arrived,
                                      or too many gaps): the sender sends them again */
    uint64_t imports_waiting;    /**< whole red parts the client has no room for now */
    uint64_t exports_waiting;    /**< export sessions whose peer has no room now */
    uint64_t peer_no_room;       /**< reports by which a peer said it has no room yet */
} ltp_stats;

/** A span as the engine runs it now: ltp_span_info(). */
typedef struct ltp_span_info {
    ltp_span_cfg cfg;    /**< as added, with the current one-way light time */
    int owlt_from_range; /**< 1 if the light time came from ltp_span_set_owlt (a
                              contact plan's range), 0 if it is cfg's as added */
    int up;
    unsigned max_retries, max_rounds, own_qtime_ms; /**< in effect */
    uint64_t rto_ms, budget_ms;                     /**< in effect */
    uint64_t max_block, max_import_bytes;           /**< in effect */
    unsigned exports, imports;                      /**< sessions open */
    uint64_t queued;                                /**< blocks waiting for the window */
    uint64_t import_bytes;                          /**< what its imports hold */
    unsigned exports_waiting;                       /**< exports whose peer has no room */
    unsigned imports_waiting; /**< imports the client has no room for */
} ltp_span_info;

/** Creates an engine on loop (its clock drives every timer). lg may be NULL. */
TERN_API int ltp_engine_new(tern_loop *loop, const ltp_engine_cfg *cfg,
                            const ltp_host *host, tern_log *lg, ltp_engine **out);

/** Stops every timer and frees the engine and all its sessions. */
TERN_API void ltp_engine_free(ltp_engine *e);

/** Adds a span. TERN_EEXIST if the peer has one; -EINVAL for bad values. */
TERN_API int ltp_span_add(ltp_engine *e, const ltp_span_cfg *cfg);

/** The span's link is up (a contact) or down. While down, nothing is sent to
 * the peer and the span's timers are suspended. Spans start up. */
TERN_API int ltp_span_link(ltp_engine *e, uint64_t peer, int up);

/** Changes the span's one-way light time (from a contact plan's range). */
TERN_API int ltp_span_set_owlt(ltp_engine *e, uint64_t peer, unsigned owlt_ms);

/** The span's settings (as added, with the current one-way light time).
 * TERN_ENOTFOUND if the peer has no span. */
TERN_API int ltp_span_get(const ltp_engine *e, uint64_t peer, ltp_span_cfg *cfg);

/** The values the engine uses for the span now, with where the light time
 * came from. TERN_ENOTFOUND if the peer has no span. */
TERN_API int ltp_span_info_get(const ltp_engine *e, uint64_t peer, ltp_span_info *out);

/** Worst-case time to deliver or abandon a block on this span, not counting
 * link-down time: rounds x (retries + 1) x retransmission timeout. */
TERN_API int ltp_span_budget_ms(const ltp_engine *e, uint64_t peer, uint64_t *ms);

/**
 * Sends one block of red_len red bytes followed by green_len green bytes to
 * client service client at engine peer. The data is copied (and, with a
 * store, committed to it before this returns). *session (may be NULL) gets
 * the session number; the block may still wait for the export window. user
 * comes back in the block's export notices.
 */
TERN_API int ltp_block_send(ltp_engine *e, uint64_t peer, uint64_t client,
                            const void *data, size_t red_len, size_t green_len,
                            void *user, uint64_t *session);

/** As ltp_block_send, without copying: data must stay valid and unchanged
 * until the block's LTP_EXPORT_DONE or LTP_EXPORT_CANCELLED notice (or
 * ltp_engine_free). Saves one copy of every block on fast links. */
TERN_API int ltp_block_send_ref(ltp_engine *e, uint64_t peer, uint64_t client,
                                const void *data, size_t red_len, size_t green_len,
                                void *user, uint64_t *session);

/** Adds one red service data unit to the span's aggregation buffer; the
 * block goes out when the aggregation size threshold or time limit is met. */
TERN_API int ltp_sdu_send(ltp_engine *e, uint64_t peer, uint64_t client, const void *data,
                          size_t len);

/** Sends what the span has aggregated now. */
TERN_API int ltp_span_flush(ltp_engine *e, uint64_t peer);

/** After a restart on a store: sends again every export block the store
 * still holds (their peers had not claimed them), for spans now configured.
 * Call after ltp_span_add. Returns the number of sessions resumed. */
TERN_API int ltp_engine_resume(ltp_engine *e);

/** The red part of import session (peer, session) that the client held
 * (LTP_HOLD) is durable now: the report claiming it goes out (answering the
 * last checkpoint that came meanwhile). TERN_ENOTFOUND if the session is gone
 * (cancelled: the sender will send the block again). */
TERN_API int ltp_import_release(ltp_engine *e, uint64_t peer, uint64_t session);

/** Hands the red part of import session (peer, session), which the client
 * could not take (LTP_LATER), to the client again: 1 if it still cannot, 0
 * if it took it (or nothing was waiting), TERN_ENOTFOUND if the session is
 * gone. */
TERN_API int ltp_import_retry(ltp_engine *e, uint64_t peer, uint64_t session);

/** Cancels an export session (LTP_USR_CNCLD). */
TERN_API int ltp_export_cancel(ltp_engine *e, uint64_t session);

/** Input: one segment received from a link service. Malformed segments are
 * counted, logged once per cause and dropped (the return tells why). */
TERN_API int ltp_engine_receive(ltp_engine *e, const uint8_t *seg, size_t len);

/** Tells the engine that segment seg (one it emitted) has just left on the
 * link; hosts with tx_notify call it for the segments that need it. */
TERN_API void ltp_engine_sent(ltp_engine *e, const uint8_t *seg, size_t len);

/** True for the segments whose transmission starts a timer (checkpoints,
 * reports, cancels): the first byte tells. */
static inline int ltp_seg_needs_tx_notice(const uint8_t *seg, size_t len)
{
    unsigned t = len ? (seg[0] & 0x0f) : 0;
    return len && ((t >= LTP_RD_CP && t <= LTP_RD_CP_EOB) || t == LTP_RS || t == LTP_CS ||
                   t == LTP_CR);
}

/** Engine-wide counters. */
TERN_API void ltp_engine_stats(const ltp_engine *e, ltp_stats *st);

/** This engine's number. */
TERN_API uint64_t ltp_engine_id(const ltp_engine *e);

#ifdef __cplusplus
}
#endif
#endif
