/* libFuzzer target for the store's on-disk format reader: image header and
 * chunks, log records, and recovery's checks of a heap that passed its
 * checksums but holds garbage structures.
 *
 * A valid small store is built once; each input then damages it in one of
 * four ways, chosen by its first byte:
 *   0: overwrite heap bytes inside the image, and fix the checksums, so the
 *      damage reaches recovery's structural checks;
 *   1: append a well-formed, checksummed log record whose entries come from
 *      the input (any offsets, any bytes);
 *   2: replace the image file by the input;
 *   3: append the input raw to the log.
 * Opening must fail cleanly or yield a store that passes sdr_check and can
 * be read and changed. */
#include <stdio.h>

#include "memio.h"
#include "sdr.h"
#include "tern/crc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HEAP      (64u << 10)
#define IMG_HDR   4096u
#define CHUNK     65536u
#define REC_MAGIC 0x52454354u

static struct memio base;
static uint64_t base_seq;

static sdr_profile profile(struct memio *m)
{
    sdr_profile p;
    memset(&p, 0, sizeof p);
    p.name = "f";
    p.dir = "/mem";
    p.heap_size = HEAP;
    p.mode = SDR_DURABLE;
    p.commit = SDR_COMMIT_SYNC;
    p.io = &m->io;
    return p;
}

static void build_base(void)
{
    memio_init(&base);
    sdr_profile p = profile(&base);
    sdr *s;
    if (sdr_open(&p, &s, NULL, 0))
        abort();
    sdr_off l, o, b;
    sdr_txn_begin(s);
    sdr_list_create(s, 0, &l);
    sdr_catalog_put(s, "objs", l);
    sdr_txn_end(s);
    for (int i = 0; i < 20; i++) {
        sdr_txn_begin(s);
        sdr_alloc(s, (size_t)(10 + i * 13), i % 2 ? SDR_BULK : SDR_OPS, &o);
        sdr_write(s, o, "0123456789", 10);
        sdr_list_insert_last(s, l, o, NULL);
        if (i % 5 == 0) {
            sdr_blob_put(s, "blobdata", 8, &b);
            sdr_list_insert_first(s, l, b, NULL);
        }
        sdr_txn_end(s);
    }
    sdr_usage u;
    sdr_get_usage(s, &u);
    base_seq = u.durable_seq;
    sdr_close(s);
}

static void copy_fs(struct memio *dst)
{
    memio_init(dst);
    for (int i = 0; i < MEMIO_FILES; i++) {
        if (!base.f[i].used)
            continue;
        dst->f[i] = base.f[i];
        dst->f[i].data = malloc(base.f[i].cap ? base.f[i].cap : 1);
        memcpy(dst->f[i].data, base.f[i].data, base.f[i].len);
    }
}

static void fix_image(struct memfile *img)
{
    uint64_t nchunks = (HEAP + CHUNK - 1) / CHUNK;
    for (uint64_t c = 0; c < nchunks; c++) {
        uint64_t off = c * CHUNK, n = HEAP - off < CHUNK ? HEAP - off : CHUNK;
        uint32_t crc = tern_crc32c(0, img->data + IMG_HDR + off, n);
        memcpy(img->data + IMG_HDR + HEAP + c * 4, &crc, 4);
    }
    uint32_t zero = 0, crc;
    memcpy(img->data + 12, &zero, 4); /* header CRC field: after magic and version */
    crc = tern_crc32c(0, img->data, IMG_HDR);
    memcpy(img->data + 12, &crc, 4);
}

static void append(struct memfile *f, const void *p, size_t n)
{
    memio_resize(f, f->len + n);
    memcpy(f->data + f->len - n, p, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int built;
    if (!built) {
        build_base();
        built = 1;
    }
    if (size < 1)
        return 0;
    struct memio m;
    copy_fs(&m);
    struct memfile *img = memio_find(&m, "/mem/f.img"), *log = NULL;
    for (int i = 0; i < MEMIO_FILES && !log; i++)
        if (m.f[i].used && strstr(m.f[i].path, ".log."))
            log = &m.f[i];
    if (!img || !log)
        abort();
    const uint8_t *p = data + 1;
    size_t n = size - 1;
    switch (data[0] % 4) {
    case 0:
        if (n >= 2) {
            size_t at = (size_t)(p[0] | p[1] << 8) % HEAP, k = n - 2;
            if (k > HEAP - at)
                k = HEAP - at;
            memcpy(img->data + IMG_HDR + at, p + 2, k);
            fix_image(img);
        }
        break;
    case 1: {
        /* Entries: [u16 offset][u8 length][bytes], packed into one record. */
        uint8_t rec[8192];
        size_t pos = 24;
        uint32_t nent = 0;
        while (n >= 3 && pos + 12 + 255 + 4 < sizeof rec) {
            uint64_t off = (uint64_t)(p[0] | p[1] << 8);
            uint32_t len = p[2];
            p += 3;
            n -= 3;
            if (len > n)
                len = (uint32_t)n;
            memcpy(rec + pos, &off, 8);
            memcpy(rec + pos + 8, &len, 4);
            memcpy(rec + pos + 12, p, len);
            pos += 12 + len;
            p += len;
            n -= len;
            nent++;
        }
        uint32_t magic = REC_MAGIC, total = (uint32_t)(pos + 4), flags = 0;
        uint64_t seq = base_seq + 1;
        memcpy(rec, &magic, 4);
        memcpy(rec + 4, &total, 4);
        memcpy(rec + 8, &seq, 8);
        memcpy(rec + 16, &nent, 4);
        memcpy(rec + 20, &flags, 4);
        uint32_t crc = tern_crc32c(0, rec, pos);
        memcpy(rec + pos, &crc, 4);
        append(log, rec, pos + 4);
        break;
    }
    case 2:
        img->len = 0;
        append(img, p, n);
        break;
    default:
        append(log, p, n);
        break;
    }

    sdr_profile prof = profile(&m);
    sdr *s;
    char why[512];
    if (sdr_open(&prof, &s, why, sizeof why) == 0) {
        if (sdr_check(s, why, sizeof why) != 0)
            abort(); /* open must not accept what check rejects */
        sdr_off l, o;
        uint8_t buf[512];
        if (sdr_catalog_get(s, "objs", &l) == 0)
            for (sdr_off e = sdr_list_first(s, l); e; e = sdr_list_next(s, e)) {
                sdr_off d = sdr_list_data(s, e);
                uint64_t bl;
                size_t sz;
                if (sdr_blob_len(s, d, &bl) == 0 && bl <= sizeof buf)
                    sdr_blob_read(s, d, 0, buf, (size_t)bl);
                else if (sdr_size(s, d, &sz) == 0)
                    sdr_read(s, d, buf, sz < sizeof buf ? sz : sizeof buf);
            }
        if (sdr_txn_begin(s) == 0) {
            if (sdr_alloc(s, 100, SDR_OPS, &o) == 0)
                sdr_free(s, o);
            sdr_txn_end(s);
        }
        if (sdr_check(s, why, sizeof why) != 0)
            abort();
        sdr_close(s);
    }
    for (int fd = 0; fd < 64; fd++)
        if (m.fd_file[fd] >= 0)
            abort(); /* the store leaked a descriptor */
    memio_free(&m);
    return 0;
}
