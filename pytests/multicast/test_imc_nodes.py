"""Multicast groups between real ternd processes over LTP on 127.0.0.1: five
nodes in a tree (1 - 2 - 3, 2 - 4 - 5), two groups, members joining and
leaving while bundles flow. Every delivery is checked by payload and counted:
a member gets each bundle of its group once, a node that is not a member gets
none, and membership (petitions, briefings) reaches the sender."""
import re
import threading
import time

from tern import bp

EDGES = [(1, 2), (2, 3), (2, 4), (4, 5)]


def members(net, num, group):
    """The members of group as node num's status lists them."""
    m = re.search(rf"^imc group {group}: members(.*)$", net.status(num), re.M)
    return sorted(int(x) for x in m.group(1).split()) if m else []


def wait_members(net, num, group, want, timeout=30):
    deadline = time.monotonic() + timeout
    got = None
    while time.monotonic() < deadline:
        got = members(net, num, group)
        if got == sorted(want):
            return
        time.sleep(0.2)
    raise AssertionError(f"node {num}: group {group} members {got}, expected {sorted(want)}"
                         f"\n{net.status(num)}\n{net.log_tails()}")


def group_arrivals(net, num):
    """Group bundles that reached node num for itself: delivered, or for an
    endpoint it no longer has."""
    m = re.search(r"^imc: .*delivered (\d+), no endpoint (\d+)", net.status(num), re.M)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def payload(group, phase, i):
    return f"g{group}-{phase}-{i}:".encode() + bytes((i * 7 + k) % 251 for k in range(300))


def send(net, group, phase, count):
    sent = []
    with net.client_ns(1), bp.Node(net.dir(1)) as n:
        ep = n.open("ipn:1.1")
        for i in range(count):
            data = payload(group, phase, i)
            ep.send(f"imc:{group}.1", data, lifetime_s=600)
            sent.append(data)
        ep.flush(30_000)
    return sent


class Collector:
    """Holds imc:<group>.1 open on node num (a join) and collects what comes."""

    def __init__(self, net, num, group):
        self.net, self.num, self.group = net, num, group
        self.got, self.stop = [], threading.Event()
        self.opened = threading.Event()
        self.error = None
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()
        assert self.opened.wait(20), f"node {num}: imc:{group}.1 not opened"

    def _run(self):
        try:
            with self.net.client_ns(self.num), bp.Node(self.net.dir(self.num)) as n:
                ep = n.open(f"imc:{self.group}.1")
                self.opened.set()
                while not self.stop.is_set():
                    d = ep.receive(200)
                    if d is not None:
                        self.got.append(d)
        except Exception as e:  # surfaced by close()
            self.error = e
            self.opened.set()

    def close(self):
        self.stop.set()
        self.t.join(20)
        assert self.error is None, f"node {self.num}: {self.error!r}"
        return self.got


def check_once(got, sent, what):
    payloads = [d.payload for d in got]
    for p in payloads:
        assert p in sent, f"{what}: unknown payload {p[:30]!r}"
    dup = {p[:20] for p in payloads if payloads.count(p) > 1}
    assert not dup, f"{what}: delivered twice: {sorted(dup)[:5]}"
    for d in got:
        assert d.src == "ipn:1.1", f"{what}: source {d.src}"
    return set(payloads)


def test_two_groups_members_join_and_leave_while_bundles_flow(network):
    net = network(5, edges=EDGES, endpoints=(1,))
    for num in range(1, 6):
        net.add_lines(num, "bpadmin", "a scheme imc 'imcfw' 'imcadminep'")
    for num in (3, 5):
        net.add_lines(num, "bpadmin", "a endpoint imc:7.1 q")
    net.add_lines(4, "bpadmin", "a endpoint imc:9.1 q")
    net.write()
    net.start()
    wait_members(net, 1, 7, [3, 5])
    wait_members(net, 1, 9, [4])

    # phase A: members as configured
    a7, a9 = send(net, 7, "A", 30), send(net, 9, "A", 30)
    for num in (3, 5):
        got = net.receive(num, "imc:7.1", 30, timeout=60)
        assert check_once(got, a7, f"node {num} group 7 A") == set(a7)
    got = net.receive(4, "imc:9.1", 30, timeout=60)
    assert check_once(got, a9, "node 4 group 9 A") == set(a9)

    # phase B, while membership changes: node 5 joins group 9 (an
    # application opens imc:9.1), node 3 leaves group 7 (its endpoint goes)
    join = Collector(net, 5, 9)
    b_sent = {7: [], 9: []}
    stop = threading.Event()

    def traffic():
        k = 0
        while not stop.is_set():
            b_sent[7] += send(net, 7, f"B{k}", 5)
            b_sent[9] += send(net, 9, f"B{k}", 5)
            k += 1

    t = threading.Thread(target=traffic, daemon=True)
    t.start()
    r = net.admin(3, "bpadmin", "d endpoint imc:7.1")
    assert r.returncode == 0, r.stdout + r.stderr
    wait_members(net, 1, 9, [4, 5])
    wait_members(net, 1, 7, [5])
    stop.set()
    t.join(60)
    assert b_sent[7] and b_sent[9]

    # phase C: the new memberships hold
    time.sleep(1)  # the last B bundles settle
    rx3 = group_arrivals(net, 3)
    c7, c9 = send(net, 7, "C", 30), send(net, 9, "C", 30)
    got5_7 = net.receive(5, "imc:7.1", 30 + len(b_sent[7]), timeout=90)
    s57 = check_once(got5_7, b_sent[7] + c7, "node 5 group 7 B+C")
    assert s57 == set(b_sent[7] + c7)
    got4_9 = net.receive(4, "imc:9.1", len(b_sent[9]) + 30, timeout=90)
    assert check_once(got4_9, b_sent[9] + c9, "node 4 group 9 B+C") == set(b_sent[9] + c9)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not set(c9) <= {d.payload for d in join.got}:
        time.sleep(0.2)
    got5_9 = join.close()
    s59 = check_once(got5_9, b_sent[9] + c9, "node 5 group 9 (joined)")
    assert set(c9) <= s59, f"node 5 joined group 9 but got {len(set(c9) & s59)} of 30"
    # node 3 left group 7: nothing of C reaches it (its endpoint is gone:
    # counted as no endpoint at most while its leave was on the way)
    st3 = net.status(3)
    assert "imc:7.1" not in st3.split("outducts:")[0], st3
    assert group_arrivals(net, 3) == rx3, f"{rx3}\n{st3}"
    # nodes 1 and 2 are no members: nothing delivered there
    for num in (1, 2):
        m = re.search(r"^imc: .*delivered (\d+)", net.status(num), re.M)
        assert m and int(m.group(1)) == 0, net.status(num)
    # one copy per link: node 2 got each group bundle once (no duplicates)
    c2 = net.counters(2)
    assert c2.get("duplicates", 0) == 0, c2


def test_a_restarted_node_keeps_the_memberships_it_was_told(network):
    """Node 1 (durable store) is SIGKILLed while member node 3 is stopped, so
    nobody can tell it the memberships again: they come back from its store,
    and bundles sent to the group reach node 3 when it returns."""
    net = network(3, endpoints=(1,))
    for num in (1, 2, 3):
        net.add_lines(num, "bpadmin", "a scheme imc 'imcfw' 'imcadminep'")
    net.add_lines(3, "bpadmin", "a endpoint imc:7.1 q")
    net.write()
    net.start()
    wait_members(net, 1, 7, [3])
    net.stop(3)
    net.kill(1)
    net.start(1)
    assert members(net, 1, 7) == [3], net.status(1)
    sent = send(net, 7, "R", 10)
    net.start(3)
    got = net.receive(3, "imc:7.1", 10, timeout=60)
    assert check_once(got, sent, "node 3 after node 1's restart") == set(sent)
