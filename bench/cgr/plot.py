#!/usr/bin/python3
"""Plots bench/cgr results: plot.py <prefix> reads <prefix>.json, writes <prefix>.png.

Left: time to compute a fresh route (lists forgotten; up to 8 routes
computed, the bundle's chosen) against the number of contacts, one line per
node count, with the one-route search (dotted), the static-Dijkstra baseline
(dashed) and the 5 ms target. Right: building the graph from the plan and a
cached route question. Medians; error bars span min..max over the runs.
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLORS = {10: "#1f77b4", 50: "#2ca02c", 100: "#d95f02", 200: "#7570b3"}


def series(cases, n, key, scale=1.0):
    pts = sorted((c["contacts"], c[key]) for c in cases if c["nodes"] == n)
    xs = [p[0] for p in pts]
    ys = [p[1]["median"] * scale for p in pts]
    lo = [(p[1]["median"] - p[1]["min"]) * scale for p in pts]
    hi = [(p[1]["max"] - p[1]["median"]) * scale for p in pts]
    return xs, ys, lo, hi


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: plot.py <prefix>")
    prefix = sys.argv[1]
    with open(prefix + ".json") as f:
        r = json.load(f)
    cases = r["cases"]
    nodes = sorted({c["nodes"] for c in cases})
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(13, 5))
    for n in nodes:
        col = COLORS.get(n, None)
        xs, ys, lo, hi = series(cases, n, "fresh_ms")
        a1.errorbar(xs, ys, yerr=[lo, hi], marker="o", color=col, capsize=3,
                    label=f"CGR, {n} nodes (8-route list)")
        xs, ys, _, _ = series(cases, n, "fresh1_ms")
        a1.plot(xs, ys, ":", marker=".", color=col, label=f"one-route search, {n} nodes")
        xs, ys, _, _ = series(cases, n, "baseline_ms")
        a1.plot(xs, ys, "--", color=col, alpha=0.6, label=f"static Dijkstra, {n} nodes")
        xs, ys, lo, hi = series(cases, n, "build_ms")
        a2.errorbar(xs, ys, yerr=[lo, hi], marker="o", color=col, capsize=3,
                    label=f"graph build, {n} nodes")
        xs, ys, _, _ = series(cases, n, "cached_us", 1e-3)
        a2.plot(xs, ys, ":", marker=".", color=col, label=f"cached route, {n} nodes")
    a1.axhline(5.0, color="red", linestyle="--", linewidth=1, label="target 5 ms (1,000 contacts)")
    for ax in (a1, a2):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("contacts in the plan")
        ax.grid(which="both", alpha=0.3)
    a1.set_ylabel("fresh route, ms (median)")
    a2.set_ylabel("ms (median)")
    a1.legend(fontsize=6, ncol=2)
    a2.legend(fontsize=6, ncol=2)
    m = r["machine"]
    v = r["metrics"]["cgr_route_ms_1000_contacts"]
    fig.suptitle(f"Tern CGR route computation — cgr_route_ms_1000_contacts {v:.3f} ms "
                 f"(target 5 ms) — {m['cpu']}, {m['cores']} cores; medians of "
                 f"{r['reps']} plans", fontsize=10)
    fig.tight_layout()
    fig.savefig(prefix + ".png", dpi=110)


if __name__ == "__main__":
    main()
