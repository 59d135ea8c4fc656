"""PostgreSQL's binary receive functions (Bind parameters in binary format).

Pure: no I/O. See planner/codecs/__init__.py for the Python value of each type.
"""

from __future__ import annotations

import datetime as _dt
import math
import struct
from decimal import (
    ROUND_DOWN,
    Decimal,
)
from typing import Any

from planner import jsonb
from planner.codecs.base import DEC_CTX, PG_EPOCH, PG_EPOCH_DATE, US_PER_DAY, UTC, element
from planner.codecs.binary_out import NUMERIC_NAN, NUMERIC_NEG, NUMERIC_NINF, NUMERIC_PINF, NUMERIC_POS
from planner.codecs.interval import interval_text
from planner.codecs.registry import BINARY, CODECS, register_types
from planner.codecs.text_in import check_length, numeric_typmod
from planner.encoding import decode_utf8 as _utf8
from planner.errors import SqlError
from planner.types import BY_OID, SqlType

_TABLE = CODECS[BINARY]  # this direction's table, for the per-value entry point below


class _BadLength(SqlError):
    """Binary data of the wrong size; decode_binary words it with the parameter or type (a
    registered decoder called directly raises it as it is)."""

    def __init__(self) -> None:
        super().__init__("22P03", "incorrect binary data format")


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
    if sign == NUMERIC_NAN:
        return Decimal("NaN")
    if sign in (NUMERIC_PINF, NUMERIC_NINF):
        return numeric_typmod(t, Decimal("-Infinity" if sign == NUMERIC_NINF else "Infinity"))
    if sign not in (NUMERIC_POS, NUMERIC_NEG):
        raise SqlError("22P03", 'invalid sign in external "numeric" value')
    if dscale < 0 or dscale > 0x3FFF:
        raise SqlError("22P03", 'invalid scale in external "numeric" value')
    digits = struct.unpack(f">{ndigits}H", data[8:])
    if any(dg > 9999 for dg in digits):
        raise SqlError("22P03", 'invalid digit in external "numeric" value')
    coeff = int("".join(f"{dg:04d}" for dg in digits) or "0")
    d = Decimal((1 if sign == NUMERIC_NEG else 0, tuple(map(int, str(coeff))),
                 (weight - ndigits + 1) * 4))
    # numeric_recv truncates digits the given dscale would hide.
    d = d.quantize(Decimal(1).scaleb(-dscale), rounding=ROUND_DOWN, context=DEC_CTX)
    return numeric_typmod(t, d)


def _recv_date(t: SqlType, data: bytes) -> _dt.date:
    days = _unpack(_S_I32, data)
    if days in (-(2**31), 2**31 - 1):
        raise SqlError("0A000", "infinite date values are not supported")
    try:
        return PG_EPOCH_DATE + _dt.timedelta(days=days)
    except OverflowError:
        raise SqlError("22008", "date out of range") from None


def _recv_time(t: SqlType, data: bytes) -> _dt.time:
    us = _unpack(_S_I64, data)
    if not 0 <= us < US_PER_DAY:
        raise SqlError("22008", "time out of range")
    secs, us = divmod(us, 1_000_000)
    return _dt.time(secs // 3600, secs // 60 % 60, secs % 60, us)


def _recv_timestamp(t: SqlType, data: bytes) -> _dt.datetime:
    us = _unpack(_S_I64, data)
    if us in (-(2**63), 2**63 - 1):
        raise SqlError("0A000", "infinite timestamp values are not supported")
    try:
        ts = PG_EPOCH + _dt.timedelta(microseconds=us)
    except OverflowError:
        raise SqlError("22008", "timestamp out of range") from None
    return ts.replace(tzinfo=UTC) if t.base.name == "timestamp with time zone" else ts


def _recv_text(t: SqlType, data: bytes) -> str:
    s = _utf8(data)
    name = t.base.name
    if name == "character varying":
        return check_length(t, s)
    if name == "character":
        s = check_length(t, s)
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
    return interval_text(months, days, micros)


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
    et = element(t)
    dec = CODECS[BINARY][t.base.oid].decode
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


register_types(BINARY, array=_recv_array, decode={
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
})


def decode_binary(t: SqlType, data: bytes, *, param: int | None = None) -> Any:
    """Parse a binary-format parameter as PostgreSQL's recv function for `t`
    would. `param` (1-based) names the Bind parameter in the size error."""
    try:
        return _TABLE[t.base.array_oid if t.is_array else t.base.oid].decode(t, bytes(data))
    except _BadLength:
        where = f"in bind parameter {param}" if param is not None else f"for type {t.display()}"
        raise SqlError("22P03", f"incorrect binary data format {where}") from None
