"""Runs Tern's link emulator, build/bin/linkem, for tests.

One Linkem is one linkem process emulating one link with two directions,
a2b and b2a (docs/linkem.md has the command-line contract):

    from tern.linkem import Linkem
    with Linkem("udp", a2b=("127.0.0.1:0", "127.0.0.1:4556"),
                b2a=("127.0.0.1:0", "127.0.0.1:4557"),
                delay=1250, ber=1e-5, b2a_delay=800, outage=[(10, 30)]) as lk:
        lk.ports            # {"a2b": 41234, "b2a": 41235}: send there
        lk.stats()          # the counters linkem last wrote
        lk.stats(fresh=True)  # SIGUSR1 first: counters as of now
    lk.final            # the counters written at exit; lk.summary its table

Impairments are keyword arguments named like the options without the
dashes (reorder_gap for --reorder-gap); a name prefixed a2b_ or b2a_ sets
that direction only (a2b_delay=5000 is --a2b-delay 5000). Values: numbers;
outage a list of (start, end) seconds since linkem started (or the option's
own text); periodic (up, down) or (up, down, offset); reset_on_outage=True
for the flag. Modes:

- udp: a2b=(LISTEN, TARGET) and/or b2a=(LISTEN, TARGET), "host:port" each
  (port 0 in LISTEN: linkem picks one; ports tells which).
- tcp: listen="127.0.0.1:0", target="127.0.0.1:PORT".
- packet (root): two network namespaces, named netns=(a, b) or by default
  unique to this process ("tern-<pid>-<n>a"/"b", see netns_prefix()); run
  programs in them with exec_in()/popen_in(). Whatever happens — linkem
  killed, the test crashing — the namespaces go: stop() deletes what
  linkem left, an atexit handler deletes every one this process made, and
  remove_stale_namespaces() (called by the test suites' fixtures) deletes
  those of processes that no longer run.
"""
import atexit
import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

from . import testing

IMPAIRMENTS = ("delay", "jitter", "rate", "queue", "loss", "ber", "dup", "reorder",
               "reorder_gap", "outage", "periodic")
GLOBAL_OPTIONS = ("seed", "reset_on_outage", "stats_interval", "log_level", "mtu",
                  "addr_a", "addr_b", "replace")
DIRECTIONS = ("a2b", "b2a")
UDP_COUNTERS = ("packets_in", "bytes_in", "packets_out", "bytes_out", "dropped_loss",
                "dropped_ber", "dropped_queue", "dropped_outage", "corrupted", "duplicated",
                "reordered")
TCP_COUNTERS = ("bytes_in", "bytes_out", "chunks_in", "chunks_out", "connections", "resets")


class LinkemError(RuntimeError):
    """linkem did not start, died, or exited with an error; the message
    holds its stderr."""


def binary():
    """Path of the linkem program ($TERN_BUILD_DIR/bin or build/bin)."""
    return os.path.join(testing.bin_dir(), "linkem")


def netns_prefix(pid=None):
    """The prefix of every namespace name that process pid (default: this
    one) gives its packet-mode links: "tern-<pid>-"."""
    return f"tern-{os.getpid() if pid is None else pid}-"


_ns_counter = itertools.count(1)
_made_namespaces = set()   # names this process asked linkem to create
_live = set()              # running Linkem objects, stopped at exit


def unique_netns_pair():
    """Two fresh namespace names unique to this process."""
    n = next(_ns_counter)
    return f"{netns_prefix()}{n}a", f"{netns_prefix()}{n}b"


def list_namespaces():
    """Names in `ip netns list` (empty if ip is missing)."""
    ip = shutil.which("ip")
    if ip is None:
        return []
    r = subprocess.run([ip, "netns", "list"], capture_output=True, text=True, timeout=30)
    return [line.split()[0] for line in r.stdout.splitlines() if line.strip()]


def delete_namespace(name):
    """`ip netns delete name` if it exists; True if it had to be deleted."""
    if name not in list_namespaces():
        return False
    subprocess.run(["ip", "netns", "delete", name], capture_output=True, timeout=30)
    return True


def remove_namespaces(prefix):
    """Deletes every namespace whose name starts with prefix; returns them."""
    gone = []
    for name in list_namespaces():
        if name.startswith(prefix):
            subprocess.run(["ip", "netns", "delete", name], capture_output=True, timeout=30)
            gone.append(name)
    return gone


def remove_stale_namespaces():
    """Deletes the "tern-<pid>-..." namespaces of processes that no longer
    run (a test run killed with SIGKILL had no chance to); returns them."""
    gone = []
    for name in list_namespaces():
        m = re.match(r"tern-(\d+)-", name)
        if m and not os.path.exists(f"/proc/{m.group(1)}"):
            subprocess.run(["ip", "netns", "delete", name], capture_output=True, timeout=30)
            gone.append(name)
    return gone


def packet_mode_unavailable():
    """Why packet mode cannot run here (a text for pytest.skip), or None."""
    if os.geteuid() != 0:
        return "packet mode needs root (CAP_NET_ADMIN) to create network namespaces"
    if not os.path.exists("/dev/net/tun"):
        return "packet mode needs /dev/net/tun (TUN devices), which this machine lacks"
    if shutil.which("ip") is None:
        return "packet mode tests need iproute2's ip (ip netns exec)"
    if not os.access(binary(), os.X_OK):
        return f"{binary()} is not built (run 'make build')"
    return None


@atexit.register
def _cleanup_at_exit():
    for lk in list(_live):
        try:
            lk.kill()
        except Exception:  # noqa: BLE001 - best effort at exit
            pass
    for name in list(_made_namespaces):
        try:
            delete_namespace(name)
        except Exception:  # noqa: BLE001
            pass


def _fmt(v):
    """A number as linkem parses it: integral values without a point."""
    if isinstance(v, float):
        return str(int(v)) if v.is_integer() and abs(v) < 1e15 else repr(v)
    return str(v)


def _outage_text(v):
    if isinstance(v, str):
        return v
    parts = []
    for w in v:
        if isinstance(w, str):
            parts.append(w)
        else:
            start, end = w
            parts.append(f"{_fmt(float(start))}-{_fmt(float(end))}")
    return ",".join(parts)


def _periodic_text(v):
    if isinstance(v, str):
        return v
    if len(v) == 2:
        return f"{_fmt(float(v[0]))}/{_fmt(float(v[1]))}"
    up, down, off = v
    return f"{_fmt(float(up))}/{_fmt(float(down))}@{_fmt(float(off))}"


def impairment_args(**kw):
    """Command-line options for the impairment keywords (see the module
    docstring); ValueError naming an unknown keyword."""
    args = []
    for key, val in kw.items():
        if val is None:
            continue
        base = key
        for d in DIRECTIONS:
            if key.startswith(d + "_"):
                base = key[len(d) + 1:]
        if base not in IMPAIRMENTS and key not in GLOBAL_OPTIONS:
            raise ValueError(f"linkem option {key!r}: expected one of {IMPAIRMENTS} "
                             f"(optionally prefixed a2b_ or b2a_) or {GLOBAL_OPTIONS}")
        opt = "--" + key.replace("_", "-")
        if isinstance(val, bool):
            if val:
                args.append(opt)
            continue
        if base == "outage":
            val = _outage_text(val)
        elif base == "periodic":
            val = _periodic_text(val)
        args += [opt, _fmt(val)]
    return args


def _endpoint(pair):
    if isinstance(pair, str):
        return pair
    listen, target = pair
    return f"{listen}={target}"


class Linkem:
    """One linkem process (see the module docstring). workdir holds its
    ports file, stats file, stdout (the exit summary) and stderr (its log);
    a private temporary directory by default, removed by stop() unless
    keep is true or TERN_KEEP=1."""

    def __init__(self, mode, *, workdir=None, a2b=None, b2a=None, listen=None,
                 target=None, netns=None, config=None, stats_interval=100, extra_args=(),
                 log_level=None, keep=False, **impair):
        if mode not in ("udp", "tcp", "packet"):
            raise ValueError(f"linkem mode {mode!r}: expected 'udp', 'tcp' or 'packet'")
        self.mode = mode
        self.own_dir = workdir is None
        self.dir = workdir or testing.short_tmpdir("lk-")
        os.makedirs(self.dir, exist_ok=True)
        self.keep = keep or os.environ.get("TERN_KEEP") == "1"
        self.ports_file = os.path.join(self.dir, "linkem.ports")
        self.stats_file = os.path.join(self.dir, "linkem.stats.json")
        self.out_file = os.path.join(self.dir, "linkem.out")
        self.err_file = os.path.join(self.dir, "linkem.err")
        args = [binary(), mode]
        if mode == "udp":
            if a2b is None and b2a is None:
                raise ValueError("udp mode: give a2b=(LISTEN, TARGET) and/or b2a=...")
            if a2b is not None:
                args += ["--a2b", _endpoint(a2b)]
            if b2a is not None:
                args += ["--b2a", _endpoint(b2a)]
        elif mode == "tcp":
            if listen is None or target is None:
                raise ValueError("tcp mode: give listen='HOST:PORT' and target='HOST:PORT'")
            args += ["--listen", listen, "--target", target]
        self.netns = None
        if mode == "packet":
            self.netns = tuple(netns) if netns else unique_netns_pair()
            args += ["--netns-a", self.netns[0], "--netns-b", self.netns[1]]
        if config is not None:
            args += ["--config", config]
        args += impairment_args(**impair)
        if mode != "packet":
            args += ["--ports-file", self.ports_file]
        args += ["--stats", self.stats_file, "--stats-interval", str(stats_interval)]
        if log_level:
            args += ["--log-level", log_level]
        args += list(extra_args)
        self.args = args
        self.proc = None
        self.ports = {}
        self.final = None       # the counters written at exit
        self.summary = ""       # the table printed at exit
        self.returncode = None
        self.spawned_at = None  # time.time() just before the process was spawned
        self.zero = None        # estimated time.time() of linkem's clock zero
        self.zero_error = None  # and how far off it may be (seconds)
        self._children = []     # Popens started inside the namespaces

    # -- life
    def start(self, timeout=15):
        """Starts linkem and returns once it serves: its ports file (udp,
        tcp) or both namespaces (packet) exist. LinkemError with its stderr
        if it exits first."""
        if self.netns:
            _made_namespaces.update(self.netns)
        for stale in (self.ports_file, self.stats_file):  # from an earlier run
            try:
                os.unlink(stale)
            except FileNotFoundError:
                pass
        self.final, self.summary, self.returncode, self.ports = None, "", None, {}
        with open(self.out_file, "wb") as out, open(self.err_file, "wb") as err:
            self.spawned_at = time.time()
            self.proc = subprocess.Popen(self.args, stdin=subprocess.DEVNULL, stdout=out,
                                         stderr=err, start_new_session=True)
        _live.add(self)
        deadline = time.monotonic() + timeout
        while True:
            if self._ready():
                break
            if self.proc.poll() is not None:
                self.returncode = self.proc.returncode
                _live.discard(self)
                self._cleanup_namespaces()
                raise LinkemError(f"linkem exited {self.returncode} before it was ready:\n"
                                  f"{' '.join(self.args)}\n{self.stderr()}")
            if time.monotonic() > deadline:
                self.kill()
                raise LinkemError(f"linkem not ready after {timeout} s:\n"
                                  f"{' '.join(self.args)}\n{self.stderr()}")
            time.sleep(0.005)
        # the first counters tell where linkem's clock started
        wait_stats = time.monotonic() + 2
        while not os.path.exists(self.stats_file) and time.monotonic() < wait_stats:
            time.sleep(0.005)
        self.zero = self._estimate_zero()
        return self

    def _ready(self):
        if self.mode == "packet":
            names = list_namespaces()
            if not all(n in names for n in self.netns):
                return False
            # the TUN device and its address are set up after the namespace
            r = subprocess.run(["ip", "netns", "exec", self.netns[1], "ip", "-o", "addr",
                                "show", "dev", "lk0", "up"], capture_output=True, text=True)
            if r.returncode != 0 or "inet " not in r.stdout:
                return False
            return os.path.exists(self.stats_file)
        try:
            with open(self.ports_file) as f:
                text = f.read()
        except FileNotFoundError:
            return False
        ports = {}
        for line in text.splitlines():
            w = line.split()
            if len(w) == 2 and w[1].isdigit():
                ports[w[0]] = int(w[1])
        want = ("listen",) if self.mode == "tcp" else \
            tuple(d for d in DIRECTIONS if f"--{d}" in self.args)
        if not all(k in ports for k in want):
            return False
        self.ports = ports
        return True

    def _estimate_zero(self, rounds=7):
        """time.time() of linkem's clock zero. Each round sends SIGUSR1 at
        time b, waits for the rewrite (seen at time e) and reads the uptime u
        it holds: linkem took u between b and e, so zero lies in [b - u,
        e - u]. The rounds' intervals are intersected (within a millisecond
        or so); without a stats file (packet mode before it starts writing)
        the spawn time is the estimate."""
        lows, highs = [], []
        for _ in range(rounds):
            try:
                st = os.stat(self.stats_file)
                before = (st.st_ino, st.st_mtime_ns)
                b = time.time()
                self.proc.send_signal(signal.SIGUSR1)
                deadline = time.monotonic() + 2
                while time.monotonic() < deadline:
                    st = os.stat(self.stats_file)
                    if (st.st_ino, st.st_mtime_ns) != before:
                        break
                e = time.time()
                with open(self.stats_file) as f:
                    up = float(json.load(f)["uptime_s"])
            except (OSError, ValueError, KeyError, TypeError):
                continue
            lows.append(b - up)
            highs.append(e - up)
        if not lows:
            self.zero_error = None
            return self.spawned_at
        lo, hi = max(lows), min(highs)
        if lo > hi:  # a periodic write got in the way: take the middle round
            mids = sorted((x + y) / 2 for x, y in zip(lows, highs))
            self.zero_error = max(y - x for x, y in zip(lows, highs))
            return mids[len(mids) // 2]
        self.zero_error = (hi - lo) / 2
        return (lo + hi) / 2

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def check_alive(self):
        """LinkemError if linkem died on its own."""
        if self.proc is not None and self.proc.poll() is not None and self in _live:
            _live.discard(self)
            self.returncode = self.proc.returncode
            raise LinkemError(f"linkem died on its own (exit {self.returncode}):\n"
                              f"{self.stderr()}")

    def stop(self, timeout=15, check=True):
        """SIGTERM, waits, reads the final counters (returned, and kept in
        final) and the summary table; deletes namespaces linkem left. With
        check, LinkemError if linkem did not exit 0."""
        self._stop_children()
        if self.proc is None:
            return self.final
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                _live.discard(self)
                self._cleanup_namespaces()
                raise LinkemError(f"linkem did not exit within {timeout} s of SIGTERM:\n"
                                  f"{self.stderr()}")
        _live.discard(self)
        self.returncode = self.proc.returncode
        try:
            self.final = self.read_stats()
        except (OSError, ValueError):
            self.final = None
        try:
            with open(self.out_file, errors="replace") as f:
                self.summary = f.read()
        except OSError:
            pass
        left = self._cleanup_namespaces()
        problems = []
        if self.returncode != 0:
            problems.append(f"linkem exited {self.returncode}")
        if left:
            problems.append(f"linkem left namespace(s) {left} behind (deleted now)")
        if check and problems:
            raise LinkemError("; ".join(problems) + f":\n{self.stderr()}")
        if self.own_dir and not self.keep and not problems:
            testing.remove_tree(self.dir)
        return self.final

    def kill(self):
        """SIGKILL (no final counters), then deletes what it left."""
        self._stop_children()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self.proc is not None:
            self.returncode = self.proc.returncode
        _live.discard(self)
        self._cleanup_namespaces()

    def _cleanup_namespaces(self):
        left = []
        if self.netns:
            for name in self.netns:
                if delete_namespace(name):
                    left.append(name)
                _made_namespaces.discard(name)
        return left

    def __enter__(self):
        if self.proc is None:
            self.start()
        return self

    def __exit__(self, exc_type, *exc):
        if self.running():
            self.stop(check=exc_type is None)
        else:
            self.kill()

    # -- observing
    def read_stats(self):
        """The counters as linkem last wrote them (dict)."""
        for _ in range(50):
            try:
                with open(self.stats_file) as f:
                    return json.load(f)
            except json.JSONDecodeError:  # never, with its atomic rename; be safe
                time.sleep(0.01)
        with open(self.stats_file) as f:
            return json.load(f)

    def stats(self, fresh=False, timeout=5):
        """The counters; with fresh, SIGUSR1 first and wait for the rewrite,
        so they include everything linkem did before this call. After
        stop(): the final counters."""
        if not self.running():
            return self.final if self.final is not None else self.read_stats()
        if fresh:
            try:
                st = os.stat(self.stats_file)
                before = (st.st_ino, st.st_mtime_ns)
            except FileNotFoundError:
                before = None
            self.proc.send_signal(signal.SIGUSR1)
            deadline = time.monotonic() + timeout
            while True:
                try:
                    st = os.stat(self.stats_file)
                    if (st.st_ino, st.st_mtime_ns) != before:
                        break
                except FileNotFoundError:
                    pass
                if time.monotonic() > deadline:
                    raise LinkemError(f"linkem did not rewrite {self.stats_file} within "
                                      f"{timeout} s of SIGUSR1")
                time.sleep(0.002)
        return self.read_stats()

    def stderr(self, lines=40):
        """The tail of linkem's log (stderr)."""
        try:
            with open(self.err_file, errors="replace") as f:
                return "\n".join(f.read().splitlines()[-lines:])
        except OSError:
            return ""

    def clock(self):
        """Seconds on linkem's clock (since it started), as estimated here."""
        return time.time() - self.zero

    @property
    def a2b_port(self):
        return self.ports["a2b"]

    @property
    def b2a_port(self):
        return self.ports["b2a"]

    @property
    def listen_port(self):
        return self.ports["listen"]

    # -- packet mode: programs inside the namespaces
    def _ns(self, side):
        if not self.netns:
            raise ValueError("not a packet-mode linkem")
        if side in ("a", 0):
            return self.netns[0]
        if side in ("b", 1):
            return self.netns[1]
        raise ValueError(f"namespace side {side!r}: expected 'a' or 'b'")

    def exec_in(self, side, *cmd, timeout=60, **kw):
        """Runs cmd inside namespace side ("a" or "b"); CompletedProcess
        (text, output captured unless told otherwise)."""
        kw.setdefault("capture_output", True)
        kw.setdefault("text", True)
        return subprocess.run(["ip", "netns", "exec", self._ns(side), *map(str, cmd)],
                              timeout=timeout, **kw)

    def popen_in(self, side, *cmd, **kw):
        """Starts cmd inside namespace side; the Popen is killed by stop()."""
        p = subprocess.Popen(["ip", "netns", "exec", self._ns(side), *map(str, cmd)], **kw)
        self._children.append(p)
        return p

    def _stop_children(self):
        for p in self._children:
            if p.poll() is None:
                p.kill()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                pass
        self._children = []


def write_config(path, lines):
    """A linkem config file from (option, value) pairs or raw lines."""
    with open(path, "w") as f:
        for item in lines:
            if isinstance(item, str):
                f.write(item + "\n")
            else:
                k, v = item
                f.write(f"{k} {_fmt(v)}\n")
    return path


def temp_config(lines, dir=None):
    """write_config() into a new temporary file; returns its path."""
    fd, path = tempfile.mkstemp(prefix="linkem-", suffix=".conf", dir=dir)
    os.close(fd)
    return write_config(path, lines)
