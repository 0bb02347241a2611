/*
 * ams.h — libams, Tern's Asynchronous Message Service (CCSDS 735.1-B-1).
 *
 * ION's API under ION's names and meanings, so an ION AMS application
 * builds against Tern with a recompile: a module registers in a unit of a
 * venture in some role (ams_register), declares what it wants to hear
 * (ams_subscribe, ams_invite), publishes, sends privately, queries and
 * replies, announces, and takes events (ams_get_event). docs/ams.md says
 * how it works and where Tern differs from ION.
 *
 * Every call that returns int returns 0 (or a number it is documented to
 * return) on success and a negative Tern error code on failure: -EINVAL
 * (bad argument), TERN_ENOTFOUND (no such subject, role, unit, module,
 * venture), -EMSGSIZE (content above AMS_MAX_CONTENT), -EPERM (the MIB's
 * sender or receiver role lists do not allow it), -ENOTCONN (not registered,
 * or the registrar lost), TERN_ESYNTAX (MIB), -ETIMEDOUT, ... ION's callers
 * test for "< 0", which holds. tern_strerror() names the code and
 * ams_last_error() says, for the calling thread's last failed call, what
 * exactly was wrong ("subject 7 (video): role 3 (log) is not an authorised
 * sender").
 *
 * Thread safety: one module may be used from several threads (an event
 * manager thread beside the application's): publishing, sending and
 * declaring are safe from any thread; events are taken by one thread at a
 * time.
 */
#ifndef TERN_AMS_H
#define TERN_AMS_H

#include <stddef.h>

#include "tern/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The largest message content, as ION's MAX_AMS_CONTENT. */
#define MAX_AMS_CONTENT (65000)
#define AMS_MAX_CONTENT MAX_AMS_CONTENT

/* Domain wildcards, ION's values. */
#define THIS_CONTINUUM (-1)
#define ALL_CONTINUA   (0)
#define ANY_CONTINUUM  (0)
#define ALL_SUBJECTS   (0)
#define ANY_SUBJECT    (0)
#define ALL_ROLES      (0)
#define ANY_ROLE       (0)

typedef enum { AmsArrivalOrder = 0, AmsTransmissionOrder } AmsSequence;

/** Best effort messages go as UDP datagrams; assured ones over a TCP
 * connection to the receiving module (ordered, retransmitted, and a slow
 * receiver slows its senders). */
typedef enum { AmsBestEffort = 0, AmsAssured } AmsDiligence;

typedef struct amssapst *AmsModule;
typedef struct amsevtst *AmsEvent;

/* Event types (ams_get_event_type). */
#define AMS_MSG_EVT      1
#define TIMEOUT_EVT      2
#define NOTICE_EVT       3
#define USER_DEFINED_EVT 4
/** Tern: the module lost its registration for good (its registrar declared
 * it dead and it could not register again); it must unregister. */
#define CRASH_EVT 5

typedef enum {
    AmsRegistrationState,
    AmsInvitationState,
    AmsSubscriptionState
} AmsStateType;

typedef enum { AmsStateBegins = 1, AmsStateEnds } AmsChangeType;

typedef enum { AmsMsgUnary = 0, AmsMsgQuery, AmsMsgReply, AmsMsgNone } AmsMsgType;

/* term values for ams_query and ams_get_event */
#define AMS_POLL     (0)  /**< return at once */
#define AMS_BLOCKING (-1) /**< wait for ever */

/* Event handlers for ams_set_event_mgr, ION's signatures. */
typedef void (*AmsMsgHandler)(AmsModule module, void *userData, AmsEvent *eventRef,
                              int continuumNbr, int unitNbr, int moduleNbr,
                              int subjectNbr, int contentLength, char *content,
                              int context, AmsMsgType msgType, int priority,
                              unsigned char flowLabel);
typedef void (*AmsRegistrationHandler)(AmsModule module, void *userData,
                                       AmsEvent *eventRef, int unitNbr, int moduleNbr,
                                       int roleNbr);
typedef void (*AmsUnregistrationHandler)(AmsModule module, void *userData,
                                         AmsEvent *eventRef, int unitNbr, int moduleNbr);
typedef void (*AmsInvitationHandler)(AmsModule module, void *userData, AmsEvent *eventRef,
                                     int unitNbr, int moduleNbr, int domainRoleNbr,
                                     int domainContinuumNbr, int domainUnitNbr,
                                     int subjectNbr, int priority,
                                     unsigned char flowLabel, AmsSequence sequence,
                                     AmsDiligence diligence);
typedef void (*AmsDisinvitationHandler)(AmsModule module, void *userData,
                                        AmsEvent *eventRef, int unitNbr, int moduleNbr,
                                        int domainRoleNbr, int domainContinuumNbr,
                                        int domainUnitNbr, int subjectNbr);
typedef void (*AmsSubscriptionHandler)(AmsModule module, void *userData,
                                       AmsEvent *eventRef, int unitNbr, int moduleNbr,
                                       int domainRoleNbr, int domainContinuumNbr,
                                       int domainUnitNbr, int subjectNbr, int priority,
                                       unsigned char flowLabel, AmsSequence sequence,
                                       AmsDiligence diligence);
typedef void (*AmsUnsubscriptionHandler)(AmsModule module, void *userData,
                                         AmsEvent *eventRef, int unitNbr, int moduleNbr,
                                         int domainRoleNbr, int domainContinuumNbr,
                                         int domainUnitNbr, int subjectNbr);
typedef void (*AmsUserEventHandler)(AmsModule module, void *userData, AmsEvent *eventRef,
                                    int code, int dataLength, char *data);
typedef void (*AmsMgtErrHandler)(void *userData, AmsEvent *eventRef);

typedef struct {
    AmsMsgHandler msgHandler;
    void *msgHandlerUserData;
    AmsRegistrationHandler registrationHandler;
    void *registrationHandlerUserData;
    AmsUnregistrationHandler unregistrationHandler;
    void *unregistrationHandlerUserData;
    AmsInvitationHandler invitationHandler;
    void *invitationHandlerUserData;
    AmsDisinvitationHandler disinvitationHandler;
    void *disinvitationHandlerUserData;
    AmsSubscriptionHandler subscriptionHandler;
    void *subscriptionHandlerUserData;
    AmsUnsubscriptionHandler unsubscriptionHandler;
    void *unsubscriptionHandlerUserData;
    AmsUserEventHandler userEventHandler;
    void *userEventHandlerUserData;
    AmsMgtErrHandler errHandler;
    void *errHandlerUserData;
} AmsEventMgt;

/* ------------------------------------------------------------ registration */

/** Registers a module in unit unitName ("" is the venture's root unit) of the
 * venture (applicationName, authorityName), in role roleName, and returns it
 * in *module once the registrar has admitted it. mibSource names the MIB file
 * (XML or amsrc, told apart by content); "" means amsmib.xml in the current
 * directory, else mib.amsrc, as ION; the environment's TERN_AMS_MIB
 * overrides "". tsorder (ION: transport service order) may be NULL or a
 * list like "udp,tcp". Waits up to TERN_AMS_REGISTER_MS (default 10 s) for a
 * configuration server and registrar. */
TERN_API int ams_register(const char *mibSource, const char *tsorder,
                          const char *applicationName, const char *authorityName,
                          const char *unitName, const char *roleName, AmsModule *module);

/** Sends what waits to be sent, tells the registrar the module is stopping
 * (I_am_stopping), closes it and frees everything, the events still queued
 * included; events the application has taken stay valid until recycled. */
TERN_API int ams_unregister(AmsModule module);

/** The module's number in its unit (1..255). */
TERN_API int ams_get_module_nbr(AmsModule module);
/** The module's unit number. */
TERN_API int ams_get_unit_nbr(AmsModule module);
/** The module's venture number. */
TERN_API int ams_get_venture_nbr(AmsModule module);
/** The module's role number. */
TERN_API int ams_get_role_nbr(AmsModule module);
/** The local continuum's number: of the MIB of the last module registered in
 * this process (ION's form takes no argument). -1 if none. */
TERN_API int ams_get_continuum_nbr(void);
/** 1 if the venture's RAMS network is a tree, 0 if a mesh. */
TERN_API int ams_rams_net_is_tree(AmsModule module);
/** 1 if the MIB says continuumNbr's message space is a neighbour. */
TERN_API int ams_msgspace_is_neighbor(AmsModule module, int continuumNbr);
/** The role name of module moduleNbr of unit unitNbr as this module knows it,
 * or NULL. */
TERN_API const char *ams_get_role_name(AmsModule module, int unitNbr, int moduleNbr);
/** 1 if unit argUnitNbr is refUnitNbr or one of its subunits. */
TERN_API int ams_subunit_of(AmsModule module, int argUnitNbr, int refUnitNbr);

/* Lookups in the module's venture: a number, or a negative code. */
TERN_API int ams_lookup_unit_nbr(AmsModule module, const char *unitName);
TERN_API int ams_lookup_role_nbr(AmsModule module, const char *roleName);
TERN_API int ams_lookup_subject_nbr(AmsModule module, const char *subjectName);
TERN_API int ams_lookup_continuum_nbr(AmsModule module, const char *continuumName);
/* ... and their reverse forms: the name, or NULL. */
TERN_API const char *ams_lookup_unit_name(AmsModule module, int unitNbr);
TERN_API const char *ams_lookup_role_name(AmsModule module, int roleNbr);
TERN_API const char *ams_lookup_subject_name(AmsModule module, int subjectNbr);
TERN_API const char *ams_lookup_continuum_name(AmsModule module, int continuumNbr);

/* ------------------------------------------------------------ declarations */

/** Invites private messages and announcements on subjectNbr (ALL_SUBJECTS: 0)
 * from the domain roleNbr (0: any) / continuumNbr (0: all, THIS_CONTINUUM) /
 * unitNbr (and its subunits). priority (1..15; 0: 8) and flowLabel are the
 * defaults senders use for messages sent under it. */
TERN_API int ams_invite(AmsModule module, int roleNbr, int continuumNbr, int unitNbr,
                        int subjectNbr, int priority, unsigned char flowLabel,
                        AmsSequence sequence, AmsDiligence diligence);
/** Withdraws an invitation made with the same domain and subject. */
TERN_API int ams_disinvite(AmsModule module, int roleNbr, int continuumNbr, int unitNbr,
                           int subjectNbr);
/** Subscribes to messages published on subjectNbr (0: all) by modules in the
 * domain; the MIB's receiver role list of the subject must allow this
 * module's role (-EPERM otherwise). */
TERN_API int ams_subscribe(AmsModule module, int roleNbr, int continuumNbr, int unitNbr,
                           int subjectNbr, int priority, unsigned char flowLabel,
                           AmsSequence sequence, AmsDiligence diligence);
/** Withdraws a subscription made with the same domain and subject. */
TERN_API int ams_unsubscribe(AmsModule module, int roleNbr, int continuumNbr, int unitNbr,
                             int subjectNbr);

/* ------------------------------------------------------------ messages */

/** Publishes contentLength bytes on subjectNbr to every module whose
 * subscription's domain includes this module. priority 0 and flowLabel 0 take
 * each subscription's own. */
TERN_API int ams_publish(AmsModule module, int subjectNbr, int priority,
                         unsigned char flowLabel, int contentLength, const char *content,
                         int context);
/** Sends privately to module moduleNbr of unit unitNbr in continuumNbr
 * (THIS_CONTINUUM or the local one); it must have invited messages on the
 * subject from this module's domain (-EPERM otherwise). */
TERN_API int ams_send(AmsModule module, int continuumNbr, int unitNbr, int moduleNbr,
                      int subjectNbr, int priority, unsigned char flowLabel,
                      int contentLength, const char *content, int context);
/** Sends a query as ams_send does; with term != AMS_POLL waits up to term
 * microseconds (AMS_BLOCKING: for ever) for the reply and returns it in
 * *event (a TIMEOUT_EVT event if none came); other events that arrive
 * meanwhile are kept for ams_get_event. */
TERN_API int ams_query(AmsModule module, int continuumNbr, int unitNbr, int moduleNbr,
                       int subjectNbr, int priority, unsigned char flowLabel,
                       int contentLength, const char *content, int context, int term,
                       AmsEvent *event);
/** Replies to the query msg (an AMS_MSG_EVT): to its sender, with its
 * context. */
TERN_API int ams_reply(AmsModule module, AmsEvent msg, int subjectNbr, int priority,
                       unsigned char flowLabel, int contentLength, const char *content);
/** Sends a copy to every module of role roleNbr (0: all) in unitNbr (and
 * subunits) of continuumNbr that has invited messages on the subject from
 * this module's domain. */
TERN_API int ams_announce(AmsModule module, int roleNbr, int continuumNbr, int unitNbr,
                          int subjectNbr, int priority, unsigned char flowLabel,
                          int contentLength, const char *content, int context);

/* ------------------------------------------------------------ events */

/** Queues a USER_DEFINED_EVT carrying code and a copy of the data. */
TERN_API int ams_post_user_event(AmsModule module, int userEventCode,
                                 int userEventDataLength, const char *userEventData,
                                 int priority);
/** Takes the next event: AMS_POLL returns at once (0 and *event NULL if there
 * is none), AMS_BLOCKING waits for one, term > 0 waits up to term
 * microseconds (then a TIMEOUT_EVT event). */
TERN_API int ams_get_event(AmsModule module, int term, AmsEvent *event);
/** A descriptor that polls readable whenever ams_get_event(AMS_POLL) may
 * return an event, for applications with their own event loop. Owned by the
 * module. */
TERN_API int ams_get_fd(AmsModule module);
/** AMS_MSG_EVT, NOTICE_EVT, ... */
TERN_API int ams_get_event_type(AmsEvent event);
/** The parts of an AMS_MSG_EVT; content stays valid until the event is
 * recycled. NULL pointers are allowed for parts not wanted. */
TERN_API int ams_parse_msg(AmsEvent event, int *continuumNbr, int *unitNbr,
                           int *moduleNbr, int *subjectNbr, int *contentLength,
                           char **content, int *context, AmsMsgType *msgType,
                           int *priority, unsigned char *flowLabel);
/** The parts of a NOTICE_EVT: a module registered or left
 * (AmsRegistrationState: unitNbr, moduleNbr, roleNbr), or a module's
 * subscription or invitation began or ended (the rest). */
TERN_API int ams_parse_notice(AmsEvent event, AmsStateType *state, AmsChangeType *change,
                              int *unitNbr, int *moduleNbr, int *roleNbr,
                              int *domainContinuumNbr, int *domainUnitNbr,
                              int *subjectNbr, int *priority, unsigned char *flowLabel,
                              AmsSequence *sequence, AmsDiligence *diligence);
/** The parts of a USER_DEFINED_EVT. */
TERN_API int ams_parse_user_event(AmsEvent event, int *code, int *dataLength,
                                  char **data);
/** Gives an event back. */
TERN_API int ams_recycle_event(AmsEvent event);
/** Starts a thread that takes every event and calls the rules' handlers
 * (NULL handlers: the event is recycled). */
TERN_API int ams_set_event_mgr(AmsModule module, AmsEventMgt *rules);
/** Stops that thread (not from inside a handler). */
TERN_API void ams_remove_event_mgr(AmsModule module);

/* ------------------------------------------------------------ Tern */

/** What was wrong in the calling thread's last failed call ("" if nothing). */
TERN_API const char *ams_last_error(void);

/** Counters of one module. */
typedef struct ams_module_stats {
    uint64_t published, sent, received; /**< messages */
    uint64_t dropped_unsolicited;       /**< no subscription or invitation covers it */
    uint64_t dropped_unauthorised;      /**< sender's role not allowed by the MIB */
    uint64_t dropped_malformed;         /**< AAMS or MAMS that did not decode */
    uint64_t send_errors;               /**< transmissions the socket refused */
    uint64_t reconnects;                /**< times it re-joined a restarted registrar */
    uint64_t dropped_queue_full;        /**< events past the queue's bound (200,000) */
} ams_module_stats;

/** Copies the module's counters. */
TERN_API int ams_get_stats(AmsModule module, ams_module_stats *st);

/** Bounds the events a module holds for its application (by default
 * 200,000 and no byte bound): past either, best-effort messages are dropped
 * (counted in dropped_queue_full) and assured ones wait in their streams,
 * which slows their senders. A RAMS gateway bounds its memory so. Tern's. */
TERN_API int ams_set_queue_limit(AmsModule module, size_t max_events, size_t max_bytes);

/** A message event naming a sender (continuum, unit, module), a subject and
 * a context, as ams_reply needs one, for bindings that keep an event's parts
 * rather than the event; NULL without memory. Recycle it as any event. */
TERN_API AmsEvent ams_make_msg_event(int continuumNbr, int unitNbr, int moduleNbr,
                                     int subjectNbr, int context);

/** Bumped whenever a binding-visible type or meaning changes. */
#define AMS_ABI_VERSION 1
/** AMS_ABI_VERSION as libternams was built (bindings check it). */
TERN_API int tern_ams_abi_version(void);
/** sizeof of the named public struct ("ams_module_stats"), 0 if unknown. */
TERN_API size_t ams_struct_size(const char *name);

#ifdef __cplusplus
}
#endif
#endif
