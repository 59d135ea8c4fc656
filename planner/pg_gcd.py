"""gcd and lcm as PostgreSQL 15 computes them (int4, int8 and numeric), for Spark, which has
neither: Python UDFs (spark_backend.numeric_udfs) under UDF_NAMES, written by the catalog's
TEMPLATES.

Pure. PostgreSQL's answers: never negative; gcd(0, 0) and lcm(x, 0) are 0; a result past
the integer type's range is 22003 (gcd(-2147483648, 0) is 2147483648, which int4 cannot
hold); a numeric gcd works on fractions too (gcd(12.5, 5) = 2.5) and has the larger of
the arguments' scales, which the planner's numeric_scale knows.
"""

from __future__ import annotations

import math
from decimal import Decimal

from planner.errors import FEATURE_NOT_SUPPORTED, NUMERIC_VALUE_OUT_OF_RANGE, SqlError

UDF_NAMES = {"integer": "sparkwire_integer_gcd_lcm", "numeric": "sparkwire_numeric_gcd_lcm"}
_RANGE_ERRORS = {32: "integer out of range", 64: "bigint out of range"}
# The Spark type an unconstrained numeric is held in (DECIMAL(38,10)) keeps ten digits
# after the point; a gcd or lcm needing more is refused rather than rounded.
_SPARK_SCALE = 10


def _template(kind: str, which: str, cast_to: str, argument_cast: str, bits: str = "") -> str:
    args = f"cast({{0}} as {argument_cast}), cast({{1}} as {argument_cast}), '{which}'{bits}"
    return f"cast({UDF_NAMES[kind]}({args}) as {cast_to})"


# The catalog's Spark SQL, by (function, PostgreSQL argument type).
TEMPLATES = {
    (which, pg_type): _template("integer", which, spark_type, "bigint", f", {bits}")
    for which in ("gcd", "lcm")
    for pg_type, spark_type, bits in (("integer", "int", 32), ("bigint", "bigint", 64))
} | {(which, "numeric"): _template("numeric", which, "decimal(38,10)", "string") for which in ("gcd", "lcm")}


def integer_gcd_lcm(a: int | None, b: int | None, which: str, bits: int) -> int | None:
    """gcd(a, b) or lcm(a, b) of two int4s (bits 32) or int8s (bits 64)."""
    if a is None or b is None:
        return None
    result = math.gcd(a, b) if which == "gcd" else math.lcm(a, b)
    if result > 2 ** (bits - 1) - 1:
        raise SqlError(NUMERIC_VALUE_OUT_OF_RANGE, _RANGE_ERRORS[bits])
    return result


def numeric_gcd_lcm(a: str | None, b: str | None, which: str) -> str | None:
    """gcd(a, b) or lcm(a, b) of two numerics given as text, exact, as text."""
    if a is None or b is None:
        return None
    x, y = Decimal(a), Decimal(b)
    scale = max(-x.as_tuple().exponent, -y.as_tuple().exponent, 0)
    unit = Decimal(1).scaleb(-scale)  # both are whole multiples of it
    m, n = int(x.scaleb(scale)), int(y.scaleb(scale))
    if which == "gcd":
        result = Decimal(math.gcd(m, n)) * unit
    else:  # lcm(x, y) = |x * y| / gcd(x, y), in units
        result = Decimal(math.lcm(m, n)) * unit
    result = result.quantize(unit) if scale else result
    if -result.as_tuple().exponent > _SPARK_SCALE and result != result.quantize(Decimal(1).scaleb(-_SPARK_SCALE)):
        raise SqlError(FEATURE_NOT_SUPPORTED, f"{which} of numerics with more than {_SPARK_SCALE} digits after "
                                              "the point is not supported")
    return f"{result:f}"
