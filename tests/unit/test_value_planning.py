"""The default front end's Spark SQL for values PostgreSQL computes its own way (the
variance family, text of values, float8 functions), and its refusals, without Spark."""

from __future__ import annotations

import pytest

from planner.errors import SqlError
from planner.types import column_type
from server import bound_query
from tests.catalog_stub import catalog_of, resolver_for

CATALOG = catalog_of({"t": [("g", column_type("integer")), ("i", column_type("integer")),
                            ("n", column_type("numeric", (12, 3))), ("u", column_type("numeric")),
                            ("f", column_type("double precision"))]})


def bound(sql: str):
    return bound_query.plan(sql, CATALOG, resolver_for(CATALOG), per_value_scale=True)


def test_the_variance_family_is_finished_from_exact_sums():
    b = bound("SELECT g, stddev(i), var_pop(n) FROM t GROUP BY g")
    assert [t.per_value_scale for t in b.types] == [False, True, True]
    assert "SPARKWIRE_NUMERIC_VARIANCE" in b.spark_sql
    # the squares summed exactly: decimal(18, s) squared fits Spark's 38 digits
    assert "CAST((t1.c1) AS DECIMAL(18, 0)) * CAST((t1.c1) AS DECIMAL(18, 0))" in b.spark_sql
    assert "CAST((t1.c2) AS DECIMAL(18, 3)) * CAST((t1.c2) AS DECIMAL(18, 3))" in b.spark_sql
    assert "STDDEV(" not in b.spark_sql.upper().replace("SPARKWIRE", "")


@pytest.mark.parametrize("sql", [
    "SELECT stddev(u) FROM t",  # a stored unconstrained numeric: its values' scales differ
    "SELECT g, stddev(i) FROM t GROUP BY g HAVING stddev(i) > 1",  # read by HAVING too
    "SELECT stddev(i) + 1 FROM t",  # nested
])
def test_variances_the_front_end_leaves_to_the_older_path(sql):
    assert bound(sql) is None


def test_float8_functions_are_the_c_librarys():
    b = bound("SELECT cbrt(f), exp(f), ln(f), atan2(f, 1) FROM t")
    for name in ("cbrt", "exp", "ln", "atan2"):
        assert f"SPARKWIRE_FLOAT8_{name.upper()}(" in b.spark_sql


def test_text_of_values_is_their_output_functions():
    b = bound("SELECT concat(true, u, n), u::text, 100::numeric::text FROM t")
    assert "CASE WHEN" in b.spark_sql and "'t'" in b.spark_sql  # a boolean is t/f
    assert "REGEXP_REPLACE" in b.spark_sql.upper()  # u: no padding zeros
    assert "AS DECIMAL(38, 0)) AS STRING" in b.spark_sql  # 100::numeric at its scale, 0


def test_a_reference_two_query_levels_out_in_a_join_condition_is_refused():
    # neither lifted nor forwarded (planner.sql.hoist): Spark resolves one level out only
    with pytest.raises(SqlError) as err:
        bound("SELECT g FROM t WHERE EXISTS (SELECT 1 FROM t AS t2 JOIN t AS t4 ON t2.i = t4.i "
              "AND EXISTS (SELECT 1 FROM t AS t3 WHERE t3.i = t.g AND t3.g = t2.g))")
    assert err.value.sqlstate == "0A000"
    assert "two or more levels out" in err.value.message
