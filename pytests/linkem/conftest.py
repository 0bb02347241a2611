"""Fixtures for the link emulator's own tests (real sockets on 127.0.0.1,
and network namespaces as root).

- linkem(mode, **kw): a started tern.linkem.Linkem with its files under the
  test's node_dir; every one is stopped when the test ends (a linkem that
  died or did not exit 0 on SIGTERM fails the test), with the UDP peers a
  test attached to it.
- packet_mode: skips the test, with the reason, when packet mode cannot run
  here (not root, no /dev/net/tun, no ip); CI runs as root.
- Namespaces: at the start of the session those of test runs that no
  longer exist are deleted; at the end, every one this run made.
- When a test fails, the tail of each of its linkems' logs is attached to
  the report (section "linkem logs") and printed.
"""
import os

import pytest

from tern import linkem as lkmod


@pytest.fixture(scope="session", autouse=True)
def _namespaces():
    if lkmod.packet_mode_unavailable() is None:
        lkmod.remove_stale_namespaces()
    yield
    if os.geteuid() == 0:
        lkmod.remove_namespaces(lkmod.netns_prefix())


@pytest.fixture
def linkem_bin():
    p = lkmod.binary()
    if not os.access(p, os.X_OK):
        pytest.fail(f"{p} is not built (run 'make build')")
    return p


@pytest.fixture
def linkem(node_dir, linkem_bin, add_report):
    made = []

    def report(lk):
        return (f"linkem logs of {lk.dir}",
                f"$ {' '.join(lk.args)}\n--- stderr (last 40 lines)\n{lk.stderr()}\n"
                f"--- stdout\n{lk.summary}")

    def make(mode, start=True, **kw):
        kw.setdefault("workdir", os.path.join(node_dir, f"lk{len(made)}"))
        lk = lkmod.Linkem(mode, **kw)
        made.append(lk)
        add_report(lambda: report(lk))
        if start:
            lk.start()
        return lk

    yield make
    problems = []
    for lk in made:
        for p in getattr(lk, "_peers", ()):
            p.close()
        if lk.proc is None:
            continue
        try:
            if lk.running():
                lk.stop(check=True)
            elif lk.returncode is None:
                lk.kill()
                problems.append(f"linkem {lk.dir} died on its own (exit {lk.returncode})")
        except lkmod.LinkemError as e:
            problems.append(str(e).splitlines()[0])
    if problems:
        pytest.fail("linkem at the end of the test: " + "; ".join(problems), pytrace=False)


@pytest.fixture
def packet_mode(linkem_bin):
    why = lkmod.packet_mode_unavailable()
    if why:
        pytest.skip(why)
