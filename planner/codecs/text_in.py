"""PostgreSQL's text input functions (Bind parameters and COPY data in text format),
raising the SQLSTATE PostgreSQL raises.

Pure: no I/O. See planner/codecs/__init__.py for the Python value of each type.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from decimal import (
    ROUND_HALF_EVEN,
    Decimal,
    InvalidOperation,
)
from typing import Any

import numpy as np

from planner import jsonb
from planner.codecs.base import DEC_CTX, INT_RANGES, US_PER_DAY, UTC, WS, array_dims, element, syntax
from planner.codecs.interval import interval_parse, interval_text
from planner.codecs.registry import CODECS, TEXT, register_types
from planner.encoding import decode_utf8 as _utf8
from planner.errors import SqlError
from planner.types import SqlType

_TABLE = CODECS[TEXT]  # this direction's table, for the per-value entry point below

_INT_RE = re.compile(r"[ \t\n\r\f\v]*[+-]?[0-9]+[ \t\n\r\f\v]*", re.ASCII)


def _dec_int(t: SqlType, data: bytes) -> int:
    s = _utf8(data)
    name = t.base.name
    if not _INT_RE.fullmatch(s):
        raise syntax(name, s)
    v = int(s)
    if name == "oid":
        # oidin accepts what strtoul accepts and wraps negatives into uint32.
        if not -(2**31) <= v < 2**32:
            raise SqlError("22003", f'value "{s}" is out of range for type oid')
        return v & 0xFFFFFFFF
    lo, hi = INT_RANGES[name]
    if not lo <= v <= hi:
        raise SqlError("22003", f'value "{s}" is out of range for type {name}')
    return v


def _dec_bool(t: SqlType, data: bytes) -> bool:
    s = _utf8(data)
    v = s.strip(WS).lower()
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
    raise syntax("boolean", s)


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
    v = s.strip(WS)
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
        raise syntax(name, s)
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
    v = s.strip(WS)
    low = v.lower()
    if low == "nan":
        d = Decimal("NaN")
    elif low in ("infinity", "+infinity", "inf", "+inf"):
        d = Decimal("Infinity")
    elif low in ("-infinity", "-inf"):
        d = Decimal("-Infinity")
    else:
        if not _NUMERIC_RE.fullmatch(v):
            raise syntax("numeric", s)
        d = Decimal(v)
        # PostgreSQL's numeric holds at most 131072 integer digits and a
        # display scale of 16383.
        if not d.is_zero() and d.adjusted() >= 131072 or -d.as_tuple().exponent > 16383:
            raise SqlError("22003", "value overflows numeric format")
    return numeric_typmod(t, d)


def numeric_typmod(t: SqlType, d: Decimal) -> Decimal:
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
        q = d.quantize(Decimal(1).scaleb(-s), context=DEC_CTX)
    except InvalidOperation:
        q = None
    if q is None or (not q.is_zero() and q.adjusted() >= p - s):
        limit = f"10^{p - s}" if p > s else "1"
        raise SqlError("22003", "numeric field overflow",
                       detail=f"A field with precision {p}, scale {s} must round to an "
                              f"absolute value less than {limit}.")
    return q.copy_abs() if q.is_zero() else q


def check_length(t: SqlType, s: str) -> str:
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
    return check_length(t, _utf8(data))


def _dec_bpchar(t: SqlType, data: bytes) -> str:
    s = check_length(t, _utf8(data))
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


def uuid_canonical(s: str) -> str:
    m = _UUID_RE.fullmatch(s)
    if not m:
        raise syntax("uuid", s)
    h = m.group(2).replace("-", "").lower()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _dec_uuid(t: SqlType, data: bytes) -> str:
    return uuid_canonical(_utf8(data))


def _dec_interval(t: SqlType, data: bytes) -> str:
    return interval_text(*interval_parse(_utf8(data)))


def _dec_json(t: SqlType, data: bytes) -> str:
    s = _utf8(data)
    jsonb.parse_json(s)  # json keeps the text as given; only its syntax is checked
    return s


def _dec_jsonb(t: SqlType, data: bytes) -> str:
    return jsonb.jsonb_input(data)


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
    low = s.strip(WS).lower()
    if low == "epoch":
        return _dt.datetime(1970, 1, 1), 0
    if low in ("infinity", "-infinity", "+infinity"):
        raise SqlError("0A000", f"infinite {type_name} values are not supported")
    m = _TS_RE.fullmatch(s)
    if not m:
        raise syntax(type_name, s, "22007")
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
    return utc.replace(tzinfo=UTC)


def _dec_time(t: SqlType, data: bytes) -> _dt.time:
    s = _utf8(data)
    if s.strip(WS).lower() == "allballs":
        return _dt.time(0)
    m = _TIME_RE.fullmatch(s)
    if not m:
        raise syntax("time", s, "22007")
    h, mi = int(m.group("h")), int(m.group("mi"))
    sec = int(m.group("s") or 0)
    us = _frac_us(m.group("f"))
    total = ((h * 60 + mi) * 60 + sec) * 1_000_000 + us
    # Python's time cannot hold 24:00:00, which PostgreSQL allows.
    if mi > 59 or sec > 60 or total >= US_PER_DAY:
        raise SqlError("22008", f'date/time field value out of range: "{s}"')
    secs, us = divmod(total, 1_000_000)
    return _dt.time(secs // 3600, secs // 60 % 60, secs % 60, us)


def _malformed_array(s: str, detail: str) -> SqlError:
    return SqlError("22P02", f'malformed array literal: "{s}"', detail=detail)


def _parse_array_text(t: SqlType, s: str) -> list[Any]:
    """array_in for one- or more-dimensional arrays with lower bound 1."""
    et = element(t)
    dec = CODECS[TEXT][t.base.oid].decode
    n = len(s)

    def skip_ws(i: int) -> int:
        while i < n and s[i] in WS:
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
                    if c not in WS:
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
            array_dims(value)
        except SqlError:
            raise _malformed_array(s, "Multidimensional arrays must have sub-arrays with "
                                   "matching dimensions.") from None
    return value


def _dec_array(t: SqlType, data: bytes) -> list[Any]:
    return _parse_array_text(t, _utf8(data))


register_types(TEXT, array=_dec_array, decode={
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
})


def decode_text(t: SqlType, data: bytes) -> Any:
    """Parse a text-format parameter as PostgreSQL's input function for `t` would (resolve
    `codec(t.oid, TEXT)` once instead where one type has many values)."""
    return _TABLE[t.base.array_oid if t.is_array else t.base.oid].decode(t, data)
