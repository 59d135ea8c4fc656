"""PostgreSQL 15's value-dependent numeric result scales (planner.pg_numeric), without Spark
or sockets. The expected texts are PostgreSQL 15's own answers (psql); many more values are
compared with a running PostgreSQL in tests/integration/test_numeric_scale_pg.py."""

from __future__ import annotations

from decimal import Decimal

import pytest

from planner import pg_numeric as pn
from planner.errors import SqlError

D = Decimal


def _text(f, *args) -> str:
    return pn.text(f(*args))


@pytest.mark.parametrize("a, b, want", [
    ("5.0", "2", "2.5000000000000000"),
    ("1", "3.0", "0.33333333333333333333"),
    ("0.0", "1", "0.00000000000000000000"),
    ("1.0", "7", "0.14285714285714285714"),
    ("1", "3", "0.33333333333333333333"),
    ("10", "4", "2.5000000000000000"),
    ("-7.5", "2", "-3.7500000000000000"),
    ("12345678901234567890", "3", "4115226300411522630"),
    ("0.000000123", "7", "0.000000017571428571428571"),
    ("1", "0.0000000001", "10000000000.0000000000"),
    ("99999999999999999999.9999999999", "1", "99999999999999999999.9999999999"),
    ("2", "3", "0.66666666666666666667"),  # rounded half away from zero
    ("-2", "3", "-0.66666666666666666667"),
    ("-0.001", "1000000", "-0.0000000010000000000000000000"),
])
def test_division_picks_select_div_scale(a, b, want):
    assert _text(pn.div, D(a), D(b), None, None) == want


def test_division_honours_the_operands_dscales():
    # 2.50 / 1.000 keeps the 2.50's digits and at least 16 significant ones
    assert _text(pn.div, D("2.5"), D("1"), 2, 3) == "2.5000000000000000"
    assert _text(pn.div, D("1"), D("8"), 20, 0) == "0.12500000000000000000"
    assert _text(pn.div, D("0"), D("5"), 0, 0) == "0.00000000000000000000"


@pytest.mark.parametrize("a, b", [("1", "0"), ("0", "0"), ("Infinity", "0"), ("-Infinity", "0.0")])
def test_division_by_zero_is_22012(a, b):
    with pytest.raises(SqlError) as err:
        pn.div(D(a), D(b))
    assert (err.value.sqlstate, err.value.message) == ("22012", "division by zero")


def test_division_with_nan_and_infinity_follows_postgres():
    assert _text(pn.div, D("NaN"), D("0")) == "NaN"
    assert _text(pn.div, D("Infinity"), D("-2")) == "-Infinity"
    assert _text(pn.div, D("Infinity"), D("Infinity")) == "NaN"
    assert _text(pn.div, D("5"), D("-Infinity")) == "0"


def test_avg_is_sum_over_count_with_the_sums_dscale():
    assert pn.text(pn.avg(D("4.0"), 2, 1)) == "2.0000000000000000"  # avg of 1.5, 2.5, NULL
    assert pn.text(pn.avg(D("98"), 3, 0)) == "32.6666666666666667"  # avg(int2) 56, 0, 42
    assert pn.text(pn.avg(D("18446744073709551614"), 2, 0)) == "9223372036854775807"
    assert pn.avg(None, 0) is None and pn.avg(D(0), 0) is None


@pytest.mark.parametrize("f, x, want", [
    (pn.sqrt, "2", "1.414213562373095"),
    (pn.sqrt, "0", "0.000000000000000"),
    (pn.sqrt, "100", "10.000000000000000"),
    (pn.sqrt, "0.0001", "0.01000000000000000"),
    (pn.sqrt, "12345678901234567890", "3513641828.8201443"),
    (pn.ln, "10", "2.3025850929940457"),
    (pn.ln, "1", "0.0000000000000000"),
    (pn.ln, "1.0000001", "0.00000009999999500000033"),
    (pn.ln, "0.5", "-0.6931471805599453"),
    (pn.exp, "1", "2.7182818284590452"),
    (pn.exp, "0", "1.0000000000000000"),
    (pn.exp, "-7.5", "0.0005530843701478336"),
    (pn.exp, "100", "26881171418161354484126255515800135873611119"),
])
def test_unary_functions_round_at_postgres_scale(f, x, want):
    assert _text(f, D(x), None) == want


def test_log_of_a_base_and_log10():
    assert _text(pn.log, D(10), D(1000), 0, 0) == "3.0000000000000000"
    assert _text(pn.log, D(2), D("0.5"), 0, 1) == "-1.0000000000000000"
    assert _text(pn.log, D("2.0"), D(10), 1, 0) == "3.3219280948873623"


@pytest.mark.parametrize("base, exponent, want", [
    ("2.0", "10", "1024.0000000000000000"),
    ("2", "-2", "0.2500000000000000"),
    ("2", "0.5", "1.4142135623730950"),
    ("-2", "3", "-8.0000000000000000"),
    ("0", "0", "1.0000000000000000"),
    ("0", "0.5", "0.0000000000000000"),
    ("1.5", "2", "2.2500000000000000"),
    ("12345678901234567890", "2", "152415787532388367501905199875019052100.0000000000000000"),
    ("4", "2.5000", "32.000000000000000"),
    ("0.1", "-3", "1000.0000000000000000"),
])
def test_power_follows_power_var(base, exponent, want):
    assert _text(pn.power, D(base), D(exponent), None, None) == want


@pytest.mark.parametrize("call, sqlstate, message", [
    (lambda: pn.sqrt(D(-1)), "2201F", "cannot take square root of a negative number"),
    (lambda: pn.ln(D(0)), "2201E", "cannot take logarithm of zero"),
    (lambda: pn.ln(D(-2)), "2201E", "cannot take logarithm of a negative number"),
    (lambda: pn.log(D(1), D(10)), "22012", "division by zero"),
    (lambda: pn.power(D(0), D(-1)), "2201F", "zero raised to a negative power is undefined"),
    (lambda: pn.power(D(-2), D("0.5")), "2201F",
     "a negative number raised to a non-integer power yields a complex result"),
    (lambda: pn.power(D(10), D(200000)), "22003", "value overflows numeric format"),
    (lambda: pn.exp(D(7000)), "22003", "value overflows numeric format"),
])
def test_errors_keep_postgres_sqlstate_and_text(call, sqlstate, message):
    with pytest.raises(SqlError) as err:
        call()
    assert (err.value.sqlstate, err.value.message) == (sqlstate, message)


def test_text_prints_every_digit_of_the_scale_and_no_negative_zero():
    assert pn.text(D("-0.000")) == "0.000"
    assert pn.text(D("1E+3")) == "1000"
    assert pn.text(D("-Infinity")) == "-Infinity"
    assert [pn.dscale_of(D(x)) for x in ("2.5000000000", "100", "0.0", "-0.120")] == [1, 0, 0, 2]


def test_the_spark_udfs_take_spark_values_and_carry_errors_out_as_text():
    from spark_backend import numeric_udfs
    from spark_backend.jsonb_udfs import carrying_sqlstate

    ops = numeric_udfs._OPERATIONS
    assert ops["div"](D("5.0000000000"), D("2.0000000000"), 1, -1) == "2.5000000000000000"
    assert ops["div"](None, D(1), 0, 0) is None
    assert ops["avg"](D("98"), 3, 0) == "32.6666666666666667" and ops["avg"](None, 0, None) is None
    assert ops["sqrt"](D("2.0000000000"), -1) == "1.414213562373095"
    with pytest.raises(ValueError, match="^sparkwire:22012:division by zero$"):
        carrying_sqlstate(ops["div"])(D(1), D(0), 0, 0)


@pytest.mark.parametrize("name, expected", [
    # PostgreSQL 15 over the integers 7, -3, 0, 2147483647 (numeric_poly_* finish as numerics do)
    ("var_pop", "864691126576087054"), ("var_samp", "1152921502101449406"),
    ("stddev_pop", "929887696"), ("stddev_samp", "1073741823"), ("stddev", "1073741823"),
])
def test_variance_of_integers(name, expected):
    values = [7, -3, 0, 2147483647]
    total, squares = Decimal(sum(values)), Decimal(sum(v * v for v in values))
    assert pn.text(pn.variance(name, len(values), total, squares, 0)) == expected


def test_variance_of_numerics_keeps_postgresqls_scale():
    values = [Decimal("12.345"), Decimal("-2.5"), Decimal(0), Decimal("123456789.000000001")]
    total, squares = sum(values), sum(v * v for v in values)
    assert pn.text(pn.variance("var_pop", 4, total, squares, 9)) == \
        "2857795863731745.375175982144375000"
    assert pn.text(pn.variance("stddev_samp", 4, total, squares, 9)) == \
        "61728392.859167008287423838"


def test_variance_is_null_where_postgresqls_is():
    assert pn.variance("var_samp", 1, Decimal(5), Decimal(25), 0) is None
    assert pn.variance("var_pop", 0, None, None, 0) is None
    assert pn.text(pn.variance("var_pop", 1, Decimal(5), Decimal(25), 0)) == "0"
    assert pn.text(pn.variance("stddev_pop", 3, Decimal(6), Decimal(12), 0)) == "0"
