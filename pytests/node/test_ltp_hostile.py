"""Hostile LTP datagrams at a real ternd (issue 18): the node refuses them,
says so once in its log, keeps delivering bundles, and stops on SIGTERM."""
import re
import signal
import socket
import time

from nodehelp import sized_payload
from tern import bp

# Issue 18 item 1: a red checkpoint/end-of-block segment from engine 1 (a
# configured peer) with offset 2^63 - 1 and length 10. The old engine's
# import buffer doubled until its size wrapped to 0 and looped for ever:
# 100 % CPU, no more service, SIGTERM ignored.
ITEM1 = bytes.fromhex("0301b893420001ffffffffffffffff7f0a010078787878787878787878")


def sdnv(v):
    out = [v & 0x7F]
    v >>= 7
    while v:
        out.append(0x80 | (v & 0x7F))
        v >>= 7
    return bytes(reversed(out))


def data_segment(session, offset, length, engine=1, seg_type=3):
    """A red data segment (type 3: checkpoint, end of block) of length 'x'
    bytes, with any offset (even past what a block can have)."""
    head = bytes([seg_type]) + sdnv(engine) + sdnv(session) + b"\x00"
    body = sdnv(1) + sdnv(offset) + sdnv(length)
    if seg_type in (1, 2, 3):
        body += sdnv(1) + sdnv(0)
    return head + body + b"x" * min(length, 1000)


def test_ltp_item1_datagram_does_not_stop_the_node(network):
    net = network(2)
    net.start()
    port = net[2].port
    hostile = [ITEM1, ITEM1,
               data_segment(12345, (1 << 63) - 1, 10),        # the same, another session
               data_segment(12346, (1 << 64) - 5, 10),        # offset + length past 2^64
               data_segment(12347, (256 << 20) - 5, 10),      # past the 256 MiB max block
               data_segment(12348, 1 << 40, 10, seg_type=7)]  # green, far out
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        for d in hostile:
            s.sendto(d, ("127.0.0.1", port))
    finally:
        s.close()
    # still serving: bundles both ways, through the engine that got it
    with bp.Node(net.dir(1)) as n1, bp.Node(net.dir(2)) as n2:
        rx2, rx1 = n2.open("ipn:2.1"), n1.open("ipn:1.1")
        for i in range(3):
            data = sized_payload(f"after-{i}", 20000)
            rx1.send("ipn:2.1", data)
            d = rx2.receive(15_000)
            assert d is not None, "no bundle arrived after the hostile datagrams"
            assert d.payload == data and d.src == "ipn:1.1"
        rx2.send("ipn:1.1", b"back")
        d = rx1.receive(15_000)
        assert d is not None and d.payload == b"back"
    log = net.wait_log(2, "reaches past the largest block this span takes", timeout=10)
    assert log.count("reaches past the largest block") == 1, "said more than once"
    # the operator sees the refusals counted in 'tern status' (issue 18)
    st = net.status(2)
    m = re.search(r"oversized segments (\d+)", st)
    assert m and int(m.group(1)) >= 4, st
    assert "import bytes held 0" in st, st
    # and it stops when asked
    t0 = time.monotonic()
    net.kill(2, signal.SIGTERM, timeout=10)
    took = time.monotonic() - t0
    assert took < 10, f"SIGTERM took {took:.1f} s"
