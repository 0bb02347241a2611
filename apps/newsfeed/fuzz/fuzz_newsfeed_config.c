/* libFuzzer target: the configuration parser. Any text must parse or be
 * refused with TERN_ESYNTAX and at least one "fuzz.conf:<line>: ..."
 * diagnostic; lookups over whatever loaded must not fail strangely. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "newsfeed.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    nf_config *c = NULL;
    int rc =
        nf_config_parse(&c, "fuzz.conf", (const char *)data, size, "/nonexistent-nf");
    if (rc == -12 /* ENOMEM */)
        return 0;
    if (!c || (rc != 0 && rc != TERN_ESYNTAX))
        abort();
    size_t nd = nf_config_diag_count(c);
    if (rc == TERN_ESYNTAX && nd == 0)
        abort();
    for (size_t i = 0; i < nd; i++) {
        const char *d = nf_config_diag_at(c, i);
        if (!d || strncmp(d, "fuzz.conf:", 10) != 0)
            abort();
    }
    static const char *groups[] = {"comp.lang.c", "alt", "a.b.c.d", "x"};
    uint32_t imc;
    for (size_t i = 0; i < 4; i++)
        if (nf_config_group_for(c, groups[i], &imc) == 0 && imc == 0)
            abort();
    for (size_t i = 0; i < nf_config_imc_count(c); i++)
        if (nf_config_imc_at(c, i) == 0)
            abort();
    nf_limits l = nf_config_limits(c);
    if (l.max_article == 0 || l.max_decompressed == 0)
        abort();
    nf_config_free(c);
    return 0;
}
