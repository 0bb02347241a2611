/* cfdpadmin command interpreter (cfdp_rc.h; docs/cfdpadmin.md). */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfdp_rc.h"
#include "tern/ckd.h"
#include "tern/suggest.h"

/* flags_ bits */
#define F_QUIT      0x1u /* a "q" ended the commands */
#define F_QUIT_SAID 0x2u /* ... and the first one after it was reported */
#define F_EARLY     0x4u /* a command before "1" was reported */
#define F_UDP_SAID  0x8u /* "udp peer but no m udpport" was reported */

/* Seconds become the engine's uint32 milliseconds: the bound of every
 * period a cfdprc gives (about 49 days). */
#define MAX_SECONDS (UINT32_MAX / 1000u)

/* File data bytes beyond which a PDU cannot grow: the largest header,
 * an 8-byte (large file) offset and the PDU CRC. */
#define FD_OVERHEAD (CFDP_HEADER_MAX + 8u + 2u)

static const char *const known_cmds[] = {"1",
                                         "a entity",
                                         "c entity",
                                         "d entity",
                                         "i",
                                         "l entity",
                                         "m discard",
                                         "m requirecrc",
                                         "m fillchar",
                                         "m ckperiod",
                                         "m maxtimeouts",
                                         "m maxevents",
                                         "m maxtrnbr",
                                         "m segsize",
                                         "m inactivity",
                                         "m nakdelay",
                                         "m udpport",
                                         "s",
                                         "x",
                                         "e",
                                         "w",
                                         "v",
                                         "h",
                                         "q",
                                         "t",
                                         NULL};

static const char *const entity_usage =
    "'%c entity <entity nbr> <UT protocol name> <UT endpoint name> <rtt> "
    "<incstype> <outcstype>'";

/* w is one letter of set (an empty word is none). */
static int one_of(const char *w, const char *set)
{
    return w[0] && !w[1] && strchr(set, w[0]);
}

__attribute__((format(printf, 4, 5))) static int note(cfdp_rc *rc, const tern_rc_cmd *c,
                                                      int is_error, const char *fmt, ...)
{
    char body[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof body, fmt, ap);
    va_end(ap);
    cfdp_rc_diag *d = realloc(rc->diags, (rc->ndiags + 1) * sizeof *d);
    if (!d)
        return -ENOMEM;
    rc->diags = d;
    /* an error names the command it is about: "file:line: 'm segsize': ..." */
    char head[200] = "";
    if (is_error) {
        int two = c->argc >= 2 && one_of(c->argv[0], "acdlm");
        head[0] = '\'';
        tern_cmd_head(c, two ? 2 : 1, head + 1, sizeof head - 4);
        strcat(head, "': ");
    }
    char *t;
    if (asprintf(&t, "%s:%u: %s%s", c->file ? c->file : "<input>", c->line, head, body) <
        0)
        return -ENOMEM;
    d[rc->ndiags].text = t;
    d[rc->ndiags].line = c->line;
    d[rc->ndiags].is_error = (uint8_t)(is_error != 0);
    rc->ndiags++;
    rc->nerrors += is_error != 0;
    return is_error ? TERN_ESYNTAX : 0;
}

#define ERR(...)  return note(rc, c, 1, __VA_ARGS__)
#define WARN(...) return note(rc, c, 0, __VA_ARGS__)

/* A decimal number in [lo, hi]: digits only (no sign, no spaces, no
 * suffix), as every count and period in a cfdprc is. */
static int parse_num(const char *s, uint64_t lo, uint64_t hi, uint64_t *v)
{
    if (!s || *s < '0' || *s > '9')
        return -1;
    uint64_t x = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return -1;
        if (tern_ckd_mul(&x, x, 10) || tern_ckd_add(&x, x, (uint64_t)(*s - '0')))
            return -1;
    }
    if (x < lo || x > hi)
        return -1;
    *v = x;
    return 0;
}

/* ION reads the fill character with strtol(s, 16): "aa" and "0xaa" alike. */
static int parse_hex_byte(const char *s, uint8_t *v)
{
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        s += 2;
    if (!*s || strlen(s) > 2)
        return -1;
    unsigned x = 0;
    for (; *s; s++) {
        int d = (*s >= '0' && *s <= '9')   ? *s - '0'
                : (*s >= 'a' && *s <= 'f') ? *s - 'a' + 10
                : (*s >= 'A' && *s <= 'F') ? *s - 'A' + 10
                                           : -1;
        if (d < 0)
            return -1;
        x = x * 16 + (unsigned)d;
    }
    *v = (uint8_t)x;
    return 0;
}

/* "<host>:<port>" or "[<v6 host>]:<port>"; a bare "<port>" when
 * host_optional. host[0] is '\0' when absent. */
static int parse_hostport(const char *s, int host_optional, char *host, size_t cap,
                          uint16_t *port)
{
    const char *colon = strrchr(s, ':');
    const char *p = colon ? colon + 1 : s;
    size_t hl = colon ? (size_t)(colon - s) : 0;
    const char *h = s;
    if (!colon && !host_optional)
        return -1;
    if (colon && hl >= 2 && s[0] == '[' && s[hl - 1] == ']') {
        h++;
        hl -= 2;
    } else if (colon && memchr(s, ':', hl)) {
        return -1; /* a v6 address needs its brackets */
    }
    if (colon && !hl)
        return -1;
    if (hl >= cap)
        return -1;
    uint64_t v;
    if (parse_num(p, 1, 65535, &v))
        return -1;
    memcpy(host, h, hl);
    host[hl] = '\0';
    *port = (uint16_t)v;
    return 0;
}

static int cksum_ok(uint64_t t)
{
    return t == CFDP_CKSUM_MODULAR || t == CFDP_CKSUM_PROX1 || t == CFDP_CKSUM_CRC32C ||
           t == CFDP_CKSUM_CRC32 || t == CFDP_CKSUM_NULL;
}

static cfdp_rc_peer *find_peer(cfdp_rc *rc, uint64_t id)
{
    for (size_t i = 0; i < rc->npeers; i++)
        if (rc->peers[i].cfg.id == id)
            return &rc->peers[i];
    return NULL;
}

TERN_API void cfdp_rc_init(cfdp_rc *rc)
{
    memset(rc, 0, sizeof *rc);
    cfdp_peer_cfg_defaults(&rc->defaults);
    rc->fill_char = 0xaa;
    rc->max_events = 20;
    rc->max_trnbr = 999999999;
}

TERN_API void cfdp_rc_free(cfdp_rc *rc)
{
    for (size_t i = 0; i < rc->ndiags; i++)
        free(rc->diags[i].text);
    free(rc->diags);
    free(rc->peers);
    free(rc->mib);
    memset(rc, 0, sizeof *rc);
}

/* "a entity" and "c entity". */
static int entity_cmd(cfdp_rc *rc, const tern_rc_cmd *c, int change)
{
    char u = change ? 'c' : 'a';
    char usage[200];
    snprintf(usage, sizeof usage, entity_usage, u);
    if (c->argc != 8)
        ERR("takes 6 arguments, got %d; expected %s", c->argc - 2, usage);
    uint64_t id, rtt, in, out;
    if (parse_num(c->argv[2], 1, UINT64_MAX, &id))
        ERR("entity nbr '%s': expected a number from 1 to %" PRIu64, c->argv[2],
            UINT64_MAX);
    const char *proto = c->argv[3], *ep = c->argv[4];
    uint8_t transport;
    char host[256] = "";
    uint16_t port = 0;
    uint64_t ep_node = 0;
    int ep_other_node = 0;
    if (strlen(ep) >= sizeof rc->peers->endpoint)
        ERR("UT endpoint name of %zu bytes: expected at most %zu", strlen(ep),
            sizeof rc->peers->endpoint - 1);
    if (strcmp(proto, "bp") == 0) {
        transport = CFDP_RC_BP;
        if (strncmp(ep, "ipn:", 4) == 0) {
            char node[32];
            const char *dot = strchr(ep + 4, '.');
            size_t nl = dot ? (size_t)(dot - ep - 4) : 0;
            uint64_t svc;
            if (!dot || nl >= sizeof node)
                ERR("UT endpoint name '%s': expected an ipn:<node>.<service> or dtn: "
                    "endpoint ID",
                    ep);
            memcpy(node, ep + 4, nl);
            node[nl] = '\0';
            if (parse_num(node, 0, UINT64_MAX, &ep_node) ||
                parse_num(dot + 1, 0, UINT64_MAX, &svc))
                ERR("UT endpoint name '%s': expected an ipn:<node>.<service> or dtn: "
                    "endpoint ID",
                    ep);
            ep_other_node = ep_node != id;
        } else if (strncmp(ep, "dtn:", 4) != 0 || !ep[4]) {
            ERR("UT endpoint name '%s': expected an ipn:<node>.<service> or dtn: "
                "endpoint ID for protocol bp",
                ep);
        }
    } else if (strcmp(proto, "udp") == 0) {
        transport = CFDP_RC_UDP;
        if (parse_hostport(ep, 0, host, sizeof host, &port))
            ERR("UT endpoint name '%s': expected <host>:<port> (port 1 to 65535) for "
                "protocol udp",
                ep);
    } else if (strcmp(proto, "tcp") == 0 || strcmp(proto, "ltp") == 0) {
        ERR("UT protocol '%s': Tern carries CFDP over bp (one PDU per bundle) or udp "
            "(Tern's extension); expected bp or udp",
            proto);
    } else {
        ERR("UT protocol '%s': expected bp, or udp (Tern's extension)", proto);
    }
    if (parse_num(c->argv[5], 0, MAX_SECONDS, &rtt))
        ERR("rtt '%s': expected seconds from 0 to %u", c->argv[5], MAX_SECONDS);
    if (parse_num(c->argv[6], 0, 255, &in) || !cksum_ok(in))
        ERR("incstype '%s': expected a checksum type: 0 (modular), 1 (Proximity-1 "
            "CRC-32), 2 (CRC32C), 3 (CRC-32) or 15 (null)",
            c->argv[6]);
    if (parse_num(c->argv[7], 0, 255, &out) || !cksum_ok(out))
        ERR("outcstype '%s': expected a checksum type: 0 (modular), 1 (Proximity-1 "
            "CRC-32), 2 (CRC32C), 3 (CRC-32) or 15 (null)",
            c->argv[7]);
    cfdp_rc_peer *p = find_peer(rc, id);
    if (change && !p)
        ERR("no entity %" PRIu64 " to change; expected 'a entity %" PRIu64 " ...' first",
            id, id);
    if (!change && p)
        ERR("entity %" PRIu64 " exists already (%s); expected 'c entity' to change it",
            id, p->at);
    if (!p) {
        p = realloc(rc->peers, (rc->npeers + 1) * sizeof *p);
        if (!p)
            return -ENOMEM;
        rc->peers = p;
        p = &rc->peers[rc->npeers++];
    }
    memset(p, 0, sizeof *p);
    p->cfg.id = id;
    p->transport = transport;
    snprintf(p->endpoint, sizeof p->endpoint, "%s", ep);
    snprintf(p->host, sizeof p->host, "%s", host);
    p->port = port;
    p->rtt_s = (uint32_t)rtt;
    p->in_cksum = (uint8_t)in;
    p->out_cksum = (uint8_t)out;
    snprintf(p->at, sizeof p->at, "%s:%u", c->file ? c->file : "<input>", c->line);
    if (ep_other_node)
        WARN("entity %" PRIu64 "'s UT endpoint %s names node %" PRIu64
             ": accepted but not used (Tern, as ION, sends entity %" PRIu64
             "'s PDUs to ipn:%" PRIu64 ".65)",
             id, ep, ep_node, id, id);
    return 0;
}

static int entity_nbr(cfdp_rc *rc, const tern_rc_cmd *c, const char *s, uint64_t *id,
                      const char *usage)
{
    if (parse_num(s, 1, UINT64_MAX, id))
        ERR("entity nbr '%s': expected a number from 1 to %" PRIu64 "; expected %s", s,
            UINT64_MAX, usage);
    return 0;
}

static int delete_cmd(cfdp_rc *rc, const tern_rc_cmd *c)
{
    const char *usage = "'d entity <entity nbr>'";
    if (c->argc != 3 && c->argc != 4)
        ERR("takes 1 argument, got %d; expected %s", c->argc - 2, usage);
    uint64_t id;
    int r = entity_nbr(rc, c, c->argv[2], &id, usage);
    if (r)
        return r;
    cfdp_rc_peer *p = find_peer(rc, id);
    if (!p)
        ERR("no entity %" PRIu64 " to delete; expected an entity nbr an 'a entity' added",
            id);
    size_t i = (size_t)(p - rc->peers);
    memmove(p, p + 1, (rc->npeers - i - 1) * sizeof *p);
    rc->npeers--;
    /* ION 4.1's cfdpadmin wants a fourth word here and never reads it */
    if (c->argc == 4)
        WARN("'d entity %s %s': the word '%s' is not used", c->argv[2], c->argv[3],
             c->argv[3]);
    return 0;
}

/* "i", "i <nbr>", "i entity <nbr>" and "l entity": listings. A file's
 * listing shows nothing; the command is checked as ION would run it. */
static int info_cmd(cfdp_rc *rc, const tern_rc_cmd *c)
{
    const char *usage = "'i' or 'i entity <entity nbr>'";
    const char *nbr = NULL;
    if (c->argc == 1)
        return 0;
    int is_entity = strcmp(c->argv[1], "entity") == 0;
    if (c->argc == 2 && is_entity)
        ERR("needs an entity nbr after 'entity'; expected 'i entity <entity nbr>'");
    if (c->argc == 2)
        nbr = c->argv[1];
    else if (c->argc == 3 && is_entity)
        nbr = c->argv[2];
    else if (c->argc == 3)
        ERR("'%s' is not something 'i' shows; expected %s", c->argv[1], usage);
    else
        ERR("takes at most 2 arguments, got %d; expected %s", c->argc - 1, usage);
    uint64_t id;
    int r = entity_nbr(rc, c, nbr, &id, usage);
    if (r)
        return r;
    if (!find_peer(rc, id))
        WARN("'i entity %" PRIu64 "': no such entity (yet)", id);
    return 0;
}

/* m ...: the entity-wide settings. */
static int manage_cmd(cfdp_rc *rc, const tern_rc_cmd *c)
{
    char dym[200];
    if (c->argc < 2)
        ERR("needs a parameter; expected 'm <discard|requirecrc|fillchar|ckperiod|"
            "maxtimeouts|maxevents|maxtrnbr|segsize|inactivity|nakdelay|udpport> "
            "<value>'");
    const char *k = c->argv[1];
    static const struct {
        const char *name, *value;
    } params[] = {
        {"discard", "0 or 1"},
        {"requirecrc", "0 or 1"},
        {"fillchar", "<hex byte, e.g. 0xaa>"},
        {"ckperiod", "<check cycle period, s>"},
        {"maxtimeouts", "<check cycle limit>"},
        {"maxevents", "<event queue limit>"},
        {"maxtrnbr", "<max transaction number>"},
        {"segsize", "<max bytes per file data segment>"},
        {"inactivity", "<inactivity period, s>"},
        {"nakdelay", "<ms a receiver waits for reordered data before a NAK>"},
        {"udpport", "[<host>:]<port>"},
    };
    size_t i = 0;
    for (; i < sizeof params / sizeof params[0]; i++)
        if (strcmp(k, params[i].name) == 0)
            break;
    if (i == sizeof params / sizeof params[0])
        WARN("unknown command 'm %s'%s: ignored", k,
             tern_did_you_mean(tern_suggest_cmd(c, known_cmds), dym, sizeof dym));
    if (c->argc != 3)
        ERR("takes 1 argument, got %d; expected 'm %s %s'", c->argc - 2, k,
            params[i].value);
    const char *s = c->argv[2];
    uint64_t v;
    if (!strcmp(k, "discard") || !strcmp(k, "requirecrc")) {
        if (parse_num(s, 0, 1, &v))
            ERR("'%s': expected 0 or 1", s);
        if (k[0] == 'd') {
            rc->defaults.keep_incomplete = (uint8_t)!v;
            rc->set |= CFDP_RC_SET_DISCARD;
        } else {
            rc->defaults.crc_required = (uint8_t)v;
            rc->set |= CFDP_RC_SET_REQUIRECRC;
        }
    } else if (!strcmp(k, "fillchar")) {
        uint8_t b;
        if (parse_hex_byte(s, &b))
            ERR("fill character '%s': expected a byte in hex, 0x00 to 0xff", s);
        rc->fill_char = b;
        rc->set |= CFDP_RC_SET_FILLCHAR;
        WARN("'m fillchar %s' accepted but not used: Tern does not fill the missing "
             "parts of a file it keeps incomplete (they read as zeros)",
             s);
    } else if (!strcmp(k, "ckperiod") || !strcmp(k, "inactivity")) {
        if (parse_num(s, 1, MAX_SECONDS, &v))
            ERR("%s '%s': expected seconds from 1 to %u",
                k[0] == 'c' ? "check cycle period" : "inactivity period", s, MAX_SECONDS);
        if (k[0] == 'c') {
            rc->defaults.check_timer_ms = (uint32_t)(v * 1000);
            rc->set |= CFDP_RC_SET_CKPERIOD;
        } else {
            rc->defaults.inactivity_ms = (uint32_t)(v * 1000);
            rc->set |= CFDP_RC_SET_INACTIVITY;
        }
    } else if (!strcmp(k, "nakdelay")) {
        /* Tern's: over BP a bundle overtaken by another (an LTP block under
         * repair) is not lost, and a NAK for it only sends the data twice;
         * milliseconds, because the engine's default is 50 ms */
        if (parse_num(s, 1, (uint64_t)MAX_SECONDS * 1000u, &v))
            ERR("NAK delay '%s': expected milliseconds from 1 to %" PRIu64, s,
                (uint64_t)MAX_SECONDS * 1000u);
        rc->defaults.nak_delay_ms = (uint32_t)v;
        rc->set |= CFDP_RC_SET_NAKDELAY;
    } else if (!strcmp(k, "maxtimeouts")) {
        /* The engine, as ION, faults when the count passes the limit; its
         * 0 means "the default", so ION's 0 (fault on the first expiry) has
         * no counterpart and is refused rather than silently changed. */
        if (parse_num(s, 1, UINT16_MAX, &v))
            ERR("check cycle limit '%s': expected a number from 1 to 65535", s);
        rc->defaults.check_limit = (uint16_t)v;
        rc->set |= CFDP_RC_SET_MAXTIMEOUTS;
    } else if (!strcmp(k, "maxevents")) {
        if (parse_num(s, 0, UINT32_MAX, &v))
            ERR("event queue limit '%s': expected a number from 0 to %u", s, UINT32_MAX);
        rc->max_events = (uint32_t)v;
        rc->set |= CFDP_RC_SET_MAXEVENTS;
        WARN("'m maxevents %s' accepted but not used: Tern's indication queue has no "
             "limit and drops nothing",
             s);
    } else if (!strcmp(k, "maxtrnbr")) {
        if (parse_num(s, 1, UINT64_MAX, &v))
            ERR("max transaction number '%s': expected a number from 1 to %" PRIu64, s,
                UINT64_MAX);
        rc->max_trnbr = v;
        rc->set |= CFDP_RC_SET_MAXTRNBR;
        WARN("'m maxtrnbr %s' accepted but not used: Tern's engine does not wrap "
             "transaction numbers at a configured maximum",
             s);
    } else if (!strcmp(k, "segsize")) {
        if (parse_num(s, 1, 65535, &v))
            ERR("segment size '%s': expected bytes per file data segment from 1 to 65535",
                s);
        rc->segsize = (uint32_t)v;
        rc->defaults.max_segment = (uint32_t)v;
        uint64_t pdu;
        if (tern_ckd_add(&pdu, v, FD_OVERHEAD) || pdu > CFDP_PDU_MAX)
            pdu = CFDP_PDU_MAX;
        rc->defaults.max_pdu = (uint32_t)pdu;
        rc->set |= CFDP_RC_SET_SEGSIZE;
    } else { /* udpport */
        char host[256];
        uint16_t port;
        if (parse_hostport(s, 1, host, sizeof host, &port))
            ERR("'%s': expected [<host>:]<port> with a port from 1 to 65535", s);
        snprintf(rc->udp_host, sizeof rc->udp_host, "%s", host);
        rc->udp_port = port;
        rc->set |= CFDP_RC_SET_UDPPORT;
    }
    return 0;
}

/* s '<UTS command>' */
static int start_cmd(cfdp_rc *rc, const tern_rc_cmd *c)
{
    if (c->argc != 2)
        ERR("takes 1 argument, got %d; expected \"s '<UTS command>'\" such as \"s "
            "'bputa'\"",
            c->argc - 1);
    const char *s = c->argv[1];
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strcspn(s, " \t");
    const char *rest = s + n;
    while (*rest == ' ' || *rest == '\t')
        rest++;
    if (n == 5 && memcmp(s, "bputa", 5) == 0) {
        rc->uts = CFDP_RC_UTS_BPUTA;
    } else if (n == 6 && memcmp(s, "tcputa", 6) == 0) {
        ERR("UTS command '%s': Tern has no CFDP over TCP; expected 'bputa' (UDP peers "
            "need no UTS command: see 'a entity ... udp' and 'm udpport')",
            c->argv[1]);
    } else {
        ERR("UTS command '%s': expected 'bputa'", c->argv[1]);
    }
    snprintf(rc->uts_cmd, sizeof rc->uts_cmd, "%s", c->argv[1]);
    snprintf(rc->uts_at, sizeof rc->uts_at, "%s:%u", c->file ? c->file : "<input>",
             c->line);
    if (*rest)
        WARN("UTS command '%s': bputa takes no arguments; '%s' is not used", c->argv[1],
             rest);
    return 0;
}

TERN_API int cfdp_rc_command(cfdp_rc *rc, const tern_rc_cmd *c)
{
    char dym[200], head[200];
    if (!c || c->argc < 1 || (c->section && strcmp(c->section, "cfdpadmin") != 0))
        return 0;
    const char *w = c->argv[0];
    if (rc->flags_ & F_QUIT) {
        if (rc->flags_ & F_QUIT_SAID)
            return 0;
        rc->flags_ |= F_QUIT_SAID;
        WARN("'%s' and the commands after it are not read: a 'q' came before them", w);
    }
    rc->ncommands++;
    if (!rc->initialized && strcmp(w, "1") != 0 && !(rc->flags_ & F_EARLY) &&
        one_of(w, "acdms")) {
        int r = note(rc, c, 0,
                     "'%s' before '1' (initialize): ION's cfdpadmin refuses it; Tern "
                     "applies it",
                     tern_cmd_head(c, 2, head, sizeof head));
        if (r)
            return r;
        rc->flags_ |= F_EARLY;
    }
    if (!w[0] || w[1])
        goto unknown;
    switch (w[0]) {
    case '1':
        if (c->argc != 1)
            ERR("takes no arguments, got %d; expected '1' (initialize: the entity ID "
                "is the node number ionadmin's '1' gives)",
                c->argc - 1);
        if (rc->initialized)
            WARN("'1' again: CFDP is initialized already; ignored");
        rc->initialized = 1;
        return 0;
    case 'a':
    case 'c':
    case 'd':
    case 'l':
        if (c->argc < 2) {
            char usage[200];
            snprintf(usage, sizeof usage, entity_usage, w[0]);
            ERR("needs what to %s; expected %s",
                w[0] == 'a'   ? "add"
                : w[0] == 'c' ? "change"
                : w[0] == 'd' ? "delete"
                              : "list",
                w[0] == 'd'   ? "'d entity <entity nbr>'"
                : w[0] == 'l' ? "'l entity'"
                              : usage);
        }
        if (strcmp(c->argv[1], "entity") != 0)
            goto unknown;
        if (w[0] == 'a' || w[0] == 'c')
            return entity_cmd(rc, c, w[0] == 'c');
        if (w[0] == 'd')
            return delete_cmd(rc, c);
        if (c->argc != 2)
            ERR("takes no arguments, got %d; expected 'l entity'", c->argc - 2);
        return 0;
    case 'i':
        return info_cmd(rc, c);
    case 'm':
        return manage_cmd(rc, c);
    case 's':
        return start_cmd(rc, c);
    case 'x':
        if (c->argc != 1)
            ERR("takes no arguments, got %d; expected 'x' (stop)", c->argc - 1);
        WARN("'x' (stop the UT service) accepted but not acted on: cfdpd stops with "
             "the node");
    case 'e':
        if (c->argc != 2 || (strcmp(c->argv[1], "0") && strcmp(c->argv[1], "1")))
            ERR("expected 'e 1' or 'e 0' (echo on or off)");
        WARN("'e %s' (echo to the ION log) accepted but not acted on", c->argv[1]);
    case 'w':
        if (c->argc != 2)
            ERR("takes 1 argument, got %d; expected 'w 0', 'w 1' or 'w <activity "
                "spec>'",
                c->argc - 1);
        WARN("'w %s' (watch characters) accepted but not acted on", c->argv[1]);
    case 't':
        WARN("'%s' (wait for the UT service) accepted but not acted on",
             tern_cmd_head(c, 3, head, sizeof head));
    case 'q':
        rc->flags_ |= F_QUIT;
        return 0;
    case 'v':
    case 'h':
    case '?':
        return 0; /* prints help or the version at a prompt; nothing in a file */
    default:
        break;
    }
unknown:
    /* "m segsz", "a span": a one-letter command names its object too */
    WARN("unknown command '%s'%s: ignored",
         tern_cmd_head(c, one_of(w, "acdilm") ? 2 : 1, head, sizeof head),
         tern_did_you_mean(tern_suggest_cmd(c, known_cmds), dym, sizeof dym));
}

TERN_API int cfdp_rc_finish(cfdp_rc *rc)
{
    free(rc->mib);
    rc->mib = NULL;
    if (!rc->npeers)
        return 0;
    cfdp_peer_cfg *mib = calloc(rc->npeers, sizeof *mib);
    if (!mib)
        return -ENOMEM;
    for (size_t i = 0; i < rc->npeers; i++) {
        cfdp_rc_peer *p = &rc->peers[i];
        uint64_t id = p->cfg.id;
        p->cfg = rc->defaults;
        p->cfg.id = id;
        p->cfg.checksum_type = p->out_cksum;
        if (p->rtt_s) {
            /* ION times acknowledgments with the round trip; so do both of
             * the engine's response timers */
            p->cfg.ack_timer_ms = p->rtt_s * 1000u;
            p->cfg.nak_timer_ms = p->rtt_s * 1000u;
        }
        if (p->transport == CFDP_RC_UDP && p->cfg.max_pdu > CFDP_RC_UDP_MAX_PDU)
            p->cfg.max_pdu = CFDP_RC_UDP_MAX_PDU;
        mib[i] = p->cfg;
    }
    rc->mib = mib;
    /* Replies from a UDP peer (ACK, NAK, Finished) need a port to come to. */
    for (size_t i = 0; i < rc->npeers && !rc->udp_port && !(rc->flags_ & F_UDP_SAID);
         i++) {
        const cfdp_rc_peer *p = &rc->peers[i];
        if (p->transport != CFDP_RC_UDP)
            continue;
        const char *colon = strrchr(p->at, ':');
        tern_rc_cmd at = {.file = NULL,
                          .line = colon ? (unsigned)strtoul(colon + 1, NULL, 10) : 0};
        char file[300];
        snprintf(file, sizeof file, "%.*s", colon ? (int)(colon - p->at) : 0, p->at);
        at.file = file;
        rc->flags_ |= F_UDP_SAID;
        int r = note(rc, &at, 0,
                     "entity %" PRIu64 " is reached over udp, but no 'm udpport' says "
                     "where this entity receives its replies; expected 'm udpport "
                     "[<host>:]<port>'",
                     p->cfg.id);
        if (r)
            return r;
    }
    return 0;
}

static int by_line(const cfdp_rc_diag *x, const cfdp_rc_diag *y)
{
    if (x->line != y->line)
        return x->line < y->line ? -1 : 1;
    return 0;
}

/* The lexer's diagnostics read "name:line: ..."; the line is taken back
 * from the text so they merge with the commands' in line order. */
static unsigned diag_line(const char *d, const char *name)
{
    size_t n = strlen(name);
    if (strncmp(d, name, n) != 0 || d[n] != ':')
        return 0;
    return (unsigned)strtoul(d + n + 1, NULL, 10);
}

static int parse_into(cfdp_rc *rc, tern_rc *lx, const char *name)
{
    int r = 0;
    size_t nlex = tern_rc_diag_count(lx);
    if (nlex) {
        cfdp_rc_diag *d = realloc(rc->diags, (rc->ndiags + nlex) * sizeof *d);
        if (!d)
            return -ENOMEM;
        rc->diags = d;
        for (size_t i = 0; i < nlex; i++) {
            int is_err;
            const char *t = tern_rc_diag_at(lx, i, &is_err);
            if (!(d[rc->ndiags].text = strdup(t)))
                return -ENOMEM;
            d[rc->ndiags].line = diag_line(t, name);
            d[rc->ndiags].is_error = (uint8_t)(is_err != 0);
            rc->ndiags++;
            rc->nerrors += is_err != 0;
        }
    }
    for (size_t i = 0; i < tern_rc_count(lx); i++) {
        r = cfdp_rc_command(rc, tern_rc_at(lx, i));
        if (r == -ENOMEM)
            return r;
    }
    if ((r = cfdp_rc_finish(rc)))
        return r;
    /* Line order: the lexer's messages, then the commands' (each run in
     * order but for cfdp_rc_finish's, which name an earlier line). A stable
     * insertion sort keeps a line's lexer message before its command's;
     * the runs are nearly sorted, so it is about linear. */
    for (size_t k = 1; k < rc->ndiags; k++) {
        cfdp_rc_diag d = rc->diags[k];
        size_t m = k;
        while (m > 0 && by_line(&rc->diags[m - 1], &d) > 0) {
            rc->diags[m] = rc->diags[m - 1];
            m--;
        }
        rc->diags[m] = d;
    }
    return rc->nerrors ? TERN_ESYNTAX : 0;
}

TERN_API int cfdp_rc_parse(const char *text, size_t len, const char *name, cfdp_rc *rc)
{
    tern_rc *lx = NULL;
    cfdp_rc_init(rc);
    if (!name)
        name = "<input>";
    int r = tern_rc_parse(&lx, name, text ? text : "", text ? len : 0, "cfdpadmin");
    if (r == -ENOMEM) {
        tern_rc_free(lx);
        return r;
    }
    r = parse_into(rc, lx, name);
    tern_rc_free(lx);
    return r;
}

TERN_API int cfdp_rc_load(const char *path, cfdp_rc *rc)
{
    tern_rc *lx = NULL;
    cfdp_rc_init(rc);
    int r = tern_rc_load(&lx, path, "cfdpadmin");
    if (r != 0 && r != TERN_ESYNTAX) {
        tern_rc_free(lx);
        return r;
    }
    r = parse_into(rc, lx, path);
    tern_rc_free(lx);
    return r;
}

TERN_API void cfdp_rc_entity_cfg(const cfdp_rc *rc, cfdp_entity_cfg *cfg)
{
    cfg->defaults = rc->defaults;
    cfg->peers = rc->mib;
    cfg->npeers = rc->mib ? rc->npeers : 0;
}

static const char *cksum_name(unsigned t)
{
    switch (t) {
    case CFDP_CKSUM_MODULAR:
        return "modular";
    case CFDP_CKSUM_PROX1:
        return "Proximity-1 CRC-32";
    case CFDP_CKSUM_CRC32C:
        return "CRC32C";
    case CFDP_CKSUM_CRC32:
        return "CRC-32";
    case CFDP_CKSUM_NULL:
        return "null";
    default:
        return "unknown";
    }
}

/* snprintf into out[*at..cap), keeping the total length needed in *at */
__attribute__((format(printf, 4, 5))) static void put(char *out, size_t cap, size_t *at,
                                                      const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(*at < cap ? out + *at : NULL, *at < cap ? cap - *at : 0, fmt, ap);
    va_end(ap);
    if (n > 0)
        *at += (size_t)n;
}

static const char *from(const cfdp_rc *rc, unsigned bit)
{
    return (rc->set & bit) ? "" : " (default)";
}

TERN_API int cfdp_rc_format(const cfdp_rc *rc, char *out, size_t cap)
{
    size_t at = 0;
    const cfdp_peer_cfg *d = &rc->defaults;
    if (cap)
        out[0] = '\0';
    put(out, cap, &at, "cfdpadmin: %zu command%s, %s\n", rc->ncommands,
        rc->ncommands == 1 ? "" : "s",
        rc->initialized ? "initialized ('1')" : "not initialized (no '1')");
    if (rc->uts == CFDP_RC_UTS_BPUTA)
        put(out, cap, &at,
            "UT service:     bputa (%s): BP, sends from ipn:<node>.64, receives at "
            "ipn:<node>.65\n",
            rc->uts_at);
    else
        put(out, cap, &at, "UT service:     none started (no 's' command)\n");
    if (rc->udp_port)
        put(out, cap, &at, "UDP:            receives at %s:%u\n",
            rc->udp_host[0] ? rc->udp_host : "*", rc->udp_port);
    put(out, cap, &at, "entity-wide:\n");
    put(out, cap, &at, "  incomplete files   %s%s\n",
        d->keep_incomplete ? "kept" : "discarded", from(rc, CFDP_RC_SET_DISCARD));
    put(out, cap, &at, "  PDU CRC            %s%s\n",
        d->crc_required ? "required" : "not required", from(rc, CFDP_RC_SET_REQUIRECRC));
    if (rc->segsize)
        put(out, cap, &at, "  segment size       %u bytes (largest PDU %u bytes)\n",
            rc->segsize, d->max_pdu);
    else
        put(out, cap, &at, "  segment size       what fits a %u-byte PDU (default)\n",
            d->max_pdu);
    put(out, cap, &at, "  check timer        %u s, limit %u%s\n",
        d->check_timer_ms / 1000, d->check_limit,
        (rc->set & (CFDP_RC_SET_CKPERIOD | CFDP_RC_SET_MAXTIMEOUTS)) ? "" : " (default)");
    put(out, cap, &at, "  inactivity         %u s%s\n", d->inactivity_ms / 1000,
        from(rc, CFDP_RC_SET_INACTIVITY));
    put(out, cap, &at, "  NAK delay          %u ms%s\n", d->nak_delay_ms,
        from(rc, CFDP_RC_SET_NAKDELAY));
    put(out, cap, &at, "  ACK / NAK timers   %u s / %u s, limits %u / %u (default)\n",
        d->ack_timer_ms / 1000, d->nak_timer_ms / 1000, d->ack_limit, d->nak_limit);
    put(out, cap, &at,
        "  not used by Tern   fillchar 0x%02x%s, maxevents %u%s, maxtrnbr %" PRIu64
        "%s\n",
        rc->fill_char, from(rc, CFDP_RC_SET_FILLCHAR), rc->max_events,
        from(rc, CFDP_RC_SET_MAXEVENTS), rc->max_trnbr, from(rc, CFDP_RC_SET_MAXTRNBR));
    put(out, cap, &at, "entities: %zu\n", rc->npeers);
    for (size_t i = 0; i < rc->npeers; i++) {
        const cfdp_rc_peer *p = &rc->peers[i];
        const cfdp_peer_cfg *c = rc->mib ? &rc->mib[i] : &p->cfg;
        put(out, cap, &at, "  %" PRIu64 " %s %s (%s)\n", p->cfg.id,
            p->transport == CFDP_RC_UDP ? "udp" : "bp", p->endpoint, p->at);
        if (p->transport == CFDP_RC_UDP)
            put(out, cap, &at, "      PDUs as UDP datagrams to %s port %u\n", p->host,
                p->port);
        else
            put(out, cap, &at, "      PDUs as bundles to ipn:%" PRIu64 ".65\n",
                p->cfg.id);
        put(out, cap, &at,
            "      rtt %u s: ACK / NAK timers %u s / %u s; checksum sent %u (%s), "
            "incstype %u (%s)\n",
            p->rtt_s, c->ack_timer_ms / 1000, c->nak_timer_ms / 1000, c->checksum_type,
            cksum_name(c->checksum_type), p->in_cksum, cksum_name(p->in_cksum));
        put(out, cap, &at, "      largest PDU %u bytes, PDU CRC %s, class %u\n",
            c->max_pdu, c->crc_required ? "required" : "not required", c->default_class);
    }
    return at > INT32_MAX ? INT32_MAX : (int)at;
}
