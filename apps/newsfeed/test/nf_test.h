/* Helpers shared by newsfeed's tests: sample articles and a trusted key. */
#ifndef NF_TEST_H
#define NF_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "newsfeed.h"
#include "tern_test.h"

/* A well-formed article with CRLF line ends; id and groups vary it. */
static inline size_t nf_t_article(char *buf, size_t cap, const char *id,
                                  const char *groups, const char *body)
{
    int n = snprintf(buf, cap,
                     "Path: pub.example!not-for-mail\r\n"
                     "From: Ada <ada@example.org>\r\n"
                     "Newsgroups: %s\r\n"
                     "Subject: On the analytical engine\r\n"
                     "Date: Thu, 03 Dec 2026 18:00:00 +0000\r\n"
                     "Message-ID: %s\r\n"
                     "References: <a@x> <b@y>\r\n"
                     "\r\n"
                     "%s",
                     groups, id, body);
    if (n < 0 || (size_t)n >= cap)
        abort();
    return (size_t)n;
}

typedef struct nf_t_key {
    uint8_t pk[NF_PUBLICKEY_BYTES], sk[NF_SECRETKEY_BYTES];
} nf_t_key;

static inline nf_t_key nf_t_keygen(void)
{
    nf_t_key k;
    CHECK_OK(nf_keygen(k.pk, k.sk));
    return k;
}

#endif
