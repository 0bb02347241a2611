/* libFuzzer target: the LTP segment decoder must never over-read; whatever it
 * accepts must re-encode (shortest SDNVs, so never longer than the input) to
 * bytes that decode to the same fields, and re-encoding those must give the
 * same bytes again. */
#include <stdlib.h>
#include <string.h>

#include "ltp_seg.h"

#define MAX_CLAIMS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int ext_eq(const ltp_ext *a, const ltp_ext *b)
{
    return a->tag == b->tag && a->len == b->len &&
           (a->len == 0 || memcmp(a->value, b->value, (size_t)a->len) == 0);
}

static int seg_eq(const ltp_seg *a, const ltp_seg *b)
{
    if (a->type != b->type || a->engine != b->engine || a->session != b->session ||
        a->n_hext != b->n_hext || a->n_text != b->n_text)
        return 0;
    for (int i = 0; i < a->n_hext; i++)
        if (!ext_eq(&a->hext[i], &b->hext[i]))
            return 0;
    for (int i = 0; i < a->n_text; i++)
        if (!ext_eq(&a->text[i], &b->text[i]))
            return 0;
    /* Fields a type does not carry decode as 0, so compare them all. */
    if (a->client != b->client || a->offset != b->offset || a->length != b->length ||
        a->cp_serial != b->cp_serial || a->rpt_serial != b->rpt_serial ||
        a->upper != b->upper || a->lower != b->lower || a->n_claims != b->n_claims ||
        a->reason != b->reason)
        return 0;
    if (a->length && memcmp(a->data, b->data, (size_t)a->length) != 0)
        return 0;
    for (uint64_t i = 0; i < a->n_claims; i++)
        if (a->claims[i].offset != b->claims[i].offset ||
            a->claims[i].length != b->claims[i].length)
            return 0;
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* Copy to an exact-size heap buffer so ASan catches any over-read. */
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);

    ltp_claim c1[MAX_CLAIMS], c2[MAX_CLAIMS];
    ltp_seg s1, s2;
    s1.claims = c1;
    int rc = ltp_seg_decode(buf, size, &s1, MAX_CLAIMS);
    if (rc != 0) {
        if (rc > 0)
            abort();
        free(buf);
        return 0;
    }
    if (s1.type == LTP_CTRL_A || s1.type == LTP_CTRL_B || s1.type > LTP_CAR)
        abort();
    if (s1.n_claims > MAX_CLAIMS || s1.lower > s1.upper)
        abort();
    if (ltp_seg_is_data(s1.type) &&
        (s1.data < buf || s1.length > (uint64_t)(buf + size - s1.data)))
        abort();

    /* Shortest SDNVs: the re-encoding is never longer than the input. */
    uint8_t *enc = malloc(size);
    if (!enc)
        abort();
    int n = ltp_seg_encode(&s1, enc, size);
    if (n <= 0 || (size_t)n > size)
        abort();
    if (ltp_seg_is_data(s1.type)) {
        size_t hdr = ltp_seg_data_hdr_len(&s1);
        if (hdr == 0 || hdr + s1.length > (size_t)n)
            abort();
        if (s1.n_text == 0 && hdr + s1.length != (size_t)n)
            abort();
    }

    s2.claims = c2;
    if (ltp_seg_decode(enc, (size_t)n, &s2, MAX_CLAIMS) != 0 || !seg_eq(&s1, &s2))
        abort();
    /* Canonical form is a fixed point. */
    uint8_t *enc2 = malloc((size_t)n);
    if (!enc2)
        abort();
    if (ltp_seg_encode(&s2, enc2, (size_t)n) != n || memcmp(enc, enc2, (size_t)n) != 0)
        abort();
    /* One byte less never fits. */
    if (ltp_seg_encode(&s2, enc2, (size_t)n - 1) != TERN_ENOSPACE)
        abort();
    /* If the input was canonical already, the bytes are the input's. */
    if ((size_t)n == size && memcmp(enc, buf, size) != 0)
        abort();
    free(enc2);
    free(enc);
    free(buf);
    return 0;
}
