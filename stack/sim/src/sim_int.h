/* tern_sim internals: nodes, link directions, outages. */
#ifndef TERN_SIM_INT_H
#define TERN_SIM_INT_H

#include <stdint.h>

#include "bp_ltp.h"
#include "bp_plan.h"
#include "tern_sim.h"

/* One segment on a link direction, from hand-over to arrival. */
struct sim_seg {
    struct sim_seg *next;
    uint64_t depart_ns; /* transmission ends (the engine is told if notify) */
    uint64_t arrive_ns; /* reaches the far engine */
    uint8_t lost;       /* drawn lost, or sent into an outage */
    uint8_t notify;     /* needs ltp_engine_sent() at departure */
    size_t len;
    uint8_t data[];
};

/* One direction of a link. Segments wait in one FIFO; departures and
 * arrivals are both in FIFO order, so one timer, armed for the earlier of
 * the next departure to announce and the head's arrival, drives it all. */
struct sim_dir {
    tern_sim *sim;
    struct sim_node *from, *to;
    uint64_t delay_ns, rate;
    double loss;
    uint64_t busy_until;  /* the transmitter is free from then */
    uint64_t last_arrive; /* arrivals never overtake */
    struct sim_seg *head, *tail;
    struct sim_seg *txp; /* first segment whose departure is still to announce */
    tern_timer timer;
    int timer_armed;
    uint64_t timer_at;
    unsigned down;      /* outages holding this direction down */
    unsigned loud_down; /* those of them that tell the ends */
    int told_up;        /* what the sending end was last told */
    tern_sim_link_stats st;
    /* TERN_SIM_CONTACTS: the contacts from -> to of the sending node's plan */
    int follow;
    int cup;                /* in a contact, as the ends were told */
    int named;              /* some contact names this direction */
    uint64_t base_delay_ns; /* the link's own delay (no range) */
    struct sim_win {
        uint64_t from_ms, until_ms;
    } * wins;
    size_t nwins;
    tern_timer ctimer;
    tern_sim_contact_stats cst;
};

struct sim_peer {
    uint64_t peer;
    struct sim_dir *dir;
};

/* A delivery taken from the agent but not yet handed out (buffer too small). */
struct sim_stash {
    struct sim_stash *next;
    char eid[BP_EID_TEXT_MAX];
    bp_delivery d;
};

struct sim_node {
    tern_sim *sim;
    uint64_t number;
    bool started; /* bp_agent_resume ran (at the first tern_sim_run) */
    sdr *store;
    tern_log *lg;
    bp_plan *plan;
    ltp_engine *eng;
    bp_agent *agent;
    bp_ltp_cla *cla;
    struct sim_peer *peers; /* sorted by peer number */
    size_t npeers, cappeers;
    size_t last_peer; /* lookup cache */
    bp_cgr *cgr;      /* Contact Graph Routing, if on */
    tern_sim_ltp_fn hook;
    void *hook_ctx;
    struct sim_stash *stash;
    uint64_t deliveries, red_parts, red_bytes;
};

struct sim_outage {
    struct sim_outage *next;
    tern_sim *sim;
    tern_timer timer;
    struct sim_dir *dir[2];
    uint64_t until_ns;
    unsigned flags;
    int started;
};

struct tern_sim {
    tern_clock *clk;
    tern_loop *loop;
    uint64_t rng[4];
    uint64_t start_dtn_ms, heap_bytes;
    char *log_dir;
    int log_level;
    struct sim_node **nodes; /* sorted by node number */
    size_t nnodes, capnodes;
    size_t added; /* nodes ever added (default rc names) */
    struct sim_dir **dirs;
    size_t ndirs, capdirs;
    struct sim_outage *outages;
    uint64_t deliveries;
    uint64_t stop_at; /* tern_sim_run's delivery target, 0: none */
    int closing;      /* being freed: links take no more segments */
    int cgr;          /* nodes added get Contact Graph Routing */
};

struct sim_node *sim__node(const tern_sim *s, uint64_t number);
struct sim_dir *sim__dir(const struct sim_node *n, uint64_t peer);
void sim__delivered(struct sim_node *n);
double sim__unit(tern_sim *s);

/* link.c */
int sim__link_send(void *ctx, uint64_t peer, const uint8_t *seg, size_t len);
void sim__dir_free(struct sim_dir *d);
void sim__dir_contacts(struct sim_dir *d);
int sim__dir_in_contact(const struct sim_dir *d, uint64_t dtn_ms);
void sim__dir_tell(struct sim_dir *d);

/* node.c */
int sim__node_new(tern_sim *s, const char *name, const char *text, char *err,
                  size_t errlen, struct sim_node **out);
void sim__node_free(struct sim_node *n);
void sim__node_link_state(struct sim_node *n, uint64_t peer, int up);
void sim__node_span_owlt(struct sim_node *n, uint64_t peer, uint64_t delay_ms);
int sim__node_set_cgr(struct sim_node *n, int on);

#endif
