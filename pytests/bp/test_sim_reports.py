"""Status reports and lifetime expiry in tern_sim: reports reach the
report-to endpoint and decode as RFC 9171 administrative records."""
from simhelp import Sim, chain, decode_report, sha, sized_payload
from tern.sim import (FLAG_ADMIN, FLAG_RPT_DELETION, FLAG_RPT_DELIVERY, FLAG_RPT_FORWARD,
                      FLAG_RPT_RECEPTION)

EXPIRED = 1


def reports(sim, node, eid):
    out = []
    for d in sim.recv_all(node, eid):
        assert d.flags & FLAG_ADMIN, "a report is an administrative bundle"
        r = decode_report(d.payload)
        r["from"] = d.src
        out.append(r)
    return out


def test_lifetime_expiry_in_transit_reports_deletion():
    """A bundle held by the relay, whose next link is down, outlives its
    lifetime: the relay deletes it and reports that to ipn:1.2."""
    with Sim(seed=21) as sim:
        chain(sim, 3, delay_ms=100, status_reports=True)
        sim.outage(2, 3, 0, 3_600_000)
        data = sized_payload("doomed", 3000)
        ct, seq = sim.send(1, "ipn:1.1", "ipn:3.1", data, lifetime_ms=60_000,
                           flags=FLAG_RPT_DELETION, report_to="ipn:1.2")
        keep = sized_payload("kept", 2000)
        sim.send(1, "ipn:1.1", "ipn:3.1", keep, lifetime_ms=7_200_000)
        assert sim.run(until_ms=600_000, deliveries=1) == "deliveries"
        assert 60_000 <= sim.now < 120_000
        [r] = reports(sim, 1, "ipn:1.2")
        assert r["deleted"] and not r["delivered"]
        assert r["reason"] == EXPIRED
        assert (r["source"], r["ctime"], r["seq"]) == ("ipn:1.1", ct, seq)
        assert r["from"] == "ipn:2.0"  # the relay's administrative endpoint
        assert sim.stats(2)["bp.expired"] == 1
        sim.run(until_ms=4_000_000)
        got = sim.recv_all(3, "ipn:3.1")
        assert [sha(d.payload) for d in got] == [sha(keep)]  # the other one survived
        assert sim.stats(3)["bp.received"] == 1


def test_expiry_at_the_source_while_link_is_down():
    with Sim(seed=22) as sim:
        chain(sim, 2, delay_ms=10, status_reports=True)
        sim.outage(1, 2, 0, 1_000_000)
        ct, seq = sim.send(1, "ipn:1.1", "ipn:2.1", b"late", lifetime_ms=5_000,
                           flags=FLAG_RPT_DELETION, report_to="ipn:1.2")
        assert sim.run(until_ms=1_000_000, deliveries=1) == "deliveries"
        [r] = reports(sim, 1, "ipn:1.2")
        assert r["deleted"] and r["reason"] == EXPIRED and (r["ctime"], r["seq"]) == (ct, seq)
        assert r["from"] == "ipn:1.0"
        sim.run(until_ms=1_200_000)
        assert sim.recv(2, "ipn:2.1") is None
        # LTP had the block before the outage began: it arrives after the
        # outage, dead, and node 2 reports that too (reports live at least a
        # day, so this one makes it home).
        [r2] = reports(sim, 1, "ipn:1.2")
        assert r2["deleted"] and r2["reason"] == EXPIRED and r2["from"] == "ipn:2.0"
        assert sim.stats(2)["bp.expired"] == 1
        assert sim.stats(1)["bp.stored"] == 0


def test_received_forwarded_delivered_reports():
    with Sim(seed=23) as sim:
        chain(sim, 3, delay_ms=50, loss=0.05, status_reports=True)
        data = sized_payload("tracked", 12345)
        flags = FLAG_RPT_RECEPTION | FLAG_RPT_FORWARD | FLAG_RPT_DELIVERY
        ct, seq = sim.send(1, "ipn:1.1", "ipn:3.1", data, flags=flags, report_to="ipn:1.2")
        assert sim.run(until_ms=600_000, deliveries=1) == "deliveries"
        assert sha(sim.recv(3, "ipn:3.1").payload) == sha(data)
        sim.run(until_ms=1_200_000)
        rs = reports(sim, 1, "ipn:1.2")
        assert all((r["source"], r["ctime"], r["seq"]) == ("ipn:1.1", ct, seq) for r in rs)
        seen = {(r["from"], k) for r in rs for k in ("received", "forwarded", "delivered")
                if r[k]}
        for want in [("ipn:2.0", "received"), ("ipn:2.0", "forwarded"),
                     ("ipn:3.0", "received"), ("ipn:3.0", "delivered")]:
            assert want in seen, f"no {want[1]} report from {want[0]}: {sorted(seen)}"
        assert not any(r["deleted"] for r in rs)
        assert ("ipn:3.0", "forwarded") not in seen
        assert sim.stats(1)["bp.reports_received"] == len(rs)


def test_nodes_send_no_reports_unless_switched_on():
    """RFC 9171 5.1: generating status reports is off by default. Without
    'm statusreports on' the relay and the destination send none, and count
    each one the bundle asked for; the bundle itself is delivered."""
    with Sim(seed=24) as sim:
        chain(sim, 3, delay_ms=50)
        data = sized_payload("untracked", 2345)
        flags = FLAG_RPT_RECEPTION | FLAG_RPT_FORWARD | FLAG_RPT_DELIVERY
        sim.send(1, "ipn:1.1", "ipn:3.1", data, flags=flags, report_to="ipn:1.2")
        assert sim.run(until_ms=600_000, deliveries=1) == "deliveries"
        assert sha(sim.recv(3, "ipn:3.1").payload) == sha(data)
        sim.run(until_ms=1_200_000)
        assert sim.recv_all(1, "ipn:1.2") == []
        st2, st3 = sim.stats(2), sim.stats(3)
        assert st2["bp.reports_sent"] == 0 and st3["bp.reports_sent"] == 0
        assert st2["bp.reports_suppressed"] == 2  # received, forwarded
        assert st3["bp.reports_suppressed"] == 2  # received, delivered
        assert sim.stats(1)["bp.reports_received"] == 0
