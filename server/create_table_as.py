"""CREATE TABLE ... AS query and SELECT ... INTO: a new table with the query's columns
(names and types as the query's result has them) and its rows, in one commit.

The query runs first, as any SELECT of the session does (either front end, the
transaction's own writes included); the table and its rows are then created together:
one log record, one timestamp, or - in a transaction block - staged with the block's
other DDL and writes for COMMIT. A query that fails leaves no table behind.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import pyarrow as pa
from sqlglot import exp

from planner import statements as st
from planner.errors import DUPLICATE_COLUMN, DUPLICATE_TABLE, FEATURE_NOT_SUPPORTED, SYNTAX_ERROR, SqlError
from planner.parser import param_numbers
from planner.types import COLUMN_TYPES, SqlType, column_type
from server import writes
from server.catalog import Catalog
from server.catalog_items import Column, Item
from server.catalog_ops import CatalogOp
from server.coordinator import Coordinator
from server.outcome import CommandDone, Outcome, Rows
from server.transaction import Transaction

TEXT = column_type("text")


class CreatingSession(Protocol):
    """What CREATE TABLE AS uses of the session."""

    coord: Coordinator
    txn: Transaction | None

    @property
    def catalog(self) -> Catalog: ...

    async def describe(self, parsed: st.Parsed, param_types: dict[int, SqlType]) -> Any: ...

    async def run_statement(self, stmt: st.Statement, params: dict[int, object],
                            param_types: dict[int, SqlType]) -> Outcome: ...


async def create_table_as(session: CreatingSession, stmt: st.CreateTableAs, params, ptypes) -> Outcome:
    for n in param_numbers(stmt.query):
        raise SqlError("42P02", f"there is no parameter ${n}")
    done_tag = "SELECT" if stmt.select_into else "CREATE TABLE AS"
    if session.catalog.get(stmt.name) is not None:
        if stmt.if_not_exists:
            return CommandDone("CREATE TABLE AS", notices=[("NOTICE", f'relation "{stmt.name}" already exists, skipping')])
        raise SqlError(DUPLICATE_TABLE, f'relation "{stmt.name}" already exists')
    rows: pa.Table | None = None
    if stmt.with_data:
        out = await session.run_statement(stmt.query, {}, {})
        assert isinstance(out, Rows)
        names, types, rows = out.names, out.types, out.table
    else:
        names, types = await session.describe(st.Parsed(stmt.query, stmt.query.text), {})
    if isinstance(stmt.query.ast, exp.Values):
        names = [f"column{i}" for i in range(1, len(names) + 1)]  # PostgreSQL's names for VALUES
    columns = table_columns(list(names), list(types), stmt.column_names)
    created: list[Item] = []

    def plan(catalog: Catalog) -> tuple[list[CatalogOp], dict[str, pa.Table]]:
        item = Item(catalog.allocate_id(), stmt.name, "table", columns, session.coord.read_ts())
        ops = catalog.plan_create(item)
        created.append(item)
        if rows is None or not rows.num_rows:
            return ops, {}
        return ops, {item.id: writes.arrow_to_updates(item, rows, +1)}

    await _commit(session, plan)
    if rows is None:
        return CommandDone(done_tag)
    return CommandDone(f"SELECT {rows.num_rows}")


def table_columns(names: list[str], types: list[SqlType], renamed: tuple[str, ...]) -> tuple[Column, ...]:
    """The new table's columns: the result's, renamed by the column list if there is one."""
    if len(renamed) > len(names):
        raise SqlError(SYNTAX_ERROR, "too many column names were specified")
    names = list(renamed) + names[len(renamed):]
    seen: set[str] = set()
    out = []
    for name, t in zip(names, types, strict=True):
        if name in seen:
            raise SqlError(DUPLICATE_COLUMN, f'column "{name}" specified more than once')
        seen.add(name)
        if t.base.name == "unknown":  # an untyped literal's column is text, as in PostgreSQL
            t = TEXT
        if t.base.name not in COLUMN_TYPES:
            raise SqlError(FEATURE_NOT_SUPPORTED, f'column "{name}" has type {t.display()}, '
                                                  "which a table cannot have here")
        out.append(Column(name, t))
    if not out:
        raise SqlError(FEATURE_NOT_SUPPORTED, "a table needs at least one column")
    return tuple(out)


async def _commit(session: CreatingSession,
                  plan: Callable[[Catalog], tuple[list[CatalogOp], dict[str, pa.Table]]]) -> None:
    coord, txn = session.coord, session.txn
    if txn is not None and txn.explicit:
        # Staged with the block's DDL and writes: both happen at COMMIT, or neither.
        ops, updates = plan(txn.catalog or coord.catalog)
        txn.stage_ddl(ops, coord.catalog)
        for cid, table in updates.items():
            txn.updates.setdefault(cid, []).append(table)
        return
    if txn is not None and txn.holds_lock:  # an implicit transaction that took it to read-then-write
        ops, updates = plan(coord.catalog)
        await coord.commit(ops, updates)
        return
    async with coord.write_lock:
        ops, updates = plan(coord.catalog)
        await coord.commit(ops, updates)


HANDLERS: dict[type, Callable[..., Awaitable[Outcome]]] = {st.CreateTableAs: create_table_as}
