/* libFuzzer target: ltpadmin text through the rc lexer and the ltpadmin
 * interpreter. Any input is accepted, ignored with a warning or refused with
 * a file:line message; every span kept has sane settings, every seat is a
 * udplsi command, and "l span" and "l seat" never overrun their buffer. */
#include <stdlib.h>
#include <string.h>

#include "ltp_admin.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tern_rc *rc = NULL;
    ltp_admin a;
    char msg[4096];
    int r = tern_rc_parse(&rc, "fuzz.rc", (const char *)data, size, "ltpadmin");
    if (r != 0 && r != TERN_ESYNTAX)
        return 0;
    ltp_admin_init(&a);
    for (size_t i = 0; i < tern_rc_count(rc); i++) {
        r = ltp_admin_apply(&a, tern_rc_at(rc, i), msg, sizeof msg);
        if (r != 0 && r != LTP_ADMIN_IGNORED && r != TERN_ESYNTAX && r != -12)
            abort();
        if ((r == TERN_ESYNTAX || r == LTP_ADMIN_IGNORED) &&
            strncmp(msg, "fuzz.rc:", 8) != 0)
            abort();
    }
    for (size_t i = 0; i < a.nspans; i++) {
        const ltp_span_cfg *c = &a.spans[i].cfg;
        if (!c->peer || !c->max_export || !c->max_import || c->max_seg < 64 ||
            c->max_seg > 65536 || c->max_rounds > 256)
            abort();
    }
    if (a.engine.max_rounds < 1 || a.engine.max_rounds > 256)
        abort();
    ltp_admin_list_spans(&a, 0, msg, sizeof msg);
    if (strlen(msg) >= sizeof msg)
        abort();
    for (size_t i = 0; i < a.nseats; i++)
        if (strncmp(a.seats[i].lsi, "udplsi ", 7) != 0 || !a.seats[i].file)
            abort();
    ltp_admin_list_seats(&a, NULL, msg, sizeof msg);
    if (strlen(msg) >= sizeof msg)
        abort();
    ltp_admin_free(&a);
    tern_rc_free(rc);
    return 0;
}
