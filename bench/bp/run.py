#!/usr/bin/python3
"""Node-to-node BP benchmark: run.py [options] <prefix> writes <prefix>.json and prints a table.

Real ternd processes on 127.0.0.1 (bindings/python/tern/testing.py's Network
writes their host.rc files and starts them with build/bin/ternd):

  * throughput: bpdriver (streaming) on node 1 -> BP over LTP over UDP ->
    bpcounter on node 2, bundles of 1 kB .. 5 MB at 64,000 B and 1,400 B
    segments, in-memory stores (ionconfig configFlags 1), the sweep ION
    publishes; the 1 MB / 64,000 B point again with durable stores
    (configFlags 3, group commit, files on the disk under the work dir);
  * the raw UDP baseline in the same run (build/bin/bench_ltp, the sendmmsg /
    recvmmsg pair of bench/ltp) at 64,000 B and 1,400 B datagrams;
  * relay latency: bpping on node 1 -> bpecho on node 3 and back, paced at
    500 .. 2,500 bundles/s of 100 B, once straight (1 <-> 3) and once
    through a relay (1 <-> 2 <-> 3), over the UDP convergence layer and over
    LTP (aggregation size 1, no aggregation delay). The latency the relay
    adds is measured per bundle on the wire (relaytap.py: a packet socket on
    lo timestamps each datagram as it is sent; added = the relay's egress -
    its ingress of the same bundle), for the request and the reply crossing
    and their sum per round trip; median, p99, min and max of that
    distribution, in microseconds. Needs root; without it the figure is
    null with the reason. The RTTs of both paths (as bpping printed them)
    are reported beside it as context.

Every throughput run is checked: bpcounter counts the bundles and checks the
CRC-32C of each; a run with a missing, corrupt or duplicated bundle (or a
driver that did not get every bundle committed) fails its point loudly, the
JSON is still written and the exit status is 1. A latency run with a lost
or corrupt reply fails the same way.

Sizes are decimal: 1 kB = 1,000 B, 1 MB = 1e6 B, Gbit/s = 1e9 bit/s.
Progress goes to stderr (one \\r-updated line on a terminal).
"""
import argparse
import json
import os
import re
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
from tern.testing import Network, log_tail  # noqa: E402

sys.path.insert(0, HERE)  # bench/tcpcl loads this file by path
import relaytap  # noqa: E402

SIZES = [1000, 4000, 16000, 64000, 256000, 1000000, 2000000, 5000000]
QUICK_SIZES = [1000, 64000, 1000000, 5000000]
SEGS = [64000, 1400]
RATES = [500, 1000, 1500, 2000, 2500]
QUICK_RATES = [1000]
PING_SIZE = 100

# Spans of the throughput runs: ION's usual aggregation (64,000 B or 1 s:
# 1 kB bundles travel in blocks of about 64 kB; a bundle above the size
# limit is a block of its own) and many export sessions.
AGG_SIZE, AGG_S, MAX_EXPORT = 64000, 1, 32
# LTP queuing latency (s) for both engines and spans: with one-way light time
# 0 the retransmission timer is 2 x QTIME, not the 2 s of ION's defaults, so a
# lost checkpoint or report costs milliseconds.
QTIME = float(os.environ.get("TERN_BENCH_QTIME", "0.1"))
# A durable receiver claims a block only once its bundles are on disk (the
# group commit's next flush, tens of ms when the disk is busy): its queuing
# latency says so, or the sender times out and resends while it waits.
DURABLE_QTIME = float(os.environ.get("TERN_BENCH_DURABLE_QTIME", "1"))
MAX_EXPORT = int(os.environ.get("TERN_BENCH_MAX_EXPORT", MAX_EXPORT))
# Memory-mode heap of each node (ionconfig heapWords x 8 bytes). A full store
# only slows bpdriver down (its SENDs wait), but every heap page costs a page
# fault the first time it is used, so the unmeasured warm-up moves more bytes
# than the heap holds: the measured runs then see a node in its steady state.
HEAP_BYTES = int(os.environ.get("TERN_BENCH_HEAP_MB", "512")) << 20
MAX_RUN_BYTES = 600_000_000
WARM_BYTES = 2 * HEAP_BYTES // 1000000 * 1000000
DURABLE_HEAP_BYTES = 256 << 20
CONTACT_RATE = 12_500_000_000  # B/s in the contact plan: not a limit here

# Rough goodput (Gbit/s) used only to size a point's first run; later runs
# are sized from the measured rate.
GUESS_GBPS = {64000: 5.0, 1400: 3.0}

TARGETS = [  # metric, op, target, unit, text
    ("bp_ltp_1mb_64k_gbps", ">=", 7.0, "Gbit/s",
     "1 MB bundles, 64,000 B segments, memory stores >= 7 Gbit/s"),
    ("bp_ltp_1mb_64k_durable_fraction", ">=", 0.7, "fraction",
     "1 MB bundles, 64,000 B segments, durable stores >= 70% of memory"),
    ("bp_ltp_1mb_1400_gbps", ">=", 1.5, "Gbit/s",
     "1 MB bundles, 1,400 B segments >= 1.5 Gbit/s"),
    ("bp_ltp_1kb_bundles_per_s", ">=", 100000.0, "bundles/s",
     "1 kB bundles >= 100,000 bundles/s"),
    ("relay_added_latency_us_median_1000", "<", 100.0, "us",
     "median latency a relay adds to a bundle at 1,000 bundles/s over UDP < 100 us"),
]
ION = {  # ION 4.1.3 on the development machine (the figures; not this run)
    "bp_ltp_1mb_64k_gbps": 3.5, "bp_ltp_1mb_1400_gbps": 0.11,
    "bp_ltp_1kb_bundles_per_s": 7900.0,
}


# ------------------------------------------------------------------ helpers





def pct(xs, q):
    """Nearest-rank percentile (bpping's definition)."""
    s = sorted(xs)
    k = max(1, -(-q * len(s) // 100))
    return s[int(k) - 1]


def write_ionconfig(net, durable, heap_bytes):
    """Replaces the ionconfig files Network wrote (it names them in host.rc
    when built with durable=False) with our store mode and heap size."""
    flags = 3 if durable else 1
    for node in net:
        with open(os.path.join(node.dir, f"node{node.number}.ionconfig"), "w") as f:
            f.write(f"# {'durable (SDR_IN_DRAM | SDR_IN_FILE)' if durable else 'memory'}"
                    f" store for bench/bp\nconfigFlags {flags}\n"
                    f"heapWords {heap_bytes // 8}\n")


def ltp_status(net, num):
    """Export/import cancels and retransmissions from node num's status."""
    try:
        text = net.status(num)
    except Exception as e:  # noqa: BLE001 - reported, not fatal
        return {"status_error": str(e)}
    out = {}
    m = re.search(r"retransmitted (\d+), exports done (\d+) cancelled (\d+), "
                  r"imports done (\d+) cancelled (\d+)", text)
    if m:
        out = {"ltp_retransmitted": int(m.group(1)), "exports_cancelled": int(m.group(3)),
               "imports_cancelled": int(m.group(5))}
    return out


def unwritten_mib(net, num):
    """MiB of blobs node num's durable store freed before writing them."""
    try:
        m = re.search(r"(\d+) MiB of blobs freed before they were written", net.status(num))
    except Exception:  # noqa: BLE001 - only a figure for the report
        return None
    return int(m.group(1)) if m else None


def kill_proc(p):
    if p.poll() is None:
        p.terminate()
        try:
            p.wait(5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


# ------------------------------------------------------------------ throughput

def make_pair(work, tag, seg, durable):
    """Nodes 1 and 2 with an LTP span each way, not started."""
    base = tempfile.mkdtemp(prefix=tag + ".", dir=work)
    net = Network(base, 2, protocol="ltp", seg=seg, agg_size=AGG_SIZE, agg_s=AGG_S,
                  max_export=MAX_EXPORT, rate=CONTACT_RATE, owlt=0,
                  qtime=DURABLE_QTIME if durable else QTIME, durable=False,
                  via="ternd", endpoints=(1,))
    write_ionconfig(net, durable, DURABLE_HEAP_BYTES if durable else HEAP_BYTES)
    return net


class Pair:
    """Two nodes (1 -> 2) kept running across the runs of one store mode and
    segment size: a long-running node's heap pages are already touched; a
    fresh node spends its first gigabyte mostly in page faults."""

    def __init__(self, work, seg, durable):
        self.seg, self.durable = seg, durable
        self.net = make_pair(work, f"{'durable' if durable else 'memory'}-{seg}", seg, durable)
        self.net.start()
        self.runs = 0

    def close(self):
        """Stops the nodes; returns the problems seen (a crashed node, ...)."""
        problems = self.net.shutdown()
        if not problems:
            shutil.rmtree(self.net.base, ignore_errors=True)
        return problems

    def transfer(self, size, count, timeout):
        """Streams count bundles of size bytes from bpdriver on node 1 to
        bpcounter on node 2 and checks every one. Returns a sample."""
        b, net = bin_dir(), self.net
        self.runs += 1
        tag = os.path.join(net.base, f"run{self.runs}")
        cj, dj = tag + ".counter.json", tag + ".driver.json"
        net.check_alive()
        unw0 = unwritten_mib(net, 2) if self.durable else None
        with open(tag + ".counter.out", "w") as co:
            counter = subprocess.Popen(
                [os.path.join(b, "bpcounter"), "ipn:2.1", str(count), "--node", net.dir(2),
                 "--json", cj, "--quiet", "--timeout", "15"], stdout=co, stderr=co)
        try:
            # bpcounter has the endpoint open before the first bundle comes
            time.sleep(0.1)
            t = time.monotonic()
            try:
                dr = subprocess.run(
                    [os.path.join(b, "bpdriver"), str(count), "ipn:1.1", "ipn:2.1",
                     str(-size), "--node", net.dir(1), "--json", dj, "--quiet"],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                    timeout=timeout)
            except subprocess.TimeoutExpired:
                raise PointFailed(f"bpdriver did not finish in {timeout} s; node 1 log: "
                                  f"{log_tail(net.dir(1), 3)}")
            try:
                counter.wait(timeout)
            except subprocess.TimeoutExpired:
                raise PointFailed("bpcounter did not finish after the driver")
            wall = time.monotonic() - t
        finally:
            kill_proc(counter)
        lstat = ltp_status(net, 1)
        if unw0 is not None:
            unw1 = unwritten_mib(net, 2)
            if unw1 is not None:
                lstat["rx_unwritten_fraction"] = round((unw1 - unw0) * 2**20 / (count * size), 3)
        net.check_alive()
        try:
            with open(cj) as f:
                c = json.load(f)
        except (OSError, ValueError) as e:
            raise PointFailed(f"no bpcounter JSON ({e})")
        try:
            with open(dj) as f:
                d = json.load(f)
        except (OSError, ValueError) as e:
            raise PointFailed(f"no bpdriver JSON ({e}): {dr.stderr.strip()[-300:]}")
        bad = []
        if dr.returncode != 0 or not d.get("ok"):
            bad.append(f"bpdriver exit {dr.returncode} ({d.get('reason')})")
        if counter.returncode != 0 or not c.get("ok"):
            bad.append(f"bpcounter exit {counter.returncode} ({c.get('reason')})")
        if c["bundles"] != count or c["verified"] != count or c["bytes"] != count * size:
            bad.append(f"{c['bundles']}/{count} bundles, {c['verified']} verified, "
                       f"{c['bytes']}/{count * size} bytes")
        if c["corrupt"] or c["duplicates"] or c["without_header"]:
            bad.append(f"{c['corrupt']} corrupt, {c['duplicates']} duplicates, "
                       f"{c['without_header']} without header")
        if bad:
            raise PointFailed("; ".join(bad) + f" (node dirs in {net.base})")
        secs = c["seconds"]
        # bpcounter times first bundle .. last: count - 1 bundles' worth of gaps
        ok = secs > 0 and count > 1
        return {"bundles": count, "bytes": c["bytes"], "seconds": secs,
                "gbps": (count - 1) * size * 8 / secs / 1e9 if ok else None,
                "bundles_per_s": (count - 1) / secs if ok else None,
                "counter_mbps": c["mbps"], "driver_mbps": d["mbps"],
                "driver_seconds": d["seconds"], "wall_s": round(wall, 3), **lstat}


def warm_up(pair, prog, label):
    """One unmeasured transfer of WARM_BYTES in 1 MB bundles (checked too)."""
    prog.status(f"{label}: warming the nodes up ({WARM_BYTES // 1000000} MB)")
    pair.transfer(1000000, WARM_BYTES // 1000000, timeout=120)


def bp_point(pair, prog, label, size, reps, target_s):
    """Repeats a transfer on pair's nodes, each sized to take about target_s."""
    point = {"seg": pair.seg, "size": size, "store": "durable" if pair.durable else "memory"}
    return repeat_point(pair.transfer, prog, label, size, reps, target_s,
                        GUESS_GBPS[pair.seg] * 1e9 / 8 / size, point, MAX_RUN_BYTES)


def bp_series(work, prog, seg, durable, sizes, reps, target_s):
    """Starts a pair, warms it up, measures every size; returns the points."""
    kind = "durable" if durable else "memory"
    points = []
    try:
        pair = Pair(work, seg, durable)
    except Exception as e:  # noqa: BLE001 - the point fails, the run goes on
        msg = f"nodes did not start: {e}"
        prog.line(f"FAILED {kind} seg {seg}: {msg}")
        return [{"seg": seg, "size": s, "store": kind, "failed": msg, "reps": 0,
                 "samples": [], "gbps": summary([]), "bundles_per_s": summary([])}
                for s in sizes]
    try:
        try:
            warm_up(pair, prog, f"BP/LTP {kind}, seg {seg} B")
        except (PointFailed, RuntimeError) as e:
            prog.line(f"warm-up of {kind} seg {seg} failed: {e}")
        for size in sizes:
            points.append(bp_point(pair, prog, f"BP/LTP {kind}, seg {seg} B, "
                                   f"{human(size)} bundles", size, reps, target_s))
    finally:
        problems = pair.close()
    if problems:
        for p in points:
            p.setdefault("failed", "nodes: " + "; ".join(problems))
    return points


# ------------------------------------------------------------------ raw UDP

def disk_write(prog, work, mb=512, reps=3):
    """The disk's durable write bandwidth where the durable stores live:
    mb MiB in 1 MiB writes, fdatasync'd (as the store syncs its blobs),
    median MB/s of reps. Two nodes on one disk each write every byte, so
    BP between them can go at most half this fast."""
    buf = os.urandom(1 << 20)
    vals = []
    for r in range(reps):
        prog.status(f"disk baseline: run {r + 1}/{reps}, {mb} MiB fdatasync'd")
        path = os.path.join(work, f"disk-baseline.{r}")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            t = time.monotonic()
            for _ in range(mb):
                os.write(fd, buf)
            os.fdatasync(fd)
            vals.append(mb * (1 << 20) / (time.monotonic() - t) / 1e6)
        finally:
            os.close(fd)
            os.unlink(path)
    prog.done += 1
    med_ = statistics.median(vals)
    prog.line(f"disk baseline: {med_:,.0f} MB/s fdatasync'd (runs {', '.join(f'{v:,.0f}' for v in vals)})")
    return {"mb_per_s": summary(vals), "mib": mb}


def durable_spread(mem, dur, disk):
    """The durable 1 MB point's repetitions beside the memory point's and the
    disk's: the durable fraction sits near its target, and only its spread
    tells a slow repetition (noise) from a slower build (regression)."""
    mg = [s["gbps"] for s in (mem or {}).get("samples", []) if s.get("gbps")]
    dg = [s["gbps"] for s in (dur or {}).get("samples", []) if s.get("gbps")]
    # both nodes' stores on one disk write every byte: half its bandwidth
    bound = [v / 2 * 8 / 1000 for v in disk["mb_per_s"]["values"]]
    if mg and len(mg) == len(dg):
        frac = [d / m for d, m in zip(dg, mg)]
        how = ("paired by repetition: durable run i / memory run i (same index; the "
               "memory runs came minutes earlier, so the pairing is by order)")
    elif mg and dg:
        frac = [d / statistics.median(mg) for d in dg]
        how = (f"{len(dg)} durable against {len(mg)} memory runs: each durable run / "
               f"the memory median")
    else:
        frac, how = [], "no durable or no memory run"
    bmed = statistics.median(bound) if bound else None
    mmed = statistics.median(mg) if mg else None
    return {
        "durable_gbps": summary(dg), "memory_gbps": summary(mg), "fraction": summary(frac),
        "fraction_method": how,
        "disk_bound_gbps": summary(bound),
        "disk_bound_method": "each disk baseline run's fdatasync'd MB/s / 2 (two nodes' "
                             "stores on one disk) x 8 / 1000",
        "durable_of_disk_bound": summary([d / bmed for d in dg] if bmed else []),
        "fraction_allowed_by_disk": bmed / mmed if bmed and mmed else None,
    }


def raw_udp(prog, size, reps, secs):
    b = os.path.join(bin_dir(), "bench_ltp")
    samples = []
    for r in range(reps):
        prog.status(f"raw UDP {size} B datagrams: run {r + 1}/{reps}")
        out = subprocess.run([b, str(size), str(secs)], stdout=subprocess.PIPE, text=True,
                             timeout=secs + 30, check=True).stdout
        kv = dict(w.split("=", 1) for w in out.split() if "=" in w)
        samples.append({"gbps": float(kv["gbps"]), "recv_pkts": int(kv["recv_pkts"]),
                        "sent_pkts": int(kv["sent_pkts"])})
    g = summary([s["gbps"] for s in samples])
    prog.done += 1
    prog.line(f"raw UDP {size} B: {g['median']:.2f} Gbit/s (min {g['min']:.2f}, "
              f"max {g['max']:.2f}, {reps} x {secs} s)")
    return {"datagram": size, "seconds": secs, "reps": reps, "gbps": g, "samples": samples}


# ------------------------------------------------------------------ latency

PING_LINE = re.compile(r"seq=(\d+) time=([0-9.]+) ms$")
PING_SUM = re.compile(r"(\d+) bundles transmitted, (\d+) received")


def make_latency_net(work, cl, relay):
    """Node 1 (bpping) and node 3 (bpecho), straight or through relay 2."""
    base = tempfile.mkdtemp(prefix=f"lat-{cl}-{'relay' if relay else 'direct'}.", dir=work)
    net = Network(base, numbers=[1, 2, 3] if relay else [1, 3], protocol=cl, seg=64000,
                  agg_size=1, agg_s=0, max_export=64, rate=CONTACT_RATE, owlt=1,
                  durable=False, via="ternd", endpoints=(1,))
    write_ionconfig(net, False, 256 << 20)
    return net


def ping(net, count, rate, timeout):
    """bpping at rate bundles/s; returns its per-reply RTTs in microseconds."""
    b = bin_dir()
    args = [os.path.join(b, "bpping"), "-c", str(count), "-i", f"{1.0 / rate:.6f}", "-p",
            str(PING_SIZE), "-W", "3", "--node", net.dir(1), "ipn:1.1", "ipn:3.1"]
    try:
        r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        raise PointFailed(f"bpping did not finish in {timeout} s")
    rtts, seqs = [], set()
    for ln in r.stdout.splitlines():
        m = PING_LINE.search(ln)
        if m:
            seqs.add(int(m.group(1)))
            rtts.append(float(m.group(2)) * 1000.0)
    m = PING_SUM.search(r.stdout)
    bad = []
    if r.returncode != 0:
        bad.append(f"bpping exit {r.returncode}: {r.stderr.strip()[-200:]}")
    if not m:
        bad.append("no bpping summary")
    else:
        sent, got = int(m.group(1)), int(m.group(2))
        if sent != count or got != count or len(rtts) != count or len(seqs) != count:
            bad.append(f"{got} of {sent} replies ({count} asked, {len(rtts)} RTT lines)")
    if "corrupt" in r.stdout or "DUP!" in r.stdout:
        bad.append("corrupt or duplicated replies")
    if bad:
        raise PointFailed("; ".join(bad))
    return rtts


def open_taps(nets):
    """A LoTap per network (both paths, so both carry the capture's small
    cost), or ({}, reason) where no packet socket can be had."""
    if os.geteuid() != 0:
        return {}, "not root: a packet socket on lo needs CAP_NET_RAW"
    taps = {}
    try:
        for path, net in nets.items():
            taps[path] = relaytap.LoTap([n.port for n in net])
    except OSError as e:
        for t in taps.values():
            t.close()
        return {}, f"packet socket on lo failed: {e}"
    return taps, None


def relay_added(net, cl, records, count):
    """The relay's added latency per bundle of one bpping run over net."""
    toward = {relaytap.REQUEST: net[3].port, relaytap.REPLY: net[1].port}
    try:
        return relaytap.added_latency(records, net[2].port, toward, cl, count)
    except ValueError as e:
        raise PointFailed(f"relay tap: {e}")


def latency_sweep(work, prog, cl, rates, reps, secs):
    """For each rate, reps pairs of runs (direct, then through the relay),
    the relay's added latency taken per bundle from the relay run."""
    b = bin_dir()
    nets = {"direct": make_latency_net(work, cl, False),
            "relay": make_latency_net(work, cl, True)}
    echoes = []
    points = []
    taps, no_tap = open_taps(nets)
    if no_tap:
        prog.line(f"latency {cl.upper()}: no per-bundle added latency ({no_tap})")
    try:
        for path, net in nets.items():
            net.start()
            e_out = open(os.path.join(net.base, "bpecho.out"), "w")
            echoes.append((subprocess.Popen(
                [os.path.join(b, "bpecho"), "ipn:3.1", "--node", net.dir(3)],
                stdout=e_out, stderr=e_out), e_out))
        time.sleep(0.2)
        for path, net in nets.items():  # warm up: first route lookups, first datagrams
            ping(net, 50, 500, 30)
        for rate in rates:
            count = max(200, int(rate * secs))
            label = f"latency {cl.upper()} {rate}/s"
            runs, failed = [], None
            pooled = {"round_trip": [], "request": [], "reply": []}
            for rep in range(reps):
                run = {}
                for path, net in nets.items():
                    prog.status(f"{label}: {path}, run {rep + 1}/{reps}, {count} bundles")
                    tap = taps.get(path)
                    if tap:
                        tap.start()
                    try:
                        rtts = ping(net, count, rate, timeout=secs * 4 + 30)
                        records, capture = tap.stop() if tap else (None, None)
                        tap = None
                        run[path] = {"median_us": statistics.median(rtts),
                                     "p99_us": pct(rtts, 99), "min_us": min(rtts),
                                     "max_us": max(rtts), "replies": len(rtts)}
                        if path == "relay" and records is not None:
                            ad = relay_added(net, cl, records, count)
                            for k in pooled:
                                pooled[k] += ad.pop("values_" + k)
                            run["added_us"] = {**ad, "capture": capture}
                    except PointFailed as e:
                        failed = f"{path}: {e}"
                        break
                    finally:
                        if tap:
                            tap.stop()
                if failed:
                    break
                # context only: two runs apart in time, so it can be negative
                run["rtt_diff_median_us"] = round(
                    run["relay"]["median_us"] - run["direct"]["median_us"], 1)
                run["rtt_diff_p99_us"] = round(
                    run["relay"]["p99_us"] - run["direct"]["p99_us"], 1)
                runs.append(run)
            for n in nets.values():
                n.check_alive()
            p = {"cl": cl, "rate": rate, "count": count, "payload": PING_SIZE,
                 "reps": len(runs), "runs": runs}
            for path in ("direct", "relay"):
                p[path] = {"median_us": summary([r[path]["median_us"] for r in runs]),
                           "p99_us": summary([r[path]["p99_us"] for r in runs])}
            p["rtt_diff_median_us"] = summary([r["rtt_diff_median_us"] for r in runs])
            p["rtt_diff_p99_us"] = summary([r["rtt_diff_p99_us"] for r in runs])
            if no_tap:
                p["added_us"] = {"unavailable": no_tap}
            else:
                tapped = [r["added_us"] for r in runs]
                p["added_us"] = {k: relaytap.distribution(v) for k, v in pooled.items()}
                # Each bundle crosses the relay once; a round trip is two
                # bundles. The target is per bundle (issue 17: "the added
                # latency per bundle"): requests and replies pooled.
                p["added_us"]["bundle"] = relaytap.distribution(pooled["request"]
                                                                + pooled["reply"])
                p["added_us"]["per_rep_median"] = summary(
                    [t["round_trip"]["median"] for t in tapped])
                p["added_us"]["per_rep_p99"] = summary([t["round_trip"]["p99"] for t in tapped])
                p["added_us"]["matched"] = sum(t["matched"] for t in tapped)
                p["added_us"]["expected"] = sum(t["expected"] for t in tapped)
                p["added_us"]["capture_dropped"] = sum(t["capture"]["dropped"] for t in tapped)
            if failed:
                p["failed"] = failed
                prog.line(f"FAILED {label}: {failed}")
            prog.done += 1
            if runs:
                ad = p["added_us"].get("round_trip")
                bd = p["added_us"].get("bundle")
                prog.line(f"{label}: RTT direct {p['direct']['median_us']['median']:.0f} us "
                          f"(p99 {p['direct']['p99_us']['median']:.0f}), relay "
                          f"{p['relay']['median_us']['median']:.0f} us (p99 "
                          f"{p['relay']['p99_us']['median']:.0f}); "
                          + (f"added per bundle {bd['median']:.0f} us median, "
                             f"{bd['p99']:.0f} us p99; "
                             f"per round trip {ad['median']:.0f} us median "
                             f"(reps {p['added_us']['per_rep_median']['min']:.0f}-"
                             f"{p['added_us']['per_rep_median']['max']:.0f}), "
                             f"{ad['p99']:.0f} us p99, {ad['min']:.0f}-{ad['max']:.0f} us; "
                             f"request {p['added_us']['request']['median']:.0f}, reply "
                             f"{p['added_us']['reply']['median']:.0f} us median; "
                             f"{p['added_us']['matched']}/{p['added_us']['expected']} "
                             f"round trips matched" if ad else "added latency not measured"))
            points.append(p)
    finally:
        for t in taps.values():
            t.close()
        for proc, f in echoes:
            kill_proc(proc)
            f.close()
        problems = []
        for net in nets.values():
            problems += net.shutdown()
    if problems:
        for p in points:
            p.setdefault("failed", "nodes: " + "; ".join(problems))
    else:
        for net in nets.values():
            shutil.rmtree(net.base, ignore_errors=True)
    return points, no_tap


# ------------------------------------------------------------------ main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("prefix")
    ap.add_argument("--reps", type=int, default=3, help="repetitions per point (default 3)")
    ap.add_argument("--quick", action="store_true",
                    help="1 repetition, fewer sizes and only 1,000 bundles/s for latency")
    ap.add_argument("--time", type=float, default=2.0,
                    help="intended seconds per throughput run (default 2)")
    ap.add_argument("--ping-time", type=float, default=2.0,
                    help="seconds of pinging per latency run (default 2)")
    ap.add_argument("--raw-time", type=float, default=1.0)
    ap.add_argument("--skip-latency", action="store_true")
    ap.add_argument("--skip-sweep", action="store_true",
                    help="only the headline points (1 kB and 1 MB)")
    ap.add_argument("--keep", action="store_true", help="keep the node directories")
    a = ap.parse_args()
    reps = 1 if a.quick else a.reps
    sizes = QUICK_SIZES if a.quick else SIZES
    if a.skip_sweep:
        sizes = [1000, 1000000]
    rates = QUICK_RATES if a.quick else RATES

    for tool in ("ternd", "tern", "bpdriver", "bpcounter", "bpping", "bpecho", "bench_ltp"):
        if not os.access(os.path.join(bin_dir(), tool), os.X_OK):
            sys.exit(f"bench/bp: {os.path.join(bin_dir(), tool)} not built (make build)")
    os.environ.setdefault("TERN_BUILD_DIR", os.path.dirname(bin_dir()))

    t_start = time.monotonic()
    steps = 3 + len(SEGS) * len(sizes) + 1 + (0 if a.skip_latency else 2 * len(rates))
    prog = Progress("bench_bp", steps)
    mach = machine()
    mach["root"] = os.geteuid() == 0
    work = tempfile.mkdtemp(prefix="bp-bench.", dir=os.environ.get("TERN_TMP", "/tmp"))
    prog.line(f"{mach['cpu']}, {mach['cores']} cores, {mach['kernel']}; node dirs in {work}")
    failed = []
    sweep, latency, no_tap = [], [], None
    try:
        raw = {s: raw_udp(prog, s, reps, a.raw_time) for s in SEGS}
        for seg in SEGS:
            pts = bp_series(work, prog, seg, False, sizes, reps, a.time)
            sweep += pts
            failed += [f"memory seg {seg} size {p['size']}: {p['failed']}"
                       for p in pts if "failed" in p]
        disk = disk_write(prog, work)
        durable = bp_series(work, prog, 64000, True, [1000000], reps, a.time)[0]
        if "failed" in durable:
            failed.append(f"durable: {durable['failed']}")
        if not a.skip_latency:
            for cl in ("udp", "ltp"):
                pts, no_tap = latency_sweep(work, prog, cl, rates, reps, a.ping_time)
                latency += pts
                failed += [f"latency {p['cl']} {p['rate']}/s: {p['failed']}"
                           for p in pts if "failed" in p]
    finally:
        if not a.keep and not failed:
            shutil.rmtree(work, ignore_errors=True)

    def pt(seg, size):
        return next((p for p in sweep if p["seg"] == seg and p["size"] == size), None)

    def med(p, key="gbps"):
        return p[key]["median"] if p else None

    def latp(cl, rate):
        p = next((x for x in latency if x["cl"] == cl and x["rate"] == rate), None)
        return p if p and p["reps"] else None

    def added(cl, rate, key, what="bundle"):
        """From the per-bundle distribution (all repetitions pooled): per
        bundle (one crossing), or per round trip (two)."""
        p = latp(cl, rate)
        d = p["added_us"].get(what) if p else None
        return d[key] if d else None

    def rtt_diff(cl, rate):
        p = latp(cl, rate)
        return p["rtt_diff_median_us"]["median"] if p else None

    m64, m14 = med(pt(64000, 1000000)), med(pt(1400, 1000000))
    dur = med(durable)
    disk_mb = disk["mb_per_s"]["median"]
    # both nodes' stores on one disk: each byte is written twice
    disk_bound = disk_mb / 2 * 8 / 1000 if disk_mb else None
    spread = durable_spread(pt(64000, 1000000), durable, disk)
    r64, r14 = raw[64000]["gbps"]["median"], raw[1400]["gbps"]["median"]
    metrics = {
        "bp_ltp_1mb_64k_gbps": m64,
        "bp_ltp_1mb_1400_gbps": m14,
        "bp_ltp_1kb_bundles_per_s": med(pt(64000, 1000), "bundles_per_s"),
        "bp_ltp_1mb_64k_durable_gbps": dur,
        "bp_ltp_1mb_64k_durable_fraction": dur / m64 if dur and m64 else None,
        "disk_write_mb_per_s": disk_mb,
        "durable_disk_bound_gbps": disk_bound,
        "bp_ltp_1mb_64k_durable_of_disk_bound": dur / disk_bound if dur and disk_bound
        else None,
        "raw_udp_64k_gbps": r64,
        "raw_udp_1400_gbps": r14,
        "bp_ltp_1mb_64k_fraction_of_raw": m64 / r64 if m64 and r64 else None,
        "bp_ltp_1mb_64k_durable_gbps_min": spread["durable_gbps"]["min"],
        "bp_ltp_1mb_64k_durable_gbps_max": spread["durable_gbps"]["max"],
        "bp_ltp_1mb_64k_durable_fraction_min": spread["fraction"]["min"],
        "bp_ltp_1mb_64k_durable_fraction_max": spread["fraction"]["max"],
        "relay_added_latency_us_median_1000": added("udp", 1000, "median"),
        "relay_added_latency_us_p99_1000": added("udp", 1000, "p99"),
        "relay_added_latency_us_min_1000": added("udp", 1000, "min"),
        "relay_added_latency_us_max_1000": added("udp", 1000, "max"),
        "relay_ltp_added_latency_us_median_1000": added("ltp", 1000, "median"),
        "relay_ltp_added_latency_us_p99_1000": added("ltp", 1000, "p99"),
        "relay_ltp_added_latency_us_min_1000": added("ltp", 1000, "min"),
        "relay_ltp_added_latency_us_max_1000": added("ltp", 1000, "max"),
        "relay_added_latency_us_round_trip_median_1000": added("udp", 1000, "median",
                                                               "round_trip"),
        "relay_added_latency_us_round_trip_p99_1000": added("udp", 1000, "p99",
                                                            "round_trip"),
        "relay_ltp_added_latency_us_round_trip_median_1000": added("ltp", 1000, "median",
                                                                   "round_trip"),
        "relay_rtt_minus_direct_us_median_1000": rtt_diff("udp", 1000),
        "relay_ltp_rtt_minus_direct_us_median_1000": rtt_diff("ltp", 1000),
    }
    targets = {}
    for name, op, tv, unit, text in TARGETS:
        v = metrics[name]
        ok = v is not None and (v >= tv if op == ">=" else v < tv)
        targets[name] = {"target": tv, "op": op, "value": v, "unit": unit, "text": text,
                         "met": ok}
        if v is None and no_tap and name.startswith("relay"):
            targets[name]["unavailable"] = no_tap
    total = time.monotonic() - t_start
    out = {
        "benchmark": "bp",
        "metrics": metrics,
        "baselines": {"raw_udp_64k_gbps": r64, "raw_udp_1400_gbps": r14,
                      "disk_write_mb_per_s": disk_mb},
        "disk": disk,
        "ion_reference": {"note": "ION 4.1.3 on the development machine, from the issue; "
                                  "not measured in this run", **ION},
        "targets": targets,
        "sweep": sweep,
        "durable": durable,
        "durable_spread": spread,
        "latency": latency,
        "added_latency_unavailable": no_tap,
        "raw_udp": {str(s): raw[s] for s in SEGS},
        "machine": mach,
        "config": {
            "nodes": "real ternd processes on 127.0.0.1 (tern.testing.Network host.rc "
                     "files, started with build/bin/ternd); one pair of nodes per store "
                     "mode and segment size, kept running across its runs after an "
                     f"unmeasured {WARM_BYTES // 1000000} MB warm-up transfer; a new "
                     "bpdriver and bpcounter for every run",
            "throughput": f"bpdriver <n> ipn:1.1 ipn:2.1 -<size> (streaming) -> bpcounter "
                          f"ipn:2.1 <n>; LTP spans 'a span <peer> {MAX_EXPORT} "
                          f"{MAX_EXPORT} <seg> {AGG_SIZE} {AGG_S} udplso'; "
                          "every bundle counted and CRC-32C checked by bpcounter",
            "goodput": "(bundles - 1) x size x 8 / bpcounter's first-to-last interval; "
                       "1 Gbit = 1e9 bit",
            "memory_store": f"ionconfig configFlags 1, heapWords {HEAP_BYTES // 8} "
                            f"({HEAP_BYTES >> 20} MiB); at most {MAX_RUN_BYTES} bytes per run",
            "durable_store": f"ionconfig configFlags 3 (group commit), heapWords "
                             f"{DURABLE_HEAP_BYTES // 8}, store files under {work}",
            "latency": f"bpping -i 1/rate -p {PING_SIZE} ipn:1.1 -> bpecho ipn:3.1, direct "
                       f"(nodes 1, 3) and through relay node 2 (1 - 2 - 3); memory stores; "
                       f"UDP CL ('a induct udp 127.0.0.1:<port> udpcli', plans "
                       f"udp/127.0.0.1:<port>) and LTP ('a span ... 64000 1 0', "
                       f"aggregation size 1, no delay); {a.ping_time:g} s per run "
                       f"(at least 200 bundles) after a 50-bundle warm-up",
            "added_latency": "per bundle, on the wire: an AF_PACKET socket on lo "
                             "timestamps (SO_TIMESTAMPNS) every datagram as it is sent; "
                             "for each bpping bundle (matched by its payload's run id and "
                             "sequence number, direction by its EIDs) added = the "
                             "relay's last distinct datagram out - the first datagram "
                             "in, for the request and the reply crossing; round_trip = "
                             "their sum per sequence number (a round trip crosses the "
                             "relay twice). The metrics are the median, p99 (nearest "
                             "rank), min and max of round_trip over every bundle of all "
                             "repetitions at that rate; per_rep_median/per_rep_p99 give "
                             "the spread over repetitions. rtt_diff_* (relay RTT - direct "
                             "RTT of two separate runs) is context, not a latency",
            "sizes": sizes, "segs": SEGS, "rates": rates, "reps": reps,
            "seconds_per_run": a.time, "raw_seconds": a.raw_time,
        },
        "failed": failed,
        "total_seconds": round(total, 1),
    }
    with open(a.prefix + ".json", "w") as f:
        json.dump(out, f, indent=2)
        f.write("\n")

    print(f"BP over LTP/UDP, real nodes on 127.0.0.1: {mach['cpu']}, {mach['cores']} cores")
    print(f"raw UDP (sendmmsg/recvmmsg): 64000 B {r64:.2f} Gbit/s, 1400 B {r14:.2f} Gbit/s")
    if disk_bound:
        print(f"disk: {disk_mb:,.0f} MB/s fdatasync'd; two durable nodes on it that wrote every "
              f"byte twice could reach at most {disk_bound:.2f} Gbit/s"
              + (f" (durable reached {dur / disk_bound:.0%} of that)" if dur else ""))
    if spread["durable_gbps"]["values"]:
        fr = spread["fraction"]
        reps_ = ", ".join(f"{v:.2f}" for v in spread["durable_gbps"]["values"])
        print(f"durable repetitions: {reps_} Gbit/s; fraction of memory "
              f"{fr['min']:.0%} .. {fr['max']:.0%} "
              f"(median {fr['median']:.0%}; {spread['fraction_method'].split(':')[0]}); "
              f"disk bound {spread['disk_bound_gbps']['min']:.2f} .. "
              f"{spread['disk_bound_gbps']['max']:.2f} Gbit/s")
    unw = [x["rx_unwritten_fraction"] for x in durable.get("samples", [])
           if "rx_unwritten_fraction" in x]
    if unw:
        print(f"durable receiver: {statistics.median(unw):.0%} of the bytes it received were "
              f"delivered before its flush and never written (median of {len(unw)} runs)")
    print(f"{'store':>7} {'seg B':>6} {'bundle':>7} {'reps':>4} {'Gbit/s':>8} {'min':>8} "
          f"{'max':>8} {'bundles/s':>10}")
    for p in sweep + [durable]:
        g = p["gbps"]
        if g["median"] is None:
            print(f"{p['store']:>7} {p['seg']:>6} {human(p['size']):>7}  FAILED: {p.get('failed')}")
            continue
        print(f"{p['store']:>7} {p['seg']:>6} {human(p['size']):>7} {p['reps']:>4} "
              f"{g['median']:>8.3f} {g['min']:>8.3f} {g['max']:>8.3f} "
              f"{p['bundles_per_s']['median']:>10,.0f}" + ("  FAILED" if "failed" in p else ""))
    if latency:
        print(f"{'CL':>4} {'rate/s':>6} {'direct med':>10} {'p99':>7} {'relay med':>10} "
              f"{'p99':>7} | {'bundle':>6} {'p99':>6} | {'trip med':>9} {'reps':>9} {'p99':>7} "
              f"{'min':>5} {'max':>7} {'req':>5} {'reply':>5}  (RTT | added per bundle | "
              f"added per round trip, us)")
        for p in latency:
            if not p["reps"]:
                print(f"{p['cl']:>4} {p['rate']:>6}  FAILED: {p.get('failed')}")
                continue
            ad = p["added_us"]
            rt = ad.get("round_trip")
            bd = ad.get("bundle")
            tail = (f"{bd['median']:>6.0f} {bd['p99']:>6.0f} | "
                    f"{rt['median']:>9.0f} {ad['per_rep_median']['min']:>4.0f}-"
                    f"{ad['per_rep_median']['max']:<4.0f} {rt['p99']:>7.0f} {rt['min']:>5.0f} "
                    f"{rt['max']:>7.0f} {ad['request']['median']:>5.0f} "
                    f"{ad['reply']['median']:>5.0f}" if rt else
                    f"n/a ({ad.get('unavailable')})")
            print(f"{p['cl']:>4} {p['rate']:>6} {p['direct']['median_us']['median']:>10.0f} "
                  f"{p['direct']['p99_us']['median']:>7.0f} "
                  f"{p['relay']['median_us']['median']:>10.0f} "
                  f"{p['relay']['p99_us']['median']:>7.0f} | " + tail
                  + ("  FAILED" if "failed" in p else ""))
    print("targets:")
    for name, t in targets.items():
        v = t["value"]
        vs = (f"n/a ({no_tap})" if v is None and no_tap and name.startswith("relay") else
              "n/a") if v is None else (f"{v * 100:.1f}%" if t["unit"] == "fraction" else
                                      f"{v:,.3f} {t['unit']}")
        print(f"  {'met   ' if t['met'] else 'MISSED'} {t['text']}: {vs}")
    print(f"total run time {total:.0f} s")
    if failed:
        print("FAILED:\n  " + "\n  ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
