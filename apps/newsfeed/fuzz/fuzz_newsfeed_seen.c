/* libFuzzer target: the seen-state file decoder. The input (with its
 * CRC-32C appended when the first byte is odd, so the fuzzer gets past the
 * checksum) must load or be refused with TERN_ECORRUPT; what loads must
 * encode to a file that loads to the same encoding (a fixed point), list
 * its gaps, and take new numbers. */
#include <stdlib.h>
#include <string.h>

#include "nf_int.h"
#include "tern/crc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int fix = data[0] & 1;
    data++;
    size--;
    uint8_t *buf = malloc(size + 4);
    memcpy(buf, data, size);
    size_t len = size;
    if (fix) {
        nf__put32(buf + size, tern_crc32c(0, buf, size));
        len += 4;
    }
    nf_seen *s;
    const char *why = NULL;
    int rc = nf__seen_decode(buf, len, &s, &why);
    free(buf);
    if (rc) {
        if (rc != TERN_ECORRUPT || !why)
            abort();
        return 0;
    }
    uint8_t *e1, *e2;
    size_t l1, l2;
    nf_seen *t;
    if (nf__seen_encode(s, &e1, &l1) != 0 || nf__seen_decode(e1, l1, &t, &why) != 0 ||
        nf__seen_encode(t, &e2, &l2) != 0 || l1 != l2 || memcmp(e1, e2, l1) != 0)
        abort();
    free(e1);
    free(e2);
    nf_seen_free(t);
    for (size_t i = 0; i < nf_seen_publishers(s); i++) {
        nf_seen_pub p;
        if (nf_seen_publisher_at(s, i, &p) != 0 || p.high < p.floor ||
            p.missing > p.high - p.floor)
            abort();
        nf_range r[64];
        size_t n;
        rc = nf_seen_gaps(s, p.publisher, r, 64, &n);
        if (rc != 0 && rc != TERN_ENOSPACE)
            abort();
        uint64_t total = 0;
        for (size_t k = 0; k < n; k++) {
            if (r[k].lo > r[k].hi || r[k].lo <= p.floor || r[k].hi > p.high)
                abort();
            total += r[k].hi - r[k].lo + 1;
        }
        if (rc == 0 && total != p.missing)
            abort();
        if (p.high < UINT64_MAX &&
            nf_seen_mark(s, p.publisher, p.high + 1, NULL, 0, NULL))
            abort();
    }
    nf_seen_free(s);
    return 0;
}
