/* The article payload: header, stored bytes, Ed25519 signature over both.
 * docs/newsfeed.md has the layout; the offsets below are that table. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <sodium.h>
#include <zlib.h>

#include "article_int.h"

static const uint8_t nf__magic[4] = {'T', 'N', 'W', 'S'};

enum {
    OFF_MAGIC = 0,
    OFF_VERSION = 4,
    OFF_FLAGS = 5,
    OFF_PUBLEN = 6,
    OFF_RESERVED = 7,
    OFF_KEYID = 8,
    OFF_SEQ = 16,
    OFF_TIME = 24,
    OFF_GROUP = 32,
    OFF_ORIGLEN = 36,
    OFF_STOREDLEN = 40,
    OFF_PUBLISHER = NF_WIRE_FIXED,
};

size_t nf_article_encoded_max(size_t publisher_len, size_t article_len)
{
    size_t n;
    if (tern_ckd_add_size(&n, NF_WIRE_FIXED + NF_SIGNATURE_BYTES, publisher_len) ||
        tern_ckd_add_size(&n, n, article_len))
        return SIZE_MAX;
    return n;
}

/* Deflates src into dst[0..cap); returns the compressed length, or 0 if it
 * does not fit (then compression would not make the article smaller). */
static size_t nf__deflate(z_stream *zs, int level, const uint8_t *src, size_t len,
                          uint8_t *dst, size_t cap)
{
    z_stream local;
    z_stream *z = zs;
    if (!z) {
        memset(&local, 0, sizeof local);
        if (deflateInit(&local, level) != Z_OK)
            return 0;
        z = &local;
    } else if (deflateReset(z) != Z_OK) {
        return 0;
    }
    z->next_in = (Bytef *)src;
    z->avail_in = (uInt)len;
    z->next_out = dst;
    z->avail_out = (uInt)cap;
    int zr = deflate(z, Z_FINISH);
    size_t out = zr == Z_STREAM_END ? (size_t)z->total_out : 0;
    if (!zs)
        deflateEnd(&local);
    return out;
}

int nf__article_encode(const nf_article_info *info, const uint8_t sk[NF_SECRETKEY_BYTES],
                       const void *article, size_t article_len, int level, unsigned opts,
                       uint8_t *out, size_t cap, size_t *out_len, z_stream *zs)
{
    size_t plen = strnlen(info->publisher, sizeof info->publisher);
    if (!nf__publisher_valid(info->publisher, plen) || info->seq == 0)
        return -EINVAL;
    if (article_len > UINT32_MAX)
        return TERN_ETOOBIG;
    if (level < 0 || level > 9)
        return -EINVAL;
    if (level == 0)
        level = 6;
    size_t max = nf_article_encoded_max(plen, article_len);
    if (max == SIZE_MAX || cap < max)
        return TERN_ENOSPACE;
    int rc = nf__sodium();
    if (rc)
        return rc;

    uint8_t *data = out + NF_WIRE_FIXED + plen;
    size_t stored = 0;
    uint8_t flags = 0;
    /* Compress straight into place with room for one byte less than the
     * article: anything that does not fit would not be smaller. */
    if (!(opts & NF_ENC_NO_COMPRESS) && article_len > 1)
        stored = nf__deflate(zs, level, article, article_len, data, article_len - 1);
    if (stored) {
        flags |= NF_FLAG_ZLIB;
    } else {
        if (article_len)
            memcpy(data, article, article_len);
        stored = article_len;
    }

    memcpy(out + OFF_MAGIC, nf__magic, 4);
    out[OFF_VERSION] = NF_WIRE_VERSION;
    out[OFF_FLAGS] = flags;
    out[OFF_PUBLEN] = (uint8_t)plen;
    out[OFF_RESERVED] = 0;
    memcpy(out + OFF_KEYID, sk + 32, NF_KEYID_BYTES); /* sk = seed || public key */
    nf__put64(out + OFF_SEQ, info->seq);
    nf__put64(out + OFF_TIME, info->time_ms);
    nf__put32(out + OFF_GROUP, info->group);
    nf__put32(out + OFF_ORIGLEN, (uint32_t)article_len);
    nf__put32(out + OFF_STOREDLEN, (uint32_t)stored);
    memcpy(out + OFF_PUBLISHER, info->publisher, plen);

    size_t signed_len = NF_WIRE_FIXED + plen + stored;
    if (crypto_sign_detached(out + signed_len, NULL, out, signed_len, sk) != 0)
        return -EIO;
    *out_len = signed_len + NF_SIGNATURE_BYTES;
    return 0;
}

int nf_article_encode(const nf_article_info *info, const uint8_t sk[NF_SECRETKEY_BYTES],
                      const void *article, size_t article_len, int level, unsigned opts,
                      uint8_t *out, size_t cap, size_t *out_len)
{
    return nf__article_encode(info, sk, article, article_len, level, opts, out, cap,
                              out_len, NULL);
}

int nf_article_peek(const uint8_t *buf, size_t len, nf_article_info *info, nf_err *err)
{
    if (len < NF_WIRE_FIXED)
        return nf__fail(err, NF_R_MALFORMED, TERN_ETRUNCATED,
                        "payload of %zu bytes is shorter than the %d-byte header", len,
                        NF_WIRE_FIXED);
    if (memcmp(buf + OFF_MAGIC, nf__magic, 4) != 0)
        return nf__fail(err, NF_R_MALFORMED, TERN_EMALFORMED,
                        "not a newsfeed payload (bad magic)");
    if (buf[OFF_VERSION] != NF_WIRE_VERSION)
        return nf__fail(err, NF_R_VERSION, TERN_EMALFORMED,
                        "payload version %u; this receiver reads version %u",
                        buf[OFF_VERSION], NF_WIRE_VERSION);
    if (buf[OFF_FLAGS] & ~NF_FLAG_ZLIB)
        return nf__fail(err, NF_R_MALFORMED, TERN_EMALFORMED, "unknown flags 0x%02x",
                        buf[OFF_FLAGS]);
    if (buf[OFF_RESERVED] != 0)
        return nf__fail(err, NF_R_MALFORMED, TERN_EMALFORMED, "reserved byte is not 0");
    size_t plen = buf[OFF_PUBLEN];
    uint32_t orig = nf__get32(buf + OFF_ORIGLEN), stored = nf__get32(buf + OFF_STOREDLEN);
    uint64_t need;
    if (tern_ckd_add(&need, NF_WIRE_FIXED + NF_SIGNATURE_BYTES, plen) ||
        tern_ckd_add(&need, need, stored))
        return nf__fail(err, NF_R_MALFORMED, TERN_EMALFORMED, "lengths overflow");
    if (need > len)
        return nf__fail(err, NF_R_MALFORMED, TERN_ETRUNCATED,
                        "payload of %zu bytes, header says %llu", len,
                        (unsigned long long)need);
    if (need < len)
        return nf__fail(err, NF_R_MALFORMED, TERN_EMALFORMED,
                        "%llu bytes after the signature",
                        (unsigned long long)(len - need));
    const char *pub = (const char *)buf + OFF_PUBLISHER;
    if (!nf__publisher_valid(pub, plen))
        return nf__fail(err, NF_R_MALFORMED, TERN_EMALFORMED, "bad publisher ID");
    uint8_t flags = buf[OFF_FLAGS];
    if (!(flags & NF_FLAG_ZLIB) && stored != orig)
        return nf__fail(err, NF_R_MALFORMED, TERN_EMALFORMED,
                        "uncompressed payload stores %u bytes of a %u-byte article",
                        stored, orig);
    if ((flags & NF_FLAG_ZLIB) && stored >= orig)
        return nf__fail(err, NF_R_MALFORMED, TERN_EMALFORMED,
                        "compressed payload is not smaller (%u of %u bytes)", stored,
                        orig);
    uint64_t seq = nf__get64(buf + OFF_SEQ);
    if (seq == 0)
        return nf__fail(err, NF_R_MALFORMED, TERN_EMALFORMED, "sequence number 0");
    if (info) {
        memcpy(info->publisher, pub, plen);
        info->publisher[plen] = 0;
        memcpy(info->key_id, buf + OFF_KEYID, NF_KEYID_BYTES);
        info->seq = seq;
        info->time_ms = nf__get64(buf + OFF_TIME);
        info->group = nf__get32(buf + OFF_GROUP);
        info->flags = flags;
        info->orig_len = orig;
        info->stored_len = stored;
    }
    return 0;
}

/* Inflates exactly want bytes from src into dst. More output than want is a
 * bomb (the header is signed, so a lying size is the publisher's doing, but
 * the limit holds whoever signed it); less, or trailing input, is malformed. */
static int nf__inflate(const uint8_t *src, size_t len, uint8_t *dst, uint32_t want,
                       nf_err *err)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit(&z) != Z_OK)
        return nf__fail(err, NF_R_LIMIT, -ENOMEM, "inflateInit failed");
    z.next_in = (Bytef *)src;
    z.avail_in = (uInt)len;
    z.next_out = dst;
    z.avail_out = want;
    int zr = inflate(&z, Z_FINISH);
    int rc = 0;
    if (zr == Z_STREAM_END) {
        if (z.total_out != want)
            rc = nf__fail(err, NF_R_MALFORMED, TERN_EMALFORMED,
                          "inflates to %lu bytes, header says %u", z.total_out, want);
        else if (z.avail_in != 0)
            rc = nf__fail(err, NF_R_MALFORMED, TERN_EMALFORMED,
                          "%u bytes after the end of the zlib stream", z.avail_in);
    } else if ((zr == Z_OK || zr == Z_BUF_ERROR) && z.avail_out == 0) {
        /* Output full, stream not over: see whether it would give more. */
        uint8_t probe[1];
        z.next_out = probe;
        z.avail_out = 1;
        zr = inflate(&z, Z_FINISH);
        if (z.avail_out == 0)
            rc = nf__fail(err, NF_R_BOMB, TERN_EFULL,
                          "compression bomb: inflates past its %u-byte limit", want);
        else
            rc = nf__fail(err, NF_R_MALFORMED, TERN_EMALFORMED,
                          "zlib stream does not end (zlib %d)", zr);
    } else {
        rc = nf__fail(err, NF_R_MALFORMED, TERN_EMALFORMED, "bad zlib data (zlib %d%s%s)",
                      zr, z.msg ? ": " : "", z.msg ? z.msg : "");
    }
    inflateEnd(&z);
    return rc;
}

int nf_article_decode(const nf_trust *trust, const nf_limits *lim, const uint8_t *buf,
                      size_t len, nf_article_info *info, uint8_t *out, size_t cap,
                      size_t *out_len, nf_err *err)
{
    nf_article_info local;
    nf_article_info *h = info ? info : &local;
    int rc = nf_article_peek(buf, len, h, err);
    if (rc)
        return rc;
    uint32_t max_article =
        lim && lim->max_article ? lim->max_article : NF_DEFAULT_MAX_ARTICLE;
    uint32_t max_inflate = lim && lim->max_decompressed ? lim->max_decompressed
                                                        : NF_DEFAULT_MAX_DECOMPRESSED;
    /* Stored bytes are never more than the article's: refusing an over-size
     * payload before verifying it spares the CPU of hashing it. */
    if (h->stored_len > max_article)
        return nf__fail(err, NF_R_TOO_BIG, TERN_ETOOBIG,
                        "article of at least %u bytes exceeds the %u-byte limit",
                        h->stored_len, max_article);

    bool known;
    const uint8_t *pk = nf__trust_find(trust, h->publisher, h->key_id, &known);
    if (!pk) {
        char hex[2 * NF_KEYID_BYTES + 1];
        sodium_bin2hex(hex, sizeof hex, h->key_id, NF_KEYID_BYTES);
        return nf__fail(err, NF_R_UNKNOWN_KEY, TERN_ENOTFOUND,
                        known ? "publisher %s signed with key %s, which is not trusted"
                              : "publisher %s (key %s) is not trusted",
                        h->publisher, hex);
    }
    rc = nf__sodium();
    if (rc)
        return nf__fail(err, NF_R_IO, rc, "libsodium failed to initialise");
    size_t signed_len = len - NF_SIGNATURE_BYTES;
    if (crypto_sign_verify_detached(buf + signed_len, buf, signed_len, pk) != 0)
        return nf__fail(err, NF_R_BAD_SIGNATURE, TERN_ECORRUPT,
                        "bad signature on %s #%llu: tampered or forged", h->publisher,
                        (unsigned long long)h->seq);

    if (h->orig_len > max_article)
        return nf__fail(err, NF_R_TOO_BIG, TERN_ETOOBIG,
                        "article of %u bytes exceeds the %u-byte limit", h->orig_len,
                        max_article);
    const uint8_t *data = buf + NF_WIRE_FIXED + strlen(h->publisher);
    if (!(h->flags & NF_FLAG_ZLIB)) {
        if (cap < h->orig_len)
            return nf__fail(err, NF_R_LIMIT, TERN_ENOSPACE,
                            "article of %u bytes, buffer of %zu", h->orig_len, cap);
        if (h->orig_len)
            memcpy(out, data, h->orig_len);
    } else {
        if (h->orig_len > max_inflate)
            return nf__fail(err, NF_R_BOMB, TERN_EFULL,
                            "compression bomb: declares %u bytes, inflate limit is %u",
                            h->orig_len, max_inflate);
        if (cap < h->orig_len)
            return nf__fail(err, NF_R_LIMIT, TERN_ENOSPACE,
                            "article of %u bytes, buffer of %zu", h->orig_len, cap);
        rc = nf__inflate(data, h->stored_len, out, h->orig_len, err);
        if (rc)
            return rc;
    }
    if (out_len)
        *out_len = h->orig_len;
    return 0;
}
