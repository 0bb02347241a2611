/* Filestore requests (CCSDS 727.0-B-5 5.4.1.2, tables 5-17 and 5-18): every
 * action's success and failure statuses on the memfs, the "not performed"
 * rule after a failure, the responses' bytes, and on the posixfs, names
 * that would leave the root answered "not allowed" with nothing outside
 * touched. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cfdp_fs.h"
#include "cfdp_pdu.h"
#include "fs_contract.h"
#include "hex.h"
#include "tern_test.h"

static cfdp_lv lv(const char *s)
{
    cfdp_lv v = {(const uint8_t *)s, s ? (uint8_t)strlen(s) : 0};
    return v;
}

static cfdp_tlv req(unsigned action, const char *first, const char *second)
{
    cfdp_tlv t;
    memset(&t, 0, sizeof t);
    t.type = CFDP_TLV_FS_REQUEST;
    t.action = (uint8_t)action;
    t.first = lv(first);
    t.second = lv(second);
    return t;
}

static int run(const cfdp_fs *fs, unsigned action, const char *first, const char *second)
{
    cfdp_tlv t = req(action, first, second);
    return cfdp_fs_request_run(fs, &t);
}

static char *content(cfdp_memfs *m, const char *path)
{
    const uint8_t *d;
    size_t n;
    static char buf[256];
    if (cfdp_memfs_get(m, path, &d, &n))
        return NULL;
    CHECK(n < sizeof buf);
    if (n)
        memcpy(buf, d, n);
    buf[n] = 0;
    return buf;
}

TEST(fsreq_each_action_and_status)
{
    cfdp_memfs *m;
    cfdp_fs fs;
    CHECK_OK(cfdp_memfs_new(&m, &fs));
    CHECK_OK(cfdp_memfs_put(m, "a", "AAA", 3));
    CHECK_OK(cfdp_memfs_put(m, "b", "bb", 2));
    CHECK_OK(cfdp_memfs_put(m, "dir/inner", "i", 1));
    CHECK_OK(cfdp_memfs_put_pattern(m, "ro", 10, 1));

    /* create file: an empty file, an existing one truncated */
    CHECK_EQ_INT(run(&fs, CFDP_FS_CREATE_FILE, "new", NULL), CFDP_FS_SUCCESS);
    CHECK_EQ_STR(content(m, "new"), "");
    CHECK_OK(cfdp_memfs_put(m, "new", "xyz", 3));
    CHECK_EQ_INT(run(&fs, CFDP_FS_CREATE_FILE, "new", NULL), CFDP_FS_SUCCESS);
    CHECK_EQ_STR(content(m, "new"), "");
    CHECK_EQ_INT(run(&fs, CFDP_FS_CREATE_FILE, "nodir/x", NULL),
                 CFDP_FS_CREATE_NOT_ALLOWED);
    CHECK_EQ_INT(run(&fs, CFDP_FS_CREATE_FILE, "dir", NULL), CFDP_FS_CREATE_NOT_ALLOWED);
    CHECK_EQ_INT(run(&fs, CFDP_FS_CREATE_FILE, "ro", NULL), CFDP_FS_CREATE_NOT_ALLOWED);

    /* delete file */
    CHECK_EQ_INT(run(&fs, CFDP_FS_DELETE_FILE, "new", NULL), CFDP_FS_SUCCESS);
    CHECK(!fs_exists(&fs, "new"));
    CHECK_EQ_INT(run(&fs, CFDP_FS_DELETE_FILE, "new", NULL), CFDP_FS_DELETE_NO_FILE);
    CHECK_EQ_INT(run(&fs, CFDP_FS_DELETE_FILE, "dir", NULL), CFDP_FS_DELETE_NOT_ALLOWED);

    /* rename */
    CHECK_EQ_INT(run(&fs, CFDP_FS_RENAME_FILE, "b", "b2"), CFDP_FS_SUCCESS);
    CHECK_EQ_STR(content(m, "b2"), "bb");
    CHECK(!fs_exists(&fs, "b"));
    CHECK_EQ_INT(run(&fs, CFDP_FS_RENAME_FILE, "b", "b3"), CFDP_FS_RENAME_NO_OLD);
    CHECK_EQ_INT(run(&fs, CFDP_FS_RENAME_FILE, "b2", "a"), CFDP_FS_RENAME_NEW_EXISTS);
    CHECK_EQ_INT(run(&fs, CFDP_FS_RENAME_FILE, "b2", "dir"), CFDP_FS_RENAME_NEW_EXISTS);
    CHECK_EQ_INT(run(&fs, CFDP_FS_RENAME_FILE, "b2", "nodir/b"),
                 CFDP_FS_RENAME_NOT_ALLOWED);
    CHECK_EQ_INT(run(&fs, CFDP_FS_RENAME_FILE, "dir", "dir2"),
                 CFDP_FS_RENAME_NOT_ALLOWED);
    CHECK_EQ_STR(content(m, "a"), "AAA");

    /* append: the second file's bytes after the first's; the second stays */
    CHECK_EQ_INT(run(&fs, CFDP_FS_APPEND_FILE, "a", "b2"), CFDP_FS_SUCCESS);
    CHECK_EQ_STR(content(m, "a"), "AAAbb");
    CHECK_EQ_STR(content(m, "b2"), "bb");
    CHECK_EQ_INT(run(&fs, CFDP_FS_APPEND_FILE, "a", "a"), CFDP_FS_SUCCESS);
    CHECK_EQ_STR(content(m, "a"), "AAAbbAAAbb");
    CHECK_EQ_INT(run(&fs, CFDP_FS_APPEND_FILE, "none", "b2"), CFDP_FS_APPEND_NO_FIRST);
    CHECK_EQ_INT(run(&fs, CFDP_FS_APPEND_FILE, "a", "none"), CFDP_FS_APPEND_NO_SECOND);
    CHECK_EQ_INT(run(&fs, CFDP_FS_APPEND_FILE, "ro", "b2"), CFDP_FS_APPEND_NOT_ALLOWED);
    CHECK_EQ_INT(run(&fs, CFDP_FS_APPEND_FILE, "dir", "b2"), CFDP_FS_APPEND_NOT_ALLOWED);
    CHECK_EQ_INT(run(&fs, CFDP_FS_APPEND_FILE, "b2", "dir"), CFDP_FS_APPEND_NOT_ALLOWED);

    /* replace: the first file gets the second's content */
    CHECK_EQ_INT(run(&fs, CFDP_FS_REPLACE_FILE, "a", "b2"), CFDP_FS_SUCCESS);
    CHECK_EQ_STR(content(m, "a"), "bb");
    CHECK_EQ_INT(run(&fs, CFDP_FS_REPLACE_FILE, "a", "ro"), CFDP_FS_SUCCESS);
    const uint8_t *d;
    size_t n;
    CHECK_OK(cfdp_memfs_get(m, "a", &d, &n));
    CHECK_EQ_U64(n, 10);
    for (size_t i = 0; i < n; i++)
        CHECK_EQ_INT(d[i], cfdp_memfs_pattern_byte(1, i));
    CHECK_EQ_INT(run(&fs, CFDP_FS_REPLACE_FILE, "none", "b2"), CFDP_FS_REPLACE_NO_FIRST);
    CHECK_EQ_INT(run(&fs, CFDP_FS_REPLACE_FILE, "a", "none"), CFDP_FS_REPLACE_NO_SECOND);
    CHECK_EQ_INT(run(&fs, CFDP_FS_REPLACE_FILE, "ro", "a"), CFDP_FS_REPLACE_NOT_ALLOWED);

    /* directories */
    CHECK_EQ_INT(run(&fs, CFDP_FS_CREATE_DIR, "d2", NULL), CFDP_FS_SUCCESS);
    cfdp_fs_stat st;
    CHECK_OK(fs.ops->stat(fs.ctx, "d2", &st));
    CHECK(st.is_dir);
    CHECK_EQ_INT(run(&fs, CFDP_FS_CREATE_DIR, "d2", NULL), CFDP_FS_MKDIR_CANNOT);
    CHECK_EQ_INT(run(&fs, CFDP_FS_CREATE_DIR, "x/y", NULL), CFDP_FS_MKDIR_CANNOT);
    CHECK_EQ_INT(run(&fs, CFDP_FS_REMOVE_DIR, "d2", NULL), CFDP_FS_SUCCESS);
    CHECK(!fs_exists(&fs, "d2"));
    CHECK_EQ_INT(run(&fs, CFDP_FS_REMOVE_DIR, "d2", NULL), CFDP_FS_RMDIR_NO_DIR);
    CHECK_EQ_INT(run(&fs, CFDP_FS_REMOVE_DIR, "dir", NULL), CFDP_FS_RMDIR_NOT_ALLOWED);
    CHECK_EQ_INT(run(&fs, CFDP_FS_REMOVE_DIR, "a", NULL), CFDP_FS_RMDIR_NOT_ALLOWED);

    /* deny: remove if present, succeed if absent */
    CHECK_EQ_INT(run(&fs, CFDP_FS_DENY_FILE, "b2", NULL), CFDP_FS_SUCCESS);
    CHECK(!fs_exists(&fs, "b2"));
    CHECK_EQ_INT(run(&fs, CFDP_FS_DENY_FILE, "b2", NULL), CFDP_FS_SUCCESS);
    CHECK_EQ_INT(run(&fs, CFDP_FS_DENY_FILE, "dir", NULL), CFDP_FS_DENY_NOT_ALLOWED);
    CHECK_OK(fs.ops->mkdir(fs.ctx, "e"));
    CHECK_EQ_INT(run(&fs, CFDP_FS_DENY_DIR, "e", NULL), CFDP_FS_SUCCESS);
    CHECK(!fs_exists(&fs, "e"));
    CHECK_EQ_INT(run(&fs, CFDP_FS_DENY_DIR, "e", NULL), CFDP_FS_SUCCESS);
    CHECK_EQ_INT(run(&fs, CFDP_FS_DENY_DIR, "dir", NULL), CFDP_FS_DENY_NOT_ALLOWED);
    CHECK_EQ_INT(run(&fs, CFDP_FS_DENY_DIR, "a", NULL), CFDP_FS_DENY_NOT_ALLOWED);

    /* names no filestore takes: escapes, a NUL inside */
    cfdp_tlv t = req(CFDP_FS_CREATE_FILE, "x", NULL);
    t.first.ptr = (const uint8_t *)"a\0b";
    t.first.len = 3;
    CHECK_EQ_INT(cfdp_fs_request_run(&fs, &t), CFDP_FS_CREATE_NOT_ALLOWED);
    CHECK_OK(fs.ops->stat(fs.ctx, "a", &st)); /* not truncated as "a" */
    CHECK_EQ_U64(st.size, 10);
    CHECK_EQ_INT(run(&fs, CFDP_FS_CREATE_FILE, "../x", NULL), CFDP_FS_CREATE_NOT_ALLOWED);
    CHECK_EQ_INT(run(&fs, CFDP_FS_DELETE_FILE, "/a", NULL), CFDP_FS_DELETE_NOT_ALLOWED);
    CHECK_EQ_INT(run(&fs, CFDP_FS_RENAME_FILE, "a", "../a"), CFDP_FS_RENAME_NOT_ALLOWED);
    CHECK(fs_exists(&fs, "a"));
    /* not a filestore request */
    t.type = CFDP_TLV_MSG_TO_USER;
    CHECK_RC(cfdp_fs_request_run(&fs, &t), -EINVAL);
    CHECK_EQ_INT(cfdp_memfs_open_files(m), 0);
    cfdp_memfs_free(m);
}

TEST(fsreq_list_not_performed_after_a_failure)
{
    cfdp_memfs *m;
    cfdp_fs fs;
    CHECK_OK(cfdp_memfs_new(&m, &fs));
    CHECK_OK(cfdp_memfs_put(m, "in.txt", "data", 4));
    cfdp_tlv items[7];
    items[0] = req(CFDP_FS_CREATE_DIR, "out", NULL);
    items[1] = req(CFDP_FS_RENAME_FILE, "in.txt", "out/in.txt");
    memset(&items[2], 0, sizeof items[2]); /* a message to user: skipped */
    items[2].type = CFDP_TLV_MSG_TO_USER;
    items[2].data = lv("hello");
    items[3] = req(CFDP_FS_DELETE_FILE, "missing", NULL); /* fails: status 1 */
    items[4] = req(CFDP_FS_CREATE_DIR, "never", NULL);
    items[5] = req(CFDP_FS_DELETE_FILE, "out/in.txt", NULL);
    items[6] = req(CFDP_FS_RENAME_FILE, "out/in.txt", "x");
    cfdp_tlvs list = {items, 7, NULL, 0};
    uint8_t out[512];
    size_t len, count;
    CHECK_OK(cfdp_fs_requests_execute(NULL, &fs, &list, out, sizeof out, &len, &count));
    CHECK_EQ_U64(count, 6);
    /* the requests after the failure were not performed */
    CHECK(!fs_exists(&fs, "never"));
    CHECK_EQ_STR(content(m, "out/in.txt"), "data");
    /* the responses, in order: decode each */
    const unsigned want_action[] = {CFDP_FS_CREATE_DIR,  CFDP_FS_RENAME_FILE,
                                    CFDP_FS_DELETE_FILE, CFDP_FS_CREATE_DIR,
                                    CFDP_FS_DELETE_FILE, CFDP_FS_RENAME_FILE};
    const unsigned want_status[] = {0, 0, CFDP_FS_DELETE_NO_FILE, 15, 15, 15};
    const char *want_first[] = {"out",   "in.txt",     "missing",
                                "never", "out/in.txt", "out/in.txt"};
    size_t pos = 0;
    for (size_t i = 0; i < 6; i++) {
        cfdp_tlv r;
        size_t used;
        const char *why = NULL;
        CHECK_OK(cfdp_tlv_decode(out + pos, len - pos, &r, &used, &why));
        CHECK_EQ_INT(r.type, CFDP_TLV_FS_RESPONSE);
        CHECK_EQ_INT(r.action, want_action[i]);
        CHECK_EQ_INT(r.status, want_status[i]);
        CHECK_EQ_INT(r.first.len, strlen(want_first[i]));
        CHECK_EQ_MEM(r.first.ptr, want_first[i], r.first.len);
        CHECK_EQ_INT(r.data.len, 0);
        CHECK_EQ_STR(cfdp_fs_status_name(r.action, r.status),
                     i < 2 ? "successful" : cfdp_fs_status_name(r.action, r.status));
        pos += used;
    }
    CHECK_EQ_U64(pos, len);
    CHECK_EQ_STR(cfdp_fs_status_name(CFDP_FS_CREATE_DIR, 15), "not performed");
    cfdp_memfs_free(m);
}

TEST(fsreq_response_bytes)
{
    /* Filestore response TLV (5.4.1.3): type 01, length, then action code
     * (4 bits) | status (4 bits), first name LV, second name LV (rename,
     * append, replace only), filestore message LV (empty here):
     *   create file "a", success:  01 04 | 00 | 01 61 | 00
     *   rename "a" -> "bc", new exists (2): 01 07 | 22 | 01 61 | 02 62 63 | 00
     *   delete "zz" after the failure (not performed, 1111): 01 05 | 1F | 02 7A 7A | 00
     * and with ION's empty second name (opts.empty_second) the one-name
     * actions carry 00 before the message: 01 05 | 00 | 01 61 | 00 | 00. */
    cfdp_memfs *m;
    cfdp_fs fs;
    CHECK_OK(cfdp_memfs_new(&m, &fs));
    CHECK_OK(cfdp_memfs_put(m, "bc", "x", 1));
    cfdp_tlv items[3] = {req(CFDP_FS_CREATE_FILE, "a", NULL),
                         req(CFDP_FS_RENAME_FILE, "a", "bc"),
                         req(CFDP_FS_DELETE_FILE, "zz", NULL)};
    /* the list in raw form, as a decoded Metadata PDU carries it */
    uint8_t raw[64];
    size_t rl = 0;
    for (int i = 0; i < 3; i++) {
        size_t n;
        CHECK_OK(cfdp_tlv_encode(&items[i], raw + rl, sizeof raw - rl, &n));
        rl += n;
    }
    cfdp_tlvs list = {NULL, 3, raw, rl};
    uint8_t out[64], want[64];
    size_t len, count;
    CHECK_OK(cfdp_fs_requests_execute(NULL, &fs, &list, out, sizeof out, &len, &count));
    size_t wl = hex("01 04 00 01 61 00  01 07 22 01 61 02 62 63 00  01 05 1F 02 7A 7A 00",
                    want, sizeof want);
    CHECK_EQ_U64(count, 3);
    CHECK_EQ_U64(len, wl);
    CHECK_EQ_MEM(out, want, wl);

    cfdp_fs_exec_opts ion = {.empty_second = 1};
    cfdp_tlvs one = {items, 1, NULL, 0};
    CHECK_OK(cfdp_fs_requests_execute(&ion, &fs, &one, out, sizeof out, &len, &count));
    wl = hex("01 05 00 01 61 00 00", want, sizeof want);
    CHECK_EQ_U64(len, wl);
    CHECK_EQ_MEM(out, want, wl);

    /* too small for the responses: refused before anything runs */
    CHECK_OK(fs.ops->remove(fs.ctx, "a"));
    CHECK_RC(cfdp_fs_requests_execute(NULL, &fs, &list, out, 21, &len, &count),
             TERN_ENOSPACE);
    CHECK(!fs_exists(&fs, "a"));
    CHECK_EQ_U64(count, 0);
    /* exactly enough is enough */
    CHECK_OK(cfdp_fs_requests_execute(NULL, &fs, &list, out, 22, &len, &count));
    CHECK(fs_exists(&fs, "a"));
    /* a list that does not decode: nothing runs */
    CHECK_OK(fs.ops->remove(fs.ctx, "a"));
    raw[1] = 60; /* the first TLV's length now runs past the list */
    CHECK(cfdp_fs_requests_execute(NULL, &fs, &list, out, sizeof out, &len, &count) < 0);
    CHECK(!fs_exists(&fs, "a"));
    cfdp_memfs_free(m);
}

TEST(fsreq_filestore_faults_become_statuses)
{
    cfdp_memfs *m;
    cfdp_fs fs;
    CHECK_OK(cfdp_memfs_new(&m, &fs));
    static uint8_t big[100000];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (uint8_t)(i * 7);
    CHECK_OK(cfdp_memfs_put(m, "a", "head", 4));
    CHECK_OK(cfdp_memfs_put(m, "big", big, sizeof big));
    /* a write failing midway through an append (the copy goes in 16 KiB
     * pieces): not allowed, the next request not performed */
    cfdp_memfs_fail(m, "write", 1, -ENOSPC);
    cfdp_tlv items[2] = {req(CFDP_FS_APPEND_FILE, "a", "big"),
                         req(CFDP_FS_CREATE_DIR, "d", NULL)};
    cfdp_tlvs list = {items, 2, NULL, 0};
    uint8_t out[64];
    size_t len, count;
    CHECK_OK(cfdp_fs_requests_execute(NULL, &fs, &list, out, sizeof out, &len, &count));
    cfdp_tlv r;
    size_t used;
    CHECK_OK(cfdp_tlv_decode(out, len, &r, &used, NULL));
    CHECK_EQ_INT(r.status, CFDP_FS_APPEND_NOT_ALLOWED);
    CHECK_OK(cfdp_tlv_decode(out + used, len - used, &r, &used, NULL));
    CHECK_EQ_INT(r.status, CFDP_FS_NOT_PERFORMED);
    CHECK(!fs_exists(&fs, "d"));
    CHECK_EQ_INT(cfdp_memfs_open_files(m), 0);
    /* and a whole append of 100 kB copies every byte */
    CHECK_OK(cfdp_memfs_put(m, "a", "head", 4));
    CHECK_EQ_INT(run(&fs, CFDP_FS_APPEND_FILE, "a", "big"), CFDP_FS_SUCCESS);
    const uint8_t *d;
    size_t n;
    CHECK_OK(cfdp_memfs_get(m, "a", &d, &n));
    CHECK_EQ_U64(n, 4 + sizeof big);
    CHECK_EQ_MEM(d, "head", 4);
    CHECK_EQ_MEM(d + 4, big, sizeof big);
    /* a failing stat: not allowed, never a crash */
    cfdp_memfs_fail(m, "stat", 1, -EIO);
    CHECK_EQ_INT(run(&fs, CFDP_FS_RENAME_FILE, "a", "b"), CFDP_FS_RENAME_NOT_ALLOWED);
    cfdp_memfs_free(m);
}

static void mk(const char *base, const char *rel, char *out, size_t cap)
{
    CHECK((size_t)snprintf(out, cap, "%s/%s", base, rel) < cap);
}

TEST(fsreq_posixfs_escapes_refused)
{
    char root[512], outside[512], p[1024];
    mk(tt_tmpdir(), "root", root, sizeof root);
    mk(tt_tmpdir(), "outside", outside, sizeof outside);
    CHECK(mkdir(root, 0700) == 0 && mkdir(outside, 0700) == 0);
    mk(outside, "victim", p, sizeof p);
    FILE *f = fopen(p, "w");
    CHECK(f && fputs("keep me", f) >= 0 && fclose(f) == 0);
    mk(outside, "vdir", p, sizeof p);
    CHECK(mkdir(p, 0700) == 0);
    mk(root, "out", p, sizeof p);
    CHECK(symlink("../outside", p) == 0);
    mk(root, "local", p, sizeof p);
    f = fopen(p, "w");
    CHECK(f && fputs("local", f) >= 0 && fclose(f) == 0);

    cfdp_posixfs *px;
    cfdp_fs fs;
    CHECK_OK(cfdp_posixfs_new(root, &px, &fs));
    const char *names[] = {"../outside/victim", "/etc/passwd", "out/victim",
                           "out/vdir",          "out/new",     "out",
                           "../outside/vdir"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        const char *x = names[i];
        CHECK_EQ_INT(run(&fs, CFDP_FS_CREATE_FILE, x, NULL), CFDP_FS_CREATE_NOT_ALLOWED);
        if (strcmp(x, "out")) { /* deleting the link "out" itself would be inside */
            CHECK_EQ_INT(run(&fs, CFDP_FS_DELETE_FILE, x, NULL),
                         CFDP_FS_DELETE_NOT_ALLOWED);
            CHECK_EQ_INT(run(&fs, CFDP_FS_DENY_FILE, x, NULL), CFDP_FS_DENY_NOT_ALLOWED);
            CHECK_EQ_INT(run(&fs, CFDP_FS_RENAME_FILE, x, "got"),
                         CFDP_FS_RENAME_NOT_ALLOWED);
        }
        /* "out" names the link in the root: a name taken */
        CHECK_EQ_INT(run(&fs, CFDP_FS_RENAME_FILE, "local", x),
                     strcmp(x, "out") ? CFDP_FS_RENAME_NOT_ALLOWED
                                      : CFDP_FS_RENAME_NEW_EXISTS);
        CHECK_EQ_INT(run(&fs, CFDP_FS_APPEND_FILE, x, "local"),
                     CFDP_FS_APPEND_NOT_ALLOWED);
        CHECK_EQ_INT(run(&fs, CFDP_FS_APPEND_FILE, "local", x),
                     CFDP_FS_APPEND_NOT_ALLOWED);
        CHECK_EQ_INT(run(&fs, CFDP_FS_REPLACE_FILE, x, "local"),
                     CFDP_FS_REPLACE_NOT_ALLOWED);
        CHECK_EQ_INT(run(&fs, CFDP_FS_REPLACE_FILE, "local", x),
                     CFDP_FS_REPLACE_NOT_ALLOWED);
        CHECK_EQ_INT(run(&fs, CFDP_FS_CREATE_DIR, x, NULL), CFDP_FS_MKDIR_CANNOT);
        if (strcmp(x, "out")) {
            CHECK_EQ_INT(run(&fs, CFDP_FS_REMOVE_DIR, x, NULL),
                         CFDP_FS_RMDIR_NOT_ALLOWED);
            CHECK_EQ_INT(run(&fs, CFDP_FS_DENY_DIR, x, NULL), CFDP_FS_DENY_NOT_ALLOWED);
        }
    }
    /* an escape in a list: rejected, the rest not performed */
    cfdp_tlv items[2] = {req(CFDP_FS_DELETE_FILE, "../outside/victim", NULL),
                         req(CFDP_FS_DELETE_FILE, "local", NULL)};
    cfdp_tlvs list = {items, 2, NULL, 0};
    uint8_t out[128];
    size_t len, count;
    CHECK_OK(cfdp_fs_requests_execute(NULL, &fs, &list, out, sizeof out, &len, &count));
    cfdp_tlv r;
    size_t used;
    CHECK_OK(cfdp_tlv_decode(out, len, &r, &used, NULL));
    CHECK_EQ_INT(r.status, CFDP_FS_DELETE_NOT_ALLOWED);
    CHECK_OK(cfdp_tlv_decode(out + used, len - used, &r, &used, NULL));
    CHECK_EQ_INT(r.status, CFDP_FS_NOT_PERFORMED);
    cfdp_posixfs_free(px);

    /* nothing outside changed; the local file is intact */
    mk(outside, "victim", p, sizeof p);
    f = fopen(p, "r");
    CHECK(f);
    char buf[32] = {0};
    CHECK(fread(buf, 1, sizeof buf - 1, f) == 7);
    fclose(f);
    CHECK_EQ_STR(buf, "keep me");
    mk(outside, "vdir", p, sizeof p);
    struct stat st;
    CHECK(stat(p, &st) == 0 && S_ISDIR(st.st_mode));
    mk(outside, "new", p, sizeof p);
    CHECK(access(p, F_OK) != 0);
    mk(outside, "got", p, sizeof p);
    CHECK(access(p, F_OK) != 0);
    mk(root, "local", p, sizeof p);
    CHECK(stat(p, &st) == 0 && st.st_size == 5);
    mk(root, "got", p, sizeof p);
    CHECK(access(p, F_OK) != 0);
}
