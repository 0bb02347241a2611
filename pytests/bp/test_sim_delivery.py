"""Bundles over LTP in tern_sim: two nodes, a three-node relay, sizes from
1 byte to 10 MB, a five-minute light time. Every payload is checked by
SHA-256 and every bundle counted."""
import random
import time

import pytest

from simhelp import Sim, chain, sha, sized_payload
from tern.errors import TernError
from tern.sim import EXPEDITED, standard_rc


def send_all(sim, src_node, dest, bundles, **kw):
    sent = {}
    for tag, n in bundles:
        data = sized_payload(tag, n)
        sim.send(src_node, f"ipn:{src_node}.1", dest, data, **kw)
        sent[tag] = sha(data)
    return sent


def received(sim, node, eid):
    got = {}
    for d in sim.recv_all(node, eid):
        tag = d.payload.split(b":", 1)[0].decode()
        assert tag not in got, f"bundle {tag} delivered twice"
        got[tag] = sha(d.payload)
    return got


def test_two_nodes_over_ltp():
    with Sim(seed=11) as sim:
        chain(sim, 2, delay_ms=40, loss=0.05)
        rng = random.Random(11)
        bundles = [(f"b{i}", rng.randint(1, 50000)) for i in range(30)]
        sent = send_all(sim, 1, "ipn:2.1", bundles)
        assert sim.run(until_ms=3_600_000, deliveries=30) == "deliveries"
        assert received(sim, 2, "ipn:2.1") == sent
        assert sim.recv(2, "ipn:2.1") is None
        s1, s2 = sim.stats(1), sim.stats(2)
        assert s1["bp.created"] == 30
        assert s2["bp.received"] == 30 and s2["bp.taken"] == 30
        assert s2["bp.duplicates"] + s2["bp.received"] >= 30
        assert sim.link_stats(1, 2)["lost"] > 0  # the loss was real, and repaired
        sim.run(for_ms=600_000)
        assert sim.stats(1)["bp.forwarded"] == 30
        assert sim.stats(1)["bp.stored"] == 0


def test_three_node_relay():
    with Sim(seed=12) as sim:
        chain(sim, 3, delay_ms=250, loss=0.02)
        bundles = [(f"r{i}", 100 + i * 997) for i in range(20)]
        sent = send_all(sim, 1, "ipn:3.1", bundles)
        back = send_all(sim, 3, "ipn:1.1", [("back", 4242)])
        assert sim.run(until_ms=3_600_000, deliveries=21) == "deliveries"
        assert received(sim, 3, "ipn:3.1") == sent
        assert received(sim, 1, "ipn:1.1") == back
        s2 = sim.stats(2)
        assert s2["bp.received"] == 21 and s2["bp.delivered"] == 0
        # The relay forwarded each one (retransmitted blocks are counted once).
        sim.run(for_ms=600_000)
        assert sim.stats(2)["bp.forwarded"] == 21
        assert sim.stats(2)["bp.stored"] == 0
        assert sim.now >= 500  # two hops of 250 ms at least


@pytest.mark.parametrize("size,seg", [(1, 1400), (1000, 1400), (65536, 1400),
                                      (1_000_000, 1400), (10_000_000, 1400),
                                      (10_000_000, 64000)])
def test_bundle_sizes(size, seg):
    t0 = time.monotonic()
    with Sim(seed=size, heap_bytes=(64 << 20) if size > 2_000_000 else (16 << 20)) as sim:
        chain(sim, 2, seg=seg, delay_ms=20, rate=125_000_000, loss=0.001)
        sent = send_all(sim, 1, "ipn:2.1", [("s", size)])
        assert sim.run(until_ms=3_600_000, deliveries=1) == "deliveries"
        got = sim.recv(2, "ipn:2.1")
        assert len(got.payload) == size and sha(got.payload) == sent["s"]
        assert got.src == "ipn:1.1"
        # at 1 Gbit/s the transfer takes about size / 125 MB/s of virtual time
        assert sim.now >= 20 + size * 1000 // 125_000_000
    assert time.monotonic() - t0 < 30, "the simulation should be fast in real time"


def test_five_minute_light_time():
    with Sim(seed=13) as sim:
        chain(sim, 2, delay_ms=300_000, loss=0.05, ranges=300)
        bundles = [(f"m{i}", 20000 + i) for i in range(8)]
        sent = send_all(sim, 1, "ipn:2.1", bundles)
        assert sim.run(until_ms=299_999, deliveries=1) == "time"  # light is slow
        assert sim.run(until_ms=24 * 3600_000, deliveries=8) == "deliveries"
        assert received(sim, 2, "ipn:2.1") == sent
        assert sim.now >= 300_000


def test_config_errors_name_file_and_line():
    with Sim() as sim:
        rc = standard_rc(5, peers=[6]).replace("a plan 6 ltp/6", "a plan six ltp/6")
        with pytest.raises(TernError) as e:
            sim.node(rc, name="n5.rc")
        msg = str(e.value)
        line = rc.splitlines().index("a plan six ltp/6") + 1
        assert f"n5.rc:{line}:" in msg, msg
        assert sim.nodes() == []
        sim.node(number=5, peers=[6])
        with pytest.raises(TernError, match="exists already"):
            sim.node(number=5, peers=[6])
        with pytest.raises(TernError):
            sim.link(5, 6)  # no node 6


def test_expedited_ordinal_is_accepted():
    with Sim(seed=3) as sim:
        chain(sim, 2)
        sim.send(1, "ipn:1.1", "ipn:2.1", b"x:1", priority=EXPEDITED, ordinal=200)
        assert sim.run(until_ms=60_000, deliveries=1) == "deliveries"
        assert sim.recv(2, "ipn:2.1").payload == b"x:1"


def test_small_bundles_aggregated_into_blocks():
    """ION's aggregation: with a 20,000-byte threshold and a 1 s time limit,
    300 small bundles travel in far fewer LTP blocks, all intact, in order
    of sending within the block stream."""
    with Sim(seed=17) as sim:
        for n, peer in ((1, 2), (2, 1)):
            sim.node(standard_rc(n, peers=[peer], agg_size=20000, agg_s=1))
        sim.link(1, 2, delay_ms=30, loss=0.03)
        bundles = [(f"a{i}", 50 + (i * 37) % 900) for i in range(300)]
        sent = send_all(sim, 1, "ipn:2.1", bundles)
        assert sim.run(until_ms=600_000, deliveries=300) == "deliveries"
        assert received(sim, 2, "ipn:2.1") == sent
        blocks = sim.stats(1)["ltp.exports_started"]
        assert 300 * 500 / 20000 <= blocks < 60, f"{blocks} blocks for 300 bundles"
        sim.run(for_ms=60_000)
        assert sim.stats(1)["bp.forwarded"] == 300 and sim.stats(1)["bp.stored"] == 0
