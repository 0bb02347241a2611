#!/usr/bin/python3
"""The CFDP engines alone: run.py [--reps N] [--quick] <prefix>.

Runs build/bin/bench_cfdpsim --reps times for: a 1 GiB class 2 transfer in
64 KiB segments with 1 % loss both ways, CRC-32C file checksum (the issue's
case) and null checksum (the machines without the checksum's cost); 10,000
class 2 transactions of 1 KB; and memcpy of the same 1 GiB in 64 KiB pieces.
The filestore is two buffers of the file's size (the copy compared with the
source at the end); the memcpy baseline copies the same bytes between the
same buffers; times are CPU seconds. Every run must end intact (the
receiver's checksum verified, every transaction finished without a fault,
the copy equal to the source). Writes <prefix>.json with the
issue's metrics (medians) and prints them.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from benchlib import binary, machine, run_json, summary  # noqa: E402

GIB = 1 << 30


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="1/8 of the sizes, for a smoke run")
    ap.add_argument("prefix")
    o = ap.parse_args()
    prog = binary("bench_cfdpsim")
    if not os.access(prog, os.X_OK):
        sys.exit(f"{prog} not built (make build)")
    size = GIB // (8 if o.quick else 1)
    count = 10000 // (8 if o.quick else 1)
    cases = {
        "large_crc32c": ["--large", "--size", str(size), "--loss", "0.01", "--cksum", "2"],
        "large_null": ["--large", "--size", str(size), "--loss", "0.01", "--cksum", "15"],
        "small_1kb": ["--small", "--count", str(count), "--size", "1000"],
        "memcpy": ["--memcpy", "--size", str(size)],
    }
    raw = {k: [] for k in cases}
    for rep in range(o.reps):
        for k, args in cases.items():
            raw[k].append(run_json(prog, args))
            print(f"\r  {rep + 1}/{o.reps} {k:14}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    res_cases = {}
    for k, runs in raw.items():
        key = "per_s" if k == "small_1kb" else "gbps"
        s = summary([r[key] for r in runs])
        s["unit"] = "transactions/s" if key == "per_s" else "Gbit/s"
        s["runs"] = runs
        res_cases[k] = s
    gbps = res_cases["large_crc32c"]["median"]
    small = res_cases["small_1kb"]["median"]
    mem = res_cases["memcpy"]["median"]
    metrics = {"cfdp_engine_gbps": gbps, "cfdp_engine_small_per_s": small, "memcpy_gbps": mem,
               "cfdp_engine_gbps_null_checksum": res_cases["large_null"]["median"]}
    targets = {"cfdp_engine_gbps": {"value": gbps, "target": 20, "met": gbps >= 20},
               "cfdp_engine_small_per_s": {"value": small, "target": 50000,
                                           "met": small >= 50000}}
    res = {"metrics": metrics, "machine": machine(), "baselines": {"memcpy_gbps": mem},
           "targets": targets, "reps": o.reps, "size": size, "count": count,
           "cases": res_cases}
    with open(o.prefix + ".json", "w") as f:
        json.dump(res, f, indent=1)
    for k, c in res_cases.items():
        print(f"  {k:14} median {c['median']:>12,.2f} {c['unit']} "
              f"(min {c['min']:,.2f}, max {c['max']:,.2f}, {len(c['values'])} runs)")
    for k, t in targets.items():
        print(f"  {'met   ' if t['met'] else 'MISSED'} {k} >= {t['target']:,}: "
              f"{t['value']:,.2f}")


if __name__ == "__main__":
    main()
