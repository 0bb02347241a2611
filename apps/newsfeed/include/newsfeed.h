/*
 * newsfeed.h — libternnewsfeed: signed, compressed netnews over the DTN.
 *
 * The pieces a publisher and a receiver are built from, each usable alone:
 *
 *   keys        Ed25519 key pairs (libsodium) and their files
 *   article     the bundle payload: a signed, versioned header, the article
 *               bytes (zlib-compressed only when that makes them smaller) and
 *               an Ed25519 signature over everything the receiver trusts
 *               (docs/newsfeed.md has the byte layout)
 *   msg         RFC 5536 article parsing: header/body split, Message-ID,
 *               Newsgroups, Path, the overview fields
 *   seen        per-publisher sequence windows (replays refused, gaps listed)
 *               and a Message-ID history (duplicates dropped), saved
 *               atomically to a file
 *   spool       an INN tradspool-like tree: one directory per newsgroup,
 *               numbered article files, an overview file per group
 *   config      the newsfeed configuration file, errors as file:line: what
 *   nntp        the server side of an NNTP transit feed (IHAVE, MODE STREAM,
 *               CHECK, TAKETHIS): bytes in, response bytes and articles out
 *   publisher   article bytes in, signed payload bytes out, numbered
 *   receiver    payload bytes in, verified and checked article bytes out
 *
 * Conventions: every function that can fail returns 0 or a negative code
 * (-errno or a TERN_E* code from tern/base.h, described by tern_strerror());
 * where a refusal needs explaining, an nf_err receives a reason (an
 * nf_reason, stable, for counting and tests) and a human-readable text.
 * Handles are opaque and not thread-safe; the library has no global mutable
 * state, reads no clock (callers pass times in) and never exits.
 */
#ifndef TERN_NEWSFEED_H
#define TERN_NEWSFEED_H

#include <stddef.h>
#include <stdint.h>

#include "tern/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Bumped whenever a public struct or signature of this header changes. */
#define NF_ABI_VERSION 1

/** The NF_ABI_VERSION the library was built with (bindings check it). */
TERN_API int nf_abi_version(void);

/* ---------------------------------------------------------------- errors */

/** Why something was refused. Stable numbers: counters and logs use them. */
typedef enum nf_reason {
    NF_OK = 0,
    NF_R_MALFORMED,     /**< payload violates the wire format */
    NF_R_VERSION,       /**< payload of a wire version this library does not read */
    NF_R_UNKNOWN_KEY,   /**< publisher or key not in the trusted-key table */
    NF_R_BAD_SIGNATURE, /**< signature does not verify: tampered or forged */
    NF_R_TOO_BIG,       /**< article larger than the configured maximum */
    NF_R_BOMB,          /**< decompression exceeded its hard output limit */
    NF_R_BAD_ARTICLE,   /**< not an acceptable RFC 5536 article */
    NF_R_REPLAY,        /**< sequence number already seen or below the window */
    NF_R_DUPLICATE,     /**< Message-ID already seen */
    NF_R_NO_GROUP,      /**< no newsgroup of the article maps to a multicast group */
    NF_R_CONFIG,        /**< configuration file error */
    NF_R_IO,            /**< a file could not be read or written */
    NF_R_LIMIT,         /**< a size or count limit of the caller was reached */
    NF_R_COUNT          /**< number of reasons (not a reason) */
} nf_reason;

/** A refusal: its reason and a text saying what exactly was wrong. */
typedef struct nf_err {
    nf_reason reason;
    char text[256];
} nf_err;

/** A short fixed name for a reason ("bad-signature", ...), never NULL. */
TERN_API const char *nf_reason_name(nf_reason r);

/* ------------------------------------------------------------------ keys */

#define NF_PUBLICKEY_BYTES 32 /**< Ed25519 public key */
#define NF_SECRETKEY_BYTES 64 /**< libsodium's Ed25519 secret key (seed + public) */
#define NF_SIGNATURE_BYTES 64 /**< Ed25519 signature */
#define NF_KEYID_BYTES     8  /**< key id on the wire: first bytes of the public key */

/** A fresh key pair from libsodium's random source. */
TERN_API int nf_keygen(uint8_t pk[NF_PUBLICKEY_BYTES], uint8_t sk[NF_SECRETKEY_BYTES]);

/**
 * Writes a key pair to two new files: the secret key (mode 0600, whatever
 * the umask) at sk_path and the public key (0644) at pk_path, as one line
 * of text each ("newsfeed-ed25519-secret <hex seed>",
 * "newsfeed-ed25519-public <hex>"). Existing files are never overwritten
 * (TERN_EEXIST); on any failure neither file is left behind.
 */
TERN_API int nf_key_write_files(const char *sk_path, const char *pk_path,
                                const uint8_t pk[NF_PUBLICKEY_BYTES],
                                const uint8_t sk[NF_SECRETKEY_BYTES], nf_err *err);

/** Reads a secret key file. Refuses (-EPERM) one that group or others may
 * read or write, as ssh does: a leaked key forges every article. */
TERN_API int nf_key_read_secret(const char *path, uint8_t sk[NF_SECRETKEY_BYTES],
                                nf_err *err);

/** Reads a public key file, or (if text starts with no '/' or '.' and is 64
 * hex digits) takes the key itself. */
TERN_API int nf_key_read_public(const char *path_or_hex, uint8_t pk[NF_PUBLICKEY_BYTES],
                                nf_err *err);

/* --------------------------------------------------------- trusted keys */

/** The trusted-key table: publisher IDs and the keys that may sign for them. */
typedef struct nf_trust nf_trust;

/** An empty table (trusts nothing). */
TERN_API int nf_trust_new(nf_trust **out);
/** Frees a table; NULL is accepted. */
TERN_API void nf_trust_free(nf_trust *t);
/** Trusts pk for publisher (several keys per publisher allow key rollover).
 * TERN_EEXIST if the same key id is already there for it. */
TERN_API int nf_trust_add(nf_trust *t, const char *publisher,
                          const uint8_t pk[NF_PUBLICKEY_BYTES]);
/** Number of trusted keys. */
TERN_API size_t nf_trust_count(const nf_trust *t);

/* --------------------------------------------------------------- article */

#define NF_PUBLISHER_MAX 64 /**< longest publisher ID (bytes) */
#define NF_WIRE_VERSION  1  /**< the payload version this library writes */
#define NF_WIRE_FIXED    44 /**< fixed header bytes before the publisher ID */

/** Payload flag bits (also in nf_article_info.flags). */
#define NF_FLAG_ZLIB 0x01u /**< the stored bytes are a zlib stream */

/** The header fields of a payload. */
typedef struct nf_article_info {
    char publisher[NF_PUBLISHER_MAX + 1]; /**< publisher ID, NUL-terminated */
    uint8_t key_id[NF_KEYID_BYTES];       /**< which of its keys signed */
    uint64_t seq;                         /**< per-publisher sequence number, >= 1 */
    uint64_t time_ms;                     /**< publisher's clock, Unix ms */
    uint32_t group;                       /**< imc group the publisher sent it to */
    uint32_t flags;                       /**< NF_FLAG_* */
    uint32_t orig_len;                    /**< article bytes after decompression */
    uint32_t stored_len;                  /**< bytes as carried */
} nf_article_info;

/** Limits a decoder enforces. Zero fields take the defaults below. */
typedef struct nf_limits {
    uint32_t max_article;      /**< largest article (uncompressed), bytes */
    uint32_t max_decompressed; /**< hard cap on inflate output, bytes */
} nf_limits;

#define NF_DEFAULT_MAX_ARTICLE      (1u << 20)
#define NF_DEFAULT_MAX_DECOMPRESSED (1u << 20)

/** Encoder options (bits). */
#define NF_ENC_NO_COMPRESS 0x01u /**< store the bytes as they are */

/** Largest payload nf_article_encode() can produce for these sizes. */
TERN_API size_t nf_article_encoded_max(size_t publisher_len, size_t article_len);

/**
 * Encodes and signs one article. info supplies publisher, seq (>= 1),
 * time_ms and group; its key_id, flags and lengths are ignored (they are
 * set from sk and the data). The article is zlib-compressed (level 1..9,
 * 0 for the default 6) only if that makes it smaller. Writes to out[0..cap)
 * and sets *out_len. TERN_ENOSPACE if cap is less than
 * nf_article_encoded_max(); -EINVAL for a bad publisher ID or seq 0;
 * TERN_ETOOBIG for an article above 2^32 - 1 bytes.
 */
TERN_API int nf_article_encode(const nf_article_info *info,
                               const uint8_t sk[NF_SECRETKEY_BYTES], const void *article,
                               size_t article_len, int level, unsigned opts, uint8_t *out,
                               size_t cap, size_t *out_len);

/**
 * Reads the header of a payload WITHOUT verifying it: bounds, magic,
 * version and lengths only. For sizing buffers and logging; never trust
 * the fields it returns.
 */
TERN_API int nf_article_peek(const uint8_t *buf, size_t len, nf_article_info *info,
                             nf_err *err);

/**
 * Decodes and verifies one payload, in this order: bounds and format
 * (TERN_EMALFORMED / TERN_ETRUNCATED, reasons MALFORMED or VERSION), stored
 * size against the limit (TERN_ETOOBIG, TOO_BIG), trusted key
 * (TERN_ENOTFOUND, UNKNOWN_KEY), signature (TERN_ECORRUPT, BAD_SIGNATURE),
 * original size against the limit (TERN_ETOOBIG, TOO_BIG), then inflates
 * with a hard output limit (TERN_EFULL, BOMB). Nothing but the header is
 * believed before the signature verifies. The article goes to
 * out[0..cap); if cap is less than its length the call fails with
 * TERN_ENOSPACE (reason LIMIT) and info->orig_len says how much is needed
 * (nf_article_peek() gives it up front). *out_len gets the length; info
 * and out_len may be NULL.
 */
TERN_API int nf_article_decode(const nf_trust *trust, const nf_limits *lim,
                               const uint8_t *buf, size_t len, nf_article_info *info,
                               uint8_t *out, size_t cap, size_t *out_len, nf_err *err);

/* --------------------------------------------------------- RFC 5536 msg */

/** A slice of the article text (not NUL-terminated; folding kept). */
typedef struct nf_slice {
    const char *p;
    size_t n;
} nf_slice;

/** A parsed article. Slices point into the parsed buffer. */
typedef struct nf_msg {
    const char *text;    /**< the article parsed */
    size_t len;          /**< its length */
    size_t header_len;   /**< bytes of the header section incl. the blank line */
    size_t body_off;     /**< offset of the body */
    size_t body_len;     /**< bytes of body */
    size_t body_lines;   /**< lines in the body */
    nf_slice message_id; /**< "<...@...>", without surrounding white space */
    nf_slice newsgroups; /**< the raw field value */
    nf_slice path;
    nf_slice from;
    nf_slice subject;
    nf_slice date;
    nf_slice references; /**< empty if absent */
    size_t ngroups;      /**< newsgroups listed */
} nf_msg;

/** Longest header line accepted (RFC 5322's 998 plus CRLF). */
#define NF_MSG_MAX_LINE 1000

/**
 * Parses an article (lines end in CRLF or LF): the header section up to
 * the first empty line, the body after it. Refused (TERN_EMALFORMED, reason
 * BAD_ARTICLE, text naming the line and what was wrong): no empty line, a
 * header line without a colon, an over-long or NUL-bearing header line, a
 * missing or repeated Date, From, Message-ID, Newsgroups, Path or Subject,
 * a Message-ID that is not <left@right> of printable ASCII up to 250
 * bytes, a Newsgroups entry that is not a valid newsgroup name.
 */
TERN_API int nf_msg_parse(const void *article, size_t len, nf_msg *m, nf_err *err);

/** The i-th newsgroup of m (i < m->ngroups) into buf (NUL-terminated). */
TERN_API int nf_msg_group(const nf_msg *m, size_t i, char *buf, size_t cap);

/** The first field named name (case-insensitive) of the article parsed
 * into m: *v gets its value (trimmed, folding kept). TERN_ENOTFOUND if absent. */
TERN_API int nf_msg_field(const nf_msg *m, const char *name, nf_slice *v);

/** True if s is a valid RFC 5536 msg-id ("<left@right>", <= 250 bytes). */
TERN_API int nf_msgid_valid(const char *s, size_t n);

/** True if s is a valid newsgroup name (dot-separated components of
 * letters, digits, '+', '-', '_'). */
TERN_API int nf_group_valid(const char *s, size_t n);

/* ---------------------------------------------------------- seen state */

/** Per-publisher sequence windows and the Message-ID history. */
typedef struct nf_seen nf_seen;

/** Sequence numbers remembered below a publisher's highest one. */
#define NF_SEEN_WINDOW 4096
/** Message-IDs remembered (the oldest are forgotten first). */
#define NF_SEEN_HISTORY 200000

/** One publisher's state, for `newsfeed status`. */
typedef struct nf_seen_pub {
    char publisher[NF_PUBLISHER_MAX + 1];
    uint64_t floor;    /**< every number <= floor is settled (seen or given up) */
    uint64_t high;     /**< highest number seen */
    uint64_t accepted; /**< numbers marked seen */
    uint64_t missing;  /**< numbers in (floor, high] not seen */
    uint64_t lost;     /**< numbers that left the window unseen */
} nf_seen_pub;

/** A range of missing sequence numbers, lo..hi inclusive. */
typedef struct nf_range {
    uint64_t lo, hi;
} nf_range;

/** An empty state (about 6 MB: the Message-ID history is preallocated). */
TERN_API int nf_seen_new(nf_seen **out);
/** Frees a state; NULL is accepted. */
TERN_API void nf_seen_free(nf_seen *s);

/**
 * Would (publisher, seq, msgid) be new? 0 if so; TERN_EEXIST with reason
 * REPLAY for a sequence number seen before or at/below the publisher's
 * floor, reason DUPLICATE for a Message-ID in the history. Changes nothing:
 * mark only once the article is safely stored. msgid may be NULL.
 *
 * A publisher's first article sets its floor just below it: a receiver
 * that joins late does not ask for the feed's whole history.
 */
TERN_API int nf_seen_check(const nf_seen *s, const char *publisher, uint64_t seq,
                           const char *msgid, size_t msgid_len, nf_err *err);

/** Records (publisher, seq, msgid). Numbers pushed out of the window unseen
 * are counted as lost. Same refusals as nf_seen_check(). */
TERN_API int nf_seen_mark(nf_seen *s, const char *publisher, uint64_t seq,
                          const char *msgid, size_t msgid_len, nf_err *err);

/**
 * Starts tracking publisher with its floor at floor, so every later number
 * is wanted (0: the feed's whole history) instead of the floor being set
 * by the first article that arrives: for a new receiver whose first
 * bundles may arrive out of order. TERN_EEXIST if publisher is known.
 */
TERN_API int nf_seen_expect(nf_seen *s, const char *publisher, uint64_t floor);

/** Gives up on every number of publisher up to and including seq (they
 * count as lost if unseen). For a publisher that says it never sent them. */
TERN_API int nf_seen_settle(nf_seen *s, const char *publisher, uint64_t seq);

/** Number of publishers known. */
TERN_API size_t nf_seen_publishers(const nf_seen *s);
/** The i-th publisher's state (in first-seen order). TERN_ENOTFOUND past the end. */
TERN_API int nf_seen_publisher_at(const nf_seen *s, size_t i, nf_seen_pub *out);
/**
 * The missing numbers of publisher as ranges, lowest first: up to max
 * into r, *n the number written. Returns TERN_ENOSPACE (after filling r)
 * if there were more; TERN_ENOTFOUND for an unknown publisher.
 */
TERN_API int nf_seen_gaps(const nf_seen *s, const char *publisher, nf_range *r,
                          size_t max, size_t *n);

/** Writes the state to path atomically (a temporary file, fsync, rename,
 * fsync of the directory): a crash leaves the old state or the new. */
TERN_API int nf_seen_save(const nf_seen *s, const char *path, nf_err *err);
/** Reads a saved state. -ENOENT if there is none; TERN_ECORRUPT if the
 * file fails its checksum or format. */
TERN_API int nf_seen_load(nf_seen **out, const char *path, nf_err *err);

/* ----------------------------------------------------------------- spool */

/** A tradspool-like tree under one directory. */
typedef struct nf_spool nf_spool;

/** Opens (creating it if needed, mode 0755) a spool rooted at dir. */
TERN_API int nf_spool_open(nf_spool **out, const char *dir, nf_err *err);
/** Closes a spool (nothing is synced: see nf_spool_sync()); NULL is accepted. */
TERN_API void nf_spool_close(nf_spool *sp);

/** Where one stored article went. */
typedef struct nf_spool_where {
    size_t ngroups;     /**< groups it was stored in */
    uint64_t first_num; /**< its number in the first of them */
} nf_spool_where;

/**
 * Stores the article parsed into m: in the directory of each of its
 * newsgroups (comp.lang.c -> dir/comp/lang/c), as the next free number,
 * written to a temporary file and hard-linked into place (no reader sees
 * half an article under a number; cross-posts share one file). Not yet
 * durable: see nf_spool_sync(). One
 * overview line per group is appended to that group's ".overview":
 * number, Subject, From, Date, Message-ID, References, bytes, lines,
 * tab-separated, with tabs, CRs and LFs inside fields made spaces.
 */
TERN_API int nf_spool_store(nf_spool *sp, const void *article, size_t len,
                            const nf_msg *m, nf_spool_where *where, nf_err *err);

/** Makes every article stored so far durable (syncfs of the spool's file
 * system). Call it before saving the seen state that says they are stored:
 * one sync per batch instead of two fsyncs per article. */
TERN_API int nf_spool_sync(nf_spool *sp);

/** The highest article number in group (0 if none). */
TERN_API int nf_spool_high(nf_spool *sp, const char *group, uint64_t *high);

/* ---------------------------------------------------------------- config */

/** A loaded configuration file (docs/newsfeed.md lists its commands). */
typedef struct nf_config nf_config;

/**
 * Parses configuration text. On TERN_ESYNTAX (some line was wrong) *out is
 * still set, holding every diagnostic ("file:line: what was wrong");
 * paths in the file are relative to base_dir (NULL: the current
 * directory). Key files are read here, so a bad key is a file:line error.
 */
TERN_API int nf_config_parse(nf_config **out, const char *name, const char *text,
                             size_t len, const char *base_dir);
/** Reads and parses the file at path (relative paths: its directory). */
TERN_API int nf_config_load(nf_config **out, const char *path);
/** Frees a configuration (the secret key is wiped); NULL is accepted. */
TERN_API void nf_config_free(nf_config *c);

/** Number of diagnostics. */
TERN_API size_t nf_config_diag_count(const nf_config *c);
/** The i-th diagnostic, in line order (NULL past the end). */
TERN_API const char *nf_config_diag_at(const nf_config *c, size_t i);

/** This node's publisher ID ("" if none configured). */
TERN_API const char *nf_config_publisher(const nf_config *c);
/** This node's secret key; TERN_ENOTFOUND if none configured. */
TERN_API int nf_config_secret_key(const nf_config *c, uint8_t sk[NF_SECRETKEY_BYTES]);
/** The trusted keys (owned by the config). */
TERN_API const nf_trust *nf_config_trust(const nf_config *c);
/** The spool directory (NULL if none). */
TERN_API const char *nf_config_spool(const nf_config *c);
/** The seen-state file (NULL if none). */
TERN_API const char *nf_config_state(const nf_config *c);
/** The NNTP listen address ("host:port", NULL if none). */
TERN_API const char *nf_config_nntp_listen(const nf_config *c);
/** The publisher's zlib level: 1 (fastest, the default) .. 9, or 0 for
 * never compressing. */
TERN_API int nf_config_compression_level(const nf_config *c);
/** The limits (defaults where the file says nothing). */
TERN_API nf_limits nf_config_limits(const nf_config *c);
/**
 * The imc group for a newsgroup: the first "group" line whose pattern
 * matches it (an exact name, "prefix.*" or "*"). TERN_ENOTFOUND if none.
 */
TERN_API int nf_config_group_for(const nf_config *c, const char *newsgroup,
                                 uint32_t *imc);
/** Number of imc groups the map names (distinct) and the i-th of them. */
TERN_API size_t nf_config_imc_count(const nf_config *c);
TERN_API uint32_t nf_config_imc_at(const nf_config *c, size_t i);

/* ------------------------------------------------------------------ nntp */

/** The server side of one NNTP transit connection (opaque). */
typedef struct nf_nntp nf_nntp;

/** Options; zero fields take defaults. */
typedef struct nf_nntp_opts {
    size_t max_article;   /**< articles above this are read and refused (437/439) */
    size_t max_output;    /**< feed() stops consuming while this much output waits */
    const char *greeting; /**< text after "200 " ("Tern newsfeed ready") */
} nf_nntp_opts;

/** Longest command line (RFC 3977: 512 bytes including CRLF). */
#define NF_NNTP_MAX_CMD 512

/** What the machine needs decided or reports. */
typedef enum nf_nntp_ev_type {
    NF_NNTP_EV_NONE = 0,
    NF_NNTP_EV_CHECK,    /**< CHECK msgid: want it? (238 / 431 / 438) */
    NF_NNTP_EV_IHAVE,    /**< IHAVE msgid offered: want it? (335 / 436 / 435) */
    NF_NNTP_EV_ARTICLE,  /**< IHAVE article arrived: taken? (235 / 436 / 437) */
    NF_NNTP_EV_TAKETHIS, /**< TAKETHIS article arrived: taken? (239 / 400 / 439) */
} nf_nntp_ev_type;

/** A decision for the pending event. */
typedef enum nf_nntp_verdict {
    NF_NNTP_WANT = 1, /**< CHECK/IHAVE: send it */
    NF_NNTP_UNWANTED, /**< CHECK/IHAVE: already have it, do not send */
    NF_NNTP_DEFER,    /**< any: try again later (TAKETHIS: 400 and close) */
    NF_NNTP_ACCEPT,   /**< ARTICLE/TAKETHIS: taken */
    NF_NNTP_REJECT,   /**< ARTICLE/TAKETHIS: refused, do not resend */
} nf_nntp_verdict;

/** An event. Pointers stay valid until the next decide/feed call. */
typedef struct nf_nntp_ev {
    nf_nntp_ev_type type;
    const char *msgid;      /**< NUL-terminated */
    const uint8_t *article; /**< dot-unstuffed article, line ends as sent */
    size_t article_len;
} nf_nntp_ev;

/** Per-connection counters. */
typedef struct nf_nntp_stats {
    uint64_t commands, bad_commands, offered, accepted, rejected, deferred, too_big;
} nf_nntp_stats;

/** A new connection; the greeting ("200 ...") is queued as output. */
TERN_API int nf_nntp_new(nf_nntp **out, const nf_nntp_opts *o);
/** Frees a connection's machine; NULL is accepted. */
TERN_API void nf_nntp_free(nf_nntp *s);

/**
 * Consumes bytes from the peer until all are used, an event needs a
 * decision, the output limit is reached or the connection is closed;
 * *used says how many were taken (the caller keeps the rest). Returns 0,
 * or -ENOMEM.
 */
TERN_API int nf_nntp_feed(nf_nntp *s, const void *in, size_t len, size_t *used);

/** The pending event (type NONE if there is none). */
TERN_API void nf_nntp_event(const nf_nntp *s, nf_nntp_ev *ev);

/** Decides the pending event, queueing its response: TERN_ESTATE if no
 * event waits, -EINVAL if the verdict does not fit it. */
TERN_API int nf_nntp_decide(nf_nntp *s, nf_nntp_verdict v);

/** Output waiting to be sent: *p and the count. */
TERN_API size_t nf_nntp_output(const nf_nntp *s, const char **p);
/** Marks n bytes of output as sent. */
TERN_API void nf_nntp_output_done(nf_nntp *s, size_t n);

/** True once the connection is over (QUIT or a fatal 400): send the
 * output, then close. */
TERN_API int nf_nntp_closing(const nf_nntp *s);

/** The connection's counters. */
TERN_API void nf_nntp_get_stats(const nf_nntp *s, nf_nntp_stats *st);

/* ----------------------------------------------------------- nntp client */

/** The client side of a feed into a news server (a receiver pushing to its
 * local INN): articles in, commands out, responses in, one outcome per
 * article out. Sans I/O like nf_nntp. */
typedef struct nf_nntpc nf_nntpc;

/** Client options; zero fields take defaults. */
typedef struct nf_nntpc_opts {
    int no_stream;       /**< 1: IHAVE only; 0: MODE STREAM, CHECK + TAKETHIS if the
                              server permits (203), else IHAVE */
    size_t max_inflight; /**< streaming: CHECK/TAKETHIS outstanding at once (16) */
} nf_nntpc_opts;

/** What became of an offered article. */
typedef enum nf_nntpc_outcome {
    NF_NNTPC_TAKEN = 1, /**< 235 / 239 */
    NF_NNTPC_DUPLICATE, /**< 435 / 438: the server has it; drop, record */
    NF_NNTPC_REJECTED,  /**< 437 / 439: refused for good; drop, record */
    NF_NNTPC_RETRY,     /**< 431 / 436 / 400, an unexpected code, or the connection
                             ended: offer it again later (nothing is lost) */
} nf_nntpc_outcome;

/** One article's outcome. */
typedef struct nf_nntpc_result {
    uint64_t tag; /**< the caller's tag from nf_nntpc_offer() */
    nf_nntpc_outcome outcome;
    int code;       /**< the server's response code (0: connection ended) */
    char text[128]; /**< the server's response line */
} nf_nntpc_result;

/** A client for a new connection: it waits for the server's greeting. o may be NULL. */
TERN_API int nf_nntpc_new(nf_nntpc **out, const nf_nntpc_opts *o);
/** Frees a client and the articles it still holds (they get no outcome:
 * call nf_nntpc_abort() first to have them). NULL is accepted. */
TERN_API void nf_nntpc_free(nf_nntpc *c);
/**
 * Queues an article (copied; line ends CRLF or LF, sent as CRLF,
 * dot-stuffed) under msgid (a valid message-id, -EINVAL otherwise) and the
 * caller's tag.
 */
TERN_API int nf_nntpc_offer(nf_nntpc *c, uint64_t tag, const char *msgid,
                            const void *article, size_t len);
/** Consumes server response bytes; *used as for nf_nntp_feed(). */
TERN_API int nf_nntpc_feed(nf_nntpc *c, const void *in, size_t len, size_t *used);
/** Bytes to send to the server, and marking them sent. */
TERN_API size_t nf_nntpc_output(const nf_nntpc *c, const char **p);
TERN_API void nf_nntpc_output_done(nf_nntpc *c, size_t n);
/** The next outcome; TERN_EEND if none is ready. */
TERN_API int nf_nntpc_next(nf_nntpc *c, nf_nntpc_result *r);
/** The connection is gone: every article without an outcome gets RETRY. */
TERN_API void nf_nntpc_abort(nf_nntpc *c);
/** True once the server refused service or closed (400, 502, bad greeting). */
TERN_API int nf_nntpc_closed(const nf_nntpc *c);
/** Articles offered that have no outcome yet. */
TERN_API size_t nf_nntpc_pending(const nf_nntpc *c);

/* ------------------------------------------------------------- publisher */

/** Article bytes in, numbered signed payloads out. */
typedef struct nf_publisher nf_publisher;

/**
 * A publisher with cfg's identity, secret key, group map, limits and
 * compression level (cfg is borrowed and must outlive it), whose next
 * sequence number is next_seq (>= 1). The caller must make next_seq
 * durable before any payload with a number below it leaves the node
 * (nf_publisher_next_seq()): a publisher that reuses numbers after a crash
 * has its new articles refused as replays.
 */
TERN_API int nf_publisher_new(nf_publisher **out, const nf_config *cfg, uint64_t next_seq,
                              nf_err *err);
/** Frees a publisher (its key copy is wiped); NULL is accepted. */
TERN_API void nf_publisher_free(nf_publisher *p);

/** What nf_publisher_publish() made. */
typedef struct nf_published {
    uint64_t seq;
    uint32_t group; /**< imc group to send the payload to */
    size_t payload_len;
    int compressed;
    char msgid[256];
} nf_published;

/**
 * Refuses an over-size (TERN_ETOOBIG, TOO_BIG) or malformed article
 * (TERN_EMALFORMED, BAD_ARTICLE) and one whose newsgroups map to no imc
 * group (TERN_ENOTFOUND, NO_GROUP); else numbers, compresses and signs it
 * into out[0..cap) (cap >= nf_publisher_payload_max()). time_ms is the
 * publisher's clock (Unix ms), carried signed.
 */
TERN_API int nf_publisher_publish(nf_publisher *p, const void *article, size_t len,
                                  uint64_t time_ms, uint8_t *out, size_t cap,
                                  nf_published *res, nf_err *err);
/** The largest payload publish can produce. */
TERN_API size_t nf_publisher_payload_max(const nf_publisher *p);
/** The number the next article will get. */
TERN_API uint64_t nf_publisher_next_seq(const nf_publisher *p);

/**
 * Saves the next sequence number to path atomically (temporary file,
 * fsync, rename, fsync of the directory). Call it after publishing a batch
 * and before sending any of it: one fsync per batch keeps numbers unique
 * across crashes.
 */
TERN_API int nf_publisher_save(const nf_publisher *p, const char *path, nf_err *err);

/** Reads a number saved by nf_publisher_save(): -ENOENT if there is none
 * (a new publisher starts at 1), TERN_ECORRUPT if the file is damaged. */
TERN_API int nf_publisher_load_seq(const char *path, uint64_t *next_seq, nf_err *err);

/* -------------------------------------------------------------- receiver */

/** Payloads in, verified, new articles out (opaque). */
typedef struct nf_receiver nf_receiver;

/** A receiver trusting cfg's keys, with its limits, over seen. Both are
 * borrowed and must outlive it; the caller saves seen. */
TERN_API int nf_receiver_new(nf_receiver **out, const nf_config *cfg, nf_seen *seen);
/** Frees a receiver (not its seen state); NULL is accepted. */
TERN_API void nf_receiver_free(nf_receiver *r);

/** An accepted article: valid until the next accept. */
typedef struct nf_received {
    nf_article_info info;
    const uint8_t *article;
    size_t len;
    nf_msg msg;
} nf_received;

/**
 * Verifies and decompresses a payload (nf_article_decode()), parses the
 * article (nf_msg_parse()) and checks it against the seen state
 * (nf_seen_check()); each refusal is counted by its reason. A verified
 * duplicate (its Message-ID seen under another number) still settles its
 * sequence number, so it is not a gap. The article
 * is not yet marked seen: store or push it, then nf_receiver_commit().
 */
TERN_API int nf_receiver_accept(nf_receiver *r, const uint8_t *payload, size_t len,
                                nf_received *out, nf_err *err);
/** Marks the article of the last accept as seen. */
TERN_API int nf_receiver_commit(nf_receiver *r, const nf_received *a, nf_err *err);
/** Refusals counted for a reason, and the accepted articles (NF_OK). */
TERN_API uint64_t nf_receiver_count(const nf_receiver *r, nf_reason reason);

#ifdef __cplusplus
}
#endif
#endif
