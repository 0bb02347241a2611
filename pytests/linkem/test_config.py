"""linkem's configuration: a config file means the same as the command line
(the same fates for the same seed and traffic), command-line options after
--config override it, and bad options or files end with exit 2 and a
message naming what was wrong."""
import os
import subprocess

import pytest

from lkhelp import median, send_paced, udp_link
from tern import linkem as lkmod


def run_fates(linkem, **kw):
    lk, a, b = udp_link(linkem, **kw)
    send_paced(a, lk.a2b_port, 800, 100, interval=0.0005)
    send_paced(b, lk.b2a_port, 400, 100, interval=0.0005, first=5000)
    st = lk.stats(fresh=True)
    b.wait_quiet(st["a2b"]["packets_out"])
    a.wait_quiet(st["b2a"]["packets_out"])
    st = lk.stop()
    arrived = sorted(x.seq for x in a.got + b.got)
    da = median([x.delay for x in b.got])
    db = median([x.delay for x in a.got])
    return arrived, st, da, db


def test_config_file_equals_command_line(linkem, node_dir):
    conf = lkmod.write_config(os.path.join(node_dir, "link.conf"), [
        "# a link with a slow, lossy a2b direction",
        "",
        "delay 30",
        "a2b-delay 80",
        "a2b-loss 0.2",
        "b2a-ber 1e-4",
        "seed 17",
    ])
    by_file = run_fates(linkem, config=conf)
    by_args = run_fates(linkem, delay=30, a2b_delay=80, a2b_loss=0.2, b2a_ber=1e-4, seed=17)
    assert by_file[0] == by_args[0], "the config file and the options gave other fates"
    for d in ("a2b", "b2a"):
        for k in ("packets_in", "packets_out", "dropped_loss", "dropped_ber", "corrupted"):
            assert by_file[1][d][k] == by_args[1][d][k], (d, k)
    assert by_file[1]["a2b"]["dropped_loss"] > 100 and by_file[1]["b2a"]["dropped_ber"] > 0
    assert by_file[1]["a2b"]["dropped_ber"] == 0 and by_file[1]["b2a"]["dropped_loss"] == 0
    for res in (by_file, by_args):
        assert abs(res[2] - 0.080) < 0.005 and abs(res[3] - 0.030) < 0.005
    assert by_file[1]["seed"] == 17


def test_command_line_overrides_config(linkem, node_dir):
    conf = lkmod.write_config(os.path.join(node_dir, "link.conf"), ["delay 300", "loss 0.5"])
    lk, a, b = udp_link(linkem, config=conf, delay=20, loss=0)
    send_paced(a, lk.a2b_port, 100, 100, interval=0.002)
    assert b.wait_quiet(100) == 100
    assert abs(median([x.delay for x in b.got]) - 0.020) < 0.005


def linkem_run(*args):
    return subprocess.run([lkmod.binary(), *map(str, args)], capture_output=True, text=True,
                          timeout=30)


UDP = ["udp", "--a2b", "127.0.0.1:0=127.0.0.1:9"]


@pytest.mark.parametrize("args,names", [
    (UDP + ["--delay", "abc"], ["--delay", "abc"]),
    (UDP + ["--loss", "1.5"], ["--loss", "1.5"]),
    (UDP + ["--ber", "-1e-5"], ["--ber"]),
    (UDP + ["--rate", "fast"], ["--rate"]),
    (UDP + ["--outage", "5-3"], ["--outage", "5-3"]),
    (UDP + ["--periodic", "1/x"], ["--periodic"]),
    (UDP + ["--bogus", "1"], ["--bogus"]),
    (UDP + ["--c2d-delay", "1"], ["--c2d-delay"]),
    (UDP + ["--delay"], ["--delay"]),
    (["udp", "--a2b", "127.0.0.1:0"], ["--a2b"]),
    (["udp", "--a2b", "nohost=127.0.0.1:9"], ["nohost"]),
    (["udp"], ["--a2b"]),
    (["frobnicate"], ["frobnicate"]),
    (["tcp", "--listen", "127.0.0.1:0", "--target", "127.0.0.1:9", "--loss", "0.1"],
     ["tcp mode carries a byte stream: use packet mode for loss and bit errors"]),
    (["tcp", "--listen", "127.0.0.1:0", "--target", "127.0.0.1:9", "--ber", "1e-6"],
     ["packet mode"]),
    (["tcp", "--listen", "127.0.0.1:0"], ["--target"]),
    (UDP + ["--ber-drop"], ["--ber-drop", "packet mode"]),
])
def test_bad_options(linkem_bin, args, names):
    r = linkem_run(*args)
    text = r.stdout + r.stderr
    assert r.returncode == 2, f"exit {r.returncode}: {text}"
    for n in names:
        assert n in text, f"the message does not name {n!r}: {text!r}"


def test_bad_config_names_file_and_line(linkem_bin, node_dir):
    conf = lkmod.write_config(os.path.join(node_dir, "bad.conf"),
                              ["# fine", "delay 10", "", "loss lots"])
    r = linkem_run(*UDP, "--config", conf)
    assert r.returncode == 2
    assert f"{conf}:4" in r.stderr + r.stdout, r.stderr
    missing = os.path.join(node_dir, "nope.conf")
    r = linkem_run(*UDP, "--config", missing)
    assert r.returncode == 2 and missing in r.stderr + r.stdout


def test_help(linkem_bin):
    for args in (["--help"], ["udp", "--help"], ["tcp", "--help"], ["packet", "--help"]):
        r = linkem_run(*args)
        assert r.returncode == 0 and "usage" in (r.stdout + r.stderr).lower(), args


def test_packet_mode_refused_without_root(linkem_bin):
    """Not root: packet mode refuses with exit 2 and says why (as root: a
    namespace name that exists is refused unless --replace)."""
    import os as _os
    if _os.geteuid() == 0:
        name = lkmod.netns_prefix() + "exists"
        subprocess.run(["ip", "netns", "add", name], check=True)
        try:
            r = linkem_run("packet", "--netns-a", name, "--netns-b", name + "b")
            assert r.returncode == 2 and name in r.stdout + r.stderr
            assert name + "b" not in lkmod.list_namespaces()
        finally:
            lkmod.delete_namespace(name)
    else:
        r = linkem_run("packet", "--netns-a", "x", "--netns-b", "y")
        assert r.returncode == 2 and "root" in (r.stdout + r.stderr).lower()
