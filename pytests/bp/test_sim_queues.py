"""Queues in tern_sim: endpoints that keep bundles for a later reader,
priority order after an outage, and a relay that holds everything through a
ten-minute outage."""
from simhelp import Sim, chain, sha, sized_payload
from tern.sim import BULK, EXPEDITED, STANDARD


def test_queue_then_read_and_discard_rule():
    with Sim(seed=31) as sim:
        sim.node(number=1, peers=[2], endpoints=(1,))
        sim.node(number=2, peers=[1], endpoints=(1,),
                 extra_bpadmin="a endpoint ipn:2.7 x")
        sim.link(1, 2, delay_ms=5)
        a = [sized_payload(f"q{i}", 500 + i) for i in range(5)]
        for d in a:
            sim.send(1, "ipn:1.1", "ipn:2.1", d)
        sim.send(1, "ipn:1.1", "ipn:2.7", b"gone")
        assert sim.run(until_ms=60_000, deliveries=5) == "deliveries"
        # nobody reads yet: the bundles wait in the endpoint's queue
        sim.run(until_ms=3_600_000)
        s2 = sim.stats(2)
        assert s2["bp.delivered"] == 5 and s2["bp.taken"] == 0
        assert s2["bp.discarded"] == 1
        assert s2["bp.stored"] == 5
        got = [sha(d.payload) for d in sim.recv_all(2, "ipn:2.1")]
        assert got == [sha(d) for d in a]  # in arrival order, an hour later
        assert sim.stats(2)["bp.stored"] == 0
        assert sim.recv(2, "ipn:2.7") is None


def test_priority_order_after_link_comes_up():
    with Sim(seed=32) as sim:
        chain(sim, 2, delay_ms=20, rate=100_000)
        sim.outage(1, 2, 0, 60_000)
        sim.run(until_ms=1_000)
        plan = [("bulk0", BULK, 0), ("std0", STANDARD, 0), ("exp10", EXPEDITED, 10),
                ("bulk1", BULK, 0), ("exp200", EXPEDITED, 200), ("std1", STANDARD, 0),
                ("exp10b", EXPEDITED, 10), ("bulk2", BULK, 0), ("exp50", EXPEDITED, 50)]
        for tag, prio, ordinal in plan:
            sim.send(1, "ipn:1.1", "ipn:2.1", sized_payload(tag, 800), priority=prio,
                     ordinal=ordinal)
        assert sim.run(until_ms=59_000) == "time"
        assert sim.stats(2)["bp.received"] == 0
        assert sim.run(until_ms=600_000, deliveries=len(plan)) == "deliveries"
        order = [d.payload.split(b":")[0].decode() for d in sim.recv_all(2, "ipn:2.1")]
        assert order == ["exp200", "exp50", "exp10", "exp10b", "std0", "std1", "bulk0",
                         "bulk1", "bulk2"], order


def test_relay_holds_through_ten_minute_outage():
    with Sim(seed=33) as sim:
        chain(sim, 3, delay_ms=100, loss=0.02)
        sim.outage(2, 3, 0, 600_000)
        bundles = {f"h{i}": sized_payload(f"h{i}", 1000 + 37 * i) for i in range(25)}
        for d in bundles.values():
            sim.send(1, "ipn:1.1", "ipn:3.1", d)
        assert sim.run(until_ms=599_000, deliveries=1) == "time"
        s2 = sim.stats(2)
        assert s2["bp.received"] == 25 and s2["bp.stored"] == 25
        assert sim.link_stats(2, 3)["down"] == 1
        assert sim.run(until_ms=3_600_000, deliveries=25) == "deliveries"
        assert sim.now >= 600_000
        got = {d.payload.split(b":")[0].decode(): sha(d.payload)
               for d in sim.recv_all(3, "ipn:3.1")}
        assert got == {k: sha(v) for k, v in bundles.items()}
        sim.run(for_ms=600_000)
        assert sim.stats(2)["bp.stored"] == 0
        assert sim.stats(3)["bp.duplicates"] >= 0
