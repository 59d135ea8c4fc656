"""The function catalog tells the truth about the Spark SQL each function becomes.

Each entry's `spark` text is what translation writes for a call over columns of the
entry's argument types (`{0}`, `{1}`... for the columns), and every call's Spark SQL
passes the Spark guard. An entry marked `rewrite` is built by planner code too long
to spell out; its Spark SQL is still checked by the guard.
"""

from __future__ import annotations

import re

import pytest

from planner import functions, pg_functions
from planner.errors import SqlError
from planner.functions import Function, Kind
from planner.parser import parse_one
from planner.spark_guard import spark_sql
from planner.translate import SessionContext, TableSource, resolve_tree
from planner.types import SqlType, lookup

CTX = SessionContext("materialize", "u", "v", "2024-01-01 00:00:00.000000", 7)

# Column types standing for the arguments (the polymorphic ones as integers).
_SPARK_TYPES = {
    "smallint": "SMALLINT", "integer": "INT", "bigint": "BIGINT", "real": "FLOAT", "double precision": "DOUBLE",
    "numeric": "DECIMAL(38,10)", "text": "STRING", "character varying": "STRING", "character": "STRING",
    "date": "DATE", "time without time zone": "TIME(6)", "timestamp without time zone": "TIMESTAMP_NTZ",
    "timestamp with time zone": "TIMESTAMP", "boolean": "BOOLEAN", "oid": "BIGINT", "name": "STRING",
    "anyarray": "ARRAY<INT>", "anycompatiblearray": "ARRAY<INT>", "anyelement": "INT", "anynonarray": "INT",
    "anycompatible": "INT", '"any"': "INT", "json": "STRING", "jsonb": "STRING", "pg_node_tree": "STRING",
    "regclass": "BIGINT", "text[]": "ARRAY<STRING>", "bytea": "BINARY", "interval": "STRING", "record": "STRING",
}
# Arguments that must be constants (a unit, an offset): a literal, not a column.
_CONSTANTS = {("date_part", 0): "'year'", ("date_trunc", 0): "'day'", ("extract", 0): "year",
              ("ntile", 0): "2", ("lag", 1): "1", ("lead", 1): "1", ("nth_value", 1): "2",
              ("string_agg", 1): "','", ("generate_subscripts", 1): "1"}


# Set-returning functions supported in a select list only (reflection queries call them there).
_SELECT_LIST_ONLY = ("generate_subscripts", "_pg_expandarray")


def _call(f: Function) -> str:
    args = [_CONSTANTS.get((f.name, i), f"a{i}x") for i in range(len(f.args))]
    if f.name == "extract":
        return f"extract({args[0]} FROM {args[1]})"
    if f.name in ("percentile_cont", "percentile_disc", "mode"):  # ordered-set: ORDER BY's value last
        return f"{f.name}({', '.join(args[:-1])}) WITHIN GROUP (ORDER BY {args[-1]})"
    if f.name == "position":
        return f"position({args[1]} IN {args[0]})"  # PostgreSQL catalogs it as position(string, substring)
    return f"{f.name}({', '.join(args)})"


def translated(f: Function) -> str | None:
    """The Spark SQL of a call of `f`, with {0}, {1}, ... for the argument columns."""
    columns = {f"a{i}x": _SPARK_TYPES[t] for i, t in enumerate(f.args)}
    if f.name in _SELECT_LIST_ONLY:
        sql = f"SELECT {f.schema}.{_call(f)} FROM t"
    elif f.kind is Kind.TABLE:
        sql = f"SELECT * FROM {_call(f)}"
    elif f.kind is Kind.WINDOW:
        sql = f"SELECT {_call(f)} OVER (ORDER BY z) FROM t"
        columns["z"] = "INT"
    else:
        sql = f"SELECT {_call(f)} FROM t"
    # The columns' PostgreSQL types too (pg_typeof reads them), the polymorphic ones integers.
    pg_types = {f"a{i}x": SqlType(lookup(t) or lookup("integer")) for i, t in enumerate(f.args)}
    tree = resolve_tree(parse_one(sql).statement.ast, lambda name: TableSource("t", columns, pg_types=pg_types), CTX)
    text = spark_sql(tree)  # the guard passes it
    if f.kind is Kind.TABLE and f.name not in _SELECT_LIST_ONLY:
        m = re.search(r"EXPLODE\((.*?)\) AS", text)
        body = f"EXPLODE({m.group(1)})" if m else text
    else:
        m = re.match(r"^SELECT (.*?)(?: OVER \(.*\))? AS `[^`]*` FROM t AS `t`$", text, re.DOTALL)
        body = m.group(1) if m else text
    body = re.sub(r"(?:`?t`?\.)?`?a(\d)x`?", r"{\1}", body)
    # In lower case, but for string constants of characters beyond ASCII (upper's 'ß...'),
    # which lower() would change.
    return "".join(part if part.startswith("'") and not part.isascii() else part.lower()
                   for part in re.split(r"('(?:[^']|'')*')", body))


_GUARDED = ("ln", "log", "log10")
# Run by the front end of our own only (pg_functions.FRONT_END_ONLY, and to_timestamp's
# pattern form beside its epoch form): the older path refuses them.
_FRONT_END_ONLY = pg_functions.FRONT_END_ONLY | {"to_timestamp(text, text)", "date_trunc(text, interval)"}


@pytest.mark.parametrize("f", [f for f in functions.FUNCTIONS if not f.spark.startswith("<run by the server")],
                         ids=lambda f: f"{f.oid}-{f.identity}")
def test_the_catalog_says_what_each_function_becomes(f):
    if f.name in _FRONT_END_ONLY or f.identity in _FRONT_END_ONLY:
        with pytest.raises(SqlError) as err:
            translated(f)
        assert err.value.sqlstate == "0A000"
        return
    text = translated(f)
    # A SYSTEM entry's text may name what it depends on: the session, the server.
    if f.spark != "rewrite" and f.semantics is functions.Semantics.POSTGRES:
        if f.name in _GUARDED:  # the older path checks the domain around the call as well
            assert f"else {f.spark} end" in text, f"{f.identity}: {f.spark!r} is not the call in {text!r}"
        else:
            assert text == f.spark, f"{f.identity}: the catalog says {f.spark!r}, translation writes {text!r}"


def test_the_spark_functions_allowed_are_the_catalogs():
    named = functions.SPARK_FUNCTIONS
    for dangerous in ("reflect", "java_method", "try_reflect", "input_file_name", "from_protobuf",
                      "xpath", "from_xml", "read_files", "http_request", "range"):
        assert dangerous not in named


def test_the_older_paths_own_to_json_is_not_the_users():
    # json_build_object and jsonb `->` are written with Spark's to_json on the older path; a
    # user's to_json there is PostgreSQL's, which only the front end of our own runs (0A000)
    def older(sql: str) -> str:
        return spark_sql(resolve_tree(parse_one(sql).statement.ast, lambda name: None, CTX))

    assert "to_json" in older("SELECT json_build_object('a', 1.5), '{\"a\": [1]}'::jsonb -> 'a'").lower()
    for sql in ("SELECT to_json(1)", "SELECT to_json(ARRAY[1])"):
        with pytest.raises(SqlError) as err:
            older(sql)
        assert err.value.sqlstate == "0A000", sql
