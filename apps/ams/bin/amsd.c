/* amsd: an AMS configuration server and/or a registrar, ION's command line.
 *
 *   amsd [-H ms] [-D ms] [-C ms] { @ | <MIB> } { . | @ | <cs endpoint> }
 *        [<application> <authority> [<unit>]]
 *
 * The first argument is the MIB ("@": ION's built-in test MIB; "": the
 * default, amsmib.xml else mib.amsrc). The second says where to run the
 * continuum's configuration server: "." not here, "@" at the MIB's first
 * csendpoint, or at the endpoint given. With an application and authority
 * amsd is also the registrar of their venture's unit (the root unit if none
 * is named). -H sets the registrar's heartbeat (default 1000 ms), -D the
 * silence after which a module is declared dead (default 4 heartbeats), -C
 * the census a starting registrar takes (default the dead bound).
 * SIGINT or SIGTERM stop it. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ams_cell.h"
#include "ams_mib.h"
#include "ams_net.h"

static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
    (void)sig;
    stopping = 1;
}

static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "amsd: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static void send_udp(void *ctx, const mams_ep *to, const uint8_t *pdu, size_t len)
{
    int fd = *(int *)ctx;
    struct sockaddr_in sa;
    ams_net_sockaddr(to, &sa);
    ssize_t w;
    do
        w = sendto(fd, pdu, len, 0, (struct sockaddr *)&sa, sizeof sa);
    while (w < 0 && errno == EINTR);
}

static char *ep_text(const mams_ep *e, char *b, size_t cap);

/* Malformed PDUs are counted by the machines; each cause is logged once. */
static void say_once(const char *why, const mams_ep *from)
{
    static const char *said[32];
    static int n;
    char b[32];
    if (!why)
        why = "malformed";
    for (int i = 0; i < n; i++)
        if (said[i] == why)
            return;
    if (n < 32)
        said[n++] = why;
    logf_("dropped a MAMS PDU from %s: %s (said once per cause; counted)",
          ep_text(from, b, sizeof b), why);
}

static char *ep_text(const mams_ep *e, char *b, size_t cap)
{
    snprintf(b, cap, "%u.%u.%u.%u:%u", e->addr >> 24, (e->addr >> 16) & 255,
             (e->addr >> 8) & 255, e->addr & 255, e->port);
    return b;
}

static int usage(void)
{
    fprintf(stderr, "usage: amsd [-H heartbeat_ms] [-D dead_ms] [-C census_ms] "
                    "{ @ | <MIB file> } { . | @ | <cs endpoint> } "
                    "[<application> <authority> [<unit>]]\n");
    return 2;
}

static int number(const char *s, uint32_t *out)
{
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    if (!*s || *end || v == 0 || v > 3600000)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

int main(int argc, char **argv)
{
    ams_timing tm = {0};
    int o;
    while ((o = getopt(argc, argv, "H:D:C:")) != -1) {
        uint32_t *t = o == 'H'   ? &tm.heartbeat_ms
                      : o == 'D' ? &tm.dead_ms
                                 : &tm.census_ms;
        if (o == '?' || number(optarg, t)) {
            if (o != '?')
                fprintf(stderr, "amsd: -%c %s: a number of milliseconds 1..3600000\n", o,
                        optarg);
            return usage();
        }
    }
    argc -= optind;
    argv += optind;
    if (argc < 2 || argc == 3 || argc > 5)
        return usage();
    ams_timing_defaults(&tm);
    const char *mibsrc = argv[0];
    if (!*mibsrc)
        mibsrc = getenv("TERN_AMS_MIB") && *getenv("TERN_AMS_MIB")
                     ? getenv("TERN_AMS_MIB")
                 : access("amsmib.xml", R_OK) == 0 ? "amsmib.xml"
                                                   : "mib.amsrc";
    char err[320], b1[32];
    ams_mib *mib = NULL;
    if (ams_mib_load_file(mibsrc, &mib, err, sizeof err)) {
        fprintf(stderr, "amsd: %s\n", err);
        return 1;
    }
    int nw;
    const char *const *w = ams_mib_warnings(mib, &nw);
    for (int i = 0; i < nw; i++)
        logf_("warning: %s", w[i]);
    int ncs;
    const char *const *cs = ams_mib_cs_endpoints(mib, &ncs);
    mams_ep cse[8];
    size_t n_cse = 0;
    for (int i = 0; i < ncs && n_cse < 8; i++)
        if (ams_net_parse(cs[i], AMS_CS_PORT, &cse[n_cse], err, sizeof err) == 0)
            n_cse++;
        else
            logf_("MIB: %s", err);

    int cs_fd = -1, reg_fd = -1;
    ams_cs *server = NULL;
    ams_reg *reg = NULL;
    int rc = 1;
    uint64_t now = mono_ms();
    if (strcmp(argv[1], ".")) {
        mams_ep at;
        if (!strcmp(argv[1], "@")) {
            if (!n_cse) {
                fprintf(stderr, "amsd: the MIB names no configuration server endpoint\n");
                goto out;
            }
            at = cse[0];
        } else if (ams_net_parse(argv[1], AMS_CS_PORT, &at, err, sizeof err)) {
            fprintf(stderr, "amsd: %s\n", err);
            goto out;
        }
        mams_ep self;
        int e = ams_net_udp(&cs_fd, at.port, &self);
        if (e) {
            fprintf(stderr, "amsd: configuration server: cannot bind UDP port %u: %s\n",
                    at.port, strerror(-e));
            goto out;
        }
        if (ams_cs_new(send_udp, &cs_fd, now, &server))
            goto out;
        logf_("configuration server of continuum %d at %s", ams_mib_continuum_nbr(mib),
              ep_text(&at, b1, sizeof b1));
    }
    if (argc >= 4) {
        const ams_mib_venture *v = ams_mib_venture_find(mib, argv[2], argv[3]);
        if (!v) {
            fprintf(stderr, "amsd: %s: no venture of application %s under authority %s\n",
                    mibsrc, argv[2], argv[3]);
            goto out;
        }
        const char *uname = argc == 5 ? argv[4] : "";
        const ams_mib_unit *u = ams_mib_unit_named(v, uname);
        if (!u) {
            fprintf(stderr, "amsd: %s: venture %d has no unit %s\n", mibsrc, v->nbr,
                    uname);
            goto out;
        }
        if (!n_cse) {
            fprintf(stderr, "amsd: the MIB names no configuration server endpoint\n");
            goto out;
        }
        uint8_t roles[256] = {0};
        for (int i = 0; i < v->n_roles; i++)
            roles[v->roles[i].nbr] = 1;
        mams_ep self;
        int e = ams_net_udp(&reg_fd, 0, &self);
        if (e) {
            fprintf(stderr, "amsd: registrar: %s\n", strerror(-e));
            goto out;
        }
        self.addr = ams_net_host().addr;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ams_reg_cfg cfg = {.venture = (uint16_t)v->nbr,
                           .unit = (uint16_t)u->nbr,
                           .self = self,
                           .cs = cse,
                           .n_cs = n_cse,
                           .timing = tm,
                           .incarnation =
                               (uint32_t)(ts.tv_sec * 1000u + ts.tv_nsec / 1000000u) ^
                               (uint32_t)getpid() << 16,
                           .roles = roles};
        if (ams_reg_new(&cfg, send_udp, &reg_fd, now, &reg))
            goto out;
        logf_("registrar of venture %d (%s/%s) unit %d (%s) at %s: heartbeat %u ms, dead "
              "after %u ms, census %u ms",
              v->nbr, argv[2], argv[3], u->nbr, *uname ? uname : "root",
              ep_text(&self, b1, sizeof b1), tm.heartbeat_ms, tm.dead_ms, tm.census_ms);
    }
    if (!server && !reg) {
        fprintf(stderr, "amsd: nothing to do (no configuration server, no registrar)\n");
        goto out;
    }
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    static uint8_t buf[MAMS_MAX_PDU];
    int census_said = 0;
    while (!stopping && !(reg && ams_reg_stopped(reg))) {
        now = mono_ms();
        uint64_t dl = now + 1000;
        if (server) {
            ams_cs_tick(server, now);
            uint64_t d = ams_cs_deadline(server);
            dl = d < dl ? d : dl;
        }
        if (reg) {
            ams_reg_tick(reg, now);
            uint64_t d = ams_reg_deadline(reg);
            dl = d < dl ? d : dl;
            ams_reg_stats st;
            ams_reg_stats_get(reg, &st);
            if (!st.census && !census_said) {
                census_said = 1;
                logf_("census over: %llu module(s) reconnected; new modules are admitted",
                      (unsigned long long)st.reconnected);
            }
        }
        struct pollfd pf[2] = {{.fd = cs_fd, .events = POLLIN},
                               {.fd = reg_fd, .events = POLLIN}};
        int r = poll(pf, 2, dl > now ? (int)(dl - now) : 0);
        if (r <= 0)
            continue;
        for (int k = 0; k < 2; k++) {
            if (!(pf[k].revents & POLLIN))
                continue;
            for (int j = 0; j < 256; j++) {
                struct sockaddr_in from;
                socklen_t fl = sizeof from;
                ssize_t len = recvfrom(pf[k].fd, buf, sizeof buf, MSG_DONTWAIT,
                                       (struct sockaddr *)&from, &fl);
                if (len < 0)
                    break;
                mams_ep fe = ams_net_ep(&from);
                mams_pdu chk;
                const char *why = NULL;
                if (mams_decode(buf, (size_t)len, &chk, &why))
                    say_once(why, &fe);
                if (k == 0)
                    ams_cs_input(server, mono_ms(), &fe, buf, (size_t)len);
                else
                    ams_reg_input(reg, mono_ms(), &fe, buf, (size_t)len);
            }
        }
    }
    rc = 0;
    if (reg && ams_reg_stopped(reg))
        logf_("stopped by amsstop");
    if (reg) {
        ams_reg_stats st;
        ams_reg_stats_get(reg, &st);
        logf_(
            "registrar stopping: %llu module(s) in its cell, %llu registered, %llu "
            "reconnected, %llu died, %llu stopped, %llu rejected, %llu malformed PDU(s)",
            (unsigned long long)st.modules, (unsigned long long)st.registered,
            (unsigned long long)st.reconnected, (unsigned long long)st.died,
            (unsigned long long)st.stopped, (unsigned long long)st.rejected,
            (unsigned long long)st.malformed);
    }
    if (server) {
        ams_cs_stats st;
        ams_cs_stats_get(server, &st);
        logf_("configuration server stopping: %llu registrar(s), %llu queries, %llu "
              "malformed PDU(s)",
              (unsigned long long)st.registrars, (unsigned long long)st.queries,
              (unsigned long long)st.malformed);
    }
out:
    ams_reg_free(reg);
    ams_cs_free(server);
    if (cs_fd >= 0)
        close(cs_fd);
    if (reg_fd >= 0)
        close(reg_fd);
    ams_mib_free(mib);
    return rc;
}
