"""PostgreSQL's binary send functions, one value at a time.

Pure: no I/O. See planner/codecs/__init__.py for the Python value of each type.
"""

from __future__ import annotations

import datetime as _dt
import struct
from collections.abc import Sequence
from typing import Any

from planner.codecs.base import (
    PG_EPOCH,
    PG_EPOCH_DATE,
    PG_EPOCH_UTC,
    array_dims,
    element,
    pack_f32,
    pack_f64,
    pack_i16,
    pack_i32,
    pack_i64,
    pack_interval,
    pack_u32,
)
from planner.codecs.interval import interval_parse_cached
from planner.codecs.registry import BINARY, CODECS, register_types
from planner.codecs.text_in import uuid_canonical
from planner.codecs.text_out import enc_bpchar, enc_str, naive_utc, numeric_text, to_decimal, to_float32
from planner.types import SqlType

_TABLE = CODECS[BINARY]  # this direction's table, for the per-value entry point below

NUMERIC_POS = 0x0000
NUMERIC_NEG = 0x4000
NUMERIC_NAN = 0xC000
NUMERIC_PINF = 0xD000
NUMERIC_NINF = 0xF000


def _numeric_binary(t: SqlType, v: Any) -> bytes:
    d = to_decimal(v)
    if d.is_nan():
        return struct.pack(">hhHh", 0, 0, NUMERIC_NAN, 0)
    if d.is_infinite():
        # numeric_send reads dscale out of the special value's header bits,
        # which gives 32 for both infinities.
        return struct.pack(">hhHh", 0, 0, NUMERIC_NINF if d.is_signed() else NUMERIC_PINF, 32)
    # Built from the text form so both formats carry the same digits and scale.
    s = numeric_text(t, d)
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
    sign = NUMERIC_NEG if neg else NUMERIC_POS
    return struct.pack(f">hhHh{len(groups)}H", len(groups), weight, sign, dscale, *groups)


def _bin_bool(t: SqlType, v: Any) -> bytes:
    return b"\x01" if v else b"\x00"


def _bin_date(t: SqlType, v: Any) -> bytes:
    if isinstance(v, _dt.datetime):
        v = v.date()
    return pack_i32((v - PG_EPOCH_DATE).days)


def _time_us(v: _dt.time) -> int:
    return ((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000 + v.microsecond


def _delta_us(d: _dt.timedelta) -> int:
    return (d.days * 86400 + d.seconds) * 1_000_000 + d.microseconds


def _bin_timestamp(t: SqlType, v: Any) -> bytes:
    return pack_i64(_delta_us(naive_utc(v) - PG_EPOCH))


def _bin_timestamptz(t: SqlType, v: Any) -> bytes:
    base = PG_EPOCH if v.tzinfo is None else PG_EPOCH_UTC
    return pack_i64(_delta_us(v - base))


def _bin_uuid(t: SqlType, v: Any) -> bytes:
    if len(v) == 36 and v[8] == v[13] == v[18] == v[23] == "-":
        try:
            b = bytes.fromhex(v.replace("-", ""))
        except ValueError:
            b = b""
        if len(b) == 16:
            return b
    return bytes.fromhex(uuid_canonical(v).replace("-", ""))


def _bin_interval(t: SqlType, v: Any) -> bytes:
    months, days, micros = interval_parse_cached(v)
    return pack_interval(micros, days, months)


def _array_binary(t: SqlType, values: Sequence[Any]) -> bytes:
    et = element(t)
    enc = CODECS[BINARY][t.base.oid].encode
    dims = array_dims(values)
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
            parts.append(pack_i32(len(b)))
            parts.append(b)
    head = struct.pack(">iiI", len(dims), has_null, t.base.oid)
    head += b"".join(struct.pack(">ii", d, 1) for d in dims)
    return head + b"".join(parts)


register_types(BINARY, array=_array_binary, encode={
    "boolean": _bin_bool,
    "smallint": lambda t, v: pack_i16(v),
    "integer": lambda t, v: pack_i32(v),
    "bigint": lambda t, v: pack_i64(v),
    "oid": lambda t, v: pack_u32(v),
    "real": lambda t, v: pack_f32(float(to_float32(v))),
    "double precision": lambda t, v: pack_f64(v),
    "numeric": _numeric_binary,
    "text": enc_str,
    "character varying": enc_str,
    "character": enc_bpchar,
    "name": enc_str,
    "char": enc_str,
    "json": enc_str,
    "jsonb": lambda t, v: b"\x01" + v.encode(),
    "uuid": _bin_uuid,
    "interval": _bin_interval,
    "bytea": lambda t, v: bytes(v),
    "date": _bin_date,
    "time without time zone": lambda t, v: pack_i64(_time_us(v)),
    "timestamp without time zone": _bin_timestamp,
    "timestamp with time zone": _bin_timestamptz,
})


def encode_binary(t: SqlType, value: Any) -> bytes:
    """PostgreSQL binary (send) form of one non-NULL value of type `t` (resolve
    `codec(t.oid, BINARY)` once instead where one type has many values)."""
    return _TABLE[t.base.array_oid if t.is_array else t.base.oid].encode(t, value)
