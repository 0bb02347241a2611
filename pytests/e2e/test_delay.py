"""Real ternd nodes over LTP/UDP through linkem with a long one-way delay
(1.25 s and 5 s): the contact plan's range covers it, the first bundle
takes the delay and no more than a little over it, everything arrives
intact, and no LTP timer fires early (the ranges are what LTP uses)."""
import math
import os
import time

import pytest

from e2ehelp import (FileReceiver, Receiver, check_bundles, check_files, idle_link_stats,
                     payload, send_file, sha, write_file)
from tern import bp
from tern.testing import ltp_counters

SIZES = [1, 1000, 1399, 1400, 1401, 20_000, 64_000, 65_537, 150_000, 300_000]


@pytest.mark.parametrize("delay_ms", [1250, 5000])
def test_one_way_delay(network, node_dir, delay_ms):
    delay = delay_ms / 1000
    net = network(2, links={(1, 2): {"delay": delay_ms}}, qtime=0.1)
    assert net.edge_owlt(1, 2) == math.ceil(delay) >= delay
    assert f" 1 2 {math.ceil(delay)}\n" in net.rc_text(1)
    net.start()
    src = os.path.join(node_dir, "file.bin")
    fsha = write_file(src, 600_000, f"delay{delay_ms}")
    files = FileReceiver(net.dir(2), "ipn:2.2", os.path.join(node_dir, "got"), 1, 120)
    rx = Receiver(net.dir(2), "ipn:2.1", 1 + 2 * len(SIZES), timeout=120)
    sent = {}
    try:
        with bp.Node(net.dir(1)) as n1:
            tx = n1.open("ipn:1.1")
            first = payload("first", 1000)
            t = time.time()
            tx.send("ipn:2.1", first, lifetime_s=3600)
            sent["first"] = sha(first)
            while not rx.got and time.time() - t < delay + 20 and rx.is_alive():
                time.sleep(0.01)
            assert rx.got, f"the first bundle did not arrive in {delay + 20} s"
            latency = rx.got[0][3] - t
            print(f"first bundle over {delay} s: {latency:.3f} s")
            assert delay <= latency < delay + 1.0, f"first bundle took {latency:.3f} s"
            for rep in range(2):
                for i, n in enumerate(SIZES):
                    tag = f"b{rep}-{i}"
                    data = payload(tag, n)
                    tx.send("ipn:2.1", data, lifetime_s=3600)
                    sent[tag] = sha(data)
            tx.flush(60_000)
        send_file(net.dir(1), "ipn:1.2", "ipn:2.2", src)
        rx.join(120)
        assert rx.error is None, rx.error
        check_bundles(rx.got, sent, "ipn:1.1")
        files.wait(120)
        check_files(files.dst, {"file.bin": fsha})
    finally:
        files.kill()
    st = idle_link_stats(net, 1, 2, delay + 5)
    for d in ("a2b", "b2a"):
        assert st[d]["packets_in"] == st[d]["packets_out"] > 0, st[d]
    assert st["a2b"]["bytes_in"] > 600_000 + sum(SIZES) * 2
    for num in (1, 2):
        ltp = ltp_counters(net.status(num))
        assert ltp.get("timeouts_cp", 0) == 0 and ltp.get("timeouts_rs", 0) == 0, \
            f"node {num}: an LTP timer fired on a lossless link: {ltp}"
        assert ltp["exports_cancelled"] == 0 and ltp["imports_cancelled"] == 0


def test_udp_convergence_layer(network):
    """The UDP convergence layer (one bundle per datagram) through linkem
    with 300 ms each way: bundles both ways arrive intact after the delay,
    one datagram each."""
    net = network(2, protocol="udp", links={(1, 2): {"delay": 300}})
    net.start()
    count = 20
    rx2 = Receiver(net.dir(2), "ipn:2.1", count, timeout=30)
    rx1 = Receiver(net.dir(1), "ipn:1.1", count, timeout=30)
    sent = {1: {}, 2: {}}
    t = {}
    for num, dest in ((1, "ipn:2.1"), (2, "ipn:1.1")):
        with bp.Node(net.dir(num)) as n:
            tx = n.open(f"ipn:{num}.2")
            t[num] = time.time()
            for i in range(count):
                tag = f"u{num}-{i}"
                data = payload(tag, 500 + 50 * i)
                tx.send(dest, data, lifetime_s=600)
                sent[num][tag] = sha(data)
            tx.flush(30_000)
    rx2.join(30)
    rx1.join(30)
    assert rx1.error is None and rx2.error is None
    check_bundles(rx2.got, sent[1], "ipn:1.2")
    check_bundles(rx1.got, sent[2], "ipn:2.2")
    assert min(g[3] for g in rx2.got) - t[1] >= 0.3
    assert min(g[3] for g in rx1.got) - t[2] >= 0.3
    st = idle_link_stats(net, 1, 2, 5)
    assert st["a2b"]["packets_out"] == st["b2a"]["packets_out"] == count
