/* bpadmin and ipnadmin command interpreters. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bp_admin.h"
#include "bp_imc.h"
#include "tern/suggest.h"

__attribute__((format(printf, 5, 6))) static void
say_at(const char *file, unsigned line, char *msg, size_t len, const char *fmt, ...)
{
    if (!msg || !len)
        return;
    int n = snprintf(msg, len, "%s:%u: ", file ? file : "?", line);
    if (n < 0 || (size_t)n >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg + n, len - (size_t)n, fmt, ap);
    va_end(ap);
}

#define SAY(...) say_at(c->file, c->line, msg, msglen, __VA_ARGS__)

#define SYNTAX(...)                                                                      \
    do {                                                                                 \
        SAY(__VA_ARGS__);                                                                \
        return TERN_ESYNTAX;                                                             \
    } while (0)

#define IGNORE(...)                                                                      \
    do {                                                                                 \
        SAY(__VA_ARGS__);                                                                \
        return BP_ADMIN_IGNORED;                                                         \
    } while (0)

/* Appends one zeroed element to a table; the caller returns -ENOMEM on NULL. */
#define PUSH(arr, n, out)                                                                \
    do {                                                                                 \
        void *p_ = realloc((arr), ((n) + 1) * sizeof *(arr));                            \
        if (!p_)                                                                         \
            return -ENOMEM;                                                              \
        (arr) = p_;                                                                      \
        (out) = &(arr)[(n)++];                                                           \
        memset((out), 0, sizeof *(out));                                                 \
    } while (0)

/* Removes element i keeping the order: configuration is applied in file order. */
#define DROP(arr, n, i)                                                                  \
    do {                                                                                 \
        memmove(&(arr)[(i)], &(arr)[(i) + 1], ((n) - (i)-1) * sizeof *(arr));            \
        (n)--;                                                                           \
    } while (0)

/* Decimal digits only: no sign, no spaces, no trailing junk, no overflow. */
static int parse_u64(const char *s, uint64_t max, uint64_t *v)
{
    uint64_t x = 0;
    if (!s || !*s)
        return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return -1;
        unsigned d = (unsigned)(*s - '0');
        if (x > (UINT64_MAX - d) / 10)
            return -1;
        x = x * 10 + d;
    }
    if (x > max)
        return -1;
    *v = x;
    return 0;
}

static int copy(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);
    if (n >= cap)
        return -1;
    memcpy(dst, src, n + 1);
    return 0;
}

static int eq(const char *a, const char *b)
{
    return strcmp(a, b) == 0;
}

/* Protocol names are short words: ltp, tcp, stcp, mtcp, udp, bibe, ... */
static int protocol_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n >= BP_ADMIN_NAME_MAX)
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
              (*s >= '0' && *s <= '9') || *s == '-' || *s == '_'))
            return 0;
    return 1;
}

/* Settings keep file:line after the lexer's text is gone, so file names are
 * copied once into the settings. */
static int where(bp_admin *a, const tern_rc_cmd *c, bp_admin_where *w)
{
    const char *f = c->file ? c->file : "?";
    for (size_t i = 0; i < a->nfiles; i++)
        if (eq(a->files[i], f)) {
            w->file = a->files[i];
            w->line = c->line;
            return 0;
        }
    char **p = realloc(a->files, (a->nfiles + 1) * sizeof *p);
    if (!p)
        return -ENOMEM;
    a->files = p;
    char *s = strdup(f);
    if (!s)
        return -ENOMEM;
    a->files[a->nfiles++] = s;
    w->file = s;
    w->line = c->line;
    return 0;
}

TERN_API void bp_admin_init(bp_admin *a)
{
    memset(a, 0, sizeof *a);
}

TERN_API void bp_admin_free(bp_admin *a)
{
    free(a->schemes);
    free(a->endpoints);
    free(a->protocols);
    free(a->inducts);
    free(a->outducts);
    free(a->plans);
    free(a->exits);
    for (size_t i = 0; i < a->nfiles; i++)
        free(a->files[i]);
    free(a->files);
    memset(a, 0, sizeof *a);
}

/* ------------------------------------------------------------------ lookups */

static bp_admin_scheme *find_scheme(bp_admin *a, const char *name)
{
    for (size_t i = 0; i < a->nschemes; i++)
        if (eq(a->schemes[i].name, name))
            return &a->schemes[i];
    return NULL;
}

static bp_admin_endpoint *find_endpoint(bp_admin *a, const bp_eid *e)
{
    for (size_t i = 0; i < a->nendpoints; i++)
        if (bp_eid_equal(&a->endpoints[i].eid, e))
            return &a->endpoints[i];
    return NULL;
}

static bp_admin_protocol *find_protocol(bp_admin *a, const char *name)
{
    for (size_t i = 0; i < a->nprotocols; i++)
        if (eq(a->protocols[i].name, name))
            return &a->protocols[i];
    return NULL;
}

static bp_admin_duct *find_duct(bp_admin_duct *t, size_t n, const char *proto,
                                const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (eq(t[i].protocol, proto) && eq(t[i].name, name))
            return &t[i];
    return NULL;
}

/* A plan's node: ipn node number, or dtn "//name". */
typedef struct plan_key {
    int scheme;
    uint64_t node;
    char dtn[BP_DTN_SSP_MAX + 1];
} plan_key;

static bp_admin_plan *find_plan(bp_admin *a, const plan_key *k)
{
    for (size_t i = 0; i < a->nplans; i++) {
        bp_admin_plan *p = &a->plans[i];
        if (p->scheme == k->scheme &&
            (k->scheme == BP_SCHEME_IPN ? p->node == k->node : eq(p->dtn_node, k->dtn)))
            return p;
    }
    return NULL;
}

static bp_admin_exit *find_exit(bp_admin *a, uint64_t first, uint64_t last)
{
    for (size_t i = 0; i < a->nexits; i++)
        if (a->exits[i].first == first && (last == 0 || a->exits[i].last == last))
            return &a->exits[i];
    return NULL;
}

/* Parses a plan's node ID: "ipn:N.0" or "dtn://name" (a trailing '/' is
 * allowed). On error *why says what was wrong. */
static int parse_plan_key(const char *s, plan_key *k, const char **why)
{
    memset(k, 0, sizeof *k);
    if (strncmp(s, "dtn://", 6) == 0) {
        const char *name = s + 6;
        size_t n = strcspn(name, "/");
        if (n == 0) {
            *why = "no node name after dtn://";
            return -1;
        }
        if (name[n] && !eq(name + n, "/")) {
            *why = "it names an endpoint (node/demux), not a node";
            return -1;
        }
        char buf[BP_DTN_SSP_MAX + 8];
        if (n + 3 > BP_DTN_SSP_MAX) {
            *why = "dtn node name too long";
            return -1;
        }
        /* bp_eid_parse checks the characters of the node name. */
        snprintf(buf, sizeof buf, "dtn://%.*s/", (int)n, name);
        bp_eid e;
        if (bp_eid_parse(buf, &e, why) != 0)
            return -1;
        k->scheme = BP_SCHEME_DTN;
        snprintf(k->dtn, sizeof k->dtn, "//%.*s", (int)n, name);
        return 0;
    }
    bp_eid e;
    *why = NULL;
    if (bp_eid_parse(s, &e, why) != 0) {
        if (!*why)
            *why = "not an EID";
        return -1;
    }
    if (e.scheme != BP_SCHEME_IPN) {
        *why = "plans are for ipn or dtn nodes";
        return -1;
    }
    if (e.service != 0) {
        *why = "a node ID has service number 0";
        return -1;
    }
    if (e.node == 0) {
        *why = "node number 0 is not a node";
        return -1;
    }
    k->scheme = BP_SCHEME_IPN;
    k->node = e.node;
    return 0;
}

static int plan_key_print(const plan_key *k, char *out, size_t cap)
{
    if (k->scheme == BP_SCHEME_IPN)
        return snprintf(out, cap, "ipn:%" PRIu64 ".0", k->node);
    return snprintf(out, cap, "dtn:%s", k->dtn);
}

static int plan_name(const bp_admin_plan *p, char *out, size_t cap)
{
    plan_key k;
    memset(&k, 0, sizeof k);
    k.scheme = p->scheme;
    k.node = p->node;
    snprintf(k.dtn, sizeof k.dtn, "%s", p->dtn_node);
    return plan_key_print(&k, out, cap);
}

/* ---------------------------------------------------------------- listings */

typedef struct out_buf {
    char *p;
    size_t cap, n;
} out_buf;

__attribute__((format(printf, 2, 3))) static void put(out_buf *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(o->p && o->n < o->cap ? o->p + o->n : NULL,
                      o->n < o->cap ? o->cap - o->n : 0, fmt, ap);
    va_end(ap);
    if (k > 0)
        o->n += (size_t)k;
}

static void put_scheme(out_buf *o, const bp_admin_scheme *s)
{
    put(o, "scheme %s: forwarder '%s', admin application '%s' (%s:%u)\n", s->name,
        s->forwarder, s->admin_app, s->at.file, s->at.line);
}

static void put_endpoint(out_buf *o, const bp_admin_endpoint *e)
{
    char t[BP_EID_TEXT_MAX];
    bp_eid_print(&e->eid, t, sizeof t);
    put(o, "endpoint %s: rule %c (%s)%s%s%s (%s:%u)\n", t, e->rule,
        e->rule == BP_RECV_QUEUE ? "queue" : "discard",
        e->script[0] ? ", recv script '" : "", e->script, e->script[0] ? "'" : "",
        e->at.file, e->at.line);
}

static void put_protocol(out_buf *o, const bp_admin_protocol *p)
{
    put(o,
        "protocol %s: payload %" PRIu64 " B/frame, overhead %" PRIu64
        " B/frame, nominal rate %" PRIu64 " B/s (%s:%u)\n",
        p->name, p->payload_per_frame, p->overhead_per_frame, p->rate, p->at.file,
        p->at.line);
}

static void put_duct(out_buf *o, const bp_admin_duct *d, int out)
{
    put(o, "%s %s/%s: '%s'", out ? "outduct" : "induct", d->protocol, d->name, d->cmd);
    if (out && d->max_payload)
        put(o, ", max payload %" PRIu64 " B", d->max_payload);
    else if (out)
        put(o, ", max payload none");
    put(o, " (%s:%u)\n", d->at.file, d->at.line);
}

static void put_plan(out_buf *o, const bp_admin_plan *p)
{
    char t[BP_EID_TEXT_MAX];
    plan_name(p, t, sizeof t);
    put(o, "plan %s: ", t);
    if (p->protocol[0])
        put(o, "%s/%s", p->protocol, p->duct);
    else
        put(o, "no duct");
    if (p->rate)
        put(o, ", nominal rate %" PRIu64 " B/s", p->rate);
    put(o, " (%s %s:%u", p->from_ipnadmin ? "ipnadmin" : "bpadmin", p->at.file,
        p->at.line);
    if (p->protocol[0] && !p->from_ipnadmin)
        put(o, ", planduct %s:%u", p->duct_at.file, p->duct_at.line);
    put(o, ")\n");
}

static void put_exit(out_buf *o, const bp_admin_exit *x)
{
    put(o, "exit %" PRIu64 "..%" PRIu64 " via ipn:%" PRIu64 ".%" PRIu64 " (%s:%u)\n",
        x->first, x->last, x->gateway.node, x->gateway.service, x->at.file, x->at.line);
}

/* One table, all of it or the items of one protocol (ducts) / scheme (plans). */
static int list_(const bp_admin *a, const char *obj, const char *filter, int ipn_only,
                 char *out, size_t cap)
{
    out_buf o = {out, cap, 0};
    if (out && cap)
        out[0] = '\0';
    if (eq(obj, "scheme")) {
        for (size_t i = 0; i < a->nschemes; i++)
            put_scheme(&o, &a->schemes[i]);
    } else if (eq(obj, "endpoint")) {
        for (size_t i = 0; i < a->nendpoints; i++)
            put_endpoint(&o, &a->endpoints[i]);
    } else if (eq(obj, "protocol")) {
        for (size_t i = 0; i < a->nprotocols; i++)
            put_protocol(&o, &a->protocols[i]);
    } else if (eq(obj, "induct") || eq(obj, "outduct")) {
        int isout = eq(obj, "outduct");
        const bp_admin_duct *t = isout ? a->outducts : a->inducts;
        size_t n = isout ? a->noutducts : a->ninducts;
        for (size_t i = 0; i < n; i++)
            if (!filter || eq(t[i].protocol, filter))
                put_duct(&o, &t[i], isout);
    } else if (eq(obj, "plan") || eq(obj, "planduct")) {
        for (size_t i = 0; i < a->nplans; i++)
            if (!ipn_only || a->plans[i].scheme == BP_SCHEME_IPN)
                put_plan(&o, &a->plans[i]);
    } else if (eq(obj, "exit")) {
        for (size_t i = 0; i < a->nexits; i++)
            put_exit(&o, &a->exits[i]);
    } else {
        return TERN_ENOTFOUND;
    }
    if (o.n == 0)
        put(&o, "no %s\n", obj);
    return (int)o.n;
}

TERN_API int bp_admin_list(const bp_admin *a, const char *object, char *out, size_t cap)
{
    return list_(a, object, NULL, 0, out, cap);
}

/* ------------------------------------------------------------------ bpadmin */

static int scheme_cmd(bp_admin *a, const tern_rc_cmd *c, char op, char *msg,
                      size_t msglen)
{
    if (op == 'd') {
        if (c->argc != 3)
            SYNTAX("expected 'd scheme <name>'");
        bp_admin_scheme *s = find_scheme(a, c->argv[2]);
        if (!s)
            SYNTAX("no scheme '%s' to delete; expected one listed by 'l scheme'",
                   c->argv[2]);
        DROP(a->schemes, a->nschemes, (size_t)(s - a->schemes));
        return 0;
    }
    if (c->argc != 5)
        SYNTAX("'%c scheme' takes 3 arguments, got %d; expected '%c scheme ipn|dtn "
               "'<forwarder command>' '<admin application command>''",
               op, c->argc - 2, op);
    const char *name = c->argv[2];
    if (!eq(name, "ipn") && !eq(name, "dtn") && !eq(name, "imc"))
        SYNTAX("scheme '%s': expected ipn, dtn or imc", name);
    bp_admin_scheme *s = find_scheme(a, name);
    if (op == 'a' && s)
        SYNTAX("scheme %s exists already (%s:%u); expected 'c scheme' to change it", name,
               s->at.file, s->at.line);
    if (op == 'c' && !s)
        SYNTAX("no scheme %s to change; expected 'a scheme %s ...' first", name, name);
    bp_admin_scheme tmp;
    memset(&tmp, 0, sizeof tmp);
    snprintf(tmp.name, sizeof tmp.name, "%s", name);
    if (copy(tmp.forwarder, sizeof tmp.forwarder, c->argv[3]) ||
        copy(tmp.admin_app, sizeof tmp.admin_app, c->argv[4]))
        SYNTAX("scheme command too long; expected at most %d characters",
               BP_ADMIN_CMD_MAX - 1);
    int rc = where(a, c, &tmp.at);
    if (rc)
        return rc;
    if (!s)
        PUSH(a->schemes, a->nschemes, s);
    *s = tmp;
    return 0;
}

static int parse_endpoint_eid(const tern_rc_cmd *c, const char *s, bp_eid *e, char *msg,
                              size_t msglen)
{
    const char *why = NULL;
    int rc = bp_eid_parse(s, e, &why);
    if (rc)
        SYNTAX("endpoint EID '%s': %s; expected ipn:<node>.<service> or "
               "dtn://<node>/<demux>",
               s, why ? why : tern_strerror(rc));
    if (e->scheme == BP_SCHEME_IMC && e->node == 0)
        SYNTAX("endpoint EID '%s': group 0 is the agent's own (petitions); expected "
               "imc:<group>.<service> with a group above 0",
               s);
    if (e->scheme != BP_SCHEME_IPN && e->scheme != BP_SCHEME_DTN &&
        e->scheme != BP_SCHEME_IMC)
        SYNTAX("endpoint EID '%s': scheme not served; expected an ipn, dtn or imc "
               "endpoint",
               s);
    if (bp_eid_is_none(e))
        SYNTAX("endpoint EID '%s': dtn:none is no endpoint; expected an ipn or dtn "
               "endpoint",
               s);
    return 0;
}

static int endpoint_cmd(bp_admin *a, const tern_rc_cmd *c, char op, char *msg,
                        size_t msglen)
{
    bp_eid e;
    if (op == 'd') {
        if (c->argc != 3)
            SYNTAX("expected 'd endpoint <eid>'");
        int rc = parse_endpoint_eid(c, c->argv[2], &e, msg, msglen);
        if (rc)
            return rc;
        bp_admin_endpoint *ep = find_endpoint(a, &e);
        if (!ep)
            SYNTAX("no endpoint %s to delete; expected one listed by 'l endpoint'",
                   c->argv[2]);
        DROP(a->endpoints, a->nendpoints, (size_t)(ep - a->endpoints));
        return 0;
    }
    if (c->argc < 3 || c->argc > 5)
        SYNTAX("'%c endpoint' takes 1 to 3 arguments, got %d; expected '%c endpoint "
               "<eid> [q|x] ['<recv script>']'",
               op, c->argc - 2, op);
    int rc = parse_endpoint_eid(c, c->argv[2], &e, msg, msglen);
    if (rc)
        return rc;
    int rule = BP_RECV_DISCARD; /* ION's default when the rule is left out */
    if (c->argc >= 4) {
        if (eq(c->argv[3], "q"))
            rule = BP_RECV_QUEUE;
        else if (!eq(c->argv[3], "x"))
            SYNTAX("endpoint rule '%s': expected q (queue bundles until an application "
                   "reads them) or x (discard them)",
                   c->argv[3]);
    }
    bp_admin_endpoint *ep = find_endpoint(a, &e);
    if (op == 'a' && ep)
        SYNTAX("endpoint %s exists already (%s:%u); expected 'c endpoint' to change it",
               c->argv[2], ep->at.file, ep->at.line);
    if (op == 'c' && !ep)
        SYNTAX("no endpoint %s to change; expected 'a endpoint %s ...' first", c->argv[2],
               c->argv[2]);
    bp_admin_endpoint tmp;
    memset(&tmp, 0, sizeof tmp);
    tmp.eid = e;
    tmp.rule = rule;
    if (c->argc == 5 && copy(tmp.script, sizeof tmp.script, c->argv[4]))
        SYNTAX("recv script too long; expected at most %d characters",
               BP_ADMIN_CMD_MAX - 1);
    rc = where(a, c, &tmp.at);
    if (rc)
        return rc;
    if (!ep)
        PUSH(a->endpoints, a->nendpoints, ep);
    *ep = tmp;
    return 0;
}

static int protocol_cmd(bp_admin *a, const tern_rc_cmd *c, char op, char *msg,
                        size_t msglen)
{
    const char *name = c->argc > 2 ? c->argv[2] : "";
    if (op == 'd') {
        if (c->argc != 3)
            SYNTAX("expected 'd protocol <name>'");
        bp_admin_protocol *p = find_protocol(a, name);
        if (!p)
            SYNTAX("no protocol '%s' to delete; expected one listed by 'l protocol'",
                   name);
        const bp_admin_duct *d = NULL;
        for (size_t i = 0; i < a->noutducts && !d; i++)
            if (eq(a->outducts[i].protocol, name))
                d = &a->outducts[i];
        for (size_t i = 0; i < a->ninducts && !d; i++)
            if (eq(a->inducts[i].protocol, name))
                d = &a->inducts[i];
        if (d)
            SYNTAX("protocol %s still has duct %s (%s:%u); expected its ducts deleted "
                   "first",
                   name, d->name, d->at.file, d->at.line);
        DROP(a->protocols, a->nprotocols, (size_t)(p - a->protocols));
        return 0;
    }
    if (op != 'a')
        IGNORE("'%c protocol' is accepted but has no effect in Tern", op);
    if (c->argc != 3 && c->argc != 5 && c->argc != 6)
        SYNTAX("'a protocol' takes 1, 3 or 4 arguments, got %d; expected 'a protocol "
               "<name> [<payload bytes per frame> <overhead bytes per frame> [<nominal "
               "rate>]]'",
               c->argc - 2);
    if (!protocol_ok(name))
        SYNTAX("protocol name '%s': expected a word of letters, digits, '-' or '_' (at "
               "most %d)",
               name, BP_ADMIN_NAME_MAX - 1);
    bp_admin_protocol tmp;
    memset(&tmp, 0, sizeof tmp);
    snprintf(tmp.name, sizeof tmp.name, "%s", name);
    if (c->argc >= 5) {
        if (parse_u64(c->argv[3], UINT32_MAX, &tmp.payload_per_frame))
            SYNTAX("payload bytes per frame '%s': expected a number of bytes",
                   c->argv[3]);
        if (parse_u64(c->argv[4], UINT32_MAX, &tmp.overhead_per_frame))
            SYNTAX("overhead bytes per frame '%s': expected a number of bytes",
                   c->argv[4]);
    }
    if (c->argc == 6 && parse_u64(c->argv[5], UINT64_MAX, &tmp.rate))
        SYNTAX("nominal rate '%s': expected bytes per second", c->argv[5]);
    bp_admin_protocol *p = find_protocol(a, name);
    if (p)
        SYNTAX("protocol %s exists already (%s:%u); expected each protocol added once",
               name, p->at.file, p->at.line);
    int rc = where(a, c, &tmp.at);
    if (rc)
        return rc;
    PUSH(a->protocols, a->nprotocols, p);
    *p = tmp;
    return 0;
}

/* Checks a duct name; for ltp it is an LTP engine number. */
static int duct_name_check(const tern_rc_cmd *c, const char *kind, const char *proto,
                           const char *name, char *msg, size_t msglen)
{
    uint64_t v;
    if (!name[0] || strlen(name) >= BP_ADMIN_DUCT_MAX)
        SYNTAX("%s name '%s': expected 1 to %d characters", kind, name,
               BP_ADMIN_DUCT_MAX - 1);
    if (eq(proto, "ltp") && (parse_u64(name, UINT64_MAX, &v) || v == 0))
        SYNTAX("ltp %s name '%s': expected an LTP engine number", kind, name);
    return 0;
}

/* The CLI/CLO command of an ltp or udp duct, which names its protocol's
 * program (ION's ltpcli, udpclo, ...). Tern runs ltp ducts and udp inducts
 * without one, so another command is a warning (BP_ADMIN_IGNORED); a udp
 * outduct reads its rate from "udpclo <rate>", so there it is an error. The
 * TCP convergence layers check their own when the duct opens. */
static int duct_command_check(const char *kind, const char *proto, const char *cmd,
                              char *why, size_t cap)
{
    int out = kind[0] == 'o', udp = eq(proto, "udp");
    if (!udp && !eq(proto, "ltp"))
        return 0;
    char want[16];
    snprintf(want, sizeof want, "%s%s", proto, out ? "clo" : "cli");
    const char *s = cmd + strspn(cmd, " \t");
    size_t w = strcspn(s, " \t");
    if (!*s)
        return 0; /* none given: nothing run, nothing to say */
    if (udp && out) {
        const char *r = s + w + strspn(s + w, " \t");
        size_t rl = strcspn(r, " \t");
        if (w != 6 || strncmp(s, want, 6) != 0 || r[rl + strspn(r + rl, " \t")] ||
            (rl && (rl > 19 || strspn(r, "0123456789") != rl))) {
            snprintf(why, cap, "expected 'udpclo [<rate bits/s>]'");
            return TERN_ESYNTAX;
        }
        return 0;
    }
    if (w == strlen(want) && strncmp(s, want, w) == 0)
        return 0;
    snprintf(why, cap,
             "is not '%s', the command of %s %ss; Tern's %s %s runs without it (ignored)",
             want, proto, kind, proto, kind);
    return BP_ADMIN_IGNORED;
}

static int duct_cmd(bp_admin *a, const tern_rc_cmd *c, char op, int out, char *msg,
                    size_t msglen)
{
    const char *kind = out ? "outduct" : "induct";
    bp_admin_duct **tab = out ? &a->outducts : &a->inducts;
    size_t *n = out ? &a->noutducts : &a->ninducts;
    if (op == 'd') {
        if (c->argc != 4)
            SYNTAX("expected 'd %s <protocol> <duct name>'", kind);
        bp_admin_duct *d = find_duct(*tab, *n, c->argv[2], c->argv[3]);
        if (!d)
            SYNTAX("no %s %s/%s to delete; expected one listed by 'l %s'", kind,
                   c->argv[2], c->argv[3], kind);
        if (out)
            for (size_t i = 0; i < a->nplans; i++)
                if (eq(a->plans[i].protocol, d->protocol) &&
                    eq(a->plans[i].duct, d->name))
                    SYNTAX(
                        "outduct %s/%s is used by the plan at %s:%u; expected the plan "
                        "or its planduct deleted first",
                        d->protocol, d->name, a->plans[i].at.file, a->plans[i].at.line);
        DROP(*tab, *n, (size_t)(d - *tab));
        return 0;
    }
    int maxargc = out ? 6 : 5;
    if (c->argc != 5 && c->argc != maxargc)
        SYNTAX("'%c %s' takes %s arguments, got %d; expected '%c %s <protocol> <duct "
               "name> '<%s command>'%s'",
               op, kind, out ? "3 or 4" : "3", c->argc - 2, op, kind, out ? "CLO" : "CLI",
               out ? " [max payload length]" : "");
    const char *proto = c->argv[2], *name = c->argv[3];
    if (!protocol_ok(proto))
        SYNTAX("protocol name '%s': expected a word of letters, digits, '-' or '_'",
               proto);
    if (!find_protocol(a, proto))
        SYNTAX("no protocol '%s'; expected 'a protocol %s' before '%c %s %s %s'", proto,
               proto, op, kind, proto, name);
    int rc = duct_name_check(c, kind, proto, name, msg, msglen);
    if (rc)
        return rc;
    bp_admin_duct tmp;
    memset(&tmp, 0, sizeof tmp);
    snprintf(tmp.protocol, sizeof tmp.protocol, "%s", proto);
    snprintf(tmp.name, sizeof tmp.name, "%s", name);
    if (copy(tmp.cmd, sizeof tmp.cmd, c->argv[4]))
        SYNTAX("%s command too long; expected at most %d characters", kind,
               BP_ADMIN_CMD_MAX - 1);
    if (c->argc == 6 && parse_u64(c->argv[5], SIZE_MAX, &tmp.max_payload))
        SYNTAX("max payload length '%s': expected a number of bytes (0: no limit)",
               c->argv[5]);
    char why[160] = "";
    int cmd_rc = duct_command_check(kind, proto, tmp.cmd, why, sizeof why);
    if (cmd_rc == TERN_ESYNTAX)
        SYNTAX("%s %s/%s: command '%s': %s", kind, proto, name, tmp.cmd, why);
    bp_admin_duct *d = find_duct(*tab, *n, proto, name);
    if (op == 'a' && d)
        SYNTAX("%s %s/%s exists already (%s:%u); expected 'c %s' to change it", kind,
               proto, name, d->at.file, d->at.line, kind);
    if (op == 'c' && !d)
        SYNTAX("no %s %s/%s to change; expected 'a %s' first", kind, proto, name, kind);
    rc = where(a, c, &tmp.at);
    if (rc)
        return rc;
    if (!d) {
        if (out)
            PUSH(a->outducts, a->noutducts, d);
        else
            PUSH(a->inducts, a->ninducts, d);
    }
    *d = tmp;
    if (cmd_rc == BP_ADMIN_IGNORED)
        IGNORE("%s %s/%s: command '%s' %s", kind, proto, name, tmp.cmd, why);
    return 0;
}

static int plan_key_arg(const tern_rc_cmd *c, const char *s, plan_key *k, char *msg,
                        size_t msglen)
{
    const char *why = NULL;
    if (parse_plan_key(s, k, &why))
        SYNTAX("plan EID '%s': %s; expected ipn:<node>.0 or dtn://<node>", s,
               why ? why : "malformed");
    return 0;
}

static int bp_plan_cmd(bp_admin *a, const tern_rc_cmd *c, char op, char *msg,
                       size_t msglen)
{
    plan_key k;
    uint64_t rate = 0;
    if (op == 'a' && c->argc == 4 && strchr(c->argv[3], '/') &&
        parse_u64(c->argv[2], UINT64_MAX, &rate) == 0)
        SYNTAX("'a plan %s %s' is ipnadmin syntax; in bpadmin (ION 4.1) expected 'a "
               "plan ipn:%s.0' then 'a planduct ipn:%s.0 <protocol> <duct>'",
               c->argv[2], c->argv[3], c->argv[2], c->argv[2]);
    if (op == 'd' ? c->argc != 3 : c->argc != 3 && c->argc != 4)
        SYNTAX(op == 'd' ? "expected 'd plan <eid>'"
                         : "expected '%c plan <node eid: ipn:N.0 or dtn://name> [nominal "
                           "rate, bytes/s]'",
               op);
    int rc = plan_key_arg(c, c->argv[2], &k, msg, msglen);
    if (rc)
        return rc;
    if (c->argc == 4 && parse_u64(c->argv[3], UINT64_MAX, &rate))
        SYNTAX("nominal rate '%s': expected bytes per second", c->argv[3]);
    bp_admin_plan *p = find_plan(a, &k);
    if (op == 'd') {
        if (!p)
            SYNTAX("no plan for %s to delete; expected one listed by 'l plan'",
                   c->argv[2]);
        DROP(a->plans, a->nplans, (size_t)(p - a->plans));
        return 0;
    }
    if (op == 'a' && p)
        SYNTAX("a plan for %s exists already (%s:%u); expected 'c plan' to change it",
               c->argv[2], p->at.file, p->at.line);
    if (op == 'c') {
        if (!p)
            SYNTAX("no plan for %s to change; expected 'a plan %s' first", c->argv[2],
                   c->argv[2]);
        p->rate = rate;
        return 0;
    }
    bp_admin_where w;
    if ((rc = where(a, c, &w)))
        return rc;
    PUSH(a->plans, a->nplans, p);
    p->scheme = k.scheme;
    p->node = k.node;
    snprintf(p->dtn_node, sizeof p->dtn_node, "%s", k.dtn);
    p->rate = rate;
    p->at = w;
    return 0;
}

static int planduct_cmd(bp_admin *a, const tern_rc_cmd *c, char op, char *msg,
                        size_t msglen)
{
    plan_key k;
    int rc;
    if (op == 'd') {
        /* ION names the duct alone; the plan may be given first. */
        if (c->argc != 4 && c->argc != 5)
            SYNTAX("expected 'd planduct [<plan eid>] <protocol> <duct name>'");
        if (c->argc == 5 && (rc = plan_key_arg(c, c->argv[2], &k, msg, msglen)))
            return rc;
        const char *proto = c->argv[c->argc - 2], *duct = c->argv[c->argc - 1];
        int found = 0;
        for (size_t i = 0; i < a->nplans; i++) {
            bp_admin_plan *p = &a->plans[i];
            if (c->argc == 5 && p != find_plan(a, &k))
                continue;
            if (eq(p->protocol, proto) && eq(p->duct, duct)) {
                p->protocol[0] = p->duct[0] = '\0';
                found = 1;
            }
        }
        if (!found)
            SYNTAX("no plan uses duct %s/%s; expected a duct named by 'a planduct'",
                   proto, duct);
        return 0;
    }
    if (op != 'a' || c->argc != 5)
        SYNTAX("expected 'a planduct <plan eid> <protocol> <duct name>'");
    if ((rc = plan_key_arg(c, c->argv[2], &k, msg, msglen)))
        return rc;
    const char *proto = c->argv[3], *duct = c->argv[4];
    bp_admin_plan *p = find_plan(a, &k);
    if (!p)
        SYNTAX("no plan for %s; expected 'a plan %s' before 'a planduct'", c->argv[2],
               c->argv[2]);
    if (!find_duct(a->outducts, a->noutducts, proto, duct))
        SYNTAX("no outduct %s/%s; expected 'a outduct %s %s ...' before 'a planduct'",
               proto, duct, proto, duct);
    if (p->protocol[0]) {
        if (eq(p->protocol, proto) && eq(p->duct, duct))
            IGNORE("plan %s already uses %s/%s (%s:%u)", c->argv[2], proto, duct,
                   p->duct_at.file, p->duct_at.line);
        IGNORE("plan %s already uses %s/%s (%s:%u); Tern sends a plan's bundles through "
               "one duct, so %s/%s is not used",
               c->argv[2], p->protocol, p->duct, p->duct_at.file, p->duct_at.line, proto,
               duct);
    }
    bp_admin_where w;
    if ((rc = where(a, c, &w)))
        return rc;
    snprintf(p->protocol, sizeof p->protocol, "%s", proto);
    snprintf(p->duct, sizeof p->duct, "%s", duct);
    p->duct_at = w;
    return 0;
}

/* "i <object> <key...>": the one item, as its "l" line. */
static int bp_info_cmd(bp_admin *a, const tern_rc_cmd *c, char *msg, size_t msglen)
{
    const char *obj = c->argv[1];
    out_buf o = {msg, msglen, 0};
    if (eq(obj, "scheme") && c->argc == 3) {
        bp_admin_scheme *s = find_scheme(a, c->argv[2]);
        if (!s)
            SYNTAX("no scheme '%s'; expected one listed by 'l scheme'", c->argv[2]);
        put_scheme(&o, s);
        return 0;
    }
    if (eq(obj, "endpoint") && c->argc == 3) {
        bp_eid e;
        int rc = parse_endpoint_eid(c, c->argv[2], &e, msg, msglen);
        if (rc)
            return rc;
        bp_admin_endpoint *ep = find_endpoint(a, &e);
        if (!ep)
            SYNTAX("no endpoint %s; expected one listed by 'l endpoint'", c->argv[2]);
        put_endpoint(&o, ep);
        return 0;
    }
    if (eq(obj, "protocol") && c->argc == 3) {
        bp_admin_protocol *p = find_protocol(a, c->argv[2]);
        if (!p)
            SYNTAX("no protocol '%s'; expected one listed by 'l protocol'", c->argv[2]);
        put_protocol(&o, p);
        return 0;
    }
    if ((eq(obj, "induct") || eq(obj, "outduct")) && c->argc == 4) {
        int out = eq(obj, "outduct");
        bp_admin_duct *d =
            out ? find_duct(a->outducts, a->noutducts, c->argv[2], c->argv[3])
                : find_duct(a->inducts, a->ninducts, c->argv[2], c->argv[3]);
        if (!d)
            SYNTAX("no %s %s/%s; expected one listed by 'l %s'", obj, c->argv[2],
                   c->argv[3], obj);
        put_duct(&o, d, out);
        return 0;
    }
    if (eq(obj, "plan") && c->argc == 3) {
        plan_key k;
        int rc = plan_key_arg(c, c->argv[2], &k, msg, msglen);
        if (rc)
            return rc;
        bp_admin_plan *p = find_plan(a, &k);
        if (!p)
            SYNTAX("no plan for %s; expected one listed by 'l plan'", c->argv[2]);
        put_plan(&o, p);
        return 0;
    }
    SYNTAX("expected 'i scheme <name>', 'i endpoint <eid>', 'i protocol <name>', 'i "
           "induct|outduct <protocol> <duct>' or 'i plan <eid>'");
}

static const char *const bp_objects[] = {"scheme",  "endpoint", "protocol", "induct",
                                         "outduct", "plan",     "planduct", NULL};

/* ION bpadmin objects Tern accepts without acting on them. */
static const char *const bp_ignored_objects[] = {"egress", "ingress", "bcla", "router",
                                                 NULL};

static int in(const char *s, const char *const *set)
{
    for (; *set; set++)
        if (eq(s, *set))
            return 1;
    return 0;
}

/* What an unknown command is compared with for a suggestion. */
static const char *const bp_commands[] = {
    "1",          "a scheme",   "c scheme",   "d scheme",   "a endpoint",
    "c endpoint", "d endpoint", "a protocol", "d protocol", "a induct",
    "c induct",   "d induct",   "a outduct",  "c outduct",  "d outduct",
    "a plan",     "c plan",     "d plan",     "a planduct", "d planduct",
    "s",          "x",          "w",          "m heapmax",  "m statusreports",
    "l scheme",   "l endpoint", "l protocol", "l induct",   "l outduct",
    "l plan",     "i scheme",   "i endpoint", "i protocol", "i induct",
    "i outduct",  "i plan",     NULL};

static const char *const ipn_commands[] = {"a plan", "c plan", "d plan", "a exit",
                                           "c exit", "d exit", "l plan", "l exit",
                                           "i plan", "i exit", NULL};

TERN_API int bp_bpadmin_apply(bp_admin *a, const tern_rc_cmd *c, char *msg, size_t msglen)
{
    if (msg && msglen)
        msg[0] = '\0';
    if (!a || !c || c->argc < 1 || !c->argv)
        return -EINVAL;
    const char *op = c->argv[0];
    const char *obj = c->argc > 1 ? c->argv[1] : "";
    if (eq(op, "1")) {
        a->initialized = 1;
        if (c->argc > 1)
            IGNORE("bpadmin '1' takes no arguments; '%s' has no effect", c->argv[1]);
        return 0;
    }
    if (eq(op, "e") || eq(op, "h") || eq(op, "?") || eq(op, "v") || eq(op, "r"))
        IGNORE("bpadmin '%s' is accepted but has no effect in Tern", op);
    if (eq(op, "w")) {
        if (c->argc != 2)
            SYNTAX("expected 'w 0', 'w 1' or 'w <activity letters>'");
        if (eq(obj, "0") || eq(obj, "1")) {
            a->watch = obj[0] == '1';
            return 0;
        }
        for (const char *p = obj; *p; p++)
            if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '~' ||
                  *p == '&' || *p == '*' || *p == '#' || *p == '$'))
                SYNTAX("watch '%s': expected 0, 1 or activity letters", obj);
        a->watch = 1;
        return 0;
    }
    if ((eq(op, "l") || eq(op, "i")) && c->argc >= 2) {
        if (!in(obj, bp_objects)) {
            char dym[200];
            SYNTAX("unknown bpadmin command '%s %s'%s; expected %s scheme, endpoint, "
                   "protocol, induct, outduct or plan",
                   op, obj,
                   tern_did_you_mean(tern_suggest_cmd(c, bp_commands), dym, sizeof dym),
                   op);
        }
        if (eq(op, "i"))
            return bp_info_cmd(a, c, msg, msglen);
        if (c->argc > 3 || (c->argc == 3 && !eq(obj, "induct") && !eq(obj, "outduct")))
            SYNTAX("expected 'l %s'%s", obj,
                   eq(obj, "induct") || eq(obj, "outduct") ? " [<protocol>]" : "");
        list_(a, obj, c->argc == 3 ? c->argv[2] : NULL, 0, msg, msglen);
        return 0;
    }
    int acts = eq(op, "a") || eq(op, "c") || eq(op, "d");
    if ((eq(op, "b") || eq(op, "u")) && c->argc >= 2 && in(obj, bp_objects))
        IGNORE("'%s %s' (%s) is accepted but has no effect in Tern", op, obj,
               op[0] == 'b' ? "block" : "unblock");
    if ((acts || eq(op, "i") || eq(op, "l")) && c->argc >= 2 &&
        in(obj, bp_ignored_objects))
        IGNORE("'%s %s' is accepted but has no effect in Tern", op, obj);
    int known = eq(op, "s") || eq(op, "x") || eq(op, "m") ||
                (acts && c->argc >= 2 && in(obj, bp_objects));
    if (known && !a->initialized)
        SYNTAX("'%s%s%s' before '1'; expected bpadmin's initialize command '1' first", op,
               c->argc > 1 ? " " : "", obj);
    if (eq(op, "s") || eq(op, "x")) {
        if (c->argc > 2)
            SYNTAX("expected '%s' or '%s <protocol>'", op, op);
        a->started = op[0] == 's';
        if (c->argc == 2)
            IGNORE("'%s %s': Tern %s all protocols together; treated as '%s'", op, obj,
                   op[0] == 's' ? "starts" : "stops", op);
        return 0;
    }
    if (eq(op, "m")) {
        if (c->argc < 2)
            SYNTAX("expected 'm heapmax <bytes>' or 'm statusreports on|off'");
        if (eq(obj, "heapmax")) {
            if (c->argc != 3 || parse_u64(c->argv[2], UINT64_MAX, &a->heapmax))
                SYNTAX("heapmax '%s': expected 'm heapmax <bytes>'",
                       c->argc > 2 ? c->argv[2] : "");
            return 0;
        }
        if (eq(obj, "statusreports")) {
            const char *v = c->argc == 3 ? c->argv[2] : "";
            if (c->argc != 3 ||
                !(eq(v, "on") || eq(v, "off") || eq(v, "1") || eq(v, "0")))
                SYNTAX("statusreports '%s': expected 'm statusreports on' or "
                       "'m statusreports off'",
                       v);
            a->status_reports = eq(v, "on") || eq(v, "1");
            return 0;
        }
        char dym[200];
        IGNORE("'m %s' is accepted but has no effect in Tern%s", obj,
               tern_did_you_mean(tern_suggest_cmd(c, bp_commands), dym, sizeof dym));
    }
    if (known) {
        char o = op[0];
        if (eq(obj, "scheme"))
            return scheme_cmd(a, c, o, msg, msglen);
        if (eq(obj, "endpoint"))
            return endpoint_cmd(a, c, o, msg, msglen);
        if (eq(obj, "protocol"))
            return protocol_cmd(a, c, o, msg, msglen);
        if (eq(obj, "induct") || eq(obj, "outduct"))
            return duct_cmd(a, c, o, eq(obj, "outduct"), msg, msglen);
        if (eq(obj, "plan"))
            return bp_plan_cmd(a, c, o, msg, msglen);
        return planduct_cmd(a, c, o, msg, msglen);
    }
    char head[160], dym[200];
    SYNTAX("unknown bpadmin command '%s'%s; expected 1, a|c|d scheme, a|c|d endpoint, "
           "a|d protocol, a|c|d induct, a|c|d outduct, a|c|d plan, a|d planduct, s, x, "
           "w, m heapmax, m statusreports, l <object> or i <object> <name>",
           tern_cmd_head(c, 2, head, sizeof head),
           tern_did_you_mean(tern_suggest_cmd(c, bp_commands), dym, sizeof dym));
}

/* ----------------------------------------------------------------- ipnadmin */

/* ipnadmin names a node by number; "ipn:N.0" is accepted too (the Guide's
 * BIBE example writes plans that way). */
static int ipn_node_arg(const tern_rc_cmd *c, const char *what, const char *s,
                        uint64_t *node, char *msg, size_t msglen)
{
    if (parse_u64(s, UINT64_MAX, node) == 0) {
        if (*node == 0)
            SYNTAX(
                "%s '%s': node number 0 is not a node; expected a positive node number",
                what, s);
        return 0;
    }
    plan_key k;
    const char *why = NULL;
    if (strncmp(s, "ipn:", 4) == 0 && parse_plan_key(s, &k, &why) == 0) {
        *node = k.node;
        return 0;
    }
    SYNTAX("%s '%s'%s%s: expected a node number (or ipn:<node>.0)", what, s,
           why ? ": " : "", why ? why : "");
}

static int duct_expr(const tern_rc_cmd *c, const char *s, char *proto, char *duct,
                     char *msg, size_t msglen)
{
    const char *slash = strchr(s, '/');
    size_t n = slash ? (size_t)(slash - s) : 0;
    if (!slash || n == 0 || n >= BP_ADMIN_NAME_MAX || !slash[1])
        SYNTAX("duct expression '%s': expected <protocol>/<outduct name>, e.g. ltp/2", s);
    memcpy(proto, s, n);
    proto[n] = '\0';
    if (!protocol_ok(proto))
        SYNTAX("duct expression '%s': protocol '%s' is not a protocol name; expected "
               "<protocol>/<outduct name>",
               s, proto);
    int rc = duct_name_check(c, "outduct", proto, slash + 1, msg, msglen);
    if (rc)
        return rc;
    snprintf(duct, BP_ADMIN_DUCT_MAX, "%s", slash + 1);
    return 0;
}

static int ipn_plan_cmd(bp_admin *a, const tern_rc_cmd *c, char op, char *msg,
                        size_t msglen)
{
    plan_key k;
    memset(&k, 0, sizeof k);
    k.scheme = BP_SCHEME_IPN;
    if (op == 'd') {
        if (c->argc != 3)
            SYNTAX("expected 'd plan <node number>'");
        int rc = ipn_node_arg(c, "plan node", c->argv[2], &k.node, msg, msglen);
        if (rc)
            return rc;
        bp_admin_plan *p = find_plan(a, &k);
        if (!p)
            SYNTAX("no plan for node %" PRIu64
                   " to delete; expected one listed by 'l plan'",
                   k.node);
        DROP(a->plans, a->nplans, (size_t)(p - a->plans));
        return 0;
    }
    if (c->argc != 4 && c->argc != 5)
        SYNTAX("'%c plan' takes 2 or 3 arguments, got %d; expected '%c plan <node "
               "number> <protocol>/<outduct name> [nominal rate, bytes/s]'",
               op, c->argc - 2, op);
    int rc = ipn_node_arg(c, "plan node", c->argv[2], &k.node, msg, msglen);
    if (rc)
        return rc;
    char proto[BP_ADMIN_NAME_MAX] = "", duct[BP_ADMIN_DUCT_MAX] = "";
    uint64_t rate = 0;
    int has_duct = 1;
    const char *rate_s = c->argc == 5 ? c->argv[4] : NULL;
    if (op == 'c' && c->argc == 4 && !strchr(c->argv[3], '/')) {
        has_duct = 0; /* "c plan N <rate>" */
        rate_s = c->argv[3];
    }
    if (has_duct && (rc = duct_expr(c, c->argv[3], proto, duct, msg, msglen)))
        return rc;
    if (rate_s && parse_u64(rate_s, UINT64_MAX, &rate))
        SYNTAX("nominal rate '%s': expected bytes per second", rate_s);
    bp_admin_plan *p = find_plan(a, &k);
    if (op == 'a' && p)
        SYNTAX("a plan for node %" PRIu64 " exists already (%s:%u); expected 'c plan' to "
               "change it",
               k.node, p->at.file, p->at.line);
    if (op == 'c' && !p)
        SYNTAX("no plan for node %" PRIu64 " to change; expected 'a plan' first", k.node);
    bp_admin_where w;
    if ((rc = where(a, c, &w)))
        return rc;
    if (!p) {
        PUSH(a->plans, a->nplans, p);
        p->from_ipnadmin = 1;
        p->scheme = BP_SCHEME_IPN;
        p->node = k.node;
        p->at = w;
    }
    if (has_duct) {
        snprintf(p->protocol, sizeof p->protocol, "%s", proto);
        snprintf(p->duct, sizeof p->duct, "%s", duct);
        p->duct_at = w;
    }
    if (rate_s || op == 'a')
        p->rate = rate;
    return 0;
}

static int exit_cmd(bp_admin *a, const tern_rc_cmd *c, char op, char *msg, size_t msglen)
{
    uint64_t first, last;
    int want = op == 'd' ? 4 : 5;
    if (c->argc != want)
        SYNTAX(op == 'd'
                   ? "expected 'd exit <first node> <last node>'"
                   : "expected '%c exit <first node> <last node> <gateway eid, e.g. "
                     "ipn:3.0>'",
               op);
    if (parse_u64(c->argv[2], UINT64_MAX, &first) || first == 0)
        SYNTAX("exit first node '%s': expected a positive node number", c->argv[2]);
    if (parse_u64(c->argv[3], UINT64_MAX, &last) || last == 0)
        SYNTAX("exit last node '%s': expected a positive node number", c->argv[3]);
    if (last < first)
        SYNTAX("exit last node %" PRIu64 " is below first node %" PRIu64
               "; expected first <= last",
               last, first);
    bp_admin_exit *x = find_exit(a, first, last);
    if (op == 'd') {
        if (!x)
            SYNTAX("no exit %" PRIu64 "..%" PRIu64
                   " to delete; expected one listed by 'l exit'",
                   first, last);
        DROP(a->exits, a->nexits, (size_t)(x - a->exits));
        return 0;
    }
    bp_eid gw;
    const char *why = NULL;
    int rc = bp_eid_parse(c->argv[4], &gw, &why);
    if (rc)
        SYNTAX("exit gateway EID '%s': %s; expected ipn:<node>.0", c->argv[4],
               why ? why : tern_strerror(rc));
    if (gw.scheme != BP_SCHEME_IPN || gw.node == 0)
        SYNTAX("exit gateway EID '%s': expected an ipn node, e.g. ipn:3.0", c->argv[4]);
    if (op == 'a') {
        bp_admin_exit *o = find_exit(a, first, 0);
        if (o)
            SYNTAX("an exit starting at node %" PRIu64
                   " exists already (%s:%u); expected "
                   "'c exit' to change it",
                   first, o->at.file, o->at.line);
    } else if (!x) {
        SYNTAX("no exit %" PRIu64 "..%" PRIu64 " to change; expected 'a exit' first",
               first, last);
    }
    bp_admin_where w;
    if ((rc = where(a, c, &w)))
        return rc;
    if (!x)
        PUSH(a->exits, a->nexits, x);
    x->first = first;
    x->last = last;
    x->gateway = gw;
    x->at = w;
    return 0;
}

TERN_API int bp_ipnadmin_apply(bp_admin *a, const tern_rc_cmd *c, char *msg,
                               size_t msglen)
{
    if (msg && msglen)
        msg[0] = '\0';
    if (!a || !c || c->argc < 1 || !c->argv)
        return -EINVAL;
    const char *op = c->argv[0];
    const char *obj = c->argc > 1 ? c->argv[1] : "";
    int acts = eq(op, "a") || eq(op, "c") || eq(op, "d");
    if (acts && eq(obj, "plan"))
        return ipn_plan_cmd(a, c, op[0], msg, msglen);
    if (acts && eq(obj, "exit"))
        return exit_cmd(a, c, op[0], msg, msglen);
    if (eq(op, "l") && (eq(obj, "plan") || eq(obj, "exit"))) {
        if (c->argc != 2)
            SYNTAX("expected 'l %s'", obj);
        list_(a, obj, NULL, 1, msg, msglen);
        return 0;
    }
    if (eq(op, "i") && eq(obj, "plan")) {
        plan_key k;
        memset(&k, 0, sizeof k);
        k.scheme = BP_SCHEME_IPN;
        if (c->argc != 3)
            SYNTAX("expected 'i plan <node number>'");
        int rc = ipn_node_arg(c, "plan node", c->argv[2], &k.node, msg, msglen);
        if (rc)
            return rc;
        bp_admin_plan *p = find_plan(a, &k);
        if (!p)
            SYNTAX("no plan for node %" PRIu64 "; expected one listed by 'l plan'",
                   k.node);
        out_buf o = {msg, msglen, 0};
        put_plan(&o, p);
        return 0;
    }
    if (eq(op, "i") && eq(obj, "exit")) {
        uint64_t first, last;
        if (c->argc != 4 || parse_u64(c->argv[2], UINT64_MAX, &first) ||
            parse_u64(c->argv[3], UINT64_MAX, &last))
            SYNTAX("expected 'i exit <first node> <last node>'");
        bp_admin_exit *x = find_exit(a, first, last);
        if (!x)
            SYNTAX("no exit %" PRIu64 "..%" PRIu64 "; expected one listed by 'l exit'",
                   first, last);
        out_buf o = {msg, msglen, 0};
        put_exit(&o, x);
        return 0;
    }
    if (eq(op, "e") || eq(op, "h") || eq(op, "?") || eq(op, "v"))
        IGNORE("ipnadmin '%s' is accepted but has no effect in Tern", op);
    if ((acts || eq(op, "i") || eq(op, "l")) &&
        (eq(obj, "planrule") || eq(obj, "exitrule") || eq(obj, "rule") ||
         eq(obj, "group")))
        IGNORE("ipnadmin '%s %s' is accepted but has no effect in Tern", op, obj);
    if ((eq(op, "b") || eq(op, "u")) && eq(obj, "plan"))
        IGNORE("'%s plan' (%s) is accepted but has no effect in Tern", op,
               op[0] == 'b' ? "block" : "unblock");
    char head[160], dym[200];
    SYNTAX("unknown ipnadmin command '%s'%s; expected a|c|d plan, a|c|d exit, l plan, l "
           "exit, i plan <node> or i exit <first> <last>",
           tern_cmd_head(c, 2, head, sizeof head),
           tern_did_you_mean(tern_suggest_cmd(c, ipn_commands), dym, sizeof dym));
}

/* ---------------------------------------------------------------- configure */

#define FAIL_AT(w, rc, ...)                                                              \
    do {                                                                                 \
        say_at((w)->file, (w)->line, msg, msglen, __VA_ARGS__);                          \
        return (rc);                                                                     \
    } while (0)

TERN_API int bp_admin_configure(const bp_admin *a, bp_agent *agent, char *msg,
                                size_t msglen)
{
    char t[BP_EID_TEXT_MAX];
    int rc;
    if (msg && msglen)
        msg[0] = '\0';
    bp_agent_set_status_reports(agent, a->status_reports != 0);
    for (size_t i = 0; i < a->nschemes; i++)
        if (eq(a->schemes[i].name, "imc"))
            bp_agent_imc_enable(agent); /* ION's imcfw: this node takes part */
    for (size_t i = 0; i < a->nendpoints; i++) {
        const bp_admin_endpoint *e = &a->endpoints[i];
        rc = bp_endpoint_add(agent, &e->eid, e->rule);
        if (rc == TERN_EEXIST) /* ipn:N.0 always exists; the config sets its rule */
            rc = bp_endpoint_change(agent, &e->eid, e->rule);
        if (rc) {
            bp_eid_print(&e->eid, t, sizeof t);
            if (rc == -EINVAL)
                FAIL_AT(&e->at, rc,
                        "endpoint %s does not belong to this node; expected an endpoint "
                        "of ipn:%" PRIu64 ".*%s",
                        t, bp_agent_node(agent),
                        e->eid.scheme == BP_SCHEME_DTN ? " or of this node's dtn name"
                                                       : "");
            FAIL_AT(&e->at, rc, "endpoint %s: %s", t, tern_strerror(rc));
        }
    }
    for (size_t i = 0; i < a->noutducts; i++) {
        const bp_admin_duct *d = &a->outducts[i];
        size_t mp = d->max_payload > SIZE_MAX ? SIZE_MAX : (size_t)d->max_payload;
        rc = bp_outduct_add(agent, d->protocol, d->name, d->cmd, mp);
        if (rc == TERN_ENOTFOUND)
            FAIL_AT(&d->at, rc,
                    "outduct %s/%s: no convergence layer serves protocol '%s' in this "
                    "node; expected one of ltp, tcp, stcp, mtcp, udp, udpm",
                    d->protocol, d->name, d->protocol);
        if (rc)
            FAIL_AT(&d->at, rc, "outduct %s/%s '%s': %s", d->protocol, d->name, d->cmd,
                    tern_strerror(rc));
    }
    for (size_t i = 0; i < a->nplans; i++) {
        const bp_admin_plan *p = &a->plans[i];
        if (!p->protocol[0])
            continue;                          /* no duct yet: nothing to route through */
        const bp_admin_where *w = &p->duct_at; /* the line that named the duct */
        plan_name(p, t, sizeof t);
        if (!bp_outduct_find(agent, p->protocol, p->duct))
            FAIL_AT(w, TERN_ENOTFOUND,
                    "plan for %s uses outduct %s/%s, which is not configured; expected "
                    "'a outduct %s %s ...' in bpadmin",
                    t, p->protocol, p->duct, p->protocol, p->duct);
        if (p->scheme == BP_SCHEME_IPN)
            rc = bp_egress_plan_add(agent, p->node, p->protocol, p->duct);
        else
            rc = bp_egress_plan_add_dtn(agent, p->dtn_node, p->protocol, p->duct);
        if (rc)
            FAIL_AT(w, rc, "plan for %s via %s/%s: %s", t, p->protocol, p->duct,
                    tern_strerror(rc));
    }
    for (size_t i = 0; i < a->nexits; i++) {
        const bp_admin_exit *x = &a->exits[i];
        rc = bp_egress_exit_add(agent, x->first, x->last, x->gateway.node);
        if (rc)
            FAIL_AT(&x->at, rc, "exit %" PRIu64 "..%" PRIu64 " via ipn:%" PRIu64 ".0: %s",
                    x->first, x->last, x->gateway.node, tern_strerror(rc));
    }
    return 0;
}
