#!/usr/bin/python3
"""Plots the AMS benchmark: plot.py <prefix> reads <prefix>.json, writes <prefix>.png.

Left: messages per second for each point (medians, bars min..max), raw UDP
datagrams per second of the same sizes as dashed lines, targets as red
ticks. Right: one-way latency (half the round trip) against the publishing
rate, median and p99, with the 50 us target.
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
        d = json.load(f)
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(13, 5))
    pts = d["points"]
    labels = [f"{p['size']} B\n{p['subscribers']} sub\n{p['diligence']}" for p in pts]
    med = [p["msgs_per_s"]["median"] or 0 for p in pts]
    lo = [m - (p["msgs_per_s"]["min"] or 0) for m, p in zip(med, pts)]
    hi = [(p["msgs_per_s"]["max"] or 0) - m for m, p in zip(med, pts)]
    colors = ["#1f77b4" if p["diligence"] == "best effort" else "#2ca02c" for p in pts]
    ax.bar(range(len(pts)), med, yerr=[lo, hi], color=colors, capsize=4)
    ax.set_xticks(range(len(pts)))
    ax.set_xticklabels(labels, fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("messages/s reaching every subscriber")
    for size, key, ls in ((100, "100", "--"), (10000, "10000", ":")):
        v = d["raw_udp"][key]["median"]
        if v:
            ax.axhline(v, color="gray", ls=ls, lw=1, label=f"raw UDP {size} B datagrams/s")
    tg = d["targets"]
    for i, p in enumerate(pts):
        name = {(100, 1): "ams_100b_msgs_per_s", (10000, 1): "ams_10kb_msgs_per_s",
                (100, 10): "ams_100b_msgs_per_s_10subs"}.get((p["size"], p["subscribers"]))
        if name:
            ax.plot([i - 0.4, i + 0.4], [tg[name]["target"]] * 2, color="red", lw=2)
    ax.plot([], [], color="red", lw=2, label="target")
    for i, p in enumerate(pts):
        lf = p["loss_fraction"]["median"]
        if lf:
            ax.text(i, med[i], f"loss {lf * 100:.0f}%", ha="center", va="bottom", fontsize=7)
    ax.legend(fontsize=8, loc="lower left")
    ax.set_title("AMS throughput, one continuum on 127.0.0.1")
    lat = d["latency"]
    rates = [x["rate"] for x in lat]
    bx.plot(rates, [x["one_way_us"]["median"] for x in lat], "o-", label="one way, median")
    bx.plot(rates, [x["one_way_us"]["p99"] for x in lat], "s--", label="one way, p99")
    bx.axhline(50, color="red", lw=1, label="target: median < 50 us at 2,500/s")
    bx.set_yscale("log")
    bx.set_xlabel("messages published per second")
    bx.set_ylabel("microseconds (half the round trip)")
    bx.legend(fontsize=8)
    bx.set_title("latency: publish, echo, publish back")
    m = d["machine"]
    fig.suptitle(f"bench/ams: {m['cpu']}, {m['cores']} cores, {m['date']}", fontsize=9)
    fig.tight_layout()
    fig.savefig(prefix + ".png", dpi=110)


if __name__ == "__main__":
    main()
