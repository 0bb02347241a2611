#!/usr/bin/python3
"""Plots the BP benchmark: plot.py <prefix> reads <prefix>.json, writes <prefix>.png.

Three panels: goodput against bundle size (log-log) at 64,000 B and 1,400 B
segments with the durable 1 MB point, the raw UDP baselines of the same run
(dashed), ION's figures from the issue (crosses) and the targets (stars);
the same points in bundles/s with the 1 kB target; and the round-trip
latency against the sending rate, direct and through a relay, over the UDP
convergence layer and LTP, with the added latency (relay - direct) and its
target. Points are medians, error bars span min..max over the repetitions.
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

COLORS = {64000: "#1f77b4", 1400: "#d95f02"}
CL_COLORS = {"udp": "#2ca02c", "ltp": "#9467bd"}


def size_label(v, _pos=None):
    if v >= 1e6:
        return f"{v / 1e6:g} MB"
    if v >= 1e3:
        return f"{v / 1e3:g} kB"
    return f"{v:g} B"


def met(t):
    return "met" if t["met"] else "MISSED"


def errbar(ax, pts, key, scale=1.0, **kw):
    pts = [p for p in pts if p[key]["median"] is not None]
    if not pts:
        return
    x = [p["size"] for p in pts]
    m = [p[key]["median"] * scale for p in pts]
    lo = [(p[key]["median"] - p[key]["min"]) * scale for p in pts]
    hi = [(p[key]["max"] - p[key]["median"]) * scale for p in pts]
    ax.errorbar(x, m, yerr=[lo, hi], capsize=3, **kw)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: plot.py <prefix>  (reads <prefix>.json, writes <prefix>.png)")
    prefix = sys.argv[1]
    with open(prefix + ".json") as f:
        d = json.load(f)
    sweep, tg, mach, base = d["sweep"], d["targets"], d["machine"], d["baselines"]
    ion, dur = d.get("ion_reference", {}), d.get("durable")
    raw = {64000: base.get("raw_udp_64k_gbps"), 1400: base.get("raw_udp_1400_gbps")}

    fig, (a1, a2, a3) = plt.subplots(1, 3, figsize=(18, 7.6))

    # ---- panel 1: goodput vs bundle size
    for seg in (64000, 1400):
        pts = [p for p in sweep if p["seg"] == seg]
        errbar(a1, pts, "gbps", color=COLORS[seg], marker="o", ms=5, lw=1.6, zorder=3,
               label=f"Tern BP/LTP, {seg:,} B segments (memory)")
        for p in pts:
            if "failed" in p:
                a1.axvline(p["size"], color=COLORS[seg], ls=":", lw=1)
                a1.annotate("FAILED", (p["size"], 0.05), rotation=90, fontsize=7,
                            color=COLORS[seg])
        if raw[seg]:
            a1.axhline(raw[seg], color=COLORS[seg], ls="--", lw=1.1, zorder=1,
                       label=f"raw UDP {seg:,} B datagrams: {raw[seg]:.1f} Gbit/s")
    if dur and dur["gbps"]["median"] is not None:
        g = dur["gbps"]
        a1.errorbar([1.12e6], [g["median"]], yerr=[[g["median"] - g["min"]],
                                                [g["max"] - g["median"]]],
                    color="black", marker="s", ms=6, capsize=3, ls="none", zorder=4,
                    label=f"durable stores, 64,000 B: {g['median']:.2f} Gbit/s")
    t64, t14 = tg["bp_ltp_1mb_64k_gbps"], tg["bp_ltp_1mb_1400_gbps"]
    tdf = tg["bp_ltp_1mb_64k_durable_fraction"]
    a1.plot([1e6], [t64["target"]], marker="*", ms=15, color=COLORS[64000], mec="black",
            ls="none", zorder=5, label=f"target 64,000 B: {t64['target']:g} Gbit/s ({met(t64)})")
    a1.plot([1e6], [t14["target"]], marker="*", ms=15, color=COLORS[1400], mec="black",
            ls="none", zorder=5, label=f"target 1,400 B: {t14['target']:g} Gbit/s ({met(t14)})")
    if t64["value"]:
        a1.plot([1e6], [t64["value"] * tdf["target"]], marker="v", ms=9, color="black",
                ls="none", zorder=5,
                label=f"target durable: 70% of memory ({met(tdf)}: "
                      f"{(tdf['value'] or 0) * 100:.0f}%)")
    if ion.get("bp_ltp_1mb_64k_gbps"):
        a1.plot([1e6, 1e6], [ion["bp_ltp_1mb_64k_gbps"], ion["bp_ltp_1mb_1400_gbps"]],
                marker="x", ms=9, mew=2, color="grey", ls="none", zorder=4,
                label="ION 4.1.3, same machine (issue): 3.5 / 0.11 Gbit/s")
    a1.set_xscale("log")
    a1.set_yscale("log")
    a1.xaxis.set_major_formatter(FuncFormatter(size_label))
    a1.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
    a1.set_xlabel("bundle size (log)")
    a1.set_ylabel("goodput at bpcounter, Gbit/s (log)")
    a1.set_title("bpdriver -> BP/LTP/UDP -> bpcounter, two ternd")
    a1.grid(which="both", alpha=0.3)
    a1.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2)

    # ---- panel 2: bundles/s vs bundle size
    for seg in (64000, 1400):
        errbar(a2, [p for p in sweep if p["seg"] == seg], "bundles_per_s",
               color=COLORS[seg], marker="o", ms=5, lw=1.6, zorder=3,
               label=f"{seg:,} B segments")
    tb = tg["bp_ltp_1kb_bundles_per_s"]
    a2.plot([1000], [tb["target"]], marker="*", ms=15, color=COLORS[64000], mec="black",
            ls="none", zorder=5,
            label=f"target 1 kB: {tb['target']:,.0f}/s ({met(tb)}: {(tb['value'] or 0):,.0f})")
    if ion.get("bp_ltp_1kb_bundles_per_s"):
        a2.plot([1000], [ion["bp_ltp_1kb_bundles_per_s"]], marker="x", ms=9, mew=2,
                color="grey", ls="none", zorder=4, label="ION 4.1.3 (issue): 7,900/s")
    a2.set_xscale("log")
    a2.set_yscale("log")
    a2.xaxis.set_major_formatter(FuncFormatter(size_label))
    a2.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:,.0f}"))
    a2.set_xlabel("bundle size (log)")
    a2.set_ylabel("bundles / s (log)")
    a2.set_title("bundle rate (1 kB bundles aggregated into LTP blocks)")
    a2.grid(which="both", alpha=0.3)
    a2.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2)

    # ---- panel 3: latency vs rate
    lat = [p for p in d.get("latency", []) if p["reps"]]
    for cl in ("udp", "ltp"):
        pts = [p for p in lat if p["cl"] == cl]
        if not pts:
            continue
        x = [p["rate"] for p in pts]
        c = CL_COLORS[cl]
        a3.plot(x, [p["direct"]["median_us"]["median"] for p in pts], color=c, ls=":",
                marker=".", label=f"{cl.upper()}: direct RTT, median")
        a3.plot(x, [p["relay"]["median_us"]["median"] for p in pts], color=c, ls="--",
                marker=".", label=f"{cl.upper()}: via relay RTT, median")
        m = [p["added_median_us"] for p in pts]
        a3.errorbar(x, [s["median"] for s in m],
                    yerr=[[s["median"] - s["min"] for s in m],
                          [s["max"] - s["median"] for s in m]],
                    color=c, marker="o", lw=2, capsize=3,
                    label=f"{cl.upper()}: added by the relay, median")
        a3.plot(x, [p["added_p99_us"]["median"] for p in pts], color=c, marker="^",
                lw=1, alpha=0.6, label=f"{cl.upper()}: added by the relay, p99")
    tl = tg["relay_added_latency_us_median_1000"]
    a3.plot([1000], [tl["target"]], marker="*", ms=15, color=CL_COLORS["udp"], mec="black",
            ls="none", zorder=5,
            label=f"target UDP 1,000/s: median added < {tl['target']:g} us ({met(tl)})")
    a3.axhline(0, color="black", lw=0.6)
    a3.set_yscale("symlog", linthresh=100)
    a3.set_xlabel("bundles / s sent (100 B payload)")
    a3.set_ylabel("microseconds (symlog)")
    a3.set_title("bpping -> bpecho round trip, direct and through a relay")
    a3.grid(which="both", alpha=0.3)
    a3.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2)

    fig.suptitle(f"Tern BP between real nodes on 127.0.0.1: {mach['cpu']}, {mach['cores']} "
                 f"cores, {mach['kernel']}", fontsize=11)
    cfg = d["config"]
    n_met = sum(1 for t in tg.values() if t["met"])
    foot = (f"{mach['date']}; medians of {cfg['reps']} runs, error bars min..max; "
            f"~{cfg['seconds_per_run']:g} s per throughput run, memory stores unless "
            f"marked; goodput = (n - 1) bundles over bpcounter's first-to-last interval; "
            f"sizes decimal\nadded latency = relay-path RTT - direct RTT (a round trip "
            f"crosses the relay twice); targets met: {n_met} of {len(tg)}; total run "
            f"{d.get('total_seconds', 0):.0f} s")
    if d.get("failed"):
        foot += f"; FAILED: {len(d['failed'])}"
    fig.text(0.01, 0.01, foot, fontsize=8, va="bottom")
    fig.tight_layout(rect=(0, 0.05, 1, 0.96))
    fig.savefig(prefix + ".png", dpi=110)


if __name__ == "__main__":
    main()
