#!/usr/bin/python3
"""Plots bench_sdr results: plot.py <prefix> reads <prefix>.json, writes <prefix>.png.

Two panels: small transactions per second per store mode (log scale, with the
issue's target lines) and 1 MiB transactions in MB/s (log scale, with the disk
fdatasync baseline and the 80 % target line). Bars are medians, error bars
span min..max over the repetitions.
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def bars(ax, cases, keys, labels, colors):
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
        txt = f"{m / 1e6:.2f}M" if m >= 1e6 else (f"{m / 1e3:.1f}k" if m >= 1e4 else f"{m:.0f}")
        ax.annotate(txt, (i, m + hi[i]), textcoords="offset points", xytext=(0, 3),
                    ha="center", fontsize=8, zorder=3)
    return meds


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: plot.py <prefix>  (reads <prefix>.json, writes <prefix>.png)")
    prefix = sys.argv[1]
    with open(prefix + ".json") as f:
        d = json.load(f)
    cases, tg, mach, cfg = d["cases"], d["targets"], d["machine"], d["config"]

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 5.2))

    # panel 1: small transactions
    keys = ["memory_small_txn_per_s", "durable_group_small_txn_per_s",
            "durable_sync_small_txn_per_s"]
    labels = ["memory", "durable\ngroup", "durable\nsync"]
    colors = ["#4c72b0", "#55a868", "#c44e52"]
    if "disk_fdatasync_small_per_s" in cases:
        keys.append("disk_fdatasync_small_per_s")
        labels.append("disk 104 B\n+fdatasync (ref)")
        colors.append("#8c8c8c")
    bars(a1, cases, keys, labels, colors)
    a1.set_yscale("log")
    for key, col, name in [("memory_small_txn_per_s", "#4c72b0", "memory target"),
                           ("durable_group_small_txn_per_s", "#55a868", "durable-group target")]:
        t = tg[key]
        a1.axhline(t["target"], color=col, ls="--", lw=1, zorder=1,
                   label=f"{name} {t['target']:,.0f}/s ({'met' if t['met'] else 'MISSED'})")
    a1.set_ylabel("transactions / s (log); ref bar: writes / s")
    a1.set_title(f"one {cfg['small_write_bytes']} B sdr_write per transaction")
    a1.grid(axis="y", which="both", alpha=0.3, zorder=0)
    a1.legend(fontsize=8, loc="upper right")
    top = max(c["max"] or 0 for k, c in cases.items() if k in keys)
    a1.set_ylim(top=top * 8)

    # panel 2: 1 MiB transactions
    keys = ["memory_1mib_mb_per_s", "durable_group_1mib_mb_per_s",
            "durable_sync_1mib_mb_per_s", "disk_fdatasync_mb_per_s", "memcpy_mb_per_s"]
    bars(a2, cases, keys,
         ["memory\nsdr_write", "durable group\nblob_put", "durable sync\nblob_put",
          "disk 1 MiB\n+fdatasync", "memcpy\n(ref)"],
         ["#4c72b0", "#55a868", "#c44e52", "#8c8c8c", "#cccccc"])
    a2.set_yscale("log")
    disk = d["baselines"]["disk_fdatasync_mb_per_s"]
    t = tg["durable_group_1mib_mb_per_s"]
    a2.axhline(disk, color="#555555", ls="-", lw=1, zorder=1,
               label=f"disk fdatasync baseline {disk:.0f} MB/s")
    a2.axhline(t["target"], color="#55a868", ls="--", lw=1, zorder=1,
               label=f"durable-group target: 80% of disk = {t['target']:.0f} MB/s "
                     f"({'met' if t['met'] else 'MISSED'})")
    a2.set_ylabel("MB/s (MB = 1e6 bytes, log)")
    a2.set_title("1 MiB per transaction")
    a2.grid(axis="y", which="both", alpha=0.3, zorder=0)
    a2.legend(fontsize=8, loc="upper left")
    top = max(c["max"] or 0 for k, c in cases.items() if k in keys)
    a2.set_ylim(top=top * 8)

    lat = d.get("latency", {})
    fig.suptitle(f"Tern SDR store: {mach['cpu']}, {mach['cores']} cores, {mach['kernel']}, "
                 f"store on {mach['store_fs']}", fontsize=11)
    foot = (f"{mach['date']}; median of {cfg['reps']} x {cfg['seconds_per_rep']:.1f} s, "
            f"error bars min..max; heap {cfg['heap_bytes'] >> 20} MiB; durable reps end with "
            f"sdr_flush; durable 1 MiB = sdr_blob_put, last {cfg['blobs_kept']} kept")
    if lat.get("samples"):
        foot += (f"\ndurable-group commit latency (txn_end..flush): p50 {lat['p50_us']:.0f} us, "
                 f"p99 {lat['p99_us']:.0f} us, max {lat['max_us'] / 1000:.1f} ms "
                 f"({lat['samples']} samples)")
    fig.text(0.01, 0.01, foot, fontsize=8, va="bottom")
    fig.tight_layout(rect=(0, 0.07, 1, 0.95))
    fig.savefig(prefix + ".png", dpi=110)


if __name__ == "__main__":
    main()
