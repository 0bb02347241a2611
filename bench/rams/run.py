#!/usr/bin/python3
"""RAMS throughput and latency (bench/rams/run [prefix]): AMS between two
continua through two RAMS gateways over BP/LTP/UDP on 127.0.0.1.

Two Tern nodes (2 and 3; tern.testing.Network writes their host.rc: an LTP
span each way, 64,000 B segments, every bundle its own block at once,
in-memory stores), each its own AMS continuum with its own amsd and
ramsgate (started by 'tern start' from the host.rc's amsd section; each MIB
lists the other continuum as its neighbour), bench_rams processes as
publisher (continuum 2) and subscriber (continuum 3, assured, domain
continuum 0 = all continua).

Points (each repeated, medians with min..max):
- messages/s of 100 B and 10 KB from continuum 2 to continuum 3 through the
  gateways: the publisher publishes as fast as its assured stream to the
  gateway lets it; the subscriber counts what arrives in a timed window
  after a warm-up (per-process CPU over the window and the gateways'
  status counters, bundles and messages per bundle, are kept);
- the baseline in the same run: AMS within continuum 2, same sizes, the
  same publisher and subscriber (domain continuum 2);
- one-way latency at 1,000 messages/s of 100 B: the send time (monotonic
  clock) rides in the content, the receiver subtracts it; through the
  gateways, and in the same run (repetitions interleaved) a plain BP bundle
  of the same size between the same two nodes (ipn:2.1 -> ipn:3.1) and an
  AMS message within continuum 2. The gateways' added latency is the RAMS
  median minus the BP median.
Writes <prefix>.json (the plot: plot.py)."""
import argparse
import glob
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))
from benchlib import Progress, binary, machine, summary  # noqa: E402
from tern.testing import Network, free_ports, log_tail, short_tmpdir  # noqa: E402

VENTURE = 9
SIZES = [100, 10000]
RATE = 1000          # messages (bundles) per second of the latency runs
LAT_SIZE = 100
CONTACT_RATE = 12_500_000_000  # B/s in the contact plan: not a limit here
HEAP_BYTES = 512 << 20         # each node's in-memory store
TARGETS = [  # metric, target, unit, text
    ("rams_100b_msgs_per_s", 50000, "msgs/s",
     "100 B across the gateways >= 50,000 msgs/s"),
    ("rams_added_latency_ms_median_1000", 1.0, "ms",
     "median latency the gateways add at 1,000 msgs/s < 1 ms"),
]
REFERENCES = {  # not measured here
    "ion_rams_demo_msgs_per_s": {
        "value": 271, "unit": "msgs/s",
        "text": "ION's own RAMS demo log (10 messages of 1 KB through two ION gateways)"},
}


# ------------------------------------------------------------------ the network

def mib_text(cont, other, cs_port):
    """ION's amsrc MIB of continuum cont, with other as its neighbour."""
    return "\n".join([
        "+ams_mib_load",
        f"*ams_mib_init continuum_nbr={cont} ptsname=dgr",
        "+ams_mib_add",
        f"*continuum nbr={other} name=c{other} desc='continuum {other}'",
        f"*csendpoint epspec=127.0.0.1:{cs_port}",
        "*application name='amsdemo'",
        f"+venture nbr={VENTURE} appname=amsdemo authname=test net_config=tree",
        "*role nbr=2 name=shell", "*role nbr=3 name=log", "*role nbr=4 name=pitch",
        "*role nbr=5 name=catch", "*role nbr=6 name=benchs", "*role nbr=7 name=benchr",
        "*subject nbr=1 name=text desc='ASCII text'",
        "*subject nbr=3 name=bench desc='numbered msgs'",
        "*subject nbr=4 name=textreturn desc='return receipt for text'",
        "*unit nbr=1 name=orbiters",
        f"*msgspace nbr={other} neighbor=1",
        "-venture", "-ams_mib_add", "-ams_mib_load"]) + "\n"


def read_pid(path):
    try:
        with open(path) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def alive(pid, comm=None):
    """pid runs (not a zombie), and is named comm if given."""
    try:
        if comm:
            with open(f"/proc/{pid}/comm") as f:
                if f.read().strip() != comm:
                    return False
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class Continua:
    """Nodes 2 and 3, each a continuum with its amsd and ramsgate."""

    def __init__(self, work):
        self.base = os.path.join(work, "net")
        self.net = Network(self.base, numbers=[2, 3], protocol="ltp", seg=64000, agg_size=1,
                           agg_s=0, max_export=64, rate=CONTACT_RATE, owlt=0, qtime=0.1,
                           endpoints=(1,), durable=False, via="tern")
        ports = free_ports(2)
        self.mib = {}
        for c, other, port in ((2, 3, ports[0]), (3, 2, ports[1])):
            self.mib[c] = os.path.join(self.net.dir(c), "mib.amsrc")
            with open(self.mib[c], "w") as f:
                f.write(mib_text(c, other, port))
            self.net.add_lines(c, "amsd", f"amsd mib.amsrc 127.0.0.1:{port} amsdemo test ''",
                               "ramsgate amsdemo test 300")
        self.net.write()
        for n in self.net:  # in-memory store with room for a backlog
            with open(os.path.join(n.dir, f"node{n.number}.ionconfig"), "w") as f:
                f.write(f"# memory store for bench/rams\nconfigFlags 1\n"
                        f"heapWords {HEAP_BYTES // 8}\n")
        self.started = False

    def start(self):
        self.started = True
        self.net.start(timeout=90)
        end = time.monotonic() + 30
        for a, b in ((2, 3), (3, 2)):
            while not re.search(rf"peer continuum {b} at \S+: declared", self.status(a)):
                if time.monotonic() > end:
                    raise RuntimeError(f"continuum {b} not declared at {a}:\n{self.status(a)}"
                                       f"\n{self.gateway_log(a)}")
                time.sleep(0.1)

    def env(self, c):
        return {**os.environ, "TERN_AMS_MIB": self.mib[c], "TERN_NODE_DIR": self.net.dir(c)}

    def status(self, c):
        try:
            with open(os.path.join(self.net.dir(c), f"ramsgate.{VENTURE}.status")) as f:
                return f.read()
        except OSError:
            return ""

    def gateway_log(self, c):
        try:
            with open(os.path.join(self.net.dir(c), "ramsgate.0.log")) as f:
                return f.read()[-2000:]
        except OSError:
            return "(no ramsgate log)"

    def pids(self):
        """{name: pid} of the daemons of both nodes."""
        out = {}
        for c in (2, 3):
            d = self.net.dir(c)
            out[f"ternd {c}"] = self.net.pid(c)
            out[f"ramsgate {c}"] = read_pid(os.path.join(d, "ramsgate.0.pid"))
            out[f"amsd {c}"] = read_pid(os.path.join(d, "amsd.0.pid"))
        return {k: v for k, v in out.items() if v}

    def check_alive(self):
        self.net.check_alive()
        for name, pid in self.pids().items():
            if not alive(pid):
                raise RuntimeError(f"{name} (pid {pid}) died")

    def close(self):
        """Stops everything ('tern stop' stops the gateways and amsd too);
        SIGKILLs a daemon of ours still there. Returns the problems seen."""
        if not self.started:
            return []
        problems = self.net.shutdown()  # SIGKILLs a ternd that will not stop
        for c in (2, 3):
            for pidf in glob.glob(os.path.join(self.net.dir(c), "*.pid")):
                name = os.path.basename(pidf)
                pid = read_pid(pidf)
                prog_name = name.split(".")[0]
                if pid and prog_name in ("amsd", "ramsgate") and alive(pid, prog_name):
                    problems.append(f"{name} of node {c} still ran after tern stop: killed")
                    os.kill(pid, signal.SIGKILL)
        return problems


# ------------------------------------------------------------------ processes

CLK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid):
    """User + system CPU seconds of a process (all its threads)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            w = f.read().rsplit(")", 1)[1].split()
        return (int(w[11]) + int(w[12])) / CLK
    except (OSError, ValueError, IndexError):
        return None


def proc_cpu():
    """{pid: (name, CPU seconds)} of every process on the machine."""
    out = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    head, tail = f.read().rsplit(")", 1)
                w = tail.split()
                out[int(d)] = (head.split("(", 1)[1], (int(w[11]) + int(w[12])) / CLK)
            except (OSError, ValueError, IndexError):
                pass
    return out


def others_busy(before, wall, ours):
    """The processes not of this benchmark that used CPU during it (the
    machine is shared) and still run: name, pid, cores on average."""
    now = proc_cpu()
    out = []
    for pid, (name, c1) in now.items():
        if pid in ours or pid == os.getpid():
            continue
        c0 = before[pid][1] if pid in before and before[pid][0] == name else 0.0
        if pid in before or name not in ("bench_rams", "tern"):
            cores = (c1 - c0) / wall
            if cores >= 0.05:
                out.append({"pid": pid, "name": name, "cores": round(cores, 2)})
    return sorted(out, key=lambda x: -x["cores"])


def kill_proc(p):
    if p is not None and p.poll() is None:
        p.kill()
        p.wait()


class Run:
    """A receiver and a sender: the receiver first (until it says it is
    ready), then the sender; the receiver's stdout lines are read as they
    come (CPU is sampled at 'window start' and 'window end'); a watchdog
    kills both after timeout seconds."""

    def __init__(self, cont, recv_args, recv_env, send_args, send_env, timeout, pids=None):
        self.cont = cont
        self.procs = []
        self.timer = threading.Timer(timeout, self._expire)
        self.expired = False
        self.recv_args, self.recv_env = recv_args, recv_env
        self.send_args, self.send_env = send_args, send_env
        self.pids = dict(pids or {})

    def _expire(self):
        self.expired = True
        for p in self.procs:
            if p.poll() is None:
                p.kill()

    def go(self):
        cpu0 = cpu1 = None
        t_win = [None, None]
        self.timer.start()
        try:
            r = subprocess.Popen([binary("bench_rams"), *self.recv_args], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, env=self.recv_env)
            self.procs.append(r)
            first = r.stdout.readline()
            if first.strip() not in ("subscribed", "ready"):
                raise RuntimeError(f"bench_rams {' '.join(self.recv_args)} did not start: "
                                   f"{first}{r.stderr.read()[-500:]}")
            s = subprocess.Popen([binary("bench_rams"), *self.send_args], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, env=self.send_env)
            self.procs.append(s)
            pids = {**self.pids, "publisher": s.pid, "subscriber": r.pid}
            result = None
            for line in r.stdout:
                line = line.strip()
                if line == "window start":
                    t_win[0] = time.monotonic()
                    cpu0 = {k: cpu_s(p) for k, p in pids.items()}
                elif line == "window end":
                    t_win[1] = time.monotonic()
                    cpu1 = {k: cpu_s(p) for k, p in pids.items()}
                elif line.startswith("{"):
                    result = json.loads(line)
            r.wait()
            sout, serr = s.communicate(timeout=60)
            rerr = r.stderr.read()
            if self.expired:
                raise RuntimeError("timed out (killed)")
            if result is None or r.returncode:
                raise RuntimeError(f"receiver failed (exit {r.returncode}): "
                                   f"{(result or {}).get('error')} {rerr.strip()[-300:]}")
            if s.returncode:
                raise RuntimeError(f"sender failed (exit {s.returncode}): {serr.strip()[-300:]}")
            sent = json.loads(sout)
        finally:
            self.timer.cancel()
            for p in self.procs:
                kill_proc(p)
                for f in (p.stdout, p.stderr):
                    if f:
                        f.close()
        cpu = None
        if cpu0 and cpu1 and t_win[1] and t_win[1] > t_win[0]:
            wall = t_win[1] - t_win[0]
            cpu = {k: round((cpu1[k] - cpu0[k]) / wall, 3) for k in cpu0
                   if cpu0[k] is not None and cpu1.get(k) is not None}
        return result, sent, cpu


# ------------------------------------------------------------------ throughput

def gw_counters(text):
    """The counters of a ramsgate status file that tell how it batched."""
    out = {}
    for key, pat in (("bundles_out", r"^bundles in \d+ out (\d+)"),
                     ("bundles_in", r"^bundles in (\d+)"),
                     ("forwarded", r"forwarded (\d+)"),
                     ("delivered", r"messages delivered here (\d+)"),
                     ("waits_for_room", r"waits for room (\d+)"),
                     ("queue_peak", r"peak (\d+)"),
                     ("ams_dropped", r"AMS messages dropped \(queue full\) (\d+)"),
                     ("reordered", r"batches reordered (\d+)")):
        m = re.search(pat, text, re.M)
        if m:
            out[key] = int(m.group(1))
    return out


def settle_status(cn, c, want_key, want, timeout=5.0):
    """Waits until continuum c's status file (rewritten every second) shows
    want_key >= want; returns its counters."""
    end = time.monotonic() + timeout
    while True:
        g = gw_counters(cn.status(c))
        if g.get(want_key, 0) >= want or time.monotonic() > end:
            return g
        time.sleep(0.2)


def throughput(cn, kind, size, warm, window):
    """One run: publisher in continuum 2, subscriber in 3 through the
    gateways (kind "rams") or in 2 (kind "same_continuum")."""
    rams = kind == "rams"
    sub_cont = 3 if rams else 2
    before = {c: gw_counters(cn.status(c)) for c in (2, 3)} if rams else None
    run = Run(sub_cont, ["sub", "0" if rams else "2", str(warm), str(window)], cn.env(sub_cont),
              ["pub", str(size), str(warm + window + 1.0), "0", "RAMS" if rams else "benchr"],
              cn.env(2), timeout=warm + window + 120, pids=cn.pids())
    res, sent, cpu = run.go()
    if res["missing"] or res["out_of_order"]:
        raise RuntimeError(f"{res['missing']} missing, {res['out_of_order']} out of order "
                           f"(assured, one publisher)")
    if res["window_msgs"] < 2:
        raise RuntimeError(f"only {res['window_msgs']} messages in the window")
    out = {"msgs_per_s": res["msgs_per_s"], "window_msgs": res["window_msgs"],
           "window_secs": res["window_secs"], "received": res["msgs"],
           "first_seq": res["first_seq"], "published": sent["published"],
           "published_per_s": sent["per_s"], "receive_secs": res["secs"],
           "subscriber_dropped_queue_full": res["dropped_queue_full"],
           "cpu_cores_in_window": cpu}
    if rams:
        # the publisher's last message is forwarded before the end marker
        after = {2: settle_status(cn, 2, "forwarded", before[2].get("forwarded", 0) +
                                  sent["published"]),
                 3: settle_status(cn, 3, "delivered", before[3].get("delivered", 0) +
                                  res["msgs"])}
        d = {c: {k: after[c].get(k, 0) - before[c].get(k, 0) for k in after[c]
                 if k not in ("queue_peak",)} for c in (2, 3)}
        bundles = d[2].get("bundles_out", 0)
        out["gateways"] = {
            "gw2": {**d[2], "queue_peak_bytes_so_far": after[2].get("queue_peak")},
            "gw3": {**d[3], "queue_peak_bytes_so_far": after[3].get("queue_peak")},
            "msgs_per_bundle": round(d[2].get("forwarded", 0) / bundles, 1) if bundles else None}
    return out


def tp_point(cn, prog, kind, size, reps, warm, window, failed):
    label = (f"{'RAMS 2 -> 3' if kind == 'rams' else 'same continuum'}, "
             f"{size if size < 1000 else size // 1000} {'B' if size < 1000 else 'KB'}")
    runs = []
    for i in range(reps):
        prog.status(f"{label}: run {i + 1}/{reps}")
        try:
            runs.append(throughput(cn, kind, size, warm, window))
        except (RuntimeError, subprocess.TimeoutExpired, ValueError) as e:
            failed.append(f"{label} run {i + 1}: {e}")
            prog.line(f"FAILED {label} run {i + 1}: {e}")
            cn.check_alive()
        time.sleep(1.0)  # the subscriber's leaving reaches the gateways
    prog.done += 1
    pt = {"kind": kind, "size": size, "reps": len(runs), "runs": runs,
          "msgs_per_s": summary([r["msgs_per_s"] for r in runs])}
    if kind == "rams":
        pt["msgs_per_bundle"] = summary([r["gateways"]["msgs_per_bundle"] for r in runs])
    cpus = [r["cpu_cores_in_window"] for r in runs if r["cpu_cores_in_window"]]
    if cpus:
        pt["cpu_cores_in_window_median"] = {
            k: statistics.median(c[k] for c in cpus if k in c) for k in cpus[0]}
    m = pt["msgs_per_s"]
    if runs:
        extra = (f", {pt['msgs_per_bundle']['median']:.0f} msgs/bundle"
                 if kind == "rams" else "")
        prog.line(f"{label}: {m['median']:,.0f} msgs/s ({m['min']:,.0f}..{m['max']:,.0f})"
                  f", {m['median'] * size * 8 / 1e9:.2f} Gbit/s of content{extra}")
    return pt


# ------------------------------------------------------------------ latency

def lat_run(cn, path, secs, warm_n):
    """One latency run over path ("rams", "bp", "ams_same_continuum"):
    RATE/s for secs seconds; the one-way latencies (ms) after the first
    warm_n messages."""
    t = secs + 120
    if path == "rams":
        run = Run(3, ["sub", "0", "0", "1", "-l"], cn.env(3),
                  ["pub", str(LAT_SIZE), str(secs), str(RATE), "RAMS"], cn.env(2), t)
    elif path == "ams_same_continuum":
        run = Run(2, ["sub", "2", "0", "1", "-l"], cn.env(2),
                  ["pub", str(LAT_SIZE), str(secs), str(RATE), "benchr"], cn.env(2), t)
    else:
        run = Run(3, ["bprecv", "ipn:3.1", str(secs + 60)], cn.env(3),
                  ["bpsend", "ipn:2.1", "ipn:3.1", str(LAT_SIZE), str(RATE), str(secs)],
                  cn.env(2), t)
    res, sent, _ = run.go()
    n_sent = sent.get("published", sent.get("sent"))
    got = res.get("msgs", res.get("received"))
    first = res["first_seq"]
    if got != n_sent - first + 1:
        raise RuntimeError(f"{got} of {n_sent} arrived (from seq {first})")
    lat = [x / 1000.0 for x in res["lat_us"]]
    # messages before the first one that arrived were sent before the
    # subscription reached the publisher's side (RAMS) and are not counted
    skip = max(0, warm_n - (first - 1))
    return {"ms": lat[skip:], "sent": n_sent, "received": got, "first_seq": first,
            "late_1ms": sent.get("late_1ms"), "sender_per_s": sent.get("per_s"),
            "send_calls_over_1ms": sent.get("send_calls_over_1ms"),
            "send_call_max_us": sent.get("send_call_max_us"),
            "send_call_mean_us": sent.get("send_call_mean_us")}


def dist(xs):
    """Median, p90, p99, min, max (ms) and the CDF as 1,001 quantiles."""
    if not xs:
        return {"n": 0, "median": None}
    s = sorted(xs)
    q = lambda f: s[min(len(s) - 1, int(f * (len(s) - 1) + 0.5))]  # noqa: E731
    return {"n": len(s), "median": statistics.median(s), "p90": q(0.9), "p99": q(0.99),
            "min": s[0], "max": s[-1], "mean": statistics.fmean(s),
            "cdf_quantiles_ms": [round(q(i / 1000), 4) for i in range(1001)]}


def latency(cn, prog, reps, secs, warm_s, failed):
    paths = ("rams", "bp", "ams_same_continuum")
    pooled = {p: [] for p in paths}
    per_rep = {p: [] for p in paths}
    runs = []
    for i in range(reps):
        rep = {}
        for p in paths:  # interleaved: the noise of the machine falls on all three
            prog.status(f"latency at {RATE}/s: {p}, run {i + 1}/{reps}")
            try:
                r = lat_run(cn, p, secs, int(warm_s * RATE))
            except (RuntimeError, subprocess.TimeoutExpired, ValueError) as e:
                failed.append(f"latency {p} run {i + 1}: {e}")
                prog.line(f"FAILED latency {p} run {i + 1}: {e}")
                cn.check_alive()
                continue
            finally:
                time.sleep(0.5)
            pooled[p] += r["ms"]
            med = statistics.median(r["ms"]) if r["ms"] else None
            per_rep[p].append(med)
            rep[p] = {"median_ms": med, "n": len(r["ms"]), "sent": r["sent"],
                      "received": r["received"], "first_seq": r["first_seq"],
                      "sender_late_1ms": r["late_1ms"], "sender_per_s": r["sender_per_s"],
                      "send_calls_over_1ms": r["send_calls_over_1ms"],
                      "send_call_max_us": r["send_call_max_us"],
                      "send_call_mean_us": r["send_call_mean_us"]}
        runs.append(rep)
    prog.done += 1
    out = {"rate": RATE, "size": LAT_SIZE, "seconds_per_run": secs, "warm_up_s": warm_s,
           "reps": reps, "runs": runs,
           "paths": {p: {**dist(pooled[p]), "rep_medians_ms": summary(per_rep[p])}
                     for p in paths}}
    pr = out["paths"]
    paired = [r["rams"]["median_ms"] - r["bp"]["median_ms"] for r in runs
              if "rams" in r and "bp" in r]
    added = None
    if pr["rams"]["median"] is not None and pr["bp"]["median"] is not None:
        added = pr["rams"]["median"] - pr["bp"]["median"]
    out["added_ms"] = {"median_difference": added,
                       "per_rep_difference": summary(paired),
                       "p99_difference": (pr["rams"]["p99"] - pr["bp"]["p99"]
                                          if added is not None else None)}
    # the two AMS hops in the RAMS path (publisher -> gateway 2, gateway 3
    # -> subscriber) are local AMS hops: what is left is the gateways' own
    ams = pr["ams_same_continuum"]["median"]
    out["gateways_own_ms_estimate"] = (added - 2 * ams if added is not None and ams is not None
                                       else None)
    for p in paths:
        d = pr[p]
        if d["median"] is not None:
            rm = d["rep_medians_ms"]
            prog.line(f"latency at {RATE}/s, {p}: one way {d['median']:.3f} ms median "
                      f"(reps {rm['min']:.3f}..{rm['max']:.3f}), p99 {d['p99']:.3f} ms, "
                      f"{d['n']} messages")
    if added is not None:
        pd = out["added_ms"]["per_rep_difference"]
        prog.line(f"latency the gateways add (RAMS - BP medians): {added:.3f} ms "
                  f"(per rep {pd['min']:.3f}..{pd['max']:.3f})")
    return out


# ------------------------------------------------------------------ main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("prefix")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="one repetition, shorter runs")
    a = ap.parse_args()
    reps = 1 if a.quick else a.reps
    warm, window = (0.5, 1.5) if a.quick else (1.0, 3.0)
    lat_secs, lat_warm = (2.0, 0.5) if a.quick else (4.0, 0.5)
    for tool in ("tern", "ternd", "amsd", "ramsgate", "bench_rams"):
        if not os.access(binary(tool), os.X_OK):
            sys.exit(f"bench/rams: {binary(tool)} not built (make build)")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # the cleanup runs
    t0 = time.monotonic()
    cpu_before = proc_cpu()
    prog = Progress("bench_rams", 1 + 2 * len(SIZES) + 1)
    mach = machine()
    prog.line(f"{mach['cpu']}, {mach['cores']} cores, {mach['kernel']}, load "
              f"{mach['loadavg_start']:.2f}")
    work = short_tmpdir("rams-bench.")
    failed, points, lat = [], [], None
    cn = None
    problems = []
    try:
        prog.status("starting nodes 2 and 3, amsd and ramsgate in each")
        cn = Continua(work)
        cn.start()
        prog.done += 1
        prog.line(f"nodes 2 and 3 up, gateways declared to each other "
                  f"({time.monotonic() - t0:.1f} s)")
        for size in SIZES:
            for kind in ("same_continuum", "rams"):
                points.append(tp_point(cn, prog, kind, size, reps, warm, window, failed))
        lat = latency(cn, prog, reps, lat_secs, lat_warm, failed)
    except (KeyboardInterrupt, SystemExit):
        prog.line("interrupted: stopping the nodes, no JSON written")
        raise
    except Exception as e:  # noqa: BLE001 - reported, the JSON still written
        failed.append(f"{type(e).__name__}: {e}")
        prog.line(f"FAILED: {e}")
        if cn:
            prog.line(f"node 2 log: {log_tail(cn.net.dir(2), 5)}")
    finally:
        others = others_busy(cpu_before, time.monotonic() - t0,
                             set(cn.pids().values()) if cn else set())
        mach["loadavg_end"] = os.getloadavg()[0]
        mach["other_processes_busy"] = others
        if cn:
            prog.status("stopping the nodes")
            problems = cn.close()
        if failed or problems:
            prog.line(f"node directories kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    failed += problems

    def med(kind, size):
        p = next((p for p in points if p["kind"] == kind and p["size"] == size), None)
        return p["msgs_per_s"]["median"] if p else None

    lp = lat["paths"] if lat else {}
    added = lat["added_ms"]["median_difference"] if lat else None
    notes = []
    if added is not None and added < 0:
        notes.append(f"RAMS median one-way latency came out {-added:.3f} ms below plain "
                     f"BP's: the paths' medians are within the machine's noise; not "
                     f"reported as a negative latency")
        added_metric = None
    else:
        added_metric = added
    own = lat["gateways_own_ms_estimate"] if lat else None
    if own is not None and own < 0:
        notes.append(f"gateways' own time estimate (added - 2 x local AMS hop) is "
                     f"{own:.3f} ms: below the resolution of three separate medians")
    metrics = {
        "rams_100b_msgs_per_s": med("rams", 100),
        "rams_10kb_msgs_per_s": med("rams", 10000),
        "rams_added_latency_ms_median_1000": added_metric,
        "ams_same_continuum_100b_msgs_per_s": med("same_continuum", 100),
        "ams_same_continuum_10kb_msgs_per_s": med("same_continuum", 10000),
        "rams_latency_ms_median_1000": lp.get("rams", {}).get("median"),
        "rams_latency_ms_p99_1000": lp.get("rams", {}).get("p99"),
        "bp_latency_ms_median_1000": lp.get("bp", {}).get("median"),
        "bp_latency_ms_p99_1000": lp.get("bp", {}).get("p99"),
        "ams_same_continuum_latency_ms_median_1000":
            lp.get("ams_same_continuum", {}).get("median"),
        "rams_gateways_own_ms_estimate_1000": own if own is None or own >= 0 else None,
    }
    for size, key in ((100, "100b"), (10000, "10kb")):
        r, s = med("rams", size), med("same_continuum", size)
        metrics[f"rams_{key}_fraction_of_same_continuum"] = r / s if r and s else None
    targets = {}
    for name, tv, unit, text in TARGETS:
        v = metrics[name]
        ok = v is not None and (v < tv if unit == "ms" else v >= tv)
        targets[name] = {"target": tv, "value": v, "unit": unit, "text": text, "met": ok}
    baselines = {k: metrics[k] for k in (
        "ams_same_continuum_100b_msgs_per_s", "ams_same_continuum_10kb_msgs_per_s",
        "bp_latency_ms_median_1000", "ams_same_continuum_latency_ms_median_1000")}
    out = {"benchmark": "rams", "metrics": metrics, "targets": targets,
           "references": REFERENCES, "baselines": baselines, "points": points,
           "latency": lat, "machine": mach, "failed": failed, "notes": notes,
           "config": {
               "nodes": "two ternd processes on 127.0.0.1 (tern.testing.Network host.rc, "
                        "'tern start'): nodes 2 and 3, BP over LTP over UDP, span 'a span "
                        "<peer> 64 64 64000 1 0 ... 0.1' (a block per bundle, at once), "
                        "owlt 0, in-memory stores of 512 MiB",
               "ams": "continuum 2 on node 2, continuum 3 on node 3; each: amsd (ION's "
                      "default timers) and 'ramsgate amsdemo test 300' from the host.rc's "
                      "amsd section; MIB: venture 9 amsdemo/test, the other continuum a "
                      "neighbour (msgspace neighbor=1), net_config tree",
               "throughput": f"bench_rams pub (role benchs, continuum 2) publishes as fast "
                             f"as it can for warm-up + window + 1 s; bench_rams sub (role "
                             f"benchr, assured, domain continuum 0 for RAMS, 2 for the "
                             f"baseline) counts the messages of a {window:g} s window that "
                             f"starts {warm:g} s after its first message, then drains to "
                             f"the end marker (every message checked: none missing or out of "
                             f"order)",
               "latency": f"{RATE}/s of {LAT_SIZE} B (AMS content, or BP payload ipn:2.1 -> "
                          f"ipn:3.1, class bulk, lifetime 300 s: what ramsgate sends with) "
                          f"for {lat_secs:g} s per run, the first {lat_warm:g} s dropped; "
                          f"one-way = receive time - send time in the content "
                          f"(CLOCK_MONOTONIC, one machine); runs of the three paths "
                          f"interleaved; added = median RAMS - median BP (pooled runs)",
               "gateways_own_estimate": "added - 2 x the same-continuum AMS one-way median: "
                                        "the RAMS path holds two local AMS hops (publisher "
                                        "-> gateway 2, gateway 3 -> subscriber) besides BP; "
                                        "derived from three medians, so only indicative",
               "reps": reps},
           "total_seconds": round(time.monotonic() - t0, 1)}
    with open(a.prefix + ".json", "w") as f:
        json.dump(out, f, indent=2)
        f.write("\n")

    print(f"RAMS on {mach['cpu']}, {mach['cores']} cores ({mach['kernel']}), "
          f"{reps} rep(s), {out['total_seconds']:.0f} s")
    for p in points:
        m = p["msgs_per_s"]
        if m["median"] is None:
            print(f"  {p['kind']:<15} {p['size']:>6} B: no result")
            continue
        extra = (f", {p['msgs_per_bundle']['median']:.0f} msgs/bundle"
                 if p["kind"] == "rams" and p["msgs_per_bundle"]["median"] else "")
        print(f"  {'RAMS 2 -> 3' if p['kind'] == 'rams' else 'same continuum':<15} "
              f"{p['size']:>6} B: {m['median']:>12,.0f} msgs/s ({m['min']:,.0f}..{m['max']:,.0f})"
              f"{extra}")
        cpu = p.get("cpu_cores_in_window_median")
        if cpu and p["kind"] == "rams":
            print("      CPU (cores) in the window: " + ", ".join(
                f"{k} {v:.2f}" for k, v in sorted(cpu.items(), key=lambda kv: -kv[1])
                if v >= 0.01))
    if lat:
        for pth in ("rams", "bp", "ams_same_continuum"):
            d = lp[pth]
            if d["median"] is not None:
                rm = d["rep_medians_ms"]
                print(f"  one way at {RATE}/s, {pth:<18}: {d['median']:.3f} ms median "
                      f"(reps {rm['min']:.3f}..{rm['max']:.3f}), p99 {d['p99']:.3f} ms")
        if added is not None:
            pd = lat["added_ms"]["per_rep_difference"]
            print(f"  added by the gateways (RAMS - BP medians): {added:.3f} ms (per rep "
                  f"{pd['min']:.3f}..{pd['max']:.3f})"
                  + (f"; of which beyond the two local AMS hops ~{own:.3f} ms"
                     if own is not None and own >= 0 else ""))
    if mach["other_processes_busy"]:
        print("  the machine was shared: " + ", ".join(
            f"{o['name']} (pid {o['pid']}) {o['cores']:.2f} cores"
            for o in mach["other_processes_busy"]) + " on average during the run")
    print("targets:")
    for name, t in targets.items():
        v = t["value"]
        print(f"  {t['text']}: {'n/a' if v is None else f'{v:,.3f}'} "
              f"{'met' if t['met'] else 'MISSED'}")
    for r in REFERENCES.values():
        print(f"reference: {r['text']}: {r['value']} {r['unit']}")
    for n in notes:
        print("note: " + n)
    if failed:
        print("failed: " + "; ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
