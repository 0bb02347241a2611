/* libFuzzer target: filestore requests (cfdp_fs_requests_execute) from any
 * TLV list, as a Metadata PDU would carry them, on a small memfs. The
 * executor must never crash or leak a handle; on success it answers every
 * filestore request of the list once, in order, with responses that decode,
 * naming the request's action, and after the first failure only "not
 * performed"; on a refusal nothing may have changed. The first input byte
 * picks the response buffer's size, so the "does not fit" path is reached. */
#include <stdlib.h>
#include <string.h>

#include "cfdp_fs.h"
#include "cfdp_pdu.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int count_each(void *arg, const cfdp_fs_dirent *e)
{
    (void)e;
    (*(size_t *)arg)++;
    return 0;
}

/* Entries in the whole tree (directories walked), as a cheap fingerprint. */
static size_t census(const cfdp_fs *fs)
{
    static const char *dirs[] = {"", "d", "d/e", "x"};
    size_t n = 0;
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++)
        fs->ops->list(fs->ctx, dirs[i], count_each, &n);
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t cap = (size_t)data[0] * 4;
    uint8_t *raw = malloc(size); /* exact size: ASan sees any over-read */
    if (!raw)
        return 0;
    memcpy(raw, data + 1, size - 1);
    cfdp_memfs *m;
    cfdp_fs fs;
    if (cfdp_memfs_new(&m, &fs)) {
        free(raw);
        return 0;
    }
    cfdp_memfs_put(m, "a", "alpha", 5);
    cfdp_memfs_put(m, "b", "bravo!", 6);
    cfdp_memfs_put(m, "d/e/f", "f", 1);
    cfdp_memfs_put_pattern(m, "p", 100000, 3);
    fs.ops->mkdir(fs.ctx, "x");
    size_t before = census(&fs);

    /* how many filestore requests the list holds, if it decodes */
    cfdp_tlvs list = {NULL, 0, raw, size - 1};
    size_t pos = 0, nreq = 0, ntlv = 0;
    cfdp_tlv t;
    int rc;
    while ((rc = cfdp_tlvs_next(&list, &pos, &t)) == 0) {
        ntlv++;
        nreq += t.type == CFDP_TLV_FS_REQUEST;
    }
    int decodes = rc == TERN_EEND;
    list.count = ntlv;

    uint8_t *out = malloc(cap ? cap : 1);
    size_t len = 0, count = 0;
    rc = out ? cfdp_fs_requests_execute(NULL, &fs, &list, out, cap, &len, &count) : 0;
    if (rc > 0 || cfdp_memfs_open_files(m) != 0)
        abort();
    if (out && rc == 0) {
        if (!decodes || count != nreq || len > cap)
            abort();
        cfdp_tlvs resp = {NULL, count, out, len};
        size_t rp = 0, qp = 0, k = 0;
        int failed = 0;
        cfdp_tlv r, q;
        while (cfdp_tlvs_next(&resp, &rp, &r) == 0) {
            do { /* the k-th filestore request */
                if (cfdp_tlvs_next(&list, &qp, &q))
                    abort();
            } while (q.type != CFDP_TLV_FS_REQUEST);
            if (r.type != CFDP_TLV_FS_RESPONSE || r.action != q.action ||
                r.first.len != q.first.len ||
                memcmp(r.first.ptr, q.first.ptr, q.first.len))
                abort();
            if (failed && r.status != CFDP_FS_NOT_PERFORMED)
                abort();
            failed |= r.status != CFDP_FS_SUCCESS;
            k++;
        }
        if (k != count || rp != len)
            abort();
    } else if (out && census(&fs) != before) {
        abort(); /* refused, yet something changed */
    }
    free(out);
    cfdp_memfs_free(m);
    free(raw);
    return 0;
}
