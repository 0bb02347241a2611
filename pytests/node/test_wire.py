"""An LTP transfer between two real nodes, captured on lo with tshark (when
it is installed and may capture: root): no malformed frame, no error, no bad
CRC, and the bundles are dissected as BPv7 inside LTP."""
import shutil

import pytest

from nodehelp import Capture, sha, sized_payload
from tern import bp

PROBLEMS = ("_ws.malformed || _ws.expert.severity >= 0x00800000 || "
            "bpv7.crc_status == 0")


def test_ltp_capture_dissected(network, node_dir):
    if not shutil.which("tshark"):
        pytest.skip("tshark is not installed (apt-get install tshark to check the wire "
                    "format)")
    # one bundle per block (aggregation size 1), so each is dissected whole
    net = network(2, agg_size=1)
    net.start()
    cap = Capture(node_dir, [net[1].port, net[2].port])
    why = cap.start()
    if why:
        pytest.skip(f"tshark cannot capture on lo here (capturing needs root): {why}")
    sizes = [1, 10, 1000, 1400, 5000, 100_000, 300_000]
    try:
        with bp.Node(net.dir(1)) as n1, bp.Node(net.dir(2)) as n2:
            rx = n2.open("ipn:2.1")
            tx = n1.open("ipn:1.1")
            sent = []
            for i, n in enumerate(sizes):
                data = sized_payload(f"w{i}", n)
                tx.send("ipn:2.1", data)
                sent.append(sha(data))
            got = []
            for _ in sizes:
                d = rx.receive(20_000)
                assert d is not None, f"{len(got)} of {len(sizes)} bundles arrived"
                got.append(sha(d.payload))
            assert sorted(got) == sorted(sent)
    finally:
        cap.stop()
    frames = cap.tshark()
    ltp = cap.tshark("-Y", "ltp")
    bundles = cap.tshark("-Y", "bpv7.primary.version", "-T", "fields", "-e", "bpv7.primary.src_uri",
                         "-e", "bpv7.primary.dst_uri", "-e", "bpv7.crc_status")
    bad = cap.tshark("-Y", PROBLEMS)
    bad += [ln for ln in ltp if "Protocol Error" in ln or "Malformed" in ln]
    assert frames and len(ltp) == len(frames), "frames tshark did not see as LTP"
    assert not bad, "tshark flagged frames:\n" + "\n".join(bad)
    assert len(bundles) == len(sizes), (
        f"tshark dissected {len(bundles)} bundles, expected {len(sizes)}:\n" +
        "\n".join(bundles))
    for ln in bundles:
        src, dst, crc = ln.split("\t")
        assert (src, dst) == ("ipn:1.1", "ipn:2.1"), ln
        assert crc == "" or set(crc.split(",")) == {"1"}, f"CRC not good: {ln}"
    print(f"tshark: {len(frames)} LTP frames, {len(bundles)} bundles dissected, no problem")
