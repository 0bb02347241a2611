"""CFDP PDUs, checksums and reserved messages through libterncfdp (cfdp_pdu.h,
cfdp_cksum.h, cfdp_msg.h).

Encoders build one PDU from keyword fields and return its bytes; decode()
returns a dict of the fields (and raises CfdpError with the codec's reason
on a refusal). For tests and tools: the entity machines are C.

    hdr = cfdp.Header(src=1, dst=2, tsn=7)
    b = cfdp.metadata(hdr, file_size=1000, src_name=b"a", dst_name=b"b",
                      checksum_type=cfdp.CKSUM_CRC32C,
                      options=[cfdp.msg_to_user(b"hi")])
    cfdp.decode(b)["file_size"]  # 1000
    m = cfdp.message(cfdp.MSG_DIR_LIST_REQ, name1=b"logs", name2=b"logs.lst")
    cfdp.decode_message(m)["name2"]  # b"logs.lst"
"""
import ctypes
from ctypes import POINTER, Structure, Union, byref, c_char_p, c_int, c_size_t
from ctypes import c_uint, c_uint8, c_uint16, c_uint32, c_uint64, c_void_p

from . import _lib
from .errors import EEND, TernError

_c = _lib.load("cfdp")

# kinds (directive codes; 0 is file data)
FILE_DATA, EOF, FINISHED, ACK, METADATA, NAK, PROMPT, KEEP_ALIVE = 0, 4, 5, 6, 7, 8, 9, 12
# TLV types
TLV_FS_REQUEST, TLV_FS_RESPONSE, TLV_MSG_TO_USER = 0, 1, 2
TLV_FAULT_HANDLER, TLV_FLOW_LABEL, TLV_ENTITY_ID = 4, 5, 6
# checksum types
CKSUM_MODULAR, CKSUM_PROX1, CKSUM_CRC32C, CKSUM_CRC32, CKSUM_NULL = 0, 1, 2, 3, 15
TOWARD_RECEIVER, TOWARD_SENDER = 0, 1
ACKNOWLEDGED, UNACKNOWLEDGED = 0, 1


class _Lv(Structure):
    _fields_ = [("ptr", c_void_p), ("len", c_uint8)]


class _Eid(Structure):
    _fields_ = [("id", c_uint64), ("len", c_uint8)]


class _Tlv(Structure):
    _fields_ = [("type", c_uint8), ("action", c_uint8), ("status", c_uint8),
                ("condition", c_uint8), ("handler", c_uint8), ("empty_second", c_uint8),
                ("first", _Lv), ("second", _Lv), ("data", _Lv), ("eid", _Eid)]


class _Tlvs(Structure):
    _fields_ = [("items", POINTER(_Tlv)), ("count", c_size_t), ("raw", c_void_p),
                ("raw_len", c_size_t)]


class _Range(Structure):
    _fields_ = [("start", c_uint64), ("end", c_uint64)]


class _Ranges(Structure):
    _fields_ = [("items", POINTER(_Range)), ("count", c_size_t), ("raw", c_void_p),
                ("raw_width", c_uint8)]


class _Header(Structure):
    _fields_ = [(n, c_uint8) for n in ("version", "type", "direction", "mode", "crc",
                                       "large_file", "seg_ctrl", "seg_meta", "eid_len",
                                       "tsn_len")] + [
        ("data_len", c_uint16), ("src", c_uint64), ("tsn", c_uint64), ("dst", c_uint64)]


class _FileData(Structure):
    _fields_ = [("offset", c_uint64), ("data", c_void_p), ("len", c_size_t),
                ("record", c_uint8), ("meta", _Lv)]


class _Eof(Structure):
    _fields_ = [("condition", c_uint8), ("checksum", c_uint32), ("file_size", c_uint64),
                ("fault", _Eid)]


class _Finished(Structure):
    _fields_ = [("condition", c_uint8), ("delivery", c_uint8), ("file_status", c_uint8),
                ("responses", _Tlvs), ("fault", _Eid)]


class _Ack(Structure):
    _fields_ = [("directive", c_uint8), ("subtype", c_uint8), ("condition", c_uint8),
                ("txn_status", c_uint8)]


class _Metadata(Structure):
    _fields_ = [("closure", c_uint8), ("checksum_type", c_uint8), ("file_size", c_uint64),
                ("src_name", _Lv), ("dst_name", _Lv), ("options", _Tlvs)]


class _Nak(Structure):
    _fields_ = [("scope_start", c_uint64), ("scope_end", c_uint64), ("segments", _Ranges)]


class _U(Union):
    _fields_ = [("fd", _FileData), ("eof", _Eof), ("fin", _Finished), ("ack", _Ack),
                ("md", _Metadata), ("nak", _Nak), ("prompt", c_uint8),
                ("ka", c_uint64)]


class _Pdu(Structure):
    _fields_ = [("hdr", _Header), ("kind", c_uint8), ("u", _U)]


def _sig(name, res, *args):
    f = getattr(_c, name)
    f.restype = res
    f.argtypes = list(args)
    return f


_decode = _sig("cfdp_pdu_decode", c_int, c_void_p, c_size_t, c_uint, POINTER(_Pdu),
               POINTER(c_char_p))
_check = _sig("cfdp_pdu_check", c_int, POINTER(_Pdu), POINTER(c_char_p))
_encode = _sig("cfdp_pdu_encode", c_int, POINTER(_Pdu), c_void_p, c_size_t,
               POINTER(c_size_t))
_tlvs_next = _sig("cfdp_tlvs_next", c_int, POINTER(_Tlvs), POINTER(c_size_t), POINTER(_Tlv))
_nak_segment = _sig("cfdp_nak_segment", _Range, POINTER(_Ranges), c_size_t)
_cksum_buf = _sig("cfdp_cksum_buf", c_int, c_uint, c_char_p, c_size_t, POINTER(c_uint32))
_pdu_size = _sig("cfdp_pdu_struct_size", c_size_t)
_tlv_size = _sig("cfdp_tlv_struct_size", c_size_t)
_names = {n: _sig(f"cfdp_{n}_name", c_char_p, c_uint)
          for n in ("kind", "condition", "checksum", "tlv_type")}

if _pdu_size() != ctypes.sizeof(_Pdu) or _tlv_size() != ctypes.sizeof(_Tlv):
    raise _lib.TernLibraryError(
        f"{_c._tern_path}: cfdp_pdu is {_pdu_size()} bytes and cfdp_tlv {_tlv_size()}, "
        f"this package lays them out as {ctypes.sizeof(_Pdu)} and {ctypes.sizeof(_Tlv)}")

CFDP_PDU_MAX = 28 + 65535


class CfdpError(TernError):
    """The codec refused: .rc and .why (its fixed reason text)."""

    def __init__(self, rc, why):
        self.why = why
        super().__init__(rc, why or "")


def name(table, code):
    """cfdp_<table>_name(code): table is kind, condition, checksum or tlv_type."""
    return _names[table](code).decode()


class Header:
    """The fixed header; eid_len/tsn_len 0 let the encoder pick the fewest bytes."""

    def __init__(self, src=1, dst=2, tsn=1, direction=TOWARD_RECEIVER, mode=ACKNOWLEDGED,
                 crc=False, large_file=False, seg_ctrl=False, seg_meta=False, eid_len=0,
                 tsn_len=0):
        self.__dict__.update(src=src, dst=dst, tsn=tsn, direction=direction, mode=mode,
                             crc=crc, large_file=large_file, seg_ctrl=seg_ctrl,
                             seg_meta=seg_meta, eid_len=eid_len, tsn_len=tsn_len)

    def _c(self):
        return _Header(direction=self.direction, mode=self.mode, crc=int(self.crc),
                       large_file=int(self.large_file), seg_ctrl=int(self.seg_ctrl),
                       seg_meta=int(self.seg_meta), eid_len=self.eid_len,
                       tsn_len=self.tsn_len, src=self.src, tsn=self.tsn, dst=self.dst)


class _Keep:
    """Buffers a C struct points into, kept alive until the encode is done."""

    def __init__(self):
        self.bufs = []

    def lv(self, data):
        data = bytes(data)
        if not data:
            return _Lv(None, 0)
        b = ctypes.create_string_buffer(data, len(data))
        self.bufs.append(b)
        return _Lv(ctypes.cast(b, c_void_p), len(data))


# TLVs: plain tuples (type, fields) that _tlv() turns into the C struct.
def fs_request(action, first, second=b"", ion_form=False):
    """ion_form: an empty second name for one-name actions, as ION 4.1.3 writes."""
    return ("tlv", dict(type=TLV_FS_REQUEST, action=action, first=first, second=second,
                        empty_second=int(ion_form)))


def fs_response(action, status, first, second=b"", message=b"", ion_form=False):
    return ("tlv", dict(type=TLV_FS_RESPONSE, action=action, status=status, first=first,
                        second=second, data=message, empty_second=int(ion_form)))


def msg_to_user(data):
    return ("tlv", dict(type=TLV_MSG_TO_USER, data=data))


def fault_handler(condition, handler):
    return ("tlv", dict(type=TLV_FAULT_HANDLER, condition=condition, handler=handler))


def flow_label(data):
    return ("tlv", dict(type=TLV_FLOW_LABEL, data=data))


def entity_id(eid, length=None):
    return ("tlv", dict(type=TLV_ENTITY_ID, eid=(eid, length or _id_len(eid))))


def _id_len(v):
    n = 1
    while n < 8 and v >> (8 * n):
        n += 1
    return n


def _tlv(keep, t):
    f = t[1]
    c = _Tlv(type=f["type"], action=f.get("action", 0), status=f.get("status", 0),
             condition=f.get("condition", 0), handler=f.get("handler", 0),
             empty_second=f.get("empty_second", 0))
    c.first = keep.lv(f.get("first", b""))
    c.second = keep.lv(f.get("second", b""))
    c.data = keep.lv(f.get("data", b""))
    if "eid" in f:
        c.eid = _Eid(*f["eid"])
    return c


def _tlv_list(keep, tlvs):
    tlvs = list(tlvs)
    if not tlvs:
        return _Tlvs()
    arr = (_Tlv * len(tlvs))(*[_tlv(keep, t) for t in tlvs])
    keep.bufs.append(arr)
    return _Tlvs(items=ctypes.cast(arr, POINTER(_Tlv)), count=len(tlvs))


def _eid(fault):
    if fault is None:
        return _Eid(0, 0)
    return _Eid(fault, _id_len(fault))


def _finish(p, keep):
    """Checks and encodes p; keep holds the buffers p points into until then."""
    why = c_char_p()
    rc = _check(byref(p), byref(why))
    if rc:
        raise CfdpError(rc, why.value.decode() if why.value else None)
    buf = ctypes.create_string_buffer(CFDP_PDU_MAX)
    n = c_size_t()
    rc = _encode(byref(p), buf, CFDP_PDU_MAX, byref(n))
    if rc:
        raise CfdpError(rc, "encode")
    return buf.raw[:n.value]


def _pdu(hdr, kind):
    return _Pdu(hdr=hdr._c(), kind=kind), _Keep()


def file_data(hdr, offset, data, record=0, meta=b""):
    """A File Data PDU; record and meta are sent when hdr.seg_meta."""
    p, k = _pdu(hdr, FILE_DATA)
    d = None
    if data:
        b = ctypes.create_string_buffer(bytes(data), len(data))
        k.bufs.append(b)
        d = ctypes.cast(b, c_void_p)
    p.u.fd = _FileData(offset=offset, data=d, len=len(data), record=record, meta=k.lv(meta))
    return _finish(p, k)


def eof(hdr, condition=0, checksum=0, file_size=0, fault=None):
    p, k = _pdu(hdr, EOF)
    p.u.eof = _Eof(condition=condition, checksum=checksum, file_size=file_size,
                   fault=_eid(fault))
    return _finish(p, k)


def finished(hdr, condition=0, delivery=0, file_status=3, responses=(), fault=None):
    p, k = _pdu(hdr, FINISHED)
    p.u.fin = _Finished(condition=condition, delivery=delivery, file_status=file_status,
                        responses=_tlv_list(k, responses), fault=_eid(fault))
    return _finish(p, k)


def ack(hdr, directive, condition=0, txn_status=0, subtype=None):
    if subtype is None:
        subtype = 1 if directive == FINISHED else 0
    p, k = _pdu(hdr, ACK)
    p.u.ack = _Ack(directive=directive, subtype=subtype, condition=condition,
                   txn_status=txn_status)
    return _finish(p, k)


def metadata(hdr, file_size=0, src_name=b"", dst_name=b"", checksum_type=CKSUM_MODULAR,
             closure=False, options=()):
    p, k = _pdu(hdr, METADATA)
    p.u.md = _Metadata(closure=int(closure), checksum_type=checksum_type,
                       file_size=file_size, src_name=k.lv(src_name),
                       dst_name=k.lv(dst_name), options=_tlv_list(k, options))
    return _finish(p, k)


def nak(hdr, scope_start, scope_end, segments=()):
    p, k = _pdu(hdr, NAK)
    segs = list(segments)
    r = _Ranges()
    if segs:
        arr = (_Range * len(segs))(*[_Range(a, b) for a, b in segs])
        k.bufs.append(arr)
        r = _Ranges(items=ctypes.cast(arr, POINTER(_Range)), count=len(segs))
    p.u.nak = _Nak(scope_start=scope_start, scope_end=scope_end, segments=r)
    return _finish(p, k)


def prompt(hdr, keep_alive=False):
    p, k = _pdu(hdr, PROMPT)
    p.u.prompt = int(keep_alive)
    return _finish(p, k)


def keep_alive(hdr, progress):
    p, k = _pdu(hdr, KEEP_ALIVE)
    p.u.ka = progress
    return _finish(p, k)


def _lvb(lv):
    return ctypes.string_at(lv.ptr, lv.len) if lv.len else b""


def _tlvs_py(lst):
    out, pos, t = [], c_size_t(0), _Tlv()
    while True:
        rc = _tlvs_next(byref(lst), byref(pos), byref(t))
        if rc == EEND:
            return out
        if rc:
            raise CfdpError(rc, "TLV list")
        out.append(dict(type=t.type, action=t.action, status=t.status,
                        condition=t.condition, handler=t.handler,
                        empty_second=t.empty_second, first=_lvb(t.first),
                        second=_lvb(t.second), data=_lvb(t.data),
                        eid=(t.eid.id, t.eid.len)))


def decode(data, crc_required=False):
    """The PDU's fields as a dict (header fields, "kind", and the kind's fields)."""
    data = bytes(data)
    buf = ctypes.create_string_buffer(data, len(data))
    p = _Pdu()
    why = c_char_p()
    rc = _decode(buf, len(data), 1 if crc_required else 0, byref(p), byref(why))
    if rc:
        raise CfdpError(rc, why.value.decode() if why.value else None)
    h = p.hdr
    d = {n: getattr(h, n) for n, _ in _Header._fields_}
    d["kind"] = p.kind
    u = p.u
    if p.kind == FILE_DATA:
        d.update(offset=u.fd.offset, data=ctypes.string_at(u.fd.data, u.fd.len)
                 if u.fd.len else b"", record=u.fd.record, meta=_lvb(u.fd.meta))
    elif p.kind == EOF:
        d.update(condition=u.eof.condition, checksum=u.eof.checksum,
                 file_size=u.eof.file_size,
                 fault=u.eof.fault.id if u.eof.fault.len else None)
    elif p.kind == FINISHED:
        d.update(condition=u.fin.condition, delivery=u.fin.delivery,
                 file_status=u.fin.file_status, responses=_tlvs_py(u.fin.responses),
                 fault=u.fin.fault.id if u.fin.fault.len else None)
    elif p.kind == ACK:
        d.update(directive=u.ack.directive, subtype=u.ack.subtype,
                 condition=u.ack.condition, txn_status=u.ack.txn_status)
    elif p.kind == METADATA:
        d.update(closure=u.md.closure, checksum_type=u.md.checksum_type,
                 file_size=u.md.file_size, src_name=_lvb(u.md.src_name),
                 dst_name=_lvb(u.md.dst_name), options=_tlvs_py(u.md.options))
    elif p.kind == NAK:
        segs = u.nak.segments
        d.update(scope_start=u.nak.scope_start, scope_end=u.nak.scope_end,
                 segments=[(r.start, r.end) for r in
                           (_nak_segment(byref(segs), i) for i in range(segs.count))])
    elif p.kind == PROMPT:
        d.update(keep_alive=bool(u.prompt))
    elif p.kind == KEEP_ALIVE:
        d.update(progress=u.ka)
    return d


def checksum(ck_type, data):
    """The CFDP file checksum of ck_type over data taken as a whole file."""
    data = bytes(data)
    out = c_uint32()
    rc = _cksum_buf(ck_type, data, len(data), byref(out))
    if rc:
        raise TernError(rc, f"checksum type {ck_type}")
    return out.value


# ------------------------------------------------ reserved CFDP messages

# message types (cfdp_msg.h)
MSG_PROXY_PUT_REQ, MSG_PROXY_MSG_TO_USER, MSG_PROXY_FS_REQ = 0x00, 0x01, 0x02
MSG_PROXY_FAULT_HANDLER, MSG_PROXY_TX_MODE, MSG_PROXY_FLOW_LABEL = 0x03, 0x04, 0x05
MSG_PROXY_SEG_CTRL, MSG_PROXY_PUT_RESP, MSG_PROXY_FS_RESP = 0x06, 0x07, 0x08
MSG_PROXY_PUT_CANCEL, MSG_ORIGINATING_TID, MSG_PROXY_CLOSURE = 0x09, 0x0A, 0x0B
MSG_DIR_LIST_REQ, MSG_DIR_LIST_RESP = 0x10, 0x11
MSG_STATUS_REPORT_REQ, MSG_STATUS_REPORT_RESP = 0x20, 0x21
MSG_SUSPEND_REQ, MSG_SUSPEND_RESP, MSG_RESUME_REQ, MSG_RESUME_RESP = 0x30, 0x31, 0x38, 0x39


class _Tid(Structure):
    _fields_ = [("src", c_uint64), ("tsn", c_uint64), ("src_len", c_uint8),
                ("tsn_len", c_uint8)]


class _Msg(Structure):
    _fields_ = [("type", c_uint8), ("dst", _Eid), ("name1", _Lv), ("name2", _Lv),
                ("data", _Lv), ("fs", _Tlv), ("condition", c_uint8), ("handler", c_uint8),
                ("delivery", c_uint8), ("file_status", c_uint8), ("mode", c_uint8),
                ("flag", c_uint8), ("ok", c_uint8), ("suspended", c_uint8),
                ("txn_status", c_uint8), ("tid", _Tid)]


_msg_size = _sig("cfdp_msg_struct_size", c_size_t)
if _msg_size() != ctypes.sizeof(_Msg):
    raise _lib.TernLibraryError(
        f"{_c._tern_path}: cfdp_msg is {_msg_size()} bytes, this package lays it out as "
        f"{ctypes.sizeof(_Msg)}")
_msg_encode = _sig("cfdp_msg_encode", c_int, POINTER(_Msg), c_void_p, c_size_t,
                   POINTER(c_size_t))
_msg_decode = _sig("cfdp_msg_decode", c_int, c_void_p, c_size_t, POINTER(_Msg),
                   POINTER(c_char_p))
_msg_check = _sig("cfdp_msg_check", c_int, POINTER(_Msg), POINTER(c_char_p))
_msg_type_name = _sig("cfdp_msg_type_name", c_char_p, c_uint)

_MSG_BYTES = ("condition", "handler", "delivery", "file_status", "mode", "flag", "ok",
              "suspended", "txn_status")


def msg_type_name(t):
    """cfdp_msg_type_name: "proxy put request", ..., "unknown"."""
    return _msg_type_name(t).decode()


def message(msg_type, dst=None, name1=b"", name2=b"", data=b"", fs=None, tid=None, **kw):
    """A reserved CFDP message's bytes (the value of a Message to User TLV).
    dst: the proxy put's destination (id or (id, length)); fs: a fs_request()
    or fs_response() tuple; tid: (source, sequence) or (source, sequence,
    source length, sequence length); the other fields by name (condition,
    handler, delivery, file_status, mode, flag, ok, suspended, txn_status)."""
    k = _Keep()
    m = _Msg(type=msg_type, name1=k.lv(name1), name2=k.lv(name2), data=k.lv(data))
    if dst is not None:
        m.dst = _Eid(*(dst if isinstance(dst, tuple) else (dst, 0)))
    if fs is not None:
        m.fs = _tlv(k, fs)
    if tid is not None:
        m.tid = _Tid(*(tuple(tid) + (0, 0))[:4])
    for f, v in kw.items():
        if f not in _MSG_BYTES:
            raise TypeError(f"message() got an unexpected field {f!r}")
        setattr(m, f, int(v))
    why = c_char_p()
    rc = _msg_check(byref(m), byref(why))
    if rc:
        raise CfdpError(rc, why.value.decode() if why.value else None)
    out = ctypes.create_string_buffer(255)
    n = c_size_t()
    rc = _msg_encode(byref(m), out, len(out), byref(n))
    if rc:
        raise CfdpError(rc, "message")
    return out.raw[:n.value]


def decode_message(data):
    """A reserved message's fields as a dict; CfdpError with the decoder's reason
    (rc TERN_ETYPE for an ordinary message to user)."""
    data = bytes(data)
    buf = ctypes.create_string_buffer(data, len(data))
    m = _Msg()
    why = c_char_p()
    rc = _msg_decode(buf, len(data), byref(m), byref(why))
    if rc:
        raise CfdpError(rc, why.value.decode() if why.value else None)
    d = {f: getattr(m, f) for f in _MSG_BYTES}
    f = m.fs
    d.update(type=m.type, dst=(m.dst.id, m.dst.len), name1=_lvb(m.name1),
             name2=_lvb(m.name2), data=_lvb(m.data),
             tid=(m.tid.src, m.tid.tsn, m.tid.src_len, m.tid.tsn_len),
             fs=dict(type=f.type, action=f.action, status=f.status, first=_lvb(f.first),
                     second=_lvb(f.second), data=_lvb(f.data)))
    return d
