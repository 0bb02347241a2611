"""The codecs of libterncommon, driven from Python through ctypes: proves the
C library -> ctypes -> pytest path and checks the standards' vectors again."""
import os
import random
import subprocess
import sys
import textwrap

import pytest

import tern
from tern import TernError, codec, errors


@pytest.mark.parametrize("value,hexstr", [
    (0, "00"), (0x7F, "7f"), (0xABC, "953c"), (0x1234, "a434"), (0x4234, "818434"),
    (2**64 - 1, "81ffffffffffffffff7f"),
])
def test_sdnv_rfc6256(value, hexstr):
    assert codec.sdnv_encode(value).hex() == hexstr
    assert codec.sdnv_decode(bytes.fromhex(hexstr) + b"\x55") == (value, len(hexstr) // 2)


def test_sdnv_errors_carry_codes():
    with pytest.raises(TernError) as ei:
        codec.sdnv_decode(b"\x81\x84")
    assert ei.value.rc == errors.ETRUNCATED
    assert "input truncated" in str(ei.value)
    with pytest.raises(TernError) as ei:
        codec.sdnv_decode(bytes.fromhex("82808080808080808000"))
    assert ei.value.rc == errors.EOVERFLOW


def test_crc_check_values():
    assert codec.crc16_x25(b"123456789") == 0x906E
    assert codec.crc32c(b"123456789") == 0xE3069283
    assert codec.crc32(b"123456789") == 0xCBF43926
    # Running values chain: two pieces give the CRC of the whole.
    assert codec.crc32c(b"56789", codec.crc32c(b"1234")) == 0xE3069283
    assert codec.crc16_x25(b"6789", codec.crc16_x25(b"12345")) == 0x906E


# RFC 8949 Appendix A, both directions where the encoder makes the same bytes.
VECTORS = [
    (0, "00"), (23, "17"), (24, "1818"), (1000000, "1a000f4240"),
    (18446744073709551615, "1bffffffffffffffff"), (-1, "20"), (-1000, "3903e7"),
    (-18446744073709551616, "3bffffffffffffffff"),
    (0.0, "f90000"), (-0.0, "f98000"), (1.5, "f93e00"), (65504.0, "f97bff"),
    (100000.0, "fa47c35000"), (1.1, "fb3ff199999999999a"), (1.0e300, "fb7e37e43c8800759c"),
    (5.960464477539063e-8, "f90001"), (float("inf"), "f97c00"), (-4.0, "f9c400"),
    (False, "f4"), (True, "f5"), (None, "f6"), (codec.UNDEFINED, "f7"),
    (codec.Simple(16), "f0"), (codec.Simple(255), "f8ff"),
    (codec.Tag(1, 1363896240), "c11a514b67b0"),
    (codec.Tag(23, bytes.fromhex("01020304")), "d74401020304"),
    (b"", "40"), (bytes.fromhex("01020304"), "4401020304"), ("", "60"), ("a", "6161"),
    ("IETF", "6449455446"), ("\u00fc", "62c3bc"), ("\u6c34", "63e6b0b4"),
    ("\U00010151", "64f0908591"), ([], "80"), ([1, 2, 3], "83010203"),
    ([1, [2, 3], [4, 5]], "8301820203820405"), (list(range(1, 26)),
                                                "98190102030405060708090a0b0c0d0e0f101112131415161718181819"),
    ({}, "a0"), ({1: 2, 3: 4}, "a201020304"), ({"a": 1, "b": [2, 3]}, "a26161016162820203"),
    (["a", {"b": "c"}], "826161a161626163"),
]


@pytest.mark.parametrize("value,hexstr", VECTORS, ids=[v[1] for v in VECTORS])
def test_cbor_rfc8949_vectors(value, hexstr):
    data = bytes.fromhex(hexstr)
    assert codec.cbor_dumps(value).hex() == hexstr
    back = codec.cbor_loads(data)
    if isinstance(value, float):
        assert back == value and str(back)[0] == str(value)[0]  # keeps -0.0's sign
    else:
        assert back == value


@pytest.mark.parametrize("hexstr,want", [
    ("5f42010243030405ff", b"\x01\x02\x03\x04\x05"),
    ("7f657374726561646d696e67ff", "streaming"),
    ("9fff", []), ("9f018202039f0405ffff", [1, [2, 3], [4, 5]]),
    ("bf61610161629f0203ffff", {"a": 1, "b": [2, 3]}),
])
def test_cbor_indefinite_forms_decode(hexstr, want):
    assert codec.cbor_loads(bytes.fromhex(hexstr)) == want


def test_cbor_diag_notation():
    assert codec.cbor_diag(bytes.fromhex("9f018202039f0405ffff")) == "[_ 1, [2, 3], [_ 4, 5]]"
    assert codec.cbor_diag(bytes.fromhex("5f42010243030405ff")) == "(_ h'0102', h'030405')"
    assert codec.cbor_diag(bytes.fromhex("3bffffffffffffffff")) == "-18446744073709551616"
    assert codec.cbor_diag(bytes.fromhex("a26161016162820203")) == '{"a": 1, "b": [2, 3]}'


@pytest.mark.parametrize("hexstr,rc", [
    ("1c", errors.EMALFORMED),          # reserved additional information 28
    ("ff", errors.EMALFORMED),          # break outside an indefinite item
    ("5f6161ff", errors.EMALFORMED),    # text chunk inside a byte string
    ("1b000000", errors.ETRUNCATED),    # argument cut short
    ("5bffffffffffffffff00", errors.ETRUNCATED),  # length beyond the input
    ("8301", errors.ETRUNCATED),        # array missing items
    ("0000", errors.EMALFORMED),        # bytes after the item
    ("81" * 65 + "00", errors.EDEPTH),  # nested past the limit
])
def test_cbor_malformed_is_rejected_with_its_code(hexstr, rc):
    assert codec.cbor_wellformed(bytes.fromhex(hexstr)) == rc
    with pytest.raises(TernError) as ei:
        codec.cbor_loads(bytes.fromhex(hexstr))
    assert ei.value.rc == rc


def test_cbor_random_roundtrip():
    rng = random.Random(20261130)

    def gen(depth=0):
        t = rng.randrange(8 if depth < 4 else 5)
        if t == 0:
            return rng.randrange(-(2**64), 2**64)
        if t == 1:
            return rng.randbytes(rng.randrange(300))
        if t == 2:
            return "".join(chr(rng.choice([rng.randrange(32, 127), rng.randrange(0xA0, 0xD7FF)]))
                           for _ in range(rng.randrange(40)))
        if t == 3:
            return rng.choice([True, False, None, rng.random() * 1e6])
        if t == 4:
            return rng.randrange(24)
        if t == 5:
            return [gen(depth + 1) for _ in range(rng.randrange(6))]
        if t == 6:
            return {rng.randrange(1000): gen(depth + 1) for _ in range(rng.randrange(6))}
        return codec.Tag(rng.randrange(2**32), gen(depth + 1))

    for _ in range(500):
        v = gen()
        data = codec.cbor_dumps(v)
        assert codec.cbor_wellformed(data) == 0
        assert codec.cbor_loads(data) == v
        # Every strict prefix is refused as truncated, never crashes.
        cut = rng.randrange(len(data))
        assert codec.cbor_wellformed(data[:cut]) == errors.ETRUNCATED


def test_abi_mismatch_is_a_clear_error():
    code = textwrap.dedent("""
        import tern._lib as L
        L._loaded.clear()  # importing tern loaded it once already
        L.ABI["common"] = 999
        try:
            L.load("common")
        except L.TernLibraryError as e:
            print("ERR", e)
    """)
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(tern.__file__)))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env=env).stdout
    assert out.startswith("ERR ") and "has ABI version 1, this Python package expects 999" in out
