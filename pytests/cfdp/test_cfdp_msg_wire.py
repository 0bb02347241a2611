"""Tern's reserved CFDP messages (CCSDS 727.0-B-5 chapter 6) as tshark reads them.

Each message is built by libterncfdp (tern.cfdp.message, cfdp_msg_encode)
from fixed fields, must equal the hex apps/cfdp/test/test_msg.c derives by
hand from the content tables, and is carried as the only option of a
Metadata PDU (tshark 4.0 dissects only the first option of a Metadata PDU).
The frames must show no malformed packet, the message fields tshark reads
must be the values encoded, and the message must decode back to its fields.

Left out of tshark's part, because tshark 4.0's dissector misreads them (its
own field masks agree with Tern's layout, its offsets do not): the proxy put
cancel (no type shown), the remote status report response (flagged malformed
though its status and response code read as encoded) and the remote suspend
and resume responses (status read from the transaction ID's lengths byte).
Those are checked here against the hex and by decoding only.
"""
import shutil

import pytest

from tern import cfdp

import test_cfdp_wire as wire

ID = "63 66 64 70 "

M = cfdp
RENAME = cfdp.fs_request(2, b"x", b"yz")
DELETE_NO_FILE = cfdp.fs_response(1, 1, b"f")
TID = (0x0102, 7)

# (name, Tern's message, the hand-derived hex, fields tshark must read or None)
MESSAGES = [
    ("proxy put request", M.message(M.MSG_PROXY_PUT_REQ, dst=0x0203, name1=b"a.txt",
                                    name2=b"b"),
     ID + "00 02 02 03 05 61 2E 74 78 74 01 62",
     {"cfdp.proxy_msg_type": "0", "cfdp.src_file_name": "a.txt",
      "cfdp.dst_file_name": "b"}),
    ("proxy message to user", M.message(M.MSG_PROXY_MSG_TO_USER, data=b"hi"),
     ID + "01 02 68 69", {"cfdp.proxy_msg_type": "1", "cfdp.message_to_user": "6869"}),
    ("proxy filestore request", M.message(M.MSG_PROXY_FS_REQ, fs=RENAME),
     ID + "02 06 20 01 78 02 79 7A",
     {"cfdp.proxy_msg_type": "2", "cfdp.action_code": "2", "cfdp.first_file_name": "x",
      "cfdp.second_file_name": "yz"}),
    ("proxy fault handler override",
     M.message(M.MSG_PROXY_FAULT_HANDLER, condition=8, handler=4), ID + "03 84",
     {"cfdp.proxy_msg_type": "3", "cfdp.condition_code": "8", "cfdp.handler_code": "4"}),
    ("proxy transmission mode", M.message(M.MSG_PROXY_TX_MODE, mode=M.UNACKNOWLEDGED),
     ID + "04 01", {"cfdp.proxy_msg_type": "4", "cfdp.proxy_trans_mode": "0x01"}),
    ("proxy segmentation control", M.message(M.MSG_PROXY_SEG_CTRL, flag=1),
     ID + "06 01", {"cfdp.proxy_msg_type": "6", "cfdp.proxy_segment_control": "0x01"}),
    ("proxy put response", M.message(M.MSG_PROXY_PUT_RESP, delivery=1, file_status=2),
     ID + "07 06",
     {"cfdp.proxy_msg_type": "7", "cfdp.condition_code": "0",
      "cfdp.proxy_delivery_code": "1", "cfdp.file_status": "2"}),
    ("proxy filestore response", M.message(M.MSG_PROXY_FS_RESP, fs=DELETE_NO_FILE),
     ID + "08 04 11 01 66 00",
     {"cfdp.proxy_msg_type": "8", "cfdp.action_code": "1", "cfdp.first_file_name": "f"}),
    ("proxy put cancel", M.message(M.MSG_PROXY_PUT_CANCEL), ID + "09", None),
    ("originating transaction ID", M.message(M.MSG_ORIGINATING_TID, tid=(5, 0x1234)),
     ID + "0A 01 05 12 34", {"cfdp.proxy_msg_type": "10"}),
    ("directory listing request",
     M.message(M.MSG_DIR_LIST_REQ, name1=b"d", name2=b"l.txt"),
     ID + "10 01 64 05 6C 2E 74 78 74",
     {"cfdp.proxy_msg_type": "16", "cfdp.directory_name": "d",
      "cfdp.directory_file_name": "l.txt"}),
    ("directory listing response, successful",
     M.message(M.MSG_DIR_LIST_RESP, name1=b"d", name2=b"l.txt", ok=1),
     ID + "11 00 01 64 05 6C 2E 74 78 74",
     {"cfdp.proxy_msg_type": "17", "cfdp.listing_resp_code": "0",
      "cfdp.directory_name": "d", "cfdp.directory_file_name": "l.txt"}),
    ("directory listing response, unsuccessful",
     M.message(M.MSG_DIR_LIST_RESP, name1=b"d", name2=b"l.txt", ok=0),
     ID + "11 80 01 64 05 6C 2E 74 78 74",
     {"cfdp.proxy_msg_type": "17", "cfdp.listing_resp_code": "1"}),
    ("remote status report request",
     M.message(M.MSG_STATUS_REPORT_REQ, tid=TID, name1=b"r"), ID + "20 10 01 02 07 01 72",
     {"cfdp.proxy_msg_type": "32", "cfdp.report_file_name": "r"}),
    ("remote status report response",
     M.message(M.MSG_STATUS_REPORT_RESP, tid=TID, txn_status=1, ok=1),
     ID + "21 41 10 01 02 07", None),
    ("remote suspend request", M.message(M.MSG_SUSPEND_REQ, tid=TID),
     ID + "30 10 01 02 07", {"cfdp.proxy_msg_type": "48"}),
    ("remote suspend response",
     M.message(M.MSG_SUSPEND_RESP, tid=TID, suspended=1, txn_status=1),
     ID + "31 A0 10 01 02 07", None),
    ("remote resume request", M.message(M.MSG_RESUME_REQ, tid=TID),
     ID + "38 10 01 02 07", {"cfdp.proxy_msg_type": "56"}),
    ("remote resume response", M.message(M.MSG_RESUME_RESP, tid=TID, txn_status=2),
     ID + "39 40 10 01 02 07", None),
]


def test_messages_are_the_hand_derived_bytes_and_decode_back():
    for name, msg, hexstr, _ in MESSAGES:
        assert msg == bytes.fromhex(hexstr.replace(" ", "")), name
        d = cfdp.decode_message(msg)
        assert d["type"] == msg[4], name
        assert cfdp.msg_type_name(d["type"]) == name.split(",")[0], name
    d = cfdp.decode_message(MESSAGES[0][1])
    assert (d["dst"], d["name1"], d["name2"]) == ((0x0203, 2), b"a.txt", b"b")
    d = cfdp.decode_message(MESSAGES[16][1])
    assert (d["suspended"], d["txn_status"], d["tid"]) == (1, 1, (0x0102, 7, 2, 1))
    d = cfdp.decode_message(MESSAGES[2][1])
    assert (d["fs"]["action"], d["fs"]["first"], d["fs"]["second"]) == (2, b"x", b"yz")
    with pytest.raises(cfdp.CfdpError) as e:  # an ordinary message to user
        cfdp.decode_message(b"hello")
    assert "not a reserved CFDP message" in e.value.why
    with pytest.raises(cfdp.CfdpError) as e:
        cfdp.decode_message(bytes.fromhex(ID.replace(" ", "")) + b"\x00\x09" + b"\x01" * 9)
    assert e.value.why == "proxy put request: destination entity ID not 1-8 bytes"
    with pytest.raises(cfdp.CfdpError) as e:
        cfdp.message(cfdp.MSG_PROXY_FAULT_HANDLER, condition=12, handler=1)
    assert "reserved" in e.value.why


def test_tshark_reads_tern_reserved_messages(tmp_path):
    if not shutil.which("tshark"):
        pytest.skip("tshark is not installed (apt-get install tshark to check the wire "
                    "format against an independent dissector)")
    h = cfdp.Header(src=1, dst=2, tsn=7)
    frames = []
    shown = [(name, msg, want) for name, msg, _, want in MESSAGES if want is not None]
    for _, msg, _ in shown:
        pdu = cfdp.metadata(h, 0, b"", b"", options=[cfdp.msg_to_user(msg)])
        d = cfdp.decode(pdu)  # the codec carries it unchanged
        assert d["options"][0]["data"] == msg
        frames.append(wire.udp_frame(pdu, wire.PORT))
    pcap = str(tmp_path / "messages.pcap")
    wire.write_pcap(pcap, frames)
    decode = ["-d", f"udp.port=={wire.PORT},cfdp"]
    bad = wire.tshark(pcap, *decode, "-Y", wire.PROBLEMS)
    assert not bad, "tshark flags reserved messages:\n" + "\n".join(bad)
    names = sorted({f for _, _, want in shown for f in want})
    rows = wire.fields(pcap, decode, names)
    assert len(rows) == len(shown)
    for (name, _, want), row in zip(shown, rows):
        for f, v in want.items():
            assert row[f] == v, f"{name}: tshark reads {f} = {row[f]!r}, encoded {v!r}"
    print(f"tshark: {len(shown)} reserved CFDP messages with their fields as encoded")
