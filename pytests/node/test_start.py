"""'tern start', 'tern stop' and 'tern status' as a new user meets them: a
start that fails says why and leaves the node directory as it was; a clean
stop takes its pid and ports files away; two starts at once name the ternd
that won; status and stop find the node in $TERN_NODE_DIR or the current
directory, as the bp tools do."""
import os
import re
import socket
import subprocess
import threading

import pytest

from tern.testing import bin_dir, lock_held, read_ports


def listing(d, sizes=True):
    """Every path under d (relative), with a file's size and a directory's
    marker: what a failing start must leave as it found it. Without sizes,
    names only, and store/ itself but not the files in it."""
    out = []
    for root, dirs, files in os.walk(d):
        rel = os.path.relpath(root, d)
        if not sizes and rel.split(os.sep)[0] == "store":
            continue  # the store's journal files turn over at each open
        for x in dirs:
            out.append(os.path.join(rel, x) + "/")
        for x in files:
            p = os.path.join(root, x)
            out.append(f"{os.path.join(rel, x)} {os.path.getsize(p)}" if sizes
                       else os.path.join(rel, x))
    return sorted(out)


def tern(*args, cwd=None, env=None, timeout=60):
    return subprocess.run([os.path.join(bin_dir(), "tern"), *map(str, args)], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=timeout)


def one_node(network, **kw):
    """A one-node network's host.rc written, not started."""
    net = network(1, **kw)
    net.write()
    return net


def edit_rc(net, old, new):
    with open(net[1].rc_path) as f:
        text = f.read()
    assert old in text, text
    with open(net[1].rc_path, "w") as f:
        f.write(text.replace(old, new, 1))


def line_of(net, text):
    with open(net[1].rc_path) as f:
        for i, line in enumerate(f, 1):
            if text in line:
                return i
    raise AssertionError(f"{text!r} not in the host.rc")


def failed_start(net, target=None, sizes=True):
    """'tern start' that must fail: returns its output; the node directory
    lists the same before and after (with sizes: not even a file grew)."""
    d = net.dir(1)
    before = listing(d, sizes)
    r = tern("start", target or net[1].rc_path)
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert not lock_held(d)
    after = listing(d, sizes)
    assert after == before, f"{out}\nbefore: {before}\nafter: {after}"
    return out


def test_parse_error_says_why_and_leaves_nothing(network):
    net = one_node(network)
    edit_rc(net, "a endpoint ipn:1.1 q", "a endpoint ipn:1.1 qq")
    n = line_of(net, "ipn:1.1 qq")
    out = failed_start(net)
    assert f"host.rc:{n}: endpoint rule 'qq'" in out, out
    assert "ternd.log" not in out, out  # no log was written: none to point at


def test_failure_after_parsing_leaves_nothing(network):
    """The LTP seat's port is taken: the node fails after the configuration
    was read (store, lock, log, ports all made by then), and the failure names
    the seat's line; nothing of it stays."""
    net = one_node(network)
    busy = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    busy.bind(("127.0.0.1", 0))
    try:
        port = busy.getsockname()[1]
        edit_rc(net, f"s 'udplsi 127.0.0.1:{net[1].port}'", f"s 'udplsi 127.0.0.1:{port}'")
        n = line_of(net, f"udplsi 127.0.0.1:{port}")
        out = failed_start(net)
    finally:
        busy.close()
    assert f"host.rc:{n}:" in out and "in use" in out, out


def test_failure_after_a_clean_run_leaves_what_was_there(network):
    """A node that ran once (its store, log and lock exist) and now fails:
    the store and log stay, nothing new is added."""
    net = one_node(network)
    assert tern("start", net[1].rc_path).returncode == 0
    r = tern("stop", net.dir(1))
    assert r.returncode == 0, r.stdout + r.stderr
    edit_rc(net, "a endpoint ipn:1.1 q", "a endpiont ipn:1.1 q")
    out = failed_start(net)
    assert "did you mean 'a endpoint'" in out, out


def test_start_does_not_create_a_missing_directory(node_dir):
    missing = os.path.join(node_dir, "nonexistent")
    r = tern("start", missing)
    assert r.returncode == 1
    assert not os.path.exists(missing), "tern start created the directory"
    assert "no such" in r.stderr.lower() and missing in r.stderr, r.stderr
    assert "ternd.log" not in r.stderr, r.stderr


def test_clean_stop_removes_pid_and_ports(network):
    net = one_node(network)
    # a stale ports file from a crashed run: its lines must not survive a start
    with open(os.path.join(net.dir(1), "ports"), "w") as f:
        f.write("bp-tcp tcp 9\nltp udp 9\n")
    r = tern("start", net[1].rc_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert read_ports(net.dir(1)) == {("ltp", "udp"): net[1].port}
    r = tern("stop", net.dir(1))
    assert r.returncode == 0, r.stdout + r.stderr
    left = os.listdir(net.dir(1))
    assert "ternd.pid" not in left and "ports" not in left, left


def test_two_starts_at_once_name_the_winner(network):
    """Several rounds of two 'tern start' at the same moment: one starts, the
    other says the node runs and names the ternd that does (never 'pid ?')."""
    net = one_node(network)
    for _ in range(4):
        gate = threading.Barrier(2)
        res = [None, None]

        def start(i):
            gate.wait()
            res[i] = tern("start", net[1].rc_path)

        ts = [threading.Thread(target=start, args=(i,)) for i in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        outs = [r.stdout + r.stderr for r in res]
        ok = [r for r in res if r.returncode == 0]
        assert len(ok) == 1, outs
        m = re.search(r"ternd pid (\d+)", ok[0].stdout)
        assert m, outs
        pid = m.group(1)
        loser = [o for r, o in zip(res, outs) if r.returncode != 0][0]
        assert "already running" in loser, outs
        assert f"ternd pid {pid})" in loser, outs
        r = tern("stop", net.dir(1))
        assert r.returncode == 0, r.stdout + r.stderr


def test_status_and_stop_find_the_node_as_bp_tools_do(network):
    net = one_node(network)
    assert tern("start", net[1].rc_path).returncode == 0
    env = dict(os.environ, TERN_NODE_DIR=net.dir(1))
    r = tern("status", "--once", env=env, cwd="/")
    assert r.returncode == 0 and "node 1 " in r.stdout, r.stdout + r.stderr
    env.pop("TERN_NODE_DIR")
    r = tern("status", "--once", env=env, cwd=net.dir(1))
    assert r.returncode == 0 and "node 1 " in r.stdout, r.stdout + r.stderr
    # neither: the message says where it looked and how to name a node
    r = tern("status", "--once", env=env, cwd="/")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "TERN_NODE_DIR" in r.stderr, r.stderr
    r = tern("stop", env=dict(env, TERN_NODE_DIR=net.dir(1)), cwd="/")
    assert r.returncode == 0, r.stdout + r.stderr
    assert not lock_held(net.dir(1))
    assert tern("start", net[1].rc_path).returncode == 0
    r = tern("stop", env=env, cwd=net.dir(1))
    assert r.returncode == 0, r.stdout + r.stderr
    assert not lock_held(net.dir(1))


def test_no_node_is_said_once(node_dir):
    """A directory no ternd serves: one message, not two saying it twice."""
    r = tern("status", node_dir, "--once")
    assert r.returncode == 1
    assert r.stderr.count("no ternd serves") == 1, r.stderr
    r = subprocess.run([os.path.join(bin_dir(), "bpstats"), "--node", node_dir],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode != 0
    assert r.stderr.count("no ternd serves") == 1, r.stderr


def test_another_node_number_on_a_store_is_refused(network):
    """A directory whose store holds node 1's bundles, started as node 5:
    refused, naming both numbers; the store is untouched."""
    net = one_node(network)
    assert tern("start", net[1].rc_path).returncode == 0
    assert tern("stop", net.dir(1)).returncode == 0
    with open(net[1].rc_path) as f:
        text = f.read()
    # node 5 with everything else of node 1's configuration
    text = text.replace("\n1 1\n", "\n1 5\n").replace("ipn:1.", "ipn:5.")
    text = text.replace("a induct ltp 1 ltpcli", "a induct ltp 5 ltpcli")
    with open(net[1].rc_path, "w") as f:
        f.write(text)
    # the store was opened to read whose it is (its journal files turn over),
    # and the log says why the start failed: nothing is added or removed
    out = failed_start(net, sizes=False)
    assert "store of node 1" in out and "node 5" in out, out


def test_warnings_shown_at_start(network):
    """What the configuration says that Tern does not act on is shown by
    'tern start' itself, with file:line, not only in the log."""
    net = one_node(network)
    net[1].extra["bpadmin"].append("a outduct ltp 7 tcpclo")
    net.write()
    n = line_of(net, "ltp 7 tcpclo")
    r = tern("start", net[1].rc_path)
    assert r.returncode == 0, r.stdout + r.stderr
    try:
        assert (f"tern: warning: {net[1].rc_path}:{n}: outduct ltp/7: command 'tcpclo' "
                f"is not 'ltpclo'") in r.stderr, r.stderr
    finally:
        tern("stop", net.dir(1))
