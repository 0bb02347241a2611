/* The MAMS and AAMS decoders on hostile bytes: a PDU and every record and
 * rule its body may hold, and an AAMS datagram. */
#include <string.h>

#include "ams_mams.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    aams_msg a;
    const char *why;
    if (aams_decode(data, size, &a, &why) == 0 && a.len && a.content[a.len - 1] == 0x5a)
        why = NULL; /* touch the content's last byte */
    mams_pdu p;
    /* the decoder proper, then the body as each reader would take it, with
     * the CRC bypassed: a PDU re-framed around the fuzzer's body */
    (void)mams_decode(data, size, &p, &why);
    static uint8_t buf[MAMS_MAX_PDU];
    mams_pdu q = {.type = size ? data[0] : 0,
                  .body = data + (size ? 1 : 0),
                  .body_len = size ? size - 1 : 0};
    size_t n;
    if (mams_encode(&q, buf, sizeof buf, &n) || mams_decode(buf, n, &p, &why))
        return 0;
    mams_cur c;
    mams_cur_reader(&c, p.body, p.body_len);
    unsigned k = mams_get16(&c);
    for (unsigned i = 0; i < k && !c.err; i++) {
        mams_module m;
        mams_get_module(&c, &m);
        if (c.err)
            break;
        for (size_t j = 0; j < (size_t)m.n_subs + m.n_invs; j++) {
            mams_rule r;
            mams_module_rule(&m, j, &r);
        }
    }
    return 0;
}
