"""Tern's Python bindings: ctypes over the C libraries, plus test helpers.

No compiled extension: plain C types cross the boundary and no C code calls
back into Python. Importing checks each library's ABI version.
"""
from ._lib import ABI, TernLibraryError, load  # noqa: F401
from .errors import TernError, strerror  # noqa: F401

__all__ = ["ABI", "TernError", "TernLibraryError", "load", "strerror"]
