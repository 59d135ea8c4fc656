"""A subscription's output as Arrow tables: what its buffer holds and the wire encodes.

Every table holds the rows of one timestamp (or one progress row), in the output
columns `subscribe_format.plan_output` describes, named by position (c0, c1, ...):
relation columns may repeat a name. `mz_timestamp` is numeric, held as decimal(38, 0)
dictionary-encoded: a table's one timestamp is stored, and encoded for the wire, once.

Pure: Arrow in, Arrow out.
"""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pyarrow as pa

from server.subscribe_format import OutputPlan
from spark_backend import pylist

TS_VALUE = pa.decimal128(38, 0)
TS_TYPE = pa.dictionary(pa.int8(), TS_VALUE)


def _names(n: int) -> list[str]:
    return [f"c{i}" for i in range(n)]


def head_width(plan: OutputPlan) -> int:
    """Columns before the relation's: mz_timestamp, [mz_progressed,] mz_diff or mz_state."""
    return 3 if plan.progress else 2


def relation_positions(plan: OutputPlan) -> list[int | None]:
    """For each output column, the relation column it shows (None for the head columns)."""
    head: list[int | None] = [None] * head_width(plan)
    if plan.kind in ("diffs", "order_by"):
        return head + list(range(plan.relation_arity))
    values = list(plan.value_indexes)
    body = list(plan.key_indexes) + values + (values if plan.kind == "debezium" else [])
    return head + body


def _head(plan: OutputPlan, ts: int, n: int, progressed: bool) -> list[pa.Array]:
    stamp = pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int8)), pa.array([Decimal(ts)], TS_VALUE))
    cols: list[pa.Array] = [stamp]
    if plan.progress:
        cols.append(pa.repeat(pa.scalar(progressed, pa.bool_()), n))
    return cols


def progress_table(plan: OutputPlan, ts: int) -> pa.Table:
    """The row saying every update before `ts` has been sent."""
    rest = [pa.nulls(1) for _ in range(len(plan.names) - 2)]
    return pa.Table.from_arrays([*_head(plan, ts, 1, True), *rest], names=_names(len(plan.names)))


def updates_table(plan: OutputPlan, ts: int, data: pa.Table, diff: pa.Array | pa.ChunkedArray) -> pa.Table:
    """Plain diffs (or rows already in WITHIN TIMESTAMP ORDER BY order) of one timestamp,
    without a Python object per value: `data` holds the relation's columns."""
    n = data.num_rows
    cols = [*_head(plan, ts, n, False), diff.cast(pa.int64()), *data.columns]
    return pa.Table.from_arrays(cols, names=_names(len(cols)))


def rows_table(plan: OutputPlan, rows: list[tuple], relation_types: list[pa.DataType | None]) -> pa.Table:
    """Data rows of one timestamp (as `subscribe_format.format_timestamp` makes them) as a
    table. Relation columns take the Arrow type Spark gave them where known; a value that
    does not fit it (a wider decimal, say) lets Arrow choose."""
    positions = relation_positions(plan)
    width = head_width(plan)
    columns = pylist.columns(rows, len(rows[0])) if rows else [[] for _ in positions]
    arrays = _head(plan, rows[0][0] if rows else 0, len(rows), False)
    arrays.append(_array(list(columns[width - 1]),
                         pa.int64() if plan.kind in ("diffs", "order_by") else pa.string()))
    for values, pos in zip(columns[width:], positions[width:]):
        arrays.append(_array(list(values), relation_types[pos] if pos < len(relation_types) else None))
    return pa.Table.from_arrays(arrays, names=_names(len(arrays)))


def _array(values: list, type_: pa.DataType | None) -> pa.ChunkedArray:
    if type_ is not None:
        try:
            return pylist.array(values, type_)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            pass
    if any(isinstance(v, tuple) for v in values):
        values = [None if v is None else list(v) for v in values]
    return pylist.array(values)


def no_rows(width: int) -> pa.Table:
    """An empty result of `width` columns (FETCH 0, or a FETCH that found nothing)."""
    return pa.Table.from_arrays([pa.nulls(0) for _ in range(width)], names=_names(width))


def concat(tables: list[pa.Table]) -> pa.Table:
    """Several output tables as one: a FETCH returns them together. Column types may
    differ between them (a progress row's NULLs, a decimal's width); Arrow widens them."""
    if len(tables) == 1:
        return tables[0]
    return pa.concat_tables(tables, promote_options="permissive")


def python_rows(table: pa.Table) -> list[tuple]:
    return pylist.rows([pylist.values(c) for c in table.columns])
