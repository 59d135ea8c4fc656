"""RETURNING: the rows a write returns, from the rows it wrote (or deleted).

Column names and `*` are read off the written rows as stored (`writes.returning_columns`).
Any other list (`RETURNING id * 2, upper(name)`) is bound by the front end of our own as
`SELECT <list> FROM t [AS alias]` (planner.sql.dml.returning_select) and run by Spark with t
registered as the written rows alone, before the write is committed or staged: an error in
RETURNING fails the statement and writes nothing, as in PostgreSQL.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import expressions as exp

from planner import statements as st
from planner.errors import FEATURE_NOT_SUPPORTED, UNDEFINED_COLUMN, UNDEFINED_TABLE, SqlError
from planner.sql import plan as p
from planner.translate import SessionContext
from planner.types import SqlType
from server import bound_query, writes
from server.catalog import Catalog
from server.catalog_items import Item
from server.coordinator import Coordinator, Overlay
from server.outcome import CommandDone, Outcome, Rows
from server.transaction import Transaction
from spark_backend.schema import DIFF


@dataclass(frozen=True)
class Query:
    """A RETURNING list that is not only columns: computed by a query over the written rows."""

    verb: str


@dataclass(frozen=True)
class Computed:
    names: list[str]
    types: list[SqlType]
    table: pa.Table


Returning = list[tuple[str, int]] | Query | None


class WritingSession(Protocol):
    coord: Coordinator
    group: str | None
    txn: Transaction | None

    @property
    def catalog(self) -> Catalog: ...

    def context(self) -> SessionContext: ...


def plan(item: Item, stmt: st.Insert | st.Update | st.Delete, verb: str) -> Returning:
    """What the statement's RETURNING needs: None (no RETURNING), the written columns, or a Query."""
    if not stmt.returning:
        return None
    if isinstance(stmt, st.Update) and stmt.from_ is not None:
        if any(_bare_star(e) for e in stmt.returning):  # PostgreSQL's * here is the FROM list's columns too
            raise _from_list_refused()
        return Query(verb)  # bound with the FROM list in scope, for PostgreSQL's errors (`_bound`)
    try:
        return writes.returning_columns(item, stmt.returning, verb, stmt.alias)
    except writes.ReturningExpression:
        return Query(verb)


def describe(session: WritingSession, item: Item, stmt: st.Insert | st.Update | st.Delete,
             ptypes: dict) -> tuple[list[str], list[SqlType]]:
    """RETURNING's column names and types, without writing anything."""
    returns = plan(item, stmt, type(stmt).__name__.upper())
    if isinstance(returns, Query):
        bound = _bound(session, item, stmt, returns, None, ptypes)
        return bound.names, bound.types
    assert returns is not None
    return [name for name, _ in returns], [item.columns[pos].type for _, pos in returns]


def _bound(session: WritingSession, item: Item, stmt: st.Insert | st.Update | st.Delete, returns: Query,
           params: dict | None, ptypes: dict) -> bound_query.BoundQuery:
    catalog = session.catalog
    try:
        bound = bound_query.plan_returning(stmt.text, item.name, catalog,
                                           lambda views: session.coord.resolver(views, session.context(), catalog),
                                           params, ptypes) if stmt.text else None
    except SqlError as e:
        if e.sqlstate in (UNDEFINED_TABLE, UNDEFINED_COLUMN) and isinstance(stmt, st.Update) and stmt.from_ is not None:
            # RETURNING is computed from the written rows alone, without the FROM list's
            raise _from_list_refused() from e
        raise
    if bound is None or _reads_more_than_once(bound.rel, item.name):
        raise SqlError(FEATURE_NOT_SUPPORTED, f"{returns.verb} ... RETURNING with this expression is not supported",
                       hint="Return the columns, and compute the rest in a query.")
    return bound


def _bare_star(e: exp.Expression) -> bool:
    return isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star) and not e.table)


def _from_list_refused() -> SqlError:
    return SqlError(FEATURE_NOT_SUPPORTED, "UPDATE ... FROM ... RETURNING the FROM list's columns is not supported",
                    hint="Return the updated table's columns by name or as table.*.")


async def compute(session: WritingSession, item: Item, stmt: st.Insert | st.Update | st.Delete,
                  rows: pa.Table, returning: Returning, params: dict, ptypes: dict) -> Computed | None:
    """A Query's rows over `rows` (updates as stored), computed now; None for the others."""
    if not isinstance(returning, Query):
        return None
    bound = _bound(session, item, stmt, returning, params, ptypes)
    key = f"returning:{item.id}"  # not a catalog id: the coordinator reads the overlay's rows alone
    views = {(key if k == item.id else k): v for k, v in bound.views.items()}
    written = rows.set_column(rows.schema.get_field_index(DIFF), DIFF, pc.abs(rows.column(DIFF)))
    staged = session.txn.overlay() if session.txn else None  # what a subquery there sees of other tables
    result = await session.coord.query(bound.spark_sql, views, session.coord.read_ts(),
                                       Overlay({**(staged.updates if staged else {}), key: written}),
                                       group=session.group)
    return Computed(bound.names, bound.types, result.table)


def outcome(tag: str, item: Item, rows: pa.Table, returning: Returning, computed: Computed | None) -> Outcome:
    """A write's outcome: its tag, and with RETURNING the rows it returns."""
    if returning is None:
        return CommandDone(tag)
    if computed is not None:
        return Rows(tag, computed.names, computed.types, computed.table)
    assert not isinstance(returning, Query)
    return Rows(tag, [name for name, _ in returning], [item.columns[pos].type for _, pos in returning],
                writes.returned_rows(rows, returning))


def _reads_more_than_once(rel: p.Rel, table: str) -> bool:
    """A RETURNING list whose subquery reads the table itself would see the written rows
    here, where PostgreSQL's sees the table as the statement found it: not covered."""
    return sum(1 for node in p.nodes(rel) if isinstance(node, p.Get) and node.name == table) > 1
