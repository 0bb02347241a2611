"""CFDP entities on the simulated network of libterncfdp (cfdp.h, cfdp_sim.h).

Entities with in-memory filestores, joined by links with delay, jitter
(reordering), loss, duplication and outages, on a virtual clock: a
20-minute light time costs nothing. For tests written in Python.

    with Sim(seed=1) as s:
        a, b = s.entity(1), s.entity(2, nak_mode=DEFERRED)
        s.link(1, 2, delay_ms=1000, loss=0.05)
        a.write("f", data)
        txn = a.put(2, "f", "g")           # class 2
        s.run_idle(3_600_000)
        assert b.read("g") == data
        b.indications()[-1]["type"] == "finished"

Struct layouts are checked against the library (cfdp_struct_size) before
anything is called: a header change without this file's is an error, not a
crash.
"""
import ctypes
from ctypes import POINTER, Structure, byref, c_char_p, c_double, c_int, c_size_t
from ctypes import c_uint8, c_uint16, c_uint32, c_uint64, c_void_p, c_int8, c_int16

from . import _lib
from .cfdp import _Tlvs
from .errors import EEND, TernError, check

_c = _lib.load("cfdp")

IMMEDIATE, DEFERRED, PROMPTED, ASYNC = 0, 1, 2, 3
CANCEL, SUSPEND, IGNORE, ABANDON = 1, 2, 3, 4
SENDER, RECEIVER = 0, 1

IND_NAMES = {1: "transaction", 2: "metadata", 3: "file_segment", 4: "eof_sent",
             5: "eof_received", 6: "finished", 7: "fault", 8: "suspended", 9: "resumed",
             10: "abandoned", 11: "report"}
STATE_NAMES = {0: "active", 1: "suspended", 2: "cancelling", 3: "closing", 4: "finished"}


class _PeerCfg(Structure):
    _fields_ = [("id", c_uint64), ("max_pdu", c_uint32), ("max_segment", c_uint32),
                ("max_nak_segments", c_uint16), ("crc_required", c_uint8),
                ("default_class", c_uint8), ("closure", c_uint8), ("checksum_type", c_uint8),
                ("nak_mode", c_uint8), ("keep_incomplete", c_uint8),
                ("ion_filestore", c_uint8), ("ack_timer_ms", c_uint32),
                ("ack_limit", c_uint16), ("nak_timer_ms", c_uint32), ("nak_limit", c_uint16),
                ("nak_delay_ms", c_uint32), ("inactivity_ms", c_uint32),
                ("keep_alive_ms", c_uint32), ("keep_alive_limit", c_uint64),
                ("check_timer_ms", c_uint32), ("check_limit", c_uint16),
                ("prompt_ms", c_uint32), ("handlers", c_uint8 * 16)]


class _Fs(Structure):
    _fields_ = [("ops", c_void_p), ("ctx", c_void_p)]


class _EntityCfg(Structure):
    _fields_ = [("id", c_uint64), ("fs", _Fs), ("peers", POINTER(_PeerCfg)),
                ("npeers", c_size_t), ("defaults", _PeerCfg), ("eid_len", c_uint8),
                ("tsn_len", c_uint8), ("first_seq", c_uint64), ("linger_ms", c_uint32),
                ("segment_indications", c_uint8), ("fs_requests", c_void_p),
                ("fs_requests_ctx", c_void_p)]


class _TxnId(Structure):
    _fields_ = [("src", c_uint64), ("seq", c_uint64)]


class _TxnInfo(Structure):
    _fields_ = [("id", _TxnId), ("peer", c_uint64), ("role", c_uint8), ("state", c_uint8),
                ("cls", c_uint8), ("condition", c_uint8), ("file_size", c_uint64),
                ("progress", c_uint64), ("gaps", c_uint64), ("bytes_resent", c_uint64)]


class _Ind(Structure):
    _fields_ = [("type", c_uint8), ("role", c_uint8), ("txn", _TxnId), ("peer", c_uint64),
                ("condition", c_uint8), ("delivery", c_uint8), ("file_status", c_uint8),
                ("cls", c_uint8), ("fault_entity", c_uint64), ("offset", c_uint64),
                ("length", c_uint64), ("file_size", c_uint64), ("progress", c_uint64),
                ("src_name", c_char_p), ("dst_name", c_char_p), ("options", _Tlvs),
                ("responses", _Tlvs), ("info", _TxnInfo)]


class _PutReq(Structure):
    _fields_ = [("dst", c_uint64), ("src_name", c_char_p), ("dst_name", c_char_p),
                ("cls", c_uint8), ("closure", c_int8), ("checksum_type", c_int16),
                ("nak_mode", c_int8), ("options", _Tlvs)]


_STAT_NAMES = ["pdus_in", "pdus_out", "bytes_in", "bytes_out", "file_bytes_out",
               "file_bytes_resent", "file_bytes_in", "file_bytes_dup", "drop_malformed",
               "drop_not_for_us", "drop_unknown_txn", "drop_unexpected", "send_busy",
               "send_failed", "naks_sent", "nak_segments_sent", "naks_in", "eofs_resent",
               "finished_resent", "txns_started", "txns_finished", "txns_active",
               "indications_queued", "file_data_by_fd"]


class _EntityStats(Structure):
    _fields_ = [(n, c_uint64) for n in _STAT_NAMES]


class _Outage(Structure):
    _fields_ = [("start_ms", c_uint64), ("end_ms", c_uint64)]


class _LinkCfg(Structure):
    _fields_ = [("delay_ms", c_uint64), ("jitter_ms", c_uint64), ("loss", c_double),
                ("dup", c_double), ("max_inflight", c_uint32),
                ("outages", POINTER(_Outage)), ("noutages", c_size_t)]


_SIM_STAT_NAMES = ["sent", "delivered", "lost", "duplicated", "outage_lost", "filtered",
                   "busy", "unroutable", "events"]


class _SimStats(Structure):
    _fields_ = [(n, c_uint64) for n in _SIM_STAT_NAMES]


def _sig(name, res, *args):
    f = getattr(_c, name)
    f.restype = res
    f.argtypes = list(args)
    return f


_size = _sig("cfdp_struct_size", c_size_t, c_char_p)
for _name, _cls in (("cfdp_peer_cfg", _PeerCfg), ("cfdp_entity_cfg", _EntityCfg),
                    ("cfdp_fs", _Fs), ("cfdp_txn_id", _TxnId), ("cfdp_txn_info", _TxnInfo),
                    ("cfdp_ind", _Ind), ("cfdp_put_req", _PutReq),
                    ("cfdp_entity_stats", _EntityStats), ("cfdp_link_cfg", _LinkCfg),
                    ("cfdp_outage", _Outage), ("cfdp_sim_stats", _SimStats),
                    ("cfdp_tlvs", _Tlvs)):
    if _size(_name.encode()) != ctypes.sizeof(_cls):
        raise _lib.TernLibraryError(
            f"{_name}: libterncfdp says {_size(_name.encode())} bytes, tern.cfdpsim lays out "
            f"{ctypes.sizeof(_cls)}: update bindings/python/tern/cfdpsim.py")

_defaults = _sig("cfdp_peer_cfg_defaults", None, POINTER(_PeerCfg))
_sim_new = _sig("cfdp_sim_new", c_int, c_uint64, POINTER(c_void_p))
_sim_free = _sig("cfdp_sim_free", None, c_void_p)
_sim_add = _sig("cfdp_sim_add_entity", c_int, c_void_p, POINTER(_EntityCfg),
                POINTER(c_void_p))
_sim_entity = _sig("cfdp_sim_entity", c_void_p, c_void_p, c_uint64)
_sim_restart = _sig("cfdp_sim_restart", c_int, c_void_p, c_uint64, POINTER(c_void_p))
_sim_link = _sig("cfdp_sim_link", c_int, c_void_p, c_uint64, c_uint64, POINTER(_LinkCfg))
_sim_now = _sig("cfdp_sim_now", c_uint64, c_void_p)
_sim_run = _sig("cfdp_sim_run", c_int, c_void_p, c_uint64)
_sim_run_idle = _sig("cfdp_sim_run_idle", c_int, c_void_p, c_uint64)
_sim_stats = _sig("cfdp_sim_stats_get", None, c_void_p, POINTER(_SimStats))
_memfs_new = _sig("cfdp_memfs_new", c_int, POINTER(c_void_p), POINTER(_Fs))
_memfs_free = _sig("cfdp_memfs_free", None, c_void_p)
_memfs_put = _sig("cfdp_memfs_put", c_int, c_void_p, c_char_p, c_char_p, c_size_t)
_memfs_get = _sig("cfdp_memfs_get", c_int, c_void_p, c_char_p, POINTER(c_void_p),
                  POINTER(c_size_t))
_memfs_pattern = _sig("cfdp_memfs_put_pattern", c_int, c_void_p, c_char_p, c_uint64,
                      c_uint64)
_memfs_expect = _sig("cfdp_memfs_expect_pattern", c_int, c_void_p, c_char_p, c_uint64)
_memfs_complete = _sig("cfdp_memfs_pattern_complete", c_int, c_void_p, c_char_p, c_uint64,
                       POINTER(c_uint64))
_memfs_held = _sig("cfdp_memfs_bytes_held", c_uint64, c_void_p)
_memfs_fail = _sig("cfdp_memfs_fail", None, c_void_p, c_char_p, ctypes.c_uint, c_int)
_put = _sig("cfdp_put", c_int, c_void_p, c_uint64, POINTER(_PutReq), POINTER(_TxnId))
_cancel = _sig("cfdp_cancel", c_int, c_void_p, c_uint64, _TxnId)
_suspend = _sig("cfdp_suspend", c_int, c_void_p, c_uint64, _TxnId)
_resume = _sig("cfdp_resume", c_int, c_void_p, c_uint64, _TxnId)
_report = _sig("cfdp_report", c_int, c_void_p, _TxnId, POINTER(_TxnInfo))
_next_ind = _sig("cfdp_entity_next_indication", c_int, c_void_p, POINTER(_Ind))
_estats = _sig("cfdp_entity_stats_get", None, c_void_p, POINTER(_EntityStats))
_save = _sig("cfdp_txn_save", c_int, c_void_p, _TxnId, c_void_p, c_size_t,
             POINTER(c_size_t))
_restore = _sig("cfdp_txn_restore", c_int, c_void_p, c_uint64, c_char_p, c_size_t,
                POINTER(_TxnId))
_set_peer = _sig("cfdp_entity_set_peer", c_int, c_void_p, POINTER(_PeerCfg))


def peer_cfg(**kw):
    """The library's defaults with kw (cfdp_peer_cfg field names) applied;
    handlers={condition: handler}."""
    pc = _PeerCfg()
    _defaults(byref(pc))
    for k, v in kw.items():
        if k == "handlers":
            for cond, h in v.items():
                pc.handlers[cond] = h
        elif k in dict(_PeerCfg._fields_):
            setattr(pc, k, v)
        else:
            raise TypeError(f"peer_cfg: no field {k!r}")
    return pc


def _ind_dict(ind):
    d = {"type": IND_NAMES.get(ind.type, str(ind.type)),
         "role": "sender" if ind.role == SENDER else "receiver",
         "txn": (ind.txn.src, ind.txn.seq), "peer": ind.peer, "condition": ind.condition,
         "delivery": ind.delivery, "file_status": ind.file_status, "cls": ind.cls,
         "file_size": ind.file_size, "progress": ind.progress, "offset": ind.offset,
         "length": ind.length}
    if ind.type == 2:
        d["src_name"] = (ind.src_name or b"").decode(errors="replace")
        d["dst_name"] = (ind.dst_name or b"").decode(errors="replace")
    if ind.type == 11:
        d["state"] = STATE_NAMES.get(ind.info.state, str(ind.info.state))
    return d


class Entity:
    """One CFDP entity of a Sim, with its in-memory filestore."""

    def __init__(self, sim, eid, memfs, handle):
        self.sim, self.id, self._m, self._h = sim, eid, memfs, handle
        self._events = []

    def write(self, path, data):
        """Creates (or replaces) file path of the filestore with data."""
        data = bytes(data)
        check(_memfs_put(self._m, path.encode(), data, len(data)), f"write {path}")

    def write_pattern(self, path, size, seed=1):
        """A read-only pattern file of size bytes (holds no data: 5 GiB is fine)."""
        check(_memfs_pattern(self._m, path.encode(), size, seed), f"pattern {path}")

    def expect_pattern(self, path, seed=1):
        """Makes path a pattern sink: writes are checked, only ranges kept."""
        check(_memfs_expect(self._m, path.encode(), seed), f"expect {path}")

    def pattern_complete(self, path, size):
        """(complete, mismatched writes) of a pattern sink."""
        mism = c_uint64()
        rc = _memfs_complete(self._m, path.encode(), size, byref(mism))
        return rc == 1, mism.value

    def read(self, path):
        """A plain file's bytes, or None if there is no such file."""
        p, n = c_void_p(), c_size_t()
        if _memfs_get(self._m, path.encode(), byref(p), byref(n)):
            return None
        return ctypes.string_at(p, n.value) if n.value else b""

    def bytes_held(self):
        return _memfs_held(self._m)

    def fail(self, op, n, rc):
        """The filestore's next n operations op ("write", "*", ...) fail with rc."""
        _memfs_fail(self._m, op.encode(), n, rc)

    def set_peer(self, peer_id, **kw):
        pc = peer_cfg(**kw)
        pc.id = peer_id
        check(_set_peer(self._h, byref(pc)), f"set peer {peer_id}")

    def put(self, dst, src_name, dst_name, cls=2, closure=-1, checksum=-1, nak_mode=-1):
        """Put.request; returns the transaction ID (source, sequence number).
        src_name None: a metadata-only transaction."""
        q = _PutReq(dst=dst, src_name=src_name.encode() if src_name else None,
                    dst_name=dst_name.encode() if dst_name else None, cls=cls,
                    closure=closure, checksum_type=checksum, nak_mode=nak_mode)
        t = _TxnId()
        check(_put(self._h, self.sim.now, byref(q), byref(t)), f"put {src_name}")
        return (t.src, t.seq)

    def _req(self, f, txn, what):
        check(f(self._h, self.sim.now, _TxnId(*txn)), f"{what} {txn}")

    def cancel(self, txn):
        self._req(_cancel, txn, "cancel")

    def suspend(self, txn):
        self._req(_suspend, txn, "suspend")

    def resume(self, txn):
        self._req(_resume, txn, "resume")

    def report(self, txn):
        """The transaction's state as a dict (None if unknown)."""
        i = _TxnInfo()
        if _report(self._h, _TxnId(*txn), byref(i)):
            return None
        return {"state": STATE_NAMES.get(i.state, str(i.state)), "cls": i.cls,
                "condition": i.condition, "file_size": i.file_size, "progress": i.progress,
                "gaps": i.gaps, "bytes_resent": i.bytes_resent,
                "role": "sender" if i.role == SENDER else "receiver"}

    def indications(self):
        """Every indication so far (the queue is drained into this list)."""
        ind = _Ind()
        while _next_ind(self._h, byref(ind)) == 0:
            self._events.append(_ind_dict(ind))
        return list(self._events)

    def ends(self):
        """The finished/abandoned indications so far."""
        return [e for e in self.indications() if e["type"] in ("finished", "abandoned")]

    def stats(self):
        s = _EntityStats()
        _estats(self._h, byref(s))
        return {n: getattr(s, n) for n in _STAT_NAMES}

    def save(self, txn):
        """The transaction's saved state (cfdp_txn_save)."""
        need = c_size_t()
        rc = _save(self._h, _TxnId(*txn), None, 0, byref(need))
        buf = ctypes.create_string_buffer(max(need.value, 1))
        check(_save(self._h, _TxnId(*txn), buf, len(buf), byref(need)), f"save {txn}")
        return buf.raw[:need.value] if rc in (0, -30986) else None

    def restore(self, blob):
        """Rebuilds a saved transaction here; returns its ID."""
        t = _TxnId()
        check(_restore(self._h, self.sim.now, blob, len(blob), byref(t)), "restore")
        return (t.src, t.seq)


class Sim:
    """A simulated network of CFDP entities (cfdp_sim.h)."""

    def __init__(self, seed=1):
        self._h = c_void_p()
        check(_sim_new(seed, byref(self._h)), "cfdp_sim_new")
        self._fs = []
        self.entities = {}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        if self._h:
            _sim_free(self._h)
            self._h = None
            for m in self._fs:
                _memfs_free(m)
            self._fs = []

    def entity(self, eid, **peer_defaults):
        """Adds entity eid with a fresh memfs; peer_defaults: its MIB defaults."""
        m, fs = c_void_p(), _Fs()
        check(_memfs_new(byref(m), byref(fs)), "cfdp_memfs_new")
        self._fs.append(m)
        cfg = _EntityCfg(id=eid, fs=fs, defaults=peer_cfg(**peer_defaults))
        e = c_void_p()
        check(_sim_add(self._h, byref(cfg), byref(e)), f"add entity {eid}")
        ent = Entity(self, eid, m, e)
        self.entities[eid] = ent
        return ent

    def restart(self, eid):
        """Replaces entity eid by a fresh one (its transactions are gone; its
        filestore stays); returns it."""
        e = c_void_p()
        check(_sim_restart(self._h, eid, byref(e)), f"restart {eid}")
        old = self.entities[eid]
        ent = Entity(self, eid, old._m, e)
        self.entities[eid] = ent
        return ent

    def link(self, a, b, delay_ms=0, jitter_ms=0, loss=0.0, dup=0.0, max_inflight=0,
             outages=(), both=True):
        """The link a -> b (and b -> a unless both=False)."""
        arr = (_Outage * max(len(outages), 1))(*[_Outage(s, e) for s, e in outages])
        cfg = _LinkCfg(delay_ms=delay_ms, jitter_ms=jitter_ms, loss=loss, dup=dup,
                       max_inflight=max_inflight, outages=arr if outages else None,
                       noutages=len(outages))
        check(_sim_link(self._h, a, b, byref(cfg)), f"link {a}->{b}")
        if both:
            check(_sim_link(self._h, b, a, byref(cfg)), f"link {b}->{a}")

    @property
    def now(self):
        return _sim_now(self._h)

    def run(self, until_ms):
        """Runs every event up to until_ms (virtual)."""
        check(_sim_run(self._h, until_ms), "run")

    def run_for(self, ms):
        self.run(self.now + ms)

    def run_idle(self, limit_ms):
        """Runs until nothing is in flight and no timer is set; False if the
        virtual clock reached limit_ms first."""
        rc = _sim_run_idle(self._h, limit_ms)
        if rc == -110:  # -ETIMEDOUT
            return False
        check(rc, "run_idle")
        return True

    def stats(self):
        s = _SimStats()
        _sim_stats(self._h, byref(s))
        return {n: getattr(s, n) for n in _SIM_STAT_NAMES}


__all__ = ["Sim", "Entity", "peer_cfg", "IMMEDIATE", "DEFERRED", "PROMPTED", "ASYNC",
           "CANCEL", "SUSPEND", "IGNORE", "ABANDON", "TernError", "EEND"]
