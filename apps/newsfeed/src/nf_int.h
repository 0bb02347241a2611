/* Private helpers shared by libternnewsfeed's files. */
#ifndef NF_INT_H
#define NF_INT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "newsfeed.h"
#include "tern/ckd.h"

/** Sets err (may be NULL) and returns rc: every refusal goes through here so
 * each one carries a reason. */
int nf__fail(nf_err *err, nf_reason reason, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static inline void nf__put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}
static inline void nf__put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (24 - 8 * i));
}
static inline void nf__put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (56 - 8 * i));
}
static inline uint32_t nf__get32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline uint64_t nf__get64(const uint8_t *p)
{
    return (uint64_t)nf__get32(p) << 32 | nf__get32(p + 4);
}

/** libsodium's sodium_init(), once; -EIO if it fails. Idempotent and
 * thread-safe inside libsodium, so no state of ours. */
int nf__sodium(void);

/** True if s[0..n) is a publisher ID: 1..NF_PUBLISHER_MAX bytes of letters,
 * digits, '.', '-', '_' (it names files and appears in Path). */
bool nf__publisher_valid(const char *s, size_t n);

/** Writes data to path atomically: path.tmp, fsync, rename, fsync of the
 * directory. mode applies to the new file. */
int nf__write_atomic(const char *path, const void *data, size_t len, unsigned mode);

/** Reads a whole file of at most max bytes into a malloc'd buffer. */
int nf__read_file(const char *path, size_t max, uint8_t **out, size_t *len);

/** Trust table lookup: the public key for (publisher, key id); NULL if
 * none; *publisher_known says whether the publisher has any key. */
const uint8_t *nf__trust_find(const nf_trust *t, const char *publisher,
                              const uint8_t key_id[NF_KEYID_BYTES],
                              bool *publisher_known);

/** The seen state's file image (for save/load and the fuzz target). */
int nf__seen_encode(const nf_seen *s, uint8_t **out, size_t *out_len);
int nf__seen_decode(const uint8_t *buf, size_t len, nf_seen **out, const char **why);

/** Case-insensitive ASCII compare of s[0..n) with the NUL-terminated w. */
bool nf__ieq(const char *s, size_t n, const char *w);

#endif
