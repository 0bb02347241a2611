"""tools/build.sh (make build, and the first stage of make test and make demo):
one status line, the build's own output in a log file shown only on failure."""
import os
import re
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
BUILD = os.environ.get("TERN_BUILD_DIR", os.path.join(REPO, "build"))


def cached(name):
    """A value from the build's CMakeCache.txt, so a rebuild keeps its options."""
    try:
        with open(os.path.join(BUILD, "CMakeCache.txt")) as f:
            for line in f:
                m = re.match(rf"{name}:\w+=(.*)$", line.rstrip("\n"))
                if m:
                    return m.group(1)
    except OSError:
        pass
    return None


def run_build(build_dir, **env):
    e = dict(os.environ, BUILD_DIR=build_dir, **env)
    e.pop("V", None)
    e.pop("TERN_VERBOSE", None)
    # as 'make build' runs it: a sub-make, which makes GNU make name directories
    e.setdefault("MAKELEVEL", "1")
    e.setdefault("MAKEFLAGS", "w")
    return subprocess.run([os.path.join(REPO, "tools", "build.sh")], env=e,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.skipif(cached("TERN_SANITIZE") is None, reason="no configured build")
def test_build_prints_one_status_line():
    r = run_build(BUILD, TERN_SANITIZE=cached("TERN_SANITIZE") or "")
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    lines = [l for l in out.splitlines() if l.strip()]
    assert len(lines) <= 2, out  # the status line (and a warning count, if any)
    assert lines[0].startswith("build: ") and "done in" in lines[0], out
    assert "Entering directory" not in out and "Built target" not in out, out
    log = os.path.join(BUILD, "build.log")
    with open(log) as f:
        assert "Built target" in f.read()


def test_failed_build_shows_what_went_wrong(node_dir):
    bdir = os.path.join(node_dir, "b")
    r = run_build(bdir, CC="/nonexistent/cc", TERN_SANITIZE="")
    out = r.stdout + r.stderr
    assert r.returncode != 0, out
    assert "FAILED" in out, out
    assert "/nonexistent/cc" in out, out  # CMake's own reason is shown
    assert os.path.join(bdir, "build.log") in out, out
    assert os.path.exists(os.path.join(bdir, "build.log"))
