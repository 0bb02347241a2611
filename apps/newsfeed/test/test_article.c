/* The article payload: byte-identical round trips (compressed or not), the
 * documented layout, and one distinct refusal for each way a payload can be
 * wrong — tampered body or header, unknown or wrong key, over-size, bomb. */
#include <errno.h>
#include <zlib.h>

#include <sodium.h>

#include "nf_test.h"

static char art[65536];
static uint8_t pay[200000], outb[200000];

static nf_article_info hdr(const char *pub, uint64_t seq)
{
    nf_article_info h;
    memset(&h, 0, sizeof h);
    snprintf(h.publisher, sizeof h.publisher, "%s", pub);
    h.seq = seq;
    h.time_ms = 1764784800123ull;
    h.group = 7;
    return h;
}

static nf_trust *trust1(const char *pub, const uint8_t *pk)
{
    nf_trust *t;
    CHECK_OK(nf_trust_new(&t));
    CHECK_OK(nf_trust_add(t, pub, pk));
    return t;
}

static size_t text_article(void)
{
    char body[20000];
    size_t o = 0;
    for (int i = 0; i < 300; i++)
        o += (size_t)snprintf(body + o, sizeof body - o,
                              "Line %d of a rather repetitive article body.\r\n", i);
    return nf_t_article(art, sizeof art, "<rt1@pub.example>", "comp.lang.c", body);
}

TEST(roundtrip_compressed_byte_identical)
{
    nf_t_key k = nf_t_keygen();
    nf_trust *t = trust1("pub.example", k.pk);
    size_t n = text_article(), plen;
    nf_article_info h = hdr("pub.example", 42);
    CHECK_OK(nf_article_encode(&h, k.sk, art, n, 0, 0, pay, sizeof pay, &plen));
    CHECK(plen < n); /* compression paid */
    nf_article_info got;
    size_t olen = 0;
    nf_err e;
    CHECK_OK(nf_article_decode(t, NULL, pay, plen, &got, outb, sizeof outb, &olen, &e));
    CHECK_EQ_U64(olen, n);
    CHECK_EQ_MEM(outb, art, n);
    CHECK_EQ_STR(got.publisher, "pub.example");
    CHECK_EQ_U64(got.seq, 42);
    CHECK_EQ_U64(got.time_ms, 1764784800123ull);
    CHECK_EQ_U64(got.group, 7);
    CHECK_EQ_U64(got.flags, NF_FLAG_ZLIB);
    CHECK_EQ_U64(got.orig_len, n);
    CHECK_EQ_MEM(got.key_id, k.pk, NF_KEYID_BYTES);
    nf_trust_free(t);
}

TEST(roundtrip_incompressible_stored_as_is)
{
    nf_t_key k = nf_t_keygen();
    nf_trust *t = trust1("p", k.pk);
    uint8_t rnd[3000];
    randombytes_buf(rnd, sizeof rnd);
    size_t plen, olen;
    nf_article_info h = hdr("p", 1), got;
    CHECK_OK(nf_article_encode(&h, k.sk, rnd, sizeof rnd, 9, 0, pay, sizeof pay, &plen));
    CHECK_EQ_U64(plen, NF_WIRE_FIXED + 1 + sizeof rnd + NF_SIGNATURE_BYTES);
    CHECK_OK(nf_article_decode(t, NULL, pay, plen, &got, outb, sizeof outb, &olen, NULL));
    CHECK_EQ_U64(got.flags, 0);
    CHECK_EQ_U64(olen, sizeof rnd);
    CHECK_EQ_MEM(outb, rnd, sizeof rnd);
    /* and text with NF_ENC_NO_COMPRESS */
    size_t n = text_article();
    CHECK_OK(nf_article_encode(&h, k.sk, art, n, 0, NF_ENC_NO_COMPRESS, pay, sizeof pay,
                               &plen));
    CHECK_OK(nf_article_decode(t, NULL, pay, plen, &got, outb, sizeof outb, &olen, NULL));
    CHECK_EQ_U64(got.flags, 0);
    CHECK_EQ_MEM(outb, art, n);
    /* an empty article */
    CHECK_OK(nf_article_encode(&h, k.sk, "", 0, 0, 0, pay, sizeof pay, &plen));
    CHECK_OK(nf_article_decode(t, NULL, pay, plen, &got, outb, sizeof outb, &olen, NULL));
    CHECK_EQ_U64(olen, 0);
    nf_trust_free(t);
}

/* The offsets docs/newsfeed.md promises. */
TEST(layout_as_documented)
{
    nf_t_key k = nf_t_keygen();
    size_t plen;
    nf_article_info h = hdr("abc", 0x0102030405060708ull);
    h.group = 0x0a0b0c0d;
    CHECK_OK(nf_article_encode(&h, k.sk, "xyz", 3, 0, 0, pay, sizeof pay, &plen));
    CHECK_EQ_MEM(pay, "TNWS", 4);
    CHECK_EQ_INT(pay[4], 1);
    CHECK_EQ_INT(pay[5], 0);
    CHECK_EQ_INT(pay[6], 3);
    CHECK_EQ_INT(pay[7], 0);
    CHECK_EQ_MEM(pay + 8, k.pk, 8);
    static const uint8_t seq[8] = {1, 2, 3, 4, 5, 6, 7, 8}, grp[4] = {10, 11, 12, 13},
                         three[4] = {0, 0, 0, 3};
    CHECK_EQ_MEM(pay + 16, seq, 8);
    CHECK_EQ_MEM(pay + 32, grp, 4);
    CHECK_EQ_MEM(pay + 36, three, 4);
    CHECK_EQ_MEM(pay + 40, three, 4);
    CHECK_EQ_MEM(pay + 44, "abc", 3);
    CHECK_EQ_MEM(pay + 47, "xyz", 3);
    CHECK_EQ_U64(plen, 50 + 64);
    CHECK(crypto_sign_verify_detached(pay + 50, pay, 50, k.pk) == 0);
}

static int decode_why(const nf_trust *t, const nf_limits *lim, const uint8_t *p, size_t n,
                      nf_reason *why)
{
    nf_err e;
    memset(&e, 0, sizeof e);
    size_t olen;
    int rc = nf_article_decode(t, lim, p, n, NULL, outb, sizeof outb, &olen, &e);
    *why = e.reason;
    if (rc)
        CHECK_MSG(e.text[0] != 0, "refusal %d without a reason text", rc);
    return rc;
}

TEST(tampered_body_refused_bad_signature)
{
    nf_t_key k = nf_t_keygen();
    nf_trust *t = trust1("pub.example", k.pk);
    size_t n = text_article(), plen;
    nf_article_info h = hdr("pub.example", 5);
    for (unsigned opts = 0; opts < 2; opts++) {
        CHECK_OK(nf_article_encode(&h, k.sk, art, n, 0, opts, pay, sizeof pay, &plen));
        pay[NF_WIRE_FIXED + 11 + 20] ^= 0x04; /* inside the stored bytes */
        nf_reason why;
        CHECK_RC(decode_why(t, NULL, pay, plen, &why), TERN_ECORRUPT);
        CHECK_EQ_INT(why, NF_R_BAD_SIGNATURE);
    }
    nf_trust_free(t);
}

TEST(tampered_header_refused)
{
    nf_t_key k = nf_t_keygen();
    nf_trust *t = trust1("pub.example", k.pk);
    size_t n = text_article(), plen;
    nf_article_info h = hdr("pub.example", 5);
    CHECK_OK(nf_article_encode(&h, k.sk, art, n, 0, 0, pay, sizeof pay, &plen));
    static uint8_t orig[200000];
    memcpy(orig, pay, plen);
    nf_reason why;
    /* the sequence number (a replay under a fresh number), time, group */
    static const size_t signed_fields[] = {16 + 7, 24 + 3, 32 + 3};
    for (size_t i = 0; i < 3; i++) {
        memcpy(pay, orig, plen);
        pay[signed_fields[i]] ^= 1;
        CHECK_RC(decode_why(t, NULL, pay, plen, &why), TERN_ECORRUPT);
        CHECK_EQ_INT(why, NF_R_BAD_SIGNATURE);
    }
    /* the compression flag off: the lengths no longer agree */
    memcpy(pay, orig, plen);
    pay[5] = 0;
    CHECK_RC(decode_why(t, NULL, pay, plen, &why), TERN_EMALFORMED);
    CHECK_EQ_INT(why, NF_R_MALFORMED);
    /* another publisher's name: not trusted */
    memcpy(pay, orig, plen);
    pay[NF_WIRE_FIXED] = 'q';
    CHECK_RC(decode_why(t, NULL, pay, plen, &why), TERN_ENOTFOUND);
    CHECK_EQ_INT(why, NF_R_UNKNOWN_KEY);
    /* every single-bit flip anywhere is refused */
    for (size_t i = 0; i < plen; i++) {
        memcpy(pay, orig, plen);
        pay[i] ^= (uint8_t)(1u << (i % 8));
        CHECK_MSG(decode_why(t, NULL, pay, plen, &why) != 0, "flip at %zu accepted", i);
    }
    /* and every truncation */
    for (size_t i = 0; i < plen; i++)
        CHECK_MSG(decode_why(t, NULL, orig, i, &why) != 0, "truncation to %zu accepted",
                  i);
    nf_trust_free(t);
}

TEST(wrong_key_unknown_key_and_forgery_distinct)
{
    nf_t_key good = nf_t_keygen(), other = nf_t_keygen();
    nf_trust *t = trust1("pub.example", good.pk);
    size_t n = text_article(), plen;
    nf_article_info h = hdr("pub.example", 9);
    nf_reason why;
    /* signed with a key the table does not have for this publisher */
    CHECK_OK(nf_article_encode(&h, other.sk, art, n, 0, 0, pay, sizeof pay, &plen));
    nf_err e;
    size_t olen;
    CHECK_RC(nf_article_decode(t, NULL, pay, plen, NULL, outb, sizeof outb, &olen, &e),
             TERN_ENOTFOUND);
    CHECK_EQ_INT(e.reason, NF_R_UNKNOWN_KEY);
    CHECK_MSG(strstr(e.text, "not trusted"), "%s", e.text);
    /* the same, claiming the trusted key's id: a forgery */
    memcpy(pay + 8, good.pk, 8);
    CHECK_RC(decode_why(t, NULL, pay, plen, &why), TERN_ECORRUPT);
    CHECK_EQ_INT(why, NF_R_BAD_SIGNATURE);
    /* a publisher nobody trusts */
    h = hdr("stranger", 1);
    CHECK_OK(nf_article_encode(&h, other.sk, art, n, 0, 0, pay, sizeof pay, &plen));
    CHECK_RC(decode_why(t, NULL, pay, plen, &why), TERN_ENOTFOUND);
    CHECK_EQ_INT(why, NF_R_UNKNOWN_KEY);
    /* an empty table trusts nothing */
    CHECK_RC(decode_why(NULL, NULL, pay, plen, &why), TERN_ENOTFOUND);
    /* two keys for one publisher (rollover): both verify */
    CHECK_OK(nf_trust_add(t, "pub.example", other.pk));
    CHECK_RC(nf_trust_add(t, "pub.example", other.pk), TERN_EEXIST);
    h = hdr("pub.example", 10);
    CHECK_OK(nf_article_encode(&h, other.sk, art, n, 0, 0, pay, sizeof pay, &plen));
    CHECK_OK(decode_why(t, NULL, pay, plen, &why));
    nf_trust_free(t);
}

TEST(oversize_refused_before_and_after_verifying)
{
    nf_t_key k = nf_t_keygen();
    nf_trust *t = trust1("p", k.pk);
    size_t n = text_article(), plen;
    nf_article_info h = hdr("p", 1);
    nf_limits lim = {.max_article = 1000, .max_decompressed = 1u << 20};
    nf_reason why;
    CHECK_OK(nf_article_encode(&h, k.sk, art, n, 0, NF_ENC_NO_COMPRESS, pay, sizeof pay,
                               &plen));
    CHECK_RC(decode_why(t, &lim, pay, plen, &why), TERN_ETOOBIG);
    CHECK_EQ_INT(why, NF_R_TOO_BIG);
    /* compressed to under the limit, but the article is over it */
    CHECK_OK(nf_article_encode(&h, k.sk, art, n, 0, 0, pay, sizeof pay, &plen));
    CHECK(plen + 1 < n);
    lim.max_article = (uint32_t)plen + 1; /* the stored bytes fit; the article not */
    CHECK_RC(decode_why(t, &lim, pay, plen, &why), TERN_ETOOBIG);
    CHECK_EQ_INT(why, NF_R_TOO_BIG);
    /* a buffer too small is not a refusal of the article */
    nf_err e;
    size_t olen;
    nf_article_info got;
    CHECK_RC(nf_article_decode(t, NULL, pay, plen, &got, outb, 100, &olen, &e),
             TERN_ENOSPACE);
    CHECK_EQ_INT(e.reason, NF_R_LIMIT);
    CHECK_EQ_U64(got.orig_len, n);
    nf_trust_free(t);
}

/* A payload built by hand (as a hostile but key-holding publisher could),
 * with any lengths, signed properly. */
static size_t forge(const nf_t_key *k, uint8_t flags, uint32_t orig,
                    const uint8_t *stored, uint32_t slen)
{
    memcpy(pay, "TNWS", 4);
    pay[4] = 1;
    pay[5] = flags;
    pay[6] = 1;
    pay[7] = 0;
    memcpy(pay + 8, k->pk, 8);
    memset(pay + 16, 0, 16);
    pay[23] = 1; /* seq 1 */
    memset(pay + 32, 0, 4);
    for (int i = 0; i < 4; i++) {
        pay[36 + i] = (uint8_t)(orig >> (24 - 8 * i));
        pay[40 + i] = (uint8_t)(slen >> (24 - 8 * i));
    }
    pay[44] = 'p';
    memcpy(pay + 45, stored, slen);
    crypto_sign_detached(pay + 45 + slen, NULL, pay, 45 + slen, k->sk);
    return 45 + slen + 64;
}

TEST(compression_bomb_refused)
{
    nf_t_key k = nf_t_keygen();
    nf_trust *t = trust1("p", k.pk);
    /* 10 MB of zeros deflate to about 10 KB; the header claims 20,000. */
    size_t big = 10u << 20;
    uint8_t *zeros = calloc(1, big);
    static uint8_t z[100000];
    uLongf zl = sizeof z;
    CHECK(compress2(z, &zl, zeros, big, 9) == Z_OK);
    free(zeros);
    CHECK(zl < 20000);
    size_t plen = forge(&k, NF_FLAG_ZLIB, 20000, z, (uint32_t)zl);
    nf_reason why;
    CHECK_RC(decode_why(t, NULL, pay, plen, &why), TERN_EFULL);
    CHECK_EQ_INT(why, NF_R_BOMB);
    /* honest about its size, but above the inflate limit */
    nf_limits lim = {.max_article = 16u << 20, .max_decompressed = 1u << 20};
    plen = forge(&k, NF_FLAG_ZLIB, (uint32_t)big, z, (uint32_t)zl);
    CHECK_RC(decode_why(t, &lim, pay, plen, &why), TERN_EFULL);
    CHECK_EQ_INT(why, NF_R_BOMB);
    /* inflating to less than claimed, or junk after the stream: malformed */
    uLongf sl = sizeof z;
    CHECK(compress2(z, &sl, (const Bytef *)"hello hello hello hello", 23, 9) == Z_OK);
    plen = forge(&k, NF_FLAG_ZLIB, 100, z, (uint32_t)sl);
    CHECK_RC(decode_why(t, NULL, pay, plen, &why), TERN_EMALFORMED);
    CHECK_EQ_INT(why, NF_R_MALFORMED);
    z[sl] = 'x';
    plen = forge(&k, NF_FLAG_ZLIB, 23, z, (uint32_t)sl + 1);
    CHECK_RC(decode_why(t, NULL, pay, plen, &why), TERN_EMALFORMED);
    /* the right claim decodes */
    plen = forge(&k, NF_FLAG_ZLIB, 23, z, (uint32_t)sl);
    CHECK_OK(decode_why(t, NULL, pay, plen, &why));
    CHECK_EQ_MEM(outb, "hello hello hello hello", 23);
    /* not zlib at all */
    plen = forge(&k, NF_FLAG_ZLIB, 100, (const uint8_t *)"garbage!", 8);
    CHECK_RC(decode_why(t, NULL, pay, plen, &why), TERN_EMALFORMED);
    nf_trust_free(t);
}

TEST(format_refusals_have_reasons)
{
    nf_t_key k = nf_t_keygen();
    nf_trust *t = trust1("p", k.pk);
    size_t plen;
    nf_article_info h = hdr("p", 3);
    CHECK_OK(nf_article_encode(&h, k.sk, "abc", 3, 0, 0, pay, sizeof pay, &plen));
    nf_reason why;
    pay[4] = 2;
    CHECK_RC(decode_why(t, NULL, pay, plen, &why), TERN_EMALFORMED);
    CHECK_EQ_INT(why, NF_R_VERSION);
    pay[4] = 1;
    pay[5] = 0x80;
    CHECK_RC(decode_why(t, NULL, pay, plen, &why), TERN_EMALFORMED);
    CHECK_EQ_INT(why, NF_R_MALFORMED);
    pay[5] = 0;
    pay[plen] = 0;
    CHECK_RC(decode_why(t, NULL, pay, plen + 1, &why), TERN_EMALFORMED); /* trailing */
    CHECK_OK(decode_why(t, NULL, pay, plen, &why));
    /* encoder refusals */
    h.seq = 0;
    CHECK_RC(nf_article_encode(&h, k.sk, "a", 1, 0, 0, pay, sizeof pay, &plen), -EINVAL);
    h = hdr("bad/id", 1);
    CHECK_RC(nf_article_encode(&h, k.sk, "a", 1, 0, 0, pay, sizeof pay, &plen), -EINVAL);
    h = hdr("p", 1);
    CHECK_RC(nf_article_encode(&h, k.sk, "abc", 3, 0, 0, pay, 50, &plen), TERN_ENOSPACE);
    nf_trust_free(t);
}
