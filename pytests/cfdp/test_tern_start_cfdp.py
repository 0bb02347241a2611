"""'tern start' on a host.rc with a cfdpadmin section starts the node's
cfdpd too (configured from that section), 'tern status' shows its
transactions and 'tern stop' stops both; a host.rc without the section gets
no cfdpd."""
import os
import subprocess

from tern.testing import bin_dir
from test_cfdpd import sha_file, write_random

CFDP_SECTION = "## begin cfdpadmin\n1\nm segsize 4000\n## end cfdpadmin\n"


def tern(*args, env=None, timeout=60):
    return subprocess.run([os.path.join(bin_dir(), "tern"), *map(str, args)],
                          capture_output=True, text=True, env=env, timeout=timeout)


def tool(name, node_dir, *args, timeout=60):
    return subprocess.run([os.path.join(bin_dir(), name), "-n", node_dir, *map(str, args)],
                          capture_output=True, text=True, timeout=timeout)


def add_section(net, n, text):
    with open(net[n].rc_path, "a") as f:
        f.write(text)


def test_tern_start_runs_cfdpd_status_shows_it_stop_ends_it(network):
    net = network(2, seg=64000, qtime=0.01)
    net.write()
    for n in (1, 2):
        add_section(net, n, CFDP_SECTION)
    started = []
    try:
        for n in (1, 2):
            r = tern("start", net[n].rc_path)
            assert r.returncode == 0, r.stdout + r.stderr
            started.append(n)
            assert f"cfdpd started for {net.dir(n)}" in r.stdout, r.stdout
            assert "cfdpadmin" not in r.stderr, r.stderr  # ternd no longer warns
            assert os.path.exists(os.path.join(net.dir(n), "cfdpd.pid"))
        src = os.path.join(net.dir(1), "cfdp", "s.bin")
        want = write_random(src, 123_457, "s")
        r = tool("cfdpput", net.dir(1), "--wait", src, "2:s.bin")
        assert r.returncode == 0, r.stdout + r.stderr
        assert sha_file(os.path.join(net.dir(2), "cfdp", "s.bin")) == want
        # m segsize 4000 from the section: 123,457 bytes went in 31 file-data
        # PDUs (Metadata, EOF and the Finished's ACK beside them), not the 2
        # of cfdpd's default 64,000-byte PDUs
        r = tool("cfdpstatus", net.dir(1), "--counters")
        assert r.returncode == 0, r.stdout + r.stderr
        counters = dict(line.split(" ", 1) for line in r.stdout.splitlines() if " " in line)
        assert 34 <= int(counters["pdus_out"]) < 40, r.stdout
        st = tern("status", net.dir(1), "--once")
        assert st.returncode == 0, st.stderr
        assert "transaction" in st.stdout.lower() or "cfdp" in st.stdout.lower(), st.stdout
    finally:
        for n in started:
            r = tern("stop", net.dir(n))
            assert r.returncode == 0, r.stdout + r.stderr
            assert f"cfdpd of {net.dir(n)} stopped" in r.stdout, r.stdout
            assert not os.path.exists(os.path.join(net.dir(n), "cfdpd.pid"))


def test_bad_cfdpadmin_line_named_by_tern_start(network):
    net = network(1)
    net.write()
    add_section(net, 1, "## begin cfdpadmin\n1\nm segsize many\n## end cfdpadmin\n")
    try:
        r = tern("start", net[1].rc_path)
        out = r.stdout + r.stderr
        assert r.returncode == 1, out
        assert "cfdpd of" in out and "did not start" in out, out
        assert f"{os.path.basename(net[1].rc_path)}:" in out and "segsize" in out, out
    finally:
        tern("stop", net.dir(1))


def test_no_cfdpadmin_section_no_cfdpd(network):
    net = network(1)
    net.write()
    try:
        r = tern("start", net[1].rc_path)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "cfdpd" not in r.stdout, r.stdout
        assert not os.path.exists(os.path.join(net.dir(1), "cfdpd.pid"))
    finally:
        tern("stop", net.dir(1))
