/* TCPCLv4 (RFC 9174): message codec and a sans-I/O session state machine.
 * See bp_tcpcl.h for the wire layout. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bp_bundle.h"
#include "bp_tcpcl.h"
#include "tcpcl_int.h"
#include "tern/ckd.h"

/* Limits on items whose length the peer declares: a SESS_INIT's extension
 * list and a segment's transfer extension list are buffered whole, so they
 * must be bounded before we wait for them. */
#define EXT_MAX          (64u * 1024)
#define DEFAULT_SEG_MRU  (1u << 20)
#define DEFAULT_XFER_MRU (64u << 20)

static uint16_t rd16(const uint8_t *p)
{
    return (uint16_t)((p[0] << 8) | p[1]);
}

static uint32_t rd32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static uint64_t rd64(const uint8_t *p)
{
    return ((uint64_t)rd32(p) << 32) | rd32(p + 4);
}

static uint8_t *wr16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
    return p + 2;
}

static uint8_t *wr32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
    return p + 4;
}

static uint8_t *wr64(uint8_t *p, uint64_t v)
{
    wr32(p, (uint32_t)(v >> 32));
    return wr32(p + 4, (uint32_t)v);
}

/* ---- codec ---------------------------------------------------------------- */

int tcpcl4_contact_decode(const uint8_t *b, size_t n, uint8_t *version, uint8_t *flags)
{
    static const uint8_t magic[4] = {'d', 't', 'n', '!'};
    size_t k = n < 4 ? n : 4;
    if (memcmp(b, magic, k) != 0)
        return TERN_EMALFORMED;
    if (n < TCPCL4_CONTACT_LEN)
        return TERN_ETRUNCATED;
    *version = b[4];
    *flags = b[5];
    return 0;
}

size_t tcpcl4_contact_encode(uint8_t *out, uint8_t flags)
{
    memcpy(out, "dtn!", 4);
    out[4] = TCPCL4_VERSION;
    out[5] = flags;
    return TCPCL4_CONTACT_LEN;
}

int tcpcl4_ext_walk(const uint8_t *ext, size_t len,
                    int (*fn)(void *ctx, uint8_t flags, uint16_t type, const uint8_t *val,
                              uint16_t vlen),
                    void *ctx)
{
    size_t off = 0;
    while (off < len) {
        if (len - off < 5)
            return TERN_EMALFORMED;
        uint8_t fl = ext[off];
        uint16_t type = rd16(ext + off + 1), vlen = rd16(ext + off + 3);
        if (len - off - 5 < vlen)
            return TERN_EMALFORMED;
        if (fn) {
            int rc = fn(ctx, fl, type, ext + off + 5, vlen);
            if (rc)
                return rc;
        }
        off += 5u + vlen;
    }
    return 0;
}

int tcpcl4_decode(const uint8_t *b, size_t n, uint64_t max_seg, tcpcl4_msg *m,
                  size_t *used)
{
    if (n < 1)
        return TERN_ETRUNCATED;
    memset(m, 0, sizeof *m);
    m->type = b[0];
    size_t need;
    switch (b[0]) {
    case TCPCL4_XFER_SEGMENT: {
        if (n < 10)
            return TERN_ETRUNCATED;
        m->u.seg.flags = b[1];
        m->u.seg.tid = rd64(b + 2);
        size_t off = 10;
        if (b[1] & TCPCL4_SEG_START) {
            if (n < off + 4)
                return TERN_ETRUNCATED;
            uint32_t el = rd32(b + off);
            if (el > EXT_MAX)
                return TERN_EOVERFLOW;
            off += 4;
            if (n - off < el)
                return TERN_ETRUNCATED;
            m->u.seg.ext = b + off;
            m->u.seg.ext_len = el;
            off += el;
            int rc = tcpcl4_ext_walk(m->u.seg.ext, el, NULL, NULL);
            if (rc < 0)
                return rc;
        }
        if (n - off < 8)
            return TERN_ETRUNCATED;
        uint64_t dl = rd64(b + off);
        off += 8;
        if (dl > max_seg)
            return TERN_EOVERFLOW;
        if ((uint64_t)(n - off) < dl) {
            /* the whole message's length, for a caller that buffers it; dl
             * was bounded by max_seg above, so it fits */
            size_t whole;
            if (!tern_ckd_add_size(&whole, off, (size_t)dl))
                *used = whole;
            return TERN_ETRUNCATED;
        }
        m->u.seg.data = b + off;
        m->u.seg.len = dl;
        *used = off + (size_t)dl;
        return 0;
    }
    case TCPCL4_XFER_ACK:
        need = 18;
        if (n < need)
            return TERN_ETRUNCATED;
        m->u.ack.flags = b[1];
        m->u.ack.tid = rd64(b + 2);
        m->u.ack.len = rd64(b + 10);
        break;
    case TCPCL4_XFER_REFUSE:
        need = 10;
        if (n < need)
            return TERN_ETRUNCATED;
        m->u.refuse.reason = b[1];
        m->u.refuse.tid = rd64(b + 2);
        break;
    case TCPCL4_KEEPALIVE:
        need = 1;
        break;
    case TCPCL4_SESS_TERM:
        need = 3;
        if (n < need)
            return TERN_ETRUNCATED;
        m->u.term.flags = b[1];
        m->u.term.reason = b[2];
        break;
    case TCPCL4_MSG_REJECT:
        need = 3;
        if (n < need)
            return TERN_ETRUNCATED;
        m->u.reject.reason = b[1];
        m->u.reject.rejected = b[2];
        break;
    case TCPCL4_SESS_INIT: {
        if (n < 21)
            return TERN_ETRUNCATED;
        m->u.init.keepalive_s = rd16(b + 1);
        m->u.init.seg_mru = rd64(b + 3);
        m->u.init.xfer_mru = rd64(b + 11);
        size_t il = rd16(b + 19), off = 21;
        if (n - off < il)
            return TERN_ETRUNCATED;
        m->u.init.node_id = b + off;
        m->u.init.node_id_len = il;
        off += il;
        if (n - off < 4)
            return TERN_ETRUNCATED;
        uint32_t el = rd32(b + off);
        off += 4;
        if (el > EXT_MAX)
            return TERN_EOVERFLOW;
        if (n - off < el)
            return TERN_ETRUNCATED;
        m->u.init.ext = b + off;
        m->u.init.ext_len = el;
        int rc = tcpcl4_ext_walk(b + off, el, NULL, NULL);
        if (rc < 0)
            return rc;
        *used = off + el;
        return 0;
    }
    default:
        return TERN_ETYPE;
    }
    *used = need;
    return 0;
}

size_t tcpcl4_enc_sess_init(uint8_t *out, uint16_t keepalive_s, uint64_t seg_mru,
                            uint64_t xfer_mru, const char *node_id)
{
    size_t il = strlen(node_id);
    uint8_t *p = out;
    *p++ = TCPCL4_SESS_INIT;
    p = wr16(p, keepalive_s);
    p = wr64(p, seg_mru);
    p = wr64(p, xfer_mru);
    p = wr16(p, (uint16_t)il);
    memcpy(p, node_id, il);
    p += il;
    p = wr32(p, 0);
    return (size_t)(p - out);
}

size_t tcpcl4_enc_seg_hdr(uint8_t *out, uint8_t flags, uint64_t tid, uint64_t len,
                          uint64_t total)
{
    uint8_t *p = out;
    *p++ = TCPCL4_XFER_SEGMENT;
    *p++ = flags;
    p = wr64(p, tid);
    if (flags & TCPCL4_SEG_START) {
        if (total) {
            p = wr32(p, 13);
            *p++ = 0; /* not critical: a peer that ignores it loses nothing */
            p = wr16(p, TCPCL4_XEXT_TRANSFER_LENGTH);
            p = wr16(p, 8);
            p = wr64(p, total);
        } else {
            p = wr32(p, 0);
        }
    }
    p = wr64(p, len);
    return (size_t)(p - out);
}

size_t tcpcl4_enc_ack(uint8_t *out, uint8_t flags, uint64_t tid, uint64_t len)
{
    out[0] = TCPCL4_XFER_ACK;
    out[1] = flags;
    wr64(out + 2, tid);
    wr64(out + 10, len);
    return 18;
}

size_t tcpcl4_enc_refuse(uint8_t *out, uint8_t reason, uint64_t tid)
{
    out[0] = TCPCL4_XFER_REFUSE;
    out[1] = reason;
    wr64(out + 2, tid);
    return 10;
}

size_t tcpcl4_enc_keepalive(uint8_t *out)
{
    out[0] = TCPCL4_KEEPALIVE;
    return 1;
}

size_t tcpcl4_enc_term(uint8_t *out, uint8_t flags, uint8_t reason)
{
    out[0] = TCPCL4_SESS_TERM;
    out[1] = flags;
    out[2] = reason;
    return 3;
}

size_t tcpcl4_enc_reject(uint8_t *out, uint8_t reason, uint8_t rejected)
{
    out[0] = TCPCL4_MSG_REJECT;
    out[1] = reason;
    out[2] = rejected;
    return 3;
}

/* Parses the decimal number s[0..n): digits only, no leading zero, at most
 * max. */
static int dec_num(const char *s, size_t n, uint64_t max, uint64_t *v)
{
    if (n == 0 || (n > 1 && s[0] == '0'))
        return TERN_EMALFORMED;
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return TERN_EMALFORMED;
        unsigned d = (unsigned)(s[i] - '0');
        if (x > (max - d) / 10)
            return TERN_EMALFORMED;
        x = x * 10 + d;
    }
    *v = x;
    return 0;
}

/* An ipn node ID, s[0..n) after "ipn:": "N.0", or RFC 9758's "A.N.0"
 * (allocator and node number, 32 bits each: the node number is A << 32 | N,
 * as in the two-element form). */
static int ipn_node_id(const char *s, size_t n, uint64_t *node, const char **why)
{
    const char *d1 = memchr(s, '.', n);
    const char *d2 = d1 ? memchr(d1 + 1, '.', (size_t)(s + n - d1 - 1)) : NULL;
    const char *last = d2 ? d2 : d1;
    uint64_t a = 0, nn, svc;
    *why = "ipn node ID is not ipn:N.0 or ipn:A.N.0";
    if (!d1 || (d2 && memchr(d2 + 1, '.', (size_t)(s + n - d2 - 1))))
        return TERN_EMALFORMED;
    if (dec_num(last + 1, (size_t)(s + n - last - 1), UINT64_MAX, &svc) < 0)
        return TERN_EMALFORMED;
    if (d2) {
        if (dec_num(s, (size_t)(d1 - s), UINT32_MAX, &a) < 0 ||
            dec_num(d1 + 1, (size_t)(d2 - d1 - 1), UINT32_MAX, &nn) < 0) {
            *why = "ipn:A.N.0 node ID with a number that is not decimal or above 2^32-1";
            return TERN_EMALFORMED;
        }
        nn |= a << 32;
    } else if (dec_num(s, (size_t)(d1 - s), UINT64_MAX, &nn) < 0) {
        *why = "ipn node number not decimal, above 2^64-1 or with a leading zero";
        return TERN_EMALFORMED;
    }
    if (svc != 0) {
        *why = "an ipn node ID has service number 0 (this names an endpoint)";
        return TERN_EMALFORMED;
    }
    *node = nn;
    return 0;
}

int tcpcl4_node_id_check(const uint8_t *id, size_t len, uint64_t *node, char *norm,
                         size_t cap, const char **why)
{
    const char *s = (const char *)id, *unused;
    if (!why)
        why = &unused;
    *why = NULL;
    if (norm && cap)
        norm[0] = 0;
    *node = 0;
    if (len == 0)
        return TCPCL4_NODE_NONE; /* RFC 9174 4.6: the peer withholds it */
    if (len > TCPCL4_NODE_ID_MAX) {
        *why = "node ID longer than 259 bytes";
        return TERN_EMALFORMED;
    }
    if (len >= 4 && memcmp(s, "ipn:", 4) == 0) {
        if (ipn_node_id(s + 4, len - 4, node, why) < 0)
            return TERN_EMALFORMED;
        if (norm && cap)
            snprintf(norm, cap, "%.*s", (int)len, s);
        return TCPCL4_NODE_IPN;
    }
    if (len >= 4 && memcmp(s, "dtn:", 4) == 0) {
        if (len == 8 && memcmp(s + 4, "none", 4) == 0) {
            *why = "dtn:none is the null endpoint, not a node ID";
            return TERN_EMALFORMED;
        }
        if (len < 6 || memcmp(s + 4, "//", 2) != 0) {
            *why = "dtn node ID is not dtn://<node name>/";
            return TERN_EMALFORMED;
        }
        const char *name = s + 6;
        size_t rest = len - 6;
        const char *slash = memchr(name, '/', rest);
        size_t nl = slash ? (size_t)(slash - name) : rest;
        if (nl == 0) {
            *why = "no node name after dtn://";
            return TERN_EMALFORMED;
        }
        if (slash && slash + 1 != name + rest) {
            *why = "dtn://<node>/<demux> names an endpoint, not a node";
            return TERN_EMALFORMED;
        }
        for (size_t i = 0; i < nl; i++)
            if ((unsigned char)name[i] <= 0x20 || name[i] == 0x7f) {
                *why = "dtn node name has a space or a control character";
                return TERN_EMALFORMED;
            }
        /* The node ID as Tern's EIDs hold it (the trailing '/' made
         * explicit: some peers leave it out); bp_eid_parse checks the rest
         * (length, UTF-8). */
        char text[TCPCL4_NODE_ID_MAX + 2];
        snprintf(text, sizeof text, "dtn://%.*s/", (int)nl, name);
        bp_eid e;
        const char *ewhy = NULL;
        if (bp_eid_parse(text, &e, &ewhy) != 0) {
            *why = ewhy ? ewhy : "not a dtn EID";
            return TERN_EMALFORMED;
        }
        if (norm && cap)
            snprintf(norm, cap, "%s", text);
        return TCPCL4_NODE_DTN;
    }
    *why = memchr(s, ':', len) ? "node ID of a scheme other than ipn or dtn"
                               : "node ID is not a URI (no scheme)";
    return TERN_EMALFORMED;
}

int tcpcl4_node_id_parse(const uint8_t *id, size_t len, uint64_t *node)
{
    const char *why;
    uint64_t n;
    if (tcpcl4_node_id_check(id, len, &n, NULL, 0, &why) != TCPCL4_NODE_IPN)
        return TERN_EMALFORMED;
    *node = n;
    return 0;
}

const char *tcpcl4_term_name(uint8_t r)
{
    static const char *const n[] = {"unknown", "idle timeout",    "version mismatch",
                                    "busy",    "contact failure", "resource exhaustion"};
    return r < sizeof n / sizeof n[0] ? n[r] : "unassigned reason";
}

const char *tcpcl4_refuse_name(uint8_t r)
{
    static const char *const n[] = {
        "unknown",        "completed",         "no resources",       "retransmit",
        "not acceptable", "extension failure", "session terminating"};
    return r < sizeof n / sizeof n[0] ? n[r] : "unassigned reason";
}

const char *tcpcl4_type_name(uint8_t t)
{
    static const char *const n[] = {"?",           "XFER_SEGMENT", "XFER_ACK",
                                    "XFER_REFUSE", "KEEPALIVE",    "SESS_TERM",
                                    "MSG_REJECT",  "SESS_INIT"};
    return t < sizeof n / sizeof n[0] && t ? n[t] : "unknown message type";
}

/* ---- session -------------------------------------------------------------- */

typedef struct outx {
    uint64_t tid, total;
} outx;

struct tcpcl4_sess {
    tcpcl4_cfg cfg;
    int state;
    char node_id[32];
    tcl_core c; /* buffers, events, bundles handed out, the error text */
    /* the peer */
    uint16_t keepalive;
    uint64_t peer_seg_mru, peer_xfer_mru, peer_node;
    int peer_kind; /* TCPCL4_NODE_* */
    char peer_id[TCPCL4_NODE_ID_MAX + 2];
    int sent_init, sent_term, peer_term;
    uint8_t peer_version, peer_flags;
    /* the transfer being received */
    int in_active;
    uint64_t in_tid;
    int in_refused;
    uint64_t refused_tid;
    /* our transfers awaiting acknowledgement */
    outx *outs;
    size_t outs_n, outs_cap;
    uint64_t next_tid;
    int64_t last_rx, last_tx;
    tcpcl4_stats st;
};

int tcpcl4_sess_new(const tcpcl4_cfg *cfg, tcpcl4_sess **out)
{
    tcpcl4_sess *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    s->cfg = *cfg;
    if (!s->cfg.seg_mru)
        s->cfg.seg_mru = DEFAULT_SEG_MRU;
    if (!s->cfg.xfer_mru)
        s->cfg.xfer_mru = DEFAULT_XFER_MRU;
    snprintf(s->node_id, sizeof s->node_id, "ipn:%" PRIu64 ".0", cfg->node);
    s->state = TCPCL4_S_CONTACT;
    s->last_rx = s->last_tx = -1;
    if (cfg->active) {
        uint8_t ch[TCPCL4_CONTACT_LEN];
        tcpcl4_contact_encode(ch, 0);
        if (tcl__buf_put(&s->c.tx, ch, sizeof ch) < 0) {
            free(s);
            return -ENOMEM;
        }
    }
    *out = s;
    return 0;
}

void tcpcl4_sess_free(tcpcl4_sess *s)
{
    if (!s)
        return;
    tcl__core_free(&s->c);
    free(s->outs);
    free(s);
}

static int emit(tcpcl4_sess *s, const uint8_t *b, size_t n)
{
    s->st.msgs_out++;
    return tcl__buf_put(&s->c.tx, b, n);
}

/* Ends the session because of the peer: SESS_TERM(reason) if one may still
 * be sent, then CLOSED. Returns rc for the caller to pass on. */
static int fail(tcpcl4_sess *s, uint8_t reason, int rc)
{
    if (!s->sent_term && s->state != TCPCL4_S_CONTACT) {
        uint8_t m[3];
        emit(s, m, tcpcl4_enc_term(m, 0, reason));
        s->sent_term = 1;
    }
    tcpcl4_ev e = {.kind = TCPCL4_EV_TERM, .reason = reason, .by_peer = 0};
    tcl__push_ev(&s->c, &e);
    s->state = TCPCL4_S_CLOSED;
    return rc;
}

static int send_init(tcpcl4_sess *s)
{
    uint8_t m[TCPCL4_SESS_INIT_FIXED + 32];
    s->sent_init = 1;
    return emit(s, m,
                tcpcl4_enc_sess_init(m, s->cfg.keepalive_s, s->cfg.seg_mru,
                                     s->cfg.xfer_mru, s->node_id));
}

static int crit_ext(void *ctx, uint8_t flags, uint16_t type, const uint8_t *v,
                    uint16_t vl)
{
    (void)v;
    (void)vl;
    /* No session extension is known; transfer length is the only transfer one. */
    if (ctx && type == TCPCL4_XEXT_TRANSFER_LENGTH)
        return 0;
    return (flags & TCPCL4_EXT_CRITICAL) ? 1 : 0;
}

static int xlen_ext(void *ctx, uint8_t flags, uint16_t type, const uint8_t *v,
                    uint16_t vl)
{
    (void)flags;
    if (type == TCPCL4_XEXT_TRANSFER_LENGTH && vl == 8)
        *(uint64_t *)ctx = rd64(v);
    return 0;
}

static int on_init(tcpcl4_sess *s, const tcpcl4_msg *m)
{
    const char *why;
    int kind = tcpcl4_node_id_check(m->u.init.node_id, m->u.init.node_id_len,
                                    &s->peer_node, s->peer_id, sizeof s->peer_id, &why);
    if (kind < 0) {
        /* Printed with its bytes escaped: the peer chose them. */
        char shown[64 * 4 + 1];
        size_t k = 0, n = m->u.init.node_id_len > 64 ? 64 : m->u.init.node_id_len;
        for (size_t i = 0; i < n; i++) {
            uint8_t c = m->u.init.node_id[i];
            if (c >= 0x20 && c < 0x7f && c != '\\' && c != '"')
                shown[k++] = (char)c;
            else
                k += (size_t)snprintf(shown + k, sizeof shown - k, "\\x%02x", c);
        }
        shown[k] = 0;
        tcl__set_err(&s->c, "peer node ID \"%s\"%s refused: %s", shown,
                     m->u.init.node_id_len > 64 ? "..." : "", why);
        return fail(s, TCPCL4_TERM_CONTACT_FAILURE, TERN_EMALFORMED);
    }
    s->peer_kind = kind;
    if (tcpcl4_ext_walk(m->u.init.ext, m->u.init.ext_len, crit_ext, NULL) > 0) {
        tcl__set_err(&s->c, "peer's SESS_INIT has a critical extension we do not know");
        return fail(s, TCPCL4_TERM_CONTACT_FAILURE, TERN_EMALFORMED);
    }
    if (m->u.init.seg_mru < TCPCL4_PEER_SEG_MRU_MIN) {
        /* every segment we send costs a header and bookkeeping: at 1 byte
         * per segment a 128 MiB bundle would cost gigabytes */
        tcl__set_err(&s->c, "peer's segment MRU %" PRIu64 " is below %u bytes",
                     m->u.init.seg_mru, TCPCL4_PEER_SEG_MRU_MIN);
        return fail(s, TCPCL4_TERM_CONTACT_FAILURE, TERN_EMALFORMED);
    }
    s->peer_seg_mru = m->u.init.seg_mru;
    s->peer_xfer_mru = m->u.init.xfer_mru;
    uint16_t a = s->cfg.keepalive_s, b = m->u.init.keepalive_s;
    s->keepalive = a < b ? a : b;
    if (!s->sent_init) {
        int rc = send_init(s);
        if (rc < 0)
            return rc;
    }
    s->state = TCPCL4_S_UP;
    tcpcl4_ev e = {.kind = TCPCL4_EV_UP};
    return tcl__push_ev(&s->c, &e);
}

static int refuse_in(tcpcl4_sess *s, uint64_t tid, uint8_t reason)
{
    uint8_t m[10];
    s->in_active = 0;
    s->c.in.off = s->c.in.len = 0;
    tcl__buf_trim(&s->c.in, TCL_BUF_KEEP);
    s->in_refused = 1;
    s->refused_tid = tid;
    s->st.refused_out++;
    s->st.msgs_out++;
    return tcl__answer(&s->c, tid, 0, m, tcpcl4_enc_refuse(m, reason, tid));
}

static int on_segment(tcpcl4_sess *s, const tcpcl4_msg *m)
{
    uint8_t fl = m->u.seg.flags;
    uint64_t tid = m->u.seg.tid;
    int rc;
    if (fl & TCPCL4_SEG_START) {
        /* A START while a transfer is open: the peer abandoned it. */
        s->in_active = 0;
        s->c.in.off = s->c.in.len = 0;
        tcl__buf_trim(&s->c.in, TCL_BUF_KEEP);
        s->in_refused = 0;
        if (s->state != TCPCL4_S_UP)
            return refuse_in(s, tid, TCPCL4_REFUSE_SESSION_TERMINATING);
        if (tcpcl4_ext_walk(m->u.seg.ext, m->u.seg.ext_len, crit_ext, s) > 0)
            return refuse_in(s, tid, TCPCL4_REFUSE_EXTENSION_FAILURE);
        uint64_t total = 0;
        tcpcl4_ext_walk(m->u.seg.ext, m->u.seg.ext_len, xlen_ext, &total);
        if (total > s->cfg.xfer_mru)
            return refuse_in(s, tid, TCPCL4_REFUSE_NO_RESOURCES);
        s->in_active = 1;
        s->in_tid = tid;
    } else if (!s->in_active || s->in_tid != tid) {
        if (s->in_refused && s->refused_tid == tid)
            return 0; /* the rest of a transfer we refused */
        tcl__set_err(&s->c, "XFER_SEGMENT without START for transfer %" PRIu64, tid);
        return fail(s, TCPCL4_TERM_UNKNOWN, TERN_EMALFORMED);
    }
    if (!tern_ckd_extent_ok(s->c.in.len - s->c.in.off, m->u.seg.len, s->cfg.xfer_mru))
        return refuse_in(s, tid, TCPCL4_REFUSE_NO_RESOURCES);
    if ((fl & TCPCL4_SEG_START) && (fl & TCPCL4_SEG_END)) {
        /* A transfer in one segment is handed over where it lies in the
         * receive buffer (valid, like an owned one, until the next recv). */
        s->in_active = 0;
        if (tcl__answer_owe(&s->c, tid) < 0)
            return refuse_in(s, tid, TCPCL4_REFUSE_NO_RESOURCES);
        s->st.bundles_in++;
        tcpcl4_ev e = {.kind = TCPCL4_EV_BUNDLE,
                       .tid = tid,
                       .data = m->u.seg.data,
                       .len = (size_t)m->u.seg.len,
                       .flags = fl};
        return tcl__push_ev(&s->c, &e);
    }
    if ((fl & TCPCL4_SEG_START) &&
        (rc = tcl__buf_reserve(&s->c.in, (size_t)m->u.seg.len)) < 0)
        return refuse_in(s, tid, TCPCL4_REFUSE_NO_RESOURCES);
    if ((rc = tcl__buf_put(&s->c.in, m->u.seg.data, (size_t)m->u.seg.len)) < 0)
        return refuse_in(s, tid, TCPCL4_REFUSE_NO_RESOURCES);
    size_t have = s->c.in.len - s->c.in.off;
    if (!(fl & TCPCL4_SEG_END)) {
        uint8_t a[18];
        s->st.msgs_out++;
        return tcl__answer(&s->c, tid, 1, a, tcpcl4_enc_ack(a, fl, tid, have));
    }
    /* Whole: hand the buffer over to the event; the caller acknowledges. */
    uint8_t *data;
    if (tcl__answer_owe(&s->c, tid) < 0)
        return refuse_in(s, tid, TCPCL4_REFUSE_NO_RESOURCES);
    if (tcl__take_in(&s->c, &data, &have) < 0) {
        uint8_t r[10]; /* the place just owed takes the refusal */
        s->in_active = 0;
        s->c.in.off = s->c.in.len = 0;
        s->st.refused_out++;
        s->st.msgs_out++;
        return tcl__answer_final(&s->c, tid, r,
                                 tcpcl4_enc_refuse(r, TCPCL4_REFUSE_NO_RESOURCES, tid));
    }
    s->in_active = 0;
    s->st.bundles_in++;
    tcpcl4_ev e = {
        .kind = TCPCL4_EV_BUNDLE, .tid = tid, .data = data, .len = have, .flags = fl};
    return tcl__push_ev(&s->c, &e);
}

static int out_find(tcpcl4_sess *s, uint64_t tid)
{
    for (size_t i = 0; i < s->outs_n; i++)
        if (s->outs[i].tid == tid)
            return (int)i;
    return -1;
}

static void out_drop(tcpcl4_sess *s, int i)
{
    memmove(&s->outs[i], &s->outs[i + 1], (s->outs_n - (size_t)i - 1) * sizeof *s->outs);
    s->outs_n--;
}

static int on_msg(tcpcl4_sess *s, const tcpcl4_msg *m)
{
    tcpcl4_ev e = {0};
    uint8_t out[4];
    int i;
    if (s->state == TCPCL4_S_INIT && m->type != TCPCL4_SESS_INIT &&
        m->type != TCPCL4_SESS_TERM) {
        tcl__set_err(&s->c, "%s before SESS_INIT", tcpcl4_type_name(m->type));
        return fail(s, TCPCL4_TERM_CONTACT_FAILURE, TERN_EMALFORMED);
    }
    switch (m->type) {
    case TCPCL4_SESS_INIT:
        if (s->state != TCPCL4_S_INIT)
            return emit(s, out,
                        tcpcl4_enc_reject(out, TCPCL4_REJECT_UNEXPECTED, m->type));
        return on_init(s, m);
    case TCPCL4_XFER_SEGMENT:
        return on_segment(s, m);
    case TCPCL4_XFER_ACK:
        if ((i = out_find(s, m->u.ack.tid)) < 0) {
            s->st.unknown_acks++;
            return 0;
        }
        if (!(m->u.ack.flags & TCPCL4_SEG_END) || m->u.ack.len < s->outs[i].total)
            return 0; /* progress */
        /* A peer acknowledging bytes not yet sent gets them anyway, from a
         * copy: the caller may free its bundle on this event. */
        if (tcl__detach_refs(&s->c, m->u.ack.tid) < 0)
            return fail(s, TCPCL4_TERM_UNKNOWN, -ENOMEM);
        e.kind = TCPCL4_EV_ACKED;
        e.tid = m->u.ack.tid;
        e.len = (size_t)s->outs[i].total;
        out_drop(s, i);
        s->st.acked++;
        return tcl__push_ev(&s->c, &e);
    case TCPCL4_XFER_REFUSE:
        if ((i = out_find(s, m->u.refuse.tid)) < 0)
            return 0;
        /* RFC 9174 5.2.4: the sender stops the refused transfer. A segment
         * begun goes out whole (the stream needs it), from a copy. */
        s->st.segs_cut += tcl__cut_tid(&s->c, m->u.refuse.tid);
        if (tcl__detach_refs(&s->c, m->u.refuse.tid) < 0)
            return fail(s, TCPCL4_TERM_UNKNOWN, -ENOMEM);
        out_drop(s, i);
        s->st.refused_in++;
        e.kind = TCPCL4_EV_REFUSED;
        e.tid = m->u.refuse.tid;
        e.reason = m->u.refuse.reason;
        return tcl__push_ev(&s->c, &e);
    case TCPCL4_KEEPALIVE:
        s->st.keepalives_in++;
        return 0;
    case TCPCL4_SESS_TERM:
        if (!s->sent_term) {
            s->sent_term = 1;
            emit(s, out, tcpcl4_enc_term(out, TCPCL4_TERM_REPLY, m->u.term.reason));
        }
        /* RFC 9174 6.1: transfers in progress may finish after a SESS_TERM.
         * A bundle taken whole still gets its answer (and those held behind
         * it theirs): the session ends once none is owed. */
        s->peer_term = 1;
        s->state = tcl__answers_held(&s->c) ? TCPCL4_S_ENDING : TCPCL4_S_CLOSED;
        e.kind = TCPCL4_EV_TERM;
        e.reason = m->u.term.reason;
        e.by_peer = !(m->u.term.flags & TCPCL4_TERM_REPLY);
        return tcl__push_ev(&s->c, &e);
    case TCPCL4_MSG_REJECT:
        e.kind = TCPCL4_EV_REJECTED;
        e.reason = m->u.reject.reason;
        e.rejected = m->u.reject.rejected;
        return tcl__push_ev(&s->c, &e);
    }
    return 0;
}

static int on_contact(tcpcl4_sess *s)
{
    uint8_t ver, fl;
    const uint8_t *b = s->c.rx.p + s->c.rx.off;
    int rc = tcpcl4_contact_decode(b, s->c.rx.len - s->c.rx.off, &ver, &fl);
    if (rc == TERN_ETRUNCATED)
        return rc;
    if (rc < 0) {
        tcl__set_err(&s->c, "no \"dtn!\" contact header");
        return fail(s, TCPCL4_TERM_CONTACT_FAILURE, rc);
    }
    s->c.rx.off += TCPCL4_CONTACT_LEN;
    s->peer_version = ver;
    if (!s->cfg.active) {
        uint8_t ch[TCPCL4_CONTACT_LEN];
        emit(s, ch, tcpcl4_contact_encode(ch, 0));
    }
    s->state = TCPCL4_S_INIT; /* a SESS_TERM may be sent from here on */
    if (ver != TCPCL4_VERSION) {
        tcl__set_err(&s->c, "peer speaks TCPCL version %u", ver);
        return fail(s, TCPCL4_TERM_VERSION_MISMATCH, TERN_EMALFORMED);
    }
    /* CAN_TLS from the peer alone changes nothing: RFC 9174 4.3 uses TLS only
     * when both contact headers set it, and ours never does. */
    s->peer_flags = fl;
    if (s->cfg.active)
        return send_init(s);
    return 0;
}

static int process(tcpcl4_sess *s);

int tcpcl4_sess_recv(tcpcl4_sess *s, const uint8_t *b, size_t n, int64_t now_ms)
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

uint8_t *tcpcl4_sess_rxbuf(tcpcl4_sess *s, size_t want, size_t *room)
{
    return tcl__rxbuf(&s->c, want, room);
}

int tcpcl4_sess_received(tcpcl4_sess *s, size_t n, int64_t now_ms)
{
    if (s->state == TCPCL4_S_CLOSED)
        return 0;
    s->last_rx = now_ms;
    s->c.rx.len += n;
    return process(s);
}

/* Parses and acts on what the receive buffer holds. */
static int process(tcpcl4_sess *s)
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
        tcpcl4_msg m;
        size_t used = 0;
        rc = tcpcl4_decode(s->c.rx.p + s->c.rx.off, s->c.rx.len - s->c.rx.off,
                           s->cfg.seg_mru, &m, &used);
        if (rc == TERN_ETRUNCATED) {
            s->c.rx_msg = used;
            break;
        }
        s->c.rx_msg = 0;
        if (rc == TERN_ETYPE) {
            /* Its length is unknown, so the stream cannot be followed further. */
            uint8_t r[3];
            tcl__set_err(&s->c, "unknown message type 0x%02x", m.type);
            emit(s, r, tcpcl4_enc_reject(r, TCPCL4_REJECT_TYPE_UNKNOWN, m.type));
            s->st.rejects_out++;
            return fail(s, TCPCL4_TERM_UNKNOWN, TERN_EMALFORMED);
        }
        if (rc == TERN_EOVERFLOW) {
            tcl__set_err(&s->c,
                         "%s declares more than our limits (segment MRU %" PRIu64 ")",
                         tcpcl4_type_name(m.type), s->cfg.seg_mru);
            return fail(s, TCPCL4_TERM_RESOURCE_EXHAUSTION, rc);
        }
        if (rc < 0) {
            tcl__set_err(&s->c, "malformed %s", tcpcl4_type_name(m.type));
            return fail(s, TCPCL4_TERM_UNKNOWN, rc);
        }
        s->c.rx.off += used;
        s->st.msgs_in++;
        rc = on_msg(s, &m);
        if (rc < 0)
            return rc;
    }
    return 0;
}

int tcpcl4_sess_event(tcpcl4_sess *s, tcpcl4_ev *ev)
{
    return tcl__pop_ev(&s->c, ev);
}

const uint8_t *tcpcl4_sess_output(tcpcl4_sess *s, size_t *len)
{
    return tcl__output(&s->c, len);
}

void tcpcl4_sess_sent(tcpcl4_sess *s, size_t n)
{
    tcl__sent(&s->c, n);
}

int tcpcl4_sess_output_iov(tcpcl4_sess *s, struct iovec *iov, int max, size_t *total)
{
    return tcl__output_iov(&s->c, iov, max, total);
}

size_t tcpcl4_sess_pending(const tcpcl4_sess *s)
{
    return tcl__pending(&s->c);
}

static int send_xfer(tcpcl4_sess *s, const uint8_t *b, size_t len, uint64_t *tid, int ref)
{
    if (s->state != TCPCL4_S_UP)
        return TERN_ESTATE;
    if (len == 0 || len > s->peer_xfer_mru)
        return -EMSGSIZE;
    if (s->outs_n == s->outs_cap) {
        size_t cap = s->outs_cap ? s->outs_cap * 2 : 16;
        outx *p = realloc(s->outs, cap * sizeof *p);
        if (!p)
            return -ENOMEM;
        s->outs = p;
        s->outs_cap = cap;
    }
    /* The peer chose its segment MRU (up to 2^64 - 1: len + mru - 1 would
     * wrap), so the count and the room are formed checked. */
    uint64_t mru = s->peer_seg_mru;
    size_t nseg = (size_t)(len / mru + (len % mru != 0)), room;
    if (tern_ckd_mul_size(&room, nseg, TCPCL4_SEG_HDR_MAX) ||
        tern_ckd_add_size(&room, room, ref ? 0 : len))
        return -ENOMEM;
    int rc = tcl__buf_reserve(&s->c.tx, room);
    if (rc == 0 && ref)
        rc = tcl__reserve_refs(&s->c, nseg);
    if (rc == 0)
        rc = tcl__reserve_segs(&s->c, nseg);
    if (rc < 0)
        return rc;
    uint64_t id = s->next_tid;
    for (size_t off = 0; off < len;) {
        size_t n = len - off < mru ? len - off : (size_t)mru;
        uint8_t fl = (uint8_t)((off == 0 ? TCPCL4_SEG_START : 0) |
                               (off + n == len ? TCPCL4_SEG_END : 0));
        uint8_t h[TCPCL4_SEG_HDR_MAX];
        /* The transfer length extension only helps a multi-segment transfer. */
        size_t hl = tcpcl4_enc_seg_hdr(h, fl, id, n, n < len ? len : 0);
        uint64_t at = tcl__tx_end(&s->c);
        /* all reserved above */
        tcl__buf_put(&s->c.tx, h, hl);
        if (!ref)
            tcl__buf_put(&s->c.tx, b + off, n);
        tcl__seg_add(&s->c, id, at);
        if (ref)
            tcl__put_ref(&s->c, b + off, n, id);
        s->st.msgs_out++;
        off += n;
    }
    s->next_tid++;
    s->outs[s->outs_n++] = (outx){id, len};
    s->st.bundles_out++;
    *tid = id;
    return 0;
}

int tcpcl4_sess_send(tcpcl4_sess *s, const uint8_t *b, size_t len, uint64_t *tid)
{
    return send_xfer(s, b, len, tid, 0);
}

int tcpcl4_sess_send_ref(tcpcl4_sess *s, const uint8_t *b, size_t len, uint64_t *tid)
{
    return send_xfer(s, b, len, tid, 1);
}

/* Both sides sent SESS_TERM and the last answer owed is out: the session
 * is over. */
static int answered(tcpcl4_sess *s, int rc)
{
    if (s->peer_term && s->state == TCPCL4_S_ENDING && !tcl__answers_held(&s->c))
        s->state = TCPCL4_S_CLOSED;
    return rc;
}

int tcpcl4_sess_ack(tcpcl4_sess *s, uint64_t tid, uint64_t len, uint8_t flags)
{
    if (s->state == TCPCL4_S_CLOSED || s->state < TCPCL4_S_UP)
        return TERN_ESTATE;
    uint8_t a[18];
    s->st.msgs_out++;
    return answered(s,
                    tcl__answer_final(&s->c, tid, a, tcpcl4_enc_ack(a, flags, tid, len)));
}

int tcpcl4_sess_refuse(tcpcl4_sess *s, uint64_t tid, uint8_t reason)
{
    if (s->state == TCPCL4_S_CLOSED || s->state < TCPCL4_S_UP)
        return TERN_ESTATE;
    s->st.refused_out++;
    s->st.msgs_out++;
    uint8_t m[10];
    return answered(s,
                    tcl__answer_final(&s->c, tid, m, tcpcl4_enc_refuse(m, reason, tid)));
}

int tcpcl4_sess_close(tcpcl4_sess *s, uint8_t reason)
{
    if (s->state == TCPCL4_S_CLOSED)
        return 0;
    if (s->state == TCPCL4_S_CONTACT) {
        s->state = TCPCL4_S_CLOSED;
        return 0;
    }
    if (!s->sent_term) {
        uint8_t m[3];
        s->sent_term = 1;
        int rc = emit(s, m, tcpcl4_enc_term(m, 0, reason));
        if (rc < 0)
            return rc;
    }
    s->state = TCPCL4_S_ENDING;
    return 0;
}

int64_t tcpcl4_sess_tick(tcpcl4_sess *s, int64_t now_ms)
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
        fail(s, TCPCL4_TERM_IDLE_TIMEOUT, 0);
        return -1;
    }
    size_t pending = s->c.tx.len - s->c.tx.off;
    if (pending)
        s->last_tx = now_ms; /* still sending: no keepalive needed */
    else if (now_ms - s->last_tx >= ka) {
        uint8_t k;
        emit(s, &k, tcpcl4_enc_keepalive(&k));
        s->st.keepalives_out++;
        s->last_tx = now_ms;
    }
    int64_t a = s->last_tx + ka, b = s->last_rx + 2 * ka;
    return a < b ? a : b;
}

int tcpcl4_sess_state(const tcpcl4_sess *s)
{
    return s->state;
}

uint16_t tcpcl4_sess_keepalive(const tcpcl4_sess *s)
{
    return s->keepalive;
}

uint64_t tcpcl4_sess_peer_seg_mru(const tcpcl4_sess *s)
{
    return s->peer_seg_mru;
}

uint64_t tcpcl4_sess_peer_xfer_mru(const tcpcl4_sess *s)
{
    return s->peer_xfer_mru;
}

uint64_t tcpcl4_sess_peer_node(const tcpcl4_sess *s)
{
    return s->peer_node;
}

int tcpcl4_sess_peer_node_kind(const tcpcl4_sess *s)
{
    return s->peer_kind;
}

const char *tcpcl4_sess_peer_node_id(const tcpcl4_sess *s)
{
    return s->peer_id;
}

uint8_t tcpcl4_sess_peer_flags(const tcpcl4_sess *s)
{
    return s->peer_flags;
}

size_t tcpcl4_sess_buffered(const tcpcl4_sess *s)
{
    return tcl__buffered(&s->c);
}

size_t tcpcl4_sess_answers_held(const tcpcl4_sess *s)
{
    return tcl__answers_held(&s->c);
}

uint8_t tcpcl4_sess_peer_version(const tcpcl4_sess *s)
{
    return s->peer_version;
}

const char *tcpcl4_sess_error(const tcpcl4_sess *s)
{
    return s->c.err;
}

void tcpcl4_sess_stats(const tcpcl4_sess *s, tcpcl4_stats *st)
{
    *st = s->st;
}
