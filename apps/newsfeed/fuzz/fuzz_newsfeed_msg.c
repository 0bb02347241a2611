/* libFuzzer target: RFC 5536 parsing. Whatever parses must have slices
 * inside the input, a valid Message-ID and only valid newsgroup names that
 * nf_msg_group() returns; a refusal must say why. */
#include <stdlib.h>
#include <string.h>

#include "newsfeed.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int inside(nf_slice s, const char *b, size_t n)
{
    return s.n == 0 || (s.p >= b && s.p + s.n <= b + n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *b = malloc(size ? size : 1);
    memcpy(b, data, size);
    nf_msg m;
    nf_err e;
    memset(&e, 0, sizeof e);
    int rc = nf_msg_parse(b, size, &m, &e);
    if (rc) {
        if (rc > 0 || e.reason != NF_R_BAD_ARTICLE || !e.text[0])
            abort();
        free(b);
        return 0;
    }
    nf_slice all[] = {m.message_id, m.newsgroups, m.path,      m.from,
                      m.subject,    m.date,       m.references};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (!inside(all[i], b, size))
            abort();
    if (m.body_off > size || m.body_off + m.body_len != size ||
        !nf_msgid_valid(m.message_id.p, m.message_id.n) || m.ngroups == 0)
        abort();
    char g[1024];
    for (size_t i = 0; i < m.ngroups; i++)
        if (nf_msg_group(&m, i, g, sizeof g) != 0 || !nf_group_valid(g, strlen(g)))
            abort();
    if (nf_msg_group(&m, m.ngroups, g, sizeof g) != TERN_ENOTFOUND)
        abort();
    nf_slice v;
    if (nf_msg_field(&m, "Message-ID", &v) != 0 || v.p != m.message_id.p)
        abort();
    free(b);
    return 0;
}
