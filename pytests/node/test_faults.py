"""Faults with real ternd processes: the relay SIGKILLed in the middle of a
transfer and started again (no bundle lost or doubled), garbage datagrams at
a UDP induct (counted, the node goes on), a node SIGKILLed and started again
at once, and 'tern start' on a node that runs."""
import os
import random
import signal
import socket
import subprocess
import time

import pytest

from nodehelp import sha, sized_payload
from tern import bp
from tern.testing import bin_dir, endpoint_queues, lock_held, lock_holders, read_pid


def test_relay_sigkill_mid_transfer(network):
    """1 -> 2 -> 3 over LTP, links limited to 40 Mbit/s so the transfer
    takes seconds; the relay is killed with SIGKILL once part of the bundles
    reached node 3, and started again a second later. Every bundle arrives
    at node 3 exactly once and intact (the durable store and LTP's resumed
    sessions make this work)."""
    net = network(3, link_bps=40_000_000, max_export=8)
    net.start()
    count, size, eid = 150, 100_000, "ipn:3.1"
    sent = {}
    with bp.Node(net.dir(1)) as n1:
        tx = n1.open("ipn:1.1")
        for i in range(count):
            data = sized_payload(f"k{i:03d}", size)
            tx.send(eid, data, lifetime_s=3600)
            sent[f"k{i:03d}"] = sha(data)
        tx.flush(60_000)
    # kill when some but not most have arrived
    deadline = time.monotonic() + 60
    arrived = 0
    while arrived < count // 5:
        assert time.monotonic() < deadline, f"only {arrived} bundles reached node 3 in 60 s"
        arrived = endpoint_queues(net.status(3)).get(eid, 0)
        time.sleep(0.05)
    relay_before = net.counters(2)
    pid = net.kill(2, signal.SIGKILL)
    at_kill = endpoint_queues(net.status(3)).get(eid, 0)
    assert at_kill < count, "the transfer ended before the relay was killed; slow it down"
    time.sleep(1.0)
    net.start([2])
    assert net.pid(2) != pid
    got = net.receive(3, eid, count, timeout=120)
    tags = [d.payload.split(b":", 1)[0].decode() for d in got]
    assert len(tags) == len(set(tags)) == count, "duplicates among the deliveries"
    assert set(tags) == set(sent)
    for d, t in zip(got, tags):
        assert len(d.payload) == size and sha(d.payload) == sent[t], f"{t} corrupted"
        assert d.src == "ipn:1.1"
    for num in (1, 2):
        c = net.counters(num)
        assert c["stored"] == 0, f"node {num} still stores {c['stored']} bundle(s)"
    print(f"relay killed after {relay_before['bp_forwarded']} forwards, node 3 had "
          f"{at_kill}/{count}; after restart: {net.counters(2)}")


def test_malformed_datagrams_at_udp_induct(network):
    """Garbage datagrams at a udpcli induct: the node keeps running, counts
    them as malformed (tern status), and a good bundle still arrives."""
    net = network(2, protocol="udp")
    net.start()
    port = net[2].port
    rng = random.Random(4242)
    junk = [b"", b"\x00", b"\xff" * 10, b"\x9f" + b"\x88" * 40,  # an unterminated array
            b"\x9f\x89\x07\x00\x00", bytes(rng.randrange(256) for _ in range(1200))]
    junk += [bytes(rng.randrange(256) for _ in range(rng.randrange(1, 3000)))
             for _ in range(194)]
    before = net.counters(2)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        for j in junk:
            s.sendto(j, ("127.0.0.1", port))
            time.sleep(0.0005)
    finally:
        s.close()
    # the node still runs and answers
    deadline = time.monotonic() + 10
    while True:
        after = net.counters(2)
        if after["bp_malformed"] - before["bp_malformed"] >= len(junk) - 1:
            break
        assert time.monotonic() < deadline, (
            f"malformed count went from {before['bp_malformed']} to "
            f"{after['bp_malformed']} for {len(junk)} garbage datagrams")
        time.sleep(0.1)
    assert net.running(2)
    # an empty datagram may not count; every other one must
    assert after["bp_malformed"] - before["bp_malformed"] <= len(junk)
    assert after["bp_received"] == before["bp_received"]
    assert after["malformed"] == after["bp_malformed"]
    with bp.Node(net.dir(1)) as n1, bp.Node(net.dir(2)) as n2:
        rx = n2.open("ipn:2.1")
        data = sized_payload("good", 5000)
        n1.open("ipn:1.1").send("ipn:2.1", data)
        d = rx.receive(10_000)
        assert d is not None, "a good bundle did not arrive after the garbage"
        assert d.payload == data and d.src == "ipn:1.1"
    assert net.counters(2)["bp_received"] == before["bp_received"] + 1


def test_sigkill_leaves_nothing_to_clean(network):
    """A node killed with SIGKILL starts again at once (its lock died with
    it; no stale socket or pid file is in the way), keeps what was queued,
    and works."""
    net = network(2)
    net.start()
    with bp.Node(net.dir(1)) as n1:
        n1.open("ipn:1.1").send("ipn:2.1", b"before the kill", wait=True)
    net.wait_delivered(2, "ipn:2.1", 1, timeout=20)
    d2 = net.dir(2)
    pid = net.kill(2, signal.SIGKILL)
    assert not lock_held(d2)
    assert os.path.exists(os.path.join(d2, "ternd.pid")), "expected the stale pid file"
    t0 = time.monotonic()
    r = net.tern("start", os.path.join(d2, "host.rc"))
    took = time.monotonic() - t0
    assert r.returncode == 0, f"restart after SIGKILL failed:\n{r.stdout}{r.stderr}"
    net[2].expected_up = True
    assert net.pid(2) not in (None, pid)
    assert took < 10, f"restart took {took:.1f} s"
    with bp.Node(net.dir(1)) as n1:
        n1.open("ipn:1.1").send("ipn:2.1", b"after the restart", wait=True)
    got = net.receive(2, "ipn:2.1", 2, timeout=20)
    assert sorted(d.payload for d in got) == [b"after the restart", b"before the kill"]


def test_start_on_running_node_refuses(network):
    """'tern start' on a node that runs refuses, naming the node and its
    ternd's pid; the running node is untouched."""
    net = network(1)
    net.start()
    pid = net.pid(1)
    for target in (net[1].rc_path, net.dir(1)):
        r = net.tern("start", target)
        assert r.returncode == 1, r.stdout + r.stderr
        assert "already running" in r.stderr and str(pid) in r.stderr, r.stderr
        assert net.dir(1) in r.stderr or target in r.stderr, r.stderr
    assert net.pid(1) == pid and net.running(1)
    with bp.Node(net.dir(1)) as n:
        assert n.number == 1


def test_second_ternd_refused_leaves_node_stoppable(network):
    """ternd started directly (past tern's own check) on a running node is
    refused by the lock, and the running node can still be stopped."""
    net = network(1)
    net.start()
    pid = net.pid(1)
    r = subprocess.run([os.path.join(bin_dir(), "ternd"), net.dir(1)], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode != 0
    assert "already running" in r.stderr and str(pid) in r.stderr, r.stderr
    assert net.running(1) and lock_holders(net.dir(1)) == [pid]
    assert read_pid(net.dir(1)) == pid, "the running node's ternd.pid is gone"
    r = net.tern("stop", net.dir(1))
    assert r.returncode == 0, r.stdout + r.stderr
    net[1].expected_up = False
    assert not net.running(1)


def test_file_ref_bundles_survive_a_sender_sigkill(network):
    """Bundles sent from files by reference (send_file by_ref: the store
    keeps the file's path, not its bytes) while the peer is down; the sender
    is killed with SIGKILL and started again, reopens the files by path and
    delivers every bundle intact once the peer is up. One file changed
    while the node was down: its bundle is deleted and counted
    (file_refs_lost), not sent with the wrong bytes."""
    net = network(2)
    net.start([1])
    files, sent = [], {}
    for i in range(6):
        path = os.path.join(net.dir(1), f"ref{i}.bin")
        data = sized_payload(f"r{i}", 300_000 + i)
        with open(path, "wb") as f:
            f.write(data)
        files.append(path)
        sent[f"r{i}"] = sha(data)
    with bp.Node(net.dir(1)) as n1:
        tx = n1.open("ipn:1.1")
        for path in files:
            tx.send_file("ipn:2.1", path, lifetime_s=3600, by_ref=True)
        tx.flush(30_000)
    c = net.counters(1)
    assert c["client_file_refs"] == 6 and c["file_refs"] == 6, c
    assert c["stored_bytes"] > 6 * 300_000, c  # the bundles, not the store's bytes
    net.kill(1, signal.SIGKILL)
    with open(files[5], "r+b") as f:  # changed while the node is down
        f.write(b"X")
    os.utime(files[5], ns=(0, 10**9))
    del sent["r5"]
    net.start([1])
    net.start([2])
    got = net.receive(2, "ipn:2.1", 5, timeout=60)
    tags = sorted(d.payload.split(b":", 1)[0].decode() for d in got)
    assert tags == sorted(sent), tags
    for d in got:
        assert sha(d.payload) == sent[d.payload.split(b":", 1)[0].decode()]
    deadline = time.monotonic() + 20
    while True:
        c = net.counters(1)
        if c["stored"] == 0:
            break
        assert time.monotonic() < deadline, f"node 1 still stores bundles: {c}"
        time.sleep(0.1)
    assert c["file_refs_lost"] == 1 and c["file_refs"] == 0, c
