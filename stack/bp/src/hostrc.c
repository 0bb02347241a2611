/* Reading an ION host.rc into the admin settings (see bp_hostrc.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bp_hostrc.h"
#include "tern/rc.h"

static int warn(bp_hostrc *h, const char *msg)
{
    char **v = realloc(h->warnings, (h->nwarnings + 1) * sizeof *v);
    if (!v)
        return -ENOMEM;
    h->warnings = v;
    if (!(v[h->nwarnings] = strdup(msg)))
        return -ENOMEM;
    h->nwarnings++;
    return 0;
}

/* Sections of ION programs Tern does not act on yet. */
static int other_program(const char *sec)
{
    static const char *const known[] = {
        "bssadmin",   "bsspadmin",   "dtn2admin", "acsadmin", "imcadmin",
        "ionrestart", "bibeadmin",   "tcaadmin",  "nm_agent", "amsadmin",
        "bpsecadmin", "ltpsecadmin", NULL};
    for (int i = 0; known[i]; i++)
        if (strcmp(sec, known[i]) == 0)
            return 1;
    return 0;
}

/* The admin files ionstart runs (ionstart -i ionrc -l ltprc ...), in the
 * order it runs them; the suffix is what their names end with in ION's own
 * configurations (node.ionrc, host1.ltprc, ...). */
static const struct {
    const char *suffix, *program;
} kinds[] = {
    {"ionrc", "ionadmin"},     {"acsrc", "acsadmin"},       {"ionsecrc", "ionsecadmin"},
    {"bpsecrc", "bpsecadmin"}, {"ltpsecrc", "ltpsecadmin"}, {"ltprc", "ltpadmin"},
    {"bprc", "bpadmin"},       {"ipnrc", "ipnadmin"},       {"biberc", "bibeadmin"},
    {"dtn2rc", "dtn2admin"},   {"imcrc", "imcadmin"},       {"bssrc", "bssadmin"},
    {"cfdprc", "cfdpadmin"},
};

TERN_API int bp_hostrc_kind(size_t i, const char **suffix, const char **program)
{
    if (i >= sizeof kinds / sizeof kinds[0])
        return TERN_ENOTFOUND;
    if (suffix)
        *suffix = kinds[i].suffix;
    if (program)
        *program = kinds[i].program;
    return 0;
}

#define FAIL(code, ...)                                                                  \
    do {                                                                                 \
        if (err && errlen)                                                               \
            snprintf(err, errlen, __VA_ARGS__);                                          \
        rc = (code);                                                                     \
        goto out;                                                                        \
    } while (0)

/* Applies one file's commands. program: the admin program the whole file is
 * for, NULL for an ionstart host.rc (sections). */
static int read_one(bp_hostrc *h, const bp_hostrc_file *f, uint64_t now_ms,
                    const char **ltp_where, char *err, size_t errlen)
{
    int rc;
    char msg[1024];
    tern_rc *rcf = NULL;
    const char *name = f->name ? f->name : "<input>";
    rc = tern_rc_parse(&rcf, name, f->text, f->len, f->program);
    if (rc == -ENOMEM)
        FAIL(rc, "%s: %s", name, tern_strerror(rc));
    for (size_t i = 0; i < tern_rc_diag_count(rcf); i++) {
        int is_err;
        const char *d = tern_rc_diag_at(rcf, i, &is_err);
        if (is_err)
            FAIL(TERN_ESYNTAX, "%s", d);
        if ((rc = warn(h, d)))
            FAIL(rc, "%s: %s", name, tern_strerror(rc));
    }
    for (size_t i = 0; i < tern_rc_count(rcf); i++) {
        const tern_rc_cmd *c = tern_rc_at(rcf, i);
        const char *sec = c->section;
        msg[0] = '\0';
        rc = 0;
        if (!sec)
            FAIL(TERN_ESYNTAX,
                 "%s:%u: '%s' is outside any section; expected an ionstart host.rc with "
                 "'## begin ionadmin' ... '## end ionadmin' (ltpadmin, bpadmin, "
                 "ipnadmin) sections",
                 c->file, c->line, c->argv[0]);
        if (f->program && strcmp(sec, f->program) != 0)
            FAIL(TERN_ESYNTAX,
                 "%s:%u: '## begin %s' in a file of %s commands; expected %s commands "
                 "only (or an ionstart host.rc holding every section)",
                 c->file, c->line, sec, f->program, f->program);
        if (strcmp(sec, "ionadmin") == 0) {
            rc = bp_ionadmin_apply(h->plan, c, now_ms, msg, sizeof msg);
            if (rc == BP_PLAN_IGNORED)
                rc = warn(h, msg);
        } else if (strcmp(sec, "ltpadmin") == 0) {
            if (!h->has_ltp)
                *ltp_where = name;
            h->has_ltp = 1;
            rc = ltp_admin_apply(&h->ltp, c, msg, sizeof msg);
            if (rc == LTP_ADMIN_IGNORED)
                rc = warn(h, msg);
        } else if (strcmp(sec, "bpadmin") == 0 || strcmp(sec, "ipnadmin") == 0) {
            h->has_bp = 1;
            rc = sec[0] == 'b' ? bp_bpadmin_apply(&h->bp, c, msg, sizeof msg)
                               : bp_ipnadmin_apply(&h->bp, c, msg, sizeof msg);
            if (rc == BP_ADMIN_IGNORED)
                rc = warn(h, msg);
        } else if (strcmp(sec, "ionsecadmin") == 0) {
            if (strcmp(c->argv[0], "1") != 0) {
                snprintf(msg, sizeof msg,
                         "%s:%u: ionsecadmin '%s' accepted but not acted on (security "
                         "comes later)",
                         c->file, c->line, c->argv[0]);
                rc = warn(h, msg);
            }
        } else if (strcmp(sec, "cfdpadmin") == 0) {
            /* cfdpd's, read by it (docs/cfdpadmin.md); tern start starts it */
            if (!h->has_cfdp)
                snprintf(h->cfdp_file, sizeof h->cfdp_file, "%s", c->file);
            h->has_cfdp = 1;
        } else if (strcmp(sec, "amsd") == 0) {
            /* AMS daemons for 'tern start': "amsd <mib> <cs> [<app> <auth> [<unit>]]"
             * and RAMS gateways: "ramsgate <app> <auth> [<lifetime>]" */
            size_t at = 0;
            int rams = strcmp(c->argv[0], "ramsgate") == 0;
            char *line =
                rams ? (h->n_ramsgate < BP_HOSTRC_AMSD_MAX ? h->ramsgate[h->n_ramsgate]
                                                           : NULL)
                     : (h->n_amsd < BP_HOSTRC_AMSD_MAX ? h->amsd[h->n_amsd] : NULL);
            char *end = NULL;
            if (rams && (c->argc < 3 || c->argc > 4 ||
                         (c->argc == 4 && (strtoul(c->argv[3], &end, 10) == 0 || *end))))
                FAIL(TERN_ESYNTAX,
                     "%s:%u: a ramsgate line is 'ramsgate <application> <authority> "
                     "[<bundle lifetime in seconds>]' (ION's ramsgate arguments)",
                     c->file, c->line);
            if (!rams && (strcmp(c->argv[0], "amsd") != 0 || c->argc < 3 ||
                          c->argc == 4 || c->argc > 6))
                FAIL(TERN_ESYNTAX,
                     "%s:%u: a line of the amsd section is 'amsd <MIB> <configuration "
                     "server> [<application> <authority> [<unit>]]' or 'ramsgate "
                     "<application> <authority> [<bundle lifetime>]' (ION's arguments)",
                     c->file, c->line);
            if (!line)
                FAIL(TERN_ESYNTAX, "%s:%u: more than %d %s lines", c->file, c->line,
                     BP_HOSTRC_AMSD_MAX, c->argv[0]);
            for (int a = 1; a < c->argc; a++) {
                /* "" (ION's way to name the root unit) is an empty word */
                const char *word = strcmp(c->argv[a], "\"\"") && strcmp(c->argv[a], "''")
                                       ? c->argv[a]
                                       : "";
                size_t w = strlen(word);
                if (at + w + 2 > sizeof h->amsd[0] || strchr(word, '\t'))
                    FAIL(TERN_ESYNTAX, "%s:%u: amsd line too long", c->file, c->line);
                if (a > 1)
                    line[at++] = '\t';
                memcpy(line + at, word, w);
                at += w;
            }
            line[at] = 0;
            if (rams)
                h->n_ramsgate++;
            else
                h->n_amsd++;
        } else if (other_program(sec)) {
            snprintf(msg, sizeof msg, "%s:%u: %s is not supported yet; '%s' ignored",
                     c->file, c->line, sec, c->argv[0]);
            rc = warn(h, msg);
        } else {
            FAIL(TERN_ESYNTAX,
                 "%s:%u: unknown section '%s'; expected ionadmin, ltpadmin, bpadmin, "
                 "ipnadmin or ionsecadmin",
                 c->file, c->line, sec);
        }
        if (rc == -ENOMEM)
            FAIL(rc, "%s: %s", name, tern_strerror(rc));
        if (rc < 0)
            FAIL(rc, "%s", msg[0] ? msg : tern_strerror(rc));
    }
    rc = 0;
out:
    tern_rc_free(rcf);
    return rc;
}

TERN_API int bp_hostrc_read_files(bp_hostrc *h, const bp_hostrc_file *files,
                                  size_t nfiles, uint64_t now_ms, char *err,
                                  size_t errlen)
{
    int rc;
    memset(h, 0, sizeof *h);
    bp_admin_init(&h->bp);
    ltp_admin_init(&h->ltp);
    if (err && errlen)
        err[0] = '\0';
    const char *first = nfiles && files[0].name ? files[0].name : "<input>";
    const char *ion = NULL, *ltp = NULL;
    int split = 0;
    for (size_t i = 0; i < nfiles; i++) {
        split |= files[i].program != NULL;
        if (!ion && files[i].program && strcmp(files[i].program, "ionadmin") == 0)
            ion = files[i].name;
    }
    if ((rc = bp_plan_new(&h->plan)))
        FAIL(rc, "%s: %s", first, tern_strerror(rc));
    for (size_t i = 0; i < nfiles; i++)
        if ((rc = read_one(h, &files[i], now_ms, &ltp, err, errlen)))
            goto out;
    if (!bp_plan_node(h->plan))
        FAIL(TERN_ESYNTAX,
             "%s: no node number; expected '1 <node number>' in the ionadmin %s",
             ion ? ion : first, split ? "file" : "section");
    /* ION's samples give a node a plan to itself over its own induct's
     * address (amroc.ipnrc: 'a plan 2 tcp/127.0.0.1:5001' on node 2), with
     * no such outduct: never used, since bundles for the node are delivered
     * here. Such a plan is dropped with a warning, not refused. */
    for (size_t i = 0; i < h->bp.nplans;) {
        const bp_admin_plan *p = &h->bp.plans[i];
        int found = !p->protocol[0];
        for (size_t k = 0; k < h->bp.noutducts && !found; k++)
            found = strcmp(h->bp.outducts[k].protocol, p->protocol) == 0 &&
                    strcmp(h->bp.outducts[k].name, p->duct) == 0;
        if (found || p->scheme != BP_SCHEME_IPN || p->node != bp_plan_node(h->plan)) {
            i++;
            continue;
        }
        char msg[600];
        snprintf(msg, sizeof msg,
                 "%s:%u: a plan for this node (%llu) via %s/%s, which no outduct "
                 "serves: bundles for this node are delivered here, so the plan is "
                 "ignored",
                 p->duct_at.file, p->duct_at.line, (unsigned long long)p->node,
                 p->protocol, p->duct);
        if ((rc = warn(h, msg)))
            FAIL(rc, "%s: %s", first, tern_strerror(rc));
        memmove(&h->bp.plans[i], &h->bp.plans[i + 1],
                (h->bp.nplans - i - 1) * sizeof h->bp.plans[0]);
        h->bp.nplans--;
    }
    if (h->has_ltp && !h->ltp.initialized)
        FAIL(TERN_ESYNTAX,
             "%s: the ltpadmin %s never initializes LTP; expected '1 <max export "
             "sessions>' first",
             ltp ? ltp : first, split ? "file" : "section");
    rc = 0;
out:
    return rc;
}

TERN_API int bp_hostrc_read(bp_hostrc *h, const char *name, const char *text, size_t len,
                            uint64_t now_ms, char *err, size_t errlen)
{
    bp_hostrc_file f = {.name = name, .program = NULL, .text = text, .len = len};
    return bp_hostrc_read_files(h, &f, 1, now_ms, err, errlen);
}

TERN_API void bp_hostrc_free(bp_hostrc *h)
{
    for (size_t i = 0; i < h->nwarnings; i++)
        free(h->warnings[i]);
    free(h->warnings);
    h->warnings = NULL;
    h->nwarnings = 0;
    bp_plan_free(h->plan);
    h->plan = NULL;
    bp_admin_free(&h->bp);
    ltp_admin_free(&h->ltp);
}
