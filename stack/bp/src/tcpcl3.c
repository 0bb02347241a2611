/* TCPCLv3 (RFC 7242): codec and sans-I/O session, mirroring tcpcl4.c. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bp_tcpcl.h"
#include "tcpcl_int.h"
#include "tern/ckd.h"
#include "tern/sdnv.h"

#define EID_MAX 1024

int tcpcl3_contact_decode(const uint8_t *b, size_t n, tcpcl3_contact *c, size_t *used)
{
    size_t k = n < 4 ? n : 4;
    if (memcmp(b, "dtn!", k) != 0)
        return TERN_EMALFORMED;
    if (n < 8)
        return TERN_ETRUNCATED;
    c->version = b[4];
    c->flags = b[5];
    c->keepalive_s = (uint16_t)((b[6] << 8) | b[7]);
    uint64_t el;
    int r = tern_sdnv_decode(b + 8, n - 8, &el);
    if (r == TERN_ETRUNCATED)
        return r;
    if (r < 0 || el > EID_MAX)
        return TERN_EMALFORMED;
    size_t off = 8 + (size_t)r;
    if (n - off < el)
        return TERN_ETRUNCATED;
    c->eid = b + off;
    c->eid_len = (size_t)el;
    *used = off + (size_t)el;
    return 0;
}

size_t tcpcl3_contact_encode(uint8_t *out, uint8_t flags, uint16_t keepalive_s,
                             const char *eid)
{
    size_t el = strlen(eid);
    memcpy(out, "dtn!", 4);
    out[4] = TCPCL3_VERSION;
    out[5] = flags;
    out[6] = (uint8_t)(keepalive_s >> 8);
    out[7] = (uint8_t)keepalive_s;
    int r = tern_sdnv_encode(el, out + 8, TERN_SDNV_MAX_LEN);
    memcpy(out + 8 + r, eid, el);
    return 8 + (size_t)r + el;
}

int tcpcl3_decode(const uint8_t *b, size_t n, uint64_t max_seg, tcpcl3_msg *m,
                  size_t *used)
{
    if (n < 1)
        return TERN_ETRUNCATED;
    memset(m, 0, sizeof *m);
    m->type = b[0] >> 4;
    m->flags = b[0] & 0x0f;
    size_t off = 1;
    int r;
    switch (m->type) {
    case TCPCL3_DATA_SEGMENT:
    case TCPCL3_ACK_SEGMENT:
    case TCPCL3_LENGTH:
        r = tern_sdnv_decode(b + 1, n - 1, &m->len);
        if (r < 0)
            return r == TERN_ETRUNCATED ? r : TERN_EMALFORMED;
        off += (size_t)r;
        if (m->type == TCPCL3_DATA_SEGMENT) {
            if (m->len > max_seg)
                return TERN_EOVERFLOW;
            if ((uint64_t)(n - off) < m->len) {
                size_t whole; /* for a caller that buffers it (bounded above) */
                if (!tern_ckd_add_size(&whole, off, (size_t)m->len))
                    *used = whole;
                return TERN_ETRUNCATED;
            }
            m->data = b + off;
            off += (size_t)m->len;
        }
        break;
    case TCPCL3_REFUSE_BUNDLE:
    case TCPCL3_KEEPALIVE:
        break;
    case TCPCL3_SHUTDOWN:
        if (m->flags & TCPCL3_SHUT_REASON) {
            if (n < 2)
                return TERN_ETRUNCATED;
            m->has_reason = 1;
            m->reason = b[1];
            off++;
        }
        if (m->flags & TCPCL3_SHUT_DELAY) {
            r = tern_sdnv_decode(b + off, n - off, &m->delay_s);
            if (r < 0)
                return r == TERN_ETRUNCATED ? r : TERN_EMALFORMED;
            m->has_delay = 1;
            off += (size_t)r;
        }
        break;
    default:
        return TERN_ETYPE;
    }
    *used = off;
    return 0;
}

/* ---- session -------------------------------------------------------------- */

typedef struct out3 {
    uint64_t tid, total;
} out3;

struct tcpcl3_sess {
    tcpcl4_cfg cfg;
    int state, sent_contact, acks, refusal;
    char eid[32], peer_eid[256];
    uint16_t keepalive;
    tcl_core c; /* buffers, events, bundles handed out, the error text */
    int in_active, in_refused, peer_shut;
    uint64_t in_tid, next_in_tid, next_tid;
    out3 *outs;
    size_t outs_n, outs_cap;
    int64_t last_rx, last_tx;
};

int tcpcl3_sess_new(const tcpcl4_cfg *cfg, tcpcl3_sess **out)
{
    tcpcl3_sess *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    s->cfg = *cfg;
    if (!s->cfg.seg_mru)
        s->cfg.seg_mru = 1u << 20;
    if (!s->cfg.xfer_mru)
        s->cfg.xfer_mru = 64u << 20;
    snprintf(s->eid, sizeof s->eid, "ipn:%" PRIu64 ".0", cfg->node);
    s->last_rx = s->last_tx = -1;
    if (cfg->active) {
        uint8_t ch[64];
        size_t n = tcpcl3_contact_encode(ch, TCPCL3_FLAG_ACKS | TCPCL3_FLAG_REFUSAL,
                                         cfg->keepalive_s, s->eid);
        if (tcl__buf_put(&s->c.tx, ch, n) < 0) {
            free(s);
            return -ENOMEM;
        }
        s->sent_contact = 1;
    }
    *out = s;
    return 0;
}

void tcpcl3_sess_free(tcpcl3_sess *s)
{
    if (!s)
        return;
    tcl__core_free(&s->c);
    free(s->outs);
    free(s);
}

static int emit_shutdown(tcpcl3_sess *s, int with_reason, uint8_t reason)
{
    uint8_t m[2] = {
        (uint8_t)(TCPCL3_SHUTDOWN << 4 | (with_reason ? TCPCL3_SHUT_REASON : 0)), reason};
    return tcl__buf_put(&s->c.tx, m, with_reason ? 2 : 1);
}

static int fail(tcpcl3_sess *s, int with_reason, uint8_t reason, int rc)
{
    if (s->sent_contact)
        emit_shutdown(s, with_reason, reason);
    tcpcl4_ev e = {.kind = TCPCL4_EV_TERM, .reason = reason};
    tcl__push_ev(&s->c, &e);
    s->state = TCPCL4_S_CLOSED;
    return rc;
}

/* Writes a message of a header byte and an SDNV to m; returns its length. */
static size_t enc_sdnv_msg(uint8_t m[1 + TERN_SDNV_MAX_LEN], uint8_t hdr, uint64_t v)
{
    m[0] = hdr;
    return 1 + (size_t)tern_sdnv_encode(v, m + 1, TERN_SDNV_MAX_LEN);
}

static int emit_sdnv_msg(tcpcl3_sess *s, uint8_t hdr, uint64_t v)
{
    uint8_t m[1 + TERN_SDNV_MAX_LEN];
    return tcl__buf_put(&s->c.tx, m, enc_sdnv_msg(m, hdr, v));
}

static int on_contact(tcpcl3_sess *s)
{
    tcpcl3_contact c;
    size_t used;
    int rc = tcpcl3_contact_decode(s->c.rx.p + s->c.rx.off, s->c.rx.len - s->c.rx.off, &c,
                                   &used);
    if (rc == TERN_ETRUNCATED)
        return rc;
    if (!s->sent_contact) {
        uint8_t ch[64];
        size_t n = tcpcl3_contact_encode(ch, TCPCL3_FLAG_ACKS | TCPCL3_FLAG_REFUSAL,
                                         s->cfg.keepalive_s, s->eid);
        tcl__buf_put(&s->c.tx, ch, n);
        s->sent_contact = 1;
    }
    if (rc < 0) {
        tcl__set_err(&s->c, "bad TCPCLv3 contact header");
        return fail(s, 0, 0, rc);
    }
    s->c.rx.off += used;
    if (c.version != TCPCL3_VERSION) {
        tcl__set_err(&s->c, "peer speaks TCPCL version %u", c.version);
        return fail(s, 1, TCPCL3_SHUT_VERSION, TERN_EMALFORMED);
    }
    size_t el = c.eid_len < sizeof s->peer_eid - 1 ? c.eid_len : sizeof s->peer_eid - 1;
    memcpy(s->peer_eid, c.eid, el);
    s->peer_eid[el] = 0;
    s->acks = (c.flags & TCPCL3_FLAG_ACKS) != 0;
    s->refusal = s->acks && (c.flags & TCPCL3_FLAG_REFUSAL);
    s->keepalive =
        c.keepalive_s < s->cfg.keepalive_s ? c.keepalive_s : s->cfg.keepalive_s;
    s->state = TCPCL4_S_UP;
    tcpcl4_ev e = {.kind = TCPCL4_EV_UP};
    return tcl__push_ev(&s->c, &e);
}

static void in_reset(tcpcl3_sess *s)
{
    s->in_active = 0;
    s->c.in.off = s->c.in.len = 0;
    tcl__buf_trim(&s->c.in, TCL_BUF_KEEP);
}

static int on_segment(tcpcl3_sess *s, const tcpcl3_msg *m)
{
    if (m->flags & 0x2) { /* START */
        in_reset(s);
        s->in_refused = 0;
        s->in_active = 1;
        s->in_tid = s->next_in_tid++;
    } else if (!s->in_active) {
        if (s->in_refused)
            return 0;
        tcl__set_err(&s->c, "DATA_SEGMENT without START");
        return fail(s, 0, 0, TERN_EMALFORMED);
    }
    size_t have = s->c.in.len - s->c.in.off;
    if (!tern_ckd_extent_ok(have, m->len, s->cfg.xfer_mru)) {
        if (!s->refusal) {
            tcl__set_err(&s->c, "bundle larger than %" PRIu64 " bytes", s->cfg.xfer_mru);
            return fail(s, 0, 0, TERN_EOVERFLOW);
        }
        in_reset(s);
        s->in_refused = 1;
        uint8_t r = (uint8_t)(TCPCL3_REFUSE_BUNDLE << 4 | TCPCL4_REFUSE_NO_RESOURCES);
        return tcl__answer(&s->c, s->in_tid, 0, &r, 1);
    }
    int rc = tcl__buf_put(&s->c.in, m->data, (size_t)m->len);
    if (rc < 0)
        return rc;
    have += (size_t)m->len;
    if (!(m->flags & 0x1)) {
        /* RFC 7242 5.2.3: the bytes of this bundle received so far. An
         * empty segment adds none: ION's tcpclo takes a repeated length as
         * a failure of its oldest bundle. */
        if (s->acks && m->len) {
            uint8_t a[1 + TERN_SDNV_MAX_LEN];
            return tcl__answer(&s->c, s->in_tid, 1, a,
                               enc_sdnv_msg(a, TCPCL3_ACK_SEGMENT << 4, have));
        }
        return 0;
    }
    uint8_t *data;
    if (s->acks && (rc = tcl__answer_owe(&s->c, s->in_tid)) < 0)
        return rc;
    if ((rc = tcl__take_in(&s->c, &data, &have)) < 0)
        return rc;
    s->in_active = 0;
    tcpcl4_ev e = {.kind = TCPCL4_EV_BUNDLE,
                   .tid = s->in_tid,
                   .data = data,
                   .len = have,
                   .flags = m->flags};
    return tcl__push_ev(&s->c, &e);
}

static int on_msg(tcpcl3_sess *s, const tcpcl3_msg *m)
{
    tcpcl4_ev e = {0};
    switch (m->type) {
    case TCPCL3_DATA_SEGMENT:
        return on_segment(s, m);
    case TCPCL3_ACK_SEGMENT:
        if (!s->outs_n || m->len < s->outs[0].total)
            return 0;
        e.kind = TCPCL4_EV_ACKED;
        break;
    case TCPCL3_REFUSE_BUNDLE:
        if (!s->outs_n)
            return 0;
        e.kind = TCPCL4_EV_REFUSED;
        e.reason = m->flags;
        break;
    case TCPCL3_LENGTH:
        return 0;
    case TCPCL3_KEEPALIVE:
        return 0;
    case TCPCL3_SHUTDOWN:
        /* A bundle taken whole still gets its answer (and those held behind
         * it theirs), if the peer reads them: the session ends once none is
         * owed. */
        s->peer_shut = 1;
        s->state = tcl__answers_held(&s->c) ? TCPCL4_S_ENDING : TCPCL4_S_CLOSED;
        e.kind = TCPCL4_EV_TERM;
        e.reason = m->reason;
        e.by_peer = 1;
        return tcl__push_ev(&s->c, &e);
    }
    e.tid = s->outs[0].tid;
    e.len = (size_t)s->outs[0].total;
    memmove(s->outs, s->outs + 1, (s->outs_n - 1) * sizeof *s->outs);
    s->outs_n--;
    return tcl__push_ev(&s->c, &e);
}

static int process(tcpcl3_sess *s);

int tcpcl3_sess_recv(tcpcl3_sess *s, const uint8_t *b, size_t n, int64_t now_ms)
{
    tcl__free_owned(&s->c);
    if (s->state == TCPCL4_S_CLOSED)
        return 0;
    s->last_rx = now_ms;
    int rc = tcl__buf_put(&s->c.rx, b, n);
    if (rc < 0)
        return rc;
    return process(s);
}

uint8_t *tcpcl3_sess_rxbuf(tcpcl3_sess *s, size_t want, size_t *room)
{
    return tcl__rxbuf(&s->c, want, room);
}

int tcpcl3_sess_received(tcpcl3_sess *s, size_t n, int64_t now_ms)
{
    if (s->state == TCPCL4_S_CLOSED)
        return 0;
    s->last_rx = now_ms;
    s->c.rx.len += n;
    return process(s);
}

/* Parses and acts on what the receive buffer holds. */
static int process(tcpcl3_sess *s)
{
    int rc;
    while (s->state != TCPCL4_S_CLOSED && s->c.rx.off < s->c.rx.len) {
        if (s->state == TCPCL4_S_CONTACT) {
            rc = on_contact(s);
            if (rc == TERN_ETRUNCATED)
                break;
            if (rc < 0)
                return rc;
            continue;
        }
        tcpcl3_msg m;
        size_t used = 0;
        rc = tcpcl3_decode(s->c.rx.p + s->c.rx.off, s->c.rx.len - s->c.rx.off,
                           s->cfg.seg_mru, &m, &used);
        if (rc == TERN_ETRUNCATED) {
            s->c.rx_msg = used;
            break;
        }
        s->c.rx_msg = 0;
        if (rc < 0) {
            tcl__set_err(&s->c, "%s (message header 0x%02x)",
                         rc == TERN_ETYPE       ? "unknown message type"
                         : rc == TERN_EOVERFLOW ? "segment above our limit"
                                                : "malformed message",
                         s->c.rx.p[s->c.rx.off]);
            return fail(s, 0, 0, rc);
        }
        s->c.rx.off += used;
        if ((rc = on_msg(s, &m)) < 0)
            return rc;
    }
    return 0;
}

int tcpcl3_sess_event(tcpcl3_sess *s, tcpcl4_ev *ev)
{
    return tcl__pop_ev(&s->c, ev);
}

const uint8_t *tcpcl3_sess_output(tcpcl3_sess *s, size_t *len)
{
    return tcl__output(&s->c, len);
}

void tcpcl3_sess_sent(tcpcl3_sess *s, size_t n)
{
    tcl__sent(&s->c, n);
}

int tcpcl3_sess_send(tcpcl3_sess *s, const uint8_t *b, size_t len, uint64_t *tid)
{
    if (s->state != TCPCL4_S_UP)
        return TERN_ESTATE;
    if (len == 0)
        return -EMSGSIZE;
    if (s->outs_n == s->outs_cap) {
        size_t cap = s->outs_cap ? s->outs_cap * 2 : 16;
        out3 *p = realloc(s->outs, cap * sizeof *p);
        if (!p)
            return -ENOMEM;
        s->outs = p;
        s->outs_cap = cap;
    }
    uint64_t id = s->next_tid++;
    for (size_t off = 0; off < len;) {
        size_t n = len - off < s->cfg.seg_mru ? len - off : (size_t)s->cfg.seg_mru;
        uint8_t fl = (uint8_t)((off == 0 ? 0x2 : 0) | (off + n == len ? 0x1 : 0));
        int rc = emit_sdnv_msg(s, (uint8_t)(TCPCL3_DATA_SEGMENT << 4 | fl), n);
        if (rc == 0)
            rc = tcl__buf_put(&s->c.tx, b + off, n);
        if (rc < 0)
            return rc;
        off += n;
    }
    *tid = id;
    if (!s->acks) {
        tcpcl4_ev e = {.kind = TCPCL4_EV_ACKED, .tid = id, .len = len};
        return tcl__push_ev(&s->c, &e);
    }
    s->outs[s->outs_n++] = (out3){id, len};
    return 0;
}

/* The peer shut down and the last answer owed is out: the session is
 * over. */
static int answered(tcpcl3_sess *s, int rc)
{
    if (s->peer_shut && s->state == TCPCL4_S_ENDING && !tcl__answers_held(&s->c))
        s->state = TCPCL4_S_CLOSED;
    return rc;
}

int tcpcl3_sess_ack(tcpcl3_sess *s, uint64_t tid, uint64_t len)
{
    if (s->state != TCPCL4_S_UP && s->state != TCPCL4_S_ENDING)
        return TERN_ESTATE;
    if (!s->acks)
        return 0;
    uint8_t a[1 + TERN_SDNV_MAX_LEN];
    return answered(s, tcl__answer_final(&s->c, tid, a,
                                         enc_sdnv_msg(a, TCPCL3_ACK_SEGMENT << 4, len)));
}

int tcpcl3_sess_refuse(tcpcl3_sess *s, uint64_t tid, uint8_t reason)
{
    if (s->state != TCPCL4_S_UP && s->state != TCPCL4_S_ENDING)
        return TERN_ESTATE;
    if (!s->refusal)
        return -ENOTSUP;
    uint8_t r = (uint8_t)(TCPCL3_REFUSE_BUNDLE << 4 | (reason & 0x0f));
    return answered(s, tcl__answer_final(&s->c, tid, &r, 1));
}

size_t tcpcl3_sess_buffered(const tcpcl3_sess *s)
{
    return tcl__buffered(&s->c);
}

size_t tcpcl3_sess_answers_held(const tcpcl3_sess *s)
{
    return tcl__answers_held(&s->c);
}

int tcpcl3_sess_close(tcpcl3_sess *s, uint8_t reason)
{
    if (s->state == TCPCL4_S_CLOSED)
        return 0;
    if (s->sent_contact)
        emit_shutdown(s, 1, reason);
    s->state = TCPCL4_S_CLOSED;
    return 0;
}

int64_t tcpcl3_sess_tick(tcpcl3_sess *s, int64_t now_ms)
{
    if (s->state != TCPCL4_S_UP || s->keepalive == 0)
        return -1;
    int64_t ka = (int64_t)s->keepalive * 1000;
    if (s->last_rx < 0)
        s->last_rx = now_ms;
    if (s->last_tx < 0)
        s->last_tx = now_ms;
    if (now_ms - s->last_rx >= 2 * ka) {
        tcl__set_err(&s->c, "nothing received for %d s (keepalive %u s)",
                     2 * s->keepalive, s->keepalive);
        fail(s, 1, TCPCL3_SHUT_IDLE, 0);
        return -1;
    }
    if (s->c.tx.len - s->c.tx.off)
        s->last_tx = now_ms;
    else if (now_ms - s->last_tx >= ka) {
        uint8_t k = TCPCL3_KEEPALIVE << 4;
        tcl__buf_put(&s->c.tx, &k, 1);
        s->last_tx = now_ms;
    }
    int64_t a = s->last_tx + ka, b = s->last_rx + 2 * ka;
    return a < b ? a : b;
}

int tcpcl3_sess_state(const tcpcl3_sess *s)
{
    return s->state;
}

uint16_t tcpcl3_sess_keepalive(const tcpcl3_sess *s)
{
    return s->keepalive;
}

int tcpcl3_sess_acks(const tcpcl3_sess *s)
{
    return s->acks;
}

const char *tcpcl3_sess_peer_eid(const tcpcl3_sess *s)
{
    return s->peer_eid;
}

const char *tcpcl3_sess_error(const tcpcl3_sess *s)
{
    return s->c.err;
}
