/* Finding a node's configuration in its directory: an ionstart host.rc, or
 * ION's admin files one per program (node.ionrc, node.ltprc, ...). */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "node_int.h"
#include "tern_test.h"

static void put(const char *dir, const char *name, const char *text)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    CHECK_MSG(f != NULL, "cannot write %s", path);
    fputs(text, f);
    fclose(f);
}

static const char *subdir(const char *name)
{
    static char d[PATH_MAX];
    snprintf(d, sizeof d, "%s/%s", tt_tmpdir(), name);
    CHECK(mkdir(d, 0755) == 0);
    return d;
}

static const char ionrc[] = "1 7 node.ionconfig\ns\n";
static const char ltprc[] = "1 32\n"
                            "a span 8 32 32 1400 10000 1 'udplso 127.0.0.1:2113'\n"
                            "a seat 'udplsi 127.0.0.1:0'\n"
                            "s\n";
static const char bprc[] = "1\n"
                           "a scheme ipn 'ipnfw' 'ipnadminep'\n"
                           "a endpoint ipn:7.1 q\n"
                           "a protocol ltp 1400 100\n"
                           "a induct ltp 7 ltpcli\n"
                           "a outduct ltp 8 ltpclo\n"
                           "s\n";
static const char ipnrc[] = "a plan 8 ltp/8\n";

TEST(config_from_node_admin_files)
{
    const char *d = subdir("split");
    put(d, "node.ionrc", ionrc);
    put(d, "node.ionsecrc", "1\n");
    put(d, "node.ltprc", ltprc);
    put(d, "node.bprc", bprc);
    put(d, "node.ipnrc", ipnrc);
    put(d, "node.bprc.2", "this is not read\n");
    bp_hostrc h;
    node_config nc;
    char err[1024], want[PATH_MAX + 256];
    CHECK_MSG(node__config_read(d, NULL, 0, &h, &nc, err, sizeof err) == 0, "%s", err);
    CHECK_EQ_U64(bp_plan_node(h.plan), 7);
    CHECK(h.has_ltp && h.has_bp);
    CHECK_EQ_INT(h.ltp.nseats, 1);
    CHECK_EQ_INT(h.bp.nplans, 1);
    snprintf(want, sizeof want,
             "%s/node.ionrc, node.ionsecrc, node.ltprc, node.bprc, node.ipnrc", d);
    CHECK_EQ_STR(nc.used, want);
    CHECK_EQ_STR(nc.base, d);
    CHECK_EQ_STR(nc.note, "");
    snprintf(want, sizeof want, "%s/node.ltprc", d);
    CHECK_EQ_STR(h.ltp.seats[0].file, want);
    bp_hostrc_free(&h);

    /* A malformed line names its file and line. */
    put(d, "node.ltprc", "1 32\na seat\n");
    CHECK_RC(node__config_read(d, NULL, 0, &h, &nc, err, sizeof err), TERN_ESYNTAX);
    snprintf(want, sizeof want,
             "%s/node.ltprc:2: 'a seat' takes one LSI command, got none; expected \"a "
             "seat '<LSI command>'\", e.g. a seat 'udplsi 127.0.0.1:1113'",
             d);
    CHECK_EQ_STR(err, want);
    bp_hostrc_free(&h);
}

TEST(config_host_rc_first)
{
    const char *d = subdir("both");
    put(d, "host.rc", "## begin ionadmin\n1 9\n## end ionadmin\n");
    put(d, "node.ionrc", ionrc);
    bp_hostrc h;
    node_config nc;
    char err[1024], want[PATH_MAX + 256];
    CHECK_MSG(node__config_read(d, NULL, 0, &h, &nc, err, sizeof err) == 0, "%s", err);
    CHECK_EQ_U64(bp_plan_node(h.plan), 9);
    snprintf(want, sizeof want, "%s/host.rc", d);
    CHECK_EQ_STR(nc.used, want);
    CHECK_MSG(strstr(nc.note, "host.rc is read; node.ionrc and the other admin files"),
              "%s", nc.note);
    bp_hostrc_free(&h);

    /* Naming an admin file reads its set, even beside a host.rc. */
    char named[PATH_MAX + 32];
    snprintf(named, sizeof named, "%s/node.ionrc", d);
    CHECK_MSG(node__config_read(d, named, 0, &h, &nc, err, sizeof err) == 0, "%s", err);
    CHECK_EQ_U64(bp_plan_node(h.plan), 7);
    bp_hostrc_free(&h);
}

TEST(config_other_stems)
{
    /* ION's own configurations name the set after the host (host1.ionrc) */
    const char *d = subdir("stem");
    put(d, "host1.ionrc", ionrc);
    put(d, "host1.ltprc", ltprc);
    bp_hostrc h;
    node_config nc;
    char err[1024], want[PATH_MAX + 512];
    CHECK_MSG(node__config_read(d, NULL, 0, &h, &nc, err, sizeof err) == 0, "%s", err);
    snprintf(want, sizeof want, "%s/host1.ionrc, host1.ltprc", d);
    CHECK_EQ_STR(nc.used, want);
    bp_hostrc_free(&h);

    /* two sets: say which, and how to pick one */
    put(d, "host2.ionrc", "1 2\n");
    CHECK_RC(node__config_read(d, NULL, 0, &h, &nc, err, sizeof err), TERN_EEXIST);
    CHECK_MSG(strstr(err, "no host.rc and several ionadmin files (") &&
                  strstr(err, "host1.ionrc") && strstr(err, "host2.ionrc") &&
                  strstr(err, "or name one: tern start"),
              "%s", err);
    bp_hostrc_free(&h);
    char named[PATH_MAX + 32];
    snprintf(named, sizeof named, "%s/host2.ionrc", d);
    CHECK_MSG(node__config_read(d, named, 0, &h, &nc, err, sizeof err) == 0, "%s", err);
    CHECK_EQ_U64(bp_plan_node(h.plan), 2);
    CHECK(!h.has_ltp);
    bp_hostrc_free(&h);

    /* a file of a set whose ionadmin file is missing */
    snprintf(named, sizeof named, "%s/host3.ltprc", d);
    put(d, "host3.ltprc", ltprc);
    CHECK_RC(node__config_read(d, named, 0, &h, &nc, err, sizeof err), TERN_ENOTFOUND);
    snprintf(want, sizeof want,
             "%s/host3.ionrc: no such file; a node read from ION's admin files needs its "
             "ionadmin file (host3.ionrc)",
             d);
    CHECK_EQ_STR(err, want);
    bp_hostrc_free(&h);

    /* nothing at all */
    const char *e = subdir("empty");
    CHECK_RC(node__config_read(e, NULL, 0, &h, &nc, err, sizeof err), TERN_ENOTFOUND);
    snprintf(want, sizeof want,
             "%s: no host.rc and no node.ionrc; expected an ionstart host.rc, or ION's "
             "admin files node.ionrc, node.ltprc, node.bprc, node.ipnrc (node.ionsecrc, "
             "...)",
             e);
    CHECK_EQ_STR(err, want);
    bp_hostrc_free(&h);
}

static int ionconfig(const char *text, sdr_profile *p, node_notes *notes, char *err,
                     size_t errlen)
{
    memset(p, 0, sizeof *p);
    p->heap_size = NODE_DEFAULT_HEAP;
    p->mode = SDR_DURABLE;
    err[0] = '\0';
    return node__ionconfig_parse("n.ionconfig", text, strlen(text), "/n", p, notes, err,
                                 errlen);
}

/* A misspelt parameter Tern uses is refused naming the one meant (its
 * setting would be lost); ION's others and unknown names warn. */
TEST(ionconfig_misspelt_parameters)
{
    sdr_profile p;
    node_notes w = {0};
    char err[512];
    CHECK_RC(ionconfig("# heap\nheapWordz 50000000\n", &p, &w, err, sizeof err),
             TERN_ESYNTAX);
    CHECK_MSG(strstr(err, "n.ionconfig:2: unknown ionconfig parameter 'heapWordz' (did "
                          "you mean 'heapWords'?)") == err,
              "%s", err);
    CHECK_RC(ionconfig("heapwords 50000000\n", &p, &w, err, sizeof err), TERN_ESYNTAX);
    CHECK_MSG(strstr(err, "(did you mean 'heapWords'?)"), "%s", err);
    CHECK_RC(ionconfig("configFlag 1\n", &p, &w, err, sizeof err), TERN_ESYNTAX);
    CHECK_MSG(strstr(err, "(did you mean 'configFlags'?)"), "%s", err);
    CHECK_EQ_INT(w.n, 0);
    /* ION's own parameters, a typo of one, and an unknown name: warnings */
    CHECK_OK(ionconfig("wmSize 5000000\nsdrNmae x\nfrobnicate 3\nheapWords 1000000\n", &p,
                       &w, err, sizeof err));
    CHECK_EQ_U64(p.heap_size, 8000000);
    CHECK_EQ_INT(w.n, 3);
    CHECK_EQ_STR(w.v[0].text,
                 "n.ionconfig:1: ionconfig 'wmSize' accepted but not used by "
                 "Tern");
    CHECK_EQ_STR(w.v[1].text, "n.ionconfig:2: unknown ionconfig parameter 'sdrNmae' (did "
                              "you mean 'sdrName'?): ignored");
    CHECK_EQ_STR(w.v[2].text, "n.ionconfig:3: unknown ionconfig parameter 'frobnicate': "
                              "ignored");
    CHECK_EQ_INT(w.v[2].level, TERN_LOG_WARN);
    node__notes_free(&w);
}

/* A heap below Tern's smallest is made the smallest, and the warning says so. */
TEST(ionconfig_small_heap_said)
{
    sdr_profile p;
    node_notes w = {0};
    char err[512];
    CHECK_OK(ionconfig("heapWords 10\n", &p, &w, err, sizeof err));
    CHECK_EQ_U64(p.heap_size, 1u << 20);
    CHECK_EQ_INT(w.n, 1);
    CHECK_EQ_STR(w.v[0].text, "n.ionconfig:1: heapWords 10 (80 bytes) is below Tern's "
                              "smallest heap: the heap is 1 MiB (heapWords 131072)");
    node__notes_free(&w);
    CHECK_OK(ionconfig("heapWords 131072\n", &p, &w, err, sizeof err));
    CHECK_EQ_U64(p.heap_size, 1u << 20);
    CHECK_EQ_INT(w.n, 0);
}
