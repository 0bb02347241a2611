/* libFuzzer target: a client's messages into ternd's client server
 * (node_cserver__input), on a memory store and a bundle agent of node 1.
 *
 * Input: messages, each preceded by its 16-bit little-endian length; the
 * first HELLO is sent for the fuzzer. Whatever comes, the server must not
 * crash or leak, must end only that client, and must leave the endpoints it
 * opened closed afterwards. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cserver_int.h"
#include "tern_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/fuzz_cserver.XXXXXX");
        if (!mkdtemp(dir))
            abort();
    }
    tern_loop *loop;
    sdr *store;
    bp_agent *a;
    node_cserver *srv;
    tern_log *lg;
    char why[256];
    sdr_profile p = {.name = "fz", .heap_size = 1u << 20, .mode = SDR_MEMORY};
    bp_agent_cfg cfg = {.node = 1, .dedup_max = 1024};
    if (tern_loop_new(NULL, &loop) || sdr_open(&p, &store, why, sizeof why))
        abort();
    cfg.store = store;
    if (tern_log_open(&lg, "fz", NULL, TERN_LOG_ERROR, 0) ||
        bp_agent_new(loop, &cfg, NULL, lg, &a) ||
        node_cserver_new(loop, a, lg, dir, &srv))
        abort();
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv))
        abort();
    node_cserver_client *c;
    if (node_cserver__client_add(srv, sv[0], &c))
        abort();
    uint8_t hello[32];
    int hl = tern_proto_enc_hello(hello, sizeof hello, 1, TERN_PROTO_VERSION);
    if (node_cserver__input(srv, c, hello, (size_t)hl, -1))
        abort();
    size_t pos = 0;
    while (pos + 2 <= size) {
        size_t len = (size_t)data[pos] | (size_t)data[pos + 1] << 8;
        pos += 2;
        if (len > size - pos)
            len = size - pos;
        /* a private copy: reads past the message are caught */
        uint8_t *m = malloc(len ? len : 1);
        if (!m)
            abort();
        memcpy(m, data + pos, len);
        pos += len;
        int rc = node_cserver__input(srv, c, m, len, -1);
        free(m);
        if (rc)
            break; /* the client was ended */
        uint8_t drain[TERN_PROTO_MSG_MAX];
        while (recv(sv[1], drain, sizeof drain, MSG_DONTWAIT) > 0)
            ;
    }
    close(sv[1]);
    tern_loop_run(loop, TERN_RUN_NOWAIT);
    tern_loop_run(loop, TERN_RUN_NOWAIT);
    node_cserver_stats st;
    node_cserver_stats_get(srv, &st);
    if (st.clients != 0)
        abort();
    node_cserver_free(srv);
    bp_agent_free(a);
    sdr_close(store);
    tern_log_close(lg);
    if (tern_loop_close(loop))
        abort();
    return 0;
}
