"""A sender on a node whose store is full (issue 18, item 8): the tools say so
on their progress line, `tern status` shows who waits, and SIGTERM stops a
blocked sender at once with its summary (docs/tools.md, "Signals").

Node 1 has a 1 MiB memory store and its only neighbour, node 2, never runs:
every bundle stays in the store, which fills after some 700 bundles of 1 kB."""
import os
import pty
import select
import signal
import subprocess
import time

from tern.testing import bin_dir

NOTE = "the node's store is full"


def tiny_store_node(network):
    net = network(2, durable=False)
    with open(os.path.join(net.nodes[1].dir, "node1.ionconfig"), "w") as f:
        f.write("configFlags 1\nheapWords 131072\n")  # 1 MiB, in memory
    net.start([1])
    return net


class PtyTool:
    """A tool whose stderr is a terminal (the progress line shows only there)."""

    def __init__(self, *args):
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen([os.path.join(bin_dir(), args[0]), *args[1:]],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=slave, text=True)
        os.close(slave)
        self.err = ""

    def read(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.master], [], [], 0.1)
            if not ready:
                if self.proc.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # the tool closed the terminal
                break
            if not chunk:
                break
            self.err += chunk.decode(errors="replace")

    def wait_for(self, text, timeout):
        deadline = time.monotonic() + timeout
        while text not in self.err and time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.read(0.2)
                break
            self.read(0.2)
        assert text in self.err, f"{text!r} not on stderr within {timeout} s:\n{self.err[-2000:]}"

    def stop(self, sig=signal.SIGTERM, within=1.5):
        """Sends sig; returns (stdout, seconds until the tool exited)."""
        t = time.monotonic()
        self.proc.send_signal(sig)
        try:
            out, _ = self.proc.communicate(timeout=30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.communicate()
        took = time.monotonic() - t
        self.read(0.3)
        os.close(self.master)
        assert took < within, f"exited {took:.2f} s after {sig.name}:\n{out}\n{self.err[-2000:]}"
        return out, took

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


def test_bpdriver_on_a_full_store_says_so_and_stops_on_sigterm(network):
    net = tiny_store_node(network)
    t = PtyTool("bpdriver", "100000", "ipn:1.1", "ipn:2.1", "-1000", "--node", net.dir(1))
    try:
        t.wait_for(NOTE, 30)
        # the progress line goes on while it waits, and says why
        last = t.err.rsplit("\r", 1)[-1]
        assert "bpdriver:" in last and "bundles" in last and NOTE in last, repr(last)
        status = net.status(1)
        assert "store full: 1 application(s) wait to send" in status, status
        assert "client_senders_waiting 1" in status, status
        out, took = t.stop()
    finally:
        t.kill()
    assert t.proc.returncode == 1
    assert "streaming mode" in out and "(SIGTERM)" in out and "bytes sent = " in out, out
    assert "not committed by the node (its store is full)" in t.err, t.err[-500:]
    # the node serves on, and says nobody waits any more
    status = net.status(1)
    assert "client_senders_waiting 0" in status, status


def test_bpsendfile_and_bpsource_on_a_full_store(network, node_dir):
    net = tiny_store_node(network)
    fill = PtyTool("bpdriver", "100000", "ipn:1.1", "ipn:2.1", "-1000", "--node", net.dir(1))
    try:
        fill.wait_for(NOTE, 30)
        fill.stop()
    finally:
        fill.kill()
    # the store stays full: the next sender waits at once, and says why
    path = os.path.join(node_dir, "f.bin")
    with open(path, "wb") as f:
        f.write(os.urandom(20000))
    t = PtyTool("bpsendfile", "ipn:1.2", "ipn:2.2", path, "--node", net.dir(1))
    try:
        t.wait_for(NOTE, 30)
        assert "bpsendfile:" in t.err.rsplit("\r", 1)[-1]
        t.stop()
    finally:
        t.kill()
    assert t.proc.returncode == 1
    assert "stopped by SIGTERM with 1 piece not yet committed by the node (its store is full)" \
        in t.err, t.err[-1000:]
    # bpsource (anonymous sends) has no progress line: it says it once
    t = PtyTool("bpsource", "ipn:2.1", "hello", "--node", net.dir(1))
    try:
        t.wait_for(NOTE, 30)
        t.stop()
    finally:
        t.kill()
    assert t.proc.returncode == 1
    assert "stopped by SIGTERM with 1 bundle not yet committed" in t.err, t.err[-1000:]


def test_bpsource_waiting_for_a_line_stops_on_sigterm(network):
    """bpsource reading lines from a pipe that stays silent: SIGTERM stops it
    at once with its summary. Before, it sat in getline(3) until the next
    line came (signals go to a sigwait thread, which could wake a blocked
    send but not a read of stdin); a second signal killed it without one."""
    net = network(2)
    net.start()
    p = subprocess.Popen([os.path.join(bin_dir(), "bpsource"), "ipn:2.1", "--node",
                          net.dir(1)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        p.stdin.write("first line\n")
        p.stdin.flush()
        (d,) = net.receive(2, "ipn:2.1", 1, timeout=30)
        assert d.payload == b"first line"
        t = time.monotonic()
        p.send_signal(signal.SIGTERM)
        try:  # stdin stays open (communicate would close it: an end of input)
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        took = time.monotonic() - t
        p.stdin.close()
        p.wait(timeout=30)
        err = p.stderr.read()
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert took < 1.5, f"exited {took:.2f} s after SIGTERM: {err}"
    assert p.returncode == 1, (p.returncode, err)
    assert "bpsource: stopped by SIGTERM" in err, err
