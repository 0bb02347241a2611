#!/usr/bin/python3
"""Plots bench/cfdpsim results: plot.py <prefix> reads <prefix>.json, writes <prefix>.png.

Left: Gbit/s of file data through the sender and receiver machines (CRC-32C
and null checksum, 1 % loss) beside memcpy of the same bytes, with the
20 Gbit/s target. Right: 1 KB transactions per second with the 50,000/s
target. Bars are medians, error bars span min..max.
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def bar(ax, x, c, color, label):
    ax.bar([x], [c["median"]], 0.6, yerr=[[c["median"] - c["min"]], [c["max"] - c["median"]]],
           capsize=3, color=color, label=label, zorder=2)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: plot.py <prefix>")
    prefix = sys.argv[1]
    with open(prefix + ".json") as f:
        r = json.load(f)
    c = r["cases"]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.5), gridspec_kw={"width_ratios": [3, 1]})
    bar(a1, 0, c["large_crc32c"], "#4c72b0", "engines, CRC-32C")
    bar(a1, 1, c["large_null"], "#55a868", "engines, null checksum")
    bar(a1, 2, c["memcpy"], "#999999", "memcpy of the same bytes")
    a1.axhline(20, color="red", linestyle="--", linewidth=1, label="target 20 Gbit/s")
    a1.set_yscale("log")
    a1.set_xticks([0, 1, 2])
    a1.set_xticklabels(["CRC-32C", "null", "memcpy"])
    a1.set_ylabel("file data Gbit/s (median)")
    a1.set_title(f"{r['size'] / (1 << 30):g} GiB class 2, 64 KiB segments, 1 % loss",
                 fontsize=9)
    a1.legend(fontsize=7)
    a1.grid(axis="y", which="both", alpha=0.3, zorder=0)
    bar(a2, 0, c["small_1kb"], "#dd8452", "1 KB transactions")
    a2.axhline(50000, color="red", linestyle="--", linewidth=1, label="target 50,000/s")
    a2.set_xticks([0])
    a2.set_xticklabels([f"{r['count']:,} x 1 KB"])
    a2.set_ylabel("transactions per second (median)")
    a2.legend(fontsize=7)
    a2.grid(axis="y", alpha=0.3, zorder=0)
    m = r["machine"]
    fig.suptitle(f"Tern CFDP entity machines, in memory, one thread — {m['cpu']}, "
                 f"{m['cores']} cores; medians of {r['reps']} runs", fontsize=10)
    fig.tight_layout()
    fig.savefig(prefix + ".png", dpi=110)


if __name__ == "__main__":
    main()
