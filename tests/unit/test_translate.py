"""PostgreSQL → Spark SQL translation: identifiers Spark's lexer would reject unquoted."""

from __future__ import annotations

import pytest
import sqlglot

from planner.parser import parse_one
from planner.translate import SessionContext, TableSource, resolve_tree

CTX = SessionContext("materialize", "materialize", "v", "2024-01-01 00:00:00")


def spark_sql(sql: str) -> str:
    def resolve(name: str):
        return TableSource("__sw_1_u5", {"b✓": "INT", "x": "INT", "Mixed": "INT"})

    return resolve_tree(parse_one(sql).statement.ast, resolve, CTX).sql("spark")


@pytest.mark.parametrize(("sql", "expected"), [
    ('SELECT * FROM "tåble✓"',
     "SELECT `tåble✓`.`b✓` AS `b✓`, `tåble✓`.x AS `x`, `tåble✓`.Mixed AS `Mixed` FROM __sw_1_u5 AS `tåble✓`"),
    ('SELECT t.* FROM "tåble✓" AS t', "SELECT t.`b✓` AS `b✓`, t.x AS `x`, t.Mixed AS `Mixed` FROM __sw_1_u5 AS t"),
    ('SELECT "b✓" + 1 AS "ünï" FROM plain', "SELECT `plain`.`b✓` + 1 AS `ünï` FROM __sw_1_u5 AS `plain`"),
])
def test_non_ascii_identifiers_are_quoted(sql: str, expected: str) -> None:
    assert spark_sql(sql) == expected


def test_array_agg_follows_postgres():
    """Elements in a struct (collect_list would drop NULLs), sorted by a comparator with
    PostgreSQL's NULL placement, unwrapped, and NULL instead of [] over no rows."""
    sql = spark_sql("SELECT array_agg(x ORDER BY x DESC) FROM t")
    assert "COLLECT_LIST(STRUCT(`t`.x AS k0, `t`.x AS v))" in sql
    assert "(sw_l, sw_r) -> CASE WHEN sw_l.k0 IS NULL AND sw_r.k0 IS NULL THEN 0 WHEN sw_l.k0 IS NULL THEN -1" in sql
    assert sql.startswith("SELECT IF(SIZE(TRANSFORM(") and "sw_e -> sw_e.v" in sql
    assert "ARRAY_SORT" not in spark_sql("SELECT array_agg(x) FROM t")


@pytest.mark.parametrize(("sql", "name"), [
    ("SELECT array_agg(x) FROM t", "array_agg"),
    ("SELECT array_length(array_agg(x), 1) FROM t", "array_length"),
    ("SELECT generate_series(1, 3)", "generate_series"),
])
def test_output_names_of_functions(sql: str, name: str) -> None:
    assert sqlglot.parse_one(spark_sql(sql), read="spark").expressions[-1].alias == name


@pytest.mark.parametrize(("sql", "words"), [
    # Spark's LATERAL VIEW would drop the rows the function gives nothing for
    ("SELECT * FROM t LEFT JOIN unnest(ARRAY[x]) u ON u = 1", "LEFT JOIN of a set-returning function"),
    ("SELECT * FROM t FULL JOIN generate_series(1, 2) g ON g = x", "FULL JOIN of a set-returning function"),
    # posexplode's number counts from 0 and comes first
    ("SELECT * FROM unnest(ARRAY[1]) WITH ORDINALITY", "WITH ORDINALITY"),
    ("SELECT * FROM generate_series(1, 2) WITH ORDINALITY AS g(a, b)", "WITH ORDINALITY"),
])
def test_the_older_path_refuses_what_it_would_answer_wrongly(sql: str, words: str) -> None:
    from planner.errors import SqlError
    with pytest.raises(SqlError) as err:
        spark_sql(sql)
    assert err.value.sqlstate == "0A000" and words in err.value.message


def test_the_older_path_refuses_ordering_by_a_row_value() -> None:
    # Spark sorts a struct with its NULL fields first; PostgreSQL's record_cmp puts them last
    from planner.errors import SqlError
    for sql in ("SELECT * FROM t ORDER BY (x, \"b✓\")", "SELECT row_number() OVER (ORDER BY (x, x)) FROM t"):
        with pytest.raises(SqlError) as err:
            spark_sql(sql)
        assert err.value.sqlstate == "0A000" and "ORDER BY a row value" in err.value.message
