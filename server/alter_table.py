"""ALTER TABLE (and ALTER ... RENAME): a table's shape changed as one catalog operation.

Design. The catalog is a log of operations, and a table's rows live in immutable files of
its collection, each column stored by position (c0, c1, ...). Two kinds of change:

- Metadata only (RENAME, SET/DROP DEFAULT, SET/DROP NOT NULL, ADD/DROP CONSTRAINT): one
  `AlterItem` replacing the table's item, which the commit checks against the rows (NOT
  NULL, keys) under the write lock. In a transaction block it is staged like CREATE INDEX
  and committed with the block.
- Layout (ADD COLUMN, DROP COLUMN): a rewrite. Under the write lock, the table's current
  rows are read, given their new columns (the default as it is now, or NULL) or stripped
  of the dropped ones, checked (NOT NULL, keys), and committed in one log record with
  `DropCollection`, `CreateCollection` (the same id) and the `AlterItem`: the store drops
  the old files and adopts the new one atomically, so a crash at any step leaves the table
  as it was or as altered, never between; every file of a collection keeps one layout, so
  no reader needs to know a table was altered, and replay of old logs is unchanged (no new
  record kind). The price: the rewrite costs a read and a write of the table (PostgreSQL
  too rewrites for a volatile default), history before the ALTER is gone (AS OF earlier
  fails as after compaction), and a SUBSCRIBE reading the table ends (its result type
  would change). A column mapping applied at read time would avoid the rewrite but would
  have to be known to every reader and writer of storage (Spark reads, compaction, key
  counts, subscriptions, COPY, Kafka), so it was not chosen. Rewrites, and ADD CHECK (which
  reads the rows too), are refused inside a transaction block (25001), as CREATE INDEX
  CONCURRENTLY and source DDL are: the block's reads and writes would need the new layout
  before its COMMIT made it.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from planner import alter_syntax as alt
from planner import sequences as seq
from planner import table_checks
from planner.errors import (
    DUPLICATE_TABLE,
    FEATURE_NOT_SUPPORTED,
    UNDEFINED_TABLE,
    WRONG_OBJECT_TYPE,
    SqlError,
)
from planner.parser import parse_one
from server import alter_checks, check_constraints, foreign_keys, sequences, writes
from server.alter_plan import DUPLICATE_COLUMN, UNDEFINED_COLUMN, AlterPlan, NewColumn, plan_alter
from server.catalog import Catalog
from server.catalog_items import Item
from server.catalog_ops import AlterItem, CatalogOp, CreateCollection, DropCollection, DropItem
from server.outcome import CommandDone, Outcome
from server.statement_context import StatementContext
from server.unique_keys import duplicate_in
from spark_backend.schema import DIFF, TS, arrow_type, physical

# Defaults PostgreSQL computes once per row when ADD COLUMN fills existing rows; sparkwire
# computes a default once, so it refuses these rather than give every row the same value.
_VOLATILE_CALL = re.compile(r"(?i)\b(random|clock_timestamp|timeofday|gen_random_uuid|nextval|uuid_generate_v4)\s*\(")


async def alter_table(session: StatementContext, stmt: alt.AlterTable, params, ptypes) -> Outcome:
    notices: list[tuple[str, str]] = []
    locked = [a for a in stmt.actions if _reads_rows(a)]
    if not locked:
        def plan(catalog: Catalog) -> list[CatalogOp]:
            table = _table(catalog, stmt.table, stmt.if_exists, notices)
            if table is None:
                return []
            planned = plan_alter(catalog, table, stmt.actions)
            notices.extend(planned.notices)
            return _ops(planned, catalog)

        await session.table_ddl(plan)
        return CommandDone("ALTER TABLE", notices=notices)

    session.no_ddl_in_transaction({alt.AddColumn: "ALTER TABLE ... ADD COLUMN", alt.DropColumn: "ALTER TABLE ... DROP "
                                   "COLUMN", alt.AddCheck: "ALTER TABLE ... ADD CHECK"}[type(locked[0])])
    coord = session.coord
    async with coord.write_lock:
        table = _table(coord.catalog, stmt.table, stmt.if_exists, notices)
        if table is None:
            return CommandDone("ALTER TABLE", notices=notices)
        planned = plan_alter(coord.catalog, table, stmt.actions)
        notices.extend(planned.notices)
        if not planned.rewrite:  # ADD CHECK, or every ADD/DROP skipped (IF [NOT] EXISTS)
            await _validate_checks(coord, planned, None)
            await coord.commit(_ops(planned, coord.catalog), {})
            return CommandDone("ALTER TABLE", notices=notices)
        current = await coord.current_rows(table)
        new = {pos: source for pos, source in enumerate(planned.sources) if isinstance(source, NewColumn)}
        if any(source.sequence is not None for source in new.values()):
            current = _one_line_per_row(current)
        fills = {pos: _drawn(planned, source.sequence, current.num_rows) if source.sequence is not None
                 else await _default_value(session, planned.table, pos, source.default)
                 for pos, source in new.items()}
        rows = _rewritten(current, planned, fills)
        _check_rows(planned.table, table, rows)
        await _validate_checks(coord, planned, rows)
        await coord.commit(_ops(planned, coord.catalog), {table.id: rows})
    return CommandDone("ALTER TABLE", notices=notices)


def _reads_rows(action: alt.Action) -> bool:
    """Whether an action reads the table's rows under the write lock (a rewrite, or a CHECK
    checked against them), which a transaction block cannot stage."""
    return isinstance(action, (alt.AddColumn, alt.DropColumn)) or (isinstance(action, alt.AddCheck)
                                                                   and action.check.validate)


def _table(catalog: Catalog, name: str, if_exists: bool, notices: list) -> Item | None:
    """The table ALTER TABLE changes (None: it does not exist, and IF EXISTS said skip)."""
    item = catalog.get(name)
    if item is None:
        if if_exists:
            notices.append(("NOTICE", f'relation "{name}" does not exist, skipping'))
            return None
        raise SqlError(UNDEFINED_TABLE, f'relation "{name}" does not exist')
    if item.kind != "table":
        raise SqlError(WRONG_OBJECT_TYPE, f'"{name}" is not a table')
    if item.source_id is not None:
        raise SqlError(WRONG_OBJECT_TYPE, f'cannot alter table "{name}": it is fed by a source, which decides '
                                          "its columns and rows",
                       hint="ALTER TABLE ... RENAME TO is allowed on it.")
    return item


def _ops(planned: AlterPlan, catalog: Catalog) -> list[CatalogOp]:
    ops: list[CatalogOp] = [DropItem(v.id) for v in reversed(planned.dropped_views)]
    ops += [op for made in planned.created for op in catalog.plan_create(made)]
    ops += [DropItem(s.id) for s in planned.dropped]
    ops += [AlterItem(v) for v in planned.pinned_views]
    if planned.rewrite:
        ops += [DropCollection(planned.table.id), CreateCollection(planned.table.id)]
    return [*ops, AlterItem(planned.table)]


async def _default_value(session: StatementContext, table: Item, pos: int, default: exp.Expression | None) -> object:
    """The value ADD COLUMN gives existing rows: its default, computed now (or NULL)."""
    if default is None:
        return None
    column = table.columns[pos]
    volatile = _VOLATILE_CALL.search(default.sql("postgres"))
    if volatile is not None:
        volatile = volatile.group(1).lower()
        raise SqlError(FEATURE_NOT_SUPPORTED, f"ADD COLUMN with a volatile default ({volatile}()) is not supported",
                       hint="Add the column without a default, fill it with UPDATE, then SET DEFAULT.")
    if isinstance(default, (exp.Literal, exp.Null, exp.Boolean, exp.Neg, exp.Cast, exp.Interval)):
        try:
            return writes.constant_value(default, column.type, session.context(), {}, {})
        except SqlError:
            if not isinstance(default, exp.Cast):
                raise
    coord = session.coord
    query = parse_one(f"SELECT CAST(({column.default}) AS {column.type.display()})").statement.ast
    spark_sql, views = coord.plan_query(query, session.context(), catalog=coord.catalog)
    result = await coord.query(spark_sql, views, coord.read_ts())
    return result.table.column(0)[0].as_py()


def _one_line_per_row(rows: pa.Table) -> pa.Table:
    """`rows` with each copy of a row on its own line (diff 1), in the order they were
    written: each takes its own value of a sequence."""
    rows = rows.take(pc.sort_indices(rows, [(TS, "ascending")]))
    copies = rows.column(DIFF).to_numpy()
    if (copies == 1).all():
        return rows
    rows = rows.take(np.repeat(np.arange(len(copies)), copies))
    return rows.set_column(rows.schema.get_field_index(DIFF), DIFF, pa.repeat(pa.scalar(1, rows.schema.field(DIFF).type),
                                                                             rows.num_rows))


def _drawn(planned: AlterPlan, sequence_id: str, count: int) -> pa.Array:
    """`count` values of the new sequence `sequence_id`, as nextval would give them one by
    one, and the sequence among `planned.created` left where they leave it; 2200H past its
    range, as nextval's (a CYCLE sequence is not wound round here)."""
    k, made = next((k, s) for k, s in enumerate(planned.created) if s.id == sequence_id)
    spec = sequences.spec_of(made)
    if count == 0:
        return pa.array([], pa.int64())
    last = spec.start + (count - 1) * spec.increment
    if not spec.minvalue <= last <= spec.maxvalue:
        bound, word = (spec.maxvalue, "maximum") if spec.increment > 0 else (spec.minvalue, "minimum")
        raise SqlError(seq.SEQUENCE_GENERATOR_LIMIT_EXCEEDED,
                       f'nextval: reached {word} value of sequence "{made.name}" ({bound})')
    planned.created[k] = dataclasses.replace(made, details={**made.details, "last_value": last, "is_called": True})
    return pa.array(range(spec.start, last + spec.increment, spec.increment), pa.int64())


def _rewritten(current: pa.Table, planned: AlterPlan, fills: dict[int, object]) -> pa.Table:
    """The table's rows in its new layout: kept columns moved to their new positions, new
    ones holding their default (or, an array, a value per row)."""
    n = current.num_rows
    columns = []
    for pos, source in enumerate(planned.sources):
        column = planned.table.columns[pos]
        typ = arrow_type(column.type)
        if isinstance(source, int):
            columns.append(current.column(physical(source)))
            continue
        value = fills[pos]
        if isinstance(value, pa.Array):
            columns.append(value.cast(typ))
        elif value is None:
            columns.append(pa.nulls(n, typ))
        else:
            one = writes.column_array([writes.check_value(planned.table, pos, value)], typ, column.name)
            columns.append(pa.repeat(one[0], n) if n else one.slice(0, 0))
    names = [physical(i) for i in range(len(columns))]
    return pa.Table.from_arrays([*columns, current.column(TS), current.column(DIFF)], names=[*names, TS, DIFF])


def _check_rows(new: Item, old: Item, rows: pa.Table) -> None:
    """The rewritten rows against the table's NOT NULL columns and its keys (those it had
    hold already)."""
    for pos, column in enumerate(new.columns):
        if column.not_null and rows.num_rows and pc.any(pc.is_null(rows.column(physical(pos)))).as_py():
            raise alter_checks.null_values(new.name, column.name)
    had = {k.name for k in old.unique_sets}
    for key in new.unique_sets:
        if key.name not in had:
            refused = duplicate_in(new, key, rows)
            if refused is not None:
                raise refused


async def _validate_checks(coord, planned: AlterPlan, rows: pa.Table | None) -> None:
    """23514 when the table's rows (`rows`: as rewritten; None: as stored) break a CHECK
    the statement adds (without NOT VALID)."""
    items = {**coord.catalog.items, planned.table.id: planned.table}
    for check in planned.table.checks:
        if check.name in planned.validate and await check_constraints.failing(
                coord, planned.table, check, rows, items) is not None:
            raise SqlError(check_constraints.CHECK_VIOLATION, f'check constraint "{check.name}" of relation '
                                                              f'"{planned.table.name}" is violated by some row')


# -- RENAME -------------------------------------------------------------------------------

async def rename_relation(session: StatementContext, stmt: alt.RenameRelation, params, ptypes) -> Outcome:
    notices: list[tuple[str, str]] = []

    def plan(catalog: Catalog) -> list[CatalogOp]:
        item = catalog.get(stmt.name)
        if item is None:
            if stmt.if_exists:
                notices.append(("NOTICE", f'relation "{stmt.name}" does not exist, skipping'))
                return []
            raise SqlError(UNDEFINED_TABLE, f'relation "{stmt.name}" does not exist')
        kind = stmt.object_type.lower()
        if item.kind not in ("table", "view") or (kind == "view" and item.kind != "view"):
            raise SqlError(WRONG_OBJECT_TYPE, f'"{stmt.name}" is not a {kind}',
                           hint=f"Use ALTER {item.kind.upper()} instead." if item.kind in ("table", "view") else None)
        if catalog.get(stmt.new) is not None or stmt.new in catalog.index_names():
            raise SqlError(DUPLICATE_TABLE, f'relation "{stmt.new}" already exists')
        _no_view_reads(catalog, item, None, f'cannot rename {item.kind} "{item.name}"')
        return [AlterItem(dataclasses.replace(item, name=stmt.new))]

    await session.table_ddl(plan)
    return CommandDone(f"ALTER {stmt.object_type}", notices=notices)


async def rename_column(session: StatementContext, stmt: alt.RenameColumn, params, ptypes) -> Outcome:
    notices: list[tuple[str, str]] = []

    def plan(catalog: Catalog) -> list[CatalogOp]:
        item = catalog.get(stmt.table)
        if item is None:
            if stmt.if_exists:
                notices.append(("NOTICE", f'relation "{stmt.table}" does not exist, skipping'))
                return []
            raise SqlError(UNDEFINED_TABLE, f'relation "{stmt.table}" does not exist')
        if item.kind != "table":
            raise SqlError(FEATURE_NOT_SUPPORTED, f'renaming a column of {item.kind} "{item.name}" is not supported',
                           hint="sparkwire renames the columns of tables.")
        if item.source_id is not None:
            raise SqlError(WRONG_OBJECT_TYPE, f'cannot rename a column of table "{item.name}": it is fed by a '
                                              "source, which decides its columns",
                           hint="ALTER TABLE ... RENAME TO is allowed on it.")
        if item.column(stmt.old) is None:
            raise SqlError(UNDEFINED_COLUMN, f'column "{stmt.old}" does not exist')
        if item.column(stmt.new) is not None:
            raise SqlError(DUPLICATE_COLUMN, f'column "{stmt.new}" of relation "{item.name}" already exists')
        _no_view_reads(catalog, item, stmt.old, f'cannot rename column "{stmt.old}" of table "{item.name}"')
        used = foreign_keys.referring_to_column(catalog, item, stmt.old)
        if used is not None:
            raise SqlError(FEATURE_NOT_SUPPORTED, f'renaming column "{stmt.old}" is not supported: foreign key '
                                                  f'constraint "{used[1].name}" of table "{used[0].name}" refers to it',
                           hint="Drop the constraint, rename, and add it again.")

        def renamed(columns: tuple[str, ...]) -> tuple[str, ...]:
            return tuple(stmt.new if c == stmt.old else c for c in columns)

        altered = dataclasses.replace(
            item, columns=tuple(dataclasses.replace(c, name=stmt.new) if c.name == stmt.old else c
                                for c in item.columns),
            keys=tuple(dataclasses.replace(k, columns=renamed(k.columns)) for k in item.keys),
            indexes=tuple(dataclasses.replace(i, columns=renamed(i.columns)) for i in item.indexes),
            checks=tuple(dataclasses.replace(c, columns=renamed(c.columns),
                                             sql=table_checks.renamed_column(c.sql, stmt.old, stmt.new))
                         if stmt.old in c.columns else c for c in item.checks),
            foreign_keys=tuple(dataclasses.replace(f, columns=renamed(f.columns),
                                                   ref_columns=renamed(f.ref_columns) if f.table_id == item.id
                                                   else f.ref_columns) for f in item.foreign_keys))
        return [AlterItem(altered)]

    await session.table_ddl(plan)
    return CommandDone(f"ALTER {stmt.object_type}", notices=notices)


def _no_view_reads(catalog: Catalog, item: Item, column: str | None, what: str) -> None:
    """Views keep their query as text, naming the relation and its columns: a rename under
    one would break it, so it is refused (PostgreSQL's views follow the rename)."""
    readers = sorted(v.name for v in catalog.items.values()
                     if v.kind == "view" and item.id in v.depends_on
                     and (column is None or (v.sql and alt.view_reads_column(v.sql, column, v.column_names))))
    if readers:
        raise SqlError(FEATURE_NOT_SUPPORTED, f'{what}: view "{readers[0]}" reads it',
                       hint="sparkwire keeps a view as its SQL text: drop the view, rename, and create it again.")


HANDLERS = {
    alt.AlterTable: alter_table,
    alt.RenameRelation: rename_relation,
    alt.RenameColumn: rename_column,
}
