"""linkem's packet mode (root only): two network namespaces joined through
TUN devices. A ping between them shows the configured delay, TCP carries
a transfer intact (also under bit errors, which the kernels' checksums
catch), and no namespace is left behind however linkem ends."""
import os
import statistics
import subprocess
import sys

import pytest

from tern import linkem as lkmod

HERE = os.path.dirname(os.path.abspath(__file__))
NSTOOL = os.path.join(HERE, "nstool.py")
ADDR_B = "10.200.0.2"


def ping(lk, count=5, interval=0.2):
    r = lk.exec_in("a", sys.executable, NSTOOL, "ping", ADDR_B, count, interval, timeout=60)
    assert r.returncode == 0, r.stderr
    return [None if w == "lost" else float(w) for w in r.stdout.split()]


def tcp_transfer(lk, nbytes, seed, port=5001):
    srv = lk.popen_in("b", sys.executable, NSTOOL, "serve", port, stdout=subprocess.PIPE,
                      stderr=subprocess.PIPE, text=True)
    assert srv.stdout.readline().strip() == "listening", srv.stderr.read()
    r = lk.exec_in("a", sys.executable, NSTOOL, "send", ADDR_B, port, nbytes, seed,
                   timeout=180)
    assert r.returncode == 0, r.stderr
    want, got, n = r.stdout.split()
    srv.wait(30)
    return want, got, int(n)


def test_ping_shows_delay(linkem, packet_mode):
    """--delay 50: the round trip takes about 100 ms (one way each)."""
    lk = linkem("packet", delay=50)
    a, b = lk.netns
    assert a in lkmod.list_namespaces() and b in lkmod.list_namespaces()
    rtts = ping(lk, 6)
    assert None not in rtts, f"pings lost: {rtts}"
    rtts = rtts[1:]  # the first may wait for neighbour discovery on a real link
    assert 0.0995 < statistics.median(rtts) < 0.106, f"round trips {rtts}"
    assert all(0.0995 < x < 0.150 for x in rtts), f"round trips {rtts}"
    st = lk.stats(fresh=True)
    assert st["a2b"]["packets_out"] >= 6 and st["b2a"]["packets_out"] >= 6
    lk.stop()
    left = lkmod.list_namespaces()
    assert a not in left and b not in left, f"namespaces left after stop: {left}"


def test_asymmetric_delay(linkem, packet_mode):
    lk = linkem("packet", a2b_delay=80, b2a_delay=20)
    rtts = ping(lk, 4)[1:]
    assert 0.0995 < statistics.median(rtts) < 0.106, f"round trips {rtts}"


def test_tcp_transfer_intact(linkem, packet_mode):
    """2 MB over TCP from namespace a to b through 10 ms each way."""
    lk = linkem("packet", delay=10)
    want, got, n = tcp_transfer(lk, 2_000_000, "plain")
    assert n == 2_000_000 and got == want
    st = lk.stats(fresh=True)
    assert st["a2b"]["bytes_in"] > 2_000_000


def test_tcp_under_bit_errors(linkem, packet_mode):
    """BER 1e-6: IP packets with flipped bits are delivered (counted
    corrupted); the kernels' checksums drop them and TCP repairs, so the
    transfer still arrives intact."""
    lk = linkem("packet", delay=2, ber=1e-6, seed=3)
    want, got, n = tcp_transfer(lk, 3_000_000, "ber")
    assert n == 3_000_000 and got == want
    st = lk.stats(fresh=True)
    assert st["a2b"]["corrupted"] > 0, st
    assert st["a2b"]["dropped_ber"] == 0, "packet mode delivers corrupted packets"


def test_ber_drop_drops_corrupted_packets(linkem, packet_mode):
    """--ber-drop: a packet with a flipped bit is dropped (a link CRC, as
    PPP's FCS) instead of delivered: every corrupted packet is counted in
    dropped_ber, none reaches the other kernel, and TCP still carries the
    transfer intact by retransmitting."""
    lk = linkem("packet", delay=2, ber=1e-5, seed=5, extra_args=["--ber-drop"])
    want, got, n = tcp_transfer(lk, 2_000_000, "berdrop")
    assert n == 2_000_000 and got == want
    st = lk.stats(fresh=True)
    for d in ("a2b", "b2a"):
        assert st[d]["dropped_ber"] == st[d]["corrupted"], st
    assert st["a2b"]["corrupted"] > 20, st  # ~1,400 packets, each hit with p ~ 0.1
    a2b = st["a2b"]
    assert a2b["packets_out"] <= a2b["packets_in"] - a2b["dropped_ber"], st


def test_outage_in_packet_mode(linkem, packet_mode):
    """An outage from 1 s to 3 s: pings sent in it are lost and counted."""
    lk = linkem("packet", delay=5, outage=[(1.0, 3.0)])
    rtts = ping(lk, 20, 0.2)
    lost = [i for i, x in enumerate(rtts) if x is None]
    assert 6 <= len(lost) <= 12, rtts
    st = lk.stats(fresh=True)
    assert st["a2b"]["dropped_outage"] + st["b2a"]["dropped_outage"] >= len(lost)


def test_nothing_left_after_sigkill(linkem, packet_mode):
    """linkem killed with SIGKILL cannot clean up; the helper does."""
    lk = linkem("packet")
    a, b = lk.netns
    lk.kill()
    left = lkmod.list_namespaces()
    assert a not in left and b not in left


def test_stale_namespaces_of_dead_runs_are_removed(packet_mode):
    """A namespace named for a process that no longer exists (a test run
    killed with SIGKILL) is deleted by the next run's sweep."""
    dead = 1
    while os.path.exists(f"/proc/{dead}"):
        dead += 7919
    name = lkmod.netns_prefix(dead) + "1a"
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        assert name in lkmod.remove_stale_namespaces()
        assert name not in lkmod.list_namespaces()
    finally:
        lkmod.delete_namespace(name)


def test_skip_reason_is_clear():
    why = lkmod.packet_mode_unavailable()
    if os.geteuid() != 0:
        assert "root" in why
    elif not os.path.exists("/dev/net/tun"):
        assert "/dev/net/tun" in why
    else:
        assert why is None or "built" in why or "ip" in why


@pytest.fixture(autouse=True)
def _no_leftovers():
    yield
    if os.geteuid() == 0:
        mine = [n for n in lkmod.list_namespaces() if n.startswith(lkmod.netns_prefix())]
        assert not mine, f"namespaces left behind: {mine}"
