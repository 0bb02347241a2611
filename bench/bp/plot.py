#!/usr/bin/python3
"""Plots the BP benchmark: plot.py <prefix> reads <prefix>.json, writes <prefix>.png.

Six panels. Top: goodput against bundle size (log-log) at 64,000 B and
1,400 B segments with the durable 1 MB point, the raw UDP baselines of the
same run (dashed), ION's figures from the issue (crosses) and the targets
(stars); the same points in bundles/s with the 1 kB target; the durable 1
MB point's repetitions beside the memory point's and the disk bound (each
disk baseline run in Gbit/s for two stores on one disk). Bottom: the
round-trip time against the sending rate, direct and through a relay
(context); the latency the relay adds per bundle (per round trip: box
p25..p75, line median, whiskers p5..p99, dots min and max; all bundles of
all repetitions), with its target; the durable fraction of each repetition
against the 70 % target and the fraction the disk allows. Points are
medians, error bars span min..max over the repetitions.
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

    fig, ((a1, a2, a5), (a3, a4, a6)) = plt.subplots(2, 3, figsize=(19, 14))

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

    # ---- panel 3: round trips vs rate (context for panel 4)
    lat = [p for p in d.get("latency", []) if p["reps"]]
    for cl in ("udp", "ltp"):
        pts = [p for p in lat if p["cl"] == cl]
        if not pts:
            continue
        x = [p["rate"] for p in pts]
        c = CL_COLORS[cl]
        for path, ls in (("direct", ":"), ("relay", "--")):
            m = [p[path]["median_us"] for p in pts]
            a3.errorbar(x, [s["median"] for s in m],
                        yerr=[[s["median"] - s["min"] for s in m],
                              [s["max"] - s["median"] for s in m]],
                        color=c, ls=ls, marker="o", ms=4, capsize=3,
                        label=f"{cl.upper()}: {'direct' if path == 'direct' else 'via relay'}"
                              f" RTT, median")
            a3.plot(x, [p[path]["p99_us"]["median"] for p in pts], color=c, ls=ls,
                    marker="^", lw=0.8, alpha=0.5,
                    label=f"{cl.upper()}: {'direct' if path == 'direct' else 'via relay'}"
                          f" RTT, p99")
    a3.set_yscale("log")
    a3.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
    a3.set_xlabel("bundles / s sent (100 B payload)")
    a3.set_ylabel("round-trip time, microseconds (log)")
    a3.set_title("bpping -> bpecho round trip, direct and through a relay (context)")
    a3.grid(which="both", alpha=0.3)
    a3.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=2)

    # ---- panel 4: the relay's added latency per bundle
    tl = tg["relay_added_latency_us_median_1000"]
    rates = sorted({p["rate"] for p in lat})
    step = min((b - a for a, b in zip(rates, rates[1:])), default=1000)
    w = step * 0.3
    drawn = False
    for i, cl in enumerate(("udp", "ltp")):
        pts = [p for p in lat if p["cl"] == cl and p["added_us"].get("round_trip")]
        if not pts:
            continue
        drawn = True
        c = CL_COLORS[cl]
        off = (i - 0.5) * w * 1.2
        stats = []
        for p in pts:
            # the box: every bundle's one crossing (requests and replies)
            r = p["added_us"].get("bundle") or p["added_us"]["round_trip"]
            stats.append({"med": r["median"], "q1": r["p25"], "q3": r["p75"],
                          "whislo": r["p5"], "whishi": r["p99"], "fliers": [r["min"], r["max"]],
                          "label": ""})
        pos = [p["rate"] + off for p in pts]
        a4.bxp(stats, positions=pos, widths=w, manage_ticks=False, patch_artist=True,
               boxprops={"facecolor": c, "alpha": 0.35, "edgecolor": c},
               medianprops={"color": c, "lw": 2}, whiskerprops={"color": c},
               capprops={"color": c},
               flierprops={"marker": "o", "ms": 3, "mfc": c, "mec": c})
        a4.plot(pos, [s_["med"] for s_ in stats], color=c, lw=1.5,
                label=f"{cl.upper()}: per bundle (one crossing), median; box p25-p75, "
                      f"whiskers p5-p99, dots min/max")
        a4.plot(pos, [p["added_us"]["round_trip"]["median"] for p in pts], color=c, lw=0.8,
                ls=":", label=f"{cl.upper()}: per round trip (two crossings), median")
        for k, mk in (("request", ">"), ("reply", "<")):
            a4.plot(pos, [p["added_us"][k]["median"] for p in pts], color=c, ls="none",
                    marker=mk, ms=5, label=f"{cl.upper()}: {k} crossing, median")
    if drawn:
        a4.plot([1000], [tl["target"]], marker="*", ms=15, color=CL_COLORS["udp"],
                mec="black", ls="none", zorder=5,
                label=f"target UDP 1,000/s: median < {tl['target']:g} us ({met(tl)}: "
                      + ("n/a)" if tl["value"] is None else f"{tl['value']:.0f} us)"))
        a4.set_yscale("log")
        a4.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
        a4.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=2)
    else:
        why = d.get("added_latency_unavailable") or "no latency runs"
        a4.text(0.5, 0.5, f"not measured:\n{why}", ha="center", va="center",
                transform=a4.transAxes, fontsize=10)
    if rates:
        a4.set_xticks(rates)
        a4.set_xlim(rates[0] - step * 0.6, rates[-1] + step * 0.6)
    a4.set_xlabel("bundles / s sent (100 B payload)")
    a4.set_ylabel("added by the relay, microseconds (log)")
    a4.set_title("latency the relay adds, per bundle (egress - ingress on the wire)\n"
                 "box p25..p75, whiskers p5..p99, dots min and max")
    a4.grid(which="both", alpha=0.3)

    # ---- panels 5 and 6: the durable point's repetitions, the disk beside it
    sp = d.get("durable_spread")
    if sp and sp["durable_gbps"]["values"]:
        cols = [("memory\n1 MB, 64,000 B", sp["memory_gbps"], COLORS[64000]),
                ("durable\n1 MB, 64,000 B", sp["durable_gbps"], "black"),
                ("disk bound\n(fdatasync'd / 2)", sp["disk_bound_gbps"], "#8c564b")]
        for i, (name, sm, c) in enumerate(cols):
            v = sm["values"]
            if not v:
                continue
            xs = [i + (j - (len(v) - 1) / 2) * 0.08 for j in range(len(v))]
            a5.plot(xs, v, ls="none", marker="o", ms=7, color=c, alpha=0.8)
            a5.errorbar([i + 0.3], [sm["median"]], yerr=[[sm["median"] - sm["min"]],
                                                       [sm["max"] - sm["median"]]],
                        color=c, marker="_", ms=20, capsize=4, lw=1.5)
            a5.annotate(f"{sm['median']:.2f}", (i + 0.36, sm["median"]), fontsize=8,
                        va="center")
        if sp["memory_gbps"]["median"]:
            a5.axhline(sp["memory_gbps"]["median"] * tdf["target"], color="black", ls="--",
                       lw=1, label=f"70 % of the memory median "
                                   f"({sp['memory_gbps']['median'] * tdf['target']:.2f} Gbit/s)")
            a5.legend(fontsize=8, loc="lower right")
        a5.set_xticks(range(len(cols)))
        a5.set_xticklabels([c[0] for c in cols], fontsize=8)
        a5.set_xlim(-0.5, len(cols) - 0.3)
        a5.set_ylim(bottom=0)
        fr = sp["fraction"]["values"]
        xs = list(range(1, len(fr) + 1))
        a6.plot(xs, [f * 100 for f in fr], ls="none", marker="o", ms=8, color="black",
                label=f"durable / memory per repetition ({sp['fraction_method'].split(':')[0]})")
        a6.axhline(sp["fraction"]["median"] * 100, color="black", lw=1, alpha=0.6,
                   label=f"median of the repetitions: {sp['fraction']['median'] * 100:.1f} %")
        a6.axhline(tdf["target"] * 100, color="#d62728", ls="--", lw=1.2,
                   label=f"target {tdf['target'] * 100:.0f} % ({met(tdf)}: metric "
                         f"{(tdf['value'] or 0) * 100:.1f} % = median / median)")
        if sp.get("fraction_allowed_by_disk"):
            a6.axhline(sp["fraction_allowed_by_disk"] * 100, color="#8c564b", ls=":", lw=1.5,
                       label=f"what the disk allows: disk bound / memory median = "
                             f"{sp['fraction_allowed_by_disk'] * 100:.0f} %")
        a6.set_xticks(xs)
        a6.set_xlim(0.5, len(fr) + 0.5)
        a6.set_ylim(0, max([110] + [f * 105 for f in fr] +
                           [(sp.get("fraction_allowed_by_disk") or 0) * 105]))
        a6.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=1)
    else:
        for ax in (a5, a6):
            ax.text(0.5, 0.5, "no durable repetitions", ha="center", va="center",
                    transform=ax.transAxes)
    a5.set_ylabel("Gbit/s")
    a5.set_title("durable 1 MB repetitions beside memory and the disk")
    a5.grid(axis="y", alpha=0.3)
    a6.set_xlabel("repetition")
    a6.set_ylabel("durable goodput / memory goodput, %")
    a6.set_title("durable fraction per repetition: noise or regression?")
    a6.grid(axis="y", alpha=0.3)

    fig.suptitle(f"Tern BP between real nodes on 127.0.0.1: {mach['cpu']}, {mach['cores']} "
                 f"cores, {mach['kernel']}", fontsize=11)
    cfg = d["config"]
    n_met = sum(1 for t in tg.values() if t["met"])
    foot = (f"{mach['date']}; medians of {cfg['reps']} runs, error bars min..max; "
            f"~{cfg['seconds_per_run']:g} s per throughput run, memory stores unless "
            f"marked; goodput = (n - 1) bundles over bpcounter's first-to-last interval; "
            f"sizes decimal\nadded latency = per bundle, the relay's egress - ingress "
            f"datagram timestamps on lo (one crossing per bundle; never negative); "
            f"targets met: {n_met} of {len(tg)}; total run {d.get('total_seconds', 0):.0f} s")
    if d.get("failed"):
        foot += f"; FAILED: {len(d['failed'])}"
    fig.text(0.01, 0.01, foot, fontsize=8, va="bottom")
    fig.tight_layout(rect=(0, 0.03, 1, 0.97))
    fig.savefig(prefix + ".png", dpi=110)


if __name__ == "__main__":
    main()
