/*
 * ams_mod.h — a module's side of MAMS as a state machine: it finds its
 * registrar through the configuration server, registers, beats, declares
 * its subscriptions and invitations, keeps its view of every other module
 * of the venture, and reconnects when its registrar restarts or falls
 * silent. PDUs and the time in, PDUs out through a callback, what changed
 * in the view through another; no sockets, no clock (libams drives it on a
 * thread of its own; the C tests and the fuzz target on a virtual clock).
 * The protocol is docs/ams.md's "MAMS".
 */
#ifndef TERN_AMS_MOD_H
#define TERN_AMS_MOD_H

#include <stdint.h>

#include "ams_cell.h"
#include "ams_mams.h"
#include "tern/base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ams_mod ams_mod;

/** What a module is. */
typedef struct ams_mod_cfg {
    uint16_t venture, unit;
    uint8_t role;
    mams_ep mams, udp, tcp; /**< its own MAMS, AAMS datagram and AAMS stream endpoints */
    const mams_ep *cs;      /**< configuration servers, in the MIB's order */
    size_t n_cs;
    uint32_t incarnation; /**< differs from every earlier run's */
    uint32_t retry_ms;    /**< resend of a query or registration (default 500) */
} ams_mod_cfg;

/** Where a module is in its life. */
enum ams_mod_state {
    AMS_MOD_QUERYING = 1, /**< asking the configuration server for its registrar */
    AMS_MOD_REGISTERING,  /**< registering (or reconnecting) */
    AMS_MOD_IN,           /**< registered */
    AMS_MOD_REFUSED,      /**< refused for good (no such role or unit, cell full) */
};

/** What changed in the view. */
enum ams_mod_note {
    AMS_NOTE_SELF_IN = 1, /**< this module is registered (m: its own record) */
    AMS_NOTE_JOINED,      /**< a module appeared */
    AMS_NOTE_LEFT,        /**< a module stopped or was declared dead */
    AMS_NOTE_SUB_ADDED,   /**< one of m's subscriptions began (rule) */
    AMS_NOTE_SUB_REMOVED,
    AMS_NOTE_INV_ADDED, /**< one of m's invitations began (rule) */
    AMS_NOTE_INV_REMOVED,
    AMS_NOTE_REFUSED, /**< the registrar refused this module for good (reason) */
};

/** Told of each change; rule is NULL for JOINED, LEFT, SELF_IN and
 * REFUSED; reason is the MAMS rejection reason for REFUSED. */
typedef void (*ams_note_fn)(void *ctx, int note, const mams_module *m,
                            const mams_rule *rule, int reason);

/** Counters of a module's MAMS side. */
typedef struct ams_mod_stats {
    uint64_t registrations, reconnects, declarations, queries;
    uint64_t registrar_lost; /**< silences past the dead bound */
    uint64_t malformed;      /**< PDUs dropped */
    uint64_t known;          /**< modules in the view, itself included */
} ams_mod_stats;

TERN_API int ams_mod_new(const ams_mod_cfg *cfg, ams_send_fn send, ams_note_fn note,
                         void *ctx, uint64_t now_ms, ams_mod **out);
/** Sends I_am_stopping if registered, then frees everything. */
TERN_API void ams_mod_free(ams_mod *m, uint64_t now_ms);
TERN_API void ams_mod_input(ams_mod *m, uint64_t now_ms, const mams_ep *from,
                            const uint8_t *buf, size_t len);
TERN_API void ams_mod_tick(ams_mod *m, uint64_t now_ms);
TERN_API uint64_t ams_mod_deadline(const ams_mod *m);
TERN_API int ams_mod_state(const ams_mod *m);
/** This module's number (0 until registered). */
TERN_API int ams_mod_nbr(const ams_mod *m);

/** Replaces this module's declaration (its whole set of subscriptions and
 * invitations) and sends it to the registrar. -E2BIG if it does not fit a
 * PDU, -ENOMEM. */
TERN_API int ams_mod_declare(ams_mod *m, uint64_t now_ms, const mams_rule *subs,
                             size_t n_subs, const mams_rule *invs, size_t n_invs);

/** The record of module nbr of unit (itself included once registered), or
 * NULL. Valid until the next call into m. */
TERN_API const mams_module *ams_mod_find(const ams_mod *m, uint16_t unit, uint8_t nbr);

/** The record of the latest module nbr of unit to leave the view (one of
 * the last 64 to leave), or NULL: a message it sent just before it left may
 * still be on the way. */
TERN_API const mams_module *ams_mod_find_gone(const ams_mod *m, uint16_t unit,
                                              uint8_t nbr);

/** Iterates the view: *cursor 0 starts; returns NULL at the end. */
TERN_API const mams_module *ams_mod_next(const ams_mod *m, size_t *cursor);

/** Goes up whenever any record of the view changes. */
TERN_API uint64_t ams_mod_view_version(const ams_mod *m);

TERN_API void ams_mod_stats_get(const ams_mod *m, ams_mod_stats *st);

#ifdef __cplusplus
}
#endif
#endif
