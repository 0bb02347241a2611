"""Runtime configuration with 'tern admin' (and tern.bp's Node.admin) on
running nodes: new endpoints, plans and spans take effect at once, listings
show them, bad lines are refused with a clear message."""
import time

import pytest

from nodehelp import sha, sized_payload
from tern import bp
from tern.testing import endpoint_queues, ion_time


def test_admin_endpoint_and_plan_take_effect(network):
    # a line 1 - 2 - 3 where node 1 has no plan to node 3 yet, and no contact
    # graph route either: its plan forgets the contacts between 2 and 3 (with
    # them, Contact Graph Routing would find 1 -> 2 -> 3 by itself)
    net = network(3, routes={1: {}})
    net.start()
    for a, b in ((2, 3), (3, 2)):
        r = net.admin(1, "ionadmin", f"d contact {ion_time(net.epoch)} {a} {b}")
        assert r.returncode == 0, r.stdout + r.stderr
    data = sized_payload("routed-later", 3000)
    with bp.Node(net.dir(1)) as n1:
        n1.open("ipn:1.1").send("ipn:3.1", data, wait=True)
    time.sleep(0.5)
    c = net.counters(1)
    assert c["limbo"] == 1 and c["bp_forwarded"] == 0, net.status(1)
    assert "without route" in net.status(1)
    # RFC 9171 5.1: a node sends no status reports unless configured to
    assert "status reports: off (sent 0" in net.status(1), net.status(1)

    # ipnadmin 'a plan' through the tern command
    r = net.admin(1, "ipnadmin", "a plan 3 ltp/2\nl plan\n")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ltp/2" in r.stdout
    net.wait_delivered(3, "ipn:3.1", 1, timeout=20)
    (d,) = net.receive(3, "ipn:3.1", 1, timeout=10)
    assert d.payload == data and d.src == "ipn:1.1"
    assert net.counters(1)["limbo"] == 0

    # bpadmin 'a endpoint' through tern, then 'l endpoint' lists it
    r = net.admin(3, "bpadmin", "a endpoint ipn:3.9 q")
    assert r.returncode == 0, r.stdout + r.stderr
    r = net.admin(3, "bpadmin", "l endpoint")
    assert r.returncode == 0
    listed = [ln.split()[0] for ln in r.stdout.splitlines() if ln.strip()]
    assert "ipn:3.9" in listed, r.stdout
    assert endpoint_queues(net.status(3)).get("ipn:3.9") == 0
    sent = {}
    with bp.Node(net.dir(1)) as n1:
        tx = n1.open("ipn:1.1")
        for i in range(5):
            p = sized_payload(f"new{i}", 500 * (i + 1))
            tx.send("ipn:3.9", p)
            sent[f"new{i}"] = sha(p)
        tx.flush(20_000)
    got = net.receive(3, "ipn:3.9", 5, timeout=20)
    assert {d.payload.split(b":")[0].decode(): sha(d.payload) for d in got} == sent

    # the same through tern.bp: delete the endpoint, the listing drops it
    with bp.Node(net.dir(3)) as n3:
        assert n3.admin("bpadmin", "d endpoint ipn:3.9") == "ok"
        assert "ipn:3.9" not in n3.admin("bpadmin", "l endpoint")
        assert "ipn:3.1" in n3.admin("bpadmin", "l endpoint")


def test_admin_refusals(network):
    net = network(2)
    net.start()
    # a bad line: exit status 1, the reason on the output, the node unchanged
    r = net.admin(1, "bpadmin", "a endpoint nonsense q")
    assert r.returncode == 1
    assert "EID" in r.stdout and "nonsense" in r.stdout, r.stdout
    r = net.admin(1, "ionadmin", "m horizon +0")
    assert r.returncode == 1 and "at start only" in r.stdout, r.stdout
    with bp.Node(net.dir(1)) as n1:
        try:
            n1.admin("nosuchadmin", "l plan")
        except bp.BpError as e:
            assert "unknown module" in str(e)
        else:
            raise AssertionError("an unknown module was accepted")
        try:
            n1.admin("bpadmn", "l plan")
        except bp.BpError as e:
            assert "unknown module 'bpadmn' (did you mean 'bpadmin'?)" in str(e), str(e)
        else:
            raise AssertionError("an unknown module was accepted")
    # a mistyped command is named whole, with the one meant
    r = net.admin(1, "ltpadmin", "a spna 9 1 1 1400 1400 1 'udplso 127.0.0.1:9'")
    assert r.returncode == 1, r.stdout
    assert "unknown ltpadmin command 'a spna' (did you mean 'a span'?)" in r.stdout, r.stdout
    assert net.running(1)
    # and a good one still works afterwards
    r = net.admin(1, "ipnadmin", "l plan")
    assert r.returncode == 0 and "ltp/2" in r.stdout, r.stdout


def test_admin_plan_through_unknown_outduct_refused(network):
    net = network(2)
    net.start()
    r = net.admin(1, "ipnadmin", "a plan 7 ltp/99")
    assert r.returncode == 1, r.stdout
    assert "ltp/99" in r.stdout, r.stdout


def test_admin_new_span_and_contact(network):
    """ltpadmin 'a span' and ionadmin 'a contact'/'a range' at runtime: a
    third node joins a running pair; 2 learns a span, an outduct and a plan
    to it, and bundles from 1 reach it through 2."""
    net = network(3, edges=[(1, 2)], routes={1: {3: 2}})
    net.start([1, 2])
    assert not net.running(3)
    # node 3's own host.rc knows 2; write it so and start it
    net.edges.append((2, 3))
    net[2].neighbours.append(3)
    net[3].neighbours.append(2)
    net.write()
    net.start([3])
    t0, t1 = net.rc_text(1).split("a contact ")[1].split()[:2]
    lines = [("ionadmin", f"a contact {t0} {t1} 2 3 125000000"),
             ("ionadmin", f"a range {t0} {t1} 2 3 1"),
             ("ltpadmin", f"a span 3 8 8 1400 64000 0 'udplso 127.0.0.1:{net[3].port}'"),
             ("bpadmin", "a outduct ltp 3 ltpclo"),
             ("ipnadmin", "a plan 3 ltp/3")]
    for module, line in lines:
        r = net.admin(2, module, line)
        assert r.returncode == 0, f"{module} '{line}': {r.stdout}{r.stderr}"
    r = net.admin(2, "ionadmin", "l contact")
    assert r.returncode == 0 and "2 -> 3" in r.stdout, r.stdout
    r = net.admin(2, "ltpadmin", "l span")
    assert r.returncode == 0 and f"127.0.0.1:{net[3].port}" in r.stdout, r.stdout
    data = sized_payload("joined", 200_000)
    with bp.Node(net.dir(1)) as n1:
        n1.open("ipn:1.1").send("ipn:3.1", data, wait=True)
    (d,) = net.receive(3, "ipn:3.1", 1, timeout=30)
    assert sha(d.payload) == sha(data)


def test_range_longer_than_49_days_is_not_wrapped(network):
    """A range of 5,000,000 s (58 days, a far-outer-planet light time): the
    LTP span's light time is milliseconds in 32 bits, and the node computed
    it as seconds x 1000 in 32 bits, which wrapped to 705,032,704 ms (8
    days): checkpoints would be retransmitted long before a report could
    come back. It is now held at the most the span can say, 4,294,967,295
    ms (issue 18: checked arithmetic on every configured number)."""
    net = network(2, owlt=5_000_000)
    net.start()
    r = net.admin(1, "ltpadmin", "l span")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "light time 4294967295 ms (contact plan range)" in r.stdout, r.stdout
