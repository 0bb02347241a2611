/* The NNTP client (a receiver pushing into its news server): streaming
 * with CHECK/TAKETHIS when MODE STREAM gives 203, IHAVE otherwise; every
 * response code mapped to taken, duplicate, rejected or retry; 400 or a
 * dropped connection turns every unfinished article into retry. */
#include <errno.h>

#include "nf_test.h"

static char sent[1 << 16];

static const char *take_output(nf_nntpc *c)
{
    const char *p;
    size_t n = nf_nntpc_output(c, &p);
    CHECK(n < sizeof sent);
    memcpy(sent, p, n);
    sent[n] = 0;
    nf_nntpc_output_done(c, n);
    return sent;
}

static void server(nf_nntpc *c, const char *resp)
{
    size_t used;
    CHECK_OK(nf_nntpc_feed(c, resp, strlen(resp), &used));
    CHECK_EQ_U64(used, strlen(resp));
}

static nf_nntpc_result result(nf_nntpc *c)
{
    nf_nntpc_result r;
    CHECK_OK(nf_nntpc_next(c, &r));
    return r;
}

TEST(streaming_check_takethis_outcomes)
{
    nf_nntpc *c;
    CHECK_OK(nf_nntpc_new(&c, NULL));
    CHECK_OK(nf_nntpc_offer(c, 1, "<a@x>", "l1\n.dot\n", 8));
    CHECK_EQ_STR(take_output(c), ""); /* nothing before the greeting */
    server(c, "200 inn ready\r\n");
    CHECK_EQ_STR(take_output(c), "MODE STREAM\r\n");
    server(c, "203 StreamOK.\r\n");
    CHECK_EQ_STR(take_output(c), "CHECK <a@x>\r\n");
    CHECK_OK(nf_nntpc_offer(c, 2, "<b@x>", "b\r\n", 3));
    CHECK_OK(nf_nntpc_offer(c, 3, "<c@x>", "c\r\n", 3));
    CHECK_OK(nf_nntpc_offer(c, 4, "<d@x>", "d", 1));
    CHECK_EQ_STR(take_output(c), "CHECK <b@x>\r\nCHECK <c@x>\r\nCHECK <d@x>\r\n");
    server(c, "238 <a@x>\r\n438 <b@x>\r\n431 <c@x>\r\n238 <d@x>\r\n");
    CHECK_EQ_STR(take_output(c), "TAKETHIS <a@x>\r\nl1\r\n..dot\r\n.\r\n"
                                 "TAKETHIS <d@x>\r\nd\r\n.\r\n");
    nf_nntpc_result r = result(c);
    CHECK(r.tag == 2 && r.outcome == NF_NNTPC_DUPLICATE && r.code == 438);
    r = result(c);
    CHECK(r.tag == 3 && r.outcome == NF_NNTPC_RETRY && r.code == 431);
    CHECK_RC(nf_nntpc_next(c, &r), TERN_EEND);
    CHECK_EQ_U64(nf_nntpc_pending(c), 2);
    server(c, "239 <a@x>\r\n439 <d@x>\r\n");
    r = result(c);
    CHECK(r.tag == 1 && r.outcome == NF_NNTPC_TAKEN && r.code == 239);
    r = result(c);
    CHECK(r.tag == 4 && r.outcome == NF_NNTPC_REJECTED && r.code == 439);
    CHECK_MSG(strcmp(r.text, "439 <d@x>") == 0, "%s", r.text);
    CHECK_EQ_U64(nf_nntpc_pending(c), 0);
    CHECK_RC(nf_nntpc_offer(c, 5, "bad", "x", 1), -EINVAL);
    nf_nntpc_free(c);
}

TEST(ihave_when_streaming_refused)
{
    nf_nntpc *c;
    CHECK_OK(nf_nntpc_new(&c, NULL));
    server(c, "201 no posting\r\n");
    CHECK_EQ_STR(take_output(c), "MODE STREAM\r\n");
    server(c, "500 What?\r\n");
    for (uint64_t t = 1; t <= 5; t++) {
        char id[16];
        snprintf(id, sizeof id, "<%llu@x>", (unsigned long long)t);
        CHECK_OK(nf_nntpc_offer(c, t, id, "body\r\n", 6));
    }
    CHECK_EQ_STR(take_output(c), "IHAVE <1@x>\r\n"); /* one at a time */
    server(c, "335 send\r\n");
    CHECK_EQ_STR(take_output(c), "body\r\n.\r\n");
    server(c, "235 ok\r\n");
    CHECK_EQ_STR(take_output(c), "IHAVE <2@x>\r\n");
    server(c, "435 dup\r\n");
    CHECK_EQ_STR(take_output(c), "IHAVE <3@x>\r\n");
    server(c, "436 later\r\n");
    server(c, "335 send\r\n");
    CHECK_EQ_STR(take_output(c), "IHAVE <4@x>\r\nbody\r\n.\r\n");
    server(c, "437 no\r\n");
    server(c, "335 send\r\n436 failed\r\n");
    static const struct {
        uint64_t tag;
        nf_nntpc_outcome o;
        int code;
    } want[] = {{1, NF_NNTPC_TAKEN, 235},
                {2, NF_NNTPC_DUPLICATE, 435},
                {3, NF_NNTPC_RETRY, 436},
                {4, NF_NNTPC_REJECTED, 437},
                {5, NF_NNTPC_RETRY, 436}};
    for (size_t i = 0; i < 5; i++) {
        nf_nntpc_result r = result(c);
        CHECK_MSG(r.tag == want[i].tag && r.outcome == want[i].o &&
                      r.code == want[i].code,
                  "%zu: tag %llu outcome %d code %d", i, (unsigned long long)r.tag,
                  r.outcome, r.code);
    }
    nf_nntpc_free(c);
}

TEST(server_going_away_loses_nothing)
{
    nf_nntpc_opts o = {.max_inflight = 2};
    nf_nntpc *c;
    CHECK_OK(nf_nntpc_new(&c, &o));
    server(c, "200 hi\r\n203 ok\r\n");
    for (uint64_t t = 1; t <= 4; t++) {
        char id[16];
        snprintf(id, sizeof id, "<%llu@x>", (unsigned long long)t);
        CHECK_OK(nf_nntpc_offer(c, t, id, "x\r\n", 3));
    }
    CHECK_EQ_STR(take_output(c), "MODE STREAM\r\nCHECK <1@x>\r\nCHECK <2@x>\r\n");
    server(c, "238 <1@x>\r\n400 throttled\r\n");
    CHECK(nf_nntpc_closed(c));
    size_t n = 0;
    nf_nntpc_result r;
    while (nf_nntpc_next(c, &r) == 0) {
        CHECK_EQ_INT(r.outcome, NF_NNTPC_RETRY);
        n++;
    }
    CHECK_EQ_U64(n, 4);
    CHECK_EQ_U64(nf_nntpc_pending(c), 0);
    /* offers after the end come straight back as retry */
    CHECK_OK(nf_nntpc_offer(c, 9, "<9@x>", "x", 1));
    r = result(c);
    CHECK(r.tag == 9 && r.outcome == NF_NNTPC_RETRY);
    nf_nntpc_free(c);

    /* a bad greeting; and an abort by the caller */
    CHECK_OK(nf_nntpc_new(&c, NULL));
    CHECK_OK(nf_nntpc_offer(c, 1, "<1@x>", "x", 1));
    server(c, "502 go away\r\n");
    CHECK(nf_nntpc_closed(c));
    CHECK_EQ_INT(result(c).outcome, NF_NNTPC_RETRY);
    nf_nntpc_free(c);
    CHECK_OK(nf_nntpc_new(&c, &(nf_nntpc_opts){.no_stream = 1}));
    server(c, "200 hi\r\n");
    CHECK_OK(nf_nntpc_offer(c, 1, "<1@x>", "x", 1));
    CHECK_OK(nf_nntpc_offer(c, 2, "<2@x>", "x", 1));
    CHECK_EQ_STR(take_output(c), "IHAVE <1@x>\r\n");
    nf_nntpc_abort(c);
    CHECK_EQ_INT(result(c).outcome, NF_NNTPC_RETRY);
    CHECK_EQ_INT(result(c).outcome, NF_NNTPC_RETRY);
    nf_nntpc_free(c);
    /* garbage from the server ends the connection, not an article */
    CHECK_OK(nf_nntpc_new(&c, NULL));
    CHECK_OK(nf_nntpc_offer(c, 1, "<1@x>", "x", 1));
    server(c, "hello there\r\n");
    CHECK(nf_nntpc_closed(c));
    CHECK_EQ_INT(result(c).outcome, NF_NNTPC_RETRY);
    nf_nntpc_free(c);
}

/* The client against Tern's own server machine: what the client sends, the
 * server takes byte for byte. */
TEST(client_against_server)
{
    nf_nntpc *c;
    nf_nntp *s;
    CHECK_OK(nf_nntpc_new(&c, NULL));
    CHECK_OK(nf_nntp_new(&s, NULL));
    char a1[4096];
    size_t n1 =
        nf_t_article(a1, sizeof a1, "<cs1@x>", "comp.x", ".leading dot\r\n..two\r\n");
    CHECK_OK(nf_nntpc_offer(c, 1, "<cs1@x>", a1, n1));
    CHECK_OK(nf_nntpc_offer(c, 2, "<cs2@x>", a1, n1));
    int got = 0, rounds = 0;
    while (nf_nntpc_pending(c) && rounds++ < 100) {
        const char *p;
        size_t n = nf_nntp_output(s, &p), used;
        CHECK_OK(nf_nntpc_feed(c, p, n, &used));
        nf_nntp_output_done(s, n);
        n = nf_nntpc_output(c, &p);
        size_t at = 0;
        while (at < n) {
            CHECK_OK(nf_nntp_feed(s, p + at, n - at, &used));
            at += used;
            nf_nntp_ev ev;
            nf_nntp_event(s, &ev);
            if (ev.type == NF_NNTP_EV_CHECK)
                CHECK_OK(nf_nntp_decide(s, strcmp(ev.msgid, "<cs2@x>") == 0
                                               ? NF_NNTP_UNWANTED
                                               : NF_NNTP_WANT));
            else if (ev.type == NF_NNTP_EV_TAKETHIS) {
                CHECK_EQ_U64(ev.article_len, n1);
                CHECK_EQ_MEM(ev.article, a1, n1);
                got++;
                CHECK_OK(nf_nntp_decide(s, NF_NNTP_ACCEPT));
            } else
                CHECK(ev.type == NF_NNTP_EV_NONE);
        }
        nf_nntpc_output_done(c, n);
    }
    CHECK_EQ_INT(got, 1);
    CHECK_EQ_INT(result(c).outcome, NF_NNTPC_DUPLICATE);
    CHECK_EQ_INT(result(c).outcome, NF_NNTPC_TAKEN);
    nf_nntpc_free(c);
    nf_nntp_free(s);
}
