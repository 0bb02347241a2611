/* The encoder with a caller's deflate stream (the publisher keeps one:
 * deflateInit's allocation per article would cost more than the article). */
#ifndef NF_ARTICLE_INT_H
#define NF_ARTICLE_INT_H

#include <zlib.h>

#include "nf_int.h"

int nf__article_encode(const nf_article_info *info, const uint8_t sk[NF_SECRETKEY_BYTES],
                       const void *article, size_t article_len, int level, unsigned opts,
                       uint8_t *out, size_t cap, size_t *out_len, z_stream *zs);

#endif
