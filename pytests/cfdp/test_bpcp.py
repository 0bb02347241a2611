"""ION's bpcp / bpcpd command forms over cfdpd between two real ternd nodes
over LTP/UDP: files compared by SHA-256, -r of a tree whose directories
bpcp makes at the receiver (createDirectory requests), -S's priority, the option
checks, a copy to an entity nobody runs (fails non-zero, says why), and
bpcpd starting (or finding) the node's cfdpd."""
import os
import subprocess
import time

import pytest

from tern.testing import bin_dir
from test_cfdpd import Cfdpd, sha_file, write_random

OPTS = ("--ack-timer", "1000", "--nak-timer", "1000", "--inactivity", "30000")


@pytest.fixture
def pair(network, add_report):
    net = network(2, seg=64000, qtime=0.01)
    net.start()
    ds = {n: Cfdpd(net.dir(n), *OPTS) for n in (1, 2)}
    for n, d in ds.items():
        add_report(lambda d=d, n=n: (f"cfdpd {n} log", d.tail(80)))
    yield net, ds
    for d in ds.values():
        d.stop()


def bpcp(node, *args, timeout=50, cwd=None):
    """bpcp run as ION users run it: the node from $TERN_NODE_DIR, no -n."""
    env = dict(os.environ, TERN_NODE_DIR=node)
    return subprocess.run([os.path.join(bin_dir(), "bpcp")] + list(args), env=env,
                          capture_output=True, text=True, timeout=timeout, cwd=cwd)


def root(net, n):
    return os.path.join(net.dir(n), "cfdp")


def test_files_local_to_remote(pair, node_dir):
    net, ds = pair
    a = os.path.join(node_dir, "a.bin")
    b = os.path.join(node_dir, "b.txt")
    want_a = write_random(a, 3_000_017, "a")
    want_b = write_random(b, 1, "b")
    # one file to a named remote file
    r = bpcp(net.dir(1), "-L", "600", a, "2:copy.bin")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "checksum verified" in r.stdout, r.stdout
    assert sha_file(os.path.join(root(net, 2), "copy.bin")) == want_a
    # several files into the remote filestore's root ("2:"), -q says nothing
    r = bpcp(net.dir(1), "-q", "-C", "off", "-S", "1", a, b, "2:")
    assert r.returncode == 0 and r.stdout == "" and r.stderr == "", r.stdout + r.stderr
    assert sha_file(os.path.join(root(net, 2), "a.bin")) == want_a
    assert sha_file(os.path.join(root(net, 2), "b.txt")) == want_b
    # nothing staged is left behind
    assert os.listdir(os.path.join(root(net, 1), ".outbox")) == []


def test_recursive_tree(pair, node_dir):
    net, ds = pair
    tree = os.path.join(node_dir, "tree")
    files = {"top.bin": 70_001, "empty": 0, "sub/one.bin": 5_000, "sub/deep/two.bin": 123,
             "sub/deep/er/three.bin": 65_537, "other/four.bin": 1}
    want = {rel: write_random(os.path.join(tree, rel), size, rel)
            for rel, size in files.items()}
    os.makedirs(os.path.join(tree, "emptydir"))
    os.symlink("top.bin", os.path.join(tree, "link"))  # skipped, as ION's bpcp does
    # only the destination directory exists at the receiver (cp -r into
    # it); bpcp makes in/tree and every directory below it with
    # createDirectory filestore requests before the files go
    os.makedirs(os.path.join(root(net, 2), "in"))
    r = bpcp(net.dir(1), "-r", "-d", tree, "2:in")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "6 of 6 file(s) delivered and verified" in r.stdout, r.stdout
    assert "transaction 1." in r.stderr, "-d shows no transactions: " + r.stderr
    made = sorted(ln.split("2:")[1].split(":")[0] for ln in r.stderr.splitlines()
                  if ln.startswith("bpcp: mkdir ") and ln.endswith(": made"))
    assert made == ["in/tree", "in/tree/emptydir", "in/tree/other", "in/tree/sub",
                    "in/tree/sub/deep", "in/tree/sub/deep/er"], r.stderr
    dest = os.path.join(root(net, 2), "in", "tree")
    for rel, h in want.items():
        assert sha_file(os.path.join(dest, rel)) == h, rel
    assert os.path.isdir(os.path.join(dest, "emptydir"))
    assert not os.path.exists(os.path.join(dest, "link"))
    # again onto the tree that is now there: the directories exist (their
    # requests fail, which is no error), the files are replaced
    want["sub/one.bin"] = write_random(os.path.join(tree, "sub/one.bin"), 7_001, "again")
    r = bpcp(net.dir(1), "-r", tree, "2:in")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "6 of 6 file(s) delivered and verified" in r.stdout, r.stdout
    for rel, h in want.items():
        assert sha_file(os.path.join(dest, rel)) == h, rel
    # a destination directory that is not there: bpcp cannot make in/tree
    # inside it, and the files' puts are refused by the receiver
    r = bpcp(net.dir(1), "-r", tree, "2:nowhere")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "filestore rejection" in r.stderr and "sub/one.bin" in r.stderr, r.stderr
    assert not os.path.exists(os.path.join(root(net, 2), "nowhere"))
    # a directory without -r is refused
    r = bpcp(net.dir(1), tree, "2:x")
    assert r.returncode == 1 and "is a directory (use -r)" in r.stderr, r.stderr


def test_entity_nobody_runs_fails_with_a_clear_message(pair, node_dir):
    net, ds = pair
    a = os.path.join(node_dir, "lost.bin")
    write_random(a, 10_000, "lost")
    t0 = time.monotonic()
    r = bpcp(net.dir(1), a, "9:lost.bin")
    took = time.monotonic() - t0
    assert r.returncode == 1, r.stdout + r.stderr
    assert "lost.bin -> 9:lost.bin failed" in r.stderr, r.stderr
    assert "no answer from the receiver" in r.stderr, r.stderr
    assert "checksum verified" not in r.stdout
    print(f"gave up after {took:.1f} s: {r.stderr.strip()}")


def test_option_and_operand_errors(pair, node_dir):
    net, ds = pair
    a = os.path.join(node_dir, "o.bin")
    write_random(a, 10, "o")
    cases = [(["-S", "5", a, "2:x"], "-S wants 0 (bulk)"),
             (["-C", "maybe", a, "2:x"], "-C wants ON/OFF"),
             (["-L", "0", a, "2:x"], "-L wants a lifetime"),
             ([a, os.path.join(node_dir, "local-copy")], "both ends are local"),
             ([os.path.join(node_dir, "missing"), "2:x"], "No such file"),
             ([a], "usage: bpcp")]
    for args, text in cases:
        r = bpcp(net.dir(1), *args)
        assert r.returncode == 1 and text in r.stderr, (args, r.stderr)
    r = bpcp(net.dir(1), "-v")
    assert r.returncode == 0 and r.stdout.startswith("bpcp (Tern "), r.stdout
    # custody asked for: accepted with a warning, and the copy still happens
    r = bpcp(net.dir(1), "-C", "ON", a, "2:c.bin")
    assert r.returncode == 0 and "no BP custody transfer" in r.stderr, r.stderr
    # remote to local: a proxy put into this cfdpd's filestore
    back = os.path.join(os.path.realpath(root(net, 1)), "back.bin")
    r = bpcp(net.dir(1), "2:c.bin", back)
    assert r.returncode == 0 and "checksum verified" in r.stdout, r.stdout + r.stderr
    assert sha_file(back) == sha_file(a)
    r = bpcp(net.dir(1), "2:c.bin", os.path.join(node_dir, "out.bin"))
    assert r.returncode == 1 and "lands in cfdpd's filestore" in r.stderr, r.stderr


def test_bpcpd_starts_or_finds_cfdpd(network, node_dir):
    net = network(1)
    net.start()
    env = dict(os.environ, TERN_NODE_DIR=net.dir(1))
    exe = os.path.join(bin_dir(), "bpcpd")
    # cfdpd -v logs every PDU: into a file, since a pipe nobody reads
    # fills and stops it
    log = open(os.path.join(node_dir, "bpcpd.out"), "w+")
    p = subprocess.Popen([exe, "-d", "--"] + list(OPTS), env=env,
                         stdout=log, stderr=subprocess.STDOUT)
    try:
        # wait with cfdpstatus, which starts nothing: a bpcpd run before the
        # first one's cfdpd listens would become a cfdpd of its own
        status = os.path.join(bin_dir(), "cfdpstatus")
        deadline = time.monotonic() + 10
        while subprocess.run([status], env=env, capture_output=True,
                             timeout=10).returncode != 0:
            assert p.poll() is None, open(log.name).read()
            assert time.monotonic() < deadline, "cfdpd never answered"
            time.sleep(0.05)
        r = subprocess.run([exe], env=env, capture_output=True, text=True, timeout=10)
        assert r.returncode == 0, r.stdout + r.stderr
        assert f"cfdpd already serves {net.dir(1)} as CFDP entity 1" in r.stdout, r.stdout
        # bpcpd became cfdpd: the same process serves the node
        with open(f"/proc/{p.pid}/comm") as f:
            assert f.read().strip() == "cfdpd"
    finally:
        p.terminate()
        p.wait(timeout=10)
        log.close()
        out = open(log.name).read()
    assert p.returncode == 0, out
    assert "no cfdpd serves" in out and "stopping" in out, out
    # a node directory that does not exist
    r = subprocess.run([exe, "-n", os.path.join(node_dir, "nope")], capture_output=True,
                       text=True, timeout=10)
    assert r.returncode == 1 and "nope" in r.stderr, r.stderr


def test_unacknowledged_copies_go_class_1_with_closure(pair, node_dir):
    """bpcp -u (Tern's, for ION peers, which take no class 2): class 1 puts
    that still ask for a Finished, so "checksum verified" is the receiver's
    word; the receiving cfdpd logs the transactions as class 1."""
    net, ds = pair
    a = os.path.join(node_dir, "u.bin")
    want = write_random(a, 1_000_003, "u")
    r = bpcp(net.dir(1), "-u", a, "2:u.bin")
    assert r.returncode == 0 and "checksum verified" in r.stdout, r.stdout + r.stderr
    assert sha_file(os.path.join(root(net, 2), "u.bin")) == want
    assert "(class 1, " in ds[1].tail(50), ds[1].tail()
    rx = ds[2].tail(50)
    assert "(receiver, class 1, peer 1) finished: no error, data complete" in rx, rx


def test_remote_to_remote_copy(network, add_report, node_dir):
    """bpcp on node 1 copies node 2's file to node 3 (ION's
    'bpcp host1:file host2:file'): a proxy put request to entity 2 naming
    entity 3 as the destination; the file goes 2 -> 3 and the proxy put
    response comes back to 1, and bpcp exits 0 only then. A file entity 2
    does not have fails non-zero, naming it."""
    net = network(3, seg=64000, qtime=0.01)
    net.start()
    ds = {n: Cfdpd(net.dir(n), *OPTS) for n in (1, 2, 3)}
    for n, d in ds.items():
        add_report(lambda d=d, n=n: (f"cfdpd {n} log", d.tail(80)))
    try:
        want = write_random(os.path.join(root(net, 2), "far.bin"), 1_234_567, "far")
        r = bpcp(net.dir(1), "2:far.bin", "3:near.bin", timeout=90)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "2:far.bin -> 3:near.bin: delivered" in r.stdout, r.stdout
        assert sha_file(os.path.join(root(net, 3), "near.bin")) == want
        assert not os.path.exists(os.path.join(root(net, 1), "near.bin"))
        r = bpcp(net.dir(1), "2:missing.bin", "3:x.bin", timeout=90)
        assert r.returncode != 0, r.stdout + r.stderr
        assert "2:missing.bin failed" in r.stderr, r.stderr
        assert not os.path.exists(os.path.join(root(net, 3), "x.bin"))
        r = bpcp(net.dir(1), "2:far.bin", "2:again.bin")
        assert r.returncode != 0 and "within one remote entity" in r.stderr, r.stderr
        # the Python bindings' get(to=)
        from tern import cfdpd
        with cfdpd.Entity(net.dir(1)) as e:
            a = e.wait_answer(e.get(2, "far.bin", "py.bin", to=3), timeout=60)
        assert a["delivered"] and a["peer"] == 2, a
        assert sha_file(os.path.join(root(net, 3), "py.bin")) == want
    finally:
        for d in ds.values():
            d.stop()
