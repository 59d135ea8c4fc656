"""EXTRACT(field FROM x) and date_part('field', x) of dates and timestamps, as PostgreSQL 15's.

PostgreSQL's extract is numeric, at a scale that depends on the field (`second` 1.500000,
`milliseconds` 1500.000, `epoch` of a timestamp 1577836801.500000, of a date 1577836800);
date_part is the same value as double precision, of a date through a timestamp (so
`date_part('hour', d)` is 0 where `extract(hour from d)` is 0A000). Fields that Spark counts
differently are computed here: `dow` (PostgreSQL's Sunday is 0, Spark's 1), `isodow`,
`isoyear`, `decade`, `century`, `millennium`, `epoch` and the second's fractions.
"""

from __future__ import annotations

from enum import Enum

from sqlglot import exp

from planner import interval_calls, sql_template
from planner.errors import FEATURE_NOT_SUPPORTED, SqlError


class Source(Enum):
    DATE = "date"
    TIMESTAMP = "timestamp without time zone"
    TIMESTAMPTZ = "timestamp with time zone"
    INTERVAL = "interval"


# The spellings PostgreSQL's DecodeUnits/DecodeSpecial accept for each field (lowercased;
# a token is cut to 10 characters, hence "microsecon").
_SPELLINGS: dict[str, tuple[str, ...]] = {
    "year": ("year", "years", "y", "yr", "yrs"),
    "month": ("month", "months", "mon", "mons"),
    "day": ("day", "days", "d"),
    "hour": ("hour", "hours", "h", "hr", "hrs"),
    "minute": ("minute", "minutes", "m", "min", "mins"),
    "second": ("second", "seconds", "s", "sec", "secs"),
    "milliseconds": ("millisecond", "milliseconds", "millisecon", "ms", "msec", "msecs", "mseconds"),
    "microseconds": ("microsecond", "microseconds", "microsecon", "us", "usec", "usecs", "useconds"),
    "quarter": ("quarter", "qtr"),
    "week": ("week", "weeks", "w"),
    "decade": ("decade", "decades", "dec", "decs"),
    "century": ("century", "centuries", "c", "cent"),
    "millennium": ("millennium", "millennia", "mil", "mils", "millenia"),
    "dow": ("dow",),
    "isodow": ("isodow",),
    "doy": ("doy",),
    "isoyear": ("isoyear",),
    "epoch": ("epoch",),
    "julian": ("julian", "j"),
    "timezone": ("timezone",),
    "timezone_hour": ("timezone_h",),
    "timezone_minute": ("timezone_m",),
}
_FIELDS = {spelling: field for field, spellings in _SPELLINGS.items() for spelling in spellings}
_TIME_OF_DAY = frozenset({"hour", "minute", "second", "milliseconds", "microseconds"})
_ZONE = frozenset({"timezone", "timezone_hour", "timezone_minute"})
# The fields an interval has (interval_part_common); the others are 0A000 for it.
_INTERVAL_FIELDS = frozenset({"microseconds", "milliseconds", "second", "minute", "hour", "day", "month",
                              "quarter", "year", "decade", "century", "millennium", "epoch"})

# The DECIMAL each numeric field arrives as: PostgreSQL's scale for it.
_DECIMALS = {"second": (8, 6), "milliseconds": (11, 3), "microseconds": (14, 0)}
_SECOND_FACTORS = {"milliseconds": 1000, "microseconds": 1000000}
_SPARK_FIELDS = {"year": "YEAR", "month": "MONTH", "day": "DAY", "hour": "HOUR", "minute": "MINUTE",
                 "quarter": "QUARTER", "week": "WEEK", "doy": "DOY", "isoyear": "YEAROFWEEK"}


def field(unit: str, source: Source) -> str:
    """PostgreSQL's field for a unit as written, or its error for this source type."""
    name = _FIELDS.get(unit.strip().lower())
    if name is None:
        raise SqlError("22023", f'unit "{unit}" not recognized for type {source.value}')
    if source is Source.DATE and name in _TIME_OF_DAY | _ZONE or source is Source.TIMESTAMP and name in _ZONE \
            or source is Source.INTERVAL and name not in _INTERVAL_FIELDS:
        raise SqlError(FEATURE_NOT_SUPPORTED, f'unit "{unit}" not supported for type {source.value}')
    if name == "julian" and source is not Source.DATE or name in _ZONE:
        raise SqlError(FEATURE_NOT_SUPPORTED, f'extract({name} from {source.value}) is not supported')
    return name


def _refused(err: SqlError, value: exp.Expression, spark_type: str) -> exp.Expression:
    """A unit the type does not have: PostgreSQL's error for each value, NULL for NULL (the
    function is strict: it never sees a NULL)."""
    return _cast(exp.If(this=exp.Is(this=value.copy(), expression=exp.Null()), true=exp.Null(),
                        false=sql_template.pg_error(err.sqlstate, err.message)), spark_type)


def extract(unit: str, value: exp.Expression, source: Source) -> exp.Expression:
    """extract(unit from value) as PostgreSQL's numeric, at its scale."""
    try:
        name = field(unit, source)
    except SqlError as err:
        return _refused(err, value, "DECIMAL(20, 0)")
    if source is Source.INTERVAL:  # planner.pg_interval.part, at the field's scale
        precision, digits = _decimal(name, source)
        return _cast(sql_template.spark(interval_calls.call("part", "{0}", "{1}"), exp.Literal.string(name),
                                        value), f"DECIMAL({precision}, {digits})")
    if name == "julian":  # of a date: its Julian day number
        return _cast(_julian_day(value), "DECIMAL(20, 0)")
    if name == "epoch" and source is Source.DATE:
        days = exp.Anonymous(this="unix_date", expressions=[value.copy()])
        return _cast(exp.Mul(this=_cast(days, "DECIMAL(20, 0)"), expression=exp.Literal.number(86400)),
                     "DECIMAL(20, 0)")
    return _numeric(name, value, source)


def scale(unit: str, source: Source) -> int | None:
    """The scale of extract's numeric: every value has it (None for a unit it refuses)."""
    try:
        name = field(unit, source)
    except SqlError:
        return None
    return _decimal(name, source)[1]


def _decimal(name: str, source: Source) -> tuple[int, int]:
    """The precision and scale extract's numeric arrives with."""
    if name == "epoch":
        return (20, 0) if source is Source.DATE else (38, 6)
    return _DECIMALS.get(name, (20, 0))


def _numeric(name: str, value: exp.Expression, source: Source = Source.TIMESTAMP) -> exp.Expression:
    precision, digits = _decimal(name, source)
    return _cast(spark_field(name, value), f"DECIMAL({precision}, {digits})")


def date_part(unit: str, value: exp.Expression, source: Source) -> exp.Expression:
    """date_part('unit', value) as PostgreSQL's double precision (a date as its midnight)."""
    if source is Source.DATE and _FIELDS.get(unit.strip().lower()) == "julian":
        return _cast(_julian_day(value), "DOUBLE")
    try:
        name = field(unit, Source.TIMESTAMP if source is Source.DATE else source)
    except SqlError as err:
        return _refused(err, value, "DOUBLE")
    if source is Source.INTERVAL:
        return sql_template.spark(interval_calls.call("date_part", "{0}", "{1}"), exp.Literal.string(name), value)
    if source is Source.DATE:
        value = _cast(value, "TIMESTAMP_NTZ")
    return _cast(spark_field(name, value), "DOUBLE")


def spark_field(name: str, value: exp.Expression) -> exp.Expression:
    """The Spark expression of a PostgreSQL field (as `field` names it) of a date or
    timestamp, at Spark's own type."""
    x = value.copy()
    if name in _SPARK_FIELDS:
        return exp.Extract(this=exp.Var(this=_SPARK_FIELDS[name]), expression=x)
    if name == "dow":  # PostgreSQL: Sunday is 0; Spark's DAYOFWEEK: Sunday is 1
        return exp.Sub(this=_fn("dayofweek", x), expression=exp.Literal.number(1))
    if name == "isodow":  # Monday 1 ... Sunday 7
        return exp.Add(this=_fn("weekday", x), expression=exp.Literal.number(1))
    if name == "second":
        return exp.Extract(this=exp.Var(this="SECOND"), expression=x)  # DECIMAL(8, 6): the fraction too
    if name in _SECOND_FACTORS:
        return exp.Mul(this=spark_field("second", x), expression=exp.Literal.number(_SECOND_FACTORS[name]))
    if name == "epoch":
        micros = _fn("unix_micros", _cast(x, "TIMESTAMP"))
        return exp.Div(this=_cast(micros, "DECIMAL(38, 6)"), expression=exp.Literal.number(1000000))
    year = exp.Extract(this=exp.Var(this="YEAR"), expression=x)
    # For years after 0 (Spark's dates are proleptic Gregorian, year 0 is 1 BC): PostgreSQL's
    # decade is year / 10, its century and millennium start at years ending in 1.
    if name == "decade":
        return _fn("floor", exp.Div(this=year, expression=exp.Literal.number(10)))
    if name == "century":
        return _fn("floor", exp.Div(this=exp.Paren(this=exp.Add(this=year, expression=exp.Literal.number(99))),
                                    expression=exp.Literal.number(100)))
    if name == "millennium":
        return _fn("floor", exp.Div(this=exp.Paren(this=exp.Add(this=year, expression=exp.Literal.number(999))),
                                    expression=exp.Literal.number(1000)))
    raise SqlError(FEATURE_NOT_SUPPORTED, f"extract({name}) is not supported")


def _julian_day(date: exp.Expression) -> exp.Expression:
    """A date's Julian day number: 1970-01-01 is day 2440588."""
    return exp.Add(this=exp.Anonymous(this="unix_date", expressions=[date.copy()]), expression=exp.Literal.number(2440588))


def _fn(name: str, *args: exp.Expression) -> exp.Expression:
    return exp.Anonymous(this=name, expressions=list(args))


def _cast(value: exp.Expression, spark_type: str) -> exp.Expression:
    return exp.Cast(this=value, to=exp.DataType.build(spark_type, dialect="spark"))


def older_path_field(unit: str, value: exp.Expression) -> exp.Expression | None:
    """For the sqlglot path, which does not know the argument's type: the fields Spark
    computes differently, as numerics at PostgreSQL's scale; None for the others."""
    name = _FIELDS.get(unit.lower())
    if name in ("epoch", "milliseconds", "microseconds", "dow", "isodow", "isoyear", "decade", "century",
                "millennium"):
        return _numeric(name, value)
    return None


# date_trunc's units, as Spark's date_trunc spells them; decade, century and millennium
# are cut from the year (Spark has none of them).
_TRUNC_UNITS = {"year": "YEAR", "quarter": "QUARTER", "month": "MONTH", "week": "WEEK", "day": "DAY",
                "hour": "HOUR", "minute": "MINUTE", "second": "SECOND", "milliseconds": "MILLISECOND",
                "microseconds": "MICROSECOND"}
# The first year of the decade, century or millennium a year falls in (years 1 and later):
# 2024 → 2020, 2001, 2001 (PostgreSQL's centuries and millennia begin in their year 1).
_TRUNC_YEARS = {"decade": "year({0}) - year({0}) % 10", "century": "(year({0}) - 1) div 100 * 100 + 1",
                "millennium": "(year({0}) - 1) div 1000 * 1000 + 1"}


def truncate(unit: str, value: exp.Expression, source: Source) -> exp.Expression:
    """date_trunc(unit, timestamp or timestamptz) as PostgreSQL's: its unit spellings, 22023
    for a unit it does not recognize there, 0A000 for the time zone units."""
    lowered = unit.lower()  # not stripped; looked up by its first 10 characters, as DecodeUnits does
    name = _FIELDS.get(lowered[:10])
    if name in _ZONE:
        raise SqlError(FEATURE_NOT_SUPPORTED, f'unit "{lowered}" not supported for type {source.value}')
    if name not in _TRUNC_UNITS and name not in _TRUNC_YEARS:
        raise SqlError("22023", f'unit "{lowered}" not recognized for type {source.value}')
    ntz = source is Source.TIMESTAMP
    if name in _TRUNC_UNITS:
        cut = _fn("date_trunc", exp.Literal.string(_TRUNC_UNITS[name]), value)
        return _cast(cut, "TIMESTAMP_NTZ") if ntz else cut
    year = sql_template.spark(_TRUNC_YEARS[name], value)
    zero = exp.Literal.number(0)
    return _fn("make_timestamp_ntz" if ntz else "make_timestamp", year, exp.Literal.number(1),
               exp.Literal.number(1), zero, zero, zero)
