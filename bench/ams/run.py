#!/usr/bin/python3
"""AMS throughput and latency (bench/ams/run [prefix]): one continuum on
127.0.0.1, amsd as configuration server and registrar, bench_ams processes
as publisher, subscribers and echo.

Points (each repeated, medians with min..max):
- one publisher to one subscriber, 100 B and 10 KB messages, best effort
  (UDP: what arrives, with the loss counted) and assured (TCP: lossless,
  the receiver paces the sender);
- one publisher to ten subscribers (eleven processes on the machine's
  cores), 100 B, both diligences: messages published per second, each
  delivered to all ten;
- latency as the forwarding-device method in ../shared/seeds does it:
  publish at 500 .. 2,500 messages/s, the echo publishes each back, the
  round trip per message and the one-way estimate (half of it);
- the baseline measured in the same run: raw UDP datagrams of the same
  sizes from one thread to another's socket.
Writes <prefix>.json (the plot: plot.py)."""
import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from benchlib import Progress, binary, machine, summary  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ION_MIB = os.path.join(HERE, "..", "..", "apps", "ams", "test", "vectors", "ion",
                       "sana-mib.amsrc")
RATES = [500, 1000, 1500, 2000, 2500]
TARGETS = [  # metric, target, unit, text
    ("ams_100b_msgs_per_s", 300000, "msgs/s", "100 B to one subscriber >= 300,000 msgs/s"),
    ("ams_10kb_msgs_per_s", 20000, "msgs/s", "10 KB to one subscriber >= 20,000 msgs/s"),
    ("ams_100b_msgs_per_s_10subs", 30000, "msgs/s",
     "100 B published to ten subscribers >= 30,000 msgs/s"),
    ("ams_latency_us_median_2500", 50, "us", "median one-way latency at 2,500/s < 50 us"),
]


def free_udp_port():
    import socket
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class Cell:
    """amsd (server and registrar) in its own directory with ION's MIB."""

    def __init__(self, work):
        self.dir = tempfile.mkdtemp(prefix="cell.", dir=work)
        with open(ION_MIB) as f:
            text = f.read().replace("@:2357", f"127.0.0.1:{free_udp_port()}")
        self.mib = os.path.join(self.dir, "mib.amsrc")
        with open(self.mib, "w") as f:
            f.write(text)
        self.env = {**os.environ, "TERN_AMS_MIB": self.mib}
        self.log = open(os.path.join(self.dir, "amsd.log"), "w")
        self.amsd = subprocess.Popen([binary("amsd"), "-H", "200", self.mib, "@", "amsdemo",
                                      "test", ""], stdout=self.log, stderr=subprocess.STDOUT)
        end = time.monotonic() + 10
        while "census over" not in open(self.log.name).read():
            if time.monotonic() > end or self.amsd.poll() is not None:
                raise RuntimeError("amsd did not start: " + open(self.log.name).read())
            time.sleep(0.05)

    def start(self, *args):
        return subprocess.Popen([binary("bench_ams"), *args], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=self.env)

    def ready(self, p):
        line = p.stdout.readline()
        if "subscribed" not in line:
            raise RuntimeError(f"bench_ams {p.args[1:]} did not subscribe: {line}"
                               f"{p.stderr.read()}")

    def close(self):
        self.amsd.send_signal(signal.SIGINT)
        try:
            self.amsd.wait(10)
        except subprocess.TimeoutExpired:
            self.amsd.kill()
        self.log.close()


def throughput(cell, size, nsubs, assured, count):
    """One run: count messages of size to nsubs subscribers."""
    subs = [cell.start("sub", *(["-a"] if assured else [])) for _ in range(nsubs)]
    try:
        for s in subs:
            cell.ready(s)
        pub = subprocess.run([binary("bench_ams"), "pub", str(count), str(size), str(nsubs)],
                             capture_output=True, text=True, env=cell.env, timeout=300)
        if pub.returncode:
            raise RuntimeError(f"publisher failed: {pub.stderr}")
        p = json.loads(pub.stdout)
        res = []
        for s in subs:
            out, err = s.communicate(timeout=120)
            if s.returncode:
                raise RuntimeError(f"subscriber failed: {err}")
            res.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for s in subs:
            if s.poll() is None:
                s.kill()
    delivered = sum(r["msgs"] for r in res)
    slowest = max(r["secs"] for r in res) or 1e-9
    return {
        "published": p["published"],
        "publish_secs": p["secs"],
        "published_per_s": p["published"] / p["secs"] if p["secs"] else None,
        # messages per second that reached every subscriber
        "msgs_per_s": min(r["msgs"] for r in res) / slowest,
        "deliveries_per_s": delivered / slowest,
        "lost": sum(r["lost"] for r in res),
        "loss_fraction": 1 - delivered / (p["published"] * nsubs),
    }


def point(cell, prog, label, size, nsubs, assured, count, reps):
    runs = []
    for i in range(reps):
        prog.status(f"{label}: run {i + 1}/{reps}")
        runs.append(throughput(cell, size, nsubs, assured, count))
    prog.done += 1
    pt = {"size": size, "subscribers": nsubs, "diligence": "assured" if assured else "best effort",
          "count": count, "runs": runs,
          "msgs_per_s": summary([r["msgs_per_s"] for r in runs]),
          "loss_fraction": summary([r["loss_fraction"] for r in runs])}
    m = pt["msgs_per_s"]
    prog.line(f"{label}: {m['median']:,.0f} msgs/s ({m['min']:,.0f}..{m['max']:,.0f}), "
              f"loss {pt['loss_fraction']['median'] * 100:.1f}%")
    return pt


def latency(cell, prog, rate, count, size, reps):
    rtts, per_rep = [], []
    for i in range(reps):
        prog.status(f"latency {rate}/s: run {i + 1}/{reps}")
        echo = cell.start("echo")
        try:
            cell.ready(echo)
            r = subprocess.run([binary("bench_ams"), "ping", str(rate), str(count), str(size)],
                               capture_output=True, text=True, env=cell.env, timeout=120)
            if r.returncode:
                raise RuntimeError(f"ping failed: {r.stderr}")
            d = json.loads(r.stdout)
        finally:
            echo.wait(10) if echo.poll() is None else None
        rtts += d["rtt_us"]
        per_rep.append({"echoed": d["echoed"], "sent": d["sent"],
                        "rtt_median_us": statistics.median(d["rtt_us"]) if d["rtt_us"] else None})
    prog.done += 1
    rtts.sort()
    p99 = rtts[max(0, int(len(rtts) * 0.99) - 1)] if rtts else None
    med = statistics.median(rtts) if rtts else None
    prog.line(f"latency {rate}/s: round trip {med:.1f} us median, p99 {p99:.1f} us; one way "
              f"{med / 2:.1f} us")
    return {"rate": rate, "size": size, "count_per_rep": count, "reps": per_rep,
            "rtt_us": {"median": med, "p99": p99, "min": rtts[0] if rtts else None,
                       "max": rtts[-1] if rtts else None},
            "one_way_us": {"median": med / 2 if med else None, "p99": p99 / 2 if p99 else None},
            "rep_medians_us": summary([r["rtt_median_us"] for r in per_rep])}


def raw_udp(prog, size, reps, secs):
    xs = []
    for i in range(reps):
        prog.status(f"raw UDP {size} B: run {i + 1}/{reps}")
        r = subprocess.run([binary("bench_ams"), "rawudp", str(size), str(secs)],
                           capture_output=True, text=True, timeout=60)
        xs.append(json.loads(r.stdout)["received_per_s"])
    prog.done += 1
    s = summary(xs)
    prog.line(f"raw UDP {size} B datagrams: {s['median']:,.0f}/s")
    return s


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("prefix")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="one repetition, fewer messages")
    a = ap.parse_args()
    reps = 1 if a.quick else a.reps
    scale = 0.2 if a.quick else 1
    for tool in ("amsd", "bench_ams"):
        if not os.access(binary(tool), os.X_OK):
            sys.exit(f"bench/ams: {binary(tool)} not built (make build)")
    t0 = time.monotonic()
    prog = Progress("bench_ams", 2 + 6 + len(RATES))
    mach = machine()
    work = tempfile.mkdtemp(prefix="ams-bench.")
    prog.line(f"{mach['cpu']}, {mach['cores']} cores, {mach['kernel']}")
    failed, points, lat = [], [], []
    try:
        raw = {s: raw_udp(prog, s, reps, 1.0) for s in (100, 10000)}
        cell = Cell(work)
        try:
            for label, size, nsubs, assured, count in (
                    ("100 B, 1 subscriber, best effort", 100, 1, False, 1000000),
                    ("100 B, 1 subscriber, assured", 100, 1, True, 1000000),
                    ("10 KB, 1 subscriber, best effort", 10000, 1, False, 100000),
                    ("10 KB, 1 subscriber, assured", 10000, 1, True, 100000),
                    ("100 B, 10 subscribers, best effort", 100, 10, False, 300000),
                    ("100 B, 10 subscribers, assured", 100, 10, True, 300000)):
                try:
                    points.append(point(cell, prog, label, size, nsubs, assured,
                                        int(count * scale), reps))
                except (RuntimeError, subprocess.TimeoutExpired, ValueError) as e:
                    failed.append(f"{label}: {e}")
                    prog.line(f"FAILED {label}: {e}")
            for rate in RATES:
                try:
                    lat.append(latency(cell, prog, rate, int(rate * 2 * scale) or 100, 100,
                                       reps))
                except (RuntimeError, subprocess.TimeoutExpired, ValueError) as e:
                    failed.append(f"latency {rate}/s: {e}")
        finally:
            cell.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)

    def best(size, nsubs):
        """The better median of the points that lost under 1 % (best effort
        at full speed overruns its receiver: what arrives then is not a
        rate the subscriber gets whole)."""
        pts = [p for p in points if p["size"] == size and p["subscribers"] == nsubs]
        ok = [p for p in pts if (p["loss_fraction"]["median"] or 0) < 0.01]
        ms = [p["msgs_per_s"]["median"] for p in (ok or pts)]
        return max(ms) if ms else None

    l2500 = next((x for x in lat if x["rate"] == 2500), None)
    metrics = {
        "ams_100b_msgs_per_s": best(100, 1),
        "ams_10kb_msgs_per_s": best(10000, 1),
        "ams_100b_msgs_per_s_10subs": best(100, 10),
        "ams_latency_us_median_2500": l2500["one_way_us"]["median"] if l2500 else None,
        "ams_latency_us_p99_2500": l2500["one_way_us"]["p99"] if l2500 else None,
        "raw_udp_100b_per_s": raw[100]["median"],
        "raw_udp_10kb_per_s": raw[10000]["median"],
    }
    targets = {}
    for name, tv, unit, text in TARGETS:
        v = metrics[name]
        ok = v is not None and (v < tv if unit == "us" else v >= tv)
        targets[name] = {"target": tv, "value": v, "unit": unit, "text": text, "met": ok}
    out = {"benchmark": "ams", "metrics": metrics, "targets": targets, "points": points,
           "latency": lat, "raw_udp": {"100": raw[100], "10000": raw[10000]},
           "machine": mach, "failed": failed,
           "config": {"transport": "one continuum on 127.0.0.1; amsd -H 200 (server and "
                                   "registrar); ION's sana MIB (venture amsdemo/test, subject "
                                   "bench), its server port moved to a free one",
                      "msgs_per_s": "messages that reached every subscriber over the slowest "
                                    "subscriber's receive interval (first .. last)",
                      "one_way": "half the round trip publish -> echo -> publish back",
                      "reps": reps},
           "total_seconds": round(time.monotonic() - t0, 1)}
    with open(a.prefix + ".json", "w") as f:
        json.dump(out, f, indent=2)
        f.write("\n")
    print(f"AMS on {mach['cpu']}, {mach['cores']} cores; raw UDP 100 B "
          f"{raw[100]['median']:,.0f}/s, 10 KB {raw[10000]['median']:,.0f}/s")
    for p in points:
        m = p["msgs_per_s"]
        print(f"  {p['size']:>6} B x {p['subscribers']:>2} subs, {p['diligence']:<11} "
              f"{m['median']:>12,.0f} msgs/s ({m['min']:,.0f}..{m['max']:,.0f}), loss "
              f"{p['loss_fraction']['median'] * 100:.1f}%")
    for x in lat:
        print(f"  latency at {x['rate']:>5}/s: one way {x['one_way_us']['median']:.1f} us median,"
              f" p99 {x['one_way_us']['p99']:.1f} us")
    print("targets:")
    for name, t in targets.items():
        v = t["value"]
        print(f"  {t['text']}: {'n/a' if v is None else f'{v:,.1f}'} "
              f"{'met' if t['met'] else 'MISSED'}")
    if failed:
        print("failed: " + "; ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
