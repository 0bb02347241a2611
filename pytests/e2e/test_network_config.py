"""What Network(links=..., planned_outages=...) writes, before anything runs:
spans and outducts point at linkem's ports, ranges cover the emulated delay,
the contact plan leaves out the announced outages, and outages move to
linkem's clock."""
import time
import re

import pytest

from tern.testing import Network, ion_time


def spans(rc):
    return dict(re.findall(r"a span (\d+) .*'udplso 127\.0\.0\.1:(\d+)", rc))


def test_spans_and_ranges(node_dir):
    net = Network(node_dir, 3, links={(2, 1): {"delay": 1250, "b2a_delay": 2100, "jitter": 100},
                                      (2, 3): {"ber": 1e-5}})
    p21, p23 = net.link_ports[(2, 1)], net.link_ports[(2, 3)]
    assert spans(net.rc_text(2)) == {"1": str(p21["a2b"]), "3": str(p23["a2b"])}
    assert spans(net.rc_text(1)) == {"2": str(p21["b2a"])}
    assert spans(net.rc_text(3)) == {"2": str(p23["b2a"])}
    assert net.edge_owlt(1, 2) == net.edge_owlt(2, 1) == 3  # 2.1 s + 0.1 s jitter
    assert net.edge_owlt(2, 3) == 1
    assert re.search(r"a range \S+ \S+ 1 2 3$", net.rc_text(1), re.M)
    assert re.search(r"a range \S+ \S+ 2 3 1$", net.rc_text(1), re.M)
    udp = Network(node_dir + "/u", 2, protocol="udp", links={(1, 2): {"delay": 10}})
    port = udp.link_ports[(1, 2)]["a2b"]
    assert f"a outduct udp 127.0.0.1:{port} udpclo" in udp.rc_text(1)
    assert f"a plan 2 udp/127.0.0.1:{port}" in udp.rc_text(1)


def test_bad_links(node_dir):
    with pytest.raises(ValueError, match="not an edge"):
        Network(node_dir, 3, links={(1, 3): {}})
    with pytest.raises(ValueError, match="outages="):
        Network(node_dir, 2, links={(1, 2): {"outage": [(1, 2)]}})
    with pytest.raises(ValueError, match="twice"):
        Network(node_dir, 2, links={(1, 2): {}, (2, 1): {}})


def test_planned_outage_contacts(node_dir):
    net = Network(node_dir, 2, planned_outages={(2, 1): [(30, 50), (70.5, 80.2)]})
    net.t0 = int(time.time()) + 100
    rc = net.rc_text(1)
    t = lambda s: ion_time(net.t0 + s)  # noqa: E731
    for x, y in ((1, 2), (2, 1)):
        got = re.findall(rf"a contact (\S+) (\S+) {x} {y} ", rc)
        assert got == [(ion_time(net.epoch), t(30)), (t(50), t(70)), (t(81), ion_time(net.until))]


def test_outages_on_linkem_clock(node_dir):
    net = Network(node_dir, 2, links={(1, 2): {"outages": [(5, 10), (20, 30)],
                                               "a2b_outages": [(1, 3)],
                                               "periodic": (2, 1, 40), "delay": 5}})
    # linkem starting 2.5 s after t0 (a restart, say): windows move, past ones go
    kw = net._linkem_args((1, 2), 2.5)
    assert kw["outage"] == [(2.5, 7.5), (17.5, 27.5)]
    assert kw["a2b_outage"] == [(0.0, 0.5)]
    assert kw["periodic"] == (2, 1, 37.5)
    assert kw["delay"] == 5
    assert "outages" not in kw
