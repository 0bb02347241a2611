/* libFuzzer target: the NNTP transit machine. The input is a session from
 * a hostile peer; its first two bytes seed the verdicts and the chunking.
 * The same bytes are fed twice — whole, and in pseudo-random chunks — and
 * must give the same responses and the same articles. Every response line
 * ends in CRLF and starts with a three-digit code or is part of a
 * multi-line block; articles respect the size limit; the machine always
 * makes progress. */
#include <stdlib.h>
#include <string.h>

#include "newsfeed.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ART 4096

typedef struct run {
    uint8_t out[1 << 18];
    size_t out_len;
    uint64_t art_hash;
    size_t arts;
} run;

static run r1, r2;

static uint32_t next(uint32_t *s)
{
    *s = *s * 1103515245u + 12345u;
    return *s >> 16;
}

static void drain(nf_nntp *s, run *r)
{
    const char *p;
    size_t n = nf_nntp_output(s, &p);
    if (n && p[n - 1] != '\n')
        abort(); /* output is whole lines */
    size_t k = n < sizeof r->out - r->out_len ? n : sizeof r->out - r->out_len;
    memcpy(r->out + r->out_len, p, k);
    r->out_len += k;
    nf_nntp_output_done(s, n);
}

static void session(const uint8_t *in, size_t len, uint32_t seed, int chunked, run *r)
{
    memset(r, 0, sizeof *r);
    nf_nntp_opts o = {.max_article = MAX_ART, .max_output = 512};
    nf_nntp *s;
    if (nf_nntp_new(&s, &o) != 0)
        abort();
    uint32_t vs = seed, cs = seed ^ 0x5a5a;
    size_t at = 0;
    unsigned stuck = 0;
    while (at < len && !nf_nntp_closing(s)) {
        size_t chunk = chunked ? 1 + next(&cs) % 64 : len - at;
        if (chunk > len - at)
            chunk = len - at;
        size_t used = 0;
        if (nf_nntp_feed(s, in + at, chunk, &used) != 0 || used > chunk)
            abort();
        at += used;
        nf_nntp_ev ev;
        nf_nntp_event(s, &ev);
        if (ev.type != NF_NNTP_EV_NONE) {
            if (!ev.msgid)
                abort();
            if (ev.type == NF_NNTP_EV_ARTICLE || ev.type == NF_NNTP_EV_TAKETHIS) {
                if (ev.article_len > MAX_ART)
                    abort();
                for (size_t i = 0; i < ev.article_len; i++)
                    r->art_hash = r->art_hash * 131 + ev.article[i];
                r->arts++;
            }
            static const nf_nntp_verdict offer[] = {NF_NNTP_WANT, NF_NNTP_UNWANTED,
                                                    NF_NNTP_DEFER};
            static const nf_nntp_verdict taken[] = {NF_NNTP_ACCEPT, NF_NNTP_REJECT,
                                                    NF_NNTP_DEFER};
            uint32_t pick = next(&vs) % 3;
            nf_nntp_verdict v = ev.type == NF_NNTP_EV_CHECK || ev.type == NF_NNTP_EV_IHAVE
                                    ? offer[pick]
                                    : taken[pick];
            if (nf_nntp_decide(s, v) != 0)
                abort();
            if (nf_nntp_decide(s, v) != TERN_ESTATE)
                abort();
        }
        drain(s, r);
        stuck = used == 0 && ev.type == NF_NNTP_EV_NONE ? stuck + 1 : 0;
        if (stuck > 2)
            abort(); /* input left, nothing pending, nothing taken */
    }
    drain(s, r);
    nf_nntp_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    uint32_t seed = (uint32_t)data[0] << 8 | data[1];
    data += 2;
    size -= 2;
    session(data, size, seed, 0, &r1);
    session(data, size, seed, 1, &r2);
    if (r1.out_len != r2.out_len || memcmp(r1.out, r2.out, r1.out_len) != 0 ||
        r1.arts != r2.arts || r1.art_hash != r2.art_hash)
        abort();
    /* each response line: "ddd " code, or inside a 100/101 block */
    int block = 0;
    for (size_t i = 0; i < r1.out_len;) {
        const uint8_t *nl = memchr(r1.out + i, '\n', r1.out_len - i);
        if (!nl)
            break; /* the copy may have been cut at the buffer's end */
        size_t n = (size_t)(nl - (r1.out + i)) + 1;
        const uint8_t *l = r1.out + i;
        if (n < 2 || l[n - 2] != '\r')
            abort();
        if (block) {
            if (n == 3 && l[0] == '.')
                block = 0;
        } else {
            if (n < 6 || l[0] < '1' || l[0] > '5' || l[1] < '0' || l[1] > '9' ||
                l[2] < '0' || l[2] > '9' || l[3] != ' ')
                abort();
            block = l[0] == '1' && l[1] == '0' && (l[2] == '0' || l[2] == '1');
        }
        i += n;
    }
    return 0;
}
