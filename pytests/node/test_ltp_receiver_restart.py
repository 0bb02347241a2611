"""An LTP receiver killed between its first report and the retransmission
must not cost a block (issue 17 item 1, with real nodes).

Node 1 sends one 3,000-byte bundle to node 2 over LTP in 1,100-byte
segments. A proxy on the link drops the block's second data segment, so
node 2's report claims the first and the last; from that report on it holds
everything node 1 sends (the report's acknowledgement and the retransmitted
gap, a checkpoint naming that report's serial). Node 2 is killed with
SIGKILL and started again: its imports lived in memory only, so the new
engine knows neither the session nor the report. Then the proxy lets the
held segments go. Claiming only the gap would complete node 1's claimed set
for a block node 2 no longer holds; node 2 must cancel the session instead,
node 1 sends the bundle again, and it arrives exactly once. The C test on
the virtual clock is ltp_receiver_restart_never_completes_a_block_it_lost.
"""
import select
import socket
import threading
import time

from nodehelp import sha, sized_payload
from tern import bp
from tern.codec import sdnv_decode
from tern.testing import ltp_counters

REPORT, CANCEL_FROM_RECEIVER = 8, 14


def sdnv(b, i):
    """(value, index after it) of the SDNV at b[i] (tern.codec)."""
    v, n = sdnv_decode(b[i:i + 10])
    return v, i + n


def parse(seg):
    """(type, session number, fields) of an LTP segment (RFC 5326 3.1);
    fields: offset, length, cp (checkpoint?) and rpt_serial for data,
    rpt_serial and claims for reports."""
    kind = seg[0] & 0x0F
    _, i = sdnv(seg, 1)
    sess, i = sdnv(seg, i)
    n_hext = seg[i] >> 4
    i += 1
    for _ in range(n_hext):
        n, i = sdnv(seg, i + 1)
        i += n
    f = {}
    if kind <= 7:
        _, i = sdnv(seg, i)  # client service
        f["offset"], i = sdnv(seg, i)
        f["length"], i = sdnv(seg, i)
        f["cp"] = kind in (1, 2, 3)
        f["rpt_serial"] = 0
        if f["cp"]:
            _, i = sdnv(seg, i)
            f["rpt_serial"], i = sdnv(seg, i)
    elif kind == REPORT:
        f["rpt_serial"], i = sdnv(seg, i)
        _, i = sdnv(seg, i)  # checkpoint serial
        _, i = sdnv(seg, i)  # upper bound
        lower, i = sdnv(seg, i)
        n, i = sdnv(seg, i)
        claims = []
        for _ in range(min(n, 64)):
            off, i = sdnv(seg, i)
            ln, i = sdnv(seg, i)
            claims.append((lower + off, lower + off + ln))
        f["claims"] = claims
    return kind, sess, f


class Gate:
    """Forwards LTP segments a2b (node 1 to node 2) and b2a. Drops the first
    session's first non-checkpoint data segment past offset 0; once node 2
    has reported on that session, holds every a2b segment until release()."""

    def __init__(self, ports, to_b, to_a):
        self.socks = {}
        for d in ("a2b", "b2a"):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind(("127.0.0.1", ports[d]))
            self.socks[d] = s
        self.to = {"a2b": ("127.0.0.1", to_b), "b2a": ("127.0.0.1", to_a)}
        self.lock = threading.Lock()
        self.seen = []  # (direction, type, session, fields) of every segment
        self.first = None  # node 1's first session number
        self.dropped = None
        self.report = None  # node 2's first report on the first session
        self.holding = False
        self.held = []
        self.stop = False
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def send(self, d, seg):
        try:
            self.socks[d].sendto(seg, self.to[d])
        except OSError:
            pass  # node 2 is down: the segment is lost, as on a real link

    def on(self, d, seg):
        kind, sess, f = parse(seg)
        with self.lock:
            self.seen.append((d, kind, sess, f))
            if d == "a2b":
                if self.first is None and kind <= 7:
                    self.first = sess
                if (self.dropped is None and sess == self.first and kind <= 7 and
                        not f["cp"] and f["offset"] > 0):
                    self.dropped = f
                    return
                if self.holding:
                    self.held.append(seg)
                    return
            elif kind == REPORT and sess == self.first and self.report is None:
                self.report = f
                self.holding = True
        self.send(d, seg)

    def run(self):
        by_fd = {s.fileno(): d for d, s in self.socks.items()}
        while not self.stop:
            r, _, _ = select.select(list(self.socks.values()), [], [], 0.1)
            for s in r:
                self.on(by_fd[s.fileno()], s.recv(70000))

    def release(self):
        with self.lock:
            held, self.held, self.holding = self.held, [], False
        for seg in held:
            self.send("a2b", seg)
        return held

    def close(self):
        self.stop = True
        self.t.join(5)
        for s in self.socks.values():
            s.close()


def wait_for(cond, timeout, what):
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"no {what} in {timeout} s"
        time.sleep(0.02)


def test_ltp_receiver_killed_after_partial_claims_gets_the_block_again(network):
    net = network(2, links={(1, 2): {}}, seg=1100, agg_size=1)
    net.start_links = lambda timeout=15: None  # the Gate sits on that edge
    gate = Gate(net.link_ports[(1, 2)], net.nodes[2].port, net.nodes[1].port)
    try:
        net.start()
        data = sized_payload("restart", 3000)
        with bp.Node(net.dir(1)) as n1:
            n1.open("ipn:1.1").send("ipn:2.1", data)
        wait_for(lambda: gate.report is not None, 15, "report from node 2")
        d = gate.dropped
        claims = gate.report["claims"]
        assert len(claims) == 2 and claims[0] == (0, d["offset"]) and \
            claims[1][0] == d["offset"] + d["length"], (
                f"node 2's report claims {claims}, the gap is "
                f"[{d['offset']}, {d['offset'] + d['length']})")
        # the retransmission answering that report is held at the gate
        wait_for(lambda: any(k <= 7 and f["rpt_serial"] == gate.report["rpt_serial"]
                             for _, k, _, f in list(gate.seen)), 10,
                 "retransmitted checkpoint from node 1")
        net.kill(2)
        net.start([2])
        held = gate.release()
        assert held, "the gate held nothing"

        got = []
        with bp.Node(net.dir(2)) as n2:
            rx = n2.open("ipn:2.1")
            deadline = time.monotonic() + 15
            while not got and time.monotonic() < deadline:
                r = rx.receive(500)
                if r is not None:
                    got.append(sha(r.payload))
            # a second copy would follow at once from a second session
            quiet = time.monotonic() + 3
            while time.monotonic() < quiet:
                r = rx.receive(300)
                if r is not None:
                    got.append(sha(r.payload))
        st1 = ltp_counters(net.status(1))
        st2 = ltp_counters(net.status(2))
        assert got == [sha(data)], (
            f"node 2 got {len(got)} copies of the bundle (want exactly 1); "
            f"node 1 LTP {st1}, node 2 LTP {st2}")
        with gate.lock:
            seen = list(gate.seen)
        cancels = [s for dd, k, s, _ in seen if dd == "b2a" and k == CANCEL_FROM_RECEIVER]
        assert cancels == [gate.first], (
            f"node 2 cancelled sessions {cancels}; want the first ({gate.first}) once")
        again = {s for dd, k, s, _ in seen if dd == "a2b" and k <= 7 and s != gate.first}
        assert len(again) == 1, f"node 1 sent the block again in sessions {again}"
        assert st1.get("exports_cancelled") == 1 and st1.get("exports_done") == 1, (
            f"node 1 LTP: want the first export cancelled and the second done: {st1}")
        assert st2.get("imports_cancelled") == 1 and st2.get("imports_done") == 1, (
            f"restarted node 2 LTP: {st2}")
    finally:
        gate.close()
