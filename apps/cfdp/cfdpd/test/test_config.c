/* cfdpd's configuration: which cfdprc it reads (--rc, host.rc's cfdpadmin
 * section, node.cfdprc), what the file sets in the MIB (defaults and each
 * peer, cfdpd's 64000-byte PDUs unless m segsize), the options overriding
 * it (the UDP datagram cap kept), the UDP port, and the file's errors. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cfdpd.h"
#include "tern_test.h"

static const char *mkdir_in(const char *name)
{
    static char p[4096];
    snprintf(p, sizeof p, "%s/%s", tt_tmpdir(), name);
    mkdir(p, 0755);
    return p;
}

static void put_file(const char *dir, const char *name, const char *text)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    CHECK(f != NULL);
    fputs(text, f);
    fclose(f);
}

static int load(cfdpd_config *cfg, char *why, size_t whylen, const char *a, ...)
{
    char *argv[16] = {"cfdpd"};
    int argc = 1;
    va_list ap;
    va_start(ap, a);
    for (const char *s = a; s && argc < 15; s = va_arg(ap, const char *))
        argv[argc++] = (char *)s;
    va_end(ap);
    argv[argc] = NULL;
    return cfdpd_config_load(argc, argv, cfg, why, whylen);
}

static const char HOST_RC[] = "## begin ionadmin\n"
                              "1 1 ''\n"
                              "## end ionadmin\n"
                              "## begin cfdpadmin\n"
                              "1\n"
                              "m segsize 2000\n"
                              "m requirecrc 1\n"
                              "a entity 2 bp ipn:2.65 5 0 2\n"
                              "a entity 3 udp 127.0.0.1:4000 0 0 0\n"
                              "m udpport 4556\n"
                              "## end cfdpadmin\n";

TEST(host_rc_section_sets_defaults_and_peers)
{
    const char *d = mkdir_in("h");
    put_file(d, "host.rc", HOST_RC);
    put_file(d, "node.cfdprc", "1\nm segsize 100\n"); /* host.rc wins */
    cfdpd_config cfg;
    char why[512];
    CHECK_OK(load(&cfg, why, sizeof why, d, NULL));
    CHECK(strstr(cfg.rc_path, "/h/host.rc") != NULL);
    CHECK_EQ_U64(cfg.defaults.max_segment, 2000);
    CHECK_EQ_U64(cfg.defaults.max_pdu, 2038);
    CHECK_EQ_INT(cfg.defaults.crc_required, 1);
    CHECK_EQ_U64(cfg.npeers, 2);
    CHECK_EQ_U64(cfg.peers[0].id, 2);
    CHECK_EQ_U64(cfg.peers[0].ack_timer_ms, 5000);
    CHECK_EQ_U64(cfg.peers[0].checksum_type, 2);
    CHECK_EQ_INT(cfg.peers[0].crc_required, 1);
    CHECK_EQ_U64(cfg.peers[1].id, 3);
    CHECK_EQ_U64(cfg.peers[1].max_pdu, 2038);
    CHECK_EQ_INT(cfg.udp, 1);
    CHECK_EQ_STR(cfg.udp_host, "");
    CHECK_EQ_U64(cfg.udp_port, 4556);
    CHECK(cfdpd_config_udp_peer(&cfg, 2) == NULL);
    const cfdp_rc_peer *u = cfdpd_config_udp_peer(&cfg, 3);
    CHECK(u != NULL && u->port == 4000 && !strcmp(u->host, "127.0.0.1"));
    CHECK(cfdpd_config_udp_peer(&cfg, 9) == NULL);
    cfdpd_config_free(&cfg);
}

TEST(options_override_the_file_and_udp_stays_within_a_datagram)
{
    const char *d = mkdir_in("o");
    put_file(d, "host.rc", HOST_RC);
    cfdpd_config cfg;
    char why[512];
    CHECK_OK(load(&cfg, why, sizeof why, "--ack-timer", "700", "--max-pdu", "65563",
                  "--udp-port", "127.0.0.1:0", d, NULL));
    CHECK_EQ_U64(cfg.defaults.ack_timer_ms, 700);
    CHECK_EQ_U64(cfg.peers[0].ack_timer_ms, 700); /* over the file's rtt */
    CHECK_EQ_U64(cfg.peers[0].max_pdu, 65563);
    CHECK_EQ_U64(cfg.peers[1].max_pdu, CFDP_RC_UDP_MAX_PDU);
    CHECK_EQ_STR(cfg.udp_host, "127.0.0.1");
    CHECK_EQ_U64(cfg.udp_port, 0);
    cfdpd_config_free(&cfg);
    CHECK_RC(load(&cfg, why, sizeof why, "--udp-port", "h:70000", d, NULL), -EINVAL);
    CHECK_MSG(strstr(why, "--udp-port") && strstr(why, "'h:70000'"), "%s", why);
    cfdpd_config_free(&cfg);
}

TEST(node_cfdprc_then_rc_option_then_none)
{
    const char *d = mkdir_in("c");
    put_file(d, "node.cfdprc", "1\na entity 5 udp [::1]:7 0 0 0\n");
    put_file(d, "other.rc", "1\nm segsize 500\n");
    cfdpd_config cfg;
    char why[512];
    CHECK_OK(load(&cfg, why, sizeof why, d, NULL));
    CHECK(strstr(cfg.rc_path, "/c/node.cfdprc") != NULL);
    /* no m segsize: cfdpd's own 64000-byte PDUs, for the peer too */
    CHECK_EQ_U64(cfg.defaults.max_pdu, 64000);
    CHECK_EQ_U64(cfg.npeers, 1);
    CHECK_EQ_U64(cfg.peers[0].max_pdu, 64000);
    CHECK_EQ_INT(cfg.udp, 1); /* a UDP peer opens the socket, any port */
    CHECK_EQ_U64(cfg.udp_port, 0);
    CHECK_EQ_STR(cfdpd_config_udp_peer(&cfg, 5)->host, "::1");
    cfdpd_config_free(&cfg);
    char rc[4200];
    snprintf(rc, sizeof rc, "%s/other.rc", d);
    CHECK_OK(load(&cfg, why, sizeof why, "--rc", rc, d, NULL));
    CHECK_EQ_STR(cfg.rc_path, rc);
    CHECK_EQ_U64(cfg.defaults.max_pdu, 538);
    CHECK_EQ_U64(cfg.npeers, 0);
    CHECK_EQ_INT(cfg.udp, 0);
    cfdpd_config_free(&cfg);
    const char *e = mkdir_in("e");
    CHECK_OK(load(&cfg, why, sizeof why, e, NULL));
    CHECK_EQ_STR(cfg.rc_path, "");
    CHECK_EQ_U64(cfg.defaults.max_pdu, 64000);
    cfdpd_config_free(&cfg);
}

TEST(file_errors_are_listed_and_an_unreadable_file_named)
{
    const char *d = mkdir_in("x");
    put_file(d, "host.rc",
             "## begin cfdpadmin\n1\nm segsize 0\nm bogus 1\n"
             "a entity 2 udp 127.0.0.1 0 0 0\n## end cfdpadmin\n");
    cfdpd_config cfg;
    char why[512];
    CHECK_RC(load(&cfg, why, sizeof why, d, NULL), TERN_ESYNTAX);
    CHECK_MSG(strstr(why, "2 error(s)"), "%s", why);
    CHECK_EQ_U64(cfg.rc.nerrors, 2);
    int errs = 0, warns = 0;
    for (size_t i = 0; i < cfg.rc.ndiags; i++) {
        const char *t = cfg.rc.diags[i].text;
        if (cfg.rc.diags[i].is_error) {
            CHECK_MSG(
                strstr(t, errs ? "host.rc:5: 'a entity'" : "host.rc:3: 'm segsize'"),
                "%s", t);
            errs++;
        } else if (strstr(t, "host.rc:4: unknown command 'm bogus'")) {
            warns++;
        }
    }
    CHECK_EQ_INT(errs, 2);
    CHECK_EQ_INT(warns, 1);
    cfdpd_config_free(&cfg);
    CHECK_RC(load(&cfg, why, sizeof why, "--rc", "/nonexistent/x.rc", d, NULL), -ENOENT);
    CHECK_MSG(strstr(why, "/nonexistent/x.rc"), "%s", why);
    cfdpd_config_free(&cfg);
}
