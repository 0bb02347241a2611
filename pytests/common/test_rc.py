"""The ION admin-file lexer through the bindings, on ION-style files."""
import pytest

from tern import TernError, errors, rc

HOST_RC = """\
## begin ionadmin
1 1 ''
a  contact  +1  +86400    25    25  50000000
## end ionadmin
##########################################
## begin ltpadmin
1  32
a  span   25  1  1  1400  1400  1  'udplso 127.0.0.1:1113 1000000000'
s  'udplsi 127.0.0.1:1113'
## end ltpadmin
##  begin  ipnadmin
a  plan   25  ltp/25
## end  ipnadmin
"""


def test_host_rc_sections_and_quoted_commands(node_dir):
    path = f"{node_dir}/host.rc"
    with open(path, "w") as f:
        f.write(HOST_RC)
    r = rc.load(path)
    assert r.errors == [] and r.warnings == []
    assert [(c.section, c.line, c.argv[0]) for c in r.commands] == [
        ("ionadmin", 2, "1"), ("ionadmin", 3, "a"), ("ltpadmin", 7, "1"),
        ("ltpadmin", 8, "a"), ("ltpadmin", 9, "s"), ("ipnadmin", 12, "a")]
    assert r.commands[0].argv == ["1", "1", ""]
    assert r.commands[3].argv[-1] == "udplso 127.0.0.1:1113 1000000000"
    assert r.commands[4].argv == ["s", "udplsi 127.0.0.1:1113"]
    assert all(c.file == path for c in r.commands)


def test_every_bad_line_is_reported_and_good_lines_kept():
    r = rc.parse("a span 1 'open\nb ok\n## end ionadmin\nc\x07d\ne fine\n",
                 name="x.rc", default_section="ltpadmin")
    assert [c.argv for c in r.commands] == [["b", "ok"], ["e", "fine"]]
    assert r.errors == [
        "x.rc:1: unterminated quoted string starting at column 10; expected a closing ' "
        "before the end of the line",
        "x.rc:3: '## end ionadmin' outside any section; expected '## begin ionadmin' "
        "before it",
        "x.rc:4: control character 0x07 at column 2; expected printable text",
    ]


def test_missing_file_raises():
    with pytest.raises(TernError) as ei:
        rc.load("/nonexistent/host.rc")
    assert ei.value.rc == -2
    assert errors.strerror(ei.value.rc) == "No such file or directory"
