"""N network namespaces on one Linux bridge, for the multicast and broadcast
tests (root only). Reusable by any suite:

    from mcast_net import bridged_namespaces, skip_unless_root

    skip_unless_root()                  # pytest.skip with the reason otherwise
    with bridged_namespaces(4) as mn:   # mn.names[i], mn.addrs[i], mn.dev
        net = network(4, protocol="udp", edges=[], netns=mn.netns(),
                      addrs=mn.addr_map())
        ...

Each namespace i (1..n) gets lo up and a veth "mc0" with address
10.<s>.0.<i>/24 whose peer is a port of a bridge in the root namespace;
224.0.0.0/4 is routed to mc0, so that multicast leaves (and is joined) there
whatever the namespace's other routes. The bridge's IGMP snooping is off:
the bridge floods every group to every port, as a hub or a radio medium
would, and no querier is needed. Everything made is removed when the block
ends, also after a failure or an interrupt; names carry this process's pid
so parallel runs do not collide.
"""
import contextlib
import os
import subprocess

import pytest


def why_not_root():
    """None if namespaces can be made here, else the reason in words."""
    if os.geteuid() != 0:
        return "needs root (creates network namespaces, veth pairs and a bridge)"
    try:
        r = subprocess.run(["ip", "-V"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return "the ip command (iproute2) is not installed"
    if r.returncode != 0:
        return "the ip command (iproute2) does not run"
    return None


def skip_unless_root():
    why = why_not_root()
    if why:
        pytest.skip(why)


def _ip(*args, ns=None, check=True):
    cmd = (["ip", "netns", "exec", ns] if ns else []) + ["ip", *map(str, args)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip()}")
    return r


class BridgedNamespaces:
    """What bridged_namespaces made: names[i] and addrs[i] for i in 1..n (index
    0 unused), the bridge's name, the namespace-side device name (dev) and
    the root-side veth of namespace i (host_if[i])."""

    dev = "mc0"

    def __init__(self, n, tag, subnet):
        self.n = n
        self.tag = tag
        self.subnet = subnet
        self.bridge = f"tmb{tag}"
        self.names = [None] + [f"tmc{tag}-{i}" for i in range(1, n + 1)]
        self.addrs = [None] + [f"10.{subnet}.0.{i}" for i in range(1, n + 1)]
        self.host_if = [None] + [f"tmh{tag}x{i}" for i in range(1, n + 1)]
        self.broadcast = f"10.{subnet}.0.255"
        self.made_ns, self.made_links = [], []

    def netns(self):
        """{node number: namespace} for tern.testing.Network(netns=...)."""
        return {i: self.names[i] for i in range(1, self.n + 1)}

    def addr_map(self):
        """{node number: address} for tern.testing.Network(addrs=...)."""
        return {i: self.addrs[i] for i in range(1, self.n + 1)}

    def run(self, i, *cmd, **kw):
        """Runs cmd inside namespace i (subprocess.run keywords pass through)."""
        kw.setdefault("capture_output", True)
        kw.setdefault("text", True)
        kw.setdefault("timeout", 60)
        return subprocess.run(["ip", "netns", "exec", self.names[i], *map(str, cmd)],
                              **kw)

    def popen(self, i, *cmd, **kw):
        """subprocess.Popen of cmd inside namespace i."""
        return subprocess.Popen(["ip", "netns", "exec", self.names[i], *map(str, cmd)],
                                **kw)

    def _make(self):
        _ip("link", "add", self.bridge, "type", "bridge")
        self.made_links.append(self.bridge)
        # flood groups to every port: no IGMP querier is needed, and a late
        # joiner hears the next datagram
        _ip("link", "set", self.bridge, "type", "bridge", "mcast_snooping", "0",
            check=False)
        _ip("link", "set", self.bridge, "up")
        for i in range(1, self.n + 1):
            ns, host, peer = self.names[i], self.host_if[i], f"tmp{self.tag}x{i}"
            _ip("netns", "add", ns)
            self.made_ns.append(ns)
            _ip("link", "add", host, "type", "veth", "peer", "name", peer)
            self.made_links.append(host)
            _ip("link", "set", peer, "netns", ns)
            _ip("link", "set", host, "master", self.bridge)
            _ip("link", "set", host, "up")
            _ip("link", "set", "lo", "up", ns=ns)
            _ip("link", "set", peer, "name", self.dev, ns=ns)
            _ip("addr", "add", f"{self.addrs[i]}/24", "brd", "+", "dev", self.dev, ns=ns)
            _ip("link", "set", self.dev, "up", ns=ns)
            _ip("route", "add", "224.0.0.0/4", "dev", self.dev, ns=ns)

    def teardown(self):
        """Removes what was made (errors ignored: best effort, all of it)."""
        for ns in reversed(self.made_ns):
            _ip("netns", "del", ns, check=False)  # takes its veth ends along
        for link in reversed(self.made_links):
            _ip("link", "del", link, check=False)
        self.made_ns, self.made_links = [], []


@contextlib.contextmanager
def bridged_namespaces(n, subnet=None):
    """Makes n namespaces on one bridge (see the module's doc); yields the
    BridgedNamespaces and removes everything afterwards, whatever happens."""
    tag = os.getpid() % 100000
    mn = BridgedNamespaces(n, tag, subnet if subnet is not None else 100 + tag % 100)
    try:
        mn._make()
        yield mn
    finally:
        mn.teardown()
