"""A put's bundle priority on the wire, and kept across a kill -9 of cfdpd.

Two ternd nodes over LTP/UDP (one bundle per LTP block, so tshark
dissects each), each with its cfdpd, captured on lo. A non-standard
priority is ION's class-of-service extension block (type 193, CBOR
[flags, class, ordinal, ...]) in every bundle: cfdpput --priority expedited
must put class 2 in each of its PDUs' bundles, a standard put none at all,
bpcp -S 2 class 2 again.
Then a bulk put towards a stopped cfdpd 2: cfdpd 1 is killed -9 and
restarted, cfdpstatus shows the restored transaction as bulk, and the
PDUs it sends after the restart (EOF retransmissions, until cfdpd 2
comes back and the transfer completes) carry class 0."""
import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from tern import bp, cfdp
from tern.testing import bin_dir
from test_cfdpd import Cfdpd, put, sha_file, write_random

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "node"))
from nodehelp import Capture  # noqa: E402

OPTS = ("--ack-timer", "500", "--nak-timer", "1000", "--inactivity", "60000")
COS = "193"  # ION's class-of-service block


def cos_class(types, datas):
    """The class in a bundle's block 193 (None: no such block). tshark shows
    the data of blocks it does not decode as data.data, in block order:
    block 193 comes before the payload (the last block), so its bytes are
    the first."""
    if COS not in types.split(","):
        return None
    b = bytes.fromhex(datas.split(",")[0].replace(":", ""))
    # [flags, class, ordinal, ...]: an array head, flags 0, then the class
    assert b[0] >> 5 == 4 and b[1] == 0, f"block 193 is not [0, class, ...]: {b.hex()}"
    return b[2]


def status(d):
    r = d.tool("cfdpstatus", "--json")
    return {t["txn"]: t for t in json.loads(r.stdout)["transactions"]}


def test_priority_in_every_bundle_and_across_a_restart(network, node_dir, add_report):
    if not shutil.which("tshark"):
        pytest.skip("tshark is not installed (apt-get install tshark to check the wire)")
    net = network(2, seg=64000, qtime=0.01, agg_size=1)
    net.start()
    cap = Capture(node_dir, [net[1].port, net[2].port])
    why = cap.start()
    if why:
        pytest.skip(f"tshark cannot capture on lo here (capturing needs root): {why}")
    ds = {n: Cfdpd(net.dir(n), *OPTS) for n in (1, 2)}
    for n, x in ds.items():
        add_report(lambda x=x, n=n: (f"cfdpd {n} log", x.tail(80)))
    marks = {}
    try:
        a, b, c, d = (os.path.join(node_dir, f"{n}.bin") for n in "abcd")
        want = {n: write_random(p, 200_003, n) for n, p in zip("abcd", (a, b, c, d))}
        # 20,000-byte segments: Metadata, 11 file data PDUs and the EOF
        r, out = put(ds[1], a, "2:a.bin", "--priority", "expedited", "-s", "20000")
        assert r.returncode == 0 and out["delivered"], r.stdout + r.stderr
        assert out["priority"] == "expedited", out
        marks["a_end"] = time.time()
        a_out = out
        r, out = put(ds[1], b, "2:b.bin", "-s", "20000")
        assert r.returncode == 0 and out["delivered"] and out["priority"] == "standard", out
        marks["b_end"] = time.time()
        # ION's bpcp -S 2 is the same priority (its class of service)
        r = subprocess.run([os.path.join(bin_dir(), "bpcp"), "-n", net.dir(1), "-S", "2", d,
                            "2:d.bin"], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and "checksum verified" in r.stdout, r.stdout + r.stderr
        marks["d_end"] = time.time()

        # bulk, towards a cfdpd that is not running: the transaction waits
        # for its EOF's ACK; kill -9 the sender, restart it
        ds[2].stop()
        # a late Finished for the expedited put, when cfdpd 1 has let the
        # transaction go: its ACK still goes at the transaction's priority
        # (it went standard once, and flaked the bulk check below)
        marks["late0"] = time.time()
        seq = int(str(a_out["txn"]).split(".")[1])
        fin = cfdp.finished(cfdp.Header(src=1, dst=2, tsn=seq, direction=cfdp.TOWARD_SENDER))
        with bp.Node(net.dir(2)) as n2, n2.open("ipn:2.64") as sap:
            sap.send("ipn:1.65", fin)
            sap.flush(5000)
        time.sleep(0.5)
        marks["late1"] = time.time()
        r = ds[1].tool("cfdpput", "--no-wait", "--json", "-p", "bulk", "-s", "20000", c,
                       "2:c.bin")
        txn = json.loads(r.stdout)["txn"]
        assert status(ds[1])[txn]["priority"] == "bulk"
        time.sleep(1.0)  # its first PDUs are out
        ds[1].kill9()
        ds[1].start()
        marks["restart"] = time.time()
        st = status(ds[1])
        assert txn in st, f"{txn} was not restored: {st}"
        assert st[txn]["priority"] == "bulk", st[txn]
        assert "restored transaction " + txn in ds[1].tail(), ds[1].tail()
        time.sleep(1.5)  # EOF retransmissions, from the restarted cfdpd
        ds[2].start()
        deadline = time.monotonic() + 30
        while status(ds[1]).get(txn, {}).get("state", "finished") != "finished":
            assert time.monotonic() < deadline, status(ds[1])
            time.sleep(0.2)
        for n in "abcd":
            assert sha_file(os.path.join(net.dir(2), "cfdp", f"{n}.bin")) == want[n], n
    finally:
        cap.stop()
        for x in ds.values():
            x.stop()
    rows = cap.tshark("-Y", "bpv7.primary.version", "-T", "fields", "-E", "occurrence=a",
                      "-e", "frame.time_epoch", "-e", "bpv7.primary.src_uri", "-e",
                      "bpv7.primary.dst_uri", "-e", "bpv7.canonical.type_code", "-e",
                      "data.data")
    sent = []  # (time, class) of each bundle cfdpd 1 sent to cfdpd 2
    back = []  # classes of cfdpd 2's answers
    for ln in rows:
        f = ln.split("\t")
        if len(f) < 5:
            continue
        t, src, dst = float(f[0]), f[1], f[2]
        cls = cos_class(f[3], f[4])
        if src == "ipn:1.64" and dst == "ipn:2.65":
            sent.append((t, cls))
        elif src == "ipn:2.64" and dst == "ipn:1.65":
            back.append(cls)
    first = [c for t, c in sent if t <= marks["a_end"]]
    second = [c for t, c in sent if marks["a_end"] < t <= marks["b_end"]]
    third = [c for t, c in sent if marks["b_end"] < t <= marks["d_end"]]
    late = [c for t, c in sent if marks["late0"] < t <= marks["late1"]]
    after = [c for t, c in sent if t > marks["restart"]]
    print(f"bundles to ipn:2.65: {len(first)} with the expedited put, "
          f"{len(second)} with the standard one, {len(third)} with bpcp -S 2, "
          f"{len(after)} after the restart "
          f"(classes {sorted(set(after), key=str)}); {len(back)} answers")
    assert len(first) >= 13 and set(first) == {2}, first  # every one expedited
    assert len(second) >= 13 and set(second) == {None}, second  # standard: no block
    assert third and set(third) == {2}, third  # bpcp -S 2: expedited
    assert late == [2], late  # the late Finished's ACK, expedited as its put
    assert after and set(after) == {0}, after  # bulk, after kill -9 and restart
    assert back and set(back) == {None}, back  # the receiver answers at standard
