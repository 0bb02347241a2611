#!/usr/bin/python3
"""The cislunar benchmark: run.py [options] <prefix> writes <prefix>.json and prints the grid.

Repeats the experiment of ../shared/seeds/002 (TCP-based DTN in the
cislunar domain) with Tern: a file goes from TX through MX to RX, and the
MX <-> RX link is a 115,200 bit/s point-to-point link with a one-way delay
of 1.25 .. 5 s, a bit error rate of 0, 1e-6 or 1e-5 and, in some cells, a
disruption of 60 or 120 s. Two stacks: BP/LTP/UDP/IP and BP/TCPCLv4/TCP/IP.

Every cell has its own emulated link: build/bin/linkem in packet mode
(root) makes two network namespaces joined by TUN devices and moves every
IP packet between them through the impairments, so the rate counts IP
bytes (IP + UDP/TCP headers + payload) for both stacks and TCP runs over a
real kernel TCP. A packet with a flipped bit is dropped (--ber-drop), as
the paper's PPP link (FCS) drops a damaged frame. TX and MX run in
namespace A (TX -> MX over its loopback, unimpaired), RX in namespace B.
Every node is a real ternd (memory store), started with `ip netns exec`.

A cell: bprecvfile on RX, then bpsendfile on TX (the file in pieces of
--split bytes, one bundle each); or, on the LTP grid points, CFDP as the
mover (--movers): cfdpput class 2 (cfdp2) or class 1 with closure (cfdp1)
from TX's cfdpd to RX's, both started by `tern start` from the host.rc's
cfdpadmin section, MX a plain relay. Goodput = file bytes / (time from
the mover's start to the moment the whole file is on RX's disk: the
received file's mtime). The file is checked by SHA-256 against the one
sent. Cells run concurrently (--jobs), longest expected first; a cell that
has not delivered in --cell-timeout seconds counts as not delivered.

Progress goes to stderr (one \\r-updated line on a terminal); the grid is
printed at the end. Docs: docs/cislunar.md.
"""
import argparse
import concurrent.futures
import hashlib
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))
from benchlib import Progress, bin_dir, machine  # noqa: E402

LINK_BPS = 115_200
LINK_BYTES_S = LINK_BPS / 8.0            # 14,400 B/s of IP bytes
DELAYS = [1.25, 1.5, 2, 2.5, 3, 3.5, 4, 4.5, 5]
BERS = [0.0, 1e-6, 1e-5]
DISRUPTIONS = [60, 120]
DISRUPTION_DELAY = 2.0
DISRUPTION_AT = 20.0   # s after the transfer starts, the link goes down
QUICK = {"delays": [1.25, 5], "bers": [0.0, 1e-5]}
MTU = 1500
IP_UDP = 28            # IPv4 + UDP header bytes per datagram
START_AT = 6.0         # s after linkem is ready, the transfer starts

# LTP: the segment size by BER (bytes of LTP segment, IP packet = + 28).
# Large segments cost less header per byte; at 1e-5 a 1,500-byte packet is
# lost with p = 11 %, an 828-byte one with 6.4 %: (1 - 48/L)(1 - BER)^(8L)
# (48 = IP/UDP + LTP header) peaks near L = 800 there, while at 1e-6 and
# 0 the largest packet that needs no IP fragmentation is best.
LTP_SEG = {0.0: MTU - IP_UDP, 1e-6: MTU - IP_UDP, 1e-5: 800}
LTP_MAX_EXPORT = 64     # sessions per span (flow-control window)
LTP_QTIME = 0.5         # s, own and span queuing latency (timer slack)
LTP_RATE_MARGIN = 0.99  # the LSO paces at this share of the link's payload rate
LTP_MAX_RETRIES = 60    # checkpoint/report retries: ride out 120 s outages
SPLIT = 20_000          # bytes of file per bundle (bpsendfile --split)
CONTACT_RATE = 1_000_000  # B/s in the contact plan: never the limit
HEAP_BYTES = 64 << 20

# The file movers. bpsendfile: the file in SPLIT-byte pieces, one bundle
# each, to bprecvfile. cfdp2 / cfdp1: cfdpput class 2 / class 1 (with
# closure, so the sender learns the outcome) between cfdpd on TX and RX;
# MX is a plain BP relay. CFDP runs on the LTP cells only (the TCP cells
# stay bpsendfile: docs/cislunar.md).
MOVERS = ("bpsendfile", "cfdp2", "cfdp1")
# CFDP file data per PDU: one PDU per bundle, and a bundle per LTP block as
# bpsendfile's pieces are: 20,000 bytes of file per PDU (+ 11 bytes of
# PDU header and offset) is 50 bundles for 1 MB, each a little smaller
# than bpsendfile's (20,000 + its file header), so each is still one
# block of 14 (26 at 1e-5) segments.
CFDP_SEGMENT = SPLIT
CFDP_ACK_LIMIT = 4      # the engine's ACK and NAK limits (not configurable)
CFDP_WIRE_MARGIN = 1.5  # the file's time on the link, x this for repairs

# The paper's figures (seeds/002, Table 2 as quoted in its text, and the
# traces of Figs. 5, 7-9): {stack: {ber: [(delay_s, bytes/s)]}}. Its LTP
# delivered nothing at 5 s with BER 1e-5.
PAPER = {
    "tcp": {0.0: [(1.28, 7336.36), (5.0, 2814.95)],
            1e-6: [(1.28, 3940.8), (5.0, 1090.4)],
            1e-5: [(1.28, 1201.4), (2.0, 700.0), (4.0, 390.0), (4.5, 360.7)]},
    "ltp": {0.0: [(1.28, 1911.0), (5.0, 989.0)],
            1e-6: [(1.28, 1883.0), (5.0, 911.0)],
            1e-5: [(1.28, 1675.0), (4.5, 1001.0)]},
}
PAPER_DISRUPTED = {  # TCP at 2 s delay: {ber: {disruption_s: bytes/s}}
    1e-5: {0: 700.0, 60: 660.0, 120: 620.0},
    1e-6: {120: 1400.0},
}


def ber_key(b):
    return "0" if b == 0 else f"{b:.0e}".replace("e-0", "e-")


def ion_time(t):
    return time.strftime("%Y/%m/%d-%H:%M:%S", time.gmtime(int(t)))


# ------------------------------------------------------------------ configs

def cfdp_timers(delay, disruption, fsize):
    """CFDP's timers for a cell (seconds), sized from the link as LTP's are.

    Nothing tells CFDP that the link is down (the outages are unannounced),
    so no timer is frozen; every limit must outlast what the link can do to
    the transfer. cfdpd hands the whole file to BP at once, so the EOF's
    ACK timer (and the sender's inactivity timer, armed with the EOF) start
    while the file's data is still queued ahead of the EOF: the ACK comes
    back only after `busy` = the file's time on the link (x 1.5 for
    repairs) + the outage + two of LTP's round-trip timeouts. The ACK timer
    times its limit (4 expirations, a fault at the 5th) covers that; a NAK
    timer that long also never re-asks for data LTP is still repairing.
    The inactivity timer is twice `busy`.

    Over BP/LTP file data arrives out of order (a block under repair comes
    after later ones) but is not lost: LTP repairs it. A class 2 receiver
    that NAKs a gap after the engine's 50 ms only has the sender send the
    data again, and every later NAK round asks again for what is still on
    its way (a first run at 1.25 s, BER 1e-5: 1.92 MB resent for a 1 MB
    file, half of bpsendfile's goodput). The relay's LTP holds the whole
    file at once (64 sessions), so a block's repair can wait behind much of
    the file's first pass: with a wait of the outage + 4 LTP timeouts (20 s
    at 1.25 s) 1.1 MB was still resent. So the receiver waits `m nakdelay`
    = `busy` before it NAKs a gap: it NAKs only what LTP did not deliver.

    A class 1 receiver whose EOF came before data LTP is still repairing
    waits with its check timer as long as LTP itself keeps trying: period
    = LTP's retransmission timeout, limit = LTP's retry limit."""
    lt = 2 * math.ceil(delay) + 2 * LTP_QTIME        # LTP's retransmission timeout
    wire = fsize * CFDP_WIRE_MARGIN / LINK_BYTES_S
    busy = wire + disruption + 2 * lt
    return {"ack_nak_s": max(math.ceil(busy / CFDP_ACK_LIMIT), math.ceil(2 * lt)),
            "inactivity_s": math.ceil(2 * busy),
            "nak_delay_ms": int(math.ceil(busy) * 1000),
            "check_period_s": math.ceil(lt),
            "check_limit": LTP_MAX_RETRIES}


def cfdp_section(num, peer, timers):
    """The cfdpadmin section that makes `tern start` start cfdpd on node num
    (timers None: the engine's defaults, for --cfdp-default-timers)."""
    if timers is None:
        return ["1", f"m segsize {CFDP_SEGMENT}"]
    return ["1", f"m segsize {CFDP_SEGMENT}", f"m inactivity {timers['inactivity_s']}",
            f"m nakdelay {timers['nak_delay_ms']}",
            f"m ckperiod {timers['check_period_s']}",
            f"m maxtimeouts {timers['check_limit']}",
            f"a entity {peer} bp ipn:{peer}.65 {timers['ack_nak_s']} 0 0"]


def rc_text(num, stack, delay, ber, nets, cfdp=None):
    """host.rc of node num (1 TX, 2 MX, 3 RX). nets: addresses and ports.
    cfdp: CFDP timers (cfdp_timers) when the ends run cfdpd."""
    t0, t1 = ion_time(time.time() - 60), ion_time(time.time() + 30 * 86400)
    owlt = math.ceil(delay)  # ranges are whole seconds; LTP's timers use them
    ion = [f"1 {num} node{num}.ionconfig"]
    for a, b in ((1, 2), (2, 3)):
        ion.append(f"a contact {t0} {t1} {a} {b} {CONTACT_RATE}")
        ion.append(f"a contact {t0} {t1} {b} {a} {CONTACT_RATE}")
    ion.append(f"a range {t0} {t1} 1 2 0")
    ion.append(f"a range {t0} {t1} 2 3 {owlt}")
    neigh = {1: [2], 2: [1, 3], 3: [2]}[num]
    via = {1: {3: 2}, 2: {}, 3: {1: 2}}[num]
    secs = [("ionadmin", ion)]
    bp = ["1", "a scheme ipn 'ipnfw' 'ipnadminep'", f"a endpoint ipn:{num}.1 q",
          f"a endpoint ipn:{num}.2 q"]
    if stack == "ltp":
        seg = LTP_SEG[ber]
        ltp = [f"1 {LTP_MAX_EXPORT * 2}", f"m ownqtime {LTP_QTIME:g}",
               f"m maxretries {LTP_MAX_RETRIES}"]
        for p in neigh:
            addr, port = nets["ltp"][p]
            if {num, p} == {2, 3}:
                s, rate = seg, int(LINK_BPS * seg / (seg + IP_UDP) * LTP_RATE_MARGIN)
                dest = nets["addr"][p]
                lso = f"udplso {dest}:{port} {rate}"
            else:  # TX <-> MX on the loopback of namespace A: unimpaired
                s, lso = 64000, f"udplso 127.0.0.1:{port}"
            ltp.append(f"a span {p} {LTP_MAX_EXPORT} {LTP_MAX_EXPORT} {s} {SPLIT} 0 "
                       f"'{lso}' {LTP_QTIME:g}")
        ltp.append(f"s 'udplsi {nets['bind'][num]}:{nets['ltp'][num][1]}'")
        secs.append(("ltpadmin", ltp))
        bp += ["a protocol ltp 1400 100", f"a induct ltp {num} ltpcli"]
        bp += [f"a outduct ltp {p} ltpclo" for p in neigh]
        duct = {p: f"ltp/{p}" for p in neigh}
    else:
        bp += ["a protocol tcp", f"a induct tcp {nets['bind'][num]}:{nets['tcp'][num]} tcpcli"]
        duct = {}
        for p in neigh:
            dest = nets["addr"][p] if {num, p} == {2, 3} else "127.0.0.1"
            bp.append(f"a outduct tcp {dest}:{nets['tcp'][p]} tcpclo")
            duct[p] = f"tcp/{dest}:{nets['tcp'][p]}"
    secs.append(("bpadmin", bp + ["s"]))
    ipn = [f"a plan {p} {duct[p]}" for p in neigh]
    ipn += [f"a plan {d} {duct[v]}" for d, v in via.items()]
    secs.append(("ipnadmin", ipn))
    if cfdp and num != 2:
        secs.append(("cfdpadmin", cfdp_section(num, 4 - num, cfdp.get("timers"))))
    out = []
    for name, lines in secs:
        out += [f"## begin {name}", *lines, f"## end {name}"]
    return "\n".join(out) + "\n"


def node_nets():
    """Addresses and ports: TX (1) and MX (2) share namespace A, RX (3) is in
    B. Ports are fixed: every cell has its own namespaces."""
    return {
        "addr": {2: "10.200.0.1", 3: "10.200.0.2"},
        "bind": {1: "127.0.0.1", 2: "0.0.0.0", 3: "0.0.0.0"},
        "ltp": {1: ("127.0.0.1", 1114), 2: ("0.0.0.0", 1113), 3: ("0.0.0.0", 1113)},
        "tcp": {1: 4557, 2: 4556, 3: 4556},
    }


TOOLS = ("ternd", "tern", "bpsendfile", "bprecvfile", "linkem")
CFDP_TOOLS = ("cfdpd", "cfdpput", "cfdpstatus")
# the copies of the file tools the cells run (snapshot)
RENAMED = {"bprecvfile": "cislunar-recv", "bpsendfile": "cislunar-send"}


def _tools(bdir):
    """The programs to copy: CFDP's too when bdir has them (a --tcp-build
    need not)."""
    have = all(os.access(os.path.join(bdir, t), os.X_OK) for t in CFDP_TOOLS)
    return TOOLS + (CFDP_TOOLS if have else ())


def _build_files(bdir):
    lib = os.path.join(os.path.dirname(bdir), "lib")
    files = [os.path.join(bdir, t) for t in _tools(bdir)]
    files += [os.path.join(lib, f) for f in sorted(os.listdir(lib)) if ".so" in f]
    return files


def snapshot(bdir, dst, quiet_s=10, tries=30):
    """Copies the programs of bin directory bdir and the libraries beside it
    (../lib) into dst/bin and dst/lib; returns (bin dir, environment). A run
    takes minutes while other people rebuild build/: a cell must not exec a
    ternd the linker is rewriting, nor mix two builds. The copy is taken
    once no file of the build changed for quiet_s seconds, checked (every
    program runs --help with the copied libraries) and taken again if the
    build changed meanwhile. The copies find their libraries through
    LD_LIBRARY_PATH (searched before the build's RUNPATH)."""
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(dst, "lib"))
    for _ in range(tries):
        files = _build_files(bdir)
        before = {f: os.stat(f).st_mtime for f in files}
        if time.time() - max(before.values()) < quiet_s:
            time.sleep(2)
            continue
        shutil.rmtree(dst, ignore_errors=True)
        os.makedirs(os.path.join(dst, "bin"))
        os.makedirs(os.path.join(dst, "lib"))
        for f in files:
            sub = "bin" if os.path.dirname(f) == bdir else "lib"
            shutil.copy2(f, os.path.join(dst, sub, os.path.basename(f)))
        if any(os.stat(f).st_mtime != m for f, m in before.items()):
            continue
        ok = all(subprocess.run([os.path.join(dst, "bin", t), "--help"], env=env,
                                capture_output=True, timeout=30).returncode == 0
                 for t in _tools(bdir))
        if ok:
            # the file tools run under other names: twice in one afternoon
            # every bprecvfile on the (shared) machine got a SIGTERM at the
            # same second, and once bpsendfile a SIGKILL, from outside this
            # run, which ended those cells
            for tool, name in RENAMED.items():
                shutil.copy2(os.path.join(dst, "bin", tool), os.path.join(dst, "bin", name))
            return os.path.join(dst, "bin"), env
    sys.exit(f"bench/cislunar: could not take a consistent copy of {bdir} (being rebuilt?)")


# ------------------------------------------------------------------ a cell

class Cell:
    def __init__(self, idx, stack, delay, ber, disruption, mover="bpsendfile", base=None):
        self.idx, self.stack, self.delay, self.ber = idx, stack, delay, ber
        self.disruption = disruption
        self.mover = mover
        # the grid point's index: its linkem seed, the same for every mover
        self.base = idx if base is None else base
        self.result = None
        self.state = "waiting"

    @property
    def label(self):
        d = f", {self.disruption} s outage" if self.disruption else ""
        return f"{self.stack.upper()} {self.delay:g} s BER {ber_key(self.ber)}{d} [{self.mover}]"

    def expected_s(self):
        """A rough guess of how long the cell takes (longest first)."""
        base = 80 + 2 * self.delay
        if self.stack == "tcp":
            base *= {0.0: 1.5, 1e-6: 2.5, 1e-5: 6.0 + self.delay}[self.ber]
        else:
            base *= {0.0: 1.0, 1e-6: 1.1, 1e-5: 1.3}[self.ber]
        if self.mover != "bpsendfile":
            base *= 1.05
        return base + self.disruption


def ns_run(lk, side, env, *cmd, timeout=60):
    return lk.exec_in(side, *cmd, timeout=timeout, env=env)


def _send_bpsendfile(lk, b, env, cdir, nodes, src, timeout, procs, entry):
    """bprecvfile on RX, bpsendfile on TX; returns (t0, received file path)
    once bprecvfile ended or the cell's time is up."""
    dst = os.path.join(cdir, "got")
    os.makedirs(dst)
    rx_out = open(os.path.join(cdir, "bprecvfile.out"), "w")
    rx = lk.popen_in("b", os.path.join(b, RENAMED["bprecvfile"]), "ipn:3.2",
                     "--node", nodes[3], "--dir", dst, "--count", "1",
                     "--timeout", str(int(timeout) + 60), "--quiet",
                     stdout=rx_out, stderr=subprocess.STDOUT, env=env)
    procs.append(rx)
    _wait_start(lk)
    t0 = time.time()
    snd = ns_run(lk, "a", env, os.path.join(b, RENAMED["bpsendfile"]), "ipn:1.2", "ipn:3.2",
                 src, "--node", nodes[1], "--split", str(SPLIT), "--quiet", timeout=300)
    if snd.returncode != 0:
        raise RuntimeError(f"bpsendfile exit {snd.returncode}: {snd.stdout}{snd.stderr}")
    deadline = t0 + timeout
    while rx.poll() is None and time.time() < deadline:
        time.sleep(0.5)
    if rx.poll() is None:
        entry["error"] = f"not delivered in {timeout:.0f} s"
    elif rx.returncode != 0:
        entry["error"] = f"bprecvfile exit {rx.returncode}"
    return t0, os.path.join(dst, os.path.basename(src))


def _send_cfdp(lk, b, env, cdir, nodes, src, timeout, cls, entry):
    """cfdpput class cls from TX's cfdpd to RX's (started by `tern start`
    from the host.rc's cfdpadmin section), waiting for the outcome;
    returns (t0, received file path). entry gets the sender's end
    (sender_seconds: when cfdpput learnt the outcome, the Finished for
    class 2) and cfdpput's JSON."""
    name = os.path.basename(src)
    _wait_start(lk)
    t0 = time.time()
    args = [os.path.join(b, "cfdpput"), "-n", nodes[1], "--wait", "--json", "-c", str(cls),
            "-t", str(int(timeout))]
    if cls == 1:
        args.append("--closure")
    r = ns_run(lk, "a", env, *args, src, f"3:{name}", timeout=timeout + 60)
    t_end = time.time()
    entry["sender_seconds"] = round(t_end - t0, 3)
    with open(os.path.join(cdir, "cfdpput.out"), "w") as f:
        f.write(r.stdout + r.stderr)
    try:
        out = json.loads(r.stdout)
    except ValueError:
        out = {"raw": (r.stdout + r.stderr)[-400:]}
    entry["cfdpput"] = out
    entry["cfdpput_exit"] = r.returncode
    if r.returncode != 0:
        entry["error"] = (f"cfdpput exit {r.returncode}: "
                          f"{out.get('condition') or out.get('raw') or r.stderr.strip()}")
    return t0, os.path.join(nodes[3], "cfdp", name)


def _wait_start(lk):
    wait = lk.zero + START_AT - time.time()
    if wait > 0:
        time.sleep(wait)


def _cfdp_report(lk, b, env, nodes, entry, cdir):
    """What each cfdpd saw: its counters (PDUs, bytes resent, duplicates)
    and its transactions (cfdpstatus --json), kept in the entry and in the
    cell's directory."""
    rep = {}
    for n, side, role in ((1, "a", "tx"), (3, "b", "rx")):
        r = ns_run(lk, side, env, os.path.join(b, "cfdpstatus"), "-n", nodes[n], "--counters")
        cnt = {}
        for line in r.stdout.splitlines():
            k, _, v = line.partition(" ")
            try:
                cnt[k] = int(v)
            except ValueError:
                cnt[k] = v
        j = ns_run(lk, side, env, os.path.join(b, "cfdpstatus"), "-n", nodes[n], "--json")
        with open(os.path.join(cdir, f"cfdpstatus-{role}.txt"), "w") as f:
            f.write(r.stdout + r.stderr + "\n" + j.stdout + j.stderr)
        keep = ("pdus_in", "pdus_out", "file_bytes_out", "file_bytes_resent", "file_bytes_in",
                "file_bytes_dup", "naks_sent", "naks_in", "eofs_resent", "finished_resent",
                "drop_unexpected", "drop_malformed", "bp_sent")
        rep[role] = {k: v for k, v in cnt.items() if k in keep or "nak" in k}
    entry["cfdp_counters"] = rep


def run_cell(cell, work, fsize, src, src_sha, timeout, keep, bins, default_timers=False):
    """Runs one cell; returns its grid entry (plus details). bins: {stack:
    (bin directory, environment) of its ternd, tern and file tools}."""
    from tern.linkem import Linkem
    b, env = bins[cell.stack]
    cdir = tempfile.mkdtemp(prefix=f"c{cell.idx:03d}-{cell.stack}-{cell.mover}-", dir=work)
    nets = node_nets()
    entry = {"stack": cell.stack, "mover": cell.mover, "delay_s": cell.delay, "ber": cell.ber,
             "disruption_s": cell.disruption, "goodput_bytes_per_s": None,
             "delivered": False}
    imp = {"delay": cell.delay * 1000.0, "rate": LINK_BPS, "seed": 1000 + cell.base}
    if cell.ber:
        imp["ber"] = cell.ber
    if cell.disruption:
        imp["outage"] = [(START_AT + DISRUPTION_AT, START_AT + DISRUPTION_AT + cell.disruption)]
    cfdp = None
    if cell.mover != "bpsendfile":
        t = None if default_timers else cfdp_timers(cell.delay, cell.disruption, fsize)
        cfdp = {"timers": t}
        entry["cfdp_timers"] = t or "the engine's defaults (--cfdp-default-timers)"
    lk = Linkem("packet", workdir=os.path.join(cdir, "linkem"), stats_interval=1000,
                extra_args=["--ber-drop"], **imp)
    nodes = {n: os.path.join(cdir, f"n{n}") for n in (1, 2, 3)}
    side = {1: "a", 2: "a", 3: "b"}
    procs = []
    cell.state = "starting"
    try:
        lk.start(30)
        for n, d in nodes.items():
            os.makedirs(d)
            with open(os.path.join(d, "host.rc"), "w") as f:
                f.write(rc_text(n, cell.stack, cell.delay, cell.ber, nets, cfdp))
            with open(os.path.join(d, f"node{n}.ionconfig"), "w") as f:
                f.write(f"configFlags 1\nheapWords {HEAP_BYTES // 8}\n")
        for n, d in nodes.items():
            r = ns_run(lk, side[n], env, os.path.join(b, "tern"), "start",
                       os.path.join(d, "host.rc"))
            if r.returncode != 0:
                raise RuntimeError(f"node {n} did not start: {r.stdout}{r.stderr}")
            if cfdp and n != 2 and "cfdpd started" not in r.stdout:
                raise RuntimeError(f"node {n}: tern start started no cfdpd: {r.stdout}")
        cell.state = "sending"
        if cell.mover == "bpsendfile":
            t0, got = _send_bpsendfile(lk, b, env, cdir, nodes, src, timeout, procs, entry)
        else:
            t0, got = _send_cfdp(lk, b, env, cdir, nodes, src, timeout,
                                 int(cell.mover[-1]), entry)
        if "error" in entry:
            pass
        elif not os.path.exists(got):
            entry["error"] = "no file received"
        else:
            h = hashlib.sha256()
            with open(got, "rb") as f:
                h.update(f.read())
            # the file is complete on RX's disk when its last byte is
            # written: its mtime (for CFDP, before the Finished goes out)
            t1 = os.stat(got).st_mtime
            entry["seconds"] = round(t1 - t0, 3)
            if h.hexdigest() != src_sha:
                entry["error"] = "the received file differs (SHA-256)"
            else:
                entry["delivered"] = True
                entry["goodput_bytes_per_s"] = round(fsize / (t1 - t0), 1)
                entry["link_fraction"] = round(fsize / (t1 - t0) / LINK_BYTES_S, 4)
        # what happened on the link, in LTP and in CFDP
        try:
            st = lk.stats(fresh=True)
            entry["link"] = {d: {k: st[d][k] for k in ("packets_in", "bytes_in", "dropped_ber",
                                                        "dropped_queue", "dropped_outage")}
                             for d in ("a2b", "b2a")}
        except Exception as e:  # noqa: BLE001 - informative only
            entry["link"] = {"error": str(e)}
        if cell.stack == "ltp":
            r = ns_run(lk, "a", env, os.path.join(b, "tern"), "status", nodes[2], "--once")
            m = re.search(r"^ltp: .*$", r.stdout, re.M)
            if m:
                entry["mx_ltp"] = m.group(0)
        if cfdp:
            try:
                _cfdp_report(lk, b, env, nodes, entry, cdir)
            except Exception as e:  # noqa: BLE001 - informative only
                entry["cfdp_counters"] = {"error": str(e)}
    except Exception as e:  # noqa: BLE001 - the cell fails, the grid goes on
        entry["error"] = f"{type(e).__name__}: {e}"
    finally:
        cell.state = "stopping"
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        for n, d in nodes.items():
            if os.path.exists(os.path.join(d, "host.rc")):
                try:
                    subprocess.run([os.path.join(b, "tern"), "stop", d, "--timeout", "10"],
                                   capture_output=True, timeout=30, env=env)
                except subprocess.TimeoutExpired:
                    pass
        try:
            lk.stop(check=False)
        except Exception:  # noqa: BLE001
            lk.kill()
    if entry["delivered"] and not keep:
        shutil.rmtree(cdir, ignore_errors=True)
    else:
        entry["dir"] = cdir
    cell.state = "done"
    cell.result = entry
    return entry


# ------------------------------------------------------------------ main

# a CFDP cell's memory: two cfdpd (their 64 MiB stores touched: 67 MB of
# private memory each, measured) and three ternd and linkem (a few MB each)
CELL_MEM = 160 << 20


def mem_jobs():
    """Cells at once that fit in 60 % of the memory available now."""
    try:
        with open("/proc/meminfo") as f:
            kb = next(int(line.split()[1]) for line in f if line.startswith("MemAvailable:"))
    except (OSError, StopIteration, ValueError):
        return 32
    return max(1, int(kb * 1024 * 0.6 // CELL_MEM))


def parse_list(s, conv):
    return [conv(x) for x in s.split(",") if x.strip()]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("prefix")
    ap.add_argument("--quick", action="store_true",
                    help="a few cells: delays 1.25 and 5 s, BER 0 and 1e-5, no disruptions")
    ap.add_argument("--only", choices=("ltp", "tcp"), help="one stack only")
    ap.add_argument("--movers", default=",".join(MOVERS),
                    help="comma-separated file movers of the LTP cells: bpsendfile, cfdp2 "
                    "(cfdpput class 2), cfdp1 (class 1); default all three. The TCP "
                    "cells use bpsendfile only")
    ap.add_argument("--delays", help="comma-separated one-way delays in s "
                    "(default 1.25,1.5,2,2.5,3,3.5,4,4.5,5)")
    ap.add_argument("--bers", help="comma-separated bit error rates (default 0,1e-6,1e-5)")
    ap.add_argument("--disruptions", help="comma-separated outage lengths in s at 2 s delay "
                    "(default 60,120; 'none' for none)")
    ap.add_argument("--file-size", type=int, default=1_000_000, help="bytes (default 1e6)")
    ap.add_argument("--jobs", type=int, default=0,
                    help="cells at once (default: all of them, at most as many as fit "
                    "in 60 %% of the available memory at 160 MB a cell)")
    ap.add_argument("--cell-timeout", type=float, default=3000,
                    help="s a cell may take to deliver (default 3000)")
    ap.add_argument("--keep", action="store_true", help="keep every cell's directory")
    ap.add_argument("--cfdp-default-timers", action="store_true",
                    help="CFDP cells with the engine's timers (ACK/NAK 10 s, inactivity "
                    "60 s, NAK delay 50 ms) instead of the link's: to see them fail")
    ap.add_argument("--tcp-build", help="a build directory whose ternd (and tools) run the "
                    "TCP cells instead of $BUILD_DIR's: to measure a changed TCP "
                    "convergence layer (docs/cislunar.md)")
    a = ap.parse_args()

    if os.geteuid() != 0:
        sys.exit("bench/cislunar: needs root (linkem packet mode makes network namespaces)")
    bins = {"ltp": bin_dir(), "tcp": bin_dir()}
    if a.tcp_build:
        bins["tcp"] = os.path.join(os.path.abspath(a.tcp_build), "bin")
    movers = [m for m in a.movers.split(",") if m.strip()]
    bad = [m for m in movers if m not in MOVERS]
    if bad or not movers:
        sys.exit(f"bench/cislunar: --movers: unknown mover(s) {bad}; "
                 f"expected some of {','.join(MOVERS)}")
    need = {st: TOOLS + (CFDP_TOOLS if st == "ltp" and set(movers) - {"bpsendfile"} else ())
            for st in bins}
    for st, d in bins.items():
        for tool in need[st]:
            if not os.access(os.path.join(d, tool), os.X_OK):
                sys.exit(f"bench/cislunar: {os.path.join(d, tool)} not built (make build)")
    from tern import linkem as lkmod
    lkmod.remove_stale_namespaces()

    delays = parse_list(a.delays, float) if a.delays else (QUICK["delays"] if a.quick else DELAYS)
    bers = parse_list(a.bers, float) if a.bers else (QUICK["bers"] if a.quick else BERS)
    if a.disruptions:
        disr = [] if a.disruptions == "none" else parse_list(a.disruptions, int)
    else:
        disr = [] if a.quick else DISRUPTIONS
    stacks = [a.only] if a.only else ["ltp", "tcp"]
    points = []
    for st in stacks:
        for ber in bers:
            for d in delays:
                points.append((st, d, ber, 0))
            for dd in disr:
                points.append((st, DISRUPTION_DELAY, ber, dd))
    # every grid point once per mover (the TCP points with bpsendfile only);
    # a point's movers share its linkem seed
    cells = []
    for base, pt in enumerate(points):
        for mv in (movers if pt[0] == "ltp" else ["bpsendfile"]):
            if pt[0] == "tcp" and "bpsendfile" not in movers:
                continue
            cells.append(Cell(len(cells), *pt, mover=mv, base=base))
    jobs = a.jobs or min(len(cells), mem_jobs())

    mach = machine()
    work = tempfile.mkdtemp(prefix="cislunar.", dir=os.environ.get("TERN_TMP", "/tmp"))
    built_from = dict(bins)
    snaps = {}
    for st, d in bins.items():
        if d not in snaps:
            snaps[d] = snapshot(d, os.path.join(work, f"bin-{len(snaps)}"))
        bins[st] = snaps[d]
    # linkem too runs from the copy (tern.linkem finds it through TERN_BUILD_DIR)
    os.environ["TERN_BUILD_DIR"] = os.path.dirname(bins["ltp"][0])
    os.environ["LD_LIBRARY_PATH"] = bins["ltp"][1]["LD_LIBRARY_PATH"]
    src = os.path.join(work, f"file-{a.file_size}.bin")
    rng = random.Random(9)
    data = rng.randbytes(a.file_size)
    with open(src, "wb") as f:
        f.write(data)
    src_sha = hashlib.sha256(data).hexdigest()
    prog = Progress("bench_cislunar", len(cells))
    prog.line(f"{mach['cpu']}, {mach['cores']} cores; {len(cells)} cells, {jobs} at once, "
              f"{a.file_size:,} B file; cell dirs in {work}")
    t_start = time.monotonic()
    lock = threading.Lock()
    stop = threading.Event()

    def ticker():
        while not stop.wait(2):
            with lock:
                states = [c.state for c in cells]
            running = sum(s in ("starting", "sending", "stopping") for s in states)
            prog.status(f"{running} running, {states.count('waiting')} waiting")

    th = threading.Thread(target=ticker, daemon=True)
    th.start()
    order = sorted(cells, key=lambda c: -c.expected_s())
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as ex:
            futs = {}
            for c in order:
                futs[ex.submit(run_cell, c, work, a.file_size, src, src_sha,
                               a.cell_timeout, a.keep, bins,
                               a.cfdp_default_timers)] = c
                time.sleep(0.3)  # stagger the starts a little
            for fut in concurrent.futures.as_completed(futs):
                c = futs[fut]
                e = fut.result()
                with lock:
                    prog.done += 1
                if e["delivered"]:
                    extra = ""
                    if "sender_seconds" in e:
                        extra = (f" (sender done at {e['sender_seconds']:.1f} s, resent "
                                 f"{e.get('cfdpput', {}).get('bytes_resent', '?')} B)")
                    prog.line(f"{c.label}: {e['goodput_bytes_per_s']:,.0f} B/s "
                              f"({e['link_fraction'] * 100:.1f}% of the link), "
                              f"{e['seconds']:.1f} s{extra}")
                else:
                    prog.line(f"{c.label}: NOT DELIVERED ({e.get('error')}; {e.get('dir')})")
    finally:
        stop.set()
    total = time.monotonic() - t_start
    if all(c.result and c.result["delivered"] for c in cells) and not a.keep:
        shutil.rmtree(work, ignore_errors=True)

    grid = [c.result for c in cells]
    metrics = {"cells_total": len(grid),
               "cells_delivered": sum(1 for g in grid if g["delivered"])}
    for b in BERS:
        pts = [g for g in grid if g["stack"] == "ltp" and g["ber"] == b and
               not g["disruption_s"] and g["mover"] == "bpsendfile"]
        key = f"ltp_goodput_fraction_min_ber{ber_key(b)}"
        if not pts:
            metrics[key] = None
        else:
            metrics[key] = round(min((g["goodput_bytes_per_s"] or 0) / LINK_BYTES_S
                                     for g in pts), 4)
    by_cell = cfdp_pairs(grid)
    metrics.update(cfdp_metrics(by_cell, grid))
    targets = {}
    for b, tv in ((0.0, 0.75), (1e-6, 0.75), (1e-5, 0.5)):
        k = f"ltp_goodput_fraction_min_ber{ber_key(b)}"
        v = metrics[k]
        targets[k] = {"target": tv, "op": ">=", "value": v, "met": v is not None and v >= tv,
                      "text": f"LTP goodput >= {tv:.0%} of the link at BER {ber_key(b)}, "
                              "every delay, no disruption"}
    targets["cells_delivered"] = {"target": len(grid), "op": "==",
                                  "value": metrics["cells_delivered"],
                                  "met": metrics["cells_delivered"] == len(grid),
                                  "text": "every cell delivers the file intact (SHA-256)"}
    if "cfdp2" in movers and "ltp" in stacks:
        v = metrics["cfdp_cells_delivered"]
        targets["cfdp_cells_delivered"] = {
            "target": 1.0, "op": "==", "value": v, "met": v == 1.0,
            "text": "every CFDP class 2 cell delivers the file intact (SHA-256)"}
        for k, txt in (("cfdp_goodput_fraction_min_ber1e-5", "at BER 1e-5"),
                       ("cfdp_goodput_fraction_min", "in every cell")):
            v = metrics[k]
            targets[k] = {"target": 0.9, "op": ">=", "value": v,
                          "met": v is not None and v >= 0.9,
                          "text": f"CFDP class 2 goodput >= 90 % of bpsendfile's {txt}"}
    out = {
        "benchmark": "cislunar",
        "metrics": metrics,
        "targets": targets,
        "grid": grid,
        "cells": by_cell,
        "paper": {"note": "seeds/002 (DTN2 on the SCNT testbed), figures quoted in its "
                          "text; its LTP delivered nothing at 5 s with BER 1e-5",
                  "no_disruption": {st: {ber_key(b): pts for b, pts in v.items()}
                                    for st, v in PAPER.items()},
                  "tcp_disrupted_2s": {ber_key(b): v for b, v in PAPER_DISRUPTED.items()}},
        "machine": mach,
        "config": {
            "link": f"linkem packet mode, {LINK_BPS} bit/s of IP bytes each way, MTU {MTU}, "
                    "bit errors drop the packet (--ber-drop), queue 1,000,000 B",
            "nodes": "TX (ipn:1) and MX (ipn:2) in namespace A, RX (ipn:3) in B; ternd "
                     f"memory stores ({HEAP_BYTES >> 20} MiB heap); contacts at "
                     f"{CONTACT_RATE} B/s, range MX-RX = ceil(delay) s",
            "file": f"{a.file_size} B, bpsendfile --split {SPLIT} (one bundle per piece)",
            "ltp": {"segment_by_ber": {ber_key(k): v for k, v in LTP_SEG.items()},
                    "max_export_sessions": LTP_MAX_EXPORT, "aggregation_size": SPLIT,
                    "aggregation_s": 0, "queuing_latency_s": LTP_QTIME,
                    "max_retries": LTP_MAX_RETRIES,
                    "lso_rate_bps": f"{LINK_BPS} x seg / (seg + 28) x {LTP_RATE_MARGIN}"},
            "tcp": "TCPCLv4 (a protocol tcp; tcpcli/tcpclo), the kernel's TCP defaults",
            "movers": movers,
            "cfdp": {"segment": CFDP_SEGMENT, "pdu_per_bundle": 1,
                     "cfdpd": "TX and RX, started by tern start from host.rc's cfdpadmin "
                              "section; MX a plain BP relay",
                     "class1": "cfdpput -c 1 --closure",
                     "timers": "cfdp_timers() in run.py: ack/nak = max(ceil(busy / 4), "
                               "2 x LTP timeout), inactivity = 2 x busy, nakdelay = "
                               "busy, busy = "
                               f"file x {CFDP_WIRE_MARGIN} / 14,400 B/s + outage + "
                               "2 x LTP timeout; class 1 check period = LTP timeout, "
                               f"limit {LTP_MAX_RETRIES}",
                     "goodput": "file bytes / (received file's mtime - cfdpput's start); "
                                "sender_seconds: cfdpput's end (the Finished)"},
            "disruption": f"{disr} s outages at {DISRUPTION_DELAY} s delay, starting "
                          f"{DISRUPTION_AT} s after the transfer starts, unannounced "
                          "(the contact plan says the link is up)",
            "goodput": "file bytes / (received file's mtime - the mover's start)",
            "bin_dirs": built_from,
            "delays": delays, "bers": bers, "stacks": stacks, "jobs": jobs,
            "cell_timeout_s": a.cell_timeout,
            "cfdp_default_timers": a.cfdp_default_timers,
        },
        "total_seconds": round(total, 1),
    }
    with open(a.prefix + ".json", "w") as f:
        json.dump(out, f, indent=2)
        f.write("\n")

    print(f"cislunar: TX -> MX -> RX, MX <-> RX at {LINK_BPS} bit/s (IP bytes), "
          f"{a.file_size:,} B file; goodput in B/s (% of {LINK_BYTES_S:,.0f} B/s)")
    for st, mv in [(st, mv) for st in stacks for mv in MOVERS]:
        for disr_s in [0] + disr:
            rows = [g for g in grid if g["stack"] == st and g["disruption_s"] == disr_s
                    and g["mover"] == mv]
            if not rows:
                continue
            ds = sorted({g["delay_s"] for g in rows})
            print(f"{st.upper()} {mv}{'' if not disr_s else f' with a {disr_s} s outage'}")
            print(f"  {'BER':>6} " + " ".join(f"{d:>13g}" for d in ds))
            for b in bers:
                cellsx = []
                for d in ds:
                    g = next((g for g in rows if g["delay_s"] == d and g["ber"] == b), None)
                    if g is None:
                        cellsx.append(f"{'':>13}")
                    elif not g["delivered"]:
                        cellsx.append(f"{'FAILED':>13}")
                    else:
                        cellsx.append(f"{g['goodput_bytes_per_s']:>6,.0f} ({g['link_fraction'] * 100:3.0f}%)")
                print(f"  {ber_key(b):>6} " + " ".join(cellsx))
    print("targets:")
    for k, t in targets.items():
        v = t["value"]
        vs = "n/a" if v is None else (f"{v * 100:.1f}%" if isinstance(v, float) else str(v))
        state = "n/a   " if v is None else ("met   " if t["met"] else "MISSED")
        print(f"  {state} {t['text']}: {vs}")
    print(f"total run time {total:.0f} s")
    return 0 if metrics["cells_delivered"] == len(grid) else 1


def cfdp_pairs(grid):
    """The LTP grid points with their movers side by side: [{stack, delay_s,
    ber, disruption_s, movers: {mover: {delivered, goodput_bytes_per_s,
    seconds, sender_seconds, fraction_of_bpsendfile}}}]."""
    pts = {}
    for g in grid:
        k = (g["stack"], g["delay_s"], g["ber"], g["disruption_s"])
        pts.setdefault(k, {})[g["mover"]] = g
    out = []
    for (st, d, b, dd), mv in pts.items():
        base = mv.get("bpsendfile")
        bg = base["goodput_bytes_per_s"] if base and base["delivered"] else None
        row = {"stack": st, "delay_s": d, "ber": b, "disruption_s": dd, "movers": {}}
        for name, g in mv.items():
            r = {"delivered": g["delivered"], "goodput_bytes_per_s": g["goodput_bytes_per_s"],
                 "seconds": g.get("seconds"), "sender_seconds": g.get("sender_seconds")}
            if name != "bpsendfile" and bg:
                r["fraction_of_bpsendfile"] = round((g["goodput_bytes_per_s"] or 0) / bg, 4)
            if "cfdpput" in g:
                r["bytes_resent"] = g["cfdpput"].get("bytes_resent")
            row["movers"][name] = r
        out.append(row)
    return out


def cfdp_metrics(by_cell, grid):
    """cfdp_cells_delivered: class 2 cells delivered / class 2 cells;
    cfdp_goodput_fraction_min[_ber<b>]: the least cfdp2 / bpsendfile goodput
    of a cell (over the cells at that BER; a cfdp2 cell that did not deliver
    counts 0, a cell whose bpsendfile did not deliver has no fraction). The
    same for class 1 as cfdp1_*."""
    m = {}
    for mv, pre in (("cfdp2", "cfdp"), ("cfdp1", "cfdp1")):
        runs = [g for g in grid if g["mover"] == mv]
        m[f"{pre}_cells_total"] = len(runs)
        m[f"{pre}_cells_delivered_count"] = sum(1 for g in runs if g["delivered"])
        m[f"{pre}_cells_delivered"] = (round(m[f"{pre}_cells_delivered_count"] / len(runs), 4)
                                       if runs else None)
        fr = [(r["ber"], r["movers"][mv]["fraction_of_bpsendfile"]) for r in by_cell
              if "fraction_of_bpsendfile" in r["movers"].get(mv, {})]
        m[f"{pre}_goodput_fraction_min"] = min((f for _, f in fr), default=None)
        for b in BERS:
            m[f"{pre}_goodput_fraction_min_ber{ber_key(b)}"] = min(
                (f for bb, f in fr if bb == b), default=None)
    return m


if __name__ == "__main__":
    sys.exit(main())
