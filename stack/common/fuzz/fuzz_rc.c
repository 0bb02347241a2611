/* libFuzzer target: the admin-file lexer must accept or reject any bytes
 * cleanly, and everything it returns must be consistent. */
#include <stdlib.h>
#include <string.h>

#include "tern/rc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tern_rc *rc = NULL;
    int r = tern_rc_parse(&rc, "fuzz.rc", (const char *)data, size, "ionadmin");
    if (r == -12 /* ENOMEM */)
        return 0;
    if (r != 0 && r != TERN_ESYNTAX)
        abort();
    if ((r == TERN_ESYNTAX) != (tern_rc_error_count(rc) > 0))
        abort();
    unsigned last = 0;
    for (size_t i = 0; i < tern_rc_count(rc); i++) {
        const tern_rc_cmd *c = tern_rc_at(rc, i);
        if (c->argc < 1 || c->argv[c->argc] != NULL || c->line < last || !c->section)
            abort();
        last = c->line;
        for (int k = 0; k < c->argc; k++)
            if (strlen(c->argv[k]) > size)
                abort();
    }
    for (size_t i = 0; i < tern_rc_diag_count(rc); i++)
        if (strncmp(tern_rc_diag_at(rc, i, NULL), "fuzz.rc:", 8) != 0)
            abort();
    tern_rc_free(rc);
    return 0;
}
