#!/usr/bin/python3
"""Plots the LTP benchmark: plot.py <prefix> reads <prefix>.json, writes <prefix>.png.

Three panels: LTP goodput vs block size (log-log) at 64,000 B and 1,400 B
segments, with the raw UDP baselines of the same run as horizontal lines of
the same colours and the targets marked; the same points as a fraction of
raw UDP; and the 1 kB service-data-unit case in units/s against its target.
Points are medians, error bars span min..max over the repetitions.
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

COLORS = {64000: "#1f77b4", 1400: "#d95f02"}


def size_label(v, _pos=None):
    if v >= 1e6:
        return f"{v / 1e6:g} MB"
    if v >= 1e3:
        return f"{v / 1e3:g} kB"
    return f"{v:g} B"


def met(t):
    return "met" if t["met"] else "MISSED"


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: plot.py <prefix>  (reads <prefix>.json, writes <prefix>.png)")
    prefix = sys.argv[1]
    with open(prefix + ".json") as f:
        d = json.load(f)
    sweep, tg, mach, base = d["sweep"], d["targets"], d["machine"], d["baselines"]
    raw = {64000: base["raw_udp_64k_gbps"], 1400: base["raw_udp_1400_gbps"]}

    fig, (a1, a2, a3) = plt.subplots(1, 3, figsize=(16, 5.6),
                                     gridspec_kw={"width_ratios": [5, 4, 1.6]})

    # ---- panel 1: goodput vs block size
    allv = []
    for seg in (64000, 1400):
        pts = [p for p in sweep if p["seg"] == seg and p["gbps"]["median"] is not None]
        x = [p["block"] for p in pts]
        m = [p["gbps"]["median"] for p in pts]
        lo = [p["gbps"]["median"] - p["gbps"]["min"] for p in pts]
        hi = [p["gbps"]["max"] - p["gbps"]["median"] for p in pts]
        allv += m + [p["gbps"]["max"] for p in pts]
        a1.errorbar(x, m, yerr=[lo, hi], color=COLORS[seg], marker="o", ms=5, capsize=3,
                    lw=1.6, label=f"Tern LTP, {seg:,} B segments", zorder=3)
        failed = [p["block"] for p in sweep if p["seg"] == seg and "failed" in p]
        for b in failed:
            a1.axvline(b, color=COLORS[seg], ls=":", lw=1)
            a1.annotate("FAILED", (b, 0.5), rotation=90, fontsize=7, color=COLORS[seg])
        if raw[seg]:
            allv.append(raw[seg])
            a1.axhline(raw[seg], color=COLORS[seg], ls="--", lw=1.2, zorder=1,
                       label=f"raw UDP {seg:,} B datagrams: {raw[seg]:.1f} Gbit/s")
    t64, t14, tf = tg["ltp_1mb_64k_gbps"], tg["ltp_1mb_1400_gbps"], tg["ltp_1mb_64k_fraction_of_raw"]
    a1.plot([1e6], [t64["target"]], marker="*", ms=15, color=COLORS[64000], mec="black",
            ls="none", zorder=4,
            label=f"target 64,000 B: {t64['target']:g} Gbit/s at 1 MB ({met(t64)})")
    a1.plot([1e6], [t14["target"]], marker="*", ms=15, color=COLORS[1400], mec="black",
            ls="none", zorder=4,
            label=f"target 1,400 B: {t14['target']:g} Gbit/s at 1 MB ({met(t14)})")
    if tf.get("target_gbps"):
        a1.plot([1e6], [tf["target_gbps"]], marker="v", ms=10, color=COLORS[64000],
                mec="black", ls="none", zorder=4,
                label=f"target 64,000 B: 50% of raw = {tf['target_gbps']:.1f} Gbit/s "
                      f"({met(tf)})")
    a1.set_xscale("log")
    a1.set_yscale("log")
    a1.xaxis.set_major_formatter(FuncFormatter(size_label))
    a1.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
    a1.set_xlabel("block size (log)")
    a1.set_ylabel("goodput, Gbit/s (log)")
    a1.set_title("LTP over UDP 127.0.0.1, two processes")
    a1.grid(which="both", alpha=0.3)
    if allv:
        a1.set_ylim(min(allv) / 2, max(allv) * 2.5)
    a1.legend(fontsize=7.5, loc="upper left")

    # ---- panel 2: fraction of raw UDP
    for seg in (64000, 1400):
        pts = [p for p in sweep if p["seg"] == seg and p.get("fraction_of_raw") is not None]
        if not pts or not raw[seg]:
            continue
        x = [p["block"] for p in pts]
        m = [p["fraction_of_raw"] * 100 for p in pts]
        lo = [(p["gbps"]["median"] - p["gbps"]["min"]) / raw[seg] * 100 for p in pts]
        hi = [(p["gbps"]["max"] - p["gbps"]["median"]) / raw[seg] * 100 for p in pts]
        a2.errorbar(x, m, yerr=[lo, hi], color=COLORS[seg], marker="o", ms=5, capsize=3,
                    lw=1.6, label=f"{seg:,} B segments / raw UDP {seg:,} B")
    a2.axhline(50, color=COLORS[64000], ls="--", lw=1,
               label=f"target: 64,000 B at 1 MB >= 50% ({met(tf)}: "
                     f"{(tf['value'] or 0) * 100:.1f}%)")
    a2.plot([1e6], [(tf["value"] or 0) * 100], marker="*", ms=14, color=COLORS[64000],
            mec="black", ls="none", zorder=4)
    a2.set_xscale("log")
    a2.xaxis.set_major_formatter(FuncFormatter(size_label))
    a2.set_xlabel("block size (log)")
    a2.set_ylabel("% of raw UDP goodput, same run")
    a2.set_ylim(0, max(105, max([p.get("fraction_of_raw") or 0 for p in sweep]) * 110))
    a2.set_title("fraction of the kernel path (sendmmsg/recvmmsg)")
    a2.grid(which="both", alpha=0.3)
    a2.legend(fontsize=7.5, loc="upper left")

    # ---- panel 3: 1 kB units
    tu = tg["ltp_1kb_units_per_s"]
    u = d.get("sdu", {}).get("units_per_s") or {}
    if u.get("median") is not None:
        a3.bar([0], [u["median"]], color="#55a868", width=0.6,
               yerr=[[u["median"] - u["min"]], [u["max"] - u["median"]]], capsize=4, zorder=2)
        a3.annotate(f"{u['median'] / 1e3:,.0f}k/s", (0, u["max"]), textcoords="offset points",
                    xytext=(0, 4), ha="center", fontsize=9)
    else:
        a3.text(0, tu["target"], "FAILED", ha="center", color="red")
    a3.axhline(tu["target"], color="black", ls="--", lw=1, zorder=3)
    a3.annotate(f"target {tu['target'] / 1e3:,.0f}k/s\n({met(tu)})", (0, tu["target"]),
                textcoords="offset points", xytext=(0, 5), ha="center", fontsize=8,
                zorder=4, bbox={"boxstyle": "round", "fc": "white", "alpha": 0.85})
    a3.set_xticks([0])
    a3.set_xticklabels(["1,000 B units\nin 64,000 B blocks"], fontsize=8)
    a3.set_xlim(-0.8, 0.8)
    a3.set_ylim(0, max(tu["target"], u.get("max") or 0) * 1.25)
    a3.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v / 1e3:g}k"))
    a3.set_ylabel("units / s")
    a3.set_title("aggregated SDUs")
    a3.grid(axis="y", alpha=0.3, zorder=0)

    fig.suptitle(f"Tern LTP: {mach['cpu']}, {mach['cores']} cores, {mach['kernel']}, "
                 f"{'root (forced socket buffers)' if mach['root'] else 'not root'}",
                 fontsize=11)
    cfg = d["config"]
    n_met = sum(1 for t in tg.values() if t["met"])
    foot = (f"{mach['date']}; medians, error bars min..max; 1 MB points {cfg['headline_reps']} reps, "
            f"other points {cfg['sweep_reps']}, SDU {cfg.get('sdu_reps', '?')}, "
            f"~{cfg['seconds_per_run']:g} s each; raw UDP {cfg['raw_reps']} x "
            f"{cfg['raw_seconds']:g} s; goodput = counter's payload bytes over its receive "
            f"interval; sizes decimal (1 MB = 1e6 B)\n"
            f"targets met: {n_met} of {len(tg)}; ltpdriver default window "
            f"(min(64, 16 MB / block)); total run {d.get('total_seconds', 0):.0f} s")
    if d.get("failed"):
        foot += f"; FAILED points: {len(d['failed'])}"
    fig.text(0.01, 0.01, foot, fontsize=8, va="bottom")
    fig.tight_layout(rect=(0, 0.06, 1, 0.95))
    fig.savefig(prefix + ".png", dpi=110)


if __name__ == "__main__":
    main()
