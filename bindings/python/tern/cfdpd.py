"""The CFDP entity of a node from Python: ctypes over libterncfdp's cfdp_ctl
calls, the client side of cfdpd's command socket (docs/cfdp-python.md).

    from tern.cfdpd import Entity
    with Entity("/path/to/node") as e:          # that node's cfdpd
        txn = e.put("/data/img.raw", 2, "img.raw")  # class 2 by default
        for ev in e.events(txn, timeout=60):    # progress, then the end
            print(ev["type"], ev["bytes"], ev["condition"])
        e.wait(txn)["delivered"]                # True

Transaction IDs are strings "<source entity>.<sequence number>", as
cfdpstatus prints them. Failures raise CfdpdError (a TernError) carrying
cfdpd's own text in .msg.
"""
import ctypes
import errno
import os
import shutil
import time
from ctypes import POINTER, Structure, byref, c_char, c_char_p, c_int, c_size_t
from ctypes import c_uint, c_uint8, c_uint32, c_uint64, c_void_p

from . import _lib
from .errors import TernError

_c = _lib.load("cfdp")

# cfdp_ctl.h / cfdp.h constants
MSG_MAX = 65536
PATH_MAX = 4096
EV_PROGRESS, EV_ANSWER = 100, 101
IND_FINISHED, IND_ABANDONED = 6, 10
STATE_FINISHED = 4
COND_NO_ERROR, COND_CANCEL = 0, 15
CKSUM_MODULAR, CKSUM_CRC32C, CKSUM_CRC32, CKSUM_NULL = 0, 2, 3, 15
# short names of the event types (enum cfdp_ind_type), as events() yields them
EVENT_TYPES = {1: "transaction", 2: "metadata", 3: "file_segment", 4: "eof_sent",
               5: "eof_received", 6: "finished", 7: "fault", 8: "suspended",
               9: "resumed", 10: "abandoned", 11: "report", EV_PROGRESS: "progress",
               EV_ANSWER: "answer"}
_FILE_STATUS = {0: "discarded", 1: "rejected", 2: "retained", 3: "unreported"}
_TIMEOUT_MS = 10000


class _TxnId(Structure):
    _fields_ = [("src", c_uint64), ("seq", c_uint64)]


class _TxnInfo(Structure):
    _fields_ = [("id", _TxnId), ("peer", c_uint64), ("role", c_uint8), ("state", c_uint8),
                ("cls", c_uint8), ("condition", c_uint8), ("file_size", c_uint64),
                ("progress", c_uint64), ("gaps", c_uint64), ("bytes_resent", c_uint64)]


class _Info(Structure):
    _fields_ = [("entity", c_uint64), ("root", c_char * PATH_MAX), ("txns", c_uint64)]


FS_MAX, FS_NAME_MAX = 32, 255
PRIORITIES = {"bulk": 1, "standard": 2, "expedited": 3}  # enum cfdp_ctl_priority


class _FsReq(Structure):
    _fields_ = [("action", c_uint8), ("first", c_char * (FS_NAME_MAX + 1)),
                ("second", c_char * (FS_NAME_MAX + 1))]


class _PutReq(Structure):
    _fields_ = [("src_name", c_char_p), ("dst", c_uint64), ("dst_name", c_char_p),
                ("cls", c_int), ("closure", c_int), ("checksum_type", c_int),
                ("segment", c_uint32), ("lifetime_s", c_uint32), ("priority", c_int),
                ("nfs", c_size_t), ("fs", POINTER(_FsReq))]


class _Event(Structure):
    _fields_ = [("type", c_uint), ("txn", _TxnId), ("condition", c_uint8),
                ("delivery", c_uint8), ("file_status", c_uint8), ("state", c_uint8),
                ("file_size", c_uint64), ("progress", c_uint64), ("resent", c_uint64),
                ("answer", c_uint), ("ok", c_uint8), ("peer", c_uint64),
                ("nfs", c_uint8), ("fs_action", c_uint8 * FS_MAX),
                ("fs_status", c_uint8 * FS_MAX)]


class _CtlTxn(Structure):
    _fields_ = [("info", _TxnInfo), ("priority", c_int)]


def _sig(name, res, *args):
    f = getattr(_c, name)
    f.restype = res
    f.argtypes = list(args)
    return f


_open = _sig("cfdp_ctl_open", c_int, c_char_p, POINTER(c_void_p))
_close = _sig("cfdp_ctl_close", None, c_void_p)
_errmsg = _sig("cfdp_ctl_errmsg", c_char_p, c_void_p)
_request = _sig("cfdp_ctl_request", c_int, c_void_p, c_char_p, c_char_p, c_size_t, c_int)
_kv = _sig("cfdp_ctl_kv", c_int, c_char_p, c_char_p, c_int, c_char_p, c_size_t)
_info_get = _sig("cfdp_ctl_info_get", c_int, c_void_p, POINTER(_Info))
_put = _sig("cfdp_ctl_put", c_int, c_void_p, POINTER(_PutReq), POINTER(_TxnId))
_txns = _sig("cfdp_ctl_txns", c_int, c_void_p, POINTER(_CtlTxn), c_size_t,
             POINTER(c_size_t))
_get_to = _sig("cfdp_ctl_get_to", c_int, c_void_p, c_uint64, c_uint64, c_char_p, c_char_p,
               c_int, c_int, POINTER(_TxnId))
_fs_parse = _sig("cfdp_ctl_fs_parse", c_int, c_char_p, POINTER(_FsReq), c_char_p, c_size_t)
_fs_word = _sig("cfdp_ctl_fs_word", c_char_p, c_uint)
_fs_status_name = _sig("cfdp_fs_status_name", c_char_p, c_uint, c_uint)
_prio_name = _sig("cfdp_ctl_priority_name", c_char_p, c_int)
_ctl_struct_size = _sig("cfdp_ctl_struct_size", c_size_t, c_char_p)
_status = _sig("cfdp_ctl_status", c_int, c_void_p, POINTER(_TxnInfo), c_size_t,
               POINTER(c_size_t))
_txn_calls = {n: _sig(f"cfdp_ctl_{n}", c_int, c_void_p, _TxnId)
              for n in ("cancel", "suspend", "resume", "watch")}
_get = _sig("cfdp_ctl_get", c_int, c_void_p, c_uint64, c_char_p, c_char_p, c_int,
            POINTER(_TxnId))
_ls = _sig("cfdp_ctl_ls", c_int, c_void_p, c_uint64, c_char_p, c_char_p, POINTER(_TxnId))
_next_event = _sig("cfdp_ctl_next_event", c_int, c_void_p, POINTER(_Event), c_int)
_parse_txn = _sig("cfdp_ctl_parse_txn", c_int, c_char_p, POINTER(_TxnId))
_state_name = _sig("cfdp_ctl_state_name", c_char_p, c_uint)
_cond_name = _sig("cfdp_condition_name", c_char_p, c_uint)
_ind_name = _sig("cfdp_ind_name", c_char_p, c_uint)
_struct_size = _sig("cfdp_struct_size", c_size_t, c_char_p)

# Every struct laid out here is checked against the library's own size.
for _q, _n, _t in ((_struct_size, "cfdp_txn_id", _TxnId),
                   (_struct_size, "cfdp_txn_info", _TxnInfo),
                   (_ctl_struct_size, "cfdp_ctl_info", _Info),
                   (_ctl_struct_size, "cfdp_ctl_put_req", _PutReq),
                   (_ctl_struct_size, "cfdp_ctl_fsreq", _FsReq),
                   (_ctl_struct_size, "cfdp_ctl_event", _Event),
                   (_ctl_struct_size, "cfdp_ctl_txn", _CtlTxn)):
    if _q(_n.encode()) != ctypes.sizeof(_t):
        raise _lib.TernLibraryError(
            f"{_c._tern_path}: {_n} is {_q(_n.encode())} bytes, this package "
            f"lays it out as {ctypes.sizeof(_t)}")


class CfdpdError(TernError):
    """A cfdp_ctl call failed: .rc, and .msg, cfdpd's (or the client's) text."""

    def __init__(self, rc, msg):
        self.msg = msg
        super().__init__(rc, msg)


def condition_name(code):
    """The CFDP condition code in words ("no error", "cancel request received"...)."""
    return _cond_name(code).decode()


def state_name(state):
    return _state_name(state).decode()


def _txn_c(txn):
    if isinstance(txn, tuple):
        return _TxnId(*txn)
    t = _TxnId()
    if _parse_txn(str(txn).encode(), byref(t)):
        raise ValueError(f"{txn!r} is not a transaction ID <source>.<sequence number>")
    return t


def _txn_s(t):
    return f"{t.src}.{t.seq}"


def _event_dict(ev):
    d = dict(type=EVENT_TYPES.get(ev.type, str(ev.type)), type_code=ev.type,
             text="bytes moved" if ev.type == EV_PROGRESS else _ind_name(ev.type).decode(),
             txn=_txn_s(ev.txn), bytes=ev.progress, size=ev.file_size,
             condition=condition_name(ev.condition), condition_code=ev.condition)
    if ev.type == EV_PROGRESS:
        d.update(state=state_name(ev.state), resent=ev.resent)
    if ev.type == IND_FINISHED:
        d.update(delivery="complete" if ev.delivery == 0 else "incomplete",
                 file_status=_FILE_STATUS.get(ev.file_status, str(ev.file_status)),
                 fs=[dict(action=_fs_word(a).decode(), status_code=st,
                          status=_fs_status_name(a, st).decode())
                     for a, st in zip(ev.fs_action[:ev.nfs], ev.fs_status[:ev.nfs])])
    elif ev.type == EV_ANSWER:
        d.update(ok=bool(ev.ok), peer=ev.peer,
                 answer="proxy put" if ev.answer == 0x07 else "directory listing",
                 delivery="complete" if ev.ok else "incomplete", file_status="")
    elif ev.type == IND_ABANDONED or (ev.type == EV_PROGRESS and
                                      ev.state == STATE_FINISHED):
        d.update(delivery="incomplete", file_status="unreported")
    return d


class _Conn:
    """One cfdp_ctl connection."""

    def __init__(self, node_dir):
        self.h = c_void_p()
        rc = _open(node_dir.encode() if node_dir else None, byref(self.h))
        if rc:
            where = node_dir or os.environ.get("TERN_NODE_DIR") or "."
            if rc == -errno.ECONNREFUSED:
                raise CfdpdError(rc, f"no cfdpd serves {where} (start it with "
                                     f"'cfdpd {where}')")
            raise CfdpdError(rc, f"node directory {where}")

    def check(self, rc, what):
        if rc:
            msg = (_errmsg(self.h) or b"").decode(errors="replace")
            raise CfdpdError(rc, msg or what)  # cfdpd's text names the operation

    def request(self, text, timeout_ms=_TIMEOUT_MS):
        ans = ctypes.create_string_buffer(MSG_MAX + 1)
        rc = _request(self.h, text.encode(), ans, len(ans), timeout_ms)
        self.check(rc, text.split("\n", 1)[0])
        return ans.value.decode(errors="replace")

    def close(self):
        if self.h:
            _close(self.h)
            self.h = c_void_p()


def _kvs(line):
    """A status line's space-separated key=value fields."""
    return dict(f.split("=", 1) for f in line.split() if "=" in f)


class Entity:
    """The cfdpd of node_dir (None: $TERN_NODE_DIR, else ".")."""

    def __init__(self, node_dir=None):
        self.node_dir = node_dir
        self._c = _Conn(node_dir)
        info = _Info()
        self._c.check(_info_get(self._c.h, byref(info)), "info")
        self.entity = info.entity
        self.root = info.root.decode()
        self._puts = {}  # txn -> (class, closure, staged file or None)

    def close(self):
        self._c.close()
        for _, _, staged in self._puts.values():
            if staged:
                _unlink(staged)
        self._puts.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -------------------------------------------------------------- puts

    def _source(self, src):
        """cfdpd's name for src: relative names are in the filestore; an
        absolute path inside the root is made relative, one outside it is
        linked (or copied) into <root>/.outbox and removed when the
        transaction's outcome is known."""
        if not os.path.isabs(src):
            return src, None
        real, root = os.path.realpath(src), os.path.realpath(self.root)
        if not os.path.isfile(real):
            raise CfdpdError(-errno.ENOENT, f"{src}: no such regular file")
        if real.startswith(root + os.sep):
            return os.path.relpath(real, root), None
        box = os.path.join(root, ".outbox")
        os.makedirs(box, exist_ok=True)
        staged = os.path.join(box, f"py{os.getpid()}-{id(self):x}-{time.monotonic_ns()}-"
                                   f"{os.path.basename(real)}")
        try:
            os.link(real, staged)
        except OSError:
            shutil.copyfile(real, staged)
        return os.path.relpath(staged, root), staged

    @staticmethod
    def _fs_reqs(fs):
        """fs: filestore requests, each "ACTION:NAME[:NAME2]" (as cfdpput
        --fs) or a tuple (ACTION, NAME[, NAME2]) with ACTION a word such as
        "createDirectory" or an enum cfdp_fs_action number."""
        fs = list(fs)
        if len(fs) > FS_MAX:
            raise ValueError(f"at most {FS_MAX} filestore requests, not {len(fs)}")
        arr = (_FsReq * max(len(fs), 1))()
        why = ctypes.create_string_buffer(300)
        for i, f in enumerate(fs):
            if not isinstance(f, str):
                a, *names = f
                if isinstance(a, int):
                    a = _fs_word(a).decode()
                f = ":".join([a, *[os.fspath(n) for n in names]])
            if _fs_parse(f.encode(), byref(arr[i]), why, len(why)):
                raise ValueError(f"filestore request {f!r}: {why.value.decode()}")
        return arr, len(fs)

    def put(self, src, dest_entity, dest_path=None, cls=2, closure=None, checksum=None,
            segment=0, lifetime=0, priority=None, fs=()):
        """Sends file src to dest_entity as dest_path; returns the transaction ID.
        cls 1 or 2; closure (class 1: ask for a Finished; None: cfdpd's default);
        checksum: a checksum type (None: the peer's); segment: largest file
        data per PDU (0: what fits); lifetime: bundle lifetime in seconds
        (0: cfdpd's default); priority: "bulk", "standard" or "expedited"
        (None: standard), the bundles' class of service; fs: filestore
        requests run at the receiver (see _fs_reqs), whose results the
        "finished" event lists. src and dest_path None with fs: a
        metadata-only transaction (the requests alone)."""
        if cls not in (1, 2):
            raise ValueError(f"cls is 1 or 2, not {cls!r}")
        if priority is not None and priority not in PRIORITIES:
            raise ValueError(f"priority is one of {sorted(PRIORITIES)}, not {priority!r}")
        arr, nfs = self._fs_reqs(fs)
        if (src is None) != (dest_path is None) or (src is None and not nfs):
            raise ValueError("a put names src and dest_path, or neither and fs requests")
        name, staged = (None, None) if src is None else self._source(os.fspath(src))
        req = _PutReq(src_name=name.encode() if name else None, dst=int(dest_entity),
                      dst_name=os.fspath(dest_path).encode() if name else None, cls=cls,
                      closure=-1 if closure is None else int(bool(closure)),
                      checksum_type=-1 if checksum is None else int(checksum),
                      segment=int(segment), lifetime_s=int(lifetime),
                      priority=PRIORITIES.get(priority, 0), nfs=nfs,
                      fs=arr if nfs else None)
        t = _TxnId()
        try:
            self._c.check(_put(self._c.h, byref(req), byref(t)),
                          f"put {src} to {dest_entity}:{dest_path}")
        except CfdpdError:
            if staged:
                _unlink(staged)
            raise
        txn = _txn_s(t)
        self._puts[txn] = (cls, closure, staged)
        return txn

    def get(self, src_entity, remote_path, local_path, cls=0, priority=None, to=None):
        """Proxy put: asks src_entity to send its remote_path here as
        local_path (a name in this entity's filestore) or, with to=N, to
        entity N (local_path is then a name in N's filestore); returns the
        request's transaction ID. Its outcome is the "answer" event
        (events(), wait()). priority: of the request's own bundles (the file
        comes at the remote entity's priority)."""
        if priority is not None and priority not in PRIORITIES:
            raise ValueError(f"priority is one of {sorted(PRIORITIES)}, not {priority!r}")
        t = _TxnId()
        self._c.check(_get_to(self._c.h, int(src_entity), int(to or 0),
                              os.fspath(remote_path).encode(),
                              os.fspath(local_path).encode(), int(cls),
                              PRIORITIES.get(priority, 0), byref(t)),
                      f"get {src_entity}:{remote_path}")
        return _txn_s(t)

    def list(self, entity, directory, local_path=None):
        """Directory listing: asks entity for a listing of directory, to
        arrive here as local_path (default "<directory>.lst"); returns the
        request's transaction ID, whose "answer" event tells the outcome."""
        local_path = local_path or (directory.rstrip("/") or "root") + ".lst"
        t = _TxnId()
        self._c.check(_ls(self._c.h, int(entity), directory.encode(), local_path.encode(),
                          byref(t)), f"ls {entity}:{directory}")
        return _txn_s(t)

    # ------------------------------------------------------ transactions

    def _txn_call(self, name, txn):
        self._c.check(_txn_calls[name](self._c.h, _txn_c(txn)), f"{name} {txn}")

    def cancel(self, txn):
        """Cancel.request: the transaction ends with "cancel request received"."""
        self._txn_call("cancel", txn)

    def suspend(self, txn):
        self._txn_call("suspend", txn)

    def resume(self, txn):
        self._txn_call("resume", txn)

    def status(self):
        """Every transaction cfdpd holds, as dicts (txn, role, peer, state,
        class, size, progress, gaps, resent, condition, condition_code,
        priority)."""
        cap = 256
        while True:
            v = (_CtlTxn * cap)()
            n = c_size_t()
            self._c.check(_txns(self._c.h, v, cap, byref(n)), "status")
            if n.value <= cap:
                break
            cap = n.value
        return [dict(txn=_txn_s(t.id), role="receiver" if t.role else "sender",
                     peer=t.peer, state=state_name(t.state), cls=t.cls,
                     size=t.file_size, progress=t.progress, gaps=t.gaps,
                     resent=t.bytes_resent, condition=condition_name(t.condition),
                     condition_code=t.condition, priority=_prio_name(r.priority).decode())
                for r in v[:n.value] for t in (r.info,)]

    def counters(self):
        """cfdpd's entity counters from its status answer (pdus_in, pdus_out,
        file_bytes_out, file_bytes_resent, drop_malformed, bp_sent, ...)."""
        out = {}
        for line in self._c.request("status\n").split("\n")[1:]:
            if "=" in line and not line.startswith("txn="):
                k, v = line.split("=", 1)
                out[k] = int(v) if v.isdigit() else v
        return out

    def events(self, txn, timeout=None, answer=False):
        """The events of transaction txn as dicts (type: a name of
        EVENT_TYPES, "progress" for bytes moved; text: the indication in
        words; bytes; size; condition; for progress: state and
        resent; for the last one: delivery and file_status), ending after
        "finished", "abandoned", or a progress whose state is "finished"
        (cfdpd sends no Finished for an abandoned transaction). answer=True
        (for a get or list request): the iteration ends at the "answer"
        event (ok, peer), which tells whether the file arrived complete. timeout: seconds for the whole iteration (None: no
        limit); running out raises CfdpdError(-ETIMEDOUT). A transaction that
        already ended yields its "finished" event if cfdpd still remembers it."""
        conn = _Conn(self.node_dir)  # one watch per connection
        try:
            conn.check(_txn_calls["watch"](conn.h, _txn_c(txn)), f"watch {txn}")
            end = None if timeout is None else time.monotonic() + timeout
            ev = _Event()
            while True:
                left = -1
                if end is not None:
                    left = int((end - time.monotonic()) * 1000)
                    if left <= 0:
                        raise CfdpdError(-errno.ETIMEDOUT,
                                         f"transaction {txn}: no outcome within "
                                         f"{timeout} s (it goes on)")
                rc = _next_event(conn.h, byref(ev), left)
                if rc == -errno.ETIMEDOUT:
                    continue
                conn.check(rc, f"events of {txn}")
                d = _event_dict(ev)
                yield d
                # the end: Finished, or abandoned (a limit hit while
                # cancelling), told as its own event or only as the state
                if answer:  # a get/ls request: its end is the answer
                    if ev.type == EV_ANSWER:
                        return
                elif ev.type in (IND_FINISHED, IND_ABANDONED) or (
                        ev.type == EV_PROGRESS and ev.state == STATE_FINISHED):
                    return
        finally:
            conn.close()

    def wait_answer(self, txn, timeout=None):
        """Waits for the answer to a get or list request: a dict with txn,
        delivered (the file or listing arrived complete), condition,
        condition_code, peer (the entity that answered) and answer."""
        last = None
        for ev in self.events(txn, timeout, answer=True):
            last = ev
        return dict(txn=last["txn"], delivered=last["ok"], condition=last["condition"],
                    condition_code=last["condition_code"], peer=last["peer"],
                    answer=last["answer"])

    def wait(self, txn, timeout=None):
        """Waits for txn's outcome: a dict with txn, delivered (no error and
        the data complete), checksum_verified (delivered, and the receiver
        compared the checksum: class 2, or class 1 with closure), condition,
        condition_code, delivery, file_status, bytes, size, seconds, resent,
        fs (the Finished's filestore responses: action, status_code, status;
        status_code 0 is success)."""
        txn = _txn_s(_txn_c(txn))
        cls, closure, staged = self._puts.get(txn, (None, None, None))
        if cls is None:
            cls = next((t["cls"] for t in self.status() if t["txn"] == txn), None)
        t0 = time.monotonic()
        resent, last = 0, None
        try:
            for ev in self.events(txn, timeout):
                if ev["type"] == "progress":
                    resent = ev["resent"]
                last = ev
        finally:
            if staged:
                _unlink(staged)
                self._puts[txn] = (cls, closure, None)
        delivered = last["type"] == "finished" and \
            last["condition_code"] == COND_NO_ERROR and last["delivery"] == "complete"
        # class 1 without closure: nobody reported back, nothing was checked
        verified = delivered and not (cls == 1 and not closure)
        return dict(txn=txn, delivered=delivered, checksum_verified=verified,
                    condition=last["condition"], condition_code=last["condition_code"],
                    delivery=last["delivery"], file_status=last["file_status"],
                    bytes=last["bytes"], size=last["size"], resent=resent,
                    seconds=time.monotonic() - t0, cls=cls, fs=last.get("fs", []))


def _unlink(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
