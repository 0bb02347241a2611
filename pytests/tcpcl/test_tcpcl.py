"""BP over TCP between two real ternd processes on 127.0.0.1, for each
flavour (tcp = TCPCLv4, stcp, mtcp): bundles of 1 B to 5 MB delivered
intact (SHA-256, each exactly once), a receiving node killed and restarted
mid-transfer, a peer sending garbage dropped while the node keeps serving,
and a captured TCPCLv4 session dissected by tshark."""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "node"))

from nodehelp import sha, sized_payload  # noqa: E402
from tern import bp, errors  # noqa: E402

FLAVOURS = ["tcp", "stcp", "mtcp"]
SIZES = [1, 100, 1400, 65537, 1_000_000, 5_000_000]


def send_all(net, sizes, prefix, src=1, dst=2):
    sent = {}
    with bp.Node(net.nodes[src].dir) as n:
        ep = n.open(f"ipn:{src}.1")
        for i, size in enumerate(sizes):
            tag = f"{prefix}{i}-{size}"
            data = sized_payload(tag, size)
            ep.send(f"ipn:{dst}.1", data, lifetime_s=600)
            sent[tag] = (size, sha(data))
        ep.flush(60_000)
    return sent


def check(got, sent):
    """Each delivery is one sent bundle, intact; every one arrived once."""
    seen = set()
    for d in got:
        match = [t for t, (n, h) in sent.items()
                 if n == len(d.payload) and h == sha(d.payload) and t not in seen]
        assert match, f"a delivery of {len(d.payload)} bytes matches no bundle sent"
        seen.add(match[0])
    assert seen == set(sent), f"missing: {sorted(set(sent) - seen)}"


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_sizes_delivered_intact(network, flavour):
    net = network(2, flavour=flavour)
    net.start()
    assert net.tcp_port(2) == net.tcp_ports[2]
    sent = send_all(net, SIZES, "s")
    got = net.receive(2, "ipn:2.1", len(sent), timeout=120)
    check(got, sent)
    # and back the other way over node 2's own outduct
    sent = send_all(net, [1, 70_000], "r", src=2, dst=1)
    check(net.receive(1, "ipn:1.1", len(sent), timeout=60), sent)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_receiver_restarted_mid_transfer(network, flavour):
    """Node 2 is killed while bundles flow to it and started again: node 1
    reconnects by itself and everything arrives. TCPCLv4 acknowledges each
    bundle only once node 2 stored it durably, so bundles in flight at the
    kill are sent again. STCP and MTCP have no acknowledgements: a bundle the
    peer's TCP had acknowledged when the peer died is lost (as with ION), so
    for them the kill happens between batches."""
    net = network(2, flavour=flavour)
    net.start()
    if flavour == "tcp":
        first = send_all(net, [1_000_000] * 30, "a")
        net.kill(2)  # SIGKILL, with bundles still in flight (most runs)
    else:
        first = send_all(net, [200_000] * 10, "a")
        net.receive(2, "ipn:2.1", len(first), timeout=60)
        first = {}
        net.kill(2)
    # sent while node 2 is down: node 1 keeps them until it reconnects
    second = send_all(net, [300_000] * 5 + [1], "b")
    net.start([2])
    sent = dict(first, **second)
    got = net.receive(2, "ipn:2.1", len(sent), timeout=120)
    check(got, sent)


GARBAGE = {
    # a contact header, then an unknown message type
    "tcp": b"dtn!\x04\x00\x99garbage",
    # a zero length (ION's keepalive), then a length above the 128 MiB limit
    "stcp": b"\x00\x00\x00\x00\xff\xff\xff\xffgarbage",
    "mtcp": b"\xffgarbage",
}


def garbage_answer(port, garbage):
    """Sends garbage to port; returns what came back before the node closed."""
    bad = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        bad.sendall(garbage)
        bad.settimeout(10)
        data = b""
        while True:
            chunk = bad.recv(4096)
            if not chunk:
                return data
            data += chunk
    finally:
        bad.close()


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_garbage_peer_dropped(network, flavour):
    net = network(2, flavour=flavour)
    net.start()
    data = garbage_answer(net.tcp_port(2), GARBAGE[flavour])
    if flavour == "tcp":
        # our contact header, MSG_REJECT(type unknown, 0x99), SESS_TERM(unknown)
        assert data == b"dtn!\x04\x00" + b"\x06\x01\x99" + b"\x05\x00\x00", data
        net.wait_log(2, "unknown message type 0x99")
        # no contact header at all: closed without a word
        assert garbage_answer(net.tcp_port(2), b"GET / HTTP/1.0\r\n\r\n") == b""
    else:
        assert data == b""
    net.wait_log(2, f"dropping {flavour} peer")
    sent = send_all(net, [1000, 100_000], "g")
    check(net.receive(2, "ipn:2.1", len(sent), timeout=60), sent)


class Capture:
    """dumpcap on lo for the given TCP ports (skips the test if it cannot)."""

    def __init__(self, pcap, ports):
        if not shutil.which("tshark") or not shutil.which("dumpcap"):
            pytest.skip("tshark is not installed")
        self.pcap, self.ports = pcap, ports
        filt = " or ".join(f"tcp port {p}" for p in ports)
        self.proc = subprocess.Popen(["dumpcap", "-q", "-i", "lo", "-f", filt, "-w", pcap],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while not os.path.exists(pcap) and time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.skip("dumpcap cannot capture on lo: "
                            f"{self.proc.stderr.read().decode()[:200]}")
            time.sleep(0.05)
        time.sleep(0.3)  # the file appears just before capturing starts

    def stop(self):
        time.sleep(0.5)
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(10)

    def fields(self, field, mismatch_stream=None):
        """tshark's values of field per frame; fails on a malformed frame or
        an error-level expert note (except in mismatch_stream, a deliberate
        version mismatch, which tshark reports as an error)."""
        decode = []
        for p in self.ports:
            decode += ["-d", f"tcp.port=={p},tcpcl"]
        bad = "_ws.expert.severity >= error"
        if mismatch_stream is not None:
            bad = f"({bad} && tcp.stream != {mismatch_stream})"
        r = subprocess.run(["tshark", "-r", self.pcap, *decode, "-Y",
                            f"_ws.malformed || {bad}"],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and not r.stdout.strip(), \
            f"malformed frames:\n{r.stdout[:3000]}{r.stderr[-500:]}"
        r = subprocess.run(["tshark", "-r", self.pcap, *decode, "-T", "fields", "-e", field],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        types = set()
        for line in r.stdout.splitlines():
            for t in line.split(","):
                if t.strip():
                    types.add(int(t, 0))
        return types


def test_tshark_dissects_v4_session(network, node_dir):
    net = network(2, flavour="tcp")
    cap = Capture(os.path.join(node_dir, "v4.pcap"), [net.tcp_ports[2]])
    try:
        net.start()
        sent = send_all(net, [10, 5000, 300_000], "w")
        check(net.receive(2, "ipn:2.1", len(sent), timeout=60), sent)
    finally:
        cap.stop()
    types = cap.fields("tcpcl.v4.mhdr.type")
    # SESS_INIT, XFER_SEGMENT and XFER_ACK at least
    assert {1, 2, 7} <= types, f"TCPCLv4 message types seen: {sorted(types)}"


# ---- TCPCLv3 (RFC 7242) through a bridge written here -------------------------

def sdnv(v):
    out = [v & 0x7F]
    v >>= 7
    while v:
        out.append(0x80 | (v & 0x7F))
        v >>= 7
    return bytes(reversed(out))


class Stream:
    def __init__(self, sock):
        self.sock = sock
        self.buf = b""

    def read(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise EOFError(f"closed after {len(self.buf)} of {n} bytes")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def sdnv(self):
        v = 0
        while True:
            b = self.read(1)[0]
            v = (v << 7) | (b & 0x7F)
            if not b & 0x80:
                return v

    def rest(self):
        """Everything until the peer closes."""
        out = self.buf
        while True:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                return out
            out += chunk

    def v3_contact(self):
        head = self.read(8)
        assert head[:5] == b"dtn!\x03", head
        eid = self.read(self.sdnv()).decode()
        return head[5], int.from_bytes(head[6:8], "big"), eid


def v3_contact(flags, eid):
    return b"dtn!\x03" + bytes([flags]) + b"\x00\x00" + sdnv(len(eid)) + eid.encode()


def test_v3_fallback_and_induct(network):
    run_v3_bridge(network)


def test_tshark_dissects_v3_sessions(network, node_dir):
    """Both v3 sessions of the bridge (node 1's outduct after its fallback,
    node 2's induct) as tshark sees them."""
    run_v3_bridge(network, os.path.join(node_dir, "v3.pcap"))


def run_v3_bridge(network, pcap=None):
    """Node 1's tcp outduct meets a peer that answers TCPCLv4 with a v3
    contact header: it falls back to v3 and sends the bundle with v3
    segments, which this test acknowledges; the test then hands that bundle
    to node 2's tcp induct as a v3 peer (the version picked by the contact
    header) and gets node 2's final ACK_SEGMENT; node 2 delivers it."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    srv.settimeout(20)
    net = network(2, flavour="tcp", duct_ports={(1, 2): srv.getsockname()[1]})
    cap = None
    if pcap:
        # the bridge's port carries node 1's v4 attempt, then its v3 session
        cap = Capture(pcap, [net.tcp_ports[2], srv.getsockname()[1]])
    net.start()
    c1, _ = srv.accept()
    c1.settimeout(20)
    s1 = Stream(c1)
    assert s1.read(6) == b"dtn!\x04\x00"
    c1.sendall(v3_contact(0x01, "ipn:2.0"))
    # node 1 answers with SESS_TERM(version mismatch) and closes
    assert s1.rest()[:3] == b"\x05\x00\x02"
    c1.close()
    c2, _ = srv.accept()
    c2.settimeout(20)
    s2 = Stream(c2)
    flags, _keepalive, eid = s2.v3_contact()
    assert eid == "ipn:1.0" and flags & 0x01
    c2.sendall(v3_contact(0x05, "ipn:2.0"))
    sent = send_all(net, [150_000], "v")
    bundle = b""
    while True:
        hdr = s2.read(1)[0]
        assert hdr >> 4 == 1, f"expected DATA_SEGMENT, got header 0x{hdr:02x}"
        bundle += s2.read(s2.sdnv())
        c2.sendall(b"\x20" + sdnv(len(bundle)))
        if hdr & 0x01:
            break
    srv.close()
    c3 = socket.create_connection(("127.0.0.1", net.tcp_port(2)), timeout=20)
    s3 = Stream(c3)
    c3.sendall(v3_contact(0x01, "ipn:1.0"))
    flags, _keepalive, eid = s3.v3_contact()
    assert eid == "ipn:2.0"
    c3.sendall(b"\x13" + sdnv(len(bundle)) + bundle)
    assert s3.read(1) == b"\x20" and s3.sdnv() == len(bundle)
    check(net.receive(2, "ipn:2.1", 1, timeout=30), sent)
    c3.close()
    c2.close()
    if cap:
        cap.stop()
        # v3 message types (the high nibble): DATA_SEGMENT and ACK_SEGMENT
        # stream 0 is node 1's v4 attempt answered in v3: tshark flags that
        # contact header "Protocol version mismatch" (Error); nothing else may be
        types = cap.fields("tcpcl.pkt_type", mismatch_stream=0)
        assert {1, 2} <= types, f"TCPCLv3 message types seen: {sorted(types)}"


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_full_receiver_holds_the_sender_back(network, flavour):
    """Node 2's store (16 MiB) fills while nobody reads: it keeps the bundle
    it could not take and stops reading the connection (TCP then holds node
    1 back), and once the application reads, every bundle arrives intact —
    none dropped for want of room, none refused and sent again."""
    net = network(2, flavour=flavour, durable=False)
    with open(os.path.join(net.nodes[2].dir, "node2.ionconfig"), "w") as f:
        f.write("configFlags 1\nheapWords 2097152\n")
    net.start()
    sent = send_all(net, [1_000_000] * 40, "f")
    net.wait_log(2, "the store is full: not reading for now", timeout=60)
    got = net.receive(2, "ipn:2.1", len(sent), timeout=180)
    check(got, sent)
    net.wait_log(2, "the store has room again: reading", timeout=10)
    assert "peer refused a bundle" not in net.logs()[1]
    # tern status counts it: every bundle taken once, none refused, pauses seen
    line = next(ln for ln in net.status(2).splitlines() if ln.startswith("bp/tcp:"))
    m = re.search(r"bundles in (\d+) out \d+.*refused (\d+).*paused for a full store (\d+)",
                  line)
    assert m, line
    assert int(m.group(1)) == len(sent) and int(m.group(2)) == 0 and int(m.group(3)) >= 1, line


@pytest.mark.long
def test_idle_sessions_kept_alive(network):
    """Two nodes idle for 75 s (keepalive 30 s): each side's KEEPALIVE reaches
    the other in time, so no session ends for want of traffic and a bundle
    sent afterwards travels on the first connection."""
    net = network(2, flavour="tcp")
    net.start()
    sent = send_all(net, [1000], "k0")
    check(net.receive(2, "ipn:2.1", 1, timeout=30), sent)
    time.sleep(75)
    sent = send_all(net, [1000], "k1")
    check(net.receive(2, "ipn:2.1", 1, timeout=30), sent)
    for num, text in net.logs().items():
        assert "nothing received" not in text, f"node {num} ended an idle session"


# ---- TCPCLv4 peers of other implementations, played here --------------------

def v4_sess_init(node_id, keepalive=0, seg_mru=1 << 20, xfer_mru=1 << 26):
    nid = node_id.encode()
    return (b"\x07" + keepalive.to_bytes(2, "big") + seg_mru.to_bytes(8, "big") +
            xfer_mru.to_bytes(8, "big") + len(nid).to_bytes(2, "big") + nid +
            b"\x00\x00\x00\x00")


def read_v4_sess_init(s):
    """Reads a SESS_INIT from Stream s; returns its node ID."""
    head = s.read(21)
    assert head[0] == 0x07, f"expected SESS_INIT, got 0x{head[0]:02x}"
    nid = s.read(int.from_bytes(head[19:21], "big")).decode()
    s.read(int.from_bytes(s.read(4), "big"))
    return nid


class V4Peer:
    """A TCPCLv4 listener presenting node_id (as dtn7-rs presents
    dtn://node/): it takes the transfers a node's outduct sends and
    acknowledges each."""

    def __init__(self, node_id, can_tls=False, xfer_mru=1 << 26):
        self.node_id = node_id
        self.xfer_mru = xfer_mru
        self.flags = 0x01 if can_tls else 0x00
        self.srv = socket.socket()
        self.srv.bind(("127.0.0.1", 0))
        self.srv.listen(4)
        self.srv.settimeout(30)
        self.port = self.srv.getsockname()[1]
        self.conn = self.s = None

    def accept(self):
        self.conn, _ = self.srv.accept()
        self.conn.settimeout(30)
        self.s = Stream(self.conn)
        assert self.s.read(6) == b"dtn!\x04\x00"
        self.conn.sendall(b"dtn!\x04" + bytes([self.flags]))
        self.peer_id = read_v4_sess_init(self.s)
        self.conn.sendall(v4_sess_init(self.node_id, xfer_mru=self.xfer_mru))

    def bundles(self, count):
        """Takes count transfers, acknowledging every segment; returns them."""
        out, cur = [], b""
        while len(out) < count:
            head = self.s.read(10)
            assert head[0] == 0x01, f"expected XFER_SEGMENT, got 0x{head[0]:02x}"
            flags, tid = head[1], head[2:10]
            if flags & 0x02:
                self.s.read(int.from_bytes(self.s.read(4), "big"))
                cur = b""
            cur += self.s.read(int.from_bytes(self.s.read(8), "big"))
            self.conn.sendall(b"\x02" + bytes([flags]) + tid + len(cur).to_bytes(8, "big"))
            if flags & 0x01:
                out.append(cur)
        return out

    def close(self):
        for x in (self.conn, self.srv):
            if x:
                x.close()


def test_peer_offering_tls_gets_plain_session(network):
    """RFC 9174 4.3: TLS only when both contact headers set CAN_TLS. A peer
    that sets it meets Tern's flags 0 and SESS_INIT, and the session runs."""
    net = network(2, flavour="tcp")
    net.start()
    c = socket.create_connection(("127.0.0.1", net.tcp_port(2)), timeout=20)
    try:
        s = Stream(c)
        c.sendall(b"dtn!\x04\x01" + v4_sess_init("ipn:7.0"))
        assert s.read(6) == b"dtn!\x04\x00"
        assert read_v4_sess_init(s) == "ipn:2.0"
        c.sendall(b"\x04")  # a KEEPALIVE: the session is up
        time.sleep(0.3)
    finally:
        c.close()
    assert "TLS" not in net.logs()[2]
    assert "dropping tcp peer" not in net.logs()[2]


def test_dtn_node_id_peer_gets_its_bundles(network):
    """A peer presenting dtn://peer/ (dtn7-rs style) on node 1's outduct: the
    session stays up, node 1 routes dtn://peer/... through that outduct (no
    plan named that node) and ipn bundles planned for it still go; node 1's
    own node ID stays ipn:1.0."""
    peer = V4Peer("dtn://peer/")
    try:
        net = network(2, flavour="tcp", duct_ports={(1, 2): peer.port})
        net.start([1])
        peer.accept()
        assert peer.peer_id == "ipn:1.0"
        net.wait_log(1, "the peer is dtn://peer/, which no plan names")
        with bp.Node(net.nodes[1].dir) as n:
            ep = n.open("ipn:1.1")
            ep.send("dtn://peer/app", b"to a dtn node", lifetime_s=600)
            ep.send("ipn:2.1", b"to the ipn plan", lifetime_s=600)
            ep.flush(30_000)
        got = peer.bundles(2)
        assert any(b"//peer/app" in b and b"to a dtn node" in b for b in got), got
        assert any(b"to the ipn plan" in b for b in got), got
    finally:
        peer.close()


@pytest.mark.parametrize("node_id,why", [
    ("dtn:none", "dtn:none is the null endpoint, not a node ID"),
    ("dtn://peer/app", "dtn://<node>/<demux> names an endpoint, not a node"),
    ("ipn:2.1", "an ipn node ID has service number 0"),
])
def test_malformed_node_id_refused(network, node_id, why):
    peer = V4Peer(node_id)
    try:
        net = network(2, flavour="tcp", duct_ports={(1, 2): peer.port})
        net.start([1])
        peer.accept()
        # SESS_TERM(contact failure), then the connection closes
        assert peer.s.rest()[:3] == b"\x05\x00\x04"
        net.wait_log(1, f'peer node ID "{node_id}" refused: {why}')
    finally:
        peer.close()


def test_v3_multi_segment_acks_in_bundle_order(network):
    """ION -> Tern over TCPCLv3 as ION's tcpclo sends it: bundles above 64
    KiB cut into a 65,536-byte segment and the rest, pipelined, with
    acknowledgements but no refusals. Node 2 answers each bundle 65536, then
    its length, in bundle order (ION ties every acknowledgement to its
    oldest unacknowledged bundle), although each final one waits for its
    bundle's durable commit; and it delivers every bundle once."""
    peer = V4Peer("ipn:2.0")  # collects node 1's bundles to replay them
    try:
        net = network(2, flavour="tcp", duct_ports={(1, 2): peer.port})
        net.start()
        peer.accept()
        sent = send_all(net, [65_500 + i for i in range(40)], "m")
        bundles = peer.bundles(len(sent))
    finally:
        peer.close()
    assert all(len(b) > 65536 for b in bundles)
    c = socket.create_connection(("127.0.0.1", net.tcp_port(2)), timeout=30)
    try:
        s = Stream(c)
        c.sendall(v3_contact(0x01, "ipn:1.0"))  # ION's flags: acks only
        s.v3_contact()
        stream = b"".join(b"\x12" + sdnv(65536) + b[:65536] +
                          b"\x11" + sdnv(len(b) - 65536) + b[65536:] for b in bundles)
        c.sendall(stream)
        got = []
        for _ in range(2 * len(bundles)):
            hdr = s.read(1)[0]
            assert hdr == 0x20, f"expected ACK_SEGMENT, got 0x{hdr:02x} after {got}"
            got.append(s.sdnv())
        want = [x for b in bundles for x in (65536, len(b))]
        assert got == want, f"acknowledgements out of bundle order: {got[:12]}..."
    finally:
        c.close()
    check(net.receive(2, "ipn:2.1", len(sent), timeout=60), sent)


@pytest.mark.parametrize("flags", [0x01, 0x05], ids=["acks-only", "acks-refusals"])
def test_v3_every_bundle_answered_in_order(network, flags):
    """A TCPCLv3 peer pipelines a bundle, the same bundle again, 40 bytes
    that are no bundle, and another bundle: each gets its answer, in arrival
    order. The duplicate is acknowledged (node 2 has it: a refusal would
    only make the sender send it again, for ever); the garbage is refused
    when refusals were negotiated and acknowledged when not (as stock ION
    negotiates: its answer must still come, or every later one waits)."""
    peer = V4Peer("ipn:2.0")  # collects node 1's bundles to replay them
    try:
        net = network(2, flavour="tcp", duct_ports={(1, 2): peer.port})
        net.start()
        peer.accept()
        sent = send_all(net, [300, 500], "d")
        a, b = peer.bundles(len(sent))
    finally:
        peer.close()
    junk = bytes(range(0x40, 0x68))
    c = socket.create_connection(("127.0.0.1", net.tcp_port(2)), timeout=30)
    try:
        s = Stream(c)
        c.sendall(v3_contact(flags, "ipn:1.0"))
        s.v3_contact()
        c.sendall(b"".join(b"\x13" + sdnv(len(x)) + x for x in (a, a, junk, b)))
        got = []
        for _ in range(4):
            hdr = s.read(1)[0]
            if hdr >> 4 == 0x2:
                got.append(("ack", s.sdnv()))
            elif hdr >> 4 == 0x3:
                got.append(("refuse", hdr & 0x0F))
            else:
                raise AssertionError(f"unexpected message 0x{hdr:02x} after {got}")
        junk_answer = ("refuse", 2) if flags & 0x04 else ("ack", len(junk))
        want = [("ack", len(a)), ("ack", len(a)), junk_answer, ("ack", len(b))]
        assert got == want
    finally:
        c.close()
    check(net.receive(2, "ipn:2.1", len(sent), timeout=60), sent)


def primary_flags(bundle):
    """The bundle processing control flags of a BPv7 bundle's primary block
    (indefinite array, primary block array, version 7, flags)."""
    assert bundle[0] == 0x9F and bundle[1] & 0xE0 == 0x80 and bundle[2] == 0x07
    ai = bundle[3] & 0x1F
    if ai < 24:
        return ai
    n = {24: 1, 25: 2, 26: 4, 27: 8}[ai]
    return int.from_bytes(bundle[4:4 + n], "big")


def test_bundle_above_peer_transfer_mru_fragmented(network):
    """A TCPCLv4 peer whose SESS_INIT declares a transfer MRU of 20,000
    bytes: node 1's 50,000-byte bundle, queued before the session is up,
    goes out as fragments that each fit (it was deleted before); replayed
    into node 2, they are reassembled and delivered intact."""
    mru = 20_000
    peer = V4Peer("ipn:2.0", xfer_mru=mru)
    try:
        net = network(2, flavour="tcp", duct_ports={(1, 2): peer.port})
        net.start()
        sent = send_all(net, [50_000], "f")
        peer.accept()
        # payloads of at most 20,000 - 4,096 (room for the other blocks)
        frags = peer.bundles(4)
    finally:
        peer.close()
    assert all(len(f) <= mru for f in frags), [len(f) for f in frags]
    assert all(primary_flags(f) & 0x01 for f in frags), "not fragments"
    c = socket.create_connection(("127.0.0.1", net.tcp_port(2)), timeout=30)
    try:
        s = Stream(c)
        c.sendall(v3_contact(0x01, "ipn:1.0"))
        s.v3_contact()
        c.sendall(b"".join(b"\x13" + sdnv(len(f)) + f for f in frags))
        for f in frags:
            assert s.read(1)[0] == 0x20
            assert s.sdnv() == len(f)
    finally:
        c.close()
    check(net.receive(2, "ipn:2.1", len(sent), timeout=60), sent)


def test_unfragmentable_bundle_queued_before_session_told_to_application(network):
    """A 50,000-byte bundle that may not be fragmented is sent while the
    TCPCLv4 session is not up yet, so bp_send cannot know the peer's limit
    and accepts it. The session then declares a transfer MRU of 20,000: the
    bundle is deleted, and the sending application hears of it from its next
    call (status reports are off, so no report would tell it). Before, it
    was deleted with one warning in the log and the application heard
    nothing (issue 18, item 2)."""
    peer = V4Peer("ipn:2.0", xfer_mru=20_000)
    try:
        net = network(2, flavour="tcp", duct_ports={(1, 2): peer.port})
        net.start()
        with bp.Node(net.dir(1)) as n:
            ep = n.open("ipn:1.1")
            ep.send("ipn:2.1", b"x" * 50_000, nofragment=True, wait=True)  # accepted
            peer.accept()
            net.wait_log(1, "its application is told")
            with pytest.raises(bp.BpError) as e:
                ep.flush(timeout_ms=5000)
            assert e.value.rc == errors.ETOOBIG, e.value
            msg = str(e.value)
            assert "accepted, then deleted by ternd" in msg, msg
            assert "20000-byte transfer MRU of the TCPCL peer ipn:2.0" in msg, msg
            ep.flush(timeout_ms=5000)  # reported once
            ep.send("ipn:2.1", b"y" * 1000, wait=True)  # the duct still works
            assert b"y" * 1000 in peer.bundles(1)[0]
        assert "drops told 1" in net.status(1), net.status(1)
    finally:
        peer.close()


@pytest.mark.parametrize("reports", [True, False])
def test_unfragmentable_bundle_above_peer_mru_refused_at_send(network, reports):
    """Once the TCPCLv4 peer's session declared a transfer MRU of 20,000
    bytes, a 50,000-byte bundle that may not be fragmented is refused by
    bp_send itself (before, the send succeeded and the bundle was deleted
    with one warning: nobody heard of it), and its deletion report goes to
    report-to when 'm statusreports on' (counted as suppressed otherwise)."""
    peer = V4Peer("ipn:2.0", xfer_mru=20_000)
    try:
        net = network(2, flavour="tcp", duct_ports={(1, 2): peer.port})
        if reports:
            net.add_lines(1, "bpadmin", "m statusreports on")
        net.write()
        net.start()
        peer.accept()
        net.wait_log(1, f"outduct 127.0.0.1:{peer.port}: connected")
        with bp.Node(net.dir(1)) as n:
            ep, rpt = n.open("ipn:1.1"), n.open("ipn:1.2")
            with pytest.raises(bp.BpError) as e:
                ep.send("ipn:2.1", b"x" * 50_000, nofragment=True, wait=True,
                        report_flags=bp.DELETED_RPT, report_to="ipn:1.2")
            assert e.value.rc == errors.ETOOBIG, e.value
            assert "may not be fragmented" in str(e.value)
            ep.send("ipn:2.1", b"y" * 1000, wait=True)  # the duct still works
            assert b"y" * 1000 in peer.bundles(1)[0]
            report = rpt.receive(timeout_ms=3000 if reports else 500)
        log = net.logs()[1]
        assert ("bundle of 50" in log and "from ipn:1.1 to ipn:2.1 refused: it exceeds the "
                "20000-byte transfer MRU of the TCPCL peer ipn:2.0" in log), log[-2000:]
        if reports:
            assert report is not None and report.src == "ipn:1.0"
        else:
            assert report is None
            assert "asked for but not sent 1" in net.status(1)
    finally:
        peer.close()
