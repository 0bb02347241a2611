"""Helpers shared by the real-node tests: payloads that say which bundle
they are, checksums, and a child process that reads an endpoint."""
import json
import os
import subprocess
import sys

from tern.testing import file_sha, sha, sized_payload, write_file  # noqa: F401

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


READER = r"""
import hashlib, json, sys
from tern import bp
node_dir, eid, count, timeout_ms = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
out = []
with bp.Node(node_dir) as n:
    ep = n.open(eid)
    while len(out) < count:
        d = ep.receive(timeout_ms)
        if d is None:
            break
        out.append({"src": d.src, "seq": d.seq, "ctime": d.ctime, "len": len(d.payload),
                    "tag": d.payload.split(b":", 1)[0].decode(errors="replace"),
                    "sha": hashlib.sha256(d.payload).hexdigest()})
json.dump(out, sys.stdout)
"""


def read_in_child(node_dir, eid, count, timeout_ms=5000):
    """Another process opens eid on the node, takes up to count bundles
    (stopping when none comes for timeout_ms) and reports each as a dict
    (src, seq, ctime, len, tag, sha)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.join(REPO, "bindings", "python")] +
        ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    r = subprocess.run([sys.executable, "-c", READER, node_dir, eid, str(count),
                        str(timeout_ms)], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0, f"reader process failed ({r.returncode}):\n{r.stderr}"
    return json.loads(r.stdout)


def tool_env():
    """The environment for outside tools (tshark): without the sanitizer
    runtime that `make test TERN_SANITIZE=...` preloads for Tern's own code."""
    env = dict(os.environ)
    for k in ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS"):
        env.pop(k, None)
    return env


class Capture:
    """tshark capturing UDP on lo for the given ports into node_dir/name.
    start() returns an error text instead of raising when tshark cannot
    capture (not root, no lo access), so the caller can skip."""

    def __init__(self, node_dir, ports, name="capture.pcapng"):
        self.ports = list(ports)
        self.file = os.path.join(node_dir, name)
        self.proc = None

    def start(self, timeout=20):
        import select
        import time
        filt = " or ".join(f"udp port {p}" for p in self.ports)
        self.proc = subprocess.Popen(["tshark", "-i", "lo", "-f", filt, "-w", self.file],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     text=True, env=tool_env())
        deadline = time.monotonic() + timeout
        seen = ""
        while "Capturing on" not in seen:
            left = deadline - time.monotonic()
            if self.proc.poll() is not None:
                return "tshark exited: " + seen + self.proc.stderr.read()
            if left <= 0:
                self.proc.kill()
                self.proc.wait()
                return f"tshark did not start capturing within {timeout} s: {seen}"
            ready, _, _ = select.select([self.proc.stderr], [], [], min(left, 0.5))
            if ready:
                seen += self.proc.stderr.readline()
        time.sleep(0.3)
        return None

    def stop(self):
        import signal
        import time
        if self.proc is None or self.proc.poll() is not None:
            return
        time.sleep(0.5)  # let the last frames reach the file
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def tshark(self, *args):
        decode = []
        for p in self.ports:
            decode += ["-d", f"udp.port=={p},ltp"]
        r = subprocess.run(["tshark", "-r", self.file, *decode, *args], capture_output=True,
                           text=True, timeout=120, env=tool_env())
        assert r.returncode == 0, r.stderr
        return [ln for ln in r.stdout.splitlines() if ln.strip()]
