"""Small programs run inside a network namespace (ip netns exec NAME python3
nstool.py ...) by the packet-mode tests, so they need no ping or netcat:

  ping ADDR COUNT INTERVAL       ICMP echo over a raw socket; prints one
                                 RTT in seconds per line ("lost" if none
                                 came within 5 s)
  serve PORT                     accepts one TCP connection, reads to EOF,
                                 writes the SHA-256 of what came and its length
  send ADDR PORT NBYTES SEED     connects, sends NBYTES pseudo-random bytes,
                                 prints their SHA-256 and the answer
"""
import hashlib
import os
import random
import select
import socket
import struct
import sys
import time


def checksum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return ~s & 0xFFFF


def ping(addr, count, interval):
    """Sends count echo requests, one every interval seconds, collecting
    the replies as they come; prints one line per request."""
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    ident = os.getpid() & 0xFFFF
    sent, rtt = {}, {}
    t0 = time.monotonic()
    seq = 0
    while True:
        now = time.monotonic()
        if seq < count and now >= t0 + seq * interval:
            body = b"tern-linkem" * 4
            hdr = struct.pack("!BBHHH", 8, 0, 0, ident, seq)
            pkt = struct.pack("!BBHHH", 8, 0, checksum(hdr + body), ident, seq) + body
            sent[seq] = time.monotonic()
            s.sendto(pkt, (addr, 0))
            seq += 1
            continue
        if seq >= count:
            last = max(sent.values())
            if len(rtt) == count or now > last + 3:
                break
            wait = last + 3 - now
        else:
            wait = t0 + seq * interval - now
        r, _, _ = select.select([s], [], [], max(0.0, wait))
        if not r:
            continue
        data, _ = s.recvfrom(2048)
        at = time.monotonic()
        ihl = (data[0] & 0x0F) * 4
        typ, _, _, rid, rseq = struct.unpack("!BBHHH", data[ihl:ihl + 8])
        if typ == 0 and rid == ident and rseq in sent and rseq not in rtt:
            rtt[rseq] = at - sent[rseq]
    for i in range(count):
        print(f"{rtt[i]:.6f}" if i in rtt else "lost", flush=True)


def serve(port):
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("0.0.0.0", port))
    srv.listen(1)
    print("listening", flush=True)
    c, _ = srv.accept()
    h, n = hashlib.sha256(), 0
    while True:
        b = c.recv(1 << 16)
        if not b:
            break
        h.update(b)
        n += len(b)
    c.sendall(f"{h.hexdigest()} {n}\n".encode())
    c.close()


def send(addr, port, nbytes, seed):
    rng = random.Random(seed)
    data = rng.randbytes(nbytes)
    c = socket.create_connection((addr, port), timeout=60)
    c.settimeout(120)
    c.sendall(data)
    c.shutdown(socket.SHUT_WR)
    answer = b""
    while not answer.endswith(b"\n"):
        b = c.recv(200)
        if not b:
            break
        answer += b
    print(hashlib.sha256(data).hexdigest(), answer.decode().strip(), flush=True)


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "ping":
        ping(args[0], int(args[1]), float(args[2]))
    elif cmd == "serve":
        serve(int(args[0]))
    elif cmd == "send":
        send(args[0], int(args[1]), int(args[2]), args[3])
    else:
        sys.exit(f"unknown command {cmd!r}")
