"""CFDP entities on the simulated network, from Python (tern.cfdpsim): the
scenarios that read better here than in C. Everything runs on the virtual
clock; files are checked by SHA-256."""
import hashlib
import random

import pytest

from tern import cfdpsim as c

HOUR = 3_600_000


def sha(b):
    return hashlib.sha256(b).hexdigest()


def payload(n, seed):
    r = random.Random(seed)
    return bytes(r.getrandbits(8) for _ in range(min(n, 4096))) * (n // 4096 + 1)


def pair(seed=1, **peer):
    s = c.Sim(seed)
    a, b = s.entity(1, **peer), s.entity(2, **peer)
    return s, a, b


def test_class2_random_links_always_intact():
    """60 seeds: sizes 0 B..300 kB, loss 0-30 %, duplication, reordering and
    light time up to 20 min, every NAK mode. Class 2 must end with the file
    intact, or (loss beyond what its limits allow) with a limit fault: never
    a success with wrong bytes. Totals printed."""
    totals = {"intact": 0}
    for seed in range(60):
        r = random.Random(seed)
        size = r.choice([0, 1, 1023, 65537, 300_000])
        mode = r.choice([c.IMMEDIATE, c.DEFERRED, c.PROMPTED])
        delay = r.choice([0, 50, 1200_000])
        s, a, b = pair(seed, nak_mode=mode, ack_limit=30, nak_limit=30,
                       ack_timer_ms=2 * delay + 1000, nak_timer_ms=2 * delay + 1000,
                       inactivity_ms=10 * delay + 60_000, prompt_ms=2 * delay + 1000)
        with s:
            s.link(1, 2, delay_ms=delay, jitter_ms=r.choice([0, 20]),
                   loss=r.choice([0, 0.05, 0.3]), dup=r.choice([0, 0.05]))
            data = payload(size, seed)[:size]
            a.write("src", data)
            a.put(2, "src", "dst", cls=2)
            assert s.run_idle(400 * HOUR), f"seed {seed}: still running"
            (end,) = b.ends()
            if end["condition"] == 0:
                assert end["delivery"] == 0, (seed, end)
                assert sha(b.read("dst")) == sha(data), f"seed {seed}: bytes differ"
                totals["intact"] += 1
            else:  # a limit reached: named, and the file not claimed complete
                assert end["condition"] in (1, 7, 8), (seed, end)
                totals[end["condition"]] = totals.get(end["condition"], 0) + 1
    print(f"\ncfdp sim (python): 60 seeds, outcomes {totals}")
    assert totals["intact"] >= 50


def test_class1_under_loss_reports_incomplete():
    """Class 1 with closure over a link losing 20 %: the Finished says data
    incomplete (never success), and the file is not kept as complete."""
    s, a, b = pair(7, check_timer_ms=1000, check_limit=2)
    with s:
        s.link(1, 2, delay_ms=10, loss=0.2)
        data = payload(200_000, 1)[:200_000]
        a.write("src", data)
        a.put(2, "src", "dst", cls=1, closure=1)
        s.run_idle(HOUR)
        (rx,) = b.ends()
        assert rx["delivery"] == 1 or rx["condition"] != 0, rx
        assert b.read("dst") != data


def test_suspend_freezes_timers_and_resume_finishes():
    """Suspended at both ends for 10 virtual minutes (far past the 1 min
    inactivity and the ACK timers): nothing times out; resumed, the file
    arrives intact. Suspended at the sender only, the receiver's inactivity
    timer runs on, as it must, and ends the transaction (condition 8)."""
    s, a, b = pair(3, inactivity_ms=60_000, ack_timer_ms=5_000)
    with s:
        s.link(1, 2, delay_ms=100, max_inflight=4)
        data = payload(500_000, 3)[:500_000]
        a.write("src", data)
        t = a.put(2, "src", "dst", cls=2)
        s.run_for(150)
        a.suspend(t)
        b.suspend(t)
        s.run_for(600_000)
        assert a.report(t)["state"] == "suspended" and b.report(t)["state"] == "suspended"
        assert not a.ends() and not b.ends()
        b.resume(t)
        a.resume(t)
        assert s.run_idle(HOUR)
        assert [e["condition"] for e in b.ends()] == [0]
        assert sha(b.read("dst")) == sha(data)
        kinds = [e["type"] for e in a.indications()]
        assert kinds.index("suspended") < kinds.index("resumed") < kinds.index("finished")
    s, a, b = pair(3, inactivity_ms=60_000, ack_timer_ms=5_000)
    with s:
        s.link(1, 2, delay_ms=100, max_inflight=4)
        a.write("src", payload(500_000, 3)[:500_000])
        t = a.put(2, "src", "dst", cls=2)
        s.run_for(150)
        a.suspend(t)
        s.run_for(600_000)
        assert [e["condition"] for e in b.ends()] == [8]  # inactivity detected


def test_receiver_restart_resumes_from_saved_state():
    """The receiver's transaction is saved mid-transfer, the entity restarts
    (everything in memory gone) and the saved state is restored: the file
    completes, and the sender sends again at most what the receiver had not
    confirmed when it was saved (not the whole file)."""
    s, a, b = pair(5, nak_mode=c.IMMEDIATE)
    with s:
        s.link(1, 2, delay_ms=50, max_inflight=8)
        size = 2_000_000
        data = payload(size, 5)[:size]
        a.write("src", data)
        t = a.put(2, "src", "dst", cls=2)
        s.run_for(300)
        got = b.report(t)["progress"]
        assert 0 < got < size, got
        blob = b.save(t)
        b2 = s.restart(2)
        assert b2.report(t) is None  # the restart lost it
        assert b2.restore(blob) == t
        assert s.run_idle(HOUR)
        assert [e["condition"] for e in b2.ends()] == [0]
        assert sha(b2.read("dst")) == sha(data)
        resent = a.stats()["file_bytes_resent"]
        assert resent <= size - got + 65536, (resent, size, got)


def test_cancel_from_the_receiver():
    """A Cancel.request at the receiver ends both sides with condition 15
    (cancel), and neither reports the file complete."""
    s, a, b = pair(9)
    with s:
        s.link(1, 2, delay_ms=200, max_inflight=4)
        a.write("src", payload(3_000_000, 9)[:3_000_000])
        t = a.put(2, "src", "dst", cls=2)
        s.run_for(500)
        b.cancel(t)
        assert s.run_idle(HOUR)
        (tx,), (rx,) = a.ends(), b.ends()
        assert rx["condition"] == 15 and tx["condition"] == 15, (tx, rx)
        assert rx["delivery"] == 1


def test_light_time_20_minutes_10_mb():
    """10 MB over a 20-minute one-way light time with 5 % loss, deferred
    NAKs: intact, in a few light times of virtual time."""
    owlt = 1_200_000
    s, a, b = pair(11, nak_mode=c.DEFERRED, ack_timer_ms=2 * owlt + 5000,
                   nak_timer_ms=2 * owlt + 5000, inactivity_ms=20 * owlt,
                   ack_limit=10, nak_limit=10, max_pdu=8192)
    with s:
        s.link(1, 2, delay_ms=owlt, loss=0.05)
        data = payload(10_000_000, 11)[:10_000_000]
        a.write("src", data)
        a.put(2, "src", "dst", cls=2)
        assert s.run_idle(100 * HOUR)
        (rx,) = b.ends()
        assert rx["condition"] == 0
        assert sha(b.read("dst")) == sha(data)
        print(f"\n10 MB at 20 min light time, 5 % loss: {s.now / 60000:.0f} virtual minutes, "
              f"{a.stats()['file_bytes_resent']:,} bytes resent")


def test_pattern_file_through_a_sparse_sink():
    """A 256 MiB pattern file (no data held) into a pattern sink: every write
    checked, the sink holds memory for ranges only, not the file."""
    s, a, b = pair(13, max_pdu=65000)
    with s:
        s.link(1, 2, delay_ms=5, loss=0.01, max_inflight=32)
        size = 256 << 20
        a.write_pattern("big", size, seed=4)
        b.expect_pattern("copy", seed=4)
        a.put(2, "big", "copy", cls=2)
        assert s.run_idle(HOUR)
        assert [e["condition"] for e in b.ends()] == [0]
        assert b.pattern_complete("copy", size) == (True, 0)
        assert b.bytes_held() < 1 << 20


def test_layout_checked_against_the_library():
    """The struct layouts this module uses were checked at import (a size
    mismatch raises): peer_cfg takes only real field names."""
    with pytest.raises(TypeError):
        c.peer_cfg(no_such_field=1)
    pc = c.peer_cfg(ack_limit=9, handlers={7: c.ABANDON})
    assert pc.ack_limit == 9 and pc.handlers[7] == c.ABANDON
