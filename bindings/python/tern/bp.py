"""libtern (libternclient.so) through ctypes: applications on a real node.

    with Node("/tmp/n1") as node:                 # a running ternd's directory
        ep = node.open("ipn:1.1")
        ep.send("ipn:2.1", b"hello", lifetime_s=300)
        ep.send_file("ipn:2.1", "/etc/hosts")     # the descriptor goes, not a copy
        d = ep.receive(timeout_ms=5000)           # Delivery or None
        print(node.status())
        print(node.admin("bpadmin", "l endpoint"))

Every call goes through the C API of stack/client/include/tern_bp.h; plain C
types cross the boundary and nothing calls back into Python. Blocking calls
(bp_receive, a full send window) release the GIL. Failures raise BpError, a
tern.errors.TernError that carries bp_errmsg() (which node directory, which
endpoint) and bp_strerror()'s wording.
"""
import ctypes
import os
from ctypes import POINTER, c_char, c_char_p, c_int, c_size_t, c_uint, c_uint32, c_uint64
from ctypes import c_void_p
from dataclasses import dataclass

from . import _lib
from .errors import TernError

_c = _lib.load("client")

# Classes of service (ION's names and values).
BULK, STANDARD, EXPEDITED = 0, 1, 2
# Status report requests (ION's srrFlags).
RECEIVED_RPT, FORWARDED_RPT, DELIVERED_RPT, DELETED_RPT = 0x01, 0x04, 0x08, 0x10
# BpSendOpts.flags.
SEND_NONBLOCK, SEND_MORE, SEND_NOFRAGMENT, SEND_FILE_REF = 0x1, 0x2, 0x4, 0x8
# Bundle processing flag of administrative records (Delivery.flags).
FLAG_ADMIN = 0x2

EID_MAX = 264
SEND_WINDOW = 64
_TEXT_MAX = 1 << 20

ETIMEDOUT = -110
EAGAIN = -11
EINTR = -4
EBUSY = -16
ECONNREFUSED = -111


class _SendOpts(ctypes.Structure):
    _fields_ = [("lifetime_ms", c_uint64), ("lifetime_s", c_uint32), ("priority", c_int),
                ("ordinal", c_uint), ("rpt_flags", c_uint), ("report_to", c_char_p),
                ("flags", c_uint)]


class _BundleRef(ctypes.Structure):
    _fields_ = [("ctime_ms", c_uint64), ("seq", c_uint64)]


class _Delivery(ctypes.Structure):
    _fields_ = [("src", c_char * EID_MAX), ("ctime_ms", c_uint64), ("seq", c_uint64),
                ("flags", c_uint64), ("payload", c_void_p), ("len", c_size_t),
                ("priv", c_void_p)]


def _sig(name, res, *args):
    f = getattr(_c, name)
    f.restype = res
    f.argtypes = list(args)
    return f


_attach = _sig("bp_node_attach", c_int, c_char_p, POINTER(c_void_p))
_detach = _sig("bp_node_detach", c_int, c_void_p)
_number = _sig("bp_node_number", c_uint64, c_void_p)
_status = _sig("bp_node_status", c_int, c_void_p, c_char_p, c_size_t)
_admin = _sig("bp_node_admin", c_int, c_void_p, c_char_p, c_char_p, c_char_p, c_size_t)
_stop = _sig("bp_node_stop", c_int, c_void_p)
_unanswered = _sig("bp_node_unanswered", c_uint, c_void_p)
_open = _sig("bp_node_open", c_int, c_void_p, c_char_p, POINTER(c_void_p))
_close = _sig("bp_close", c_int, c_void_p)
_send = _sig("bp_send", c_int, c_void_p, c_char_p, c_char_p, c_size_t, POINTER(_SendOpts),
             POINTER(_BundleRef))
_send_fd = _sig("bp_send_fd", c_int, c_void_p, c_char_p, c_int, ctypes.c_int64, c_size_t,
                POINTER(_SendOpts), POINTER(_BundleRef))
_flush = _sig("bp_flush", c_int, c_void_p, c_int)
_receive = _sig("bp_receive", c_int, c_void_p, POINTER(_Delivery), c_int)
_release = _sig("bp_release_delivery", None, POINTER(_Delivery))
_interrupt = _sig("bp_interrupt", None, c_void_p)
_strerror = _sig("bp_strerror", c_char_p, c_int)
_errmsg = _sig("bp_errmsg", c_char_p)


def strerror(rc):
    """bp_strerror: libtern's description of a return code."""
    return _strerror(rc).decode(errors="replace")


class BpError(TernError):
    """A libtern call failed. rc: the negative code; errmsg: bp_errmsg() of
    the failing call (may be empty); what: the operation."""

    def __init__(self, rc, what="", errmsg=""):
        Exception.__init__(self)
        self.rc = rc
        self.what = what
        self.errmsg = errmsg
        detail = f": {errmsg}" if errmsg and errmsg not in strerror(rc) else ""
        self.args = (f"{what + ': ' if what else ''}{strerror(rc)} ({rc}){detail}",)

    def __str__(self):
        return self.args[0]


def _check(rc, what):
    if rc < 0:
        # bp_errmsg is per thread; read it before any other libtern call here.
        msg = (_errmsg() or b"").decode(errors="replace")
        raise BpError(rc, what, msg)
    return rc


def _b(s):
    return s.encode() if isinstance(s, str) else s


@dataclass
class Delivery:
    """A bundle taken from an endpoint. ctime: creation time, ms since
    2000-01-01 (DTN time); flags: bundle processing flags."""
    src: str
    ctime: int
    seq: int
    payload: bytes
    flags: int = 0


@dataclass
class BundleRef:
    """What the node answered for a sent bundle: its creation timestamp."""
    ctime: int
    seq: int


def _opts(lifetime_s, lifetime_ms, priority, ordinal, report_flags, report_to, flags):
    if priority not in (BULK, STANDARD, EXPEDITED):
        raise ValueError(f"priority {priority!r}: expected 0 (bulk), 1 (standard) or "
                         f"2 (expedited)")
    o = _SendOpts()
    o.lifetime_ms = int(lifetime_ms or 0)
    o.lifetime_s = int(lifetime_s or 0)
    o.priority = priority
    o.ordinal = ordinal
    o.rpt_flags = report_flags
    o.report_to = _b(report_to) if report_to else None
    o.flags = flags
    return o


class Endpoint:
    """An open endpoint (BpSAP) of a Node; made by Node.open()."""

    def __init__(self, node, eid):
        self.node = node
        self.eid = eid
        h = c_void_p()
        _check(_open(node._handle(), _b(eid), ctypes.byref(h)), f"open {eid}")
        self._h = h

    def _handle(self):
        if not self._h:
            raise ValueError(f"endpoint {self.eid} is closed")
        return self._h

    def send(self, dest, payload, lifetime_s=86400, priority=STANDARD, ordinal=0,
             report_flags=0, report_to=None, *, lifetime_ms=0, more=False,
             nonblock=False, nofragment=False, wait=False):
        """Sends payload (bytes-like) to dest. Returns once the bundle is in
        the send window (a full window waits: flow control), or with
        wait=True once the node committed it, then with its BundleRef. A
        refusal of an earlier bundle may surface here as BpError."""
        flags = ((SEND_MORE if more else 0) | (SEND_NONBLOCK if nonblock else 0) |
                 (SEND_NOFRAGMENT if nofragment else 0))
        o = _opts(lifetime_s, lifetime_ms, priority, ordinal, report_flags, report_to,
                  flags)
        data = bytes(payload)
        ref = _BundleRef() if wait else None
        _check(_send(self._handle(), _b(dest), data, len(data), ctypes.byref(o),
                     ctypes.byref(ref) if wait else None), f"send {self.eid} -> {dest}")
        return BundleRef(ref.ctime_ms, ref.seq) if wait else None

    def send_file(self, dest, path, offset=0, length=None, lifetime_s=86400,
                  priority=STANDARD, ordinal=0, report_flags=0, report_to=None, *,
                  wait=True, by_ref=False):
        """Sends length bytes (default: to the end) of the file at path from
        offset as one bundle, handing ternd the file descriptor (bp_send_fd).
        The file must not change until the node answered: by default this
        waits for the answer and returns the BundleRef. by_ref=True
        (BP_SEND_FILE_REF) lets the node keep the bundle by reference to the
        file instead of a copy: the file must then stay as it is until the
        bundle has left the node."""
        o = _opts(lifetime_s, 0, priority, ordinal, report_flags, report_to,
                  SEND_FILE_REF if by_ref else 0)
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            if length is None:
                length = os.fstat(fd).st_size - offset
            ref = _BundleRef() if wait else None
            _check(_send_fd(self._handle(), _b(dest), fd, offset, length, ctypes.byref(o),
                            ctypes.byref(ref) if wait else None),
                   f"send {path} from {self.eid} -> {dest}")
        finally:
            os.close(fd)  # libtern keeps its own duplicate until answered
        return BundleRef(ref.ctime_ms, ref.seq) if wait else None

    def flush(self, timeout_ms=-1):
        """Waits until every send of the node's attachment is answered;
        raises the first refusal on this endpoint, or BpError(-ETIMEDOUT)."""
        _check(_flush(self._handle(), int(timeout_ms)), f"flush {self.eid}")

    def receive(self, timeout_ms=-1):
        """The next bundle for this endpoint, waiting up to timeout_ms (-1:
        for ever; 0: only what arrived); None if none came in time or
        interrupt() was called."""
        d = _Delivery()
        rc = _receive(self._handle(), ctypes.byref(d), int(timeout_ms))
        if rc in (ETIMEDOUT, EAGAIN, EINTR):
            return None
        _check(rc, f"receive on {self.eid}")
        try:
            payload = ctypes.string_at(d.payload, d.len) if d.len else b""
            return Delivery(d.src.decode(errors="replace"), d.ctime_ms, d.seq, payload,
                            d.flags)
        finally:
            _release(ctypes.byref(d))

    def interrupt(self):
        """Wakes a receive() blocked in another thread (it returns None)."""
        if self._h:
            _interrupt(self._h)

    def close(self):
        """Flushes this endpoint's sends and closes it (bp_close)."""
        if self._h:
            h, self._h = self._h, None
            self.node._endpoints.discard(self)
            _check(_close(h), f"close {self.eid}")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"<Endpoint {self.eid} {'open' if self._h else 'closed'}>"


class Node:
    """An attachment to the node whose ternd serves directory `dir`
    (bp_node_attach); several may exist in one process. A context manager."""

    def __init__(self, dir):
        self.dir = os.fspath(dir)
        h = c_void_p()
        _check(_attach(_b(self.dir), ctypes.byref(h)), f"attach {self.dir}")
        self._h = h
        self._endpoints = set()
        self._buf = ctypes.create_string_buffer(_TEXT_MAX)

    def _handle(self):
        if not self._h:
            raise ValueError(f"node {self.dir} is detached")
        return self._h

    @property
    def number(self):
        """The node's ipn number."""
        return _number(self._handle())

    def open(self, eid):
        """Opens an endpoint of this node; BpError -EBUSY if another
        application has it."""
        ep = Endpoint(self, eid)
        self._endpoints.add(ep)
        return ep

    def status(self):
        """The node's counters ("name value" lines) and ternd's status text."""
        self._buf[0] = b"\0"
        _check(_status(self._handle(), self._buf, len(self._buf)), f"status {self.dir}")
        return self._buf.value.decode(errors="replace")

    def counters(self):
        """The "name value" counter lines of status() as {name: int}."""
        out = {}
        for line in self.status().splitlines():
            w = line.split()
            if len(w) == 2 and w[1].isdigit():
                out[w[0]] = int(w[1])
            elif line.strip() == "node:":
                break
        return out

    def admin(self, module, line):
        """Runs one admin command line ("bpadmin", "ipnadmin", "ltpadmin",
        "ionadmin") and returns ternd's answer; BpError if ternd refused it
        (its answer is in .errmsg)."""
        self._buf[0] = b"\0"
        rc = _admin(self._handle(), _b(module), _b(line), self._buf, len(self._buf))
        text = self._buf.value.decode(errors="replace")
        if rc < 0:
            msg = (_errmsg() or b"").decode(errors="replace")
            raise BpError(rc, f"{module} '{line}'", text or msg)
        return text

    def unanswered(self):
        """Sends of this attachment not yet answered by the node."""
        return _unanswered(self._handle())

    def stop(self):
        """Asks ternd to stop (bp_node_stop)."""
        _check(_stop(self._handle()), f"stop {self.dir}")

    def close(self):
        """Closes the endpoints and detaches (bp_node_detach); raises the
        first refusal of a bundle not yet reported."""
        if self._h:
            for ep in list(self._endpoints):
                ep._h = None  # bp_node_detach closes them
            self._endpoints.clear()
            h, self._h = self._h, None
            _check(_detach(h), f"detach {self.dir}")

    detach = close

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc):
        try:
            self.close()
        except BpError:
            if exc_type is None:
                raise

    def __del__(self):
        try:
            if self._h:
                _detach(self._h)
                self._h = None
        except Exception:
            pass

    def __repr__(self):
        return f"<Node {self.dir} {'attached' if self._h else 'detached'}>"
