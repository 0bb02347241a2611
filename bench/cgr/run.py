#!/usr/bin/python3
"""Contact Graph Routing route computation time: run.py [--reps N] [--queries Q] <prefix>.

Runs build/bin/bench_cgr for every plan size (100, 1,000 and 10,000
contacts) and node count (10, 50, 100, 200), --reps times each with a
different random plan (seed), each run timing --queries route questions
for random reachable destinations. Per case: the medians of the runs'
medians (min..max across runs) of
  fresh    a route for a 1,000-byte bundle with the route lists forgotten
           first (the list of up to 8 routes computed, then the bundle's
           route chosen) — the issue's metric;
  fresh1   the same with one-route lists (one Dijkstra search);
  cached   the same question with the list already there (microseconds);
  baseline a plain Dijkstra over the static node graph, same destinations;
  build    the graph built from the plan.
The metric cgr_route_ms_1000_contacts is the worst median over the node
counts of the 1,000-contact plans. Writes <prefix>.json, prints a table.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from benchlib import binary, machine, run_json, summary  # noqa: E402

CONTACTS = [100, 1000, 10000]
NODES = [10, 50, 100, 200]
FIELDS = ["fresh_ms", "fresh_p90_ms", "fresh1_ms", "cached_us", "baseline_ms", "build_ms",
          "found", "reachable", "mean_hops"]






def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("prefix")
    o = ap.parse_args()
    prog = binary("bench_cgr")
    if not os.access(prog, os.X_OK):
        sys.exit(f"{prog} not built (make build)")
    cases = []
    total, done = len(CONTACTS) * len(NODES) * o.reps, 0
    for c in CONTACTS:
        for n in NODES:
            runs = []
            for rep in range(o.reps):
                runs.append(run_json(prog, ["--contacts", str(c), "--nodes", str(n), "--queries",
                                       str(o.queries), "--seed", str(1000 * rep + 7)]))
                done += 1
                print(f"\r  {done}/{total} runs  {c} contacts {n} nodes ", end="",
                      file=sys.stderr, flush=True)
            case = {"contacts": c, "nodes": n, "queries": o.queries}
            for f in FIELDS:
                case[f] = summary([r[f] for r in runs])
            cases.append(case)
    print(file=sys.stderr)

    def med(c, n, f):
        for x in cases:
            if (x["contacts"], x["nodes"]) == (c, n):
                return x[f]["median"]
        return None

    metrics = {
        "cgr_route_ms_1000_contacts": max(med(1000, n, "fresh_ms") for n in NODES),
        "cgr_route_ms_100_contacts": max(med(100, n, "fresh_ms") for n in NODES),
        "cgr_route_ms_10000_contacts": max(med(10000, n, "fresh_ms") for n in NODES),
        "cgr_best_route_ms_1000_contacts": max(med(1000, n, "fresh1_ms") for n in NODES),
        "cgr_cached_route_us_1000_contacts": max(med(1000, n, "cached_us") for n in NODES),
        "cgr_graph_build_ms_10000_contacts": max(med(10000, n, "build_ms") for n in NODES),
    }
    baselines = {
        f"static_dijkstra_ms_{c}_contacts": max(med(c, n, "baseline_ms") for n in NODES)
        for c in CONTACTS
    }
    v = metrics["cgr_route_ms_1000_contacts"]
    targets = {"cgr_route_ms_1000_contacts": {"value": v, "target": 5.0, "unit": "ms",
                                              "better": "lower", "met": v < 5.0}}
    res = {"metrics": metrics, "machine": machine(), "baselines": baselines,
           "targets": targets, "reps": o.reps, "cases": cases}
    with open(o.prefix + ".json", "w") as f:
        json.dump(res, f, indent=1)
    print(f"{'contacts':>8} {'nodes':>5} {'fresh ms':>9} {'p90':>8} {'1-route':>8} "
          f"{'cached us':>9} {'static ms':>9} {'build ms':>8} {'reach':>6} {'hops':>5}")
    for x in cases:
        print(f"{x['contacts']:>8} {x['nodes']:>5} {x['fresh_ms']['median']:>9.4f} "
              f"{x['fresh_p90_ms']['median']:>8.4f} {x['fresh1_ms']['median']:>8.4f} "
              f"{x['cached_us']['median']:>9.3f} {x['baseline_ms']['median']:>9.5f} "
              f"{x['build_ms']['median']:>8.3f} {x['reachable']['median']:>6.2f} "
              f"{x['mean_hops']['median']:>5.2f}")
    for k, val in metrics.items():
        print(f"{k}: {val:.5f}")
    for k, val in baselines.items():
        print(f"{k}: {val:.5f}")


if __name__ == "__main__":
    main()
