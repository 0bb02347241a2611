"""Shared helpers of the benchmark drivers: machine facts and robust statistics."""
import datetime
import os
import platform
import statistics


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
