"""libams (libternams.so) through ctypes: AMS modules from Python.

    with Module("mib.amsrc", "amsdemo", "test", "", "shell") as m:
        s = m.subject("text")
        m.subscribe(s)                               # all roles, continua, units
        m.publish(s, b"hello")
        ev = m.get_event(timeout_s=5)                # Msg, Notice, User or None
        if isinstance(ev, Msg) and ev.type == QUERY:
            m.reply(ev, s, b"answer")

Events come out as plain objects (their content copied, the C event given
back at once). Calls that fail raise AmsError, a tern.errors.TernError with
ams_last_error()'s text (what exactly was wrong). Blocking calls release
the GIL, so several modules can run in one Python process, each in its own
thread.
"""
import ctypes
from ctypes import POINTER, byref, c_char_p, c_int, c_size_t, c_ubyte, c_uint64, c_void_p
from dataclasses import dataclass

from . import _lib
from .errors import TernError

_c = _lib.load("ams")

THIS_CONTINUUM, ALL_CONTINUA = -1, 0
ARRIVAL_ORDER, TRANSMISSION_ORDER = 0, 1
BEST_EFFORT, ASSURED = 0, 1
MSG_EVT, TIMEOUT_EVT, NOTICE_EVT, USER_EVT, CRASH_EVT = 1, 2, 3, 4, 5
UNARY, QUERY, REPLY = 0, 1, 2
REGISTRATION, INVITATION, SUBSCRIPTION = 0, 1, 2  # AmsStateType
BEGINS, ENDS = 1, 2  # AmsChangeType
POLL, BLOCKING = 0, -1


class _Stats(ctypes.Structure):
    _fields_ = [(n, c_uint64) for n in (
        "published", "sent", "received", "dropped_unsolicited", "dropped_unauthorised",
        "dropped_malformed", "send_errors", "reconnects", "dropped_queue_full")]


def _sig(name, res, *args):
    f = getattr(_c, name)
    f.restype = res
    f.argtypes = list(args)
    return f


_size = _sig("ams_struct_size", c_size_t, c_char_p)
if _size(b"ams_module_stats") != ctypes.sizeof(_Stats):
    raise _lib.TernLibraryError("libternams's ams_module_stats differs from tern.ams's")

_register = _sig("ams_register", c_int, c_char_p, c_char_p, c_char_p, c_char_p, c_char_p,
                 c_char_p, POINTER(c_void_p))
_unregister = _sig("ams_unregister", c_int, c_void_p)
_last_error = _sig("ams_last_error", c_char_p)
_module_nbr = _sig("ams_get_module_nbr", c_int, c_void_p)
_unit_nbr = _sig("ams_get_unit_nbr", c_int, c_void_p)
_role_nbr = _sig("ams_get_role_nbr", c_int, c_void_p)
_venture_nbr = _sig("ams_get_venture_nbr", c_int, c_void_p)
_continuum_nbr = _sig("ams_get_continuum_nbr", c_int)
_lookup = {k: _sig(f"ams_lookup_{k}_nbr", c_int, c_void_p, c_char_p)
           for k in ("unit", "role", "subject", "continuum")}
_name = {k: _sig(f"ams_lookup_{k}_name", c_char_p, c_void_p, c_int)
         for k in ("unit", "role", "subject", "continuum")}
_decl = {k: _sig(f"ams_{k}", c_int, c_void_p, c_int, c_int, c_int, c_int, c_int, c_ubyte, c_int,
                 c_int) for k in ("subscribe", "invite")}
_undecl = {k: _sig(f"ams_{k}", c_int, c_void_p, c_int, c_int, c_int, c_int)
           for k in ("unsubscribe", "disinvite")}
_publish = _sig("ams_publish", c_int, c_void_p, c_int, c_int, c_ubyte, c_int, c_char_p, c_int)
_send = _sig("ams_send", c_int, c_void_p, c_int, c_int, c_int, c_int, c_int, c_ubyte, c_int,
             c_char_p, c_int)
_query = _sig("ams_query", c_int, c_void_p, c_int, c_int, c_int, c_int, c_int, c_ubyte, c_int,
              c_char_p, c_int, c_int, POINTER(c_void_p))
_reply = _sig("ams_reply", c_int, c_void_p, c_void_p, c_int, c_int, c_ubyte, c_int, c_char_p)
_announce = _sig("ams_announce", c_int, c_void_p, c_int, c_int, c_int, c_int, c_int, c_ubyte,
                 c_int, c_char_p, c_int)
_post = _sig("ams_post_user_event", c_int, c_void_p, c_int, c_int, c_char_p, c_int)
_get_event = _sig("ams_get_event", c_int, c_void_p, c_int, POINTER(c_void_p))
_get_fd = _sig("ams_get_fd", c_int, c_void_p)
_event_type = _sig("ams_get_event_type", c_int, c_void_p)
_pi = POINTER(c_int)
_parse_msg = _sig("ams_parse_msg", c_int, c_void_p, _pi, _pi, _pi, _pi, _pi,
                  POINTER(c_void_p), _pi, _pi, _pi, POINTER(c_ubyte))
_parse_notice = _sig("ams_parse_notice", c_int, c_void_p, _pi, _pi, _pi, _pi, _pi, _pi, _pi, _pi,
                     _pi, POINTER(c_ubyte), _pi, _pi)
_parse_user = _sig("ams_parse_user_event", c_int, c_void_p, _pi, _pi, POINTER(c_void_p))
_recycle = _sig("ams_recycle_event", c_int, c_void_p)
_stats = _sig("ams_get_stats", c_int, c_void_p, POINTER(_Stats))


class AmsError(TernError):
    """A libams call failed: rc, and ams_last_error()'s text in errmsg."""

    def __init__(self, rc, what):
        self.errmsg = (_last_error() or b"").decode(errors="replace")
        super().__init__(rc, f"{what}: {self.errmsg}" if self.errmsg else what)


def _check(rc, what):
    if rc < 0:
        raise AmsError(rc, what)
    return rc


def _b(s):
    return s.encode() if isinstance(s, str) else s


@dataclass
class Msg:
    continuum: int
    unit: int
    module: int
    subject: int
    content: bytes
    context: int
    type: int  # UNARY, QUERY, REPLY
    priority: int
    flow: int
    _raw: object = None  # for reply(): the sender's identity


@dataclass
class Notice:
    state: int  # REGISTRATION, INVITATION, SUBSCRIPTION
    change: int  # BEGINS, ENDS
    unit: int
    module: int
    role: int
    continuum: int
    domain_unit: int
    subject: int
    priority: int
    flow: int
    sequence: int
    diligence: int


@dataclass
class User:
    code: int
    data: bytes


@dataclass
class Timeout:
    pass


def _take(ev):
    """A C event as a Python object; the C event is recycled."""
    try:
        t = _event_type(ev)
        if t == MSG_EVT:
            v = [c_int() for _ in range(9)]
            fl = c_ubyte()
            content = c_void_p()
            _parse_msg(ev, byref(v[0]), byref(v[1]), byref(v[2]), byref(v[3]), byref(v[4]),
                       byref(content), byref(v[5]), byref(v[6]), byref(v[7]), byref(fl))
            data = ctypes.string_at(content, v[4].value) if v[4].value else b""
            return Msg(v[0].value, v[1].value, v[2].value, v[3].value, data, v[5].value,
                       v[6].value, v[7].value, fl.value)
        if t == NOTICE_EVT:
            v = [c_int() for _ in range(11)]
            fl = c_ubyte()
            _parse_notice(ev, *(byref(x) for x in v[:9]), byref(fl), byref(v[9]),
                          byref(v[10]))
            return Notice(v[0].value, v[1].value, v[2].value, v[3].value, v[4].value,
                          v[5].value, v[6].value, v[7].value, v[8].value, fl.value,
                          v[9].value, v[10].value)
        if t == USER_EVT:
            code, n, data = c_int(), c_int(), c_void_p()
            _parse_user(ev, byref(code), byref(n), byref(data))
            return User(code.value, ctypes.string_at(data, n.value) if n.value else b"")
        return Timeout()
    finally:
        _recycle(ev)


class Module:
    """A registered AMS module; unregisters on close() or leaving a with."""

    def __init__(self, mib, application, authority, unit, role):
        h = c_void_p()
        _check(_register(_b(mib), None, _b(application), _b(authority), _b(unit), _b(role),
                         byref(h)), f"ams_register {role}")
        self._h = h

    @property
    def _handle(self):
        if not self._h:
            raise AmsError(-22, "module already unregistered")
        return self._h

    def close(self):
        if self._h:
            h, self._h = self._h, None
            _unregister(h)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # identity and lookups
    @property
    def number(self):
        return _module_nbr(self._handle)

    @property
    def unit(self):
        return _unit_nbr(self._handle)

    @property
    def role(self):
        return _role_nbr(self._handle)

    @property
    def venture(self):
        return _venture_nbr(self._handle)

    @staticmethod
    def continuum():
        return _continuum_nbr()

    def lookup(self, kind, name):
        """Number of a unit, role, subject or continuum by name."""
        return _check(_lookup[kind](self._handle, _b(name)), f"lookup {kind} {name}")

    def name(self, kind, nbr):
        r = _name[kind](self._handle, nbr)
        return r.decode() if r is not None else None

    def subject(self, name):
        return self.lookup("subject", name)

    # declarations
    def subscribe(self, subject, role=0, continuum=0, unit=0, priority=0, flow=0,
                  sequence=ARRIVAL_ORDER, diligence=BEST_EFFORT):
        _check(_decl["subscribe"](self._handle, role, continuum, unit, subject, priority, flow,
                                  sequence, diligence), "ams_subscribe")

    def unsubscribe(self, subject, role=0, continuum=0, unit=0):
        _check(_undecl["unsubscribe"](self._handle, role, continuum, unit, subject),
               "ams_unsubscribe")

    def invite(self, subject, role=0, continuum=0, unit=0, priority=0, flow=0,
               sequence=ARRIVAL_ORDER, diligence=BEST_EFFORT):
        _check(_decl["invite"](self._handle, role, continuum, unit, subject, priority, flow,
                               sequence, diligence), "ams_invite")

    def disinvite(self, subject, role=0, continuum=0, unit=0):
        _check(_undecl["disinvite"](self._handle, role, continuum, unit, subject),
               "ams_disinvite")

    # messages
    def publish(self, subject, content, priority=0, flow=0, context=0):
        _check(_publish(self._handle, subject, priority, flow, len(content), content, context),
               "ams_publish")

    def send(self, unit, module, subject, content, continuum=THIS_CONTINUUM, priority=0,
             flow=0, context=0):
        _check(_send(self._handle, continuum, unit, module, subject, priority, flow,
                     len(content), content, context), "ams_send")

    def query(self, unit, module, subject, content, timeout_s=5.0, continuum=THIS_CONTINUUM,
              priority=0, flow=0, context=0):
        """Sends a query and waits for its reply: a Msg, or None on timeout."""
        ev = c_void_p()
        term = BLOCKING if timeout_s is None else max(1, int(timeout_s * 1e6))
        _check(_query(self._handle, continuum, unit, module, subject, priority, flow,
                      len(content), content, context, term, byref(ev)), "ams_query")
        if not ev.value:
            return None
        r = _take(ev)
        return r if isinstance(r, Msg) else None

    def reply(self, msg, subject, content, priority=0, flow=0):
        """Replies to a query Msg (to its sender, with its context). The C
        event is long recycled: ams_reply gets one rebuilt from the Msg."""
        ev = _MsgEvent(msg)
        _check(_reply(self._handle, ev.ptr(), subject, priority, flow, len(content), content),
               "ams_reply")

    def announce(self, subject, content, role=0, continuum=THIS_CONTINUUM, unit=0, priority=0,
                 flow=0, context=0):
        _check(_announce(self._handle, role, continuum, unit, subject, priority, flow,
                         len(content), content, context), "ams_announce")

    # events
    def post_user_event(self, code, data=b"", priority=0):
        _check(_post(self._handle, code, len(data), data, priority), "ams_post_user_event")

    def get_event(self, timeout_s=None):
        """The next event (Msg, Notice or User), None if none came in time
        (timeout_s 0: poll; None: wait for ever)."""
        ev = c_void_p()
        term = BLOCKING if timeout_s is None else (
            POLL if timeout_s == 0 else max(1, int(timeout_s * 1e6)))
        _check(_get_event(self._handle, term, byref(ev)), "ams_get_event")
        if not ev.value:
            return None
        r = _take(ev)
        return None if isinstance(r, Timeout) else r

    def fileno(self):
        return _get_fd(self._handle)

    def stats(self):
        st = _Stats()
        _check(_stats(self._handle, byref(st)), "ams_get_stats")
        return {n: getattr(st, n) for n, _ in _Stats._fields_}


_make_reply_event = _sig("ams_make_msg_event", c_void_p, c_int, c_int, c_int, c_int, c_int)


class _MsgEvent:
    """A libams message event built from a Msg's identity, for ams_reply."""

    def __init__(self, msg):
        self._p = _make_reply_event(msg.continuum, msg.unit, msg.module, msg.subject,
                                    msg.context)
        if not self._p:
            raise AmsError(-12, "ams_reply: out of memory")

    def ptr(self):
        return self._p

    def __del__(self):
        if getattr(self, "_p", None):
            _recycle(self._p)
