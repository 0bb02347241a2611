/* Saving a transaction and rebuilding it in another entity (cfdp.h:
 * cfdp_txn_save, cfdp_txn_restore). The format is private to this file,
 * versioned, big-endian, and read back with every length checked:
 *
 *   "CFDPTXN" 1 | identity and flags | fault handler overrides | timers
 *   (absolute deadlines and, when suspended, frozen time left) | counters |
 *   names | file size | checksum state | Metadata options | sender: first
 *   pass offset, ranges to send again, pending directives, EOF checksum |
 *   receiver: ranges held, Metadata/EOF facts, NAK round | filestore
 *   responses.
 *
 * A PDU of the transaction still waiting for the transport is saved as
 * still to send (its range to send again, or its directive pending). Not
 * kept: the MIB entry (the new entity's is used), file data that came
 * before Metadata.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "entity.h"
#include "tern/ckd.h"
#include "wire.h"

static const uint8_t MAGIC[8] = {'C', 'F', 'D', 'P', 'T', 'X', 'N', 1};

static void put_rset(wr *w, const cfdp__rset *s)
{
    wr_be(w, s->n, 4);
    for (size_t i = 0; i < s->n; i++) {
        wr_be(w, s->r[i].start, 8);
        wr_be(w, s->r[i].end, 8);
    }
}

static void put_blob(wr *w, const uint8_t *b, size_t len, size_t count)
{
    wr_be(w, len, 4);
    wr_be(w, count, 4);
    wr_bytes(w, b, len);
}

static void put_name(wr *w, const char *s)
{
    size_t l = strlen(s);
    wr_u8(w, (unsigned)l);
    wr_bytes(w, s, l);
}

static void write_txn(wr *w, const txn *t)
{
    wr_bytes(w, MAGIC, sizeof MAGIC);
    wr_be(w, t->id.src, 8);
    wr_be(w, t->id.seq, 8);
    wr_be(w, t->peer, 8);
    const uint8_t f[] = {t->role,        t->cls,   t->state, t->suspended, t->closure,
                         t->ck_type,     t->large, t->crc,   t->condition, t->delivery,
                         t->file_status, t->ended, t->ck_ok};
    wr_bytes(w, f, sizeof f);
    wr_be(w, t->fault_entity, 8);
    wr_bytes(w, t->handlers, 16);
    for (int k = 0; k < NT; k++) {
        wr_be(w, t->t[k], 8);
        wr_be(w, t->frozen[k], 8);
    }
    wr_be(w, t->ack_count, 2);
    wr_be(w, t->nak_count, 2);
    wr_be(w, t->check_count, 2);
    put_name(w, t->src);
    put_name(w, t->dst);
    wr_be(w, t->size, 8);
    wr_u8(w, t->ck.type);
    wr_be(w, t->ck.value, 4);
    wr_be(w, t->ck.end, 8);
    put_blob(w, t->opts, t->opts_len, t->opts_count);
    /* sender */
    wr_be(w, t->next_off, 8);
    put_rset(w, &t->resend);
    const uint8_t s[] = {t->need_md,  t->need_eof,  t->need_ack_fin, t->need_prompt,
                         t->eof_sent, t->eof_acked, t->ack_fin_cond};
    wr_bytes(w, s, sizeof s);
    wr_be(w, t->cksum_val, 4);
    wr_be(w, t->resent, 8);
    /* receiver */
    put_rset(w, &t->got);
    const uint8_t r[] = {t->md_got,       t->eof_got,  t->eof_cond,
                         t->need_ack_eof, t->need_nak, t->need_fin,
                         t->need_ka,      t->fin_sent, t->nak_md};
    wr_bytes(w, r, sizeof r);
    wr_be(w, t->md_size, 8);
    wr_be(w, t->eof_size, 8);
    wr_be(w, t->eof_cksum, 4);
    wr_be(w, t->nak_cursor, 8);
    wr_be(w, t->nak_scope_end, 8);
    wr_be(w, t->naked_upto, 8);
    wr_be(w, t->nak_arm_hwm, 8);
    wr_be(w, t->got_at_nak, 8);
    put_blob(w, t->resp, t->resp_len, t->resp_count);
}

TERN_API int cfdp_txn_save(cfdp_entity *e, cfdp_txn_id id, void *buf, size_t cap,
                           size_t *len)
{
    if (!e || !len || (!buf && cap))
        return -EINVAL;
    txn *t = cfdp__txn_find(e, id.src, id.seq,
                            id.src == e->cfg.id ? CFDP_ROLE_SENDER : CFDP_ROLE_RECEIVER);
    if (!t && id.src == e->cfg.id)
        t = cfdp__txn_find(e, id.src, id.seq, CFDP_ROLE_RECEIVER);
    if (!t)
        return TERN_ENOTFOUND;
    /* a PDU of this transaction that the transport has not taken yet is
     * saved as still to send */
    txn tmp = *t;
    int rc = 0, own = 0; /* own: tmp.resend is a copy to free */
    cfdp_pdu p;
    if (e->out_pending && cfdp_pdu_decode(e->out, e->out_len, 0, &p, NULL) == 0 &&
        p.hdr.src == t->id.src && p.hdr.tsn == t->id.seq &&
        (p.hdr.direction == CFDP_TOWARD_RECEIVER) == (t->role == CFDP_ROLE_SENDER)) {
        memset(&tmp.resend, 0, sizeof tmp.resend);
        own = 1;
        for (size_t i = 0; i < t->resend.n && !rc; i++)
            rc = cfdp__rset_add(&tmp.resend, t->resend.r[i].start, t->resend.r[i].end,
                                NULL, NULL);
        switch (p.kind) {
        case CFDP_FILE_DATA:
            if (!rc)
                rc = cfdp__rset_add(&tmp.resend, p.u.fd.offset,
                                    p.u.fd.offset + p.u.fd.len, NULL, NULL);
            break;
        case CFDP_METADATA:
            tmp.need_md = 1;
            break;
        case CFDP_EOF:
            tmp.need_eof = 1;
            break;
        case CFDP_FINISHED:
            tmp.need_fin = 1;
            break;
        case CFDP_ACK:
            if (t->role == CFDP_ROLE_SENDER)
                tmp.need_ack_fin = 1;
            else
                tmp.need_ack_eof = 1;
            break;
        case CFDP_NAK:
            if (!tmp.need_nak) {
                tmp.need_nak = 1;
                tmp.nak_cursor = 0;
                tmp.nak_scope_end = t->eof_got ? t->eof_size : cfdp__rset_max(&t->got);
                tmp.nak_md = !t->md_got;
            }
            break;
        case CFDP_KEEP_ALIVE:
            tmp.need_ka = 1;
            break;
        case CFDP_PROMPT:
            tmp.need_prompt = (uint8_t)(p.u.prompt.response + 1);
            break;
        default:
            break;
        }
    }
    if (!rc) {
        wr w = {buf, cap, 0, 0};
        write_txn(&w, &tmp);
        *len = w.len;
        rc = w.over ? TERN_ENOSPACE : 0;
    }
    if (own)
        cfdp__rset_free(&tmp.resend);
    return rc;
}

/* ------------------------------------------------------------ restore */

typedef struct rdx {
    rd r;
    int bad;
} rdx;

static uint64_t get(rdx *x, unsigned n)
{
    const uint8_t *q = rd_take(&x->r, n);
    if (!q) {
        x->bad = 1;
        return 0;
    }
    return be_get(q, n);
}

static void get_bytes(rdx *x, void *out, size_t n)
{
    const uint8_t *q = rd_take(&x->r, n);
    if (!q) {
        x->bad = 1;
        memset(out, 0, n);
        return;
    }
    memcpy(out, q, n);
}

static int get_rset(rdx *x, cfdp__rset *s)
{
    uint64_t n = get(x, 4), prev = 0;
    if (x->bad || n > rd_left(&x->r) / 16)
        return TERN_ETRUNCATED;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t a = get(x, 8), b = get(x, 8);
        /* sorted, disjoint, not touching: what the set itself keeps */
        if (a >= b || (i && a <= prev))
            return TERN_EMALFORMED;
        int rc = cfdp__rset_add(s, a, b, NULL, NULL);
        if (rc)
            return rc;
        prev = b;
    }
    return 0;
}

static int get_blob(rdx *x, uint8_t **b, size_t *len, size_t *count)
{
    uint64_t l = get(x, 4), c = get(x, 4);
    if (x->bad || l > rd_left(&x->r))
        return TERN_ETRUNCATED;
    *len = (size_t)l;
    *count = (size_t)c;
    if (!l)
        return 0;
    *b = malloc((size_t)l);
    if (!*b)
        return -ENOMEM;
    get_bytes(x, *b, (size_t)l);
    /* the list must read as count TLVs */
    cfdp_tlvs v = {NULL, *count, *b, *len};
    size_t pos = 0;
    cfdp_tlv tlv;
    for (size_t i = 0; i < *count; i++)
        if (cfdp_tlvs_next(&v, &pos, &tlv))
            return TERN_EMALFORMED;
    return pos == *len ? 0 : TERN_EMALFORMED;
}

static void get_name(rdx *x, char out[256])
{
    unsigned l = (unsigned)get(x, 1);
    get_bytes(x, out, l);
    out[l] = 0;
    if (memchr(out, 0, l))
        x->bad = 1;
}

TERN_API int cfdp_txn_restore(cfdp_entity *e, uint64_t now_ms, const void *buf,
                              size_t len, cfdp_txn_id *id)
{
    if (!e || (!buf && len))
        return -EINVAL;
    if (now_ms > e->now)
        e->now = now_ms;
    rdx x = {{buf, len, 0}, 0};
    uint8_t m[sizeof MAGIC];
    get_bytes(&x, m, sizeof m);
    if (x.bad)
        return TERN_ETRUNCATED;
    if (memcmp(m, MAGIC, sizeof m))
        return TERN_EMALFORMED;
    txn *t = calloc(1, sizeof *t);
    if (!t)
        return -ENOMEM;
    int rc = 0;
    t->id.src = get(&x, 8);
    t->id.seq = get(&x, 8);
    t->peer = get(&x, 8);
    uint8_t f[13];
    get_bytes(&x, f, sizeof f);
    t->role = f[0];
    t->cls = f[1];
    t->state = f[2];
    t->suspended = f[3];
    t->closure = f[4];
    t->ck_type = f[5];
    t->large = f[6];
    t->crc = f[7];
    t->condition = f[8];
    t->delivery = f[9];
    t->file_status = f[10];
    t->ended = f[11];
    t->ck_ok = f[12];
    t->fault_entity = get(&x, 8);
    get_bytes(&x, t->handlers, 16);
    for (int k = 0; k < NT; k++) {
        t->t[k] = get(&x, 8);
        t->frozen[k] = get(&x, 8);
    }
    t->ack_count = (uint16_t)get(&x, 2);
    t->nak_count = (uint16_t)get(&x, 2);
    t->check_count = (uint16_t)get(&x, 2);
    get_name(&x, t->src);
    get_name(&x, t->dst);
    t->size = get(&x, 8);
    t->ck.type = (uint8_t)get(&x, 1);
    t->ck.value = (uint32_t)get(&x, 4);
    t->ck.end = get(&x, 8);
    if ((rc = get_blob(&x, &t->opts, &t->opts_len, &t->opts_count)))
        goto fail;
    t->next_off = get(&x, 8);
    if ((rc = get_rset(&x, &t->resend)))
        goto fail;
    uint8_t s[7];
    get_bytes(&x, s, sizeof s);
    t->need_md = s[0];
    t->need_eof = s[1];
    t->need_ack_fin = s[2];
    t->need_prompt = s[3];
    t->eof_sent = s[4];
    t->eof_acked = s[5];
    t->ack_fin_cond = s[6];
    t->cksum_val = (uint32_t)get(&x, 4);
    t->resent = get(&x, 8);
    if ((rc = get_rset(&x, &t->got)))
        goto fail;
    uint8_t r[9];
    get_bytes(&x, r, sizeof r);
    t->md_got = r[0];
    t->eof_got = r[1];
    t->eof_cond = r[2];
    t->need_ack_eof = r[3];
    t->need_nak = r[4];
    t->need_fin = r[5];
    t->need_ka = r[6];
    t->fin_sent = r[7];
    t->nak_md = r[8];
    t->md_size = get(&x, 8);
    t->eof_size = get(&x, 8);
    t->eof_cksum = (uint32_t)get(&x, 4);
    t->nak_cursor = get(&x, 8);
    t->nak_scope_end = get(&x, 8);
    t->naked_upto = get(&x, 8);
    t->nak_arm_hwm = get(&x, 8);
    t->got_at_nak = get(&x, 8);
    if ((rc = get_blob(&x, &t->resp, &t->resp_len, &t->resp_count)))
        goto fail;
    rc = TERN_ETRUNCATED;
    if (x.bad)
        goto fail;
    rc = TERN_EMALFORMED;
    if (rd_left(&x.r) || t->role > CFDP_ROLE_RECEIVER || (t->cls != 1 && t->cls != 2) ||
        t->state > CFDP_STATE_FINISHED || t->next_off > t->size ||
        cfdp__rset_max(&t->resend) > t->next_off)
        goto fail;
    if ((t->role == CFDP_ROLE_SENDER) != (t->id.src == e->cfg.id))
        goto fail;
    if (t->ck_ok && (!cfdp_cksum_supported(t->ck.type) || t->ck.type != t->ck_type))
        goto fail;
    rc = TERN_EEXIST;
    if (cfdp__txn_find(e, t->id.src, t->id.seq, t->role))
        goto fail;
    t->pc = *cfdp__peer(e, t->peer);
    t->hidx = SIZE_MAX;
    /* the file, through this entity's filestore */
    if (t->state != CFDP_STATE_FINISHED) {
        if (t->role == CFDP_ROLE_SENDER && t->src[0]) {
            rc = e->cfg.fs.ops->open(e->cfg.fs.ctx, t->src, CFDP_FS_RD, &t->file);
            if (rc)
                goto fail;
        } else if (t->role == CFDP_ROLE_RECEIVER && t->md_got && t->dst[0] &&
                   t->state == CFDP_STATE_ACTIVE) {
            rc = e->cfg.fs.ops->open(e->cfg.fs.ctx, t->dst, CFDP_FS_WR | CFDP_FS_CREAT,
                                     &t->file);
            if (rc)
                goto fail;
        }
    }
    if ((rc = cfdp__txn_insert(e, t)))
        goto fail_file;
    if (t->state != CFDP_STATE_FINISHED)
        e->st.txns_active++;
    cfdp__txn_timers_changed(e, t);
    cfdp__ready(e, t);
    if (id)
        *id = t->id;
    return cfdp__pump(e);
fail_file:
    if (t->file)
        e->cfg.fs.ops->close(e->cfg.fs.ctx, t->file);
    t->file = NULL;
fail:
    cfdp__txn_free(t);
    return rc;
}
