/* The MIB loaders (ams_mib.h): ION's own files in both forms load to the
 * same MIB; bad input is refused with file, line, column and what was
 * expected, and nothing is half-loaded. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ams_mib.h"
#include "tern_test.h"

static ams_mib *load_vec(const char *name)
{
    char path[512], err[512];
    snprintf(path, sizeof path, "%s/ion/%s", TERN_TEST_VECTORS, name);
    ams_mib *m = NULL;
    int rc = ams_mib_load_file(path, &m, err, sizeof err);
    CHECK_MSG(rc == 0, "%s: rc %d: %s", name, rc, err);
    return m;
}

static int load_err(const char *text, char *err, size_t cap)
{
    ams_mib *m = (ams_mib *)1;
    int rc = ams_mib_load_text(text, strlen(text), "t.amsrc", &m, err, cap);
    CHECK(m == NULL || rc == 0);
    if (rc == 0)
        ams_mib_free(m);
    return rc;
}

/* Everything ION's sana MIB says, as Tern's tables hold it. */
static void check_sana(const ams_mib *m)
{
    CHECK_EQ_INT(ams_mib_continuum_nbr(m), 9999);
    CHECK_EQ_STR(ams_mib_ptsname(m), "dgr");
    int n;
    const char *const *cs = ams_mib_cs_endpoints(m, &n);
    CHECK_EQ_INT(n, 1);
    CHECK_EQ_STR(cs[0], "@:2357");
    const ams_mib_continuum *c = ams_mib_continua(m, &n);
    CHECK_EQ_INT(n, 2);
    CHECK_EQ_INT(c[0].nbr, 9999);
    CHECK_EQ_STR(c[0].name, "local");
    CHECK_EQ_STR(ams_mib_continuum_get(m, 32767)->name, "ion32767");
    CHECK_EQ_STR(ams_mib_continuum_named(m, "ion32767")->desc, "ION node 32767");
    const char *const *apps = ams_mib_applications(m, &n);
    CHECK_EQ_INT(n, 1);
    CHECK_EQ_STR(apps[0], "amsdemo");
    const ams_mib_venture *v = ams_mib_venture_find(m, "amsdemo", "test");
    CHECK(v != NULL);
    CHECK(ams_mib_venture_find(m, "amsdemo", "other") == NULL);
    CHECK_EQ_INT(v->nbr, 19);
    CHECK_EQ_INT(v->net_is_tree, 1);
    CHECK_EQ_STR(v->gweid, "ipn:9999.19");
    /* 11 roles plus ION's own RAMS (1) and stop (255) */
    CHECK_EQ_INT(v->n_roles, 13);
    CHECK_EQ_STR(ams_mib_role_get(v, 1)->name, "RAMS");
    CHECK_EQ_STR(ams_mib_role_get(v, 255)->name, "stop");
    CHECK_EQ_INT(ams_mib_role_named(v, "benchr")->nbr, 7);
    CHECK_EQ_STR(ams_mib_role_get(v, 87)->name, "amsd");
    CHECK(ams_mib_role_get(v, 10) == NULL);
    /* 7 subjects plus "everything" (0) */
    CHECK_EQ_INT(v->n_subjects, 8);
    CHECK_EQ_STR(ams_mib_subject_get(v, 0)->name, "everything");
    CHECK_EQ_STR(ams_mib_subject_get(v, 3)->desc, "numbered msgs");
    CHECK_EQ_INT(ams_mib_subject_named(v, "amsmib")->nbr, 89);
    CHECK(ams_mib_may_send(v, 3, 6) && ams_mib_may_receive(v, 3, 7));
    CHECK(!ams_mib_may_send(v, 42, 6));
    /* the root unit and "orbiters" below it */
    CHECK_EQ_INT(v->n_units, 2);
    CHECK_EQ_STR(ams_mib_unit_get(v, 0)->name, "");
    CHECK_EQ_INT(ams_mib_unit_named(v, "orbiters")->super, 0);
    CHECK(ams_mib_unit_within(v, 1, 0) && !ams_mib_unit_within(v, 0, 1));
    /* the local message space and 32767's */
    CHECK_EQ_INT(v->n_msgspaces, 2);
    const ams_mib_msgspace *s = ams_mib_msgspace_get(v, 32767);
    CHECK(s != NULL);
    CHECK_EQ_INT(s->neighbor, 1);
    CHECK_EQ_INT(s->gw_proto, AMS_MIB_GW_BP);
    CHECK_EQ_STR(s->gweid, "ipn:32767.19");
    CHECK_EQ_INT(ams_mib_msgspace_get(v, 9999)->neighbor, 0);
    /* no amsendpoint: every transport at "@", as ION */
    const ams_mib_epspec *e = ams_mib_ams_endpoints(m, &n);
    CHECK_EQ_INT(n, 2);
    CHECK_EQ_STR(e[0].ts, "udp");
    CHECK_EQ_STR(e[0].epspec, "@");
    ams_mib_warnings(m, &n);
    CHECK_EQ_INT(n, 0);
}

TEST(ions_sana_mib_loads_the_same_from_xml_and_amsrc)
{
    ams_mib *x = load_vec("sana-amsmib.xml"), *r = load_vec("sana-mib.amsrc");
    CHECK(x && r);
    check_sana(x);
    check_sana(r);
    ams_mib_free(x);
    ams_mib_free(r);
}

TEST(ions_two_node_rams_mibs_load)
{
    ams_mib *a = load_vec("rams-node2-mib.amsrc"), *b = load_vec("rams-node3-mib.amsrc");
    CHECK(a && b);
    CHECK_EQ_INT(ams_mib_continuum_nbr(a), 2);
    CHECK_EQ_INT(ams_mib_continuum_nbr(b), 3);
    const ams_mib_venture *v = ams_mib_venture_find(a, "amsdemo", "test");
    CHECK_EQ_INT(v->nbr, 9);
    CHECK_EQ_STR(ams_mib_msgspace_get(v, 3)->gweid, "ipn:3.9");
    CHECK_EQ_STR(v->gweid, "ipn:2.9");
    int n;
    CHECK_EQ_STR(ams_mib_cs_endpoints(b, &n)[0], "127.0.0.1:2503");
    ams_mib_free(a);
    ams_mib_free(b);
}

TEST(ions_built_in_test_mib)
{
    ams_mib *m = NULL;
    char err[256];
    CHECK_OK(ams_mib_load_file("@", &m, err, sizeof err));
    const ams_mib_venture *v = ams_mib_venture_find(m, "amsdemo", "test");
    CHECK_EQ_INT(v->nbr, 1);
    CHECK_EQ_INT(ams_mib_role_named(v, "amsd")->nbr, 96);
    CHECK_EQ_INT(ams_mib_subject_named(v, "text")->nbr, 1);
    ams_mib_free(m);
}

TEST(units_nest_by_name_and_role_lists_are_enforced)
{
    const char *t = "*ams_mib_init continuum_nbr=5 ptsname=udp\n"
                    "+ams_mib_add\n"
                    "*application name=app\n"
                    "+venture nbr=3 appname=app authname=me net_config=mesh "
                    "gweid=bp@ipn:5.77\n"
                    "*role nbr=2 name=a\n"
                    "*role nbr=3 name=b\n"
                    "+subject nbr=600 name=s\n"
                    "*sender name=a\n"
                    "*receiver name=b\n"
                    "-subject\n"
                    "*unit nbr=1 name=mars\n"
                    "*unit nbr=2 name=mars.orbit\n"
                    "*unit nbr=3 name=mars.orbit.low\n"
                    "*unit nbr=4 name=moon\n"
                    "-venture\n"
                    "-ams_mib_add\n";
    ams_mib *m = NULL;
    char err[256];
    CHECK_OK(ams_mib_load_text(t, strlen(t), "t", &m, err, sizeof err));
    const ams_mib_venture *v = ams_mib_venture_find(m, "app", "me");
    CHECK_EQ_INT(v->net_is_tree, 0);
    CHECK_EQ_STR(v->gweid, "ipn:5.77");
    CHECK_EQ_INT(ams_mib_unit_get(v, 3)->super, 2);
    CHECK_EQ_INT(ams_mib_unit_get(v, 2)->super, 1);
    CHECK_EQ_INT(ams_mib_unit_get(v, 4)->super, 0);
    CHECK(ams_mib_unit_within(v, 3, 1));
    CHECK(!ams_mib_unit_within(v, 3, 4));
    /* subject 600: above ION's 500, Tern takes it */
    CHECK(ams_mib_may_send(v, 600, 2) && !ams_mib_may_send(v, 600, 3));
    CHECK(ams_mib_may_receive(v, 600, 3) && !ams_mib_may_receive(v, 600, 2));
    ams_mib_free(m);
}

TEST(change_and_delete_work_on_what_is_there)
{
    const char *t =
        "<ams_mib_load>\n"
        " <ams_mib_init continuum_nbr=\"1\" ptsname=\"tcp\"/>\n"
        " <ams_mib_add>\n"
        "  <continuum nbr=\"2\" name=\"two\"/>\n"
        "  <csendpoint epspec=\"a:1\"/><csendpoint epspec=\"b:2\"/>\n"
        "  <application name=\"app\"/>\n"
        "  <venture nbr=\"1\" appname=\"app\" authname=\"x\">\n"
        "   <role nbr=\"2\" name=\"r\"/><role nbr=\"3\" name=\"q\"/>\n"
        "   <subject nbr=\"1\" name=\"s\" desc=\"old\"><sender name=\"r\"/></subject>\n"
        "   <unit nbr=\"1\" name=\"u\"/>\n"
        "   <msgspace nbr=\"2\"/>\n"
        "  </venture>\n"
        " </ams_mib_add>\n"
        " <ams_mib_change>\n"
        "  <venture appname=\"app\" authname=\"x\" net_config=\"mesh\">\n"
        "   <subject name=\"s\" desc=\"new\"/>\n"
        "   <msgspace nbr=\"2\" neighbor=\"0\"/>\n"
        "  </venture>\n"
        " </ams_mib_change>\n"
        " <ams_mib_delete>\n"
        "  <csendpoint epspec=\"a:1\"/>\n"
        "  <venture appname=\"app\" authname=\"x\">\n"
        "   <role name=\"q\"/>\n"
        "   <subject name=\"s\"><sender name=\"r\"/></subject>\n"
        "   <unit name=\"u\"/>\n"
        "  </venture>\n"
        " </ams_mib_delete>\n"
        "</ams_mib_load>\n";
    ams_mib *m = NULL;
    char err[256];
    int rc = ams_mib_load_text(t, strlen(t), "t.xml", &m, err, sizeof err);
    CHECK_MSG(rc == 0, "%s", err);
    const ams_mib_venture *v = ams_mib_venture_find(m, "app", "x");
    CHECK_EQ_INT(v->net_is_tree, 0);
    CHECK_EQ_STR(ams_mib_subject_get(v, 1)->desc, "new");
    CHECK_EQ_INT(ams_mib_subject_get(v, 1)->n_senders,
                 0); /* the sender left, the subject stays */
    CHECK_EQ_INT(ams_mib_msgspace_get(v, 2)->neighbor, 0);
    CHECK(ams_mib_role_named(v, "q") == NULL && ams_mib_role_named(v, "r") != NULL);
    CHECK(ams_mib_unit_named(v, "u") == NULL);
    int n;
    const char *const *cs = ams_mib_cs_endpoints(m, &n);
    CHECK_EQ_INT(n, 1);
    CHECK_EQ_STR(cs[0], "b:2");
    CHECK_EQ_STR(ams_mib_ptsname(m), "tcp");
    ams_mib_free(m);
}

TEST(security_attributes_are_accepted_with_a_warning)
{
    const char *t = "*ams_mib_init continuum_nbr=1 ptsname=dgr pubkey=cs.pub\n"
                    "+ams_mib_add\n"
                    "*application name=a privkey=k\n"
                    "+venture nbr=1 appname=a authname=b\n"
                    "*subject nbr=1 name=s symkey=sk marshal=mf\n"
                    "-venture\n"
                    "-ams_mib_add\n";
    ams_mib *m = NULL;
    char err[256];
    CHECK_OK(ams_mib_load_text(t, strlen(t), "k.amsrc", &m, err, sizeof err));
    int n;
    const char *const *w = ams_mib_warnings(m, &n);
    CHECK_EQ_INT(n, 4);
    CHECK_MSG(strstr(w[0], "k.amsrc:1:") && strstr(w[0], "pubkey='cs.pub' accepted"),
              "%s", w[0]);
    CHECK(strstr(w[3], "k.amsrc:5:") && strstr(w[3], "marshal"));
    ams_mib_free(m);
}

struct bad {
    const char *text, *want;
};

TEST(bad_mibs_name_the_place_and_what_was_expected)
{
    static const struct bad cases[] = {
        {"*ams_mib_init continuum_nbr=1 ptsname=dgr\n*ams_mib_ad\n",
         "t.amsrc:2:1: unknown element 'ams_mib_ad' (did you mean 'ams_mib_add'?)"},
        {"*ams_mib_init continuum_nbr=1 ptsname=dgr colour=red\n",
         "t.amsrc:1:43: ams_mib_init: unknown attribute 'colour'"},
        {"*ams_mib_init continuum_nbr=40000 ptsname=dgr\n",
         "t.amsrc:1:1: ams_mib_init: continuum_nbr='40000' is not a number 1..32767"},
        {"*ams_mib_init continuum_nbr=1x ptsname=dgr\n",
         "continuum_nbr='1x' is not a number"},
        {"*ams_mib_init ptsname=dgr\n", "ams_mib_init: missing attribute continuum_nbr"},
        {"*ams_mib_init continuum_nbr=1 ptsname=vmq\n", "ptsname='vmq'"},
        {"+ams_mib_add\n", "t.amsrc:1:1: ams_mib_add before ams_mib_init"},
        {"*ams_mib_init continuum_nbr=1 ptsname=dgr\n*application name=a\n",
         "t.amsrc:2:1: application outside ams_mib_add"},
        {"*ams_mib_init continuum_nbr=1 ptsname=dgr\n+ams_mib_add\n"
         "+venture nbr=1 appname=nope authname=x\n",
         "t.amsrc:3:1: venture 1: no application nope"},
        {"*ams_mib_init continuum_nbr=1 ptsname=dgr\n+ams_mib_add\n*application name=a\n"
         "+venture nbr=1 appname=a authname=x\n*role nbr=2 name=r\n*role nbr=2 name=s\n",
         "t.amsrc:6:1: role s: number 2 is role r already"},
        {"*ams_mib_init continuum_nbr=1 ptsname=dgr\n+ams_mib_add\n*application name=a\n"
         "+venture nbr=1 appname=a authname=x\n*role nbr=1 name=r\n",
         "role r: number 1 is the venture's own role RAMS"},
        {"*ams_mib_init continuum_nbr=1 ptsname=dgr\n+ams_mib_add\n*application name=a\n"
         "+venture nbr=1 appname=a authname=x\n+subject nbr=1 name=s\n*sender "
         "name=ghost\n",
         "t.amsrc:6:1: sender: venture 1 has no role ghost"},
        {"*ams_mib_init continuum_nbr=1 ptsname=dgr\n+ams_mib_add\n*application name=a\n"
         "+venture nbr=1 appname=a authname=x\n*msgspace nbr=7\n",
         "msgspace 7: no continuum 7"},
        {"*ams_mib_init continuum_nbr=1 ptsname=dgr\n+ams_mib_add\n*application name=a\n"
         "+venture nbr=1 appname=a authname=x\n*unit nbr=11 "
         "name=abcdefghijabcdefghijabcdefghijabc\n",
         "is longer than 32 characters"},
        {"*ams_mib_init continuum_nbr=1 ptsname=dgr\n+ams_mib_add\n*application name=a\n"
         "*role nbr=2 name=r\n",
         "t.amsrc:4:1: role outside a venture"},
        {"*ams_mib_init continuum_nbr=1 ptsname=dgr\n+ams_mib_add\n",
         "end of file with ams_mib_add still open"},
        {"*ams_mib_init continuum_nbr=1 ptsname=dgr\n-ams_mib_add\n",
         "t.amsrc:2:1: '-ams_mib_add' closes nothing"},
        {"*ams_mib_init continuum_nbr=1 ptsname=dgr\n+ams_mib_add\n*continuum nbr=2 "
         "name='unclosed\n",
         "the value's ' is not closed"},
        {"*ams_mib_init continuum_nbr=1 ptsname=dgr\n+ams_mib_delete\n*continuum "
         "name=local\n",
         "continuum local is the local one"},
        {"=x\n",
         "t.amsrc:1:1: a line starts with + (open), - (close) or * (open and close)"},
        {"", "no ams_mib_init"},
        {"<ams_mib_init continuum_nbr=\"1\" ptsname=\"dgr\"/>",
         "t.amsrc:1:1: the root element is ams_mib_load"},
        {"<ams_mib_load>\n <ams_mib_init continuum_nbr=\"1\" ptsname=\"dgr\">\n",
         "t.amsrc:3:1: XML: "},
        {"<ams_mib_load>\n  <ams_mib_init continuum_nbr=\"1\" ptsname=\"dgr\"/>\n"
         "  <ams_mib_add><continuum nbr=\"2\"/></ams_mib_add></ams_mib_load>",
         "t.amsrc:3:16: continuum: missing attribute name"},
        {"<ams_mib_load>hello<ams_mib_init continuum_nbr=\"1\" "
         "ptsname=\"dgr\"/></ams_mib_load>",
         "text 'hello"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char err[512] = "";
        int rc = load_err(cases[i].text, err, sizeof err);
        CHECK_MSG(rc == TERN_ESYNTAX, "case %zu: rc %d", i, rc);
        CHECK_MSG(strstr(err, cases[i].want) != NULL, "case %zu: got '%s', want '%s'", i,
                  err, cases[i].want);
    }
}

TEST(missing_file_is_named)
{
    ams_mib *m = (ams_mib *)1;
    char err[256];
    CHECK_RC(ams_mib_load_file("/nonexistent/amsmib.xml", &m, err, sizeof err), -ENOENT);
    CHECK(m == NULL);
    CHECK(strstr(err, "/nonexistent/amsmib.xml: cannot open the MIB"));
}
