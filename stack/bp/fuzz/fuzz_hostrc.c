/* libFuzzer target: a whole ionstart-style host.rc (every admin section)
 * through bp_hostrc_read, the reader tern_sim and ternd share, then the same
 * text split at its NUL bytes into ION's admin files one per program
 * (node.ionrc, node.ltprc, ...: bp_hostrc_read_files). Any input is read or
 * refused with a "file:line: ..." message, and freeing what was read leaks
 * nothing (the fuzzer's leak check). */
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

    /* pieces between NULs: the ionrc, ionsecrc, ltprc, bprc, ipnrc files */
    static const char *const programs[] = {"ionadmin", "ionsecadmin", "ltpadmin",
                                           "bpadmin", "ipnadmin"};
    bp_hostrc_file files[5];
    size_t n = 0, at = 0;
    const char *text = (const char *)data;
    while (n < 5 && at <= size) {
        const char *nul = memchr(text + at, 0, size - at);
        size_t end = nul ? (size_t)(nul - text) : size;
        files[n] = (bp_hostrc_file){.name = "fuzz.rc",
                                    .program = programs[n],
                                    .text = text + at,
                                    .len = end - at};
        n++;
        at = end + 1;
    }
    rc = bp_hostrc_read_files(&h, files, n, UINT64_C(849312000000), err, sizeof err);
    if (rc == TERN_ESYNTAX && strncmp(err, "fuzz.rc", 7) != 0)
        abort();
    for (size_t i = 0; i < h.nwarnings; i++)
        if (strncmp(h.warnings[i], "fuzz.rc:", 8) != 0)
            abort();
    bp_hostrc_free(&h);
    return 0;
}
