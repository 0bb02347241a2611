/* cfdp_ctl, the client side of cfdpd's command socket: the text helpers and
 * every typed call against a scripted server in a thread (the answers are
 * cfdpd's forms, docs/cfdpd.md), so the parsing of answers and events, the
 * error codes and texts are checked without a node. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cfdp_ctl.h"
#include "tern_test.h"

TEST(kv_and_txn_parsing)
{
    char v[64];
    const char *t = "ok\ntxn=1.5\nroot=/a b/c\nx=1 peer=2 class=1\n";
    CHECK_OK(cfdp_ctl_kv(t, "txn", 1, v, sizeof v));
    CHECK_EQ_STR(v, "1.5");
    CHECK_OK(cfdp_ctl_kv(t, "root", 0, v, sizeof v));
    CHECK_EQ_STR(v, "/a b/c"); /* to the end of the line */
    CHECK_OK(cfdp_ctl_kv(t, "peer", 1, v, sizeof v));
    CHECK_EQ_STR(v, "2");
    CHECK_RC(cfdp_ctl_kv(t, "eer", 1, v, sizeof v),
             TERN_ENOTFOUND); /* not a key's tail */
    CHECK_RC(cfdp_ctl_kv(t, "lass", 1, v, sizeof v), TERN_ENOTFOUND);
    CHECK_RC(cfdp_ctl_kv(t, "root", 0, v, 4), TERN_ENOSPACE);
    cfdp_txn_id id;
    CHECK_OK(cfdp_ctl_parse_txn("7.18446744073709551615", &id));
    CHECK_EQ_U64(id.src, 7);
    CHECK_EQ_U64(id.seq, UINT64_MAX);
    CHECK_RC(cfdp_ctl_parse_txn("7", &id), -EINVAL);
    CHECK_RC(cfdp_ctl_parse_txn("7.", &id), -EINVAL);
    CHECK_RC(cfdp_ctl_parse_txn("a.1", &id), -EINVAL);
    CHECK_RC(cfdp_ctl_parse_txn("1.2x", &id), -EINVAL);
    CHECK_RC(cfdp_ctl_parse_txn("1.99999999999999999999", &id), -EINVAL);
    CHECK_RC(cfdp_ctl_parse_txn("-1.5", &id), -EINVAL); /* strtoull would wrap it */
    CHECK_RC(cfdp_ctl_parse_txn("1.-5", &id), -EINVAL);
    CHECK_RC(cfdp_ctl_parse_txn(" 1.5", &id), -EINVAL);
    CHECK_RC(cfdp_ctl_parse_txn("+1.5", &id), -EINVAL);
    CHECK_EQ_STR(cfdp_ctl_state_name(CFDP_STATE_CLOSING), "closing");
    CHECK_EQ_STR(cfdp_ctl_state_name(99), "unknown");
}

TEST(socket_name_follows_the_real_path)
{
    struct sockaddr_un a, b;
    socklen_t la, lb;
    char p[4200];
    CHECK_OK(cfdp_ctl_sockaddr(tt_tmpdir(), &a, &la));
    snprintf(p, sizeof p, "%s/./", tt_tmpdir());
    CHECK_OK(cfdp_ctl_sockaddr(p, &b, &lb));
    CHECK_EQ_U64(la, lb);
    CHECK(!memcmp(&a, &b, la));
    CHECK_EQ_INT(a.sun_path[0], 0); /* abstract */
    CHECK(!strncmp(a.sun_path + 1, "tern-cfdpd-", 11));
    snprintf(p, sizeof p, "%s/missing", tt_tmpdir());
    CHECK_RC(cfdp_ctl_sockaddr(p, &b, &lb), -ENOENT);
    cfdp_ctl *c;
    CHECK_RC(cfdp_ctl_open(tt_tmpdir(), &c), -ECONNREFUSED);
}

/* The scripted server: answers each request with the next scripted text
 * and records what it got. */
struct script {
    int lfd;
    const char *const *answers; /* NULL-terminated; an entry may hold several
                                   datagrams separated by "\f" */
    char got[8][1024];
    int ngot;
};

static void *serve(void *arg)
{
    struct script *s = arg;
    int fd = accept(s->lfd, NULL, NULL);
    if (fd < 0)
        return NULL;
    for (int i = 0; s->answers[i]; i++) {
        char buf[1024];
        ssize_t n = recv(fd, buf, sizeof buf - 1, 0);
        if (n <= 0)
            break;
        buf[n] = 0;
        if (s->ngot < 8)
            snprintf(s->got[s->ngot++], sizeof s->got[0], "%s", buf);
        const char *a = s->answers[i];
        while (*a) {
            size_t l = strcspn(a, "\f");
            send(fd, a, l, MSG_NOSIGNAL);
            a += l;
            if (*a == '\f')
                a++;
        }
    }
    close(fd);
    return NULL;
}

TEST(typed_calls_against_a_scripted_server)
{
    static const char *const answers[] = {
        "ok\nentity=3\nroot=/x/cfdp\ntxns=2\n", "ok\ntxn=3.9\n",
        "err\ncode=-2\nmsg=put a to entity 4: no such file in the filestore\n",
        "ok\nentity=3\ntxn=3.9 peer=4 role=0 state=3 class=2 condition=0 size=100 "
        "progress=100 gaps=0 resent=7\ntxn=4.1 peer=4 role=1 state=0 class=1 condition=0 "
        "size=0 progress=5 gaps=2 resent=0\n",
        /* with priorities (an older cfdpd's line has none: standard) */
        "ok\nentity=3\ntxn=3.9 peer=4 role=0 state=3 class=2 condition=0 size=100 "
        "progress=100 gaps=0 resent=7 priority=expedited\ntxn=4.1 peer=4 role=1 state=0 "
        "class=1 condition=0 size=0 progress=5 gaps=2 resent=0\n",
        /* a watch: its ok, then events */
        "ok\n\fevent\ntype=100\ntxn=3.9\nstate=0\nprogress=50\nsize=100\nresent=0\n"
        "\fevent\ntype=6\ntxn=3.9\ncondition=5\ndelivery=1\nfile_status=2\nprogress="
        "100\nfs=5,0 1,1 0,15\n",
        NULL};
    struct script s = {.answers = answers};
    struct sockaddr_un sa;
    socklen_t sl;
    CHECK_OK(cfdp_ctl_sockaddr(tt_tmpdir(), &sa, &sl));
    s.lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    CHECK(s.lfd >= 0);
    CHECK_OK(bind(s.lfd, (struct sockaddr *)&sa, sl));
    CHECK_OK(listen(s.lfd, 4));
    pthread_t th;
    CHECK_OK(pthread_create(&th, NULL, serve, &s));
    cfdp_ctl *c;
    CHECK_OK(cfdp_ctl_open(tt_tmpdir(), &c));
    cfdp_ctl_info info;
    CHECK_OK(cfdp_ctl_info_get(c, &info));
    CHECK_EQ_U64(info.entity, 3);
    CHECK_EQ_STR(info.root, "/x/cfdp");
    CHECK_EQ_U64(info.txns, 2);

    cfdp_ctl_put_req pr = {.src_name = "a b.txt",
                           .dst = 4,
                           .dst_name = "dir/b",
                           .cls = 1,
                           .closure = 1,
                           .checksum_type = 2,
                           .segment = 1000,
                           .lifetime_s = 60};
    cfdp_txn_id id;
    CHECK_OK(cfdp_ctl_put(c, &pr, &id));
    CHECK_EQ_U64(id.src, 3);
    CHECK_EQ_U64(id.seq, 9);
    CHECK_RC(cfdp_ctl_put(c, &pr, &id), -ENOENT);
    CHECK_EQ_STR(cfdp_ctl_errmsg(c), "put a to entity 4: no such file in the filestore");
    pr.dst_name = "two\nlines";
    CHECK_RC(cfdp_ctl_put(c, &pr, &id), -EINVAL); /* refused before sending */

    cfdp_txn_info v[1];
    size_t n;
    CHECK_OK(cfdp_ctl_status(c, v, 1, &n));
    CHECK_EQ_U64(n, 2); /* both counted, one filled */
    CHECK_EQ_U64(v[0].id.seq, 9);
    CHECK_EQ_INT(v[0].state, CFDP_STATE_CLOSING);
    CHECK_EQ_U64(v[0].bytes_resent, 7);
    CHECK_EQ_U64(v[0].file_size, 100);
    cfdp_ctl_txn tv[2];
    CHECK_OK(cfdp_ctl_txns(c, tv, 2, &n));
    CHECK_EQ_U64(n, 2);
    CHECK_EQ_U64(tv[0].info.bytes_resent, 7);
    CHECK_EQ_INT(tv[0].priority, CFDP_CTL_PRIO_EXPEDITED);
    CHECK_EQ_INT(tv[1].priority, CFDP_CTL_PRIO_STANDARD);
    CHECK_EQ_U64(tv[1].info.gaps, 2);

    CHECK_OK(cfdp_ctl_watch(c, (cfdp_txn_id){3, 9}));
    cfdp_ctl_event ev;
    CHECK_OK(cfdp_ctl_next_event(c, &ev, 5000));
    CHECK_EQ_INT(ev.type, CFDP_CTL_EV_PROGRESS);
    CHECK_EQ_U64(ev.progress, 50);
    CHECK_OK(cfdp_ctl_next_event(c, &ev, 5000));
    CHECK_EQ_INT(ev.type, CFDP_IND_FINISHED);
    CHECK_EQ_INT(ev.condition, CFDP_COND_CHECKSUM_FAILURE);
    CHECK_EQ_INT(ev.delivery, CFDP_DATA_INCOMPLETE);
    CHECK_EQ_INT(ev.file_status, 2);
    CHECK_EQ_INT(ev.nfs, 3);
    CHECK_EQ_INT(ev.fs_action[0], CFDP_FS_CREATE_DIR);
    CHECK_EQ_INT(ev.fs_status[0], CFDP_FS_SUCCESS);
    CHECK_EQ_INT(ev.fs_action[1], CFDP_FS_DELETE_FILE);
    CHECK_EQ_INT(ev.fs_status[1], CFDP_FS_DELETE_NO_FILE);
    CHECK_EQ_INT(ev.fs_status[2], CFDP_FS_NOT_PERFORMED);
    CHECK_RC(cfdp_ctl_next_event(c, &ev, 5000), -ECONNRESET); /* the server closed */
    pthread_join(th, NULL);

    CHECK_EQ_INT(s.ngot, 6);
    CHECK_EQ_STR(s.got[0], "info\n");
    CHECK(strstr(s.got[1], "put\nsrc=a b.txt\ndst=4\ndst_name=dir/b\nclass=1\n") ==
          s.got[1]);
    CHECK(strstr(s.got[1], "\nchecksum=2\nsegment=1000\nlifetime=60\n"));
    CHECK_EQ_STR(s.got[3], "status\n");
    CHECK_EQ_STR(s.got[4], "status\n");
    CHECK_EQ_STR(s.got[5], "watch\ntxn=3.9\n");
    cfdp_ctl_close(c);
    close(s.lfd);
}

TEST(put_request_text_round_trips_with_priority_and_filestore_requests)
{
    cfdp_ctl_fsreq fs[3];
    char why[300];
    CHECK_OK(cfdp_ctl_fs_parse("createDirectory:a/b c", &fs[0], why, sizeof why));
    CHECK_EQ_INT(fs[0].action, CFDP_FS_CREATE_DIR);
    CHECK_EQ_STR(fs[0].first, "a/b c");
    CHECK_EQ_STR(fs[0].second, "");
    /* two names split at the first ':'; the second may hold one */
    CHECK_OK(cfdp_ctl_fs_parse("RENAMEFILE:old:new:x", &fs[1], why, sizeof why));
    CHECK_EQ_INT(fs[1].action, CFDP_FS_RENAME_FILE);
    CHECK_EQ_STR(fs[1].first, "old");
    CHECK_EQ_STR(fs[1].second, "new:x");
    /* a one-name action takes the rest whole */
    CHECK_OK(cfdp_ctl_fs_parse("deleteFile:x:y", &fs[2], why, sizeof why));
    CHECK_EQ_STR(fs[2].first, "x:y");
    cfdp_ctl_fsreq bad;
    CHECK_RC(cfdp_ctl_fs_parse("makeFile:x", &bad, why, sizeof why), -EINVAL);
    CHECK(strstr(why, "'makeFile' is not a filestore action"));
    CHECK_RC(cfdp_ctl_fs_parse("renameFile:only", &bad, why, sizeof why), -EINVAL);
    CHECK(strstr(why, "renameFile names two files"));
    CHECK_RC(cfdp_ctl_fs_parse("appendFile:a:", &bad, why, sizeof why), -EINVAL);
    CHECK_RC(cfdp_ctl_fs_parse("createFile:", &bad, why, sizeof why), -EINVAL);
    CHECK_RC(cfdp_ctl_fs_parse("createFile:a\tb", &bad, why, sizeof why), -EINVAL);
    char big[300];
    memset(big, 'n', sizeof big);
    memcpy(big, "createFile:", 11);
    big[11 + 256] = 0; /* a 256-byte name */
    CHECK_RC(cfdp_ctl_fs_parse(big, &bad, why, sizeof why), -EINVAL);
    big[11 + 255] = 0; /* 255: the most an LV holds */
    CHECK_OK(cfdp_ctl_fs_parse(big, &bad, why, sizeof why));

    cfdp_ctl_put_req pr = {.src_name = "s.bin",
                           .dst = 7,
                           .dst_name = "d/s.bin",
                           .cls = 2,
                           .closure = -1,
                           .checksum_type = 3,
                           .lifetime_s = 99,
                           .priority = CFDP_CTL_PRIO_EXPEDITED,
                           .nfs = 3,
                           .fs = fs};
    char text[4096];
    int n = cfdp_ctl_put_encode(&pr, text, sizeof text);
    CHECK(n > 0);
    CHECK(strstr(text, "\npriority=expedited\nfs=5 a/b c\nfs=2 old\tnew:x\nfs=1 x:y\n"));
    static cfdp_ctl_put_msg m;
    CHECK_OK(cfdp_ctl_put_decode(text, &m, why, sizeof why));
    CHECK_EQ_STR(m.req.src_name, "s.bin");
    CHECK_EQ_STR(m.req.dst_name, "d/s.bin");
    CHECK_EQ_U64(m.req.dst, 7);
    CHECK_EQ_INT(m.req.checksum_type, 3);
    CHECK_EQ_INT(m.req.closure, -1);
    CHECK_EQ_U64(m.req.lifetime_s, 99);
    CHECK_EQ_INT(m.req.priority, CFDP_CTL_PRIO_EXPEDITED);
    CHECK_EQ_U64(m.req.nfs, 3);
    CHECK_EQ_STR(m.fs[1].first, "old");
    CHECK_EQ_STR(m.fs[1].second, "new:x");
    CHECK_EQ_INT(m.fs[2].action, CFDP_FS_DELETE_FILE);

    /* metadata only: neither name, requests only */
    pr.src_name = pr.dst_name = NULL;
    CHECK(cfdp_ctl_put_encode(&pr, text, sizeof text) > 0);
    CHECK_OK(cfdp_ctl_put_decode(text, &m, why, sizeof why));
    CHECK_EQ_STR(m.req.src_name, "");
    CHECK_EQ_U64(m.req.nfs, 3);
    pr.nfs = 0; /* nothing at all to send */
    CHECK_RC(cfdp_ctl_put_encode(&pr, text, sizeof text), -EINVAL);
    pr.src_name = "only-a-source";
    pr.nfs = 1;
    CHECK_RC(cfdp_ctl_put_encode(&pr, text, sizeof text), -EINVAL);
    pr.src_name = pr.dst_name = "x";
    pr.priority = 4;
    CHECK_RC(cfdp_ctl_put_encode(&pr, text, sizeof text), -EINVAL);
    pr.priority = 0;
    pr.nfs = CFDP_CTL_FS_MAX + 1;
    CHECK_RC(cfdp_ctl_put_encode(&pr, text, sizeof text), -EINVAL);

    /* what cfdpd refuses, each named */
    static const struct {
        const char *text, *why;
    } refused[] = {
        {"put\nsrc=a\ndst_name=b\n", "needs dst="},
        {"put\nsrc=a\ndst=0\ndst_name=b\n", "dst must be a number from 1"},
        {"put\nsrc=a\ndst=2\ndst=3\ndst_name=b\n", "given once"},
        {"put\nsrc=a\ndst=2\ndst_name=b\nclass=3\n",
         "class must be a number from 0 to 2"},
        {"put\nsrc=a\ndst=2\ndst_name=b\nsegment= 5\n", "segment must be"},
        {"put\nsrc=a\ndst=2\ndst_name=b\npriority=urgent\n", "priority is bulk"},
        {"put\nsrc=a\ndst=2\n", "or neither and filestore requests"},
        {"put\ndst=2\n", "or neither and filestore requests"},
        {"put\ndst=2\nfs=9 x\n", "not fs=<action 0-8>"},
        {"put\ndst=2\nfs=5 \n", "not fs=<action 0-8>"},
        {"put\ndst=2\nfs=5x\n", "not fs=<action 0-8>"},
        {"put\ndst=2\nfs=2 a\n", "(renameFile) needs two names"},
        {"put\ndst=2\nfs=5 a\tb\n", "(createDirectory) needs one name"},
        {"put\ndst=2\nnonsense\n", "is not key=value"},
        {"get\ndst=2\n", "not a put request"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        CHECK_RC(cfdp_ctl_put_decode(refused[i].text, &m, why, sizeof why), -EINVAL);
        if (!strstr(why, refused[i].why))
            CHECK_EQ_STR(why, refused[i].why); /* shows both */
    }
    /* too many requests */
    size_t at = (size_t)snprintf(text, sizeof text, "put\ndst=2\n");
    for (int i = 0; i <= CFDP_CTL_FS_MAX; i++)
        at += (size_t)snprintf(text + at, sizeof text - at, "fs=0 f%d\n", i);
    CHECK_RC(cfdp_ctl_put_decode(text, &m, why, sizeof why), -EINVAL);
    CHECK(strstr(why, "at most 32 filestore requests"));
    /* a name with " dst=" inside is a name, not a key */
    CHECK_OK(cfdp_ctl_put_decode("put\nsrc=a dst=9\ndst=2\ndst_name=b\n", &m, why,
                                 sizeof why));
    CHECK_EQ_U64(m.req.dst, 2);
    CHECK_EQ_STR(m.req.src_name, "a dst=9");
    CHECK_EQ_INT(m.req.priority, CFDP_CTL_PRIO_DEFAULT);

    CHECK_EQ_INT(cfdp_ctl_priority_parse("Bulk"), CFDP_CTL_PRIO_BULK);
    CHECK_EQ_INT(cfdp_ctl_priority_parse("2"), CFDP_CTL_PRIO_EXPEDITED);
    CHECK_RC(cfdp_ctl_priority_parse("3"), -EINVAL);
    CHECK_EQ_STR(cfdp_ctl_priority_name(CFDP_CTL_PRIO_DEFAULT), "standard");
    CHECK_EQ_STR(cfdp_ctl_fs_word(CFDP_FS_DENY_DIR), "denyDirectory");
    CHECK_EQ_U64(cfdp_ctl_struct_size("cfdp_ctl_put_req"), sizeof(cfdp_ctl_put_req));
    CHECK_EQ_U64(cfdp_ctl_struct_size("nope"), 0);
}
