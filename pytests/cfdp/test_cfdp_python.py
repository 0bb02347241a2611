"""tern.cfdpd, the Python bindings of cfdpd's command socket, between two real
ternd nodes over LTP/UDP with their cfdpd: puts compared by SHA-256, the
event iterator (progress, then the outcome), cancel, suspend/resume,
status, and cfdpd's error texts raised as CfdpdError."""
import errno
import os
import time

import pytest

from tern.errors import ESTATE

from tern.cfdpd import COND_CANCEL, CfdpdError, Entity
from test_cfdpd import Cfdpd, sha_file, write_random


@pytest.fixture
def pair(network, add_report):
    net = network(2, seg=64000, qtime=0.01)
    net.start()
    opts = ("--ack-timer", "1000", "--nak-timer", "1000", "--inactivity", "30000")
    ds = {n: Cfdpd(net.dir(n), *opts) for n in (1, 2)}
    for n, d in ds.items():
        add_report(lambda d=d, n=n: (f"cfdpd {n} log", d.tail(80)))
    es = {n: Entity(net.dir(n)) for n in (1, 2)}
    yield net, ds, es
    for e in es.values():
        e.close()
    for d in ds.values():
        d.stop()


def test_put_events_then_outcome(pair):
    net, ds, es = pair
    e = es[1]
    assert e.entity == 1 and os.path.realpath(e.root) == os.path.realpath(
        os.path.join(net.dir(1), "cfdp"))
    size = 20_000_003
    want = write_random(os.path.join(e.root, "ev.bin"), size, "ev")
    txn = e.put("ev.bin", 2, "ev.bin")
    assert txn.startswith("1.")
    evs = list(e.events(txn, timeout=45))
    kinds = [ev["type"] for ev in evs]
    assert kinds[-1] == "finished" and kinds.count("finished") == 1, kinds
    prog = [ev for ev in evs if ev["type"] == "progress"]
    assert prog, f"no progress event before the end: {kinds}"
    assert all(ev["txn"] == txn and ev["size"] == size for ev in prog), prog
    sent = [ev["bytes"] for ev in prog]
    assert sent == sorted(sent), f"progress went backwards: {sent}"
    fin = evs[-1]
    assert fin["condition"] == "no error" and fin["delivery"] == "complete", fin
    assert fin["bytes"] == size and fin["file_status"] == "retained", fin
    assert sha_file(os.path.join(es[2].root, "ev.bin")) == want
    # a late wait still learns the outcome (cfdpd remembers finished ones)
    out = e.wait(txn, timeout=10)
    assert out["delivered"] and out["checksum_verified"] and out["cls"] == 2, out


@pytest.mark.parametrize("cls", [1, 2])
def test_put_outside_file_and_wait(pair, node_dir, cls):
    net, ds, es = pair
    src = os.path.join(node_dir, f"outside{cls}.bin")
    want = write_random(src, 1_234_567, f"o{cls}")
    txn = es[1].put(src, 2, f"sub{cls}.bin", cls=cls, closure=True, checksum=2)
    out = es[1].wait(txn, timeout=45)
    assert out["delivered"] is True and out["checksum_verified"] is True, out
    assert out["size"] == 1_234_567 and out["condition"] == "no error"
    assert sha_file(os.path.join(es[2].root, f"sub{cls}.bin")) == want
    assert os.listdir(os.path.join(es[1].root, ".outbox")) == [], "staged copy left"
    st = {t["txn"]: t for t in es[1].status()}
    assert txn not in st or st[txn]["state"] == "finished", st
    c = es[1].counters()
    assert c["entity"] == 1 and c["file_bytes_out"] >= 1_234_567, c


def test_class1_without_closure_is_not_verified(pair):
    net, ds, es = pair
    want = write_random(os.path.join(es[1].root, "nc.bin"), 4097, "nc")
    txn = es[1].put("nc.bin", 2, "nc.bin", cls=1, closure=False)
    out = es[1].wait(txn, timeout=30)
    assert out["checksum_verified"] is False, out
    deadline = time.monotonic() + 10
    dst = os.path.join(es[2].root, "nc.bin")
    while time.monotonic() < deadline and not (
            os.path.exists(dst) and os.path.getsize(dst) == 4097):
        time.sleep(0.05)
    assert sha_file(dst) == want


def _first_progress(it):
    for ev in it:
        assert ev["type"] != "finished", f"ended before any data moved: {ev}"
        if ev["type"] == "progress" and ev["bytes"] > 0:
            return ev
    pytest.fail("the events ended without progress")


def test_cancel_ends_with_the_cancel_condition(pair):
    net, ds, es = pair
    size = 60_000_000
    write_random(os.path.join(es[1].root, "big.bin"), size, "cancel")
    txn = es[1].put("big.bin", 2, "big.bin")
    it = es[1].events(txn, timeout=45)
    _first_progress(it)
    es[1].cancel(txn)
    rest = list(it)
    fin = rest[-1]
    assert fin["type"] == "finished", rest
    assert fin["condition_code"] == COND_CANCEL, fin
    assert fin["condition"] == "cancel request received", fin
    assert fin["delivery"] == "incomplete", fin
    out = es[1].wait(txn, timeout=10)
    assert out["delivered"] is False and out["condition_code"] == COND_CANCEL, out
    assert out["bytes"] < size, out
    with pytest.raises(CfdpdError) as ei:
        es[1].cancel(txn)  # over: cfdpd's own text comes through
    assert ei.value.rc == ESTATE and ei.value.msg.startswith(f"cancel {txn}: "), ei.value


def test_suspend_then_resume_completes(pair):
    net, ds, es = pair
    size = 60_000_001
    want = write_random(os.path.join(es[1].root, "sr.bin"), size, "sr")
    txn = es[1].put("sr.bin", 2, "sr.bin")
    _first_progress(es[1].events(txn, timeout=30))
    es[1].suspend(txn)
    st = {t["txn"]: t for t in es[1].status()}[txn]
    assert st["state"] == "suspended", st
    time.sleep(0.3)
    held = {t["txn"]: t for t in es[1].status()}[txn]["progress"]
    time.sleep(0.5)
    again = {t["txn"]: t for t in es[1].status()}[txn]
    assert again["progress"] == held and again["state"] == "suspended", (held, again)
    assert held < size, "the whole file went before the suspend: the test proves nothing"
    es[1].resume(txn)
    out = es[1].wait(txn, timeout=45)
    assert out["delivered"] and out["checksum_verified"], out
    assert sha_file(os.path.join(es[2].root, "sr.bin")) == want


def test_errors_carry_cfdpds_text(pair, node_dir):
    net, ds, es = pair
    with pytest.raises(CfdpdError) as ei:
        es[1].put("missing.bin", 2, "x")
    assert "no such file in the filestore" in ei.value.msg, ei.value.msg
    with pytest.raises(CfdpdError) as ei:
        es[1].put("../escape", 2, "x")
    assert "leaves the filestore root" in ei.value.msg, ei.value.msg
    with pytest.raises(CfdpdError) as ei:
        es[1].suspend("1.999999")
    assert "no transaction 1.999999" in ei.value.msg
    with pytest.raises(ValueError):
        es[1].resume("not-a-txn")
    with pytest.raises(CfdpdError) as ei:
        Entity(node_dir)  # a directory no cfdpd serves
    assert ei.value.rc == -errno.ECONNREFUSED and "no cfdpd serves" in ei.value.msg


def test_get_and_list(pair):
    net, ds, es = pair
    want = write_random(os.path.join(es[2].root, "d", "far.bin"), 300_001, "far")
    req = es[1].get(2, "d/far.bin", "near.bin", cls=2)
    out = es[1].wait_answer(req, timeout=30)
    assert out["delivered"] is True and out["peer"] == 2, out
    assert sha_file(os.path.join(es[1].root, "near.bin")) == want
    req = es[1].list(2, "d", "d.lst")
    out = es[1].wait_answer(req, timeout=30)
    assert out["delivered"] is True and out["answer"] == "directory listing", out
    with open(os.path.join(es[1].root, "d.lst"), errors="replace") as f:
        assert "far.bin" in f.read()


def test_put_with_priority_and_filestore_requests(pair, node_dir):
    net, ds, es = pair
    e = es[1]
    root2 = es[2].root
    with open(os.path.join(root2, "old.txt"), "wb") as f:
        f.write(b"to be renamed")
    src = os.path.join(node_dir, "fs.bin")
    want = write_random(src, 100_001, "fs")
    # a file with requests: both spellings of a request; the file is
    # complete when they run, so it can be moved into the new directory
    txn = e.put(src, 2, "fs.bin", priority="expedited",
                fs=["createDirectory:py", ("renameFile", "old.txt", "py/new.txt"),
                    ("renameFile", "fs.bin", "py/fs.bin")])
    assert next(t for t in e.status() if t["txn"] == txn)["priority"] == "expedited"
    out = e.wait(txn, timeout=30)
    assert out["delivered"] and out["checksum_verified"], out
    assert [(f["action"], f["status_code"], f["status"]) for f in out["fs"]] == [
        ("createDirectory", 0, "successful"), ("renameFile", 0, "successful"),
        ("renameFile", 0, "successful")], out["fs"]
    assert sha_file(os.path.join(root2, "py", "fs.bin")) == want
    with open(os.path.join(root2, "py", "new.txt"), "rb") as f:
        assert f.read() == b"to be renamed"
    # requests only: a metadata-only transaction, a failure's status in words
    txn = e.put(None, 2, None, priority="bulk",
                fs=[(5, "py"), "createFile:py/never"])  # 5: create directory
    out = e.wait(txn, timeout=30)
    assert out["delivered"] and out["size"] == 0, out
    assert [(f["status_code"], f["status"]) for f in out["fs"]] == [
        (1, "directory cannot be created"), (15, "not performed")], out["fs"]
    assert not os.path.exists(os.path.join(root2, "py", "never"))
    # refused before anything is sent
    with pytest.raises(ValueError, match="not a filestore action"):
        e.put(None, 2, None, fs=["makeFile:x"])
    with pytest.raises(ValueError, match="priority is one of"):
        e.put(src, 2, "x.bin", priority="urgent")
    with pytest.raises(ValueError, match="or neither and fs requests"):
        e.put(None, 2, None)
    with pytest.raises(ValueError, match="at most 32"):
        e.put(None, 2, None, fs=[f"createFile:f{i}" for i in range(33)])
    # a get's request may take a priority too; the file arrives as before
    with open(os.path.join(root2, "g.bin"), "wb") as f:
        f.write(b"get me" * 1000)
    req = e.get(2, "g.bin", "g-here.bin", priority="expedited")
    got = e.wait_answer(req, timeout=30)
    assert got["delivered"], got
    assert sha_file(os.path.join(e.root, "g-here.bin")) == sha_file(
        os.path.join(root2, "g.bin"))
