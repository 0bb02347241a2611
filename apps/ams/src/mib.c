/* The MIB loaders: ION's XML and amsrc forms into one immutable ams_mib.
 *
 * Both syntaxes feed the same two calls, element start (with attributes and
 * the position) and element end; the first error stops the load and names
 * the place. Tables are built mutable while loading and frozen at the end:
 * sorted by number, with the public views pointing into them. */
#include <errno.h>
#include <expat.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ams_mib.h"
#include "tern/suggest.h"

#define MAX_DEPTH 8
#define MAX_ATTS  16

/* ------------------------------------------------------------ tables */

struct subj {
    ams_mib_subject pub;
    int *snd, *rcv;
    int nsnd, nrcv, capsnd, caprcv;
};

struct ven {
    ams_mib_venture pub;
    ams_mib_role *roles;
    struct subj *subjs;
    ams_mib_subject *subj_pub; /* frozen views of subjs */
    ams_mib_unit *units;
    ams_mib_msgspace *ms;
    int nroles, nsubjs, nunits, nms, caproles, capsubjs, capunits, capms;
};

struct ams_mib {
    int cnbr;
    char *pts;
    char **cs;
    ams_mib_epspec *eps;
    char **apps;
    ams_mib_continuum *cont;
    struct ven *ven;
    ams_mib_venture *ven_pub;
    char **warn;
    int ncs, neps, napps, ncont, nven, nwarn;
    int capcs, capeps, capapps, capcont, capven, capwarn;
};

/* Grows *p (of *cap elements of size sz) to hold n + 1. */
static int grow(void *pp, int *cap, int n, size_t sz)
{
    void **p = pp;
    if (n < *cap)
        return 0;
    int nc = *cap ? *cap * 2 : 8;
    void *q = realloc(*p, (size_t)nc * sz);
    if (!q)
        return -ENOMEM;
    *p = q;
    *cap = nc;
    return 0;
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

static void free_ven(struct ven *v)
{
    free((char *)v->pub.app);
    free((char *)v->pub.auth);
    free((char *)v->pub.gweid);
    for (int i = 0; i < v->nroles; i++)
        free((char *)v->roles[i].name);
    for (int i = 0; i < v->nsubjs; i++) {
        free((char *)v->subjs[i].pub.name);
        free((char *)v->subjs[i].pub.desc);
        free(v->subjs[i].snd);
        free(v->subjs[i].rcv);
    }
    for (int i = 0; i < v->nunits; i++)
        free((char *)v->units[i].name);
    for (int i = 0; i < v->nms; i++)
        free((char *)v->ms[i].gweid);
    free(v->roles);
    free(v->subjs);
    free(v->subj_pub);
    free(v->units);
    free(v->ms);
}

TERN_API void ams_mib_free(ams_mib *m)
{
    if (!m)
        return;
    free(m->pts);
    for (int i = 0; i < m->ncs; i++)
        free(m->cs[i]);
    for (int i = 0; i < m->neps; i++) {
        free((char *)m->eps[i].ts);
        free((char *)m->eps[i].epspec);
    }
    for (int i = 0; i < m->napps; i++)
        free(m->apps[i]);
    for (int i = 0; i < m->ncont; i++) {
        free((char *)m->cont[i].name);
        free((char *)m->cont[i].desc);
    }
    for (int i = 0; i < m->nven; i++)
        free_ven(&m->ven[i]);
    for (int i = 0; i < m->nwarn; i++)
        free(m->warn[i]);
    free(m->cs);
    free(m->eps);
    free(m->apps);
    free(m->cont);
    free(m->ven);
    free(m->ven_pub);
    free(m->warn);
    free(m);
}

/* ------------------------------------------------------------ load state */

enum kind {
    K_NONE,
    K_LOAD,
    K_INIT,
    K_ADD,
    K_CHANGE,
    K_DELETE,
    K_CONTINUUM,
    K_CSEP,
    K_AMSEP,
    K_APP,
    K_VENTURE,
    K_ROLE,
    K_SUBJECT,
    K_SENDER,
    K_RECEIVER,
    K_UNIT,
    K_MSGSPACE,
};

static const char *const kind_names[] = {"",
                                         "ams_mib_load",
                                         "ams_mib_init",
                                         "ams_mib_add",
                                         "ams_mib_change",
                                         "ams_mib_delete",
                                         "continuum",
                                         "csendpoint",
                                         "amsendpoint",
                                         "application",
                                         "venture",
                                         "role",
                                         "subject",
                                         "sender",
                                         "receiver",
                                         "unit",
                                         "msgspace",
                                         NULL};

/* Attributes each element takes; those after '|' are accepted and not acted
 * on (a warning). */
static const char *const attr_spec[] = {
    [K_LOAD] = "",
    [K_INIT] = "continuum_nbr ptsname | pubkey privkey",
    [K_ADD] = "",
    [K_CHANGE] = "",
    [K_DELETE] = "",
    [K_CONTINUUM] = "nbr name desc",
    [K_CSEP] = "epspec after",
    [K_AMSEP] = "tsname epspec",
    [K_APP] = "name | pubkey privkey",
    [K_VENTURE] = "nbr appname authname gweid net_config root_cell_resync_period",
    [K_ROLE] = "nbr name | pubkey privkey",
    [K_SUBJECT] = "nbr name desc | symkey marshal unmarshal",
    [K_SENDER] = "name",
    [K_RECEIVER] = "name",
    [K_UNIT] = "nbr name resync_period",
    [K_MSGSPACE] = "nbr neighbor gweid | symkey",
};

struct frame {
    enum kind k;
    int children;
    /* the element as delete's target: which one (by kind) */
    int idx;
};

struct ld {
    ams_mib *m;
    const char *file;
    unsigned long line, col;
    int failed;
    char *err;
    size_t errcap;
    int inited;
    enum kind op; /* K_NONE or K_ADD/K_CHANGE/K_DELETE */
    struct frame st[MAX_DEPTH];
    int depth;
    struct ven *v; /* venture being worked on */
    int subj;      /* index in v->subjs, -1 */
    const char *att[MAX_ATTS * 2];
    unsigned long acol[MAX_ATTS]; /* amsrc: each attribute's column (XML: 0) */
    int natt;
    XML_Parser xp; /* the XML form's parser, for positions */
};

__attribute__((format(printf, 2, 3))) static int fail(struct ld *l, const char *fmt, ...)
{
    if (l->failed)
        return TERN_ESYNTAX;
    l->failed = 1;
    if (l->errcap) {
        int n = snprintf(l->err, l->errcap, "%s:%lu:%lu: ", l->file, l->line, l->col);
        if (n >= 0 && (size_t)n < l->errcap) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(l->err + n, l->errcap - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return TERN_ESYNTAX;
}

__attribute__((format(printf, 2, 3))) static int warn(struct ld *l, const char *fmt, ...)
{
    char b[384];
    int n = snprintf(b, sizeof b, "%s:%lu:%lu: ", l->file, l->line, l->col);
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < sizeof b)
        vsnprintf(b + n, sizeof b - (size_t)n, fmt, ap);
    va_end(ap);
    ams_mib *m = l->m;
    if (grow(&m->warn, &m->capwarn, m->nwarn, sizeof *m->warn) ||
        !(m->warn[m->nwarn] = strdup(b)))
        return fail(l, "out of memory");
    m->nwarn++;
    return 0;
}

static const char *att(struct ld *l, const char *name)
{
    for (int i = 0; i < l->natt; i++)
        if (!strcmp(l->att[2 * i], name))
            return l->att[2 * i + 1];
    return NULL;
}

/* Is word one of the space-separated names of spec (up to end)? */
static int in_list(const char *spec, const char *end, const char *word)
{
    size_t wl = strlen(word);
    for (const char *p = spec; p < end;) {
        while (p < end && *p == ' ')
            p++;
        const char *q = p;
        while (q < end && *q != ' ')
            q++;
        if ((size_t)(q - p) == wl && !memcmp(p, word, wl))
            return 1;
        p = q;
    }
    return 0;
}

/* Checks the attributes against the element's list: unknown ones are
 * errors (with the nearest known name), key and marshalling ones warnings. */
static int check_atts(struct ld *l, enum kind k)
{
    const char *spec = attr_spec[k], *bar = strchr(spec, '|');
    const char *end = spec + strlen(spec), *known_end = bar ? bar : end;
    for (int i = 0; i < l->natt; i++) {
        const char *a = l->att[2 * i];
        for (int j = 0; j < i; j++)
            if (!strcmp(l->att[2 * j], a))
                return fail(l, "%s: attribute %s given twice", kind_names[k], a);
        if (in_list(spec, known_end, a))
            continue;
        if (bar && in_list(bar + 1, end, a)) {
            int rc = warn(l,
                          "%s: attribute %s='%s' accepted, not acted on (Tern has no AMS "
                          "security or marshalling functions)",
                          kind_names[k], a, l->att[2 * i + 1]);
            if (rc)
                return rc;
            continue;
        }
        if (l->acol[i])
            l->col = l->acol[i];
        while (known_end > spec && known_end[-1] == ' ')
            known_end--;
        const char *known[24];
        int n = 0;
        char words[128];
        snprintf(words, sizeof words, "%s", spec);
        for (char *s = strtok(words, " |"); s && n < 23; s = strtok(NULL, " |"))
            known[n++] = s;
        known[n] = NULL;
        char dym[96];
        return fail(l, "%s: unknown attribute '%s'%s; expected one of: %.*s",
                    kind_names[k], a,
                    tern_did_you_mean(tern_suggest(a, known), dym, sizeof dym),
                    (int)(known_end - spec), spec);
    }
    return 0;
}

/* A required or optional whole number in [lo, hi]. */
static int num(struct ld *l, enum kind k, const char *name, int req, int lo, int hi,
               int dflt, int *out)
{
    const char *s = att(l, name);
    if (!s) {
        if (req)
            return fail(l, "%s: missing attribute %s (a number %d..%d)", kind_names[k],
                        name, lo, hi);
        *out = dflt;
        return 0;
    }
    const char *p = s;
    int neg = *p == '-';
    if (neg || *p == '+')
        p++;
    long v = 0;
    if (!*p)
        goto bad;
    for (; *p; p++) {
        if (*p < '0' || *p > '9' || v > 100000000L)
            goto bad;
        v = v * 10 + (*p - '0');
    }
    if (neg)
        v = -v;
    if (v < lo || v > hi)
        goto bad;
    *out = (int)v;
    return 0;
bad:
    return fail(l, "%s: %s='%s' is not a number %d..%d", kind_names[k], name, s, lo, hi);
}

/* A required or optional name of at most max characters. */
static int str(struct ld *l, enum kind k, const char *name, int req, size_t max,
               int empty_ok, const char **out)
{
    const char *s = att(l, name);
    *out = s;
    if (!s)
        return req ? fail(l, "%s: missing attribute %s", kind_names[k], name) : 0;
    if (!empty_ok && !*s)
        return fail(l, "%s: %s is empty", kind_names[k], name);
    if (strlen(s) > max)
        return fail(l, "%s: %s='%.40s...' is longer than %zu characters", kind_names[k],
                    name, s, max);
    return 0;
}

/* ------------------------------------------------------------ lookups while loading */

static int find_cont(ams_mib *m, int nbr)
{
    for (int i = 0; i < m->ncont; i++)
        if (m->cont[i].nbr == nbr)
            return i;
    return -1;
}

static int find_cont_named(ams_mib *m, const char *name)
{
    for (int i = 0; i < m->ncont; i++)
        if (!strcmp(m->cont[i].name, name))
            return i;
    return -1;
}

static int find_app(ams_mib *m, const char *name)
{
    for (int i = 0; i < m->napps; i++)
        if (!strcmp(m->apps[i], name))
            return i;
    return -1;
}

static struct ven *find_ven(ams_mib *m, const char *app, const char *auth)
{
    for (int i = 0; i < m->nven; i++)
        if (!strcmp(m->ven[i].pub.app, app) && !strcmp(m->ven[i].pub.auth, auth))
            return &m->ven[i];
    return NULL;
}

static int find_role(struct ven *v, int nbr, const char *name)
{
    for (int i = 0; i < v->nroles; i++)
        if ((name && !strcmp(v->roles[i].name, name)) ||
            (!name && v->roles[i].nbr == nbr))
            return i;
    return -1;
}

static int find_subj(struct ven *v, int nbr, const char *name)
{
    for (int i = 0; i < v->nsubjs; i++)
        if ((name && !strcmp(v->subjs[i].pub.name, name)) ||
            (!name && v->subjs[i].pub.nbr == nbr))
            return i;
    return -1;
}

static int find_unit(struct ven *v, int nbr, const char *name)
{
    for (int i = 0; i < v->nunits; i++)
        if ((name && !strcmp(v->units[i].name, name)) ||
            (!name && v->units[i].nbr == nbr))
            return i;
    return -1;
}

static int find_ms(struct ven *v, int cont)
{
    for (int i = 0; i < v->nms; i++)
        if (v->ms[i].continuum == cont)
            return i;
    return -1;
}

/* ------------------------------------------------------------ adding */

static int add_cont(struct ld *l, int nbr, const char *name, const char *desc)
{
    ams_mib *m = l->m;
    if (grow(&m->cont, &m->capcont, m->ncont, sizeof *m->cont))
        return fail(l, "out of memory");
    ams_mib_continuum *c = &m->cont[m->ncont];
    c->nbr = nbr;
    c->name = strdup(name);
    c->desc = dup_or_null(desc);
    if (!c->name || (desc && !c->desc)) {
        free((char *)c->name);
        free((char *)c->desc);
        return fail(l, "out of memory");
    }
    m->ncont++;
    return 0;
}

static int add_role(struct ld *l, struct ven *v, int nbr, const char *name)
{
    if (grow(&v->roles, &v->caproles, v->nroles, sizeof *v->roles))
        return fail(l, "out of memory");
    if (!(v->roles[v->nroles].name = strdup(name)))
        return fail(l, "out of memory");
    v->roles[v->nroles++].nbr = nbr;
    return 0;
}

static int add_subj(struct ld *l, struct ven *v, int nbr, const char *name,
                    const char *desc)
{
    if (grow(&v->subjs, &v->capsubjs, v->nsubjs, sizeof *v->subjs))
        return fail(l, "out of memory");
    struct subj *s = &v->subjs[v->nsubjs];
    memset(s, 0, sizeof *s);
    s->pub.nbr = nbr;
    s->pub.name = strdup(name);
    s->pub.desc = dup_or_null(desc);
    if (!s->pub.name || (desc && !s->pub.desc)) {
        free((char *)s->pub.name);
        free((char *)s->pub.desc);
        return fail(l, "out of memory");
    }
    v->nsubjs++;
    return 0;
}

static int add_unit(struct ld *l, struct ven *v, int nbr, const char *name, int resync)
{
    if (grow(&v->units, &v->capunits, v->nunits, sizeof *v->units))
        return fail(l, "out of memory");
    ams_mib_unit *u = &v->units[v->nunits];
    u->nbr = nbr;
    u->super = -1;
    u->resync_s = resync;
    if (!(u->name = strdup(name)))
        return fail(l, "out of memory");
    v->nunits++;
    return 0;
}

/* ION's gweid: "bp@<eid>" or "udp@<host:port>"; anything else (or none) is
 * BP to ipn:<continuum>.<venture>. */
static int gw_parse(struct ld *l, const char *g, int cont, int vnbr, int *proto,
                    char **eid)
{
    const char *at = g ? strchr(g, '@') : NULL;
    char b[64];
    if (at && at[1] && (size_t)(at - g) == 2 && !memcmp(g, "bp", 2)) {
        *proto = AMS_MIB_GW_BP;
        *eid = strdup(at + 1);
    } else if (at && at[1] && (size_t)(at - g) == 3 && !memcmp(g, "udp", 3)) {
        *proto = AMS_MIB_GW_UDP;
        *eid = strdup(at + 1);
    } else {
        if (g) {
            int rc = warn(l,
                          "gweid='%s' is neither bp@<eid> nor udp@<host:port>: "
                          "ipn:%d.%d is used, as ION does",
                          g, cont, vnbr);
            if (rc)
                return rc;
        }
        snprintf(b, sizeof b, "ipn:%d.%d", cont, vnbr);
        *proto = AMS_MIB_GW_BP;
        *eid = strdup(b);
    }
    return *eid ? 0 : fail(l, "out of memory");
}

static int add_ms(struct ld *l, struct ven *v, int cont, int neighbor, const char *gweid)
{
    if (grow(&v->ms, &v->capms, v->nms, sizeof *v->ms))
        return fail(l, "out of memory");
    ams_mib_msgspace *s = &v->ms[v->nms];
    char *eid = NULL;
    int rc = gw_parse(l, gweid, cont, v->pub.nbr, &s->gw_proto, &eid);
    if (rc)
        return rc;
    s->gweid = eid;
    s->continuum = cont;
    s->neighbor = neighbor;
    v->nms++;
    return 0;
}

static int add_venture(struct ld *l, int nbr, const char *app, const char *auth,
                       const char *gweid, int tree, int rzrsp)
{
    ams_mib *m = l->m;
    if (grow(&m->ven, &m->capven, m->nven, sizeof *m->ven))
        return fail(l, "out of memory");
    struct ven *v = &m->ven[m->nven];
    memset(v, 0, sizeof *v);
    v->pub.nbr = nbr;
    v->pub.net_is_tree = tree;
    m->nven++; /* freed with the MIB from here on */
    char *eid = NULL;
    int rc;
    if (!(v->pub.app = strdup(app)) || !(v->pub.auth = strdup(auth)))
        return fail(l, "out of memory");
    if ((rc = gw_parse(l, gweid, m->cnbr, nbr, &v->pub.gw_proto, &eid)))
        return rc;
    v->pub.gweid = eid;
    /* what ION gives every venture */
    if ((rc = add_role(l, v, 1, "RAMS")) ||
        (rc = add_role(l, v, AMS_MIB_MAX_ROLE, "stop")) ||
        (rc = add_subj(l, v, 0, "everything", "messages on all subjects")) ||
        (rc = add_unit(l, v, 0, "", rzrsp)) || (rc = add_ms(l, v, m->cnbr, 0, gweid)))
        return rc;
    l->v = v;
    return 0;
}

static int add_role_list(struct ld *l, struct subj *s, int is_sender, int role)
{
    int **p = is_sender ? &s->snd : &s->rcv, *n = is_sender ? &s->nsnd : &s->nrcv,
        *cap = is_sender ? &s->capsnd : &s->caprcv;
    for (int i = 0; i < *n; i++)
        if ((*p)[i] == role)
            return 0;
    if (grow(p, cap, *n, sizeof **p))
        return fail(l, "out of memory");
    (*p)[(*n)++] = role;
    return 0;
}

/* ------------------------------------------------------------ elements */

static enum kind kind_of(const char *name)
{
    for (int k = K_LOAD; kind_names[k]; k++)
        if (!strcmp(kind_names[k], name))
            return (enum kind)k;
    return K_NONE;
}

static enum kind parent(struct ld *l)
{
    return l->depth ? l->st[l->depth - 1].k : K_NONE;
}

static int in_op(struct ld *l, enum kind k)
{
    if (!l->op)
        return fail(l, "%s outside ams_mib_add, ams_mib_change or ams_mib_delete",
                    kind_names[k]);
    return 0;
}

/* The element k's start: checks where it is and its attributes, and does
 * what the operation says. *idx names it for a delete at its end. */
static int on_start(struct ld *l, enum kind k, int *idx)
{
    ams_mib *m = l->m;
    enum kind up = parent(l);
    int rc, nbr;
    const char *name, *s2;
    *idx = -1;
    if ((rc = check_atts(l, k)))
        return rc;
    switch (k) {
    case K_LOAD:
        if (up != K_NONE)
            return fail(l, "ams_mib_load inside %s: it is the outermost element",
                        kind_names[up]);
        return 0;
    case K_INIT:
        if (up != K_NONE && up != K_LOAD)
            return fail(l, "ams_mib_init inside %s", kind_names[up]);
        if (l->inited)
            return fail(l, "ams_mib_init given twice");
        if ((rc = num(l, k, "continuum_nbr", 1, 1, AMS_MIB_MAX_CONTINUUM, 0, &m->cnbr)) ||
            (rc = str(l, k, "ptsname", 1, AMS_MIB_MAX_NAME, 0, &name)))
            return rc;
        if (strcmp(name, "dgr") && strcmp(name, "udp") && strcmp(name, "tcp"))
            return fail(l,
                        "ams_mib_init: ptsname='%s': Tern's AMS transports are dgr, udp "
                        "and tcp (dgr and udp both mean UDP datagrams)",
                        name);
        if (!(m->pts = strdup(name)))
            return fail(l, "out of memory");
        l->inited = 1;
        return add_cont(l, m->cnbr, "local", "this continuum");
    case K_ADD:
    case K_CHANGE:
    case K_DELETE:
        if (up != K_NONE && up != K_LOAD)
            return fail(l, "%s inside %s", kind_names[k], kind_names[up]);
        if (!l->inited)
            return fail(l,
                        "%s before ams_mib_init (the MIB needs its continuum number and "
                        "transport first)",
                        kind_names[k]);
        l->op = k;
        return 0;
    default:
        break;
    }
    if ((rc = in_op(l, k)))
        return rc;
    int adding = l->op == K_ADD, changing = l->op == K_CHANGE;
    switch (k) {
    case K_CONTINUUM: {
        if (up != l->op)
            return fail(l, "continuum inside %s", kind_names[up]);
        const char *desc;
        if ((rc = num(l, k, "nbr", 0, 1, AMS_MIB_MAX_CONTINUUM, 0, &nbr)) ||
            (rc = str(l, k, "name", 1, AMS_MIB_MAX_NAME, 0, &name)) ||
            (rc = str(l, k, "desc", 0, AMS_MIB_MAX_TEXT, 1, &desc)))
            return rc;
        int i = find_cont_named(m, name), j = nbr ? find_cont(m, nbr) : -1;
        if (i >= 0 && nbr && m->cont[i].nbr != nbr)
            return fail(l, "continuum %s is number %d, not %d", name, m->cont[i].nbr,
                        nbr);
        if (i < 0 && j >= 0)
            return fail(l, "continuum %d is named %s already, not %s", nbr,
                        m->cont[j].name, name);
        if (i < 0 && !adding)
            return fail(l, "no continuum named %s to %s", name,
                        changing ? "change" : "delete");
        if (i < 0) {
            if (!nbr)
                return fail(l, "continuum %s: missing attribute nbr (a number 1..%d)",
                            name, AMS_MIB_MAX_CONTINUUM);
            return add_cont(l, nbr, name, desc);
        }
        if (changing && desc) {
            char *d = strdup(desc);
            if (!d)
                return fail(l, "out of memory");
            free((char *)m->cont[i].desc);
            m->cont[i].desc = d;
        }
        *idx = i;
        return 0;
    }
    case K_CSEP: {
        if (up != l->op)
            return fail(l, "csendpoint inside %s", kind_names[up]);
        int after;
        if ((rc = str(l, k, "epspec", l->op != K_DELETE, AMS_MIB_MAX_TEXT, 0, &name)) ||
            (rc = num(l, k, "after", 0, 0, m->ncs, -1, &after)))
            return rc;
        if (changing)
            return fail(
                l, "csendpoint: configuration server endpoints are added and deleted, "
                   "not changed");
        if (!adding) {
            for (int i = 0; i < m->ncs; i++)
                if (name ? !strcmp(m->cs[i], name) : i == after) {
                    *idx = i;
                    return 0;
                }
            return fail(l, "csendpoint: no configuration server endpoint %s to delete",
                        name ? name : "at that position");
        }
        if (grow(&m->cs, &m->capcs, m->ncs, sizeof *m->cs))
            return fail(l, "out of memory");
        char *d = strdup(name);
        if (!d)
            return fail(l, "out of memory");
        int at = after < 0 ? m->ncs : after;
        memmove(&m->cs[at + 1], &m->cs[at], (size_t)(m->ncs - at) * sizeof *m->cs);
        m->cs[at] = d;
        m->ncs++;
        return 0;
    }
    case K_AMSEP: {
        if (up != l->op)
            return fail(l, "amsendpoint inside %s", kind_names[up]);
        if ((rc = str(l, k, "tsname", 1, AMS_MIB_MAX_NAME, 0, &name)) ||
            (rc = str(l, k, "epspec", 1, AMS_MIB_MAX_TEXT, 0, &s2)))
            return rc;
        if (changing)
            return fail(
                l, "amsendpoint: AMS endpoint specs are added and deleted, not changed");
        if (!adding) {
            for (int i = 0; i < m->neps; i++)
                if (!strcmp(m->eps[i].ts, name) && !strcmp(m->eps[i].epspec, s2)) {
                    *idx = i;
                    return 0;
                }
            return fail(l, "amsendpoint: no endpoint spec %s for %s to delete", s2, name);
        }
        if (grow(&m->eps, &m->capeps, m->neps, sizeof *m->eps))
            return fail(l, "out of memory");
        m->eps[m->neps].ts = strdup(name);
        m->eps[m->neps].epspec = strdup(s2);
        m->neps++;
        if (!m->eps[m->neps - 1].ts || !m->eps[m->neps - 1].epspec)
            return fail(l, "out of memory");
        return 0;
    }
    case K_APP: {
        if (up != l->op)
            return fail(l, "application inside %s", kind_names[up]);
        if ((rc = str(l, k, "name", 1, AMS_MIB_MAX_NAME, 0, &name)))
            return rc;
        int i = find_app(m, name);
        if (i < 0 && !adding)
            return fail(l, "no application %s to %s", name,
                        changing ? "change" : "delete");
        if (i < 0) {
            if (grow(&m->apps, &m->capapps, m->napps, sizeof *m->apps))
                return fail(l, "out of memory");
            if (!(m->apps[m->napps] = strdup(name)))
                return fail(l, "out of memory");
            i = m->napps++;
        }
        *idx = i;
        return 0;
    }
    case K_VENTURE: {
        if (up != l->op && up != K_APP)
            return fail(l, "venture inside %s", kind_names[up]);
        const char *g, *nc;
        int rz;
        if ((rc = num(l, k, "nbr", 0, 1, AMS_MIB_MAX_VENTURE, 0, &nbr)) ||
            (rc = str(l, k, "appname", 1, AMS_MIB_MAX_NAME, 0, &name)) ||
            (rc = str(l, k, "authname", 1, AMS_MIB_MAX_NAME, 0, &s2)) ||
            (rc = str(l, k, "gweid", 0, AMS_MIB_MAX_TEXT, 0, &g)) ||
            (rc = str(l, k, "net_config", 0, AMS_MIB_MAX_NAME, 0, &nc)) ||
            (rc = num(l, k, "root_cell_resync_period", 0, 0, 1000000, 0, &rz)))
            return rc;
        if (nc && strcmp(nc, "tree") && strcmp(nc, "mesh"))
            return fail(l, "venture: net_config='%s' is neither tree nor mesh", nc);
        struct ven *v = find_ven(m, name, s2);
        if (v && nbr && v->pub.nbr != nbr)
            return fail(l, "venture %s/%s is number %d, not %d", name, s2, v->pub.nbr,
                        nbr);
        if (!v && !adding)
            return fail(l, "no venture %s/%s to %s", name, s2,
                        changing ? "change" : "delete");
        if (v) {
            l->v = v;
            *idx = (int)(v - m->ven);
            if (changing) {
                if (nc)
                    v->pub.net_is_tree = !strcmp(nc, "tree");
                if (att(l, "root_cell_resync_period"))
                    v->units[find_unit(v, 0, NULL)].resync_s = rz;
                if (g) {
                    char *eid;
                    int pr;
                    if ((rc = gw_parse(l, g, m->cnbr, v->pub.nbr, &pr, &eid)))
                        return rc;
                    free((char *)v->pub.gweid);
                    v->pub.gweid = eid;
                    v->pub.gw_proto = pr;
                }
            }
            return 0;
        }
        if (!nbr)
            return fail(l, "venture %s/%s: missing attribute nbr (a number 1..%d)", name,
                        s2, AMS_MIB_MAX_VENTURE);
        if (find_app(m, name) < 0)
            return fail(l,
                        "venture %d: no application %s (add an application element "
                        "first)",
                        nbr, name);
        for (int i = 0; i < m->nven; i++)
            if (m->ven[i].pub.nbr == nbr)
                return fail(l, "venture %d is %s/%s already", nbr, m->ven[i].pub.app,
                            m->ven[i].pub.auth);
        if ((rc = add_venture(l, nbr, name, s2, g, !nc || !strcmp(nc, "tree"), rz)))
            return rc;
        *idx = (int)(l->v - m->ven);
        return 0;
    }
    default:
        break;
    }
    /* the rest live in a venture */
    struct ven *v = l->v;
    if (k == K_SENDER || k == K_RECEIVER) {
        if (up != K_SUBJECT || l->subj < 0)
            return fail(l, "%s outside a subject", kind_names[k]);
        if ((rc = str(l, k, "name", 1, AMS_MIB_MAX_NAME, 0, &name)))
            return rc;
        int r = find_role(v, 0, name);
        if (r < 0)
            return fail(l, "%s: venture %d has no role %s", kind_names[k], v->pub.nbr,
                        name);
        struct subj *s = &v->subjs[l->subj];
        if (changing)
            return fail(l,
                        "%s: a role is added to or deleted from a subject's list, not "
                        "changed",
                        kind_names[k]);
        if (adding)
            return add_role_list(l, s, k == K_SENDER, v->roles[r].nbr);
        *idx = v->roles[r].nbr;
        return 0;
    }
    if (up != K_VENTURE || !v)
        return fail(l, "%s outside a venture", kind_names[k]);
    switch (k) {
    case K_ROLE: {
        if ((rc = num(l, k, "nbr", 0, 1, AMS_MIB_MAX_ROLE, 0, &nbr)) ||
            (rc = str(l, k, "name", 1, AMS_MIB_MAX_NAME, 0, &name)))
            return rc;
        int i = find_role(v, 0, name);
        if (adding) {
            if (i >= 0)
                return fail(l, "role %s exists already (number %d)", name,
                            v->roles[i].nbr);
            if (!nbr)
                return fail(l, "role %s: missing attribute nbr (a number 2..%d)", name,
                            AMS_MIB_MAX_ROLE - 1);
            if (nbr == 1 || nbr == AMS_MIB_MAX_ROLE)
                return fail(l, "role %s: number %d is the venture's own role %s", name,
                            nbr, nbr == 1 ? "RAMS" : "stop");
            if ((i = find_role(v, nbr, NULL)) >= 0)
                return fail(l, "role %s: number %d is role %s already", name, nbr,
                            v->roles[i].name);
            return add_role(l, v, nbr, name);
        }
        if (i < 0)
            return fail(l, "no role %s to %s", name, changing ? "change" : "delete");
        if (changing)
            return fail(l, "role %s: a role has nothing to change but its keys", name);
        *idx = i;
        return 0;
    }
    case K_SUBJECT: {
        const char *desc;
        if ((rc = num(l, k, "nbr", 0, 1, AMS_MIB_MAX_SUBJECT, 0, &nbr)) ||
            (rc = str(l, k, "name", 1, AMS_MIB_MAX_NAME, 0, &name)) ||
            (rc = str(l, k, "desc", 0, AMS_MIB_MAX_TEXT, 1, &desc)))
            return rc;
        int i = find_subj(v, 0, name);
        if (i >= 0 && nbr && v->subjs[i].pub.nbr != nbr)
            return fail(l, "subject %s is number %d, not %d", name, v->subjs[i].pub.nbr,
                        nbr);
        if (i < 0 && !adding)
            return fail(l, "no subject %s to %s", name, changing ? "change" : "delete");
        if (i < 0) {
            if (!nbr)
                return fail(l, "subject %s: missing attribute nbr (a number 1..%d)", name,
                            AMS_MIB_MAX_SUBJECT);
            if ((i = find_subj(v, nbr, NULL)) >= 0)
                return fail(l, "subject %s: number %d is subject %s already", name, nbr,
                            v->subjs[i].pub.name);
            if ((rc = add_subj(l, v, nbr, name, desc)))
                return rc;
            i = v->nsubjs - 1;
        } else if (changing && desc) {
            char *d = strdup(desc);
            if (!d)
                return fail(l, "out of memory");
            free((char *)v->subjs[i].pub.desc);
            v->subjs[i].pub.desc = d;
        }
        l->subj = i;
        *idx = i;
        return 0;
    }
    case K_UNIT: {
        int rs;
        if ((rc = num(l, k, "nbr", 0, 1, AMS_MIB_MAX_UNIT, 0, &nbr)) ||
            (rc = str(l, k, "name", 1, AMS_MIB_MAX_NAME, 0, &name)) ||
            (rc = num(l, k, "resync_period", 0, 0, 1000000, 0, &rs)))
            return rc;
        int i = find_unit(v, 0, name);
        if (adding) {
            if (i >= 0)
                return fail(l, "unit %s exists already (number %d)", name,
                            v->units[i].nbr);
            if (!nbr)
                return fail(l, "unit %s: missing attribute nbr (a number 1..%d)", name,
                            AMS_MIB_MAX_UNIT);
            if ((i = find_unit(v, nbr, NULL)) >= 0)
                return fail(l, "unit %s: number %d is unit %s already", name, nbr,
                            v->units[i].name);
            return add_unit(l, v, nbr, name, rs);
        }
        if (i < 0)
            return fail(l, "no unit %s to %s", name, changing ? "change" : "delete");
        if (changing) {
            v->units[i].resync_s = rs;
            return 0;
        }
        *idx = i;
        return 0;
    }
    case K_MSGSPACE: {
        int nb;
        const char *g;
        if ((rc = num(l, k, "nbr", 1, 1, AMS_MIB_MAX_CONTINUUM, 0, &nbr)) ||
            (rc = num(l, k, "neighbor", 0, 0, 1, 1, &nb)) ||
            (rc = str(l, k, "gweid", 0, AMS_MIB_MAX_TEXT, 0, &g)))
            return rc;
        if (find_cont(m, nbr) < 0)
            return fail(l, "msgspace %d: no continuum %d (add a continuum element first)",
                        nbr, nbr);
        int i = find_ms(v, nbr);
        if (i < 0 && !adding)
            return fail(l, "no message space %d to %s", nbr,
                        changing ? "change" : "delete");
        if (i < 0)
            return add_ms(l, v, nbr, nb, g);
        if (changing) {
            if (att(l, "neighbor"))
                v->ms[i].neighbor = nb;
            if (g) {
                char *eid;
                int pr;
                if ((rc = gw_parse(l, g, nbr, v->pub.nbr, &pr, &eid)))
                    return rc;
                free((char *)v->ms[i].gweid);
                v->ms[i].gweid = eid;
                v->ms[i].gw_proto = pr;
            }
        }
        *idx = i;
        return 0;
    }
    default:
        return fail(l, "internal: element %d", (int)k);
    }
}

/* A delete's target: an element with nothing inside it. */
static int do_delete(struct ld *l, enum kind k, int idx)
{
    ams_mib *m = l->m;
    struct ven *v = l->v;
    switch (k) {
    case K_CONTINUUM:
        if (m->cont[idx].nbr == m->cnbr)
            return fail(l, "continuum %s is the local one: it cannot be deleted",
                        m->cont[idx].name);
        for (int i = 0; i < m->nven; i++)
            if (find_ms(&m->ven[i], m->cont[idx].nbr) >= 0)
                return fail(l,
                            "continuum %s has a message space in venture %d: delete that "
                            "first",
                            m->cont[idx].name, m->ven[i].pub.nbr);
        free((char *)m->cont[idx].name);
        free((char *)m->cont[idx].desc);
        m->cont[idx] = m->cont[--m->ncont];
        return 0;
    case K_CSEP:
        free(m->cs[idx]);
        memmove(&m->cs[idx], &m->cs[idx + 1], (size_t)(m->ncs - idx - 1) * sizeof *m->cs);
        m->ncs--;
        return 0;
    case K_AMSEP:
        free((char *)m->eps[idx].ts);
        free((char *)m->eps[idx].epspec);
        memmove(&m->eps[idx], &m->eps[idx + 1],
                (size_t)(m->neps - idx - 1) * sizeof *m->eps);
        m->neps--;
        return 0;
    case K_APP:
        for (int i = 0; i < m->nven; i++)
            if (!strcmp(m->ven[i].pub.app, m->apps[idx]))
                return fail(l, "application %s has venture %d: delete that first",
                            m->apps[idx], m->ven[i].pub.nbr);
        free(m->apps[idx]);
        m->apps[idx] = m->apps[--m->napps];
        return 0;
    case K_VENTURE:
        free_ven(&m->ven[idx]);
        m->ven[idx] = m->ven[--m->nven];
        l->v = NULL;
        return 0;
    case K_ROLE:
        if (v->roles[idx].nbr == 1 || v->roles[idx].nbr == AMS_MIB_MAX_ROLE)
            return fail(l, "role %s is the venture's own: it cannot be deleted",
                        v->roles[idx].name);
        for (int i = 0; i < v->nsubjs; i++)
            for (int j = 0; j < v->subjs[i].nsnd + v->subjs[i].nrcv; j++) {
                int r = j < v->subjs[i].nsnd ? v->subjs[i].snd[j]
                                             : v->subjs[i].rcv[j - v->subjs[i].nsnd];
                if (r == v->roles[idx].nbr)
                    return fail(l,
                                "role %s is in subject %s's %s list: delete it there "
                                "first",
                                v->roles[idx].name, v->subjs[i].pub.name,
                                j < v->subjs[i].nsnd ? "sender" : "receiver");
            }
        free((char *)v->roles[idx].name);
        v->roles[idx] = v->roles[--v->nroles];
        return 0;
    case K_SUBJECT: {
        struct subj *s = &v->subjs[idx];
        if (s->pub.nbr == 0)
            return fail(l,
                        "subject everything is the venture's own: it cannot be deleted");
        free((char *)s->pub.name);
        free((char *)s->pub.desc);
        free(s->snd);
        free(s->rcv);
        *s = v->subjs[--v->nsubjs];
        l->subj = -1;
        return 0;
    }
    case K_SENDER:
    case K_RECEIVER: {
        struct subj *s = &v->subjs[l->subj];
        int *p = k == K_SENDER ? s->snd : s->rcv,
            *n = k == K_SENDER ? &s->nsnd : &s->nrcv;
        for (int i = 0; i < *n; i++)
            if (p[i] == idx) {
                p[i] = p[--*n];
                return 0;
            }
        return fail(l, "%s: role %d is not in subject %s's list", kind_names[k], idx,
                    s->pub.name);
    }
    case K_UNIT:
        free((char *)v->units[idx].name);
        v->units[idx] = v->units[--v->nunits];
        return 0;
    case K_MSGSPACE:
        if (v->ms[idx].continuum == m->cnbr)
            return fail(l, "the local message space cannot be deleted");
        free((char *)v->ms[idx].gweid);
        v->ms[idx] = v->ms[--v->nms];
        return 0;
    default:
        return 0;
    }
}

static int element_start(struct ld *l, const char *name)
{
    enum kind k = kind_of(name);
    if (k == K_NONE) {
        char dym[96];
        return fail(
            l, "unknown element '%s'%s", name,
            tern_did_you_mean(tern_suggest(name, kind_names + 1), dym, sizeof dym));
    }
    if (l->depth == MAX_DEPTH)
        return fail(l, "%s: elements nested deeper than %d", name, MAX_DEPTH);
    int idx, rc = on_start(l, k, &idx);
    if (rc)
        return rc;
    if (l->depth)
        l->st[l->depth - 1].children++;
    l->st[l->depth++] = (struct frame){k, 0, idx};
    return 0;
}

static int element_end(struct ld *l, const char *name)
{
    enum kind k = kind_of(name);
    if (!l->depth || l->st[l->depth - 1].k != k)
        return fail(l, "'-%s' closes nothing: %s%s is open", name,
                    l->depth ? "" : "no element",
                    l->depth ? kind_names[l->st[l->depth - 1].k] : "");
    struct frame f = l->st[--l->depth];
    int rc = 0;
    if (l->op == K_DELETE && !f.children && f.k >= K_CONTINUUM)
        rc = do_delete(l, f.k, f.idx);
    switch (k) {
    case K_ADD:
    case K_CHANGE:
    case K_DELETE:
        l->op = K_NONE;
        break;
    case K_VENTURE:
        l->v = NULL;
        break;
    case K_SUBJECT:
        l->subj = -1;
        break;
    default:
        break;
    }
    return rc;
}

/* ------------------------------------------------------------ freezing */

static int cmp_int(const void *a, const void *b)
{
    return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}
#define CMP_BY_NBR(T, f)                                                                 \
    static int cmp_##T(const void *a, const void *b)                                     \
    {                                                                                    \
        return (((const T *)a)->f > ((const T *)b)->f) -                                 \
               (((const T *)a)->f < ((const T *)b)->f);                                  \
    }
CMP_BY_NBR(ams_mib_continuum, nbr)
CMP_BY_NBR(ams_mib_role, nbr)
CMP_BY_NBR(ams_mib_unit, nbr)
CMP_BY_NBR(ams_mib_msgspace, continuum)
static int cmp_subj(const void *a, const void *b)
{
    return cmp_int(&((const struct subj *)a)->pub.nbr,
                   &((const struct subj *)b)->pub.nbr);
}
static int cmp_ven(const void *a, const void *b)
{
    return cmp_int(&((const struct ven *)a)->pub.nbr, &((const struct ven *)b)->pub.nbr);
}

static int freeze(struct ld *l)
{
    ams_mib *m = l->m;
    if (!l->inited)
        return fail(l, "no ams_mib_init: a MIB starts with the continuum number and "
                       "transport (ams_mib_init continuum_nbr=... ptsname=...)");
    qsort(m->cont, (size_t)m->ncont, sizeof *m->cont, cmp_ams_mib_continuum);
    qsort(m->ven, (size_t)m->nven, sizeof *m->ven, cmp_ven);
    if (m->nven && !(m->ven_pub = calloc((size_t)m->nven, sizeof *m->ven_pub)))
        return fail(l, "out of memory");
    for (int i = 0; i < m->nven; i++) {
        struct ven *v = &m->ven[i];
        qsort(v->roles, (size_t)v->nroles, sizeof *v->roles, cmp_ams_mib_role);
        qsort(v->subjs, (size_t)v->nsubjs, sizeof *v->subjs, cmp_subj);
        qsort(v->units, (size_t)v->nunits, sizeof *v->units, cmp_ams_mib_unit);
        qsort(v->ms, (size_t)v->nms, sizeof *v->ms, cmp_ams_mib_msgspace);
        if (!(v->subj_pub = calloc((size_t)v->nsubjs, sizeof *v->subj_pub)))
            return fail(l, "out of memory");
        for (int j = 0; j < v->nsubjs; j++) {
            struct subj *s = &v->subjs[j];
            if (s->nsnd > 1) /* qsort of NULL is undefined, even of none */
                qsort(s->snd, (size_t)s->nsnd, sizeof *s->snd, cmp_int);
            if (s->nrcv > 1)
                qsort(s->rcv, (size_t)s->nrcv, sizeof *s->rcv, cmp_int);
            s->pub.senders = s->snd;
            s->pub.receivers = s->rcv;
            s->pub.n_senders = s->nsnd;
            s->pub.n_receivers = s->nrcv;
            v->subj_pub[j] = s->pub;
        }
        /* the superunit: the unit whose name is the longest prefix */
        for (int j = 0; j < v->nunits; j++) {
            ams_mib_unit *u = &v->units[j];
            size_t best = 0, ul = strlen(u->name);
            u->super = u->nbr == 0 ? -1 : 0;
            for (int k = 0; k < v->nunits && u->nbr; k++) {
                size_t kl = strlen(v->units[k].name);
                if (k != j && kl > best && kl < ul &&
                    !strncmp(v->units[k].name, u->name, kl)) {
                    best = kl;
                    u->super = v->units[k].nbr;
                }
            }
        }
        v->pub.roles = v->roles;
        v->pub.subjects = v->subj_pub;
        v->pub.units = v->units;
        v->pub.msgspaces = v->ms;
        v->pub.n_roles = v->nroles;
        v->pub.n_subjects = v->nsubjs;
        v->pub.n_units = v->nunits;
        v->pub.n_msgspaces = v->nms;
        m->ven_pub[i] = v->pub;
    }
    /* ION: with no amsendpoint, every transport at "@" */
    if (!m->neps) {
        static const char *const ts[] = {"udp", "tcp"};
        for (int i = 0; i < 2; i++) {
            if (grow(&m->eps, &m->capeps, m->neps, sizeof *m->eps))
                return fail(l, "out of memory");
            m->eps[m->neps].ts = strdup(ts[i]);
            m->eps[m->neps].epspec = strdup("@");
            m->neps++;
            if (!m->eps[m->neps - 1].ts || !m->eps[m->neps - 1].epspec)
                return fail(l, "out of memory");
        }
    }
    return 0;
}

/* ------------------------------------------------------------ XML */

static void XMLCALL x_start(void *ud, const XML_Char *name, const XML_Char **atts)
{
    struct ld *l = ud;
    XML_Parser p = l->xp;
    if (l->failed)
        return;
    l->line = XML_GetCurrentLineNumber(p);
    l->col = XML_GetCurrentColumnNumber(p) + 1;
    int n = 0;
    while (atts[2 * n])
        n++;
    if (n > MAX_ATTS) {
        fail(l, "%s: more than %d attributes", name, MAX_ATTS);
    } else {
        l->natt = n;
        for (int i = 0; i < 2 * n; i++)
            l->att[i] = atts[i];
        memset(l->acol, 0, sizeof l->acol);
        if (l->depth == 0 && strcmp(name, "ams_mib_load"))
            fail(l,
                 "the root element is ams_mib_load (as ION's loader reads it), not '%s'",
                 name);
        else
            element_start(l, name);
    }
    if (l->failed)
        XML_StopParser(p, XML_FALSE);
}

static void XMLCALL x_end(void *ud, const XML_Char *name)
{
    struct ld *l = ud;
    XML_Parser p = l->xp;
    if (l->failed)
        return;
    l->line = XML_GetCurrentLineNumber(p);
    l->col = XML_GetCurrentColumnNumber(p) + 1;
    if (element_end(l, name))
        XML_StopParser(p, XML_FALSE);
}

static void XMLCALL x_text(void *ud, const XML_Char *s, int len)
{
    struct ld *l = ud;
    XML_Parser p = l->xp;
    for (int i = 0; i < len && !l->failed; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n') {
            l->line = XML_GetCurrentLineNumber(p);
            l->col = XML_GetCurrentColumnNumber(p) + 1;
            fail(l, "text '%.20s' in %s: the MIB has only elements and attributes", s + i,
                 l->depth ? kind_names[l->st[l->depth - 1].k] : "the file");
            XML_StopParser(p, XML_FALSE);
        }
}

static int load_xml(struct ld *l, const char *text, size_t len)
{
    if (len > INT32_MAX)
        return fail(l, "file too large");
    XML_Parser p = XML_ParserCreate(NULL);
    if (!p)
        return fail(l, "out of memory");
    l->xp = p;
    XML_SetUserData(p, l);
    XML_SetElementHandler(p, x_start, x_end);
    XML_SetCharacterDataHandler(p, x_text);
    if (XML_Parse(p, text, (int)len, XML_TRUE) == XML_STATUS_ERROR && !l->failed) {
        l->line = XML_GetCurrentLineNumber(p);
        l->col = XML_GetCurrentColumnNumber(p) + 1;
        fail(l, "XML: %s", XML_ErrorString(XML_GetErrorCode(p)));
    }
    XML_ParserFree(p);
    return l->failed ? TERN_ESYNTAX : 0;
}

/* ------------------------------------------------------------ amsrc */

static int load_rc(struct ld *l, char *text, size_t len)
{
    char *p = text, *end = text + len;
    for (unsigned long ln = 1; p < end && !l->failed; ln++) {
        char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            eol = end;
        *eol = 0;
        char *lb = p;
        p = eol + 1;
        l->line = ln;
        if (memchr(lb, 0, (size_t)(eol - lb)))
            return fail(l, "a NUL byte in the line");
        char *c = lb;
        while (*c == ' ' || *c == '\t' || *c == '\r')
            c++;
        if (!*c || *c == '#')
            continue; /* Tern: blank lines and comments */
        l->col = (unsigned long)(c - lb) + 1;
        char ctl = *c++;
        if (ctl != '+' && ctl != '-' && ctl != '*')
            return fail(
                l,
                "a line starts with + (open), - (close) or * (open and close), not "
                "'%c'",
                ctl);
        char *name = c;
        while (*c && *c != ' ' && *c != '\t' && *c != '\r')
            c++;
        if (c == name)
            return fail(l, "no element name after '%c'", ctl);
        if (*c)
            *c++ = 0;
        l->natt = 0;
        for (;;) {
            while (*c == ' ' || *c == '\t' || *c == '\r')
                c++;
            if (!*c)
                break;
            l->col = (unsigned long)(c - lb) + 1;
            if (ctl == '-')
                return fail(l, "'-%s' takes no attributes", name);
            char *an = c, *eq = strchr(c, '=');
            char *sp = strpbrk(c, " \t");
            if (!eq || (sp && sp < eq))
                return fail(l, "%s: attribute '%.*s' has no '=value'", name,
                            (int)strcspn(an, " \t="), an);
            *eq = 0;
            c = eq + 1;
            char *val;
            if (*c == '\'' || *c == '"') {
                char q = *c++, *close = strchr(c, q);
                if (!close)
                    return fail(l, "%s: attribute %s: the value's %c is not closed", name,
                                an, q);
                *close = 0;
                val = c;
                c = close + 1;
            } else {
                val = c;
                while (*c && *c != ' ' && *c != '\t' && *c != '\r')
                    c++;
                if (*c)
                    *c++ = 0;
            }
            if (!*an)
                return fail(l, "%s: '=' without an attribute name", name);
            if (l->natt == MAX_ATTS)
                return fail(l, "%s: more than %d attributes", name, MAX_ATTS);
            l->acol[l->natt] = (unsigned long)(an - lb) + 1;
            l->att[2 * l->natt] = an;
            l->att[2 * l->natt + 1] = val;
            l->natt++;
        }
        l->col = 1;
        if (ctl != '-' && element_start(l, name))
            break;
        if (ctl != '+' && element_end(l, name))
            break;
    }
    if (!l->failed && l->depth)
        return fail(l, "end of file with %s still open (close it with '-%s')",
                    kind_names[l->st[l->depth - 1].k], kind_names[l->st[l->depth - 1].k]);
    return l->failed ? TERN_ESYNTAX : 0;
}

/* ------------------------------------------------------------ entry points */

TERN_API int ams_mib_load_text(const char *text, size_t len, const char *name,
                               ams_mib **out, char *err, size_t errcap)
{
    struct ld l;
    memset(&l, 0, sizeof l);
    l.file = name ? name : "(mib)";
    l.err = err;
    l.errcap = errcap;
    l.subj = -1;
    if (errcap)
        err[0] = 0;
    *out = NULL;
    if (!(l.m = calloc(1, sizeof *l.m)))
        return -ENOMEM;
    size_t i = 0;
    while (i < len &&
           (text[i] == ' ' || text[i] == '\t' || text[i] == '\r' || text[i] == '\n'))
        i++;
    int rc;
    if (i < len && text[i] == '<') {
        rc = load_xml(&l, text, len);
    } else {
        char *copy = malloc(len + 1);
        if (!copy) {
            ams_mib_free(l.m);
            return -ENOMEM;
        }
        memcpy(copy, text, len);
        copy[len] = 0;
        rc = load_rc(&l, copy, len);
        free(copy);
    }
    if (!rc)
        rc = freeze(&l);
    if (rc) {
        ams_mib_free(l.m);
        return rc;
    }
    *out = l.m;
    return 0;
}

/* ION's built-in test MIB (a MIB source of "@"), as its loader builds it. */
static const char test_mib[] =
    "*ams_mib_init continuum_nbr=1 ptsname=dgr\n"
    "+ams_mib_add\n"
    "*csendpoint epspec=@:2357\n"
    "*application name=amsdemo\n"
    "+venture nbr=1 appname=amsdemo authname=test\n"
    "*role nbr=2 name=shell\n"
    "*role nbr=3 name=log\n"
    "*role nbr=4 name=pitch\n"
    "*role nbr=5 name=catch\n"
    "*role nbr=96 name=amsd\n"
    "*role nbr=97 name=amsstop\n"
    "*role nbr=98 name=amsmib\n"
    "*subject nbr=1 name=text desc='Arbitrary variable-length text.'\n"
    "*subject nbr=97 name=amsstop desc='Message space shutdown "
    "command.'\n"
    "*subject nbr=98 name=amsmib desc='Runtime MIB updates.'\n"
    "-venture\n"
    "-ams_mib_add\n";

TERN_API int ams_mib_load_file(const char *path, ams_mib **out, char *err, size_t errcap)
{
    if (!strcmp(path, "@"))
        return ams_mib_load_text(test_mib, sizeof test_mib - 1,
                                 "(ION's built-in test MIB)", out, err, errcap);
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        int e = errno;
        if (errcap)
            snprintf(err, errcap, "%s: cannot open the MIB: %s", path, strerror(e));
        return -e;
    }
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            if (cap >= (64u << 20)) {
                fclose(f);
                free(buf);
                if (errcap)
                    snprintf(err, errcap, "%s: larger than 64 MiB: not a MIB", path);
                return -EFBIG;
            }
            char *nb = realloc(buf, cap = cap ? cap * 2 : 8192);
            if (!nb) {
                fclose(f);
                free(buf);
                return -ENOMEM;
            }
            buf = nb;
        }
        size_t n = fread(buf + len, 1, cap - len, f);
        len += n;
        if (n == 0)
            break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        if (errcap)
            snprintf(err, errcap, "%s: read error", path);
        return -EIO;
    }
    int rc = ams_mib_load_text(buf ? buf : "", len, path, out, err, errcap);
    free(buf);
    return rc;
}

/* ------------------------------------------------------------ queries */

TERN_API int ams_mib_continuum_nbr(const ams_mib *m)
{
    return m->cnbr;
}

TERN_API const char *ams_mib_ptsname(const ams_mib *m)
{
    return m->pts;
}

TERN_API const char *const *ams_mib_cs_endpoints(const ams_mib *m, int *n)
{
    *n = m->ncs;
    return (const char *const *)m->cs;
}

TERN_API const ams_mib_epspec *ams_mib_ams_endpoints(const ams_mib *m, int *n)
{
    *n = m->neps;
    return m->eps;
}

TERN_API const char *const *ams_mib_applications(const ams_mib *m, int *n)
{
    *n = m->napps;
    return (const char *const *)m->apps;
}

TERN_API const ams_mib_continuum *ams_mib_continua(const ams_mib *m, int *n)
{
    *n = m->ncont;
    return m->cont;
}

TERN_API const ams_mib_venture *ams_mib_ventures(const ams_mib *m, int *n)
{
    *n = m->nven;
    return m->ven_pub;
}

TERN_API const char *const *ams_mib_warnings(const ams_mib *m, int *n)
{
    *n = m->nwarn;
    return (const char *const *)m->warn;
}

TERN_API const ams_mib_venture *ams_mib_venture_find(const ams_mib *m, const char *app,
                                                     const char *auth)
{
    for (int i = 0; i < m->nven; i++)
        if (!strcmp(m->ven_pub[i].app, app) && !strcmp(m->ven_pub[i].auth, auth))
            return &m->ven_pub[i];
    return NULL;
}

/* Binary search of n sorted records of size sz whose int key is at off. */
static const void *bsearch_nbr(const void *base, int n, size_t sz, size_t off, int key)
{
    int lo = 0, hi = n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        const char *rec = (const char *)base + (size_t)mid * sz;
        int k;
        memcpy(&k, rec + off, sizeof k);
        if (k == key)
            return rec;
        if (k < key)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return NULL;
}

TERN_API const ams_mib_continuum *ams_mib_continuum_get(const ams_mib *m, int nbr)
{
    return bsearch_nbr(m->cont, m->ncont, sizeof *m->cont,
                       offsetof(ams_mib_continuum, nbr), nbr);
}

TERN_API const ams_mib_continuum *ams_mib_continuum_named(const ams_mib *m,
                                                          const char *name)
{
    for (int i = 0; i < m->ncont; i++)
        if (!strcmp(m->cont[i].name, name))
            return &m->cont[i];
    return NULL;
}

TERN_API const ams_mib_role *ams_mib_role_get(const ams_mib_venture *v, int nbr)
{
    return bsearch_nbr(v->roles, v->n_roles, sizeof *v->roles,
                       offsetof(ams_mib_role, nbr), nbr);
}

TERN_API const ams_mib_role *ams_mib_role_named(const ams_mib_venture *v,
                                                const char *name)
{
    for (int i = 0; i < v->n_roles; i++)
        if (!strcmp(v->roles[i].name, name))
            return &v->roles[i];
    return NULL;
}

TERN_API const ams_mib_subject *ams_mib_subject_get(const ams_mib_venture *v, int nbr)
{
    return bsearch_nbr(v->subjects, v->n_subjects, sizeof *v->subjects,
                       offsetof(ams_mib_subject, nbr), nbr);
}

TERN_API const ams_mib_subject *ams_mib_subject_named(const ams_mib_venture *v,
                                                      const char *name)
{
    for (int i = 0; i < v->n_subjects; i++)
        if (!strcmp(v->subjects[i].name, name))
            return &v->subjects[i];
    return NULL;
}

TERN_API const ams_mib_unit *ams_mib_unit_get(const ams_mib_venture *v, int nbr)
{
    return bsearch_nbr(v->units, v->n_units, sizeof *v->units,
                       offsetof(ams_mib_unit, nbr), nbr);
}

TERN_API const ams_mib_unit *ams_mib_unit_named(const ams_mib_venture *v,
                                                const char *name)
{
    for (int i = 0; i < v->n_units; i++)
        if (!strcmp(v->units[i].name, name))
            return &v->units[i];
    return NULL;
}

TERN_API const ams_mib_msgspace *ams_mib_msgspace_get(const ams_mib_venture *v, int cont)
{
    return bsearch_nbr(v->msgspaces, v->n_msgspaces, sizeof *v->msgspaces,
                       offsetof(ams_mib_msgspace, continuum), cont);
}

TERN_API int ams_mib_unit_within(const ams_mib_venture *v, int sub, int ref)
{
    /* the tree is at most n_units deep: a bound, in case */
    for (int hops = 0; hops <= v->n_units; hops++) {
        if (sub == ref)
            return 1;
        const ams_mib_unit *u = ams_mib_unit_get(v, sub);
        if (!u || u->super < 0)
            return 0;
        sub = u->super;
    }
    return 0;
}

static int in_sorted(const int *a, int n, int x)
{
    return bsearch(&x, a, (size_t)n, sizeof *a, cmp_int) != NULL;
}

TERN_API int ams_mib_may_send(const ams_mib_venture *v, int subject, int role)
{
    const ams_mib_subject *s = ams_mib_subject_get(v, subject);
    return s && (!s->n_senders || in_sorted(s->senders, s->n_senders, role));
}

TERN_API int ams_mib_may_receive(const ams_mib_venture *v, int subject, int role)
{
    const ams_mib_subject *s = ams_mib_subject_get(v, subject);
    return s && (!s->n_receivers || in_sorted(s->receivers, s->n_receivers, role));
}
