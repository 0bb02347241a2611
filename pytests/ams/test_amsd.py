"""AMS with real processes: amsd (configuration server and registrar) and
ION's benchmark pair, amsbenchs publishing and amsbenchr subscribing, in one
continuum on 127.0.0.1.

- ION's own sana test, from ION's MIB files unchanged (XML and amsrc): 100
  messages of 1,024 bytes published, the subscriber gets 102,400 bytes.
- A registrar killed with SIGKILL and started again rebuilds its cell from
  the modules' reconnects: the subscriber keeps its number and its
  subscription, and a publisher that registers afterwards reaches it.
- A configuration server killed and started again is whole after a heartbeat.
- A bad MIB stops amsd with the place and what was wrong."""
import os
import re
import shutil
import signal
import subprocess
import time

import pytest

from tern.testing import bin_dir, free_ports

HERE = os.path.dirname(os.path.abspath(__file__))
ION = os.path.join(HERE, "..", "..", "apps", "ams", "test", "vectors", "ion")
HB = 200  # ms: the registrars' heartbeat here (dead after 4, census as long)


def prog(name):
    return os.path.join(bin_dir(), name)


class Proc:
    """A program run in cwd, its output in a file (read with text())."""

    def __init__(self, cwd, name, *args, env=None):
        self.path = os.path.join(cwd, f"{name}.{int(time.monotonic() * 1e6)}.log")
        self.out = open(self.path, "w")
        e = dict(os.environ)
        e.update(env or {})
        self.p = subprocess.Popen([prog(name), *args], cwd=cwd, stdout=self.out,
                                  stderr=subprocess.STDOUT, env=e)

    def text(self):
        if not self.out.closed:
            self.out.flush()
        with open(self.path) as f:
            return f.read()

    def wait_for(self, pattern, timeout=10):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if re.search(pattern, self.text()):
                return
            if self.p.poll() is not None:
                break
            time.sleep(0.05)
        raise AssertionError(f"no /{pattern}/ in {self.path}:\n{self.text()}")

    def stop(self, sig=signal.SIGINT):
        if self.p.poll() is None:
            self.p.send_signal(sig)
            try:
                self.p.wait(10)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.out.close()
        return self.p.returncode


@pytest.fixture
def procs():
    started = []
    yield started
    for p in started:
        p.stop(signal.SIGKILL)


def mib_with_port(src, dst, port):
    """ION's MIB with its configuration server on another port (nothing else
    changed), so tests do not collide on ION's 2357."""
    with open(src) as f:
        text = f.read()
    text = re.sub(r"epspec=(\"?)[^\"\s]*:\d+", lambda m: f"epspec={m.group(1)}127.0.0.1:{port}",
                  text)
    with open(dst, "w") as f:
        f.write(text)


def split_cell(tmp_path, procs):
    """ION's sana MIB on a free port; a configuration server and, in another
    amsd, the root cell's registrar. Returns (mib path, server, registrar)."""
    cs_port, = free_ports(1)
    mib = str(tmp_path / "mib.amsrc")
    mib_with_port(os.path.join(ION, "sana-mib.amsrc"), mib, cs_port)
    cs = Proc(str(tmp_path), "amsd", mib, "@")
    procs.append(cs)
    cs.wait_for("configuration server")
    reg = Proc(str(tmp_path), "amsd", "-H", str(HB), mib, ".", "amsdemo", "test", "")
    procs.append(reg)
    reg.wait_for("census over")
    return mib, cs, reg


def bench_exchange(cwd, procs, count=100, size=1024, env=None):
    r = Proc(cwd, "amsbenchr", "-t", "20", env=env)
    procs.append(r)
    r.wait_for("subscribed")
    s = subprocess.run([prog("amsbenchs"), str(count), str(size)], cwd=cwd, env={
        **os.environ, **(env or {})}, capture_output=True, text=True, timeout=60)
    assert s.returncode == 0, s.stdout + s.stderr
    assert r.p.wait(30) == 0, r.text()
    out = r.text()
    m = re.search(r"Received (\d+) messages, a total of (\d+) bytes", out)
    assert m, out
    return int(m.group(1)), int(m.group(2)), out


@pytest.mark.parametrize("mib", ["sana-amsmib.xml", "sana-mib.amsrc"])
def test_ions_sana_exchange_from_ions_mib_files(tmp_path, procs, mib):
    """ION's tests/ams-sana: its MIB byte for byte (configuration server at
    @:2357), amsd, amsbenchr, amsbenchs 100 1024: 102,400 bytes arrive."""
    if not shutil.which(prog("amsd")):
        pytest.skip("amsd not built")
    name = "amsmib.xml" if mib.endswith(".xml") else "mib.amsrc"
    shutil.copy(os.path.join(ION, mib), tmp_path / name)
    d = Proc(str(tmp_path), "amsd", "-H", str(HB), "", "@", "amsdemo", "test", "")
    procs.append(d)
    d.wait_for("census over", timeout=10)
    n, nbytes, out = bench_exchange(str(tmp_path), procs)
    assert (n, nbytes) == (100, 102400), out
    assert d.stop() == 0
    log = d.text()
    assert "2 registered" in log and "2 stopped" in log, log


def test_registrar_killed_and_restarted_rebuilds_its_cell(tmp_path, procs):
    mib, cs, reg = split_cell(tmp_path, procs)
    r = Proc(str(tmp_path), "amsbenchr", "-t", "30", env={"TERN_AMS_MIB": mib})
    procs.append(r)
    r.wait_for("subscribed")
    # kill -9: everything the registrar knew is gone; the same port is not
    # kept (a new process binds another), the configuration server names it
    reg.stop(signal.SIGKILL)
    time.sleep(0.3)
    reg2 = Proc(str(tmp_path), "amsd", "-H", str(HB), mib, ".", "amsdemo", "test", "")
    procs.append(reg2)
    reg2.wait_for(r"census over: 1 module\(s\) reconnected", timeout=20)
    s = subprocess.run([prog("amsbenchs"), "50", "200"], cwd=str(tmp_path),
                       env={**os.environ, "TERN_AMS_MIB": mib}, capture_output=True, text=True,
                       timeout=60)
    assert s.returncode == 0, s.stdout + s.stderr
    assert r.p.wait(30) == 0, r.text()
    assert "Received 50 messages, a total of 10000 bytes" in r.text(), r.text()
    assert reg2.stop() == 0
    log = reg2.text()
    assert "1 reconnected" in log and "1 registered" in log, log


def test_configuration_server_restart_is_whole_after_a_heartbeat(tmp_path, procs):
    mib, cs, reg = split_cell(tmp_path, procs)
    cs.stop(signal.SIGKILL)
    cs2 = Proc(str(tmp_path), "amsd", mib, "@")
    procs.append(cs2)
    cs2.wait_for("configuration server")
    time.sleep(2 * HB / 1000)  # the registrar announces itself again
    n, nbytes, out = bench_exchange(str(tmp_path), procs, 20, 100, env={"TERN_AMS_MIB": mib})
    assert (n, nbytes) == (20, 2000), out


def test_bad_mib_stops_amsd_with_the_place(tmp_path):
    bad = tmp_path / "amsmib.xml"
    bad.write_text('<ams_mib_load>\n <ams_mib_init continuum_nbr="1" ptsname="dgr"/>\n'
                   ' <ams_mib_add>\n  <continuum nbr="x" name="c"/>\n </ams_mib_add>\n'
                   '</ams_mib_load>\n')
    r = subprocess.run([prog("amsd"), str(bad), "@"], capture_output=True, text=True,
                       timeout=10)
    assert r.returncode == 1
    assert f"{bad}:4:3: continuum: nbr='x' is not a number 1..32767" in r.stderr, r.stderr


def test_malformed_pdus_are_counted_logged_once_and_the_rest_goes_on(tmp_path, procs):
    import socket
    cs_port, = free_ports(1)
    mib = str(tmp_path / "mib.amsrc")
    mib_with_port(os.path.join(ION, "sana-mib.amsrc"), mib, cs_port)
    d = Proc(str(tmp_path), "amsd", "-H", str(HB), mib, "@", "amsdemo", "test", "")
    procs.append(d)
    d.wait_for("census over")
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for junk in (b"\xa7\x01" + b"\x00" * 30, b"hello", b"\xa7\x01" + b"\x00" * 30, b"hello"):
        s.sendto(junk, ("127.0.0.1", cs_port))
    s.close()
    n, nbytes, out = bench_exchange(str(tmp_path), procs, 10, 100, env={"TERN_AMS_MIB": mib})
    assert (n, nbytes) == (10, 1000), out
    assert d.stop() == 0
    log = d.text()
    said = [ln for ln in log.splitlines() if "dropped a MAMS PDU" in ln]
    assert 1 <= len(said) <= 2, log  # one line per cause, not per PDU
    assert re.search(r"4 malformed PDU", log), log


def test_the_mibs_ams_endpoints_are_where_modules_listen(tmp_path, procs):
    cs_port, = free_ports(1)
    mib = str(tmp_path / "mib.amsrc")
    mib_with_port(os.path.join(ION, "sana-mib.amsrc"), mib, cs_port)
    with open(mib) as f:
        text = f.read()
    text = text.replace("*application", "*amsendpoint tsname=dgr epspec=127.0.0.1\n"
                        "*amsendpoint tsname=tcp epspec=127.0.0.1\n*application", 1)
    with open(mib, "w") as f:
        f.write(text)
    d = Proc(str(tmp_path), "amsd", "-H", str(HB), mib, "@", "amsdemo", "test", "")
    procs.append(d)
    d.wait_for("census over")
    n, nbytes, out = bench_exchange(str(tmp_path), procs, 10, 100, env={"TERN_AMS_MIB": mib})
    assert (n, nbytes) == (10, 1000), out
    bad = str(tmp_path / "bad.amsrc")
    with open(bad, "w") as f:
        f.write(text.replace("epspec=127.0.0.1\n*amsendpoint tsname=tcp",
                             "epspec=no-such-host.invalid\n*amsendpoint tsname=tcp"))
    r = subprocess.run([prog("amsbenchs"), "1", "8"], cwd=str(tmp_path),
                       env={**os.environ, "TERN_AMS_MIB": bad}, capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 1
    assert "amsendpoint dgr: endpoint 'no-such-host.invalid': cannot resolve" in r.stderr, r.stderr
