"""Shared fixtures for every pytest suite.

- node_dir: a private, short temporary directory per test (removed afterwards
  unless TERN_KEEP=1), for node directories, sockets and logs.
- tern_bin: path of a program built by CMake (build dir from TERN_BUILD_DIR).
- network(n, **kw): a tern.testing.Network under the test's node_dir
  (network.adopt({number: (dir, port)}) for ready-made node directories;
  links={(a, b): {...}} puts a linkem on an edge); every node and linkem
  still running is stopped when the test ends (SIGKILL if a node will not
  stop), and one that died on its own fails the test.
- add_report(fn): fn() -> (title, text) is attached to the test's failure
  report (and printed) if it fails: the network fixture attaches the tail of
  every ternd and linkem log this way.
Daemons bind port 0 and publish their ports (tern.testing.wait_ports).
"""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "bindings", "python"))

from tern import testing  # noqa: E402
from tern.testing import Network  # noqa: E402

_REPORTS = pytest.StashKey[list]()


def _add_report(item, fn):
    item.stash.setdefault(_REPORTS, []).append(fn)


@pytest.fixture
def add_report(request):
    """add_report(fn): fn() -> (title, text) goes into the report if the test fails."""
    return lambda fn: _add_report(request.node, fn)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if not rep.failed:
        return
    for fn in item.stash.get(_REPORTS, []):
        title, text = fn()
        rep.sections.append((f"{title} ({rep.when})", text))
        print(f"\n===== {title} ({item.nodeid}, {rep.when}) =====\n{text}", file=sys.stderr)


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


@pytest.fixture
def network_class():
    """The Network class the network fixture builds (a suite may override it)."""
    return Network


@pytest.fixture
def network(request, node_dir, network_class):
    made = []

    def keep(net):
        made.append(net)
        _add_report(request.node, lambda: (f"ternd and linkem logs of {net.base}",
                                           net.log_tails(60)))
        return net

    def make(n=2, **kw):
        return keep(network_class(os.path.join(node_dir, f"net{len(made)}"), n, **kw))

    def adopt(dirs, **kw):
        return keep(network_class.adopt(node_dir, dirs, **kw))

    make.adopt = adopt

    yield make
    problems = []
    for net in made:
        problems += net.shutdown()
    if problems:
        pytest.fail("nodes and links at the end of the test: " + "; ".join(problems),
                    pytrace=False)
