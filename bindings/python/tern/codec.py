"""SDNV, CRC and CBOR through libterncommon (for tests and tools).

cbor_dumps/cbor_loads map Python values onto the C encoder and decoder:
int, bytes, str, list/tuple, dict, bool, None, float, Tag, Simple and
UNDEFINED. Encoding uses preferred serialization (shortest heads, shortest
exact float).
"""
import ctypes
from ctypes import POINTER, c_bool, c_char_p, c_double, c_int, c_int64, c_size_t
from ctypes import c_uint8, c_uint16, c_uint32, c_uint64, c_void_p

from . import _lib
from .errors import EEND, TernError, check

_c = _lib.load("common")


class _Enc(ctypes.Structure):
    _fields_ = [("buf", c_void_p), ("cap", c_size_t), ("len", c_size_t), ("err", c_int)]


class _Dec(ctypes.Structure):
    _fields_ = [("buf", c_void_p), ("len", c_size_t), ("pos", c_size_t)]


class _Chunks(ctypes.Structure):
    _fields_ = [("d", POINTER(_Dec)), ("major", c_uint8), ("indef", c_uint8),
                ("done", c_uint8)]


def _sig(name, res, *args):
    f = getattr(_c, name)
    f.restype = res
    f.argtypes = list(args)
    return f


_sdnv_encode = _sig("tern_sdnv_encode", c_int, c_uint64, c_void_p, c_size_t)
_sdnv_decode = _sig("tern_sdnv_decode", c_int, c_char_p, c_size_t, POINTER(c_uint64))
_crc16 = _sig("tern_crc16_x25", c_uint16, c_uint16, c_char_p, c_size_t)
_crc32c = _sig("tern_crc32c", c_uint32, c_uint32, c_char_p, c_size_t)
_crc32 = _sig("tern_crc32", c_uint32, c_uint32, c_char_p, c_size_t)

E = POINTER(_Enc)
D = POINTER(_Dec)
_enc_init = _sig("tern_cbor_enc_init", None, E, c_void_p, c_size_t)
_enc_finish = _sig("tern_cbor_enc_finish", c_int, E, POINTER(c_size_t))
_enc_uint = _sig("tern_cbor_enc_uint", None, E, c_uint64)
_enc_negint = _sig("tern_cbor_enc_negint", None, E, c_uint64)
_enc_bytes = _sig("tern_cbor_enc_bytes", None, E, c_char_p, c_size_t)
_enc_text = _sig("tern_cbor_enc_text", None, E, c_char_p, c_size_t)
_enc_array = _sig("tern_cbor_enc_array", None, E, c_uint64)
_enc_map = _sig("tern_cbor_enc_map", None, E, c_uint64)
_enc_tag = _sig("tern_cbor_enc_tag", None, E, c_uint64)
_enc_simple = _sig("tern_cbor_enc_simple", None, E, c_uint8)
_enc_double = _sig("tern_cbor_enc_double", None, E, c_double)

_dec_init = _sig("tern_cbor_dec_init", None, D, c_void_p, c_size_t)
_dec_done = _sig("tern_cbor_dec_done", c_bool, D)
_peek = _sig("tern_cbor_peek", c_int, D, POINTER(c_int), POINTER(c_bool))
_dec_uint = _sig("tern_cbor_dec_uint", c_int, D, POINTER(c_uint64))
_dec_negint = _sig("tern_cbor_dec_negint", c_int, D, POINTER(c_uint64))
_dec_array = _sig("tern_cbor_dec_array", c_int, D, POINTER(c_uint64))
_dec_map = _sig("tern_cbor_dec_map", c_int, D, POINTER(c_uint64))
_dec_break = _sig("tern_cbor_dec_break", c_int, D)
_at_break = _sig("tern_cbor_at_break", c_bool, D)
_dec_tag = _sig("tern_cbor_dec_tag", c_int, D, POINTER(c_uint64))
_dec_simple = _sig("tern_cbor_dec_simple", c_int, D, POINTER(c_uint8))
_dec_double = _sig("tern_cbor_dec_double", c_int, D, POINTER(c_double))
_chunks_begin = _sig("tern_cbor_chunks_begin", c_int, D, POINTER(_Chunks), c_int)
_chunks_next = _sig("tern_cbor_chunks_next", c_int, POINTER(_Chunks),
                    POINTER(c_void_p), POINTER(c_size_t))
_wellformed = _sig("tern_cbor_wellformed", c_int, c_char_p, c_size_t)
_diag = _sig("tern_cbor_diag", c_int, c_char_p, c_size_t, c_char_p, c_size_t)

INDEF = (1 << 64) - 1
K_UINT, K_NEGINT, K_BYTES, K_TEXT, K_ARRAY, K_MAP, K_TAG, K_SIMPLE, K_FLOAT, K_BREAK = range(10)


# ------------------------------------------------------------------ SDNV, CRC

def sdnv_encode(v):
    buf = ctypes.create_string_buffer(10)
    n = check(_sdnv_encode(v, buf, 10), "sdnv_encode")
    return buf.raw[:n]


def sdnv_decode(data):
    """Returns (value, bytes consumed); raises TernError on bad input."""
    v = c_uint64()
    n = check(_sdnv_decode(bytes(data), len(data), ctypes.byref(v)), "sdnv_decode")
    return v.value, n


def crc16_x25(data, crc=0):
    return _crc16(crc, bytes(data), len(data))


def crc32c(data, crc=0):
    return _crc32c(crc, bytes(data), len(data))


def crc32(data, crc=0):
    return _crc32(crc, bytes(data), len(data))


# ------------------------------------------------------------------ CBOR

class Tag:
    """A tagged item: Tag(number, value)."""

    def __init__(self, tag, value):
        self.tag, self.value = tag, value

    def __eq__(self, other):
        return isinstance(other, Tag) and (self.tag, self.value) == (other.tag, other.value)

    def __repr__(self):
        return f"Tag({self.tag}, {self.value!r})"


class Simple:
    """simple(n) other than false/true/null/undefined."""

    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        return isinstance(other, Simple) and self.value == other.value

    def __repr__(self):
        return f"Simple({self.value})"


class _Undefined:
    def __repr__(self):
        return "UNDEFINED"


UNDEFINED = _Undefined()


def _encode(e, obj):
    if obj is None:
        _enc_simple(e, 22)
    elif obj is True or obj is False:
        _enc_simple(e, 21 if obj else 20)
    elif obj is UNDEFINED:
        _enc_simple(e, 23)
    elif isinstance(obj, int):
        if obj >= 0:
            _enc_uint(e, obj)
        else:
            _enc_negint(e, -1 - obj)
    elif isinstance(obj, float):
        _enc_double(e, obj)
    elif isinstance(obj, (bytes, bytearray, memoryview)):
        b = bytes(obj)
        _enc_bytes(e, b, len(b))
    elif isinstance(obj, str):
        b = obj.encode("utf-8", "surrogatepass")
        _enc_text(e, b, len(b))
    elif isinstance(obj, (list, tuple)):
        _enc_array(e, len(obj))
        for x in obj:
            _encode(e, x)
    elif isinstance(obj, dict):
        _enc_map(e, len(obj))
        for k, v in obj.items():
            _encode(e, k)
            _encode(e, v)
    elif isinstance(obj, Tag):
        _enc_tag(e, obj.tag)
        _encode(e, obj.value)
    elif isinstance(obj, Simple):
        _enc_simple(e, obj.value)
    else:
        raise TypeError(f"cannot encode {type(obj).__name__} as CBOR")


def cbor_dumps(obj):
    """Encodes obj with the C encoder (a sizing pass, then the real one)."""
    e = _Enc()
    n = c_size_t()
    _enc_init(ctypes.byref(e), None, 0)
    _encode(ctypes.byref(e), obj)
    rc = _enc_finish(ctypes.byref(e), ctypes.byref(n))
    if rc not in (0, -30986):
        raise TernError(rc, "cbor encode")
    buf = ctypes.create_string_buffer(max(n.value, 1))
    _enc_init(ctypes.byref(e), buf, n.value)
    _encode(ctypes.byref(e), obj)
    check(_enc_finish(ctypes.byref(e), ctypes.byref(n)), "cbor encode")
    return buf.raw[:n.value]


def _string(d, kind):
    it = _Chunks()
    check(_chunks_begin(d, ctypes.byref(it), kind), "cbor string")
    parts = []
    p, n = c_void_p(), c_size_t()
    while True:
        rc = _chunks_next(ctypes.byref(it), ctypes.byref(p), ctypes.byref(n))
        if rc == EEND:
            break
        check(rc, "cbor string chunk")
        parts.append(ctypes.string_at(p, n.value) if n.value else b"")
    b = b"".join(parts)
    return b if kind == K_BYTES else b.decode("utf-8", "surrogatepass")


def _decode(d):
    kind, indef = c_int(), c_bool()
    check(_peek(d, ctypes.byref(kind), ctypes.byref(indef)), "cbor peek")
    k = kind.value
    v = c_uint64()
    if k == K_UINT:
        check(_dec_uint(d, ctypes.byref(v)))
        return v.value
    if k == K_NEGINT:
        check(_dec_negint(d, ctypes.byref(v)))
        return -1 - v.value
    if k in (K_BYTES, K_TEXT):
        return _string(d, k)
    if k in (K_ARRAY, K_MAP):
        check((_dec_array if k == K_ARRAY else _dec_map)(d, ctypes.byref(v)))
        n = v.value
        out = [] if k == K_ARRAY else {}
        i = 0
        while (n == INDEF and not _at_break(d)) or (n != INDEF and i < n):
            if k == K_ARRAY:
                out.append(_decode(d))
            else:
                key = _decode(d)
                out[key if not isinstance(key, list) else tuple(key)] = _decode(d)
            i += 1
        if n == INDEF:
            check(_dec_break(d), "cbor break")
        return out
    if k == K_TAG:
        check(_dec_tag(d, ctypes.byref(v)))
        return Tag(v.value, _decode(d))
    if k == K_SIMPLE:
        s = c_uint8()
        check(_dec_simple(d, ctypes.byref(s)))
        return {20: False, 21: True, 22: None, 23: UNDEFINED}.get(s.value, Simple(s.value))
    if k == K_FLOAT:
        f = c_double()
        check(_dec_double(d, ctypes.byref(f)))
        return f.value
    raise TernError(-30999, "cbor: unexpected break")


def cbor_loads(data):
    """Decodes exactly one well-formed item with the C decoder."""
    data = bytes(data)
    check(_wellformed(data, len(data)), "cbor")
    buf = ctypes.create_string_buffer(data, len(data))
    d = _Dec()
    _dec_init(ctypes.byref(d), buf, len(data))
    obj = _decode(ctypes.byref(d))
    assert _dec_done(ctypes.byref(d))
    return obj


def cbor_wellformed(data):
    """0 if data is one well-formed item, else the (negative) error code."""
    return _wellformed(bytes(data), len(data))


def cbor_diag(data):
    """RFC 8949 diagnostic notation of one item."""
    data = bytes(data)
    cap = 256 + 8 * len(data)
    out = ctypes.create_string_buffer(cap)
    check(_diag(data, len(data), out, cap), "cbor diag")
    return out.value.decode("utf-8", "replace")
