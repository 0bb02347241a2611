#!/usr/bin/python3
"""make demo: a three-node Tern network on this machine, end to end.

Nodes 1 -> 2 -> 3 in a line over LTP/UDP on 127.0.0.1 (60 Mbit/s links),
each a real ternd with a durable store in a temporary directory (no root
needed), started with `tern start`; nodes 1 and 3 have a cfdpadmin section,
so each also runs cfdpd, its CFDP entity.

Act 1, a file delivery: cfdpput sends a 24 MiB file from node 1 to node 3
with CFDP class 2; a third of the way the relay goes silent for 3 s (an
outage: SIGSTOP), two thirds of the way it is killed with SIGKILL and
started again. cfdpput shows its progress line and ends with the verified
checksum; the demo compares the received file by SHA-256.

Act 2, bundles: node 1 sends three files (bpsendfile) and 300 bundles
(bpdriver) to node 3; halfway the relay is killed again. Every file is
compared byte for byte and every bundle counted and checked.

    tools/demo.py [--keep] [--bundles N] [--file-mib N] [--build DIR]
"""
import argparse
import datetime
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
TTY = sys.stdout.isatty()
RATE = 60_000_000  # bits/s on each LTP link: a file delivery that takes seconds


def free_udp_ports(n):
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def host_rc(me, ports, epoch):
    """node `me` of the line 1-2-3: LTP spans to its neighbours, plans for
    the rest through node 2; contacts and ranges from one shared epoch."""
    peers = [p for p in (me - 1, me + 1) if 1 <= p <= 3]
    t0 = epoch.strftime("%Y/%m/%d-%H:%M:%S")
    t1 = (epoch + datetime.timedelta(days=1)).strftime("%Y/%m/%d-%H:%M:%S")
    lines = ["## begin ionadmin", f"1 {me}", "s"]
    for a, b in ((1, 2), (2, 1), (2, 3), (3, 2)):
        lines.append(f"a contact {t0} {t1} {a} {b} 125000000")
        lines.append(f"a range {t0} {t1} {a} {b} 0")
    lines += ["## end ionadmin", "## begin ltpadmin", "1 64"]
    for p in peers:
        lines.append(f"a span {p} 64 64 64000 100000 1 "
                     f"'udplso 127.0.0.1:{ports[p]} {RATE}'")
    lines += [f"s 'udplsi 127.0.0.1:{ports[me]}'", "## end ltpadmin",
              "## begin bpadmin", "1", "a scheme ipn 'ipnfw' 'ipnadminep'",
              f"a endpoint ipn:{me}.1 q", f"a endpoint ipn:{me}.2 q",
              "a protocol ltp 1400 100", f"a induct ltp {me} ltpcli"]
    lines += [f"a outduct ltp {p} ltpclo" for p in peers]
    lines += ["s", "## end bpadmin", "## begin ipnadmin"]
    lines += [f"a plan {p} ltp/{p}" for p in peers]
    if me != 2:
        far = 3 if me == 1 else 1
        lines.append(f"a plan {far} ltp/2")
    lines += ["## end ipnadmin"]
    if me != 2:  # the ends run cfdpd: 'tern start' starts it on this section
        lines += ["## begin cfdpadmin", "1", "m segsize 64000", "## end cfdpadmin"]
    lines.append("")
    return "\n".join(lines)


class Demo:
    def __init__(self, o):
        self.o = o
        self.bin = os.path.join(o.build, "bin")
        self.work = tempfile.mkdtemp(prefix="tern-demo-")
        self.nodes = {i: os.path.join(self.work, f"node{i}") for i in (1, 2, 3)}
        self.t0 = time.monotonic()
        self.procs = []
        self.events = []
        self.taken0 = 0  # bundles node 3 had taken before act 2

    def tool(self, name):
        return os.path.join(self.bin, name)

    def say(self, msg):
        if TTY:
            sys.stdout.write("\r\033[K")
        print(f"[{time.monotonic() - self.t0:6.1f} s] {msg}", flush=True)
        self.events.append(msg)

    def tern(self, *args, check=True):
        r = subprocess.run([self.tool("tern")] + list(args), capture_output=True, text=True)
        if check and r.returncode != 0:
            raise RuntimeError(f"tern {' '.join(args)}: {r.stderr.strip() or r.stdout.strip()}")
        return r

    def status(self, node):
        r = self.tern("status", self.nodes[node], "--once", check=False)
        return r.stdout if r.returncode == 0 else ""

    def counter(self, node, name):
        m = re.search(rf"^{name} (\d+)$", self.status(node), re.M)
        return int(m.group(1)) if m else 0

    def setup(self):
        ports = dict(zip((1, 2, 3), free_udp_ports(3)))
        epoch = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
        for i, d in self.nodes.items():
            os.makedirs(d)
            with open(os.path.join(d, "host.rc"), "w") as f:
                f.write(host_rc(i, ports, epoch))
        for i in (3, 2, 1):
            self.tern("start", self.nodes[i])
        self.say(f"3 nodes running in {self.work} (LTP on UDP ports "
                 f"{ports[1]}, {ports[2]}, {ports[3]}; durable stores)")

    def cfdp_progress(self, txn):
        """Bytes node 3's cfdpd has received of transaction txn, and its size
        (node 1 hands the whole file to its bundle agent at once: what is on
        its way is what node 3 does not have yet)."""
        r = subprocess.run([self.tool("cfdpstatus"), "-n", self.nodes[3], "--json"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            return 0, 1
        for t in json.loads(r.stdout)["transactions"]:
            if t["txn"] == txn:
                return t["progress"], max(t["size"], 1)
        return 0, 1  # not begun there yet, or finished

    def relay_pid(self):
        with open(os.path.join(self.nodes[2], "ternd.pid")) as f:
            return int(f.read())

    def file_delivery(self, mib):
        """Act 1: CFDP class 2 from node 1 to node 3 through an outage and a
        killed relay. cfdpput --wait runs beside the demo: its progress line
        and summary are what a user sees of the transfer."""
        root1 = os.path.join(self.nodes[1], "cfdp")
        os.makedirs(root1, exist_ok=True)
        src = os.path.join(root1, "science.dat")
        with open(src, "wb") as f:
            for _ in range(mib):
                f.write(os.urandom(1 << 20))
        with open(src, "rb") as f:
            want = hashlib.sha256(f.read()).hexdigest()
        self.say(f"act 1: cfdpput science.dat ({mib} MiB) from node 1 to entity 3, "
                 f"class 2")
        put = subprocess.Popen([self.tool("cfdpput"), "-n", self.nodes[1], "--wait",
                                "--timeout", "240", src, "3:science.dat"],
                               stdout=None if TTY else subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
        self.procs.append(put)
        txn, events = None, [(1 / 3, "outage"), (2 / 3, "kill")]
        deadline = time.monotonic() + 120
        while events and put.poll() is None:
            if time.monotonic() > deadline:
                raise RuntimeError("the file delivery did not reach two thirds in 120 s")
            time.sleep(0.05)
            if txn is None:
                txn = self.cfdp_txn()
                continue
            done, size = self.cfdp_progress(txn)
            if done / size < events[0][0]:
                continue
            what = events.pop(0)[1]
            pid = self.relay_pid()
            if what == "outage":
                os.kill(pid, signal.SIGSTOP)
                self.say(f"outage: the relay (node 2) goes silent for 3 s, node 3 "
                         f"has {done * 100 // size} % (SIGSTOP)")
                time.sleep(3)
                os.kill(pid, signal.SIGCONT)
                self.say("the relay is back (SIGCONT)")
            else:
                os.kill(pid, signal.SIGKILL)
                self.say(f"relay (node 2, pid {pid}) killed with SIGKILL, node 3 has "
                         f"{done * 100 // size} %")
                time.sleep(1)
                self.tern("start", self.nodes[2])
                self.say("relay restarted on its durable store")
        out = put.communicate(timeout=240)[0]
        got = os.path.join(self.nodes[3], "cfdp", "science.dat")
        digest = None
        if os.path.exists(got):
            with open(got, "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()
        if out:
            print(out.rstrip())
        intact = digest == want
        self.say(f"act 1 done: cfdpput exited {put.returncode}; node 3's science.dat "
                 f"{'matches by SHA-256' if intact else 'is MISSING OR DAMAGED'}")
        return put.returncode == 0 and intact, mib, events

    def cfdp_txn(self):
        """The transaction node 1's cfdpd is sending, once it has one."""
        r = subprocess.run([self.tool("cfdpstatus"), "-n", self.nodes[1], "--json"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            return None
        for t in json.loads(r.stdout)["transactions"]:
            if t["role"] == "sender":
                return t["txn"]
        return None

    def make_files(self):
        src = os.path.join(self.work, "outbox")
        os.makedirs(src)
        files = {}
        with open(os.path.join(src, "readme.txt"), "w") as f:
            for k in range(4000):
                f.write(f"line {k}: bundles carry this text from node 1 to node 3\n")
        for name, size in (("telemetry.bin", 4 << 20), ("image.raw", 12 << 20)):
            with open(os.path.join(src, name), "wb") as f:
                f.write(os.urandom(size))
        for name in sorted(os.listdir(src)):
            p = os.path.join(src, name)
            with open(p, "rb") as f:
                files[name] = (os.path.getsize(p), hashlib.sha256(f.read()).hexdigest())
        return src, files

    def start_receivers(self, nfiles, nbundles):
        inbox = os.path.join(self.work, "inbox")
        os.makedirs(inbox)
        env = dict(os.environ, TERN_NODE_DIR=self.nodes[3])
        log = open(os.path.join(self.work, "receivers.log"), "w")
        self.recvfile = subprocess.Popen(
            [self.tool("bprecvfile"), "ipn:3.1", "--dir", inbox, "--count", str(nfiles),
             "--timeout", "120", "--quiet"], env=env, stdout=log, stderr=subprocess.STDOUT)
        self.bpcounter = subprocess.Popen(
            [self.tool("bpcounter"), "ipn:3.2", str(nbundles), "--timeout", "120", "--quiet"],
            env=env, stdout=log, stderr=subprocess.STDOUT)
        self.procs += [self.recvfile, self.bpcounter]
        return inbox

    def send(self, src, nbundles):
        env = dict(os.environ, TERN_NODE_DIR=self.nodes[1])
        for name in sorted(os.listdir(src)):
            subprocess.run([self.tool("bpsendfile"), "ipn:1.1", "ipn:3.1",
                            os.path.join(src, name), "--quiet"], env=env, check=True)
        self.say("3 files handed to node 1 (bpsendfile)")
        # 300 bundles of 1,000 bytes at 400 kbit/s: about 6 s of sending
        self.driver = subprocess.Popen(
            [self.tool("bpdriver"), str(nbundles), "ipn:1.2", "ipn:3.2", "-1000", "i400k",
             "--quiet"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.procs.append(self.driver)

    def progress(self, files_total, bundles_total, relay_state):
        got = self.counter(3, "taken") - self.taken0  # act 2's only
        line = (f"node 3 has taken {got} bundles (files {files_total}, bundles "
                f"{bundles_total} expected); relay {relay_state}")
        if TTY:
            sys.stdout.write(f"\r\033[K[{time.monotonic() - self.t0:6.1f} s] {line}")
            sys.stdout.flush()
        return got

    def kill_relay_halfway(self, nbundles):
        deadline = time.monotonic() + 60
        while self.progress(3, nbundles, "up") < nbundles // 2 + 3:
            if time.monotonic() > deadline:
                raise RuntimeError("node 3 got less than half of the bundles in 60 s")
            time.sleep(0.1)
        with open(os.path.join(self.nodes[2], "ternd.pid")) as f:
            pid = int(f.read())
        os.kill(pid, signal.SIGKILL)
        self.say(f"relay (node 2, pid {pid}) killed with SIGKILL mid-transfer")
        t = time.monotonic()
        while time.monotonic() - t < 2:
            self.progress(3, nbundles, "down")
            time.sleep(0.1)
        self.tern("start", self.nodes[2])
        resumed = re.findall(r"(\d+) bundle\(s\) resumed|(\d+) export session\(s\) resumed",
                             open(os.path.join(self.nodes[2], "ternd.log")).read())
        n = sum(int(a or b) for a, b in resumed[-2:]) if resumed else 0
        self.say(f"relay restarted on its durable store ({n} bundles/LTP sessions resumed)")

    def finish(self, files, nbundles, inbox, cfdp):
        deadline = time.monotonic() + 180
        for p in (self.driver, self.recvfile, self.bpcounter):
            while p.poll() is None:
                self.progress(3, nbundles, "up")
                if time.monotonic() > deadline:
                    raise RuntimeError("the transfer did not finish in 3 minutes")
                time.sleep(0.1)
        ok = True
        rows = []
        for name, (size, digest) in files.items():
            p = os.path.join(inbox, name)
            got = None
            if os.path.exists(p):
                with open(p, "rb") as f:
                    got = hashlib.sha256(f.read()).hexdigest()
            good = got == digest
            ok &= good
            rows.append(f"  {name:16} {size:>12,} bytes  {'intact (sha256 matches)' if good else 'MISSING OR DAMAGED'}")
        taken = self.counter(3, "taken") - self.taken0
        dups = self.counter(3, "duplicates")
        bundles_ok = self.bpcounter.returncode == 0
        ok &= bundles_ok and self.recvfile.returncode == 0 and self.driver.returncode == 0
        if TTY:
            sys.stdout.write("\r\033[K")
        cfdp_ok, mib, missed = cfdp
        ok &= cfdp_ok
        print()
        print("Summary")
        print(f"  act 1, CFDP class 2: science.dat ({mib} MiB) node 1 -> node 3 through an "
              f"outage and a killed relay: "
              f"{'delivered, checksum verified, SHA-256 matches' if cfdp_ok else 'FAILED'}"
              + (f" (it ended before the {', '.join(e for _, e in missed)})" if missed else ""))
        print("  act 2, files by bpsendfile, node 1 -> node 3 through the relay:")
        print("\n".join(rows))
        print(f"  bundles: {nbundles} sent by bpdriver, bpcounter at node 3 "
              f"{'counted all, each intact (CRC-32C) and once' if bundles_ok else 'FAILED'}")
        print(f"  node 3 took {taken} bundles during act 2 (its files and counted bundles, "
              f"and act 1's CFDP PDUs still in flight); {dups} duplicates suppressed after "
              f"the relay's restart")
        print(f"  relay killed with SIGKILL and restarted: "
              f"{'nothing lost, nothing duplicated' if ok else 'SOMETHING WAS LOST'}")
        print(f"  time: {time.monotonic() - self.t0:.1f} s; logs: "
              f"{self.work if self.o.keep else '(use --keep to keep them)'}")
        return ok

    def cleanup(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
        for i in self.nodes:
            self.tern("stop", self.nodes[i], check=False)
        if not self.o.keep:
            shutil.rmtree(self.work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keep", action="store_true", help="keep the node directories")
    ap.add_argument("--bundles", type=int, default=300)
    ap.add_argument("--file-mib", type=int, default=24, help="act 1's file size")
    ap.add_argument("--build", default=os.path.join(REPO, os.environ.get("BUILD_DIR", "build")))
    o = ap.parse_args()
    d = Demo(o)
    ok = False
    try:
        print("Tern demo: three nodes over LTP/UDP; act 1 a CFDP file delivery from node 1 "
              "to node 3 through an outage and a killed relay, act 2 files and bundles")
        d.setup()
        cfdp = d.file_delivery(o.file_mib)
        d.taken0 = d.counter(3, "taken")
        d.say("act 2: files and bundles from node 1 to node 3, the relay killed halfway")
        src, files = d.make_files()
        inbox = d.start_receivers(len(files), o.bundles)
        d.send(src, o.bundles)
        d.kill_relay_halfway(o.bundles + len(files))
        ok = d.finish(files, o.bundles, inbox, cfdp)
    except Exception as e:  # noqa: BLE001 - the demo reports and cleans up
        print(f"\ndemo failed: {e}", file=sys.stderr)
        for i, nd in d.nodes.items():
            for name in ("ternd.log", "cfdpd.log"):
                log = os.path.join(nd, name)
                if os.path.exists(log):
                    print(f"--- node {i} {name} (last lines)", file=sys.stderr)
                    print("".join(open(log).readlines()[-8:]), file=sys.stderr)
        o.keep = True
    finally:
        d.cleanup()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
