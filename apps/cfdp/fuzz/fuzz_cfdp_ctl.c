/* libFuzzer target: cfdp_ctl's text helpers, which read what cfdpd and its
 * clients send each other, must stay inside the text: a value found by
 * cfdp_ctl_kv is a NUL-terminated copy of bytes that follow "key=" in the
 * input, no longer than cap; a transaction ID parsed with
 * cfdp_ctl_parse_txn, printed back, parses to the same ID; a put request
 * cfdp_ctl_put_decode accepts (priority, filestore requests and all) is
 * bounded (at most CFDP_CTL_FS_MAX requests, names within 255 bytes),
 * encodes, and decodes again to the same request; a filestore request
 * spec cfdp_ctl_fs_parse accepts has a known action and bounded names. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cfdp_ctl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void same_put(const cfdp_ctl_put_msg *a, const cfdp_ctl_put_msg *b)
{
    const cfdp_ctl_put_req *x = &a->req, *y = &b->req;
    if (strcmp(a->src, b->src) || strcmp(a->dst_name, b->dst_name) || x->dst != y->dst ||
        x->cls != y->cls || x->closure != y->closure ||
        x->checksum_type != y->checksum_type || x->segment != y->segment ||
        x->lifetime_s != y->lifetime_s || x->priority != y->priority || x->nfs != y->nfs)
        abort();
    for (size_t i = 0; i < x->nfs; i++)
        if (a->fs[i].action != b->fs[i].action ||
            strcmp(a->fs[i].first, b->fs[i].first) ||
            strcmp(a->fs[i].second, b->fs[i].second))
            abort();
}

static void put_round_trip(const char *text)
{
    static cfdp_ctl_put_msg m, again;
    static char enc[CFDP_CTL_MSG_MAX];
    char why[300];
    if (cfdp_ctl_put_decode(text, &m, why, sizeof why)) {
        if (!why[0])
            abort(); /* a refusal always says why */
        return;
    }
    const cfdp_ctl_put_req *r = &m.req;
    if (r->nfs > CFDP_CTL_FS_MAX || r->dst == 0 || r->cls < 0 || r->cls > 2 ||
        r->priority < 0 || r->priority > CFDP_CTL_PRIO_EXPEDITED ||
        strlen(m.src) > CFDP_FS_PATH_MAX || strlen(m.dst_name) > CFDP_FS_PATH_MAX ||
        (!m.src[0] && !r->nfs) || !m.src[0] != !m.dst_name[0])
        abort();
    for (size_t i = 0; i < r->nfs; i++)
        if (r->fs[i].action > CFDP_FS_DENY_DIR || !r->fs[i].first[0] ||
            strlen(r->fs[i].first) > CFDP_FS_PATH_MAX ||
            strlen(r->fs[i].second) > CFDP_FS_PATH_MAX || strchr(r->fs[i].first, '\t'))
            abort();
    int n = cfdp_ctl_put_encode(r, enc, sizeof enc);
    if (n < 0 || (size_t)n != strlen(enc))
        abort();
    if (cfdp_ctl_put_decode(enc, &again, why, sizeof why))
        abort();
    same_put(&m, &again);
}

static const char *const keys[] = {"txn",  "src",  "dst_name", "code", "msg",
                                   "root", "peer", "progress", "t",    "x"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 8192)
        return 0;
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = 0;
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
        for (int sp = 0; sp < 2; sp++) {
            char v[64];
            int rc = cfdp_ctl_kv(text, keys[k], sp, v, sizeof v);
            if (rc == 0) {
                size_t vl = strlen(v);
                if (vl >= sizeof v || !strstr(text, v) || strchr(v, '\n') ||
                    (sp && strchr(v, ' ')))
                    abort();
                char pat[80];
                snprintf(pat, sizeof pat, "%s=%s", keys[k], v);
                if (!strstr(text, pat))
                    abort();
            } else if (rc != TERN_ENOTFOUND && rc != TERN_ENOSPACE) {
                abort();
            }
        }
    cfdp_txn_id id;
    if (cfdp_ctl_parse_txn(text, &id) == 0) {
        char back[48];
        snprintf(back, sizeof back, "%" PRIu64 ".%" PRIu64, id.src, id.seq);
        if (text[0] < '0' || text[0] > '9')
            abort(); /* digits only: no sign, no space */
        cfdp_txn_id again;
        if (cfdp_ctl_parse_txn(back, &again) || again.src != id.src ||
            again.seq != id.seq)
            abort();
    }
    /* as a put request: "put\n" and the input, and the input itself */
    char *put = malloc(size + 5);
    if (put) {
        memcpy(put, "put\n", 4);
        memcpy(put + 4, text, size + 1);
        put_round_trip(put);
        put_round_trip(text);
        free(put);
    }
    /* as a --fs spec */
    cfdp_ctl_fsreq f;
    char why[300];
    if (cfdp_ctl_fs_parse(text, &f, why, sizeof why) == 0) {
        if (f.action > CFDP_FS_DENY_DIR || !f.first[0] ||
            strlen(f.first) > CFDP_FS_PATH_MAX || strlen(f.second) > CFDP_FS_PATH_MAX ||
            strncasecmp(text, cfdp_ctl_fs_word(f.action),
                        strlen(cfdp_ctl_fs_word(f.action))))
            abort();
    } else if (!why[0]) {
        abort();
    }
    free(text);
    return 0;
}
