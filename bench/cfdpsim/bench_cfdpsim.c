/* bench_cfdpsim: the CFDP entity machines alone, in memory, one thread.
 *
 *   --large --size N [--loss P] [--cksum T] [--seg B]: one class 2 transfer
 *       of N bytes from entity 1 to 2 in B-byte segments (64 KiB), PDUs lost
 *       with probability P both ways, checksum type T (2, CRC-32C);
 *   --small --count N [--size B]: N class 2 transactions of B bytes (1000);
 *   --memcpy --size N: a baseline copying N bytes in 64 KiB pieces.
 * The filestore is two buffers of the file's size, both touched before the
 * clock starts (on this VM a page fault costs more than copying the page):
 * reads copy from the source, writes copy into the destination, which is
 * compared with the source byte for byte at the end. The memcpy baseline
 * copies the same bytes between the same buffers. Times are CPU seconds of
 * this process (a shared machine's other work does not count). A virtual
 * clock jumps to the next timer when no PDU is in flight. Prints one JSON
 * line; exits non-zero if a transaction did not end intact. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "cfdp.h"

static uint8_t *src, *dst;
static uint64_t fsize, bad_writes;

static int f_open(void *c, const char *p, unsigned fl, void **file)
{
    (void)c;
    (void)p;
    (void)fl;
    *file = src;
    return 0;
}

static int f_close(void *c, void *f)
{
    (void)c;
    (void)f;
    return 0;
}

static int f_read(void *c, void *f, uint64_t off, void *buf, size_t len, size_t *got)
{
    (void)c;
    (void)f;
    if (off >= fsize) {
        *got = 0;
        return 0;
    }
    if (len > fsize - off)
        len = (size_t)(fsize - off);
    memcpy(buf, src + off, len);
    *got = len;
    return 0;
}

static int f_write(void *c, void *f, uint64_t off, const void *buf, size_t len)
{
    (void)c;
    (void)f;
    if (off > fsize || len > fsize - off) {
        bad_writes++;
        return -ENOSPC;
    }
    memcpy(dst + off, buf, len);
    return 0;
}

static int f_stat(void *c, const char *p, cfdp_fs_stat *st)
{
    (void)c;
    (void)p;
    st->is_dir = 0;
    st->size = fsize;
    return 0;
}

static int f_remove(void *c, const char *p)
{
    (void)c;
    (void)p;
    return 0;
}

static int f_sync(void *c, void *f)
{
    (void)c;
    (void)f;
    return 0;
}

static const cfdp_fs_ops ops = {.open = f_open,
                                .close = f_close,
                                .read = f_read,
                                .write = f_write,
                                .sync = f_sync,
                                .stat = f_stat,
                                .remove = f_remove};

/* A ring of PDUs per direction; full means -EAGAIN. */
#define QN 64 /* 4 MiB in flight each way: a transport window */
typedef struct ring {
    uint8_t *b[QN];
    size_t len[QN];
    size_t h, n;
} ring;

static ring to2, to1;
static double loss;
static uint64_t rng = 88172645463325252ull, lost;

static int host_send(void *ctx, uint64_t to, const uint8_t *b, size_t len)
{
    (void)ctx;
    ring *r = to == 2 ? &to2 : &to1;
    if (r->n == QN)
        return -EAGAIN;
    if (loss > 0) {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        if ((double)(rng >> 11) * (1.0 / 9007199254740992.0) < loss) {
            lost++;
            return 0;
        }
    }
    size_t i = (r->h + r->n) % QN;
    if (!r->b[i] && !(r->b[i] = malloc(CFDP_PDU_MAX)))
        return -ENOMEM;
    memcpy(r->b[i], b, len);
    r->len[i] = len;
    r->n++;
    return 0;
}

static uint64_t finished_ok, finished_bad;

static void on_ind(void *ctx, const cfdp_ind *ind)
{
    (void)ctx;
    if (ind->type == CFDP_IND_FINISHED && ind->role == CFDP_ROLE_RECEIVER) {
        if (ind->condition == CFDP_COND_NO_ERROR && ind->delivery == CFDP_DATA_COMPLETE)
            finished_ok++;
        else
            finished_bad++;
    }
}

/* Minor page faults so far: the timed region should take none of the
 * buffers' (they are touched before it). */
static long faults(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Moves PDUs both ways until nothing is in flight and no timer is left,
 * jumping the clock to the next deadline when idle. */
static void run(cfdp_entity *a, cfdp_entity *b, uint64_t *clock)
{
    for (;;) {
        int moved = 0;
        while (to2.n) {
            cfdp_entity_pdu_in(b, *clock, to2.b[to2.h], to2.len[to2.h]);
            to2.h = (to2.h + 1) % QN;
            to2.n--;
            moved = 1;
        }
        cfdp_entity_transport_ready(a, *clock);
        while (to1.n) {
            cfdp_entity_pdu_in(a, *clock, to1.b[to1.h], to1.len[to1.h]);
            to1.h = (to1.h + 1) % QN;
            to1.n--;
            moved = 1;
        }
        cfdp_entity_transport_ready(b, *clock);
        if (moved || to2.n || to1.n)
            continue;
        uint64_t da = cfdp_entity_next_deadline(a), db = cfdp_entity_next_deadline(b);
        uint64_t d = da < db ? da : db;
        if (d == UINT64_MAX)
            return;
        if (d > *clock)
            *clock = d;
        cfdp_entity_advance(a, *clock);
        cfdp_entity_advance(b, *clock);
    }
}

int main(int argc, char **argv)
{
    int large = 0, small = 0, mcpy = 0;
    uint64_t size = 1000, count = 10000, seg = 65536;
    int cksum = CFDP_CKSUM_CRC32C;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : "0";
        if (!strcmp(o, "--large"))
            large = 1;
        else if (!strcmp(o, "--small"))
            small = 1;
        else if (!strcmp(o, "--memcpy"))
            mcpy = 1;
        else if (!strcmp(o, "--size"))
            size = strtoull(v, NULL, 10), i++;
        else if (!strcmp(o, "--count"))
            count = strtoull(v, NULL, 10), i++;
        else if (!strcmp(o, "--seg"))
            seg = strtoull(v, NULL, 10), i++;
        else if (!strcmp(o, "--loss"))
            loss = strtod(v, NULL), i++;
        else if (!strcmp(o, "--cksum"))
            cksum = atoi(v), i++;
        else {
            fprintf(stderr, "usage: bench_cfdpsim --large|--small|--memcpy [--size N] "
                            "[--count N] [--seg B] [--loss P] [--cksum T]\n");
            return 2;
        }
    }
    src = malloc(size ? size : 1);
    dst = malloc(size ? size : 1);
    if (!src || !dst) {
        fprintf(stderr, "bench_cfdpsim: no memory for two buffers of %llu bytes\n",
                (unsigned long long)size);
        return 1;
    }
    uint64_t x = 88172645463325252ull;
    for (uint64_t i = 0; i < size; i += 8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        memcpy(src + i, &x, size - i < 8 ? (size_t)(size - i) : 8);
    }
    memset(dst, 0xA5, size ? size : 1); /* not 0: malloc + memset 0 may become calloc */
    if (mcpy) {
        double t0 = now_s();
        for (uint64_t off = 0; off < size; off += 65536) {
            size_t n = size - off < 65536 ? (size_t)(size - off) : 65536;
            memcpy(dst + off, src + off, n);
            __asm__ volatile("" : : "r"(dst) : "memory");
        }
        double s = now_s() - t0;
        if (memcmp(src, dst, size))
            return 1;
        printf("{\"bytes\": %llu, \"seconds\": %.6f, \"gbps\": %.3f}\n",
               (unsigned long long)size, s, (double)size * 8 / s / 1e9);
        return 0;
    }
    if (!large && !small)
        return 2;
    fsize = size;
    cfdp_peer_cfg pc;
    cfdp_peer_cfg_defaults(&pc);
    pc.max_pdu = CFDP_PDU_MAX;
    pc.max_segment = (uint32_t)seg;
    pc.nak_mode = CFDP_NAK_DEFERRED;
    pc.ack_timer_ms = 1000;
    pc.nak_timer_ms = 1000;
    pc.nak_limit = 20;
    pc.ack_limit = 20;
    cfdp_fs fs = {&ops, NULL};
    cfdp_entity_cfg ca = {.id = 1, .fs = fs, .defaults = pc, .linger_ms = 1};
    cfdp_entity_cfg cb = {.id = 2, .fs = fs, .defaults = pc, .linger_ms = 1};
    cfdp_host h = {.send = host_send, .indication = on_ind};
    cfdp_entity *a, *b;
    if (cfdp_entity_new(&ca, &h, &a) || cfdp_entity_new(&cb, &h, &b))
        return 1;
    uint64_t clock = 0, n = large ? 1 : count;
    cfdp_put_req r = {.dst = 2,
                      .src_name = "src",
                      .dst_name = "dst",
                      .cls = 2,
                      .closure = -1,
                      .checksum_type = (int16_t)cksum,
                      .nak_mode = -1};
    /* the rings' slots too, before the clock */
    for (size_t i = 0; i < QN; i++) {
        if (!(to2.b[i] = malloc(CFDP_PDU_MAX)) || !(to1.b[i] = malloc(CFDP_PDU_MAX)))
            return 1;
        memset(to2.b[i], 0xA5, CFDP_PDU_MAX);
        memset(to1.b[i], 0xA5, CFDP_PDU_MAX);
    }
    long f0 = faults();
    double t0 = now_s();
    for (uint64_t i = 0; i < n; i++) {
        int rc = cfdp_put(a, clock, &r, NULL);
        if (rc) {
            fprintf(stderr, "bench_cfdpsim: put: %s\n", tern_strerror(rc));
            return 1;
        }
        if (small && (i % 256) == 255)
            run(a, b, &clock); /* in batches, as a busy user would */
    }
    run(a, b, &clock);
    double s = now_s() - t0;
    long nf = faults() - f0;
    cfdp_entity_stats sa, sb;
    cfdp_entity_stats_get(a, &sa);
    cfdp_entity_stats_get(b, &sb);
    int ok = finished_ok == n && !finished_bad && !bad_writes && !memcmp(src, dst, size);
    printf("{\"transactions\": %llu, \"bytes\": %llu, \"seconds\": %.6f, \"gbps\": %.3f, "
           "\"per_s\": %.1f, \"pdus\": %llu, \"lost\": %llu, \"naks\": %llu, \"resent\": "
           "%llu, "
           "\"virtual_ms\": %llu, \"page_faults\": %ld, \"intact\": %d}\n",
           (unsigned long long)n, (unsigned long long)(size * n), s,
           (double)size * (double)n * 8 / s / 1e9, (double)n / s,
           (unsigned long long)(sa.pdus_out + sb.pdus_out), (unsigned long long)lost,
           (unsigned long long)sb.naks_sent, (unsigned long long)sa.file_bytes_resent,
           (unsigned long long)clock, nf, ok);
    cfdp_entity_free(a);
    cfdp_entity_free(b);
    return ok ? 0 : 1;
}
