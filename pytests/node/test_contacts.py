"""The contact plan drives LTP: outside a contact the span to that peer is
down, bundles wait, and LTP's retransmission timers stand still."""
import re
import time

from nodehelp import sha, sized_payload
from tern import bp
from tern.testing import ion_time


def ltp_timeouts(status_text):
    """(checkpoint timeouts, report timeouts) from the ltp: line of tern status."""
    m = re.search(r"timeouts cp (\d+) rs (\d+)", status_text)
    assert m, f"no LTP timeouts in:\n{status_text}"
    return int(m.group(1)), int(m.group(2))


def segments_out(status_text):
    m = re.search(r"^ltp: .*segments in \d+ out (\d+)", status_text, re.M)
    assert m, f"no LTP segment counts in:\n{status_text}"
    return int(m.group(1))


def test_span_down_outside_contacts(network):
    """Node 1's contact to node 2 is replaced at run time by one starting 4 s
    later: the span goes down at once (logged), bundles sent meanwhile stay
    queued and not one LTP segment leaves for node 2, no checkpoint timer
    fires; when the contact begins the span comes up and every bundle
    arrives intact."""
    net = network(2, qtime=0.1)
    net.start()
    net.admin(1, "ionadmin", f"d contact {ion_time(net.epoch)} 1 2")
    net.admin(1, "ionadmin", "a contact +4 +3600 1 2 125000000")
    t_up = time.monotonic() + 4
    before = net.status(1)
    sent = {}
    with bp.Node(net.dir(1)) as n1:
        tx = n1.open("ipn:1.1")
        for i in range(10):
            data = sized_payload(f"c{i}", 20_000 + 1000 * i)
            tx.send("ipn:2.1", data, lifetime_s=600)
            sent[f"c{i}"] = sha(data)
        tx.flush(10_000)
    time.sleep(max(0.0, t_up - time.monotonic() - 1.0))
    during = net.status(1)
    assert segments_out(during) == segments_out(before), \
        "LTP sent segments to node 2 outside any contact"
    assert ltp_timeouts(during) == (0, 0)
    log = open(f"{net.dir(1)}/ternd.log").read()
    assert "LTP span to engine 2 down: no contact in the plan now" in log
    got = net.receive(2, "ipn:2.1", 10, timeout=30)
    assert time.monotonic() >= t_up - 0.5, "bundles arrived before the contact began"
    assert {g.payload.split(b":", 1)[0].decode(): sha(g.payload) for g in got} == sent
    assert "LTP span to engine 2 up: a contact began" in open(f"{net.dir(1)}/ternd.log").read()
    assert ltp_timeouts(net.status(1))[0] == 0
