"""Window functions on the PostgreSQL front end (planner/sql bind → plan → Spark SQL), without
Spark: PostgreSQL's result types, NULL order written out for Spark (whose default differs),
what is refused where, and what still takes the sqlglot path."""

from __future__ import annotations

import pytest

from planner.errors import SqlError
from planner.types import column_type
from server import bound_query
from tests.catalog_stub import catalog_of, resolver_for

CATALOG = catalog_of({"w": [("g", column_type("text")), ("a", column_type("integer"))],
                      "wn": [("n", column_type("numeric", (6, 2)))]})


def bound(sql: str):
    return bound_query.plan(sql, CATALOG, resolver_for(CATALOG))


def test_types_and_spark_form():
    b = bound("SELECT row_number() OVER (PARTITION BY g ORDER BY a), sum(a) OVER (), avg(a) OVER (), "
              "lag(a, 2) OVER (ORDER BY a DESC) FROM w")
    assert [t.base.name for t in b.types] == ["bigint", "bigint", "numeric", "integer"]
    # PostgreSQL sorts NULLs last ascending and first descending; Spark's default is the reverse.
    assert "ROW_NUMBER() OVER (PARTITION BY t0.c0 ORDER BY t0.c1 ASC NULLS LAST)" in b.spark_sql
    assert "LAG(t0.c1, 2) OVER (ORDER BY t0.c1 DESC NULLS FIRST)" in b.spark_sql


def test_an_aggregate_of_the_groups_over_a_window():
    b = bound("SELECT g, sum(count(*)) OVER () FROM w GROUP BY g")
    assert [t.base.name for t in b.types] == ["text", "numeric"]


@pytest.mark.parametrize(("sql", "sqlstate"), [
    ("SELECT a FROM w WHERE row_number() OVER () > 1", "42P20"),
    ("SELECT sum(row_number() OVER ()) FROM w", "42803"),
    ("SELECT lower(g) OVER () FROM w", "42809"),
    ("SELECT nosuch(a) OVER () FROM w", "42883"),
    ("SELECT g, a, sum(a) OVER () FROM w GROUP BY g", "42803"),
])
def test_errors(sql, sqlstate):
    with pytest.raises(SqlError) as err:
        bound(sql)
    assert err.value.sqlstate == sqlstate


def test_frames_and_named_windows():
    b = bound("SELECT sum(a) OVER (ORDER BY a ROWS BETWEEN 1 PRECEDING AND CURRENT ROW), "
              "rank() OVER win, last_value(a) OVER (win RANGE BETWEEN CURRENT ROW AND 2 FOLLOWING) "
              "FROM w WINDOW win AS (PARTITION BY g ORDER BY a)")
    assert "SUM((t0.c1)) OVER (ORDER BY t0.c1 ASC NULLS LAST ROWS BETWEEN 1 PRECEDING AND CURRENT ROW)" in b.spark_sql
    # rank has no use for a frame: PostgreSQL ignores one, Spark would refuse it
    assert "RANK() OVER (PARTITION BY t0.c0 ORDER BY t0.c1 ASC NULLS LAST)" in b.spark_sql
    assert ("LAST_VALUE((t0.c1)) OVER (PARTITION BY t0.c0 ORDER BY t0.c1 ASC NULLS LAST RANGE BETWEEN CURRENT ROW "
            "AND 2 FOLLOWING)") in b.spark_sql


@pytest.mark.parametrize(("sql", "sqlstate", "message"), [
    ("SELECT rank() OVER nope FROM w", "42704", 'window "nope" does not exist'),
    ("SELECT rank() OVER (win PARTITION BY a) FROM w WINDOW win AS (ORDER BY a)", "42P20",
     'cannot override PARTITION BY clause of window "win"'),
    ("SELECT rank() OVER (win ORDER BY g) FROM w WINDOW win AS (ORDER BY a)", "42P20",
     'cannot override ORDER BY clause of window "win"'),
    ("SELECT sum(a) OVER (win) FROM w WINDOW win AS (ORDER BY a ROWS 2 PRECEDING)", "42P20",
     'cannot copy window "win" because it has a frame clause'),
    ("SELECT 1 FROM w WINDOW win AS (), win AS ()", "42P20", 'window "win" is already defined'),
    ("SELECT sum(a) OVER (ORDER BY a, g RANGE 1 PRECEDING) FROM w", "42P20",
     "RANGE with offset PRECEDING/FOLLOWING requires exactly one ORDER BY column"),
    ("SELECT sum(a) OVER (ORDER BY g RANGE 1 PRECEDING) FROM w", "0A000",
     "RANGE with offset PRECEDING/FOLLOWING is not supported for column type text"),
    ("SELECT sum(a) OVER (ORDER BY a ROWS -1 PRECEDING) FROM w", "22013", "frame starting offset must not be negative"),
    ("SELECT sum(a) OVER (ORDER BY a ROWS BETWEEN CURRENT ROW AND NULL FOLLOWING) FROM w", "22004",
     "frame ending offset must not be null"),
    ("SELECT sum(a) OVER (ORDER BY a ROWS BETWEEN 2 PRECEDING AND 3 PRECEDING) FROM w", "0A000",
     "a window frame that ends before it starts is not supported"),
])
def test_frame_and_window_name_errors(sql, sqlstate, message):
    with pytest.raises(SqlError) as err:
        bound(sql)
    assert (err.value.sqlstate, err.value.message) == (sqlstate, message)


@pytest.mark.parametrize("sql", [
    "SELECT sum(a) OVER (ORDER BY a GROUPS 1 PRECEDING) FROM w",  # GROUPS frames
    "SELECT sum(a) OVER (ORDER BY a ROWS 1 PRECEDING EXCLUDE CURRENT ROW) FROM w",  # EXCLUDE
    "SELECT lag(a, a) OVER (ORDER BY a) FROM w",  # Spark takes the offset only as a constant
])
def test_forms_left_to_the_sqlglot_path(sql):
    assert bound(sql) is None


def test_a_window_keeps_its_arguments_scale():
    b = bound("SELECT sum(n) OVER (), lag(n, 1, 0.55) OVER (ORDER BY n) FROM wn")
    assert [t.display_scale for t in b.types] == [2, 2]
    with pytest.raises(SqlError) as err:  # PostgreSQL prints the default 0.5 beside 1.50
        bound("SELECT lag(n, 1, 0.5) OVER (ORDER BY n) FROM wn")
    assert err.value.sqlstate == "0A000"

