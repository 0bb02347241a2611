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
