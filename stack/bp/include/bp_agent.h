/* The bundle protocol agent (RFC 9171 section 5), as a state machine.
 *
 * The agent takes inputs — an application sends (bp_agent_send), a convergence
 * layer received bytes (bp_agent_receive), a transmission finished
 * (bp_outduct_result), a timer fired on the tern_loop it was given (which may
 * run on a virtual clock) — and produces outputs: bundles handed to outducts
 * through their convergence layer's vtable, and bundles waiting in endpoint
 * queues for applications (bp_agent_recv). It does no socket I/O.
 *
 * Every bundle the agent holds lives in its store (sdr): a bundle taken from
 * an application or a peer is committed before bp_agent_send or bp_agent_receive
 * returns, so the caller may acknowledge it (the durability rule). A node
 * restarted on a durable store calls bp_agent_resume() after its
 * configuration and finds every bundle again, forwarded or queued as before.
 *
 * Forwarding: bundles for this node go to their endpoint (reassembled first
 * if they are fragments); others are routed — by the router hook if one is
 * set (Contact Graph Routing plugs in there), else by the static plans
 * (ipnadmin "a plan N ltp/N", bpadmin plan/planduct, "a exit") — and queued
 * on an outduct in priority order: expedited (higher ordinal first), then
 * standard, then bulk. A bundle with no route waits in limbo until a plan
 * changes or its lifetime ends. Bundles larger than an outduct's maximum
 * payload are fragmented proactively unless they forbid it.
 */
#ifndef TERN_BP_AGENT_H
#define TERN_BP_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bp_bundle.h"
#include "sdr.h"
#include "tern/base.h"
#include "tern/log.h"
#include "tern/loop.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Bumped whenever a public struct or signature of the agent changes. */
#define BP_AGENT_ABI_VERSION 2

typedef struct bp_agent bp_agent;
typedef struct bp_outduct bp_outduct;

/** ION's classes of service. */
enum bp_priority {
    BP_PRIO_BULK = 0,
    BP_PRIO_STANDARD = 1,
    BP_PRIO_EXPEDITED = 2,
};

/** What happens to a bundle for an endpoint no application has open. */
enum bp_recv_rule {
    BP_RECV_QUEUE = 'q',   /**< keep it in the endpoint's queue for a later reader */
    BP_RECV_DISCARD = 'x', /**< discard it (counted) */
};

/** Results a convergence layer reports for a transmission. */
enum bp_xmit_result {
    BP_XMIT_OK = 0,        /**< sent (for LTP: the red part was claimed) */
    BP_XMIT_FAILED = 1,    /**< not sent: the agent forwards the bundle again */
    BP_XMIT_CANCELLED = 2, /**< cancelled (e.g. an LTP block): forwarded again */
};

/** Agent settings. */
typedef struct bp_agent_cfg {
    uint64_t node;        /**< this node's ipn number (> 0) */
    const char *dtn_name; /**< optional dtn node name, "//name" (NULL: none) */
    sdr *store;           /**< where bundles live (required) */
    int crc_type;         /**< CRC of bundles made here: BP_CRC_16 or BP_CRC_32C
                               (0 means CRC-32C: RFC 9171 wants one on the primary) */
    size_t dedup_max;     /**< bundle IDs remembered for duplicate suppression
                               (0: 1,048,576); the oldest are forgotten first */
    size_t small_max;     /**< bundles up to this size are heap objects, larger
                               ones store blobs (0: 65,536) */
    bool status_reports;  /**< send the status reports bundles ask for; off by
                               default, as RFC 9171 5.1 requires */
} bp_agent_cfg;

/** What the host provides. */
typedef struct bp_agent_host {
    void *ctx;
    /** A bundle was queued for endpoint ep (read it with bp_agent_recv). May be NULL. */
    void (*deliverable)(void *ctx, const bp_eid *ep);
    /** A bundle an application of this node sent (source src, creation time
     * ctime_ms, sequence number seq) was deleted before it reached its end,
     * after bp_agent_send had returned 0: too big for the outduct a session
     * revealed (code TERN_ETOOBIG), its lifetime over (-ETIME), no route left
     * (TERN_ENOROUTE), its local endpoint gone (-ENOENT); why says it in words.
     * So the application hears of it whether or not reports are on. May be
     * NULL. */
    void (*dropped)(void *ctx, const bp_eid *src, uint64_t ctime_ms, uint64_t seq,
                    int code, const char *why);
} bp_agent_host;

/** Creates an agent on loop. Bundles already in the store are loaded but not
 * acted on until bp_agent_resume(). lg may be NULL. */
TERN_API int bp_agent_new(tern_loop *loop, const bp_agent_cfg *cfg,
                          const bp_agent_host *host, tern_log *lg, bp_agent **out);

/** Frees the agent (bundles stay in the store). Closes every outduct first. */
TERN_API void bp_agent_free(bp_agent *a);

/** After configuration: dispatches every bundle found in the store at
 * bp_agent_new (forwarded, queued for delivery or held for reassembly again).
 * Returns how many. */
TERN_API int bp_agent_resume(bp_agent *a);

/* ------------------------------------------------ durable acknowledgements
 * Under group commit a transaction reaches the disk a few ms after it
 * commits. Whatever tells a peer or an application "taken" (an LTP report, a
 * SENT answer, a TCPCL XFER_ACK) waits for that, or a crash in between would
 * lose what the other side has already let go. */

/** Called from the loop once a mark is durable. */
typedef void (*bp_durable_cb)(void *ctx, uint64_t arg1, uint64_t arg2);

/** A mark naming everything the agent's store has committed so far. */
TERN_API uint64_t bp_agent_durable_mark(const bp_agent *a);

/** 1 if everything up to mark is durable. */
TERN_API int bp_agent_is_durable(const bp_agent *a, uint64_t mark);

/** 0 if mark is already durable (cb is not called); 1 if cb(ctx, arg1, arg2)
 * will be called from the loop once it is; negative on error. */
TERN_API int bp_agent_durable_wait(bp_agent *a, uint64_t mark, bp_durable_cb cb,
                                   void *ctx, uint64_t arg1, uint64_t arg2);

/**
 * As bp_agent_receive, for a convergence layer that acknowledges what it
 * received only once that is safe: 0 if it is already (cb is not called),
 * 1 if cb(ctx, arg1, arg2) will be called from the loop once every bundle
 * taken from data is durable, or has left the store (delivered to and
 * acknowledged by its application, forwarded, deleted), whichever comes
 * first; negative when a bundle of data could not be kept (TERN_EFULL,
 * -ENOMEM, a store I/O error): nothing may be claimed. A malformed bundle is
 * claimed (0 or 1): sending it again would not help.
 * A bundle delivered before the store's flush thus need never be written.
 */
TERN_API int bp_agent_receive_claim(bp_agent *a, const uint8_t *data, size_t len,
                                    bp_durable_cb cb, void *ctx, uint64_t arg1,
                                    uint64_t arg2);

/** Drops every pending wait of ctx (its owner is going away). */
TERN_API void bp_agent_durable_forget(bp_agent *a, void *ctx);

/** This node's ipn number. */
TERN_API uint64_t bp_agent_node(const bp_agent *a);

/** Switches the generation of status reports on or off (RFC 9171 5.1: off
 * unless the operator accepts the traffic). While off, a report a bundle or
 * one of its blocks asks for is counted in reports_suppressed, not sent. */
TERN_API void bp_agent_set_status_reports(bp_agent *a, bool on);

/** Whether status reports are generated. */
TERN_API bool bp_agent_status_reports(const bp_agent *a);

/** The agent's loop (CLAs and routers use its clock). */
TERN_API tern_loop *bp_agent_loop(const bp_agent *a);

/** The agent's logger (may be NULL: warnings then go to stderr), for its
 * convergence layers. */
TERN_API tern_log *bp_agent_log(const bp_agent *a);

/* ---------------------------------------------------------------- endpoints */

/** Registers an endpoint of this node (bpadmin "a endpoint"). TERN_EEXIST if
 * it is; -EINVAL if it does not belong to this node. ipn:N.0 (the
 * administrative endpoint) always exists, with rule BP_RECV_QUEUE. */
TERN_API int bp_endpoint_add(bp_agent *a, const bp_eid *ep, int rule);

/** Changes an endpoint's rule (bpadmin "c endpoint"). */
TERN_API int bp_endpoint_change(bp_agent *a, const bp_eid *ep, int rule);

/** Removes an endpoint; bundles waiting for it are deleted. TERN_ENOTFOUND. */
TERN_API int bp_endpoint_del(bp_agent *a, const bp_eid *ep);

/** An application opens (reads) or closes an endpoint. While open, bundles
 * are queued for it whatever its rule. -EBUSY if already open. */
TERN_API int bp_endpoint_open(bp_agent *a, const bp_eid *ep);
TERN_API int bp_endpoint_close(bp_agent *a, const bp_eid *ep);

/* ------------------------------------------------------------ applications */

/** Options of bp_agent_send; bp_send_opts_init() sets the defaults. */
typedef struct bp_send_opts {
    uint64_t lifetime_ms;    /**< default 86,400,000 (one day) */
    int priority;            /**< BP_PRIO_*, default standard */
    unsigned ordinal;        /**< expedited only: 0..254, higher first */
    uint64_t flags;          /**< BP_FLAG_RPT_*, BP_FLAG_NO_FRAGMENT, STATUS_TIME */
    const bp_eid *report_to; /**< NULL: the source */
    uint64_t hop_limit;      /**< 1..255 adds a hop-count block; 0: none */
} bp_send_opts;

/** Fills *o with the defaults. */
TERN_API void bp_send_opts_init(bp_send_opts *o);

/** Identifies a bundle: creation time and sequence number (with its source). */
typedef struct bp_bundle_ref {
    uint64_t ctime_ms, seq;
} bp_bundle_ref;

/**
 * Creates a bundle from src (dtn:none or an endpoint of this node) to dest
 * carrying payload[0..len), commits it to the store and dispatches it. When
 * this returns 0 the bundle is safe. *ref (may be NULL) identifies it.
 * A bundle from dtn:none (anonymous) is marked must-not-fragment, asks for no
 * status report and names dtn:none as report-to, whatever o says (RFC 9171
 * 4.2.3: nothing identifies it, so a fragment or report could not name it).
 * Errors: -EINVAL (bad source, options), TERN_EFULL (store full),
 * TERN_ETOOBIG (routed to an outduct that cannot carry it and it may not be
 * fragmented: deleted, with its deletion report if asked; the log names the
 * limit), TERN_E...
 */
TERN_API int bp_agent_send(bp_agent *a, const bp_eid *src, const bp_eid *dest,
                           const bp_send_opts *o, const void *payload, size_t len,
                           bp_bundle_ref *ref);

/**
 * As bp_agent_send, the payload being head[0..hlen) followed by the len bytes
 * at off of the regular file fd, kept by reference: the store holds the
 * bundle's blocks, head and the file's path and identity (device, inode,
 * size, modification time), not the file's bytes, which are read from the
 * file each time the bundle goes out. The agent keeps a descriptor of its
 * own (fd stays the caller's) and after a restart reopens the file by path.
 * The file must not change until the bundle is gone: a bundle whose file has
 * changed size or modification time, or cannot be reopened, is deleted
 * (bp_agent_stats.file_refs_lost). In a durable store the file is synced
 * when first referenced, so that the bundle is as safe as a copied one.
 * -ENOTSUP: fd is not a readable regular file that its path in
 * /proc/self/fd reaches (the caller sends the bytes instead); otherwise as
 * bp_agent_send.
 */
TERN_API int bp_agent_send_file(bp_agent *a, const bp_eid *src, const bp_eid *dest,
                                const bp_send_opts *o, const void *head, size_t hlen,
                                int fd, uint64_t off, uint64_t len, bp_bundle_ref *ref);

/** True if the store has room for a bundle of about len bytes now (what a
 * server checks before taking a bundle, to slow a sender down rather than
 * refuse it with TERN_EFULL). */
TERN_API bool bp_agent_has_room(const bp_agent *a, size_t len);

/** False if a bundle of about len bytes cannot fit even in an empty store
 * (waiting for room would be for ever: refuse it instead). */
TERN_API bool bp_agent_could_fit(const bp_agent *a, size_t len);

/** A delivered bundle (an application data unit, reassembled if needed). */
typedef struct bp_delivery {
    bp_eid src, dest;
    uint64_t ctime_ms, seq, lifetime_ms;
    uint64_t flags;   /**< the bundle's processing flags (BP_FLAG_ADMIN ...) */
    uint8_t *payload; /**< malloc'd, owned by the caller (bp_delivery_release),
                           unless view */
    size_t len;
    bool view; /**< bp_agent_recv_lend of a bundle the store holds in memory:
                    payload points into the store, valid until the agent next
                    runs (an input, a timer, a call other than recv_lend) */
} bp_delivery;

/** Takes the oldest bundle queued for endpoint ep. -EAGAIN if none,
 * TERN_ENOTFOUND if no such endpoint. The bundle leaves the store. */
TERN_API int bp_agent_recv(bp_agent *a, const bp_eid *ep, bp_delivery *d);

/**
 * As bp_agent_recv, but the bundle stays in the store, out of the queue,
 * until bp_agent_recv_done (the application has it: deleted) or
 * bp_agent_recv_undo (it did not get it: back at the head of the queue).
 * A server that hands bundles to a client ahead of its reads uses this, so
 * a client that goes away loses nothing. *token names the loan. After a
 * restart, bundles on loan are queued again (delivered at least once).
 * A large bundle the store keeps in memory is lent without a copy
 * (d->view): use its payload before the agent runs again.
 */
TERN_API int bp_agent_recv_lend(bp_agent *a, const bp_eid *ep, bp_delivery *d,
                                uint64_t *token);

/** The loan's bundle reached the application: it leaves the store.
 * TERN_ENOTFOUND if no such loan (it expired meanwhile). */
TERN_API int bp_agent_recv_done(bp_agent *a, uint64_t token);

/** The loan's bundle goes back to the head of its endpoint's queue. */
TERN_API int bp_agent_recv_undo(bp_agent *a, uint64_t token);

/** Frees a delivery's payload. */
TERN_API void bp_delivery_release(bp_delivery *d);

/** Bundles waiting in endpoint ep's queue. */
TERN_API size_t bp_endpoint_queued(const bp_agent *a, const bp_eid *ep);

/* --------------------------------------------------- convergence layers */

/**
 * A convergence-layer adapter: a vtable registered with the agent under its
 * protocol name ("ltp", "udp", "tcp", "stcp", "mtcp", ...). The agent opens
 * an outduct per bpadmin "a outduct <protocol> <name> ..." and hands it
 * encoded bundles; the CLA reports each one's fate with bp_outduct_result().
 */
typedef struct bp_cla_ops {
    const char *protocol;
    /** Opens outduct `name` with its command string (may be ""). *duct gets
     * the CLA's own state for it. */
    int (*outduct_open)(void *cla, bp_outduct *od, const char *name, const char *cmd,
                        void **duct);
    /** Closes an outduct; transmissions still pending are abandoned (the
     * agent forwards those bundles again). */
    void (*outduct_close)(void *cla, void *duct);
    /**
     * Transmits one encoded bundle. 0: taken, and its fate comes later (or
     * from inside this call) through bp_outduct_result(od, xmit, ...);
     * -EAGAIN: busy, nothing taken: the CLA calls bp_outduct_ready() when
     * it can take more. -EMSGSIZE: this bundle can never go this way (too
     * big for the medium and not fragmentable): the agent deletes it, with a
     * report if asked. Another error: failed now (tried again later).
     * bundle[0..len) stays valid and unchanged until the result is reported.
     */
    int (*send)(void *cla, void *duct, const uint8_t *bundle, size_t len, uint64_t xmit);
} bp_cla_ops;

/** Registers a convergence layer. TERN_EEXIST if its protocol has one. */
TERN_API int bp_cla_register(bp_agent *a, const bp_cla_ops *ops, void *cla);

/** Adds an outduct (bpadmin "a outduct <protocol> <name> '<cmd>' [max payload]").
 * max_payload 0 means no limit: larger bundles are fragmented. TERN_ENOTFOUND
 * if no CLA has that protocol, TERN_EEXIST if the duct exists. */
TERN_API int bp_outduct_add(bp_agent *a, const char *protocol, const char *name,
                            const char *cmd, size_t max_payload);

/** Removes an outduct; its bundles are forwarded again. */
TERN_API int bp_outduct_del(bp_agent *a, const char *protocol, const char *name);

/** Finds an outduct by protocol and name; NULL if none. */
TERN_API bp_outduct *bp_outduct_find(const bp_agent *a, const char *protocol,
                                     const char *name);

/** The fate of transmission xmit on od (enum bp_xmit_result). */
TERN_API void bp_outduct_result(bp_outduct *od, uint64_t xmit, int result);

/** The CLA can take bundles again after -EAGAIN. */
TERN_API void bp_outduct_ready(bp_outduct *od);

/** The outduct's link went down (bundles wait in its queue) or up. */
TERN_API void bp_outduct_set_up(bp_outduct *od, bool up);

/** Sets the outduct's maximum payload length (a CLA whose medium has a
 * limit, e.g. a UDP datagram, calls it from outduct_open when the
 * configuration gave none, or when it learns the limit: a TCPCLv4 peer's
 * transfer MRU). 0: no limit. Bundles queued before are fragmented when
 * the CLA's send turns them down with -EMSGSIZE, where their flags allow. */
TERN_API void bp_outduct_set_max_payload(bp_outduct *od, size_t max_payload);

/** Sets the largest encoded bundle the outduct's medium carries (0: not
 * known, the default) and what sets it, in words for the log ("the
 * 20000-byte transfer MRU of the TCPCL peer ipn:2.0"). A bundle above it
 * that may not be fragmented (its flags, an anonymous source, or fragments
 * that would not fit) is deleted when routed to the outduct, with its
 * deletion report if it asked, and bp_agent_send returns TERN_ETOOBIG for
 * it: the application hears of it. A CLA sets it when it opens the outduct
 * (a UDP datagram) or learns it (a TCPCLv4 peer's session). */
TERN_API void bp_outduct_set_max_bundle(bp_outduct *od, size_t max_len, const char *what);

/** Bundles queued on the outduct and not yet handed to its CLA. */
TERN_API size_t bp_outduct_queued(const bp_outduct *od);

/** Bytes handed to the outduct's CLA since it was added. */
TERN_API uint64_t bp_outduct_bytes_out(const bp_outduct *od);

/* Contact-driven transmission (opt-in; Contact Graph Routing sets it, see
 * bp_cgr.h). An ungated duct (the default) sends whenever its link is up.
 * A gated one sends only while its gate is open, throttled to the gate's
 * rate: a token bucket on the bytes handed to the CLA, the first bundle of
 * an opening going at once and each later one when the bytes before it have
 * been paid for (bursts after idle time capped at 100 ms of rate); and a
 * bundle whose bytes could not all go at that rate before the gate's end
 * waits. Outside an opening bundles wait on the duct's queues. */
enum bp_gate {
    BP_GATE_NONE = 0,   /**< not contact-driven: always open, unthrottled */
    BP_GATE_OPEN = 1,   /**< a contact is in effect */
    BP_GATE_CLOSED = 2, /**< no contact now: bundles wait */
};

/** Sets od's gate (enum bp_gate) and, when open, its rate in bytes/s (0:
 * unthrottled) and the DTN time it closes (0: not known). Opening resumes
 * transmission. */
TERN_API void bp_outduct_set_gate(bp_outduct *od, int gate, uint64_t rate,
                                  uint64_t until_ms);

/** od's gate (enum bp_gate); *rate (may be NULL) gets its rate. */
TERN_API int bp_outduct_gate(const bp_outduct *od, uint64_t *rate);

/** Takes every bundle queued on od (not those already handed to the CLA,
 * whose fate the CLA reports) and routes each again, possibly elsewhere:
 * what a contact's end does. Returns how many. */
TERN_API size_t bp_outduct_reforward(bp_outduct *od);

/**
 * Input from a convergence layer: data[0..len) holds one or more bundles back
 * to back (LTP blocks may carry several). Each is checked, committed and
 * dispatched; a malformed one is counted, logged once per cause and dropped,
 * with whatever follows it (it cannot be delimited). Returns the number of
 * bundles taken, or the error of the first malformed one if none was. A
 * bundle this node cannot keep (TERN_EFULL, -ENOMEM, or a store I/O error
 * such as -ENOSPC or -EIO) stops the rest and returns that error even if
 * bundles before it were taken: the peer must keep its copy.
 */
TERN_API int bp_agent_receive(bp_agent *a, const uint8_t *data, size_t len);

/* ---------------------------------------------------------------- routing */

/** Static route (ipnadmin "a plan N <protocol>/<duct>", bpadmin plan +
 * planduct): bundles for node N leave through that outduct. Replaces a plan
 * for N. Bundles in limbo are routed again. */
TERN_API int bp_egress_plan_add(bp_agent *a, uint64_t node, const char *protocol,
                                const char *duct);

/** As bp_egress_plan_add for a dtn node name ("//name"). */
TERN_API int bp_egress_plan_add_dtn(bp_agent *a, const char *node_name,
                                    const char *protocol, const char *duct);

/** Removes the plan for node N. TERN_ENOTFOUND. */
TERN_API int bp_egress_plan_del(bp_agent *a, uint64_t node);

/** The outduct of node N's own plan (exits not followed); NULL if there is
 * no plan or its duct does not exist. */
TERN_API bp_outduct *bp_egress_plan_duct(const bp_agent *a, uint64_t node);

/** As bp_egress_plan_duct for the plan of dtn node name ("//name");
 * *has_plan (may be NULL) tells whether there is such a plan at all. */
TERN_API bp_outduct *bp_egress_plan_duct_dtn(const bp_agent *a, const char *node_name,
                                             bool *has_plan);

/** ipnadmin "a exit <first> <last> <via EID>": bundles for nodes first..last
 * with no plan of their own go the way of node via. */
TERN_API int bp_egress_exit_add(bp_agent *a, uint64_t first, uint64_t last, uint64_t via);

/** Removes the exit starting at first. TERN_ENOTFOUND. */
TERN_API int bp_egress_exit_del(bp_agent *a, uint64_t first);

/** What a router is told about the bundle it routes. */
typedef struct bp_route_req {
    const bp_primary *pri;
    size_t len;         /**< encoded bytes */
    int priority;       /**< BP_PRIO_* (ION's class of service) */
    unsigned ordinal;   /**< expedited only */
    uint64_t expire_ms; /**< DTN ms when the bundle's lifetime ends */
    uint64_t prev_node; /**< ipn node it came from (previous-node block), 0: made here
                             or unknown */
    uint64_t ref;       /**< names the bundle while it is stored (the same when it is
                             routed again); the release hook gets it */
    int probe;          /**< only asks the way (a group bundle's destinations, each
                             routed to split them by next hop): nothing is booked, ref
                             is unused; the copy that goes is routed again to book */
} bp_route_req;

/** A router's answer besides 0 and errors: the bundle cannot reach its
 * destination before it expires; the agent deletes it (reason "no known
 * route to destination from here", a deletion report if asked). */
#define BP_ROUTE_DELETE 1

/** A router decides before the static plans: it returns 0 with *od set,
 * TERN_ENOTFOUND to fall back to the plans (and exits), BP_ROUTE_DELETE, or
 * another error: no route now, the bundle waits in limbo. */
typedef int (*bp_router_fn)(void *ctx, bp_agent *a, const bp_route_req *req,
                            bp_outduct **od);

/** Sets (or with NULL clears) the router hook. */
TERN_API void bp_agent_set_router(bp_agent *a, bp_router_fn fn, void *ctx);

/** Told that a bundle the router gave an outduct left before its convergence
 * layer got it (expired, deleted, unreadable while queued): ref is its
 * bp_route_req.ref, so what the router reserved for it can be given back at
 * once. Not called for a bundle routed again (the router sees it again). */
typedef void (*bp_router_release_fn)(void *ctx, bp_agent *a, uint64_t ref);

/** Sets (or with NULL clears) the release hook. */
TERN_API void bp_agent_set_router_release(bp_agent *a, bp_router_release_fn fn,
                                          void *ctx);

/** Routes every bundle in limbo again (after a plan or contact change). */
TERN_API void bp_agent_reroute(bp_agent *a);

/* ------------------------------------------------------------- listings */

/** Number of registered endpoints (the administrative one included). */
TERN_API size_t bp_agent_endpoint_count(const bp_agent *a);

/** Endpoint i (0-based, registration order): its EID, rule, whether an
 * application has it open, and the bundles waiting. TERN_ENOTFOUND past the
 * end. Any out pointer may be NULL. */
TERN_API int bp_agent_endpoint_at(const bp_agent *a, size_t i, bp_eid *eid, int *rule,
                                  bool *open, size_t *queued);

/** Number of outducts. */
TERN_API size_t bp_agent_outduct_count(const bp_agent *a);

/** Outduct i (0-based), NULL past the end. */
TERN_API bp_outduct *bp_agent_outduct_at(const bp_agent *a, size_t i);

/** An outduct's protocol and name (owned by the outduct), whether its link
 * is up, and its maximum payload (0: none). Any out pointer may be NULL. */
TERN_API void bp_outduct_info(const bp_outduct *od, const char **protocol,
                              const char **name, bool *up, size_t *max_payload);

/* ------------------------------------------------------------------ counts */

typedef struct bp_agent_stats {
    uint64_t created;      /**< bundles made by bp_agent_send */
    uint64_t received;     /**< bundles taken from convergence layers */
    uint64_t malformed;    /**< received bundles that did not decode, or had
                                creation time 0 and no bundle age block */
    uint64_t duplicates;   /**< received bundles already seen (dropped) */
    uint64_t forwarded;    /**< transmissions a CLA reported sent */
    uint64_t reforwarded;  /**< transmissions that failed or were cancelled */
    uint64_t delivered;    /**< bundles queued for an endpoint */
    uint64_t taken;        /**< bundles read with bp_agent_recv */
    uint64_t discarded;    /**< for an endpoint with rule x and no reader */
    uint64_t expired;      /**< lifetime ended */
    uint64_t hop_exceeded; /**< hop limit exceeded */
    uint64_t deleted;      /**< all deletions (expired, hop limit, blocks, ...) */
    uint64_t fragmented;   /**< bundles split */
    uint64_t fragments_made;
    uint64_t reassembled; /**< ADUs put back together */
    uint64_t reports_sent, reports_received;
    uint64_t reports_suppressed; /**< asked for while reports are off */
    uint64_t store_errors;       /**< transactions that failed (bundle refused) */
    uint64_t stored;             /**< bundles in the store now */
    uint64_t stored_bytes;       /**< their encoded bytes */
    uint64_t limbo;              /**< bundles with no route now */
    uint64_t queued;             /**< bundles on outduct queues now */
    uint64_t in_flight;          /**< bundles handed to CLAs, fate pending */
    uint64_t drops_told;         /**< deletions of this node's bundles told to the
                                      host (bp_agent_host.dropped) */
    uint64_t file_refs;          /**< bundles in the store now whose payload is a
                                      reference to a file (bp_agent_send_file) */
    uint64_t file_refs_lost;     /**< of those, deleted: the file changed or went */
} bp_agent_stats;

/** The agent's counters. */
TERN_API void bp_agent_stats_get(const bp_agent *a, bp_agent_stats *st);

#ifdef __cplusplus
}
#endif
#endif
