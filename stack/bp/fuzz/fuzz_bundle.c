/* libFuzzer target: the BPv7 bundle decoder must never over-read; whatever it
 * accepts must re-encode to bytes that decode to the same bundle, re-encoding
 * those must give the same bytes again, and a canonical input (the re-encoding
 * is as long as the input) must re-encode to itself. */
#include <stdlib.h>
#include <string.h>

#include "bp_bundle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int bundle_eq(const bp_bundle *a, const bp_bundle *b)
{
    const bp_primary *p = &a->pri, *q = &b->pri;
    if (a->definite != b->definite || p->version != q->version || p->flags != q->flags ||
        p->crc_type != q->crc_type || !bp_eid_equal(&p->dest, &q->dest) ||
        !bp_eid_equal(&p->src, &q->src) || !bp_eid_equal(&p->report_to, &q->report_to) ||
        p->ctime_ms != q->ctime_ms || p->seq != q->seq ||
        p->lifetime_ms != q->lifetime_ms || p->frag_offset != q->frag_offset ||
        p->total_adu_len != q->total_adu_len || a->n_blocks != b->n_blocks)
        return 0;
    for (size_t i = 0; i < a->n_blocks; i++) {
        const bp_block *x = &bp_bundle_cblocks(a)[i], *y = &bp_bundle_cblocks(b)[i];
        if (x->type != y->type || x->number != y->number || x->flags != y->flags ||
            x->crc_type != y->crc_type)
            return 0;
        if ((x->type == 1 || !bp_block_type_known(x->type)) &&
            (x->data_len != y->data_len ||
             (x->data_len && memcmp(x->data, y->data, x->data_len) != 0)))
            return 0;
    }
    if (a->has_prev_node != b->has_prev_node || a->has_age != b->has_age ||
        a->has_hop_count != b->has_hop_count || a->age_ms != b->age_ms ||
        a->hop_limit != b->hop_limit || a->hop_count != b->hop_count)
        return 0;
    if (a->has_prev_node && !bp_eid_equal(&a->prev_node, &b->prev_node))
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

    static bp_bundle b1, b2;
    size_t used = 0;
    const char *why = NULL;
    int rc = bp_bundle_decode(buf, size, &b1, &used, &why);
    if (rc != 0) {
        if (rc > 0 || !why)
            abort();
        free(buf);
        return 0;
    }
    /* each block takes at least 6 bytes: many blocks live in ext */
    if (used == 0 || used > size || b1.n_blocks == 0 || b1.n_blocks > used / 6 ||
        (b1.n_blocks > BP_MAX_BLOCKS) != (b1.ext != NULL) ||
        bp_bundle_payload(&b1)->type != BP_BLOCK_PAYLOAD)
        abort();
    for (size_t i = 0; i < b1.n_blocks; i++) {
        const bp_block *k = &bp_bundle_cblocks(&b1)[i];
        if (k->data < buf || k->data_len > (size_t)(buf + used - k->data))
            abort();
    }

    size_t n = 0;
    if (bp_bundle_encode(&b1, NULL, 0, &n, &why) != TERN_ENOSPACE || n == 0)
        abort();
    uint8_t *enc = malloc(n);
    if (!enc)
        abort();
    size_t m = 0;
    if (bp_bundle_encode(&b1, enc, n, &m, &why) != 0 || m != n)
        abort();
    /* shortest heads: never longer than the input, but for numbers given to
     * blocks that came numbered 0 (up to 8 bytes more each) */
    if (n > used + 8 * (size_t)b1.renumbered)
        abort();
    if (bp_bundle_decode(enc, n, &b2, &m, &why) != 0 || m != n || !bundle_eq(&b1, &b2))
        abort();
    uint8_t *enc2 = malloc(n);
    if (!enc2)
        abort();
    if (bp_bundle_encode(&b2, enc2, n, &m, &why) != 0 || m != n ||
        memcmp(enc, enc2, n) != 0)
        abort();
    if (n == used && !b1.renumbered && memcmp(enc, buf, n) != 0)
        abort();
    if (b2.renumbered)
        abort(); /* what the encoder wrote has no block numbered 0 */
    bp_bundle_release(&b1);
    bp_bundle_release(&b2);
    free(enc2);
    free(enc);
    free(buf);
    return 0;
}
