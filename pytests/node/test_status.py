"""What 'tern status' says about segments a node refused: malformed LTP
segments and segments from engines it has no span for, counted, each with
the last one's cause and sender."""
import re
import socket
import time


def ltp_line(status):
    for line in status.splitlines():
        if line.startswith("ltp: engine"):
            return line
    raise AssertionError(f"no ltp line in:\n{status}")


def test_refused_ltp_segments_counted_with_their_cause(network):
    net = network(1)
    net.start()
    before = ltp_line(net.status(1))
    assert "malformed 0" in before and "from unknown engines 0" in before, before
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    me = s.getsockname()[1]
    try:
        # a control byte of LTP version 15: nothing decodes it
        s.sendto(b"\xf0\x01\x02\x00", ("127.0.0.1", net[1].port))
        # cut short after the session ID
        s.sendto(b"\x00\x02", ("127.0.0.1", net[1].port))
        # a well-formed red data segment of engine 99's session 1: no span
        s.sendto(bytes([0x00, 99, 0x01, 0x00, 0x01, 0x00, 0x05]) + b"hello",
                 ("127.0.0.1", net[1].port))
    finally:
        s.close()
    deadline = time.monotonic() + 10
    while True:
        status = net.status(1)
        line = ltp_line(status)
        if "malformed 2" in line and "from unknown engines 1" in line:
            break
        assert time.monotonic() < deadline, status
        time.sleep(0.05)
    m = re.search(r"^  last malformed segment: (.*)$", status, re.M)
    assert m, status
    assert f"2 bytes from 127.0.0.1:{me}" in m.group(1), m.group(1)
    assert "truncated" in m.group(1), m.group(1)
    m = re.search(r"^  last from an unknown engine: (.*)$", status, re.M)
    assert m, status
    assert (f"12 bytes from 127.0.0.1:{me}" in m.group(1) and
            "engine 99" in m.group(1)), m.group(1)
    assert net.running(1)
