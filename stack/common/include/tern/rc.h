/* Lexer for ION's admin command files (ionadmin, ltpadmin, bpadmin, ...).
 *
 * One command per line; words split on spaces and tabs; a single-quoted
 * string ('udplso 127.0.0.1:1113 1000000000') is one word with its spaces; a
 * '#' at the start of a word begins a comment. An ionstart host.rc holds
 * several admin files, each between "## begin <name>" and "## end <name>"
 * (spacing inside the markers may vary). The lexer knows no commands: it
 * yields words with their file, line and section, and it reports every
 * malformed line as "file:line: what was wrong; what was expected".
 */
#ifndef TERN_RC_H
#define TERN_RC_H

#include "tern/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Longest line the lexer accepts. */
#define TERN_RC_MAX_LINE 65536

/** One command: its words, where it came from, and its section. */
typedef struct tern_rc_cmd {
    const char *file;    /**< name given to the parser */
    unsigned line;       /**< 1-based line number */
    const char *section; /**< "ionadmin", ... from the markers, else the default */
    int argc;            /**< number of words, >= 1 */
    char **argv;         /**< the words, quotes removed; argv[argc] is NULL */
} tern_rc_cmd;

/** A parsed file (opaque). */
typedef struct tern_rc tern_rc;

/**
 * Parses text[0..len) named name (used in messages). Lines outside any
 * "## begin" section get default_section (may be NULL); in a file that has
 * sections, commands outside them are dropped with a warning, as ionstart does.
 * On return *out holds every well-formed command and every diagnostic, even
 * when the result is TERN_ESYNTAX (some line was malformed); -ENOMEM otherwise.
 */
TERN_API int tern_rc_parse(tern_rc **out, const char *name, const char *text, size_t len,
                           const char *default_section);

/** Reads and parses the file at path; -errno if it cannot be read. */
TERN_API int tern_rc_load(tern_rc **out, const char *path, const char *default_section);

/** Number of commands. */
TERN_API size_t tern_rc_count(const tern_rc *rc);

/** The i-th command (NULL if out of range). */
TERN_API const tern_rc_cmd *tern_rc_at(const tern_rc *rc, size_t i);

/** Number of diagnostics (errors and warnings, in line order). */
TERN_API size_t tern_rc_diag_count(const tern_rc *rc);

/** The i-th diagnostic, "file:line: message"; *is_error tells error from warning. */
TERN_API const char *tern_rc_diag_at(const tern_rc *rc, size_t i, int *is_error);

/** Number of errors among the diagnostics. */
TERN_API size_t tern_rc_error_count(const tern_rc *rc);

/** Frees a parsed file. NULL is accepted. */
TERN_API void tern_rc_free(tern_rc *rc);

#ifdef __cplusplus
}
#endif
#endif
