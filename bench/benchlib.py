"""Shared helpers of the benchmark drivers: machine facts and robust statistics."""
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


class PointFailed(Exception):
    """A measured point whose run failed its own checks."""


def bin_dir():
    """build/bin, or $BUILD_DIR/bin (relative paths from the repository root)."""
    b = os.environ.get("BUILD_DIR", "build")
    if not os.path.isabs(b):
        b = os.path.join(ROOT, b)
    return os.path.join(b, "bin")


def binary(name):
    """A program of the build (bench_bpsim, ternd, ...)."""
    return os.path.join(bin_dir(), name)


def run_json(prog, args, timeout=600):
    """Runs prog with args and returns the JSON it prints; RuntimeError with
    its stderr if it fails."""
    out = subprocess.run([prog] + args, capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join([prog] + args)} failed: {out.stderr.strip()}")
    return json.loads(out.stdout)


def human(n):
    """1000000 -> '1 MB', 1000 -> '1 kB' (decimal), else bytes."""
    for div, suf in ((1000000, "MB"), (1000, "kB")):
        if n >= div and n % div == 0:
            return f"{n // div} {suf}"
    return f"{n} B"


class Progress:
    """One progress line on stderr ('\\r'-updated on a terminal): status()
    replaces it, line() keeps it. With total_steps the head counts steps."""

    def __init__(self, name, total_steps=None):
        self.name = name
        self.tty = sys.stderr.isatty()
        self.t0 = time.monotonic()
        self.total = total_steps
        self.done = 0

    def _head(self):
        steps = f" {self.done}/{self.total}" if self.total else ""
        return f"{self.name}: [{time.monotonic() - self.t0:4.0f} s{steps}]"

    def status(self, text):
        if self.tty:
            sys.stderr.write(f"\r{self._head()} {text}\033[K")
            sys.stderr.flush()

    def line(self, text):
        sys.stderr.write(f"{chr(13) if self.tty else ''}{self._head()} {text}"
                         f"{chr(27) + '[K' if self.tty else ''}\n")
        sys.stderr.flush()


def sysctl(name):
    """An integer sysctl (net.core.rmem_max ...), None if unreadable."""
    try:
        with open("/proc/sys/" + name.replace(".", "/")) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError):
        return None


def machine():
    """The facts a result needs to be compared: cpu, cores, kernel, load."""
    cpu = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for ln in f:
                if ln.startswith("model name"):
                    cpu = ln.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    u = os.uname()
    return {
        "cpu": cpu, "cores": os.cpu_count(), "kernel": f"{u.sysname} {u.release} {u.machine}",
        "hostname": u.nodename,
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "loadavg_start": os.getloadavg()[0],
    }


def summary(xs):
    """Median, min, max and the values themselves."""
    xs = [x for x in xs if x is not None]
    if not xs:
        return {"median": None, "min": None, "max": None, "values": []}
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "values": xs}


def repeat_point(transfer, prog, label, size, reps, target_s, guess_per_s, point,
                 max_bytes, min_bytes=300e6):
    """Runs transfer(size, count, timeout) until reps samples are in, each
    sized to take about target_s from the last run's rate (guess_per_s for
    the first) and to move at least min_bytes (a shorter run measures a
    window filling up); a run far shorter than intended only calibrates.
    Fills point (samples, medians) and returns it; a failure is recorded in
    point["failed"]."""
    floor = max(30, min(2000, int(min_bytes // size)))
    cap = max(floor, int(max_bytes // size))
    rate = guess_per_s
    samples, calib = [], 0
    while len(samples) < reps:
        count = int(min(cap, max(floor, target_s * rate)))
        prog.status(f"{label}: run {len(samples) + 1}/{reps}, {count} bundles"
                    + (f", last {samples[-1]['gbps']:.2f} Gbit/s" if samples else ""))
        try:
            s = transfer(size, count, timeout=max(60, int(target_s * 20)))
        except (PointFailed, RuntimeError) as e:
            prog.line(f"FAILED {label}: {e}")
            point["failed"] = str(e)
            break
        if s["bundles_per_s"]:
            rate = s["bundles_per_s"]
        if s["seconds"] < 0.4 * target_s and count < cap and calib < 2:
            calib += 1
            continue
        samples.append(s)
    point["reps"] = len(samples)
    point["samples"] = samples
    point["gbps"] = summary([s["gbps"] for s in samples])
    point["bundles_per_s"] = summary([s["bundles_per_s"] for s in samples])
    prog.done += 1
    if samples:
        g, r = point["gbps"], point["bundles_per_s"]
        prog.line(f"{label}: {g['median']:.3f} Gbit/s, {r['median']:,.0f} bundles/s "
                  f"(min {g['min']:.3f}, max {g['max']:.3f} Gbit/s; {len(samples)} x "
                  f"{samples[-1]['bundles']} bundles, ~{samples[-1]['seconds']:.1f} s)")
    return point
