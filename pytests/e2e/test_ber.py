"""Real ternd nodes over LTP/UDP through linkem with bit errors: BER 0, 1e-6
and 1e-5 on 1,400-byte segments (1e-5 corrupts about one segment in nine;
linkem drops a corrupted datagram as a link-layer CRC would). LTP's repair
rounds deliver every bundle and file intact, and linkem's counters show the
errors happened, at the rate the BER implies."""
import math
import os

import pytest

from e2ehelp import (FileReceiver, Receiver, check_bundles, check_files, idle_link_stats,
                     p_corrupt, payload, send_file, sha, write_file)
from tern import bp
from tern.testing import ltp_counters


@pytest.mark.parametrize("ber", [0, 1e-6, 1e-5])
def test_bit_errors(network, node_dir, ber):
    net = network(2, links={(1, 2): {"ber": ber, "seed": 7}}, qtime=0.1)
    net.start()
    src = os.path.join(node_dir, "file.bin")
    fsha = write_file(src, 1_000_000, f"ber{ber}")
    files = FileReceiver(net.dir(2), "ipn:2.2", os.path.join(node_dir, "got"), 1, 120)
    count = 40
    rx = Receiver(net.dir(2), "ipn:2.1", count, timeout=120)
    sent = {}
    try:
        with bp.Node(net.dir(1)) as n1:
            tx = n1.open("ipn:1.1")
            for i in range(count):
                tag = f"e{i}"
                data = payload(tag, 50_000 + 17 * i)
                tx.send("ipn:2.1", data, lifetime_s=3600)
                sent[tag] = sha(data)
            tx.flush(60_000)
        send_file(net.dir(1), "ipn:1.2", "ipn:2.2", src)
        rx.join(120)
        assert rx.error is None, rx.error
        check_bundles(rx.got, sent, "ipn:1.1")
        files.wait(120)
        check_files(files.dst, {"file.bin": fsha})
    finally:
        files.kill()
    st = idle_link_stats(net, 1, 2, 5)
    a = st["a2b"]
    ltp = ltp_counters(net.status(1))
    print(f"BER {ber}: a2b {a['packets_in']} datagrams ({a['bytes_in']} bytes), "
          f"{a['corrupted']} corrupted; b2a {st['b2a']['corrupted']} of "
          f"{st['b2a']['packets_in']} corrupted; node 1 LTP {ltp}")
    for d in ("a2b", "b2a"):
        s = st[d]
        assert s["dropped_ber"] == s["corrupted"], s
        assert s["packets_out"] == s["packets_in"] - s["corrupted"], s
        assert s["dropped_loss"] == s["dropped_queue"] == s["dropped_outage"] == 0
    if ber == 0:
        assert a["corrupted"] == st["b2a"]["corrupted"] == 0
        assert ltp["retransmitted"] == 0
        return
    # a2b carries 1,400-byte data segments (and small report acks): about
    # 8 x BER x bytes flips, one per corrupted datagram at these rates
    flips = 8 * ber * a["bytes_in"]
    lo, hi = 0.85 * flips - 5 * math.sqrt(flips), flips + 5 * math.sqrt(flips)
    assert a["corrupted"] > 0, "no datagram was corrupted"
    assert lo < a["corrupted"] < hi, f"{a['corrupted']} corrupted, expected {lo:.0f}..{hi:.0f}"
    assert ltp["retransmitted"] > 0, "LTP repaired nothing"
    if ber == 1e-5:
        seg = p_corrupt(ber, 1400)
        assert 0.09 < seg < 0.12  # "about one segment in nine"
        share = a["corrupted"] / a["packets_in"]
        assert 0.6 * seg < share < 1.2 * seg, f"{share:.3f} of a2b datagrams corrupted"
