"""An independent TFRecord implementation for //runtime/input:tfrecord_test.

Written from TensorFlow's documentation of the format alone, with the
standard library only (no TensorFlow, no protobuf, no code shared with the
C++ reader), so that the C++ reader and writer are checked against a second
reading of the specification rather than against themselves:

  uint64 length (little endian)
  uint32 masked_crc32c(the 8 length bytes)
  bytes  data[length]
  uint32 masked_crc32c(data)

  masked_crc32c(x) = ((crc >> 15) | (crc << 17)) + 0xa282ead8  (mod 2**32)

CRC32C is computed bit by bit from the reflected Castagnoli polynomial
0x82F63B78. The tf.Example payloads are protobuf wire bytes encoded by hand
from tensorflow/core/example/{example,feature}.proto.

Usage:
  tfrecord_reference.py selftest
  tfrecord_reference.py write-examples PATH none|gzip|gzip-members
  tfrecord_reference.py read PATH none|gzip

write-examples writes the records of EXAMPLES (below); gzip-members splits
the compressed stream into two concatenated gzip members, as `cat a.gz
b.gz` makes. read checks every CRC and prints one line per record,
"<length>:<hex of the data>"; any damage is a message on stderr and exit
status 1.
"""

import gzip
import struct
import sys

# --- CRC32C -----------------------------------------------------------------

_POLY = 0x82F63B78  # CRC-32C (Castagnoli), reflected


def _make_table():
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ _POLY if crc & 1 else crc >> 1
        table.append(crc)
    return table


_TABLE = _make_table()


def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc32c(data):
    crc = crc32c(data)
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def selftest():
    # RFC 3720 B.4 and the usual check value.
    assert crc32c(b"123456789") == 0xE3069283, hex(crc32c(b"123456789"))
    assert crc32c(b"\x00" * 32) == 0x8A9136AA
    assert crc32c(b"\xff" * 32) == 0x62A8AB43
    assert crc32c(b"") == 0
    print("ok")


# --- TFRecord framing -------------------------------------------------------


def frame(record):
    header = struct.pack("<Q", len(record))
    return (header + struct.pack("<I", masked_crc32c(header)) + record +
            struct.pack("<I", masked_crc32c(record)))


def unframe(stream):
    """The records of an uncompressed TFRecord stream; ValueError on damage."""
    records = []
    at = 0
    while at < len(stream):
        if len(stream) - at < 12:
            raise ValueError("record %d at byte %d: truncated header" %
                             (len(records), at))
        header = stream[at:at + 8]
        (length,) = struct.unpack("<Q", header)
        (length_crc,) = struct.unpack("<I", stream[at + 8:at + 12])
        if length_crc != masked_crc32c(header):
            raise ValueError("record %d at byte %d: bad length CRC" %
                             (len(records), at))
        data = stream[at + 12:at + 12 + length]
        footer = stream[at + 12 + length:at + 16 + length]
        if len(data) != length or len(footer) != 4:
            raise ValueError("record %d at byte %d: truncated data" %
                             (len(records), at))
        if struct.unpack("<I", footer)[0] != masked_crc32c(data):
            raise ValueError("record %d at byte %d: bad data CRC" %
                             (len(records), at))
        records.append(data)
        at += 16 + length
    return records


# --- tf.Example wire format -------------------------------------------------


def varint(value):
    value &= (1 << 64) - 1  # int64 as protobuf encodes it: two's complement
    out = bytearray()
    while True:
        bits = value & 0x7F
        value >>= 7
        if value:
            out.append(bits | 0x80)
        else:
            out.append(bits)
            return bytes(out)


def length_delimited(field, payload):
    return varint(field << 3 | 2) + varint(len(payload)) + payload


def float_list_feature(values):  # Feature.float_list = 2, packed value = 1
    packed = struct.pack("<%df" % len(values), *values)
    return length_delimited(2, length_delimited(1, packed))


def int64_list_feature(values):  # Feature.int64_list = 3, packed value = 1
    packed = b"".join(varint(v) for v in values)
    return length_delimited(3, length_delimited(1, packed))


def bytes_list_feature(values):  # Feature.bytes_list = 1, value = 1
    return length_delimited(1, b"".join(length_delimited(1, v)
                                        for v in values))


def example(features):
    """Example{features = 1: Features{feature = 1: map<string, Feature>}}."""
    entries = b""
    for key, feature in features:
        entry = length_delimited(1, key.encode()) + length_delimited(2, feature)
        entries += length_delimited(1, entry)
    return length_delimited(1, entries)


def examples():
    """The records write-examples writes; tfrecord_test.cc expects these.

    Record i < 4 holds label [i + 0.5], dense [i, -1.25, 1e6], ids
    [i, -i - 1, 2**40 + i] and name [b"row-<i>", b""]; record 4 is an empty
    Example (zero bytes).
    """
    records = []
    for i in range(4):
        records.append(example([
            ("label", float_list_feature([i + 0.5])),
            ("dense", float_list_feature([float(i), -1.25, 1e6])),
            ("ids", int64_list_feature([i, -i - 1, 2**40 + i])),
            ("name", bytes_list_feature([b"row-%d" % i, b""])),
        ]))
    records.append(b"")
    return records


# --- Commands ---------------------------------------------------------------


def write_examples(path, compression):
    stream = b"".join(frame(r) for r in examples())
    if compression == "none":
        data = stream
    elif compression == "gzip":
        data = gzip.compress(stream, mtime=0)
    elif compression == "gzip-members":
        cut = len(stream) // 2 + 3  # inside a record, on purpose
        data = (gzip.compress(stream[:cut], mtime=0) +
                gzip.compress(stream[cut:], mtime=0))
    else:
        raise SystemExit("unknown compression %r" % compression)
    with open(path, "wb") as f:
        f.write(data)


def read(path, compression):
    with open(path, "rb") as f:
        data = f.read()
    if compression == "gzip":
        data = gzip.decompress(data)
    elif compression != "none":
        raise SystemExit("unknown compression %r" % compression)
    try:
        records = unframe(data)
    except ValueError as e:
        sys.stderr.write("%s: %s\n" % (path, e))
        sys.exit(1)
    for record in records:
        print("%d:%s" % (len(record), record.hex()))


def main(argv):
    if argv[1:] == ["selftest"]:
        selftest()
    elif len(argv) == 4 and argv[1] == "write-examples":
        write_examples(argv[2], argv[3])
    elif len(argv) == 4 and argv[1] == "read":
        read(argv[2], argv[3])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
