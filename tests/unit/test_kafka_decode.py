"""Decoding a batch of raw Kafka records (the function Spark's Python workers run per
Arrow batch), and how a Kafka table's columns map onto decoded columns: pure
functions over values, no Spark and no broker.
"""

from __future__ import annotations

import sys

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner import jsonb
from planner import kafka_syntax as ks
from planner.errors import SqlError
from server.catalog_items import Item
from server.kafka import batch_target, error_changes, table_layout
from spark_backend import kafka_decode
from spark_backend.kafka_decode import DecodePlan, check_side, decode_side, key_label


def plan_of(clauses: str) -> DecodePlan:
    spec = ks.parse_kafka_clauses(clauses)
    ks.check(spec)
    return table_layout(spec)[1]


def decoded(fmt: tuple[str, int], width: int, *values: bytes | None) -> list[dict]:
    return decode_side(fmt, width, pa.array(values, pa.binary())).to_pylist()


def test_text_tombstones_and_bad_utf8():
    # One record that is not UTF-8 sends the batch down the record-by-record path.
    assert decoded(("text", 0), 1, b"a", None, b"\xff1", b"ok") == [
        {"c0": "a", "err": None}, {"c0": None, "err": None},
        {"c0": None, "err": 'invalid byte sequence for encoding "UTF8"'}, {"c0": "ok", "err": None}]


def test_json_is_normalized_and_bad_json_is_an_error():
    rows = decoded(("json", 0), 1, b'{"bb": 1, "a": [true, null]}', b"{nope", None, b"\xfe")
    assert rows[0] == {"c0": '{"a": [true, null], "bb": 1}', "err": None}
    assert rows[1]["c0"] is None and rows[1]["err"].startswith("invalid JSON")
    assert rows[2] == {"c0": None, "err": None}  # a tombstone is no error
    assert rows[3] == {"c0": None, "err": 'invalid byte sequence for encoding "UTF8"'}


JSON_DOCUMENTS = [
    b'{"n": 1}', b'{"bb": 1, "a": [true, null]}', b"{nope", None, b"\xfe", b"NaN", b"[1, 2", b"",
    b'"\\u0000"', b'"\\ud800"', b'"\\ud83d\\ude00"', b'{"a": "\\u00e9"}', b"1" * 5000, b"1e999999",
    b"[" * 400 + b"]" * 400, b"[" * 3000 + b"]" * 3000, b'{"a": 1} x', b'"raw \x01 control"', b"  true  ",
    b'{"a":1}{"b":2}', b"1 2", b"01", b"+1", b".5", b"1.", b"1.5e+", b"-", b"\xef\xbb\xbf{}", b"\x0c{}",
    str(2 ** 70).encode(), b"-0", b"[-0.0e-0]", b'{"a": 1, "a": 2}', b"\t{}\r\n", b"Infinity", b"[1,]",
    b'{"a" 1}', b"'a'", b"[" * 90 + b"]" * 90,
]


def _same_errors_checked_and_decoded(documents: list[bytes | None]) -> list[str | None]:
    raw = pa.array(documents, pa.binary())
    checked = check_side(("json", 0), 1, raw).to_pylist()
    full = decode_side(("json", 0), 1, raw).to_pylist()
    assert [r["err"] for r in checked] == [r["err"] for r in full], documents
    assert all(r["c0"] is None for r in checked)
    return [r["err"] for r in full]


@pytest.fixture(params=["orjson", "json module"])
def json_check(request, monkeypatch):
    """check_side with its native parser (orjson) and with the json module it falls back to."""
    if request.param == "json module":
        monkeypatch.setitem(sys.modules, "orjson", None)  # import orjson raises ImportError
    kafka_decode._json_check.cache_clear()
    kafka_decode._orjson_loads.cache_clear()
    yield request.param
    kafka_decode._json_check.cache_clear()
    kafka_decode._orjson_loads.cache_clear()


def test_checking_json_finds_exactly_the_errors_decoding_does(json_check):
    """Records that only take part in picking a key's winner are checked, not decoded:
    the check must fail on the same documents, with the same message, as decoding."""
    errors = _same_errors_checked_and_decoded(JSON_DOCUMENTS)
    assert sum(e is not None for e in errors) == 25  # the corpus has both kinds
    # A batch that parses throughout takes a shorter way, but not when one document needs
    # the full decoder: an escaped NUL, or nesting too deep for jsonb.
    assert _same_errors_checked_and_decoded([b'{"n": 1}', None, b"[]"]) == [None, None, None]
    assert _same_errors_checked_and_decoded([b'{"n": 1}', b'"\\u0000"'])[1] is not None
    assert _same_errors_checked_and_decoded([b"[" * 3000 + b"]" * 3000, b"{}"])[0] is not None


_JSON_PIECES = [*'{}[]",:0123456789-+.eE \t\n\\/ab', "true", "false", "null", '"k"', "1e5", "\x00", "\x01", "é",
                "\ufeff", "\\u00e9", "\\ud800", "\\u0000"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.sampled_from(_JSON_PIECES), max_size=12).map("".join), min_size=1, max_size=20))
def test_checking_random_documents_agrees_with_decoding(texts):
    # orjson when installed (as here): a document it accepts must also be one jsonb accepts.
    _same_errors_checked_and_decoded([t.encode("utf-8", "surrogatepass") for t in texts])


def _jsonb_both_ways(documents: list[bytes]) -> None:
    """Decoding a document (through orjson when it can) gives jsonb_input's text, or its error."""
    for data in documents:
        try:
            want = jsonb.jsonb_input(data)
        except SqlError as exc:
            want = (exc.sqlstate, exc.message, exc.detail)
        try:
            got = kafka_decode._decode_jsonb(data)
        except SqlError as exc:
            got = (exc.sqlstate, exc.message, exc.detail)
        assert got == want, data


def test_decoding_json_gives_jsonb_input_text(json_check):
    _jsonb_both_ways([d for d in JSON_DOCUMENTS if d is not None])
    # What orjson reads but cannot be written as jsonb would: numbers with a fraction or
    # an exponent (floats to orjson), duplicate keys, a NUL that is escaped.
    _jsonb_both_ways([b'{"a": 1.50, "b": 1e2, "c": -0.0, "d": 12345678901234567890.5}', b'{"a": 1, "a": 2}',
                      b'{"k": "\\u0000"}', b'{"bb": {"a": [1, {"c": null}]}, "a": "\xc3\xa9"}',
                      str(2 ** 64).encode(), str(-(2 ** 63) - 1).encode(), b"18446744073709551615"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_JSON_PIECES), max_size=12).map("".join))
def test_decoding_random_json_gives_jsonb_input_text(text):
    _jsonb_both_ways([text.encode("utf-8", "surrogatepass")])


def test_csv_columns():
    assert decoded(("csv", 2), 2, b"x,y", b'"a,b",c', b"only one", b"1,2\n3,4") == [
        {"c0": "x", "c1": "y", "err": None},
        {"c0": "a,b", "c1": "c", "err": None},
        {"c0": None, "c1": None, "err": "expected 2 CSV columns, got 1"},
        {"c0": None, "c1": None, "err": "expected 2 CSV columns, got 2 lines"},
    ]


def test_empty_batch_and_bytes():
    assert decoded(("json", 0), 1) == []
    assert decoded(("bytes", 0), 1, b"\x00\xff", None) == [{"c0": b"\x00\xff", "err": None},
                                                          {"c0": None, "err": None}]


def test_which_sides_decode_in_python():
    assert plan_of("KEY FORMAT TEXT VALUE FORMAT BYTES ENVELOPE UPSERT").python_sides() == []
    assert plan_of("KEY FORMAT TEXT VALUE FORMAT JSON ENVELOPE UPSERT").python_sides() == ["value"]
    assert plan_of("KEY FORMAT JSON VALUE FORMAT TEXT ENVELOPE UPSERT").python_sides() == ["key"]
    assert plan_of("VALUE FORMAT CSV WITH 2 COLUMNS").python_sides() == ["value"]
    # The key format does not matter when the key is not a column.
    assert plan_of("KEY FORMAT JSON VALUE FORMAT TEXT").python_sides() == []
    assert plan_of("VALUE FORMAT CSV WITH 2 COLUMNS").udf_type("value") == "struct<c0: STRING, c1: STRING, err: STRING>"


def test_decode_sql():
    sql = plan_of("KEY FORMAT TEXT VALUE FORMAT JSON ENVELOPE UPSERT").decode_sql()
    assert sql[:2] == ["CASE WHEN is_valid_utf8(key) THEN CAST(key AS STRING) END AS `key`", "__value.c0 AS `data`"]
    assert sql[3] == (
        "nullif(concat_ws('; ', "
        "CASE WHEN key IS NULL THEN 'record has no key' "
        "WHEN NOT is_valid_utf8(key) THEN 'key: invalid byte sequence for encoding \"UTF8\"' END, "
        "CASE WHEN __value.err IS NOT NULL THEN concat('value: ', __value.err) END"
        "), '') AS __err")
    # ENVELOPE NONE: a record without a key has a NULL key, not an error; BYTES cannot be wrong.
    sql = plan_of("KEY FORMAT BYTES VALUE FORMAT BYTES INCLUDE KEY").decode_sql()
    assert sql[0] == "key AS `key`"
    assert sql[3] == "nullif(concat_ws('; ', NULL, NULL), '') AS __err"
    assert sql[4:] == ["key AS __key_raw", "partition AS __partition", "offset AS __offset", "timestamp AS __ts",
                       "headers AS __headers"]


@pytest.mark.parametrize(("key", "raw_key", "label"), [
    ("k1", b"k1", "'k1'"), (b"\xffx", b"\xffx", "'\ufffdx'"), (None, b"\xff", "raw key ff"), (None, None, "no key"),
])
def test_key_labels(key, raw_key, label):
    assert key_label(key, raw_key) == label


def test_error_changes():
    def ev(key, err=None, raw_key=None, offset=7):
        return {"__is_err": err is not None, "__key": key, "__key_raw": raw_key, "__err": err,
                "__partition": 0, "__offset": offset}

    old = {"'a'": {"partition": 0, "offset": 1, "message": "x"}, "raw key ff": {"partition": 0, "offset": 2,
                                                                                "message": "y"}}
    changes = error_changes([ev("a"), ev("b"), ev("c", "value: bad"), ev(None, "key: bad", b"\xff", 9)], old)
    assert changes == {
        "'a'": None,  # healed by a later record (or tombstone)
        "'c'": {"partition": 0, "offset": 7, "message": "value: bad"},
        "raw key ff": {"partition": 0, "offset": 9, "message": "key: bad"},  # a new error overrides the old
    }


def test_table_columns_map_to_decoded_columns():
    clauses = ("KEY FORMAT TEXT VALUE FORMAT JSON INCLUDE TIMESTAMP AS ts, KEY AS k, OFFSET AS o, "
               "PARTITION, HEADERS ENVELOPE UPSERT (ORDER BY (ts, o), VALUE DECODING ERRORS = INLINE)")
    spec = ks.parse_kafka_clauses(clauses)
    columns, plan = table_layout(spec)
    table = Item("u1", "t", "table", tuple(columns), 0)
    target = batch_target(table, spec, plan)
    assert [c.name for c in columns] == ["k", "data", "error", "ts", "o", "partition", "headers"]
    assert target.sources == ("k", "data", "__err", "__ts", "__offset", "__partition", "__headers")
    assert target.order == ("timestamp", "offset") and target.inline_errors
    assert target.stored("__ts") == 3 and target.stored("__offset") == 4
    assert target.column_sql(3) == "CAST(CAST(timestamp_millis(__ts) AS TIMESTAMP_NTZ) AS TIMESTAMP_NTZ)"
    # ORDER BY (TIMESTAMP, OFFSET) with the offset not stored: compared as older than any record.
    spec = ks.parse_kafka_clauses("KEY FORMAT TEXT VALUE FORMAT TEXT INCLUDE TIMESTAMP "
                                  "ENVELOPE UPSERT (ORDER BY (TIMESTAMP, OFFSET))")
    columns, plan = table_layout(spec)
    target = batch_target(Item("u2", "t2", "table", tuple(columns), 0), spec, plan)
    assert target.order == ("timestamp", "offset") and target.stored("__offset") is None
