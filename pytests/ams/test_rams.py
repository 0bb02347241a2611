"""RAMS between continua on real Tern nodes over BP/LTP: ramsgate started by
'tern start' from the host.rc, modules in this process (tern.ams). A
subscription in one continuum brings every publication of another, once
and in order per publisher, across a relay continuum, through delay and an
outage, and across a ramsgate killed with SIGKILL."""
import os
import signal
import struct
import subprocess
import time

import pytest

from rams_net import (SUBJECTS, Collector, counter, gateway_log, kill_daemons, setup_continua,
                      status, subscriber, wait_declared, wait_for, wait_gateway_subscribed)
from tern import bp
from tern.ams import ASSURED, Module
from tern.testing import bin_dir

BENCH = SUBJECTS["bench"]
TEXT = SUBJECTS["text"]


@pytest.fixture
def rams(network):
    """rams(tree, **network options) -> (net, mibs): a node per continuum."""
    made = []

    def make(tree, lifetime=300, edges=None, gateways=None, **kw):
        net = network(numbers=sorted(tree), edges=edges, **kw)
        made.append(net)
        return net, setup_continua(net, tree, lifetime, gateways=gateways)

    yield make
    for net in made:  # whatever 'tern stop' could not reach
        kill_daemons(net)


def tern(*args):
    return subprocess.run([os.path.join(bin_dir(), "tern"), *args], capture_output=True,
                          text=True, timeout=120)


def _report(net, add_report, conts):
    for c in conts:
        add_report(lambda c=c: (f"ramsgate of continuum {c}",
                                gateway_log(net, c) + "\n" + status(net, c)))


def _publish_numbered(pub, n, start=0, rate=None, tag=b""):
    for i in range(start, start + n):
        pub.publish(BENCH, tag + b"%06d" % i)
        if rate:
            time.sleep(1.0 / rate)


def _numbers(contents, tag=b""):
    return [int(c[len(tag):]) for c in contents if c.startswith(tag)]


def test_two_continua_publication_reaches_the_other_continuum(rams, add_report):
    net, mibs = rams({2: [3], 3: [2]}, qtime=0.01)
    _report(net, add_report, (2, 3))
    net.start()
    wait_declared(net, 2, 3)
    wait_declared(net, 3, 2)
    with Module(mibs[2], "amsdemo", "test", "", "benchs") as pub, \
            subscriber(mibs[3], BENCH) as sub, Collector(sub) as col:
        wait_gateway_subscribed(pub, BENCH, report=lambda: status(net, 2))
        _publish_numbered(pub, 500)
        col.wait_count(500, 30, lambda: status(net, 2) + status(net, 3))
        time.sleep(0.5)
        col.stop()
        got = _numbers(col.contents())
        assert got == list(range(500)), got[:20]
        m = col.msgs[0]
        # the message as its publisher sent it: its continuum, unit, module
        assert (m.continuum, m.unit, m.module, m.subject) == (2, 0, pub.number, BENCH)
    wait_for(lambda: (counter(status(net, 3), r"messages delivered here (\d+)") or 0) >= 500,
             5, "the status file's count")  # it is rewritten every second
    st = tern("status", net.dir(3), "--once")
    assert "rams: gateway of venture 9 (amsdemo/test) in continuum 3 at ipn:3.9" in \
        st.stdout, st.stdout
    assert "peer continuum 2 at ipn:2.9: declared (Tern)" in st.stdout, st.stdout
    assert counter(st.stdout, r"messages delivered here (\d+)") >= 500, st.stdout


def test_three_continua_in_a_tree(rams, add_report):
    """2 - 3 - 4: the leaves know each other only through the relay."""
    net, mibs = rams({2: [3], 3: [2, 4], 4: [3]}, edges=[(2, 3), (3, 4)], qtime=0.01)
    _report(net, add_report, (2, 3, 4))
    net.start()
    for a, b in ((2, 3), (3, 2), (3, 4), (4, 3)):
        wait_declared(net, a, b)
    with Module(mibs[2], "amsdemo", "test", "", "benchs") as pub, \
            subscriber(mibs[4], BENCH) as sub, Collector(sub) as col:
        # the subscription made at leaf 4 reaches leaf 2 through 3
        wait_gateway_subscribed(pub, BENCH, report=lambda: status(net, 2) + status(net, 3))
        _publish_numbered(pub, 200)
        col.wait_count(200, 30, lambda: status(net, 3) + status(net, 4))
        time.sleep(1)
        assert _numbers(col.contents()) == list(range(200))
        # relayed: the relay delivered nothing locally, forwarded everything
        assert counter(status(net, 3), r"pdus in \d+ \(assert \d+ cancel \d+ publish (\d+)") \
            >= 200
        # a private message from leaf 4 to a module at leaf 2 that invited it
        with Module(mibs[2], "amsdemo", "test", "", "catch") as catcher:
            catcher.invite(TEXT, diligence=ASSURED)
            # the gateway drops private messages to modules that have not
            # invited them: wait until it heard of the invitation (a CI run
            # under load sent before it had)
            wait_for(lambda: (counter(status(net, 2), r"invitations (\d+)") or 0) >= 1,
                     30, "the invitation at gateway 2", lambda: status(net, 2))
            with Module(mibs[4], "amsdemo", "test", "", "pitch") as pitcher:
                deadline = time.monotonic() + 30
                while True:  # the relay must know continuum 2's conduit
                    try:
                        pitcher.send(0, catcher.number, TEXT, b"hello from 4", continuum=2)
                        break
                    except Exception:
                        if time.monotonic() > deadline:
                            raise
                        time.sleep(0.5)
                got = None
                end = time.monotonic() + 30
                while time.monotonic() < end and got is None:
                    ev = catcher.get_event(timeout_s=0.5)
                    if getattr(ev, "content", None) == b"hello from 4":
                        got = ev
                assert got is not None, status(net, 2) + status(net, 3) + status(net, 4)
                assert (got.continuum, got.subject) == (4, TEXT)
        # unsubscribing at 4 stops it: the cancellation goes back to 2
        sub.unsubscribe(BENCH)
        wait_for(lambda: (counter(status(net, 2), r"pdus in \d+ \(assert \d+ cancel (\d+)")
                          or 0) >= 1, 30, "the cancellation at 2", lambda: status(net, 2))
        before = len(col.contents())
        _publish_numbered(pub, 50, start=1000)
        time.sleep(3)
        col.stop()
        assert len(col.contents()) == before, "messages after the unsubscription"


def test_ramsgate_killed_and_restarted_keeps_the_subscriptions(rams, add_report):
    net, mibs = rams({2: [3], 3: [2]}, qtime=0.01)
    _report(net, add_report, (2, 3))
    net.start()
    wait_declared(net, 2, 3)
    with Module(mibs[2], "amsdemo", "test", "", "benchs") as pub, \
            subscriber(mibs[3], BENCH) as sub, Collector(sub) as col:
        wait_gateway_subscribed(pub, BENCH, report=lambda: status(net, 2))
        _publish_numbered(pub, 100)
        col.wait_count(100, 30)
        log = open(os.path.join(net.dir(2), "9.petition.log")).read()
        assert "1 ipn:3.9 2 3 0 0 0" in log, log  # the petition, kept
        started = []
        for c in (2, 3):  # the publisher's gateway, then the subscriber's
            pidf = os.path.join(net.dir(c), "ramsgate.0.pid")
            pid = int(open(pidf).read())
            os.kill(pid, signal.SIGKILL)
            wait_for(lambda: not os.path.exists(f"/proc/{pid}") or
                     open(f"/proc/{pid}/stat").read().split()[2] == "Z", 10, "ramsgate gone")
            # started again by hand, as ION's ramsgate is (the node runs on)
            log = open(os.path.join(net.dir(c), "ramsgate.0.log"), "a")
            g = subprocess.Popen([os.path.join(bin_dir(), "ramsgate"), "amsdemo", "test",
                                  "300"], cwd=net.dir(c), stdout=log, stderr=log,
                                 env={**os.environ, "TERN_NODE_DIR": net.dir(c)})
            started.append(g)
            with open(pidf, "w") as f:
                f.write(f"{g.pid}\n")
            wait_for(lambda: open(log.name).read().count("ramsgate: gateway of") == 2, 30,
                     "the restarted ramsgate", lambda: gateway_log(net, c))
            # no resubscription: the restarted gateway plays its log back
            base = 1000 * (c - 1)
            deadline = time.monotonic() + 30
            n = base
            while time.monotonic() < deadline and not any(
                    x >= base for x in _numbers(col.contents())):
                _publish_numbered(pub, 1, start=n)
                n += 1
                time.sleep(0.2)
            assert any(x >= base for x in _numbers(col.contents())), \
                status(net, 2) + status(net, 3) + gateway_log(net, c)
        for g in started:  # children of this process: reaped here
            g.terminate()
            g.wait(timeout=20)
        col.stop()


def _outage_run(rams, add_report, delay_ms, outage_s, before_s, after_s, rate):
    t1 = 12.0 + before_s  # setup (amsd census, declarations) takes 6-8 s
    net, mibs = rams({2: [3], 3: [2]}, qtime=0.01, owlt=2,
                     links={(2, 3): {"delay": delay_ms, "seed": 5,
                                     "outages": [(t1, t1 + outage_s)]}})
    _report(net, add_report, (2, 3))
    net.start()
    wait_declared(net, 2, 3, timeout=60)
    with Module(mibs[2], "amsdemo", "test", "", "benchs") as pub, \
            subscriber(mibs[3], BENCH) as sub, Collector(sub) as col:
        wait_gateway_subscribed(pub, BENCH, timeout=60, report=lambda: status(net, 2))
        assert net.clock() < t1 - before_s, f"setup took until t0+{net.clock():.1f} s"
        net.wait_clock(t1 - before_s)
        n = 0
        end = t1 + outage_s + after_s
        while net.clock() < end:  # before, during and after the outage
            pub.publish(BENCH, b"%06d" % n)
            n += 1
            time.sleep(1.0 / rate)
        col.wait_count(n, 60 + 4 * delay_ms / 1000,
                       lambda: status(net, 2) + status(net, 3))
        time.sleep(2 * delay_ms / 1000 + 1)
        col.stop()
        got = _numbers(col.contents())
        assert got == list(range(n)), (len(got), n, [x for x in got if got.count(x) > 1][:5])
        st = net.link_stats(2, 3)
        assert st["a2b"]["dropped_outage"] > 0, st  # the outage hit the traffic
        print(f"RAMS through {delay_ms} ms and a {outage_s} s outage: {n} messages, "
              f"all once, in order; linkem dropped {st['a2b']['dropped_outage']} in the "
              f"outage")


def test_two_continua_through_delay_and_outage(rams, add_report):
    _outage_run(rams, add_report, 1250, 20, 5, 5, 20)


@pytest.mark.long
def test_two_continua_through_delay_and_long_outage(rams, add_report):
    _outage_run(rams, add_report, 1250, 60, 10, 10, 20)


def _env(cc, cont=0, unit=0, src=0, dst=0, subject=0, enc=b"", flags=0, enc_len=None):
    """ION's RAMS envelope (docs/ams.md, "RAMS on the wire")."""
    n = len(enc) if enc_len is None else enc_len
    return struct.pack(">BBHHBBhH", cc, flags, cont, unit, src, dst, subject, n) + enc


def _take_pdu(ep, want_cc, timeout=15):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        d = ep.receive(500)
        if d is not None and d.payload and d.payload[0] == want_cc:
            return d
    raise AssertionError(f"no RAMS PDU with control code {want_cc} within {timeout} s")


def test_an_ion_style_peer_and_its_malformed_pdus(rams, add_report):
    """Continuum 3's gateway is this test, speaking ION's RAMS wire format
    (one PDU per bundle) from ipn:3.9: the Tern gateway of continuum 2
    answers its declaration, takes its petition and sends it publications
    as ION's gateways do; malformed PDUs are counted, logged once per
    cause and dropped, and the gateway keeps serving."""
    net, mibs = rams({2: [3], 3: [2]}, qtime=0.01, gateways=[2])
    _report(net, add_report, (2,))
    net.start()
    with bp.Node(net.dir(3)) as n3, n3.open("ipn:3.9") as ep, n3.open("ipn:3.2") as stray:
        ep.send("ipn:2.9", _env(2, subject=-3))  # declaration, ION's: no flags
        d = _take_pdu(ep, 2)
        cc, flags, cont, unit, src, dst, subj, n = struct.unpack(">BBHHBBhH", d.payload[:12])
        assert (d.src, subj, n) == ("ipn:2.9", -2, 0), d
        bad = [
            b"\x02\x00\x00",  # shorter than an envelope
            _env(9, subject=3),  # no such control code
            _env(4, subject=3, enc_len=100),  # enclosure past the end
            _env(2, subject=77),  # petition for a subject the MIB lacks
            _env(4, subject=3, enc=b"\x00" * 5),  # enclosure too short for AAMS
            _env(2, subject=3) + b"\x00",  # bytes after the PDU
        ]
        for b in bad:
            ep.send("ipn:2.9", b)
        stray.send("ipn:2.9", _env(2, subject=3))  # from no gateway of the MIB
        ep.send("ipn:2.9", _env(2, subject=3))  # a petition for subject 3, domain all
        with Module(mibs[2], "amsdemo", "test", "", "benchs") as pub:
            wait_gateway_subscribed(pub, BENCH, report=lambda: status(net, 2))
            pub.publish(BENCH, b"to an ION gateway")
            d = _take_pdu(ep, 4)
            cc, flags, cont, unit, src, dst, subj, n = struct.unpack(">BBHHBBhH",
                                                                     d.payload[:12])
            enc = d.payload[12:]
            assert (subj, n, len(enc)) == (BENCH, 16 + 17, 16 + 17), d.payload
            assert src == 6  # the publisher's role (benchs)
            # the enclosure: the AAMS message as published in continuum 2
            assert ((enc[2] & 0x7f) << 8 | enc[3], enc[6]) == (2, pub.number)
            assert struct.unpack(">h", enc[12:14])[0] == BENCH
            assert enc[16:] == b"to an ION gateway"
    st = wait_for(lambda: (lambda t: t if (counter(t, r"dropped malformed (\d+)") or 0) >= 4
                           else None)(status(net, 2)), 10, "the drops counted",
                  lambda: status(net, 2))
    assert counter(st, r"dropped malformed (\d+)") == 4, st
    assert counter(st, r"bad code (\d+)") == 1, st
    assert counter(st, r"bad domain (\d+)") == 1, st
    assert counter(st, r"from strangers (\d+)") == 1, st
    log = gateway_log(net, 2)
    for why in ("shorter than a RAMS envelope", "control code is not 2 to 6",
                "enclosure longer than the bytes after the envelope",
                "petition for a continuum, unit, role or subject not in the MIB",
                "bytes after the RAMS PDU's enclosure"):
        assert log.count(why) == 1, log  # said once per cause
    assert "its source is no neighbouring gateway of the MIB" in log, log


def test_a_burst_ten_times_the_link_rate(rams, add_report, monkeypatch):
    """Assured messages published at ten times what the link carries: the
    gateway holds at most its bound (TERN_RAMS_QUEUE_MAX) and slows the
    publisher through its AMS stream; BP holds the rest; every message
    arrives once, in order."""
    rate_bps = 2_000_000  # the link: 250 KB/s
    net, mibs = rams({2: [3], 3: [2]}, qtime=0.01,
                     links={(2, 3): {"delay": 20, "rate": rate_bps, "seed": 3}})
    _report(net, add_report, (2, 3))
    monkeypatch.setenv("TERN_RAMS_QUEUE_MAX", str(256 * 1024))  # ramsgate's bound
    net.start()
    wait_declared(net, 2, 3)
    size, count = 1000, 2500  # 2.5 MB: 10 s of link
    with Module(mibs[2], "amsdemo", "test", "", "benchs") as pub, \
            subscriber(mibs[3], BENCH) as sub, Collector(sub) as col:
        wait_gateway_subscribed(pub, BENCH, report=lambda: status(net, 2))
        t0 = time.monotonic()
        pad = b"x" * (size - 6)
        for i in range(count):
            pub.publish(BENCH, b"%06d" % i + pad)
        took = time.monotonic() - t0
        offered = count * size * 8 / took
        assert offered >= 10 * rate_bps, f"offered {offered / 1e6:.1f} Mbit/s only"
        col.wait_count(count, 120, lambda: status(net, 2) + status(net, 3))
        time.sleep(1)
        got = [int(c[:6]) for c in col.contents()]
        assert got == list(range(count)), (len(got), got[:10])
    st = status(net, 2)
    peak = counter(st, r"queued \d+ bytes \(peak (\d+)")
    bound = counter(st, r"bound (\d+)")
    assert bound == 256 * 1024, st
    # held at most its bound and one batch more, the rest waited in BP's store
    assert peak is not None and peak <= bound + 64 * 1024, st
    waits = counter(st, r"waits for room (\d+)")
    print(f"burst: {count} x {size} B offered at {offered / 1e6:.0f} Mbit/s to a "
          f"{rate_bps / 1e6:.0f} Mbit/s link; gateway queue peak {peak} B (bound {bound}), "
          f"waits for room {waits}")
