"""cfdpd over other networks than test_cfdpd.py's two LTP nodes: a
three-node relay (1 -> 2 -> 3) over LTP/UDP, where node 2 only forwards
bundles, and two nodes over TCPCLv4; class 1 and class 2, files of 0 B,
1 B, odd sizes and ~100 MB compared by SHA-256; every checksum type the
engine computes (cfdp_cksum.h) in a put, and a type it does not refused;
a bad cfdpd option and an unreachable entity give clear errors."""
import os
import time

import pytest

from tern.testing import TcpNetwork
from test_cfdpd import Cfdpd, put, sha_file, write_random

OPTS = ("--ack-timer", "1000", "--nak-timer", "1000", "--inactivity", "30000")
SIZES = (0, 1, 65_537, 1_000_003, 100_000_007)


def _entities(net, add_report, nodes):
    ds = {n: Cfdpd(net.dir(n), *OPTS) for n in nodes}
    for n, d in ds.items():
        add_report(lambda d=d, n=n: (f"cfdpd {n} log", d.tail(80)))
    return ds


@pytest.fixture
def relay(network, add_report):
    """Nodes 1 - 2 - 3 over LTP/UDP; cfdpd on 1 and 3 only, so every PDU
    crosses node 2 as a forwarded bundle."""
    net = network(3, seg=64000, qtime=0.01)
    net.start()
    ds = _entities(net, add_report, (1, 3))
    yield net, ds
    for d in ds.values():
        d.stop()


@pytest.fixture
def tcp_pair(network_class, node_dir, add_report, request):
    """Two nodes over TCPCLv4, each with its cfdpd."""
    net = TcpNetwork(os.path.join(node_dir, "tcp"), 2, flavour="tcp")
    request.addfinalizer(net.shutdown)
    add_report(lambda: ("ternd logs", net.log_tails(60)))
    net.start()
    ds = _entities(net, add_report, (1, 2))
    yield net, ds
    for d in ds.values():
        d.stop()


def _sizes(net, ds, src, dst, cls, tag):
    src_dir = os.path.join(net.dir(src), "cfdp")
    for size in SIZES:
        name = f"{tag}{cls}-{size}.bin"
        want = write_random(os.path.join(src_dir, name), size, name)
        t0 = time.monotonic()
        r, out = put(ds[src], os.path.join(src_dir, name), f"{dst}:{name}", "-c", str(cls))
        took = time.monotonic() - t0
        assert r.returncode == 0, f"{name}: {r.stdout}{r.stderr}\n{ds[src].tail()}"
        assert out["delivered"] is True and out["checksum_verified"] is True, out
        assert out["size"] == size, out
        got = os.path.join(net.dir(dst), "cfdp", name)
        assert os.path.getsize(got) == size
        assert sha_file(got) == want, f"{name}: SHA-256 differs"
        print(f"{tag} class {cls} {size} B in {took:.2f} s")
    st = ds[src].status()
    assert all(t["state"] == "finished" and t["condition"] == "no error" for t in st), st


@pytest.mark.parametrize("cls", [1, 2])
def test_relay_three_nodes_ltp(relay, cls):
    net, ds = relay
    _sizes(net, ds, 1, 3, cls, "relay")
    # the relay carried them: node 2 forwarded bundles and holds no file
    assert not os.path.exists(os.path.join(net.dir(2), "cfdp"))
    c = net.counters(2)
    fwd = c.get("bp_forwarded", c.get("forwarded"))
    if fwd is not None:
        assert fwd > 0, c


@pytest.mark.parametrize("cls", [1, 2])
def test_tcpclv4_two_nodes(tcp_pair, cls):
    net, ds = tcp_pair
    _sizes(net, ds, 1, 2, cls, "tcp")
    assert "connected" in open(os.path.join(net.dir(1), "ternd.log")).read()


def test_every_checksum_type(relay):
    """Each type cfdp_cksum.h computes, in a class 2 put across the relay; the
    receiver compares it (checksum_verified) and the bytes match. A
    corrupted-in-transit file cannot pass with the null type, so the
    SHA-256 is the real check there."""
    from tern import cfdp
    net, ds = relay
    src_dir = os.path.join(net.dir(1), "cfdp")
    types = (cfdp.CKSUM_MODULAR, cfdp.CKSUM_PROX1, cfdp.CKSUM_CRC32C, cfdp.CKSUM_CRC32,
             cfdp.CKSUM_NULL)
    for ck in types:
        for size in (3, 1_000_003):  # a short last word; several PDUs
            name = f"ck{ck}-{size}.bin"
            want = write_random(os.path.join(src_dir, name), size, name)
            r, out = put(ds[1], os.path.join(src_dir, name), f"3:{name}", "-k", str(ck))
            assert r.returncode == 0, f"type {ck}: {r.stdout}{r.stderr}\n{ds[1].tail()}"
            assert out["delivered"] and out["checksum_verified"], (ck, out)
            assert sha_file(os.path.join(net.dir(3), "cfdp", name)) == want, ck
    # a type the engine does not compute is refused before anything is sent
    r, out = put(ds[1], os.path.join(src_dir, "ck0-3.bin"), "3:bad.bin", "-k", "7")
    assert r.returncode != 0, (r.stdout, r.stderr)
    assert "checksum type 7 is not one Tern computes" in r.stderr, (r.stdout, r.stderr)
    assert not os.path.exists(os.path.join(net.dir(3), "cfdp", "bad.bin"))


def test_bad_option_and_unreachable_entity(relay, node_dir):
    import subprocess
    from tern.testing import bin_dir
    net, ds = relay
    for args, word in ((["--ack-timer", "x"], "--ack-timer"),
                       (["--no-such-option"], "no-such-option"),
                       (["--heap", "0"], "--heap")):
        r = subprocess.run([os.path.join(bin_dir(), "cfdpd"), net.dir(2)] + args,
                           capture_output=True, text=True, timeout=20)
        assert r.returncode == 2, (args, r.returncode, r.stderr)
        assert word in r.stderr, (args, r.stderr)
    # entity 9 has no node on this network: nothing ever answers. The ACK
    # limit cancels the put, the cancel's own EOF meets the limit again and
    # the transaction is abandoned; a waiting cfdpput ends with the reason
    # (it used to wait forever: cfdpd did not pass the abandonment on)
    src = os.path.join(net.dir(1), "cfdp", "u.bin")
    write_random(src, 1000, "u")
    t0 = time.monotonic()
    r = ds[1].tool("cfdpput", "--wait", src, "9:u.bin", check=False, timeout=40)
    took = time.monotonic() - t0
    print(f"unreachable: {took:.1f} s, exit {r.returncode}: {r.stderr.strip()}")
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "positive ACK limit reached" in r.stderr and "data incomplete" in r.stderr, \
        r.stderr
    assert "abandoned: positive ACK limit reached" in ds[1].tail(), ds[1].tail()
    (t,) = ds[1].status()
    assert t["state"] == "finished" and t["peer"] == 9, t
