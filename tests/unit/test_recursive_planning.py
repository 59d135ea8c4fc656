"""WITH RECURSIVE from the bound plan to Spark SQL, without Spark: UNION ALL as Spark's own
recursive CTE, UNION as a Fixpoint the runner computes first (spark_backend.fixpoint). Results
are compared with PostgreSQL 15 in tests/slt/own/recursive.test."""

from __future__ import annotations

import pytest

from planner import pg_parse
from planner.errors import SqlError
from planner.sql import bind, spark_sql
from planner.sql import plan as p
from planner.types import column_type

EDGES = (p.Column("src", column_type("integer")), p.Column("dst", column_type("integer")))
REACH = "WITH RECURSIVE r(node) AS (SELECT 1 UNION{} SELECT e.dst FROM edges e JOIN r ON e.src = r.node) SELECT * FROM r"


class _Catalog:
    def relation(self, schema, name):
        return bind.Relation("edges", EDGES) if name == "edges" else None


def _rel(sql: str) -> p.Rel:
    return bind.Binder(_Catalog(), sql).query(pg_parse.parse_one(sql))


def _spark(sql: str, fixpoints: list[spark_sql.Fixpoint] | None = None) -> str:
    def register(fx: spark_sql.Fixpoint) -> str:
        fixpoints.append(fx)
        return f"fix{len(fixpoints)}"

    rel = _rel(sql)
    return spark_sql.to_spark_query(rel, lambda n: f"tbl_{n}", [c.type for c in p.columns(rel)], None, None,
                                    register if fixpoints is not None else None).sql("spark")


def test_union_all_is_spark_s_recursive_cte_typed_by_the_anchor():
    text = _spark(REACH.format(" ALL"))
    assert text.startswith("WITH RECURSIVE sw_rec0(c0) AS (")
    # both sides cast to the column's type; the step reads the CTE itself
    assert text.count("CAST(") >= 2 and "FROM sw_rec0 AS" in text and "UNION ALL" in text


def test_union_is_a_fixpoint_computed_before_the_statement():
    fixpoints: list[spark_sql.Fixpoint] = []
    text = _spark(REACH.format(""), fixpoints)
    [fx] = fixpoints
    assert "fix1" in text and "RECURSIVE" not in text and "UNION" not in text
    assert "tbl_edges" in fx.step and f"FROM {fx.work} AS" in fx.step
    assert fx.work not in fx.base and "CAST(" in fx.base
    # the work view is a temp view of the shared Spark session: two statements never share one
    again: list[spark_sql.Fixpoint] = []
    _spark(REACH.format(""), again)
    assert again[0].work != fx.work


def test_union_without_a_place_to_compute_it_is_not_covered():
    # a SUBSCRIBE's delta queries (planner.sql.delta) have none: the query is recomputed
    with pytest.raises(p.NotYet):
        _spark(REACH.format(""))


def test_union_of_intervals_is_refused():
    # Spark's set difference compares an interval's text, PostgreSQL its span
    with pytest.raises(SqlError) as err:
        _spark("WITH RECURSIVE r(d) AS (SELECT interval '1 day' UNION SELECT d FROM r) SELECT * FROM r", [])
    assert err.value.sqlstate == "0A000" and not isinstance(err.value, p.NotYet)
