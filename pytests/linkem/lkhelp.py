"""Traffic for the linkem tests: numbered, timestamped datagrams and stream
records, receivers that note the kernel's arrival time, and statistics.

A datagram is  seq (u32) | send time (f64, Unix seconds) | pattern  where
the pattern is a function of seq, so a receiver can tell a damaged payload
from an intact one. Arrival times come from the kernel (SO_TIMESTAMPNS), so
a busy Python thread does not add to the measured delay.
"""
import math
import socket
import statistics
import struct
import threading
import time

HEAD = struct.Struct("!Id")
SO_TIMESTAMPNS = 35  # Linux (asm-generic); Python's socket module lacks it
TS = struct.Struct("@qq")


def pattern(seq, n):
    """n bytes that depend on seq."""
    if n <= 0:
        return b""
    unit = struct.pack("!I", (seq * 2654435761) & 0xFFFFFFFF) + bytes([seq & 0xFF])
    return (unit * (n // len(unit) + 1))[:n]


def datagram(seq, size):
    """A datagram of size bytes (at least the 12-byte head) numbered seq."""
    size = max(size, HEAD.size)
    return HEAD.pack(seq, time.time()) + pattern(seq, size - HEAD.size)


class Arrival:
    __slots__ = ("seq", "sent", "at", "size", "intact")

    def __init__(self, seq, sent, at, size, intact):
        self.seq, self.sent, self.at, self.size, self.intact = seq, sent, at, size, intact

    @property
    def delay(self):
        return self.at - self.sent


class Peer:
    """A UDP socket on 127.0.0.1 with a thread that records every datagram
    that arrives (Arrival list in .got)."""

    def __init__(self, rcvbuf=8 << 20):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, rcvbuf)
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
            self.kernel_ts = True
        except OSError:
            self.kernel_ts = False
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.1)
        self.port = self.sock.getsockname()[1]
        self.got = []
        self.sources = set()
        self._stop = False
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self):
        while not self._stop:
            try:
                data, anc, _, addr = self.sock.recvmsg(70000, socket.CMSG_SPACE(TS.size))
            except socket.timeout:
                continue
            except OSError:
                return
            at = None
            for level, kind, payload in anc:
                if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                    sec, nsec = TS.unpack(payload[:TS.size])
                    at = sec + nsec / 1e9
            if at is None:
                at = time.time()
            self.sources.add(addr)
            if len(data) < HEAD.size:
                self.got.append(Arrival(-1, at, at, len(data), False))
                continue
            seq, sent = HEAD.unpack_from(data)
            intact = data[HEAD.size:] == pattern(seq, len(data) - HEAD.size)
            self.got.append(Arrival(seq, sent, at, len(data), intact))

    def send(self, port, seq, size):
        """Sends datagram seq; returns (time before, time after) the send."""
        d = datagram(seq, size)
        self.sock.sendto(d, ("127.0.0.1", port))
        return HEAD.unpack_from(d)[1], time.time()

    def wait_quiet(self, count=None, quiet=0.5, timeout=30):
        """Waits until count datagrams came (if given) and then none for
        quiet seconds; returns how many came."""
        deadline = time.monotonic() + timeout
        last_n, last_t = -1, time.monotonic()
        while time.monotonic() < deadline:
            n = len(self.got)
            if n != last_n:
                last_n, last_t = n, time.monotonic()
            elif (count is None or n >= count) and time.monotonic() - last_t >= quiet:
                break
            time.sleep(0.02)
        return len(self.got)

    def close(self):
        self._stop = True
        self._t.join(2)
        self.sock.close()


def send_paced(peer, port, n, size, interval=0.0, batch=20, first=0, times=None):
    """Sends datagrams first..first+n-1 to port, one every interval seconds
    (absolute schedule), or in batches with a short pause when interval is
    0 (fast, without overrunning the receivers). times: a list to which
    (time before, time after) each datagram's send is appended."""
    t0 = time.perf_counter()
    for i in range(n):
        if interval:
            wait = t0 + i * interval - time.perf_counter()
            if wait > 0:
                time.sleep(wait)
        elif i and i % batch == 0:
            time.sleep(0.001)
        t = peer.send(port, first + i, size)
        if times is not None:
            times.append(t)


def udp_link(make_linkem, **kw):
    """A udp linkem between two Peers: a sends to lk.a2b_port and b gets
    it; b sends to lk.b2a_port and a gets it. Returns (lk, a, b)."""
    a, b = Peer(), Peer()
    lk = make_linkem("udp", a2b=("127.0.0.1:0", f"127.0.0.1:{b.port}"),
                     b2a=("127.0.0.1:0", f"127.0.0.1:{a.port}"), **kw)
    lk._peers = (a, b)
    return lk, a, b


def sigma_band(n, p, k=5.0):
    """(low, high): n trials of probability p, within k standard deviations."""
    mean = n * p
    sd = math.sqrt(n * p * (1 - p))
    return mean - k * sd, mean + k * sd


def p_corrupt(ber, nbytes):
    """Probability that a packet of nbytes has at least one flipped bit."""
    return -math.expm1(nbytes * 8 * math.log1p(-ber))


def median(xs):
    return statistics.median(xs)


# ------------------------------------------------------------------ tcp
REC = struct.Struct("!Id")  # seq, send time
REC_SIZE = 64


def record(seq):
    return REC.pack(seq, time.time()) + pattern(seq, REC_SIZE - REC.size)


class TcpSink:
    """A TCP server on 127.0.0.1: accepts connections and, per connection,
    records (bytes so far, arrival time) for each read, and the raw bytes.
    .conns: list of dicts {"data": bytearray, "reads": [(total, t)], "error": str}."""

    def __init__(self):
        self.srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.srv.bind(("127.0.0.1", 0))
        self.srv.listen(16)
        self.srv.settimeout(0.1)
        self.port = self.srv.getsockname()[1]
        self.conns = []
        self._stop = False
        self._threads = []
        self._t = threading.Thread(target=self._accept, daemon=True)
        self._t.start()

    def _accept(self):
        while not self._stop:
            try:
                c, _ = self.srv.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            st = {"data": bytearray(), "reads": [], "error": None, "closed": False,
                  "sock": c}
            self.conns.append(st)
            t = threading.Thread(target=self._read, args=(c, st), daemon=True)
            t.start()
            self._threads.append(t)

    def _read(self, c, st):
        c.settimeout(0.1)
        while not self._stop:
            try:
                b = c.recv(1 << 16)
            except socket.timeout:
                continue
            except OSError as e:
                st["error"] = f"{type(e).__name__}: {e}"
                break
            if not b:
                st["closed"] = True
                break
            st["data"] += b
            st["reads"].append((len(st["data"]), time.time()))
        c.close()

    def arrival_of(self, conn, end_offset):
        """When the byte ending at end_offset of conn arrived."""
        for total, t in conn["reads"]:
            if total >= end_offset:
                return t
        return None

    def close(self):
        self._stop = True
        self._t.join(2)
        for t in self._threads:
            t.join(2)
        self.srv.close()


def parse_records(data):
    """[(seq, sent, intact)] from a record stream."""
    out = []
    for off in range(0, len(data) - len(data) % REC_SIZE, REC_SIZE):
        seq, sent = REC.unpack_from(data, off)
        body = bytes(data[off + REC.size:off + REC_SIZE])
        out.append((seq, sent, body == pattern(seq, REC_SIZE - REC.size)))
    return out
