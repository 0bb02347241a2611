"""cfdpd configured by cfdpadmin commands (a host.rc's cfdpadmin section,
node.cfdprc, --rc), and CFDP over UDP between two cfdpd: files compared by
SHA-256, the PDUs counted on the UDP socket and not on BP, malformed
datagrams counted and dropped beside a transfer."""
import json
import os
import socket
import subprocess
import time

import pytest

from tern.testing import bin_dir, free_ports, read_ports, wait_ports
from test_cfdpd import Cfdpd, counters, sha_file, wait_for, write_random

TIMERS = ("--nak-timer", "1000", "--inactivity", "30000")


def put(d, local, remote, *opts, timeout=90):
    r = d.tool("cfdpput", "--wait", "--json", *opts, local, remote, check=False,
               timeout=timeout)
    out = json.loads(r.stdout) if r.stdout.strip() else {}
    assert r.returncode == 0 and out.get("delivered"), (r.stdout, r.stderr, d.tail(60))
    return out


def run_cfdpd(*args, timeout=10):
    return subprocess.run([os.path.join(bin_dir(), "cfdpd"), *args], capture_output=True,
                          text=True, timeout=timeout)


def append_section(path, *lines):
    with open(path) as f:
        before = f.read().count("\n")
    with open(path, "a") as f:
        f.write("## begin cfdpadmin\n" + "".join(l + "\n" for l in lines) +
                "## end cfdpadmin\n")
    return before + 2  # line number of lines[0]


def test_host_rc_cfdpadmin_section_configures_cfdpd(network, add_report):
    """m segsize 2000 in node 1's host.rc: a 100,000-byte file leaves node 1 in
    50 file data PDUs; node 2 (no section) sends the same file in 2."""
    net = network(2, seg=64000, qtime=0.01)
    net.start()
    rc1 = os.path.join(net.dir(1), "host.rc")
    first = append_section(rc1, "1", "m segsize 2000", "m bogus 1", "m inactivity 30")
    ds = {n: Cfdpd(net.dir(n), "--ack-timer", "1000", *TIMERS) for n in (1, 2)}
    try:
        for n, d in ds.items():
            add_report(lambda d=d, n=n: (f"cfdpd {n} log", d.tail(80)))
        log1 = ds[1].tail(200)
        assert f"configuration from {rc1}: 4 cfdpadmin command(s)" in log1, log1
        assert f"warning: {rc1}:{first + 2}: unknown command 'm bogus'" in log1, log1
        rc2 = os.path.join(net.dir(2), "host.rc")
        assert f"configuration from {rc2}: no cfdpadmin commands" in ds[2].tail(200)
        size = 100_000
        for a, b in ((1, 2), (2, 1)):
            src = os.path.join(net.dir(a), "cfdp", f"s{a}.bin")
            want = write_random(src, size, f"s{a}")
            before = counters(ds[b])["pdus_in"]
            put(ds[a], src, f"{b}:s{a}.bin")
            assert sha_file(os.path.join(net.dir(b), "cfdp", f"s{a}.bin")) == want
            got = counters(ds[b])["pdus_in"] - before
            # Metadata, EOF, the ACK of the Finished: 3 directives (a repeat or
            # two if a timer fires), and the file data PDUs
            data_pdus = size // 2000 if a == 1 else 2
            assert data_pdus + 3 <= got <= data_pdus + 6, (a, got)
    finally:
        for d in ds.values():
            d.stop()


def test_bad_cfdprc_lines_refused_with_file_and_line(node_dir):
    # a host.rc's section: the error names host.rc and the line
    os.makedirs(os.path.join(node_dir, "a"))
    rc = os.path.join(node_dir, "a", "host.rc")
    with open(rc, "w") as f:
        f.write("## begin ionadmin\n1 7 ''\n## end ionadmin\n")
    line = append_section(rc, "1", "m segsize 70000", "a entity 2 udp nowhere 1 0 0")
    r = run_cfdpd(os.path.join(node_dir, "a"))
    assert r.returncode == 1, r
    assert (f"cfdpd: error: {rc}:{line + 1}: 'm segsize': segment size '70000': expected "
            "bytes per file data segment from 1 to 65535") in r.stderr, r.stderr
    assert f"{rc}:{line + 2}: 'a entity'" in r.stderr, r.stderr
    assert "2 error(s); not started" in r.stderr, r.stderr
    # no host.rc: node.cfdprc is read
    os.makedirs(os.path.join(node_dir, "b"))
    crc = os.path.join(node_dir, "b", "node.cfdprc")
    with open(crc, "w") as f:
        f.write("1\nm discard 2\n")
    r = run_cfdpd(os.path.join(node_dir, "b"))
    assert r.returncode == 1 and f"{crc}:2: 'm discard'" in r.stderr, r.stderr
    # --rc wins over both, and a file that is not there is named
    missing = os.path.join(node_dir, "none.cfdprc")
    r = run_cfdpd(os.path.join(node_dir, "b"), "--rc", missing)
    assert r.returncode == 1 and missing in r.stderr, r.stderr
    # nothing was started: no store, no filestore
    assert os.listdir(os.path.join(node_dir, "b")) == ["node.cfdprc"]


@pytest.fixture
def udp_pair(network, add_report, node_dir):
    """Two nodes (ternd each, for cfdpd to attach to), their cfdpd talking
    CFDP over UDP on 127.0.0.1: node 2 binds port 0 (--udp-port, published
    in its ports file), node 1 a port picked free; each one's cfdprc names
    the other's address."""
    net = network(2, seg=64000, qtime=0.01)
    net.start()
    (p1,) = free_ports(1)
    rc2 = os.path.join(net.dir(2), "udp.cfdprc")
    with open(rc2, "w") as f:
        f.write(f"1\nm udpport 127.0.0.1:9\na entity 1 udp 127.0.0.1:{p1} 1 0 0\n")
    d2 = Cfdpd(net.dir(2), "--rc", rc2, "--udp-port", "127.0.0.1:0", *TIMERS)
    add_report(lambda: ("cfdpd 2 log", d2.tail(80)))
    p2 = wait_ports(net.dir(2), [("cfdp", "udp")])[("cfdp", "udp")]
    assert p2 != 9 and counters(d2)["udp_port"] == p2
    rc1 = os.path.join(net.dir(1), "udp.cfdprc")
    with open(rc1, "w") as f:
        f.write(f"1\nm udpport 127.0.0.1:{p1}\na entity 2 udp 127.0.0.1:{p2} 1 0 0\n")
    d1 = Cfdpd(net.dir(1), "--rc", rc1, *TIMERS)
    add_report(lambda: ("cfdpd 1 log", d1.tail(80)))
    yield net, {1: d1, 2: d2}, p2
    for d in (d1, d2):
        d.stop()
    # a clean stop takes its line out of the ports file again
    assert ("cfdp", "udp") not in read_ports(net.dir(2))


@pytest.mark.parametrize("cls", [1, 2])
def test_udp_transfers_both_ways_intact(udp_pair, cls):
    net, ds, _ = udp_pair
    for a, b in ((1, 2), (2, 1)):
        for size in (0, 1, 65_537, 3_000_017):
            name = f"u{cls}-{a}-{size}.bin"
            src = os.path.join(net.dir(a), "cfdp", name)
            want = write_random(src, size, name)
            out = put(ds[a], src, f"{b}:{name}", "--class", str(cls))
            assert out["checksum_verified"], out
            assert sha_file(os.path.join(net.dir(b), "cfdp", name)) == want, name
    for d in ds.values():
        c = counters(d)
        # every PDU went as a datagram: none through BP, none lost
        assert c["bp_sent"] == 0 and c["udp_out"] > 0 and c["udp_send_errors"] == 0, c
        assert c["udp_in"] == c["pdus_in"], c


def test_udp_malformed_datagrams_counted_others_unharmed(udp_pair):
    net, ds, p2 = udp_pair
    size = 40_000_009
    src = os.path.join(net.dir(1), "cfdp", "m.bin")
    want = write_random(src, size, "m")
    before = counters(ds[2])
    txn = json.loads(ds[1].tool("cfdpput", "--no-wait", "--json", src,
                                "2:m.bin").stdout)["txn"]
    bad = [b"", b"\xff", b"\xe0\x00\x10\x11\x01\x01\x02",  # version 7
           b"\x20\x00\x50\x11\x01\x01\x02" + b"\x00" * 3,   # data field past the end
           b"\x20\x00"]                                        # a header cut short
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        for b in bad:
            s.sendto(b, ("127.0.0.1", p2))
    finally:
        s.close()
    wait_for(lambda: counters(ds[2])["drop_malformed"] - before["drop_malformed"] == len(bad),
             15, f"{len(bad)} malformed datagrams counted: {counters(ds[2])}")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        t = [x for x in json.loads(ds[1].tool("cfdpstatus", "--json").stdout)["transactions"]
             if x["txn"] == txn]
        if not t or t[0]["state"] == "finished":
            break
        time.sleep(0.1)
    assert sha_file(os.path.join(net.dir(2), "cfdp", "m.bin")) == want
    assert "finished: no error, data complete" in ds[1].tail(200)
    after = counters(ds[2])
    assert after["drop_malformed"] - before["drop_malformed"] == len(bad), after
    # the datagrams came on the UDP socket, with the transfer's
    assert after["udp_in"] - before["udp_in"] >= len(bad) + size // 64000, after
    assert after["bp_sent"] == 0, after
