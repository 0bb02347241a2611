"""Contact Graph Routing in tern_sim: bundles routed by the contact plan and
sent only during contacts, at the contacts' rates.

Every node carries the whole network's contact plan (as ION nodes do) and
routes by it (Sim(cgr=True)); links follow the plan (link(..., contacts=True)):
a direction x -> y is up exactly while a contact x -> y is in effect, its
delay the range's one-way light time. Links have no rate of their own: the
sending agent holds each outduct to its contact's rate. Contacts below are
written both ways (LTP's reports need the way back).

Projected arrival of a bundle of S bytes over a hop (what the routes below
are checked against): first byte at max(arrival at the hop's node, contact
start), last byte S / rate later, arrival one light time after that;
transmission times round up to whole ms.
"""
import pytest

from simhelp import Sim, decode_report, sha, sized_payload
from tern.sim import FLAG_RPT_DELETION, standard_rc
from tern import errors
from tern.errors import TernError

HOUR = 3600


def plan_text(links):
    """ionadmin lines for links: (a, b, [(from_s, until_s), ...], rate, owlt_s),
    contacts and a range both ways."""
    lines = []
    for a, b, windows, rate, owlt in links:
        for f, u in windows:
            lines.append(f"a contact +{f} +{u} {a} {b} {rate}")
            lines.append(f"a contact +{f} +{u} {b} {a} {rate}")
        lines.append(f"a range +0 +100000 {a} {b} {owlt}")
    return "\n".join(lines)


def build(sim, links, endpoints=(1, 2), **kw):
    """Nodes with an LTP span, outduct and egress plan per neighbour, the
    whole plan, and links that follow it."""
    plan = plan_text(links)
    nbrs = {}
    for a, b, *_ in links:
        nbrs.setdefault(a, set()).add(b)
        nbrs.setdefault(b, set()).add(a)
    for n in sorted(nbrs):
        sim.node(number=n, peers=sorted(nbrs[n]), extra_ionadmin=plan, endpoints=endpoints,
                 **kw)
    for a, b, *_ in links:
        sim.link(a, b, contacts=True)
    return sorted(nbrs)


def directions(links):
    return [(a, b) for a, b, *_ in links] + [(b, a) for a, b, *_ in links]


def link_bytes(sim, links):
    return {d: sim.link_stats(*d)["bytes_sent"] for d in directions(links)}


def deliver_all(sim, node, eid, want, until_ms):
    """Runs until `want` bundles were delivered to eid on node; returns
    {tag: (virtual ms it was taken, Delivery)} (taken as soon as delivered)."""
    got = {}
    while len(got) < want and sim.now < until_ms:
        sim.run(deliveries=1, until_ms=until_ms)
        for d in sim.recv_all(node, eid):
            tag = d.payload.split(b":", 1)[0].decode()
            assert tag not in got, f"bundle {tag} delivered twice"
            got[tag] = (sim.now, d)
    return got


# ---------------------------------------------------------------- the network
#
#   1 MOC (mission operations) -- 2 GS-A, 3 GS-B (ground stations, 1 s)
#   2, 3 -- 4 R1, 5 R2 (Mars orbiters), 6 MSR (areostationary relay): 240 s
#   4, 5, 6 -- 7 lander -- 8 rover (1 s)
#
# From 1 to 8 there is at any time one path at most, and it changes:
#   P1 0-1 h:   1-2-4-7-8    (GS-A sees R1, R1 sees the lander)
#   P2 1-2 h:   1-3-5-7-8    (GS-B sees R2, R2 sees the lander)
#   P3 2-3 h:   1-3-6-7-8    (GS-B sees the relay 6)
#   P4 3-4 h:   1-2-5-4-7-8  (GS-A sees R2, R2 relays to R1 by crosslink)
#   P5 4-5 h:   1-2-4 ... 7-8: GS-A sees R1 until 4h10, R1 sees the lander
#               only from 4h30: no path at any single instant; bundles wait
#               at R1 (store and forward through time).
# Mars-side contacts outlast the Earth-side ones by the light time (P4's end
# when the next Earth-side contact begins, so that P5 has no path).

DEEP, PROX, GROUND = 10_000, 100_000, 1_000_000  # bytes/s
NETWORK = [
    (1, 2, [(0, 20000)], GROUND, 1),
    (1, 3, [(0, 20000)], GROUND, 1),
    (2, 4, [(0, HOUR), (4 * HOUR, 4 * HOUR + 600)], DEEP, 240),
    (3, 5, [(HOUR, 2 * HOUR)], DEEP, 240),
    (3, 6, [(2 * HOUR, 3 * HOUR)], DEEP, 240),
    (2, 5, [(3 * HOUR, 4 * HOUR)], DEEP, 240),
    (5, 4, [(3 * HOUR, 4 * HOUR)], PROX, 1),
    (4, 7, [(0, HOUR + 300), (3 * HOUR, 4 * HOUR), (4 * HOUR + 1800, 4 * HOUR + 2400)],
     PROX, 1),
    (5, 7, [(HOUR, 2 * HOUR + 300)], PROX, 1),
    (6, 7, [(2 * HOUR, 3 * HOUR + 300)], PROX, 1),
    (7, 8, [(0, 20000)], PROX, 1),
]

SIZE = 2000  # payload bytes of the test bundles

# Hand-computed routes from 1 to 8 for a 2000-byte bundle (the route query
# counts the payload; 2000 bytes take 2 ms at GROUND, 200 ms at DEEP and
# 20 ms at PROX rate), at each phase's start:
#   P1 at 0 s: 1->2 0..0.002 s, at 2 at 1.002 s; 2->4 1.002..1.202, +240 ->
#       241.202; 4->7 ..241.222, +1 -> 242.222; 7->8 ..242.242, +1 -> 243.242 s
#   P2 at 3600 s: the same shape over 3, 5: 3600 + 243.242
#   P3 at 7200 s: over 3, 6: 7200 + 243.242
#   P4 at 10800 s: 1->2 at 10801.002; 2->5 ..10801.202 +240 -> 11041.202;
#       5->4 ..11041.222 +1 -> 11042.222; 4->7 -> 11043.242; 7->8 -> 11044.262 s
#   P5 at 14400 s: at 4 at 14641.202 (as P1); 4->7 waits for 16200:
#       16200..16200.02 +1 -> 16201.02; 7->8 -> 16202.04 s
PHASES = [
    # (start s, path after node 1, projected arrival ms, links carrying it)
    (0, [2, 4, 7, 8], 243_242, [(1, 2), (2, 4), (4, 7), (7, 8)]),
    (HOUR, [3, 5, 7, 8], HOUR * 1000 + 243_242, [(1, 3), (3, 5), (5, 7), (7, 8)]),
    (2 * HOUR, [3, 6, 7, 8], 2 * HOUR * 1000 + 243_242, [(1, 3), (3, 6), (6, 7), (7, 8)]),
    (3 * HOUR, [2, 5, 4, 7, 8], 11_044_262, [(1, 2), (2, 5), (5, 4), (4, 7), (7, 8)]),
    (4 * HOUR, [2, 4, 7, 8], 16_202_040, [(1, 2), (2, 4), (4, 7), (7, 8)]),
]


def test_path_changes_through_eight_nodes():
    with Sim(seed=81, heap_bytes=8 << 20, cgr=True) as sim:
        build(sim, NETWORK)
        lifetime = 2 * HOUR * 1000
        sent, expiry = {}, {}
        for p, (start, path, arrival, carriers) in enumerate(PHASES):
            end = PHASES[p + 1][0] if p + 1 < len(PHASES) else 5 * HOUR
            sim.run(until_ms=start * 1000)
            assert sim.now == start * 1000
            r = sim.cgr_route(1, 8, size=SIZE, lifetime_ms=lifetime)
            assert r, f"phase {p + 1}: no route ({r.reason})"
            assert r.nodes == path, f"phase {p + 1}: route {r.nodes}, expected {path}"
            assert r.arrival_ms == arrival
            before = link_bytes(sim, NETWORK)
            # ten bundles now, five more five minutes later (same path)
            tags, got = [], {}
            for batch, until in ((range(10), start + 300), (range(10, 15), end)):
                for i in batch:
                    tag = f"p{p + 1}b{i}"
                    data = sized_payload(tag, SIZE)
                    sim.send(1, "ipn:1.1", "ipn:8.1", data, lifetime_ms=lifetime)
                    sent[tag], expiry[tag] = sha(data), sim.now + lifetime
                    tags.append(tag)
                got.update(deliver_all(sim, 8, "ipn:8.1", 15 - len(got), until * 1000))
                sim.run(until_ms=until * 1000)
            assert sorted(got) == sorted(tags), f"phase {p + 1}: missing " \
                f"{sorted(set(tags) - set(got))}"
            first_at = got[tags[0]][0]
            # the first bundle arrives by the projection (links have no rate of
            # their own, so it can only be a little early)
            assert arrival - 1000 <= first_at <= arrival, (p, first_at, arrival)
            for tag, (at, d) in got.items():
                assert sha(d.payload) == sent[tag] and d.src == "ipn:1.1"
                assert at <= expiry[tag], f"{tag} arrived after its expiry"
            sim.run(until_ms=end * 1000)
            after = link_bytes(sim, NETWORK)
            used = {dr for dr in after if after[dr] > before[dr]}
            # data went exactly over this phase's path; LTP's reports came back
            # over the same links, nothing else moved
            fwd = used & {(a, b) for a, b, *_ in NETWORK}
            assert fwd == set(carriers), f"phase {p + 1}: data went over {sorted(fwd)}"
            assert used <= set(carriers) | {(b, a) for a, b in carriers}
        # nothing was ever handed to a link outside its contacts, and every
        # contact-following link saw its windows
        for a, b in directions(NETWORK):
            cs = sim.contact_stats(a, b)
            assert cs["follows"] == 1
            assert cs["outside"] == 0, f"{a}->{b}: {cs['outside']} segments outside contacts"
        assert sim.link_stats(2, 4)["dropped"] == 0
        assert sim.contact_stats(4, 7)["windows"] == 3
        s1 = sim.cgr_stats(1)
        assert s1["routed"] >= 75 and s1["too_late"] == 0 and s1["no_capacity"] == 0
        assert sim.stats(4)["bp.forwarded"] >= 45  # R1 relayed P1, P4 and P5 traffic
        for n in range(1, 9):
            st = sim.stats(n)
            assert st["bp.expired"] == 0 and st["bp.deleted"] == 0, (n, st)
        assert sim.stats(8)["bp.delivered"] == 75


def test_too_late_not_sent_deleted_with_report():
    """A bundle whose every route arrives after it expires is deleted at the
    source, never sent: the best route to 8 arrives at 243.242 s (see P1);
    a 100 s lifetime is too short, 300 s is enough."""
    with Sim(seed=82, heap_bytes=8 << 20, cgr=True) as sim:
        build(sim, NETWORK, status_reports=True)
        for i in range(3):
            # the sender hears it from its send (and report-to from the report)
            with pytest.raises(TernError) as e:
                sim.send(1, "ipn:1.1", "ipn:8.1", sized_payload(f"late{i}", SIZE),
                         lifetime_ms=100_000, flags=FLAG_RPT_DELETION, report_to="ipn:1.2")
            assert e.value.rc == errors.ENOROUTE, e.value
        assert sim.cgr_stats(1)["too_late"] == 3
        assert sim.stats(1)["bp.deleted"] == 3
        assert not sim.cgr_route(1, 8, size=SIZE, lifetime_ms=100_000)
        assert sim.cgr_route(1, 8, size=SIZE, lifetime_ms=100_000).reason == "too late"
        reports = sim.recv_all(1, "ipn:1.2")
        assert len(reports) == 3
        for rep in reports:
            r = decode_report(rep.payload)
            assert r["deleted"] and r["reason"] == 6  # no known route from here
        ok = sized_payload("intime", SIZE)
        sim.send(1, "ipn:1.1", "ipn:8.1", ok, lifetime_ms=300_000)
        got = deliver_all(sim, 8, "ipn:8.1", 1, 600_000)
        assert list(got) == ["intime"] and got["intime"][0] <= 243_242
        # only the one bundle in time went into the network
        assert sim.stats(2)["bp.received"] == 1


# ------------------------------------------------------------------ volume
#
# 1 -> 2: contact A 0..60 s and B 300..400 s at 10,000 B/s, light time 1 s
# (A holds 600,000 bytes); 1 -> 3 -> 2 at 5,000 B/s for 600 s, light time
# 30 s a hop. Forty bundles of 20,000 bytes of payload (20,050 stored, 20,045
# on the wire... each about 2.005 s of A) at 0 s, each given the route that
# brings it earliest with what is booked before it:
#   on A bundle k ends at about 2.005 (k + 1) s and arrives 1 s later: by
#   59.2 s for k = 28; the route over 3 cannot arrive before 68 s (4 s on
#   1->3, 30 s, 4 s on 3->2, 30 s), B not before 301 s: the first 29 take A,
#   filling it (a 30th would end after 60 s: 600,000 bytes hold 29 bundles);
#   the other 11 take the next route, over 3 (projected to arrive at about
#   68 + 4 k s; the links, which have no rate of their own, bring them at
#   60 + 4 k s), none waits for B.
# During A the link carries 10,000 B/s of bundles (plus LTP's headers).

VOL = [
    (1, 2, [(0, 60), (300, 400)], 10_000, 1),
    (1, 3, [(0, 600)], 5_000, 30),
    (3, 2, [(0, 600)], 5_000, 30),
]


def test_volume_exhausted_next_route():
    with Sim(seed=83, heap_bytes=16 << 20, cgr=True) as sim:
        build(sim, VOL)
        assert sim.cgr_route(1, 2, size=20_000).nodes == [2]
        sent = {}
        for i in range(40):
            data = sized_payload(f"v{i}", 20_000)
            sim.send(1, "ipn:1.1", "ipn:2.1", data, lifetime_ms=3_600_000)
            sent[f"v{i}"] = sha(data)
        # A is booked full: the next bundle's route goes over 3
        r = sim.cgr_route(1, 2, size=20_000)
        assert r.nodes == [3, 2] and r.starts_ms == [0, 0]
        # Links have no rate: each bundle handed to LTP crosses at once, so
        # the link's byte count jumps when the agent lets a bundle go. The
        # rate: bytes of all jumps but the last over the time they span.
        jumps, last = [], 0
        while sim.now < 59_900:
            sim.run(until_ms=sim.now + 20)
            b = sim.link_stats(1, 2)["bytes_sent"]
            if b != last:
                jumps.append((sim.now, b - last))
                last = b
        assert len(jumps) >= 29
        span = (jumps[-1][0] - jumps[0][0]) / 1000.0
        rate = sum(n for _, n in jumps[:-1]) / span
        # LTP's segment headers ride on top of the bundles' 10,000 B/s
        assert 10_000 <= rate <= 1.03 * 10_000, f"{rate:.0f} B/s during A"
        assert sim.deliveries == 29  # A's, all there before A ends
        got = deliver_all(sim, 2, "ipn:2.1", 40, 1_000_000)
        assert {t: sha(d.payload) for t, (_, d) in got.items()} == sent
        assert max(at for at, _ in got.values()) <= 68_000 + 11 * 4_100  # none waited for B
        sim.run(for_ms=100_000)
        s3 = sim.stats(3)
        assert s3["bp.received"] == 11 and s3["bp.forwarded"] == 11
        a_bytes = sim.contact_stats(1, 2)["bytes_in_contact"]
        assert a_bytes <= 600_000 * 1.03  # LTP headers on top of A's capacity
        assert a_bytes >= 29 * 20_000
        # B carried nothing: no bundle needed it
        sim.run(until_ms=500_000)
        assert sim.contact_stats(1, 2)["bytes_in_contact"] == a_bytes
        for a, b in directions(VOL):
            assert sim.contact_stats(a, b)["outside"] == 0
        assert sim.cgr_stats(1)["routed"] == 40


# --------------------------------------------- earliest arrival, not fewest hops
#
# 1 (ground) reaches 3 (lander) directly at 1,000 B/s, light time 240 s, or
# over 2 (orbiter): 1->2 at 10,000 B/s, 240 s, then 2->3 at 100,000 B/s, 1 s.
#   100 bytes: direct 0.1 s + 240 = 240.100 s; over 2: 0.01 + 240 = 240.010,
#     2->3 0.001 + 1 -> 241.011 s: the direct route, fewer hops and earlier.
#   2000 bytes: direct 2 + 240 = 242.000 s; over 2: 240.200, then 241.220 s:
#     the longer route arrives earlier and wins.

DTE = [
    (1, 3, [(0, 3600)], 1_000, 240),
    (1, 2, [(0, 3600)], 10_000, 240),
    (2, 3, [(0, 3600)], 100_000, 1),
]


def test_earliest_arrival_beats_fewest_hops():
    with Sim(seed=84, heap_bytes=8 << 20, cgr=True) as sim:
        build(sim, DTE)
        small = sim.cgr_route(1, 3, size=100)
        assert small.nodes == [3] and small.arrival_ms == 240_100
        big = sim.cgr_route(1, 3, size=2000)
        assert big.nodes == [2, 3] and big.arrival_ms == 241_220
        sim.send(1, "ipn:1.1", "ipn:3.1", sized_payload("small", 100))
        sim.run(until_ms=1000)
        sim.send(1, "ipn:1.1", "ipn:3.1", sized_payload("big", 2000))
        got = deliver_all(sim, 3, "ipn:3.1", 2, 3_600_000)
        assert sorted(got) == ["big", "small"]
        assert got["small"][0] <= 240_100 and got["big"][0] <= 1000 + 241_220
        sim.run(for_ms=10_000)  # the relay's LTP session completes
        assert sim.stats(2)["bp.forwarded"] == 1  # only the big one went over 2
        assert sim.link_stats(1, 3)["bytes_sent"] < 1000  # the small one (and LTP)


# ----------------------------------------------------------- plans at run time

def test_contact_added_at_run_time():
    """No contact reaches 3: the bundle waits in limbo at 1. An ionadmin
    command on every node adds contacts 2 <-> 3 from now on: routes are
    recomputed and the bundle flows (1->2 at 100 s + 1, 2->3 + 1)."""
    links = [(1, 2, [(0, 20000)], 100_000, 1), (2, 3, [], 100_000, 1)]
    with Sim(seed=85, heap_bytes=8 << 20, cgr=True) as sim:
        build(sim, links)
        assert sim.cgr_route(1, 3).reason == "no route"
        sim.send(1, "ipn:1.1", "ipn:3.1", b"wait:for a contact")
        sim.run(until_ms=100_000)
        assert sim.stats(1)["bp.limbo"] == 1 and sim.deliveries == 0
        for n in (1, 2, 3):
            sim.ionadmin(n, "a contact +0 +1000 2 3 100000\na contact +0 +1000 3 2 100000")
        assert "2 -> 3" in sim.ionadmin(1, "l contact")
        r = sim.cgr_route(1, 3, size=20)
        assert r.nodes == [2, 3] and r.arrival_ms == 100_000 + 1001 + 1001
        got = deliver_all(sim, 3, "ipn:3.1", 1, 200_000)
        assert list(got) == ["wait"] and got["wait"][0] <= 102_002
        assert sim.cgr_stats(1)["plan_changes"] == 1
        assert "contacts of this node" in sim.cgr_status(2)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_priorities_volume_and_expiry(seed):
    """Three classes of bundles through a relay whose contacts hold less than
    is offered (about 900 kB offered, 640 kB of contact from 1 to 2). Each
    bundle is delivered before it expires, or was deleted as unable to
    arrive in time, or expired at the source waiting for room; nothing
    crosses a link outside its contacts; expedited bundles that could use
    the second contacts (lifetime 900 s or more) are never the ones cut:
    what lower classes booked does not count against them."""
    import random
    rng = random.Random(seed)
    links = [
        (1, 2, [(0, 120), (600, 700), (1200, 1300)], 2_000, 2),
        (2, 3, [(30, 200), (650, 800), (1250, 1500)], 2_000, 5),
    ]
    with Sim(seed=seed, heap_bytes=16 << 20, cgr=True) as sim:
        build(sim, links)
        sent = {}
        for i in range(60):
            prio = rng.choice([0, 1, 2])
            life = rng.choice([300_000, 900_000, 3_600_000])
            data = sized_payload(f"r{i}x{prio}", rng.randint(500, 30_000))
            sim.send(1, "ipn:1.1", "ipn:3.1", data, lifetime_ms=life, priority=prio)
            sent[f"r{i}x{prio}"] = (sha(data), life, prio)
        got = deliver_all(sim, 3, "ipn:3.1", 60, 4_000_000)
        sim.run(until_ms=4_000_000)
        late = sum(sim.cgr_stats(n)["too_late"] for n in (1, 2))
        expired = sim.stats(1)["bp.expired"]
        assert len(got) + late + expired == 60, (len(got), late, expired)
        assert sim.stats(2)["bp.expired"] == 0  # nothing sent died on the way
        for tag, (at, d) in got.items():
            digest, life, _ = sent[tag]
            assert sha(d.payload) == digest and at <= life
        missing = set(sent) - set(got)
        assert not [t for t in missing if sent[t][2] == 2 and sent[t][1] >= 900_000]
        for a, b in directions(links):
            assert sim.contact_stats(a, b)["outside"] == 0
        assert got, "nothing delivered"
