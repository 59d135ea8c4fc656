"""Turning a query's rows into sqllogictest values and comparing them with a record's
expectation; pure functions over Python values (what a DB-API driver returns).

Rules (SQLite's runner): NULL prints `NULL`; an empty string `(empty)`; type I prints an
integer (a fraction is truncated toward zero, as sqlite3_column_int64 does); type R prints with
3 decimals; type T prints the text with control characters replaced by `@`. `rowsort` sorts rows
and `valuesort` sorts single values, both by string comparison. Results of more values than the
hash-threshold are compared as the MD5 of the values, each followed by a newline.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
from decimal import Decimal, InvalidOperation

from tests.slt.records import Query

_HASHED = re.compile(r"^(\d+) values hashing to ([0-9a-f]{32})$")
_LEADING_INT = re.compile(r"^\s*([+-]?\d+)")


def _float_text(v: float) -> str:
    """A double as PostgreSQL prints it: shortest round-trip digits, exponent outside 1e-4..1e15."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    if v == 0:
        return "-0" if math.copysign(1.0, v) < 0 else "0"
    d = Decimal(repr(v))
    exp = d.adjusted()
    if exp < -4 or exp >= 15:
        sign, digits, _ = d.as_tuple()
        mant = "".join(map(str, digits)).rstrip("0") or "0"
        body = mant[0] + ("." + mant[1:] if len(mant) > 1 else "")
        return f"{'-' if sign else ''}{body}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    text = format(d, "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def _as_text(v: object) -> str:
    if isinstance(v, bool):
        return "t" if v else "f"  # PostgreSQL's boolout
    if isinstance(v, float):
        return _float_text(v)
    if isinstance(v, bytes | bytearray | memoryview):
        return "\\x" + bytes(v).hex()
    return str(v)


def _as_integer(v: object) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float | Decimal):
        try:
            return str(int(v))  # truncates toward zero
        except (ValueError, OverflowError, InvalidOperation):
            return _as_text(float(v))
    text = _as_text(v)
    try:
        return str(int(Decimal(text)))
    except (InvalidOperation, ValueError, OverflowError):
        m = _LEADING_INT.match(text)
        return str(int(m.group(1))) if m else "0"


def _as_real(v: object) -> str:
    try:
        f = float(v) if isinstance(v, int | float | Decimal) else float(_as_text(v))
    except (ValueError, OverflowError):
        f = 0.0
    if math.isnan(f) or math.isinf(f):
        return _float_text(f)
    return f"{f:.3f}"


def format_value(value: object, column_type: str) -> str:
    """One value as the sqllogictest runner prints it for a column of type I, R or T."""
    if value is None:
        return "NULL"
    if column_type == "I":
        return _as_integer(value)
    if column_type == "R":
        return _as_real(value)
    text = _as_text(value)
    if text == "":
        return "(empty)"
    return "".join("@" if ord(c) < 32 or ord(c) == 127 else c for c in text)


def format_rows(rows: Sequence[Sequence[object]], types: str, sort: str) -> list[list[str]]:
    """The rows as strings, sorted by the record's mode (valuesort: one value per row)."""
    table = [[format_value(v, types[min(i, len(types) - 1)]) for i, v in enumerate(row)] for row in rows]
    if sort == "rowsort":
        table.sort()
    elif sort == "valuesort":
        table = [[v] for v in sorted(v for row in table for v in row)]
    return table


def values_hash(values: Sequence[str]) -> str:
    md5 = hashlib.md5()
    for v in values:
        md5.update(v.encode())
        md5.update(b"\n")
    return md5.hexdigest()


def compare(query: Query, rows: Sequence[Sequence[object]]) -> str | None:
    """None when `rows` is the record's expected answer, else a short description of how it
    differs (the first differing value, or the shape)."""
    width = len(query.types)
    if rows and any(len(row) != width for row in rows):
        return f"{len(rows[0])} columns, expected {width}"
    if query.expected is None:
        return None  # no `----`: the query only has to run
    table = format_rows(rows, query.types, query.sort)
    values = [v for row in table for v in row]
    hashed = _HASHED.match(query.expected[0]) if len(query.expected) == 1 else None
    if hashed:
        got = f"{len(values)} values hashing to {values_hash(values)}"
        return None if got == query.expected[0] else f"got {got}"
    expected = list(query.expected)
    if values == expected:
        return None
    # Files of other runners write one row per line, values separated by single spaces.
    lines = [" ".join(row) for row in table]
    if width > 1 and lines == expected:
        return None
    if width > 1 and len(values) != len(expected) and any(" " in line for line in expected):
        return _difference(lines, expected, "rows", "row")
    return _difference(values, expected)


def _difference(values: list[str], expected: list[str], plural: str = "values", one: str = "value") -> str:
    if len(values) != len(expected):
        shown = ", ".join(values[:8]) + (", …" if len(values) > 8 else "")
        return f"{len(values)} {plural}, expected {len(expected)}: [{shown}]"
    for i, (got, want) in enumerate(zip(values, expected, strict=True)):
        if got != want:
            return f"{one} {i + 1}: got {got!r}, expected {want!r}"
    return "differs"
