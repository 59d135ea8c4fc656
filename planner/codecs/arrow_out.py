"""Whole Arrow columns to their text or binary wire form, without a Python call per value.

Pure: no I/O. See planner/codecs/__init__.py for the Python value of each type.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from planner.codecs.base import STRING_TYPES, UNIX_TO_PG_DAYS, UNIX_TO_PG_US, US_PER_DAY
from planner.codecs.binary_out import NUMERIC_NEG, NUMERIC_POS
from planner.codecs.registry import BINARY, CODECS, TEXT, TEXT_ONLY, register
from planner.codecs.text_out import date_text_bc, timestamp_text_us
from planner.types import BY_NAME, SqlType

_B_TRUE = pa.scalar(b"t", pa.binary())
_B_FALSE = pa.scalar(b"f", pa.binary())
_B_EMPTY = pa.scalar(b"", pa.binary())
_INT_NAMES = frozenset(("smallint", "integer", "bigint", "oid"))
# date32 days and microseconds of 0001-01-01 and 9999-12-31 since 1970: the
# range where Arrow's ISO casts agree with PostgreSQL (no BC, 4-digit years).
_MIN_DAY, _MAX_DAY = -719162, 2932896
_MIN_US, _MAX_US = _MIN_DAY * US_PER_DAY, (_MAX_DAY + 1) * US_PER_DAY - 1


def _chunks(arr: pa.Array | pa.ChunkedArray) -> list[pa.Array]:
    return list(arr.chunks) if isinstance(arr, pa.ChunkedArray) else [arr]


def combine(parts: list[pa.Array]) -> pa.Array:
    parts = [p if p.type == pa.binary() else p.cast(pa.binary()) for p in parts]
    if not parts:
        return pa.array([], pa.binary())
    return parts[0] if len(parts) == 1 else pa.concat_arrays(parts)


def _text_enc(t: SqlType) -> Callable[[SqlType, Any], bytes]:
    """The per-value text encoder of `t`, for the values no kernel takes (looked up once)."""
    return CODECS[TEXT][t.oid].encode


def _binary_enc(t: SqlType) -> Callable[[SqlType, Any], bytes]:
    return CODECS[BINARY][t.oid].encode


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


def valid_np(a: pa.Array) -> np.ndarray:
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


def offsets_data(a: pa.Array) -> tuple[np.ndarray, np.ndarray]:
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


def as_binary(a: pa.Array) -> pa.Array:
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
    res = as_binary(pc.cast(a, pa.string()))
    vals = np.abs(_values_np(a))
    lo, hi = (np.float32(1e-4), np.float32(1e6)) if is4 else (1e-4, 1e15)
    # Same shortest digits as PostgreSQL (checked), but Arrow switches to
    # exponent form by its own rules: keep only rows PostgreSQL prints fixed
    # and Arrow printed without an exponent.
    ok = ((vals >= lo) & (vals < hi)) | (vals == 0)
    ok &= ~pc.match_substring(res, "e").fill_null(False).to_numpy(zero_copy_only=False)
    bad = ~ok & valid_np(a)
    return _patch(res, a, bad, _text_enc(t), t)


def _numeric_text_chunk(t: SqlType, a: pa.Array) -> pa.Array | None:
    scale = a.type.scale
    fixed = t.fixed_scale
    if fixed is not None and scale != fixed:
        if scale > fixed or a.type.precision + fixed - scale > 38:
            return None
        a = pc.cast(a, pa.decimal128(a.type.precision + fixed - scale, fixed))
    res = pc.cast(a, pa.string())
    # Arrow writes small magnitudes (and zero) in scientific notation.
    sci = pc.match_substring(res, "E")
    if fixed is None and scale > 0:
        res = _strip_fraction(res)
    res = as_binary(res)
    if sci.true_count:
        res = _patch(res, a, sci.fill_null(False).to_numpy(zero_copy_only=False),
                     _text_enc(t), t)
    return res


def _bytea_hex_chunk(a: pa.Array) -> pa.Array | None:
    off, data = offsets_data(a)
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
        return _per_value(_text_enc(t), t, a)
    if name == "boolean" and pa.types.is_boolean(ty):
        return pc.if_else(a, _B_TRUE, _B_FALSE)
    if name in _INT_NAMES and pa.types.is_integer(ty):
        return as_binary(pc.cast(a, pa.string()))
    if name in ("real", "double precision") and pa.types.is_floating(ty):
        return _float_text_chunk(t, a)
    if name == "numeric" and t.per_value_scale and _is_str(ty):
        return as_binary(a)  # PostgreSQL's text of each value already (planner.pg_numeric)
    if name == "numeric" and pa.types.is_decimal(ty):
        res = _numeric_text_chunk(t, a)
        if res is not None:
            return res
    if name in STRING_TYPES and _is_str(ty):
        if name == "character" and t.max_length is not None:
            a = pc.utf8_rpad(a, width=t.max_length, padding=" ")
        return as_binary(a)
    if name == "bytea" and (pa.types.is_binary(ty) or pa.types.is_large_binary(ty)):
        res = _bytea_hex_chunk(a)
        if res is not None:
            return res
    if name == "date" and pa.types.is_date32(ty):
        days = _values_np(a.cast(pa.int32())).astype(np.int64)
        res = as_binary(pc.cast(a, pa.string()))
        bad = ((days < _MIN_DAY) | (days > _MAX_DAY)) & valid_np(a)
        return _patch_ints(res, days, bad, date_text_bc)
    if name == "time without time zone" and pa.types.is_time(ty):
        a = pc.cast(a, pa.time64("us"), safe=False)
        return as_binary(_strip_fraction(pc.cast(a, pa.string())))
    if name in ("timestamp without time zone", "timestamp with time zone") and \
            pa.types.is_timestamp(ty):
        tz = name == "timestamp with time zone"
        a = pc.cast(a, pa.timestamp("us"), safe=False)
        res = _strip_fraction(pc.cast(a, pa.string()))
        if tz:
            res = pc.binary_join_element_wise(res, pa.scalar("+00"), "")
        res = as_binary(res)
        us = _values_np(a.cast(pa.int64()))
        bad = ((us < _MIN_US) | (us > _MAX_US)) & valid_np(a)
        return _patch_ints(res, us, bad, lambda v: timestamp_text_us(int(v), tz))
    a = _normalize_temporal(a)
    return _per_value(_text_enc(t), t, a)


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
    off, data = offsets_data(filled)
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
    ) or t.display_scale is not None:
        return None
    n = len(a)
    raw = np.frombuffer(a.buffers()[1], dtype=np.int64, count=2 * n, offset=a.offset * 16)
    low, high = raw[0::2], raw[1::2]
    valid = valid_np(a)
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
    header["sign"] = np.where(neg & any_nonzero, NUMERIC_NEG, NUMERIC_POS)
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
        return _per_value(_binary_enc(t), t, a)
    if name == "boolean" and pa.types.is_boolean(ty):
        return _fixed_width(a, _values_np(a).astype(np.uint8), 1)
    if name in _NP_BIG and (pa.types.is_integer(ty) or pa.types.is_floating(ty)):
        dt = np.dtype(_NP_BIG[name])
        vals = _values_np(a)
        if dt.kind in "iu" and vals.size and (
            vals.min() < np.iinfo(dt).min or vals.max() > np.iinfo(dt).max
        ):
            # Out of range for the wire type: let the per-value path raise.
            return _per_value(_binary_enc(t), t, a)
        with np.errstate(over="ignore"):  # float64 -> float32 overflows to inf
            return _fixed_width(a, vals.astype(dt), dt.itemsize)
    if name == "numeric" and pa.types.is_decimal(ty):
        res = _numeric_binary_chunk(t, a)
        if res is not None:
            return res
    if name in STRING_TYPES and _is_str(ty):
        if name == "uuid":
            res = _uuid_binary_chunk(a)
            if res is not None:
                return res
        elif name == "jsonb":
            return as_binary(pc.binary_join_element_wise(pa.scalar("\x01"), a, ""))
        elif name == "character" and t.max_length is not None:
            return as_binary(pc.utf8_rpad(a, width=t.max_length, padding=" "))
        elif name != "interval":
            return as_binary(a)
    if name == "bytea" and (pa.types.is_binary(ty) or pa.types.is_large_binary(ty)):
        return as_binary(a)
    if name == "date" and pa.types.is_date32(ty):
        days = _values_np(a.cast(pa.int32())).astype(np.int64) - UNIX_TO_PG_DAYS
        return _fixed_width(a, days.astype(">i4"), 4)
    if name == "time without time zone" and pa.types.is_time(ty):
        us = _values_np(pc.cast(a, pa.time64("us"), safe=False).cast(pa.int64()))
        return _fixed_width(a, us.astype(">i8"), 8)
    if name in ("timestamp without time zone", "timestamp with time zone") and \
            pa.types.is_timestamp(ty):
        us = _values_np(pc.cast(a, pa.timestamp("us"), safe=False).cast(pa.int64()))
        return _fixed_width(a, (us - UNIX_TO_PG_US).astype(">i8"), 8)
    a = _normalize_temporal(a)
    return _per_value(_binary_enc(t), t, a)


def encode_text_arrow(t: SqlType, arr: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Text form of every value of a column, as an Arrow binary array (NULLs
    kept) that `encode_rows` takes without a round trip through Python."""
    return combine([_text_chunk(t, c) for c in _chunks(arr)])


def encode_binary_arrow(t: SqlType, arr: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Binary form of every value of a column, as an Arrow binary array."""
    return combine([_binary_chunk(t, c) for c in _chunks(arr)])


def encode_text_column(t: SqlType, arr: pa.Array | pa.ChunkedArray) -> list[bytes | None]:
    """Text form of every value of a column; equal to `encode_text` per value."""
    return encode_text_arrow(t, arr).to_pylist()


def encode_binary_column(t: SqlType, arr: pa.Array | pa.ChunkedArray) -> list[bytes | None]:
    """Binary form of every value of a column; equal to `encode_binary` per value."""
    return encode_binary_arrow(t, arr).to_pylist()


for _name in BY_NAME:
    for _array in (False, True):
        register(_name, TEXT, array=_array, encode_column=encode_text_arrow)
        if _name not in TEXT_ONLY:
            register(_name, BINARY, array=_array, encode_column=encode_binary_arrow)
register("record", TEXT, encode_column=encode_text_arrow)
