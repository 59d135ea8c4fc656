"""A SUBSCRIBE's dataflow chosen from the operator tree the default front end binds
(planner.sql.delta via server.bound_query): the same strategies as the sqlglot path's
shapes get, and the columns and types SELECT gives. Pure: no Spark, no sockets."""

from __future__ import annotations

import pytest

from planner.dataflow import DataflowPlan
from planner.sql import delta
from planner.types import column_type
from server import bound_query
from tests.catalog_stub import catalog_of, resolver_for

COLUMNS = (("a", column_type("integer")), ("b", column_type("bigint")), ("s", column_type("text")),
           ("n", column_type("numeric", (12, 4))))


CATALOG = catalog_of({"t": COLUMNS, "u": COLUMNS},
                     {"v": ([("a", column_type("integer")), ("b", column_type("bigint"))],
                            "SELECT a, b FROM t WHERE b > 1")})


def bound(sql: str) -> bound_query.BoundQuery:
    out = bound_query.plan(sql, CATALOG, resolver_for(CATALOG))
    assert out is not None, sql
    return out


def plan_dataflow(b: bound_query.BoundQuery) -> DataflowPlan:
    return delta.plan_dataflow(b.rel, b.types, b.spark_sql, b.render)


@pytest.mark.parametrize(("sql", "strategy"), [
    ("SELECT * FROM t", "linear"),
    ("SELECT a, upper(s), n * 2 FROM t WHERE b > 1", "linear"),
    ("SELECT a FROM v WHERE a < 3", "linear"),
    ("SELECT a FROM t UNION ALL SELECT a FROM u", "linear"),
    ("WITH c AS (SELECT a, s FROM t WHERE a > 0) SELECT s FROM c", "linear"),
    ("SELECT a, count(*), sum(b), min(s), max(b), avg(b), avg(n) FROM t GROUP BY a", "aggregate"),
    ("SELECT count(*) FROM t", "aggregate"),
    ("SELECT s, avg(a) FROM t GROUP BY s", "aggregate"),
    ("SELECT t.a, u.s FROM t JOIN u ON t.a = u.a WHERE u.b > 0", "join"),
    ("SELECT t.a FROM t LEFT JOIN u ON t.a = u.a", "recompute"),
    ("SELECT a, count(*) FROM t GROUP BY a HAVING count(*) > 1", "recompute"),
    ("SELECT a, sum(b) + 1 FROM t GROUP BY a", "recompute"),
    ("SELECT a, CAST(avg(b) AS integer) FROM t GROUP BY a", "recompute"),
    ("SELECT DISTINCT a FROM t", "recompute"),
    ("SELECT a FROM t UNION SELECT a FROM u", "recompute"),
    ("SELECT a FROM t WHERE a IN (SELECT a FROM u)", "recompute"),
    ("SELECT count(DISTINCT a) FROM t", "recompute"),
    # FILTER is the aggregate of its arguments NULL where the condition is not true: still per group
    ("SELECT a, count(*) FILTER (WHERE b > 1), sum(n) FILTER (WHERE s = 'x') FROM t GROUP BY a", "aggregate"),
    ("SELECT a, array_agg(b ORDER BY s) FROM t GROUP BY a", "recompute"),
    ("SELECT string_agg(s, ',') FILTER (WHERE a > 0) FROM t", "recompute"),
    # read from the operators: a comma join's WHERE equality is a join key, a set-returning
    # function in the select list is row by row, an ORDER BY alone changes no row
    ("SELECT t.a, u.s FROM t, u WHERE t.a = u.a AND u.b > 0", "join"),
    ("SELECT t.a + u.b FROM t JOIN u ON t.a = u.b + 1 AND t.s < u.s", "join"),
    ("SELECT a, generate_series(1, a) FROM t WHERE b > 0", "linear"),
    ("SELECT a, count(*) FROM t GROUP BY a ORDER BY a", "aggregate"),
    ("SELECT a FROM t ORDER BY a LIMIT 3", "recompute"),
    ("SELECT a, max(s::interval), sum(s::interval) FROM t GROUP BY a", "recompute"),
    ("SELECT a, sum(b) FROM t GROUP BY GROUPING SETS ((a), ())", "recompute"),
    ("SELECT t.a FROM t JOIN u ON t.a = u.a JOIN u AS w ON w.a = t.a", "recompute"),
    ("SELECT t.a FROM t JOIN u ON t.a < u.a", "recompute"),
    ("SELECT t.a FROM t JOIN u ON t.s::jsonb = u.s::jsonb", "recompute"),  # jsonb's = is not Spark's
    ("SELECT a, (SELECT max(a) FROM u) FROM t", "recompute"),
    ("SELECT a, row_number() OVER (ORDER BY a) FROM t", "recompute"),
    # grouped by its equality key in Spark ('1 day' = '24:00:00'), by its value in the state
    ("SELECT s::interval, count(*) FROM t GROUP BY 1", "recompute"),
])
def test_strategy_of_the_generated_query(sql, strategy):
    plan = plan_dataflow(bound(sql))
    assert plan.strategy == strategy, plan.explain()


def test_an_aggregate_keeps_the_output_order_and_its_keys():
    # The aggregate's outputs come back in the query's order whatever order the generated
    # inner SELECT lists them in, and its group key is the key the partials group by.
    plan = plan_dataflow(bound("SELECT max(b), a, count(*) FROM t GROUP BY a"))
    agg = plan.aggregate
    assert agg.outputs == (("agg", 0), ("key", 0), ("agg", 1))
    assert [a.kind for a in agg.aggregates] == ["max", "count_star"]
    assert agg.key_count == 1 and "GROUP BY" in agg.partial_sql


def test_reads_name_the_views_too():
    # DROP VIEW v ends a SUBSCRIBE over it: the view is among what the query reads.
    b = bound("SELECT a FROM v")
    assert b.reads == {"u3": "v", "u1": "t"}
    assert set(b.views) == {"u1"}  # what Spark reads: the table under the view


def test_types_are_postgresql_s():
    # avg(integer) is numeric in PostgreSQL (the sqlglot path gave a double).
    b = bound("SELECT s, avg(a), sum(b) FROM t GROUP BY s")
    assert [t.base.name for t in b.types] == ["text", "numeric", "numeric"]


def test_per_value_numeric_results_keep_their_strategy():
    # A top-level division is computed by a numeric UDF (planner.sql.value_scale), which the
    # linear strategy runs on each update; the Spark guard knows the UDFs' names.
    b = bound_query.plan("SELECT a / 3.0, sqrt(n) FROM t", CATALOG, resolver_for(CATALOG), per_value_scale=True)
    plan = plan_dataflow(b)
    assert plan.strategy == "linear"
    assert "SPARKWIRE_NUMERIC_DIV(" in plan.delta_sql and "SPARKWIRE_NUMERIC_SQRT(" in plan.delta_sql
    grouped = bound_query.plan("SELECT s, avg(n) FROM t GROUP BY s", CATALOG, resolver_for(CATALOG),
                               per_value_scale=True)
    assert plan_dataflow(grouped).strategy == "recompute"  # SUBSCRIBE plans avg without the UDF
    assert grouped.types[1].per_value_scale


def test_a_join_ships_only_the_columns_it_reads_and_filters_each_side_first():
    # u.b is only compared with a constant: checked in u's own query, never kept in the state.
    plan = plan_dataflow(bound("SELECT t.s, t.s || 'x' FROM t, u WHERE t.a = u.a AND u.b > 0 AND t.b < u.b + 7"))
    join = plan.join
    assert plan.strategy == "join" and join.key_count == 1
    assert join.left_columns == ("l0", "l1") and join.right_columns == ("r0",)  # t.s, t.b; u.b
    assert "WHERE" in join.right_sql and "WHERE" not in join.left_sql
    assert "__jk0" in join.left_sql and "__jk0" in join.right_sql
    assert join.post_sql.startswith("SELECT __sw_d.c0 AS c0, __sw_d.c1 AS c1, __sw_d.c2 AS __mz_ts")
    assert "FROM __sw_joined" in join.post_sql and "WHERE" in join.post_sql  # t.b < u.b + 7


def test_a_linear_delta_carries_the_time_and_diff_after_the_query_s_columns():
    plan = plan_dataflow(bound("SELECT upper(s), a + 1 AS x FROM t WHERE b > 1 ORDER BY x"))
    assert plan.delta_sql.startswith(
        "SELECT __sw_d.c0 AS c0, __sw_d.c1 AS c1, __sw_d.c2 AS __mz_ts, __sw_d.c3 AS __mz_diff FROM")
    assert "`__mz_ts`" in plan.delta_sql and "ORDER BY" not in plan.delta_sql


def test_aggregate_partials_sum_bigints_as_decimals():
    # A batch's sum of bigints may pass 2^63: summed as DECIMAL(20, 0), Spark cannot wrap it.
    agg = plan_dataflow(bound("SELECT a, sum(b), avg(a), count(*) FILTER (WHERE b > 0) FROM t GROUP BY a")).aggregate
    assert [x.kind for x in agg.aggregates] == ["sum", "avg", "count"]
    assert "CAST(__sw_d.c" in agg.partial_sql and "AS DECIMAL(20, 0))" in agg.partial_sql
    assert set(agg.float_sql) == {0, 1} and not agg.extreme_sql
