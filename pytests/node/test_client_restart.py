"""Applications across a restart of their ternd (issue 18, item 10): a tool
waits for a node that takes longer than 5 s to come back, and a bundle the
application took before the restart is not delivered to it again."""
import os
import subprocess
import time

from tern import bp
from tern.testing import bin_dir


def test_bpsink_waits_for_a_slow_restart(network):
    """ternd is down for 7 s; bpsink's reattach waits (the default window is
    120 s, it used to be 5 s) and takes the bundle sent after the restart."""
    net = network(2)
    net.start([1])
    sink = subprocess.Popen([os.path.join(bin_dir(), "bpsink"), "ipn:1.2", "--count", "2",
                             "--node", net.dir(1)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        with bp.Node(net.dir(1)) as n:
            n.open("ipn:1.1").send("ipn:1.2", b"before the restart")
        deadline = time.monotonic() + 20
        while net.counters(1).get("delivered", 0) < 1:
            assert time.monotonic() < deadline, "bpsink did not take the first bundle"
            time.sleep(0.1)
        net.kill(1)
        time.sleep(7)
        assert sink.poll() is None, f"bpsink gave up: {sink.communicate()}"
        net.start([1])
        with bp.Node(net.dir(1)) as n:
            n.open("ipn:1.1").send("ipn:1.2", b"after the restart")
        out, err = sink.communicate(timeout=30)
    finally:
        if sink.poll() is None:
            sink.kill()
            sink.communicate()
    assert sink.returncode == 0, err
    assert "'before the restart'" in out and "'after the restart'" in out, out
    assert out.count("Payload delivered") == 2, out


def test_taken_deliveries_survive_a_restart_once(network):
    """A durable node: the application takes 12 of 20 queued bundles (libtern
    has not told ternd yet), ternd is killed and restarted, and the
    application then gets the other 8 — each bundle exactly once — and the
    node's store ends empty."""
    net = network(2)
    net.start([1])
    with bp.Node(net.dir(1)) as n:
        ep = n.open("ipn:1.1")
        for i in range(20):
            ep.send("ipn:1.3", b"b%02d" % i, lifetime_s=3600)
        ep.flush(20_000)
    net.wait_delivered(1, "ipn:1.3", 20)
    got = []
    with bp.Node(net.dir(1)) as n:
        ep = n.open("ipn:1.3")
        for _ in range(12):
            d = ep.receive(10_000)
            assert d is not None
            got.append(d.payload)
        net.kill(1)
        net.start([1])
        while True:
            d = ep.receive(1500)
            if d is None:
                break
            got.append(d.payload)
    assert sorted(got) == [b"b%02d" % i for i in range(20)], got
    assert net.counters(1).get("stored") == 0, net.status(1)
