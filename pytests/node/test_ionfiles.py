"""Nodes configured as ION 4.1.3 configures them: a node directory holding
ION's admin files one per program (node.ionrc, node.ionsecrc, node.ltprc,
node.bprc, node.ipnrc, as 'ionstart -i node.ionrc -s node.ionsecrc -l
node.ltprc -b node.bprc -p node.ipnrc' runs them) and no host.rc; LTP's
induct side declared as a seat ('a seat', then a bare 's'), spans in both
of the forms ION 4.1.3 reads. Bundles go over LTP between two such nodes
and between one and a node started from a host.rc, every one exactly once;
malformed files are refused naming file:line."""
import os

from nodehelp import sha, sized_payload
from tern import bp
from tern.testing import free_ports, log_tail, read_ports

SIZES = [1, 100, 1400, 5000, 65536, 300_000]


def ionrc(me, peer, ionconfig=True):
    return (f"1 {me}{' node.ionconfig' if ionconfig else ''}\n"
            "s\n"
            "m horizon +0\n"
            f"a contact +0 +86400 {me} {peer} 12500000\n"
            f"a contact +0 +86400 {peer} {me} 12500000\n"
            f"a range +0 +86400 {me} {peer} 1\n")


# ION's own store settings (configFlags 1: SDR in DRAM, a volatile store)
IONCONFIG = ("wmKey 66236\nsdrName ion\nwmSize 10000000\nconfigFlags 1\n"
             "heapWords 10000000\npathName /tmp\n")


def ltprc(me, peer, my_port, peer_port, older=False):
    """ION 4.1 style: spans, then the seat, then a bare 's'. older: the span
    in the form with block sizes and a negative queuing latency (most of
    ION 4.1.3's own test configurations), and ltpadmin's unquoted seat."""
    lines = ["# LTP engine, ION 4.1 style", "1 32"]
    if older:
        lines.append(f"a span {peer} 32 100000 32 100000 1400 10000 1 "
                     f"'udplso 127.0.0.1:{peer_port}' -1")
        lines.append(f"a seat udplsi 127.0.0.1:{my_port}")
    else:
        lines.append(f"a span {peer} 32 32 1400 10000 1 'udplso 127.0.0.1:{peer_port}'")
        lines.append(f"a seat 'udplsi 127.0.0.1:{my_port}'")
    lines += ["m screening n", "w 1", "s"]
    return "\n".join(lines) + "\n"


def bprc(me, peer):
    return ("1\n"
            "a scheme ipn 'ipnfw' 'ipnadminep'\n"
            f"a endpoint ipn:{me}.1 q\n"
            f"a endpoint ipn:{me}.2 q\n"
            "a protocol ltp 1400 100\n"
            f"a induct ltp {me} ltpcli\n"
            f"a outduct ltp {peer} ltpclo\n"
            "r 'ipnadmin node.ipnrc'\n"
            "w 1\n"
            "s\n")


def write(d, name, text):
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "w") as f:
        f.write(text)


def split_node(d, me, peer, my_port, peer_port, older=False):
    write(d, "node.ionrc", ionrc(me, peer))
    write(d, "node.ionconfig", IONCONFIG)
    write(d, "node.ionsecrc", "1\n")
    write(d, "node.ltprc", ltprc(me, peer, my_port, peer_port, older))
    write(d, "node.bprc", bprc(me, peer))
    write(d, "node.ipnrc", f"a plan {peer} ltp/{peer}\n")


def hostrc_node(d, me, peer, my_port, peer_port):
    """The same node as an ionstart host.rc, with the older 's' form."""
    text = ("## begin ionadmin\n" + ionrc(me, peer, ionconfig=False) + "## end ionadmin\n"
            "## begin ltpadmin\n1 32\n"
            f"a span {peer} 32 32 1400 10000 1 'udplso 127.0.0.1:{peer_port}'\n"
            f"s 'udplsi 127.0.0.1:{my_port}'\n## end ltpadmin\n"
            "## begin bpadmin\n" + bprc(me, peer).replace("r 'ipnadmin node.ipnrc'\n", "") +
            "## end bpadmin\n"
            f"## begin ipnadmin\na plan {peer} ltp/{peer}\n## end ipnadmin\n")
    write(d, "host.rc", text)


def exchange(net, a, b, tag):
    """SIZES from a to b and back, each delivered exactly once and intact."""
    sent = {a: {}, b: {}}
    with bp.Node(net.dir(a)) as na, bp.Node(net.dir(b)) as nb:
        assert (na.number, nb.number) == (a, b)
        ra, rb = na.open(f"ipn:{a}.1"), nb.open(f"ipn:{b}.1")
        ta, tb = na.open(f"ipn:{a}.2"), nb.open(f"ipn:{b}.2")
        for src, tx, dst in ((a, ta, b), (b, tb, a)):
            for i, n in enumerate(SIZES):
                t = f"{tag}{src}-{i}"
                data = sized_payload(t, n)
                tx.send(f"ipn:{dst}.1", data, lifetime_s=600)
                sent[dst][t] = (n, sha(data))
            tx.flush(60_000)
        for rx, dst, src in ((rb, b, a), (ra, a, b)):
            got = {}
            while len(got) < len(sent[dst]):
                d = rx.receive(60_000)
                assert d is not None, (f"node {dst}: {len(got)} of {len(sent[dst])} "
                                       f"bundles from node {src}\n{net.log_tails()}")
                t = next(k for k, (n, h) in sent[dst].items()
                         if n == len(d.payload) and h == sha(d.payload))
                assert t not in got, f"node {dst}: bundle {t} delivered twice"
                assert d.src == f"ipn:{src}.2"
                got[t] = True
            assert rx.receive(500) is None, f"node {dst}: an extra bundle arrived"


def test_two_nodes_from_ion_admin_files(network, node_dir):
    p1, p2 = free_ports(2)
    d1, d2 = os.path.join(node_dir, "n1"), os.path.join(node_dir, "n2")
    split_node(d1, 1, 2, p1, p2)
    split_node(d2, 2, 1, p2, p1, older=True)
    net = network.adopt({1: (d1, p1), 2: (d2, p2)})
    net.start()  # 'tern start <dir>': the directories have no host.rc
    for num, d in ((1, d1), (2, d2)):
        assert not os.path.exists(os.path.join(d, "host.rc"))
        assert read_ports(d).get(("ltp", "udp")) == (p1 if num == 1 else p2)
        log = log_tail(d, 300)
        assert (f"from {d}/node.ionrc, node.ionsecrc, node.ltprc, node.bprc, "
                f"node.ipnrc") in log, log
        assert "store: in memory" in log, log  # node.ionconfig: configFlags 1
    log2 = log_tail(d2, 300)
    assert (f"{d2}/node.ltprc:3: span 1: the block sizes (100000, 100000) of this "
            f"older form are ignored") in log2, log2
    assert f"{d2}/node.bprc:8" in log2, log2  # 'r' is not acted on: a warning
    exchange(net, 1, 2, "s")
    # l seat at runtime lists the seat where it was declared
    r = net.admin(1, "ltpadmin", "l seat")
    assert r.returncode == 0, r.stdout + r.stderr
    assert (f"seat 'udplsi 127.0.0.1:{p1}' ({d1}/node.ltprc:4)\n"
            f"listening on UDP port {p1}") in r.stdout, r.stdout
    r = net.admin(2, "ltpadmin", f"i seat 'udplsi 127.0.0.1:{p2}'")
    assert f"seat 'udplsi 127.0.0.1:{p2}' ({d2}/node.ltprc:4)" in r.stdout, r.stdout


def test_admin_files_node_and_host_rc_node(network, node_dir):
    p1, p3 = free_ports(2)
    d1, d3 = os.path.join(node_dir, "n1"), os.path.join(node_dir, "n3")
    split_node(d1, 1, 3, p1, p3)
    hostrc_node(d3, 3, 1, p3, p1)
    net = network.adopt({1: (d1, p1), 3: (d3, p3)})
    net.start()
    assert f"from {d3}/host.rc" in log_tail(d3, 200)
    exchange(net, 1, 3, "m")


def test_malformed_admin_files_are_refused(network, node_dir):
    """tern start says what was wrong and where, and no node runs."""
    p1, p2 = free_ports(2)
    d = os.path.join(node_dir, "bad")
    split_node(d, 1, 2, p1, p2)
    net = network.adopt({1: (d, p1)})
    cases = [
        (f"1 32\na seat 'udplsi 127.0.0.1:{p1}'\na seat 'udplsi 127.0.0.1:70000'\n",
         f"{d}/node.ltprc:3: LSI command 'udplsi 127.0.0.1:70000': udplsi: bad port "
         f"'70000' in '127.0.0.1:70000' (expected 0-65535)"),
        ("1 32\na seat\ns\n",
         f"{d}/node.ltprc:2: 'a seat' takes one LSI command, got none; expected "
         f"\"a seat '<LSI command>'\""),
        (f"1 32\na seat 'udplsi 127.0.0.1:{p1}'\na seat 'udplsi 127.0.0.1:{p2}'\ns\n",
         f"{d}/node.ltprc:3: a second LTP seat 'udplsi 127.0.0.1:{p2}' (the first, "
         f"'udplsi 127.0.0.1:{p1}', is at {d}/node.ltprc:2): Tern's link service "
         f"listens on one address"),
    ]
    for text, want in cases:
        write(d, "node.ltprc", text)
        r = net.tern("start", d)
        assert r.returncode != 0, r.stdout + r.stderr
        assert want in r.stdout + r.stderr, r.stdout + r.stderr
        assert not net.running(1)
    os.remove(os.path.join(d, "node.ionrc"))
    r = net.tern("start", d)
    assert r.returncode != 0
    assert f"{d}: no host.rc and no node.ionrc" in r.stdout + r.stderr, r.stdout + r.stderr
