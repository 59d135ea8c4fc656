"""planner.pg_float: PostgreSQL 15's float8 functions (float.c), without Spark. The values
PostgreSQL gives are checked side by side in tests/slt/own/float_functions.test and
tests/integration/test_function_catalog.py; here, the checks float.c makes."""

from __future__ import annotations

import math

import pytest

from planner import pg_float
from planner.errors import SqlError

INF, NAN = math.inf, math.nan


def test_values_come_from_the_c_library():
    # Java's Math gives 3.0 and 2.7182818284590455 for the first two (PostgreSQL: these)
    assert pg_float.dcbrt(27.0) == 3.0000000000000004
    assert pg_float.dexp(1.0) == 2.718281828459045
    assert pg_float.degrees(0.9) == 0.9 / pg_float.RADIANS_PER_DEGREE
    assert pg_float.datan2(0.9, 3.0) == math.atan2(0.9, 3.0)


@pytest.mark.parametrize("fn, arg, message", [
    (pg_float.dexp, 1000.0, "value out of range: overflow"),
    (pg_float.dexp, -1000.0, "value out of range: underflow"),
    (pg_float.dln, 0.0, "cannot take logarithm of zero"),
    (pg_float.dln, -1.0, "cannot take logarithm of a negative number"),
    (pg_float.dlog10, -0.5, "cannot take logarithm of a negative number"),
    (pg_float.dsin, INF, "input is out of range"),
    (pg_float.dcos, -INF, "input is out of range"),
    (pg_float.dtan, INF, "input is out of range"),
    (pg_float.degrees, 1e308, "value out of range: overflow"),
])
def test_errors_are_postgresqls(fn, arg, message):
    with pytest.raises(SqlError) as err:
        fn(arg)
    assert (err.value.sqlstate, err.value.message) == (pg_float.OUT_OF_RANGE if "logarithm" not in message
                                                       else pg_float.INVALID_LOG, message)


def test_infinities_and_nan_pass_where_postgresql_lets_them():
    assert pg_float.dexp(INF) == INF and pg_float.dexp(-INF) == 0.0
    assert math.isnan(pg_float.dexp(NAN)) and math.isnan(pg_float.dsin(NAN))
    assert pg_float.dcbrt(-INF) == -INF
    assert pg_float.dln(INF) == INF
    assert pg_float.dcosh(1000.0) == INF  # ERANGE: +Infinity, not an error
    assert pg_float.dsinh(-1000.0) == -INF
    assert math.isnan(pg_float.datan2(1.0, NAN))
    assert pg_float.datan(INF) == math.pi / 2
    assert pg_float.degrees(1e-320) == 1e-320 / pg_float.RADIANS_PER_DEGREE  # subnormal, not underflow


def test_every_function_has_a_udf_name():
    assert set(pg_float.UDF_NAMES) == set(pg_float.FUNCTIONS)
    assert all(name.startswith("sparkwire_float8_") for name in pg_float.UDF_NAMES.values())
