/* libFuzzer target: cfdp_ctl's text helpers, which read what cfdpd and its
 * clients send each other, must stay inside the text: a value found by
 * cfdp_ctl_kv is a NUL-terminated copy of bytes that follow "key=" in the
 * input, no longer than cap; a transaction ID parsed with
 * cfdp_ctl_parse_txn, printed back, parses to the same ID. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfdp_ctl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const keys[] = {"txn",  "src",  "dst_name", "code", "msg",
                                   "root", "peer", "progress", "t",    "x"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 8192)
        return 0;
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = 0;
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
        for (int sp = 0; sp < 2; sp++) {
            char v[64];
            int rc = cfdp_ctl_kv(text, keys[k], sp, v, sizeof v);
            if (rc == 0) {
                size_t vl = strlen(v);
                if (vl >= sizeof v || !strstr(text, v) || strchr(v, '\n') ||
                    (sp && strchr(v, ' ')))
                    abort();
                char pat[80];
                snprintf(pat, sizeof pat, "%s=%s", keys[k], v);
                if (!strstr(text, pat))
                    abort();
            } else if (rc != TERN_ENOTFOUND && rc != TERN_ENOSPACE) {
                abort();
            }
        }
    cfdp_txn_id id;
    if (cfdp_ctl_parse_txn(text, &id) == 0) {
        char back[48];
        snprintf(back, sizeof back, "%" PRIu64 ".%" PRIu64, id.src, id.seq);
        if (text[0] < '0' || text[0] > '9')
            abort(); /* digits only: no sign, no space */
        cfdp_txn_id again;
        if (cfdp_ctl_parse_txn(back, &again) || again.src != id.src ||
            again.seq != id.seq)
            abort();
    }
    free(text);
    return 0;
}
