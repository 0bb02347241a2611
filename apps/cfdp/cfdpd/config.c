/* cfdpd's configuration: the node's cfdprc (cfdpadmin commands, cfdp_rc.h),
 * then the command line, whose options override the file. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cfdpd.h"

/* one PDU per bundle: 64000 B keeps each one inline in libtern's socket
 * messages (payloads over 64 KiB go as a memfd); it also fits a datagram */
#define CFDPD_MAX_PDU 64000u

const char *cfdpd_usage(void)
{
    return "usage: cfdpd <node dir> [--rc FILE] [options]\n"
           "  --rc FILE         cfdpadmin commands (a cfdprc, or a host.rc's cfdpadmin\n"
           "                    section; default <node dir>/host.rc, else node.cfdprc)\n"
           "  --root DIR        filestore root (default <node dir>/cfdp, created)\n"
           "  --entity N        entity ID (default: the node's number)\n"
           "  --memory          keep state in memory only (lost at exit)\n"
           "  --heap MB         size of its store's heap (default 64)\n"
           "  --lifetime S      default bundle lifetime in seconds (default 86400)\n"
           "  --max-pdu B       largest PDU sent, bytes (default 64000)\n"
           "  --ack-timer MS    EOF/Finished ACK timer (default 10000)\n"
           "  --nak-timer MS    NAK timer (default 10000)\n"
           "  --inactivity MS   transaction inactivity timer (default 60000)\n"
           "  --crc             PDUs carry the CRC\n"
           "  --copy-pdus       hand file data to ternd as bytes, not by descriptor\n"
           "  --udp-port [H:]P  where CFDP/UDP datagrams are received (0: any port,\n"
           "                    published in <node dir>/ports as 'cfdp udp <port>')\n"
           "  -v                log every transaction event\n";
}

static int num(const char *s, uint64_t max, uint64_t *v)
{
    char *end;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 10);
    if (errno || end == s || *end || x > max || *s == '-')
        return -EINVAL;
    *v = x;
    return 0;
}

/* [host:]port, port 0 allowed (unlike 'm udpport': a test's free port). */
static int hostport(const char *s, char *host, size_t cap, uint16_t *port)
{
    const char *colon = strrchr(s, ':');
    const char *p = colon ? colon + 1 : s;
    size_t hl = colon ? (size_t)(colon - s) : 0;
    const char *h = s;
    if (colon && hl >= 2 && s[0] == '[' && s[hl - 1] == ']') {
        h++;
        hl -= 2;
    }
    uint64_t v;
    if (hl >= cap || (colon && !hl) || num(p, 65535, &v))
        return -EINVAL;
    memcpy(host, h, hl);
    host[hl] = 0;
    *port = (uint16_t)v;
    return 0;
}

enum { O_MAXPDU = 1, O_ACK = 2, O_NAK = 4, O_INACT = 8, O_CRC = 16, O_UDP = 32 };

/* The options given override the file, for every peer as for the defaults. */
static void override(cfdp_peer_cfg *p, unsigned given, const cfdp_peer_cfg *o, int udp)
{
    if (given & O_MAXPDU)
        p->max_pdu = o->max_pdu;
    if (udp && p->max_pdu > CFDP_RC_UDP_MAX_PDU)
        p->max_pdu = CFDP_RC_UDP_MAX_PDU;
    if (given & O_ACK)
        p->ack_timer_ms = o->ack_timer_ms;
    if (given & O_NAK)
        p->nak_timer_ms = o->nak_timer_ms;
    if (given & O_INACT)
        p->inactivity_ms = o->inactivity_ms;
    if (given & O_CRC)
        p->crc_required = 1;
}

static int exists(const char *path)
{
    return access(path, F_OK) == 0;
}

/* Which file: --rc, else as ternd finds the node's configuration. */
static int pick_rc(cfdpd_config *cfg, const char *opt, char *why, size_t whylen)
{
    if (opt) {
        snprintf(cfg->rc_path, sizeof cfg->rc_path, "%s", opt);
        return 0;
    }
    static const char *const names[] = {"host.rc", "node.cfdprc"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (snprintf(cfg->rc_path, sizeof cfg->rc_path, "%s/%s", cfg->node_dir,
                     names[i]) >= (int)sizeof cfg->rc_path) {
            snprintf(why, whylen, "cfdpd: node directory path too long");
            return -ENAMETOOLONG;
        }
        if (exists(cfg->rc_path))
            return 0;
    }
    cfg->rc_path[0] = 0;
    return 0;
}

static int apply_rc(cfdpd_config *cfg, unsigned given, const cfdp_peer_cfg *o)
{
    const cfdp_rc *rc = &cfg->rc;
    int own_pdu = !(rc->set & CFDP_RC_SET_SEGSIZE);
    cfg->defaults = rc->defaults;
    if (own_pdu)
        cfg->defaults.max_pdu = CFDPD_MAX_PDU;
    override(&cfg->defaults, given, o, 0);
    if (rc->npeers && rc->mib) {
        cfg->peers = calloc(rc->npeers, sizeof *cfg->peers);
        if (!cfg->peers)
            return -ENOMEM;
        cfg->npeers = rc->npeers;
    }
    for (size_t i = 0; i < cfg->npeers; i++) {
        int udp = rc->peers[i].transport == CFDP_RC_UDP;
        cfg->peers[i] = rc->mib[i];
        if (own_pdu)
            cfg->peers[i].max_pdu = CFDPD_MAX_PDU;
        override(&cfg->peers[i], given, o, udp);
        cfg->udp |= udp;
    }
    if (rc->set & CFDP_RC_SET_UDPPORT) {
        cfg->udp = 1;
        snprintf(cfg->udp_host, sizeof cfg->udp_host, "%s", rc->udp_host);
        cfg->udp_port = rc->udp_port;
    }
    return 0;
}

int cfdpd_config_load(int argc, char **argv, cfdpd_config *cfg, char *why, size_t whylen)
{
    memset(cfg, 0, sizeof *cfg);
    cfdp_rc_init(&cfg->rc);
    cfg->rx_service = 65;
    cfg->tx_service = 64;
    cfg->peer_service = 65;
    cfg->heap_mb = 64;
    cfg->lifetime_s = 86400;
    cfdp_peer_cfg o; /* the options' values */
    cfdp_peer_cfg_defaults(&o);
    unsigned given = 0;
    const char *rc_opt = NULL;
    char udp_host[256] = "";
    uint16_t udp_port = 0;
    static const struct option opts[] = {{"root", required_argument, NULL, 'r'},
                                         {"rc", required_argument, NULL, 'R'},
                                         {"entity", required_argument, NULL, 'e'},
                                         {"memory", no_argument, NULL, 'm'},
                                         {"heap", required_argument, NULL, 'H'},
                                         {"lifetime", required_argument, NULL, 'l'},
                                         {"max-pdu", required_argument, NULL, 'p'},
                                         {"ack-timer", required_argument, NULL, 'a'},
                                         {"nak-timer", required_argument, NULL, 'n'},
                                         {"inactivity", required_argument, NULL, 'i'},
                                         {"crc", no_argument, NULL, 'c'},
                                         {"copy-pdus", no_argument, NULL, 'C'},
                                         {"udp-port", required_argument, NULL, 'u'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    optind = 1;
    int c;
    uint64_t v;
    while ((c = getopt_long(argc, argv, "vh", opts, NULL)) != -1) {
        const char *bad = NULL;
        switch (c) {
        case 'r':
            snprintf(cfg->root, sizeof cfg->root, "%s", optarg);
            break;
        case 'R':
            rc_opt = optarg;
            if (!optarg[0])
                bad = "--rc wants a file";
            break;
        case 'e':
            if (num(optarg, UINT64_MAX, &cfg->entity) || !cfg->entity)
                bad = "--entity wants a number from 1";
            break;
        case 'm':
            cfg->memory_store = 1;
            break;
        case 'H':
            if (num(optarg, 1u << 20, &cfg->heap_mb) || !cfg->heap_mb)
                bad = "--heap wants megabytes from 1";
            break;
        case 'l':
            if (num(optarg, UINT32_MAX, &v) || !v)
                bad = "--lifetime wants seconds from 1";
            cfg->lifetime_s = (uint32_t)v;
            break;
        case 'p':
            if (num(optarg, 65535 + 28, &v) || v < 128)
                bad = "--max-pdu wants bytes from 128 to 65563";
            o.max_pdu = (uint32_t)v;
            given |= O_MAXPDU;
            break;
        case 'a':
            if (num(optarg, UINT32_MAX, &v) || !v)
                bad = "--ack-timer wants milliseconds from 1";
            o.ack_timer_ms = (uint32_t)v;
            given |= O_ACK;
            break;
        case 'n':
            if (num(optarg, UINT32_MAX, &v) || !v)
                bad = "--nak-timer wants milliseconds from 1";
            o.nak_timer_ms = (uint32_t)v;
            given |= O_NAK;
            break;
        case 'i':
            if (num(optarg, UINT32_MAX, &v) || !v)
                bad = "--inactivity wants milliseconds from 1";
            o.inactivity_ms = (uint32_t)v;
            given |= O_INACT;
            break;
        case 'c':
            given |= O_CRC;
            break;
        case 'C':
            cfg->copy_pdus = 1;
            break;
        case 'u':
            if (hostport(optarg, udp_host, sizeof udp_host, &udp_port))
                bad = "--udp-port wants [<host>:]<port> with a port from 0 to 65535";
            given |= O_UDP;
            break;
        case 'v':
            cfg->verbose = 1;
            break;
        case 'h':
            return 1;
        default:
            bad = "unknown option (see --help)";
        }
        if (bad) {
            snprintf(why, whylen, "cfdpd: %s (got '%s')", bad, optarg ? optarg : "");
            return -EINVAL;
        }
    }
    if (optind != argc - 1) {
        snprintf(why, whylen, "cfdpd: one node directory expected\n%s", cfdpd_usage());
        return -EINVAL;
    }
    snprintf(cfg->node_dir, sizeof cfg->node_dir, "%s", argv[optind]);
    if (!cfg->root[0] && snprintf(cfg->root, sizeof cfg->root, "%s/cfdp",
                                  cfg->node_dir) >= (int)sizeof cfg->root) {
        snprintf(why, whylen, "cfdpd: node directory path too long");
        return -ENAMETOOLONG;
    }
    int rc = pick_rc(cfg, rc_opt, why, whylen);
    if (rc)
        return rc;
    int syntax = 0;
    if (cfg->rc_path[0]) {
        rc = cfdp_rc_load(cfg->rc_path, &cfg->rc);
        if (rc == TERN_ESYNTAX) {
            syntax = 1;
        } else if (rc) {
            snprintf(why, whylen, "cfdpd: %s: %s", cfg->rc_path, tern_strerror(rc));
            return rc;
        }
    }
    if ((rc = apply_rc(cfg, given, &o)))
        return rc;
    if (given & O_UDP) {
        cfg->udp = 1;
        snprintf(cfg->udp_host, sizeof cfg->udp_host, "%s", udp_host);
        cfg->udp_port = udp_port;
    }
    if (syntax) {
        snprintf(why, whylen, "cfdpd: %s: %zu error(s)", cfg->rc_path, cfg->rc.nerrors);
        return TERN_ESYNTAX;
    }
    return 0;
}

void cfdpd_config_free(cfdpd_config *cfg)
{
    free(cfg->peers);
    cfg->peers = NULL;
    cfg->npeers = 0;
    cfdp_rc_free(&cfg->rc);
}

const cfdp_rc_peer *cfdpd_config_udp_peer(const cfdpd_config *cfg, uint64_t id)
{
    for (size_t i = 0; i < cfg->rc.npeers; i++)
        if (cfg->rc.peers[i].cfg.id == id)
            return cfg->rc.peers[i].transport == CFDP_RC_UDP ? &cfg->rc.peers[i] : NULL;
    return NULL;
}
