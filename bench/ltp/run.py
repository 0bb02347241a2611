#!/usr/bin/python3
"""LTP benchmark: run.py [options] <prefix> writes <prefix>.json and prints a table.

Reproduces the shape of ION's published LTP sweep (goodput vs block size at
64,000 B and 1,400 B segments, blocks 1 kB .. 5 MB) over UDP on 127.0.0.1
between two processes (build/bin/ltpdriver -> build/bin/ltpcounter), plus:

  * 1,000 B service data units aggregated into 64,000 B blocks (units/s);
  * a raw UDP baseline in the same run (build/bin/bench_ltp: a sendmmsg
    sender and a recvmmsg receiver in two processes) at 64,000 B and
    1,400 B datagrams, so each LTP figure is also a fraction of what the
    kernel path carries on this machine.

Each LTP run starts a fresh ltpcounter in a new temp node directory on port
0, reads the bound port from <dir>/ports ("ltp udp <port>"), runs ltpdriver
against it and takes the goodput from the counter's --json (payload bytes
received over the receive interval). A run in which any block is missing,
corrupt, duplicated or cancelled fails its point loudly; the JSON is still
written and the exit status is 1.

Sizes are decimal: 1 kB = 1,000 B, 1 MB = 1,000,000 B, Gbit/s = 1e9 bit/s.
Progress goes to stderr (one \\r-updated line on a TTY).
"""
import argparse
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
import benchlib  # noqa: E402
from benchlib import PointFailed, Progress, bin_dir, human, sysctl  # noqa: E402

BLOCK_SIZES = [1000, 4000, 16000, 64000, 256000, 1000000, 2000000, 5000000]
SEG_SIZES = [64000, 1400]
HEADLINE = [(64000, 1000000), (1400, 1000000)]
SDU = 1000
SDU_BLOCK = 64000

# Rough goodput (Gbit/s) used only to pick the first block count of a point;
# later repetitions are rescaled from the first one's measured time.
GUESS = {64000: {1000: 1, 4000: 3, 16000: 8, 64000: 15, 256000: 12, 1000000: 8,
                 2000000: 4, 5000000: 2},
         1400: {1000: 0.6, 4000: 1.4, 16000: 2.8, 64000: 3.4, 256000: 3,
                1000000: 2.4, 2000000: 2.2, 5000000: 1.2}}
GUESS_UNITS_PER_S = 1.5e6

TARGETS = [  # metric, op, target, unit, text
    ("ltp_1mb_64k_gbps", 8.0, "Gbit/s", "1 MB blocks, 64,000 B segments >= 8 Gbit/s"),
    ("ltp_1mb_64k_fraction_of_raw", 0.5, "fraction",
     "1 MB blocks, 64,000 B segments >= 50% of raw UDP (64,000 B) in the same run"),
    ("ltp_1mb_1400_gbps", 2.0, "Gbit/s", "1 MB blocks, 1,400 B segments >= 2 Gbit/s"),
    ("ltp_1kb_units_per_s", 150000.0, "units/s",
     "1 kB service data units aggregated into 64,000 B blocks >= 150,000 units/s"),
]


MIN_WINDOWS = 8


def driver_window(size):
    """ltpdriver's default window: min(64, 16 MB / block), at least 2."""
    return max(2, min(64, (16 << 20) // size))


def stats(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return {"median": None, "min": None, "max": None}
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs)}


def read_port(nd, proc, deadline):
    path = os.path.join(nd, "ports")
    while time.monotonic() < deadline:
        try:
            with open(path) as f:
                for ln in f:
                    w = ln.split()
                    if len(w) == 3 and w[0] == "ltp" and w[1] == "udp":
                        return int(w[2])
        except FileNotFoundError:
            pass
        if proc.poll() is not None:
            raise PointFailed(f"ltpcounter exited ({proc.returncode}) before publishing its port")
        time.sleep(0.005)
    raise PointFailed(f"ltpcounter published no port in {path}")


def tail(path, n=5):
    try:
        with open(path, errors="replace") as f:
            return " | ".join(f.read().strip().splitlines()[-n:])
    except OSError:
        return ""


def stop(proc):
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# ------------------------------------------------------------------ one LTP run

def ltp_once(work, tag, seg, size, blocks=0, units=0, timeout=60):
    """One driver->counter transfer. Returns a sample dict; raises PointFailed."""
    nd = tempfile.mkdtemp(prefix=tag + ".", dir=work)
    b = bin_dir()
    cjson, djson = os.path.join(nd, "counter.json"), os.path.join(nd, "driver.json")
    cerr = os.path.join(nd, "counter.err")
    count = ["--units", str(units)] if units else ["--blocks", str(blocks)]
    cargs = [os.path.join(b, "ltpcounter"), "--engine", "2", "--listen", "127.0.0.1:0",
             "--peer", "1", "--dir", nd, *count, "--seg", str(seg), "--json", cjson,
             "--linger", "200", "--timeout", str(timeout)]
    dargs = [os.path.join(b, "ltpdriver"), "--engine", "1", "--peer", "2", "--to", None,
             "--size", str(size), "--seg", str(seg), "--json", djson, "--quiet",
             "--timeout", str(timeout)]
    dargs += ["--sdu", str(SDU), "--units", str(units)] if units else ["--blocks", str(blocks)]
    with open(os.path.join(nd, "counter.out"), "w") as co, open(cerr, "w") as ce:
        counter = subprocess.Popen(cargs, stdout=co, stderr=ce)
    try:
        port = read_port(nd, counter, time.monotonic() + 10)
        dargs[dargs.index(None)] = f"127.0.0.1:{port}"
        t = time.monotonic()
        dr = subprocess.run(dargs, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            timeout=timeout + 30)
        try:
            counter.wait(timeout + 30)
        except subprocess.TimeoutExpired:
            raise PointFailed("ltpcounter did not finish after the driver")
        wall = time.monotonic() - t
    finally:
        stop(counter)
    try:
        with open(cjson) as f:
            c = json.load(f)
    except (OSError, ValueError) as e:
        raise PointFailed(f"no counter JSON ({e}); counter: {tail(cerr)}")
    try:
        with open(djson) as f:
            d = json.load(f)
    except (OSError, ValueError) as e:
        raise PointFailed(f"no driver JSON ({e}); driver: {dr.stderr.strip()[-300:]}")

    problems = []
    if dr.returncode != 0 or not d.get("ok"):
        problems.append(f"driver exit {dr.returncode} ({d.get('reason')})")
    if counter.returncode != 0 or not c.get("ok"):
        problems.append(f"counter exit {counter.returncode} ({c.get('reason')})")
    if c["bad"]:
        problems.append(f"{c['bad']} corrupt blocks")
    if c["duplicates"]:
        problems.append(f"{c['duplicates']} duplicates")
    if d["cancelled"] or c["ltp"]["imports_cancelled"]:
        problems.append(f"cancelled: {d['cancelled']} exports, "
                        f"{c['ltp']['imports_cancelled']} imports")
    if units:
        if c["units"] != units or d["units"] != units or c["bytes"] != units * SDU:
            problems.append(f"units {c['units']}/{units}, bytes {c['bytes']}/{units * SDU}")
    elif c["blocks"] != blocks or d["blocks"] != blocks or c["bytes"] != blocks * size:
        problems.append(f"blocks {c['blocks']}/{blocks} (driver {d['blocks']}), "
                        f"bytes {c['bytes']}/{blocks * size}")
    if problems:
        raise PointFailed("; ".join(problems) + f"; counter: {tail(cerr, 2)}")
    secs = c["seconds"]
    shutil.rmtree(nd, ignore_errors=True)
    return {
        "blocks": c["blocks"], "units": c["units"], "bytes": c["bytes"],
        "seconds": secs, "gbps": c["goodput_gbps"], "units_per_s": c["units_per_s"],
        "driver_gbps": d["goodput_gbps"], "driver_seconds": d["seconds"], "wall_s": wall,
        "segments_in": c["udp"]["dgrams_in"],
        "segments_per_s": c["udp"]["dgrams_in"] / secs if secs > 0 else None,
        "recv_calls": c["udp"]["recv_calls"], "send_calls": d["udp"]["send_calls"],
        "would_block": d["udp"]["would_block"], "udp_drops": d["udp"]["drops"],
        "data_retx": d["ltp"]["data_retx"], "cp_timeouts": d["ltp"]["cp_timeouts"],
        "stale": c["ltp"]["stale"], "cancelled": d["cancelled"] + c["ltp"]["imports_cancelled"],
        "window": d["window"], "rcvbuf": c["udp"]["rcvbuf"],
    }


def ltp_point(work, prog, label, seg, size, reps, target_s, sdu=False):
    """Repeats a transfer; the count is chosen so one run takes ~target_s."""
    # At least MIN_WINDOWS windows of blocks, so that the first window's
    # burst (and any checkpoint timeouts it causes) does not dominate a run.
    floor = 1000 if sdu else MIN_WINDOWS * driver_window(size)
    if sdu:
        count = max(floor, int(target_s * GUESS_UNITS_PER_S))
    else:
        count = max(floor, int(target_s * GUESS[seg][size] * 1e9 / 8 / size))
    samples, recal = [], 0
    point = {"seg": seg, "block": size}
    if sdu:
        point["sdu"] = SDU
    while len(samples) < reps:
        prog.status(f"{label}: rep {len(samples) + 1}/{reps}, "
                    f"{count} {'units' if sdu else 'blocks'}"
                    + (f", last {samples[-1]['gbps']:.2f} Gbit/s" if samples else ""))
        try:
            s = ltp_once(work, f"{seg}-{size}", seg, size,
                         units=count if sdu else 0, blocks=0 if sdu else count,
                         timeout=max(60, int(target_s * 20)))
        except PointFailed as e:
            prog.line(f"FAILED {label}: {e}")
            point.update({"failed": str(e), "reps": len(samples)})
            break
        except subprocess.TimeoutExpired as e:
            prog.line(f"FAILED {label}: timed out ({e})")
            point.update({"failed": f"timed out: {e}", "reps": len(samples)})
            break
        t = s["seconds"]
        # rescale the count if the run was far off the intended duration;
        # a run shorter than half the intended time is a calibration only.
        if t > 0 and (t < 0.6 * target_s or t > 2.0 * target_s):
            new = max(floor, int(count * target_s / t))
            if recal < 3 and t < 0.6 * target_s and new > count:
                recal += 1
                count = new
                continue
            count = new
        samples.append(s)
    point["samples"] = samples
    point.setdefault("reps", len(samples))
    point["blocks"] = [s["blocks"] for s in samples]
    if sdu:
        point["units"] = [s["units"] for s in samples]
        point["units_per_s"] = stats([s["units_per_s"] for s in samples])
    point["gbps"] = stats([s["gbps"] for s in samples])
    point["seconds"] = stats([s["seconds"] for s in samples])
    point["segments_per_s"] = stats([s["segments_per_s"] for s in samples])
    for k in ("data_retx", "cp_timeouts", "stale", "cancelled", "would_block", "udp_drops"):
        point[k] = sum(s[k] for s in samples)
    point["window"] = samples[0]["window"] if samples else None
    if samples:
        g = point["gbps"]
        txt = (f"{label}: {g['median']:.2f} Gbit/s (min {g['min']:.2f}, max {g['max']:.2f}, "
               f"{len(samples)} x ~{point['seconds']['median']:.1f} s)")
        if sdu:
            txt += f", {point['units_per_s']['median']:,.0f} units/s"
        if point["data_retx"]:
            txt += f", {point['data_retx']} retx"
        prog.line(txt)
    return point


# ------------------------------------------------------------------ raw UDP

def raw_udp(prog, size, reps, secs):
    b = os.path.join(bin_dir(), "bench_ltp")
    samples = []
    for r in range(reps):
        prog.status(f"raw UDP {size} B datagrams: rep {r + 1}/{reps}")
        out = subprocess.run([b, str(size), str(secs)], stdout=subprocess.PIPE, text=True,
                             timeout=secs + 30, check=True).stdout
        kv = dict(w.split("=", 1) for w in out.split() if "=" in w)
        sent, recv = int(kv["sent_pkts"]), int(kv["recv_pkts"])
        samples.append({"gbps": float(kv["gbps"]), "recv_pkts": recv, "sent_pkts": sent,
                        "loss": (sent - recv) / sent if sent else None})
    g = stats([s["gbps"] for s in samples])
    prog.line(f"raw UDP {size} B: {g['median']:.2f} Gbit/s (min {g['min']:.2f}, "
              f"max {g['max']:.2f}, {reps} x {secs} s)")
    return {"datagram": size, "seconds": secs, "reps": reps, "gbps": g, "samples": samples}


# ------------------------------------------------------------------ machine

def machine():
    """benchlib's machine facts plus the socket buffer limits."""
    m = benchlib.machine()
    root = os.geteuid() == 0
    m.update({
        "root": root,
        "rmem_max": sysctl("net.core.rmem_max"), "wmem_max": sysctl("net.core.wmem_max"),
        "note": ("running as root: the UDP link service and the raw baseline get their "
                 "requested socket buffers via SO_RCVBUFFORCE/SO_SNDBUFFORCE" if root else
                 "not root: socket buffers are capped at net.core.rmem_max/wmem_max"),
    })
    return m


# ------------------------------------------------------------------ main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("prefix")
    ap.add_argument("--time", type=float, default=1.8,
                    help="intended seconds per LTP run (default 1.8)")
    ap.add_argument("--reps", type=int, default=5,
                    help="repetitions of the two 1 MB headline points (default 5)")
    ap.add_argument("--sdu-reps", type=int, default=3,
                    help="repetitions of the 1 kB SDU case (default 3)")
    ap.add_argument("--sweep-reps", type=int, default=3,
                    help="repetitions of the other sweep points (default 3)")
    ap.add_argument("--raw-time", type=float, default=1.5)
    ap.add_argument("--raw-reps", type=int, default=3)
    ap.add_argument("--keep", action="store_true", help="keep the temp node directories")
    a = ap.parse_args()

    for tool in ("ltpdriver", "ltpcounter", "bench_ltp"):
        if not os.access(os.path.join(bin_dir(), tool), os.X_OK):
            sys.exit(f"bench/ltp: {os.path.join(bin_dir(), tool)} not built (make build)")

    t_start = time.monotonic()
    prog = Progress("bench_ltp")
    mach = machine()
    work = tempfile.mkdtemp(prefix="ltp-bench.")
    prog.line(f"{mach['cpu']}, {mach['cores']} cores, {mach['kernel']}, "
              f"{'root' if mach['root'] else 'not root'}; temp dirs in {work}")
    failed = []
    try:
        raw = {s: raw_udp(prog, s, a.raw_reps, a.raw_time) for s in SEG_SIZES}
        sweep = []
        for seg in SEG_SIZES:
            for size in BLOCK_SIZES:
                reps = a.reps if (seg, size) in HEADLINE else a.sweep_reps
                p = ltp_point(work, prog, f"LTP seg {seg} B, block {human(size)}", seg, size,
                              reps, a.time)
                rg = raw[seg]["gbps"]["median"]
                p["fraction_of_raw"] = (p["gbps"]["median"] / rg
                                        if p["gbps"]["median"] is not None and rg else None)
                sweep.append(p)
                if "failed" in p:
                    failed.append(f"seg {seg} block {size}: {p['failed']}")
        sdu = ltp_point(work, prog, f"LTP {SDU} B units in {SDU_BLOCK} B blocks", 64000,
                        SDU_BLOCK, a.sdu_reps, a.time, sdu=True)
        if "failed" in sdu:
            failed.append(f"sdu: {sdu['failed']}")
        raw_udp_tail = {s: raw_udp(prog, s, 1, a.raw_time) for s in SEG_SIZES}
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)

    def pt(seg, size):
        return next(p for p in sweep if p["seg"] == seg and p["block"] == size)

    r64, r14 = raw[64000]["gbps"]["median"], raw[1400]["gbps"]["median"]
    m64, m14 = pt(64000, 1000000)["gbps"]["median"], pt(1400, 1000000)["gbps"]["median"]
    metrics = {
        "ltp_1mb_64k_gbps": m64,
        "ltp_1mb_1400_gbps": m14,
        "ltp_1kb_units_per_s": sdu.get("units_per_s", {}).get("median"),
        "raw_udp_64k_gbps": r64,
        "raw_udp_1400_gbps": r14,
        "ltp_1mb_64k_fraction_of_raw": m64 / r64 if m64 is not None and r64 else None,
        "ltp_1mb_1400_fraction_of_raw": m14 / r14 if m14 is not None and r14 else None,
    }
    targets = {}
    for name, tv, unit, text in TARGETS:
        v = metrics[name]
        targets[name] = {"target": tv, "value": v, "unit": unit, "op": ">=", "text": text,
                         "met": v is not None and v >= tv}
    targets["ltp_1mb_64k_fraction_of_raw"]["target_gbps"] = 0.5 * r64 if r64 else None
    total = time.monotonic() - t_start
    out = {
        "benchmark": "ltp",
        "metrics": metrics,
        "baselines": {"raw_udp_64k_gbps": r64, "raw_udp_1400_gbps": r14},
        "targets": targets,
        "sweep": sweep,
        "sdu": sdu,
        "raw_udp": {"64000": raw[64000], "1400": raw[1400],
                    "after_sweep": {str(s): raw_udp_tail[s]["gbps"]["median"]
                                    for s in SEG_SIZES}},
        "machine": mach,
        "config": {
            "transport": "UDP over 127.0.0.1, ltpdriver (engine 1) -> ltpcounter (engine 2), "
                         "two processes sharing the machine's cores, no pinning",
            "goodput": "counter's payload bytes x 8 over its receive interval "
                       "(first session start .. last block delivered); 1 Gbit = 1e9 bit",
            "block_sizes": BLOCK_SIZES, "seg_sizes": SEG_SIZES,
            "sdu": SDU, "sdu_block": SDU_BLOCK,
            "seconds_per_run": a.time, "headline_reps": a.reps, "sweep_reps": a.sweep_reps,
            "sdu_reps": a.sdu_reps, "min_windows_per_run": MIN_WINDOWS,
            "raw_reps": a.raw_reps, "raw_seconds": a.raw_time,
            "window": "ltpdriver default (min(64, 16 MB / block), at least 2)",
            "ltp_sessions_rcvbuf": next((p["samples"][0]["rcvbuf"] for p in sweep
                                         if p["samples"]), None),
        },
        "failed": failed,
        "total_seconds": round(total, 1),
    }
    with open(a.prefix + ".json", "w") as f:
        json.dump(out, f, indent=2)
        f.write("\n")

    # table
    print(f"LTP over UDP loopback: {mach['cpu']}, {mach['cores']} cores, {mach['kernel']}, "
          f"{'root' if mach['root'] else 'not root'}")
    print(f"raw UDP baseline (sendmmsg/recvmmsg): 64000 B {r64:.2f} Gbit/s, "
          f"1400 B {r14:.2f} Gbit/s (medians of {a.raw_reps})")
    print(f"{'seg B':>6} {'block':>7} {'blocks':>7} {'reps':>4} {'Gbit/s':>7} {'min':>7} "
          f"{'max':>7} {'of raw':>7} {'seg/s':>9} {'retx':>5} {'cp t/o':>6}")
    for p in sweep:
        g = p["gbps"]
        if g["median"] is None:
            print(f"{p['seg']:>6} {human(p['block']):>7}  FAILED: {p.get('failed')}")
            continue
        print(f"{p['seg']:>6} {human(p['block']):>7} {p['blocks'][-1]:>7} {p['reps']:>4} "
              f"{g['median']:>7.2f} {g['min']:>7.2f} {g['max']:>7.2f} "
              f"{p['fraction_of_raw'] * 100:>6.1f}% {p['segments_per_s']['median']:>9,.0f} "
              f"{p['data_retx']:>5} {p['cp_timeouts']:>6}" + ("  FAILED" if "failed" in p else ""))
    if sdu.get("units_per_s", {}).get("median") is not None:
        u = sdu["units_per_s"]
        print(f"1 kB units into 64,000 B blocks: {u['median']:,.0f} units/s "
              f"(min {u['min']:,.0f}, max {u['max']:,.0f}; {sdu['gbps']['median']:.2f} Gbit/s)")
    print("targets:")
    for name, t in targets.items():
        v = t["value"]
        vs = "n/a" if v is None else (f"{v * 100:.1f}%" if t["unit"] == "fraction" else
                                      f"{v:,.2f} {t['unit']}")
        print(f"  {'met   ' if t['met'] else 'MISSED'} {t['text']}: {vs}")
    print(f"total run time {total:.0f} s")
    if failed:
        print("FAILED points:\n  " + "\n  ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
