"""The cfdpadmin program (apps/cfdp/tools/cfdpadmin.c, docs/cfdpadmin.md):
checks a cfdprc file, a host.rc's cfdpadmin section, or stdin; prints every
diagnostic as "warning|error: file:line: ..."; --print shows the
configuration; exit 0 without errors, 1 with, 2 on a usage error."""
import os
import subprocess

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                    "apps", "cfdp", "test", "data")


def run(tern_bin, *args, stdin=None):
    return subprocess.run([tern_bin("cfdpadmin"), *args], input=stdin,
                          capture_output=True, text=True, timeout=30)


def test_ion_file_checks_clean(tern_bin):
    p = os.path.join(DATA, "ion-cfdpv1-4node.cfdprc")
    r = run(tern_bin, "--print", p)
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines() == [
        f"warning: {p}:2: 'e 1' (echo to the ION log) accepted but not acted on",
        f"warning: {p}:3: 'w 1' (watch characters) accepted but not acted on",
        f"{p}: 0 errors, 2 warnings",
    ]
    assert "  5 bp ipn:5.0 (" + p + ":4)\n" in r.stdout
    assert "  PDU CRC            required\n" in r.stdout
    assert "  segment size       1000 bytes (largest PDU 1038 bytes)\n" in r.stdout


def test_hostrc_section_and_stdin(tern_bin):
    with open(os.path.join(DATA, "host-sections.rc")) as f:
        text = f.read()
    r = run(tern_bin, "--print", "-", stdin=text)
    assert r.returncode == 0, r.stderr
    assert r.stderr == "<stdin>: 0 errors, 0 warnings\n"
    assert r.stdout.startswith("cfdpadmin: 6 commands, initialized ('1')\n")
    assert "UT service:     bputa (<stdin>:36)" in r.stdout


def test_errors_exit_1_and_name_the_line(tern_bin):
    r = run(tern_bin, "-", stdin="1\nm segsize 70000\na entity 2 bp ipn:2.0 7 0\nm segsz 9\n")
    assert r.returncode == 1
    assert r.stderr.splitlines() == [
        "error: <stdin>:2: 'm segsize': segment size '70000': expected bytes per file "
        "data segment from 1 to 65535",
        "error: <stdin>:3: 'a entity': takes 6 arguments, got 5; expected 'a entity "
        "<entity nbr> <UT protocol name> <UT endpoint name> <rtt> <incstype> <outcstype>'",
        "warning: <stdin>:4: unknown command 'm segsz' (did you mean 'm segsize'?): ignored",
        "<stdin>: 2 errors, 1 warning",
    ]
    q = run(tern_bin, "--quiet", "-", stdin="1\nm segsz 9\nm discard 3\n")
    assert q.returncode == 1
    assert q.stderr == "error: <stdin>:3: 'm discard': '3': expected 0 or 1\n"


def test_unreadable_file_and_usage(tern_bin, node_dir):
    missing = os.path.join(node_dir, "none.cfdprc")
    r = run(tern_bin, missing)
    assert r.returncode == 1
    assert r.stderr == f"cfdpadmin: {missing}: No such file or directory\n"
    assert run(tern_bin).returncode == 2
    assert run(tern_bin, "--bogus", missing).returncode == 2
    empty = os.path.join(node_dir, "host.rc")
    with open(empty, "w") as f:
        f.write("## begin ionadmin\n1 1 ''\n## end ionadmin\n")
    r = run(tern_bin, empty)
    assert r.returncode == 0
    assert "no cfdpadmin commands" in r.stderr
