/* Shared by the bp* tools (docs/tools.md): number parsing, clocks, the
 * progress line, signal handling, attaching with clear errors, and the
 * test-data formats that bpdriver/bpcounter, bpping and bpsendfile/bprecvfile
 * put in their payloads (little-endian throughout).
 *
 * bpdriver data (28-byte header, then the data; the counter checks it):
 *
 *   0  magic   u32  0x44504254 ("TBPD")
 *   4  run     u32  random per bpdriver run (duplicates are counted per run)
 *   8  seq     u64  bundle number from 0
 *   16 length  u64  data bytes after the header
 *   24 crc     u32  CRC-32C of the header's first 24 bytes and the data
 *
 * bpping data (32 bytes at least; the echo sends it back unchanged):
 *
 *   0  magic   u32  0x50504254 ("TBPP")
 *   4  id      u32  random per bpping run
 *   8  seq     u64
 *   16 sent    u64  CLOCK_MONOTONIC ns at the sender
 *   24 crc     u32  CRC-32C of bytes 0..24 and of the padding after 28
 *   28 pad     u32  0, then padding to the requested size
 *
 * bpsendfile data (48-byte header, the name, then the file's bytes):
 *
 *   0  magic   u32  0x46504254 ("TBPF")
 *   4  namelen u16, version u16 (1)
 *   8  xfer    u64  transfer id (random per bpsendfile run)
 *   16 total   u64  the file's size
 *   24 offset  u64  where this piece's bytes go
 *   32 piece   u64  the split size (every piece but the last has this many bytes)
 *   40 fcrc    u32  CRC-32C of the whole file
 *   44 hcrc    u32  CRC-32C of bytes 0..44 and the name
 */
#ifndef BPTOOL_H
#define BPTOOL_H

#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tern/crc.h"
#include "tern_bp.h"

#define BT_DRV_MAGIC  0x44504254u
#define BT_DRV_HDR    28
#define BT_PING_MAGIC 0x50504254u
#define BT_PING_HDR   32
#define BT_FILE_MAGIC 0x46504254u
#define BT_FILE_HDR   48
#define BT_FILE_VER   1

/* ION's default time to live for the test tools, in seconds. */
#define BT_ION_TTL 300

/* Large payloads arrive and go at a high rate: keep freed memory in the
 * process (no mmap per payload, little trimming), so the next one reuses
 * warm pages instead of faulting fresh ones (on this kind of VM a fresh page
 * costs more than copying it) — up to 64 MiB: a bigger payload is mapped
 * and given back when freed, so one huge bundle does not stay in a
 * long-running tool. A process setting, so it lives in the tools. */
static inline void bt_tune_malloc(void)
{
    mallopt(M_MMAP_THRESHOLD, 64 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
}

static inline void bt_put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static inline void bt_put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline void bt_put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint16_t bt_get16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t bt_get32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static inline uint64_t bt_get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static inline double bt_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline uint64_t bt_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A seed that differs between runs (ids of runs and transfers). */
static inline uint64_t bt_seed(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t s = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^
                 ((uint64_t)getpid() << 40) ^ 0x9E3779B97F4A7C15ull;
    return s ? s : 1;
}

static inline uint64_t bt_rand(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

/* A whole number with an optional k/M/G suffix (powers of 1000) or Ki/Mi/Gi
 * (powers of 1024), as the ltp tools take them. */
static inline int bt_parse_size(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || s[0] == '-' || s[0] == '+' || s[0] == ' ')
        return -1;
    uint64_t m = 1;
    if (*end == 'k' || *end == 'K')
        m = 1000, end++;
    else if (*end == 'M')
        m = 1000000, end++;
    else if (*end == 'G')
        m = 1000000000, end++;
    if (*end == 'i' && m > 1) {
        m = m == 1000 ? 1024 : m == 1000000 ? 1048576 : 1073741824;
        end++;
    }
    if (*end)
        return -1;
    if (m > 1 && v > UINT64_MAX / m)
        return -1;
    *out = (uint64_t)v * m;
    return 0;
}

/* A signed whole number (ION's negative lengths and cycle counts). */
static inline int bt_parse_int(const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end)
        return -1;
    *out = v;
    return 0;
}

/* Seconds, possibly fractional ("0.2"), not negative. */
static inline int bt_parse_secs(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= 0) || v > 1e9)
        return -1;
    *out = v;
    return 0;
}

/* 12345678 -> "12.3 MB" style, for people. */
static inline const char *bt_human(double v, char *buf, size_t cap)
{
    static const char *u[] = {"B", "kB", "MB", "GB", "TB"};
    unsigned i = 0;
    while (v >= 1000 && i < 4) {
        v /= 1000;
        i++;
    }
    snprintf(buf, cap, i ? "%.1f %s" : "%.0f %s", v, u[i]);
    return buf;
}

/* ------------------------------------------------------------ signals */

/* SIGINT/SIGTERM are blocked in every thread and taken by a sigwait thread:
 * it sets bt_stop and wakes the endpoint a receive or send may be blocked on
 * with bp_interrupt (thread-safe; no endpoint: the anonymous sends). A
 * second signal ends the process at once. */
static atomic_int bt_stop;
static atomic_int bt_signo;
static pthread_mutex_t bt_wake_mu = PTHREAD_MUTEX_INITIALIZER;
static BpSAP bt_wake_sap; /* under bt_wake_mu: never interrupted after its close */
/* Readable once a signal came: wakes a tool blocked reading its input
 * (bt_getline), which bp_interrupt cannot reach. */
static int bt_stop_pipe[2] = {-1, -1};

static void *bt_sigthread(void *arg)
{
    sigset_t *ss = arg;
    for (;;) {
        int sig = 0;
        if (sigwait(ss, &sig))
            continue;
        if (atomic_exchange(&bt_stop, 1))
            _exit(128 + sig);
        atomic_store(&bt_signo, sig);
        pthread_mutex_lock(&bt_wake_mu);
        bp_interrupt(bt_wake_sap);
        pthread_mutex_unlock(&bt_wake_mu);
        if (bt_stop_pipe[1] >= 0) {
            ssize_t w;
            do
                w = write(bt_stop_pipe[1], "s", 1);
            while (w < 0 && errno == EINTR);
        }
    }
    return NULL;
}

/* Call first in main, before any other thread exists. */
static inline void bt_signals_start(void)
{
    static sigset_t ss;
    sigemptyset(&ss);
    sigaddset(&ss, SIGINT);
    sigaddset(&ss, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &ss, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (pipe2(bt_stop_pipe, O_CLOEXEC | O_NONBLOCK))
        bt_stop_pipe[0] = bt_stop_pipe[1] = -1;
    pthread_t t;
    if (pthread_create(&t, NULL, bt_sigthread, &ss) == 0)
        pthread_detach(t);
}

/* The endpoint a signal should wake (NULL before closing it). */
static inline void bt_signals_wake(BpSAP s)
{
    pthread_mutex_lock(&bt_wake_mu);
    bt_wake_sap = s;
    if (atomic_load(&bt_stop) && s)
        bp_interrupt(s);
    pthread_mutex_unlock(&bt_wake_mu);
}

static inline int bt_stopped(void)
{
    return atomic_load(&bt_stop);
}

static inline const char *bt_signame(void)
{
    return atomic_load(&bt_signo) == SIGTERM ? "SIGTERM" : "SIGINT";
}

/* One line of descriptor fd into *line (grown as getline grows it), with
 * its newline; 0 at the end of the input, -1 on a read error (errno) or,
 * with errno EINTR, once SIGINT/SIGTERM came while it waited: a tool
 * reading a terminal or a pipe that stays silent stops when told to. */
static inline ssize_t bt_getline(char **line, size_t *cap, int fd)
{
    static char buf[65536];
    static size_t pos, len;
    size_t n = 0;
    for (;;) {
        if (pos < len) {
            char *nl = memchr(buf + pos, '\n', len - pos);
            size_t take = nl ? (size_t)(nl - (buf + pos)) + 1 : len - pos;
            if (n + take + 1 > *cap) {
                size_t c = (n + take + 1) * 2;
                char *p = realloc(*line, c);
                if (!p)
                    return -1;
                *line = p;
                *cap = c;
            }
            memcpy(*line + n, buf + pos, take);
            n += take;
            pos += take;
            (*line)[n] = '\0';
            if (nl)
                return (ssize_t)n;
            continue;
        }
        struct pollfd pf[2] = {{fd, POLLIN, 0}, {bt_stop_pipe[0], POLLIN, 0}};
        if (bt_stopped() ||
            (poll(pf, bt_stop_pipe[0] >= 0 ? 2 : 1, -1) < 0 && errno != EINTR)) {
            errno = EINTR;
            return -1;
        }
        if (pf[1].revents) {
            errno = EINTR;
            return -1;
        }
        if (!pf[0].revents)
            continue;
        ssize_t r = read(fd, buf, sizeof buf);
        if (r < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            return (ssize_t)n; /* the last line may lack its newline */
        pos = 0;
        len = (size_t)r;
    }
}

/* ---------------------------------------------------- attach and open */

static inline void bt_report(const char *prog, const char *what, int rc)
{
    const char *m = bp_errmsg();
    if (m && *m) /* the library's message says it all, with the directory */
        fprintf(stderr, "%s: %s: %s\n", prog, what, m);
    else
        fprintf(stderr, "%s: %s: %s\n", prog, what, bp_strerror(rc));
    if (rc == TERN_EFULL)
        fprintf(stderr,
                "%s: the node's store is full (bundles stay there until forwarded): a "
                "larger heapWords in its ionconfig file, or i<rate>, helps\n",
                prog);
}

/* Attaches to node_dir (NULL: $TERN_NODE_DIR, else "."), saying which
 * directory and why not. 0 or 1 (the exit status). */
static inline int bt_attach(const char *prog, const char *node_dir)
{
    const char *dir = node_dir ? node_dir : getenv("TERN_NODE_DIR");
    if (!dir || !*dir)
        dir = ".";
    int rc = bp_attach(dir);
    if (rc) {
        char what[600];
        snprintf(what, sizeof what, "cannot attach to the node in '%s'%s", dir,
                 node_dir ? "" : " (set TERN_NODE_DIR or use --node DIR)");
        bt_report(prog, what, rc);
        return 1;
    }
    return 0;
}

static inline int bt_open(const char *prog, const char *eid, BpSAP *sap)
{
    int rc = bp_open(eid, sap);
    if (rc) {
        char what[400];
        snprintf(what, sizeof what, "cannot open endpoint '%s'", eid);
        bt_report(prog, what, rc);
        return 1;
    }
    return 0;
}

/* Every receiving or sending tool's start: signals handled by a thread,
 * attached to the node, own endpoint open and woken by SIGINT/SIGTERM.
 * 0, or 1 (the exit status) with the reason printed and nothing left open. */
static inline int bt_start(const char *prog, const char *node_dir, const char *own,
                           BpSAP *sap)
{
    bt_signals_start();
    if (bt_attach(prog, node_dir))
        return 1;
    if (bt_open(prog, own, sap)) {
        bp_detach();
        return 1;
    }
    bt_signals_wake(*sap);
    return 0;
}

/* ION's EIDs: ipn:N.S, dtn:none, dtn://node/service. Checked up front so a
 * typo is named before anything is attached. */
static inline int bt_eid_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n >= BP_EID_MAX)
        return 0;
    if (!strncmp(s, "ipn:", 4)) {
        const char *p = s + 4;
        char *end;
        if (*p < '0' || *p > '9')
            return 0;
        errno = 0;
        strtoull(p, &end, 10);
        if (errno || *end != '.' || end[1] < '0' || end[1] > '9')
            return 0;
        strtoull(end + 1, &end, 10);
        return !errno && *end == '\0';
    }
    if (!strcmp(s, "dtn:none"))
        return 1;
    return !strncmp(s, "dtn://", 6) && s[6] && s[6] != '/';
}

static inline int bt_check_eid(const char *prog, const char *what, const char *s)
{
    if (bt_eid_ok(s))
        return 0;
    fprintf(stderr,
            "%s: bad %s '%s' (expected ipn:NODE.SERVICE, dtn:none or "
            "dtn://node/service)\n",
            prog, what, s);
    return 2;
}

/* ------------------------------------------------------------ sending */

/* A note for progress lines while the node holds our sends for want of
 * room (it says so), else "". */
static inline const char *bt_store_note(void)
{
    return bp_node_store_full(bp_node())
               ? "  [the node's store is full: waiting for room]"
               : "";
}

/* Waits until a send on sap would not wait, in half-second steps; tick(arg)
 * runs after each, so a progress line goes on while the node is slow or
 * its store is full. 0, -EINTR once a signal came, or bp_send_ready's error. */
static inline int bt_wait_room(BpSAP sap, void (*tick)(void *), void *arg)
{
    for (;;) {
        int rc = bp_send_ready(sap, 500);
        if (rc == 0 && bt_stopped())
            rc = -EINTR;
        if (rc != -ETIMEDOUT)
            return rc;
        if (bt_stopped())
            return -EINTR;
        if (tick)
            tick(arg);
    }
}

/* The tools' final wait for the node's answers: timeout_ms, but after a
 * signal only briefly (a node whose store is full answers only as bundles
 * leave it, which may take until they expire). */
static inline int bt_flush(BpSAP sap, int timeout_ms)
{
    if (bt_stopped())
        timeout_ms = bp_node_store_full(bp_node()) ? 0 : 500;
    return bp_flush(sap, timeout_ms);
}

/* ------------------------------------------------------ progress line */

/* A line on stderr rewritten in place, twice a second, only on a terminal. */
typedef struct bt_progress {
    int on;
    double next;
    int shown;
} bt_progress;

static inline void bt_progress_init(bt_progress *p, int quiet)
{
    p->on = !quiet && isatty(2);
    p->next = bt_now() + 0.5;
    p->shown = 0;
}

static inline int bt_progress_due(bt_progress *p)
{
    if (!p->on)
        return 0;
    double t = bt_now();
    if (t < p->next)
        return 0;
    p->next = t + 0.5;
    p->shown = 1;
    return 1;
}

static inline void bt_progress_end(bt_progress *p)
{
    if (p->shown)
        fprintf(stderr, "\r\033[K");
    p->shown = 0;
}

/* ------------------------------------------------------- driver data */

typedef struct bt_drv_hdr {
    uint32_t magic, run;
    uint64_t seq, length;
    uint32_t crc;
} bt_drv_hdr;

/* Writes the header for data already at p + BT_DRV_HDR, given the data's
 * CRC-32C (computed once for a buffer that only changes its header). */
static inline void bt_drv_seal(uint8_t *p, uint32_t run, uint64_t seq, uint64_t len,
                               uint32_t data_crc)
{
    bt_put32(p, BT_DRV_MAGIC);
    bt_put32(p + 4, run);
    bt_put64(p + 8, seq);
    bt_put64(p + 16, len);
    uint32_t c = tern_crc32c(0, p, 24);
    /* Combining costs more than running over a small payload again: for
     * 1 kB bundles it was most of bpdriver's time. */
    if (len <= 65536)
        c = tern_crc32c(c, p + BT_DRV_HDR, (size_t)len);
    else
        c = tern_crc32c_combine(c, data_crc, len);
    bt_put32(p + 24, c);
}

/* 1: a driver bundle, intact; 0: not one (no magic); -1: corrupt. */
static inline int bt_drv_check(const uint8_t *p, size_t len, bt_drv_hdr *h)
{
    if (len < BT_DRV_HDR || bt_get32(p) != BT_DRV_MAGIC)
        return 0;
    h->magic = BT_DRV_MAGIC;
    h->run = bt_get32(p + 4);
    h->seq = bt_get64(p + 8);
    h->length = bt_get64(p + 16);
    h->crc = bt_get32(p + 24);
    if (h->length != len - BT_DRV_HDR)
        return -1;
    uint32_t c = tern_crc32c(0, p, 24);
    c = tern_crc32c(c, p + BT_DRV_HDR, len - BT_DRV_HDR);
    return c == h->crc ? 1 : -1;
}

/* --------------------------------------------------------- file data */

typedef struct bt_file_hdr {
    uint16_t namelen;
    uint64_t xfer, total, offset, piece;
    uint32_t fcrc;
    char name[256];
} bt_file_hdr;

/* The header and name into p (room for BT_FILE_HDR + namelen); returns its
 * length. */
static inline size_t bt_file_hdr_put(uint8_t *p, const bt_file_hdr *h)
{
    bt_put32(p, BT_FILE_MAGIC);
    bt_put16(p + 4, h->namelen);
    bt_put16(p + 6, BT_FILE_VER);
    bt_put64(p + 8, h->xfer);
    bt_put64(p + 16, h->total);
    bt_put64(p + 24, h->offset);
    bt_put64(p + 32, h->piece);
    bt_put32(p + 40, h->fcrc);
    memcpy(p + BT_FILE_HDR, h->name, h->namelen);
    uint32_t c = tern_crc32c(0, p, 44);
    c = tern_crc32c(c, p + BT_FILE_HDR, h->namelen);
    bt_put32(p + 44, c);
    return BT_FILE_HDR + h->namelen;
}

/* Parses a piece; 0 with *data_off set, or a static reason. */
static inline const char *bt_file_hdr_get(const uint8_t *p, size_t len, bt_file_hdr *h,
                                          size_t *data_off)
{
    if (len < BT_FILE_HDR || bt_get32(p) != BT_FILE_MAGIC)
        return "not a bpsendfile piece (no TBPF header)";
    h->namelen = bt_get16(p + 4);
    if (bt_get16(p + 6) != BT_FILE_VER)
        return "unknown bpsendfile header version";
    if (h->namelen == 0 || h->namelen > 255 || len < BT_FILE_HDR + (size_t)h->namelen)
        return "bad file name length";
    uint32_t c = tern_crc32c(0, p, 44);
    c = tern_crc32c(c, p + BT_FILE_HDR, h->namelen);
    if (c != bt_get32(p + 44))
        return "header CRC mismatch";
    h->xfer = bt_get64(p + 8);
    h->total = bt_get64(p + 16);
    h->offset = bt_get64(p + 24);
    h->piece = bt_get64(p + 32);
    h->fcrc = bt_get32(p + 40);
    memcpy(h->name, p + BT_FILE_HDR, h->namelen);
    h->name[h->namelen] = '\0';
    size_t off = BT_FILE_HDR + h->namelen;
    uint64_t dlen = len - off;
    if (h->offset > h->total || dlen > h->total - h->offset)
        return "piece lies outside the file";
    if (h->total && (h->piece == 0 || h->offset % h->piece))
        return "piece offset is not a multiple of the split size";
    if (h->total &&
        dlen != (h->total - h->offset < h->piece ? h->total - h->offset : h->piece))
        return "piece length does not match the split size";
    *data_off = off;
    return NULL;
}

#endif
