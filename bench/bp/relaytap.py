"""The latency a relay node adds to each bpping bundle, seen on the wire.

A packet socket (AF_PACKET, ETH_P_ALL) on the loopback interface receives a
copy of every datagram a node sends, with the kernel's timestamp of the
moment it was sent (SO_TIMESTAMPNS). Each bundle bpping sends (and bpecho
returns) crosses the relay twice: the request in from node 1 and out to
node 3, the reply in from node 3 and out to node 1. For each crossing

    added = egress - ingress

where ingress is the first datagram carrying the bundle to the relay and
egress the last distinct datagram carrying it away (over LTP a data
segment sent again for a lost report counts once, at its first sending).
Both timestamps are taken at the same point of the kernel, the sender's
transmit (the loopback device shows every datagram twice, as sent and as
received; the filter keeps the sent copy), so added covers the datagram's
delivery into the relay and all the relay does with it, and it cannot be
negative unless the matching is wrong.

Matching: bpping's payload (stack/client/bin/bptool.h) starts with the
magic "TBPP" (0x50504254 little-endian), a 32-bit run id and a 64-bit
sequence number, and bpecho returns it unchanged; the direction comes from
the primary block's destination and source EIDs (ipn:3.1 <- ipn:1.1 for a
request, the reverse for a reply), which the relay does not change. Over
the UDP CL a datagram is one bundle (first byte 0x9f, an indefinite CBOR
array); over LTP the bundle is the client data of a data segment (segment
type 0-7; reports, report acks and cancels are filtered out), and the
segment's session and offset say which sendings are the same data.

Needs root (CAP_NET_RAW) and nodes on 127.0.0.1; LoTap raises OSError
otherwise and the bench reports the figure as unavailable.
"""
import ctypes
import socket
import struct
import threading

ETH_P_ALL = 0x0003
SO_TIMESTAMPNS = 35  # SO_TIMESTAMPNS_OLD: struct timespec of longs (x86-64, arm64)
SO_ATTACH_FILTER = 26
SO_RCVBUFFORCE = 33
SOL_PACKET = 263
PACKET_STATISTICS = 6
PACKET_OUTGOING = 4
SNAP = 2048  # bytes kept per datagram: bpping's key sits in the first ~120
PING_MAGIC = struct.pack("<I", 0x50504254)


def _eids(dst, src):
    """CBOR of a primary block's destination and source ipn EIDs (node.1)."""
    return bytes([0x82, 0x02, 0x82, dst, 0x01, 0x82, 0x02, 0x82, src, 0x01])


REQUEST, REPLY = "request", "reply"


def _bpf(ports):
    """Classic BPF: IPv4 UDP datagrams to one of ports, outgoing copies only
    (the loopback device also delivers each one as incoming), whose first
    payload byte starts a bundle (0x9f) or an LTP data segment (0x00-0x07)."""
    ld, ldx, jmp, ret = 0x00, 0x01, 0x05, 0x06
    w, h, b = 0x00, 0x08, 0x10
    abs_, ind, msh = 0x20, 0x40, 0xa0
    jeq, jge, jset = 0x10, 0x30, 0x40
    prog = []

    def op(code, jt=0, jf=0, k=0):
        prog.append((code, jt, jf, k & 0xffffffff))

    # jump offsets are filled in relative to the DROP / ACCEPT at the end
    tail = []  # (index, field, target)
    op(ld | w | abs_, k=-0x1000 + 4)  # SKF_AD_PKTTYPE
    tail.append((len(prog), "jf", "drop"))
    op(jmp | jeq, k=PACKET_OUTGOING)
    op(ld | h | abs_, k=12)  # ethertype (loopback frames carry a zero MAC header)
    tail.append((len(prog), "jf", "drop"))
    op(jmp | jeq, k=0x0800)
    op(ld | b | abs_, k=23)  # IP protocol
    tail.append((len(prog), "jf", "drop"))
    op(jmp | jeq, k=17)
    op(ld | h | abs_, k=20)  # fragment offset: a later fragment has no UDP header
    tail.append((len(prog), "jt", "drop"))
    op(jmp | jset, k=0x1fff)
    op(ldx | b | msh, k=14)  # X = IP header length
    op(ld | h | ind, k=14 + 2)  # UDP destination port
    for p in ports:
        tail.append((len(prog), "jt", "first"))
        op(jmp | jeq, k=p)
    tail.append((len(prog), "ja", "drop"))
    op(jmp | 0x00)  # BPF_JA
    first = len(prog)
    op(ld | b | ind, k=14 + 8)  # first UDP payload byte
    tail.append((len(prog), "jt", "accept"))
    op(jmp | jeq, k=0x9f)
    tail.append((len(prog), "jt", "drop"))
    op(jmp | jge, k=0x08)
    accept = len(prog)
    op(ret, k=SNAP)
    drop = len(prog)
    op(ret, k=0)
    where = {"drop": drop, "accept": accept, "first": first}
    for i, field, target in tail:
        code, jt, jf, k = prog[i]
        off = where[target] - i - 1
        if field == "jt":
            jt = off
        elif field == "jf":
            jf = off
        else:
            k = off
        if not 0 <= off < 256 and field != "ja":
            raise ValueError("BPF jump too long (too many ports)")
        prog[i] = (code, jt, jf, k)
    return prog


class LoTap:
    """Captures what the nodes on ports send, between start() and stop()."""

    def __init__(self, ports, iface="lo"):
        # protocol 0 receives nothing until bind: the filter is in place first
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
        try:
            prog = _bpf(sorted(set(ports)))
            raw = b"".join(struct.pack("=HBBI", *ins) for ins in prog)
            self._filt = ctypes.create_string_buffer(raw, len(raw))
            fprog = struct.pack("=HxxxxxxQ", len(prog), ctypes.addressof(self._filt))
            s.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, fprog)
            s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
            try:
                s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 64 << 20)
            except OSError:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 << 20)
            s.bind((iface, ETH_P_ALL))
        except BaseException:
            s.close()
            raise
        self.sock = s
        self._stats()  # reading the statistics clears them
        self.records = []
        self._stop = threading.Event()
        self._thread = None
        self.cmsg = socket.CMSG_SPACE(16)

    def _stats(self):
        return struct.unpack("=II", self.sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))

    def _read(self, out):
        d, anc, _flags, _addr = self.sock.recvmsg(SNAP, self.cmsg)
        ts = None
        for level, typ, data in anc:
            if level == socket.SOL_SOCKET and typ == SO_TIMESTAMPNS and len(data) >= 16:
                sec, nsec = struct.unpack("=qq", data[:16])
                ts = sec * 1_000_000_000 + nsec
        out.append((ts, d))

    def _loop(self):
        out = self.records
        self.sock.settimeout(0.05)
        while not self._stop.is_set():
            try:
                self._read(out)
            except socket.timeout:
                pass
        self.sock.setblocking(False)
        while True:  # what was sent before stop() is already queued
            try:
                self._read(out)
            except (BlockingIOError, InterruptedError):
                break

    def start(self):
        # what the filter let in since the last run (a warm-up's bundles) is
        # not this run's
        self.sock.setblocking(False)
        while True:
            try:
                self.sock.recv(1)
            except (BlockingIOError, InterruptedError):
                break
        self.records = []
        self._stats()
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="lotap", daemon=True)
        self._thread.start()

    def stop(self):
        """Returns (records, {"captured": n, "dropped": n}); records are
        (timestamp ns, frame bytes) of every datagram the filter let in."""
        self._stop.set()
        self._thread.join()
        packets, drops = self._stats()
        return self.records, {"captured": packets, "dropped": drops}

    def close(self):
        self.sock.close()


def _sdnv(b, i):
    v = 0
    while True:
        if i >= len(b):
            raise ValueError("truncated SDNV")
        c = b[i]
        i += 1
        v = (v << 7) | (c & 0x7f)
        if not c & 0x80:
            return v, i


def _ltp_data_id(p):
    """(originator, session, offset) of an LTP data segment; None if p is not
    one (RFC 5326 3.1-3.2: control byte, session ID, extension counts and
    header extensions, then client service ID, offset, length)."""
    if not p or p[0] > 0x07:
        return None
    orig, i = _sdnv(p, 1)
    sess, i = _sdnv(p, i)
    nh = p[i] >> 4
    i += 1
    for _ in range(nh):
        i += 1  # tag
        ln, i = _sdnv(p, i)
        i += ln
    _csid, i = _sdnv(p, i)
    off, i = _sdnv(p, i)
    return orig, sess, off


def crossings(records, relay_port, toward, cl):
    """Per bundle and direction, the relay's ingress and egress times.

    records: from LoTap.stop() while bpping ran over the relay; relay_port:
    the relay's UDP port (its induct or LTP link service); toward: {REQUEST:
    node 3's port, REPLY: node 1's port} (where the relay sends each
    direction); cl: "udp" or "ltp". Returns ({(run id, seq): {REQUEST: (in
    ns, out ns, copies out), REPLY: ...}}, problems): problems counts
    datagrams that could not be placed."""
    req_pat, rep_pat = _eids(3, 1), _eids(1, 3)
    first_in, outs = {}, {}
    problems = {"no_key": 0, "no_direction": 0, "wrong_port": 0, "not_data": 0}
    for ts, f in records:
        ihl = (f[14] & 0x0f) * 4
        u = 14 + ihl
        sport, dport = struct.unpack(">HH", f[u:u + 4])
        p = f[u + 8:]
        k = p.find(PING_MAGIC)
        if k < 0 or len(p) < k + 16:
            problems["no_key"] += 1
            continue
        key = (p[k + 4:k + 8], struct.unpack("<Q", p[k + 8:k + 16])[0])
        hdr = p[:k]
        isreq, isrep = req_pat in hdr, rep_pat in hdr
        if isreq == isrep:
            problems["no_direction"] += 1
            continue
        d = REQUEST if isreq else REPLY
        if cl == "ltp":
            sid = _ltp_data_id(p)
            if sid is None:
                problems["not_data"] += 1
                continue
        else:
            sid = None
        if dport == relay_port:
            prev = first_in.get((key, d))
            if prev is None or ts < prev:
                first_in[(key, d)] = ts
        elif dport == toward[d]:
            o = outs.setdefault((key, d), {})
            if sid is None:  # UDP CL: every datagram is a sending of its own
                o[len(o)] = ts
            elif sid not in o or ts < o[sid]:  # LTP: a segment sent again counts once
                o[sid] = ts
        else:
            problems["wrong_port"] += 1
    out = {}
    for (key, d), t_in in first_in.items():
        o = outs.get((key, d))
        if not o:
            continue
        out.setdefault(key, {})[d] = (t_in, max(o.values()), len(o))
    return out, problems


def pct(xs, q):
    """Nearest-rank percentile."""
    s = sorted(xs)
    k = max(1, -(-q * len(s) // 100))
    return s[int(k) - 1]


def distribution(xs):
    """Median, percentiles, min and max of xs (microseconds), or None."""
    if not xs:
        return None
    s = sorted(xs)
    n = len(s)
    med = s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2
    return {"n": n, "median": round(med, 1), "p99": round(pct(s, 99), 1),
            "min": round(s[0], 1), "max": round(s[-1], 1),
            "p5": round(pct(s, 5), 1), "p25": round(pct(s, 25), 1),
            "p75": round(pct(s, 75), 1), "p95": round(pct(s, 95), 1)}


def added_latency(records, relay_port, toward, cl, expect):
    """The relay's added latency per bundle from one bpping run of expect
    round trips: {request, reply, round_trip: distribution (us)} and the
    raw per-round-trip values. Raises ValueError if a crossing came out
    negative (the matching would be wrong) or no round trip matched."""
    per, problems = crossings(records, relay_port, toward, cl)
    if per:  # the run's id: any other id is a stray bpping's
        ids = {}
        for (rid, _s) in per:
            ids[rid] = ids.get(rid, 0) + 1
        rid = max(ids, key=ids.get)
        per = {k: v for k, v in per.items() if k[0] == rid}
    req, rep, rt, resent = [], [], [], 0
    for (_rid, seq), v in sorted(per.items(), key=lambda kv: kv[0][1]):
        if REQUEST not in v or REPLY not in v:
            continue
        a = (v[REQUEST][1] - v[REQUEST][0]) / 1000.0
        b = (v[REPLY][1] - v[REPLY][0]) / 1000.0
        if a < 0 or b < 0:
            raise ValueError(f"seq {seq}: negative added latency ({a:.1f} us request, "
                             f"{b:.1f} us reply): the datagrams were matched wrongly")
        resent += (v[REQUEST][2] > 1) + (v[REPLY][2] > 1)
        req.append(a)
        rep.append(b)
        rt.append(a + b)
    if not rt:
        raise ValueError(f"no round trip matched in {len(records)} datagrams "
                         f"({problems})")
    return {"matched": len(rt), "expected": expect, "resent_crossings": resent,
            "unplaced_datagrams": problems,
            "request": distribution(req), "reply": distribution(rep),
            "round_trip": distribution(rt), "values_round_trip": [round(x, 1) for x in rt],
            "values_request": [round(x, 1) for x in req],
            "values_reply": [round(x, 1) for x in rep]}
