"""DataRow messages assembled from encoded columns.

Pure: no I/O. See planner/codecs/__init__.py for the Python value of each type.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from planner.codecs.arrow_out import as_binary, combine, offsets_data, valid_np
from planner.codecs.base import Column, pack_i16, pack_i32
from planner.codecs.registry import BINARY, TEXT, codec
from planner.types import SqlType

# Below this many rows the Python loop beats Arrow's fixed call overhead.
_SMALL_ROWS = 256
# Arrow binary offsets are int32: join at most this many bytes at a time.
_JOIN_LIMIT = 1 << 30
_NULL_FIELD = b"\xff\xff\xff\xff"


def _rows_python(columns: Sequence[Sequence[bytes | None]], nrows: int) -> bytes:
    ncols = len(columns)
    count = pack_i16(ncols)
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
                fields.append(pack_i32(len(v)))
                fields.append(v)
                size += len(v)
        append(b"D" + pack_i32(size) + count)
        out.extend(fields)
    return b"".join(out)


def _as_arrow_column(col: Column) -> pa.Array:
    if isinstance(col, pa.ChunkedArray):
        col = combine(list(col.chunks))
    if isinstance(col, pa.Array):
        return col if col.type == pa.binary() else as_binary(col)
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
    header = np.empty(n, dtype=[("tag", "u1"), ("len", ">i4"), ("ncols", ">i2")])
    header["tag"] = ord("D")
    header["ncols"] = len(arrays)
    # Each row is the header, then each column's length and value. Runs of parts whose width
    # is the same in every row (the header, lengths, a SUBSCRIBE's mz_timestamp and mz_diff,
    # binary integers and floats) are laid side by side in one fixed-width part by numpy, so
    # Arrow's join (whose cost grows with the number of parts) sees only the rest.
    parts: list[np.ndarray | pa.Array] = [header.view(np.uint8).reshape(n, 7)]
    for a in arrays:
        off, data = offsets_data(a)
        lens = np.diff(off)
        if a.null_count:
            lens = np.where(valid_np(a), lens, -1)
            row_len += np.maximum(lens, 0)
        else:
            row_len += lens
        parts.append(lens.astype(">i4").view(np.uint8).reshape(n, 4))
        width = int(lens[0])
        if not a.null_count and (lens == width).all():
            parts.append(data.reshape(n, width))
        else:
            parts.append(a)
    header["len"] = row_len  # 4 (length) + 2 (count) + the fields: all but the tag
    parts = _merge_fixed(parts, n)
    if len(parts) == 1:
        return parts[0].tobytes()
    arrow_parts = [_fixed_arrow(p.reshape(-1), p.shape[1], n) if isinstance(p, np.ndarray) else p
                   for p in parts]
    # Join in pieces so no piece overflows Arrow's int32 offsets.
    ends = np.cumsum(row_len + 1)
    out: list[bytes] = []
    start = 0
    while start < n:
        done = int(ends[start - 1]) if start else 0
        stop = max(int(np.searchsorted(ends, done + _JOIN_LIMIT, side="right")), start + 1)
        sliced = [p.slice(start, stop - start) for p in arrow_parts]
        joined = pc.binary_join_element_wise(
            *sliced, b"", null_handling="replace", null_replacement=b""
        )
        off, data = offsets_data(joined)
        out.append(data.tobytes())
        start = stop
    return out[0] if len(out) == 1 else b"".join(out)


def _merge_fixed(parts: list[np.ndarray | pa.Array], n: int) -> list[np.ndarray | pa.Array]:
    """Neighbouring fixed-width parts (n × width byte matrices) as one matrix each."""
    out: list[np.ndarray | pa.Array] = []
    run: list[np.ndarray] = []
    for part in [*parts, None]:
        if isinstance(part, np.ndarray):
            if part.shape[1]:
                run.append(part)
            continue
        if run:
            out.append(_side_by_side(run, n))
            run = []
        if part is not None:
            out.append(part)
    return out


def _side_by_side(matrices: list[np.ndarray], n: int) -> np.ndarray:
    """n × width byte matrices as one, each row their rows in turn. Copied field by field of a
    record type (one memcpy per row and field), several times faster than numpy's
    concatenate of narrow byte columns."""
    if len(matrices) == 1:
        return matrices[0]
    record = np.dtype([(f"f{i}", f"V{m.shape[1]}") for i, m in enumerate(matrices)])
    out = np.empty(n, record)
    for i, m in enumerate(matrices):
        out[f"f{i}"] = np.ascontiguousarray(m).view(f"V{m.shape[1]}").reshape(n)
    return out.view(np.uint8).reshape(n, record.itemsize)


def column_formats(formats: Sequence[int], width: int) -> tuple[int, ...]:
    """Each of `width` result columns' format, 1 (binary) or 0 (text), from a Bind's list of
    result format codes: none means all text, one applies to every column. A code other
    than 1 is text, as results have always been sent."""
    if not formats:
        return (0,) * width
    if len(formats) == 1:
        return (1 if formats[0] == 1 else 0,) * width
    return tuple(1 if formats[i] == 1 else 0 for i in range(width))


def encode_table(table: pa.Table, types: Sequence[SqlType], formats: Sequence[int]) -> bytes:
    """DataRows of every row of `table`: column i of type types[i] in format formats[i]
    (as `column_formats` gives them)."""
    columns = [codec(t.oid, BINARY if f == 1 else TEXT).encode_column(t, table.column(i))
               for i, (t, f) in enumerate(zip(types, formats))]
    return encode_rows(columns, table.num_rows)


@dataclass(frozen=True)
class EncodedRows:
    """A result table's DataRows, encoded before it was sent (a SUBSCRIBE cursor's next
    FETCH, see server/fetch_ahead): pieces that follow the table's rows in order, each
    (its number of rows, its DataRows in `formats`, or None where it is not encoded yet)."""

    formats: tuple[int, ...]
    pieces: tuple[tuple[int, bytes | None], ...]
