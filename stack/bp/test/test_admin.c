#include <errno.h>
#include <stdio.h>

#include "bp_admin.h"
#include "tern/clock.h"
#include "tern_test.h"

/* A node-1 host.rc in the ionstart format, after the Deployment Guide's
 * three-node example, with ION 4.1 bpadmin plans and ipnadmin exits added. */
static const char host_rc[] = "## begin ionadmin\n"                              /* 1 */
                              "1 1 node1.ionconfig\n"                            /* 2 */
                              "s\n"                                              /* 3 */
                              "## end ionadmin\n"                                /* 4 */
                              "## begin bpadmin  \n"                             /* 5 */
                              "1\n"                                              /* 6 */
                              "a  scheme  ipn  'ipnfw'    'ipnadminep'\n"        /* 7 */
                              "a scheme dtn 'dtn2fw' 'dtn2adminep'\n"            /* 8 */
                              "a  endpoint  ipn:1.0  q\n"                        /* 9 */
                              "a  endpoint  ipn:1.1  q\n"                        /* 10 */
                              "a  endpoint  ipn:1.2  x 'echo got one'\n"         /* 11 */
                              "a  endpoint  ipn:1.3\n"                           /* 12 */
                              "a endpoint dtn://node1/inbox q\n"                 /* 13 */
                              "a  protocol  ltp  1400  100\n"                    /* 14 */
                              "a  protocol  tcp  1400  100 125000\n"             /* 15 */
                              "a protocol stcp\n"                                /* 16 */
                              "a  outduct  ltp   25              ltpclo\n"       /* 17 */
                              "a  outduct  ltp  101              ltpclo 65000\n" /* 18 */
                              "a outduct tcp 10.0.0.7:4556 'tcpclo'\n"           /* 19 */
                              "a  induct   ltp   1              ltpcli\n"        /* 20 */
                              "a induct tcp 0.0.0.0:4556 tcpcli\n"               /* 21 */
                              "a plan ipn:7.0 100000\n"                          /* 22 */
                              "a planduct ipn:7.0 tcp 10.0.0.7:4556\n"           /* 23 */
                              "a plan dtn://relay\n"                             /* 24 */
                              "a planduct dtn://relay ltp 101\n"                 /* 25 */
                              "m heapmax 1000000\n"                              /* 26 */
                              "w 1\n"                                            /* 27 */
                              "s\n"                                              /* 28 */
                              "## end bpadmin\n"                                 /* 29 */
                              "##  begin  ipnadmin\n"                            /* 30 */
                              "a  plan   25  ltp/25\n"                           /* 31 */
                              "a  plan  101  ltp/101 50000\n"                    /* 32 */
                              "a exit 200 299 ipn:101.0\n"                       /* 33 */
                              "## end  ipnadmin  \n";                            /* 34 */

typedef struct counts {
    int ignored;
    int bp, ipn;
} counts;

/* Applies every bpadmin and ipnadmin command of text to a; stops at the first
 * error, leaving its message in msg. */
static int apply_text(bp_admin *a, const char *name, const char *text,
                      const char *default_section, char *msg, size_t len, counts *n)
{
    tern_rc *rc;
    int r = tern_rc_parse(&rc, name, text, strlen(text), default_section);
    if (r)
        return r;
    memset(n, 0, sizeof *n);
    for (size_t i = 0; i < tern_rc_count(rc) && r == 0; i++) {
        const tern_rc_cmd *c = tern_rc_at(rc, i);
        if (c->section && strcmp(c->section, "bpadmin") == 0) {
            r = bp_bpadmin_apply(a, c, msg, len);
            n->bp++;
        } else if (c->section && strcmp(c->section, "ipnadmin") == 0) {
            r = bp_ipnadmin_apply(a, c, msg, len);
            n->ipn++;
        }
        if (r == BP_ADMIN_IGNORED) {
            n->ignored++;
            r = 0;
        }
    }
    tern_rc_free(rc);
    return r;
}

static const bp_admin_plan *plan_ipn(const bp_admin *a, uint64_t node)
{
    for (size_t i = 0; i < a->nplans; i++)
        if (a->plans[i].scheme == BP_SCHEME_IPN && a->plans[i].node == node)
            return &a->plans[i];
    return NULL;
}

TEST(host_rc_fills_the_settings)
{
    bp_admin a;
    char msg[4096];
    counts n;
    bp_admin_init(&a);
    CHECK_MSG(apply_text(&a, "host.rc", host_rc, NULL, msg, sizeof msg, &n) == 0, "%s",
              msg);
    CHECK_EQ_INT(n.bp, 23);
    CHECK_EQ_INT(n.ipn, 3);
    CHECK_EQ_INT(n.ignored, 0);
    CHECK(a.initialized && a.started && a.watch);
    CHECK_EQ_U64(a.heapmax, 1000000);

    CHECK_EQ_INT(a.nschemes, 2);
    CHECK_EQ_STR(a.schemes[0].name, "ipn");
    CHECK_EQ_STR(a.schemes[0].forwarder, "ipnfw");
    CHECK_EQ_STR(a.schemes[0].admin_app, "ipnadminep");
    CHECK_EQ_STR(a.schemes[1].name, "dtn");

    CHECK_EQ_INT(a.nendpoints, 5);
    CHECK_EQ_INT(a.endpoints[0].eid.scheme, BP_SCHEME_IPN);
    CHECK_EQ_U64(a.endpoints[1].eid.node, 1);
    CHECK_EQ_U64(a.endpoints[1].eid.service, 1);
    CHECK_EQ_INT(a.endpoints[1].rule, BP_RECV_QUEUE);
    CHECK_EQ_INT(a.endpoints[2].rule, BP_RECV_DISCARD);
    CHECK_EQ_STR(a.endpoints[2].script, "echo got one");
    CHECK_EQ_INT(a.endpoints[3].rule, BP_RECV_DISCARD); /* rule left out: x */
    CHECK_EQ_STR(a.endpoints[3].script, "");
    CHECK_EQ_INT(a.endpoints[4].eid.scheme, BP_SCHEME_DTN);
    CHECK_EQ_STR(a.endpoints[4].eid.ssp, "//node1/inbox");
    CHECK_EQ_STR(a.endpoints[4].at.file, "host.rc");
    CHECK_EQ_INT(a.endpoints[4].at.line, 13);

    CHECK_EQ_INT(a.nprotocols, 3);
    CHECK_EQ_STR(a.protocols[0].name, "ltp");
    CHECK_EQ_U64(a.protocols[0].payload_per_frame, 1400);
    CHECK_EQ_U64(a.protocols[0].overhead_per_frame, 100);
    CHECK_EQ_U64(a.protocols[1].rate, 125000);
    CHECK_EQ_U64(a.protocols[2].payload_per_frame, 0);

    CHECK_EQ_INT(a.noutducts, 3);
    CHECK_EQ_STR(a.outducts[0].protocol, "ltp");
    CHECK_EQ_STR(a.outducts[0].name, "25");
    CHECK_EQ_STR(a.outducts[0].cmd, "ltpclo");
    CHECK_EQ_U64(a.outducts[0].max_payload, 0);
    CHECK_EQ_U64(a.outducts[1].max_payload, 65000);
    CHECK_EQ_STR(a.outducts[2].name, "10.0.0.7:4556");
    CHECK_EQ_STR(a.outducts[2].cmd, "tcpclo");
    CHECK_EQ_INT(a.outducts[2].at.line, 19);
    CHECK_EQ_INT(a.ninducts, 2);
    CHECK_EQ_STR(a.inducts[0].name, "1");
    CHECK_EQ_STR(a.inducts[0].cmd, "ltpcli");
    CHECK_EQ_STR(a.inducts[1].protocol, "tcp");

    CHECK_EQ_INT(a.nplans, 4);
    const bp_admin_plan *p = plan_ipn(&a, 7);
    CHECK(p != NULL);
    CHECK_EQ_STR(p->protocol, "tcp");
    CHECK_EQ_STR(p->duct, "10.0.0.7:4556");
    CHECK_EQ_U64(p->rate, 100000);
    CHECK_EQ_INT(p->at.line, 22);
    CHECK_EQ_INT(p->duct_at.line, 23);
    CHECK(!p->from_ipnadmin);
    CHECK_EQ_INT(a.plans[1].scheme, BP_SCHEME_DTN);
    CHECK_EQ_STR(a.plans[1].dtn_node, "//relay");
    CHECK_EQ_STR(a.plans[1].duct, "101");
    p = plan_ipn(&a, 25);
    CHECK(p != NULL && p->from_ipnadmin);
    CHECK_EQ_STR(p->protocol, "ltp");
    CHECK_EQ_STR(p->duct, "25");
    CHECK_EQ_INT(p->at.line, 31);
    p = plan_ipn(&a, 101);
    CHECK(p != NULL);
    CHECK_EQ_U64(p->rate, 50000);

    CHECK_EQ_INT(a.nexits, 1);
    CHECK_EQ_U64(a.exits[0].first, 200);
    CHECK_EQ_U64(a.exits[0].last, 299);
    CHECK_EQ_U64(a.exits[0].gateway.node, 101);
    bp_admin_free(&a);
    CHECK_EQ_INT(a.nplans, 0);
}

/* Deletes and changes keep the tables right; separate files (no sections). */
TEST(change_and_delete)
{
    bp_admin a;
    char msg[2048];
    counts n;
    bp_admin_init(&a);
    static const char bprc[] = "1\n"
                               "a endpoint ipn:1.1 q\n"
                               "a endpoint ipn:1.2 q\n"
                               "c endpoint ipn:1.1 x 'run me'\n"
                               "d endpoint ipn:1.2\n"
                               "a protocol ltp\n"
                               "a protocol udp\n"
                               "a outduct ltp 2 ltpclo\n"
                               "a outduct ltp 3 ltpclo\n"
                               "c outduct ltp 3 'ltpclo' 1000\n"
                               "a outduct udp 1.2.3.4:5 udpclo\n"
                               "d outduct udp 1.2.3.4:5\n"
                               "d protocol udp\n"
                               "a induct ltp 1 ltpcli\n"
                               "d induct ltp 1\n"
                               "a plan ipn:2.0\n"
                               "a planduct ipn:2.0 ltp 2\n"
                               "a plan ipn:3.0\n"
                               "a planduct ipn:3.0 ltp 3\n"
                               "d planduct ltp 3\n"
                               "c plan ipn:2.0 777\n"
                               "d plan ipn:3.0\n"
                               "x\n";
    CHECK_MSG(apply_text(&a, "node.bprc", bprc, "bpadmin", msg, sizeof msg, &n) == 0,
              "%s", msg);
    CHECK_EQ_INT(n.ignored, 0);
    CHECK(!a.started);
    CHECK_EQ_INT(a.nendpoints, 1);
    CHECK_EQ_INT(a.endpoints[0].rule, BP_RECV_DISCARD);
    CHECK_EQ_STR(a.endpoints[0].script, "run me");
    CHECK_EQ_INT(a.nprotocols, 1);
    CHECK_EQ_INT(a.noutducts, 2);
    CHECK_EQ_U64(a.outducts[1].max_payload, 1000);
    CHECK_EQ_INT(a.ninducts, 0);
    CHECK_EQ_INT(a.nplans, 1);
    CHECK_EQ_U64(a.plans[0].rate, 777);
    CHECK_EQ_STR(a.plans[0].duct, "2");

    static const char ipnrc[] = "a plan 2 ltp/2\n"
                                "a plan ipn:4.0 ltp/3 9000\n"
                                "c plan 2 ltp/3\n"
                                "c plan 4 1234\n"
                                "a exit 10 20 ipn:2.0\n"
                                "a exit 30 40 ipn:2.0\n"
                                "c exit 10 20 ipn:4.0\n"
                                "d exit 30 40\n"
                                "d plan 2\n";
    bp_admin b;
    bp_admin_init(&b);
    CHECK_MSG(apply_text(&b, "node.ipnrc", ipnrc, "ipnadmin", msg, sizeof msg, &n) == 0,
              "%s", msg);
    CHECK_EQ_INT(b.nplans, 1);
    CHECK_EQ_U64(b.plans[0].node, 4);
    CHECK_EQ_STR(b.plans[0].duct, "3");
    CHECK_EQ_U64(b.plans[0].rate, 1234);
    CHECK_EQ_INT(b.nexits, 1);
    CHECK_EQ_U64(b.exits[0].gateway.node, 4);
    CHECK_EQ_STR(b.exits[0].at.file, "node.ipnrc");
    CHECK_EQ_INT(b.exits[0].at.line, 7);
    bp_admin_free(&b);
    bp_admin_free(&a);
}

/* What each malformed line must name besides file:line. */
typedef struct bad_case {
    const char *line;
    const char *word;
} bad_case;

/* Applies prefix then line (the next line of the same file) and checks that
 * the line alone is refused with file:line and the offending word. */
static void check_bad(const char *section, const char *prefix, const bad_case *b)
{
    char text[2048], msg[1024], want[32];
    snprintf(text, sizeof text, "%s%s\n", prefix, b->line);
    unsigned line = 1;
    for (const char *p = prefix; *p; p++)
        line += *p == '\n';
    tern_rc *rc;
    int r = tern_rc_parse(&rc, "bad.rc", text, strlen(text), section);
    CHECK_MSG(r == 0, "lexer refused '%s'", b->line);
    bp_admin a;
    bp_admin_init(&a);
    int (*apply)(bp_admin *, const tern_rc_cmd *, char *, size_t) =
        strcmp(section, "bpadmin") == 0 ? bp_bpadmin_apply : bp_ipnadmin_apply;
    size_t n = tern_rc_count(rc);
    CHECK(n >= 1);
    for (size_t i = 0; i + 1 < n; i++)
        CHECK_MSG(apply(&a, tern_rc_at(rc, i), msg, sizeof msg) == 0, "prefix: %s", msg);
    const tern_rc_cmd *c = tern_rc_at(rc, n - 1);
    CHECK_EQ_INT(c->line, line);
    memset(msg, 'Z', sizeof msg);
    r = apply(&a, c, msg, sizeof msg);
    CHECK_MSG(r == TERN_ESYNTAX, "'%s' returned %d (%s): %s", b->line, r,
              tern_strerror(r), msg);
    snprintf(want, sizeof want, "bad.rc:%u: ", line);
    CHECK_MSG(strncmp(msg, want, strlen(want)) == 0, "'%s': message '%s' lacks '%s'",
              b->line, msg, want);
    CHECK_MSG(strstr(msg, b->word) != NULL, "'%s': message '%s' does not name '%s'",
              b->line, msg, b->word);
    CHECK_MSG(strstr(msg, "expected") != NULL, "'%s': message '%s' says nothing expected",
              b->line, msg);
    bp_admin_free(&a);
    tern_rc_free(rc);
}

static const char bp_prefix[] = "1\n"
                                "a protocol ltp 1400 100\n"
                                "a endpoint ipn:1.1 q\n"
                                "a outduct ltp 2 ltpclo\n"
                                "a plan ipn:2.0\n";

TEST(bpadmin_refuses_malformed_lines)
{
    static const bad_case cases[] = {
        {"frobnicate", "'frobnicate'"},
        {"a widget x", "widget"},
        {"a", "'a'"},
        {"a endpoint ipn:1", "'ipn:1'"},
        {"a endpoint ipn:1.1.1.1 q", "'ipn:1.1.1.1'"},
        {"a endpoint ipn:99999999999999999999.1 q", "99999999999999999999"},
        {"a endpoint ipn:1.2 z", "'z'"},
        {"a endpoint ipn:1.2 qq", "'qq'"},
        {"a endpoint imc:0.1 q", "group 0"}, /* the agent's own (petitions) */
        {"a endpoint dtn:none q", "dtn:none"},
        {"a endpoint mailto:x q", "mailto:x"},
        {"a endpoint ipn:1.2 q script extra", "endpoint"},
        {"a endpoint", "endpoint"},
        {"a endpoint ipn:1.1 q", "ipn:1.1"},
        {"c endpoint ipn:1.9 q", "ipn:1.9"},
        {"d endpoint ipn:1.9", "ipn:1.9"},
        {"a scheme foo 'ffw' 'fadm'", "'foo'"},
        {"a scheme ipn 'ipnfw'", "scheme"},
        {"a protocol tcp 1400", "protocol"},
        {"a protocol tcp 1400x 100", "'1400x'"},
        {"a protocol tcp -1 100", "'-1'"},
        {"a protocol tcp +1 100", "'+1'"},
        {"a protocol tcp 1400 100 99999999999999999999", "99999999999999999999"},
        {"a protocol ltp", "ltp"},
        {"a protocol bad/name", "'bad/name'"},
        {"d protocol ltp", "ltp"},
        {"a outduct udp 1.2.3.4:5 udpclo", "'udp'"},
        {"a outduct ltp two ltpclo", "'two'"},
        {"a outduct ltp 0 ltpclo", "'0'"},
        {"a outduct ltp 3 ltpclo 12k", "'12k'"},
        {"a outduct ltp 3 ltpclo -5", "'-5'"},
        {"a outduct ltp 2 ltpclo", "ltp/2"},
        {"a outduct ltp 3", "outduct"},
        {"c outduct ltp 9 ltpclo", "ltp/9"},
        {"d outduct ltp 9", "ltp/9"},
        {"a induct ltp 1", "induct"},
        {"a induct ltp 1 ltpcli 5", "induct"},
        {"a plan 3 ltp/3", "ltp/3"},
        {"a plan ipn:3.0 ltp/3", "'ltp/3'"},
        {"a plan ipn:3.1", "'ipn:3.1'"},
        {"a plan ipn:0.0", "'ipn:0.0'"},
        {"a plan ipn:x.0", "'ipn:x.0'"},
        {"a plan dtn://a/b", "'dtn://a/b'"},
        {"a plan dtn://", "'dtn://'"},
        {"a plan imc:3.0", "'imc:3.0'"},
        {"a plan ipn:3.0 fast", "'fast'"},
        {"a plan ipn:2.0", "ipn:2.0"},
        {"c plan ipn:9.0 5", "ipn:9.0"},
        {"d plan ipn:9.0", "ipn:9.0"},
        {"a planduct ipn:9.0 ltp 2", "ipn:9.0"},
        {"a planduct ipn:2.0 ltp 7", "ltp/7"},
        {"a planduct ipn:2.0 ltp", "planduct"},
        {"d planduct ltp 7", "ltp/7"},
        {"w 2", "'2'"},
        {"w", "w 0"},
        {"m heapmax -5", "'-5'"},
        {"m heapmax 5 6", "heapmax"},
        {"m", "heapmax"},
        {"m statusreports maybe", "'maybe'"},
        {"m statusreports", "'m statusreports on'"},
        {"l widget", "widget"},
        {"i plan ipn:7.0", "ipn:7.0"},
        {"i endpoint ipn:1.7", "ipn:1.7"},
        {"s a b", "'s'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_bad("bpadmin", bp_prefix, &cases[i]);
}

TEST(bpadmin_statusreports_switch)
{
    bp_admin a;
    char msg[512];
    counts n;
    bp_admin_init(&a);
    CHECK_EQ_INT(a.status_reports, 0); /* RFC 9171 5.1: off unless asked */
    CHECK_MSG(apply_text(&a, "r.bprc", "1\nm statusreports on\n", "bpadmin", msg,
                         sizeof msg, &n) == 0,
              "%s", msg);
    CHECK_EQ_INT(n.ignored, 0);
    CHECK_EQ_INT(a.status_reports, 1);
    CHECK_MSG(apply_text(&a, "r.bprc", "m statusreports off\n", "bpadmin", msg,
                         sizeof msg, &n) == 0,
              "%s", msg);
    CHECK_EQ_INT(a.status_reports, 0);
    bp_admin_free(&a);
}

TEST(bpadmin_wants_1_first)
{
    static const bad_case cases[] = {
        {"a endpoint ipn:1.1 q", "'1'"},
        {"a protocol ltp", "'1'"},
        {"s", "'1'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_bad("bpadmin", "# no init\n", &cases[i]);
}

TEST(ipnadmin_refuses_malformed_lines)
{
    static const bad_case cases[] = {
        {"z", "'z'"},
        {"a route 1", "'a route'"},
        {"a plan 0 ltp/0", "'0'"},
        {"a plan two ltp/2", "'two'"},
        {"a plan -2 ltp/2", "'-2'"},
        {"a plan 18446744073709551616 ltp/2", "'18446744073709551616'"},
        {"a plan ipn:3.1 ltp/3", "'ipn:3.1'"},
        {"a plan 3 ltp3", "'ltp3'"},
        {"a plan 3 ltp/", "'ltp/'"},
        {"a plan 3 /3", "'/3'"},
        {"a plan 3 ltp/x", "'x'"},
        {"a plan 3 ltp/3 fast", "'fast'"},
        {"a plan 3 ltp/3 5 6", "plan"},
        {"a plan 3", "plan"},
        {"a plan 2 ltp/2", "node 2"},
        {"c plan 9 ltp/9", "node 9"},
        {"d plan 9", "node 9"},
        {"a exit 5 3 ipn:3.0", "below"},
        {"a exit x 10 ipn:3.0", "'x'"},
        {"a exit 1 10 dtn://x/y", "'dtn://x/y'"},
        {"a exit 1 10 ipn:3", "'ipn:3'"},
        {"a exit 1 10", "exit"},
        {"a exit 100 200 ipn:3.0", "100"},
        {"d exit 1 2", "1..2"},
        {"i plan 9", "node 9"},
        {"l plan extra", "l plan"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_bad("ipnadmin", "a plan 2 ltp/2\na exit 100 200 ipn:2.0\n", &cases[i]);
}

/* An unknown command is named whole, and the nearest known one suggested. */
TEST(unknown_commands_suggest_the_nearest)
{
    static const struct {
        int ipn;
        const char *line, *named;
    } cases[] = {
        {0, "a endpont ipn:1.2 q", "command 'a endpont' (did you mean 'a endpoint'?)"},
        {0, "a outdcut ltp 3 ltpclo", "command 'a outdcut' (did you mean 'a outduct'?)"},
        {0, "a protcol tcp", "command 'a protcol' (did you mean 'a protocol'?)"},
        {0, "a shceme ipn 'ipnfw' 'ipnadminep'",
         "command 'a shceme' (did you mean 'a scheme'?)"},
        {0, "a planduc ipn:2.0 ltp 2",
         "command 'a planduc' (did you mean 'a planduct'?)"},
        {0, "l endpont", "command 'l endpont' (did you mean 'l endpoint'?)"},
        {0, "i indcut ltp 2", "command 'i indcut' (did you mean 'i induct'?)"},
        {0, "a contact +1 +2 1 2 100", "unknown bpadmin command 'a contact'; expected"},
        {1, "a paln 3 ltp/3", "command 'a paln' (did you mean 'a plan'?)"},
        {1, "a exti 1 9 ipn:2.0", "command 'a exti' (did you mean 'a exit'?)"},
        {1, "l plna", "command 'l plna' (did you mean 'l plan'?)"},
        {1, "a contact +1 +2 1 2 100", "unknown ipnadmin command 'a contact'; expected"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[256], msg[1024];
        counts n;
        bp_admin a;
        bp_admin_init(&a);
        snprintf(text, sizeof text, "%s%s\n", cases[i].ipn ? "" : bp_prefix,
                 cases[i].line);
        int r = apply_text(&a, "u.rc", text, cases[i].ipn ? "ipnadmin" : "bpadmin", msg,
                           sizeof msg, &n);
        CHECK_MSG(r == TERN_ESYNTAX, "'%s' returned %d: %s", cases[i].line, r, msg);
        CHECK_MSG(strstr(msg, cases[i].named) != NULL, "'%s': '%s' lacks \"%s\"",
                  cases[i].line, msg, cases[i].named);
        bp_admin_free(&a);
    }
    /* a misspelt 'm' command is accepted with a warning, which names the one meant */
    char msg[1024];
    counts n;
    bp_admin a;
    bp_admin_init(&a);
    CHECK_OK(
        apply_text(&a, "u.rc", "1\nm statusreport on\n", "bpadmin", msg, sizeof msg, &n));
    CHECK_EQ_INT(n.ignored, 1);
    CHECK_EQ_STR(msg, "u.rc:2: 'm statusreport' is accepted but has no effect in Tern "
                      "(did you mean 'm statusreports'?)");
    bp_admin_free(&a);
}

/* A duct whose command is not its protocol's: the duct is recorded and the
 * line warned about (ltp, and udp inducts, run without their command), or
 * refused (a udp outduct reads its command). */
TEST(duct_commands_of_another_protocol)
{
    static const struct {
        const char *line;
        int rc;
        const char *msg;
    } cases[] = {
        {"a outduct ltp 3 tcpclo", BP_ADMIN_IGNORED,
         "d.rc:4: outduct ltp/3: command 'tcpclo' is not 'ltpclo', the command of ltp "
         "outducts; Tern's ltp outduct runs without it (ignored)"},
        {"a induct ltp 1 tcpcli", BP_ADMIN_IGNORED,
         "d.rc:4: induct ltp/1: command 'tcpcli' is not 'ltpcli', the command of ltp "
         "inducts; Tern's ltp induct runs without it (ignored)"},
        {"a induct udp 127.0.0.1:4556 udpcl", BP_ADMIN_IGNORED,
         "d.rc:4: induct udp/127.0.0.1:4556: command 'udpcl' is not 'udpcli', the "
         "command of udp inducts; Tern's udp induct runs without it (ignored)"},
        {"a outduct udp 127.0.0.1:4556 udpcl", TERN_ESYNTAX,
         "d.rc:4: outduct udp/127.0.0.1:4556: command 'udpcl': expected 'udpclo [<rate "
         "bits/s>]'"},
        {"a outduct udp 127.0.0.1:4556 'udpclo 1000000'", 0, ""},
        {"a outduct ltp 3 ltpclo", 0, ""},
        {"a induct ltp 1 ltpcli", 0, ""},
        {"a induct udp 127.0.0.1:4556 udpcli", 0, ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[256], msg[1024] = "";
        bp_admin a;
        bp_admin_init(&a);
        snprintf(text, sizeof text, "1\na protocol ltp\na protocol udp\n%s\n",
                 cases[i].line);
        tern_rc *rc;
        CHECK_OK(tern_rc_parse(&rc, "d.rc", text, strlen(text), "bpadmin"));
        int r = 0;
        for (size_t j = 0; j < tern_rc_count(rc); j++)
            r = bp_bpadmin_apply(&a, tern_rc_at(rc, j), msg, sizeof msg);
        CHECK_MSG(r == cases[i].rc, "'%s' returned %d: %s", cases[i].line, r, msg);
        CHECK_MSG(strcmp(msg, cases[i].msg) == 0, "'%s': '%s', expected '%s'",
                  cases[i].line, msg, cases[i].msg);
        /* accepted (with or without a word): the duct is there */
        CHECK_EQ_INT(a.ninducts + a.noutducts, cases[i].rc == TERN_ESYNTAX ? 0 : 1);
        tern_rc_free(rc);
        bp_admin_free(&a);
    }
}

TEST(ion_commands_tern_does_not_act_on_warn)
{
    static const char *const bp_lines[] = {
        "a egress x y",
        "m crypto x",
        "m maxcount 5",
        "b plan ipn:2.0",
        "u plan ipn:2.0",
        "e 1",
        "v",
        "h",
        "r 'echo hi'",
        "s ltp",
        "1 extra",
    };
    static const char *const ipn_lines[] = {"a planrule 2 x", "e 1", "h", "b plan 2"};
    char msg[512];
    for (int k = 0; k < 2; k++) {
        const char *const *lines = k ? ipn_lines : bp_lines;
        size_t n =
            k ? sizeof ipn_lines / sizeof *ipn_lines : sizeof bp_lines / sizeof *bp_lines;
        for (size_t i = 0; i < n; i++) {
            char text[256];
            snprintf(text, sizeof text, "%s%s\n", k ? "" : "1\n", lines[i]);
            tern_rc *rc;
            CHECK_OK(tern_rc_parse(&rc, "w.rc", text, strlen(text), NULL));
            bp_admin a;
            bp_admin_init(&a);
            int r = 0;
            for (size_t j = 0; j < tern_rc_count(rc); j++)
                r = k ? bp_ipnadmin_apply(&a, tern_rc_at(rc, j), msg, sizeof msg)
                      : bp_bpadmin_apply(&a, tern_rc_at(rc, j), msg, sizeof msg);
            CHECK_MSG(r == BP_ADMIN_IGNORED, "'%s' returned %d: %s", lines[i], r, msg);
            const char *want = k ? "w.rc:1: " : "w.rc:2: ";
            CHECK_MSG(strncmp(msg, want, strlen(want)) == 0, "'%s': warning '%s'",
                      lines[i], msg);
            CHECK_EQ_INT(a.nschemes + a.nplans + a.nendpoints, 0);
            bp_admin_free(&a);
            tern_rc_free(rc);
        }
    }
}

static void apply_one(bp_admin *a, int ipn, const char *line, char *msg, size_t len)
{
    char *argv[8] = {0};
    char buf[256];
    snprintf(buf, sizeof buf, "%s", line);
    int argc = 0;
    for (char *t = strtok(buf, " "); t && argc < 7; t = strtok(NULL, " "))
        argv[argc++] = t;
    tern_rc_cmd c = {"list.rc", 99, ipn ? "ipnadmin" : "bpadmin", argc, argv};
    int r = ipn ? bp_ipnadmin_apply(a, &c, msg, len) : bp_bpadmin_apply(a, &c, msg, len);
    CHECK_MSG(r == 0, "'%s' returned %d: %s", line, r, msg);
}

TEST(listings_show_the_configuration)
{
    bp_admin a;
    char msg[8192];
    counts n;
    bp_admin_init(&a);
    CHECK_OK(apply_text(&a, "host.rc", host_rc, NULL, msg, sizeof msg, &n));
    apply_one(&a, 0, "l endpoint", msg, sizeof msg);
    CHECK_MSG(strstr(msg, "endpoint ipn:1.1: rule q (queue) (host.rc:10)\n") &&
                  strstr(msg, "endpoint ipn:1.2: rule x (discard), recv script 'echo got "
                              "one'") &&
                  strstr(msg, "endpoint dtn://node1/inbox: rule q"),
              "%s", msg);
    apply_one(&a, 0, "l scheme", msg, sizeof msg);
    CHECK_MSG(
        strstr(msg, "scheme ipn: forwarder 'ipnfw', admin application 'ipnadminep'"),
        "%s", msg);
    apply_one(&a, 0, "l protocol", msg, sizeof msg);
    CHECK_MSG(strstr(msg, "protocol tcp: payload 1400 B/frame, overhead 100 B/frame, "
                          "nominal rate 125000 B/s"),
              "%s", msg);
    apply_one(&a, 0, "l outduct", msg, sizeof msg);
    CHECK_MSG(strstr(msg, "outduct ltp/25: 'ltpclo', max payload none (host.rc:17)") &&
                  strstr(msg, "outduct ltp/101: 'ltpclo', max payload 65000 B") &&
                  strstr(msg, "outduct tcp/10.0.0.7:4556"),
              "%s", msg);
    apply_one(&a, 0, "l outduct tcp", msg, sizeof msg);
    CHECK_MSG(strstr(msg, "outduct tcp/10.0.0.7:4556") && !strstr(msg, "ltp/25"), "%s",
              msg);
    apply_one(&a, 0, "l induct", msg, sizeof msg);
    CHECK_MSG(strstr(msg, "induct ltp/1: 'ltpcli'") &&
                  strstr(msg, "induct tcp/0.0.0.0:4556"),
              "%s", msg);
    apply_one(&a, 0, "i outduct ltp 101", msg, sizeof msg);
    CHECK_MSG(strstr(msg, "outduct ltp/101") && !strstr(msg, "ltp/25"), "%s", msg);
    apply_one(&a, 0, "l plan", msg, sizeof msg);
    CHECK_MSG(strstr(msg, "plan ipn:7.0: tcp/10.0.0.7:4556, nominal rate 100000 B/s "
                          "(bpadmin host.rc:22, planduct host.rc:23)") &&
                  strstr(msg, "plan dtn://relay: ltp/101") &&
                  strstr(msg, "plan ipn:25.0: ltp/25 (ipnadmin host.rc:31)"),
              "%s", msg);
    apply_one(&a, 0, "i plan dtn://relay", msg, sizeof msg);
    CHECK_MSG(strstr(msg, "plan dtn://relay: ltp/101") && !strstr(msg, "ipn:7.0"), "%s",
              msg);
    apply_one(&a, 1, "l plan", msg, sizeof msg);
    CHECK_MSG(strstr(msg, "plan ipn:101.0: ltp/101, nominal rate 50000 B/s") &&
                  !strstr(msg, "dtn://relay"),
              "%s", msg);
    apply_one(&a, 1, "i plan 25", msg, sizeof msg);
    CHECK_MSG(strstr(msg, "plan ipn:25.0: ltp/25") && !strstr(msg, "101"), "%s", msg);
    apply_one(&a, 1, "l exit", msg, sizeof msg);
    CHECK_MSG(strstr(msg, "exit 200..299 via ipn:101.0 (host.rc:33)"), "%s", msg);
    apply_one(&a, 1, "i exit 200 299", msg, sizeof msg);
    CHECK_MSG(strstr(msg, "exit 200..299"), "%s", msg);
    /* A listing larger than the buffer is cut, never overrun. */
    char small[16];
    memset(small, 'Z', sizeof small);
    apply_one(&a, 0, "l endpoint", small, 10);
    CHECK_EQ_INT(strlen(small), 9);
    CHECK_EQ_INT(small[10], 'Z');
    CHECK(bp_admin_list(&a, "endpoint", NULL, 0) > 100);
    CHECK_RC(bp_admin_list(&a, "widget", NULL, 0), TERN_ENOTFOUND);
    bp_admin_free(&a);
    bp_admin_init(&a);
    CHECK(bp_admin_list(&a, "plan", msg, sizeof msg) > 0);
    CHECK_EQ_STR(msg, "no plan\n");
    bp_admin_free(&a);
}

/* ---------------------------------------------------------------- configure */

/* A convergence layer for "ltp" that records what the agent asks of it. */
typedef struct fake_cla {
    int opens, closes, sends;
    char names[8][32];
    char cmds[8][32];
    size_t max_payload_seen;
} fake_cla;

static int fake_open(void *cla, bp_outduct *od, const char *name, const char *cmd,
                     void **duct)
{
    fake_cla *f = cla;
    (void)od;
    if (f->opens < 8) {
        snprintf(f->names[f->opens], sizeof f->names[0], "%s", name);
        snprintf(f->cmds[f->opens], sizeof f->cmds[0], "%s", cmd);
    }
    f->opens++;
    *duct = f;
    return 0;
}

static void fake_close(void *cla, void *duct)
{
    (void)duct;
    ((fake_cla *)cla)->closes++;
}

static int fake_send(void *cla, void *duct, const uint8_t *bundle, size_t len,
                     uint64_t xmit)
{
    (void)duct, (void)bundle, (void)len, (void)xmit;
    ((fake_cla *)cla)->sends++;
    return -EAGAIN; /* keep it queued: the test looks, it does not transmit */
}

static const bp_cla_ops fake_ops = {"ltp", fake_open, fake_close, fake_send};

typedef struct node {
    tern_clock *clk;
    tern_loop *loop;
    sdr *store;
    bp_agent *agent;
    fake_cla cla;
} node;

static void node_up(node *n)
{
    memset(n, 0, sizeof *n);
    CHECK_OK(tern_clock_virtual_new(UINT64_C(849312000000), &n->clk));
    CHECK_OK(tern_loop_new(n->clk, &n->loop));
    sdr_profile prof;
    memset(&prof, 0, sizeof prof);
    prof.name = "node1";
    prof.heap_size = 4 << 20;
    prof.mode = SDR_MEMORY;
    char why[256];
    CHECK_OK(sdr_open(&prof, &n->store, why, sizeof why));
    bp_agent_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.node = 1;
    cfg.dtn_name = "//node1";
    cfg.store = n->store;
    bp_agent_host host;
    memset(&host, 0, sizeof host);
    CHECK_OK(bp_agent_new(n->loop, &cfg, &host, NULL, &n->agent));
    CHECK_OK(bp_cla_register(n->agent, &fake_ops, &n->cla));
}

static void node_down(node *n)
{
    bp_agent_free(n->agent);
    tern_loop_run(n->loop, TERN_RUN_NOWAIT);
    CHECK_OK(tern_loop_close(n->loop));
    CHECK_OK(sdr_close(n->store));
    tern_clock_free(n->clk);
}

static void eid(bp_eid *e, const char *s)
{
    CHECK_OK(bp_eid_parse(s, e, NULL));
}

TEST(configure_sets_up_the_agent)
{
    static const char rc[] = "## begin bpadmin\n"
                             "1\n"
                             "a scheme ipn 'ipnfw' 'ipnadminep'\n"
                             "a endpoint ipn:1.0 q\n"
                             "a endpoint ipn:1.1 q\n"
                             "a endpoint ipn:1.2 x\n"
                             "a protocol ltp 1400 100\n"
                             "a outduct ltp 2 ltpclo\n"
                             "a outduct ltp 3 'ltpclo' 30000\n"
                             "a induct ltp 1 ltpcli\n"
                             "a plan ipn:3.0\n"
                             "a planduct ipn:3.0 ltp 3\n"
                             "a plan dtn://peer\n"
                             "a planduct dtn://peer ltp 2\n"
                             "s\n"
                             "## end bpadmin\n"
                             "## begin ipnadmin\n"
                             "a plan 2 ltp/2\n"
                             "a exit 10 20 ipn:2.0\n"
                             "## end ipnadmin\n";
    node n;
    node_up(&n);
    bp_admin a;
    char msg[1024];
    counts k;
    bp_admin_init(&a);
    CHECK_MSG(apply_text(&a, "host.rc", rc, NULL, msg, sizeof msg, &k) == 0, "%s", msg);
    CHECK_MSG(bp_admin_configure(&a, n.agent, msg, sizeof msg) == 0, "%s", msg);
    CHECK_EQ_INT(n.cla.opens, 2);
    CHECK_EQ_STR(n.cla.names[0], "2");
    CHECK_EQ_STR(n.cla.names[1], "3");
    CHECK_EQ_STR(n.cla.cmds[1], "ltpclo");
    CHECK(bp_outduct_find(n.agent, "ltp", "2") != NULL);
    CHECK(bp_outduct_find(n.agent, "ltp", "3") != NULL);
    CHECK(bp_outduct_find(n.agent, "ltp", "1") == NULL); /* inducts are the host's */

    /* Rules: q keeps a bundle nobody reads, x drops it. */
    bp_eid src, q, x, far;
    eid(&src, "ipn:1.0");
    eid(&q, "ipn:1.1");
    eid(&x, "ipn:1.2");
    eid(&far, "ipn:15.1");
    bp_send_opts o;
    bp_send_opts_init(&o);
    CHECK_OK(bp_agent_send(n.agent, &src, &q, &o, "hello", 5, NULL));
    CHECK_OK(bp_agent_send(n.agent, &src, &x, &o, "drop", 4, NULL));
    /* Node 15 is reached through the exit (10..20 via node 2): ltp duct 2. */
    CHECK_OK(bp_agent_send(n.agent, &src, &far, &o, "far", 3, NULL));
    tern_loop_run_until(n.loop, tern_loop_now(n.loop) + 1000000000ull);
    CHECK_EQ_INT(bp_endpoint_queued(n.agent, &q), 1);
    CHECK_EQ_INT(bp_endpoint_queued(n.agent, &x), 0);
    bp_outduct *od2 = bp_outduct_find(n.agent, "ltp", "2");
    CHECK_MSG(n.cla.sends >= 1 || bp_outduct_queued(od2) == 1,
              "bundle for ipn:15.1 neither sent nor queued on ltp/2");
    bp_agent_stats st;
    bp_agent_stats_get(n.agent, &st);
    CHECK_EQ_U64(st.limbo, 0);
    bp_admin_free(&a);
    node_down(&n);
}

TEST(configure_names_the_line_that_fails)
{
    node n;
    char msg[1024];
    counts k;
    bp_admin a;

    /* No convergence layer for tcp in this agent. */
    node_up(&n);
    bp_admin_init(&a);
    static const char rc1[] = "1\n"
                              "a protocol ltp\n"
                              "a protocol tcp\n"
                              "a outduct ltp 2 ltpclo\n"
                              "a outduct tcp 10.1.1.1:4556 tcpclo\n";
    CHECK_OK(apply_text(&a, "one.rc", rc1, "bpadmin", msg, sizeof msg, &k));
    CHECK_RC(bp_admin_configure(&a, n.agent, msg, sizeof msg), TERN_ENOTFOUND);
    CHECK_MSG(strncmp(msg, "one.rc:5: ", 10) == 0 && strstr(msg, "tcp/10.1.1.1:4556") &&
                  strstr(msg, "'tcp'"),
              "%s", msg);
    bp_admin_free(&a);
    node_down(&n);

    /* An endpoint of another node. */
    node_up(&n);
    bp_admin_init(&a);
    static const char rc2[] = "1\na endpoint ipn:1.1 q\na endpoint ipn:5.1 q\n";
    CHECK_OK(apply_text(&a, "two.rc", rc2, "bpadmin", msg, sizeof msg, &k));
    int r = bp_admin_configure(&a, n.agent, msg, sizeof msg);
    CHECK_MSG(r < 0 && strncmp(msg, "two.rc:3: ", 10) == 0 && strstr(msg, "ipn:5.1"),
              "%d %s", r, msg);
    bp_admin_free(&a);
    node_down(&n);

    /* An ipnadmin plan through an outduct bpadmin never added. */
    node_up(&n);
    bp_admin_init(&a);
    CHECK_OK(
        apply_text(&a, "three.rc", "a plan 4 ltp/4\n", "ipnadmin", msg, sizeof msg, &k));
    CHECK_RC(bp_admin_configure(&a, n.agent, msg, sizeof msg), TERN_ENOTFOUND);
    CHECK_MSG(strncmp(msg, "three.rc:1: ", 12) == 0 && strstr(msg, "ltp/4"), "%s", msg);
    bp_admin_free(&a);
    node_down(&n);
}
