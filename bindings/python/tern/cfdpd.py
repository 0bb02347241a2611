"""The node's CFDP entity, cfdpd, through its command socket (libterncfdp's
cfdp_ctl.h; docs/cfdpd.md): put, get, list, cancel, suspend, resume, status
and an event iterator.

    d = cfdpd.Cfdpd(node_dir)
    txn = d.put("photo.jpg", 2, "photo.jpg")        # "1.7"; the path is in cfdpd's filestore
    for ev in d.events(txn, timeout=60):
        if ev["type"] == cfdpd.FINISHED:
            assert ev["condition"] == 0 and ev["delivery"] == 0
            break
    d.status()  # [{"txn": "1.7", "role": "sender", "state": "finished", ...}]
"""
import ctypes
from ctypes import POINTER, Structure, byref, c_char, c_char_p, c_int, c_size_t
from ctypes import c_uint, c_uint8, c_uint32, c_uint64, c_void_p

from . import _lib
from .errors import TernError

_c = _lib.load("cfdp")

# event types: enum cfdp_ind_type, and cfdp_ctl's own
TRANSACTION, METADATA, FILE_SEGMENT, EOF_SENT, EOF_RECEIVED, FINISHED = 1, 2, 3, 4, 5, 6
FAULT, SUSPENDED, RESUMED, ABANDONED = 7, 8, 9, 10
PROGRESS, ANSWER = 100, 101
STATES = ("active", "suspended", "cancelling", "closing", "finished")


class _TxnId(Structure):
    _fields_ = [("src", c_uint64), ("seq", c_uint64)]


class _Info(Structure):  # cfdp_txn_info
    _fields_ = [("id", _TxnId), ("peer", c_uint64), ("role", c_uint8), ("state", c_uint8),
                ("cls", c_uint8), ("condition", c_uint8), ("file_size", c_uint64),
                ("progress", c_uint64), ("gaps", c_uint64), ("bytes_resent", c_uint64)]


class _PutReq(Structure):
    _fields_ = [("src_name", c_char_p), ("dst", c_uint64), ("dst_name", c_char_p),
                ("cls", c_int), ("closure", c_int), ("checksum_type", c_int),
                ("segment", c_uint32), ("lifetime_s", c_uint32)]


class _Event(Structure):
    _fields_ = [("type", c_uint), ("txn", _TxnId), ("condition", c_uint8),
                ("delivery", c_uint8), ("file_status", c_uint8), ("state", c_uint8),
                ("file_size", c_uint64), ("progress", c_uint64), ("resent", c_uint64),
                ("answer", c_uint), ("ok", c_uint8), ("peer", c_uint64)]


class _Info2(Structure):  # cfdp_ctl_info
    _fields_ = [("entity", c_uint64), ("root", c_char * 4096), ("txns", c_uint64)]


def _sig(name, res, *args):
    f = getattr(_c, name)
    f.restype = res
    f.argtypes = list(args)
    return f


_open = _sig("cfdp_ctl_open", c_int, c_char_p, POINTER(c_void_p))
_close = _sig("cfdp_ctl_close", None, c_void_p)
_errmsg = _sig("cfdp_ctl_errmsg", c_char_p, c_void_p)
_info = _sig("cfdp_ctl_info_get", c_int, c_void_p, POINTER(_Info2))
_put = _sig("cfdp_ctl_put", c_int, c_void_p, POINTER(_PutReq), POINTER(_TxnId))
_get = _sig("cfdp_ctl_get", c_int, c_void_p, c_uint64, c_char_p, c_char_p, c_int,
            POINTER(_TxnId))
_ls = _sig("cfdp_ctl_ls", c_int, c_void_p, c_uint64, c_char_p, c_char_p, POINTER(_TxnId))
_status = _sig("cfdp_ctl_status", c_int, c_void_p, POINTER(_Info), c_size_t,
               POINTER(c_size_t))
_cancel = _sig("cfdp_ctl_cancel", c_int, c_void_p, _TxnId)
_suspend = _sig("cfdp_ctl_suspend", c_int, c_void_p, _TxnId)
_resume = _sig("cfdp_ctl_resume", c_int, c_void_p, _TxnId)
_watch = _sig("cfdp_ctl_watch", c_int, c_void_p, _TxnId)
_next = _sig("cfdp_ctl_next_event", c_int, c_void_p, POINTER(_Event), c_int)
_cond_name = _sig("cfdp_condition_name", c_char_p, c_uint)

ETIMEDOUT = -110


class CfdpdError(TernError):
    """cfdpd refused a command, or could not be reached (rc: the code)."""

    def __init__(self, rc, msg):
        Exception.__init__(self, f"{msg} ({rc})")
        self.rc = rc
        self.msg = msg


def condition_name(code):
    return _cond_name(code).decode()


def _tid(txn):
    if isinstance(txn, str):
        s, q = txn.split(".")
        return _TxnId(int(s), int(q))
    return _TxnId(*txn)


def _txt(t):
    return f"{t.src}.{t.seq}"


class Cfdpd:
    """A connection to the cfdpd of node_dir (None: $TERN_NODE_DIR, else ".")."""

    def __init__(self, node_dir=None):
        self._h = c_void_p()
        rc = _open(node_dir.encode() if node_dir else None, byref(self._h))
        if rc:
            raise CfdpdError(rc, f"no cfdpd serves {node_dir}" if rc == -111
                             else f"cfdpd of {node_dir}")

    def _check(self, rc, what):
        if rc:
            raise CfdpdError(rc, f"{what}: {_errmsg(self._h).decode(errors='replace')}")

    def close(self):
        if self._h:
            _close(self._h)
            self._h = c_void_p()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def info(self):
        i = _Info2()
        self._check(_info(self._h, byref(i)), "info")
        return {"entity": i.entity, "root": i.root.decode(), "txns": i.txns}

    def put(self, src_name, dst, dst_name, cls=0, closure=-1, checksum=-1, segment=0,
            lifetime_s=0):
        """Starts a put of src_name (in cfdpd's filestore); returns "S.Q"."""
        r = _PutReq(src_name.encode(), dst, dst_name.encode(), cls, closure, checksum,
                    segment, lifetime_s)
        t = _TxnId()
        self._check(_put(self._h, byref(r), byref(t)), f"put {src_name}")
        return _txt(t)

    def get(self, peer, src_name, dst_name, cls=0):
        """A proxy put request; returns the request's "S.Q" (watch it for ANSWER)."""
        t = _TxnId()
        self._check(_get(self._h, peer, src_name.encode(), dst_name.encode(), cls, byref(t)),
                    f"get {peer}:{src_name}")
        return _txt(t)

    def list(self, peer, dir, listing):
        """A directory listing request, arriving as file listing; returns "S.Q"."""
        t = _TxnId()
        self._check(_ls(self._h, peer, dir.encode(), listing.encode(), byref(t)),
                    f"ls {peer}:{dir}")
        return _txt(t)

    def status(self):
        cap = 4096
        v = (_Info * cap)()
        n = c_size_t()
        self._check(_status(self._h, v, cap, byref(n)), "status")
        return [{"txn": _txt(t.id), "peer": t.peer, "role": "receiver" if t.role else "sender",
                 "state": STATES[t.state] if t.state < len(STATES) else "unknown",
                 "class": t.cls, "condition": t.condition, "size": t.file_size,
                 "progress": t.progress, "gaps": t.gaps, "resent": t.bytes_resent}
                for t in v[:min(n.value, cap)]]

    def cancel(self, txn):
        self._check(_cancel(self._h, _tid(txn)), f"cancel {txn}")

    def suspend(self, txn):
        self._check(_suspend(self._h, _tid(txn)), f"suspend {txn}")

    def resume(self, txn):
        self._check(_resume(self._h, _tid(txn)), f"resume {txn}")

    def events(self, txn, timeout=None, until=FINISHED):
        """Yields the events of txn as dicts up to the first of type until
        (included): FINISHED for a put, ANSWER for the request of a get or
        list (its own transaction finishes before the answer comes). Raises
        CfdpdError(-ETIMEDOUT) when none came for timeout seconds. Watching
        takes this connection: use another one for other calls."""
        self._check(_watch(self._h, _tid(txn)), f"watch {txn}")
        ms = -1 if timeout is None else int(timeout * 1000)
        while True:
            e = _Event()
            rc = _next(self._h, byref(e), ms)
            if rc:
                raise CfdpdError(rc, f"waiting for events of {txn}")
            ev = {f: getattr(e, f) for f, _ in _Event._fields_}
            ev["txn"] = _txt(e.txn)
            yield ev
            if e.type == until:
                return
