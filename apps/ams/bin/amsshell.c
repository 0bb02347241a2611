/* amsshell <unit> <role> <application> <authority> [p|s|q|a]: issues AMS
 * messages from lines of standard input, as ION's:
 *   =<subject>[ <text>]  the subject of what follows (and a first message)
 *   r<n> c<n> u<n> m<n>  the role, continuum, unit, module of the domain or
 *                        destination
 *   .                    stop
 *   anything else        a message: published (p, the default), sent to
 *                        module m of unit u (s), sent as a query there and
 *                        its reply printed (q), or announced to the domain
 *                        r/c/u (a).
 * The MIB is the default one (TERN_AMS_MIB, amsmib.xml or mib.amsrc). Errors
 * are printed with what was wrong; the shell goes on. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ams.h"

int main(int argc, char **argv)
{
    if (argc < 5 || argc > 6 ||
        (argc == 6 && (strlen(argv[5]) != 1 || !strchr("psqa", argv[5][0])))) {
        fprintf(stderr, "usage: amsshell <unit> <role> <application> <authority> "
                        "[p | s | q | a]\n");
        return 2;
    }
    char mode = argc == 6 ? argv[5][0] : 'p';
    AmsModule me;
    if (ams_register("", NULL, argv[3], argv[4], argv[1], argv[2], &me) < 0) {
        fprintf(stderr, "amsshell can't register: %s\n", ams_last_error());
        return 1;
    }
    int subj = -1, role = 0, cont = THIS_CONTINUUM, unit = 0, mod = 0;
    char line[65536];
    while (fgets(line, sizeof line, stdin)) {
        size_t n = strlen(line);
        while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = 0;
        char *text = line;
        switch (line[0]) {
        case '.':
            ams_unregister(me);
            return 0;
        case 'r':
        case 'c':
        case 'u':
        case 'm': {
            char *end;
            long v = strtol(line + 1, &end, 10);
            if (line[1] && !*end && v >= -1 && v <= 32767) {
                *(line[0] == 'r'   ? &role
                  : line[0] == 'c' ? &cont
                  : line[0] == 'u' ? &unit
                                   : &mod) = (int)v;
                continue;
            }
            break; /* not a number: a message */
        }
        case '=': {
            char *sp = strchr(line + 1, ' ');
            if (sp)
                *sp = 0;
            int s = ams_lookup_subject_nbr(me, line + 1);
            if (s < 0) {
                fprintf(stderr, "amsshell: %s\n", ams_last_error());
                continue;
            }
            subj = s;
            if (!sp)
                continue;
            text = sp + 1;
            break;
        }
        default:
            break;
        }
        if (subj < 0) {
            fprintf(stderr, "amsshell: no subject yet ('=<subject name>' first)\n");
            continue;
        }
        int len = (int)strlen(text) + 1, rc;
        AmsEvent reply = NULL;
        switch (mode) {
        case 's':
            rc = ams_send(me, cont, unit, mod, subj, 0, 0, len, text, 0);
            break;
        case 'q':
            rc = ams_query(me, cont, unit, mod, subj, 0, 0, len, text, 0, 10000000,
                           &reply);
            break;
        case 'a':
            rc = ams_announce(me, role, cont, unit, subj, 0, 0, len, text, 0);
            break;
        default:
            rc = ams_publish(me, subj, 0, 0, len, text, 0);
            break;
        }
        if (rc < 0) {
            fprintf(stderr, "amsshell: %s\n", ams_last_error());
            continue;
        }
        if (reply) {
            char *c;
            int cl;
            if (ams_get_event_type(reply) == AMS_MSG_EVT &&
                ams_parse_msg(reply, NULL, NULL, NULL, NULL, &cl, &c, NULL, NULL, NULL,
                              NULL) == 0)
                printf("reply: %.*s\n", cl && !c[cl - 1] ? cl - 1 : cl, c);
            else
                printf("no reply within 10 s\n");
            fflush(stdout);
            ams_recycle_event(reply);
        }
    }
    ams_unregister(me);
    return 0;
}
