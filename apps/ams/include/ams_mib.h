/*
 * ams_mib.h — the AMS Management Information Base: ION's MIB files, loaded.
 *
 * Two syntaxes, as ION reads them: XML (amsxml(5), parsed with libexpat)
 * and amsrc (amsrc(5): one element per line, '+' opens it, '-' closes it,
 * '*' is both; attributes name=value, values quoted with ' when they hold
 * spaces). The loader tells them apart by content: a file whose first
 * non-blank byte is '<' is XML. Element and attribute names are those of
 * ION's loader (where its man pages differ, the loader wins: the XML root
 * is ams_mib_load).
 *
 * A load is all or nothing: the first unknown element or attribute, missing
 * required attribute, bad number or broken reference ends it with
 * TERN_ESYNTAX and one message "file:line:column: what was wrong, what was
 * expected"; no MIB is returned. Attributes ION knows and Tern does not act
 * on (keys for AMS security, marshalling functions) are accepted and noted
 * in the MIB's warnings.
 *
 * As ION does, every venture has role 1 "RAMS" (its gateway) and role 255
 * "stop", subject 0 "everything", the root unit 0 "" and the message space
 * of the local continuum; the local continuum is "local". A unit's
 * superunit is the unit whose name is the longest prefix of its name.
 *
 * A loaded MIB is immutable: the structures below are read-only views,
 * valid until ams_mib_free.
 */
#ifndef TERN_AMS_MIB_H
#define TERN_AMS_MIB_H

#include <stddef.h>

#include "tern/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Limits: ION's, and where Tern allows more (docs/ams.md). */
#define AMS_MIB_MAX_CONTINUUM 32767 /**< ION: 32767 (15 bits in AAMS) */
#define AMS_MIB_MAX_VENTURE   255   /**< ION: 20 */
#define AMS_MIB_MAX_UNIT      1000  /**< ION: 10 */
#define AMS_MIB_MAX_ROLE      255   /**< ION: 255 (one byte in MAMS) */
#define AMS_MIB_MAX_SUBJECT   32767 /**< ION: 500 (AAMS subjects are signed 16-bit) */
#define AMS_MIB_MAX_NAME      32    /**< ION: 32 characters */
#define AMS_MIB_MAX_TEXT      255   /**< descriptions, endpoint specs, EIDs */

/** RAMS gateway protocol of a message space (the gweid's "bp@" or "udp@"). */
enum ams_mib_gw { AMS_MIB_GW_BP = 0, AMS_MIB_GW_UDP = 1 };

typedef struct ams_mib_continuum {
    int nbr;
    const char *name, *desc;
} ams_mib_continuum;

typedef struct ams_mib_role {
    int nbr;
    const char *name;
} ams_mib_role;

typedef struct ams_mib_subject {
    int nbr;
    const char *name, *desc;
    /** Role numbers allowed to publish or send on it (n_senders 0: any). */
    int n_senders, n_receivers;
    const int *senders, *receivers;
} ams_mib_subject;

typedef struct ams_mib_unit {
    int nbr;
    const char *name; /**< "" for the root unit 0 */
    int super;        /**< superunit number (-1 for the root) */
    int resync_s;     /**< resync_period (root: the venture's root_cell_resync_period) */
} ams_mib_unit;

typedef struct ams_mib_msgspace {
    int continuum;
    int neighbor;      /**< 1 unless neighbor=0 */
    int gw_proto;      /**< enum ams_mib_gw */
    const char *gweid; /**< e.g. "ipn:2.9" (ION's default ipn:<continuum>.<venture>) */
} ams_mib_msgspace;

typedef struct ams_mib_venture {
    int nbr;
    const char *app, *auth;
    int net_is_tree; /**< net_config="tree" (1) or mesh (0) */
    int gw_proto;    /**< of the venture's own gweid */
    const char *gweid;
    int n_roles, n_subjects, n_units, n_msgspaces; /**< in number order */
    const ams_mib_role *roles;
    const ams_mib_subject *subjects;
    const ams_mib_unit *units;
    const ams_mib_msgspace *msgspaces;
} ams_mib_venture;

typedef struct ams_mib_epspec {
    const char *ts;     /**< transport service name ("udp", "tcp", ...) */
    const char *epspec; /**< ION's endpoint spec, e.g. "@" or "host:port" */
} ams_mib_epspec;

typedef struct ams_mib ams_mib;

/** Loads a MIB file (XML or amsrc, by content); "@" is ION's built-in test
 * MIB. On failure returns TERN_ESYNTAX (or -errno for the file) and writes
 * the reason into err (errcap bytes, may be 0). */
TERN_API int ams_mib_load_file(const char *path, ams_mib **out, char *err, size_t errcap);

/** Loads a MIB from len bytes of text; name is used in messages. */
TERN_API int ams_mib_load_text(const char *text, size_t len, const char *name,
                               ams_mib **out, char *err, size_t errcap);

/** Frees a MIB (NULL is allowed). */
TERN_API void ams_mib_free(ams_mib *mib);

/** The local continuum's number (ams_mib_init continuum_nbr). */
TERN_API int ams_mib_continuum_nbr(const ams_mib *mib);

/** The primary transport service's name as the MIB gives it (ptsname). */
TERN_API const char *ams_mib_ptsname(const ams_mib *mib);

/** Configuration server endpoint specs, in order (n in *n). */
TERN_API const char *const *ams_mib_cs_endpoints(const ams_mib *mib, int *n);

/** AMS endpoint specs (amsendpoint elements), in order. */
TERN_API const ams_mib_epspec *ams_mib_ams_endpoints(const ams_mib *mib, int *n);

/** Applications' names, in order. */
TERN_API const char *const *ams_mib_applications(const ams_mib *mib, int *n);

/** Continua, in number order (the local one included). */
TERN_API const ams_mib_continuum *ams_mib_continua(const ams_mib *mib, int *n);

/** Ventures, in number order. */
TERN_API const ams_mib_venture *ams_mib_ventures(const ams_mib *mib, int *n);

/** The venture of application app under authority auth, or NULL. */
TERN_API const ams_mib_venture *ams_mib_venture_find(const ams_mib *mib, const char *app,
                                                     const char *auth);

/** Continuum by number or by name; NULL if none. */
TERN_API const ams_mib_continuum *ams_mib_continuum_get(const ams_mib *mib, int nbr);
TERN_API const ams_mib_continuum *ams_mib_continuum_named(const ams_mib *mib,
                                                          const char *name);

/* Lookups in a venture: NULL if none. */
TERN_API const ams_mib_role *ams_mib_role_get(const ams_mib_venture *v, int nbr);
TERN_API const ams_mib_role *ams_mib_role_named(const ams_mib_venture *v,
                                                const char *name);
TERN_API const ams_mib_subject *ams_mib_subject_get(const ams_mib_venture *v, int nbr);
TERN_API const ams_mib_subject *ams_mib_subject_named(const ams_mib_venture *v,
                                                      const char *name);
TERN_API const ams_mib_unit *ams_mib_unit_get(const ams_mib_venture *v, int nbr);
TERN_API const ams_mib_unit *ams_mib_unit_named(const ams_mib_venture *v,
                                                const char *name);
TERN_API const ams_mib_msgspace *ams_mib_msgspace_get(const ams_mib_venture *v,
                                                      int continuum);

/** 1 if unit sub is ref or lies below it in the unit tree. */
TERN_API int ams_mib_unit_within(const ams_mib_venture *v, int sub, int ref);

/** 1 if role may send (publish, send, announce) on subject; 0 if the
 * subject's sender list excludes it or there is no such subject. */
TERN_API int ams_mib_may_send(const ams_mib_venture *v, int subject, int role);

/** 1 if role may receive (subscribe to) subject. */
TERN_API int ams_mib_may_receive(const ams_mib_venture *v, int subject, int role);

/** The load's warnings (attributes accepted and not acted on), in order. */
TERN_API const char *const *ams_mib_warnings(const ams_mib *mib, int *n);

#ifdef __cplusplus
}
#endif
#endif
