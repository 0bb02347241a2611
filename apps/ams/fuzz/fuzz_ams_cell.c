/* Stateful: a registrar and a configuration server fed a sequence of PDUs
 * (well framed ones built from the input, so the fuzzer gets past the CRC,
 * and raw ones) while the virtual clock advances; the watchdog catches a
 * step that loops or blows up. */
#include <string.h>

#include "ams_cell.h"
#include "tern_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t sent;

static void sink(void *ctx, const mams_ep *to, const uint8_t *pdu, size_t len)
{
    (void)ctx;
    (void)to;
    (void)pdu;
    sent += len;
}

static int run(const uint8_t *d, size_t n, int lenient)
{
    tern_fuzz_watch w = {.lenient = lenient};
    mams_ep cs_ep = {0x7f000001, 2357};
    ams_reg_cfg cfg = {.venture = 19,
                       .unit = 0,
                       .self = {0x7f000001, 5000},
                       .cs = &cs_ep,
                       .n_cs = 1,
                       .timing = {.heartbeat_ms = 100, .dead_ms = 400, .census_ms = 200},
                       .incarnation = 1};
    ams_reg *r = NULL;
    ams_cs *cs = NULL;
    if (ams_reg_new(&cfg, sink, NULL, 0, &r) || ams_cs_new(sink, NULL, 0, &cs))
        goto out;
    uint64_t now = 0;
    static uint8_t pdu[MAMS_MAX_PDU];
    size_t i = 0;
    while (i < n) {
        uint8_t op = d[i++];
        tern_fuzz_watch_start(&w);
        if ((op & 3) == 0) { /* time passes */
            now += (uint64_t)(op >> 2) * 25;
            ams_reg_tick(r, now);
            ams_cs_tick(cs, now);
            tern_fuzz_watch_check(&w, "tick");
            continue;
        }
        if (i + 10 > n)
            break;
        size_t blen = d[i] % 200;
        mams_pdu p = {.type = d[i + 1] % 70,
                      .flags = d[i + 2] & 1,
                      .venture = (d[i + 3] & 1) ? 19 : d[i + 3],
                      .unit = d[i + 4] % 4,
                      .role = d[i + 5] % 8,
                      .module = d[i + 6],
                      .incarnation = d[i + 7] % 4,
                      .memo = d[i + 8]};
        mams_ep from = {0x7f000001, (uint16_t)(6000 + d[i + 9] % 8)};
        i += 10;
        if (blen > n - i)
            blen = n - i;
        p.body = d + i;
        p.body_len = blen;
        i += blen;
        size_t len;
        if ((op & 3) == 3) { /* raw: the fuzzer's bytes as they are */
            ams_reg_input(r, now, &from, p.body, blen);
            ams_cs_input(cs, now, &from, p.body, blen);
        } else if (mams_encode(&p, pdu, sizeof pdu, &len) == 0) {
            if ((op & 3) == 1)
                ams_reg_input(r, now, &from, pdu, len);
            else
                ams_cs_input(cs, now, &from, pdu, len);
        }
        tern_fuzz_watch_check(&w, "input");
    }
out:
    ams_reg_free(r);
    ams_cs_free(cs);
    return w.slow;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return tern_fuzz_replay(run, data, size);
}
