"""ION admin-file lexer through libterncommon (tern_rc_*)."""
import ctypes
from ctypes import POINTER, c_char_p, c_int, c_size_t, c_uint, c_void_p
from dataclasses import dataclass

from . import _lib
from .errors import ESYNTAX, TernError

_c = _lib.load("common")


class _Cmd(ctypes.Structure):
    _fields_ = [("file", c_char_p), ("line", c_uint), ("section", c_char_p),
                ("argc", c_int), ("argv", POINTER(c_char_p))]


def _sig(name, res, *args):
    f = getattr(_c, name)
    f.restype = res
    f.argtypes = list(args)
    return f


_parse = _sig("tern_rc_parse", c_int, POINTER(c_void_p), c_char_p, c_char_p, c_size_t,
              c_char_p)
_load = _sig("tern_rc_load", c_int, POINTER(c_void_p), c_char_p, c_char_p)
_count = _sig("tern_rc_count", c_size_t, c_void_p)
_at = _sig("tern_rc_at", POINTER(_Cmd), c_void_p, c_size_t)
_ndiag = _sig("tern_rc_diag_count", c_size_t, c_void_p)
_diag_at = _sig("tern_rc_diag_at", c_char_p, c_void_p, c_size_t, POINTER(c_int))
_free = _sig("tern_rc_free", None, c_void_p)


@dataclass
class Command:
    file: str
    line: int
    section: str
    argv: list


@dataclass
class RcFile:
    commands: list
    errors: list
    warnings: list


def _collect(rc, h):
    if rc < 0 and rc != ESYNTAX:
        raise TernError(rc, "rc")
    try:
        cmds = []
        for i in range(_count(h)):
            c = _at(h, i).contents
            cmds.append(Command(c.file.decode(), c.line,
                                c.section.decode() if c.section else None,
                                [c.argv[k].decode() for k in range(c.argc)]))
        errors, warnings = [], []
        for i in range(_ndiag(h)):
            is_err = c_int()
            msg = _diag_at(h, i, ctypes.byref(is_err)).decode()
            (errors if is_err.value else warnings).append(msg)
        return RcFile(cmds, errors, warnings)
    finally:
        _free(h)


def parse(text, name="<input>", default_section=None):
    """Parses admin-file text; returns RcFile (errors listed, not raised)."""
    data = text.encode() if isinstance(text, str) else bytes(text)
    h = c_void_p()
    rc = _parse(ctypes.byref(h), name.encode(), data, len(data),
                default_section.encode() if default_section else None)
    return _collect(rc, h)


def load(path, default_section=None):
    """Reads and parses an admin file; raises TernError if it cannot be read."""
    h = c_void_p()
    rc = _load(ctypes.byref(h), str(path).encode(),
               default_section.encode() if default_section else None)
    return _collect(rc, h)
