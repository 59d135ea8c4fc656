"""Subqueries two levels deep lifted one level (planner.sql.hoist), without Spark: the lifted
plan refers one level out at most, and what cannot be lifted is left as it was. Results are
compared with PostgreSQL 15 in tests/slt/own/subqueries.test."""

from __future__ import annotations

import pytest

from planner import pg_parse
from planner.errors import SqlError
from planner.sql import bind, hoist, spark_sql
from planner.sql import plan as p
from planner.types import column_type

TABLES = {"s1": "a", "s2": "b", "s3": "c"}


class _Catalog:
    def relation(self, schema, name):
        column = TABLES.get(name)
        return bind.Relation(name, (p.Column(column, column_type("integer")),)) if column else None


def _bind(sql: str) -> p.Rel:
    return bind.Binder(_Catalog(), sql).query(pg_parse.parse_one(sql))


def _deepest(rel: p.Rel) -> int:
    """How far out the furthest reference of any subquery in `rel` reaches."""
    deepest = 0

    def look(node: object) -> None:
        nonlocal deepest
        if isinstance(node, p.Subquery):
            deepest = max(deepest, *p.levels_used(node.rel), 0)
            walk(node.rel)

    def walk(r: p.Rel) -> None:
        for value in vars(r).values():
            if isinstance(value, p.Rel.__args__):
                walk(value)
            else:
                for item in value if isinstance(value, tuple) else (value,):
                    p.transform(item, look)
    walk(rel)
    return deepest


@pytest.mark.parametrize("sql", [
    "SELECT a FROM s1 WHERE EXISTS (SELECT 1 FROM s2 WHERE s2.b = s1.a AND EXISTS (SELECT 1 FROM s3 WHERE s3.c = s1.a))",
    "SELECT a, (SELECT max(b) FROM s2 WHERE b <= (SELECT min(c) + 1 FROM s3 WHERE c >= s1.a)) FROM s1",
    "SELECT a FROM s1 WHERE EXISTS (SELECT 1 FROM s2 WHERE b = (SELECT c FROM s3 WHERE c > s1.a LIMIT 1))",
])
def test_a_subquery_naming_only_the_outermost_query_is_lifted(sql):
    rel = _bind(sql)
    assert _deepest(rel) == 2
    lifted = hoist.lifted(rel)
    assert _deepest(lifted) == 1
    assert [c.type for c in p.columns(lifted)] == [c.type for c in p.columns(rel)]
    spark_sql.to_spark_query(rel, lambda n: n)  # Spark SQL now, where it was 0A000


@pytest.mark.parametrize("sql", [
    # the IN compares a value of the middle query's rows
    "SELECT a, (SELECT count(*) FROM s2 WHERE b < a AND b IN (SELECT c FROM s3 WHERE c <= a)) FROM s1",
    # it names the middle query too
    "SELECT a FROM s1 WHERE EXISTS (SELECT 1 FROM s2 WHERE EXISTS (SELECT 1 FROM s3 WHERE c = b AND c = a))",
    # it could give two rows for an outer row the middle query would not have run it for (21000)
    "SELECT a FROM s1 WHERE EXISTS (SELECT 1 FROM s2 WHERE b = (SELECT c FROM s3 WHERE c > s1.a))",
])
def test_what_cannot_be_lifted_stays_refused(sql):
    rel = _bind(sql)
    assert hoist.lifted(rel) == rel
    with pytest.raises(SqlError) as err:
        spark_sql.to_spark_query(rel, lambda n: n)
    assert err.value.sqlstate == "0A000"
