/* ltpadmin: ION's LTP configuration commands, read into plain settings.
 *
 * A node's host.rc (or ltpadmin file) is lexed by tern/rc.h; each command of
 * the ltpadmin section goes through ltp_admin_apply(). What Tern acts on:
 *
 *   1 <est_max_export_sessions>
 *   a span <peer> <max export> <max import> <max segment size>
 *          <aggregation size> <aggregation time, s> '<LSO command>' [queuing latency, s]
 *          (ION 4.1.3 also reads the older form with a block size after each of
 *          the session counts, and ignores those; so does Tern, with a warning)
 *   c span ... (same arguments: change)          d span <peer>
 *   a seat '<LSI command>'    the induct side (ION 4.1): where the engine listens
 *   c seat '<LSI command>' '<new LSI command>'   (Tern's: ION 4.1.3 has no c seat)
 *   d seat '<LSI command>'    i seat '<LSI command>'    l seat
 *   s ['<LSI command>']       start; with an LSI, as 'a seat' first (deprecated)
 *   x (stop: accepted)
 *   m maxrepairrounds <1..256>      m span <peer> maxrepairrounds <1..256>
 *   m maxretries <n>                m maxseglossrate <0..1>
 *   m ownqtime <seconds>            l span [<peer>]    i span <peer>
 *   m maxblocksize <bytes>          m span <peer> maxblocksize <bytes>
 *   m maximportbytes <bytes>        m span <peer> maximportbytes <bytes>
 *       (Tern's: the largest block taken from a peer, default 256 MiB, and
 *       what one span's imports may hold, default two such blocks; K, M, G)
 *
 * As ltpadmin does, an unquoted LSI command of two words (a seat udplsi
 * host:port) is one command. ION commands Tern accepts but does not act on
 * (m screening, m maxber, w, e, h, ...) produce a warning naming file:line.
 */
#ifndef TERN_LTP_ADMIN_H
#define TERN_LTP_ADMIN_H

#include "ltp.h"
#include "tern/rc.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Bits of ltp_admin.set and ltp_admin_span.set: the values the
 * configuration gave (the others are defaults), so listings can say where
 * each came from. */
#define LTP_SET_RETRIES     0x01u /**< m maxretries */
#define LTP_SET_ROUNDS      0x02u /**< m maxrepairrounds, m span .. maxrepairrounds */
#define LTP_SET_OWNQTIME    0x04u /**< m ownqtime */
#define LTP_SET_LOSSRATE    0x08u /**< m maxseglossrate */
#define LTP_SET_MAXBLOCK    0x10u /**< m [span ..] maxblocksize */
#define LTP_SET_IMPORTBYTES 0x20u /**< m [span ..] maximportbytes */
#define LTP_SET_QTIME       0x40u /**< a span's queuing latency argument */

/** One configured span and its link-service command. */
typedef struct ltp_admin_span {
    ltp_span_cfg cfg;
    char lso[256]; /**< e.g. "udplso 127.0.0.1:1113 1000000000" */
    char at[300];  /**< "file:line" of the command that set it, for messages */
    unsigned set;  /**< LTP_SET_* given for this span */
} ltp_admin_span;

/** One seat: a link service input, where the engine receives segments. */
typedef struct ltp_admin_seat {
    char lsi[256]; /**< "udplsi 127.0.0.1:1113", its words joined by one space */
    char *file;    /**< where it was declared or last changed (own copy) */
    unsigned line;
} ltp_admin_seat;

/** Everything an ltpadmin file configures. */
typedef struct ltp_admin {
    int initialized;         /**< "1" seen */
    unsigned est_max_export; /**< from "1" */
    ltp_engine_cfg engine;   /**< engine_id comes from ionadmin's "1 <node>" */
    double seg_loss_rate;    /**< m maxseglossrate (default 0.01) */
    ltp_admin_span *spans;
    size_t nspans;
    ltp_admin_seat *seats; /**< a seat, or s with an LSI command, in order */
    size_t nseats;
    unsigned set; /**< LTP_SET_* given engine-wide */
} ltp_admin;

/** Result of ltp_admin_apply besides 0 and errors: accepted, not acted on. */
#define LTP_ADMIN_IGNORED 1

/** Empty settings with ION's defaults (max retries 5, repair rounds 8, own
 * queuing latency 1 s, segment loss rate 0.01). */
TERN_API void ltp_admin_init(ltp_admin *a);

/** Frees the span and seat tables. */
TERN_API void ltp_admin_free(ltp_admin *a);

/**
 * Applies one ltpadmin command. Returns 0; LTP_ADMIN_IGNORED with a warning
 * in msg ("file:line: ..."); TERN_ESYNTAX with msg "file:line: what was
 * wrong; what was expected"; -ENOMEM. Listing commands ("l span", "i span",
 * "l seat", "i seat") write their text to msg and return 0.
 */
TERN_API int ltp_admin_apply(ltp_admin *a, const tern_rc_cmd *cmd, char *msg,
                             size_t msglen);

/** Writes the "l span" listing (all spans, or one if peer != 0): each span's
 * resolved retransmission settings and the worst-case time to deliver or
 * abandon a 64 KiB block. Returns the length written (as snprintf). */
TERN_API int ltp_admin_list_spans(const ltp_admin *a, uint64_t peer, char *out,
                                  size_t cap);

/** Writes the "l span" listing of a running engine (all spans, or one if
 * peer != 0): the values engine e uses now — the one-way light time a
 * contact plan's range set, the timeout and repair budget it gives, the
 * limits, the sessions open — each with where it came from (the
 * configuration, the contact plan, or the default). Returns the length
 * written (as snprintf). */
TERN_API int ltp_admin_list_spans_live(const ltp_admin *a, const ltp_engine *e,
                                       uint64_t peer, char *out, size_t cap);

/** Writes the "l seat" listing (all seats, or the one whose LSI command is
 * lsi): "seat '<LSI command>' (file:line)" per line, "no seat" if none.
 * Returns the length written (as snprintf). */
TERN_API int ltp_admin_list_seats(const ltp_admin *a, const char *lsi, char *out,
                                  size_t cap);

/** Worst-case time (ms) to deliver or abandon a block on a span configured
 * as cfg with engine settings eng: rounds x (retries + 1) x (2 x one-way
 * light time + own + remote queuing latency), link-down time not counted. */
TERN_API uint64_t ltp_admin_budget_ms(const ltp_engine_cfg *eng, const ltp_span_cfg *cfg);

#ifdef __cplusplus
}
#endif
#endif
