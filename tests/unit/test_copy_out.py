"""COPY ... TO STDOUT encoding: the column-at-a-time text path writes exactly what the
row-at-a-time path (PostgreSQL's CopyOneRowTo rules) writes, and binary framing."""

from __future__ import annotations

import datetime
import decimal
import struct

import pyarrow as pa

from planner.types import BY_NAME, SqlType
from server.copy_format import CopyOptions
from server.copy_out import BINARY_SIGNATURE, CopyOut, copy_data

TYPES = [SqlType(BY_NAME[n]) for n in ("integer", "text", "bytea", "numeric", "date", "double precision")]
TABLE = pa.table({
    "a": pa.array([1, None, -7], pa.int32()),
    "b": ["tab\there", "bs\\ bell\b ff\f vt\v cr\r nl\n", None],
    "c": [b"\x00\x01\\", None, b""],
    "d": pa.array([decimal.Decimal("1.5"), None, decimal.Decimal("-0.001")], pa.decimal128(20, 3)),
    "e": [datetime.date(2024, 2, 29), None, datetime.date(1, 1, 1)],
    "f": [float("nan"), None, -0.0],
})


def _rows(encoder: CopyOut, table: pa.Table) -> bytes:
    rows = list(zip(*(c.to_pylist() for c in table.columns)))
    return b"".join(copy_data(encoder.row(r)) for r in rows)


def test_vectorized_text_matches_the_row_encoder():
    encoder = CopyOut(CopyOptions(), TYPES)
    assert encoder.messages(TABLE) == _rows(encoder, TABLE)


def test_text_escapes_what_postgresql_escapes():
    line = CopyOut(CopyOptions(), TYPES).messages(TABLE.slice(0, 2))
    # bytea's \x form has its backslash doubled; \b \f \v are escaped as CopyAttributeOutText does.
    assert b"\\\\x00015c" in line
    assert b"bs\\\\ bell\\b ff\\f vt\\v cr\\r nl\\n" in line
    assert b"tab\\there" in line


def test_binary_header_travels_with_the_first_row_and_the_trailer_ends():
    encoder = CopyOut(CopyOptions(format="binary"), TYPES[:1])
    assert encoder.header(["a"]) == b""
    table = pa.table({"a": pa.array([5, None], pa.int32())})
    out = encoder.messages(table) + encoder.trailer()
    first = BINARY_SIGNATURE + struct.pack("!ii", 0, 0) + struct.pack("!hi", 1, 4) + struct.pack("!i", 5)
    assert out == copy_data(first) + copy_data(struct.pack("!hi", 1, -1)) + copy_data(struct.pack("!h", -1))


def test_binary_without_rows_sends_header_and_trailer_together():
    encoder = CopyOut(CopyOptions(format="binary"), TYPES[:1])
    encoder.header(["a"])
    assert encoder.trailer() == copy_data(BINARY_SIGNATURE + struct.pack("!ii", 0, 0) + struct.pack("!h", -1))


def test_csv_with_header_goes_row_by_row():
    encoder = CopyOut(CopyOptions(format="csv", header=True), TYPES[:2])
    table = pa.table({"a": pa.array([1], pa.int32()), "b": ['say "hi", then go']})
    assert encoder.header(["a", "b"]) == copy_data(b"a,b\n")
    assert encoder.messages(table) == copy_data(b'1,"say ""hi"", then go"\n')
