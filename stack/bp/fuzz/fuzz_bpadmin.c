/* libFuzzer target: bpadmin / ipnadmin text through the rc lexer and both
 * interpreters. Any input is accepted or refused with a message naming
 * file:line; the settings stay consistent (no duplicate keys, every plan duct
 * complete, every exit ordered) and every listing fits what it reports. */
#include <stdlib.h>
#include <string.h>

#include "bp_admin.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const bp_admin *a)
{
    for (size_t i = 0; i < a->nendpoints; i++) {
        const bp_eid *e = &a->endpoints[i].eid;
        if (e->scheme != BP_SCHEME_IPN && e->scheme != BP_SCHEME_DTN)
            abort();
        if (a->endpoints[i].rule != BP_RECV_QUEUE &&
            a->endpoints[i].rule != BP_RECV_DISCARD)
            abort();
        for (size_t j = 0; j < i; j++)
            if (bp_eid_equal(e, &a->endpoints[j].eid))
                abort();
    }
    for (size_t i = 0; i < a->nplans; i++) {
        const bp_admin_plan *p = &a->plans[i];
        if ((p->protocol[0] == '\0') != (p->duct[0] == '\0'))
            abort();
        if (p->scheme == BP_SCHEME_IPN ? p->node == 0
                                       : strncmp(p->dtn_node, "//", 2) != 0)
            abort();
    }
    for (size_t i = 0; i < a->nexits; i++)
        if (a->exits[i].first > a->exits[i].last || a->exits[i].first == 0)
            abort();
    for (size_t i = 0; i < a->noutducts; i++)
        if (!a->outducts[i].name[0] || !a->outducts[i].protocol[0])
            abort();
    static const char *const objs[] = {"scheme",  "endpoint", "protocol", "induct",
                                       "outduct", "plan",     "exit"};
    char small[64];
    for (size_t i = 0; i < sizeof objs / sizeof objs[0]; i++) {
        int need = bp_admin_list(a, objs[i], NULL, 0);
        if (need <= 0)
            abort();
        memset(small, 'Z', sizeof small);
        if (bp_admin_list(a, objs[i], small, 32) != need || small[32] != 'Z' ||
            strlen(small) != (size_t)(need < 31 ? need : 31))
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tern_rc *rc = NULL;
    bp_admin a;
    char msg[4096];
    int r = tern_rc_parse(&rc, "fuzz.rc", (const char *)data, size, "bpadmin");
    if (r != 0 && r != TERN_ESYNTAX)
        return 0;
    bp_admin_init(&a);
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < tern_rc_count(rc); i++) {
            const tern_rc_cmd *c = tern_rc_at(rc, i);
            r = pass ? bp_ipnadmin_apply(&a, c, msg, sizeof msg)
                     : bp_bpadmin_apply(&a, c, msg, sizeof msg);
            if (r != 0 && r != BP_ADMIN_IGNORED && r != TERN_ESYNTAX)
                abort();
            if (r != 0 && strncmp(msg, "fuzz.rc:", 8) != 0)
                abort();
            if (strlen(msg) >= sizeof msg)
                abort();
        }
        check(&a);
    }
    bp_admin_free(&a);
    tern_rc_free(rc);
    return 0;
}
