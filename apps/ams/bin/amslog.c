/* amslog <unit> <role> <application> <authority> [s|i]: logs AMS messages,
 * as ION's. Lines of standard input declare interest:
 *   +<subject> [<continuum> [<unit> [<role>]]]   subscribe (s, the default)
 *                                                or invite (i)
 *   -<subject> [...]                             withdraw it
 *   .                                            stop
 * ("_" for the continuum: all; for the unit: the root unit; "everything" is
 * every subject). Each message is written to standard output as ION's UNIX
 * amslog writes it (subject name length, name, content length, content;
 * lengths native ints) for amslogprt; a query is answered "Got '<first 128
 * bytes>'.". The MIB is the default one. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ams.h"

static volatile int done;

static void *logger(void *arg)
{
    AmsModule me = arg;
    while (!done) {
        AmsEvent e;
        if (ams_get_event(me, 200000, &e) < 0)
            break;
        if (ams_get_event_type(e) == AMS_MSG_EVT) {
            int subj, len;
            char *c;
            AmsMsgType t;
            ams_parse_msg(e, NULL, NULL, NULL, &subj, &len, &c, NULL, &t, NULL, NULL);
            const char *name = ams_lookup_subject_name(me, subj);
            if (!name)
                name = "?";
            int nl = (int)strlen(name);
            unsigned int cl = (unsigned int)len;
            fwrite(&nl, sizeof nl, 1, stdout);
            fwrite(name, (size_t)nl, 1, stdout);
            fwrite(&cl, sizeof cl, 1, stdout);
            if (len)
                fwrite(c, (size_t)len, 1, stdout);
            fflush(stdout);
            if (t == AmsMsgQuery) {
                char r[160];
                snprintf(r, sizeof r, "Got '%.*s'.", len > 128 ? 128 : len, c);
                if (ams_reply(me, e, subj, 0, 0, (int)strlen(r) + 1, r) < 0)
                    fprintf(stderr, "amslog: reply: %s\n", ams_last_error());
            }
        }
        ams_recycle_event(e);
    }
    return NULL;
}

/* The number named by word (kind: "continuum", "unit", "role"), with "_"
 * meaning 0. -1 (and a message) if unknown. */
static int number(AmsModule me, const char *kind, const char *word)
{
    if (!word || !strcmp(word, "_"))
        return 0;
    int n = !strcmp(kind, "continuum") ? ams_lookup_continuum_nbr(me, word)
            : !strcmp(kind, "unit")    ? ams_lookup_unit_nbr(me, word)
                                       : ams_lookup_role_nbr(me, word);
    if (n < 0)
        fprintf(stderr, "amslog: unknown %s %s\n", kind, word);
    return n;
}

int main(int argc, char **argv)
{
    if (argc < 5 || argc > 6 ||
        (argc == 6 && strcmp(argv[5], "s") && strcmp(argv[5], "i"))) {
        fprintf(stderr,
                "usage: amslog <unit> <role> <application> <authority> [s | i]\n");
        return 2;
    }
    int invite = argc == 6 && argv[5][0] == 'i';
    AmsModule me;
    if (ams_register("", NULL, argv[3], argv[4], argv[1], argv[2], &me) < 0) {
        fprintf(stderr, "amslog can't register: %s\n", ams_last_error());
        return 1;
    }
    pthread_t t;
    pthread_create(&t, NULL, logger, me);
    char line[512];
    while (fgets(line, sizeof line, stdin)) {
        if (line[0] == '.')
            break;
        if (line[0] != '+' && line[0] != '-') {
            if (line[0] != '\n')
                fprintf(stderr, "amslog: a line is +<subject>, -<subject> or .\n");
            continue;
        }
        char *w[4] = {0};
        int k = 0;
        for (char *tok = strtok(line + 1, " \t\r\n"); tok && k < 4;
             tok = strtok(NULL, " \t\r\n"))
            w[k++] = tok;
        if (!k) {
            fprintf(stderr, "amslog: no subject\n");
            continue;
        }
        int subj = ams_lookup_subject_nbr(me, w[0]);
        int cont = number(me, "continuum", w[1]), unit = number(me, "unit", w[2]),
            role = number(me, "role", w[3]);
        if (subj < 0 || cont < 0 || unit < 0 || role < 0) {
            if (subj < 0)
                fprintf(stderr, "amslog: unknown subject %s\n", w[0]);
            continue;
        }
        int rc;
        if (line[0] == '+')
            rc = invite ? ams_invite(me, role, cont, unit, subj, 8, 0, AmsArrivalOrder,
                                     AmsAssured)
                        : ams_subscribe(me, role, cont, unit, subj, 8, 0, AmsArrivalOrder,
                                        AmsAssured);
        else
            rc = invite ? ams_disinvite(me, role, cont, unit, subj)
                        : ams_unsubscribe(me, role, cont, unit, subj);
        if (rc < 0)
            fprintf(stderr, "amslog: %s\n", ams_last_error());
    }
    done = 1;
    pthread_join(t, NULL);
    ams_unregister(me);
    return 0;
}
