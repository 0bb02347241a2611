/* libFuzzer target: the NNTP client against a hostile news server. The
 * first byte sets the options and how many articles are offered (some
 * before, some during the session); the rest is the server's bytes, fed
 * in chunks. Whatever the server says, each offered article must come
 * back exactly once (after an abort at the latest), and everything the
 * client sends is whole CRLF lines. */
#include <stdlib.h>
#include <string.h>

#include "newsfeed.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void drain_out(nf_nntpc *c)
{
    const char *p;
    size_t n = nf_nntpc_output(c, &p);
    if (n && (n < 2 || p[n - 2] != '\r' || p[n - 1] != '\n'))
        abort();
    nf_nntpc_output_done(c, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    nf_nntpc_opts o = {.no_stream = data[0] & 1, .max_inflight = 1 + (data[0] >> 1 & 3)};
    unsigned narts = 1 + (data[0] >> 3 & 7);
    data++;
    size--;
    nf_nntpc *c;
    if (nf_nntpc_new(&c, &o) != 0)
        abort();
    static const char *arts[] = {"a\r\n.b\r\n", "", ".\r\n", "x\ny", "..\r\n.\r\n"};
    unsigned offered = 0, seen_mask = 0, results = 0;
    size_t at = 0, step = 1 + size / (narts + 1);
    while (offered < narts || at < size) {
        if (offered < narts) {
            char id[32];
            id[0] = '<';
            id[1] = (char)('a' + offered);
            memcpy(id + 2, "@f>", 4);
            const char *a = arts[offered % 5];
            if (nf_nntpc_offer(c, offered, id, a, strlen(a)) != 0)
                abort();
            offered++;
        }
        size_t chunk = step < size - at ? step : size - at, used = 0;
        if (chunk && (nf_nntpc_feed(c, data + at, chunk, &used) != 0 || used > chunk))
            abort();
        at += chunk; /* the client takes whole chunks: it never pauses */
        if (used != chunk)
            abort();
        drain_out(c);
        nf_nntpc_result r;
        while (nf_nntpc_next(c, &r) == 0) {
            if (r.tag >= offered || (seen_mask >> r.tag & 1) ||
                r.outcome < NF_NNTPC_TAKEN || r.outcome > NF_NNTPC_RETRY)
                abort();
            seen_mask |= 1u << r.tag;
            results++;
        }
    }
    nf_nntpc_abort(c);
    nf_nntpc_result r;
    while (nf_nntpc_next(c, &r) == 0) {
        if (r.tag >= offered || (seen_mask >> r.tag & 1) || r.outcome != NF_NNTPC_RETRY)
            abort();
        seen_mask |= 1u << r.tag;
        results++;
    }
    if (results != offered || nf_nntpc_pending(c) != 0)
        abort();
    nf_nntpc_free(c);
    return 0;
}
