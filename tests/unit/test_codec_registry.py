"""The codec registry: one entry per (type OID, format), complete for every type we have."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest

from planner.codecs.binary_in import decode_binary
from planner.codecs.binary_out import encode_binary
from planner.codecs.registry import BINARY, CODECS, TEXT, TEXT_ONLY, codec
from planner.codecs.text_in import decode_text
from planner.codecs.text_out import encode_text
from planner.errors import SqlError
from planner.types import BY_NAME, RECORD, SqlType


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_every_type_has_text_and_binary_codecs_or_is_text_only(name: str) -> None:
    base = BY_NAME[name]
    for oid in (base.oid, base.array_oid):
        formats = (TEXT,) if name in TEXT_ONLY else (TEXT, BINARY)
        for fmt in formats:
            c = codec(oid, fmt)
            assert (c.oid, c.format) == (oid, fmt)
            assert c.encode is not None and c.decode is not None and c.encode_column is not None, c
        if name in TEXT_ONLY:
            assert oid not in CODECS[BINARY]


def test_nothing_registered_but_our_types() -> None:
    oids = {o for t in BY_NAME.values() for o in (t.oid, t.array_oid)}
    assert set(CODECS[TEXT]) == oids | {RECORD.oid}  # a row value, as text only
    assert set(CODECS[BINARY]) == {o for t in BY_NAME.values() if t.name not in TEXT_ONLY
                                   for o in (t.oid, t.array_oid)}
    assert all((oid, fmt) == (c.oid, c.format) for fmt in (TEXT, BINARY) for oid, c in CODECS[fmt].items())


def test_a_row_value_is_its_text_and_has_no_binary_form() -> None:
    t = SqlType(RECORD)
    assert encode_text(t, '(1,"a b")') == b'(1,"a b")'
    assert codec(RECORD.oid, TEXT).encode_column(t, pa.array(['(1,)', None])).to_pylist() == [b"(1,)", None]
    with pytest.raises(SqlError) as err:
        codec(RECORD.oid, BINARY)
    assert err.value.sqlstate == "0A000"


def test_unknown_oid_is_an_error() -> None:
    for oid, fmt in ((600, TEXT), (600, BINARY), (23, 2)):  # point: not a type of ours; no format 2
        with pytest.raises(SqlError) as err:
            codec(oid, fmt)
        assert err.value.sqlstate == "0A000"


SAMPLES = [
    (SqlType(BY_NAME["integer"]), 42),
    (SqlType(BY_NAME["numeric"]), Decimal("-1.50")),
    (SqlType(BY_NAME["text"]), "a b"),
    (SqlType(BY_NAME["timestamp with time zone"]), dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC)),
    (SqlType(BY_NAME["interval"]), "1 day 02:00:00"),
    (SqlType(BY_NAME["integer"], is_array=True), [[1, None], [3, 4]]),
    (SqlType(BY_NAME["text"], is_array=True), ["x", "", None]),
]


@pytest.mark.parametrize(("t", "value"), SAMPLES)
def test_lookup_by_oid_gives_the_same_bytes_as_the_entry_points(t: SqlType, value: object) -> None:
    text, binary = codec(t.oid, TEXT), codec(t.oid, BINARY)
    assert text.encode(t, value) == encode_text(t, value)
    assert binary.encode(t, value) == encode_binary(t, value)
    assert text.decode(t, encode_text(t, value)) == decode_text(t, encode_text(t, value)) == value
    assert binary.decode(t, encode_binary(t, value)) == decode_binary(t, encode_binary(t, value)) == value
    column = pa.array([value, None])
    assert text.encode_column(t, column).to_pylist() == [encode_text(t, value), None]
    assert binary.encode_column(t, column).to_pylist() == [encode_binary(t, value), None]


def test_binary_size_error_from_the_registry_is_22P03() -> None:
    t = SqlType(BY_NAME["integer"])
    with pytest.raises(SqlError) as err:
        codec(t.oid, BINARY).decode(t, b"\x00\x01")
    assert err.value.sqlstate == "22P03"
    with pytest.raises(SqlError, match="incorrect binary data format in bind parameter 2"):
        decode_binary(t, b"\x00\x01", param=2)
