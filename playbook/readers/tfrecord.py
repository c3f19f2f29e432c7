"""TFRecord framing and the protobuf wire format, as TensorBoard event files use them (tfevents reads the Events):
each record is a little-endian uint64 length, the masked CRC-32C of those 8 bytes, the data, and the data's masked
CRC-32C."""

from __future__ import annotations

import struct

from playbook.core.errors import InputError
from playbook.readers import textio

MAX_RECORD_BYTES = 256 << 20  # one Event longer than this is not a scalar summary: the file is read up to it


# --------------------------------------------------------------------------------------------------------------
# TFRecord framing and the CRC-32C (Castagnoli) of its length field

def _crc32c_table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC_TABLE = _crc32c_table()


def masked_crc32c(data: bytes) -> int:
    """TFRecord's masked CRC-32C of `data` (tensorflow/core/lib/hash/crc32c.h: rotate right by 15, add a
    constant)."""
    crc = 0xFFFFFFFF
    for b in data:
        crc = _CRC_TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    crc ^= 0xFFFFFFFF
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def records(fh, src: str, problems: list[str]):
    """Yield (record number, Event bytes); a damaged or cut frame ends the iteration with a reason in `problems`."""
    number, total, budget = 0, 0, textio.max_bytes()
    while True:
        head = fh.read(12)
        if not head:
            return
        number += 1
        if len(head) < 12:
            problems.append(f"record {number}: the file ends inside a record's header (cut while written)")
            return
        length, crc = struct.unpack("<QI", head)
        if masked_crc32c(head[:8]) != crc:
            problems.append(f"record {number}: its length fails its checksum (damaged); the rest of the file is "
                            "not read")
            return
        if length > MAX_RECORD_BYTES:
            problems.append(f"record {number}: {length} bytes long, more than {MAX_RECORD_BYTES >> 20} MiB; the "
                            "rest of the file is not read")
            return
        total += length + 16
        if total > budget:
            raise InputError(f"{src}: more than {budget >> 20} MiB of events: refusing (raise PLAYBOOK_MAX_BYTES "
                             "to read it)")
        data = fh.read(length)
        tail = fh.read(4)
        if len(data) < length or len(tail) < 4:
            problems.append(f"record {number}: the file ends inside it (cut while written)")
            return
        yield number, data


# --------------------------------------------------------------------------------------------------------------
# Protocol-buffer wire format: just what the Event, Summary.Value and TensorProto scalars need

def varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint longer than 10 bytes")


def fields(buf: bytes):
    """Yield (field number, wire type, value) of a message: an int (varint), bytes (length-delimited, fixed64 as
    8 bytes, fixed32 as 4); ValueError (or IndexError) on damage."""
    pos, end = 0, len(buf)
    while pos < end:
        key, pos = varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = varint(buf, pos)
        elif wire == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == 2:
            size, pos = varint(buf, pos)
            value, pos = buf[pos:pos + size], pos + size
        elif wire == 5:
            value, pos = buf[pos:pos + 4], pos + 4
        else:
            raise ValueError(f"wire type {wire}")
        if pos > end:
            raise ValueError("a field runs past its message")
        yield number, wire, value


def signed(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v
