"""A client session: its variables, transaction, and the execution of statements.

The session turns parsed statements into calls on the coordinator and
returns `Outcome`s; it knows nothing of the wire. Writes inside a transaction
are staged and committed together at COMMIT, at one timestamp; the
transaction's own reads see them through an overlay.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import pyarrow as pa
from sqlglot import exp

from planner import statements as st
from planner import subscribe_syntax as ss
from planner.copy_syntax import CopyFrom, CopyTo
from planner.errors import (
    ACTIVE_SQL_TRANSACTION,
    DUPLICATE_CURSOR,
    FEATURE_NOT_SUPPORTED,
    IN_FAILED_TRANSACTION,
    INVALID_CURSOR_NAME,
    INVALID_PARAMETER_VALUE,
    INVALID_PREPARED_STATEMENT,
    NO_ACTIVE_SQL_TRANSACTION,
    QUERY_CANCELED,
    SYNTAX_ERROR,
    WRONG_OBJECT_TYPE,
    SqlError,
)
from planner.params import literal
from planner.parser import parse_one
from planner.sequences import nextval_literal
from planner.sql import colnames
from planner.translate import SessionContext, referenced_relations
from planner.types import BY_NAME, SqlType
from server import (
    alter_table,
    bound_query,
    check_constraints,
    constraint_modes,
    copy_format,
    copy_load,
    copy_out,
    create_table_as,
    foreign_keys,
    indexes,
    metrics,
    on_conflict,
    prepared,
    referential_actions,
    returning,
    roles,
    row_locks,
    sequence_calls,
    sequence_ddl,
    sequences,
    show,
    signals,
    sources,
    staging,
    subscribe_output,
    transaction,
    unique_keys,
    writes,
)
from server.catalog import Catalog
from server.catalog_items import Column, Item
from server.catalog_ops import CatalogOp, DropItem, SetSystem
from server.coordinator import VERSION_STRING, Coordinator
from server.copy_format import CopyOptions
from server.fetch_ahead import FetchAhead
from server.outcome import CommandDone, CopyIn, CopyOut, EmptyQuery, Outcome, Rows, Stream, rows_outcome
from server.settings import SYSTEM_VARIABLES, VARIABLES, Settings, display_name, system_value
from server.subscribe import SubscribeLimits, Subscription
from server.transaction import Transaction

log = logging.getLogger("sparkwire.session")

TEXT = SqlType(BY_NAME["text"])
BOOL = SqlType(BY_NAME["boolean"])


@dataclass
class Cursor:
    """A declared cursor: a subscription, or a SELECT's result read in pieces."""

    names: list[str]
    types: list[SqlType]
    subscription: Subscription | None = None
    table: pa.Table | None = None
    offset: int = 0
    ahead: FetchAhead | None = None  # a subscription's rows between FETCHes

    def close(self) -> None:
        if self.ahead is not None:
            self.ahead.close()
        if self.subscription is not None:
            self.subscription.close()


class Session:
    def __init__(self, coord: Coordinator, user: str, database: str, settings: Settings,
                 pid: int) -> None:
        self.coord = coord
        self.user = user
        self.database = database
        self.settings = settings
        self.pid = pid
        self.txn: Transaction | None = None
        self.group: str | None = None  # Spark job group of the running statement
        self.cancelled = False
        self.cancel_event = asyncio.Event()  # wakes statements that wait on anything but Spark
        self.cursors: dict[str, Cursor] = {}
        self.server_sources = None  # the server's SourceManager, set by the connection
        self.sequences_seen = sequences.Seen()  # currval and lastval
        self.on_overflow: Callable[[], None] | None = None  # set by the connection
        self.subscribe_limits = SubscribeLimits()  # set by the connection, from the server's options
        # Drops a protocol-level prepared statement (None: all); False if it does not exist.
        self.deallocate: Callable[[str | None], bool] = lambda name: True  # set by the connection
        # Prepared statements by name, SQL PREPARE's and the protocol's Parse's: one namespace
        # (the connection shares its dict).
        self.prepared: dict[str, prepared.Prepared] = {}
        self.listening: set[str] = set()  # LISTEN channels
        # (server address, server port, client address, client port): set by the connection.
        self.endpoints: tuple[str | None, int | None, str | None, int | None] = (None, None, None, None)
        # Delivers NOTIFY (channel, payload) to every session listening; set by the connection.
        self.notify: Callable[[str, str], None] = lambda channel, payload: None
        # pg_cancel_backend / pg_terminate_backend (pid, terminate) -> found; set by the connection.
        self.signal: Callable[[int, bool], bool] = lambda pid, terminate: False

    # -- transaction status ---------------------------------------------------------
    @property
    def status(self) -> str:
        if self.txn is None or not self.txn.explicit:
            return "I"
        return "E" if self.txn.failed else "T"

    def context(self) -> SessionContext:
        started = self.txn.started if self.txn else _now()
        return SessionContext(self.database, self.user, VERSION_STRING,
                              started.strftime("%Y-%m-%d %H:%M:%S.%f"), self.pid, *self.endpoints)

    def begin_implicit(self) -> None:
        """A multi-statement simple query runs as one transaction, as in PostgreSQL."""
        if self.txn is None:
            self.txn = Transaction(explicit=False, started=_now())

    async def end_implicit(self, success: bool) -> None:
        if self.txn is not None and not self.txn.explicit:
            if success:
                await self._commit_txn()
            else:
                self._release()

    async def fail(self) -> None:
        """After an error: an explicit transaction is aborted, an implicit one rolled back."""
        if self.txn is None:
            return
        if self.txn.explicit:
            self.txn.failed = True
            if not self.txn.savepoints:
                self.txn.updates.clear()
                if self.txn.holds_lock:
                    self.coord.write_lock.release()
                    self.txn.holds_lock = False
            # With a savepoint the transaction may go on after ROLLBACK TO: it keeps what it
            # staged before the savepoint, and the write lock its reads were made under.
        else:
            self._release()

    def _release(self) -> None:
        if self.txn is not None and self.txn.holds_lock:
            self.coord.write_lock.release()
        self.txn = None
        self.coord.release(self)
        for cursor in self.cursors.values():
            cursor.close()
        self.cursors.clear()

    async def close(self) -> None:
        self._release()

    # -- executing --------------------------------------------------------------
    async def execute(self, parsed: st.Parsed, params: dict[int, object] | None = None,
                      param_types: dict[int, SqlType] | None = None) -> Outcome:
        stmt = parsed.statement
        if self.txn is not None and self.txn.failed and \
                not isinstance(stmt, (st.Commit, st.Rollback, st.RollbackToSavepoint)):
            raise SqlError(IN_FAILED_TRANSACTION,
                           "current transaction is aborted, commands ignored until end of transaction block")
        handler = _HANDLERS.get(type(stmt))
        if handler is None:
            raise SqlError(FEATURE_NOT_SUPPORTED, f"{type(stmt).__name__} is not supported")
        if isinstance(stmt, (st.Update, st.Delete)) and sequence_calls.called_in(getattr(stmt, "text", "")):
            raise sequence_calls.refused()
        self.group = self.coord.engine.new_group()
        self.cancelled = False
        self.cancel_event.clear()
        try:
            outcome = await handler(self, stmt, params or {}, param_types or {})
            metrics.STATEMENTS.inc(kind=type(stmt).__name__, outcome="success")
            return outcome
        except asyncio.CancelledError:
            self.coord.engine.cancel(self.group)
            raise
        except RecursionError:
            # A statement nested deeper than translation's recursion goes (thousands of NOTs).
            metrics.STATEMENTS.inc(kind=type(stmt).__name__, outcome="error")
            raise SqlError("54001", "statement too complex") from None
        except SqlError as err:
            metrics.STATEMENTS.inc(kind=type(stmt).__name__, outcome="error")
            if self.cancelled:
                raise SqlError(QUERY_CANCELED, "canceling statement due to user request") from err
            raise
        finally:
            self.group = None

    async def run_statement(self, stmt: st.Statement, params: dict[int, object],
                            param_types: dict[int, SqlType]) -> Outcome:
        """A statement already parsed (EXECUTE's), as part of the statement running now."""
        handler = _HANDLERS.get(type(stmt))
        if handler is None:
            raise SqlError(FEATURE_NOT_SUPPORTED, f"{type(stmt).__name__} is not supported")
        return await handler(self, stmt, params, param_types)

    def cancel(self) -> None:
        """Stop the running statement (a CancelRequest for this session)."""
        self.cancel_event.set()
        if self.group is not None:
            self.cancelled = True
            self.coord.engine.cancel(self.group)

    async def describe(self, parsed: st.Parsed, param_types: dict[int, SqlType]) -> tuple[list[str], list[SqlType]] | None:
        """The result columns a statement would return, without running it."""
        stmt = parsed.statement
        if isinstance(stmt, (st.Explain, ss.ExplainSubscribe)):
            return ["QUERY PLAN"], [TEXT]
        if isinstance(stmt, ss.Subscribe) or isinstance(stmt, CopyTo) and isinstance(stmt.inner, ss.Subscribe):
            sub = self._subscription(stmt if isinstance(stmt, ss.Subscribe) else stmt.inner)
            sub.plan()
            output = await sub.describe()
            return (None if isinstance(stmt, CopyTo) else (output.names, output.types))
        if isinstance(stmt, st.Execute):
            found = prepared.lookup(self, stmt.name)
            return await self.describe(found.parsed, found.param_types)
        if isinstance(stmt, ss.Fetch):
            cursor = self._cursor(stmt.cursor)
            return cursor.names, cursor.types
        if isinstance(stmt, (st.ShowObjects, st.ShowColumns, st.ShowCreate, st.ShowVariable)):
            out = await self.execute(parsed)
            return out.names, out.types
        if isinstance(stmt, (st.Insert, st.Update, st.Delete)) and stmt.returning:
            return returning.describe(self, self.catalog.require(stmt.table), stmt, param_types)
        if not isinstance(stmt, st.Query):
            return None
        if (calls := sequence_calls.calls(stmt.text, dict.fromkeys(param_types))) is not None:
            return sequence_calls.describe(calls)
        if (form := sequence_calls.computed_form(self.catalog, stmt.text)) is not None:
            return sequence_calls.describe_computed(form)
        if signals.signal_call(stmt.ast, dict.fromkeys(param_types, 0)) is not None:
            name = "pg_terminate_backend" if "terminate" in parsed.text.lower() else "pg_cancel_backend"
            return [name], [BOOL]
        # The plan decides the columns without Spark; the same NULL-valued parameters make the
        # same path choice Execute will (the front end of our own or sqlglot's).
        bound = self._bound(stmt, None, param_types)
        if bound is not None:
            return bound.names, bound.types
        nulls = {n: literal(None, t) for n, t in param_types.items()}
        spark_sql, views = self.coord.plan_query(stmt.tree(), self.context(), nulls, self.catalog)
        result = await self.coord.query(spark_sql, views, self.coord.read_ts(), None,
                                        describe_only=True)
        return _postgres_names(stmt, result.names), result.types

    # -- reads ---------------------------------------------------------------------
    def _read_ts(self, as_of: exp.Expression | None) -> int:
        if as_of is not None:
            if isinstance(as_of, exp.Literal) and not as_of.is_string:
                if self.txn is not None and self.txn.explicit:
                    raise SqlError(FEATURE_NOT_SUPPORTED, "AS OF is not allowed inside a transaction")
                ts = int(float(as_of.this))
                # Every time below the frontier is complete (SUBSCRIBE's progress says so),
                # not just the latest commit's.
                latest = max(self.coord.read_ts(), self.coord.frontier - 1)
                if ts > latest:
                    raise SqlError("22000", f"timestamp {ts} is in the future: the latest "
                                            f"complete timestamp is {latest}")
                return ts
            raise SqlError(FEATURE_NOT_SUPPORTED, "AS OF needs a number of milliseconds since the epoch")
        if self.txn is None or self.txn.holds_lock:
            return self.coord.read_ts()
        if self.txn.read_ts is None:
            self.txn.read_ts = self.coord.read_ts()
            self.coord.hold(self, self.txn.read_ts)  # the transaction's reads, until it ends
        return self.txn.read_ts

    def _bind(self, params: dict[int, object], types: dict[int, SqlType]) -> dict[int, exp.Expression]:
        return {n: literal(v, types.get(n, TEXT)) for n, v in params.items()}

    async def _query(self, stmt: st.Query, params, ptypes) -> Rows:
        answered = await sequence_calls.answer(
            self, stmt.text, params, lambda sql: self._query(parse_one(sql).statement, params, ptypes))
        if answered is not None:
            return answered
        if (signalled := signals.answer(stmt.ast, params, self.signal)) is not None:
            return signalled
        skip = await row_locks.take(self, stmt.text)  # FOR UPDATE …: True where SKIP LOCKED returns nothing
        bound = self._bound(stmt, params, ptypes)
        if bound is not None:
            spark_sql, views = bound.spark_sql, bound.views
        else:
            spark_sql, views = self.coord.plan_query(stmt.tree(), self.context(), self._bind(params, ptypes),
                                                     self.catalog)
        result = await self.coord.query(spark_sql, views, self._read_ts(stmt.as_of),
                                        self.txn.overlay() if self.txn else None, group=self.group)
        table = result.table.slice(0, 0) if skip else result.table
        names, types = ((bound.names, bound.types) if bound is not None
                        else (_postgres_names(stmt, result.names), result.types))
        return Rows(f"SELECT {table.num_rows}", names, types, table)

    def _bound(self, stmt: st.Query, params, ptypes) -> bound_query.BoundQuery | None:
        """The query through the front end of our own, when the session asked for it and
        it covers the query."""
        if self.settings.get("sql_frontend") != "postgres" or not stmt.text:
            return None
        return bound_query.plan(stmt.text, self.catalog,
                                lambda views: self.coord.resolver(views, self.context(), self.catalog),
                                params, ptypes, per_value_scale=True, session=self.context())

    async def _explain(self, stmt: st.Explain, params, ptypes) -> Outcome:
        inner = stmt.statement
        spark_sql, views = self.coord.plan_query(inner.tree(), self.context(), self._bind(params, ptypes), self.catalog)
        result = await self.coord.query(f"EXPLAIN {spark_sql}", views, self._read_ts(None),
                                        group=self.group)
        text = "\n".join(str(v) for v in result.table.column(0).to_pylist())
        lines = [(line,) for line in text.splitlines() if line.strip()]
        return rows_outcome(["QUERY PLAN"], lines, tag=f"EXPLAIN {len(lines)}" and "EXPLAIN")

    # -- writes --------------------------------------------------------------------
    async def _with_write_lock(self, work: Callable[[], Awaitable[dict[str, pa.Table]]]) -> dict[str, pa.Table]:
        """Run read-then-write work so no other write can come between read and commit."""
        if self.txn is not None:
            if not self.txn.holds_lock:
                await self.coord.write_lock.acquire()
                self.txn.holds_lock = True
            return await work()
        async with self.coord.write_lock:
            updates = await work()
            if any(t.num_rows for t in updates.values()):
                await self.coord.commit([], updates)
            return {}

    async def _stage(self, updates: dict[str, pa.Table]) -> None:
        await staging.stage(self, updates)

    def _holds_write_lock(self) -> bool:
        """Whether this session's transaction block holds the write lock (it took it for a
        write that read), outside the read-then-write work that holds it for one statement."""
        return self.txn is not None and self.txn.holds_lock

    def _writable(self, name: str, verb: str) -> Item:
        item = self.catalog.require(name)
        if item.kind != "table":
            raise SqlError(WRONG_OBJECT_TYPE, f'cannot {verb} {item.kind} "{name}"')
        sources.check_writable(item, verb.split()[0])
        return item

    async def _insert(self, stmt: st.Insert, params, ptypes) -> Outcome:
        item = self._writable(stmt.table, "insert into")
        returns = returning.plan(item, stmt, "INSERT")
        ctx = self.context()
        rows = writes.constant_rows(item, stmt, ctx, params, ptypes)
        if rows is not None:
            rows = await sequences.fill_rows(self.coord.sequence_values, item, self.catalog, rows, self.txn,
                                             lock_held=self._holds_write_lock(), seen=self.sequences_seen)
        if rows is not None and stmt.on_conflict is None:
            updates = writes.rows_to_updates(item, rows)
            shown = await returning.compute(self, item, stmt, updates, returns, params, ptypes)  # before it commits
            if self.txn is not None:
                await self._stage({item.id: updates})
            else:
                await self.coord.commit_write({item.id: updates})
            return returning.outcome(f"INSERT 0 {updates.num_rows}", item, updates, returns, shown)
        if stmt.on_conflict is not None:
            on_conflict.arbiters(item, stmt.on_conflict)  # a clause that names no key fails first
        done: list[on_conflict.Resolved] = []
        shown: list[returning.Computed | None] = []

        async def work() -> dict[str, pa.Table]:
            proposed = (writes.rows_to_updates(item, rows) if rows is not None
                        else await self._queried_rows(item, stmt, ctx, params, ptypes))
            resolved = on_conflict.Resolved(proposed, proposed, proposed.num_rows)
            if stmt.on_conflict is not None:
                await self.coord.count_keys([item.id])  # the write lock is held
                resolved = await on_conflict.resolve(
                    item, stmt, proposed, self.coord.unique.counts(item),
                    self.txn.updates.get(item.id, []) if self.txn else [], self._table_query)
            done.append(resolved)
            shown.append(await returning.compute(self, item, stmt, resolved.returned, returns, params, ptypes))
            await self._stage({item.id: resolved.updates})
            return {item.id: resolved.updates}

        await self._with_write_lock(work)
        return returning.outcome(f"INSERT 0 {done[0].count}", item, done[0].returned, returns, shown[0])

    async def _queried_rows(self, item: Item, stmt: st.Insert, ctx: SessionContext, params, ptypes) -> pa.Table:
        """INSERT's rows computed by Spark (a query, or VALUES of expressions), as updates."""
        positions = writes.target_columns(item, stmt.columns)
        as_of = self.coord.read_ts()
        overlay = self.txn.overlay() if self.txn else None
        bound = self._bound_write(stmt, item, positions, params, ptypes)
        if writes.is_default_values(stmt):  # a default Spark computes (now(), …), on one row
            positions, source_sql, views, types = [], "SELECT 1", {}, []
        elif bound is not None:
            source_sql, views, types = bound.spark_sql, bound.views, bound.types
        else:
            source_sql, views = self.coord.plan_query(stmt.source, ctx, self._bind(params, ptypes), self.catalog)
            types = (await self.coord.query(source_sql, views, as_of, overlay, describe_only=True)).types
        width = len(types)
        if width > len(positions):
            raise SqlError(SYNTAX_ERROR, "INSERT has more expressions than target columns")
        if width < len(positions) and stmt.columns is not None:
            raise SqlError(SYNTAX_ERROR, "INSERT has more target columns than expressions")
        for pos in positions[:width]:
            if item.columns[pos].identity is not None:
                sequences.check_identity_value(item.columns[pos], stmt.overriding)
        wrapped = writes.coerce_sql(item, positions[:width], source_sql, max(width, 1), types)
        result = await self.coord.query(wrapped, views, as_of, overlay, group=self.group)
        rows = await sequences.fill_table(self.coord.sequence_values, item, self.catalog, result.table,
                                          positions[:width], stmt.overriding, self.txn, lock_held=True,
                                          seen=self.sequences_seen)
        return writes.arrow_to_updates(item, rows, +1)

    def _bound_write(self, stmt: st.Insert | st.Update | st.Delete, item: Item, positions: list[int],
                     params, ptypes) -> bound_query.BoundQuery | None:
        """The rows a write computes, through the front end of our own (as `_bound`): for
        INSERT the query's, cast to the target columns at `positions`; for UPDATE and
        DELETE every column of the rows they change (planner.sql.dml)."""
        if self.settings.get("sql_frontend") != "postgres" or not stmt.text:
            return None
        targets = writes.dml_targets(item, positions)
        return bound_query.plan_write(stmt.text, item.name, targets, self.catalog,
                                      lambda views: self.coord.resolver(views, self.context(), self.catalog),
                                      params, ptypes)

    async def _table_query(self, select: exp.Expression) -> pa.Table:
        """A SELECT over the catalog as this session sees it, at the latest timestamp."""
        spark_sql, views = self.coord.plan_query(select, self.context(), None, self.catalog)
        overlay = self.txn.overlay() if self.txn else None
        result = await self.coord.query(spark_sql, views, self.coord.read_ts(), overlay, group=self.group)
        return result.table

    async def _change(self, item: Item, stmt: st.Update | st.Delete, select: Callable[[], exp.Expression], params, ptypes,
                      with_new: bool, returns: returning.Returning,
                      drawn: tuple[int, ...] = ()) -> tuple[int, pa.Table, returning.Computed | None]:
        """The rows changed, the rows RETURNING reads (the new ones for UPDATE, the old ones
        for DELETE), and what a RETURNING query computed of them before they were staged;
        `drawn`: columns set to DEFAULT that take their sequences' next values."""
        count = 0
        returned: list = []

        async def work() -> dict[str, pa.Table]:
            nonlocal count
            bound = self._bound_write(stmt, item, list(range(len(item.columns))), params, ptypes)
            if bound is not None:
                spark_sql, views = bound.spark_sql, bound.views
            else:
                spark_sql, views = self.coord.plan_query(select(), self.context(), self._bind(params, ptypes),
                                                         self.catalog)
            overlay = self.txn.overlay() if self.txn else None
            result = await self.coord.query(spark_sql, views, self.coord.read_ts(), overlay,
                                            group=self.group)
            k = len(item.columns)
            old = writes.arrow_to_updates(item, result.table.select(list(range(k))), -1, check=False)
            parts = [old]
            new = result.table.select(list(range(k, 2 * k))) if with_new else None
            if drawn:
                new = await sequences.fill_columns(self.coord.sequence_values, item, self.catalog, new, drawn, self.txn,
                                                   lock_held=True, seen=self.sequences_seen)
            if with_new:
                parts.append(writes.arrow_to_updates(item, new, +1))
            returned[:] = [parts[-1], await returning.compute(self, item, stmt, parts[-1], returns, params, ptypes)]
            updates = writes.concat_updates(parts)
            count = result.table.num_rows
            change = referential_actions.RowChange(item, result.table.select(list(range(k))), new)
            written = await referential_actions.apply(self, change, {item.id: updates})  # with what FKs' actions do
            await self._stage(written)
            return written

        await self._with_write_lock(work)
        return count, returned[0], returned[1]

    async def _update(self, stmt: st.Update, params, ptypes) -> Outcome:
        item = self._writable(stmt.table, "update")
        drawn = sequences.check_update(item, stmt.assignments)
        returns = returning.plan(item, stmt, "UPDATE")
        count, rows, shown = await self._change(item, stmt, lambda: writes.update_select(item, stmt), params, ptypes, True,
                                                returns, drawn)
        return returning.outcome(f"UPDATE {count}", item, rows, returns, shown)

    async def _delete(self, stmt: st.Delete, params, ptypes) -> Outcome:
        item = self._writable(stmt.table, "delete from")
        returns = returning.plan(item, stmt, "DELETE")
        count, rows, shown = await self._change(item, stmt, lambda: writes.delete_select(item, stmt), params, ptypes, False,
                                                returns)
        return returning.outcome(f"DELETE {count}", item, rows, returns, shown)

    async def _truncate(self, stmt: st.Truncate, params, ptypes) -> Outcome:
        """Every row of each table deleted, all in one commit (every table is checked first)."""
        notices: list[tuple[str, str]] = []
        items = foreign_keys.truncated(self.catalog, [self._writable(name, "truncate") for name in stmt.tables],
                                       stmt.cascade, notices)

        async def work() -> dict[str, pa.Table]:
            out: dict[str, pa.Table] = {}
            overlay = self.txn.overlay() if self.txn else None
            for item in items:
                select = writes.delete_select(item, st.Delete(item.name, None, None))
                spark_sql, views = self.coord.plan_query(select, self.context(), {}, self.catalog)
                result = await self.coord.query(spark_sql, views, self.coord.read_ts(), overlay, group=self.group)
                out[item.id] = writes.arrow_to_updates(item, result.table, -1, check=False)
            await self._stage(out)
            return out

        await self._with_write_lock(work)
        if stmt.restart_identity:
            await sequence_ddl.restart_owned(self, items, lock_held=self._holds_write_lock())
        return CommandDone("TRUNCATE TABLE", notices=notices)

    # -- DDL -----------------------------------------------------------------------
    # `coord`, `server_sources` and these two are the StatementContext (server.statement_context)
    # that the handlers of sources, connections, secrets and roles get.
    def no_ddl_in_transaction(self, what: str) -> None:
        if self.txn is not None and self.txn.explicit:
            raise SqlError(ACTIVE_SQL_TRANSACTION, f"{what} cannot run inside a transaction block")

    async def ddl(self, plan: Callable[[], list[CatalogOp]]) -> None:
        async with self.coord.write_lock:
            ops = plan()
            if ops:
                await self.coord.commit(ops, {})

    @property
    def catalog(self) -> Catalog:
        """The catalog as this session sees it: with the DDL its transaction block staged."""
        if self.txn is not None and self.txn.catalog is not None:
            return self.txn.catalog
        return self.coord.catalog

    async def table_ddl(self, plan: Callable[[Catalog], list[CatalogOp]]) -> None:
        """CREATE/DROP TABLE and VIEW: committed at once, or, in a transaction block, staged and
        committed with the block's writes at COMMIT, atomically (PostgreSQL's transactional
        DDL). A block's reads see the catalog as committed; its writes see its own tables."""
        txn = self.txn
        if txn is None or not txn.explicit:
            await self.ddl(lambda: plan(self.coord.catalog))
            return
        txn.stage_ddl(plan(txn.catalog or self.coord.catalog), self.coord.catalog)

    async def _create_table(self, stmt: st.CreateTable, params, ptypes) -> Outcome:
        sequence_ddl.check_nextval_defaults(self.catalog, stmt)
        for col in stmt.columns:
            if col.default is not None and nextval_literal(col.default) is None:
                # Fail now, not at the first INSERT, on a default that cannot be computed.
                writes.constant_value(col.default, col.type, self.context(), {}, {}) \
                    if not _needs_spark(col.default) else None
        notices = []

        def plan(catalog: Catalog) -> list[CatalogOp]:
            if stmt.if_not_exists and (catalog.get(stmt.name) is not None or stmt.name in catalog.index_names()):
                notices.append(("NOTICE", f'relation "{stmt.name}" already exists, skipping'))
                return []
            keys = unique_keys.plan_keys(catalog, stmt)
            primary = {c for k in keys if k.primary for c in k.columns}
            table_id = catalog.allocate_id()
            columns, made = sequence_ddl.table_columns(
                catalog, stmt, table_id, self.coord.read_ts(),
                [Column(c.name, c.type, c.not_null or c.name in primary, sequence_ddl.default_text(c.default))
                 for c in stmt.columns])
            ops = [op for s in made for op in catalog.plan_create(s)]
            item = Item(table_id, stmt.name, "table", tuple(columns), self.coord.read_ts(), keys=keys,
                        checks=check_constraints.plan_checks(catalog, stmt.name, [c.name for c in stmt.columns],
                                                             stmt.checks, tuple(k.name for k in keys)),
                        foreign_keys=foreign_keys.plan(catalog, stmt.name, table_id, tuple(columns), keys,
                                                       stmt.foreign_keys))
            return ops + catalog.plan_create(item, stmt.if_not_exists)

        await self.table_ddl(plan)
        return CommandDone("CREATE TABLE", notices=notices)

    async def _create_view(self, stmt: st.CreateView, params, ptypes) -> Outcome:
        if any(True for _ in stmt.query.find_all(exp.Parameter)):
            raise SqlError(FEATURE_NOT_SUPPORTED, "views cannot have parameters")
        sql = stmt.sql
        if stmt.column_names:
            cols = ", ".join(f'"{c}"' for c in stmt.column_names)
            sql = f"SELECT * FROM ({sql}) AS __view({cols})"
        tree = parse_one(sql).statement.ast
        spark_sql, views = self.coord.plan_query(tree, self.context(), catalog=self.catalog)
        shape = await self.coord.query(spark_sql, views, self.coord.read_ts(), describe_only=True)
        if len(set(shape.names)) != len(shape.names):
            dup = next(n for n in shape.names if shape.names.count(n) > 1)
            raise SqlError("42701", f'column "{dup}" specified more than once')

        def plan(catalog: Catalog) -> list[CatalogOp]:
            deps = tuple(catalog.require(n).id for n in referenced_relations(tree))
            item = Item(catalog.allocate_id(), stmt.name, "view",
                        tuple(Column(n, t) for n, t in zip(shape.names, shape.types)),
                        self.coord.read_ts(), sql, deps)
            return catalog.plan_create(item, replace=stmt.or_replace)

        await self.table_ddl(plan)
        return CommandDone("CREATE VIEW")

    async def _drop(self, stmt: st.Drop, params, ptypes) -> Outcome:
        notices: list[tuple[str, str]] = []

        def plan(catalog: Catalog) -> list[CatalogOp]:
            if stmt.object_type == "SEQUENCE":
                ops, skipped = sequence_ddl.plan_drop_sequences(catalog, stmt)
            else:
                ops, skipped = catalog.plan_drop(stmt.object_type, stmt.names, stmt.if_exists, stmt.cascade)
                ops = foreign_keys.drop_references(catalog, sequence_ddl.drop_owned(catalog, ops), stmt.cascade,
                                                   notices)
            if any(catalog.items[op.id].source_id for op in ops if isinstance(op, DropItem)):
                self.no_ddl_in_transaction("DROP TABLE of a table fed by a source")
            notices.extend(("NOTICE", n) for n in skipped)
            return ops

        await self.table_ddl(plan)
        if self.server_sources is not None:
            await self.server_sources.forget_dropped()  # a dropped table fed by a source
        return CommandDone(f"DROP {stmt.object_type}", notices=notices)

    # -- transactions -------------------------------------------------------------
    async def _begin(self, stmt, params, ptypes) -> Outcome:
        if self.txn is not None and self.txn.explicit:
            return CommandDone("BEGIN", notices=[("WARNING", "there is already a transaction in progress")])
        if self.txn is None:
            self.txn = Transaction(explicit=True, started=_now())
        else:
            self.txn.explicit = True
        self.txn.isolation = stmt.isolation
        return CommandDone("BEGIN")

    async def _commit(self, stmt, params, ptypes) -> Outcome:
        if self.txn is None:
            return CommandDone("COMMIT", notices=[("WARNING", "there is no transaction in progress")])
        if self.txn.failed:
            self._release()
            return CommandDone("ROLLBACK")
        await self._commit_txn()
        return CommandDone("COMMIT")

    async def _commit_txn(self) -> None:
        txn = self.txn
        try:
            await self._commit_staged(txn)
        finally:
            self._release()
        for channel, payload in dict.fromkeys(txn.notifies):  # PostgreSQL folds duplicates
            self.notify(channel, payload)

    async def _commit_staged(self, txn: Transaction) -> None:
        updates = {k: writes.concat_updates(v) for k, v in txn.updates.items()}
        if txn.ddl_ops:
            await self._commit_with_ddl(txn, updates)
        elif updates:
            if txn.holds_lock:
                await self.coord.commit([], updates)
            else:
                # Only writes that read nothing (the lock is taken by any that reads).
                await self.coord.commit_write(updates)

    async def _commit_with_ddl(self, txn: Transaction, updates: dict[str, pa.Table]) -> None:
        """A block's staged DDL and writes at one timestamp, in one log record - unless the
        catalog changed under it (a name taken, an object dropped): then nothing, and 40001."""
        if txn.holds_lock:
            txn.check_ddl(self.coord.catalog)
            await self.coord.commit(txn.ddl_ops, updates)
        else:
            async with self.coord.write_lock:
                txn.check_ddl(self.coord.catalog)
                await self.coord.commit(txn.ddl_ops, updates)
        if self.server_sources is not None and any(isinstance(op, DropItem) for op in txn.ddl_ops):
            await self.server_sources.forget_dropped()

    async def _rollback(self, stmt, params, ptypes) -> Outcome:
        if self.txn is None:
            return CommandDone("ROLLBACK", notices=[("WARNING", "there is no transaction in progress")])
        self._release()
        return CommandDone("ROLLBACK")

    # -- savepoints ------------------------------------------------------------------
    async def _savepoint(self, stmt: st.Savepoint, params, ptypes) -> Outcome:
        transaction.explicit(self.txn, "SAVEPOINT").savepoint(stmt.name, frozenset(self.cursors))
        return CommandDone("SAVEPOINT")

    async def _release_savepoint(self, stmt: st.ReleaseSavepoint, params, ptypes) -> Outcome:
        transaction.explicit(self.txn, "RELEASE SAVEPOINT").release(stmt.name)
        return CommandDone("RELEASE")

    async def _rollback_to_savepoint(self, stmt: st.RollbackToSavepoint, params, ptypes) -> Outcome:
        txn = transaction.explicit(self.txn, "ROLLBACK TO SAVEPOINT")
        kept = txn.rollback_to(stmt.name, self.coord.catalog)
        for name in [n for n in self.cursors if n not in kept]:
            self.cursors.pop(name).close()
        return CommandDone("ROLLBACK")

    # -- LISTEN / NOTIFY --------------------------------------------------------------
    async def _listen(self, stmt: st.Listen, params, ptypes) -> Outcome:
        self.listening.add(stmt.channel)
        return CommandDone("LISTEN")

    async def _unlisten(self, stmt: st.Unlisten, params, ptypes) -> Outcome:
        if stmt.channel is None:
            self.listening.clear()
        else:
            self.listening.discard(stmt.channel)
        return CommandDone("UNLISTEN")

    async def _notify(self, stmt: st.Notify, params, ptypes) -> Outcome:
        if len(stmt.payload.encode()) >= 8000:
            raise SqlError(INVALID_PARAMETER_VALUE, "payload string too long")
        if self.txn is not None:
            self.txn.notifies.append((stmt.channel, stmt.payload))  # delivered at COMMIT
        else:
            self.notify(stmt.channel, stmt.payload)
        return CommandDone("NOTIFY")

    # -- variables and SHOW ----------------------------------------------------------
    async def _set(self, stmt: st.SetVariable, params, ptypes) -> Outcome:
        var = self.settings.set(stmt.name, stmt.value)
        changes = [(display_name(var.name), self.settings.values[var.name])] if var.reported else []
        return CommandDone("SET", parameter_changes=changes)

    async def _reset(self, stmt: st.ResetVariable, params, ptypes) -> Outcome:
        changed = self.settings.reset(stmt.name)
        return CommandDone("RESET", parameter_changes=[(display_name(v.name), self.settings.values[v.name])
                                                   for v in changed if v.reported])

    def system_flag(self, name: str) -> str:
        return self.coord.catalog.system.get(name, SYSTEM_VARIABLES[name])

    async def _alter_system(self, stmt: st.AlterSystem, params, ptypes) -> Outcome:
        self.no_ddl_in_transaction("ALTER SYSTEM")
        value = system_value(stmt.name, stmt.value)
        await self.ddl(lambda: [SetSystem(stmt.name, value)])
        return CommandDone("ALTER SYSTEM")

    async def _show_variable(self, stmt: st.ShowVariable, params, ptypes) -> Outcome:
        if stmt.name in SYSTEM_VARIABLES:
            return rows_outcome([stmt.name], [(self.system_flag(stmt.name),)], tag="SHOW")
        if stmt.name == "all":
            rows = [(n, self.settings.values[n], v.description) for n, v in sorted(VARIABLES.items())]
            return rows_outcome(["name", "setting", "description"], rows, tag="SHOW")
        var = self.settings.variable(stmt.name)
        value = self.settings.values[var.name]
        if var.name == "transaction_isolation" and self.txn is not None and self.txn.isolation:
            value = self.txn.isolation
        return rows_outcome([var.name], [(value,)], tag="SHOW")

    async def _discard(self, stmt: st.Discard, params, ptypes) -> Outcome:
        if stmt.what == "all":
            self.no_ddl_in_transaction("DISCARD ALL")
            changed = self.settings.reset("all")
            self.deallocate(None)
            return CommandDone("DISCARD ALL", parameter_changes=[
                (display_name(v.name), self.settings.values[v.name]) for v in changed if v.reported])
        return CommandDone(f"DISCARD {stmt.what.upper()}")

    async def _deallocate(self, stmt: st.Deallocate, params, ptypes) -> Outcome:
        if not self.deallocate(stmt.name):
            raise SqlError(INVALID_PREPARED_STATEMENT, f'prepared statement "{stmt.name}" does not exist')
        return CommandDone("DEALLOCATE ALL" if stmt.name is None else "DEALLOCATE")

    async def _empty(self, stmt, params, ptypes) -> Outcome:
        return EmptyQuery()

    # -- SUBSCRIBE, cursors, COPY -----------------------------------------------------
    def _subscription(self, stmt: ss.Subscribe) -> Subscription:
        flag = _FLAGS.get(stmt.output.kind)
        if flag is not None and self.system_flag(flag[0]) != "on":
            raise SqlError(FEATURE_NOT_SUPPORTED,
                           f"{flag[1]} is not enabled: the system flag {flag[0]} is off",
                           hint=f"Enable it with ALTER SYSTEM SET {flag[0]} = on.")
        return Subscription(self.coord, stmt, self.context(), self.user, self.on_overflow,
                            self.subscribe_limits, pg_frontend=self.settings.get("sql_frontend") == "postgres")

    async def _start_subscription(self, stmt: ss.Subscribe) -> Subscription:
        sub = self._subscription(stmt)
        sub.plan()
        await sub.describe()
        await sub.start()
        return sub

    async def _subscribe(self, stmt: ss.Subscribe, params, ptypes,
                         copy_options: CopyOptions | None = None) -> Stream:
        # Allowed in a transaction block too, as in Materialize: asyncpg (and JDBC) read
        # a SUBSCRIBE through a portal, which they only open inside a transaction.
        sub = await self._start_subscription(stmt)
        return Stream(sub.output.names, sub.output.types, sub, copy_options)

    async def _copy(self, stmt: CopyTo, params, ptypes) -> Outcome:
        options = CopyOptions(stmt.format, stmt.delimiter, stmt.null, stmt.header, stmt.quote, stmt.escape)
        if isinstance(stmt.inner, ss.Subscribe):
            return await self._subscribe(stmt.inner, params, ptypes, options)
        out = await self._query(stmt.inner, params, ptypes)
        return CopyOut(out.names, out.types, out.table, options, notices=out.notices)

    async def _copy_from(self, stmt: CopyFrom, params, ptypes) -> Outcome:
        item = self._writable(stmt.table, "copy to")
        positions = writes.target_columns(item, stmt.columns)
        options = CopyOptions(stmt.format, stmt.delimiter, stmt.null, stmt.header, stmt.quote, stmt.escape)
        ctx = self.context()
        defaults, computed = writes.default_values(item, positions, ctx)
        if computed:
            select = parse_one(f"SELECT {', '.join(computed.values())}").statement.ast
            spark_sql, views = self.coord.plan_query(select, ctx, catalog=self.catalog)
            result = await self.coord.query(spark_sql, views, self.coord.read_ts(), group=self.group)
            defaults.update(zip(computed, result.table.to_pylist()[0].values()))
        return CopyIn(item, positions, options, defaults)

    async def copy_in(self, copy: CopyIn, data: bytes) -> int:
        """Store the rows of a COPY ... FROM STDIN: committed as one write, or staged in the
        open transaction. Every field goes through its column type's input function, and
        an error names the line (and the column) as PostgreSQL's CONTEXT does."""
        item = copy.item
        names = [item.columns[p].name for p in copy.positions]
        context = f"COPY {item.name}"
        try:
            if copy.options.format == "binary":
                types = [item.columns[p].type for p in copy.positions]
                parsed = await asyncio.to_thread(copy_out.parse_binary, data, types, names)
            else:
                parsed = await asyncio.to_thread(copy_format.parse, data, copy.options, names)
        except copy_format.CopyDataError as err:
            err.where = context if err.line is None else f"{context}, line {err.line}"
            if err.text is not None:
                err.where += f': "{err.text}"'
            raise
        if not parsed.num_rows:
            return 0
        generated = {}
        for pos, value in copy.defaults.items():
            if value is sequences.NEXTVAL:  # and currval follows, as for INSERT
                sequence = sequences.column_sequence(self.catalog, item, item.columns[pos])
                generated[pos] = await self.coord.sequence_values.take(sequence, parsed.num_rows, self.txn,
                                                                       lock_held=self._holds_write_lock())
                self.sequences_seen.record(sequence, generated[pos])
        # Off the event loop: a big COPY must not hold up every other session.
        updates = await asyncio.to_thread(copy_load.updates, item, copy.positions, parsed, copy.defaults, context,
                                          generated)
        if self.txn is not None:
            await self._stage({item.id: updates})
        else:
            await self.coord.commit_write({item.id: updates})
        return parsed.num_rows

    async def _explain_subscribe(self, stmt: ss.ExplainSubscribe, params, ptypes) -> Outcome:
        sub = self._subscription(stmt.inner)
        sub.plan()
        lines = [(line,) for line in sub.dataflow.explain()]
        return rows_outcome(["QUERY PLAN"], lines, tag="EXPLAIN")

    def _cursor(self, name: str) -> Cursor:
        cursor = self.cursors.get(name)
        if cursor is None:
            raise SqlError(INVALID_CURSOR_NAME, f'cursor "{name}" does not exist')
        return cursor

    async def _declare(self, stmt: ss.DeclareCursor, params, ptypes) -> Outcome:
        if self.txn is None or not self.txn.explicit:
            raise SqlError(NO_ACTIVE_SQL_TRANSACTION, "DECLARE CURSOR can only be used in transaction blocks")
        if stmt.name in self.cursors:
            raise SqlError(DUPLICATE_CURSOR, f'cursor "{stmt.name}" already exists')
        if isinstance(stmt.inner, ss.Subscribe):
            sub = await self._start_subscription(stmt.inner)
            names, types = sub.output.names, sub.output.types
            cursor = Cursor(names, types, subscription=sub, ahead=FetchAhead(sub, names, types))
        else:
            out = await self._query(stmt.inner, params, ptypes)
            cursor = Cursor(out.names, out.types, table=out.table)
        self.cursors[stmt.name] = cursor
        return CommandDone("DECLARE CURSOR")

    async def _fetch(self, stmt: ss.Fetch, params, ptypes) -> Outcome:
        cursor = self._cursor(stmt.cursor)
        if cursor.subscription is None:
            total = cursor.table.num_rows
            stop = total if stmt.count is None else min(total, cursor.offset + stmt.count)
            table = cursor.table.slice(cursor.offset, stop - cursor.offset)
            cursor.offset = stop
            return Rows(f"FETCH {table.num_rows}", cursor.names, cursor.types, table)
        if stmt.count == 0:  # FETCH 0: the columns, at once (as Materialize answers it)
            return Rows("FETCH 0", cursor.names, cursor.types, subscribe_output.no_rows(len(cursor.names)))
        return await cursor.ahead.fetch(stmt.count, stmt.timeout, self.wait_for_rows)

    async def wait_for_rows(self, sub: Subscription, timeout: float | None) -> None:
        """Wait for a subscription's rows, giving way to a cancel request."""
        waiter = asyncio.ensure_future(sub.wait(timeout))
        cancel = asyncio.ensure_future(self.cancel_event.wait())
        try:
            await asyncio.wait({waiter, cancel}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()
            cancel.cancel()
        if self.cancel_event.is_set():
            self.cancel_event.clear()
            raise SqlError(QUERY_CANCELED, "canceling statement due to user request")

    async def _close_cursor(self, stmt: ss.CloseCursor, params, ptypes) -> Outcome:
        if stmt.name is None:
            for cursor in self.cursors.values():
                cursor.close()
            self.cursors.clear()
            return CommandDone("CLOSE CURSOR ALL")
        self._cursor(stmt.name).close()
        del self.cursors[stmt.name]
        return CommandDone("CLOSE CURSOR")


_FLAGS = {
    "order_by": ("enable_within_timestamp_order_by_in_subscribe", "SUBSCRIBE ... WITHIN TIMESTAMP ORDER BY"),
    "upsert": ("enable_envelope_upsert_in_subscribe", "SUBSCRIBE ... ENVELOPE UPSERT"),
    "debezium": ("enable_envelope_debezium_in_subscribe", "SUBSCRIBE ... ENVELOPE DEBEZIUM"),
}


def _postgres_names(stmt: st.Query, names: list[str]) -> list[str]:
    """The older path's output names as PostgreSQL's parser gives them, where it reads the
    query and names as many columns (a `*` leaves the relations' names as they came)."""
    pg = colnames.select_list_names(stmt.text) if stmt.text else None
    return pg if pg is not None and len(pg) == len(names) else names


def _needs_spark(node: exp.Expression) -> bool:
    return not isinstance(node, (exp.Literal, exp.Null, exp.Boolean, exp.Neg, exp.Cast, exp.Interval))


async def _outcome(tag: str) -> Outcome:
    return CommandDone(tag)


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC).replace(tzinfo=None)


_HANDLERS: dict[type, Callable] = {
    st.Query: Session._query,
    st.Explain: Session._explain,
    st.Insert: Session._insert,
    st.Update: Session._update,
    st.Delete: Session._delete,
    st.Truncate: Session._truncate,
    st.CreateTable: Session._create_table,
    st.CreateView: Session._create_view,
    st.Drop: Session._drop,
    st.Begin: Session._begin,
    st.Commit: Session._commit,
    st.Rollback: Session._rollback,
    st.SetTransaction: lambda self, stmt, params, ptypes: _outcome("SET"),
    st.Listen: Session._listen,
    st.Unlisten: Session._unlisten,
    st.Notify: Session._notify,
    st.Savepoint: Session._savepoint,
    st.ReleaseSavepoint: Session._release_savepoint,
    st.RollbackToSavepoint: Session._rollback_to_savepoint,
    st.SetVariable: Session._set,
    st.ResetVariable: Session._reset,
    st.ShowVariable: Session._show_variable,
    st.Discard: Session._discard,
    st.Deallocate: Session._deallocate,
    st.Empty: Session._empty,
    st.AlterSystem: Session._alter_system,
    ss.Subscribe: Session._subscribe,
    CopyTo: Session._copy,
    CopyFrom: Session._copy_from,
    ss.ExplainSubscribe: Session._explain_subscribe,
    ss.DeclareCursor: Session._declare,
    ss.Fetch: Session._fetch,
    ss.CloseCursor: Session._close_cursor,
}

_HANDLERS.update(sources.HANDLERS)
_HANDLERS.update(indexes.HANDLERS)
_HANDLERS.update(alter_table.HANDLERS)
_HANDLERS.update(prepared.HANDLERS)
_HANDLERS.update(create_table_as.HANDLERS)
_HANDLERS.update(roles.HANDLERS)
_HANDLERS.update(sequence_ddl.HANDLERS)
_HANDLERS.update(show.HANDLERS)
_HANDLERS.update(constraint_modes.HANDLERS)
