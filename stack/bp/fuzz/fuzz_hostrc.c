/* libFuzzer target: a whole ionstart-style host.rc (every admin section)
 * through bp_hostrc_read, the reader tern_sim and ternd share. Any input is
 * read or refused with a "file:line: ..." message, and freeing what was read
 * leaks nothing (the fuzzer's leak check). */
#include <stdlib.h>
#include <string.h>

#include "bp_hostrc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    bp_hostrc h;
    char err[1024] = "";
    memset(&h, 0, sizeof h);
    int rc = bp_hostrc_read(&h, "fuzz.rc", (const char *)data, size,
                            UINT64_C(849312000000), err, sizeof err);
    if (rc == TERN_ESYNTAX && strncmp(err, "fuzz.rc", 7) != 0)
        abort(); /* a refusal names the file */
    for (size_t i = 0; i < h.nwarnings; i++)
        if (strncmp(h.warnings[i], "fuzz.rc:", 8) != 0)
            abort();
    bp_hostrc_free(&h);
    return 0;
}
