/* cfdp_rc: ION's cfdpadmin commands into the engine's MIB. Every command's
 * field, every error's exact text, host.rc sections, ION's own example
 * files (mirrored in test/data), the order of diagnostics, and that the
 * result runs an entity. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfdp_rc.h"
#include "tern_test.h"

#define DATA CFDP_TEST_DATA "/"

static int parse(const char *text, cfdp_rc *rc)
{
    return cfdp_rc_parse(text, strlen(text), "t.rc", rc);
}

/* The diagnostics, one per line, "E " or "W " before each. */
static const char *diags(const cfdp_rc *rc)
{
    static char buf[16384];
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < rc->ndiags && at < sizeof buf; i++)
        at += (size_t)snprintf(buf + at, sizeof buf - at, "%c %s\n",
                               rc->diags[i].is_error ? 'E' : 'W', rc->diags[i].text);
    return buf;
}

/* Parses one line (after "1") and expects exactly one error with text want. */
static void expect_error(const char *line, const char *want)
{
    char text[1024];
    cfdp_rc rc;
    snprintf(text, sizeof text, "1\n%s\n", line);
    int r = parse(text, &rc);
    CHECK_MSG(r == TERN_ESYNTAX, "'%s': returned %d, want TERN_ESYNTAX", line, r);
    CHECK_MSG(rc.ndiags == 1 && rc.nerrors == 1, "'%s': diagnostics:\n%s", line,
              diags(&rc));
    CHECK_EQ_STR(rc.diags[0].text, want);
    CHECK_EQ_INT(rc.diags[0].line, 2);
    cfdp_rc_free(&rc);
}

static void expect_warning(const char *line, const char *want)
{
    char text[1024];
    cfdp_rc rc;
    snprintf(text, sizeof text, "1\n%s\n", line);
    CHECK_OK(parse(text, &rc));
    CHECK_MSG(rc.ndiags == 1 && rc.nerrors == 0, "'%s': diagnostics:\n%s", line,
              diags(&rc));
    CHECK_EQ_STR(rc.diags[0].text, want);
    cfdp_rc_free(&rc);
}

TEST(rc_defaults_are_the_engines)
{
    cfdp_rc rc;
    cfdp_peer_cfg d;
    cfdp_peer_cfg_defaults(&d);
    CHECK_OK(parse("", &rc));
    CHECK_EQ_INT(rc.ncommands, 0);
    CHECK_EQ_INT(rc.initialized, 0);
    CHECK_EQ_MEM(&rc.defaults, &d, sizeof d);
    CHECK_EQ_INT(rc.fill_char, 0xaa);
    CHECK_EQ_INT(rc.max_events, 20);
    CHECK_EQ_U64(rc.max_trnbr, 999999999);
    CHECK_EQ_INT(rc.uts, CFDP_RC_UTS_NONE);
    CHECK_EQ_INT(rc.npeers, 0);
    CHECK_EQ_INT(rc.set, 0);
    cfdp_rc_free(&rc);
}

TEST(rc_entity_wide_settings_map_to_fields)
{
    cfdp_rc rc;
    CHECK_OK(parse("1\n"
                   "m discard 0\n"
                   "m requirecrc 1\n"
                   "m ckperiod 30\n"
                   "m maxtimeouts 5\n"
                   "m segsize 1000\n"
                   "m inactivity 120\n"
                   "m udpport 127.0.0.1:4556\n"
                   "s 'bputa'\n",
                   &rc));
    CHECK_MSG(rc.ndiags == 0, "%s", diags(&rc));
    CHECK_EQ_INT(rc.ncommands, 9);
    CHECK_EQ_INT(rc.initialized, 1);
    CHECK_EQ_INT(rc.defaults.keep_incomplete, 1);
    CHECK_EQ_INT(rc.defaults.crc_required, 1);
    CHECK_EQ_U64(rc.defaults.check_timer_ms, 30000);
    CHECK_EQ_INT(rc.defaults.check_limit, 5);
    CHECK_EQ_INT(rc.segsize, 1000);
    CHECK_EQ_U64(rc.defaults.max_segment, 1000);
    CHECK_EQ_U64(rc.defaults.max_pdu, 1000 + CFDP_HEADER_MAX + 8 + 2);
    CHECK_EQ_U64(rc.defaults.inactivity_ms, 120000);
    CHECK_EQ_STR(rc.udp_host, "127.0.0.1");
    CHECK_EQ_INT(rc.udp_port, 4556);
    CHECK_EQ_INT(rc.uts, CFDP_RC_UTS_BPUTA);
    CHECK_EQ_STR(rc.uts_cmd, "bputa");
    CHECK_EQ_STR(rc.uts_at, "t.rc:9");
    CHECK_EQ_INT(rc.set, CFDP_RC_SET_DISCARD | CFDP_RC_SET_REQUIRECRC |
                             CFDP_RC_SET_CKPERIOD | CFDP_RC_SET_MAXTIMEOUTS |
                             CFDP_RC_SET_SEGSIZE | CFDP_RC_SET_INACTIVITY |
                             CFDP_RC_SET_UDPPORT);
    /* what the file did not give keeps the engine's default */
    cfdp_peer_cfg d;
    cfdp_peer_cfg_defaults(&d);
    CHECK_EQ_U64(rc.defaults.ack_timer_ms, d.ack_timer_ms);
    CHECK_EQ_U64(rc.defaults.nak_timer_ms, d.nak_timer_ms);
    CHECK_EQ_INT(rc.defaults.default_class, 2);
    cfdp_rc_free(&rc);

    CHECK_OK(
        parse("1\nm discard 1\nm requirecrc 0\nm udpport 4557\nm segsize 65535\n", &rc));
    CHECK_EQ_INT(rc.defaults.keep_incomplete, 0);
    CHECK_EQ_INT(rc.defaults.crc_required, 0);
    CHECK_EQ_STR(rc.udp_host, "");
    CHECK_EQ_INT(rc.udp_port, 4557);
    CHECK_EQ_U64(rc.defaults.max_pdu, CFDP_PDU_MAX);
    cfdp_rc_free(&rc);
}

/* Tern's m nakdelay: how long a class 2 receiver lets overtaken data come
 * before it NAKs it (over BP/LTP a block under repair arrives after later
 * ones); it reaches every entity's MIB entry and --print shows it. */
TEST(rc_nakdelay_sets_every_entitys_nak_delay)
{
    cfdp_rc rc;
    CHECK_OK(parse("1\nm nakdelay 15000\na entity 3 bp ipn:3.65 29 0 0\n", &rc));
    CHECK_MSG(rc.ndiags == 0, "%s", diags(&rc));
    CHECK_EQ_U64(rc.defaults.nak_delay_ms, 15000);
    CHECK_EQ_INT(rc.set, CFDP_RC_SET_NAKDELAY);
    CHECK_EQ_INT(rc.npeers, 1);
    CHECK(rc.mib != NULL);
    CHECK_EQ_U64(rc.mib[0].nak_delay_ms, 15000);
    CHECK_EQ_U64(rc.mib[0].nak_timer_ms, 29000);
    char out[4096];
    CHECK(cfdp_rc_format(&rc, out, sizeof out) < (int)sizeof out);
    CHECK_MSG(strstr(out, "  NAK delay          15000 ms\n") != NULL, "%s", out);
    cfdp_rc_free(&rc);

    /* not given: the engine's 50 ms, shown as the default */
    cfdp_peer_cfg d;
    cfdp_peer_cfg_defaults(&d);
    CHECK_OK(parse("1\na entity 3 bp ipn:3.65 0 0 0\n", &rc));
    CHECK_EQ_U64(rc.mib[0].nak_delay_ms, d.nak_delay_ms);
    CHECK(cfdp_rc_format(&rc, out, sizeof out) < (int)sizeof out);
    CHECK_MSG(strstr(out, "  NAK delay          50 ms (default)\n") != NULL, "%s", out);
    cfdp_rc_free(&rc);
}

TEST(rc_settings_without_counterpart_warn_and_are_kept)
{
    expect_warning(
        "m fillchar 0x55",
        "t.rc:2: 'm fillchar 0x55' accepted but not used: Tern does not fill "
        "the missing parts of a file it keeps incomplete (they read as zeros)");
    expect_warning("m maxevents 100", "t.rc:2: 'm maxevents 100' accepted but not used: "
                                      "Tern's indication queue has no limit and drops "
                                      "nothing");
    expect_warning("m maxtrnbr 1000",
                   "t.rc:2: 'm maxtrnbr 1000' accepted but not used: Tern's engine does "
                   "not wrap transaction numbers at a configured maximum");
    expect_warning("e 1",
                   "t.rc:2: 'e 1' (echo to the ION log) accepted but not acted on");
    expect_warning("w 1", "t.rc:2: 'w 1' (watch characters) accepted but not acted on");
    expect_warning("x", "t.rc:2: 'x' (stop the UT service) accepted but not acted on: "
                        "cfdpd stops with the node");
    expect_warning(
        "t p 10", "t.rc:2: 't p 10' (wait for the UT service) accepted but not acted on");
    cfdp_rc rc;
    CHECK_OK(parse("1\nm fillchar 55\nm maxevents 0\nm maxtrnbr 7\n", &rc));
    CHECK_EQ_INT(rc.fill_char, 0x55);
    CHECK_EQ_INT(rc.max_events, 0);
    CHECK_EQ_U64(rc.max_trnbr, 7);
    CHECK_EQ_INT(rc.set,
                 CFDP_RC_SET_FILLCHAR | CFDP_RC_SET_MAXEVENTS | CFDP_RC_SET_MAXTRNBR);
    cfdp_rc_free(&rc);
    CHECK_OK(parse("1\nm fillchar 0XfF\n", &rc));
    CHECK_EQ_INT(rc.fill_char, 0xff);
    cfdp_rc_free(&rc);
}

TEST(rc_entities_map_to_peer_cfgs)
{
    cfdp_rc rc;
    CHECK_OK(parse("1\n"
                   "a entity 2 bp ipn:2.0 7 0 2\n"
                   "a entity 3 udp 10.0.0.3:4556 3 15 1\n"
                   "a entity 18446744073709551615 udp [::1]:9 0 3 3\n"
                   "m requirecrc 1\n" /* after the entities: applies to them too */
                   "m udpport 4556\n"
                   "m segsize 2000\n",
                   &rc));
    CHECK_MSG(rc.ndiags == 0, "%s", diags(&rc));
    CHECK_EQ_INT(rc.npeers, 3);
    const cfdp_rc_peer *p = &rc.peers[0];
    CHECK_EQ_U64(p->cfg.id, 2);
    CHECK_EQ_INT(p->transport, CFDP_RC_BP);
    CHECK_EQ_STR(p->endpoint, "ipn:2.0");
    CHECK_EQ_INT(p->rtt_s, 7);
    CHECK_EQ_U64(p->cfg.ack_timer_ms, 7000);
    CHECK_EQ_U64(p->cfg.nak_timer_ms, 7000);
    CHECK_EQ_INT(p->in_cksum, 0);
    CHECK_EQ_INT(p->out_cksum, 2);
    CHECK_EQ_INT(p->cfg.checksum_type, CFDP_CKSUM_CRC32C);
    CHECK_EQ_INT(p->cfg.crc_required, 1);
    CHECK_EQ_U64(p->cfg.max_segment, 2000);
    CHECK_EQ_STR(p->at, "t.rc:2");
    p = &rc.peers[1];
    CHECK_EQ_U64(p->cfg.id, 3);
    CHECK_EQ_INT(p->transport, CFDP_RC_UDP);
    CHECK_EQ_STR(p->host, "10.0.0.3");
    CHECK_EQ_INT(p->port, 4556);
    CHECK_EQ_INT(p->cfg.checksum_type, CFDP_CKSUM_PROX1);
    CHECK_EQ_INT(p->in_cksum, 15);
    CHECK_EQ_U64(p->cfg.ack_timer_ms, 3000);
    p = &rc.peers[2];
    CHECK_EQ_U64(p->cfg.id, UINT64_MAX);
    CHECK_EQ_STR(p->host, "::1");
    CHECK_EQ_INT(p->port, 9);
    /* rtt 0: the engine's timers */
    CHECK_EQ_U64(p->cfg.ack_timer_ms, rc.defaults.ack_timer_ms);
    CHECK_EQ_INT(p->cfg.checksum_type, CFDP_CKSUM_CRC32);
    /* the contiguous MIB is the peers' cfgs */
    CHECK(rc.mib != NULL);
    for (size_t i = 0; i < rc.npeers; i++)
        CHECK_EQ_MEM(&rc.mib[i], &rc.peers[i].cfg, sizeof rc.mib[i]);
    cfdp_rc_free(&rc);
}

TEST(rc_change_and_delete_entity)
{
    cfdp_rc rc;
    CHECK_OK(parse("1\n"
                   "a entity 2 bp ipn:2.0 7 0 0\n"
                   "a entity 3 bp ipn:3.0 7 0 0\n"
                   "a entity 4 bp ipn:4.0 7 0 0\n"
                   "c entity 2 udp 192.0.2.1:4556 20 2 2\n"
                   "d entity 3\n"
                   "i entity 2\n"
                   "i 4\n"
                   "i\n"
                   "l entity\n"
                   "m udpport 4556\n",
                   &rc));
    CHECK_MSG(rc.ndiags == 0, "%s", diags(&rc));
    CHECK_EQ_INT(rc.npeers, 2);
    CHECK_EQ_U64(rc.peers[0].cfg.id, 2);
    CHECK_EQ_INT(rc.peers[0].transport, CFDP_RC_UDP);
    CHECK_EQ_STR(rc.peers[0].host, "192.0.2.1");
    CHECK_EQ_U64(rc.peers[0].cfg.ack_timer_ms, 20000);
    CHECK_EQ_INT(rc.peers[0].cfg.checksum_type, 2);
    CHECK_EQ_STR(rc.peers[0].at, "t.rc:5");
    CHECK_EQ_U64(rc.peers[1].cfg.id, 4);
    cfdp_rc_free(&rc);

    /* ION 4.1's cfdpadmin reads "d entity" with a fourth word */
    CHECK_OK(parse("1\na entity 3 bp ipn:3.0 7 0 0\nd entity 3 x\n", &rc));
    CHECK_EQ_INT(rc.npeers, 0);
    CHECK_EQ_STR(diags(&rc), "W t.rc:3: 'd entity 3 x': the word 'x' is not used\n");
    cfdp_rc_free(&rc);
}

TEST(rc_udp_peer_pdu_fits_a_datagram)
{
    cfdp_rc rc;
    CHECK_OK(cfdp_rc_load(DATA "tern-udp.cfdprc", &rc));
    CHECK_MSG(rc.ndiags == 0, "%s", diags(&rc));
    CHECK_EQ_INT(rc.npeers, 3);
    CHECK_EQ_U64(rc.defaults.max_pdu, CFDP_PDU_MAX);
    CHECK_EQ_U64(rc.peers[0].cfg.max_pdu, CFDP_RC_UDP_MAX_PDU);
    CHECK_EQ_U64(rc.peers[1].cfg.max_pdu, CFDP_RC_UDP_MAX_PDU);
    CHECK_EQ_U64(rc.peers[2].cfg.max_pdu, CFDP_PDU_MAX); /* bp: a bundle holds it */
    CHECK_EQ_INT(rc.udp_port, 4556);
    cfdp_rc_free(&rc);
}

TEST(rc_every_error_names_file_line_command_and_expectation)
{
    expect_error("1 2",
                 "t.rc:2: '1': takes no arguments, got 1; expected '1' (initialize: "
                 "the entity ID is the node number ionadmin's '1' gives)");
    expect_error("a",
                 "t.rc:2: 'a': needs what to add; expected 'a entity <entity nbr> "
                 "<UT protocol name> <UT endpoint name> <rtt> <incstype> <outcstype>'");
    expect_error("d",
                 "t.rc:2: 'd': needs what to delete; expected 'd entity <entity nbr>'");
    expect_error("l", "t.rc:2: 'l': needs what to list; expected 'l entity'");
    expect_error(
        "a entity 2 bp ipn:2.0 7 0",
        "t.rc:2: 'a entity': takes 6 arguments, got 5; expected 'a entity <entity "
        "nbr> <UT protocol name> <UT endpoint name> <rtt> <incstype> <outcstype>'");
    expect_error(
        "c entity 2 bp ipn:2.0 7 0 0 9",
        "t.rc:2: 'c entity': takes 6 arguments, got 7; expected 'c entity <entity "
        "nbr> <UT protocol name> <UT endpoint name> <rtt> <incstype> <outcstype>'");
    expect_error("a entity 0 bp ipn:0.0 7 0 0",
                 "t.rc:2: 'a entity': entity nbr '0': expected a number from 1 to "
                 "18446744073709551615");
    expect_error(
        "a entity 18446744073709551616 bp ipn:1.0 7 0 0",
        "t.rc:2: 'a entity': entity nbr '18446744073709551616': expected a number "
        "from 1 to 18446744073709551615");
    expect_error("a entity -2 bp ipn:2.0 7 0 0",
                 "t.rc:2: 'a entity': entity nbr '-2': expected a number from 1 to "
                 "18446744073709551615");
    expect_error(
        "a entity 2 tcp 10.0.0.2:4556 7 0 0",
        "t.rc:2: 'a entity': UT protocol 'tcp': Tern carries CFDP over bp (one PDU "
        "per bundle) or udp (Tern's extension); expected bp or udp");
    expect_error(
        "a entity 2 ltp 2 7 0 0",
        "t.rc:2: 'a entity': UT protocol 'ltp': Tern carries CFDP over bp (one PDU "
        "per bundle) or udp (Tern's extension); expected bp or udp");
    expect_error("a entity 2 smoke ipn:2.0 7 0 0",
                 "t.rc:2: 'a entity': UT protocol 'smoke': expected bp, or udp (Tern's "
                 "extension)");
    expect_error("a entity 2 bp ipn:2 7 0 0",
                 "t.rc:2: 'a entity': UT endpoint name 'ipn:2': expected an "
                 "ipn:<node>.<service> or dtn: endpoint ID");
    expect_error("a entity 2 bp ipn:x.0 7 0 0",
                 "t.rc:2: 'a entity': UT endpoint name 'ipn:x.0': expected an "
                 "ipn:<node>.<service> or dtn: endpoint ID");
    expect_error("a entity 2 bp 10.0.0.2:4556 7 0 0",
                 "t.rc:2: 'a entity': UT endpoint name '10.0.0.2:4556': expected an "
                 "ipn:<node>.<service> or dtn: endpoint ID for protocol bp");
    expect_error(
        "a entity 2 udp 10.0.0.2 7 0 0",
        "t.rc:2: 'a entity': UT endpoint name '10.0.0.2': expected <host>:<port> "
        "(port 1 to 65535) for protocol udp");
    expect_error("a entity 2 udp 10.0.0.2:65536 7 0 0",
                 "t.rc:2: 'a entity': UT endpoint name '10.0.0.2:65536': expected "
                 "<host>:<port> (port 1 to 65535) for protocol udp");
    expect_error("a entity 2 udp :4556 7 0 0",
                 "t.rc:2: 'a entity': UT endpoint name ':4556': expected <host>:<port> "
                 "(port 1 to 65535) for protocol udp");
    expect_error(
        "a entity 2 udp ::1:4556 7 0 0",
        "t.rc:2: 'a entity': UT endpoint name '::1:4556': expected <host>:<port> "
        "(port 1 to 65535) for protocol udp");
    expect_error("a entity 2 bp ipn:2.0 4294968 0 0",
                 "t.rc:2: 'a entity': rtt '4294968': expected seconds from 0 to 4294967");
    expect_error("a entity 2 bp ipn:2.0 7s 0 0",
                 "t.rc:2: 'a entity': rtt '7s': expected seconds from 0 to 4294967");
    expect_error(
        "a entity 2 bp ipn:2.0 7 4 0",
        "t.rc:2: 'a entity': incstype '4': expected a checksum type: 0 (modular), "
        "1 (Proximity-1 CRC-32), 2 (CRC32C), 3 (CRC-32) or 15 (null)");
    expect_error(
        "a entity 2 bp ipn:2.0 7 0 256",
        "t.rc:2: 'a entity': outcstype '256': expected a checksum type: 0 "
        "(modular), 1 (Proximity-1 CRC-32), 2 (CRC32C), 3 (CRC-32) or 15 (null)");
    expect_error("c entity 2 bp ipn:2.0 7 0 0",
                 "t.rc:2: 'c entity': no entity 2 to change; expected 'a entity 2 ...' "
                 "first");
    expect_error(
        "d entity 2",
        "t.rc:2: 'd entity': no entity 2 to delete; expected an entity nbr an 'a "
        "entity' added");
    expect_error("d entity", "t.rc:2: 'd entity': takes 1 argument, got 0; expected 'd "
                             "entity <entity nbr>'");
    expect_error("d entity zz", "t.rc:2: 'd entity': entity nbr 'zz': expected a number "
                                "from 1 to 18446744073709551615; expected 'd entity "
                                "<entity nbr>'");
    expect_error("l entity 2",
                 "t.rc:2: 'l entity': takes no arguments, got 1; expected 'l entity'");
    expect_error("i entity",
                 "t.rc:2: 'i': needs an entity nbr after 'entity'; expected 'i "
                 "entity <entity nbr>'");
    expect_error("i span 2",
                 "t.rc:2: 'i': 'span' is not something 'i' shows; expected 'i' "
                 "or 'i entity <entity nbr>'");
    expect_error("i entity 2 3",
                 "t.rc:2: 'i': takes at most 2 arguments, got 3; expected "
                 "'i' or 'i entity <entity nbr>'");
    expect_error("i 0", "t.rc:2: 'i': entity nbr '0': expected a number from 1 to "
                        "18446744073709551615; expected 'i' or 'i entity <entity nbr>'");
    expect_error("m", "t.rc:2: 'm': needs a parameter; expected 'm "
                      "<discard|requirecrc|fillchar|ckperiod|maxtimeouts|maxevents|"
                      "maxtrnbr|segsize|inactivity|nakdelay|udpport> <value>'");
    expect_error("m discard", "t.rc:2: 'm discard': takes 1 argument, got 0; expected 'm "
                              "discard 0 or 1'");
    expect_error("m segsize 1 2",
                 "t.rc:2: 'm segsize': takes 1 argument, got 2; expected "
                 "'m segsize <max bytes per file data segment>'");
    expect_error("m discard 2", "t.rc:2: 'm discard': '2': expected 0 or 1");
    expect_error("m requirecrc yes", "t.rc:2: 'm requirecrc': 'yes': expected 0 or 1");
    expect_error("m fillchar 0x100", "t.rc:2: 'm fillchar': fill character '0x100': "
                                     "expected a byte in hex, 0x00 to 0xff");
    expect_error("m fillchar zz", "t.rc:2: 'm fillchar': fill character 'zz': expected a "
                                  "byte in hex, 0x00 to 0xff");
    expect_error("m ckperiod 0", "t.rc:2: 'm ckperiod': check cycle period '0': expected "
                                 "seconds from 1 to 4294967");
    expect_error("m ckperiod 4294968", "t.rc:2: 'm ckperiod': check cycle period "
                                       "'4294968': expected seconds from 1 to 4294967");
    expect_error("m inactivity 1.5", "t.rc:2: 'm inactivity': inactivity period '1.5': "
                                     "expected seconds from 1 to 4294967");
    expect_error("m nakdelay 0", "t.rc:2: 'm nakdelay': NAK delay '0': expected "
                                 "milliseconds from 1 to 4294967000");
    expect_error("m nakdelay 2s", "t.rc:2: 'm nakdelay': NAK delay '2s': expected "
                                  "milliseconds from 1 to 4294967000");
    expect_error("m nakdelay 4294967001", "t.rc:2: 'm nakdelay': NAK delay '4294967001': "
                                          "expected milliseconds from 1 to 4294967000");
    expect_error("m maxtimeouts 0", "t.rc:2: 'm maxtimeouts': check cycle limit '0': "
                                    "expected a number from 1 to 65535");
    expect_error("m maxtimeouts 65536", "t.rc:2: 'm maxtimeouts': check cycle limit "
                                        "'65536': expected a number from 1 to 65535");
    expect_error("m maxevents 4294967296", "t.rc:2: 'm maxevents': event queue limit "
                                           "'4294967296': expected a number from 0 to "
                                           "4294967295");
    expect_error("m maxtrnbr 0", "t.rc:2: 'm maxtrnbr': max transaction number '0': "
                                 "expected a number from 1 to 18446744073709551615");
    expect_error("m segsize 0",
                 "t.rc:2: 'm segsize': segment size '0': expected bytes per "
                 "file data segment from 1 to 65535");
    expect_error("m segsize 65536", "t.rc:2: 'm segsize': segment size '65536': expected "
                                    "bytes per file data segment from 1 to 65535");
    expect_error("m udpport 0",
                 "t.rc:2: 'm udpport': '0': expected [<host>:]<port> with a "
                 "port from 1 to 65535");
    expect_error("m udpport host:", "t.rc:2: 'm udpport': 'host:': expected "
                                    "[<host>:]<port> with a port from 1 to 65535");
    expect_error("s", "t.rc:2: 's': takes 1 argument, got 0; expected \"s '<UTS "
                      "command>'\" such as \"s 'bputa'\"");
    expect_error("s bputa x", "t.rc:2: 's': takes 1 argument, got 2; expected \"s '<UTS "
                              "command>'\" such as \"s 'bputa'\"");
    expect_error(
        "s 'tcputa 10.0.0.1:4556'",
        "t.rc:2: 's': UTS command 'tcputa 10.0.0.1:4556': Tern has no CFDP over "
        "TCP; expected 'bputa' (UDP peers need no UTS command: see 'a entity ... "
        "udp' and 'm udpport')");
    expect_error("s 'ltputa'", "t.rc:2: 's': UTS command 'ltputa': expected 'bputa'");
    expect_error("x 1", "t.rc:2: 'x': takes no arguments, got 1; expected 'x' (stop)");
    expect_error("e 2", "t.rc:2: 'e': expected 'e 1' or 'e 0' (echo on or off)");
    expect_error("w", "t.rc:2: 'w': takes 1 argument, got 0; expected 'w 0', 'w 1' or 'w "
                      "<activity spec>'");
}

TEST(rc_udp_peer_without_udpport_warns_at_the_entity)
{
    cfdp_rc rc;
    CHECK_OK(parse("1\na entity 2 bp ipn:2.0 7 0 0\na entity 3 udp h:1 0 0 0\n"
                   "a entity 4 udp h:2 0 0 0\nm bogus\n",
                   &rc));
    CHECK_EQ_STR(diags(&rc), "W t.rc:3: entity 3 is reached over udp, but no 'm udpport' "
                             "says where this entity receives its replies; expected 'm "
                             "udpport [<host>:]<port>'\n"
                             "W t.rc:5: unknown command 'm bogus': ignored\n");
    CHECK_EQ_INT(rc.diags[0].line, 3);
    cfdp_rc_free(&rc);
}

TEST(rc_long_names_are_bounded)
{
    char line[600], want[900], host[300];
    memset(host, 'h', 256);
    host[256] = '\0';
    snprintf(line, sizeof line, "a entity 2 udp %s:1 0 0 0", host);
    expect_error(line, "t.rc:2: 'a entity': UT endpoint name of 258 bytes: expected at "
                       "most 255");
    snprintf(line, sizeof line, "m udpport %s:1", host);
    snprintf(want, sizeof want,
             "t.rc:2: 'm udpport': '%s:1': expected [<host>:]<port> with a port from 1 "
             "to 65535",
             host);
    expect_error(line, want);
    /* 255 bytes is the longest endpoint kept */
    cfdp_rc rc;
    host[253] = '\0';
    snprintf(line, sizeof line, "1\nm udpport 1\na entity 2 udp %s:1 0 0 0\n", host);
    CHECK_OK(parse(line, &rc));
    CHECK_EQ_INT(strlen(rc.peers[0].endpoint), 255);
    CHECK_EQ_STR(rc.peers[0].host, host);
    cfdp_rc_free(&rc);
    /* spaces inside the quoted UTS command */
    CHECK_OK(parse("1\ns ' bputa '\n", &rc));
    CHECK_EQ_INT(rc.uts, CFDP_RC_UTS_BPUTA);
    CHECK_EQ_INT(rc.ndiags, 0);
    cfdp_rc_free(&rc);
}

TEST(rc_duplicate_entity_is_an_error_naming_the_first)
{
    cfdp_rc rc;
    CHECK_RC(parse("1\na entity 2 bp ipn:2.0 7 0 0\na entity 2 bp ipn:2.0 7 0 0\n", &rc),
             TERN_ESYNTAX);
    CHECK_EQ_STR(diags(&rc), "E t.rc:3: 'a entity': entity 2 exists already (t.rc:2); "
                             "expected 'c entity' to change it\n");
    CHECK_EQ_INT(rc.npeers, 1);
    cfdp_rc_free(&rc);
}

TEST(rc_unknown_commands_warn_with_a_suggestion)
{
    expect_warning(
        "m segsz 100",
        "t.rc:2: unknown command 'm segsz' (did you mean 'm segsize'?): ignored");
    expect_warning("m requirecrcs 1", "t.rc:2: unknown command 'm requirecrcs' (did you "
                                      "mean 'm requirecrc'?): ignored");
    expect_warning("a entty 2", "t.rc:2: unknown command 'a entty' (did you mean 'a "
                                "entity'?): ignored");
    expect_warning("frobnicate 1", "t.rc:2: unknown command 'frobnicate': ignored");
    expect_warning("z", "t.rc:2: unknown command 'z': ignored");
    /* an empty quoted word is a word, and no command */
    expect_warning("'' 1", "t.rc:2: unknown command '': ignored");
    expect_warning("m '' 1", "t.rc:2: unknown command 'm ': ignored");
    expect_warning("a span 2", "t.rc:2: unknown command 'a span': ignored");
    expect_warning(
        "a entity 2 bp ipn:7.0 7 0 0",
        "t.rc:2: entity 2's UT endpoint ipn:7.0 names node 7: accepted but not "
        "used (Tern, as ION, sends entity 2's PDUs to ipn:2.65)");
    expect_warning("s 'bputa -x'", "t.rc:2: UTS command 'bputa -x': bputa takes no "
                                   "arguments; '-x' is not used");
    expect_warning("i entity 9", "t.rc:2: 'i entity 9': no such entity (yet)");
    expect_warning("1", "t.rc:2: '1' again: CFDP is initialized already; ignored");
    /* a warning does not stop the command: the peer is there */
    cfdp_rc rc;
    CHECK_OK(parse("1\na entity 2 bp dtn://two/cfdp 7 0 0\n", &rc));
    CHECK_EQ_INT(rc.ndiags, 0);
    CHECK_EQ_INT(rc.npeers, 1);
    cfdp_rc_free(&rc);
}

TEST(rc_help_and_version_are_silent)
{
    cfdp_rc rc;
    CHECK_OK(parse("1\nh\n?\nv\n", &rc));
    CHECK_EQ_INT(rc.ndiags, 0);
    CHECK_EQ_INT(rc.ncommands, 4);
    cfdp_rc_free(&rc);
}

TEST(rc_before_initialize_warns_once)
{
    cfdp_rc rc;
    CHECK_OK(parse("m segsize 500\na entity 2 bp ipn:2.0 7 0 0\n1\n", &rc));
    CHECK_EQ_STR(diags(&rc), "W t.rc:1: 'm segsize' before '1' (initialize): ION's "
                             "cfdpadmin refuses it; Tern applies it\n");
    CHECK_EQ_INT(rc.segsize, 500);
    CHECK_EQ_INT(rc.npeers, 1);
    cfdp_rc_free(&rc);
}

TEST(rc_q_ends_the_commands)
{
    cfdp_rc rc;
    CHECK_OK(parse("1\nm segsize 500\nq\nm segsize 600\nm bogus\n", &rc));
    CHECK_EQ_STR(diags(&rc),
                 "W t.rc:4: 'm' and the commands after it are not read: a 'q' "
                 "came before them\n");
    CHECK_EQ_INT(rc.segsize, 500);
    CHECK_EQ_INT(rc.ncommands, 3);
    cfdp_rc_free(&rc);
}

TEST(rc_hostrc_takes_only_the_cfdpadmin_section)
{
    cfdp_rc rc;
    CHECK_OK(cfdp_rc_load(DATA "host-sections.rc", &rc));
    CHECK_MSG(rc.ndiags == 0, "%s", diags(&rc));
    /* 6 cfdpadmin commands of the file's 23 */
    CHECK_EQ_INT(rc.ncommands, 6);
    CHECK_EQ_INT(rc.initialized, 1);
    CHECK_EQ_INT(rc.npeers, 1);
    CHECK_EQ_U64(rc.peers[0].cfg.id, 2);
    CHECK_EQ_INT(rc.peers[0].cfg.checksum_type, CFDP_CKSUM_CRC32C);
    CHECK_EQ_INT(rc.segsize, 4000);
    CHECK_EQ_U64(rc.defaults.inactivity_ms, 600000);
    CHECK_EQ_INT(rc.uts, CFDP_RC_UTS_BPUTA);
    CHECK(strstr(rc.uts_at, "host-sections.rc:36") != NULL);
    cfdp_rc_free(&rc);

    /* a host.rc without the section: nothing read, nothing wrong */
    CHECK_OK(parse("## begin ionadmin\n1 1 ''\n## end ionadmin\n## begin bpadmin\n1\n"
                   "a bogus\n## end bpadmin\n",
                   &rc));
    CHECK_EQ_INT(rc.ncommands, 0);
    CHECK_EQ_INT(rc.ndiags, 0);
    cfdp_rc_free(&rc);

    /* the lexer's warning about a line outside the sections comes through */
    CHECK_OK(parse("m segsize 9\n## begin cfdpadmin\n1\n## end cfdpadmin\n", &rc));
    CHECK_EQ_STR(diags(&rc), "W t.rc:1: command 'm' is outside any '## begin' section; "
                             "ignored\n");
    CHECK_EQ_INT(rc.segsize, 0);
    CHECK_EQ_INT(rc.ncommands, 1);
    cfdp_rc_free(&rc);
}

TEST(rc_ion_example_files_parse_without_errors)
{
    static const struct {
        const char *file;
        size_t warnings, peers;
        uint32_t segsize;
        uint8_t crc, keep;
    } t[] = {
        {"ion-cfdpv1-node1.cfdprc", 2, 1, 1000, 0, 0},
        {"ion-cfdpv1-4node.cfdprc", 2, 1, 1000, 1, 0},
        {"ion-loopback.cfdprc", 1, 0, 100, 1, 1},
        {"ion-bpcp-host1.cfdprc", 0, 0, 1000, 1, 0},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        char path[1024];
        cfdp_rc rc;
        snprintf(path, sizeof path, DATA "%s", t[i].file);
        int r = cfdp_rc_load(path, &rc);
        CHECK_MSG(r == 0, "%s: %d\n%s", t[i].file, r, diags(&rc));
        CHECK_EQ_INT(rc.nerrors, 0);
        CHECK_MSG(rc.ndiags == t[i].warnings, "%s:\n%s", t[i].file, diags(&rc));
        CHECK_EQ_INT(rc.initialized, 1);
        CHECK_EQ_INT(rc.uts, CFDP_RC_UTS_BPUTA);
        CHECK_EQ_INT(rc.npeers, t[i].peers);
        CHECK_EQ_INT(rc.segsize, t[i].segsize);
        CHECK_EQ_INT(rc.defaults.crc_required, t[i].crc);
        CHECK_EQ_INT(rc.defaults.keep_incomplete, t[i].keep);
        if (t[i].peers) {
            CHECK_EQ_INT(rc.peers[0].rtt_s, 7);
            CHECK_EQ_INT(rc.peers[0].cfg.crc_required, t[i].crc);
        }
        cfdp_rc_free(&rc);
    }
}

TEST(rc_diagnostics_in_line_order_with_the_lexers)
{
    cfdp_rc rc;
    CHECK_RC(parse("1\nm bogus 1\na entity 2 bp 'ipn:2.0 7 0 0\nm segsize 0\n", &rc),
             TERN_ESYNTAX);
    CHECK_EQ_STR(diags(&rc),
                 "W t.rc:2: unknown command 'm bogus': ignored\n"
                 "E t.rc:3: unterminated quoted string starting at column 15; expected a "
                 "closing ' before the end of the line\n"
                 "E t.rc:4: 'm segsize': segment size '0': expected bytes per file data "
                 "segment from 1 to 65535\n");
    CHECK_EQ_INT(rc.nerrors, 2);
    CHECK_EQ_INT(rc.diags[1].line, 3);
    cfdp_rc_free(&rc);
}

TEST(rc_load_missing_file)
{
    cfdp_rc rc;
    CHECK_RC(cfdp_rc_load(DATA "no-such-file.cfdprc", &rc), -ENOENT);
    CHECK_EQ_INT(rc.ndiags, 0);
    cfdp_rc_free(&rc);
}

/* The configuration runs an engine: an entity built from it takes a put to
 * a configured peer, and its PDUs carry the CRC the file asked for. */
struct sent {
    int n;
    uint8_t first[4];
};

static int on_send(void *ctx, uint64_t dst, const uint8_t *pdu, size_t len)
{
    struct sent *s = ctx;
    if (s->n++ == 0 && len >= 4)
        memcpy(s->first, pdu, 4);
    return 0;
}

TEST(rc_configuration_runs_an_entity)
{
    cfdp_rc rc;
    CHECK_OK(
        parse("1\na entity 2 bp ipn:2.0 3 0 2\nm requirecrc 1\nm segsize 100\n", &rc));
    cfdp_entity_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.id = 1;
    cfdp_memfs *fs;
    CHECK_OK(cfdp_memfs_new(&fs, &cfg.fs));
    CHECK_OK(cfdp_memfs_put_pattern(fs, "a.bin", 1000, 7));
    cfdp_rc_entity_cfg(&rc, &cfg);
    CHECK_EQ_INT(cfg.npeers, 1);
    CHECK(cfg.peers == rc.mib);
    struct sent s = {0};
    cfdp_host host = {.ctx = &s, .send = on_send};
    cfdp_entity *e;
    CHECK_OK(cfdp_entity_new(&cfg, &host, &e));
    cfdp_rc_free(&rc); /* the entity copied the MIB */
    cfdp_put_req req = {.dst = 2,
                        .src_name = "a.bin",
                        .dst_name = "b.bin",
                        .closure = -1,
                        .checksum_type = -1,
                        .nak_mode = -1};
    CHECK_OK(cfdp_put(e, 0, &req, NULL));
    CHECK_OK(cfdp_entity_advance(e, 0));
    /* Metadata + 10 file data PDUs of 100 bytes + EOF */
    CHECK_EQ_INT(s.n, 12);
    /* first header octet: version 1, CRC flag (bit 1) set */
    CHECK_EQ_INT(s.first[0] & 0x02, 0x02);
    cfdp_entity_free(e);
    cfdp_memfs_free(fs);
}

TEST(rc_format_shows_the_configuration)
{
    cfdp_rc rc;
    CHECK_OK(cfdp_rc_load(DATA "tern-udp.cfdprc", &rc));
    int n = cfdp_rc_format(&rc, NULL, 0);
    CHECK(n > 0);
    char *buf = malloc((size_t)n + 1);
    CHECK(buf != NULL);
    CHECK_EQ_INT(cfdp_rc_format(&rc, buf, (size_t)n + 1), n);
    CHECK_EQ_INT(strlen(buf), n);
    CHECK(strstr(buf, "UDP:            receives at *:4556\n") != NULL);
    CHECK(strstr(buf, "  2 udp 127.0.0.1:4557 (" DATA "tern-udp.cfdprc:4)\n") != NULL);
    CHECK(strstr(buf, "      PDUs as UDP datagrams to ::1 port 4558\n") != NULL);
    CHECK(strstr(buf, "  4 bp ipn:4.0 (") != NULL);
    CHECK(strstr(buf, "      PDUs as bundles to ipn:4.65\n") != NULL);
    CHECK(strstr(buf, "largest PDU 65507 bytes") != NULL);
    CHECK(strstr(buf, "entities: 3\n") != NULL);
    /* a short buffer gets a truncated, terminated prefix */
    char small[40];
    CHECK_EQ_INT(cfdp_rc_format(&rc, small, sizeof small), n);
    CHECK_EQ_INT(strlen(small), sizeof small - 1);
    CHECK(memcmp(small, buf, sizeof small - 1) == 0);
    free(buf);
    cfdp_rc_free(&rc);

    /* no 's', no segsize, every checksum name */
    char out[4096];
    CHECK_OK(
        parse("1\na entity 7 bp ipn:7.1 0 15 1\na entity 8 bp ipn:8.1 0 1 3\n", &rc));
    CHECK(cfdp_rc_format(&rc, out, sizeof out) < (int)sizeof out);
    CHECK(strstr(out, "UT service:     none started (no 's' command)\n") != NULL);
    CHECK(strstr(out, "  segment size       what fits a 1024-byte PDU (default)\n") !=
          NULL);
    CHECK(strstr(out, "checksum sent 1 (Proximity-1 CRC-32), incstype 15 (null)\n") !=
          NULL);
    CHECK(strstr(out, "checksum sent 3 (CRC-32), incstype 1 (Proximity-1 CRC-32)\n") !=
          NULL);
    CHECK(strstr(out, "  incomplete files   discarded (default)\n") != NULL);
    cfdp_rc_free(&rc);
}
