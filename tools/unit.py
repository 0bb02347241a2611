#!/usr/bin/env python3
"""Runs every C unit-test program in a directory, two at a time, and sums
their TAP results. Each program forks per test (see tern_test.h)."""
import concurrent.futures
import os
import re
import signal
import subprocess
import sys
import tempfile
import time


def run(path):
    """Runs one program in its own process group. Its output goes to a file,
    not a pipe, so a process it leaves behind cannot hold the runner; such a
    process fails the program (a test must not leak processes) and is
    killed."""
    t0 = time.monotonic()
    with tempfile.TemporaryFile(mode="w+", errors="replace") as f:
        p = subprocess.Popen([path], stdout=f, stderr=subprocess.STDOUT,
                             start_new_session=True)
        rc = p.wait()
        try:
            os.killpg(p.pid, 0)
            os.killpg(p.pid, signal.SIGKILL)
            leaked = True
        except (ProcessLookupError, PermissionError):
            leaked = False
        f.seek(0)
        out = f.read()
    if leaked:
        out += "\n# FAIL: the program left processes running (killed)\n"
        rc = rc or 1
        out = re.sub(r"^# tests (\d+) pass (\d+) fail (\d+)$",
                     lambda m: f"# tests {m.group(1)} pass {m.group(2)} fail "
                               f"{max(1, int(m.group(3)))}", out, flags=re.M)
    return path, rc, out, time.monotonic() - t0


def main():
    d = sys.argv[1]
    progs = sorted(os.path.join(d, f) for f in os.listdir(d)
                   if os.access(os.path.join(d, f), os.X_OK))
    if not progs:
        print(f"unit: no test programs in {d}")
        return 1
    jobs = int(os.environ.get("UNIT_JOBS", os.cpu_count() or 2))
    npass = nfail = 0
    bad = []
    with concurrent.futures.ThreadPoolExecutor(jobs) as ex:
        for path, rc, out, secs in ex.map(run, progs):
            m = re.search(r"^# tests (\d+) pass (\d+) fail (\d+)$", out, re.M)
            name = os.path.basename(path)
            if m:
                p, f = int(m.group(2)), int(m.group(3))
            else:
                p, f = 0, 1  # crashed before its summary
            npass += p
            nfail += f
            status = "ok" if rc == 0 and f == 0 and m else "FAIL"
            print(f"  {status:4} {name:40} {p:4} passed {f:3} failed  {secs:6.1f} s")
            # Notes a test prints about what it did (kill counts, cut counts).
            for line in out.splitlines():
                if line.startswith("# ") and not line.startswith(("# seed", "# tests", "# FAIL")):
                    print(f"         {line[2:]}")
            if status != "ok":
                bad.append((name, out))
    for name, out in bad:
        print(f"\n----- {name} -----")
        print("\n".join(l for l in out.splitlines()
                        if not l.startswith("ok ")))
    print(f"unit: {npass} passed, {nfail} failed in {len(progs)} programs")
    return 0 if nfail == 0 and not bad else 1


if __name__ == "__main__":
    sys.exit(main())
