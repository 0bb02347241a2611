/* libFuzzer target: ionadmin text through the rc lexer and the contact-plan
 * interpreter. Any input is accepted or refused with a message; the plan
 * stays consistent (every contact and range starts before it ends). */
#include <stdlib.h>
#include <string.h>

#include "bp_plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tern_rc *rc = NULL;
    bp_plan *p = NULL;
    char msg[8192];
    int r = tern_rc_parse(&rc, "fuzz.rc", (const char *)data, size, "ionadmin");
    if (r != 0 && r != TERN_ESYNTAX)
        return 0;
    if (bp_plan_new(&p))
        goto out;
    for (size_t i = 0; i < tern_rc_count(rc); i++) {
        r = bp_ionadmin_apply(p, tern_rc_at(rc, i), UINT64_C(849312000000), msg,
                              sizeof msg);
        if (r != 0 && r != BP_PLAN_IGNORED && r != TERN_ESYNTAX)
            abort();
        if (r == TERN_ESYNTAX && strncmp(msg, "fuzz.rc:", 8) != 0)
            abort();
    }
    const bp_contact *c;
    const bp_range *g;
    size_t n = bp_plan_contacts(p, &c);
    for (size_t i = 0; i < n; i++)
        if (c[i].until_ms <= c[i].from_ms)
            abort();
    n = bp_plan_ranges(p, &g);
    for (size_t i = 0; i < n; i++)
        if (g[i].until_ms <= g[i].from_ms)
            abort();
out:
    bp_plan_free(p);
    tern_rc_free(rc);
    return 0;
}
