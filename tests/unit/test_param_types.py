"""Parameter types reported in ParameterDescription (server/param_types.py): beside a
column or in a cast by planner.params, otherwise by what the front end's binding gives
each `$n`, as PostgreSQL's parse analysis does. Expected types are PostgreSQL 15's
(`PREPARE s AS …; SELECT parameter_types FROM pg_prepared_statements`). No sockets."""

from __future__ import annotations

import pytest

from planner.parser import parse_one
from planner.types import column_type
from server.param_types import statement_param_types
from tests.catalog_stub import catalog_of

CATALOG = catalog_of({"t": [("a", column_type("integer")), ("s", column_type("text")),
                            ("f", column_type("double precision")), ("r", column_type("integer", is_array=True))]})


def types_of(sql: str, declared: dict[int, int] | None = None, frontend: bool = True) -> list[str]:
    parsed = parse_one(sql)
    found = statement_param_types(parsed.statement, parsed.params, declared or {}, CATALOG, frontend)
    return [found[n].display() for n in sorted(found)]


@pytest.mark.parametrize(("sql", "expected"), [
    ("SELECT $1 + 1", ["integer"]),
    ("SELECT $1 + 1.5", ["numeric"]),
    ("SELECT upper($1)", ["text"]),
    ("SELECT $1 || 'x'", ["text"]),
    ("SELECT abs($1)", ["double precision"]),  # abs(float8) is the preferred candidate
    ("SELECT a FROM t WHERE a + $1 > $2", ["integer", "integer"]),
    ("SELECT a FROM t WHERE f * 2 = $1", ["double precision"]),
    ("SELECT a FROM t WHERE a IN (SELECT $1 * 2)", ["integer"]),
    ("SELECT a FROM t LIMIT $1", ["bigint"]),
    ("SELECT $1::date + 1", ["date"]),
    ("SELECT $1", ["text"]),  # nothing tells: text, as PostgreSQL reports unknown's text
    ("SELECT a FROM t WHERE a = $1", ["integer"]),  # beside a column: planner.params
    ("INSERT INTO t (a, f) VALUES ($1 + 1, $2 * 2), ($3, 4)", ["integer", "integer", "integer"]),
    ("INSERT INTO t (a) SELECT $1 + 1", ["integer"]),
    ("UPDATE t SET a = $1 + 1 WHERE s = upper($2)", ["integer", "text"]),
    ("DELETE FROM t WHERE a = $1 - 1", ["integer"]),
])
def test_postgresql_s_inference(sql, expected):
    assert types_of(sql) == expected


def test_a_declared_type_is_kept():
    assert types_of("SELECT $1 + 1", {1: 20}) == ["bigint"]


def test_the_older_path_leaves_what_it_cannot_tell_as_text():
    assert types_of("SELECT $1 + 1", frontend=False) == ["text"]


def test_a_statement_the_front_end_refuses_or_does_not_cover_keeps_text():
    assert types_of("SELECT $1 + 1 FROM nosuch") == ["text"]  # its error comes when it runs
    assert types_of("SELECT $1 + 1 FROM pg_class") == ["text"]  # a system relation: older path
