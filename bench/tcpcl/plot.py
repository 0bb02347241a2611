#!/usr/bin/python3
"""Plots the BP-over-TCP benchmark: plot.py <prefix> reads <prefix>.json, writes <prefix>.png.

Three panels: goodput against bundle size (log-log) for TCPCLv4, STCP and
MTCP with the raw TCP baseline of the same run (dashed), HDTN's figures from
the issue (crosses) and the 1 MB target (star); the same points in
bundles/s with the 1 kB target; and bpping's round trip (median and p99)
over each flavour with the 1 ms target. Points are medians, error bars span
min..max over the repetitions.
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

COLORS = {"tcp": "#1f77b4", "stcp": "#d95f02", "mtcp": "#2ca02c"}
NAMES = {"tcp": "TCPCLv4", "stcp": "STCP", "mtcp": "MTCP"}


def size_label(v, _pos=None):
    if v >= 1e6:
        return f"{v / 1e6:g} MB"
    if v >= 1e3:
        return f"{v / 1e3:g} kB"
    return f"{v:g} B"


def met(t):
    return "met" if t["met"] else "MISSED"


def errbar(ax, pts, key, **kw):
    pts = [p for p in pts if p[key]["median"] is not None]
    if not pts:
        return
    x = [p["size"] for p in pts]
    m = [p[key]["median"] for p in pts]
    lo = [p[key]["median"] - p[key]["min"] for p in pts]
    hi = [p[key]["max"] - p[key]["median"] for p in pts]
    ax.errorbar(x, m, yerr=[lo, hi], capsize=3, **kw)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: plot.py <prefix>  (reads <prefix>.json, writes <prefix>.png)")
    prefix = sys.argv[1]
    with open(prefix + ".json") as f:
        d = json.load(f)
    sweep, tg, mach, base = d["sweep"], d["targets"], d["machine"], d["baselines"]
    hdtn, rtt = d.get("hdtn_reference", {}), d.get("rtt", [])
    flavours = [f for f in NAMES if any(p["flavour"] == f for p in sweep)]

    fig, (a1, a2, a3) = plt.subplots(1, 3, figsize=(18, 7.6))

    # ---- panel 1: goodput vs bundle size
    for fl in flavours:
        pts = [p for p in sweep if p["flavour"] == fl]
        errbar(a1, pts, "gbps", color=COLORS[fl], marker="o", ms=5, lw=1.6, zorder=3,
               label=f"Tern BP/{NAMES[fl]} (memory stores)")
        for p in pts:
            if "failed" in p:
                a1.axvline(p["size"], color=COLORS[fl], ls=":", lw=1)
    if base.get("raw_tcp_1mb_gbps"):
        a1.axhline(base["raw_tcp_1mb_gbps"], color="black", ls="--", lw=1.1, zorder=1,
                   label=f"raw TCP, 1 MB writes: {base['raw_tcp_1mb_gbps']:.1f} Gbit/s")
    t1 = tg["bp_tcpclv4_1mb_gbps"]
    a1.plot([1e6], [t1["target"]], marker="*", ms=15, color=COLORS["tcp"], mec="black",
            ls="none", zorder=5,
            label=f"target TCPCLv4 1 MB: {t1['target']:g} Gbit/s ({met(t1)})")
    if hdtn.get("bp_tcpclv4_1mb_gbps"):
        a1.plot([1e6], [hdtn["bp_tcpclv4_1mb_gbps"]], marker="x", ms=9, mew=2,
                color=COLORS["tcp"], ls="none", zorder=4,
                label=f"HDTN TCPCLv4 (issue): {hdtn['bp_tcpclv4_1mb_gbps']:g} Gbit/s")
        a1.plot([1e6], [hdtn["bp_stcp_1mb_gbps"]], marker="x", ms=9, mew=2,
                color=COLORS["stcp"], ls="none", zorder=4,
                label=f"HDTN STCP (issue): {hdtn['bp_stcp_1mb_gbps']:g} Gbit/s")
    a1.set_xscale("log")
    a1.set_yscale("log")
    a1.xaxis.set_major_formatter(FuncFormatter(size_label))
    a1.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
    a1.set_xlabel("bundle size (log)")
    a1.set_ylabel("goodput at bpcounter, Gbit/s (log)")
    a1.set_title("bpdriver -> ternd -> TCP CL -> ternd -> bpcounter")
    a1.grid(which="both", alpha=0.3)
    a1.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2)

    # ---- panel 2: bundles/s vs bundle size
    for fl in flavours:
        errbar(a2, [p for p in sweep if p["flavour"] == fl], "bundles_per_s",
               color=COLORS[fl], marker="o", ms=5, lw=1.6, zorder=3, label=NAMES[fl])
    if base.get("raw_tcp_1kb_writes_per_s"):
        a2.plot([1000], [base["raw_tcp_1kb_writes_per_s"]], marker="D", ms=7,
                color="black", ls="none", zorder=4,
                label=f"raw TCP 1 kB writes: {base['raw_tcp_1kb_writes_per_s']:,.0f}/s")
    tb = tg["bp_tcpclv4_1kb_bundles_per_s"]
    a2.plot([1000], [tb["target"]], marker="*", ms=15, color=COLORS["tcp"], mec="black",
            ls="none", zorder=5,
            label=f"target TCPCLv4 1 kB: {tb['target']:,.0f}/s ({met(tb)}: "
                  f"{(tb['value'] or 0):,.0f})")
    if hdtn.get("bp_tcpclv4_1kb_bundles_per_s"):
        a2.plot([1000, 1000], [hdtn["bp_tcpclv4_1kb_bundles_per_s"],
                               hdtn["bp_stcp_1kb_bundles_per_s"]],
                marker="x", ms=9, mew=2, color="grey", ls="none", zorder=4,
                label="HDTN (issue): 41,000/s TCPCLv4, 59,500/s STCP")
    a2.set_xscale("log")
    a2.set_yscale("log")
    a2.xaxis.set_major_formatter(FuncFormatter(size_label))
    a2.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:,.0f}"))
    a2.set_xlabel("bundle size (log)")
    a2.set_ylabel("bundles/s at bpcounter (log)")
    a2.set_title("bundle rate")
    a2.grid(which="both", alpha=0.3)
    a2.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2)

    # ---- panel 3: bpping round trip per flavour
    xs = list(range(len(rtt)))
    for x, p in zip(xs, rtt):
        fl = p["flavour"]
        for key, off, hatch in (("median_ms", -0.18, None), ("p99_ms", 0.18, "//")):
            s = p[key]
            if s["median"] is None:
                a3.annotate("FAILED", (x, 0.1), ha="center", color=COLORS[fl])
                continue
            a3.bar(x + off, s["median"], width=0.34, color=COLORS[fl], hatch=hatch,
                   alpha=0.85, yerr=[[s["median"] - s["min"]], [s["max"] - s["median"]]],
                   capsize=3, label=f"{NAMES[fl]} {'median' if hatch is None else 'p99'}: "
                                    f"{s['median']:.3f} ms")
    tr = tg["bpping_tcpclv4_rtt_ms_median"]
    a3.axhline(tr["target"], color="red", ls="--", lw=1.2,
               label=f"target TCPCLv4 median < {tr['target']:g} ms ({met(tr)})")
    a3.set_xticks(xs)
    a3.set_xticklabels([NAMES[p["flavour"]] for p in rtt])
    a3.set_ylabel("bpping round trip, ms")
    a3.set_title(f"bpping -> bpecho, {rtt[0]['payload'] if rtt else 100} B every "
                 f"{(rtt[0]['interval_s'] * 1000) if rtt else 2:g} ms")
    a3.grid(axis="y", alpha=0.3)
    a3.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.08), ncol=2)

    fig.suptitle(f"Tern BP over TCP, two ternd on 127.0.0.1 — {mach['cpu']}, "
                 f"{mach['cores']} cores, {mach['date']}", fontsize=10)
    fig.tight_layout()
    fig.savefig(prefix + ".png", dpi=110)


if __name__ == "__main__":
    main()
