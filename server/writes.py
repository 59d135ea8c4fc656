"""INSERT, UPDATE and DELETE as updates: Arrow tables of (row, mz_timestamp, mz_diff).

A write never changes a file; it adds +1 rows for new values and -1 rows for
old ones. INSERT ... VALUES of literals and parameters is converted here, in
Python, so a one-row insert costs no Spark job; everything else (expressions,
INSERT ... SELECT, UPDATE and DELETE) is computed by Spark against the table
as of the latest timestamp, under the coordinator's write lock.
"""

from __future__ import annotations

import decimal
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from planner import statements as st
from planner.codecs.text_in import decode_text
from planner.codecs.text_out import encode_text
from planner.errors import (
    DATATYPE_MISMATCH,
    FEATURE_NOT_SUPPORTED,
    NOT_NULL_VIOLATION,
    NUMERIC_VALUE_OUT_OF_RANGE,
    STRING_DATA_RIGHT_TRUNCATION,
    SYNTAX_ERROR,
    UNDEFINED_COLUMN,
    UNDEFINED_TABLE,
    SqlError,
)
from planner.params import literal
from planner.parser import folded_name, parse_one, sql_type
from planner.sequences import nextval_literal, sequence_in_default
from planner.sql import dml
from planner.translate import SessionContext
from planner.types import SqlType
from server.catalog_items import Column, Item
from server.coordinator import Coordinator, Overlay
from server.sequences import NEXTVAL, NextValue, check_identity_value, is_default
from spark_backend.schema import DIFF, TS, arrow_type, physical, storage_arrow_schema


@dataclass
class WriteResult:
    item: Item
    updates: pa.Table  # storage schema, mz_timestamp still 0
    count: int
    returning: pa.Table | None = None


def target_columns(item: Item, columns: tuple[str, ...] | None) -> list[int]:
    """Positions of an INSERT's target columns, checked as PostgreSQL does."""
    if columns is None:
        return list(range(len(item.columns)))
    out = []
    for name in columns:
        idx = next((i for i, c in enumerate(item.columns) if c.name == name), None)
        if idx is None:
            raise SqlError(UNDEFINED_COLUMN, f'column "{name}" of relation "{item.name}" does not exist')
        if idx in out:
            raise SqlError("42701", f'column "{name}" specified more than once')
        out.append(idx)
    return out


# -- INSERT ... VALUES of constants, without Spark ----------------------------------

class NotConstant(Exception):
    """The expression needs Spark to evaluate."""


def constant_value(node: exp.Expression, t: SqlType, ctx: SessionContext,
                   params: dict[int, object], param_types: dict[int, SqlType]) -> object:
    """The value of a constant expression assigned to a column of type `t`."""
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Parameter):
        n = int(node.this.this)
        value = params.get(n)
        ptype = param_types.get(n)
        if value is None or ptype is None or ptype == t:
            return value
        # Re-read the value as the column's type from its PostgreSQL text form
        # (str() of a list, bytes or timedelta is not that form).
        return decode_text(t, encode_text(ptype, value))
    if isinstance(node, exp.Literal):
        if node.is_string:
            return decode_text(t, node.this.encode())
        return _number_for(node.this, t)
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        return _number_for("-" + node.this.this, t)
    if isinstance(node, exp.Boolean):
        if t.base.name == "boolean":
            return bool(node.this)
        if t.base.name in ("text", "character varying", "character"):
            return "true" if node.this else "false"
        raise SqlError(DATATYPE_MISMATCH, f"column is of type {t.display()} but expression is of type boolean")
    if isinstance(node, exp.Interval) and t.base.name == "interval":
        unit = node.args.get("unit")
        text = node.this.name + (f" {unit.name}" if unit is not None else "")
        return decode_text(t, text.encode())
    if isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal) and node.this.is_string \
            and sql_type(node.to) == t:
        return decode_text(t, node.this.this.encode())
    raise NotConstant


_INTS = {"smallint": (-(2**15), 2**15 - 1), "integer": (-(2**31), 2**31 - 1),
         "bigint": (-(2**63), 2**63 - 1)}


def _number_for(text: str, t: SqlType) -> object:
    name = t.base.name
    if name in _INTS:
        try:
            value = int(text)
        except ValueError:
            # PostgreSQL rounds a numeric assigned to an integer column.
            value = int(decimal.Decimal(text).to_integral_value(decimal.ROUND_HALF_UP))
        lo, hi = _INTS[name]
        if not lo <= value <= hi:
            raise SqlError(NUMERIC_VALUE_OUT_OF_RANGE, f"{name} out of range")
        return value
    if name in ("real", "double precision"):
        return float(text)
    if name == "numeric":
        return decimal.Decimal(text)
    if name in ("text", "character varying", "character"):
        return text
    raise SqlError(DATATYPE_MISMATCH,
                   f"column is of type {t.display()} but expression is of type "
                   f"{'integer' if text.lstrip('-').isdigit() else 'numeric'}")


def returning_columns(item: Item, returning: Sequence[exp.Expression], verb: str = "INSERT",
                      table_alias: str | None = None) -> list[tuple[str, int]]:
    """RETURNING's output: (name, table column position) per output column.

    Column names (optionally qualified by the table, or by its alias where the statement
    gives one: `INSERT INTO t AS x … RETURNING x.id`), renamed with AS, and `*`; anything
    else is ReturningExpression (server.returning runs a query over the written rows)."""
    out: list[tuple[str, int]] = []
    qualifier = (table_alias or item.name).lower()
    for node in returning:
        alias = None
        if isinstance(node, exp.Alias):
            alias, node = node.alias, node.this
        if isinstance(node, exp.Column) and node.table and node.table.lower() != qualifier:
            hint = f'Perhaps you meant to reference the table alias "{table_alias}".' if table_alias and \
                node.table.lower() == item.name.lower() else None
            raise SqlError(UNDEFINED_TABLE, f'{"invalid reference to" if hint else "missing"} FROM-clause entry for '
                                            f'table "{node.table}"', hint=hint)
        if isinstance(node, exp.Star) or isinstance(node, exp.Column) and isinstance(node.this, exp.Star):
            out += [(c.name, i) for i, c in enumerate(item.columns)]
            continue
        if isinstance(node, exp.Column):
            name = folded_name(node)
            pos = next((i for i, c in enumerate(item.columns) if c.name == name), None)
            if pos is None:
                raise SqlError(UNDEFINED_COLUMN, f'column "{name}" does not exist')
            out.append((alias or name, pos))
            continue
        raise ReturningExpression(FEATURE_NOT_SUPPORTED, f"{verb} ... RETURNING takes column names and *, not an "
                                                     f"expression such as {node.sql('postgres')}")
    return out


class ReturningExpression(SqlError):
    """A RETURNING list with more than columns (server.returning computes it by a query)."""


def returned_rows(updates: pa.Table, columns: list[tuple[str, int]]) -> pa.Table:
    """The written rows' RETURNING columns, from the updates as stored (after rounding
    and padding, as PostgreSQL returns them)."""
    table = updates.select([physical(pos) for _, pos in columns])
    return table.rename_columns([f"c{i}" for i in range(len(columns))])


def default_values(item: Item, given: list[int], ctx: SessionContext) -> tuple[dict[int, object], dict[int, str]]:
    """The DEFAULT of each column not in `given`, for a whole statement: the constant ones'
    values, and the SQL of the others (now(), ...) for one evaluation in Spark, as
    PostgreSQL evaluates them once per statement too."""
    values: dict[int, object] = {}
    computed: dict[int, str] = {}
    for pos, column in enumerate(item.columns):
        if pos in given or not column.has_default:
            continue
        if from_sequence(column):
            values[pos] = NEXTVAL  # one value per row, from the sequence (server.sequences)
            continue
        default = parse_one(f"SELECT {column.default}").statement.ast.expressions[0]
        try:
            values[pos] = constant_value(default, column.type, ctx, {}, {})
        except NotConstant:
            computed[pos] = f"CAST(({column.default}) AS {column.type.display()})"
    return values, computed


def is_default_values(stmt: st.Insert) -> bool:
    """INSERT … DEFAULT VALUES (its source is one row of no values)."""
    source = stmt.source
    return isinstance(source, exp.Values) and len(source.expressions) == 1 and not source.expressions[0].expressions


def constant_rows(item: Item, stmt: st.Insert, ctx: SessionContext, params: dict[int, object],
                  param_types: dict[int, SqlType]) -> list[list[object]] | None:
    """The rows of INSERT ... VALUES when every value is a constant, else None."""
    if not isinstance(stmt.source, exp.Values):
        return None
    targets = target_columns(item, stmt.columns)
    rows = []
    defaults: tuple[dict[int, object], dict[int, str]] | None = None  # once, when a row needs one
    for tup in stmt.source.expressions:
        values = tup.expressions
        if len(values) > len(targets):
            raise SqlError(SYNTAX_ERROR, "INSERT has more expressions than target columns")
        if len(values) < len(targets) and stmt.columns is not None:
            raise SqlError(SYNTAX_ERROR, "INSERT has more target columns than expressions")
        row: list[object] = [None] * len(item.columns)
        assigned = set()
        for pos, node in zip(targets, values):
            column = item.columns[pos]
            if isinstance(node, exp.Var) and node.name.upper() == "DEFAULT" or isinstance(node, exp.Column) and node.name.upper() == "DEFAULT":
                continue
            if column.identity is not None:
                check_identity_value(column, stmt.overriding)
                if stmt.overriding == "user":
                    continue  # the value is ignored: the sequence gives one
            called = nextval_literal(node)
            if called is not None:
                row[pos] = NextValue(called)  # drawn with the others (server.sequences)
                assigned.add(pos)
                continue
            try:
                row[pos] = constant_value(node, column.type, ctx, params, param_types)
            except NotConstant:
                return None
            except SqlError as err:
                if err.sqlstate == DATATYPE_MISMATCH:
                    err.message = f'column "{column.name}" {err.message[len("column "):]}' if err.message.startswith("column is") else err.message
                raise
            assigned.add(pos)
        for pos, column in enumerate(item.columns):
            if pos not in assigned and column.has_default:
                if defaults is None:
                    defaults = default_values(item, [], ctx)
                if pos in defaults[1]:
                    return None  # a default Spark computes (now(), ...): the Spark path
                row[pos] = defaults[0][pos]
        rows.append(row)
    return rows


def rows_to_updates(item: Item, rows: list[list[object]], diff: int = 1) -> pa.Table:
    types = item.column_types
    schema = storage_arrow_schema(types)
    columns = []
    for i, t in enumerate(types):
        values = []
        for r in rows:
            try:
                values.append(check_value(item, i, r[i]))
            except SqlError as err:
                if err.sqlstate == NOT_NULL_VIOLATION:
                    err.detail = failing_row(item, r)
                raise
        columns.append(column_array(values, arrow_type(t), item.columns[i].name))
    n = len(rows)
    columns.append(pa.array([0] * n, pa.int64()))
    columns.append(pa.array([diff] * n, pa.int64()))
    return pa.Table.from_arrays(columns, schema=schema)


def failing_row(item: Item, row: Sequence[object]) -> str:
    """PostgreSQL's detail for a row a constraint refuses."""
    shown = ", ".join("null" if v is None else encode_text(c.type, v).decode() for c, v in zip(item.columns, row))
    return f"Failing row contains ({shown})."


def column_array(values: list, typ: pa.DataType, name: str) -> pa.Array:
    """A column's values as Arrow; one its type cannot hold is 22003, naming the column."""
    try:
        return pa.array(values, typ)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
        raise SqlError(NUMERIC_VALUE_OUT_OF_RANGE, f'value out of range for column "{name}": {exc}') from exc


def check_value(item: Item, pos: int, value: object) -> object:
    """Enforce the column's type modifier and NOT NULL on one value."""
    column = item.columns[pos]
    t = column.type
    if value is None:
        if column.not_null:
            raise SqlError(NOT_NULL_VIOLATION,
                           f'null value in column "{column.name}" of relation "{item.name}" violates not-null constraint')
        return None
    if t.is_array:
        return value
    ps = t.precision_scale
    if ps is not None or t.base.name == "numeric":
        p, s = ps or (38, 10)
        d = value if isinstance(value, decimal.Decimal) else decimal.Decimal(str(value))
        if not d.is_finite():
            raise SqlError(NUMERIC_VALUE_OUT_OF_RANGE, f"cannot store {d} in a numeric column")
        # The default context has 28 digits: too few for a plain numeric's 38 (scale 10).
        d = d.quantize(decimal.Decimal(1).scaleb(-s), rounding=decimal.ROUND_HALF_UP,
                       context=decimal.Context(prec=max(p, d.adjusted() + 1) + s + 1))
        if d.adjusted() >= p - s:
            raise SqlError(
                NUMERIC_VALUE_OUT_OF_RANGE, "numeric field overflow",
                detail=f"A field with precision {p}, scale {s} must round to an absolute value "
                       f"less than 10^{p - s}.")
        stored, _ = t.stored_precision_scale or (p, s)
        if d.adjusted() >= stored - s:
            raise SqlError(
                NUMERIC_VALUE_OUT_OF_RANGE, "numeric field overflow",
                detail=f"sparkwire stores a numeric({p},{s}) in {stored} digits: its values must round "
                       f"to an absolute value less than 10^{stored - s}.")
        return d
    n = t.max_length
    if n is not None and isinstance(value, str):
        stripped = value.rstrip(" ")
        if len(value) > n and len(stripped) > n:
            raise SqlError(STRING_DATA_RIGHT_TRUNCATION, f"value too long for type {t.display()}")
        value = value[:n] if len(value) > n else value
        if t.base.name == "character":
            value = value.ljust(n)
    return value


# -- everything else, through Spark ---------------------------------------------------

def dml_targets(item: Item, positions: Sequence[int]) -> list[dml.Target]:
    """The columns at `positions` as the front end writes them (planner.sql.dml): a value
    for a type read from text here (`parsed_in_python`) is left as it comes."""
    primary = next((k.columns for k in item.keys if k.primary), ())
    return [dml.Target(item.columns[pos].name, item.columns[pos].type, cast=not parsed_in_python(item.columns[pos].type),
                       default=item.columns[pos].default, from_sequence=from_sequence(item.columns[pos]),
                       in_key=item.columns[pos].name in primary)
            for pos in positions]


def from_sequence(column: Column) -> bool:
    """Whether the column's DEFAULT is its sequence's next value (serial, identity)."""
    return column.identity is not None or sequence_in_default(column.default) is not None


def parsed_in_python(t: SqlType) -> bool:
    """Text Spark cannot cast to `t` as PostgreSQL would ('\\x..' bytea, '{..}' arrays)."""
    return t.is_array or t.base.name == "bytea"


def coerce_sql(item: Item, positions: list[int], source_sql: str, width: int,
               source_types: list[SqlType] | None = None) -> str:
    """Spark SQL casting a query's columns to the target columns' storage types."""
    inner = ", ".join(f"__v{i}" for i in range(width))
    by_pos = dict(zip(positions, range(width)))
    cols = []
    for pos, column in enumerate(item.columns):
        if pos in by_pos:
            value = f"__v{by_pos[pos]}"
            source = source_types[by_pos[pos]] if source_types else None
            if source is not None and source.spark == "STRING" and parsed_in_python(column.type):
                # Left as text: arrow_to_updates reads it with PostgreSQL's input syntax.
                cols.append(f"CAST({value} AS STRING) AS {physical(pos)}")
                continue
        elif from_sequence(column):
            value = "NULL"  # filled from the sequence with the rows (server.sequences)
        elif column.default is not None:
            value = parse_one(f"SELECT {column.default}").statement.ast.expressions[0].sql("spark")
        else:
            value = "NULL"
        cols.append(f"CAST({value} AS {column.type.spark}) AS {physical(pos)}")
    return f"SELECT {', '.join(cols)} FROM ({source_sql}) AS __src({inner})"


def arrow_to_updates(item: Item, table: pa.Table, diff: int, check: bool = True) -> pa.Table:
    """Spark's result (physical columns) as checked updates with `diff`."""
    types = item.column_types
    schema = storage_arrow_schema(types)
    columns = []
    for i, t in enumerate(types):
        col = table.column(i)
        if check:
            col = _checked_column(item, i, col)
        columns.append(col.cast(arrow_type(t)))
    n = table.num_rows
    columns.append(pa.array([0] * n, pa.int64()))
    columns.append(pa.array([diff] * n, pa.int64()))
    return pa.Table.from_arrays(columns, schema=schema)


_VALIDATED = {"uuid", "jsonb", "json", "interval", "character", "character varying"}


def _checked_column(item: Item, pos: int, col: pa.ChunkedArray) -> pa.ChunkedArray:
    column = item.columns[pos]
    t = column.type
    if column.not_null and col.null_count:
        raise SqlError(NOT_NULL_VIOLATION,
                       f'null value in column "{column.name}" of relation "{item.name}" violates not-null constraint')
    if pa.types.is_string(col.type) and parsed_in_python(t):
        values = [None if v is None else check_value(item, pos, decode_text(t, v.encode()))
                  for v in col.to_pylist()]
        return pa.chunked_array([pa.array(values, arrow_type(t))])
    if t.is_array or t.base.name not in _VALIDATED:
        return col
    if t.base.name in ("character", "character varying"):
        if t.max_length is None:
            return col
        longest = pc.max(pc.utf8_length(col)).as_py() or 0
        if longest <= t.max_length and t.base.name == "character varying":
            return col
    values = [None if v is None else check_value(item, pos, decode_text(t, v.encode()))
              for v in col.to_pylist()]
    return pa.chunked_array([pa.array(values, pa.string())])


def update_select(item: Item, stmt: st.Update) -> exp.Select:
    """SELECT old columns, new columns FROM t WHERE cond — one pass for UPDATE."""
    if stmt.from_ is not None:  # taken by the front end of our own (planner.sql.dml) when it covers the statement
        raise SqlError(FEATURE_NOT_SUPPORTED, "UPDATE ... FROM is not supported in this form of the statement")
    names = item.column_names
    assigned = {}
    for name, value in stmt.assignments:
        if name not in names:
            raise SqlError(UNDEFINED_COLUMN, f'column "{name}" of relation "{item.name}" does not exist')
        assigned[name] = value
    table = exp.Table(this=exp.to_identifier(item.name, quoted=True),
                      alias=exp.TableAlias(this=exp.to_identifier(stmt.alias)) if stmt.alias else None)
    old = [exp.alias_(exp.column(n, quoted=True), f"__old{i}") for i, n in enumerate(names)]
    for i, n in enumerate(names):
        value, t = assigned.get(n), item.columns[i].type
        if value is not None and is_default(value):  # a serial's next value is drawn later (fill_columns)
            column = item.columns[i]
            value = assigned[n] = (exp.column(n, quoted=True) if from_sequence(column) else exp.Null()
                                   if column.default is None else parse_one(f"SELECT {column.default}").statement.ast
                                   .expressions[0])
        if isinstance(value, exp.Literal) and value.is_string and parsed_in_python(t):
            assigned[n] = literal(decode_text(t, value.this.encode()), t)
    new = [exp.alias_(exp.Cast(this=assigned[n].copy(), to=exp.DataType.build(item.columns[i].type.spark, dialect="spark"))
                      if n in assigned else exp.column(n, quoted=True), f"__new{i}")
           for i, n in enumerate(names)]
    select = exp.select(*old, *new).from_(table)
    if stmt.where is not None:
        select = select.where(stmt.where.copy())
    return _with(select, stmt.with_)


def delete_select(item: Item, stmt: st.Delete) -> exp.Select:
    table = exp.Table(this=exp.to_identifier(item.name, quoted=True),
                      alias=exp.TableAlias(this=exp.to_identifier(stmt.alias)) if stmt.alias else None)
    select = exp.select(*[exp.alias_(exp.column(n, quoted=True), f"__old{i}")
                          for i, n in enumerate(item.column_names)]).from_(table)
    if stmt.where is not None:
        select = select.where(stmt.where.copy())
    return _with(select, stmt.with_)


def _with(select: exp.Select, with_: exp.With | None) -> exp.Select:
    """`select` reading the WITH list of the UPDATE or DELETE it computes."""
    if with_ is not None:
        select.set("with_", with_.copy())
    return select


def concat_updates(parts: list[pa.Table]) -> pa.Table:
    return pa.concat_tables(parts) if len(parts) > 1 else parts[0]


__all__ = ["DIFF", "TS", "Coordinator", "Overlay"]


# -- PostgreSQL text output, a column at a time -------------------------------------------

def text_columns_to_updates(item: Item, columns: Sequence[pa.Array | pa.ChunkedArray], rows: int,
                            diff: int = 1, decode: Callable[[int, bytes], object] | None = None) -> pa.Table:
    """Updates from PostgreSQL text output: one binary array per column of `item` (null for
    NULL), `rows` long. The result equals `rows_to_updates(item, ...)` of the values
    `decode(pos, raw)` reads (default: `decode_text` for the column's type); a column is
    converted by Arrow kernels when every value is in the form PostgreSQL's output functions
    print, and value by value otherwise, which raises the errors the values always raised."""
    out = [text_column(item, pos, col, decode) for pos, col in enumerate(columns)]
    out.append(pa.array(np.zeros(rows, np.int64)))
    out.append(pa.array(np.full(rows, diff, np.int64)))
    return pa.Table.from_arrays(out, schema=storage_arrow_schema(item.column_types))


def text_column(item: Item, pos: int, raw: pa.Array | pa.ChunkedArray,
                decode: Callable[[int, bytes], object] | None = None) -> pa.Array:
    """One column of `text_columns_to_updates`."""
    column = item.columns[pos]
    t = column.type
    if isinstance(raw, pa.ChunkedArray):
        raw = raw.combine_chunks()
    fast = None if t.is_array else _FAST_TEXT.get(t.base.name)
    if fast is not None and not (column.not_null and raw.null_count):
        try:
            got = fast(t, raw)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):  # not in the printed form
            got = None
        if got is not None:
            return got
    if decode is None:
        def decode(_pos: int, data: bytes) -> object:
            return decode_text(t, data)
    values = [check_value(item, pos, None if v is None else decode(pos, v)) for v in raw.to_pylist()]
    return column_array(values, arrow_type(t), column.name)


# Each returns the column as `arrow_type(t)` holds it, None when some value is not in the
# form the kernels read exactly as decode_text would (then it is read value by value).

_DAY_US = 86_400_000_000
_MIN_DAYS, _MAX_DAYS = -719_162, 2_932_896  # 0001-01-01 and 9999-12-31, from 1970-01-01
_TF = pa.array(["t", "f"])
_INFINITIES = pa.array(["Infinity", "-Infinity"])
_ZERO_TEXT = r"^-?0*\.?0*(?:[eE][+-]?[0-9]+)?$"
_UUID_TEXT = r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"


def _count(mask: pa.Array) -> int:
    return pc.sum(mask).as_py() or 0


def _utf8_text(raw: pa.Array) -> pa.Array:
    s = raw.cast(pa.string())  # ArrowInvalid on bad UTF-8: decode_text words that error
    if _count(pc.match_substring(s, "\x00")):
        raise pa.ArrowInvalid("NUL in text")
    return s


def _fast_text(t: SqlType, raw: pa.Array) -> pa.Array | None:
    s = _utf8_text(raw)
    n = t.max_length
    if n is None or not len(s) - s.null_count:
        return s
    lengths = pc.utf8_length(s)
    if t.base.name == "character":  # printed padded to its length: nothing to pad or cut
        return s if pc.min(lengths).as_py() == n == pc.max(lengths).as_py() else None
    return s if pc.max(lengths).as_py() <= n else None


def _fast_bool(t: SqlType, raw: pa.Array) -> pa.Array | None:
    s = raw.cast(pa.string())
    if _count(pc.is_in(s, value_set=_TF)) != len(s) - s.null_count:
        return None
    return pc.equal(s, "t")


def _fast_int(t: SqlType, raw: pa.Array) -> pa.Array | None:
    return pc.cast(raw.cast(pa.string()), arrow_type(t))


def _floats(s: pa.Array, x: pa.Array) -> bool:
    """Arrow read infinities and zeros only where decode_text would (it refuses overflow and
    underflow to them)."""
    if _count(pc.is_inf(x)) != _count(pc.is_in(s, value_set=_INFINITIES)):
        return False
    zeros = pc.equal(x, 0.0)
    return not _count(zeros) or pc.all(pc.match_substring_regex(pc.filter(s, zeros), _ZERO_TEXT)).as_py()


def _fast_float(t: SqlType, raw: pa.Array) -> pa.Array | None:
    s = raw.cast(pa.string())
    x = pc.cast(s, pa.float64())  # correctly rounded, as Python's float()
    if not _floats(s, x):
        return None
    if t.base.name == "double precision":
        return x
    x32 = pc.cast(x, pa.float32(), safe=False)  # round to nearest, as numpy's float32
    if _count(pc.is_inf(x32)) != _count(pc.is_inf(x)) or _count(pc.equal(x32, 0.0)) != _count(pc.equal(x, 0.0)):
        return None
    return x32


def _fast_numeric(t: SqlType, raw: pa.Array) -> pa.Array | None:
    # Refuses (ArrowInvalid) digits beyond the scale and precision: no rounding happens here.
    return pc.cast(raw.cast(pa.string()), arrow_type(t))


def _fast_date(t: SqlType, raw: pa.Array) -> pa.Array | None:
    d = pc.cast(raw.cast(pa.string()), pa.date32())
    lo, hi = pc.min_max(d.cast(pa.int32())).values()
    if lo.as_py() is not None and (lo.as_py() < _MIN_DAYS or hi.as_py() > _MAX_DAYS):
        return None
    return d


def _in_years(us: pa.Array) -> bool:
    lo, hi = pc.min_max(us.cast(pa.int64())).values()
    return lo.as_py() is None or (lo.as_py() >= _MIN_DAYS * _DAY_US and hi.as_py() < (_MAX_DAYS + 1) * _DAY_US)


def _fast_timestamp(t: SqlType, raw: pa.Array) -> pa.Array | None:
    # Naive text only for timestamp, an offset on every value for timestamptz (else ArrowInvalid).
    ts = pc.cast(raw.cast(pa.string()), arrow_type(t))
    return ts if _in_years(ts) else None


def _fast_time(t: SqlType, raw: pa.Array) -> pa.Array | None:
    ts = pc.cast(pc.binary_join_element_wise("1970-01-01 ", raw.cast(pa.string()), ""), pa.timestamp("us"))
    us = ts.cast(pa.int64())
    lo, hi = pc.min_max(us).values()
    if lo.as_py() is not None and (lo.as_py() < 0 or hi.as_py() >= _DAY_US):
        return None
    return us.cast(pa.time64("us"))


def _fast_uuid(t: SqlType, raw: pa.Array) -> pa.Array | None:
    s = raw.cast(pa.string())
    return s if _count(pc.match_substring_regex(s, _UUID_TEXT)) == len(s) - s.null_count else None


_HEX_NIBBLE = np.full(256, 255, dtype=np.uint8)
_HEX_NIBBLE[np.frombuffer(b"0123456789", np.uint8)] = np.arange(10)
_HEX_NIBBLE[np.frombuffer(b"abcdef", np.uint8)] = np.arange(10, 16)
_HEX_NIBBLE[np.frombuffer(b"ABCDEF", np.uint8)] = np.arange(10, 16)


def _fast_bytea(t: SqlType, raw: pa.Array) -> pa.Array | None:
    """bytea_output = hex: '\\x' and two hex digits a byte."""
    present = len(raw) - raw.null_count
    if _count(pc.starts_with(raw, "\\x")) != present:
        return None
    body = pc.binary_slice(raw, 2)
    if isinstance(body, pa.ChunkedArray):
        body = body.combine_chunks()
    body = pa.concat_arrays([body])  # offsets from 0, no slice offset
    lengths = pc.binary_length(body).fill_null(0).to_numpy(zero_copy_only=False)
    if (lengths & 1).any():
        return None
    offsets = np.frombuffer(body.buffers()[1], np.int32, len(body) + 1)
    data = body.buffers()[2]
    digits = np.frombuffer(data, np.uint8, offsets[-1]) if data is not None else np.zeros(0, np.uint8)
    nibbles = _HEX_NIBBLE[digits]
    if (nibbles == 255).any():
        return None
    out = (nibbles[0::2] << 4) | nibbles[1::2]
    validity = None if not body.null_count else pc.is_valid(body).buffers()[1]
    return pa.Array.from_buffers(pa.binary(), len(body),
                                 [validity, pa.py_buffer((offsets // 2).astype(np.int32)), pa.py_buffer(out)])


_FAST_TEXT: dict[str, Callable[[SqlType, pa.Array], pa.Array | None]] = {
    "boolean": _fast_bool,
    "smallint": _fast_int,
    "integer": _fast_int,
    "bigint": _fast_int,
    "real": _fast_float,
    "double precision": _fast_float,
    "numeric": _fast_numeric,
    "text": _fast_text,
    "character varying": _fast_text,
    "character": _fast_text,
    "uuid": _fast_uuid,
    "bytea": _fast_bytea,
    "date": _fast_date,
    "time without time zone": _fast_time,
    "timestamp without time zone": _fast_timestamp,
    "timestamp with time zone": _fast_timestamp,
}
