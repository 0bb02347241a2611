/* libFuzzer target, stateful: a sequence of steps into one bundle agent
 * (node 2, memory store) on the virtual clock. fuzz_agent feeds one input;
 * this one lets bundles meet each other and the agent's state: fragments of
 * one ADU arriving in any order, duplicates, expiry while queued or on
 * loan, results of transmissions coming late or never, a link going down,
 * reads and loans, sends, a full store.
 *
 * Input: a header byte (bit 0: status reports on; bit 1: a 128 KiB heap
 * instead of 1 MiB), then steps, each an opcode byte and its arguments:
 *
 *   0 raw bytes from a convergence layer    [len u16] [bytes]
 *   1 a bundle built from fields (decodes)  [13 bytes of fields] [payload len u16]
 *   2 the result of a held transmission     [which u8] [result u8]
 *   3 the clock advances                    [scale u8]
 *   4 an endpoint read or loan              [what u8]
 *   5 an application sends                  [6 bytes of fields]
 *   6 the outduct: up/down, ready, max payload, reforward  [what u8] [arg u16]
 *   7 a loan ends                           [which u8] [done/undo u8]
 *   8 endpoints: open, close, rule          [what u8]
 *   9 an application sends from a file, by reference  [6 bytes of fields]
 *     (a 16 KiB file of this process's; the step may change the file's
 *     time afterwards, so that bundles referring to it are lost)
 *
 * Multicast is on (node 2 a member of imc group 7 by imc:7.1, nodes 1 and
 * 3 in its region): EIDs picked from the input include imc:7.1, imc:9.1
 * and imc:0.0, so steps 1 and 5 make group bundles and petitions; a built
 * bundle may carry a destinations block (block 195) listing nodes from the
 * input, a petition's payload [group, member], or be a briefing (admin
 * record 5) for ipn:2.0. Memberships change as petitions and briefings
 * arrive and endpoints open and close.
 *
 * Every step runs under the tern_fuzz.h watchdog. Invariants: every bundle
 * the agent hands the CLA decodes; the store passes sdr_check (every 64
 * steps and at the end); afterwards the agent still sends and delivers. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bp_agent.h"
#include "bp_imc.h"
#include "tern/clock.h"
#include "tern_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_HELD   128
#define MAX_LOANS  64
#define MAX_STEPS  2000
#define DTN_T0     849320526000ULL /* ION's vector bundles' time: they are alive */
#define MAX_BUNDLE 8192

/* Transmissions the fake CLA holds until a step reports their fate. */
static struct held {
    bp_outduct *od;
    uint64_t xmit;
} held[MAX_HELD];
static size_t nheld;
static int cla_busy; /* it said -EAGAIN: the agent waits for bp_outduct_ready */

static int f_open(void *cla, bp_outduct *od, const char *name, const char *cmd,
                  void **duct)
{
    (void)cla;
    (void)name;
    (void)cmd;
    *duct = od;
    return 0;
}

static int f_send(void *cla, void *duct, const uint8_t *b, size_t len, uint64_t xmit)
{
    (void)cla;
    bp_bundle chk;
    /* what the agent sends must itself decode */
    if (bp_bundle_decode(b, len, &chk, NULL, NULL) != 0) {
        fprintf(stderr, "the agent sent a bundle that does not decode (%zu bytes)\n",
                len);
        abort();
    }
    bp_bundle_release(&chk);
    if (nheld == MAX_HELD) {
        cla_busy = 1;
        return -EAGAIN;
    }
    held[nheld++] = (struct held){duct, xmit};
    return 0;
}

static const bp_cla_ops ops = {.protocol = "f", .outduct_open = f_open, .send = f_send};

/* The input, read front to back; zeros once it runs out. */
typedef struct rd {
    const uint8_t *p;
    size_t n;
} rd;

static uint8_t u8(rd *r)
{
    if (!r->n)
        return 0;
    r->n--;
    return *r->p++;
}

static uint16_t u16(rd *r)
{
    uint16_t lo = u8(r);
    return (uint16_t)(lo | (uint16_t)u8(r) << 8);
}

/* A number spread over many orders of magnitude: small ones often, huge
 * ones (and the extremes) sometimes. */
static uint64_t wide(uint8_t b)
{
    if (b == 0xff)
        return UINT64_MAX;
    if (b == 0xfe)
        return UINT64_MAX / 2;
    return ((uint64_t)(b & 7) + 1) << (b >> 3);
}

static void eid_pick(bp_eid *e, uint8_t b)
{
    static const uint64_t nodes[] = {2, 1, 3, 9, 2, 2, 0, 4};
    uint64_t node = nodes[b & 7];
    if ((b & 0xc0) == 0xc0) { /* a group: 7 (this node's), 9, or 0 (petitions) */
        static const uint64_t groups[] = {7, 9, 0, 7};
        uint64_t g = groups[(b >> 3) & 3];
        *e = (bp_eid){.scheme = BP_SCHEME_IMC, .node = g, .service = g ? 1 : 0};
        return;
    }
    if (!node)
        bp_eid_none(e);
    else
        bp_eid_ipn(e, node, (uint64_t)(b >> 3) % 4);
}

/* Step 1: a bundle that decodes, its fields from the input. */
static void built_bundle(bp_agent *a, rd *r, uint64_t now_dtn)
{
    uint8_t f[13];
    for (int i = 0; i < 13; i++)
        f[i] = u8(r);
    size_t plen = u16(r) % 1500;
    static uint8_t payload[1500], out[MAX_BUNDLE];
    for (size_t i = 0; i < plen; i++)
        payload[i] = u8(r);
    bp_bundle b;
    memset(&b, 0, sizeof b);
    b.pri.version = 7;
    static const uint64_t flag_bits[] = {BP_FLAG_FRAGMENT,     BP_FLAG_ADMIN,
                                         BP_FLAG_NO_FRAGMENT,  BP_FLAG_ACK_REQ,
                                         BP_FLAG_STATUS_TIME,  BP_FLAG_RPT_RECEPTION,
                                         BP_FLAG_RPT_DELIVERY, BP_FLAG_RPT_DELETION};
    for (int i = 0; i < 8; i++)
        if (f[0] >> i & 1)
            b.pri.flags |= flag_bits[i];
    b.pri.crc_type = f[1] % 3;
    eid_pick(&b.pri.dest, f[2]);
    eid_pick(&b.pri.src, f[3]);
    eid_pick(&b.pri.report_to, f[4]);
    /* creation times near now (or none: then an age block says how old) */
    b.pri.ctime_ms = f[5] == 0 ? 0 : now_dtn - (uint64_t)(f[5] & 0x7f) * 1000;
    b.pri.seq = f[6] % 16; /* few sequence numbers: duplicates and siblings */
    b.pri.lifetime_ms = wide(f[7]);
    if (b.pri.flags & BP_FLAG_FRAGMENT) {
        /* pieces of a few ADUs of up to 4 KiB, in any order and overlap */
        b.pri.total_adu_len = (uint64_t)(f[8] % 4 + 1) * 1024 + (f[8] >> 6);
        b.pri.frag_offset = (uint64_t)f[9] * 16;
        if (f[9] == 0xff)
            b.pri.frag_offset = UINT64_MAX - plen / 2;
    }
    size_t nb = 0;
    if (f[10] & 1) {
        b.has_prev_node = true;
        eid_pick(&b.prev_node, f[11]);
        b.blocks[nb++] = (bp_block){.type = BP_BLOCK_PREV_NODE, .number = 2};
    }
    if ((f[10] & 2) || !b.pri.ctime_ms) {
        b.has_age = true;
        b.age_ms = wide(f[12]);
        b.blocks[nb++] = (bp_block){.type = BP_BLOCK_AGE, .number = 3};
    }
    if (f[10] & 4) {
        b.has_hop_count = true;
        b.hop_limit = f[11] % 8 + 1;
        b.hop_count = f[12] % 10;
        b.blocks[nb++] = (bp_block){.type = BP_BLOCK_HOP_COUNT, .number = 4};
    }
    if (f[10] & 8) { /* an unknown block: what its flags say happens */
        static const uint8_t unk[] = {1, 2, 3};
        b.blocks[nb++] = (bp_block){.type = 192 + (f[10] >> 5),
                                    .number = 5,
                                    .flags = (uint64_t)(f[10] >> 4) & 0x17,
                                    .data = unk,
                                    .data_len = sizeof unk};
    }
    for (size_t i = 0; i < nb; i++)
        b.blocks[i].crc_type = (uint8_t)((f[1] >> 2) % 3);
    uint8_t list[128];
    if (b.pri.dest.scheme == BP_SCHEME_IMC && (f[10] & 0x20)) {
        /* a destinations block: up to 8 of nodes 1..4 and 9, or raw bytes */
        uint64_t d[8];
        size_t nd = f[12] % 9, ll = 0;
        static const uint64_t nodes[] = {1, 2, 3, 4, 9, 2, 1, 3};
        for (size_t i = 0; i < nd; i++)
            d[i] = nodes[(f[11] + i * 3) % 8]; /* repeats too: decoded as a set */
        if (f[10] & 0x40) {
            ll = plen < sizeof list ? plen : sizeof list;
            memcpy(list, payload, ll);
        } else if (bp_imc_list_encode(d, nd, list, sizeof list, &ll)) {
            ll = 0;
        }
        b.blocks[nb++] = (bp_block){.type = BP_BLOCK_IMC_DESTS,
                                    .number = 6,
                                    .flags = 1, /* replicate in every fragment */
                                    .data = list,
                                    .data_len = ll};
    }
    uint8_t rec[256];
    const uint8_t *pl = payload;
    size_t pn = plen;
    if (b.pri.dest.scheme == BP_SCHEME_IMC && b.pri.dest.node == 0 && (f[10] & 0x80)) {
        /* a petition: [group, member] */
        size_t al;
        if (bp_imc_petition_encode((uint64_t[]){7, 9, 0, 5}[f[11] & 3], f[11] & 4, rec,
                                   sizeof rec, &al) == 0) {
            pl = rec;
            pn = al;
        }
    } else if ((b.pri.flags & BP_FLAG_ADMIN) && (f[10] & 0x80)) {
        /* a briefing: the groups of its sender */
        uint64_t g[4] = {7, 9, 11, 7};
        size_t al;
        b.pri.dest = (bp_eid){.scheme = BP_SCHEME_IPN, .node = 2, .service = 0};
        if (bp_imc_briefing_encode(g, f[12] % 5, rec, sizeof rec, &al) == 0) {
            pl = rec;
            pn = al;
        }
    }
    if ((b.pri.flags & BP_FLAG_ADMIN) && (f[10] & 0x10) && !(f[10] & 0x80)) {
        /* a status report about one of the bundles that may be around */
        bp_admin_record ar;
        memset(&ar, 0, sizeof ar);
        ar.type = BP_ADMIN_STATUS_REPORT;
        ar.sr.received.asserted = f[11] & 1;
        ar.sr.delivered.asserted = f[11] & 2;
        ar.sr.deleted.asserted = f[11] & 4;
        ar.sr.reason = f[12] % 12;
        bp_eid_ipn(&ar.sr.source, 2, 1);
        ar.sr.ctime_ms = now_dtn;
        ar.sr.seq = f[6] % 16;
        size_t al;
        if (bp_admin_encode(&ar, rec, sizeof rec, &al) == 0) {
            pl = rec;
            pn = al;
        }
    }
    b.blocks[nb++] = (bp_block){.type = BP_BLOCK_PAYLOAD,
                                .number = 1,
                                .crc_type = (uint8_t)(f[1] % 3),
                                .data = pl,
                                .data_len = pn};
    b.n_blocks = nb;
    b.definite = f[1] & 0x80;
    size_t len;
    if (bp_bundle_encode(&b, out, sizeof out, &len, NULL) == 0)
        bp_agent_receive(a, out, len);
}

/* Step 5: an application sends. */
static void app_send(bp_agent *a, rd *r)
{
    uint8_t f[6];
    for (int i = 0; i < 6; i++)
        f[i] = u8(r);
    static uint8_t payload[4096];
    size_t len = (size_t)(f[0] | (f[1] & 0x0f) << 8);
    memset(payload, f[2], len);
    bp_eid src, dest, rpt;
    if (f[3] & 1)
        bp_eid_none(&src);
    else
        bp_eid_ipn(&src, 2, 1 + (f[3] >> 1) % 2);
    eid_pick(&dest, f[4]);
    bp_send_opts o;
    bp_send_opts_init(&o);
    o.lifetime_ms = wide(f[5]);
    o.priority = f[3] >> 3 & 3;
    if (o.priority > 2)
        o.priority = 2;
    o.ordinal = f[2];
    if (f[3] & 0x20)
        o.flags |= BP_FLAG_RPT_DELIVERY | BP_FLAG_RPT_DELETION | BP_FLAG_RPT_RECEPTION;
    if (f[3] & 0x40)
        o.flags |= BP_FLAG_NO_FRAGMENT;
    if (f[3] & 0x80) {
        bp_eid_ipn(&rpt, 1, 0);
        o.report_to = &rpt;
        o.hop_limit = f[1] >> 4;
    }
    bp_agent_send(a, &src, &dest, &o, payload, len, NULL);
}

static char file_path[] = "/tmp/fuzz_agent_seq.XXXXXX";

static void file_gone(void)
{
    unlink(file_path);
}

/* Step 9: an application sends from a file, kept by reference. */
static void file_send(bp_agent *a, rd *r)
{
    static int fd = -1;
    static uint8_t head[256];
    enum { FSIZE = 16384 };
    uint8_t f[6];
    for (int i = 0; i < 6; i++)
        f[i] = u8(r);
    if (fd < 0) {
        static uint8_t bytes[FSIZE];
        for (size_t i = 0; i < FSIZE; i++)
            bytes[i] = (uint8_t)(i * 7 + 3);
        if ((fd = mkstemp(file_path)) < 0 || pwrite(fd, bytes, FSIZE, 0) != FSIZE)
            abort();
        atexit(file_gone);
        /* kept open, and on disk, for the process's life: its path is
         * what a restarted agent would reopen */
    }
    uint64_t off = (uint64_t)(f[0] | f[1] << 8) % (FSIZE + 1);
    uint64_t len = (uint64_t)(f[2] | (f[3] & 0x3f) << 8);
    if (f[3] & 0x40) /* now and then a range the file does not hold */
        len = len % (FSIZE + 1 - off);
    memset(head, f[4], sizeof head);
    bp_eid src, dest;
    bp_eid_ipn(&src, 2, 1);
    eid_pick(&dest, f[4]);
    bp_send_opts o;
    bp_send_opts_init(&o);
    o.lifetime_ms = wide(f[5]);
    if (f[5] & 1)
        o.flags |= BP_FLAG_NO_FRAGMENT;
    bp_agent_send_file(a, &src, &dest, &o, head, f[4] % sizeof head, fd, off, len, NULL);
    if (f[3] & 0x80) { /* the file changes: bundles referring to it are lost */
        static long t = 1;
        struct timespec ts[2] = {{0, UTIME_OMIT}, {t++, 0}};
        futimens(fd, ts);
    }
}

struct loan {
    uint64_t token;
};

/* One input; 1 if a step was slow (lenient), see tern_fuzz_replay. */
static int run(const uint8_t *data, size_t size, int lenient)
{
    if (size < 1)
        return 0;
    rd in = {data + 1, size - 1};
    uint8_t hdr = data[0];
    nheld = 0;
    cla_busy = 0;
    tern_clock *clk;
    tern_loop *loop;
    sdr *store;
    bp_agent *a;
    if (tern_clock_virtual_new(DTN_T0, &clk) || tern_loop_new(clk, &loop))
        abort();
    sdr_profile p = {
        .name = "fz", .heap_size = hdr & 2 ? 128u << 10 : 1u << 20, .mode = SDR_MEMORY};
    if (sdr_open(&p, &store, NULL, 0))
        abort();
    bp_agent_cfg cfg = {.node = 2,
                        .store = store,
                        .dedup_max = 64,
                        .small_max = 512,
                        .status_reports = hdr & 1};
    if (bp_agent_new(loop, &cfg, NULL, NULL, &a))
        abort();
    bp_eid ep1, ep2, ep3, admin;
    bp_eid_ipn(&ep1, 2, 1);
    bp_eid_ipn(&ep2, 2, 2);
    bp_eid_ipn(&ep3, 2, 3);
    bp_eid_ipn(&admin, 2, 0);
    if (bp_endpoint_add(a, &ep1, BP_RECV_QUEUE) ||
        bp_endpoint_add(a, &ep2, BP_RECV_DISCARD) || bp_cla_register(a, &ops, NULL) ||
        bp_outduct_add(a, "f", "x", "", 0) || bp_egress_plan_add(a, 1, "f", "x") ||
        bp_egress_plan_add(a, 3, "f", "x"))
        abort();
    bp_eid grp = {.scheme = BP_SCHEME_IMC, .node = 7, .service = 1};
    bp_agent_imc_enable(a);
    if (bp_endpoint_add(a, &grp, BP_RECV_QUEUE) || bp_agent_imc_node_add(a, 1) ||
        bp_agent_imc_node_add(a, 3))
        abort();
    bp_outduct *od = bp_outduct_find(a, "f", "x");
    const bp_eid *eps[] = {&ep1, &ep2, &ep3, &admin, &grp};
    uint64_t loans[MAX_LOANS];
    size_t nloans = 0;
    tern_fuzz_watch w = {.lenient = lenient};
    char why[256];
    for (int step = 0; in.n && step < MAX_STEPS; step++) {
        uint8_t op = u8(&in) % 10;
        tern_fuzz_watch_start(&w);
        switch (op) {
        case 0: {
            size_t len = u16(&in) % 4096;
            if (len > in.n)
                len = in.n;
            bp_agent_receive(a, in.p, len);
            in.p += len;
            in.n -= len;
            tern_fuzz_watch_check(&w, "raw bytes received");
            break;
        }
        case 1:
            built_bundle(a, &in, tern_clock_dtn_ms(clk));
            tern_fuzz_watch_check(&w, "a built bundle received");
            break;
        case 2: {
            uint8_t which = u8(&in), res = u8(&in) % 3;
            if (nheld) {
                size_t i = which % nheld;
                struct held h = held[i];
                held[i] = held[--nheld];
                bp_outduct_result(h.od, h.xmit, res);
            }
            tern_fuzz_watch_check(&w, "a transmission's result");
            break;
        }
        case 3: {
            uint8_t s = u8(&in);
            uint64_t ms = s < 200 ? (uint64_t)s * 10 : (uint64_t)1000 << (s - 200) % 28;
            tern_loop_run_until(loop, tern_loop_now(loop) + ms * 1000000ull);
            tern_fuzz_watch_check(&w, "a clock advance");
            break;
        }
        case 4: {
            uint8_t what = u8(&in);
            const bp_eid *e = eps[what % 5];
            bp_delivery d;
            if (what & 4) {
                uint64_t tok;
                if (nloans < MAX_LOANS && bp_agent_recv_lend(a, e, &d, &tok) == 0) {
                    loans[nloans++] = tok;
                    bp_delivery_release(&d);
                }
            } else if (bp_agent_recv(a, e, &d) == 0) {
                bp_delivery_release(&d);
            }
            tern_fuzz_watch_check(&w, "an endpoint read");
            break;
        }
        case 5:
            app_send(a, &in);
            tern_fuzz_watch_check(&w, "an application's send");
            break;
        case 9:
            file_send(a, &in);
            tern_fuzz_watch_check(&w, "an application's send from a file");
            break;
        case 6: {
            uint8_t what = u8(&in);
            uint16_t arg = u16(&in);
            switch (what % 5) {
            case 0:
                bp_outduct_set_up(od, false);
                break;
            case 1:
                bp_outduct_set_up(od, true);
                break;
            case 2:
                if (cla_busy && nheld < MAX_HELD) {
                    cla_busy = 0;
                    bp_outduct_ready(od);
                }
                break;
            case 3:
                bp_outduct_set_max_payload(od, arg % 2048);
                break;
            default:
                bp_outduct_reforward(od);
                break;
            }
            tern_fuzz_watch_check(&w, "an outduct change");
            break;
        }
        case 7: {
            uint8_t which = u8(&in), how = u8(&in);
            if (nloans) {
                size_t i = which % nloans;
                uint64_t tok = loans[i];
                loans[i] = loans[--nloans];
                if (how & 1)
                    bp_agent_recv_done(a, tok);
                else
                    bp_agent_recv_undo(a, tok);
            }
            tern_fuzz_watch_check(&w, "a loan's end");
            break;
        }
        default: {
            uint8_t what = u8(&in);
            const bp_eid *e = what & 0x80 ? &grp : eps[what % 3];
            switch ((what >> 2) % 4) {
            case 0:
                bp_endpoint_open(a, e);
                break;
            case 1:
                bp_endpoint_close(a, e);
                break;
            case 2:
                bp_endpoint_change(a, e, BP_RECV_QUEUE);
                break;
            default:
                bp_endpoint_change(a, e, BP_RECV_DISCARD);
                break;
            }
            tern_fuzz_watch_check(&w, "an endpoint change");
            break;
        }
        }
        if (step % 64 == 63 && sdr_check(store, why, sizeof why)) {
            fprintf(stderr, "store damaged after step %d: %s\n", step, why);
            abort();
        }
    }
    /* Wind down: every transmission succeeds, loans end, queues drain. */
    tern_fuzz_watch_start(&w);
    bp_outduct_set_up(od, true);
    bp_outduct_set_max_payload(od, 0);
    for (int round = 0; round < 8 && (nheld || cla_busy); round++) {
        while (nheld) {
            struct held h = held[--nheld];
            bp_outduct_result(h.od, h.xmit, BP_XMIT_OK);
        }
        if (cla_busy) {
            cla_busy = 0;
            bp_outduct_ready(od);
        }
    }
    for (size_t i = 0; i < nloans; i++)
        bp_agent_recv_undo(a, loans[i]);
    bp_delivery d;
    for (size_t i = 0; i < 5; i++)
        for (int k = 0, rc; k < 100000; k++) {
            if ((rc = bp_agent_recv(a, eps[i], &d)) == 0)
                bp_delivery_release(&d);
            else if (rc == -EAGAIN || rc == TERN_ENOTFOUND || rc == -ENOMEM)
                break; /* else an unreadable bundle was dropped: the next */
        }
    tern_fuzz_watch_check(&w, "winding down");
    bp_agent_stats st;
    bp_agent_stats_get(a, &st);
    if (st.file_refs > st.stored) {
        fprintf(stderr, "%llu bundles by file reference, %llu stored\n",
                (unsigned long long)st.file_refs, (unsigned long long)st.stored);
        abort();
    }
    if (sdr_check(store, why, sizeof why)) {
        fprintf(stderr, "store damaged: %s\n", why);
        abort();
    }
    /* and it still works (unless bundles nobody can take fill its store) */
    nheld = 0;
    bp_endpoint_change(a, &ep1, BP_RECV_QUEUE);
    int rc = bp_agent_send(a, &ep1, &ep1, NULL, "ok", 2, NULL);
    if (rc && rc != TERN_EFULL) {
        fprintf(stderr, "the agent no longer takes a send: %s\n", tern_strerror(rc));
        abort();
    }
    if (!rc) {
        if (bp_agent_recv(a, &ep1, &d) || d.len != 2 || memcmp(d.payload, "ok", 2)) {
            fprintf(stderr, "the agent no longer delivers to its own endpoint\n");
            abort();
        }
        bp_delivery_release(&d);
    }
    bp_agent_free(a);
    sdr_close(store);
    tern_loop_close(loop);
    tern_clock_free(clk);
    return w.slow;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return tern_fuzz_replay(run, data, size);
}
