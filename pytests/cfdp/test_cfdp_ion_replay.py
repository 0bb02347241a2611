"""ION 4.1.3's CFDP, replayed: what a real ION node sent to a Tern node.

pytests/cfdp/data/ion/ holds the UDP payloads ION 4.1.3 sent to a Tern
node's UDP convergence-layer induct during a live class 1 transfer (ION's
cfdptest, entity 2, to Tern's cfdpd, entity 1; README.md there says how and
when it was captured). Each datagram is one BPv7 bundle from ipn:2.64 to
ipn:1.65 carrying one CFDP PDU. The bundles were sent with a lifetime of
10^9 s, so they stay valid for decades.

The replay starts a fresh Tern node 1 (the node number the bundles are
addressed to) with a UDP induct on a free port, starts cfdpd, sends every
captured datagram to the induct, and checks that the file arrives with the
SHA-256 of the original, that cfdpd took every PDU and dropped none, and
that its receiver transaction ended without a fault.
"""
import os
import socket
import time

import pytest

from tern import cfdp, codec
from test_cfdpd import Cfdpd, counters, sha_file

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data", "ion")
CAPTURE = os.path.join(DATA, "ion413-cfdp-class1-to-tern.hex")
# the file ION sent (100,003 bytes), by its SHA-256 taken before the send
FILE_NAME = "ion-100003.bin"
FILE_SIZE = 100_003
FILE_SHA256 = "e4ed711971825c45f38bc16ce6de11fcb92b6abdb874bcd37dd3231929c63b86"
ION_ENTITY, TERN_ENTITY = 2, 1


FRAGMENTED = os.path.join(DATA, "ion413-cfdp-class1-fragmented.hex")
BPCP = os.path.join(DATA, "ion413-bpcp-class1-to-tern.hex")
# capture, destination file name, fault handler overrides in its Metadata
CAPTURES = [(CAPTURE, FILE_NAME, 0), (BPCP, "bpcp-100003.bin", 16)]


def datagrams(path=CAPTURE):
    """The captured UDP payloads, in the order ION sent them."""
    out = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                out.append(bytes.fromhex(line))
    return out


def payload(bundle):
    """(source EID, destination EID, payload bytes, lifetime ms) of a bundle."""
    blocks = codec.cbor_loads(bundle)
    primary = blocks[0]
    eid = lambda e: f"ipn:{e[1][0]}.{e[1][1]}"  # noqa: E731
    (pay,) = [b for b in blocks[1:] if b[0] == 1]
    return eid(primary[4]), eid(primary[3]), pay[4], primary[7]


@pytest.mark.parametrize("path,name,handlers", CAPTURES,
                         ids=[os.path.basename(c[0]) for c in CAPTURES])
def test_capture_is_ion_cfdp_class1_from_2_64_to_1_65(path, name, handlers):
    """The capture holds what its README says (so the replay below tests
    something): bundles ipn:2.64 -> ipn:1.65 with long lifetimes, each a CFDP
    PDU of entity 2's transaction to entity 1 in unacknowledged mode:
    Metadata naming the file and its size, file data covering every byte
    once, and an EOF with the file's size and ION's checksum of it. bpcp's
    Metadata also carries a fault handler override for every condition code
    (12 and 13 included, which Tern once refused)."""
    got = [payload(d) for d in datagrams(path)]
    assert got, "empty capture"
    pdus = []
    for src, dst, pdu, life in got:
        assert (src, dst) == (f"ipn:{ION_ENTITY}.64", f"ipn:{TERN_ENTITY}.65")
        assert life >= 10**9 * 1000, life  # ms: the replay must not expire
        d = cfdp.decode(pdu)
        assert (d["src"], d["dst"]) == (ION_ENTITY, TERN_ENTITY), d
        assert d["mode"] == cfdp.UNACKNOWLEDGED, d
        pdus.append(d)
    kinds = [d["kind"] for d in pdus]
    assert kinds[0] == cfdp.METADATA and kinds[-1] == cfdp.EOF, kinds
    assert set(kinds[1:-1]) == {cfdp.FILE_DATA}, kinds
    assert len({d["tsn"] for d in pdus}) == 1
    md, eof = pdus[0], pdus[-1]
    assert md["file_size"] == FILE_SIZE and eof["file_size"] == FILE_SIZE
    assert md["dst_name"] == name.encode(), md
    fh = [o for o in md["options"] if o["type"] == cfdp.TLV_FAULT_HANDLER]
    assert len(fh) == len(md["options"]) == handlers, md["options"]
    assert sorted(o["condition"] for o in fh) == list(range(handlers))
    assert eof["condition"] == 0
    covered = 0
    for d in pdus[1:-1]:
        assert d["offset"] == covered, (d["offset"], covered)
        covered += len(d["data"])
    assert covered == FILE_SIZE
    data = b"".join(d["data"] for d in pdus[1:-1])
    assert cfdp.checksum(md["checksum_type"], data) == eof["checksum"]


def replay(net, d, path, wait):
    """Sends the capture to node 1's UDP induct; returns cfdpd's
    transactions once all are finished (or after wait seconds)."""
    grams = datagrams(path)
    port = net.nodes[1].port
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for g in grams:
            s.sendto(g, ("127.0.0.1", port))
            time.sleep(0.005)  # about ION's pace; a burst could overrun nothing here
    deadline = time.monotonic() + wait
    txns = []
    while time.monotonic() < deadline:
        txns = d.status()
        if txns and all(t["state"] == "finished" for t in txns):
            break
        time.sleep(0.1)
    return grams, txns


@pytest.fixture
def node1(network, add_report):
    net = network(1, protocol="udp")  # node 1: the bundles' destination
    net.start()
    d = Cfdpd(net.dir(1), "--inactivity", "30000")
    add_report(lambda: ("cfdpd log", d.tail(80)))
    yield net, d
    d.stop()


@pytest.mark.parametrize("path,name,handlers", CAPTURES,
                         ids=[os.path.basename(c[0]) for c in CAPTURES])
def test_ion_class1_capture_replayed_delivers_the_file(node1, path, name, handlers):
    """cfdptest's transfer, and bpcp's (whose Metadata used to be dropped as
    malformed for its override of reserved condition codes 12 and 13)."""
    net, d = node1
    grams, txns = replay(net, d, path, 20)
    assert len(txns) == 1, txns
    (t,) = txns
    assert t["state"] == "finished" and t["condition"] == "no error", t
    assert t["peer"] == ION_ENTITY and t["class"] == 1 and t["size"] == FILE_SIZE, t
    got = os.path.join(net.dir(1), "cfdp", name)
    assert os.path.getsize(got) == FILE_SIZE
    assert sha_file(got) == FILE_SHA256
    c = counters(d)
    assert c["pdus_in"] == len(grams), c
    assert c["drop_malformed"] == 0, c
    assert c["pdus_out"] == 0, c  # class 1 without closure: nothing goes back


def test_ion_fragmented_pdus_replayed_deliver_the_file(node1):
    """The same file with ION's default segment size (65,000 bytes): ION's UDP
    CL fragments each full file data PDU, and the fragments' extension blocks
    all say block number 0, which Tern's BP agent takes (bp_bundle_decode
    gives them free numbers; before, it dropped both fragments as malformed
    and the transaction ended at the check limit with a gap)."""
    net, d = node1
    grams = datagrams(FRAGMENTED)
    frags = [g for g in grams if codec.cbor_loads(g)[0][1] & 1]
    assert len(frags) == 2 and all(b[1] == 0 for g in frags
                                   for b in codec.cbor_loads(g)[1:-1]), "not the capture"
    _, txns = replay(net, d, FRAGMENTED, 5)
    got = os.path.join(net.dir(1), "cfdp", FILE_NAME)
    assert [t["condition"] for t in txns] == ["no error"] and txns[0]["state"] == "finished"
    assert sha_file(got) == FILE_SHA256
