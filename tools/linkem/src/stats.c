/* Counters out: the --stats JSON, the exit summary, atomic file writes. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "linkem.h"

struct field {
    const char *name;
    size_t off;
};

#define F(n, m)                                                                          \
    {                                                                                    \
        n, offsetof(lk_counters, m)                                                      \
    }

static const struct field packet_fields[] = {
    F("packets_in", packets_in),       F("bytes_in", bytes_in),
    F("packets_out", packets_out),     F("bytes_out", bytes_out),
    F("dropped_loss", dropped_loss),   F("dropped_ber", dropped_ber),
    F("dropped_queue", dropped_queue), F("dropped_outage", dropped_outage),
    F("corrupted", corrupted),         F("duplicated", duplicated),
    F("reordered", reordered),
};

static const struct field stream_fields[] = {
    F("bytes_in", bytes_in),       F("bytes_out", bytes_out),
    F("chunks_in", packets_in),    F("chunks_out", packets_out),
    F("connections", connections), F("resets", resets),
};

static uint64_t get(const lk_counters *c, size_t off)
{
    uint64_t v;
    memcpy(&v, (const char *)c + off, sizeof v);
    return v;
}

static const struct field *fields_of(int mode, size_t *n)
{
    if (mode == LK_MODE_TCP) {
        *n = sizeof stream_fields / sizeof stream_fields[0];
        return stream_fields;
    }
    *n = sizeof packet_fields / sizeof packet_fields[0];
    return packet_fields;
}

TERN_API int lk_stats_json(int mode, uint64_t seed, double uptime_s,
                           const lk_counters c[2], char *buf, size_t size)
{
    size_t nf, off = 0;
    const struct field *f = fields_of(mode, &nf);
    int n = snprintf(buf, size,
                     "{\"mode\": \"%s\", \"seed\": %" PRIu64 ", \"uptime_s\": %.6f",
                     lk_mode_name(mode), seed, uptime_s);
    if (n < 0 || (size_t)n >= size)
        return TERN_ENOSPACE;
    off = (size_t)n;
    for (int d = 0; d < 2; d++) {
        n = snprintf(buf + off, size - off, ", \"%s\": {", lk_dir_name(d));
        if (n < 0 || (size_t)n >= size - off)
            return TERN_ENOSPACE;
        off += (size_t)n;
        for (size_t i = 0; i < nf; i++) {
            n = snprintf(buf + off, size - off, "%s\"%s\": %" PRIu64, i ? ", " : "",
                         f[i].name, get(&c[d], f[i].off));
            if (n < 0 || (size_t)n >= size - off)
                return TERN_ENOSPACE;
            off += (size_t)n;
        }
        n = snprintf(buf + off, size - off, "}");
        if (n < 0 || (size_t)n >= size - off)
            return TERN_ENOSPACE;
        off += (size_t)n;
    }
    n = snprintf(buf + off, size - off, "}\n");
    if (n < 0 || (size_t)n >= size - off)
        return TERN_ENOSPACE;
    return (int)(off + (size_t)n);
}

TERN_API void lk_stats_summary(FILE *f, int mode, uint64_t seed, double uptime_s,
                               const lk_counters c[2])
{
    size_t nf;
    const struct field *fl = fields_of(mode, &nf);
    fprintf(f, "linkem %s: seed %" PRIu64 ", %.3f s\n", lk_mode_name(mode), seed,
            uptime_s);
    fprintf(f, "  %-16s %16s %16s\n", "counter", "a2b", "b2a");
    for (size_t i = 0; i < nf; i++)
        fprintf(f, "  %-16s %16" PRIu64 " %16" PRIu64 "\n", fl[i].name,
                get(&c[0], fl[i].off), get(&c[1], fl[i].off));
    if (c[0].send_errors || c[1].send_errors)
        fprintf(f, "  %-16s %16" PRIu64 " %16" PRIu64 "\n", "send_errors",
                c[0].send_errors, c[1].send_errors);
    fflush(f);
}

TERN_API int lk_write_atomic(const char *path, const char *data, size_t len)
{
    size_t pl = strlen(path);
    char *tmp = malloc(pl + 32);
    if (!tmp)
        return -ENOMEM;
    snprintf(tmp, pl + 32, "%s.tmp.%ld", path, (long)getpid());
    int fd;
    do
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    while (fd < 0 && errno == EINTR);
    if (fd < 0) {
        int rc = -errno;
        free(tmp);
        return rc;
    }
    size_t done = 0;
    int rc = 0;
    while (done < len) {
        ssize_t w = write(fd, data + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            rc = -errno;
            break;
        }
        done += (size_t)w;
    }
    if (close(fd) != 0 && !rc)
        rc = -errno;
    if (!rc && rename(tmp, path) != 0)
        rc = -errno;
    if (rc)
        unlink(tmp);
    free(tmp);
    return rc;
}
