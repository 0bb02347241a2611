"""LTP over UDP between two processes on 127.0.0.1: ltpdriver sends test
blocks to ltpcounter, which verifies and counts them. Also through a lossy
relay (a thread in this test dropping 5% of the datagrams both ways, seeded),
and, when tshark is installed, with the lossy run dissected by tshark."""
import json
import os
import random
import select
import shutil
import signal
import socket
import subprocess
import threading
import time

import pytest

from tern.testing import wait_ports

TIMEOUT = 120


def start_counter(tern_bin, node_dir, *args):
    out = os.path.join(node_dir, "counter.json")
    proc = subprocess.Popen(
        [tern_bin("ltpcounter"), "--engine", "2", "--peer", "1", "--listen", "127.0.0.1:0",
         "--dir", node_dir, "--json", out, "--timeout", "90", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ports = wait_ports(node_dir, [("ltp", "udp")], proc=proc)
    return proc, ports[("ltp", "udp")], out


def run_driver(tern_bin, node_dir, port, *args):
    out = os.path.join(node_dir, "driver.json")
    r = subprocess.run(
        [tern_bin("ltpdriver"), "--engine", "1", "--peer", "2", "--to", f"127.0.0.1:{port}",
         "--json", out, "--timeout", "90", *args],
        capture_output=True, text=True, timeout=TIMEOUT)
    with open(out) as f:
        res = json.load(f)
    return r, res


def finish_counter(proc, out):
    try:
        stdout, stderr = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, stderr = proc.communicate()
    with open(out) as f:
        res = json.load(f)
    return proc.returncode, stdout, stderr, res


def test_blocks_loopback(tern_bin, node_dir):
    n, size = 40, 300_000
    counter, port, cjson = start_counter(tern_bin, node_dir, "--blocks", str(n))
    try:
        r, d = run_driver(tern_bin, node_dir, port, "--blocks", str(n), "--size", str(size),
                          "--seg", "64000")
    finally:
        rc, out, err, c = finish_counter(counter, cjson)
    assert r.returncode == 0, r.stdout + r.stderr
    assert d["ok"] and d["blocks"] == n and d["cancelled"] == 0
    assert rc == 0, out + err
    assert c["ok"] and c["blocks"] == n and c["bytes"] == n * size
    assert c["bad"] == 0 and c["duplicates"] == 0
    assert "goodput" in r.stdout and "goodput" in out


def test_small_segments_loopback(tern_bin, node_dir):
    n, size = 20, 100_000
    counter, port, cjson = start_counter(tern_bin, node_dir, "--blocks", str(n))
    try:
        r, d = run_driver(tern_bin, node_dir, port, "--blocks", str(n), "--size", str(size),
                          "--seg", "1400")
    finally:
        rc, out, err, c = finish_counter(counter, cjson)
    assert r.returncode == 0, r.stdout + r.stderr
    assert rc == 0, out + err
    assert c["blocks"] == n and c["bytes"] == n * size


def test_sdu_aggregation_loopback(tern_bin, node_dir):
    units = 5000
    counter, port, cjson = start_counter(tern_bin, node_dir, "--units", str(units))
    try:
        r, d = run_driver(tern_bin, node_dir, port, "--units", str(units), "--sdu", "1024",
                          "--size", "64000", "--seg", "64000")
    finally:
        rc, out, err, c = finish_counter(counter, cjson)
    assert r.returncode == 0, r.stdout + r.stderr
    assert rc == 0, out + err
    assert c["units"] == units and c["bytes"] == units * 1024
    # 63 units of 1,024 bytes reach the 64,000-byte aggregation threshold.
    assert c["blocks"] == d["blocks"] == -(-units // 63)


def test_counter_reports_missing_on_sigterm(tern_bin, node_dir):
    """Expecting more than arrives: SIGTERM ends the count, status non-zero."""
    counter, port, cjson = start_counter(tern_bin, node_dir, "--blocks", "10")
    r, _ = run_driver(tern_bin, node_dir, port, "--blocks", "3", "--size", "10000")
    assert r.returncode == 0, r.stdout + r.stderr
    time.sleep(0.2)
    counter.send_signal(signal.SIGTERM)
    rc, out, err, c = finish_counter(counter, cjson)
    assert rc == 1, out + err
    assert c["blocks"] == 3 and c["reason"] == "SIGTERM" and not c["ok"]


class LossyRelay(threading.Thread):
    """Forwards datagrams between a front socket (the driver sends to it)
    and a back socket (which sends to the counter, and gets its replies),
    dropping a seeded fraction of them in both directions."""

    def __init__(self, target_port, loss, seed, corrupt_every=0):
        super().__init__(daemon=True)
        self.target = ("127.0.0.1", target_port)
        self.loss = loss
        # Flip the last byte of every n-th large datagram towards the counter
        # (data, which LTP itself does not checksum).
        self.corrupt_every = corrupt_every
        self.big_seen = 0
        self.corrupted = 0
        self.rng = random.Random(seed)
        self.front = self._sock()
        self.back = self._sock()
        self.client = None
        self.forwarded = 0
        self.dropped = 0
        self.stopping = threading.Event()

    @staticmethod
    def _sock():
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        for opt in (getattr(socket, "SO_RCVBUFFORCE", 33), socket.SO_RCVBUF):
            try:
                s.setsockopt(socket.SOL_SOCKET, opt, 32 << 20)
                break
            except OSError:
                continue
        s.bind(("127.0.0.1", 0))
        return s

    @property
    def port(self):
        return self.front.getsockname()[1]

    @property
    def back_port(self):
        return self.back.getsockname()[1]

    def run(self):
        while not self.stopping.is_set():
            ready, _, _ = select.select([self.front, self.back], [], [], 0.05)
            for s in ready:
                while True:
                    try:
                        data, addr = s.recvfrom(65536, socket.MSG_DONTWAIT)
                    except BlockingIOError:
                        break
                    if s is self.front:
                        self.client = addr
                        out, dest = self.back, self.target
                    else:
                        out, dest = self.front, self.client
                    if dest is None:
                        continue
                    if self.rng.random() < self.loss:
                        self.dropped += 1
                        continue
                    if self.corrupt_every and s is self.front and len(data) > 1000:
                        self.big_seen += 1
                        if self.big_seen % self.corrupt_every == 0:
                            data = data[:-1] + bytes([data[-1] ^ 0x5A])
                            self.corrupted += 1
                    try:
                        out.sendto(data, dest)
                        self.forwarded += 1
                    except OSError:
                        self.dropped += 1

    def stop(self):
        self.stopping.set()
        self.join(5)
        self.front.close()
        self.back.close()


def tool_env():
    """The environment for outside tools (tshark): without the sanitizer
    runtime that `make test TERN_SANITIZE=...` preloads for our own code."""
    env = dict(os.environ)
    for k in ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS"):
        env.pop(k, None)
    return env


class Capture:
    """tshark on lo for the given ports, if tshark is installed."""

    def __init__(self, node_dir, ports):
        self.ports = ports
        self.file = os.path.join(node_dir, "lossy.pcapng")
        filt = " or ".join(f"udp port {p}" for p in ports)
        self.proc = subprocess.Popen(
            ["tshark", "-i", "lo", "-f", filt, "-w", self.file],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            env=tool_env())
        # tshark says "Capturing on 'Loopback: lo'" once it is ready; never
        # block on its output past the deadline.
        deadline = time.monotonic() + 20
        seen = ""
        while "Capturing on" not in seen:
            left = deadline - time.monotonic()
            if self.proc.poll() is not None:
                raise RuntimeError("tshark exited: " + seen + self.proc.stderr.read())
            if left <= 0:
                self.proc.kill()
                self.proc.wait()
                raise RuntimeError("tshark did not start capturing within 20 s: " + seen)
            ready, _, _ = select.select([self.proc.stderr], [], [], min(left, 0.5))
            if ready:
                seen += self.proc.stderr.readline()
        time.sleep(0.2)

    def stop(self):
        time.sleep(0.5)  # let the last frames reach the file
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def problems(self):
        """Frames tshark calls malformed or flags with an error (tshark 4.0
        display-filter syntax; error severity is 0x00800000), plus frames whose
        summary says "Protocol Error": tshark 4.0's LTP dissector reports a
        bad segment that way without an expert item."""
        decode = []
        for p in self.ports:
            decode += ["-d", f"udp.port=={p},ltp"]
        r = subprocess.run(
            ["tshark", "-r", self.file, *decode, "-Y",
             "_ws.malformed || _ws.expert.severity >= 0x00800000"],
            capture_output=True, text=True, timeout=120, env=tool_env())
        assert r.returncode == 0, r.stderr
        summary = subprocess.run(
            ["tshark", "-r", self.file, *decode, "-Y", "ltp"],
            capture_output=True, text=True, timeout=120, env=tool_env())
        lines = summary.stdout.splitlines()
        bad = [ln for ln in lines if "Protocol Error" in ln or "Malformed" in ln]
        return "\n".join([r.stdout.strip()] + bad).strip(), len(lines)


def test_lossy_relay(tern_bin, node_dir):
    n, size = 30, 150_000
    counter, port, cjson = start_counter(tern_bin, node_dir, "--blocks", str(n))
    relay = LossyRelay(port, loss=0.05, seed=5326)
    relay.start()
    cap = None
    if shutil.which("tshark"):
        cap = Capture(node_dir, [relay.port, port])
    try:
        r, d = run_driver(tern_bin, node_dir, relay.port, "--blocks", str(n), "--size",
                          str(size), "--seg", "1400", "--window", "4")
    finally:
        rc, out, err, c = finish_counter(counter, cjson)
        relay.stop()
        if cap:
            cap.stop()
    assert r.returncode == 0, r.stdout + r.stderr
    assert rc == 0, out + err
    assert c["blocks"] == n and c["bytes"] == n * size and c["bad"] == 0
    assert relay.dropped > 0, "the relay dropped nothing"
    assert d["ltp"]["data_retx"] > 0, "losses should have caused retransmissions"
    if cap is None:
        pytest.skip("tshark is not installed: the lossy run was not dissected "
                    "(apt-get install tshark to check the wire format)")
    bad, frames = cap.problems()
    assert frames > 0, "tshark saw no LTP frames"
    assert bad == "", "tshark found malformed frames:\n" + bad


@pytest.mark.parametrize("seg", ["64000", "1400"])
def test_corrupted_data_is_caught(tern_bin, node_dir, seg):
    """LTP carries no checksum of its own: a byte flipped on the way reaches
    the client, and ltpcounter's check (fast path: the CRC the engine took on
    arrival, combined with the CRCs the block headers carry) must say so."""
    n, size = 20, 200_000
    counter, port, cjson = start_counter(tern_bin, node_dir, "--blocks", str(n), "--timeout",
                                         "4")
    relay = LossyRelay(port, loss=0.0, seed=1, corrupt_every=7)
    relay.start()
    try:
        run_driver(tern_bin, node_dir, relay.port, "--blocks", str(n), "--size", str(size),
                   "--seg", seg)
    finally:
        rc, out, err, c = finish_counter(counter, cjson)
        relay.stop()
    assert relay.corrupted > 0
    assert c["bad"] > 0, out + err
    assert c["blocks"] + c["bad"] <= n
    assert rc != 0, "the counter must fail when blocks arrived corrupt"
    assert "corrupt" in err
