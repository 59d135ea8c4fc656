"""Decoding a batch of raw Kafka records (the function Spark's Python workers run per
Arrow batch), and how a Kafka table's columns map onto decoded columns: pure
functions over values, no Spark and no broker.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from planner import kafka_syntax as ks
from server.catalog import Item
from server.kafka import batch_target, error_changes, table_layout
from spark_backend.kafka_source import RAW_SCHEMA, DecodePlan, decode_batch, key_label


def raw(*records: tuple) -> pa.RecordBatch:
    """Records as (key, value[, timestamp]); partition 0, offsets 0, 1, ..."""
    rows = [(r[0], r[1], 0, i, r[2] if len(r) > 2 else 1000 + i, "[]") for i, r in enumerate(records)]
    cols = list(zip(*rows)) if rows else [[] for _ in RAW_SCHEMA]
    return pa.RecordBatch.from_arrays([pa.array(c, f.type) for c, f in zip(cols, RAW_SCHEMA)],
                                      schema=RAW_SCHEMA)


def plan_of(clauses: str) -> DecodePlan:
    spec = ks.parse_kafka_clauses(clauses)
    ks.check(spec)
    return table_layout(spec)[1]


def decoded(clauses: str, *records: tuple) -> list[dict]:
    plan = plan_of(clauses)
    out = decode_batch(plan, raw(*records))
    assert out.schema.names == plan.column_names()
    return out.to_pylist()


def test_text_upsert_with_labels_tombstones_and_missing_keys():
    rows = decoded("KEY FORMAT TEXT VALUE FORMAT TEXT ENVELOPE UPSERT",
                   (b"a", b"1"), (b"b", None), (None, b"x"))
    assert [(r["key"], r["text"], r["__tomb"], r["__err"]) for r in rows] == [
        ("a", "1", False, None),
        ("b", None, True, None),
        (None, "x", False, "record has no key"),
    ]
    assert [(r["__partition"], r["__offset"], r["__ts"]) for r in rows] == [(0, 0, 1000), (0, 1, 1001),
                                                                          (0, 2, 1002)]


def test_a_bad_record_does_not_spoil_the_batch():
    # One record that is not UTF-8 sends the whole batch down the record-by-record path.
    rows = decoded("KEY FORMAT TEXT VALUE FORMAT TEXT ENVELOPE UPSERT",
                   (b"ok", b"fine"), (b"\xff1", b"v"), (b"k", b"\xfe"))
    assert [(r["key"], r["text"]) for r in rows] == [("ok", "fine"), (None, "v"), ("k", None)]
    assert rows[0]["__err"] is None
    # The same words as Spark's own decoding of TEXT (DecodePlan.native_sql) uses.
    assert rows[1]["__err"] == 'key: invalid byte sequence for encoding "UTF8"'
    assert rows[2]["__err"] == 'value: invalid byte sequence for encoding "UTF8"'
    assert rows[1]["__key_raw"] == b"\xff1"


def test_json_is_normalized_and_bad_json_is_an_error():
    rows = decoded("KEY FORMAT TEXT VALUE FORMAT JSON ENVELOPE UPSERT",
                   (b"a", b'{"bb": 1, "a": [true, null]}'), (b"b", b"{nope"))
    assert rows[0]["data"] == '{"a": [true, null], "bb": 1}' and rows[0]["__err"] is None
    assert rows[1]["data"] is None and rows[1]["__err"].startswith("value: invalid JSON")


def test_bytes_csv_and_envelope_none():
    rows = decoded("KEY FORMAT BYTES VALUE FORMAT CSV WITH 2 COLUMNS INCLUDE KEY",
                   (b"\x00\xff", b"x,y"), (None, b"1,2"), (b"k", b"only one"))
    assert [(r["key"], r["column1"], r["column2"]) for r in rows] == [
        (b"\x00\xff", "x", "y"), (None, "1", "2"), (b"k", None, None)]
    # ENVELOPE NONE: a missing key is no error, and records carry no key label.
    assert [r["__err"] for r in rows][:2] == [None, None]
    assert rows[2]["__err"] == "value: expected 2 CSV columns, got 1"


def test_which_plans_decode_in_spark_expressions():
    assert plan_of("KEY FORMAT TEXT VALUE FORMAT BYTES ENVELOPE UPSERT").native
    assert plan_of("FORMAT TEXT").native
    assert not plan_of("KEY FORMAT TEXT VALUE FORMAT JSON ENVELOPE UPSERT").native
    assert not plan_of("KEY FORMAT JSON VALUE FORMAT TEXT ENVELOPE UPSERT").native
    assert not plan_of("VALUE FORMAT CSV WITH 2 COLUMNS").native
    # The key format does not matter when the key is not a column.
    assert plan_of("KEY FORMAT JSON VALUE FORMAT TEXT").native
    assert plan_of("FORMAT TEXT").native_sql()[2] == (
        "nullif(concat_ws('; ', CASE WHEN value IS NULL THEN NULL WHEN NOT is_valid_utf8(value) "
        "THEN 'value: invalid byte sequence for encoding \"UTF8\"' END), '') AS __err")


def test_empty_batch():
    assert decoded("KEY FORMAT TEXT VALUE FORMAT TEXT ENVELOPE UPSERT") == []


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
