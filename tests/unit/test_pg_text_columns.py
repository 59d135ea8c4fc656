"""PostgreSQL text output read a column at a time (the snapshot and stream fast path).

`writes.text_columns_to_updates` must give exactly the table that reading every value with
`decode_text` and `rows_to_updates` gives, or raise the same error; Arrow kernels may only
take over where they read the text exactly as decode_text does. Each case below is checked
both ways, and the texts PostgreSQL's output functions print are checked to take the fast path.
"""

from __future__ import annotations

import math

import pyarrow as pa
import pytest

from planner.codecs.text_in import decode_text
from planner.errors import SqlError
from planner.types import BY_NAME, SqlType
from server import writes
from server.catalog_items import Column, Item


def typ(name: str, typmod: int = -1, array: bool = False) -> SqlType:
    return SqlType(BY_NAME[name], typmod, array)


def numeric(p: int, s: int) -> SqlType:
    return typ("numeric", ((p << 16) | s) + 4)


def item_of(t: SqlType, not_null: bool = False) -> Item:
    return Item("u1", "t", "table", (Column("v", t, not_null),), 0)


# (type, texts as PostgreSQL prints them: the fast path must take them all)
PRINTED = [
    (typ("boolean"), ["t", "f", None]),
    (typ("smallint"), ["0", "-32768", "32767", None]),
    (typ("integer"), ["-2147483648", "2147483647", "42"]),
    (typ("bigint"), ["-9223372036854775808", "9223372036854775807", None, "0"]),
    (typ("real"), ["1.25", "-0", "0", "3.4028235e+38", "1e-45", "Infinity", "-Infinity", "NaN", "0.1", None]),
    (typ("double precision"), ["2.5", "1e+308", "5e-324", "-0", "0.1", "Infinity", "NaN", "1.7976931348623157e+308"]),
    (typ("numeric"), ["0", "-12345678901234567.123456789", "0.0000000001", "1.000000000000", "500.50", None]),
    (numeric(12, 2), ["500.50", "-0.00", "9999999999.99", "0.00", None]),
    (numeric(12, 3), ["999999999.999", "-0.001"]),
    (typ("text"), ["plain", "", "tab\there\nnewline \\ back \\N", "ünïcödé ✓", None]),
    (typ("character varying", 20 + 4), ["vc", "", "ünïcödé ✓", "x" * 20, None]),
    (typ("character varying"), ["any length at all" * 10]),
    (typ("character", 5 + 4), ["ab   ", "x    ", "     ", "ünï ✓", None]),
    (typ("uuid"), ["a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "00000000-0000-0000-0000-000000000000", None]),
    (typ("bytea"), ["\\x00ff10", "\\x", "\\x5c0a094e", None, "\\xDEADbeef"]),
    (typ("date"), ["2024-02-29", "0001-01-01", "9999-12-31", "1970-01-01", None]),
    (typ("time without time zone"), ["12:34:56.789", "00:00:00", "23:59:59.999999", None]),
    (typ("timestamp without time zone"),
     ["2024-01-02 03:04:05.123456", "1970-01-01 00:00:00", "0001-01-01 00:00:00", "9999-12-31 23:59:59.999999",
      None]),
    (typ("timestamp with time zone"),
     ["2024-01-02 03:04:05.5+00", "1999-12-31 23:59:59.999999+00", "2200-04-12 07:17:16+00",
      "2024-01-02 03:04:05+05:30", "2024-01-02 03:04:05-07", None]),
]

# Texts PostgreSQL would not print (another DateStyle, a historical offset, out of range,
# input-only spellings): read value by value, with the same values or the same errors.
UNPRINTED = [
    (typ("boolean"), ["true", "yes", "0", " t "]),
    (typ("smallint"), ["32768"]),
    (typ("integer"), [" 4", "+3", "1.5"]),
    (typ("real"), ["1e39", "1e-50", "inf", " 2.5"]),
    (typ("double precision"), ["1e400", "1e-400", "-inf", "0x1p3"]),
    (typ("numeric"), ["NaN"]),
    (typ("numeric"), ["0.00000000001"]),
    (typ("numeric"), ["1e5", "12345678901234567890123456789"]),
    (numeric(12, 2), ["0.125"]),
    (numeric(12, 2), ["12345678901.5"]),
    (numeric(12, 2), ["Infinity"]),
    (typ("character varying", 3 + 4), ["abc  "]),
    (typ("character varying", 3 + 4), ["abcd"]),
    (typ("character", 3 + 4), ["a", "abcd "]),
    (typ("text"), [b"\xff\xfe"]),
    (typ("uuid"), ["A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11", "{a0eebc999c0b4ef8bb6d6bb9bd380a11}"]),
    (typ("bytea"), ["\\x0 0", "plain", "\\x0"]),
    (typ("bytea"), ["\\xzz"]),
    (typ("date"), ["0044-03-15 BC"]),
    (typ("date"), ["10000-01-01"]),
    (typ("date"), ["01/02/2024", "2024-1-2"]),
    (typ("time without time zone"), ["24:00:00"]),
    (typ("time without time zone"), ["12:34", "allballs"]),
    (typ("timestamp without time zone"), ["infinity"]),
    (typ("timestamp without time zone"), ["2024-01-02 03:04:05+02", "2024-01-02T03:04:05"]),
    (typ("timestamp with time zone"), ["2024-01-02 03:04:05+05:53:28", "2024-01-02 03:04:05"]),
    (typ("timestamp with time zone"), ["0001-01-01 00:30:00+01"]),
    (typ("timestamp with time zone"), ["0044-03-15 00:00:00+00 BC"]),
]

# Types read value by value in any case: the result must still be the same.
PER_VALUE = [
    (typ("interval"), ["1 year 2 mons 3 days 04:05:06.789", "-1 days -00:00:01", "00:00:00", None]),
    (typ("json"), ['{"a": [1, 2.5, "x"]}', "[]", '"str"', None]),
    (typ("jsonb"), ['{"a": true, "b": {"c": null}}', "123.5", None]),
    (typ("integer", array=True), ["{1,2,NULL}", "{}", "{-1}", None]),
    (typ("text", array=True), ['{"x y","q\\"uote",NULL,"co,ma",""}', '{"NULL","\\\\","{}"}']),
]


def raw(texts: list) -> pa.Array:
    return pa.array([t.encode() if isinstance(t, str) else t for t in texts], pa.binary())


def slow(item: Item, texts: list, diff: int) -> pa.Table:
    """What the source did before: decode_text a value at a time, then rows_to_updates."""
    t = item.columns[0].type
    rows = [[None if v is None else decode_text(t, v.encode() if isinstance(v, str) else v)] for v in texts]
    return writes.rows_to_updates(item, rows, diff)


def outcome(fn):
    try:
        return fn(), None
    except (SqlError, ArithmeticError, ValueError) as exc:
        return None, (type(exc), getattr(exc, "sqlstate", None), str(exc))


def same_values(a: pa.Table, b: pa.Table) -> bool:
    if a.schema != b.schema or a.num_rows != b.num_rows:
        return False
    for x, y in zip(a.column(0).to_pylist(), b.column(0).to_pylist()):
        if isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y):
            continue
        if x != y or (isinstance(x, float) and math.copysign(1, x) != math.copysign(1, y)):
            return False
    return a.drop_columns([a.column_names[0]]).equals(b.drop_columns([b.column_names[0]]))


def check_same(t: SqlType, texts: list, diff: int = 1) -> None:
    item = item_of(t)
    want, want_err = outcome(lambda: slow(item, texts, diff))
    got, got_err = outcome(lambda: writes.text_columns_to_updates(item, [raw(texts)], len(texts), diff))
    assert got_err == want_err, (t.display(), texts)
    if want is not None:
        assert same_values(got, want), (t.display(), texts, got.column(0).to_pylist(), want.column(0).to_pylist())


@pytest.mark.parametrize(("t", "texts"), PRINTED, ids=[f"{t.display()}-{i}" for i, (t, _) in enumerate(PRINTED)])
def test_printed_text_takes_the_fast_path_with_the_same_values(t, texts):
    check_same(t, texts)
    check_same(t, texts, diff=-1)
    assert writes._FAST_TEXT[t.base.name](t, raw(texts)) is not None, "fell back to value-by-value reading"


@pytest.mark.parametrize(("t", "texts"), UNPRINTED + PER_VALUE,
                         ids=[f"{t.display()}-{i}" for i, (t, _) in enumerate(UNPRINTED + PER_VALUE)])
def test_other_text_reads_as_decode_text_reads_it(t, texts):
    check_same(t, texts)


def test_each_unprinted_case_falls_back():
    """The cases above exercise the fallback: the fast path refuses every one of them."""
    for t, texts in UNPRINTED:
        fast = writes._FAST_TEXT[t.base.name]
        try:
            assert fast(t, raw(texts)) is None, (t.display(), texts)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass


def test_not_null_and_empty_and_several_columns():
    item = Item("u2", "t", "table", (Column("a", typ("integer"), True), Column("b", typ("text")),
                                      Column("c", numeric(10, 2))), 0)
    cols = [raw(["1", "2"]), raw([None, "x"]), raw(["1.50", None])]
    got = writes.text_columns_to_updates(item, cols, 2, diff=-1)
    assert got.equals(writes.rows_to_updates(item, [[1, None, decode_text(numeric(10, 2), b"1.50")],
                                                    [2, "x", None]], -1))
    empty = writes.text_columns_to_updates(item, [raw([]) for _ in range(3)], 0)
    assert empty.equals(writes.rows_to_updates(item, []))
    with pytest.raises(SqlError) as err:
        writes.text_columns_to_updates(item, [raw(["1", None]), raw(["a", "b"]), raw(["1", "2"])], 2)
    assert err.value.sqlstate == "23502"


def test_decode_callback_reads_the_fallback_values():
    """A caller's own reader (the source's, which refuses rounding) sees every value the
    kernels could not take, with its column position."""
    item = item_of(typ("numeric"))
    seen = []

    def decode(pos: int, data: bytes):
        seen.append((pos, data))
        return decode_text(item.columns[pos].type, data)

    got = writes.text_columns_to_updates(item, [raw(["1.5", "0.00000000001", None])], 3, decode=decode)
    assert seen == [(0, b"1.5"), (0, b"0.00000000001")]
    assert got.column(0).to_pylist()[2] is None


def test_chunked_and_sliced_input():
    t = typ("bytea")
    arr = raw(["\\x00", None, "\\xff01", "\\x"])
    for piece in (arr.slice(1), pa.chunked_array([arr.slice(0, 2), arr.slice(2)])):
        texts = piece.to_pylist()
        want = slow(item_of(t), texts, 1)
        got = writes.text_columns_to_updates(item_of(t), [piece], len(piece))
        assert got.equals(want)
