"""What a commit checks after ALTER TABLE: rows against a NOT NULL it adds, and writes
planned before an ALTER TABLE changed their table's layout.

A table's layout changes only by a rewrite: ALTER TABLE ADD/DROP COLUMN commits, in one
log record, the table's collection dropped, made again, and its rows in the new layout
(`rewritten` finds such commits). A write planned against the old layout that reaches
the write lock after it would put a file of the wrong shape in the new collection: it is
refused instead (40001, run it again), as PostgreSQL's lock would have made it wait.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from planner.errors import SqlError
from server import catalog_ops
from server.catalog_items import Item
from spark_backend.schema import DIFF, TS, arrow_type, physical
from spark_backend.storage import Store

NOT_NULL_VIOLATION = "23502"
SERIALIZATION_FAILURE = "40001"


def rewritten(ops: list[catalog_ops.CatalogOp]) -> frozenset[str]:
    """Collections a commit drops and makes again: tables ALTER TABLE rewrites."""
    dropped = {op.id for op in ops if isinstance(op, catalog_ops.DropCollection)}
    return frozenset(op.id for op in ops if isinstance(op, catalog_ops.CreateCollection) and op.id in dropped)


def stale_layout(updates: dict[str, pa.Table], items: dict[str, Item], rewritten: dict[str, int]) -> SqlError | None:
    """40001 for a write whose rows are not in its table's layout any more (only tables
    rewritten since start can have such writes: `rewritten`)."""
    for cid, table in updates.items():
        item = items.get(cid)
        if cid not in rewritten or item is None or not table.num_rows or item.kind != "table":
            continue
        got = [f.type for f in table.schema if f.name not in (TS, DIFF)]
        if got != [arrow_type(t) for t in item.column_types]:
            return SqlError(SERIALIZATION_FAILURE,
                            f'could not serialize access due to concurrent ALTER TABLE of "{item.name}"',
                            detail="The table's columns changed while this statement ran.",
                            hint="Run the statement again.")
    return None


def nulls_refused(store: Store, old: Item, new: Item, written: pa.Table | None) -> SqlError | None:
    """23502 when a column `new` makes NOT NULL holds a NULL (in the table's files, with the
    same commit's `written` rows). Blocking: run it on a worker thread, holding the write
    lock. The net count of rows holding NULL is the sum of the diffs of the updates that do."""
    if [c.name for c in old.columns] != [c.name for c in new.columns]:
        return None  # not this table's layout: a rewrite checks its own rows
    tightened = [p for p, (o, n) in enumerate(zip(old.columns, new.columns)) if n.not_null and not o.not_null]
    if not tightened:
        return None
    files, _ = store.files(new.id, store.last_ts)
    with store.reading():
        parts = [store.read_columns(files, [*(physical(p) for p in tightened), DIFF], new.id)] if files else []
    if written is not None and written.num_rows:
        parts.append(written.select([*(physical(p) for p in tightened), DIFF]))
    for p in tightened:
        held = sum(_null_diffs(part, physical(p)) for part in parts)
        if held > 0:
            return null_values(new.name, new.columns[p].name)
    return None


def _null_diffs(part: pa.Table, column: str) -> int:
    if column not in part.column_names:
        return 0
    nulls = part.filter(pc.is_null(part.column(column)))
    return int(pc.sum(nulls.column(DIFF)).as_py() or 0)


def null_values(table: str, column: str) -> SqlError:
    return SqlError(NOT_NULL_VIOLATION, f'column "{column}" of relation "{table}" contains null values')


def nulls_written(updates: dict[str, pa.Table], items: dict[str, Item]) -> SqlError | None:
    """23502 for a write adding a NULL to a NOT NULL column: one planned before ALTER TABLE
    ... SET NOT NULL committed (writes check NOT NULL when planned; this is the commit's
    look again, cheap: Arrow keeps each column's null count)."""
    for cid, table in updates.items():
        item = items.get(cid)
        if item is None or item.kind != "table" or item.source_id is not None or not table.num_rows:
            continue  # (a source's rows are its upstream's, NOT NULL included)
        for pos, column in enumerate(item.columns):
            name = physical(pos)
            if not column.not_null or name not in table.column_names or not table.column(name).null_count:
                continue
            added = table.filter(pc.and_(pc.is_null(table.column(name)), pc.greater(table.column(DIFF), 0)))
            if added.num_rows:
                return SqlError(NOT_NULL_VIOLATION, f'null value in column "{column.name}" of relation "{item.name}" '
                                                    "violates not-null constraint")
    return None
