"""to_char(timestamp, format) as PostgreSQL 15 writes it (formatting.c's DCH patterns).

Pure. Spark's date_format speaks Java's patterns (`yyyy-MM-dd`), so a PostgreSQL format
(`YYYY-MM-DD`, `FMDay, DDth Month`) would come out as other text; the planner instead
hands the timestamp's text and the format to a Python UDF (spark_backend.string_udfs,
under UDF_NAME) that calls `to_char` here.

The format is read as PostgreSQL reads it: at each position the prefixes FM/TM, then the
longest keyword that starts there (case matters: `Month`, `MONTH` and `month` differ), then
one suffix TH/th/SP; double-quoted text is copied (a backslash in it takes the next
character literally); a backslash before a double quote outside quotes is a literal
quote; anything else is copied as it is. The session's time zone is always UTC here, so a
timestamp with time zone prints the zone as `UTC` and its offset as `+00`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache, partial

from planner.errors import FEATURE_NOT_SUPPORTED, SqlError

UDF_NAME = "sparkwire_to_char_timestamp"
# The catalog's Spark SQL, by whether the timestamp has a time zone: the UDF reads the
# timestamp's text (Spark's cast: `2026-12-06 11:21:09.5`, in UTC for one with a zone).
TEMPLATES = {zoned: f"{UDF_NAME}(cast({{0}} as string), {{1}}, {str(zoned).lower()})" for zoned in (False, True)}

_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
           "October", "November", "December")
_DAYS = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
_ROMAN = ("I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI", "XII")


@dataclass(frozen=True)
class _Moment:
    """The fields a pattern reads, from one timestamp (UTC when it has a zone)."""

    at: datetime
    zoned: bool

    @property
    def sunday_based(self) -> int:
        """0 for Sunday .. 6 for Saturday, as struct tm's tm_wday."""
        return (self.at.weekday() + 1) % 7

    @property
    def day_of_year(self) -> int:
        return self.at.timetuple().tm_yday


def _padded(value: int, width: int, fill_mode: bool) -> str:
    """printf's "%0*d": zero-padded to `width` unless FM asked for no padding."""
    return f"{value:0{0 if fill_mode else width}d}"


def _ordinal(number: str, upper: bool) -> str:
    """The TH/th suffix of a number's text: 1st, 2nd, 3rd, 11th, 12th, 13th, 21st ..."""
    last2 = number[-2:]
    if len(last2) == 2 and last2[0] == "1":
        suffix = "th"
    else:
        suffix = {"1": "st", "2": "nd", "3": "rd"}.get(number[-1:], "th")
    return number + (suffix.upper() if upper else suffix)


def _cased(name: str, keyword: str) -> str:
    """A month or day name in the keyword's case: MONTH, Month, month."""
    if keyword.isupper():
        return name.upper()
    if keyword.islower():
        return name.lower()
    return name


def _name(name: str, keyword: str, fill_mode: bool) -> str:
    # full names are left-aligned in 9 columns (the longest, September and Wednesday)
    text = _cased(name, keyword)
    return text if fill_mode else f"{text:<9}"


def _iso(m: _Moment) -> tuple[int, int, int]:
    year, week, weekday = m.at.isocalendar()
    return year, week, weekday


def _century(m: _Moment, fill_mode: bool) -> str:
    year = m.at.year
    c = (year - 1) // 100 + 1
    return _padded(c, 2, fill_mode) if c <= 99 else str(c)


def _fraction(digits: int, m: _Moment, fill_mode: bool) -> str:
    """FF1..FF6: the first digits of the fraction of a second, always all of them."""
    return f"{m.at.microsecond // 10 ** (6 - digits):0{digits}d}"


def _year_digits(year: int, digits: int, fill_mode: bool) -> str:
    return _padded(year % 10 ** digits, digits, fill_mode) if digits > 1 else f"{year % 10}"


# Numeric fields: keyword -> (the field's text, before a TH suffix).
_NUMBERS: dict[str, Callable[[_Moment, bool], str]] = {
    "HH24": lambda m, fm: _padded(m.at.hour, 2, fm),
    "HH12": lambda m, fm: _padded(m.at.hour % 12 or 12, 2, fm),
    "HH": lambda m, fm: _padded(m.at.hour % 12 or 12, 2, fm),
    "MI": lambda m, fm: _padded(m.at.minute, 2, fm),
    "SSSSS": lambda m, fm: str((m.at.hour * 60 + m.at.minute) * 60 + m.at.second),
    "SSSS": lambda m, fm: str((m.at.hour * 60 + m.at.minute) * 60 + m.at.second),
    "SS": lambda m, fm: _padded(m.at.second, 2, fm),
    "MS": lambda m, fm: f"{m.at.microsecond // 1000:03d}",
    "US": lambda m, fm: f"{m.at.microsecond:06d}",
    **{f"FF{n}": partial(_fraction, n) for n in range(1, 7)},
    "Y,YYY": lambda m, fm: f"{m.at.year // 1000},{m.at.year % 1000:03d}",
    "YYYY": lambda m, fm: _padded(m.at.year, 4, fm),
    "YYY": lambda m, fm: _year_digits(m.at.year, 3, fm),
    "YY": lambda m, fm: _year_digits(m.at.year, 2, fm),
    "Y": lambda m, fm: _year_digits(m.at.year, 1, fm),
    "IYYY": lambda m, fm: _padded(_iso(m)[0], 4, fm),
    "IYY": lambda m, fm: _year_digits(_iso(m)[0], 3, fm),
    "IY": lambda m, fm: _year_digits(_iso(m)[0], 2, fm),
    "I": lambda m, fm: _year_digits(_iso(m)[0], 1, fm),
    "CC": _century,
    "Q": lambda m, fm: str((m.at.month - 1) // 3 + 1),
    "MM": lambda m, fm: _padded(m.at.month, 2, fm),
    "DDD": lambda m, fm: _padded(m.day_of_year, 3, fm),
    "DD": lambda m, fm: _padded(m.at.day, 2, fm),
    "D": lambda m, fm: str(m.sunday_based + 1),
    "IDDD": lambda m, fm: _padded((_iso(m)[1] - 1) * 7 + _iso(m)[2], 3, fm),
    "ID": lambda m, fm: str(_iso(m)[2]),
    "WW": lambda m, fm: _padded((m.day_of_year - 1) // 7 + 1, 2, fm),
    "IW": lambda m, fm: _padded(_iso(m)[1], 2, fm),
    "W": lambda m, fm: str((m.at.day - 1) // 7 + 1),
    "J": lambda m, fm: str(m.at.toordinal() + 1721425),  # date.toordinal() counts 0001-01-01 as 1
}


def _meridiem(m: _Moment, keyword: str) -> str:
    text = ("P" if m.at.hour >= 12 else "A") + (".M." if "." in keyword else "M")
    return text.lower() if keyword.islower() else text


def _era(keyword: str) -> str:
    text = "A.D." if "." in keyword else "AD"  # years before 1 are refused on the way in
    return text.lower() if keyword.islower() else text


# Text fields: keyword -> its text (FM drops the padding of the full names).
_TEXTS: dict[str, Callable[[_Moment, str, bool], str]] = {
    **{k: lambda m, k, fm: _name(_MONTHS[m.at.month - 1], k, fm) for k in ("MONTH", "Month", "month")},
    **{k: lambda m, k, fm: _cased(_MONTHS[m.at.month - 1][:3], k) for k in ("MON", "Mon", "mon")},
    **{k: lambda m, k, fm: _name(_DAYS[m.sunday_based], k, fm) for k in ("DAY", "Day", "day")},
    **{k: lambda m, k, fm: _cased(_DAYS[m.sunday_based][:3], k) for k in ("DY", "Dy", "dy")},
    **{k: lambda m, k, fm: _meridiem(m, k) for k in ("AM", "PM", "A.M.", "P.M.", "am", "pm", "a.m.", "p.m.")},
    **{k: lambda m, k, fm: _era(k) for k in ("AD", "BC", "A.D.", "B.C.", "ad", "bc", "a.d.", "b.c.")},
    "RM": lambda m, k, fm: _ROMAN[m.at.month - 1] if fm else f"{_ROMAN[m.at.month - 1]:<4}",
    "rm": lambda m, k, fm: (_ROMAN[m.at.month - 1] if fm else f"{_ROMAN[m.at.month - 1]:<4}").lower(),
    "TZ": lambda m, k, fm: "UTC" if m.zoned else "",
    "tz": lambda m, k, fm: "utc" if m.zoned else "",
    "TZH": lambda m, k, fm: "+00",
    "TZM": lambda m, k, fm: "00",
    "OF": lambda m, k, fm: "+0" if fm else "+00",
    "FX": lambda m, k, fm: "",
}

# Keywords PostgreSQL also reads in lower case with the same meaning.
_LOWER_TOO = ("hh24", "hh12", "hh", "mi", "sssss", "ssss", "ss", "ms", "us", "ff1", "ff2", "ff3", "ff4",
              "ff5", "ff6", "y,yyy", "yyyy", "yyy", "yy", "y", "iyyy", "iyy", "iy", "i", "cc", "q", "mm",
              "ddd", "dd", "d", "iddd", "id", "ww", "iw", "w", "j", "tzh", "tzm", "of", "fx")
_KEYWORDS = (set(_NUMBERS) | set(_TEXTS) | set(_LOWER_TOO))
# By first character, longest first, so that HH24 wins over HH and DDD over DD.
_BY_FIRST: dict[str, tuple[str, ...]] = {
    c: tuple(sorted((k for k in _KEYWORDS if k[0] == c), key=len, reverse=True)) for c in {k[0] for k in _KEYWORDS}}
_PREFIXES = ("FM", "fm", "TM", "tm")
_SUFFIXES = ("TH", "th", "SP")


@dataclass(frozen=True)
class _Field:
    """One keyword of a format, with its prefix (FM or TM, upper-cased) and suffix."""

    keyword: str
    prefix: str
    suffix: str | None


def _keyword_at(fmt: str, i: int) -> str | None:
    return next((k for k in _BY_FIRST.get(fmt[i], ()) if fmt.startswith(k, i)), None)


def _field(m: _Moment, f: _Field) -> str:
    keyword = f.keyword
    numeric = _NUMBERS.get(keyword) or (_NUMBERS.get(keyword.upper()) if keyword in _LOWER_TOO else None)
    if numeric is not None:
        text = numeric(m, f.prefix == "FM")
        return _ordinal(text, f.suffix == "TH") if f.suffix in ("TH", "th") else text
    # the full names are padded unless FM or TM (translated names are never padded)
    unpadded = f.prefix == "FM" or (f.prefix == "TM" and keyword.upper() in ("MONTH", "DAY"))
    return _TEXTS.get(keyword, _TEXTS.get(keyword.upper()))(m, keyword, unpadded)  # tzh, tzm, fx: upper


@lru_cache(maxsize=256)
def _parsed(fmt: str) -> tuple[_Field | str, ...]:
    """The format as PostgreSQL reads it, once per format rather than once per row: its
    fields and its literal text."""
    out: list[_Field | str] = []
    i = 0
    while i < len(fmt):
        prefix = ""
        if fmt.startswith(_PREFIXES, i):  # one prefix; without a keyword after it, it is dropped
            prefix = fmt[i:i + 2].upper()
            i += 2
        if i >= len(fmt):
            break
        keyword = _keyword_at(fmt, i)
        if keyword is not None:
            i += len(keyword)
            suffix = next((s for s in _SUFFIXES if fmt.startswith(s, i)), None)
            if suffix is not None:
                i += len(suffix)
            out.append(_Field(keyword, prefix, suffix))
        elif fmt[i] == '"':
            i += 1
            while i < len(fmt) and fmt[i] != '"':
                if fmt[i] == "\\" and i + 1 < len(fmt):
                    i += 1
                out.append(fmt[i])
                i += 1
            i += 1  # the closing quote
        else:
            if fmt[i] == "\\" and fmt.startswith('"', i + 1):
                i += 1
            out.append(fmt[i])
            i += 1
    return tuple(out)


def format_moment(at: datetime, fmt: str, zoned: bool) -> str:
    """`fmt` filled from `at` as PostgreSQL's to_char would."""
    m = _Moment(at, zoned)
    return "".join(node if isinstance(node, str) else _field(m, node) for node in _parsed(fmt))


_SPARK_TEXT = re.compile(r"(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?")


def to_char(text: str | None, fmt: str | None, zoned: bool) -> str | None:
    """The UDF: `text` is the timestamp as Spark casts it to a string; NULL for a NULL
    argument and for an empty format, as PostgreSQL."""
    if text is None or fmt is None or fmt == "":
        return None
    parts = _SPARK_TEXT.fullmatch(text)
    if parts is None or parts.group(1) == "0000":
        raise SqlError(FEATURE_NOT_SUPPORTED, "to_char of a timestamp before year 1 or after 9999 is not supported")
    year, month, day, hour, minute, second, fraction = parts.groups()
    at = datetime(int(year), int(month), int(day), int(hour), int(minute), int(second),
                  int((fraction or "0").ljust(6, "0")))
    return format_moment(at, fmt, zoned)
