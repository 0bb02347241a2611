/* Private, for tests and fuzz targets: are two PDUs or TLVs the same
 * content? Views are compared by their bytes; lists by their items in
 * order, whichever form they are in. The header's data_len is not compared:
 * the inputs of an encode leave it to the encoder. */
#ifndef CFDP_PDU_EQ_H
#define CFDP_PDU_EQ_H

#include <string.h>

#include "cfdp_pdu.h"

static inline int cfdp_lv_eq(const cfdp_lv *a, const cfdp_lv *b)
{
    return a->len == b->len && (!a->len || memcmp(a->ptr, b->ptr, a->len) == 0);
}

static inline int cfdp_tlv_eq(const cfdp_tlv *a, const cfdp_tlv *b)
{
    return a->type == b->type && a->action == b->action && a->status == b->status &&
           a->condition == b->condition && a->handler == b->handler &&
           a->empty_second == b->empty_second && cfdp_lv_eq(&a->first, &b->first) &&
           cfdp_lv_eq(&a->second, &b->second) && cfdp_lv_eq(&a->data, &b->data) &&
           a->eid.id == b->eid.id && a->eid.len == b->eid.len;
}

static inline int cfdp_tlvs_eq(const cfdp_tlvs *a, const cfdp_tlvs *b)
{
    size_t pa = 0, pb = 0;
    for (;;) {
        cfdp_tlv ta, tb;
        int ra = cfdp_tlvs_next(a, &pa, &ta), rb = cfdp_tlvs_next(b, &pb, &tb);
        if (ra || rb)
            return ra == rb;
        if (!cfdp_tlv_eq(&ta, &tb))
            return 0;
    }
}

static inline int cfdp_eid_eq(const cfdp_eid *a, const cfdp_eid *b)
{
    return a->id == b->id && a->len == b->len;
}

static inline int cfdp_header_eq(const cfdp_header *a, const cfdp_header *b)
{
    return a->version == b->version && a->type == b->type &&
           a->direction == b->direction && a->mode == b->mode && a->crc == b->crc &&
           a->large_file == b->large_file && a->seg_ctrl == b->seg_ctrl &&
           a->seg_meta == b->seg_meta && a->eid_len == b->eid_len &&
           a->tsn_len == b->tsn_len && a->src == b->src && a->tsn == b->tsn &&
           a->dst == b->dst;
}

static inline int cfdp_pdu_eq(const cfdp_pdu *a, const cfdp_pdu *b)
{
    if (!cfdp_header_eq(&a->hdr, &b->hdr) || a->kind != b->kind)
        return 0;
    switch (a->kind) {
    case CFDP_FILE_DATA: {
        const cfdp_file_data *x = &a->u.fd, *y = &b->u.fd;
        return x->offset == y->offset && x->len == y->len &&
               (!x->len || memcmp(x->data, y->data, x->len) == 0) &&
               x->record == y->record && cfdp_lv_eq(&x->meta, &y->meta);
    }
    case CFDP_EOF: {
        const cfdp_eof *x = &a->u.eof, *y = &b->u.eof;
        return x->condition == y->condition && x->checksum == y->checksum &&
               x->file_size == y->file_size && cfdp_eid_eq(&x->fault, &y->fault);
    }
    case CFDP_FINISHED: {
        const cfdp_finished *x = &a->u.fin, *y = &b->u.fin;
        return x->condition == y->condition && x->delivery == y->delivery &&
               x->file_status == y->file_status &&
               cfdp_tlvs_eq(&x->responses, &y->responses) &&
               cfdp_eid_eq(&x->fault, &y->fault);
    }
    case CFDP_ACK: {
        const cfdp_ack *x = &a->u.ack, *y = &b->u.ack;
        return x->directive == y->directive && x->subtype == y->subtype &&
               x->condition == y->condition && x->txn_status == y->txn_status;
    }
    case CFDP_METADATA: {
        const cfdp_metadata *x = &a->u.md, *y = &b->u.md;
        return x->closure == y->closure && x->checksum_type == y->checksum_type &&
               x->file_size == y->file_size && cfdp_lv_eq(&x->src_name, &y->src_name) &&
               cfdp_lv_eq(&x->dst_name, &y->dst_name) &&
               cfdp_tlvs_eq(&x->options, &y->options);
    }
    case CFDP_NAK: {
        const cfdp_nak *x = &a->u.nak, *y = &b->u.nak;
        if (x->scope_start != y->scope_start || x->scope_end != y->scope_end ||
            x->segments.count != y->segments.count)
            return 0;
        for (size_t i = 0; i < x->segments.count; i++) {
            cfdp_range g = cfdp_nak_segment(&x->segments, i);
            cfdp_range h = cfdp_nak_segment(&y->segments, i);
            if (g.start != h.start || g.end != h.end)
                return 0;
        }
        return 1;
    }
    case CFDP_PROMPT:
        return a->u.prompt.response == b->u.prompt.response;
    case CFDP_KEEP_ALIVE:
        return a->u.ka.progress == b->u.ka.progress;
    default:
        return 0;
    }
}

#endif
