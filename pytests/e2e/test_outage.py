"""Real ternd nodes over LTP/UDP through linkem with an outage in the middle
of a transfer: a 3 MB file (one bundle) that is half sent when the link
goes down, and a bundle every half second from before the outage to after
it. The link runs at 2 Mbit/s (the nodes' udplso rate) with 50 ms delay.

- Announced (the contact plan has no contact between the nodes for the
  outage): LTP's timers do not fire during it (tern status counts
  checkpoint and report timeouts), the nodes offer linkem nothing while it
  is down, no session is cancelled, and the transfer resumes when the link
  returns.
- Unannounced (the plan says the link is up): the nodes keep sending into
  the outage, LTP's timers fire, and the transfer still completes through
  LTP's repair rounds or BP re-forwarding.

Either way every bundle and the file arrive exactly once and intact, and a
probe datagram sent into linkem during the outage is counted as dropped.
The default suite has a 20 s outage; 60 s and 120 s are `-m long`."""
import os
import socket
import time

import pytest

from e2ehelp import (FileReceiver, PacedSender, Receiver, check_bundles, check_files,
                     send_file, write_file)
from tern.testing import live_contacts, ltp_counters

T1 = 8          # the outage starts, seconds after the network's start
RATE = 2_000_000
LENGTHS = [pytest.param(20, id="20s"),
           pytest.param(60, id="60s", marks=pytest.mark.long),
           pytest.param(120, id="120s", marks=pytest.mark.long)]


def sample(net):
    """(clock, {node: ltp counters}, {node: live contacts}, linkem counters)."""
    t = net.clock()
    ltp, live = {}, {}
    for num in (1, 2):
        text = net.status(num)
        ltp[num] = ltp_counters(text)
        live[num] = live_contacts(text)
    return t, ltp, live, net.link_stats(1, 2)


def probe(port):
    """One datagram into linkem (it would reach a node's LTP port)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.sendto(b"linkem outage probe", ("127.0.0.1", port))
    s.close()


@pytest.mark.parametrize("announced", [True, False], ids=["announced", "unannounced"])
@pytest.mark.parametrize("length", LENGTHS)
def test_outage_mid_transfer(network, node_dir, length, announced):
    t2 = T1 + length
    kw = dict(links={(1, 2): {"delay": 50, "outages": [(T1, t2)]}}, qtime=0.1,
              link_bps=RATE)
    if announced:
        kw["planned_outages"] = {(1, 2): [(T1, t2)]}
    net = network(2, **kw)
    net.start()
    assert net.clock() < 2, f"the nodes took {net.clock():.1f} s to start"
    src = os.path.join(node_dir, "big.bin")
    fsha = write_file(src, 3_000_000, f"outage{length}")
    files = FileReceiver(net.dir(2), "ipn:2.2", os.path.join(node_dir, "got"), 1,
                         t2 + 120)
    count = int((t2 + 4 - 1.5) / 0.5)
    rx = Receiver(net.dir(2), "ipn:2.1", count, timeout=t2 + 150)
    pacer = PacedSender(net.dir(1), "ipn:1.1", "ipn:2.1", count, 5000, 0.5, "p",
                        start=net.t0 + 1.5)
    try:
        net.wait_clock(2)
        send_file(net.dir(1), "ipn:1.2", "ipn:2.2", src)
        net.wait_clock(T1 + 0.5)
        samples = [sample(net)]
        probe(net.linkem(1, 2).b2a_port)
        while net.clock() < t2 - 5:
            time.sleep(min(5, t2 - 5 - net.clock()))
            samples.append(sample(net))
        net.wait_clock(t2 - 0.5)
        samples.append(sample(net))
        net.wait_clock(t2 + 2)
        resumed = sample(net)
        pacer.join(t2 + 30)
        assert pacer.error is None, pacer.error
        rx.join(t2 + 150)
        assert rx.error is None, rx.error
        files.wait(t2 + 150)
        done = net.clock()
    finally:
        files.kill()
    check_bundles(rx.got, pacer.sent, "ipn:1.1")
    check_files(files.dst, {"big.bin": fsha})
    arrivals = sorted(t - net.t0 for t in rx.arrivals().values())
    file_at = os.stat(os.path.join(files.dst, "big.bin")).st_mtime - net.t0
    st = net.link_stats(1, 2)
    first, last = samples[0], samples[-1]
    print(f"outage {T1}-{t2} s ({'announced' if announced else 'unannounced'}): file at "
          f"{file_at:.1f} s, all done at {done:.1f} s; linkem {st}")
    for t, ltp, live, lst in samples:
        print(f"  t={t:.1f}: contacts {live}, LTP node 1 {ltp[1]}, node 2 {ltp[2]}, "
              f"a2b in {lst['a2b']['packets_in']} dropped_outage "
              f"{lst['a2b']['dropped_outage']}")

    # the outage happened: nothing arrived in it, a probe into it was dropped
    inside = [round(a, 2) for a in arrivals if T1 + 0.2 < a < t2 - 0.1]
    assert not inside, f"bundles arrived during the outage at {inside}"
    assert any(a < T1 for a in arrivals), "no bundle arrived before the outage"
    assert last[3]["b2a"]["dropped_outage"] >= first[3]["b2a"]["dropped_outage"] + 1
    assert file_at > t2, "the file arrived before the outage ended: it was not cut"
    # delivery resumed after the outage
    after = [a for a in arrivals if a >= t2 - 0.1]
    assert after, "nothing arrived after the outage"

    if announced:
        for t, ltp, live, _ in samples:
            assert live == {1: 0, 2: 0}, f"at {t:.1f} s the plan had contacts {live}"
        for num in (1, 2):
            assert "timeouts_cp" in first[1][num], \
                f"tern status has no 'timeouts cp N rs M' on its ltp: line: {first[1][num]}"
            for key in ("timeouts_cp", "timeouts_rs"):
                seen = [(round(t, 1), ltp[num][key]) for t, ltp, _, _ in samples]
                assert len({v for _, v in seen}) == 1, \
                    f"node {num}: LTP {key} grew during the announced outage: {seen}"
            assert last[1][num]["exports_cancelled"] == 0
        # LTP sent nothing while the plan said the link was down ...
        for num in (1, 2):
            assert last[1][num]["seg_out"] == first[1][num]["seg_out"], \
                f"node {num} sent LTP segments during the announced outage"
        assert last[3]["b2a"]["packets_in"] == first[3]["b2a"]["packets_in"] + 1  # the probe
        # ... and nothing reached the wire either: the link service holds what
        # LTP had queued for it before the contact ended
        wire = [(round(t, 1), lst["a2b"]["packets_in"]) for t, _, _, lst in samples]
        assert last[3]["a2b"]["packets_in"] == first[3]["a2b"]["packets_in"], \
            f"node 1 sent datagrams into the announced outage: linkem a2b packets_in {wire}"
        # when the contact returns the held queue leaves at once, in order: the
        # file's second half (about 1.5 MB at 2 Mbit/s) ahead of the paced bundles
        assert resumed[3]["a2b"]["packets_in"] > last[3]["a2b"]["packets_in"] + 10, \
            f"the link carried nothing in the 2 s after the outage: {resumed[3]['a2b']}"
        assert after[0] < t2 + 12, f"the transfer resumed only {after[0] - t2:.1f} s late"
        assert file_at < t2 + 20
    else:
        for t, ltp, live, _ in samples:
            assert live == {1: 1, 2: 1}, f"at {t:.1f} s the plan had contacts {live}"
        # the nodes kept sending into the outage, and LTP's timers fired
        assert last[3]["a2b"]["dropped_outage"] > first[3]["a2b"]["dropped_outage"]
        assert st["a2b"]["dropped_outage"] > 10
        if "timeouts_cp" in first[1][1]:
            assert last[1][1]["timeouts_cp"] > first[1][1]["timeouts_cp"]
