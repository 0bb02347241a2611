/* cfdp_memfs: the filestore contract, pattern files and sinks (a 5 GiB
 * sink costs memory for its gaps only), SHA-256, failure injection and the
 * space limit. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cfdp_fs.h"
#include "fs_contract.h"
#include "hex.h"
#include "tern_test.h"

#define GiB (1024ull * 1024 * 1024)
#define MiB (1024ull * 1024)

static void check_digest(const void *data, size_t len, const char *want_hex)
{
    uint8_t want[32], got[32];
    CHECK_EQ_U64(hex(want_hex, want, sizeof want), 32);
    cfdp_sha256(data, len, got);
    CHECK_EQ_MEM(got, want, 32);
}

TEST(sha256_known_vectors)
{
    /* FIPS 180-4 examples (NIST CSRC "SHA256.pdf", "SHA256_2.pdf") and the
     * million-'a' vector; 55, 56 and 64 bytes cross the padding boundaries,
     * their digests taken from Python's hashlib on this machine. */
    check_digest(
        "", 0, "e3b0c442 98fc1c14 9afbf4c8 996fb924 27ae41e4 649b934c a495991b 7852b855");
    check_digest(
        "abc", 3,
        "ba7816bf 8f01cfea 414140de 5dae2223 b00361a3 96177a9c b410ff61 f20015ad");
    const char *m2 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    check_digest(
        m2, strlen(m2),
        "248d6a61 d20638b8 e5c02693 0c3e6039 a33ce459 64ff2167 f6ecedd4 19db06c1");
    size_t n = 1000000;
    char *a = malloc(n);
    CHECK(a);
    memset(a, 'a', n);
    check_digest(
        a, n, "cdc76e5c 9914fb92 81a1c7e2 84d73e67 f1809a48 a497200e 046d39cc c7112cd0");
    check_digest(
        a, 55, "9f4390f8 d30c2dd9 2ec9f095 b65e2b9a e9b0a925 a5258e24 1c9f1e91 0f734318");
    check_digest(
        a, 56, "b35439a4 ac6f0948 b6d6f9e3 c6af0f5f 590ce20f 1bde7090 ef797068 6ec6738a");
    check_digest(
        a, 64, "ffe054fe 7ae0cb6d c65c3af9 b61d5209 f439851d b43d0ba5 997337df 154668eb");

    /* the memfs digest of a file equals the one-shot digest of its bytes */
    cfdp_memfs *m;
    cfdp_fs fs;
    CHECK_OK(cfdp_memfs_new(&m, &fs));
    CHECK_OK(cfdp_memfs_put(m, "dir/a", a, n));
    uint8_t d1[32], d2[32];
    CHECK_OK(cfdp_memfs_sha256(m, "dir/a", d1));
    cfdp_sha256(a, n, d2);
    CHECK_EQ_MEM(d1, d2, 32);
    CHECK_RC(cfdp_memfs_sha256(m, "dir", d1), -EISDIR);
    CHECK_RC(cfdp_memfs_sha256(m, "nope", d1), -ENOENT);
    cfdp_memfs_free(m);
    free(a);
}

TEST(memfs_contract)
{
    cfdp_memfs *m;
    cfdp_fs fs;
    CHECK_OK(cfdp_memfs_new(&m, &fs));
    fs_contract(&fs);
    CHECK_EQ_INT(cfdp_memfs_open_files(m), 0);
    /* only file bytes count: "a" is empty, f1moved holds 1 byte (in a
     * buffer of the first growth step), d/f2 2 */
    CHECK(cfdp_memfs_bytes_held(m) >= 3);
    CHECK(cfdp_memfs_bytes_held(m) <= 3 * 64);
    cfdp_memfs_free(m);
}

TEST(memfs_put_get_and_helpers)
{
    cfdp_memfs *m;
    cfdp_fs fs;
    CHECK_OK(cfdp_memfs_new(&m, &fs));
    CHECK_OK(cfdp_memfs_put(m, "x/y/z.txt", "hello", 5));
    const uint8_t *d;
    size_t len;
    CHECK_OK(cfdp_memfs_get(m, "x/y/z.txt", &d, &len));
    CHECK_EQ_U64(len, 5);
    CHECK_EQ_MEM(d, "hello", 5);
    CHECK_EQ_U64(cfdp_memfs_bytes_held(m), 5);
    /* replacing frees the old bytes */
    CHECK_OK(cfdp_memfs_put(m, "x/y/z.txt", "hi", 2));
    CHECK_EQ_U64(cfdp_memfs_bytes_held(m), 2);
    CHECK_OK(cfdp_memfs_put(m, "empty", NULL, 0));
    CHECK_OK(cfdp_memfs_get(m, "empty", &d, &len));
    CHECK_EQ_U64(len, 0);
    CHECK_RC(cfdp_memfs_put(m, "x/y", "a", 1), -EISDIR);
    CHECK_RC(cfdp_memfs_put(m, "x/y/z.txt/w", "a", 1), -ENOTDIR);
    CHECK_RC(cfdp_memfs_put(m, "../out", "a", 1), -EACCES);
    CHECK_RC(cfdp_memfs_get(m, "x", &d, &len), -ENOENT);
    CHECK_RC(cfdp_memfs_get(m, "none", &d, &len), -ENOENT);
    struct fs_names names;
    CHECK_EQ_STR(fs_listing(&fs, "", &names), "empty:0 x/:0");
    CHECK_OK(fs.ops->remove(fs.ctx, "x/y/z.txt"));
    CHECK_EQ_U64(cfdp_memfs_bytes_held(m), 0);
    CHECK_RC(cfdp_memfs_pattern_complete(m, "empty", 0, NULL), -EINVAL);
    cfdp_memfs_free(m);
}

TEST(memfs_pattern_file_5gib_holds_nothing)
{
    cfdp_memfs *m;
    cfdp_fs fs;
    CHECK_OK(cfdp_memfs_new(&m, &fs));
    uint64_t size = 5 * GiB + 7;
    CHECK_OK(cfdp_memfs_put_pattern(m, "big/src.bin", size, 42));
    CHECK_EQ_U64(cfdp_memfs_bytes_held(m), 0);
    cfdp_fs_stat st;
    CHECK_OK(fs.ops->stat(fs.ctx, "big/src.bin", &st));
    CHECK_EQ_U64(st.size, size);
    void *f;
    CHECK_RC(fs_open(&fs, "big/src.bin", CFDP_FS_WR, &f), -EACCES);
    CHECK_OK(fs_open(&fs, "big/src.bin", CFDP_FS_RD, &f));
    uint8_t buf[64];
    size_t got;
    /* reads at any offset, past 4 GiB included, give the pattern bytes */
    uint64_t offs[] = {0, 1, 4 * GiB - 3, 5 * GiB - 57};
    for (size_t i = 0; i < 4; i++) {
        CHECK_OK(fs.ops->read(fs.ctx, f, offs[i], buf, sizeof buf, &got));
        CHECK_EQ_U64(got, sizeof buf);
        for (size_t k = 0; k < got; k++)
            CHECK_EQ_INT(buf[k], cfdp_memfs_pattern_byte(42, offs[i] + k));
    }
    CHECK_OK(fs.ops->read(fs.ctx, f, size - 5, buf, sizeof buf, &got));
    CHECK_EQ_U64(got, 5);
    CHECK_OK(fs.ops->close(fs.ctx, f));
    /* the pattern depends on the seed and on every byte's offset: no two
     * neighbouring 8-byte words are equal, nor shifted by one byte */
    int same_seed = 0, shifted = 0;
    for (uint64_t o = 0; o < 4096; o++) {
        same_seed += cfdp_memfs_pattern_byte(42, o) == cfdp_memfs_pattern_byte(43, o);
        shifted += cfdp_memfs_pattern_byte(42, o) == cfdp_memfs_pattern_byte(42, o + 1);
    }
    CHECK_MSG(same_seed < 64 && shifted < 64, "pattern too regular: %d %d", same_seed,
              shifted);
    /* its digest is that of the same bytes held in a plain file */
    uint64_t small = 100003;
    uint8_t *copy = malloc(small);
    CHECK(copy);
    for (uint64_t o = 0; o < small; o++)
        copy[o] = cfdp_memfs_pattern_byte(9, o);
    CHECK_OK(cfdp_memfs_put_pattern(m, "p", small, 9));
    uint8_t d1[32], d2[32];
    CHECK_OK(cfdp_memfs_sha256(m, "p", d1));
    cfdp_sha256(copy, small, d2);
    CHECK_EQ_MEM(d1, d2, 32);
    free(copy);
    cfdp_memfs_free(m);
}

/* Writes seed's pattern at [off, off + len), read from src (a pattern file
 * of the same seed, whose reads fill words at a time). */
static void write_pattern(const cfdp_fs *fs, void *f, void *src, uint64_t off, size_t len)
{
    static uint8_t buf[MiB];
    for (size_t done = 0; done < len;) {
        size_t k = len - done < sizeof buf ? len - done : sizeof buf, got;
        CHECK_OK(fs->ops->read(fs->ctx, src, off + done, buf, k, &got));
        CHECK_EQ_U64(got, k);
        CHECK_OK(fs->ops->write(fs->ctx, f, off + done, buf, k));
        done += k;
    }
}

static uint64_t rnd(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

TEST(memfs_sink_5gib_costs_its_gaps)
{
    cfdp_memfs *m;
    cfdp_fs fs;
    CHECK_OK(cfdp_memfs_new(&m, &fs));
    uint64_t size = 5 * GiB + 12345, seed = 7;
    CHECK_OK(cfdp_memfs_expect_pattern(m, "in/big.bin", seed));
    CHECK_OK(cfdp_memfs_put_pattern(m, "src", size, seed));
    void *f, *src;
    CHECK_OK(fs_open(&fs, "src", CFDP_FS_RD, &src));
    CHECK_OK(fs_open(&fs, "in/big.bin",
                     CFDP_FS_WR | CFDP_FS_RD | CFDP_FS_CREAT | CFDP_FS_TRUNC, &f));
    /* 1 MiB segments at 5 GiB / 1 MiB positions, in a shuffled order, with
     * every 97th left out: the sink must hold one range per gap */
    uint64_t seg = MiB, nseg = (size + seg - 1) / seg;
    uint64_t *order = malloc(nseg * sizeof *order);
    CHECK(order);
    for (uint64_t i = 0; i < nseg; i++)
        order[i] = i;
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (uint64_t i = nseg - 1; i > 0; i--) {
        uint64_t j = rnd(&x) % (i + 1), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    uint64_t gaps = 0, written = 0;
    for (uint64_t i = 0; i < nseg; i++) {
        uint64_t s = order[i];
        if (s % 97 == 5) {
            gaps++;
            continue;
        }
        uint64_t off = s * seg, len = off + seg > size ? size - off : seg;
        write_pattern(&fs, f, src, off, (size_t)len);
        written += len;
    }
    free(order);
    cfdp_fs_stat st;
    CHECK_OK(fs.ops->stat(fs.ctx, "in/big.bin", &st));
    CHECK_EQ_U64(st.size, size);
    uint64_t mism = 99;
    CHECK_EQ_INT(cfdp_memfs_pattern_complete(m, "in/big.bin", size, &mism), 0);
    CHECK_EQ_U64(mism, 0);
    /* memory: the ranges' array, grown by doubling and halved when under a
     * quarter full, for gaps + 1 ranges: some hundreds of bytes per gap
     * at most, never anything like the 5 GiB */
    uint64_t held = cfdp_memfs_bytes_held(m);
    CHECK_MSG(held <= 8 * (gaps + 1) * 16 && held >= (gaps + 1) * 16,
              "held %llu bytes for %llu gaps", (unsigned long long)held,
              (unsigned long long)gaps);
    /* reads: pattern where written, zeros in a gap */
    uint8_t buf[16];
    size_t got;
    uint64_t gap_off = 5 * seg; /* segment 5 is a gap */
    CHECK_OK(fs.ops->read(fs.ctx, f, gap_off - 8, buf, 16, &got));
    CHECK_EQ_U64(got, 16);
    for (int k = 0; k < 8; k++)
        CHECK_EQ_INT(buf[k], cfdp_memfs_pattern_byte(seed, gap_off - 8 + k));
    for (int k = 8; k < 16; k++)
        CHECK_EQ_INT(buf[k], 0);
    /* a wrong byte fails, is counted and not kept */
    uint8_t bad = cfdp_memfs_pattern_byte(seed, gap_off) ^ 1;
    CHECK_RC(fs.ops->write(fs.ctx, f, gap_off, &bad, 1), -EIO);
    CHECK_EQ_INT(cfdp_memfs_pattern_complete(m, "in/big.bin", size, &mism), 0);
    CHECK_EQ_U64(mism, 1);
    /* fill the gaps: complete, one range left */
    for (uint64_t s = 5; s < nseg; s += 97) {
        uint64_t off = s * seg, len = off + seg > size ? size - off : seg;
        write_pattern(&fs, f, src, off, (size_t)len);
        written += len;
    }
    CHECK_EQ_U64(written, size);
    CHECK_EQ_INT(cfdp_memfs_pattern_complete(m, "in/big.bin", size, &mism), 1);
    CHECK_EQ_INT(cfdp_memfs_pattern_complete(m, "in/big.bin", size + 1, NULL), 0);
    CHECK(cfdp_memfs_bytes_held(m) <= 16 * 16); /* one range: the array shrank */
    /* truncating cuts what was written; extending leaves a hole */
    CHECK_OK(fs.ops->truncate(fs.ctx, f, 4 * GiB));
    CHECK_EQ_INT(cfdp_memfs_pattern_complete(m, "in/big.bin", 4 * GiB, NULL), 1);
    CHECK_OK(fs.ops->truncate(fs.ctx, f, 4 * GiB + 10));
    CHECK_EQ_INT(cfdp_memfs_pattern_complete(m, "in/big.bin", 4 * GiB + 10, NULL), 0);
    CHECK_OK(fs.ops->close(fs.ctx, f));
    /* still a sink after a rename, emptied by TRUNC */
    CHECK_OK(fs.ops->rename(fs.ctx, "in/big.bin", "in/final.bin"));
    CHECK_OK(fs_open(&fs, "in/final.bin", CFDP_FS_WR | CFDP_FS_TRUNC, &f));
    CHECK_EQ_INT(cfdp_memfs_pattern_complete(m, "in/final.bin", 0, NULL), 1);
    bad = cfdp_memfs_pattern_byte(seed, 0) ^ 0x80;
    CHECK_RC(fs.ops->write(fs.ctx, f, 0, &bad, 1), -EIO);
    CHECK_OK(fs.ops->close(fs.ctx, f));
    CHECK_RC(cfdp_memfs_pattern_complete(m, "in/big.bin", size, NULL), -ENOENT);
    CHECK_OK(fs.ops->close(fs.ctx, src));
    cfdp_memfs_free(m);
}

TEST(memfs_sink_ranges_merge_in_any_order)
{
    /* small sinks written in random orders and overlaps against a bitmap:
     * complete exactly when the bitmap is full; the digest equals that of
     * the pattern's bytes; the ranges never outnumber the runs */
    uint64_t x = tt_seed() | 1;
    for (int round = 0; round < 300; round++) {
        cfdp_memfs *m;
        cfdp_fs fs;
        CHECK_OK(cfdp_memfs_new(&m, &fs));
        uint64_t seed = rnd(&x), size = 1 + rnd(&x) % 3000;
        CHECK_OK(cfdp_memfs_expect_pattern(m, "s", seed));
        CHECK_OK(cfdp_memfs_put_pattern(m, "src", size, seed));
        void *f, *src;
        CHECK_OK(fs_open(&fs, "s", CFDP_FS_WR, &f));
        CHECK_OK(fs_open(&fs, "src", CFDP_FS_RD, &src));
        uint8_t have[3000] = {0};
        uint64_t filled = 0;
        while (filled < size) {
            uint64_t off = rnd(&x) % size, len = 1 + rnd(&x) % 200;
            if (off + len > size)
                len = size - off;
            write_pattern(&fs, f, src, off, (size_t)len);
            for (uint64_t k = off; k < off + len; k++)
                if (!have[k]) {
                    have[k] = 1;
                    filled++;
                }
            if (filled < size)
                CHECK_EQ_INT(cfdp_memfs_pattern_complete(m, "s", size, NULL) == 1,
                             0 /* a hole remains, or the size is short */);
        }
        CHECK_OK(fs.ops->close(fs.ctx, f));
        CHECK_OK(fs.ops->close(fs.ctx, src));
        CHECK_EQ_INT(cfdp_memfs_pattern_complete(m, "s", size, NULL), 1);
        uint8_t d1[32], d2[32], *copy = malloc(size);
        CHECK(copy);
        for (uint64_t o = 0; o < size; o++)
            copy[o] = cfdp_memfs_pattern_byte(seed, o);
        cfdp_sha256(copy, size, d1);
        CHECK_OK(cfdp_memfs_sha256(m, "s", d2));
        CHECK_EQ_MEM(d1, d2, 32);
        free(copy);
        cfdp_memfs_free(m);
    }
}

TEST(memfs_fail_injection)
{
    cfdp_memfs *m;
    cfdp_fs fs;
    CHECK_OK(cfdp_memfs_new(&m, &fs));
    void *f;
    CHECK_OK(fs_open(&fs, "a", CFDP_FS_WR | CFDP_FS_CREAT, &f));
    cfdp_memfs_fail(m, "write", 2, -ENOSPC);
    CHECK_RC(fs.ops->write(fs.ctx, f, 0, "x", 1), -ENOSPC);
    CHECK_OK(fs.ops->sync(fs.ctx, f)); /* other operations pass */
    CHECK_RC(fs.ops->write(fs.ctx, f, 0, "x", 1), -ENOSPC);
    CHECK_OK(fs.ops->write(fs.ctx, f, 0, "x", 1));
    /* a failing close still releases the handle */
    cfdp_memfs_fail(m, "close", 1, -EIO);
    CHECK_EQ_INT(cfdp_memfs_open_files(m), 1);
    CHECK_RC(fs.ops->close(fs.ctx, f), -EIO);
    CHECK_EQ_INT(cfdp_memfs_open_files(m), 0);
    /* "*" hits any operation; a named rule is used first */
    cfdp_memfs_fail(m, "*", 1, -EACCES);
    cfdp_memfs_fail(m, "stat", 1, -ENOENT);
    cfdp_fs_stat st;
    CHECK_RC(fs.ops->stat(fs.ctx, "a", &st), -ENOENT);
    CHECK_RC(fs.ops->mkdir(fs.ctx, "d"), -EACCES);
    CHECK_OK(fs.ops->mkdir(fs.ctx, "d"));
    /* a positive rc becomes -EIO; n 0 clears a rule */
    cfdp_memfs_fail(m, "rename", 1, 5);
    CHECK_RC(fs.ops->rename(fs.ctx, "a", "b"), -EIO);
    cfdp_memfs_fail(m, "remove", 3, -EPERM);
    cfdp_memfs_fail(m, "remove", 0, 0);
    CHECK_OK(fs.ops->remove(fs.ctx, "a"));
    const char *ops[] = {"open", "read", "truncate", "list", "rmdir"};
    for (int i = 0; i < 5; i++)
        cfdp_memfs_fail(m, ops[i], 1, -EIO - i);
    CHECK_RC(fs_open(&fs, "b", CFDP_FS_WR | CFDP_FS_CREAT, &f), -EIO);
    CHECK_OK(fs_open(&fs, "b", CFDP_FS_RD | CFDP_FS_WR | CFDP_FS_CREAT, &f));
    char buf[4];
    size_t got;
    CHECK_RC(fs.ops->read(fs.ctx, f, 0, buf, 4, &got), -EIO - 1);
    CHECK_RC(fs.ops->truncate(fs.ctx, f, 0), -EIO - 2);
    CHECK_OK(fs.ops->close(fs.ctx, f));
    int calls = 0;
    CHECK_RC(fs.ops->list(fs.ctx, "", fs_stop_each, &calls), -EIO - 3);
    CHECK_EQ_INT(calls, 0);
    CHECK_RC(fs.ops->rmdir(fs.ctx, "d"), -EIO - 4);
    CHECK_OK(fs.ops->rmdir(fs.ctx, "d"));
    cfdp_memfs_free(m);
}

TEST(memfs_space_limit)
{
    cfdp_memfs *m;
    cfdp_fs fs;
    CHECK_OK(cfdp_memfs_new(&m, &fs));
    cfdp_memfs_set_limit(m, 1000);
    static uint8_t big[2000];
    CHECK_RC(cfdp_memfs_put(m, "big", big, 1001), -ENOSPC);
    CHECK_OK(cfdp_memfs_put(m, "fits", big, 1000));
    CHECK_RC(cfdp_memfs_put(m, "more", big, 1), -ENOSPC);
    CHECK_OK(cfdp_memfs_put(m, "fits", big, 10)); /* a replacement frees first */
    void *f;
    CHECK_OK(fs_open(&fs, "w", CFDP_FS_WR | CFDP_FS_CREAT, &f));
    CHECK_OK(fs.ops->write(fs.ctx, f, 0, big, 500));
    CHECK_RC(fs.ops->write(fs.ctx, f, 0, big, 2000), -ENOSPC);
    CHECK_RC(fs.ops->truncate(fs.ctx, f, 4000), -ENOSPC);
    CHECK_OK(fs.ops->close(fs.ctx, f));
    CHECK(cfdp_memfs_bytes_held(m) <= 1000);
    /* a file removed while open keeps its bytes until closed */
    CHECK_OK(fs_open(&fs, "w", CFDP_FS_RD, &f));
    uint64_t before = cfdp_memfs_bytes_held(m);
    CHECK_OK(fs.ops->remove(fs.ctx, "w"));
    CHECK_EQ_U64(cfdp_memfs_bytes_held(m), before);
    CHECK_OK(fs.ops->close(fs.ctx, f));
    CHECK_EQ_U64(cfdp_memfs_bytes_held(m), 10);
    /* writes whose end passes 2^64 are refused, not wrapped */
    CHECK_OK(fs_open(&fs, "w2", CFDP_FS_WR | CFDP_FS_CREAT, &f));
    CHECK_RC(fs.ops->write(fs.ctx, f, UINT64_MAX - 1, big, 4), -EINVAL);
    CHECK_RC(fs.ops->write(fs.ctx, f, UINT64_MAX / 2, big, 4), -ENOSPC);
    CHECK_OK(fs.ops->close(fs.ctx, f));
    cfdp_memfs_free(m);
}

TEST(memfs_sink_catches_any_flipped_bit_or_shift)
{
    /* whole-line writes are checked a word at a time: a single flipped bit
     * anywhere, or the right bytes at an offset moved by 1, 8, 64 or 4096,
     * must fail; the right bytes in place must pass */
    cfdp_memfs *m;
    cfdp_fs fs;
    CHECK_OK(cfdp_memfs_new(&m, &fs));
    uint64_t seed = 99, base = 3 * MiB + 5; /* not word-aligned: every path */
    CHECK_OK(cfdp_memfs_expect_pattern(m, "s", seed));
    CHECK_OK(cfdp_memfs_put_pattern(m, "src", 8 * MiB, seed));
    void *f, *src;
    CHECK_OK(fs_open(&fs, "s", CFDP_FS_WR, &f));
    CHECK_OK(fs_open(&fs, "src", CFDP_FS_RD, &src));
    static uint8_t buf[65536];
    size_t got;
    CHECK_OK(fs.ops->read(fs.ctx, src, base, buf, sizeof buf, &got));
    CHECK_EQ_U64(got, sizeof buf);
    uint64_t x = tt_seed() | 1, mism = 0;
    for (int i = 0; i < 200; i++) {
        size_t at = (size_t)(rnd(&x) % sizeof buf);
        uint8_t bit = (uint8_t)(1u << (rnd(&x) % 8));
        buf[at] ^= bit;
        CHECK_RC(fs.ops->write(fs.ctx, f, base, buf, sizeof buf), -EIO);
        buf[at] ^= bit;
    }
    const uint64_t shifts[] = {1, 8, 64, 4096};
    for (int i = 0; i < 4; i++) {
        CHECK_RC(fs.ops->write(fs.ctx, f, base + shifts[i], buf, sizeof buf), -EIO);
        CHECK_RC(fs.ops->write(fs.ctx, f, base - shifts[i], buf, sizeof buf), -EIO);
    }
    CHECK_EQ_INT(cfdp_memfs_pattern_complete(m, "s", 0, &mism), 1); /* nothing kept */
    CHECK_EQ_U64(mism, 208);
    CHECK_OK(fs.ops->write(fs.ctx, f, base, buf, sizeof buf));
    /* the speed the simulator and benchmarks get (a figure, not a bound:
     * the machine is shared) */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    uint64_t bytes = 0;
    for (uint64_t off = 0; off + sizeof buf <= 8 * MiB; off += sizeof buf) {
        CHECK_OK(fs.ops->read(fs.ctx, src, off, buf, sizeof buf, &got));
        CHECK_OK(fs.ops->write(fs.ctx, f, off, buf, got));
        bytes += got;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    printf("# pattern read + sink write: %.2f GB/s\n", (double)bytes / s / 1e9);
    CHECK_EQ_INT(cfdp_memfs_pattern_complete(m, "s", 8 * MiB, NULL), 1);
    CHECK_OK(fs.ops->close(fs.ctx, f));
    CHECK_OK(fs.ops->close(fs.ctx, src));
    cfdp_memfs_free(m);
}
