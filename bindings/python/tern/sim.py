"""tern_sim through ctypes: whole networks of Tern nodes in one process, on a
virtual clock.

    with Sim(seed=7) as sim:
        a = sim.node(number=1, peers=[2])          # a standard config ...
        b = sim.node(rc=open("host2.rc").read())   # ... or an ION host.rc
        sim.link(1, 2, delay_ms=1500, rate=125000, loss=0.05)
        sim.outage(1, 2, 60_000, 660_000)
        sim.send(1, "ipn:1.1", "ipn:2.1", b"hello")
        sim.run(deliveries=1, until_ms=3_600_000)
        d = sim.recv(2, "ipn:2.1")                 # Delivery or None

Contact Graph Routing: Sim(cgr=True) (or node(..., cgr=True)) routes every
node by its contact plan, and link(..., contacts=True) makes a link follow
the plans (up only during contacts, the range's light time as delay):

    with Sim(cgr=True) as sim:
        ...
        sim.link(1, 2, contacts=True)
        sim.cgr_route(1, 5, size=1000)             # CgrRoute(nodes=[2, 5], ...)
        sim.contact_stats(1, 2)["outside"]         # segments sent outside contacts

Virtual times (until_ms, outages, now) are milliseconds since the simulation
began. Failures raise tern.errors.TernError carrying the C message.
"""
import ctypes
from ctypes import POINTER, c_char_p, c_double, c_int, c_size_t, c_uint, c_uint64
from ctypes import c_void_p
from dataclasses import dataclass

from . import _lib
from .errors import ENOSPACE, TernError, check

_s = _lib.load("sim")

EAGAIN = -11

# Bundle processing flags (RFC 9171 4.2.3) and classes of service.
FLAG_NO_FRAGMENT = 0x000004
FLAG_ADMIN = 0x000002
FLAG_STATUS_TIME = 0x000040
FLAG_RPT_RECEPTION = 0x004000
FLAG_RPT_FORWARD = 0x010000
FLAG_RPT_DELIVERY = 0x020000
FLAG_RPT_DELETION = 0x040000
BULK, STANDARD, EXPEDITED = 0, 1, 2

ONE_WAY = 0x1
SILENT = 0x2
CONTACTS = 0x4

STOP_TIME, STOP_DELIVERIES, STOP_IDLE = 1, 2, 3
_STOP_NAMES = {STOP_TIME: "time", STOP_DELIVERIES: "deliveries", STOP_IDLE: "idle"}
FOREVER = (1 << 64) - 1


class _Cfg(ctypes.Structure):
    _fields_ = [("seed", c_uint64), ("start_dtn_ms", c_uint64), ("heap_bytes", c_uint64),
                ("log_dir", c_char_p), ("log_level", c_int)]


def _sig(name, res, *args):
    f = getattr(_s, name)
    f.restype = res
    f.argtypes = list(args)
    return f


U64P = POINTER(c_uint64)
_new = _sig("tern_sim_new", c_int, POINTER(_Cfg), POINTER(c_void_p))
_free = _sig("tern_sim_free", None, c_void_p)
_node_add = _sig("tern_sim_node_add", c_int, c_void_p, c_char_p, c_char_p, c_char_p,
                 c_size_t, U64P)
_node_count = _sig("tern_sim_node_count", c_size_t, c_void_p)
_node_at = _sig("tern_sim_node_at", c_uint64, c_void_p, c_size_t)
_link_add = _sig("tern_sim_link_add", c_int, c_void_p, c_uint64, c_uint64, c_uint64,
                 c_uint64, c_double, c_uint)
_link_set = _sig("tern_sim_link_set", c_int, c_void_p, c_uint64, c_uint64, c_uint64,
                 c_uint64, c_double)
_outage_add = _sig("tern_sim_outage_add", c_int, c_void_p, c_uint64, c_uint64, c_uint64,
                   c_uint64, c_uint)
_send = _sig("tern_sim_send", c_int, c_void_p, c_uint64, c_char_p, c_char_p, c_char_p,
             c_size_t, c_uint64, c_int, c_uint, c_uint64, c_uint64, c_char_p, U64P, U64P)
_recv = _sig("tern_sim_recv", c_int, c_void_p, c_uint64, c_char_p, c_char_p, c_size_t,
             U64P, U64P, U64P, c_void_p, c_size_t, POINTER(c_size_t))
_run = _sig("tern_sim_run", c_int, c_void_p, c_uint64, c_uint64)
_now = _sig("tern_sim_now_ms", c_uint64, c_void_p)
_dtn = _sig("tern_sim_dtn_ms", c_uint64, c_void_p)
_deliveries = _sig("tern_sim_deliveries", c_uint64, c_void_p)
_random = _sig("tern_sim_random", c_uint64, c_void_p)
_node_counters = _sig("tern_sim_node_counters", c_int, c_void_p, c_uint64, U64P, c_size_t)
_node_counter_name = _sig("tern_sim_node_counter_name", c_char_p, c_size_t)
_link_counters = _sig("tern_sim_link_counters", c_int, c_void_p, c_uint64, c_uint64, U64P,
                      c_size_t)
_link_counter_name = _sig("tern_sim_link_counter_name", c_char_p, c_size_t)
_contact_stats = _sig("tern_sim_link_contact_stats", c_int, c_void_p, c_uint64, c_uint64,
                      U64P)
_set_cgr = _sig("tern_sim_set_cgr", c_int, c_void_p, c_int)
_node_cgr = _sig("tern_sim_node_cgr", c_int, c_void_p, c_uint64, c_int)
_node_ionadmin = _sig("tern_sim_node_ionadmin", c_int, c_void_p, c_uint64, c_char_p,
                      c_char_p, c_size_t)
_cgr_route = _sig("tern_sim_cgr_route", c_int, c_void_p, c_uint64, c_uint64, c_uint64,
                  c_uint64, c_int, U64P, U64P, c_size_t, U64P)
_cgr_counters = _sig("tern_sim_cgr_counters", c_int, c_void_p, c_uint64, U64P, c_size_t)
_cgr_counter_name = _sig("tern_sim_cgr_counter_name", c_char_p, c_size_t)
_cgr_status = _sig("tern_sim_cgr_status", c_int, c_void_p, c_uint64, c_char_p, c_size_t)


def _names(fn):
    out, i = [], 0
    while True:
        n = fn(i)
        if n is None:
            return out
        out.append(n.decode())
        i += 1


NODE_COUNTERS = _names(_node_counter_name)
LINK_COUNTERS = _names(_link_counter_name)
CGR_COUNTERS = _names(_cgr_counter_name)
CONTACT_COUNTERS = ["follows", "open", "windows", "outside", "bytes_in_contact"]
ETIME = -62
ENOTFOUND = -30992
EFULL = -30988
_CGR_WHY = {ENOTFOUND: "no route", ETIME: "too late", EFULL: "no capacity"}

_LOG_LEVELS = {"error": 0, "warn": 1, "info": 2, "debug": 3, "trace": 4}


@dataclass
class CgrRoute:
    """What tern_sim_cgr_route answered: ok, or why not ("no route", "too
    late", "no capacity"); the nodes after the asking one, each contact's
    start (virtual ms) and the projected arrival (virtual ms)."""
    ok: bool
    reason: str = ""
    nodes: list = None
    starts_ms: list = None
    arrival_ms: int = None

    def __bool__(self):
        return self.ok


@dataclass
class Delivery:
    """A bundle taken from an endpoint."""
    src: str
    ctime_ms: int
    seq: int
    flags: int
    payload: bytes


def standard_rc(number, peers=(), routes=None, seg=1400, endpoints=(1,), rule="q",
                max_export=64, agg_size=1, agg_s=0, max_payload=0, ranges=None,
                contacts=None, extra_bpadmin="", extra_ltpadmin="", exits=(),
                extra_ionadmin="", status_reports=False):
    """An ION host.rc for node `number` with an LTP span, an ltp outduct and
    an ipnadmin plan to each peer in `peers`.

    routes: {destination node: next-hop peer} for nodes reached through a
    relay (each becomes 'a plan <dest> ltp/<peer>'). endpoints: services of
    ipn:<number>.<s> to register with `rule` ('q' queue, 'x' discard).
    ranges: {peer: one-way light time in s} (an ionadmin range, so LTP timers
    use it). seg: LTP max segment size (64..65536). exits: (first, last, via)
    triples, each 'a exit first last ipn:via.0' (nodes first..last go the
    way of node via). contacts: (from, until, from node, to node, rate)
    tuples, each an 'a contact' line; extra_ionadmin: more ionadmin lines
    (e.g. the whole network's contacts and ranges, for routing by CGR).
    status_reports: send the status reports bundles ask for ('m statusreports
    on'; off by default, as in ternd).
    """
    lines = ["## begin ionadmin", f"1 {number}"]
    for peer, owlt in (ranges or {}).items():
        lines.append(f"a range +0 +100000000 {number} {peer} {owlt}")
    for c in contacts or ():
        lines.append("a contact " + " ".join(str(x) for x in c))
    if extra_ionadmin:
        lines.append(extra_ionadmin.rstrip("\n"))
    lines += ["## end ionadmin", "## begin ltpadmin", f"1 {max_export}"]
    for i, peer in enumerate(peers):
        lines.append(f"a span {peer} {max_export} {max_export} {seg} {agg_size} {agg_s} "
                     f"'udplso 127.0.0.1:{1113 + i}'")
    if extra_ltpadmin:
        lines.append(extra_ltpadmin.rstrip("\n"))
    lines += ["## end ltpadmin", "## begin bpadmin", "1",
              "a scheme ipn 'ipnfw' 'ipnadminep'"]
    for svc in endpoints:
        lines.append(f"a endpoint ipn:{number}.{svc} {rule}")
    lines += ["a protocol ltp 1400 100", f"a induct ltp {number} ltpcli"]
    for peer in peers:
        mp = f" {max_payload}" if max_payload else ""
        lines.append(f"a outduct ltp {peer} ltpclo{mp}")
    if status_reports:
        lines.append("m statusreports on")
    if extra_bpadmin:
        lines.append(extra_bpadmin.rstrip("\n"))
    lines += ["s", "## end bpadmin", "## begin ipnadmin"]
    for peer in peers:
        lines.append(f"a plan {peer} ltp/{peer}")
    for dest, via in (routes or {}).items():
        lines.append(f"a plan {dest} ltp/{via}")
    for first, last, via in exits:
        lines.append(f"a exit {first} {last} ipn:{via}.0")
    lines += ["## end ipnadmin", ""]
    return "\n".join(lines)


class Sim:
    """One simulated network (see the module doc). Use as a context manager
    or call close()."""

    def __init__(self, seed=1, start_dtn_ms=0, heap_bytes=32 << 20, log_dir=None,
                 log_level="warn", cgr=False):
        level = _LOG_LEVELS[log_level] if isinstance(log_level, str) else int(log_level)
        self._log_dir = log_dir.encode() if log_dir else None
        cfg = _Cfg(seed & ((1 << 64) - 1), start_dtn_ms, heap_bytes, self._log_dir, level)
        h = c_void_p()
        check(_new(ctypes.byref(cfg), ctypes.byref(h)), "tern_sim_new")
        self._h = h
        self.seed = seed
        self._buf = ctypes.create_string_buffer(1 << 16)
        if cgr:
            check(_set_cgr(h, 1), "tern_sim_set_cgr")

    # -- lifetime
    def close(self):
        if self._h:
            _free(self._h)
            self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()

    def _handle(self):
        if not self._h:
            raise ValueError("simulation is closed")
        return self._h

    # -- building
    def node(self, rc=None, *, name=None, number=None, cgr=None, **std):
        """Adds a node from host.rc text, or (number=..., peers=..., ...) a
        standard_rc() config. cgr=True/False turns Contact Graph Routing on
        or off for it (None: the simulation's setting). Returns the node
        number."""
        if rc is None:
            if number is None:
                raise ValueError("node() needs rc text or number=")
            rc = standard_rc(number, **std)
        elif std or number is not None:
            raise ValueError("node(): give rc text or standard-config arguments, not both")
        err = ctypes.create_string_buffer(1024)
        out = c_uint64()
        rc_ = _node_add(self._handle(), name.encode() if name else None, rc.encode(), err,
                        len(err), ctypes.byref(out))
        if rc_ < 0:
            raise TernError(rc_, err.value.decode() or "tern_sim_node_add")
        if cgr is not None:
            check(_node_cgr(self._handle(), out.value, 1 if cgr else 0),
                  f"cgr on node {out.value}")
        return out.value

    def nodes(self):
        h = self._handle()
        return [_node_at(h, i) for i in range(_node_count(h))]

    def link(self, a, b, delay_ms=0, rate=0, loss=0.0, one_way=False, contacts=False):
        """Joins a and b: delay (ms), rate (bytes/s, 0 unlimited), segment loss
        probability; both directions unless one_way. contacts: each direction
        x -> y is up only while a contact x -> y of x's plan is in effect, with
        the range's light time as its delay."""
        flags = (ONE_WAY if one_way else 0) | (CONTACTS if contacts else 0)
        check(_link_add(self._handle(), a, b, int(delay_ms), int(rate), float(loss), flags),
              f"link {a}-{b}")

    def link_set(self, a, b, delay_ms=0, rate=0, loss=0.0):
        """Changes the direction a -> b for segments sent from now on."""
        check(_link_set(self._handle(), a, b, int(delay_ms), int(rate), float(loss)),
              f"link_set {a}->{b}")

    def outage(self, a, b, from_ms, until_ms, silent=False):
        """Link a <-> b down from from_ms until until_ms (virtual ms)."""
        check(_outage_add(self._handle(), a, b, int(from_ms), int(until_ms),
                          SILENT if silent else 0), f"outage {a}-{b}")

    # -- bundles
    def send(self, node, src, dest, payload, lifetime_ms=0, priority=STANDARD, ordinal=0,
             flags=0, hop_limit=0, report_to=None):
        """bp_agent_send on node; returns (creation time ms, sequence number)."""
        data = bytes(payload)
        ct, seq = c_uint64(), c_uint64()
        check(_send(self._handle(), node, src.encode(), dest.encode(), data, len(data),
                    int(lifetime_ms), priority, ordinal, flags, hop_limit,
                    report_to.encode() if report_to else None, ctypes.byref(ct),
                    ctypes.byref(seq)), f"send on node {node}")
        return ct.value, seq.value

    def recv(self, node, eid):
        """The oldest bundle queued for eid on node, or None."""
        h = self._handle()
        src = ctypes.create_string_buffer(300)
        ct, seq, fl = c_uint64(), c_uint64(), c_uint64()
        n = c_size_t()
        while True:
            rc = _recv(h, node, eid.encode(), src, len(src), ctypes.byref(ct),
                       ctypes.byref(seq), ctypes.byref(fl), self._buf, len(self._buf),
                       ctypes.byref(n))
            if rc == ENOSPACE and n.value > len(self._buf):
                self._buf = ctypes.create_string_buffer(n.value)
                continue
            if rc == EAGAIN:
                return None
            check(rc, f"recv {eid} on node {node}")
            return Delivery(src.value.decode(), ct.value, seq.value, fl.value,
                            self._buf.raw[:n.value])

    def recv_all(self, node, eid):
        out = []
        while (d := self.recv(node, eid)) is not None:
            out.append(d)
        return out

    # -- running
    def run(self, until_ms=None, deliveries=0, for_ms=None):
        """Runs until virtual time until_ms (or now + for_ms) or until
        `deliveries` bundles were delivered in this call. Returns "time",
        "deliveries" or "idle"."""
        if for_ms is not None:
            until_ms = self.now + int(for_ms)
        if until_ms is None:
            if not deliveries:
                raise ValueError("run() needs until_ms, for_ms or deliveries")
            until_ms = FOREVER
        rc = check(_run(self._handle(), int(until_ms), int(deliveries)), "run")
        return _STOP_NAMES[rc]

    @property
    def now(self):
        """Virtual ms since the simulation began."""
        return _now(self._handle())

    @property
    def dtn_now(self):
        return _dtn(self._handle())

    @property
    def deliveries(self):
        return _deliveries(self._handle())

    def random(self):
        return _random(self._handle())

    # -- counters
    def stats(self, node):
        """{counter name: value} for node: "deliveries", "bp.*", "ltp.*"."""
        vals = (c_uint64 * len(NODE_COUNTERS))()
        check(_node_counters(self._handle(), node, vals, len(vals)), f"stats {node}")
        return dict(zip(NODE_COUNTERS, vals))

    def link_stats(self, a, b):
        """{counter name: value} for the direction a -> b."""
        vals = (c_uint64 * len(LINK_COUNTERS))()
        check(_link_counters(self._handle(), a, b, vals, len(vals)), f"link_stats {a}->{b}")
        return dict(zip(LINK_COUNTERS, vals))

    def contact_stats(self, a, b):
        """{follows, open, windows, outside, bytes_in_contact} for a -> b."""
        vals = (c_uint64 * len(CONTACT_COUNTERS))()
        check(_contact_stats(self._handle(), a, b, vals), f"contact_stats {a}->{b}")
        return dict(zip(CONTACT_COUNTERS, vals))

    # -- contact graph routing
    def cgr(self, node, on=True):
        """Contact Graph Routing on (or off) for one node."""
        check(_node_cgr(self._handle(), node, 1 if on else 0), f"cgr on node {node}")

    def cgr_stats(self, node):
        """{counter name: value} of node's CGR engine (routed, too_late, ...)."""
        vals = (c_uint64 * len(CGR_COUNTERS))()
        check(_cgr_counters(self._handle(), node, vals, len(vals)), f"cgr_stats {node}")
        return dict(zip(CGR_COUNTERS, vals))

    def cgr_status(self, node):
        """node's CGR status text (as tern status shows it)."""
        buf = ctypes.create_string_buffer(8192)
        check(_cgr_status(self._handle(), node, buf, len(buf)), f"cgr_status {node}")
        return buf.value.decode()

    def cgr_route(self, node, dest, size=0, lifetime_ms=0, priority=STANDARD):
        """The route node's CGR would give such a bundle now (nothing booked):
        a CgrRoute, false with .reason when there is none."""
        nodes = (c_uint64 * 64)()
        starts = (c_uint64 * 64)()
        arr = c_uint64()
        rc = _cgr_route(self._handle(), node, dest, int(size), int(lifetime_ms), priority,
                        nodes, starts, 64, ctypes.byref(arr))
        if rc in _CGR_WHY:
            return CgrRoute(False, _CGR_WHY[rc])
        check(rc, f"cgr_route {node}->{dest}")
        return CgrRoute(True, "", list(nodes[:rc]), list(starts[:rc]), arr.value)

    def ionadmin(self, node, cmds):
        """Applies ionadmin contact/range commands to node's plan at run time
        (its CGR and contact-following links take them at once). Returns the
        output (listings)."""
        out = ctypes.create_string_buffer(1 << 16)
        rc = _node_ionadmin(self._handle(), node, cmds.encode(), out, len(out))
        if rc < 0:
            raise TernError(rc, out.value.decode() or "tern_sim_node_ionadmin")
        return out.value.decode()
