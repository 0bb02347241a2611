/* The module machine (ams_mod.h) against the real configuration server and
 * registrar machines, all on one virtual clock and a simulated network that
 * delivers every datagram (or drops the ones a test says): modules find
 * their registrar, register, learn each other's declarations, survive a
 * registrar restart with their numbers and subscriptions, and hear of a
 * dead module. */
#include <stdlib.h>
#include <string.h>

#include "ams_mod.h"
#include "tern_test.h"

#define VENTURE 7
#define CS_PORT 2357
static const ams_timing TIMING = {.heartbeat_ms = 100, .dead_ms = 400, .census_ms = 300};

struct dgram {
    mams_ep from, to;
    size_t len;
    uint8_t *buf;
};

struct node;

struct world {
    uint64_t now;
    struct dgram *q;
    size_t n, cap;
    ams_cs *cs;
    ams_reg *reg[4];
    uint16_t reg_port[4], reg_unit[4];
    struct node *mods[8];
    int nmods;
    int cut_port; /* datagrams to or from this port are lost (0: none) */
};

/* Each sender's context: the world and its own endpoint. */
struct node {
    struct world *w;
    mams_ep self;
    ams_mod *m;
    int joined, left, subs_added, subs_removed, self_in, refused;
};

static mams_ep ep(uint16_t port)
{
    return (mams_ep){0x7f000001, port};
}

static void push(struct world *w, const mams_ep *from, const mams_ep *to,
                 const uint8_t *b, size_t len)
{
    if (w->n == w->cap) {
        w->cap = w->cap ? 2 * w->cap : 256;
        w->q = realloc(w->q, w->cap * sizeof *w->q);
    }
    struct dgram *d = &w->q[w->n++];
    d->from = *from;
    d->to = *to;
    d->len = len;
    d->buf = malloc(len);
    memcpy(d->buf, b, len);
}

struct sender {
    struct world *w;
    mams_ep self;
};

static void send_from(void *ctx, const mams_ep *to, const uint8_t *b, size_t len)
{
    struct sender *s = ctx;
    push(s->w, &s->self, to, b, len);
}

static void mod_send(void *ctx, const mams_ep *to, const uint8_t *b, size_t len)
{
    struct node *nd = ctx;
    push(nd->w, &nd->self, to, b, len);
}

static void mod_note(void *ctx, int note, const mams_module *m, const mams_rule *r,
                     int reason)
{
    struct node *nd = ctx;
    (void)m;
    (void)r;
    (void)reason;
    nd->joined += note == AMS_NOTE_JOINED;
    nd->left += note == AMS_NOTE_LEFT;
    nd->subs_added += note == AMS_NOTE_SUB_ADDED;
    nd->subs_removed += note == AMS_NOTE_SUB_REMOVED;
    nd->self_in += note == AMS_NOTE_SELF_IN;
    nd->refused += note == AMS_NOTE_REFUSED;
}

static struct sender cs_sender, reg_sender[4];

static void deliver(struct world *w)
{
    for (int rounds = 0; rounds < 64 && w->n; rounds++) {
        struct dgram *q = w->q;
        size_t n = w->n;
        w->q = NULL;
        w->n = w->cap = 0;
        for (size_t i = 0; i < n; i++) {
            struct dgram *d = &q[i];
            int cut =
                w->cut_port && (d->to.port == w->cut_port || d->from.port == w->cut_port);
            if (!cut && d->to.port == CS_PORT && w->cs)
                ams_cs_input(w->cs, w->now, &d->from, d->buf, d->len);
            for (int k = 0; k < 4 && !cut; k++)
                if (w->reg[k] && d->to.port == w->reg_port[k])
                    ams_reg_input(w->reg[k], w->now, &d->from, d->buf, d->len);
            for (int k = 0; k < w->nmods && !cut; k++)
                if (w->mods[k]->m && d->to.port == w->mods[k]->self.port)
                    ams_mod_input(w->mods[k]->m, w->now, &d->from, d->buf, d->len);
            free(d->buf);
        }
        free(q);
    }
}

/* Runs the world for ms milliseconds in 10 ms steps. */
static void run(struct world *w, uint64_t ms)
{
    for (uint64_t end = w->now + ms; w->now < end; w->now += 10) {
        if (w->cs)
            ams_cs_tick(w->cs, w->now);
        for (int k = 0; k < 4; k++)
            if (w->reg[k])
                ams_reg_tick(w->reg[k], w->now);
        for (int k = 0; k < w->nmods; k++)
            if (w->mods[k]->m)
                ams_mod_tick(w->mods[k]->m, w->now);
        deliver(w);
    }
}

static void start_reg(struct world *w, int k, uint16_t unit, uint16_t port, uint32_t inc)
{
    static mams_ep cs;
    cs = ep(CS_PORT);
    reg_sender[k] = (struct sender){w, ep(port)};
    ams_reg_cfg cfg = {.venture = VENTURE,
                       .unit = unit,
                       .self = ep(port),
                       .cs = &cs,
                       .n_cs = 1,
                       .timing = TIMING,
                       .incarnation = inc};
    w->reg_port[k] = port;
    w->reg_unit[k] = unit;
    CHECK_OK(ams_reg_new(&cfg, send_from, &reg_sender[k], w->now, &w->reg[k]));
}

static struct node *add_mod(struct world *w, uint16_t unit, uint8_t role, uint16_t port)
{
    struct node *nd = calloc(1, sizeof *nd);
    nd->w = w;
    nd->self = ep(port);
    mams_ep cs = ep(CS_PORT);
    ams_mod_cfg cfg = {.venture = VENTURE,
                       .unit = unit,
                       .role = role,
                       .mams = ep(port),
                       .udp = ep((uint16_t)(port + 1)),
                       .tcp = ep((uint16_t)(port + 2)),
                       .cs = &cs,
                       .n_cs = 1,
                       .incarnation = 1000u + port,
                       .retry_ms = 50};
    CHECK_OK(ams_mod_new(&cfg, mod_send, mod_note, nd, w->now, &nd->m));
    w->mods[w->nmods++] = nd;
    return nd;
}

static void world_init(struct world *w)
{
    memset(w, 0, sizeof *w);
    w->now = 1000000;
    cs_sender = (struct sender){w, ep(CS_PORT)};
    CHECK_OK(ams_cs_new(send_from, &cs_sender, w->now, &w->cs));
}

static void world_free(struct world *w)
{
    for (int k = 0; k < w->nmods; k++) {
        ams_mod_free(w->mods[k]->m, w->now);
        free(w->mods[k]);
    }
    for (int k = 0; k < 4; k++)
        ams_reg_free(w->reg[k]);
    ams_cs_free(w->cs);
    for (size_t i = 0; i < w->n; i++)
        free(w->q[i].buf);
    free(w->q);
}

/* Does a's view hold b with n_subs subscriptions? */
static int sees(struct node *a, struct node *b, int n_subs)
{
    const mams_module *r =
        ams_mod_find(a->m, (uint16_t)1, (uint8_t)ams_mod_nbr(b->m)); /* unit 1 */
    return r && r->n_subs == n_subs;
}

TEST(modules_register_and_learn_each_others_declarations)
{
    struct world w;
    world_init(&w);
    start_reg(&w, 0, 1, 3000, 1);
    struct node *a = add_mod(&w, 1, 2, 4000), *b = add_mod(&w, 1, 3, 4010);
    run(&w, 1000); /* the census (300 ms) ends, both register */
    CHECK_EQ_INT(ams_mod_state(a->m), AMS_MOD_IN);
    CHECK_EQ_INT(ams_mod_state(b->m), AMS_MOD_IN);
    CHECK(ams_mod_nbr(a->m) != ams_mod_nbr(b->m));
    CHECK_EQ_INT(a->self_in, 1);
    mams_rule sub = {.subject = 3, .priority = 8};
    CHECK_OK(ams_mod_declare(a->m, w.now, &sub, 1, NULL, 0));
    run(&w, 300);
    CHECK(sees(b, a, 1));
    CHECK(sees(a, a, 1)); /* its own record is in its view */
    CHECK_EQ_INT(b->subs_added, 1);
    CHECK_EQ_INT(b->joined, 1);
    /* withdraw it: b hears the subscription end */
    CHECK_OK(ams_mod_declare(a->m, w.now, NULL, 0, NULL, 0));
    run(&w, 300);
    CHECK(sees(b, a, 0));
    CHECK_EQ_INT(b->subs_removed, 1);
    ams_mod_stats st;
    ams_mod_stats_get(b->m, &st);
    CHECK_EQ_U64(st.known, 2);
    world_free(&w);
}

TEST(a_restarted_registrar_gets_its_modules_back_with_their_numbers)
{
    struct world w;
    world_init(&w);
    start_reg(&w, 0, 1, 3000, 1);
    struct node *a = add_mod(&w, 1, 2, 4000), *b = add_mod(&w, 1, 3, 4010);
    run(&w, 1000);
    mams_rule sub = {.subject = 5, .priority = 4};
    CHECK_OK(ams_mod_declare(b->m, w.now, &sub, 1, NULL, 0));
    run(&w, 300);
    int na = ams_mod_nbr(a->m), nb = ams_mod_nbr(b->m);
    /* kill -9: the registrar's state is gone; it comes back at once */
    ams_reg_free(w.reg[0]);
    w.reg[0] = NULL;
    run(&w, 150);
    start_reg(&w, 0, 1, 3000, 2);
    struct node *c = add_mod(&w, 1, 4, 4020); /* a newcomer during the census */
    run(&w, 1500);
    CHECK_EQ_INT(ams_mod_state(a->m), AMS_MOD_IN);
    CHECK_EQ_INT(ams_mod_nbr(a->m), na);
    CHECK_EQ_INT(ams_mod_nbr(b->m), nb);
    CHECK_EQ_INT(ams_mod_state(c->m), AMS_MOD_IN);
    CHECK(ams_mod_nbr(c->m) != na && ams_mod_nbr(c->m) != nb);
    /* b's subscription survived: the registrar has it again, so c learns it */
    CHECK(sees(c, b, 1));
    CHECK(sees(a, b, 1));
    CHECK_EQ_INT(a->left, 0); /* nobody was taken for gone */
    ams_reg_stats rs;
    ams_reg_stats_get(w.reg[0], &rs);
    CHECK_EQ_U64(rs.reconnected, 2);
    CHECK_EQ_U64(rs.modules, 3);
    world_free(&w);
}

TEST(a_silent_module_is_declared_dead_and_its_subscriptions_withdrawn)
{
    struct world w;
    world_init(&w);
    start_reg(&w, 0, 1, 3000, 1);
    struct node *a = add_mod(&w, 1, 2, 4000), *b = add_mod(&w, 1, 3, 4010);
    run(&w, 1000);
    mams_rule sub = {.subject = 1, .priority = 8};
    CHECK_OK(ams_mod_declare(a->m, w.now, &sub, 1, NULL, 0));
    run(&w, 300);
    CHECK(sees(b, a, 1));
    int na = ams_mod_nbr(a->m);
    w.cut_port = 4000; /* a falls silent */
    run(&w, 600);      /* dead bound 400 ms, and a heartbeat */
    CHECK(ams_mod_find(b->m, 1, (uint8_t)na) == NULL);
    CHECK_EQ_INT(b->left, 1);
    CHECK_EQ_INT(b->subs_removed, 1);
    /* a comes back: it is told it is dead and registers anew */
    w.cut_port = 0;
    run(&w, 1500);
    CHECK_EQ_INT(ams_mod_state(a->m), AMS_MOD_IN);
    CHECK(sees(b, a, 1)); /* its declaration went with it */
    world_free(&w);
}

TEST(modules_of_two_cells_see_each_other)
{
    struct world w;
    world_init(&w);
    start_reg(&w, 0, 1, 3000, 1);
    start_reg(&w, 1, 2, 3100, 1);
    struct node *a = add_mod(&w, 1, 2, 4000), *b = add_mod(&w, 2, 3, 4010);
    run(&w, 1500);
    mams_rule inv = {.subject = 9, .priority = 8};
    CHECK_OK(ams_mod_declare(b->m, w.now, NULL, 0, &inv, 1));
    run(&w, 500);
    const mams_module *r = ams_mod_find(a->m, 2, (uint8_t)ams_mod_nbr(b->m));
    CHECK(r != NULL);
    CHECK_EQ_INT(r ? r->n_invs : -1, 1);
    CHECK(ams_mod_find(b->m, 1, (uint8_t)ams_mod_nbr(a->m)) != NULL);
    world_free(&w);
}

TEST(an_unknown_role_is_refused_for_good)
{
    struct world w;
    world_init(&w);
    static uint8_t roles[256];
    roles[2] = 1;
    mams_ep cs = ep(CS_PORT);
    reg_sender[0] = (struct sender){&w, ep(3000)};
    ams_reg_cfg cfg = {.venture = VENTURE,
                       .unit = 1,
                       .self = ep(3000),
                       .cs = &cs,
                       .n_cs = 1,
                       .timing = TIMING,
                       .incarnation = 1,
                       .roles = roles};
    w.reg_port[0] = 3000;
    CHECK_OK(ams_reg_new(&cfg, send_from, &reg_sender[0], w.now, &w.reg[0]));
    struct node *a = add_mod(&w, 1, 9, 4000);
    run(&w, 1000);
    CHECK_EQ_INT(ams_mod_state(a->m), AMS_MOD_REFUSED);
    CHECK_EQ_INT(a->refused, 1);
    world_free(&w);
}

TEST(a_registrar_that_never_returns_sends_the_module_back_to_the_server)
{
    struct world w;
    world_init(&w);
    start_reg(&w, 0, 1, 3000, 1);
    struct node *a = add_mod(&w, 1, 2, 4000);
    run(&w, 1000);
    CHECK_EQ_INT(ams_mod_state(a->m), AMS_MOD_IN);
    ams_reg_free(w.reg[0]);
    w.reg[0] = NULL;
    run(&w, 600);
    /* back to the server, which may still name the dead one for a while */
    CHECK(ams_mod_state(a->m) != AMS_MOD_IN);
    ams_mod_stats st;
    ams_mod_stats_get(a->m, &st);
    CHECK_EQ_U64(st.registrar_lost, 1);
    /* a registrar on another port: the server names it, the module reconnects */
    run(&w, 1200); /* the server forgets the old one (3 heartbeats) */
    start_reg(&w, 0, 1, 3050, 9);
    int nbr = ams_mod_nbr(a->m);
    run(&w, 1500);
    CHECK_EQ_INT(ams_mod_state(a->m), AMS_MOD_IN);
    CHECK_EQ_INT(ams_mod_nbr(a->m), nbr);
    world_free(&w);
}
