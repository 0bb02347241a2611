/* The configuration file and key files: every command read, every error
 * reported as file:line: what was wrong, keys written with safe modes and
 * never overwritten, a secret key others can read refused. */
#include <errno.h>
#include <sys/stat.h>

#include "nf_test.h"

static char dir[512], skp[600], pkp[600];

static void keys(void)
{
    snprintf(dir, sizeof dir, "%s", tt_tmpdir());
    snprintf(skp, sizeof skp, "%s/pub.key", dir);
    snprintf(pkp, sizeof pkp, "%s/pub.pub", dir);
    uint8_t pk[32], sk[64];
    CHECK_OK(nf_keygen(pk, sk));
    nf_err e;
    CHECK_OK(nf_key_write_files(skp, pkp, pk, sk, &e));
}

static nf_config *parse(const char *text, int want_rc)
{
    nf_config *c = NULL;
    int rc = nf_config_parse(&c, "nf.conf", text, strlen(text), dir);
    CHECK_MSG(rc == want_rc, "rc %d (%s), want %d; first diag: %s", rc, tern_strerror(rc),
              want_rc, c && nf_config_diag_count(c) ? nf_config_diag_at(c, 0) : "-");
    CHECK(c);
    return c;
}

TEST(keygen_files_modes_no_overwrite_read_back)
{
    keys();
    struct stat st;
    CHECK(stat(skp, &st) == 0);
    CHECK_EQ_INT(st.st_mode & 0777, 0600);
    CHECK(stat(pkp, &st) == 0);
    CHECK_EQ_INT(st.st_mode & 0777, 0644);
    uint8_t pk[32], sk[64], pk2[32], sk2[64];
    nf_err e;
    CHECK_OK(nf_key_read_secret(skp, sk, &e));
    CHECK_OK(nf_key_read_public(pkp, pk, &e));
    CHECK_EQ_MEM(sk + 32, pk, 32); /* the pair belongs together */
    CHECK_OK(nf_keygen(pk2, sk2));
    CHECK_RC(nf_key_write_files(skp, pkp, pk2, sk2, &e), TERN_EEXIST);
    CHECK_MSG(strstr(e.text, "not overwriting"), "%s", e.text);
    uint8_t again[64];
    CHECK_OK(nf_key_read_secret(skp, again, &e));
    CHECK_EQ_MEM(again, sk, 64);
    /* a readable secret key is refused */
    chmod(skp, 0640);
    CHECK_RC(nf_key_read_secret(skp, again, &e), -EPERM);
    CHECK_MSG(strstr(e.text, "chmod 600"), "%s", e.text);
    /* garbage in a key file */
    FILE *f = fopen(pkp, "w");
    fputs("newsfeed-ed25519-public zz\n", f);
    fclose(f);
    CHECK_RC(nf_key_read_public(pkp, pk, &e), TERN_EMALFORMED);
    /* hex inline */
    char hex[65];
    for (int i = 0; i < 32; i++)
        sprintf(hex + 2 * i, "%02x", pk2[i]);
    CHECK_OK(nf_key_read_public(hex, pk, &e));
    CHECK_EQ_MEM(pk, pk2, 32);
}

TEST(full_config_read)
{
    keys();
    char text[4096];
    snprintf(text, sizeof text,
             "# publisher side\n"
             "publisher pub.example\n"
             "secret-key pub.key\n"
             "trust pub.example pub.pub   # ourselves\n"
             "group comp.lang.c 7\n"
             "group comp.* imc:8\n"
             "group * 9\n"
             "spool spool\n"
             "state /var/tmp/nf.state\n"
             "nntp-listen 127.0.0.1:1190\n"
             "max-article-size 64k\n"
             "compression-level 9\n");
    nf_config *c = parse(text, 0);
    CHECK_EQ_U64(nf_config_diag_count(c), 0);
    CHECK_EQ_STR(nf_config_publisher(c), "pub.example");
    uint8_t sk[64];
    CHECK_OK(nf_config_secret_key(c, sk));
    CHECK_EQ_U64(nf_trust_count(nf_config_trust(c)), 1);
    char want[700];
    snprintf(want, sizeof want, "%s/spool", dir);
    CHECK_EQ_STR(nf_config_spool(c), want);
    CHECK_EQ_STR(nf_config_state(c), "/var/tmp/nf.state");
    CHECK_EQ_STR(nf_config_nntp_listen(c), "127.0.0.1:1190");
    nf_limits l = nf_config_limits(c);
    CHECK_EQ_U64(l.max_article, 65536);
    CHECK_EQ_U64(l.max_decompressed, 65536); /* follows max-article-size */
    CHECK_EQ_INT(nf_config_compression_level(c), 9);
    uint32_t g;
    CHECK_OK(nf_config_group_for(c, "comp.lang.c", &g));
    CHECK_EQ_U64(g, 7);
    CHECK_OK(nf_config_group_for(c, "comp.lang.python", &g));
    CHECK_EQ_U64(g, 8);
    CHECK_OK(nf_config_group_for(c, "comp", &g)); /* "comp.*" is below comp only */
    CHECK_EQ_U64(g, 9);
    CHECK_EQ_U64(nf_config_imc_count(c), 3);
    CHECK_EQ_U64(nf_config_imc_at(c, 1), 8);
    nf_config_free(c);
    /* no catch-all: unmapped groups are not found */
    c = parse("group comp.* 8\nmax-decompressed-size 2M\n", 0);
    CHECK_RC(nf_config_group_for(c, "alt.test", &g), TERN_ENOTFOUND);
    CHECK_EQ_U64(nf_config_limits(c).max_decompressed, 2u << 20);
    CHECK_EQ_U64(nf_config_limits(c).max_article, NF_DEFAULT_MAX_ARTICLE);
    CHECK_EQ_INT(nf_config_compression_level(c), 1);
    CHECK_RC(nf_config_secret_key(c, sk), TERN_ENOTFOUND);
    nf_config_free(c);
}

TEST(errors_name_file_line)
{
    keys();
    chmod(skp, 0644);
    static const struct {
        const char *text, *diag;
    } bad[] = {
        {"bogus 1\n", "nf.conf:1: unknown command 'bogus'"},
        {"\n\npublisher\n", "nf.conf:3: publisher takes 1 argument, got 0"},
        {"publisher a b\n", "nf.conf:1: publisher takes 1 argument, got 2"},
        {"publisher bad/id\n", "nf.conf:1: bad publisher ID 'bad/id'"},
        {"publisher a\npublisher b\n", "nf.conf:2: publisher given twice"},
        {"group comp..x 1\n", "nf.conf:1: bad newsgroup pattern 'comp..x'"},
        {"group comp.x 0\n", "nf.conf:1: bad imc group '0'"},
        {"group comp.x seven\n", "nf.conf:1: bad imc group 'seven'"},
        {"max-article-size 12q\n", "nf.conf:1: bad size '12q'"},
        {"max-article-size 99999999999\n", "nf.conf:1: bad size"},
        {"max-decompressed-size 0\n", "nf.conf:1: bad size '0'"},
        {"nntp-listen localhost\n", "nf.conf:1: bad address 'localhost'"},
        {"nntp-listen :119\n", "nf.conf:1: bad address"},
        {"secret-key missing.key\n", "nf.conf:1: "},
        {"secret-key pub.key\n", "nf.conf:1: "},
        {"trust pub.example nothere.pub\n", "nf.conf:1: "},
        {"spool a\nspool b\n", "nf.conf:2: spool given twice"},
        {"compression-level 10\n", "nf.conf:1: bad compression level '10'"},
        {"trust x 'unterminated\n", "nf.conf:1:"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        nf_config *c = parse(bad[i].text, TERN_ESYNTAX);
        CHECK_MSG(nf_config_diag_count(c) >= 1, "case %zu: no diagnostic", i);
        const char *d = nf_config_diag_at(c, 0);
        CHECK_MSG(strncmp(d, bad[i].diag, strlen(bad[i].diag)) == 0,
                  "case %zu: '%s' does not start '%s'", i, d, bad[i].diag);
        nf_config_free(c);
    }
    /* the world-readable secret key: says so and how to fix it */
    nf_config *c = parse("secret-key pub.key\n", TERN_ESYNTAX);
    CHECK_MSG(strstr(nf_config_diag_at(c, 0), "chmod 600"), "%s",
              nf_config_diag_at(c, 0));
    nf_config_free(c);
    /* several errors: all reported, in line order */
    c = parse("publisher ok\nfoo\nbar\ngroup x 1\nmax-article-size k\n", TERN_ESYNTAX);
    CHECK_EQ_U64(nf_config_diag_count(c), 3);
    CHECK(strncmp(nf_config_diag_at(c, 0), "nf.conf:2:", 10) == 0);
    CHECK(strncmp(nf_config_diag_at(c, 1), "nf.conf:3:", 10) == 0);
    CHECK(strncmp(nf_config_diag_at(c, 2), "nf.conf:5:", 10) == 0);
    nf_config_free(c);
}

TEST(load_from_file_relative_paths)
{
    keys();
    char path[700];
    snprintf(path, sizeof path, "%s/newsfeed.conf", dir);
    FILE *f = fopen(path, "w");
    fputs("publisher p\nsecret-key pub.key\nspool sp\n", f);
    fclose(f);
    nf_config *c;
    CHECK_OK(nf_config_load(&c, path));
    char want[700];
    snprintf(want, sizeof want, "%s/sp", dir);
    CHECK_EQ_STR(nf_config_spool(c), want);
    nf_config_free(c);
    snprintf(path, sizeof path, "%s/none.conf", dir);
    CHECK_RC(nf_config_load(&c, path), -ENOENT);
}
