"""Window functions on the PostgreSQL front end (planner/sql bind → plan → Spark SQL), without
Spark: PostgreSQL's result types, NULL order written out for Spark (whose default differs),
what is refused where, and what still takes the sqlglot path."""

from __future__ import annotations

import pytest

from planner.errors import SqlError
from planner.types import column_type
from server import bound_query
from tests.catalog_stub import catalog_of, resolver_for

CATALOG = catalog_of({"w": [("g", column_type("text")), ("a", column_type("integer"))]})


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


@pytest.mark.parametrize("sql", [
    "SELECT sum(a) OVER (ORDER BY a ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM w",  # a frame
    "SELECT rank() OVER win FROM w WINDOW win AS (ORDER BY a)",  # a named window
    "SELECT lag(a, a) OVER (ORDER BY a) FROM w",  # Spark takes the offset only as a constant
])
def test_forms_left_to_the_sqlglot_path(sql):
    assert bound(sql) is None
