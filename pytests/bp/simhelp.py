"""Helpers for the bundle-protocol scenarios run in tern_sim."""
import hashlib
import random

from tern.codec import cbor_loads
from tern.sim import Sim  # noqa: F401  (re-exported for the tests)

# Seeds run by the randomized scenario(s), reported at the end of the session.
SEED_TOTALS = {"seeds": 0, "bundles": 0, "delivered": 0, "expired": 0}


def sha(data):
    return hashlib.sha256(data).hexdigest()


def payload(rng, n):
    """n reproducible bytes from rng (a random.Random)."""
    return rng.randbytes(n)


def sized_payload(tag, n):
    """n bytes that start with tag (so a payload says which bundle it is)."""
    head = tag.encode() + b":"
    if n <= len(head):
        return head[:n]
    return head + random.Random(tag).randbytes(n - len(head))


def _eid(v):
    # [1, "//node/svc"], [1, 0] (dtn:none) or [2, [node, service]]
    scheme, ssp = v
    if scheme == 2:
        return f"ipn:{ssp[0]}.{ssp[1]}"
    return "dtn:none" if ssp == 0 else f"dtn:{ssp}"


def decode_report(data):
    """A status report payload (RFC 9171 6.1.1) as a dict: received,
    forwarded, delivered, deleted (bools), reason, source, ctime, seq."""
    rec = cbor_loads(data)
    assert isinstance(rec, list) and rec[0] == 1, f"not a status report: {rec!r}"
    info, reason, src, ts = rec[1][:4]
    names = ("received", "forwarded", "delivered", "deleted")
    out = {n: bool(item[0]) for n, item in zip(names, info)}
    out.update(reason=reason, source=_eid(src), ctime=ts[0], seq=ts[1])
    return out


def chain(sim, n, seg=1400, delay_ms=10, rate=0, loss=0.0, ranges=None, **kw):
    """Nodes 1..n in a line, each with plans for every other node through
    its neighbour, joined by identical links. Returns the node numbers."""
    for i in range(1, n + 1):
        peers = [p for p in (i - 1, i + 1) if 1 <= p <= n]
        routes = {}
        for d in range(1, n + 1):
            if d not in peers and d != i:
                routes[d] = i + 1 if d > i else i - 1
        sim.node(number=i, peers=peers, routes=routes, seg=seg, endpoints=(1, 2),
                 ranges={p: ranges for p in peers} if ranges else None, **kw)
    for i in range(1, n):
        sim.link(i, i + 1, delay_ms=delay_ms, rate=rate, loss=loss)
    return list(range(1, n + 1))
