"""Helpers for test networks: private short directories and published ports.

Convention: a daemon binds port 0 and, once listening, publishes what it got
in the file "ports" of its node directory, one line per socket:

    <name> <proto> <port>        e.g.  "ltp udp 40113"

written atomically (temporary file + rename), so a reader never sees half a
line. Tests read it with wait_ports() and never pick port numbers themselves,
so suites can run in parallel without racing for ports.

Network (below) builds networks of real ternd processes: it writes their
host.rc files, starts, kills and stops them, waits for deliveries and
collects their logs. Its nodes must know each other's ports before they
start, so it picks them with free_ports() (bind port 0, never the same one
twice) and checks what each node published.
"""
import collections
import contextlib
import ctypes
import datetime
import fcntl
import hashlib
import math
import os
import random
import re
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import time

PORTS_FILE = "ports"


def short_tmpdir(prefix="tn-"):
    """A new private directory with a short path (Unix socket paths are
    limited to 108 bytes, and pytest's own tmp_path is often longer)."""
    base = os.environ.get("TERN_TMP", "/tmp")
    return tempfile.mkdtemp(prefix=prefix, dir=base)


def remove_tree(path):
    shutil.rmtree(path, ignore_errors=True)


def read_ports(node_dir):
    """{(name, proto): port} from node_dir/ports; {} if not there yet."""
    out = {}
    try:
        with open(os.path.join(node_dir, PORTS_FILE)) as f:
            for lineno, line in enumerate(f, 1):
                words = line.split()
                if not words or words[0].startswith("#"):
                    continue
                if len(words) != 3 or not words[2].isdigit():
                    raise ValueError(f"{node_dir}/{PORTS_FILE}:{lineno}: expected "
                                     f"'<name> <proto> <port>', got {line.strip()!r}")
                out[(words[0], words[1])] = int(words[2])
    except FileNotFoundError:
        pass
    return out


def wait_ports(node_dir, names, timeout=10.0, proc=None):
    """Waits until every (name, proto) in names is published; returns the map.
    Fails early, with the daemon's exit status, if proc (a Popen) dies."""
    deadline = time.monotonic() + timeout
    while True:
        ports = read_ports(node_dir)
        if all(n in ports for n in names):
            return ports
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"daemon exited with status {proc.returncode} before "
                               f"publishing {names} in {node_dir}/{PORTS_FILE}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"{names} not published in {node_dir}/{PORTS_FILE} "
                               f"after {timeout} s (have {ports})")
        time.sleep(0.01)


# ---------------------------------------------------------------- real nodes
#
# Network: N real ternd processes on 127.0.0.1, each in its own node
# directory, configured by ION host.rc files this module writes.
#
#     net = Network(short_tmpdir(), 3)              # a line 1 - 2 - 3 over LTP
#     net.start()
#     with tern.bp.Node(net.dir(1)) as n:
#         n.open("ipn:1.1").send("ipn:3.1", b"hi")
#     net.wait_delivered(3, "ipn:3.1", 1, timeout=20)
#     net.kill(2); net.start([2])                   # SIGKILL and start again
#     net.stop()
#
# Each node's spans (LTP) or outducts (UDP) name its neighbours' ports, so the
# ports must be known before any node starts: unlike single daemons (which
# bind port 0 and publish what they got), a Network picks them itself with
# free_ports() and checks, after start, that each node published the same.

_REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                      "..", "..", ".."))
_picked_ports = set()  # every port this process handed out, so none twice


def bin_dir():
    """Where Tern's programs are: $TERN_BUILD_DIR/bin, else build/bin of the
    checkout this package sits in."""
    return os.path.join(os.environ.get("TERN_BUILD_DIR", os.path.join(_REPO, "build")),
                        "bin")


def free_ports(count, kind=socket.SOCK_DGRAM, host="127.0.0.1"):
    """count distinct free ports, each found by binding port 0 (all sockets
    held until every port is chosen), never one this process gave before."""
    socks, out = [], []
    try:
        while len(out) < count:
            s = socket.socket(socket.AF_INET, kind)
            socks.append(s)
            s.bind((host, 0))
            p = s.getsockname()[1]
            if p not in _picked_ports:
                _picked_ports.add(p)
                out.append(p)
            if len(socks) > count + 200:
                raise RuntimeError(f"could not find {count} unused {host} ports")
    finally:
        for s in socks:
            s.close()
    return out


def port_is_free(port, kind=socket.SOCK_DGRAM, host="127.0.0.1"):
    """True if port can be bound on host right now."""
    s = socket.socket(socket.AF_INET, kind)
    try:
        s.bind((host, port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def ion_time(t):
    """A datetime (UTC) or Unix time as ION's absolute time yyyy/mm/dd-hh:mm:ss."""
    if not isinstance(t, datetime.datetime):
        t = datetime.datetime.fromtimestamp(int(t), tz=datetime.timezone.utc)
    return t.strftime("%Y/%m/%d-%H:%M:%S")


def lock_held(node_dir):
    """True while a ternd holds node_dir/ternd.lock (the lock is the truth;
    the pid file is informative)."""
    try:
        fd = os.open(os.path.join(node_dir, "ternd.lock"), os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def read_pid(node_dir):
    try:
        with open(os.path.join(node_dir, "ternd.pid")) as f:
            return int(f.read().split()[0])
    except (FileNotFoundError, IndexError, ValueError):
        return None


def lock_holders(node_dir):
    """Pids of the processes that have node_dir/ternd.lock open (from /proc):
    the daemon even when its pid file is gone."""
    want = os.path.realpath(os.path.join(node_dir, "ternd.lock"))
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        fds = f"/proc/{pid}/fd"
        try:
            for fd in os.listdir(fds):
                try:
                    if os.readlink(f"{fds}/{fd}") == want:
                        out.append(int(pid))
                        break
                except OSError:
                    continue
        except OSError:
            continue
    return out


def log_tail(node_dir, lines=40):
    """The last lines of node_dir/ternd.log ("" if there is none)."""
    try:
        with open(os.path.join(node_dir, "ternd.log"), "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 200 * lines - 4096))
            text = f.read().decode(errors="replace")
    except FileNotFoundError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def endpoint_queues(status_text):
    """{eid: bundles queued} from the 'endpoints:' part of a node's status."""
    out, inside = {}, False
    for line in status_text.splitlines():
        if line.startswith("endpoints:"):
            inside = True
            continue
        if inside:
            if not line.startswith("  "):
                break
            w = line.split()
            if len(w) >= 4 and w[-1] == "queued" and w[-2].isdigit():
                out[w[0]] = int(w[-2])
    return out


_LTP_FIELDS = (
    (r"sessions (\d+) export / (\d+) import", ("export_sessions", "import_sessions")),
    (r"(\d+) blocks waiting", ("blocks_waiting",)),
    (r"segments in (\d+) out (\d+)", ("seg_in", "seg_out")),
    (r"retransmitted (\d+)", ("retransmitted",)),
    (r"exports done (\d+) cancelled (\d+)", ("exports_done", "exports_cancelled")),
    (r"imports done (\d+) cancelled (\d+)", ("imports_done", "imports_cancelled")),
    (r"imports done \d+ cancelled \d+ refused (\d+)", ("imports_refused",)),
    (r"timeouts cp (\d+) rs (\d+)", ("timeouts_cp", "timeouts_rs")),
    (r"green segments ignored (\d+)", ("green_ignored",)),
)


def ltp_counters(status_text):
    """{name: value} from the 'ltp:' line of a node's status: export_sessions,
    import_sessions, blocks_waiting, seg_in, seg_out, retransmitted,
    exports_done, exports_cancelled, imports_done, imports_cancelled,
    imports_refused (new sessions cancelled for the import cap),
    green_ignored (green segments BP dropped; it takes red blocks only) and,
    where ternd prints them, timeouts_cp and timeouts_rs (checkpoint and
    report retransmission timeouts). {} without an ltp: line."""
    line = next((ln for ln in status_text.splitlines() if ln.startswith("ltp: ")), None)
    out = {}
    if line is None:
        return out
    for pat, names in _LTP_FIELDS:
        m = re.search(pat, line)
        if m:
            out.update(zip(names, map(int, m.groups())))
    return out


def live_contacts(status_text):
    """The number of contacts from the node now ('contacts:' line), or None."""
    m = re.search(r"^contacts: \d+ in the plan, (\d+) from this node now", status_text,
                  re.M)
    return int(m.group(1)) if m else None


def status_counters(status_text):
    """{name: value} from the 'name value' counter lines of a status, plus
    the 'bp:' line of ternd's text as bp_<name> (e.g. bp_malformed)."""
    out = {}
    for line in status_text.splitlines():
        w = line.split()
        if len(w) == 2 and w[1].isdigit():
            out[w[0]] = int(w[1])
        elif line.startswith("bp: "):
            for k, v in zip(w[1::2], w[2::2]):
                if v.isdigit():
                    out["bp_" + k] = int(v)
    return out


_CLONE_NEWNET = 0x40000000


@contextlib.contextmanager
def in_netns(name):
    """Runs the calling thread (only it: the network namespace is a
    per-thread attribute) inside network namespace name (/run/netns/NAME, as
    `ip netns add` makes; root) for the with block, then moves it back.
    Sockets keep the namespace they were made in; threads started inside
    inherit it. name None: no change."""
    if not name:
        yield
        return
    libc = ctypes.CDLL(None, use_errno=True)
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    try:
        try:
            target = os.open(f"/run/netns/{name}", os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            raise RuntimeError(f"network namespace {name!r} does not exist") from None
        try:
            if libc.setns(target, _CLONE_NEWNET) != 0:
                e = ctypes.get_errno()
                raise OSError(e, f"setns into network namespace {name!r}: "
                                 f"{os.strerror(e)}")
        finally:
            os.close(target)
        try:
            yield
        finally:
            if libc.setns(own, _CLONE_NEWNET) != 0:
                e = ctypes.get_errno()
                raise OSError(e, f"setns back from network namespace {name!r}: "
                                 f"{os.strerror(e)}")
    finally:
        os.close(own)


class NodeStartError(RuntimeError):
    """A ternd did not start; the message holds tern's output and the log."""


class NetNode:
    """One node of a Network: number, dir, port (its LTP udplsi or UDP
    induct), neighbours, routes {destination: next hop}, extra lines per
    admin section, and (ternd mode) the Popen of its daemon."""

    def __init__(self, number, dir, port):
        self.number = number
        self.dir = dir
        self.port = port
        self.neighbours = []
        self.routes = {}
        self.extra = collections.defaultdict(list)
        self.proc = None
        self.expected_up = False

    @property
    def rc_path(self):
        return os.path.join(self.dir, "host.rc")

    @property
    def start_target(self):
        """What 'tern start' is given: the host.rc, or the directory when it
        has none (ION's admin files node.ionrc, node.ltprc, ... instead)."""
        return self.rc_path if os.path.exists(self.rc_path) else self.dir

    def __repr__(self):
        return f"<NetNode {self.number} {self.dir} port {self.port}>"


class Network:
    """Real ternd nodes on 127.0.0.1 (see the section comment above).

    n: how many nodes (numbered 1..n unless numbers= is given); edges: the
    links as (a, b) pairs (default: a line in the order of numbers); routes:
    {node: {destination: next hop}} (default: shortest paths over the edges;
    a node given here gets exactly these plans besides its neighbours').
    protocol: "ltp" (LTP over UDP, spans between neighbours) or "udp" (the
    UDP convergence layer). seg: LTP maximum segment size; agg_size/agg_s:
    the spans' aggregation size limit and time limit; max_export: export
    (and import) sessions per span; owlt: one-way light time in seconds
    (ionadmin ranges, used by LTP's timers); rate: contact rate in bytes/s;
    link_bps: a rate limit in bits/s for every LTP link service output
    (udplso's rate; None: unlimited); qtime: LTP queuing latency in seconds
    for this engine (m ownqtime) and every span (None: ION's 1 s each; LTP
    retransmits after 2 x owlt plus both, so a LAN wants a few ms);
    endpoints: services registered on every node (ipn:N.s) with rule;
    durable: False writes an ionconfig with ION's in-memory store. Contacts
    and ranges are written with absolute times from one epoch (a minute
    before now, for 30 days), so all nodes share one plan.

    links: {(a, b): {linkem options}} puts a link emulator (tern.linkem, UDP
    mode) on edge a-b: direction a2b carries what a sends to b. Node a's
    span (or UDP outduct) for b points at linkem's a2b port, b's for a at
    its b2a port; the range of that edge is the emulated one-way delay
    rounded up to whole seconds (at least owlt), since LTP's timers run
    from it. Options are Linkem's keywords (delay=1250, ber=1e-5,
    a2b_loss=0.1, rate=..., seed=...) plus outages=[(t1, t2), ...]: the
    link is down from t1 to t2 seconds after the network's start (t0,
    below). linkem's own outage= (seconds since linkem started) is refused
    here. planned_outages: {(a, b): [(t1, t2), ...]}: the contact plan has
    no contact between a and b (either way) from t1 to t2 after t0 (whole
    seconds; rounded outwards). t0 is a whole second of Unix time chosen
    when start() first runs, just before the links and nodes start (host.rc
    files are rewritten then); clock() is the time since t0.

    netns: {node: namespace name} runs that node's ternd inside an existing
    network namespace (`ip netns exec NAME`, root only), e.g. the two that
    tern.linkem's packet mode made; addrs: {node: IPv4 address} is where the
    node binds its inducts (and LTP link service) and where its neighbours
    send to (default 127.0.0.1: a node alone in a namespace, or sharing
    one with its neighbours, can stay on loopback). Several nodes may share
    a namespace. A node's client socket is an abstract Unix socket, which
    exists only in the node's namespace: clients must run there (programs
    with ns_prefix(num); tern.bp in a thread inside client_ns(num); status,
    stop, admin, receive and wait_delivered do so). links= (linkem in udp
    mode, on the root namespace's 127.0.0.1) cannot be combined with
    namespaces on the same edge.
    """

    def __init__(self, base, n=2, *, numbers=None, edges=None, routes=None,
                 protocol="ltp", seg=1400, agg_size=64000, agg_s=0, max_export=32, owlt=1,
                 rate=125_000_000, link_bps=None, qtime=None, endpoints=(1, 2, 3), rule="q",
                 durable=True, links=None, planned_outages=None,
                 log_level=None, via="tern", epoch=None, bins=None, netns=None,
                 addrs=None):
        if protocol not in ("ltp", "udp"):
            raise ValueError(f"protocol {protocol!r}: expected 'ltp' or 'udp'")
        if via not in ("tern", "ternd"):
            raise ValueError(f"via {via!r}: expected 'tern' or 'ternd'")
        numbers = list(numbers or range(1, n + 1))
        if len(set(numbers)) != len(numbers) or not numbers:
            raise ValueError(f"node numbers {numbers}: expected distinct numbers")
        self.base = base
        self.protocol = protocol
        self.seg = seg
        self.agg_size = agg_size
        self.agg_s = agg_s
        self.max_export = max_export
        self.owlt = owlt
        self.rate = rate
        self.link_bps = link_bps
        self.qtime = qtime
        self.endpoints = tuple(endpoints)
        self.rule = rule
        self.durable = durable
        self.log_level = log_level
        self.via = via
        self.bins = bins or bin_dir()
        now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
        self.epoch = epoch or now - datetime.timedelta(seconds=60)
        self.until = self.epoch + datetime.timedelta(days=30)
        os.makedirs(base, exist_ok=True)
        ports = free_ports(len(numbers))
        self.nodes = collections.OrderedDict()
        for num, port in zip(numbers, ports):
            self.nodes[num] = NetNode(num, os.path.join(base, f"n{num}"), port)
        if edges is None:
            edges = list(zip(numbers, numbers[1:]))
        self.edges = [tuple(e) for e in edges]
        for a, b in self.edges:
            if a not in self.nodes or b not in self.nodes or a == b:
                raise ValueError(f"edge {(a, b)}: expected two distinct nodes of {numbers}")
            self.nodes[a].neighbours.append(b)
            self.nodes[b].neighbours.append(a)
        for num, node in self.nodes.items():
            if routes and num in routes:
                node.routes = dict(routes[num])
            else:
                node.routes = self._shortest_routes(num)
        self.links = {}
        self.link_ports = {}
        for key, opts in (links or {}).items():
            a, b = self._edge_key(key, "links")
            if (b, a) in self.links:
                raise ValueError(f"links: edge {a}-{b} given twice, as {(b, a)} and {key}")
            opts = dict(opts)
            if "outage" in opts or any(k.endswith("_outage") for k in opts):
                raise ValueError(f"links[{key}]: give outages=[(t1, t2), ...] in seconds "
                                 f"after the network's start, not linkem's outage=")
            self.links[(a, b)] = opts
            pa, pb = free_ports(2)
            self.link_ports[(a, b)] = {"a2b": pa, "b2a": pb}
        self.planned_outages = {}
        for key, wins in (planned_outages or {}).items():
            a, b = self._edge_key(key, "planned_outages")
            self.planned_outages[frozenset((a, b))] = sorted(
                (math.floor(t1), math.ceil(t2)) for t1, t2 in wins)
        self.netns = dict(netns or {})
        self.addrs = dict(addrs or {})
        for what, m in (("netns", self.netns), ("addrs", self.addrs)):
            bad = sorted(set(m) - set(self.nodes))
            if bad:
                raise ValueError(f"{what}: {bad} are not nodes of {numbers}")
        for a, b in self.links:
            if self.netns.get(a) or self.netns.get(b):
                raise ValueError(f"links: edge {a}-{b} has a node in a network namespace; "
                                 f"linkem's udp mode runs on the root namespace's "
                                 f"127.0.0.1 (use its packet mode between namespaces)")
        self.linkems = {}
        self.link_final = {}
        self.t0 = None
        self.write()

    @classmethod
    def adopt(cls, base, dirs, protocol="ltp", via="tern", log_level=None, bins=None):
        """A Network over node directories that already hold their host.rc
        or ION's admin files (node.ionrc, node.ltprc, ...; e.g. sample
        configs): dirs is {node number: (directory, port)}.
        write() leaves their files alone; start/stop/kill/logs work as usual."""
        net = cls.__new__(cls)
        net.base = base
        net.protocol = protocol
        net.via = via
        net.log_level = log_level
        net.bins = bins or bin_dir()
        net.edges = []
        net.links, net.link_ports, net.planned_outages = {}, {}, {}
        net.linkems, net.link_final, net.t0 = {}, {}, None
        net.netns, net.addrs = {}, {}
        net.adopted = True
        net.nodes = collections.OrderedDict(
            (num, NetNode(num, d, port)) for num, (d, port) in dirs.items())
        return net

    # -- configuration
    def _shortest_routes(self, src):
        """{destination: next hop} for every node reachable from src in more
        than one hop (breadth first, neighbours in edge order)."""
        first = {}
        seen = {src}
        q = collections.deque()
        for nb in self.nodes[src].neighbours:
            if nb not in seen:
                seen.add(nb)
                first[nb] = nb
                q.append(nb)
        while q:
            cur = q.popleft()
            for nb in self.nodes[cur].neighbours:
                if nb not in seen:
                    seen.add(nb)
                    first[nb] = first[cur]
                    q.append(nb)
        return {d: v for d, v in first.items() if d != v}

    def __getitem__(self, num):
        return self.nodes[num]

    def __iter__(self):
        return iter(self.nodes.values())

    def dir(self, num):
        """Node num's directory."""
        return self.nodes[num].dir

    def add_lines(self, num, section, *lines):
        """Extra lines for section ("ionadmin", "ltpadmin", "bpadmin",
        "ipnadmin") of node num's host.rc; call write() (or start()) after."""
        self.nodes[num].extra[section].extend(lines)

    def _edge_key(self, key, what):
        a, b = key
        if (a, b) not in self.edges and (b, a) not in self.edges:
            raise ValueError(f"{what}: {key} is not an edge of {self.edges}")
        return a, b

    def _link_of(self, x, y):
        """(key, direction) of the linkem on edge x-y for what x sends to y,
        or (None, None)."""
        if (x, y) in self.links:
            return (x, y), "a2b"
        if (y, x) in self.links:
            return (y, x), "b2a"
        return None, None

    def addr(self, num):
        """The IPv4 address node num binds and its neighbours send to."""
        return self.addrs.get(num, "127.0.0.1")

    def peer_addr(self, me, peer):
        """The address node me sends to for peer: peer's own, or 127.0.0.1
        (the linkem) when a link emulator sits on that edge."""
        key, _ = self._link_of(me, peer)
        return self.addr(peer) if key is None else "127.0.0.1"

    def ns_prefix(self, num):
        """The command prefix that runs a program where node num runs:
        ['ip', 'netns', 'exec', NAME] or [] (the root namespace)."""
        ns = self.netns.get(num)
        return ["ip", "netns", "exec", ns] if ns else []

    def client_ns(self, num):
        """A context manager that moves the calling thread into node num's
        network namespace (if it has one) and back: ternd's client socket is
        an abstract Unix socket, which exists only in its own namespace, so
        tern.bp.Node(net.dir(num)) must be made (and used) inside it:

            with net.client_ns(2), bp.Node(net.dir(2)) as n: ...

        Programs (bpdriver, bpcounter, tern ...) run with ns_prefix(num)."""
        return in_netns(self.netns.get(num))

    def peer_port(self, me, peer):
        """The port node me sends to for peer: peer's own, or the port of the
        linkem on that edge."""
        key, d = self._link_of(me, peer)
        if key is None:
            return self.nodes[peer].port
        return self.link_ports[key][d]

    def edge_owlt(self, a, b):
        """The range (one-way light time, whole seconds) of edge a-b: owlt,
        or the emulated delay plus jitter rounded up if that is longer."""
        key, _ = self._link_of(a, b)
        if key is None:
            return self.owlt
        opts = self.links[key]
        worst = 0.0
        for d in ("a2b", "b2a"):
            worst = max(worst, float(opts.get(f"{d}_delay", opts.get("delay", 0)) or 0) +
                        float(opts.get(f"{d}_jitter", opts.get("jitter", 0)) or 0))
        return max(self.owlt, math.ceil(worst / 1000.0 - 1e-9))

    def _contact_windows(self, a, b):
        """[(from, until)] datetimes of the contacts between a and b: the
        whole plan minus the planned outages."""
        wins = self.planned_outages.get(frozenset((a, b)))
        if not wins:
            return [(self.epoch, self.until)]
        t0 = self.t0 if self.t0 is not None else math.ceil(time.time())
        out, cur = [], self.epoch
        for t1, t2 in wins:
            s = datetime.datetime.fromtimestamp(t0 + t1, tz=datetime.timezone.utc)
            e = datetime.datetime.fromtimestamp(t0 + t2, tz=datetime.timezone.utc)
            if s > cur:
                out.append((cur, s))
            cur = max(cur, e)
        if cur < self.until:
            out.append((cur, self.until))
        return out

    def _duct(self, me, peer):
        if self.protocol == "ltp":
            return f"ltp/{peer}"
        return f"udp/{self.peer_addr(me, peer)}:{self.peer_port(me, peer)}"

    def rc_text(self, num):
        """Node num's host.rc."""
        me = self.nodes[num]
        t0, t1 = ion_time(self.epoch), ion_time(self.until)
        ion = [f"1 {num}" + (f" node{num}.ionconfig" if not self.durable else "")]
        for a, b in self.edges:
            for x, y in ((a, b), (b, a)):
                for f, u in self._contact_windows(a, b):
                    ion.append(f"a contact {ion_time(f)} {ion_time(u)} {x} {y} {self.rate}")
        for a, b in self.edges:
            ion.append(f"a range {t0} {t1} {a} {b} {self.edge_owlt(a, b)}")
        secs = [("ionadmin", ion)]
        if self.protocol == "ltp":
            ltp = [f"1 {max(32, self.max_export * max(1, len(me.neighbours)))}"]
            if self.qtime is not None:
                ltp.append(f"m ownqtime {self.qtime:g}")
            for peer in me.neighbours:
                ltp.append(f"a span {peer} {self.max_export} {self.max_export} {self.seg} "
                           f"{self.agg_size} {self.agg_s} "
                           f"'udplso {self.peer_addr(num, peer)}:"
                           f"{self.peer_port(num, peer)}"
                           f"{' %d' % self.link_bps if self.link_bps else ''}'"
                           f"{' %g' % self.qtime if self.qtime is not None else ''}")
            ltp.append(f"s 'udplsi {self.addr(num)}:{me.port}'")
            secs.append(("ltpadmin", ltp))
        bp = ["1", "a scheme ipn 'ipnfw' 'ipnadminep'"]
        bp += [f"a endpoint ipn:{num}.{s} {self.rule}" for s in self.endpoints]
        if self.protocol == "ltp":
            bp += ["a protocol ltp 1400 100", f"a induct ltp {num} ltpcli"]
            bp += [f"a outduct ltp {peer} ltpclo" for peer in me.neighbours]
        else:
            bp += ["a protocol udp", f"a induct udp {self.addr(num)}:{me.port} udpcli"]
            bp += [f"a outduct udp {self.peer_addr(num, p)}:{self.peer_port(num, p)} udpclo"
                   for p in me.neighbours]
        secs.append(("bpadmin", bp))
        ipn = [f"a plan {peer} {self._duct(num, peer)}" for peer in me.neighbours]
        ipn += [f"a plan {d} {self._duct(num, v)}" for d, v in sorted(me.routes.items())]
        secs.append(("ipnadmin", ipn))
        out = []
        for name, lines in secs:
            lines = lines + list(me.extra.get(name, ()))
            if name == "bpadmin":  # 's' (start) comes last
                lines.append("s")
            out += [f"## begin {name}", *lines, f"## end {name}"]
        for name, lines in me.extra.items():
            if name not in dict(secs) and lines:
                out += [f"## begin {name}", *lines, f"## end {name}"]
        return "\n".join(out) + "\n"

    adopted = False

    def write(self):
        """Writes every node's host.rc (and ionconfig when not durable)."""
        if self.adopted:
            return
        for num, node in self.nodes.items():
            os.makedirs(node.dir, exist_ok=True)
            with open(node.rc_path, "w") as f:
                f.write(self.rc_text(num))
            if not self.durable:
                with open(os.path.join(node.dir, f"node{num}.ionconfig"), "w") as f:
                    f.write("# ION's volatile store: SDR_IN_DRAM only\nconfigFlags 1\n")

    # -- processes
    def _select(self, nums):
        if nums is None:
            return list(self.nodes)
        if isinstance(nums, int):
            return [nums]
        return list(nums)

    def tern(self, *args, timeout=120, check=False, node=None):
        """Runs the tern command (in node's network namespace, if it has
        one); returns the CompletedProcess."""
        pre = self.ns_prefix(node) if node is not None else []
        r = subprocess.run(pre + [os.path.join(self.bins, "tern"), *map(str, args)],
                           capture_output=True, text=True, timeout=timeout)
        if check and r.returncode != 0:
            raise RuntimeError(f"tern {' '.join(map(str, args))}: exit {r.returncode}\n"
                               f"{r.stdout}{r.stderr}")
        return r

    def start(self, nums=None, timeout=60):
        """Starts the nodes (all by default, in parallel) and returns once each
        runs: 'tern start <host.rc>', or ternd directly with via="ternd".
        The first start fixes t0 (rewriting host.rc files when the plan has
        outages); every link emulator not running starts before the nodes."""
        nums = self._select(nums)
        if self.t0 is None and not self.adopted:
            self.t0 = math.ceil(time.time() + 0.2)
            if self.planned_outages:
                self.write()
        self.start_links()
        self._check_namespaces(nums)
        if self.via == "tern":
            procs = []
            for num in nums:
                args = self.ns_prefix(num) + [os.path.join(self.bins, "tern"), "start",
                                              self.nodes[num].start_target]
                if self.log_level:
                    args += ["--log-level", self.log_level]
                procs.append((num, subprocess.Popen(args, stdout=subprocess.PIPE,
                                                    stderr=subprocess.STDOUT, text=True)))
            failed = []
            for num, p in procs:
                try:
                    out, _ = p.communicate(timeout=timeout)
                except subprocess.TimeoutExpired:
                    p.kill()
                    out, _ = p.communicate()
                    out += f"\n(no answer in {timeout} s)"
                node = self.nodes[num]
                if p.returncode != 0:
                    failed.append(f"node {num}: 'tern start {node.start_target}' exited "
                                  f"{p.returncode}:\n{out}\n--- {node.dir}/ternd.log:\n"
                                  f"{log_tail(node.dir)}")
                else:
                    node.expected_up = True
            if failed:
                raise NodeStartError("\n".join(failed))
        else:
            for num in nums:
                self._start_ternd(self.nodes[num], timeout)
                self.nodes[num].expected_up = True
        key = ("ltp", "udp") if self.protocol == "ltp" else ("bp-udp", "udp")
        for num in nums:
            node = self.nodes[num]
            published = read_ports(node.dir)
            if published.get(key) != node.port:
                raise NodeStartError(f"node {num} published {published} in {node.dir}/ports;"
                                     f" expected {key[0]} on port {node.port}")

    def _check_namespaces(self, nums):
        want = {self.netns[n] for n in nums if self.netns.get(n)}
        if not want:
            return
        r = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True,
                           timeout=30)
        have = {line.split()[0] for line in r.stdout.splitlines() if line.strip()}
        missing = sorted(want - have)
        if missing:
            raise NodeStartError(f"network namespace(s) {missing} do not exist (netns= "
                                 f"names namespaces made beforehand, e.g. by "
                                 f"tern.linkem's packet mode)")

    def _start_ternd(self, node, timeout):
        r, w = os.pipe()
        # ip netns exec execs ternd in place: the Popen's pid is ternd's
        args = self.ns_prefix(node.number) + [os.path.join(self.bins, "ternd")]
        if self.log_level:
            args += ["--log-level", self.log_level]
        args += ["--ready-fd", str(w), node.start_target]
        with open(os.path.join(node.dir, "ternd.out"), "ab") as out:
            node.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out,
                                         stderr=subprocess.STDOUT, pass_fds=(w,))
        os.close(w)
        deadline = time.monotonic() + timeout
        got = b""
        try:
            while time.monotonic() < deadline:
                ready, _, _ = select.select([r], [], [], 0.2)
                if ready:
                    chunk = os.read(r, 1024)
                    if not chunk:
                        break
                    got += chunk
                    if got.endswith(b"\n"):
                        break
        finally:
            os.close(r)
        if not got.startswith(b"ok"):
            raise NodeStartError(f"node {node.number}: ternd said {got!r} (exit "
                                 f"{node.proc.poll()})\n--- {node.dir}/ternd.log:\n"
                                 f"{log_tail(node.dir)}")

    def running(self, num):
        """True while a ternd serves node num's directory."""
        return lock_held(self.nodes[num].dir)

    def pid(self, num):
        """The pid of node num's ternd (None if it does not run)."""
        node = self.nodes[num]
        if node.proc is not None and node.proc.poll() is None:
            return node.proc.pid
        if not lock_held(node.dir):
            return None
        pid = read_pid(node.dir)
        if pid is None:  # the pid file is informative; the lock is the truth
            holders = lock_holders(node.dir)
            pid = holders[0] if len(holders) == 1 else None
        return pid

    def check_alive(self):
        """Raises RuntimeError naming every node that should run and does
        not (it crashed), or a link emulator that died, with the log tails."""
        for key, lk in self.linkems.items():
            if lk.proc is not None and lk.proc.poll() is not None and lk.returncode is None:
                lk.returncode = lk.proc.returncode
                raise RuntimeError(f"the linkem of link {key} died on its own (exit "
                                   f"{lk.returncode})\n{lk.stderr()}\n{self.log_tails()}")
        dead = [num for num, node in self.nodes.items()
                if node.expected_up and not lock_held(node.dir)]
        if dead:
            for num in dead:
                self.nodes[num].expected_up = False
            raise RuntimeError(f"node(s) {dead} died on their own (crashed?)\n"
                               f"{self.log_tails()}")

    def _wait_gone(self, num, timeout):
        node = self.nodes[num]
        deadline = time.monotonic() + timeout
        while lock_held(node.dir):
            if time.monotonic() > deadline:
                raise TimeoutError(f"node {num}: ternd still holds {node.dir}/ternd.lock "
                                   f"after {timeout} s")
            time.sleep(0.01)
        if node.proc is not None:
            try:
                node.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                pass

    def stop(self, nums=None, timeout=30):
        """Stops the nodes cleanly ('tern stop', SIGTERM); raises if one does
        not go or had died on its own (a crash). Stopping all (nums None)
        stops the link emulators too (link_stats() keeps their last counters)."""
        errors = []
        if nums is None:
            errors += self.stop_links()
        for num in self._select(nums):
            node = self.nodes[num]
            if not lock_held(node.dir):
                if node.expected_up:
                    errors.append(f"node {num} was not running (it died on its own)")
                node.expected_up = False
                continue
            r = self.tern("stop", node.dir, "--timeout", timeout, timeout=timeout + 10,
                          node=num)
            node.expected_up = False
            if r.returncode != 0:
                errors.append(f"node {num}: tern stop exited {r.returncode}: "
                              f"{r.stdout}{r.stderr}".strip())
                pid = self.pid(num)  # found through the lock if the pid file is gone
                if pid:
                    os.kill(pid, signal.SIGTERM)
            self._wait_gone(num, 10)
        if errors:
            raise RuntimeError("; ".join(errors) + "\n" + self.log_tails())

    def kill(self, num, sig=signal.SIGKILL, timeout=10):
        """Sends sig to node num's ternd; for SIGKILL/SIGTERM/SIGINT waits
        until it is gone. Returns the pid signalled."""
        node = self.nodes[num]
        pid = self.pid(num)
        if pid is None:
            raise RuntimeError(f"node {num} does not run")
        os.kill(pid, sig)
        if sig in (signal.SIGKILL, signal.SIGTERM, signal.SIGINT):
            node.expected_up = False
            self._wait_gone(num, timeout)
        return pid

    def restart(self, num, sig=None):
        """Stops node num (cleanly, or with signal sig) and starts it again."""
        if sig is None:
            self.stop([num])
        else:
            self.kill(num, sig)
        self.start([num])

    def shutdown(self):
        """Stops every node and link emulator still running, SIGKILLing any
        that will not stop; never raises. Returns the problems seen (crashed
        nodes, a linkem that died or exited with an error, ...)."""
        problems = self.stop_links()
        for num in self.nodes:
            try:
                self.stop([num], timeout=15)
            except Exception as e:  # noqa: BLE001 - best effort, report below
                problems.append(str(e).splitlines()[0])
                pid = self.pid(num)
                if pid:
                    try:
                        os.kill(pid, signal.SIGKILL)
                        self._wait_gone(num, 10)
                    except (OSError, TimeoutError) as e2:
                        problems.append(f"node {num}: {e2}")
        return problems

    # -- observing
    def status(self, num):
        """'tern status <dir> --once' of node num."""
        r = self.tern("status", self.nodes[num].dir, "--once", timeout=30, node=num)
        if r.returncode != 0:
            raise RuntimeError(f"tern status of node {num}: {r.stderr.strip()}")
        return r.stdout

    def counters(self, num):
        """status_counters() of node num's status."""
        return status_counters(self.status(num))

    def admin(self, num, module, text):
        """'tern admin <module> <dir> <file>' with text as the file; returns
        the CompletedProcess."""
        path = os.path.join(self.base, f"admin-{num}-{module}.txt")
        with open(path, "w") as f:
            f.write(text if text.endswith("\n") else text + "\n")
        return self.tern("admin", module, self.nodes[num].dir, path, timeout=30, node=num)

    def wait_delivered(self, num, eid, count, timeout=30):
        """Waits until at least count bundles are queued for endpoint eid of
        node num (delivered there, not yet taken: no application reads it).
        Returns the queued count; TimeoutError with the node's status and the
        log tails otherwise."""
        deadline = time.monotonic() + timeout
        text, got = "", None
        while True:
            try:
                text = self.status(num)
                got = endpoint_queues(text).get(eid)
            except RuntimeError as e:
                text = str(e)
            if got is not None and got >= count:
                return got
            self.check_alive()
            if time.monotonic() > deadline:
                raise TimeoutError(f"node {num}: {got} bundle(s) queued for {eid} after "
                                   f"{timeout} s, expected {count}\n{text}\n"
                                   f"{self.log_tails()}")
            time.sleep(0.1)

    def receive(self, num, eid, count, timeout=30):
        """Opens eid on node num (tern.bp), takes count bundles and returns
        them (Delivery list); TimeoutError naming how many came otherwise.
        Waits a little more for an extra bundle: one is an error (a
        duplicate)."""
        from . import bp
        got = []
        deadline = time.monotonic() + timeout
        with self.client_ns(num), bp.Node(self.nodes[num].dir) as n:
            ep = n.open(eid)
            while len(got) < count:
                left = int((deadline - time.monotonic()) * 1000)
                if left <= 0:
                    raise TimeoutError(f"node {num}: {len(got)} of {count} bundle(s) for "
                                       f"{eid} in {timeout} s\n{self.log_tails()}")
                d = ep.receive(min(left, 1000))
                if d is not None:
                    got.append(d)
                else:
                    self.check_alive()
            extra = ep.receive(300)
            if extra is not None:
                raise AssertionError(f"node {num}: more than {count} bundles for {eid}: "
                                     f"an extra one from {extra.src} seq {extra.seq} "
                                     f"({len(extra.payload)} bytes)")
        return got

    def wait_log(self, num, text, timeout=20):
        """Waits until node num's ternd.log contains text; returns the log."""
        path = os.path.join(self.nodes[num].dir, "ternd.log")
        deadline = time.monotonic() + timeout
        log = ""
        while time.monotonic() < deadline:
            try:
                with open(path, errors="replace") as f:
                    log = f.read()
            except FileNotFoundError:
                log = ""
            if text in log:
                return log
            time.sleep(0.1)
        raise TimeoutError(f"node {num}: '{text}' not in its log after {timeout} s\n"
                           f"{log[-3000:]}")

    def log_tails(self, lines=40):
        """The tail of every node's ternd.log, headed by its directory (and
        of every link emulator's log)."""
        parts = []
        for node in self.nodes.values():
            parts.append(f"--- node {node.number}: {node.dir}/ternd.log "
                         f"(last {lines} lines)\n{log_tail(node.dir, lines)}")
        for key, lk in self.linkems.items():
            parts.append(f"--- linkem {key}: {lk.err_file} (last {lines} lines)\n"
                         f"{lk.stderr(lines)}")
        return "\n".join(parts)

    # -- link emulators and the network's clock
    def clock(self):
        """Seconds since t0 (the network's start); None before start()."""
        return None if self.t0 is None else time.time() - self.t0

    def wait_clock(self, t):
        """Sleeps until clock() reaches t (seconds after the network's start)."""
        left = self.t0 + t - time.time()
        if left > 0:
            time.sleep(left)

    def linkem(self, a, b):
        """The tern.linkem.Linkem of edge a-b (None before start)."""
        key, _ = self._link_of(a, b)
        if key is None:
            raise KeyError(f"no linkem on edge {a}-{b}")
        return self.linkems.get(key)

    def _linkem_args(self, key, offset):
        """Linkem keywords for the link's options: outages and periodic
        offsets moved from the network's clock to linkem's (offset: linkem's
        zero minus t0, in seconds)."""
        kw = {}
        for k, v in self.links[key].items():
            if k.endswith("outages"):
                wins = []
                for t1, t2 in v:
                    t1, t2 = t1 - offset, t2 - offset
                    if t2 > 0:
                        wins.append((max(0.0, t1), t2))
                if wins:
                    kw[k[:-1]] = [(round(x, 3), round(y, 3)) for x, y in wins]
            elif k.endswith("periodic") and not isinstance(v, str):
                up, down, off = (list(v) + [0])[:3]
                kw[k] = (up, down, round(max(0.0, off - offset), 3))
            else:
                kw[k] = v
        return kw

    def start_links(self, timeout=15):
        """Starts every link emulator that is not running (start() does)."""
        from . import linkem
        for (a, b), opts in self.links.items():
            lk = self.linkems.get((a, b))
            if lk is not None and lk.running():
                continue
            ports = self.link_ports[(a, b)]
            wd = os.path.join(self.base, f"linkem-{a}-{b}")
            offset = time.time() - self.t0
            lk = linkem.Linkem(
                "udp", workdir=wd,
                a2b=(f"127.0.0.1:{ports['a2b']}", f"127.0.0.1:{self.nodes[b].port}"),
                b2a=(f"127.0.0.1:{ports['b2a']}", f"127.0.0.1:{self.nodes[a].port}"),
                **self._linkem_args((a, b), offset))
            self.linkems[(a, b)] = lk
            lk.start(timeout)
            if lk.ports != ports:
                lk.kill()
                raise NodeStartError(f"linkem of link {a}-{b} bound {lk.ports}; expected "
                                     f"{ports}\n{lk.stderr()}")

    def stop_links(self):
        """Stops every link emulator (SIGTERM) and keeps its final counters;
        returns the problems seen (never raises)."""
        problems = []
        for key, lk in self.linkems.items():
            if lk.proc is None:
                continue
            if not lk.running() and lk.final is not None:
                continue
            died = not lk.running()
            try:
                self.link_final[key] = lk.stop(check=True)
            except Exception as e:  # noqa: BLE001 - reported to the caller
                problems.append(f"linkem {key}: {str(e).splitlines()[0]}")
                self.link_final[key] = lk.final
            if died and lk.returncode not in (0, None):
                problems.append(f"linkem {key} had died on its own (exit {lk.returncode})")
        return problems

    def link_stats(self, a, b, fresh=True):
        """The counters of the linkem on edge a-b, its directions named from
        a's point of view ("a2b": what a sent to b): fresh ones (SIGUSR1)
        while it runs, the final ones after stop()."""
        key, d = self._link_of(a, b)
        if key is None:
            raise KeyError(f"no linkem on edge {a}-{b}")
        lk = self.linkems.get(key)
        if lk is None:
            raise RuntimeError(f"the linkem of edge {a}-{b} was never started")
        st = lk.stats(fresh=fresh) if lk.running() else self.link_final.get(key) or lk.stats()
        if d == "b2a":
            st = dict(st, a2b=st["b2a"], b2a=st["a2b"])
        return st

    def logs(self):
        """{node number: whole ternd.log text}."""
        out = {}
        for num, node in self.nodes.items():
            try:
                with open(os.path.join(node.dir, "ternd.log"), errors="replace") as f:
                    out[num] = f.read()
            except FileNotFoundError:
                out[num] = ""
        return out

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.shutdown()


class TcpNetwork(Network):
    """A Network whose nodes talk BP over TCP: flavour "tcp" (TCPCLv4, v3 by
    fallback), "stcp" or "mtcp". Each node keeps the udp induct Network
    publishes (its start-up check looks for it) and gets a TCP induct of the
    flavour on its own TCP port at its address (addr()); every outduct and
    plan uses the TCP flavour. Works with netns=/addrs= like Network.

    duct_ports: {(me, peer): port} points me's outduct for peer at another
    port (a test's own peer, or a linkem in tcp mode) instead of peer's
    induct. cli_options: {num: "maxconns=4 idle=2 ..."} adds options to node
    num's induct command (docs/tcpcl.md, "Limits")."""

    def __init__(self, base, n=2, *, flavour="tcp", duct_ports=None, cli_options=None,
                 **kw):
        self.duct_ports = dict(duct_ports or {})
        self.cli_options = dict(cli_options or {})
        if flavour not in ("tcp", "stcp", "mtcp"):
            raise ValueError(f"flavour {flavour!r}: expected tcp, stcp or mtcp")
        self.flavour = flavour
        self.tcp_ports = {}
        numbers = list(kw.get("numbers") or range(1, n + 1))
        for num, port in zip(numbers, free_ports(len(numbers), kind=socket.SOCK_STREAM)):
            self.tcp_ports[num] = port
        kw.setdefault("protocol", "udp")
        if kw["protocol"] != "udp":
            raise ValueError("TcpNetwork: protocol is always 'udp' (the start-up check's "
                             "induct); the bundles go over the TCP flavour")
        super().__init__(base, n, **kw)

    def _port(self, me, peer):
        return self.duct_ports.get((me, peer), self.tcp_ports[peer])

    def _tcp_addr(self, me, peer):
        return "127.0.0.1" if (me, peer) in self.duct_ports else self.addr(peer)

    def _duct(self, me, peer):
        return f"{self.flavour}/{self._tcp_addr(me, peer)}:{self._port(me, peer)}"

    def rc_text(self, num):
        text = super().rc_text(num)
        me = self.nodes[num]
        f = self.flavour
        out = []
        for line in text.splitlines():
            if line.startswith("a outduct udp"):
                continue
            out.append(line)
            if line.startswith("a induct udp"):
                out.append(f"a protocol {f}")
                opts = self.cli_options.get(num)
                cmd = f"'{f}cli {opts}'" if opts else f"{f}cli"
                out.append(f"a induct {f} {self.addr(num)}:{self.tcp_ports[num]} {cmd}")
                out += [f"a outduct {f} {self._tcp_addr(num, p)}:{self._port(num, p)} {f}clo"
                        for p in me.neighbours]
        return "\n".join(out) + "\n"

    def tcp_port(self, num):
        """The TCP port node num published for its induct."""
        return read_ports(self.nodes[num].dir).get((f"bp-{self.flavour}", "tcp"))


def tcp_log_events(log_text):
    """What a ternd.log says about its TCP convergence layer: {"connected":
    [outduct lines "... outduct X: connected"], "closed": [lines "...:
    closed: <why>"], "retrying": [connect failures logged], "session_ends":
    [TCPCLv4 SESS_TERM lines]}."""
    out = {"connected": [], "closed": [], "retrying": [], "session_ends": []}
    for line in log_text.splitlines():
        if "bp-tcp" not in line:
            continue
        if re.search(r"(tcp|stcp|mtcp) outduct \S+: connected$", line):
            out["connected"].append(line)
        elif ": closed: " in line:
            out["closed"].append(line)
        elif line.endswith("(retrying)"):
            out["retrying"].append(line)
        elif "tcp session with" in line and " ends (" in line:
            out["session_ends"].append(line)
    return out


# ------------------------------------------------------------- payloads

def sha(data):
    """SHA-256 of bytes, hex."""
    return hashlib.sha256(data).hexdigest()


def file_sha(path):
    """SHA-256 of a file, hex."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(1 << 20)
            if not b:
                return h.hexdigest()
            h.update(b)


def sized_payload(tag, n):
    """n reproducible bytes that start with tag and a colon (so a payload
    names its bundle); fast for large n."""
    head = tag.encode() + b":"
    if n <= len(head):
        return head[:n]
    rng = random.Random(tag)
    block = rng.randbytes(min(n, 1 << 20))
    body = (block * (n // len(block) + 1))[:n - len(head)]
    return head + body


def write_file(path, n, seed):
    """A file of n pseudo-random bytes; returns its SHA-256."""
    rng = random.Random(seed)
    h = hashlib.sha256()
    with open(path, "wb") as f:
        left = n
        while left:
            b = rng.randbytes(min(left, 1 << 20))
            f.write(b)
            h.update(b)
            left -= len(b)
    return h.hexdigest()
