/* cfdpadmin: checks a cfdprc file, or the cfdpadmin section of an ionstart
 * host.rc, and shows the configuration Tern's CFDP entity would run with
 * (docs/cfdpadmin.md). Exit status: 0 no errors, 1 errors, 2 usage. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfdp_rc.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: cfdpadmin [--print] [--quiet] <cfdprc or host.rc file | ->\n"
               "  checks ION cfdpadmin commands (a file, or stdin for '-'), prints\n"
               "  every warning and error as file:line: message; exits 0 if there\n"
               "  was no error, 1 if there was\n"
               "  --print  also show the resulting configuration\n"
               "  --quiet  print errors only\n");
}

/* All of stdin, NUL-terminated; NULL on failure (errno set). */
static char *read_all(FILE *f, size_t *len)
{
    size_t cap = 65536, n = 0;
    char *b = malloc(cap);
    if (!b)
        return NULL;
    for (;;) {
        if (n == cap) {
            char *nb = cap > SIZE_MAX / 2 ? NULL : realloc(b, cap * 2);
            if (!nb) {
                free(b);
                errno = ENOMEM;
                return NULL;
            }
            b = nb;
            cap *= 2;
        }
        size_t got = fread(b + n, 1, cap - n, f);
        n += got;
        if (got == 0) {
            if (ferror(f)) {
                free(b);
                errno = EIO;
                return NULL;
            }
            break;
        }
    }
    *len = n;
    return b;
}

int main(int argc, char **argv)
{
    int print = 0, quiet = 0;
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--print") || !strcmp(argv[i], "-p"))
            print = 1;
        else if (!strcmp(argv[i], "--quiet") || !strcmp(argv[i], "-q"))
            quiet = 1;
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (argv[i][0] == '-' && argv[i][1] && strcmp(argv[i], "--") != 0) {
            fprintf(stderr, "cfdpadmin: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        } else if (!strcmp(argv[i], "--") && i + 1 < argc && !path) {
            path = argv[++i];
        } else if (!path) {
            path = argv[i];
        } else {
            fprintf(stderr, "cfdpadmin: one file at a time ('%s' and '%s')\n", path,
                    argv[i]);
            return 2;
        }
    }
    if (!path) {
        usage(stderr);
        return 2;
    }
    cfdp_rc rc;
    int r;
    if (!strcmp(path, "-")) {
        size_t len = 0;
        char *text = read_all(stdin, &len);
        if (!text) {
            fprintf(stderr, "cfdpadmin: reading stdin: %s\n", strerror(errno));
            return 1;
        }
        r = cfdp_rc_parse(text, len, "<stdin>", &rc);
        free(text);
    } else {
        r = cfdp_rc_load(path, &rc);
    }
    if (r != 0 && r != TERN_ESYNTAX) {
        fprintf(stderr, "cfdpadmin: %s: %s\n", path, tern_strerror(r));
        cfdp_rc_free(&rc);
        return 1;
    }
    for (size_t i = 0; i < rc.ndiags; i++)
        if (rc.diags[i].is_error || !quiet)
            fprintf(stderr, "%s: %s\n", rc.diags[i].is_error ? "error" : "warning",
                    rc.diags[i].text);
    if (!rc.ncommands && !quiet)
        fprintf(stderr,
                "warning: %s: no cfdpadmin commands (a cfdprc file, or a host.rc "
                "with a '## begin cfdpadmin' section, was expected)\n",
                strcmp(path, "-") ? path : "<stdin>");
    if (print) {
        int n = cfdp_rc_format(&rc, NULL, 0);
        char *out = n >= 0 ? malloc((size_t)n + 1) : NULL;
        if (!out) {
            fprintf(stderr, "cfdpadmin: %s\n", strerror(ENOMEM));
            cfdp_rc_free(&rc);
            return 1;
        }
        cfdp_rc_format(&rc, out, (size_t)n + 1);
        fputs(out, stdout);
        free(out);
    }
    if (!quiet)
        fprintf(stderr, "%s: %zu error%s, %zu warning%s\n",
                strcmp(path, "-") ? path : "<stdin>", rc.nerrors,
                rc.nerrors == 1 ? "" : "s", rc.ndiags - rc.nerrors,
                rc.ndiags - rc.nerrors == 1 ? "" : "s");
    int status = rc.nerrors ? 1 : 0;
    cfdp_rc_free(&rc);
    return status;
}
