#!/usr/bin/python3
"""Plots the RAMS benchmark: plot.py <prefix> reads <prefix>.json, writes <prefix>.png.

Left: messages per second, 100 B and 10 KB, AMS within one continuum (the
baseline) beside RAMS through the two gateways (medians, bars min..max, log
scale), the 50,000 msgs/s target as a red tick over the 100 B RAMS bar and
ION's RAMS demo (271 msgs/s) as a dashed line. Right: the distribution
(CDF) of the one-way latency at 1,000 messages/s through the gateways, of
plain BP between the same nodes and of AMS within one continuum, medians
marked, with the target (BP median + 1 ms).
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLORS = {"same_continuum": "#7f7f7f", "rams": "#1f77b4"}
LAT = (("rams", "RAMS through both gateways", "#1f77b4"),
       ("bp", "plain BP bundle, node 2 -> 3", "#2ca02c"),
       ("ams_same_continuum", "AMS within continuum 2", "#7f7f7f"))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: plot.py <prefix>")
    prefix = sys.argv[1]
    with open(prefix + ".json") as f:
        d = json.load(f)
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(13, 5))

    pts = d["points"]
    sizes = sorted({p["size"] for p in pts})
    width = 0.38
    for j, kind in enumerate(("same_continuum", "rams")):
        xs, med, lo, hi = [], [], [], []
        for i, size in enumerate(sizes):
            p = next((p for p in pts if p["kind"] == kind and p["size"] == size), None)
            m = p and p["msgs_per_s"]["median"]
            if not m:
                continue
            xs.append(i + (j - 0.5) * width)
            med.append(m)
            lo.append(m - p["msgs_per_s"]["min"])
            hi.append(p["msgs_per_s"]["max"] - m)
        ax.bar(xs, med, width, yerr=[lo, hi], capsize=4, color=COLORS[kind],
               label="AMS within one continuum (baseline)" if kind == "same_continuum"
               else "RAMS: continuum 2 -> gateways -> continuum 3")
        for x, m in zip(xs, med):
            ax.text(x, m, f"{m:,.0f}", ha="center", va="bottom", fontsize=7)
    t = d["targets"].get("rams_100b_msgs_per_s")
    if t and 100 in sizes:
        i = sizes.index(100) + 0.5 * width
        ax.plot([i - width / 2, i + width / 2], [t["target"]] * 2, color="red", lw=2,
                label=f"target: >= {t['target']:,} msgs/s of 100 B")
    ion = d["references"]["ion_rams_demo_msgs_per_s"]["value"]
    ax.axhline(ion, color="black", ls="--", lw=1,
               label=f"ION's RAMS demo log: {ion} msgs/s (1 KB)")
    ax.set_xticks(range(len(sizes)))
    ax.set_xticklabels([f"{s} B" if s < 1000 else f"{s // 1000} KB" for s in sizes])
    ax.set_yscale("log")
    top = max([p["msgs_per_s"]["max"] or 0 for p in pts] + [ion])
    ax.set_ylim(100, top * 30)  # room for the legend above the bars
    ax.set_ylabel("messages/s at the subscriber (assured)")
    ax.legend(fontsize=7, loc="upper right")
    ax.set_title("throughput: one publisher, one subscriber")

    lat = d.get("latency")
    if lat:
        for key, label, color in LAT:
            p = lat["paths"].get(key, {})
            q = p.get("cdf_quantiles_ms")
            if not q:
                continue
            ys = [i / (len(q) - 1) for i in range(len(q))]
            bx.plot(q, ys, color=color, lw=1.5 if key != "ams_same_continuum" else 1,
                    label=f"{label}: median {p['median']:.3f} ms, p99 {p['p99']:.3f} ms")
            bx.axvline(p["median"], color=color, ls=":", lw=1)
        bp = lat["paths"].get("bp", {}).get("median")
        if bp is not None:
            bx.axvline(bp + 1.0, color="red", lw=1,
                       label="target: RAMS median < BP median + 1 ms")
        added = lat["added_ms"]["median_difference"]
        if added is not None:
            bx.text(0.98, 0.5, f"added by the gateways\n(median RAMS - median BP):\n"
                    f"{added:.3f} ms", transform=bx.transAxes, ha="right", fontsize=8)
        bx.set_xscale("log")
        bx.set_xlabel(f"one-way latency, ms ({lat['size']} B at {lat['rate']:,}/s)")
        bx.set_ylabel("fraction of messages")
        bx.set_ylim(0, 1.01)
        bx.grid(True, which="both", alpha=0.3)
        bx.legend(fontsize=7, loc="lower right")
        bx.set_title(f"latency at {lat['rate']:,} messages/s")
    m = d["machine"]
    fig.suptitle(f"bench/rams: two Tern nodes, BP/LTP/UDP on 127.0.0.1 - {m['cpu']}, "
                 f"{m['cores']} cores, {m['date']}", fontsize=9)
    fig.tight_layout()
    fig.savefig(prefix + ".png", dpi=110)


if __name__ == "__main__":
    main()
