"""A file above 4 GiB through cfdpd: the large-file flag on the wire and the
file delivered intact.

cfdpd sets the large-file flag only for files above 2^32 - 1 bytes (the
engine decides from the size; there is no option to force it for small
files), so even the default suite's check needs such a file: a sparse one
(truncate), 4 GiB + 4,099 bytes with data at both ends. In the default suite
node 2 runs no cfdpd: this test reads ipn:2.65 itself, decodes the first
PDUs cfdpd 1 sends with tern.cfdp (Metadata and File Data must carry the
flag and 64-bit sizes and offsets), then cancels the put. The whole
transfer, class 2 into a real cfdpd, compared by SHA-256, runs under -m long:
75-85 s of data on the 2-core VM, 105-150 s in all with the hashing; run it
with -s to see both ends' progress every 10 s. Both 4 GiB files are
deleted at its end."""
import json
import os
import sys
import threading
import time

import pytest

from tern import bp, cfdp
from test_cfdpd import Cfdpd, put, sha_file

SIZE = (1 << 32) + 4099


def sparse(path, seed, digest=True):
    """SIZE bytes, holes except 4 KiB of data at the start, around 2^32 and
    at the end (so offsets above 2^32 carry bytes that must arrive)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.truncate(SIZE)
        for off in (0, (1 << 32) - 2048, SIZE - 4096):
            f.seek(off)
            f.write(os.urandom(4096) if seed is None else
                    (seed.encode() * 4096)[:4096])
    return sha_file(path) if digest else None


def test_large_file_flag_on_the_wire(network, add_report):
    net = network(2, seg=64000, qtime=0.01, endpoints=(1, 2, 3, 64, 65))
    net.start()
    d = Cfdpd(net.dir(1), "--inactivity", "30000")
    add_report(lambda: ("cfdpd 1 log", d.tail(80)))
    try:
        src = os.path.join(net.dir(1), "cfdp", "big.bin")
        sparse(src, "w", digest=False)  # hashing 4 GiB takes ~10 s
        small = os.path.join(net.dir(1), "cfdp", "small.bin")
        with open(small, "wb") as f:
            f.write(b"x" * 1000)
        t0 = time.monotonic()
        with bp.Node(net.dir(2)) as n:
            rx = n.open("ipn:2.65")

            def first_pdus(txn):
                seen = {}
                deadline = time.monotonic() + 20
                while len(seen) < 3 and time.monotonic() < deadline:
                    got = rx.receive(2000)
                    if got is not None:
                        p = cfdp.decode(got.payload)
                        if f"{p['src']}.{p['tsn']}" == txn:
                            seen.setdefault(p["kind"], p)
                return seen

            # a small file first: no flag (the control: the check can fail)
            r = d.tool("cfdpput", "--no-wait", "--json", small, "2:small.bin")
            txn = r.stdout.split('"txn": "')[1].split('"')[0]
            seen = first_pdus(txn)
            assert seen.keys() >= {cfdp.METADATA, cfdp.FILE_DATA, cfdp.EOF}, list(seen)
            assert all(p["large_file"] == 0 for p in seen.values()), seen
            assert seen[cfdp.METADATA]["file_size"] == 1000
            r = d.tool("cfdpput", "--no-wait", "--json", src, "2:big.bin")
            txn = r.stdout.split('"txn": "')[1].split('"')[0]
            seen = {}
            deadline = time.monotonic() + 20
            while len(seen) < 2 and time.monotonic() < deadline:
                got = rx.receive(2000)
                if got is None:
                    continue
                p = cfdp.decode(got.payload)
                if f"{p['src']}.{p['tsn']}" == txn:
                    seen.setdefault(p["kind"], p)
            d.tool("cfdpcancel", txn)
        md, fd = seen.get(cfdp.METADATA), seen.get(cfdp.FILE_DATA)
        assert md is not None and fd is not None, f"PDUs seen: {list(seen)}"
        assert md["large_file"] == 1 and md["file_size"] == SIZE, md
        assert fd["large_file"] == 1, {k: v for k, v in fd.items() if k != "data"}
        print(f"flag checks in {time.monotonic() - t0:.1f} s")
    finally:
        d.stop()


class Progress:
    """Prints, every `every` seconds, what each cfdpd says of the
    transactions (bytes sent by the sender, received by the receiver), so a
    long run shows where it is (pytest -s); keeps the last lines for the
    failure report."""

    def __init__(self, ds, every=10.0):
        self.ds, self.every, self.lines = ds, every, []
        self.stop_ev = threading.Event()
        self.t0 = time.monotonic()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self.stop_ev.wait(self.every):
            parts = []
            for n, d in self.ds.items():
                r = d.tool("cfdpstatus", "--json", check=False, timeout=20)
                try:
                    txns = json.loads(r.stdout)["transactions"]
                except (ValueError, KeyError):
                    parts.append(f"cfdpd {n}: {r.stderr.strip() or 'no answer'}")
                    continue
                parts += [f"cfdpd {n} {t['role']} {t['txn']} {t['state']}: "
                          f"{t['progress'] / 2**30:.2f} GiB of {t['size'] / 2**30:.2f}, "
                          f"gaps {t['gaps']}, resent {t['resent']}" for t in txns]
            line = f"[{time.monotonic() - self.t0:6.0f} s] " + "; ".join(parts)
            self.lines.append(line)
            print(line, file=sys.stderr, flush=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop_ev.set()
        self.thread.join(30)


@pytest.mark.long
def test_file_above_4gib_class2(network, add_report):
    net = network(2, seg=64000, qtime=0.01)
    net.start()
    # The EOF's ACK timer runs from its hand-off to BP: with LTP and ternd's
    # queues ahead of it and the receiver writing 4 GiB to disk, the ACK
    # limit (timer x 4 expirations) must outlast what is still queued.
    opts = ("--ack-timer", "60000", "--nak-timer", "15000", "--inactivity", "300000")
    ds = {n: Cfdpd(net.dir(n), *opts) for n in (1, 2)}
    for n, x in ds.items():
        add_report(lambda x=x, n=n: (f"cfdpd {n} log", x.tail(80)))
    src = os.path.join(net.dir(1), "cfdp", "big.bin")
    dst = os.path.join(net.dir(2), "cfdp", "big.bin")
    prog = Progress(ds)
    add_report(lambda: ("progress", "\n".join(prog.lines[-30:])))
    try:
        want = sparse(src, None)
        t0 = time.monotonic()
        with prog:
            r, out = put(ds[1], src, "2:big.bin", "-c", "2", timeout=1800)
        took = time.monotonic() - t0
        assert r.returncode == 0, f"{r.stdout}{r.stderr}\n{ds[1].tail()}\n{ds[2].tail()}"
        assert out["delivered"] and out["checksum_verified"] and out["size"] == SIZE, out
        assert os.path.getsize(dst) == SIZE
        assert sha_file(dst) == want
        print(f"{SIZE} B class 2 in {took:.1f} s ({SIZE * 8 / took / 1e9:.2f} Gbit/s), "
              f"{out['bytes_resent']} B resent", file=sys.stderr)
    finally:
        for x in ds.values():
            x.stop()
        # 4 GiB written at each end (the receiver's in full): gone now, not
        # only when the test's directory is removed (TERN_KEEP=1 keeps it)
        for p in (src, dst):
            if os.path.exists(p):
                os.unlink(p)
