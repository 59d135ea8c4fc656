"""Display scales of unconstrained numeric results (planner.sql.numeric_scale), and the
Spark SQL of the casts PostgreSQL rounds or range-checks, without Spark or sockets. The
printed values are checked against PostgreSQL 15 in tests/slt/own/numbers.test."""

from __future__ import annotations

import struct
from decimal import Decimal

import pytest

from planner import pg_parse
from planner.codecs import binary_out
from planner.codecs.text_out import numeric_text
from planner.sql import bind, numeric_scale, spark_sql, value_scale
from planner.sql import plan as p
from planner.types import SqlType, column_type

TABLES = {"n": (("fixed", ("numeric", (10, 2))), ("free", ("numeric", ())), ("i", ("integer", ())),
               ("f", ("double precision", ())))}


class _Catalog:
    def relation(self, schema, name):
        cols = TABLES.get(name)
        return None if cols is None else bind.Relation(name, tuple(p.Column(c, column_type(*t)) for c, t in cols))


def _scales(sql: str) -> list[int | None]:
    return numeric_scale.output_scales(bind.Binder(_Catalog(), sql).query(pg_parse.parse_one(sql)))


@pytest.mark.parametrize("sql, scales", [
    # PostgreSQL: + - % keep the larger scale, * adds them, a constant has the digits written
    ("SELECT 10.10 * 2, 10 % 3.5, 1.5 + 1, -0.0::numeric, 1e2::numeric", [2, 1, 1, 1, 0]),
    ("SELECT round(2.567, 2), round(2.5), trunc(-2.5), ceil(2.1), abs(-3.50)", [2, 0, 0, 0, 2]),
    ("SELECT fixed * i, fixed + free, sum(fixed), sum(i), max(fixed) + 0.1 FROM n GROUP BY i, fixed, free",
     [2, None, 2, None, 2]),  # sum(integer) is a bigint: no scale
    # the value decides: division, avg, a stored unconstrained numeric, a float's digits
    # (a one-shot query's top-level division and avg: planner.sql.value_scale, below)
    ("SELECT 1.0 / 3, avg(fixed), free, f::numeric FROM n GROUP BY free, f", [None, None, None, None]),
    # NULLs have no digits; different scales per row are the values' own
    ("SELECT x FROM (VALUES (1.5), (NULL), (2.5)) v(x)", [1]),
    ("SELECT x FROM (VALUES (1.5), (2.25)) v(x)", [None]),
    ("SELECT CASE WHEN i > 0 THEN 1.50 ELSE NULL END, coalesce(NULL, 2.0) FROM n", [2, 1]),
    ("SELECT 1.50 UNION SELECT 2.25", [2]),
    ("SELECT 1.5 UNION SELECT 2.25", [None]),
])
def test_scales_follow_postgres_rules(sql, scales):
    assert _scales(sql) == scales


def test_a_display_scale_prints_every_digit_and_stays_out_of_the_type_identity():
    t = column_type("numeric")
    [scaled] = numeric_scale.with_display_scales([t], [2])
    assert scaled == t and scaled.typmod == -1  # RowDescription still says unconstrained numeric
    assert numeric_text(scaled, "20.2") == "20.20" and numeric_text(t, "20.20") == "20.2"
    assert scaled.spark == "DECIMAL(38,2)"
    assert numeric_scale.with_display_scales([column_type("integer")], [0]) == [column_type("integer")]


def _spark(sql: str) -> str:
    rel = bind.Binder(_Catalog(), sql).query(pg_parse.parse_one(sql))
    return spark_sql.to_spark(rel, lambda name: name)


def test_casts_to_integers_round_as_postgres_does_and_float4_is_range_checked():
    assert "RINT(" in _spark("SELECT f::int FROM n").upper()  # float8: half to even
    assert "ROUND(" in _spark("SELECT fixed::bigint FROM n").upper()  # numeric: half away from zero
    assert "RINT(" not in _spark("SELECT i::bigint FROM n").upper()
    narrowed = _spark("SELECT f::real FROM n")
    assert "22003:value out of range: overflow" in narrowed and "underflow" in narrowed


def _typed_spark(sql: str) -> tuple[list[SqlType], str]:
    rel = bind.Binder(_Catalog(), sql).query(pg_parse.parse_one(sql))
    types = numeric_scale.with_display_scales([c.type for c in p.columns(rel)], numeric_scale.output_scales(rel))
    rel, types = value_scale.apply(rel, types)
    return types, spark_sql.to_spark(rel, lambda name: name, types)


def test_top_level_value_scaled_results_become_udf_calls_returning_postgres_text():
    types, sql = _typed_spark("SELECT i / 2.0, sqrt(free), ln(free), log(free), exp(fixed), free ^ 0.5, "
                              "avg(i)::text, i / 2.0 + 1 FROM n GROUP BY i, free, fixed")
    assert [t.per_value_scale for t in types] == [True] * 6 + [False, False]
    assert [t.display() for t in types] == ["numeric"] * 6 + ["text", "numeric"]  # RowDescription unchanged
    for name in ("DIV", "SQRT", "LN", "LOG", "EXP", "POWER", "AVG"):
        assert f"SPARKWIRE_NUMERIC_{name}(" in sql.upper()
    # the operands' fixed scales go along (2.0: 1, integer i: 0, numeric(10,2): 2, free: the value's)
    assert "SPARKWIRE_NUMERIC_DIV((CAST(T0.C0 AS DECIMAL(10, 0))), (CAST('2.0' AS DECIMAL(2, 1))), (0), (1))" \
        in sql.upper()
    assert "(-1))" in sql  # sqrt(free): a stored unconstrained numeric's scale is its value's
    assert sql.upper().count("SPARKWIRE_NUMERIC_DIV(") == 1  # the nested one stays Spark's


def test_avg_is_finished_from_a_wide_sum_and_count_beside_spark_avg_kept_for_sorting():
    _types, sql = _typed_spark("SELECT i, avg(i), avg(free) FROM n GROUP BY i ORDER BY avg(i)")
    upper = sql.upper()
    assert "SUM(CAST((T1.C2) AS DECIMAL(38, 0)))" in upper  # Spark's sum(int) would overflow
    assert "COUNT((T1.C2))" in upper and "REGEXP_EXTRACT(" in upper  # free's largest dscale
    assert "SPARKWIRE" not in upper.split("ORDER BY")[1]  # the sort reads Spark's avg, not the text


def test_value_scaled_text_is_printed_as_it_arrives():
    [t] = numeric_scale.with_display_scales([column_type("numeric")], [numeric_scale.PER_VALUE])
    assert t.per_value_scale and t.spark == "STRING" and t == column_type("numeric")
    assert numeric_text(t, "2.5000000000000000") == "2.5000000000000000"
    assert numeric_text(t, Decimal("-0.000")) == "0.000" and numeric_text(t, Decimal("1E+2")) == "100"
    assert binary_out.encode_binary(t, "2.50") == binary_out.encode_binary(t, Decimal("2.50"))
    assert struct.unpack(">hhHh", binary_out.encode_binary(t, "2.50")[:8])[3] == 2  # dscale 2
