/* The node directory's published-ports file. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tern/ports.h"

static int word_ok(const char *s)
{
    if (!s || !*s || strlen(s) > 63)
        return 0;
    for (; *s; s++)
        if ((unsigned char)*s <= ' ' || *s == '#')
            return 0;
    return 1;
}

/* Rewrites dir/ports without name/proto's line, adding "name proto port" if
 * port >= 0; an empty result removes the file. */
static int rewrite(const char *dir, const char *name, const char *proto, long port)
{
    char path[4096], tmp[4096], line[256];
    int rc = 0, lines = 0;
    if (!word_ok(name) || !word_ok(proto) || port > 65535)
        return -EINVAL;
    if (snprintf(path, sizeof path, "%s/%s", dir, TERN_PORTS_FILE) >= (int)sizeof path ||
        snprintf(tmp, sizeof tmp, "%s/.%s.%d", dir, TERN_PORTS_FILE, (int)getpid()) >=
            (int)sizeof tmp)
        return -ENAMETOOLONG;
    FILE *in = fopen(path, "re");
    if (!in && (errno != ENOENT || port < 0))
        return errno == ENOENT ? 0 : -errno; /* nothing to withdraw */
    FILE *out = fopen(tmp, "we");
    if (!out) {
        rc = -errno;
        if (in)
            fclose(in);
        return rc;
    }
    if (in) {
        while (fgets(line, sizeof line, in)) {
            char n[64], p[64];
            unsigned v;
            if (sscanf(line, "%63s %63s %u", n, p, &v) == 3 && strcmp(n, name) == 0 &&
                strcmp(p, proto) == 0)
                continue;
            fputs(line, out);
            lines++;
        }
        fclose(in);
    }
    if (port >= 0) {
        fprintf(out, "%s %s %ld\n", name, proto, port);
        lines++;
    }
    if (fflush(out) != 0 || fsync(fileno(out)) != 0)
        rc = -errno;
    if (fclose(out) != 0 && rc == 0)
        rc = -errno;
    if (rc == 0 && lines == 0) {
        unlink(tmp);
        return unlink(path) == 0 || errno == ENOENT ? 0 : -errno;
    }
    if (rc == 0 && rename(tmp, path) != 0)
        rc = -errno;
    if (rc != 0)
        unlink(tmp);
    return rc;
}

TERN_API int tern_ports_publish(const char *dir, const char *name, const char *proto,
                                unsigned port)
{
    return port > 65535 ? -EINVAL : rewrite(dir, name, proto, (long)port);
}

TERN_API int tern_ports_withdraw(const char *dir, const char *name, const char *proto)
{
    return rewrite(dir, name, proto, -1);
}

TERN_API int tern_ports_lookup(const char *dir, const char *name, const char *proto,
                               unsigned *port)
{
    char path[4096], line[256];
    if (snprintf(path, sizeof path, "%s/%s", dir, TERN_PORTS_FILE) >= (int)sizeof path)
        return -ENAMETOOLONG;
    FILE *in = fopen(path, "re");
    if (!in)
        return errno == ENOENT ? TERN_ENOTFOUND : -errno;
    int rc = TERN_ENOTFOUND;
    while (fgets(line, sizeof line, in)) {
        char n[64], p[64];
        unsigned v;
        if (sscanf(line, "%63s %63s %u", n, p, &v) == 3 && strcmp(n, name) == 0 &&
            strcmp(p, proto) == 0) {
            *port = v;
            rc = 0;
        }
    }
    fclose(in);
    return rc;
}
