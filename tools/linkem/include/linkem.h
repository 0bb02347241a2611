/* linkem: Tern's link emulator.
 *
 * One linkem process emulates one link with two directions, a2b and b2a. Each
 * direction is an impairment "channel": a sans-I/O engine that is fed packets
 * (datagrams, stream chunks or IP packets) with the loop's current time and
 * hands each one back through a callback when, and if, the emulated link
 * delivers it. The channel applies, in this order for every packet:
 *
 *   1. random draws from the direction's PRNG, always in the same order
 *      (loss, bit errors, duplication, reordering, jitter), so that the same
 *      seed and the same packet sequence give the same fates whatever the
 *      timing;
 *   2. the outage schedule at arrival (a packet arriving while the link is
 *      down is dropped), loss, bit errors (drop, or flip and deliver), then
 *      tail drop when the transmitter's queue is full;
 *   3. serialization at the rate (packets leave one after another), the
 *      one-way delay plus jitter (FIFO unless the packet was picked for
 *      reordering), and the outage schedule again at the delivery time.
 *
 * Timers come from a tern_loop, so the same channel runs on the real clock in
 * the linkem program and on a virtual clock in unit tests. Around the
 * channels sit three relays that do the I/O: UDP (datagrams between two
 * listening sockets), TCP (a byte-stream proxy) and packet (two network
 * namespaces joined by TUN devices). The command-line contract is in
 * docs/linkem.md.
 */
#ifndef LINKEM_H
#define LINKEM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tern/base.h"
#include "tern/log.h"
#include "tern/loop.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Bumped whenever a public struct or signature of libternlinkem changes. */
#define LINKEM_ABI_VERSION 2

/** The ABI version libternlinkem was built with. */
TERN_API int tern_linkem_abi_version(void);

enum lk_mode { LK_MODE_UDP = 0, LK_MODE_TCP = 1, LK_MODE_PACKET = 2 };
enum lk_dir { LK_A2B = 0, LK_B2A = 1 };

#define LK_QUEUE_DEFAULT          1000000u /**< bytes waiting for the transmitter */
#define LK_STATS_INTERVAL_DEFAULT 500u     /**< ms between --stats rewrites */
#define LK_ERR_MAX                512      /**< enough for any error text */

/* ------------------------------------------------------------ configuration */

/** A down interval [start, end) in ns since the emulator's epoch. */
typedef struct lk_interval {
    uint64_t start_ns, end_ns;
} lk_interval;

/** When a direction is down: any listed interval, or the periodic schedule. */
typedef struct lk_schedule {
    lk_interval *down; /**< owned; any order, may overlap */
    size_t n_down;
    /** Periodic: up for up_ns, down for down_ns, repeating from offset_ns
     * (the link is up before the offset). down_ns == 0: no periodic part. */
    uint64_t up_ns, down_ns, offset_ns;
} lk_schedule;

/** The impairments of one direction. */
typedef struct lk_impair {
    double delay_ms;       /**< one-way delay */
    double jitter_ms;      /**< uniform extra 0..jitter_ms */
    uint64_t rate_bps;     /**< 0: unlimited */
    uint64_t queue_bytes;  /**< bound of the bytes waiting for the transmitter */
    double loss;           /**< independent drop probability */
    double ber;            /**< probability that each bit flips */
    double dup;            /**< duplication probability */
    double reorder;        /**< probability a packet is held back reorder_gap_ms */
    double reorder_gap_ms; /**< < 0: 2 x delay + 1 ms */
    lk_schedule outage;
} lk_impair;

/** Everything a linkem process is told, from the command line and files. */
typedef struct lk_config {
    int mode; /**< enum lk_mode */
    uint64_t seed;
    lk_impair dir[2]; /**< indexed by enum lk_dir */
    /* udp: per direction "host:port" (NULL: the direction is absent) */
    char *udp_listen[2], *udp_target[2];
    /* tcp */
    char *tcp_listen, *tcp_target;
    int reset_on_outage;
    /* packet: namespace names, IPv4 "a.b.c.d/len" addresses, MTU */
    char *netns[2], *addr[2];
    unsigned mtu;
    int replace;
    /** packet: a packet with a flipped bit is dropped (a link-layer CRC,
     * e.g. PPP's FCS) instead of delivered to the receiving kernel */
    int ber_drop;
    /* output */
    char *ports_file, *stats_file;
    unsigned stats_interval_ms;
    int log_level; /**< enum tern_log_level */
    int help;      /**< --help was given */
} lk_config;

/** "udp", "tcp", "packet" -> enum lk_mode; -1 if unknown. */
TERN_API int lk_mode_parse(const char *s);

/** The name of a mode ("udp", ...). */
TERN_API const char *lk_mode_name(int mode);

/** The name of a direction ("a2b" or "b2a"). */
TERN_API const char *lk_dir_name(int dir);

/** Sets the defaults of mode (seed 1, queue 1,000,000, packet addresses
 * 10.200.0.1/24 and 10.200.0.2/24, MTU 1500, ...). */
TERN_API void lk_config_init(lk_config *cfg, int mode);

/** Frees what cfg owns; cfg may then be initialised again. */
TERN_API void lk_config_free(lk_config *cfg);

/** Whether option name (without "--", with or without an a2b-/b2a- prefix)
 * takes a value: 1, 0 for a flag, TERN_ENOTFOUND if there is no such option. */
TERN_API int lk_option_takes_value(const char *name);

/** Applies one option (name without "--"; value NULL for a flag). Later calls
 * override earlier ones, except that outages accumulate ("none" clears them).
 * TERN_ESYNTAX with err naming the option and the bad value. */
TERN_API int lk_config_set(lk_config *cfg, const char *name, const char *value, char *err,
                           size_t errlen);

/** Parses a config file's text: one option per line without the leading "--"
 * ("delay 1250", "a2b-ber 1e-5", "outage 10-30"), '#' comments, blank lines.
 * fname names the file in errors: TERN_ESYNTAX with "fname:line: ...". */
TERN_API int lk_config_parse_text(lk_config *cfg, const char *fname, const char *text,
                                  size_t len, char *err, size_t errlen);

/** Reads and parses the file at path (see lk_config_parse_text). -errno with
 * err naming the file if it cannot be read. */
TERN_API int lk_config_load(lk_config *cfg, const char *path, char *err, size_t errlen);

/** Parses the options after the mode word ("--delay 5", "--delay=5",
 * "--config FILE" read in place). TERN_ESYNTAX with err naming the option. */
TERN_API int lk_config_parse_args(lk_config *cfg, int argc, char *const *argv, char *err,
                                  size_t errlen);

/** Checks that the options fit the mode (endpoints given, no loss or bit
 * errors in tcp mode, ...). TERN_ESYNTAX with err saying what is wrong. */
TERN_API int lk_config_check(const lk_config *cfg, char *err, size_t errlen);

/** Prints the usage of mode (or of all modes when mode < 0) to f. */
TERN_API void lk_usage(FILE *f, int mode);

/* ------------------------------------------------------------ outage schedule */

/** 1 if the schedule has the link down at rel_ns (ns since the epoch). */
TERN_API int lk_schedule_is_down(const lk_schedule *s, uint64_t rel_ns);

/** The first time after rel_ns at which the link changes state (goes down or
 * comes up); UINT64_MAX if it never does. */
TERN_API uint64_t lk_schedule_next_change(const lk_schedule *s, uint64_t rel_ns);

/** The first time at or after rel_ns at which the link is up; UINT64_MAX if
 * never. */
TERN_API uint64_t lk_schedule_next_up(const lk_schedule *s, uint64_t rel_ns);

/* ------------------------------------------------------------ channel */

/** Counters of one direction. Relays that carry streams (tcp) report
 * packets_* as chunks and add connections and resets. */
typedef struct lk_counters {
    uint64_t packets_in, bytes_in, packets_out, bytes_out;
    uint64_t dropped_loss, dropped_ber, dropped_queue, dropped_outage;
    uint64_t corrupted, duplicated, reordered;
    uint64_t connections, resets; /**< tcp only */
    uint64_t send_errors;         /**< deliveries the relay could not send */
} lk_counters;

typedef struct lk_channel lk_channel;

/** Channel flags. */
#define LK_CH_BER_DELIVER 0x1u /**< bit errors flip and deliver (else drop) */
/** A byte stream: no random fates and no drops; while the link is down,
 * chunks wait for it to come back (callers stop reading to bound memory). */
#define LK_CH_STREAM 0x2u

/** Packet flags. */
#define LK_PKT_MARKER 0x1u /**< in-band marker (end of stream): timed, not counted */

/** Fates lk_channel_send() reports (bits). 0: queued for delivery. */
#define LK_FATE_LOSS    0x01u
#define LK_FATE_BER     0x02u /**< dropped for a bit error */
#define LK_FATE_QUEUE   0x04u
#define LK_FATE_OUTAGE  0x08u
#define LK_FATE_CORRUPT 0x10u /**< at least one bit flipped */
#define LK_FATE_DUP     0x20u
#define LK_FATE_REORDER 0x40u
#define LK_FATE_DROPPED (LK_FATE_LOSS | LK_FATE_BER | LK_FATE_QUEUE | LK_FATE_OUTAGE)

/** Delivery: the link hands over data (the channel's own copy, which the
 * callback may modify; it is freed afterwards). Return 0 if the relay sent it
 * (counted out), or a negative error (counted in send_errors). The callback
 * may call lk_channel_send() and lk_channel_cancel(), not lk_channel_free(). */
typedef int (*lk_deliver_cb)(void *arg, void *tag, uint8_t *data, size_t len,
                             unsigned pflags);

/** Creates the channel of direction dir with impairments imp (copied) and
 * the PRNG seeded from seed and dir. Its epoch (time 0 of the outage
 * schedule) is the loop's current time until lk_channel_set_epoch(). */
TERN_API int lk_channel_new(tern_loop *loop, const lk_impair *imp, uint64_t seed, int dir,
                            unsigned flags, lk_deliver_cb cb, void *arg,
                            lk_channel **out);

/** Frees ch and every packet it holds (undelivered). NULL is fine. */
TERN_API void lk_channel_free(lk_channel *ch);

/** Sets time 0 of the outage schedule (the loop clock's monotonic ns). */
TERN_API void lk_channel_set_epoch(lk_channel *ch, uint64_t epoch_ns);

/** Feeds one packet (copied) at the loop's current time. tag is handed back
 * on delivery. Returns its fate (LK_FATE_* bits, 0: on its way), or -ENOMEM. */
TERN_API int lk_channel_send(lk_channel *ch, const uint8_t *data, size_t len, void *tag,
                             unsigned pflags);

/** Drops, uncounted, every held packet with this tag (a closed connection).
 * Returns how many. */
TERN_API size_t lk_channel_cancel(lk_channel *ch, void *tag);

/** The direction's counters (the relay may add connections and resets). */
TERN_API lk_counters *lk_channel_counters(lk_channel *ch);

/** Bytes accepted but not yet being transmitted (the tail-drop queue). */
TERN_API uint64_t lk_channel_waiting_bytes(lk_channel *ch);

/** When the first packet now waiting for the transmitter starts (loop ns),
 * so that the waiting bytes shrink; 0 if none waits. */
TERN_API uint64_t lk_channel_next_tx_start(lk_channel *ch);

/** Bytes and packets the channel holds (queued or in flight). */
TERN_API uint64_t lk_channel_held_bytes(const lk_channel *ch);
TERN_API size_t lk_channel_held_packets(const lk_channel *ch);

/** 1 if the direction's link is down now. */
TERN_API int lk_channel_is_down(const lk_channel *ch);

/** The next time (loop ns) the link changes state; UINT64_MAX if never. */
TERN_API uint64_t lk_channel_next_change(const lk_channel *ch);

/** Number of random draws made so far (for tests of determinism). */
TERN_API uint64_t lk_channel_draws(const lk_channel *ch);

/* ------------------------------------------------------------ relays */

typedef struct lk_relay lk_relay;

/** Creates the relay of cfg->mode on loop: binds the sockets (udp, tcp) or
 * creates the namespaces and TUN devices (packet). On failure err says why;
 * -EPERM (packet mode without the privileges), TERN_EEXIST (a namespace of
 * that name exists) and TERN_ESYNTAX (an address that does not resolve) are
 * the caller's to fix. */
TERN_API int lk_relay_new(tern_loop *loop, const lk_config *cfg, tern_log *lg, char *err,
                          size_t errlen, lk_relay **out);

/** Starts moving traffic; epoch_ns is time 0 of the outage schedules. */
TERN_API int lk_relay_start(lk_relay *r, uint64_t epoch_ns);

/** The ports-file text: "a2b <port>\nb2a <port>\n" (udp), "listen <port>\n"
 * (tcp), "" (packet). */
TERN_API int lk_relay_ports(const lk_relay *r, char *buf, size_t size);

/** Copies the counters of direction dir. */
TERN_API void lk_relay_counters(const lk_relay *r, int dir, lk_counters *out);

/** Stops the relay, closes its descriptors and, in packet mode, deletes the
 * namespaces. NULL is fine. */
TERN_API void lk_relay_free(lk_relay *r);

/* ------------------------------------------------------------ output */

/** Formats the counters as the --stats JSON document. Returns the length, or
 * TERN_ENOSPACE if buf is too small (4 KiB always suffices). */
TERN_API int lk_stats_json(int mode, uint64_t seed, double uptime_s,
                           const lk_counters c[2], char *buf, size_t size);

/** Prints the human summary table of the counters to f. */
TERN_API void lk_stats_summary(FILE *f, int mode, uint64_t seed, double uptime_s,
                               const lk_counters c[2]);

/** Writes data to path atomically (a temporary file beside it, then
 * rename). 0 or -errno. */
TERN_API int lk_write_atomic(const char *path, const char *data, size_t len);

#ifdef __cplusplus
}
#endif
#endif
