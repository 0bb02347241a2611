/* Contact Graph Routing: routes worked out by hand for small contact plans,
 * then the engine attached to an agent on a virtual clock (contact-driven
 * transmission through a fake convergence layer).
 *
 * Times in the plans are "+N" seconds from T0; routes are checked as node
 * sequences and arrival times in ms after T0. A bundle's projected arrival
 * over a hop: its first byte leaves at max(when it reached the hop's from
 * node, contact start + bytes booked ahead / rate), its last byte size/rate
 * later, and it is all at the to node one light time after that.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bp_agent.h"
#include "bp_cgr.h"
#include "bp_plan.h"
#include "tern/clock.h"
#include "tern/rc.h"
#include "tern_test.h"

#define T0 849320526000ULL
#define S  1000ULL /* ms per second */

static void plan_apply(bp_plan *p, const char *text, uint64_t now)
{
    tern_rc *rc;
    CHECK_OK(tern_rc_parse(&rc, "test.rc", text, strlen(text), "ionadmin"));
    CHECK_EQ_INT(tern_rc_error_count(rc), 0);
    for (size_t i = 0; i < tern_rc_count(rc); i++) {
        char msg[512];
        int r = bp_ionadmin_apply(p, tern_rc_at(rc, i), now, msg, sizeof msg);
        CHECK_MSG(r >= 0, "ionadmin: %s", msg);
    }
    tern_rc_free(rc);
}

static bp_plan *mkplan(const char *text)
{
    bp_plan *p;
    CHECK_OK(bp_plan_new(&p));
    plan_apply(p, text, T0);
    return p;
}

static bp_cgr *mkcgr(const bp_plan *p, uint64_t self)
{
    bp_cgr *c;
    CHECK_OK(bp_cgr_new(p, self, NULL, NULL, &c));
    return c;
}

/* The route's nodes after this one, as "2,3,4". */
static const char *path(const bp_cgr_route *r)
{
    static char buf[256];
    size_t n = 0;
    buf[0] = '\0';
    for (unsigned h = 0; h < r->nhops; h++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%" PRIu64, h ? "," : "",
                              r->hops[h].to_node);
    return buf;
}

static bp_cgr_bundle bundle(uint64_t dest, uint64_t size, int prio, uint64_t expire)
{
    return (bp_cgr_bundle){
        .dest = dest, .size = size, .expire_ms = expire, .priority = prio};
}

/* Finds a route for b at now, expects it, and books it. */
static void route_book(bp_cgr *c, uint64_t now, bp_cgr_bundle b, const char *want_path,
                       uint64_t want_arrival_after_t0)
{
    bp_cgr_route r;
    CHECK_OK(bp_cgr_find(c, now, &b, &r));
    CHECK_EQ_STR(path(&r), want_path);
    CHECK_EQ_U64(r.arrival_ms - T0, want_arrival_after_t0);
    CHECK_OK(bp_cgr_book(c, &r, b.size, b.priority));
}

/* ------------------------------------------------------------ pure routing */

/* Node 1 reaches 4 directly, but only from +100 s; over 2 and 3 it can
 * leave now.
 *   direct:   leaves at 100 s, light time 1 s      -> best case 101 s (1 hop)
 *   1->2->3->4: 1->2 at 0 s (+1 s) = 1 s; 2->3 at 1 s (+2 s) = 3 s;
 *             3->4 opens at 10 s (+1 s)            -> best case 11 s (3 hops)
 * Earliest arrival wins: the list is [2,3,4 @ 11 s, 4 @ 101 s] (all three
 * contacts of the first route end at 100 s; its first contact is the
 * limiting one and is suppressed for the second search, which leaves only
 * the direct contact).
 * A 1000-byte bundle (rate 1000 B/s: one second per hop) on the first route:
 *   1->2 first byte 0 s, last 1 s, at 2 at 2 s; 2->3 2 s..3 s, at 3 at 5 s;
 *   3->4 waits for 10 s, last byte 11 s, at 4 at 12 s.                    */
static const char *plan_hops = "a contact +100 +200 1 4 1000\n"
                               "a contact +0 +100 1 2 1000\n"
                               "a contact +0 +100 2 3 1000\n"
                               "a contact +10 +100 3 4 1000\n"
                               "a range +0 +1000 1 4 1\n"
                               "a range +0 +1000 1 2 1\n"
                               "a range +0 +1000 2 3 2\n"
                               "a range +0 +1000 3 4 1\n";

TEST(earliest_arrival_beats_fewest_hops)
{
    bp_plan *p = mkplan(plan_hops);
    bp_cgr *c = mkcgr(p, 1);
    bp_cgr_route list[8];
    CHECK_EQ_U64(bp_cgr_routes(c, T0, 4, list, 8), 2);
    CHECK_EQ_STR(path(&list[0]), "2,3,4");
    CHECK_EQ_U64(list[0].arrival_ms - T0, 11 * S);
    CHECK_EQ_U64(list[0].to_ms - T0, 100 * S);
    CHECK_EQ_U64(list[0].hops[1].owlt_ms, 2000);
    CHECK_EQ_STR(path(&list[1]), "4");
    CHECK_EQ_U64(list[1].arrival_ms - T0, 101 * S);

    bp_cgr_route r;
    bp_cgr_bundle b = bundle(4, 1000, BP_PRIO_STANDARD, UINT64_MAX);
    CHECK_OK(bp_cgr_find(c, T0, &b, &r));
    CHECK_EQ_STR(path(&r), "2,3,4");
    CHECK_EQ_U64(r.next_hop, 2);
    CHECK_EQ_U64(r.arrival_ms - T0, 12 * S);
    /* for node 3 itself the middle of the same route is best */
    b.dest = 3;
    CHECK_OK(bp_cgr_find(c, T0, &b, &r));
    CHECK_EQ_STR(path(&r), "2,3");
    CHECK_EQ_U64(r.arrival_ms - T0, 5 * S);
    /* this node and unknown nodes have no route */
    b.dest = 1;
    CHECK_RC(bp_cgr_find(c, T0, &b, &r), TERN_ENOTFOUND);
    b.dest = 77;
    CHECK_RC(bp_cgr_find(c, T0, &b, &r), TERN_ENOTFOUND);
    bp_cgr_free(c);
    bp_plan_free(p);
}

/* Light time counts. 1 reaches 3 directly at once, but 600 s away (a range
 * given only from 3 to 1: ranges hold both ways unless the other direction
 * has its own); over 2 the light times are 1 s each (1->2 from a range
 * written 2 1; 2->3 from its own range, the 50 s range 3 2 only covers the
 * other direction).
 *   direct: 0 s + 600 s = 600 s;  over 2: 0 + 1 = 1 s, 1 + 1 = 2 s.
 * A contact without any range (1->4) is not a hop (light time unknown, as
 * ION), nor is the loopback contact 1->1. */
TEST(light_time_counts_and_ranges)
{
    bp_plan *p = mkplan("a contact +0 +1000 1 3 1000\n"
                        "a contact +0 +1000 1 2 1000\n"
                        "a contact +0 +1000 2 3 1000\n"
                        "a contact +0 +1000 1 4 1000\n"
                        "a contact +0 +1000 1 1 1000\n"
                        "a range +0 +1000 3 1 600\n"
                        "a range +0 +1000 2 1 1\n"
                        "a range +0 +1000 2 3 1\n"
                        "a range +0 +1000 3 2 50\n"
                        "a range +0 +1000 1 1 1\n");
    bp_cgr *c = mkcgr(p, 1);
    bp_cgr_stats st;
    bp_cgr_stats_get(c, &st);
    CHECK_EQ_U64(st.contacts, 3);
    CHECK_EQ_U64(st.no_range, 1);
    bp_cgr_route list[8];
    CHECK_EQ_U64(bp_cgr_routes(c, T0, 3, list, 8), 2);
    CHECK_EQ_STR(path(&list[0]), "2,3");
    CHECK_EQ_U64(list[0].arrival_ms - T0, 2 * S);
    CHECK_EQ_U64(list[0].hops[0].owlt_ms, 1000);
    CHECK_EQ_U64(list[0].hops[1].owlt_ms, 1000);
    CHECK_EQ_STR(path(&list[1]), "3");
    CHECK_EQ_U64(list[1].arrival_ms - T0, 600 * S);
    bp_cgr_route r;
    bp_cgr_bundle b = bundle(4, 10, BP_PRIO_STANDARD, UINT64_MAX);
    CHECK_RC(bp_cgr_find(c, T0, &b, &r), TERN_ENOTFOUND);
    /* the contact listing shows it anyway, not routable */
    bp_cgr_contact_info ci[8];
    size_t n = bp_cgr_local_contacts(c, T0, ci, 8);
    CHECK_EQ_U64(n, 4);
    int unroutable = 0;
    for (size_t i = 0; i < n; i++)
        unroutable += !ci[i].routable;
    CHECK_EQ_INT(unroutable, 2); /* 1->4 and the loopback */
    bp_cgr_free(c);
    bp_plan_free(p);
}

/* Volume. Contact A, 1->2 from 0 s to 10 s at 1000 B/s, holds 10,000 bytes;
 * contact B, 1->2 from 100 s to 200 s, 100,000 bytes; light time 1 s.
 * Bundles of 2000 bytes (2 s each) booked one after another at T0:
 *   k = 0..4 on A: first byte at 2k s (the k bundles booked ahead), last at
 *     2k + 2 s, arrival 2k + 3 s;
 *   k = 5: A is full (10,000 booked), the next route (A suppressed) is B:
 *     first byte 100 s, arrival 103 s, and each later one 2 s later — the
 *     bundles wait for B;
 *   after 5 + 50 bundles both are full: no capacity (TERN_EFULL), although
 *     a route exists in time. A bundle expiring at 50 s once A is full: A
 *     would bring it in time but is booked full, B has room but is too late:
 *     it waits (TERN_EFULL), it is not deleted. */
TEST(volume_exhausted_next_route_or_wait)
{
    bp_plan *p = mkplan("a contact +0 +10 1 2 1000\n"
                        "a contact +100 +200 1 2 1000\n"
                        "a range +0 +1000 1 2 1\n");
    bp_cgr *c = mkcgr(p, 1);
    for (uint64_t k = 0; k < 5; k++)
        route_book(c, T0, bundle(2, 2000, BP_PRIO_STANDARD, UINT64_MAX), "2",
                   (2 * k + 3) * S);
    bp_cgr_route r;
    bp_cgr_bundle late = bundle(2, 2000, BP_PRIO_STANDARD, T0 + 50 * S);
    CHECK_RC(bp_cgr_find(c, T0, &late, &r), TERN_EFULL);
    for (uint64_t k = 0; k < 50; k++) {
        CHECK_OK(bp_cgr_find(c, T0, &(bp_cgr_bundle){2, 2000, UINT64_MAX, 1, 0}, &r));
        CHECK_EQ_U64(r.hops[0].from_ms - T0, 100 * S);
        CHECK_EQ_U64(r.arrival_ms - T0, (100 + 2 * k + 3) * S);
        CHECK_OK(bp_cgr_book(c, &r, 2000, BP_PRIO_STANDARD));
    }
    bp_cgr_bundle more = bundle(2, 2000, BP_PRIO_STANDARD, UINT64_MAX);
    CHECK_RC(bp_cgr_find(c, T0, &more, &r), TERN_EFULL);
    /* a smaller bundle does not fit either: each contact is booked to the byte */
    more.size = 1;
    CHECK_RC(bp_cgr_find(c, T0, &more, &r), TERN_EFULL);
    bp_cgr_contact_info ci[4];
    CHECK_EQ_U64(bp_cgr_local_contacts(c, T0, ci, 4), 2);
    CHECK_EQ_U64(ci[0].capacity, 10000);
    CHECK_EQ_U64(ci[0].booked[BP_PRIO_STANDARD], 10000);
    CHECK_EQ_U64(ci[1].booked[BP_PRIO_STANDARD], 100000);
    bp_cgr_free(c);
    bp_plan_free(p);
}

/* Expiry. Two routes to 4: over 2, best case 2 s (1->2 0..5 s at 100 B/s,
 * light time 1 s, at 2 at 1 s; 2->4 0..100 s at 1000 B/s, 1 s), and over 3,
 * best case 62 s (1->3 and 3->4 open at 60 s, 1 s each). A 1000-byte bundle
 * does not fit 1->2 (500 bytes in all): only the second route can carry it:
 * 1->3 60..61 s, at 3 at 62 s; 3->4 62..63 s, at 4 at 64 s.
 *   expires at 100 s: over 3, arriving at 64 s;
 *   expires at 63 s: its only route would arrive after it: none (-ETIME);
 *   a 100-byte bundle expiring at 30 s fits the first route: 1->2 0..1 s,
 *   at 2 at 2 s; 2->4 2..2.1 s, at 4 at 3.1 s;
 *   the same expiring at 2 s: too late even there. */
TEST(expiry_excludes_routes)
{
    bp_plan *p = mkplan("a contact +0 +5 1 2 100\n"
                        "a contact +0 +100 2 4 1000\n"
                        "a contact +60 +100 1 3 1000\n"
                        "a contact +60 +100 3 4 1000\n"
                        "a range +0 +1000 1 2 1\n"
                        "a range +0 +1000 2 4 1\n"
                        "a range +0 +1000 1 3 1\n"
                        "a range +0 +1000 3 4 1\n");
    bp_cgr *c = mkcgr(p, 1);
    bp_cgr_route r;
    bp_cgr_bundle b = bundle(4, 1000, BP_PRIO_STANDARD, T0 + 100 * S);
    CHECK_OK(bp_cgr_find(c, T0, &b, &r));
    CHECK_EQ_STR(path(&r), "3,4");
    CHECK_EQ_U64(r.arrival_ms - T0, 64 * S);
    b.expire_ms = T0 + 63 * S;
    CHECK_RC(bp_cgr_find(c, T0, &b, &r), -ETIME);
    b = bundle(4, 100, BP_PRIO_STANDARD, T0 + 30 * S);
    CHECK_OK(bp_cgr_find(c, T0, &b, &r));
    CHECK_EQ_STR(path(&r), "2,4");
    CHECK_EQ_U64(r.arrival_ms - T0, 3100);
    b.expire_ms = T0 + 2 * S;
    CHECK_RC(bp_cgr_find(c, T0, &b, &r), -ETIME);
    bp_cgr_free(c);
    bp_plan_free(p);
}

/* Plan changes and contacts ending. Routes to 3: over 2 (contacts end at
 * 50 s; best case 2 s) and direct 1->3 (0..500 s, light time 10 s).
 *   at T0: over 2, arriving at 2 s (best case);
 *   at 60 s the contacts of that route have ended: the list is computed
 *     again (a new list) and only the direct route remains: 60 + 10 = 70 s;
 *   after "d contact +0 1 3" and bp_cgr_plan_changed, at 60 s: no route;
 *   volume booked on contacts that stay survives the rebuild. */
TEST(plan_change_and_contact_end_invalidate)
{
    bp_plan *p = mkplan("a contact +0 +50 1 2 1000\n"
                        "a contact +0 +50 2 3 1000\n"
                        "a contact +0 +500 1 3 1000\n"
                        "a contact +600 +700 1 2 1000\n"
                        "a range +0 +1000 1 2 1\n"
                        "a range +0 +1000 2 3 1\n"
                        "a range +0 +1000 1 3 10\n");
    bp_cgr *c = mkcgr(p, 1);
    bp_cgr_route r;
    bp_cgr_bundle b = bundle(3, 0, BP_PRIO_STANDARD, UINT64_MAX);
    CHECK_OK(bp_cgr_find(c, T0, &b, &r));
    CHECK_EQ_STR(path(&r), "2,3");
    CHECK_EQ_U64(r.arrival_ms - T0, 2 * S);
    bp_cgr_stats st;
    bp_cgr_stats_get(c, &st);
    CHECK_EQ_U64(st.lists, 1);
    CHECK_OK(bp_cgr_find(c, T0 + 10 * S, &b, &r)); /* cached */
    bp_cgr_stats_get(c, &st);
    CHECK_EQ_U64(st.lists, 1);
    CHECK_OK(bp_cgr_find(c, T0 + 60 * S, &b, &r));
    CHECK_EQ_STR(path(&r), "3");
    CHECK_EQ_U64(r.arrival_ms - T0, 70 * S);
    bp_cgr_stats_get(c, &st);
    CHECK_EQ_U64(st.lists, 2);
    /* book on the later 1->2 contact, then change the plan */
    bp_cgr_bundle to2 = bundle(2, 5000, BP_PRIO_BULK, UINT64_MAX);
    CHECK_OK(bp_cgr_find(c, T0 + 60 * S, &to2, &r));
    CHECK_EQ_U64(r.hops[0].from_ms - T0, 600 * S);
    CHECK_OK(bp_cgr_book(c, &r, 5000, BP_PRIO_BULK));
    plan_apply(p, "d contact +0 1 3\n", T0);
    /* until told, the engine still answers from the graph it has */
    CHECK_OK(bp_cgr_find(c, T0 + 60 * S, &b, &r));
    CHECK_OK(bp_cgr_plan_changed(c));
    CHECK_RC(bp_cgr_find(c, T0 + 60 * S, &b, &r), TERN_ENOTFOUND);
    bp_cgr_contact_info ci[4];
    CHECK_EQ_U64(bp_cgr_local_contacts(c, T0 + 60 * S, ci, 4), 1);
    CHECK_EQ_U64(ci[0].contact.from_ms - T0, 600 * S);
    CHECK_EQ_U64(ci[0].booked[BP_PRIO_BULK], 5000);
    /* and a contact added brings the route back */
    plan_apply(p, "a contact +650 +700 2 3 1000\n", T0);
    CHECK_OK(bp_cgr_plan_changed(c));
    CHECK_OK(bp_cgr_find(c, T0 + 60 * S, &b, &r));
    CHECK_EQ_STR(path(&r), "2,3");
    CHECK_EQ_U64(r.arrival_ms - T0, 651 * S); /* 600 + 1 at 2, waits for 650, + 1 */
    bp_cgr_free(c);
    bp_plan_free(p);
}

/* Priorities. Contact A (1->2, 0..10 s, 1000 B/s, 10,000 bytes) and B
 * (100..200 s); light time 1 s; 2000-byte bundles. A class sees as free the
 * capacity minus what it and higher classes booked, and waits only for
 * their bytes:
 *   five bulk bundles book A full (arrivals 3, 5, 7, 9, 11 s); a sixth bulk
 *     one takes B: 100 + 2 + 1 = 103 s;
 *   an expedited one still gets A, and first (nothing expedited ahead):
 *     0..2 s, arrival 3 s;
 *   a standard one: A minus standard and expedited bookings (2000) has room;
 *     behind the expedited one: 2..4 s, arrival 5 s;
 *   three more expedited: behind the expedited 2000, 4000, 6000 bytes only
 *     (the standard one does not delay them): 5, 7, 9 s;
 *   now expedited 8000 + standard 2000 fill A for standard: the next
 *     standard one goes to B, and the bulk bundle booked there does not
 *     delay it: 100..102 s, 103 s;
 *   expedited still has 2000 bytes of A: 8..10 s, 11 s; then A is full for
 *     expedited too: B, 103 s (nothing expedited booked there). */
TEST(priority_books_first)
{
    bp_plan *p = mkplan("a contact +0 +10 1 2 1000\n"
                        "a contact +100 +200 1 2 1000\n"
                        "a range +0 +1000 1 2 1\n");
    bp_cgr *c = mkcgr(p, 1);
    for (uint64_t k = 0; k < 5; k++)
        route_book(c, T0, bundle(2, 2000, BP_PRIO_BULK, UINT64_MAX), "2",
                   (2 * k + 3) * S);
    bp_cgr_route r;
    bp_cgr_bundle bulk = bundle(2, 2000, BP_PRIO_BULK, UINT64_MAX);
    CHECK_OK(bp_cgr_find(c, T0, &bulk, &r));
    CHECK_EQ_U64(r.hops[0].from_ms - T0, 100 * S);
    CHECK_EQ_U64(r.arrival_ms - T0, 103 * S);
    CHECK_OK(bp_cgr_book(c, &r, 2000, BP_PRIO_BULK));
    route_book(c, T0, bundle(2, 2000, BP_PRIO_EXPEDITED, UINT64_MAX), "2", 3 * S);
    route_book(c, T0, bundle(2, 2000, BP_PRIO_STANDARD, UINT64_MAX), "2", 5 * S);
    for (uint64_t k = 0; k < 3; k++)
        route_book(c, T0, bundle(2, 2000, BP_PRIO_EXPEDITED, UINT64_MAX), "2",
                   (2 * k + 5) * S);
    bp_cgr_bundle std = bundle(2, 2000, BP_PRIO_STANDARD, UINT64_MAX);
    CHECK_OK(bp_cgr_find(c, T0, &std, &r));
    CHECK_EQ_U64(r.hops[0].from_ms - T0, 100 * S);
    CHECK_EQ_U64(r.arrival_ms - T0, 103 * S);
    route_book(c, T0, bundle(2, 2000, BP_PRIO_EXPEDITED, UINT64_MAX), "2", 11 * S);
    bp_cgr_bundle ex = bundle(2, 2000, BP_PRIO_EXPEDITED, UINT64_MAX);
    CHECK_OK(bp_cgr_find(c, T0, &ex, &r));
    CHECK_EQ_U64(r.hops[0].from_ms - T0, 100 * S);
    CHECK_EQ_U64(r.arrival_ms - T0, 103 * S);
    CHECK_RC(bp_cgr_find(c, T0, &(bp_cgr_bundle){2, 1, UINT64_MAX, 3, 0}, &r), -EINVAL);
    bp_cgr_free(c);
    bp_plan_free(p);
}

/* A big plan: every route found is a real chain of contacts, times move
 * forward, and the list is ranked by best-case arrival. */
TEST(random_plans_consistent)
{
    uint64_t seed = tt_seed();
    bp_plan *p;
    CHECK_OK(bp_plan_new(&p));
    char line[160];
    size_t len = 0, cap = 1 << 20;
    char *text = malloc(cap);
    text[0] = '\0';
    for (int i = 0; i < 600; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        unsigned a = 1 + (unsigned)(seed >> 33) % 30, b = 1 + (unsigned)(seed >> 45) % 30;
        if (a == b)
            continue;
        unsigned start = (unsigned)(seed >> 20) % 5000,
                 dur = 10 + (unsigned)(seed >> 8) % 600;
        len += (size_t)snprintf(line, sizeof line, "a contact +%u +%u %u %u %u\n", start,
                                start + dur, a, b, 1000 + (unsigned)(seed >> 50) % 9000);
        strcat(text, line);
    }
    for (unsigned a = 1; a <= 30; a++)
        for (unsigned b = a + 1; b <= 30; b++) {
            snprintf(line, sizeof line, "a range +0 +100000 %u %u %u\n", a, b,
                     (a * b) % 7);
            strcat(text, line);
        }
    CHECK(len < cap);
    plan_apply(p, text, T0);
    free(text);
    bp_cgr *c = mkcgr(p, 1);
    int found = 0;
    for (uint64_t d = 2; d <= 30; d++) {
        bp_cgr_route list[8];
        size_t n = bp_cgr_routes(c, T0, d, list, 8);
        for (size_t i = 0; i < n && i < 8; i++) {
            const bp_cgr_route *r = &list[i];
            found++;
            CHECK(i == 0 || r->arrival_ms >= list[i - 1].arrival_ms);
            CHECK_EQ_U64(r->hops[0].from_node, 1);
            CHECK_EQ_U64(r->hops[r->nhops - 1].to_node, d);
            uint64_t t = T0;
            for (unsigned h = 0; h < r->nhops; h++) {
                const bp_cgr_hop *x = &r->hops[h];
                CHECK(h == 0 || x->from_node == r->hops[h - 1].to_node);
                CHECK(x->until_ms > t);
                t = (t > x->from_ms ? t : x->from_ms) + x->owlt_ms;
            }
            CHECK_EQ_U64(t, r->arrival_ms);
        }
    }
    CHECK(found > 20);
    bp_cgr_free(c);
    bp_plan_free(p);
}

/* ----------------------------------------- attached to an agent: a fake CLA */

typedef struct tx {
    uint64_t at_ms; /* after T0 */
    char duct[16];
    size_t len;
    int prio;
} tx;

typedef struct fake {
    tern_loop *loop;
    tx log[512];
    size_t n;
} fake;

typedef struct fduct {
    fake *f;
    bp_outduct *od;
    char name[16];
} fduct;

static int f_open(void *cla, bp_outduct *od, const char *name, const char *cmd,
                  void **duct)
{
    (void)cmd;
    fduct *d = calloc(1, sizeof *d);
    d->f = cla;
    d->od = od;
    snprintf(d->name, sizeof d->name, "%s", name);
    *duct = d;
    return 0;
}

static void f_close(void *cla, void *duct)
{
    (void)cla;
    free(duct);
}

static int f_send(void *cla, void *duct, const uint8_t *b, size_t len, uint64_t xmit)
{
    fake *f = cla;
    fduct *d = duct;
    CHECK(f->n < 512);
    tx *t = &f->log[f->n++];
    t->at_ms = tern_clock_dtn_ms(tern_loop_clock(f->loop)) - T0;
    snprintf(t->duct, sizeof t->duct, "%s", d->name);
    t->len = len;
    /* the class travels in ION's block 193: find its class byte */
    t->prio = BP_PRIO_STANDARD;
    bp_bundle bb;
    if (bp_bundle_decode(b, len, &bb, NULL, NULL) == 0)
        for (size_t i = 0; i + 1 < bb.n_blocks; i++)
            if (bb.blocks[i].type == 193 && bb.blocks[i].data_len >= 3)
                t->prio = bb.blocks[i].data[2];
    bp_outduct_result(d->od, xmit, BP_XMIT_OK);
    return 0;
}

static const bp_cla_ops fake_ops = {
    .protocol = "fake", .outduct_open = f_open, .outduct_close = f_close, .send = f_send};

typedef struct world {
    tern_clock *clk;
    tern_loop *loop;
    sdr *store;
    bp_agent *a;
    fake f;
    bp_plan *plan;
    bp_cgr *c;
} world;

static void world_open(world *w, const char *plan_text, const char *const *peers)
{
    memset(w, 0, sizeof *w);
    CHECK_OK(tern_clock_virtual_new(T0, &w->clk));
    CHECK_OK(tern_loop_new(w->clk, &w->loop));
    sdr_profile p = {.name = "cgr", .heap_size = 16u << 20, .mode = SDR_MEMORY};
    char why[256] = "";
    CHECK_MSG(sdr_open(&p, &w->store, why, sizeof why) == 0, "sdr_open: %s", why);
    bp_agent_cfg cfg = {.node = 1, .store = w->store, .status_reports = true};
    CHECK_OK(bp_agent_new(w->loop, &cfg, NULL, NULL, &w->a));
    w->f.loop = w->loop;
    CHECK_OK(bp_cla_register(w->a, &fake_ops, &w->f));
    for (const char *const *pp = peers; *pp; pp++) {
        CHECK_OK(bp_outduct_add(w->a, "fake", *pp, "", 0));
        CHECK_OK(bp_egress_plan_add(w->a, strtoull(*pp, NULL, 10), "fake", *pp));
    }
    bp_eid e;
    CHECK_OK(bp_eid_parse("ipn:1.2", &e, NULL));
    CHECK_OK(bp_endpoint_add(w->a, &e, BP_RECV_QUEUE));
    w->plan = mkplan(plan_text);
    w->c = mkcgr(w->plan, 1);
    CHECK_OK(bp_cgr_attach(w->c, w->a));
}

static void world_close(world *w)
{
    bp_cgr_free(w->c);
    bp_agent_free(w->a);
    bp_plan_free(w->plan);
    CHECK_OK(sdr_close(w->store));
    CHECK_OK(tern_loop_close(w->loop));
    tern_clock_free(w->clk);
}

static void run_to(world *w, uint64_t ms_after_t0)
{
    CHECK_OK(tern_loop_run_until(w->loop, ms_after_t0 * TERN_NS_PER_MS));
}

static int send_b_rc(world *w, const char *dest, size_t len, int prio,
                     uint64_t lifetime_ms, uint64_t flags)
{
    static uint8_t payload[65536];
    bp_eid s, d;
    CHECK_OK(bp_eid_parse("ipn:1.1", &s, NULL));
    CHECK_OK(bp_eid_parse(dest, &d, NULL));
    bp_send_opts o;
    bp_send_opts_init(&o);
    o.priority = prio;
    if (lifetime_ms)
        o.lifetime_ms = lifetime_ms;
    o.flags = flags;
    bp_eid rpt;
    CHECK_OK(bp_eid_parse("ipn:1.2", &rpt, NULL));
    o.report_to = &rpt;
    return bp_agent_send(w->a, &s, &d, &o, payload, len, NULL);
}

static void send_b(world *w, const char *dest, size_t len, int prio, uint64_t lifetime_ms,
                   uint64_t flags)
{
    CHECK_OK(send_b_rc(w, dest, len, prio, lifetime_ms, flags));
}

/* Bundles wait outside contacts and go at the contact's rate during them.
 * Contacts 1->2: A 10..20 s and B 40..50 s at 1000 B/s (10,000 bytes
 * each), light time 1 s. 12 bundles of about 1,600 bytes at T0: the
 * engine books six on A (6 x 1.6 kB fits in 10 s) and the rest on B.
 * Nothing leaves before 10 s or between 20 s and 40 s; during a contact
 * each bundle leaves when the bytes before it are paid for at 1000 B/s. */
TEST(contact_driven_transmission)
{
    world w;
    world_open(&w,
               "a contact +10 +20 1 2 1000\n"
               "a contact +40 +50 1 2 1000\n"
               "a range +0 +100 1 2 1\n",
               (const char *const[]){"2", NULL});
    for (int i = 0; i < 12; i++)
        send_b(&w, "ipn:2.1", 1500, BP_PRIO_STANDARD, 0, 0);
    run_to(&w, 9999);
    CHECK_EQ_U64(w.f.n, 0);
    CHECK_EQ_INT(bp_outduct_gate(bp_outduct_find(w.a, "fake", "2"), NULL),
                 BP_GATE_CLOSED);
    run_to(&w, 100 * S);
    CHECK_EQ_U64(w.f.n, 12);
    size_t in_a = 0;
    uint64_t bytes_a = 0, paid = 0;
    for (size_t i = 0; i < w.f.n; i++) {
        tx *t = &w.f.log[i];
        bool a = t->at_ms >= 10 * S && t->at_ms < 20 * S;
        bool b = t->at_ms >= 40 * S && t->at_ms < 50 * S;
        CHECK_MSG(a || b, "bundle %zu sent at %" PRIu64 " ms, outside the contacts", i,
                  t->at_ms);
        if (a) {
            in_a++;
            bytes_a += t->len;
        }
        /* the token bucket: bundle i of a contact leaves once the bytes
         * before it have been sent at 1000 B/s */
        if (i && (a == (w.f.log[i - 1].at_ms < 20 * S))) {
            paid += w.f.log[i - 1].len;
            uint64_t start = a ? 10 * S : 40 * S;
            CHECK_MSG(t->at_ms + 1 >= start + paid,
                      "bundle %zu at %" PRIu64 " ms too early", i, t->at_ms);
            CHECK_MSG(t->at_ms <= start + paid + 1,
                      "bundle %zu at %" PRIu64 " ms too late", i, t->at_ms);
        } else {
            paid = 0;
        }
    }
    CHECK_EQ_U64(in_a, 6);
    CHECK(bytes_a <= 10000);
    bp_cgr_stats st;
    bp_cgr_stats_get(w.c, &st);
    /* the six booked on B were queued on the duct when A ended: routed again
     * (to B again) */
    CHECK_EQ_U64(st.reforwarded, 6);
    CHECK_EQ_U64(st.routed, 12 + 6);
    CHECK_EQ_U64(st.gate_opened, 2);
    CHECK_EQ_U64(st.gate_closed, 2);
    char buf[2048];
    CHECK(bp_cgr_status(w.c, T0 + 45 * S, buf, sizeof buf) > 0);
    CHECK_MSG(strstr(buf, "[now] ->2") != NULL, "status: %s", buf);
    world_close(&w);
}

/* Higher priority first, and re-forwarding at a contact's end. A (10..20 s)
 * and B (40..50 s), 1000 B/s; bundles of 900 bytes of payload, 973 on the
 * wire (0.973 s each). Ten bulk bundles at T0 book A (under 10,000 bytes).
 * At 12 s eight expedited ones arrive: what bulk booked does not count
 * against them. The duct has sent three bulk bundles by then (10.0, 11.0,
 * 11.9 s) and is busy until 12.9 s; after that expedited bundles take
 * 0.97 s each, so seven fit before A ends (the seventh ends at 19.7 s) and
 * the engine books the eighth on B. They go first: 12.9 s, 13.9 s, ...
 * 18.8 s. Nothing else fits before 20 s (a bundle must end before the
 * contact does), so at A's end the eighth expedited bundle and the seven
 * unsent bulk ones are routed again, all onto B, where the expedited one
 * leaves first. */
TEST(priority_and_reforward_at_contact_end)
{
    world w;
    world_open(&w,
               "a contact +10 +20 1 2 1000\n"
               "a contact +40 +50 1 2 1000\n"
               "a range +0 +100 1 2 1\n",
               (const char *const[]){"2", NULL});
    for (int i = 0; i < 10; i++)
        send_b(&w, "ipn:2.1", 900, BP_PRIO_BULK, 0, 0);
    run_to(&w, 12 * S);
    for (int i = 0; i < 8; i++)
        send_b(&w, "ipn:2.1", 900, BP_PRIO_EXPEDITED, 0, 0);
    run_to(&w, 100 * S);
    CHECK_EQ_U64(w.f.n, 18);
    if (getenv("CGR_DEBUG"))
        for (size_t i = 0; i < w.f.n; i++)
            fprintf(stderr, "%zu: %" PRIu64 " ms prio %d len %zu\n", i, w.f.log[i].at_ms,
                    w.f.log[i].prio, w.f.log[i].len);
    size_t exp_a = 0, bulk_b = 0;
    for (size_t i = 0; i < w.f.n; i++) {
        tx *t = &w.f.log[i];
        bool a = t->at_ms >= 10 * S && t->at_ms < 20 * S;
        bool b = t->at_ms >= 40 * S && t->at_ms < 50 * S;
        CHECK_MSG(a || b, "bundle sent at %" PRIu64 " ms, outside the contacts",
                  t->at_ms);
        exp_a += a && t->prio == BP_PRIO_EXPEDITED;
        bulk_b += b && t->prio == BP_PRIO_BULK;
    }
    CHECK_EQ_U64(exp_a, 7);
    CHECK_EQ_U64(bulk_b, 7);
    CHECK_EQ_U64(w.f.log[10].at_ms, 40 * S);
    CHECK_EQ_INT(w.f.log[10].prio, BP_PRIO_EXPEDITED);
    for (size_t i = 3; i < 10; i++)
        CHECK_EQ_INT(w.f.log[i].prio, BP_PRIO_EXPEDITED);
    bp_cgr_stats st;
    bp_cgr_stats_get(w.c, &st);
    CHECK_EQ_U64(st.reforwarded, 8);
    CHECK_EQ_U64(st.routed, 18 + 8);
    world_close(&w);
}

/* A bundle no route can bring before it expires is not sent: deleted with
 * a deletion report, reason 6 (no known route to destination from here).
 * The only contact opens at 10 s; the bundle lives 5 s. */
TEST(too_late_deleted_with_report)
{
    world w;
    world_open(&w,
               "a contact +10 +20 1 2 1000\n"
               "a range +0 +100 1 2 1\n",
               (const char *const[]){"2", NULL});
    /* the sending application hears it from its send, not only from the
     * report (issue 18: nothing accepted and then dropped unheard) */
    CHECK_RC(send_b_rc(&w, "ipn:2.1", 100, BP_PRIO_STANDARD, 5000, BP_FLAG_RPT_DELETION),
             TERN_ENOROUTE);
    bp_agent_stats as;
    bp_agent_stats_get(w.a, &as);
    CHECK_EQ_U64(as.deleted, 1);
    CHECK_EQ_U64(as.expired, 0);
    run_to(&w, 30 * S);
    CHECK_EQ_U64(w.f.n, 0);
    bp_eid e;
    CHECK_OK(bp_eid_parse("ipn:1.2", &e, NULL));
    bp_delivery d;
    CHECK_OK(bp_agent_recv(w.a, &e, &d));
    bp_admin_record r;
    CHECK_OK(bp_admin_decode(d.payload, d.len, &r, NULL));
    CHECK(r.sr.deleted.asserted);
    CHECK_EQ_U64(r.sr.reason, BP_REASON_NO_ROUTE);
    bp_delivery_release(&d);
    bp_cgr_stats st;
    bp_cgr_stats_get(w.c, &st);
    CHECK_EQ_U64(st.too_late, 1);
    world_close(&w);
}

/* In-time contacts booked full while a too-late one has room: limbo, not
 * deletion. A (10..20 s, 10,000 bytes) is filled by five bundles of about
 * 1,970 bytes; a 900-byte bundle living 50 s does not fit what is left, and
 * B (100..200 s) has room but would bring it after it expires. It waits in
 * limbo; at A's end nothing can bring it in time any more: then it is
 * deleted (reason 6). */
TEST(full_in_time_route_waits_in_limbo)
{
    world w;
    world_open(&w,
               "a contact +10 +20 1 2 1000\n"
               "a contact +100 +200 1 2 1000\n"
               "a range +0 +1000 1 2 1\n",
               (const char *const[]){"2", NULL});
    for (int i = 0; i < 5; i++)
        send_b(&w, "ipn:2.1", 1900, BP_PRIO_STANDARD, 0, 0);
    bp_cgr_contact_info ci[4];
    CHECK_EQ_U64(bp_cgr_local_contacts(w.c, T0, ci, 4), 2);
    uint64_t filled = ci[0].booked[BP_PRIO_STANDARD];
    CHECK_MSG(filled > 9000 && filled + 900 > 10000, "A booked %" PRIu64, filled);
    CHECK_EQ_U64(ci[1].booked[BP_PRIO_STANDARD], 0);
    send_b(&w, "ipn:2.1", 900, BP_PRIO_STANDARD, 50 * S, BP_FLAG_RPT_DELETION);
    bp_agent_stats as;
    bp_agent_stats_get(w.a, &as);
    CHECK_EQ_U64(as.deleted, 0);
    CHECK_EQ_U64(as.limbo, 1);
    bp_cgr_stats st;
    bp_cgr_stats_get(w.c, &st);
    CHECK_EQ_U64(st.too_late, 0);
    CHECK_EQ_U64(st.no_capacity, 1);
    run_to(&w, 19 * S);
    bp_agent_stats_get(w.a, &as);
    CHECK_EQ_U64(as.deleted, 0);
    CHECK_EQ_U64(as.limbo, 1);
    CHECK_EQ_U64(w.f.n, 5);
    run_to(&w, 30 * S);
    bp_agent_stats_get(w.a, &as);
    CHECK_EQ_U64(as.limbo, 0);
    CHECK_EQ_U64(as.deleted, 1);
    bp_cgr_stats_get(w.c, &st);
    CHECK_EQ_U64(st.too_late, 1);
    CHECK_EQ_U64(w.f.n, 5);
    world_close(&w);
}

/* A bundle deleted while queued gives its booking back at once. A (10..20 s
 * at 1000 B/s); the link is down, so bundles stay queued. X (about 1,960
 * bytes, living 15 s) and F (as long, living a day) book A; X expires at 15 s
 * on the queue: A's booked volume drops by X's length then, not only when A
 * ends. At 16 s a bundle Y of about 960 bytes living 50 s fits behind F:
 * 1,960 + 960 bytes take 2.9 s of the 4 s A has left. With X's stale booking
 * the 4.9 s it would need do not fit: Y would wait in limbo and die with A.
 * The link comes up at 16 s: F and Y leave during A. */
TEST(deleted_while_queued_releases_booking)
{
    world w;
    world_open(&w,
               "a contact +10 +20 1 2 1000\n"
               "a contact +100 +200 1 2 1000\n"
               "a range +0 +1000 1 2 1\n",
               (const char *const[]){"2", NULL});
    bp_outduct *od = bp_outduct_find(w.a, "fake", "2");
    bp_outduct_set_up(od, false);
    send_b(&w, "ipn:2.1", 1900, BP_PRIO_STANDARD, 15 * S, 0);
    bp_cgr_contact_info ci[4];
    CHECK_EQ_U64(bp_cgr_local_contacts(w.c, T0, ci, 4), 2);
    uint64_t x_len = ci[0].booked[BP_PRIO_STANDARD];
    CHECK(x_len > 1900 && x_len < 2100);
    send_b(&w, "ipn:2.1", 1900, BP_PRIO_STANDARD, 0, 0);
    CHECK_EQ_U64(bp_outduct_queued(od), 2);
    bp_cgr_local_contacts(w.c, T0, ci, 4);
    uint64_t both = ci[0].booked[BP_PRIO_STANDARD];
    CHECK(both > 2 * 1900);
    bp_cgr_stats st;
    bp_cgr_stats_get(w.c, &st);
    CHECK_EQ_U64(st.bookings_live, 2);
    run_to(&w, 16 * S);
    bp_agent_stats as;
    bp_agent_stats_get(w.a, &as);
    CHECK_EQ_U64(as.expired, 1);
    CHECK_EQ_U64(bp_outduct_queued(od), 1);
    bp_cgr_local_contacts(w.c, T0 + 16 * S, ci, 4);
    CHECK_EQ_U64(ci[0].booked[BP_PRIO_STANDARD], both - x_len);
    bp_cgr_stats_get(w.c, &st);
    CHECK_EQ_U64(st.bookings_live, 1);
    send_b(&w, "ipn:2.1", 900, BP_PRIO_STANDARD, 50 * S, 0);
    bp_agent_stats_get(w.a, &as);
    CHECK_EQ_U64(as.limbo, 0);
    CHECK_EQ_U64(bp_outduct_queued(od), 2);
    bp_cgr_stats_get(w.c, &st);
    CHECK_EQ_U64(st.no_capacity, 0);
    bp_outduct_set_up(od, true);
    run_to(&w, 30 * S);
    CHECK_EQ_U64(w.f.n, 2);
    for (size_t i = 0; i < w.f.n; i++)
        CHECK_MSG(w.f.log[i].at_ms >= 16 * S && w.f.log[i].at_ms < 20 * S,
                  "bundle %zu sent at %" PRIu64 " ms", i, w.f.log[i].at_ms);
    bp_agent_stats_get(w.a, &as);
    CHECK_EQ_U64(as.deleted, 1); /* X, expired */
    world_close(&w);
}

/* No dynamic route: static plans apply. Node 9 is in no contact: its
 * bundle goes by its egress plan at once (its duct is not gated: no contact
 * names it). Node 3 has no contact and no plan: limbo, until a contact and
 * a plan appear (a plan change, routed again, sent when the contact opens). */
TEST(static_fallback_and_plan_change)
{
    world w;
    world_open(&w,
               "a contact +10 +20 1 2 1000\n"
               "a range +0 +100 1 2 1\n",
               (const char *const[]){"2", "9", NULL});
    send_b(&w, "ipn:9.1", 100, BP_PRIO_STANDARD, 0, 0);
    send_b(&w, "ipn:3.1", 100, BP_PRIO_STANDARD, 0, 0);
    CHECK_EQ_U64(w.f.n, 1);
    CHECK_EQ_STR(w.f.log[0].duct, "9");
    CHECK_EQ_INT(bp_outduct_gate(bp_outduct_find(w.a, "fake", "9"), NULL), BP_GATE_NONE);
    bp_agent_stats as;
    bp_agent_stats_get(w.a, &as);
    CHECK_EQ_U64(as.limbo, 1);
    run_to(&w, 30 * S);
    CHECK_EQ_U64(w.f.n, 1);
    CHECK_OK(bp_outduct_add(w.a, "fake", "3", "", 0));
    CHECK_OK(bp_egress_plan_add(w.a, 3, "fake", "3"));
    /* the static plan now exists: bp_egress_plan_add routes limbo again, but
     * CGR still knows node 3 as no contact's node: by the static plan, an
     * ungated duct: out at once. */
    CHECK_EQ_U64(w.f.n, 2);
    CHECK_EQ_STR(w.f.log[1].duct, "3");
    /* now a contact to 3 in the future gates that duct */
    plan_apply(w.plan, "a contact +60 +70 1 3 500\na range +0 +100 1 3 2\n", T0);
    CHECK_OK(bp_cgr_plan_changed(w.c));
    CHECK_EQ_INT(bp_outduct_gate(bp_outduct_find(w.a, "fake", "3"), NULL),
                 BP_GATE_CLOSED);
    send_b(&w, "ipn:3.1", 100, BP_PRIO_STANDARD, 0, 0);
    run_to(&w, 59 * S);
    CHECK_EQ_U64(w.f.n, 2);
    run_to(&w, 61 * S);
    CHECK_EQ_U64(w.f.n, 3);
    CHECK_EQ_U64(w.f.log[2].at_ms, 60 * S);
    /* detached: no gates, no router */
    bp_cgr_detach(w.c);
    CHECK_EQ_INT(bp_outduct_gate(bp_outduct_find(w.a, "fake", "2"), NULL), BP_GATE_NONE);
    world_close(&w);
}

/* tern status says why a contact of this node is not a hop: "(no range)"
 * only where no range covers it, not for a contact to this node itself
 * (loopback: what comes to it is delivered here) or one of rate 0. */
TEST(status_says_why_a_contact_is_not_a_hop)
{
    bp_plan *p = mkplan("a contact +0 +100 1 1 1000\n"
                        "a contact +0 +100 1 2 1000\n"
                        "a contact +0 +100 1 3 1000\n"
                        "a contact +0 +100 1 4 0\n"
                        "a range +0 +100 1 1 1\n"
                        "a range +0 +100 1 2 1\n"
                        "a range +0 +100 1 4 1\n");
    bp_cgr *c = mkcgr(p, 1);
    char buf[4096];
    CHECK(bp_cgr_status(c, T0 + 1 * S, buf, sizeof buf) > 0);
    const char *to1 = strstr(buf, "->1 "), *to2 = strstr(buf, "->2 "),
               *to3 = strstr(buf, "->3 "), *to4 = strstr(buf, "->4 ");
    CHECK_MSG(to1 && to2 && to3 && to4, "%s", buf);
    char one[256];
    snprintf(one, sizeof one, "%.*s", (int)strcspn(to1, ";"), to1);
    CHECK_MSG(strstr(one, "(this node: delivered here, not a hop)"), "%s", one);
    snprintf(one, sizeof one, "%.*s", (int)strcspn(to2, ";"), to2);
    CHECK_MSG(!strstr(one, "("), "%s", one);
    snprintf(one, sizeof one, "%.*s", (int)strcspn(to3, ";"), to3);
    CHECK_MSG(strstr(one, "(no range)"), "%s", one);
    snprintf(one, sizeof one, "%.*s", (int)strcspn(to4, ";"), to4);
    CHECK_MSG(strstr(one, "(rate 0)"), "%s", one);
    bp_cgr_free(c);
    bp_plan_free(p);
}
