/* The client protocol between applications (libtern) and ternd (docs/node.md).
 *
 * One SOCK_SEQPACKET Unix socket per node, in the abstract namespace, named
 * "tern-<16 hex>" after the FNV-1a 64-bit hash of the node directory's
 * realpath. Each datagram is one message: a 16-byte little-endian header
 * (u32 type, u32 body length, u64 request id) and a CBOR body. Payloads up to
 * TERN_PROTO_INLINE_MAX travel inline; larger ones as a file descriptor
 * (SCM_RIGHTS) with only their length in the body.
 *
 * Both sides use these codecs. Decoders never read past their input, never
 * trust a declared length, and on failure return a negative code with *why
 * set to a short static string naming the cause (a stable pointer per cause,
 * so a server can log each cause once).
 */
#ifndef TERN_PROTO_H
#define TERN_PROTO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#include "tern/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Protocol version spoken in HELLO. */
#define TERN_PROTO_VERSION 5 /* 4: SEND's head before a descriptor's bytes; 5: FILE_REF  \
                              */
/** Header bytes. */
#define TERN_PROTO_HDR 16
/** Largest payload sent inline; larger ones go as a descriptor. */
#define TERN_PROTO_INLINE_MAX 65536
/** Most head bytes a SEND with a descriptor carries. */
#define TERN_PROTO_HEAD_MAX 1024
/** Largest datagram either side sends or accepts (header + body). */
#define TERN_PROTO_MSG_MAX (TERN_PROTO_HDR + TERN_PROTO_INLINE_MAX + 4096)
/** Room for an EID's text with its NUL (longer EIDs are refused). */
#define TERN_PROTO_EID_MAX 264
/** Longest module name / command line / answer text carried. */
#define TERN_PROTO_TEXT_MAX 4000
/** Most SEND bodies in one SEND_BATCH (and answers in one SENT_BATCH). */
#define TERN_PROTO_BATCH_MAX 64

/** Message types: requests below 0x80, answers from 0x80. */
enum tern_msg_type {
    TERN_MSG_HELLO = 1,            /**< [version] */
    TERN_MSG_OPEN = 2,             /**< [eid] */
    TERN_MSG_CLOSE = 3,            /**< [eid] */
    TERN_MSG_SEND = 4,             /**< see tern_msg_send */
    TERN_MSG_RECV = 5,             /**< [eid, credit, deliveries acknowledged] */
    TERN_MSG_STATUS = 6,           /**< [] */
    TERN_MSG_ADMIN = 7,            /**< [module, command line] */
    TERN_MSG_STOP = 8,             /**< [] */
    TERN_MSG_SEND_BATCH = 9,       /**< [SEND body, ...]; request ids id, id+1, ... */
    TERN_MSG_OK = 0x81,            /**< [] */
    TERN_MSG_ERROR = 0x82,         /**< [code, text] */
    TERN_MSG_HELLO_OK = 0x83,      /**< [version, node number] */
    TERN_MSG_SENT = 0x84,          /**< [code, ctime ms, seq] */
    TERN_MSG_SENT_BATCH = 0x85,    /**< [[code, ctime, seq], ...] for ids id, id+1, ... */
    TERN_MSG_DELIVER = 0x86,       /**< see tern_msg_deliver */
    TERN_MSG_STATUS_OK = 0x87,     /**< {text key: uint, ..., "node": text} */
    TERN_MSG_ADMIN_OK = 0x88,      /**< [code, text] */
    TERN_MSG_DELIVER_BATCH = 0x89, /**< [DELIVER body, ...], inline payloads only */
    TERN_MSG_DROPPED = 0x8A,       /**< notice (id 0): see tern_msg_dropped */
};

/** A message header. */
typedef struct tern_msg_hdr {
    uint32_t type;
    uint32_t len; /**< body bytes */
    uint64_t id;  /**< request id; answers carry their request's */
} tern_msg_hdr;

/** SEND body: [src, dest, lifetime ms, class, ordinal, flags, report-to,
 * offset, payload (bytes) | length (uint, with a descriptor)], and with a
 * descriptor optionally a 10th item: head (bytes, at most
 * TERN_PROTO_HEAD_MAX), the payload's first bytes, before the descriptor's
 * (a protocol header in front of a file's bytes, as a CFDP file-data PDU). */
/** In SEND's flags, beside the bundle's: not a bundle flag but leave for
 * ternd to keep the descriptor's file by reference (BP_SEND_FILE_REF). */
#define TERN_PROTO_SEND_FILE_REF (UINT64_C(1) << 63)

typedef struct tern_msg_send {
    char src[TERN_PROTO_EID_MAX];
    char dest[TERN_PROTO_EID_MAX];
    char report_to[TERN_PROTO_EID_MAX]; /**< "" : the source */
    uint64_t lifetime_ms;
    uint64_t priority; /**< 0 bulk, 1 standard, 2 expedited */
    uint64_t ordinal;  /**< 0..254 */
    uint64_t flags;    /**< RFC 9171 bundle processing flags (reports, no-fragment) */
    uint64_t offset;   /**< where the payload starts in the descriptor */
    const uint8_t *payload; /**< inline payload (a view), NULL with a descriptor */
    uint64_t len;           /**< the inline payload's, or the descriptor's bytes */
    int has_fd;             /**< 1: the payload is in the descriptor passed along */
    const uint8_t *head;    /**< with has_fd: bytes before the descriptor's (a view) */
    uint64_t head_len;      /**< 0..TERN_PROTO_HEAD_MAX */
} tern_msg_send;

/** DELIVER body: [eid, src, ctime ms, seq, flags, payload | length]. */
typedef struct tern_msg_deliver {
    char eid[TERN_PROTO_EID_MAX];
    char src[TERN_PROTO_EID_MAX];
    uint64_t ctime_ms, seq, flags;
    const uint8_t *payload; /**< inline (a view), NULL with a descriptor */
    uint64_t len;
    int has_fd;
} tern_msg_deliver;

/** SENT answer. */
typedef struct tern_msg_sent {
    int64_t code;
    uint64_t ctime_ms, seq;
} tern_msg_sent;

/** DROPPED notice: [eid, ctime ms, seq, code, text]: a bundle sent from
 * endpoint eid, answered SENT 0, was deleted before it reached its end. */
typedef struct tern_msg_dropped {
    char eid[TERN_PROTO_EID_MAX];
    uint64_t ctime_ms, seq;
    int64_t code; /**< negative: -errno or TERN_E* */
    char text[256];
} tern_msg_dropped;

/** Iterator over the items of a SEND_BATCH or SENT_BATCH body. */
typedef struct tern_proto_iter {
    const uint8_t *buf;
    size_t len, pos;
    uint64_t left;  /**< items left in a definite array; UINT64_MAX: indefinite */
    unsigned count; /**< items returned so far */
} tern_proto_iter;

/* ---------------------------------------------------------------- header */

/** Writes a header into out[0..16). */
TERN_API void tern_proto_hdr_pack(uint8_t *out, uint32_t type, uint32_t len, uint64_t id);

/** Reads the header of the datagram msg[0..n): checks that the body length
 * is exactly what follows and the type is known. */
TERN_API int tern_proto_hdr_unpack(const uint8_t *msg, size_t n, tern_msg_hdr *h,
                                   const char **why);

/** The name of a type ("SEND", ...), or "unknown". */
TERN_API const char *tern_proto_type_name(uint32_t type);

/* ------------------------------------------------------------- encoders */
/* Each writes a whole message (header + body) into buf[0..cap) and returns
 * its length, or TERN_ENOSPACE / -EINVAL. */

/** HELLO [version]. */
TERN_API int tern_proto_enc_hello(uint8_t *buf, size_t cap, uint64_t id,
                                  uint64_t version);
/** HELLO_OK [version, node]. */
TERN_API int tern_proto_enc_hello_ok(uint8_t *buf, size_t cap, uint64_t id,
                                     uint64_t version, uint64_t node);
/** OPEN or CLOSE [eid]. */
TERN_API int tern_proto_enc_eid(uint8_t *buf, size_t cap, uint32_t type, uint64_t id,
                                const char *eid);
/** A message with an empty array body (STATUS, STOP, OK). */
TERN_API int tern_proto_enc_empty(uint8_t *buf, size_t cap, uint32_t type, uint64_t id);
/** SEND. With has_fd the payload is not written, only len. */
TERN_API int tern_proto_enc_send(uint8_t *buf, size_t cap, uint64_t id,
                                 const tern_msg_send *m);
/** RECV [eid, credit, acked]: credit more deliveries, and the first acked
 * of those delivered so far reached the application (ternd may forget them). */
TERN_API int tern_proto_enc_recv(uint8_t *buf, size_t cap, uint64_t id, const char *eid,
                                 uint64_t credit, uint64_t acked);
/** ERROR or ADMIN_OK [code, text]. */
TERN_API int tern_proto_enc_code_text(uint8_t *buf, size_t cap, uint32_t type,
                                      uint64_t id, int64_t code, const char *text);
/** ADMIN [module, line]. */
TERN_API int tern_proto_enc_admin(uint8_t *buf, size_t cap, uint64_t id,
                                  const char *module, const char *line);
/** DROPPED notice (request id 0); -EINVAL for a code that is not negative
 * or an EID too long. */
TERN_API int tern_proto_enc_dropped(uint8_t *buf, size_t cap, const tern_msg_dropped *m);
/** SENT [code, ctime, seq]. */
TERN_API int tern_proto_enc_sent(uint8_t *buf, size_t cap, uint64_t id,
                                 const tern_msg_sent *s);
/** SENT_BATCH for n answers (ids id .. id+n-1). */
TERN_API int tern_proto_enc_sent_batch(uint8_t *buf, size_t cap, uint64_t id,
                                       const tern_msg_sent *s, size_t n);
/** DELIVER_BATCH of n (1..TERN_PROTO_BATCH_MAX) deliveries with inline
 * payloads; -EINVAL for a descriptor payload or a bad field, TERN_ENOSPACE
 * or -EMSGSIZE if they do not fit. */
TERN_API int tern_proto_enc_deliver_batch(uint8_t *buf, size_t cap, uint64_t id,
                                          const tern_msg_deliver *m, size_t n);

/** DELIVER. With has_fd the payload is not written, only len. */
TERN_API int tern_proto_enc_deliver(uint8_t *buf, size_t cap, uint64_t id,
                                    const tern_msg_deliver *m);
/** STATUS_OK: n counters named keys[i] and, if node_text is not NULL, "node". */
TERN_API int tern_proto_enc_status_ok(uint8_t *buf, size_t cap, uint64_t id,
                                      const char *const *keys, const uint64_t *vals,
                                      size_t n, const char *node_text);

/** Builds a SEND_BATCH from n whole SEND messages (as tern_proto_enc_send
 * wrote them, none with a descriptor): the header takes the first one's id. */
TERN_API int tern_proto_enc_batch(uint8_t *buf, size_t cap, const uint8_t *const *msgs,
                                  const size_t *lens, size_t n);

/* ------------------------------------------------------------- decoders */
/* Each decodes a body (without header) and checks that it is exactly the
 * item expected, with nothing after it. Text fields are copied and
 * NUL-terminated; an embedded NUL or an oversized text is malformed. */

/** [uint] bodies (HELLO). */
TERN_API int tern_proto_dec_hello(const uint8_t *b, size_t n, uint64_t *version,
                                  const char **why);
/** HELLO_OK. */
TERN_API int tern_proto_dec_hello_ok(const uint8_t *b, size_t n, uint64_t *version,
                                     uint64_t *node, const char **why);
/** OPEN / CLOSE: eid gets TERN_PROTO_EID_MAX bytes at most. */
TERN_API int tern_proto_dec_eid(const uint8_t *b, size_t n, char *eid, const char **why);
/** An empty array body. */
TERN_API int tern_proto_dec_empty(const uint8_t *b, size_t n, const char **why);
/** SEND. */
TERN_API int tern_proto_dec_send(const uint8_t *b, size_t n, tern_msg_send *m,
                                 const char **why);
/** RECV. */
TERN_API int tern_proto_dec_recv(const uint8_t *b, size_t n, char *eid, uint64_t *credit,
                                 uint64_t *acked, const char **why);
/** ERROR / ADMIN_OK: text gets at most cap bytes (cut, NUL-terminated). */
TERN_API int tern_proto_dec_code_text(const uint8_t *b, size_t n, int64_t *code,
                                      char *text, size_t cap, const char **why);
/** ADMIN: module and line get TERN_PROTO_TEXT_MAX + 1 bytes at most. */
TERN_API int tern_proto_dec_admin(const uint8_t *b, size_t n, char *module, size_t modcap,
                                  char *line, size_t linecap, const char **why);
/** SENT. */
TERN_API int tern_proto_dec_sent(const uint8_t *b, size_t n, tern_msg_sent *s,
                                 const char **why);
/** DROPPED (text longer than its field is cut). */
TERN_API int tern_proto_dec_dropped(const uint8_t *b, size_t n, tern_msg_dropped *m,
                                    const char **why);
/** DELIVER. */
TERN_API int tern_proto_dec_deliver(const uint8_t *b, size_t n, tern_msg_deliver *m,
                                    const char **why);
/** STATUS_OK as text lines "key value\n" (and "node:\n<text>" last). */
TERN_API int tern_proto_dec_status_ok(const uint8_t *b, size_t n, char *out, size_t cap,
                                      const char **why);

/** Starts iterating a SEND_BATCH or SENT_BATCH body (a definite or
 * indefinite array of at most TERN_PROTO_BATCH_MAX items). */
TERN_API int tern_proto_iter_begin(tern_proto_iter *it, const uint8_t *b, size_t n,
                                   const char **why);
/** Next SEND of a SEND_BATCH: 0, TERN_EEND after the last (and the body is
 * then checked to end there), or an error. */
TERN_API int tern_proto_iter_send(tern_proto_iter *it, tern_msg_send *m,
                                  const char **why);
/** Next item of a DELIVER_BATCH, as tern_proto_iter_send (a descriptor
 * payload in a batch is malformed). */
TERN_API int tern_proto_iter_deliver(tern_proto_iter *it, tern_msg_deliver *m,
                                     const char **why);

/** Next answer of a SENT_BATCH, as tern_proto_iter_send. */
TERN_API int tern_proto_iter_sent(tern_proto_iter *it, tern_msg_sent *s,
                                  const char **why);

/** Cheap syntax check of an EID text (ipn:N.S, ipn:A.N.S, imc:G.S, dtn:none,
 * dtn://...). */
TERN_API int tern_proto_eid_check(const char *eid);

/* ------------------------------------------------------ sockets and fds */

/** Fills *sa with the abstract address of the node serving node_dir (which
 * must exist: -errno from realpath otherwise); name (may be NULL) gets
 * "tern-<hex>" (namecap >= 22). */
TERN_API int tern_proto_sockaddr(const char *node_dir, struct sockaddr_un *sa,
                                 socklen_t *salen, char *name, size_t namecap);

/** Sends one datagram made of iov[0..n) with fd (-1: none) attached.
 * flags: MSG_DONTWAIT or 0. Retries EINTR. 0 or -errno (-EAGAIN). */
TERN_API int tern_proto_send(int sock, const struct iovec *iov, int n, int fd, int flags);

/** Receives one datagram into buf[0..cap): returns its length (0: the peer
 * closed), -errno, or TERN_ETRUNCATED if it did not fit. *fd gets a passed
 * descriptor (close-on-exec) or -1; extra descriptors are closed. */
TERN_API int tern_proto_recv(int sock, uint8_t *buf, size_t cap, int *fd, int flags);

/** Makes a sealed memfd holding p[0..len). */
TERN_API int tern_proto_memfd(const void *p, size_t len, int *fd);

/** Reads len bytes at off of fd into buf (pread, EINTR-safe); TERN_ETRUNCATED
 * if the file ends first. */
TERN_API int tern_proto_pread(int fd, uint64_t off, void *buf, size_t len);

/** Writes p[0..len) at offset 0 of fd (pwrite, EINTR-safe, short writes
 * continued): how both sides fill a payload memfd. */
TERN_API int tern_proto_pwrite(int fd, const void *p, size_t len);

#ifdef __cplusplus
}
#endif
#endif
