"""linkem's TCP relay: delay and rate on a byte stream, nothing moving during
an outage and everything arriving after it, and --reset-on-outage."""
import socket
import time

from lkhelp import REC_SIZE, TcpSink, median, parse_records, pattern, record


def connect(lk):
    c = socket.create_connection(("127.0.0.1", lk.listen_port), timeout=10)
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return c


def wait_for(cond, timeout=20, step=0.02):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(step)
    return cond()


def tcp_link(linkem, sink, **kw):
    return linkem("tcp", listen="127.0.0.1:0", target=f"127.0.0.1:{sink.port}", **kw)


def test_delay_on_a_stream(linkem):
    """delay 150 ms: records written every 20 ms arrive 150 ms later (median
    within 5 ms), in order and intact; the answer direction is delayed too."""
    sink = TcpSink()
    try:
        lk = tcp_link(linkem, sink, delay=150)
        c = connect(lk)
        n = 100
        for i in range(n):
            c.sendall(record(i))
            time.sleep(0.02)
        assert wait_for(lambda: sink.conns and len(sink.conns[0]["data"]) >= n * REC_SIZE)
        conn = sink.conns[0]
        recs = parse_records(conn["data"])
        assert [r[0] for r in recs] == list(range(n)) and all(r[2] for r in recs)
        delays = [sink.arrival_of(conn, (i + 1) * REC_SIZE) - recs[i][1] for i in range(n)]
        assert abs(median(delays) - 0.150) < 0.005, f"median {median(delays):.4f} s"
        assert min(delays) > 0.148
        # server -> client is b2a, delayed as well
        t = time.time()
        conn["sock"].sendall(b"pong")
        c.settimeout(5)
        assert c.recv(16) == b"pong"
        assert time.time() - t > 0.145
        c.close()
        st = lk.stats(fresh=True)
        assert st["a2b"]["bytes_in"] == st["a2b"]["bytes_out"] == n * REC_SIZE
        assert st["b2a"]["bytes_out"] == 4
        assert st["a2b"]["connections"] == 1
    finally:
        sink.close()


def test_rate_on_a_stream(linkem):
    """rate 1 Mbit/s: 250,000 bytes take 2 s (within 5 %) and arrive intact."""
    sink = TcpSink()
    try:
        lk = tcp_link(linkem, sink, rate=1_000_000)
        c = connect(lk)
        data = pattern(7, 250_000)
        t0 = time.time()
        c.sendall(data)
        assert wait_for(lambda: sink.conns and len(sink.conns[0]["data"]) >= len(data))
        conn = sink.conns[0]
        took = conn["reads"][-1][1] - t0
        first = conn["reads"][0]
        # measure from the first read to the last, over the bytes between
        span = conn["reads"][-1][1] - first[1]
        bps = (len(data) - first[0]) * 8 / span
        assert abs(bps - 1e6) / 1e6 < 0.05, f"{bps / 1e6:.3f} Mbit/s ({took:.2f} s in all)"
        assert bytes(conn["data"]) == data
        c.close()
    finally:
        sink.close()


def test_outage_stops_and_resumes(linkem):
    """An outage from 1.0 s to 2.0 s: a record written every 10 ms; nothing
    arrives during the outage, everything written during it arrives after it
    (in order, intact, no connection reset), and the counters add up."""
    sink = TcpSink()
    try:
        lk = tcp_link(linkem, sink, outage=[(1.0, 2.0)])
        c = connect(lk)
        if lk.clock() < 0.5:
            time.sleep(0.5 - lk.clock())
        n = 0
        while lk.clock() < 2.6:
            c.sendall(record(n))
            n += 1
            time.sleep(0.01)
        assert wait_for(lambda: sink.conns and len(sink.conns[0]["data"]) >= n * REC_SIZE)
        conn = sink.conns[0]
        recs = parse_records(conn["data"])
        assert [r[0] for r in recs] == list(range(n)) and all(r[2] for r in recs)
        during = [round(t - lk.zero, 4) for _, t in conn["reads"]
                  if 1.005 < t - lk.zero < 1.995]
        assert not during, f"bytes moved during the outage at {during[:5]}"
        sent_in = [i for i, r in enumerate(recs) if 1.01 < r[1] - lk.zero < 1.99]
        assert len(sent_in) > 50
        for i in sent_in:
            at = sink.arrival_of(conn, (i + 1) * REC_SIZE) - lk.zero
            assert at >= 1.995, f"record {i} sent during the outage arrived at {at:.3f}"
        assert sink.arrival_of(conn, n * REC_SIZE) - lk.zero < 2.9, "did not resume"
        assert conn["error"] is None
        c.close()
        st = lk.stats(fresh=True)
        assert st["a2b"]["bytes_in"] == st["a2b"]["bytes_out"] == n * REC_SIZE
        assert st["a2b"]["resets"] == 0
    finally:
        sink.close()


def test_reset_on_outage(linkem):
    """--reset-on-outage: the connection is reset (RST) when the outage at
    1.0 s starts; a new connection after the outage works."""
    sink = TcpSink()
    try:
        lk = tcp_link(linkem, sink, outage=[(1.0, 1.5)], reset_on_outage=True)
        c = connect(lk)
        c.sendall(record(0))
        assert wait_for(lambda: sink.conns and len(sink.conns[0]["data"]) >= REC_SIZE)
        c.settimeout(3)
        err = None
        try:
            got = c.recv(100)
            if got == b"":
                err = "closed without a reset"
        except ConnectionResetError as e:
            err = e
        assert isinstance(err, ConnectionResetError), f"expected a reset, got {err!r}"
        at = lk.clock()
        assert 0.99 < at < 1.3, f"reset at {at:.3f} s of linkem's clock"
        assert wait_for(lambda: sink.conns[0]["error"] or sink.conns[0]["closed"])
        assert "Reset" in (sink.conns[0]["error"] or ""), sink.conns[0]
        c.close()
        if lk.clock() < 1.6:
            time.sleep(1.6 - lk.clock())
        c2 = connect(lk)
        c2.sendall(record(1))
        assert wait_for(lambda: len(sink.conns) == 2 and len(sink.conns[1]["data"]) >= REC_SIZE)
        assert parse_records(sink.conns[1]["data"])[0][0] == 1
        c2.close()
        st = lk.stats(fresh=True)
        assert st["a2b"]["resets"] >= 1 and st["a2b"]["connections"] == 2
    finally:
        sink.close()
