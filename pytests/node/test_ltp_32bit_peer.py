"""Tern among peers that keep LTP session numbers in 32 bits (ION 4.1.3).

ION reads a session number with an SDNV reader that truncates to 32 bits and
answers with that number modulo 2^32. A proxy on the LTP link between a relay
(node 2) and node 3 does the same to every segment, both ways, so node 3
behaves as ION would: the relay's sessions must still complete (no cancel,
no second copy at node 3) and it must report each bundle forwarded over LTP.
"""
import select
import socket
import threading
import time

from nodehelp import sha, sized_payload
from tern import bp
from tern.codec import sdnv_decode, sdnv_encode
from tern.testing import ltp_counters


def sdnv_at(b, i):
    """(value, index after it) of the SDNV at b[i] (tern.codec)."""
    v, n = sdnv_decode(b[i:i + 10])
    return v, i + n


class Truncator:
    """Forwards LTP segments a2b and b2a, session numbers cut to 32 bits."""

    def __init__(self, ports, to_b, to_a):
        self.socks = {}
        for d, port in (("a2b", ports["a2b"]), ("b2a", ports["b2a"])):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
            s.bind(("127.0.0.1", port))
            self.socks[d] = s
        self.to = {"a2b": ("127.0.0.1", to_b), "b2a": ("127.0.0.1", to_a)}
        self.segments = {"a2b": 0, "b2a": 0}
        self.cut = {"a2b": 0, "b2a": 0}  # session numbers that were >= 2^32
        self.stop = False
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def rewrite(self, d, seg):
        _, i = sdnv_at(seg, 1)
        sess, j = sdnv_at(seg, i)
        self.segments[d] += 1
        if sess >> 32:
            self.cut[d] += 1
        return seg[:i] + sdnv_encode(sess & 0xFFFFFFFF) + seg[j:]

    def run(self):
        by_fd = {s.fileno(): d for d, s in self.socks.items()}
        while not self.stop:
            r, _, _ = select.select(list(self.socks.values()), [], [], 0.1)
            for s in r:
                d = by_fd[s.fileno()]
                seg = s.recv(70000)
                self.socks[d].sendto(self.rewrite(d, seg), self.to[d])

    def close(self):
        self.stop = True
        self.t.join(5)
        for s in self.socks.values():
            s.close()


def reports_by_kind(payloads):
    from tern.codec import cbor_loads
    out = {"forwarded": {}, "delivered": {}}
    for src, data in payloads:
        rec = cbor_loads(data)
        assert isinstance(rec, list) and rec[0] == 1, f"not a status report: {rec!r}"
        info = rec[1][0]
        seq = tuple(rec[1][3])  # (creation time, sequence number)
        if info[1][0]:
            out["forwarded"].setdefault(src, set()).add(seq)
        if info[2][0]:
            out["delivered"].setdefault(src, set()).add(seq)
    return out


def test_relay_to_a_32bit_ltp_peer_delivers_once_and_reports_forwarded(network):
    n = 20
    net = network(3, links={(2, 3): {}}, qtime=0.05, agg_size=1)
    net.start_links = lambda timeout=15: None  # the Truncator sits on that edge
    tr = Truncator(net.link_ports[(2, 3)], net.nodes[3].port, net.nodes[2].port)
    for k in (2, 3):  # reports are off unless a node's bpadmin says otherwise
        net.add_lines(k, "bpadmin", "m statusreports on")
    net.write()
    try:
        net.start()
        sent = {}
        with bp.Node(net.dir(1)) as n1, bp.Node(net.dir(3)) as n3:
            rpt = n1.open("ipn:1.2")
            rx = n3.open("ipn:3.1")
            tx = n1.open("ipn:1.1")
            for i in range(n):
                data = sized_payload(f"b{i}", 10_000)
                tx.send("ipn:3.1", data, report_flags=bp.FORWARDED_RPT | bp.DELIVERED_RPT,
                        report_to="ipn:1.2")
                sent[sha(data)] = 0
            got = []
            deadline = time.monotonic() + 30
            while len(got) < n and time.monotonic() < deadline:
                d = rx.receive(500)
                if d is not None:
                    got.append(sha(d.payload))
            # more copies would come after the relay's sessions time out
            # (about 10 s: 5 retries of a 2.1 s timer) and their bundles go again
            quiet = time.monotonic() + 12
            while time.monotonic() < quiet:
                d = rx.receive(500)
                if d is not None:
                    got.append(sha(d.payload))
            reports = []
            while True:
                d = rpt.receive(200)
                if d is None:
                    break
                reports.append((d.src, d.payload))
        for h in got:
            assert h in sent, "a bundle node 1 never sent arrived"
            sent[h] += 1
        assert len(got) >= n, f"{len(got)} of {n} bundles arrived at node 3"
        assert sorted(sent.values()) == [1] * n, (
            f"copies per bundle at node 3: {sorted(sent.values())} (a relay must never "
            f"multiply deliveries)")
        st = ltp_counters(net.status(2))
        assert st.get("exports_cancelled") == 0, f"relay LTP: {st}"
        r = reports_by_kind(reports)
        fwd = r["forwarded"].get("ipn:2.0", set())
        dlv = r["delivered"].get("ipn:3.0", set())
        assert len(fwd) == n, f"forwarded reports from the relay for {len(fwd)} of {n}"
        assert len(dlv) == n, f"delivered reports from node 3 for {len(dlv)} of {n}"
        assert tr.segments["a2b"] > 0 and tr.segments["b2a"] > 0
        assert tr.cut["a2b"] == 0, (
            f"the relay sent {tr.cut['a2b']} segments with session numbers >= 2^32")
    finally:
        tr.close()
