/* libFuzzer target for the CBOR codec.
 *
 * Arbitrary bytes go through the well-formedness check, skip and the
 * diagnostic printer, which must agree; every getter is tried at every offset.
 * Well-formed input is walked with the typed getters and re-encoded; the copy
 * must be well-formed, print the same, and re-encode to itself. A strict
 * prefix of a well-formed item must be reported as truncated.
 */
#include <stdlib.h>
#include <string.h>

#include "tern/cbor.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MUST(c)                                                                          \
    do {                                                                                 \
        if (!(c))                                                                        \
            abort();                                                                     \
    } while (0)

static int walk(tern_cbor_dec *d, tern_cbor_enc *e)
{
    tern_cbor_kind k;
    bool indef;
    int rc = tern_cbor_peek(d, &k, &indef);
    if (rc)
        return rc;
    switch (k) {
    case TERN_CBOR_UINT:
    case TERN_CBOR_NEGINT: {
        uint64_t v;
        int64_t s = 0;
        size_t at = d->pos;
        int irc = tern_cbor_dec_int(d, &s);
        MUST(irc == 0 || irc == TERN_EOVERFLOW);
        d->pos = at;
        if (k == TERN_CBOR_UINT) {
            MUST(tern_cbor_dec_negint(d, &v) == TERN_ETYPE);
            if ((rc = tern_cbor_dec_uint(d, &v)))
                return rc;
            MUST(irc ? v > INT64_MAX : (int64_t)v == s);
            tern_cbor_enc_uint(e, v);
        } else {
            MUST(tern_cbor_dec_uint(d, &v) == TERN_ETYPE);
            if ((rc = tern_cbor_dec_negint(d, &v)))
                return rc;
            MUST(irc ? v > INT64_MAX : -1 - (int64_t)v == s);
            tern_cbor_enc_negint(e, v);
        }
        return 0;
    }
    case TERN_CBOR_BYTES:
    case TERN_CBOR_TEXT: {
        const uint8_t *p;
        size_t n;
        tern_cbor_chunks it;
        if (!indef) {
            if ((rc = tern_cbor_dec_bytes(d, &p, &n)) == TERN_ETYPE)
                rc = tern_cbor_dec_text(d, (const char **)&p, &n);
            if (rc)
                return rc;
            MUST(p >= d->buf && p + n <= d->buf + d->len);
            (void)tern_cbor_utf8_valid(p, n);
            if (k == TERN_CBOR_BYTES)
                tern_cbor_enc_bytes(e, p, n);
            else
                tern_cbor_enc_text(e, (const char *)p, n);
            return 0;
        }
        MUST(tern_cbor_dec_bytes(d, &p, &n) != 0);
        if ((rc = tern_cbor_chunks_begin(d, &it, k)))
            return rc;
        if (k == TERN_CBOR_BYTES)
            tern_cbor_enc_bytes_indef(e);
        else
            tern_cbor_enc_text_indef(e);
        while ((rc = tern_cbor_chunks_next(&it, &p, &n)) == 0) {
            MUST(p >= d->buf && p + n <= d->buf + d->len);
            if (k == TERN_CBOR_BYTES)
                tern_cbor_enc_bytes(e, p, n);
            else
                tern_cbor_enc_text(e, (const char *)p, n);
        }
        if (rc != TERN_EEND)
            return rc;
        tern_cbor_enc_break(e);
        return 0;
    }
    case TERN_CBOR_ARRAY:
    case TERN_CBOR_MAP: {
        bool map = k == TERN_CBOR_MAP;
        uint64_t n;
        rc = map ? tern_cbor_dec_map(d, &n) : tern_cbor_dec_array(d, &n);
        if (rc)
            return rc;
        if (n == TERN_CBOR_INDEF) {
            if (map)
                tern_cbor_enc_map_indef(e);
            else
                tern_cbor_enc_array_indef(e);
            while (!tern_cbor_at_break(d))
                for (int j = 0; j < (map ? 2 : 1); j++)
                    if ((rc = walk(d, e)))
                        return rc;
            if ((rc = tern_cbor_dec_break(d)))
                return rc;
            tern_cbor_enc_break(e);
            return 0;
        }
        MUST(n <= d->len - d->pos);
        if (map)
            tern_cbor_enc_map(e, n);
        else
            tern_cbor_enc_array(e, n);
        for (uint64_t i = 0; i < (map ? 2 * n : n); i++)
            if ((rc = walk(d, e)))
                return rc;
        return 0;
    }
    case TERN_CBOR_TAG: {
        uint64_t t;
        if ((rc = tern_cbor_dec_tag(d, &t)))
            return rc;
        tern_cbor_enc_tag(e, t);
        return walk(d, e);
    }
    case TERN_CBOR_SIMPLE: {
        uint8_t v;
        bool b;
        size_t at = d->pos;
        if (tern_cbor_dec_bool(d, &b) == 0)
            d->pos = at;
        if ((rc = tern_cbor_dec_simple(d, &v)))
            return rc;
        tern_cbor_enc_simple(e, v);
        return 0;
    }
    case TERN_CBOR_FLOAT: {
        double v;
        if ((rc = tern_cbor_dec_double(d, &v)))
            return rc;
        tern_cbor_enc_double(e, v);
        return 0;
    }
    default:
        return TERN_EMALFORMED;
    }
}

/* Every getter at every offset: must not crash, and must not move on error. */
static void poke(const uint8_t *data, size_t size)
{
    size_t lim = size < 256 ? size : 256;
    for (size_t off = 0; off <= lim; off++) {
        tern_cbor_dec d;
        uint64_t u;
        int64_t s;
        const uint8_t *p;
        const char *t;
        size_t n;
        uint8_t sv;
        bool b;
        double f;
        tern_cbor_kind k;
        tern_cbor_chunks it;
        char out[64];
        tern_cbor_dec_init(&d, data, size);
        d.pos = off;
#define TRY(call)                                                                        \
    do {                                                                                 \
        d.pos = off;                                                                     \
        if ((call) != 0)                                                                 \
            MUST(d.pos == off);                                                          \
        else                                                                             \
            MUST(d.pos > off && d.pos <= size);                                          \
    } while (0)
        TRY(tern_cbor_dec_uint(&d, &u));
        TRY(tern_cbor_dec_negint(&d, &u));
        TRY(tern_cbor_dec_int(&d, &s));
        TRY(tern_cbor_dec_bytes(&d, &p, &n));
        TRY(tern_cbor_dec_text(&d, &t, &n));
        TRY(tern_cbor_dec_array(&d, &u));
        TRY(tern_cbor_dec_map(&d, &u));
        TRY(tern_cbor_dec_break(&d));
        TRY(tern_cbor_dec_tag(&d, &u));
        TRY(tern_cbor_dec_simple(&d, &sv));
        TRY(tern_cbor_dec_bool(&d, &b));
        TRY(tern_cbor_dec_null(&d));
        TRY(tern_cbor_dec_undefined(&d));
        TRY(tern_cbor_dec_double(&d, &f));
        TRY(tern_cbor_skip(&d));
        TRY(tern_cbor_diag_item(&d, out, sizeof out, &n));
#undef TRY
        d.pos = off;
        (void)tern_cbor_peek(&d, &k, &b);
        (void)tern_cbor_at_break(&d);
        if (tern_cbor_chunks_begin(&d, &it, TERN_CBOR_BYTES) == 0 ||
            (d.pos = off, tern_cbor_chunks_begin(&d, &it, TERN_CBOR_TEXT) == 0)) {
            int rc;
            while ((rc = tern_cbor_chunks_next(&it, &p, &n)) == 0)
                MUST(p >= data && p + n <= data + size);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int wf = tern_cbor_wellformed(data, size);
    int seq = tern_cbor_wellformed_seq(data, size);
    MUST(wf <= 0 && seq <= 0);
    if (wf == 0)
        MUST(seq == 0);

    tern_cbor_dec d;
    tern_cbor_dec_init(&d, data, size);
    int sk = tern_cbor_skip(&d);
    MUST(sk == wf || (wf == TERN_EMALFORMED && sk == 0 && d.pos < size));

    /* printer: sizing pass, then the real one; it agrees with the checker */
    size_t need = 0;
    char small[8];
    tern_cbor_dec_init(&d, data, size);
    int dr = tern_cbor_diag_item(&d, small, sizeof small, &need);
    char *text = malloc(need + 1);
    MUST(text);
    int dr2 = tern_cbor_diag(data, size, text, need + 1);
    MUST(dr2 == wf);
    MUST(dr == sk || (dr == TERN_ENOSPACE && sk == 0));
    if (dr2 == 0)
        MUST(strlen(text) == need);

    poke(data, size);

    if (wf == 0) {
        /* strict prefixes are truncated */
        MUST(tern_cbor_wellformed(data, size - 1) == TERN_ETRUNCATED);
        MUST(tern_cbor_wellformed(data, size / 2) == TERN_ETRUNCATED);

        /* walk with the typed getters and re-encode, sizing first */
        tern_cbor_enc e;
        size_t n, n2;
        tern_cbor_dec_init(&d, data, size);
        tern_cbor_enc_init(&e, NULL, 0);
        MUST(walk(&d, &e) == 0);
        MUST(d.pos == size);
        int er = tern_cbor_enc_finish(&e, &n);
        MUST(er == TERN_ENOSPACE || (er == 0 && n == 0));
        uint8_t *copy = malloc(n ? n : 1);
        MUST(copy);
        tern_cbor_dec_init(&d, data, size);
        tern_cbor_enc_init(&e, copy, n);
        MUST(walk(&d, &e) == 0);
        MUST(tern_cbor_enc_finish(&e, &n2) == 0 && n2 == n);
        MUST(tern_cbor_wellformed(copy, n) == 0);
        char *text2 = malloc(need + 1);
        MUST(text2);
        MUST(tern_cbor_diag(copy, n, text2, need + 1) == 0);
        MUST(strcmp(text, text2) == 0);
        /* preferred serialization is a fixed point */
        uint8_t *copy2 = malloc(n ? n : 1);
        MUST(copy2);
        tern_cbor_dec_init(&d, copy, n);
        tern_cbor_enc_init(&e, copy2, n);
        MUST(walk(&d, &e) == 0);
        MUST(tern_cbor_enc_finish(&e, &n2) == 0 && n2 == n);
        MUST(memcmp(copy, copy2, n) == 0);
        free(copy2);
        free(text2);
        free(copy);
    }
    free(text);
    return 0;
}
