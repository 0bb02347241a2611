/* ionadmin: the contact plan. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bp_plan.h"
#include "tern/clock.h"
#include "tern/suggest.h"

struct bp_plan {
    uint64_t node;
    char ionconfig[256];    /* from "1 <node> <file>", "" if none */
    char ionconfig_at[300]; /* file:line of that command */
    bp_contact *contacts;
    size_t ncontacts, capcontacts;
    bp_range *ranges;
    size_t nranges, capranges;
    uint64_t production, consumption;
};

__attribute__((format(printf, 4, 5))) static void say(const tern_rc_cmd *c, char *msg,
                                                      size_t len, const char *fmt, ...)
{
    if (!msg || !len)
        return;
    int n = snprintf(msg, len, "%s:%u: ", c->file, c->line);
    if (n < 0 || (size_t)n >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg + n, len - (size_t)n, fmt, ap);
    va_end(ap);
}

#define SYNTAX(...)                                                                      \
    do {                                                                                 \
        say(c, msg, msglen, __VA_ARGS__);                                                \
        return TERN_ESYNTAX;                                                             \
    } while (0)

static int parse_u64(const char *s, uint64_t *v)
{
    char *end;
    if (!s || !*s || *s == '-' || *s == '+')
        return -1;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 10);
    if (errno || *end)
        return -1;
    *v = x;
    return 0;
}

TERN_API int bp_plan_parse_time(const char *s, uint64_t now_ms, uint64_t *out_ms)
{
    uint64_t v;
    if (s[0] == '+') {
        if (parse_u64(s + 1, &v) || v > UINT64_MAX / 1000 - now_ms / 1000)
            return TERN_ESYNTAX;
        *out_ms = now_ms + v * 1000;
        return 0;
    }
    int y, mo, d, h, mi, se;
    char tail;
    if (sscanf(s, "%4d/%2d/%2d-%2d:%2d:%2d%c", &y, &mo, &d, &h, &mi, &se, &tail) != 6 ||
        y < 2000 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60)
        return TERN_ESYNTAX;
    struct tm tm = {.tm_year = y - 1900,
                    .tm_mon = mo - 1,
                    .tm_mday = d,
                    .tm_hour = h,
                    .tm_min = mi,
                    .tm_sec = se};
    time_t t = timegm(&tm);
    if (t == (time_t)-1 || tm.tm_mday != d)
        return TERN_ESYNTAX; /* e.g. February 30th */
    return tern_dtn_ms_from_unix_ms((int64_t)t * 1000, out_ms) ? TERN_ESYNTAX : 0;
}

TERN_API int bp_plan_format_time(uint64_t ms, char *buf, size_t cap)
{
    int64_t unix_ms;
    if (tern_dtn_ms_to_unix_ms(ms, &unix_ms))
        return TERN_EOVERFLOW;
    time_t t = (time_t)(unix_ms / 1000);
    struct tm tm;
    if (!gmtime_r(&t, &tm))
        return TERN_EOVERFLOW;
    int n = snprintf(buf, cap, "%04d/%02d/%02d-%02d:%02d:%02d", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    return n > 0 && (size_t)n < cap ? 0 : TERN_ENOSPACE;
}

TERN_API int bp_plan_new(bp_plan **out)
{
    bp_plan *p = calloc(1, sizeof *p);
    if (!p)
        return -ENOMEM;
    *out = p;
    return 0;
}

TERN_API void bp_plan_free(bp_plan *p)
{
    if (!p)
        return;
    free(p->contacts);
    free(p->ranges);
    free(p);
}

static int grow(void **arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t nc = *cap ? *cap * 2 : 16;
    void *q = realloc(*arr, nc * elem);
    if (!q)
        return -ENOMEM;
    *arr = q;
    *cap = nc;
    return 0;
}

static int times(const tern_rc_cmd *c, const char *what, const char *a, const char *b,
                 uint64_t now, uint64_t *from, uint64_t *until, char *msg, size_t msglen)
{
    if (bp_plan_parse_time(a, now, from))
        SYNTAX("%s start time '%s': expected +<seconds> or yyyy/mm/dd-hh:mm:ss", what, a);
    if (bp_plan_parse_time(b, now, until))
        SYNTAX("%s end time '%s': expected +<seconds> or yyyy/mm/dd-hh:mm:ss", what, b);
    if (*until <= *from)
        SYNTAX("%s ends (%s) before it starts (%s)", what, b, a);
    return 0;
}

static int list(const bp_plan *p, int contacts, char *out, size_t cap)
{
    size_t n = 0;
    char f[32], u[32];
    if (cap)
        out[0] = '\0';
    size_t count = contacts ? p->ncontacts : p->nranges;
    for (size_t i = 0; i < count; i++) {
        int k;
        if (contacts) {
            const bp_contact *x = &p->contacts[i];
            bp_plan_format_time(x->from_ms, f, sizeof f);
            bp_plan_format_time(x->until_ms, u, sizeof u);
            k = snprintf(out + (n < cap ? n : cap), n < cap ? cap - n : 0,
                         "contact from %s until %s, %" PRIu64 " -> %" PRIu64 ", %" PRIu64
                         " bytes/s, confidence %.2f\n",
                         f, u, x->from_node, x->to_node, x->rate, x->confidence);
        } else {
            const bp_range *x = &p->ranges[i];
            bp_plan_format_time(x->from_ms, f, sizeof f);
            bp_plan_format_time(x->until_ms, u, sizeof u);
            k = snprintf(out + (n < cap ? n : cap), n < cap ? cap - n : 0,
                         "range from %s until %s, %" PRIu64 " -> %" PRIu64 ", %u s\n", f,
                         u, x->from_node, x->to_node, x->owlt_s);
        }
        if (k > 0)
            n += (size_t)k;
    }
    return (int)n;
}

/* What an unknown command is compared with for a suggestion. */
static const char *const ion_commands[] = {
    "1",       "a contact", "d contact", "l contact",    "a range",       "d range",
    "l range", "s",         "x",         "m production", "m consumption", NULL};

TERN_API int bp_ionadmin_apply(bp_plan *p, const tern_rc_cmd *c, uint64_t now, char *msg,
                               size_t msglen)
{
    const char *op = c->argv[0];
    const char *what = c->argc > 1 ? c->argv[1] : "";
    uint64_t from, until, a, b, v;
    if (msg && msglen)
        msg[0] = '\0';
    if (strcmp(op, "1") == 0) {
        if (c->argc < 2 || c->argc > 3 || parse_u64(c->argv[1], &v) || v == 0)
            SYNTAX("expected '1 <node number> [<ionconfig file>]'");
        p->node = v;
        p->ionconfig[0] = '\0';
        if (c->argc == 3) {
            if (strlen(c->argv[2]) >= sizeof p->ionconfig)
                SYNTAX("ionconfig file name longer than %zu bytes",
                       sizeof p->ionconfig - 1);
            snprintf(p->ionconfig, sizeof p->ionconfig, "%s", c->argv[2]);
            snprintf(p->ionconfig_at, sizeof p->ionconfig_at, "%s:%u", c->file, c->line);
        }
        return 0;
    }
    if (strcmp(op, "a") == 0 && strcmp(what, "contact") == 0) {
        if (c->argc != 7 && c->argc != 8)
            SYNTAX(
                "'a contact' takes 5 or 6 arguments, got %d; expected 'a contact <from "
                "time> <until time> <from node> <to node> <rate bytes/s> [confidence]'",
                c->argc - 2);
        int rc =
            times(c, "contact", c->argv[2], c->argv[3], now, &from, &until, msg, msglen);
        if (rc)
            return rc;
        if (parse_u64(c->argv[4], &a) || parse_u64(c->argv[5], &b) || !a || !b)
            SYNTAX("contact nodes '%s' and '%s': expected node numbers", c->argv[4],
                   c->argv[5]);
        if (parse_u64(c->argv[6], &v))
            SYNTAX("contact rate '%s': expected bytes per second", c->argv[6]);
        double conf = 1.0;
        if (c->argc == 8) {
            char *end;
            conf = strtod(c->argv[7], &end);
            if (*end || !(conf >= 0.0 && conf <= 1.0))
                SYNTAX("contact confidence '%s': expected a number from 0 to 1",
                       c->argv[7]);
        }
        if (grow((void **)&p->contacts, &p->capcontacts, p->ncontacts + 1,
                 sizeof *p->contacts))
            return -ENOMEM;
        p->contacts[p->ncontacts++] = (bp_contact){from, until, a, b, v, conf};
        return 0;
    }
    if (strcmp(op, "a") == 0 && strcmp(what, "range") == 0) {
        if (c->argc != 7)
            SYNTAX("'a range' takes 5 arguments, got %d; expected 'a range <from time> "
                   "<until "
                   "time> <from node> <to node> <one-way light time, s>'",
                   c->argc - 2);
        int rc =
            times(c, "range", c->argv[2], c->argv[3], now, &from, &until, msg, msglen);
        if (rc)
            return rc;
        if (parse_u64(c->argv[4], &a) || parse_u64(c->argv[5], &b) || !a || !b)
            SYNTAX("range nodes '%s' and '%s': expected node numbers", c->argv[4],
                   c->argv[5]);
        if (parse_u64(c->argv[6], &v) || v > UINT32_MAX)
            SYNTAX("one-way light time '%s': expected seconds", c->argv[6]);
        if (grow((void **)&p->ranges, &p->capranges, p->nranges + 1, sizeof *p->ranges))
            return -ENOMEM;
        p->ranges[p->nranges++] = (bp_range){from, until, a, b, (uint32_t)v};
        return 0;
    }
    if (strcmp(op, "d") == 0 &&
        (strcmp(what, "contact") == 0 || strcmp(what, "range") == 0)) {
        int is_contact = what[0] == 'c';
        if (c->argc != 5)
            SYNTAX("expected 'd %s <from time> <from node> <to node>'", what);
        if (bp_plan_parse_time(c->argv[2], now, &from))
            SYNTAX("%s start time '%s': expected +<seconds> or yyyy/mm/dd-hh:mm:ss", what,
                   c->argv[2]);
        if (parse_u64(c->argv[3], &a) || parse_u64(c->argv[4], &b))
            SYNTAX("expected 'd %s <from time> <from node> <to node>'", what);
        size_t n = is_contact ? p->ncontacts : p->nranges, w = 0, gone = 0;
        for (size_t i = 0; i < n; i++) {
            int match =
                is_contact
                    ? (p->contacts[i].from_ms == from && p->contacts[i].from_node == a &&
                       p->contacts[i].to_node == b)
                    : (p->ranges[i].from_ms == from && p->ranges[i].from_node == a &&
                       p->ranges[i].to_node == b);
            if (match) {
                gone++;
                continue;
            }
            if (is_contact)
                p->contacts[w++] = p->contacts[i];
            else
                p->ranges[w++] = p->ranges[i];
        }
        if (!gone)
            SYNTAX("no %s from %s between nodes %" PRIu64 " and %" PRIu64 " to delete",
                   what, c->argv[2], a, b);
        if (is_contact)
            p->ncontacts = w;
        else
            p->nranges = w;
        return 0;
    }
    if (strcmp(op, "l") == 0 &&
        (strcmp(what, "contact") == 0 || strcmp(what, "range") == 0)) {
        list(p, what[0] == 'c', msg, msglen);
        return 0;
    }
    if (strcmp(op, "m") == 0 &&
        (strcmp(what, "production") == 0 || strcmp(what, "consumption") == 0)) {
        if (c->argc != 3 || parse_u64(c->argv[2], &v))
            SYNTAX("expected 'm %s <bytes per second>'", what);
        if (what[0] == 'p')
            p->production = v;
        else
            p->consumption = v;
        return 0;
    }
    char head[160], dym[200];
    tern_did_you_mean(tern_suggest_cmd(c, ion_commands), dym, sizeof dym);
    if (strcmp(op, "s") == 0 || strcmp(op, "x") == 0 || strcmp(op, "m") == 0 ||
        strcmp(op, "w") == 0 || strcmp(op, "e") == 0 || strcmp(op, "h") == 0) {
        say(c, msg, msglen, "ionadmin '%s' is accepted but has no effect here%s",
            tern_cmd_head(c, 2, head, sizeof head), op[0] == 'm' ? dym : "");
        return BP_PLAN_IGNORED;
    }
    SYNTAX("unknown ionadmin command '%s'%s; expected 1, a/d/l contact, a/d/l range or "
           "m production/consumption",
           tern_cmd_head(c, 2, head, sizeof head), dym);
}

TERN_API const char *bp_plan_ionconfig(const bp_plan *p, const char **where)
{
    if (where)
        *where = p->ionconfig_at;
    return p->ionconfig[0] ? p->ionconfig : NULL;
}

TERN_API uint64_t bp_plan_node(const bp_plan *p)
{
    return p->node;
}

TERN_API size_t bp_plan_contacts(const bp_plan *p, const bp_contact **out)
{
    *out = p->contacts;
    return p->ncontacts;
}

TERN_API size_t bp_plan_ranges(const bp_plan *p, const bp_range **out)
{
    *out = p->ranges;
    return p->nranges;
}

TERN_API void bp_plan_rates(const bp_plan *p, uint64_t *production, uint64_t *consumption)
{
    *production = p->production;
    *consumption = p->consumption;
}

TERN_API int bp_plan_owlt(const bp_plan *p, uint64_t from, uint64_t to, uint64_t at_ms,
                          uint32_t *owlt_s)
{
    /* An explicit range in this direction wins over the reverse one. */
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < p->nranges; i++) {
            const bp_range *r = &p->ranges[i];
            uint64_t f = pass ? to : from, t = pass ? from : to;
            if (r->from_node == f && r->to_node == t && r->from_ms <= at_ms &&
                at_ms < r->until_ms) {
                *owlt_s = r->owlt_s;
                return 0;
            }
        }
    return TERN_ENOTFOUND;
}

/* ------------------------------------------------------------- the store
 * One object: a header, then the contacts, then the ranges, as they are in
 * memory (the store is this host's own, so no byte-order conversion). */

#define PLAN_MAGIC UINT64_C(0x42504c414e303031) /* "BPLAN001" */

struct plan_hdr {
    uint64_t magic, node, production, consumption, ncontacts, nranges;
};

TERN_API int bp_plan_save(const bp_plan *p, sdr *s)
{
    struct plan_hdr h = {PLAN_MAGIC,     p->node,      p->production,
                         p->consumption, p->ncontacts, p->nranges};
    size_t cb = p->ncontacts * sizeof *p->contacts, rb = p->nranges * sizeof *p->ranges;
    sdr_off old, obj;
    int rc = sdr_txn_begin(s);
    if (rc)
        return rc;
    if ((rc = sdr_catalog_get(s, "bp.plan", &old)) == 0)
        rc = sdr_free(s, old);
    else if (rc == TERN_ENOTFOUND)
        rc = 0;
    if (rc || (rc = sdr_alloc(s, sizeof h + cb + rb, SDR_OPS, &obj)) ||
        (rc = sdr_write(s, obj, &h, sizeof h)) ||
        (cb && (rc = sdr_write(s, obj + sizeof h, p->contacts, cb))) ||
        (rb && (rc = sdr_write(s, obj + sizeof h + cb, p->ranges, rb))) ||
        (rc = sdr_catalog_put(s, "bp.plan", obj))) {
        sdr_txn_cancel(s);
        return rc;
    }
    return sdr_txn_end(s);
}

TERN_API int bp_plan_load(sdr *s, bp_plan **out)
{
    struct plan_hdr h;
    sdr_off obj;
    size_t size;
    int rc = sdr_catalog_get(s, "bp.plan", &obj);
    if (rc)
        return rc;
    if ((rc = sdr_size(s, obj, &size)) || size < sizeof h ||
        (rc = sdr_read(s, obj, &h, sizeof h)))
        return rc ? rc : TERN_ECORRUPT;
    if (h.magic != PLAN_MAGIC || h.ncontacts > size / sizeof(bp_contact) ||
        h.nranges > size / sizeof(bp_range) ||
        sizeof h + h.ncontacts * sizeof(bp_contact) + h.nranges * sizeof(bp_range) > size)
        return TERN_ECORRUPT;
    bp_plan *p;
    if ((rc = bp_plan_new(&p)))
        return rc;
    p->node = h.node;
    p->production = h.production;
    p->consumption = h.consumption;
    if (grow((void **)&p->contacts, &p->capcontacts, h.ncontacts, sizeof *p->contacts) ||
        grow((void **)&p->ranges, &p->capranges, h.nranges, sizeof *p->ranges)) {
        bp_plan_free(p);
        return -ENOMEM;
    }
    size_t cb = h.ncontacts * sizeof *p->contacts;
    if ((cb && (rc = sdr_read(s, obj + sizeof h, p->contacts, cb))) ||
        (h.nranges && (rc = sdr_read(s, obj + sizeof h + cb, p->ranges,
                                     h.nranges * sizeof *p->ranges)))) {
        bp_plan_free(p);
        return rc;
    }
    p->ncontacts = h.ncontacts;
    p->nranges = h.nranges;
    *out = p;
    return 0;
}
