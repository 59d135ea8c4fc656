"""Arrow to Python values and back, a slice at a time.

Arrow's conversions between its arrays and Python objects hold the GIL for their whole
call: converting a million values at once is one ~100-300 ms stretch in which no other
thread runs, the event loop included. So does turning rows into columns with one
`zip(*rows)` (a million rows: over a second, measured during a join's snapshot).
Converting SLICE values at a time lets the interpreter switch threads between slices,
so a worker thread building a join's state does not stall every other session.
"""

from __future__ import annotations

import pyarrow as pa

SLICE = 16_384


def values(column: pa.Array | pa.ChunkedArray) -> list:
    """A column's Python values (arrays as lists)."""
    out: list = []
    for start in range(0, len(column), SLICE):
        out.extend(column.slice(start, SLICE).to_pylist())
    return out


def dicts(table: pa.Table) -> list[dict]:
    """A table's rows as dicts of column name → value."""
    out: list[dict] = []
    for start in range(0, table.num_rows, SLICE):
        out.extend(table.slice(start, SLICE).to_pylist())
    return out


def array(items: list, type_: pa.DataType | None = None) -> pa.ChunkedArray:
    """Python values as an Arrow column (of `type_`, or the type Arrow infers)."""
    parts = [pa.array(items[i:i + SLICE], type_) for i in range(0, len(items), SLICE)]
    if not parts:
        return pa.chunked_array([pa.array([], type_ or pa.null())])
    if type_ is None and len({p.type for p in parts}) > 1:
        return pa.chunked_array([pa.array(items)])  # slices inferred differently: infer once
    return pa.chunked_array(parts)


def columns(rows: list[tuple], width: int) -> list[list]:
    """`rows` (each `width` values) as `width` column lists."""
    out: list[list] = [[] for _ in range(width)]
    for start in range(0, len(rows), SLICE):
        extend_columns(out, rows[start:start + SLICE])
    return out


def extend_columns(columns: list[list], rows: list[tuple]) -> None:
    """Append `rows` (at most a slice of them) to `columns`, one list per column."""
    for column, part in zip(columns, zip(*rows)):
        column.extend(part)


def rows(columns: list[list]) -> list[tuple]:
    """Column lists of equal length as row tuples."""
    out: list[tuple] = []
    n = len(columns[0]) if columns else 0
    for start in range(0, n, SLICE):
        out.extend(zip(*(c[start:start + SLICE] for c in columns)))
    return out
