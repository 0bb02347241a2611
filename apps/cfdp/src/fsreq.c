/* The filestore requests of CCSDS 727.0-B-5 (5.4.1.2, table 5-17) on any
 * cfdp_fs, and the responses that answer them (table 5-18). */
#include <errno.h>
#include <string.h>

#include "cfdp_fs.h"
#include "cfdp_pdu.h"

#define COPY_CHUNK 16384 /* on the stack */

/* An LV name as a C string; 0 if it cannot be one (empty, NUL inside). */
static int name_of(const cfdp_lv *lv, char out[CFDP_FS_PATH_MAX + 1])
{
    if (!lv->len || !lv->ptr || memchr(lv->ptr, 0, lv->len))
        return 0;
    memcpy(out, lv->ptr, lv->len);
    out[lv->len] = 0;
    return 1;
}

/* The status each action gives for "not allowed": what a refused path or
 * any other failure of the filestore reports. */
static unsigned not_allowed(unsigned action)
{
    switch (action) {
    case CFDP_FS_CREATE_FILE:
        return CFDP_FS_CREATE_NOT_ALLOWED;
    case CFDP_FS_DELETE_FILE:
        return CFDP_FS_DELETE_NOT_ALLOWED;
    case CFDP_FS_RENAME_FILE:
        return CFDP_FS_RENAME_NOT_ALLOWED;
    case CFDP_FS_APPEND_FILE:
        return CFDP_FS_APPEND_NOT_ALLOWED;
    case CFDP_FS_REPLACE_FILE:
        return CFDP_FS_REPLACE_NOT_ALLOWED;
    case CFDP_FS_CREATE_DIR:
        return CFDP_FS_MKDIR_CANNOT;
    case CFDP_FS_REMOVE_DIR:
        return CFDP_FS_RMDIR_NOT_ALLOWED;
    default: /* deny file, deny directory */
        return CFDP_FS_DENY_NOT_ALLOWED;
    }
}

/* Is path a plain file (1), a directory (0), absent (-ENOENT) or refused? */
static int file_kind(const cfdp_fs *fs, const char *path, uint64_t *size)
{
    cfdp_fs_stat st;
    int rc = fs->ops->stat(fs->ctx, path, &st);
    if (rc)
        return rc;
    if (size)
        *size = st.size;
    return !st.is_dir;
}

/* Copies src's bytes [0, n) to dst at offset at. src may be dst (append a
 * file to itself): n was taken before the first write. */
static int copy_bytes(const cfdp_fs *fs, void *src, void *dst, uint64_t n, uint64_t at)
{
    uint8_t buf[COPY_CHUNK];
    for (uint64_t off = 0; off < n;) {
        size_t want = n - off < sizeof buf ? (size_t)(n - off) : sizeof buf, got = 0;
        int rc = fs->ops->read(fs->ctx, src, off, buf, want, &got);
        if (rc)
            return rc;
        if (!got)
            return -EIO; /* shorter than its size said */
        if ((rc = fs->ops->write(fs->ctx, dst, at + off, buf, got)))
            return rc;
        off += got;
    }
    return 0;
}

/* Append (second onto the end of first) or replace (first gets second's
 * content). Status codes are the same numbers for both actions. */
static unsigned append_or_replace(const cfdp_fs *fs, const char *first,
                                  const char *second, int replace)
{
    const unsigned no_first = CFDP_FS_APPEND_NO_FIRST,
                   no_second = CFDP_FS_APPEND_NO_SECOND,
                   denied = CFDP_FS_APPEND_NOT_ALLOWED;
    uint64_t first_size = 0, second_size = 0;
    int k1 = file_kind(fs, first, &first_size);
    if (k1 == -ENOENT)
        return no_first;
    if (k1 != 1)
        return denied;
    int k2 = file_kind(fs, second, &second_size);
    if (k2 == -ENOENT)
        return no_second;
    if (k2 != 1)
        return denied;
    if (replace && !strcmp(first, second))
        return CFDP_FS_SUCCESS; /* a file replaced by itself is unchanged */
    void *src = NULL, *dst = NULL;
    unsigned status = denied;
    int rc = fs->ops->open(fs->ctx, second, CFDP_FS_RD, &src);
    if (rc)
        return rc == -ENOENT ? no_second : denied;
    rc = fs->ops->open(fs->ctx, first, CFDP_FS_RD | CFDP_FS_WR, &dst);
    if (rc) {
        status = rc == -ENOENT ? no_first : denied;
        goto out;
    }
    if (replace && (rc = fs->ops->truncate(fs->ctx, dst, 0)))
        goto out;
    if ((rc = copy_bytes(fs, src, dst, second_size, replace ? 0 : first_size)))
        goto out;
    if ((rc = fs->ops->sync(fs->ctx, dst)))
        goto out;
    status = CFDP_FS_SUCCESS;
out:
    if (dst && fs->ops->close(fs->ctx, dst) && status == CFDP_FS_SUCCESS)
        status = denied; /* the bytes may not have reached the file */
    fs->ops->close(fs->ctx, src);
    return status;
}

int cfdp_fs_request_run(const cfdp_fs *fs, const cfdp_tlv *req)
{
    if (!fs || !fs->ops || !req || req->type != CFDP_TLV_FS_REQUEST ||
        req->action > CFDP_FS_DENY_DIR)
        return -EINVAL;
    unsigned a = req->action, denied = not_allowed(a);
    char first[CFDP_FS_PATH_MAX + 1], second[CFDP_FS_PATH_MAX + 1];
    int two =
        a == CFDP_FS_RENAME_FILE || a == CFDP_FS_APPEND_FILE || a == CFDP_FS_REPLACE_FILE;
    if (!name_of(&req->first, first) || (two && !name_of(&req->second, second)))
        return denied;
    void *ctx = fs->ctx;
    const cfdp_fs_ops *o = fs->ops;
    void *f;
    int rc, k;
    switch (a) {
    case CFDP_FS_CREATE_FILE:
        rc = o->open(ctx, first, CFDP_FS_WR | CFDP_FS_CREAT | CFDP_FS_TRUNC, &f);
        if (rc)
            return denied;
        return o->close(ctx, f) ? denied : CFDP_FS_SUCCESS;
    case CFDP_FS_DELETE_FILE:
        rc = o->remove(ctx, first);
        return !rc ? CFDP_FS_SUCCESS : rc == -ENOENT ? CFDP_FS_DELETE_NO_FILE : denied;
    case CFDP_FS_RENAME_FILE:
        /* a name taken by a directory or file is "already exists" only if
         * the old one is there to move */
        k = file_kind(fs, first, NULL);
        if (k == -ENOENT)
            return CFDP_FS_RENAME_NO_OLD;
        if (k != 1)
            return denied; /* a directory, or refused */
        rc = o->rename(ctx, first, second);
        return !rc             ? CFDP_FS_SUCCESS
               : rc == -EEXIST ? CFDP_FS_RENAME_NEW_EXISTS
               : rc == -ENOENT ? CFDP_FS_RENAME_NOT_ALLOWED /* the new name's directory */
                               : denied;
    case CFDP_FS_APPEND_FILE:
        return append_or_replace(fs, first, second, 0);
    case CFDP_FS_REPLACE_FILE:
        return append_or_replace(fs, first, second, 1);
    case CFDP_FS_CREATE_DIR:
        return o->mkdir(ctx, first) ? CFDP_FS_MKDIR_CANNOT : CFDP_FS_SUCCESS;
    case CFDP_FS_REMOVE_DIR:
        rc = o->rmdir(ctx, first);
        return !rc ? CFDP_FS_SUCCESS : rc == -ENOENT ? CFDP_FS_RMDIR_NO_DIR : denied;
    case CFDP_FS_DENY_FILE:
        rc = o->remove(ctx, first);
        return !rc || rc == -ENOENT ? CFDP_FS_SUCCESS : denied;
    default: /* CFDP_FS_DENY_DIR */
        rc = o->rmdir(ctx, first);
        return !rc || rc == -ENOENT ? CFDP_FS_SUCCESS : denied;
    }
}

/* The response to req with status, as cfdp_tlv_encode takes it. */
static cfdp_tlv response_of(const cfdp_tlv *req, unsigned status, int empty_second)
{
    cfdp_tlv r;
    memset(&r, 0, sizeof r);
    r.type = CFDP_TLV_FS_RESPONSE;
    r.action = req->action;
    r.status = (uint8_t)status;
    r.first = req->first;
    int two = req->action == CFDP_FS_RENAME_FILE || req->action == CFDP_FS_APPEND_FILE ||
              req->action == CFDP_FS_REPLACE_FILE;
    if (two)
        r.second = req->second;
    else
        r.empty_second = empty_second ? 1 : 0;
    return r;
}

int cfdp_fs_requests_execute(void *ctx, const cfdp_fs *fs, const cfdp_tlvs *reqs,
                             uint8_t *out, size_t cap, size_t *out_len, size_t *out_count)
{
    if (!fs || !fs->ops || !reqs || !out_len || !out_count || (cap && !out))
        return -EINVAL;
    const cfdp_fs_exec_opts *opts = ctx;
    int es = opts && opts->empty_second;
    *out_len = *out_count = 0;
    /* first pass: every TLV readable, every response encodable, the sum
     * within cap; so nothing is executed that could not be answered */
    size_t pos = 0, need = 0;
    cfdp_tlv t;
    int rc;
    while ((rc = cfdp_tlvs_next(reqs, &pos, &t)) == 0) {
        if (t.type != CFDP_TLV_FS_REQUEST)
            continue;
        cfdp_tlv r = response_of(&t, CFDP_FS_SUCCESS, es);
        uint8_t scratch[2 + 255]; /* the largest TLV */
        size_t n;
        if ((rc = cfdp_tlv_encode(&r, scratch, sizeof scratch, &n)))
            return rc;
        need += n;
    }
    if (rc != TERN_EEND)
        return rc;
    if (need > cap)
        return TERN_ENOSPACE;
    /* second pass: execute in order; after a failure, not performed */
    int failed = 0;
    size_t len = 0, count = 0;
    pos = 0;
    while (cfdp_tlvs_next(reqs, &pos, &t) == 0) {
        if (t.type != CFDP_TLV_FS_REQUEST)
            continue;
        unsigned status = CFDP_FS_NOT_PERFORMED;
        if (!failed) {
            int s = cfdp_fs_request_run(fs, &t);
            status = s < 0 ? not_allowed(t.action) : (unsigned)s;
            failed = status != CFDP_FS_SUCCESS;
        }
        cfdp_tlv r = response_of(&t, status, es);
        size_t n;
        if ((rc = cfdp_tlv_encode(&r, out + len, cap - len, &n)))
            return rc; /* cannot happen: sized above */
        len += n;
        count++;
    }
    *out_len = len;
    *out_count = count;
    return 0;
}
