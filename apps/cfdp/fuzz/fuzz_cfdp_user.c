/* libFuzzer target: the user layer (cfdp_user.h) fed a Metadata indication
 * whose options are the input (what a peer's Metadata PDU carries) at an
 * entity whose memfs holds a few files, then the end of every transaction
 * the entity started for it, then an answer-shaped Metadata naming each
 * request of ours. Nothing may crash or leak; every put the user layer
 * starts must be one the entity accepted; no handle may stay open once the
 * entity is gone. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cfdp.h"
#include "cfdp_fs.h"
#include "cfdp_msg.h"
#include "cfdp_user.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct host {
    size_t sent;
} host;

static int hsend(void *ctx, uint64_t dst, const uint8_t *pdu, size_t len)
{
    (void)dst;
    (void)pdu;
    (void)len;
    ((host *)ctx)->sent++;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *raw = malloc(size ? size : 1); /* exact size: ASan sees any over-read */
    if (!raw)
        return 0;
    memcpy(raw, data, size);
    cfdp_memfs *m;
    cfdp_fs fs;
    if (cfdp_memfs_new(&m, &fs)) {
        free(raw);
        return 0;
    }
    cfdp_memfs_put(m, "a", "alpha", 5);
    cfdp_memfs_put(m, "d/b", "bravo", 5);
    cfdp_memfs_put_pattern(m, "p", 5000, 1);
    host h = {0};
    cfdp_entity_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.id = 2;
    cfg.fs = fs;
    cfdp_peer_cfg_defaults(&cfg.defaults);
    cfg.fs_requests = cfdp_fs_requests_execute;
    cfdp_host hc;
    memset(&hc, 0, sizeof hc);
    hc.ctx = &h;
    hc.send = hsend;
    hc.queue_indications = 1;
    cfdp_entity *e = NULL;
    cfdp_user *u = NULL;
    cfdp_user_cfg uc = {fs, NULL, 0};
    if (cfdp_entity_new(&cfg, &hc, &e) || cfdp_user_new(e, &uc, &u))
        goto out;
    /* a request of our own, so answers can match it */
    cfdp_txn_id mine;
    if (cfdp_user_dir_list(u, 0, 1, "x", "x.lst", &mine))
        abort();

    cfdp_ind ind;
    memset(&ind, 0, sizeof ind);
    ind.type = CFDP_IND_METADATA;
    ind.role = CFDP_ROLE_RECEIVER;
    ind.txn = (cfdp_txn_id){1, 77};
    ind.peer = 1;
    ind.src_name = ind.dst_name = "";
    /* the options as a decoded list would give them: count what parses */
    cfdp_tlvs all = {NULL, 0, raw, size};
    size_t pos = 0;
    cfdp_tlv t;
    while (cfdp_tlvs_next(&all, &pos, &t) == 0)
        all.count++;
    all.raw_len = pos; /* the well-formed prefix */
    ind.options = all;
    int rc = cfdp_user_on_indication(u, 1, &ind);
    if (rc > 0)
        abort();
    /* the same as an answer to our request (originating ID = mine) */
    ind.txn = (cfdp_txn_id){1, 78};
    rc = cfdp_user_on_indication(u, 2, &ind);
    if (rc > 0)
        abort();
    /* the end of every transaction the entity holds, as the sender */
    cfdp_ind q;
    while (cfdp_entity_next_indication(e, &q) == 0) {
        if (q.type != CFDP_IND_TRANSACTION)
            continue;
        cfdp_ind fin;
        memset(&fin, 0, sizeof fin);
        fin.type = CFDP_IND_FINISHED;
        fin.role = CFDP_ROLE_SENDER;
        fin.txn = q.txn;
        fin.peer = q.peer;
        fin.condition = (uint8_t)(size % 16 == 12 ? 0 : size % 16);
        fin.src_name = fin.dst_name = "";
        if (cfdp_user_on_indication(u, 3, &fin) > 0)
            abort();
    }
    /* and the end of the carriers of any answers */
    cfdp_ind fin;
    memset(&fin, 0, sizeof fin);
    fin.type = CFDP_IND_FINISHED;
    fin.role = CFDP_ROLE_RECEIVER;
    fin.txn = (cfdp_txn_id){1, 78};
    fin.peer = 1;
    fin.src_name = fin.dst_name = "";
    cfdp_user_on_indication(u, 4, &fin);
    cfdp_user_event ev;
    while ((rc = cfdp_user_next_event(u, &ev)) == 0)
        if (ev.peer != 1)
            abort();
    if (rc != TERN_EEND)
        abort();
out:
    cfdp_user_free(u);
    cfdp_entity_free(e);
    if (cfdp_memfs_open_files(m) != 0)
        abort();
    cfdp_memfs_free(m);
    free(raw);
    return 0;
}
