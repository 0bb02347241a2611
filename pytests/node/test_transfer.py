"""Bundles between real ternd processes on 127.0.0.1 over LTP: two nodes and
a three-node relay, payloads of 1 B to 100 MB, files through bpsendfile and
bprecvfile, and bundles queued for an endpoint that no application has open,
read later by another process. Every payload is checked by SHA-256 and every
bundle counted (none missing, none twice)."""
import os
import subprocess
import time

import pytest

from nodehelp import file_sha, read_in_child, sha, sized_payload, write_file
from tern import bp
from tern.testing import bin_dir

# Around the LTP segment (1,400), the inline/descriptor limit of the client
# protocol (64 KiB) and the UDP-sized blocks.
SIZES = [1, 2, 100, 1399, 1400, 1401, 65535, 65536, 65537, 300_000, 1_000_000, 4_000_000]


def send_sizes(ep, dest, sizes, prefix):
    sent = {}
    for i, n in enumerate(sizes):
        tag = f"{prefix}{i}-{n}"
        data = sized_payload(tag, n)
        ep.send(dest, data, lifetime_s=600)
        sent[tag] = (n, sha(data))
    ep.flush(60_000)
    return sent


def receive_exactly(ep, count, timeout_s, what):
    """count deliveries within timeout_s, then checks that no extra one comes."""
    got = []
    deadline = time.monotonic() + timeout_s
    while len(got) < count:
        left = int((deadline - time.monotonic()) * 1000)
        if left <= 0:
            break
        d = ep.receive(min(left, 1000))
        if d is not None:
            got.append(d)
    assert len(got) == count, f"{what}: {len(got)} of {count} bundles arrived in {timeout_s} s"
    extra = ep.receive(500)
    assert extra is None, f"{what}: an extra bundle arrived ({len(extra.payload)} bytes)"
    return got


def check_payloads(got, sent, src):
    """Every delivery is one of sent (by the tag it starts with), intact,
    exactly once, from src."""
    seen = {}
    for d in got:
        tag = d.payload.split(b":", 1)[0].decode(errors="replace")
        if len(d.payload) <= len(tag) + 1:  # tiny payloads are a prefix of the tag
            tag = next((t for t, (n, h) in sent.items() if n == len(d.payload) and
                        sha(d.payload) == h and t not in seen), tag)
        assert tag in sent, f"unknown payload {d.payload[:40]!r} ({len(d.payload)} bytes)"
        assert tag not in seen, f"bundle {tag} delivered twice"
        n, h = sent[tag]
        assert len(d.payload) == n, f"bundle {tag}: {len(d.payload)} bytes, expected {n}"
        assert sha(d.payload) == h, f"bundle {tag}: payload corrupted"
        assert d.src == src, f"bundle {tag} from {d.src}, expected {src}"
        seen[tag] = d
    assert set(seen) == set(sent)
    # one sender: creation timestamps are unique
    stamps = [(d.ctime, d.seq) for d in got]
    assert len(set(stamps)) == len(stamps), "two deliveries share a creation timestamp"


def test_two_nodes_sizes(network):
    net = network(2)
    net.start()
    # then smaller ones again: both sides reuse the memfds of earlier
    # payloads, larger than the next one
    sizes = SIZES + [20_000_000, 4_000_000, 70_000, 1_000_000, 65537]
    with bp.Node(net.dir(1)) as n1, bp.Node(net.dir(2)) as n2:
        assert (n1.number, n2.number) == (1, 2)
        rx = n2.open("ipn:2.1")
        tx = n1.open("ipn:1.1")
        sent = send_sizes(tx, "ipn:2.1", sizes, "a")
        got = receive_exactly(rx, len(sizes), 90, "node 1 -> node 2")
        check_payloads(got, sent, "ipn:1.1")
        # and back the other way, on another pair of endpoints
        back_rx = n1.open("ipn:1.2")
        back = send_sizes(n2.open("ipn:2.2"), "ipn:1.2", SIZES[:6], "b")
        check_payloads(receive_exactly(back_rx, 6, 30, "node 2 -> node 1"), back, "ipn:2.2")
    c1, c2 = net.counters(1), net.counters(2)
    assert c1["bp_created"] == len(sizes) and c2["bp_created"] == 6
    assert c2["bp_malformed"] == 0 and c1["bp_malformed"] == 0
    assert c2["bp_duplicates"] == 0


def test_relay_sizes(network):
    net = network(3)
    net.start()
    sizes = SIZES + [20_000_000]
    with bp.Node(net.dir(1)) as n1, bp.Node(net.dir(3)) as n3:
        rx = n3.open("ipn:3.1")
        sent = send_sizes(n1.open("ipn:1.1"), "ipn:3.1", sizes, "r")
        check_payloads(receive_exactly(rx, len(sizes), 90, "node 1 -> 2 -> 3"), sent,
                       "ipn:1.1")
    relay = net.counters(2)
    assert relay["bp_received"] == len(sizes) and relay["bp_forwarded"] == len(sizes)
    assert relay["bp_delivered"] == 0 and relay["bp_malformed"] == 0
    assert relay["stored"] == 0, "the relay still holds bundles it forwarded"


def _big(network, size, seg, n):
    net = network(n, seg=seg)
    net.start()
    data = sized_payload(f"big-{size}", size)
    want = sha(data)
    dest = f"ipn:{n}.1"
    with bp.Node(net.dir(1)) as a, bp.Node(net.dir(n)) as b:
        rx = b.open(dest)
        t0 = time.monotonic()
        a.open("ipn:1.1").send(dest, data, lifetime_s=600)
        del data
        d = rx.receive(180_000)
        took = time.monotonic() - t0
        assert d is not None, f"the {size}-byte bundle did not arrive in 180 s"
        assert len(d.payload) == size and sha(d.payload) == want
        assert rx.receive(500) is None
    print(f"{size} bytes over {n - 1} hop(s), {seg}-byte segments: {took:.1f} s "
          f"({size * 8 / took / 1e6:.0f} Mbit/s)")


def test_100mb_bundle(network):
    """100 MB in one bundle with 64,000-byte segments (about 7 s)."""
    _big(network, 100_000_000, 64000, 2)


def test_100mb_bundle_small_segments_relay(network):
    """100 MB through a relay with ION's 1,400-byte segments (about 10 s)."""
    _big(network, 100_000_000, 1400, 3)


@pytest.mark.long
def test_many_100mb_bundles_relay(network):
    """Five 100 MB bundles in a row through a relay, 1,400-byte segments."""
    net = network(3)
    net.start()
    sizes = [100_000_000] * 4 + [100_000_001]
    with bp.Node(net.dir(1)) as n1, bp.Node(net.dir(3)) as n3:
        rx = n3.open("ipn:3.1")
        sent = send_sizes(n1.open("ipn:1.1"), "ipn:3.1", sizes, "L")
        check_payloads(receive_exactly(rx, len(sizes), 600, "5 x 100 MB"), sent, "ipn:1.1")


def run_tool(name, *args, timeout=120, **kw):
    return subprocess.run([os.path.join(bin_dir(), name), *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, **kw)


def test_files_bpsendfile(network, node_dir):
    """Files through the relay: bpsendfile on node 1, bprecvfile on node 3,
    one of them split into pieces; the received files match byte for byte."""
    net = network(3)
    net.start()
    src = os.path.join(node_dir, "files")
    dst = os.path.join(node_dir, "received")
    os.makedirs(src)
    os.makedirs(dst)
    files = {"empty.bin": 0, "one.bin": 1, "small.txt": 1000, "medium.bin": 3_000_000,
             "split.bin": 5_000_000}
    want = {name: write_file(os.path.join(src, name), n, name) for name, n in files.items()}
    recv = subprocess.Popen(
        [os.path.join(bin_dir(), "bprecvfile"), "ipn:3.2", "--node", net.dir(3), "--dir",
         dst, "--count", str(len(files)), "--timeout", "60", "--quiet"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for name in files:
            extra = ["--split", "1Mi"] if name == "split.bin" else []
            r = run_tool("bpsendfile", "ipn:1.2", "ipn:3.2", os.path.join(src, name),
                         "--node", net.dir(1), "--quiet", *extra)
            assert r.returncode == 0, f"bpsendfile {name}: {r.stdout}{r.stderr}"
        out, err = recv.communicate(timeout=120)
    finally:
        if recv.poll() is None:
            recv.kill()
            recv.communicate()
    assert recv.returncode == 0, f"bprecvfile exited {recv.returncode}:\n{out}{err}"
    assert sorted(os.listdir(dst)) == sorted(files)
    for name, n in files.items():
        path = os.path.join(dst, name)
        assert os.path.getsize(path) == n, name
        assert file_sha(path) == want[name], f"{name} differs from what was sent"


def test_send_file_api(network, node_dir):
    """Endpoint.send_file (bp_send_fd: the descriptor goes to ternd, not the
    bytes), whole and from an offset."""
    net = network(2)
    net.start()
    path = os.path.join(node_dir, "payload.bin")
    write_file(path, 2_500_000, "fd")
    with open(path, "rb") as f:
        whole = f.read()
    with bp.Node(net.dir(1)) as n1, bp.Node(net.dir(2)) as n2:
        rx = n2.open("ipn:2.1")
        tx = n1.open("ipn:1.1")
        ref = tx.send_file("ipn:2.1", path)
        tx.send_file("ipn:2.1", path, offset=1000, length=70_000)
        a, b = rx.receive(30_000), rx.receive(30_000)
        assert a is not None and b is not None
        assert rx.receive(300) is None
    assert (a.ctime, a.seq) == (ref.ctime, ref.seq)
    assert sha(a.payload) == sha(whole)
    assert b.payload == whole[1000:71_000]


def _send_tagged(net, src, eid, prefix, count, size):
    sent = {}
    with bp.Node(net.dir(src)) as n:
        tx = n.open(f"ipn:{src}.1")
        for i in range(count):
            data = sized_payload(f"{prefix}{i}", size(i))
            tx.send(eid, data)
            sent[f"{prefix}{i}"] = sha(data)
        tx.flush(30_000)
    return sent


def test_queue_then_read_across_app_restart(network):
    """Bundles for an endpoint with rule q wait in the node while no
    application has it open; a new process reads them all, once, in order.
    More come after that reader exited, the node itself restarts (the queue
    is in its durable store), and the next process gets exactly those."""
    net = network(2)
    net.start()
    eid = "ipn:2.1"
    first = _send_tagged(net, 1, eid, "q", 50, lambda i: 100 + 997 * i)
    assert net.wait_delivered(2, eid, 50, timeout=30) == 50
    got = read_in_child(net.dir(2), eid, 1000, timeout_ms=1500)
    tags = [g["tag"] for g in got]
    assert len(got) == 50, f"the reader got {len(got)} bundles, expected 50"
    assert tags == [f"q{i}" for i in range(50)], "queued bundles lost, doubled or reordered"
    assert all(g["sha"] == first[g["tag"]] and g["src"] == "ipn:1.1" for g in got)

    second = _send_tagged(net, 1, eid, "s", 10, lambda i: 70_000 + i)  # > inline limit
    net.wait_delivered(2, eid, 10, timeout=30)
    net.restart(2)
    later = read_in_child(net.dir(2), eid, 1000, timeout_ms=1500)
    assert sorted(g["tag"] for g in later) == sorted(second)
    assert all(g["sha"] == second[g["tag"]] for g in later)
    assert net.counters(2)["stored"] == 0


def test_partial_read_then_exit_keeps_the_rest(network):
    """An application reads part of the queue and exits; the next one gets
    exactly the rest (bundles libtern had taken ahead for the first one go
    back to the endpoint's queue)."""
    net = network(2)
    net.start()
    eid = "ipn:2.1"
    sent = _send_tagged(net, 1, eid, "p", 50, lambda i: 100 + 997 * i)
    net.wait_delivered(2, eid, 50, timeout=30)
    got = read_in_child(net.dir(2), eid, 30, timeout_ms=5000)
    assert len(got) == 30
    rest = read_in_child(net.dir(2), eid, 1000, timeout_ms=1500)
    assert len(rest) == 20, f"the second reader got {len(rest)} bundles, expected 20: first {[g['tag'] for g in got]} second {[g['tag'] for g in rest]}"
    tags = [g["tag"] for g in got + rest]
    assert sorted(tags) == sorted(sent)
    assert all(g["sha"] == sent[g["tag"]] for g in got + rest)
