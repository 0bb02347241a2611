"""Helpers for test networks: private short directories and published ports.

Convention: a daemon binds port 0 and, once listening, publishes what it got
in the file "ports" of its node directory, one line per socket:

    <name> <proto> <port>        e.g.  "ltp udp 40113"

written atomically (temporary file + rename), so a reader never sees half a
line. Tests read it with wait_ports() and never pick port numbers themselves,
so suites can run in parallel without racing for ports.
"""
import os
import shutil
import tempfile
import time

PORTS_FILE = "ports"


def short_tmpdir(prefix="tn-"):
    """A new private directory with a short path (Unix socket paths are
    limited to 108 bytes, and pytest's own tmp_path is often longer)."""
    base = os.environ.get("TERN_TMP", "/tmp")
    return tempfile.mkdtemp(prefix=prefix, dir=base)


def remove_tree(path):
    shutil.rmtree(path, ignore_errors=True)


def read_ports(node_dir):
    """{(name, proto): port} from node_dir/ports; {} if not there yet."""
    out = {}
    try:
        with open(os.path.join(node_dir, PORTS_FILE)) as f:
            for lineno, line in enumerate(f, 1):
                words = line.split()
                if not words or words[0].startswith("#"):
                    continue
                if len(words) != 3 or not words[2].isdigit():
                    raise ValueError(f"{node_dir}/{PORTS_FILE}:{lineno}: expected "
                                     f"'<name> <proto> <port>', got {line.strip()!r}")
                out[(words[0], words[1])] = int(words[2])
    except FileNotFoundError:
        pass
    return out


def wait_ports(node_dir, names, timeout=10.0, proc=None):
    """Waits until every (name, proto) in names is published; returns the map.
    Fails early, with the daemon's exit status, if proc (a Popen) dies."""
    deadline = time.monotonic() + timeout
    while True:
        ports = read_ports(node_dir)
        if all(n in ports for n in names):
            return ports
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"daemon exited with status {proc.returncode} before "
                               f"publishing {names} in {node_dir}/{PORTS_FILE}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"{names} not published in {node_dir}/{PORTS_FILE} "
                               f"after {timeout} s (have {ports})")
        time.sleep(0.01)
