"""Helpers for the end-to-end tests: payloads that name their bundle,
checksums, a receiver thread that notes when each bundle arrived, a paced
sender thread, and files through bpsendfile/bprecvfile."""
import math
import os
import subprocess
import threading
import time

from tern import bp
from tern.testing import bin_dir, file_sha, in_netns, sha, sized_payload, write_file  # noqa: F401


def payload(tag, n):
    """n reproducible bytes that start with tag and a colon — never fewer than
    those (a 1-byte bundle still names itself)."""
    head = tag.encode() + b":"
    return sized_payload(tag, max(n, len(head)))


def p_corrupt(ber, nbytes):
    """Probability that nbytes carry at least one flipped bit."""
    return -math.expm1(nbytes * 8 * math.log1p(-ber))


class Receiver(threading.Thread):
    """Takes bundles for eid on node_dir in a thread: .got is a list of
    (tag, sha, length, arrival time.time(), src). join() when count came or
    timeout passed; .error holds an exception raised in the thread. netns:
    the network namespace of the node's ternd (its client socket is there)."""

    def __init__(self, node_dir, eid, count, timeout, netns=None):
        super().__init__(daemon=True)
        self.node_dir, self.eid, self.count, self.timeout = node_dir, eid, count, timeout
        self.netns = netns
        self.got = []
        self.error = None
        self.opened = threading.Event()
        self.start()
        if not self.opened.wait(30):
            raise TimeoutError(f"could not open {eid} in 30 s")
        if self.error:
            raise self.error

    def run(self):
        try:
            deadline = time.monotonic() + self.timeout
            with in_netns(self.netns), bp.Node(self.node_dir) as n:
                ep = n.open(self.eid)
                self.opened.set()
                while len(self.got) < self.count:
                    left = int((deadline - time.monotonic()) * 1000)
                    if left <= 0:
                        break
                    d = ep.receive(min(left, 1000))
                    if d is None:
                        continue
                    tag = d.payload.split(b":", 1)[0].decode(errors="replace")
                    self.got.append((tag, sha(d.payload), len(d.payload), time.time(), d.src))
                extra = ep.receive(500)
                if extra is not None:
                    self.got.append(("EXTRA", sha(extra.payload), len(extra.payload),
                                     time.time(), extra.src))
        except Exception as e:  # noqa: BLE001 - handed to the test
            self.error = e
            self.opened.set()

    def arrivals(self):
        return {g[0]: g[3] for g in self.got}


def check_bundles(got, sent, src):
    """Every bundle of sent ({tag: sha}) arrived exactly once, intact, from src."""
    tags = [g[0] for g in got]
    assert "EXTRA" not in tags, "a bundle arrived more than once (or an unknown one)"
    assert len(tags) == len(set(tags)), "a bundle arrived twice"
    missing = sorted(set(sent) - set(tags))
    assert not missing, f"{len(missing)} of {len(sent)} bundles missing: {missing[:10]}"
    for tag, h, n, _, s in got:
        assert tag in sent, f"an unknown bundle {tag!r} arrived"
        assert h == sent[tag], f"bundle {tag} ({n} bytes) corrupted"
        assert s == src, f"bundle {tag} from {s}, expected {src}"


class PacedSender(threading.Thread):
    """Sends count bundles of size bytes from eid on node_dir to dest, one
    every interval seconds, starting at time.time() start (absolute). .sent
    is {tag: sha}, .times {tag: send time}. size: bytes, or a list of sizes
    (bundle i has size[i % len]). netns: the node's network namespace."""

    def __init__(self, node_dir, eid, dest, count, size, interval, prefix, start=None,
                 lifetime_s=3600, netns=None):
        super().__init__(daemon=True)
        self.args = (node_dir, eid, dest, count, size, interval, prefix, start, lifetime_s)
        self.netns = netns
        self.sent, self.times = {}, {}
        self.error = None
        self.start()

    def run(self):
        node_dir, eid, dest, count, size, interval, prefix, start, life = self.args
        start = start or time.time()
        try:
            sizes = size if isinstance(size, (list, tuple)) else [size]
            with in_netns(self.netns), bp.Node(node_dir) as n:
                ep = n.open(eid)
                for i in range(count):
                    wait = start + i * interval - time.time()
                    if wait > 0:
                        time.sleep(wait)
                    tag = f"{prefix}{i}"
                    data = payload(tag, sizes[i % len(sizes)])
                    self.times[tag] = time.time()
                    ep.send(dest, data, lifetime_s=life)
                    self.sent[tag] = sha(data)
                ep.flush(60_000)
        except Exception as e:  # noqa: BLE001 - handed to the test
            self.error = e


class FileReceiver:
    """bprecvfile for eid on node_dir, writing count files into dst."""

    def __init__(self, node_dir, eid, dst, count, timeout_s):
        os.makedirs(dst, exist_ok=True)
        self.dst = dst
        self.proc = subprocess.Popen(
            [os.path.join(bin_dir(), "bprecvfile"), eid, "--node", node_dir, "--dir", dst,
             "--count", str(count), "--timeout", str(timeout_s), "--quiet"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def wait(self, timeout):
        try:
            out, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
            raise AssertionError(f"bprecvfile still waiting after {timeout} s: {out}{err}")
        assert self.proc.returncode == 0, f"bprecvfile exited {self.proc.returncode}: {out}{err}"

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


def send_file(node_dir, src_eid, dest, path, *extra):
    r = subprocess.run([os.path.join(bin_dir(), "bpsendfile"), src_eid, dest, path,
                        "--node", node_dir, "--quiet", *extra],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"bpsendfile {path}: exit {r.returncode}: {r.stdout}{r.stderr}"


def check_files(dst, want):
    """dst holds exactly the files of want ({name: sha}), each intact."""
    assert sorted(os.listdir(dst)) == sorted(want)
    for name, h in want.items():
        assert file_sha(os.path.join(dst, name)) == h, f"{name} differs from what was sent"


def idle_link_stats(net, a, b, timeout):
    """link_stats(a, b) once nothing is in flight in linkem (every datagram
    in is out or dropped) or timeout passed."""
    deadline = time.monotonic() + timeout
    while True:
        st = net.link_stats(a, b)
        busy = [d for d in ("a2b", "b2a")
                if st[d]["packets_in"] + st[d]["duplicated"] != st[d]["packets_out"] +
                sum(st[d][k] for k in ("dropped_loss", "dropped_ber", "dropped_queue",
                                       "dropped_outage"))]
        if not busy or time.monotonic() > deadline:
            return st
        time.sleep(0.1)
