"""Shared fixtures for every pytest suite.

- node_dir: a private, short temporary directory per test (removed afterwards
  unless TERN_KEEP=1), for node directories, sockets and logs.
- tern_bin: path of a program built by CMake (build dir from TERN_BUILD_DIR).
Daemons bind port 0 and publish their ports (tern.testing.wait_ports).
"""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "bindings", "python"))

from tern import testing  # noqa: E402


def build_dir():
    return os.environ.get("TERN_BUILD_DIR", os.path.join(REPO, "build"))


@pytest.fixture
def node_dir():
    d = testing.short_tmpdir()
    yield d
    if os.environ.get("TERN_KEEP") != "1":
        testing.remove_tree(d)


@pytest.fixture
def tern_bin():
    def path(name):
        p = os.path.join(build_dir(), "bin", name)
        if not os.access(p, os.X_OK):
            pytest.fail(f"{p} is not built (run 'make build')")
        return p
    return path
