"""Tern's reserved CFDP messages (CCSDS 727.0-B-5 chapter 6) as tshark reads them.

Each message is the byte string apps/cfdp/test/test_msg.c proves
cfdp_msg_encode writes (the same hex, derived there by hand from the content
tables), carried as the only option of a Metadata PDU that libterncfdp
encodes (tshark 4.0 dissects only the first option of a Metadata PDU). The
frames must show no malformed packet, and the message fields tshark reads
must be the values encoded.

Left out, because tshark 4.0's dissector misreads them (its own field masks
agree with Tern's layout, its offsets do not): the proxy put cancel (no type
shown), the remote status report response (flagged malformed though its
status and response code read as encoded) and the remote suspend and resume
responses (status read from the transaction ID's lengths byte). The C
vectors check those byte by byte.
"""
import shutil

import pytest

from tern import cfdp

import test_cfdp_wire as wire

ID = "63 66 64 70 "

# (name, message bytes, fields tshark must read)
MESSAGES = [
    ("proxy put request", ID + "00 02 02 03 05 61 2E 74 78 74 01 62",
     {"cfdp.proxy_msg_type": "0", "cfdp.src_file_name": "a.txt",
      "cfdp.dst_file_name": "b"}),
    ("proxy message to user", ID + "01 02 68 69",
     {"cfdp.proxy_msg_type": "1", "cfdp.message_to_user": "6869"}),
    ("proxy filestore request", ID + "02 06 20 01 78 02 79 7A",
     {"cfdp.proxy_msg_type": "2", "cfdp.action_code": "2", "cfdp.first_file_name": "x",
      "cfdp.second_file_name": "yz"}),
    ("proxy fault handler override", ID + "03 84",
     {"cfdp.proxy_msg_type": "3", "cfdp.condition_code": "8", "cfdp.handler_code": "4"}),
    ("proxy transmission mode", ID + "04 01",
     {"cfdp.proxy_msg_type": "4", "cfdp.proxy_trans_mode": "0x01"}),
    ("proxy segmentation control", ID + "06 01",
     {"cfdp.proxy_msg_type": "6", "cfdp.proxy_segment_control": "0x01"}),
    ("proxy put response", ID + "07 06",
     {"cfdp.proxy_msg_type": "7", "cfdp.condition_code": "0",
      "cfdp.proxy_delivery_code": "1", "cfdp.file_status": "2"}),
    ("proxy filestore response", ID + "08 04 11 01 66 00",
     {"cfdp.proxy_msg_type": "8", "cfdp.action_code": "1", "cfdp.first_file_name": "f"}),
    ("originating transaction ID", ID + "0A 01 05 12 34", {"cfdp.proxy_msg_type": "10"}),
    ("directory listing request", ID + "10 01 64 05 6C 2E 74 78 74",
     {"cfdp.proxy_msg_type": "16", "cfdp.directory_name": "d",
      "cfdp.directory_file_name": "l.txt"}),
    ("directory listing response, successful", ID + "11 00 01 64 05 6C 2E 74 78 74",
     {"cfdp.proxy_msg_type": "17", "cfdp.listing_resp_code": "0",
      "cfdp.directory_name": "d", "cfdp.directory_file_name": "l.txt"}),
    ("directory listing response, unsuccessful", ID + "11 80 01 64 05 6C 2E 74 78 74",
     {"cfdp.proxy_msg_type": "17", "cfdp.listing_resp_code": "1"}),
    ("remote status report request", ID + "20 10 01 02 07 01 72",
     {"cfdp.proxy_msg_type": "32", "cfdp.report_file_name": "r"}),
    ("remote suspend request", ID + "30 10 01 02 07", {"cfdp.proxy_msg_type": "48"}),
    ("remote resume request", ID + "38 10 01 02 07", {"cfdp.proxy_msg_type": "56"}),
]


def test_tshark_reads_tern_reserved_messages(tmp_path):
    if not shutil.which("tshark"):
        pytest.skip("tshark is not installed (apt-get install tshark to check the wire "
                    "format against an independent dissector)")
    h = cfdp.Header(src=1, dst=2, tsn=7)
    frames = []
    for _, hexstr, _ in MESSAGES:
        msg = bytes.fromhex(hexstr.replace(" ", ""))
        pdu = cfdp.metadata(h, 0, b"", b"", options=[cfdp.msg_to_user(msg)])
        d = cfdp.decode(pdu)  # the codec carries it unchanged
        assert d["options"][0]["data"] == msg
        frames.append(wire.udp_frame(pdu, wire.PORT))
    pcap = str(tmp_path / "messages.pcap")
    wire.write_pcap(pcap, frames)
    decode = ["-d", f"udp.port=={wire.PORT},cfdp"]
    bad = wire.tshark(pcap, *decode, "-Y", wire.PROBLEMS)
    assert not bad, "tshark flags reserved messages:\n" + "\n".join(bad)
    names = sorted({f for _, _, want in MESSAGES for f in want})
    rows = wire.fields(pcap, decode, names)
    assert len(rows) == len(MESSAGES)
    for (name, _, want), row in zip(MESSAGES, rows):
        for f, v in want.items():
            assert row[f] == v, f"{name}: tshark reads {f} = {row[f]!r}, encoded {v!r}"
    print(f"tshark: {len(MESSAGES)} reserved CFDP messages with their fields as encoded")
