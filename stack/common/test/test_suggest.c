#include "tern/suggest.h"
#include "tern_test.h"

TEST(edit_distance)
{
    CHECK_EQ_U64(tern_edit_distance("", ""), 0);
    CHECK_EQ_U64(tern_edit_distance("span", "span"), 0);
    CHECK_EQ_U64(tern_edit_distance("spna", "span"), 1); /* a swap */
    CHECK_EQ_U64(tern_edit_distance("contcat", "contact"), 1);
    CHECK_EQ_U64(tern_edit_distance("spa", "span"), 1);   /* one left out */
    CHECK_EQ_U64(tern_edit_distance("spaan", "span"), 1); /* one too many */
    CHECK_EQ_U64(tern_edit_distance("spen", "span"), 1);  /* one wrong */
    CHECK_EQ_U64(tern_edit_distance("heapwords", "heapWords"), 0);
    CHECK_EQ_U64(tern_edit_distance("kitten", "sitting"), 3);
    CHECK_EQ_U64(tern_edit_distance("", "abc"), 3);
    char longw[80];
    memset(longw, 'x', sizeof longw - 1);
    longw[sizeof longw - 1] = '\0';
    CHECK_EQ_U64(tern_edit_distance(longw, "x"), SIZE_MAX);
}

TEST(suggest_words)
{
    static const char *const keys[] = {"heapWords", "configFlags", "pathName", "wmSize",
                                       NULL};
    CHECK_EQ_STR(tern_suggest("heapWordz", keys), "heapWords");
    CHECK_EQ_STR(tern_suggest("heapwords", keys), "heapWords"); /* case */
    CHECK_EQ_STR(tern_suggest("configflag", keys), "configFlags");
    CHECK(tern_suggest("heapWords", keys) == NULL); /* known: nothing to suggest */
    CHECK(tern_suggest("sdrName", keys) == NULL);   /* nothing near */
    CHECK(tern_suggest("wmSiz", keys) != NULL);
    /* one- and two-letter words are a step from every other: never guessed */
    static const char *const ops[] = {"s", "x", "1", "m", NULL};
    CHECK(tern_suggest("z", ops) == NULL);
    CHECK(tern_suggest("q", ops) == NULL);
}

static tern_rc_cmd cmd_of(char **argv)
{
    tern_rc_cmd c = {.file = "f", .line = 1, .section = NULL, .argc = 0, .argv = argv};
    while (argv[c.argc])
        c.argc++;
    return c;
}

TEST(suggest_commands)
{
    static const char *const known[] = {"1",      "a span", "c span",       "d span",
                                        "a seat", "s",      "m maxretries", NULL};
    char *w1[] = {"a", "spna", "25", "1", NULL};
    tern_rc_cmd c = cmd_of(w1);
    CHECK_EQ_STR(tern_suggest_cmd(&c, known), "a span");
    char head[64];
    CHECK_EQ_STR(tern_cmd_head(&c, 2, head, sizeof head), "a spna");
    CHECK_EQ_STR(tern_cmd_head(&c, 9, head, sizeof head), "a spna 25 1");
    char *w2[] = {"m", "maxretires", "3", NULL};
    c = cmd_of(w2);
    CHECK_EQ_STR(tern_suggest_cmd(&c, known), "m maxretries");
    char *w3[] = {"a", "contact", NULL}; /* nowhere near an ltpadmin command */
    c = cmd_of(w3);
    CHECK(tern_suggest_cmd(&c, known) == NULL);
    char *w4[] = {"z", NULL};
    c = cmd_of(w4);
    CHECK(tern_suggest_cmd(&c, known) == NULL);
    char *w5[] = {"a", "span", NULL}; /* known: no suggestion */
    c = cmd_of(w5);
    CHECK(tern_suggest_cmd(&c, known) == NULL);
    char tiny[4];
    CHECK_EQ_STR(tern_cmd_head(&c, 2, tiny, sizeof tiny), "a");
}
