"""Tern's CFDP PDUs as tshark, an independent dissector, reads them.

Each PDU is encoded by libterncfdp (tern.cfdp) and written twice into a
pcap (IPv4/UDP frames, no capture needed):

- as the payload of a BPv7 bundle from ipn:1.64 to ipn:2.65 (the CFDP
  service numbers ION uses), with a CRC-16 primary block and a CRC-32C
  payload block, on UDP port 4556 (which tshark dissects as bundles);
- as a bare datagram on a port given to tshark with "-d udp.port==N,cfdp".

tshark 4.0 dissects a BPv7 payload by its destination only for dtn-scheme
service names, and CFDP registers for no BPv7 table, so it cannot be told
that ipn service 65 is CFDP: a ten-line Lua postdissector (when tshark has
Lua) hands the payload of each bundle to ipn:*.65 to tshark's CFDP
dissector; the bare datagrams need no help. Both must show no malformed
frame and no error, every bundle must pass its CRCs and carry the PDU's
bytes, and the fields tshark reads must be the values encoded.

tshark 4.0's CFDP dissector follows CCSDS 727.0-B-4 and has bugs of its
own: it reads the large-file flag and the segment metadata flag as reserved
bits and every offset and size as 32 bits; it stops its TLV loops early (it
compares an absolute offset with the data field's length), so it dissects at
most the first option of a Metadata PDU; and it throws on any Finished PDU
whose filestore response ends the data field (the same response followed by
two stray bytes dissects). Those PDUs (64-bit forms, segment metadata,
filestore responses, several options) are checked here at the BPv7 level
only; the C vectors check them byte by byte.
"""
import os
import shutil
import struct
import subprocess

import pytest

from tern import cfdp, codec

PORT = 5234  # the bare CFDP datagrams
PROBLEMS = "_ws.malformed || _ws.expert.severity >= 0x00800000"

LUA = """
local dst = Field.new("bpv7.primary.dst_uri")
local payload = Field.new("data.data")
local cfdp = Dissector.get("cfdp")
local p = Proto("cfdp_in_bundle", "CFDP in a BPv7 payload (ipn service 65)")
function p.dissector(tvb, pinfo, tree)
    local d = dst()
    if d and tostring(d.value):match("^ipn:%d+%.65$") then
        for _, fi in ipairs({ payload() }) do cfdp:call(fi.range:tvb(), pinfo, tree) end
    end
end
register_postdissector(p)
"""

FIELDS = ["cfdp.fdtype", "cfdp.srcid", "cfdp.transeqnum", "cfdp.dstid", "cfdp.crc_flag",
          "cfdp.direction", "cfdp.trans_mode", "cfdp.crc", "cfdp.offset", "cfdp.file_size",
          "cfdp.checksum", "cfdp.condition_code", "cfdp.src_file_name",
          "cfdp.dst_file_name", "cfdp.delivery_code", "cfdp.file_status",
          "cfdp.dir_code_ack", "cfdp.trans_stat_ack", "cfdp.nak_st_scope",
          "cfdp.nak_sp_scope", "cfdp.progress", "cfdp.response_req", "cfdp.action_code",
          "cfdp.first_file_name", "cfdp.data_length"]


def tool_env():
    """tshark runs without the sanitizer runtime make test may preload."""
    env = dict(os.environ)
    for k in ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS"):
        env.pop(k, None)
    return env


def cases():
    """(name, PDU bytes, fields tshark must read, dissected by tshark's CFDP?)"""
    h = cfdp.Header(src=1, dst=2, tsn=7)
    hs = cfdp.Header(src=1, dst=2, tsn=7, direction=cfdp.TOWARD_SENDER)
    hc = cfdp.Header(src=300, dst=70000, tsn=123456, crc=True, mode=cfdp.UNACKNOWLEDGED)
    h8 = cfdp.Header(src=0x0102030405060708, dst=0x1112131415161718,
                     tsn=0x2122232425262728)
    hl = cfdp.Header(src=1, dst=2, tsn=7, large_file=True)
    hm = cfdp.Header(src=1, dst=2, tsn=7, seg_meta=True, seg_ctrl=True)
    ids = {"cfdp.srcid": "1", "cfdp.dstid": "2", "cfdp.transeqnum": "7"}
    out = [
        ("metadata", cfdp.metadata(h, 123456, b"/data/in.bin", b"out.bin",
                                   cfdp.CKSUM_CRC32C, True, [cfdp.msg_to_user(b"hi")]),
         dict(ids, **{"cfdp.fdtype": "7", "cfdp.file_size": "123456",
                      "cfdp.src_file_name": "/data/in.bin",
                      "cfdp.dst_file_name": "out.bin"}), True),
        ("file_data", cfdp.file_data(h, 65536, b"some file data"),
         dict(ids, **{"cfdp.offset": "65536"}), True),
        ("file_data_crc", cfdp.file_data(hc, 4000, b"x" * 1000),
         {"cfdp.offset": "4000", "cfdp.srcid": "300", "cfdp.dstid": "70000",
          "cfdp.transeqnum": "123456", "cfdp.crc_flag": "1", "cfdp.trans_mode": "1"},
         True),
        ("eof", cfdp.eof(h, 0, 0x89ABCDEF, 123456),
         dict(ids, **{"cfdp.fdtype": "4", "cfdp.condition_code": "0",
                      "cfdp.checksum": "0x89abcdef", "cfdp.file_size": "123456"}), True),
        ("eof_cancel", cfdp.eof(h, 15, 0x1234, 99, fault=1),
         dict(ids, **{"cfdp.fdtype": "4", "cfdp.condition_code": "15",
                      "cfdp.checksum": "0x00001234", "cfdp.file_size": "99"}), True),
        ("eof_crc", cfdp.eof(hc, 0, 0x55AA55AA, 1 << 31),
         {"cfdp.fdtype": "4", "cfdp.condition_code": "0", "cfdp.checksum": "0x55aa55aa",
          "cfdp.file_size": str(1 << 31), "cfdp.crc_flag": "1"}, True),
        ("finished", cfdp.finished(hs, 0, 0, 2),
         dict(ids, **{"cfdp.fdtype": "5", "cfdp.condition_code": "0",
                      "cfdp.delivery_code": "0", "cfdp.file_status": "2",
                      "cfdp.direction": "1"}), True),
        ("finished_fault", cfdp.finished(hs, 7, 1, 0, fault=2),
         dict(ids, **{"cfdp.fdtype": "5", "cfdp.condition_code": "7",
                      "cfdp.delivery_code": "1", "cfdp.file_status": "0"}), True),
        ("finished_crc", cfdp.finished(hc, 10, 1, 3),
         {"cfdp.fdtype": "5", "cfdp.condition_code": "10", "cfdp.delivery_code": "1",
          "cfdp.file_status": "3", "cfdp.crc_flag": "1"}, True),
        ("metadata_ion_request", cfdp.metadata(
            h, 0, b"", b"", options=[cfdp.fs_request(1, b"old", ion_form=True)]),
         dict(ids, **{"cfdp.fdtype": "7", "cfdp.file_size": "0"}), True),
        ("ack_eof", cfdp.ack(hs, cfdp.EOF, 0, 1),
         dict(ids, **{"cfdp.fdtype": "6", "cfdp.dir_code_ack": "4",
                      "cfdp.condition_code": "0", "cfdp.trans_stat_ack": "1"}), True),
        ("ack_finished", cfdp.ack(h, cfdp.FINISHED, 5, 2),
         dict(ids, **{"cfdp.fdtype": "6", "cfdp.dir_code_ack": "5",
                      "cfdp.condition_code": "5", "cfdp.trans_stat_ack": "2"}), True),
        ("nak", cfdp.nak(hs, 0, 123456, [(0, 0), (1000, 2000), (5000, 123456)]),
         dict(ids, **{"cfdp.fdtype": "8", "cfdp.nak_st_scope": "0",
                      "cfdp.nak_sp_scope": "123456"}), True),
        ("nak_crc", cfdp.nak(hc, 10, 20, [(12, 14)]),
         {"cfdp.fdtype": "8", "cfdp.nak_st_scope": "10", "cfdp.nak_sp_scope": "20",
          "cfdp.crc_flag": "1"}, True),
        ("prompt_nak", cfdp.prompt(h, False),
         dict(ids, **{"cfdp.fdtype": "9", "cfdp.response_req": "0"}), True),
        ("prompt_keep_alive", cfdp.prompt(h8, True),
         {"cfdp.fdtype": "9", "cfdp.response_req": "1",
          "cfdp.srcid": str(0x0102030405060708), "cfdp.dstid": str(0x1112131415161718),
          "cfdp.transeqnum": str(0x2122232425262728)}, True),
        ("keep_alive", cfdp.keep_alive(hs, 4096),
         dict(ids, **{"cfdp.fdtype": "12", "cfdp.progress": "4096"}), True),
        ("keep_alive_crc", cfdp.keep_alive(hc, 77),
         {"cfdp.fdtype": "12", "cfdp.progress": "77", "cfdp.crc_flag": "1"}, True),
        # B-5 only: in bundles, checked at the BPv7 level
        ("metadata_large", cfdp.metadata(hl, 1 << 40, b"big", b"big"), None, False),
        ("file_data_large", cfdp.file_data(hl, 5 << 30, b"tail"), None, False),
        ("eof_large", cfdp.eof(hl, 0, 1, 5 << 30), None, False),
        ("nak_large", cfdp.nak(hl, 0, 1 << 33, [(1 << 32, (1 << 32) + 10)]), None, False),
        ("keep_alive_large", cfdp.keep_alive(hl, 1 << 35), None, False),
        ("file_data_segment_metadata", cfdp.file_data(hm, 0, b"rec", 3, b"meta"), None,
         False),
        ("finished_responses", cfdp.finished(hs, 0, 0, 2, [
            cfdp.fs_response(2, 0, b"a", b"b"),
            cfdp.fs_response(1, 2, b"f", message=b"busy", ion_form=True)]), None, False),
        ("metadata_options", cfdp.metadata(h, 10, b"a", b"b", options=[
            cfdp.fs_request(5, b"dir"), cfdp.fault_handler(5, 3), cfdp.flow_label(b"fl")]),
         None, False),
    ]
    for name, pdu, want, _ in out:  # what the codec wrote, it reads back
        d = cfdp.decode(pdu)
        for field, key in (("cfdp.file_size", "file_size"), ("cfdp.offset", "offset"),
                           ("cfdp.progress", "progress")):
            if want and field in want:
                assert str(d[key]) == want[field], name
        if d["crc"] and want is not None:  # tshark shows the CRC; it must be ours
            want["cfdp.crc"] = f"0x{pdu[-2] << 8 | pdu[-1]:04x}"
    return out


def bundle(pdu, seq):
    """A BPv7 bundle ipn:1.64 -> ipn:2.65 carrying pdu (CRC-16 primary, CRC-32C payload)."""
    primary = codec.cbor_dumps([7, 0, 1, [2, [2, 65]], [2, [1, 64]], [2, [1, 0]],
                                [780000000000, seq], 86400000, b"\0\0"])
    primary = primary[:-2] + struct.pack("!H", codec.crc16_x25(primary))
    payload = codec.cbor_dumps([1, 1, 0, 2, pdu, b"\0\0\0\0"])
    payload = payload[:-4] + struct.pack("!I", codec.crc32c(payload))
    return b"\x9f" + primary + payload + b"\xff"


def _ip_sum(b):
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def udp_frame(payload, dport):
    udp = struct.pack("!HHHH", 40000, dport, 8 + len(payload), 0) + payload
    ip = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0x4000, 64, 17,
                               0, bytes([127, 0, 0, 1]), bytes([127, 0, 0, 2])))
    ip[10:12] = struct.pack("!H", _ip_sum(bytes(ip)))
    return bytes(ip) + udp


def write_pcap(path, frames):
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 101))  # raw IP
        for i, fr in enumerate(frames):
            f.write(struct.pack("<IIII", 1700000000 + i, 0, len(fr), len(fr)))
            f.write(fr)


def tshark(pcap, *args):
    r = subprocess.run(["tshark", "-n", "-r", pcap, *args], capture_output=True, text=True,
                       timeout=120, env=tool_env())
    assert r.returncode == 0, r.stderr
    return [ln for ln in r.stdout.splitlines() if ln.strip()]


def fields(pcap, extra, names):
    args = [*extra, "-T", "fields", "-E", "occurrence=f"]
    for n in names:
        args += ["-e", n]
    return [dict(zip(names, ln.split("\t"))) for ln in tshark(pcap, *args)]


def check_cfdp_fields(rows, chosen, how):
    assert len(rows) == len(chosen), f"{how}: {len(rows)} frames, {len(chosen)} PDUs"
    for row, (name, _, want, _) in zip(rows, chosen):
        for f, v in want.items():
            assert row[f] == v, f"{how}, {name}: tshark reads {f} = {row[f]!r}, encoded {v!r}"


def lua_available():
    r = subprocess.run(["tshark", "-v"], capture_output=True, text=True, env=tool_env())
    return "with Lua" in r.stdout


def test_tshark_reads_tern_cfdp_pdus(tmp_path):
    if not shutil.which("tshark"):
        pytest.skip("tshark is not installed (apt-get install tshark to check the wire "
                    "format)")
    all_cases = cases()
    dissectable = [c for c in all_cases if c[3]]

    # 1. bare CFDP datagrams, decoded as CFDP by port
    bare = str(tmp_path / "cfdp.pcap")
    write_pcap(bare, [udp_frame(pdu, PORT) for _, pdu, _, _ in dissectable])
    decode = ["-d", f"udp.port=={PORT},cfdp"]
    bad = tshark(bare, *decode, "-Y", PROBLEMS)
    assert not bad, "tshark flags bare CFDP frames:\n" + "\n".join(bad)
    rows = fields(bare, decode, ["frame.protocols"] + FIELDS)
    assert all(r["frame.protocols"].startswith("raw:ip:udp:cfdp") for r in rows), rows
    check_cfdp_fields(rows, dissectable, "bare")

    # 2. every PDU inside a bundle
    wrapped = str(tmp_path / "bundles.pcap")
    write_pcap(wrapped, [udp_frame(bundle(pdu, i), 4556)
                         for i, (_, pdu, _, _) in enumerate(all_cases)])
    bad = tshark(wrapped, "-Y", PROBLEMS + " || bpv7.crc_status == 0")
    assert not bad, "tshark flags bundles:\n" + "\n".join(bad)
    rows = fields(wrapped, [], ["bpv7.primary.src_uri", "bpv7.primary.dst_uri",
                                "bpv7.crc_status", "data.data"])
    assert len(rows) == len(all_cases)
    for row, (name, pdu, _, _) in zip(rows, all_cases):
        assert (row["bpv7.primary.src_uri"], row["bpv7.primary.dst_uri"]) == \
            ("ipn:1.64", "ipn:2.65"), name
        assert row["data.data"] == pdu.hex(), f"{name}: bundle payload is not the PDU"
    crc = fields(wrapped, ["-E", "occurrence=a"], ["bpv7.crc_status"])
    assert all(set(r["bpv7.crc_status"].split(",")) == {"1"} for r in crc), crc

    # 3. the bundles' payloads through tshark's CFDP dissector (Lua postdissector)
    lua_note = "no Lua in this tshark: bundle payloads not handed to its CFDP dissector"
    if lua_available():
        script = tmp_path / "cfdp_in_bundle.lua"
        script.write_text(LUA)
        only = str(tmp_path / "bundles_dissectable.pcap")
        write_pcap(only, [udp_frame(bundle(pdu, i), 4556)
                          for i, (_, pdu, _, _) in enumerate(dissectable)])
        lua = ["-X", f"lua_script:{script}"]
        bad = tshark(only, *lua, "-Y", PROBLEMS)
        assert not bad, "tshark flags CFDP in bundles:\n" + "\n".join(bad)
        check_cfdp_fields(fields(only, lua, FIELDS), dissectable, "in bundles")
        lua_note = f"{len(dissectable)} bundle payloads dissected as CFDP (Lua)"
    print(f"tshark: {len(dissectable)} bare CFDP PDUs with their fields as encoded, "
          f"{len(all_cases)} PDUs in bundles with good CRCs, {lua_note}; no malformed frame")


def test_codec_refusals_reach_python():
    """A refusal carries the codec's code and fixed reason text."""
    pdu = cfdp.keep_alive(cfdp.Header(), 5)
    with pytest.raises(cfdp.CfdpError) as ei:
        cfdp.decode(pdu[:-1])
    assert ei.value.why == "data field runs past the end of the PDU"
    with pytest.raises(cfdp.CfdpError) as ei:
        cfdp.decode(pdu, crc_required=True)
    assert ei.value.why == "CRC required for this peer but the PDU has none"
    with pytest.raises(cfdp.CfdpError) as ei:
        cfdp.eof(cfdp.Header(), file_size=1 << 32)
    assert ei.value.why == "a file offset or size passes 2^32: set large_file"
    assert cfdp.checksum(cfdp.CKSUM_MODULAR, b"123456789") == 0x9F686A6C
    assert cfdp.name("condition", 11) == "unsupported checksum type"
