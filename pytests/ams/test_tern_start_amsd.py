"""'tern start' starts the AMS daemons a host.rc asks for ('## begin amsd'
lines in ION's amsd argument form, run in the node directory), 'tern stop'
stops them; a bad amsd line is refused with its place."""
import os
import re
import shutil
import subprocess

from tern.testing import bin_dir, free_ports

HERE = os.path.dirname(os.path.abspath(__file__))
ION = os.path.join(HERE, "..", "..", "apps", "ams", "test", "vectors", "ion")


def tern(*args):
    return subprocess.run([os.path.join(bin_dir(), "tern"), *args], capture_output=True,
                          text=True, timeout=60)


def test_tern_start_runs_amsd_and_stop_stops_it(network):
    net = network(1)
    net.write()
    d = net.dir(1)
    port, = free_ports(1)
    text = open(os.path.join(ION, "sana-mib.amsrc")).read().replace("@:2357",
                                                                    f"127.0.0.1:{port}")
    with open(os.path.join(d, "mib.amsrc"), "w") as f:
        f.write(text)
    with open(net[1].rc_path, "a") as f:
        f.write('## begin amsd\namsd mib.amsrc @ amsdemo test ""\n## end amsd\n')
    r = tern("start", d)
    try:
        assert r.returncode == 0, r.stdout + r.stderr
        assert re.search(r"amsd 0 started for .* \(pid \d+", r.stdout), r.stdout
        env = {**os.environ, "TERN_AMS_MIB": os.path.join(d, "mib.amsrc")}
        rcv = subprocess.Popen([os.path.join(bin_dir(), "amsbenchr"), "-t", "20"], cwd=d,
                               env=env, stdout=subprocess.PIPE, text=True)
        line = rcv.stdout.readline()
        assert "subscribed" in line, open(os.path.join(d, "amsd.0.log")).read()
        s = subprocess.run([os.path.join(bin_dir(), "amsbenchs"), "30", "64"], cwd=d, env=env,
                           capture_output=True, text=True, timeout=60)
        assert s.returncode == 0, s.stderr
        out, _ = rcv.communicate(timeout=30)
        assert "Received 30 messages, a total of 1920 bytes" in out, out
    finally:
        st = tern("stop", d)
    assert "amsd 0 of" in st.stdout and "stopped" in st.stdout, st.stdout + st.stderr
    log = open(os.path.join(d, "amsd.0.log")).read()
    assert "registrar stopping" in log, log


def test_a_bad_amsd_line_is_refused_with_its_place(network):
    net = network(1)
    net.write()
    with open(net[1].rc_path, "a") as f:
        f.write("## begin amsd\namsd onlyone\n## end amsd\n")
    n = sum(1 for _ in open(net[1].rc_path))
    r = tern("start", net.dir(1))
    assert r.returncode != 0
    assert f"host.rc:{n - 1}: a line of the amsd section is 'amsd <MIB> <configuration" in r.stderr, \
        r.stderr


def test_a_bad_ramsgate_line_is_refused_with_its_place(network):
    net = network(1)
    net.write()
    with open(net[1].rc_path, "a") as f:
        f.write("## begin amsd\nramsgate amsdemo test soon\n## end amsd\n")
    n = sum(1 for _ in open(net[1].rc_path))
    r = tern("start", net.dir(1))
    assert r.returncode != 0
    assert (f"host.rc:{n - 1}: a ramsgate line is 'ramsgate <application> <authority> "
            f"[<bundle lifetime in seconds>]'") in r.stderr, r.stderr
