"""PostgreSQL 15's float8 functions whose result Spark's differ from (float.c).

Spark computes exp, ln, cbrt, sin, cosh, atan2, degrees, ... with Java's Math, whose last
digit is not always the C library's; PostgreSQL calls the C library (glibc here) and checks
the result (`value out of range: overflow`, `input is out of range`). Python's `math` calls
the same C library, so these are computed here value by value, as Spark UDFs
(spark_backend.float_math_udfs) under the names in `UDF_NAMES`, with PostgreSQL's checks.

Pure: no Spark, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from planner.errors import SqlError
from planner.pg_numeric import check_log_arg

OUT_OF_RANGE = "22003"
INVALID_LOG = "2201E"  # check_log_arg's

# float.c's RADIANS_PER_DEGREE: degrees(x) divides by it, radians(x) multiplies
RADIANS_PER_DEGREE = 0.0174532925199432957692


def _overflow() -> SqlError:
    return SqlError(OUT_OF_RANGE, "value out of range: overflow")


def _underflow() -> SqlError:
    return SqlError(OUT_OF_RANGE, "value out of range: underflow")


def _input_out_of_range() -> SqlError:
    return SqlError(OUT_OF_RANGE, "input is out of range")


def _checked(result: float, inf_is_valid: bool, zero_is_valid: bool) -> float:
    """float.h's check_float8_val."""
    if math.isinf(result) and not inf_is_valid:
        raise _overflow()
    if result == 0.0 and not zero_is_valid:
        raise _underflow()
    return result


def dexp(x: float) -> float:
    if math.isnan(x):
        return x
    if math.isinf(x):
        return x if x > 0 else 0.0
    try:
        result = math.exp(x)
    except OverflowError:
        raise _overflow() from None
    if math.isinf(result):
        raise _overflow()
    if result == 0.0:
        raise _underflow()
    return result


def dln(x: float) -> float:
    check_log_arg(x)
    return _checked(math.log(x), math.isinf(x), x == 1.0)


def dlog10(x: float) -> float:
    check_log_arg(x)
    return _checked(math.log10(x), math.isinf(x), x == 1.0)


def dcbrt(x: float) -> float:
    return _checked(math.cbrt(x), math.isinf(x), x == 0.0)


def _trigonometric(fn: Callable[[float], float], inf_is_valid: bool = False) -> Callable[[float], float]:
    """dsin, dcos, dtan: NaN passes, an infinite input is out of range."""
    def call(x: float) -> float:
        if math.isnan(x):
            return x
        if math.isinf(x):
            raise _input_out_of_range()
        return _checked(fn(x), inf_is_valid, True)
    return call


dsin = _trigonometric(math.sin)
dcos = _trigonometric(math.cos)
dtan = _trigonometric(math.tan, inf_is_valid=True)  # tan(pi/2) may be infinite


def datan(x: float) -> float:
    return x if math.isnan(x) else _checked(math.atan(x), False, True)


def datan2(y: float, x: float) -> float:
    if math.isnan(y) or math.isnan(x):
        return math.nan
    return _checked(math.atan2(y, x), False, True)


def dsinh(x: float) -> float:
    try:
        return math.sinh(x)
    except OverflowError:  # ERANGE: infinite, with the argument's sign
        return math.copysign(math.inf, x)


def dcosh(x: float) -> float:
    try:
        result = math.cosh(x)
    except OverflowError:  # ERANGE: cosh is positive, so +Infinity
        return math.inf
    if result == 0.0:
        raise _underflow()
    return result


def dtanh(x: float) -> float:
    return _checked(math.tanh(x), False, True)


def degrees(x: float) -> float:
    """float8_div(x, RADIANS_PER_DEGREE)."""
    result = x / RADIANS_PER_DEGREE
    return _checked(result, math.isinf(x), x == 0.0)


FUNCTIONS: dict[str, Callable[..., float]] = {
    "exp": dexp, "ln": dln, "log10": dlog10, "cbrt": dcbrt, "sin": dsin, "cos": dcos, "tan": dtan,
    "atan": datan, "atan2": datan2, "sinh": dsinh, "cosh": dcosh, "tanh": dtanh, "degrees": degrees,
}

# Each function's Spark UDF, listed here so that planner.functions can allow their names.
UDF_NAMES: dict[str, str] = {name: f"sparkwire_float8_{name}" for name in FUNCTIONS}
