/*
 * ams_cell.h — the configuration server and the registrar as state
 * machines: they take MAMS PDUs and the time, and say what to send through
 * a callback. No sockets, no clocks of their own (amsd drives them; the C
 * tests and fuzz targets drive them on a virtual clock).
 *
 * Soft state throughout (docs/ams.md, "MAMS"): a registrar announces itself
 * to the configuration server every heartbeat, and hears every module of its
 * cell every heartbeat; what either forgets in a restart comes back within a
 * heartbeat or two. A registrar that starts takes a census for census_ms:
 * modules that were registered with an earlier run of it reconnect with
 * their numbers and declarations, and only then does it admit new modules,
 * so no number is handed out twice.
 */
#ifndef TERN_AMS_CELL_H
#define TERN_AMS_CELL_H

#include <stdint.h>

#include "ams_mams.h"
#include "tern/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Sends pdu[0..len) to endpoint to. */
typedef void (*ams_send_fn)(void *ctx, const mams_ep *to, const uint8_t *pdu, size_t len);

/** Timing of a cell (the registrar tells its modules). */
typedef struct ams_timing {
    uint32_t heartbeat_ms; /**< period of every heartbeat (default 1000) */
    uint32_t dead_ms; /**< silence that declares a module dead (default 4 x heartbeat) */
    uint32_t census_ms; /**< a starting registrar's census (default dead_ms) */
} ams_timing;

/** Fills in the defaults of zero fields. */
TERN_API void ams_timing_defaults(ams_timing *t);

/* ------------------------------------------------------ configuration server */

typedef struct ams_cs ams_cs;

/** Counters of a configuration server. */
typedef struct ams_cs_stats {
    uint64_t registrars; /**< known now */
    uint64_t queries;    /**< registrar queries answered */
    uint64_t malformed;  /**< PDUs dropped */
} ams_cs_stats;

/** A configuration server; registrars it has not heard for 3 x their
 * heartbeat are forgotten. */
TERN_API int ams_cs_new(ams_send_fn send, void *ctx, uint64_t now_ms, ams_cs **out);
TERN_API void ams_cs_free(ams_cs *cs);
/** Takes one datagram from endpoint from. */
TERN_API void ams_cs_input(ams_cs *cs, uint64_t now_ms, const mams_ep *from,
                           const uint8_t *buf, size_t len);
/** Does what is due at now_ms. */
TERN_API void ams_cs_tick(ams_cs *cs, uint64_t now_ms);
/** When ams_cs_tick is next due. */
TERN_API uint64_t ams_cs_deadline(const ams_cs *cs);
TERN_API void ams_cs_stats_get(const ams_cs *cs, ams_cs_stats *st);

/* ------------------------------------------------------------------ registrar */

typedef struct ams_reg ams_reg;

/** What a registrar is. */
typedef struct ams_reg_cfg {
    uint16_t venture, unit;
    mams_ep self;      /**< its own MAMS endpoint (as others reach it) */
    const mams_ep *cs; /**< configuration server endpoints to announce to */
    size_t n_cs;
    ams_timing timing;
    uint32_t incarnation; /**< differs from every earlier run's (e.g. from the clock) */
    /** roles[r] != 0 if role r exists in the venture */
    const uint8_t *roles;
} ams_reg_cfg;

/** Counters of a registrar. */
typedef struct ams_reg_stats {
    uint64_t modules;        /**< of its cell, now */
    uint64_t remote_modules; /**< of other cells, as it knows them now */
    uint64_t peers;          /**< other registrars of the venture */
    uint64_t registered, reconnected, died, stopped, rejected;
    uint64_t malformed; /**< PDUs dropped */
    int census;         /**< still taking its census */
} ams_reg_stats;

TERN_API int ams_reg_new(const ams_reg_cfg *cfg, ams_send_fn send, void *ctx,
                         uint64_t now_ms, ams_reg **out);
TERN_API void ams_reg_free(ams_reg *r);
TERN_API void ams_reg_input(ams_reg *r, uint64_t now_ms, const mams_ep *from,
                            const uint8_t *buf, size_t len);
TERN_API void ams_reg_tick(ams_reg *r, uint64_t now_ms);
TERN_API uint64_t ams_reg_deadline(const ams_reg *r);
TERN_API void ams_reg_stats_get(const ams_reg *r, ams_reg_stats *st);
/** 1 once a MAMS_STOP (amsstop) reached it: its amsd should stop. It has
 * passed the order on to the other registrars it knows. */
TERN_API int ams_reg_stopped(const ams_reg *r);

#ifdef __cplusplus
}
#endif
#endif
