/* libFuzzer target: two CFDP entities driven by the input. A (1) puts a
 * file to B (2) at the start; the input is a list of steps, each an op byte
 * and a 16-bit length of payload:
 *   0: the payload as a PDU to A      1: the payload as a PDU to B
 *   2: advance the clock (payload: ms) 3: a user request (payload picks)
 *   4: deliver what A sent to B        5: deliver what B sent to A
 *   6: A's next PDU to B with the payload XORed into it (mutated real PDUs)
 *   7: save B's transaction and restore it into a fresh B
 *   8: how A's transport takes file data by descriptor (payload's first
 *      byte): 0 not at all (-ENOTSUP, the PDU is sent whole), 1 takes it
 *      (reads the file's bytes from the descriptor, as ternd does), 2 busy
 *      (-EAGAIN). A's filestore gives a descriptor (a memfd holding "f")
 *      for "f" opened to read, while nothing has written, renamed or
 *      removed "f". The first byte's bits 2-3 set it for the start.
 * Nothing may crash, leak or take long (tern_fuzz.h watchdog per step);
 * every refusal must be counted. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cfdp.h"
#include "cfdp_fs.h"
#include "tern_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define QMAX 64

typedef struct q {
    uint8_t *b[QMAX];
    size_t len[QMAX];
    size_t n;
} q;

static int qsend(void *ctx, uint64_t dst, const uint8_t *b, size_t len)
{
    q *x = ctx;
    (void)dst;
    if (x->n == QMAX)
        return -EAGAIN;
    x->b[x->n] = malloc(len);
    if (!x->b[x->n])
        return -ENOMEM;
    memcpy(x->b[x->n], b, len);
    x->len[x->n++] = len;
    return 0;
}

/* A's filestore: memfs, plus a descriptor for "f" (fz_fd, a memfd). */
static const cfdp_fs_ops *fz_inner;
static int fz_memfd = -1, fz_f_changed, fz_mode;
static void *fz_f_handles[16];

static int fz_open(void *ctx, const char *path, unsigned flags, void **file)
{
    int rc = fz_inner->open(ctx, path, flags, file);
    if (!strcmp(path, "f")) {
        if (flags & (CFDP_FS_WR | CFDP_FS_TRUNC))
            fz_f_changed = 1;
        for (size_t i = 0; !rc && i < 16; i++)
            if (!fz_f_handles[i]) {
                fz_f_handles[i] = *file;
                break;
            }
    }
    return rc;
}

static int fz_close(void *ctx, void *file)
{
    for (size_t i = 0; i < 16; i++)
        if (fz_f_handles[i] == file)
            fz_f_handles[i] = NULL;
    return fz_inner->close(ctx, file);
}

static int fz_rename(void *ctx, const char *from, const char *to)
{
    if (!strcmp(from, "f") || !strcmp(to, "f"))
        fz_f_changed = 1;
    return fz_inner->rename(ctx, from, to);
}

static int fz_remove(void *ctx, const char *path)
{
    if (!strcmp(path, "f"))
        fz_f_changed = 1;
    return fz_inner->remove(ctx, path);
}

static int fz_fd(void *ctx, void *file)
{
    (void)ctx;
    for (size_t i = 0; i < 16 && !fz_f_changed; i++)
        if (file && fz_f_handles[i] == file)
            return fz_memfd;
    return -1;
}

static int qsend(void *ctx, uint64_t dst, const uint8_t *b, size_t len);

/* As ternd: the PDU is head then the descriptor's bytes. */
static int qsend_file(void *ctx, uint64_t dst, const uint8_t *head, size_t hlen, int fd,
                      uint64_t off, size_t len)
{
    if (fz_mode == 0)
        return -ENOTSUP;
    if (fz_mode == 2)
        return -EAGAIN;
    if (fd != fz_memfd || hlen > 4096 || len > 65536)
        abort(); /* the entity handed over a descriptor it was not given */
    uint8_t buf[4096 + 65536];
    memcpy(buf, head, hlen);
    if (pread(fd, buf + hlen, len, (off_t)off) != (ssize_t)len)
        abort(); /* a range past the end of the file it is sending */
    return qsend(ctx, dst, buf, hlen + len);
}

static void qclear(q *x)
{
    for (size_t i = 0; i < x->n; i++)
        free(x->b[i]);
    x->n = 0;
}

static void drain(cfdp_entity *e)
{
    cfdp_ind ind;
    while (cfdp_entity_next_indication(e, &ind) == 0)
        ;
}

/* Delivers every PDU of x to e (and frees them); the sender may go on. */
static void deliver(q *x, cfdp_entity *e, cfdp_entity *from, uint64_t now)
{
    size_t n = x->n;
    uint8_t *b[QMAX];
    size_t len[QMAX];
    memcpy(b, x->b, n * sizeof *b);
    memcpy(len, x->len, n * sizeof *len);
    x->n = 0;
    for (size_t i = 0; i < n; i++) {
        cfdp_entity_pdu_in(e, now, b[i], len[i]);
        free(b[i]);
    }
    cfdp_entity_transport_ready(from, now);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uint8_t file[5000];
    for (size_t i = 0; i < sizeof file; i++)
        file[i] = (uint8_t)(i * 31 + 7);
    cfdp_memfs *ma = NULL, *mb = NULL;
    cfdp_fs fa, fb;
    if (cfdp_memfs_new(&ma, &fa) || cfdp_memfs_new(&mb, &fb))
        abort();
    cfdp_memfs_put(ma, "f", file, sizeof file);
    if (fz_memfd < 0 && ((fz_memfd = memfd_create("fuzz-f", MFD_CLOEXEC)) < 0 ||
                         pwrite(fz_memfd, file, sizeof file, 0) != (ssize_t)sizeof file))
        abort();
    static cfdp_fs_ops fz_ops;
    fz_inner = fa.ops;
    fz_ops = *fa.ops;
    fz_ops.open = fz_open;
    fz_ops.close = fz_close;
    fz_ops.rename = fz_rename;
    fz_ops.remove = fz_remove;
    fz_ops.fd = fz_fd;
    fa.ops = &fz_ops;
    fz_f_changed = 0;
    fz_mode = size ? (data[0] >> 2) % 3 : 0; /* as step 8 sets it */
    memset(fz_f_handles, 0, sizeof fz_f_handles);
    /* memfs holds plain files in full: a hostile offset inside a hostile
     * declared size would cost its RAM; a full filestore is a fault to
     * exercise instead */
    cfdp_memfs_set_limit(mb, 1u << 20);
    cfdp_peer_cfg pc;
    cfdp_peer_cfg_defaults(&pc);
    pc.max_pdu = 300;
    pc.ack_timer_ms = 1000;
    pc.nak_timer_ms = 1000;
    pc.keep_alive_ms = 700;
    pc.keep_alive_limit = 1000;
    pc.nak_mode = size ? data[0] % 4 : 0;
    q qa = {0}, qb = {0};
    cfdp_entity_cfg ca = {.id = 1, .fs = fa, .defaults = pc};
    cfdp_entity_cfg cb = {.id = 2, .fs = fb, .defaults = pc};
    cfdp_host ha = {
        .ctx = &qa, .send = qsend, .send_file = qsend_file, .queue_indications = 1};
    cfdp_host hb = {.ctx = &qb, .send = qsend, .queue_indications = 1};
    cfdp_entity *a = NULL, *b = NULL;
    if (cfdp_entity_new(&ca, &ha, &a) || cfdp_entity_new(&cb, &hb, &b))
        abort();
    cfdp_put_req r = {.dst = 2,
                      .src_name = "f",
                      .dst_name = "g",
                      .cls = 2,
                      .closure = -1,
                      .checksum_type = size > 1 ? data[1] % 4 : 0,
                      .nak_mode = -1};
    cfdp_txn_id id = {1, 1};
    cfdp_put(a, 0, &r, &id);
    uint64_t now = 0;
    tern_fuzz_watch w = {0};
    size_t pos = 2;
    while (pos + 3 <= size) {
        unsigned op = data[pos] % 9;
        size_t len = (size_t)data[pos + 1] << 8 | data[pos + 2];
        pos += 3;
        if (len > size - pos)
            len = size - pos;
        const uint8_t *p = data + pos;
        pos += len;
        tern_fuzz_watch_start(&w);
        switch (op) {
        case 0:
            cfdp_entity_pdu_in(a, now, p, len);
            break;
        case 1:
            cfdp_entity_pdu_in(b, now, p, len);
            break;
        case 2: {
            uint64_t ms = 0;
            for (size_t i = 0; i < len && i < 4; i++)
                ms = ms << 8 | p[i];
            now += ms % 3600000;
            cfdp_entity_advance(a, now);
            cfdp_entity_advance(b, now);
            break;
        }
        case 3: {
            unsigned k = len ? p[0] : 0;
            cfdp_entity *e = k & 8 ? b : a;
            switch (k % 8) {
            case 0:
                cfdp_cancel(e, now, id);
                break;
            case 1:
                cfdp_suspend(e, now, id);
                break;
            case 2:
                cfdp_resume(e, now, id);
                break;
            case 3:
                cfdp_report(e, id, NULL);
                break;
            case 4:
                cfdp_nak_now(e, now, id);
                break;
            case 5:
                cfdp_send_prompt(e, now, id, (k >> 4) & 1);
                break;
            case 6: {
                cfdp_put_req m = {.dst = 2,
                                  .cls = 1 + (k >> 4 & 1),
                                  .closure = -1,
                                  .checksum_type = -1,
                                  .nak_mode = -1};
                cfdp_put(a, now, &m, NULL);
                break;
            }
            default:
                cfdp_entity_transport_ready(e, now);
                break;
            }
            break;
        }
        case 4:
            deliver(&qa, b, a, now);
            break;
        case 5:
            deliver(&qb, a, b, now);
            break;
        case 8:
            fz_mode = len ? p[0] % 3 : 0;
            if (fz_mode != 2)
                cfdp_entity_transport_ready(a, now);
            break;
        case 6:
            if (qa.n) {
                for (size_t i = 0; i < len && i < qa.len[0]; i++)
                    qa.b[0][i] ^= p[i];
                cfdp_entity_pdu_in(b, now, qa.b[0], qa.len[0]);
                free(qa.b[0]);
                memmove(qa.b, qa.b + 1, (qa.n - 1) * sizeof *qa.b);
                memmove(qa.len, qa.len + 1, (qa.n - 1) * sizeof *qa.len);
                qa.n--;
            }
            break;
        default: {
            uint8_t buf[8192];
            size_t sl = 0;
            if (cfdp_txn_save(b, id, buf, sizeof buf, &sl) == 0) {
                cfdp_entity *nb = NULL;
                if (cfdp_entity_new(&cb, &hb, &nb))
                    abort();
                cfdp_txn_id rid;
                if (cfdp_txn_restore(nb, now, buf, sl, &rid) != 0)
                    abort(); /* what was saved must restore */
                /* and damaged saves must be refused, not crash */
                if (len && sl) {
                    buf[p[0] % sl] ^= (uint8_t)(len | 1);
                    cfdp_entity *tb = NULL;
                    if (cfdp_entity_new(&cb, &hb, &tb))
                        abort();
                    cfdp_txn_restore(tb, now, buf, sl, NULL);
                    cfdp_entity_free(tb);
                }
                cfdp_entity_free(b);
                b = nb;
            }
            break;
        }
        }
        drain(a);
        drain(b);
        tern_fuzz_watch_check(&w, "entity step");
    }
    cfdp_entity_stats st;
    cfdp_entity_stats_get(b, &st);
    uint64_t total = 0, cnt;
    for (size_t i = 0; cfdp_entity_drops(b, i, NULL, &cnt) == 0; i++)
        total += cnt;
    if (total > st.drop_malformed)
        abort();
    cfdp_entity_free(a);
    cfdp_entity_free(b);
    qclear(&qa);
    qclear(&qb);
    cfdp_memfs_free(ma);
    cfdp_memfs_free(mb);
    return 0;
}
