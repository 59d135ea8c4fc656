"""PostgreSQL's text output functions, one value at a time (DateStyle ISO, TimeZone UTC,
IntervalStyle postgres, extra_float_digits 1).

Pure: no I/O. See planner/codecs/__init__.py for the Python value of each type.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from collections.abc import Sequence
from decimal import (
    Decimal,
)
from typing import Any

import numpy as np

from planner import pg_numeric
from planner.codecs.base import DEC_CTX, US_PER_DAY, UTC, array_dims, element
from planner.codecs.registry import CODECS, TEXT, register, register_types
from planner.types import SqlType

_TABLE = CODECS[TEXT]  # this direction's table, for the per-value entry point below


def _pg_float_from_digits(neg: bool, digits: str, exp: int, fixed_below: int) -> str:
    """Shortest digits d1d2... times 10**exp, laid out as PostgreSQL's ryu-based
    float output does: fixed notation for -4 <= exp < fixed_below, else
    d.ddde+XX with at least two exponent digits."""
    sign = "-" if neg else ""
    digits = digits.rstrip("0")
    if not digits:
        return sign + "0"
    if -4 <= exp < fixed_below:
        if exp >= 0:
            ip = digits[: exp + 1].ljust(exp + 1, "0")
            fp = digits[exp + 1 :]
        else:
            ip = "0"
            fp = "0" * (-exp - 1) + digits
        return sign + ip + ("." + fp if fp else "")
    mant = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{sign}{mant}e{'-' if exp < 0 else '+'}{abs(exp):02d}"


def _float_special(x: float) -> str | None:
    if math.isnan(x):
        return "NaN"
    if x == math.inf:
        return "Infinity"
    if x == -math.inf:
        return "-Infinity"
    return None


def _float_text_big(x: float, below: float, above: float, fixed_below: int) -> str:
    """Shortest digits strictly inside x's rounding interval.

    PostgreSQL's Ryu never picks a decimal lying exactly on the midpoint to a
    neighbouring float, where Python's repr and numpy accept it when the
    mantissa is even. Such midpoints are short decimals only once the float's
    spacing is 2 or more, so only values this large take this slower path."""
    neg = x < 0
    if neg:
        x, below, above = -x, -above, -below
    xi, below_i = int(x), int(below)
    # Past the largest finite float the spacing is taken to continue unchanged.
    above_i = int(above) if math.isfinite(above) else 2 * xi - below_i
    # Doubled to keep the midpoints integral: the interval is (lo/2, hi/2).
    lo, hi = xi + below_i, xi + above_i
    text = str(xi)
    for k in range(1, len(text) + 1):
        q = 10 ** (len(text) - k)
        down = xi // q * q
        best = None
        for c in (down, down + q) if down != xi else (xi,):
            if lo < 2 * c < hi and (
                best is None
                or abs(c - xi) < abs(best - xi)
                or (abs(c - xi) == abs(best - xi) and c // q % 2 == 0)
            ):
                best = c
        if best is not None:
            digits = str(best)
            return _pg_float_from_digits(neg, digits, len(digits) - 1, fixed_below)
    return _pg_float_from_digits(neg, text, len(text) - 1, fixed_below)


def float8_text(x: Any) -> str:
    """A double as PostgreSQL's float8out writes it (shortest round-trip digits)."""
    x = float(x)
    special = _float_special(x)
    if special is not None:
        return special
    r = repr(x)
    if abs(x) >= 2.0**53:
        return _float_text_big(x, math.nextafter(x, -math.inf), math.nextafter(x, math.inf), 15)
    if "e" in r:
        # repr is shortest round-trip and already writes >= 2 exponent digits.
        return r
    r = r.removesuffix(".0")
    if -1e15 < x < 1e15:
        return r
    # repr stays positional up to 1e16, PostgreSQL switches at 1e15.
    neg = r.startswith("-")
    ip, _, fp = r.lstrip("-").partition(".")
    return _pg_float_from_digits(neg, ip + fp, len(ip) - 1, 15)


def to_float32(x: Any) -> np.float32:
    # Doubles beyond float32's range become infinities, as an Arrow cast does.
    with np.errstate(over="ignore"):
        return np.float32(x)


def float4_text(x: Any) -> str:
    """A real as PostgreSQL's float4out writes it."""
    f = to_float32(x)
    special = _float_special(float(f))
    if special is not None:
        return special
    if abs(f) >= 2.0**24:
        with np.errstate(over="ignore"):
            below, above = np.nextafter(f, np.float32(-np.inf)), np.nextafter(f, np.float32(np.inf))
        return _float_text_big(float(f), float(below), float(above), 6)
    # Shortest digits that round-trip as float32, not as the widened double.
    s = np.format_float_scientific(f, unique=True, trim="-")
    mant, _, e = s.partition("e")
    neg = mant.startswith("-")
    return _pg_float_from_digits(neg, mant.lstrip("-").replace(".", ""), int(e), 6)


def to_decimal(v: Any) -> Decimal:
    if isinstance(v, Decimal):
        return v
    if isinstance(v, float):
        return Decimal(repr(v)) if math.isfinite(v) else Decimal(v)
    return Decimal(v)


def numeric_text(t: SqlType, v: Any) -> str:
    if t.per_value_scale:
        # PostgreSQL's own text of the value (planner.pg_numeric), or a Decimal whose
        # exponent is its display scale: printed as it is
        return v if isinstance(v, str) else pg_numeric.text(to_decimal(v))
    d = to_decimal(v)
    if not d.is_finite():
        if d.is_nan():
            return "NaN"
        return "-Infinity" if d.is_signed() else "Infinity"
    scale = t.fixed_scale
    if scale is not None:
        s = format(d.quantize(Decimal(1).scaleb(-scale), context=DEC_CTX), "f")
    else:
        # Spark stores an unconstrained numeric as decimal(38,10); print what
        # PostgreSQL would for the value as typed, without the padding zeros.
        s = format(d, "f")
        if "." in s:
            s = s.rstrip("0").rstrip(".")
    if s.startswith("-") and not s.strip("-0."):
        s = s[1:]  # PostgreSQL numerics have no negative zero
    return s


def _time_text(v: _dt.time | _dt.datetime) -> str:
    s = f"{v.hour:02d}:{v.minute:02d}:{v.second:02d}"
    if v.microsecond:
        s += f".{v.microsecond:06d}".rstrip("0")
    return s


def naive_utc(v: _dt.datetime) -> _dt.datetime:
    if v.tzinfo is not None:
        v = v.astimezone(UTC).replace(tzinfo=None)
    return v


def _timestamp_text(v: _dt.datetime) -> str:
    v = naive_utc(v)
    return f"{v.date().isoformat()} {_time_text(v)}"


def _civil_from_days(z: int) -> tuple[int, int, int]:
    """Proleptic Gregorian (year, month, day) of days since 1970-01-01, for the
    years Python's date cannot hold (astronomical numbering: 0 is 1 BC)."""
    z += 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (m <= 2), m, d


def _date_text_days(days: int) -> tuple[str, bool]:
    """ISO text of a unix day number, and whether it is BC."""
    y, m, d = _civil_from_days(days)
    bc = y <= 0
    return f"{(1 - y) if bc else y:04d}-{m:02d}-{d:02d}", bc


def date_text_bc(days: int) -> str:
    text, bc = _date_text_days(days)
    return text + " BC" if bc else text


def timestamp_text_us(us: int, tz: bool) -> str:
    """Timestamp text from unix microseconds, for any year (BC included)."""
    days, tod = divmod(us, US_PER_DAY)
    date, bc = _date_text_days(days)
    secs, frac = divmod(tod, 1_000_000)
    s = f"{date} {secs // 3600:02d}:{secs // 60 % 60:02d}:{secs % 60:02d}"
    if frac:
        s += f".{frac:06d}".rstrip("0")
    if tz:
        s += "+00"
    return s + " BC" if bc else s


def _enc_bool(t: SqlType, v: Any) -> bytes:
    return b"t" if v else b"f"


def _enc_int(t: SqlType, v: Any) -> bytes:
    return str(int(v)).encode()


def _enc_float4(t: SqlType, v: Any) -> bytes:
    return float4_text(v).encode()


def _enc_float8(t: SqlType, v: Any) -> bytes:
    return float8_text(v).encode()


def _enc_numeric(t: SqlType, v: Any) -> bytes:
    return numeric_text(t, v).encode()


def enc_str(t: SqlType, v: Any) -> bytes:
    return v.encode() if isinstance(v, str) else bytes(v)


def enc_bpchar(t: SqlType, v: Any) -> bytes:
    # char(n) is blank-padded on output; Spark keeps it as a plain string.
    n = t.max_length
    if n is not None and len(v) < n:
        v = v.ljust(n)
    return v.encode()


def _enc_bytea(t: SqlType, v: Any) -> bytes:
    return b"\\x" + bytes(v).hex().encode()


def _enc_date(t: SqlType, v: Any) -> bytes:
    if isinstance(v, _dt.datetime):
        v = v.date()
    return v.isoformat().encode()


def _enc_time(t: SqlType, v: Any) -> bytes:
    return _time_text(v).encode()


def _enc_timestamp(t: SqlType, v: Any) -> bytes:
    return _timestamp_text(v).encode()


def _enc_timestamptz(t: SqlType, v: Any) -> bytes:
    return (_timestamp_text(v) + "+00").encode()


# array_out quotes elements that are empty, spell NULL, or hold any of these.
_ARRAY_QUOTE_RE = re.compile(r'[{},"\\ \t\n\r\f\v]')


def _array_text(t: SqlType, values: Sequence[Any]) -> str:
    et = element(t)
    enc = CODECS[TEXT][t.base.oid].encode

    def level(vals: Sequence[Any]) -> str:
        parts = []
        for v in vals:
            if v is None:
                parts.append("NULL")
            elif isinstance(v, (list, tuple)):
                parts.append(level(v))
            else:
                s = enc(et, v).decode()
                if not s or _ARRAY_QUOTE_RE.search(s) or s.lower() == "null":
                    s = '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
                parts.append(s)
        return "{" + ",".join(parts) + "}"

    array_dims(values)  # reject ragged input as PostgreSQL would
    return level(values)


def _enc_array(t: SqlType, values: Sequence[Any]) -> bytes:
    return _array_text(t, values).encode()


register_types(TEXT, array=_enc_array, encode={
    "boolean": _enc_bool,
    "smallint": _enc_int,
    "integer": _enc_int,
    "bigint": _enc_int,
    "oid": _enc_int,
    "real": _enc_float4,
    "double precision": _enc_float8,
    "numeric": _enc_numeric,
    "text": enc_str,
    "character varying": enc_str,
    "character": enc_bpchar,
    "name": enc_str,
    "char": enc_str,
    "json": enc_str,
    "jsonb": enc_str,
    "uuid": enc_str,
    "interval": enc_str,
    "bytea": _enc_bytea,
    "date": _enc_date,
    "time without time zone": _enc_time,
    "timestamp without time zone": _enc_timestamp,
    "timestamp with time zone": _enc_timestamptz,
})


# A row value arrives as record_out's text (planner.sql.spark_records); it has no binary form here.
register("record", TEXT, encode=enc_str)


def encode_text(t: SqlType, value: Any) -> bytes:
    """PostgreSQL text output of one non-NULL value of type `t` (resolve `codec(t.oid, TEXT)`
    once instead where one type has many values)."""
    return _TABLE[t.base.array_oid if t.is_array else t.base.oid].encode(t, value)
