/* libFuzzer target: the payload decoder. The first input byte picks how the
 * rest is used:
 *   0: a payload as received (all the refusals before the signature);
 *   1: header fields and stored bytes that are then SIGNED with the trusted
 *      key, so the fuzzer reaches what only a key holder could send — the
 *      limits and inflate;
 *   2: an article, encoded and decoded: must round-trip byte for byte, and
 *      the payload with one byte flipped (position from the input) must be
 *      refused.
 * Every refusal must carry a reason and text; every acceptance must respect
 * the limits; an accepted article is then parsed as RFC 5536. */
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "newsfeed.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ART (64u * 1024)

static nf_trust *trust;
static uint8_t pk[32], sk[64];
static uint8_t out[MAX_ART], pay[MAX_ART * 2 + 256];

static void setup(void)
{
    if (trust)
        return;
    uint8_t seed[32] = {1, 2, 3};
    if (sodium_init() < 0 || crypto_sign_seed_keypair(pk, sk, seed) != 0 ||
        nf_trust_new(&trust) != 0 || nf_trust_add(trust, "p", pk) != 0)
        abort();
}

static int decode(const uint8_t *buf, size_t len, size_t *olen)
{
    nf_limits lim = {.max_article = MAX_ART, .max_decompressed = MAX_ART / 2};
    nf_err e;
    memset(&e, 0, sizeof e);
    nf_article_info info;
    int rc = nf_article_decode(trust, &lim, buf, len, &info, out, sizeof out, olen, &e);
    if (rc > 0)
        abort();
    if (rc < 0) {
        if (e.reason == NF_OK || e.reason >= NF_R_COUNT || !e.text[0])
            abort();
        return rc;
    }
    if (*olen != info.orig_len || *olen > MAX_ART ||
        ((info.flags & NF_FLAG_ZLIB) && *olen > MAX_ART / 2))
        abort();
    nf_msg m;
    if (nf_msg_parse(out, *olen, &m, &e) == 0 &&
        (m.body_off > *olen || m.message_id.n == 0 || m.ngroups == 0))
        abort();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup();
    if (size < 1)
        return 0;
    uint8_t mode = data[0] % 3;
    data++;
    size--;
    size_t olen;
    if (mode == 0) {
        uint8_t *b = malloc(size ? size : 1); /* exact size: ASan sees over-reads */
        memcpy(b, data, size);
        decode(b, size, &olen);
        free(b);
    } else if (mode == 1) {
        if (size > sizeof pay - 64)
            return 0;
        uint8_t *b = malloc(size + 64);
        memcpy(b, data, size);
        crypto_sign_detached(b + size, NULL, b, size, sk);
        decode(b, size + 64, &olen);
        free(b);
    } else {
        if (size < 2 || size - 2 > MAX_ART)
            return 0;
        size_t flip = (size_t)data[0] << 8 | data[1];
        data += 2;
        size -= 2;
        nf_article_info h;
        memset(&h, 0, sizeof h);
        strcpy(h.publisher, "p");
        h.seq = 1 + size;
        size_t plen;
        if (nf_article_encode(&h, sk, data, size, 1, 0, pay, sizeof pay, &plen) != 0)
            abort();
        if (decode(pay, plen, &olen) != 0 || olen != size || memcmp(out, data, size) != 0)
            abort();
        pay[flip % plen] ^= 0x20;
        if (decode(pay, plen, &olen) == 0)
            abort();
    }
    return 0;
}
