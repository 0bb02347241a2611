"""linkem's UDP relay through real sockets on 127.0.0.1: delay and jitter,
rate with tail drop, loss, bit errors, duplication, reordering, outage
windows and deterministic replay by seed. Probabilities are checked against
their expectation within 5 standard deviations; every count linkem reports
is checked against what the receivers saw."""
import time

import pytest

from lkhelp import median, p_corrupt, send_paced, sigma_band, udp_link

DIRS = ("a2b", "b2a")


def fresh(lk):
    return lk.stats(fresh=True)


def test_delay_both_directions(linkem):
    """200 ms one way a2b, 50 ms b2a: the median of 200 datagrams within
    5 ms, none early, none lost, the relay answers from its other port."""
    lk, a, b = udp_link(linkem, delay=200, b2a_delay=50)
    send_paced(a, lk.a2b_port, 200, 200, interval=0.005)
    send_paced(b, lk.b2a_port, 200, 200, interval=0.005, first=1000)
    assert b.wait_quiet(200) == 200 and a.wait_quiet(200) == 200
    for peer, want in ((b, 0.200), (a, 0.050)):
        d = [x.delay for x in peer.got]
        assert abs(median(d) - want) < 0.005, f"median delay {median(d):.4f} s, want {want}"
        assert min(d) > want - 0.002, f"a datagram came {min(d):.4f} s after it was sent"
        assert max(d) < want + 0.050, f"a datagram took {max(d):.4f} s"
        assert all(x.intact for x in peer.got)
    # a's datagrams reach b from the b2a listen port (and vice versa)
    assert b.sources == {("127.0.0.1", lk.b2a_port)}
    assert a.sources == {("127.0.0.1", lk.a2b_port)}
    st = fresh(lk)
    for d in DIRS:
        assert st[d]["packets_in"] == st[d]["packets_out"] == 200
        assert st[d]["bytes_in"] == st[d]["bytes_out"] == 200 * 200


def test_jitter_keeps_order(linkem):
    """delay 40 ms + jitter 0..30 ms: every datagram within [40, 70] ms
    (plus scheduling slack), spread over the range, and in FIFO order."""
    lk, a, b = udp_link(linkem, delay=40, jitter=30)
    send_paced(a, lk.a2b_port, 300, 100, interval=0.003)
    assert b.wait_quiet(300) == 300
    d = [x.delay for x in b.got]
    assert min(d) > 0.038 and max(d) < 0.070 + 0.030, (min(d), max(d))
    assert max(d) - min(d) > 0.010, "no jitter to be seen"
    seqs = [x.seq for x in b.got]
    assert seqs == sorted(seqs), "jitter reordered datagrams without --reorder"


def test_rate(linkem):
    """1 Mbit/s: 250 datagrams of 1,000 bytes sent at once leave one after
    another at 1 Mbit/s (within 5 %), none dropped."""
    lk, a, b = udp_link(linkem, rate=1_000_000)
    send_paced(a, lk.a2b_port, 250, 1000)
    assert b.wait_quiet(250, timeout=20) == 250
    got = sorted(b.got, key=lambda x: x.at)
    span = got[-1].at - got[0].at
    bps = (len(got) - 1) * 1000 * 8 / span
    assert abs(bps - 1e6) / 1e6 < 0.05, f"{bps / 1e6:.3f} Mbit/s"
    # serialization: the first one is 8 ms on the wire
    assert got[0].delay > 0.0075
    st = fresh(lk)["a2b"]
    assert st["dropped_queue"] == 0 and st["packets_out"] == 250


def test_queue_tail_drop(linkem):
    """1 Mbit/s with a 20,000-byte queue: of 200 datagrams of 1,000 bytes
    sent at once about 20 get through, the rest are tail-dropped and
    counted; what passes is mostly the head of the burst."""
    lk, a, b = udp_link(linkem, rate=1_000_000, queue=20_000)
    send_paced(a, lk.a2b_port, 200, 1000, batch=200)
    n = b.wait_quiet(timeout=20)
    st = fresh(lk)["a2b"]
    assert st["packets_in"] == 200
    assert n == st["packets_out"]
    assert st["dropped_queue"] == 200 - n
    assert 15 <= n <= 30, f"{n} datagrams passed a 20,000-byte queue"
    # the head of the burst fills the queue; later ones get in only as the
    # transmitter frees room (one per 8 ms)
    seqs = sorted(x.seq for x in b.got)
    assert seqs[:15] == list(range(15)), f"tail drop dropped from the head: {seqs}"


def test_loss_statistics(linkem):
    """10 % loss over 5,000 datagrams: the number lost within 5 sigma of
    500, and exactly what linkem counts as dropped_loss."""
    n = 5000
    lk, a, b = udp_link(linkem, loss=0.1, seed=11)
    send_paced(a, lk.a2b_port, n, 100)
    st = fresh(lk)["a2b"]
    got = b.wait_quiet(st["packets_out"])
    st = fresh(lk)["a2b"]
    assert st["packets_in"] == n
    lost = n - got
    lo, hi = sigma_band(n, 0.1)
    assert lo < lost < hi, f"{lost} of {n} lost at 10 % (expected {lo:.0f}..{hi:.0f})"
    assert st["dropped_loss"] == lost and st["packets_out"] == got
    assert st["corrupted"] == 0 and st["dropped_ber"] == 0
    assert len({x.seq for x in b.got}) == got, "a datagram came twice"


@pytest.mark.parametrize("ber,size,n", [(1e-5, 1400, 3000), (1e-4, 200, 4000)])
def test_ber_statistics(linkem, ber, size, n):
    """BER 1e-5 on 1,400-byte datagrams corrupts about one in nine
    (1 - (1 - p)^bits); each corrupted one is dropped (counted corrupted and
    dropped_ber), none damaged is delivered."""
    lk, a, b = udp_link(linkem, ber=ber, seed=5)
    send_paced(a, lk.a2b_port, n, size)
    st = fresh(lk)["a2b"]
    got = b.wait_quiet(st["packets_out"])
    st = fresh(lk)["a2b"]
    assert st["packets_in"] == n
    p = p_corrupt(ber, size)
    lo, hi = sigma_band(n, p)
    bad = st["corrupted"]
    assert lo < bad < hi, f"{bad} of {n} corrupted, expected {lo:.0f}..{hi:.0f} (p={p:.4f})"
    assert st["dropped_ber"] == bad
    assert got == n - bad == st["packets_out"]
    assert all(x.intact for x in b.got), "a corrupted datagram was delivered"


def test_duplication(linkem):
    """dup 0.2 over 2,000 datagrams: each arrives once or twice, intact; the
    number doubled is within 5 sigma of 400 and is what linkem counts."""
    n = 2000
    lk, a, b = udp_link(linkem, dup=0.2, seed=3)
    send_paced(a, lk.a2b_port, n, 300)
    st = fresh(lk)["a2b"]
    b.wait_quiet(st["packets_out"])
    st = fresh(lk)["a2b"]
    counts = {}
    for x in b.got:
        counts[x.seq] = counts.get(x.seq, 0) + 1
    assert set(counts) == set(range(n))
    assert set(counts.values()) <= {1, 2}
    twice = sum(1 for c in counts.values() if c == 2)
    lo, hi = sigma_band(n, 0.2)
    assert lo < twice < hi
    assert st["duplicated"] == twice and st["packets_out"] == n + twice
    assert all(x.intact for x in b.got)


def test_reorder(linkem):
    """reorder 0.2 with delay 10 ms: held-back datagrams (an extra gap)
    arrive after later ones; the number out of order is what linkem counts,
    and nothing is lost."""
    n = 1000
    lk, a, b = udp_link(linkem, delay=10, reorder=0.2, reorder_gap=25, seed=9)
    send_paced(a, lk.a2b_port, n, 100, interval=0.001)
    st = fresh(lk)["a2b"]
    b.wait_quiet(n)
    st = fresh(lk)["a2b"]
    seqs = [x.seq for x in sorted(b.got, key=lambda x: x.at)]
    assert sorted(seqs) == list(range(n))
    # a held-back datagram is overtaken by the next ones (the gap is 25
    # sending intervals); the others keep their order
    overtaken, top = [], -1
    for x in sorted(b.got, key=lambda x: x.at):
        if x.seq < top:
            overtaken.append(x)
        top = max(top, x.seq)
    lo, hi = sigma_band(n, 0.2)
    assert lo < st["reordered"] < hi
    # one with nothing sent after it before it left (the last ones, or any
    # when the sender stalled on a busy machine) has nothing to overtake it:
    # held back shows in its delay then
    sent_at = {x.seq: x.at - x.delay for x in b.got}
    tail = [x for x in b.got if x.delay > 0.0225 and x not in overtaken and
            (x.seq >= n - 30 or sent_at[x.seq + 1] >= x.at - 0.001)]
    assert len(overtaken) + len(tail) == st["reordered"]
    short = [round(x.delay * 1000, 1) for x in overtaken if x.delay < 0.0345]
    assert not short, f"held-back datagrams took less than delay + gap (ms): {short}"


@pytest.mark.parametrize("delay", [0, 100])
def test_outage_window_exact(linkem, delay):
    """An outage from 1.0 s to 1.6 s of linkem's clock, a datagram every
    2 ms: none sent inside the window passes (with a delay, none that would
    have been in flight at its start either), every one sent more than
    5 ms outside it does, and the drops are counted as dropped_outage."""
    lk, a, b = udp_link(linkem, delay=delay, outage=[(1.0, 1.6)])
    times = []
    if lk.clock() < 0.5:
        time.sleep(0.5 - lk.clock())
    send_paced(a, lk.a2b_port, 900, 64, interval=0.002, times=times)
    assert times[-1][0] - lk.zero > 2.1
    b.wait_quiet(timeout=20)
    arrived = {x.seq for x in b.got}
    tol = 0.005
    down_from, down_to = 1.0 - delay / 1000.0, 1.6
    inside, outside, lost = [], [], []
    for seq, (tb, te) in enumerate(times):
        c, ce = tb - lk.zero, te - lk.zero  # the send happened between these
        if down_from + tol < c and ce < down_to - tol:
            inside.append(seq)
        elif ce < down_from - tol or c > down_to + tol:
            outside.append(seq)
        if seq not in arrived:
            lost.append((c, ce))
    passed_inside = [round(times[s][0] - lk.zero, 4) for s in inside if s in arrived]
    missing_outside = [round(times[s][0] - lk.zero, 4) for s in outside if s not in arrived]
    assert not passed_inside, f"sent during the outage and delivered: {passed_inside[:10]}"
    assert not missing_outside, f"sent while up and lost: {missing_outside[:10]}"
    assert len(inside) > 250
    st = fresh(lk)["a2b"]
    assert st["dropped_outage"] == len(times) - len(arrived)
    early = [round(c, 4) for c, ce in lost if ce < down_from - tol or c > down_to + tol]
    assert not early, f"lost outside the window: {early}"
    length = down_to - down_from
    assert max(ce for _, ce in lost) - min(c for c, _ in lost) > length - 2 * tol
    assert max(c for c, _ in lost) - min(ce for _, ce in lost) < length + 2 * tol


def test_periodic_outages(linkem):
    """--periodic 0.3/0.2@0.4: up until 0.4 s, then down 0.2 s in every
    0.5 s; datagrams sent in the down phases are lost, those in the up
    phases pass."""
    lk, a, b = udp_link(linkem, periodic=(0.3, 0.2, 0.4))
    times = []
    if lk.clock() < 0.2:
        time.sleep(0.2 - lk.clock())
    send_paced(a, lk.a2b_port, 900, 64, interval=0.002, times=times)
    b.wait_quiet(timeout=20)
    arrived = {x.seq for x in b.got}
    tol = 0.005
    wrong = []
    for seq, (tb, te) in enumerate(times):
        c = tb - lk.zero
        if te - tb > 0.002:
            continue  # the send itself was delayed: its moment is uncertain
        if c < 0.4 - tol:
            down = False
        else:
            phase = (c - 0.4) % 0.5
            if min(abs(phase - 0.3), abs(phase - 0.5), phase) < tol:
                continue  # at an edge
            down = phase > 0.3
        if down == (seq in arrived):
            wrong.append((round(c, 4), "passed" if down else "lost"))
    assert not wrong, f"datagrams with the wrong fate: {wrong[:10]}"
    assert fresh(lk)["a2b"]["dropped_outage"] == len(times) - len(arrived) > 200


def _fates(linkem, seed):
    lk, a, b = udp_link(linkem, seed=seed, loss=0.1, dup=0.05, ber=2e-4)
    send_paced(a, lk.a2b_port, 1500, 120, interval=0.0005)
    send_paced(b, lk.b2a_port, 500, 120, interval=0.0005, first=10_000)
    st = fresh(lk)
    b.wait_quiet(st["a2b"]["packets_out"])
    a.wait_quiet(st["b2a"]["packets_out"])
    st = lk.stop()
    fate = {}
    for x in b.got + a.got:
        fate[x.seq] = fate.get(x.seq, 0) + 1
    assert st["a2b"]["packets_in"] == 1500 and st["b2a"]["packets_in"] == 500
    return fate, {d: {k: st[d][k] for k in ("dropped_loss", "dropped_ber", "duplicated")}
                  for d in DIRS}


def test_replay_by_seed(linkem):
    """The same seed and the same datagrams give the same fates (which
    sequence numbers arrived, how often); another seed gives others."""
    f1, c1 = _fates(linkem, 42)
    f2, c2 = _fates(linkem, 42)
    f3, c3 = _fates(linkem, 43)
    assert c1["a2b"]["dropped_loss"] > 0 and c1["a2b"]["dropped_ber"] > 0
    assert c1["a2b"]["duplicated"] > 0
    assert f1 == f2 and c1 == c2
    assert f1 != f3
