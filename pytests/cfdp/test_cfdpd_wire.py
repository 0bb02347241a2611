"""What a live cfdpd puts on the wire, judged by tshark.

test_cfdp_wire.py dissects PDUs the codec made in-process; here the PDUs
come from a running cfdpd through a running ternd: node 1 (ternd + cfdpd)
has a UDP convergence-layer outduct and a plan to node 2, and node 2 is a
Python UDP socket on the port the plan names. A class 1 cfdpput of an
odd-sized file to entity 2 sends its bundles there; the datagrams received
are written into a pcap (IPv4/UDP frames on port 4556, which tshark
dissects as BPv7) and handed to tshark, which must find:

- every bundle from ipn:1.64 to ipn:2.65, with good CRCs;
- in their payloads (tshark's CFDP dissector, through the bare PDUs tshark
  itself extracted, and, with Lua, in the bundles) one Metadata with the
  file's size and names, File Data PDUs whose offsets and lengths cover the
  file exactly once, and one EOF with the file's size and checksum, all in
  unacknowledged mode, of one transaction 1 -> 2;
- no malformed frame and no expert error anywhere.

Skipped, saying so, when tshark is not installed.
"""
import os
import shutil
import socket
import time

import pytest

from tern import cfdp, codec
from test_cfdp_wire import LUA, PROBLEMS, fields, lua_available, tshark, udp_frame, write_pcap
from test_cfdpd import Cfdpd, put, sha_file, write_random

SIZE = 100_003
BARE_PORT = 5235


def adus(grams):
    """The bundles' payloads (application data units), fragments joined, in
    the order their first datagram came: a full-size PDU (cfdpd's 64,000
    bytes) is larger than the UDP outduct's default maximum payload (63,976
    bytes, docs/udpcl.md), so the agent sends it as two fragments."""
    out = {}
    for g in grams:
        blocks = codec.cbor_loads(g)
        pri = blocks[0]
        (pay,) = [b[4] for b in blocks[1:] if b[0] == 1]
        key = (tuple(pri[6]), str(pri[4]))
        if pri[1] & 1:  # is a fragment: [.., offset, total length]
            off, total = pri[8], pri[9]
        else:
            off, total = 0, len(pay)
        buf = out.setdefault(key, [bytearray(total), 0])
        buf[0][off:off + len(pay)] = pay
        buf[1] += len(pay)
    assert all(len(b) == n for b, n in out.values()), "a fragment is missing"
    return [bytes(b) for b, _ in out.values()]


def receive_until_eof(sock, timeout=30):
    """Datagrams from the socket until the EOF has come whole (then a short
    linger for stragglers)."""
    grams, eof_at = [], None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if eof_at is not None and time.monotonic() > eof_at + 1.0:
            break
        sock.settimeout(0.2)
        try:
            g, _ = sock.recvfrom(70000)
        except socket.timeout:
            continue
        grams.append(g)
        pri, *rest = codec.cbor_loads(g)
        (pay,) = [b[4] for b in rest if b[0] == 1]
        if eof_at is None and not pri[1] & 1 and cfdp.decode(pay)["kind"] == cfdp.EOF:
            eof_at = time.monotonic()
    return grams


@pytest.fixture
def sender(network, add_report):
    """Node 1 (ternd + cfdpd) whose only neighbour, node 2, is a UDP socket
    here: node 2's ternd is never started and the socket takes its port."""
    net = network(2, protocol="udp", rate=12_500_000)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    sock.bind(("127.0.0.1", net.nodes[2].port))
    net.start(1)
    d = Cfdpd(net.dir(1))
    add_report(lambda: ("cfdpd log", d.tail(80)))
    yield net, d, sock
    d.stop()
    sock.close()


def test_live_cfdpd_class1_bundles_dissected_by_tshark(sender, tmp_path):
    if not shutil.which("tshark"):
        pytest.skip("tshark is not installed (apt-get install tshark to check the wire "
                    "format)")
    net, d, sock = sender
    src = os.path.join(net.dir(1), "cfdp", "wire.bin")
    want = write_random(src, SIZE, "wire")
    r, out = put(d, src, "2:wire-copy.bin", "-c", "1", "--no-closure")
    assert r.returncode == 0, f"{r.stdout}{r.stderr}\n{d.tail()}"
    grams = receive_until_eof(sock)
    assert grams, "no datagram from node 1"

    # 1. the bundles, as tshark reads them
    bundles = str(tmp_path / "cfdpd-bundles.pcap")
    write_pcap(bundles, [udp_frame(g, 4556) for g in grams])
    bad = tshark(bundles, "-Y", PROBLEMS + " || bpv7.crc_status == 0")
    assert not bad, "tshark flags cfdpd's bundles:\n" + "\n".join(bad)
    rows = fields(bundles, [], ["bpv7.primary.src_uri", "bpv7.primary.dst_uri",
                                "data.data"])
    assert len(rows) == len(grams), (len(rows), len(grams))
    assert {(r["bpv7.primary.src_uri"], r["bpv7.primary.dst_uri"]) for r in rows} == \
        {("ipn:1.64", "ipn:2.65")}, rows
    # fragments joined from the payload bytes tshark shows
    payloads = [bytes.fromhex(r["data.data"]) for r in rows]
    joined = []
    for g, p in zip(grams, payloads):
        pri = codec.cbor_loads(g)[0]
        if pri[1] & 1 and pri[8] != 0:
            joined[-1] += p
        else:
            joined.append(p)
    pdus = [bytes(p) for p in joined]
    assert pdus == adus(grams), "tshark's payload bytes differ from the bundles'"
    nfrag = sum(1 for g in grams if codec.cbor_loads(g)[0][1] & 1)
    crc = fields(bundles, ["-E", "occurrence=a"], ["bpv7.crc_status"])
    assert all(set(r["bpv7.crc_status"].split(",")) == {"1"} for r in crc), crc

    # 2. the PDUs tshark took out of the bundles, through its CFDP dissector
    bare = str(tmp_path / "cfdpd-pdus.pcap")
    write_pcap(bare, [udp_frame(p, BARE_PORT) for p in pdus])
    decode = ["-d", f"udp.port=={BARE_PORT},cfdp"]
    bad = tshark(bare, *decode, "-Y", PROBLEMS)
    assert not bad, "tshark flags cfdpd's PDUs:\n" + "\n".join(bad)
    names = ["frame.protocols", "cfdp.pdu_type", "cfdp.fdtype", "cfdp.srcid", "cfdp.dstid",
             "cfdp.transeqnum", "cfdp.trans_mode", "cfdp.file_size", "cfdp.offset",
             "cfdp.checksum", "cfdp.src_file_name", "cfdp.dst_file_name",
             "cfdp.condition_code"]
    rows = fields(bare, decode, names)
    assert all(r["frame.protocols"].endswith(":cfdp") for r in rows), rows
    assert {(r["cfdp.srcid"], r["cfdp.dstid"], r["cfdp.trans_mode"]) for r in rows} == \
        {("1", "2", "1")}, rows
    assert len({r["cfdp.transeqnum"] for r in rows}) == 1, rows
    md = [r for r in rows if r["cfdp.fdtype"] == "7"]
    eof = [r for r in rows if r["cfdp.fdtype"] == "4"]
    fd = [(r, p) for r, p in zip(rows, pdus) if r["cfdp.pdu_type"] == "1"]
    assert len(md) == 1 and len(eof) == 1, rows
    assert md[0]["cfdp.file_size"] == str(SIZE), md
    assert md[0]["cfdp.dst_file_name"] == "wire-copy.bin", md
    assert eof[0]["cfdp.file_size"] == str(SIZE) and eof[0]["cfdp.condition_code"] == "0"
    covered, data = 0, b""
    for r, p in sorted(fd, key=lambda x: int(x[0]["cfdp.offset"])):
        assert int(r["cfdp.offset"]) == covered, (r["cfdp.offset"], covered)
        chunk = cfdp.decode(p)["data"]
        covered += len(chunk)
        data += chunk
    assert covered == SIZE
    with open(src, "rb") as f:
        assert data == f.read()
    ck = cfdp.decode([p for r, p in zip(rows, pdus) if r["cfdp.fdtype"] == "4"][0])
    assert eof[0]["cfdp.checksum"] == f"0x{ck['checksum']:08x}", eof
    assert ck["checksum"] == cfdp.checksum(cfdp.decode(
        [p for r, p in zip(rows, pdus) if r["cfdp.fdtype"] == "7"][0])["checksum_type"], data)

    # 3. with Lua: the same PDUs dissected inside the bundles
    note = "no Lua in this tshark: payloads checked as bare PDUs only"
    if lua_available():
        script = tmp_path / "cfdp_in_bundle.lua"
        script.write_text(LUA)
        lua = ["-X", f"lua_script:{script}"]
        bad = tshark(bundles, *lua, "-Y", PROBLEMS)
        assert not bad, "tshark flags CFDP in cfdpd's bundles:\n" + "\n".join(bad)
        inb = fields(bundles, lua, ["cfdp.fdtype", "cfdp.file_size", "cfdp.offset"])
        assert [r["cfdp.fdtype"] for r in inb] == [r["cfdp.fdtype"] for r in rows]
        note = "and in the bundles (Lua)"
    print(f"live cfdpd: {len(grams)} bundles ({nfrag} fragments) ipn:1.64 -> ipn:2.65, "
          f"{len(fd)} file data "
          f"PDUs covering {SIZE} B, Metadata and EOF as tshark reads them, {note}; sha "
          f"{want[:16]}")
    assert sha_file(src) == want
