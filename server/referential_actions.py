"""FOREIGN KEY … ON DELETE / ON UPDATE { CASCADE | SET NULL | SET DEFAULT }: the rows a write
to a referenced table changes in the tables referring to it, in the same statement.

A DELETE (or UPDATE) computes the rows it removes (and what they become). Each removed
referenced key that no row of the statement keeps (a key is UNIQUE, so its row is the only
one holding it) is looked for in every table whose foreign key has an action: CASCADE
deletes the referring rows (ON UPDATE: gives them the row's new key), SET NULL and SET
DEFAULT set their foreign-key columns. Those rows are changes too, and their own keys may be
referred to in turn: the work goes on, table by table, until no change is left. Each read
sees the statement's changes so far (and the transaction block's), so a row is changed once.
What the changes leave is checked where every write is checked: NOT NULL at once, UNIQUE,
CHECK and the foreign keys at the statement or at COMMIT (server.staging, server.coordinator).
As in PostgreSQL, the actions run where the statement runs, not deferred.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

import pyarrow as pa
from sqlglot import exp

from planner import statements as st
from planner.errors import FEATURE_NOT_SUPPORTED, SqlError
from planner.params import literal
from planner.table_foreign_keys import Action
from planner.translate import SessionContext
from server import writes
from server.catalog import Catalog
from server.catalog_items import ForeignKey, Item
from server.coordinator import Coordinator, Overlay
from server.foreign_keys import referencing
from server.sequences import NEXTVAL
from server.transaction import Transaction

# Keys looked for in one query (an IN list of literals): more are read in several.
_KEYS_PER_QUERY = 1000
# Rounds of changes that change other rows; a chain longer than this is a cycle gone wrong.
_MAX_ROUNDS = 10_000


class ActionSession(Protocol):
    coord: Coordinator
    txn: Transaction | None
    group: str | None

    @property
    def catalog(self) -> Catalog: ...

    def context(self) -> SessionContext: ...


@dataclass(frozen=True)
class RowChange:
    """Rows a statement removes from `table` (its columns in order); for an UPDATE, `new`
    holds what row i of `old` became, for a DELETE it is None."""

    table: Item
    old: pa.Table
    new: pa.Table | None = None


async def apply(session: ActionSession, first: RowChange, updates: dict[str, pa.Table]) -> dict[str, pa.Table]:
    """The statement's `updates` with those of the rows `first` changes through the foreign
    keys with an action, by table (reads see the statement's own and the block's)."""
    out: dict[str, list[pa.Table]] = {}
    queue = [first]
    rounds = 0
    while queue:
        change = queue.pop(0)
        for child, fk in referencing(session.catalog.items.values(), change.table.id):
            action = fk.on_delete if change.new is None else fk.on_update
            if not action.changes_rows:
                continue
            keys = _changed_keys(change, fk)
            if not keys:
                continue
            rounds += 1
            if rounds > _MAX_ROUNDS:
                raise SqlError("54001", "foreign key actions changed rows in too many rounds")
            rows = await _referring_rows(session, child, fk, list(keys), _overlay(session, updates, out))
            if not rows.num_rows:
                continue
            new = _acted(session, child, fk, action, rows, keys, change.new is None)
            parts = [writes.arrow_to_updates(child, rows, -1, check=False)]
            if new is not None:
                parts.append(writes.arrow_to_updates(child, new, +1))
            out.setdefault(child.id, []).extend(parts)
            queue.append(RowChange(child, rows, new))
    merged = dict(updates)
    for cid, parts in out.items():
        merged[cid] = writes.concat_updates([merged[cid], *parts] if cid in merged else parts)
    return merged


def _changed_keys(change: RowChange, fk: ForeignKey) -> dict[tuple, tuple | None]:
    """The referenced keys `change` removes, each with the key its row now has (an UPDATE
    that changed it), or None (deleted; or kept by no row). A key with a NULL refers to nothing."""
    old = _keys(change.old, change.table, fk.ref_columns)
    if change.new is None:
        return {k: None for k in old if None not in k}
    new = _keys(change.new, change.table, fk.ref_columns)
    kept = set(new)
    return {o: n for o, n in zip(old, new, strict=True) if None not in o and o != n and o not in kept}


def _keys(rows: pa.Table, item: Item, columns: Iterable[str]) -> list[tuple]:
    values = [rows.column(item.column_names.index(c)).to_pylist() for c in columns]
    return list(zip(*values, strict=True)) if values else []


async def _referring_rows(session: ActionSession, child: Item, fk: ForeignKey, keys: list[tuple],
                          overlay: Overlay | None) -> pa.Table:
    """The rows of `child` whose foreign key `fk` holds one of `keys` (in `fk.ref_columns`'
    order, as its own columns pair with them)."""
    types = [child.column(c).type for c in fk.columns]
    parts = []
    for start in range(0, len(keys), _KEYS_PER_QUERY):
        chunk = keys[start:start + _KEYS_PER_QUERY]
        columns = [exp.column(c, quoted=True) for c in fk.columns]
        if len(columns) == 1:
            where: exp.Expression = exp.In(this=columns[0], expressions=[literal(k[0], types[0]) for k in chunk])
        else:
            where = exp.or_(*(exp.and_(*(exp.EQ(this=c.copy(), expression=literal(v, t))
                                         for c, v, t in zip(columns, key, types, strict=True)))
                              for key in chunk))
        select = writes.delete_select(child, st.Delete(child.name, None, where))
        spark_sql, views = session.coord.plan_query(select, session.context(), None, session.catalog)
        result = await session.coord.query(spark_sql, views, session.coord.read_ts(), overlay, group=session.group)
        parts.append(result.table)
    return pa.concat_tables(parts) if len(parts) > 1 else parts[0]


def _overlay(session: ActionSession, updates: dict[str, pa.Table], acted: dict[str, list[pa.Table]]) -> Overlay:
    """What a read must see besides what is committed: the block's staged writes, the
    statement's own and the actions' so far."""
    staged = session.txn.overlay() if session.txn is not None else None
    tables: dict[str, list[pa.Table]] = {cid: [t] for cid, t in (staged.updates.items() if staged else ())}
    for cid, table in updates.items():
        tables.setdefault(cid, []).append(table)
    for cid, parts in acted.items():
        tables.setdefault(cid, []).extend(parts)
    return Overlay({cid: writes.concat_updates(parts) for cid, parts in tables.items()})


def _acted(session: ActionSession, child: Item, fk: ForeignKey, action: Action, rows: pa.Table,
           keys: dict[tuple, tuple | None], deleting: bool) -> pa.Table | None:
    """What `rows` become: None (deleted), or the rows with their foreign-key columns set."""
    positions = [child.column_names.index(c) for c in fk.columns]
    if action is Action.CASCADE and deleting:
        return None  # ON DELETE CASCADE
    if action is Action.CASCADE:  # ON UPDATE CASCADE: the key its referenced row now has
        old = _keys(rows, child, fk.columns)
        new = [keys[k] for k in old]
        values = {pos: [n[i] for n in new] for i, pos in enumerate(positions)}
    elif action is Action.SET_NULL:
        values = {pos: [None] * rows.num_rows for pos in positions}
    else:
        values = {pos: [value] * rows.num_rows for pos, value in _defaults(session, child, positions).items()}
    columns = list(rows.columns)
    for pos, column_values in values.items():
        columns[pos] = pa.array(column_values, rows.column(pos).type)
    return pa.Table.from_arrays(columns, names=rows.column_names)


def _defaults(session: ActionSession, child: Item, positions: list[int]) -> dict[int, object]:
    """SET DEFAULT: each column's constant DEFAULT (NULL without one)."""
    others = [i for i in range(len(child.columns)) if i not in positions]
    constant, computed = writes.default_values(child, others, session.context())
    out = {}
    for pos in positions:
        value = constant.get(pos)
        if pos in computed or value is NEXTVAL:
            raise SqlError(FEATURE_NOT_SUPPORTED, f'ON DELETE/UPDATE SET DEFAULT of column "{child.columns[pos].name}" '
                                                  "is supported for a constant default only")
        out[pos] = value
    return out
