#!/usr/bin/python3
"""Plots bench/bpsim results: plot.py <prefix> reads <prefix>.json, writes <prefix>.png.

Left: bundles per second (log scale) per bundle size, one bar per path and
store mode, with the memcpy baseline and the 500,000/s target for 1 KB.
Right: the same as Gbit/s of bundle payload. Bars are medians, error bars
span min..max over the repetitions.
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: plot.py <prefix>")
    prefix = sys.argv[1]
    with open(prefix + ".json") as f:
        r = json.load(f)
    cases = r["cases"]
    sizes = sorted({c["size"] for c in cases})
    series = [(m, p) for m in ("memory", "durable") for p in ("send", "relay", "deliver")]
    colors = {"send": "#4c72b0", "relay": "#dd8452", "deliver": "#55a868"}
    fig, axes = plt.subplots(1, 2, figsize=(13, 5))
    width = 0.8 / len(series)
    for ax, key in zip(axes, ("median", "gbps")):
        for i, (m, p) in enumerate(series):
            xs, ys, lo, hi = [], [], [], []
            for j, s in enumerate(sizes):
                c = next((c for c in cases if (c["mode"], c["path"], c["size"]) == (m, p, s)),
                         None)
                if not c:
                    continue
                scale = 1 if key == "median" else s * 8 / 1e9
                xs.append(j + (i - len(series) / 2 + 0.5) * width)
                ys.append(c["median"] * scale)
                lo.append((c["median"] - c["min"]) * scale)
                hi.append((c["max"] - c["median"]) * scale)
            ax.bar(xs, ys, width, yerr=[lo, hi], capsize=2, color=colors[p],
                   alpha=1.0 if m == "memory" else 0.45, label=f"{p} ({m})", zorder=2)
        base = [r["baselines"].get(f"memcpy_{s}_per_s") for s in sizes]
        bx = list(range(len(sizes)))
        if key == "median":
            ax.plot(bx, base, "k_", markersize=30, label="memcpy of the bundle", zorder=3)
            ax.axhline(500000, color="red", linestyle="--", linewidth=1,
                       label="target 500,000/s (1 KB)")
            ax.set_ylabel("bundles per second (median)")
        else:
            ax.plot(bx, [b * s * 8 / 1e9 if b else None for b, s in zip(base, sizes)], "k_",
                    markersize=30, label="memcpy of the bundle", zorder=3)
            ax.set_ylabel("payload Gbit/s (median)")
        ax.set_yscale("log")
        ax.set_xticks(bx)
        ax.set_xticklabels([f"{s:,} B" for s in sizes])
        ax.grid(axis="y", which="both", alpha=0.3, zorder=0)
    axes[0].legend(fontsize=7, ncol=2)
    m = r["machine"]
    fig.suptitle(f"Tern BP agent, one core, virtual clock, loopback outduct — {m['cpu']}, "
                 f"{m['cores']} cores; medians of {r['reps']} runs", fontsize=10)
    fig.tight_layout()
    fig.savefig(prefix + ".png", dpi=110)


if __name__ == "__main__":
    main()
