"""Aggregate calls in the front end's binder (planner.sql.bind_aggregates): FILTER, ORDER BY
inside the call, DISTINCT's order, and PostgreSQL's errors; then the Spark SQL they become
(planner.sql.spark_aggregates). Pure: no Spark, no sockets. Their results are compared with
PostgreSQL 15 in tests/slt/own/aggregates.test."""

from __future__ import annotations

import pytest

from planner import pg_parse
from planner.errors import SqlError
from planner.sql import bind, spark_sql
from planner.sql import plan as p
from planner.types import column_type

TABLES = {"t": (("a", column_type("integer")), ("b", column_type("integer")), ("c", column_type("text")))}


class _Catalog:
    def relation(self, schema, name):
        cols = TABLES.get(name)
        return bind.Relation(name, tuple(p.Column(n, t) for n, t in cols)) if cols else None


def _bind(sql: str) -> p.Rel:
    return bind.Binder(_Catalog(), sql).query(pg_parse.parse_one(sql))


def _aggregates(sql: str) -> tuple[p.AggCall, ...]:
    rel = _bind(sql)
    while not isinstance(rel, p.Reduce):
        rel = rel.input
    return rel.aggregates


def _spark(sql: str) -> str:
    rel = _bind(sql)
    return spark_sql.to_spark_query(rel, lambda n: n, [c.type for c in p.columns(rel)], None, None).sql("spark")


def _column(index: int) -> p.ColRef:
    return p.ColRef(0, index, TABLES["t"][index][1])


def test_filter_and_order_are_kept_where_they_matter():
    count, arr, total = _aggregates("SELECT count(*) FILTER (WHERE a > 1), array_agg(a ORDER BY b DESC), "
                                    "sum(a ORDER BY b) FROM t")
    assert count.filter is not None and count.filter.type.base.name == "boolean"
    assert arr.order == (p.WindowKey(_column(1), True, True),)  # DESC puts NULLs first, as PostgreSQL's
    assert total.order == ()  # a sum does not show its input's order


def test_distinct_sorts_by_the_order_by_keys_then_the_other_arguments():
    [agg] = _aggregates("SELECT string_agg(DISTINCT c, ',' ORDER BY c DESC) FROM t")
    assert [(k.expr, k.descending) for k in agg.order] == [(_column(2), True), (agg.args[1], False)]
    [agg] = _aggregates("SELECT array_agg(DISTINCT a) FROM t")
    assert agg.order == (p.WindowKey(_column(0), False, False),)


@pytest.mark.parametrize(("sql", "sqlstate", "message"), [
    ("SELECT lower(c) FILTER (WHERE true) FROM t", "42809", "FILTER specified, but lower is not an aggregate function"),
    ("SELECT lower(DISTINCT c) FROM t", "42809", "DISTINCT specified, but lower is not an aggregate function"),
    ("SELECT lower(c ORDER BY c) FROM t", "42809", "ORDER BY specified, but lower is not an aggregate function"),
    ("SELECT now(*)", "42809", "now(*) specified, but now is not an aggregate function"),
    ("SELECT lower(*) FROM t", "42883", "function lower() does not exist"),
    ("SELECT count(*) FILTER (WHERE a) FROM t", "42804", "argument of FILTER must be type boolean, not type integer"),
    ("SELECT count(*) FILTER (WHERE sum(a) > 1) FROM t", "42803", "aggregate functions are not allowed in FILTER"),
    ("SELECT count(*) FILTER (WHERE rank() OVER () > 1) FROM t", "42P20", "window functions are not allowed in FILTER"),
    ("SELECT sum(a ORDER BY sum(b)) FROM t", "42803", "aggregate function calls cannot be nested"),
    ("SELECT array_agg(DISTINCT a ORDER BY b) FROM t", "42P10",
     "in an aggregate with DISTINCT, ORDER BY expressions must appear in argument list"),
    ("SELECT count(DISTINCT a) OVER () FROM t", "0A000", "DISTINCT is not implemented for window functions"),
    ("SELECT array_agg(a ORDER BY a) OVER () FROM t", "0A000",
     "aggregate ORDER BY is not implemented for window functions"),
    ("SELECT rank() FILTER (WHERE a > 1) OVER () FROM t", "0A000",
     "FILTER is not implemented for non-aggregate window functions"),
    ("SELECT sum(a) FILTER (WHERE sum(a) > 1) OVER () FROM t", "42803", "aggregate functions are not allowed in FILTER"),
    ("SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY a) OVER () FROM t", "0A000",
     "OVER is not supported for ordered-set aggregate percentile_cont"),
])
def test_postgres_errors(sql, sqlstate, message):
    with pytest.raises(SqlError) as err:
        _bind(sql)
    assert (err.value.sqlstate, err.value.message) == (sqlstate, message)


def test_an_aggregate_whose_filter_names_only_an_outer_column_is_left_to_the_older_path():
    # PostgreSQL evaluates it in the outer query (its level is the lowest its inputs name)
    with pytest.raises(p.NotYet):
        _bind("SELECT (SELECT count(*) FILTER (WHERE t.a > 1) FROM t AS u) FROM t")


def test_filter_nulls_the_arguments_of_an_aggregate_that_skips_nulls():
    text = _spark("SELECT count(*) FILTER (WHERE a > 1), sum(b) FILTER (WHERE c = 'x') FROM t")
    assert "COUNT(IF(" in text and "SUM((IF(" in text and "FILTER" not in text


def test_collecting_aggregates_sort_with_a_comparator_of_postgres_order():
    text = _spark("SELECT array_agg(a ORDER BY b DESC) FILTER (WHERE c IS NOT NULL) FROM t")
    assert "ARRAY_SORT(COLLECT_LIST(IF(" in text
    # DESC NULLS FIRST: a NULL key sorts before a value, a larger value before a smaller one
    assert "WHEN sw_l.k0 IS NULL AND NOT sw_r.k0 IS NULL THEN -1" in text
    assert "WHEN sw_l.k0 < sw_r.k0 THEN 1" in text
    assert "COLLECT_SET" in _spark("SELECT array_agg(DISTINCT a) FROM t")


def test_subquery_and_correlated_inputs_are_computed_below_the_aggregate():
    # Spark refuses a subquery inside array_sort's comparator or transform, and an aggregate
    # over an expression of both outer and local columns
    text = _spark("SELECT array_agg(a) FILTER (WHERE EXISTS (SELECT 1 FROM t u WHERE u.b = t.a)) FROM t")
    collect = text[text.index("COLLECT_LIST"):]
    assert "EXISTS" not in collect.split("FROM")[0]
