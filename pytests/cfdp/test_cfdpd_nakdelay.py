"""cfdpadmin's `m nakdelay` (Tern's) through a real cfdpd: over BP/LTP
with bit errors, LTP repairs blocks a round trip later, so file data PDUs
reach the receiver out of order but none is lost. With the engine's 50 ms
NAK delay the receiver NAKs those gaps and the sender sends the data a
second time; with a NAK delay longer than LTP's repairs it NAKs nothing and
nothing is resent (bench/cislunar's finding, docs/cislunar.md). linkem in
udp mode between the two LTP engines on 127.0.0.1: no root needed."""
import os

from test_cfdpd import Cfdpd, put, sha_file, write_random


def _transfer(net, ds, name, size):
    src = os.path.join(net.dir(1), "cfdp", name)
    want = write_random(src, size, name)
    r, out = put(ds[1], src, f"2:{name}", "-c", "2", timeout=300)
    assert r.returncode == 0, f"{r.stdout}{r.stderr}\n{ds[1].tail()}\n{ds[2].tail()}"
    assert out["delivered"] is True and out["checksum_verified"] is True, out
    assert sha_file(os.path.join(net.dir(2), "cfdp", name)) == want, "SHA-256 differs"
    return out


def test_nakdelay_keeps_the_receiver_from_nak_ing_what_ltp_repairs(network, add_report):
    # 1,400-byte LTP segments at BER 1e-5: one in nine is dropped by linkem,
    # so nearly every 64,000-byte PDU's block needs an LTP repair round
    net = network(2, seg=1400, qtime=0.01,
                  links={(1, 2): {"delay": 100, "ber": 1e-5, "seed": 11}})
    net.start()
    rc = os.path.join(net.dir(2), "nakdelay.cfdprc")
    with open(rc, "w") as f:
        f.write("1\nm nakdelay 60000\n")
    opts = ("--ack-timer", "5000", "--nak-timer", "5000", "--inactivity", "120000")
    ds = {1: Cfdpd(net.dir(1), *opts), 2: Cfdpd(net.dir(2), "--rc", rc, *opts)}
    for n, d in ds.items():
        add_report(lambda d=d, n=n: (f"cfdpd {n} log", d.tail(80)))
    try:
        log = ds[2].tail(200)
        assert "configuration from " + rc in log, log
        st0 = net.link_stats(1, 2)
        out = _transfer(net, ds, "late.bin", 3_000_017)
        st1 = net.link_stats(1, 2)
        # the errors happened, LTP repaired them, CFDP sent nothing twice
        assert st1["a2b"]["dropped_ber"] > st0["a2b"]["dropped_ber"], st1
        assert out["bytes_resent"] == 0, out

        # the same transfer with the engine's 50 ms: the gaps are NAKed and
        # data LTP was already repairing is sent again
        ds[2].stop()
        ds[2] = Cfdpd(net.dir(2), *opts)
        out2 = _transfer(net, ds, "early.bin", 3_000_017)
        print(f"resent with m nakdelay 60000: {out['bytes_resent']} B in {out['seconds']} s; "
              f"with 50 ms: {out2['bytes_resent']} B in {out2['seconds']} s")
        assert out2["bytes_resent"] > 0, out2
    finally:
        for d in ds.values():
            d.stop()
