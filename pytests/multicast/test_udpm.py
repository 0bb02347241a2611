"""The broadcast convergence layer (udpm) between real ternd nodes.

- four network namespaces on one bridge (root only, mcast_net.py): node 1's
  udpm outduct sends to a multicast group (and, in the second test, to the
  subnet's broadcast address) that nodes 2, 3 and 4 listen on; bundles for
  node 3 leave as one datagram each (tshark on node 1's link, and the
  sender's counters), node 3 takes each exactly once, nodes 2 and 4 count
  them as not for them;
- three nodes on 127.0.0.1 sharing one group port (multicast loopback);
- a malformed udpm duct in a host.rc is refused naming file:line and what
  was expected.
"""
import os
import re
import shutil
import socket
import subprocess
import time

import pytest

from tern import bp
from tern.testing import in_netns

from mcast_net import bridged_namespaces, skip_unless_root

N = 50
GROUP = "239.23.0.7"
PORT = 4556


def _tool_env():
    env = dict(os.environ)
    for k in ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS"):
        env.pop(k, None)
    return env


_UDPM_FIELDS = {"in": r"datagrams in (\d+)", "out": r"datagrams in \d+ out (\d+)",
                "bundles_in": r"bundles in (\d+)", "not_for_us": r"not for us (\d+)",
                "own": r"own (\d+)", "refused": r"refused (\d+)",
                "too_big": r"too big (\d+)", "kernel_drops": r"kernel drops (\d+)"}


def udpm_counters(status_text):
    """{name: value} of the 'bp/udpm:' line of a node's status (ternd's
    udpm adapter counters; zeros if the line is absent: nothing went in or
    out). Names: in, out (datagrams), bundles_in, not_for_us, own, refused,
    too_big, kernel_drops."""
    out = {k: 0 for k in _UDPM_FIELDS}
    for line in status_text.splitlines():
        if line.startswith("bp/udpm:"):
            for k, rx in _UDPM_FIELDS.items():
                m = re.search(rx, line)
                if m:
                    out[k] = int(m.group(1))
    return out


def send_bundles(net, num, dest, count, size=1000):
    with net.client_ns(num), bp.Node(net.dir(num)) as n:
        ep = n.open(f"ipn:{num}.1")
        for i in range(count):
            body = f"b{i}:".encode()
            ep.send(dest, body + b"x" * (size - len(body)), wait=(i == count - 1))


def wait_counters(net, num, key, want, timeout=20):
    deadline = time.monotonic() + timeout
    c = {}
    while time.monotonic() < deadline:
        c = udpm_counters(net.status(num))
        if c[key] >= want:
            return c
        time.sleep(0.2)
    return c


def udpm_network(network, mn, dest_addr, in_cmds):
    """Nodes 1..4 in mn's namespaces: 1 sends over udpm to dest_addr:PORT,
    with plans for 2, 3 and 4; 2..4 listen there with in_cmds[num]."""
    net = network(4, protocol="udp", edges=[], netns=mn.netns(), addrs=mn.addr_map(),
                  endpoints=(1,), via="ternd")
    duct = f"{dest_addr}:{PORT}"
    net.add_lines(1, "bpadmin", "a protocol udpm", f"a outduct udpm {duct} 'udpmclo'")
    net.add_lines(1, "ipnadmin", *[f"a plan {k} udpm/{duct}" for k in (2, 3, 4)])
    for k in (2, 3, 4):
        net.add_lines(k, "bpadmin", "a protocol udpm", f"a induct udpm {duct} '{in_cmds[k]}'")
    net.write()
    return net, duct


class Tshark:
    """tshark on device dev of namespace i of mn, for UDP to dst (any port):
    once it runs, probes to dst's discard port (9) are sent from the
    namespace until one shows in the file, so that nothing sent after
    start is missed; count() counts the datagrams to port only."""

    def __init__(self, mn, i, dev, dst, port, path):
        self.path = path
        self.port = port
        self.proc = mn.popen(i, "tshark", "-i", dev, "-f", f"udp and dst host {dst}",
                             "-w", path, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True, env=_tool_env())
        seen, deadline = "", time.monotonic() + 20
        while "Capturing on" not in seen and time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            if not line:
                break
            seen += line
        self.error = None if "Capturing on" in seen else (seen.strip() or "no output")
        if self.error:
            return
        with in_netns(mn.names[i]):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        with s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
            while time.monotonic() < deadline:
                s.sendto(b"probe", (dst, 9))
                time.sleep(0.1)
                if self.count(f"udp.dstport == 9"):
                    return
        self.error = "no probe datagram reached the capture file in 20 s"

    def stop(self):
        time.sleep(0.5)  # the last datagrams reach the file
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def count(self, display_filter=None):
        """Packets in the file matching display_filter (default: UDP to port)."""
        flt = display_filter or f"udp.dstport == {self.port}"
        r = subprocess.run(["tshark", "-r", self.path, "-Y", flt], capture_output=True,
                           text=True, timeout=60, env=_tool_env())
        return len([ln for ln in r.stdout.splitlines() if ln.strip()])


def check_one_medium(network, node_dir, mn, dest_addr, in_cmds, capture):
    net, duct = udpm_network(network, mn, dest_addr, in_cmds)
    net.start()
    cap = None
    if capture and shutil.which("tshark"):
        cap = Tshark(mn, 1, mn.dev, dest_addr, PORT, os.path.join(node_dir, "udpm.pcap"))
        if cap.error:
            print(f"tshark cannot capture: {cap.error}; counting with the CL counters")
            cap = None
    send_bundles(net, 1, "ipn:3.1", N)
    got = net.receive(3, "ipn:3.1", N, timeout=30)  # and no extra one (a duplicate)
    tags = sorted(int(d.payload.split(b":", 1)[0][1:]) for d in got)
    assert tags == list(range(N)), f"node 3 got bundles {tags}"
    c1 = udpm_counters(net.status(1))
    c2 = wait_counters(net, 2, "not_for_us", N)
    c3 = udpm_counters(net.status(3))
    c4 = wait_counters(net, 4, "not_for_us", N)
    assert c1["out"] == N, f"sender's datagrams out: {c1}"
    assert c3["bundles_in"] == N and c3["not_for_us"] == 0, c3
    for k, c in ((2, c2), (4, c4)):
        assert c["in"] == N and c["not_for_us"] == N and c["bundles_in"] == 0, \
            f"node {k}: {c}"
    for k in (2, 4):
        st = net.counters(k)
        assert st.get("bp_delivered", 0) == 0, f"node {k} delivered something: {st}"
    wire = None
    if cap:
        cap.stop()
        wire = cap.count()
        assert wire == N, f"tshark saw {wire} datagrams to {duct} for {N} bundles"
        bpv7 = cap.count(f"udp.dstport == {PORT} && bpv7")
        print(f"tshark: {wire} datagrams on node 1's link ({bpv7} dissected as BPv7)")
    print(f"{duct}: {N} bundles for node 3 -> {c1['out']} datagrams sent"
          f"{'' if wire is None else f', {wire} on the wire'}; node 3 took "
          f"{c3['bundles_in']}, nodes 2 and 4 dropped {c2['not_for_us']} and "
          f"{c4['not_for_us']} as not for them")
    net.stop()


@pytest.fixture
def ns4():
    """Four namespaces on a bridge. Asked for before network, so they are
    removed after the nodes in them have stopped."""
    skip_unless_root()
    with bridged_namespaces(4) as mn:
        yield mn


def test_udpm_multicast_between_four_namespaces(ns4, network, node_dir):
    # node 2 names its interface; 3 and 4 rely on the route to 224.0.0.0/4
    in_cmds = {2: f"udpmcli if={ns4.addrs[2]}", 3: "udpmcli", 4: "udpmcli"}
    check_one_medium(network, node_dir, ns4, GROUP, in_cmds, capture=True)


def test_udpm_subnet_broadcast_between_four_namespaces(ns4, network, node_dir):
    in_cmds = {k: "udpmcli" for k in (2, 3, 4)}
    check_one_medium(network, node_dir, ns4, ns4.broadcast, in_cmds, capture=True)


def test_udpm_on_loopback_three_nodes_share_a_group_port(network):
    """No namespaces: multicast on 127.0.0.1 (if=127.0.0.1 on both sides),
    nodes 2 and 3 bound to the same group port."""
    net = network(3, protocol="udp", edges=[], endpoints=(1,), via="ternd")
    duct = f"239.23.1.{os.getpid() % 250 + 1}:{net.nodes[1].port}"
    net.add_lines(1, "bpadmin", "a protocol udpm",
                  f"a outduct udpm {duct} 'udpmclo if=127.0.0.1'")
    net.add_lines(1, "ipnadmin", f"a plan 2 udpm/{duct}", f"a plan 3 udpm/{duct}")
    for k in (2, 3):
        net.add_lines(k, "bpadmin", "a protocol udpm",
                      f"a induct udpm {duct} 'udpmcli if=127.0.0.1'")
    net.write()
    net.start()
    send_bundles(net, 1, "ipn:2.1", 10)
    send_bundles(net, 1, "ipn:3.1", 20)
    assert len(net.receive(2, "ipn:2.1", 10)) == 10
    assert len(net.receive(3, "ipn:3.1", 20)) == 20
    c2 = wait_counters(net, 2, "not_for_us", 20)
    c3 = wait_counters(net, 3, "not_for_us", 10)
    assert c2["not_for_us"] == 20 and c3["not_for_us"] == 10, (c2, c3)
    assert udpm_counters(net.status(1))["out"] == 30
    net.stop()


@pytest.mark.parametrize("line,expect", [
    ("a outduct udpm 239.1.2.3:4556 'udpmclo ttl=300'", "expected 'udpmclo"),
    ("a outduct udpm 239.1.2.3:0 'udpmclo'", "expected 1-65535"),
    ("a induct udpm 239.1.2.3:4556 'udpmcli loop=1'", "expected 'udpmcli"),
    ("a induct udpm some.host:4556 'udpmcli'", "not an IPv4 address"),
])
def test_udpm_bad_duct_names_file_and_line(node_dir, tern_bin, line, expect):
    d = os.path.join(node_dir, "n1")
    os.makedirs(d)
    rc = os.path.join(d, "host.rc")
    with open(rc, "w") as f:
        f.write("## begin ionadmin\n1 1\n## end ionadmin\n"
                "## begin bpadmin\n1\na scheme ipn 'ipnfw' 'ipnadminep'\n"
                f"a protocol udpm\n{line}\ns\n## end bpadmin\n")
    r = subprocess.run([tern_bin("tern"), "start", rc], capture_output=True, text=True,
                       timeout=60)
    out = r.stdout + r.stderr
    if r.returncode == 0:
        subprocess.run([tern_bin("tern"), "stop", d], capture_output=True, timeout=60)
    assert r.returncode != 0, f"'{line}' accepted:\n{out}"
    assert "host.rc:8" in out and expect in out, out


def test_udpm_group_bundles_one_datagram_each_reach_every_member(ns4, network, node_dir):
    """Multicast groups over the broadcast medium: nodes 2 and 3 are members
    of group 7, node 4 is not. Every node sends and listens on one udpm group
    (petitions travel the same way). Each group bundle node 1 sends leaves as
    ONE datagram (its block 195 names both members), both members deliver it
    once, and nobody sends it again (each receiver's route to the others is
    the medium it came in on: 'not sent back')."""
    net = network(4, protocol="udp", edges=[], netns=ns4.netns(), addrs=ns4.addr_map(),
                  endpoints=(1,), via="ternd")
    duct = f"{GROUP}:{PORT}"
    for k in (1, 2, 3, 4):
        net.add_lines(k, "bpadmin", "a scheme imc 'imcfw' 'imcadminep'", "a protocol udpm",
                      f"a induct udpm {duct} 'udpmcli'", f"a outduct udpm {duct} 'udpmclo'")
        net.add_lines(k, "ipnadmin",
                      *[f"a plan {p} udpm/{duct}" for p in (1, 2, 3, 4) if p != k])
    for k in (2, 3):
        net.add_lines(k, "bpadmin", "a endpoint imc:7.1 q")
    net.write()
    net.start()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        m = re.search(r"^imc group 7: members(.*)$", net.status(1), re.M)
        if m and m.group(1).split() == ["2", "3"]:
            break
        time.sleep(0.2)
    else:
        raise AssertionError(f"node 1 never learned group 7's members:\n{net.status(1)}")
    time.sleep(1)  # the last petitions and briefings have gone by
    before = {k: udpm_counters(net.status(k))["out"] for k in (1, 2, 3, 4)}
    cap = None
    if shutil.which("tshark"):
        cap = Tshark(ns4, 1, ns4.dev, GROUP, PORT, os.path.join(node_dir, "groups.pcap"))
        if cap.error:
            print(f"tshark cannot capture: {cap.error}; counting with the CL counters")
            cap = None
    send_bundles(net, 1, "imc:7.1", N)
    for k in (2, 3):
        got = net.receive(k, "imc:7.1", N, timeout=30)  # and no extra one
        tags = sorted(int(d.payload.split(b":", 1)[0][1:]) for d in got)
        assert tags == list(range(N)), f"node {k} got bundles {tags}"
        assert all(d.src == "ipn:1.1" for d in got)
    time.sleep(1)
    after = {k: udpm_counters(net.status(k))["out"] for k in (1, 2, 3, 4)}
    assert after[1] - before[1] == N, f"sender's datagrams: {before[1]} -> {after[1]}"
    for k in (2, 3, 4):
        assert after[k] == before[k], f"node {k} sent datagrams: {before[k]} -> {after[k]}"
    st4 = net.status(4)
    m = re.search(r"^imc: .*delivered (\d+), .*not sent back (\d+)", st4, re.M)
    assert m and int(m.group(1)) == 0 and int(m.group(2)) >= 2 * N, st4
    if cap:
        cap.stop()
        # petitions and briefings may have crossed earlier; from the first
        # group bundle on, one datagram per bundle
        wire = cap.count()
        assert wire == N, f"tshark saw {wire} datagrams for {N} group bundles"
    net.stop()
