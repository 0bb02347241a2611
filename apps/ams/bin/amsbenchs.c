/* amsbenchs <count> <size>: publishes count messages of size bytes on
 * subject "bench" of venture amsdemo/test (role benchs), as ION's: each
 * message starts with the number of messages still to come, this one
 * included (4 bytes, network order), the rest is spaces and a final NUL.
 * Waits a second first, for subscriptions to arrive. The MIB is the
 * default one (TERN_AMS_MIB, amsmib.xml or mib.amsrc). */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ams.h"

int main(int argc, char **argv)
{
    int count = argc > 1 ? atoi(argv[1]) : 0;
    int size = argc > 2 ? atoi(argv[2]) : 0;
    if (count < 1 || size < (int)sizeof(uint32_t) || size > MAX_AMS_CONTENT) {
        printf("Usage: amsbenchs <# of msgs to send> <msg length> (length %zu..%d)\n",
               sizeof(uint32_t), MAX_AMS_CONTENT);
        return 1;
    }
    char *buf = malloc((size_t)size);
    if (!buf)
        return 1;
    memset(buf, ' ', (size_t)size - 1);
    buf[size - 1] = 0;
    AmsModule me;
    if (ams_register("", NULL, "amsdemo", "test", "", "benchs", &me) < 0) {
        fprintf(stderr, "amsbenchs: cannot register: %s\n", ams_last_error());
        free(buf);
        return 1;
    }
    int subj = ams_lookup_subject_nbr(me, "bench");
    if (subj < 0) {
        fprintf(stderr, "amsbenchs: %s\n", ams_last_error());
        ams_unregister(me);
        free(buf);
        return 1;
    }
    sleep(1); /* subscriptions arrive */
    int rc = 0;
    for (; count > 0; count--) {
        uint32_t n = htonl((uint32_t)count);
        memcpy(buf, &n, sizeof n);
        if (ams_publish(me, subj, 0, 0, size, buf, 0) < 0) {
            fprintf(stderr, "amsbenchs: cannot publish: %s\n", ams_last_error());
            rc = 1;
            break;
        }
    }
    ams_module_stats st;
    ams_get_stats(me, &st);
    printf("amsbenchs: published %llu messages, %llu copies sent, %llu send errors\n",
           (unsigned long long)st.published, (unsigned long long)st.sent,
           (unsigned long long)st.send_errors);
    ams_unregister(me);
    free(buf);
    return rc;
}
