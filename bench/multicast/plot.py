#!/usr/bin/python3
"""Plots the multicast benchmark: plot.py <prefix> reads <prefix>.json, writes <prefix>.png.

Left: 1 KB bundles per second reaching every one of the 10 members (the
slowest member's rate), relay tree and broadcast CL, with the unicast
baseline of the same network beside each (medians, bars min..max, log
scale), the 15,000/s target as a red line. Right: the same for 64 KB
bundles (Mbit/s per member on the labels), and the sender's CPU per bundle
as text.
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLORS = {"mcast": "#1f77b4", "unicast": "#7f7f7f"}
CONFIGS = (("tree", "relay tree\n(11 nodes, 127.0.0.1)"),
           ("bcast", "broadcast CL udpm\n(11 namespaces, one bridge)"))


def point(d, config, kind, key):
    return next((p for p in d["points"] if p["config"] == config and p["kind"] == kind
                 and p["size_key"] == key), None)


def bars(ax, d, key, kinds, width=0.38, log=True):
    allm = []
    for j, kind in enumerate(kinds):
        xs, med, lo, hi, cpu = [], [], [], [], []
        for i, (c, _) in enumerate(CONFIGS):
            p = point(d, c, kind, key)
            m = p and p["bundles_per_s"]["median"]
            if not m:
                continue
            xs.append(i + (j - (len(kinds) - 1) / 2) * width)
            med.append(m)
            lo.append(m - p["bundles_per_s"]["min"])
            hi.append(p["bundles_per_s"]["max"] - m)
            cpu.append(p["sender_cpu_per_bundle_us"]["median"])
        allm += med
        label = ("group imc:7.1, slowest of 10 members" if kind == "mcast"
                 else "unicast 1 KB to node 2 (baseline)")
        ax.bar(xs, med, width, yerr=[lo, hi], capsize=4, color=COLORS[kind], label=label)
        for x, m, c in zip(xs, med, cpu):
            txt = f"{m:,.0f}/s"
            if key == "64kb":
                txt += f"\n{m * 64000 * 8 / 1e6:,.0f} Mbit/s"
            if c is not None:
                txt += f"\nsender {c:,.1f} us"
            ax.text(x, m, txt, ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(CONFIGS)))
    ax.set_xticklabels([n for _, n in CONFIGS], fontsize=8)
    if log:
        ax.set_yscale("log")
        if allm:
            ax.set_ylim(min(allm) / 4, max(allm) * 4)
    elif allm:
        ax.set_ylim(0, max(allm) * 1.35)
    ax.set_ylabel("bundles/s")
    ax.grid(axis="y", which="both", alpha=0.3)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: plot.py <prefix>")
    prefix = sys.argv[1]
    with open(prefix + ".json") as f:
        d = json.load(f)
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(13, 5.5))
    bars(ax, d, "1kb", ("mcast", "unicast"))
    t = d["targets"]["mcast_tree_1kb_bundles_per_s_10members"]["target"]
    ax.axhline(t, color="red", lw=1.5, ls="--", label=f"target: >= {t:,} per member")
    ax.set_title("1 KB bundles, one sender -> 10 members")
    ax.legend(fontsize=7, loc="upper left")
    bars(bx, d, "64kb", ("mcast",), log=False)
    bx.set_title("64 KB bundles, one sender -> 10 members")
    bx.legend(fontsize=7, loc="upper right")
    m = d["metrics"]
    r = m.get("mcast_sender_cpu_ratio")
    fig.text(0.5, 0.01, "sender CPU per group bundle / per unicast bundle (udpm): "
            + ("n/a" if r is None else f"{r:.2f}") + " (target <= 1.5)",
            ha="center", va="bottom", fontsize=8)
    mc = d["machine"]
    fig.suptitle(f"bench/multicast: {mc['cpu']}, {mc['cores']} cores, {mc['date']}; "
                 f"medians of {d['config']['reps']} run(s), bars min..max", fontsize=9)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    fig.savefig(prefix + ".png", dpi=110)


if __name__ == "__main__":
    main()
