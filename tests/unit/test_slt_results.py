"""Formatting and comparing answers the sqllogictest way (tests/slt/results.py), without sockets."""

from __future__ import annotations

import hashlib
from decimal import Decimal

import pytest

from tests.slt.records import Query
from tests.slt.results import compare, format_rows, format_value, values_hash


@pytest.mark.parametrize(("value", "column_type", "text"), [
    (None, "I", "NULL"), (None, "T", "NULL"), (None, "R", "NULL"),
    ("", "T", "(empty)"),
    (42, "I", "42"), (-7, "I", "-7"), (True, "I", "1"), (False, "I", "0"),
    (Decimal("12.9"), "I", "12"), (Decimal("-12.9"), "I", "-12"), (2.5, "I", "2"),
    ("12.5000", "I", "12"), ("1e+20", "I", "100000000000000000000"), ("17abc", "I", "17"), ("abc", "I", "0"),
    (1, "R", "1.000"), (2.0 / 3, "R", "0.667"), (Decimal("-0.0005"), "R", "-0.001"), ("32.6666", "R", "32.667"),
    ("NaN", "R", "NaN"), ("-Infinity", "R", "-Infinity"),
    ("abc", "T", "abc"), ("a\tb\nc", "T", "a@b@c"), ("héllo", "T", "héllo"),
    (True, "T", "t"), (False, "T", "f"), (7, "T", "7"), (Decimal("1.50"), "T", "1.50"),
    (b"hi", "T", "\\x6869"),
])
def test_format_value(value: object, column_type: str, text: str) -> None:
    assert format_value(value, column_type) == text


@pytest.mark.parametrize(("value", "text"), [
    (0.1, "0.1"), (1.0, "1"), (-0.0, "-0"), (1e15, "1e+15"), (1e14, "100000000000000"),
    (123456789012345.0, "123456789012345"), (0.0001, "0.0001"), (0.00001, "1e-05"),
    (1.2345678901234e200, "1.2345678901234e+200"), (float("nan"), "NaN"), (float("inf"), "Infinity"),
])
def test_python_floats_print_as_postgresql_prints_float8(value: float, text: str) -> None:
    assert format_value(value, "T") == text


def test_sort_modes() -> None:
    rows = [(3, "b"), (10, "a"), (None, "c")]
    assert format_rows(rows, "IT", "nosort") == [["3", "b"], ["10", "a"], ["NULL", "c"]]
    # rowsort and valuesort compare strings, as the C runner's strcmp does: "10" < "3" < "NULL".
    assert format_rows(rows, "IT", "rowsort") == [["10", "a"], ["3", "b"], ["NULL", "c"]]
    assert format_rows(rows, "IT", "valuesort") == [["10"], ["3"], ["NULL"], ["a"], ["b"], ["c"]]


def test_values_hash_is_md5_of_values_each_followed_by_newline() -> None:
    assert values_hash(["1", "2"]) == hashlib.md5(b"1\n2\n").hexdigest()
    assert values_hash([]) == hashlib.md5(b"").hexdigest()


def _query(types: str, sort: str, expected: tuple[str, ...] | None, threshold: int = 0) -> Query:
    return Query(1, "SELECT", types, sort, None, expected, threshold)


def test_compare_value_per_line_and_row_per_line() -> None:
    rows = [(2, "x"), (1, None)]
    assert compare(_query("IT", "rowsort", ("1", "NULL", "2", "x")), rows) is None
    assert compare(_query("IT", "rowsort", ("1 NULL", "2 x")), rows) is None
    assert compare(_query("IT", "nosort", ("1", "NULL", "2", "x")), rows) == "value 1: got '2', expected '1'"
    assert compare(_query("IT", "rowsort", ("1 NULL", "2 y")), rows) == "row 2: got '2 x', expected '2 y'"
    assert compare(_query("IT", "rowsort", ("1 NULL",)), rows) == "2 rows, expected 1: [1 NULL, 2 x]"


def test_compare_hashed_results() -> None:
    rows = [(i,) for i in range(10)]
    digest = values_hash([str(i) for i in range(10)])
    assert compare(_query("I", "nosort", (f"10 values hashing to {digest}",), 8), rows) is None
    # The hashed form is honoured whatever the threshold, and explicit values above it too.
    assert compare(_query("I", "nosort", (f"10 values hashing to {digest}",)), rows) is None
    assert compare(_query("I", "nosort", tuple(str(i) for i in range(10)), 8), rows) is None
    wrong = compare(_query("I", "nosort", (f"10 values hashing to {digest}",), 8), rows[::-1])
    assert wrong is not None and wrong.startswith("got 10 values hashing to ")
    # valuesort hashes the sorted values, so order does not matter.
    assert compare(_query("I", "valuesort", (f"10 values hashing to {digest}",), 8), rows[::-1]) is None


def test_compare_shape_differences() -> None:
    assert compare(_query("II", "nosort", ("1", "2")), [(1,)]) == "1 columns, expected 2"
    assert compare(_query("I", "nosort", ()), []) is None
    assert compare(_query("I", "nosort", ()), [(1,)]) == "1 values, expected 0: [1]"
    assert compare(_query("I", "nosort", None), [(1,), (2,)]) is None  # no `----`: not checked
