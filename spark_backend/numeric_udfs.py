"""The numeric operations whose display scale PostgreSQL picks value by value (division,
avg, sqrt, ln, log, exp, power: planner.pg_numeric), as Python UDFs registered in a Spark
session under the names the planner writes (planner.pg_numeric.UDF_NAMES).

Each takes the operands (Spark decimals; avg: its sum and count; the variance family: count,
sum, sum of squares and which of them) and their display scales
(-1 or NULL: the digits the value shows), and returns PostgreSQL's text of the result, or
NULL when an operand is NULL. PostgreSQL's errors leave the worker as jsonb_udfs' do."""

from __future__ import annotations

from decimal import Decimal

from planner import pg_gcd, pg_numeric
from planner.pg_numeric import UDF_NAMES
from spark_backend.jsonb_udfs import carrying_sqlstate


def _scale(given: int | None) -> int | None:
    return None if given is None or given < 0 else given


def _text(d: Decimal | None) -> str | None:
    return None if d is None else pg_numeric.text(d)


def _binary(operation):
    def call(a: Decimal | None, b: Decimal | None, scale_a: int | None, scale_b: int | None) -> str | None:
        if a is None or b is None:
            return None
        return _text(operation(a, b, _scale(scale_a), _scale(scale_b)))
    return call


def _unary(operation):
    def call(x: Decimal | None, scale_x: int | None) -> str | None:
        return None if x is None else _text(operation(x, _scale(scale_x)))
    return call


def _avg(total: Decimal | None, count: int | None, scale_total: int | None) -> str | None:
    if total is None or not count:
        return None
    return _text(pg_numeric.avg(total, count, _scale(scale_total)))


_VARIANCE_NAMES = tuple(pg_numeric.VARIANCES)  # the UDF's kind argument indexes this


def _variance(count: int | None, sum_x: Decimal | None, sum_x2: Decimal | None, scale_x: int | None,
              kind: int) -> str | None:
    if not count:
        return None
    return _text(pg_numeric.variance(_VARIANCE_NAMES[kind], count, sum_x, sum_x2, _scale(scale_x)))


_OPERATIONS = {
    "div": _binary(pg_numeric.div), "power": _binary(pg_numeric.power), "log": _binary(pg_numeric.log),
    "sqrt": _unary(pg_numeric.sqrt), "exp": _unary(pg_numeric.exp), "ln": _unary(pg_numeric.ln), "avg": _avg,
    "variance": _variance,
}


def register(spark) -> None:
    """Register every numeric UDF in `spark` (a classic or Connect session)."""
    from pyspark.sql.functions import udf

    for operation, name in UDF_NAMES.items():
        spark.udf.register(name, udf(carrying_sqlstate(_OPERATIONS[operation]), "string", useArrow=True))
    # gcd and lcm, which Spark lacks
    spark.udf.register(pg_gcd.UDF_NAMES["integer"], udf(carrying_sqlstate(pg_gcd.integer_gcd_lcm), "bigint",
                                                        useArrow=True))
    spark.udf.register(pg_gcd.UDF_NAMES["numeric"], udf(carrying_sqlstate(pg_gcd.numeric_gcd_lcm), "string",
                                                        useArrow=True))
