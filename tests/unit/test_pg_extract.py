"""planner.pg_extract: PostgreSQL's extract/date_part fields, their scales and errors."""

import pytest
from sqlglot import exp

from planner import pg_extract
from planner.errors import SqlError
from planner.pg_extract import Source


@pytest.mark.parametrize("unit, name", [("YEARS", "year"), ("yr", "year"), ("mon", "month"), ("usec", "microseconds"),
                                        ("microsecon", "microseconds"), ("msec", "milliseconds"), ("c", "century"),
                                        (" Epoch ", "epoch"), ("j", "julian")])
def test_spellings_postgres_accepts(unit, name):
    assert pg_extract.field(unit, Source.DATE if name == "julian" else Source.TIMESTAMP) == name


@pytest.mark.parametrize("unit, source, sqlstate, text", [
    ("fortnight", Source.DATE, "22023", 'unit "fortnight" not recognized for type date'),
    ("hour", Source.DATE, "0A000", 'unit "hour" not supported for type date'),
    ("timezone", Source.TIMESTAMP, "0A000", 'unit "timezone" not supported for type timestamp without time zone'),
    ("julian", Source.TIMESTAMP, "0A000", "julian"),
    ("timezone", Source.TIMESTAMPTZ, "0A000", "timezone"),
])
def test_refused_units_raise_postgres_errors(unit, source, sqlstate, text):
    with pytest.raises(SqlError) as err:
        pg_extract.field(unit, source)
    assert err.value.sqlstate == sqlstate
    assert text in err.value.message


@pytest.mark.parametrize("unit, source, scale", [
    ("second", Source.TIMESTAMP, 6), ("milliseconds", Source.TIMESTAMPTZ, 3), ("microseconds", Source.TIMESTAMP, 0),
    ("epoch", Source.TIMESTAMP, 6), ("epoch", Source.DATE, 0), ("year", Source.DATE, 0), ("hour", Source.DATE, None),
])
def test_scale_is_postgres_numeric_scale(unit, source, scale):
    assert pg_extract.scale(unit, source) == scale


def test_century_bracketed_before_division():
    sql = pg_extract.extract("century", exp.column("d"), Source.DATE).sql("spark")
    assert "(EXTRACT(YEAR FROM d) + 99) / 100" in sql


def test_date_part_of_a_date_reads_its_midnight():
    sql = pg_extract.date_part("hour", exp.column("d"), Source.DATE).sql("spark")
    assert "CAST(d AS TIMESTAMP_NTZ)" in sql and sql.endswith("AS DOUBLE)")


@pytest.mark.parametrize("unit, source, sqlstate, message", [
    ("dow", pg_extract.Source.TIMESTAMP, "22023", 'unit "dow" not recognized for type timestamp without time zone'),
    (" Yrs", pg_extract.Source.TIMESTAMP, "22023", 'unit " yrs" not recognized for type timestamp without time zone'),
    ("EPOCH", pg_extract.Source.TIMESTAMPTZ, "22023",
     'unit "epoch" not recognized for type timestamp with time zone'),
    ("timezone_hour", pg_extract.Source.TIMESTAMPTZ, "0A000",
     'unit "timezone_hour" not supported for type timestamp with time zone'),
])
def test_date_trunc_units_refused_as_postgres(unit, source, sqlstate, message):
    with pytest.raises(SqlError) as err:
        pg_extract.truncate(unit, exp.column("ts"), source)
    assert (err.value.sqlstate, err.value.message) == (sqlstate, message)


@pytest.mark.parametrize("unit, spark", [
    ("MONTH", "CAST(DATE_TRUNC('MONTH', ts) AS TIMESTAMP_NTZ)"),
    ("millisecondsXYZ", "CAST(DATE_TRUNC('MILLISECOND', ts) AS TIMESTAMP_NTZ)"),  # read by its first 10 letters
    ("century", "MAKE_TIMESTAMP_NTZ((YEAR(ts) - 1) DIV 100 * 100 + 1, 1, 1, 0, 0, 0)"),
])
def test_date_trunc_units_in_spark(unit, spark):
    assert pg_extract.truncate(unit, exp.column("ts"), pg_extract.Source.TIMESTAMP).sql("spark") == spark
