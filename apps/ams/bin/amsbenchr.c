/* amsbenchr: subscribes to subject "bench" of venture amsdemo/test (role
 * benchr, assured, in transmission order, as ION's) and counts what comes
 * until the message numbered 1, then prints ION's three lines: messages and
 * bytes received and the time they took, messages per second, Mbps
 * (2^20 bits). Tern: -t <seconds> gives up after that long without a
 * message (exit 1). */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ams.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    int idle_s = 0, o;
    while ((o = getopt(argc, argv, "t:")) != -1) {
        if (o != 't' || (idle_s = atoi(optarg)) < 1) {
            fprintf(stderr, "usage: amsbenchr [-t idle_seconds]\n");
            return 2;
        }
    }
    AmsModule me;
    if (ams_register("", NULL, "amsdemo", "test", "", "benchr", &me) < 0) {
        fprintf(stderr, "amsbenchr: cannot register: %s\n", ams_last_error());
        return 1;
    }
    int subj = ams_lookup_subject_nbr(me, "bench");
    if (subj < 0 ||
        ams_subscribe(me, 0, 0, 0, subj, 8, 0, AmsTransmissionOrder, AmsAssured) < 0) {
        fprintf(stderr, "amsbenchr: %s\n", ams_last_error());
        ams_unregister(me);
        return 1;
    }
    printf("amsbenchr: subscribed to subject %d (bench)\n", subj);
    fflush(stdout);
    long msgs = -1;
    double bytes = 0, t0 = 0;
    int rc = 0;
    for (;;) {
        AmsEvent ev;
        if (ams_get_event(me, idle_s ? idle_s * 1000000 : AMS_BLOCKING, &ev) < 0) {
            fprintf(stderr, "amsbenchr: %s\n", ams_last_error());
            rc = 1;
            break;
        }
        int type = ams_get_event_type(ev);
        if (type == TIMEOUT_EVT) {
            ams_recycle_event(ev);
            fprintf(stderr, "amsbenchr: nothing for %d s; %ld message(s) so far\n",
                    idle_s, msgs < 0 ? 0 : msgs);
            rc = 1;
            break;
        }
        uint32_t nbr = 0;
        if (type == AMS_MSG_EVT) {
            char *txt;
            int len;
            ams_parse_msg(ev, NULL, NULL, NULL, NULL, &len, &txt, NULL, NULL, NULL, NULL);
            if (len >= 4) {
                memcpy(&nbr, txt, 4);
                nbr = ntohl(nbr);
            }
            if (nbr < 1)
                nbr = 1;
            if (msgs < 0) {
                t0 = now_s();
                msgs = 0;
            }
            bytes += len;
            msgs++;
        }
        ams_recycle_event(ev);
        if (nbr == 1)
            break;
    }
    if (!rc) {
        double secs = now_s() - t0;
        if (secs <= 0)
            secs = 1e-6;
        printf("Received %ld messages, a total of %.0f bytes, in %f seconds.\n", msgs,
               bytes, secs);
        printf("%10.3f messages per second.\n", msgs / secs);
        printf("%10.3f Mbps.\n", bytes / secs * 8 / (1024 * 1024));
    }
    ams_module_stats st;
    ams_get_stats(me, &st);
    printf("amsbenchr: received %llu, dropped %llu unsolicited, %llu unauthorised, %llu "
           "malformed, %llu for a full queue\n",
           (unsigned long long)st.received, (unsigned long long)st.dropped_unsolicited,
           (unsigned long long)st.dropped_unauthorised,
           (unsigned long long)st.dropped_malformed,
           (unsigned long long)st.dropped_queue_full);
    ams_unregister(me);
    return rc;
}
