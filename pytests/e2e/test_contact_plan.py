"""Contact-driven transmission between real ternd processes (issue: contact
plans in action): three nodes 1 - 2 - 3 over LTP/UDP, linkem on the relay's
outbound link 2 - 3 (to watch the wire), and a contact plan in which the
relay's contacts with node 3 close from 3 s to 9 s after the start. Bundles
sent at 2 s flow to node 3 until the contact closes, wait in the relay's
store while it is closed (not one datagram on the 2 - 3 wire, counted by
linkem), and flow again when it opens, at the contact's rate (1 MB/s, ION's
contact rate in bytes/s): the relay's sending rate, measured on the wire
while its backlog drains, is within a few percent of it."""
import time

from e2ehelp import Receiver, check_bundles, sha, sized_payload
from tern import bp

RATE = 1_000_000   # bytes/s in every contact of the plan
T1, T2 = 3, 9      # the relay's contacts with node 3 close and open again


def test_relay_waits_for_its_contact_then_sends_at_its_rate(network):
    net = network(3, rate=RATE, qtime=0.1, links={(2, 3): {"delay": 5}},
                  planned_outages={(2, 3): [(T1, T2)]})
    net.start()
    count, size = 90, 60_000
    rx = Receiver(net.dir(3), "ipn:3.1", count, timeout=T2 + 60)

    sent = {}
    net.wait_clock(2)
    with bp.Node(net.dir(1)) as n1:
        tx = n1.open("ipn:1.1")
        for i in range(count):
            data = sized_payload(f"c{i:03d}", size)
            tx.send("ipn:3.1", data, lifetime_s=600)
            sent[f"c{i:03d}"] = sha(data)
        tx.flush(30_000)
    # the contact is closed: nothing crosses 2 -> 3
    net.wait_clock(T1 + 0.5)
    closed_from = net.link_stats(2, 3)["a2b"]
    net.wait_clock(T2 - 0.3)
    closed_to = net.link_stats(2, 3)["a2b"]
    assert closed_to["packets_in"] == closed_from["packets_in"], \
        f"the relay sent on 2 -> 3 outside its contact: {closed_from} -> {closed_to}"
    waiting = net.counters(2)
    assert waiting["queued"] + waiting["in_flight"] > 20, \
        f"the relay holds no backlog for the contact: {waiting}"
    # the contact is open: the backlog leaves at the contact's rate
    net.wait_clock(T2 + 0.5)
    t_a, a = time.monotonic(), net.link_stats(2, 3)["a2b"]
    net.wait_clock(T2 + 2.5)
    t_b, b = time.monotonic(), net.link_stats(2, 3)["a2b"]
    rate = (b["bytes_in"] - a["bytes_in"]) / (t_b - t_a)
    still = net.counters(2)
    assert still["queued"] + still["in_flight"] > 0, \
        "the backlog drained before the measurement ended: send more"
    print(f"relay rate during its contact: {rate:,.0f} B/s (contact {RATE:,} B/s)")
    # the wire carries LTP segment headers and reports besides bundle bytes
    assert 0.95 * RATE <= rate <= 1.08 * RATE, \
        f"the relay sent {rate:,.0f} B/s during its contact; the contact's rate is {RATE:,} B/s"
    rx.join(T2 + 60)
    assert rx.error is None, rx.error
    check_bundles(rx.got, sent, "ipn:1.1")
    arrivals = sorted(t - net.t0 for t in rx.arrivals().values())
    inside = [round(x, 2) for x in arrivals if T1 + 0.3 < x < T2 - 0.1]
    assert not inside, f"bundles reached node 3 while the contact was closed: {inside}"
    assert any(x < T1 for x in arrivals) and any(x > T2 for x in arrivals), arrivals
