"""PostgreSQL's names for a query's output columns (planner.sql.colnames), without a server: each
case was checked against PostgreSQL 15 by hand (tests/integration/test_sql_frontend.py compares
the older path's results with a real one)."""

from __future__ import annotations

import pytest

from planner.sql.colnames import select_list_names


@pytest.mark.parametrize("sql, names", [
    ("SELECT a, b AS x, t.c, 1, a + 1 FROM t", ["a", "x", "c", "?column?", "?column?"]),
    ("SELECT count(*) FILTER (WHERE a > 1), rank() OVER (ORDER BY 1), pg_catalog.upper(min(c)) FROM t",
     ["count", "rank", "upper"]),
    ("SELECT unnest(ARRAY[1]), date_part('dow', now()), extract(year FROM now())",
     ["unnest", "date_part", "extract"]),
    ("SELECT a::text, 1::int4, '1'::numeric(4,2), CAST(NULL AS varchar(3))", ["a", "int4", "numeric", "varchar"]),
    ("SELECT CASE WHEN true THEN 1 END, coalesce(a, 1), nullif(a, 1), greatest(1, 2), least(1, 2) FROM t",
     ["case", "coalesce", "nullif", "greatest", "least"]),
    ("SELECT current_date, current_timestamp(2), current_user, session_user, localtime",
     ["current_date", "current_timestamp", "current_user", "session_user", "localtime"]),
    ("SELECT EXISTS (SELECT 1), (SELECT max(a) FROM t), ARRAY(SELECT 1), ROW(1, 2), ARRAY[1], (ARRAY[1])[1]",
     ["exists", "max", "array", "row", "array", "array"]),
    ("SELECT a FROM t UNION SELECT b AS other FROM u", ["a"]),
    ("VALUES (1, 'x'), (2, 'y')", ["column1", "column2"]),
    ("SELECT a COLLATE \"C\" FROM t", ["a"]),
])
def test_names_as_postgres_figures_them(sql, names):
    assert select_list_names(sql) == names


@pytest.mark.parametrize("sql", [
    "SELECT * FROM t",  # the relations name those columns
    "SELECT a, t.* FROM t",
    "SELECT FROM WHERE",  # not PostgreSQL's grammar
    "INSERT INTO t VALUES (1)",  # not a query
])
def test_no_names_where_postgres_grammar_does_not_tell_them(sql):
    assert select_list_names(sql) is None


@pytest.mark.parametrize("sql, names", [
    ("SELECT 'x'::char(2)::varchar, a::text::int8, (a)::text FROM t", ["varchar", "a", "a"]),
    ("SELECT CASE WHEN true THEN 1 ELSE a END, CASE WHEN true THEN a END, CASE WHEN true THEN 1 END::text FROM t",
     ["a", "case", "text"]),
    ("SELECT CASE WHEN true THEN 1 ELSE 2::int8 END, CASE WHEN true THEN 1 ELSE upper(c) END FROM t",
     ["case", "upper"]),
])
def test_names_by_strength_as_figure_colname_weighs_them(sql, names):
    assert select_list_names(sql) == names
