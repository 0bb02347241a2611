/* "Did you mean ...?": the nearest known word or command to a mistyped one.
 *
 * Every configuration parser (ionadmin, ltpadmin, bpadmin, ipnadmin, the
 * ionconfig keys) names what it did not know and, when one known command is
 * a likely typo away, that command. One notion of "near" for all of them:
 * the edit distance (insertions, deletions, substitutions and swaps of two
 * adjacent characters, ASCII letters compared without case), at most 1 for
 * words of 3 to 5 characters, 2 up to 10, 3 beyond; never for 1- or
 * 2-character words (every one of those is a step from another).
 */
#ifndef TERN_SUGGEST_H
#define TERN_SUGGEST_H

#include <stddef.h>

#include "tern/base.h"
#include "tern/rc.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Edit distance between a and b (SIZE_MAX if either is longer than 64 bytes). */
TERN_API size_t tern_edit_distance(const char *a, const char *b);

/** The entry of known (NULL-terminated) nearest to word if it is near enough
 * to be a likely typo (see above), else NULL (also when word is one of them).
 * The first of equals wins. */
TERN_API const char *tern_suggest(const char *word, const char *const *known);

/**
 * The known command (NULL-terminated list; each one to four words, e.g.
 * "a span", "m maxretries") nearest to the command c: each is compared with
 * as many of c's first words, joined by one space. NULL if none is near, or
 * if c is one of them.
 */
TERN_API const char *tern_suggest_cmd(const tern_rc_cmd *c, const char *const *known);

/** Writes c's first words (at most nwords, joined by one space) to buf, as a
 * message names the command typed ("a spna"); returns buf. */
TERN_API const char *tern_cmd_head(const tern_rc_cmd *c, int nwords, char *buf,
                                   size_t cap);

/** " (did you mean 'near'?)" in buf, or "" if near is NULL: the one wording
 * every parser appends after the command it did not know. Returns buf. */
TERN_API const char *tern_did_you_mean(const char *near, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
