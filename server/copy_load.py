"""Rows parsed from COPY ... FROM STDIN → a table's updates, a column at a time.

A column is converted by Arrow's cast where that accepts only what PostgreSQL's input
function accepts and gives the same value (plain integers, floats, decimals, ISO dates and
timestamps with a zone offset, text); anything Arrow refuses — other spellings, values out
of range, types it does not know — goes value by value through the column type's own
input function, which gives PostgreSQL's result or its error. Errors carry PostgreSQL's
CONTEXT: `COPY t, line 3, column amount: "x"`.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from planner.codecs.registry import TEXT, codec
from planner.errors import NOT_NULL_VIOLATION, SqlError
from planner.types import SqlType
from server.catalog_items import Item
from server.copy_format import ParsedCopy
from server.writes import check_value, column_array
from spark_backend.schema import arrow_type, storage_arrow_schema

# PostgreSQL types whose values Arrow parses exactly as PostgreSQL would, when it parses
# them at all (a type modifier, such as varchar(n), needs checking value by value).
_CASTABLE = {"smallint", "integer", "bigint", "real", "double precision", "numeric", "boolean", "date",
             "timestamp with time zone", "text"}


def updates(item: Item, positions: list[int], parsed: ParsedCopy, defaults: dict[int, object],
            context: str, generated: dict[int, list[int]] | None = None) -> pa.Table:
    """The storage updates (+1 each) of the COPY's rows; `positions` are the table columns the
    data's fields go to, `defaults` the values of the others, but for `generated`: those
    drawn from sequences, a value per row."""
    n = parsed.num_rows
    columns: dict[int, pa.Array] = {pos: pa.array(values, arrow_type(item.columns[pos].type))
                                    for pos, values in (generated or {}).items()}
    for field_index, pos in enumerate(positions):
        columns[pos] = _column(item, pos, parsed.columns[field_index], parsed, context)
    first_null: tuple[int, str] | None = None  # (row, column): PostgreSQL stops at the first row
    for pos, column in enumerate(item.columns):
        if pos not in columns:
            value = check_value(item, pos, defaults.get(pos)) if column.not_null else defaults.get(pos)
            columns[pos] = column_array([value] * n, arrow_type(column.type), column.name)
        elif column.not_null and columns[pos].null_count:
            row = pc.index(pc.is_null(columns[pos]), True).as_py()
            if first_null is None or row < first_null[0]:
                first_null = (row, column.name)
    if first_null is not None:
        row, name = first_null
        where = f"{context}, line {parsed.line(row)}"
        if parsed.text(row) is not None:
            where += f': "{parsed.text(row)}"'
        raise SqlError(NOT_NULL_VIOLATION, f'null value in column "{name}" of relation "{item.name}" '
                                           "violates not-null constraint", where=where)
    types = item.column_types
    arrays = [columns[pos] for pos in range(len(types))]
    arrays += [pa.array([0] * n, pa.int64()), pa.array([1] * n, pa.int64())]
    return pa.Table.from_arrays(arrays, schema=storage_arrow_schema(types))


def _column(item: Item, pos: int, texts: pa.Array, parsed: ParsedCopy, context: str) -> pa.Array:
    column = item.columns[pos]
    t = column.type
    target = arrow_type(t)
    if _castable(t):
        try:
            return pc.cast(texts, target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass  # some value needs PostgreSQL's own input function: it says which
    values = []
    decode = codec(t.oid, TEXT).decode  # resolved once for the column
    for row, text in enumerate(texts.to_pylist()):
        if text is None:
            values.append(None)
            continue
        try:
            values.append(check_value(item, pos, decode(t, text.encode("utf-8"))))
        except SqlError as err:
            err.where = f'{context}, line {parsed.line(row)}, column {column.name}: "{text}"'
            raise
    return column_array(values, target, column.name)


def _castable(t: SqlType) -> bool:
    # A modifier Arrow would not apply as PostgreSQL does (timestamptz(3) rounds) rules the
    # cast out; numeric(p,s) is the exception: its Arrow type has the same p and s.
    return not t.is_array and t.base.name in _CASTABLE and (t.base.name == "numeric" or t.typmod < 0)
