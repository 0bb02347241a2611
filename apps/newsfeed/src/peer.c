/* nf_publisher and nf_receiver: the article pipeline of each side, with
 * the I/O (NNTP sockets, bp_send, bp_receive) left to the daemon. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <sodium.h>

#include "article_int.h"

struct nf_publisher {
    const nf_config *cfg;
    nf_article_info info;
    uint8_t sk[NF_SECRETKEY_BYTES];
    nf_limits lim;
    int level;   /* 0: never compress */
    z_stream zs; /* reused: deflateInit per article costs more than deflate */
    bool zs_ok;
};

int nf_publisher_new(nf_publisher **out, const nf_config *cfg, uint64_t next_seq,
                     nf_err *err)
{
    if (next_seq == 0)
        return nf__fail(err, NF_R_CONFIG, -EINVAL, "sequence numbers start at 1");
    const char *id = nf_config_publisher(cfg);
    if (!id[0])
        return nf__fail(err, NF_R_CONFIG, TERN_ENOTFOUND,
                        "no publisher ID in the configuration");
    nf_publisher *p = calloc(1, sizeof *p);
    if (!p)
        return nf__fail(err, NF_R_IO, -ENOMEM, "out of memory");
    if (nf_config_secret_key(cfg, p->sk) != 0) {
        free(p);
        return nf__fail(err, NF_R_CONFIG, TERN_ENOTFOUND,
                        "no secret-key in the configuration");
    }
    p->cfg = cfg;
    snprintf(p->info.publisher, sizeof p->info.publisher, "%s", id);
    p->info.seq = next_seq;
    p->lim = nf_config_limits(cfg);
    p->level = nf_config_compression_level(cfg);
    if (deflateInit(&p->zs, p->level ? p->level : 1) != Z_OK) {
        nf_publisher_free(p);
        return nf__fail(err, NF_R_IO, -ENOMEM, "deflateInit failed");
    }
    p->zs_ok = true;
    *out = p;
    return 0;
}

void nf_publisher_free(nf_publisher *p)
{
    if (!p)
        return;
    if (p->zs_ok)
        deflateEnd(&p->zs);
    sodium_memzero(p->sk, sizeof p->sk);
    free(p);
}

size_t nf_publisher_payload_max(const nf_publisher *p)
{
    return nf_article_encoded_max(strlen(p->info.publisher), p->lim.max_article);
}

uint64_t nf_publisher_next_seq(const nf_publisher *p)
{
    return p->info.seq;
}

#define NF__SEQ_TAG "newsfeed-next-seq "

int nf_publisher_save(const nf_publisher *p, const char *path, nf_err *err)
{
    char line[64];
    int n = snprintf(line, sizeof line, NF__SEQ_TAG "%llu\n",
                     (unsigned long long)p->info.seq);
    int rc = nf__write_atomic(path, line, (size_t)n, 0644);
    if (rc)
        return nf__fail(err, NF_R_IO, rc, "%s: %s", path, tern_strerror(rc));
    return 0;
}

int nf_publisher_load_seq(const char *path, uint64_t *next_seq, nf_err *err)
{
    uint8_t *buf;
    size_t len;
    int rc = nf__read_file(path, 256, &buf, &len);
    if (rc)
        return nf__fail(err, NF_R_IO, rc, "%s: %s", path, tern_strerror(rc));
    const char *s = (const char *)buf, *tag = NF__SEQ_TAG;
    size_t tl = strlen(tag);
    uint64_t v = 0;
    size_t i = tl;
    bool ok = len > tl && memcmp(s, tag, tl) == 0;
    for (; ok && i < len && s[i] >= '0' && s[i] <= '9'; i++)
        ok = !tern_ckd_mul(&v, v, 10) && !tern_ckd_add(&v, v, (uint64_t)(s[i] - '0'));
    ok = ok && i > tl && i + 1 == len && s[i] == '\n' && v >= 1;
    free(buf);
    if (!ok)
        return nf__fail(err, NF_R_IO, TERN_ECORRUPT,
                        "%s: not a sequence file (expected \"" NF__SEQ_TAG "<n>\")",
                        path);
    *next_seq = v;
    return 0;
}

int nf_publisher_publish(nf_publisher *p, const void *article, size_t len,
                         uint64_t time_ms, uint8_t *out, size_t cap, nf_published *res,
                         nf_err *err)
{
    if (len > p->lim.max_article)
        return nf__fail(err, NF_R_TOO_BIG, TERN_ETOOBIG,
                        "article of %zu bytes exceeds max-article-size %u", len,
                        p->lim.max_article);
    nf_msg m;
    int rc = nf_msg_parse(article, len, &m, err);
    if (rc)
        return rc;
    /* The first of its newsgroups that the map knows picks the group: one
     * bundle per article, as the receivers dedupe by Message-ID anyway. */
    uint32_t imc = 0;
    char g[512];
    bool found = false;
    for (size_t i = 0; !found && i < m.ngroups; i++)
        found = nf_msg_group(&m, i, g, sizeof g) == 0 &&
                nf_config_group_for(p->cfg, g, &imc) == 0;
    if (!found)
        return nf__fail(
            err, NF_R_NO_GROUP, TERN_ENOTFOUND, "no group line maps any of %.*s",
            (int)(m.newsgroups.n > 200 ? 200 : m.newsgroups.n), m.newsgroups.p);
    if (p->info.seq == UINT64_MAX)
        return nf__fail(err, NF_R_LIMIT, TERN_EFULL, "sequence numbers exhausted");
    p->info.time_ms = time_ms;
    p->info.group = imc;
    size_t n = 0;
    rc = nf__article_encode(&p->info, p->sk, article, len, p->level ? p->level : 1,
                            p->level ? 0 : NF_ENC_NO_COMPRESS, out, cap, &n, &p->zs);
    if (rc)
        return nf__fail(err, NF_R_LIMIT, rc, "encoding failed: %s", tern_strerror(rc));
    if (res) {
        memset(res, 0, sizeof *res);
        res->seq = p->info.seq;
        res->group = imc;
        res->payload_len = n;
        res->compressed =
            n - NF_WIRE_FIXED - strlen(p->info.publisher) - NF_SIGNATURE_BYTES < len;
        snprintf(res->msgid, sizeof res->msgid, "%.*s", (int)m.message_id.n,
                 m.message_id.p);
    }
    p->info.seq++;
    return 0;
}

struct nf_receiver {
    const nf_trust *trust;
    nf_limits lim;
    nf_seen *seen;
    uint8_t *buf;
    size_t cap;
    uint64_t counts[NF_R_COUNT];
    bool pending; /* an accepted article awaits commit */
};

int nf_receiver_new(nf_receiver **out, const nf_config *cfg, nf_seen *seen)
{
    nf_receiver *r = calloc(1, sizeof *r);
    if (!r)
        return -ENOMEM;
    r->trust = nf_config_trust(cfg);
    r->lim = nf_config_limits(cfg);
    r->seen = seen;
    r->cap = r->lim.max_article;
    r->buf = malloc(r->cap ? r->cap : 1);
    if (!r->buf) {
        free(r);
        return -ENOMEM;
    }
    *out = r;
    return 0;
}

void nf_receiver_free(nf_receiver *r)
{
    if (!r)
        return;
    free(r->buf);
    free(r);
}

int nf_receiver_accept(nf_receiver *r, const uint8_t *payload, size_t len,
                       nf_received *out, nf_err *err)
{
    nf_err local;
    nf_err *e = err ? err : &local;
    memset(out, 0, sizeof *out);
    r->pending = false;
    size_t n = 0;
    int rc = nf_article_decode(r->trust, &r->lim, payload, len, &out->info, r->buf,
                               r->cap, &n, e);
    if (rc == 0)
        rc = nf_msg_parse(r->buf, n, &out->msg, e);
    if (rc == 0)
        rc = nf_seen_check(r->seen, out->info.publisher, out->info.seq,
                           out->msg.message_id.p, out->msg.message_id.n, e);
    if (rc == TERN_EEXIST && e->reason == NF_R_DUPLICATE) {
        /* A verified payload whose article we have: its number is settled
         * all the same, or it would stay a gap that is asked for forever. */
        nf_seen_mark(r->seen, out->info.publisher, out->info.seq, NULL, 0, NULL);
    }
    if (rc) {
        r->counts[(unsigned)e->reason < NF_R_COUNT ? e->reason : NF_R_MALFORMED]++;
        return rc;
    }
    out->article = r->buf;
    out->len = n;
    r->pending = true;
    return 0;
}

int nf_receiver_commit(nf_receiver *r, const nf_received *a, nf_err *err)
{
    if (!r->pending)
        return nf__fail(err, NF_R_LIMIT, TERN_ESTATE, "no accepted article to commit");
    int rc = nf_seen_mark(r->seen, a->info.publisher, a->info.seq, a->msg.message_id.p,
                          a->msg.message_id.n, err);
    r->pending = false;
    if (rc == 0)
        r->counts[NF_OK]++;
    return rc;
}

uint64_t nf_receiver_count(const nf_receiver *r, nf_reason reason)
{
    return (unsigned)reason < NF_R_COUNT ? r->counts[reason] : 0;
}
