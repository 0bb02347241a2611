"""Fixtures for tests with real ternd processes.

- network(n, **kw): a tern.testing.Network under the test's node_dir
  (network.adopt({number: (dir, port)}) for ready-made node directories); every
  node still running is stopped when the test ends (SIGKILL if it will not
  stop), and a node that died on its own fails the test.
- When a test fails, the tail of every ternd.log of its networks is added to
  the failure report (section "ternd logs"), and printed.
"""
import os
import sys

import pytest

from tern.testing import Network

_NETS = pytest.StashKey[list]() if hasattr(pytest, "StashKey") else None


def _nets_of(item):
    if _NETS is not None:
        return item.stash.setdefault(_NETS, [])
    if not hasattr(item, "_tern_networks"):
        item._tern_networks = []
    return item._tern_networks


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if not rep.failed:
        return
    for net in _nets_of(item):
        text = net.log_tails(60)
        rep.sections.append((f"ternd logs ({rep.when}, {net.base})", text))
        print(f"\n===== ternd logs of {net.base} ({item.nodeid}, {rep.when}) =====\n{text}",
              file=sys.stderr)


@pytest.fixture
def network(request, node_dir):
    made = _nets_of(request.node)

    def make(n=2, **kw):
        net = Network(os.path.join(node_dir, f"net{len(made)}"), n, **kw)
        made.append(net)
        return net

    def adopt(dirs, **kw):
        net = Network.adopt(node_dir, dirs, **kw)
        made.append(net)
        return net

    make.adopt = adopt

    yield make
    problems = []
    for net in made:
        problems += net.shutdown()
    if problems:
        pytest.fail("nodes at the end of the test: " + "; ".join(problems), pytrace=False)

