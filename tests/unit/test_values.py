"""Value codecs: exact PostgreSQL 15 wire forms, parameter parsing, DataRow assembly.

Expected strings and bytes below were taken from a real PostgreSQL 15 server
(TimeZone UTC, DateStyle ISO, IntervalStyle postgres).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import struct
import uuid
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from planner.codecs import datarow
from planner.codecs.arrow_out import (
    encode_binary_arrow,
    encode_binary_column,
    encode_text_arrow,
    encode_text_column,
)
from planner.codecs.binary_in import decode_binary
from planner.codecs.binary_out import encode_binary
from planner.codecs.datarow import encode_rows
from planner.codecs.interval import interval_parse, interval_text
from planner.codecs.text_in import decode_text
from planner.codecs.text_out import encode_text
from planner.errors import SqlError
from planner.types import BY_NAME, SqlType, lookup

UTC = dt.UTC


def T(name: str, typmod: int = -1, array: bool = False) -> SqlType:
    base = BY_NAME.get(name) or lookup(name)
    assert base is not None, name
    return SqlType(base, typmod, array)


def numeric(p: int, s: int, array: bool = False) -> SqlType:
    return T("numeric", ((p << 16) | s) + 4, array)


def varchar(n: int) -> SqlType:
    return T("varchar", n + 4)


def bpchar(n: int) -> SqlType:
    return T("character", n + 4)


def text(t: SqlType, v: object) -> str:
    return encode_text(t, v).decode()


# ---------------------------------------------------------------------------
# Exact text output
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0.1, "0.1"),
        (1e20, "1e+20"),
        (1.5e-07, "1.5e-07"),
        (1e15, "1e+15"),
        (999999999999999.0, "999999999999999"),
        (1234567890123456.0, "1.234567890123456e+15"),
        (123.0, "123"),
        (-0.0, "-0"),
        (0.0, "0"),
        (1e-4, "0.0001"),
        (9.99e-05, "9.99e-05"),
        (123456789012345678.0, "1.2345678901234568e+17"),
        # Shortest repr lies exactly on a rounding midpoint: PostgreSQL's Ryu
        # refuses it where Python's repr takes it.
        (-2.0034855448587448e16, "-2.0034855448587448e+16"),
        (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (0.30000000000000004, "0.30000000000000004"),
        (float("nan"), "NaN"),
        (float("inf"), "Infinity"),
        (float("-inf"), "-Infinity"),
    ],
)
def test_float8_text(value: float, expected: str) -> None:
    assert text(T("float8"), value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0.1, "0.1"),
        (1e6, "1e+06"),
        (999999.0, "999999"),
        (1e-4, "0.0001"),
        (9.999e-05, "9.999e-05"),
        (1234567.0, "1.234567e+06"),
        (16777216.0, "1.6777216e+07"),
        (3.4028234663852886e38, "3.4028235e+38"),
        (1e-45, "1e-45"),
        (34346968.0, "3.4346968e+07"),  # midpoint case, see float8
        (-0.0, "-0"),
        (float("nan"), "NaN"),
        (float("-inf"), "-Infinity"),
    ],
)
def test_float4_text(value: float, expected: str) -> None:
    assert text(T("float4"), value) == expected


@pytest.mark.parametrize(
    ("t", "value", "expected"),
    [
        (T("numeric"), Decimal("1.5000000000"), "1.5"),
        (T("numeric"), Decimal("2.0000000000"), "2"),
        (T("numeric"), Decimal("0E-10"), "0"),
        (T("numeric"), Decimal("-0E-10"), "0"),
        (T("numeric"), Decimal(100), "100"),
        (T("numeric"), Decimal("1E+3"), "1000"),
        (T("numeric"), Decimal("0.0000001000"), "0.0000001"),
        (T("numeric"), Decimal("-12345678901234567890123456.1234567890"),
         "-12345678901234567890123456.123456789"),
        (T("numeric"), Decimal("NaN"), "NaN"),
        (T("numeric"), Decimal("Infinity"), "Infinity"),
        (T("numeric"), Decimal("-Infinity"), "-Infinity"),
        (numeric(10, 2), Decimal("1.5"), "1.50"),
        (numeric(10, 2), Decimal(0), "0.00"),
        (numeric(5, 2), Decimal("-0.001"), "0.00"),
        (numeric(5, 2), Decimal("2.345"), "2.35"),  # half away from zero
        (numeric(5, 2), Decimal("-2.345"), "-2.35"),
        (numeric(5, 0), Decimal(7), "7"),
    ],
)
def test_numeric_text(t: SqlType, value: Decimal, expected: str) -> None:
    assert text(t, value) == expected


@pytest.mark.parametrize(
    ("t", "value", "expected_hex"),
    [
        (T("numeric"), Decimal("0.0001"), "0001ffff000000040001"),
        (T("numeric"), Decimal("0.00001"), "0001fffe0000000503e8"),
        (numeric(5, 2), Decimal(0), "0000000000000002"),
        (T("numeric"), Decimal("-12345.678"), "0003000140000003000109291a7c"),
        (T("numeric"), Decimal("NaN"), "00000000c0000000"),
        (T("numeric"), Decimal("-Infinity"), "00000000f0000020"),
        (T("numeric"), Decimal("Infinity"), "00000000d0000020"),
        (T("numeric"), Decimal(10000), "00010001000000000001"),
        (T("numeric"), Decimal("1E+20"), "00010005000000000001"),
        (T("numeric"), Decimal("1.5000000000"), "000200000000000100011388"),
    ],
)
def test_numeric_binary(t: SqlType, value: Decimal, expected_hex: str) -> None:
    assert encode_binary(t, value).hex() == expected_hex


def test_temporal_text() -> None:
    ts = dt.datetime(2024, 1, 2, 3, 4, 5, 123456)
    assert text(T("timestamptz"), ts.replace(tzinfo=UTC)) == "2024-01-02 03:04:05.123456+00"
    plus2 = dt.timezone(dt.timedelta(hours=2))
    assert text(T("timestamptz"), dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=plus2)) == \
        "2024-01-02 01:04:05+00"
    assert text(T("timestamp"), dt.datetime(2024, 1, 2, 3, 4, 5)) == "2024-01-02 03:04:05"
    assert text(T("timestamp"), dt.datetime(2024, 1, 2, 3, 4, 5, 500000)) == "2024-01-02 03:04:05.5"
    assert text(T("timestamp"), dt.datetime(999, 1, 1)) == "0999-01-01 00:00:00"
    assert text(T("time"), dt.time(3, 4, 5, 500000)) == "03:04:05.5"
    assert text(T("time"), dt.time(0, 0)) == "00:00:00"
    assert text(T("date"), dt.date(2024, 1, 2)) == "2024-01-02"
    assert text(T("date"), dt.date(50, 3, 4)) == "0050-03-04"


def test_temporal_text_bc_and_far_future_vectorized() -> None:
    first_day = -719162  # 0001-01-01 in days since 1970
    dates = pa.array([first_day - 1, first_day, 2932897], pa.date32())
    assert encode_text_column(T("date"), dates) == [b"0001-12-31 BC", b"0001-01-01", b"10000-01-01"]
    us = first_day * 86_400_000_000 - 1
    ts = pa.array([us], pa.timestamp("us"))
    assert encode_text_column(T("timestamp"), ts) == [b"0001-12-31 23:59:59.999999 BC"]
    tstz = pa.array([us], pa.timestamp("us", tz="UTC"))
    assert encode_text_column(T("timestamptz"), tstz) == [b"0001-12-31 23:59:59.999999+00 BC"]


def test_misc_text() -> None:
    assert encode_text(T("bool"), True) == b"t"
    assert encode_text(T("bool"), False) == b"f"
    assert encode_text(T("bytea"), b"\x01\x02\xff") == b"\\x0102ff"
    assert encode_text(T("bytea"), b"") == b"\\x"
    assert encode_text(bpchar(3), "a") == b"a  "
    assert encode_text(T("int8"), 2**63 - 1) == b"9223372036854775807"
    assert encode_text(T("oid"), 4294967295) == b"4294967295"


@pytest.mark.parametrize(
    ("t", "value", "expected"),
    [
        (T("text", array=True), ["a b", "", None, "null", "x", 'q"\\'],
         '{"a b","",NULL,"null",x,"q\\"\\\\"}'),
        (T("text", array=True), ["{}", 'a"b', "é", "tab\there", "NuLl", "a,b"],
         '{"{}","a\\"b",é,"tab\there","NuLl","a,b"}'),
        (T("bytea", array=True), [b"\x01"], '{"\\\\x01"}'),
        (T("timestamp", array=True), [dt.datetime(2024, 1, 2, 3, 4, 5)], '{"2024-01-02 03:04:05"}'),
        (T("float8", array=True), [1.5, float("nan")], "{1.5,NaN}"),
        (T("bool", array=True), [True, False], "{t,f}"),
        (numeric(5, 2, array=True), [Decimal("1.5"), Decimal(2)], "{1.50,2.00}"),
        (T("int4", array=True), [[1, 2], [3, None]], "{{1,2},{3,NULL}}"),
        (T("int4", array=True), [], "{}"),
    ],
)
def test_array_text(t: SqlType, value: list, expected: str) -> None:
    assert text(t, value) == expected


@pytest.mark.parametrize(
    ("t", "value", "expected_hex"),
    [
        (T("int4", array=True), [1, None, 3],
         "00000001000000010000001700000003000000010000000400000001ffffffff0000000400000003"),
        (T("int4", array=True), [], "000000000000000000000017"),
        (T("int4", array=True), [[1, 2], [3, 4]],
         ("000000020000000000000017000000020000000100000002000000010000000400000001"
          "000000040000000200000004000000030000000400000004")),
        (T("text", array=True), ["a", None, "bc"],
         "00000001000000010000001900000003000000010000000161ffffffff000000026263"),
        (T("text", array=True), [], "000000000000000000000019"),
        (T("float8", array=True), [[1.5, None], [2.0, 3.0]],
         ("0000000200000001000002bd00000002000000010000000200000001000000083ff8000000000000"
          "ffffffff000000084000000000000000000000084008000000000000")),
        (T("timestamp", array=True), [dt.datetime(2024, 1, 2, 3, 4, 5)],
         "00000001000000000000045a0000000100000001000000080002b0ec8515f340"),
    ],
)
def test_array_binary(t: SqlType, value: list, expected_hex: str) -> None:
    assert encode_binary(t, value).hex() == expected_hex
    assert decode_binary(t, bytes.fromhex(expected_hex)) == value


def test_ragged_array_rejected() -> None:
    with pytest.raises(SqlError) as e:
        encode_binary(T("int4", array=True), [[1, 2], [3]])
    assert e.value.sqlstate == "2202E"


@pytest.mark.parametrize(
    ("value", "expected_hex"),
    [
        ("1 year 2 mons 3 days 04:05:06.5", "000000036c9361a0000000030000000e"),
        ("-00:00:01", "fffffffffff0bdc00000000000000000"),
        ("00:00:00", "00000000000000000000000000000000"),
        ("-1 days +02:00:00", "00000001ad274800ffffffff00000000"),
        ("-1 years -2 mons", "000000000000000000000000fffffff2"),
    ],
)
def test_interval_binary(value: str, expected_hex: str) -> None:
    t = T("interval")
    assert encode_binary(t, value).hex() == expected_hex
    assert decode_binary(t, bytes.fromhex(expected_hex)) == value


@pytest.mark.parametrize(
    ("given", "canonical"),
    [
        ("1 day 3 hours", "1 day 03:00:00"),
        ("1.5 months", "1 mon 15 days"),
        ("-1 day +2 hours", "-1 days +02:00:00"),
        ("1 day -2 hours", "1 day -02:00:00"),
        ("1 year -2 mons", "10 mons"),
        ("@ 1 minute ago", "-00:01:00"),
        ("P1Y2M3DT4H5M6.5S", "1 year 2 mons 3 days 04:05:06.5"),
        ("1:2.5", "00:01:02.5"),
        ("5", "00:00:05"),
        ("1 2:03:04", "1 day 02:03:04"),
        ("1-2", "1 year 2 mons"),
        ("1.5 years", "1 year 6 mons"),
        ("1.5 weeks", "10 days 12:00:00"),
        ("-1.5 days", "-1 days -12:00:00"),
        ("100:00:00", "100:00:00"),
        ("1 day 1 second ago", "-1 days -00:00:01"),
        ("0.5 seconds", "00:00:00.5"),
        ("1.5 ms", "00:00:00.0015"),
        ("3 mins 4 secs", "00:03:04"),
        ("2 millenniums", "2000 years"),
        ("1 microseconds", "00:00:00.000001"),
        ("-1 years -2 mons", "-1 years -2 mons"),
    ],
)
def test_interval_input_canonicalized(given: str, canonical: str) -> None:
    assert decode_text(T("interval"), given.encode()) == canonical


def test_jsonb_normalized() -> None:
    doc = '{"b":1, "aa": [1, 2.50, 1e2, -0, "x\\ny\\u0001"], "a": {}, "a": null}'
    assert decode_text(T("jsonb"), doc.encode()) == \
        '{"a": null, "b": 1, "aa": [1, 2.50, 100, 0, "x\\ny\\u0001"]}'
    assert decode_text(T("jsonb"), b'"\\ud83d\\ude00"') == '"\U0001f600"'
    assert decode_text(T("jsonb"), b'"\\u00e9/\\\\"') == '"\u00e9/\\\\"'
    assert decode_text(T("jsonb"), b"[1.0e1, 1E-2, -0.0]") == "[10, 0.01, 0.0]"
    assert decode_text(T("jsonb"), b'{"": 1, "aaa": 2, "b": 3, "\xc3\xa9": 4}') == \
        '{"": 1, "b": 3, "\u00e9": 4, "aaa": 2}'
    # json keeps the text as given
    assert decode_text(T("json"), b'{"b":1,  "a":2}') == '{"b":1,  "a":2}'
    assert encode_binary(T("jsonb"), '{"a": 1}') == b'\x01{"a": 1}'
    assert decode_binary(T("jsonb"), b'\x01{"a":1}') == '{"a": 1}'


# ---------------------------------------------------------------------------
# Text input
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("t", "data", "expected"),
    [
        (T("bool"), " TRUE ", True), (T("bool"), "yes", True), (T("bool"), "on", True),
        (T("bool"), "1", True), (T("bool"), "tr", True), (T("bool"), "of", False),
        (T("bool"), "off", False), (T("bool"), "n", False), (T("bool"), "0", False),
        (T("int2"), " 12 ", 12), (T("int2"), "-32768", -32768), (T("int4"), "+5", 5),
        (T("int8"), "-9223372036854775808", -(2**63)), (T("oid"), "-1", 4294967295),
        (T("float8"), " 1e308 ", 1e308), (T("float8"), "-Infinity", float("-inf")),
        (T("float8"), "inf", float("inf")), (T("float8"), ".5", 0.5), (T("float8"), "1.", 1.0),
        (T("float8"), "0x1.8p3", 12.0), (T("float8"), "4.9e-324", 5e-324),
        (T("float4"), "0.1", float(np.float32(0.1))),
        (T("numeric"), " 1.50 ", Decimal("1.50")), (T("numeric"), "1e5", Decimal("1e5")),
        (T("numeric"), "-0.000", Decimal("0.000")), (T("numeric"), "-inf", Decimal("-Infinity")),
        (numeric(5, 2), "123.456", Decimal("123.46")), (numeric(5, 2), "-0.001", Decimal("0.00")),
        (numeric(5, 2), "999.994", Decimal("999.99")),
        (T("uuid"), "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
        (T("uuid"), "{a0eebc99-9c0b4ef8-bb6d6bb9-bd380a11}", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
        (T("uuid"), "a0eebc999c0b4ef8bb6d6bb9bd380a11", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
        (T("uuid"), "a0ee-bc99-9c0b-4ef8-bb6d-6bb9-bd38-0a11", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
        (T("date"), " 2024-1-2 ", dt.date(2024, 1, 2)), (T("date"), "01/02/2024", dt.date(2024, 1, 2)),
        (T("date"), "2024-01-02 03:04:05", dt.date(2024, 1, 2)), (T("date"), "epoch", dt.date(1970, 1, 1)),
        (T("time"), "03:04", dt.time(3, 4)), (T("time"), "3:4:5", dt.time(3, 4, 5)),
        (T("time"), "03:04:05.1234567", dt.time(3, 4, 5, 123457)),
        (T("timestamp"), "2024-01-02T03:04:05.5", dt.datetime(2024, 1, 2, 3, 4, 5, 500000)),
        (T("timestamp"), "2024-01-02 03:04:05+05:30", dt.datetime(2024, 1, 2, 3, 4, 5)),
        (T("timestamp"), "2024-01-02 24:00:00", dt.datetime(2024, 1, 3)),
        (T("timestamp"), "2024-01-02 23:59:60", dt.datetime(2024, 1, 3)),
        (T("timestamp"), "2024-01-02", dt.datetime(2024, 1, 2)),
        (T("timestamptz"), "2024-01-02 03:04:05+02", dt.datetime(2024, 1, 2, 1, 4, 5, tzinfo=UTC)),
        (T("timestamptz"), "2024-01-02 03:04:05-0530", dt.datetime(2024, 1, 2, 8, 34, 5, tzinfo=UTC)),
        (T("timestamptz"), "2024-01-02 03:04:05+05:30", dt.datetime(2024, 1, 1, 21, 34, 5, tzinfo=UTC)),
        (T("timestamptz"), "2024-01-02T03:04:05Z", dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)),
        (T("timestamptz"), "2024-01-02 03:04:05", dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)),
        (T("bytea"), "\\x0102ff", b"\x01\x02\xff"), (T("bytea"), "\\x01 02", b"\x01\x02"),
        (T("bytea"), "abc", b"abc"), (T("bytea"), "a\\\\b", b"a\\b"),
        (T("bytea"), "\\001\\377x", b"\x01\xffx"), (T("bytea"), "\\x", b""),
        (varchar(3), "ab   ", "ab "), (bpchar(3), "a", "a  "), (T("text"), "héllo", "héllo"),
        (T("name"), "x" * 70, "x" * 63), (T("character"), "ab", "ab"),
        (T("int4", array=True), " { 1 , 2 } ", [1, 2]),
        (T("int4", array=True), "{{1,2},{3,NULL}}", [[1, 2], [3, None]]),
        (T("int4", array=True), '{"1", null}', [1, None]),
        (T("int4", array=True), "{}", []),
        (T("text", array=True), '{"a b","",NULL,"null",x,"q\\"\\\\"}', ["a b", "", None, "null", "x", 'q"\\']),
        (T("text", array=True), '{ a , " b " ,c d}', ["a", " b ", "c d"]),
        (T("text", array=True), "{\\NULL,a\\,b,\\ a\\ }", ["NULL", "a,b", " a "]),
    ],
)
def test_decode_text(t: SqlType, data: str, expected: object) -> None:
    got = decode_text(t, data.encode())
    assert got == expected
    assert type(got) is type(expected)


def test_decode_quoted_char_type() -> None:
    qchar = SqlType(BY_NAME["char"])
    assert decode_text(qchar, b"ab") == "a"
    assert decode_text(qchar, b"\\101") == "A"
    assert decode_text(qchar, b"") == ""


@pytest.mark.parametrize(
    ("t", "data", "sqlstate", "message"),
    [
        (T("int2"), "70000", "22003", 'value "70000" is out of range for type smallint'),
        (T("int2"), "abc", "22P02", 'invalid input syntax for type smallint: "abc"'),
        (T("int4"), "abc", "22P02", 'invalid input syntax for type integer: "abc"'),
        (T("int4"), "", "22P02", 'invalid input syntax for type integer: ""'),
        (T("int4"), "1.5", "22P02", 'invalid input syntax for type integer: "1.5"'),
        (T("int4"), "1_000", "22P02", 'invalid input syntax for type integer: "1_000"'),
        (T("int4"), "\uff11", "22P02", 'invalid input syntax for type integer: "\uff11"'),
        (T("int4"), "2147483648", "22003", 'value "2147483648" is out of range for type integer'),
        (T("int8"), "9223372036854775808", "22003",
         'value "9223372036854775808" is out of range for type bigint'),
        (T("oid"), "4294967296", "22003", 'value "4294967296" is out of range for type oid'),
        (T("bool"), "xyz", "22P02", 'invalid input syntax for type boolean: "xyz"'),
        (T("bool"), "o", "22P02", 'invalid input syntax for type boolean: "o"'),
        (T("bool"), "truex", "22P02", 'invalid input syntax for type boolean: "truex"'),
        (T("float8"), "abc", "22P02", 'invalid input syntax for type double precision: "abc"'),
        (T("float8"), "1e400", "22003", '"1e400" is out of range for type double precision'),
        (T("float8"), "1e-400", "22003", '"1e-400" is out of range for type double precision'),
        (T("float4"), "1e40", "22003", '"1e40" is out of range for type real'),
        (T("float4"), "1e-50", "22003", '"1e-50" is out of range for type real'),
        (T("float4"), "x", "22P02", 'invalid input syntax for type real: "x"'),
        (T("numeric"), "abc", "22P02", 'invalid input syntax for type numeric: "abc"'),
        (T("numeric"), "1_0", "22P02", 'invalid input syntax for type numeric: "1_0"'),
        (T("numeric"), "1e131072", "22003", "value overflows numeric format"),
        (numeric(4, 2), "123.456", "22003", "numeric field overflow"),
        (numeric(5, 2), "999.995", "22003", "numeric field overflow"),
        (numeric(4, 2), "Infinity", "22003", "numeric field overflow"),
        (T("uuid"), "abc", "22P02", 'invalid input syntax for type uuid: "abc"'),
        (T("uuid"), "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1", "22P02",
         'invalid input syntax for type uuid: "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1"'),
        (T("uuid"), "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11-", "22P02",
         'invalid input syntax for type uuid: "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11-"'),
        (T("uuid"), " a0eebc999c0b4ef8bb6d6bb9bd380a11", "22P02",
         'invalid input syntax for type uuid: " a0eebc999c0b4ef8bb6d6bb9bd380a11"'),
        (T("date"), "abc", "22007", 'invalid input syntax for type date: "abc"'),
        (T("date"), "2024-02-30", "22008", 'date/time field value out of range: "2024-02-30"'),
        (T("timestamp"), "2024-01-02 25:00", "22008",
         'date/time field value out of range: "2024-01-02 25:00"'),
        (T("timestamptz"), "2024-01-02 03:04:05 +16", "22009",
         'time zone displacement out of range: "2024-01-02 03:04:05 +16"'),
        (T("time"), "abc", "22007", 'invalid input syntax for type time: "abc"'),
        (T("time"), "12:60", "22008", 'date/time field value out of range: "12:60"'),
        (T("interval"), "abc", "22007", 'invalid input syntax for type interval: "abc"'),
        (T("interval"), "1 fortnight", "22007", 'invalid input syntax for type interval: "1 fortnight"'),
        (T("interval"), "1:60", "22015", 'interval field value out of range: "1:60"'),
        (T("jsonb"), "{abc", "22P02", "invalid input syntax for type json"),
        (T("json"), "[1,]", "22P02", "invalid input syntax for type json"),
        (T("json"), "NaN", "22P02", "invalid input syntax for type json"),
        (T("jsonb"), '"\\u0000"', "22P05", "unsupported Unicode escape sequence"),
        (T("jsonb"), '"\\ud800"', "22P02", "invalid input syntax for type json"),
        (T("bytea"), "\\xzz", "22023", 'invalid hexadecimal digit: "z"'),
        (T("bytea"), "\\x1", "22023", "invalid hexadecimal data: odd number of digits"),
        (T("bytea"), "\\x 0 1", "22023", 'invalid hexadecimal digit: " "'),
        (T("bytea"), "\\x0\u00e9", "22023", 'invalid hexadecimal digit: "\u00e9"'),
        (T("bytea"), "\\q", "22P02", "invalid input syntax for type bytea"),
        (T("bytea"), "\\", "22P02", "invalid input syntax for type bytea"),
        (varchar(3), "abcd", "22001", "value too long for type character varying(3)"),
        (bpchar(3), "abcd", "22001", "value too long for type character(3)"),
        (T("int4", array=True), "{1,2", "22P02", 'malformed array literal: "{1,2"'),
        (T("int4", array=True), "1,2", "22P02", 'malformed array literal: "1,2"'),
        (T("int4", array=True), "{1,2} x", "22P02", 'malformed array literal: "{1,2} x"'),
        (T("int4", array=True), "{{1,2},{3}}", "22P02", 'malformed array literal: "{{1,2},{3}}"'),
        (T("int4", array=True), "{1,{2}}", "22P02", 'malformed array literal: "{1,{2}}"'),
        (T("text", array=True), "{,}", "22P02", 'malformed array literal: "{,}"'),
        (T("text", array=True), '{"a"b}', "22P02", 'malformed array literal: "{"a"b}"'),
        (T("int4", array=True), "{1,x}", "22P02", 'invalid input syntax for type integer: "x"'),
    ],
)
def test_decode_text_errors(t: SqlType, data: str, sqlstate: str, message: str) -> None:
    with pytest.raises(SqlError) as e:
        decode_text(t, data.encode())
    assert (e.value.sqlstate, e.value.message) == (sqlstate, message)


def test_decode_text_error_details() -> None:
    with pytest.raises(SqlError) as e:
        decode_text(numeric(4, 2), b"123.456")
    assert e.value.detail == "A field with precision 4, scale 2 must round to an absolute value less than 10^2."
    with pytest.raises(SqlError) as e:
        decode_text(numeric(3, 3), b"1")
    assert e.value.detail == "A field with precision 3, scale 3 must round to an absolute value less than 1."
    with pytest.raises(SqlError) as e:
        decode_text(numeric(4, 2), b"-Infinity")
    assert e.value.detail == "A field with precision 4, scale 2 cannot hold an infinite value."
    with pytest.raises(SqlError) as e:
        decode_text(T("int4", array=True), b"{1,2")
    assert e.value.detail == "Unexpected end of input."


@pytest.mark.parametrize("data", [b"\xff", b"a\xc3(", b"a\x00b"])
def test_decode_text_bad_utf8(data: bytes) -> None:
    with pytest.raises(SqlError) as e:
        decode_text(T("text"), data)
    assert e.value.sqlstate == "22021"
    assert e.value.message.startswith('invalid byte sequence for encoding "UTF8": 0x')


# ---------------------------------------------------------------------------
# Binary input
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("t", "data"),
    [
        (T("bool"), b""), (T("bool"), b"\x01\x00"), (T("int2"), b"\x00"),
        (T("int4"), b"\x00\x00\x00\x01\x00"), (T("int8"), b"\x00" * 4), (T("float4"), b"\x00" * 8),
        (T("float8"), b"\x00" * 4), (T("uuid"), b"\x00" * 15), (T("date"), b"\x00" * 8),
        (T("timestamp"), b"\x00" * 4), (T("interval"), b"\x00" * 12), (T("numeric"), b"\x00" * 6),
        (T("numeric"), bytes.fromhex("0001000000000000")), (T("jsonb"), b""),
    ],
)
def test_decode_binary_wrong_length(t: SqlType, data: bytes) -> None:
    with pytest.raises(SqlError) as e:
        decode_binary(t, data, param=2)
    assert (e.value.sqlstate, e.value.message) == ("22P03", "incorrect binary data format in bind parameter 2")
    with pytest.raises(SqlError) as e:
        decode_binary(t, data)
    assert e.value.sqlstate == "22P03"
    assert e.value.message.startswith("incorrect binary data format")


@pytest.mark.parametrize(
    ("t", "data_hex", "sqlstate", "message"),
    [
        (T("numeric"), "0001000050000000" + "0001", "22P03", 'invalid sign in external "numeric" value'),
        (T("numeric"), "0001000000000000" + "2710", "22P03", 'invalid digit in external "numeric" value'),
        (T("numeric"), "000000000000ffff", "22P03", 'invalid scale in external "numeric" value'),
        (T("jsonb"), "027b7d", "22P03", "unsupported jsonb version number 2"),
        (T("int4", array=True), "000000010000000000000019" + "0000000100000001" + "0000000161", "42804",
         "binary data has array element type 25 (text) instead of expected 23 (integer)"),
        (T("int4", array=True), "000000010000000200000017", "22P03", "invalid array flags"),
        (T("int4", array=True), "000000010000000000000017" + "0000000100000001" + "0000000200000001",
         "22P03", "improper binary format in array element 1"),
        (T("date"), "7fffffff", "0A000", "infinite date values are not supported"),
        (T("time"), "000000141dd76001", "22008", "time out of range"),
        (T("text"), "ff", "22021", 'invalid byte sequence for encoding "UTF8": 0xff'),
        (varchar(2), "616263", "22001", "value too long for type character varying(2)"),
    ],
)
def test_decode_binary_errors(t: SqlType, data_hex: str, sqlstate: str, message: str) -> None:
    with pytest.raises(SqlError) as e:
        decode_binary(t, bytes.fromhex(data_hex))
    assert (e.value.sqlstate, e.value.message) == (sqlstate, message)


def test_decode_binary_values() -> None:
    assert decode_binary(T("bool"), b"\x02") is True
    assert decode_binary(T("oid"), b"\xff\xff\xff\xff") == 4294967295
    assert decode_binary(T("uuid"), bytes(range(16))) == "00010203-0405-0607-0809-0a0b0c0d0e0f"
    # numeric_recv truncates digits hidden by dscale, then applies the typmod
    assert decode_binary(T("numeric"), bytes.fromhex("000200000000000100011388")) == Decimal("1.5")
    assert decode_binary(T("numeric"), bytes.fromhex("0002000000000000" + "0001" + "1388")) == Decimal(1)
    assert decode_binary(numeric(5, 2), bytes.fromhex("000200000000000300011388")) == Decimal("1.50")
    assert decode_binary(T("timestamptz"), bytes(8)) == dt.datetime(2000, 1, 1, tzinfo=UTC)
    assert decode_binary(T("date"), b"\xff\xff\xff\xff") == dt.date(1999, 12, 31)
    assert decode_binary(T("text", array=True), bytes.fromhex("000000000000000000000019")) == []


# ---------------------------------------------------------------------------
# Round trips
# ---------------------------------------------------------------------------


def round_trip(t: SqlType, v: object) -> None:
    assert decode_text(t, encode_text(t, v)) == v
    assert decode_binary(t, encode_binary(t, v)) == v


@given(st.integers(-(2**15), 2**15 - 1))
def test_round_trip_int2(v: int) -> None:
    round_trip(T("int2"), v)


@given(st.integers(-(2**31), 2**31 - 1))
def test_round_trip_int4(v: int) -> None:
    round_trip(T("int4"), v)


@given(st.integers(-(2**63), 2**63 - 1))
def test_round_trip_int8(v: int) -> None:
    round_trip(T("int8"), v)


@given(st.integers(0, 2**32 - 1))
def test_round_trip_oid(v: int) -> None:
    round_trip(T("oid"), v)


def same_float(a: float, b: float) -> bool:
    return struct.pack(">d", a) == struct.pack(">d", b) or (math.isnan(a) and math.isnan(b))


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_round_trip_float8(v: float) -> None:
    t = T("float8")
    assert same_float(decode_text(t, encode_text(t, v)), v)
    assert same_float(decode_binary(t, encode_binary(t, v)), v)
    assert encode_text(t, v) == encode_text(t, decode_text(t, encode_text(t, v)))


@given(st.floats(width=32, allow_nan=True, allow_infinity=True))
def test_round_trip_float4(v: float) -> None:
    t = T("float4")
    assert same_float(decode_text(t, encode_text(t, v)), v)
    assert same_float(decode_binary(t, encode_binary(t, v)), v)
    s = encode_text(t, v).decode()
    # shortest for float32, not the widened double
    if math.isfinite(v) and v != 0:
        digits = s.lstrip("-").split("e")[0].replace(".", "").strip("0")
        assert len(digits) <= 9


@given(st.decimals(allow_nan=False, allow_infinity=False, places=10,
                   min_value=Decimal("-1e27"), max_value=Decimal("1e27")))
def test_round_trip_numeric_unconstrained(v: Decimal) -> None:
    t = T("numeric")
    s = encode_text(t, v).decode()
    assert Decimal(s) == v
    assert s == "0" or not ("." in s and s.endswith("0"))
    assert decode_text(t, s.encode()) == v
    back = decode_binary(t, encode_binary(t, v))
    assert back == v
    assert encode_text(t, back) == encode_text(t, v)


@given(st.decimals(allow_nan=False, allow_infinity=False, places=3,
                   min_value=Decimal("-999999.999"), max_value=Decimal("999999.999")))
def test_round_trip_numeric_declared(v: Decimal) -> None:
    t = numeric(9, 3)
    s = encode_text(t, v).decode()
    assert len(s.split(".")[1]) == 3
    assert decode_text(t, s.encode()) == v
    assert decode_binary(t, encode_binary(t, v)) == v
    assert encode_binary(t, v) == encode_binary(t, decode_binary(t, encode_binary(t, v)))


text_values = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"))


@given(text_values)
def test_round_trip_text(v: str) -> None:
    for name in ("text", "varchar", "character"):
        round_trip(T(name), v)


@given(st.binary())
def test_round_trip_bytea(v: bytes) -> None:
    round_trip(T("bytea"), v)
    # the escape format too
    escaped = b"".join(b"\\\\" if c == 0x5C else b"\\%03o" % c if c >= 0x80 or c < 0x20 else bytes([c])
                       for c in v)
    assert decode_text(T("bytea"), escaped) == v


@given(st.datetimes(min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 31, 23, 59, 59)))
def test_round_trip_timestamps(v: dt.datetime) -> None:
    round_trip(T("timestamp"), v)
    round_trip(T("timestamptz"), v.replace(tzinfo=UTC))
    round_trip(T("date"), v.date())
    round_trip(T("time"), v.time())


@given(st.uuids())
def test_round_trip_uuid(v: uuid.UUID) -> None:
    s = str(v)
    round_trip(T("uuid"), s)
    assert decode_text(T("uuid"), s.upper().encode()) == s
    assert decode_text(T("uuid"), ("{" + v.hex + "}").encode()) == s
    assert encode_binary(T("uuid"), s) == v.bytes


@given(st.integers(-(2**31), 2**31 - 1), st.integers(-(2**31), 2**31 - 1),
       st.integers(-(2**63), 2**63 - 1))
def test_round_trip_interval(months: int, days: int, micros: int) -> None:
    s = interval_text(months, days, micros)
    assert interval_parse(s) == (months, days, micros)
    round_trip(T("interval"), s)
    assert encode_binary(T("interval"), s) == struct.pack(">qii", micros, days, months)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | text_values,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(text_values, children, max_size=4),
    max_leaves=15,
)


@given(json_values)
def test_jsonb_normalization_idempotent(v: object) -> None:
    doc = json.dumps(v, ensure_ascii=bool(hash(str(v)) & 1))
    norm = decode_text(T("jsonb"), doc.encode())
    exact = {"parse_float": Decimal, "parse_int": Decimal}
    assert json.loads(norm, **exact) == json.loads(doc, **exact)
    assert decode_text(T("jsonb"), norm.encode()) == norm
    round_trip(T("jsonb"), norm)
    assert decode_text(T("json"), doc.encode()) == doc


@given(st.lists(st.none() | st.integers(-(2**31), 2**31 - 1)))
def test_round_trip_int_array(v: list) -> None:
    round_trip(T("int4", array=True), v)


@given(st.lists(st.none() | text_values))
def test_round_trip_text_array(v: list) -> None:
    round_trip(T("text", array=True), v)


@given(st.lists(st.lists(st.none() | st.booleans(), min_size=2, max_size=2), min_size=1))
def test_round_trip_2d_array(v: list) -> None:
    round_trip(T("bool", array=True), v)


def test_round_trip_misc() -> None:
    for b in (True, False):
        round_trip(T("bool"), b)
    round_trip(varchar(5), "abc")
    round_trip(bpchar(5), "ab   ")
    round_trip(T("name"), "pg_class")
    round_trip(T("numeric", array=True), [Decimal("1.5"), None, Decimal(-2)])
    round_trip(T("date", array=True), [dt.date(2024, 1, 2), None])
    round_trip(T("uuid", array=True), [str(uuid.UUID(int=7))])
    round_trip(T("interval", array=True), ["1 day 02:00:00", "-00:00:01"])
    round_trip(T("jsonb", array=True), ['{"a": [1, 2]}', "null"])
    round_trip(T("bytea", array=True), [b"\x00\\\"", b""])


# ---------------------------------------------------------------------------
# Vectorized columns equal per-value encoding
# ---------------------------------------------------------------------------


def per_value(fn, t: SqlType, arr: pa.Array | pa.ChunkedArray) -> list[bytes | None]:
    return [None if v is None else fn(t, v) for v in arr.to_pylist()]


def with_nulls(values: list, rng: np.random.Generator, rate: float = 0.15) -> list:
    return [None if rng.random() < rate else v for v in values]


def random_floats(rng: np.random.Generator, n: int) -> list[float]:
    bits = rng.integers(0, 2**63, n, dtype=np.int64) * rng.choice([1, -1], n)
    vals = list(bits.view(np.float64)[: n // 4])
    vals += list(10 ** rng.uniform(-8, 20, n // 4) * rng.choice([1, -1], n // 4))
    vals += list(np.round(rng.uniform(-1000, 1000, n // 4), 2))
    vals += [0.0, -0.0, math.nan, math.inf, -math.inf, 1e15, 1e-4, 1e6, 9.99e-5, 5e-324]
    return [float(v) for v in vals]


def column_cases() -> list[tuple[str, SqlType, pa.Array]]:
    rng = np.random.default_rng(7)
    n = 2000
    ints = lambda lo, hi: [int(x) for x in rng.integers(lo, hi, n)]
    strs = ["", "a b", "héllo", "NULL", 'q"\\', "x" * 40] * (n // 6)
    decs = [Decimal(int(x)).scaleb(-10) for x in rng.integers(-(10**15), 10**15, n)]
    decs += [Decimal("1E-10"), Decimal("-0.0000001000"), Decimal(0).scaleb(-10),
             Decimal("12345678901234567890123456.1234567890")]
    small = [Decimal(int(x)).scaleb(-2) for x in rng.integers(-(10**8), 10**8, n)] + [Decimal("0.00")]
    base = dt.datetime(2000, 1, 1)
    micros = [int(x) for x in rng.integers(-(2**45), 2**48, n)]
    stamps = [base + dt.timedelta(microseconds=u) for u in micros]
    uuids = [str(uuid.UUID(int=int(x))) for x in rng.integers(0, 2**63, n)]
    intervals = [interval_text(int(m), int(d), int(u)) for m, d, u in
                 zip(rng.integers(-100, 100, n), rng.integers(-100, 100, n), rng.integers(-(10**12), 10**12, n))]
    jsons = ['{"a": 1}', "[1, 2.50]", "null", '"x"']
    f32 = [float(np.float32(v)) if math.isfinite(v) and abs(v) < 3e38 else v for v in random_floats(rng, n)]
    cases = [
        ("bool", T("bool"), pa.array(with_nulls([bool(x) for x in rng.integers(0, 2, n)], rng))),
        ("int2", T("int2"), pa.array(with_nulls(ints(-(2**15), 2**15), rng), pa.int16())),
        ("int4", T("int4"), pa.array(with_nulls(ints(-(2**31), 2**31), rng), pa.int32())),
        ("int8", T("int8"), pa.array(with_nulls(ints(-(2**63), 2**63 - 1), rng), pa.int64())),
        ("oid", T("oid"), pa.array(with_nulls(ints(0, 2**32), rng), pa.int64())),
        ("float8", T("float8"), pa.array(with_nulls(random_floats(rng, n), rng), pa.float64())),
        ("float4", T("float4"), pa.array(with_nulls(f32, rng), pa.float32())),
        ("float4 from f64", T("float4"), pa.array(with_nulls(random_floats(rng, n), rng), pa.float64())),
        ("numeric", T("numeric"), pa.array(with_nulls(decs, rng), pa.decimal128(38, 10))),
        ("numeric(38,10)", numeric(38, 10), pa.array(with_nulls(decs, rng), pa.decimal128(38, 10))),
        ("numeric(10,2)", numeric(10, 2), pa.array(with_nulls(small, rng), pa.decimal128(10, 2))),
        ("numeric(12,4) from scale 2", numeric(12, 4), pa.array(with_nulls(small, rng), pa.decimal128(10, 2))),
        ("numeric(5,1) from scale 2", numeric(5, 1), pa.array(with_nulls(small[:50], rng), pa.decimal128(10, 2))),
        ("numeric wide", T("numeric"), pa.array(with_nulls(decs, rng), pa.decimal128(38, 20))),
        ("text", T("text"), pa.array(with_nulls(strs, rng), pa.string())),
        ("large text", T("text"), pa.array(with_nulls(strs, rng), pa.large_string())),
        ("varchar", varchar(50), pa.array(with_nulls(strs, rng), pa.string())),
        ("char(5)", bpchar(5), pa.array(with_nulls([s[:5] for s in strs], rng), pa.string())),
        ("name", T("name"), pa.array(with_nulls(strs, rng), pa.string())),
        ('"char"', SqlType(BY_NAME["char"]), pa.array(with_nulls([s[:1] for s in strs], rng))),
        ("json", T("json"), pa.array(with_nulls(jsons * (n // 4), rng))),
        ("jsonb", T("jsonb"), pa.array(with_nulls(jsons * (n // 4), rng))),
        ("uuid", T("uuid"), pa.array(with_nulls(uuids, rng))),
        ("uuid odd", T("uuid"), pa.array(with_nulls(uuids[:10] + ["{" + uuids[0] + "}"], rng))),
        ("interval", T("interval"), pa.array(with_nulls(intervals, rng))),
        ("bytea", T("bytea"), pa.array(with_nulls([s.encode() + bytes([int(x)]) for s, x in
                                                    zip(strs, rng.integers(0, 256, n))] + [b""], rng))),
        ("date", T("date"), pa.array(with_nulls([s.date() for s in stamps], rng), pa.date32())),
        ("time us", T("time"), pa.array(with_nulls([s.time() for s in stamps], rng), pa.time64("us"))),
        ("time ns", T("time"), pa.array(with_nulls([int(x) for x in rng.integers(0, 86_400 * 10**9, n)], rng),
                                        pa.time64("ns"))),
        ("timestamp", T("timestamp"), pa.array(with_nulls(stamps, rng), pa.timestamp("us"))),
        ("timestamp ns", T("timestamp"), pa.array(with_nulls(micros, rng), pa.timestamp("us"))
         .cast(pa.timestamp("ns"))),
        ("timestamptz", T("timestamptz"), pa.array(with_nulls(stamps, rng), pa.timestamp("us", tz="UTC"))),
        ("timestamp from tz", T("timestamp"), pa.array(with_nulls(stamps, rng), pa.timestamp("us", tz="UTC"))),
        ("int4[]", T("int4", array=True), pa.array(with_nulls([[1, None, 3], [], [7]] * 50, rng),
                                                 pa.list_(pa.int32()))),
        ("text[]", T("text", array=True), pa.array(with_nulls([["a b", None, ""], ["x"]] * 50, rng),
                                                 pa.list_(pa.string()))),
        ("all null", T("int4"), pa.array([None] * 10, pa.int32())),
        ("empty", T("text"), pa.array([], pa.string())),
    ]
    return cases


COLUMN_CASES = column_cases()


def reference_array(arr: pa.Array) -> pa.Array:
    """What the per-value path sees: Python values carry microseconds."""
    ty = arr.type
    if pa.types.is_time(ty):
        return arr.cast(pa.time64("us"), safe=False)
    if pa.types.is_timestamp(ty):
        return arr.cast(pa.timestamp("us", ty.tz), safe=False)
    return arr


@pytest.mark.parametrize(("label", "t", "arr"), COLUMN_CASES, ids=[c[0] for c in COLUMN_CASES])
def test_text_column_matches_per_value(label: str, t: SqlType, arr: pa.Array) -> None:
    expected = per_value(encode_text, t, reference_array(arr))
    assert encode_text_column(t, arr) == expected
    # sliced (non-zero offset) and chunked inputs
    assert encode_text_column(t, arr.slice(3)) == expected[3:]
    chunked = pa.chunked_array([arr.slice(0, 5), arr.slice(5)], type=arr.type)
    assert encode_text_column(t, chunked) == expected
    assert encode_text_arrow(t, arr).type == pa.binary()


@pytest.mark.parametrize(("label", "t", "arr"), COLUMN_CASES, ids=[c[0] for c in COLUMN_CASES])
def test_binary_column_matches_per_value(label: str, t: SqlType, arr: pa.Array) -> None:
    expected = per_value(encode_binary, t, reference_array(arr))
    assert encode_binary_column(t, arr) == expected
    assert encode_binary_column(t, arr.slice(3)) == expected[3:]
    chunked = pa.chunked_array([arr.slice(0, 5), arr.slice(5)], type=arr.type)
    assert encode_binary_column(t, chunked) == expected
    assert encode_binary_arrow(t, arr).type == pa.binary()


def test_column_of_no_chunks() -> None:
    empty = pa.chunked_array([], type=pa.int32())
    assert encode_text_column(T("int4"), empty) == []
    assert encode_binary_column(T("int4"), empty) == []


@settings(max_examples=50)
@given(st.lists(st.none() | st.floats(), max_size=40))
def test_float_column_hypothesis(values: list) -> None:
    arr = pa.array(values, pa.float64())
    assert encode_text_column(T("float8"), arr) == per_value(encode_text, T("float8"), arr)


# ---------------------------------------------------------------------------
# DataRow assembly
# ---------------------------------------------------------------------------


def reference_rows(columns: list[list[bytes | None]]) -> bytes:
    out = b""
    for row in zip(*columns):
        body = struct.pack(">h", len(row))
        for v in row:
            body += struct.pack(">i", -1) if v is None else struct.pack(">i", len(v)) + v
        out += b"D" + struct.pack(">i", len(body) + 4) + body
    return out


def random_columns(rng: np.random.Generator, nrows: int, ncols: int) -> list[list[bytes | None]]:
    cols = []
    for _ in range(ncols):
        col: list[bytes | None] = []
        for _ in range(nrows):
            r = rng.random()
            col.append(None if r < 0.1 else b"" if r < 0.15 else rng.bytes(int(rng.integers(1, 30))))
        cols.append(col)
    return cols


@pytest.mark.parametrize("nrows", [0, 1, 7, 255, 256, 257, 3000])
@pytest.mark.parametrize("ncols", [1, 3, 8])
def test_encode_rows_matches_reference(nrows: int, ncols: int) -> None:
    cols = random_columns(np.random.default_rng(nrows * 10 + ncols), nrows, ncols)
    expected = reference_rows(cols)
    assert encode_rows(cols) == expected
    assert encode_rows([pa.array(c, pa.binary()) for c in cols]) == expected
    assert encode_rows([pa.chunked_array([pa.array(c, pa.binary())]) for c in cols]) == expected
    assert encode_rows([pa.array(c, pa.binary()).slice(1) for c in cols]) == reference_rows([c[1:] for c in cols])


def test_encode_rows_splits_large_output(monkeypatch: pytest.MonkeyPatch) -> None:
    cols = random_columns(np.random.default_rng(1), 2000, 3)
    monkeypatch.setattr(datarow, "_JOIN_LIMIT", 1000)  # many pieces, and rows bigger than a piece
    assert encode_rows(cols) == reference_rows(cols)
    monkeypatch.setattr(datarow, "_JOIN_LIMIT", 10)
    assert encode_rows(cols) == reference_rows(cols)


@pytest.mark.parametrize("nrows", [256, 3000])
def test_encode_rows_with_columns_of_one_width(nrows: int) -> None:
    """Columns whose values all have one width (a SUBSCRIBE's mz_timestamp and mz_diff, binary
    numbers, all-empty strings) are laid side by side with the headers rather than joined:
    the same bytes, whether such columns come first, last, together or between others."""
    rng = np.random.default_rng(nrows)
    varied = random_columns(rng, nrows, 2)
    stamp = [b"1733456789012"] * nrows
    eight = [rng.bytes(8) for _ in range(nrows)]
    empty = [b""] * nrows
    for cols in ([stamp, [b"1"] * nrows, *varied], [*varied, eight, stamp], [stamp, eight],
                 [varied[0], empty, eight, varied[1], empty], [empty, empty]):
        assert encode_rows(cols) == reference_rows(cols)
        assert encode_rows([pa.array(c, pa.binary()) for c in cols]) == reference_rows(cols)


def test_encode_rows_edge_cases() -> None:
    assert encode_rows([], nrows=2) == b"D\x00\x00\x00\x06\x00\x00" * 2
    assert encode_rows([]) == b""
    with pytest.raises(ValueError):
        encode_rows([[b"a"], [b"a", b"b"]])
    assert encode_rows([[None], [b"xy"]]) == b"D\x00\x00\x00\x10\x00\x02\xff\xff\xff\xff\x00\x00\x00\x02xy"


@settings(max_examples=30)
@given(st.integers(1, 4).flatmap(
    lambda k: st.lists(st.tuples(*[st.none() | st.binary(max_size=12)] * k), max_size=400)))
def test_encode_rows_hypothesis(rows: list[tuple]) -> None:
    assume(rows)
    cols = [list(c) for c in zip(*rows)]
    assert encode_rows(cols) == reference_rows(cols)


def test_pipeline_from_table() -> None:
    table = pa.table({
        "id": pa.array([1, None, 3] * 200, pa.int32()),
        "name": pa.array(["a", "b c", None] * 200),
        "amount": pa.array([Decimal("1.5000000000"), None, Decimal(-2)] * 200, pa.decimal128(38, 10)),
    })
    types = [T("int4"), T("text"), T("numeric")]
    lists = [encode_text_column(t, c) for t, c in zip(types, table.columns)]
    assert lists[2][:3] == [b"1.5", None, b"-2"]
    expected = reference_rows(lists)
    assert encode_rows(lists) == expected
    assert encode_rows([encode_text_arrow(t, c) for t, c in zip(types, table.columns)]) == expected
