/* ltpadmin command interpreter. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ltp_admin.h"
#include "ltp_udp.h"
#include "tern/suggest.h"

__attribute__((format(printf, 4, 5))) static int say(const tern_rc_cmd *c, char *msg,
                                                     size_t len, const char *fmt, ...)
{
    if (!msg || !len)
        return 0;
    int n = snprintf(msg, len, "%s:%u: ", c->file, c->line);
    if (n < 0 || (size_t)n >= len)
        return 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg + n, len - (size_t)n, fmt, ap);
    va_end(ap);
    return 0;
}

#define SYNTAX(...)                                                                      \
    do {                                                                                 \
        say(c, msg, msglen, __VA_ARGS__);                                                \
        return TERN_ESYNTAX;                                                             \
    } while (0)

static int parse_u64(const char *s, uint64_t max, uint64_t *v)
{
    char *end;
    if (!s || !*s || *s == '-')
        return -1;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 10);
    if (errno || *end || x > max)
        return -1;
    *v = x;
    return 0;
}

/* A number of bytes, with an optional K, M or G (binary: KiB, MiB, GiB). */
static int parse_bytes(const char *s, uint64_t *v)
{
    char *end;
    if (!s || !*s || *s < '0' || *s > '9')
        return -1;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 10);
    if (errno)
        return -1;
    unsigned shift = 0;
    if (*end == 'k' || *end == 'K')
        shift = 10;
    else if (*end == 'm' || *end == 'M')
        shift = 20;
    else if (*end == 'g' || *end == 'G')
        shift = 30;
    if (shift)
        end++;
    if (*end || !x || (shift && x > (UINT64_MAX >> shift)))
        return -1;
    *v = (uint64_t)x << shift;
    return 0;
}

static int parse_double(const char *s, double lo, double hi, double *v)
{
    char *end;
    if (!s || !*s)
        return -1;
    errno = 0;
    double x = strtod(s, &end);
    if (errno || *end || !(x >= lo && x <= hi))
        return -1;
    *v = x;
    return 0;
}

TERN_API void ltp_admin_init(ltp_admin *a)
{
    memset(a, 0, sizeof *a);
    a->engine.max_retries = 5;
    a->engine.max_rounds = 8;
    a->engine.own_qtime_ms = 1000;
    a->seg_loss_rate = 0.01;
}

TERN_API void ltp_admin_free(ltp_admin *a)
{
    free(a->spans);
    a->spans = NULL;
    a->nspans = 0;
    for (size_t i = 0; i < a->nseats; i++)
        free(a->seats[i].file);
    free(a->seats);
    a->seats = NULL;
    a->nseats = 0;
}

static ltp_admin_span *find(ltp_admin *a, uint64_t peer)
{
    for (size_t i = 0; i < a->nspans; i++)
        if (a->spans[i].cfg.peer == peer)
            return &a->spans[i];
    return NULL;
}

TERN_API uint64_t ltp_admin_budget_ms(const ltp_engine_cfg *eng, const ltp_span_cfg *cfg)
{
    unsigned rounds = cfg->max_rounds ? cfg->max_rounds : eng->max_rounds;
    unsigned retries = cfg->max_retries ? cfg->max_retries : eng->max_retries;
    uint64_t rto = 2ull * cfg->owlt_ms + eng->own_qtime_ms + cfg->qtime_ms;
    return (uint64_t)rounds * (retries + 1) * (rto ? rto : 1);
}

/* "a span" and "c span": peer, windows, sizes, times, LSO, [queuing latency].
 * ION 4.1.3 also takes the older form with the export and import block sizes
 * after the session counts (9 or 10 arguments) and ignores them. */
static int span_cmd(ltp_admin *a, const tern_rc_cmd *c, int change, char *msg,
                    size_t msglen)
{
    char u = change ? 'c' : 'a';
    uint64_t peer, mx, mi, seg, agg, bx = 0, bi = 0;
    double aggt, q = 1.0;
    const char *v[10];
    int n = c->argc;
    if (n < 9 || n > 12)
        SYNTAX("'%c span' takes 7 or 8 arguments (9 or 10 in the older form with block "
               "sizes), got %d; expected '%c span <peer engine> <max export sessions> "
               "<max import sessions> <max segment size> <aggregation size threshold> "
               "<aggregation time limit> '<LSO command>' [queuing latency]'",
               u, n - 2, u);
    int older = n >= 11;
    for (int i = 0, k = 0; i < n; i++)
        if (!older || (i != 4 && i != 6))
            v[k++] = c->argv[i];
    if (older) {
        if (parse_u64(c->argv[4], UINT64_MAX, &bx))
            SYNTAX("max export block size '%s': expected a number of bytes", c->argv[4]);
        if (parse_u64(c->argv[6], UINT64_MAX, &bi))
            SYNTAX("max import block size '%s': expected a number of bytes", c->argv[6]);
        n -= 2;
    }
    if (parse_u64(v[2], UINT64_MAX, &peer) || peer == 0)
        SYNTAX("span peer engine '%s' is not a positive engine number", v[2]);
    if (parse_u64(v[3], 1000000, &mx) || mx == 0)
        SYNTAX("max export sessions '%s': expected a number from 1 to 1000000", v[3]);
    if (parse_u64(v[4], 1000000, &mi) || mi == 0)
        SYNTAX("max import sessions '%s': expected a number from 1 to 1000000", v[4]);
    if (parse_u64(v[5], 65536, &seg) || seg < 64)
        SYNTAX("max segment size '%s': expected bytes from 64 to 65536", v[5]);
    if (parse_u64(v[6], UINT32_MAX, &agg) || agg == 0)
        SYNTAX("aggregation size threshold '%s': expected a positive number of bytes",
               v[6]);
    /* Seconds, as in ION; fractions are Tern's extension (LAN spans). */
    if (parse_double(v[7], 0.0, 86400.0, &aggt))
        SYNTAX("aggregation time limit '%s': expected seconds from 0 to 86400", v[7]);
    if (strncmp(v[8], "udplso", 6) != 0)
        SYNTAX(
            "LSO command '%s': expected 'udplso <host>:<port> [<rate bits/s>]' (Tern's "
            "link service)",
            v[8]);
    char host[256], why[256];
    unsigned port;
    /* checked as the link service will read it, so the line is named now */
    if (ltp_udp_parse_lso(v[8], host, sizeof host, &port, NULL, why, sizeof why))
        SYNTAX("LSO command '%s': %s", v[8], why);
    /* ION: a negative latency is its absolute value plus session purging. */
    if (n == 10 && parse_double(v[9], -86400.0, 86400.0, &q))
        SYNTAX("queuing latency '%s': expected seconds from -86400 to 86400", v[9]);
    int purge = q < 0;
    if (purge)
        q = -q;
    ltp_admin_span *sp = find(a, peer);
    if (change && !sp)
        SYNTAX("no span for engine %" PRIu64 " to change; expected 'a span' first", peer);
    if (!change && sp)
        SYNTAX("a span for engine %" PRIu64
               " exists already; expected 'c span' to change it",
               peer);
    if (!sp) {
        ltp_admin_span *p = realloc(a->spans, (a->nspans + 1) * sizeof *p);
        if (!p)
            return -ENOMEM;
        a->spans = p;
        sp = &a->spans[a->nspans++];
        memset(sp, 0, sizeof *sp);
    }
    sp->cfg.peer = peer;
    sp->cfg.max_export = (unsigned)mx;
    sp->cfg.max_import = (unsigned)mi;
    sp->cfg.max_seg = (size_t)seg;
    sp->cfg.agg_size = (size_t)agg;
    sp->cfg.agg_ms = (unsigned)(aggt * 1000 + 0.5);
    sp->cfg.qtime_ms = (unsigned)(q * 1000 + 0.5);
    sp->cfg.seg_loss_rate = a->seg_loss_rate;
    sp->set = (sp->set & ~LTP_SET_QTIME) | (n == 10 ? LTP_SET_QTIME : 0);
    snprintf(sp->lso, sizeof sp->lso, "%s", v[8]);
    snprintf(sp->at, sizeof sp->at, "%s:%u", c->file ? c->file : "?", c->line);
    if (!older && !purge)
        return 0;
    /* Accepted, and what Tern does differently is said once, on this line. */
    char b[160] = "", p[256] = "";
    if (older)
        snprintf(b, sizeof b,
                 "the block sizes (%" PRIu64 ", %" PRIu64
                 ") of this older form are ignored, as ION 4 does",
                 bx, bi);
    if (purge)
        snprintf(p, sizeof p,
                 "queuing latency %s: Tern takes %g s and does not purge sessions at "
                 "the end of a contact (ION's meaning of the sign): they wait for the "
                 "next contact",
                 v[9], q);
    say(c, msg, msglen, "span %" PRIu64 ": %s%s%s", peer, b, b[0] && p[0] ? "; " : "", p);
    return LTP_ADMIN_IGNORED;
}

/* ------------------------------------------------------------------ seats */

#define LSI_EXPECTED "'udplsi {<host>|@}[:<port>]'"

/* The LSI command in argv[from..to): one (quoted) word, or two that
 * ltpadmin joins ("udplsi" "host:port"). Words are joined by one space, so
 * seats compare by their words. 0, or -1 if it does not fit. */
static int lsi_of(const tern_rc_cmd *c, int from, int to, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = '\0';
    for (int i = from; i < to; i++) {
        const char *w = c->argv[i];
        for (;;) {
            while (*w == ' ' || *w == '\t')
                w++;
            if (!*w)
                break;
            size_t l = strcspn(w, " \t");
            if (n + (n > 0) + l >= cap)
                return -1;
            if (n > 0)
                out[n++] = ' ';
            memcpy(out + n, w, l);
            n += l;
            out[n] = '\0';
            w += l;
        }
    }
    return 0;
}

/* Checks an LSI command the way the link service will read it, so a bad one
 * is refused naming its line rather than when the node starts. */
static int lsi_check(const tern_rc_cmd *c, const char *what, const char *lsi,
                     const char *usage, char *msg, size_t msglen)
{
    char host[256], err[256];
    unsigned port;
    if (strncmp(lsi, "udplsi", 6) != 0 || (lsi[6] != ' ' && lsi[6] != '\0'))
        SYNTAX("%s '%s': expected " LSI_EXPECTED " (Tern's link service)%s%s", what, lsi,
               usage ? "; expected " : "", usage ? usage : "");
    if (ltp_udp_parse_lsi(lsi, host, sizeof host, &port, err, sizeof err))
        SYNTAX("%s '%s': %s%s%s", what, lsi, err, usage ? "; expected " : "",
               usage ? usage : "");
    return 0;
}

static ltp_admin_seat *find_seat(ltp_admin *a, const char *lsi)
{
    for (size_t i = 0; i < a->nseats; i++)
        if (strcmp(a->seats[i].lsi, lsi) == 0)
            return &a->seats[i];
    return NULL;
}

static int seat_at(ltp_admin_seat *s, const tern_rc_cmd *c)
{
    char *f = strdup(c->file ? c->file : "?");
    if (!f)
        return -ENOMEM;
    free(s->file);
    s->file = f;
    s->line = c->line;
    return 0;
}

/* Adds the seat lsi (already checked). */
static int seat_add(ltp_admin *a, const tern_rc_cmd *c, const char *lsi)
{
    ltp_admin_seat *p = realloc(a->seats, (a->nseats + 1) * sizeof *p);
    if (!p)
        return -ENOMEM;
    a->seats = p;
    ltp_admin_seat *s = &a->seats[a->nseats];
    memset(s, 0, sizeof *s);
    snprintf(s->lsi, sizeof s->lsi, "%s", lsi);
    if (seat_at(s, c))
        return -ENOMEM;
    a->nseats++;
    return 0;
}

#define SEAT_USAGE   "\"a seat '<LSI command>'\", e.g. a seat 'udplsi 127.0.0.1:1113'"
#define C_SEAT_USAGE "\"c seat '<LSI command>' '<new LSI command>'\""

/* a|c|d|i|l seat. */
static int seat_cmd(ltp_admin *a, const tern_rc_cmd *c, char *msg, size_t msglen)
{
    char op = c->argv[0][0];
    char lsi[256], nlsi[256];
    int rc;
    if (op == 'l') {
        if (c->argc != 2)
            SYNTAX("expected 'l seat'");
        ltp_admin_list_seats(a, NULL, msg, msglen);
        return 0;
    }
    if (op == 'c') {
        if (c->argc != 4)
            SYNTAX("'c seat' takes two LSI commands, got %d; expected " C_SEAT_USAGE,
                   c->argc - 2);
        if (lsi_of(c, 2, 3, lsi, sizeof lsi) || lsi_of(c, 3, 4, nlsi, sizeof nlsi))
            SYNTAX("LSI command too long (at most %zu bytes)", sizeof lsi - 1);
        if ((rc = lsi_check(c, "new LSI command", nlsi, C_SEAT_USAGE, msg, msglen)))
            return rc;
        ltp_admin_seat *s = find_seat(a, lsi);
        if (!s)
            SYNTAX("no seat '%s' to change; expected one listed by 'l seat'", lsi);
        ltp_admin_seat *o = find_seat(a, nlsi);
        if (o && o != s)
            SYNTAX("a seat '%s' exists already (%s:%u)", nlsi, o->file, o->line);
        if (seat_at(s, c))
            return -ENOMEM;
        snprintf(s->lsi, sizeof s->lsi, "%s", nlsi);
        return 0;
    }
    /* a, d, i: one LSI command, quoted or as ltpadmin's two words */
    if (c->argc < 3 || c->argc > 4) {
        if (c->argc < 3)
            SYNTAX("'%c seat' takes one LSI command, got none; expected " SEAT_USAGE, op);
        SYNTAX("'%c seat' takes one LSI command, got %d words; expected " SEAT_USAGE, op,
               c->argc - 2);
    }
    if (lsi_of(c, 2, c->argc, lsi, sizeof lsi))
        SYNTAX("LSI command too long (at most %zu bytes)", sizeof lsi - 1);
    ltp_admin_seat *s = find_seat(a, lsi);
    if (op == 'a') {
        if ((rc = lsi_check(c, "LSI command", lsi, NULL, msg, msglen)))
            return rc;
        if (s)
            SYNTAX("a seat '%s' exists already (%s:%u); expected 'c seat' to change it",
                   lsi, s->file, s->line);
        return seat_add(a, c, lsi);
    }
    if (!s)
        SYNTAX("no seat '%s'%s; expected one listed by 'l seat'", lsi,
               op == 'd' ? " to delete" : "");
    if (op == 'i') {
        ltp_admin_list_seats(a, lsi, msg, msglen);
        return 0;
    }
    free(s->file);
    size_t i = (size_t)(s - a->seats);
    memmove(s, s + 1, (a->nseats - i - 1) * sizeof *s);
    a->nseats--;
    return 0;
}

/* "s" starts LTP; "s '<LSI command>'" (deprecated in ION 4.1) declares that
 * seat first. */
static int start_cmd(ltp_admin *a, const tern_rc_cmd *c, char *msg, size_t msglen)
{
    char lsi[256];
    int rc;
    if (c->argc == 1)
        return 0;
    if (c->argc > 3)
        SYNTAX("'s' takes at most one LSI command; expected 's' or \"s '<LSI "
               "command>'\"");
    if (lsi_of(c, 1, c->argc, lsi, sizeof lsi))
        SYNTAX("LSI command too long (at most %zu bytes)", sizeof lsi - 1);
    if ((rc = lsi_check(c, "LSI command", lsi, NULL, msg, msglen)))
        return rc;
    ltp_admin_seat *s = find_seat(a, lsi);
    if (s) {
        say(c, msg, msglen, "seat '%s' is declared already (%s:%u); 's' only starts it",
            lsi, s->file, s->line);
        return LTP_ADMIN_IGNORED;
    }
    return seat_add(a, c, lsi);
}

/* What an unknown command is compared with for a suggestion. */
static const char *const ltp_commands[] = {"1",
                                           "a span",
                                           "c span",
                                           "d span",
                                           "i span",
                                           "l span",
                                           "a seat",
                                           "c seat",
                                           "d seat",
                                           "i seat",
                                           "l seat",
                                           "s",
                                           "x",
                                           "m span",
                                           "m maxretries",
                                           "m maxrepairrounds",
                                           "m maxseglossrate",
                                           "m ownqtime",
                                           "m maxblocksize",
                                           "m maximportbytes",
                                           NULL};

static int m_cmd(ltp_admin *a, const tern_rc_cmd *c, char *msg, size_t msglen)
{
    uint64_t v;
    double d;
    const char *what = c->argc > 1 ? c->argv[1] : "";
    if (strcmp(what, "maxrepairrounds") == 0) {
        if (c->argc != 3 || parse_u64(c->argv[2], 256, &v) || v == 0)
            SYNTAX("expected 'm maxrepairrounds <1..256>'");
        a->engine.max_rounds = (unsigned)v;
        a->set |= LTP_SET_ROUNDS;
        return 0;
    }
    if (strcmp(what, "maxblocksize") == 0 || strcmp(what, "maximportbytes") == 0) {
        if (c->argc != 3 || parse_bytes(c->argv[2], &v))
            SYNTAX("expected 'm %s <bytes>' (a positive number, K, M or G allowed)",
                   what);
        if (what[3] == 'b')
            a->engine.max_block = v;
        else
            a->engine.max_import_bytes = v;
        a->set |= what[3] == 'b' ? LTP_SET_MAXBLOCK : LTP_SET_IMPORTBYTES;
        return 0;
    }
    if (strcmp(what, "span") == 0) {
        uint64_t peer;
        const char *key = c->argc == 5 ? c->argv[3] : "";
        int bits = strcmp(key, "sessionbits") == 0;
        int bytes =
            strcmp(key, "maxblocksize") == 0 || strcmp(key, "maximportbytes") == 0;
        int rounds = strcmp(key, "maxrepairrounds") == 0;
        if (c->argc != 5 || (!bits && !bytes && !rounds))
            SYNTAX(
                "expected 'm span <engine> maxrepairrounds <1..256>', 'm span <engine> "
                "sessionbits <32|64>', 'm span <engine> maxblocksize <bytes>' or 'm span "
                "<engine> maximportbytes <bytes>'");
        if (parse_u64(c->argv[2], UINT64_MAX, &peer) ||
            (bytes ? parse_bytes(c->argv[4], &v)
                   : (parse_u64(c->argv[4], 256, &v) || v == 0 ||
                      (bits && v != 32 && v != 64))))
            SYNTAX("expected 'm span <engine> %s %s'", key,
                   bits     ? "<32|64>"
                   : rounds ? "<1..256>"
                            : "<bytes>");
        ltp_admin_span *sp = find(a, peer);
        if (!sp)
            SYNTAX("no span for engine %" PRIu64 "; expected 'a span' before 'm span'",
                   peer);
        if (bits) {
            sp->cfg.session_bits = (unsigned)v;
        } else if (strcmp(key, "maxblocksize") == 0) {
            sp->cfg.max_block = v;
            sp->set |= LTP_SET_MAXBLOCK;
        } else if (bytes) {
            sp->cfg.max_import_bytes = v;
            sp->set |= LTP_SET_IMPORTBYTES;
        } else {
            sp->cfg.max_rounds = (unsigned)v;
            sp->set |= LTP_SET_ROUNDS;
        }
        return 0;
    }
    if (strcmp(what, "maxretries") == 0) {
        if (c->argc != 3 || parse_u64(c->argv[2], 1000, &v) || v == 0)
            SYNTAX("expected 'm maxretries <1..1000>'");
        a->engine.max_retries = (unsigned)v;
        a->set |= LTP_SET_RETRIES;
        return 0;
    }
    if (strcmp(what, "maxseglossrate") == 0) {
        if (c->argc != 3 || parse_double(c->argv[2], 0.0, 1.0, &d))
            SYNTAX("expected 'm maxseglossrate <rate from 0 to 1>'");
        a->seg_loss_rate = d;
        a->set |= LTP_SET_LOSSRATE;
        for (size_t i = 0; i < a->nspans; i++)
            a->spans[i].cfg.seg_loss_rate = d;
        return 0;
    }
    if (strcmp(what, "ownqtime") == 0) {
        double q;
        if (c->argc != 3 || parse_double(c->argv[2], 0.0, 86400.0, &q))
            SYNTAX("expected 'm ownqtime <seconds>'");
        a->engine.own_qtime_ms = (unsigned)(q * 1000 + 0.5);
        a->set |= LTP_SET_OWNQTIME;
        return 0;
    }
    if (strcmp(what, "screening") == 0 || strcmp(what, "maxber") == 0 ||
        strcmp(what, "heapmax") == 0 || strcmp(what, "maxbacklog") == 0) {
        say(c, msg, msglen, "'m %s' is accepted but has no effect in Tern", what);
        return LTP_ADMIN_IGNORED;
    }
    char head[160], dym[200];
    SYNTAX("unknown ltpadmin command '%s'%s; expected m maxrepairrounds, m span, m "
           "maxretries, m maxseglossrate, m ownqtime, m maxblocksize or m maximportbytes",
           tern_cmd_head(c, 2, head, sizeof head),
           tern_did_you_mean(tern_suggest_cmd(c, ltp_commands), dym, sizeof dym));
}

TERN_API int ltp_admin_apply(ltp_admin *a, const tern_rc_cmd *c, char *msg, size_t msglen)
{
    const char *op = c->argv[0];
    uint64_t v;
    if (msg && msglen)
        msg[0] = '\0';
    if (strcmp(op, "1") == 0) {
        if (c->argc < 2 || c->argc > 3 || parse_u64(c->argv[1], 10000000, &v))
            SYNTAX("expected '1 <est_max_export_sessions>'");
        a->initialized = 1;
        a->est_max_export = (unsigned)v;
        if (c->argc == 3) {
            say(c, msg, msglen, "the second argument of '1' (%s) has no effect in Tern",
                c->argv[2]);
            return LTP_ADMIN_IGNORED;
        }
        return 0;
    }
    if (!a->initialized && strcmp(op, "#") != 0)
        SYNTAX("'%s' before '1'; expected '1 <est_max_export_sessions>' first", op);
    if ((strcmp(op, "a") == 0 || strcmp(op, "c") == 0) && c->argc > 1 &&
        strcmp(c->argv[1], "span") == 0)
        return span_cmd(a, c, op[0] == 'c', msg, msglen);
    if (strcmp(op, "d") == 0 && c->argc == 3 && strcmp(c->argv[1], "span") == 0) {
        if (parse_u64(c->argv[2], UINT64_MAX, &v))
            SYNTAX("expected 'd span <peer engine>'");
        ltp_admin_span *sp = find(a, v);
        if (!sp)
            SYNTAX("no span for engine %" PRIu64 " to delete", v);
        *sp = a->spans[--a->nspans];
        return 0;
    }
    if ((strcmp(op, "a") == 0 || strcmp(op, "c") == 0 || strcmp(op, "d") == 0 ||
         strcmp(op, "i") == 0 || strcmp(op, "l") == 0) &&
        c->argc > 1 && strcmp(c->argv[1], "seat") == 0)
        return seat_cmd(a, c, msg, msglen);
    if (strcmp(op, "s") == 0)
        return start_cmd(a, c, msg, msglen);
    if (strcmp(op, "m") == 0)
        return m_cmd(a, c, msg, msglen);
    if ((strcmp(op, "l") == 0 || strcmp(op, "i") == 0) && c->argc >= 2 &&
        strcmp(c->argv[1], "span") == 0) {
        uint64_t peer = 0;
        if (c->argc == 3 && parse_u64(c->argv[2], UINT64_MAX, &peer))
            SYNTAX("expected '%s span [<peer engine>]'", op);
        if (peer && !find(a, peer))
            SYNTAX("no span for engine %" PRIu64, peer);
        ltp_admin_list_spans(a, peer, msg, msglen);
        return 0;
    }
    if (strcmp(op, "x") == 0 || strcmp(op, "w") == 0 || strcmp(op, "e") == 0 ||
        strcmp(op, "h") == 0 || strcmp(op, "v") == 0 || strcmp(op, "?") == 0) {
        say(c, msg, msglen, "ltpadmin '%s' is accepted but has no effect here", op);
        return LTP_ADMIN_IGNORED;
    }
    char head[160], dym[200];
    SYNTAX("unknown ltpadmin command '%s'%s; expected 1, a span, c span, d span, i span, "
           "l span, a seat, c seat, d seat, i seat, l seat, s or m",
           tern_cmd_head(c, 2, head, sizeof head),
           tern_did_you_mean(tern_suggest_cmd(c, ltp_commands), dym, sizeof dym));
}

TERN_API int ltp_admin_list_spans(const ltp_admin *a, uint64_t peer, char *out,
                                  size_t cap)
{
    size_t n = 0;
    if (cap)
        out[0] = '\0';
    for (size_t i = 0; i < a->nspans; i++) {
        const ltp_span_cfg *s = &a->spans[i].cfg;
        if (peer && s->peer != peer)
            continue;
        unsigned rounds = s->max_rounds ? s->max_rounds : a->engine.max_rounds;
        unsigned retries = s->max_retries ? s->max_retries : a->engine.max_retries;
        uint64_t rto = 2ull * s->owlt_ms + a->engine.own_qtime_ms + s->qtime_ms;
        /* Report segments a round may use for a 64 KiB block at this loss rate. */
        size_t per = s->max_seg > 100 ? (s->max_seg - 60) / 20 : 1;
        double segs = 65536.0 / (double)s->max_seg + 1;
        size_t rs = s->seg_loss_rate > 0
                        ? (size_t)(2.0 * s->seg_loss_rate * segs / (double)per) + 1
                        : 0;
        uint64_t budget = ltp_admin_budget_ms(&a->engine, s);
        int k = snprintf(
            out + (n < cap ? n : cap), n < cap ? cap - n : 0,
            "span %" PRIu64 ": max export %u, max import %u, segment %zu B, aggregation "
            "%zu B or %u ms, LSO '%s', %u-bit session numbers\n"
            "  one-way light time %u ms, queuing latency own %u ms + peer %u ms, "
            "retransmission timeout %" PRIu64 " ms\n"
            "  max retries %u, max repair rounds %u%s, segment loss rate %g (%zu report "
            "segment%s per round for a 64 KiB block)\n"
            "  worst case to deliver or abandon a 64 KiB block: %" PRIu64 ".%03" PRIu64
            " s (%u rounds x %u tries x %" PRIu64
            " ms; time the link is down not counted)\n",
            s->peer, s->max_export, s->max_import, s->max_seg, s->agg_size, s->agg_ms,
            a->spans[i].lso, s->session_bits == 64 ? 64u : 32u, s->owlt_ms,
            a->engine.own_qtime_ms, s->qtime_ms, rto, retries, rounds,
            s->max_rounds ? " (this span)" : "", s->seg_loss_rate, rs, rs == 1 ? "" : "s",
            budget / 1000, budget % 1000, rounds, retries + 1, rto);
        if (k > 0)
            n += (size_t)k;
    }
    return (int)n;
}

/* Where a value came from: the span's own setting, the engine-wide one, or
 * the default. */
static const char *origin(const ltp_admin *a, const ltp_admin_span *sp, unsigned bit,
                          const char *span_cmd, const char *engine_cmd)
{
    if (sp && (sp->set & bit) && span_cmd)
        return span_cmd;
    if ((a->set & bit) && engine_cmd)
        return engine_cmd;
    return "default";
}

TERN_API int ltp_admin_list_spans_live(const ltp_admin *a, const ltp_engine *e,
                                       uint64_t peer, char *out, size_t cap)
{
    size_t n = 0;
    if (cap)
        out[0] = '\0';
    for (size_t i = 0; i < a->nspans; i++) {
        const ltp_admin_span *as = &a->spans[i];
        ltp_span_info in;
        if ((peer && as->cfg.peer != peer) || ltp_span_info_get(e, as->cfg.peer, &in))
            continue;
        const ltp_span_cfg *s = &in.cfg;
        size_t per = s->max_seg > 100 ? (s->max_seg - 60) / 20 : 1;
        double segs = 65536.0 / (double)s->max_seg + 1;
        size_t rs = s->seg_loss_rate > 0
                        ? (size_t)(2.0 * s->seg_loss_rate * segs / (double)per) + 1
                        : 0;
        int k = snprintf(
            out + (n < cap ? n : cap), n < cap ? cap - n : 0,
            "span %" PRIu64 ": max export %u, max import %u, segment %zu B, aggregation "
            "%zu B or %u ms, LSO '%s', %u-bit session numbers, link %s\n"
            "  one-way light time %u ms (%s), queuing latency own %u ms (%s) + peer %u "
            "ms "
            "(%s): retransmission timeout %" PRIu64 " ms\n"
            "  max retries %u (%s), max repair rounds %u (%s), segment loss rate %g (%s; "
            "%zu report segment%s per round for a 64 KiB block)\n"
            "  largest block %" PRIu64 " B (%s), imports may hold %" PRIu64
            " B (%s), hold %" PRIu64 " B now\n"
            "  now: %u export session%s (%u waiting for room at the peer), %u import "
            "session%s (%u waiting for room here), %" PRIu64 " block%s queued\n"
            "  worst case to deliver or abandon a 64 KiB block: %" PRIu64 ".%03" PRIu64
            " s (%u rounds x %u tries x %" PRIu64 " ms; time the link is down not "
            "counted)\n",
            s->peer, s->max_export, s->max_import, s->max_seg, s->agg_size, s->agg_ms,
            as->lso, s->session_bits == 64 ? 64u : 32u, in.up ? "up" : "down", s->owlt_ms,
            in.owlt_from_range ? "contact plan range"
                               : "default: no range in the contact plan",
            in.own_qtime_ms, origin(a, NULL, LTP_SET_OWNQTIME, NULL, "m ownqtime"),
            s->qtime_ms, origin(a, as, LTP_SET_QTIME, "a span", NULL), in.rto_ms,
            in.max_retries, origin(a, NULL, LTP_SET_RETRIES, NULL, "m maxretries"),
            in.max_rounds,
            origin(a, as, LTP_SET_ROUNDS, "m span maxrepairrounds", "m maxrepairrounds"),
            s->seg_loss_rate, origin(a, NULL, LTP_SET_LOSSRATE, NULL, "m maxseglossrate"),
            rs, rs == 1 ? "" : "s", in.max_block,
            origin(a, as, LTP_SET_MAXBLOCK, "m span maxblocksize", "m maxblocksize"),
            in.max_import_bytes,
            origin(a, as, LTP_SET_IMPORTBYTES, "m span maximportbytes",
                   "m maximportbytes"),
            in.import_bytes, in.exports, in.exports == 1 ? "" : "s", in.exports_waiting,
            in.imports, in.imports == 1 ? "" : "s", in.imports_waiting, in.queued,
            in.queued == 1 ? "" : "s", in.budget_ms / 1000, in.budget_ms % 1000,
            in.max_rounds, in.max_retries + 1, in.rto_ms);
        if (k > 0)
            n += (size_t)k;
    }
    return (int)n;
}

TERN_API int ltp_admin_list_seats(const ltp_admin *a, const char *lsi, char *out,
                                  size_t cap)
{
    size_t n = 0;
    if (cap)
        out[0] = '\0';
    for (size_t i = 0; i < a->nseats; i++) {
        const ltp_admin_seat *s = &a->seats[i];
        if (lsi && strcmp(s->lsi, lsi) != 0)
            continue;
        int k = snprintf(out + (n < cap ? n : cap), n < cap ? cap - n : 0,
                         "seat '%s' (%s:%u)\n", s->lsi, s->file, s->line);
        if (k > 0)
            n += (size_t)k;
    }
    if (n == 0) {
        int k = snprintf(out, cap, "no seat\n");
        if (k > 0)
            n = (size_t)k;
    }
    return (int)n;
}
