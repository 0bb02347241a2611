/* libFuzzer target: the administrative record (status report) decoder must
 * never over-read; whatever it accepts must re-encode to bytes that decode to
 * the same record, and re-encoding is a fixed point. */
#include <stdlib.h>
#include <string.h>

#include "bp_bundle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int item_eq(const bp_status_item *a, const bp_status_item *b)
{
    return a->asserted == b->asserted && a->has_time == b->has_time &&
           a->time_ms == b->time_ms;
}

static int record_eq(const bp_admin_record *a, const bp_admin_record *b)
{
    if (a->type != b->type)
        return 0;
    if (a->type != BP_ADMIN_STATUS_REPORT)
        return a->content_len == b->content_len &&
               memcmp(a->content, b->content, a->content_len) == 0;
    const bp_status_report *x = &a->sr, *y = &b->sr;
    return item_eq(&x->received, &y->received) && item_eq(&x->forwarded, &y->forwarded) &&
           item_eq(&x->delivered, &y->delivered) && item_eq(&x->deleted, &y->deleted) &&
           x->reason == y->reason && bp_eid_equal(&x->source, &y->source) &&
           x->ctime_ms == y->ctime_ms && x->seq == y->seq &&
           x->is_fragment == y->is_fragment && x->frag_offset == y->frag_offset &&
           x->frag_len == y->frag_len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);

    bp_admin_record r1, r2;
    const char *why = NULL;
    int rc = bp_admin_decode(buf, size, &r1, &why);
    if (rc != 0) {
        if (rc > 0 || !why)
            abort();
        free(buf);
        return 0;
    }
    if (r1.content < buf || r1.content_len > (size_t)(buf + size - r1.content))
        abort();
    size_t n = 0;
    if (bp_admin_encode(&r1, NULL, 0, &n) != TERN_ENOSPACE || n == 0 || n > size)
        abort();
    uint8_t *enc = malloc(n);
    if (!enc)
        abort();
    size_t m = 0;
    if (bp_admin_encode(&r1, enc, n, &m) != 0 || m != n)
        abort();
    if (bp_admin_decode(enc, n, &r2, &why) != 0 || !record_eq(&r1, &r2))
        abort();
    uint8_t *enc2 = malloc(n);
    if (!enc2)
        abort();
    if (bp_admin_encode(&r2, enc2, n, &m) != 0 || m != n || memcmp(enc, enc2, n) != 0)
        abort();
    if (n == size && memcmp(enc, buf, n) != 0)
        abort();
    free(enc2);
    free(enc);
    free(buf);
    return 0;
}
