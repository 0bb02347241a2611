#!/usr/bin/python3
"""tables.py <prefix>: the Markdown tables of docs/cislunar.md from <prefix>.json.

Prints, for the LTP cells, every mover's goodput by BER and delay (and,
for CFDP, its share of bpsendfile's in the same grid point), the disrupted
cells, the TCP cells, and the metrics line.
"""
import json
import sys

LINK = 14400.0
MOVERS = ("bpsendfile", "cfdp2", "cfdp1")


def ber_key(b):
    return "0" if b == 0 else f"{b:.0e}".replace("e-0", "e-")


def cell(g, base=None):
    if g is None:
        return ""
    if not g["delivered"]:
        return "not delivered"
    v = g["goodput_bytes_per_s"]
    if base is not None and base.get("delivered"):
        return f"{v:,.0f} ({v / base['goodput_bytes_per_s']:.0%})"
    return f"{v:,.0f} ({v / LINK:.0%})"


def main():
    res = json.load(open(sys.argv[1] + ".json"))
    grid = res["grid"]
    mv = lambda g: g.get("mover", "bpsendfile")  # noqa: E731
    find = {(g["stack"], mv(g), g["delay_s"], g["ber"], g["disruption_s"]): g for g in grid}
    delays = sorted({g["delay_s"] for g in grid if not g["disruption_s"]})
    bers = sorted({g["ber"] for g in grid})
    head = "| BER | mover | " + " | ".join(f"{d:g} s" for d in delays) + " |"
    sep = "|---|---|" + "---|" * len(delays)
    print("BP/LTP/UDP, no disruption: goodput in bytes/s (bpsendfile: share of "
          "14,400 B/s; CFDP: share of bpsendfile's in the same grid point)\n")
    print(head)
    print(sep)
    for b in bers:
        for m in MOVERS:
            row = [find.get(("ltp", m, d, b, 0)) for d in delays]
            if not any(row):
                continue
            base = [find.get(("ltp", "bpsendfile", d, b, 0)) for d in delays]
            cells = [cell(g, None if m == "bpsendfile" else bs) for g, bs in zip(row, base)]
            print(f"| {ber_key(b)} | {m} | " + " | ".join(cells) + " |")
    dis = sorted({g["disruption_s"] for g in grid if g["disruption_s"]})
    if dis:
        print("\nWith a disruption at 2 s delay: goodput in bytes/s (seconds to deliver; "
              "bpsendfile: share of 14,400 B/s; CFDP: share of bpsendfile's)\n")
        print("| stack | BER | mover | no outage | " + " | ".join(f"{d} s" for d in dis) + " |")
        print("|---|---|---|---|" + "---|" * len(dis))
        for st in ("ltp", "tcp"):
            for b in bers:
                for m in MOVERS:
                    row = [find.get((st, m, 2.0, b, d)) for d in [0] + dis]
                    if not any(row):
                        continue
                    base = [find.get((st, "bpsendfile", 2.0, b, d)) for d in [0] + dis]
                    out = []
                    for g, bs in zip(row, base):
                        c = cell(g, None if m == "bpsendfile" else bs)
                        if g is not None and g["delivered"]:
                            c += f", {g['seconds']:.0f} s"
                        out.append(c)
                    print(f"| {st.upper()} | {ber_key(b)} | {m} | " + " | ".join(out) + " |")
    if any(g["stack"] == "tcp" for g in grid):
        print("\nBP/TCPCLv4/TCP, no disruption (bpsendfile): goodput in bytes/s (share of "
              "14,400 B/s)\n")
        print("| BER | " + " | ".join(f"{d:g} s" for d in delays) + " |")
        print("|---|" + "---|" * len(delays))
        for b in bers:
            print(f"| {ber_key(b)} | " + " | ".join(
                cell(find.get(("tcp", "bpsendfile", d, b, 0))) for d in delays) + " |")
    m = res["metrics"]
    print("\nMetrics: " + ", ".join(
        f"`{k}` {v}" for k, v in m.items() if v is not None) +
        f"; whole grid {res['total_seconds']:.0f} s.")
    print("\nTargets: " + "; ".join(
        f"{t['text']}: {t['value']} ({'met' if t['met'] else 'MISSED'})"
        for t in res["targets"].values()))


if __name__ == "__main__":
    main()
