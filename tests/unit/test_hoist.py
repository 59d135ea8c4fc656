"""Subqueries two levels deep lifted one level or given the outer values as columns
(planner.sql.hoist), without Spark: the plan then refers one level out at most. Results are
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
    # in the middle query's select list, three levels deep
    ("SELECT a, (SELECT b + (SELECT count(*) FROM s3 WHERE c < b + a AND EXISTS "
     "(SELECT 1 FROM s3 AS x WHERE x.c = a - b + s3.c)) FROM s2 ORDER BY b LIMIT 1) FROM s1"),
    # in an aggregate's argument: computed by a Map below the aggregate, and forwarded there
    "SELECT a, (SELECT sum((SELECT c FROM s3 WHERE c = b + a LIMIT 1)) FROM s2) FROM s1",
])
def test_what_cannot_be_lifted_is_forwarded(sql):
    # The outer values the subquery names become columns of the middle query's operator.
    rel = _bind(sql)
    assert _deepest(rel) >= 2
    assert hoist.lifted(rel) == rel
    forwarded = hoist.forwarded(rel)
    assert _deepest(forwarded) == 1
    assert [c.type for c in p.columns(forwarded)] == [c.type for c in p.columns(rel)]
    spark_sql.to_spark_query(rel, lambda n: n)


@pytest.mark.parametrize("sql", [
    # in a join's ON it is neither lifted nor forwarded
    ("SELECT a FROM s1 WHERE EXISTS (SELECT 1 FROM s2 JOIN s3 ON b = c AND EXISTS "
     "(SELECT 1 FROM s3 AS x WHERE x.c = s1.a + b))"),
])
def test_what_cannot_be_forwarded_stays_refused(sql):
    rel = _bind(sql)
    assert hoist.forwarded(hoist.lifted(rel)) == rel
    with pytest.raises(SqlError) as err:
        spark_sql.to_spark_query(rel, lambda n: n)
    assert err.value.sqlstate == "0A000"


def test_a_correlated_limit_is_the_rows_numbered_in_order():
    # Spark decorrelates `ORDER BY … LIMIT` into a global sort and an unordered row_number
    # per outer row, which a shuffle between them loses; a window ordered by the keys holds.
    sql = spark_sql.to_spark_query(_bind("SELECT a, (SELECT b + a FROM s2 ORDER BY b DESC LIMIT 2 OFFSET 1) "
                                         "FROM s1"), lambda n: n).sql("spark")
    assert "ROW_NUMBER() OVER (ORDER BY t2.c0 DESC NULLS FIRST) AS rn" in sql
    assert "WHERE t4.rn > CAST(CAST(1 AS BIGINT) AS INT) AND t4.rn <= CAST(CAST(CAST(1 AS BIGINT) AS INT) AS BIGINT) + " \
        "CAST(CAST(2 AS BIGINT) AS INT)" in sql and "LIMIT" not in sql
    # uncorrelated, Spark runs it once: ORDER BY and LIMIT as written
    plain = spark_sql.to_spark_query(_bind("SELECT a, (SELECT b FROM s2 ORDER BY b LIMIT 1) FROM s1"),
                                     lambda n: n).sql("spark")
    assert "ORDER BY t2.c0 ASC NULLS LAST LIMIT" in plain and "ROW_NUMBER" not in plain


def test_a_lateral_subquery_reads_the_left_one_level_out():
    rel = _bind("SELECT a, x FROM s1, LATERAL (SELECT a + b AS x FROM s2) l")
    assert p.levels_used(rel) == {0}  # the right's reference to the left is inside the join
    sql = spark_sql.to_spark_query(rel, lambda n: n).sql("spark")
    assert "CROSS JOIN LATERAL (SELECT" in sql


def test_a_lateral_subquery_naming_a_query_further_out_gets_it_through_the_left():
    # inside the EXISTS, the LATERAL names s1 two levels out: the left computes it beside its
    # columns (a Map of the outer reference), the right reads that one level out
    rel = _bind("SELECT a FROM s1 WHERE EXISTS (SELECT 1 FROM s2, LATERAL (SELECT b + s1.a AS s) z WHERE z.s = 4)")
    with pytest.raises(SqlError):
        spark_sql._Generator(lambda n: n, None).query(rel)
    forwarded = hoist.forwarded(rel)
    assert forwarded != rel and [c.type for c in p.columns(forwarded)] == [c.type for c in p.columns(rel)]
    spark_sql.to_spark_query(rel, lambda n: n)
