/* The NNTP transit machine: each command's response codes (IHAVE 335/435/
 * 436/235/437, CHECK 238/431/438, TAKETHIS 239/439, MODE STREAM 203, bad
 * commands 500/501), dot-unstuffing, limits, pipelining, and that feeding
 * the same bytes in any split gives the same session. */
#include <errno.h>

#include "nf_test.h"

/* A scripted peer session: feeds input, answers each event from verdicts
 * (cycled), collects the output and the articles taken. */
typedef struct sess {
    nf_nntp *s;
    char out[1 << 16];
    size_t out_len;
    char arts[1 << 16];
    size_t arts_len;
    const nf_nntp_verdict *v;
    size_t nv, vi;
    size_t step; /* feed this many bytes at a time (0: all) */
} sess;

static void drain(sess *t)
{
    const char *p;
    size_t n = nf_nntp_output(t->s, &p);
    CHECK(t->out_len + n < sizeof t->out);
    memcpy(t->out + t->out_len, p, n);
    t->out_len += n;
    t->out[t->out_len] = 0;
    nf_nntp_output_done(t->s, n);
}

static void run(sess *t, const char *in)
{
    size_t len = strlen(in), at = 0;
    int idle = 0;
    while (at < len && !nf_nntp_closing(t->s)) {
        size_t chunk = t->step && t->step < len - at ? t->step : len - at, used = 0;
        CHECK_OK(nf_nntp_feed(t->s, in + at, chunk, &used));
        at += used;
        nf_nntp_ev ev;
        nf_nntp_event(t->s, &ev);
        if (ev.type != NF_NNTP_EV_NONE) {
            if (ev.type == NF_NNTP_EV_ARTICLE || ev.type == NF_NNTP_EV_TAKETHIS) {
                CHECK(t->arts_len + ev.article_len + 2 < sizeof t->arts);
                memcpy(t->arts + t->arts_len, ev.article, ev.article_len);
                t->arts_len += ev.article_len;
                t->arts[t->arts_len++] = '|';
                t->arts[t->arts_len] = 0;
            }
            CHECK(t->vi < t->nv);
            CHECK_OK(nf_nntp_decide(t->s, t->v[t->vi++]));
        }
        drain(t);
        idle = used == 0 && ev.type == NF_NNTP_EV_NONE ? idle + 1 : 0;
        CHECK_MSG(idle < 3, "no progress at byte %zu", at);
    }
    drain(t);
}

static sess *open_sess(const nf_nntp_verdict *v, size_t nv, size_t max_article)
{
    static sess t;
    memset(&t, 0, sizeof t);
    nf_nntp_opts o = {.max_article = max_article};
    CHECK_OK(nf_nntp_new(&t.s, &o));
    t.v = v;
    t.nv = nv;
    drain(&t);
    CHECK_MSG(strncmp(t.out, "200 ", 4) == 0, "greeting %s", t.out);
    t.out_len = 0;
    t.out[0] = 0;
    return &t;
}

#define NV(a) (sizeof(a) / sizeof((a)[0]))

TEST(capabilities_mode_quit)
{
    sess *t = open_sess(NULL, 0, 0);
    run(t, "CAPABILITIES\r\nmode stream\r\nMODE READER\r\nMODE\r\nMODE FOO\r\nQUIT\r\n"
           "CHECK <never@seen>\r\n");
    const char *want =
        "101 Capability list:\r\nVERSION 2\r\nIMPLEMENTATION Tern newsfeed\r\n"
        "IHAVE\r\nSTREAMING\r\n.\r\n"
        "203 Streaming permitted\r\n"
        "502 Transit service only; no reading here\r\n"
        "501 Syntax error\r\n501 Syntax error\r\n205 Bye\r\n";
    CHECK_EQ_STR(t->out, want);
    CHECK(nf_nntp_closing(t->s));
    nf_nntp_free(t->s);
}

TEST(check_codes)
{
    static const nf_nntp_verdict v[] = {NF_NNTP_WANT, NF_NNTP_UNWANTED, NF_NNTP_DEFER};
    sess *t = open_sess(v, NV(v), 0);
    run(t, "MODE STREAM\r\nCHECK <a@x>\r\nCHECK <b@x>\r\nCHECK <c@x>\r\nCHECK\r\n"
           "CHECK nobrackets\r\nCHECK <a@x> extra\r\n");
    CHECK_EQ_STR(t->out,
                 "203 Streaming permitted\r\n238 <a@x>\r\n438 <b@x>\r\n431 <c@x>\r\n"
                 "501 Syntax error\r\n501 Bad message-id\r\n501 Syntax error\r\n");
    nf_nntp_stats st;
    nf_nntp_get_stats(t->s, &st);
    CHECK_EQ_U64(st.bad_commands, 3);
    nf_nntp_free(t->s);
}

static const char *A1 = "Path: x\r\nMessage-ID: <a@x>\r\n\r\nbody\r\n..dotted\r\n.\r\n";

TEST(takethis_codes_and_unstuffing)
{
    static const nf_nntp_verdict v[] = {NF_NNTP_ACCEPT, NF_NNTP_REJECT};
    sess *t = open_sess(v, NV(v), 0);
    char in[4096];
    snprintf(in, sizeof in, "MODE STREAM\r\nTAKETHIS <a@x>\r\n%sTAKETHIS <b@x>\r\n%s", A1,
             A1);
    run(t, in);
    CHECK_EQ_STR(t->out, "203 Streaming permitted\r\n239 <a@x>\r\n439 <b@x>\r\n");
    CHECK_EQ_STR(t->arts, "Path: x\r\nMessage-ID: <a@x>\r\n\r\nbody\r\n.dotted\r\n|"
                          "Path: x\r\nMessage-ID: <a@x>\r\n\r\nbody\r\n.dotted\r\n|");
    nf_nntp_free(t->s);
}

TEST(takethis_defer_closes_with_400)
{
    static const nf_nntp_verdict v[] = {NF_NNTP_DEFER};
    sess *t = open_sess(v, NV(v), 0);
    char in[4096];
    snprintf(in, sizeof in, "TAKETHIS <a@x>\r\n%sCHECK <z@x>\r\n", A1);
    run(t, in);
    CHECK_EQ_STR(t->out, "400 Service temporarily unavailable; try again later\r\n");
    CHECK(nf_nntp_closing(t->s));
    nf_nntp_free(t->s);
}

TEST(takethis_bad_id_reads_article_then_439)
{
    sess *t = open_sess(NULL, 0, 0);
    char in[4096];
    snprintf(in, sizeof in, "TAKETHIS bad-id\r\n%sTAKETHIS\r\nHELO\r\n", A1);
    run(t, in);
    CHECK_EQ_STR(t->out, "439 bad-id\r\n501 Syntax error\r\n500 Unknown command\r\n");
    CHECK_EQ_STR(t->arts, "");
    nf_nntp_free(t->s);
}

TEST(ihave_codes)
{
    static const nf_nntp_verdict v[] = {NF_NNTP_WANT,   NF_NNTP_ACCEPT,  NF_NNTP_WANT,
                                        NF_NNTP_REJECT, NF_NNTP_WANT,    NF_NNTP_DEFER,
                                        NF_NNTP_DEFER,  NF_NNTP_UNWANTED};
    sess *t = open_sess(v, NV(v), 0);
    char in[8192];
    snprintf(in, sizeof in,
             "IHAVE <a@x>\r\n%sIHAVE <b@x>\r\n%sIHAVE <c@x>\r\n%sIHAVE <d@x>\r\n"
             "IHAVE <e@x>\r\nIHAVE\r\nIHAVE <>\r\n",
             A1, A1, A1);
    run(t, in);
    CHECK_EQ_STR(t->out, "335 Send it; end with <CR-LF>.<CR-LF>\r\n"
                         "235 Article transferred OK\r\n"
                         "335 Send it; end with <CR-LF>.<CR-LF>\r\n"
                         "437 Article rejected; do not retry\r\n"
                         "335 Send it; end with <CR-LF>.<CR-LF>\r\n"
                         "436 Transfer failed; try again later\r\n"
                         "436 Retry later\r\n"
                         "435 Duplicate\r\n"
                         "501 Syntax error\r\n501 Bad message-id\r\n");
    nf_nntp_stats st;
    nf_nntp_get_stats(t->s, &st);
    CHECK_EQ_U64(st.accepted, 1);
    CHECK_EQ_U64(st.rejected, 2);
    CHECK_EQ_U64(st.deferred, 2);
    nf_nntp_free(t->s);
}

TEST(too_big_article_read_and_refused_session_goes_on)
{
    static const nf_nntp_verdict v[] = {NF_NNTP_WANT, NF_NNTP_WANT, NF_NNTP_ACCEPT};
    sess *t = open_sess(v, NV(v), 100);
    char big[4096], in[16384];
    size_t o = 0;
    for (int i = 0; i < 50; i++)
        o += (size_t)snprintf(big + o, sizeof big - o, "line %02d of a big one\r\n", i);
    snprintf(
        in, sizeof in,
        "TAKETHIS <big@x>\r\n%s.\r\nIHAVE <big2@x>\r\n%s.\r\nIHAVE <s@x>\r\nsmall\r\n"
        ".\r\n",
        big, big);
    run(t, in);
    CHECK_EQ_STR(t->out, "439 <big@x>\r\n"
                         "335 Send it; end with <CR-LF>.<CR-LF>\r\n"
                         "437 Article too large (over 100 bytes)\r\n"
                         "335 Send it; end with <CR-LF>.<CR-LF>\r\n"
                         "235 Article transferred OK\r\n");
    CHECK_EQ_STR(t->arts, "small\r\n|");
    nf_nntp_stats st;
    nf_nntp_get_stats(t->s, &st);
    CHECK_EQ_U64(st.too_big, 2);
    nf_nntp_free(t->s);
}

TEST(malformed_commands)
{
    sess *t = open_sess(NULL, 0, 0);
    char in[4096];
    memset(in, 'A', 600);
    memcpy(in + 600, "\r\n\r\nFOO bar\r\nLIST\r\n", 20);
    in[620] = 0;
    run(t, in);
    CHECK_EQ_STR(t->out,
                 "501 Command line too long (at most 512 bytes)\r\n"
                 "500 Empty command\r\n500 Unknown command\r\n500 Unknown command\r\n");
    /* a 512-byte line (CRLF included) is not too long */
    t->out_len = 0;
    memcpy(in, "CHECK <", 7);
    memset(in + 7, 'a', 510 - 7 - 3);
    memcpy(in + 507, "@b>\r\n", 6);
    CHECK_EQ_INT(strlen(in), 512);
    run(t, in);
    CHECK_EQ_STR(t->out, "501 Bad message-id\r\n"); /* over 250: parsed, then refused */
    /* NUL inside a line */
    t->out_len = 0;
    CHECK_RC(nf_nntp_decide(t->s, NF_NNTP_WANT), TERN_ESTATE);
    size_t used;
    CHECK_OK(nf_nntp_feed(t->s, "QU\0IT\r\n", 7, &used));
    CHECK_EQ_U64(used, 7);
    drain(t);
    CHECK_EQ_STR(t->out, "501 NUL in command line\r\n");
    nf_nntp_free(t->s);
}

TEST(bare_lf_and_terminator_forms)
{
    static const nf_nntp_verdict v[] = {NF_NNTP_ACCEPT, NF_NNTP_ACCEPT};
    sess *t = open_sess(v, NV(v), 0);
    run(t, "TAKETHIS <a@x>\nl1\n..l2\n.x\n.\nTAKETHIS <b@x>\r\n.\r\r\n.\r\n");
    CHECK_EQ_STR(t->out, "239 <a@x>\r\n239 <b@x>\r\n");
    CHECK_EQ_STR(t->arts, "l1\n.l2\n.x\n|.\r\r\n|");
    nf_nntp_free(t->s);
}

TEST(wrong_verdict_refused)
{
    sess *t = open_sess(NULL, 0, 0);
    size_t used;
    CHECK_OK(nf_nntp_feed(t->s, "CHECK <a@x>\r\nCHECK <b@x>\r\n", 26, &used));
    CHECK_EQ_U64(used, 13); /* stops at the pending decision */
    CHECK_RC(nf_nntp_decide(t->s, NF_NNTP_ACCEPT), -EINVAL);
    nf_nntp_ev ev;
    nf_nntp_event(t->s, &ev);
    CHECK_EQ_INT(ev.type, NF_NNTP_EV_CHECK);
    CHECK_EQ_STR(ev.msgid, "<a@x>");
    CHECK_OK(nf_nntp_decide(t->s, NF_NNTP_WANT));
    nf_nntp_free(t->s);
}

/* The same pipelined stream fed whole and in every chunk size from 1 to 40
 * gives the same responses and articles. */
TEST(any_split_same_session)
{
    static const nf_nntp_verdict v[] = {NF_NNTP_WANT,   NF_NNTP_ACCEPT, NF_NNTP_REJECT,
                                        NF_NNTP_WANT,   NF_NNTP_ACCEPT, NF_NNTP_UNWANTED,
                                        NF_NNTP_ACCEPT, NF_NNTP_WANT};
    char in[8192];
    snprintf(
        in, sizeof in,
        "MODE STREAM\r\nCHECK <1@x>\r\nTAKETHIS <1@x>\r\n%sTAKETHIS <2@x>\r\n%s"
        "IHAVE <3@x>\r\n%sCHECK <4@x>\r\nBOGUS\r\nTAKETHIS <5@x>\r\n%sCHECK <6@x>\r\n"
        "QUIT\r\n",
        A1, A1, A1, A1);
    static char ref_out[1 << 16], ref_arts[1 << 16];
    for (size_t step = 0; step <= 40; step++) {
        sess *t = open_sess(v, NV(v), 0);
        t->step = step;
        run(t, in);
        CHECK(nf_nntp_closing(t->s));
        if (step == 0) {
            memcpy(ref_out, t->out, t->out_len + 1);
            memcpy(ref_arts, t->arts, t->arts_len + 1);
            CHECK(strstr(ref_out, "239 <5@x>\r\n238 <6@x>\r\n205 Bye\r\n"));
        } else {
            CHECK_EQ_STR(t->out, ref_out);
            CHECK_EQ_STR(t->arts, ref_arts);
        }
        nf_nntp_free(t->s);
    }
}

TEST(output_backpressure)
{
    nf_nntp *s;
    nf_nntp_opts o = {.max_output = 64};
    CHECK_OK(nf_nntp_new(&s, &o));
    const char *p;
    nf_nntp_output_done(s, nf_nntp_output(s, &p));
    char in[4000];
    size_t n = 0;
    for (int i = 0; i < 200; i++)
        n += (size_t)snprintf(in + n, sizeof in - n, "BAD\r\n");
    size_t used, total = 0;
    CHECK_OK(nf_nntp_feed(s, in, n, &used));
    CHECK(used < n); /* stopped: nobody reads the output */
    CHECK(nf_nntp_output(s, &p) >= 64);
    total = used;
    int rounds = 0;
    while (total < n && rounds++ < 1000) {
        nf_nntp_output_done(s, nf_nntp_output(s, &p));
        CHECK_OK(nf_nntp_feed(s, in + total, n - total, &used));
        total += used;
    }
    CHECK_EQ_U64(total, n);
    nf_nntp_stats st;
    nf_nntp_get_stats(s, &st);
    CHECK_EQ_U64(st.bad_commands, 200);
    nf_nntp_free(s);
}
