"""bpecho against real nodes: the payload comes back whole, or as ION 4.1.3's
bpecho answers (--ion-reply: its first 1,024 bytes)."""
import os
import subprocess

from nodehelp import sized_payload
from tern import bp
from tern.testing import bin_dir


def echo_run(network, args, sizes):
    net = network(2)
    net.start()
    p = subprocess.Popen([os.path.join(bin_dir(), "bpecho"), "ipn:2.3", "--node", net.dir(2),
                          "--count", str(len(sizes)), *args],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        replies = []
        with bp.Node(net.dir(1)) as n1:
            ep = n1.open("ipn:1.1")
            for i, n in enumerate(sizes):
                data = sized_payload(f"e{i}", n)
                ep.send("ipn:2.3", data)
                d = ep.receive(20_000)
                assert d is not None, f"no echo for the {n}-byte bundle"
                assert d.src == "ipn:2.3"
                replies.append((data, d.payload))
        out, err = p.communicate(timeout=20)
        assert p.returncode == 0, err
        return replies
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()


def test_bpecho_returns_the_payload(network):
    for sent, got in echo_run(network, [], [1, 1024, 5000]):
        assert got == sent


def test_bpecho_ion_reply_is_the_first_1024_bytes(network):
    for sent, got in echo_run(network, ["--ion-reply"], [10, 1024, 5000]):
        assert got == sent[:1024], f"{len(got)} bytes back for {len(sent)}"
