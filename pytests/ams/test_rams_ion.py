"""ION's own two-node RAMS demo (demos/bench-ams, copied unchanged into
../shared/interop/ion/ams/rams-2node): two Tern nodes started from ION's
separate admin files (amroc.ionrc, amroc.bprc, amroc.ipnrc, ...; in
apps/ams/test/vectors/ion/rams-2node, byte for byte) as they
are, joined by BP over TCP on 127.0.0.1:5001 / 5101; in each node amsd and
ramsgate with ION's arguments, the petition log seeded from
init.petition.log as ION's ionstart does; amsbenchs 100 x 1,024 bytes in
continuum 2 reaches amsbenchr in continuum 3."""
import os
import shutil
import signal
import socket
import subprocess
import time

import pytest

from tern.testing import bin_dir

HERE = os.path.dirname(os.path.abspath(__file__))
# ../shared/interop/ion/ams/rams-2node, copied byte for byte into the repository
DEMO = os.path.join(HERE, "..", "..", "apps", "ams", "test", "vectors", "ion", "rams-2node")
PORTS = {5001: socket.SOCK_STREAM, 5101: socket.SOCK_STREAM, 2502: socket.SOCK_DGRAM,
         2503: socket.SOCK_DGRAM}


def _free(port, kind):
    """Can a daemon bind port (with SO_REUSEADDR, as ternd and amsd do)?"""
    s = socket.socket(socket.AF_INET, kind)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def _bin(name):
    return os.path.join(bin_dir(), name)


@pytest.fixture
def demo(node_dir):
    if not os.path.isdir(DEMO):
        pytest.skip(f"ION's RAMS demo configuration is not at {DEMO}")
    busy = [p for p, k in PORTS.items() if not _free(p, k)]
    if busy:
        pytest.skip(f"ION's demo uses fixed ports and {busy} are taken on this machine")
    dirs = {}
    for n in (2, 3):
        d = os.path.join(node_dir, f"node{n}")
        shutil.copytree(os.path.join(DEMO, f"node{n}"), d)
        dirs[n] = d
    procs = []
    yield dirs, procs
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
    for d in dirs.values():
        subprocess.run([_bin("tern"), "stop", d], capture_output=True, timeout=60)


def _daemon(procs, d, name, *args):
    log = open(os.path.join(d, f"{name}.log"), "w")
    p = subprocess.Popen([_bin(name), *args], cwd=d, stdout=log, stderr=subprocess.STDOUT,
                         env={**os.environ, "TERN_NODE_DIR": d})
    procs.append(p)
    return p, log.name


def _wait_text(path, text, timeout, proc):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = open(path).read()
        if text in got:
            return got
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    raise AssertionError(f"'{text}' not in {path} within {timeout} s:\n{open(path).read()}")


def test_ion_two_node_rams_demo_runs_on_tern(demo):
    dirs, procs = demo
    for n, d in dirs.items():
        r = subprocess.run([_bin("tern"), "start", d], capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0, r.stdout + r.stderr
        # ION's files as they are: the one amroc.ionrc and its companions
        assert f"node {d} started" in r.stdout, r.stdout
        # amroc.ipnrc's plan to the node itself names no outduct: said, not refused
        assert f"a plan for this node ({n}) via tcp/127.0.0.1:" in r.stderr, r.stderr
    for n, d in dirs.items():  # ION's ionstart, in order
        shutil.copy(os.path.join(d, "init.petition.log"), os.path.join(d, "9.petition.log"))
        amsd, log = _daemon(procs, d, "amsd", "mib.amsrc", f"127.0.0.1:250{n}", "amsdemo",
                            "test", "")
        _wait_text(log, "amsd: registrar of", 15, amsd)
    for n, d in dirs.items():
        g, log = _daemon(procs, d, "ramsgate", "amsdemo", "test", "300")
        text = _wait_text(log, "ramsgate: gateway of", 30, g)
        assert "played back" in text, text  # init.petition.log, as ION seeds it
    rcv, rlog = _daemon(procs, dirs[3], "amsbenchr")
    _wait_text(rlog, "subscribed to subject 3 (bench)", 15, rcv)
    s = subprocess.run([_bin("amsbenchs"), "100", "1024"], cwd=dirs[2], capture_output=True,
                       text=True, timeout=60)
    assert s.returncode == 0, s.stdout + s.stderr
    out = _wait_text(rlog, "Received 100 messages", 60, rcv)
    assert "Received 100 messages, a total of 102400 bytes" in out, out
    st = subprocess.run([_bin("tern"), "status", dirs[2], "--once"], capture_output=True,
                        text=True, timeout=30).stdout
    assert "rams: gateway of venture 9 (amsdemo/test) in continuum 2 at ipn:2.9" in st, st
    assert "peer continuum 3 at ipn:3.9: declared" in st, st
