/* cfdpadmin: ION's cfdprc commands, read into a CFDP entity's configuration.
 *
 * A stand-alone cfdprc file, or the "## begin cfdpadmin" section of an
 * ionstart host.rc, is lexed by tern/rc.h; each command goes through
 * cfdp_rc_command() and cfdp_rc_finish() resolves the result into the
 * engine's MIB (cfdp.h: cfdp_entity_cfg.defaults and one cfdp_peer_cfg per
 * remote entity). What Tern reads (docs/cfdpadmin.md has the full mapping):
 *
 *   1                                   initialize
 *   a entity <nbr> <UT protocol> <UT endpoint> <rtt s> <in cksum> <out cksum>
 *   c entity (same arguments)           d entity <nbr>
 *   i [entity <nbr>]   l entity         listings: checked, no effect in a file
 *   m discard 0|1      m requirecrc 0|1   m fillchar <hex>   m ckperiod <s>
 *   m maxtimeouts <n>  m maxevents <n>    m maxtrnbr <n>     m segsize <bytes>
 *   m inactivity <s>
 *   s '<UTS command>'  (bputa)            x   e   w   v   h   ?   t   q
 *
 * Tern's extensions: UT protocol "udp" with endpoint "<host>:<port>" (the
 * peer is reached over CFDP/UDP, one PDU per datagram) and "m udpport
 * [<host>:]<port>" (where this entity receives its UDP datagrams).
 *
 * Settings without a counterpart in the engine, and unknown commands, are
 * warnings "file:line: ..."; malformed commands are errors "file:line: what
 * was wrong; expected ...". Nothing is printed: every diagnostic is kept in
 * the cfdp_rc, in line order.
 */
#ifndef TERN_CFDP_RC_H
#define TERN_CFDP_RC_H

#include <stddef.h>
#include <stdint.h>

#include "cfdp.h"
#include "tern/base.h"
#include "tern/rc.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Bits of cfdp_rc.set: the entity-wide settings the file gave. */
#define CFDP_RC_SET_DISCARD     0x001u /**< m discard */
#define CFDP_RC_SET_REQUIRECRC  0x002u /**< m requirecrc */
#define CFDP_RC_SET_FILLCHAR    0x004u /**< m fillchar (no engine counterpart) */
#define CFDP_RC_SET_CKPERIOD    0x008u /**< m ckperiod */
#define CFDP_RC_SET_MAXTIMEOUTS 0x010u /**< m maxtimeouts */
#define CFDP_RC_SET_MAXEVENTS   0x020u /**< m maxevents (no engine counterpart) */
#define CFDP_RC_SET_MAXTRNBR    0x040u /**< m maxtrnbr (no engine counterpart) */
#define CFDP_RC_SET_SEGSIZE     0x080u /**< m segsize */
#define CFDP_RC_SET_INACTIVITY  0x100u /**< m inactivity */
#define CFDP_RC_SET_UDPPORT     0x200u /**< m udpport (Tern's) */
#define CFDP_RC_SET_NAKDELAY    0x400u /**< m nakdelay (Tern's) */

/** How a remote entity is reached. */
enum cfdp_rc_transport {
    CFDP_RC_BP = 1,  /**< "bp": one PDU per bundle (ION's bputa) */
    CFDP_RC_UDP = 2, /**< "udp" (Tern's): one PDU per datagram to host:port */
};

/** The UT service the "s" command starts. */
enum cfdp_rc_uts {
    CFDP_RC_UTS_NONE = 0, /**< no "s" command */
    CFDP_RC_UTS_BPUTA = 1 /**< s 'bputa' */
};

/** Largest CFDP PDU one UDP datagram carries (IPv4: 65535 - 20 - 8). */
#define CFDP_RC_UDP_MAX_PDU 65507u

/** One remote entity, as "a entity" / "c entity" left it. */
typedef struct cfdp_rc_peer {
    cfdp_peer_cfg cfg;  /**< resolved by cfdp_rc_finish: the entity-wide
                           settings plus this entity's timers and checksum */
    uint8_t transport;  /**< enum cfdp_rc_transport */
    char endpoint[256]; /**< the UT endpoint as written (ipn:5.0, host:port) */
    char host[256];     /**< UDP: the host part */
    uint16_t port;      /**< UDP: the port */
    uint32_t rtt_s;     /**< round-trip time, s; 0 keeps the engine's timers */
    uint8_t in_cksum;   /**< ION's incstype (checked; see docs/cfdpadmin.md) */
    uint8_t out_cksum;  /**< ION's outcstype: cfg.checksum_type */
    char at[300];       /**< "file:line" of the command that set it */
} cfdp_rc_peer;

/** One diagnostic, "file:line: message". */
typedef struct cfdp_rc_diag {
    char *text;
    unsigned line;    /**< the line it is about (0: the whole file) */
    uint8_t is_error; /**< 1 error, 0 warning */
} cfdp_rc_diag;

/** Everything a cfdprc configures. */
typedef struct cfdp_rc {
    size_t ncommands;       /**< cfdpadmin commands read (0: no such section) */
    int initialized;        /**< "1" seen */
    cfdp_peer_cfg defaults; /**< entity-wide: cfdp_entity_cfg.defaults */
    unsigned set;           /**< CFDP_RC_SET_* */
    uint32_t segsize;       /**< m segsize, bytes (0: not given) */
    uint8_t fill_char;      /**< m fillchar [0xaa] */
    uint32_t max_events;    /**< m maxevents [20] */
    uint64_t max_trnbr;     /**< m maxtrnbr [999999999] */
    uint8_t uts;            /**< enum cfdp_rc_uts */
    char uts_cmd[256];      /**< the "s" command's argument as written */
    char uts_at[300];       /**< "file:line" of the "s" command */
    char udp_host[256];     /**< m udpport: the address to bind ("" = any) */
    uint16_t udp_port;      /**< m udpport: the port (0: none) */
    cfdp_rc_peer *peers;    /**< remote entities, in the order added */
    size_t npeers;
    cfdp_peer_cfg *mib;  /**< cfdp_rc_finish: peers[i].cfg, contiguous */
    cfdp_rc_diag *diags; /**< in line order */
    size_t ndiags;
    size_t nerrors;
    unsigned flags_; /**< internal */
} cfdp_rc;

/** Empty configuration: the engine's defaults (cfdp_peer_cfg_defaults) and
 * ION's for the settings the engine has no counterpart for. */
TERN_API void cfdp_rc_init(cfdp_rc *rc);

/** Frees the peers, the MIB and the diagnostics; rc is then empty. */
TERN_API void cfdp_rc_free(cfdp_rc *rc);

/**
 * Applies one command (any section but "cfdpadmin" is skipped) and records
 * its diagnostic, if any. Returns 0 (also when only a warning was
 * recorded), TERN_ESYNTAX if the command was malformed (recorded), -ENOMEM.
 */
TERN_API int cfdp_rc_command(cfdp_rc *rc, const tern_rc_cmd *cmd);

/** Resolves every peer's cfg (entity-wide settings given anywhere in the
 * file apply to every entity) and fills rc->mib. 0, or -ENOMEM. */
TERN_API int cfdp_rc_finish(cfdp_rc *rc);

/**
 * Parses text[0..len) named name (a cfdprc file, or a host.rc whose
 * "## begin cfdpadmin" section is read and the others skipped) into *rc,
 * which it initializes. Returns 0; TERN_ESYNTAX if any line was malformed
 * (rc holds every command read and every diagnostic all the same);
 * -ENOMEM. Free rc with cfdp_rc_free in every case.
 */
TERN_API int cfdp_rc_parse(const char *text, size_t len, const char *name, cfdp_rc *rc);

/** Reads and parses the file at path (named path in messages), as
 * cfdp_rc_parse; -errno if it cannot be read (rc then empty). */
TERN_API int cfdp_rc_load(const char *path, cfdp_rc *rc);

/** Sets cfg->defaults, cfg->peers and cfg->npeers from a finished rc (the
 * peers stay rc's: cfdp_entity_new copies them). */
TERN_API void cfdp_rc_entity_cfg(const cfdp_rc *rc, cfdp_entity_cfg *cfg);

/** Writes the configuration in readable form (what cfdpadmin --print
 * shows). Returns the length it needed, as snprintf does. */
TERN_API int cfdp_rc_format(const cfdp_rc *rc, char *out, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
