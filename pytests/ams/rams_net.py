"""Helpers for the RAMS suites: continua on Tern nodes, each node with its
own amsd and ramsgate started by 'tern start' from the host.rc's
'## begin amsd' section, and AMS modules in this process (tern.ams)."""
import os
import re
import threading
import time

from ctypes import c_char_p, c_int, c_void_p

from tern.ams import ASSURED, SUBSCRIPTION, Module, Msg, Notice, _c
from tern.testing import free_ports

VENTURE = 9
SUBJECTS = {"text": 1, "noise": 2, "bench": 3}


def mib_text(cont, cs_port, neighbours, others=()):
    """ION's amsrc MIB for continuum cont: neighbours are msgspaces with
    neighbor=1, others with neighbor=0 (reached through the tree)."""
    lines = ["+ams_mib_load", f"*ams_mib_init continuum_nbr={cont} ptsname=dgr",
             "+ams_mib_add"]
    for c in sorted(set(neighbours) | set(others)):
        lines.append(f"*continuum nbr={c} name=c{c} desc='continuum {c}'")
    lines += [f"*csendpoint epspec=127.0.0.1:{cs_port}", "*application name='amsdemo'",
              f"+venture nbr={VENTURE} appname=amsdemo authname=test net_config=tree"]
    for i, r in enumerate(["shell", "log", "pitch", "catch", "benchs", "benchr"], 2):
        lines.append(f"*role nbr={i} name={r}")
    for name, nbr in SUBJECTS.items():
        lines.append(f"*subject nbr={nbr} name={name} desc='{name}'")
    lines.append("*unit nbr=1 name=orbiters")
    for c in sorted(neighbours):
        lines.append(f"*msgspace nbr={c} neighbor=1")
    for c in sorted(others):
        lines.append(f"*msgspace nbr={c} neighbor=0")
    lines += ["-venture", "-ams_mib_add", "-ams_mib_load"]
    return "\n".join(lines) + "\n"


def kill_daemons(net):
    """SIGKILLs amsd and ramsgate processes still running in net's nodes
    (their ternd may be gone, and with it 'tern stop')."""
    import glob
    import signal
    for num in net.nodes:
        for pidf in glob.glob(os.path.join(net.dir(num), "*.pid")):
            name = os.path.basename(pidf)
            if not (name.startswith("amsd.") or name.startswith("ramsgate.")):
                continue
            try:
                os.kill(int(open(pidf).read()), signal.SIGKILL)
            except (OSError, ValueError):
                pass


def setup_continua(net, tree, lifetime=300, finalizer=None, gateways=None):
    """Writes a MIB into each node's directory (continuum = node number) and
    the amsd and ramsgate lines into its host.rc. tree: {continuum:
    [neighbouring continua]}; the other continua are non-neighbours."""
    ports = free_ports(len(tree))
    allc = set(tree)
    mibs = {}
    for (c, nbs), port in zip(sorted(tree.items()), ports):
        others = allc - set(nbs) - {c}
        path = os.path.join(net.dir(c), "mib.amsrc")
        with open(path, "w") as f:
            f.write(mib_text(c, port, nbs, others))
        mibs[c] = path
        lines = [f"amsd mib.amsrc 127.0.0.1:{port} amsdemo test ''"]
        if gateways is None or c in gateways:
            lines.append(f"ramsgate amsdemo test {lifetime}")
        net.add_lines(c, "amsd", *lines)
    net.write()
    if finalizer:
        finalizer(lambda: kill_daemons(net))
    return mibs


def status_file(net, c):
    return os.path.join(net.dir(c), f"ramsgate.{VENTURE}.status")


def status(net, c):
    try:
        return open(status_file(net, c)).read()
    except FileNotFoundError:
        return ""


def gateway_log(net, c):
    try:
        return open(os.path.join(net.dir(c), "ramsgate.0.log")).read()
    except FileNotFoundError:
        return "(no ramsgate log)"


def counter(text, pattern):
    m = re.search(pattern, text)
    return int(m.group(1)) if m else None


def wait_for(pred, timeout, what, report=lambda: ""):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.1)
    raise AssertionError(f"{what} not within {timeout} s\n{report()}")


def wait_declared(net, a, b, timeout=30):
    """Until the gateway of a says b declared itself."""
    wait_for(lambda: re.search(rf"peer continuum {b} at \S+: declared", status(net, a)),
             timeout, f"continuum {b} declared at {a}", lambda: status(net, a))


def wait_gateway_subscribed(mod, subject, timeout=60, report=lambda: ""):
    """Until module mod hears that its continuum's gateway (role 1)
    subscribed to subject: a petition from another continuum arrived."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        ev = mod.get_event(timeout_s=0.5)
        if (isinstance(ev, Notice) and ev.state == SUBSCRIPTION and ev.change == 1 and
                ev.subject == subject and ev.role == 0 and gateway_module(mod, ev)):
            return ev
    raise AssertionError(f"no gateway subscription to subject {subject} within "
                         f"{timeout} s\n{report()}")


def gateway_module(mod, ev):
    """Is the module that sent notice ev its continuum's RAMS gateway?"""
    f = _c.ams_get_role_name
    f.restype = c_char_p
    f.argtypes = [c_void_p, c_int, c_int]
    r = f(mod._handle, ev.unit, ev.module)
    return r == b"RAMS"


class Collector(threading.Thread):
    """Takes a module's messages in a thread: (subject, content) in order."""

    def __init__(self, mod):
        super().__init__(daemon=True)
        self.mod = mod
        self.msgs = []
        self.stop_flag = False
        self.lock = threading.Lock()

    def run(self):
        while not self.stop_flag:
            try:
                ev = self.mod.get_event(timeout_s=0.2)
            except Exception:  # noqa: BLE001 - the module was closed under it
                return
            if isinstance(ev, Msg):
                with self.lock:
                    self.msgs.append(ev)

    def contents(self):
        with self.lock:
            return [m.content for m in self.msgs]

    def wait_count(self, n, timeout, report=lambda: ""):
        wait_for(lambda: len(self.contents()) >= n, timeout,
                 f"{n} messages (have {len(self.contents())})", report)

    def stop(self):
        self.stop_flag = True
        if self.is_alive():
            self.join(timeout=5)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()  # before its module closes


def subscriber(mib, subject, role="benchr", continuum=0):
    m = Module(mib, "amsdemo", "test", "", role)
    m.subscribe(subject, continuum=continuum, diligence=ASSURED)
    return m
