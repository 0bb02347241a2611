/* Private: what the PDU codec shares with the TLV codec. */
#ifndef CFDP_TLV_H
#define CFDP_TLV_H

#include "cfdp_pdu.h"
#include "wire.h"

/* 1 for the reserved condition codes (12, 13) and values past 4 bits. */
int cfdp__condition_reserved(unsigned c);

/* 0 if e can be encoded (len 1-8 holding id; len 0 too if optional). */
int cfdp__eid_check(const cfdp_eid *e, int optional, const char **why);

/* Writes a TLV that passed cfdp_tlv_check(). */
void cfdp__tlv_write(wr *w, const cfdp_tlv *t);

/* Decodes the value v[0..vlen) of a filestore request (response 0) or
 * response TLV into *t (type set accordingly): for the proxy filestore
 * messages, which carry such a value in an LV. */
int cfdp__fs_decode(const uint8_t *v, size_t vlen, int response, cfdp_tlv *t,
                    const char **why);

#endif
