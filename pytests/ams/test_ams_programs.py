"""ION's AMS programs as ION users run them, on ION's sana MIB: amsshell
publishes and queries, amslog logs what it subscribed to and answers
queries, amslogprt prints the log, amsstop stops the registrar (and its
amsd's configuration server)."""
import os
import re
import signal
import subprocess
import time

from tern.testing import bin_dir, free_ports

HERE = os.path.dirname(os.path.abspath(__file__))
ION = os.path.join(HERE, "..", "..", "apps", "ams", "test", "vectors", "ion")


def prog(n):
    return os.path.join(bin_dir(), n)


def start_cell(tmp_path):
    port, = free_ports(1)
    text = open(os.path.join(ION, "sana-mib.amsrc")).read().replace("@:2357",
                                                                    f"127.0.0.1:{port}")
    (tmp_path / "mib.amsrc").write_text(text)
    log = open(tmp_path / "amsd.log", "w")
    d = subprocess.Popen([prog("amsd"), "-H", "200", "", "@", "amsdemo", "test", ""],
                         cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT)
    end = time.monotonic() + 10
    while "census over" not in (tmp_path / "amsd.log").read_text():
        assert time.monotonic() < end and d.poll() is None, (tmp_path / "amsd.log").read_text()
        time.sleep(0.05)
    return d, log


def test_shell_log_logprt_and_stop(tmp_path):
    d, dlog = start_cell(tmp_path)
    try:
        lg = subprocess.Popen([prog("amslog"), "", "log", "amsdemo", "test"], cwd=tmp_path,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
        lg.stdin.write(b"+text\n+noise\n+bench\n")
        lg.stdin.flush()
        # the subscriptions reach the shell when it registers; amslog says
        # nothing when it has, and under load (CI, after the fuzz smoke) its
        # registration once took longer than 0.8 s
        time.sleep(2.5)
        sh = subprocess.run([prog("amsshell"), "", "shell", "amsdemo", "test"], cwd=tmp_path,
                            input="=text hello world\nsecond line\n=noise\nnoisy\n=video\n"
                                  "=bogus\n.\n", capture_output=True, text=True, timeout=30)
        assert sh.returncode == 0, sh.stderr
        assert "no subject bogus" in sh.stderr, sh.stderr
        # query mode: amslog answers "Got '...'."
        q = subprocess.run([prog("amsshell"), "", "shell", "amsdemo", "test", "q"],
                           cwd=tmp_path, input="u0\n", capture_output=True, text=True,
                           timeout=30)
        assert q.returncode == 0
        time.sleep(0.5)
        lg.stdin.write(b".\n")
        lg.stdin.close()
        out = lg.stdout.read()
        assert lg.wait(10) == 0, lg.stderr.read()
        p = subprocess.run([prog("amslogprt")], input=out, capture_output=True, timeout=10)
        lines = p.stdout.decode().splitlines()
        assert [ln.split()[0] for ln in lines] == ["text", "text", "noise"], lines
        assert re.search(r"text\s+12 'hello world'", lines[0]), lines
        assert re.search(r"noise\s+6 'noisy'", lines[2]), lines
        # amsstop: the registrar (and the server in the same amsd) stop
        st = subprocess.run([prog("amsstop"), "amsdemo", "test"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=30)
        assert st.returncode == 0, st.stdout + st.stderr
        assert d.wait(10) == 0
        assert "stopped by amsstop" in (tmp_path / "amsd.log").read_text()
    finally:
        if d.poll() is None:
            d.send_signal(signal.SIGKILL)
            d.wait()
        dlog.close()


def test_shell_query_gets_amslogs_answer(tmp_path):
    d, dlog = start_cell(tmp_path)
    try:
        lg = subprocess.Popen([prog("amslog"), "", "log", "amsdemo", "test", "i"], cwd=tmp_path,
                              stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE)
        lg.stdin.write(b"+text\n")
        lg.stdin.flush()
        time.sleep(0.8)
        # the logger is the first module of the root unit: number 1
        q = subprocess.run([prog("amsshell"), "", "shell", "amsdemo", "test", "q"],
                           cwd=tmp_path, input="u0\nm1\n=text are you there\n.\n",
                           capture_output=True, text=True, timeout=30)
        assert q.returncode == 0, q.stderr
        assert "reply: Got 'are you there" in q.stdout, q.stdout + q.stderr
        lg.stdin.write(b".\n")
        lg.stdin.close()
        assert lg.wait(10) == 0
    finally:
        d.send_signal(signal.SIGINT)
        d.wait(10)
        dlog.close()
