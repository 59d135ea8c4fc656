"""PostgreSQL 15's interval arithmetic, exactly, on values as text (for Python UDFs in Spark).

An interval is PostgreSQL's (months int32, days int32, microseconds int64), read with
`interval_parse_cached` and written with `interval_text`. Timestamps are Spark's text
('YYYY-MM-DD HH:MM:SS[.ffffff]', years 1..9999; the session zone is UTC, so timestamptz is the
same), computed as microseconds since 2000-01-01 like PostgreSQL's. Each function ports its
namesake in PostgreSQL 15's src/backend/utils/adt/timestamp.c, float steps included
(interval_mul's TSROUND and rint), and raises PostgreSQL's SQLSTATE and message. Every public
function returns None when an argument is None (the SQL functions are strict).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from decimal import Decimal
from functools import wraps
from typing import Any, TypeVar

from planner.codecs.interval import interval_parse_cached as _read
from planner.codecs.interval import interval_text
from planner.errors import SqlError
from planner.pg_julian import date2j, j2date

Interval = tuple[int, int, int]  # (months, days, microseconds)
F = TypeVar("F", bound=Callable[..., Any])

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
US_PER_SEC = 1_000_000
SECS_PER_DAY = 86_400
US_PER_DAY = SECS_PER_DAY * US_PER_SEC
DAYS_PER_MONTH = 30
POSTGRES_EPOCH_JDATE = 2451545  # date2j(2000, 1, 1)
# PostgreSQL's timestamp range (4714-11-24 BC .. 294277-01-01): every step must stay inside it.
MIN_TIMESTAMP = -211_813_488_000_000_000
END_TIMESTAMP = 9_223_371_331_200_000_000
_DAYS_IN_MONTH = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_TS_RE = re.compile(r"(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?)?", re.ASCII)


def _strict(fn: F) -> F:
    """A NULL argument makes the result NULL, as for PostgreSQL's strict functions."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if any(a is None for a in (*args, *kwargs.values())):
            return None
        return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def _out_of_range(what: str) -> SqlError:
    return SqlError("22008", f"{what} out of range")


def _checked(months: int, days: int, micros: int) -> Interval:
    """pg_add_s32_overflow / pg_add_s64_overflow: a field outside its C type is an error."""
    if not (INT32_MIN <= months <= INT32_MAX and INT32_MIN <= days <= INT32_MAX
            and INT64_MIN <= micros <= INT64_MAX):
        raise _out_of_range("interval")
    return months, days, micros


def _wrap(value: int, bits: int) -> int:
    """Two's-complement wraparound (PostgreSQL is built with -fwrapv)."""
    half = 1 << (bits - 1)
    return (value + half) % (1 << bits) - half


def _ctrunc(a: int, b: int) -> tuple[int, int]:
    """C's division by a positive b (truncating toward zero), and its remainder."""
    q = abs(a) // b * (1 if a >= 0 else -1)
    return q, a - q * b


def _text(iv: Interval) -> str:
    return interval_text(*iv)


# ---- calendar: PostgreSQL's date2j / j2date (proleptic Gregorian, astronomical years) ----

def _days_in(y: int, m: int) -> int:
    leap = y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)
    return 29 if m == 2 and leap else _DAYS_IN_MONTH[m - 1]


def _split(t: int) -> tuple[int, int]:
    """timestamp2tm: the Julian day and the time of day (a negative time borrows a day)."""
    days, tod = divmod(t, US_PER_DAY)
    return days + POSTGRES_EPOCH_JDATE, tod


def _join(jd: int, tod: int) -> int:
    return (jd - POSTGRES_EPOCH_JDATE) * US_PER_DAY + tod


def _pg_range(t: int) -> int:
    if not MIN_TIMESTAMP <= t < END_TIMESTAMP:
        raise _out_of_range("timestamp")
    return t


_SPARK_MIN, _SPARK_END = _join(date2j(1, 1, 1), 0), _join(date2j(10000, 1, 1), 0)


def _parse_ts(s: str, type_name: str = "timestamp") -> int:
    m = _TS_RE.fullmatch(s.strip())
    if m is None or (type_name == "date" and m.group(4) is not None):
        raise SqlError("22007", f'invalid input syntax for type {type_name}: "{s}"')
    y, mo, d, hh, mi, ss = (int(g or 0) for g in m.groups()[:6])
    if not (y >= 1 and 1 <= mo <= 12 and 1 <= d <= _days_in(y, mo) and hh < 24 and mi < 60 and ss < 60):
        raise SqlError("22008", f'date/time field value out of range: "{s}"')
    us = int((m.group(7) or "").ljust(6, "0"))
    return _join(date2j(y, mo, d), ((hh * 60 + mi) * 60 + ss) * US_PER_SEC + us)


def _format_ts(t: int) -> str:
    """Spark's timestamp text. Years outside 1..9999 are our limit (Spark's), not PostgreSQL's."""
    if not _SPARK_MIN <= t < _SPARK_END:
        raise _out_of_range("timestamp")
    jd, tod = _split(t)
    y, mo, d = j2date(jd)
    secs, us = divmod(tod, US_PER_SEC)
    text = f"{y:04d}-{mo:02d}-{d:02d} {secs // 3600:02d}:{secs // 60 % 60:02d}:{secs % 60:02d}"
    return f"{text}.{us:06d}" if us else text


# ---- timestamp +/- interval --------------------------------------------------------------

def _add(t: int, iv: Interval) -> int:
    """timestamp_pl_interval: months first (the day clamped to the new month's last day), then
    days through the Julian day, then microseconds; each step must stay a PostgreSQL timestamp."""
    months, days, micros = iv
    if months:
        jd, tod = _split(t)
        y, m, d = j2date(jd)
        y, m = divmod(y * 12 + m - 1 + months, 12)
        t = _pg_range(_join(date2j(y, m + 1, min(d, _days_in(y, m + 1))), tod))
    if days:
        jd, tod = _split(t)
        t = _pg_range(_join(jd + days, tod))
    return _pg_range(t + micros)


def _shift(t: int, iv: str, sign: int) -> str:
    # timestamp_mi_interval negates the fields unchecked (-INT_MIN wraps to itself); that only
    # ever overflows the timestamp, so negating without a limit raises the same error.
    months, days, micros = _read(iv)
    return _format_ts(_add(t, (sign * months, sign * days, sign * micros)))


# generate_series over timestamps hands Spark an array of its rows, where PostgreSQL streams
# them: past this many, 54000 rather than a worker out of memory.
SERIES_LIMIT = 10_000_000


@_strict
def series(start: str, stop: str, step: str) -> list[str]:
    """generate_series(timestamp, timestamp, interval) (generate_series_timestamp): from the
    start, each row the last one plus the step (so month steps keep to shorter months as they
    meet them), while it has not passed the stop; 22023 for a step of zero span."""
    iv = _read(step)
    direction = (iv[0] * DAYS_PER_MONTH + iv[1]) * US_PER_DAY + iv[2]
    if direction == 0:
        raise SqlError("22023", "step size cannot equal zero")
    current, finish = _parse_ts(start), _parse_ts(stop)
    rows: list[str] = []
    while current <= finish if direction > 0 else current >= finish:
        if len(rows) == SERIES_LIMIT:
            raise SqlError("54000", f"generate_series over timestamps gives at most {SERIES_LIMIT} rows here")
        rows.append(_format_ts(current))
        current = _add(current, iv)  # PostgreSQL computes the next one too, and fails where it would
    return rows


@_strict
def plus(ts: str, iv: str) -> str:
    return _shift(_parse_ts(ts), iv, 1)


@_strict
def minus(ts: str, iv: str) -> str:
    return _shift(_parse_ts(ts), iv, -1)


@_strict
def date_plus(d: str, iv: str) -> str:
    return _shift(_parse_ts(d, "date"), iv, 1)


@_strict
def date_minus(d: str, iv: str) -> str:
    return _shift(_parse_ts(d, "date"), iv, -1)


# ---- time +/- interval, time - time -------------------------------------------------------

_TIME_RE = re.compile(r"(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?", re.ASCII)


def _parse_time(s: str) -> int:
    """Spark's text of a TIME(6) (trailing zeros of the fraction dropped) as microseconds."""
    m = _TIME_RE.fullmatch(s.strip())
    if m is None:
        raise SqlError("22007", f'invalid input syntax for type time: "{s}"')
    h, mi, sec, frac = m.groups()
    return ((int(h) * 60 + int(mi)) * 60 + int(sec)) * US_PER_SEC + int((frac or "").ljust(6, "0"))


def _format_time(us: int) -> str:
    secs, frac = divmod(us, US_PER_SEC)
    text = f"{secs // 3600:02d}:{secs // 60 % 60:02d}:{secs % 60:02d}"
    return f"{text}.{frac:06d}".rstrip("0") if frac else text  # time_out's trailing zeros dropped


def _time_shift(t: str, iv: str, sign: int) -> str:
    # time_pl_interval / time_mi_interval: only the interval's time counts, and the result
    # wraps around midnight (C's remainder made non-negative is Python's modulo).
    return _format_time(_wrap(_parse_time(t) + sign * _read(iv)[2], 64) % US_PER_DAY)


@_strict
def time_plus(t: str, iv: str) -> str:
    """time + interval (and interval + time): the interval's days and months do not count."""
    return _time_shift(t, iv, 1)


@_strict
def time_minus(t: str, iv: str) -> str:
    return _time_shift(t, iv, -1)


@_strict
def time_diff(t1: str, t2: str) -> str:
    """time - time: an interval of the difference's time alone (time_mi_time)."""
    return _text((0, 0, _parse_time(t1) - _parse_time(t2)))


# ---- interval +/- interval, unary minus ---------------------------------------------------

def _combine(x: Interval, y: Interval, sign: int) -> Interval:
    return _checked(x[0] + sign * y[0], x[1] + sign * y[1], x[2] + sign * y[2])


@_strict
def add(a: str, b: str) -> str:
    return _text(_combine(_read(a), _read(b), 1))


@_strict
def sub(a: str, b: str) -> str:
    return _text(_combine(_read(a), _read(b), -1))


@_strict
def negate(a: str) -> str:
    return _text(_combine((0, 0, 0), _read(a), -1))


# ---- interval * / float8 ------------------------------------------------------------------

def _fits(x: float, bits: int) -> bool:
    """FLOAT8_FITS_IN_INT32 / _INT64 (false for NaN)."""
    return -(2.0 ** (bits - 1)) <= x < 2.0 ** (bits - 1)


def _tsround(x: float) -> float:
    """TSROUND: round to microsecond precision (rint is round-half-even, as Python's round)."""
    return round(x * 1e6) / 1e6


def _scale(iv: Interval, apply: Callable[[float], float]) -> Interval:
    """interval_mul / interval_div: whole months and days scale in place; their fractions cascade
    down (a month is 30 days, a day 86400 s) and are never carried back up."""
    months, days, micros = iv
    month_f, day_f = apply(float(months)), apply(float(days))
    if not (_fits(month_f, 32) and _fits(day_f, 32)):
        raise _out_of_range("interval")
    r_month, r_day = int(month_f), int(day_f)
    month_remainder_days = _tsround((month_f - r_month) * DAYS_PER_MONTH)
    sec_remainder = _tsround(
        (day_f - r_day + month_remainder_days - int(month_remainder_days)) * SECS_PER_DAY)
    # Rounding may give 24:00:00, and the cascade more than a day: move whole days up.
    if abs(sec_remainder) >= SECS_PER_DAY:
        whole = int(sec_remainder / SECS_PER_DAY)
        r_day = _checked(0, r_day + whole, 0)[1]
        sec_remainder -= whole * SECS_PER_DAY
    r_day = _checked(0, r_day + int(month_remainder_days), 0)[1]
    time_f = apply(float(micros)) + sec_remainder * US_PER_SEC
    if not _fits(time_f, 64):
        raise _out_of_range("interval")
    return r_month, r_day, round(time_f)


def _div(iv: Interval, factor: float) -> Interval:
    if factor == 0.0:
        raise SqlError("22012", "division by zero")
    return _scale(iv, lambda x: x / factor)  # by NaN: interval out of range, by ±inf: zero


@_strict
def mul(a: str, factor: float) -> str:
    f = float(factor)
    return _text(_scale(_read(a), lambda x: x * f))  # NaN and ±inf: interval out of range


@_strict
def div(a: str, factor: float) -> str:
    return _text(_div(_read(a), float(factor)))


# ---- comparison, differences, justify -----------------------------------------------------

@_strict
def span(a: str) -> int:
    """interval_cmp_value: months as 30 days, days as 24 hours, in microseconds (int128 in C)."""
    months, days, micros = _read(a)
    return (months * DAYS_PER_MONTH + days) * US_PER_DAY + micros


def _days_into_months(months: int, days: int) -> tuple[int, int]:
    wholemonth, days = _ctrunc(days, DAYS_PER_MONTH)
    return _checked(months + wholemonth, 0, 0)[0], days


def _same_sign(high: int, low: int, unit: int, below: bool, above: bool) -> tuple[int, int]:
    """Move one `unit` between the fields so that the lower one (below or above zero, as the
    caller judges it) takes the sign of the higher one."""
    if high > 0 and below:
        return high - 1, low + unit
    if high < 0 and above:
        return high + 1, low - unit
    return high, low


def _justify_hours(iv: Interval) -> Interval:
    months, days, micros = iv
    wholeday, micros = _ctrunc(micros, US_PER_DAY)
    days = _checked(0, days + wholeday, 0)[1]
    return (months, *_same_sign(days, micros, US_PER_DAY, micros < 0, micros > 0))


@_strict
def justify_hours(a: str) -> str:
    return _text(_justify_hours(_read(a)))


@_strict
def justify_days(a: str) -> str:
    months, days, micros = _read(a)
    months, days = _days_into_months(months, days)
    return _text((*_same_sign(months, days, DAYS_PER_MONTH, days < 0, days > 0), micros))


@_strict
def justify_interval(a: str) -> str:
    months, days, micros = _read(a)
    if (days > 0 and micros > 0) or (days < 0 and micros < 0):
        months, days = _days_into_months(months, days)  # pre-justify so days + wholeday fits
    wholeday, micros = _ctrunc(micros, US_PER_DAY)
    months, days = _days_into_months(months, days + wholeday)
    months, days = _same_sign(months, days, DAYS_PER_MONTH, days < 0 or (days == 0 and micros < 0),
                              days > 0 or (days == 0 and micros > 0))
    return _text((months, *_same_sign(days, micros, US_PER_DAY, micros < 0, micros > 0)))


@_strict
def diff(t1: str, t2: str) -> str:
    """timestamp_mi: the microsecond difference, then justify_hours (which PostgreSQL's own
    comment calls wrong, and keeps)."""
    return _text(_justify_hours((0, 0, _parse_ts(t1) - _parse_ts(t2))))


def _fields(t: int) -> list[int]:
    """timestamp2tm as [year, month, day, hour, minute, second, microsecond]."""
    jd, tod = _split(t)
    secs, us = divmod(tod, US_PER_SEC)
    return [*j2date(jd), secs // 3600, secs // 60 % 60, secs % 60, us]


@_strict
def age(t1: str, t2: str) -> str:
    """timestamp_age: subtract field by field, borrowing upward; a borrowed month is as long as
    the month of the earlier timestamp (its own month, not the one before it)."""
    dt1, dt2 = _parse_ts(t1), _parse_ts(t2)
    f1, f2 = _fields(dt1), _fields(dt2)
    sign = -1 if dt1 < dt2 else 1
    tm = [sign * (x - y) for x, y in zip(f1, f2, strict=True)]  # year .. microsecond
    earlier = f1 if sign < 0 else f2
    month_days = _days_in(earlier[0], earlier[1])
    for i, base in ((6, US_PER_SEC), (5, 60), (4, 60), (3, 24), (2, month_days), (1, 12)):
        while tm[i] < 0:  # a day can need two borrows of a short month
            tm[i] += base
            tm[i - 1] -= 1
    year, mon, mday, hour, minute, sec, us = (sign * v for v in tm)
    return _text(_checked(year * 12 + mon, mday, ((hour * 60 + minute) * 60 + sec) * US_PER_SEC + us))


# ---- extract / date_part ------------------------------------------------------------------

# DecodeUnits' deltatktbl. PostgreSQL compares at most TOKMAXLEN (10) characters, so the
# 10-character tokens also match any longer word they begin ("millisecondsxyz").
_UNIT_WORDS = {
    "century": "c cent centuries century", "day": "d day days", "decade": "dec decade decades decs",
    "hour": "h hour hours hr hrs", "minute": "m min mins minute minutes",
    "microseconds": "microsecon us usec usecond useconds usecs",
    "millennium": "mil millennia millennium mils", "milliseconds": "millisecon ms msec msecond mseconds msecs",
    "month": "mon mons month months", "quarter": "qtr quarter", "second": "s sec second seconds secs",
    "week": "w week weeks", "year": "y year years yr yrs", "timezone": "timezone timezone_h timezone_m",
}
_UNITS = {word: unit for unit, words in _UNIT_WORDS.items() for word in words.split()}
_DELTA_OTHER = frozenset({"@", "ago", "invalid", "undefined"})  # in deltatktbl, but not UNITS
# DecodeSpecial's datetktbl, consulted only for a word deltatktbl lacks: its UNITS and epoch.
_SPECIAL = {"mm": "minute", "dow": "dow", "doy": "doy", "isodow": "isodow", "isoyear": "isoyear",
            "j": "julian", "jd": "julian", "julian": "julian", "epoch": "epoch"}
# What interval_part_common handles in 15 (not week, which came in 16).
_INTERVAL_FIELDS = frozenset({"microseconds", "milliseconds", "second", "minute", "hour", "day", "month",
                              "quarter", "year", "decade", "century", "millennium", "epoch"})


def _lowered(field: str) -> str:
    """downcase_truncate_identifier: ASCII-only lowercasing, cut to 63 bytes (whole characters)."""
    low = "".join(c.lower() if "A" <= c <= "Z" else c for c in field)
    return low.encode("utf-8")[:63].decode("utf-8", errors="ignore")


def _unit(field: str) -> str:
    """The field's unit, or PostgreSQL's error for a word it does not know or an interval lacks."""
    low = _lowered(field)
    key = low[:10]
    unit = _UNITS.get(key) or (None if key in _DELTA_OTHER else _SPECIAL.get(key))
    if unit is None:
        raise SqlError("22023", f'unit "{low}" not recognized for type interval')
    if unit not in _INTERVAL_FIELDS:
        raise SqlError("0A000", f'unit "{low}" not supported for type interval')
    return unit


# interval_trunc's units, largest first: truncating to one also truncates every smaller one
# down to the second (its switch falls through); milliseconds and microseconds stand alone.
_TRUNCATED = ("millennium", "century", "decade", "year", "quarter", "month", "day", "hour", "minute", "second")


@_strict
def trunc(field: str, a: str) -> str:
    """date_trunc(field, interval): the fields below `field` zeroed, each field as
    interval2itm gives it (C's truncating division, so each keeps its part's sign)."""
    low = _lowered(field)
    unit = _UNITS.get(low[:10])  # DecodeUnits: the interval words only (not epoch)
    if unit is None:
        raise SqlError("22023", f'unit "{low}" not recognized for type interval')
    if unit not in (*_TRUNCATED, "milliseconds", "microseconds"):
        raise SqlError("0A000", f'unit "{low}" not supported for type interval')
    months, days, micros = _read(a)
    year, mon = _ctrunc(months, 12)
    hour, rest = _ctrunc(micros, 3600 * US_PER_SEC)
    minute, rest = _ctrunc(rest, 60 * US_PER_SEC)
    sec, usec = _ctrunc(rest, US_PER_SEC)
    if unit == "milliseconds":
        usec = _ctrunc(usec, 1000)[0] * 1000
    elif unit != "microseconds":
        steps = _TRUNCATED[_TRUNCATED.index(unit):]
        for size, name in ((1000, "millennium"), (100, "century"), (10, "decade")):
            if name in steps:
                year = _ctrunc(year, size)[0] * size
        mon = 0 if "year" in steps else _ctrunc(mon, 3)[0] * 3 if "quarter" in steps else mon
        days = 0 if "month" in steps else days
        hour = 0 if "day" in steps else hour
        minute = 0 if "hour" in steps else minute
        sec = 0 if "minute" in steps else sec
        usec = 0
    return _text((year * 12 + mon, days, ((hour * 60 + minute) * 60 + sec) * US_PER_SEC + usec))


def _epoch(months: int, days: int, micros: int, numeric: bool) -> Decimal | float:
    # A year of month / 12 is 365.25 days, a month of month % 12 is 30 (C division).
    years, rest = _ctrunc(months, 12)
    if numeric:  # in quarter days, so that 365.25 days is a whole 1461
        secs = (1461 * years + 4 * DAYS_PER_MONTH * rest + 4 * days) * (SECS_PER_DAY // 4)
        return Decimal(f"{secs * US_PER_SEC + micros}e-6")
    result = micros / 1000000.0  # the float steps of date_part, in PostgreSQL's order
    result += (365.25 * SECS_PER_DAY) * years
    result += (30.0 * SECS_PER_DAY) * rest
    return result + float(SECS_PER_DAY) * days


def _part(field: str, a: str, numeric: bool) -> Decimal | float:
    unit = _unit(field)
    months, days, micros = _read(a)
    if unit == "epoch":
        return _epoch(months, days, micros, numeric)
    # interval2itm: C's truncating division, so each field keeps the sign of the part it is from.
    year, mon = _ctrunc(months, 12)
    hour, rest = _ctrunc(micros, 3600 * US_PER_SEC)
    minute, rest = _ctrunc(rest, 60 * US_PER_SEC)
    sec, usec = _ctrunc(rest, US_PER_SEC)
    if unit == "second":
        return Decimal(f"{sec * US_PER_SEC + usec}e-6") if numeric else sec + usec / 1000000.0
    if unit == "milliseconds":
        return Decimal(f"{sec * US_PER_SEC + usec}e-3") if numeric else sec * 1000.0 + usec / 1000.0
    # PostgreSQL 15's quarter is tm_mon / 3 + 1 whatever the sign (so -2 mons is quarter 1).
    value = {"quarter": _ctrunc(mon, 3)[0] + 1, "microseconds": sec * US_PER_SEC + usec,
             "minute": minute, "hour": hour, "day": days, "month": mon, "year": year,
             "decade": _ctrunc(year, 10)[0], "century": _ctrunc(year, 100)[0],
             "millennium": _ctrunc(year, 1000)[0]}[unit]
    return Decimal(value) if numeric else float(value)


@_strict
def part(field: str, a: str) -> Decimal:
    """extract(field FROM interval): numeric, at PostgreSQL's scale (second 1.500000,
    milliseconds 1500.000, epoch 6 decimals, the others whole)."""
    return Decimal(_part(field, a, numeric=True))


@_strict
def date_part(field: str, a: str) -> float:
    """date_part('field', interval): double precision, by PostgreSQL's float steps."""
    return float(_part(field, a, numeric=False))


# ---- aggregates, make_interval ------------------------------------------------------------

def _sum(values: Sequence[str | None]) -> tuple[Interval, int] | None:
    """interval_pl over the non-NULL values in order (an overflowing partial sum is an error)."""
    total, n = (0, 0, 0), 0
    for v in values:
        if v is not None:
            total, n = _combine(total, _read(v), 1), n + 1
    return (total, n) if n else None


@_strict
def total(values: Sequence[str | None]) -> str | None:
    """sum(interval); NULL when there is no non-NULL value."""
    summed = _sum(values)
    return None if summed is None else _text(summed[0])


@_strict
def mean(values: Sequence[str | None]) -> str | None:
    """avg(interval): interval_div of the sum by the count as a double."""
    summed = _sum(values)
    return None if summed is None else _text(_div(summed[0], float(summed[1])))


def _int32_arg(v: float) -> int:
    n = v if isinstance(v, int) else round(float(v))
    if not INT32_MIN <= n <= INT32_MAX:
        raise SqlError("22003", "integer out of range")
    return n


@_strict
def make_interval(years: int = 0, months: int = 0, weeks: int = 0, days: int = 0, hours: int = 0,
                  mins: int = 0, secs: float = 0.0) -> str:
    """make_interval as PostgreSQL 15 computes it: only a NaN or infinite secs is refused; the
    int32/int64 arithmetic wraps unchecked, and a secs beyond int64 converts to INT64_MIN (the
    x86 result of casting an out-of-range double)."""
    y, mo, w, d, h, mi = (_int32_arg(v) for v in (years, months, weeks, days, hours, mins))
    s = float(secs)
    if not math.isfinite(s):
        raise _out_of_range("interval")
    us_f = s * US_PER_SEC  # may itself overflow to infinity
    us = round(us_f) if _fits(us_f, 64) else INT64_MIN
    time = h * 3600 * US_PER_SEC + mi * 60 * US_PER_SEC + us
    return _text((_wrap(y * 12 + mo, 32), _wrap(w * 7 + d, 32), _wrap(time, 64)))
