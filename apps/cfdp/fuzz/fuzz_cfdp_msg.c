/* libFuzzer target: the reserved CFDP message decoder (cfdp_msg.h) must
 * never over-read and must give a reason with every refusal; a message it
 * accepts must encode into bytes that decode to the same message and
 * encode to the same bytes again, no longer than the input (spare bits
 * and ION's empty second names aside, the encoding is the input's). */
#include <stdlib.h>
#include <string.h>

#include "cfdp_msg.h"
#include "pdu_eq.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int msg_eq(const cfdp_msg *a, const cfdp_msg *b)
{
    cfdp_tlv fa = a->fs, fb = b->fs;
    return a->type == b->type && a->dst.id == b->dst.id && a->dst.len == b->dst.len &&
           cfdp_lv_eq(&a->name1, &b->name1) && cfdp_lv_eq(&a->name2, &b->name2) &&
           cfdp_lv_eq(&a->data, &b->data) && cfdp_tlv_eq(&fa, &fb) &&
           a->condition == b->condition && a->handler == b->handler &&
           a->delivery == b->delivery && a->file_status == b->file_status &&
           a->mode == b->mode && a->flag == b->flag && a->ok == b->ok &&
           a->suspended == b->suspended && a->txn_status == b->txn_status &&
           a->tid.src == b->tid.src && a->tid.tsn == b->tid.tsn &&
           a->tid.src_len == b->tid.src_len && a->tid.tsn_len == b->tid.tsn_len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *buf = malloc(size ? size : 1); /* exact size: ASan sees any over-read */
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    cfdp_msg m, back;
    const char *why = NULL;
    int rc = cfdp_msg_decode(buf, size, &m, &why);
    if (rc == 0) {
        uint8_t a[CFDP_MSG_MAX + 1], b[CFDP_MSG_MAX + 1];
        size_t an, bn;
        if (cfdp_msg_check(&m, NULL) != 0 || cfdp_msg_encode(&m, a, sizeof a, &an) != 0)
            abort();
        if (an > size + 1 || an > CFDP_MSG_MAX)
            abort(); /* +1: an empty second name ION's way may be added */
        if (cfdp_msg_decode(a, an, &back, NULL) != 0 || !msg_eq(&m, &back))
            abort();
        if (cfdp_msg_encode(&back, b, sizeof b, &bn) != 0 || bn != an ||
            memcmp(a, b, an) != 0)
            abort();
    } else if (rc > 0 || !why) {
        abort();
    }
    free(buf);
    return 0;
}
