"""Choosing a SUBSCRIBE's dataflow strategy: pure planning over sqlglot trees."""

from __future__ import annotations

import pytest
import sqlglot

from planner.dataflow import plan_dataflow
from planner.parser import parse_one
from planner.translate import SessionContext, TableSource, ViewSource, resolve_tree

CTX = SessionContext("materialize", "materialize", "v", "2024-01-01 00:00:00")


def resolve(name: str):
    if name in ("t", "u"):
        return TableSource(f"__sw_1_{name}", {"a": "INT", "b": "BIGINT", "s": "STRING"})
    if name == "v":
        return ViewSource(sqlglot.parse_one("SELECT a, b FROM t WHERE b > 1", read="postgres"))
    return None


def plan(sql: str):
    return plan_dataflow(resolve_tree(parse_one(sql).statement.ast, resolve, CTX))


@pytest.mark.parametrize(("sql", "strategy"), [
    ("SELECT * FROM t", "linear"),
    ("SELECT a, upper(s) FROM t WHERE b > 1", "linear"),
    ("SELECT a FROM v WHERE a < 3", "linear"),
    ("SELECT a FROM t UNION ALL SELECT a FROM u", "linear"),
    ("SELECT a, count(*), sum(b), min(s), max(b), avg(b) FROM t GROUP BY a", "aggregate"),
    ("SELECT count(*) FROM t", "aggregate"),
    ("SELECT t.a, u.s FROM t JOIN u ON t.a = u.a WHERE u.b > 0", "join"),
    ("SELECT t.a FROM t LEFT JOIN u ON t.a = u.a", "recompute"),
    ("SELECT a, count(*) FROM t GROUP BY a HAVING count(*) > 1", "recompute"),
    ("SELECT DISTINCT a FROM t", "recompute"),
    ("SELECT a FROM t UNION SELECT a FROM u", "recompute"),
    ("SELECT a FROM t WHERE a IN (SELECT a FROM u)", "recompute"),
    ("SELECT count(DISTINCT a) FROM t", "recompute"),
])
def test_strategy(sql, strategy):
    p = plan(sql)
    assert p.strategy == strategy, p.explain()
    assert p.explain()[0] == f"strategy: {strategy}"
    if strategy == "recompute":
        assert any(line.startswith("reason: ") for line in p.explain())


def test_linear_delta_sql_carries_timestamp_and_diff_through_views():
    p = plan("SELECT a FROM v")
    assert p.delta_sql.count("__mz_ts") >= 2 and p.delta_sql.count("__mz_diff") >= 2


def test_aggregate_partials():
    p = plan("SELECT a, sum(b), min(s) FROM t WHERE b > 0 GROUP BY a")
    agg = p.aggregate
    assert agg.key_count == 1 and not agg.is_global
    assert [a.kind for a in agg.aggregates] == ["sum", "min"]
    assert "GROUP BY" in agg.partial_sql and "__mz_ts" in agg.partial_sql and "WHERE" in agg.partial_sql
    assert set(agg.extreme_sql) == {1}
    assert plan("SELECT count(*) FROM t").aggregate.is_global


def test_join_sides_and_post_projection():
    p = plan("SELECT t.a, u.s FROM t JOIN u ON u.a = t.b WHERE t.a > 1")
    j = p.join
    assert j.key_count == 1
    assert "__jk0" in j.left_sql and "__jk0" in j.right_sql
    assert "__sw_joined" in j.post_sql and "WHERE" in j.post_sql


@pytest.mark.parametrize(("sql", "strategy"), [
    ("WITH c AS (SELECT a, b FROM t) SELECT a FROM c WHERE b > 1", "linear"),
    ("WITH c AS (SELECT a, b FROM t), d AS (SELECT a FROM c WHERE b > 2) SELECT a, count(*) FROM d GROUP BY a",
     "aggregate"),
    ("WITH c AS (SELECT a, s FROM t) SELECT c.a, u.s FROM c JOIN u ON c.a = u.a", "join"),
    ("WITH c AS (SELECT a FROM t) SELECT * FROM (WITH c AS (SELECT b AS a FROM u) SELECT a FROM c) AS z",
     "linear"),
])
def test_ctes_are_inlined_like_views(sql, strategy):
    p = plan(sql)
    assert p.strategy == strategy, p.explain()
    assert "WITH" not in (p.delta_sql or p.aggregate and p.aggregate.partial_sql or p.join.left_sql)


def test_a_nested_cte_reads_its_own_definition():
    p = plan("WITH c AS (SELECT a FROM t) SELECT * FROM (WITH c AS (SELECT b AS a FROM u) SELECT a FROM c) AS z")
    assert "__sw_1_u" in p.delta_sql and "__sw_1_t" not in p.delta_sql


def test_sums_negate_retractions_instead_of_multiplying():
    """decimal × bigint would widen past 38 digits and cut the scale to 6; a retraction's
    value is negated instead (every stored update has a diff of ±1)."""
    agg = plan("SELECT a, sum(b), avg(b) FROM t GROUP BY a").aggregate
    assert "__mz_diff < 0, -(" in agg.partial_sql and "* `t`.__mz_diff" not in agg.partial_sql
    assert set(agg.float_sql) == {0, 1}
