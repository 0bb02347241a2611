/* Options: the command line and the config file share one table, so a file
 * line "a2b-ber 1e-5" means exactly what "--a2b-ber 1e-5" means. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "linkem.h"

#define MODE_UDP    (1u << LK_MODE_UDP)
#define MODE_TCP    (1u << LK_MODE_TCP)
#define MODE_PACKET (1u << LK_MODE_PACKET)
#define MODE_ALL    (MODE_UDP | MODE_TCP | MODE_PACKET)

/* Config files are small; a bound keeps a mistaken path (a log, a device)
 * from being read whole. */
#define CONFIG_MAX_BYTES (1u << 20)
#define LINE_MAX_BYTES   4096
#define MAX_OUTAGES      100000

enum opt_id {
    O_DELAY,
    O_JITTER,
    O_RATE,
    O_QUEUE,
    O_LOSS,
    O_BER,
    O_DUP,
    O_REORDER,
    O_REORDER_GAP,
    O_OUTAGE,
    O_PERIODIC,
    O_SEED,
    O_CONFIG,
    O_PORTS_FILE,
    O_STATS,
    O_STATS_INTERVAL,
    O_LOG_LEVEL,
    O_HELP,
    O_A2B,
    O_B2A,
    O_LISTEN,
    O_TARGET,
    O_RESET_ON_OUTAGE,
    O_NETNS_A,
    O_NETNS_B,
    O_ADDR_A,
    O_ADDR_B,
    O_MTU,
    O_REPLACE,
    O_BER_DROP,
};

struct optdef {
    const char *name;
    int id;
    unsigned modes;
    int value;  /* takes a value */
    int impair; /* per direction: may take an a2b-/b2a- prefix */
};

static const struct optdef opts[] = {
    {"delay", O_DELAY, MODE_ALL, 1, 1},
    {"jitter", O_JITTER, MODE_ALL, 1, 1},
    {"rate", O_RATE, MODE_ALL, 1, 1},
    {"queue", O_QUEUE, MODE_ALL, 1, 1},
    {"loss", O_LOSS, MODE_ALL, 1, 1},
    {"ber", O_BER, MODE_ALL, 1, 1},
    {"dup", O_DUP, MODE_ALL, 1, 1},
    {"reorder", O_REORDER, MODE_ALL, 1, 1},
    {"reorder-gap", O_REORDER_GAP, MODE_ALL, 1, 1},
    {"outage", O_OUTAGE, MODE_ALL, 1, 1},
    {"periodic", O_PERIODIC, MODE_ALL, 1, 1},
    {"seed", O_SEED, MODE_ALL, 1, 0},
    {"config", O_CONFIG, MODE_ALL, 1, 0},
    {"ports-file", O_PORTS_FILE, MODE_ALL, 1, 0},
    {"stats", O_STATS, MODE_ALL, 1, 0},
    {"stats-interval", O_STATS_INTERVAL, MODE_ALL, 1, 0},
    {"log-level", O_LOG_LEVEL, MODE_ALL, 1, 0},
    {"help", O_HELP, MODE_ALL, 0, 0},
    {"a2b", O_A2B, MODE_UDP, 1, 0},
    {"b2a", O_B2A, MODE_UDP, 1, 0},
    {"listen", O_LISTEN, MODE_TCP, 1, 0},
    {"target", O_TARGET, MODE_TCP, 1, 0},
    {"reset-on-outage", O_RESET_ON_OUTAGE, MODE_TCP, 0, 0},
    {"netns-a", O_NETNS_A, MODE_PACKET, 1, 0},
    {"netns-b", O_NETNS_B, MODE_PACKET, 1, 0},
    {"addr-a", O_ADDR_A, MODE_PACKET, 1, 0},
    {"addr-b", O_ADDR_B, MODE_PACKET, 1, 0},
    {"mtu", O_MTU, MODE_PACKET, 1, 0},
    {"replace", O_REPLACE, MODE_PACKET, 0, 0},
    {"ber-drop", O_BER_DROP, MODE_PACKET, 0, 0},
};

static const char *const mode_names[] = {"udp", "tcp", "packet"};

static void seterr(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

TERN_API int lk_mode_parse(const char *s)
{
    for (int i = 0; i < 3; i++)
        if (s && strcmp(s, mode_names[i]) == 0)
            return i;
    return -1;
}

TERN_API const char *lk_mode_name(int mode)
{
    return mode >= 0 && mode < 3 ? mode_names[mode] : "?";
}

TERN_API const char *lk_dir_name(int dir)
{
    return dir == LK_B2A ? "b2a" : "a2b";
}

static void impair_init(lk_impair *d)
{
    memset(d, 0, sizeof *d);
    d->queue_bytes = LK_QUEUE_DEFAULT;
    d->reorder_gap_ms = -1;
}

TERN_API void lk_config_init(lk_config *cfg, int mode)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->mode = mode;
    cfg->seed = 1;
    impair_init(&cfg->dir[0]);
    impair_init(&cfg->dir[1]);
    cfg->mtu = 1500;
    cfg->stats_interval_ms = LK_STATS_INTERVAL_DEFAULT;
    cfg->log_level = TERN_LOG_WARN;
}

TERN_API void lk_config_free(lk_config *cfg)
{
    for (int d = 0; d < 2; d++) {
        free(cfg->dir[d].outage.down);
        free(cfg->udp_listen[d]);
        free(cfg->udp_target[d]);
        free(cfg->netns[d]);
        free(cfg->addr[d]);
    }
    free(cfg->tcp_listen);
    free(cfg->tcp_target);
    free(cfg->ports_file);
    free(cfg->stats_file);
    memset(cfg, 0, sizeof *cfg);
}

/* Finds name's definition; *dirs gets the directions it applies to. */
static const struct optdef *find_opt(const char *name, unsigned *dirs)
{
    unsigned ds = 3;
    const char *base = name;
    if (strncmp(name, "a2b-", 4) == 0) {
        ds = 1;
        base = name + 4;
    } else if (strncmp(name, "b2a-", 4) == 0) {
        ds = 2;
        base = name + 4;
    }
    for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++)
        if (strcmp(opts[i].name, base) == 0) {
            if (ds != 3 && !opts[i].impair)
                return NULL;
            if (dirs)
                *dirs = ds;
            return &opts[i];
        }
    return NULL;
}

TERN_API int lk_option_takes_value(const char *name)
{
    const struct optdef *o = find_opt(name, NULL);
    return o ? o->value : TERN_ENOTFOUND;
}

/* ------------------------------------------------------------ values */

static int parse_double(const char *s, double *out)
{
    if (!s || !*s || isspace((unsigned char)*s))
        return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno == ERANGE || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

static int parse_u64(const char *s, uint64_t *out)
{
    if (!s || !isdigit((unsigned char)*s))
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end || errno == ERANGE)
        return -1;
    *out = v;
    return 0;
}

/* Milliseconds: a float, 0 to about 115 days. */
static int parse_ms(const char *s, double *out)
{
    double v;
    if (parse_double(s, &v) || v < 0 || v > 1e10)
        return -1;
    *out = v;
    return 0;
}

static int parse_prob(const char *s, double *out)
{
    double v;
    if (parse_double(s, &v) || v < 0 || v > 1)
        return -1;
    *out = v;
    return 0;
}

/* Bits per second: a number with an optional k, M or G (powers of 1000). */
static int parse_rate(const char *s, uint64_t *out)
{
    if (!s || !*s)
        return -1;
    char buf[64];
    size_t n = strlen(s);
    if (n >= sizeof buf)
        return -1;
    memcpy(buf, s, n + 1);
    double mul = 1;
    switch (buf[n - 1]) {
    case 'k':
    case 'K':
        mul = 1e3;
        break;
    case 'm':
    case 'M':
        mul = 1e6;
        break;
    case 'g':
    case 'G':
        mul = 1e9;
        break;
    }
    if (mul != 1)
        buf[n - 1] = 0;
    double v;
    if (parse_double(buf, &v) || v < 0 || v * mul > 1e15)
        return -1;
    v *= mul;
    if (v > 0 && v < 1)
        return -1;
    *out = (uint64_t)llround(v);
    return 0;
}

/* Seconds to ns; seconds are 0 .. 1e9 (about 31 years). */
static int secs_ns(double s, uint64_t *ns)
{
    if (!(s >= 0) || s > 1e9)
        return -1;
    *ns = (uint64_t)llround(s * 1e9);
    return 0;
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = 0;
    return s;
}

/* "START-END[,START-END...]" in seconds; appended to every direction in ds. */
static int set_outages(lk_config *cfg, unsigned ds, const char *name, const char *value,
                       char *err, size_t errlen)
{
    char *copy = strdup(value);
    if (!copy)
        return -ENOMEM;
    int rc = 0;
    if (strcasecmp(trim(copy), "none") == 0) {
        for (int d = 0; d < 2; d++)
            if (ds & (1u << d)) {
                free(cfg->dir[d].outage.down);
                cfg->dir[d].outage.down = NULL;
                cfg->dir[d].outage.n_down = 0;
            }
        free(copy);
        return 0;
    }
    char *save = NULL;
    int any = 0;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *t = trim(tok);
        char *end;
        double a, b;
        lk_interval iv;
        if (!*t || !(isdigit((unsigned char)*t) || *t == '.'))
            goto bad;
        errno = 0;
        a = strtod(t, &end);
        if (end == t || *end != '-' || errno)
            goto bad;
        char *t2 = end + 1;
        if (!(isdigit((unsigned char)*t2) || *t2 == '.'))
            goto bad;
        b = strtod(t2, &end);
        if (end == t2 || *end || errno)
            goto bad;
        if (secs_ns(a, &iv.start_ns) || secs_ns(b, &iv.end_ns))
            goto bad;
        if (iv.end_ns <= iv.start_ns) {
            seterr(err, errlen, "%s: '%s': an outage must end after it starts", name, t);
            rc = TERN_ESYNTAX;
            goto out;
        }
        for (int d = 0; d < 2; d++) {
            if (!(ds & (1u << d)))
                continue;
            lk_schedule *s = &cfg->dir[d].outage;
            if (s->n_down >= MAX_OUTAGES) {
                seterr(err, errlen, "%s: more than %d outages", name, MAX_OUTAGES);
                rc = TERN_ESYNTAX;
                goto out;
            }
            lk_interval *nd = realloc(s->down, (s->n_down + 1) * sizeof *nd);
            if (!nd) {
                rc = -ENOMEM;
                goto out;
            }
            s->down = nd;
            s->down[s->n_down++] = iv;
        }
        any = 1;
        continue;
    bad:
        seterr(err, errlen,
               "%s: '%s' is not an outage (START-END in seconds since linkem started, "
               "e.g. 10-30, or a comma-separated list, or none)",
               name, t);
        rc = TERN_ESYNTAX;
        goto out;
    }
    if (!any) {
        seterr(err, errlen, "%s: '%s' lists no outage (START-END in seconds)", name,
               value);
        rc = TERN_ESYNTAX;
    }
out:
    free(copy);
    return rc;
}

/* "UP/DOWN[@OFFSET]" in seconds, or "none". */
static int set_periodic(lk_config *cfg, unsigned ds, const char *name, const char *value,
                        char *err, size_t errlen)
{
    uint64_t up = 0, down = 0, off = 0;
    if (strcasecmp(value, "none") != 0) {
        char buf[128];
        if (strlen(value) >= sizeof buf)
            goto bad;
        strcpy(buf, value);
        char *slash = strchr(buf, '/');
        if (!slash)
            goto bad;
        *slash = 0;
        char *at = strchr(slash + 1, '@');
        if (at)
            *at = 0;
        double u, d, o = 0;
        if (parse_double(buf, &u) || parse_double(slash + 1, &d) ||
            (at && parse_double(at + 1, &o)))
            goto bad;
        if (secs_ns(u, &up) || secs_ns(d, &down) || secs_ns(o, &off) || up == 0 ||
            down == 0) {
            seterr(err, errlen,
                   "%s: '%s': UP and DOWN must be more than 0 s and OFFSET at least 0 "
                   "(at most 1e9 s each)",
                   name, value);
            return TERN_ESYNTAX;
        }
    }
    for (int d = 0; d < 2; d++)
        if (ds & (1u << d)) {
            cfg->dir[d].outage.up_ns = up;
            cfg->dir[d].outage.down_ns = down;
            cfg->dir[d].outage.offset_ns = off;
        }
    return 0;
bad:
    seterr(err, errlen,
           "%s: '%s' is not a periodic schedule (UP/DOWN[@OFFSET] in seconds, e.g. "
           "50/10 or 50/10@5, or none)",
           name, value);
    return TERN_ESYNTAX;
}

/* host:port or [v6]:port; port 0..65535. */
static int check_hostport(const char *s)
{
    const char *colon;
    if (!s || !*s)
        return -1;
    if (*s == '[') {
        const char *rb = strchr(s, ']');
        if (!rb || rb == s + 1 || rb[1] != ':')
            return -1;
        colon = rb + 1;
    } else {
        colon = strrchr(s, ':');
        if (!colon || colon == s)
            return -1;
        if (memchr(s, ':', (size_t)(colon - s)))
            return -1; /* a bare IPv6 address needs brackets */
    }
    uint64_t port;
    if (parse_u64(colon + 1, &port) || port > 65535)
        return -1;
    for (const char *p = s; p < colon; p++)
        if (isspace((unsigned char)*p) || *p == '=')
            return -1;
    return 0;
}

static int set_str(char **slot, const char *v)
{
    char *c = strdup(v);
    if (!c)
        return -ENOMEM;
    free(*slot);
    *slot = c;
    return 0;
}

static int check_netns_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 200 || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
        return -1;
    for (const char *p = s; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_' && *p != '.')
            return -1;
    return 0;
}

static int check_cidr(const char *s)
{
    char buf[64];
    if (strlen(s) >= sizeof buf)
        return -1;
    strcpy(buf, s);
    char *slash = strchr(buf, '/');
    if (slash) {
        *slash = 0;
        uint64_t len;
        if (parse_u64(slash + 1, &len) || len < 1 || len > 30)
            return -1;
    }
    struct in_addr a;
    return inet_pton(AF_INET, buf, &a) == 1 ? 0 : -1;
}

static int parse_flag(const char *v, int *out)
{
    if (!v || !strcasecmp(v, "1") || !strcasecmp(v, "yes") || !strcasecmp(v, "true") ||
        !strcasecmp(v, "on")) {
        *out = 1;
        return 0;
    }
    if (!strcasecmp(v, "0") || !strcasecmp(v, "no") || !strcasecmp(v, "false") ||
        !strcasecmp(v, "off")) {
        *out = 0;
        return 0;
    }
    return -1;
}

TERN_API int lk_config_set(lk_config *cfg, const char *name, const char *value, char *err,
                           size_t errlen)
{
    unsigned ds = 3;
    const struct optdef *o = find_opt(name, &ds);
    if (!o) {
        seterr(err, errlen, "unknown option %s (see linkem %s --help)", name,
               lk_mode_name(cfg->mode));
        return TERN_ESYNTAX;
    }
    if (!(o->modes & (1u << cfg->mode))) {
        const char *m = o->modes == MODE_UDP   ? "udp"
                        : o->modes == MODE_TCP ? "tcp"
                                               : "packet";
        seterr(err, errlen, "%s is an option of %s mode, not of %s mode", name, m,
               lk_mode_name(cfg->mode));
        return TERN_ESYNTAX;
    }
    if (o->value && !value) {
        seterr(err, errlen, "%s needs a value", name);
        return TERN_ESYNTAX;
    }
    const char *v = value;
    double dv = 0;
    uint64_t uv = 0;
    switch (o->id) {
    case O_DELAY:
    case O_JITTER:
    case O_REORDER_GAP:
        if (parse_ms(v, &dv))
            goto bad_ms;
        for (int d = 0; d < 2; d++)
            if (ds & (1u << d)) {
                if (o->id == O_DELAY)
                    cfg->dir[d].delay_ms = dv;
                else if (o->id == O_JITTER)
                    cfg->dir[d].jitter_ms = dv;
                else
                    cfg->dir[d].reorder_gap_ms = dv;
            }
        return 0;
    case O_RATE:
        if (parse_rate(v, &uv)) {
            seterr(err, errlen,
                   "%s: '%s' is not a rate (bits per second, 0 for unlimited; k, M, G "
                   "suffixes allowed; at least 1 and at most 1e15)",
                   name, v);
            return TERN_ESYNTAX;
        }
        for (int d = 0; d < 2; d++)
            if (ds & (1u << d))
                cfg->dir[d].rate_bps = uv;
        return 0;
    case O_QUEUE:
        if (parse_u64(v, &uv) || uv > (UINT64_C(1) << 40)) {
            seterr(err, errlen, "%s: '%s' is not a queue size in bytes (0 to 2^40)", name,
                   v);
            return TERN_ESYNTAX;
        }
        for (int d = 0; d < 2; d++)
            if (ds & (1u << d))
                cfg->dir[d].queue_bytes = uv;
        return 0;
    case O_LOSS:
    case O_BER:
    case O_DUP:
    case O_REORDER:
        if (parse_prob(v, &dv)) {
            seterr(err, errlen, "%s: '%s' is not a probability (a number from 0 to 1)",
                   name, v);
            return TERN_ESYNTAX;
        }
        if (cfg->mode == LK_MODE_TCP && dv > 0) {
            seterr(err, errlen,
                   "%s: tcp mode carries a byte stream: use packet mode for loss and bit "
                   "errors",
                   name);
            return TERN_ESYNTAX;
        }
        for (int d = 0; d < 2; d++)
            if (ds & (1u << d)) {
                double *slot = o->id == O_LOSS  ? &cfg->dir[d].loss
                               : o->id == O_BER ? &cfg->dir[d].ber
                               : o->id == O_DUP ? &cfg->dir[d].dup
                                                : &cfg->dir[d].reorder;
                *slot = dv;
            }
        return 0;
    case O_OUTAGE:
        return set_outages(cfg, ds, name, v, err, errlen);
    case O_PERIODIC:
        return set_periodic(cfg, ds, name, v, err, errlen);
    case O_SEED:
        if (parse_u64(v, &uv)) {
            seterr(err, errlen, "%s: '%s' is not a seed (an unsigned 64-bit integer)",
                   name, v);
            return TERN_ESYNTAX;
        }
        cfg->seed = uv;
        return 0;
    case O_CONFIG:
        return lk_config_load(cfg, v, err, errlen);
    case O_PORTS_FILE:
    case O_STATS:
        if (!*v) {
            seterr(err, errlen, "%s: the file name is empty", name);
            return TERN_ESYNTAX;
        }
        return set_str(o->id == O_STATS ? &cfg->stats_file : &cfg->ports_file, v);
    case O_STATS_INTERVAL:
        if (parse_u64(v, &uv) || uv < 10 || uv > 3600000) {
            seterr(err, errlen, "%s: '%s' is not an interval in ms (10 to 3600000)", name,
                   v);
            return TERN_ESYNTAX;
        }
        cfg->stats_interval_ms = (unsigned)uv;
        return 0;
    case O_LOG_LEVEL: {
        int l = tern_log_level_parse(v);
        if (l < 0) {
            seterr(err, errlen,
                   "%s: '%s' is not a log level (error, warn, info, debug, trace)", name,
                   v);
            return TERN_ESYNTAX;
        }
        cfg->log_level = l;
        return 0;
    }
    case O_HELP:
        cfg->help = 1;
        return 0;
    case O_A2B:
    case O_B2A: {
        int d = o->id == O_A2B ? LK_A2B : LK_B2A;
        const char *eq = strchr(v, '=');
        char lis[300], tgt[300];
        size_t ln = eq ? (size_t)(eq - v) : 0;
        if (!eq || ln >= sizeof lis || strlen(eq + 1) >= sizeof tgt)
            goto bad_ep;
        memcpy(lis, v, ln);
        lis[ln] = 0;
        strcpy(tgt, eq + 1);
        if (check_hostport(lis) || check_hostport(tgt))
            goto bad_ep;
        if (set_str(&cfg->udp_listen[d], lis) || set_str(&cfg->udp_target[d], tgt))
            return -ENOMEM;
        return 0;
    bad_ep:
        seterr(err, errlen,
               "%s: '%s' is not LISTEN=TARGET (each host:port, e.g. "
               "127.0.0.1:0=127.0.0.1:1113; [::1]:port for IPv6)",
               name, v);
        return TERN_ESYNTAX;
    }
    case O_LISTEN:
    case O_TARGET:
        if (check_hostport(v)) {
            seterr(err, errlen, "%s: '%s' is not host:port (e.g. 127.0.0.1:4556)", name,
                   v);
            return TERN_ESYNTAX;
        }
        return set_str(o->id == O_LISTEN ? &cfg->tcp_listen : &cfg->tcp_target, v);
    case O_RESET_ON_OUTAGE:
    case O_REPLACE:
    case O_BER_DROP: {
        int f;
        if (parse_flag(v, &f)) {
            seterr(err, errlen, "%s: '%s' is not yes or no", name, v);
            return TERN_ESYNTAX;
        }
        if (o->id == O_REPLACE)
            cfg->replace = f;
        else if (o->id == O_BER_DROP)
            cfg->ber_drop = f;
        else
            cfg->reset_on_outage = f;
        return 0;
    }
    case O_NETNS_A:
    case O_NETNS_B:
        if (check_netns_name(v)) {
            seterr(err, errlen,
                   "%s: '%s' is not a namespace name (letters, digits, '-', '_', '.'; at "
                   "most 200)",
                   name, v);
            return TERN_ESYNTAX;
        }
        return set_str(&cfg->netns[o->id == O_NETNS_A ? 0 : 1], v);
    case O_ADDR_A:
    case O_ADDR_B:
        if (check_cidr(v)) {
            seterr(err, errlen,
                   "%s: '%s' is not an IPv4 address with a prefix length (e.g. "
                   "10.200.0.1/24)",
                   name, v);
            return TERN_ESYNTAX;
        }
        return set_str(&cfg->addr[o->id == O_ADDR_A ? 0 : 1], v);
    case O_MTU:
        if (parse_u64(v, &uv) || uv < 576 || uv > 65535) {
            seterr(err, errlen, "%s: '%s' is not an MTU (576 to 65535)", name, v);
            return TERN_ESYNTAX;
        }
        cfg->mtu = (unsigned)uv;
        return 0;
    }
    seterr(err, errlen, "%s: not handled", name);
    return TERN_ESYNTAX;
bad_ms:
    seterr(err, errlen, "%s: '%s' is not a time in milliseconds (a number, 0 to 1e10)",
           name, v);
    return TERN_ESYNTAX;
}

/* ------------------------------------------------------------ files */

TERN_API int lk_config_parse_text(lk_config *cfg, const char *fname, const char *text,
                                  size_t len, char *err, size_t errlen)
{
    char line[LINE_MAX_BYTES + 1], sub[LK_ERR_MAX];
    size_t pos = 0;
    unsigned lineno = 0;
    if (!fname)
        fname = "config";
    while (pos < len) {
        lineno++;
        size_t end = pos;
        while (end < len && text[end] != '\n')
            end++;
        size_t n = end - pos;
        if (n > LINE_MAX_BYTES) {
            seterr(err, errlen, "%s:%u: line longer than %u bytes", fname, lineno,
                   LINE_MAX_BYTES);
            return TERN_ESYNTAX;
        }
        if (memchr(text + pos, 0, n)) {
            seterr(err, errlen, "%s:%u: NUL byte in the line (not a text file?)", fname,
                   lineno);
            return TERN_ESYNTAX;
        }
        memcpy(line, text + pos, n);
        line[n] = 0;
        pos = end + 1;
        /* A '#' that starts a word starts a comment. */
        for (char *p = line; *p; p++)
            if (*p == '#' && (p == line || isspace((unsigned char)p[-1]))) {
                *p = 0;
                break;
            }
        char *s = trim(line);
        if (!*s)
            continue;
        for (char *p = s; *p; p++)
            if ((unsigned char)*p < 0x20 && *p != '\t') {
                seterr(err, errlen, "%s:%u: control character 0x%02x in the line", fname,
                       lineno, (unsigned char)*p);
                return TERN_ESYNTAX;
            }
        char *name = s;
        if (strncmp(name, "--", 2) == 0)
            name += 2;
        char *val = name;
        while (*val && !isspace((unsigned char)*val) && *val != '=')
            val++;
        if (*val) {
            *val++ = 0;
            val = trim(val);
            if (*val == '=') /* "name = value" */
                val = trim(val + 1);
        }
        if (!*name) {
            seterr(err, errlen, "%s:%u: expected an option name", fname, lineno);
            return TERN_ESYNTAX;
        }
        if (strcmp(name, "config") == 0) {
            seterr(err, errlen, "%s:%u: config: a config file cannot include another",
                   fname, lineno);
            return TERN_ESYNTAX;
        }
        int tv = lk_option_takes_value(name);
        if (tv == 1 && !*val) {
            seterr(err, errlen, "%s:%u: %s needs a value", fname, lineno, name);
            return TERN_ESYNTAX;
        }
        int rc = lk_config_set(cfg, name, *val ? val : NULL, sub, sizeof sub);
        if (rc) {
            if (rc == TERN_ESYNTAX)
                seterr(err, errlen, "%s:%u: %s", fname, lineno, sub);
            else
                seterr(err, errlen, "%s:%u: %s", fname, lineno, tern_strerror(rc));
            return rc;
        }
    }
    return 0;
}

TERN_API int lk_config_load(lk_config *cfg, const char *path, char *err, size_t errlen)
{
    int fd;
    do
        fd = open(path, O_RDONLY | O_CLOEXEC);
    while (fd < 0 && errno == EINTR);
    if (fd < 0) {
        int rc = -errno;
        seterr(err, errlen, "config file %s: %s", path, strerror(errno));
        return rc;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        seterr(err, errlen, "config file %s: not a regular file", path);
        return TERN_ESYNTAX;
    }
    if (st.st_size > CONFIG_MAX_BYTES) {
        close(fd);
        seterr(err, errlen, "config file %s: larger than %u bytes", path,
               CONFIG_MAX_BYTES);
        return TERN_ESYNTAX;
    }
    char *buf = malloc((size_t)st.st_size + 1);
    if (!buf) {
        close(fd);
        return -ENOMEM;
    }
    size_t got = 0;
    while (got < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int rc = -errno;
            seterr(err, errlen, "config file %s: %s", path, strerror(errno));
            free(buf);
            close(fd);
            return rc;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    int rc = lk_config_parse_text(cfg, path, buf, got, err, errlen);
    free(buf);
    return rc;
}

TERN_API int lk_config_parse_args(lk_config *cfg, int argc, char *const *argv, char *err,
                                  size_t errlen)
{
    char sub[LK_ERR_MAX], name[128];
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0) {
            cfg->help = 1;
            continue;
        }
        if (strncmp(a, "--", 2) != 0 || !a[2]) {
            seterr(err, errlen, "unexpected argument '%s' (options start with --)", a);
            return TERN_ESYNTAX;
        }
        const char *eq = strchr(a, '=');
        size_t n = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
        if (n >= sizeof name) {
            seterr(err, errlen, "unknown option %.60s...", a);
            return TERN_ESYNTAX;
        }
        memcpy(name, a + 2, n);
        name[n] = 0;
        int tv = lk_option_takes_value(name);
        if (tv == TERN_ENOTFOUND) {
            seterr(err, errlen, "unknown option --%s (see linkem %s --help)", name,
                   lk_mode_name(cfg->mode));
            return TERN_ESYNTAX;
        }
        const char *val = NULL;
        if (eq)
            val = eq + 1;
        else if (tv == 1) {
            if (i + 1 >= argc) {
                seterr(err, errlen, "--%s needs a value", name);
                return TERN_ESYNTAX;
            }
            val = argv[++i];
        }
        int rc = lk_config_set(cfg, name, val, sub, sizeof sub);
        if (rc) {
            /* Option errors name "--option"; a config file's name file:line. */
            if (strcmp(name, "config") == 0)
                seterr(err, errlen, "%s", sub);
            else if (rc == TERN_ESYNTAX)
                seterr(err, errlen, "--%s", sub);
            else
                seterr(err, errlen, "--%s: %s", name, tern_strerror(rc));
            return rc == -ENOMEM ? rc : TERN_ESYNTAX;
        }
    }
    return 0;
}

/* ------------------------------------------------------------ checks */

TERN_API int lk_config_check(const lk_config *cfg, char *err, size_t errlen)
{
    switch (cfg->mode) {
    case LK_MODE_UDP:
        if (!cfg->udp_listen[0] && !cfg->udp_listen[1]) {
            seterr(err, errlen,
                   "udp mode needs --a2b LISTEN=TARGET and/or --b2a LISTEN=TARGET");
            return TERN_ESYNTAX;
        }
        break;
    case LK_MODE_TCP:
        if (!cfg->tcp_listen || !cfg->tcp_target) {
            seterr(err, errlen,
                   "tcp mode needs --listen HOST:PORT and --target HOST:PORT");
            return TERN_ESYNTAX;
        }
        for (int d = 0; d < 2; d++) {
            const lk_impair *m = &cfg->dir[d];
            const char *what = m->loss > 0      ? "loss"
                               : m->ber > 0     ? "ber"
                               : m->dup > 0     ? "dup"
                               : m->reorder > 0 ? "reorder"
                                                : NULL;
            if (what) {
                seterr(err, errlen,
                       "--%s: tcp mode carries a byte stream: use packet mode for loss "
                       "and bit errors",
                       what);
                return TERN_ESYNTAX;
            }
        }
        break;
    case LK_MODE_PACKET:
        if (!cfg->netns[0] || !cfg->netns[1]) {
            seterr(err, errlen, "packet mode needs --netns-a NAME and --netns-b NAME");
            return TERN_ESYNTAX;
        }
        if (strcmp(cfg->netns[0], cfg->netns[1]) == 0) {
            seterr(err, errlen, "--netns-a and --netns-b must differ (both are '%s')",
                   cfg->netns[0]);
            return TERN_ESYNTAX;
        }
        if (cfg->addr[0] && cfg->addr[1]) {
            size_t la = strcspn(cfg->addr[0], "/"), lb = strcspn(cfg->addr[1], "/");
            if (la == lb && memcmp(cfg->addr[0], cfg->addr[1], la) == 0) {
                seterr(err, errlen, "--addr-a and --addr-b must differ");
                return TERN_ESYNTAX;
            }
        }
        break;
    default:
        seterr(err, errlen, "unknown mode %d", cfg->mode);
        return TERN_ESYNTAX;
    }
    for (int d = 0; d < 2; d++) {
        const lk_impair *m = &cfg->dir[d];
        if (m->rate_bps && m->queue_bytes == 0 && cfg->mode == LK_MODE_TCP) {
            seterr(err, errlen, "--%s-queue: tcp mode needs a queue of at least 1 byte",
                   lk_dir_name(d));
            return TERN_ESYNTAX;
        }
    }
    return 0;
}

TERN_API void lk_usage(FILE *f, int mode)
{
    if (mode < 0) {
        fprintf(
            f, "usage: linkem <mode> [options]   (linkem <mode> --help for the mode's "
               "options)\n"
               "  linkem udp    --a2b LISTEN=TARGET [--b2a LISTEN=TARGET] [impairments]\n"
               "  linkem tcp    --listen HOST:PORT --target HOST:PORT [impairments]\n"
               "  linkem packet --netns-a NAME --netns-b NAME [impairments]   (root)\n"
               "Emulates one link with two directions, a2b and b2a: delay, jitter, "
               "rate,\n"
               "loss, bit errors, duplication, reordering and outages. See "
               "docs/linkem.md.\n");
        return;
    }
    fprintf(f, "usage: linkem %s ", lk_mode_name(mode));
    switch (mode) {
    case LK_MODE_UDP:
        fprintf(f,
                "--a2b LISTEN=TARGET --b2a LISTEN=TARGET [options]\n"
                "  --a2b LISTEN=TARGET   datagrams to LISTEN (host:port, port 0: any) go "
                "a2b to\n"
                "                        TARGET, sent from b2a's LISTEN socket\n"
                "  --b2a LISTEN=TARGET   the same the other way (either may be "
                "omitted)\n");
        break;
    case LK_MODE_TCP:
        fprintf(f, "--listen HOST:PORT --target HOST:PORT [options]\n"
                   "  --listen HOST:PORT    accept connections here (port 0: any)\n"
                   "  --target HOST:PORT    connect each one here; client->server is "
                   "a2b\n"
                   "  --reset-on-outage     reset every connection (RST) when an outage "
                   "starts\n"
                   "  (loss, ber, dup and reorder do not apply to a byte stream)\n");
        break;
    case LK_MODE_PACKET:
        fprintf(f, "--netns-a NAME --netns-b NAME [options]   (root)\n"
                   "  --netns-a NAME        create namespace NAME (a2b: packets leaving "
                   "it)\n"
                   "  --netns-b NAME        create namespace NAME\n"
                   "  --addr-a CIDR         lk0's address in A (default 10.200.0.1/24)\n"
                   "  --addr-b CIDR         lk0's address in B (default 10.200.0.2/24)\n"
                   "  --mtu N               lk0's MTU (default 1500)\n"
                   "  --replace             delete namespaces of those names first\n"
                   "  --ber-drop            drop a packet with a flipped bit (as a link "
                   "CRC would)\n"
                   "                        instead of delivering it\n");
        break;
    }
    fprintf(f,
            "Impairments (both directions; prefix a2b- or b2a- for one, e.g. "
            "--a2b-delay 5000):\n"
            "  --delay MS            one-way delay (float)\n"
            "  --jitter MS           uniform extra delay 0..MS (order kept)\n"
            "  --rate BPS            bits per second, 0 = unlimited (k, M, G allowed)\n"
            "  --queue BYTES         bytes waiting for the transmitter (default "
            "1000000)\n");
    if (mode != LK_MODE_TCP)
        fprintf(f, "  --loss P              drop probability\n"
                   "  --ber P               bit error rate (udp: drop, packet: flip and "
                   "deliver)\n"
                   "  --dup P               duplication probability\n"
                   "  --reorder P           probability a packet is held back "
                   "--reorder-gap MS\n"
                   "  --reorder-gap MS      default 2 x delay + 1 ms\n");
    fprintf(f,
            "  --outage START-END    down interval, seconds since start (repeatable, "
            "comma list, none)\n"
            "  --periodic UP/DOWN[@OFFSET]  up UP s, down DOWN s, repeating from "
            "OFFSET\n"
            "Other:\n"
            "  --seed N              PRNG seed (default 1)\n"
            "  --config FILE         options from FILE, one per line without '--'\n"
            "  --ports-file FILE     write the bound ports here once listening\n"
            "  --stats FILE          counters as JSON, rewritten every --stats-interval "
            "MS\n"
            "  --stats-interval MS   default 500; SIGUSR1 rewrites at once\n"
            "  --log-level LEVEL     error, warn, info, debug, trace (stderr)\n");
}
