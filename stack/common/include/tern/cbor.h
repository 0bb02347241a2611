/* CBOR (RFC 8949): a streaming encoder, a zero-copy decoder cursor, a
 * well-formedness checker and a diagnostic-notation printer.
 *
 * Encoder: write into a caller buffer with a sticky error. No call fails on
 * its own; tern_cbor_enc_finish() tells whether everything fitted and how many
 * bytes were (or would have been) needed, so a first pass over a NULL/0 buffer
 * sizes the real one. Arguments use the shortest form (RFC 8949 section 4.1,
 * "preferred serialization").
 *
 *   uint8_t buf[64];
 *   tern_cbor_enc e;
 *   tern_cbor_enc_init(&e, buf, sizeof buf);
 *   tern_cbor_enc_array(&e, 2);
 *   tern_cbor_enc_uint(&e, 7);
 *   tern_cbor_enc_text(&e, "dtn", 3);
 *   size_t n;
 *   int rc = tern_cbor_enc_finish(&e, &n);  // 0 and n == 6
 *
 * Decoder: a cursor over (buf, len). It never reads past len and never trusts
 * a declared length. Every tern_cbor_dec_* getter either consumes exactly one
 * head (or item) and returns 0, or returns an error and leaves the cursor where
 * it was. Strings are returned as pointers into the input. Getters return
 * TERN_ETRUNCATED when the input ends before the item, TERN_EMALFORMED when the
 * head is not well-formed and TERN_ETYPE when the item has another type.
 * The cursor does not check that containers are closed correctly as the caller
 * walks them; tern_cbor_wellformed() (or tern_cbor_skip()) does, in one pass.
 *
 * Validity beyond well-formedness (UTF-8 of text strings, duplicate map keys,
 * tag semantics) is the caller's business; tern_cbor_utf8_valid() helps.
 */
#ifndef TERN_CBOR_H
#define TERN_CBOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tern/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Containers and tags nested deeper than this give TERN_EDEPTH. */
#define TERN_CBOR_MAX_DEPTH 64

/** Count returned for an indefinite-length array or map. */
#define TERN_CBOR_INDEF UINT64_MAX

/** Major types (RFC 8949 section 3.1). */
enum {
    TERN_CBOR_MT_UINT = 0,
    TERN_CBOR_MT_NEGINT = 1,
    TERN_CBOR_MT_BYTES = 2,
    TERN_CBOR_MT_TEXT = 3,
    TERN_CBOR_MT_ARRAY = 4,
    TERN_CBOR_MT_MAP = 5,
    TERN_CBOR_MT_TAG = 6,
    TERN_CBOR_MT_SIMPLE = 7,
};

/** Simple values (major type 7) with a name. */
enum {
    TERN_CBOR_FALSE = 20,
    TERN_CBOR_TRUE = 21,
    TERN_CBOR_NULL = 22,
    TERN_CBOR_UNDEFINED = 23,
};

/** What the next item is, as seen by tern_cbor_peek(). */
typedef enum tern_cbor_kind {
    TERN_CBOR_UINT = 0,   /**< major type 0 */
    TERN_CBOR_NEGINT = 1, /**< major type 1: -1 - n */
    TERN_CBOR_BYTES = 2,  /**< byte string, definite or indefinite */
    TERN_CBOR_TEXT = 3,   /**< text string, definite or indefinite */
    TERN_CBOR_ARRAY = 4,  /**< array, definite or indefinite */
    TERN_CBOR_MAP = 5,    /**< map, definite or indefinite */
    TERN_CBOR_TAG = 6,    /**< tag number; the tagged item follows */
    TERN_CBOR_SIMPLE = 7, /**< false, true, null, undefined, simple(n) */
    TERN_CBOR_FLOAT = 8,  /**< half, single or double precision float */
    TERN_CBOR_BREAK = 9,  /**< the "break" stop code (0xff) */
} tern_cbor_kind;

/* ---------------------------------------------------------------- encoder */

/** Encoder state; keep it on the stack. Fields are read-only for callers. */
typedef struct tern_cbor_enc {
    uint8_t *buf; /**< output buffer (may be NULL when cap is 0) */
    size_t cap;   /**< capacity of buf */
    size_t len;   /**< bytes produced so far, including those that did not fit */
    int err;      /**< sticky error other than running out of space, or 0 */
} tern_cbor_enc;

/** Starts encoding into buf[0..cap); buf may be NULL with cap 0 (sizing pass). */
TERN_API void tern_cbor_enc_init(tern_cbor_enc *e, uint8_t *buf, size_t cap);

/** Ends encoding: *len gets the encoded length; returns 0, TERN_ENOSPACE if it
 * did not fit (*len is then the size needed), or a sticky error (-EINVAL,
 * TERN_EOVERFLOW). len may be NULL. */
TERN_API int tern_cbor_enc_finish(const tern_cbor_enc *e, size_t *len);

/** Encodes an unsigned integer (major type 0). */
TERN_API void tern_cbor_enc_uint(tern_cbor_enc *e, uint64_t v);

/** Encodes the negative integer -1 - n (major type 1, raw form). */
TERN_API void tern_cbor_enc_negint(tern_cbor_enc *e, uint64_t n);

/** Encodes a signed integer as major type 0 or 1. */
TERN_API void tern_cbor_enc_int(tern_cbor_enc *e, int64_t v);

/** Encodes a definite-length byte string. */
TERN_API void tern_cbor_enc_bytes(tern_cbor_enc *e, const void *p, size_t n);

/** Encodes a definite-length text string (UTF-8 is not checked). */
TERN_API void tern_cbor_enc_text(tern_cbor_enc *e, const char *s, size_t n);

/** Encodes a NUL-terminated string as a text string. */
TERN_API void tern_cbor_enc_cstr(tern_cbor_enc *e, const char *s);

/** Encodes only the head of a byte string of n bytes; append them with
 * tern_cbor_enc_raw() or tern_cbor_enc_reserve(). */
TERN_API void tern_cbor_enc_bytes_head(tern_cbor_enc *e, uint64_t n);

/** Encodes only the head of a text string of n bytes. */
TERN_API void tern_cbor_enc_text_head(tern_cbor_enc *e, uint64_t n);

/** Appends n raw bytes (a string payload or an already encoded item). */
TERN_API void tern_cbor_enc_raw(tern_cbor_enc *e, const void *p, size_t n);

/** Reserves n bytes and returns where to write them, or NULL if they do not fit
 * (the length is still counted). */
TERN_API uint8_t *tern_cbor_enc_reserve(tern_cbor_enc *e, size_t n);

/** Encodes the head of an array of n items. */
TERN_API void tern_cbor_enc_array(tern_cbor_enc *e, uint64_t n);

/** Encodes the head of a map of n key/value pairs. */
TERN_API void tern_cbor_enc_map(tern_cbor_enc *e, uint64_t n);

/** Starts an indefinite-length array; end it with tern_cbor_enc_break(). */
TERN_API void tern_cbor_enc_array_indef(tern_cbor_enc *e);

/** Starts an indefinite-length map; end it with tern_cbor_enc_break(). */
TERN_API void tern_cbor_enc_map_indef(tern_cbor_enc *e);

/** Starts an indefinite-length byte string (definite byte-string chunks follow). */
TERN_API void tern_cbor_enc_bytes_indef(tern_cbor_enc *e);

/** Starts an indefinite-length text string (definite text-string chunks follow). */
TERN_API void tern_cbor_enc_text_indef(tern_cbor_enc *e);

/** Encodes the "break" stop code that ends an indefinite-length item. */
TERN_API void tern_cbor_enc_break(tern_cbor_enc *e);

/** Encodes a tag number; the tagged item must follow. */
TERN_API void tern_cbor_enc_tag(tern_cbor_enc *e, uint64_t tag);

/** Encodes simple(v); v in 24..31 is not well-formed and sets -EINVAL. */
TERN_API void tern_cbor_enc_simple(tern_cbor_enc *e, uint8_t v);

/** Encodes false or true. */
TERN_API void tern_cbor_enc_bool(tern_cbor_enc *e, bool v);

/** Encodes null. */
TERN_API void tern_cbor_enc_null(tern_cbor_enc *e);

/** Encodes undefined. */
TERN_API void tern_cbor_enc_undefined(tern_cbor_enc *e);

/** Encodes a float in the shortest of half/single/double that holds it exactly
 * (NaN payloads are kept when they fit). */
TERN_API void tern_cbor_enc_double(tern_cbor_enc *e, double v);

/** Encodes a double-precision float (always 9 bytes). */
TERN_API void tern_cbor_enc_float64(tern_cbor_enc *e, double v);

/** Encodes a single-precision float (always 5 bytes). */
TERN_API void tern_cbor_enc_float32(tern_cbor_enc *e, float v);

/** Encodes a half-precision float from its 16-bit pattern (always 3 bytes). */
TERN_API void tern_cbor_enc_float16_bits(tern_cbor_enc *e, uint16_t bits);

/* ---------------------------------------------------------------- decoder */

/** Decoder cursor; keep it on the stack. buf[pos..len) is still to be read. */
typedef struct tern_cbor_dec {
    const uint8_t *buf;
    size_t len;
    size_t pos;
} tern_cbor_dec;

/** Iterator over the chunks of a (possibly indefinite-length) string. */
typedef struct tern_cbor_chunks {
    tern_cbor_dec *d;
    uint8_t major; /**< TERN_CBOR_MT_BYTES or TERN_CBOR_MT_TEXT */
    uint8_t indef; /**< string is indefinite-length */
    uint8_t done;  /**< no more chunks */
} tern_cbor_chunks;

/** Starts decoding buf[0..len). */
TERN_API void tern_cbor_dec_init(tern_cbor_dec *d, const uint8_t *buf, size_t len);

/** True when every byte has been consumed. */
TERN_API bool tern_cbor_dec_done(const tern_cbor_dec *d);

/** Looks at the next item without consuming it: *kind, and *indef (may be NULL)
 * for indefinite strings/arrays/maps. TERN_EEND at the end of the input,
 * TERN_EMALFORMED for a reserved or invalid initial byte. */
TERN_API int tern_cbor_peek(const tern_cbor_dec *d, tern_cbor_kind *kind, bool *indef);

/** Reads an unsigned integer (major type 0 only). */
TERN_API int tern_cbor_dec_uint(tern_cbor_dec *d, uint64_t *v);

/** Reads a negative integer in raw form: the value is -1 - *n. */
TERN_API int tern_cbor_dec_negint(tern_cbor_dec *d, uint64_t *n);

/** Reads an integer of major type 0 or 1; TERN_EOVERFLOW if not in int64_t. */
TERN_API int tern_cbor_dec_int(tern_cbor_dec *d, int64_t *v);

/** Reads a definite-length byte string as a pointer into the input.
 * TERN_ETYPE for anything else, including an indefinite-length byte string
 * (use tern_cbor_chunks_begin() for those). */
TERN_API int tern_cbor_dec_bytes(tern_cbor_dec *d, const uint8_t **p, size_t *n);

/** Reads a definite-length text string as a pointer into the input (not
 * NUL-terminated, UTF-8 not checked). TERN_ETYPE as for tern_cbor_dec_bytes(). */
TERN_API int tern_cbor_dec_text(tern_cbor_dec *d, const char **s, size_t *n);

/** Opens a byte (kind TERN_CBOR_BYTES) or text (TERN_CBOR_TEXT) string of
 * either length form for reading chunk by chunk with tern_cbor_chunks_next(). */
TERN_API int tern_cbor_chunks_begin(tern_cbor_dec *d, tern_cbor_chunks *it,
                                    tern_cbor_kind kind);

/** Returns the next chunk (a definite string yields one), then TERN_EEND once
 * the string is fully consumed. TERN_EMALFORMED for a chunk of another type. */
TERN_API int tern_cbor_chunks_next(tern_cbor_chunks *it, const uint8_t **p, size_t *n);

/** Reads an array head: *count items, or TERN_CBOR_INDEF. A definite count is
 * never larger than the bytes left (else TERN_ETRUNCATED), so it is safe to size
 * allocations by. tern_cbor_wellformed() instead reports errors in input order
 * and may name a later malformation first (82 ff is TERN_EMALFORMED there). */
TERN_API int tern_cbor_dec_array(tern_cbor_dec *d, uint64_t *count);

/** Reads a map head: *count pairs, or TERN_CBOR_INDEF. As tern_cbor_dec_array(). */
TERN_API int tern_cbor_dec_map(tern_cbor_dec *d, uint64_t *count);

/** Consumes a "break"; TERN_ETYPE if the next item is not one. */
TERN_API int tern_cbor_dec_break(tern_cbor_dec *d);

/** True if the next byte is a "break" (ends an indefinite array or map). */
TERN_API bool tern_cbor_at_break(const tern_cbor_dec *d);

/** Reads a tag number; the tagged item follows. */
TERN_API int tern_cbor_dec_tag(tern_cbor_dec *d, uint64_t *tag);

/** Reads a simple value (including false/true/null/undefined, not floats). */
TERN_API int tern_cbor_dec_simple(tern_cbor_dec *d, uint8_t *v);

/** Reads false or true. */
TERN_API int tern_cbor_dec_bool(tern_cbor_dec *d, bool *v);

/** Reads null. */
TERN_API int tern_cbor_dec_null(tern_cbor_dec *d);

/** Reads undefined. */
TERN_API int tern_cbor_dec_undefined(tern_cbor_dec *d);

/** Reads a half, single or double precision float as a double. */
TERN_API int tern_cbor_dec_double(tern_cbor_dec *d, double *v);

/** Skips one complete data item (nested containers, tags, indefinite items),
 * checking its well-formedness; TERN_EDEPTH past TERN_CBOR_MAX_DEPTH nested
 * arrays, maps and tags. Runs in constant stack. d is unchanged on error. */
TERN_API int tern_cbor_skip(tern_cbor_dec *d);

/** Checks that buf[0..len) is exactly one well-formed item (TERN_EMALFORMED if
 * bytes follow it). */
TERN_API int tern_cbor_wellformed(const uint8_t *buf, size_t len);

/** Checks that buf[0..len) is a CBOR sequence (RFC 8742): zero or more items. */
TERN_API int tern_cbor_wellformed_seq(const uint8_t *buf, size_t len);

/* ------------------------------------------------------------ utilities */

/** Converts a half-precision bit pattern to a double (subnormals, inf, NaN). */
TERN_API double tern_cbor_half_to_double(uint16_t bits);

/** True if p[0..n) is valid UTF-8 (no overlongs, surrogates or > U+10FFFF). */
TERN_API bool tern_cbor_utf8_valid(const void *p, size_t n);

/** Prints one item in diagnostic notation (RFC 8949 section 8) and advances d
 * past it. out gets NUL-terminated (maybe cut) text if outcap > 0; *outlen (may
 * be NULL) the full text length. Returns a decoding error, else TERN_ENOSPACE if
 * the text was cut (d is then unchanged: retry with *outlen + 1), else 0.
 * Non-ASCII text is escaped as \uXXXX, invalid UTF-8 bytes as \xNN. */
TERN_API int tern_cbor_diag_item(tern_cbor_dec *d, char *out, size_t outcap,
                                 size_t *outlen);

/** Prints buf[0..len), which must be exactly one item, in diagnostic notation;
 * returns as tern_cbor_diag_item(). */
TERN_API int tern_cbor_diag(const uint8_t *buf, size_t len, char *out, size_t outcap);

#ifdef __cplusplus
}
#endif
#endif
