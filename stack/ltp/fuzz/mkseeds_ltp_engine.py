#!/usr/bin/python3
"""Writes the seed corpus of fuzz_ltp_engine (corpus/ltp_engine/): small
programs in the harness's operation language (see fuzz_ltp_engine.c)."""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "ltp_engine")


def u16(v):
    return struct.pack(">H", v)


def deliver(n=64):
    return bytes([0, n - 1, 0])


def one_way(way, n=64):
    return bytes([1, n - 1, way])


def drop(way):
    return bytes([2, way])


def dup(way):
    return bytes([3, way])


def corrupt(way, at, x):
    return bytes([4, way]) + u16(at) + bytes([x])


def raw(to, seg):
    return bytes([5, to]) + u16(len(seg)) + seg


def ms(n):
    return bytes([6]) + u16(n)


def secs(n):
    return bytes([7, n])


def block(red, shift=0, green=0, frm=0):
    return bytes([8, frm]) + u16(red) + bytes([shift, green])


def sdu(n):
    return bytes([9]) + u16(n)


LINK = bytes([10])
RELEASE = bytes([12])


def mode(side, m):
    return bytes([11, side, m])


def sdnv(v):
    out = [v & 0x7F]
    v >>= 7
    while v:
        out.append(0x80 | (v & 0x7F))
        v >>= 7
    return bytes(reversed(out))


def data_seg(session, offset, length, typ=0, engine=1, n=None):
    body = sdnv(1) + sdnv(offset) + sdnv(length)
    if typ in (1, 2, 3):
        body += sdnv(1) + sdnv(0)
    return bytes([typ]) + sdnv(engine) + sdnv(session) + b"\0" + body + b"x" * (
        length if n is None else n)


def report(session, lower, upper, claims, engine=1):
    body = sdnv(77) + sdnv(0) + sdnv(upper) + sdnv(lower) + sdnv(len(claims))
    for off, ln in claims:
        body += sdnv(off) + sdnv(ln)
    return bytes([8]) + sdnv(engine) + sdnv(session) + b"\0" + body


def u64(v):
    return struct.pack(">Q", v)


def field_data(to, typ, session, offset, length, have):
    """Operation 14: a data segment built from 64-bit fields."""
    out = bytes([14, to, typ]) + u64(session) + u64(offset) + u64(length) + u16(have)
    if typ in (1, 2, 3):
        out += bytes([1, 0])
    return out


def field_report(to, session, upper, lower, claims):
    """Operation 14: a report built from 64-bit fields."""
    out = bytes([14, to, 8]) + u64(session) + u64(upper) + u64(lower) + bytes([len(claims)])
    out += u16(5) + bytes([0])
    for off, ln in claims:
        out += u64(off) + u64(ln)
    return out


ITEM1 = bytes.fromhex("0301b893420001ffffffffffffffff7f0a010078787878787878787878")

seeds = {
    # issue 18 item 1: the datagram that hung the engine, then a normal block
    "item1_datagram": b"\x01" + raw(1, ITEM1) + block(3000) + deliver() + deliver() +
    ms(50) + deliver(),
    "clean_blocks": b"\x01" + block(3000) + block(60000) + block(200, green=40) +
    deliver() + deliver() + ms(20) + deliver() + deliver(),
    "lossy": b"\x05" + block(20000) + drop(0) + one_way(0, 3) + drop(0) + deliver() +
    ms(30) + deliver() + drop(1) + ms(30) + deliver() + ms(60) + deliver(),
    "duplicated_reordered": b"\x02" + block(9000) + dup(0) + one_way(0, 2) + dup(0) +
    deliver() + dup(1) + deliver() + ms(40) + deliver(),
    "no_room_then_room": b"\x11" + mode(1, 2) + block(30000) + block(5000) + deliver() +
    deliver() + secs(5) + deliver() + secs(5) + deliver() + mode(1, 0) + RELEASE +
    deliver() + deliver() + ms(100) + deliver(),
    "held_then_released": b"\x01" + mode(1, 1) + block(8000) + deliver() + deliver() +
    ms(200) + deliver() + RELEASE + deliver() + deliver(),
    "link_flaps": b"\x01" + block(40000) + one_way(0, 10) + LINK + secs(3) + LINK +
    deliver() + ms(30) + deliver() + LINK + ms(500) + LINK + deliver(),
    "both_ways_and_units": b"\x01" + block(5000, frm=1) + block(7000) + sdu(1000) +
    sdu(1000) + sdu(2500) + ms(20) + deliver() + deliver() + ms(30) + deliver(),
    "corrupted": b"\x01" + block(6000) + corrupt(0, 3, 0x40) + corrupt(0, 0, 0) +
    deliver() + ms(50) + deliver(),
    "strided_red_segments": b"\x01" + b"".join(
        raw(1, data_seg(500, i * 4096, 11)) for i in range(40)) + block(3000) + deliver(),
    "scattered_bytes": b"\x01" + b"".join(
        raw(1, data_seg(700, i * 2, 1)) for i in range(60)) + deliver(),
    "offset_overflow": b"\x01" + raw(1, data_seg(78, (1 << 64) - 5, 10, typ=3)) +
    raw(1, data_seg(79, (1 << 20) - 9, 10, typ=3)) + raw(1, data_seg(80, 1 << 40, 10,
                                                                     typ=7)) +
    block(1000) + deliver(),
    "report_outside_block": b"\x01" + block(3000) +
    raw(0, report(0x3c0a000, (1 << 64) - 21, (1 << 64) - 1, [(0, 19)])) + deliver(),
    "field_segments": b"\x01" + field_data(1, 3, 600, 0, 100, 100) +
    field_data(1, 0, 601, 0, 50, 50) + field_data(1, 3, 601, 50, 50, 50) + deliver() +
    block(3000) + field_report(0, 0, 3000, 0, [(0, 1000)]) + deliver() + ms(30) + deliver(),
    "tx_notify_and_ranges": b"\x41" + block(20000) + one_way(0, 8) + bytes([15, 0]) + u16(300) +
    u16(300) + deliver() + ms(700) + deliver() + drop(1) + ms(1500) + deliver(),
    "expiring": b"\x01" + block(4000) + one_way(0, 2) + secs(255) + secs(255) + deliver(),
}

os.makedirs(OUT, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)
print(f"{len(seeds)} seeds in {OUT}")
