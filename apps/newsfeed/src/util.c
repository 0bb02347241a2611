/* Reasons, atomic files, the trusted-key table and key files. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "nf_int.h"

int nf_abi_version(void)
{
    return NF_ABI_VERSION;
}

static const char *const nf__reason_names[NF_R_COUNT] = {
    [NF_OK] = "ok",
    [NF_R_MALFORMED] = "malformed",
    [NF_R_VERSION] = "version",
    [NF_R_UNKNOWN_KEY] = "unknown-key",
    [NF_R_BAD_SIGNATURE] = "bad-signature",
    [NF_R_TOO_BIG] = "too-big",
    [NF_R_BOMB] = "compression-bomb",
    [NF_R_BAD_ARTICLE] = "bad-article",
    [NF_R_REPLAY] = "replay",
    [NF_R_DUPLICATE] = "duplicate",
    [NF_R_NO_GROUP] = "no-group",
    [NF_R_CONFIG] = "config",
    [NF_R_IO] = "io",
    [NF_R_LIMIT] = "limit",
};

const char *nf_reason_name(nf_reason r)
{
    if ((unsigned)r >= NF_R_COUNT)
        return "unknown";
    return nf__reason_names[r];
}

int nf__fail(nf_err *err, nf_reason reason, int rc, const char *fmt, ...)
{
    if (err) {
        err->reason = reason;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->text, sizeof err->text, fmt, ap);
        va_end(ap);
    }
    return rc;
}

int nf__sodium(void)
{
    return sodium_init() < 0 ? -EIO : 0;
}

bool nf__publisher_valid(const char *s, size_t n)
{
    if (n == 0 || n > NF_PUBLISHER_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') &&
            !(c >= '0' && c <= '9') && c != '.' && c != '-' && c != '_')
            return false;
    }
    return true;
}

bool nf__ieq(const char *s, size_t n, const char *w)
{
    size_t wn = strlen(w);
    if (wn != n)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char a = (unsigned char)s[i], b = (unsigned char)w[i];
        if (a >= 'A' && a <= 'Z')
            a = (unsigned char)(a + 32);
        if (b >= 'A' && b <= 'Z')
            b = (unsigned char)(b + 32);
        if (a != b)
            return false;
    }
    return true;
}

static int nf__write_all(int fd, const void *data, size_t len)
{
    const uint8_t *p = data;
    while (len) {
        ssize_t w = write(fd, p, len);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

static int nf__fsync_dir_of(const char *path)
{
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == path)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = fsync(fd) < 0 ? -errno : 0;
    close(fd);
    return rc;
}

int nf__write_atomic(const char *path, const void *data, size_t len, unsigned mode)
{
    char tmp[4096];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp)
        return -ENAMETOOLONG;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0)
        return -errno;
    int rc = nf__write_all(fd, data, len);
    if (rc == 0 && fsync(fd) < 0)
        rc = -errno;
    if (close(fd) < 0 && rc == 0)
        rc = -errno;
    if (rc == 0 && rename(tmp, path) < 0)
        rc = -errno;
    if (rc) {
        unlink(tmp);
        return rc;
    }
    return nf__fsync_dir_of(path);
}

int nf__read_file(const char *path, size_t max, uint8_t **out, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct stat st;
    if (fstat(fd, &st) < 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return -EINVAL;
    }
    if ((uint64_t)st.st_size > max) {
        close(fd);
        return -EFBIG;
    }
    size_t n = (size_t)st.st_size;
    uint8_t *buf = malloc(n + 1);
    if (!buf) {
        close(fd);
        return -ENOMEM;
    }
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    buf[got] = 0; /* text readers may treat it as a string */
    *out = buf;
    *len = got;
    return 0;
}

/* ------------------------------------------------------------ trust table */

typedef struct nf__trusted {
    char publisher[NF_PUBLISHER_MAX + 1];
    uint8_t pk[NF_PUBLICKEY_BYTES];
} nf__trusted;

/* A small array: sites trust a handful of publishers; a linear scan of a few
 * entries is faster than hashing and has nothing to get wrong. */
struct nf_trust {
    nf__trusted *keys;
    size_t n, cap;
};

int nf_trust_new(nf_trust **out)
{
    *out = calloc(1, sizeof **out);
    return *out ? 0 : -ENOMEM;
}

void nf_trust_free(nf_trust *t)
{
    if (!t)
        return;
    free(t->keys);
    free(t);
}

int nf_trust_add(nf_trust *t, const char *publisher, const uint8_t pk[NF_PUBLICKEY_BYTES])
{
    if (!publisher || !nf__publisher_valid(publisher, strlen(publisher)))
        return -EINVAL;
    bool known;
    if (nf__trust_find(t, publisher, pk, &known))
        return TERN_EEXIST;
    if (t->n == t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 4;
        nf__trusted *k = realloc(t->keys, nc * sizeof *k);
        if (!k)
            return -ENOMEM;
        t->keys = k;
        t->cap = nc;
    }
    nf__trusted *e = &t->keys[t->n++];
    snprintf(e->publisher, sizeof e->publisher, "%s", publisher);
    memcpy(e->pk, pk, NF_PUBLICKEY_BYTES);
    return 0;
}

size_t nf_trust_count(const nf_trust *t)
{
    return t ? t->n : 0;
}

const uint8_t *nf__trust_find(const nf_trust *t, const char *publisher,
                              const uint8_t key_id[NF_KEYID_BYTES], bool *publisher_known)
{
    *publisher_known = false;
    if (!t)
        return NULL;
    for (size_t i = 0; i < t->n; i++) {
        if (strcmp(t->keys[i].publisher, publisher) != 0)
            continue;
        *publisher_known = true;
        if (memcmp(t->keys[i].pk, key_id, NF_KEYID_BYTES) == 0)
            return t->keys[i].pk;
    }
    return NULL;
}

/* ---------------------------------------------------------------- key files */

#define NF__SK_TAG "newsfeed-ed25519-secret "
#define NF__PK_TAG "newsfeed-ed25519-public "

int nf_keygen(uint8_t pk[NF_PUBLICKEY_BYTES], uint8_t sk[NF_SECRETKEY_BYTES])
{
    int rc = nf__sodium();
    if (rc)
        return rc;
    return crypto_sign_keypair(pk, sk) == 0 ? 0 : -EIO;
}

/* Creates path exclusively with mode (fchmod'ed too: the umask may only
 * ever make a file more private, but a 0600 promise should not depend on
 * it) and writes text. */
static int nf__create_excl(const char *path, unsigned mode, const char *text)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0)
        return errno == EEXIST ? TERN_EEXIST : -errno;
    int rc = fchmod(fd, mode) < 0 ? -errno : 0;
    if (rc == 0)
        rc = nf__write_all(fd, text, strlen(text));
    if (rc == 0 && fsync(fd) < 0)
        rc = -errno;
    if (close(fd) < 0 && rc == 0)
        rc = -errno;
    if (rc)
        unlink(path);
    return rc;
}

int nf_key_write_files(const char *sk_path, const char *pk_path,
                       const uint8_t pk[NF_PUBLICKEY_BYTES],
                       const uint8_t sk[NF_SECRETKEY_BYTES], nf_err *err)
{
    char hex[2 * NF_PUBLICKEY_BYTES + 1], line[128];
    /* libsodium's secret key is seed || public key: the seed is the secret. */
    sodium_bin2hex(hex, sizeof hex, sk, 32);
    snprintf(line, sizeof line, NF__SK_TAG "%s\n", hex);
    sodium_memzero(hex, sizeof hex);
    int rc = nf__create_excl(sk_path, 0600, line);
    sodium_memzero(line, sizeof line);
    if (rc)
        return nf__fail(err, NF_R_IO, rc, "%s: %s", sk_path,
                        rc == TERN_EEXIST ? "exists; not overwriting a key"
                                          : tern_strerror(rc));
    sodium_bin2hex(hex, sizeof hex, pk, NF_PUBLICKEY_BYTES);
    snprintf(line, sizeof line, NF__PK_TAG "%s\n", hex);
    rc = nf__create_excl(pk_path, 0644, line);
    if (rc) {
        unlink(sk_path);
        return nf__fail(err, NF_R_IO, rc, "%s: %s", pk_path,
                        rc == TERN_EEXIST ? "exists; not overwriting a key"
                                          : tern_strerror(rc));
    }
    return 0;
}

/* Parses "<tag><64 hex>" with optional trailing white space into 32 bytes. */
static int nf__parse_key_line(const char *text, size_t len, const char *tag,
                              uint8_t out[32])
{
    size_t tl = strlen(tag);
    if (len < tl || memcmp(text, tag, tl) != 0)
        return TERN_EMALFORMED;
    const char *h = text + tl;
    size_t hl = len - tl;
    while (hl && (h[hl - 1] == '\n' || h[hl - 1] == '\r' || h[hl - 1] == ' '))
        hl--;
    size_t bin_len = 0;
    if (hl != 64 || sodium_hex2bin(out, 32, h, hl, NULL, &bin_len, NULL) != 0 ||
        bin_len != 32)
        return TERN_EMALFORMED;
    return 0;
}

int nf_key_read_secret(const char *path, uint8_t sk[NF_SECRETKEY_BYTES], nf_err *err)
{
    int rc = nf__sodium();
    if (rc)
        return nf__fail(err, NF_R_IO, rc, "libsodium failed to initialise");
    struct stat st;
    if (stat(path, &st) < 0)
        return nf__fail(err, NF_R_IO, -errno, "%s: %s", path, strerror(errno));
    if (st.st_mode & 077)
        return nf__fail(err, NF_R_CONFIG, -EPERM,
                        "%s: secret key is accessible by group or others (mode %03o); "
                        "chmod 600 it",
                        path, (unsigned)(st.st_mode & 0777));
    uint8_t *buf;
    size_t len;
    rc = nf__read_file(path, 4096, &buf, &len);
    if (rc)
        return nf__fail(err, NF_R_IO, rc, "%s: %s", path, tern_strerror(rc));
    uint8_t seed[32], pk[32];
    rc = nf__parse_key_line((const char *)buf, len, NF__SK_TAG, seed);
    sodium_memzero(buf, len);
    free(buf);
    if (rc)
        return nf__fail(err, NF_R_CONFIG, rc,
                        "%s: not a newsfeed secret key (expected \"" NF__SK_TAG
                        "<64 hex digits>\")",
                        path);
    crypto_sign_seed_keypair(pk, sk, seed);
    sodium_memzero(seed, sizeof seed);
    return 0;
}

int nf_key_read_public(const char *path_or_hex, uint8_t pk[NF_PUBLICKEY_BYTES],
                       nf_err *err)
{
    size_t n = strlen(path_or_hex);
    size_t bin_len = 0;
    if (n == 64 && path_or_hex[0] != '/' && path_or_hex[0] != '.' &&
        sodium_hex2bin(pk, 32, path_or_hex, n, NULL, &bin_len, NULL) == 0 &&
        bin_len == 32)
        return 0;
    uint8_t *buf;
    size_t len;
    int rc = nf__read_file(path_or_hex, 4096, &buf, &len);
    if (rc)
        return nf__fail(err, NF_R_IO, rc, "%s: %s", path_or_hex, tern_strerror(rc));
    rc = nf__parse_key_line((const char *)buf, len, NF__PK_TAG, pk);
    free(buf);
    if (rc)
        return nf__fail(err, NF_R_CONFIG, rc,
                        "%s: not a newsfeed public key (expected \"" NF__PK_TAG
                        "<64 hex digits>\")",
                        path_or_hex);
    return 0;
}
