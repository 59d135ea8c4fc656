"""A running SUBSCRIBE: its dataflow, its state, and the output its client reads.

A subscription registers with the coordinator and runs as one task: it sends the
snapshot at `as_of`, and from then on is woken by commits and by the advancing
frontier. Each wake-up is one micro-batch: the updates of every timestamp that became
complete are processed by Spark in one job, consolidated per timestamp, shaped by the
output formatter, and put into the subscription's output buffer. Spark is only asked to
work when an input changed; an idle system costs nothing but progress rows.

Memory is bounded by what the client has not read, never by the size of a snapshot or a
batch:

- the output buffer holds at most a budget of unread bytes (`SubscribeLimits`); while it
  is full the task waits, so a client that stops reading holds back its own subscription
  and nothing else (or, with a stall timeout, is disconnected with 53400);
- a large snapshot or batch of a linear query is not collected: Spark spills its
  result, and consolidated rows are read back chunk by chunk (server.subscribe_linear);
- commits that arrive while the task is held back are kept only up to `PENDING_ROWS`
  updates; past that the subscription lets go of them and, once its client reads again,
  reads the updates after its frontier from storage (its read hold keeps them there).

How the result changes is the strategy's (server.subscribe_strategy), chosen once when
the subscription plans. Python work over the data (state of joins and aggregates,
consolidation, formatting) runs on worker threads: the event loop only moves finished tables.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pyarrow as pa
from sqlglot import exp

from planner.dataflow import DataflowPlan, plan_dataflow
from planner.errors import FEATURE_NOT_SUPPORTED, INVALID_PARAMETER_VALUE, UNDEFINED_TABLE, SqlError
from planner.sql import delta
from planner.sql.spark_sql import Fixpoint
from planner.subscribe_syntax import Subscribe
from planner.translate import SessionContext, resolve_tree
from planner.types import SqlType
from server import bound_query, metrics
from server import subscribe_output as output
from server.subscribe_buffer import DEFAULT_BUDGET, OutputBuffer, Stalled
from server.subscribe_format import OutputPlan, format_timestamp, plan_output
from server.subscribe_linear import LinearStrategy
from server.subscribe_state import Changes
from server.subscribe_strategy import AggregateStrategy, JoinStrategy, RecomputeStrategy, Strategy
from server.system_keys import quote_ident
from spark_backend import microbatch
from spark_backend.schema import arrow_type

log = logging.getLogger("sparkwire.subscribe")

MAX_FUTURE_MS = 60_000  # AS OF at most this far past the current frontier
BUFFER_FULL = "53400"
# Updates from commits a held-back subscription keeps; past this it rereads storage later.
PENDING_ROWS = 100_000
OUTPUT_CHUNK_ROWS = 65_536  # rows per output table the Python strategies hand the buffer

# Python work of every subscription (state, consolidation, formatting): off the event loop.
_WORK = ThreadPoolExecutor(max_workers=4, thread_name_prefix="subscribe")
_ids = itertools.count(1)

# The strategy of each plan, by the name the planner gives it (planner.dataflow).
STRATEGIES: dict[str, type[Strategy]] = {
    cls.name: cls for cls in (LinearStrategy, AggregateStrategy, JoinStrategy, RecomputeStrategy)}


@dataclass(frozen=True)
class SubscribeLimits:
    """Per-subscription limits: --subscribe-buffer-bytes and --subscribe-stall-timeout."""

    buffer_bytes: int = DEFAULT_BUDGET
    stall_timeout: float | None = None  # seconds; None: a client may stop reading for ever


def _materialize_wording(err: SqlError) -> SqlError:
    """Materialize's wording for a relation it does not know; any other error as it is."""
    if err.sqlstate == UNDEFINED_TABLE and err.message.startswith('relation "'):
        name = err.message.split('"')[1]
        return SqlError(UNDEFINED_TABLE, f"unknown catalog item '{name}'")
    return err


class Subscription:
    """One SUBSCRIBE's dataflow; rows leave through `take` / `wait`."""

    def __init__(self, coord, stmt: Subscribe, ctx: SessionContext, user: str = "materialize",
                 on_overflow: Callable[[], None] | None = None, limits: SubscribeLimits | None = None,
                 pg_frontend: bool = False) -> None:
        self.id = next(_ids)
        self.coord = coord
        self.stmt = stmt
        self.ctx = ctx
        self.pg_frontend = pg_frontend  # plan through planner.sql where it covers the query
        self.user = user
        self.on_overflow = on_overflow
        self.limits = limits or SubscribeLimits()
        self.created_at = time.time()
        self.out = OutputBuffer(self.limits.buffer_bytes, self.limits.stall_timeout, label=f"s{self.id}")
        self._wake = asyncio.Event()
        self._pending: list[tuple[int, dict[str, pa.Table]]] = []
        self._pending_rows = 0
        self._let_go = False  # pending updates were dropped: reread storage after the frontier
        self.error: SqlError | None = None
        self.finished = False  # nothing more will be put into `out`
        self.rows_sent = 0
        self._task: asyncio.Task | None = None
        self._listening_from = 0
        self.frontier = 0
        self._last_progress = -1
        self._group: str | None = None  # Spark job group of the dataflow's jobs
        self._in_spark = 0  # Spark calls of this dataflow running now (close() cancels them)
        self._waited = 0.0  # seconds spent waiting for room in the buffer
        # Set once the snapshot's first rows are buffered (or it has none, or failed): start()
        # returns then, so DECLARE, COPY and a bare SUBSCRIBE report a snapshot's error
        # themselves, and a first FETCH finds a small snapshot whole.
        self._started = asyncio.Event()
        self._in_snapshot = True
        self.names: list[str] = []
        self.types: list[SqlType] | None = None  # known once planned (or, on the sqlglot path, described)

    # -- planning ------------------------------------------------------------------
    def plan(self) -> None:
        """Resolve names and choose the dataflow; no Spark work."""
        if self.stmt.relation is not None and self.coord.catalog.get(self.stmt.relation) is None:
            raise SqlError(UNDEFINED_TABLE, f"unknown catalog item '{self.stmt.relation}'")
        if self.pg_frontend and self._plan_bound():
            return
        self._plan_older()

    def _plan_bound(self) -> bool:
        """Plan through the front end of our own: the query as SELECT plans it, with the same
        columns, types and values, the dataflow chosen from its operator tree (planner.sql.delta).
        False where the front end does not cover the query.

        A numeric result whose scale PostgreSQL picks value by value (a division, an avg:
        planner.sql.value_scale) is computed by a UDF in Spark, which the linear and join
        strategies run per update as well. The aggregate strategy finishes an avg itself
        (server.subscribe_state, by the same rules), so a GROUP BY with avg keeps that
        strategy: it is planned from the query without the UDFs."""
        text = self.stmt.text or f"SELECT * FROM {quote_ident(self.stmt.relation)}"

        def bound(per_value_scale: bool) -> bound_query.BoundQuery | None:
            try:
                return bound_query.plan(text, self.coord.catalog,
                                        lambda views: self.coord.resolver(views, self.ctx, self.coord.catalog),
                                        per_value_scale=per_value_scale)
            except SqlError as err:
                raise _materialize_wording(err) from None

        def dataflow_of(b: bound_query.BoundQuery) -> DataflowPlan:
            return delta.plan_dataflow(b.rel, b.types, b.spark_sql, b.render)

        exact = bound(True)
        if exact is None:
            return False
        chosen, dataflow = exact, dataflow_of(exact)
        if dataflow.strategy == "recompute" and any(t.per_value_scale for t in exact.types):
            plain = bound(False)
            grouped = dataflow_of(plain) if plain is not None else None
            if grouped is not None and grouped.strategy == "aggregate":
                chosen, dataflow = plain, grouped
        self._planned(chosen.views, chosen.reads, dataflow)
        self.names, self.types = exact.names, exact.types
        return True

    def _planned(self, views: dict, reads: dict[str, str], dataflow: DataflowPlan) -> None:
        self.inputs = [microbatch.Input(cid, spark_name, item.column_names, item.column_types)
                       for cid, (spark_name, item) in views.items() if not isinstance(item, Fixpoint)]
        self.input_ids = {rel.collection_id for rel in self.inputs}
        self.views = views
        self.reads = reads
        self.dataflow = dataflow
        self.strategy: Strategy = STRATEGIES[dataflow.strategy](self)

    def _plan_older(self) -> None:
        """The sqlglot path's planning (`SET sql_frontend = sqlglot`, or a query the front
        end does not cover yet)."""
        if self.stmt.unparsed is not None:
            raise self.stmt.unparsed
        views: dict = {}
        read: dict[str, str] = {}  # every catalog item the query reads (views too): id → name
        if self.stmt.query is not None:
            query = self.stmt.query
        else:
            # A Table node (not a bare Identifier), so name resolution sees the relation.
            query = exp.select("*").from_(exp.Table(this=exp.to_identifier(self.stmt.relation, quoted=True)))
        resolver = self.coord.resolver(views)

        def resolve(name: str):
            source = resolver(name)
            item = self.coord.catalog.get(name) if "." not in name else None
            if source is not None and item is not None:
                read[item.id] = item.name
            return source

        try:
            tree = resolve_tree(query, resolve, self.ctx)
        except SqlError as err:
            raise _materialize_wording(err) from None
        if any(cid.startswith("system:") for cid in views):  # computed per query, no changelog
            raise SqlError(FEATURE_NOT_SUPPORTED, "SUBSCRIBE to a system relation is not supported")
        self._planned(views, read, plan_dataflow(tree))

    async def describe(self) -> OutputPlan:
        if self.types is None:  # the sqlglot path: the types are Spark's result's
            shape = await self.coord.query(self.dataflow.full_sql, self.views, self.coord.read_ts(),
                                           describe_only=True)
            self.names, self.types = shape.names, shape.types
        self.relation_types = [arrow_type(t) for t in self.types]
        self.output = plan_output(self.stmt.output, self.names, self.types, self.stmt.progress)
        return self.output

    # -- lifecycle -------------------------------------------------------------------
    async def start(self) -> None:
        """Check times, start following commits, and start the dataflow: returns once the
        snapshot's first rows are buffered (a large snapshot keeps streaming after)."""
        if not hasattr(self, "dataflow"):
            self.plan()
        if not hasattr(self, "output"):
            await self.describe()
        now = self.coord.read_ts()
        as_of = self.stmt.as_of if self.stmt.as_of is not None else now
        up_to = self.stmt.up_to
        if up_to is not None and up_to < as_of:
            raise SqlError(INVALID_PARAMETER_VALUE,
                           f'subscription lower ("as of") bound is beyond its upper ("up to") bound: '
                           f"{up_to} < {as_of}")
        if as_of > self.coord.frontier + MAX_FUTURE_MS:
            raise SqlError(INVALID_PARAMETER_VALUE,
                           f"AS OF {as_of} is too far in the future: the latest complete timestamp is "
                           f"{self.coord.frontier - 1}")
        since = max([self.coord.store.files(rel.collection_id, now)[1] for rel in self.inputs] or [0])
        if as_of < since:
            if self.stmt.as_of_at_least:
                as_of = since
            else:
                raise SqlError("22000", f"Timestamp ({as_of}) is not valid for all inputs: "
                                        f"[Antichain {{ elements: [{since}] }}]",
                               detail=f"History before {since} has been compacted; valid timestamps are "
                                      f"{since} to {self.coord.frontier - 1}.",
                               hint="Use AS OF AT LEAST to start at the earliest valid timestamp.")
        while as_of >= self.coord.frontier:  # AS OF slightly in the future: wait for it
            await asyncio.sleep(0.05)
        await self.strategy.prepare()
        self.as_of = as_of
        # Listen before reading, so no commit falls between snapshot and stream.
        self._listening_from = self.coord.read_ts()
        self.coord.listeners.add(self)
        self.coord.read_holds[self] = as_of
        self._group = self.coord.engine.new_group()
        self._task = asyncio.get_running_loop().create_task(self._run())
        try:
            await self._started.wait()
        except BaseException:
            self.close()
            raise
        if self.error is not None and self.finished:
            self.close()
            raise self.error
        self._counted = True
        metrics.SUBSCRIPTIONS.inc(output_mode=self.stmt.output.label)
        metrics.ACTIVE_SUBSCRIPTIONS.inc(output_mode=self.stmt.output.label)
        log.info("subscription started", extra={
            "event": "subscribe_start", "subscription": self.id, "strategy": self.strategy.name,
            "output_mode": self.stmt.output.label, "as_of": as_of})

    def close(self) -> None:
        """Stop the dataflow and forget it; safe to call more than once."""
        self.coord.listeners.discard(self)
        self.coord.read_holds.pop(self, None)
        if self._task is not None and not self._task.done() and self._task is not asyncio.current_task():
            self._task.cancel()
            if self._in_spark:
                self.coord.engine.cancel(self._group)  # a spill or snapshot job in flight
        self.out.discard()
        if getattr(self, "_counted", False):
            self._counted = False
            metrics.ACTIVE_SUBSCRIPTIONS.dec(output_mode=self.stmt.output.label)
            log.info("subscription ended", extra={"event": "subscribe_end", "subscription": self.id,
                                                  "rows_sent": self.rows_sent})
        self.finished = True

    # -- coordinator callbacks ---------------------------------------------------------
    def on_commit(self, ts: int, updates: dict[str, pa.Table]) -> None:
        if ts <= self._listening_from:
            return  # already part of the snapshot or the history read
        if not self._let_go:
            mine = {cid: t for cid, t in updates.items() if cid in self.input_ids}
            if mine:
                self._pending.append((ts, mine))
                self._pending_rows += sum(t.num_rows for t in mine.values())
                if self._pending_rows > PENDING_ROWS:
                    # Held back (or far behind): storage has these too; read them from there.
                    self._pending.clear()
                    self._pending_rows = 0
                    self._let_go = True
        self._wake.set()

    def on_frontier(self) -> None:
        self._wake.set()

    # -- the dataflow -------------------------------------------------------------------
    async def _run(self) -> None:
        try:
            if self.stmt.progress:
                # Materialize: "the first update emitted by the SUBSCRIBE is guaranteed to be a
                # progress message indicating the subscribe's AS OF timestamp".
                await self._emit_progress(self.as_of)
            await self._timed(self.strategy.snapshot())
            self._in_snapshot = False
            self._started.set()
            if self._listening_from > self.as_of:
                await self._timed(self.strategy.history(self.as_of, self._listening_from))
            self.frontier = max(self.as_of, self._listening_from) + 1
            while True:
                await self._emit_progress(self.frontier)
                if self.stmt.up_to is not None and self.frontier >= self.stmt.up_to:
                    return
                await self._wake.wait()
                self._wake.clear()
                self._check_inputs()
                frontier = self.coord.frontier
                if self._let_go:
                    self._let_go = False
                    upto = self.coord.read_ts()
                    self._listening_from = upto
                    self._pending.clear()
                    self._pending_rows = 0
                    await self._timed(self.strategy.history(self.frontier - 1, upto))
                pending, self._pending, self._pending_rows = self._pending, [], 0
                if pending:
                    await self._timed(self.strategy.batch(pending))
                self.frontier = max(self.frontier, frontier)
                self.coord.read_holds[self] = self.frontier - 1
        except asyncio.CancelledError:
            raise
        except Stalled:
            metrics.SUBSCRIBE_LAG_DISCONNECTS.inc()
            self._fail(SqlError(BUFFER_FULL, f"subscription buffer full: the client read nothing for "
                                             f"{self.limits.stall_timeout:g} s; closing the connection"))
            if self.on_overflow is not None:
                self.on_overflow()
        except SqlError as err:
            self._fail(err)
        except Exception as exc:
            log.exception("subscription failed")
            self._fail(SqlError("XX000", f"subscription failed: {exc}"))
        finally:
            self.coord.listeners.discard(self)
            self.coord.read_holds.pop(self, None)
            self.strategy.discard()
            self.finished = True
            self.out.close()
            self._started.set()

    def _fail(self, err: SqlError) -> None:
        self.error = err
        self.finished = True
        self.out.close()

    def _check_inputs(self) -> None:
        """A relation the query reads was dropped: the subscription ends, as in Materialize."""
        for item_id, name in self.reads.items():
            if item_id not in self.coord.catalog.items:
                raise SqlError(UNDEFINED_TABLE, f'subscribe has been terminated because underlying relation '
                                                f'"materialize.public.{name}" was dropped')
        for cid in self.input_ids:
            # ALTER TABLE ADD/DROP COLUMN rewrote a table this reads, in a new layout: the
            # query's result type would change, which a running query cannot (PostgreSQL's
            # "cached plan must not change result type" is 0A000 too).
            if self.coord.rewritten.get(cid, -1) > self.as_of:
                item = self.coord.catalog.items.get(cid)
                name = item.name if item is not None else cid
                raise SqlError(FEATURE_NOT_SUPPORTED, f'subscribe has been terminated because underlying relation '
                                                      f'"materialize.public.{name}" was altered')

    async def _timed(self, work) -> None:
        """Run one micro-batch; its time, less what it spent waiting for the client to read."""
        started, waited = time.perf_counter(), self._waited
        try:
            await work
        finally:
            seconds = time.perf_counter() - started - (self._waited - waited)
            metrics.BATCH_SECONDS.observe(max(0.0, seconds), strategy=self.strategy.name)

    # -- what strategies use (server.subscribe_strategy.Host) -------------------------------
    async def spark(self, fn: Callable, *args, grouped: bool = True):
        """`fn(spark, *args)` in the engine, as one of this dataflow's jobs (`grouped`: the
        jobs it starts are in the dataflow's group, which close() cancels; a call that starts
        none need not be)."""
        self._in_spark += 1
        try:
            return await self.coord.engine.run(fn, *args, group=self._group if grouped else None)
        finally:
            self._in_spark -= 1

    async def run_query(self, ts: int):
        """The query's whole result at `ts` (recompute)."""
        self._in_spark += 1
        try:
            return await self.coord.query(self.dataflow.full_sql, self.views, ts, group=self._group)
        finally:
            self._in_spark -= 1

    @staticmethod
    async def off_loop(fn: Callable, *args):
        return await asyncio.get_running_loop().run_in_executor(_WORK, fn, *args)

    def wanted(self, ts: int) -> bool:
        return self.stmt.up_to is None or ts < self.stmt.up_to

    async def emit_changes(self, changes: Changes) -> None:
        """Python updates per timestamp, formatted off the event loop, into the buffer."""
        for ts in sorted(changes):
            if not self.wanted(ts) or not changes[ts]:
                continue
            for table in await self.off_loop(self.tables_of, ts, changes[ts]):
                await self.put(table)

    def tables_of(self, ts: int, updates: list[tuple[tuple, int]]) -> list[pa.Table]:
        rows = format_timestamp(self.output, ts, updates)
        return [output.rows_table(self.output, rows[i:i + OUTPUT_CHUNK_ROWS], self.relation_types)
                for i in range(0, len(rows), OUTPUT_CHUNK_ROWS)]

    async def _emit_progress(self, frontier: int) -> None:
        if not self.stmt.progress or frontier <= self._last_progress:
            return
        if self.stmt.up_to is not None and frontier > self.stmt.up_to:
            frontier = self.stmt.up_to
            if frontier <= self._last_progress:
                return
        self._last_progress = frontier
        await self.out.put(output.progress_table(self.output, frontier))

    async def put(self, table: pa.Table) -> None:
        """Data rows into the buffer (waiting while it is full)."""
        started = time.perf_counter()
        await self.out.put(table)
        self._waited += time.perf_counter() - started
        if self._in_snapshot:
            self._started.set()

    # -- the client's side ----------------------------------------------------------
    def take(self, limit: int | None, max_bytes: int | None = None) -> list[pa.Table]:
        """Buffered output tables holding up to `limit` rows (None: all), counted as sent."""
        tables = self.out.take(limit, max_bytes)
        self.count_sent(sum(t.num_rows for t in tables))
        return tables

    def count_sent(self, n: int) -> None:
        """`n` rows have gone to the client (a cursor counts what it took ahead only when
        a FETCH sends it)."""
        if n:
            self.rows_sent += n
            metrics.ROWS_SENT.inc(n)

    async def wait(self, timeout: float | None = None) -> None:
        """Until rows are buffered, the subscription ends or fails, or `timeout` passes."""
        await self.out.readable(timeout)

    @property
    def buffered(self) -> int:
        return self.out.rows

    @property
    def drained(self) -> bool:
        return self.finished and not self.out.rows
