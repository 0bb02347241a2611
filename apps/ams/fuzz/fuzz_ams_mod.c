/* Stateful: a module's MAMS machine fed a sequence of PDUs (framed by the
 * harness, so the fuzzer gets past the CRC, with the types a module takes,
 * and raw ones), declarations and the clock advancing; after each step the
 * view is walked. The watchdog catches a step that loops or blows up. */
#include <string.h>

#include "ams_mod.h"
#include "tern_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t sent, notes;

static void sink(void *ctx, const mams_ep *to, const uint8_t *pdu, size_t len)
{
    (void)ctx;
    (void)to;
    (void)pdu;
    sent += len;
}

static void note(void *ctx, int kind, const mams_module *m, const mams_rule *r,
                 int reason)
{
    (void)ctx;
    (void)reason;
    notes += (size_t)kind + (m ? m->module : 0) + (r ? (size_t)r->priority : 0);
}

static const int types[] = {MAMS_CELL_SPEC,
                            MAMS_REGISTRAR_UNKNOWN,
                            MAMS_YOU_ARE_IN,
                            MAMS_REJECTION,
                            MAMS_YOU_ARE_DEAD,
                            MAMS_MODULE_STATUS,
                            MAMS_HEARTBEAT,
                            MAMS_DECLARATION,
                            MAMS_STATUS_QUERY,
                            MAMS_I_AM_STOPPING,
                            99};

static int run(const uint8_t *d, size_t n, int lenient)
{
    tern_fuzz_watch w = {.lenient = lenient};
    mams_ep cs = {0x7f000001, 2357};
    ams_mod_cfg cfg = {.venture = 7,
                       .unit = 1,
                       .role = 2,
                       .mams = {0x7f000001, 4000},
                       .udp = {0x7f000001, 4001},
                       .tcp = {0x7f000001, 4002},
                       .cs = &cs,
                       .n_cs = 1,
                       .incarnation = 5,
                       .retry_ms = 50};
    ams_mod *m = NULL;
    uint64_t now = 0;
    if (ams_mod_new(&cfg, sink, note, NULL, now, &m))
        return 0;
    static uint8_t pdu[MAMS_MAX_PDU];
    size_t i = 0;
    while (i < n) {
        uint8_t op = d[i++];
        tern_fuzz_watch_start(&w);
        switch (op & 3) {
        case 0: /* time passes */
            now += (uint64_t)(op >> 2) * 20;
            ams_mod_tick(m, now);
            tern_fuzz_watch_check(&w, "tick");
            continue;
        case 1: { /* a declaration of up to 15 rules from the input */
            mams_rule r[15];
            size_t k = (size_t)(op >> 2) % 16;
            for (size_t j = 0; j < k && i + 4 <= n; j++, i += 4)
                r[j] = (mams_rule){.subject = (int16_t)(d[i] % 8),
                                   .continuum = d[i + 1] % 3,
                                   .unit = d[i + 2] % 3,
                                   .role = d[i + 3] % 4,
                                   .priority = 8};
            size_t subs = k / 2;
            (void)ams_mod_declare(m, now, r, subs, r + subs, k - subs);
            tern_fuzz_watch_check(&w, "declare");
            continue;
        }
        default:
            break;
        }
        if (i + 7 > n)
            break;
        size_t blen = (size_t)d[i] * 4 % 2048;
        mams_pdu p = {.type = types[d[i + 1] % (sizeof types / sizeof types[0])],
                      .flags = d[i + 2] & 1,
                      .venture = (d[i + 3] & 7) ? 7 : d[i + 3],
                      .unit = d[i + 4] % 3,
                      .module = d[i + 5] % 4,
                      .incarnation = d[i + 6] % 3};
        i += 7;
        if (blen > n - i)
            blen = n - i;
        p.body = d + i;
        p.body_len = blen;
        i += blen;
        mams_ep from = {0x7f000001, 3000};
        size_t len;
        if ((op & 3) == 3)
            ams_mod_input(m, now, &from, p.body, blen);
        else if (mams_encode(&p, pdu, sizeof pdu, &len) == 0)
            ams_mod_input(m, now, &from, pdu, len);
        /* walk the view as libams does */
        size_t cur = 0;
        const mams_module *rec;
        while ((rec = ams_mod_next(m, &cur)))
            if (ams_mod_find(m, rec->unit, rec->module) != rec)
                __builtin_trap(); /* the view disagrees with itself */
        (void)ams_mod_find_gone(m, 1, 1);
        tern_fuzz_watch_check(&w, "input");
    }
    ams_mod_free(m, now);
    return w.slow;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return tern_fuzz_replay(run, data, size);
}
