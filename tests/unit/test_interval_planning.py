"""interval on the front end, without Spark: which operator and function each expression
resolves to, and the Spark SQL it becomes (planner.interval_calls, whose UDFs
spark_backend.interval_udfs registers over planner.pg_interval). Results are compared with
PostgreSQL 15 in tests/slt/own/intervals.test."""

from __future__ import annotations

import pytest

from planner import interval_calls, pg_parse
from planner.errors import SqlError
from planner.sql import bind, spark_sql
from planner.sql import plan as p
from planner.types import column_type
from spark_backend import interval_udfs

COLUMNS = (("ts", column_type("timestamp")), ("tz", column_type("timestamptz")), ("d", column_type("date")),
           ("iv", column_type("interval")), ("s", column_type("text")))


class _Catalog:
    def relation(self, schema, name):
        return bind.Relation(name, tuple(p.Column(n, t) for n, t in COLUMNS)) if name == "t" else None


def _bind(sql: str) -> p.Rel:
    return bind.Binder(_Catalog(), sql).query(pg_parse.parse_one(sql))


def _spark(sql: str) -> str:
    rel = _bind(sql)
    return spark_sql.to_spark_query(rel, lambda n: n, [c.type for c in p.columns(rel)], None, None).sql("spark")


@pytest.mark.parametrize(("expr", "result"), [
    ("ts + iv", "timestamp without time zone"), ("iv + ts", "timestamp without time zone"),
    ("tz - iv", "timestamp with time zone"), ("d + iv", "timestamp without time zone"),
    ("ts - ts", "interval"), ("tz - tz", "interval"), ("iv * 2", "interval"), ("2.5 * iv", "interval"),
    ("iv / 4", "interval"), ("-iv", "interval"), ("iv - iv", "interval"), ("iv < interval '1 day'", "boolean"),
    ("age(ts, ts)", "interval"), ("justify_interval(iv)", "interval"), ("extract(epoch FROM iv)", "numeric"),
    ("date_part('hour', iv)", "double precision"),
])
def test_operators_and_functions_resolve_as_postgres(expr, result):
    [column] = p.columns(_bind(f"SELECT {expr} FROM t"))
    assert column.type.display() == result


def test_timestamps_reach_the_udfs_as_text_and_come_back_typed():
    text = _spark("SELECT ts + iv, tz - iv FROM t")
    assert "CAST(SPARKWIRE_INTERVAL_PLUS(CAST((t0.c0) AS STRING), (t0.c3)) AS TIMESTAMP_NTZ)" in text
    assert "CAST(SPARKWIRE_INTERVAL_MINUS(CAST((t0.c1) AS STRING), (t0.c3)) AS TIMESTAMP)" in text


def test_comparisons_and_order_by_use_the_span_not_the_text():
    assert "SPARKWIRE_INTERVAL_SPAN((t0.c3)) < SPARKWIRE_INTERVAL_SPAN(('24:00:00'))" in _spark(
        "SELECT iv < interval '24 hours' FROM t")  # the literal is already interval_out's text
    assert "ORDER BY SPARKWIRE_INTERVAL_SPAN(t0.c3)" in _spark("SELECT iv FROM t ORDER BY iv")


def test_text_becomes_interval_through_interval_in():
    assert "SPARKWIRE_INTERVAL_IN(t0.c4)" in _spark("SELECT s::interval FROM t")
    assert "SPARKWIRE_INTERVAL_IN" not in _spark("SELECT '25 hours'::interval")  # a constant is read now


def test_aggregates_of_intervals():
    text = _spark("SELECT sum(iv), avg(iv), max(iv), min(iv) FILTER (WHERE d IS NULL) FROM t")
    assert "SPARKWIRE_INTERVAL_TOTAL(COLLECT_LIST(" in text and "SPARKWIRE_INTERVAL_MEAN(COLLECT_LIST(" in text
    assert "MAX_BY((t1.c3), SPARKWIRE_INTERVAL_SPAN((t1.c3)))" in text and "MIN_BY((IF(" in text


@pytest.mark.parametrize(("sql", "error"), [
    ("SELECT extract(week FROM iv) FROM t", '0A000:unit "week" not supported for type interval'),
    ("SELECT date_part('foo', iv) FROM t", '22023:unit "foo" not recognized for type interval'),
])
def test_a_unit_the_type_lacks_fails_each_value_not_the_plan(sql, error):
    # PostgreSQL's extract is strict: a NULL interval gives NULL whatever the unit
    text = _spark(sql)
    assert f"IF(t0.c3 IS NULL, NULL, RAISE_ERROR('sparkwire:{error}'))" in text


@pytest.mark.parametrize(("sql", "sqlstate", "message"), [
    ("SELECT iv + 1 FROM t", "42883", "operator does not exist: interval + integer"),
    ("SELECT '1 fortnight'::interval", "22007", 'invalid input syntax for type interval: "1 fortnight"'),
])
def test_postgres_errors(sql, sqlstate, message):
    with pytest.raises(SqlError) as err:
        _spark(sql)
    assert (err.value.sqlstate, err.value.message) == (sqlstate, message)


def test_every_udf_the_planner_writes_is_registered():
    assert set(interval_udfs._OPERATIONS) == set(interval_calls.UDF_NAMES)


def test_operators_over_constants_are_computed_while_planning():
    # so that a filter compares with a constant Spark can push down, not a UDF's value per row
    text = _spark("SELECT id FROM (SELECT 1 AS id, ts FROM t) s WHERE ts > '2024-03-31'::timestamp - interval '1 month'")
    assert "> (CAST('2024-02-29 00:00:00' AS TIMESTAMP_NTZ))" in text and "SPARKWIRE" not in text
    assert "CAST('2023-12-31 10:00:00' AS TIMESTAMP)" in _spark(
        "SELECT '2024-01-01 10:00+00'::timestamptz - interval '1 day'")
    assert "'1 day 01:00:00'" in _spark("SELECT interval '1 day' + interval '1 hour'")
    with pytest.raises(SqlError) as err:  # PostgreSQL's folding raises it too
        _spark("SELECT '9999-12-31'::date + interval '1 day'")
    assert err.value.sqlstate == "22008"


@pytest.mark.parametrize("sql", [
    "SELECT iv, count(*) FROM t GROUP BY iv",
    "SELECT DISTINCT iv FROM t",
    "SELECT iv FROM t UNION SELECT iv FROM t",
])
def test_equal_intervals_are_one_group(sql):
    # '1 day' and '24:00:00' are equal: grouped by the span, shown as any member of the group
    text = _spark(sql)
    assert "GROUP BY SPARKWIRE_INTERVAL_SPAN(" in text.upper() and "ANY_VALUE(" in text.upper()
    assert "DISTINCT" not in text.upper().split("FROM")[0]


def test_partitions_and_distinct_counts_compare_intervals_by_span():
    text = _spark("SELECT count(DISTINCT iv), sum(1) OVER (PARTITION BY iv) FROM t GROUP BY iv").upper()
    assert "COUNT(DISTINCT (SPARKWIRE_INTERVAL_SPAN(" in text and "PARTITION BY SPARKWIRE_INTERVAL_SPAN(" in text


def test_time_plus_interval_and_date_trunc_are_udfs():
    text = _spark("SELECT time '10:00' + iv, date_trunc('hour', iv) FROM t").lower()
    assert f"cast({interval_calls.UDF_NAMES['time_plus']}(" in text and ") as time)" in text
    assert f"{interval_calls.UDF_NAMES['trunc']}(('hour'), " in text


@pytest.mark.parametrize(("sql", "join"), [
    ("SELECT iv FROM t INTERSECT SELECT iv FROM t", "LEFT SEMI JOIN"),
    ("SELECT iv, s FROM t EXCEPT ALL SELECT iv, s FROM t", "LEFT ANTI JOIN"),
])
def test_intersect_and_except_pair_intervals_by_span(sql, join):
    # each side's rows numbered within their span; without ALL only the first of each counts
    text = _spark(sql).upper()
    assert join in text and "INTERSECT" not in text and "EXCEPT" not in text
    assert "PARTITION BY SPARKWIRE_INTERVAL_SPAN(" in text
    assert ("N = 1" in text) == ("ALL" not in sql)
