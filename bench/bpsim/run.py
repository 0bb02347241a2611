#!/usr/bin/python3
"""Bundles per second through one agent: run.py [--reps N] [--quick] <prefix>.

Runs build/bin/bench_bpsim for three paths (send: application to outduct;
relay: convergence layer in, outduct out; deliver: convergence layer in,
application reads), four bundle sizes and both store modes (memory, durable
with group commit, files next to the results), each --reps times, and a
memcpy baseline per size (copying each bundle's bytes once). Writes
<prefix>.json with the issue's metrics (medians) and prints a table.
"""
import argparse
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from benchlib import binary, machine, run_json, summary  # noqa: E402

SIZES = [100, 1000, 65536, 1000000]
# bundles per run, per size and mode (a run takes a fraction of a second)
COUNT = {"memory": {100: 300000, 1000: 300000, 65536: 20000, 1000000: 500},
         "durable": {100: 50000, 1000: 50000, 65536: 2000, 1000000: 100}}
PATHS = ["send", "relay", "deliver"]






def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="counts / 10, for a smoke run")
    ap.add_argument("prefix")
    o = ap.parse_args()
    prog = binary("bench_bpsim")
    if not os.access(prog, os.X_OK):
        sys.exit(f"{prog} not built (make build)")
    work = tempfile.mkdtemp(prefix="bpsim-", dir=os.path.dirname(os.path.abspath(o.prefix)))
    cases, baselines = [], {}
    total = len(SIZES) * (1 + 2 * len(PATHS)) * o.reps
    done = 0
    try:
        for size in SIZES:
            n = COUNT["memory"][size] * 10 // (10 if not o.quick else 100)
            vals = [run_json(prog, ["--memcpy", "--size", str(size), "--count", str(n * 10)])
                    ["bundles_per_s"] for _ in range(o.reps)]
            done += o.reps
            baselines[f"memcpy_{size}_per_s"] = summary(vals)["median"]
            for mode in ("memory", "durable"):
                for path in PATHS:
                    n = max(COUNT[mode][size] // (10 if o.quick else 1), 10)
                    vals = []
                    for _ in range(o.reps):
                        args = ["--path", path, "--mode", mode, "--size", str(size),
                                "--count", str(n)]
                        if mode == "durable":
                            d = os.path.join(work, "store")
                            shutil.rmtree(d, ignore_errors=True)
                            os.makedirs(d)
                            args += ["--dir", d]
                        vals.append(run_json(prog, args)["bundles_per_s"])
                        done += 1
                        print(f"\r  {done}/{total} runs  {mode} {path} {size} B ",
                              end="", file=sys.stderr, flush=True)
                    s = summary(vals)
                    s.update(size=size, mode=mode, path=path, count=n,
                             gbps=s["median"] * size * 8 / 1e9)
                    cases.append(s)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(file=sys.stderr)

    def med(mode, path, size):
        for c in cases:
            if (c["mode"], c["path"], c["size"]) == (mode, path, size):
                return c["median"]
        return None

    metrics = {
        "agent_1kb_bundles_per_s": med("memory", "relay", 1000),
        "agent_1kb_bundles_per_s_durable": med("durable", "relay", 1000),
        "agent_1mb_gbps": med("memory", "relay", 1000000) * 1e6 * 8 / 1e9,
        "agent_1kb_send_bundles_per_s": med("memory", "send", 1000),
        "agent_1kb_deliver_bundles_per_s": med("memory", "deliver", 1000),
        "agent_100b_bundles_per_s": med("memory", "relay", 100),
        "agent_64kb_bundles_per_s": med("memory", "relay", 65536),
    }
    v = metrics["agent_1kb_bundles_per_s"]
    targets = {"agent_1kb_bundles_per_s": {"value": v, "target": 500000,
                                           "met": v is not None and v >= 500000}}
    res = {"metrics": metrics, "machine": machine(), "baselines": baselines,
           "targets": targets, "reps": o.reps, "cases": cases}
    with open(o.prefix + ".json", "w") as f:
        json.dump(res, f, indent=1)
    print(f"{'mode':8} {'path':8} {'size':>8} {'bundles/s (median)':>20} {'Gbit/s':>8}")
    for c in cases:
        print(f"{c['mode']:8} {c['path']:8} {c['size']:>8} {c['median']:>20,.0f} "
              f"{c['gbps']:>8.2f}")
    for k, v in metrics.items():
        print(f"{k}: {v:,.2f}")


if __name__ == "__main__":
    main()
