#!/usr/bin/python3
"""BP over TCP benchmark: run.py [options] <prefix> writes <prefix>.json and prints a table.

Real ternd processes on 127.0.0.1 (tern.testing.TcpNetwork writes their
host.rc files; started with build/bin/ternd), memory stores:

  * throughput: bpdriver (streaming) on node 1 -> ternd -> TCP convergence
    layer -> ternd -> bpcounter on node 2, bundles of 1 kB .. 5 MB, over
    TCPCLv4 ("tcp"), STCP and MTCP (one pair of nodes per flavour, kept
    running across its runs after an unmeasured warm-up); bpcounter counts
    every bundle and checks its CRC-32C;
  * the raw TCP baseline in the same run (build/bin/bench_tcpcl: one TCP
    connection on 127.0.0.1 with TCP_NODELAY, 1 MB and 1 kB writes);
  * round trip: bpping on node 1 -> bpecho on node 3 and back over each
    flavour, 100 B payloads, one bundle every 2 ms (median and p99 of the
    per-reply RTTs bpping prints).

TCPCLv3 is not measured: a Tern outduct speaks v4 to a Tern induct (it
falls back to v3 only when the peer answers v3), so two Tern nodes never
use v3.

A run with a missing, corrupt or duplicated bundle fails its point loudly;
the JSON is still written and the exit status is 1. Sizes are decimal:
1 kB = 1,000 B, 1 MB = 1e6 B, Gbit/s = 1e9 bit/s. Progress goes to stderr.
"""
import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))
from benchlib import (PointFailed, Progress, bin_dir, human, machine, repeat_point,  # noqa: E402
                      summary)
from tern.testing import TcpNetwork  # noqa: E402

# bench/bp's runner: its checked transfer (bpdriver -> bpcounter), bpping
# parsing and ionconfig writer are the same for any convergence layer.
_spec = importlib.util.spec_from_file_location("bench_bp_run",
                                               os.path.join(ROOT, "bench", "bp", "run.py"))
bprun = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bprun)

FLAVOURS = ["tcp", "stcp", "mtcp"]
NAMES = {"tcp": "TCPCLv4", "stcp": "STCP", "mtcp": "MTCP"}
SIZES = [1000, 4000, 16000, 64000, 256000, 1000000, 2000000, 5000000]
QUICK_SIZES = [1000, 64000, 1000000]
PING_SIZE = 100
PING_INTERVAL = 0.002
HEAP_BYTES = int(os.environ.get("TERN_BENCH_HEAP_MB", "512")) << 20
WARM_BYTES = 2 * HEAP_BYTES // 1000000 * 1000000
MAX_RUN_BYTES = 2_000_000_000
CONTACT_RATE = 12_500_000_000  # B/s in the contact plan: not a limit here
GUESS_GBPS = 6.0               # these two size a point's first run only
GUESS_BUNDLES_PER_S = 100_000

TARGETS = [  # metric, op, target, unit, text
    ("bp_tcpclv4_1mb_gbps", ">=", 10.0, "Gbit/s", "1 MB bundles over TCPCLv4 >= 10 Gbit/s"),
    ("bp_tcpclv4_1kb_bundles_per_s", ">=", 100000.0, "bundles/s",
     "1 kB bundles over TCPCLv4 >= 100,000 bundles/s"),
    ("bpping_tcpclv4_rtt_ms_median", "<", 1.0, "ms",
     "bpping round trip over TCPCLv4 < 1 ms (median)"),
]
HDTN = {  # HDTN built on the development machine, from the issue (not this run)
    "bp_tcpclv4_1mb_gbps": 9.9, "bp_tcpclv4_1mb_gbps_200kb_mru": 1.3,
    "bp_stcp_1mb_gbps": 13.2, "bp_tcpclv4_1kb_bundles_per_s": 41000.0,
    "bp_stcp_1kb_bundles_per_s": 59500.0,
}


def make_net(work, flavour, numbers):
    base = tempfile.mkdtemp(prefix=f"{flavour}-{'-'.join(map(str, numbers))}.", dir=work)
    net = TcpNetwork(base, numbers=numbers, flavour=flavour, rate=CONTACT_RATE, owlt=0,
                     durable=False, via="ternd", endpoints=(1,))
    bprun.write_ionconfig(net, False, HEAP_BYTES)
    return net


class TcpPair(bprun.Pair):
    """Nodes 1 and 2 (1 -> 2 over flavour) kept running across the runs of
    one flavour; transfer() is bench/bp's checked bpdriver -> bpcounter run."""

    def __init__(self, work, flavour):  # noqa: super().__init__ builds LTP nodes
        self.flavour, self.seg, self.durable = flavour, None, False
        self.net = make_net(work, flavour, [1, 2])
        self.net.start()
        self.runs = 0


def tcp_point(pair, prog, label, size, reps, target_s):
    """Repeats a transfer, each sized to take about target_s."""
    return repeat_point(pair.transfer, prog, label, size, reps, target_s,
                        min(GUESS_GBPS * 1e9 / 8 / size, GUESS_BUNDLES_PER_S),
                        {"flavour": pair.flavour, "size": size}, MAX_RUN_BYTES)


def failed_points(flavour, sizes, msg):
    return [{"flavour": flavour, "size": s, "failed": msg, "reps": 0, "samples": [],
             "gbps": summary([]), "bundles_per_s": summary([])} for s in sizes]


def tcp_series(work, prog, flavour, sizes, reps, target_s):
    label0 = f"BP/{NAMES[flavour]}"
    try:
        pair = TcpPair(work, flavour)
    except Exception as e:  # noqa: BLE001 - the points fail, the run goes on
        prog.line(f"FAILED {label0}: nodes did not start: {e}")
        prog.done += len(sizes)
        return failed_points(flavour, sizes, f"nodes did not start: {e}")
    points = []
    try:
        prog.status(f"{label0}: warming the nodes up ({WARM_BYTES // 1000000} MB)")
        try:
            pair.transfer(1000000, WARM_BYTES // 1000000, timeout=300)
        except (PointFailed, RuntimeError) as e:
            prog.line(f"warm-up of {label0} failed: {e}")
        for size in sizes:
            points.append(tcp_point(pair, prog, f"{label0}, {human(size)} bundles", size,
                                    reps, target_s))
    finally:
        problems = pair.close()
    if problems:
        for p in points:
            p.setdefault("failed", "nodes: " + "; ".join(problems))
    return points


def raw_tcp(prog, size, reps, secs):
    b = os.path.join(bin_dir(), "bench_tcpcl")
    samples = []
    for r in range(reps):
        prog.status(f"raw TCP {human(size)} writes: run {r + 1}/{reps}")
        out = subprocess.run([b, str(size), str(secs)], stdout=subprocess.PIPE, text=True,
                             timeout=secs + 60, check=True).stdout
        kv = dict(w.split("=", 1) for w in out.split() if "=" in w)
        samples.append({"gbps": float(kv["gbps"]), "msgs_per_s": float(kv["msgs_per_s"]),
                        "bytes": int(kv["bytes"])})
    g = summary([s["gbps"] for s in samples])
    m = summary([s["msgs_per_s"] for s in samples])
    prog.done += 1
    prog.line(f"raw TCP {human(size)} writes: {g['median']:.2f} Gbit/s, "
              f"{m['median']:,.0f} writes/s (min {g['min']:.2f}, max {g['max']:.2f} Gbit/s)")
    return {"size": size, "seconds": secs, "reps": reps, "gbps": g, "msgs_per_s": m,
            "samples": samples}


def rtt_point(work, prog, flavour, count, reps):
    """bpping node 1 -> bpecho node 3 over flavour: RTTs per repetition."""
    b = bin_dir()
    label = f"bpping over {NAMES[flavour]}"
    point = {"flavour": flavour, "count": count, "payload": PING_SIZE,
             "interval_s": PING_INTERVAL, "runs": []}
    net = make_net(work, flavour, [1, 3])
    echo, e_out = None, None
    try:
        net.start()
        e_out = open(os.path.join(net.base, "bpecho.out"), "w")
        echo = subprocess.Popen([os.path.join(b, "bpecho"), "ipn:3.1", "--node", net.dir(3)],
                                stdout=e_out, stderr=e_out)
        time.sleep(0.2)
        prog.status(f"{label}: warm-up")
        bprun.ping(net, 50, 1 / PING_INTERVAL, 60)
        for rep in range(reps):
            prog.status(f"{label}: run {rep + 1}/{reps}, {count} bundles")
            rtts = bprun.ping(net, count, 1 / PING_INTERVAL, timeout=count * PING_INTERVAL * 4 + 60)
            point["runs"].append({"median_ms": statistics.median(rtts) / 1000,
                                  "p99_ms": bprun.pct(rtts, 99) / 1000,
                                  "min_ms": min(rtts) / 1000, "max_ms": max(rtts) / 1000,
                                  "replies": len(rtts)})
    except (PointFailed, RuntimeError, subprocess.SubprocessError) as e:
        point["failed"] = str(e)
        prog.line(f"FAILED {label}: {e}")
    finally:
        if echo is not None:
            bprun.kill_proc(echo)
        if e_out is not None:
            e_out.close()
        problems = net.shutdown()
    if problems:
        point.setdefault("failed", "nodes: " + "; ".join(problems))
    point["median_ms"] = summary([r["median_ms"] for r in point["runs"]])
    point["p99_ms"] = summary([r["p99_ms"] for r in point["runs"]])
    prog.done += 1
    if point["runs"]:
        prog.line(f"{label}: RTT median {point['median_ms']['median']:.3f} ms, p99 "
                  f"{point['p99_ms']['median']:.3f} ms ({len(point['runs'])} x {count})")
    return point


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("prefix")
    ap.add_argument("--reps", type=int, default=3, help="repetitions per point (default 3)")
    ap.add_argument("--quick", action="store_true",
                    help="1 repetition, sizes 1 kB, 64 kB and 1 MB only")
    ap.add_argument("--time", type=float, default=2.0,
                    help="intended seconds per throughput run (default 2)")
    ap.add_argument("--pings", type=int, default=1000,
                    help="bundles per bpping run (default 1000, one every 2 ms)")
    ap.add_argument("--raw-time", type=float, default=1.0)
    ap.add_argument("--flavours", default=",".join(FLAVOURS),
                    help="comma-separated subset of tcp,stcp,mtcp (default all)")
    ap.add_argument("--skip-sweep", action="store_true",
                    help="only the headline sizes (1 kB and 1 MB)")
    ap.add_argument("--keep", action="store_true", help="keep the node directories")
    a = ap.parse_args()
    reps = 1 if a.quick else a.reps
    sizes = QUICK_SIZES if a.quick else SIZES
    if a.skip_sweep:
        sizes = [1000, 1000000]
    flavours = [f for f in a.flavours.split(",") if f]
    bad = [f for f in flavours if f not in FLAVOURS]
    if bad:
        sys.exit(f"bench/tcpcl: --flavours {bad}: expected some of {FLAVOURS}")
    pings = min(a.pings, 300) if a.quick else a.pings

    for tool in ("ternd", "tern", "bpdriver", "bpcounter", "bpping", "bpecho", "bench_tcpcl"):
        if not os.access(os.path.join(bin_dir(), tool), os.X_OK):
            sys.exit(f"bench/tcpcl: {os.path.join(bin_dir(), tool)} not built (make build)")
    os.environ.setdefault("TERN_BUILD_DIR", os.path.dirname(bin_dir()))

    t_start = time.monotonic()
    prog = Progress("bench_tcpcl", 2 + len(flavours) * (len(sizes) + 1))
    mach = machine()
    work = tempfile.mkdtemp(prefix="tcpcl-bench.", dir=os.environ.get("TERN_TMP", "/tmp"))
    prog.line(f"{mach['cpu']}, {mach['cores']} cores, {mach['kernel']}; node dirs in {work}")
    failed, sweep, rtt = [], [], []
    try:
        raw = {s: raw_tcp(prog, s, reps, a.raw_time) for s in (1000000, 1000)}
        for fl in flavours:
            pts = tcp_series(work, prog, fl, sizes, reps, a.time)
            sweep += pts
            failed += [f"{fl} size {p['size']}: {p['failed']}" for p in pts if "failed" in p]
        for fl in flavours:
            p = rtt_point(work, prog, fl, pings, reps)
            rtt.append(p)
            if "failed" in p:
                failed.append(f"bpping {fl}: {p['failed']}")
    finally:
        if not a.keep and not failed:
            shutil.rmtree(work, ignore_errors=True)

    def med(fl, size, key="gbps"):
        p = next((x for x in sweep if x["flavour"] == fl and x["size"] == size), None)
        return p[key]["median"] if p else None

    def ping_ms(fl, key):
        p = next((x for x in rtt if x["flavour"] == fl), None)
        return p[key]["median"] if p else None

    r1m, r1k = raw[1000000]["gbps"]["median"], raw[1000]["msgs_per_s"]["median"]
    metrics = {
        "bp_tcpclv4_1mb_gbps": med("tcp", 1000000),
        "bp_tcpclv4_1kb_bundles_per_s": med("tcp", 1000, "bundles_per_s"),
        "bp_stcp_1mb_gbps": med("stcp", 1000000),
        "bp_stcp_1kb_bundles_per_s": med("stcp", 1000, "bundles_per_s"),
        "bp_mtcp_1mb_gbps": med("mtcp", 1000000),
        "bp_mtcp_1kb_bundles_per_s": med("mtcp", 1000, "bundles_per_s"),
        "bpping_tcpclv4_rtt_ms_median": ping_ms("tcp", "median_ms"),
        "bpping_tcpclv4_rtt_ms_p99": ping_ms("tcp", "p99_ms"),
        "bpping_stcp_rtt_ms_median": ping_ms("stcp", "median_ms"),
        "bpping_mtcp_rtt_ms_median": ping_ms("mtcp", "median_ms"),
        "raw_tcp_1mb_gbps": r1m,
        "raw_tcp_1kb_writes_per_s": r1k,
    }
    v4 = metrics["bp_tcpclv4_1mb_gbps"]
    metrics["bp_tcpclv4_1mb_fraction_of_raw"] = v4 / r1m if v4 and r1m else None
    targets = {}
    for name, op, tv, unit, text in TARGETS:
        v = metrics[name]
        ok = v is not None and (v >= tv if op == ">=" else v < tv)
        targets[name] = {"target": tv, "op": op, "value": v, "unit": unit, "text": text,
                         "met": ok}
    total = time.monotonic() - t_start
    out = {
        "benchmark": "tcpcl",
        "metrics": metrics,
        "baselines": {"raw_tcp_1mb_gbps": r1m, "raw_tcp_1kb_writes_per_s": r1k},
        "hdtn_reference": {"note": "HDTN built on the development machine, three "
                                   "processes (sender -> HDTN -> sink), from the issue; "
                                   "not measured in this run", **HDTN},
        "targets": targets,
        "sweep": sweep,
        "rtt": rtt,
        "raw_tcp": {str(s): raw[s] for s in raw},
        "machine": mach,
        "config": {
            "nodes": "real ternd processes on 127.0.0.1 (tern.testing.TcpNetwork host.rc "
                     "files, started with build/bin/ternd); one pair of nodes per flavour, "
                     f"kept running across its runs after an unmeasured "
                     f"{WARM_BYTES // 1000000} MB warm-up transfer; a new bpdriver and "
                     "bpcounter for every run",
            "throughput": "bpdriver <n> ipn:1.1 ipn:2.1 -<size> (streaming) -> bpcounter "
                          "ipn:2.1 <n>; 'a induct <fl> 127.0.0.1:<port> <fl>cli', "
                          "'a outduct <fl> 127.0.0.1:<port> <fl>clo'; every bundle counted "
                          "and CRC-32C checked by bpcounter",
            "goodput": "(bundles - 1) x size x 8 / bpcounter's first-to-last interval; "
                       "1 Gbit = 1e9 bit",
            "memory_store": f"ionconfig configFlags 1, heapWords {HEAP_BYTES // 8} "
                            f"({HEAP_BYTES >> 20} MiB)",
            "rtt": f"bpping -c {pings} -i {PING_INTERVAL} -p {PING_SIZE} ipn:1.1 -> bpecho "
                   "ipn:3.1 on a second pair of nodes per flavour, after a 50-bundle "
                   "warm-up; median and p99 (nearest rank) of each run's per-reply RTTs; "
                   "the metric is the median over repetitions",
            "raw": "bench_tcpcl <size> <seconds>: one TCP connection on 127.0.0.1, "
                   "TCP_NODELAY, send() of <size>-byte writes, recv() into 4 MiB",
            "v3": "not measured: Tern's outducts speak TCPCLv4 to Tern's inducts",
            "flavours": flavours, "sizes": sizes, "reps": reps,
            "seconds_per_run": a.time, "raw_seconds": a.raw_time,
        },
        "failed": failed,
        "total_seconds": round(total, 1),
    }
    with open(a.prefix + ".json", "w") as f:
        json.dump(out, f, indent=2)
        f.write("\n")

    print(f"BP over TCP, real nodes on 127.0.0.1: {mach['cpu']}, {mach['cores']} cores")
    print(f"raw TCP (one connection, TCP_NODELAY): 1 MB writes {r1m:.2f} Gbit/s, "
          f"1 kB writes {r1k:,.0f}/s")
    print(f"{'flavour':>8} {'bundle':>7} {'reps':>4} {'Gbit/s':>8} {'min':>8} {'max':>8} "
          f"{'bundles/s':>10}")
    for p in sweep:
        g = p["gbps"]
        if g["median"] is None:
            print(f"{NAMES[p['flavour']]:>8} {human(p['size']):>7}  FAILED: {p.get('failed')}")
            continue
        print(f"{NAMES[p['flavour']]:>8} {human(p['size']):>7} {p['reps']:>4} "
              f"{g['median']:>8.3f} {g['min']:>8.3f} {g['max']:>8.3f} "
              f"{p['bundles_per_s']['median']:>10,.0f}" + ("  FAILED" if "failed" in p else ""))
    for p in rtt:
        if p["median_ms"]["median"] is None:
            print(f"bpping {NAMES[p['flavour']]}: FAILED: {p.get('failed')}")
            continue
        print(f"bpping {NAMES[p['flavour']]:>8}: RTT median {p['median_ms']['median']:.3f} ms, "
              f"p99 {p['p99_ms']['median']:.3f} ms")
    print("targets:")
    for name, t in targets.items():
        v = t["value"]
        vs = "n/a" if v is None else f"{v:,.3f} {t['unit']}"
        print(f"  {'met   ' if t['met'] else 'MISSED'} {t['text']}: {vs}")
    print(f"total run time {total:.0f} s")
    if failed:
        print("FAILED:\n  " + "\n  ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
