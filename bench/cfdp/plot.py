#!/usr/bin/python3
"""Plots the CFDP benchmark: plot.py <prefix> reads <prefix>.json, writes <prefix>.png.

Left: the 1 GiB class 2 transfer's goodput per store mode (bar: median,
dots: each repetition) beside BP's own goodput for bundles of cfdpd's PDU
size between the same nodes in the same run (hatched), with the targets
(dashed). Right: 10,000 files of 1 kB, files/s per store mode, with the
2,000 files/s target.
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    prefix = sys.argv[1]
    with open(prefix + ".json") as f:
        r = json.load(f)
    modes = [m for m in ("memory", "durable") if m in r["series"]]
    tg = r["targets"]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.5))
    for i, m in enumerate(modes):
        s = r["series"][m]
        big = (s.get("big") or {}).get("gbps") or {}
        bp = (s.get("bp") or {}).get("gbps") or {}
        if big.get("median") is not None:
            a1.bar(i - 0.2, big["median"], 0.4, color="#1f77b4",
                   label="CFDP 1 GiB class 2" if i == 0 else None)
            a1.plot([i - 0.2] * len(big["values"]), big["values"], "k.", ms=5)
        if bp.get("median") is not None:
            a1.bar(i + 0.2, bp["median"], 0.4, color="#aec7e8", hatch="//",
                   label="BP, 64,000 B bundles (baseline)" if i == 0 else None)
            a1.plot([i + 0.2] * len(bp["values"]), bp["values"], "k.", ms=5)
        key = "cfdp_1gib_gbps" if m == "memory" else "cfdp_1gib_durable_gbps"
        t = tg[key]
        a1.hlines(t["target"], i - 0.45, i + 0.45, colors="r", linestyles="dashed",
                  label="target" if i == 0 else None)
        a1.annotate("met" if t["met"] else "MISSED", (i - 0.2, t["target"]),
                    textcoords="offset points", xytext=(0, 4), ha="center", color="r",
                    fontsize=8)
        sm = s.get("small") or {}
        if sm.get("files_per_s"):
            a2.bar(i, sm["files_per_s"], 0.5, color="#2ca02c")
            a2.annotate(f"{sm['files_per_s']:,.0f}", (i, sm["files_per_s"]),
                        textcoords="offset points", xytext=(0, 3), ha="center", fontsize=8)
    t = tg["cfdp_small_files_per_s"]
    a2.axhline(t["target"], color="r", linestyle="dashed",
               label=f"target (memory): {'met' if t['met'] else 'MISSED'}")
    for a in (a1, a2):
        a.set_xticks(range(len(modes)))
        a.set_xticklabels([f"{m} stores" for m in modes])
        a.legend(fontsize=8, loc="upper right")
        a.grid(axis="y", alpha=0.3)
    a1.set_ylabel("goodput, Gbit/s")
    b = next((r["series"][m]["big"].get("bytes") for m in modes
              if (r["series"][m].get("big") or {}).get("bytes")), 1 << 30)
    a1.set_title(f"{b / 2**30:g} GiB, class 2, BP/LTP/UDP on 127.0.0.1")
    a2.set_ylabel("files/s (all finished, SHA-256 verified)")
    n = next((r["series"][m]["small"].get("files") for m in modes
              if (r["series"][m].get("small") or {}).get("files")), None)
    a2.set_title(f"{n:,} files of 1 kB, class 2" if n else "small files, class 2")
    mach = r["machine"]
    fig.suptitle(f"cfdpd <-> cfdpd: {mach['cpu']}, {mach['cores']} cores, "
                 f"load {mach['loadavg_start']:.1f} -> {mach.get('loadavg_end', 0):.1f}, "
                 f"{r['config']['reps']} repetition(s)", fontsize=9)
    fig.tight_layout()
    fig.savefig(prefix + ".png", dpi=110)


if __name__ == "__main__":
    main()
