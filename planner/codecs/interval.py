"""Intervals: PostgreSQL's input syntax -> (months, days, microseconds) -> text.

Pure: no I/O. See planner/codecs/__init__.py for the Python value of each type.
"""

from __future__ import annotations

import re
from decimal import (
    ROUND_HALF_EVEN,
    Decimal,
)
from functools import lru_cache

from planner.codecs.base import US_PER_DAY, WS, syntax
from planner.errors import SqlError

_IV_UNIT_NAMES = {
    "us": ("microsecon", "us", "usec", "usecs", "usecond", "useconds"),
    "ms": ("millisecon", "ms", "msec", "msecs", "msecond", "mseconds"),
    "second": ("s", "sec", "secs", "second", "seconds"),
    "minute": ("m", "min", "mins", "minute", "minutes"),
    "hour": ("h", "hr", "hrs", "hour", "hours"),
    "day": ("d", "day", "days"),
    "week": ("w", "week", "weeks"),
    "month": ("mon", "mons", "month", "months"),
    "year": ("y", "yr", "yrs", "year", "years"),
    "decade": ("dec", "decs", "decade", "decades"),
    "century": ("c", "cent", "century", "centuries"),
    "millennium": ("mil", "mils", "millennia", "millennium"),
}
_IV_UNITS = {name: unit for unit, names in _IV_UNIT_NAMES.items() for name in names}
_IV_US = {"us": 1, "ms": 1000, "second": 1_000_000, "minute": 60_000_000, "hour": 3_600_000_000}
_IV_YEARS = {"year": 1, "decade": 10, "century": 100, "millennium": 1000}

_IV_TOKEN_RE = re.compile(
    r"""(?P<time>[+-]?[0-9]+:[0-9]+(?::[0-9]+)?(?:\.[0-9]*)?)
      | (?P<ym>[+-]?[0-9]+-[0-9]+)
      | (?P<num>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))
      | (?P<word>[A-Za-z]+)
      | (?P<ws>[ \t\n\r\f\v]+)""",
    re.VERBOSE | re.ASCII,
)
_IV_ISO_NUM = r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
_IV_ISO_RE = re.compile(
    rf"P(?:{_IV_ISO_NUM}Y)?(?:{_IV_ISO_NUM}M)?(?:{_IV_ISO_NUM}W)?(?:{_IV_ISO_NUM}D)?"
    rf"(?:T(?:{_IV_ISO_NUM}H)?(?:{_IV_ISO_NUM}M)?(?:{_IV_ISO_NUM}S)?)?",
    re.ASCII | re.IGNORECASE,
)


class _Interval:
    __slots__ = ("days", "micros", "months")

    def __init__(self) -> None:
        self.months = 0
        self.days = 0
        self.micros = 0

    def add_us(self, f: Decimal) -> None:
        # AdjustFractMicroseconds: truncate, then round the leftover fraction.
        us = int(f)
        rest = f - us
        if rest > Decimal("0.5"):
            us += 1
        elif rest < Decimal("-0.5"):
            us -= 1
        self.micros += us

    def add_days(self, f: Decimal) -> None:
        whole = int(f)
        self.days += whole
        self.add_us((f - whole) * US_PER_DAY)

    def add(self, num: Decimal, unit: str) -> None:
        whole = int(num)
        frac = num - whole
        if unit in _IV_YEARS:
            scale = _IV_YEARS[unit]
            self.months += whole * 12 * scale
            self.months += int((frac * scale * 12).to_integral_value(ROUND_HALF_EVEN))
        elif unit == "month":
            self.months += whole
            self.add_days(frac * 30)
        elif unit == "week":
            self.days += whole * 7
            self.add_days(frac * 7)
        elif unit == "day":
            self.days += whole
            self.add_us(frac * US_PER_DAY)
        else:
            scale = _IV_US[unit]
            self.micros += whole * scale
            self.add_us(frac * scale)


def interval_parse(s: str) -> tuple[int, int, int]:
    """PostgreSQL interval input (postgres and ISO 8601 styles, SQL year-month,
    "ago") to (months, days, microseconds)."""
    iv = _Interval()
    body = s.strip(WS)
    body = body.removeprefix("@")
    m = _IV_ISO_RE.fullmatch(body.strip(WS))
    if m and any(m.groups()):
        for value, unit in zip(
            m.groups(), ("year", "month", "week", "day", "hour", "minute", "second")
        ):
            if value is not None:
                iv.add(Decimal(value), unit)
        return _interval_check(iv, s)
    tokens: list[tuple[str, str]] = []
    pos = 0
    while pos < len(body):
        tm = _IV_TOKEN_RE.match(body, pos)
        if tm is None:
            raise syntax("interval", s, "22007")
        pos = tm.end()
        if tm.lastgroup != "ws":
            tokens.append((tm.lastgroup or "", tm.group()))
    if not tokens:
        raise syntax("interval", s, "22007")
    negate = False
    if tokens[-1][0] == "word" and tokens[-1][1].lower() == "ago":
        negate = True
        tokens.pop()
        if not tokens:
            raise syntax("interval", s, "22007")
    i = 0
    while i < len(tokens):
        kind, text = tokens[i]
        nxt = tokens[i + 1] if i + 1 < len(tokens) else ("", "")
        if kind == "num":
            if nxt[0] == "word":
                unit = _IV_UNITS.get(nxt[1].lower()[:10])
                if unit is None:
                    raise syntax("interval", s, "22007")
                i += 1
            else:
                # A bare number is days before a time field, else seconds.
                unit = "day" if nxt[0] == "time" else "second"
            iv.add(Decimal(text), unit)
        elif kind == "time":
            iv.micros += _interval_time_us(text, s)
        elif kind == "ym":
            neg = text.startswith("-")
            y, mo = text.lstrip("+-").split("-")
            if int(mo) > 11:
                raise SqlError("22015", f'interval field value out of range: "{s}"')
            months = int(y) * 12 + int(mo)
            iv.months += -months if neg else months
        else:
            raise syntax("interval", s, "22007")
        i += 1
    if negate:
        iv.months, iv.days, iv.micros = -iv.months, -iv.days, -iv.micros
    return _interval_check(iv, s)


def _interval_time_us(text: str, s: str) -> int:
    neg = text.startswith("-")
    parts = text.lstrip("+-").split(":")
    if len(parts) == 2 and "." in parts[1]:
        hours, minutes, seconds = 0, int(parts[0]), Decimal(parts[1])  # mm:ss.fff
    else:
        hours, minutes = int(parts[0]), int(parts[1])
        seconds = Decimal(parts[2]) if len(parts) == 3 else Decimal(0)
    if minutes > 59 or seconds > 60:
        raise SqlError("22015", f'interval field value out of range: "{s}"')
    us = (hours * 3600 + minutes * 60) * 1_000_000 + int(
        (seconds * 1_000_000).to_integral_value(ROUND_HALF_EVEN)
    )
    return -us if neg else us


def _interval_check(iv: _Interval, s: str) -> tuple[int, int, int]:
    if not (-(2**31) <= iv.months < 2**31 and -(2**31) <= iv.days < 2**31
            and -(2**63) <= iv.micros < 2**63):
        raise SqlError("22008", "interval out of range")
    return iv.months, iv.days, iv.micros


@lru_cache(maxsize=4096)
def interval_parse_cached(s: str) -> tuple[int, int, int]:
    return interval_parse(s)


def interval_text(months: int, days: int, micros: int) -> str:
    """interval_out with IntervalStyle postgres."""
    year = abs(months) // 12 * (1 if months >= 0 else -1)
    parts: list[str] = []
    is_before = False
    for value, unit in ((year, "year"), (months - year * 12, "mon"), (days, "day")):
        if value:
            plus = "+" if is_before and value > 0 else ""
            parts.append(f"{plus}{value} {unit}{'' if value == 1 else 's'}")
            # Each nonzero field sets is_before for (only) the next one.
            is_before = value < 0
    if not parts or micros:
        sec, frac = divmod(abs(micros), 1_000_000)
        sign = "-" if micros < 0 else ("+" if is_before else "")
        text = f"{sign}{sec // 3600:02d}:{sec // 60 % 60:02d}:{sec % 60:02d}"
        if frac:
            text += f".{frac:06d}".rstrip("0")
        parts.append(text)
    return " ".join(parts)
