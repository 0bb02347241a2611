/* amsstop <application> <authority>: stops the venture's message space in
 * this continuum, as ION's. It registers in role amsstop and publishes on
 * subject "amsstop" (modules that subscribe to it stop themselves), then
 * asks the configuration server for the root cell's registrar and sends it
 * Tern's MAMS stop order, which every registrar passes on to the others it
 * knows before its amsd exits. The MIB is the default one (TERN_AMS_MIB,
 * amsmib.xml or mib.amsrc). */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ams.h"
#include "ams_mib.h"
#include "ams_net.h"

static int stop_registrar(const char *app, const char *auth)
{
    const char *src = getenv("TERN_AMS_MIB");
    if (!src || !*src)
        src = access("amsmib.xml", R_OK) == 0 ? "amsmib.xml" : "mib.amsrc";
    char err[320];
    ams_mib *mib;
    if (ams_mib_load_file(src, &mib, err, sizeof err)) {
        fprintf(stderr, "amsstop: %s\n", err);
        return 1;
    }
    const ams_mib_venture *v = ams_mib_venture_find(mib, app, auth);
    int n;
    const char *const *cs = ams_mib_cs_endpoints(mib, &n);
    mams_ep csep, self;
    int fd = -1, rc = 1;
    if (!v || !n || ams_net_parse(cs[0], AMS_CS_PORT, &csep, err, sizeof err) ||
        ams_net_udp(&fd, 0, &self)) {
        fprintf(stderr, "amsstop: %s: no venture %s/%s or no configuration server\n", src,
                app, auth);
        goto out;
    }
    uint8_t body[2] = {0, 0}, pdu[MAMS_MAX_PDU];
    size_t len;
    for (int attempt = 0; attempt < 10 && rc; attempt++) {
        mams_pdu q = {.type = MAMS_REGISTRAR_QUERY,
                      .venture = (uint16_t)v->nbr,
                      .memo = (uint32_t)attempt + 1,
                      .body = body,
                      .body_len = 2};
        struct sockaddr_in sa;
        ams_net_sockaddr(&csep, &sa);
        if (mams_encode(&q, pdu, sizeof pdu, &len) ||
            sendto(fd, pdu, len, 0, (struct sockaddr *)&sa, sizeof sa) < 0)
            break;
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        if (poll(&pf, 1, 300) <= 0)
            continue;
        ssize_t r = recv(fd, pdu, sizeof pdu, 0);
        mams_pdu a;
        if (r <= 0 || mams_decode(pdu, (size_t)r, &a, NULL) || a.type != MAMS_CELL_SPEC)
            continue;
        mams_cur c;
        mams_cur_reader(&c, a.body, a.body_len);
        unsigned k = mams_get16(&c);
        for (unsigned i = 0; i < k && !c.err; i++) {
            mams_get16(&c);
            mams_ep reg;
            mams_get_ep(&c, &reg);
            mams_get32(&c);
            if (c.err)
                break;
            mams_pdu s = {.type = MAMS_STOP, .venture = (uint16_t)v->nbr};
            ams_net_sockaddr(&reg, &sa);
            if (mams_encode(&s, pdu, sizeof pdu, &len) == 0 &&
                sendto(fd, pdu, len, 0, (struct sockaddr *)&sa, sizeof sa) >= 0) {
                printf("amsstop: told the registrars of venture %d to stop\n", v->nbr);
                rc = 0;
            }
        }
    }
    if (rc)
        fprintf(stderr, "amsstop: no registrar of venture %d answered\n", v->nbr);
out:
    if (fd >= 0)
        close(fd);
    ams_mib_free(mib);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: amsstop <application name> <authority name>\n");
        return 2;
    }
    AmsModule me;
    if (ams_register("", NULL, argv[1], argv[2], "", "amsstop", &me) < 0) {
        fprintf(stderr, "amsstop: cannot register: %s\n", ams_last_error());
        return 1;
    }
    int subj = ams_lookup_subject_nbr(me, "amsstop");
    if (subj > 0) {
        if (ams_publish(me, subj, 0, 0, 0, NULL, 0) < 0)
            fprintf(stderr, "amsstop: cannot publish 'amsstop': %s\n", ams_last_error());
    } else {
        fprintf(stderr,
                "amsstop: subject amsstop is not in the MIB: modules are not told\n");
    }
    ams_unregister(me);
    return stop_registrar(argv[1], argv[2]);
}
