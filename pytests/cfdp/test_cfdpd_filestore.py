"""Every filestore request through a put to a real cfdpd, and path escapes
refused with nothing outside its filestore root changed: first with node 1
playing the sending entity itself, then through cfdpput --fs between two
cfdpd (every action, each failure status in words, requests-only puts, the
option errors, escapes).

In the first part node 1 plays the sending entity itself: a Python process on node 1 sends a class 1 Metadata PDU
(closure requested) carrying the requests, and the EOF, to ipn:2.65 as
bundles, and reads the Finished PDU cfdpd 2 answers with at ipn:1.65; the
filestore responses in it are decoded with tern.cfdp and compared with
what is on disk. Only cfdpd 2 runs."""
import json
import os

import pytest

from tern import bp, cfdp
from test_cfdpd import Cfdpd, pair, put, write_random  # noqa: F401 (pair: a fixture)

CREATE, DELETE, RENAME, APPEND, REPLACE, MKDIR, RMDIR, DENY_FILE, DENY_DIR = range(9)


@pytest.fixture
def receiver(network, add_report):
    net = network(2, seg=64000, qtime=0.01, endpoints=(1, 2, 3, 64, 65))
    net.start()
    d = Cfdpd(net.dir(2), "--inactivity", "30000")
    add_report(lambda: ("cfdpd 2 log", d.tail(80)))
    yield net, d
    d.stop()


def transaction(net, tsn, reqs, src_name=b"", dst_name=b"", data=b""):
    """Sends one class 1 transaction with closure from entity 1 (Metadata,
    the file data if any, EOF) and returns the Finished PDU decoded."""
    hdr = cfdp.Header(src=1, dst=2, tsn=tsn, mode=cfdp.UNACKNOWLEDGED)
    opts = [cfdp.fs_request(a, f, s) for a, f, s in reqs]
    pdus = [cfdp.metadata(hdr, file_size=len(data), src_name=src_name, dst_name=dst_name,
                          checksum_type=cfdp.CKSUM_CRC32C, closure=True, options=opts)]
    if data:
        pdus.append(cfdp.file_data(hdr, 0, data))
    pdus.append(cfdp.eof(hdr, checksum=cfdp.checksum(cfdp.CKSUM_CRC32C, data),
                         file_size=len(data)))
    with bp.Node(net.dir(1)) as n:
        rx = n.open("ipn:1.65")
        tx = n.open("ipn:1.64")
        for p in pdus:
            tx.send("ipn:2.65", p, lifetime_s=60)
        tx.flush(10_000)
        while True:
            got = rx.receive(15_000)
            assert got is not None, "no Finished from cfdpd 2 in 15 s"
            f = cfdp.decode(got.payload)
            if f["kind"] == cfdp.FINISHED and f["tsn"] == tsn:
                return f


def snapshot(path):
    """{relative name: (is_dir, size, mtime_ns, bytes for small files)} of
    everything under path."""
    out = {}
    for dirpath, dirs, files in os.walk(path):
        for n in dirs + files:
            p = os.path.join(dirpath, n)
            st = os.lstat(p)
            rel = os.path.relpath(p, path)
            body = None
            if os.path.isfile(p) and st.st_size < 4096:
                with open(p, "rb") as f:
                    body = f.read()
            out[rel] = (os.path.isdir(p), st.st_size, st.st_mtime_ns, body)
    return out


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def seed(root):
    """The files and directories the every-request tests act on."""
    for name, body in (("del.txt", b"delete me"), ("old.txt", b"rename me"),
                       ("a.txt", b"AAA"), ("b.txt", b"BBB"), ("r.txt", b"old content"),
                       ("s.txt", b"new content"), ("deny.txt", b"deny me")):
        write(os.path.join(root, name), body)
    os.makedirs(os.path.join(root, "rmd"))
    os.makedirs(os.path.join(root, "denyd"))


def test_every_filestore_request(receiver):
    net, d = receiver
    root = os.path.join(net.dir(2), "cfdp")
    seed(root)
    reqs = [(CREATE, b"new.txt", b""), (DELETE, b"del.txt", b""),
            (RENAME, b"old.txt", b"renamed.txt"), (APPEND, b"a.txt", b"b.txt"),
            (REPLACE, b"r.txt", b"s.txt"), (MKDIR, b"d1", b""), (RMDIR, b"rmd", b""),
            (DENY_FILE, b"deny.txt", b""), (DENY_FILE, b"absent.txt", b""),
            (DENY_DIR, b"denyd", b""), (DENY_DIR, b"absentd", b"")]
    # with a file: the requests run once it is complete; the last one moves it
    data = b"payload with requests\n"
    reqs.append((RENAME, b"in.txt", b"d1/in-moved.txt"))
    fin = transaction(net, 1, reqs, b"x.txt", b"in.txt", data)
    assert fin["condition"] == 0 and fin["delivery"] == 0, fin
    got = [(r["action"], r["status"], r["first"], r["second"]) for r in fin["responses"]]
    assert got == [(a, 0, f, s) for a, f, s in reqs], got
    assert read(os.path.join(root, "new.txt")) == b""
    assert not os.path.exists(os.path.join(root, "del.txt"))
    assert not os.path.exists(os.path.join(root, "old.txt"))
    assert read(os.path.join(root, "renamed.txt")) == b"rename me"
    assert read(os.path.join(root, "a.txt")) == b"AAABBB"
    assert read(os.path.join(root, "b.txt")) == b"BBB"
    assert read(os.path.join(root, "r.txt")) == b"new content"
    assert os.path.isdir(os.path.join(root, "d1"))
    assert not os.path.exists(os.path.join(root, "rmd"))
    assert not os.path.exists(os.path.join(root, "deny.txt"))
    assert not os.path.exists(os.path.join(root, "denyd"))
    assert not os.path.exists(os.path.join(root, "in.txt"))
    assert read(os.path.join(root, "d1", "in-moved.txt")) == data

    # the failures each action names (table 5-18), nothing changed by them
    before = snapshot(root)
    want = [(CREATE, 1), (DELETE, 1), (RENAME, 1), (RENAME, 2), (APPEND, 1), (APPEND, 2),
            (REPLACE, 1), (REPLACE, 2), (MKDIR, 1), (RMDIR, 1)]
    reqs = [(CREATE, b"nodir/x", b""), (DELETE, b"absent.txt", b""),
            (RENAME, b"absent.txt", b"z.txt"), (RENAME, b"a.txt", b"b.txt"),
            (APPEND, b"absent.txt", b"b.txt"), (APPEND, b"a.txt", b"absent.txt"),
            (REPLACE, b"absent.txt", b"b.txt"), (REPLACE, b"a.txt", b"absent.txt"),
            (MKDIR, b"nodir/sub", b""), (RMDIR, b"absentd", b"")]
    # one transaction each: after a failed request the rest are "not
    # performed" (15), which the last one checks
    for tsn, req in enumerate(reqs, 2):
        fin = transaction(net, tsn, [req])
        (r,) = fin["responses"]
        assert (r["action"], r["status"]) == want[tsn - 2], (req, r)
    fin = transaction(net, 50, [(DELETE, b"absent.txt", b""), (CREATE, b"late.txt", b"")])
    assert [r["status"] for r in fin["responses"]] == [1, 15], fin["responses"]
    assert snapshot(root) == before


ESCAPES = [b"../escape.txt", b"../../escape.txt", b"sub/../../escape.txt",
           b"/tmp/escape-abs.txt", b"..", b"../n2-victim.txt"]


def escape_guard(net):
    """Seeds node 2's filestore (in.txt, sub/) and a victim file beside it;
    returns a check that nothing outside the root, nor inside it, changed.
    (/tmp itself is shared with other tests: the absolute name is checked by
    name; the node directory's ternd files change on their own: its names
    are compared, and the victim's bytes and times exactly.)"""
    root = os.path.join(net.dir(2), "cfdp")
    parent = net.dir(2)
    write(os.path.join(parent, "n2-victim.txt"), b"outside the root")
    write(os.path.join(root, "in.txt"), b"inside")
    os.makedirs(os.path.join(root, "sub"))
    outside = [parent, os.path.dirname(parent)]
    names = {p: sorted(os.listdir(p)) for p in outside}
    victim = snapshot(parent)["n2-victim.txt"]
    inside = snapshot(root)

    def unchanged():
        assert {p: sorted(os.listdir(p)) for p in outside} == names
        assert snapshot(parent)["n2-victim.txt"] == victim
        assert snapshot(root) == inside
        assert not os.path.exists("/tmp/escape-abs.txt")
    return unchanged


def test_path_escapes_refused_nothing_outside_changed(receiver, node_dir):
    net, d = receiver
    unchanged = escape_guard(net)
    reqs = []
    for e in ESCAPES:
        reqs += [(CREATE, e, b""), (DELETE, e, b""), (RENAME, b"in.txt", e),
                 (RENAME, e, b"got.txt"), (APPEND, e, b"in.txt"), (APPEND, b"in.txt", e),
                 (REPLACE, e, b"in.txt"), (REPLACE, b"in.txt", e), (MKDIR, e, b""),
                 (RMDIR, e, b""), (DENY_FILE, e, b""), (DENY_DIR, e, b"")]
    for i in range(0, len(reqs), 12):
        fin = transaction(net, 10 + i, reqs[i:i + 12])
        for r in fin["responses"]:
            assert r["status"] != 0, f"{r} was performed"
    unchanged()
    # a file put under an escaping destination name is refused too
    for tsn, e in enumerate(ESCAPES[:4], 100):
        fin = transaction(net, tsn, [], b"x.bin", e, b"escaping data")
        assert fin["condition"] == 4 and fin["delivery"] == 1, (e, fin)  # filestore rejection
    unchanged()


# pair: two nodes, each with its cfdpd (cfdpput on node 1 sends the requests)


def fsput(d, *args, dest="2"):
    """cfdpput --wait --json with the given options, to entity 2 (no file)
    or with a file when args end with one: (exit code, JSON, stderr)."""
    r = d.tool("cfdpput", "--wait", "--json", *args, dest, check=False, timeout=60)
    out = json.loads(r.stdout) if r.stdout.strip() else {}
    return r.returncode, out, r.stderr


WORDS = {CREATE: "createFile", DELETE: "deleteFile", RENAME: "renameFile",
         APPEND: "appendFile", REPLACE: "replaceFile", MKDIR: "createDirectory",
         RMDIR: "removeDirectory", DENY_FILE: "denyFile", DENY_DIR: "denyDirectory"}


def spec(action, first, second=""):
    return f"{WORDS[action]}:{first}" + (f":{second}" if second else "")


def test_cfdpput_every_filestore_request(pair, node_dir):
    net, ds = pair
    root = os.path.join(net.dir(2), "cfdp")
    seed(root)
    reqs = [(CREATE, "new.txt"), (DELETE, "del.txt"), (RENAME, "old.txt", "renamed.txt"),
            (APPEND, "a.txt", "b.txt"), (REPLACE, "r.txt", "s.txt"), (MKDIR, "d1"),
            (MKDIR, "d1/with space"), (RMDIR, "rmd"), (DENY_FILE, "deny.txt"),
            (DENY_FILE, "absent.txt"), (DENY_DIR, "denyd"), (DENY_DIR, "absentd"),
            # the file itself is complete when the requests run: the last
            # one moves it into the directory made above
            (RENAME, "in.txt", "d1/in-moved.txt")]
    src = os.path.join(node_dir, "x.txt")
    data = b"payload with requests\n"
    write(src, data)
    args = [a for q in reqs for a in ("--fs", spec(*q))]
    rc, out, err = fsput(ds[1], *args, src, dest="2:in.txt")
    assert rc == 0, (out, err)
    assert out["delivered"] and out["checksum_verified"] and out["filestore_failed"] == 0
    got = [(f["action"], f["first"], f["second"], f["status_code"], f["status"])
           for f in out["filestore"]]
    assert got == [(WORDS[q[0]], q[1], q[2] if len(q) > 2 else "", 0, "successful")
                   for q in reqs], got
    assert read(os.path.join(root, "new.txt")) == b""
    assert not os.path.exists(os.path.join(root, "del.txt"))
    assert read(os.path.join(root, "renamed.txt")) == b"rename me"
    assert read(os.path.join(root, "a.txt")) == b"AAABBB"
    assert read(os.path.join(root, "r.txt")) == b"new content"
    assert os.path.isdir(os.path.join(root, "d1", "with space"))
    for gone in ("old.txt", "rmd", "deny.txt", "denyd", "in.txt"):
        assert not os.path.exists(os.path.join(root, gone)), gone
    assert read(os.path.join(root, "d1", "in-moved.txt")) == data

    # requests only (a metadata-only transaction), in words on a failure:
    # the first fails, the second is not performed, exit 1
    before = snapshot(root)
    rc, out, err = fsput(ds[1], "--fs", "deleteFile:absent.txt", "--fs", "createFile:late")
    assert rc == 1, (out, err)
    assert out["delivered"] and out["size"] == 0 and out["filestore_failed"] == 2, out
    assert [(f["status_code"], f["status"]) for f in out["filestore"]] == \
        [(1, "file does not exist"), (15, "not performed")], out
    assert snapshot(root) == before
    # each action's failure status, named (one put each: after a failure
    # the rest of a put is not performed)
    fails = [((CREATE, "nodir/x"), "create not allowed"),
             ((DELETE, "absent.txt"), "file does not exist"),
             ((RENAME, "absent.txt", "z.txt"), "old file name does not exist"),
             ((RENAME, "a.txt", "b.txt"), "new file name already exists"),
             ((APPEND, "absent.txt", "b.txt"), "file 1 does not exist"),
             ((APPEND, "a.txt", "absent.txt"), "file 2 does not exist"),
             ((REPLACE, "absent.txt", "b.txt"), "file 1 does not exist"),
             ((REPLACE, "a.txt", "absent.txt"), "file 2 does not exist"),
             ((MKDIR, "nodir/sub"), "directory cannot be created"),
             ((MKDIR, "d1"), "directory cannot be created"),  # already there
             ((RMDIR, "absentd"), "directory does not exist")]
    for q, words in fails:
        rc, out, err = fsput(ds[1], "--fs", spec(*q))
        assert rc == 1 and out["filestore"][0]["status"] == words, (q, out, err)
    assert snapshot(root) == before
    # text output: each request and its status in words
    r = ds[1].tool("cfdpput", "--wait", "--fs", "createDirectory:d2", "--fs",
                   "deleteFile:nothere", "2", check=False)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "filestore request 1, createDirectory d2: successful" in r.stdout, r.stdout
    assert ("cfdpput: filestore request 2, deleteFile nothere: file does not exist"
            in r.stderr), r.stderr
    assert os.path.isdir(os.path.join(root, "d2"))


def test_cfdpput_filestore_option_errors(pair):
    net, ds = pair
    cases = [(["--fs", "makeFile:x", "2"], "'makeFile' is not a filestore action"),
             (["--fs", "renameFile:x", "2"], "renameFile names two files"),
             (["--fs", "createFile:", "2"], "a name is 1 to 255 bytes"),
             (["--fs", "createFile:" + "n" * 256, "2"], "a name is 1 to 255 bytes"),
             (["--fs", "createFile:x", "2:name"], "names no file"),
             (["2"], "usage: cfdpput"),
             (["--priority", "urgent", "--fs", "createFile:x", "2"],
              "--priority is bulk, standard or expedited"),
             ([a for i in range(33) for a in ("--fs", f"createFile:f{i}")] + ["2"],
              "at most 32 filestore requests")]
    for args, text in cases:
        r = ds[1].tool("cfdpput", *args, check=False)
        assert r.returncode == 2 and text in r.stderr, (args, r.stderr)


def test_cfdpput_path_escapes_refused_nothing_outside_changed(pair):
    net, ds = pair
    unchanged = escape_guard(net)
    escapes = ["../../x", "../escape.txt", "sub/../../escape.txt", "/tmp/escape-abs.txt",
               "..", "../n2-victim.txt"]
    # every action with the first (the raw-PDU test above throws them all at
    # every action), the others at the two that create
    e = escapes[0]
    todo = [(MKDIR, e), (CREATE, e), (DELETE, e), (RENAME, "in.txt", e),
            (RENAME, e, "got.txt"), (APPEND, e, "in.txt"), (APPEND, "in.txt", e),
            (REPLACE, e, "in.txt"), (REPLACE, "in.txt", e), (RMDIR, e), (DENY_FILE, e),
            (DENY_DIR, e)]
    todo += [(a, x) for x in escapes[1:] for a in (MKDIR, CREATE)]
    for q in todo:
        rc, out, err = fsput(ds[1], "--fs", spec(*q))
        assert rc == 1, (q, out, err)
        (f,) = out["filestore"]
        assert f["status_code"] != 0 and "not allowed" in f["status"] or \
            f["status"] == "directory cannot be created", (q, f)
    unchanged()
