"""The ION Deployment Guide's 3-node LTP/UDP example (samples/guide-3node)
runs unchanged: each node starts from its own host.rc, and bundles from
node 1 reach nodes 101 and 25. Its spans allow one export session each and
its ranges say 10 s light times (LTP timers wait that long for anything
lost), so the waits are generous."""
import os
import shutil

import pytest

from nodehelp import REPO, sha, sized_payload
from tern import bp
from tern.testing import log_tail, port_is_free

SAMPLE = os.path.join(REPO, "samples", "guide-3node")
NODES = {1: 1113, 25: 1125, 101: 1201}


def test_deployment_guide_sample(network, node_dir):
    taken = [p for p in NODES.values() if not port_is_free(p)]
    if taken:
        pytest.skip(f"UDP port(s) {taken} on 127.0.0.1 are in use; the sample's configs "
                    f"fix ports 1113/1125/1201")
    dirs = {}
    for num, port in NODES.items():
        d = os.path.join(node_dir, f"node{num}")
        shutil.copytree(os.path.join(SAMPLE, f"node{num}"), d)
        dirs[num] = (d, port)
    net = network.adopt(dirs)
    net.start()
    for num in NODES:
        assert net.running(num)
        log = log_tail(net.dir(num), 200)
        assert f"node {num} running" in log, log
    # node 1 names the Guide's ionconfig file, not shipped: a warning
    assert "ionconfig" in log_tail(net.dir(1), 200)
    with bp.Node(net.dir(1)) as n1, bp.Node(net.dir(101)) as n101, \
            bp.Node(net.dir(25)) as n25:
        assert (n1.number, n25.number, n101.number) == (1, 25, 101)
        r101, r25 = n101.open("ipn:101.1"), n25.open("ipn:25.2")
        tx = n1.open("ipn:1.1")
        sent = {}
        for i, n in enumerate([10, 1400, 5000, 100_000]):
            data = sized_payload(f"g{i}", n)
            tx.send("ipn:101.1", data, lifetime_s=3600)
            sent[f"g{i}"] = sha(data)
        other = sized_payload("to25", 20_000)
        tx.send("ipn:25.2", other, lifetime_s=3600)
        tx.flush(30_000)
        got = {}
        while len(got) < len(sent):
            d = r101.receive(60_000)
            assert d is not None, f"{len(got)} of {len(sent)} bundles reached node 101"
            tag = d.payload.split(b":", 1)[0].decode()
            assert tag not in got, f"{tag} twice"
            got[tag] = sha(d.payload)
            assert d.src == "ipn:1.1"
        assert got == sent
        d = r25.receive(60_000)
        assert d is not None and d.payload == other
        assert r101.receive(500) is None and r25.receive(200) is None
