/* Sans-I/O codecs for BP over TCP: TCPCLv4 (RFC 9174), TCPCLv3 (RFC 7242),
 * ION's STCP and MTCP (draft-ietf-dtn-mtcpcl). Nothing here touches a socket
 * or a clock: bytes go in, messages, events and bytes to send come out, so
 * the same code runs under the real event loop, the simulator and the
 * fuzzers.
 *
 * TCPCLv4 in short (all integers big-endian):
 *   contact header  "dtn!" version(1)=4 flags(1)         (CAN_TLS = 0x01)
 *   SESS_INIT    07 keepalive(2) seg_mru(8) xfer_mru(8) id_len(2) id ext_len(4) ext
 *   XFER_SEGMENT 01 flags(1) tid(8) [ext_len(4) ext if START] len(8) data
 *   XFER_ACK     02 flags(1) tid(8) acked_len(8)
 *   XFER_REFUSE  03 reason(1) tid(8)
 *   KEEPALIVE    04
 *   SESS_TERM    05 flags(1) reason(1)                    (REPLY = 0x01)
 *   MSG_REJECT   06 reason(1) rejected_type(1)
 *   extension item: flags(1) (CRITICAL = 0x01) type(2) len(2) value
 */
#ifndef TERN_BP_TCPCL_H
#define TERN_BP_TCPCL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "tern/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- TCPCLv4 constants ---------------------------------------------------- */

#define TCPCL4_VERSION      4
#define TCPCL4_CONTACT_LEN  6
#define TCPCL4_FLAG_CAN_TLS 0x01

enum tcpcl4_type {
    TCPCL4_XFER_SEGMENT = 0x01,
    TCPCL4_XFER_ACK = 0x02,
    TCPCL4_XFER_REFUSE = 0x03,
    TCPCL4_KEEPALIVE = 0x04,
    TCPCL4_SESS_TERM = 0x05,
    TCPCL4_MSG_REJECT = 0x06,
    TCPCL4_SESS_INIT = 0x07,
};

#define TCPCL4_SEG_END      0x01 /**< XFER_SEGMENT / XFER_ACK flag */
#define TCPCL4_SEG_START    0x02
#define TCPCL4_TERM_REPLY   0x01 /**< SESS_TERM flag */
#define TCPCL4_EXT_CRITICAL 0x01
#define TCPCL4_XEXT_TRANSFER_LENGTH                                                      \
    0x0001 /**< transfer extension: total length (8 bytes) */

enum tcpcl4_refuse {
    TCPCL4_REFUSE_UNKNOWN = 0x00,
    TCPCL4_REFUSE_COMPLETED = 0x01,
    TCPCL4_REFUSE_NO_RESOURCES = 0x02,
    TCPCL4_REFUSE_RETRANSMIT = 0x03,
    TCPCL4_REFUSE_NOT_ACCEPTABLE = 0x04,
    TCPCL4_REFUSE_EXTENSION_FAILURE = 0x05,
    TCPCL4_REFUSE_SESSION_TERMINATING = 0x06,
};

enum tcpcl4_term {
    TCPCL4_TERM_UNKNOWN = 0x00,
    TCPCL4_TERM_IDLE_TIMEOUT = 0x01,
    TCPCL4_TERM_VERSION_MISMATCH = 0x02,
    TCPCL4_TERM_BUSY = 0x03,
    TCPCL4_TERM_CONTACT_FAILURE = 0x04,
    TCPCL4_TERM_RESOURCE_EXHAUSTION = 0x05,
};

enum tcpcl4_reject {
    TCPCL4_REJECT_TYPE_UNKNOWN = 0x01,
    TCPCL4_REJECT_UNSUPPORTED = 0x02,
    TCPCL4_REJECT_UNEXPECTED = 0x03,
};

/* Largest encoded headers: SESS_INIT without node ID and extensions, and an
 * XFER_SEGMENT header with a transfer length extension. */
#define TCPCL4_SESS_INIT_FIXED 25
#define TCPCL4_SEG_HDR_MAX     (1 + 1 + 8 + 4 + 13 + 8)

/** One decoded TCPCLv4 message; pointers point into the decoded buffer. */
typedef struct tcpcl4_msg {
    uint8_t type; /**< enum tcpcl4_type */
    union {
        struct {
            uint16_t keepalive_s;
            uint64_t seg_mru, xfer_mru;
            const uint8_t *node_id;
            size_t node_id_len;
            const uint8_t *ext;
            size_t ext_len;
        } init;
        struct {
            uint8_t flags;
            uint64_t tid;
            const uint8_t *ext; /**< transfer extension items (START only) */
            size_t ext_len;
            const uint8_t *data;
            uint64_t len;
        } seg;
        struct {
            uint8_t flags;
            uint64_t tid, len;
        } ack;
        struct {
            uint8_t reason;
            uint64_t tid;
        } refuse;
        struct {
            uint8_t flags, reason;
        } term;
        struct {
            uint8_t reason, rejected;
        } reject;
    } u;
} tcpcl4_msg;

/**
 * Decodes a contact header from the first n bytes of b: 0 (version and flags
 * set), TERN_ETRUNCATED (fewer than 6 bytes yet) or TERN_EMALFORMED (no
 * "dtn!" magic). Any version is returned: the caller decides.
 */
TERN_API int tcpcl4_contact_decode(const uint8_t *b, size_t n, uint8_t *version,
                                   uint8_t *flags);

/** Writes a version-4 contact header (6 bytes) with the given flags. */
TERN_API size_t tcpcl4_contact_encode(uint8_t *out, uint8_t flags);

/**
 * Decodes the message at the start of b[0..n): 0 with *m and *used set;
 * TERN_ETRUNCATED if more bytes are needed (nothing is trusted: a declared
 * length only says how much to wait for; once an XFER_SEGMENT's header is in,
 * *used gets the whole message's length, else it is left as it was);
 * TERN_ETYPE for an unknown message
 * type (m->type holds it, for MSG_REJECT); TERN_EOVERFLOW if a segment
 * declares more than max_seg data bytes or a SESS_INIT's node ID or
 * extensions exceed 64 KiB; TERN_EMALFORMED for a malformed extension list.
 */
TERN_API int tcpcl4_decode(const uint8_t *b, size_t n, uint64_t max_seg, tcpcl4_msg *m,
                           size_t *used);

/**
 * Walks an extension item list (session or transfer): calls fn for each item
 * (fn returns nonzero to stop, which is returned). TERN_EMALFORMED if an
 * item runs past the list's end.
 */
TERN_API int tcpcl4_ext_walk(const uint8_t *ext, size_t len,
                             int (*fn)(void *ctx, uint8_t flags, uint16_t type,
                                       const uint8_t *val, uint16_t vlen),
                             void *ctx);

/** Encoders: each writes one message to out (large enough: see the layout
 * above) and returns its length. */
TERN_API size_t tcpcl4_enc_sess_init(uint8_t *out, uint16_t keepalive_s, uint64_t seg_mru,
                                     uint64_t xfer_mru, const char *node_id);
/** Writes an XFER_SEGMENT header for len data bytes (the caller sends the
 * data after it); total > 0 on a START segment adds a transfer length
 * extension. */
TERN_API size_t tcpcl4_enc_seg_hdr(uint8_t *out, uint8_t flags, uint64_t tid,
                                   uint64_t len, uint64_t total);
TERN_API size_t tcpcl4_enc_ack(uint8_t *out, uint8_t flags, uint64_t tid, uint64_t len);
TERN_API size_t tcpcl4_enc_refuse(uint8_t *out, uint8_t reason, uint64_t tid);
TERN_API size_t tcpcl4_enc_keepalive(uint8_t *out);
TERN_API size_t tcpcl4_enc_term(uint8_t *out, uint8_t flags, uint8_t reason);
TERN_API size_t tcpcl4_enc_reject(uint8_t *out, uint8_t reason, uint8_t rejected);

/** Longest node ID a session keeps: "dtn:" and the longest dtn
 * scheme-specific part Tern holds (BP_DTN_SSP_MAX, 255). */
#define TCPCL4_NODE_ID_MAX 259

/** What a peer's node ID names. */
enum tcpcl4_node_kind {
    TCPCL4_NODE_NONE = 0, /**< empty: the peer withholds it (RFC 9174 4.6) */
    TCPCL4_NODE_IPN = 1,  /**< ipn:N.0, or RFC 9758's ipn:A.N.0 */
    TCPCL4_NODE_DTN = 2,  /**< dtn://name/ (the trailing '/' may be missing) */
};

/**
 * Checks a SESS_INIT node ID (RFC 9174 4.6: empty, or a node ID URI of a BP
 * scheme): returns its kind (enum tcpcl4_node_kind), *node the ipn node
 * number (A << 32 | N for ipn:A.N.0; 0 for the other kinds), norm (if not
 * NULL, cap bytes) the node ID as Tern writes it ("dtn://name/" always with
 * its '/'). TERN_EMALFORMED for anything else, *why (may be NULL) saying
 * what is wrong: an endpoint rather than a node (ipn:N.S with S > 0,
 * dtn://name/demux), dtn:none, another scheme, no scheme, bad numbers,
 * spaces or control characters, longer than TCPCL4_NODE_ID_MAX.
 */
TERN_API int tcpcl4_node_id_check(const uint8_t *id, size_t len, uint64_t *node,
                                  char *norm, size_t cap, const char **why);

/** Parses an ipn node ID ("ipn:N.0" or "ipn:A.N.0") into its node number: 0
 * or TERN_EMALFORMED (a dtn node ID too). */
TERN_API int tcpcl4_node_id_parse(const uint8_t *id, size_t len, uint64_t *node);

/** Human names of reasons and message types, for logs. Never NULL. */
TERN_API const char *tcpcl4_term_name(uint8_t reason);
TERN_API const char *tcpcl4_refuse_name(uint8_t reason);
TERN_API const char *tcpcl4_type_name(uint8_t type);

/* ---- TCPCLv4 session state machine ---------------------------------------- */

typedef struct tcpcl4_sess tcpcl4_sess;

/** The smallest segment MRU a peer may declare: a session with a smaller
 * one ends with SESS_TERM "contact failure" (RFC 9174 sets no minimum, but
 * bundles cut in segments of a few bytes cost far more than they carry). */
#define TCPCL4_PEER_SEG_MRU_MIN 512

typedef struct tcpcl4_cfg {
    int active;    /**< 1: we opened the connection (we send the contact header first) */
    uint64_t node; /**< our node number: node ID "ipn:<node>.0" */
    uint16_t keepalive_s; /**< our keepalive offer; 0 disables keepalives */
    uint64_t seg_mru;     /**< largest segment we accept (0: 1 MiB) */
    uint64_t xfer_mru;    /**< largest transfer (bundle) we accept (0: 64 MiB) */
} tcpcl4_cfg;

enum tcpcl4_state {
    TCPCL4_S_CONTACT, /**< waiting for the peer's contact header */
    TCPCL4_S_INIT,    /**< waiting for the peer's SESS_INIT */
    TCPCL4_S_UP,      /**< established: transfers allowed */
    TCPCL4_S_ENDING,  /**< a SESS_TERM was sent or received: no new transfers */
    TCPCL4_S_CLOSED,  /**< done: flush the output, then close the connection */
};

enum tcpcl4_ev_kind {
    TCPCL4_EV_UP = 1,   /**< session established (peer_* fields valid) */
    TCPCL4_EV_BUNDLE,   /**< a whole transfer arrived: data/len/tid; acknowledge it
                             with tcpcl4_sess_ack once it is safe */
    TCPCL4_EV_ACKED,    /**< our transfer tid was fully acknowledged */
    TCPCL4_EV_REFUSED,  /**< our transfer tid was refused (reason) */
    TCPCL4_EV_TERM,     /**< the session is ending (reason; by_peer) */
    TCPCL4_EV_REJECTED, /**< the peer sent MSG_REJECT (reason, rejected type) */
};

typedef struct tcpcl4_ev {
    int kind;
    uint64_t tid;
    const uint8_t
        *data; /**< EV_BUNDLE: valid until the next tcpcl4_sess_recv or _rxbuf */
    size_t len;
    uint8_t flags; /**< EV_BUNDLE: the last segment's flags, for tcpcl4_sess_ack */
    uint8_t reason;
    uint8_t rejected;
    int by_peer;
} tcpcl4_ev;

/** Counters; they only grow. */
typedef struct tcpcl4_stats {
    uint64_t msgs_in, msgs_out;
    uint64_t bundles_in, bundles_out, acked, refused_in, refused_out;
    uint64_t keepalives_in, keepalives_out, rejects_out, unknown_acks;
    uint64_t segs_cut; /* our segments not sent because the peer refused their transfer */
} tcpcl4_stats;

/** Creates a session; an active session has its contact header queued. */
TERN_API int tcpcl4_sess_new(const tcpcl4_cfg *cfg, tcpcl4_sess **out);
/** Frees a session. NULL is fine. */
TERN_API void tcpcl4_sess_free(tcpcl4_sess *s);

/**
 * Feeds n bytes received from the peer at time now_ms: decodes every whole
 * message, queues the answers and events. Returns 0, or a negative code when
 * the peer broke the protocol (a SESS_TERM, if allowed, is queued and the
 * state is CLOSED; tcpcl4_sess_error says why in words).
 */
TERN_API int tcpcl4_sess_recv(tcpcl4_sess *s, const uint8_t *b, size_t n, int64_t now_ms);

/** Where the next bytes from the stream may go without a copy: room (at
 * least want) bytes in the session's receive buffer; NULL without memory.
 * Pass what was read to tcpcl4_sess_received(). Like tcpcl4_sess_recv,
 * it ends the validity of the data of events already taken. */
TERN_API uint8_t *tcpcl4_sess_rxbuf(tcpcl4_sess *s, size_t want, size_t *room);

/** As tcpcl4_sess_recv for n bytes read into tcpcl4_sess_rxbuf()'s room. */
TERN_API int tcpcl4_sess_received(tcpcl4_sess *s, size_t n, int64_t now_ms);

/** Pops the next event: 0 or TERN_EEND when there is none. */
TERN_API int tcpcl4_sess_event(tcpcl4_sess *s, tcpcl4_ev *ev);

/** The bytes waiting to be sent (NULL, 0 when none). */
TERN_API const uint8_t *tcpcl4_sess_output(tcpcl4_sess *s, size_t *len);
/** Drops the first n bytes of the output: the kernel took them. */
TERN_API void tcpcl4_sess_sent(tcpcl4_sess *s, size_t n);

/** The bytes waiting to be sent as up to max pieces (for writev/sendmsg);
 * returns how many, *total gets their length. */
TERN_API int tcpcl4_sess_output_iov(tcpcl4_sess *s, struct iovec *iov, int max,
                                    size_t *total);
/** How many bytes wait to be sent. */
TERN_API size_t tcpcl4_sess_pending(const tcpcl4_sess *s);

/**
 * Queues a bundle as one transfer, split at the peer's segment MRU; *tid
 * gets its transfer ID. TERN_ESTATE unless the session is UP; -EMSGSIZE if
 * it exceeds the peer's transfer MRU.
 */
TERN_API int tcpcl4_sess_send(tcpcl4_sess *s, const uint8_t *b, size_t len,
                              uint64_t *tid);

/**
 * As tcpcl4_sess_send, but b is sent in place, not copied: it must stay
 * valid and unchanged until the transfer's ACKED or REFUSED event, or the
 * session's end (should the peer answer early, the session copies what is
 * still unsent before the event).
 */
TERN_API int tcpcl4_sess_send_ref(tcpcl4_sess *s, const uint8_t *b, size_t len,
                                  uint64_t *tid);

/**
 * Sends the final XFER_ACK of received transfer tid (len bytes); flags are
 * the event's (an XFER_ACK echoes the flags of the segment it acknowledges).
 * Answers leave in transfer order, whatever order the caller gives them in
 * (RFC 9174 acknowledges transfers in sequence): from the EV_BUNDLE of a
 * transfer until its final answer, every answer to a later transfer (its
 * progress acknowledgements too) is held, and sent right after it.
 */
/* A SESS_TERM from the peer while answers are owed leaves the session
 * ENDING (RFC 9174 6.1: transfers in progress may finish): the owed answers
 * are still given here and go out, and the session is CLOSED with the last. */
TERN_API int tcpcl4_sess_ack(tcpcl4_sess *s, uint64_t tid, uint64_t len, uint8_t flags);
/** Refuses received transfer tid with a reason (a final answer, in order as
 * tcpcl4_sess_ack's). */
TERN_API int tcpcl4_sess_refuse(tcpcl4_sess *s, uint64_t tid, uint8_t reason);
/** Answers held for an earlier transfer's final answer (owed ones included). */
TERN_API size_t tcpcl4_sess_answers_held(const tcpcl4_sess *s);
/** Bytes the session holds for input not yet complete (a segment partly
 * received, a transfer being reassembled): at most about the segment MRU
 * plus the transfer MRU; what a host accounts against its budget. */
TERN_API size_t tcpcl4_sess_buffered(const tcpcl4_sess *s);

/** Starts an orderly end with SESS_TERM(reason): no new transfers. */
TERN_API int tcpcl4_sess_close(tcpcl4_sess *s, uint8_t reason);

/**
 * Timers: sends a KEEPALIVE when nothing was sent for the negotiated
 * interval, ends the session (idle timeout) when nothing arrived for twice
 * that. Returns the time (ms) tcpcl4_sess_tick wants to run next, or -1.
 */
TERN_API int64_t tcpcl4_sess_tick(tcpcl4_sess *s, int64_t now_ms);

TERN_API int tcpcl4_sess_state(const tcpcl4_sess *s);
/** The negotiated keepalive interval (s) and the peer's MRUs and node
 * number, valid once UP. */
TERN_API uint16_t tcpcl4_sess_keepalive(const tcpcl4_sess *s);
TERN_API uint64_t tcpcl4_sess_peer_seg_mru(const tcpcl4_sess *s);
TERN_API uint64_t tcpcl4_sess_peer_xfer_mru(const tcpcl4_sess *s);
TERN_API uint64_t tcpcl4_sess_peer_node(const tcpcl4_sess *s);
/** The kind of the peer's node ID (enum tcpcl4_node_kind) and its text as
 * tcpcl4_node_id_check wrote it ("" if the peer sent none), once UP. A dtn
 * node ID leaves tcpcl4_sess_peer_node 0. */
TERN_API int tcpcl4_sess_peer_node_kind(const tcpcl4_sess *s);
TERN_API const char *tcpcl4_sess_peer_node_id(const tcpcl4_sess *s);
/** The flags of the peer's contact header (CAN_TLS), once it came. */
TERN_API uint8_t tcpcl4_sess_peer_flags(const tcpcl4_sess *s);
/** The version in the peer's contact header (0 before it came): a 3 tells a
 * connecting side to fall back to TCPCLv3. */
TERN_API uint8_t tcpcl4_sess_peer_version(const tcpcl4_sess *s);
/** Why the session failed, in words ("" if it did not). */
TERN_API const char *tcpcl4_sess_error(const tcpcl4_sess *s);
TERN_API void tcpcl4_sess_stats(const tcpcl4_sess *s, tcpcl4_stats *st);

/* ---- TCPCLv3 (RFC 7242, stock ION's tcpcli/tcpclo) -----------------------
 *   contact header "dtn!" version(1)=3 flags(1) keepalive(2) eid_len(SDNV) eid
 *   message header: type in the high nibble, flags in the low one
 *   DATA_SEGMENT 0x1 (START 0x2, END 0x1) len(SDNV) data
 *   ACK_SEGMENT  0x2 acked_len(SDNV)      REFUSE_BUNDLE 0x3 (reason in flags)
 *   KEEPALIVE    0x4                      SHUTDOWN 0x5 (0x2: reason(1), 0x1: delay(SDNV))
 *   LENGTH       0x6 total(SDNV)
 * The session API mirrors TCPCLv4's and reuses its config, states and events
 * (transfer IDs are local counters: v3 acknowledges bundles in order). */

#define TCPCL3_VERSION      3
#define TCPCL3_FLAG_ACKS    0x01 /**< request acknowledgement of segments */
#define TCPCL3_FLAG_REFUSAL 0x04 /**< support bundle refusal */
#define TCPCL3_FLAG_LENGTH  0x08 /**< request LENGTH messages */

enum tcpcl3_type {
    TCPCL3_DATA_SEGMENT = 0x1,
    TCPCL3_ACK_SEGMENT = 0x2,
    TCPCL3_REFUSE_BUNDLE = 0x3,
    TCPCL3_KEEPALIVE = 0x4,
    TCPCL3_SHUTDOWN = 0x5,
    TCPCL3_LENGTH = 0x6,
};

#define TCPCL3_SHUT_REASON 0x02
#define TCPCL3_SHUT_DELAY  0x01
enum tcpcl3_shut {
    TCPCL3_SHUT_IDLE = 0x00,
    TCPCL3_SHUT_VERSION = 0x01,
    TCPCL3_SHUT_BUSY = 0x02,
};

/** A decoded TCPCLv3 contact header (eid points into the input). */
typedef struct tcpcl3_contact {
    uint8_t version, flags;
    uint16_t keepalive_s;
    const uint8_t *eid;
    size_t eid_len;
} tcpcl3_contact;

/** A decoded TCPCLv3 message. */
typedef struct tcpcl3_msg {
    uint8_t type, flags;
    uint64_t len;        /**< DATA_SEGMENT data length, ACK/LENGTH value */
    const uint8_t *data; /**< DATA_SEGMENT */
    int has_reason;
    uint8_t reason; /**< SHUTDOWN */
    int has_delay;
    uint64_t delay_s; /**< SHUTDOWN */
} tcpcl3_msg;

/** Decodes a v3 contact header: 0 with *used, TERN_ETRUNCATED, TERN_EMALFORMED
 * (no magic, EID longer than 1,024 bytes). Any version is returned. */
TERN_API int tcpcl3_contact_decode(const uint8_t *b, size_t n, tcpcl3_contact *c,
                                   size_t *used);
/** Writes a v3 contact header; returns its length (out: 8 + 10 + strlen(eid)). */
TERN_API size_t tcpcl3_contact_encode(uint8_t *out, uint8_t flags, uint16_t keepalive_s,
                                      const char *eid);
/** Decodes one message: 0, TERN_ETRUNCATED (once a DATA_SEGMENT's header is
 * in, *used gets the whole message's length), TERN_ETYPE (unknown type),
 * TERN_EOVERFLOW (segment above max_seg), TERN_EMALFORMED (bad SDNV). */
TERN_API int tcpcl3_decode(const uint8_t *b, size_t n, uint64_t max_seg, tcpcl3_msg *m,
                           size_t *used);

typedef struct tcpcl3_sess tcpcl3_sess;
/** As the tcpcl4_sess_* functions, for TCPCLv3. seg_mru is both the largest
 * segment accepted and the size outgoing bundles are split at. */
TERN_API int tcpcl3_sess_new(const tcpcl4_cfg *cfg, tcpcl3_sess **out);
TERN_API void tcpcl3_sess_free(tcpcl3_sess *s);
TERN_API int tcpcl3_sess_recv(tcpcl3_sess *s, const uint8_t *b, size_t n, int64_t now_ms);

/** Where the next bytes from the stream may go without a copy: room (at
 * least want) bytes in the session's receive buffer; NULL without memory.
 * Pass what was read to tcpcl3_sess_received(). Like tcpcl3_sess_recv,
 * it ends the validity of the data of events already taken. */
TERN_API uint8_t *tcpcl3_sess_rxbuf(tcpcl3_sess *s, size_t want, size_t *room);

/** As tcpcl3_sess_recv for n bytes read into tcpcl3_sess_rxbuf()'s room. */
TERN_API int tcpcl3_sess_received(tcpcl3_sess *s, size_t n, int64_t now_ms);
TERN_API int tcpcl3_sess_event(tcpcl3_sess *s, tcpcl4_ev *ev);
TERN_API const uint8_t *tcpcl3_sess_output(tcpcl3_sess *s, size_t *len);
TERN_API void tcpcl3_sess_sent(tcpcl3_sess *s, size_t n);
/** Queues a bundle. Without negotiated acknowledgements its EV_ACKED comes at
 * once (v3 then says nothing about delivery). */
TERN_API int tcpcl3_sess_send(tcpcl3_sess *s, const uint8_t *b, size_t len,
                              uint64_t *tid);
/** Final ACK_SEGMENT for received bundle tid (len: its length, RFC 7242's
 * cumulative count). As in tcpcl4_sess_ack, answers leave in bundle order
 * whatever order they are given in: the ACK_SEGMENTs of later bundles wait
 * for this one. */
/* After the peer's SHUTDOWN, as after a v4 SESS_TERM: ENDING while answers
 * are owed, CLOSED with the last. */
TERN_API int tcpcl3_sess_ack(tcpcl3_sess *s, uint64_t tid, uint64_t len);
/** Refuses received bundle tid (in order as tcpcl3_sess_ack), if refusal
 * was negotiated; else -ENOTSUP and bundle tid still needs its answer. */
TERN_API int tcpcl3_sess_refuse(tcpcl3_sess *s, uint64_t tid, uint8_t reason);
/** Answers held for an earlier bundle's final answer (owed ones included). */
TERN_API size_t tcpcl3_sess_answers_held(const tcpcl3_sess *s);
/** As tcpcl4_sess_buffered. */
TERN_API size_t tcpcl3_sess_buffered(const tcpcl3_sess *s);
TERN_API int tcpcl3_sess_close(tcpcl3_sess *s, uint8_t reason);
TERN_API int64_t tcpcl3_sess_tick(tcpcl3_sess *s, int64_t now_ms);
TERN_API int tcpcl3_sess_state(const tcpcl3_sess *s);
TERN_API uint16_t tcpcl3_sess_keepalive(const tcpcl3_sess *s);
/** 1 if both sides asked for segment acknowledgements. */
TERN_API int tcpcl3_sess_acks(const tcpcl3_sess *s);
/** The peer's EID as sent (NUL-terminated, truncated to 255 bytes). */
TERN_API const char *tcpcl3_sess_peer_eid(const tcpcl3_sess *s);
TERN_API const char *tcpcl3_sess_error(const tcpcl3_sess *s);

/* ---- STCP (ION): each bundle preceded by its 32-bit big-endian length ----- */

#define STCP_HDR_LEN 4

/** Writes the 4-byte length prefix of a len-byte bundle; -EMSGSIZE if len
 * does not fit 32 bits. */
TERN_API int stcp_encode_hdr(uint8_t out[STCP_HDR_LEN], size_t len);

/**
 * Frames the bundle at the start of b[0..n): 0 with *data, *len and *used
 * (prefix + bundle) set, *len 0 for a keepalive (ION's stcpclo sends a zero
 * length periodically); TERN_ETRUNCATED if incomplete (once the prefix is in,
 * *used gets the whole frame's length); TERN_EOVERFLOW if the
 * declared length exceeds max.
 */
TERN_API int stcp_decode(const uint8_t *b, size_t n, uint64_t max, const uint8_t **data,
                         size_t *len, size_t *used);

/* ---- MTCP: each bundle one CBOR byte string (major type 2, definite) ---- */

#define MTCP_HDR_MAX 9

/** Writes the CBOR byte-string head for a len-byte bundle; returns its length (1..9). */
TERN_API size_t mtcp_encode_hdr(uint8_t out[MTCP_HDR_MAX], uint64_t len);

/**
 * Frames the bundle at the start of b[0..n): 0 with *data, *len, *used;
 * TERN_ETRUNCATED if incomplete (*used as stcp_decode's); TERN_EOVERFLOW above
 * max; TERN_EMALFORMED if
 * the item is not a definite-length byte string (non-shortest heads are
 * accepted).
 */
TERN_API int mtcp_decode(const uint8_t *b, size_t n, uint64_t max, const uint8_t **data,
                         size_t *len, size_t *used);

#ifdef __cplusplus
}
#endif
#endif
