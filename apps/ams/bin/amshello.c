/* amshello: AMS's "hello world", as ION's. Two processes register in ION's
 * built-in test MIB ("@"): the catcher invites subject 1 (text) and waits
 * for a message; the pitcher waits until it hears of that invitation and
 * sends its greeting privately to the catcher. Needs `amsd @ @ amsdemo test
 * ""` running. Exits 0 once the catcher has the greeting. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ams.h"

static int pitch(void)
{
    AmsModule me;
    char text[80];
    snprintf(text, sizeof text, "Hello from process %d", (int)getpid());
    if (ams_register("@", NULL, "amsdemo", "test", "", "pitch", &me) < 0) {
        fprintf(stderr, "amshello: pitch: %s\n", ams_last_error());
        return 1;
    }
    for (;;) {
        AmsEvent ev;
        if (ams_get_event(me, AMS_BLOCKING, &ev) < 0)
            break;
        AmsStateType state;
        AmsChangeType change;
        int unit, nbr, role, dcont, dunit, subj, prio;
        unsigned char flow;
        AmsSequence seq;
        AmsDiligence dil;
        int is_notice = ams_get_event_type(ev) == NOTICE_EVT &&
                        ams_parse_notice(ev, &state, &change, &unit, &nbr, &role, &dcont,
                                         &dunit, &subj, &prio, &flow, &seq, &dil) == 0;
        ams_recycle_event(ev);
        if (is_notice && state == AmsInvitationState && change == AmsStateBegins &&
            subj == 1) {
            printf("Process %d sending:  '%s'\n", (int)getpid(), text);
            fflush(stdout);
            int rc = ams_send(me, THIS_CONTINUUM, unit, nbr, 1, 0, 0,
                              (int)strlen(text) + 1, text, 0);
            if (rc < 0)
                fprintf(stderr, "amshello: pitch: %s\n", ams_last_error());
            ams_unregister(me);
            return rc < 0;
        }
    }
    ams_unregister(me);
    return 1;
}

static int catch_(void)
{
    AmsModule me;
    if (ams_register("@", NULL, "amsdemo", "test", "", "catch", &me) < 0) {
        fprintf(stderr, "amshello: catch: %s\n", ams_last_error());
        return 1;
    }
    if (ams_invite(me, 0, 0, 0, 1, 8, 0, AmsArrivalOrder, AmsAssured) < 0) {
        fprintf(stderr, "amshello: catch: %s\n", ams_last_error());
        ams_unregister(me);
        return 1;
    }
    int rc = 1;
    for (;;) {
        AmsEvent ev;
        if (ams_get_event(me, 20000000, &ev) < 0 ||
            ams_get_event_type(ev) == TIMEOUT_EVT) {
            fprintf(stderr, "amshello: catch: no greeting within 20 s\n");
            if (ev)
                ams_recycle_event(ev);
            break;
        }
        if (ams_get_event_type(ev) == AMS_MSG_EVT) {
            char *txt;
            int len;
            ams_parse_msg(ev, NULL, NULL, NULL, NULL, &len, &txt, NULL, NULL, NULL, NULL);
            printf("Process %d received: '%.*s'\n", (int)getpid(), len, txt);
            fflush(stdout);
            ams_recycle_event(ev);
            rc = 0;
            break;
        }
        ams_recycle_event(ev);
    }
    ams_unregister(me);
    return rc;
}

int main(void)
{
    pid_t pid = fork();
    if (pid < 0) {
        perror("amshello: fork");
        return 1;
    }
    if (pid == 0)
        return pitch();
    int rc = catch_();
    int st = 0;
    waitpid(pid, &st, 0);
    return rc || !WIFEXITED(st) || WEXITSTATUS(st);
}
