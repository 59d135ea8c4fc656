"""planner.pg_format: PostgreSQL's format() over its arguments' text (compared with
PostgreSQL 15 by tests/integration/test_function_catalog.py)."""

from __future__ import annotations

import pytest

from planner.errors import SqlError
from planner.pg_format import pg_format, quote_identifier


@pytest.mark.parametrize("fmt, args, expected", [
    ("Hello %s, %1$s %I", ["World", "a b"], 'Hello World, World "a b"'),
    ("%L %L %I", ["it's", None, "Abc"], "'it''s' NULL \"Abc\""),
    ("%L", ["a\\b"], "E'a\\\\b'"),
    ("%s|%5s|%-5s|", ["a", "b", "c"], "a|    b|c    |"),
    ("%*s|", ["4", "x"], "   x|"),
    ("%*s|", ["-4", "x"], "x   |"),  # a negative width left-justifies
    ("%1$s %-*s|", ["a", "3", "b"], "a b  |"),
    ("%3$s %1$s", ["a", "b", "c"], "c a"),
    ("%s", [None], ""),
    ("%5L|", [None], " NULL|"),
    ("100%%", [], "100%"),
    ("%s", ["é"], "é"),
    (None, ["a"], None),
])
def test_format(fmt, args, expected):
    assert pg_format(fmt, args) == expected


@pytest.mark.parametrize("fmt, args, sqlstate, message", [
    ("%s %s", ["a"], "22023", "too few arguments for format()"),
    ("%3$s %s", ["a", "b", "c"], "22023", "too few arguments for format()"),  # %s takes the 4th
    ("%x", ["1"], "22023", 'unrecognized format() type specifier "x"'),
    ("%", ["1"], "22023", "unterminated format() type specifier"),
    ("%I", [None], "22004", "null values cannot be formatted as an SQL identifier"),
    ("%0$s", ["a"], "22023", "format specifies argument 0, but arguments are numbered from 1"),
    ("%*2s", ["1", "a"], "22023", 'width argument position must be ended by "$"'),
])
def test_format_errors(fmt, args, sqlstate, message):
    with pytest.raises(SqlError) as info:
        pg_format(fmt, args)
    assert (info.value.sqlstate, info.value.message) == (sqlstate, message)


@pytest.mark.parametrize("name, quoted", [
    ("abc", "abc"), ("Abc", '"Abc"'), ("a b", '"a b"'), ("select", '"select"'), ("a$", '"a$"'),
    ("1a", '"1a"'), ("_x1", "_x1"), ('a"b', '"a""b"'), ("name", "name"),  # an unreserved keyword
])
def test_quote_identifier(name, quoted):
    assert quote_identifier(name) == quoted
