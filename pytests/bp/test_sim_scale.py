"""Big scenarios in tern_sim: a hundred-node line, a two-hundred-node star,
and a Mars-distance light time. Each checks every payload by SHA-256."""
import time

from simhelp import Sim, sha, sized_payload
from tern.sim import standard_rc


def line(sim, n, delay_ms, loss):
    """Nodes 1..n in a line; each reaches the rest through ipnadmin exits."""
    for i in range(1, n + 1):
        peers = [p for p in (i - 1, i + 1) if 1 <= p <= n]
        exits = []
        if i > 2:
            exits.append((1, i - 2, i - 1))
        if i < n - 1:
            exits.append((i + 2, n, i + 1))
        sim.node(standard_rc(i, peers=peers, exits=exits, endpoints=(1,)))
    for i in range(1, n):
        sim.link(i, i + 1, delay_ms=delay_ms, loss=loss)


def test_hundred_node_line():
    t0 = time.monotonic()
    with Sim(seed=41, heap_bytes=8 << 20) as sim:
        line(sim, 100, delay_ms=20, loss=0.01)
        there = sized_payload("there", 20_000)
        back = sized_payload("back", 3_000)
        sim.send(1, "ipn:1.1", "ipn:100.1", there)
        sim.send(100, "ipn:100.1", "ipn:1.1", back)
        assert sim.run(until_ms=3_600_000, deliveries=2) == "deliveries"
        assert sha(sim.recv(100, "ipn:100.1").payload) == sha(there)
        assert sha(sim.recv(1, "ipn:1.1").payload) == sha(back)
        # 99 hops of 20 ms each way at least
        assert sim.now >= 99 * 20
        sim.run(for_ms=60_000)  # the last claims travel back
        relayed = sum(sim.stats(i)["bp.forwarded"] for i in range(2, 100))
        assert relayed >= 2 * 98
    print(f"100-node line: {time.monotonic() - t0:.2f} s real")


def test_two_hundred_node_star():
    t0 = time.monotonic()
    leaves = range(2, 202)
    with Sim(seed=42, heap_bytes=8 << 20) as sim:
        sim.node(standard_rc(1, peers=list(leaves), endpoints=(1,)))
        for leaf in leaves:
            sim.node(standard_rc(leaf, peers=[1], exits=[(2, 1000, 1)], endpoints=(1,)))
            sim.link(1, leaf, delay_ms=5 + leaf % 50, loss=0.02)
        sent = {}
        for leaf in leaves:
            dest = 2 + (leaf - 1) % 200  # the next leaf round the star
            data = sized_payload(f"{leaf}->{dest}", 500 + 37 * leaf)
            sim.send(leaf, f"ipn:{leaf}.1", f"ipn:{dest}.1", data)
            sent[dest] = sha(data)
        assert sim.run(until_ms=3_600_000, deliveries=200) == "deliveries"
        for dest, want in sent.items():
            d = sim.recv(dest, f"ipn:{dest}.1")
            assert d is not None and sha(d.payload) == want, f"node {dest}"
            assert sim.recv(dest, f"ipn:{dest}.1") is None
        sim.run(for_ms=60_000)  # the last claims travel back
        assert sim.stats(1)["bp.forwarded"] >= 200
        assert sum(sim.stats(n)["bp.stored"] for n in sim.nodes()) == 0
    print(f"200-node star: {time.monotonic() - t0:.2f} s real")


def test_mars_light_time():
    """20 minutes one way, 2 % loss: a 1 MB bundle crosses in hours of
    virtual time and a fraction of a second of real time."""
    owlt = 1200
    t0 = time.monotonic()
    with Sim(seed=43) as sim:
        sim.node(standard_rc(1, peers=[2], seg=16000, ranges={2: owlt}))
        sim.node(standard_rc(2, peers=[1], seg=16000, ranges={1: owlt}))
        sim.link(1, 2, delay_ms=owlt * 1000, loss=0.02)
        data = sized_payload("mars", 1_000_000)
        sim.send(1, "ipn:1.1", "ipn:2.1", data, lifetime_ms=7 * 86_400_000)
        assert sim.run(until_ms=86_400_000, deliveries=1) == "deliveries"
        assert sha(sim.recv(2, "ipn:2.1").payload) == sha(data)
        assert sim.now >= owlt * 1000
        # the sender learns of the claim a light time later and lets go
        sim.run(for_ms=4 * owlt * 1000)
        assert sim.stats(1)["bp.forwarded"] == 1 and sim.stats(1)["bp.stored"] == 0
    print(f"Mars light time: {time.monotonic() - t0:.2f} s real")
