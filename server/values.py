"""PostgreSQL wire forms of values: result encoding and Bind parameter parsing.

Query results arrive from Spark as Arrow; this module produces the exact bytes
PostgreSQL 15's output/send functions would (DateStyle ISO, TimeZone UTC,
IntervalStyle postgres, extra_float_digits 1), and parses client parameters as
the matching input/recv functions do, raising the SQLSTATE PostgreSQL raises.

The Python value of each type, as Arrow's ``to_pylist`` yields it and as the
decoders return it:

- boolean ``bool``; smallint, integer, bigint, oid ``int``; real, double ``float``
- numeric ``Decimal``; bytea ``bytes``
- text, varchar, character, name, "char", json, jsonb, uuid, interval ``str``
  (uuid, interval and jsonb in PostgreSQL's canonical text form)
- date ``date``; time ``time``; timestamp naive ``datetime``; timestamptz aware
  UTC ``datetime``
- arrays ``list`` (nested lists for more than one dimension, None for NULL)

Pure: no I/O.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
import struct
from collections.abc import Callable, Sequence
from decimal import (
    MAX_EMAX,
    MIN_EMIN,
    ROUND_DOWN,
    ROUND_HALF_EVEN,
    ROUND_HALF_UP,
    Context,
    Decimal,
    InvalidOperation,
)
from functools import lru_cache
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from planner import jsonb
from planner.encoding import decode_utf8 as _utf8
from planner.errors import SqlError
from planner.types import BY_OID, SqlType

__all__ = [
    "decode_binary",
    "decode_text",
    "encode_binary",
    "encode_binary_arrow",
    "encode_binary_column",
    "encode_rows",
    "encode_text",
    "encode_text_arrow",
    "encode_text_column",
]

Column = Sequence["bytes | None"] | pa.Array | pa.ChunkedArray

_UTC = _dt.UTC
_PG_EPOCH_DATE = _dt.date(2000, 1, 1)
_PG_EPOCH = _dt.datetime(2000, 1, 1)
_PG_EPOCH_UTC = _dt.datetime(2000, 1, 1, tzinfo=_UTC)
_UNIX_TO_PG_DAYS = 10957
_UNIX_TO_PG_US = _UNIX_TO_PG_DAYS * 86_400_000_000
_US_PER_DAY = 86_400_000_000

# Only ASCII whitespace counts, as with C's isspace() in PostgreSQL's parsers.
_WS = " \t\n\r\f\v"

# Decimal's default context (28 digits) would round or refuse wide numerics.
_DEC_CTX = Context(prec=2000, rounding=ROUND_HALF_UP, Emax=MAX_EMAX, Emin=MIN_EMIN)

_INT_RANGES = {
    "smallint": (-(2**15), 2**15 - 1),
    "integer": (-(2**31), 2**31 - 1),
    "bigint": (-(2**63), 2**63 - 1),
}
_STRING_TYPES = frozenset(
    ("text", "character varying", "character", "name", "char", "json", "jsonb", "uuid", "interval")
)

_pack_i16 = struct.Struct(">h").pack
_pack_i32 = struct.Struct(">i").pack
_pack_i64 = struct.Struct(">q").pack
_pack_u32 = struct.Struct(">I").pack
_pack_f32 = struct.Struct(">f").pack
_pack_f64 = struct.Struct(">d").pack
_pack_interval = struct.Struct(">qii").pack


def _syntax(type_name: str, s: str, code: str = "22P02") -> SqlError:
    return SqlError(code, f'invalid input syntax for type {type_name}: "{s}"')


def _element(t: SqlType) -> SqlType:
    return SqlType(t.base, t.typmod)


# --------------------------------------------------------------------------
# Text output, one value
# --------------------------------------------------------------------------


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


def _float8_text(x: Any) -> str:
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


def _to_float32(x: Any) -> np.float32:
    # Doubles beyond float32's range become infinities, as an Arrow cast does.
    with np.errstate(over="ignore"):
        return np.float32(x)


def _float4_text(x: Any) -> str:
    f = _to_float32(x)
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


def _to_decimal(v: Any) -> Decimal:
    if isinstance(v, Decimal):
        return v
    if isinstance(v, float):
        return Decimal(repr(v)) if math.isfinite(v) else Decimal(v)
    return Decimal(v)


def _numeric_text(t: SqlType, v: Any) -> str:
    d = _to_decimal(v)
    if not d.is_finite():
        if d.is_nan():
            return "NaN"
        return "-Infinity" if d.is_signed() else "Infinity"
    ps = t.precision_scale
    if ps is not None:
        s = format(d.quantize(Decimal(1).scaleb(-ps[1]), context=_DEC_CTX), "f")
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


def _naive_utc(v: _dt.datetime) -> _dt.datetime:
    if v.tzinfo is not None:
        v = v.astimezone(_UTC).replace(tzinfo=None)
    return v


def _timestamp_text(v: _dt.datetime) -> str:
    v = _naive_utc(v)
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


def _date_text_bc(days: int) -> str:
    text, bc = _date_text_days(days)
    return text + " BC" if bc else text


def _timestamp_text_us(us: int, tz: bool) -> str:
    """Timestamp text from unix microseconds, for any year (BC included)."""
    days, tod = divmod(us, _US_PER_DAY)
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
    return _float4_text(v).encode()


def _enc_float8(t: SqlType, v: Any) -> bytes:
    return _float8_text(v).encode()


def _enc_numeric(t: SqlType, v: Any) -> bytes:
    return _numeric_text(t, v).encode()


def _enc_str(t: SqlType, v: Any) -> bytes:
    return v.encode() if isinstance(v, str) else bytes(v)


def _enc_bpchar(t: SqlType, v: Any) -> bytes:
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


_TEXT_ENCODERS: dict[str, Callable[[SqlType, Any], bytes]] = {
    "boolean": _enc_bool,
    "smallint": _enc_int,
    "integer": _enc_int,
    "bigint": _enc_int,
    "oid": _enc_int,
    "real": _enc_float4,
    "double precision": _enc_float8,
    "numeric": _enc_numeric,
    "text": _enc_str,
    "character varying": _enc_str,
    "character": _enc_bpchar,
    "name": _enc_str,
    "char": _enc_str,
    "json": _enc_str,
    "jsonb": _enc_str,
    "uuid": _enc_str,
    "interval": _enc_str,
    "bytea": _enc_bytea,
    "date": _enc_date,
    "time without time zone": _enc_time,
    "timestamp without time zone": _enc_timestamp,
    "timestamp with time zone": _enc_timestamptz,
}

# array_out quotes elements that are empty, spell NULL, or hold any of these.
_ARRAY_QUOTE_RE = re.compile(r'[{},"\\ \t\n\r\f\v]')


def _array_text(t: SqlType, values: Sequence[Any]) -> str:
    et = _element(t)
    enc = _TEXT_ENCODERS[t.base.name]

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

    _array_dims(values)  # reject ragged input as PostgreSQL would
    return level(values)


def encode_text(t: SqlType, value: Any) -> bytes:
    """PostgreSQL text output of one non-NULL value of type `t`."""
    if t.is_array:
        return _array_text(t, value).encode()
    return _TEXT_ENCODERS[t.base.name](t, value)


# --------------------------------------------------------------------------
# Binary output, one value
# --------------------------------------------------------------------------

_NUMERIC_POS = 0x0000
_NUMERIC_NEG = 0x4000
_NUMERIC_NAN = 0xC000
_NUMERIC_PINF = 0xD000
_NUMERIC_NINF = 0xF000


def _numeric_binary(t: SqlType, v: Any) -> bytes:
    d = _to_decimal(v)
    if d.is_nan():
        return struct.pack(">hhHh", 0, 0, _NUMERIC_NAN, 0)
    if d.is_infinite():
        # numeric_send reads dscale out of the special value's header bits,
        # which gives 32 for both infinities.
        return struct.pack(">hhHh", 0, 0, _NUMERIC_NINF if d.is_signed() else _NUMERIC_PINF, 32)
    # Built from the text form so both formats carry the same digits and scale.
    s = _numeric_text(t, d)
    neg = s.startswith("-")
    ip, _, fp = s.lstrip("-").partition(".")
    dscale = len(fp)
    ip = ip.lstrip("0")
    ip = "0" * (-len(ip) % 4) + ip
    all_digits = ip + fp + "0" * (-len(fp) % 4)
    groups = [int(all_digits[i : i + 4]) for i in range(0, len(all_digits), 4)]
    weight = len(ip) // 4 - 1
    start = 0
    while start < len(groups) and groups[start] == 0:
        start += 1
    weight -= start
    end = len(groups)
    while end > start and groups[end - 1] == 0:
        end -= 1
    groups = groups[start:end]
    if not groups:
        weight, neg = 0, False
    sign = _NUMERIC_NEG if neg else _NUMERIC_POS
    return struct.pack(f">hhHh{len(groups)}H", len(groups), weight, sign, dscale, *groups)


def _bin_bool(t: SqlType, v: Any) -> bytes:
    return b"\x01" if v else b"\x00"


def _bin_date(t: SqlType, v: Any) -> bytes:
    if isinstance(v, _dt.datetime):
        v = v.date()
    return _pack_i32((v - _PG_EPOCH_DATE).days)


def _time_us(v: _dt.time) -> int:
    return ((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000 + v.microsecond


def _delta_us(d: _dt.timedelta) -> int:
    return (d.days * 86400 + d.seconds) * 1_000_000 + d.microseconds


def _bin_timestamp(t: SqlType, v: Any) -> bytes:
    return _pack_i64(_delta_us(_naive_utc(v) - _PG_EPOCH))


def _bin_timestamptz(t: SqlType, v: Any) -> bytes:
    base = _PG_EPOCH if v.tzinfo is None else _PG_EPOCH_UTC
    return _pack_i64(_delta_us(v - base))


def _bin_uuid(t: SqlType, v: Any) -> bytes:
    if len(v) == 36 and v[8] == v[13] == v[18] == v[23] == "-":
        try:
            b = bytes.fromhex(v.replace("-", ""))
        except ValueError:
            b = b""
        if len(b) == 16:
            return b
    return bytes.fromhex(_uuid_canonical(v).replace("-", ""))


def _bin_interval(t: SqlType, v: Any) -> bytes:
    months, days, micros = _interval_parse_cached(v)
    return _pack_interval(micros, days, months)


_BINARY_ENCODERS: dict[str, Callable[[SqlType, Any], bytes]] = {
    "boolean": _bin_bool,
    "smallint": lambda t, v: _pack_i16(v),
    "integer": lambda t, v: _pack_i32(v),
    "bigint": lambda t, v: _pack_i64(v),
    "oid": lambda t, v: _pack_u32(v),
    "real": lambda t, v: _pack_f32(float(_to_float32(v))),
    "double precision": lambda t, v: _pack_f64(v),
    "numeric": _numeric_binary,
    "text": _enc_str,
    "character varying": _enc_str,
    "character": _enc_bpchar,
    "name": _enc_str,
    "char": _enc_str,
    "json": _enc_str,
    "jsonb": lambda t, v: b"\x01" + v.encode(),
    "uuid": _bin_uuid,
    "interval": _bin_interval,
    "bytea": lambda t, v: bytes(v),
    "date": _bin_date,
    "time without time zone": lambda t, v: _pack_i64(_time_us(v)),
    "timestamp without time zone": _bin_timestamp,
    "timestamp with time zone": _bin_timestamptz,
}


def _array_dims(values: Sequence[Any]) -> list[int]:
    """Dimensions of a (possibly nested) list, checking it is rectangular."""
    dims = [len(values)]
    probe: Any = values
    while probe and isinstance(probe[0], (list, tuple)):
        probe = probe[0]
        dims.append(len(probe))
    if len(dims) > 1 and 0 in dims:
        raise SqlError("22P02", "malformed array literal", detail="Multidimensional arrays must have "
                       "sub-arrays with matching dimensions.")

    def check(vals: Sequence[Any], depth: int) -> None:
        if len(vals) != dims[depth]:
            raise SqlError("2202E", "multidimensional arrays must have array expressions "
                           "with matching dimensions")
        for v in vals:
            if depth + 1 < len(dims):
                if not isinstance(v, (list, tuple)):
                    raise SqlError("2202E", "multidimensional arrays must have array "
                                   "expressions with matching dimensions")
                check(v, depth + 1)
            elif isinstance(v, (list, tuple)):
                raise SqlError("2202E", "multidimensional arrays must have array expressions "
                               "with matching dimensions")

    if len(dims) > 1:
        check(values, 0)
    return dims


def _array_binary(t: SqlType, values: Sequence[Any]) -> bytes:
    et = _element(t)
    enc = _BINARY_ENCODERS[t.base.name]
    dims = _array_dims(values)
    if dims == [0]:
        return struct.pack(">iiI", 0, 0, t.base.oid)
    flat: list[Any] = list(values)
    for _ in dims[1:]:
        flat = [x for sub in flat for x in sub]
    parts = []
    has_null = 0
    for v in flat:
        if v is None:
            has_null = 1
            parts.append(b"\xff\xff\xff\xff")
        else:
            b = enc(et, v)
            parts.append(_pack_i32(len(b)))
            parts.append(b)
    head = struct.pack(">iiI", len(dims), has_null, t.base.oid)
    head += b"".join(struct.pack(">ii", d, 1) for d in dims)
    return head + b"".join(parts)


def encode_binary(t: SqlType, value: Any) -> bytes:
    """PostgreSQL binary (send) form of one non-NULL value of type `t`."""
    if t.is_array:
        return _array_binary(t, value)
    return _BINARY_ENCODERS[t.base.name](t, value)


# --------------------------------------------------------------------------
# Intervals: PostgreSQL input syntax -> (months, days, microseconds) -> text
# --------------------------------------------------------------------------

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
        self.add_us((f - whole) * _US_PER_DAY)

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
            self.add_us(frac * _US_PER_DAY)
        else:
            scale = _IV_US[unit]
            self.micros += whole * scale
            self.add_us(frac * scale)


def _interval_parse(s: str) -> tuple[int, int, int]:
    """PostgreSQL interval input (postgres and ISO 8601 styles, SQL year-month,
    "ago") to (months, days, microseconds)."""
    iv = _Interval()
    body = s.strip(_WS)
    body = body.removeprefix("@")
    m = _IV_ISO_RE.fullmatch(body.strip(_WS))
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
            raise _syntax("interval", s, "22007")
        pos = tm.end()
        if tm.lastgroup != "ws":
            tokens.append((tm.lastgroup or "", tm.group()))
    if not tokens:
        raise _syntax("interval", s, "22007")
    negate = False
    if tokens[-1][0] == "word" and tokens[-1][1].lower() == "ago":
        negate = True
        tokens.pop()
        if not tokens:
            raise _syntax("interval", s, "22007")
    i = 0
    while i < len(tokens):
        kind, text = tokens[i]
        nxt = tokens[i + 1] if i + 1 < len(tokens) else ("", "")
        if kind == "num":
            if nxt[0] == "word":
                unit = _IV_UNITS.get(nxt[1].lower()[:10])
                if unit is None:
                    raise _syntax("interval", s, "22007")
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
            raise _syntax("interval", s, "22007")
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
def _interval_parse_cached(s: str) -> tuple[int, int, int]:
    return _interval_parse(s)


def _interval_text(months: int, days: int, micros: int) -> str:
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


# --------------------------------------------------------------------------
# Text input (Bind parameters in text format)
# --------------------------------------------------------------------------


_INT_RE = re.compile(r"[ \t\n\r\f\v]*[+-]?[0-9]+[ \t\n\r\f\v]*", re.ASCII)


def _dec_int(t: SqlType, data: bytes) -> int:
    s = _utf8(data)
    name = t.base.name
    if not _INT_RE.fullmatch(s):
        raise _syntax(name, s)
    v = int(s)
    if name == "oid":
        # oidin accepts what strtoul accepts and wraps negatives into uint32.
        if not -(2**31) <= v < 2**32:
            raise SqlError("22003", f'value "{s}" is out of range for type oid')
        return v & 0xFFFFFFFF
    lo, hi = _INT_RANGES[name]
    if not lo <= v <= hi:
        raise SqlError("22003", f'value "{s}" is out of range for type {name}')
    return v


def _dec_bool(t: SqlType, data: bytes) -> bool:
    s = _utf8(data)
    v = s.strip(_WS).lower()
    if v:
        c = v[0]
        if (c == "t" and "true".startswith(v)) or (c == "y" and "yes".startswith(v)):
            return True
        if (c == "f" and "false".startswith(v)) or (c == "n" and "no".startswith(v)):
            return False
        if v == "on" or v == "1":
            return True
        if v in ("of", "off", "0"):
            return False
    raise _syntax("boolean", s)


_FLOAT_RE = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)
_HEX_FLOAT_RE = re.compile(
    r"[+-]?0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?[0-9]+)?", re.ASCII
)
_FLOAT_SPECIAL = {
    "nan": math.nan,
    "infinity": math.inf,
    "+infinity": math.inf,
    "-infinity": -math.inf,
    "inf": math.inf,
    "+inf": math.inf,
    "-inf": -math.inf,
}


def _dec_float(t: SqlType, data: bytes) -> float:
    s = _utf8(data)
    name = t.base.name
    v = s.strip(_WS)
    special = _FLOAT_SPECIAL.get(v.lower())
    if special is not None:
        return special
    if _FLOAT_RE.fullmatch(v):
        x = float(v)
        mantissa = v.partition("e")[0].partition("E")[0]
        nonzero = mantissa.strip("+-0.") != ""
    elif _HEX_FLOAT_RE.fullmatch(v):
        # strtod() reads C99 hex floats too.
        try:
            x = float.fromhex(v)
        except OverflowError:
            x = math.inf
        nonzero = v.lstrip("+-")[2:].lower().partition("p")[0].strip("0.") != ""
    else:
        raise _syntax(name, s)
    if name == "real":
        with np.errstate(over="ignore", under="ignore"):
            x32 = float(np.float32(x))
        out_of_range = math.isinf(x32) or (x32 == 0 and nonzero)
        x = x32
    else:
        out_of_range = math.isinf(x) or (x == 0 and nonzero)
    if out_of_range:
        raise SqlError("22003", f'"{s}" is out of range for type {name}')
    return x


_NUMERIC_RE = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)


def _dec_numeric(t: SqlType, data: bytes) -> Decimal:
    s = _utf8(data)
    v = s.strip(_WS)
    low = v.lower()
    if low == "nan":
        d = Decimal("NaN")
    elif low in ("infinity", "+infinity", "inf", "+inf"):
        d = Decimal("Infinity")
    elif low in ("-infinity", "-inf"):
        d = Decimal("-Infinity")
    else:
        if not _NUMERIC_RE.fullmatch(v):
            raise _syntax("numeric", s)
        d = Decimal(v)
        # PostgreSQL's numeric holds at most 131072 integer digits and a
        # display scale of 16383.
        if not d.is_zero() and d.adjusted() >= 131072 or -d.as_tuple().exponent > 16383:
            raise SqlError("22003", "value overflows numeric format")
    return _numeric_typmod(t, d)


def _numeric_typmod(t: SqlType, d: Decimal) -> Decimal:
    """apply_typmod: round to the declared scale, check the precision."""
    if d.is_zero():
        d = d.copy_abs()
    ps = t.precision_scale
    if ps is None or d.is_nan():
        return d
    p, s = ps
    if d.is_infinite():
        raise SqlError("22003", "numeric field overflow",
                       detail=f"A field with precision {p}, scale {s} cannot hold an infinite value.")
    try:
        q = d.quantize(Decimal(1).scaleb(-s), context=_DEC_CTX)
    except InvalidOperation:
        q = None
    if q is None or (not q.is_zero() and q.adjusted() >= p - s):
        limit = f"10^{p - s}" if p > s else "1"
        raise SqlError("22003", "numeric field overflow",
                       detail=f"A field with precision {p}, scale {s} must round to an "
                              f"absolute value less than {limit}.")
    return q.copy_abs() if q.is_zero() else q


def _check_length(t: SqlType, s: str) -> str:
    """varchar(n)/char(n) input: excess spaces are cut, anything else fails."""
    n = t.max_length
    if n is None or len(s) <= n:
        return s
    if s[n:].strip(" "):
        raise SqlError("22001", f"value too long for type {t.display()}")
    return s[:n]


def _dec_text(t: SqlType, data: bytes) -> str:
    return _utf8(data)


def _dec_varchar(t: SqlType, data: bytes) -> str:
    return _check_length(t, _utf8(data))


def _dec_bpchar(t: SqlType, data: bytes) -> str:
    s = _check_length(t, _utf8(data))
    n = t.max_length
    return s.ljust(n) if n is not None else s


def _dec_name(t: SqlType, data: bytes) -> str:
    s = _utf8(data)
    b = s.encode()
    if len(b) <= 63:
        return s
    # NAMEDATALEN-1 bytes, without splitting a character.
    return b[:63].decode("utf-8", errors="ignore")


_OCTAL_CHAR_RE = re.compile(r"\\[0-7]{3}")


def _dec_char(t: SqlType, data: bytes) -> str:
    s = _utf8(data)
    if _OCTAL_CHAR_RE.fullmatch(s):
        return chr(int(s[1:], 8) & 0xFF)
    return s[:1]


_UUID_RE = re.compile(r"(\{)?((?:[0-9a-fA-F]{4}-?){7}[0-9a-fA-F]{4})(?(1)\})", re.ASCII)


def _uuid_canonical(s: str) -> str:
    m = _UUID_RE.fullmatch(s)
    if not m:
        raise _syntax("uuid", s)
    h = m.group(2).replace("-", "").lower()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _dec_uuid(t: SqlType, data: bytes) -> str:
    return _uuid_canonical(_utf8(data))


def _dec_interval(t: SqlType, data: bytes) -> str:
    return _interval_text(*_interval_parse(_utf8(data)))


def _dec_json(t: SqlType, data: bytes) -> str:
    s = _utf8(data)
    jsonb.parse_json(s)  # json keeps the text as given; only its syntax is checked
    return s


jsonb_input = jsonb.jsonb_input


def _dec_jsonb(t: SqlType, data: bytes) -> str:
    return jsonb_input(data)


def _dec_bytea(t: SqlType, data: bytes) -> bytes:
    data = bytes(data)
    _utf8(data)  # text parameters are validated in the client encoding first
    if data[:2] == b"\\x":
        return _bytea_hex(data[2:])
    if b"\\" not in data:
        return data
    out = bytearray()
    i, n = 0, len(data)
    while i < n:
        c = data[i]
        if c != 0x5C:
            out.append(c)
            i += 1
        elif data[i + 1 : i + 2] == b"\\":
            out.append(0x5C)
            i += 2
        elif (i + 3 < n and data[i + 1] in b"0123" and data[i + 2] in b"01234567"
              and data[i + 3] in b"01234567"):
            out.append(int(data[i + 1 : i + 4], 8))
            i += 4
        else:
            raise SqlError("22P02", "invalid input syntax for type bytea")
    return bytes(out)


_HEX_DIGITS = frozenset(b"0123456789abcdefABCDEF")


# hex_decode allows whitespace between digit pairs only.
_HEX_BODY_RE = re.compile(rb"(?:[ \t\n\r]*[0-9a-fA-F]{2})*[ \t\n\r]*")


def _bytea_hex(body: bytes) -> bytes:
    if _HEX_BODY_RE.fullmatch(body):
        return bytes.fromhex(body.translate(None, b" \t\n\r").decode("ascii"))
    # Invalid: walk it as hex_decode does to report the same error.
    out = bytearray()
    i, n = 0, len(body)
    while i < n:
        c = body[i]
        if c in b" \t\n\r":
            i += 1
            continue
        if c not in _HEX_DIGITS:
            ch = body[i : i + 1].decode("utf-8", "replace")
            if c >= 0x80:
                ch = body[i:].decode("utf-8", "replace")[:1]
            raise SqlError("22023", f'invalid hexadecimal digit: "{ch}"')
        if i + 1 >= n:
            raise SqlError("22023", "invalid hexadecimal data: odd number of digits")
        c2 = body[i + 1]
        if c2 not in _HEX_DIGITS:
            ch = body[i + 1 :].decode("utf-8", "replace")[:1]
            raise SqlError("22023", f'invalid hexadecimal digit: "{ch}"')
        out.append(int(body[i : i + 2], 16))
        i += 2
    return bytes(out)


_DATE_PART = (
    r"(?:(?P<y>[0-9]{4,})-(?P<mo>[0-9]{1,2})-(?P<d>[0-9]{1,2})"
    r"|(?P<mo2>[0-9]{1,2})/(?P<d2>[0-9]{1,2})/(?P<y2>[0-9]{4,}))"
)
_TIME_PART = r"(?P<h>[0-9]{1,2}):(?P<mi>[0-9]{1,2})(?::(?P<s>[0-9]{1,2})(?:\.(?P<f>[0-9]*))?)?"
_TZ_PART = r"(?P<tz>Z|UTC|GMT|[+-][0-9]{1,2}(?::?[0-9]{2}(?::?[0-9]{2})?)?)"
_TS_RE = re.compile(
    rf"[ \t\n\r\f\v]*{_DATE_PART}(?:(?:T|[ \t\n\r\f\v]+){_TIME_PART})?"
    rf"[ \t\n\r\f\v]*{_TZ_PART}?(?:[ \t\n\r\f\v]+(?P<era>AD|BC))?[ \t\n\r\f\v]*",
    re.ASCII | re.IGNORECASE,
)
_TIME_RE = re.compile(
    rf"[ \t\n\r\f\v]*(?:{_DATE_PART}(?:T|[ \t\n\r\f\v]+))?{_TIME_PART}"
    rf"[ \t\n\r\f\v]*{_TZ_PART}?[ \t\n\r\f\v]*",
    re.ASCII | re.IGNORECASE,
)


def _frac_us(f: str | None) -> int:
    if not f:
        return 0
    if len(f) <= 6:
        return int(f.ljust(6, "0"))
    return int(Decimal("0." + f).scaleb(6).to_integral_value(ROUND_HALF_EVEN))


def _tz_seconds(tz: str | None, s: str) -> int | None:
    if tz is None:
        return None
    if tz.upper() in ("Z", "UTC", "GMT"):
        return 0
    digits = tz[1:].replace(":", "")
    if len(digits) <= 2:
        h, m, sec = int(digits), 0, 0
    else:
        h = int(digits[:-2] if len(digits) <= 4 else digits[:-4])
        m = int(digits[-2:] if len(digits) <= 4 else digits[-4:-2])
        sec = int(digits[-2:]) if len(digits) > 4 else 0
    if h > 15 or m > 59 or sec > 59:
        raise SqlError("22009", f'time zone displacement out of range: "{s}"')
    off = (h * 60 + m) * 60 + sec
    return -off if tz[0] == "-" else off


def _parse_timestamp(s: str, type_name: str) -> tuple[_dt.datetime, int | None]:
    """(wall-clock datetime, UTC offset in seconds or None) of timestamp text."""
    low = s.strip(_WS).lower()
    if low == "epoch":
        return _dt.datetime(1970, 1, 1), 0
    if low in ("infinity", "-infinity", "+infinity"):
        raise SqlError("0A000", f"infinite {type_name} values are not supported")
    m = _TS_RE.fullmatch(s)
    if not m:
        raise _syntax(type_name, s, "22007")
    g = m.groupdict()
    if g["y"] is not None:
        y, mo, d = int(g["y"]), int(g["mo"]), int(g["d"])
    else:
        y, mo, d = int(g["y2"]), int(g["mo2"]), int(g["d2"])
    out_of_range = "date" if type_name == "date" else "timestamp"
    if g["era"] is not None and g["era"].upper() == "BC":
        if y == 0:
            raise SqlError("22008", f'date/time field value out of range: "{s}"')
        # Python dates start at year 1 AD.
        raise SqlError("22008", f'{out_of_range} out of range: "{s}"')
    if y == 0 and g["era"] is None:
        raise SqlError("22008", f'date/time field value out of range: "{s}"')
    if y > 9999:
        raise SqlError("22008", f'{out_of_range} out of range: "{s}"')
    try:
        base = _dt.datetime(y, mo, d)
    except ValueError:
        raise SqlError("22008", f'date/time field value out of range: "{s}"') from None
    h = mi = sec = us = 0
    if g["h"] is not None:
        h, mi = int(g["h"]), int(g["mi"])
        sec = int(g["s"] or 0)
        us = _frac_us(g["f"])
        if h > 24 or mi > 59 or sec > 60 or (h == 24 and (mi or sec or us)):
            raise SqlError("22008", f'date/time field value out of range: "{s}"')
    try:
        # 24:00:00 and leap second 60 roll over, as PostgreSQL does.
        wall = base + _dt.timedelta(hours=h, minutes=mi, seconds=sec, microseconds=us)
    except OverflowError:
        raise SqlError("22008", f'{out_of_range} out of range: "{s}"') from None
    return wall, _tz_seconds(g["tz"], s)


def _dec_date(t: SqlType, data: bytes) -> _dt.date:
    s = _utf8(data)
    m = _TS_RE.fullmatch(s)
    wall, _ = _parse_timestamp(s, "date")
    if m and m.group("h") is not None:
        # date_in ignores any time of day given with the date.
        g = m.groupdict()
        return _dt.date(int(g["y"] or g["y2"]), int(g["mo"] or g["mo2"]), int(g["d"] or g["d2"]))
    return wall.date()


def _dec_timestamp(t: SqlType, data: bytes) -> _dt.datetime:
    # timestamp without time zone silently ignores a given zone, like PostgreSQL.
    return _parse_timestamp(_utf8(data), "timestamp")[0]


def _dec_timestamptz(t: SqlType, data: bytes) -> _dt.datetime:
    s = _utf8(data)
    wall, off = _parse_timestamp(s, "timestamp with time zone")
    try:
        utc = wall - _dt.timedelta(seconds=off or 0)
    except OverflowError:
        raise SqlError("22008", f'timestamp out of range: "{s}"') from None
    return utc.replace(tzinfo=_UTC)


def _dec_time(t: SqlType, data: bytes) -> _dt.time:
    s = _utf8(data)
    if s.strip(_WS).lower() == "allballs":
        return _dt.time(0)
    m = _TIME_RE.fullmatch(s)
    if not m:
        raise _syntax("time", s, "22007")
    h, mi = int(m.group("h")), int(m.group("mi"))
    sec = int(m.group("s") or 0)
    us = _frac_us(m.group("f"))
    total = ((h * 60 + mi) * 60 + sec) * 1_000_000 + us
    # Python's time cannot hold 24:00:00, which PostgreSQL allows.
    if mi > 59 or sec > 60 or total >= _US_PER_DAY:
        raise SqlError("22008", f'date/time field value out of range: "{s}"')
    secs, us = divmod(total, 1_000_000)
    return _dt.time(secs // 3600, secs // 60 % 60, secs % 60, us)


_TEXT_DECODERS: dict[str, Callable[[SqlType, bytes], Any]] = {
    "boolean": _dec_bool,
    "smallint": _dec_int,
    "integer": _dec_int,
    "bigint": _dec_int,
    "oid": _dec_int,
    "real": _dec_float,
    "double precision": _dec_float,
    "numeric": _dec_numeric,
    "text": _dec_text,
    "character varying": _dec_varchar,
    "character": _dec_bpchar,
    "name": _dec_name,
    "char": _dec_char,
    "json": _dec_json,
    "jsonb": _dec_jsonb,
    "uuid": _dec_uuid,
    "interval": _dec_interval,
    "bytea": _dec_bytea,
    "date": _dec_date,
    "time without time zone": _dec_time,
    "timestamp without time zone": _dec_timestamp,
    "timestamp with time zone": _dec_timestamptz,
}


def _malformed_array(s: str, detail: str) -> SqlError:
    return SqlError("22P02", f'malformed array literal: "{s}"', detail=detail)


def _parse_array_text(t: SqlType, s: str) -> list[Any]:
    """array_in for one- or more-dimensional arrays with lower bound 1."""
    et = _element(t)
    dec = _TEXT_DECODERS[t.base.name]
    n = len(s)

    def skip_ws(i: int) -> int:
        while i < n and s[i] in _WS:
            i += 1
        return i

    def level(i: int) -> tuple[list[Any], int]:
        # s[i] is "{"; returns the elements and the index after the "}".
        items: list[Any] = []
        i = skip_ws(i + 1)
        if i < n and s[i] == "}":
            return items, i + 1
        while True:
            i = skip_ws(i)
            if i >= n:
                raise _malformed_array(s, "Unexpected end of input.")
            c = s[i]
            if c == "{":
                sub, i = level(i)
                items.append(sub)
            elif c == '"':
                buf = []
                i += 1
                while True:
                    if i >= n:
                        raise _malformed_array(s, "Unexpected end of input.")
                    c = s[i]
                    if c == "\\":
                        if i + 1 >= n:
                            raise _malformed_array(s, "Unexpected end of input.")
                        buf.append(s[i + 1])
                        i += 2
                    elif c == '"':
                        i += 1
                        break
                    else:
                        buf.append(c)
                        i += 1
                items.append(dec(et, "".join(buf).encode()))
            elif c in ",}":
                raise _malformed_array(s, f'Unexpected "{c}" character.')
            else:
                buf = []
                escaped = False
                keep = 0  # length of buf up to the last escaped or non-space char
                while i < n and s[i] not in ",}":
                    c = s[i]
                    if c in '{"':
                        raise _malformed_array(s, f'Unexpected "{c}" character.')
                    if c == "\\":
                        if i + 1 >= n:
                            raise _malformed_array(s, "Unexpected end of input.")
                        buf.append(s[i + 1])
                        escaped = True
                        keep = len(buf)
                        i += 2
                        continue
                    buf.append(c)
                    if c not in _WS:
                        keep = len(buf)
                    i += 1
                raw = "".join(buf[:keep])
                if not escaped and raw.lower() == "null":
                    items.append(None)
                else:
                    items.append(dec(et, raw.encode()))
            i = skip_ws(i)
            if i >= n:
                raise _malformed_array(s, "Unexpected end of input.")
            if s[i] == ",":
                i += 1
                continue
            if s[i] == "}":
                return items, i + 1
            raise _malformed_array(s, f'Unexpected "{s[i]}" character.')

    i = skip_ws(0)
    if i >= n or s[i] != "{":
        raise _malformed_array(s, 'Array value must start with "{" or dimension information.')
    value, i = level(i)
    if skip_ws(i) != n:
        raise _malformed_array(s, "Junk after closing right brace.")
    if any(isinstance(v, list) for v in value):
        if not all(isinstance(v, list) for v in value):
            raise _malformed_array(s, "Multidimensional arrays must have sub-arrays with "
                                   "matching dimensions.")
        try:
            _array_dims(value)
        except SqlError:
            raise _malformed_array(s, "Multidimensional arrays must have sub-arrays with "
                                   "matching dimensions.") from None
    return value


def decode_text(t: SqlType, data: bytes) -> Any:
    """Parse a text-format parameter as PostgreSQL's input function for `t` would."""
    if t.is_array:
        return _parse_array_text(t, _utf8(data))
    return _TEXT_DECODERS[t.base.name](t, data)


# --------------------------------------------------------------------------
# Binary input (Bind parameters in binary format)
# --------------------------------------------------------------------------


class _BadLength(Exception):
    """Binary parameter of the wrong size; decode_binary words the SqlError."""


def _fixed(data: bytes, n: int) -> bytes:
    if len(data) != n:
        raise _BadLength
    return data


def _unpack(fmt: struct.Struct, data: bytes) -> Any:
    if len(data) != fmt.size:
        raise _BadLength
    return fmt.unpack(data)[0]


_S_I16 = struct.Struct(">h")
_S_I32 = struct.Struct(">i")
_S_I64 = struct.Struct(">q")
_S_U32 = struct.Struct(">I")
_S_F32 = struct.Struct(">f")
_S_F64 = struct.Struct(">d")
_S_INTERVAL = struct.Struct(">qii")


def _recv_numeric(t: SqlType, data: bytes) -> Decimal:
    if len(data) < 8:
        raise _BadLength
    ndigits, weight, sign, dscale = struct.unpack(">hhHh", data[:8])
    if ndigits < 0 or len(data) != 8 + 2 * ndigits:
        raise _BadLength
    if sign == _NUMERIC_NAN:
        return Decimal("NaN")
    if sign in (_NUMERIC_PINF, _NUMERIC_NINF):
        return _numeric_typmod(t, Decimal("-Infinity" if sign == _NUMERIC_NINF else "Infinity"))
    if sign not in (_NUMERIC_POS, _NUMERIC_NEG):
        raise SqlError("22P03", 'invalid sign in external "numeric" value')
    if dscale < 0 or dscale > 0x3FFF:
        raise SqlError("22P03", 'invalid scale in external "numeric" value')
    digits = struct.unpack(f">{ndigits}H", data[8:])
    if any(dg > 9999 for dg in digits):
        raise SqlError("22P03", 'invalid digit in external "numeric" value')
    coeff = int("".join(f"{dg:04d}" for dg in digits) or "0")
    d = Decimal((1 if sign == _NUMERIC_NEG else 0, tuple(map(int, str(coeff))),
                 (weight - ndigits + 1) * 4))
    # numeric_recv truncates digits the given dscale would hide.
    d = d.quantize(Decimal(1).scaleb(-dscale), rounding=ROUND_DOWN, context=_DEC_CTX)
    return _numeric_typmod(t, d)


def _recv_date(t: SqlType, data: bytes) -> _dt.date:
    days = _unpack(_S_I32, data)
    if days in (-(2**31), 2**31 - 1):
        raise SqlError("0A000", "infinite date values are not supported")
    try:
        return _PG_EPOCH_DATE + _dt.timedelta(days=days)
    except OverflowError:
        raise SqlError("22008", "date out of range") from None


def _recv_time(t: SqlType, data: bytes) -> _dt.time:
    us = _unpack(_S_I64, data)
    if not 0 <= us < _US_PER_DAY:
        raise SqlError("22008", "time out of range")
    secs, us = divmod(us, 1_000_000)
    return _dt.time(secs // 3600, secs // 60 % 60, secs % 60, us)


def _recv_timestamp(t: SqlType, data: bytes) -> _dt.datetime:
    us = _unpack(_S_I64, data)
    if us in (-(2**63), 2**63 - 1):
        raise SqlError("0A000", "infinite timestamp values are not supported")
    try:
        ts = _PG_EPOCH + _dt.timedelta(microseconds=us)
    except OverflowError:
        raise SqlError("22008", "timestamp out of range") from None
    return ts.replace(tzinfo=_UTC) if t.base.name == "timestamp with time zone" else ts


def _recv_text(t: SqlType, data: bytes) -> str:
    s = _utf8(data)
    name = t.base.name
    if name == "character varying":
        return _check_length(t, s)
    if name == "character":
        s = _check_length(t, s)
        return s.ljust(t.max_length) if t.max_length is not None else s
    if name == "json":
        jsonb.parse_json(s)
    return s


def _recv_name(t: SqlType, data: bytes) -> str:
    s = _utf8(data)
    if len(data) >= 64:
        raise SqlError("42622", "identifier too long",
                       detail="Identifier must be less than 64 characters.")
    return s


def _recv_jsonb(t: SqlType, data: bytes) -> str:
    if not data:
        raise _BadLength
    if data[0] != 1:
        raise SqlError("22P03", f"unsupported jsonb version number {data[0]}")
    return jsonb.normalize(_utf8(data[1:]))


def _recv_uuid(t: SqlType, data: bytes) -> str:
    h = _fixed(data, 16).hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _recv_interval(t: SqlType, data: bytes) -> str:
    micros, days, months = _S_INTERVAL.unpack(_fixed(data, 16))
    return _interval_text(months, days, micros)


_BINARY_DECODERS: dict[str, Callable[[SqlType, bytes], Any]] = {
    "boolean": lambda t, d: _fixed(d, 1) != b"\x00",
    "smallint": lambda t, d: _unpack(_S_I16, d),
    "integer": lambda t, d: _unpack(_S_I32, d),
    "bigint": lambda t, d: _unpack(_S_I64, d),
    "oid": lambda t, d: _unpack(_S_U32, d),
    "real": lambda t, d: _unpack(_S_F32, d),
    "double precision": lambda t, d: _unpack(_S_F64, d),
    "numeric": _recv_numeric,
    "text": _recv_text,
    "character varying": _recv_text,
    "character": _recv_text,
    "name": _recv_name,
    "char": lambda t, d: chr(_fixed(d, 1)[0]),
    "json": _recv_text,
    "jsonb": _recv_jsonb,
    "uuid": _recv_uuid,
    "interval": _recv_interval,
    "bytea": lambda t, d: bytes(d),
    "date": _recv_date,
    "time without time zone": _recv_time,
    "timestamp without time zone": _recv_timestamp,
    "timestamp with time zone": _recv_timestamp,
}


def _recv_array(t: SqlType, data: bytes) -> list[Any]:
    if len(data) < 12:
        raise SqlError("08P01", "insufficient data left in message")
    ndim, flags, elem_oid = struct.unpack(">iiI", data[:12])
    if ndim < 0:
        raise SqlError("22P03", f"invalid number of dimensions: {ndim}")
    if ndim > 6:
        raise SqlError("54000", f"number of array dimensions ({ndim}) exceeds the maximum "
                       "allowed (6)")
    if flags not in (0, 1):
        raise SqlError("22P03", "invalid array flags")
    if elem_oid != t.base.oid:
        got = BY_OID.get(elem_oid)
        raise SqlError("42804", f"binary data has array element type {elem_oid} "
                       f"({got.name if got else '???'}) instead of expected "
                       f"{t.base.oid} ({t.base.name})")
    pos = 12 + 8 * ndim
    if len(data) < pos:
        raise SqlError("08P01", "insufficient data left in message")
    dims = [struct.unpack_from(">i", data, 12 + 8 * k)[0] for k in range(ndim)]
    if any(d < 0 for d in dims):
        raise SqlError("22P03", "invalid array dimensions")
    if ndim == 0 or 0 in dims:
        if pos != len(data):
            raise _BadLength
        return []
    et = _element(t)
    dec = _BINARY_DECODERS[t.base.name]
    count = math.prod(dims)
    flat: list[Any] = []
    for k in range(count):
        if pos + 4 > len(data):
            raise SqlError("08P01", "insufficient data left in message")
        (length,) = struct.unpack_from(">i", data, pos)
        pos += 4
        if length == -1:
            flat.append(None)
            continue
        if length < -1 or pos + length > len(data):
            raise SqlError("08P01", "insufficient data left in message")
        try:
            flat.append(dec(et, data[pos : pos + length]))
        except _BadLength:
            raise SqlError("22P03", f"improper binary format in array element {k + 1}") from None
        pos += length
    if pos != len(data):
        raise _BadLength
    for d in reversed(dims[1:]):
        flat = [flat[j : j + d] for j in range(0, len(flat), d)]
    return flat


def decode_binary(t: SqlType, data: bytes, *, param: int | None = None) -> Any:
    """Parse a binary-format parameter as PostgreSQL's recv function for `t`
    would. `param` (1-based) names the Bind parameter in the size error."""
    try:
        if t.is_array:
            return _recv_array(t, bytes(data))
        return _BINARY_DECODERS[t.base.name](t, bytes(data))
    except _BadLength:
        where = f"in bind parameter {param}" if param is not None else f"for type {t.display()}"
        raise SqlError("22P03", f"incorrect binary data format {where}") from None


# --------------------------------------------------------------------------
# Vectorized column encoding (Arrow in, Arrow binary or list of bytes out)
# --------------------------------------------------------------------------

_B_TRUE = pa.scalar(b"t", pa.binary())
_B_FALSE = pa.scalar(b"f", pa.binary())
_B_EMPTY = pa.scalar(b"", pa.binary())
_INT_NAMES = frozenset(("smallint", "integer", "bigint", "oid"))
# date32 days and microseconds of 0001-01-01 and 9999-12-31 since 1970: the
# range where Arrow's ISO casts agree with PostgreSQL (no BC, 4-digit years).
_MIN_DAY, _MAX_DAY = -719162, 2932896
_MIN_US, _MAX_US = _MIN_DAY * _US_PER_DAY, (_MAX_DAY + 1) * _US_PER_DAY - 1


def _chunks(arr: pa.Array | pa.ChunkedArray) -> list[pa.Array]:
    return list(arr.chunks) if isinstance(arr, pa.ChunkedArray) else [arr]


def _combine(parts: list[pa.Array]) -> pa.Array:
    parts = [p if p.type == pa.binary() else p.cast(pa.binary()) for p in parts]
    if not parts:
        return pa.array([], pa.binary())
    return parts[0] if len(parts) == 1 else pa.concat_arrays(parts)


def _per_value(fn: Callable[[SqlType, Any], bytes], t: SqlType, a: pa.Array) -> pa.Array:
    return pa.array([None if v is None else fn(t, v) for v in a.to_pylist()], pa.binary())


def _patch(res: pa.Array, a: pa.Array, mask: np.ndarray,
           fn: Callable[[SqlType, Any], bytes], t: SqlType) -> pa.Array:
    """Replace the rows of `res` picked by `mask` (non-NULL rows only) with the
    per-value encoding of the same rows of `a`."""
    idx = np.flatnonzero(mask)
    if not idx.size:
        return res
    vals = a.take(pa.array(idx)).to_pylist()
    repl = pa.array([fn(t, v) for v in vals], pa.binary())
    return pc.replace_with_mask(res, pa.array(mask), repl)


def _valid_np(a: pa.Array) -> np.ndarray:
    if a.null_count == 0:
        return np.ones(len(a), dtype=bool)
    return pc.is_valid(a).to_numpy(zero_copy_only=False)


def _values_np(a: pa.Array) -> np.ndarray:
    if a.null_count:
        a = a.fill_null(pa.scalar(0, a.type) if not pa.types.is_boolean(a.type) else False)
    return a.to_numpy(zero_copy_only=False)


def _validity_buffer(a: pa.Array) -> pa.Buffer | None:
    if a.null_count == 0:
        return None
    v = pc.is_valid(a)
    if v.offset:
        v = pa.concat_arrays([v])
    return v.buffers()[1]


def _fixed_width(a: pa.Array, data: np.ndarray, width: int) -> pa.Array:
    """Binary array of `width`-byte values from a contiguous buffer, NULLs kept."""
    n = len(a)
    offsets = np.arange(0, (n + 1) * width, width, dtype=np.int32)
    return pa.Array.from_buffers(
        pa.binary(), n,
        [_validity_buffer(a), pa.py_buffer(offsets), pa.py_buffer(np.ascontiguousarray(data))],
    )


def _offsets_data(a: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Offsets (n+1, starting at 0) and the bytes of a binary/string array."""
    n = len(a)
    large = pa.types.is_large_binary(a.type) or pa.types.is_large_string(a.type)
    bufs = a.buffers()
    off = np.frombuffer(bufs[1], dtype=np.int64 if large else np.int32, count=n + 1,
                        offset=a.offset * (8 if large else 4)).astype(np.int64)
    base = int(off[0])
    total = int(off[-1]) - base
    data = (np.frombuffer(bufs[2], dtype=np.uint8, count=total, offset=base)
            if total else np.zeros(0, dtype=np.uint8))
    return off - base, data


def _is_str(ty: pa.DataType) -> bool:
    return pa.types.is_string(ty) or pa.types.is_large_string(ty)


def _as_binary(a: pa.Array) -> pa.Array:
    if pa.types.is_large_string(a.type) or pa.types.is_large_binary(a.type):
        return a.cast(pa.large_binary()).cast(pa.binary())
    return a.cast(pa.binary())


def _strip_fraction(res: pa.Array) -> pa.Array:
    # Arrow always prints the fraction; PostgreSQL drops trailing zeros and the
    # dot. The "." stops the first trim, so integer digits are never touched.
    return pc.utf8_rtrim(pc.utf8_rtrim(res, characters="0"), characters=".")


def _float_text_chunk(t: SqlType, a: pa.Array) -> pa.Array:
    is4 = t.base.name == "real"
    target = pa.float32() if is4 else pa.float64()
    if a.type != target:
        a = pc.cast(a, target, safe=False)
    res = _as_binary(pc.cast(a, pa.string()))
    vals = np.abs(_values_np(a))
    lo, hi = (np.float32(1e-4), np.float32(1e6)) if is4 else (1e-4, 1e15)
    # Same shortest digits as PostgreSQL (checked), but Arrow switches to
    # exponent form by its own rules: keep only rows PostgreSQL prints fixed
    # and Arrow printed without an exponent.
    ok = ((vals >= lo) & (vals < hi)) | (vals == 0)
    ok &= ~pc.match_substring(res, "e").fill_null(False).to_numpy(zero_copy_only=False)
    bad = ~ok & _valid_np(a)
    return _patch(res, a, bad, encode_text, t)


def _numeric_text_chunk(t: SqlType, a: pa.Array) -> pa.Array | None:
    scale = a.type.scale
    ps = t.precision_scale
    if ps is not None and scale != ps[1]:
        if scale > ps[1] or a.type.precision + ps[1] - scale > 38:
            return None
        a = pc.cast(a, pa.decimal128(a.type.precision + ps[1] - scale, ps[1]))
    res = pc.cast(a, pa.string())
    # Arrow writes small magnitudes (and zero) in scientific notation.
    sci = pc.match_substring(res, "E")
    if ps is None and scale > 0:
        res = _strip_fraction(res)
    res = _as_binary(res)
    if sci.true_count:
        res = _patch(res, a, sci.fill_null(False).to_numpy(zero_copy_only=False),
                     encode_text, t)
    return res


def _bytea_hex_chunk(a: pa.Array) -> pa.Array | None:
    off, data = _offsets_data(a)
    n = len(a)
    size = 2 * len(data) + 2 * n
    if size >= 2**31:
        return None
    new_off = (2 * off + 2 * np.arange(n + 1, dtype=np.int64)).astype(np.int32)
    out = np.empty(size, dtype=np.uint8)
    starts = new_off[:-1]
    out[starts] = ord("\\")
    out[starts + 1] = ord("x")
    body = np.ones(size, dtype=bool)
    body[starts] = False
    body[starts + 1] = False
    out[body] = _HEX_TABLE[data].ravel()
    return pa.Array.from_buffers(
        pa.binary(), n, [_validity_buffer(a), pa.py_buffer(new_off), pa.py_buffer(out)]
    )


_HEX_TABLE = np.frombuffer(
    b"".join(f"{i:02x}".encode() for i in range(256)), dtype=np.uint8
).reshape(256, 2)


def _text_chunk(t: SqlType, a: pa.Array) -> pa.Array:
    name = t.base.name
    ty = a.type
    n = len(a)
    if n == 0 or a.null_count == n:
        return pa.nulls(n, pa.binary())
    if pa.types.is_dictionary(ty):  # each distinct value encoded once (a SUBSCRIBE's mz_timestamp)
        return _text_chunk(t, a.dictionary).take(a.indices)
    if t.is_array:
        return _per_value(encode_text, t, a)
    if name == "boolean" and pa.types.is_boolean(ty):
        return pc.if_else(a, _B_TRUE, _B_FALSE)
    if name in _INT_NAMES and pa.types.is_integer(ty):
        return _as_binary(pc.cast(a, pa.string()))
    if name in ("real", "double precision") and pa.types.is_floating(ty):
        return _float_text_chunk(t, a)
    if name == "numeric" and pa.types.is_decimal(ty):
        res = _numeric_text_chunk(t, a)
        if res is not None:
            return res
    if name in _STRING_TYPES and _is_str(ty):
        if name == "character" and t.max_length is not None:
            a = pc.utf8_rpad(a, width=t.max_length, padding=" ")
        return _as_binary(a)
    if name == "bytea" and (pa.types.is_binary(ty) or pa.types.is_large_binary(ty)):
        res = _bytea_hex_chunk(a)
        if res is not None:
            return res
    if name == "date" and pa.types.is_date32(ty):
        days = _values_np(a.cast(pa.int32())).astype(np.int64)
        res = _as_binary(pc.cast(a, pa.string()))
        bad = ((days < _MIN_DAY) | (days > _MAX_DAY)) & _valid_np(a)
        return _patch_ints(res, days, bad, _date_text_bc)
    if name == "time without time zone" and pa.types.is_time(ty):
        a = pc.cast(a, pa.time64("us"), safe=False)
        return _as_binary(_strip_fraction(pc.cast(a, pa.string())))
    if name in ("timestamp without time zone", "timestamp with time zone") and \
            pa.types.is_timestamp(ty):
        tz = name == "timestamp with time zone"
        a = pc.cast(a, pa.timestamp("us"), safe=False)
        res = _strip_fraction(pc.cast(a, pa.string()))
        if tz:
            res = pc.binary_join_element_wise(res, pa.scalar("+00"), "")
        res = _as_binary(res)
        us = _values_np(a.cast(pa.int64()))
        bad = ((us < _MIN_US) | (us > _MAX_US)) & _valid_np(a)
        return _patch_ints(res, us, bad, lambda v: _timestamp_text_us(int(v), tz))
    a = _normalize_temporal(a)
    return _per_value(encode_text, t, a)


def _patch_ints(res: pa.Array, ints: np.ndarray, mask: np.ndarray,
                fn: Callable[[int], str]) -> pa.Array:
    """Patch rows Python's date types cannot hold, formatted from raw integers."""
    idx = np.flatnonzero(mask)
    if not idx.size:
        return res
    repl = pa.array([fn(int(ints[i])).encode() for i in idx], pa.binary())
    return pc.replace_with_mask(res, pa.array(mask), repl)


def _normalize_temporal(a: pa.Array) -> pa.Array:
    # Python values carry microseconds; make the per-value path see what the
    # vectorized casts see.
    ty = a.type
    if pa.types.is_time(ty) and ty != pa.time64("us"):
        return pc.cast(a, pa.time64("us"), safe=False)
    if pa.types.is_timestamp(ty) and ty.unit != "us":
        return pc.cast(a, pa.timestamp("us", ty.tz), safe=False)
    return a


_NP_BIG = {
    "smallint": ">i2",
    "integer": ">i4",
    "bigint": ">i8",
    "oid": ">u4",
    "real": ">f4",
    "double precision": ">f8",
}
_HEX_VALUE = np.full(256, 255, dtype=np.uint8)
for _i, _c in enumerate(b"0123456789abcdef"):
    _HEX_VALUE[_c] = _i
for _i, _c in enumerate(b"ABCDEF"):
    _HEX_VALUE[_c] = _i + 10
_UUID_HEX_POS = np.array([i for i in range(36) if i not in (8, 13, 18, 23)])


def _uuid_binary_chunk(a: pa.Array) -> pa.Array | None:
    filled = a.fill_null("00000000-0000-0000-0000-000000000000") if a.null_count else a
    off, data = _offsets_data(filled)
    n = len(a)
    if data.size != 36 * n or not np.array_equal(np.diff(off), np.full(n, 36)):
        return None
    rows = data.reshape(n, 36)
    if not (rows[:, [8, 13, 18, 23]] == ord("-")).all():
        return None
    nib = _HEX_VALUE[rows[:, _UUID_HEX_POS]]
    if (nib == 255).any():
        return None
    out = (nib[:, 0::2] << 4) | nib[:, 1::2]
    return _fixed_width(a, out, 16)


_NUMERIC_HEADER = np.dtype([("ndigits", ">i2"), ("weight", ">i2"), ("sign", ">u2"), ("dscale", ">i2")])


def _numeric_binary_chunk(t: SqlType, a: pa.Array) -> pa.Array | None:
    """numeric_send for a decimal128 array whose values fit in int64 unscaled
    (scale <= 16), with numpy; None to fall back to per-value encoding."""
    scale = a.type.scale
    ps = t.precision_scale
    if not pa.types.is_decimal128(a.type) or not 0 <= scale <= 16 or (
        ps is not None and ps[1] != scale
    ):
        return None
    n = len(a)
    raw = np.frombuffer(a.buffers()[1], dtype=np.int64, count=2 * n, offset=a.offset * 16)
    low, high = raw[0::2], raw[1::2]
    valid = _valid_np(a)
    # Little-endian 128-bit: fits in int64 when the high word is sign extension.
    fits = (high == (low >> 63)) & (low != np.iinfo(np.int64).min)
    if not fits[valid].all():
        return None
    unscaled = np.where(valid, low, 0)
    neg = unscaled < 0
    ip, fp = np.divmod(np.abs(unscaled), 10**scale)
    nfrac = (scale + 3) // 4
    frac_aligned = fp * 10 ** (4 * nfrac - scale)
    # Base-10000 digits: 5 integer groups (|ip| < 10**20), then the fraction.
    groups = np.empty((n, 5 + nfrac), dtype=np.int64)
    for k in range(5):
        groups[:, 4 - k] = ip // 10000**k % 10000
    for j in range(nfrac):
        groups[:, 5 + j] = frac_aligned // 10000 ** (nfrac - 1 - j) % 10000
    nonzero = groups != 0
    any_nonzero = nonzero.any(axis=1)
    first = np.argmax(nonzero, axis=1)
    last = groups.shape[1] - 1 - np.argmax(nonzero[:, ::-1], axis=1)
    ndigits = np.where(any_nonzero, last - first + 1, 0)
    if ps is None:
        # Unconstrained: dscale of the text form, trailing zeros stripped.
        trailing = np.zeros(n, dtype=np.int64)
        for k in range(1, scale + 1):
            trailing += fp % 10**k == 0
        dscale = scale - trailing
    else:
        dscale = np.full(n, scale)
    header = np.empty(n, dtype=_NUMERIC_HEADER)
    header["ndigits"] = ndigits
    header["weight"] = np.where(any_nonzero, 4 - first, 0)
    header["sign"] = np.where(neg & any_nonzero, _NUMERIC_NEG, _NUMERIC_POS)
    header["dscale"] = dscale
    cols = np.arange(groups.shape[1])
    keep = (cols >= first[:, None]) & (cols <= last[:, None]) & any_nonzero[:, None]
    digits = groups.astype(">u2")[keep]
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(ndigits * 2, out=offsets[1:])
    digit_arr = pa.Array.from_buffers(
        pa.binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(digits.tobytes())]
    )
    return pc.binary_join_element_wise(_fixed_width(a, header.view(np.uint8), 8), digit_arr, b"")


def _binary_chunk(t: SqlType, a: pa.Array) -> pa.Array:
    name = t.base.name
    ty = a.type
    n = len(a)
    if n == 0 or a.null_count == n:
        return pa.nulls(n, pa.binary())
    if pa.types.is_dictionary(ty):
        return _binary_chunk(t, a.dictionary).take(a.indices)
    if t.is_array:
        return _per_value(encode_binary, t, a)
    if name == "boolean" and pa.types.is_boolean(ty):
        return _fixed_width(a, _values_np(a).astype(np.uint8), 1)
    if name in _NP_BIG and (pa.types.is_integer(ty) or pa.types.is_floating(ty)):
        dt = np.dtype(_NP_BIG[name])
        vals = _values_np(a)
        if dt.kind in "iu" and vals.size and (
            vals.min() < np.iinfo(dt).min or vals.max() > np.iinfo(dt).max
        ):
            # Out of range for the wire type: let the per-value path raise.
            return _per_value(encode_binary, t, a)
        with np.errstate(over="ignore"):  # float64 -> float32 overflows to inf
            return _fixed_width(a, vals.astype(dt), dt.itemsize)
    if name == "numeric" and pa.types.is_decimal(ty):
        res = _numeric_binary_chunk(t, a)
        if res is not None:
            return res
    if name in _STRING_TYPES and _is_str(ty):
        if name == "uuid":
            res = _uuid_binary_chunk(a)
            if res is not None:
                return res
        elif name == "jsonb":
            return _as_binary(pc.binary_join_element_wise(pa.scalar("\x01"), a, ""))
        elif name == "character" and t.max_length is not None:
            return _as_binary(pc.utf8_rpad(a, width=t.max_length, padding=" "))
        elif name != "interval":
            return _as_binary(a)
    if name == "bytea" and (pa.types.is_binary(ty) or pa.types.is_large_binary(ty)):
        return _as_binary(a)
    if name == "date" and pa.types.is_date32(ty):
        days = _values_np(a.cast(pa.int32())).astype(np.int64) - _UNIX_TO_PG_DAYS
        return _fixed_width(a, days.astype(">i4"), 4)
    if name == "time without time zone" and pa.types.is_time(ty):
        us = _values_np(pc.cast(a, pa.time64("us"), safe=False).cast(pa.int64()))
        return _fixed_width(a, us.astype(">i8"), 8)
    if name in ("timestamp without time zone", "timestamp with time zone") and \
            pa.types.is_timestamp(ty):
        us = _values_np(pc.cast(a, pa.timestamp("us"), safe=False).cast(pa.int64()))
        return _fixed_width(a, (us - _UNIX_TO_PG_US).astype(">i8"), 8)
    a = _normalize_temporal(a)
    return _per_value(encode_binary, t, a)


def encode_text_arrow(t: SqlType, arr: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Text form of every value of a column, as an Arrow binary array (NULLs
    kept) that `encode_rows` takes without a round trip through Python."""
    return _combine([_text_chunk(t, c) for c in _chunks(arr)])


def encode_binary_arrow(t: SqlType, arr: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Binary form of every value of a column, as an Arrow binary array."""
    return _combine([_binary_chunk(t, c) for c in _chunks(arr)])


def encode_text_column(t: SqlType, arr: pa.Array | pa.ChunkedArray) -> list[bytes | None]:
    """Text form of every value of a column; equal to `encode_text` per value."""
    return encode_text_arrow(t, arr).to_pylist()


def encode_binary_column(t: SqlType, arr: pa.Array | pa.ChunkedArray) -> list[bytes | None]:
    """Binary form of every value of a column; equal to `encode_binary` per value."""
    return encode_binary_arrow(t, arr).to_pylist()


# --------------------------------------------------------------------------
# DataRow assembly
# --------------------------------------------------------------------------

# Below this many rows the Python loop beats Arrow's fixed call overhead.
_SMALL_ROWS = 256
# Arrow binary offsets are int32: join at most this many bytes at a time.
_JOIN_LIMIT = 1 << 30
_NULL_FIELD = b"\xff\xff\xff\xff"


def _rows_python(columns: Sequence[Sequence[bytes | None]], nrows: int) -> bytes:
    ncols = len(columns)
    count = _pack_i16(ncols)
    out: list[bytes] = []
    append = out.append
    for r in range(nrows):
        fields: list[bytes] = []
        size = 6 + 4 * ncols
        for col in columns:
            v = col[r]
            if v is None:
                fields.append(_NULL_FIELD)
            else:
                fields.append(_pack_i32(len(v)))
                fields.append(v)
                size += len(v)
        append(b"D" + _pack_i32(size) + count)
        out.extend(fields)
    return b"".join(out)


def _as_arrow_column(col: Column) -> pa.Array:
    if isinstance(col, pa.ChunkedArray):
        col = _combine(list(col.chunks))
    if isinstance(col, pa.Array):
        return col if col.type == pa.binary() else _as_binary(col)
    return pa.array(col, pa.binary())


def _fixed_arrow(data: np.ndarray, width: int, n: int) -> pa.Array:
    offsets = np.arange(0, (n + 1) * width, width, dtype=np.int32)
    return pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def encode_rows(columns: Sequence[Column], nrows: int | None = None) -> bytes:
    """Concatenated DataRow messages for rows given column by column.

    Each column holds the already encoded values of one result column (bytes,
    or None for NULL): a list, or an Arrow binary array as returned by
    `encode_text_arrow`/`encode_binary_arrow` (cheaper: no Python objects).
    `nrows` is only needed when there are no columns.
    """
    if not columns:
        return b"D\x00\x00\x00\x06\x00\x00" * (nrows or 0)
    n = len(columns[0])
    if any(len(c) != n for c in columns):
        raise ValueError("encode_rows: columns differ in length")
    if n == 0:
        return b""
    if n < _SMALL_ROWS:
        lists = [c.to_pylist() if isinstance(c, (pa.Array, pa.ChunkedArray)) else c
                 for c in columns]
        return _rows_python(lists, n)
    arrays = [_as_arrow_column(c) for c in columns]
    row_len = np.full(n, 6 + 4 * len(arrays), dtype=np.int64)
    parts: list[pa.Array] = []
    for a in arrays:
        off, _ = _offsets_data(a)
        lens = np.diff(off)
        if a.null_count:
            lens = np.where(_valid_np(a), lens, -1)
            row_len += np.maximum(lens, 0)
        else:
            row_len += lens
        parts.append(_fixed_arrow(lens.astype(">i4"), 4, n))
        parts.append(a)
    header = np.empty(n, dtype=[("tag", "u1"), ("len", ">i4"), ("ncols", ">i2")])
    header["tag"] = ord("D")
    header["len"] = row_len  # 4 (length) + 2 (count) + the fields: all but the tag
    header["ncols"] = len(arrays)
    parts.insert(0, _fixed_arrow(header.view(np.uint8), 7, n))
    # Join in pieces so no piece overflows Arrow's int32 offsets.
    ends = np.cumsum(row_len + 1)
    out: list[bytes] = []
    start = 0
    while start < n:
        done = int(ends[start - 1]) if start else 0
        stop = max(int(np.searchsorted(ends, done + _JOIN_LIMIT, side="right")), start + 1)
        sliced = [p.slice(start, stop - start) for p in parts]
        joined = pc.binary_join_element_wise(
            *sliced, b"", null_handling="replace", null_replacement=b""
        )
        off, data = _offsets_data(joined)
        out.append(data.tobytes())
        start = stop
    return out[0] if len(out) == 1 else b"".join(out)
