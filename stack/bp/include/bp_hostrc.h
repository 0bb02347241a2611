/* An ION host.rc (the ionstart format), read into the settings of each
 * admin program: the contact plan (ionadmin), LTP (ltpadmin), the agent
 * (bpadmin, ipnadmin). Shared by ternd and tern_sim so both read a node's
 * configuration the same way.
 *
 * Commands outside any "## begin <program>" section are errors. ionsecadmin
 * is accepted ("1" silently; other commands with a warning: security comes
 * later); sections of other ION programs (cfdpadmin, bssadmin, ...) are
 * accepted with a warning per command; unknown sections are errors. Every
 * message names file:line. The same programs' files may also come one per
 * program (node.ionrc, node.ltprc, ...: bp_hostrc_read_files).
 */
#ifndef TERN_BP_HOSTRC_H
#define TERN_BP_HOSTRC_H

#include <stddef.h>
#include <stdint.h>

#include "bp_admin.h"
#include "bp_plan.h"
#include "ltp_admin.h"

#ifdef __cplusplus
extern "C" {
#endif

/** At most this many amsd lines in a host.rc. */
#define BP_HOSTRC_AMSD_MAX 4

typedef struct bp_hostrc {
    bp_plan *plan; /**< ionadmin: node number, contacts, ranges */
    ltp_admin ltp; /**< ltpadmin (valid if has_ltp) */
    bp_admin bp;   /**< bpadmin + ipnadmin (valid if has_bp) */
    int has_ltp, has_bp;
    int has_cfdp;         /**< a cfdpadmin section or file: cfdpd's (docs/cfdpadmin.md) */
    char cfdp_file[1024]; /**< the file of the first cfdpadmin command */
    /** '## begin amsd' lines: the arguments of an amsd each (ION's form,
     * tab-joined), which 'tern start' starts (docs/ams.md) */
    char amsd[BP_HOSTRC_AMSD_MAX][256];
    int n_amsd;
    /** ramsgate lines of that section: ramsgate's arguments (application,
     * authority, [bundle lifetime]), tab-joined, started after the amsd */
    char ramsgate[BP_HOSTRC_AMSD_MAX][256];
    int n_ramsgate;
    char **warnings; /**< "file:line: ..." for everything accepted but not acted on */
    size_t nwarnings;
} bp_hostrc;

/**
 * Reads text[0..len) named name (for messages); now_ms (DTN time) anchors
 * "+N" times. 0 on success; TERN_ESYNTAX (or another error) with err holding
 * "file:line: what was wrong; what was expected". Checks that ionadmin gave
 * a node number and that an ltpadmin section starts with "1". Free with
 * bp_hostrc_free() in every case.
 */
TERN_API int bp_hostrc_read(bp_hostrc *h, const char *name, const char *text, size_t len,
                            uint64_t now_ms, char *err, size_t errlen);

/** One admin file of a node's configuration. */
typedef struct bp_hostrc_file {
    const char *name;    /**< for messages ("n1/node.ltprc") */
    const char *program; /**< "ionadmin", "ltpadmin", ...: the whole file is that
                              program's commands; NULL: an ionstart host.rc */
    const char *text;
    size_t len;
} bp_hostrc_file;

/**
 * Reads a node's configuration from several files, in the order given (ION's
 * ionstart runs ionrc, ionsecrc, ltprc, bprc, ipnrc: see bp_hostrc_kind), as
 * one host.rc holding them as sections would read. A file for one program
 * may have "## begin" markers only for that program. Same results and
 * messages as bp_hostrc_read(); free with bp_hostrc_free() in every case.
 */
TERN_API int bp_hostrc_read_files(bp_hostrc *h, const bp_hostrc_file *files,
                                  size_t nfiles, uint64_t now_ms, char *err,
                                  size_t errlen);

/**
 * The i-th kind of admin file ionstart runs, in its order: the name's
 * suffix ("ionrc", "ltprc", ...) and the program ("ionadmin", ...).
 * 0, or TERN_ENOTFOUND past the last.
 */
TERN_API int bp_hostrc_kind(size_t i, const char **suffix, const char **program);

/** Frees what bp_hostrc_read() built (safe on a zeroed struct). */
TERN_API void bp_hostrc_free(bp_hostrc *h);

#ifdef __cplusplus
}
#endif
#endif
