/* cfdpd's configuration from its command line. The cfdprc reader
 * (cfdpadmin syntax, issue 20) is to fill the same cfdpd_config here. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfdpd.h"

const char *cfdpd_usage(void)
{
    return "usage: cfdpd <node dir> [options]\n"
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

int cfdpd_config_load(int argc, char **argv, cfdpd_config *cfg, char *why, size_t whylen)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->rx_service = 65;
    cfg->tx_service = 64;
    cfg->peer_service = 65;
    cfg->heap_mb = 64;
    cfg->lifetime_s = 86400;
    cfdp_peer_cfg_defaults(&cfg->defaults);
    /* one PDU per bundle: 64000 B keeps each one inline in libtern's
     * socket messages (payloads over 64 KiB go as a memfd) */
    cfg->defaults.max_pdu = 64000;
    static const struct option opts[] = {{"root", required_argument, NULL, 'r'},
                                         {"entity", required_argument, NULL, 'e'},
                                         {"memory", no_argument, NULL, 'm'},
                                         {"heap", required_argument, NULL, 'H'},
                                         {"lifetime", required_argument, NULL, 'l'},
                                         {"max-pdu", required_argument, NULL, 'p'},
                                         {"ack-timer", required_argument, NULL, 'a'},
                                         {"nak-timer", required_argument, NULL, 'n'},
                                         {"inactivity", required_argument, NULL, 'i'},
                                         {"crc", no_argument, NULL, 'c'},
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
            cfg->defaults.max_pdu = (uint32_t)v;
            break;
        case 'a':
            if (num(optarg, UINT32_MAX, &v) || !v)
                bad = "--ack-timer wants milliseconds from 1";
            cfg->defaults.ack_timer_ms = (uint32_t)v;
            break;
        case 'n':
            if (num(optarg, UINT32_MAX, &v) || !v)
                bad = "--nak-timer wants milliseconds from 1";
            cfg->defaults.nak_timer_ms = (uint32_t)v;
            break;
        case 'i':
            if (num(optarg, UINT32_MAX, &v) || !v)
                bad = "--inactivity wants milliseconds from 1";
            cfg->defaults.inactivity_ms = (uint32_t)v;
            break;
        case 'c':
            cfg->defaults.crc_required = 1;
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
    return 0;
}
