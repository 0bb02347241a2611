"""Ten AMS modules (tern.ams) in three roles and two units, with real amsd
processes as configuration server and registrars:

- every subscriber gets exactly the messages its subscriptions' subjects and
  domains (role, unit) cover, byte-identical, in order per sender;
- unsubscribing stops delivery; announce reaches exactly the modules of its
  domain that invited the subject; query and reply, and a query nobody
  answers times out; the MIB's sender and receiver lists are enforced with
  the reason;
- a module killed with SIGKILL is noticed by the others within the dead
  bound, and one started again registers anew."""
import hashlib
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from tern import ams
from tern.testing import bin_dir, free_ports

HB = 200  # ms; dead after 4 heartbeats
MIB = """\
*ams_mib_init continuum_nbr=7 ptsname=dgr
+ams_mib_add
*continuum nbr=8 name=far desc='another continuum'
*csendpoint epspec=127.0.0.1:{port}
*application name=amsdemo
+venture nbr=19 appname=amsdemo authname=test net_config=tree
*role nbr=3 name=log
*role nbr=4 name=pitch
*role nbr=5 name=catch
*subject nbr=1 name=text desc='text'
*subject nbr=2 name=noise desc='more text'
*subject nbr=4 name=textreturn desc='answers'
+subject nbr=10 name=secret desc='pitch to catch only'
*sender name=pitch
*receiver name=catch
-subject
*unit nbr=1 name=orbiters
*unit nbr=2 name=landers
-venture
-ams_mib_add
"""


class Daemon:
    def __init__(self, cwd, *args):
        self.log = os.path.join(cwd, f"amsd.{len(os.listdir(cwd))}.log")
        self.f = open(self.log, "w")
        self.p = subprocess.Popen([os.path.join(bin_dir(), "amsd"), *args], cwd=cwd,
                                  stdout=self.f, stderr=subprocess.STDOUT)

    def wait_for(self, text, timeout=10):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with open(self.log) as f:
                if text in f.read():
                    return
            assert self.p.poll() is None, open(self.log).read()
            time.sleep(0.05)
        raise AssertionError(f"no '{text}' in {open(self.log).read()}")

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGINT)
            try:
                self.p.wait(10)
            except subprocess.TimeoutExpired:
                self.p.kill()
        self.f.close()


@pytest.fixture
def cell(tmp_path):
    port, = free_ports(1)
    mib = tmp_path / "mib.amsrc"
    mib.write_text(MIB.format(port=port))
    ds = [Daemon(str(tmp_path), "-H", str(HB), str(mib), "@", "amsdemo", "test", "")]
    ds[0].wait_for("census over")
    for unit in ("orbiters", "landers"):
        ds.append(Daemon(str(tmp_path), "-H", str(HB), str(mib), ".", "amsdemo", "test", unit))
    for d in ds[1:]:
        d.wait_for("census over")
    yield str(mib)
    for d in ds:
        d.stop()


def drain(m, quiet_s=0.6):
    """Every event until none comes for quiet_s."""
    out = []
    while True:
        ev = m.get_event(timeout_s=quiet_s)
        if ev is None:
            return out
        out.append(ev)


def body(sender, seq, subject):
    """A message's bytes: who, which, and 200 bytes derived from them."""
    head = f"{sender}:{seq}:{subject}:".encode()
    return head + hashlib.sha256(head).digest() * 6 + b"\x00\xff"


def test_ten_modules_get_exactly_what_their_domains_cover(cell):
    M = lambda unit, role: ams.Module(cell, "amsdemo", "test", unit, role)  # noqa: E731
    pitch = {"p1": M("orbiters", "pitch"), "p2": M("orbiters", "pitch"), "p3": M("landers", "pitch")}
    catch = {"c1": M("orbiters", "catch"), "c2": M("orbiters", "catch"),
             "c3": M("landers", "catch"), "c4": M("landers", "catch")}
    logs = {"l1": M("", "log"), "l2": M("orbiters", "log"), "l3": M("landers", "log")}
    mods = {**pitch, **catch, **logs}
    try:
        text, noise, ret, secret = (mods["p1"].subject(s)
                                    for s in ("text", "noise", "textreturn", "secret"))
        orb, lan = mods["p1"].lookup("unit", "orbiters"), mods["p1"].lookup("unit", "landers")
        role_pitch = mods["p1"].lookup("role", "pitch")
        assert (orb, lan, role_pitch) == (1, 2, 4)
        # subscriptions: (subject, role, unit) domains
        subs = {
            "c1": [(text, 0, 0)],                # text from anyone
            "c2": [(text, 0, lan)],              # text from the landers unit only
            "c3": [(text, role_pitch, orb)],     # text from pitch modules in orbiters
            "c4": [(noise, 0, 0), (secret, 0, 0)],
            "l1": [(0, 0, 0)],                   # everything
            "l2": [(noise, 0, orb)],
        }
        for name, rules in subs.items():
            for s, r, u in rules:
                mods[name].subscribe(s, role=r, unit=u, diligence=ams.ASSURED,
                                     sequence=ams.TRANSMISSION_ORDER)
        # a log module may not subscribe to secret: catch is its only receiver
        with pytest.raises(ams.AmsError) as e:
            mods["l3"].subscribe(secret)
        assert e.value.rc == -1 and "not an authorised receiver" in str(e.value), e.value
        time.sleep(4 * HB / 1000)  # the declarations reach every module
        for m in mods.values():
            drain(m, 0.05)  # registration and subscription notices
        sent = []  # (sender name, unit, role, subject, seq, bytes)
        units = {"p1": orb, "p2": orb, "p3": lan}
        for seq in range(20):
            for name, m in pitch.items():
                for s in (text, noise) if seq % 4 == 0 else (text,):
                    b = body(name, seq, s)
                    m.publish(s, b)
                    sent.append((name, units[name], role_pitch, s, seq, b))
        pitch["p1"].publish(secret, body("p1", 99, secret))
        sent.append(("p1", orb, role_pitch, secret, 99, body("p1", 99, secret)))
        # a log module may not send on secret: the MIB's sender list
        with pytest.raises(ams.AmsError) as e:
            logs["l2"].publish(secret, b"no")
        assert "not an authorised sender" in str(e.value), e.value

        def covered(rule, msg):
            s, r, u = rule
            _, unit, role, subj, _, _ = msg
            return (s in (0, subj)) and r in (0, role) and (u == 0 or u == unit)

        by_module = {(m.unit, m.number): n for n, m in mods.items()}
        for name in mods:
            got = [ev for ev in drain(mods[name]) if isinstance(ev, ams.Msg)]
            want = [x for x in sent if any(covered(r, x) for r in subs.get(name, []))
                    and (x[3] != secret or name in catch)]  # secret: catch receives only
            # what arrived, by sender, in order, byte for byte
            got_k = sorted((by_module[(g.unit, g.module)], g.subject, g.content) for g in got)
            want_k = sorted((w[0], w[3], w[5]) for w in want)
            assert got_k == want_k, f"{name}: got {len(got)} messages, wanted {len(want)}"
            for p in pitch:
                seqs = [int(g.content.split(b":")[1]) for g in got
                        if by_module[(g.unit, g.module)] == p]
                assert seqs == sorted(seqs), f"{name}: out of order from {p}: {seqs}"
            assert all(g.continuum == 7 for g in got)
        assert sum(1 for x in sent if x[3] == text) == 60

        # unsubscribing stops delivery
        catch["c1"].unsubscribe(text)
        time.sleep(3 * HB / 1000)
        drain(catch["c1"], 0.05)
        pitch["p2"].publish(text, b"after")
        assert not [e for e in drain(catch["c1"]) if isinstance(e, ams.Msg)]
        assert [e.content for e in drain(logs["l1"]) if isinstance(e, ams.Msg)] == [b"after"]

        # announce: to the catch modules of landers that invited noise
        for n in ("c1", "c3", "c4"):
            catch[n].invite(noise)
        time.sleep(3 * HB / 1000)
        for m in mods.values():
            drain(m, 0.05)
        pitch["p1"].announce(noise, b"to landers", role=mods["c1"].role, unit=lan)
        heard = {n for n, m in mods.items()
                 if any(isinstance(e, ams.Msg) and e.content == b"to landers"
                        for e in drain(m, 0.3))}
        assert heard == {"c3", "c4"}, heard  # c2 invited nothing, c1 is in orbiters

        # query and reply: c3 answers queries on textreturn it invited
        catch["c3"].invite(ret)
        time.sleep(3 * HB / 1000)
        drain(catch["c3"], 0.05)
        import threading

        def answer():
            for _ in range(50):
                ev = catch["c3"].get_event(timeout_s=0.1)
                if isinstance(ev, ams.Msg) and ev.type == ams.QUERY:
                    catch["c3"].reply(ev, ret, b"answer to " + ev.content)
                    return

        t = threading.Thread(target=answer)
        t.start()
        r = pitch["p3"].query(catch["c3"].unit, catch["c3"].number, ret, b"q1", timeout_s=5,
                              context=42)
        t.join()
        assert r is not None and r.type == ams.REPLY and r.content == b"answer to q1", r
        assert r.context == 42
        # c4 invited textreturn too but never answers: the query times out
        catch["c4"].invite(ret)
        time.sleep(3 * HB / 1000)
        t0 = time.monotonic()
        assert pitch["p3"].query(catch["c4"].unit, catch["c4"].number, ret, b"q2",
                                 timeout_s=0.5) is None
        assert 0.4 < time.monotonic() - t0 < 3
        # a private send to a module that did not invite the subject is refused
        with pytest.raises(ams.AmsError) as e:
            pitch["p1"].send(catch["c2"].unit, catch["c2"].number, ret, b"x")
        assert "has not invited subject" in str(e.value)
        # content: 65,000 bytes go, one more is refused with the reason
        big = bytes(range(256)) * 253 + bytes(232)
        assert len(big) == 65000
        pitch["p1"].publish(text, big)
        with pytest.raises(ams.AmsError) as e:
            pitch["p1"].publish(text, big + b"x")
        assert e.value.rc == -90 and "content of 65001 bytes (at most 65000)" in str(e.value)
        # the pollable descriptor: readable when an event waits, not before
        import select
        l1 = logs["l1"]
        drain(l1, 0.3)
        assert select.select([l1.fileno()], [], [], 0.2)[0] == []
        pitch["p2"].publish(text, b"poll me")
        assert select.select([l1.fileno()], [], [], 2.0)[0] == [l1.fileno()]
        got = l1.get_event(timeout_s=0)
        assert isinstance(got, ams.Msg) and got.content == b"poll me", got
        st = catch["c3"].stats()
        assert st["dropped_malformed"] == 0 and st["dropped_unsolicited"] == 0, st
    finally:
        for m in mods.values():
            m.close()


CHILD = textwrap.dedent("""
    import sys, time
    from tern import ams
    m = ams.Module(sys.argv[1], "amsdemo", "test", "landers", "log")
    print(m.unit, m.number, flush=True)
    time.sleep(60)
""")


def test_a_killed_module_is_noticed_and_a_restarted_one_registers(cell):
    with ams.Module(cell, "amsdemo", "test", "orbiters", "catch") as watcher:
        env = {**os.environ}
        child = subprocess.Popen([sys.executable, "-c", CHILD, cell], stdout=subprocess.PIPE,
                                 text=True, env=env)
        try:
            unit, nbr = map(int, child.stdout.readline().split())

            def wait_notice(change, timeout):
                end = time.monotonic() + timeout
                while time.monotonic() < end:
                    ev = watcher.get_event(timeout_s=0.1)
                    if (isinstance(ev, ams.Notice) and ev.state == ams.REGISTRATION and
                            ev.change == change and (ev.unit, ev.module) == (unit, nbr)):
                        return time.monotonic()
                raise AssertionError(f"no notice {change} for {unit}.{nbr}")

            wait_notice(ams.BEGINS, 5)
            child.send_signal(signal.SIGKILL)
            t0 = time.monotonic()
            child.wait()
            took = wait_notice(ams.ENDS, 5) - t0
            # dead after 4 heartbeats (800 ms), told within one more
            assert took < 4 * HB / 1000 + 2 * HB / 1000 + 1.5, took  # slack: a loaded CI host
        finally:
            if child.poll() is None:
                child.kill()
        again = subprocess.Popen([sys.executable, "-c", CHILD, cell], stdout=subprocess.PIPE,
                                 text=True)
        try:
            unit, nbr = map(int, again.stdout.readline().split())
            wait_notice(ams.BEGINS, 5)
        finally:
            again.kill()
            again.wait()
