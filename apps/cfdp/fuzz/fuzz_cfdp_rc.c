/* libFuzzer target: cfdpadmin text through the rc lexer and cfdp_rc. Any
 * input gives 0 or TERN_ESYNTAX (never a crash), every diagnostic is
 * "fuzz.rc:<line>: ..." in line order, the error count matches, every peer
 * kept is a sane, unique MIB entry (a UDP one fits a datagram), the
 * listing's length is what it says, and the result always builds an
 * entity. */
#include <stdlib.h>
#include <string.h>

#include "cfdp_rc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int on_send(void *ctx, uint64_t dst, const uint8_t *pdu, size_t len)
{
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cfdp_rc rc;
    int r = cfdp_rc_parse((const char *)data, size, "fuzz.rc", &rc);
    if (r == -12) {
        cfdp_rc_free(&rc);
        return 0;
    }
    if (r != 0 && r != TERN_ESYNTAX)
        abort();
    if ((r == TERN_ESYNTAX) != (rc.nerrors > 0))
        abort();
    size_t errs = 0;
    unsigned last = 0;
    for (size_t i = 0; i < rc.ndiags; i++) {
        const cfdp_rc_diag *d = &rc.diags[i];
        if (strncmp(d->text, "fuzz.rc:", 8) != 0 || d->line < last)
            abort();
        last = d->line;
        errs += d->is_error;
    }
    if (errs != rc.nerrors)
        abort();
    const cfdp_peer_cfg *df = &rc.defaults;
    if (df->max_pdu > CFDP_PDU_MAX || df->check_limit < 1 || df->check_timer_ms < 1000 ||
        df->inactivity_ms < 1000 || df->keep_incomplete > 1 || df->crc_required > 1)
        abort();
    if ((rc.npeers && !rc.mib) || rc.uts > CFDP_RC_UTS_BPUTA || rc.initialized > 1)
        abort();
    for (size_t i = 0; i < rc.npeers; i++) {
        const cfdp_rc_peer *p = &rc.peers[i];
        if (!p->cfg.id || memcmp(&p->cfg, &rc.mib[i], sizeof p->cfg) != 0)
            abort();
        if (p->transport == CFDP_RC_UDP) {
            if (!p->port || !p->host[0] || p->cfg.max_pdu > CFDP_RC_UDP_MAX_PDU)
                abort();
        } else if (p->transport != CFDP_RC_BP) {
            abort();
        }
        for (size_t j = 0; j < i; j++)
            if (rc.peers[j].cfg.id == p->cfg.id)
                abort();
    }
    int n = cfdp_rc_format(&rc, NULL, 0);
    char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (!buf)
        abort();
    if (cfdp_rc_format(&rc, buf, (size_t)n + 1) != n || strlen(buf) != (size_t)n)
        abort();
    free(buf);
    cfdp_entity_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.id = 1;
    cfdp_memfs *fs;
    if (cfdp_memfs_new(&fs, &cfg.fs) == 0) {
        cfdp_rc_entity_cfg(&rc, &cfg);
        cfdp_host host = {.send = on_send};
        cfdp_entity *e = NULL;
        r = cfdp_entity_new(&cfg, &host, &e);
        if (r != 0 && r != -12)
            abort();
        cfdp_entity_free(e);
        cfdp_memfs_free(fs);
    }
    cfdp_rc_free(&rc);
    return 0;
}
