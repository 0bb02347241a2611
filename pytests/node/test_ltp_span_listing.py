"""'tern admin ltpadmin' lists the values the running engine uses (issue 18
item 15): the contact plan's range of 10 s, not the host.rc's 0 ms, and
where each value came from."""
import re


def test_l_span_shows_live_light_time_and_sources(network):
    net = network(2, owlt=10, qtime=0.25)
    net.start()
    r = net.admin(1, "ltpadmin", "l span")
    assert r.returncode == 0, r.stdout + r.stderr
    text = r.stdout
    assert re.search(r"span 2: .*link up", text), text
    # 2 x 10 s range + 250 ms own + 250 ms peer queuing latency
    assert ("one-way light time 10000 ms (contact plan range), queuing latency own "
            "250 ms (m ownqtime) + peer 250 ms (a span): retransmission timeout "
            "20500 ms") in text, text
    assert "max retries 5 (default)" in text, text
    assert "largest block 268435456 B (default)" in text, text
    assert re.search(r"now: \d+ export sessions? \(0 waiting for room at the peer\)", text), text
    r = net.admin(1, "ltpadmin", "i span 2")
    assert r.returncode == 0 and "contact plan range" in r.stdout, r.stdout
