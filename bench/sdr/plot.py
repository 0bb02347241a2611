#!/usr/bin/python3
"""Plots bench_sdr results: plot.py <prefix> reads <prefix>.json, writes <prefix>.png.

Three panels: small transactions per second per store mode (log scale, with
the target lines); 1 MiB transactions in MB/s (log scale; on each store bar
the part of its bytes the process wrote, from /proc/self/io, and the disk
baselines beside them); and the on-disk case round by round against the disk
baselines whose repetitions alternate with it, with the 80 % target. Bars
are medians, error bars span min..max over the repetitions. Warnings the
bench raised are printed across the top in red.
"""
import json
import sys
import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def num(v):
    return f"{v / 1e6:.2f}M" if v >= 1e6 else (f"{v / 1e3:.1f}k" if v >= 1e4 else f"{v:.0f}")


def bars(ax, cases, keys, labels, colors, notes=None):
    meds, lo, hi = [], [], []
    for k in keys:
        c = cases[k]
        m = c["median"] or 0
        meds.append(m)
        lo.append(max(m - (c["min"] or m), 0))
        hi.append(max((c["max"] or m) - m, 0))
    x = range(len(keys))
    ax.bar(x, meds, color=colors, yerr=[lo, hi], capsize=4, zorder=2)
    ax.set_xticks(list(x))
    ax.set_xticklabels(labels, fontsize=8)
    for i, m in enumerate(meds):
        note = (notes or {}).get(keys[i])
        ax.annotate(num(m) + (f"\n{note}" if note else ""), (i, m + hi[i]),
                    textcoords="offset points", xytext=(0, 3), ha="center", fontsize=8,
                    zorder=3)
    return meds


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: plot.py <prefix>  (reads <prefix>.json, writes <prefix>.png)")
    prefix = sys.argv[1]
    with open(prefix + ".json") as f:
        d = json.load(f)
    cases, tg, mach, cfg = d["cases"], d["targets"], d["machine"], d["config"]
    dvd = d.get("durable_vs_disk", {})
    warnings = d.get("warnings", [])

    fig, (a1, a2, a3) = plt.subplots(1, 3, figsize=(17, 5.8),
                                     gridspec_kw={"width_ratios": [1, 1.45, 1]})

    # panel 1: small transactions
    keys = ["memory_small_txn_per_s", "durable_group_small_txn_per_s",
            "durable_sync_small_txn_per_s"]
    labels = ["memory", "durable\ngroup", "durable\nsync"]
    colors = ["#4c72b0", "#55a868", "#c44e52"]
    if "disk_fdatasync_small_per_s" in cases:
        keys.append("disk_fdatasync_small_per_s")
        labels.append("disk 104 B\n+fdatasync (ref)")
        colors.append("#8c8c8c")
    if max(bars(a1, cases, keys, labels, colors)) > 0:  # a --cases run may skip them
        a1.set_yscale("log")
    for key, col, name in [("memory_small_txn_per_s", "#4c72b0", "memory target"),
                           ("durable_group_small_txn_per_s", "#55a868", "durable-group target")]:
        t = tg[key]
        a1.axhline(t["target"], color=col, ls="--", lw=1, zorder=1,
                   label=f"{name} {t['target']:,.0f}/s ({'met' if t['met'] else 'MISSED'})")
    a1.set_ylabel("transactions / s (log); ref bar: writes / s")
    a1.set_title(f"one {cfg['small_write_bytes']} B sdr_write per transaction", fontsize=10)
    a1.grid(axis="y", which="both", alpha=0.3, zorder=0)
    a1.legend(fontsize=7, loc="upper right")
    top = max((c["max"] or 0) for k, c in cases.items() if k in keys)
    a1.set_ylim(top=max(top, 1) * 8)

    # panel 2: 1 MiB transactions, and how much of each store's bytes hit the disk
    keys = ["memory_1mib_mb_per_s", "durable_group_1mib_on_disk_mb_per_s",
            "durable_group_1mib_churn_mb_per_s", "durable_sync_1mib_mb_per_s",
            "disk_overwrite_mb_per_s", "disk_fdatasync_mb_per_s", "memcpy_mb_per_s"]
    written = {k: (cases[k].get("written_fraction") or {}).get("median") for k in keys[1:4]}
    notes = {k: f"{fr * 100:.0f}% written" for k, fr in written.items() if fr is not None}
    meds = bars(a2, cases, keys,
                ["memory\nsdr_write", "group, on disk\n(freed after\nits flush)",
                 "group, churn\n(freed 64 puts\nlater)", "sync\nblob_put",
                 "disk over-\nwrite, sync\n/64 MiB", "disk 1 MiB\n+fdatasync,\nnew files",
                 "memcpy\n(ref)"],
                ["#4c72b0", "#55a868", "#a6d8b0", "#c44e52", "#555555", "#8c8c8c", "#cccccc"],
                notes)
    for i, k in enumerate(keys[1:4], start=1):
        fr = written[k]
        if fr is None or not meds[i]:
            continue
        a2.bar([i], [meds[i] * fr], width=0.5, fill=False, hatch="////", edgecolor="black",
               lw=0.6, zorder=2.5,
               label="bytes the process wrote (/proc/self/io)" if i == 1 else None)
    if max(meds) > 0:
        a2.set_yscale("log")
    t = tg["durable_group_1mib_on_disk_mb_per_s"]
    disk = d["baselines"].get(t["of"])
    if disk:
        a2.axhline(disk, color="#555555", ls="-", lw=1, zorder=1,
                   label=f"disk overwrite baseline {disk:.0f} MB/s")
    if t["target"]:
        a2.axhline(t["target"], color="#55a868", ls="--", lw=1, zorder=1,
                   label=f"on-disk target: {t['fraction'] * 100:.0f}% of it = "
                         f"{t['target']:.0f} MB/s ({'met' if t['met'] else 'MISSED'})")
    a2.set_ylabel("MB/s of payload (MB = 1e6 bytes, log)")
    a2.set_title("1 MiB per transaction (durable: sdr_blob_put)", fontsize=10)
    a2.grid(axis="y", which="both", alpha=0.3, zorder=0)
    a2.legend(fontsize=7, loc="upper left")
    top = max((c["max"] or 0) for k, c in cases.items() if k in keys)
    a2.set_ylim(top=max(top, 1) * 8)

    # panel 3: the on-disk case against the disk, round by round
    dur = dvd.get("durable_mb_per_s", {})
    if dur.get("samples"):
        series = [("durable_mb_per_s", "group, on disk", "#55a868", "o"),
                  ("disk_overwrite_mb_per_s", "disk overwrite, sync/64 MiB", "#555555", "s"),
                  ("disk_fdatasync_mb_per_s", "disk 1 MiB + fdatasync, new files", "#8c8c8c",
                   "^")]
        for key, name, col, mk in series:
            sp = dvd.get(key, {})
            v = sp.get("samples") or []
            if not v:
                continue
            x = list(range(1, len(v) + 1))
            a3.plot(x, v, marker=mk, color=col, lw=1,
                    label=f"{name}: median {sp['median']:.0f} "
                          f"({sp['min']:.0f}..{sp['max']:.0f})")
            a3.axhspan(sp["min"], sp["max"], color=col, alpha=0.08, zorder=0)
        if t["target"]:
            a3.axhline(t["target"], color="#55a868", ls="--", lw=1,
                       label=f"target {t['target']:.0f} MB/s")
        r = dvd.get("ratio_to_disk_overwrite", {})
        wf = dvd.get("written_fraction", {})
        wu = dvd.get("warm_up", {})
        txt = []
        if r.get("samples"):
            txt.append(f"on disk / overwrite per round: median {r['median']:.2f} "
                       f"({r['min']:.2f}..{r['max']:.2f})")
        if wf.get("median") is not None:
            txt.append(f"written / put: {wf['median']:.3f} ({wf['min']:.3f}..{wf['max']:.3f}); "
                       f"never written {dvd.get('blob_bytes_never_written', 0):.0f} B")
        if wu.get("mb_per_s"):
            txt.append(f"warm-up, fresh store ({wu['blobs']:.0f} MiB): "
                       f"{wu['mb_per_s']:.0f} MB/s")
        a3.text(0.02, 0.02, "\n".join(txt), transform=a3.transAxes, fontsize=7,
                va="bottom", bbox=dict(boxstyle="round", fc="white", ec="#cccccc"))
        a3.set_xticks(list(range(1, len(dur["samples"]) + 1)))
        a3.set_ylim(bottom=0, top=max(max(dvd[k]["max"] or 0 for k, *_ in series
                                          if dvd.get(k, {}).get("samples")), 1) * 1.45)
        a3.legend(fontsize=7, loc="upper left")
    a3.set_xlabel("round (repetitions alternate: new files, overwrite, on disk)")
    a3.set_ylabel("MB/s (MB = 1e6 bytes)")
    a3.set_title("durable-group 1 MiB on disk vs the disk beside it", fontsize=10)
    a3.grid(alpha=0.3)

    fig.suptitle(f"Tern SDR store: {mach['cpu']}, {mach['cores']} cores, {mach['kernel']}, "
                 f"store on {mach['store_fs']}", fontsize=11)
    if warnings:
        w = "WARNING: " + " | ".join(warnings)
        fig.text(0.5, 0.935, "\n".join(textwrap.wrap(w, 230)[:3]), color="#c00000",
                 fontsize=7, ha="center", va="top", weight="bold")
    lat = d.get("latency", {})
    foot = (f"{mach['date']}; median of {cfg['reps']} x {cfg['seconds_per_rep']:.1f} s, "
            f"error bars min..max; heap {cfg['heap_bytes'] >> 20} MiB; durable reps end with "
            f"sdr_flush; durable 1 MiB = sdr_blob_put, last {cfg['blobs_kept']} kept; "
            f"on disk: a blob is freed only after the flush of its commit; churn: freed "
            f"64 puts later, flushed or not (the store never writes a blob freed before its "
            f"flush)")
    if lat.get("samples"):
        foot += (f"\ndurable-group commit latency (txn_end..flush): p50 {lat['p50_us']:.0f} us, "
                 f"p99 {lat['p99_us']:.0f} us, max {lat['max_us'] / 1000:.1f} ms "
                 f"({lat['samples']} samples)")
    fig.text(0.01, 0.01, foot, fontsize=7, va="bottom")
    fig.tight_layout(rect=(0, 0.06, 1, 0.9 if warnings else 0.95))
    fig.savefig(prefix + ".png", dpi=110)


if __name__ == "__main__":
    main()
