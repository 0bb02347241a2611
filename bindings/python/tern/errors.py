"""TernError: a Tern return code with its tern_strerror() text."""
import ctypes

from . import _lib

_common = _lib.load("common")
_common.tern_strerror.restype = ctypes.c_char_p
_common.tern_strerror.argtypes = [ctypes.c_int]

# Library error codes (tern/base.h).
EMALFORMED = -30999
ETRUNCATED = -30998
EOVERFLOW = -30997
EDEPTH = -30996
ETYPE = -30995
ESYNTAX = -30994
ESTATE = -30993
ENOTFOUND = -30992
EEXIST = -30991
ECORRUPT = -30990
EPROFILE = -30989
EFULL = -30988
EABI = -30987
ENOSPACE = -30986
EEND = -30985
EINTXN = -30984
ENOTXN = -30983
ETOOBIG = -30982
ENOROUTE = -30981


def strerror(rc):
    return _common.tern_strerror(rc).decode()


class TernError(Exception):
    """A Tern call returned rc < 0."""

    def __init__(self, rc, what=""):
        self.rc = rc
        super().__init__(f"{what + ': ' if what else ''}{strerror(rc)} ({rc})")


def check(rc, what=""):
    if rc < 0:
        raise TernError(rc, what)
    return rc
