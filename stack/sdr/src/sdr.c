/* Store handle, transactions, object access and accounting. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "sdr_int.h"

TERN_API int sdr_abi_version(void)
{
    return SDR_ABI_VERSION;
}

int sdr__buf_reserve(struct sdr_buf *b, size_t more)
{
    if (b->len + more <= b->cap)
        return 0;
    size_t nc = b->cap ? b->cap : 4096;
    while (nc < b->len + more)
        nc *= 2;
    uint8_t *p = realloc(b->p, nc);
    if (!p)
        return -ENOMEM;
    b->p = p;
    b->cap = nc;
    return 0;
}

int sdr__fail(sdr *s, int rc)
{
    if (s->in_txn && !s->txn_err)
        s->txn_err = rc;
    return rc;
}

void sdr__raw_write(sdr *s, uint64_t off, const void *src, size_t n)
{
    if (s->in_txn) {
        if (s->txn_err)
            return;
        /* Undo entry, laid out to be walked backwards: [old bytes][off][len]. */
        if (sdr__buf_reserve(&s->undo, n + 12)) {
            sdr__fail(s, -ENOMEM);
            return;
        }
        uint8_t *u = s->undo.p + s->undo.len;
        uint32_t len32 = (uint32_t)n;
        memcpy(u, s->heap + off, n);
        memcpy(u + n, &off, 8);
        memcpy(u + n + 8, &len32, 4);
        s->undo.len += n + 12;
        if (s->mode == SDR_DURABLE) {
            struct sdr_range *last = s->nranges ? &s->ranges[s->nranges - 1] : NULL;
            if (last && off >= last->off && off <= last->off + last->len) {
                if (off + n > last->off + last->len)
                    last->len = off + n - last->off;
            } else {
                if (s->nranges == s->capranges) {
                    size_t nc = s->capranges ? s->capranges * 2 : 64;
                    struct sdr_range *p = realloc(s->ranges, nc * sizeof *p);
                    if (!p) {
                        sdr__fail(s, -ENOMEM);
                        return;
                    }
                    s->ranges = p;
                    s->capranges = nc;
                }
                s->ranges[s->nranges].off = off;
                s->ranges[s->nranges].len = n;
                s->nranges++;
            }
        }
    }
    memcpy(s->heap + off, src, n);
    if (off + n > s->hwm)
        s->hwm = off + n;
}

void sdr__w64(sdr *s, uint64_t off, uint64_t v)
{
    sdr__raw_write(s, off, &v, 8);
}

static int name_ok(const char *n)
{
    size_t len = n ? strlen(n) : 0;
    if (len == 0 || len > 32)
        return 0;
    for (; *n; n++)
        if (!((*n >= 'a' && *n <= 'z') || (*n >= 'A' && *n <= 'Z') ||
              (*n >= '0' && *n <= '9') || *n == '.' || *n == '_' || *n == '-'))
            return 0;
    return 1;
}

TERN_API int sdr_open(const sdr_profile *p, sdr **out, char *why, size_t whylen)
{
    int rc;
    if (why && whylen)
        why[0] = '\0';
    if (!p || !out || !name_ok(p->name) || p->heap_size < 65536 ||
        (p->mode != SDR_MEMORY && p->mode != SDR_DURABLE) ||
        (p->commit != SDR_COMMIT_SYNC && p->commit != SDR_COMMIT_GROUP) ||
        p->reserve_pct > 90 || (p->mode == SDR_DURABLE && (!p->dir || !*p->dir))) {
        if (why)
            snprintf(why, whylen,
                     "invalid profile: name must be 1-32 of [A-Za-z0-9._-], heap size >= "
                     "65536, reserve <= 90%%, and a durable store needs a directory");
        return -EINVAL;
    }
    sdr *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    snprintf(s->name, sizeof s->name, "%s", p->name);
    if (p->dir && snprintf(s->dir, sizeof s->dir, "%s", p->dir) >= (int)sizeof s->dir) {
        rc = -ENAMETOOLONG;
        goto fail_free;
    }
    s->mode = p->mode;
    s->commit = p->commit;
    s->group_ms = p->group_ms ? p->group_ms : 10;
    s->reserve_pct = p->reserve_pct ? p->reserve_pct : 20;
    s->flags = p->flags;
    s->io = p->io ? p->io : sdr_io_posix();
    atomic_store(&s->direct, s->mode == SDR_DURABLE && s->commit == SDR_COMMIT_GROUP &&
                                 s->io->open_direct && !(s->flags & SDR_BUFFERED));
    s->heap_size = p->heap_size & ~(uint64_t)(SDR_ALIGN - 1);
    s->ckpt_threshold = p->checkpoint_bytes;
    s->log_fd = s->seg_fd = s->durable_efd = -1;
    s->next_log_fd = s->batch_fd = s->log_old_fd = -1;
    s->heap = calloc(1, s->heap_size);
    s->starts = calloc((s->heap_size / SDR_ALIGN + 63) / 64, 8);
    if (!s->heap || !s->starts) {
        rc = -ENOMEM;
        goto fail_mem;
    }
    if (s->mode == SDR_MEMORY) {
        sdr__heap_format(s);
    } else {
        rc = sdr__durable_open(s, why, whylen);
        if (rc) {
            /* Every failure gets a reason, even one no inner step named. */
            if (why && whylen && !why[0])
                snprintf(why, whylen, "store '%s' in %s: cannot open: %s", s->name,
                         s->dir, tern_strerror(rc));
            goto fail_mem;
        }
    }
    *out = s;
    return 0;
fail_mem:
    /* A failed recovery may have run transactions: drop their buffers too. */
    free(s->undo.p);
    free(s->ranges);
    free(s->flips);
    free(s->rec.p);
    free(s->starts);
    free(s->heap);
fail_free:
    free(s);
    return rc;
}

TERN_API int sdr_close(sdr *s)
{
    if (!s)
        return 0;
    if (s->in_txn)
        sdr_txn_cancel(s);
    int rc = 0;
    if (s->mode == SDR_DURABLE) {
        rc = sdr__durable_flush(s);
        sdr__durable_close(s);
    }
    free(s->undo.p);
    free(s->ranges);
    free(s->flips);
    free(s->rec.p);
    free(s->starts);
    free(s->heap);
    free(s);
    return rc;
}

TERN_API int sdr_txn_begin(sdr *s)
{
    if (s->in_txn)
        return TERN_EINTXN;
    if (s->io_err)
        return s->io_err;
    sdr__blob_idle(s);
    s->in_txn = 1;
    s->txn_err = 0;
    s->undo.len = 0;
    s->nranges = 0;
    s->nflips = 0;
    s->txn_blobs = 0;
    s->txn_drop.n = 0;
    return 0;
}

static void undo_all(sdr *s)
{
    size_t end = s->undo.len;
    while (end > 0) {
        uint64_t off;
        uint32_t len;
        memcpy(&len, s->undo.p + end - 4, 4);
        memcpy(&off, s->undo.p + end - 12, 8);
        memcpy(s->heap + off, s->undo.p + end - 12 - len, len);
        end -= (size_t)len + 12;
    }
    s->undo.len = 0;
    sdr__flip_undo(s);
}

TERN_API int sdr_txn_cancel(sdr *s)
{
    if (!s->in_txn)
        return TERN_ENOTXN;
    undo_all(s);
    s->in_txn = 0;
    s->nranges = 0;
    sdr__blob_cancel(s);
    return 0;
}

TERN_API int sdr_in_txn(const sdr *s)
{
    return s->in_txn;
}

TERN_API int sdr_txn_end(sdr *s)
{
    if (!s->in_txn)
        return TERN_ENOTXN;
    int rc = s->txn_err;
    if (rc) {
        sdr_txn_cancel(s);
        return rc;
    }
    if (s->undo.len || s->txn_blobs) {
        if (s->mode == SDR_DURABLE) {
            rc = sdr__durable_commit(s);
            if (rc) {
                sdr_txn_cancel(s);
                return rc;
            }
        } else {
            s->seq++;
            atomic_store(&s->durable_seq, s->seq);
        }
    }
    s->commits++;
    s->in_txn = 0;
    return 0;
}

TERN_API int sdr_flush(sdr *s)
{
    return s->mode == SDR_DURABLE ? sdr__durable_flush(s) : 0;
}

TERN_API uint64_t sdr_commit_seq(const sdr *s)
{
    return s->seq;
}

TERN_API uint64_t sdr_durable_seq(const sdr *s)
{
    return atomic_load(&((sdr *)s)->durable_seq);
}

TERN_API int sdr_durable_fd(const sdr *s)
{
    return s->durable_efd;
}

/* ---------------------------------------------------------------- objects */

TERN_API int sdr_alloc(sdr *s, size_t size, int cls, sdr_off *out)
{
    if (!s->in_txn)
        return TERN_ENOTXN;
    if (s->txn_err)
        return s->txn_err;
    if (cls != SDR_OPS && cls != SDR_BULK)
        return -EINVAL;
    return sdr__alloc(s, size, cls, out);
}

TERN_API int sdr_free(sdr *s, sdr_off off)
{
    if (!s->in_txn)
        return TERN_ENOTXN;
    if (s->txn_err)
        return s->txn_err;
    return sdr__free(s, off);
}

TERN_API int sdr_size(const sdr *s, sdr_off off, size_t *size)
{
    uint64_t u;
    int rc = sdr__obj_ok(s, off, &u);
    if (rc == 0)
        *size = (size_t)u;
    return rc;
}

static int check_range(const sdr *s, sdr_off off, size_t n)
{
    uint64_t hs = sdr__sb(s)->heap_size;
    if (off < SDR_SB_SIZE || off > hs || n > hs - off)
        return -EINVAL;
    if ((s->flags & SDR_BOUNDS_CHECK) && n && sdr__obj_containing(s, off, n))
        return -EINVAL;
    return 0;
}

TERN_API int sdr_write(sdr *s, sdr_off off, const void *src, size_t n)
{
    if (!s->in_txn)
        return TERN_ENOTXN;
    if (s->txn_err)
        return s->txn_err;
    int rc = check_range(s, off, n);
    if (rc)
        return rc;
    sdr__raw_write(s, off, src, n);
    return s->txn_err;
}

TERN_API int sdr_zero(sdr *s, sdr_off off, size_t n)
{
    static const uint8_t zeros[4096];
    if (!s->in_txn)
        return TERN_ENOTXN;
    if (s->txn_err)
        return s->txn_err;
    int rc = check_range(s, off, n);
    if (rc)
        return rc;
    while (n > 0 && !s->txn_err) {
        size_t k = n < sizeof zeros ? n : sizeof zeros;
        sdr__raw_write(s, off, zeros, k);
        off += k;
        n -= k;
    }
    return s->txn_err;
}

TERN_API int sdr_read(const sdr *s, sdr_off off, void *dst, size_t n)
{
    uint64_t hs = sdr__sb(s)->heap_size;
    if (off < SDR_SB_SIZE || off > hs || n > hs - off)
        return -EINVAL;
    memcpy(dst, s->heap + off, n);
    return 0;
}

TERN_API const void *sdr_peek(const sdr *s, sdr_off off, size_t n)
{
    uint64_t hs = sdr__sb(s)->heap_size;
    if (off < SDR_SB_SIZE || off > hs || n > hs - off)
        return NULL;
    return s->heap + off;
}

/* ------------------------------------------------------------ accounting */

TERN_API int sdr_get_usage(const sdr *s, sdr_usage *u)
{
    const struct sdr_sb *sb = sdr__sb(s);
    uint64_t usable = sb->heap_size - SDR_SB_SIZE;
    uint64_t reserve = usable / 100 * s->reserve_pct;
    memset(u, 0, sizeof *u);
    u->heap_size = usable;
    u->in_use = sb->in_use;
    u->free = usable - sb->in_use;
    u->largest_free = sdr__largest_free(s);
    u->reserve = reserve;
    u->bulk_avail = sb->in_use + reserve >= usable ? 0 : usable - reserve - sb->in_use;
    u->objects = sb->objects;
    u->blob_bytes = sb->blob_bytes;
    u->commits = s->commits;
    u->durable_seq = atomic_load(&((sdr *)s)->durable_seq);
    if (s->thread_running) {
        pthread_mutex_lock(&((sdr *)s)->mu);
        u->late_flushes = s->late_flushes;
        u->blob_unwritten = s->unwritten;
        u->blob_direct = atomic_load(&((sdr *)s)->direct_bytes);
        pthread_mutex_unlock(&((sdr *)s)->mu);
    }
    return 0;
}

TERN_API int sdr_check(const sdr *s, char *why, size_t whylen)
{
    if (why && whylen)
        why[0] = '\0';
    return sdr__heap_check(s, why, whylen);
}

TERN_API int sdr_mode(const sdr *s)
{
    return s->mode;
}
