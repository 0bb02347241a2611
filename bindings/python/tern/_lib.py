"""Finds Tern's shared libraries and loads them with ctypes.

Search order: $TERN_LIB_DIR; the build/lib directory of the source checkout
this package sits in; the install prefixes /usr/local/lib and /usr/lib.
Each library exports tern_<module>_abi_version(); a mismatch with the value
this package was written for is an error, not a crash later.
"""
import ctypes
import os

# The ABI versions this package was written against.
ABI = {"common": 1, "sim": 2, "client": 4, "cfdp": 5, "ams": 1}

_loaded = {}


class TernLibraryError(ImportError):
    """A Tern library is missing or was built for another ABI."""


def candidate_dirs():
    dirs = []
    env = os.environ.get("TERN_LIB_DIR")
    if env:
        dirs.append(env)
    here = os.path.dirname(os.path.abspath(__file__))
    repo = os.path.normpath(os.path.join(here, "..", "..", ".."))
    dirs += [os.path.join(repo, "build", "lib"), "/usr/local/lib", "/usr/lib"]
    return dirs


def load(module):
    """Loads libtern<module>.so once and checks its ABI version."""
    if module in _loaded:
        return _loaded[module]
    name = f"libtern{module}.so"
    tried = []
    for d in candidate_dirs():
        path = os.path.join(d, name)
        tried.append(path)
        if os.path.exists(path):
            break
    else:
        raise TernLibraryError(
            f"{name} not found; tried {', '.join(tried)}. Build with 'make build' "
            f"or set TERN_LIB_DIR to the directory holding it")
    lib = ctypes.CDLL(path)
    fn = getattr(lib, f"tern_{module}_abi_version")
    fn.restype = ctypes.c_int
    fn.argtypes = []
    got = fn()
    if got != ABI[module]:
        raise TernLibraryError(
            f"{path} has ABI version {got}, this Python package expects "
            f"{ABI[module]}; rebuild the library or use the matching bindings")
    _loaded[module] = lib
    lib._tern_path = path
    return lib
