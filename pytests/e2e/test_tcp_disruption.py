"""BP over TCPCLv4 between two real ternd processes in two network
namespaces joined by linkem's packet mode (root only): every IP packet of
the TCP connections crosses the emulated link, so TCP itself meets the
delay, the bit errors and the outage (tern.testing.TcpNetwork with netns=
and addrs=; docs/tcpcl.md, "Disruption over TCP").

- Delay and bit errors: one-way delays of 1.25 s and 5 s, each with BER 0,
  1e-6 and 1e-5 (linkem flips bits in the IP packets and delivers them: the
  receiving kernel's IP and TCP checksums drop most corrupted packets and
  TCP resends them). The three bit error rates of a delay run concurrently,
  each with its own namespaces, linkem and nodes.
- An outage mid-transfer (20 s; 60 s and 120 s with -m long) while a 3 MB
  bundle is half sent and a small bundle goes every half second.

Every bundle is checked end to end (SHA-256 of its payload, each delivered
exactly once, from the right source): TCP's 16-bit checksum misses some
multi-bit errors (two flips at the same bit position of two 16-bit words,
in opposite directions, cancel), and Tern's payload blocks carry no CRC,
so only an end-to-end check would see such a bundle."""
import datetime
import math
import os
import shutil
import threading
import time

import pytest

from e2ehelp import PacedSender, Receiver, check_bundles, in_netns, payload, sha
from tern import bp, linkem
from tern.testing import TcpNetwork, tcp_log_events

ADDRS = {1: "10.200.0.1", 2: "10.200.0.2"}
# TCPCLv4's keepalive as Tern offers it (stack/bp/src/tcp_cla.c): a session
# that receives nothing for twice this ends (SESS_TERM "idle timeout").
KEEPALIVE_S = 30
SETUP_FAILED = ("no TCPCL session within", "connection not established within")
IDLE = f"nothing received for {2 * KEEPALIVE_S} s"  # how ternd logs the idle timeout


@pytest.fixture
def packet_mode():
    why = linkem.packet_mode_unavailable()
    if why:
        pytest.skip(why)
    linkem.remove_stale_namespaces()


def log_times(lines):
    """The times (Unix seconds) of ternd.log lines (ISO UTC stamps)."""
    out = []
    for line in lines:
        stamp = line.split()[0].rstrip("Z")
        t = datetime.datetime.fromisoformat(stamp).replace(tzinfo=datetime.timezone.utc)
        out.append(t.timestamp())
    return out


class Pair:
    """Nodes 1 and 2 over TCPCLv4, each in its own namespace of one
    packet-mode linkem (a2b: what node 1 sends)."""

    def __init__(self, base, seed, **impair):
        self.base = base
        self.lk = linkem.Linkem("packet", workdir=os.path.join(base, "linkem"), seed=seed,
                                addr_a=ADDRS[1] + "/24", addr_b=ADDRS[2] + "/24",
                                **impair)
        self.net = None
        delay_s = float(impair.get("delay", 0)) / 1000
        self.lk.start()
        try:
            self.net = TcpNetwork(os.path.join(base, "net"), 2, flavour="tcp",
                                  netns={1: self.lk.netns[0], 2: self.lk.netns[1]},
                                  addrs=ADDRS, durable=False, endpoints=(1, 2),
                                  owlt=max(1, math.ceil(delay_s)))
            self.net.start()
        except BaseException:
            self.close()
            raise

    def ns(self, num):
        return self.lk.netns[num - 1]

    def clock(self):
        """Seconds on linkem's clock (its outages are given in it)."""
        return self.lk.clock()

    def events(self, num):
        return tcp_log_events(self.net.logs()[num])

    def stuck(self):
        """A text if node 1's outduct failed to set a session up three times
        and never connected (the test stops waiting), else None."""
        ev = self.events(1)
        failed = [ln for ln in ev["closed"] if any(s in ln for s in SETUP_FAILED)]
        if len(failed) >= 3 and not ev["connected"]:
            return ("node 1's TCPCLv4 session never came up; its attempts ended:\n  " +
                    "\n  ".join(failed))
        return None

    def close(self):
        """Stops nodes and linkem; returns the problems seen."""
        problems = []
        if self.net is not None:
            problems += self.net.shutdown()
        try:
            self.lk.stop(check=True)
        except Exception as e:  # noqa: BLE001 - reported by the caller
            problems.append(f"linkem: {str(e).splitlines()[0]}")
        return problems


def send_bundles(pair, num, src, dest, sizes, prefix, lifetime_s=3600):
    """Sends one bundle per size from src on node num (inside its namespace);
    returns {tag: sha}."""
    sent = {}
    with in_netns(pair.ns(num)), bp.Node(pair.net.dir(num)) as n:
        ep = n.open(src)
        for i, size in enumerate(sizes):
            tag = f"{prefix}{i}-{size}"
            data = payload(tag, size)
            ep.send(dest, data, lifetime_s=lifetime_s)
            sent[tag] = sha(data)
        ep.flush(60_000)
    return sent


def wait_threads(pair, threads, timeout):
    """Waits for the receiver threads, giving up early if the pair is stuck
    (stuck() says why) or a node died. Returns None or the reason."""
    deadline = time.monotonic() + timeout
    while any(t.is_alive() for t in threads):
        pair.net.check_alive()
        why = pair.stuck()
        if why:
            return why
        if time.monotonic() > deadline:
            return f"not done after {timeout} s"
        for t in threads:
            t.join(0.5)
    return None


# ------------------------------------------------------------------ delay x BER

# Bundle sizes per cell: TCP over an 11%-corrupted (1e-5, 1,500 B packets)
# path with a round trip of 2.5 s or 10 s moves a few kB/s, so the 1e-5
# cells carry less (still about 8 expected bit flips at 1.25 s).
SIZES = {
    (1250, 0): [1, 1000, 10_000, 100_000, 300_000],
    (1250, 1e-6): [1, 1000, 10_000, 100_000, 300_000],
    (1250, 1e-5): [1, 1000, 10_000, 30_000, 60_000],
    (5000, 0): [1, 1000, 10_000, 60_000],
    (5000, 1e-6): [1, 1000, 10_000, 60_000],
    (5000, 1e-5): [1, 1000, 10_000, 20_000],
}
BERS = [0, 1e-6, 1e-5]
# TCPCLv4 needs three round trips (TCP handshake, contact headers, SESS_INIT)
# from connect() to an established session: 30 s at 5 s one way, within the
# 60 s ternd allows (SETUP_MS in stack/bp/src/tcp_cla.c).
DELAYS = [
    pytest.param(1250, id="1.25s"),
    pytest.param(5000, id="5s"),
]


def run_cell(base, delay, ber, out):
    """One cell: a pair through linkem with delay and ber; sends SIZES one
    way and a 2 kB bundle back; fills out (a dict) with what happened."""
    sizes = SIZES[(delay, ber)]
    out.update(delay=delay, ber=ber, sizes=sizes)
    # the whole cell's budget: setup (3 round trips) plus slow transfer
    budget = 150 if delay < 2000 else 240
    pair = None
    try:
        pair = Pair(base, seed=int(delay + ber * 1e9) + 7, delay=delay, ber=ber)
        out["pair"] = pair
        rx = Receiver(pair.net.dir(2), "ipn:2.1", len(sizes), budget, netns=pair.ns(2))
        back = Receiver(pair.net.dir(1), "ipn:1.2", 1, budget, netns=pair.ns(1))
        t = time.monotonic()
        out["sent"] = send_bundles(pair, 1, "ipn:1.1", "ipn:2.1", sizes, "b")
        out["sent_back"] = send_bundles(pair, 2, "ipn:2.2", "ipn:1.2", [2000], "r")
        out["stuck"] = wait_threads(pair, [rx, back], budget)
        out["seconds"] = time.monotonic() - t
        out["rx"], out["back"] = rx, back
        out["link"] = pair.lk.stats(fresh=True)
        out["events"] = {n: pair.events(n) for n in (1, 2)}
        out["counters"] = {n: pair.net.counters(n) for n in (1, 2)}
    except Exception as e:  # noqa: BLE001 - reported by the test
        out["error"] = e
    finally:
        if pair is not None:
            out["tails"] = pair.net.log_tails(30) if pair.net else ""
            out["problems"] = pair.close()


@pytest.mark.parametrize("delay", DELAYS)
def test_delay_and_ber(packet_mode, node_dir, add_report, delay):
    cells = []
    for ber in BERS:
        out = {}
        th = threading.Thread(target=run_cell, daemon=True,
                              args=(os.path.join(node_dir, f"ber{ber:g}"), delay, ber, out))
        cells.append((th, out))
        th.start()
    for th, _ in cells:
        th.join(400)
    add_report(lambda: ("ternd logs of every cell",
                        "\n".join(f"=== BER {o.get('ber')}\n{o.get('tails', '')}"
                                  for _, o in cells)))
    for th, o in cells:
        assert not th.is_alive(), f"BER {o.get('ber')}: the cell did not finish"
    for _, o in cells:
        st = o.get("link", {})
        ev = o.get("events", {})
        print(f"delay {delay} ms BER {o['ber']:g}: {o.get('seconds', 0):.1f} s, "
              f"linkem a2b {st.get('a2b')}, b2a {st.get('b2a')}; node 1 connected "
              f"{len(ev.get(1, {}).get('connected', []))}x, closed "
              f"{len(ev.get(1, {}).get('closed', []))}x")
    for _, o in cells:
        label = f"delay {delay} ms, BER {o['ber']:g}"
        if "error" in o:
            raise AssertionError(f"{label}: {o['error']!r}") from o["error"]
        assert not o["stuck"], f"{label}: {o['stuck']}"
        for r in (o["rx"], o["back"]):
            assert r.error is None, f"{label}: {r.error!r}"
        # intact (SHA-256), each exactly once, from the right node, both ways
        check_bundles(o["rx"].got, o["sent"], "ipn:1.1")
        check_bundles(o["back"].got, o["sent_back"], "ipn:2.2")
        assert not o["problems"], f"{label}: {o['problems']}"
        # the link really carried the traffic, with the errors asked for
        st = o["link"]
        assert st["a2b"]["bytes_out"] >= sum(o["sizes"]), f"{label}: {st['a2b']}"
        corrupted = st["a2b"]["corrupted"] + st["b2a"]["corrupted"]
        if o["ber"] == 0:
            assert corrupted == 0, f"{label}: linkem corrupted {corrupted} packets"
        else:
            flips = 8 * o["ber"] * (st["a2b"]["bytes_in"] + st["b2a"]["bytes_in"])
            if flips >= 6:  # P(no corrupted packet) < 0.3%
                assert corrupted > 0, f"{label}: {flips:.1f} flips expected, none made"
        # TCPCLv4 came up on both outducts (more than once is allowed: a
        # corrupted packet in the handshake may cost an attempt)
        for n in (1, 2):
            assert o["events"][n]["connected"], f"{label}: node {n} never connected"


# ------------------------------------------------------------------ outage

T1 = 8            # the outage starts (seconds on linkem's clock)
RATE = 2_000_000  # bit/s each way
DELAY = 100       # ms one way
BIG = 3_000_000   # bytes: about 12 s at RATE, half sent at T1
LENGTHS = [pytest.param(20, id="20s"),
           pytest.param(60, id="60s", marks=pytest.mark.long),
           pytest.param(120, id="120s", marks=pytest.mark.long)]


@pytest.mark.parametrize("length", LENGTHS)
def test_outage_mid_transfer(packet_mode, node_dir, add_report, length):
    """What happens to the sessions: TCP itself rides out any outage (no
    TCP_USER_TIMEOUT or SO_KEEPALIVE on Tern's sockets, and the kernel's
    tcp_retries2 gives up only after about 15 minutes); TCPCLv4 ends a
    session that received nothing for 2 x 30 s (keepalive 30 s), logging
    "nothing received for 60 s". Each session's last received byte came
    before the outage began (linkem drops what is in flight then), and
    nothing arrives before the link is back, so:
    - a 20 s outage leaves both sessions (node 1's outduct carrying the
      data, node 2's idle one) up: TCP resends after the link returns, no
      reconnection;
    - one of 60 s or more ends every session by the time the link returns
      (at 60 s with the one-way delay, 100 ms, to spare); the outducts then
      reconnect by themselves (back-off up to 5 s; an attempt made while
      the link is still down gives up after 10 s) and resend every bundle
      not acknowledged, the 3 MB one whole."""
    t2 = T1 + length
    pair = Pair(os.path.join(node_dir, "p"), seed=length, delay=DELAY, rate=RATE,
                queue=100_000, outage=[(T1, t2)])
    add_report(lambda: ("ternd and linkem logs", pair.net.log_tails(60)))
    try:
        assert pair.clock() < 2, f"the nodes took {pair.clock():.1f} s to start"
        count = int((t2 + 4 - 1.5) / 0.5)
        rx = Receiver(pair.net.dir(2), "ipn:2.1", count, timeout=t2 + 150,
                      netns=pair.ns(2))
        big_rx = Receiver(pair.net.dir(2), "ipn:2.2", 1, timeout=t2 + 150,
                          netns=pair.ns(2))
        start = pair.lk.zero + 1.5
        pacer = PacedSender(pair.net.dir(1), "ipn:1.1", "ipn:2.1", count, 5000, 0.5, "p",
                            start=start, netns=pair.ns(1))
        time.sleep(max(0, pair.lk.zero + 2 - time.time()))
        with in_netns(pair.ns(1)), bp.Node(pair.net.dir(1)) as n:
            data = payload("big", BIG)
            n.open("ipn:1.2").send("ipn:2.2", data, lifetime_s=3600)
        big = {"big": sha(data)}
        time.sleep(max(0, pair.lk.zero + T1 + 1 - time.time()))
        during = pair.lk.stats(fresh=True)
        pacer.join(t2 + 30)
        assert pacer.error is None, pacer.error
        why = wait_threads(pair, [rx, big_rx], t2 + 150)
        assert why is None, why
        for r in (rx, big_rx):
            assert r.error is None, r.error
        done = pair.clock()
        st = pair.lk.stats(fresh=True)
        ev = {n: pair.events(n) for n in (1, 2)}
    finally:
        problems = pair.close()
    assert not problems, problems
    zero = pair.lk.zero
    check_bundles(rx.got, pacer.sent, "ipn:1.1")
    check_bundles(big_rx.got, big, "ipn:1.2")
    arrivals = sorted(t - zero for t in rx.arrivals().values())
    big_at = big_rx.got[0][3] - zero
    print(f"outage {T1}-{t2} s: 3 MB bundle at {big_at:.1f} s, all done at {done:.1f} s; "
          f"linkem {st}")
    for n in (1, 2):
        print(f"node {n}: " + "\n  ".join(["TCP events:"] + [
            f"{k}: {ln}" for k, lines in ev[n].items() for ln in lines]))

    # the outage happened mid-transfer: nothing arrived in it, the link
    # dropped what was sent into it, the big bundle was cut by it
    inside = [round(a, 2) for a in arrivals if T1 + 0.5 < a < t2 - 0.1]
    assert not inside, f"bundles arrived during the outage at {inside}"
    assert any(a < T1 for a in arrivals), "no bundle arrived before the outage"
    assert during["a2b"]["bytes_in"] > BIG // 4, \
        f"the 3 MB bundle had not got going when the link went down: {during['a2b']}"
    assert st["a2b"]["dropped_outage"] > 0, st["a2b"]
    assert big_at > t2, "the 3 MB bundle arrived before the outage ended: it was not cut"
    assert [a for a in arrivals if a >= t2 - 0.1], "nothing arrived after the outage"

    # the sessions: survived a short outage, broke and came back on a long one
    for n in (1, 2):
        conn = log_times(ev[n]["connected"])
        # this node's own outduct connections (not the peer's, accepted here)
        closed = log_times([ln for ln in ev[n]["closed"] if "connection to " in ln])
        assert conn and conn[0] - zero < T1, f"node {n} not connected before the outage"
        if 2 * KEEPALIVE_S > length:
            assert len(conn) == 1 and not ev[n]["closed"], \
                f"node {n}: a {length} s outage should leave the session up: {ev[n]}"
        else:
            assert any(IDLE in ln for ln in ev[n]["closed"]), \
                f"node {n}: a {length} s outage should end the sessions ('{IDLE}')"
            assert len(conn) >= 2, f"node {n} did not reconnect: {ev[n]}"
            assert conn[-1] > closed[-1], f"node {n}: last close after last connect"
            assert conn[-1] - zero > T1 + 2 * KEEPALIVE_S - 1


# ------------------------------------------------------------------ config only

def test_network_config_in_namespaces(node_dir):
    """What Network/TcpNetwork write for nodes in namespaces, without
    starting anything: two nodes apart, a third beside node 1 on loopback."""
    from tern.testing import Network, NodeStartError
    net = Network(os.path.join(node_dir, "ltp"), 3, edges=[(1, 2), (1, 3)],
                  netns={1: "nsA", 2: "nsB", 3: "nsA"}, addrs=ADDRS)
    rc1, rc2, rc3 = (net.rc_text(n) for n in (1, 2, 3))
    p = {n: net.nodes[n].port for n in (1, 2, 3)}
    assert f"s 'udplsi 10.200.0.1:{p[1]}'" in rc1
    assert f"'udplso 10.200.0.2:{p[2]}'" in rc1 and f"'udplso 127.0.0.1:{p[3]}'" in rc1
    assert f"'udplso 10.200.0.1:{p[1]}'" in rc2 and f"'udplso 10.200.0.1:{p[1]}'" in rc3
    assert f"s 'udplsi 127.0.0.1:{p[3]}'" in rc3
    assert net.ns_prefix(1) == ["ip", "netns", "exec", "nsA"] and net.ns_prefix(3)[-1] == "nsA"
    tcp = TcpNetwork(os.path.join(node_dir, "tcp"), 2, netns={1: "nsA", 2: "nsB"},
                     addrs=ADDRS)
    t1, t2 = tcp.tcp_ports[1], tcp.tcp_ports[2]
    assert f"a induct tcp 10.200.0.1:{t1} tcpcli" in tcp.rc_text(1)
    assert f"a outduct tcp 10.200.0.2:{t2} tcpclo" in tcp.rc_text(1)
    assert f"a plan 1 tcp/10.200.0.1:{t1}" in tcp.rc_text(2)
    plain = TcpNetwork(os.path.join(node_dir, "plain"), 2)
    assert plain.ns_prefix(1) == [] and f"tcp/127.0.0.1:{plain.tcp_ports[2]}" in \
        plain.rc_text(1)
    with pytest.raises(ValueError, match="packet mode"):
        Network(os.path.join(node_dir, "bad"), 2, netns={1: "nsA"},
                links={(1, 2): {"delay": 10}})
    with pytest.raises(ValueError, match=r"\[7\] are not nodes"):
        Network(os.path.join(node_dir, "bad2"), 2, addrs={7: "10.0.0.1"})
    if shutil.which("ip"):
        gone = Network(os.path.join(node_dir, "gone"), 2, netns={2: "tern-no-such-netns"})
        with pytest.raises(NodeStartError, match="tern-no-such-netns.*do not exist"):
            gone.start()
        assert not gone.running(1) and not gone.running(2)
