"""gcd and lcm as PostgreSQL 15 computes them (planner.pg_gcd), without Spark; the same
calls are compared with a running PostgreSQL in own/numeric_funcs.test and the catalog test."""

from __future__ import annotations

import pytest

from planner import pg_gcd
from planner.errors import SqlError


@pytest.mark.parametrize("a, b, which, bits, expected", [
    (12, 18, "gcd", 32, 6), (-12, 18, "gcd", 32, 6), (0, 0, "gcd", 32, 0), (-4, 6, "lcm", 32, 12),
    (0, 5, "lcm", 32, 0), (-2147483648, 2, "gcd", 32, 2), (-2147483648, 0, "gcd", 64, 2147483648),
    (None, 3, "gcd", 32, None),
])
def test_integers(a, b, which, bits, expected):
    assert pg_gcd.integer_gcd_lcm(a, b, which, bits) == expected


@pytest.mark.parametrize("a, b, which, bits, message", [
    (-2147483648, 0, "gcd", 32, "integer out of range"),
    (2147483647, 2147483646, "lcm", 32, "integer out of range"),
    (-9223372036854775808, 0, "gcd", 64, "bigint out of range"),
    (9223372036854775807, 2, "lcm", 64, "bigint out of range"),
])
def test_integer_results_out_of_range_are_22003(a, b, which, bits, message):
    with pytest.raises(SqlError) as err:
        pg_gcd.integer_gcd_lcm(a, b, which, bits)
    assert (err.value.sqlstate, err.value.message) == ("22003", message)


@pytest.mark.parametrize("a, b, which, expected", [
    ("12", "18", "gcd", "6"), ("12.5", "5", "gcd", "2.5"), ("12.50", "5.000", "lcm", "25.000"),
    ("0.3", "0.2", "gcd", "0.1"), ("-0.0", "0", "gcd", "0.0"), ("1.5", "0", "lcm", "0.0"),
    ("0E-10", "0", "gcd", "0.0000000000"), ("-12", "18", "lcm", "36"), (None, "1", "lcm", None),
])
def test_numerics_are_exact_at_the_larger_scale(a, b, which, expected):
    assert pg_gcd.numeric_gcd_lcm(a, b, which) == expected


def test_numeric_results_beyond_the_stored_scale_are_refused():
    with pytest.raises(SqlError) as err:
        pg_gcd.numeric_gcd_lcm("0.000000000003", "0.000000000002", "gcd")
    assert err.value.sqlstate == "0A000"
