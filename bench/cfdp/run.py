#!/usr/bin/python3
"""CFDP node-to-node benchmark: run.py [options] <prefix> writes <prefix>.json and prints a summary.

Two real ternd nodes on 127.0.0.1 over BP/LTP/UDP (bench/bp's pair: its
host.rc files, ionconfig, spans and warm-up), each with its own cfdpd,
first with memory stores, then with durable ones:

  * baseline: bpdriver -> bpcounter between the same two nodes with bundles
    of the size cfdpd's file-data PDUs have (cfdpd's --max-pdu, 64,000 B),
    checked bundle by bundle, in the same run;
  * one 1 GiB (2^30 B) class 2 transfer of a file of random bytes (made once
    with os.urandom, hard-linked into the sender's filestore), timed from the
    put request (cfdp_ctl through tern.cfdpd) to the sender's Finished
    indication; the received file is compared by SHA-256; repeated;
  * 10,000 files of 1 kB (each its own random bytes), class 2, submitted
    through cfdp_ctl from a few connections at once (no process per file),
    timed from the first put to the moment the sender has no active
    transaction left; every received file compared by SHA-256.

"Memory stores" are ionconfig configFlags 1 on both nodes and cfdpd
--memory; "durable stores" are configFlags 3 (group commit) and cfdpd's own
durable store (its default: state committed and the received file
fdatasync'd before any directive goes out).

Sizes are decimal except the 1 GiB file: Gbit/s = 1e9 bit/s.
Progress goes to stderr (one \\r-updated line on a terminal).
"""
import argparse
import hashlib
import importlib.util
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))
from benchlib import PointFailed, Progress, bin_dir, machine, repeat_point, summary  # noqa: E402

# bench/bp's runner: the node pair, its ionconfig and its checked transfer.
_spec = importlib.util.spec_from_file_location("bench_bp_run",
                                               os.path.join(ROOT, "bench", "bp", "run.py"))
bprun = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bprun)

BIG = 1 << 30
SMALL_SIZE = 1000
SMALL_COUNT = 10_000
PDU = 64000  # cfdpd's default --max-pdu: the bundle size of a file-data PDU
SEG = 64000  # LTP segment size of the pair
SUBMITTERS = 8  # cfdp_ctl connections putting small files at once
# cfdpd's ACK and NAK timers stay at their 10 s default: the EOF waits behind up
# to a gigabyte of queued bundles, and a 1 s ACK timer runs out its limit first
CFDPD_OPTS = ["--inactivity", "120000"]

TARGETS = [  # metric, target, unit, text
    ("cfdp_1gib_gbps", 2.5, "Gbit/s", "1 GiB class 2, memory stores >= 2.5 Gbit/s"),
    ("cfdp_1gib_durable_gbps", 1.5, "Gbit/s", "1 GiB class 2, durable stores >= 1.5 Gbit/s"),
    ("cfdp_small_files_per_s", 2000.0, "files/s",
     "10,000 files of 1 kB, class 2, memory stores >= 2,000 files/s"),
]
ION = {"note": "ION 4.1.3's CFDP on the development machine, from the issue; not measured "
               "in this run: a 10 MB file in about 1.9 s including tool start",
       "gbps": 0.042}


def sha_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def make_big(path, prog):
    """The 1 GiB file of random bytes, once; returns its SHA-256."""
    h = hashlib.sha256()
    with open(path, "wb") as f:
        for i in range(BIG >> 20):
            if i % 128 == 0:
                prog.status(f"making the 1 GiB random file: {i} MiB")
            b = os.urandom(1 << 20)
            h.update(b)
            f.write(b)
    return h.hexdigest()


class Cfdpd:
    """One cfdpd on a node directory, log in <dir>/cfdpd.log."""

    def __init__(self, node_dir, memory):
        from tern.cfdpd import CfdpdError, Entity
        self.dir = node_dir
        self.log = open(os.path.join(node_dir, "cfdpd.log"), "ab")
        args = [os.path.join(bin_dir(), "cfdpd"), node_dir] + CFDPD_OPTS
        if memory:
            args.append("--memory")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 15
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"cfdpd {node_dir} exited {self.proc.returncode}: "
                                   f"{self.tail()}")
            try:
                self.entity = Entity(node_dir)
                break
            except CfdpdError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"cfdpd {node_dir} did not answer: {self.tail()}")
                time.sleep(0.05)

    def tail(self, n=15):
        try:
            with open(os.path.join(self.dir, "cfdpd.log"), errors="replace") as f:
                return "".join(f.readlines()[-n:]).strip()
        except OSError:
            return "(no log)"

    def stop(self):
        self.entity.close()
        bprun.kill_proc(self.proc)
        self.log.close()
        return self.proc.returncode


def cpu_of(pids):
    """CPU seconds (user + system) the running processes pids used so far."""
    tot = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                st = f.read().rsplit(")", 1)[1].split()
            tot += int(st[11]) + int(st[12])  # utime, stime (fields 14, 15)
        except (OSError, IndexError, ValueError):
            pass
    return tot / os.sysconf("SC_CLK_TCK")


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def with_cpu(transfer, pids):
    """transfer(size, count, timeout), its sample gaining the CPU seconds the
    nodes (pids) and the programs it ran (bpdriver, bpcounter: waited-for
    children) used, per GiB moved: a figure the machine's other load does not
    inflate as it does the wall time."""
    def run(size, count, timeout):
        c0 = cpu_of(pids) + children_cpu()
        smp = transfer(size, count, timeout)
        cpu = cpu_of(pids) + children_cpu() - c0
        smp["cpu_s"] = round(cpu, 3)
        smp["cpu_s_per_gib"] = round(cpu / (size * count / 2**30), 3)
        return smp
    return run


def delta(a, b):
    return {k: b[k] - a[k] for k in b if isinstance(b.get(k), int) and isinstance(a.get(k), int)}


def big_transfer(tx, rx, node1, node2, rep, want, prog, label, timeout, net=None,
                 nodes_pids=None):
    """One 1 GiB class 2 put; returns a sample. With net (durable nodes) the
    sample says how much of what the receiving node got its store freed
    before writing it (bench/bp's figure)."""
    unw0 = bprun.unwritten_mib(net, 2) if net else None
    src = os.path.join(node1, "cfdp", "big.bin")
    dst_name = f"big-{rep}.bin"
    dst = os.path.join(node2, "cfdp", dst_name)
    c0, r0 = tx.entity.counters(), rx.entity.counters()
    pids = [tx.proc.pid, rx.proc.pid] + list(nodes_pids or [])
    cpu0 = cpu_of(pids)
    t0 = time.monotonic()
    txn = tx.entity.put("big.bin", 2, dst_name)
    last = None
    for ev in tx.entity.events(txn, timeout=timeout):
        last = ev
        if ev["type"] == "progress":
            el = time.monotonic() - t0
            prog.status(f"{label}: {ev['bytes'] / 2**20:,.0f} of {BIG >> 20:,} MiB sent, "
                        f"{ev['bytes'] * 8 / el / 1e9 if el else 0:.2f} Gbit/s, "
                        f"resent {ev['resent']:,} B")
    secs = time.monotonic() - t0
    cpu = cpu_of(pids) - cpu0
    c1, r1 = tx.entity.counters(), rx.entity.counters()
    if not (last and last["type"] == "finished" and last["condition_code"] == 0
            and last["delivery"] == "complete"):
        raise PointFailed(f"transaction {txn} ended {last} (sender log: {tx.tail()})")
    prog.status(f"{label}: SHA-256 of the received file")
    got = sha_file(dst)
    if got != want:
        raise PointFailed(f"{dst}: SHA-256 {got} differs from the source's {want}")
    os.unlink(dst)
    del src
    out = {"txn": txn, "seconds": round(secs, 3), "gbps": BIG * 8 / secs / 1e9,
           "cpu_s": round(cpu, 3), "cpu_s_per_gib": round(cpu / (BIG / 2**30), 3),
           "sha256_verified": True, "sender": delta(c0, c1), "receiver": delta(r0, r1)}
    unw1 = bprun.unwritten_mib(net, 2) if unw0 is not None else None
    if unw1 is not None:
        out["rx_unwritten_fraction"] = round((unw1 - unw0) * 2**20 / BIG, 3)
    return out


def small_files(tx, rx, node1, node2, prog, label, timeout, count):
    """count files of SMALL_SIZE B, class 2; returns the point."""
    from tern.cfdpd import Entity
    sdir, rdir = os.path.join(node1, "cfdp", "small"), os.path.join(node2, "cfdp", "small")
    os.makedirs(sdir, exist_ok=True)
    os.makedirs(rdir, exist_ok=True)  # the receiver does not create directories
    prog.status(f"{label}: writing {count:,} source files")
    sums = []
    for i in range(count):
        b = os.urandom(SMALL_SIZE)
        with open(os.path.join(sdir, f"f{i:05d}"), "wb") as f:
            f.write(b)
        sums.append(hashlib.sha256(b).hexdigest())
    c0, r0 = tx.entity.counters(), rx.entity.counters()
    conns = [Entity(node1) for _ in range(SUBMITTERS)]
    errors, submitted = [], [0]
    lock = threading.Lock()

    def submit(k):
        try:
            for i in range(k, count, SUBMITTERS):
                conns[k].put(f"small/f{i:05d}", 2, f"small/f{i:05d}")
                with lock:
                    submitted[0] += 1
        except Exception as e:  # noqa: BLE001 - reported as the point's failure
            errors.append(f"put: {e}")

    t0 = time.monotonic()
    threads = [threading.Thread(target=submit, args=(k,)) for k in range(SUBMITTERS)]
    for t in threads:
        t.start()
    t_sub, c = None, None
    deadline = t0 + timeout
    while True:
        time.sleep(0.05)
        alive = any(t.is_alive() for t in threads)
        if not alive and t_sub is None:
            t_sub = time.monotonic() - t0
        c = tx.entity.counters()
        el = time.monotonic() - t0
        prog.status(f"{label}: {submitted[0]:,} put, {c['txns_active']:,} active, "
                    f"{el:.1f} s")
        if not alive and c["txns_active"] == 0:
            break
        if errors or time.monotonic() > deadline:
            break
    secs = time.monotonic() - t0
    for t in threads:
        t.join()
    for e in conns:
        e.close()
    c1, r1 = tx.entity.counters(), rx.entity.counters()
    if errors:
        raise PointFailed(f"{len(errors)} puts failed, first: {errors[0]}")
    if c["txns_active"]:
        raise PointFailed(f"{c['txns_active']} transactions still active after {timeout} s")
    prog.status(f"{label}: checking {count:,} received files")
    bad = 0
    for i, want in enumerate(sums):
        try:
            with open(os.path.join(rdir, f"f{i:05d}"), "rb") as f:
                ok = hashlib.sha256(f.read()).hexdigest() == want
        except OSError:
            ok = False
        bad += not ok
    if bad:
        raise PointFailed(f"{bad} of {count} received files missing or differing")
    shutil.rmtree(rdir)
    shutil.rmtree(sdir)
    return {"files": count, "file_bytes": SMALL_SIZE, "seconds": round(secs, 3),
            "submit_seconds": round(t_sub, 3), "files_per_s": count / secs,
            "submitters": SUBMITTERS, "sha256_verified": count,
            "sender": delta(c0, c1), "receiver": delta(r0, r1)}


def perf_record(pids, path, secs):
    """perf record -g of the given processes for secs (None if perf fails)."""
    if not shutil.which("perf"):
        return None
    return subprocess.Popen(["perf", "record", "-g", "-o", path, "-p",
                             ",".join(str(p) for p in pids), "--", "sleep", str(secs)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def series(work, prog, durable, reps, big_src, big_sha, a):
    """One pair of nodes: BP baseline, the 1 GiB runs, the small files."""
    kind = "durable" if durable else "memory"
    out = {"store": kind, "bp": None, "big": None, "small": None, "failed": []}
    try:
        pair = bprun.Pair(work, SEG, durable)
    except Exception as e:  # noqa: BLE001 - the series fails, the run goes on
        out["failed"].append(f"nodes did not start: {e}")
        prog.line(f"FAILED {kind}: nodes did not start: {e}")
        return out
    ds = []
    try:
        try:
            bprun.warm_up(pair, prog, f"{kind}")
        except (PointFailed, RuntimeError) as e:
            prog.line(f"warm-up of {kind} failed: {e}")
        bp = {"seg": SEG, "size": PDU, "store": kind}
        bprun_guess = 3e9 / 8 / PDU
        npids = [pair.net.pid(1), pair.net.pid(2)]
        out["bp"] = repeat_point(with_cpu(pair.transfer, npids), prog,
                                 f"BP {kind}, {PDU:,} B bundles", PDU,
                                 reps, a.time, bprun_guess, bp, bprun.MAX_RUN_BYTES)
        if "failed" in bp:
            out["failed"].append(f"BP {kind}: {bp['failed']}")
        n1, n2 = pair.net.dir(1), pair.net.dir(2)
        ds = [Cfdpd(n1, not durable), Cfdpd(n2, not durable)]
        os.link(big_src, os.path.join(n1, "cfdp", "big.bin"))
        samples, big = [], {"store": kind, "bytes": BIG}
        for r in range(reps):
            label = f"CFDP 1 GiB {kind}, run {r + 1}/{reps}"
            rec = None
            if a.perf and r == reps - 1:
                rec = perf_record([ds[0].proc.pid, ds[1].proc.pid, pair.net.pid(1),
                                   pair.net.pid(2)], os.path.join(a.perf, f"{kind}.perf.data"),
                                  a.perf_secs)
            try:
                samples.append(big_transfer(ds[0], ds[1], n1, n2, r, big_sha, prog, label,
                                            a.timeout, pair.net if durable else None,
                                            npids))
            except (PointFailed, RuntimeError) as e:
                prog.line(f"FAILED {label}: {e}")
                big["failed"] = str(e)
                out["failed"].append(f"1 GiB {kind}: {e}")
                break
            finally:
                if rec:
                    rec.wait()
            s = samples[-1]
            unw = (f", receiving store wrote {1 - s['rx_unwritten_fraction']:.0%} of it"
                   if "rx_unwritten_fraction" in s else "")
            prog.line(f"{label}: {s['gbps']:.3f} Gbit/s ({s['seconds']:.2f} s, "
                      f"{s['cpu_s_per_gib']:.2f} CPU s, resent "
                      f"{s['sender'].get('file_bytes_resent', 0):,} B, SHA-256 verified{unw})")
        big.update(reps=len(samples), samples=samples,
                   gbps=summary([s["gbps"] for s in samples]),
                   cpu_s_per_gib=summary([s["cpu_s_per_gib"] for s in samples]))
        if out["bp"] and out["bp"].get("samples"):
            out["bp"]["cpu_s_per_gib"] = summary([x["cpu_s_per_gib"]
                                                  for x in out["bp"]["samples"]])
        prog.done += 1
        out["big"] = big
        label = f"CFDP {SMALL_COUNT:,} x 1 kB {kind}"
        rec = None
        if a.perf:
            rec = perf_record([ds[0].proc.pid, ds[1].proc.pid, pair.net.pid(1),
                               pair.net.pid(2)],
                              os.path.join(a.perf, f"{kind}-small.perf.data"), a.perf_secs)
        try:
            out["small"] = small_files(ds[0], ds[1], n1, n2, prog, label, a.timeout,
                                       SMALL_COUNT)
            s = out["small"]
            prog.line(f"{label}: {s['files_per_s']:,.0f} files/s ({s['seconds']:.2f} s, "
                      f"puts submitted in {s['submit_seconds']:.2f} s, all SHA-256 verified)")
        except (PointFailed, RuntimeError) as e:
            prog.line(f"FAILED {label}: {e}")
            out["small"] = {"failed": str(e)}
            out["failed"].append(f"small files {kind}: {e}")
        finally:
            if rec:
                rec.wait()
        prog.done += 1
    finally:
        for d in ds:
            rc = d.stop()
            if rc not in (0, -15):
                out["failed"].append(f"cfdpd {d.dir} exited {rc}: {d.tail()}")
        problems = pair.close()
        if problems:
            out["failed"].append("nodes: " + "; ".join(problems))
    return out


def main():
    global BIG, SMALL_COUNT
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("prefix")
    ap.add_argument("--reps", type=int, default=3, help="1 GiB repetitions (default 3)")
    ap.add_argument("--quick", action="store_true", help="1 repetition")
    ap.add_argument("--time", type=float, default=2.0,
                    help="intended seconds per BP baseline run (default 2)")
    ap.add_argument("--timeout", type=float, default=300.0,
                    help="seconds a transfer (or the small files) may take (default 300)")
    ap.add_argument("--perf", metavar="DIR",
                    help="perf record -g cfdpd and ternd of both nodes during the last "
                         "1 GiB run of each store mode and the small files, into "
                         "DIR/<store>.perf.data and DIR/<store>-small.perf.data")
    ap.add_argument("--perf-secs", type=float, default=4.0)
    ap.add_argument("--only", choices=("memory", "durable"), help="one store mode only")
    ap.add_argument("--keep", action="store_true", help="keep the node directories")
    ap.add_argument("--big-mib", type=int, default=1024,
                    help="size of the big file in MiB (default 1024; the metrics assume it)")
    ap.add_argument("--small-count", type=int, default=SMALL_COUNT)
    ap.add_argument("--cfdpd-opt", action="append", default=[], metavar="OPT",
                    help="one more cfdpd option for both nodes (repeatable), e.g. "
                         "--cfdpd-opt=--copy-pdus to measure the copying path")
    ap.add_argument("--agg-s", type=float, default=0.01,
                    help="LTP aggregation time limit of the spans, s (default 0.01; "
                         "bench/bp's pair has 1: a directive (EOF, ACK, Finished) rides "
                         "a small bundle that waited that long before leaving)")
    a = ap.parse_args()
    CFDPD_OPTS.extend(a.cfdpd_opt)
    bprun.AGG_S = a.agg_s
    BIG, SMALL_COUNT = a.big_mib << 20, a.small_count
    reps = 1 if a.quick else a.reps
    for tool in ("ternd", "tern", "bpdriver", "bpcounter", "cfdpd"):
        if not os.access(os.path.join(bin_dir(), tool), os.X_OK):
            sys.exit(f"bench/cfdp: {os.path.join(bin_dir(), tool)} not built (make build)")
    os.environ.setdefault("TERN_BUILD_DIR", os.path.dirname(bin_dir()))
    os.environ.setdefault("TERN_LIB_DIR", os.path.join(os.path.dirname(bin_dir()), "lib"))
    if a.perf:
        os.makedirs(a.perf, exist_ok=True)

    t_start = time.monotonic()
    modes = [m for m in ("memory", "durable") if not a.only or a.only == m]
    prog = Progress("bench_cfdp", 3 * len(modes))
    mach = machine()
    work = tempfile.mkdtemp(prefix="cfdp-bench.", dir=os.environ.get("TERN_TMP", "/tmp"))
    prog.line(f"{mach['cpu']}, {mach['cores']} cores, {mach['kernel']}; node dirs in {work}")
    res, failed = {}, []
    try:
        big_src = os.path.join(work, "big.bin")
        big_sha = make_big(big_src, prog)
        prog.line(f"1 GiB source file of random bytes, SHA-256 {big_sha[:16]}...")
        for m in modes:
            res[m] = series(work, prog, m == "durable", reps, big_src, big_sha, a)
            failed += res[m]["failed"]
    finally:
        if not a.keep and not failed:
            shutil.rmtree(work, ignore_errors=True)
    mach["loadavg_end"] = os.getloadavg()[0]

    def g(m, part, key):
        p = (res.get(m) or {}).get(part) or {}
        v = p.get(key)
        return v["median"] if isinstance(v, dict) else v

    metrics = {
        "cfdp_1gib_gbps": g("memory", "big", "gbps"),
        "cfdp_1gib_durable_gbps": g("durable", "big", "gbps"),
        "cfdp_small_files_per_s": g("memory", "small", "files_per_s"),
        "cfdp_small_files_durable_per_s": g("durable", "small", "files_per_s"),
        "bp_same_bundles_gbps": g("memory", "bp", "gbps"),
        "bp_same_bundles_durable_gbps": g("durable", "bp", "gbps"),
    }
    for m, k in (("memory", "cfdp_1gib_fraction_of_bp"),
                 ("durable", "cfdp_1gib_durable_fraction_of_bp")):
        c, b = g(m, "big", "gbps"), g(m, "bp", "gbps")
        metrics[k] = c / b if c and b else None
    targets = {}
    for name, tv, unit, text in TARGETS:
        v = metrics[name]
        targets[name] = {"target": tv, "op": ">=", "value": v, "unit": unit, "text": text,
                         "met": v is not None and v >= tv}
    total = time.monotonic() - t_start
    out = {
        "benchmark": "cfdp", "metrics": metrics,
        "baselines": {"bp_same_bundles_gbps": metrics["bp_same_bundles_gbps"],
                      "bp_same_bundles_durable_gbps": metrics["bp_same_bundles_durable_gbps"]},
        "ion_reference": ION, "targets": targets, "series": res, "machine": mach,
        "config": {
            "nodes": "bench/bp's pair: two ternd on 127.0.0.1, LTP/UDP spans "
                     f"(segment {SEG} B, aggregation {bprun.AGG_SIZE} B / {bprun.AGG_S} s "
                     "(--agg-s), "
                     f"{bprun.MAX_EXPORT} export sessions), warmed up with "
                     f"{bprun.WARM_BYTES // 1000000} MB of 1 MB bundles",
            "memory_store": "ionconfig configFlags 1 on both nodes, cfdpd --memory",
            "durable_store": "ionconfig configFlags 3 (group commit), cfdpd's durable store",
            "cfdpd": " ".join(CFDPD_OPTS) + f" (max PDU {PDU} B, the default)",
            "big": "1 GiB (2^30 B) of os.urandom bytes, class 2, put via cfdp_ctl "
                   "(tern.cfdpd) -> sender's Finished indication; received file SHA-256 "
                   "compared; Gbit/s = 2^30 x 8 / seconds / 1e9",
            "small": f"{SMALL_COUNT} files of {SMALL_SIZE} B random bytes, class 2, put "
                     f"via {SUBMITTERS} cfdp_ctl connections at once; timed first put -> "
                     "sender txns_active 0 (polled every 50 ms); every received file "
                     "SHA-256 compared",
            "baseline": f"bpdriver -> bpcounter, {PDU} B bundles, same pair, checked",
            "reps": reps,
        },
        "failed": failed, "total_seconds": round(total, 1),
    }
    with open(a.prefix + ".json", "w") as f:
        json.dump(out, f, indent=2)
        f.write("\n")

    print(f"CFDP over BP/LTP/UDP, cfdpd on two real nodes on 127.0.0.1: {mach['cpu']}, "
          f"{mach['cores']} cores (load {mach['loadavg_start']:.1f} -> "
          f"{mach['loadavg_end']:.1f})")
    print(f"{'store':>8} {'BP 64 kB Gbit/s':>16} {'1 GiB Gbit/s':>13} {'min':>6} {'max':>6} "
          f"{'of BP':>6} {'1 kB files/s':>13}")
    for m in modes:
        bpv, bg = g(m, "bp", "gbps"), (res[m].get("big") or {}).get("gbps") or {}
        sm = g(m, "small", "files_per_s")

        def f_(v, w, p=3):
            return f"{v:>{w}.{p}f}" if v is not None else f"{'n/a':>{w}}"
        print(f"{m:>8} {f_(bpv, 16)} {f_(bg.get('median'), 13)} {f_(bg.get('min'), 6, 2)} "
              f"{f_(bg.get('max'), 6, 2)} "
              f"{f_(bg['median'] / bpv * 100 if bg.get('median') and bpv else None, 5, 0)}% "
              f"{f_(sm, 13, 0)}")
    for m in modes:
        bc = ((res[m].get("bp") or {}).get("cpu_s_per_gib") or {}).get("median")
        cc = ((res[m].get("big") or {}).get("cpu_s_per_gib") or {}).get("median")
        if bc and cc:
            print(f"{m:>8} CPU seconds per GiB (both nodes' ternd + cfdpd / bpdriver + "
                  f"bpcounter): BP {bc:.2f}, CFDP {cc:.2f} ({cc / bc:.2f} x BP's)")
    print("targets:")
    for name, t in targets.items():
        v = t["value"]
        print(f"  {'met   ' if t['met'] else 'MISSED'} {t['text']}: "
              + ("n/a" if v is None else f"{v:,.3f} {t['unit']}"))
    print(f"total run time {total:.0f} s")
    if failed:
        print("FAILED:\n  " + "\n  ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
