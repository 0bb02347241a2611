#!/usr/bin/python3
"""Plots the cislunar benchmark: plot.py <prefix> reads <prefix>.json, writes <prefix>.png.

One panel per bit error rate: goodput (bytes/s) against the one-way delay
for Tern's BP/LTP/UDP and BP/TCPCLv4/TCP (solid, filled markers), the
paper's figures for its DTN2 stacks beside them (dashed, open markers; its
LTP delivered nothing at 5 s with BER 1e-5: a cross on the axis), the
link's rate and the LTP target as horizontal lines. The disrupted cells
(60 s and 120 s outages at 2 s delay) are drawn at 2 s as triangles, the
paper's disrupted TCP figures as open triangles. A cell that did not
deliver is a red X at the bottom. CFDP as the file mover over BP/LTP
(cfdpput class 2, green squares; class 1, purple diamonds) is drawn beside
bpsendfile's LTP line, its disrupted cells in the same colours.
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

LINK = 14400.0
COLORS = {"ltp": "#1f77b4", "tcp": "#d95f02"}
NAMES = {"ltp": "BP/LTP/UDP", "tcp": "BP/TCPCLv4/TCP"}
PAPER_NAMES = {"ltp": "BP/LTP/UDP", "tcp": "BP/TCPCL/TCP"}
TARGET = {"0": 0.75, "1e-6": 0.75, "1e-5": 0.5}
DISR_MARK = {60: "^", 120: "v"}
# the LTP cells' other file movers (bpsendfile is the plain LTP line)
MOVER_STYLE = {"cfdp2": ("s-", "#1b9e77", "CFDP class 2 (cfdpput) over BP/LTP"),
               "cfdp1": ("D--", "#7570b3", "CFDP class 1 over BP/LTP")}


def mover(g):
    return g.get("mover", "bpsendfile")


def ber_key(b):
    return "0" if b == 0 else f"{b:.0e}".replace("e-0", "e-")


def main():
    prefix = sys.argv[1]
    with open(prefix + ".json") as f:
        res = json.load(f)
    grid = res["grid"]
    bers = sorted({g["ber"] for g in grid})
    paper = res["paper"]["no_disruption"]
    pdis = res["paper"]["tcp_disrupted_2s"]
    cells = res.get("cells", [])
    movers = [mv for mv in MOVER_STYLE
              if any(mv in c["movers"] and "bpsendfile" in c["movers"] for c in cells)]
    nrow = 2 if movers else 1
    fig, axes = plt.subplots(nrow, len(bers), figsize=(5.2 * len(bers), 4.6 + 2.6 * (nrow - 1)),
                             sharey="row", sharex="col", squeeze=False,
                             gridspec_kw={"height_ratios": [4.6, 2.6][:nrow]})
    for ax, ber in zip(axes[0], bers):
        bk = ber_key(ber)
        for st in ("ltp", "tcp"):
            rows = sorted((g for g in grid if g["stack"] == st and g["ber"] == ber
                           and not g["disruption_s"] and mover(g) == "bpsendfile"),
                          key=lambda g: g["delay_s"])
            ok = [g for g in rows if g["delivered"]]
            if ok:
                ax.plot([g["delay_s"] for g in ok], [g["goodput_bytes_per_s"] for g in ok],
                        "o-", color=COLORS[st], label=f"Tern {NAMES[st]}")
            bad = [g for g in rows if not g["delivered"]]
            if bad:
                ax.plot([g["delay_s"] for g in bad], [60] * len(bad), "x", color="red",
                        ms=10, mew=2, label="not delivered")
            for g in grid:
                if (g["stack"] == st and g["ber"] == ber and g["disruption_s"]
                        and mover(g) == "bpsendfile"):
                    y = g["goodput_bytes_per_s"] if g["delivered"] else 60
                    ax.plot([g["delay_s"]], [y], DISR_MARK.get(g["disruption_s"], "s"),
                            color=COLORS[st] if g["delivered"] else "red", ms=8,
                            label=f"Tern {st.upper()}, {g['disruption_s']} s outage")
            pts = paper.get(st, {}).get(bk, [])
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], "o--", color=COLORS[st],
                        mfc="white", alpha=0.8, label=f"paper {PAPER_NAMES[st]} (DTN2)")
        for mv, (style, col, name) in MOVER_STYLE.items():
            rows = sorted((g for g in grid if g["stack"] == "ltp" and g["ber"] == ber
                           and mover(g) == mv), key=lambda g: g["delay_s"])
            ok = [g for g in rows if g["delivered"] and not g["disruption_s"]]
            if ok:
                ax.plot([g["delay_s"] for g in ok], [g["goodput_bytes_per_s"] for g in ok],
                        style, color=col, ms=5, label=f"Tern {name}")
            for g in rows:
                if g["delivered"] and g["disruption_s"]:
                    ax.plot([g["delay_s"] + 0.08], [g["goodput_bytes_per_s"]],
                            DISR_MARK.get(g["disruption_s"], "s"), color=col, ms=7,
                            label=f"{mv}, {g['disruption_s']} s outage")
                elif not g["delivered"]:
                    ax.plot([g["delay_s"]], [60], "x", color="red", ms=10, mew=2,
                            label="not delivered")
        if bk == "1e-5":
            ax.plot([5.0], [60], "x", color=COLORS["ltp"], ms=9, mew=2, alpha=0.7,
                    label="paper LTP: nothing delivered")
        for d, v in pdis.get(bk, {}).items():
            d = int(d)
            if d:
                ax.plot([2.0], [v], DISR_MARK.get(d, "s"), color=COLORS["tcp"], mfc="white",
                        ms=8, label=f"paper TCP, {d} s outage")
        ax.axhline(LINK, color="grey", lw=1)
        ax.text(1.2, LINK * 1.04, "link: 115,200 bit/s = 14,400 B/s (IP bytes)",
                fontsize=7, color="grey")
        ax.axhline(LINK * TARGET[bk], color=COLORS["ltp"], lw=0.8, ls=":")
        ax.text(1.2, LINK * TARGET[bk] * 1.04, f"LTP target {TARGET[bk]:.0%}", fontsize=7,
                color=COLORS["ltp"])
        m = res["metrics"].get(f"ltp_goodput_fraction_min_ber{bk}")
        ttl = f"BER {bk}"
        if m is not None:
            ttl += f" (LTP min {m:.0%} of the link)"
        c = res["metrics"].get(f"cfdp_goodput_fraction_min_ber{bk}")
        if c is not None:
            ttl += f"\nCFDP class 2 / bpsendfile: min {c:.0%}"
        ax.set_title(ttl, fontsize=10)
        ax.set_yscale("log")
        ax.set_ylim(40, 30000)
        if not movers:
            ax.set_xlabel("one-way delay (s)")
        ax.grid(True, which="both", alpha=0.3)
        h, lab = ax.get_legend_handles_labels()
        seen = {}
        for hh, ll in zip(h, lab):
            seen.setdefault(ll, hh)
        ax.legend(seen.values(), seen.keys(), fontsize=6.5, loc="lower left")
    axes[0][0].set_ylabel("goodput (file bytes/s)")
    if movers:
        # second row: each CFDP cell's goodput as a share of bpsendfile's in
        # the same grid point, against the 90 % target
        for ax, ber in zip(axes[1], bers):
            for mv in movers:
                style, col, name = MOVER_STYLE[mv]
                pts = sorted((c for c in cells if c["stack"] == "ltp" and c["ber"] == ber
                              and "fraction_of_bpsendfile" in c["movers"].get(mv, {})),
                             key=lambda c: c["delay_s"])
                plain = [c for c in pts if not c["disruption_s"]]
                ax.plot([c["delay_s"] for c in plain],
                        [c["movers"][mv]["fraction_of_bpsendfile"] for c in plain], style,
                        color=col, ms=5, label=name)
                for c in pts:
                    if c["disruption_s"]:
                        ax.plot([c["delay_s"] + 0.08], [c["movers"][mv]["fraction_of_bpsendfile"]],
                                DISR_MARK.get(c["disruption_s"], "s"), color=col, ms=7,
                                label=f"{mv}, {c['disruption_s']} s outage")
            ax.axhline(0.9, color="#1b9e77", lw=0.8, ls=":")
            ax.text(1.2, 0.905, "CFDP class 2 target: 90 % of bpsendfile", fontsize=7,
                    color="#1b9e77")
            ax.axhline(1.0, color="grey", lw=0.6)
            # zoomed on the target, unless a cell fell far below it
            fr = [c["movers"][mv]["fraction_of_bpsendfile"] for c in cells for mv in movers
                  if "fraction_of_bpsendfile" in c["movers"].get(mv, {})]
            ax.set_ylim(min([0.6] + [f - 0.05 for f in fr]), 1.25)
            ax.set_xlabel("one-way delay (s)")
            ax.grid(True, alpha=0.3)
            h, lab = ax.get_legend_handles_labels()
            seen = {}
            for hh, ll in zip(h, lab):
                seen.setdefault(ll, hh)
            ax.legend(seen.values(), seen.keys(), fontsize=6, loc="lower left", ncol=2)
        axes[1][0].set_ylabel("goodput / bpsendfile's")
    m = res["metrics"]
    title = (f"cislunar: TX -> MX -> RX, a file of {res['config']['file']}\n"
             f"{m['cells_delivered']}/{m['cells_total']} cells delivered "
             + (f"(CFDP class 2 {m['cfdp_cells_delivered_count']}/{m['cfdp_cells_total']}) "
                if m.get("cfdp_cells_total") else "")
             + f"({res['machine']['cores']} cores, {res['total_seconds']:.0f} s)")
    bins = res["config"].get("bin_dirs", {})
    if bins.get("tcp") and bins.get("tcp") != bins.get("ltp"):
        title += f"\nTCP cells run with the ternd of {bins['tcp']} (see docs/cislunar.md)"
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(prefix + ".png", dpi=110)


if __name__ == "__main__":
    main()
