/* MAMS and AAMS on the wire (ams_mams.h). */
#include <errno.h>
#include <string.h>

#include "ams_mams.h"
#include "tern/crc.h"

/* ------------------------------------------------------------------ AAMS */

TERN_API uint16_t aams_checksum(const uint8_t *p, size_t n)
{
    uint32_t sum = 0;
    size_t i = 0;
    for (; i + 1 < n; i += 2)
        sum += (uint32_t)p[i] << 8 | p[i + 1];
    if (i < n)
        sum += (uint32_t)p[i] << 8;
    return (uint16_t)sum;
}

TERN_API int aams_header_encode(const aams_msg *m, uint8_t h[AAMS_HDR_LEN])
{
    if (m->type < 0 || m->type > 2 || m->priority < 0 || m->priority > 15 ||
        m->continuum < 1 || m->continuum > 32767 || m->unit < 0 || m->unit > 65535 ||
        m->module < 0 || m->module > 255 || m->subject < -32768 || m->subject > 32767 ||
        m->len > 65535)
        return -EINVAL;
    h[0] = (uint8_t)(((m->type & 3) << 4) | (m->priority & 15));
    h[1] = m->flow;
    h[2] = (uint8_t)((m->has_cksum ? 0x80 : 0) | ((m->continuum >> 8) & 0x7f));
    h[3] = (uint8_t)(m->continuum & 0xff);
    h[4] = (uint8_t)(m->unit >> 8);
    h[5] = (uint8_t)m->unit;
    h[6] = (uint8_t)m->module;
    h[7] = 0;
    uint32_t ctx = (uint32_t)m->context;
    h[8] = (uint8_t)(ctx >> 24);
    h[9] = (uint8_t)(ctx >> 16);
    h[10] = (uint8_t)(ctx >> 8);
    h[11] = (uint8_t)ctx;
    uint16_t s = (uint16_t)(int16_t)m->subject;
    h[12] = (uint8_t)(s >> 8);
    h[13] = (uint8_t)s;
    h[14] = (uint8_t)(m->len >> 8);
    h[15] = (uint8_t)m->len;
    return 0;
}

TERN_API int aams_decode(const uint8_t *b, size_t len, aams_msg *m, const char **why)
{
    const char *w = NULL;
    memset(m, 0, sizeof *m);
    if (len < AAMS_HDR_LEN) {
        w = "shorter than the AAMS header";
        goto trunc;
    }
    if (b[0] >> 6) {
        w = "AAMS version not 0";
        goto bad;
    }
    m->type = (b[0] >> 4) & 3;
    if (m->type > 2) {
        w = "AAMS message type 3";
        goto bad;
    }
    m->priority = b[0] & 15;
    m->flow = b[1];
    m->has_cksum = (b[2] & 0x80) != 0;
    m->continuum = (b[2] & 0x7f) << 8 | b[3];
    m->unit = b[4] << 8 | b[5];
    m->module = b[6];
    m->context = (int32_t)((uint32_t)b[8] << 24 | (uint32_t)b[9] << 16 |
                           (uint32_t)b[10] << 8 | b[11]);
    m->subject = (int16_t)(uint16_t)(b[12] << 8 | b[13]);
    size_t clen = (size_t)(b[14] << 8 | b[15]);
    size_t have = len - AAMS_HDR_LEN;
    if (m->has_cksum) {
        if (have < AAMS_CKSUM_LEN) {
            w = "checksum flag set but no checksum";
            goto trunc;
        }
        have -= AAMS_CKSUM_LEN;
        uint16_t got = (uint16_t)(b[len - 2] << 8 | b[len - 1]);
        if (got != aams_checksum(b, len - AAMS_CKSUM_LEN)) {
            w = "AAMS checksum does not match";
            goto bad;
        }
    }
    if (clen > have) {
        w = "content length beyond the datagram";
        goto trunc;
    }
    if (clen < have) {
        w = "bytes after the content";
        goto bad;
    }
    if (m->continuum < 1) {
        w = "continuum 0";
        goto bad;
    }
    if (m->module < 1) {
        w = "module number 0";
        goto bad;
    }
    m->content = b + AAMS_HDR_LEN;
    m->len = clen;
    return 0;
trunc:
    if (why)
        *why = w;
    return TERN_ETRUNCATED;
bad:
    if (why)
        *why = w;
    return TERN_EMALFORMED;
}

/* ------------------------------------------------------------------ MAMS */

TERN_API void mams_cur_writer(mams_cur *c, uint8_t *buf, size_t cap)
{
    *c = (mams_cur){.w = buf, .left = cap};
}

TERN_API void mams_cur_reader(mams_cur *c, const uint8_t *buf, size_t len)
{
    *c = (mams_cur){.r = buf, .left = len};
}

static int room(mams_cur *c, size_t n)
{
    if (c->err)
        return 0;
    if (c->left < n) {
        c->err = c->w ? TERN_ENOSPACE : TERN_ETRUNCATED;
        return 0;
    }
    c->left -= n;
    return 1;
}

TERN_API void mams_put8(mams_cur *c, uint8_t v)
{
    if (room(c, 1))
        *c->w++ = v;
}

TERN_API void mams_put16(mams_cur *c, uint16_t v)
{
    if (room(c, 2)) {
        c->w[0] = (uint8_t)(v >> 8);
        c->w[1] = (uint8_t)v;
        c->w += 2;
    }
}

TERN_API void mams_put32(mams_cur *c, uint32_t v)
{
    if (room(c, 4)) {
        c->w[0] = (uint8_t)(v >> 24);
        c->w[1] = (uint8_t)(v >> 16);
        c->w[2] = (uint8_t)(v >> 8);
        c->w[3] = (uint8_t)v;
        c->w += 4;
    }
}

TERN_API void mams_put_bytes(mams_cur *c, const void *p, size_t n)
{
    if (n && room(c, n)) {
        memcpy(c->w, p, n);
        c->w += n;
    }
}

TERN_API void mams_put_ep(mams_cur *c, const mams_ep *e)
{
    mams_put32(c, e->addr);
    mams_put16(c, e->port);
}

TERN_API void mams_put_rule(mams_cur *c, const mams_rule *r)
{
    mams_put16(c, (uint16_t)r->subject);
    mams_put16(c, r->continuum);
    mams_put16(c, r->unit);
    mams_put8(c, r->role);
    mams_put8(c, r->priority);
    mams_put8(c, r->flow);
    mams_put8(c, r->flags);
}

TERN_API uint8_t mams_get8(mams_cur *c)
{
    return room(c, 1) ? *c->r++ : 0;
}

TERN_API uint16_t mams_get16(mams_cur *c)
{
    if (!room(c, 2))
        return 0;
    uint16_t v = (uint16_t)(c->r[0] << 8 | c->r[1]);
    c->r += 2;
    return v;
}

TERN_API uint32_t mams_get32(mams_cur *c)
{
    if (!room(c, 4))
        return 0;
    uint32_t v = (uint32_t)c->r[0] << 24 | (uint32_t)c->r[1] << 16 |
                 (uint32_t)c->r[2] << 8 | c->r[3];
    c->r += 4;
    return v;
}

TERN_API void mams_get_bytes(mams_cur *c, const uint8_t **p, size_t n)
{
    *p = NULL;
    if (room(c, n)) {
        *p = c->r;
        c->r += n;
    }
}

TERN_API void mams_get_ep(mams_cur *c, mams_ep *e)
{
    e->addr = mams_get32(c);
    e->port = mams_get16(c);
}

TERN_API void mams_get_rule(mams_cur *c, mams_rule *r)
{
    r->subject = (int16_t)mams_get16(c);
    r->continuum = mams_get16(c);
    r->unit = mams_get16(c);
    r->role = mams_get8(c);
    r->priority = mams_get8(c);
    r->flow = mams_get8(c);
    r->flags = mams_get8(c);
}

TERN_API void mams_put_module(mams_cur *c, const mams_module *m, const mams_rule *subs,
                              const mams_rule *invs)
{
    mams_put16(c, m->unit);
    mams_put8(c, m->module);
    mams_put8(c, m->role);
    mams_put8(c, m->gone);
    mams_put32(c, m->incarnation);
    mams_put32(c, m->version);
    mams_put_ep(c, &m->mams);
    mams_put_ep(c, &m->udp);
    mams_put_ep(c, &m->tcp);
    mams_put16(c, m->n_subs);
    mams_put16(c, m->n_invs);
    if (!subs && !invs) { /* the rules as they are on the wire (m->rules) */
        size_t n = ((size_t)m->n_subs + m->n_invs) * MAMS_RULE_LEN;
        if (n)
            mams_put_bytes(c, m->rules, n);
        return;
    }
    for (unsigned i = 0; i < m->n_subs; i++)
        mams_put_rule(c, &subs[i]);
    for (unsigned i = 0; i < m->n_invs; i++)
        mams_put_rule(c, &invs[i]);
}

TERN_API void mams_get_module(mams_cur *c, mams_module *m)
{
    memset(m, 0, sizeof *m);
    m->unit = mams_get16(c);
    m->module = mams_get8(c);
    m->role = mams_get8(c);
    m->gone = mams_get8(c);
    m->incarnation = mams_get32(c);
    m->version = mams_get32(c);
    mams_get_ep(c, &m->mams);
    mams_get_ep(c, &m->udp);
    mams_get_ep(c, &m->tcp);
    m->n_subs = mams_get16(c);
    m->n_invs = mams_get16(c);
    /* both counts are 16-bit: their sum times 10 cannot overflow size_t */
    size_t n = ((size_t)m->n_subs + m->n_invs) * MAMS_RULE_LEN;
    mams_get_bytes(c, &m->rules, n);
    if (m->gone > 1 && !c->err)
        c->err = TERN_EMALFORMED;
}

TERN_API void mams_module_rule(const mams_module *m, size_t i, mams_rule *r)
{
    mams_cur c;
    mams_cur_reader(&c, m->rules + i * MAMS_RULE_LEN, MAMS_RULE_LEN);
    mams_get_rule(&c, r);
}

TERN_API int mams_encode(const mams_pdu *p, uint8_t *out, size_t cap, size_t *n)
{
    if (p->body_len > MAMS_MAX_PDU - MAMS_HDR_LEN - MAMS_CRC_LEN)
        return -EMSGSIZE;
    size_t total = MAMS_HDR_LEN + p->body_len + MAMS_CRC_LEN;
    if (cap < total)
        return TERN_ENOSPACE;
    mams_cur c;
    mams_cur_writer(&c, out, cap);
    mams_put8(&c, MAMS_MAGIC);
    mams_put8(&c, MAMS_VERSION);
    mams_put8(&c, (uint8_t)p->type);
    mams_put8(&c, p->flags);
    mams_put16(&c, p->venture);
    mams_put16(&c, p->unit);
    mams_put8(&c, p->role);
    mams_put8(&c, p->module);
    mams_put32(&c, p->incarnation);
    mams_put32(&c, p->memo);
    mams_put16(&c, (uint16_t)p->body_len);
    if (p->body_len && p->body != out + MAMS_HDR_LEN)
        mams_put_bytes(&c, p->body, p->body_len);
    else {
        c.w += p->body_len; /* written in place already */
        c.left -= p->body_len;
    }
    mams_put32(&c, tern_crc32c(0, out, MAMS_HDR_LEN + p->body_len));
    if (c.err)
        return c.err;
    *n = total;
    return 0;
}

TERN_API int mams_decode(const uint8_t *b, size_t len, mams_pdu *p, const char **why)
{
    const char *w;
    int rc = TERN_EMALFORMED;
    memset(p, 0, sizeof *p);
    if (len < MAMS_HDR_LEN + MAMS_CRC_LEN) {
        w = "shorter than a MAMS header";
        rc = TERN_ETRUNCATED;
        goto fail;
    }
    if (b[0] != MAMS_MAGIC) {
        w = "not a MAMS PDU (first byte)";
        goto fail;
    }
    if (b[1] != MAMS_VERSION) {
        w = "MAMS version not 1";
        goto fail;
    }
    mams_cur c;
    mams_cur_reader(&c, b + 2, MAMS_HDR_LEN - 2);
    p->type = mams_get8(&c);
    p->flags = mams_get8(&c);
    p->venture = mams_get16(&c);
    p->unit = mams_get16(&c);
    p->role = mams_get8(&c);
    p->module = mams_get8(&c);
    p->incarnation = mams_get32(&c);
    p->memo = mams_get32(&c);
    size_t blen = mams_get16(&c);
    if (blen != len - MAMS_HDR_LEN - MAMS_CRC_LEN) {
        w = blen > len - MAMS_HDR_LEN - MAMS_CRC_LEN ? "body length beyond the datagram"
                                                     : "bytes after the body";
        rc = blen > len - MAMS_HDR_LEN - MAMS_CRC_LEN ? TERN_ETRUNCATED : TERN_EMALFORMED;
        goto fail;
    }
    const uint8_t *t = b + len - MAMS_CRC_LEN;
    uint32_t crc =
        (uint32_t)t[0] << 24 | (uint32_t)t[1] << 16 | (uint32_t)t[2] << 8 | t[3];
    if (crc != tern_crc32c(0, b, len - MAMS_CRC_LEN)) {
        w = "MAMS CRC-32C does not match";
        goto fail;
    }
    p->body = b + MAMS_HDR_LEN;
    p->body_len = blen;
    return 0;
fail:
    if (why)
        *why = w;
    return rc;
}
