/* libFuzzer target: sequences of TCPCL messages into one session (TCPCLv4
 * or v3), with the application acting in between and the clock advancing.
 *
 * The decoder targets (fuzz_tcpcl4, fuzz_tcpcl3) feed raw bytes, which
 * rarely get past a contact header and SESS_INIT. Here the input is a
 * program: its first byte picks the version, the side and the keepalive;
 * every following op either has the peer send one well-formed message whose
 * fields come from the input (so transfers, acknowledgements, refusals and
 * terminations happen in any order), raw bytes, or a segment header that
 * declares far more than follows; or the application sends a bundle (copied
 * or in place), answers a received one out of order, takes some output, or
 * closes; or the clock moves up to 10 minutes and the session's timers run.
 * Each op runs under the tern_fuzz.h watchdog (a few ms of CPU), and after
 * each the harness checks what the session promises: events name only
 * transfers that exist, a received bundle is within the transfer MRU, and
 * what the session holds for incomplete input stays within its MRUs (what
 * tcp_cla.c accounts against an induct's rxbuffer). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bp_tcpcl.h"
#include "tern/sdnv.h"
#include "tern_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SEG_MRU  4096
#define XFER_MRU (1u << 16)
#define MAX_TX   64 /* our transfers awaiting their answer */
#define MAX_RX   64 /* received bundles not yet answered */
#define MAX_SEND 20000

typedef struct input {
    const uint8_t *p;
    size_t n;
} input;

static unsigned byte(input *in)
{
    if (!in->n)
        return 0;
    in->n--;
    return *in->p++;
}

static uint64_t num(input *in, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v = v << 8 | byte(in);
    return v;
}

/* Copies up to n input bytes to out (zeros when the input runs out). */
static void fill(input *in, uint8_t *out, size_t n)
{
    size_t k = n < in->n ? n : in->n;
    memcpy(out, in->p, k);
    memset(out + k, 0, n - k);
    in->p += k;
    in->n -= k;
}

typedef struct tx {
    uint64_t tid;
    uint8_t *buf; /* in place: valid until its answer */
} tx;

typedef struct rx {
    uint64_t tid, len;
    uint8_t flags;
} rx;

typedef struct harness {
    int v3;
    tcpcl4_sess *s4;
    tcpcl3_sess *s3;
    int64_t now;
    tx txs[MAX_TX];
    size_t ntx;
    rx rxs[MAX_RX];
    size_t nrx;
} harness;

static int sess_event(harness *h, tcpcl4_ev *e)
{
    return h->v3 ? tcpcl3_sess_event(h->s3, e) : tcpcl4_sess_event(h->s4, e);
}

static size_t buffered(harness *h)
{
    return h->v3 ? tcpcl3_sess_buffered(h->s3) : tcpcl4_sess_buffered(h->s4);
}

static void answer(harness *h, size_t i, int refuse)
{
    rx r = h->rxs[i];
    h->rxs[i] = h->rxs[--h->nrx];
    if (h->v3) {
        if (!refuse || tcpcl3_sess_refuse(h->s3, r.tid, TCPCL4_REFUSE_NO_RESOURCES) < 0)
            tcpcl3_sess_ack(h->s3, r.tid, r.len);
    } else if (refuse) {
        tcpcl4_sess_refuse(h->s4, r.tid, TCPCL4_REFUSE_NOT_ACCEPTABLE);
    } else {
        tcpcl4_sess_ack(h->s4, r.tid, r.len, r.flags);
    }
}

/* Takes the events, checking them against what the harness knows. */
static void events(harness *h)
{
    tcpcl4_ev e;
    while (sess_event(h, &e) == 0) {
        switch (e.kind) {
        case TCPCL4_EV_BUNDLE: {
            if (e.len > XFER_MRU)
                abort(); /* above the transfer MRU we declared */
            volatile uint8_t sink = 0;
            for (size_t i = 0; i < e.len; i++)
                sink ^= e.data[i]; /* valid until the next feed */
            (void)sink;
            if (h->nrx == MAX_RX)
                answer(h, 0, 0);
            h->rxs[h->nrx++] = (rx){e.tid, e.len, e.flags};
            break;
        }
        case TCPCL4_EV_ACKED:
        case TCPCL4_EV_REFUSED: {
            size_t i;
            for (i = 0; i < h->ntx && h->txs[i].tid != e.tid; i++)
                ;
            if (i == h->ntx)
                abort(); /* an answer to a transfer we did not send, or twice */
            free(h->txs[i].buf);
            h->txs[i] = h->txs[--h->ntx];
            break;
        }
        default:
            break;
        }
    }
}

static void feed(harness *h, const uint8_t *b, size_t n, int in_place)
{
    size_t room;
    uint8_t *into;
    if (in_place && n &&
        (into = h->v3 ? tcpcl3_sess_rxbuf(h->s3, n, &room)
                      : tcpcl4_sess_rxbuf(h->s4, n, &room)) &&
        room >= n) {
        memcpy(into, b, n); /* as ternd reads: into the session's buffer */
        if (h->v3)
            tcpcl3_sess_received(h->s3, n, h->now);
        else
            tcpcl4_sess_received(h->s4, n, h->now);
    } else if (h->v3) {
        tcpcl3_sess_recv(h->s3, b, n, h->now);
    } else {
        tcpcl4_sess_recv(h->s4, b, n, h->now);
    }
    events(h);
}

/* One message of the peer, its fields from the input; its length. */
static size_t v4_message(input *in, uint8_t *m, size_t cap)
{
    unsigned kind = byte(in) % 9;
    switch (kind) {
    case 0: /* contact header, any version and flags */
        memcpy(m, "dtn!", 4);
        m[4] = byte(in) & 1 ? 4 : (uint8_t)byte(in);
        m[5] = (uint8_t)byte(in);
        return 6;
    case 1: { /* SESS_INIT */
        static const char *const ids[] = {"ipn:7.0", "dtn://peer/", "",
                                          "ipn:7.1", "dtn:none",    "ipn:1.2.0"};
        uint16_t ka = (uint16_t)(byte(in) % 4 ? byte(in) : 0);
        uint64_t seg = num(in, 1) ? num(in, 3) : 1u << 20;
        uint64_t xfer = num(in, 4);
        return tcpcl4_enc_sess_init(m, ka, seg, xfer, ids[byte(in) % 6]);
    }
    case 2: { /* XFER_SEGMENT with data from the input */
        uint8_t fl = (uint8_t)(byte(in) & 3);
        uint64_t tid = byte(in) % 8;
        size_t len = (size_t)num(in, 2) % (SEG_MRU + 1);
        uint64_t total = (fl & TCPCL4_SEG_START) && (byte(in) & 1) ? num(in, 3) : 0;
        size_t hl = tcpcl4_enc_seg_hdr(m, fl, tid, len, total);
        if (hl + len > cap)
            len = cap - hl, hl = tcpcl4_enc_seg_hdr(m, fl, tid, len, total);
        fill(in, m + hl, len);
        return hl + len;
    }
    case 3:
        return tcpcl4_enc_ack(m, (uint8_t)byte(in), byte(in) % 8, num(in, 3));
    case 4:
        return tcpcl4_enc_refuse(m, (uint8_t)(byte(in) % 8), byte(in) % 8);
    case 5:
        return tcpcl4_enc_keepalive(m);
    case 6:
        return tcpcl4_enc_term(m, (uint8_t)(byte(in) & 1), (uint8_t)(byte(in) % 6));
    case 7:
        return tcpcl4_enc_reject(m, (uint8_t)(byte(in) % 4), (uint8_t)byte(in));
    default: { /* a segment with a transfer extension list */
        uint8_t *p = m;
        *p++ = TCPCL4_XFER_SEGMENT;
        *p++ = (uint8_t)(TCPCL4_SEG_START | (byte(in) & 1));
        memset(p, 0, 8);
        p[7] = (uint8_t)(byte(in) % 8);
        p += 8;
        size_t el = byte(in) % 40;
        p[0] = p[1] = p[2] = 0;
        p[3] = (uint8_t)el;
        p += 4;
        fill(in, p, el);
        p += el;
        size_t len = byte(in);
        memset(p, 0, 8);
        p[7] = (uint8_t)len;
        p += 8;
        fill(in, p, len);
        return (size_t)(p - m) + len;
    }
    }
}

static size_t v3_message(input *in, uint8_t *m, size_t cap)
{
    unsigned kind = byte(in) % 7;
    switch (kind) {
    case 0: { /* contact header */
        static const char *const eids[] = {"ipn:7.0", "dtn://peer/", ""};
        size_t n = tcpcl3_contact_encode(m, (uint8_t)byte(in), (uint16_t)byte(in),
                                         eids[byte(in) % 3]);
        if (byte(in) % 8 == 0)
            m[4] = (uint8_t)byte(in); /* another version */
        return n;
    }
    case 1: { /* DATA_SEGMENT */
        uint8_t fl = (uint8_t)(byte(in) & 3);
        size_t len = (size_t)num(in, 2) % (SEG_MRU + 1);
        m[0] = (uint8_t)(TCPCL3_DATA_SEGMENT << 4 | fl);
        size_t hl = 1 + (size_t)tern_sdnv_encode(len, m + 1, TERN_SDNV_MAX_LEN);
        if (hl + len > cap)
            len = cap - hl;
        fill(in, m + hl, len);
        return hl + len;
    }
    case 2:
        m[0] = TCPCL3_ACK_SEGMENT << 4;
        return 1 + (size_t)tern_sdnv_encode(num(in, 3), m + 1, TERN_SDNV_MAX_LEN);
    case 3:
        m[0] = (uint8_t)(TCPCL3_REFUSE_BUNDLE << 4 | (byte(in) & 0xf));
        return 1;
    case 4:
        m[0] = TCPCL3_KEEPALIVE << 4;
        return 1;
    case 5:
        m[0] = (uint8_t)(TCPCL3_SHUTDOWN << 4 | (byte(in) & 3));
        m[1] = (uint8_t)byte(in);
        m[2] = (uint8_t)(byte(in) & 0x7f);
        return 3;
    default:
        m[0] = TCPCL3_LENGTH << 4;
        return 1 + (size_t)tern_sdnv_encode(num(in, 3), m + 1, TERN_SDNV_MAX_LEN);
    }
}

static void app_send(harness *h, input *in)
{
    size_t len = (size_t)(num(in, 2) % MAX_SEND) + 1;
    int ref = byte(in) & 1;
    if (h->ntx == MAX_TX)
        return;
    uint8_t *b = malloc(len);
    if (!b)
        return;
    memset(b, 0x5a, len);
    uint64_t tid;
    int rc = h->v3 ? tcpcl3_sess_send(h->s3, b, len, &tid)
             : ref ? tcpcl4_sess_send_ref(h->s4, b, len, &tid)
                   : tcpcl4_sess_send(h->s4, b, len, &tid);
    if (rc < 0) {
        free(b);
        return;
    }
    h->txs[h->ntx++] = (tx){tid, b};
    events(h); /* v3 without acknowledgements answers at once */
}

static void drain(harness *h, size_t most)
{
    if (h->v3) {
        size_t l;
        tcpcl3_sess_output(h->s3, &l);
        tcpcl3_sess_sent(h->s3, l < most ? l : most);
        return;
    }
    struct iovec iov[16];
    size_t total;
    tcpcl4_sess_output_iov(h->s4, iov, 16, &total);
    tcpcl4_sess_sent(h->s4, total < most ? total : most);
}

/* One input; 1 if a step was slow (lenient), see tern_fuzz_replay. */
static int run(const uint8_t *data, size_t size, int lenient)
{
    input in = {data, size};
    unsigned cfgb = byte(&in);
    harness h;
    memset(&h, 0, sizeof h);
    h.v3 = cfgb & 1;
    tcpcl4_cfg cfg = {.active = (cfgb >> 1) & 1,
                      .node = 2,
                      .keepalive_s =
                          (uint16_t)((cfgb >> 2) & 3 ? 10 * ((cfgb >> 2) & 3) : 0),
                      .seg_mru = SEG_MRU,
                      .xfer_mru = XFER_MRU};
    if (h.v3 ? tcpcl3_sess_new(&cfg, &h.s3) : tcpcl4_sess_new(&cfg, &h.s4))
        return 0;
    static uint8_t m[SEG_MRU + 128];
    tern_fuzz_watch w = {.lenient = lenient};
    tern_fuzz_watch_start(&w);
    static int trace = -1; /* TCPCL_FUZZ_TRACE=1: each step on stderr */
    if (trace < 0)
        trace = getenv("TCPCL_FUZZ_TRACE") != NULL;
    for (int step = 0; in.n && step < 400; step++) {
        unsigned op = byte(&in);
        if (trace)
            fprintf(stderr, "step %d op %u (%u) left %zu, buffered %zu, tx %zu rx %zu\n",
                    step, op % 9, op, in.n, buffered(&h), h.ntx, h.nrx);
        switch (op % 9) {
        case 0:
        case 1: { /* the peer sends one message, whole or in two reads */
            size_t n = h.v3 ? v3_message(&in, m, sizeof m) : v4_message(&in, m, sizeof m);
            size_t cut = op & 0x80 ? byte(&in) % (n + 1) : n;
            feed(&h, m, cut, op & 0x40);
            feed(&h, m + cut, n - cut, op & 0x20);
            break;
        }
        case 2: { /* raw bytes */
            size_t n = byte(&in);
            fill(&in, m, n);
            feed(&h, m, n, op & 0x40);
            break;
        }
        case 3: /* the clock moves, up to 10 minutes */
            h.now += (int64_t)(num(&in, 2) * 10);
            if (h.v3)
                tcpcl3_sess_tick(h.s3, h.now);
            else
                tcpcl4_sess_tick(h.s4, h.now);
            events(&h);
            break;
        case 4:
            app_send(&h, &in);
            break;
        case 5: /* an answer to a received bundle, in any order */
            if (h.nrx)
                answer(&h, byte(&in) % h.nrx, op & 0x80);
            events(&h);
            break;
        case 6:
            drain(&h, op & 0x80 ? (size_t)-1 : (size_t)num(&in, 2));
            break;
        case 7:
            if (h.v3)
                tcpcl3_sess_close(h.s3, (uint8_t)byte(&in));
            else
                tcpcl4_sess_close(h.s4, (uint8_t)(byte(&in) % 6));
            events(&h);
            break;
        default: { /* a segment header declaring more than follows */
            size_t hl, have = byte(&in) * 16u;
            uint64_t dl = num(&in, 3) % (2 * SEG_MRU);
            if (h.v3) {
                m[0] = (uint8_t)(TCPCL3_DATA_SEGMENT << 4 | (byte(&in) & 3));
                hl = 1 + (size_t)tern_sdnv_encode(dl, m + 1, TERN_SDNV_MAX_LEN);
            } else {
                hl =
                    tcpcl4_enc_seg_hdr(m, (uint8_t)(byte(&in) & 3), byte(&in) % 8, dl, 0);
            }
            if (have > dl)
                have = (size_t)dl;
            fill(&in, m + hl, have);
            feed(&h, m, hl + have, op & 0x40);
            break;
        }
        }
        /* what the session may hold for input not yet complete: one
         * segment (with its header and a read's worth beyond) and the
         * transfer being reassembled */
        if (buffered(&h) > SEG_MRU + XFER_MRU + 2 * sizeof m)
            abort();
        if (h.v3 ? tcpcl3_sess_answers_held(h.s3) > 4096 + MAX_RX + 8
                 : tcpcl4_sess_answers_held(h.s4) > 4096 + MAX_RX + 8)
            abort();
        if (trace)
            fprintf(stderr, "  took %.2f ms, output %zu\n",
                    (double)(tern_fuzz__cpu_ns() - w.t0) / 1e6,
                    h.v3 ? (tcpcl3_sess_output(h.s3, &(size_t){0}), (size_t)0)
                         : tcpcl4_sess_pending(h.s4));
        tern_fuzz_watch_check(&w, "TCPCL session step");
    }
    tcpcl4_sess_free(h.s4);
    tcpcl3_sess_free(h.s3);
    for (size_t i = 0; i < h.ntx; i++) /* sent in place: valid until the session went */
        free(h.txs[i].buf);
    return w.slow;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return tern_fuzz_replay(run, data, size);
}
